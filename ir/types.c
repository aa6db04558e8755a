/* types.c: the IR's vocabulary: dtypes, types, meshes, shardings, the op
 * table and phase names. Everything here is a leaf: it calls nothing else
 * of the IR. */
#include "ir.h"

#include <stdio.h>
#include <string.h>

/* ---- dtypes and types ---- */

static const struct {
    const char *name;
    int size;
    bool is_float;
} dtypes[IR_NDTYPES] = {
    [IR_F32] = {"f32", 4, true},
    [IR_F16] = {"f16", 2, true},
    [IR_BF16] = {"bf16", 2, true},
    [IR_I32] = {"i32", 4, false},
    [IR_BOOL] = {"bool", 1, false},
};

const char *ir_dtype_name(ir_dtype t) { return dtypes[t].name; }
int ir_dtype_size(ir_dtype t) { return dtypes[t].size; }
bool ir_dtype_is_float(ir_dtype t) { return dtypes[t].is_float; }

bool ir_dtype_lookup(const char *s, size_t n, ir_dtype *out)
{
    for (int i = 0; i < IR_NDTYPES; i++)
        if (strlen(dtypes[i].name) == n && !memcmp(dtypes[i].name, s, n)) {
            *out = (ir_dtype)i;
            return true;
        }
    return false;
}

int64_t ir_type_numel(const ir_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dim[i];
    return n;
}

bool ir_shape_eq(const ir_type *a, const ir_type *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

bool ir_type_eq(const ir_type *a, const ir_type *b)
{
    return a->dtype == b->dtype && ir_shape_eq(a, b);
}

void ir_type_print(su_buf *b, const ir_type *t)
{
    su_buf_printf(b, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    su_buf_putc(b, ']');
}

/* ---- meshes and shardings ---- */

int ir_mesh_axis(const ir_mesh *m, const char *name, size_t n)
{
    for (int i = 0; i < m->naxes; i++)
        if (strlen(m->name[i]) == n && !memcmp(m->name[i], name, n))
            return i;
    return -1;
}

int64_t ir_mesh_ranks(const ir_mesh *m)
{
    int64_t n = 1;
    for (int i = 0; i < m->naxes; i++)
        n *= m->size[i];
    return n;
}

int64_t ir_sharding_split(const ir_sharding *s, const ir_mesh *m, int d)
{
    int64_t n = 1;
    for (int i = 0; i < s->naxes[d]; i++)
        n *= m->size[s->axes[d][i]];
    return n;
}

bool ir_sharding_eq(const ir_sharding *a, const ir_sharding *b, int rank)
{
    if (a->kind != b->kind || a->partial != b->partial)
        return false;
    for (int d = 0; d < rank; d++) {
        if (a->naxes[d] != b->naxes[d])
            return false;
        for (int i = 0; i < a->naxes[d]; i++)
            if (a->axes[d][i] != b->axes[d][i])
                return false;
    }
    return true;
}

void ir_sharding_print(su_buf *b, const ir_sharding *s, const ir_mesh *m, int rank)
{
    if (s->kind == IR_SH_NONE)
        return;
    su_buf_puts(b, s->kind == IR_SH_FIXED ? "shard(" : "auto(");
    for (int d = 0; d < rank; d++) {
        if (d)
            su_buf_puts(b, ", ");
        if (s->naxes[d] == 0)
            su_buf_putc(b, '_');
        else if (s->naxes[d] == 1)
            su_buf_puts(b, m->name[s->axes[d][0]]);
        else {
            su_buf_putc(b, '(');
            for (int i = 0; i < s->naxes[d]; i++)
                su_buf_printf(b, "%s%s", i ? ", " : "", m->name[s->axes[d][i]]);
            su_buf_putc(b, ')');
        }
    }
    su_buf_putc(b, ')');
    if (s->partial) {
        su_buf_puts(b, " partial(");
        bool first = true;
        for (int a = 0; a < m->naxes; a++)
            if (s->partial & (1u << a)) {
                su_buf_printf(b, "%s%s", first ? "" : ", ", m->name[a]);
                first = false;
            }
        su_buf_putc(b, ')');
    }
}

/* ---- the op table ---- */

const ir_opinfo ir_ops[IR_NOPS] = {
#define X(e, nm, mn, mx, nr, at, cl) [IR_##e] = {nm, mn, mx, nr, at, cl},
#include "ops.def"
#undef X
};

int ir_op_lookup(const char *s, size_t n)
{
    for (int i = 0; i < IR_NOPS; i++)
        if (strlen(ir_ops[i].name) == n && !memcmp(ir_ops[i].name, s, n))
            return i;
    return -1;
}

const char *ir_op_display(ir_opcode code)
{
    switch (code) {
    case IR_ADD: return "+";
    case IR_SUB: return "-";
    case IR_MUL: return "*";
    case IR_DIV: return "/";
    case IR_MATMUL: return "@";
    case IR_NEG: return "-";
    case IR_LESS: return "<";
    case IR_LESS_EQ: return "<=";
    case IR_GREATER: return ">";
    case IR_GREATER_EQ: return ">=";
    case IR_EQUAL: return "==";
    case IR_NOT_EQUAL: return "!=";
    case IR_CONSTRAIN: return "shard";
    case IR_NARROW: return "[:]"; /* x[a:b], as a user writes it */
    default: return ir_ops[code].name;
    }
}

bool ir_pointwise(ir_opcode code)
{
    switch (code) {
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MAX: case IR_MIN: case IR_POW:
    case IR_GT: case IR_EQ: case IR_GELU_GRAD: case IR_SILU_GRAD: case IR_LESS:
    case IR_LESS_EQ: case IR_GREATER: case IR_GREATER_EQ: case IR_EQUAL: case IR_NOT_EQUAL:
    case IR_WHERE: case IR_NEG: case IR_ABS: case IR_RELU: case IR_GELU: case IR_SILU:
    case IR_TANH: case IR_SIGMOID: case IR_EXP: case IR_LOG: case IR_SQRT: case IR_RSQRT:
    case IR_SIN: case IR_COS: case IR_CAST:
        return true;
    default:
        return false;
    }
}

float ir_const_f32(double v, ir_dtype t)
{
    float f = (float)v;
    switch (t) {
    case IR_BF16: return su_bf16_to_f32(su_f32_to_bf16(f));
    case IR_F16: return su_f16_to_f32(su_f32_to_f16(f));
    default: return f;
    }
}

/* ---- phases ---- */

const char *ir_phase_name(ir_phase ph)
{
    static const char *const names[IR_NPHASES] = {"forward", "backward", "optimizer"};
    return (int)ph >= 0 && ph < IR_NPHASES ? names[ph] : "?";
}

int ir_attn_layout_operands(ir_opcode code)
{
    switch (code) {
    case IR_ATTENTION:
    case IR_ATTN_DV: return 3;
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
    case IR_ATTN_DK: return 4;
    case IR_ATTN_LSE:
    case IR_ATTN_DELTA: return 2;
    default: return 0;
    }
}

bool ir_attn_result_swapped(ir_opcode code)
{
    return ir_attn_layout_operands(code) && code != IR_ATTN_STATS && code != IR_ATTN_LSE &&
           code != IR_ATTN_DELTA;
}

unsigned ir_heads_all(ir_opcode code)
{
    int nt = ir_attn_layout_operands(code);
    return nt ? ((1u << nt) - 1) | (ir_attn_result_swapped(code) ? IR_HEADS_RESULT : 0) : 0;
}

const char *ir_heads_name(ir_opcode code, int bit)
{
    static const char *const qkv[] = {"q", "k", "v", "dy"}, *const qkdy[] = {"q", "k", "dy"},
                             *const ydy[] = {"y", "dy"};
    if (!(ir_heads_all(code) >> bit & 1))
        return NULL;
    if (1 << bit == IR_HEADS_RESULT)
        return "result";
    return code == IR_ATTN_DV ? qkdy[bit] : code == IR_ATTN_DELTA ? ydy[bit] : qkv[bit];
}

bool ir_heads_in(const ir_op *op, int i)
{
    if (i < 0)
        return op->a->heads_inner & IR_HEADS_RESULT;
    return i < ir_attn_layout_operands(op->code) && (op->a->heads_inner >> i & 1);
}

int64_t ir_attn_group(const ir_op *op)
{
    if (!ir_attn_layout_operands(op->code) || op->code == IR_ATTN_DELTA || op->nin < 2)
        return 1;
    const ir_type *q = &op->in[0]->type, *k = &op->in[1]->type;
    int r = q->rank, hq = ir_heads_in(op, 0) ? r - 2 : r - 3, hk = ir_heads_in(op, 1) ? r - 2 : r - 3;
    if (r < 3 || k->rank != r || k->dim[hk] <= 0 || k->dim[hk] >= q->dim[hq])
        return 1;
    return q->dim[hq] / k->dim[hk];
}

ir_type ir_type_swap_heads(const ir_type *t)
{
    ir_type s = *t;
    int r = t->rank;
    s.dim[r - 3] = t->dim[r - 2];
    s.dim[r - 2] = t->dim[r - 3];
    return s;
}
