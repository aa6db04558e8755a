/* init.c: parameter initialisation (tensors.h, LANGUAGE.md §5): zeros, ones,
 * normal(std) and uniform(lo, hi), as a pure function of (seed, the tensor's
 * name, the element's row-major index in the full tensor), so that every
 * rank makes its own shard of the same full tensor, whatever the mesh and
 * whichever backend makes it; and the dtype conversion that makes a master
 * copy (f32) of a bf16 or f16 param from the param's values.
 *
 * The generator itself is init_gen.h, which the CUDA backend runs too (the
 * plan's init module): this file makes its parameters and runs it on the
 * host, over threads. It must be compiled without contraction into FMAs
 * (CMakeLists.txt: -ffp-contract=off), as NVRTC compiles the module, so
 * that both sides round alike.
 */
#include "runtime/io/tensors.h"
#include "runtime/exec/init_gen.h"

#include "support/support.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

_Static_assert((int)SH_F32 == (int)RT_F32 && (int)SH_F16 == (int)RT_F16 &&
                   (int)SH_BF16 == (int)RT_BF16 && (int)SH_I32 == (int)RT_I32 &&
                   (int)SH_BOOL == (int)RT_BOOL && SH_MAX_RANK == RT_MAX_RANK,
               "init_gen.h's dtypes must number as plan.h's");
_Static_assert((int)SH_INIT_NONE == (int)RT_INIT_NONE && (int)SH_INIT_ZEROS == (int)RT_INIT_ZEROS &&
                   (int)SH_INIT_ONES == (int)RT_INIT_ONES &&
                   (int)SH_INIT_NORMAL == (int)RT_INIT_NORMAL &&
                   (int)SH_INIT_UNIFORM == (int)RT_INIT_UNIFORM,
               "init_gen.h's inits must number as plan.h's");

bool rt_init_args(int init, double a, double b, uint64_t seed, const char *name,
                  const rt_type *full, const int64_t *start, const int64_t *count, int out,
                  sh_init_args *g)
{
    memset(g, 0, sizeof *g);
    const int rank = full->rank, dtype = full->dtype;
    if (rank > RT_MAX_RANK || dtype >= RT_NDTYPES || init > RT_INIT_UNIFORM)
        return false;
    bool flt = dtype == RT_F32 || dtype == RT_F16 || dtype == RT_BF16;
    if (out != dtype && !(flt && (out == RT_F32 || out == RT_F16 || out == RT_BF16)))
        return false;
    g->n = 1;
    for (int d = 0; d < rank; d++) {
        if (count[d] <= 0)
            return false;
        g->full[d] = full->dim[d];
        g->start[d] = start[d];
        g->count[d] = count[d];
        g->n *= count[d];
    }
    g->key = sh_mix64(su_fnv_str(SU_FNV_BASIS, name) + sh_mix64(seed ^ SH_GOLDEN));
    g->a = a;
    g->b = b;
    /* integers in [floor(a), floor(b)) (clamped to int32), for token ids */
    double lo = floor(a), hi = floor(b);
    lo = lo >= INT32_MIN ? (lo <= INT32_MAX ? lo : INT32_MAX) : INT32_MIN; /* NaN: INT32_MIN */
    hi = hi >= INT32_MIN ? (hi <= INT32_MAX + 1.0 ? hi : INT32_MAX + 1.0) : INT32_MIN;
    g->ilo = (int64_t)lo;
    g->in = hi > lo ? (uint64_t)(hi - lo) : 0;
    g->init = init;
    g->dtype = dtype;
    g->out = out;
    g->rank = rank;
    return true;
}

/* The elements [k0, k1) of a block (k0 and k1 at the starts of runs along
 * its last dim) of the full tensor, generated into dst. */
typedef struct init_part {
    const sh_init_args *g;
    int64_t k0, k1;
    void *dst;
} init_part;

static void *init_runs(void *arg)
{
    const init_part *p = arg;
    const sh_init_args *g = p->g;
    const int rank = g->rank, last = rank - 1;
    const int64_t run = rank > 0 ? g->count[last] : 1;
    /* idx: the position in the block along the dims before the last */
    int64_t idx[RT_MAX_RANK] = {0}, r = p->k0 / run;
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = r % g->count[d];
        r /= g->count[d];
    }
    for (int64_t k = p->k0; k < p->k1; k += run) {
        int64_t i = 0; /* row-major index in the full tensor of the run's start */
        for (int d = 0; d < rank; d++)
            i = i * g->full[d] + g->start[d] + (d < last ? idx[d] : 0);
        for (int64_t j = 0; j < run; j++)
            sh_gen_one(g, (uint64_t)(i + j), p->dst, k + j);
        for (int d = last - 1; d >= 0 && ++idx[d] == g->count[d]; d--)
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

void rt_init_fill(const sh_init_args *g, void *dst)
{
    const int64_t run = g->rank > 0 ? g->count[g->rank - 1] : 1, runs = g->n / run;
    long cpus = g->n >= INIT_PARALLEL ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    int nt = cpus < 1 ? 1 : cpus > INIT_THREADS ? INIT_THREADS : (int)cpus;
    if (nt > runs)
        nt = (int)runs;
    init_part part[INIT_THREADS];
    pthread_t tid[INIT_THREADS];
    bool started[INIT_THREADS] = {false};
    for (int t = 0; t < nt; t++)
        part[t] = (init_part){g, runs * t / nt * run, runs * (t + 1) / nt * run, dst};
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

void rt_init_block(int init, double a, double b, uint64_t seed, const char *name,
                   const rt_type *full, const int64_t *start, const int64_t *count, void *dst)
{
    sh_init_args g;
    if (rt_init_args(init, a, b, seed, name, full, start, count, full->dtype, &g))
        rt_init_fill(&g, dst);
}

/* Element k of src (dtype from) as f32. */
static float float_at(int from, const void *src, int64_t k)
{
    if (from == RT_F32)
        return ((const float *)src)[k];
    return (float)sh_from16(from, ((const uint16_t *)src)[k]);
}

void rt_convert_floats(int from, const void *src, int to, void *dst, int64_t n)
{
    if (from == to) {
        memcpy(dst, src, (size_t)n * (size_t)rt_dtype_size(to));
        return;
    }
    for (int64_t k = 0; k < n; k++)
        sh_put_float(to, dst, k, float_at(from, src, k));
}
