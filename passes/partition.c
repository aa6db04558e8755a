/* partition.c: SPMD partitioning (DESIGN.md §3.4). Each logical op becomes
 * its local op on local shapes; operands are resharded to what the op needs
 * with the cheapest collectives; partial results are resolved to the value's
 * assigned sharding. Ops over a split dim (amax, softmax, the norms,
 * cross_entropy and its gradient, embedding with a vocabulary-split table)
 * compute on the shards with all-reduced statistics where that moves fewer
 * bytes than gathering the dim. The result is one program for every rank,
 * with the rank's coordinates as implicit parameters of slices and
 * collectives.
 *
 * Here the walk: each logical op to its rule, by its class; partition.h
 * says which file holds what. */
#include "partition.h"

#include <string.h>

static void part_op(part *P)
{
    const ir_op *op = P->op;
    P->choice = NULL;
    switch (ir_ops[op->code].cls) {
    case IR_C_SOURCE: pass_part_source(P); return;
    case IR_C_BINARY: pass_part_elementwise(P); return;
    case IR_C_UNARY:
        if (op->code == IR_DROPOUT)
            pass_part_dropout(P);
        else
            pass_part_elementwise(P);
        return;
    case IR_C_CONTRACT:
        if (op->code == IR_MATMUL)
            pass_part_matmul(P);
        else if (op->code == IR_ATTN_PROBS)
            pass_part_attn_probs(P);
        else
            pass_part_attention(P);
        return;
    case IR_C_OPTIM: pass_part_elementwise(P); return;
    case IR_C_REDUCE: pass_part_reduce(P); return;
    case IR_C_NORM: pass_part_norm(P); return;
    case IR_C_LOSS: pass_part_loss(P); return;
    case IR_C_LAYOUT:
        switch (op->code) {
        case IR_TRANSPOSE: pass_part_transpose(P); return;
        case IR_RESHAPE: pass_part_reshape(P); return;
        case IR_EMBEDDING: pass_part_embedding(P); return;
        case IR_EXPAND: pass_part_expand(P); return;
        case IR_NARROW:
        case IR_CONCAT: pass_part_narrow_concat(P); return;
        case IR_EMBEDDING_GRAD: pass_part_embedding_grad(P); return;
        case IR_XENT_GRAD: pass_part_xent_grad(P); return;
        case IR_IOTA: pass_part_iota(P); return;
        case IR_CONSTRAIN: {
            ir_value *v = pass_part_operand(P, 0, &op->res[0]->sh, "a sharding constraint");
            if (v != P->map[op->in[0]->id] && !v->name) /* the constraint's own value */
                v->name = op->res[0]->name;
            P->map[op->res[0]->id] = v;
            return;
        }
        default: break;
        }
        break;
    case IR_C_COMM:
    case IR_C_P2P:
        break;
    }
    su_unreachable(); /* logical modules hold no collectives, slices, sends or recvs */
}

/* The partitioning of m into P->dst; false when an op has no sharding. */
typedef struct part_run {
    part P;
    const ir_module *m;
    const char ***why;
    su_buf *err;
    bool ok;
} part_run;

static void partition(void *arg)
{
    part_run *r = arg;
    part *P = &r->P;
    const ir_module *m = r->m;
    P->map = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->map);
    P->made_first = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->made_first);
    for (int i = 0; i <= m->next_id; i++)
        P->made_first[i] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_value *v = IR_OP(m, i)->res[0];
        if (IR_OP(m, i)->code == IR_INPUT && v->type.rank)
            for (int k = 0; k < v->sh.naxes[0]; k++)
                P->batch_axes |= 1u << v->sh.axes[0][k];
    }
    /* transposes of one value, the same way, are one value to reshard */
    P->same = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->same);
    const ir_op **first_t = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *first_t);
    memset(first_t, 0, (size_t)(m->next_id + 1) * sizeof *first_t);
    for (int i = 0; i <= m->next_id; i++)
        P->same[i] = i;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i), *f;
        if (op->code != IR_TRANSPOSE)
            continue;
        if (!(f = first_t[op->in[0]->id]))
            first_t[op->in[0]->id] = op;
        else if (f->a->nlist == op->a->nlist &&
                 !memcmp(f->a->list, op->a->list, (size_t)op->a->nlist * sizeof *op->a->list))
            P->same[op->res[0]->id] = f->res[0]->id;
    }
    /* each value's one reader: an op that reads it twice, or an output or
     * update, counts as several */
    P->reader = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->reader);
    int *nread = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *nread);
    memset(nread, 0, (size_t)(m->next_id + 1) * sizeof *nread);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int j = 0; j < op->nin; j++) {
            nread[op->in[j]->id]++;
            P->reader[op->in[j]->id] = op;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        nread[IR_OUTPUT(m, i)->v->id] += 2;
    for (int i = 0; i < m->updates.n; i++) {
        nread[IR_UPDATE(m, i)->v->id] += 2;
        if (IR_UPDATE(m, i)->grad)
            nread[IR_UPDATE(m, i)->grad->id] += 2;
    }
    for (int i = 0; i <= m->next_id; i++)
        if (nread[i] != 1)
            P->reader[i] = NULL;
    if (P->keep_gathered) { /* the values an input reaches: the activations */
        P->act = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->act);
        memset(P->act, 0, (size_t)(m->next_id + 1) * sizeof *P->act);
        for (int i = 0; i < m->ops.n; i++) {
            const ir_op *op = IR_OP(m, i);
            bool a = op->code == IR_INPUT;
            for (int j = 0; j < op->nin && !a; j++)
                a = P->act[op->in[j]->id];
            for (int j = 0; j < op->nres; j++)
                P->act[op->res[j]->id] = a;
        }
    }
    for (int i = 0; i < m->ops.n; i++) {
        P->op = IR_OP(m, i);
        for (int j = 0; j < P->op->nres; j++)
            if (P->op->res[j]->sh.kind == IR_SH_NONE) {
                su_buf_printf(r->err, "op %d (%s) has a result without a sharding; run "
                              "propagation first", i, ir_ops[P->op->code].name);
                return;
            }
        part_op(P);
    }
    for (int i = 0; i < m->outputs.n; i++)
        ir_add_output(P->dst, IR_OUTPUT(m, i)->name, P->map[IR_OUTPUT(m, i)->v->id],
                      IR_OUTPUT(m, i)->loc);
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        P->op = u->v->def; /* the new value takes the old one's layout */
        P->need = "an update keeps the layout of what it updates";
        ir_value *v = pass_part_reshard(P, P->map[u->v->id], &u->src->sh);
        P->need = NULL;
        ir_add_update(P->dst, P->map[u->src->id], v, u->grad ? P->map[u->grad->id] : NULL);
    }
    P->dst->train = m->train;
    if (m->train.loss)
        P->dst->train.loss = P->map[m->train.loss->id];
    /* the normalisations' input gradients first: as one op each they
     * leave the gain's gradient its own x - mean and products, which the
     * rows rule then makes again over the merged rows (combine.c); and
     * attention's, whose partial dk, no longer scaled after its
     * all_reduce, is then reduce-scattered where only a slice of it is
     * read (combine.c's scatters) */
    pass_norm_grad(P->dst);
    pass_attn_grad(P->dst);
    pass_combine_sums(P->dst, P->ex ? &P->why : NULL);
    pass_xent_grad(P->dst);
    /* the sums narrowing moved or made (a tied table's gradient: the
     * head's sum, transposed, now the same collective as the embedding's,
     * which the add rule takes in turn) */
    if (pass_narrow(P->dst))
        pass_combine_sums(P->dst, P->ex ? &P->why : NULL);
    if (r->why) {
        const char **w = su_alloc(&P->dst->arena, (size_t)(P->dst->next_id + 1) * sizeof *w);
        for (int i = 0; i < P->why.n; i++)
            w[i] = P->why.v[i];
        *r->why = w;
    }
    r->ok = true;
}

bool pass_partition(const ir_module *m, const pass_explain *ex, ir_module **out,
                    const char ***why, su_buf *err)
{
    if (m->partitioned) {
        su_buf_puts(err, "the module is already partitioned");
        return false;
    }
    part_run r = {.m = m, .why = why, .err = err};
    r.P = (part){.ex = ex, .zero3_axis = m->train.zero == 3 ? m->train.zero_axis : -1,
                 .keep_gathered = m->train.keep_gathered};
    /* *out is the caller's from here, to free after an allocation failure */
    *out = r.P.dst = ir_module_new(m->oom);
    r.P.dst->mesh = m->mesh;
    r.P.dst->partitioned = true;
    r.P.dst->pipe = m->pipe;
    bool done = su_guarded(m->oom, partition, &r);
    su_vec_free(&r.P.why);
    su_vec_free(&r.P.made);
    su_vec_free(&r.P.xent);
    if (!done)
        su_oom(m->oom);
    if (!r.ok) {
        ir_module_free(r.P.dst);
        *out = NULL;
    }
    return r.ok;
}
