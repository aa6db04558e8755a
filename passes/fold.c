/* fold.c: transposes folded into the matmuls and the attention that read
 * them (DESIGN.md §3.4).
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
 * op) stay.
 *
 * Attention works on [.., H, S, d] (heads, then positions), and a model
 * makes q, k and v from [.., S, H, d] rows by a transpose of dims -3 and
 * -2, and turns the result back by another. An attention (and each op of
 * its backward, attn_stats .. attn_dv) whose q, k, v and dy are all such
 * transposes reads their operands instead, with heads_inner (ops.def),
 * and where its result's one reader is the transpose back, the op makes
 * that transpose's value itself (the statistics' results, attn_stats',
 * attn_lse's and attn_delta's, keep their forms; attn_grad.c gives
 * attn_delta its heads_inner itself, since its y is attention's result). Its
 * kernels index the heads inside each position's row; the transposes
 * that nothing reads now go. Heads wider than AT_MAX_WIDTH keep theirs
 * (the CUDA backend's tiled kernels take no wider). */
#include "passes.h"
#include "fuse.h"

#include <string.h>

/* Whether t swaps the last two dims of its float operand (rank >= 2) and
 * keeps the others in place. */
static bool swaps_last_two(const ir_op *t)
{
    if (t->code != IR_TRANSPOSE || t->nin != 1 || t->nres != 1)
        return false;
    const ir_type *x = &t->in[0]->type;
    int r = x->rank;
    if (r < 2 || t->a->nlist != r || !ir_dtype_is_float(x->dtype))
        return false;
    for (int i = 0; i < r; i++)
        if (t->a->list[i] != (i == r - 2 ? r - 1 : i == r - 1 ? r - 2 : i))
            return false;
    return true;
}

enum { AT_MAX_WIDTH = PASS_ATTN_MAX_WIDTH };

/* Whether t swaps dims -3 and -2 of its float operand (rank >= 3) and
 * keeps the others in place. */
bool pass_swaps_heads(const ir_op *t)
{
    if (t->code != IR_TRANSPOSE || t->nin != 1 || t->nres != 1)
        return false;
    const ir_type *x = &t->in[0]->type;
    int r = x->rank;
    if (r < 3 || t->a->nlist != r || !ir_dtype_is_float(x->dtype) || x->dim[r - 1] > AT_MAX_WIDTH)
        return false;
    for (int i = 0; i < r; i++)
        if (t->a->list[i] != (i == r - 3 ? r - 2 : i == r - 2 ? r - 3 : i))
            return false;
    return true;
}

void pass_count_kept_reads(const ir_module *m, int *uses)
{
    for (int i = 0; i < m->outputs.n; i++)
        uses[IR_OUTPUT(m, i)->v->id]++;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        uses[u->src->id]++;
        uses[u->v->id]++;
        if (u->grad)
            uses[u->grad->id]++;
    }
    if (m->train.loss)
        uses[m->train.loss->id]++;
}

/* Attention's transposes (above); returns how many ops now hold their
 * heads inner. */
static int fold_heads(ir_module *m)
{
    int n = m->ops.n;
    size_t nv = (size_t)m->next_id + 1;
    int *uses = su_alloc(&m->arena, nv * sizeof *uses);
    ir_op **reader = su_alloc(&m->arena, nv * sizeof *reader);
    bool *dead = su_alloc(&m->arena, n * sizeof *dead);
    memset(uses, 0, nv * sizeof *uses);
    memset(reader, 0, nv * sizeof *reader);
    memset(dead, 0, (size_t)n * sizeof *dead);
    pass_count_kept_reads(m, uses);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < IR_OP(m, i)->nin; k++) {
            uses[IR_OP(m, i)->in[k]->id]++;
            reader[IR_OP(m, i)->in[k]->id] = IR_OP(m, i);
        }
    int folded = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        int nt = ir_attn_layout_operands(op->code);
        if (!nt || op->a->heads_inner || op->nres != 1)
            continue;
        bool ok = true;
        for (int k = 0; k < nt && ok; k++)
            ok = op->in[k]->def && pass_swaps_heads(op->in[k]->def);
        ir_op *back = NULL; /* the transpose of the result */
        if (ok && ir_attn_result_swapped(op->code)) {
            const ir_value *r = op->res[0];
            back = uses[r->id] == 1 ? reader[r->id] : NULL;
            ok = back && pass_swaps_heads(back) && back->in[0] == r;
        }
        if (!ok)
            continue;
        for (int k = 0; k < nt; k++) {
            uses[op->in[k]->id]--;
            op->in[k] = op->in[k]->def->in[0];
        }
        ir_attrs a = *op->a;
        a.heads_inner = true;
        ir_op_set_attrs(m, op, &a);
        if (back) { /* op makes the transpose's value */
            ir_value *v = back->res[0];
            v->def = op;
            v->res = 0;
            op->res[0] = v;
            back->nres = 0; /* dropped below */
        }
        folded++;
    }
    if (!folded)
        return 0;
    int keep = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        bool gone = op->code == IR_TRANSPOSE && (op->nres == 0 || !uses[op->res[0]->id]);
        if (!gone)
            m->ops.v[keep++] = op;
    }
    m->ops.n = keep;
    return folded;
}

int pass_fold_transposes(ir_module *m)
{
    int heads = fold_heads(m);
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
                        !(op->a->trans >> k & 1);
            (fits ? mm : other)[op->in[k]->id]++;
        }
    }
    pass_count_kept_reads(m, other);
    int folded = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        if (op->code != IR_MATMUL || op->nin != 2 || op->in[0] == op->in[1])
            continue;
        for (int k = 0; k < 2; k++) {
            const ir_value *x = op->in[k];
            const ir_op *t = x->def;
            if (!t || !swaps_last_two(t) || other[x->id] || !mm[x->id] ||
                (op->a->trans >> k & 1))
                continue;
            op->in[k] = t->in[0];
            ir_attrs a = *op->a;
            a.trans |= (uint8_t)(1u << k);
            ir_op_set_attrs(m, op, &a);
            folded++;
        }
    }
    if (!folded)
        return heads;
    /* drop the transposes no op reads now (each was read by matmuls only) */
    int keep = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        bool gone = swaps_last_two(op) && !other[op->res[0]->id] && mm[op->res[0]->id];
        if (!gone)
            m->ops.v[keep++] = op;
    }
    m->ops.n = keep;
    return heads + folded;
}
