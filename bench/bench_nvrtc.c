/* bench_nvrtc.c: the kernels' compile time and the cached plan's load time
 * (issue 5, DESIGN.md §8). A benchmark, never a test.
 *
 *   bench_nvrtc FILE [-D NAME=VALUE]... [--mesh AxB...] [--arch LIST] [--repeat N]
 *
 * 1. Cold compile per kernel: the model's kernels as `shardc --emit cuda`
 *    prints them, each compiled by NVRTC with no cache for every
 *    architecture of --arch (default sm_80,sm_90) plus PTX for the newest,
 *    as the plan writer compiles a module. Per kernel, and the minimum,
 *    median, 90th percentile and maximum over all, by strategy too.
 * 2. The plan: written with an empty cache (cold: every distinct module
 *    compiled), then with the cache it filled (warm, the median of
 *    --repeat), then loaded from its file (read, CRC-checked and validated:
 *    shardc_plan_load, the median of --repeat). With --arch none, the plan
 *    without kernels for comparison.
 *
 * Everything runs on the CPU: NVRTC needs no GPU. Loading the modules
 * into a context (cuModuleLoadData) needs one and is not measured here. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cuda/nvrtc.h"
#include "shardc.h"

enum { MAX_DEFINES = 64, DEFAULT_REPEAT = 5 };

static void usage(void)
{
    fprintf(stderr, "usage: bench_nvrtc FILE [-D NAME=VALUE]... [--mesh AxB...] "
                    "[--arch LIST] [--repeat N]\n");
    exit(2);
}

static void die(const char *what, char *err)
{
    fprintf(stderr, "bench_nvrtc: %s: %s\n", what, err ? err : "failed");
    shardc_free(err);
    exit(1);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of n sorted values (nearest rank). */
static double quantile(const double *v, int n, double q)
{
    int i = (int)(q * n + 0.999999) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

typedef struct kernel {
    char name[64];
    char strategy[32];
    char *source;       /* points into the --emit cuda text, NUL-terminated */
    double ms;
} kernel;

/* Splits `--emit cuda` output into kernels: each starts at a line
 * "// kN_name: STRATEGY kernel over ..." and runs to the next one. Cuts
 * text in place; exits when a piece does not hold exactly one kernel. */
static kernel *split_kernels(char *text, int *n)
{
    int cap = 16;
    kernel *k = malloc((size_t)cap * sizeof *k);
    *n = 0;
    char *line = text;
    while (line && *line) {
        char *next = strchr(line, '\n');
        if (!strncmp(line, "// k", 4) && line[4] >= '0' && line[4] <= '9') {
            if (*n == cap)
                k = realloc(k, (size_t)(cap *= 2) * sizeof *k);
            if (!k)
                die("kernels", NULL);
            if (*n)
                line[-1] = '\0'; /* ends the previous kernel */
            kernel *c = &k[(*n)++];
            memset(c, 0, sizeof *c);
            c->source = line;
            const char *colon = strstr(line, ": "), *kw = colon ? strstr(colon, " kernel") : NULL;
            if (!colon || !kw || colon - line - 3 >= (long)sizeof c->name ||
                kw - colon - 2 >= (long)sizeof c->strategy)
                die("--emit cuda", "a kernel header without a name and strategy");
            memcpy(c->name, line + 3, (size_t)(colon - line - 3));
            memcpy(c->strategy, colon + 2, (size_t)(kw - colon - 2));
        }
        line = next ? next + 1 : NULL;
    }
    for (int i = 0; i < *n; i++) {
        const char *g = strstr(k[i].source, "__global__");
        if (!g || strstr(g + 1, "__global__"))
            die(k[i].name, "not exactly one __global__ function in its source");
    }
    return k;
}

/* The plan of prog written once into path; its wall time in ms. */
static double write_plan(const shardc_program *prog, const char *path)
{
    char *err = NULL;
    double t0 = now_ms();
    if (shardc_program_save_plan(prog, path, &err) != SHARDC_OK)
        die("writing the plan", err);
    return now_ms() - t0;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return quantile(v, n, 0.5);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(path);
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (f)
        fclose(f);
    return n;
}

/* The model at path compiled with opt; exits on an error. */
static shardc_program *compile(const char *path, shardc_options *opt)
{
    shardc_program *prog = NULL;
    char *err = NULL;
    if (shardc_compile_file(opt, path, &prog, &err) != SHARDC_OK)
        die(path, err);
    return prog;
}

/* Compiles kernel k with no cache, timing it into k->ms; exits on an
 * error. */
static void compile_one(kernel *k, const rt_nvrtc_options *o)
{
    jmp_buf oom;
    su_buf e;
    su_buf_init(&e, &oom);
    if (setjmp(oom))
        die("compile", "out of memory");
    rt_nvrtc_output out;
    double t0 = now_ms();
    bool ok = rt_nvrtc_compile(k->name, k->source, o, &out, &e);
    k->ms = now_ms() - t0;
    if (!ok)
        die(k->name, e.s);
    rt_nvrtc_output_free(&out);
    su_buf_free(&e);
}

static void cold_kernels(const shardc_program *prog, const char *archs)
{
    char *text = NULL, *err = NULL;
    if (shardc_program_emit(prog, "cuda", &text, NULL, &err) != SHARDC_OK)
        die("--emit cuda", err);
    int n;
    kernel *k = split_kernels(text, &n);
    rt_nvrtc_options o;
    memset(&o, 0, sizeof o);
    su_status perr;
    if (archs && !rt_parse_archs(archs, o.arch, &o.narchs, &perr))
        die("--arch", perr.msg);
    double total = 0;
    printf("## Cold compile per kernel (NVRTC, no cache)\n\n");
    printf("| kernel | strategy | source lines | ms |\n| --- | --- | --- | --- |\n");
    for (int i = 0; i < n; i++) {
        compile_one(&k[i], &o);
        int lines = 0;
        for (const char *c = k[i].source; *c; c++)
            lines += *c == '\n';
        printf("| %s | %s | %d | %.1f |\n", k[i].name, k[i].strategy, lines, k[i].ms);
        total += k[i].ms;
    }
    double *ms = malloc(((size_t)n + 1) * sizeof *ms);
    printf("\n| strategy | kernels | min ms | median ms | p90 ms | max ms |\n"
           "| --- | --- | --- | --- | --- | --- |\n");
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: per strategy, in order of first appearance; 1: all */
        for (int i = 0; i < n; i++) {
            bool first = true;
            for (int j = 0; j < i && pass == 0; j++)
                first &= strcmp(k[j].strategy, k[i].strategy) != 0;
            if (!first || (pass == 1 && i > 0))
                continue;
            int m = 0;
            for (int j = 0; j < n; j++)
                if (pass == 1 || !strcmp(k[j].strategy, k[i].strategy))
                    ms[m++] = k[j].ms;
            qsort(ms, (size_t)m, sizeof *ms, cmp_double);
            printf("| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", pass ? "all" : k[i].strategy, m,
                   ms[0], quantile(ms, m, 0.5), quantile(ms, m, 0.9), ms[m - 1]);
        }
    }
    printf("\n%d kernels, %.2f s in all (one after another)\n\n", n, total / 1e3);
    free(ms);
    free(k);
    shardc_free(text);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *mesh = NULL, *archs = NULL;
    const char *defines[MAX_DEFINES];
    int ndefines = 0;
    long repeat = DEFAULT_REPEAT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-D") && i + 1 < argc && ndefines < MAX_DEFINES)
            defines[ndefines++] = argv[++i];
        else if (!strcmp(argv[i], "--mesh") && i + 1 < argc)
            mesh = argv[++i];
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
            archs = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = strtol(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage();
    }
    if (!path || repeat < 1 || repeat > 1000)
        usage();
    if (!rt_nvrtc_available())
        die("NVRTC", "this build has no NVRTC");

    char dir[] = "/tmp/bench_nvrtc.XXXXXX";
    if (!mkdtemp(dir))
        die("mkdtemp", strerror(errno));
    char cache[sizeof dir + 16], plan[sizeof dir + 16];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(plan, sizeof plan, "%s/model.plan", dir);

    char *err = NULL;
    shardc_options *opt = shardc_options_new();
    if (!opt || (mesh && shardc_options_set_mesh(opt, mesh, &err) != SHARDC_OK))
        die("--mesh", err);
    for (int i = 0; i < ndefines; i++) {
        char *eq = strchr(defines[i], '=');
        if (!eq)
            usage();
        *eq = '\0';
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (*end || shardc_options_define(opt, defines[i], v, &err) != SHARDC_OK)
            die("-D", err);
    }
    if (archs && shardc_options_set_archs(opt, archs, &err) != SHARDC_OK)
        die("--arch", err);
    if (shardc_options_set_cache_dir(opt, cache, &err) != SHARDC_OK)
        die("cache", err);

    int nv[2] = {0, 0};
    rt_nvrtc_version(&nv[0], &nv[1]);
    printf("# %s%s%s: kernels compiled by NVRTC %d.%d for %s\n\n", path, mesh ? " --mesh " : "",
           mesh ? mesh : "", nv[0], nv[1], archs ? archs : "sm_80,sm_90 (the default)");
    shardc_program *prog = compile(path, opt);
    cold_kernels(prog, archs);

    double cold = write_plan(prog, plan);
    double *ms = malloc((size_t)repeat * sizeof *ms);
    for (long r = 0; r < repeat; r++)
        ms[r] = write_plan(prog, plan);
    double warm = median_of(ms, (int)repeat);
    for (long r = 0; r < repeat; r++) {
        shardc_plan *pl = NULL;
        double t0 = now_ms();
        if (shardc_plan_load(plan, &pl, &err) != SHARDC_OK)
            die("loading the plan", err);
        ms[r] = now_ms() - t0;
        shardc_plan_free(pl);
    }
    double load = median_of(ms, (int)repeat);
    long bytes = file_size(plan);
    shardc_program_free(prog);

    /* the same plan without kernels */
    if (shardc_options_set_archs(opt, "none", &err) != SHARDC_OK)
        die("--arch none", err);
    prog = compile(path, opt);
    for (long r = 0; r < repeat; r++)
        ms[r] = write_plan(prog, plan);
    double none = median_of(ms, (int)repeat);
    long none_bytes = file_size(plan);
    shardc_program_free(prog);

    printf("## The plan (median of %ld, after the compile to IR)\n\n", repeat);
    printf("| | ms | plan bytes |\n| --- | --- | --- |\n");
    printf("| written, empty cache (cold) | %.1f | %ld |\n", cold, bytes);
    printf("| written, warm cache | %.1f | %ld |\n", warm, bytes);
    printf("| loaded (read, CRC, validated) | %.2f | %ld |\n", load, bytes);
    printf("| written with --arch none | %.1f | %ld |\n", none, none_bytes);
    free(ms);
    shardc_options_free(opt);
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : 1;
}
