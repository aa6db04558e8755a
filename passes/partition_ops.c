/* partition_ops.c: the rules of the SPMD partitioning (partition.h) for
 * ops that compute on whole dims or on their operands' shards as they
 * lie: elementwise ops and optimizer updates, matmul (a contraction over
 * split dims left partial where that moves fewer bytes), transpose,
 * reshape, expand, narrow and concat, attention and attn_probs, and the
 * sources. */
#include "partition.h"

#include <string.h>

/* The sharding of the operand dims aligned with the result's (NumPy
 * broadcasting): dims of size 1 or missing carry no axes. */
static ir_sharding project(const ir_sharding *r, const ir_type *rt, const ir_type *ot)
{
    ir_sharding s = pass_part_replicated();
    int off = rt->rank - ot->rank;
    for (int d = 0; d < ot->rank; d++) {
        if (ot->dim[d] != rt->dim[d + off])
            continue;
        s.naxes[d] = r->naxes[d + off];
        memcpy(s.axes[d], r->axes[d + off], IR_MAX_AXES);
    }
    return s;
}

/* Elementwise ops, broadcasting ones and optimizer updates: every operand
 * follows the result (a scalar, like adamw's step, is whole). */
void pass_part_elementwise(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_value *in[4];
    for (int i = 0; i < op->nin; i++) {
        ir_sharding req = project(&lr->sh, &lr->type, &op->in[i]->type);
        in[i] = pass_part_operand(P, i, &req, "operands of an elementwise op follow its result");
    }
    ir_sharding nat = pass_part_no_partial(lr->sh);
    pass_part_finish(P, in, op->nin, &nat);
}

/* The operand shardings and the natural result for contracting over the
 * axes of k (dim 0 of k): those axes leave every other dim (the result is
 * partial over them instead) and split both K dims. */
static void contract_as(const ir_sharding *k, const ir_sharding *base_a, int ka,
                        const ir_sharding *base_b, int kb, const ir_value *lr, ir_sharding *qa,
                        ir_sharding *qb, ir_sharding *nat)
{
    unsigned mask = 0;
    for (int j = 0; j < k->naxes[0]; j++)
        mask |= 1u << k->axes[0][j];
    *qa = pass_part_strip_axes(*base_a, mask);
    *qb = pass_part_strip_axes(*base_b, mask);
    *nat = pass_part_strip_axes(pass_part_no_partial(lr->sh), mask);
    nat->partial = (uint16_t)mask;
    pass_part_copy_dim(qa, ka, k, 0);
    pass_part_copy_dim(qb, kb, k, 0);
}

/* The bytes that bring a matmul's local result r (sharding nat, maybe
 * partial) to the logical result's sharding. A partial result whose one
 * reader sums it over a dim (a weight's gradient over the batch rows) is
 * counted as the sum reduced, since combine.c reduces after the sum. */
static double result_cost(part *P, const ir_value *r)
{
    const ir_value *lr = P->op->res[0];
    double direct = pass_part_reshard_cost(P, (ir_value *)r, &lr->sh);
    const ir_op *s = P->reader[lr->id];
    if (!r->sh.partial || !s || (s->code != IR_SUM && s->code != IR_MEAN) || r->type.rank < 2)
        return direct;
    int ax = (int)s->a->axis; /* axes splitting it (dp) sum the gradient either way */
    if (ax < 0 || ax >= r->type.rank)
        return direct;
    ir_value t = *r;
    if (s->a->keepdims) {
        t.type.dim[ax] = 1;
    } else {
        for (int d = ax; d + 1 < r->type.rank; d++) {
            t.type.dim[d] = r->type.dim[d + 1];
            pass_part_copy_dim(&t.sh, d, &r->sh, d + 1);
        }
        t.type.rank--;
        t.sh.naxes[t.type.rank] = 0;
    }
    double folded = pass_part_reshard_cost(P, &t, &s->res[0]->sh);
    return folded < direct ? folded : direct;
}

/* The candidate of n with the least key, compared in order, other than
 * skip; -1 when there is none. */
static int first_key(double key[][4], int n, int skip)
{
    int bi = -1;
    for (int i = 0; i < n; i++) {
        if (i == skip)
            continue;
        int k = 0;
        while (bi >= 0 && k < 3 && key[i][k] == key[bi][k])
            k++;
        if (bi < 0 || key[i][k] < key[bi][k])
            bi = i;
    }
    return bi;
}

/* The contraction cands[i] in words: over its split over those axes, or
 * whole. */
static const char *contraction_text(part *P, const ir_sharding *c)
{
    if (!c->naxes[0])
        return "contracting the dim whole";
    const char *axes = "";
    for (int j = 0; j < c->naxes[0]; j++)
        axes = su_sprintf(&P->dst->arena, "%s%s%s", axes, j ? ", " : "",
                          P->dst->mesh.name[c->axes[0][j]]);
    return su_sprintf(&P->dst->arena, "contracting the dim split over %s, the product partial",
                      axes);
}

/* Why matmul contracts as cands[bi] rather than cands[alt]: the first key
 * that differs. */
static const char *contraction_why(part *P, const ir_sharding *cands, double key[][4], int bi,
                                   int alt)
{
    const char *won = contraction_text(P, &cands[bi]), *lost = contraction_text(P, &cands[alt]);
    if (key[alt][0] > key[bi][0])
        return su_sprintf(&P->dst->arena, "%s: %.0f bytes per rank, against %.0f and %.3gx the "
                          "multiply-adds for %s", won, key[bi][2], key[alt][2],
                          key[alt][0] / key[bi][0], lost);
    if (key[alt][1] > key[bi][1])
        return su_sprintf(&P->dst->arena, "%s: %.0f bytes per rank, against %.0f for %s, which "
                          "moves an annotated operand (%.0f bytes)", won, key[bi][2], key[alt][2],
                          lost, key[alt][1]);
    return su_sprintf(&P->dst->arena, "%s: %.0f bytes per rank, against %.0f for %s", won,
                      key[bi][2], key[alt][2], lost);
}

/* a [..., M, K] @ b [..., K, N]: batch, M and N follow the result; the
 * contracting dim keeps the axes of whichever operand has them, if that is
 * cheaper than gathering, and the result is then partial over them. */
void pass_part_matmul(part *P)
{
    const ir_op *op = P->op;
    const ir_value *la = op->in[0], *lb = op->in[1], *lr = op->res[0];
    int ra = la->type.rank, rb = lb->type.rank;
    int ka = ra - 1, kb = rb == 1 ? 0 : rb - 2;
    ir_sharding base_a = pass_part_replicated(), base_b = pass_part_replicated();
    /* batch dims and M from the result for a; batch and N for b */
    int nb = lr->type.rank - (ra >= 2) - (rb >= 2); /* batch dims of the result */
    for (int d = 0; d < ra - 2; d++) {
        int rd = nb - (ra - 2) + d;
        if (la->type.dim[d] == lr->type.dim[rd])
            pass_part_copy_dim(&base_a, d, &lr->sh, rd);
    }
    if (ra >= 2)
        pass_part_copy_dim(&base_a, ra - 2, &lr->sh, nb);
    for (int d = 0; d < rb - 2; d++) {
        int rd = nb - (rb - 2) + d;
        if (lb->type.dim[d] == lr->type.dim[rd])
            pass_part_copy_dim(&base_b, d, &lr->sh, rd);
    }
    if (rb >= 2) {
        int nd = lr->type.rank - 1;
        pass_part_copy_dim(&base_b, rb - 1, &lr->sh, nd);
    }
    /* candidates for the contracting dim's axes */
    const ir_value *ca = P->map[la->id], *cb = P->map[lb->id];
    ir_sharding cands[3];
    int nc = 0;
    const ir_sharding *srcs[2] = {&ca->sh, &cb->sh};
    int kdims[2] = {ka, kb};
    for (int i = 0; i < 2; i++) {
        const ir_sharding *s = srcs[i];
        int kd = kdims[i];
        bool zero3 = false; /* ZeRO-3 gathers params: it never computes on their shards */
        for (int j = 0; j < s->naxes[kd] && op->in[i]->def->code == IR_PARAM; j++)
            zero3 |= s->axes[kd][j] == P->zero3_axis;
        if (!s->naxes[kd] || zero3 ||
            la->type.dim[ka] % pass_part_axes_size(&P->dst->mesh, s->axes[kd], s->naxes[kd]))
            continue;
        cands[nc] = pass_part_replicated();
        pass_part_copy_dim(&cands[nc], 0, s, kd);
        if (!nc || !ir_sharding_eq(&cands[0], &cands[nc], 1)) /* b's split may be a's */
            nc++;
    }
    cands[nc++] = pass_part_replicated(); /* contract unsplit */
    /* First the fewest local multiply-adds: gathering a split contraction
     * repeats the matmul on every rank of the group, where a split
     * contraction keeps it divided and pays only for resolving the partial
     * result (Megatron's row-parallel layer; reduce_scatter when the result
     * is wanted split, as in sequence parallelism). Then the fewest bytes
     * moving an annotated operand (a weight stays split as annotated where
     * a candidate computes on its shards, as Megatron's do). Then the
     * fewest bytes in all, the operands' reshards and the result's (an
     * MoE's input gradient moves its expert-split output gradient back by
     * one all-to-all rather than the dispatch mask by one and the partial
     * product by a reduce-scatter); then the fewest moved before the
     * matmul runs; then the first candidate. */
    double key[3][4]; /* flops, annotated bytes, bytes, operand bytes */
    ir_sharding qa, qb, nat;
    for (int i = 0; i < nc; i++) {
        contract_as(&cands[i], &base_a, ka, &base_b, kb, lr, &qa, &qb, &nat);
        double oa = pass_part_operand_cost(P, 0, &qa), ob = pass_part_operand_cost(P, 1, &qb);
        ir_value tmp = {.type = pass_part_local_type(&P->dst->mesh, &lr->type, &nat), .sh = nat};
        key[i][0] = (double)ir_type_numel(&tmp.type) *
                    (double)(la->type.dim[ka] / ir_sharding_split(&qa, &P->dst->mesh, ka));
        key[i][1] = (pass_annotated(la) ? oa : 0) + (pass_annotated(lb) ? ob : 0);
        key[i][2] = oa + ob + result_cost(P, &tmp);
        key[i][3] = oa + ob;
    }
    int bi = first_key(key, nc, -1), alt = first_key(key, nc, bi);
    const char *l = "the left operand of '@' follows its result",
               *r = "the right operand of '@' follows its result";
    if (alt >= 0 && P->ex) { /* why this contraction, against the next best */
        P->choice = contraction_why(P, cands, key, bi, alt);
        l = su_sprintf(&P->dst->arena, "%s; %s", l, P->choice);
        r = su_sprintf(&P->dst->arena, "%s; %s", r, P->choice);
    }
    contract_as(&cands[bi], &base_a, ka, &base_b, kb, lr, &qa, &qb, &nat);
    ir_value *in[2] = {pass_part_operand(P, 0, &qa, l), pass_part_operand(P, 1, &qb, r)};
    pass_part_finish(P, in, 2, &nat);
}

void pass_part_transpose(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_sharding q = pass_part_replicated();
    for (int i = 0; i < op->a->nlist; i++) {
        int d = (int)op->a->list[i];
        pass_part_copy_dim(&q, d, &lr->sh, i);
    }
    ir_value *x = pass_part_operand(P, 0, &q, "the operand of transpose follows its result");
    ir_sharding nat = pass_part_no_partial(lr->sh);
    pass_part_finish(P, &x, 1, &nat);
}

/* Maps a sharding of `from` onto the reshaped `to`: dims group by equal
 * running products, dims of size 1 (never split) left out; the axes of a
 * group's first (major) dim carry to the group's first dim when they
 * divide it. False when axes were dropped. */
static bool reshape_map(const ir_mesh *me, const ir_type *from, const ir_type *to,
                        const ir_sharding *s, ir_sharding *out)
{
    *out = pass_part_replicated();
    bool exact = true;
    int i = 0, o = 0;
    for (;;) {
        while (i < from->rank && from->dim[i] == 1)
            i++;
        while (o < to->rank && to->dim[o] == 1)
            o++;
        if (i >= from->rank || o >= to->rank) /* the rest is dims of size 1 */
            break;
        int i0 = i, o0 = o;
        int64_t pi = from->dim[i++], po = to->dim[o++];
        while (pi != po) /* equal element counts: neither side runs out */
            if (pi < po)
                pi *= from->dim[i++];
            else
                po *= to->dim[o++];
        for (int d = i0 + 1; d < i; d++)
            exact &= s->naxes[d] == 0;
        if (!s->naxes[i0])
            continue;
        if (to->dim[o0] % pass_part_axes_size(me, s->axes[i0], s->naxes[i0]) == 0) {
            out->naxes[o0] = s->naxes[i0];
            memcpy(out->axes[o0], s->axes[i0], IR_MAX_AXES);
        } else {
            exact = false;
        }
    }
    return exact;
}

void pass_part_reshape(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lx = op->in[0], *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding q, nat;
    reshape_map(me, &lr->type, &lx->type, &lr->sh, &q);
    q = pass_part_no_partial(q);
    ir_value *x = pass_part_operand(P, 0, &q,
                                    "the operand of reshape follows its result where it can");
    reshape_map(me, &lx->type, &lr->type, &q, &nat);
    nat.kind = IR_SH_AUTO;
    ir_attrs a = *op->a;
    for (int d = 0; d < a.nlist; d++) /* the local shape */
        a.list[d] /= ir_sharding_split(&nat, me, d);
    pass_part_map_result(P, pass_part_emit_local(P, IR_RESHAPE, &x, 1, &a), &nat);
}

/* q, k, v [..., S, d]: batch and head dims follow the result, q's S too
 * (causal: with the global positions of its rows); keys and values whole
 * along T, every head dim whole. */
void pass_part_attention(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding q = pass_part_clear_dim(pass_part_no_partial(lr->sh), r - 1);
    ir_sharding kv = pass_part_clear_dim(q, r - 2);
    ir_value *in[4] = {pass_part_operand(P, 0, &q, "queries follow the result"),
                       pass_part_operand(P, 1, &kv, "keys whole along the sequence"),
                       pass_part_operand(P, 2, &kv, "values whole along the sequence"),
                       pass_part_query_pos(P, &q)};
    pass_part_finish(P, in, in[3] ? 4 : 3, &q);
}

/* expand: the operand's full-size dims follow the result; the local op
 * expands to the local shape. */
void pass_part_expand(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_sharding q = project(&lr->sh, &lr->type, &op->in[0]->type),
                nat = pass_part_no_partial(lr->sh);
    ir_value *x = pass_part_operand(P, 0, &q, "the operand of expand follows its result");
    ir_attrs a = *op->a;
    for (int d = 0; d < a.nlist; d++)
        a.list[d] /= ir_sharding_split(&nat, &P->dst->mesh, d);
    pass_part_map_result(P, pass_part_emit_local(P, IR_EXPAND, &x, 1, &a), &nat);
}

/* narrow and concat: every operand like the result, the sliced or joined
 * dim whole, so the local op slices (joins) at the global offsets. */
void pass_part_narrow_concat(part *P)
{
    const ir_op *op = P->op;
    ir_sharding q = pass_part_clear_dim(pass_part_no_partial(op->res[0]->sh), (int)op->a->dim);
    ir_value *in[4];
    for (int i = 0; i < op->nin; i++)
        in[i] = pass_part_operand(P, i, &q, op->code == IR_NARROW
                                                ? "a slice reads its dim whole"
                                                : "concat's operands are whole along its axis");
    pass_part_finish(P, in, op->nin, &q);
}

/* attn_probs(q, k) [..., S, T]: as attention, keys whole along T. */
void pass_part_attn_probs(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding nat = pass_part_clear_dim(pass_part_no_partial(lr->sh), r - 1);
    ir_sharding q = nat, k = pass_part_clear_dim(nat, r - 2);
    ir_value *in[3] = {pass_part_operand(P, 0, &q, "queries follow the result"),
                       pass_part_operand(P, 1, &k, "keys whole along the sequence"),
                       pass_part_query_pos(P, &q)};
    pass_part_finish(P, in, in[2] ? 3 : 2, &nat);
}

void pass_part_source(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_type t = pass_part_local_type(&P->dst->mesh, &lr->type, &lr->sh);
    ir_op *d = ir_append(P->dst, op->code, NULL, 0, op->a, &t);
    d->loc = op->loc;
    d->rep = op->rep;
    d->phase = op->phase;
    d->res[0]->name = lr->name;
    d->res[0]->sh = lr->sh;
    P->map[lr->id] = d->res[0];
}
