/* pipesplit.c: the pipeline split (DESIGN.md §3.5, LANGUAGE.md §9).
 *
 * From the partitioned module, which every rank of every stage would run
 * whole, makes one program per stage of the pipeline axis: the chunks of the
 * pipelined repeat it owns, for each microbatch, in the order its schedule
 * gives, with send and recv where a value crosses stages.
 *
 * Each value of the partitioned module gets a kind:
 *   PRE   per step, made before any microbatch: params, states, constants
 *         and whatever is made from them alone (computed once per stage, at
 *         first use);
 *   MB    per microbatch: what depends on the inputs row by row. Its local
 *         type has dimension `bd` (where the batch rows are, the major part
 *         of that dimension) divided by the microbatch count;
 *   ACC   the result of an op that reduces over the batch (a gradient's
 *         matmul or sum over batch rows, embedding_grad, a loss): computed
 *         per microbatch and accumulated (sum, mean of the microbatches'
 *         means, max);
 *   POST  per step, made from accumulated values: gradient synchronisation,
 *         the optimizer, the loss's all_reduce.
 * The split is exact because every batch-reducing op's full-batch result is
 * the sum (mean, max) of its microbatch results, and every backward
 * constant carries the full batch's row count. A per-microbatch op that
 * reads an accumulated value (batch statistics) cannot be pipelined and is
 * an error. A per-step value may span the batch only along a dimension
 * where all its elements are equal (the gradient of a sum or mean over the
 * batch, a per-step scalar expanded over the rows): each microbatch reads
 * a slice of it. So a loss that is a sum or mean over the rows of per-row
 * terms, then scaled or summed with others, is the sum or mean of its
 * microbatches' losses, and so are its gradients.
 *
 * Microbatch j is one set of global batch rows, the same for every input
 * whatever its sharding: with N the least common multiple of the number of
 * blocks the inputs' (and outputs') dimension 0 is split into, the batch
 * of B rows is N blocks of M microbatches of B / (N M) rows, and
 * microbatch j is the j-th part of every block. An input split into n
 * blocks holds N / n of them; its microbatch j is the j-th part of each
 * (columns of a bucket [N / n, local numel]). So on every rank each
 * microbatch value is the local shard, under its sharding, of what the
 * partitioned program computes on a batch of those rows, and the
 * partitioner's collectives and slices, which work on any batch size,
 * pair the right rows.
 *
 * MB and ACC ops belong to a chunk: a repetition's chunk is rep / (L / C)
 * for C = stages x chunks per stage; others take the latest chunk of their
 * operands. Ops made only from inputs and per-step values float: each stage
 * computes them itself when it first needs them (a batch reduction of
 * them, and what is made from it, every microbatch at once). An output
 * that floats is read where it was made, else on a stage holding a param
 * it reads (every copy of a param gets this step's value, below); an
 * output of a param is read where it is updated. Chunk c runs on stage
 * c % P; its forward ops run in the tasks F(c, j), its backward ops in
 * B(c, j). A value one stage makes and another reads is sent at the end of
 * the producing task and received at the start of the consuming one.
 *
 * A param with an update lives on the stage that makes its gradient (and
 * updates it there). Another stage may read it too, for a per-step value
 * (the gradient through a later layer, made from its params alone, where
 * the loss's gradient is the same in every row) or for the forward op of
 * a value whose gradient reaches the param on a later stage, or of a
 * value made before the pipelined repeat and read after it: that stage
 * receives its value before anything else runs. A param that two
 * forward ops on two stages read is shared by stages: an error.
 */
#include "passes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_PRE, K_MB, K_ACC, K_POST };
enum { MAX_IN = 8 };            /* operands of an op, at most */
enum { ACC_SUM, ACC_MEAN, ACC_MAX };

typedef struct pl {
    const ir_module *m;
    su_buf *err;
    int P, M, V, C, L;          /* stages, microbatches, chunks per stage, chunks, repeats */
    int64_t N;                  /* blocks of the batch (see above) */
    int nv;
    uint8_t *kind;              /* per value id */
    int8_t *bd;                 /* MB: the batch dimension */
    uint8_t *uniform;           /* PRE: bit d: the elements are equal along dimension d */
    int8_t *cut;                /* [nv * MAX_IN], by result id: MB and ACC ops, the
                                 * dimension of per-step operand k that spans the batch
                                 * (read as a microbatch slice), or -1 */
    bool *floating;             /* MB: made from inputs and per-step values only; ACC: a
                                 * batch reduction of such values */
    int *chunk;                 /* MB (not floating) and ACC: the chunk */
    uint8_t *acc;               /* ACC: ACC_* */
    int *stage;                 /* ACC, POST: the stage; -1: any (made from floating values) */
    uint64_t *to;               /* MB (not floating): stages other than its own that read it */
    const ir_op **origin;       /* ACC, POST: the batch reduction it comes from */
    int *home;                  /* a param with an update: the stage it lives on (-1: none yet) */
    su_loc *at;                 /* where the first error is (line 0: nowhere) */
    bool failed;                /* an error is recorded (only the first is kept) */
    su_arena ar;
} pl;

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
static bool fail_at(pl *L, su_loc at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail_at(pl *L, su_loc at, const char *fmt, ...)
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

static int stage_of(const pl *L, int chunk)
{
    return chunk % L->P;
}

/* ---- kinds and batch dimensions ---- */

/* Where operand x's dimension d lands in a result of rank R under NumPy
 * broadcasting (right-aligned). */
static int aligned(const ir_value *x, int d, int R)
{
    return d + (R - x->type.rank);
}

/* Per-step operand k of op, whose dimension xd (if any) lines up with the
 * batch: where it spans the batch, it must be equal along it, and each
 * microbatch reads a slice of it. */
static bool per_step_fits(pl *L, const ir_op *op, int k, int xd)
{
    const ir_value *x = op->in[k];
    if (xd < 0 || xd >= x->type.rank || x->type.dim[xd] == 1)
        return true;
    if (L->uniform[x->id] >> xd & 1) {
        L->cut[(size_t)op->res[0]->id * MAX_IN + k] = (int8_t)xd;
        return true;
    }
    return fail(L, op, "a per-step value of %lld rows meets the per-microbatch batch "
                "dimension; pipelining needs per-step values that broadcast over it, or are "
                "the same in every row", (long long)x->type.dim[xd]);
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
    case IR_ATTENTION:
    case IR_ATTN_PROBS: {
        int n = op->code == IR_ATTENTION ? 3 : 2; /* then the query positions, per step */
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
        if (op->a.axis == d) {
            *mode = op->code == IR_SUM ? ACC_SUM : op->code == IR_MEAN ? ACC_MEAN : ACC_MAX;
            return -1;
        }
        return d - (op->a.axis < d && !op->a.keepdims);
    case IR_SOFTMAX:
    case IR_LAYERNORM:
    case IR_RMSNORM: {
        int axis = op->code == IR_SOFTMAX ? (int)op->a.axis : x->type.rank - 1;
        if (d < 0 || d == axis)
            return fail(L, op, "it normalises over the batch dimension"), -2;
        return rule_elementwise(L, op) < -1 ? -2 : d;
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
        for (int k = 0; k < op->a.nlist; k++)
            if (op->a.list[k] == d)
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

/* The chunk of an MB or ACC op that does not float. */
static int op_chunk(pl *L, const ir_op *op)
{
    if (op->rep >= 0)
        return op->rep / (L->L / L->C);
    int c = 0;
    for (int k = 0; k < op->nin; k++) {
        const ir_value *x = op->in[k];
        if (L->kind[x->id] == K_MB && !L->floating[x->id] && L->chunk[x->id] > c)
            c = L->chunk[x->id];
    }
    return c;
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
    if (fa && !fb && (stage_of(L, a) == stage_of(L, b) || (L->to[x->id] >> stage_of(L, b) & 1)))
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
    case IR_RESHAPE:
        return reshape_uniform(L, x, r);
    case IR_TRANSPOSE:
        for (int k = 0; k < op->a.nlist; k++)
            if (same_along(L, x, (int)op->a.list[k]))
                u |= (uint8_t)(1u << k);
        return u;
    case IR_SUM:
    case IR_MEAN:
    case IR_AMAX:
        for (int d = 0, k = 0; d < x->type.rank; d++) {
            if (d == op->a.axis && !op->a.keepdims)
                continue;
            if (d == op->a.axis || same_along(L, x, d))
                u |= (uint8_t)(1u << k);
            k++;
        }
        return u;
    case IR_MATMUL:
        return matmul_uniform(L, x, op->in[1], R);
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

/* Whether backward value from is made from value to (seen: a stamp per
 * value id, stack: room for every id). */
static bool made_from(const ir_value *from, const ir_value *to, int *seen, int stamp,
                      const ir_value **stack)
{
    int n = 0;
    stack[n++] = from;
    seen[from->id] = stamp;
    while (n) {
        const ir_value *v = stack[--n];
        if (v == to)
            return true;
        if (v->def->phase == IR_PH_FORWARD)
            continue;
        for (int k = 0; k < v->def->nin; k++) {
            const ir_value *x = v->def->in[k];
            if (seen[x->id] != stamp) {
                seen[x->id] = stamp;
                stack[n++] = x;
            }
        }
    }
    return false;
}

/* op combines per-step values a and b of two stages: an error, at the
 * param whose gradient it makes when it does (a param used on both). */
static bool two_stages(pl *L, const ir_op *op, const ir_value *a, const ir_value *b)
{
    int sa = L->stage[a->id], sb = L->stage[b->id];
    int la = L->origin[a->id]->loc.line, lb = L->origin[b->id]->loc.line;
    int *seen = su_alloc(&L->ar, (size_t)L->nv * sizeof *seen);
    const ir_value **stack = su_alloc(&L->ar, (size_t)L->nv * sizeof *stack);
    memset(seen, 0, (size_t)L->nv * sizeof *seen);
    for (int i = 0; i < L->m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(L->m, i);
        if (u->grad && made_from(u->grad, op->res[0], seen, i + 1, stack))
            return fail_at(L, u->src->def->loc, "param '%s' is used on pipeline stages %d "
                           "(line %d) and %d (line %d); a param shared by stages is not "
                           "supported yet", u->src->def->a.name, sa < sb ? sa : sb,
                           sa < sb ? la : lb, sa < sb ? sb : sa, sa < sb ? lb : la);
    }
    return fail(L, op, "it combines per-step values made on pipeline stages %d (line %d) and %d "
                "(line %d); a value shared by stages is not supported yet", sa, la, sb, lb);
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
    const ir_op *whole = NULL;
    const ir_value *stepv = NULL, *staged = NULL;
    for (int k = 0; k < op->nin; k++) {
        int x = op->in[k]->id;
        if (L->kind[x] == K_MB) {
            mb = true;
            floating = floating && L->floating[x];
        } else if (L->kind[x] == K_ACC || L->kind[x] == K_POST) {
            if (post_stage >= 0 && L->stage[x] >= 0 && L->stage[x] != post_stage)
                return two_stages(L, op, staged, op->in[k]);
            step = true;
            if (L->stage[x] >= 0) {
                post_stage = L->stage[x];
                staged = op->in[k];
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
        L->stage[id] = floating ? -1 : stage_of(L, L->chunk[id]);
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
        int s = stage_of(L, L->chunk[id]);
        if (s != stage_of(L, L->chunk[x->id]))
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
                const char *name = op->code == IR_INPUT || op->code == IR_PARAM ? op->a.name
                                                                                : r->name;
                fail_at(L, op->loc, "%s%s%s is split over %s, the pipeline axis, whose stages "
                        "hold different repetitions; split it over the other axes only",
                        name ? "'" : "", name ? name : "this value", name ? "'" : "",
                        L->m->mesh.name[ax]);
                return true;
            }
    return false;
}

static bool classify(pl *L)
{
    for (int i = 0; i < L->m->ops.n; i++)
        if (split_over_pipe(L, IR_OP(L->m, i)))
            return false;
    for (int i = 0; i < L->m->ops.n; i++) {
        const ir_op *op = IR_OP(L->m, i);
        if (op->nres != 1)
            return fail(L, op, "it has several results");
        if (ir_ops[op->code].cls == IR_C_P2P)
            return fail_at(L, (su_loc){0, 0}, "the module is split into stages already");
        if (ir_ops[op->code].cls == IR_C_COMM) {
            for (int k = 0; k < op->a.naxes; k++)
                if (op->a.axes[k] == L->m->pipe.axis)
                    return fail(L, op, "it runs over the pipeline axis %s",
                                L->m->mesh.name[L->m->pipe.axis]);
        }
        if (!classify_op(L, op))
            return false;
    }
    return true;
}

/* The number of blocks dimension 0 of a batch value is split into. */
static int64_t blocks_of(const pl *L, const ir_value *v)
{
    return ir_sharding_split(&v->sh, &L->m->mesh, 0);
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

/* Each batch value of n blocks holds N / n blocks of M microbatches; the
 * error at the input's declaration or the output statement. */
static bool splits(pl *L, const ir_value *v, su_loc at, const char *what, const char *name)
{
    if (v->type.rank == 0)
        return fail_at(L, at, "%s '%s' is a scalar: it has no batch to split into microbatches",
                       what, name);
    int64_t n = blocks_of(L, v), rows = v->type.dim[0];
    if (rows % (L->N / n * L->M) == 0)
        return true;
    if (L->N == n)
        return fail_at(L, at, "%s '%s': its local batch of %lld rows does not split into %d "
                       "microbatches", what, name, (long long)rows, L->M);
    return fail_at(L, at, "%s '%s': its batch of %lld rows does not split into %lld blocks "
                   "(as the inputs and outputs are split) of %d microbatches each", what, name,
                   (long long)(rows * n), (long long)L->N, L->M);
}

static void add_blocks(pl *L, const ir_value *v)
{
    int64_t n = blocks_of(L, v);
    L->N = L->N / gcd64(L->N, n) * n;
}

/* N (see the top of the file): the least common multiple of the blocks of
 * the inputs and, once classified (with_outputs), of the outputs that hold
 * the batch. Checks that every one of them splits. */
static bool batch_blocks(pl *L, bool with_outputs)
{
    const ir_module *m = L->m;
    L->N = 1;
    for (int i = 0; i < m->ops.n; i++)
        if (IR_OP(m, i)->code == IR_INPUT)
            add_blocks(L, IR_OP(m, i)->res[0]);
    for (int i = 0; with_outputs && i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        if (L->kind[o->v->id] != K_MB)
            continue;
        if (L->bd[o->v->id] != 0)
            return fail_at(L, o->loc, "output '%s' holds the batch in its dimension %d; "
                        "only an output with the batch in dimension 0 can be pipelined yet",
                        o->name, L->bd[o->v->id]);
        add_blocks(L, o->v);
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code == IR_INPUT && !splits(L, op->res[0], op->loc, "input", op->a.name))
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

static void schedule(const pl *L, int s, bool train, su_vec *out, jmp_buf *oom, su_arena *a)
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
static double bubble(pl *L, pass_pipeline *pp, bool train)
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

/* ---- building one stage's program ---- */

typedef struct st {
    pl *L;
    ir_module *dst;
    int s;
    ir_value **pre;     /* [nv]: per-step values made on this stage */
    ir_value **full;    /* [nv]: inputs read whole */
    ir_value **mb;      /* [nv * M]: microbatch values here (made or received) */
    ir_value **step;    /* [nv]: ACC (running, then final) and POST values */
    ir_value **slice;   /* [nv]: per-step values as microbatches read them (cut) */
    int *nacc;          /* [nv]: contributions accumulated */
    const ir_op **fwd;  /* [nv]: params a forward op here reads (directly or through
                         * per-step values): the first op that reads it; other
                         * per-step values: non-NULL once walked */
    const ir_op *reader; /* the op, not per-step, whose operands are being made
                         * (NULL: an output's or an update's) */
    uint8_t ctx;        /* its phase */
    bool output;        /* making an output no task made: no gradient flows back
                         * through its ops, so their reads are not forward reads */
    su_vec bounds;      /* op index ranges [start, end) of sends and recvs between tasks
                         * (intptr_t pairs) */
    bool failed;
} st;

static ir_type mb_type(const pl *L, const ir_value *v)
{
    ir_type t = v->type;
    t.dim[L->bd[v->id]] /= L->M;
    return t;
}

static ir_value *append(st *S, const ir_op *like, ir_opcode code, ir_value **in, int nin,
                        const ir_attrs *a, const ir_type *t, const ir_sharding *sh)
{
    ir_op *d = ir_append(S->dst, code, in, nin, a, t);
    if (like) {
        d->rep = like->rep;
        d->phase = like->phase;
        d->loc = like->loc;
    }
    if (!d->nres)
        return NULL;
    if (sh)
        d->res[0]->sh = *sh;
    else
        d->res[0]->sh.kind = IR_SH_AUTO;
    if (like)
        d->res[0]->name = like->res[0]->name;
    return d->res[0];
}

static ir_value *copy_op(st *S, const ir_op *op, ir_value **in, const ir_type *t)
{
    ir_attrs a = op->a;
    if (ir_ops[op->code].attrs & IR_A_SHAPE) {
        a.nlist = t->rank;
        memcpy(a.list, t->dim, sizeof a.list);
    }
    return append(S, op, op->code, in, op->nin, &a, t, &op->res[0]->sh);
}

static ir_value *get(st *S, const ir_value *v, int j);
static bool make_step(st *S, const ir_value *v);

static bool operands(st *S, const ir_op *op, int j, ir_value **in)
{
    uint8_t ctx = S->ctx;
    const ir_op *reader = S->reader;
    if (S->L->kind[op->res[0]->id] != K_PRE) {
        S->ctx = op->phase;
        S->reader = op;
    }
    for (int k = 0; k < op->nin; k++)
        if (!(in[k] = get(S, op->in[k], j)))
            return false;
    S->ctx = ctx;
    S->reader = reader;
    return true;
}

/* Microbatch j of an input: the input read whole, viewed as a bucket of
 * one row per block it holds (N / its blocks), the j-th part of every row
 * (the batch is dimension 0, its major part). */
static ir_value *input_mb(st *S, const ir_op *op, int j)
{
    pl *L = S->L;
    int id = op->res[0]->id;
    if (!S->full[id])
        S->full[id] = copy_op(S, op, NULL, &op->res[0]->type);
    ir_value *x = S->full[id];
    int64_t n = ir_type_numel(&x->type), k = L->N / blocks_of(L, op->res[0]);
    ir_type rows = {.dtype = x->type.dtype, .rank = 2, .dim = {k, n / k}};
    ir_attrs ra = {.nlist = 2, .list = {k, n / k}};
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_value *flat = append(S, op, IR_RESHAPE, &x, 1, &ra, &rows, &rep);
    ir_type t = mb_type(L, op->res[0]);
    ir_attrs ea = {.offset = j * (n / k / L->M), .nlist = t.rank};
    memcpy(ea.list, t.dim, sizeof ea.list);
    ir_value *r = append(S, op, IR_EXTRACT, &flat, 1, &ea, &t, &op->res[0]->sh);
    r->name = op->res[0]->name;
    return r;
}

/* A microbatch's slice of per-step value v along dimension d, where v is
 * the same everywhere (per_step_fits): its first M-th, the columns of a
 * bucket of one row per index of the dimensions before d. */
static ir_value *slice_of(st *S, const ir_value *v, int d)
{
    pl *L = S->L;
    ir_value *x = get(S, v, 0);
    if (!x || L->M == 1)
        return x;
    ir_value **slot = &S->slice[v->id];
    if (*slot && (*slot)->type.dim[d] * L->M == v->type.dim[d])
        return *slot;
    int64_t rows = 1, n = ir_type_numel(&v->type);
    for (int k = 0; k < d; k++)
        rows *= v->type.dim[k];
    ir_type b = {.dtype = v->type.dtype, .rank = 2, .dim = {rows, n / rows}};
    ir_attrs ra = {.nlist = 2, .list = {rows, n / rows}};
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_value *flat = append(S, v->def, IR_RESHAPE, &x, 1, &ra, &b, &rep);
    ir_type t = v->type;
    t.dim[d] /= L->M;
    ir_attrs ea = {.offset = 0, .nlist = t.rank};
    memcpy(ea.list, t.dim, sizeof ea.list);
    *slot = append(S, v->def, IR_EXTRACT, &flat, 1, &ea, &t, &v->sh);
    return *slot;
}

/* The operands of a per-microbatch or accumulated op, per-step values that
 * span the batch as slices. */
static bool mb_operands(st *S, const ir_op *op, int j, ir_value **in)
{
    if (!operands(S, op, j, in))
        return false;
    for (int k = 0; k < op->nin; k++) {
        int d = S->L->cut[(size_t)op->res[0]->id * MAX_IN + k];
        if (d >= 0 && !(in[k] = slice_of(S, op->in[k], d)))
            return false;
    }
    return true;
}

static ir_value *emit_mb(st *S, const ir_op *op, int j)
{
    if (op->code == IR_INPUT)
        return input_mb(S, op, j);
    ir_value *in[MAX_IN];
    if (!mb_operands(S, op, j, in))
        return NULL;
    ir_type t = mb_type(S->L, op->res[0]);
    return copy_op(S, op, in, &t);
}

/* Op, a forward op (NULL: an output), reads per-step value v: so it or
 * the ops that make v read params (st.fwd). */
static void read_forward(st *S, const ir_value *v, const ir_op *op)
{
    if (S->fwd[v->id] || S->output)
        return;
    S->fwd[v->id] = op ? op : v->def;
    for (int k = 0; k < v->def->nin; k++)
        if (S->L->kind[v->def->in[k]->id] == K_PRE)
            read_forward(S, v->def->in[k], v->def);
}

static ir_value *get(st *S, const ir_value *v, int j)
{
    pl *L = S->L;
    int id = v->id;
    switch (L->kind[id]) {
    case K_PRE:
        if (!S->pre[id]) {
            ir_value *in[MAX_IN];
            if (!operands(S, v->def, 0, in))
                return NULL;
            S->pre[id] = copy_op(S, v->def, in, &v->type);
        }
        if (S->ctx == IR_PH_FORWARD)
            read_forward(S, v, S->reader);
        return S->pre[id];
    case K_MB: {
        ir_value **slot = &S->mb[(size_t)id * L->M + j];
        if (!*slot && L->floating[id])
            *slot = emit_mb(S, v->def, j);
        if (!*slot && !S->failed) {
            S->failed = true;
            fail_at(L, v->def->loc, "internal error: microbatch %d of this value is not on stage %d", j,
                 S->s);
        }
        return *slot;
    }
    default:
        if (!S->step[id] && L->stage[id] < 0 && !make_step(S, v))
            return NULL;
        if (!S->step[id] && !S->failed) {
            S->failed = true;
            fail_at(L, v->def->loc, "internal error: this per-step value is not on stage %d", S->s);
        }
        return S->step[id];
    }
}

/* One microbatch's contribution to an accumulated value. */
static bool accumulate(st *S, const ir_op *op, int j)
{
    pl *L = S->L;
    int id = op->res[0]->id;
    ir_value *in[MAX_IN];
    if (!mb_operands(S, op, j, in))
        return false;
    ir_value *t = copy_op(S, op, in, &op->res[0]->type);
    if (S->step[id]) {
        ir_value *ab[2] = {S->step[id], t};
        t = append(S, op, L->acc[id] == ACC_MAX ? IR_MAX : IR_ADD, ab, 2, &(ir_attrs){0},
                   &t->type, &op->res[0]->sh);
    }
    S->step[id] = t;
    if (++S->nacc[id] == L->M && L->acc[id] == ACC_MEAN && L->M > 1) {
        ir_type sc = {.dtype = t->type.dtype};
        ir_value *c = append(S, op, IR_CONST, NULL, 0, &(ir_attrs){.value = 1.0 / L->M}, &sc,
                             NULL);
        ir_value *ab[2] = {t, c};
        S->step[id] = append(S, op, IR_MUL, ab, 2, &(ir_attrs){0}, &t->type, &op->res[0]->sh);
    }
    return true;
}

/* A per-step value any stage can make (from inputs and per-step values),
 * where it is first read: every microbatch's contribution at once. */
static bool make_step(st *S, const ir_value *v)
{
    const ir_op *op = v->def;
    if (S->L->kind[v->id] == K_ACC) {
        for (int j = 0; j < S->L->M; j++)
            if (!accumulate(S, op, j))
                return false;
        return true;
    }
    ir_value *in[MAX_IN];
    if (!operands(S, op, 0, in))
        return false;
    S->step[v->id] = copy_op(S, op, in, &v->type);
    return true;
}

static int64_t tag_of(const pl *L, int id, int j)
{
    return (int64_t)id * L->M + j;
}

static bool in_task(const pl *L, const ir_op *op, const pass_task *t)
{
    int id = op->res[0]->id;
    if (L->kind[id] == K_MB ? L->floating[id] : L->kind[id] != K_ACC || L->floating[id])
        return false;
    return L->chunk[id] == t->chunk && (op->phase == IR_PH_FORWARD) == t->forward;
}

/* Receives what task t reads from other stages, in value order. */
static void recv_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb;
    int nrecv = 0;
    int *want = su_alloc(&L->ar, (size_t)L->nv * sizeof *want);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (!in_task(L, op, t))
            continue;
        for (int k = 0; k < op->nin; k++) {
            const ir_value *x = op->in[k];
            if (L->kind[x->id] != K_MB || L->floating[x->id] ||
                stage_of(L, L->chunk[x->id]) == S->s)
                continue;
            bool seen = S->mb[(size_t)x->id * L->M + j] != NULL;
            for (int q = 0; q < nrecv && !seen; q++)
                seen = want[q] == x->id;
            if (!seen)
                want[nrecv++] = x->id;
        }
    }
    for (int a = 1; a < nrecv; a++)
        for (int b = a; b > 0 && want[b - 1] > want[b]; b--) {
            int tmp = want[b];
            want[b] = want[b - 1];
            want[b - 1] = tmp;
        }
    for (int q = 0; q < nrecv; q++) {
        const ir_value *x = NULL;
        for (int i = 0; i < m->ops.n && !x; i++)
            if (IR_OP(m, i)->res[0]->id == want[q])
                x = IR_OP(m, i)->res[0];
        ir_type ty = mb_type(L, x);
        ir_attrs a = {.peer = stage_of(L, L->chunk[x->id]), .tag = tag_of(L, x->id, j)};
        ir_value *r = append(S, x->def, IR_RECV, NULL, 0, &a, &ty, &x->sh);
        S->mb[(size_t)x->id * L->M + j] = r;
    }
}

static bool compute_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb;
    for (int i = 0; i < m->ops.n && !S->failed; i++) {
        const ir_op *op = IR_OP(m, i);
        if (!in_task(L, op, t))
            continue;
        int id = op->res[0]->id;
        if (L->kind[id] == K_ACC) {
            if (!accumulate(S, op, j))
                return false;
            continue;
        }
        ir_value *v = emit_mb(S, op, j);
        if (!v)
            return false;
        S->mb[(size_t)id * L->M + j] = v;
    }
    return !S->failed;
}

/* Sends what other stages read of task t's values, in value order. */
static void send_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb;
    for (int i = 0; i < m->ops.n && !S->failed; i++) {
        const ir_op *op = IR_OP(m, i);
        int id = op->res[0]->id;
        if (!in_task(L, op, t) || L->kind[id] != K_MB || !L->to[id])
            continue;
        for (int s = 0; s < L->P; s++)
            if (L->to[id] & (1ull << s)) {
                ir_value *x = S->mb[(size_t)id * L->M + j];
                ir_attrs a = {.peer = s, .tag = tag_of(L, id, j)};
                append(S, op, IR_SEND, &x, 1, &a, NULL, NULL);
            }
    }
}

static void bound(st *S, int start)
{
    su_vec_push(&S->bounds, S->dst->oom, (void *)(intptr_t)start);
    su_vec_push(&S->bounds, S->dst->oom, (void *)(intptr_t)S->dst->ops.n);
}

/* The stage's tasks in order; between two tasks, the first one's sends and
 * the next one's recvs (their order is order_p2p's). */
static bool run_tasks(st *S, pass_task *const *task, int n)
{
    int start = S->dst->ops.n;
    if (n)
        recv_task(S, task[0]);
    bound(S, start);
    for (int k = 0; k < n; k++) {
        if (!compute_task(S, task[k]))
            return false;
        start = S->dst->ops.n;
        send_task(S, task[k]);
        if (k + 1 < n)
            recv_task(S, task[k + 1]);
        bound(S, start);
    }
    return !S->failed;
}

typedef struct paired {
    int gap, seq, op;
} paired;

static int by_gap(const void *x, const void *y)
{
    const paired *a = x, *b = y;
    return a->gap != b->gap ? (a->gap > b->gap) - (a->gap < b->gap)
                            : (a->seq > b->seq) - (a->seq < b->seq);
}

/* A send waits for its recv (as NCCL's do). Between two tasks a stage's
 * recvs for the next task and its sends are independent of each other, and
 * a send may also wait for a later gap between tasks (its value stays live
 * longer). This runs all stages together, pairing a send with its recv
 * whenever the receiver has reached the gap before the task that reads the
 * value, moving a stage on once its recvs are done, and puts each stage's
 * sends and recvs into the gaps where they paired, in pairing order. Fails
 * only when the schedule itself waits in a cycle. */
/* An empty vector with room for n pointers: filled with at most n, it
 * never grows, so nothing leaks when an allocation fails while it is held. */
static su_vec vec_of(const pl *L, int n)
{
    return (su_vec){su_xmalloc(L->m->oom, (size_t)(n > 0 ? n : 1) * sizeof(void *)), 0,
                    n > 0 ? n : 1};
}

static bool order_p2p(pl *L, st *S)
{
    int P = L->P;
    int *cur = su_alloc(&L->ar, (size_t)P * sizeof *cur);
    int **at = su_alloc(&L->ar, (size_t)P * sizeof *at); /* per op: the gap it paired in */
    int **seq = su_alloc(&L->ar, (size_t)P * sizeof *seq); /* per op: pairing order */
    int nseq = 0;
    for (int s = 0; s < P; s++) {
        int n = S[s].dst->ops.n + 1;
        cur[s] = 0;
        at[s] = su_alloc(&L->ar, (size_t)n * sizeof **at);
        seq[s] = su_alloc(&L->ar, (size_t)n * sizeof **seq);
        for (int i = 0; i < n; i++)
            at[s][i] = -1;
    }
#define NB(s) (S[s].bounds.n / 2)
#define LO(s, k) ((intptr_t)S[s].bounds.v[2 * (k)])
#define HI(s, k) ((intptr_t)S[s].bounds.v[2 * (k) + 1])
    for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; s++) {
            if (cur[s] > NB(s))
                continue;
            int upto = cur[s] < NB(s) ? cur[s] : NB(s) - 1;
            for (int g = 0; g <= upto; g++)
                for (intptr_t i = LO(s, g); i < HI(s, g); i++) {
                    const ir_op *snd = IR_OP(S[s].dst, i);
                    int t = (int)snd->a.peer;
                    if (snd->code != IR_SEND || at[s][i] >= 0 || cur[t] >= NB(t))
                        continue;
                    for (intptr_t k = LO(t, cur[t]); k < HI(t, cur[t]); k++) {
                        const ir_op *rcv = IR_OP(S[t].dst, k);
                        if (rcv->code != IR_RECV || at[t][k] >= 0 || rcv->a.peer != s ||
                            rcv->a.tag != snd->a.tag)
                            continue;
                        at[s][i] = upto;
                        at[t][k] = cur[t];
                        seq[s][i] = seq[t][k] = nseq++;
                        progress = true;
                        break;
                    }
                }
        }
        for (int s = 0; s < P; s++) { /* one gap on, once its recvs all paired */
            if (cur[s] >= NB(s))
                continue;
            intptr_t i = LO(s, cur[s]);
            while (i < HI(s, cur[s]) && (IR_OP(S[s].dst, i)->code == IR_SEND || at[s][i] >= 0))
                i++;
            if (i == HI(s, cur[s])) {
                cur[s]++;
                progress = true;
            }
        }
    }
    bool ok = true;
    for (int s = 0; s < P && ok; s++) {
        if (cur[s] < NB(s))
            ok = fail_at(L, (su_loc){0, 0}, "internal error: the schedule waits in a cycle (stage %d stops "
                      "before its task %d)", s, cur[s]);
        for (int g = 0; g < NB(s) && ok; g++)
            for (intptr_t i = LO(s, g); i < HI(s, g) && ok; i++)
                if (at[s][i] < 0)
                    ok = fail_at(L, (su_loc){0, 0}, "internal error: stage %d's send (tag %lld) is never "
                              "received", s, (long long)IR_OP(S[s].dst, i)->a.tag);
    }
    /* rebuild each stage's list: every gap gets the ops that paired in it */
    for (int s = 0; s < P && ok; s++) {
        const su_vec *ops = &S[s].dst->ops;
        int np = 0;
        paired *pr = su_alloc(&L->ar, (size_t)ops->n * sizeof *pr + 1);
        for (int i = 0; i < ops->n; i++)
            if (at[s][i] >= 0)
                pr[np++] = (paired){at[s][i], seq[s][i], i};
        qsort(pr, (size_t)np, sizeof *pr, by_gap);
        su_vec out = vec_of(L, ops->n);
        int g = 0, q = 0;
        for (int i = 0; i < ops->n;) {
            if (g < NB(s) && i == LO(s, g)) {
                for (; q < np && pr[q].gap == g; q++)
                    su_vec_push(&out, L->m->oom, ops->v[pr[q].op]);
                i = (int)HI(s, g++);
                continue;
            }
            su_vec_push(&out, L->m->oom, ops->v[i++]);
        }
        for (; q < np; q++) /* gaps at the very end */
            su_vec_push(&out, L->m->oom, ops->v[pr[q].op]);
        su_vec_free(&S[s].dst->ops);
        S[s].dst->ops = out;
    }
    for (int s = 0; s < P; s++)
        su_vec_free(&S[s].bounds);
#undef NB
#undef LO
#undef HI
    return ok;
}

/* After the last task: the per-step ops of this stage, in program order. */
static bool run_post(st *S)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    for (int i = 0; i < m->ops.n && !S->failed; i++) {
        const ir_op *op = IR_OP(m, i);
        int id = op->res[0]->id;
        if (L->kind[id] == K_ACC && L->stage[id] == S->s && S->nacc[id] != L->M)
            return fail_at(L, op->loc, "internal error: %d of %d microbatches accumulated on stage %d",
                        S->nacc[id], L->M, S->s);
        if (L->kind[id] != K_POST || L->stage[id] != S->s)
            continue;
        ir_value *in[MAX_IN];
        if (!operands(S, op, 0, in))
            return false;
        S->step[id] = copy_op(S, op, in, &op->res[0]->type);
    }
    return !S->failed;
}

/* The stage that holds value v once every task has run; -1 when any
 * stage can make it: per-step, or made from inputs and per-step values
 * only (floating, also a batch reduction of those and what follows). */
static int home(const pl *L, const ir_value *v)
{
    int id = v->id;
    switch (L->kind[id]) {
    case K_PRE: return -1;
    case K_MB: return L->floating[id] ? -1 : stage_of(L, L->chunk[id]);
    default: return L->stage[id];
    }
}

/* An output of microbatch values, the inverse of input_mb: each
 * microbatch's rows into their place in the rows of a bucket (one per
 * block of the batch the value holds), then the bucket in the value's
 * shape. */
static ir_value *gather_mb(st *S, const ir_value *v)
{
    pl *L = S->L;
    int64_t n = ir_type_numel(&v->type), k = L->N / blocks_of(L, v), part = n / k / L->M;
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_type sc = {.dtype = v->type.dtype}, row = {.dtype = v->type.dtype, .rank = 2, .dim = {k, n / k}};
    ir_value *z = append(S, NULL, IR_CONST, NULL, 0, &(ir_attrs){.value = 0}, &sc, &rep);
    ir_value *b = append(S, NULL, IR_EXPAND, &z, 1,
                         &(ir_attrs){.nlist = 2, .list = {k, n / k}}, &row, &rep);
    for (int j = 0; j < L->M; j++) {
        ir_value *in[2] = {b, get(S, v, j)};
        if (!in[1])
            return NULL;
        b = append(S, NULL, IR_INSERT, in, 2, &(ir_attrs){.offset = j * part}, &row, &rep);
    }
    ir_attrs ra = {.nlist = v->type.rank};
    memcpy(ra.list, v->type.dim, sizeof ra.list);
    ir_value *r = append(S, NULL, IR_RESHAPE, &b, 1, &ra, &v->type, &v->sh);
    r->name = v->name;
    return r;
}

/* Whether stage S made v (every microbatch of it). */
static bool made(const st *S, const ir_value *v)
{
    const pl *L = S->L;
    if (L->kind[v->id] == K_PRE)
        return S->pre[v->id] != NULL;
    if (L->kind[v->id] != K_MB)
        return S->step[v->id] != NULL;
    for (int j = 0; j < L->M; j++)
        if (!S->mb[(size_t)v->id * L->M + j])
            return false;
    return true;
}

/* The first stage that holds a param or state v reads through per-step
 * and floating values (-1: none); seen marks the values visited. */
static int param_stage(const pl *L, const st *S, const ir_value *v, bool *seen)
{
    int id = v->id;
    if (seen[id] || home(L, v) >= 0)
        return -1;
    seen[id] = true;
    if (v->def->code == IR_PARAM || v->def->code == IR_STATE) {
        for (int s = 0; s < L->P; s++)
            if (S[s].pre[id])
                return s;
        return -1;
    }
    for (int k = 0; k < v->def->nin; k++) {
        int s = param_stage(L, S, v->def->in[k], seen);
        if (s >= 0)
            return s;
    }
    return -1;
}

static int param_home(pl *L, st *S, const ir_update *u);

/* The update whose new value is v, for a param (an output of a param is
 * its value after the update); NULL when none. */
static const ir_update *param_update_of(const pl *L, const ir_value *v)
{
    for (int i = 0; i < L->m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(L->m, i);
        if (u->v == v && u->src->def->code == IR_PARAM)
            return u;
    }
    return NULL;
}

/* Where output o is read; -1 on error. A param's value after its update
 * is read where the param lives (param_home), which updates it. A value
 * any stage can make (per-step, or made from inputs and per-step values)
 * is read where it was made, else where a param it reads is held, else on
 * the last stage: every stage that holds a param receives its value from
 * the param's home at the start of the step (exchange), so each reads
 * this step's value. */
static int output_stage(pl *L, st *S, const ir_output *o)
{
    const ir_value *v = o->v;
    const ir_update *u = param_update_of(L, v);
    if (u)
        return param_home(L, S, u);
    int s = home(L, v);
    if (s >= 0)
        return s;
    for (int k = 0; k < L->P; k++)
        if (made(&S[k], v))
            return k;
    bool *seen = su_alloc(&L->ar, (size_t)L->nv * sizeof *seen);
    memset(seen, 0, (size_t)L->nv * sizeof *seen);
    s = param_stage(L, S, v, seen);
    return s >= 0 ? s : L->P - 1;
}

static bool outputs(pl *L, st *S)
{
    const ir_module *m = L->m;
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        int s = output_stage(L, S, o);
        if (s < 0)
            return false;
        S[s].ctx = param_update_of(L, o->v) ? IR_PH_OPTIMIZER : IR_PH_FORWARD;
        S[s].reader = NULL;
        S[s].output = true;
        ir_value *v = L->kind[o->v->id] == K_MB ? gather_mb(&S[s], o->v) : get(&S[s], o->v, 0);
        S[s].output = false;
        if (!v)
            return false;
        ir_add_output(S[s].dst, o->name, v, o->loc);
    }
    if (m->train.loss) {
        int s = home(L, m->train.loss);
        S[s < 0 ? L->P - 1 : s].dst->train.loss = get(&S[s < 0 ? L->P - 1 : s], m->train.loss, 0);
    }
    return true;
}

/* The stage a param with an update lives on: where its gradient (else
 * its new value) is made, else where a forward op reads it, else where
 * any op does (stage 0 when none does); -1 when two forward ops on two
 * stages read it (a param shared by stages; one op on two stages makes a
 * value both need, made from inputs and params alone). Another stage that
 * reads it (the gradient of the operation that reads it, made on an
 * earlier stage from per-step values alone; the forward op of a value
 * whose gradient reaches the param on another stage, or that both need)
 * gets its value at the start of the step (exchange). */
static int param_home(pl *L, st *S, const ir_update *u)
{
    int id = u->src->id, fwd = -1, any = -1;
    for (int s = 0; s < L->P; s++) {
        const ir_op *a = fwd >= 0 ? S[fwd].fwd[id] : NULL, *b = S[s].fwd[id];
        if (a && b && a != b)
            return fail_at(L, u->src->def->loc, "param '%s' is used on pipeline stages %d "
                           "(line %d) and %d (line %d); a param shared by stages is not "
                           "supported yet", u->src->def->a.name, fwd, a->loc.line, s,
                           b->loc.line), -1;
        if (S[s].fwd[id])
            fwd = s;
        if (S[s].pre[id] && any < 0)
            any = s;
    }
    if (u->grad && home(L, u->grad) >= 0)
        return home(L, u->grad);
    if (home(L, u->v) >= 0)
        return home(L, u->v);
    return fwd >= 0 ? fwd : any >= 0 ? any : 0;
}

/* Where update u is made: a param's on its home (param_home), a state's
 * on every stage that reads it (the step count; stage 0 when none does).
 * Its new value and gradient must be made there. */
static bool place_update(pl *L, st *S, const ir_update *u, ir_update *out, int *at)
{
    bool param = u->src->def->code == IR_PARAM;
    int id = u->src->id, first = -1, n = 0;
    if (param && (first = param_home(L, S, u)) < 0)
        return false;
    for (int s = 0; s < L->P && !param && first < 0; s++)
        if (S[s].pre[id])
            first = s;
    for (int s = first < 0 ? 0 : first; s < L->P; s++) {
        if (first >= 0 && !S[s].pre[id] && s != first)
            continue;
        const ir_value *need[2] = {u->v, u->grad};
        for (int k = 0; k < 2; k++)
            if (need[k] && home(L, need[k]) >= 0 && home(L, need[k]) != s)
                return fail_at(L, u->src->def->loc, "'%s' lives on stage %d, but its %s is made on "
                            "stage %d", u->src->def->a.name, s, k ? "gradient" : "new value",
                            home(L, need[k]));
        S[s].ctx = IR_PH_OPTIMIZER;
        S[s].reader = NULL;
        ir_value *src = get(&S[s], u->src, 0), *v = get(&S[s], u->v, 0);
        ir_value *g = u->grad ? get(&S[s], u->grad, 0) : NULL;
        if (!src || !v || (u->grad && !g))
            return false;
        out[n] = (ir_update){src, v, g};
        at[n++] = s;
        if (first < 0 || param)
            break;
    }
    if (param)
        L->home[id] = at[0];
    for (; n < L->P; n++)
        at[n] = -1;
    return true;
}

/* The params are placed first: a state that only its param's update
 * reads (momentum, adamw's moments, the master copy of a bf16 param) then
 * lives with its param, whose update reads it, rather than on stage 0,
 * where its own update would read the param (a momentum's weight decay, a
 * master copy's init). The updates are added in the module's order. */
static bool updates(pl *L, st *S)
{
    const ir_module *m = L->m;
    int n = m->updates.n, P = L->P;
    ir_update *out = su_alloc(&L->ar, (size_t)(n * P + 1) * sizeof *out);
    int *at = su_alloc(&L->ar, (size_t)(n * P + 1) * sizeof *at);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const ir_update *u = IR_UPDATE(m, i);
            if ((u->src->def->code == IR_PARAM) == (pass == 0) &&
                !place_update(L, S, u, out + (size_t)i * P, at + (size_t)i * P))
                return false;
        }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < P && at[i * P + k] >= 0; k++) {
            const ir_update *u = &out[i * P + k];
            ir_add_update(S[at[i * P + k]].dst, u->src, u->v, u->grad);
        }
    return true;
}

/* Replaces every use of value a in module d by b. */
static void replace_uses(ir_module *d, const ir_value *a, ir_value *b)
{
    for (int i = 0; i < d->ops.n; i++) {
        ir_op *op = IR_OP(d, i);
        for (int k = 0; k < op->nin; k++)
            if (op->in[k] == a)
                op->in[k] = b;
    }
    for (int i = 0; i < d->outputs.n; i++)
        if (IR_OUTPUT(d, i)->v == a)
            IR_OUTPUT(d, i)->v = b;
}

/* Moves ops front of module d to its front, in that order, and drops the
 * ops marked gone (a mark per op index). */
static void to_front(pl *L, ir_module *d, ir_op **front, int nfront, const bool *gone)
{
    su_vec out = vec_of(L, nfront + d->ops.n);
    for (int k = 0; k < nfront; k++)
        su_vec_push(&out, L->m->oom, front[k]);
    for (int i = 0; i < d->ops.n; i++) {
        bool moved = gone[i];
        for (int k = 0; k < nfront && !moved; k++)
            moved = front[k] == IR_OP(d, i);
        if (!moved)
            su_vec_push(&out, L->m->oom, d->ops.v[i]);
    }
    su_vec_free(&d->ops);
    d->ops = out;
}

/* A param read on stages other than its home (param_home) is sent from
 * there to each of them before anything else runs, its copy there
 * replaced by what it receives, so every stage reads this step's value
 * and only the home updates it. Every stage's sends and recvs follow one
 * order (param, then receiving stage), so they pair without waiting in a
 * cycle. */
static bool exchange(pl *L, st *S)
{
    const ir_module *m = L->m;
    for (int s = 0; s < L->P; s++) {
        ir_module *d = S[s].dst;
        int nops = d->ops.n, nfront = 0;
        ir_op **front = su_alloc(&L->ar, (size_t)(2 * m->updates.n * L->P + 1) * sizeof *front);
        bool *gone = su_alloc(&L->ar, (size_t)nops + 1);
        memset(gone, 0, (size_t)nops + 1);
        for (int i = 0; i < m->updates.n; i++) { /* the home's params first */
            const ir_value *p = IR_UPDATE(m, i)->src;
            if (p->def->code != IR_PARAM || L->home[p->id] != s)
                continue;
            for (int t = 0; t < L->P; t++)
                if (t != s && S[t].pre[p->id]) {
                    front[nfront++] = S[s].pre[p->id]->def;
                    break;
                }
        }
        for (int i = 0; i < m->updates.n; i++) {
            const ir_value *p = IR_UPDATE(m, i)->src;
            int h = p->def->code == IR_PARAM ? L->home[p->id] : -1;
            if (h < 0)
                continue;
            for (int t = 0; t < L->P; t++) {
                if (t == h || !S[t].pre[p->id] || (s != h && s != t))
                    continue;
                ir_attrs a = {.peer = s == h ? t : h, .tag = tag_of(L, p->id, 0)};
                if (s == h) {
                    ir_value *x = S[s].pre[p->id];
                    append(&S[s], p->def, IR_SEND, &x, 1, &a, NULL, NULL);
                } else {
                    ir_value *old = S[s].pre[p->id];
                    ir_value *r = append(&S[s], p->def, IR_RECV, NULL, 0, &a, &old->type,
                                         &old->sh);
                    replace_uses(d, old, r);
                    for (int k = 0; k < nops; k++)
                        gone[k] = gone[k] || IR_OP(d, k) == old->def;
                    S[s].pre[p->id] = r;
                }
                front[nfront++] = IR_OP(d, d->ops.n - 1);
            }
        }
        if (nfront)
            to_front(L, d, front, nfront, gone);
    }
    return true;
}

/* A param or state that no stage reads is kept on the first stage, as
 * the unpipelined program keeps it (its value is saved after the step). */
static bool keep_unread(pl *L, st *S)
{
    for (int i = 0; i < L->m->ops.n; i++) {
        const ir_op *op = IR_OP(L->m, i);
        if (op->code != IR_PARAM && op->code != IR_STATE)
            continue;
        bool read = false;
        for (int s = 0; s < L->P && !read; s++)
            read = S[s].pre[op->res[0]->id] != NULL;
        if (!read && !get(&S[0], op->res[0], 0))
            return false;
    }
    return true;
}

static void init_stage(pl *L, st *S, int s)
{
    const ir_module *m = L->m;
    ir_module *d = ir_module_new(m->oom);
    d->mesh = m->mesh;
    d->partitioned = true;
    d->pipe = m->pipe;
    d->stage = s;
    d->train = m->train;
    d->train.loss = NULL;
    size_t nv = (size_t)L->nv;
    *S = (st){.L = L, .dst = d, .s = s};
    S->pre = su_alloc(&L->ar, nv * sizeof *S->pre);
    S->full = su_alloc(&L->ar, nv * sizeof *S->full);
    S->step = su_alloc(&L->ar, nv * sizeof *S->step);
    S->slice = su_alloc(&L->ar, nv * sizeof *S->slice);
    memset(S->slice, 0, nv * sizeof *S->slice);
    S->nacc = su_alloc(&L->ar, nv * sizeof *S->nacc);
    S->fwd = su_alloc(&L->ar, nv * sizeof *S->fwd);
    S->reader = NULL;
    memset(S->fwd, 0, nv * sizeof *S->fwd);
    S->ctx = IR_NPHASES;
    S->mb = su_alloc(&L->ar, nv * (size_t)L->M * sizeof *S->mb);
    memset(S->pre, 0, nv * sizeof *S->pre);
    memset(S->full, 0, nv * sizeof *S->full);
    memset(S->step, 0, nv * sizeof *S->step);
    memset(S->nacc, 0, nv * sizeof *S->nacc);
    memset(S->mb, 0, nv * (size_t)L->M * sizeof *S->mb);
}

static bool setup(pl *L, const ir_module *m, su_buf *err, su_loc *at)
{
    const ir_pipeline *p = &m->pipe;
    *L = (pl){.m = m, .err = err, .at = at, .M = p->microbatches, .V = p->chunks, .L = p->repeats,
              .nv = m->next_id + 1};
    L->P = (int)m->mesh.size[p->axis];
    L->C = L->P * L->V;
    su_arena_init(&L->ar, m->oom);
    if (L->P > 64)
        return fail_at(L, p->loc, "a pipeline of %d stages: at most 64 are supported", L->P);
    if (p->schedule == IR_SCHED_INTERLEAVED && L->V > 1 && L->M % L->P)
        return fail_at(L, p->loc, "the interleaved schedule needs the microbatches (%d) to be a "
                    "multiple of the stages (%d)", L->M, L->P);
    size_t nv = (size_t)L->nv;
    L->kind = su_alloc(&L->ar, nv);
    L->bd = su_alloc(&L->ar, nv);
    L->uniform = su_alloc(&L->ar, nv);
    L->cut = su_alloc(&L->ar, nv * MAX_IN);
    memset(L->uniform, 0, nv);
    memset(L->cut, -1, nv * MAX_IN);
    L->floating = su_alloc(&L->ar, nv * sizeof *L->floating);
    L->acc = su_alloc(&L->ar, nv);
    L->chunk = su_alloc(&L->ar, nv * sizeof *L->chunk);
    L->stage = su_alloc(&L->ar, nv * sizeof *L->stage);
    L->to = su_alloc(&L->ar, nv * sizeof *L->to);
    L->origin = su_alloc(&L->ar, nv * sizeof *L->origin);
    memset(L->origin, 0, nv * sizeof *L->origin);
    L->home = su_alloc(&L->ar, nv * sizeof *L->home);
    memset(L->home, -1, nv * sizeof *L->home);
    memset(L->kind, 0, nv);
    memset(L->bd, -1, nv);
    memset(L->floating, 0, nv * sizeof *L->floating);
    memset(L->acc, 0, nv);
    memset(L->chunk, 0, nv * sizeof *L->chunk);
    memset(L->stage, 0, nv * sizeof *L->stage);
    memset(L->to, 0, nv * sizeof *L->to);
    return true;
}

void pass_pipeline_free(pass_pipeline *pp)
{
    if (!pp)
        return;
    for (int s = 0; s < pp->nstages; s++)
        ir_module_free(pp->stage[s]);
    su_arena_free(&pp->arena);
    *pp = (pass_pipeline){0};
}

/* A split being made: what it holds, freed by pass_pipeline_split after
 * an allocation failure too (out is the caller's). */
typedef struct split_run {
    const ir_module *m;
    pass_pipeline *out;
    su_buf *err;
    su_loc *at;
    pl L;
    st *S;                  /* [L.P] */
    su_vec tasks;
    bool ok;
} split_run;

static void split(void *arg)
{
    split_run *r = arg;
    const ir_module *m = r->m;
    pass_pipeline *out = r->out;
    pl *L = &r->L;
    if (!setup(L, m, r->err, r->at))
        return;
    bool train = m->updates.n > 0 || m->train.loss;
    bool ok = batch_blocks(L, false) && classify(L) && batch_blocks(L, true);
    su_arena_init(&out->arena, m->oom);
    out->stage = su_alloc(&out->arena, (size_t)L->P * sizeof *out->stage);
    out->nstages = L->P; /* the stages made so far, the others NULL */
    out->ntasks = su_alloc(&out->arena, (size_t)L->P * sizeof *out->ntasks);
    out->task = su_alloc(&out->arena, (size_t)L->P * sizeof *out->task);
    st *S = r->S = su_alloc(&L->ar, (size_t)L->P * sizeof *S);
    for (int s = 0; s < L->P; s++) {
        init_stage(L, &S[s], s);
        out->stage[s] = S[s].dst;
        schedule(L, s, train, &r->tasks, m->oom, &out->arena);
        out->ntasks[s] = r->tasks.n;
        out->task[s] = su_alloc(&out->arena,
                                (size_t)(r->tasks.n ? r->tasks.n : 1) * sizeof(pass_task *));
        memcpy(out->task[s], r->tasks.v, (size_t)r->tasks.n * sizeof(pass_task *));
        r->tasks.n = 0;
        ok = ok && run_tasks(&S[s], out->task[s], out->ntasks[s]) && run_post(&S[s]);
    }
    ok = ok && order_p2p(L, S);
    /* the outputs first: an update then sees every stage that reads its param */
    ok = ok && outputs(L, S) && updates(L, S) && keep_unread(L, S) && exchange(L, S);
    if (ok)
        out->bubble = bubble(L, out, train);
    r->ok = ok;
}

bool pass_pipeline_split(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at)
{
    *out = (pass_pipeline){0};
    *at = (su_loc){0, 0};
    if (!m->partitioned || m->pipe.axis < 0 || m->stage >= 0) {
        su_buf_puts(err, "the pipeline split needs a partitioned module with a pipeline");
        return false;
    }
    split_run r = {.m = m, .out = out, .err = err, .at = at};
    bool done = su_guarded(m->oom, split, &r);
    su_vec_free(&r.tasks);
    for (int s = 0; r.S && s < r.L.P; s++) /* order_p2p frees them; not on an earlier failure */
        su_vec_free(&r.S[s].bounds);
    su_arena_free(&r.L.ar);
    if (!done)
        su_oom(m->oom); /* out is the caller's to free */
    if (!r.ok)
        pass_pipeline_free(out);
    return r.ok;
}

/* ---- the cross-stage verifier ---- */

static void p2p_mismatch(su_buf *err, int s, int i, const ir_op *op, int t, int k,
                         const ir_op *snd)
{
    su_buf_printf(err, "stage %d op %d (recv, tag %lld, %s[%lld elements]) meets stage %d op %d "
                  "(send, tag %lld, %s[%lld elements])", s, i, (long long)op->a.tag,
                  ir_dtype_name(op->res[0]->type.dtype),
                  (long long)ir_type_numel(&op->res[0]->type), t, k, (long long)snd->a.tag,
                  ir_dtype_name(snd->in[0]->type.dtype),
                  (long long)ir_type_numel(&snd->in[0]->type));
}

/* Runs every stage's program together: compute and collectives (within
 * one stage) proceed; a send and its recv proceed together when both
 * stages have reached them (rendezvous), and must agree on tag and type. */
typedef struct p2p_run {
    ir_module *const *stage;
    int n;
    su_buf *err;
    int *pc;                /* [n]: each stage's next op */
    bool ok;
} p2p_run;

static void verify_p2p(void *arg)
{
    p2p_run *r = arg;
    ir_module *const *stage = r->stage;
    int n = r->n;
    su_buf *err = r->err;
    int *pc = r->pc = su_xmalloc(err->oom, (size_t)n * sizeof *pc);
    memset(pc, 0, (size_t)n * sizeof *pc);
    bool ok = true, progress = true;
    while (ok && progress) {
        progress = false;
        for (int s = 0; s < n; s++) /* up to the next send or recv */
            while (pc[s] < stage[s]->ops.n && ir_ops[IR_OP(stage[s], pc[s])->code].cls != IR_C_P2P) {
                pc[s]++;
                progress = true;
            }
        for (int s = 0; ok && s < n; s++) {
            if (pc[s] >= stage[s]->ops.n || IR_OP(stage[s], pc[s])->code != IR_SEND)
                continue;
            const ir_op *snd = IR_OP(stage[s], pc[s]);
            int t = (int)snd->a.peer;
            if (t < 0 || t >= n || pc[t] >= stage[t]->ops.n)
                continue;
            const ir_op *rcv = IR_OP(stage[t], pc[t]);
            if (rcv->code != IR_RECV || rcv->a.peer != s)
                continue;
            if (rcv->a.tag != snd->a.tag || !ir_type_eq(&rcv->res[0]->type, &snd->in[0]->type)) {
                p2p_mismatch(err, t, pc[t], rcv, s, pc[s], snd);
                ok = false;
                break;
            }
            pc[s]++, pc[t]++;
            progress = true;
        }
    }
    for (int s = 0; ok && s < n; s++)
        if (pc[s] < stage[s]->ops.n) {
            su_buf_puts(err, "deadlock: every unfinished stage waits:");
            for (int t = 0; t < n; t++)
                if (pc[t] < stage[t]->ops.n) {
                    const ir_op *op = IR_OP(stage[t], pc[t]);
                    su_buf_printf(err, " stage %d op %d (%s %s stage %lld, tag %lld);", t, pc[t],
                                  ir_ops[op->code].name, op->code == IR_SEND ? "to" : "from",
                                  (long long)op->a.peer, (long long)op->a.tag);
                }
            ok = false;
        }
    r->ok = ok;
}

bool pass_verify_p2p(ir_module *const *stage, int n, su_buf *err)
{
    p2p_run r = {.stage = stage, .n = n, .err = err};
    bool done = su_guarded(err->oom, verify_p2p, &r);
    free(r.pc);
    if (!done)
        su_oom(err->oom);
    return r.ok;
}
