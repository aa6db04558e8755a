/* cpu.c: the CPU compute backend (cpu.h): rt_cpu_run's dispatch, the
 * f16/bf16 conversions, and every kernel but matmul, attention and
 * attn_probs (cpu_matmul.c).
 *
 * Float kernels are written for f32 only. An instruction on f16 or bf16
 * runs promoted (run_promoted): its half-precision operands are widened into
 * f32 scratch, the f32 kernel runs, and the result is rounded back to
 * nearest even. Layout ops (copy, transpose, slice, embedding, expand) move
 * bytes and work on every dtype; cast converts directly. i32 has its own
 * paths where the ops allow it (elementwise, gt, eq, sum, amax, matmul).
 *
 * Everything here is reentrant: ranks call rt_cpu_run from their own
 * threads; scratch memory is malloc'd and freed inside the call.
 */
#include "runtime/cpu/cpu_internal.h"
#include "support/support.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *scratch(size_t bytes, const char *op, su_status *err)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        su_fail(err, SU_NOMEM, "out of memory: %s needs %zu bytes of scratch", op, bytes);
    return p;
}

/* Widens n elements of a float dtype into f32. */
static void load_f32(float *dst, const void *src, int dtype, int64_t n)
{
    const uint16_t *h = src;
    if (dtype == RT_F32)
        memcpy(dst, src, (size_t)n * sizeof *dst);
    else if (dtype == RT_F16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = su_f16_to_f32(h[i]);
    else
        for (int64_t i = 0; i < n; i++)
            dst[i] = su_bf16_to_f32(h[i]);
}

/* Rounds n f32 values into a float dtype. */
static void store_f32(void *dst, const float *src, int dtype, int64_t n)
{
    uint16_t *h = dst;
    if (dtype == RT_F32)
        memcpy(dst, src, (size_t)n * sizeof *src);
    else if (dtype == RT_F16)
        for (int64_t i = 0; i < n; i++)
            h[i] = su_f32_to_f16(src[i]);
    else
        for (int64_t i = 0; i < n; i++)
            h[i] = su_f32_to_bf16(src[i]);
}

/* ---- cast ---- */

/* Toward zero, saturating at the int32 range; nan is 0. */
static int32_t f32_to_i32(float f)
{
    if (f != f)
        return 0;
    if (f >= 2147483648.0f)
        return INT32_MAX;
    if (f <= -2147483648.0f)
        return INT32_MIN;
    return (int32_t)f;
}

/* v rounded to odd at f32's 24 bits, so that rounding that to f16 or bf16
 * (11 or 8 bits) to nearest even gives v correctly rounded, once. */
static float i32_to_f32_odd(int32_t v)
{
    uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    int s = 0;
    while ((a >> s) >= (1u << 24))
        s++;
    uint32_t keep = (a >> s) | ((a & ((1u << s) - 1)) != 0);
    float f = ldexpf((float)keep, s);
    return v < 0 ? -f : f;
}

static void cast_one(const void *src, int sd, int64_t i, void *dst, int dd, int64_t j)
{
    if (sd == RT_I32 || sd == RT_BOOL) {
        int32_t v = sd == RT_BOOL ? ((const uint8_t *)src)[i] != 0 : ((const int32_t *)src)[i];
        if (dd == RT_BOOL)
            ((uint8_t *)dst)[j] = v != 0;
        else if (dd == RT_I32)
            ((int32_t *)dst)[j] = v;
        else if (dd == RT_F32)
            ((float *)dst)[j] = (float)v;
        else if (dd == RT_F16)
            ((uint16_t *)dst)[j] = su_f32_to_f16(i32_to_f32_odd(v));
        else
            ((uint16_t *)dst)[j] = su_f32_to_bf16(i32_to_f32_odd(v));
        return;
    }
    /* Every float source widens to f32 exactly. */
    float f = sd == RT_F32   ? ((const float *)src)[i]
              : sd == RT_F16 ? su_f16_to_f32(((const uint16_t *)src)[i])
                             : su_bf16_to_f32(((const uint16_t *)src)[i]);
    if (dd == RT_BOOL)
        ((uint8_t *)dst)[j] = f != 0; /* nan is true, as in Python */
    else if (dd == RT_I32)
        ((int32_t *)dst)[j] = f32_to_i32(f);
    else if (dd == RT_F32)
        ((float *)dst)[j] = f;
    else if (dd == RT_F16)
        ((uint16_t *)dst)[j] = su_f32_to_f16(f);
    else
        ((uint16_t *)dst)[j] = su_f32_to_bf16(f);
}

/* In place (x == y) works: a widening cast walks backwards, so no element
 * is overwritten before it is read. */
static int k_cast(const rt_instr *in, const void *x, void *y)
{
    int sd = in->in_t[0].dtype, dd = in->out_t.dtype;
    int64_t n = rt_type_numel(&in->out_t);
    if (sd == dd) {
        memmove(y, x, (size_t)rt_type_bytes(&in->out_t));
        return 0;
    }
    if (rt_dtype_size(dd) > rt_dtype_size(sd))
        for (int64_t i = n - 1; i >= 0; i--)
            cast_one(x, sd, i, y, dd, i);
    else
        for (int64_t i = 0; i < n; i++)
            cast_one(x, sd, i, y, dd, i);
    return 0;
}

/* split3 (plan_ops.def): x [outer, K, inner] f32 into bf16 parts [outer,
 * 3, K, inner], h m l, or l m h (dim2 1); where h is not finite (x inf or
 * NaN, or past bf16's largest), m and l are 0. */
static int k_split3(const rt_instr *in, const float *x, uint16_t *y)
{
    const rt_type *t = &in->in_t[0];
    int64_t k = t->dim[in->dim], inner = 1;
    for (int d = (int)in->dim + 1; d < t->rank; d++)
        inner *= t->dim[d];
    int64_t per = k * inner, n = rt_type_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t o = i / per, r = i % per;
        uint16_t h = su_f32_to_bf16(x[i]);
        float hf = su_bf16_to_f32(h);
        float rest = isfinite(hf) ? x[i] - hf : 0.0f; /* inf, NaN: h alone */
        uint16_t m = su_f32_to_bf16(rest);
        uint16_t l = su_f32_to_bf16(rest - su_bf16_to_f32(m));
        uint16_t *q = y + o * 3 * per + r;
        q[in->dim2 ? 2 * per : 0] = h;
        q[per] = m;
        q[in->dim2 ? 0 : 2 * per] = l;
    }
    return 0;
}

/* ---- walking shapes ---- */

/* Advances the row-major index idx over dims d[0..n-1] by one, moving two
 * offsets along with strides s0 and s1. */
static void walk_step(int n, const int64_t *d, int64_t *idx, const int64_t *s0, int64_t *o0,
                      const int64_t *s1, int64_t *o1)
{
    for (int i = n - 1; i >= 0; i--) {
        *o0 += s0[i];
        *o1 += s1[i];
        if (++idx[i] < d[i])
            return;
        *o0 -= s0[i] * d[i];
        *o1 -= s1[i] * d[i];
        idx[i] = 0;
    }
}

/* A binary op's iteration space: the result's shape with dims of 1 dropped
 * and adjacent dims merged where both operands are contiguous (or both
 * broadcast) across them. Equal shapes become one dim of strides (1, 1), a
 * bias add [B, S, D] + [D] two dims, strides (D, 1) and (0, 1). */
typedef struct bplan {
    int r;                         /* >= 1 */
    int64_t d[RT_MAX_RANK];
    int64_t s[2][RT_MAX_RANK];     /* element strides of a and b; 0 broadcasts */
} bplan;

/* The element strides of operand t over a result of rank r, NumPy's
 * broadcasting: 0 along a dim t has as 1 or lacks. */
static void bcast_strides(const rt_type *t, int r, int64_t *st)
{
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - t->rank);
        int64_t dj = j >= 0 ? t->dim[j] : 1;
        st[i] = dj == 1 ? 0 : acc;
        acc *= dj;
    }
}

static void bplan_make(const rt_type *ta, const rt_type *tb, const rt_type *to, bplan *p)
{
    int r = to->rank;
    int64_t st[2][RT_MAX_RANK];
    bcast_strides(ta, r, st[0]);
    bcast_strides(tb, r, st[1]);
    p->r = 0;
    for (int i = 0; i < r; i++) {
        int64_t di = to->dim[i];
        if (di == 1)
            continue;
        int q = p->r - 1;
        if (q >= 0 && p->s[0][q] == st[0][i] * di && p->s[1][q] == st[1][i] * di) {
            p->d[q] *= di;
            p->s[0][q] = st[0][i];
            p->s[1][q] = st[1][i];
        } else {
            p->d[++q] = di;
            p->s[0][q] = st[0][i];
            p->s[1][q] = st[1][i];
            p->r++;
        }
    }
    if (p->r == 0) {
        p->r = 1;
        p->d[0] = 1;
        p->s[0][0] = p->s[1][0] = 0;
    }
}

/* ---- scalar functions ---- */

static float sigmoidf(float v)
{
    if (v >= 0)
        return 1.0f / (1.0f + expf(-v));
    float e = expf(v); /* never overflows for v < 0 */
    return e / (1.0f + e);
}

static float geluf(float v)
{
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
}

/* d/dv of geluf: 0.5 (1 + tanh u) + 0.5 v (1 - tanh^2 u) u', with
 * u = c (v + 0.044715 v^3) and u' = c (1 + 3 * 0.044715 v^2). */
static float gelu_gradf(float v)
{
    const float c = 0.7978845608028654f;
    float th = tanhf(c * (v + 0.044715f * v * v * v));
    return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * c * (1.0f + 0.134145f * v * v);
}

/* d/dv of v sigmoid(v) = s (1 + v (1 - s)). */
static float silu_gradf(float v)
{
    float s = sigmoidf(v);
    return s * (1.0f + v * (1.0f - s));
}

/* One row of n results with operand strides 0 or 1, specialised so that the
 * common cases vectorise. X and Y name the operands in EXPR. */
#define ROW_LOOP(T, EXPR)                                                    \
    do {                                                                     \
        if (sa && sb) {                                                      \
            for (int64_t i = 0; i < n; i++) {                                \
                T X = a[i], Y = b[i];                                        \
                o[i] = (EXPR);                                               \
            }                                                                \
        } else if (sa) {                                                     \
            T Y = b[0];                                                      \
            for (int64_t i = 0; i < n; i++) {                                \
                T X = a[i];                                                  \
                o[i] = (EXPR);                                               \
            }                                                                \
        } else if (sb) {                                                     \
            T X = a[0];                                                      \
            for (int64_t i = 0; i < n; i++) {                                \
                T Y = b[i];                                                  \
                o[i] = (EXPR);                                               \
            }                                                                \
        } else {                                                             \
            T X = a[0], Y = b[0];                                            \
            T v_ = (EXPR);                                                   \
            for (int64_t i = 0; i < n; i++)                                  \
                o[i] = v_;                                                   \
        }                                                                    \
    } while (0)

static void bin_row_f32(int op, float *o, const float *a, int64_t sa, const float *b, int64_t sb,
                        int64_t n)
{
    switch (op) {
    case RT_OP_ADD: ROW_LOOP(float, X + Y); break;
    case RT_OP_SUB: ROW_LOOP(float, X - Y); break;
    case RT_OP_MUL: ROW_LOOP(float, X * Y); break;
    case RT_OP_DIV: ROW_LOOP(float, X / Y); break;
    /* nan in either operand gives nan, as NumPy's maximum and minimum */
    case RT_OP_MAX: ROW_LOOP(float, X > Y || X != X ? X : Y); break;
    case RT_OP_MIN: ROW_LOOP(float, X < Y || X != X ? X : Y); break;
    case RT_OP_GT: ROW_LOOP(float, X > Y ? 1.0f : 0.0f); break;
    case RT_OP_EQ: ROW_LOOP(float, X == Y ? 1.0f : 0.0f); break;
    case RT_OP_GELU_GRAD: ROW_LOOP(float, Y * gelu_gradf(X)); break; /* (x, dy) */
    case RT_OP_SILU_GRAD: ROW_LOOP(float, Y * silu_gradf(X)); break;
    default: ROW_LOOP(float, powf(X, Y)); break;
    }
}

/* i32 wraps on overflow (two's complement), as the hardware does. */
#define WRAP(e) ((int32_t)(uint32_t)(e))

static int bin_row_i32(int op, int32_t *o, const int32_t *a, int64_t sa, const int32_t *b,
                       int64_t sb, int64_t n)
{
    switch (op) {
    case RT_OP_ADD: ROW_LOOP(int32_t, WRAP((uint32_t)X + (uint32_t)Y)); break;
    case RT_OP_SUB: ROW_LOOP(int32_t, WRAP((uint32_t)X - (uint32_t)Y)); break;
    case RT_OP_MUL: ROW_LOOP(int32_t, WRAP((uint32_t)X * (uint32_t)Y)); break;
    case RT_OP_MAX: ROW_LOOP(int32_t, X > Y ? X : Y); break;
    case RT_OP_MIN: ROW_LOOP(int32_t, X < Y ? X : Y); break;
    case RT_OP_GT: ROW_LOOP(int32_t, X > Y); break;
    case RT_OP_EQ: ROW_LOOP(int32_t, X == Y); break;
    case RT_OP_DIV:
        for (int64_t i = 0; i < n; i++) {
            int32_t X = a[i * sa], Y = b[i * sb];
            if (Y == 0)
                return (int)i;
            o[i] = X == INT32_MIN && Y == -1 ? INT32_MIN : X / Y; /* C truncation */
        }
        break;
    default: break;
    }
    return -1;
}

/* add sub mul div max min pow gt eq gelu_grad silu_grad: NumPy
 * broadcasting, one row of the coalesced shape at a time. */
static int k_binary(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    int op = in->op, i32 = in->out_t.dtype == RT_I32;
    const char *name = rt_ops[op].name;
    if (i32 && (op == RT_OP_POW || op == RT_OP_GELU_GRAD || op == RT_OP_SILU_GRAD))
        return su_fail(err, SU_INPUT, "%s of i32 is not supported", name);
    bplan p;
    bplan_make(&in->in_t[0], &in->in_t[1], &in->out_t, &p);
    int r = p.r;
    int64_t n = p.d[r - 1], rows = 1, idx[RT_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int i = 0; i + 1 < r; i++)
        rows *= p.d[i];
    for (int64_t row = 0; row < rows; row++) {
        if (i32) {
            int bad = bin_row_i32(op, (int32_t *)y + row * n, (const int32_t *)x[0] + oa,
                                  p.s[0][r - 1], (const int32_t *)x[1] + ob, p.s[1][r - 1], n);
            if (bad >= 0)
                return su_fail(err, SU_INPUT, "%s: i32 division by zero at result index %lld", name,
                            (long long)(row * n + bad));
        } else {
            bin_row_f32(op, (float *)y + row * n, (const float *)x[0] + oa, p.s[0][r - 1],
                        (const float *)x[1] + ob, p.s[1][r - 1], n);
        }
        walk_step(r - 1, p.d, idx, p.s[0], &oa, p.s[1], &ob);
    }
    return 0;
}

/* ---- comparisons and where ---- */

#define CMP_ROW(T)                                                           \
    do {                                                                     \
        const T *a = pa, *b = pb;                                            \
        for (int64_t i = 0; i < n; i++) {                                    \
            T X = a[i * sa], Y = b[i * sb];                                  \
            o[i] = op == RT_OP_LESS         ? X < Y                          \
                   : op == RT_OP_LESS_EQ    ? X <= Y                         \
                   : op == RT_OP_GREATER    ? X > Y                          \
                   : op == RT_OP_GREATER_EQ ? X >= Y                         \
                   : op == RT_OP_EQUAL      ? X == Y                         \
                                            : X != Y;                        \
        }                                                                    \
    } while (0)

/* less .. not_equal: f32 (f16 and bf16 promoted, exactly), i32 or bool
 * operands, a bool result; nan compares unequal to everything, as IEEE. */
static int k_compare(const rt_instr *in, const void *const *x, void *y)
{
    int op = in->op, dt = in->in_t[0].dtype;
    bplan p;
    bplan_make(&in->in_t[0], &in->in_t[1], &in->out_t, &p);
    int r = p.r;
    int64_t n = p.d[r - 1], rows = 1, idx[RT_MAX_RANK] = {0}, oa = 0, ob = 0;
    int64_t sa = p.s[0][r - 1], sb = p.s[1][r - 1];
    for (int i = 0; i + 1 < r; i++)
        rows *= p.d[i];
    for (int64_t row = 0; row < rows; row++) {
        uint8_t *o = (uint8_t *)y + row * n;
        if (dt == RT_F32) {
            const float *pa = (const float *)x[0] + oa, *pb = (const float *)x[1] + ob;
            CMP_ROW(float);
        } else if (dt == RT_I32) {
            const int32_t *pa = (const int32_t *)x[0] + oa, *pb = (const int32_t *)x[1] + ob;
            CMP_ROW(int32_t);
        } else {
            const uint8_t *pa = (const uint8_t *)x[0] + oa, *pb = (const uint8_t *)x[1] + ob;
            CMP_ROW(uint8_t);
        }
        walk_step(r - 1, p.d, idx, p.s[0], &oa, p.s[1], &ob);
    }
    return 0;
}
#undef CMP_ROW

/* where(c, a, b): element copies of any dtype, each operand broadcast by
 * its own strides; in place over a or b works (each element is read
 * before it is written). */
static int k_where(const rt_instr *in, const void *const *x, void *y)
{
    const rt_type *to = &in->out_t;
    int r = to->rank;
    int64_t st[3][RT_MAX_RANK], idx[RT_MAX_RANK] = {0}, off[3] = {0};
    for (int k = 0; k < 3; k++)
        bcast_strides(&in->in_t[k], r, st[k]);
    const uint8_t *c = x[0];
    size_t es = (size_t)rt_dtype_size(to->dtype);
    int64_t n = rt_type_numel(to);
    for (int64_t e = 0; e < n; e++) {
        const char *src = c[off[0]] ? (const char *)x[1] + (size_t)off[1] * es
                                    : (const char *)x[2] + (size_t)off[2] * es;
        memmove((char *)y + (size_t)e * es, src, es);
        for (int i = r - 1; i >= 0; i--) {
            for (int k = 0; k < 3; k++)
                off[k] += st[k][i];
            if (++idx[i] < to->dim[i])
                break;
            for (int k = 0; k < 3; k++)
                off[k] -= st[k][i] * to->dim[i];
            idx[i] = 0;
        }
    }
    return 0;
}

/* ---- dropout ---- */

/* Element by element (f32; f16 and bf16 promoted): its local coordinates,
 * their global ones (a pos operand's entry along a split dim, a
 * microbatch's rows offset along dim), the global index mod 2^32, its
 * bits against the threshold. In place works. */
static int k_dropout(const rt_instr *in, const void *const *x, void *y)
{
    const rt_type *t = &in->in_t[0];
    const float *a = x[0];
    float *o = y;
    int32_t key = *(const int32_t *)x[1];
    const int32_t *pos[RT_MAX_RANK] = {0};
    for (int d = 0, k = 2; d < t->rank; d++)
        if (in->dim2 >> d & 1)
            pos[d] = x[k++];
    uint32_t thr = rt_dropout_threshold(in->value);
    float scale = (float)(1.0 / (1.0 - in->value));
    int64_t n = rt_type_numel(t);
    for (int64_t e = 0; e < n; e++) {
        uint32_t g = 0, stride = 1;
        int64_t r = e;
        for (int d = t->rank - 1; d >= 0; d--) {
            int64_t c = r % t->dim[d] + (d == in->dim ? in->offset : 0);
            r /= t->dim[d];
            uint32_t gc = pos[d] ? (uint32_t)pos[d][c] : (uint32_t)c;
            g += gc * stride;
            stride *= (uint32_t)in->list[d];
        }
        o[e] = rt_dropout_bits(key, in->axis, g) < thr ? 0.0f : a[e] * scale;
    }
    return 0;
}

/* ---- elementwise unary ---- */

#define MAP(EXPR)                                                            \
    do {                                                                     \
        for (int64_t i = 0; i < n; i++) {                                    \
            float X = a[i];                                                  \
            o[i] = (EXPR);                                                   \
        }                                                                    \
    } while (0)

/* a and o may be the same memory: each element is read before it is written. */
static int k_unary(const rt_instr *in, const void *x, void *y, su_status *err)
{
    int64_t n = rt_type_numel(&in->out_t);
    if (in->out_t.dtype == RT_I32) {
        const int32_t *a = x;
        int32_t *o = y;
        for (int64_t i = 0; i < n; i++) {
            int32_t v = a[i];
            if (in->op == RT_OP_NEG || (in->op == RT_OP_ABS && v < 0))
                v = WRAP(0u - (uint32_t)v); /* -INT32_MIN wraps to itself */
            else if (in->op == RT_OP_RELU && v < 0)
                v = 0;
            else if (in->op != RT_OP_ABS && in->op != RT_OP_RELU)
                return su_fail(err, SU_INPUT, "%s of i32 is not supported", rt_ops[in->op].name);
            o[i] = v;
        }
        return 0;
    }
    const float *a = x;
    float *o = y;
    switch (in->op) {
    case RT_OP_NEG: MAP(-X); break;
    case RT_OP_ABS: MAP(fabsf(X)); break;
    case RT_OP_RELU: MAP(X < 0 ? 0.0f : X); break; /* nan stays nan */
    case RT_OP_GELU: MAP(geluf(X)); break;
    case RT_OP_SILU: MAP(X * sigmoidf(X)); break;
    case RT_OP_TANH: MAP(tanhf(X)); break;
    case RT_OP_SIGMOID: MAP(sigmoidf(X)); break;
    case RT_OP_EXP: MAP(expf(X)); break;
    case RT_OP_LOG: MAP(logf(X)); break;
    case RT_OP_SQRT: MAP(sqrtf(X)); break;
    case RT_OP_SIN: MAP(sinf(X)); break;
    case RT_OP_COS: MAP(cosf(X)); break;
    default: MAP(1.0f / sqrtf(X)); break; /* rsqrt */
    }
    return 0;
}

/* ---- reductions over one axis ---- */

/* x viewed as [outer, n, inner] around axis. */
static void axis_view(const rt_type *t, int64_t axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int64_t i = 0; i < axis; i++)
        *outer *= t->dim[i];
    for (int64_t i = axis + 1; i < t->rank; i++)
        *inner *= t->dim[i];
    *n = t->dim[axis];
}

/* amax, in place over the result: it starts as the axis's first slice. */
static void amax_f32(const float *a, float *o, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t p = 0; p < outer; p++) {
        float *dst = o + p * inner;
        memcpy(dst, a + p * n * inner, (size_t)inner * sizeof *dst);
        for (int64_t k = 1; k < n; k++) {
            const float *src = a + (p * n + k) * inner;
            for (int64_t i = 0; i < inner; i++)
                dst[i] = src[i] > dst[i] || src[i] != src[i] ? src[i] : dst[i];
        }
    }
}

static void amax_i32(const int32_t *a, int32_t *o, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t p = 0; p < outer; p++) {
        int32_t *dst = o + p * inner;
        memcpy(dst, a + p * n * inner, (size_t)inner * sizeof *dst);
        for (int64_t k = 1; k < n; k++) {
            const int32_t *src = a + (p * n + k) * inner;
            for (int64_t i = 0; i < inner; i++)
                dst[i] = src[i] > dst[i] ? src[i] : dst[i];
        }
    }
}

/* sum and mean: f32 accumulates in double (10^6 elements stay within
 * ~1e-7 relative); i32 sums in int64 and stores the low 32 bits (wraps). */
static int k_reduce(const rt_instr *in, const void *x, void *y, su_status *err)
{
    const rt_type *t = &in->in_t[0];
    int i32 = t->dtype == RT_I32;
    int64_t outer, n, inner;
    axis_view(t, in->axis, &outer, &n, &inner);
    if (in->op == RT_OP_AMAX) {
        if (i32)
            amax_i32(x, y, outer, n, inner);
        else
            amax_f32(x, y, outer, n, inner);
        return 0;
    }
    if (i32 && in->op == RT_OP_MEAN)
        return su_fail(err, SU_INPUT, "mean of i32 is not supported");
    double *acc = scratch((size_t)inner * sizeof *acc, rt_ops[in->op].name, err);
    int64_t *iacc = (int64_t *)acc; /* same size as double */
    if (!acc)
        return -1;
    for (int64_t p = 0; p < outer; p++) {
        memset(acc, 0, (size_t)inner * sizeof *acc);
        for (int64_t k = 0; k < n; k++) {
            int64_t base = (p * n + k) * inner;
            if (i32)
                for (int64_t i = 0; i < inner; i++)
                    iacc[i] += ((const int32_t *)x)[base + i];
            else
                for (int64_t i = 0; i < inner; i++)
                    acc[i] += ((const float *)x)[base + i];
        }
        for (int64_t i = 0; i < inner; i++) {
            if (i32)
                ((int32_t *)y)[p * inner + i] = WRAP(iacc[i]);
            else
                ((float *)y)[p * inner + i] =
                    (float)(in->op == RT_OP_MEAN ? acc[i] / (double)n : acc[i]);
        }
    }
    free(acc);
    return 0;
}

/* softmax over axis, stable: exp(x - max) / sum. Over a non-last axis the
 * inner dim is the vector width: per-position max and sum live in scratch. */
static int k_softmax(const rt_instr *in, const float *a, float *o, su_status *err)
{
    int64_t outer, n, inner;
    axis_view(&in->in_t[0], in->axis, &outer, &n, &inner);
    float *mx = scratch((size_t)inner * sizeof *mx, "softmax", err);
    double *sum = mx ? scratch((size_t)inner * sizeof *sum, "softmax", err) : NULL;
    if (!sum) {
        free(mx);
        return -1;
    }
    for (int64_t p = 0; p < outer; p++) {
        const float *src = a + p * n * inner;
        float *dst = o + p * n * inner;
        memcpy(mx, src, (size_t)inner * sizeof *mx);
        for (int64_t k = 1; k < n; k++)
            for (int64_t i = 0; i < inner; i++)
                mx[i] = src[k * inner + i] > mx[i] ? src[k * inner + i] : mx[i];
        memset(sum, 0, (size_t)inner * sizeof *sum);
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++) {
                float e = expf(src[k * inner + i] - mx[i]);
                dst[k * inner + i] = e;
                sum[i] += e;
            }
        for (int64_t i = 0; i < inner; i++)
            mx[i] = (float)(1.0 / sum[i]); /* reused: the scale */
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++)
                dst[k * inner + i] *= mx[i];
    }
    free(mx);
    free(sum);
    return 0;
}

/* A row v of d elements' scale 1 / sqrt(variance + eps), two passes in
 * double, the variance the population one about the row's mean (*mean,
 * with ln) or about 0 (rmsnorm's mean square, *mean 0). */
static double row_scale(const float *v, int64_t d, bool ln, double eps, double *mean)
{
    double mu = 0, ss = 0;
    if (ln) {
        for (int64_t i = 0; i < d; i++)
            mu += v[i];
        mu /= (double)d;
    }
    for (int64_t i = 0; i < d; i++)
        ss += (v[i] - mu) * (v[i] - mu);
    *mean = mu;
    return 1.0 / sqrt(ss / (double)d + eps);
}

/* layernorm (x, g, b) and rmsnorm (x, g) over the last dim (row_scale). */
static int k_norm(const rt_instr *in, const void *const *x, float *o)
{
    const rt_type *t = &in->in_t[0];
    int64_t d = t->dim[t->rank - 1], rows = rt_type_numel(t) / d;
    const float *g = x[1], *b = in->op == RT_OP_LAYERNORM ? x[2] : NULL;
    for (int64_t r = 0; r < rows; r++) {
        const float *v = (const float *)x[0] + r * d;
        float *dst = o + r * d;
        double mean, scale = row_scale(v, d, b != NULL, in->eps, &mean);
        for (int64_t i = 0; i < d; i++)
            dst[i] = (float)((v[i] - mean) * scale) * g[i] + (b ? b[i] : 0.0f);
    }
    return 0;
}

/* layernorm_rstd (x) and rmsnorm_rstd (x): each row's scale as k_norm
 * computes it (row_scale). */
static int k_norm_rstd(const rt_instr *in, const float *x, float *o)
{
    const rt_type *t = &in->in_t[0];
    int64_t d = t->dim[t->rank - 1], rows = d ? rt_type_numel(t) / d : 0;
    double mean;
    for (int64_t r = 0; r < rows; r++)
        o[r] = (float)row_scale(x + r * d, d, in->op == RT_OP_LAYERNORM_RSTD, in->eps, &mean);
    return 0;
}

/* layernorm_dx (dy, x, mean, rstd, g) and rmsnorm_dx (dy, x, r, g): per
 * row, the row's sums in double, then each element (plan_ops.def). */
static int k_norm_dx(const rt_instr *in, const void *const *x, float *o)
{
    const rt_type *t = &in->in_t[0];
    int64_t d = t->dim[t->rank - 1], rows = rt_type_numel(t) / d;
    bool ln = in->op == RT_OP_LAYERNORM_DX;
    const float *dy = x[0], *xs = x[1], *g = x[in->nin - 1];
    const float *mean = ln ? x[2] : NULL, *rstd = x[ln ? 3 : 2];
    for (int64_t r = 0; r < rows; r++) {
        const float *u = dy + r * d, *v = xs + r * d;
        double mu = mean ? mean[r] : 0, rs = rstd[r], s1 = 0, s2 = 0;
        for (int64_t i = 0; i < d; i++) {
            double gx = (double)u[i] * g[i];
            s1 += gx;
            s2 += gx * ((v[i] - mu) * rs);
        }
        double m1 = ln ? s1 / (double)d : 0, m2 = s2 / (double)d;
        for (int64_t i = 0; i < d; i++) {
            double gx = (double)u[i] * g[i];
            o[r * d + i] = (float)(rs * (gx - m1 - (v[i] - mu) * rs * m2));
        }
    }
    return 0;
}

/* mse: mean of (a - b)^2 over every element, in double. */
static int k_mse(const rt_instr *in, const float *a, const float *b, float *o)
{
    int64_t n = rt_type_numel(&in->in_t[0]);
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        double dlt = (double)a[i] - b[i];
        s += dlt * dlt;
    }
    *o = (float)(s / (double)n);
    return 0;
}

/* "cross_entropy label 10 at index 2 is outside the 10 classes (0..9)";
 * check_labels speaks for cross_entropy, whose split labels it checks. */
static int label_error(const rt_instr *in, int32_t lab, int64_t r, int64_t c, su_status *err)
{
    const char *op = in->op == RT_OP_CHECK_LABELS ? "cross_entropy" : rt_ops[in->op].name;
    return su_fail(err, SU_INPUT, "%s label %d at index %lld is outside the %lld classes (0..%lld)",
                   op,
                       (int)lab, (long long)r, (long long)c, (long long)c - 1);
}


/* A row's log-sum-exp, max + log(sum exp(x - max)): the max in f32, the
 * sum in double (k_xent's loss and k_xent_lse). */
static double row_lse(const float *v, int64_t c)
{
    float m = v[0];
    for (int64_t i = 1; i < c; i++)
        m = v[i] > m ? v[i] : m;
    double s = 0;
    for (int64_t i = 0; i < c; i++)
        s += exp((double)v[i] - m);
    return (double)m + log(s);
}
/* cross_entropy: the mean over rows of logsumexp(row) - row[label]. */
static int k_xent(const rt_instr *in, const float *logits, const int32_t *labels, float *o,
                  su_status *err)
{
    const rt_type *t = &in->in_t[0];
    int64_t c = t->dim[t->rank - 1], rows = rt_type_numel(t) / c;
    double loss = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *v = logits + r * c;
        int32_t lab = labels[r];
        if (lab < 0 || lab >= c)
            return label_error(in, lab, r, c, err);
        loss += row_lse(v, c) - v[lab];
    }
    *o = (float)(loss / (double)rows);
    return 0;
}

/* cross_entropy_lse: per row max + log(sum exp(x - max)), summed in
 * double as k_xent sums, rounded once. */
static int k_xent_lse(const rt_instr *in, const float *logits, float *o)
{
    const rt_type *t = &in->in_t[0];
    int64_t c = t->dim[t->rank - 1], rows = c ? rt_type_numel(t) / c : 0;
    for (int64_t r = 0; r < rows; r++)
        o[r] = (float)row_lse(logits + r * c, c);
    return 0;
}

/* cross_entropy_grad: per row softmax(row) - one_hot(label), stable (the
 * row's max subtracted), or exp(row - lse) from the rows' log-sum-exp
 * where it is given; not divided by the row count: autodiff scales it. */
static int k_xent_grad(const rt_instr *in, const float *logits, const int32_t *labels,
                       const float *lse, float *o, su_status *err)
{
    const rt_type *t = &in->in_t[0];
    int64_t c = t->dim[t->rank - 1], rows = rt_type_numel(t) / c;
    for (int64_t r = 0; r < rows; r++) {
        const float *v = logits + r * c;
        float *g = o + r * c;
        int32_t lab = labels[r];
        if (lab < 0 || lab >= c)
            return label_error(in, lab, r, c, err);
        if (lse) {
            for (int64_t i = 0; i < c; i++)
                g[i] = expf(v[i] - lse[r]);
            g[lab] -= 1.0f;
            continue;
        }
        float m = v[0];
        for (int64_t i = 1; i < c; i++)
            m = v[i] > m ? v[i] : m;
        double sum = 0;
        for (int64_t i = 0; i < c; i++) {
            g[i] = expf(v[i] - m);
            sum += g[i];
        }
        float scale = (float)(1.0 / sum);
        for (int64_t i = 0; i < c; i++)
            g[i] *= scale;
        g[lab] -= 1.0f;
    }
    return 0;
}

/* ---- layout ---- */

/* out.dim[i] = in.dim[list[i]]. Dims of 1 are dropped and out dims that are
 * adjacent in the input merged; then either the last out dim is contiguous
 * in the input (memcpy runs) or the input's contiguous dim is some earlier
 * out dim j, and (j, last) is transposed in cache-sized tiles. */
enum { TILE = 32 };

#define TILE_COPY(T)                                                         \
    do {                                                                     \
        const T *src_ = (const T *)src;                                      \
        T *dst_ = (T *)dst;                                                  \
        for (int64_t a0 = 0; a0 < dj; a0 += TILE)                            \
            for (int64_t b0 = 0; b0 < dl; b0 += TILE) {                      \
                int64_t a1 = a0 + TILE < dj ? a0 + TILE : dj;                \
                int64_t b1 = b0 + TILE < dl ? b0 + TILE : dl;                \
                for (int64_t aa = a0; aa < a1; aa++)                         \
                    for (int64_t bb = b0; bb < b1; bb++)                     \
                        dst_[ob + aa * osj + bb] = src_[ib + aa + bb * isl]; \
            }                                                                \
    } while (0)

static int k_transpose(const rt_instr *in, const void *src, void *dst)
{
    const rt_type *t = &in->in_t[0];
    int es = rt_dtype_size(t->dtype), r = 0;
    int64_t istr[RT_MAX_RANK], d[RT_MAX_RANK], s[RT_MAX_RANK], acc = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        istr[i] = acc;
        acc *= t->dim[i];
    }
    for (int i = 0; i < t->rank; i++) {
        int64_t di = t->dim[in->list[i]], si = istr[in->list[i]];
        if (di == 1)
            continue;
        if (r > 0 && s[r - 1] == si * di) {
            d[r - 1] *= di;
            s[r - 1] = si;
        } else {
            d[r] = di;
            s[r++] = si;
        }
    }
    if (r <= 1) { /* the identity on the element order */
        memcpy(dst, src, (size_t)rt_type_bytes(t));
        return 0;
    }
    int64_t ostr[RT_MAX_RANK];
    acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        ostr[i] = acc;
        acc *= d[i];
    }
    /* the walk covers every out dim but the ones the inner loop does */
    int j = -1, nw = 0;
    for (int i = 0; i < r; i++)
        if (s[i] == 1)
            j = i;
    int64_t wd[RT_MAX_RANK], wi[RT_MAX_RANK], wo[RT_MAX_RANK], idx[RT_MAX_RANK] = {0};
    int64_t rows = 1, ib = 0, ob = 0;
    for (int i = 0; i < r - 1; i++)
        if (i != j) {
            wd[nw] = d[i];
            wi[nw] = s[i];
            wo[nw++] = ostr[i];
            rows *= d[i];
        }
    int64_t dj = j >= 0 && j < r - 1 ? d[j] : 1, osj = j >= 0 ? ostr[j] : 0;
    int64_t dl = d[r - 1], isl = s[r - 1];
    for (int64_t row = 0; row < rows; row++) {
        if (isl == 1)
            memcpy((char *)dst + ob * es, (const char *)src + ib * es, (size_t)(dl * es));
        else if (es == 1)
            TILE_COPY(uint8_t);
        else if (es == 2)
            TILE_COPY(uint16_t);
        else
            TILE_COPY(uint32_t);
        walk_step(nw, wd, idx, wi, &ib, wo, &ob);
    }
    return 0;
}

/* "embedding id 70000 at index 12 is outside the table's 1024 rows";
 * check_ids speaks for embedding, whose split ids it checks. */
static int id_error(const rt_instr *in, int32_t id, int64_t i, int64_t v, su_status *err)
{
    const char *op = in->op == RT_OP_CHECK_IDS ? "embedding" : rt_ops[in->op].name;
    return su_fail(err, SU_INPUT, "%s id %d at index %lld is outside the table's %lld rows",
                       op, (int)id, (long long)i, (long long)v);
}

/* embedding: row ids[i] of table [V, D] for every id, in any dtype. */
static int k_embedding(const rt_instr *in, const void *table, const int32_t *ids, void *o,
                       su_status *err)
{
    int64_t v = in->in_t[0].dim[0], d = in->in_t[0].dim[1], n = rt_type_numel(&in->in_t[1]);
    size_t row = (size_t)(d * rt_dtype_size(in->in_t[0].dtype));
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v)
            return id_error(in, ids[i], i, v, err);
        memcpy((char *)o + (size_t)i * row, (const char *)table + (size_t)ids[i] * row, row);
    }
    return 0;
}

/* embedding_grad (ids, dy): the table [V, D] zeroed, then row i of dy
 * [n, D] added into row ids[i], in index order; repeated ids accumulate in
 * f32 (the result's precision on the f32 path). */
static int k_embedding_grad(const rt_instr *in, const int32_t *ids, const float *dy, float *o,
                            su_status *err)
{
    int64_t v = in->out_t.dim[0], d = in->out_t.dim[1], n = rt_type_numel(&in->in_t[0]);
    memset(o, 0, (size_t)(v * d) * sizeof *o);
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v)
            return id_error(in, ids[i], i, v, err);
        float *row = o + (int64_t)ids[i] * d;
        const float *g = dy + i * d;
        for (int64_t c = 0; c < d; c++)
            row[c] += g[c];
    }
    return 0;
}

#define FILL_ROW(T)                                                          \
    do {                                                                     \
        T v_ = *(const T *)a;                                                \
        for (int64_t i = 0; i < n; i++)                                      \
            ((T *)o)[i] = v_;                                                \
    } while (0)

/* expand: NumPy broadcast_to(x, out_t), in any dtype. It walks the result
 * as a binary op of x with itself does (bplan): each row is either a run of
 * x (copied) or one element of x repeated. */
static int k_expand(const rt_instr *in, const void *src, void *dst)
{
    bplan p;
    bplan_make(&in->in_t[0], &in->in_t[0], &in->out_t, &p);
    int r = p.r;
    size_t es = (size_t)rt_dtype_size(in->out_t.dtype);
    int64_t n = p.d[r - 1], rows = 1, idx[RT_MAX_RANK] = {0}, ox = 0, unused = 0;
    for (int i = 0; i + 1 < r; i++)
        rows *= p.d[i];
    for (int64_t row = 0; row < rows; row++) {
        char *o = (char *)dst + (size_t)(row * n) * es;
        const char *a = (const char *)src + (size_t)ox * es;
        if (p.s[0][r - 1])
            memcpy(o, a, (size_t)n * es);
        else if (es == 1)
            FILL_ROW(uint8_t);
        else if (es == 2)
            FILL_ROW(uint16_t);
        else
            FILL_ROW(uint32_t);
        walk_step(r - 1, p.d, idx, p.s[0], &ox, p.s[1], &unused);
    }
    return 0;
}

/* slice: this rank's block b of G along dim, b row-major over the
 * coordinates of in->axes (axes[0] major). */
static int k_slice(const rt_cpu_ctx *ctx, const rt_instr *in, const void *src, void *dst,
                   su_status *err)
{
    const rt_type *t = &in->in_t[0];
    if (!ctx)
        return su_fail(err, SU_INTERNAL, "slice needs the rank's mesh coordinates (no context)");
    int64_t blk = 0;
    for (int i = 0; i < in->naxes; i++) {
        int ax = in->axes[i];
        if (ax >= ctx->naxes)
            return su_fail(err, SU_INTERNAL, "slice over mesh axis %d, but the mesh has %d axes",
                           ax,
                        ctx->naxes);
        blk = blk * ctx->axis_size[ax] + ctx->coord[ax];
    }
    int64_t outer, dn, inner, n = in->out_t.dim[in->dim];
    axis_view(t, in->dim, &outer, &dn, &inner);
    if ((blk + 1) * n > dn)
        return su_fail(err, SU_INTERNAL, "slice block %lld of size %lld is outside dimension %lld (size %lld)",
                    (long long)blk, (long long)n, (long long)in->dim, (long long)dn);
    size_t es = (size_t)rt_dtype_size(t->dtype), run = (size_t)(n * inner) * es;
    for (int64_t p = 0; p < outer; p++)
        memcpy((char *)dst + (size_t)p * run,
               (const char *)src + (size_t)((p * dn + blk * n) * inner) * es, run);
    return 0;
}

/* iota: out_t i32[N] holding 0 .. N-1. */
static int k_iota(const rt_instr *in, int32_t *o)
{
    for (int64_t i = 0; i < in->out_t.dim[0]; i++)
        o[i] = (int32_t)i;
    return 0;
}

/* check_ids, check_labels: ids copied, the first outside [0, dim)
 * failing with embedding's (cross_entropy's) message. */
static int k_check(const rt_instr *in, const int32_t *ids, int32_t *o, su_status *err)
{
    int64_t n = rt_type_numel(&in->in_t[0]), v = in->dim;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v)
            return in->op == RT_OP_CHECK_IDS ? id_error(in, ids[i], i, v, err)
                                             : label_error(in, ids[i], i, v, err);
        o[i] = ids[i];
    }
    return 0;
}

/* ---- optimizer updates ---- */

/* adamw (p, m, v, t): p (1 - lr wd) - lr m^ / (sqrt(v^) + eps), with the
 * bias corrections m^ = m / (1 - beta1^t) and v^ = v / (1 - beta2^t) for
 * the step t (a scalar, 1 at the first step; 0 divides by zero). */
static void k_adamw(const rt_instr *in, const void *const *x, float *o, int64_t n)
{
    const float *p = x[0], *m = x[1], *v = x[2];
    double t = *(const float *)x[3];
    double bc1 = 1.0 - pow(in->beta1, t), bc2 = 1.0 - pow(in->beta2, t);
    float decay = (float)(1.0 - in->lr * in->wd), step = (float)(in->lr / bc1);
    float vscale = (float)(1.0 / bc2), eps = (float)in->eps;
    for (int64_t i = 0; i < n; i++)
        o[i] = p[i] * decay - step * m[i] / (sqrtf(v[i] * vscale) + eps);
}

/* momentum sgd adam_m adam_v adamw: elementwise over operands of the
 * result's type (adamw's t aside). The scalar coefficients are folded in
 * double and applied in f32. Each element's operands are read before its
 * result is written, so the result may overwrite an operand. */
static int k_optim(const rt_instr *in, const void *const *x, float *o)
{
    int64_t n = rt_type_numel(&in->out_t);
    const float *a = x[0], *b = x[1], *c = x[2];
    float lr = (float)in->lr, wd = (float)in->wd;
    switch (in->op) {
    case RT_OP_MOMENTUM: { /* (buf, g, p) */
        float mu = (float)in->momentum;
        for (int64_t i = 0; i < n; i++)
            o[i] = mu * a[i] + (b[i] + wd * c[i]);
        break;
    }
    case RT_OP_SGD: /* (p, d) */
        for (int64_t i = 0; i < n; i++)
            o[i] = a[i] - lr * (b[i] + wd * a[i]);
        break;
    case RT_OP_ADAM_M: { /* (m, g) */
        float b1 = (float)in->beta1, c1 = (float)(1.0 - in->beta1);
        for (int64_t i = 0; i < n; i++)
            o[i] = b1 * a[i] + c1 * b[i];
        break;
    }
    case RT_OP_ADAM_V: { /* (v, g) */
        float b2 = (float)in->beta2, c2 = (float)(1.0 - in->beta2);
        for (int64_t i = 0; i < n; i++)
            o[i] = b2 * a[i] + c2 * b[i] * b[i];
        break;
    }
    default:
        k_adamw(in, x, o, n);
        break;
    }
    return 0;
}

/* ---- buckets ---- */

/* insert (bucket [R, M], x) and extract (bucket): the value, as [R, n/R],
 * in the bucket's columns offset .. offset + n/R - 1. insert may write over
 * its bucket, and extract's result may be its columns of a one-row bucket
 * (then those copies are skipped). */
static int k_bucket(const rt_instr *in, const void *const *x, void *y)
{
    const rt_type *b = &in->in_t[0];
    size_t es = (size_t)rt_dtype_size(b->dtype);
    int64_t rows = b->dim[0], cols = b->dim[1];
    if (in->op == RT_OP_INSERT) {
        int64_t w = rt_type_numel(&in->in_t[1]) / rows;
        if (y != x[0])
            memmove(y, x[0], (size_t)rt_type_bytes(b));
        if (rows == 1 && x[1] == (const char *)y + (size_t)in->offset * es)
            return 0; /* computed in its columns (rt_bucket_view) */
        for (int64_t r = 0; r < rows; r++)
            memcpy((char *)y + (size_t)(r * cols + in->offset) * es,
                   (const char *)x[1] + (size_t)(r * w) * es, (size_t)w * es);
    } else {
        int64_t w = rt_type_numel(&in->out_t) / rows;
        if (rows == 1 && y == (const char *)x[0] + (size_t)in->offset * es)
            return 0; /* a view of its columns (rt_bucket_view) */
        for (int64_t r = 0; r < rows; r++)
            memcpy((char *)y + (size_t)(r * w) * es,
                   (const char *)x[0] + (size_t)(r * cols + in->offset) * es, (size_t)w * es);
    }
    return 0;
}

/* The product of t's dims before d, and after it times the element size:
 * t viewed as [outer, t.dim[d] rows of inner bytes]. */
static void around_dim(const rt_type *t, int64_t d, int64_t *outer, size_t *inner)
{
    *outer = 1;
    *inner = (size_t)rt_dtype_size(t->dtype);
    for (int k = 0; k < t->rank; k++) {
        if (k < d)
            *outer *= t->dim[k];
        else if (k > d)
            *inner *= (size_t)t->dim[k];
    }
}

/* narrow: rows offset .. of dim; concat: each operand's rows one after
 * another along dim. Byte copies, any dtype. */
static int k_narrow(const rt_instr *in, const void *x, void *y)
{
    int64_t outer;
    size_t inner;
    around_dim(&in->in_t[0], in->dim, &outer, &inner);
    size_t from = (size_t)in->in_t[0].dim[in->dim] * inner;
    size_t len = (size_t)in->out_t.dim[in->dim] * inner, at = (size_t)in->offset * inner;
    for (int64_t o = 0; o < outer; o++)
        memcpy((char *)y + (size_t)o * len, (const char *)x + (size_t)o * from + at, len);
    return 0;
}

static int k_concat(const rt_instr *in, const void *const *x, void *y)
{
    int64_t outer;
    size_t inner;
    around_dim(&in->out_t, in->dim, &outer, &inner);
    size_t row = (size_t)in->out_t.dim[in->dim] * inner;
    for (int64_t o = 0; o < outer; o++) {
        char *dst = (char *)y + (size_t)o * row;
        for (int i = 0; i < in->nin; i++) {
            size_t len = (size_t)in->in_t[i].dim[in->dim] * inner;
            memcpy(dst, (const char *)x[i] + (size_t)o * len, len);
            dst += len;
        }
    }
    return 0;
}

/* ---- dispatch ---- */

/* The ops whose arithmetic is f32: on f16 and bf16 they run promoted. */
static int computes_in_f32(int op)
{
    switch (op) {
    case RT_OP_CAST:
    case RT_OP_COPY:
    case RT_OP_TRANSPOSE:
    case RT_OP_EMBEDDING:
    case RT_OP_SLICE:
    case RT_OP_EXPAND:
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
    case RT_OP_NARROW:
    case RT_OP_CONCAT:
    case RT_OP_WHERE:
    case RT_OP_SPLIT3:
        return 0;
    default:
        return 1;
    }
}

static int is_half(int dtype)
{
    return dtype == RT_F16 || dtype == RT_BF16;
}

static int run_kernel(const rt_cpu_ctx *ctx, const rt_instr *in, const void *const *x, void *y,
                      su_status *err)
{
    switch (in->op) {
    case RT_OP_ADD:
    case RT_OP_SUB:
    case RT_OP_MUL:
    case RT_OP_DIV:
    case RT_OP_MAX:
    case RT_OP_MIN:
    case RT_OP_POW:
    case RT_OP_GT:
    case RT_OP_EQ:
    case RT_OP_GELU_GRAD:
    case RT_OP_SILU_GRAD:
        return k_binary(in, x, y, err);
    case RT_OP_NEG:
    case RT_OP_ABS:
    case RT_OP_RELU:
    case RT_OP_GELU:
    case RT_OP_SILU:
    case RT_OP_TANH:
    case RT_OP_SIGMOID:
    case RT_OP_EXP:
    case RT_OP_LOG:
    case RT_OP_SQRT:
    case RT_OP_RSQRT:
    case RT_OP_SIN:
    case RT_OP_COS:
        return k_unary(in, x[0], y, err);
    case RT_OP_LESS:
    case RT_OP_LESS_EQ:
    case RT_OP_GREATER:
    case RT_OP_GREATER_EQ:
    case RT_OP_EQUAL:
    case RT_OP_NOT_EQUAL:
        return k_compare(in, x, y);
    case RT_OP_WHERE:
        return k_where(in, x, y);
    case RT_OP_DROPOUT:
        return k_dropout(in, x, y);
    case RT_OP_CAST:
        return k_cast(in, x[0], y);
    case RT_OP_COPY:
        memmove(y, x[0], (size_t)rt_type_bytes(&in->out_t));
        return 0;
    case RT_OP_MATMUL:
        return rt_cpu_matmul_(in, x, y, err);
    case RT_OP_SPLIT3:
        return k_split3(in, x[0], y);
    case RT_OP_ATTENTION:
        return in->keepdims ? rt_cpu_attn_heads_(in, x, y, err) : rt_cpu_attention_(in, x, y, err);
    case RT_OP_ATTN_PROBS:
        return rt_cpu_attn_probs_(in, x, y, err);
    case RT_OP_ATTN_STATS:
    case RT_OP_ATTN_DQ:
    case RT_OP_ATTN_DK:
    case RT_OP_ATTN_DV:
    case RT_OP_ATTN_LSE:
    case RT_OP_ATTN_DELTA:
        return in->keepdims ? rt_cpu_attn_heads_(in, x, y, err) : rt_cpu_attn_grad_(in, x, y, err);
    case RT_OP_SUM:
    case RT_OP_MEAN:
    case RT_OP_AMAX:
        return k_reduce(in, x[0], y, err);
    case RT_OP_SOFTMAX:
        return k_softmax(in, x[0], y, err);
    case RT_OP_LAYERNORM:
    case RT_OP_RMSNORM:
        return k_norm(in, x, y);
    case RT_OP_LAYERNORM_DX:
    case RT_OP_RMSNORM_DX:
        return k_norm_dx(in, x, y);
    case RT_OP_LAYERNORM_RSTD:
    case RT_OP_RMSNORM_RSTD:
        return k_norm_rstd(in, x[0], y);
    case RT_OP_TRANSPOSE:
        return k_transpose(in, x[0], y);
    case RT_OP_EMBEDDING:
        return k_embedding(in, x[0], x[1], y, err);
    case RT_OP_MSE:
        return k_mse(in, x[0], x[1], y);
    case RT_OP_XENT:
        return k_xent(in, x[0], x[1], y, err);
    case RT_OP_SLICE:
        return k_slice(ctx, in, x[0], y, err);
    case RT_OP_EXPAND:
        return k_expand(in, x[0], y);
    case RT_OP_EMBEDDING_GRAD:
        return k_embedding_grad(in, x[0], x[1], y, err);
    case RT_OP_XENT_GRAD:
        return k_xent_grad(in, x[0], x[1], in->nin == 3 ? x[2] : NULL, y, err);
    case RT_OP_XENT_LSE:
        return k_xent_lse(in, x[0], y);
    case RT_OP_MOMENTUM:
    case RT_OP_SGD:
    case RT_OP_ADAM_M:
    case RT_OP_ADAM_V:
    case RT_OP_ADAMW:
        return k_optim(in, x, y);
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
        return k_bucket(in, x, y);
    case RT_OP_IOTA:
        return k_iota(in, y);
    case RT_OP_NARROW:
        return k_narrow(in, x[0], y);
    case RT_OP_CONCAT:
        return k_concat(in, x, y);
    case RT_OP_CHECK_IDS:
    case RT_OP_CHECK_LABELS:
        return k_check(in, x[0], y, err);
    default:
        return su_fail(err, SU_INTERNAL, "%s is not a compute instruction", rt_ops[in->op].name);
    }
}

/* Widens the f16/bf16 operands into f32 scratch, runs the f32 kernel on a
 * copy of the instruction with f32 types, and rounds the result back. */
static int run_promoted(const rt_cpu_ctx *ctx, const rt_instr *in, const void *const *x, void *y,
                        su_status *err)
{
    rt_instr f = *in;
    const void *fx[RT_MAX_IN] = {0};
    float *tmp[RT_MAX_IN + 1] = {0};
    void *fy = y;
    int nin = in->nin, rc = -1;
    for (int i = 0; i < nin; i++) {
        fx[i] = x[i];
        if (!is_half(in->in_t[i].dtype))
            continue;
        int64_t n = rt_type_numel(&in->in_t[i]);
        if (!(tmp[i] = scratch((size_t)n * sizeof(float), rt_ops[in->op].name, err)))
            goto done;
        load_f32(tmp[i], x[i], in->in_t[i].dtype, n);
        f.in_t[i].dtype = RT_F32;
        fx[i] = tmp[i];
    }
    if (is_half(in->out_t.dtype)) {
        int64_t n = rt_type_numel(&in->out_t);
        if (!(tmp[RT_MAX_IN] = scratch((size_t)n * sizeof(float), rt_ops[in->op].name, err)))
            goto done;
        f.out_t.dtype = RT_F32;
        fy = tmp[RT_MAX_IN];
    }
    rc = run_kernel(ctx, &f, fx, fy, err);
    if (rc == 0 && fy != y)
        store_f32(y, fy, in->out_t.dtype, rt_type_numel(&in->out_t));
done:
    for (int i = 0; i <= RT_MAX_IN; i++)
        free(tmp[i]);
    return rc;
}

int rt_cpu_run(const rt_cpu_ctx *ctx, const rt_instr *in, void *const *bufs, su_status *err)
{
    if (in->op >= RT_NOPS)
        return su_fail(err, SU_INTERNAL, "opcode %d is not a compute instruction", (int)in->op);
    if (rt_ops[in->op].cls != RT_K_COMPUTE)
        return su_fail(err, SU_INTERNAL, "%s is not a compute instruction", rt_ops[in->op].name);
    const void *x[RT_MAX_IN] = {0};
    int nin = in->nin, half = is_half(in->out_t.dtype);
    for (int i = 0; i < nin; i++) {
        x[i] = bufs[in->in[i]];
        half |= is_half(in->in_t[i].dtype);
    }
    if (half && computes_in_f32(in->op))
        return run_promoted(ctx, in, x, bufs[in->out], err);
    return run_kernel(ctx, in, x, bufs[in->out], err);
}
