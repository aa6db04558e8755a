/* parts.c: f32 matmuls as products of bf16 parts (shardc --f32-matmul
 * bf16x3; ops.def's split3 and matmul {parts}).
 *
 * On each stage's program (partitioned, after the buckets), every matmul
 * of f32 operands and an f32 result becomes
 *   ap = split3(a) {dim = a's contracted dim}
 *   bp = split3(b) {dim = b's contracted dim, reversed = true}
 *   c  = matmul(ap, bp) {trans as it was, parts = true}
 * c keeping its value (name, sharding, readers). The parts are bf16, so the
 * product runs on tensor cores (three cuBLASLt calls on a GPU, three sgemm
 * on the CPU backend: cuda_blas.h says how, and how near f32's product it
 * is), for about 1.5 times an operand's f32 bytes in parts, held from the
 * split to the product. Each split sits just before its matmul, with the
 * matmul's phase, repetition and pipeline stamps (task, microbatch), so
 * that a loop body of a pipeline stage holds its own; one split serves
 * the later matmuls of its stamps and phase that read the same value along
 * the same dim in the same order, up to REUSE ops after it (q, k and v's
 * projections of one activation), and no further, so that parts do not
 * live from the forward to the backward. */
#include "passes.h"

#include <string.h>

enum { REUSE = 16 };

/* The dim of operand i (0: a, 1: b) of matmul op that it contracts, as
 * stored. */
static int64_t contracted(const ir_op *op, int i)
{
    const ir_type *t = &op->in[i]->type;
    if (t->rank == 1)
        return 0;
    bool tr = op->a->trans & (i ? IR_TRANS_B : IR_TRANS_A);
    return i == 0 ? t->rank - 1 - tr : t->rank - 2 + tr;
}

static bool is_f32_matmul(const ir_op *op)
{
    return op->code == IR_MATMUL && !op->a->parts && op->nres == 1 && op->nin == 2 &&
           op->in[0]->type.dtype == IR_F32 && op->in[1]->type.dtype == IR_F32 &&
           op->res[0]->type.dtype == IR_F32;
}

/* The split3 of x along dim (reversed) made for op, at out[*n]; an earlier
 * one (made at original index at[id]) when it fits. */
typedef struct splits {
    ir_op **last;   /* by value id x 2 (reversed): the latest split of it */
    int *at;        /* by value id x 2: the original index of its matmul */
} splits;

static ir_value *split(ir_module *m, splits *S, const ir_op *op, int i, int idx, ir_op **out,
                       int *n)
{
    ir_value *x = op->in[i];
    int64_t dim = contracted(op, i);
    size_t key = (size_t)x->id * 2 + (size_t)i;
    ir_op *s = S->last[key];
    if (s && s->a->dim == dim && s->phase == op->phase && s->rep == op->rep &&
        s->task == op->task && s->mb == op->mb && idx - S->at[key] <= REUSE)
        return s->res[0];
    ir_attrs a = {.dim = dim, .reversed = i == 1};
    ir_type t = x->type;
    t.dtype = IR_BF16;
    t.dim[dim] *= 3;
    s = ir_append(m, IR_SPLIT3, &x, 1, &a, &t);
    s->res[0]->sh = x->sh;
    s->loc = op->loc;
    s->rep = op->rep;
    s->phase = op->phase;
    s->task = op->task;
    s->mb = op->mb;
    S->last[key] = s;
    S->at[key] = idx;
    out[(*n)++] = s;
    return s->res[0];
}

int pass_matmul_parts(ir_module *m)
{
    int n0 = m->ops.n, found = 0;
    for (int i = 0; i < n0; i++)
        found += is_f32_matmul(IR_OP(m, i));
    if (!found)
        return 0;
    size_t nv = 2 * ((size_t)m->next_id + 1);
    splits S = {.last = su_alloc(&m->arena, nv * sizeof *S.last),
                .at = su_alloc(&m->arena, nv * sizeof *S.at)};
    memset(S.last, 0, nv * sizeof *S.last);
    ir_op **out = su_alloc(&m->arena, ((size_t)n0 + 2 * (size_t)found) * sizeof *out);
    int n = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *op = IR_OP(m, i);
        if (is_f32_matmul(op)) {
            ir_value *ap = split(m, &S, op, 0, i, out, &n);
            ir_value *bp = split(m, &S, op, 1, i, out, &n);
            op->in = su_alloc(&m->arena, 2 * sizeof *op->in);
            op->in[0] = ap;
            op->in[1] = bp;
            ir_attrs a = *op->a;
            a.parts = true;
            ir_op_set_attrs(m, op, &a);
        }
        out[n++] = op;
    }
    /* ir_append pushed the splits after the n0 ops: room for all of out */
    m->ops.n = 0;
    for (int i = 0; i < n; i++)
        m->ops.v[m->ops.n++] = out[i];
    return found;
}
