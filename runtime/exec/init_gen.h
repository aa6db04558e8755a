/* init_gen.h: the generator that makes params, states and absent inputs
 * from the seed (init.c; LANGUAGE.md §5), written once for both backends.
 * The CPU backend includes it as C; the plan's init module (plan.h,
 * codegen/plan_build.c) is this very file compiled by NVRTC with
 * SH_INIT_KERNEL defined, whose kernel sh_init makes a rank's block of a
 * tensor on the device. So a seed gives the same bits on every mesh and
 * on either backend.
 *
 * The generator is counter-based: draw j of a tensor is splitmix64's
 * output function applied to key + (j + 1) * the golden ratio, where the
 * key mixes the seed with the name's FNV-1a hash (init.c); element i of
 * the full tensor (its row-major index) uses draws 2i and 2i + 1, so any
 * block is made without the rest. Normal values are Box-Muller's
 * sqrt(-2 ln u1) cos(2 pi u2); uniform ones a + (b - a) u, kept inside
 * [a, b) after rounding to the dtype; integers (i32 ids, bools) are
 * uniform over [floor(a), floor(b)).
 *
 * Why not libm: both sides compute with IEEE double +, -, *, / and sqrt
 * alone, each correctly rounded, never contracted into an FMA (NVRTC runs
 * with --fmad=false; init.c is compiled with -ffp-contract=off), plus
 * integer arithmetic. ln and cos are this file's own polynomials (their
 * error is below 1e-15, far below what the dtypes keep), since libm's and
 * CUDA's differ in the last bit of some results. Counter-based with 64-bit
 * integer mixing, as Philox is with 32-bit rounds: the value of an element
 * never depends on how many threads make the tensor or in what order.
 *
 * Only what NVRTC compiles without the C library: no headers on the
 * device side but cuda_fp16.h and cuda_bf16.h (their conversions round to
 * nearest even, as support/half.c's). */
#ifndef SHARDC_INIT_GEN_H
#define SHARDC_INIT_GEN_H

#if defined(__CUDACC_RTC__) || defined(SH_INIT_DEVICE)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef unsigned long long sh_u64;
typedef long long sh_i64;
typedef unsigned int sh_u32;
typedef unsigned short sh_u16;
typedef unsigned char sh_u8;
#define SH_FN static __device__ __forceinline__
#define SH_TO_F16(f) __half_as_ushort(__float2half_rn(f))
#define SH_TO_BF16(f) __bfloat16_as_ushort(__float2bfloat16_rn(f))
#define SH_F16_TO_F32(h) __half2float(__ushort_as_half(h))
#define SH_BF16_TO_F32(h) __bfloat162float(__ushort_as_bfloat16(h))
#else
#include "support/support.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
typedef uint64_t sh_u64;
typedef int64_t sh_i64;
typedef uint32_t sh_u32;
typedef uint16_t sh_u16;
typedef uint8_t sh_u8;
#define SH_FN static inline
#define SH_TO_F16(f) su_f32_to_f16(f)
#define SH_TO_BF16(f) su_f32_to_bf16(f)
#define SH_F16_TO_F32(h) su_f16_to_f32(h)
#define SH_BF16_TO_F32(h) su_bf16_to_f32(h)
#endif

/* The runtime's numbering (plan.h: rt_dtype, rt_init_kind; init.c checks). */
enum { SH_F32, SH_F16, SH_BF16, SH_I32, SH_BOOL };
enum { SH_INIT_NONE, SH_INIT_ZEROS, SH_INIT_ONES, SH_INIT_NORMAL, SH_INIT_UNIFORM };
#define SH_MAX_RANK 8

/* What makes one block of one tensor: sh_init's parameter, by value. */
typedef struct sh_init_args {
    sh_u64 key;                 /* the seed and the name, mixed (init.c) */
    double a, b;                /* normal: a = std; uniform: [a, b) */
    sh_i64 ilo;                 /* integers: the first value of the range */
    sh_u64 in;                  /* and how many values it has (0: empty, ilo) */
    sh_i64 full[SH_MAX_RANK];   /* the full tensor's dims */
    sh_i64 start[SH_MAX_RANK];  /* the block: where it starts in the full tensor */
    sh_i64 count[SH_MAX_RANK];  /* and its extent, row-major in dst */
    sh_i64 n;                   /* its elements */
    int init;                   /* SH_INIT_* */
    int dtype;                  /* the tensor's: the values are rounded to it */
    int out;                    /* dst's: dtype, or for a float tensor another
                                 * float dtype (the f32 master copy of a bf16
                                 * param): the value rounded to dtype, then
                                 * converted (exactly, when widened) */
    int rank;
} sh_init_args;

#define SH_GOLDEN 0x9E3779B97F4A7C15ull
#define SH_FLT_MAX 3.40282346638528859812e+38f

/* splitmix64's output function: a bijection of 64-bit values. */
SH_FN sh_u64 sh_mix64(sh_u64 z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

SH_FN sh_u64 sh_draw(sh_u64 key, sh_u64 j)
{
    return sh_mix64(key + (j + 1) * SH_GOLDEN);
}

/* 2^-53: a uniform double in [0, 1) is (r >> 11) times it. */
#define SH_ULP53 (1.0 / 9007199254740992.0)

/* ln(m 2^-53) for an integer m in [1, 2^53]: m = x 2^e with x in
 * (sqrt(1/2), sqrt(2)] (exact), ln x = 2 atanh(s), s = (x - 1) / (x + 1),
 * |s| < 0.1716, summed to s^25. */
SH_FN double sh_ln_u53(sh_u64 m)
{
    int e = 0;
    for (int s = 32; s > 0; s >>= 1)
        if (m >> (e + s))
            e += s;
    double x = (double)m / (double)(1ull << e); /* exact: in [1, 2) */
    if (x > 1.4142135623730951) {
        x = x * 0.5;
        e = e + 1;
    }
    double s = (x - 1.0) / (x + 1.0), z = s * s;
    double p = 0.04;
    p = p * z + 0.043478260869565216;
    p = p * z + 0.047619047619047616;
    p = p * z + 0.05263157894736842;
    p = p * z + 0.058823529411764705;
    p = p * z + 0.06666666666666667;
    p = p * z + 0.07692307692307693;
    p = p * z + 0.09090909090909091;
    p = p * z + 0.1111111111111111;
    p = p * z + 0.14285714285714285;
    p = p * z + 0.2;
    p = p * z + 0.3333333333333333;
    double lnx = 2.0 * s + 2.0 * s * (z * p);
    double E = (double)(e - 53);
    /* ln 2 in two parts (the first has 32 low zero bits: E times it is exact) */
    return E * 6.93147180369123816490e-01 + (E * 1.90821492927058770002e-10 + lnx);
}

/* sin x and cos x for x in [0, pi/4], Taylor to x^17 and x^18. */
SH_FN double sh_sin_small(double x)
{
    double z = x * x, p = 2.8114572543455206e-15;
    p = p * z + -7.647163731819816e-13;
    p = p * z + 1.6059043836821613e-10;
    p = p * z + -2.505210838544172e-08;
    p = p * z + 2.7557319223985893e-06;
    p = p * z + -0.0001984126984126984;
    p = p * z + 0.008333333333333333;
    p = p * z + -0.16666666666666666;
    return x + x * (z * p);
}

SH_FN double sh_cos_small(double x)
{
    double z = x * x, p = -1.5619206968586225e-16;
    p = p * z + 4.779477332387385e-14;
    p = p * z + -1.1470745597729725e-11;
    p = p * z + 2.08767569878681e-09;
    p = p * z + -2.755731922398589e-07;
    p = p * z + 2.48015873015873e-05;
    p = p * z + -0.001388888888888889;
    p = p * z + 0.041666666666666664;
    p = p * z + -0.5;
    return 1.0 + z * p;
}

/* cos(2 pi q 2^-53) for an integer q in [0, 2^53): the quadrant from q's
 * top two bits, the angle within it from the rest, folded to [0, pi/4]
 * (all exact). */
SH_FN double sh_cos_2pi_u53(sh_u64 q)
{
    int quad = (int)(q >> 51);
    double f = (double)(q & ((1ull << 51) - 1)) * (1.0 / 2251799813685248.0); /* [0, 1) */
    bool fold = f > 0.5;
    double t = (fold ? 1.0 - f : f) * 1.5707963267948966;
    double c = fold ? sh_sin_small(t) : sh_cos_small(t);  /* cos of the angle in the quadrant */
    double s = fold ? sh_cos_small(t) : sh_sin_small(t);  /* its sin */
    return quad == 0 ? c : quad == 1 ? -s : quad == 2 ? -c : s;
}

/* A float's bits and back. */
SH_FN sh_u16 sh_to16(int dtype, float v)
{
    return dtype == SH_F16 ? (sh_u16)SH_TO_F16(v) : (sh_u16)SH_TO_BF16(v);
}

SH_FN double sh_from16(int dtype, sh_u16 h)
{
    return dtype == SH_F16 ? (double)SH_F16_TO_F32(h) : (double)SH_BF16_TO_F32(h);
}

/* The next 16-bit float (f16 or bf16: sign-magnitude) above or below h. */
SH_FN sh_u16 sh_step16(sh_u16 h, bool up)
{
    if ((h & 0x7FFF) == 0)
        return up ? 0x0001 : 0x8001;
    return (h & 0x8000) ? (sh_u16)(up ? h - 1 : h + 1) : (sh_u16)(up ? h + 1 : h - 1);
}

/* Element k of dst, of dtype out, from f32 value f. */
SH_FN void sh_put_float(int out, void *dst, sh_i64 k, float f)
{
    if (out == SH_F32)
        ((float *)dst)[k] = f;
    else
        ((sh_u16 *)dst)[k] = sh_to16(out, f);
}

/* Element k of dst (dtype out) from the value v of the tensor's dtype:
 * rounded to the dtype, and for uniform (hi > lo) kept inside [lo, hi)
 * (rounding may reach hi, or rarely fall below lo: then the nearest
 * representable value inside); then converted to out where it differs. */
SH_FN void sh_store(const sh_init_args *g, void *dst, sh_i64 k, double v, double lo, double hi)
{
    if (g->dtype == SH_F32) {
        float s = (float)v;
        if (hi > lo) {
            while ((double)s >= hi)
                s = nextafterf(s, -SH_FLT_MAX);
            while ((double)s < lo)
                s = nextafterf(s, SH_FLT_MAX);
        }
        sh_put_float(g->out, dst, k, s);
        return;
    }
    if (g->dtype == SH_I32) {
        ((int *)dst)[k] = (int)v;
        return;
    }
    if (g->dtype == SH_BOOL) {
        ((sh_u8 *)dst)[k] = v != 0;
        return;
    }
    sh_u16 h = sh_to16(g->dtype, (float)v);
    if (hi > lo) {
        while (sh_from16(g->dtype, h) >= hi)
            h = sh_step16(h, false);
        while (sh_from16(g->dtype, h) < lo)
            h = sh_step16(h, true);
    }
    if (g->out == g->dtype)
        ((sh_u16 *)dst)[k] = h;
    else
        sh_put_float(g->out, dst, k, (float)sh_from16(g->dtype, h));
}

/* Element i of the full tensor into dst[k]. */
SH_FN void sh_gen_one(const sh_init_args *g, sh_u64 i, void *dst, sh_i64 k)
{
    if (g->init != SH_INIT_NORMAL && g->init != SH_INIT_UNIFORM) { /* none, zeros, ones */
        sh_store(g, dst, k, g->init == SH_INIT_ONES ? 1.0 : 0.0, 0.0, 0.0);
        return;
    }
    if (g->dtype == SH_I32 || g->dtype == SH_BOOL) {
        /* normal has no integer meaning (the compiler and the plan reader
         * reject it): zeros. A bool is the integer's truth. */
        sh_i64 v = 0;
        if (g->init == SH_INIT_UNIFORM)
            v = g->ilo + (sh_i64)(((sh_draw(g->key, 2 * i) >> 32) * g->in) >> 32);
        sh_store(g, dst, k, (double)v, 0.0, 0.0);
        return;
    }
    if (g->init == SH_INIT_UNIFORM) {
        double u = (double)(sh_draw(g->key, 2 * i) >> 11) * SH_ULP53;
        sh_store(g, dst, k, g->a + (g->b - g->a) * u, g->a, g->b);
        return;
    }
    /* normal: u1 = 1 - u in (0, 1], so that the log is finite */
    sh_u64 m = (1ull << 53) - (sh_draw(g->key, 2 * i) >> 11);
    double r = sqrt(-2.0 * sh_ln_u53(m));
    double z = r * sh_cos_2pi_u53(sh_draw(g->key, 2 * i + 1) >> 11);
    sh_store(g, dst, k, g->a * z, 0.0, 0.0);
}

#ifdef SH_INIT_KERNEL
/* Element k of the block (row-major over count) is element i of the full
 * tensor. One thread per element, grid-striding. */
extern "C" __global__ void sh_init(sh_init_args g, void *dst)
{
    sh_i64 stride = (sh_i64)gridDim.x * blockDim.x;
    for (sh_i64 k = (sh_i64)blockIdx.x * blockDim.x + threadIdx.x; k < g.n; k += stride) {
        sh_i64 r = k, i = 0, mul = 1;
        for (int d = g.rank - 1; d >= 0; d--) {
            i += (g.start[d] + r % g.count[d]) * mul;
            r /= g.count[d];
            mul *= g.full[d];
        }
        sh_gen_one(&g, (sh_u64)i, dst, k);
    }
}
#endif

#endif
