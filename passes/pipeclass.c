/* pipeclass.c: the pipeline split's analysis (pipesplit.h): each value's
 * kind (per step, per microbatch, accumulated, after accumulation), batch
 * dimension and chunk, with the errors of what cannot be pipelined at
 * their places; then the schedules (gpipe, 1f1b, interleaved) and their
 * bubble. pipesplit.c's file comment says what the kinds mean. */
#include "pipesplit.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool vfail(pl *L, su_loc at, const char *what, const char *fmt, va_list ap)
{
    if (L->failed)
        return false;
    L->failed = true;
    *L->at = at;
    su_buf_printf(L->err, "cannot pipeline%s: ", what);
    su_buf_vprintf(L->err, fmt, ap);
    return false;
}

/* An error at a place in the source (a declaration, the pipeline
 * statement; line 0: none). */
bool pass_pl_fail_at(pl *L, su_loc at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(L, at, "", fmt, ap);
    va_end(ap);
    return false;
}

/* An error in op, at the source of the operation it comes from: the
 * message names it as the user wrote it, or as its gradient. */
static bool fail(pl *L, const ir_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(pl *L, const ir_op *op, const char *fmt, ...)
{
    char what[64];
    if (op->phase == IR_PH_FORWARD)
        snprintf(what, sizeof what, " '%s'", ir_op_display(op->code));
    else
        snprintf(what, sizeof what, " the %s of this operation",
                 op->phase == IR_PH_BACKWARD ? "gradient" : "optimizer update");
    va_list ap;
    va_start(ap, fmt);
    vfail(L, op->loc, what, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- kinds and batch dimensions ---- */

/* Where operand x's dimension d lands in a result of rank R under NumPy
 * broadcasting (right-aligned). */
static int aligned(const ir_value *x, int d, int R)
{
    return d + (R - x->type.rank);
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t lcm64(int64_t a, int64_t b)
{
    return a / gcd64(a, b) * b;
}

/* A per-step value split s ways along the batch, which microbatches read
 * row by row: each rank's shard must hold whole blocks, so N becomes a
 * multiple of s (and the inputs' and outputs' rows must then split into
 * N blocks of M microbatches, which pass_pl_batch_blocks checks). */
static void need_blocks(pl *L, int64_t s)
{
    L->need = lcm64(L->need ? L->need : 1, s);
    L->N = lcm64(L->N, s);
}

/* Whether per-step value v is made from a param (which the forward would
 * then read row by row: its gradient would differ per microbatch). */
static bool reads_param(pl *L, const ir_value *v)
{
    bool *seen = su_alloc(&L->ar, (size_t)L->nv * sizeof *seen);
    const ir_value **stack = su_alloc(&L->ar, (size_t)L->nv * sizeof *stack);
    memset(seen, 0, (size_t)L->nv * sizeof *seen);
    int n = 0;
    stack[n++] = v;
    seen[v->id] = true;
    while (n) {
        const ir_value *x = stack[--n];
        if (x->def->code == IR_PARAM)
            return true;
        for (int k = 0; k < x->def->nin; k++)
            if (!seen[x->def->in[k]->id]) {
                seen[x->def->in[k]->id] = true;
                stack[n++] = x->def->in[k];
            }
    }
    return false;
}

/* Per-step operand k of op, whose dimension xd (if any) lines up with the
 * batch: where it spans the batch, each microbatch reads a slice of it,
 * any one where it is the same in every row, else the microbatch's own
 * rows (cut | CUT_ROWS), read as the unpipelined program reads it: a
 * table made from constants (arange), or in the backward a value such as
 * the dropout of a gradient the same in every row. A forward value made
 * from a param that differs row by row is an error: the param's gradient
 * would differ per microbatch. */
static bool per_step_fits(pl *L, const ir_op *op, int k, int xd)
{
    const ir_value *x = op->in[k];
    if (xd < 0 || xd >= x->type.rank || x->type.dim[xd] == 1)
        return true;
    bool same = L->uniform[x->id] >> xd & 1;
    if (!same && op->phase == IR_PH_FORWARD && reads_param(L, x))
        return fail(L, op, "a per-step value of %lld rows, made from a param, meets the "
                    "per-microbatch batch dimension; pipelining needs such values to "
                    "broadcast over it, or to be the same in every row",
                    (long long)x->type.dim[xd]);
    if (!same)
        need_blocks(L, ir_sharding_split(&x->sh, &L->m->mesh, xd));
    L->cut[(size_t)op->res[0]->id * MAX_IN + k] = (int8_t)(same ? xd : xd | CUT_ROWS);
    return true;
}

/* Elementwise ops (and expand): every per-microbatch operand's batch
 * dimension lands on the same result dimension. */
static int rule_elementwise(pl *L, const ir_op *op)
{
    int R = op->res[0]->type.rank, od = -1;
    for (int k = 0; k < op->nin; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] != K_MB)
            continue;
        int d = aligned(x, L->bd[x->id], R);
        if (od >= 0 && d != od)
            return fail(L, op, "its operands hold the batch in different dimensions (%d and %d)",
                        od, d), -2;
        od = d;
    }
    for (int k = 0; k < op->nin; k++)
        if (L->kind[op->in[k]->id] == K_PRE &&
            !per_step_fits(L, op, k, od - (R - op->in[k]->type.rank)))
            return -2;
    return od;
}

/* dropout(x, key, positions of the rows of each split dim): the batch
 * where x holds it; the positions along the batch dim are the rows'
 * global indices, each microbatch reading its own (cut | CUT_ROWS), the
 * others (and the key) whole. */
static int rule_dropout(pl *L, const ir_op *op)
{
    const ir_value *x = op->in[0], *r = op->res[0];
    int od = L->kind[x->id] == K_MB ? L->bd[x->id] : -1;
    for (int q = 0, k = 2; q < r->type.rank && k < op->nin; q++)
        if (r->sh.naxes[q]) {
            int64_t s = ir_sharding_split(&r->sh, &L->m->mesh, q);
            if (q == od)
                need_blocks(L, s);
            if (q == od && L->kind[op->in[k]->id] == K_PRE)
                L->cut[(size_t)r->id * MAX_IN + k] = (int8_t)(0 | CUT_ROWS);
            k++;
        }
    return od;
}

/* Ops whose operands line up from dimension 0 (a loss's logits and labels,
 * embedding_grad's ids and gradient): the batch dimension of the first
 * per-microbatch operand; the others hold it there too. */
static int rule_prefix(pl *L, const ir_op *op)
{
    int d = -1;
    for (int k = 0; k < op->nin && d < 0; k++)
        if (L->kind[op->in[k]->id] == K_MB)
            d = L->bd[op->in[k]->id];
    for (int k = 0; k < op->nin; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] == K_MB && L->bd[x->id] != d)
            return fail(L, op, "its operands hold the batch in different dimensions (%d and %d)",
                        d, L->bd[x->id]), -2;
        if (L->kind[x->id] == K_PRE && !per_step_fits(L, op, k, d))
            return -2;
    }
    return d;
}

/* Where dimension d of matmul operand k lands in the result: a [.., M, K]
 * @ b [.., K, N] makes [batch.., M, N], the batch dimensions of both
 * broadcast (right-aligned) into the leading ones, without M when a is
 * 1-D and without N when b is; -1 for the contracted K. */
static int matmul_dim(const ir_op *op, int k, int d)
{
    int ra = op->in[0]->type.rank, rb = op->in[1]->type.rank, R = op->res[0]->type.rank;
    int r = op->in[k]->type.rank, nb = R - (ra > 1) - (rb > 1);
    if (r == 1 || d == (k == 0 ? r - 1 : r - 2))
        return -1;
    if (d == (k == 0 ? r - 2 : r - 1))
        return k == 0 ? nb : R - 1;
    return nb - (r - 2) + d;
}

/* The dimension of matmul operand k that lands on result dimension od, or
 * -1 (none). */
static int matmul_operand_dim(const ir_op *op, int k, int od)
{
    for (int d = 0; d < op->in[k]->type.rank; d++)
        if (od >= 0 && matmul_dim(op, k, d) == od)
            return d;
    return -1;
}

/* matmul: the batch in a batch, row or column dimension stays (where
 * matmul_dim puts it); in the contracted dimension, the result is a sum
 * over the batch. */
static int rule_matmul(pl *L, const ir_op *op, int *mode)
{
    int od = -2;
    bool contracts = false, keeps = false;
    for (int k = 0; k < 2; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] != K_MB)
            continue;
        int o = matmul_dim(op, k, L->bd[x->id]);
        if (o < 0) {
            contracts = true;
            continue;
        }
        if (keeps && o != od)
            return fail(L, op, "its operands hold the batch in different dimensions"), -2;
        keeps = true;
        od = o;
    }
    if (contracts && keeps)
        return fail(L, op, "one operand contracts the batch dimension and the other keeps it"),
               -2;
    if (contracts) { /* a per-step operand spans the batch in its contracted dimension */
        for (int k = 0; k < 2; k++) {
            const ir_value *x = op->in[k];
            int r = x->type.rank;
            if (L->kind[x->id] == K_PRE && !per_step_fits(L, op, k, k == 0 || r == 1 ? r - 1 : r - 2))
                return -2;
        }
        *mode = ACC_SUM;
        return -1;
    }
    for (int k = 0; k < 2; k++) /* a per-step operand broadcast along the batch */
        if (L->kind[op->in[k]->id] == K_PRE &&
            !per_step_fits(L, op, k, matmul_operand_dim(op, k, od)))
            return -2;
    return od;
}

static int rule_reshape(pl *L, const ir_op *op, int d)
{
    const ir_type *in = &op->in[0]->type, *out = &op->res[0]->type;
    int64_t pre = 1, acc = 1;
    for (int k = 0; k < d; k++)
        pre *= in->dim[k];
    for (int k = 0; k < out->rank; k++) {
        if (acc == pre && out->dim[k] % L->M == 0)
            return k;
        acc *= out->dim[k];
    }
    return fail(L, op, "the batch (dimension %d) is not the major part of any dimension of "
                "the new shape", d), -2;
}

/* The result's batch dimension (>= 0), -1 for a batch reduction (its
 * accumulation in *mode), -2 on error. */
static int batch_rule(pl *L, const ir_op *op, int *mode)
{
    const ir_value *x = op->in[0];
    int d = L->kind[x->id] == K_MB ? L->bd[x->id] : -1;
    switch (op->code) {
    case IR_MATMUL:
        return rule_matmul(L, op, mode);
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
    case IR_ATTN_DK:
    case IR_ATTN_DV:
    case IR_ATTN_DELTA: {
        /* autodiff's form's operands (attn_grad.c): the batch in one
         * leading dim of those per microbatch; dy may be per step (the
         * gradient of a mean, the same in every row), read as its
         * products read it; then the query positions, per step
         * (attn_delta has none: y, dy and lse) */
        int n = op->code == IR_ATTN_DELTA ? op->nin
                                          : op->nin - (op->nin == ir_ops[op->code].max_in);
        int od = -1;
        for (int k = 0; k < n; k++) {
            const ir_value *y = op->in[k];
            if (L->kind[y->id] != K_MB)
                continue;
            /* attn_delta's lse [.., S] has no dim after the sequence */
            int seq = y->type.rank - (op->code == IR_ATTN_DELTA && k == 2 ? 1 : 2);
            if ((od >= 0 && L->bd[y->id] != od) || L->bd[y->id] >= seq)
                return fail(L, op, "q, k and v must all hold the batch in a leading dimension, "
                            "before the sequence"),
                       -2;
            od = L->bd[y->id];
        }
        for (int k = 0; k < n; k++)
            if (L->kind[op->in[k]->id] == K_PRE && !per_step_fits(L, op, k, od))
                return -2;
        if (n < op->nin && L->kind[op->in[n]->id] != K_PRE)
            return fail(L, op, "the query positions must be the same in every microbatch"), -2;
        return od;
    }
    case IR_ATTENTION:
    case IR_ATTN_PROBS:
    case IR_ATTN_LSE: {
        int n = op->nin - (op->nin == ir_ops[op->code].max_in); /* then the query positions */
        for (int k = 0; k < op->nin; k++)
            /* the batch in a leading dim: never the sequence or the
             * feature dim, which attention mixes across rows */
            if (k < n ? L->kind[op->in[k]->id] != K_MB || L->bd[op->in[k]->id] != d ||
                            d >= op->in[k]->type.rank - 2
                      : L->kind[op->in[k]->id] != K_PRE)
                return fail(L, op, "q, k and v must all hold the batch in a leading dimension, "
                            "before the sequence"),
                       -2;
        return d;
    }
    case IR_SUM:
    case IR_MEAN:
    case IR_AMAX:
        if (op->a->axis == d) {
            *mode = op->code == IR_SUM ? ACC_SUM : op->code == IR_MEAN ? ACC_MEAN : ACC_MAX;
            return -1;
        }
        return d - (op->a->axis < d && !op->a->keepdims);
    case IR_SOFTMAX:
    case IR_LAYERNORM:
    case IR_RMSNORM:
    case IR_LAYERNORM_RSTD:
    case IR_RMSNORM_RSTD:
    case IR_XENT_LSE: {
        int axis = op->code == IR_SOFTMAX ? (int)op->a->axis : x->type.rank - 1;
        if (d < 0 || d == axis)
            return fail(L, op, "it normalises over the batch dimension"), -2;
        return rule_elementwise(L, op) < -1 ? -2 : d;
    }
    case IR_LAYERNORM_DX:
    case IR_RMSNORM_DX: { /* dy may be per step, the same in every row */
        int od = rule_elementwise(L, op);
        if (od < -1)
            return -2;
        if (od < 0 || od == op->res[0]->type.rank - 1)
            return fail(L, op, "it normalises over the batch dimension"), -2;
        return od;
    }
    case IR_XENT:
    case IR_MSE:
        *mode = ACC_MEAN;
        return rule_prefix(L, op) < -1 ? -2 : -1;
    case IR_EMBEDDING_GRAD:
        *mode = ACC_SUM;
        return rule_prefix(L, op) < -1 ? -2 : -1;
    case IR_EMBEDDING:
        if (L->kind[x->id] == K_MB)
            return fail(L, op, "the table depends on the batch"), -2;
        return L->bd[op->in[1]->id];
    case IR_XENT_GRAD:
        if (d < 0 || d == x->type.rank - 1)
            return fail(L, op, "the batch must be in a row dimension of the logits"), -2;
        return rule_prefix(L, op);
    case IR_TRANSPOSE:
        for (int k = 0; k < op->a->nlist; k++)
            if (op->a->list[k] == d)
                return k;
        return -2;
    case IR_RESHAPE:
        return rule_reshape(L, op, d);
    case IR_CONSTRAIN:
    case IR_CHECK_IDS:
    case IR_CHECK_LABELS:
    case IR_ALL_REDUCE:
    case IR_BROADCAST:
        return d;
    case IR_ALL_GATHER:
    case IR_REDUCE_SCATTER:
    case IR_SLICE:
    case IR_ALL_TO_ALL:
        return d;
    case IR_EXPAND:
        return rule_elementwise(L, op);
    case IR_DROPOUT:
        return rule_dropout(L, op);
    case IR_NARROW:
        if (d == op->a->dim)
            return fail(L, op, "it slices the batch dimension, which each microbatch holds "
                        "a part of"), -2;
        return d;
    case IR_CONCAT: {
        int od = rule_elementwise(L, op);
        if (od >= 0 && od == op->a->dim)
            return fail(L, op, "it joins along the batch dimension, which each microbatch "
                        "holds a part of"), -2;
        return od;
    }
    default:
        break;
    }
    switch (ir_ops[op->code].cls) {
    case IR_C_UNARY:
    case IR_C_BINARY:
        return rule_elementwise(L, op);
    default:
        return fail(L, op, "it is not supported on per-microbatch values"), -2;
    }
}

/* The chunk of an MB or ACC op that does not float: a repetition's own,
 * else the latest chunk of what it reads. But a backward op outside the
 * repeat that reads gradients of several chunks (the gradient of a value
 * before the repeat that two carries start from, or that a residual
 * stream passes through unchanged from the loss) runs in the earliest of
 * them: gradients flow to earlier chunks, so there it can read them all,
 * and the forward values it reads, when none is of a later chunk. */
static int op_chunk(pl *L, const ir_op *op)
{
    if (op->rep >= 0)
        return L->rep_chunk[op->rep];
    int c = 0, grad = INT_MAX, fwd = -1;
    bool backward = op->phase != IR_PH_FORWARD;
    for (int k = 0; k < op->nin; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] != K_MB || L->floating[x->id])
            continue;
        int cx = L->chunk[x->id];
        c = cx > c ? cx : c;
        if (backward && x->def->phase != IR_PH_FORWARD)
            grad = cx < grad ? cx : grad;
        else
            fwd = cx > fwd ? cx : fwd;
    }
    return grad != INT_MAX && fwd <= grad ? grad : c;
}

/* Where a value one chunk makes may be read by another: forward values
 * flow to later chunks, gradients to earlier ones; a backward op may read a
 * forward value its stage made or received in the forward pass. */
static bool check_edge(pl *L, const ir_op *op, const ir_value *x)
{
    int a = L->chunk[x->id], b = L->chunk[op->res[0]->id];
    bool fa = x->def->phase == IR_PH_FORWARD, fb = op->phase == IR_PH_FORWARD;
    if (a == b)
        return true;
    if (fa && fb && a < b)
        return true;
    if (!fa && !fb && a > b)
        return true;
    if (fa && !fb && (pass_pl_stage_of(L, a) == pass_pl_stage_of(L, b) || (L->to[x->id] >> pass_pl_stage_of(L, b) & 1)))
        return true; /* kept since the forward, made or received there */
    return fail(L, op, "it reads a value of pipeline chunk %d from chunk %d (%s to %s): values "
                "cross stages forward in the forward pass and backward in the backward pass",
                a, b, fa ? "forward" : "backward", fb ? "forward" : "backward");
}

/* Whether per-step value v is the same along its dimension d: true where
 * v has no such dimension or it has size 1 in the whole value (locally
 * and not split over an axis). The bits are those the same rules give
 * in the unpartitioned program, so the pieces that ranks hold of one
 * value are equal too, and gathering them keeps the bit. */
static bool same_along(const pl *L, const ir_value *v, int d)
{
    if (d < 0)
        return true;
    if (v->type.dim[d] == 1 && ir_sharding_split(&v->sh, &L->m->mesh, d) == 1)
        return true;
    return L->uniform[v->id] >> d & 1;
}

/* Reshape: a dimension of the result that is a whole dimension of the
 * operand (the same size after the same number of elements) keeps its
 * bit; all of them when the operand is the same everywhere. */
static uint8_t reshape_uniform(const pl *L, const ir_value *x, const ir_value *r)
{
    bool all = true;
    for (int d = 0; d < x->type.rank; d++)
        all = all && same_along(L, x, d);
    uint8_t u = 0;
    int64_t pr = 1;
    for (int k = 0; k < r->type.rank; k++) {
        int64_t px = 1;
        for (int d = 0; d < x->type.rank; d++) {
            if (px == pr && x->type.dim[d] == r->type.dim[k] && same_along(L, x, d))
                u |= (uint8_t)(1u << k);
            px *= x->type.dim[d];
        }
        if (all)
            u |= (uint8_t)(1u << k);
        pr *= r->type.dim[k];
    }
    return u;
}

/* matmul: along the rows where the left operand is, the columns where the
 * right one is, a batch dimension where both are. */
static uint8_t matmul_uniform(const pl *L, const ir_value *x, const ir_value *y, int R)
{
    int rx = x->type.rank, ry = y->type.rank, nb = R - (rx > 1) - (ry > 1);
    uint8_t u = 0;
    for (int d = 0; d < nb; d++)
        if (same_along(L, x, d - (nb - (rx - 2))) && same_along(L, y, d - (nb - (ry - 2))))
            u |= (uint8_t)(1u << d);
    if (rx > 1 && same_along(L, x, rx - 2))
        u |= (uint8_t)(1u << nb);
    if (ry > 1 && same_along(L, y, ry - 1))
        u |= (uint8_t)(1u << (R - 1));
    return u;
}

/* The dimensions along which per-step op's result is the same everywhere
 * (pl.uniform): where it broadcasts, and where its operands are. */
static uint8_t uniform_dims(const pl *L, const ir_op *op)
{
    const ir_value *r = op->res[0], *x = op->nin ? op->in[0] : NULL;
    int R = r->type.rank;
    uint8_t u = 0;
    switch (op->code) {
    case IR_DROPOUT: /* its bits differ from element to element */
        return 0;
    case IR_RESHAPE:
        return reshape_uniform(L, x, r);
    case IR_TRANSPOSE:
        for (int k = 0; k < op->a->nlist; k++)
            if (same_along(L, x, (int)op->a->list[k]))
                u |= (uint8_t)(1u << k);
        return u;
    case IR_SUM:
    case IR_MEAN:
    case IR_AMAX:
        for (int d = 0, k = 0; d < x->type.rank; d++) {
            if (d == op->a->axis && !op->a->keepdims)
                continue;
            if (d == op->a->axis || same_along(L, x, d))
                u |= (uint8_t)(1u << k);
            k++;
        }
        return u;
    case IR_MATMUL:
        return matmul_uniform(L, x, op->in[1], R);
    case IR_NARROW: /* rows of the same values */
    case IR_CONCAT: /* the same where every operand is, but along its axis */
        for (int d = 0; d < R; d++) {
            bool same = op->code == IR_NARROW || d != op->a->dim;
            for (int k = 0; k < op->nin && same; k++)
                same = same_along(L, op->in[k], d);
            if (same)
                u |= (uint8_t)(1u << d);
        }
        return u;
    case IR_CONSTRAIN:
    case IR_SLICE:
    case IR_ALL_REDUCE:
    case IR_REDUCE_SCATTER:
    case IR_ALL_GATHER:
    case IR_ALL_TO_ALL:
    case IR_BROADCAST: /* pieces and sums of one value: see same_along */
        return L->uniform[x->id];
    case IR_EXPAND:
        break;
    default: /* and softmax, layernorm, rmsnorm: the same where their operands are */
        if (ir_ops[op->code].cls != IR_C_UNARY && ir_ops[op->code].cls != IR_C_BINARY &&
            ir_ops[op->code].cls != IR_C_NORM)
            return 0;
    }
    for (int d = 0; d < R; d++) {
        bool same = true;
        for (int k = 0; k < op->nin && same; k++)
            same = same_along(L, op->in[k], d - (R - op->in[k]->type.rank));
        if (same)
            u |= (uint8_t)(1u << d);
    }
    return u;
}

/* The backward op, among those that make per-step value x, that reads a
 * per-step value of the forward pass (a loss not linear in a sum or mean
 * over the batch: its gradient depends on that sum), or NULL. */
static const ir_op *nonlinear_op(const pl *L, const ir_value *x, const ir_value **fwd, int depth)
{
    const ir_op *op = x->def;
    if (op->phase == IR_PH_FORWARD || depth > 64)
        return NULL;
    for (int k = 0; k < op->nin; k++) {
        const ir_value *y = op->in[k];
        if (L->kind[y->id] != K_ACC && L->kind[y->id] != K_POST)
            continue;
        if (y->def->phase == IR_PH_FORWARD) {
            *fwd = y;
            return op;
        }
        const ir_op *r = nonlinear_op(L, y, fwd, depth + 1);
        if (r)
            return r;
    }
    return NULL;
}

/* Per-microbatch op reads per-step value x, made from whole, a reduction
 * over the batch: an error, at the op whose gradient brings x in when
 * that is what happened. */
static bool whole_batch(pl *L, const ir_op *op, const ir_value *x, const ir_op *whole)
{
    const ir_value *fwd = NULL;
    const ir_op *at = nonlinear_op(L, x, &fwd, 0);
    if (at) {
        whole = L->origin[fwd->id];
        return fail(L, at, "it depends on the result of %s (line %d), which "
                    "needs the whole batch; pipelined training needs a loss that is a sum or "
                    "mean over the batch of per-row terms (scaled, or added to other such "
                    "terms)", ir_op_display(whole->code), whole->loc.line);
    }
    return fail(L, op, "it uses the result of %s (line %d), which needs the whole batch, "
                "together with per-microbatch values; pipelining needs the batch rows "
                "computed independently", ir_op_display(whole->code), whole->loc.line);
}

static bool classify_op(pl *L, const ir_op *op)
{
    const ir_value *r = op->res[0];
    int id = r->id;
    if (op->code == IR_INPUT) {
        L->kind[id] = K_MB;
        L->bd[id] = 0;
        L->floating[id] = true;
        return true;
    }
    if (ir_ops[op->code].cls == IR_C_SOURCE) {
        L->kind[id] = K_PRE;
        return true;
    }
    bool mb = false, step = false, floating = op->rep < 0;
    int post_stage = -1;
    int64_t staged = -1; /* the elements of the operand that placed it */
    const ir_op *whole = NULL;
    const ir_value *stepv = NULL;
    for (int k = 0; k < op->nin; k++) {
        int x = op->in[k]->id;
        if (L->kind[x] == K_MB) {
            mb = true;
            floating = floating && L->floating[x];
        } else if (L->kind[x] == K_ACC || L->kind[x] == K_POST) {
            /* per-step values of several stages (a tied param's gradients,
             * clip's norm and factor): the op runs where the largest is,
             * the later stage on a tie; the others are sent there
             * (pipesplit.c's run_post) */
            step = true;
            int64_t n = ir_type_numel(&op->in[k]->type);
            if (L->stage[x] >= 0 && (n > staged || (n == staged && L->stage[x] > post_stage))) {
                post_stage = L->stage[x];
                staged = n;
            }
            whole = L->origin[x];
            stepv = op->in[k];
        }
    }
    if (mb && step)
        return whole_batch(L, op, stepv, whole);
    if (step) {
        L->kind[id] = K_POST;
        L->stage[id] = post_stage;
        L->origin[id] = whole;
        return true;
    }
    if (!mb) {
        L->kind[id] = K_PRE;
        L->uniform[id] = uniform_dims(L, op);
        return true;
    }
    if (ir_ops[op->code].cls == IR_C_OPTIM || op->code == IR_INSERT || op->code == IR_EXTRACT)
        return fail(L, op, "it is not supported on per-microbatch values");
    int mode = ACC_SUM, d = batch_rule(L, op, &mode);
    if (d < -1)
        return false;
    if (d == -1) {
        L->kind[id] = K_ACC;
        L->origin[id] = op;
        L->acc[id] = (uint8_t)mode;
        L->floating[id] = floating;
        L->chunk[id] = op_chunk(L, op);
        L->stage[id] = floating ? -1 : pass_pl_stage_of(L, L->chunk[id]);
    } else {
        if (r->type.dim[d] % L->M)
            return fail(L, op, "its batch dimension %d (%lld) does not split into %d "
                        "microbatches", d, (long long)r->type.dim[d], L->M);
        L->kind[id] = K_MB;
        L->bd[id] = (int8_t)d;
        L->floating[id] = floating;
        if (!floating)
            L->chunk[id] = op_chunk(L, op);
    }
    if (floating && L->kind[id] == K_MB)
        return true;
    for (int k = 0; k < op->nin; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] != K_MB || L->floating[x->id])
            continue;
        if (!check_edge(L, op, x))
            return false;
        int s = pass_pl_stage_of(L, L->chunk[id]);
        if (s != pass_pl_stage_of(L, L->chunk[x->id]))
            L->to[x->id] |= 1ull << s;
    }
    return true;
}

/* A value the user split over the pipeline axis (its stages hold
 * different layers, not parts of one value): an error at the annotation. */
static bool split_over_pipe(pl *L, const ir_op *op)
{
    const ir_value *r = op->res[0];
    int ax = L->m->pipe.axis;
    if (r->sh.kind != IR_SH_FIXED)
        return false;
    for (int d = 0; d < r->type.rank; d++)
        for (int k = 0; k < r->sh.naxes[d]; k++)
            if (r->sh.axes[d][k] == ax) {
                const char *name = op->code == IR_INPUT || op->code == IR_PARAM ? op->a->name
                                                                                : r->name;
                pass_pl_fail_at(L, op->loc, "%s%s%s is split over %s, the pipeline axis, whose stages "
                                "hold different repetitions; split it over the other axes only",
                                name ? "'" : "", name ? name : "this value", name ? "'" : "",
                                L->m->mesh.name[ax]);
                return true;
            }
    return false;
}

bool pass_pl_classify(pl *L)
{
    for (int i = 0; i < L->m->ops.n; i++)
        if (split_over_pipe(L, IR_OP(L->m, i)))
            return false;
    for (int i = 0; i < L->m->ops.n; i++) {
        const ir_op *op = IR_OP(L->m, i);
        if (op->nres != 1)
            return fail(L, op, "it has several results");
        if (ir_ops[op->code].cls == IR_C_P2P)
            return pass_pl_fail_at(L, (su_loc){0, 0}, "the module is split into stages already");
        if (ir_ops[op->code].cls == IR_C_COMM) {
            for (int k = 0; k < op->a->naxes; k++)
                if (op->a->axes[k] == L->m->pipe.axis)
                    return fail(L, op, "it runs over the pipeline axis %s",
                                L->m->mesh.name[L->m->pipe.axis]);
        }
        if (!classify_op(L, op))
            return false;
    }
    return true;
}

/* The number of blocks dimension 0 of a batch value is split into. */
int64_t pass_pl_blocks_of(const pl *L, const ir_value *v)
{
    return ir_sharding_split(&v->sh, &L->m->mesh, 0);
}

/* Each batch value of n blocks holds N / n blocks of M microbatches; the
 * error at the input's declaration or the output statement. */
static bool splits(pl *L, const ir_value *v, su_loc at, const char *what, const char *name)
{
    if (v->type.rank == 0)
        return pass_pl_fail_at(L, at, "%s '%s' is a scalar: it has no batch to split into microbatches",
                               what, name);
    int64_t n = pass_pl_blocks_of(L, v), rows = v->type.dim[0];
    if (rows % (L->N / n * L->M) == 0)
        return true;
    if (L->N == n)
        return pass_pl_fail_at(L, at, "%s '%s': its local batch of %lld rows does not split into %d "
                               "microbatches", what, name, (long long)rows, L->M);
    return pass_pl_fail_at(L, at, "%s '%s': its batch of %lld rows does not split into %lld blocks "
                           "(as the inputs, the outputs and the per-step values microbatches "
                           "read row by row are split) of %d microbatches each", what, name,
                           (long long)(rows * n), (long long)L->N, L->M);
}

static void add_blocks(pl *L, const ir_value *v)
{
    int64_t n = pass_pl_blocks_of(L, v);
    L->N = lcm64(L->N, n);
}

/* N (see the top of the file): the least common multiple of the blocks of
 * the inputs and, once classified (with_outputs), of the outputs that hold
 * the batch. Checks that every one of them splits. */
bool pass_pl_batch_blocks(pl *L, bool with_outputs)
{
    const ir_module *m = L->m;
    L->N = L->need ? L->need : 1;
    for (int i = 0; i < m->ops.n; i++)
        if (IR_OP(m, i)->code == IR_INPUT)
            add_blocks(L, IR_OP(m, i)->res[0]);
    for (int i = 0; with_outputs && i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        if (L->kind[o->v->id] != K_MB)
            continue;
        if (L->bd[o->v->id] != 0)
            return pass_pl_fail_at(L, o->loc, "output '%s' holds the batch in its dimension %d; "
                        "only an output with the batch in dimension 0 can be pipelined yet",
                        o->name, L->bd[o->v->id]);
        add_blocks(L, o->v);
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code == IR_INPUT && !splits(L, op->res[0], op->loc, "input", op->a->name))
            return false;
    }
    for (int i = 0; with_outputs && i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        if (L->kind[o->v->id] == K_MB && !splits(L, o->v, o->loc, "output", o->name))
            return false;
    }
    return true;
}

/* ---- schedules ---- */

static void add_task(su_vec *v, jmp_buf *oom, su_arena *a, bool fwd, int chunk, int mb)
{
    pass_task *t = su_alloc(a, sizeof *t);
    *t = (pass_task){.forward = fwd, .chunk = chunk, .mb = mb};
    su_vec_push(v, oom, t);
}

/* Stage s's tasks. gpipe: every forward, then every backward. 1f1b: P-s-1
 * forwards to fill the pipe, then one forward and one backward in turn,
 * then the remaining backwards. interleaved(V) (Megatron-LM's schedule):
 * the same over V chunks per stage, the k-th forward (backward) of a stage
 * working on its chunk (k / P) % V (V-1 minus that) and microbatch
 * (k / (P V)) P + k % P. Forward-only programs run their forwards in order. */
static void virtual_task(const pl *L, int s, int k, bool fwd, su_vec *out, jmp_buf *oom,
                         su_arena *a)
{
    int P = L->P, V = L->V;
    if (V == 1) {
        add_task(out, oom, a, fwd, s, k);
        return;
    }
    int v = (k / P) % V, j = (k / (P * V)) * P + k % P;
    add_task(out, oom, a, fwd, (fwd ? v : V - 1 - v) * P + s, j);
}

void pass_pl_schedule(const pl *L, int s, bool train, su_vec *out, jmp_buf *oom, su_arena *a)
{
    int P = L->P, M = L->M, V = L->V, N = M * V;
    if (!train || L->m->pipe.schedule == IR_SCHED_GPIPE) {
        for (int v = 0; v < V; v++)
            for (int j = 0; j < M; j++)
                add_task(out, oom, a, true, v * P + s, j);
        for (int v = V - 1; train && v >= 0; v--)
            for (int j = 0; j < M; j++)
                add_task(out, oom, a, false, v * P + s, j);
        return;
    }
    int warm = V == 1 ? P - s - 1 : (P - s - 1) * 2 + (V - 1) * P;
    if (warm > N)
        warm = N;
    int f = 0, b = 0;
    while (f < warm)
        virtual_task(L, s, f++, true, out, oom, a);
    while (f < N) {
        virtual_task(L, s, f++, true, out, oom, a);
        virtual_task(L, s, b++, false, out, oom, a);
    }
    while (b < N)
        virtual_task(L, s, b++, false, out, oom, a);
}

/* The schedule's bubble: every stage runs its tasks in order, a forward of
 * chunk c after the same microbatch's forward of c-1, a backward after the
 * next chunk's backward (the last chunk's after its forward). With equal
 * times per chunk (forward 1/V, backward 2/V), the time the slowest stage
 * idles over the ideal time M (1 + 2) of each stage. */
double pass_pl_bubble(pl *L, pass_pipeline *pp, bool train)
{
    int P = L->P, C = L->C, M = L->M;
    double tf = 1.0 / L->V, tb = train ? 2.0 / L->V : 0;
    su_arena *a = &L->ar; /* zeroed, freed with the pass's scratch */
    double *fdone = su_alloc(a, (size_t)C * M * sizeof *fdone);
    double *bdone = su_alloc(a, (size_t)C * M * sizeof *bdone);
    int *next = su_alloc(a, (size_t)P * sizeof *next);
    double *clock = su_alloc(a, (size_t)P * sizeof *clock);
    bool *fd = su_alloc(a, (size_t)C * M), *bdn = su_alloc(a, (size_t)C * M);
    double end = 0;
    for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; s++) {
            while (next[s] < pp->ntasks[s]) {
                const pass_task *t = pp->task[s][next[s]];
                int k = t->chunk * M + t->mb;
                double ready;
                if (t->forward) {
                    if (t->chunk > 0 && !fd[k - M])
                        break;
                    ready = t->chunk > 0 ? fdone[k - M] : 0;
                } else {
                    bool after = t->chunk == C - 1 ? fd[k] : bdn[k + M];
                    if (!after)
                        break;
                    ready = t->chunk == C - 1 ? fdone[k] : bdone[k + M];
                }
                double start = ready > clock[s] ? ready : clock[s];
                clock[s] = start + (t->forward ? tf : tb);
                if (t->forward) {
                    fdone[k] = clock[s];
                    fd[k] = true;
                } else {
                    bdone[k] = clock[s];
                    bdn[k] = true;
                }
                if (clock[s] > end)
                    end = clock[s];
                next[s]++;
                progress = true;
            }
        }
    }
    double ideal = M * (tf + tb) * L->V;
    return (end - ideal) / ideal;
}
