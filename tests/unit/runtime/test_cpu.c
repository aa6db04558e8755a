/* test_cpu.c: the CPU backend (runtime/cpu/cpu.h). Every compute op against a
 * naive reference written here in double precision, on shapes with
 * broadcasting, non-last axes, rank 0 and 1, f16 and bf16 storage; the
 * f16/bf16 conversions against known bit patterns and an independent
 * rounding; the error cases; and kernels running in several threads at once.
 * The training ops (gradients, expand, attn_probs, optimizer updates) too,
 * and attn_probs against attention: attention(q, k, v) = attn_probs(q, k) @ v;
 * the checks of ids and labels.
 *
 * Tolerances (|got - want| <= atol + rtol * |want|), by the result's dtype:
 *   f32   rtol 1e-5, atol 1e-6 (1e-5 where a product sums many terms)
 *   f16   rtol 2e-3 (2^-11 = 4.9e-4 is half an ulp), atol 1e-3
 *   bf16  rtol 1e-2 (2^-8 = 3.9e-3 is half an ulp), atol 1e-2
 *   i32   exact
 * Half-precision references start from the stored (rounded) operands, so
 * they measure the kernel's f32 arithmetic and the final rounding.
 */
#include "runtime/cpu/cpu.h"
#include "support/support.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* ---- data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* splitmix64: a fixed-seed sequence, the same on every machine. */
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1p-53;
}

typedef struct tens {
    rt_type t;
    void *p;
} tens;

/* "f32[2, 3]", "i32[]" */
static rt_type ty(const char *s)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    static const char *const names[] = {"f32[", "f16[", "bf16[", "i32["};
    int d = 0;
    while (d < 4 && strncmp(s, names[d], strlen(names[d])) != 0)
        d++;
    if (d == 4)
        abort();
    t.dtype = (uint8_t)d;
    const char *p = s + strlen(names[d]);
    while (*p != ']') {
        char *end;
        t.dim[t.rank++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return t;
}

static int64_t numel(const tens *x)
{
    return rt_type_numel(&x->t);
}

static tens tnew(const char *s)
{
    tens x = {ty(s), NULL};
    x.p = calloc((size_t)(rt_type_bytes(&x.t) + 8), 1);
    return x;
}

static double tget(const tens *x, int64_t i)
{
    switch (x->t.dtype) {
    case RT_F32: return ((const float *)x->p)[i];
    case RT_F16: return su_f16_to_f32(((const uint16_t *)x->p)[i]);
    case RT_BF16: return su_bf16_to_f32(((const uint16_t *)x->p)[i]);
    default: return ((const int32_t *)x->p)[i];
    }
}

static void tset(tens *x, int64_t i, double v)
{
    switch (x->t.dtype) {
    case RT_F32: ((float *)x->p)[i] = (float)v; break;
    case RT_F16: ((uint16_t *)x->p)[i] = su_f32_to_f16((float)v); break;
    case RT_BF16: ((uint16_t *)x->p)[i] = su_f32_to_bf16((float)v); break;
    default: /* saturating, as a cast would */
        ((int32_t *)x->p)[i] = v >= INT32_MAX ? INT32_MAX : v <= INT32_MIN ? INT32_MIN : (int32_t)v;
        break;
    }
}

/* Uniform in [lo, hi); i32 gets the integers in [lo, hi]. */
static tens trand(const char *s, double lo, double hi)
{
    tens x = tnew(s);
    for (int64_t i = 0; i < numel(&x); i++)
        tset(&x, i, x.t.dtype == RT_I32 ? floor(rng_uniform(lo, hi + 1)) : rng_uniform(lo, hi));
    return x;
}

static void tfree(tens *x)
{
    free(x->p);
    x->p = NULL;
}

static void unravel(int64_t i, const rt_type *t, int64_t *idx)
{
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = i % t->dim[d];
        i /= t->dim[d];
    }
}

/* The row-major number, within t's first tn dims, of the position that the
 * index oidx over on dims (aligned at the end) broadcasts to. */
static int64_t bidx(const rt_type *t, int tn, const int64_t *oidx, int on)
{
    int64_t f = 0;
    for (int j = 0; j < tn; j++)
        f = f * t->dim[j] + (t->dim[j] == 1 ? 0 : oidx[j + on - tn]);
    return f;
}

/* ---- running and comparing ---- */

static su_status err;
static int64_t ctx_coord[RT_MAX_AXES] = {1, 2};
static int64_t ctx_sizes[RT_MAX_AXES] = {2, 3};

/* Runs in on operands ops[0..nin-1] into out, each in its own buffer; a
 * failure's message is in err.msg, and printed unless quiet. */
static int run_q(rt_instr *in, tens *ops, int nin, tens *out, int quiet)
{
    void *bufs[RT_MAX_IN + 1];
    rt_cpu_ctx ctx = {.axis_size = ctx_sizes, .naxes = 2};
    memcpy(ctx.coord, ctx_coord, sizeof ctx_coord);
    in->nin = (uint8_t)nin;
    for (int i = 0; i < nin; i++) {
        in->in[i] = i;
        in->in_t[i] = ops[i].t;
        bufs[i] = ops[i].p;
    }
    in->out = nin;
    in->out_t = out->t;
    bufs[nin] = out->p;
    err.msg[0] = 0;
    int rc = rt_cpu_run(&ctx, in, bufs, &err);
    if (rc != 0 && !quiet)
        fprintf(stderr, "rt_cpu_run(%s): %s\n", rt_ops[in->op].name, err.msg);
    return rc;
}

static int run(rt_instr *in, tens *ops, int nin, tens *out)
{
    return run_q(in, ops, nin, out, 0);
}

/* For the error cases: the failure is expected. */
static int run_err(rt_instr *in, tens *ops, int nin, tens *out)
{
    return run_q(in, ops, nin, out, 1);
}

static double rtol_of(int dtype)
{
    return dtype == RT_F32 ? 1e-5 : dtype == RT_F16 ? 2e-3 : dtype == RT_BF16 ? 1e-2 : 0;
}

static double atol_of(int dtype)
{
    return dtype == RT_F32 ? 1e-6 : dtype == RT_F16 ? 1e-3 : dtype == RT_BF16 ? 1e-2 : 0;
}

/* One check: every element of got within atol + rtol |want|; on failure
 * prints the max absolute and relative errors and the worst element. */
static void close_to(const char *what, int line, const tens *got, const double *want,
                     double rtol, double atol)
{
    double maxabs = 0, maxrel = 0, worst_err = 0;
    int64_t worst = -1;
    for (int64_t i = 0; i < numel(got); i++) {
        double g = tget(got, i), w = want[i], e = fabs(g - w);
        int ok = e <= atol + rtol * fabs(w) || (isnan(g) && isnan(w)) || g == w;
        if (!ok && (worst < 0 || e > worst_err)) {
            worst = i;
            worst_err = e;
        }
        if (!(isnan(g) && isnan(w)) && g != w) {
            maxabs = e > maxabs ? e : maxabs;
            maxrel = w != 0 && e / fabs(w) > maxrel ? e / fabs(w) : maxrel;
        }
    }
    check_count++;
    if (worst >= 0) {
        check_failures++;
        fprintf(stderr,
                "%s:%d: %s: max abs error %.3g, max rel error %.3g (rtol %g, atol %g); "
                "element %lld: got %.9g, want %.9g\n",
                __FILE__, line, what, maxabs, maxrel, rtol, atol, (long long)worst,
                tget(got, worst), want[worst]);
    }
}
#define CLOSE(what, got, want) \
    close_to(what, __LINE__, got, want, rtol_of((got)->t.dtype), atol_of((got)->t.dtype))
#define CLOSE_TOL(what, got, want, rtol, atol) close_to(what, __LINE__, got, want, rtol, atol)

/* Fails unless got contains sub. */
#define CHECK_HAS(got, sub)                                                  \
    do {                                                                     \
        const char *g_ = (got), *s_ = (sub);                                 \
        check_count++;                                                       \
        if (!strstr(g_, s_)) {                                               \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: \"%s\" lacks \"%s\"\n",   \
                    __FILE__, __LINE__, g_, s_);                             \
        }                                                                    \
    } while (0)

static double *want_of(const tens *out)
{
    return calloc((size_t)numel(out) + 1, sizeof(double));
}

/* ---- conversions ---- */

/* v rounded to a binary format with `mant` fraction bits, minimum normal
 * exponent emin and largest finite value max, to nearest even, in double:
 * an independent model of f16 (10, -14, 65504) and bf16 (7, -126, ~3.39e38). */
static double round_fmt(double v, int mant, int emin, double max)
{
    if (v == 0 || isnan(v) || isinf(v))
        return v;
    int e = (int)floor(log2(fabs(v)));
    if (e < emin)
        e = emin;
    double q = ldexp(1.0, e - mant);
    double r = nearbyint(v / q) * q;
    return fabs(r) > max ? copysign(INFINITY, v) : r;
}

static double round_f16(double v)
{
    return round_fmt(v, 10, -14, 65504.0);
}

static double round_bf16(double v)
{
    return round_fmt(v, 7, -126, 0x1.fep127);
}

static void test_conversions(void)
{
    /* f16 bit patterns */
    CHECK_INT(su_f32_to_f16(1.0f), 0x3c00);
    CHECK_INT(su_f32_to_f16(-2.0f), 0xc000);
    CHECK_INT(su_f32_to_f16(65504.0f), 0x7bff);
    CHECK_INT(su_f32_to_f16(65519.0f), 0x7bff);
    CHECK_INT(su_f32_to_f16(65520.0f), 0x7c00); /* the tie rounds to even: inf */
    CHECK_INT(su_f32_to_f16(1e10f), 0x7c00);
    CHECK_INT(su_f32_to_f16(INFINITY), 0x7c00);
    CHECK_INT(su_f32_to_f16(-INFINITY), 0xfc00);
    uint16_t hn = su_f32_to_f16(NAN);
    CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0);
    CHECK_INT(su_f32_to_f16(0x1p-24f), 0x0001);  /* the smallest subnormal */
    CHECK_INT(su_f32_to_f16(0x1p-25f), 0x0000);  /* half of it: tie to even 0 */
    CHECK_INT(su_f32_to_f16(0x1.8p-24f), 0x0002); /* 1.5 units: tie to even 2 */
    CHECK_INT(su_f32_to_f16(0x1.000002p-25f), 0x0001);
    CHECK_INT(su_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* the largest subnormal */
    CHECK_INT(su_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie: up to the smallest normal */
    CHECK_INT(su_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie: down to even */
    CHECK_INT(su_f32_to_f16(1.0f + 0x3p-11f), 0x3c02); /* tie: up to even */
    CHECK_INT(su_f32_to_f16(-0.0f), 0x8000);
    CHECK_INT(su_f32_to_f16(0x1p-30f), 0x0000);
    CHECK(su_f16_to_f32(0x3c00) == 1.0f);
    CHECK(su_f16_to_f32(0xc000) == -2.0f);
    CHECK(su_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(su_f16_to_f32(0x0001) == 0x1p-24f);
    CHECK(su_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    CHECK(su_f16_to_f32(0x0400) == 0x1p-14f);
    CHECK(isinf(su_f16_to_f32(0x7c00)) && su_f16_to_f32(0xfc00) < 0);
    CHECK(isnan(su_f16_to_f32(0x7e00)));
    CHECK(signbit(su_f16_to_f32(0x8000)) && su_f16_to_f32(0x8000) == 0);

    /* bf16 bit patterns */
    CHECK_INT(su_f32_to_bf16(1.0f), 0x3f80);
    CHECK_INT(su_f32_to_bf16(-2.0f), 0xc000);
    CHECK_INT(su_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie: down to even */
    CHECK_INT(su_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82); /* tie: up to even */
    CHECK_INT(su_f32_to_bf16(INFINITY), 0x7f80);
    CHECK_INT(su_f32_to_bf16(FLT_MAX), 0x7f80); /* rounds past the largest bf16 */
    uint16_t bn = su_f32_to_bf16(NAN);
    CHECK((bn & 0x7f80) == 0x7f80 && (bn & 0x7f) != 0);
    /* a nan whose payload lies only in the low 16 bits stays a nan */
    float lownan;
    uint32_t lownan_bits = 0x7f800001u;
    memcpy(&lownan, &lownan_bits, sizeof lownan);
    CHECK(isnan(su_bf16_to_f32(su_f32_to_bf16(lownan))));
    CHECK(su_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(su_bf16_to_f32(0xc000) == -2.0f);

    /* every f16 round trips; random floats over the whole f16 range
     * (subnormals included) round as the double model does */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = su_f16_to_f32((uint16_t)h);
        if (!isnan(f) && su_f32_to_f16(f) != h)
            bad++;
    }
    CHECK_INT(bad, 0);
    int bad16 = 0, badbf = 0;
    for (int i = 0; i < 200000; i++) {
        double mag = ldexp(1.0, (int)rng_uniform(-27, 17));
        float f = (float)(rng_uniform(-1, 1) * mag);
        if (su_f16_to_f32(su_f32_to_f16(f)) != (float)round_f16(f))
            bad16++;
        float g = (float)(rng_uniform(-1, 1) * ldexp(1.0, (int)rng_uniform(-130, 128)));
        if (su_bf16_to_f32(su_f32_to_bf16(g)) != (float)round_bf16(g))
            badbf++;
    }
    CHECK_INT(bad16, 0);
    CHECK_INT(badbf, 0);
}

/* ---- elementwise ---- */

static double ref_bin(int op, double a, double b)
{
    switch (op) {
    case RT_OP_ADD: return a + b;
    case RT_OP_SUB: return a - b;
    case RT_OP_MUL: return a * b;
    case RT_OP_DIV: return a / b;
    case RT_OP_MAX: return a > b ? a : b;
    case RT_OP_MIN: return a < b ? a : b;
    case RT_OP_GT: return a > b;
    case RT_OP_EQ: return a == b;
    case RT_OP_GELU_GRAD: { /* (x, dy) */
        double c = sqrt(2 / M_PI), th = tanh(c * (a + 0.044715 * a * a * a));
        return b * (0.5 * (1 + th) + 0.5 * a * (1 - th * th) * c * (1 + 3 * 0.044715 * a * a));
    }
    case RT_OP_SILU_GRAD: {
        double sg = 1 / (1 + exp(-a));
        return b * sg * (1 + a * (1 - sg));
    }
    default: return pow(a, b);
    }
}

/* op on operands of types sa and sb with the result type so. */
static void binary_case(int op, const char *sa, const char *sb, const char *so)
{
    int isint = sa[0] == 'i';
    tens x[2] = {trand(sa, isint ? 1 : 0.5, isint ? 50 : 2.0),
                 trand(sb, isint ? 1 : 0.5, isint ? 50 : 2.0)};
    tens out = tnew(so);
    if (op != RT_OP_POW)
        for (int k = 0; k < 2; k++)
            for (int64_t i = 0; i < numel(&x[k]); i += 2) /* mixed signs */
                tset(&x[k], i, -tget(&x[k], i));
    rt_instr in = {.op = (uint16_t)op};
    CHECK_INT(run(&in, x, 2, &out), 0);
    double *want = want_of(&out);
    int64_t idx[RT_MAX_RANK];
    for (int64_t i = 0; i < numel(&out); i++) {
        unravel(i, &out.t, idx);
        double a = tget(&x[0], bidx(&x[0].t, x[0].t.rank, idx, out.t.rank));
        double b = tget(&x[1], bidx(&x[1].t, x[1].t.rank, idx, out.t.rank));
        want[i] = isint && op == RT_OP_DIV ? trunc(a / b) : ref_bin(op, a, b);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s, %s", rt_ops[op].name, sa, sb);
    CLOSE(what, &out, want);
    free(want);
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

static const char *const bin_shapes[][3] = {
    {"f32[3, 4]", "f32[3, 4]", "f32[3, 4]"},             /* equal */
    {"f32[2, 3, 40]", "f32[40]", "f32[2, 3, 40]"},       /* bias row */
    {"f32[2, 3, 4]", "f32[3, 1]", "f32[2, 3, 4]"},       /* column */
    {"f32[2, 1, 4]", "f32[3, 1]", "f32[2, 3, 4]"},       /* both broadcast */
    {"f32[]", "f32[5]", "f32[5]"},                       /* scalar first */
    {"f32[5, 2]", "f32[]", "f32[5, 2]"},                 /* scalar second */
    {"f32[1]", "f32[1, 1]", "f32[1, 1]"},
    {"f32[]", "f32[]", "f32[]"},
    {"f32[4, 1, 3, 1]", "f32[1, 5, 1, 2]", "f32[4, 5, 3, 2]"},
    {"f32[2, 3, 4]", "f32[2, 1, 4]", "f32[2, 3, 4]"},   /* middle broadcast */
};
enum { NBIN_SHAPES = sizeof bin_shapes / sizeof *bin_shapes };

static void test_binary(void)
{
    for (int op = RT_OP_ADD; op <= RT_OP_POW; op++)
        for (size_t s = 0; s < NBIN_SHAPES; s++)
            binary_case(op, bin_shapes[s][0], bin_shapes[s][1], bin_shapes[s][2]);
    binary_case(RT_OP_ADD, "f16[2, 3, 8]", "f16[8]", "f16[2, 3, 8]");
    binary_case(RT_OP_MUL, "bf16[3, 1]", "bf16[3, 4]", "bf16[3, 4]");
    binary_case(RT_OP_DIV, "bf16[6]", "bf16[]", "bf16[6]");
    binary_case(RT_OP_POW, "f16[4, 5]", "f16[4, 5]", "f16[4, 5]");
    for (int op = RT_OP_ADD; op <= RT_OP_MIN; op++) {
        binary_case(op, "i32[3, 4]", "i32[4]", "i32[3, 4]");
        binary_case(op, "i32[2, 1]", "i32[1, 3]", "i32[2, 3]");
    }

    /* i32: C's truncating division, wrapping, and division by zero */
    tens a = tnew("i32[6]"), b = tnew("i32[6]"), o = tnew("i32[6]");
    int32_t av[6] = {7, -7, 7, -7, INT32_MIN, INT32_MAX}, bv[6] = {2, 2, -2, -2, -1, 1};
    memcpy(a.p, av, sizeof av);
    memcpy(b.p, bv, sizeof bv);
    tens ab[2] = {a, b};
    rt_instr div = {.op = RT_OP_DIV};
    CHECK_INT(run(&div, ab, 2, &o), 0);
    int32_t *ov = o.p;
    CHECK(ov[0] == 3 && ov[1] == -3 && ov[2] == -3 && ov[3] == 3 && ov[4] == INT32_MIN &&
          ov[5] == INT32_MAX);
    rt_instr add = {.op = RT_OP_ADD};
    CHECK_INT(run(&add, ab, 2, &o), 0);
    CHECK(ov[4] == INT32_MAX && ov[5] == INT32_MIN); /* wrapped */
    ((int32_t *)b.p)[3] = 0;
    CHECK_INT(run_err(&div, ab, 2, &o), -1);
    CHECK_STR(err.msg, "div: i32 division by zero at result index 3");
    tfree(&a);
    tfree(&b);
    tfree(&o);
}

static double ref_un(int op, double x)
{
    switch (op) {
    case RT_OP_NEG: return -x;
    case RT_OP_ABS: return fabs(x);
    case RT_OP_RELU: return x > 0 ? x : 0;
    case RT_OP_GELU: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case RT_OP_SILU: return x / (1 + exp(-x));
    case RT_OP_TANH: return tanh(x);
    case RT_OP_SIGMOID: return 1 / (1 + exp(-x));
    case RT_OP_EXP: return exp(x);
    case RT_OP_LOG: return log(x);
    case RT_OP_SQRT: return sqrt(x);
    case RT_OP_SIN: return sin(x);
    case RT_OP_COS: return cos(x);
    default: return 1 / sqrt(x);
    }
}

/* in place when inplace: the result overwrites the operand's memory. */
static void unary_case(int op, const char *s, double lo, double hi, int inplace)
{
    tens x = trand(s, lo, hi), out = inplace ? x : tnew(s);
    double *want = want_of(&x);
    for (int64_t i = 0; i < numel(&x); i++)
        want[i] = ref_un(op, tget(&x, i));
    rt_instr in = {.op = (uint16_t)op};
    CHECK_INT(run(&in, &x, 1, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "%s %s%s", rt_ops[op].name, s, inplace ? " in place" : "");
    CLOSE(what, &out, want);
    free(want);
    if (!inplace)
        tfree(&out);
    tfree(&x);
}

static void test_unary(void)
{
    static const int extra[] = {RT_OP_SIN, RT_OP_COS};
    for (int i = 0; i < 2; i++) {
        unary_case(extra[i], "f32[3, 37]", -20, 20, 0);
        unary_case(extra[i], "f32[129]", -6, 6, 1);
        unary_case(extra[i], "bf16[4, 5]", -6, 6, 0);
        unary_case(extra[i], "f16[17]", -6, 6, 1);
    }
    for (int op = RT_OP_NEG; op <= RT_OP_RSQRT; op++) {
        int positive = op == RT_OP_LOG || op == RT_OP_SQRT || op == RT_OP_RSQRT;
        double lo = positive ? 0.01 : -6, hi = positive ? 50 : 6;
        unary_case(op, "f32[3, 37]", lo, hi, 0);
        unary_case(op, "f32[]", lo, hi, 0);
        unary_case(op, "f32[129]", lo, hi, 1);
        unary_case(op, "bf16[4, 5]", lo, hi, 0);
        unary_case(op, "f16[17]", lo, hi, 1);
    }
    for (int op = RT_OP_NEG; op <= RT_OP_RELU; op++)
        unary_case(op, "i32[2, 9]", -100, 100, 0);
    /* sigmoid and silu stay finite and exact at the extremes */
    tens x = tnew("f32[4]"), o = tnew("f32[4]");
    float xv[4] = {-1000, 1000, -88, 89};
    memcpy(x.p, xv, sizeof xv);
    rt_instr sg = {.op = RT_OP_SIGMOID};
    CHECK_INT(run(&sg, &x, 1, &o), 0);
    const float *ov = o.p;
    CHECK(ov[0] == 0 && ov[1] == 1 && ov[2] > 0 && ov[2] < 1e-37 && ov[3] == 1);
    rt_instr exp_i32 = {.op = RT_OP_EXP};
    tens xi = tnew("i32[2]"), oi = tnew("i32[2]");
    CHECK_INT(run_err(&exp_i32, &xi, 1, &oi), -1);
    CHECK_STR(err.msg, "exp of i32 is not supported");
    tfree(&x);
    tfree(&o);
    tfree(&xi);
    tfree(&oi);
}

/* ---- cast and copy ---- */

static double ref_cast(int to, double v)
{
    switch (to) {
    case RT_F32: return (float)v;
    case RT_F16: return round_f16(v);
    case RT_BF16: return round_bf16(v);
    default:
        if (isnan(v))
            return 0;
        return v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : trunc(v);
    }
}

static void test_cast(void)
{
    static const char *const dt[] = {"f32[7, 11]", "f16[7, 11]", "bf16[7, 11]", "i32[7, 11]"};
    for (int from = 0; from < 4; from++)
        for (int to = 0; to < 4; to++) {
            tens x = trand(dt[from], -70000, 70000), out = tnew(dt[to]);
            tset(&x, 0, 0.5);
            tset(&x, 1, -2.75);
            tset(&x, 2, 3e9); /* saturates in i32 (and f16: inf) */
            double *want = want_of(&out);
            for (int64_t i = 0; i < numel(&x); i++)
                want[i] = ref_cast(to, tget(&x, i));
            rt_instr in = {.op = RT_OP_CAST};
            CHECK_INT(run(&in, &x, 1, &out), 0);
            char what[64];
            snprintf(what, sizeof what, "cast %s to %s", rt_dtype_name(from), rt_dtype_name(to));
            CLOSE_TOL(what, &out, want, 0, 0); /* correctly rounded: exact */
            free(want);
            tfree(&x);
            tfree(&out);
        }

    /* float to i32 truncates toward zero, saturates, nan is 0 */
    tens f = tnew("f32[7]"), i = tnew("i32[7]");
    float fv[7] = {2.7f, -2.7f, 1e10f, -1e10f, NAN, INFINITY, -0.5f};
    memcpy(f.p, fv, sizeof fv);
    rt_instr c = {.op = RT_OP_CAST};
    CHECK_INT(run(&c, &f, 1, &i), 0);
    const int32_t *iv = i.p;
    CHECK(iv[0] == 2 && iv[1] == -2 && iv[2] == INT32_MAX && iv[3] == INT32_MIN && iv[4] == 0 &&
          iv[5] == INT32_MAX && iv[6] == 0);

    /* i32 to bf16 rounds once: 2^24 + 2^16 + 1 is above the tie, so up, where
     * rounding through f32 would give the tie and round down to 2^24 */
    tens n = tnew("i32[2]"), b = tnew("bf16[2]");
    ((int32_t *)n.p)[0] = (1 << 24) + (1 << 16) + 1;
    ((int32_t *)n.p)[1] = -((1 << 24) + (1 << 16) + 1);
    CHECK_INT(run(&c, &n, 1, &b), 0);
    CHECK(tget(&b, 0) == (1 << 24) + (1 << 17) && tget(&b, 1) == -((1 << 24) + (1 << 17)));

    /* in place, widening: f16 into the same buffer as f32 */
    tens h = tnew("f32[9]"); /* room for the f32 result */
    h.t = ty("f16[9]");
    for (int k = 0; k < 9; k++)
        tset(&h, k, k * 1.5 - 4);
    tens w = {ty("f32[9]"), h.p};
    CHECK_INT(run(&c, &h, 1, &w), 0);
    int ok = 1;
    for (int k = 0; k < 9; k++)
        ok &= tget(&w, k) == k * 1.5 - 4;
    CHECK(ok);
    /* and narrowing back */
    tens h2 = {ty("f16[9]"), h.p};
    CHECK_INT(run(&c, &w, 1, &h2), 0);
    ok = 1;
    for (int k = 0; k < 9; k++)
        ok &= tget(&h2, k) == k * 1.5 - 4;
    CHECK(ok);

    /* copy: the bytes, a new shape */
    tens x = trand("bf16[2, 3, 4]", -1, 1), y = tnew("bf16[6, 4]");
    rt_instr cp = {.op = RT_OP_COPY};
    CHECK_INT(run(&cp, &x, 1, &y), 0);
    CHECK(memcmp(x.p, y.p, 48) == 0);
    tfree(&x);
    tfree(&y);
    tfree(&f);
    tfree(&i);
    tfree(&n);
    tfree(&b);
    tfree(&h);
}

/* ---- matmul and attention ---- */

/* sa, sb: the operands as stored; trans: RT_TRANS_A | RT_TRANS_B, an
 * operand read with its last two dims swapped. */
static void matmul_case_t(const char *sa, const char *sb, const char *so, int trans)
{
    int isint = sa[0] == 'i';
    double lo = isint ? -9 : -1, hi = isint ? 9 : 1;
    tens x[2] = {trand(sa, lo, hi), trand(sb, lo, hi)};
    tens out = tnew(so);
    const rt_type *ta = &x[0].t, *tb = &x[1].t, *to = &out.t;
    bool tra = trans & RT_TRANS_A, trb = trans & RT_TRANS_B;
    int64_t k = ta->dim[ta->rank - 1 - tra];
    int64_t m = ta->rank >= 2 ? ta->dim[ta->rank - 2 + tra] : 1;
    int64_t n = tb->rank >= 2 ? tb->dim[tb->rank - 1 - trb] : 1;
    int nb = to->rank - (ta->rank >= 2) - (tb->rank >= 2);
    int na = ta->rank > 2 ? ta->rank - 2 : 0, nbb = tb->rank > 2 ? tb->rank - 2 : 0;
    double *want = want_of(&out);
    int64_t idx[RT_MAX_RANK];
    for (int64_t e = 0; e < numel(&out); e++) {
        unravel(e, to, idx);
        int64_t i = ta->rank >= 2 ? idx[nb] : 0, j = tb->rank >= 2 ? idx[to->rank - 1] : 0;
        int64_t ba = bidx(ta, na, idx, nb), bb = bidx(tb, nbb, idx, nb);
        double s = 0;
        for (int64_t p = 0; p < k; p++)
            s += tget(&x[0], tra ? (ba * k + p) * m + i : (ba * m + i) * k + p) *
                 tget(&x[1], trb ? (bb * n + j) * k + p : (bb * k + p) * n + j);
        want[e] = s;
    }
    rt_instr in = {.op = RT_OP_MATMUL, .dim = trans};
    CHECK_INT(run(&in, x, 2, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "matmul %s @ %s (trans %d)", sa, sb, trans);
    CLOSE_TOL(what, &out, want, rtol_of(to->dtype),
              to->dtype == RT_F32 ? 1e-5 : atol_of(to->dtype));
    free(want);
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

static void matmul_case(const char *sa, const char *sb, const char *so)
{
    matmul_case_t(sa, sb, so, 0);
}

static void test_matmul(void)
{
    /* operands read transposed (plan.h's RT_TRANS_*): the backward's
     * dy @ w^T and x^T @ dy, batched, broadcast, and in bf16 */
    matmul_case_t("f32[5, 4]", "f32[5, 3]", "f32[4, 3]", RT_TRANS_A);
    matmul_case_t("f32[4, 5]", "f32[3, 5]", "f32[4, 3]", RT_TRANS_B);
    matmul_case_t("f32[5, 4]", "f32[3, 5]", "f32[4, 3]", RT_TRANS_A | RT_TRANS_B);
    matmul_case_t("f32[2, 6, 4]", "f32[5, 6]", "f32[2, 4, 5]", RT_TRANS_A | RT_TRANS_B);
    matmul_case_t("f32[2, 3, 4]", "f32[5, 4]", "f32[2, 3, 5]", RT_TRANS_B); /* folded into M */
    matmul_case_t("f32[2, 33, 65]", "f32[2, 33, 17]", "f32[2, 65, 17]", RT_TRANS_A);
    matmul_case_t("f32[3, 4]", "f32[2, 5, 4]", "f32[2, 3, 5]", RT_TRANS_B);
    matmul_case_t("f32[3, 4]", "f32[3]", "f32[4]", RT_TRANS_A);
    matmul_case_t("bf16[2, 8, 5]", "bf16[2, 3, 8]", "bf16[2, 5, 3]", RT_TRANS_A | RT_TRANS_B);
    matmul_case("f32[3, 4]", "f32[4, 5]", "f32[3, 5]");
    matmul_case("f32[4]", "f32[4, 5]", "f32[5]");
    matmul_case("f32[3, 4]", "f32[4]", "f32[3]");
    matmul_case("f32[4]", "f32[4]", "f32[]");
    matmul_case("f32[2, 3, 4]", "f32[4, 5]", "f32[2, 3, 5]");         /* folded into M */
    matmul_case("f32[2, 3, 6, 4]", "f32[4, 5]", "f32[2, 3, 6, 5]");
    matmul_case("f32[2, 3, 4]", "f32[4]", "f32[2, 3]");
    matmul_case("f32[4]", "f32[2, 4, 5]", "f32[2, 5]");
    matmul_case("f32[3, 4]", "f32[2, 4, 5]", "f32[2, 3, 5]");          /* a broadcast */
    matmul_case("f32[2, 1, 3, 4]", "f32[5, 4, 2]", "f32[2, 5, 3, 2]"); /* both broadcast */
    matmul_case("f32[3, 2, 3, 4]", "f32[3, 1, 4, 2]", "f32[3, 2, 3, 2]");
    matmul_case("f32[2, 3, 4]", "f32[1, 4, 5]", "f32[2, 3, 5]");       /* folded too */
    matmul_case("f32[3, 4]", "f32[1, 1, 4, 5]", "f32[1, 1, 3, 5]");
    matmul_case("f32[2, 33, 65]", "f32[2, 65, 17]", "f32[2, 33, 17]");
    matmul_case("f16[2, 5, 8]", "f16[8, 3]", "f16[2, 5, 3]");
    matmul_case("bf16[2, 5, 8]", "bf16[2, 8, 3]", "bf16[2, 5, 3]");
    matmul_case("i32[2, 3, 4]", "i32[4, 5]", "i32[2, 3, 5]");
    matmul_case("i32[2, 3, 4]", "i32[1, 4, 5]", "i32[2, 3, 5]");
}

/* f32 x split into its parts (RT_OP_SPLIT3) along dim, reversed or not:
 * the parts by an independent model of bf16 (round_fmt), summing back to
 * x exactly (h alone where h is not finite); the parts tensor. */
static tens split_case(const tens *x, int dim, bool rev)
{
    char spec[64];
    rt_type t = x->t;
    t.dtype = RT_BF16;
    t.dim[dim] *= 3;
    int len = snprintf(spec, sizeof spec, "bf16[");
    for (int d = 0; d < t.rank; d++)
        len += snprintf(spec + len, sizeof spec - (size_t)len, "%s%lld", d ? ", " : "",
                        (long long)t.dim[d]);
    snprintf(spec + len, sizeof spec - (size_t)len, "]");
    tens p = tnew(spec);
    rt_instr in = {.op = RT_OP_SPLIT3, .dim = dim, .dim2 = rev};
    tens xs = *x; /* run's operands are not freed */
    CHECK_INT(run(&in, &xs, 1, &p), 0);
    int64_t inner = 1, k = x->t.dim[dim];
    for (int d = dim + 1; d < x->t.rank; d++)
        inner *= x->t.dim[d];
    int bad = 0;
    for (int64_t i = 0; i < numel(x); i++) {
        int64_t o = i / (k * inner), r = i % (k * inner);
        double v = tget(x, i), part[3], rest = v;
        for (int j = 0; j < 3; j++) {
            part[j] = round_bf16(rest);
            rest = isfinite(part[0]) ? rest - part[j] : 0;
        }
        double sum = 0;
        for (int j = 0; j < 3; j++) {
            double got = tget(&p, o * 3 * k * inner + (rev ? 2 - j : j) * k * inner + r);
            sum += got;
            bad += got != part[j] && !(isnan(got) && isnan(part[j]));
        }
        bad += isfinite(part[0]) && fabs(v) >= 0x1p-100 && sum != v;
    }
    CHECK_INT(bad, 0);
    return p;
}

/* a @ b (stored sa, sb; trans as RT_TRANS_*) from the split3 parts of
 * each along its contracted dim, a matmul of parts (RT_MM_PARTS): within
 * (K + 3) 2^-24 of sum |a_ik b_kj| of the product in double (the f32 sums'
 * own error, K 2^-24, and the parts left out, below 3 2^-24), as the
 * f32 matmul is, and no further from it than f32's error twice. */
static void parts_case(const char *sa, const char *sb, const char *so, int trans)
{
    tens x[2] = {trand(sa, -1, 1), trand(sb, -1, 1)};
    tens out = tnew(so), f32 = tnew(so);
    const rt_type *ta = &x[0].t, *tb = &x[1].t, *to = &out.t;
    bool tra = trans & RT_TRANS_A, trb = trans & RT_TRANS_B;
    int ka = ta->rank == 1 ? 0 : ta->rank - 1 - tra, kb = tb->rank == 1 ? 0 : tb->rank - 2 + trb;
    int64_t k = ta->dim[ka];
    int64_t m = ta->rank >= 2 ? ta->dim[ta->rank - 2 + tra] : 1;
    int64_t n = tb->rank >= 2 ? tb->dim[tb->rank - 1 - trb] : 1;
    int nb = to->rank - (ta->rank >= 2) - (tb->rank >= 2);
    int na = ta->rank > 2 ? ta->rank - 2 : 0, nbb = tb->rank > 2 ? tb->rank - 2 : 0;
    tens p[2] = {split_case(&x[0], ka, false), split_case(&x[1], kb, true)};
    rt_instr in = {.op = RT_OP_MATMUL, .dim = trans | RT_MM_PARTS};
    CHECK_INT(run(&in, p, 2, &out), 0);
    rt_instr plain = {.op = RT_OP_MATMUL, .dim = trans};
    CHECK_INT(run(&plain, x, 2, &f32), 0);
    int64_t idx[RT_MAX_RANK];
    double worst = 0, worst32 = 0;
    for (int64_t e = 0; e < numel(&out); e++) {
        unravel(e, to, idx);
        int64_t i = ta->rank >= 2 ? idx[nb] : 0, j = tb->rank >= 2 ? idx[to->rank - 1] : 0;
        int64_t ba = bidx(ta, na, idx, nb), bb = bidx(tb, nbb, idx, nb);
        double s = 0, mag = 0;
        for (int64_t q = 0; q < k; q++) {
            double t = tget(&x[0], tra ? (ba * k + q) * m + i : (ba * m + i) * k + q) *
                       tget(&x[1], trb ? (bb * n + j) * k + q : (bb * k + q) * n + j);
            s += t;
            mag += fabs(t);
        }
        double u = ldexp(mag, -24);
        worst = fmax(worst, fabs(tget(&out, e) - s) / u);
        worst32 = fmax(worst32, fabs(tget(&f32, e) - s) / u);
    }
    if (worst > (double)k + 3 || worst > 2 * worst32 + 3)
        fprintf(stderr, "  parts %s @ %s (trans %d): error %.3g x 2^-24 sum |ab|, f32's %.3g\n",
                sa, sb, trans, worst, worst32);
    CHECK(worst <= (double)k + 3);
    CHECK(worst <= 2 * worst32 + 3);
    for (int i = 0; i < 2; i++) {
        tfree(&x[i]);
        tfree(&p[i]);
    }
    tfree(&out);
    tfree(&f32);
}

static void test_parts(void)
{
    parts_case("f32[5, 48]", "f32[48, 7]", "f32[5, 7]", 0);
    parts_case("f32[48, 5]", "f32[48, 7]", "f32[5, 7]", RT_TRANS_A);
    parts_case("f32[5, 48]", "f32[7, 48]", "f32[5, 7]", RT_TRANS_B);
    parts_case("f32[48, 5]", "f32[7, 48]", "f32[5, 7]", RT_TRANS_A | RT_TRANS_B);
    parts_case("f32[2, 3, 64]", "f32[64, 5]", "f32[2, 3, 5]", 0);        /* folded into M */
    parts_case("f32[2, 64, 3]", "f32[2, 64, 5]", "f32[2, 3, 5]", RT_TRANS_A); /* batched */
    parts_case("f32[3, 300]", "f32[2, 300, 4]", "f32[2, 3, 4]", 0);      /* a broadcast */
    parts_case("f32[300]", "f32[300, 4]", "f32[4]", 0);
    parts_case("f32[4, 300]", "f32[300]", "f32[4]", 0);
    /* h alone where it is not finite: an inf times a finite part stays inf */
    tens x = tnew("f32[4]");
    float v[4] = {INFINITY, -NAN, 0x1.fffffep127f, 0x1p-120f};
    memcpy(x.p, v, sizeof v);
    tens p = split_case(&x, 0, false);
    CHECK(isinf(tget(&p, 0)) && tget(&p, 4) == 0 && tget(&p, 8) == 0);
    CHECK(isnan(tget(&p, 1)) && tget(&p, 5) == 0 && tget(&p, 9) == 0);
    CHECK(isinf(tget(&p, 2)) && tget(&p, 6) == 0 && tget(&p, 10) == 0);
    tfree(&x);
    tfree(&p);
}

/* Random query positions for q of spec sq and t keys (attention's last
 * operand where the queries are split): -2 .. t, so that some rows see no
 * key and some every key. */
static tens positions(const char *sq, int64_t t)
{
    tens q = tnew(sq);
    char spec[32];
    snprintf(spec, sizeof spec, "i32[%lld]", (long long)q.t.dim[q.t.rank - 2]);
    tfree(&q);
    return trand(spec, -2, (double)t);
}

/* The last key row i of a causal attention sees: pos[i], or without
 * positions i + (t - s), the mask aligned to the end. */
static int64_t last_key(const tens *pos, int64_t i, int64_t s, int64_t t)
{
    return pos ? (int64_t)tget(pos, i) : i + (t - s);
}

/* attention against a double reference; with_pos: causal, with query
 * positions. */
static void attention_case_at(const char *sq, const char *sk, const char *sv, const char *so,
                              int causal, int with_pos)
{
    tens x[4] = {trand(sq, -2, 2), trand(sk, -2, 2), trand(sv, -1, 1)}, out = tnew(so);
    int r = x[0].t.rank;
    int64_t s = x[0].t.dim[r - 2], d = x[0].t.dim[r - 1], t = x[1].t.dim[r - 2];
    int64_t dv = x[2].t.dim[r - 1], heads = numel(&x[0]) / (s * d);
    if (with_pos)
        x[3] = positions(sq, t);
    const tens *pos = with_pos ? &x[3] : NULL;
    double *want = want_of(&out), *p = calloc((size_t)t, sizeof(double));
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < s; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < t; j++) {
                double dot = 0;
                for (int64_t c = 0; c < d; c++)
                    dot += tget(&x[0], (h * s + i) * d + c) * tget(&x[1], (h * t + j) * d + c);
                p[j] = causal && j > last_key(pos, i, s, t) ? -INFINITY : dot / sqrt((double)d);
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int64_t j = 0; j < t; j++) {
                p[j] = p[j] == -INFINITY ? 0 : exp(p[j] - mx);
                sum += p[j];
            }
            for (int64_t e = 0; e < dv; e++) {
                double o = 0;
                for (int64_t j = 0; j < t; j++)
                    o += p[j] * tget(&x[2], (h * t + j) * dv + e);
                want[(h * s + i) * dv + e] = sum > 0 ? o / sum : 0;
            }
        }
    rt_instr in = {.op = RT_OP_ATTENTION, .causal = (uint8_t)causal};
    CHECK_INT(run(&in, x, with_pos ? 4 : 3, &out), 0);
    char what[160];
    snprintf(what, sizeof what, "attention %s %s %s%s%s", sq, sk, sv, causal ? " causal" : "",
             with_pos ? " at positions" : "");
    CLOSE_TOL(what, &out, want, rtol_of(out.t.dtype),
              out.t.dtype == RT_F32 ? 1e-5 : atol_of(out.t.dtype));
    int finite = 1;
    for (int64_t i = 0; i < numel(&out); i++)
        finite &= isfinite(tget(&out, i));
    CHECK(finite);
    free(want);
    free(p);
    for (int i = 0; i < 3 + with_pos; i++)
        tfree(&x[i]);
    tfree(&out);
}

static void attention_case(const char *sq, const char *sk, const char *sv, const char *so,
                           int causal)
{
    attention_case_at(sq, sk, sv, so, causal, 0);
}

static void test_attention(void)
{
    attention_case("f32[2, 3, 5, 4]", "f32[2, 3, 5, 4]", "f32[2, 3, 5, 6]", "f32[2, 3, 5, 6]", 1);
    attention_case("f32[2, 3, 5, 4]", "f32[2, 3, 5, 4]", "f32[2, 3, 5, 6]", "f32[2, 3, 5, 6]", 0);
    attention_case("f32[2, 4, 8]", "f32[2, 7, 8]", "f32[2, 7, 5]", "f32[2, 4, 5]", 1); /* S < T */
    attention_case("f32[2, 4, 8]", "f32[2, 7, 8]", "f32[2, 7, 5]", "f32[2, 4, 5]", 0);
    attention_case("f32[6, 4]", "f32[3, 4]", "f32[3, 2]", "f32[6, 2]", 1); /* T < S: rows of 0 */
    attention_case("f32[1, 33, 16]", "f32[1, 33, 16]", "f32[1, 33, 16]", "f32[1, 33, 16]", 1);
    attention_case("bf16[2, 6, 8]", "bf16[2, 6, 8]", "bf16[2, 6, 8]", "bf16[2, 6, 8]", 1);
    attention_case("f16[3, 5, 4]", "f16[3, 9, 4]", "f16[3, 9, 2]", "f16[3, 5, 2]", 1);
    /* a block of queries split along S, at their global positions */
    attention_case_at("f32[2, 3, 5, 4]", "f32[2, 3, 9, 4]", "f32[2, 3, 9, 6]",
                      "f32[2, 3, 5, 6]", 1, 1);
    attention_case_at("f32[6, 4]", "f32[3, 4]", "f32[3, 2]", "f32[6, 2]", 1, 1);
    attention_case_at("bf16[2, 6, 8]", "bf16[2, 12, 8]", "bf16[2, 12, 8]", "bf16[2, 6, 8]", 1, 1);
}

/* ---- reductions and normalisations ---- */

/* x as [outer, n, inner] around axis. */
static void view3(const rt_type *t, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++)
        *outer *= t->dim[i];
    for (int i = axis + 1; i < t->rank; i++)
        *inner *= t->dim[i];
    *n = t->dim[axis];
}

static void reduce_case(int op, const char *sx, int axis, int keep, const char *so)
{
    int isint = sx[0] == 'i';
    tens x = trand(sx, isint ? -1000 : -3, isint ? 1000 : 3), out = tnew(so);
    int64_t outer, n, inner;
    view3(&x.t, axis, &outer, &n, &inner);
    double *want = want_of(&out);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = op == RT_OP_AMAX ? -INFINITY : 0;
            for (int64_t k = 0; k < n; k++) {
                double v = tget(&x, (p * n + k) * inner + i);
                acc = op == RT_OP_AMAX ? (v > acc ? v : acc) : acc + v;
            }
            want[p * inner + i] = op == RT_OP_MEAN ? acc / (double)n : acc;
        }
    rt_instr in = {.op = (uint16_t)op, .axis = axis, .keepdims = (uint8_t)keep};
    CHECK_INT(run(&in, &x, 1, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "%s %s axis %d", rt_ops[op].name, sx, axis);
    CLOSE(what, &out, want);
    free(want);
    tfree(&x);
    tfree(&out);
}

static void test_reduce(void)
{
    for (int op = RT_OP_SUM; op <= RT_OP_AMAX; op++) {
        reduce_case(op, "f32[4, 5, 6]", 0, 0, "f32[5, 6]");
        reduce_case(op, "f32[4, 5, 6]", 1, 1, "f32[4, 1, 6]");
        reduce_case(op, "f32[4, 5, 6]", 2, 0, "f32[4, 5]");
        reduce_case(op, "f32[7]", 0, 0, "f32[]");
        reduce_case(op, "f32[7]", 0, 1, "f32[1]");
        reduce_case(op, "f32[1, 3]", 0, 0, "f32[3]");
        reduce_case(op, "bf16[3, 50]", 1, 0, "bf16[3]");
        reduce_case(op, "f16[8, 2]", 0, 1, "f16[1, 2]");
    }
    reduce_case(RT_OP_SUM, "i32[4, 5, 6]", 1, 0, "i32[4, 6]");
    reduce_case(RT_OP_AMAX, "i32[4, 5, 6]", 0, 0, "i32[5, 6]");
    reduce_case(RT_OP_AMAX, "i32[9]", 0, 0, "i32[]");

    /* 10^6 f32 values: the sum to ~1e-6 relative (an f32 accumulator would
     * be off by ~1e-4), over the last axis and over the first */
    tens x = trand("f32[1000000]", 0.0, 1.0), o = tnew("f32[]");
    double want = 0;
    for (int64_t i = 0; i < numel(&x); i++)
        want += tget(&x, i);
    rt_instr s = {.op = RT_OP_SUM, .axis = 0};
    CHECK_INT(run(&s, &x, 1, &o), 0);
    CLOSE_TOL("sum of 10^6 f32", &o, &want, 1e-6, 0);
    x.t = ty("f32[500000, 2]");
    tens o2 = tnew("f32[2]");
    double w2[2] = {0, 0};
    for (int64_t i = 0; i < numel(&x); i++)
        w2[i % 2] += tget(&x, i);
    CHECK_INT(run(&s, &x, 1, &o2), 0);
    CLOSE_TOL("sum of 2 x 500000 f32 over axis 0", &o2, w2, 1e-6, 0);
    rt_instr m = {.op = RT_OP_MEAN, .axis = 0};
    CHECK_INT(run(&m, &x, 1, &o2), 0);
    w2[0] /= 500000;
    w2[1] /= 500000;
    CLOSE_TOL("mean of 2 x 500000 f32 over axis 0", &o2, w2, 1e-6, 0);
    tfree(&x);
    tfree(&o);
    tfree(&o2);
}

static void softmax_case(const char *sx, int axis, double scale)
{
    tens x = trand(sx, -scale, scale), out = tnew(sx);
    int64_t outer, n, inner;
    view3(&x.t, axis, &outer, &n, &inner);
    double *want = want_of(&out);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t i = 0; i < inner; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; k++)
                mx = fmax(mx, tget(&x, (p * n + k) * inner + i));
            for (int64_t k = 0; k < n; k++)
                sum += exp(tget(&x, (p * n + k) * inner + i) - mx);
            for (int64_t k = 0; k < n; k++)
                want[(p * n + k) * inner + i] = exp(tget(&x, (p * n + k) * inner + i) - mx) / sum;
        }
    rt_instr in = {.op = RT_OP_SOFTMAX, .axis = axis};
    CHECK_INT(run(&in, &x, 1, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "softmax %s axis %d", sx, axis);
    CLOSE(what, &out, want);
    free(want);
    tfree(&x);
    tfree(&out);
}

static void test_softmax(void)
{
    softmax_case("f32[4, 5, 6]", 0, 3);
    softmax_case("f32[4, 5, 6]", 1, 3);
    softmax_case("f32[4, 5, 6]", 2, 3);
    softmax_case("f32[9]", 0, 3);
    softmax_case("f32[3, 100]", 1, 1000); /* stable: exp(1000) overflows */
    softmax_case("f32[100, 3]", 0, 1000);
    softmax_case("bf16[3, 16]", 1, 4);
    softmax_case("f16[16, 3]", 0, 4);
}

static void norm_case(int op, const char *sx, const char *sp, double offset)
{
    tens x[3] = {trand(sx, offset - 1, offset + 1), trand(sp, 0.5, 1.5), trand(sp, -1, 1)};
    tens out = tnew(sx);
    int64_t d = x[0].t.dim[x[0].t.rank - 1], rows = numel(&x[0]) / d;
    double eps = op == RT_OP_LAYERNORM ? 1e-5 : 1e-6, *want = want_of(&out);
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < d; i++)
            mean += tget(&x[0], r * d + i) / (double)d;
        for (int64_t i = 0; i < d; i++) {
            double v = tget(&x[0], r * d + i);
            var += op == RT_OP_LAYERNORM ? (v - mean) * (v - mean) / (double)d : v * v / (double)d;
        }
        for (int64_t i = 0; i < d; i++) {
            double v = tget(&x[0], r * d + i), g = tget(&x[1], i);
            want[r * d + i] = op == RT_OP_LAYERNORM
                                  ? (v - mean) / sqrt(var + eps) * g + tget(&x[2], i)
                                  : v / sqrt(var + eps) * g;
        }
    }
    rt_instr in = {.op = (uint16_t)op, .eps = eps};
    CHECK_INT(run(&in, x, op == RT_OP_LAYERNORM ? 3 : 2, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "%s %s offset %g", rt_ops[op].name, sx, offset);
    CLOSE(what, &out, want);
    free(want);
    for (int i = 0; i < 3; i++)
        tfree(&x[i]);
    tfree(&out);
}

/* layernorm_rstd and rmsnorm_rstd: each row's 1 / sqrt(var + eps) (the
 * mean square's for rmsnorm) against a double reference, rounded once. */
static void rstd_case(int op, const char *sx, const char *so, double offset)
{
    tens x = trand(sx, offset - 1, offset + 1), out = tnew(so);
    int64_t d = x.t.dim[x.t.rank - 1], rows = numel(&x) / d;
    double eps = op == RT_OP_LAYERNORM_RSTD ? 1e-5 : 1e-6, *want = want_of(&out);
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; op == RT_OP_LAYERNORM_RSTD && i < d; i++)
            mean += tget(&x, r * d + i) / (double)d;
        for (int64_t i = 0; i < d; i++) {
            double v = tget(&x, r * d + i) - mean;
            var += v * v / (double)d;
        }
        want[r] = 1 / sqrt(var + eps);
    }
    rt_instr in = {.op = (uint16_t)op, .eps = eps};
    CHECK_INT(run(&in, &x, 1, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "%s %s offset %g", rt_ops[op].name, sx, offset);
    CLOSE(what, &out, want);
    free(want);
    tfree(&x);
    tfree(&out);
}

static void test_norm(void)
{
    for (int op = RT_OP_LAYERNORM_RSTD; op <= RT_OP_RMSNORM_RSTD; op++) {
        rstd_case(op, "f32[3, 4, 64]", "f32[3, 4, 1]", 0);
        rstd_case(op, "f32[3, 64]", "f32[3, 1]", 100);
        rstd_case(op, "bf16[2, 32]", "bf16[2, 1]", 0);
        rstd_case(op, "f16[4, 16]", "f16[4, 1]", 1);
    }
    for (int op = RT_OP_LAYERNORM; op <= RT_OP_RMSNORM; op++) {
        norm_case(op, "f32[3, 4, 64]", "f32[64]", 0);
        norm_case(op, "f32[3, 64]", "f32[64]", 100); /* two passes keep the variance */
        norm_case(op, "f32[5]", "f32[5]", 0);
        norm_case(op, "bf16[2, 32]", "bf16[32]", 0);
        norm_case(op, "f16[4, 16]", "f16[16]", 1);
    }
}

/* ---- layout ---- */

static void transpose_case(const char *sx, const int *perm)
{
    tens x = trand(sx, -100, 100), out;
    rt_type to = x.t;
    rt_instr in = {.op = RT_OP_TRANSPOSE, .nlist = x.t.rank};
    for (int i = 0; i < x.t.rank; i++) {
        to.dim[i] = x.t.dim[perm[i]];
        in.list[i] = perm[i];
    }
    out.t = to;
    out.p = calloc((size_t)rt_type_bytes(&to) + 8, 1);
    double *want = want_of(&out);
    int64_t oi[RT_MAX_RANK], xi[RT_MAX_RANK];
    for (int64_t e = 0; e < numel(&out); e++) {
        unravel(e, &to, oi);
        for (int i = 0; i < x.t.rank; i++)
            xi[perm[i]] = oi[i];
        int64_t f = 0;
        for (int i = 0; i < x.t.rank; i++)
            f = f * x.t.dim[i] + xi[i];
        want[e] = tget(&x, f);
    }
    CHECK_INT(run(&in, &x, 1, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "transpose %s [%d, %d, ...]", sx, perm[0],
             x.t.rank > 1 ? perm[1] : 0);
    CLOSE_TOL(what, &out, want, 0, 0);
    free(want);
    tfree(&x);
    tfree(&out);
}

static void test_transpose(void)
{
    transpose_case("f32[3, 4]", (int[]){1, 0});
    transpose_case("f32[67, 45]", (int[]){1, 0}); /* several tiles, ragged */
    transpose_case("f16[67, 45]", (int[]){1, 0});
    transpose_case("i32[2, 3, 4]", (int[]){0, 2, 1});
    transpose_case("f32[2, 3, 4]", (int[]){1, 0, 2}); /* last axis kept: runs */
    transpose_case("bf16[2, 3, 4]", (int[]){2, 0, 1});
    transpose_case("f32[2, 3, 4]", (int[]){1, 2, 0});
    transpose_case("f32[2, 1, 3, 5]", (int[]){3, 1, 0, 2});
    transpose_case("f32[2, 3, 4, 5]", (int[]){0, 3, 1, 2});
    transpose_case("f32[2, 3, 4, 5]", (int[]){2, 3, 0, 1}); /* merges into a 2-D transpose */
    transpose_case("f32[3, 1, 2, 1, 4]", (int[]){4, 3, 2, 1, 0});
    transpose_case("f32[5]", (int[]){0});
    transpose_case("f32[]", (int[]){0});
}

static void test_embedding(void)
{
    tens x[2] = {trand("f32[10, 6]", -1, 1), trand("i32[2, 3]", 0, 9)}, out = tnew("f32[2, 3, 6]");
    rt_instr in = {.op = RT_OP_EMBEDDING};
    CHECK_INT(run(&in, x, 2, &out), 0);
    double *want = want_of(&out);
    for (int64_t i = 0; i < 6; i++)
        for (int64_t c = 0; c < 6; c++)
            want[i * 6 + c] = tget(&x[0], (int64_t)tget(&x[1], i) * 6 + c);
    CLOSE_TOL("embedding f32", &out, want, 0, 0);
    free(want);
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);

    tens y[2] = {trand("bf16[4, 3]", -1, 1), trand("i32[]", 0, 3)}, o1 = tnew("bf16[3]");
    CHECK_INT(run(&in, y, 2, &o1), 0);
    CHECK(memcmp(o1.p, (uint16_t *)y[0].p + 3 * ((int32_t *)y[1].p)[0], 6) == 0);
    tfree(&y[0]);
    tfree(&y[1]);
    tfree(&o1);

    /* an id outside the table */
    tens z[2] = {tnew("f32[1024, 2]"), tnew("i32[16]")}, o2 = tnew("f32[16, 2]");
    ((int32_t *)z[1].p)[12] = 70000;
    CHECK_INT(run_err(&in, z, 2, &o2), -1);
    CHECK_STR(err.msg, "embedding id 70000 at index 12 is outside the table's 1024 rows");
    ((int32_t *)z[1].p)[12] = 0;
    ((int32_t *)z[1].p)[3] = -1;
    CHECK_INT(run_err(&in, z, 2, &o2), -1);
    CHECK_STR(err.msg, "embedding id -1 at index 3 is outside the table's 1024 rows");
    tfree(&z[0]);
    tfree(&z[1]);
    tfree(&o2);
}

static void test_slice(void)
{
    /* mesh 2 x 3, this rank at (1, 2): over both axes block 1 * 3 + 2 = 5 of
     * 6, over axis 1 block 2 of 3, over axis 0 block 1 of 2 */
    static const struct {
        int naxes, axes[2], dim;
        const char *in, *out;
        int64_t blk;
    } cases[] = {
        {2, {0, 1}, 1, "f32[2, 12, 3]", "f32[2, 2, 3]", 5},
        {1, {1}, 0, "f16[6, 5]", "f16[2, 5]", 2},
        {1, {0}, 2, "i32[2, 3, 4]", "i32[2, 3, 2]", 1},
        {2, {1, 0}, 0, "f32[12]", "f32[2]", 2 * 2 + 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tens x = trand(cases[c].in, -50, 50), out = tnew(cases[c].out);
        rt_instr in = {.op = RT_OP_SLICE, .dim = cases[c].dim, .naxes = (uint8_t)cases[c].naxes};
        for (int a = 0; a < cases[c].naxes; a++)
            in.axes[a] = (uint8_t)cases[c].axes[a];
        CHECK_INT(run(&in, &x, 1, &out), 0);
        int64_t outer, dn, inner, n = out.t.dim[cases[c].dim];
        view3(&x.t, cases[c].dim, &outer, &dn, &inner);
        double *want = want_of(&out);
        for (int64_t p = 0; p < outer; p++)
            for (int64_t k = 0; k < n; k++)
                for (int64_t i = 0; i < inner; i++)
                    want[(p * n + k) * inner + i] =
                        tget(&x, (p * dn + cases[c].blk * n + k) * inner + i);
        CLOSE_TOL(cases[c].in, &out, want, 0, 0);
        free(want);
        tfree(&x);
        tfree(&out);
    }
}

/* ---- losses ---- */

static void test_losses(void)
{
    static const char *const mse_types[][2] = {
        {"f32[3, 7]", "f32[]"},
        {"f32[]", "f32[]"},
        {"bf16[40]", "bf16[]"},
        {"f16[2, 2, 5]", "f16[]"},
    };
    for (int c = 0; c < 4; c++) {
        tens x[2] = {trand(mse_types[c][0], -2, 2), trand(mse_types[c][0], -2, 2)};
        tens out = tnew(mse_types[c][1]);
        double want = 0;
        for (int64_t i = 0; i < numel(&x[0]); i++)
            want += pow(tget(&x[0], i) - tget(&x[1], i), 2) / (double)numel(&x[0]);
        rt_instr in = {.op = RT_OP_MSE};
        CHECK_INT(run(&in, x, 2, &out), 0);
        CLOSE(mse_types[c][0], &out, &want);
        tfree(&x[0]);
        tfree(&x[1]);
        tfree(&out);
    }

    static const struct {
        const char *logits, *labels, *out;
        double scale;
    } xe[] = {
        {"f32[4, 10]", "i32[4]", "f32[]", 3},
        {"f32[2, 3, 5]", "i32[2, 3]", "f32[]", 3},
        {"f32[7]", "i32[]", "f32[]", 3},
        {"f32[3, 6]", "i32[3]", "f32[]", 500}, /* stable at large logits */
        {"bf16[5, 8]", "i32[5]", "bf16[]", 2},
        {"f16[5, 8]", "i32[5]", "f16[]", 2},
    };
    for (size_t c = 0; c < sizeof xe / sizeof *xe; c++) {
        tens x[2] = {trand(xe[c].logits, -xe[c].scale, xe[c].scale), tnew(xe[c].labels)};
        tens out = tnew(xe[c].out);
        int64_t cl = x[0].t.dim[x[0].t.rank - 1], rows = numel(&x[1]);
        for (int64_t r = 0; r < rows; r++)
            tset(&x[1], r, (double)(rng_next() % (uint64_t)cl));
        double want = 0;
        for (int64_t r = 0; r < rows; r++) {
            double mx = -INFINITY, s = 0;
            for (int64_t i = 0; i < cl; i++)
                mx = fmax(mx, tget(&x[0], r * cl + i));
            for (int64_t i = 0; i < cl; i++)
                s += exp(tget(&x[0], r * cl + i) - mx);
            want += (mx + log(s) - tget(&x[0], r * cl + (int64_t)tget(&x[1], r))) / (double)rows;
        }
        rt_instr in = {.op = RT_OP_XENT};
        CHECK_INT(run(&in, x, 2, &out), 0);
        CLOSE(xe[c].logits, &out, &want);
        tfree(&x[0]);
        tfree(&x[1]);
        tfree(&out);
    }

    /* a label outside the classes */
    tens x[2] = {trand("f32[4, 10]", -1, 1), tnew("i32[4]")}, out = tnew("f32[]");
    ((int32_t *)x[1].p)[2] = 10;
    rt_instr xent = {.op = RT_OP_XENT};
    CHECK_INT(run_err(&xent, x, 2, &out), -1);
    CHECK_STR(err.msg, "cross_entropy label 10 at index 2 is outside the 10 classes (0..9)");
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

/* ---- training ops ---- */

/* Small integers in [lo, hi] in any dtype (exact in all of them), so that
 * gt and eq meet ties. */
static tens tints(const char *s, int lo, int hi)
{
    tens x = tnew(s);
    for (int64_t i = 0; i < numel(&x); i++)
        tset(&x, i, lo + (double)(rng_next() % (uint64_t)(hi - lo + 1)));
    return x;
}

/* gt, eq (on small integers: exact) and gelu_grad, silu_grad (x in [-5, 5],
 * dy in [-2, 2]) against ref_bin, with broadcasting. */
static void train_binary_case(int op, const char *sa, const char *sb, const char *so)
{
    int cmp = op == RT_OP_GT || op == RT_OP_EQ;
    tens x[2] = {cmp ? tints(sa, -2, 2) : trand(sa, -5, 5),
                 cmp ? tints(sb, -2, 2) : trand(sb, -2, 2)};
    tens out = tnew(so);
    rt_instr in = {.op = (uint16_t)op};
    CHECK_INT(run(&in, x, 2, &out), 0);
    double *want = want_of(&out);
    int64_t idx[RT_MAX_RANK];
    for (int64_t i = 0; i < numel(&out); i++) {
        unravel(i, &out.t, idx);
        double a = tget(&x[0], bidx(&x[0].t, x[0].t.rank, idx, out.t.rank));
        double b = tget(&x[1], bidx(&x[1].t, x[1].t.rank, idx, out.t.rank));
        want[i] = ref_bin(op, a, b);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s, %s", rt_ops[op].name, sa, sb);
    if (cmp)
        CLOSE_TOL(what, &out, want, 0, 0);
    else
        CLOSE(what, &out, want);
    free(want);
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

static void test_train_binary(void)
{
    for (int op = RT_OP_GT; op <= RT_OP_SILU_GRAD; op++) {
        for (size_t s = 0; s < NBIN_SHAPES; s++)
            train_binary_case(op, bin_shapes[s][0], bin_shapes[s][1], bin_shapes[s][2]);
        train_binary_case(op, "f16[2, 3, 8]", "f16[8]", "f16[2, 3, 8]");
        train_binary_case(op, "bf16[3, 1]", "bf16[2, 3, 4]", "bf16[2, 3, 4]");
    }
    for (int op = RT_OP_GT; op <= RT_OP_EQ; op++) {
        train_binary_case(op, "i32[3, 4]", "i32[4]", "i32[3, 4]");
        train_binary_case(op, "i32[2, 1]", "i32[1, 3]", "i32[2, 3]");
        train_binary_case(op, "i32[]", "i32[5]", "i32[5]");
    }
    /* nan compares false; the gradients have no i32 form */
    tens x[2] = {tnew("f32[2]"), tnew("f32[2]")}, o = tnew("f32[2]");
    ((float *)x[0].p)[0] = NAN;
    ((float *)x[1].p)[1] = NAN;
    rt_instr gt = {.op = RT_OP_GT}, eq = {.op = RT_OP_EQ};
    CHECK_INT(run(&gt, x, 2, &o), 0);
    CHECK(tget(&o, 0) == 0 && tget(&o, 1) == 0);
    CHECK_INT(run(&eq, x, 2, &o), 0);
    CHECK(tget(&o, 0) == 0 && tget(&o, 1) == 0);
    tens xi[2] = {tnew("i32[2]"), tnew("i32[2]")}, oi = tnew("i32[2]");
    rt_instr gg = {.op = RT_OP_GELU_GRAD};
    CHECK_INT(run_err(&gg, xi, 2, &oi), -1);
    CHECK_STR(err.msg, "gelu_grad of i32 is not supported");
    for (int i = 0; i < 2; i++) {
        tfree(&x[i]);
        tfree(&xi[i]);
    }
    tfree(&o);
    tfree(&oi);
}

static void expand_case(const char *sx, const char *so)
{
    tens x = trand(sx, -100, 100), out = tnew(so);
    rt_instr in = {.op = RT_OP_EXPAND};
    CHECK_INT(run(&in, &x, 1, &out), 0);
    double *want = want_of(&out);
    int64_t idx[RT_MAX_RANK];
    for (int64_t i = 0; i < numel(&out); i++) {
        unravel(i, &out.t, idx);
        want[i] = tget(&x, bidx(&x.t, x.t.rank, idx, out.t.rank));
    }
    char what[128];
    snprintf(what, sizeof what, "expand %s to %s", sx, so);
    CLOSE_TOL(what, &out, want, 0, 0);
    free(want);
    tfree(&x);
    tfree(&out);
}

static void test_expand(void)
{
    expand_case("f32[3]", "f32[2, 3]");
    expand_case("f32[3, 1]", "f32[3, 5]");
    expand_case("f32[2, 1, 4]", "f32[3, 2, 5, 4]");
    expand_case("f32[]", "f32[4, 5]");
    expand_case("f32[2, 3]", "f32[2, 3]"); /* the identity */
    expand_case("f32[1, 3, 1]", "f32[2, 1, 3, 2]");
    expand_case("bf16[3, 1]", "bf16[3, 6]");
    expand_case("f16[1]", "f16[1, 1]");
    expand_case("i32[1, 4, 1]", "i32[2, 4, 3]");
}

/* insert x into bucket sb at column off, into a new buffer and in place
 * over the bucket; then extract it back: exact copies. */
static void bucket_case(const char *sb, const char *sx, int64_t off)
{
    tens ops[2] = {trand(sb, -100, 100), trand(sx, -100, 100)}, out = tnew(sb);
    int64_t rows = ops[0].t.dim[0], cols = ops[0].t.dim[1], w = numel(&ops[1]) / rows;
    double *want = want_of(&out);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = c >= off && c < off + w ? tget(&ops[1], r * w + c - off)
                                                         : tget(&ops[0], r * cols + c);
    char what[128];
    rt_instr in = {.op = RT_OP_INSERT, .offset = off};
    CHECK_INT(run(&in, ops, 2, &out), 0);
    snprintf(what, sizeof what, "insert %s into %s at %lld", sx, sb, (long long)off);
    CLOSE_TOL(what, &out, want, 0, 0);
    tens same = ops[0]; /* the result over the bucket */
    rt_instr ip = {.op = RT_OP_INSERT, .offset = off};
    CHECK_INT(run(&ip, ops, 2, &same), 0);
    snprintf(what, sizeof what, "insert %s into %s at %lld in place", sx, sb, (long long)off);
    CLOSE_TOL(what, &same, want, 0, 0);
    tens back = tnew(sx);
    rt_instr ex = {.op = RT_OP_EXTRACT, .offset = off};
    CHECK_INT(run(&ex, &out, 1, &back), 0);
    double *wx = want_of(&back);
    for (int64_t i = 0; i < numel(&back); i++)
        wx[i] = tget(&ops[1], i);
    snprintf(what, sizeof what, "extract %s from %s at %lld", sx, sb, (long long)off);
    CLOSE_TOL(what, &back, wx, 0, 0);
    free(wx);
    free(want);
    tfree(&back);
    tfree(&ops[0]);
    tfree(&ops[1]);
    tfree(&out);
}

static void test_bucket(void)
{
    bucket_case("f32[1, 40]", "f32[4, 6]", 0);
    bucket_case("f32[1, 40]", "f32[4, 6]", 16);  /* the last columns */
    bucket_case("f32[2, 20]", "f32[4, 6]", 5);   /* blocks of 2 rows of x */
    bucket_case("f32[4, 9]", "f32[8, 3]", 3);
    bucket_case("bf16[2, 7]", "bf16[6]", 4);
    bucket_case("f16[3, 3]", "f16[3]", 2);
    bucket_case("i32[2, 5]", "i32[2, 2, 1]", 1);
}

/* q [..., S, d], k [..., T, d] -> p [..., S, T] against a double reference;
 * then attention(q, k, v) against the matmul attn_probs(q, k) @ v, both
 * stored in the same dtype. */
static void attn_probs_case_at(const char *sq, const char *sk, const char *so, const char *sv,
                               const char *sav, int causal, int with_pos)
{
    tens x[3] = {trand(sq, -2, 2), trand(sk, -2, 2)}, out = tnew(so);
    int r = x[0].t.rank;
    int64_t s = x[0].t.dim[r - 2], d = x[0].t.dim[r - 1], t = x[1].t.dim[r - 2];
    int64_t heads = numel(&x[0]) / (s * d);
    if (with_pos)
        x[2] = positions(sq, t);
    const tens *pos = with_pos ? &x[2] : NULL;
    double *want = want_of(&out);
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < s; i++) {
            double *p = want + (h * s + i) * t, mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < t; j++) {
                double dot = 0;
                for (int64_t c = 0; c < d; c++)
                    dot += tget(&x[0], (h * s + i) * d + c) * tget(&x[1], (h * t + j) * d + c);
                p[j] = causal && j > last_key(pos, i, s, t) ? -INFINITY : dot / sqrt((double)d);
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int64_t j = 0; j < t; j++) {
                p[j] = p[j] == -INFINITY ? 0 : exp(p[j] - mx);
                sum += p[j];
            }
            for (int64_t j = 0; j < t; j++)
                p[j] = sum > 0 ? p[j] / sum : 0;
        }
    rt_instr in = {.op = RT_OP_ATTN_PROBS, .causal = (uint8_t)causal};
    CHECK_INT(run(&in, x, with_pos ? 3 : 2, &out), 0);
    char what[192];
    snprintf(what, sizeof what, "attn_probs %s %s%s%s", sq, sk, causal ? " causal" : "",
             with_pos ? " at positions" : "");
    CLOSE(what, &out, want);

    /* attention(q, k, v) == attn_probs(q, k) @ v: f32 shares the scores and
     * the sgemms (1e-6); half precision rounds p once more in between */
    tens ops4[4] = {x[0], x[1], trand(sv, -1, 1), x[2]}, att = tnew(sav), pv = tnew(sav);
    tens mm[2] = {out, ops4[2]};
    rt_instr at = {.op = RT_OP_ATTENTION, .causal = (uint8_t)causal}, mat = {.op = RT_OP_MATMUL};
    CHECK_INT(run(&at, ops4, with_pos ? 4 : 3, &att), 0);
    CHECK_INT(run(&mat, mm, 2, &pv), 0);
    double *aw = want_of(&att);
    for (int64_t i = 0; i < numel(&att); i++)
        aw[i] = tget(&att, i);
    snprintf(what, sizeof what, "attention = attn_probs @ v, %s %s%s", sq, sk,
             causal ? " causal" : "");
    int f32 = pv.t.dtype == RT_F32;
    CLOSE_TOL(what, &pv, aw, f32 ? 1e-6 : rtol_of(pv.t.dtype), f32 ? 1e-7 : atol_of(pv.t.dtype));
    free(aw);
    free(want);
    tfree(&ops4[2]);
    tfree(&att);
    tfree(&pv);
    for (int i = 0; i < 2 + with_pos; i++)
        tfree(&x[i]);
    tfree(&out);
}

static void attn_probs_case(const char *sq, const char *sk, const char *so, const char *sv,
                            const char *sav, int causal)
{
    attn_probs_case_at(sq, sk, so, sv, sav, causal, 0);
}

static void test_attn_probs(void)
{
    for (int causal = 0; causal <= 1; causal++) {
        attn_probs_case("f32[2, 3, 5, 4]", "f32[2, 3, 5, 4]", "f32[2, 3, 5, 5]",
                        "f32[2, 3, 5, 6]", "f32[2, 3, 5, 6]", causal);
        attn_probs_case("f32[2, 4, 8]", "f32[2, 7, 8]", "f32[2, 4, 7]", "f32[2, 7, 5]",
                        "f32[2, 4, 5]", causal); /* S < T */
        attn_probs_case("f32[6, 4]", "f32[3, 4]", "f32[6, 3]", "f32[3, 2]", "f32[6, 2]",
                        causal); /* T < S: causal rows that see no key are 0 */
        attn_probs_case("f32[1, 33, 16]", "f32[1, 20, 16]", "f32[1, 33, 20]", "f32[1, 20, 8]",
                        "f32[1, 33, 8]", causal);
    }
    attn_probs_case("bf16[2, 6, 8]", "bf16[2, 6, 8]", "bf16[2, 6, 6]", "bf16[2, 6, 8]",
                    "bf16[2, 6, 8]", 1);
    attn_probs_case("f16[3, 5, 4]", "f16[3, 9, 4]", "f16[3, 5, 9]", "f16[3, 9, 2]",
                    "f16[3, 5, 2]", 1);
    attn_probs_case("f16[3, 5, 4]", "f16[3, 9, 4]", "f16[3, 5, 9]", "f16[3, 9, 2]",
                    "f16[3, 5, 2]", 0);
    attn_probs_case_at("f32[2, 3, 5, 4]", "f32[2, 3, 9, 4]", "f32[2, 3, 5, 9]",
                       "f32[2, 3, 9, 6]", "f32[2, 3, 5, 6]", 1, 1);
    attn_probs_case_at("f16[3, 5, 4]", "f16[3, 9, 4]", "f16[3, 5, 9]", "f16[3, 9, 2]",
                       "f16[3, 5, 2]", 1, 1);
}

/* ids in [0, maxid] with ids[1] = ids[0] (a repeat for sure), dy [ids..., D],
 * the table [V, D] with V > maxid + 1 (rows no id touches stay 0). */
static void embedding_grad_case(const char *sids, int maxid, const char *sdy, const char *so)
{
    tens x[2] = {tints(sids, 0, maxid), trand(sdy, -1, 1)}, out = tnew(so);
    if (numel(&x[0]) > 1)
        tset(&x[0], 1, tget(&x[0], 0));
    int64_t d = out.t.dim[1];
    for (int64_t i = 0; i < numel(&out); i++)
        tset(&out, i, 99); /* the kernel must zero the table */
    double *want = want_of(&out);
    for (int64_t i = 0; i < numel(&x[0]); i++)
        for (int64_t c = 0; c < d; c++)
            want[(int64_t)tget(&x[0], i) * d + c] += tget(&x[1], i * d + c);
    rt_instr in = {.op = RT_OP_EMBEDDING_GRAD};
    CHECK_INT(run(&in, x, 2, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "embedding_grad %s %s", sids, sdy);
    CLOSE(what, &out, want);
    free(want);
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

static void test_embedding_grad(void)
{
    embedding_grad_case("i32[2, 5]", 3, "f32[2, 5, 7]", "f32[6, 7]");
    embedding_grad_case("i32[40]", 9, "f32[40, 3]", "f32[10, 3]");
    embedding_grad_case("i32[]", 3, "f32[3]", "f32[4, 3]");
    embedding_grad_case("i32[12]", 2, "bf16[12, 4]", "bf16[5, 4]");
    embedding_grad_case("i32[3, 4]", 3, "f16[3, 4, 8]", "f16[4, 8]");

    /* an id outside the table, above and below */
    tens z[2] = {tnew("i32[2, 5]"), tnew("f32[2, 5, 3]")}, o = tnew("f32[6, 3]");
    rt_instr in = {.op = RT_OP_EMBEDDING_GRAD};
    ((int32_t *)z[0].p)[4] = 6;
    CHECK_INT(run_err(&in, z, 2, &o), -1);
    CHECK_STR(err.msg, "embedding_grad id 6 at index 4 is outside the table's 6 rows");
    ((int32_t *)z[0].p)[4] = 0;
    ((int32_t *)z[0].p)[9] = -3;
    CHECK_INT(run_err(&in, z, 2, &o), -1);
    CHECK_STR(err.msg, "embedding_grad id -3 at index 9 is outside the table's 6 rows");
    tfree(&z[0]);
    tfree(&z[1]);
    tfree(&o);
}

/* check_ids and check_labels: the ids unchanged when all lie in [0, dim),
 * else the error of embedding (cross_entropy), whose ids (labels) they
 * check where the table (the logits) is split along them. */
static void test_check_ids(void)
{
    tens ids = trand("i32[3, 4]", 0, 6), o = tnew("i32[3, 4]");
    for (int op = RT_OP_CHECK_IDS; op <= RT_OP_CHECK_LABELS; op++) {
        rt_instr in = {.op = (uint16_t)op, .dim = 7};
        memset(o.p, 0xff, (size_t)rt_type_bytes(&o.t));
        CHECK_INT(run(&in, &ids, 1, &o), 0);
        CHECK(memcmp(o.p, ids.p, (size_t)rt_type_bytes(&o.t)) == 0);
    }
    rt_instr in = {.op = RT_OP_CHECK_IDS, .dim = 7};
    ((int32_t *)ids.p)[5] = 7;
    CHECK_INT(run_err(&in, &ids, 1, &o), -1);
    CHECK_STR(err.msg, "embedding id 7 at index 5 is outside the table's 7 rows");
    ((int32_t *)ids.p)[5] = 0;
    ((int32_t *)ids.p)[2] = -1;
    in.op = RT_OP_CHECK_LABELS;
    CHECK_INT(run_err(&in, &ids, 1, &o), -1);
    CHECK_STR(err.msg, "cross_entropy label -1 at index 2 is outside the 7 classes (0..6)");
    tfree(&ids);
    tfree(&o);
}

/* cross_entropy_grad against a double reference, finding its rows' max
 * and sum, then from the rows' cross_entropy_lse (itself checked against
 * max + log(sum) in double). From the lse, exp(x - lse) is exp of a
 * difference rounded to f32: off by up to |x| 2^-24 relatively besides
 * the dtype's rounding. */
static void xent_grad_case(const char *slogits, const char *slabels, double scale)
{
    tens x[3] = {trand(slogits, -scale, scale), tnew(slabels)}, out = tnew(slogits);
    int64_t cl = x[0].t.dim[x[0].t.rank - 1], rows = numel(&x[1]);
    rt_type lt = x[0].t; /* the lse: f32, the last dim 1 */
    lt.dtype = RT_F32;
    lt.dim[lt.rank - 1] = 1;
    x[2] = (tens){lt, calloc((size_t)rt_type_bytes(&lt) + 8, 1)};
    for (int64_t r = 0; r < rows; r++)
        tset(&x[1], r, (double)(rng_next() % (uint64_t)cl));
    double *want = want_of(&out), *want_lse = want_of(&x[2]);
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0;
        for (int64_t i = 0; i < cl; i++)
            mx = fmax(mx, tget(&x[0], r * cl + i));
        for (int64_t i = 0; i < cl; i++)
            s += exp(tget(&x[0], r * cl + i) - mx);
        want_lse[r] = mx + log(s);
        for (int64_t i = 0; i < cl; i++)
            want[r * cl + i] = exp(tget(&x[0], r * cl + i) - mx) / s -
                               (i == (int64_t)tget(&x[1], r));
    }
    rt_instr in = {.op = RT_OP_XENT_GRAD};
    CHECK_INT(run(&in, x, 2, &out), 0);
    char what[128];
    snprintf(what, sizeof what, "cross_entropy_grad %s scale %g", slogits, scale);
    CLOSE(what, &out, want);
    rt_instr li = {.op = RT_OP_XENT_LSE};
    CHECK_INT(run(&li, x, 1, &x[2]), 0);
    snprintf(what, sizeof what, "cross_entropy_lse %s scale %g", slogits, scale);
    CLOSE(what, &x[2], want_lse);
    memset(out.p, 0, (size_t)rt_type_bytes(&out.t));
    in.nin = 3;
    CHECK_INT(run(&in, x, 3, &out), 0);
    snprintf(what, sizeof what, "cross_entropy_grad %s scale %g from the lse", slogits, scale);
    CLOSE_TOL(what, &out, want, rtol_of(out.t.dtype) + scale * 0x1p-24 * 4,
              atol_of(out.t.dtype));
    free(want);
    free(want_lse);
    for (int i = 0; i < 3; i++)
        tfree(&x[i]);
    tfree(&out);
}

static void test_xent_grad(void)
{
    xent_grad_case("f32[4, 10]", "i32[4]", 3);
    xent_grad_case("f32[2, 3, 5]", "i32[2, 3]", 3);
    xent_grad_case("f32[7]", "i32[]", 3);
    xent_grad_case("f32[3, 6]", "i32[3]", 500); /* stable at large logits */
    xent_grad_case("bf16[5, 8]", "i32[5]", 2);
    xent_grad_case("f16[5, 8]", "i32[5]", 2);

    tens x[2] = {trand("f32[4, 10]", -1, 1), tnew("i32[4]")}, out = tnew("f32[4, 10]");
    rt_instr in = {.op = RT_OP_XENT_GRAD};
    ((int32_t *)x[1].p)[2] = 10;
    CHECK_INT(run_err(&in, x, 2, &out), -1);
    CHECK_STR(err.msg, "cross_entropy_grad label 10 at index 2 is outside the 10 classes (0..9)");
    ((int32_t *)x[1].p)[2] = 0;
    ((int32_t *)x[1].p)[3] = -1;
    CHECK_INT(run_err(&in, x, 2, &out), -1);
    CHECK_STR(err.msg, "cross_entropy_grad label -1 at index 3 is outside the 10 classes (0..9)");
    tfree(&x[0]);
    tfree(&x[1]);
    tfree(&out);
}

/* The optimizer updates in double; o holds the operands' values. */
static double ref_optim(const rt_instr *in, const double *o, double t)
{
    switch (in->op) {
    case RT_OP_MOMENTUM: return in->momentum * o[0] + o[1] + in->wd * o[2];
    case RT_OP_SGD: return o[0] - in->lr * (o[1] + in->wd * o[0]);
    case RT_OP_ADAM_M: return in->beta1 * o[0] + (1 - in->beta1) * o[1];
    case RT_OP_ADAM_V: return in->beta2 * o[0] + (1 - in->beta2) * o[1] * o[1];
    default: {
        double mh = o[1] / (1 - pow(in->beta1, t)), vh = o[2] / (1 - pow(in->beta2, t));
        return o[0] * (1 - in->lr * in->wd) - in->lr * mh / (sqrt(vh) + in->eps);
    }
    }
}

/* hp: the op and its hyperparameters. Operands of type s in [-1, 1], but
 * the second moment v (adam_v's and adamw's operand 0 / 2) in [vlo, 1];
 * adamw's t of type st holds step. In place: the result overwrites operand
 * 0. */
static void optim_case(rt_instr hp, const char *s, double vlo, const char *st, double step,
                       int inplace)
{
    int nin = rt_ops[hp.op].max_in, vi = hp.op == RT_OP_ADAM_V ? 0 : hp.op == RT_OP_ADAMW ? 2 : -1;
    tens x[RT_MAX_IN];
    for (int i = 0; i < nin; i++)
        x[i] = i == 3 ? tnew(st) : i == vi ? trand(s, vlo, 1) : trand(s, -1, 1);
    if (hp.op == RT_OP_ADAMW)
        tset(&x[3], 0, step);
    tens out = inplace ? x[0] : tnew(s);
    double *want = want_of(&out), o[RT_MAX_IN];
    for (int64_t e = 0; e < numel(&out); e++) {
        for (int i = 0; i < nin && i < 3; i++)
            o[i] = tget(&x[i], e);
        want[e] = ref_optim(&hp, o, step);
    }
    CHECK_INT(run(&hp, x, nin, &out), 0);
    char what[160];
    snprintf(what, sizeof what, "%s %s%s%s%s", rt_ops[hp.op].name, s, st ? " t " : "",
             st ? st : "", inplace ? " in place" : "");
    CLOSE(what, &out, want);
    free(want);
    for (int i = 0; i < nin; i++)
        tfree(&x[i]);
    if (!inplace)
        tfree(&out);
}

static void test_optim(void)
{
    rt_instr mom = {.op = RT_OP_MOMENTUM, .momentum = 0.9, .wd = 0.01};
    rt_instr sgd = {.op = RT_OP_SGD, .lr = 0.1, .wd = 0.01};
    rt_instr sgd0 = {.op = RT_OP_SGD, .lr = 0.5};
    rt_instr am = {.op = RT_OP_ADAM_M, .beta1 = 0.9};
    rt_instr av = {.op = RT_OP_ADAM_V, .beta2 = 0.999};
    /* lr large enough that the update, not p, dominates the error */
    rt_instr aw = {.op = RT_OP_ADAMW, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                   .wd = 0.01};
    /* v near 0: eps matters */
    rt_instr aw2 = {.op = RT_OP_ADAMW, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-3,
                    .wd = 0.1};
    const rt_instr *ops[] = {&mom, &sgd, &sgd0, &am, &av};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        optim_case(*ops[i], "f32[3, 7]", 0, NULL, 0, 0);
        optim_case(*ops[i], "f32[]", 0, NULL, 0, 0);
        optim_case(*ops[i], "bf16[2, 9]", 0, NULL, 0, 0);
        optim_case(*ops[i], "f16[11]", 0, NULL, 0, 1);
    }
    optim_case(sgd, "f32[129]", 0, NULL, 0, 1);
    optim_case(aw, "f32[3, 7]", 0.01, "f32[]", 1, 0);
    optim_case(aw, "f32[3, 7]", 0.01, "f32[]", 10, 0);
    optim_case(aw, "f32[40]", 0.01, "f32[]", 3, 1);
    optim_case(aw2, "f32[5, 5]", 0, "f32[]", 7, 0);
    optim_case(aw2, "f32[5, 5]", 0, "f32[]", 1, 0);
    optim_case(aw, "bf16[4, 6]", 0.01, "f32[]", 1, 0);
    optim_case(aw, "bf16[4, 6]", 0.01, "bf16[]", 3, 0);
    optim_case(aw, "f16[4, 6]", 0.01, "f32[]", 2, 0);
    optim_case(aw, "f16[17]", 0.01, "f16[]", 5, 1);
}

static void test_not_compute(void)
{
    tens o = tnew("f32[2]"), x = tnew("f32[2]");
    void *bufs[2] = {x.p, o.p};
    rt_instr in = {.op = RT_OP_INPUT, .out = 1, .out_t = o.t};
    CHECK_INT(rt_cpu_run(NULL, &in, bufs, &err), -1);
    CHECK_HAS(err.msg, "not a compute instruction");
    rt_instr ar = {.op = RT_OP_ALL_REDUCE, .nin = 1, .in = {0}, .in_t = {x.t}, .out = 1,
                   .out_t = o.t};
    CHECK_INT(rt_cpu_run(NULL, &ar, bufs, &err), -1);
    CHECK_HAS(err.msg, "not a compute instruction");
    rt_instr st = {.op = RT_OP_STATE, .out = 1, .out_t = o.t}; /* a source */
    CHECK_INT(rt_cpu_run(NULL, &st, bufs, &err), -1);
    CHECK_HAS(err.msg, "state is not a compute instruction");
    tfree(&o);
    tfree(&x);
}

/* Ranks run kernels from their own threads: four threads each run a
 * promoted attention (scratch in both layers) and a bf16 softmax many
 * times; every result must equal the serial one bit for bit. */
enum { NTHREADS = 4, NITER = 50 };

typedef struct job {
    tens x[3], out, sm_in, sm_out;
    int mismatches;
} job;

static void job_run(job *j)
{
    void *b1[4] = {j->x[0].p, j->x[1].p, j->x[2].p, j->out.p}, *b2[2] = {j->sm_in.p, j->sm_out.p};
    rt_instr at = {.op = RT_OP_ATTENTION, .nin = 3, .in = {0, 1, 2}, .out = 3, .causal = 1,
                   .in_t = {j->x[0].t, j->x[1].t, j->x[2].t}, .out_t = j->out.t};
    rt_instr sm = {.op = RT_OP_SOFTMAX, .nin = 1, .in = {0}, .out = 1, .axis = 0,
                   .in_t = {j->sm_in.t}, .out_t = j->sm_out.t};
    su_status e;
    if (rt_cpu_run(NULL, &at, b1, &e) != 0 || rt_cpu_run(NULL, &sm, b2, &e) != 0)
        j->mismatches++;
}

static void *job_thread(void *arg)
{
    job *j = arg;
    size_t n1 = (size_t)rt_type_bytes(&j->out.t), n2 = (size_t)rt_type_bytes(&j->sm_out.t);
    void *want1 = malloc(n1), *want2 = malloc(n2);
    memcpy(want1, j->out.p, n1);
    memcpy(want2, j->sm_out.p, n2);
    for (int i = 0; i < NITER; i++) {
        memset(j->out.p, 0, n1);
        memset(j->sm_out.p, 0, n2);
        job_run(j);
        j->mismatches += memcmp(want1, j->out.p, n1) != 0 || memcmp(want2, j->sm_out.p, n2) != 0;
    }
    free(want1);
    free(want2);
    return NULL;
}

static void test_threads(void)
{
    job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        job *j = &jobs[t];
        j->x[0] = trand("f16[2, 24, 16]", -2, 2);
        j->x[1] = trand("f16[2, 32, 16]", -2, 2);
        j->x[2] = trand("f16[2, 32, 8]", -1, 1);
        j->out = tnew("f16[2, 24, 8]");
        j->sm_in = trand("bf16[30, 7]", -3, 3);
        j->sm_out = tnew("bf16[30, 7]");
        j->mismatches = 0;
        job_run(j); /* the serial result */
    }
    for (int t = 0; t < NTHREADS; t++)
        CHECK(pthread_create(&th[t], NULL, job_thread, &jobs[t]) == 0);
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK_INT(jobs[t].mismatches, 0);
        for (int i = 0; i < 3; i++)
            tfree(&jobs[t].x[i]);
        tfree(&jobs[t].out);
        tfree(&jobs[t].sm_in);
        tfree(&jobs[t].sm_out);
    }
}

/* ---- attention's backward ---- */

/* x [L, a, b, c] as [L, b, a, c] (heads_inner's layout and back). */
static tens swap_heads_copy(const tens *x)
{
    tens y = {rt_type_swap_heads(&x->t), NULL};
    y.p = calloc((size_t)(rt_type_bytes(&y.t) + 8), 1);
    int r = x->t.rank;
    int64_t a = x->t.dim[r - 3], b = x->t.dim[r - 2], c = x->t.dim[r - 1];
    for (int64_t e = 0; e < numel(x); e++) {
        int64_t k = e % c, j = e / c % b, i = e / c / b % a, l = e / c / b / a;
        tset(&y, ((l * b + j) * a + i) * c + k, tget(x, e));
    }
    return y;
}

/* attn_stats, attn_dq, attn_dk and attn_dv of heads [h, s, d] (k, v of t
 * keys, v and dy dv wide) against a double reference of their formulas
 * (ops.def), causal without and with query positions, and the statistics
 * from the forward (attn_lse, then attn_delta of attention's result)
 * against the same; then each with the heads inner ([s, h, d] stored)
 * equal to the bit to the op on the transposed operands. */
static void attn_backward_case(int64_t h, int64_t s, int64_t t, int64_t d, int64_t dv,
                               int causal, int with_pos)
{
    char sq[64], sk[64], sv[64], sy[64], sst[64];
    snprintf(sq, sizeof sq, "f32[%lld, %lld, %lld]", (long long)h, (long long)s, (long long)d);
    snprintf(sk, sizeof sk, "f32[%lld, %lld, %lld]", (long long)h, (long long)t, (long long)d);
    snprintf(sv, sizeof sv, "f32[%lld, %lld, %lld]", (long long)h, (long long)t, (long long)dv);
    snprintf(sy, sizeof sy, "f32[%lld, %lld, %lld]", (long long)h, (long long)s, (long long)dv);
    snprintf(sst, sizeof sst, "f32[%lld, %lld, 2]", (long long)h, (long long)s);
    tens q = trand(sq, -2, 2), k = trand(sk, -2, 2), v = trand(sv, -1, 1), dy = trand(sy, -1, 1);
    tens pos = with_pos ? positions(sq, t) : (tens){0};
    const tens *pp = with_pos ? &pos : NULL;
    double c = 1.0 / sqrt((double)d);
    double *lse = calloc((size_t)(h * s), sizeof(double)), *delta = calloc((size_t)(h * s), 8);
    double *wq = calloc((size_t)(h * s * d), 8), *wk = calloc((size_t)(h * t * d), 8);
    double *wv = calloc((size_t)(h * t * dv), 8), *p = calloc((size_t)t, 8), *dp = calloc((size_t)t, 8);
    for (int64_t hh = 0; hh < h; hh++)
        for (int64_t i = 0; i < s; i++) {
            int64_t end = causal ? last_key(pp, i, s, t) + 1 : t;
            end = end < 0 ? 0 : end > t ? t : end;
            double mx = -INFINITY, l = 0, dl = 0;
            for (int64_t j = 0; j < end; j++) {
                double acc = 0, accp = 0;
                for (int64_t e = 0; e < d; e++)
                    acc += tget(&q, (hh * s + i) * d + e) * tget(&k, (hh * t + j) * d + e);
                for (int64_t e = 0; e < dv; e++)
                    accp += tget(&dy, (hh * s + i) * dv + e) * tget(&v, (hh * t + j) * dv + e);
                p[j] = c * acc, dp[j] = accp;
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int64_t j = 0; j < end; j++)
                l += exp(p[j] - mx);
            double ls = end ? mx + log(l) : 0;
            for (int64_t j = 0; j < end; j++)
                dl += exp(p[j] - ls) * dp[j];
            lse[hh * s + i] = ls, delta[hh * s + i] = dl;
            for (int64_t j = 0; j < end; j++) {
                double pr = exp(p[j] - ls), ds = pr * (dp[j] - dl);
                for (int64_t e = 0; e < d; e++) {
                    wq[(hh * s + i) * d + e] += c * ds * tget(&k, (hh * t + j) * d + e);
                    wk[(hh * t + j) * d + e] += c * ds * tget(&q, (hh * s + i) * d + e);
                }
                for (int64_t e = 0; e < dv; e++)
                    wv[(hh * t + j) * dv + e] += pr * tget(&dy, (hh * s + i) * dv + e);
            }
        }
    tens st = tnew(sst), out[3] = {tnew(sq), tnew(sk), tnew(sv)};
    double *want = want_of(&st);
    for (int64_t e = 0; e < h * s; e++)
        want[2 * e] = lse[e], want[2 * e + 1] = delta[e];
    tens ops[6] = {q, k, v, dy, pos};
    rt_instr in = {.op = RT_OP_ATTN_STATS, .causal = (uint8_t)causal};
    char what[160];
    snprintf(what, sizeof what, "attn_stats h %lld s %lld t %lld d %lld dv %lld causal %d pos %d",
             (long long)h, (long long)s, (long long)t, (long long)d, (long long)dv, causal,
             with_pos);
    CHECK_INT(run(&in, ops, with_pos ? 5 : 4, &st), 0);
    CLOSE_TOL(what, &st, want, 1e-5, 1e-5);
    /* the same statistics from the forward: attn_lse (q, k[, pos]), then
     * attn_delta (y, dy, lse) with y = attention(q, k, v[, pos]) */
    char sl[64];
    snprintf(sl, sizeof sl, "f32[%lld, %lld]", (long long)h, (long long)s);
    tens ls = tnew(sl), y = tnew(sy), st2 = tnew(sst);
    tens lops[3] = {q, k, pos}, yops[4] = {q, k, v, pos};
    rt_instr li = {.op = RT_OP_ATTN_LSE, .causal = (uint8_t)causal};
    rt_instr yi = {.op = RT_OP_ATTENTION, .causal = (uint8_t)causal}, di = {.op = RT_OP_ATTN_DELTA};
    CHECK_INT(run(&li, lops, with_pos ? 3 : 2, &ls), 0);
    CLOSE_TOL("attn_lse", &ls, lse, 1e-5, 1e-5);
    CHECK_INT(run(&yi, yops, with_pos ? 4 : 3, &y), 0);
    tens dops[3] = {y, dy, ls};
    CHECK_INT(run(&di, dops, 3, &st2), 0);
    CLOSE_TOL("attn_delta", &st2, want, 1e-5, 1e-5);
    /* heads inner: q and k (attn_lse), y and dy (attn_delta) stored [1, s,
     * h, x]; lse and the statistics as they are: the same bits */
    {
        tens a4[3] = {q, k, y};
        tens d4 = dy;
        for (int i = 0; i < 4; i++) {
            tens *a = i < 3 ? &a4[i] : &d4;
            a->t.rank = 4;
            memmove(a->t.dim + 1, a->t.dim, 3 * sizeof *a->t.dim);
            a->t.dim[0] = 1;
        }
        tens hq = swap_heads_copy(&a4[0]), hk = swap_heads_copy(&a4[1]);
        tens hy = swap_heads_copy(&a4[2]), hdy = swap_heads_copy(&d4);
        tens lh = tnew(sl), sth = tnew(sst);
        tens hl[3] = {hq, hk, pos}, hd[3] = {hy, hdy, ls};
        rt_instr lhi = li, dhi = di;
        lhi.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTN_LSE);
        dhi.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTN_DELTA);
        ls.t.rank = 3; /* [1, h, s] */
        memmove(ls.t.dim + 1, ls.t.dim, 2 * sizeof *ls.t.dim);
        ls.t.dim[0] = 1;
        hd[2] = ls;
        lh.t = ls.t;
        sth.t.rank = 4;
        memmove(sth.t.dim + 1, sth.t.dim, 3 * sizeof *sth.t.dim);
        sth.t.dim[0] = 1;
        CHECK_INT(run(&lhi, hl, with_pos ? 3 : 2, &lh), 0);
        CHECK(memcmp(lh.p, ls.p, (size_t)rt_type_bytes(&ls.t)) == 0);
        CHECK_INT(run(&dhi, hd, 3, &sth), 0);
        CHECK(memcmp(sth.p, st2.p, (size_t)rt_type_bytes(&sth.t)) == 0);
        tfree(&hq), tfree(&hk), tfree(&hy), tfree(&hdy), tfree(&lh), tfree(&sth);
    }
    tfree(&ls), tfree(&y), tfree(&st2);
    free(want);
    static const int code[3] = {RT_OP_ATTN_DQ, RT_OP_ATTN_DK, RT_OP_ATTN_DV};
    const double *ref[3] = {wq, wk, wv};
    for (int o = 0; o < 3; o++) {
        /* dq, dk: q, k, v, dy, st[, pos]; dv: q, k, dy, st[, pos] */
        tens args[6] = {q, k, v, dy, st, pos};
        if (code[o] == RT_OP_ATTN_DV)
            args[2] = dy, args[3] = st, args[4] = pos;
        int n = (code[o] == RT_OP_ATTN_DV ? 4 : 5) + (with_pos ? 1 : 0);
        rt_instr g = {.op = (uint16_t)code[o], .causal = (uint8_t)causal};
        CHECK_INT(run(&g, args, n, &out[o]), 0);
        snprintf(what, sizeof what, "%s h %lld s %lld t %lld causal %d pos %d", rt_ops[code[o]].name,
                 (long long)h, (long long)s, (long long)t, causal, with_pos);
        CLOSE_TOL(what, &out[o], ref[o], 1e-5, 1e-5);
        /* heads inner: [1, s, h, d] stored for [1, h, s, d], the same bits */
        tens hin[6];
        int nt = rt_attn_layout_operands(code[o]);
        for (int i = 0; i < n; i++) {
            tens a = args[i];
            if (i < nt || (i == n - (with_pos ? 2 : 1))) { /* as [1, h, x, y] */
                a.t.rank = 4;
                memmove(a.t.dim + 1, a.t.dim, 3 * sizeof *a.t.dim);
                a.t.dim[0] = 1;
            }
            hin[i] = i < nt ? swap_heads_copy(&a) : a;
        }
        tens got = {.t = {.dtype = RT_F32, .rank = 4,
                          .dim = {1, out[o].t.dim[1], out[o].t.dim[0], out[o].t.dim[2]}}};
        got.p = calloc((size_t)(rt_type_bytes(&got.t) + 8), 1);
        rt_instr gh = {.op = (uint16_t)code[o], .causal = (uint8_t)causal,
                       .keepdims = (uint8_t)rt_heads_all(code[o])};
        CHECK_INT(run(&gh, hin, n, &got), 0);
        tens flat = swap_heads_copy(&got); /* back to [1, h, x, y] */
        CHECK(memcmp(flat.p, out[o].p, (size_t)rt_type_bytes(&out[o].t)) == 0);
        for (int i = 0; i < nt; i++)
            tfree(&hin[i]);
        tfree(&got);
        tfree(&flat);
    }
    tfree(&q), tfree(&k), tfree(&v), tfree(&dy), tfree(&st);
    for (int o = 0; o < 3; o++)
        tfree(&out[o]);
    if (with_pos)
        tfree(&pos);
    free(lse), free(delta), free(wq), free(wk), free(wv), free(p), free(dp);
}

/* Grouped-query attention (rt_attn_group): q of h heads, k and v of g
 * (rank 4: [b, heads, x, y]), against the ungrouped ops on k and v with
 * each head repeated h / g times: attention, attn_lse, attn_stats and
 * attn_dq, each query head's own computation at another key head, give
 * the same bits; attn_dk's and attn_dv's key head is the sum of its
 * group's query heads' gradients (to f32's rounding: the grouped op sums
 * them in double and rounds once). With the heads inner (attention,
 * attn_dk), the same bits as the op on the transposed operands. */
static void attn_groups_case(int64_t b, int64_t h, int64_t g, int64_t s, int64_t t, int causal)
{
    int64_t d = 4, dv = 3, r = h / g;
    char sq[64], sk[64], sv[64], sy[64], st_[64], se[64], sev[64], sdk[64], sdv[64], sl[64];
    snprintf(sq, sizeof sq, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)h,
             (long long)s, (long long)d);
    snprintf(sk, sizeof sk, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)g,
             (long long)t, (long long)d);
    snprintf(sv, sizeof sv, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)g,
             (long long)t, (long long)dv);
    snprintf(sy, sizeof sy, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)h,
             (long long)s, (long long)dv);
    snprintf(st_, sizeof st_, "f32[%lld, %lld, %lld, 2]", (long long)b, (long long)h, (long long)s);
    snprintf(sl, sizeof sl, "f32[%lld, %lld, %lld]", (long long)b, (long long)h, (long long)s);
    snprintf(se, sizeof se, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)h,
             (long long)t, (long long)d);
    snprintf(sev, sizeof sev, "f32[%lld, %lld, %lld, %lld]", (long long)b, (long long)h,
             (long long)t, (long long)dv);
    memcpy(sdk, sk, sizeof sk);
    memcpy(sdv, sv, sizeof sv);
    tens q = trand(sq, -2, 2), k = trand(sk, -2, 2), v = trand(sv, -1, 1), dy = trand(sy, -1, 1);
    tens ke = tnew(se), ve = tnew(sev); /* k and v with each head repeated */
    for (int64_t e = 0; e < numel(&ke); e++) {
        int64_t row = e / d, hh = row / t % h, l = row / t / h;
        tset(&ke, e, tget(&k, ((l * g + hh / r) * t + row % t) * d + e % d));
    }
    for (int64_t e = 0; e < numel(&ve); e++) {
        int64_t row = e / dv, hh = row / t % h, l = row / t / h;
        tset(&ve, e, tget(&v, ((l * g + hh / r) * t + row % t) * dv + e % dv));
    }
    char what[96];
    snprintf(what, sizeof what, "groups b %lld h %lld g %lld s %lld t %lld causal %d",
             (long long)b, (long long)h, (long long)g, (long long)s, (long long)t, causal);
    /* the forward and the statistics: the same bits */
    tens y0 = tnew(sy), y1 = tnew(sy), l0 = tnew(sl), l1 = tnew(sl), s0 = tnew(st_),
         s1 = tnew(st_);
    rt_instr ai = {.op = RT_OP_ATTENTION, .causal = (uint8_t)causal};
    rt_instr li = {.op = RT_OP_ATTN_LSE, .causal = (uint8_t)causal};
    rt_instr si = {.op = RT_OP_ATTN_STATS, .causal = (uint8_t)causal};
    CHECK_INT(run(&ai, (tens[]){q, ke, ve}, 3, &y0), 0);
    CHECK_INT(run(&ai, (tens[]){q, k, v}, 3, &y1), 0);
    CHECK(memcmp(y0.p, y1.p, (size_t)rt_type_bytes(&y0.t)) == 0);
    CHECK_INT(run(&li, (tens[]){q, ke}, 2, &l0), 0);
    CHECK_INT(run(&li, (tens[]){q, k}, 2, &l1), 0);
    CHECK(memcmp(l0.p, l1.p, (size_t)rt_type_bytes(&l0.t)) == 0);
    CHECK_INT(run(&si, (tens[]){q, ke, ve, dy}, 4, &s0), 0);
    CHECK_INT(run(&si, (tens[]){q, k, v, dy}, 4, &s1), 0);
    CHECK(memcmp(s0.p, s1.p, (size_t)rt_type_bytes(&s0.t)) == 0);
    tens q0 = tnew(sq), q1 = tnew(sq);
    rt_instr qi = {.op = RT_OP_ATTN_DQ, .causal = (uint8_t)causal};
    CHECK_INT(run(&qi, (tens[]){q, ke, ve, dy, s0}, 5, &q0), 0);
    CHECK_INT(run(&qi, (tens[]){q, k, v, dy, s0}, 5, &q1), 0);
    CHECK(memcmp(q0.p, q1.p, (size_t)rt_type_bytes(&q0.t)) == 0);
    /* attn_dk and attn_dv: each key head the sum over its group */
    tens k0 = tnew(se), k1 = tnew(sdk), v0 = tnew(sev), v1 = tnew(sdv);
    rt_instr ki = {.op = RT_OP_ATTN_DK, .causal = (uint8_t)causal};
    rt_instr vi = {.op = RT_OP_ATTN_DV, .causal = (uint8_t)causal};
    CHECK_INT(run(&ki, (tens[]){q, ke, ve, dy, s0}, 5, &k0), 0);
    CHECK_INT(run(&ki, (tens[]){q, k, v, dy, s0}, 5, &k1), 0);
    CHECK_INT(run(&vi, (tens[]){q, ke, dy, s0}, 4, &v0), 0);
    CHECK_INT(run(&vi, (tens[]){q, k, dy, s0}, 4, &v1), 0);
    for (int o = 0; o < 2; o++) {
        const tens *full = o ? &v0 : &k0, *got = o ? &v1 : &k1;
        int64_t w = o ? dv : d;
        double *want = calloc((size_t)numel(got), sizeof *want);
        for (int64_t e = 0; e < numel(full); e++) {
            int64_t row = e / w, hh = row / t % h, l = row / t / h;
            want[((l * g + hh / r) * t + row % t) * w + e % w] += tget(full, e);
        }
        char msg[128];
        snprintf(msg, sizeof msg, "%s: %s", what, o ? "attn_dv" : "attn_dk");
        CLOSE_TOL(msg, got, want, 1e-5, 1e-5);
        free(want);
    }
    /* heads inner: [b, x, heads, y] stored; the same bits */
    {
        tens hq = swap_heads_copy(&q), hk = swap_heads_copy(&k), hv = swap_heads_copy(&v);
        tens hdy = swap_heads_copy(&dy);
        tens hy = {rt_type_swap_heads(&y1.t), NULL}, hdk = {rt_type_swap_heads(&k1.t), NULL};
        hy.p = calloc((size_t)rt_type_bytes(&hy.t) + 8, 1);
        hdk.p = calloc((size_t)rt_type_bytes(&hdk.t) + 8, 1);
        rt_instr ah = ai, kh = ki;
        ah.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTENTION);
        kh.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTN_DK);
        CHECK_INT(run(&ah, (tens[]){hq, hk, hv}, 3, &hy), 0);
        CHECK_INT(run(&kh, (tens[]){hq, hk, hv, hdy, s0}, 5, &hdk), 0);
        tens fy = swap_heads_copy(&hy), fk = swap_heads_copy(&hdk);
        CHECK(memcmp(fy.p, y1.p, (size_t)rt_type_bytes(&y1.t)) == 0);
        CHECK(memcmp(fk.p, k1.p, (size_t)rt_type_bytes(&k1.t)) == 0);
        /* operand by operand: attention's v alone inner and its result;
         * attn_dv's dy alone (its result as computed on) */
        rt_instr av = ai, dvi = vi;
        av.keepdims = 4 | RT_HEADS_RESULT;
        dvi.keepdims = 4;
        memset(hy.p, 0, (size_t)rt_type_bytes(&hy.t));
        CHECK_INT(run(&av, (tens[]){q, k, hv}, 3, &hy), 0);
        tens fy2 = swap_heads_copy(&hy), dv2 = tnew(sdv);
        CHECK(memcmp(fy2.p, y1.p, (size_t)rt_type_bytes(&y1.t)) == 0);
        CHECK_INT(run(&dvi, (tens[]){q, k, hdy, s0}, 4, &dv2), 0);
        CHECK(memcmp(dv2.p, v1.p, (size_t)rt_type_bytes(&v1.t)) == 0);
        tfree(&fy2), tfree(&dv2);
        tfree(&hq), tfree(&hk), tfree(&hv), tfree(&hdy), tfree(&hy), tfree(&hdk);
        tfree(&fy), tfree(&fk);
    }
    tfree(&q), tfree(&k), tfree(&v), tfree(&dy), tfree(&ke), tfree(&ve);
    tfree(&y0), tfree(&y1), tfree(&l0), tfree(&l1), tfree(&s0), tfree(&s1);
    tfree(&q0), tfree(&q1), tfree(&k0), tfree(&k1), tfree(&v0), tfree(&v1);
}

static void test_attn_backward(void)
{
    attn_groups_case(2, 4, 2, 5, 7, 1);
    attn_groups_case(1, 6, 1, 3, 4, 0); /* one key head for all (multi-query) */
    attn_groups_case(2, 6, 3, 4, 4, 1);
    attn_backward_case(2, 5, 7, 4, 3, 1, 0); /* mask aligned to the end */
    attn_backward_case(3, 6, 6, 8, 8, 0, 0);
    attn_backward_case(2, 4, 9, 4, 6, 1, 1); /* query positions: some rows see no key */
    attn_backward_case(1, 7, 3, 5, 2, 1, 0); /* more queries than keys: rows see none */
}

int main(void)
{
    test_conversions();
    test_binary();
    test_unary();
    test_cast();
    test_matmul();
    test_parts();
    test_attention();
    test_attn_backward();
    test_reduce();
    test_softmax();
    test_norm();
    test_transpose();
    test_embedding();
    test_slice();
    test_losses();
    test_train_binary();
    test_expand();
    test_bucket();
    test_attn_probs();
    test_embedding_grad();
    test_xent_grad();
    test_check_ids();
    test_optim();
    test_not_compute();
    test_threads();
    return CHECK_DONE();
}
