/* test_session.c: the C API's plans and sessions (include/shardc.h):
 * compile, plan, save and load, bind, run, read outputs, against a
 * reference computed here; and two compilations plus two sessions in two
 * threads at once. Tolerance: f32 against a double reference, rtol 1e-5
 * plus atol 1e-6 (sums of at most 64 products). */
#include "check.h"
#include "shardc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char model[] =
    "mesh dp, tp\n"
    "let B = 8, D = 16, H = 64\n"
    "input  x  : f32[B, D] shard(dp, _)\n"
    "param  w1 : f32[D, H] shard(_, tp) = normal(0.1)\n"
    "param  w2 : f32[H, D] shard(tp, _) = normal(0.1)\n"
    "y = gelu(x @ w1) @ w2\n"
    "s = sum(y, axis = 1)\n"
    "output y, s\n";

enum { B = 8, D = 16, H = 64 };

typedef struct data {
    float x[B * D], w1[D * H], w2[H * D];
    double y[B * D], s[B];
} data;

static double gelu(double v)
{
    return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

static void make_data(data *d, unsigned seed)
{
    for (int i = 0; i < B * D; i++)
        d->x[i] = (float)((int)((i * 7919u + seed * 104729u) % 17) - 8) / 8.0f;
    for (int i = 0; i < D * H; i++)
        d->w1[i] = (float)((int)((i * 31u + seed) % 13) - 6) / 20.0f;
    for (int i = 0; i < H * D; i++)
        d->w2[i] = (float)((int)((i * 17u + seed * 3u) % 11) - 5) / 20.0f;
    for (int b = 0; b < B; b++) {
        double h[H];
        for (int j = 0; j < H; j++) {
            double acc = 0;
            for (int k = 0; k < D; k++)
                acc += (double)d->x[b * D + k] * d->w1[k * H + j];
            h[j] = gelu(acc);
        }
        d->s[b] = 0;
        for (int j = 0; j < D; j++) {
            double acc = 0;
            for (int k = 0; k < H; k++)
                acc += h[k] * d->w2[k * D + j];
            d->y[b * D + j] = acc;
            d->s[b] += acc;
        }
    }
}

static int close_to(const float *got, const double *want, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-6 + 1e-5 * fabs(want[i])))
            bad++;
    return bad;
}

/* Compiles the model for mesh, runs it on d, and counts mismatches; -1 on
 * an API failure (err says what). */
static int compile_and_run(const char *mesh, const data *d, char **err)
{
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    int bad = -1;
    if (shardc_options_set_mesh(opt, mesh, err) || 
        shardc_compile_string(opt, "m.sh", model, sizeof model - 1, &prog, err) ||
        shardc_program_plan(prog, &plan, err))
        goto out;
    shardc_session_config cfg = {.comm = "local", .seed = 3};
    if (shardc_session_new(plan, &cfg, &s, err) ||
        shardc_session_bind(s, "x", d->x, sizeof d->x, err) ||
        shardc_session_bind(s, "w1", d->w1, sizeof d->w1, err) ||
        shardc_session_bind(s, "w2", d->w2, sizeof d->w2, err))
        goto out;
    for (int step = 0; step < 2; step++) {
        const void *y, *sum;
        shardc_tensor_info ti;
        if (shardc_session_run(s, err) || shardc_session_output(s, "y", &y, &ti, err) ||
            shardc_session_output(s, "s", &sum, NULL, err))
            goto out;
        if (ti.rank != 2 || ti.dim[0] != B || ti.dim[1] != D)
            goto out;
        bad = close_to(y, d->y, B * D) + close_to(sum, d->s, B);
        if (bad)
            break;
    }
out:
    shardc_session_free(s);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return bad;
}

typedef struct job {
    const char *mesh;
    unsigned seed;
    int result;
    char *err;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    data *d = malloc(sizeof *d);
    make_data(d, j->seed);
    j->result = 0;
    for (int i = 0; i < 5 && j->result == 0; i++)
        j->result = compile_and_run(j->mesh, d, &j->err);
    free(d);
    return NULL;
}

static void test_meshes(void)
{
    static data d;
    make_data(&d, 1);
    const char *meshes[] = {"1x1", "2x1", "1x2", "2x2", "4x2", "2x4", "8x1"};
    for (size_t i = 0; i < sizeof meshes / sizeof *meshes; i++) {
        char *err = NULL;
        int bad = compile_and_run(meshes[i], &d, &err);
        if (bad != 0)
            fprintf(stderr, "mesh %s: %d mismatches; %s\n", meshes[i], bad, err ? err : "");
        CHECK_INT(bad, 0);
        shardc_free(err);
    }
}

static void test_threads(void)
{
    job a = {"2x2", 5, -1, NULL}, b = {"4x1", 9, -1, NULL};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, run_job, &a) == 0);
    CHECK(pthread_create(&tb, NULL, run_job, &b) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (a.err || b.err)
        fprintf(stderr, "threads: %s / %s\n", a.err ? a.err : "", b.err ? b.err : "");
    CHECK_INT(a.result, 0);
    CHECK_INT(b.result, 0);
    shardc_free(a.err);
    shardc_free(b.err);
}

static void test_save_load_and_errors(void)
{
    char *err = NULL;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    CHECK(shardc_options_set_mesh(opt, "2x2", &err) == SHARDC_OK);
    CHECK(shardc_compile_string(opt, "m.sh", model, sizeof model - 1, &prog, &err) == SHARDC_OK);
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_session_%ld.plan", (long)getpid());
    CHECK(shardc_program_save_plan(prog, path, &err) == SHARDC_OK);
    shardc_plan *plan = NULL;
    CHECK(shardc_plan_load(path, &plan, &err) == SHARDC_OK);
    CHECK_INT(shardc_plan_ranks(plan), 4);
    CHECK_INT(shardc_plan_num_axes(plan), 2);
    long long size = 0;
    CHECK_STR(shardc_plan_axis(plan, 1, &size), "tp");
    CHECK_INT(size, 2);
    CHECK(strstr(shardc_plan_report(plan), "\"ranks\"") != NULL ||
          strstr(shardc_plan_report(plan), "ranks") != NULL);
    /* the tensor table: x, w1, w2 in, y, s out */
    int nin = 0, nparam = 0, nout = 0;
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        CHECK(shardc_plan_tensor(plan, i, &t) == SHARDC_OK);
        nin += !strcmp(t.kind, "input");
        nparam += !strcmp(t.kind, "param");
        nout += !strcmp(t.kind, "output");
        if (!strcmp(t.name, "w1")) {
            CHECK_INT(t.dim[0], D);
            CHECK_INT(t.dim[1], H);
            CHECK_INT((long long)t.bytes, D * H * 4);
        }
    }
    CHECK_INT(nin, 1);
    CHECK_INT(nparam, 2);
    CHECK_INT(nout, 2);
    shardc_tensor_info t;
    CHECK(shardc_plan_tensor(plan, 99, &t) == SHARDC_ERR_USAGE);

    shardc_session *s = NULL;
    CHECK(shardc_session_new(plan, NULL, &s, &err) == SHARDC_OK);
    float small[3];
    CHECK(shardc_session_bind(s, "x", small, sizeof small, &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "'x' is f32[8, 16] (512 bytes), but 12 bytes were bound"));
    shardc_free(err);
    err = NULL;
    CHECK(shardc_session_bind(s, "nope", small, sizeof small, &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "no input or param called 'nope'"));
    shardc_free(err);
    err = NULL;
    /* everything from the seed: runs, and says so */
    CHECK(shardc_session_run(s, &err) == SHARDC_OK);
    CHECK_STR(shardc_session_generated(s), "x, w1, w2");
    const void *out;
    CHECK(shardc_session_output(s, "nope", &out, NULL, &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    err = NULL;
    shardc_session_free(s);

    shardc_session_config bad_backend = {.backend = "tpu"};
    CHECK(shardc_session_new(plan, &bad_backend, &s, &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "unknown backend 'tpu'"));
    shardc_free(err);
    err = NULL;
    shardc_session_config missing = {.params_file = "/nonexistent/w.safetensors"};
    CHECK(shardc_session_new(plan, &missing, &s, &err) == SHARDC_ERR_INPUT);
    CHECK(err && strstr(err, "/nonexistent/w.safetensors"));
    shardc_free(err);
    err = NULL;
    shardc_plan_free(plan);

    /* a corrupt file: one byte changed */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 100, SEEK_SET);
        int c = fgetc(f);
        fseek(f, 100, SEEK_SET);
        fputc(c ^ 0x40, f);
        fclose(f);
    }
    CHECK(shardc_plan_load(path, &plan, &err) == SHARDC_ERR_INPUT);
    CHECK(err && strstr(err, path));
    shardc_free(err);
    err = NULL;
    remove(path);
    CHECK(shardc_plan_load(path, &plan, &err) == SHARDC_ERR_INPUT);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

int main(void)
{
    test_meshes();
    test_threads();
    test_save_load_and_errors();
    return CHECK_DONE();
}
