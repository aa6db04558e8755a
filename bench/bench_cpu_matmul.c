/* bench_cpu_matmul.c: the CPU backend's matmul (rt_cpu_run, runtime/cpu/cpu.h)
 * against direct cblas_sgemm calls of the same shapes: the overhead of the
 * kernel's dispatch, batch walk and folding. A benchmark, never a test.
 *
 *   bench_cpu_matmul [--repeat N]
 *
 * Each shape runs a few warm-up calls, then N timed pairs (one call of each
 * side, in alternating order), and prints a markdown table: the medians and
 * their ratio (goal: rt_cpu_run / sgemm <= 1.5), the median of the per-pair
 * ratios (steadier on a shared machine), and the ratio of the minima. The
 * results are compared too: a wrong product stops the benchmark.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cpu/cpu.h"

enum { WARMUP = 3, DEFAULT_REPEAT = 20 };

typedef struct shape {
    const char *name;              /* as the table shows it */
    rt_type a, b, out;
    int batches;                   /* direct side: this many sgemms of m x k @ k x n */
    int m, k, n;
    int b_batched;                 /* b advances by k * n per batch */
} shape;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static rt_type f32(int rank, int64_t d0, int64_t d1, int64_t d2)
{
    rt_type t = {.dtype = RT_F32, .rank = (uint8_t)rank, .dim = {d0, d1, d2}};
    return t;
}

static float *random_floats(int64_t n, uint64_t *state)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_cpu_matmul: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((*state >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

static void direct(const shape *s, const float *a, const float *b, float *c)
{
    for (int t = 0; t < s->batches; t++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f,
                    a + (size_t)t * s->m * s->k, s->k,
                    b + (s->b_batched ? (size_t)t * s->k * s->n : 0), s->n, 0.0f,
                    c + (size_t)t * s->m * s->n, s->n);
}

static void bench(const shape *s, int repeat)
{
    uint64_t st = 42;
    int64_t na = rt_type_numel(&s->a), nb = rt_type_numel(&s->b), no = rt_type_numel(&s->out);
    float *a = random_floats(na, &st), *b = random_floats(nb, &st);
    float *c1 = random_floats(no, &st), *c2 = random_floats(no, &st);
    double *t1 = malloc((size_t)repeat * sizeof *t1), *t2 = malloc((size_t)repeat * sizeof *t2);
    double *pr = malloc((size_t)repeat * sizeof *pr); /* per-pair ratios */
    rt_instr in = {.op = RT_OP_MATMUL, .nin = 2, .in = {0, 1}, .out = 2,
                   .in_t = {s->a, s->b}, .out_t = s->out};
    void *bufs[3] = {a, b, c1};
    rt_cpu_ctx ctx = {.naxes = 0};
    su_status err;
    for (int i = 0; i < WARMUP; i++) {
        if (rt_cpu_run(&ctx, &in, bufs, &err) != 0) {
            fprintf(stderr, "bench_cpu_matmul: %s: %s\n", s->name, err.msg);
            exit(1);
        }
        direct(s, a, b, c2);
    }
    double maxdiff = 0;
    for (int64_t i = 0; i < no; i++)
        maxdiff = fmax(maxdiff, fabs((double)c1[i] - c2[i]));
    if (maxdiff > 1e-3) {
        fprintf(stderr, "bench_cpu_matmul: %s: results differ by %g\n", s->name, maxdiff);
        exit(1);
    }
    /* pairs close in time, each side first in every other pair, so that a
     * machine shared with other work slows both sides alike */
    for (int i = 0; i < repeat; i++) {
        for (int side = 0; side < 2; side++) {
            double t0 = now_s();
            if ((side ^ i) & 1)
                direct(s, a, b, c2);
            else
                rt_cpu_run(&ctx, &in, bufs, &err);
            ((side ^ i) & 1 ? t2 : t1)[i] = now_s() - t0;
        }
        pr[i] = t1[i] / t2[i];
    }
    qsort(t1, (size_t)repeat, sizeof *t1, cmp_double);
    qsort(t2, (size_t)repeat, sizeof *t2, cmp_double);
    qsort(pr, (size_t)repeat, sizeof *pr, cmp_double);
    double m1 = t1[repeat / 2], m2 = t2[repeat / 2];
    double flop = 2.0 * s->batches * s->m * s->k * s->n;
    printf("| %s | %d x sgemm %d x %d x %d | %.3f ms | %.3f ms | %.2f | %.2f | %.2f | %.1f |\n",
           s->name, s->batches, s->m, s->k, s->n, m1 * 1e3, m2 * 1e3, m1 / m2, pr[repeat / 2],
           t1[0] / t2[0], flop / m1 * 1e-9);
    free(a);
    free(b);
    free(c1);
    free(c2);
    free(t1);
    free(t2);
    free(pr);
}

int main(int argc, char **argv)
{
    int repeat = DEFAULT_REPEAT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 10) {
            repeat = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_cpu_matmul [--repeat N (>= 10)]\n");
            return 2;
        }
    }
    const shape shapes[] = {
        {"[64, 1024] @ [1024, 4096]", f32(2, 64, 1024, 0), f32(2, 1024, 4096, 0),
         f32(2, 64, 4096, 0), 1, 64, 1024, 4096, 0},
        {"[8, 256, 256] @ [256, 1024]", f32(3, 8, 256, 256), f32(2, 256, 1024, 0),
         f32(3, 8, 256, 1024), 1, 2048, 256, 1024, 0},
        {"[512, 512] @ [512, 512]", f32(2, 512, 512, 0), f32(2, 512, 512, 0),
         f32(2, 512, 512, 0), 1, 512, 512, 512, 0},
        {"[32, 128, 64] @ [32, 64, 128]", f32(3, 32, 128, 64), f32(3, 32, 64, 128),
         f32(3, 32, 128, 128), 32, 128, 64, 128, 1},
    };
    printf("| shape | direct side | rt_cpu_run (median) | cblas_sgemm (median) | ratio of "
           "medians | median of paired ratios | ratio of minima | rt_cpu_run GFLOP/s |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        bench(&shapes[i], repeat);
    printf("\n%d timed runs per side after %d warm-up calls; %s, %d threads\n", repeat,
           WARMUP, openblas_get_config(), openblas_get_num_threads());
    return 0;
}
