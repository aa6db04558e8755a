/* init.c: parameter initialisation (tensors.h, LANGUAGE.md §5): zeros, ones,
 * normal(std) and uniform(lo, hi), as a pure function of (seed, the tensor's
 * name, the element's row-major index in the full tensor), so that every
 * rank makes its own shard of the same full tensor, whatever the mesh; and
 * the dtype conversion that makes a master copy (f32) of a bf16 or f16
 * param from the param's values.
 *
 * The generator is counter-based: draw j of a tensor is splitmix64's output
 * function applied to key + (j + 1) * golden ratio, where key mixes the seed
 * with the name's FNV-1a hash; element i uses draws 2i and 2i + 1. Any
 * block is thus made without making the rest of the tensor.
 */
#include "runtime/io/tensors.h"

#include "support/support.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define GOLDEN 0x9E3779B97F4A7C15ull
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* splitmix64's output function: a bijection of 64-bit values. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    return h;
}

static uint64_t draw(uint64_t key, uint64_t j)
{
    return mix64(key + (j + 1) * GOLDEN);
}

/* A uniform double in [0, 1) from the top 53 bits. */
static double unit(uint64_t r)
{
    return (double)(r >> 11) * 0x1p-53;
}

static uint16_t to16(int dtype, float v)
{
    return dtype == RT_F16 ? su_f32_to_f16(v) : su_f32_to_bf16(v);
}

static double from16(int dtype, uint16_t h)
{
    return dtype == RT_F16 ? su_f16_to_f32(h) : su_bf16_to_f32(h);
}

/* The next 16-bit float (f16 or bf16: sign-magnitude) above or below h. */
static uint16_t step16(uint16_t h, bool up)
{
    if ((h & 0x7FFF) == 0)
        return up ? 0x0001 : 0x8001;
    return (h & 0x8000) ? (uint16_t)(up ? h - 1 : h + 1) : (uint16_t)(up ? h + 1 : h - 1);
}

/* v in [lo, hi) stored as dtype: rounding to the dtype may reach hi (or,
 * rarely, fall below lo); then the nearest representable value inside. */
static void store_in_range(int dtype, void *dst, int64_t k, double v, double lo, double hi)
{
    float s = (float)v;
    if (dtype == RT_F32) {
        if (hi > lo) {
            while ((double)s >= hi)
                s = nextafterf(s, -INFINITY);
            while ((double)s < lo)
                s = nextafterf(s, INFINITY);
        }
        ((float *)dst)[k] = s;
        return;
    }
    uint16_t h = to16(dtype, s);
    if (hi > lo) {
        while (from16(dtype, h) >= hi)
            h = step16(h, false);
        while (from16(dtype, h) < lo)
            h = step16(h, true);
    }
    ((uint16_t *)dst)[k] = h;
}

static void store(int dtype, void *dst, int64_t k, double v)
{
    if (dtype == RT_F32)
        ((float *)dst)[k] = (float)v;
    else if (dtype == RT_I32)
        ((int32_t *)dst)[k] = (int32_t)v;
    else if (dtype == RT_BOOL)
        ((uint8_t *)dst)[k] = v != 0;
    else
        ((uint16_t *)dst)[k] = to16(dtype, (float)v);
}

/* Integers in [floor(a), floor(b)) (clamped to int32), for token ids. */
typedef struct int_range {
    int64_t lo;
    uint64_t n; /* values in the range; 0 when empty (then lo) */
} int_range;

static int_range make_int_range(double a, double b)
{
    double lo = floor(a), hi = floor(b);
    lo = lo >= INT32_MIN ? (lo <= INT32_MAX ? lo : INT32_MAX) : INT32_MIN; /* NaN: INT32_MIN */
    hi = hi >= INT32_MIN ? (hi <= INT32_MAX + 1.0 ? hi : INT32_MAX + 1.0) : INT32_MIN;
    int_range r = {(int64_t)lo, hi > lo ? (uint64_t)(hi - lo) : 0};
    return r;
}

typedef struct gen {
    int init, dtype;
    double a, b;
    uint64_t key;
    int_range ir;
} gen;

/* Element i of the full tensor into dst[k]. */
static void gen_one(const gen *g, uint64_t i, void *dst, int64_t k)
{
    if (g->dtype == RT_I32 || g->dtype == RT_BOOL) {
        /* normal has no integer meaning (the compiler and the plan reader
         * reject it): zeros. A bool is the integer's truth. */
        int64_t v = 0;
        if (g->init == RT_INIT_UNIFORM)
            v = g->ir.lo + (int64_t)(((draw(g->key, 2 * i) >> 32) * g->ir.n) >> 32);
        store(g->dtype, dst, k, (double)v);
        return;
    }
    if (g->init == RT_INIT_UNIFORM) {
        double u = unit(draw(g->key, 2 * i));
        store_in_range(g->dtype, dst, k, g->a + (g->b - g->a) * u, g->a, g->b);
        return;
    }
    /* normal: Box-Muller, u1 in (0, 1] so that the log is finite */
    double u1 = 1.0 - unit(draw(g->key, 2 * i)), u2 = unit(draw(g->key, 2 * i + 1));
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    store(g->dtype, dst, k, g->a * z);
}

/* The elements [k0, k1) of a block (k0 and k1 at the starts of runs along
 * its last dim) of the full tensor, generated into dst. */
typedef struct init_part {
    const gen *g;
    const rt_type *full;
    const int64_t *start, *count;
    int64_t k0, k1;
    void *dst;
} init_part;

static void *init_runs(void *arg)
{
    const init_part *p = arg;
    const int rank = p->full->rank, last = rank - 1;
    const int64_t run = rank > 0 ? p->count[last] : 1;
    /* idx: the position in the block along the dims before the last */
    int64_t idx[RT_MAX_RANK] = {0}, r = p->k0 / run;
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = r % p->count[d];
        r /= p->count[d];
    }
    for (int64_t k = p->k0; k < p->k1; k += run) {
        int64_t i = 0; /* row-major index in the full tensor of the run's start */
        for (int d = 0; d < rank; d++)
            i = i * p->full->dim[d] + p->start[d] + (d < last ? idx[d] : 0);
        for (int64_t j = 0; j < run; j++)
            gen_one(p->g, (uint64_t)(i + j), p->dst, k + j);
        for (int d = last - 1; d >= 0 && ++idx[d] == p->count[d]; d--)
            idx[d] = 0;
    }
    return NULL;
}

/* Blocks of at least INIT_PARALLEL elements are made by up to
 * INIT_THREADS threads (the processors online), each a range of whole
 * runs: every element is a function of its index alone, so the result
 * is the same bits however many make it. A thread that cannot start
 * leaves its range to the caller. */
enum { INIT_PARALLEL = 1 << 20, INIT_THREADS = 32 };

void rt_init_block(int init, double a, double b, uint64_t seed, const char *name,
                   const rt_type *full, const int64_t *start, const int64_t *count, void *dst)
{
    const int rank = full->rank, dtype = full->dtype;
    if (rank > RT_MAX_RANK || dtype >= RT_NDTYPES)
        return;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (count[d] <= 0)
            return;
        n *= count[d];
    }
    if (init != RT_INIT_NORMAL && init != RT_INIT_UNIFORM) { /* none, zeros, ones */
        double v = init == RT_INIT_ONES ? 1.0 : 0.0;
        for (int64_t k = 0; k < n; k++)
            store(dtype, dst, k, v);
        return;
    }
    gen g = {init, dtype, a, b, mix64(fnv1a64(name) + mix64(seed ^ GOLDEN)),
             make_int_range(a, b)};
    const int64_t run = rank > 0 ? count[rank - 1] : 1, runs = n / run;
    long cpus = n >= INIT_PARALLEL ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    int nt = cpus < 1 ? 1 : cpus > INIT_THREADS ? INIT_THREADS : (int)cpus;
    if (nt > runs)
        nt = (int)runs;
    init_part part[INIT_THREADS];
    pthread_t tid[INIT_THREADS];
    bool started[INIT_THREADS] = {false};
    for (int t = 0; t < nt; t++)
        part[t] = (init_part){&g, full, start, count, runs * t / nt * run,
                              runs * (t + 1) / nt * run, dst};
    for (int t = 1; t < nt; t++)
        started[t] = pthread_create(&tid[t], NULL, init_runs, &part[t]) == 0;
    init_runs(&part[0]);
    for (int t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            init_runs(&part[t]);
    }
}

/* Element k of src (dtype from) as f32. */
static float float_at(int from, const void *src, int64_t k)
{
    if (from == RT_F32)
        return ((const float *)src)[k];
    return (float)from16(from, ((const uint16_t *)src)[k]);
}

void rt_convert_floats(int from, const void *src, int to, void *dst, int64_t n)
{
    if (from == to) {
        memcpy(dst, src, (size_t)n * (size_t)rt_dtype_size(to));
        return;
    }
    for (int64_t k = 0; k < n; k++)
        store(to, dst, k, float_at(from, src, k));
}
