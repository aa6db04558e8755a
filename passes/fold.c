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
 * its backward, attn_stats .. attn_dv) reads each of q, k, v and dy that
 * is such a transpose from the transpose's operand instead, with that
 * operand's bit in heads_inner (ops.def), and where its result's one
 * reader is the transpose back, the op makes that transpose's value
 * itself, with the result's bit (the statistics' results, attn_stats',
 * attn_lse's and attn_delta's, keep their forms; attn_grad.c gives
 * attn_delta its heads_inner itself, since its y is attention's result).
 * Each operand on its own: llama.sh's q and k come from the rotation's
 * kernels in [.., H, S, d], its v straight from a transpose. Its kernels
 * index the heads inside each position's row of those operands; the
 * transposes that nothing reads now go. Heads wider than AT_MAX_WIDTH
 * keep theirs (the CUDA backend's tiled kernels take no wider).
 *
 * Grouped-query attention (k and v with G heads for q's H, LANGUAGE.md
 * §12) reaches the partitioner as the frontend writes it: k and v each
 * repeated to H heads by a reshape, an expand and a reshape
 * (frontend/expr.c's repeat_heads), and the gradient of each repeated head
 * summed over its group by autodiff (a reshape to [.., G, H / G, T, e], a
 * sum over the group's axis, a reshape back). Each is a kernel and a
 * buffer H / G times k's size. On each stage's program, before the
 * transposes above, an attention op (attn_lse, attn_stats, attn_dq) whose
 * k and v are such repeats of k0 and v0 by one factor reads k0 and v0
 * instead: its query head h reads key head h / (H / G) (ops.def). attn_dk
 * and attn_dv do too where their result's one reader is that sum over the
 * group (through its reshapes): the op then makes the sum's value itself,
 * each key head's gradient summed over its query heads in the kernel (or
 * where nothing reads it: autodiff leaves attn_dv of a v that needs no
 * gradient, which fuse.c pairs with attn_dk, so it takes the key heads
 * too). The
 * repeats and the sums nothing reads now go. The match is on the local
 * shapes of the partitioned program, which are what its ops compute, so it
 * holds whatever the sharding did to the heads: where the partitioner cut
 * the repeat (k's heads split where G does not divide, a gather between)
 * the pattern is not there and the ops stay as they were. */
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

/* The value x repeats each head of: x = reshape(expand(reshape(k0))),
 * k0 [.., G, T, e] to [.., G, 1, T, e], expanded to [.., G, r, T, e], to
 * [.., G r, T, e] (repeat_heads' form, head h of x being head h / r of
 * k0), with its factor r; NULL where x is not that. */
static ir_value *repeat_source(const ir_value *x, int64_t *r)
{
    const ir_op *b = x->def, *e = b && b->code == IR_RESHAPE ? b->in[0]->def : NULL;
    const ir_op *a = e && e->code == IR_EXPAND ? e->in[0]->def : NULL;
    if (!a || a->code != IR_RESHAPE)
        return NULL;
    ir_value *k0 = a->in[0];
    const ir_type *k = &k0->type, *y = &a->res[0]->type, *ex = &e->res[0]->type;
    int n = k->rank;
    if (n < 3 || x->type.rank != n || y->rank != n + 1 || ex->rank != n + 1)
        return NULL;
    for (int i = 0; i < n + 1; i++) { /* i: y's and ex's dim */
        int64_t want = i < n - 2 ? k->dim[i] : i == n - 2 ? 1 : k->dim[i - 1];
        if (y->dim[i] != want || (i != n - 2 && ex->dim[i] != want))
            return NULL;
    }
    *r = ex->dim[n - 2];
    for (int i = 0; i < n; i++)
        if (x->type.dim[i] != (i == n - 3 ? k->dim[i] * *r : k->dim[i]))
            return NULL;
    return k0;
}

/* The reshape back of the sum over the groups of x (attn_dk's or attn_dv's
 * result [.., G r, T, e], r heads a group): x's one reader a reshape to
 * [.., G, r, T, e], its one reader a sum over the r axis, keeping it, and
 * that one's a reshape to [.., G, T, e] (autodiff's gradient of
 * repeat_source's form); or the sum without keepdims, whose value is then
 * the one returned. NULL where the reads are not that. */
static ir_value *group_sum(const ir_value *x, int64_t g, int64_t r, const int *uses,
                           ir_op *const *reader)
{
    int n = x->type.rank;
    ir_op *a = uses[x->id] == 1 ? reader[x->id] : NULL;
    if (!a || a->code != IR_RESHAPE || a->nres != 1 || a->res[0]->type.rank != n + 1)
        return NULL;
    const ir_type *y = &a->res[0]->type;
    for (int i = 0; i < n + 1; i++) {
        int64_t want = i < n - 3 ? x->type.dim[i] : i == n - 3 ? g : i == n - 2 ? r
                                                                    : x->type.dim[i - 1];
        if (y->dim[i] != want)
            return NULL;
    }
    ir_op *s = uses[a->res[0]->id] == 1 ? reader[a->res[0]->id] : NULL;
    if (!s || s->code != IR_SUM || s->nres != 1 || s->a->axis != n - 2)
        return NULL;
    ir_type want = x->type;
    want.dim[n - 3] = g;
    if (!s->a->keepdims)
        return ir_type_eq(&s->res[0]->type, &want) ? s->res[0] : NULL;
    ir_op *b = uses[s->res[0]->id] == 1 ? reader[s->res[0]->id] : NULL;
    if (!b || b->code != IR_RESHAPE || b->nres != 1 || !ir_type_eq(&b->res[0]->type, &want))
        return NULL;
    return b->res[0];
}

/* The ops reading k and v through repeats (above); returns how many now
 * read them grouped. */
static int fold_groups(ir_module *m)
{
    int n = m->ops.n;
    size_t nv = (size_t)m->next_id + 1;
    int *uses = su_alloc(&m->arena, nv * sizeof *uses);
    ir_op **reader = su_alloc(&m->arena, nv * sizeof *reader);
    memset(uses, 0, nv * sizeof *uses);
    memset(reader, 0, nv * sizeof *reader);
    pass_count_kept_reads(m, uses);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < IR_OP(m, i)->nin; k++) {
            uses[IR_OP(m, i)->in[k]->id]++;
            reader[IR_OP(m, i)->in[k]->id] = IR_OP(m, i);
        }
    /* the reshapes, expands and sums read before: those the folds leave
     * unread go (others that nothing read stay, as they would without) */
    bool *read = su_alloc(&m->arena, (size_t)n * sizeof *read);
    for (int i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        read[i] = (op->code == IR_RESHAPE || op->code == IR_EXPAND || op->code == IR_SUM) &&
                  op->nres == 1 && uses[op->res[0]->id];
    }
    int folded = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        int nt = ir_attn_layout_operands(op->code);
        if (!nt || op->code == IR_ATTN_DELTA || op->a->heads_inner || op->nres != 1 ||
            ir_attn_group(op) != 1)
            continue;
        /* k, and v where the op reads it (attn_dv's third operand is dy) */
        int nkv = op->code == IR_ATTN_LSE || op->code == IR_ATTN_DV ? 1 : 2;
        ir_value *src[2];
        int64_t r = 0, rv = 0;
        src[0] = repeat_source(op->in[1], &r);
        src[1] = nkv == 2 ? repeat_source(op->in[2], &rv) : NULL;
        if (!src[0] || (nkv == 2 && (!src[1] || rv != r)))
            continue;
        ir_value *sum = NULL; /* attn_dk's and attn_dv's: the value it makes now */
        int64_t g = src[0]->type.dim[src[0]->type.rank - 3];
        bool unread = false; /* a gradient nothing reads (of a v that needs none) */
        if (op->code == IR_ATTN_DK || op->code == IR_ATTN_DV) {
            unread = uses[op->res[0]->id] == 0;
            sum = unread ? NULL : group_sum(op->res[0], g, r, uses, reader);
            if (!sum && !unread)
                continue;
        }
        if (unread) /* its key heads alone, as its pair's attn_dk has them */
            op->res[0]->type.dim[op->res[0]->type.rank - 3] = g;
        for (int k = 0; k < nkv; k++) {
            uses[op->in[1 + k]->id]--;
            op->in[1 + k] = src[k];
            uses[src[k]->id]++;
        }
        if (sum) { /* the op makes the sum's value; the reshapes and sum go */
            uses[op->res[0]->id] = 0;
            sum->def->nres = 0;
            sum->def = op;
            sum->res = 0;
            op->res[0] = sum;
        }
        folded++;
    }
    if (!folded)
        return 0;
    /* the repeats and group sums nothing reads now, last first, so that an
     * op's operands count its read gone before their own turn */
    bool *gone = su_alloc(&m->arena, (size_t)n * sizeof *gone);
    for (int i = n - 1; i >= 0; i--) {
        ir_op *op = IR_OP(m, i);
        gone[i] = read[i] && (op->nres == 0 || uses[op->res[0]->id] <= 0);
        for (int k = 0; gone[i] && k < op->nin; k++)
            uses[op->in[k]->id]--;
    }
    int w = 0;
    for (int i = 0; i < n; i++)
        if (!gone[i])
            m->ops.v[w++] = IR_OP(m, i);
    m->ops.n = w;
    return folded;
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
        unsigned mask = 0; /* heads_inner's bits: the operands and result folded */
        bool narrow = true; /* every operand's heads as the tiled kernels take them */
        for (int k = 0; k < nt; k++) {
            const ir_type *t = &op->in[k]->type;
            narrow &= t->rank >= 3 && t->dim[t->rank - 1] <= AT_MAX_WIDTH;
            if (op->in[k]->def && pass_swaps_heads(op->in[k]->def))
                mask |= 1u << k;
        }
        if (!narrow)
            continue;
        ir_op *back = NULL; /* the transpose of the result */
        if (ir_attn_result_swapped(op->code)) {
            const ir_value *r = op->res[0];
            back = uses[r->id] == 1 ? reader[r->id] : NULL;
            if (back && pass_swaps_heads(back) && back->in[0] == r)
                mask |= IR_HEADS_RESULT;
            else
                back = NULL;
        }
        if (!mask)
            continue;
        for (int k = 0; k < nt; k++)
            if (mask >> k & 1) {
                uses[op->in[k]->id]--;
                op->in[k] = op->in[k]->def->in[0];
            }
        ir_attrs a = *op->a;
        a.heads_inner = (uint8_t)mask;
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
    int heads = fold_groups(m) + fold_heads(m);
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
