/* bench_frontend.c: the frontend's compile time (DESIGN.md §8): parsing,
 * checking and building the logical IR of one model, repeated, reported as
 * the minimum and median wall time. A benchmark, never a test.
 *
 *   bench_frontend FILE [-D NAME=VALUE]... [--mesh AxB...] [--repeat N]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/fe.h"

enum { MAX_DEFINES = 64, DEFAULT_REPEAT = 20 };

static void usage(void)
{
    fprintf(stderr, "usage: bench_frontend FILE [-D NAME=VALUE]... [--mesh AxB...] "
                    "[--repeat N]\n");
    exit(2);
}

/* The whole file, malloc'd; exits on failure. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        fprintf(stderr, "bench_frontend: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    long n = ftell(f);
    char *text = malloc(n > 0 ? (size_t)n : 1);
    rewind(f);
    if (n < 0 || !text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "bench_frontend: %s: cannot read\n", path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)n;
    return text;
}

/* "8x4" into opt->mesh; exits on anything else. */
static void parse_mesh(const char *s, fe_options *opt)
{
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0 || (*end && *end != 'x'))
            usage();
        if (opt->nmesh == IR_MAX_AXES)
            opt->mesh_too_long = true;
        else
            opt->mesh[opt->nmesh++] = v;
        if (!*end)
            return;
        s = end + 1;
    }
}

/* "NAME=VALUE" into d (NAME points into s, which it cuts); exits on error. */
static void parse_define(char *s, fe_define *d)
{
    char *eq = strchr(s, '='), *end;
    if (!eq || eq == s)
        usage();
    *eq = '\0';
    errno = 0;
    d->name = s;
    d->value = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end || errno)
        usage();
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

/* One compilation: its wall time in ms; *nops gets the module's op count.
 * Exits with the diagnostic when the model does not compile. */
static double compile_once(const su_src *src, const fe_options *opt, int *nops)
{
    jmp_buf oom;
    su_diag diag;
    su_diag_init(&diag, &oom);
    if (setjmp(oom)) {
        fprintf(stderr, "bench_frontend: out of memory\n");
        exit(1);
    }
    double t0 = now_ms();
    ir_module *m = fe_compile(src, opt, &diag, &oom);
    double t1 = now_ms();
    if (!m) {
        fprintf(stderr, "%s", diag.msg.s ? diag.msg.s : "bench_frontend: compile failed\n");
        exit(1);
    }
    *nops = m->ops.n;
    ir_module_free(m);
    su_diag_free(&diag);
    return t1 - t0;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    fe_define defines[MAX_DEFINES];
    fe_options opt = {.defines = defines};
    long repeat = DEFAULT_REPEAT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-D") && i + 1 < argc && opt.ndefines < MAX_DEFINES)
            parse_define(argv[++i], &defines[opt.ndefines++]);
        else if (!strncmp(argv[i], "-D", 2) && argv[i][2] && opt.ndefines < MAX_DEFINES)
            parse_define(argv[i] + 2, &defines[opt.ndefines++]);
        else if (!strcmp(argv[i], "--mesh") && i + 1 < argc)
            parse_mesh(argv[++i], &opt);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = strtol(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage();
    }
    if (!path || repeat < 1)
        usage();

    su_src src = {path, NULL, 0};
    char *text = read_file(path, &src.len);
    src.text = text;
    double *ms = malloc((size_t)repeat * sizeof *ms);
    if (!ms)
        return 1;
    int nops = 0;
    for (long r = 0; r < repeat; r++)
        ms[r] = compile_once(&src, &opt, &nops);
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_double);
    double median = repeat % 2 ? ms[repeat / 2] : (ms[repeat / 2 - 1] + ms[repeat / 2]) / 2;
    printf("%s: %ld runs, min %.3f ms, median %.3f ms, %d ops\n", path, repeat, ms[0], median,
           nops);
    free(ms);
    free(text);
    return 0;
}
