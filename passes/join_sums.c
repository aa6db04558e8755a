/* join_sums.c: a sum's all-reduces as one (passes.h, pass_join_sums).
 *
 * The norm that clip = C takes (autodiff.c's clip_grads) adds up one sum
 * of squares per param. Where a param's gradient is split over a mesh axis
 * (tensor parallel, or ZeRO's slice of it), its local sum is partial over
 * that axis, and the partitioner all-reduces it before the add, since the
 * running total is whole: llama.sh on 2x2 with ZeRO 2 ran 58 all-reduces
 * of 4 bytes each step, one or two per param, where Megatron-LM runs one
 * per group of ranks. Each is a launch and a latency (tens of
 * microseconds across nodes) that no byte count shows.
 *
 * Here, on a stage's program, each tree of scalar adds of the optimizer
 * phase (a float value of rank 0 made by an add whose operands are leaves
 * or other such adds that only it reads) is taken whole. A leaf made by
 * all_reduces of sum that only it reads (all_reduce over dp, then over
 * tp: one over both) stands for its innermost operand, the partial value,
 * reduced over the union of their axes (a constrain that drops a partial
 * axis of one rank is the partitioner's all-reduce over it, and counts as
 * one of them). The partial values of one dtype, partial over the same
 * axes of more than one rank and made whole alike, are added first, in the
 * leaves' order, and all-reduced once; the total is then the leaves' sum
 * in their order, each group's all-reduce in the place of its first leaf.
 * The new ops go where the tree's root was, which stays the last add (or,
 * where one all-reduce is all that is left, becomes it); the adds and
 * all-reduces it replaces go.
 *
 * First, a sum of an all-reduce of sum that only the sum reads becomes
 * the all-reduce of the sum (swap_sums): moe.sh's expert weights, split
 * over dp, had their squares' column sums all-reduced as vectors before
 * the last sum; the scalar then joins the tree.
 *
 * Sums of the same numbers, added in another order: the norm moves by a
 * rounding or two of f32 (the sharded run differed from the unsharded one
 * before too, by its own order). A tree that no all-reduce of two leaves
 * or of two axes would save stays as it is. Other phases are left alone:
 * a forward's loss over microbatches is a pipeline's task, and its
 * all-reduces are not per step. */
#include "passes.h"

#include <string.h>

/* A leaf of an add tree: the value the tree reads, and where it is the
 * all-reduce of a partial value, that value and the axes reduced. */
typedef struct leaf {
    ir_value *v;
    ir_value *base;     /* the innermost all-reduce's operand; v: none */
    int len;            /* ops from base to v: all-reduces, and constrains
                         * that drop a partial axis of size 1 */
    int depth;          /* the all-reduces among them */
    int group;          /* the leaves reduced alike: index of the first, -1 */
} leaf;

typedef struct jctx {
    ir_module *m;
    unsigned big;       /* the mesh axes of more than one rank */
    int *nread;         /* per value id: readers (outputs and updates count 2) */
    int *defat;         /* per value id: the index of the op making it */
    bool *gone;         /* per op index: replaced */
    su_vec *before;     /* per op index: new ops put in its place (before it) */
    su_vec leaves;      /* leaf *, the tree being taken */
    su_arena a;         /* the pass's scratch */
} jctx;

static bool scalar_add(const ir_op *op)
{
    return op->code == IR_ADD && op->nin == 2 && op->nres == 1 &&
           op->phase == IR_PH_OPTIMIZER && op->res[0]->type.rank == 0 &&
           ir_dtype_is_float(op->res[0]->type.dtype) && op->in[0] != op->in[1] &&
           op->in[0]->type.rank == 0 && op->in[1]->type.rank == 0 &&
           op->in[0]->type.dtype == op->res[0]->type.dtype &&
           op->in[1]->type.dtype == op->res[0]->type.dtype;
}

/* Whether v, an operand of the tree's add parent, is an inner node: made
 * by a scalar add of the same rep that nothing else reads. */
static bool inner(const jctx *J, const ir_value *v, const ir_op *parent)
{
    return v->def && scalar_add(v->def) && v->def->rep == parent->rep && J->nread[v->id] == 1;
}

/* The leaves under add op, left to right (the order the adds made them). */
static void collect(jctx *J, const ir_op *op)
{
    for (int k = 0; k < 2; k++) {
        ir_value *v = op->in[k];
        if (inner(J, v, op)) {
            collect(J, v->def);
            continue;
        }
        leaf *l = su_alloc(&J->a, sizeof *l);
        *l = (leaf){.v = v, .base = v, .group = -1};
        for (;;) {
            const ir_value *b = l->base;
            const ir_op *d = b->def;
            if (!d || d->nin != 1 || d->phase != IR_PH_OPTIMIZER || J->nread[b->id] != 1 ||
                d->in[0]->type.rank != 0 || d->in[0]->type.dtype != b->type.dtype)
                break;
            unsigned from = d->in[0]->sh.partial, to = b->sh.partial;
            bool reduce = d->code == IR_ALL_REDUCE && d->a->reduce == IR_RED_SUM;
            /* a constrain that drops partial axes of one rank: the
             * partitioner's all-reduce over them */
            bool one = d->code == IR_CONSTRAIN && (from & to) == to && !(from & ~to & J->big);
            if (!reduce && !one)
                break;
            l->depth += reduce;
            l->base = d->in[0];
            l->len++;
        }
        su_vec_push(&J->leaves, J->m->oom, l);
    }
}

/* Marks the inner adds under op replaced. */
static void drop_inner(jctx *J, const ir_op *op)
{
    for (int k = 0; k < 2; k++)
        if (inner(J, op->in[k], op)) {
            J->gone[J->defat[op->in[k]->id]] = true;
            drop_inner(J, op->in[k]->def);
        }
}

/* A new op of code on x (and y), of x's type, put before op index at. */
static ir_value *new_op(jctx *J, const ir_op *root, int at, ir_opcode code, ir_value *x,
                        ir_value *y, const ir_attrs *a, const ir_sharding *sh)
{
    ir_value *in[2] = {x, y};
    ir_op *op = ir_append(J->m, code, in, y ? 2 : 1, a, &x->type);
    J->m->ops.n--; /* placed in order below, not at the end */
    op->res[0]->sh = *sh;
    op->rep = root->rep;
    op->phase = root->phase;
    op->task = root->task;
    op->mb = root->mb;
    op->loc = root->loc;
    su_vec_push(&J->before[at], J->m->oom, op);
    return op->res[0];
}

/* The tree of root (op index at), rewritten where that saves an
 * all-reduce. Returns the all-reduces saved. */
static int take_tree(jctx *J, ir_op *root, int at)
{
    ir_module *m = J->m;
    J->leaves.n = 0;
    collect(J, root);
    int n = J->leaves.n, before = 0, after = 0;
    leaf **L = (leaf **)J->leaves.v;
    for (int i = 0; i < n; i++) {
        before += L[i]->depth;
        if (!L[i]->depth)
            continue;
        for (int j = 0; j < i && L[i]->group < 0; j++)
            if (L[j]->depth && L[j]->base->type.dtype == L[i]->base->type.dtype &&
                L[j]->base->sh.kind == L[i]->base->sh.kind &&
                ((L[j]->base->sh.partial ^ L[i]->base->sh.partial) & J->big) == 0 &&
                ir_sharding_eq(&L[j]->v->sh, &L[i]->v->sh, 0))
                L[i]->group = L[j]->group;
        if (L[i]->group < 0) {
            L[i]->group = i;
            after++;
        }
    }
    if (after >= before)
        return 0;
    drop_inner(J, root);
    for (int i = 0; i < n; i++) {
        ir_value *v = L[i]->v;
        for (int d = 0; L[i]->depth && d < L[i]->len; d++, v = v->def->in[0])
            J->gone[J->defat[v->id]] = true;
    }
    /* each group's partial values added in order, then all-reduced */
    ir_value **reduced = su_alloc(&J->a, (size_t)n * sizeof *reduced);
    for (int i = 0; i < n; i++) {
        if (L[i]->group != i)
            continue;
        /* partial over every axis one of them is (those of size 1 too,
         * where one is and another is not), and all-reduced over them */
        ir_sharding sh = L[i]->base->sh;
        for (int j = i + 1; j < n; j++)
            if (L[j]->group == i)
                sh.partial |= L[j]->base->sh.partial;
        ir_value *p = L[i]->base;
        for (int j = i + 1; j < n; j++)
            if (L[j]->group == i)
                p = new_op(J, root, at, IR_ADD, p, L[j]->base, NULL, &sh);
        ir_attrs a = {.reduce = IR_RED_SUM};
        for (int ax = 0; ax < m->mesh.naxes; ax++)
            if (sh.partial & ~L[i]->v->sh.partial & (1u << ax))
                a.axes[a.naxes++] = (uint8_t)ax;
        reduced[i] = new_op(J, root, at, IR_ALL_REDUCE, p, NULL, &a, &L[i]->v->sh);
    }
    /* the total: the leaves in order, a group's all-reduce at its first */
    ir_value **item = su_alloc(&J->a, (size_t)n * sizeof *item);
    int ni = 0;
    for (int i = 0; i < n; i++)
        if (!L[i]->depth || L[i]->group == i)
            item[ni++] = L[i]->depth ? reduced[i] : L[i]->v;
    if (ni == 1) { /* one all-reduce is the whole tree: the root becomes it */
        ir_op *r = item[0]->def;
        root->code = IR_ALL_REDUCE;
        root->nin = 1;
        root->in = su_alloc(&m->arena, sizeof *root->in);
        root->in[0] = r->in[0];
        ir_op_set_attrs(m, root, r->a);
        J->before[at].n--; /* r, the last op put there */
        return before - after;
    }
    ir_value *acc = item[0];
    for (int k = 1; k < ni - 1; k++)
        acc = new_op(J, root, at, IR_ADD, acc, item[k], NULL, &root->res[0]->sh);
    root->in = su_alloc(&m->arena, 2 * sizeof *root->in);
    root->in[0] = acc;
    root->in[1] = item[ni - 1];
    return before - after;
}

/* Each value's readers into nread[next_id + 1] (zeroed): its ops', and 2
 * for each output or update that reads it (or records it as a gradient),
 * so that "read once" means by one op. */
static void count_reads(const ir_module *m, int *nread)
{
    for (int i = 0; i < m->ops.n; i++)
        for (int k = 0; k < IR_OP(m, i)->nin; k++)
            nread[IR_OP(m, i)->in[k]->id]++;
    for (int i = 0; i < m->outputs.n; i++)
        nread[IR_OUTPUT(m, i)->v->id] += 2;
    for (int i = 0; i < m->updates.n; i++) {
        nread[IR_UPDATE(m, i)->v->id] += 2;
        if (IR_UPDATE(m, i)->grad)
            nread[IR_UPDATE(m, i)->grad->id] += 2;
    }
    if (m->train.loss)
        nread[m->train.loss->id] += 2;
}

/* A sum of an all-reduce of sum that only the sum reads, in the
 * optimizer phase: the all-reduce moved after the sum, which then sums the
 * partial value (a sum is linear), so that the all-reduce moves the
 * scalar, not the vector, and joins the tree's (moe.sh's expert weights'
 * squares, summed over the experts split over dp, were all-reduced as
 * [128] vectors). The sum's result keeps its value; a new sum before it
 * makes the partial one. Returns how many. */
static int swap_sums(ir_module *m)
{
    int n0 = m->ops.n, done = 0;
    size_t nv = (size_t)m->next_id + 1;
    su_arena tmp;
    su_arena_init(&tmp, m->oom);
    int *nread = su_alloc(&tmp, nv * sizeof *nread);
    memset(nread, 0, nv * sizeof *nread);
    count_reads(m, nread);
    ir_op **made = su_alloc(&tmp, ((size_t)n0 + 1) * sizeof *made);
    bool *gone = su_alloc(&tmp, ((size_t)n0 + 1) * sizeof *gone);
    memset(made, 0, ((size_t)n0 + 1) * sizeof *made);
    memset(gone, 0, ((size_t)n0 + 1) * sizeof *gone);
    int *at = su_alloc(&tmp, nv * sizeof *at);
    for (int i = 0; i < n0; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            at[IR_OP(m, i)->res[r]->id] = i;
    for (int i = 0; i < n0; i++) {
        ir_op *s = IR_OP(m, i);
        if (s->code != IR_SUM || s->nin != 1 || s->nres != 1 || s->phase != IR_PH_OPTIMIZER ||
            !ir_dtype_is_float(s->res[0]->type.dtype))
            continue;
        /* through constrains that drop partial axes of one rank (the
         * partitioner's all-reduce over them), which the new all-reduce
         * then covers too */
        ir_value *u = s->in[0];
        unsigned mask = 0, big = 0;
        for (int a = 0; a < m->mesh.naxes; a++)
            big |= m->mesh.size[a] > 1 ? 1u << a : 0;
        while (u->def && u->def->code == IR_CONSTRAIN && u->def->nin == 1 && nread[u->id] == 1 &&
               u->def->phase == IR_PH_OPTIMIZER) {
            unsigned from = u->def->in[0]->sh.partial, to = u->sh.partial;
            if ((from & to) != to || (from & ~to & big))
                break;
            mask |= from & ~to;
            u = u->def->in[0];
        }
        ir_op *ar = u->def;
        if (!ar || ar->code != IR_ALL_REDUCE || ar->nin != 1 || ar->a->reduce != IR_RED_SUM ||
            ar->phase != IR_PH_OPTIMIZER || nread[u->id] != 1)
            continue;
        for (int a = 0; a < ar->a->naxes; a++)
            mask |= 1u << ar->a->axes[a];
        if (s->res[0]->sh.partial & mask)
            continue;
        ir_value *v = ar->in[0];
        ir_value *in[1] = {v};
        ir_op *sum = ir_append(m, IR_SUM, in, 1, s->a, &s->res[0]->type);
        m->ops.n--; /* placed just before s below */
        sum->res[0]->sh = s->res[0]->sh;
        sum->res[0]->sh.partial |= (uint16_t)mask;
        sum->rep = s->rep, sum->phase = s->phase, sum->task = s->task, sum->mb = s->mb;
        sum->loc = s->loc;
        ir_attrs aa = {.reduce = IR_RED_SUM};
        for (int a = 0; a < m->mesh.naxes; a++)
            if (mask & (1u << a))
                aa.axes[aa.naxes++] = (uint8_t)a;
        /* the constrains and the all-reduce go */
        for (ir_value *c = s->in[0]; c != v; c = c->def->in[0])
            gone[at[c->id]] = true;
        s->code = IR_ALL_REDUCE;
        s->in = su_alloc(&m->arena, sizeof *s->in);
        s->in[0] = sum->res[0];
        ir_op_set_attrs(m, s, &aa);
        made[i] = sum;
        done++;
    }
    if (done) {
        su_vec ops = {0};
        for (int i = 0; i < n0; i++) {
            if (made[i])
                su_vec_push(&ops, m->oom, made[i]);
            if (!gone[i])
                su_vec_push(&ops, m->oom, m->ops.v[i]);
        }
        su_vec_free(&m->ops);
        m->ops = ops;
    }
    su_arena_free(&tmp);
    return done;
}

int pass_join_sums(ir_module *m)
{
    int swapped = swap_sums(m);
    int n0 = m->ops.n;
    bool any = false;
    for (int i = 0; i < n0 && !any; i++)
        any = IR_OP(m, i)->code == IR_ALL_REDUCE && IR_OP(m, i)->phase == IR_PH_OPTIMIZER;
    if (!any)
        return swapped;
    jctx J = {.m = m};
    for (int a = 0; a < m->mesh.naxes; a++)
        if (m->mesh.size[a] > 1)
            J.big |= 1u << a;
    su_arena_init(&J.a, m->oom);
    size_t nv = (size_t)m->next_id + 1;
    J.nread = su_alloc(&J.a, nv * sizeof *J.nread);
    J.defat = su_alloc(&J.a, nv * sizeof *J.defat);
    J.gone = su_alloc(&J.a, (size_t)n0 * sizeof *J.gone);
    J.before = su_alloc(&J.a, (size_t)n0 * sizeof *J.before);
    memset(J.nread, 0, nv * sizeof *J.nread);
    memset(J.gone, 0, (size_t)n0 * sizeof *J.gone);
    memset(J.before, 0, (size_t)n0 * sizeof *J.before);
    count_reads(m, J.nread);
    for (int i = 0; i < n0; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            J.defat[IR_OP(m, i)->res[r]->id] = i;
    /* a root: a scalar add that is no inner node of a later add */
    bool *innerv = su_alloc(&J.a, nv * sizeof *innerv);
    memset(innerv, 0, nv * sizeof *innerv);
    for (int i = 0; i < n0; i++) {
        const ir_op *op = IR_OP(m, i);
        if (scalar_add(op))
            for (int k = 0; k < 2; k++)
                if (inner(&J, op->in[k], op))
                    innerv[op->in[k]->id] = true;
    }
    int saved = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *op = IR_OP(m, i);
        if (scalar_add(op) && !innerv[op->res[0]->id])
            saved += take_tree(&J, op, i);
    }
    if (saved) {
        su_vec ops = {0};
        for (int i = 0; i < n0; i++) {
            for (int j = 0; j < J.before[i].n; j++)
                su_vec_push(&ops, m->oom, J.before[i].v[j]);
            if (!J.gone[i])
                su_vec_push(&ops, m->oom, m->ops.v[i]);
        }
        su_vec_free(&m->ops);
        m->ops = ops;
    }
    for (int i = 0; i < n0; i++)
        su_vec_free(&J.before[i]);
    su_vec_free(&J.leaves);
    su_arena_free(&J.a);
    return saved + swapped;
}
