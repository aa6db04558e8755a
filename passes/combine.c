/* combine.c: collectives that sum, moved to where they send least
 * (DESIGN.md §3.4).
 *
 * The partitioner resolves each partial result where it is made. A
 * collective that sums is linear, so three rewrites, each where the
 * collective's result is read by nothing but the op named, send fewer
 * bytes for the same values:
 *   add:   all_reduce(a) + all_reduce(b)  ->  all_reduce(a + b)
 *          (and '-', and reduce_scatter, of the same kind, axes, dim and
 *          type): partial sums that are added are added locally first,
 *          and reduced once. Applied in program order, a chain of adds
 *          (the input gradient of q, k and v; a SwiGLU's two branches)
 *          ends with one collective.
 *   slice: slice(all_reduce(x) over A, dim d, over A)
 *          ->  reduce_scatter(x, dim d, over A): each rank keeps only its
 *          block, so only the blocks are reduced, (n-1)/n in place of
 *          2(n-1)/n of the elements.
 *   sum:   sum(C(x), axis k)  ->  C(sum(x, axis k)) for C an all_reduce or
 *          a reduce_scatter over another dim (and mean): a weight's
 *          gradient summed over the batch rows, or a norm's gain, is
 *          summed locally, partial, before it is reduced, so a [K, N]
 *          gradient is reduced, not [B, K, N].
 * The rewritten op keeps its result (value, name, sharding); the
 * collectives it replaces are dropped. */
#include "passes.h"

#include <string.h>

/* Whether c is a summing collective that x's add can take over: the only
 * reader of its result is that add. */
static bool summing(const ir_op *c, const int *uses)
{
    if (c->code == IR_ALL_REDUCE)
        return c->a.reduce == IR_RED_SUM && uses[c->res[0]->id] == 1;
    return c->code == IR_REDUCE_SCATTER && uses[c->res[0]->id] == 1;
}

static bool same_collective(const ir_op *a, const ir_op *b)
{
    return a != b && a->code == b->code && a->a.naxes == b->a.naxes &&
           !memcmp(a->a.axes, b->a.axes, (size_t)a->a.naxes) && a->a.reduce == b->a.reduce &&
           (a->code != IR_REDUCE_SCATTER || a->a.dim == b->a.dim) &&
           ir_type_eq(&a->in[0]->type, &b->in[0]->type) &&
           ir_sharding_eq(&a->in[0]->sh, &b->in[0]->sh, a->in[0]->type.rank) &&
           a->in[0]->sh.partial == b->in[0]->sh.partial;
}

/* Places new op x (just appended to m->ops) into out, at op at's place
 * in the program. */
static ir_op *place(ir_op **out, int *nout, ir_op *x, const ir_op *at)
{
    x->loc = at->loc;
    x->rep = at->rep;
    x->phase = at->phase;
    out[(*nout)++] = x;
    return x;
}

/* Whether slice op s takes, of its operand c (an all_reduce sum over the
 * same axes, read by nothing else), this rank's block: a reduce_scatter. */
static bool scatters(const ir_op *s, const ir_op *c, const int *uses)
{
    return s->code == IR_SLICE && c->code == IR_ALL_REDUCE && c->a.reduce == IR_RED_SUM &&
           uses[c->res[0]->id] == 1 && s->a.naxes == c->a.naxes &&
           !memcmp(s->a.axes, c->a.axes, (size_t)c->a.naxes);
}

/* Whether op r sums (or averages) over a dim of c's result that c does not
 * scatter, c summing and read by nothing else. */
static bool sums_after(const ir_op *r, const ir_op *c, const int *uses)
{
    /* (the local mean over a split dim, before its scale, has no sharding) */
    if ((r->code != IR_SUM && r->code != IR_MEAN) || !summing(c, uses) ||
        r->res[0]->sh.kind == IR_SH_NONE)
        return false;
    int rank = c->res[0]->type.rank, k = (int)(r->a.axis < 0 ? r->a.axis + rank : r->a.axis);
    return k >= 0 && k < rank && (c->code != IR_REDUCE_SCATTER || k != c->a.dim);
}

static void count(int *uses, const ir_value *v)
{
    if (v)
        uses[v->id]++;
}

int pass_combine_sums(ir_module *m, su_vec *why)
{
    /* Everything lives in the module's arena, so an allocation failure
     * (a jump out of here) leaks nothing: per value id, with room for one
     * new value per op; the new program order, with room for one new op
     * per op. New ops are appended to m->ops, then it takes the order. */
    int n0 = m->ops.n;
    size_t nv = (size_t)m->next_id + 1 + (size_t)n0;
    int *uses = su_alloc(&m->arena, nv * sizeof *uses);
    bool *dead = su_alloc(&m->arena, nv * sizeof *dead);
    ir_op **out = su_alloc(&m->arena, (2 * (size_t)n0 + 1) * sizeof *out);
    int nout = 0;
    memset(uses, 0, nv * sizeof *uses);
    memset(dead, 0, nv * sizeof *dead);
    for (int i = 0; i < n0; i++)
        for (int k = 0; k < IR_OP(m, i)->nin; k++)
            count(uses, IR_OP(m, i)->in[k]);
    for (int i = 0; i < m->outputs.n; i++)
        count(uses, IR_OUTPUT(m, i)->v);
    for (int i = 0; i < m->updates.n; i++) {
        count(uses, IR_UPDATE(m, i)->src);
        count(uses, IR_UPDATE(m, i)->v);
        count(uses, IR_UPDATE(m, i)->grad);
    }
    count(uses, m->train.loss);
    int combined = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *op = IR_OP(m, i);
        ir_op *a = op->nin >= 1 ? op->in[0]->def : NULL, *b = op->nin == 2 ? op->in[1]->def : NULL;
        const char *wa = why && a && a->nres && a->res[0]->id < why->n ? why->v[a->res[0]->id]
                                                                        : NULL;
        const char *what = NULL;
        if ((op->code == IR_ADD || op->code == IR_SUB) && summing(a, uses) &&
            summing(b, uses) && same_collective(a, b) &&
            ir_type_eq(&op->res[0]->type, &a->res[0]->type) &&
            ir_type_eq(&op->res[0]->type, &b->res[0]->type)) {
            /* op's operands, partial, added here; op becomes the collective */
            ir_value *in[2] = {a->in[0], b->in[0]};
            ir_op *sum = place(out, &nout, ir_append(m, op->code, in, 2, &(ir_attrs){0},
                                                     &a->in[0]->type), op);
            sum->res[0]->sh = a->in[0]->sh;
            op->code = a->code;
            op->nin = 1;
            op->in[0] = sum->res[0];
            op->a = a->a;
            dead[a->res[0]->id] = dead[b->res[0]->id] = true;
            what = su_sprintf(&m->arena, "'%s' of two partial sums, added before one %s in "
                              "place of one for each", ir_op_display(sum->code),
                              ir_ops[op->code].name);
        } else if (a && scatters(op, a, uses)) {
            ir_attrs ra = {.dim = op->a.dim, .naxes = a->a.naxes};
            memcpy(ra.axes, a->a.axes, (size_t)a->a.naxes);
            op->code = IR_REDUCE_SCATTER;
            op->in[0] = a->in[0];
            op->a = ra;
            dead[a->res[0]->id] = true;
            what = "each rank keeps its block of the sum: a reduce_scatter in place of an "
                   "all_reduce and a slice";
        } else if (a && sums_after(op, a, uses)) {
            /* the sum of the partial operand, then the collective */
            const ir_value *x = a->in[0];
            int rank = x->type.rank, k = (int)(op->a.axis < 0 ? op->a.axis + rank : op->a.axis);
            ir_type t = x->type;
            ir_sharding sh = x->sh;
            for (int i2 = 0; i2 < sh.naxes[k]; i2++)
                sh.partial |= (uint16_t)(1u << sh.axes[k][i2]);
            if (op->a.keepdims) {
                t.dim[k] = 1;
                sh.naxes[k] = 0;
            } else {
                for (int d = k; d + 1 < rank; d++) {
                    t.dim[d] = t.dim[d + 1];
                    sh.naxes[d] = sh.naxes[d + 1];
                    memcpy(sh.axes[d], sh.axes[d + 1], IR_MAX_AXES);
                }
                t.rank--;
                sh.naxes[rank - 1] = 0;
            }
            ir_value *in = a->in[0];
            ir_op *r = place(out, &nout, ir_append(m, op->code, &in, 1, &op->a, &t), op);
            r->res[0]->sh = sh;
            ir_attrs ca = a->a;
            if (a->code == IR_REDUCE_SCATTER && !op->a.keepdims && k < ca.dim)
                ca.dim--;
            op->code = a->code;
            op->in[0] = r->res[0];
            op->a = ca;
            dead[a->res[0]->id] = true;
            what = su_sprintf(&m->arena, "the %s over dim %d comes first, so the %s reduces a "
                              "tensor %lld times smaller", ir_ops[r->code].name, k,
                              ir_ops[op->code].name, (long long)x->type.dim[k]);
        }
        out[nout++] = op;
        if (!what)
            continue;
        if (why) {
            while (why->n <= op->res[0]->id)
                su_vec_push(why, m->oom, NULL);
            why->v[op->res[0]->id] = (void *)su_sprintf(
                &m->arena, "%s%s%s", what, wa ? "; the first was: " : "", wa ? wa : "");
        }
        combined++;
    }
    m->ops.n = 0; /* its room holds n0 ops and those appended, at least nout */
    for (int i = 0; i < nout; i++)
        if (!out[i]->nres || !dead[out[i]->res[0]->id])
            m->ops.v[m->ops.n++] = out[i];
    return combined;
}
