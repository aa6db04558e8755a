/* plan_base.c: the small pieces of plan.h every part of the runtime uses:
 * dtypes, types, the op table, rank coordinates. */
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[RT_NDTYPES] = {"f32", "f16", "bf16", "i32", "bool"};
static const int dtype_sizes[RT_NDTYPES] = {4, 2, 2, 4, 1};

const char *rt_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < RT_NDTYPES ? dtype_names[dtype] : "?";
}

int rt_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < RT_NDTYPES ? dtype_sizes[dtype] : 0;
}

int64_t rt_type_numel(const rt_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank && i < RT_MAX_RANK; i++)
        n *= t->dim[i];
    return n;
}

int64_t rt_type_bytes(const rt_type *t)
{
    return rt_type_numel(t) * rt_dtype_size(t->dtype);
}

const char *rt_type_str(const rt_type *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "%s[", rt_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && i < RT_MAX_RANK && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

const rt_opinfo rt_ops[RT_NOPS] = {
#define X(e, name, min_in, max_in, cls) {name, min_in, max_in, cls},
#include "runtime/plan/plan_ops.def"
#undef X
};

int rt_op_lookup(const char *name)
{
    for (int i = 0; i < RT_NOPS; i++)
        if (strcmp(rt_ops[i].name, name) == 0)
            return i;
    return -1;
}

bool rt_op_in_place(int op)
{
    switch (op) {
    case RT_OP_ADD: case RT_OP_SUB: case RT_OP_MUL: case RT_OP_DIV: case RT_OP_MAX:
    case RT_OP_MIN: case RT_OP_POW: case RT_OP_GT: case RT_OP_EQ: case RT_OP_GELU_GRAD:
    case RT_OP_SILU_GRAD:
    case RT_OP_NEG: case RT_OP_ABS: case RT_OP_RELU: case RT_OP_GELU: case RT_OP_SILU:
    case RT_OP_TANH: case RT_OP_SIGMOID: case RT_OP_EXP: case RT_OP_LOG: case RT_OP_SQRT:
    case RT_OP_RSQRT: case RT_OP_SIN: case RT_OP_COS:
    case RT_OP_CAST: /* in place only of one type (the check's rt_type_eq): a copy */
    case RT_OP_LESS: case RT_OP_LESS_EQ: case RT_OP_GREATER: case RT_OP_GREATER_EQ:
    case RT_OP_EQUAL: case RT_OP_NOT_EQUAL: case RT_OP_WHERE: case RT_OP_DROPOUT:
    case RT_OP_MOMENTUM: case RT_OP_SGD: case RT_OP_ADAM_M: case RT_OP_ADAM_V:
    case RT_OP_ADAMW:
    case RT_OP_INSERT: /* over its bucket: the rest of it is already in place */
    case RT_OP_ALL_REDUCE: /* as NCCL and MPI allow (comm.h) */
        return true;
    default:
        return false;
    }
}

bool rt_bucket_view(const rt_instr *in, int i, int64_t in_off, int64_t out_off)
{
    const rt_type *b = &in->in_t[0];
    /* asked before the plan's check of the offset (the memory rule comes
     * first), so an offset outside the bucket is no view, not an overflow */
    if (b->rank != 2 || b->dim[0] != 1 || in->offset < 0 || in->offset > b->dim[1])
        return false;
    int64_t at = in->offset * rt_dtype_size(b->dtype);
    if (in->op == RT_OP_EXTRACT)
        return i == 0 && out_off == in_off + at;
    return in->op == RT_OP_INSERT && i == 1 && in_off == out_off + at;
}

int64_t rt_plan_ranks(const rt_plan *p)
{
    int64_t n = 1;
    for (int a = 0; a < p->naxes; a++)
        n *= p->axis_size[a];
    return n;
}

void rt_plan_coords(const rt_plan *p, int64_t r, int64_t coord[RT_MAX_AXES])
{
    for (int a = p->naxes - 1; a >= 0; a--) {
        coord[a] = r % p->axis_size[a];
        r /= p->axis_size[a];
    }
    for (int a = p->naxes; a < RT_MAX_AXES; a++)
        coord[a] = 0;
}

const char *rt_instr_where(const rt_plan *p, const rt_instr *in, char *buf, size_t size)
{
    if (p->source && *p->source && in->line > 0)
        snprintf(buf, size, "%s:%d:%d: ", p->source, (int)in->line, (int)in->col);
    else if (size)
        buf[0] = 0;
    return buf;
}

rt_mm_dims rt_matmul_dims(const rt_instr *in)
{
    const rt_type *a = &in->in_t[0], *b = &in->in_t[1];
    rt_mm_dims d = {.ta = a->rank >= 2 && (in->dim & RT_TRANS_A),
                    .tb = b->rank >= 2 && (in->dim & RT_TRANS_B)};
    d.k = a->dim[a->rank - 1 - d.ta];
    d.m = a->rank >= 2 ? a->dim[a->rank - 2 + d.ta] : 1;
    d.n = b->rank >= 2 ? b->dim[b->rank - 1 - d.tb] : 1;
    return d;
}

int rt_attn_layout_operands(int op)
{
    switch (op) {
    case RT_OP_ATTENTION:
    case RT_OP_ATTN_DV: return 3;
    case RT_OP_ATTN_STATS:
    case RT_OP_ATTN_DQ:
    case RT_OP_ATTN_DK: return 4;
    case RT_OP_ATTN_LSE:
    case RT_OP_ATTN_DELTA: return 2;
    default: return 0;
    }
}

int64_t rt_attn_group(const rt_instr *in)
{
    if (!rt_attn_layout_operands(in->op) || in->op == RT_OP_ATTN_DELTA || in->nin < 2)
        return 1;
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1];
    int r = q->rank, hq = in->keepdims & 1 ? r - 2 : r - 3, hk = in->keepdims & 2 ? r - 2 : r - 3;
    if (r < 3 || k->rank != r || k->dim[hk] <= 0 || k->dim[hk] >= q->dim[hq])
        return 1;
    return q->dim[hq] / k->dim[hk];
}

unsigned rt_heads_all(int op)
{
    int nt = rt_attn_layout_operands(op);
    return nt ? ((1u << nt) - 1) | (rt_attn_result_swapped(op) ? RT_HEADS_RESULT : 0) : 0;
}

bool rt_attn_result_swapped(int op)
{
    return rt_attn_layout_operands(op) && op != RT_OP_ATTN_STATS && op != RT_OP_ATTN_LSE &&
           op != RT_OP_ATTN_DELTA;
}

rt_type rt_type_swap_heads(const rt_type *t)
{
    rt_type s = *t;
    int r = t->rank;
    s.dim[r - 3] = t->dim[r - 2];
    s.dim[r - 2] = t->dim[r - 3];
    return s;
}

void *rt_plan_alloc(rt_plan *p, size_t count, size_t size)
{
    size_t n;
    if (count == 0 || __builtin_mul_overflow(count, size, &n) || n > SIZE_MAX - sizeof(rt_block))
        return NULL;
    rt_block *b = calloc(1, sizeof(rt_block) + n);
    if (!b)
        return NULL;
    b->next = p->mem_;
    p->mem_ = b;
    return b->data;
}

void rt_plan_free_blocks(void *mem)
{
    for (rt_block *b = mem, *next; b; b = next) {
        next = b->next;
        free(b);
    }
}
