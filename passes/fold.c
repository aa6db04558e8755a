/* fold.c: transposes read only by matmuls folded into them (DESIGN.md
 * §3.4).
 *
 * Autodiff writes a linear layer's gradients with transposes: dx = dy @
 * transpose(w), dw = transpose(x) @ dy, and after partitioning each is a
 * local transpose, a copy of the whole operand that lives until the
 * product reads it. BLAS reads an operand transposed at no cost (sgemm's
 * and cuBLASLt's trans flags), so on each stage's program, after the
 * pipeline split, a transpose that swaps the last two dims of a float
 * value and is read by nothing but matmuls, each as one operand, goes:
 * each of those matmuls reads the transpose's operand with its trans bit
 * for that side (ops.def, IR_A_TRANS). The matmul computes the same sums
 * in the same order; the copy and its buffer are gone. Transposes of i32,
 * of vectors, and of values that anything else reads (an output, another
 * op) stay. */
#include "passes.h"

#include <string.h>

/* Whether t swaps the last two dims of its float operand (rank >= 2) and
 * keeps the others in place. */
static bool swaps_last_two(const ir_op *t)
{
    if (t->code != IR_TRANSPOSE || t->nin != 1 || t->nres != 1)
        return false;
    const ir_type *x = &t->in[0]->type;
    int r = x->rank;
    if (r < 2 || t->a.nlist != r || !ir_dtype_is_float(x->dtype))
        return false;
    for (int i = 0; i < r; i++)
        if (t->a.list[i] != (i == r - 2 ? r - 1 : i == r - 1 ? r - 2 : i))
            return false;
    return true;
}

int pass_fold_transposes(ir_module *m)
{
    int n = m->ops.n;
    size_t nv = (size_t)m->next_id + 1;
    /* by value id: reads by ops other than a matmul's operand it may fold
     * into (or by outputs, updates and the loss), and reads by matmuls */
    int *other = su_alloc(&m->arena, nv * sizeof *other);
    int *mm = su_alloc(&m->arena, nv * sizeof *mm);
    memset(other, 0, nv * sizeof *other);
    memset(mm, 0, nv * sizeof *mm);
    for (int i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            bool fits = op->code == IR_MATMUL && op->nin == 2 && op->in[0] != op->in[1] &&
                        !(op->a.trans >> k & 1);
            (fits ? mm : other)[op->in[k]->id]++;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        other[IR_OUTPUT(m, i)->v->id]++;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        other[u->src->id]++;
        other[u->v->id]++;
        if (u->grad)
            other[u->grad->id]++;
    }
    if (m->train.loss)
        other[m->train.loss->id]++;
    int folded = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        if (op->code != IR_MATMUL || op->nin != 2 || op->in[0] == op->in[1])
            continue;
        for (int k = 0; k < 2; k++) {
            const ir_value *x = op->in[k];
            const ir_op *t = x->def;
            if (!t || !swaps_last_two(t) || other[x->id] || !mm[x->id] ||
                (op->a.trans >> k & 1))
                continue;
            op->in[k] = t->in[0];
            op->a.trans |= (uint8_t)(1u << k);
            folded++;
        }
    }
    if (!folded)
        return 0;
    /* drop the transposes no op reads now (each was read by matmuls only) */
    int keep = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        bool gone = swaps_last_two(op) && !other[op->res[0]->id] && mm[op->res[0]->id];
        if (!gone)
            m->ops.v[keep++] = op;
    }
    m->ops.n = keep;
    return folded;
}
