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
 *          ends with one collective. An all_reduce behind a transpose
 *          read by nothing else counts as the all_reduce of the
 *          transpose of its operand, and a slice of that transpose over
 *          the all_reduce's axes as the reduce_scatter of it
 *          (transpose(all_reduce(a)) + all_reduce(b)  ->
 *          all_reduce(transpose(a) + b)): a tied embedding's table,
 *          whose gradient is the head's x^T dy, transposed, added to the
 *          embedding's (under ZeRO, each rank's rows of it).
 *   slice: slice(all_reduce(x) over A, dim d, over A)
 *          ->  reduce_scatter(x, dim d, over A): each rank keeps only its
 *          block, so only the blocks are reduced, (n-1)/n in place of
 *          2(n-1)/n of the elements.
 *   sum:   sum(C(x), axis k)  ->  C(sum(x, axis k)) for C an all_reduce or
 *          a reduce_scatter over another dim (and mean): a weight's
 *          gradient summed over the batch rows, or a norm's gain, is
 *          summed locally, partial, before it is reduced, so a [K, N]
 *          gradient is reduced, not [B, K, N].
 * And one on the local program alone, no collective involved:
 *   batch: sum(transpose(x) @ g, axis 0) for x [b, r, k], g [b, r, n]
 *          (the transpose swapping the last two dims, each read by
 *          nothing else)  ->  transpose(reshape(x, [b r, k])) @
 *          reshape(g, [b r, n]): a weight's gradient under a batch of
 *          rows, one product over every local row instead of b products
 *          of [k, n] and a sum of them. The rewrite is of each rank's
 *          local shapes, after partitioning, so no reshape there splits
 *          or gathers anything; the new values' shardings merge the two
 *          dims' axes, for the printed IR.
 *   rows:  sum(sum(x, axis 0 or 1), axis 0) for x of rank >= 3 (the inner sum
 *          read by nothing else)  ->  sum(reshape(x, [d0 d1, ...]), axis
 *          0): a bias's or a norm's gradient summed over the batch and the
 *          sequence in one reduction. With a collective between the sums
 *          it is part of the sum rule above; without one (no axis splits
 *          the rows), maybe through a constrain that resolves the inner
 *          sum's partial over mesh axes of size 1 (a data-parallel model
 *          on one rank of dp), the constrain then coming after the one
 *          sum. Where x is made by elementwise ops that a kernel would
 *          fuse in front of the inner sum (rows_pay), a reshape between
 *          them would keep the two apart and x would be written whole
 *          and read back, so those ops are made again over the merged
 *          rows instead (a layernorm's gain gradient, sum(dy * (x - mean)
 *          * rstd): below, merge_operand), where nothing else reads them;
 *          x read elsewhere is stored anyway: where its kernel sums it
 *          over d0 as it stores it, its sums stay two, and where another
 *          kernel stores it (a matmul's epilogue, a row kernel's:
 *          stored_apart), the one sum reads it back.
 * Neither in a pipelined program: its split cuts the batch dim into
 * microbatches, which the merged rows would hide. There the rows rule's
 * sums, over the batch then the sequence, sum the sequence first (dim 1)
 * and the batch last (sums_swap), where the rule would merge the rows on
 * a stage; the split then accumulates each microbatch's sum over its
 * rows, [d2, ...], not its [d1, d2, ...] summed once a step. The batch
 * rule and the rows rule (sum over dim 0 of a sum over dim 0 or 1) run
 * again on each stage's program after the split (pass_combine_batch),
 * where a microbatch's rows are merged: its products, summed into the
 * step's gradient, are then one product each, and its two sums one.
 * The rewritten op keeps its result (value, name, sharding); the
 * collectives it replaces are dropped. */
#include "passes.h"
#include "fuse.h"

#include <string.h>

/* Whether c is a summing collective that x's add can take over: the only
 * reader of its result is that add. */
static bool summing(const ir_op *c, const int *uses)
{
    if (c->code == IR_ALL_REDUCE)
        return c->a->reduce == IR_RED_SUM && uses[c->res[0]->id] == 1;
    return c->code == IR_REDUCE_SCATTER && uses[c->res[0]->id] == 1;
}

static bool same_collective(const ir_op *a, const ir_op *b)
{
    return a != b && a->code == b->code && a->a->naxes == b->a->naxes &&
           !memcmp(a->a->axes, b->a->axes, (size_t)a->a->naxes) && a->a->reduce == b->a->reduce &&
           (a->code != IR_REDUCE_SCATTER || a->a->dim == b->a->dim) &&
           ir_type_eq(&a->in[0]->type, &b->in[0]->type) &&
           ir_sharding_eq(&a->in[0]->sh, &b->in[0]->sh, a->in[0]->type.rank) &&
           a->in[0]->sh.partial == b->in[0]->sh.partial;
}

/* A partial sum behind operand v of an add, as the add's rule above
 * takes it: the summing collective c whose result v is (an all_reduce or
 * a reduce_scatter), or v a transpose of an all_reduce's result (t), or a
 * slice over the all_reduce's axes of such a transpose (s: a
 * reduce_scatter of the transposed operand along the slice's dim), each
 * read by nothing else; any of them maybe behind a constrain of the same
 * local type (k: a split over an axis of size 1, which on the local
 * program changes nothing). The sum of the transposed operand is the
 * transpose of the sum, and its slice over the sum's axes the rank's
 * block of it. */
typedef struct behind {
    ir_op *c, *t, *s, *k;
    ir_opcode code;     /* the collective the add's operand is: c's, or a
                         * reduce_scatter where s */
    int64_t dim;        /* a reduce_scatter's */
    ir_type type;       /* what it sums, as the add reads it: c's operand,
                         * or t's result */
    ir_sharding sh;     /* the same, partial as c's operand */
} behind;

static bool sum_behind(const ir_value *v, const int *uses, behind *b)
{
    *b = (behind){0};
    ir_op *op = v->def;
    if (op && op->code == IR_CONSTRAIN && op->nin == 1 && op->nres == 1 && uses[v->id] == 1 &&
        ir_type_eq(&op->in[0]->type, &v->type)) {
        b->k = op;
        v = op->in[0];
        op = v->def;
    }
    if (op && op->code == IR_SLICE && op->nin == 1 && uses[v->id] == 1) {
        b->s = op;
        op = op->in[0]->def;
    }
    if (op && op->code == IR_TRANSPOSE && op->nin == 1 && uses[op->res[0]->id] == 1) {
        b->t = op;
        op = op->in[0]->def;
        if (!op || (b->s && op->code != IR_ALL_REDUCE))
            return false;
    } else if (b->s) {
        return false;
    }
    if (!op || !summing(op, uses))
        return false;
    b->c = op;
    b->code = op->code;
    b->dim = op->code == IR_REDUCE_SCATTER ? op->a->dim : 0;
    b->type = op->in[0]->type;
    b->sh = op->in[0]->sh;
    if (b->t) { /* the operand transposed: result dim j is its dim list[j] */
        const ir_value *x = op->in[0];
        int r = x->type.rank, at = -1;
        if (b->t->a->nlist != r)
            return false;
        for (int j = 0; j < r; j++) {
            int k = (int)b->t->a->list[j];
            if (k < 0 || k >= r)
                return false;
            b->type.dim[j] = x->type.dim[k];
            b->sh.naxes[j] = x->sh.naxes[k];
            memcpy(b->sh.axes[j], x->sh.axes[k], IR_MAX_AXES);
            if (op->code == IR_REDUCE_SCATTER && k == op->a->dim)
                at = j;
        }
        if (op->code == IR_REDUCE_SCATTER)
            b->dim = at;
    }
    b->sh.partial = op->in[0]->sh.partial;
    if (b->s) {
        if (b->s->a->naxes != op->a->naxes ||
            memcmp(b->s->a->axes, op->a->axes, (size_t)op->a->naxes))
            return false;
        b->code = IR_REDUCE_SCATTER;
        b->dim = b->s->a->dim;
    }
    return true;
}

/* Places new op x (just appended to m->ops) into out, at op at's place
 * in the program. */
static ir_op *place(ir_op **out, int *nout, ir_op *x, const ir_op *at)
{
    x->loc = at->loc;
    x->rep = at->rep;
    x->task = at->task;
    x->mb = at->mb;
    x->phase = at->phase;
    out[(*nout)++] = x;
    return x;
}

/* Whether slice op s takes, of its operand c (an all_reduce sum over the
 * same axes, read by nothing else), this rank's block: a reduce_scatter. */
static bool scatters(const ir_op *s, const ir_op *c, const int *uses)
{
    return s->code == IR_SLICE && c->code == IR_ALL_REDUCE && c->a->reduce == IR_RED_SUM &&
           uses[c->res[0]->id] == 1 && s->a->naxes == c->a->naxes &&
           !memcmp(s->a->axes, c->a->axes, (size_t)c->a->naxes);
}

/* Whether op r sums (or averages) over a dim of c's result that c does not
 * scatter, c summing and read by nothing else. */
static bool sums_after(const ir_op *r, const ir_op *c, const int *uses)
{
    /* (the local mean over a split dim, before its scale, has no sharding) */
    if ((r->code != IR_SUM && r->code != IR_MEAN) || !summing(c, uses) ||
        r->res[0]->sh.kind == IR_SH_NONE)
        return false;
    int rank = c->res[0]->type.rank, k = (int)(r->a->axis < 0 ? r->a->axis + rank : r->a->axis);
    return k >= 0 && k < rank && (c->code != IR_REDUCE_SCATTER || k != c->a->dim);
}

/* Whether sum op r (over dim 0 of a rank-3 value, keepdims false) sums a
 * batch of products transpose(x) @ g made for it alone (the batch rule
 * above), maybe through a constrain of the products, which on the local
 * program changes nothing (a mesh axis of size 1 that the annotation
 * names: a data-parallel model's lm head on one rank); *t and *mm are the
 * transpose and the matmul, *c the constrain or NULL. */
static bool batch_product(const ir_op *r, const int *uses, const ir_op **t, const ir_op **mm,
                          const ir_op **c)
{
    if (r->code != IR_SUM || r->a->keepdims || r->in[0]->type.rank != 3 ||
        (r->a->axis != 0 && r->a->axis != -3))
        return false;
    const ir_op *m = r->in[0]->def;
    *c = NULL;
    if (m && m->code == IR_CONSTRAIN && m->nin == 1 && m->nres == 1 &&
        uses[m->res[0]->id] == 1 && ir_type_eq(&m->res[0]->type, &m->in[0]->type)) {
        *c = m;
        m = m->in[0]->def;
    }
    if (!m || m->code != IR_MATMUL || uses[m->res[0]->id] != 1 ||
        m->in[0]->type.rank != 3 || m->in[1]->type.rank != 3)
        return false;
    const ir_op *tr = m->in[0]->def;
    if (!tr || tr->code != IR_TRANSPOSE || uses[tr->res[0]->id] != 1 ||
        tr->a->nlist != 3 || tr->a->list[0] != 0 || tr->a->list[1] != 2 || tr->a->list[2] != 1)
        return false;
    const ir_type *x = &tr->in[0]->type, *g = &m->in[1]->type;
    if (x->dim[0] != g->dim[0] || x->dim[1] != g->dim[1] || x->dtype != g->dtype)
        return false;
    *t = tr;
    *mm = m;
    return true;
}

/* v's sharding with dims 0 and 1 merged (their axes in order), for a
 * [d0 d1, ...] reshape of v; false when they do not fit one dim. */
static bool merged_sharding(const ir_sharding *v, int rank, ir_sharding *out)
{
    if (v->naxes[0] + v->naxes[1] > IR_MAX_AXES)
        return false;
    *out = *v;
    out->kind = IR_SH_AUTO; /* a value of the compiler's */
    memcpy(out->axes[0] + v->naxes[0], v->axes[1], v->naxes[1]);
    out->naxes[0] = (uint8_t)(v->naxes[0] + v->naxes[1]);
    for (int d = 1; d + 1 < rank; d++) {
        out->naxes[d] = v->naxes[d + 1];
        memcpy(out->axes[d], v->axes[d + 1], IR_MAX_AXES);
    }
    out->naxes[rank - 1] = 0;
    return true;
}

/* x (rank >= 2) with its first two dims folded into one, a reshape placed
 * at op at; NULL (nothing placed) when its sharding cannot say so. */
static ir_value *merge_rows(ir_module *m, ir_op **out, int *nout, ir_value *x, const ir_op *at)
{
    ir_sharding sh;
    if (!merged_sharding(&x->sh, x->type.rank, &sh))
        return NULL;
    ir_type t = x->type;
    t.dim[0] = x->type.dim[0] * x->type.dim[1];
    for (int d = 1; d + 1 < x->type.rank; d++)
        t.dim[d] = x->type.dim[d + 1];
    t.rank--;
    ir_attrs ra = {.nlist = t.rank};
    memcpy(ra.list, t.dim, (size_t)t.rank * sizeof *t.dim);
    ir_op *px = place(out, nout, ir_append(m, IR_RESHAPE, &x, 1, &ra, &t), at);
    px->res[0]->sh = sh;
    return px->res[0];
}

/* Whether merging the rows of x, the operand of an inner sum, pays
 * (the rows rule): x is not made by an op a kernel fuses in front of the
 * sum. */
static bool rows_pay(const ir_value *x)
{
    return !x->def || !pass_fuse_elementwise(x->def);
}

/* ---- the rows rule through elementwise ops ----
 *
 * Where x is made by elementwise ops that a kernel would fuse in front of
 * the inner sum (a layernorm's gain gradient sum(dy * (x - mean) * rstd)),
 * those ops are made again over the merged rows, each operand of the tree
 * merged too (a reshape), so that the one sum over d0 d1 rows keeps them
 * in its kernel: no inner sum's kernel and result. Only ops whose result
 * is each element's function of the operands' elements under NumPy
 * broadcasting (no position, shape or key: not dropout or expand), of x's
 * shape, that nothing else reads (in_tree), at most CHAIN_MAX of them; an
 * operand outside the tree broadcasts over both rows' dims (rank below
 * x's but one, or a first dim of 1 at x's rank less one) or has both (a
 * reshape of it, which its sharding must say: merged_sharding). The
 * original ops go with the inner sum, nothing else reading them. */
enum { CHAIN_MAX = 16 };

static bool chain_op(const ir_op *op)
{
    return ir_pointwise(op->code) && op->nres == 1 && op->nin <= 3 &&
           pass_fuse_elementwise(op);
}

typedef struct chain {
    const ir_value *x;           /* the inner sum's operand */
    const int *uses;
    const ir_op *at;             /* the op whose place the tree is made again in */
    /* each value of the tree made once: its ops and their operands */
    const ir_value *from[4 * CHAIN_MAX];
    ir_value *to[4 * CHAIN_MAX];
    int n, nops;
} chain;

/* Whether v, of the tree under the inner sum's operand, is an op of the
 * tree (an elementwise op of x's shape that nothing else reads, made
 * again) rather than an operand of it: a value read elsewhere is made
 * (and stored, or fused into another kernel) for them anyway, and an op
 * reading a matmul's result may be the matmul's epilogue (the forward's
 * pre-activation under a gelu_grad, stored by its matmul's GELU_AUX
 * epilogue), so both are read as they are. Nor is an op of another
 * pipeline task or microbatch than the place it would be made again in
 * (ir_op.task, .mb): a sum over microbatches (each microbatch's add to the
 * sum of the ones before, in its own task) stays in its tasks, its
 * total merged. Made again after the tasks, every microbatch's part
 * would live until then, and a stage whose middle microbatches are held
 * once (instances.c) shows only microbatches 0, 1, 2 and M - 1's adds
 * here: the others' parts were lost (the sum made of 4 of 8, seed
 * 2909630 of tests/diff's pipelines). */
static bool in_tree(const chain *c, const ir_value *v)
{
    const ir_type *t = &v->type, *x = &c->x->type;
    if (!v->def || !chain_op(v->def) || t->rank != x->rank || c->uses[v->id] != 1 ||
        v->def->task != c->at->task || v->def->mb != c->at->mb)
        return false;
    for (int k = 0; k < v->def->nin; k++)
        if (v->def->in[k]->def && v->def->in[k]->def->code == IR_MATMUL)
            return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dim[d] != x->dim[d])
            return false;
    return true;
}

/* Whether the tree under v can be made over merged rows (counting its
 * ops into c->nops). */
static bool chain_fits(chain *c, const ir_value *v)
{
    const ir_type *t = &v->type, *x = &c->x->type;
    ir_sharding sh;
    if (in_tree(c, v)) {
        if (++c->nops > CHAIN_MAX || !merged_sharding(&v->sh, t->rank, &sh))
            return false;
        for (int k = 0; k < v->def->nin; k++)
            if (!chain_fits(c, v->def->in[k]))
                return false;
        return true;
    }
    if (t->rank <= x->rank - 2)
        return true;
    if (t->rank == x->rank - 1)
        return t->dim[0] == 1;
    return t->rank == x->rank &&
           ((t->dim[0] == x->dim[0] && t->dim[1] == x->dim[1]) ||
            (t->dim[0] == 1 && t->dim[1] == 1)) &&
           merged_sharding(&v->sh, t->rank, &sh);
}

/* v over merged rows (chain_fits said it can be): an op of the tree made
 * again, an operand merged, or v itself; each made once. */
static ir_value *chain_make(ir_module *m, ir_op **out, int *nout, chain *c, ir_value *v,
                            const ir_op *at)
{
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == v)
            return c->to[i];
    ir_value *r;
    if (in_tree(c, v)) {
        const ir_op *op = v->def;
        ir_value *in[3];
        for (int k = 0; k < op->nin; k++)
            in[k] = chain_make(m, out, nout, c, op->in[k], at);
        ir_type t = v->type;
        t.dim[0] = v->type.dim[0] * v->type.dim[1];
        for (int d = 1; d + 1 < v->type.rank; d++)
            t.dim[d] = v->type.dim[d + 1];
        t.rank--;
        ir_op *o = place(out, nout, ir_append(m, op->code, in, op->nin, op->a, &t), at);
        merged_sharding(&v->sh, v->type.rank, &o->res[0]->sh);
        r = o->res[0];
    } else if (v->type.rank == c->x->type.rank) {
        r = merge_rows(m, out, nout, v, at);
    } else {
        r = v;
    }
    c->from[c->n] = v;
    c->to[c->n++] = r;
    return r;
}

/* Marks dead the tree's ops under v (each read only by the op above it,
 * in_tree: the inner sum at the top, dead too). */
static void chain_dead(const chain *c, const ir_value *v, bool *dead)
{
    if (!in_tree(c, v))
        return;
    dead[v->id] = true;
    for (int k = 0; k < v->def->nin; k++)
        chain_dead(c, v->def->in[k], dead);
}

/* v, or what the reshapes and constrains it is a view of view. */
static const ir_value *viewed(const ir_value *v)
{
    while (v->def && (v->def->code == IR_RESHAPE || v->def->code == IR_CONSTRAIN))
        v = v->def->in[0];
    return v;
}

/* Whether x, made by an elementwise op (not rows_pay) and read elsewhere
 * too, so stored whatever the sums, is stored by a kernel that does not
 * sum it over d0 as it stores it, so that one sum over the merged rows
 * reading it back costs less than the second sum's kernel: a gelu_grad
 * in its matmul's epilogue (cuBLASLt's DGELU: pass_fuse_dgelu), or an op
 * reading a value that a reduction, norm or loss op makes (a layernorm's
 * input gradient, whose row kernel takes the ops after it: a residual's
 * add); or the dy of a layernorm's input gradient (dy[x], the adds of q's,
 * k's and v's input gradients): the layernorm's bias gradient, summed
 * over the merged rows, is then a sibling of its gain's (fuse.c's
 * join_siblings), summed in the gain's kernel as it reads x there.
 * Else (a gelu_grad of an f32 product) x's own kernel takes the sum over
 * d0, and its sums stay two, which read x once. */
static bool stored_apart(const ir_value *x, const int *uses, const bool *dy)
{
    const ir_op *op = x->def;
    if (!op || uses[x->id] < 2)
        return false;
    if (dy[x->id]) /* a layernorm's dy: below */
        return true;
    if (op->code == IR_GELU_GRAD && op->nin == 2 &&
        pass_fuse_dgelu(op, uses[op->in[1]->id]))
        return true;
    for (int k = 0; k < op->nin; k++) {
        const ir_op *d = viewed(op->in[k])->def;
        ir_opclass cls = d ? ir_ops[d->code].cls : IR_C_SOURCE;
        if (cls == IR_C_REDUCE || cls == IR_C_NORM || cls == IR_C_LOSS)
            return true;
    }
    return false;
}

/* Whether x (the inner sum's operand) can be had over merged rows at op
 * at's place: the rows rule pays, or its elementwise tree fits in room
 * new ops and values (4 a tree op: itself and up to three operands
 * merged). */
static bool operand_fits(const ir_value *x, const ir_op *at, const int *uses, const bool *dy,
                         int room)
{
    if (rows_pay(x) || stored_apart(x, uses, dy))
        return true;
    chain c = {.x = x, .uses = uses, .at = at};
    return in_tree(&c, x) && chain_fits(&c, x) && 4 * c.nops <= room;
}

/* x over merged rows (operand_fits said it can be): merge_rows where the
 * rows rule pays, else its elementwise tree made again over them, the
 * room taken from *room. */
static ir_value *merge_operand(ir_module *m, ir_op **out, int *nout, ir_value *x, const ir_op *at,
                               const int *uses, const bool *dy, bool *dead, int *room)
{
    if (rows_pay(x) || stored_apart(x, uses, dy))
        return merge_rows(m, out, nout, x, at);
    chain c = {.x = x, .uses = uses, .at = at};
    chain_fits(&c, x); /* counts its ops */
    *room -= 4 * c.nops;
    ir_value *r = chain_make(m, out, nout, &c, x, at);
    chain_dead(&c, x, dead);
    return r;
}

/* The sharding of the sum over dim k (keepdims false) of a value of
 * sharding in and rank rank: dim k's axes become partial. */
static ir_sharding summed_dim(ir_sharding in, int rank, int k)
{
    for (int i = 0; i < in.naxes[k]; i++)
        in.partial |= (uint16_t)(1u << in.axes[k][i]);
    for (int d = k; d + 1 < rank; d++) {
        in.naxes[d] = in.naxes[d + 1];
        memcpy(in.axes[d], in.axes[d + 1], IR_MAX_AXES);
    }
    in.naxes[rank - 1] = 0;
    return in;
}

/* Whether a value of sharding from may stand for one of sharding to on
 * the local program (rank dims): the same split, partial over the same
 * axes but for axes of size 1 (a constrain that changes nothing there). */
static bool same_locally(const ir_module *m, const ir_sharding *from, const ir_sharding *to,
                         int rank)
{
    ir_sharding f = *from;
    f.partial = to->partial;
    f.kind = to->kind;
    if (!ir_sharding_eq(&f, to, rank) || (to->partial & ~from->partial))
        return false;
    for (int a = 0; a < m->mesh.naxes; a++)
        if ((from->partial & ~to->partial) >> a & 1 && m->mesh.size[a] != 1)
            return false;
    return true;
}

/* In a pipelined program, whether the sum over dim 0 of the sum over dim
 * 0 (sum_of_sum, through constrain c or none) may sum over dim 1 first:
 * the sum over dim 0 of that sum has r's sharding (with c, the same on the
 * local program: same_locally), into *shr. The split then accumulates
 * the microbatches' sums over the batch of [d2, ...] (a gain's gradient:
 * [D]) where it accumulated [d1, d2, ...] ([S, D]) and summed it once a
 * step, and on each stage the two sums of a microbatch become one over
 * its merged rows (the rows rule in pass_combine_batch). */
static bool sums_swap(const ir_module *m, const ir_op *r, const ir_op *s, const ir_op *c,
                      ir_sharding *shr)
{
    const ir_value *x = s->in[0];
    int rank = x->type.rank;
    *shr = summed_dim(summed_dim(x->sh, rank, 1), rank - 1, 0);
    const ir_sharding *have = &r->res[0]->sh;
    if (s->a->axis != 0)
        return false;
    if (c)
        return same_locally(m, shr, have, rank - 2);
    shr->kind = have->kind;
    return ir_sharding_eq(shr, have, rank - 2) && shr->partial == have->partial;
}

/* The sum over dim 1 of sum op s's operand (s over dim 0, of rank >= 3),
 * placed at op at, its sharding summed_dim's. */
static ir_value *sum_dim1(ir_module *m, ir_op **out, int *nout, const ir_op *s, const ir_op *at)
{
    ir_value *x = s->in[0];
    ir_type t = x->type;
    for (int d = 1; d + 1 < t.rank; d++)
        t.dim[d] = t.dim[d + 1];
    t.rank--;
    ir_attrs a1 = *s->a;
    a1.axis = 1;
    ir_op *y = place(out, nout, ir_append(m, IR_SUM, &x, 1, &a1, &t), at);
    y->res[0]->sh = summed_dim(x->sh, x->type.rank, 1);
    return y->res[0];
}

/* For a sum over dim 0 (keepdims false) of v: where v is itself such a sum
 * of a value x of rank >= 3, read by nothing else, x with its first two
 * dims folded together (merge_rows), v's sum marked dead; else v (the rows
 * rule above). In a pipelined program, whose split needs the batch dim,
 * the sum of x over dim 1 in v's place instead (sums_swap says why). */
static ir_value *fold_rows(ir_module *m, ir_op **out, int *nout, ir_value *v, const ir_op *at,
                           const int *uses, const bool *dy, bool *dead, int *room)
{
    const ir_op *s = v->def;
    if (!s || s->code != IR_SUM || s->a->keepdims || s->a->axis != 0 || uses[v->id] != 1 ||
        s->in[0]->type.rank < 3 || !operand_fits(s->in[0], at, uses, dy, *room))
        return v;
    if (m->pipe.axis >= 0) {
        dead[v->id] = true;
        return sum_dim1(m, out, nout, s, at);
    }
    ir_value *r = merge_operand(m, out, nout, s->in[0], at, uses, dy, dead, room);
    if (!r)
        return v;
    dead[v->id] = true;
    return r;
}

/* Whether sum op r (over dim 0, keepdims false) sums, maybe through a
 * constrain, the sum over dim 0 or 1 of a value of rank >= 3 (either way
 * the sum over its first two dims), each read by nothing else (the rows
 * rule without a collective): the inner sum in *inner, the constrain in
 * *c (or NULL). */
static bool sum_of_sum(const ir_op *r, const int *uses, const ir_op **inner, const ir_op **c)
{
    if (r->code != IR_SUM || r->a->keepdims || r->a->axis != 0 || r->nin != 1)
        return false;
    const ir_op *d = r->in[0]->def;
    *c = NULL;
    if (d && d->code == IR_CONSTRAIN && d->nin == 1 && d->nres == 1 &&
        uses[d->res[0]->id] == 1 && ir_type_eq(&d->res[0]->type, &d->in[0]->type)) {
        *c = d;
        d = d->in[0]->def;
    }
    if (!d || d->code != IR_SUM || d->a->keepdims || (d->a->axis != 0 && d->a->axis != 1) ||
        d->nin != 1 || uses[d->res[0]->id] != 1 || d->in[0]->type.rank < 3)
        return false;
    *inner = d;
    return true;
}

/* The sharding of the sum over dim 0 (keepdims false) of a value of
 * sharding in and rank rank: dim 0's axes become partial. */
static ir_sharding summed_dim0(ir_sharding in, int rank)
{
    return summed_dim(in, rank, 0);
}

/* Whether the rows rule without a collective fits sum op r of inner sum
 * s (through constrain c, or NULL): x's first two dims merge, and the one
 * sum's sharding (into *sh) is r's, or, with c, the same on the local
 * program (same_locally). */
static bool rows_fit(const ir_module *m, const ir_op *r, const ir_op *s, const ir_op *c,
                     ir_sharding *sh, const int *uses, const bool *dy, int room)
{
    const ir_value *x = s->in[0];
    ir_sharding merged;
    if (!operand_fits(x, r, uses, dy, room) || !merged_sharding(&x->sh, x->type.rank, &merged))
        return false;
    int rank = r->res[0]->type.rank;
    *sh = summed_dim0(merged, x->type.rank - 1);
    const ir_sharding *want = &r->res[0]->sh;
    if (c)
        return same_locally(m, sh, want, rank);
    sh->kind = want->kind; /* the value keeps r's */
    return ir_sharding_eq(sh, want, rank);
}

/* The sharding a summing collective of code and attrs a makes of an
 * operand of sharding in: its axes no longer partial, and for a
 * reduce_scatter, appended to its dim. */
static ir_sharding collective_result(ir_opcode code, const ir_attrs *a, ir_sharding in)
{
    for (int i = 0; i < a->naxes; i++) {
        in.partial &= (uint16_t)~(1u << a->axes[i]);
        if (code == IR_REDUCE_SCATTER && in.naxes[a->dim] < IR_MAX_AXES)
            in.axes[a->dim][in.naxes[a->dim]++] = a->axes[i];
    }
    return in;
}

/* Sum op op (over dim 0) of x in place of its operand; with constrain c
 * (the rows rule's, between two sums), a new sum of x of sharding *sh
 * placed here, then op that constrain of it, c dropped. */
static void sum_then(ir_module *m, ir_op **out, int *nout, ir_op *op, ir_value *x,
                     const ir_sharding *sh, const ir_op *c, bool *dead)
{
    if (!c) {
        op->in[0] = x;
        return;
    }
    ir_op *r = place(out, nout, ir_append(m, IR_SUM, &x, 1, op->a, &op->res[0]->type), op);
    r->res[0]->sh = *sh;
    op->code = IR_CONSTRAIN;
    op->a = c->a;
    op->in[0] = r->res[0];
    dead[c->res[0]->id] = true;
}

static void count(int *uses, const ir_value *v)
{
    if (v)
        uses[v->id]++;
}

/* The rules above (batch_only: the batch rule alone, on a stage's
 * program after the pipeline split). */
/* The reshapes the rules made (values from id0 on), one per value and
 * shape: where two of the same value, type, sharding and place (a bias's
 * and a layernorm gain's gradient both merge dy's rows) were made, the
 * later is dropped (marked dead) and its readers read the first, so that
 * a kernel reading both sees one value (fuse.c's sibling sums). */
static void share_reshapes(ir_module *m, ir_op **out, int nout, bool *dead, int id0, size_t nv)
{
    ir_value **same = su_alloc(&m->arena, nv * sizeof *same);  /* per id: its first */
    ir_value **first = su_alloc(&m->arena, nv * sizeof *first); /* per operand id */
    memset(same, 0, nv * sizeof *same);
    memset(first, 0, nv * sizeof *first);
    for (int i = 0; i < nout; i++) {
        ir_op *op = out[i];
        if (op->nres && dead[op->res[0]->id])
            continue;
        for (int k = 0; k < op->nin; k++)
            if ((size_t)op->in[k]->id < nv && same[op->in[k]->id])
                op->in[k] = same[op->in[k]->id];
        if (op->code != IR_RESHAPE || op->res[0]->id < id0 || (size_t)op->res[0]->id >= nv ||
            (size_t)op->in[0]->id >= nv)
            continue;
        ir_value *r = op->res[0], *f = first[op->in[0]->id];
        const ir_op *d = f ? f->def : NULL;
        if (d && ir_type_eq(&f->type, &r->type) && ir_sharding_eq(&f->sh, &r->sh, r->type.rank) &&
            f->sh.partial == r->sh.partial && d->task == op->task && d->mb == op->mb &&
            d->rep == op->rep && d->phase == op->phase) {
            same[r->id] = f;
            dead[r->id] = true;
        } else if (!f) {
            first[op->in[0]->id] = r;
        }
    }
}

/* Whether add (or sub) op's operands are two partial sums of one kind
 * (collective, dim, axes, reduction) and of the same type and sharding
 * as they sum them, one or both behind a transpose (sum_behind): then
 * the sum of the two operands, the transposed one transposed first. */
static bool through_transpose(const ir_op *op, const int *uses, behind *b)
{
    for (int k = 0; k < 2; k++)
        if (!sum_behind(op->in[k], uses, &b[k]))
            return false;
    const ir_op *c0 = b[0].c, *c1 = b[1].c;
    /* behind a constrain both, of one sharding (the add's), or neither */
    if (!b[0].k != !b[1].k ||
        (b[0].k && (!ir_sharding_eq(&b[0].k->in[0]->sh, &b[1].k->in[0]->sh, b[0].type.rank) ||
                    b[0].k->in[0]->sh.partial != b[1].k->in[0]->sh.partial)))
        return false;
    return (b[0].t || b[1].t || b[0].k) && c0 != c1 && b[0].code == b[1].code && b[0].dim == b[1].dim &&
           c0->a->naxes == c1->a->naxes && !memcmp(c0->a->axes, c1->a->axes, (size_t)c0->a->naxes) &&
           c0->a->reduce == c1->a->reduce && ir_type_eq(&b[0].type, &b[1].type) &&
           ir_sharding_eq(&b[0].sh, &b[1].sh, b[0].type.rank) &&
           b[0].sh.partial == b[1].sh.partial;
}

static int combine(ir_module *m, su_vec *why, bool batch_only)
{
    /* Everything lives in the module's arena, so an allocation failure
     * (a jump out of here) leaks nothing: per value id, with room for one
     * new value per op; the new program order, with room for one new op
     * per op. New ops are appended to m->ops, then it takes the order. */
    int n0 = m->ops.n, id0 = m->next_id;
    int room = 4 * n0 + 64; /* ops (and values) the rows rule may make again */
    size_t nv = (size_t)m->next_id + 1 + (size_t)n0 + (size_t)room;
    int *uses = su_alloc(&m->arena, nv * sizeof *uses);
    bool *dead = su_alloc(&m->arena, nv * sizeof *dead);
    ir_op **out = su_alloc(&m->arena, (2 * (size_t)n0 + 1 + (size_t)room) * sizeof *out);
    int nout = 0;
    bool *dy = su_alloc(&m->arena, nv * sizeof *dy); /* read as a layernorm's dy */
    memset(uses, 0, nv * sizeof *uses);
    memset(dead, 0, nv * sizeof *dead);
    memset(dy, 0, nv * sizeof *dy);
    for (int i = 0; i < n0; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++)
            count(uses, op->in[k]);
        if (op->code == IR_LAYERNORM_DX && op->nin >= 1 && (size_t)op->in[0]->id < nv)
            dy[op->in[0]->id] = true;
    }
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
        const ir_op *bt = NULL, *bm = NULL, *bc = NULL;
        ir_sharding shx, shg;
        behind bh[2];
        if (batch_only && !(op->code == IR_SUM && (batch_product(op, uses, &bt, &bm, &bc) ||
                                                   sum_of_sum(op, uses, &bt, &bc)))) {
            out[nout++] = op;
            continue;
        }
        if (!batch_only && (op->code == IR_ADD || op->code == IR_SUB) && summing(a, uses) &&
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
        } else if (!batch_only && (op->code == IR_ADD || op->code == IR_SUB) && op->nin == 2 &&
                   through_transpose(op, uses, bh)) {
            /* a transpose of a partial sum's operand made before the
             * add, as the transpose of its sum was made after it */
            ir_value *in[2];
            for (int k = 0; k < 2; k++) {
                in[k] = bh[k].c->in[0];
                if (bh[k].t) {
                    ir_op *nt = place(out, &nout, ir_append(m, IR_TRANSPOSE, &in[k], 1,
                                                            bh[k].t->a, &bh[k].type), op);
                    nt->res[0]->sh = bh[k].sh;
                    in[k] = nt->res[0];
                    dead[bh[k].t->res[0]->id] = true;
                }
                if (bh[k].s)
                    dead[bh[k].s->res[0]->id] = true;
                if (bh[k].k)
                    dead[bh[k].k->res[0]->id] = true;
                dead[bh[k].c->res[0]->id] = true;
            }
            ir_op *sum = place(out, &nout, ir_append(m, op->code, in, 2, &(ir_attrs){0},
                                                     &bh[0].type), op);
            sum->res[0]->sh = bh[0].sh;
            ir_attrs ca = {.dim = bh[0].dim, .naxes = bh[0].c->a->naxes,
                           .reduce = bh[0].c->a->reduce};
            memcpy(ca.axes, bh[0].c->a->axes, (size_t)ca.naxes);
            ir_value *x = sum->res[0];
            if (bh[0].k) { /* the collective, then the constrain */
                ir_op *c = place(out, &nout, ir_append(m, bh[0].code, &x, 1, &ca,
                                                       &op->res[0]->type), op);
                c->res[0]->sh = bh[0].k->in[0]->sh;
                x = c->res[0];
                ca = *bh[0].k->a;
            }
            op->code = bh[0].k ? IR_CONSTRAIN : bh[0].code;
            op->nin = 1;
            op->in[0] = x;
            ir_op_set_attrs(m, op, &ca);
            what = su_sprintf(&m->arena, "'%s' of two partial sums, one transposed, added "
                              "before one %s in place of one for each",
                              ir_op_display(sum->code), ir_ops[op->code].name);
        } else if (!batch_only && a && scatters(op, a, uses)) {
            ir_attrs ra = {.dim = op->a->dim, .naxes = a->a->naxes};
            memcpy(ra.axes, a->a->axes, (size_t)a->a->naxes);
            op->code = IR_REDUCE_SCATTER;
            op->in[0] = a->in[0];
            ir_op_set_attrs(m, op, &ra);
            dead[a->res[0]->id] = true;
            what = "each rank keeps its block of the sum: a reduce_scatter in place of an "
                   "all_reduce and a slice";
        } else if ((m->pipe.axis < 0 || batch_only) && batch_product(op, uses, &bt, &bm, &bc) &&
                   merged_sharding(&bt->in[0]->sh, 3, &shx) &&
                   merged_sharding(&bm->in[1]->sh, 3, &shg)) {
            ir_value *x = bt->in[0], *g = bm->in[1];
            int64_t rows = x->type.dim[0] * x->type.dim[1];
            ir_value *rx = merge_rows(m, out, &nout, x, op);
            ir_attrs sw = {.nlist = 2, .list = {1, 0}};
            ir_type tt = {.dtype = rx->type.dtype, .rank = 2, .dim = {rx->type.dim[1], rows}};
            ir_op *pt = place(out, &nout, ir_append(m, IR_TRANSPOSE, &rx, 1, &sw, &tt), op);
            ir_sharding sht = rx->sh;
            sht.naxes[0] = rx->sh.naxes[1];
            sht.naxes[1] = rx->sh.naxes[0];
            memcpy(sht.axes[0], rx->sh.axes[1], IR_MAX_AXES);
            memcpy(sht.axes[1], rx->sh.axes[0], IR_MAX_AXES);
            pt->res[0]->sh = sht;
            ir_value *rg = merge_rows(m, out, &nout, g, op); /* the condition checked both */
            op->code = IR_MATMUL;
            op->nin = 2; /* the sum had room for one operand */
            op->in = su_alloc(&m->arena, 2 * sizeof *op->in);
            op->in[0] = pt->res[0];
            op->in[1] = rg;
            op->a = bm->a;
            dead[bm->res[0]->id] = dead[bt->res[0]->id] = true;
            if (bc)
                dead[bc->res[0]->id] = true;
            what = su_sprintf(&m->arena, "one product over the %lld local rows in place of %lld "
                              "products summed", (long long)rows, (long long)x->type.dim[0]);
        } else if (!batch_only && m->pipe.axis >= 0 && sum_of_sum(op, uses, &bt, &bc) &&
                   sums_swap(m, op, bt, bc, &shx) && operand_fits(bt->in[0], op, uses, dy, room)) {
            /* over dim 1 first, where the sum was over dim 0; then the
             * constrain, if any */
            sum_then(m, out, &nout, op, sum_dim1(m, out, &nout, bt, op), &shx, bc, dead);
            dead[bt->res[0]->id] = true;
            what = su_sprintf(&m->arena, "a microbatch's sum over dim 1 of [%lld, %lld, ...] "
                              "first, then its sum over the batch",
                              (long long)bt->in[0]->type.dim[0],
                              (long long)bt->in[0]->type.dim[1]);
        } else if ((batch_only || m->pipe.axis < 0) && sum_of_sum(op, uses, &bt, &bc) &&
                   rows_fit(m, op, bt, bc, &shg, uses, dy, room)) {
            /* one sum over the merged rows, then the constrain, if any */
            ir_value *rx = merge_operand(m, out, &nout, bt->in[0], op, uses, dy, dead,
                                         &room); /* rows_fit checked it */
            sum_then(m, out, &nout, op, rx, &shg, bc, dead);
            dead[bt->res[0]->id] = true;
            what = su_sprintf(&m->arena, "one sum over the %lld x %lld local rows in place of "
                              "two sums", (long long)bt->in[0]->type.dim[0],
                              (long long)bt->in[0]->type.dim[1]);
        } else if (!batch_only && a && sums_after(op, a, uses)) {
            /* the sum of the partial operand, then the collective */
            const ir_value *x = a->in[0];
            int rank = x->type.rank, k = (int)(op->a->axis < 0 ? op->a->axis + rank : op->a->axis);
            ir_type t = x->type;
            ir_sharding sh = x->sh;
            for (int i2 = 0; i2 < sh.naxes[k]; i2++)
                sh.partial |= (uint16_t)(1u << sh.axes[k][i2]);
            if (op->a->keepdims) {
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
            ir_attrs ca = *a->a;
            if (a->code == IR_REDUCE_SCATTER && !op->a->keepdims && k < ca.dim)
                ca.dim--;
            /* the reduction's result keeps its sharding: only where the
             * collective makes exactly that of the local sum's (a dim of
             * size 1 split over an axis of size 1, say, it would not) */
            ir_sharding want = collective_result(a->code, &ca, sh);
            if (!ir_sharding_eq(&want, &op->res[0]->sh, t.rank) ||
                want.partial != op->res[0]->sh.partial) {
                out[nout++] = op;
                continue;
            }
            ir_value *in = a->in[0];
            /* the rows rule for a sum only: a mean over merged rows would
             * divide by both dims (seed 2702455: mean(sum(x, axis 0),
             * axis 0) came out the size of dim 0 too small) */
            if (k == 0 && !op->a->keepdims && op->code == IR_SUM)
                in = fold_rows(m, out, &nout, in, op, uses, dy, dead, &room);
            ir_op *r = place(out, &nout, ir_append(m, op->code, &in, 1, op->a, &t), op);
            r->res[0]->sh = sh;
            op->code = a->code;
            op->in[0] = r->res[0];
            ir_op_set_attrs(m, op, &ca);
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
    share_reshapes(m, out, nout, dead, id0, nv);
    m->ops.n = 0; /* its room holds n0 ops and those appended, at least nout */
    for (int i = 0; i < nout; i++)
        if (!out[i]->nres || !dead[out[i]->res[0]->id])
            m->ops.v[m->ops.n++] = out[i];
    return combined;
}

int pass_combine_sums(ir_module *m, su_vec *why)
{
    return combine(m, why, false);
}

int pass_combine_batch(ir_module *m)
{
    return combine(m, NULL, true);
}
