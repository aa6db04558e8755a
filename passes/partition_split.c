/* partition_split.c: the rules of the SPMD partitioning (partition.h) for
 * ops over a dim that may stay split (the section below says how):
 * reductions, softmax and the norms, the losses and cross_entropy's
 * gradient, embedding and its gradient over a vocabulary-split table; and
 * the global positions of a rank's block (a causal mask's query rows,
 * iota). */
#include "partition.h"

#include <string.h>

/* ---- statistics over a split dim ----
 *
 * amax, softmax, layernorm, rmsnorm, cross_entropy (and its gradient) over
 * a dim split over some axes compute local statistics on each rank's
 * shard and combine them with an all_reduce of one value per row (max or
 * sum), as Megatron-LM's vocabulary-parallel cross-entropy does, instead of
 * gathering the dim. The formulas are runtime/cpu/cpu.c's, in f32 (f16 and bf16
 * operands are widened first); the result stays split. Embedding with a
 * vocabulary-split table looks up the rows each rank holds (zeros for the
 * others), a partial result. The ids (labels) are checked against the
 * whole vocabulary (classes) first, as the unsplit op checks them. Each op
 * chooses this over gathering by the bytes moved, gathering on a tie. */

/* A vocabulary-split cross_entropy's row max and sum of exp, all-reduced
 * in the forward: its gradient over the same local logits reads them
 * rather than reducing them again, as Megatron keeps them. */
typedef struct xent_stats {
    const ir_value *logits; /* the local logits, as the op read them */
    unsigned mask;          /* the axes splitting the classes */
    ir_value *mx, *sum;
} xent_stats;

static unsigned dim_mask(const ir_sharding *s, int d)
{
    unsigned m = 0;
    for (int i = 0; i < s->naxes[d]; i++)
        m |= 1u << s->axes[d][i];
    return m;
}

/* An op of the decomposition of P->op on local values, its result with
 * sharding sh (partial where a rank holds a piece of a statistic). */
static ir_value *local(part *P, ir_opcode code, ir_value *a, ir_value *b, const ir_attrs *at,
                       const ir_sharding *sh)
{
    ir_value *in[2] = {a, b};
    ir_attrs none = {0};
    ir_value *r = pass_part_emit_local(P, code, in, b ? 2 : a ? 1 : 0, at ? at : &none);
    r->sh = *sh;
    r->sh.kind = IR_SH_AUTO;
    return r;
}

/* A scalar constant of dtype t. */
static ir_value *cst(part *P, double v, ir_dtype t)
{
    ir_type st = {.dtype = t};
    ir_op *c = ir_append(P->dst, IR_CONST, NULL, 0, &(ir_attrs){.value = v}, &st);
    c->loc = P->op->loc;
    c->rep = P->op->rep;
    c->phase = P->op->phase;
    c->res[0]->sh = pass_part_replicated();
    return c->res[0];
}

static ir_value *cast_to(part *P, ir_value *v, ir_dtype t)
{
    if (v->type.dtype == t)
        return v;
    ir_attrs a = {.dtype = t};
    return local(P, IR_CAST, v, NULL, &a, &v->sh);
}

/* The local reduction code of x over dim ax, kept as size 1: partial over
 * the axes in mask that split ax. */
static ir_value *row_stat(part *P, ir_opcode code, ir_value *x, int ax, unsigned mask)
{
    ir_sharding sh = pass_part_clear_dim(x->sh, ax);
    sh.partial = (uint16_t)mask;
    ir_attrs a = {.axis = ax, .keepdims = true};
    return local(P, code, x, NULL, &a, &sh);
}

/* What the values a decomposition names are named after: the op's
 * result, or the op when the result has no name. */
static const char *stat_base(const part *P)
{
    const char *r = P->op->res[0]->name;
    return r ? r : ir_ops[P->op->code].name;
}

/* v all-reduced with red over the axes of mask (mesh order), which it is
 * partial over; why names the statistic for --explain-sharding, and v is
 * named after the op's result and tag ("%p_max") so reasons and the
 * printed IR agree. */
static ir_value *reduce_over(part *P, ir_value *v, unsigned mask, ir_reduce red, const char *why,
                             const char *tag)
{
    if (!v->name && !P->dry)
        v->name = su_sprintf(&P->dst->arena, "%s_%s", stat_base(P), tag);
    uint8_t axes[IR_MAX_AXES];
    int n = 0;
    for (int a = 0; a < P->dst->mesh.naxes; a++)
        if (mask & (1u << a))
            axes[n++] = (uint8_t)a;
    ir_sharding sh = v->sh;
    sh.partial &= (uint16_t)~mask;
    const char *need = P->need;
    P->need = P->choice && P->ex ? su_sprintf(&P->dst->arena, "%s; %s", why, P->choice) : why;
    ir_value *r = pass_part_comm_red(P, IR_ALL_REDUCE, v, 0, 0, axes, n, &sh, red);
    P->need = need;
    return r;
}

/* Bytes per rank of k all_reduces of the statistics of a value of global
 * type t with sharding sh, one per row of dim ax (kept as size 1). */
static double stat_bytes(const part *P, const ir_type *t, const ir_sharding *sh, int ax, int k)
{
    ir_type st = pass_part_local_type(&P->dst->mesh, t, sh);
    st.dim[ax] = 1;
    st.dtype = IR_F32;
    int64_t n = ir_sharding_split(sh, &P->dst->mesh, ax);
    return k * pass_comm_bytes(IR_ALL_REDUCE, &st, &st, n);
}

/* softmax of the f32 local x over dim ax, split over the axes of mask:
 * exp(x - max) / sum with the max and the sum over the whole dim. The row
 * max and sum (kept dims) go to *mx and *sum. */
static ir_value *split_exp(part *P, ir_value *x, int ax, unsigned mask, ir_value **mx,
                           ir_value **sum)
{
    *mx = reduce_over(P, row_stat(P, IR_AMAX, x, ax, mask), mask, IR_RED_MAX,
                      "the row max over the split dim", "max");
    ir_value *e = local(P, IR_EXP, local(P, IR_SUB, x, *mx, NULL, &x->sh), NULL, NULL, &x->sh);
    *sum = reduce_over(P, row_stat(P, IR_SUM, e, ax, mask), mask, IR_RED_SUM,
                       "the row sum of exp over the split dim", "sum");
    return e;
}

/* Which global class (or vocabulary row) each element of this rank's
 * block of a dim of size n split over the axes of dim d of sh is: iota
 * [n] (named after the op's result and tag), sliced at the rank's
 * coordinate; why says what for. */
static ir_value *class_ids(part *P, int64_t n, const ir_sharding *sh, int d, const char *tag,
                           const char *why)
{
    ir_type t = {.dtype = IR_I32, .rank = 1, .dim = {n}};
    ir_attrs a = {.nlist = 1, .list = {n}};
    ir_op *io = ir_append(P->dst, IR_IOTA, NULL, 0, &a, &t);
    io->loc = P->op->loc;
    io->rep = P->op->rep;
    io->phase = P->op->phase;
    io->res[0]->sh = pass_part_replicated();
    io->res[0]->name = su_sprintf(&P->dst->arena, "%s_%s", stat_base(P), tag);
    ir_sharding s = pass_part_replicated();
    pass_part_copy_dim(&s, 0, sh, d);
    const char *need = P->need;
    P->need = why;
    ir_value *r = pass_part_comm(P, IR_SLICE, io->res[0], 0, 0, sh->axes[d], sh->naxes[d], &s);
    P->need = need;
    return r;
}

/* one_hot(labels) over this rank's classes, as dtype t: labels [...]
 * compared with the global class of each local column, [..., C/n]. */
static ir_value *local_one_hot(part *P, ir_value *labels, ir_value *cls, ir_dtype t)
{
    ir_attrs ra = {.nlist = labels->type.rank + 1};
    for (int d = 0; d < labels->type.rank; d++)
        ra.list[d] = labels->type.dim[d];
    ra.list[labels->type.rank] = 1;
    ir_sharding sh = labels->sh;
    ir_value *l = local(P, IR_RESHAPE, labels, NULL, &ra, &sh);
    pass_part_copy_dim(&sh, labels->type.rank, &cls->sh, 0);
    return cast_to(P, local(P, IR_EQ, l, cls, NULL, &sh), t);
}

/* ids [...] against this rank's rows cls of a vocabulary of n rows:
 * *in_range is 1 where ids[i] is one of them, else 0; the result is the
 * local row (0 where out of range). Both are partial over the axes of the
 * vocabulary: each rank holds its own. */
static ir_value *local_ids(part *P, ir_value *ids, ir_value *cls, ir_value **in_range)
{
    int64_t nl = cls->type.dim[0];
    ir_sharding sh = ids->sh;
    sh.partial = (uint16_t)dim_mask(&cls->sh, 0);
    ir_sharding one = pass_part_replicated();
    one.partial = sh.partial;
    ir_attrs a0 = {.axis = 0};
    ir_value *last = local(P, IR_AMAX, cls, NULL, &a0, &one); /* offset + nl - 1 */
    ir_value *off = local(P, IR_SUB, last, cst(P, (double)(nl - 1), IR_I32), NULL, &one);
    ir_value *rel = local(P, IR_SUB, ids, off, NULL, &sh);
    ir_value *ge = local(P, IR_GT, rel, cst(P, -1, IR_I32), NULL, &sh);
    ir_value *lt = local(P, IR_GT, cst(P, (double)nl, IR_I32), rel, NULL, &sh);
    *in_range = local(P, IR_MUL, ge, lt, NULL, &sh);
    return local(P, IR_MUL, rel, *in_range, NULL, &sh);
}

/* ids (code IR_CHECK_IDS) or labels (IR_CHECK_LABELS) checked against
 * the n rows of a whole vocabulary (the n classes): where it is split, each
 * rank looks up only its own rows and takes an id outside them all for
 * another rank's, so the error the unsplit op gives needs a check of its
 * own, on every rank of the group (they hold the same ids). */
static ir_value *checked_ids(part *P, ir_opcode code, ir_value *ids, int64_t n)
{
    ir_attrs a = {.bound = n};
    return local(P, code, ids, NULL, &a, &ids->sh);
}

/* mask [...] (i32 0/1) as dtype t, shaped [..., 1] to scale rows. */
static ir_value *row_mask(part *P, ir_value *mask, ir_dtype t)
{
    ir_attrs ra = {.nlist = mask->type.rank + 1};
    for (int d = 0; d < mask->type.rank; d++)
        ra.list[d] = mask->type.dim[d];
    ra.list[mask->type.rank] = 1;
    return local(P, IR_RESHAPE, cast_to(P, mask, t), NULL, &ra, &mask->sh);
}

/* A reason: the choice between a split dim and gathering it (or the
 * alternative alt names), by bytes. */
static const char *split_alt(part *P, const char *what, double split, double whole,
                             const char *alt)
{
    if (!P->ex) /* no reasons kept */
        return NULL;
    return su_sprintf(&P->dst->arena, "%s: %.0f bytes per rank against %.0f %s", what, split,
                      whole, alt);
}

static const char *split_why(part *P, const char *what, double split, double whole)
{
    return split_alt(P, what, split, whole, "for gathering it");
}

/* layernorm (b not NULL) or rmsnorm of the f32 local x over its last dim,
 * of global size n, split over the axes of mask, with gain g and bias b
 * split alike: runtime/cpu/cpu.c's two passes, the sums all-reduced and
 * divided by n, eps added to the variance. */
static ir_value *split_norm(part *P, ir_value *x, ir_value *g, ir_value *b, double eps,
                            unsigned mask, int64_t n)
{
    int ax = x->type.rank - 1;
    ir_value *c = x, *dn = cst(P, (double)n, IR_F32);
    if (b) {
        ir_value *s1 = reduce_over(P, row_stat(P, IR_SUM, x, ax, mask), mask, IR_RED_SUM,
                                   "the row sum (the mean) over the split dim", "mean");
        c = local(P, IR_SUB, x, local(P, IR_DIV, s1, dn, NULL, &s1->sh), NULL, &x->sh);
    }
    ir_value *sq = local(P, IR_MUL, c, c, NULL, &x->sh);
    ir_value *ss = reduce_over(P, row_stat(P, IR_SUM, sq, ax, mask), mask, IR_RED_SUM,
                               "the row sum of squares (the variance) over the split dim", "sumsq");
    ir_value *var = local(P, IR_DIV, ss, dn, NULL, &ss->sh);
    ir_value *r = local(P, IR_RSQRT, local(P, IR_ADD, var, cst(P, eps, IR_F32), NULL, &ss->sh),
                        NULL, NULL, &ss->sh);
    ir_value *y = local(P, IR_MUL, local(P, IR_MUL, c, r, NULL, &x->sh), g, NULL, &x->sh);
    return b ? local(P, IR_ADD, y, b, NULL, &x->sh) : y;
}

/* What operand i (> 0) of a softmax-like op computing on sharding q over
 * dim ax needs: gains and biases split as ax, labels follow the rows. */
static ir_sharding follower(const ir_op *op, const ir_sharding *q, int ax)
{
    ir_sharding s = pass_part_replicated();
    if (op->code == IR_XENT_GRAD || op->code == IR_XENT) {
        for (int d = 0; d < ax; d++)
            pass_part_copy_dim(&s, d, q, d);
        return s;
    }
    pass_part_copy_dim(&s, 0, q, ax);
    return s;
}

/* The all_reduces of statistics a split dim costs each op. */
static int nstats(ir_opcode code)
{
    switch (code) {
    case IR_XENT: return 3;       /* max, sum of exp, the label's logit */
    case IR_RMSNORM: return 1;    /* sum of squares */
    default: return 2;            /* softmax: max, sum; layernorm: sum, sum of squares */
    }
}

/* Bytes moved to compute P->op (over dim ax) on operand sharding q and
 * bring its result (natural sharding q, whole over ax when q is) to the
 * assigned one. */
static double norm_cost(part *P, const ir_sharding *q, int ax)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    double c = pass_part_reshard_cost(P, P->map[op->in[0]->id], q);
    ir_sharding f = follower(op, q, ax);
    for (int i = 1; i < op->nin; i++)
        c += pass_part_reshard_cost(P, P->map[op->in[i]->id], &f);
    if (q->naxes[ax])
        c += stat_bytes(P, &op->in[0]->type, q, ax, nstats(op->code));
    if (op->code != IR_XENT) { /* a loss's scalar is resolved alike either way */
        ir_value t = {.type = pass_part_local_type(&P->dst->mesh, &lr->type, q), .sh = *q};
        c += pass_part_reshard_cost(P, &t, &lr->sh);
    }
    return c;
}

/* The operand sharding P->op computes on: the result's (the operand's for
 * a loss), with dim ax whole, or split as the result or the operand splits
 * it, whichever moves the fewest bytes, whole on a tie. *why says why. */
static ir_sharding norm_choice(part *P, int ax, const char **why)
{
    const ir_op *op = P->op;
    const ir_sharding *cur = &P->map[op->in[0]->id]->sh;
    ir_sharding base = pass_part_no_partial(op->code == IR_XENT ? *cur : op->res[0]->sh);
    ir_sharding best = pass_part_clear_dim(base, ax);
    double whole = norm_cost(P, &best, ax), best_cost = whole;
    const ir_sharding *src[2] = {&base, cur};
    for (int i = 0; i < 2; i++) {
        if (!src[i]->naxes[ax])
            continue;
        ir_sharding q = pass_part_strip_axes(base, dim_mask(src[i], ax));
        pass_part_copy_dim(&q, ax, src[i], ax);
        double c = norm_cost(P, &q, ax);
        if (c < best_cost)
            best = q, best_cost = c;
    }
    if (best.naxes[ax])
        *why = P->choice = split_why(P, "the dim split, statistics all-reduced", best_cost,
                                     whole);
    else if ((src[0]->naxes[ax] || cur->naxes[ax]) && P->ex)
        *why = su_sprintf(&P->dst->arena, "the dim whole: gathering costs %.0f bytes per rank, "
                          "no more than partial statistics", whole);
    else
        *why = NULL;
    return best;
}

/* The operand sharding and natural result of a reduction over a dim split
 * over the axes in keep (a subset of what the operand has there): the
 * other dims follow the result, without the kept axes; the result is
 * partial over them. */
static void reduce_as(const ir_op *op, const ir_sharding *cur, bool keep, ir_sharding *req,
                      ir_sharding *nat)
{
    const ir_value *lx = op->in[0], *lr = op->res[0];
    int ax = (int)op->a->axis, rank = lx->type.rank;
    *req = pass_part_replicated();
    for (int d = 0, rd = 0; d < rank; d++) {
        if (d == ax) {
            rd += op->a->keepdims;
            continue;
        }
        pass_part_copy_dim(req, d, &lr->sh, rd++);
    }
    *nat = pass_part_no_partial(lr->sh);
    if (!keep)
        return;
    unsigned mask = 0;
    for (int i = 0; i < cur->naxes[ax]; i++)
        mask |= 1u << cur->axes[ax][i];
    *req = pass_part_strip_axes(*req, mask);
    *nat = pass_part_strip_axes(*nat, mask);
    pass_part_copy_dim(req, ax, cur, ax);
    nat->partial = (uint16_t)mask;
}

/* sum/mean/amax over a split dim stay local and give a partial result
 * (mean scaled by the local share), resolved after (amax by an all_reduce
 * with max, whole: a max cannot be reduce-scattered); unless moving the
 * operand's split elsewhere first costs less (the split is kept on a tie). */
void pass_part_reduce(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lx = op->in[0], *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    int ax = (int)op->a->axis;
    ir_value *cx = P->map[lx->id];
    const ir_sharding *cur = &cx->sh;
    ir_sharding req, nat, kreq, knat;
    reduce_as(op, cur, false, &req, &nat);
    bool keep = cur->naxes[ax] && !cur->partial;
    double split = 0, whole = 0;
    if (keep) { /* by the bytes moved before and after */
        reduce_as(op, cur, true, &kreq, &knat);
        ir_value t1 = {.type = pass_part_local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = pass_part_local_type(me, &lr->type, &knat), .sh = knat};
        whole = pass_part_reshard_cost(P, cx, &req) + pass_part_reshard_cost(P, &t1, &lr->sh);
        split = pass_part_reshard_cost(P, cx, &kreq);
        if (op->code == IR_AMAX) {
            split += pass_comm_bytes(IR_ALL_REDUCE, &t2.type, &t2.type,
                                     pass_part_axes_size(me, cur->axes[ax], cur->naxes[ax]));
            t2.sh.partial = 0;
        }
        split += pass_part_reshard_cost(P, &t2, &lr->sh);
        keep = split <= whole;
        if (keep)
            req = kreq, nat = knat;
    }
    if (op->code == IR_AMAX && keep) {
        P->choice = split_why(P, "the max taken locally, then over ranks", split, whole);
        ir_value *x = pass_part_operand(P, 0, &req, P->choice);
        ir_value *r = local(P, IR_AMAX, x, NULL, op->a, &nat);
        ir_value *m = reduce_over(P, r, nat.partial, IR_RED_MAX, "the max over the split dim",
                                  "max");
        nat.partial = 0;
        pass_part_map_result(P, m, &nat);
        return;
    }
    ir_value *x = pass_part_operand(P, 0, &req, keep ? "reduced locally, then summed over ranks"
                                                     : "the reduced dim whole");
    if (op->code == IR_MEAN && keep) {
        /* the local mean is over a share of the dim: scale by that share */
        int64_t n = pass_part_axes_size(me, cur->axes[ax], cur->naxes[ax]);
        pass_part_finish_scaled(P, &x, 1, &nat, 1.0 / (double)n);
        return;
    }
    pass_part_finish(P, &x, 1, &nat);
}

/* softmax, layernorm, rmsnorm over dim ax: with the dim whole (gathered;
 * a result wanted split there is sliced after), or split with partial
 * statistics (norm_choice); the result then stays split. */
void pass_part_norm(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int ax = op->code == IR_SOFTMAX ? (int)op->a->axis : lr->type.rank - 1;
    const char *why = NULL;
    ir_sharding q = norm_choice(P, ax, &why), rep = pass_part_replicated();
    ir_value *in[3];
    if (!q.naxes[ax]) {
        in[0] = pass_part_operand(P, 0, &q, why ? why : "the normalised dim whole");
        for (int i = 1; i < op->nin; i++)
            in[i] = pass_part_operand(P, i, &rep, "gains and biases whole");
        pass_part_finish(P, in, op->nin, &q);
        return;
    }
    ir_sharding f = follower(op, &q, ax);
    in[0] = pass_part_operand(P, 0, &q, why);
    for (int i = 1; i < op->nin; i++)
        in[i] = cast_to(P,
                        pass_part_operand(P, i, &f, "gains and biases split as the normalised dim"),
                        IR_F32);
    ir_dtype dt = in[0]->type.dtype;
    ir_value *x = cast_to(P, in[0], IR_F32), *y, *mx, *sum;
    unsigned mask = dim_mask(&q, ax);
    if (op->code == IR_SOFTMAX) {
        ir_value *e = split_exp(P, x, ax, mask, &mx, &sum);
        y = local(P, IR_DIV, e, sum, NULL, &x->sh);
    } else {
        y = split_norm(P, x, in[1], op->nin > 2 ? in[2] : NULL, op->a->eps, mask,
                       lr->type.dim[ax]);
    }
    pass_part_map_result(P, cast_to(P, y, dt), &q);
}

/* cross_entropy_grad(logits, labels) = softmax(logits) - one_hot(labels),
 * rows following the result: the class dim whole, or split (norm_choice),
 * each rank's one-hot at its classes. Split, the softmax reads the row max
 * and sum of exp the forward's cross_entropy all-reduced for the same
 * local logits (xent_stats): the backward communicates nothing here. */
void pass_part_xent_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int ax = lr->type.rank - 1;
    const char *why = NULL;
    ir_sharding q = norm_choice(P, ax, &why), ql = follower(op, &q, ax);
    ir_value *in[2] = {pass_part_operand(P, 0, &q, why ? why : "logits whole along the classes"),
                       pass_part_operand(P, 1, &ql, "labels follow the rows")};
    if (!q.naxes[ax]) {
        pass_part_finish(P, in, 2, &q);
        return;
    }
    in[1] = checked_ids(P, IR_CHECK_LABELS, in[1], lr->type.dim[ax]);
    ir_dtype dt = in[0]->type.dtype;
    unsigned mask = dim_mask(&q, ax);
    ir_value *x = cast_to(P, in[0], IR_F32), *mx, *sum, *e;
    const xent_stats *kept = NULL;
    for (int i = 0; i < P->xent.n && !kept; i++) {
        const xent_stats *k = P->xent.v[i];
        if (k->logits == in[0] && k->mask == mask)
            kept = k;
    }
    if (kept) { /* the forward's statistics of these very logits */
        sum = kept->sum;
        e = local(P, IR_EXP, local(P, IR_SUB, x, kept->mx, NULL, &x->sh), NULL, NULL, &x->sh);
    } else {
        e = split_exp(P, x, ax, mask, &mx, &sum);
    }
    ir_value *p = local(P, IR_DIV, e, sum, NULL, &x->sh);
    ir_value *cls = class_ids(P, lr->type.dim[ax], &q, ax, "classes",
                              "the classes this rank holds");
    ir_value *oh = local_one_hot(P, in[1], cls, IR_F32);
    pass_part_map_result(P, cast_to(P, local(P, IR_SUB, p, oh, NULL, &x->sh), dt), &q);
}

/* cross_entropy over logits split along the classes: per row
 * max + log(sum exp(x - max)) - x[label], each statistic all-reduced (the
 * label's logit is 0 on the ranks without its class), then the mean over
 * the rows as pass_part_loss takes it. */
static void part_xent_split(part *P, const ir_sharding *q, const char *why)
{
    const ir_op *op = P->op;
    const ir_mesh *me = &P->dst->mesh;
    int ax = op->in[0]->type.rank - 1;
    ir_sharding ql = follower(op, q, ax);
    ir_value *in[2] = {pass_part_operand(P, 0, q, why),
                       pass_part_operand(P, 1, &ql, "labels follow the rows")};
    in[1] = checked_ids(P, IR_CHECK_LABELS, in[1], op->in[0]->type.dim[ax]);
    unsigned mask = dim_mask(q, ax);
    ir_value *x = cast_to(P, in[0], IR_F32), *mx, *sum;
    split_exp(P, x, ax, mask, &mx, &sum);
    xent_stats *kept = su_alloc(&P->dst->arena, sizeof *kept);
    *kept = (xent_stats){in[0], mask, mx, sum};
    su_vec_push(&P->xent, P->dst->oom, kept);
    ir_value *cls = class_ids(P, op->in[0]->type.dim[ax], q, ax, "classes",
                              "the classes this rank holds");
    ir_value *oh = local_one_hot(P, in[1], cls, IR_F32);
    ir_value *picked = reduce_over(P, row_stat(P, IR_SUM, local(P, IR_MUL, x, oh, NULL, &x->sh),
                                               ax, mask),
                                   mask, IR_RED_SUM, "the label's logit, from the rank holding "
                                   "its class", "label");
    ir_value *lse = local(P, IR_ADD, mx, local(P, IR_LOG, sum, NULL, NULL, &sum->sh), NULL,
                          &sum->sh);
    ir_value *l = local(P, IR_SUB, lse, picked, NULL, &sum->sh);
    /* the rows as one dim, then their mean: this rank's share of the loss */
    ir_sharding rows = pass_part_replicated();
    rows.partial = (uint16_t)pass_part_used_axes(q, ax);
    ir_attrs ra = {.nlist = 1, .list = {ir_type_numel(&l->type)}};
    ir_attrs ma = {.axis = 0};
    ir_value *mean = local(P, IR_MEAN, local(P, IR_RESHAPE, l, NULL, &ra, &rows), NULL, &ma,
                           &rows);
    int64_t split = 1;
    for (int d = 0; d < ax; d++)
        split *= ir_sharding_split(q, me, d);
    if (split > 1)
        mean = local(P, IR_MUL, mean, cst(P, 1.0 / (double)split, IR_F32), NULL, &rows);
    P->choice = NULL; /* the rows' sum over the batch axes is no statistic of the split */
    pass_part_map_result(P, cast_to(P, mean, op->res[0]->type.dtype), &rows);
}

/* mse: both operands as pred is; the local mean scaled to its share, then
 * summed over the ranks that split pred. cross_entropy likewise over rows,
 * with the class dim whole. */
void pass_part_loss(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lp = op->in[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding qp = pass_part_no_partial(P->map[lp->id]->sh), ql = pass_part_replicated();
    int rows_rank = lp->type.rank;
    const char *why = NULL;
    if (op->code == IR_XENT) {
        ir_sharding q = norm_choice(P, lp->type.rank - 1, &why);
        if (q.naxes[lp->type.rank - 1]) {
            part_xent_split(P, &q, why);
            return;
        }
        qp = pass_part_clear_dim(qp, lp->type.rank - 1);
        rows_rank = lp->type.rank - 1;
        for (int d = 0; d < rows_rank; d++)
            pass_part_copy_dim(&ql, d, &qp, d);
    } else {
        ql = qp;
    }
    ir_value *in[2] = {pass_part_operand(P, 0, &qp,
                                         why ? why : "the loss's operands stay where they are"),
                       pass_part_operand(P, 1, &ql, "the loss's operands line up")};
    ir_sharding nat = pass_part_replicated();
    int64_t split = 1;
    for (int d = 0; d < rows_rank; d++)
        split *= ir_sharding_split(&qp, me, d);
    nat.partial = (uint16_t)pass_part_used_axes(&qp, rows_rank);
    if (split > 1)
        pass_part_finish_scaled(P, in, 2, &nat, 1.0 / (double)split);
    else
        pass_part_finish(P, in, 2, &nat);
}

/* embedding(table [V, D], ids): the table whole along V, the ids following
 * the result's leading dims; or, when the table is split along V (the
 * vocabulary) and that moves fewer bytes, each rank looks up the ids in its
 * rows (zeros for the others), a result partial over V's axes, resolved
 * by all_reduce, or reduce_scatter when the result is wanted split. The
 * ids are then whole over those axes. */
void pass_part_embedding(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    int r = lr->type.rank;
    ir_sharding qt = pass_part_replicated(), qi = pass_part_replicated(),
                nat = pass_part_no_partial(lr->sh);
    pass_part_copy_dim(&qt, 1, &lr->sh, r - 1);
    for (int d = 0; d < r - 1; d++)
        pass_part_copy_dim(&qi, d, &lr->sh, d);
    ir_value *ct = P->map[op->in[0]->id], *ci = P->map[op->in[1]->id];
    if (ct->sh.naxes[0]) {
        unsigned mask = dim_mask(&ct->sh, 0);
        ir_sharding st = pass_part_strip_axes(qt, mask), si = pass_part_strip_axes(qi, mask);
        ir_sharding sn = pass_part_strip_axes(nat, mask);
        pass_part_copy_dim(&st, 0, &ct->sh, 0);
        sn.partial = (uint16_t)mask;
        ir_value t1 = {.type = pass_part_local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = pass_part_local_type(me, &lr->type, &sn), .sh = sn};
        double whole = pass_part_reshard_cost(P, ct, &qt) + pass_part_reshard_cost(P, ci, &qi) +
                       pass_part_reshard_cost(P, &t1, &lr->sh);
        double split = pass_part_reshard_cost(P, ct, &st) + pass_part_reshard_cost(P, ci, &si) +
                       pass_part_reshard_cost(P, &t2, &lr->sh);
        if (split < whole) {
            const char *why = P->choice = split_why(P, "the table split along the vocabulary, rows "
                                        "looked up where they are", split, whole);
            ir_value *table = pass_part_operand(P, 0, &st, why);
            ir_value *ids =
                checked_ids(P, IR_CHECK_IDS,
                            pass_part_operand(P, 1, &si, "ids whole over the vocabulary's axes"),
                            op->in[0]->type.dim[0]);
            ir_value *in_range;
            ir_value *cls = class_ids(P, op->in[0]->type.dim[0], &st, 0, "rows",
                                      "the vocabulary rows this rank holds");
            ir_value *rows = local_ids(P, ids, cls, &in_range);
            ir_value *e = local(P, IR_EMBEDDING, table, rows, NULL, &sn);
            pass_part_map_result(P, local(P, IR_MUL, e, row_mask(P, in_range, e->type.dtype),
                                          NULL, &sn),
                                 &sn);
            return;
        }
    }
    ir_value *in[2] = {pass_part_operand(P, 0, &qt,
                                         "the embedding table whole along the vocabulary"),
                       pass_part_operand(P, 1, &qi, "ids follow the result")};
    pass_part_finish(P, in, 2, &nat);
}

/* embedding_grad(ids, dy) [V, D] with V split over the axes of vmask (0:
 * whole): the rows of dy stay split where they are unless an axis is taken
 * (by D or V), so each rank adds its rows into its table, partial over
 * those axes (the data-parallel gradient sum); D follows the result. */
static void eg_shardings(part *P, unsigned vmask, ir_sharding *qi, ir_sharding *qd,
                         ir_sharding *nat)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0], *ldy = op->in[1];
    int rows = ldy->type.rank - 1;
    const ir_sharding *cur = &P->map[ldy->id]->sh;
    *qd = pass_part_replicated();
    *qi = pass_part_replicated();
    *nat = pass_part_no_partial(lr->sh);
    if (!vmask)
        nat->naxes[0] = 0;
    unsigned taken = pass_part_used_axes(nat, 2), kept = 0;
    for (int d = 0; d < rows && !cur->partial; d++) {
        bool free_axes = true;
        for (int i = 0; i < cur->naxes[d]; i++)
            free_axes &= !((taken >> cur->axes[d][i]) & 1);
        if (!free_axes)
            continue;
        pass_part_copy_dim(qd, d, cur, d);
        pass_part_copy_dim(qi, d, cur, d);
        kept |= pass_part_used_axes(qd, rows);
    }
    pass_part_copy_dim(qd, rows, nat, 1);
    nat->partial = (uint16_t)kept;
}

/* embedding_grad: the table gradient whole along V, or, when the result is
 * wanted split along V and that moves no more bytes, each rank adds only
 * the rows in its range (dy whole over V's axes): on a tie too, since the
 * whole table's gradient would be computed on every rank only to be sliced
 * (mesh 1x2: neither moves a byte). */
void pass_part_embedding_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding qi, qd, nat;
    eg_shardings(P, 0, &qi, &qd, &nat);
    unsigned vmask = dim_mask(&lr->sh, 0);
    if (vmask) {
        ir_sharding si, sd, sn;
        eg_shardings(P, vmask, &si, &sd, &sn);
        ir_value *cx = P->map[op->in[0]->id], *cd = P->map[op->in[1]->id];
        ir_value t1 = {.type = pass_part_local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = pass_part_local_type(me, &lr->type, &sn), .sh = sn};
        double whole = pass_part_reshard_cost(P, cx, &qi) + pass_part_reshard_cost(P, cd, &qd) +
                       pass_part_reshard_cost(P, &t1, &lr->sh);
        double split = pass_part_reshard_cost(P, cx, &si) + pass_part_reshard_cost(P, cd, &sd) +
                       pass_part_reshard_cost(P, &t2, &lr->sh);
        if (split <= whole) {
            ir_value *ids =
                checked_ids(P, IR_CHECK_IDS,
                            pass_part_operand(P, 0, &si, "ids whole over the vocabulary's axes"),
                            lr->type.dim[0]);
            P->choice = split_alt(P, "each rank adds only the rows of its vocabulary range",
                                  split, whole, "for the whole table's gradient");
            ir_value *dy = pass_part_operand(P, 1, &sd, P->choice);
            ir_value *in_range;
            ir_value *cls = class_ids(P, lr->type.dim[0], &sn, 0, "rows",
                                      "the vocabulary rows this rank holds");
            ir_value *rows = local_ids(P, ids, cls, &in_range);
            ir_sharding dsh = dy->sh;
            dsh.partial |= (uint16_t)vmask;
            ir_value *dym = local(P, IR_MUL, dy, row_mask(P, in_range, dy->type.dtype), NULL,
                                  &dsh);
            ir_attrs a = *op->a;
            a.list[0] = t2.type.dim[0];
            a.list[1] = t2.type.dim[1];
            pass_part_map_result(P, local(P, IR_EMBEDDING_GRAD, rows, dym, &a, &sn), &sn);
            return;
        }
    }
    /* Rows split over an axis make the table's gradient partial over it:
     * an all-reduce of the whole [V, D] table. Where gathering the rows
     * over some of those axes moves fewer bytes (the rows of a sequence
     * split over tp: b*s*D gathered against 2 V*D reduced), they are
     * gathered there; the cheapest subset of the axes, all kept on a tie.
     * Only the axes of the rows' inner dims: the batch dim's (data
     * parallelism) sum the table's gradient over ranks as every other
     * param's is, bucketed with them. */
    ir_value *cx = P->map[op->in[0]->id], *cd = P->map[op->in[1]->id];
    unsigned inner = 0;
    for (int d = 1; d + 1 < op->in[1]->type.rank; d++)
        for (int i = 0; i < qd.naxes[d]; i++)
            inner |= 1u << qd.axes[d][i];
    unsigned kept = nat.partial & inner, best_drop = 0;
    double best = -1;
    const char *need = "rows stay where they are, summed over ranks after";
    for (unsigned drop = 0; drop <= kept && kept < 1u << 12; drop++) {
        if (drop & ~kept)
            continue;
        ir_sharding si = pass_part_strip_axes(qi, drop), sd = pass_part_strip_axes(qd, drop);
        ir_sharding sn = nat;
        sn.partial = (uint16_t)(nat.partial & ~drop);
        ir_value t = {.type = pass_part_local_type(me, &lr->type, &sn), .sh = sn};
        double c = pass_part_reshard_cost(P, cx, &si) + pass_part_reshard_cost(P, cd, &sd) +
                   pass_part_reshard_cost(P, &t, &lr->sh);
        if (best < 0 || c < best)
            best = c, best_drop = drop;
    }
    if (best_drop) {
        qi = pass_part_strip_axes(qi, best_drop);
        qd = pass_part_strip_axes(qd, best_drop);
        nat.partial = (uint16_t)(nat.partial & ~best_drop);
        need = "rows gathered where that moves fewer bytes than summing the table's gradient "
               "over ranks";
    }
    ir_value *in[2] = {pass_part_operand(P, 0, &qi, "ids follow the gradient's rows"),
                       pass_part_operand(P, 1, &qd, need)};
    ir_attrs a = *op->a;
    a.list[1] /= ir_sharding_split(&nat, me, 1);
    pass_part_map_result(P, pass_part_emit_local(P, IR_EMBEDDING_GRAD, in, 2, &a), &nat);
}

/* The positions among the keys of this rank's query rows, for a causal
 * attention or attn_probs computing on queries [..., S, d] with sharding
 * q (keys [..., T, d] whole along T): where S is split, row i of the
 * rank's block is global row off + i, which sees the keys j <= off + i +
 * T - S (the mask aligned to the end by the global S and T); iota [S]
 * sliced at the rank's coordinate, plus T - S. NULL where S is whole or
 * the op is not causal: the local rows are then the global ones. */
ir_value *pass_part_query_pos(part *P, const ir_sharding *q)
{
    const ir_op *op = P->op;
    int r = op->in[0]->type.rank;
    if (!op->a->causal || !q->naxes[r - 2])
        return NULL;
    int64_t s = op->in[0]->type.dim[r - 2], t = op->in[1]->type.dim[r - 2];
    ir_value *pos = class_ids(P, s, q, r - 2, "pos",
                              "the global query rows this rank holds, for the causal mask");
    if (t != s)
        pos = local(P, IR_ADD, pos, cst(P, (double)(t - s), IR_I32), NULL, &pos->sh);
    return pos;
}

/* s with only the axes in mask along dim d. */
static ir_sharding keep_axes(ir_sharding s, int d, unsigned mask)
{
    int k = 0;
    for (int i = 0; i < s.naxes[d]; i++)
        if (mask >> s.axes[d][i] & 1)
            s.axes[d][k++] = s.axes[d][i];
    s.naxes[d] = (uint8_t)k;
    return s;
}

/* dropout: computed where x lies, as an elementwise op, with each element's
 * global index for the bits: for each split dim (at most two; a value
 * split along more has its later split dims gathered first), the global
 * coordinates of the rank's rows along it, iota sliced at the rank's
 * coordinate. The key is whole. In a pipeline, dim 0 (the batch, in
 * practice) keeps only the axes that split the inputs' batch, so that a
 * microbatch's rows there are part of each block the rank holds
 * (pipesplit.c, dropout_mb); a finer split is gathered first and sliced
 * after, and where the batch is another dim the pipeline refuses it. */
void pass_part_dropout(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_sharding nat = pass_part_no_partial(lr->sh);
    if (P->dst->pipe.axis >= 0) /* a microbatch's rows along dim 0: blocks of the inputs' */
        nat = keep_axes(nat, 0, P->batch_axes);
    int split = 0;
    for (int d = 0; d < lr->type.rank; d++)
        if (nat.naxes[d] && ++split > 2)
            nat = pass_part_clear_dim(nat, d);
    ir_sharding whole = pass_part_replicated();
    ir_value *in[4] = {pass_part_operand(P, 0, &nat, "dropout computes where its operand lies"),
                       pass_part_operand(P, 1, &whole, "the key of dropout's bits")};
    int n = 2;
    for (int d = 0; d < lr->type.rank; d++)
        if (nat.naxes[d])
            in[n++] = class_ids(P, lr->type.dim[d], &nat, d, "drop",
                                "the global rows this rank holds, for dropout's bits");
    pass_part_finish(P, in, n, &nat);
}

/* iota: made whole, then resharded to its value's sharding. */
void pass_part_iota(part *P)
{
    ir_sharding rep = pass_part_replicated();
    pass_part_map_result(P, local(P, IR_IOTA, NULL, NULL, P->op->a, &rep), &rep);
}
