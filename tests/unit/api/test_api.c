/* test_api.c: the public API (include/shardc.h): options, compiling from a
 * string and a file, errors with their status and message (a program that
 * computes nothing among them), emitting IR, the pass pipeline's options
 * (a printer called after each pass asked, a compilation stopped early),
 * and two compilations in two threads at once giving the same results as
 * one. */
#include "check.h"
#include "shardc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const char model[] =
    "mesh dp, tp\n"
    "let B = 8, D = 16\n"
    "input x : f32[B, D] shard(dp, _)\n"
    "param w : f32[D, D] shard(_, tp) = normal(0.02)\n"
    "y = gelu(x @ w)\n"
    "output y\n";

static char *compile_ir(const char *mesh, const char *src, shardc_status *st, char **err)
{
    shardc_options *opt = shardc_options_new();
    if (mesh)
        CHECK(shardc_options_set_mesh(opt, mesh, NULL) == SHARDC_OK);
    shardc_program *p = NULL;
    *st = shardc_compile_string(opt, "m.sh", src, strlen(src), &p, err);
    char *text = NULL;
    if (*st == SHARDC_OK)
        CHECK(shardc_program_emit(p, "ir", &text, NULL, NULL) == SHARDC_OK);
    shardc_program_free(p);
    shardc_options_free(opt);
    return text;
}

static void test_compile(void)
{
    shardc_status st;
    char *err = NULL;
    char *ir = compile_ir("2x4", model, &st, &err);
    CHECK(st == SHARDC_OK && err == NULL);
    CHECK(ir && strstr(ir, "mesh dp = 2, tp = 4\n"));
    CHECK(ir && strstr(ir, "%y = gelu %0 : f32[8, 16]\n"));
    shardc_free(ir);

    ir = compile_ir("2x3", model, &st, &err);
    CHECK(st == SHARDC_ERR_INPUT && ir == NULL);
    CHECK_STR(err, "m.sh:4:30: error: dimension 1 of 'w' has size 16, which axis tp (size 3) "
                   "does not divide\n"
                   "param w : f32[D, D] shard(_, tp) = normal(0.02)\n"
                   "                             ^\n");
    shardc_free(err);

    /* a program that computes nothing: empty, or without output or train */
    err = NULL;
    ir = compile_ir(NULL, "", &st, &err);
    CHECK(st == SHARDC_ERR_INPUT && ir == NULL);
    CHECK(err && strstr(err, "m.sh: error: the program is empty"));
    shardc_free(err);
    err = NULL;
    ir = compile_ir(NULL, "input x : f32[4]\ny = relu(x)\n", &st, &err);
    CHECK(st == SHARDC_ERR_INPUT && ir == NULL);
    CHECK_STR(err, "m.sh:2:1: error: the program ends here without an 'output' or a 'train', so "
                   "it computes nothing\n"
                   "y = relu(x)\n"
                   "^\n");
    shardc_free(err);
}

static void test_options(void)
{
    shardc_options *opt = shardc_options_new();
    char *err = NULL;
    CHECK(shardc_options_set_mesh(opt, "8xq", &err) == SHARDC_ERR_USAGE);
    CHECK_STR(err, "--mesh '8xq': expected sizes like 8x4");
    shardc_free(err);
    CHECK(shardc_options_define(opt, "1B", 3, &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    CHECK(shardc_options_define(opt, "D", 32, NULL) == SHARDC_OK);
    CHECK(shardc_options_define(opt, "D", 64, NULL) == SHARDC_OK); /* the last one wins */
    shardc_program *p = NULL;
    CHECK(shardc_compile_string(opt, "m.sh", model, strlen(model), &p, NULL) == SHARDC_OK);
    char *ir = NULL;
    CHECK(p && shardc_program_emit(p, "ir", &ir, NULL, NULL) == SHARDC_OK);
    CHECK(ir && strstr(ir, "f32[64, 64]"));
    shardc_free(ir);
    CHECK(p && shardc_program_emit(p, "plan-text", &ir, NULL, &err) == SHARDC_ERR_USAGE);
    CHECK(ir == NULL);
    shardc_free(err);
    shardc_program_free(p);
    /* the strategy's setters check their values; the model, what fits it */
    CHECK(shardc_options_set_zero(opt, 4, NULL, &err) == SHARDC_ERR_USAGE);
    CHECK_STR(err, "--zero 4: the ZeRO stages are 0 (none), 1, 2 and 3");
    shardc_free(err);
    CHECK(shardc_options_set_schedule(opt, "interleaved(0)", &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    CHECK(shardc_options_set_schedule(opt, "interleaved(2)", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_microbatches(opt, 0, &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    CHECK(shardc_options_set_mem_limit(opt, "80GiB", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_mem_limit(opt, "1.5GB", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_mem_limit(opt, "hw", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_mem_limit(opt, "4096", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_mem_limit(opt, "0.1", &err) == SHARDC_ERR_USAGE); /* < 1 byte */
    shardc_free(err);
    CHECK(shardc_options_set_mem_limit(opt, "80 GiB", &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    CHECK(shardc_compile_string(opt, "m.sh", model, strlen(model), &p, &err) ==
          SHARDC_ERR_INPUT);
    CHECK(err && strstr(err, "--schedule: the model has no pipelined 'repeat ... over AXIS'"));
    shardc_free(err);
    shardc_options_free(opt);
}

/* NULL options are shardc_options_new()'s defaults everywhere the program
 * reads them after compiling: the timeline's hardware (a NULL one crashed
 * the "trace" output), the report, and the gradient buckets (25 MiB: one
 * all_reduce for both gradients here, not one each). */
static void test_null_options(void)
{
    static const char train[] = "mesh dp = 2\n"
                                "input x : f32[8, 16] shard(dp, _)\n"
                                "input y : f32[8, 16] shard(dp, _)\n"
                                "param w1 : f32[16, 16] = normal(0.02)\n"
                                "param w2 : f32[16, 16] = normal(0.02)\n"
                                "loss = mse((x @ w1) @ w2, y)\n"
                                "output loss\n"
                                "train loss with sgd(lr = 0.01)\n";
    shardc_options *opt = shardc_options_new();
    shardc_program *p = NULL, *q = NULL;
    CHECK(shardc_compile_string(NULL, "t.sh", train, strlen(train), &p, NULL) == SHARDC_OK);
    CHECK(shardc_compile_string(opt, "t.sh", train, strlen(train), &q, NULL) == SHARDC_OK);
    static const char *const what[] = {"trace", "report", "report-json", "sharded-ir", "schedule"};
    for (int i = 0; p && q && i < 5; i++) {
        char *a = NULL, *b = NULL;
        CHECK(shardc_program_emit(p, what[i], &a, NULL, NULL) == SHARDC_OK);
        CHECK(shardc_program_emit(q, what[i], &b, NULL, NULL) == SHARDC_OK);
        if (!a || !b || strcmp(a, b) != 0)
            fprintf(stderr, "  output '%s' differs with NULL options\n", what[i]);
        CHECK(a && b && strcmp(a, b) == 0);
        shardc_free(a);
        shardc_free(b);
    }
    shardc_program_free(p);
    shardc_program_free(q);
    shardc_options_free(opt);
}

static void test_file(void)
{
    shardc_program *p = NULL;
    char *err = NULL;
    CHECK(shardc_compile_file(NULL, "/nonexistent/m.sh", &p, &err) == SHARDC_ERR_IO);
    CHECK(err && strstr(err, "/nonexistent/m.sh: cannot open"));
    shardc_free(err);
    err = NULL;
    CHECK(shardc_compile_file(NULL, "/dev/null", &p, &err) == SHARDC_ERR_IO);
    CHECK_STR(err, "/dev/null: cannot read a model from a character device, only from a "
                   "regular file");
    shardc_free(err);
}

/* shardc_check_writable: SHARDC_ERR_IO naming the path and why (the cases
 * are support's test_path_writable's), SHARDC_ERR_USAGE without a path. */
static void test_check_writable(void)
{
    char *err = NULL;
    CHECK(shardc_check_writable("/nonexistent/p.st", 0, &err) == SHARDC_ERR_IO);
    CHECK_STR(err, "/nonexistent/p.st cannot be written: the folder /nonexistent does not exist");
    shardc_free(err);
    err = NULL;
    CHECK(shardc_check_writable("/dev/null/ckpt", 1, &err) == SHARDC_ERR_IO);
    CHECK_STR(err, "/dev/null/ckpt cannot be written: /dev/null is not a folder");
    shardc_free(err);
    err = NULL;
    CHECK(shardc_check_writable("/tmp", 0, &err) == SHARDC_ERR_IO);
    CHECK_STR(err, "/tmp cannot be written: /tmp is a folder");
    shardc_free(err);
    err = (char *)"left";
    CHECK(shardc_check_writable("/dev/null", 0, &err) == SHARDC_OK);
    CHECK(err == NULL);
    CHECK(shardc_check_writable("/tmp/a/new/folder", 1, NULL) == SHARDC_OK);
    CHECK(shardc_check_writable(NULL, 0, &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
}

/* Two threads compile different meshes many times; each must always get the
 * text a single-threaded compilation gives. */
typedef struct job {
    const char *mesh;
    const char *want;
    int mismatches;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    for (int i = 0; i < 50; i++) {
        shardc_status st;
        char *ir = compile_ir(j->mesh, model, &st, NULL);
        if (!ir || strcmp(ir, j->want) != 0)
            j->mismatches++;
        shardc_free(ir);
    }
    return NULL;
}

static void test_threads(void)
{
    shardc_status st;
    char *a = compile_ir("2x2", model, &st, NULL), *b = compile_ir("4x1", model, &st, NULL);
    CHECK(a && b && strcmp(a, b) != 0);
    job ja = {"2x2", a, 0}, jb = {"4x1", b, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, worker, &ja);
    pthread_create(&tb, NULL, worker, &jb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_INT(ja.mismatches, 0);
    CHECK_INT(jb.mismatches, 0);
    shardc_free(a);
    shardc_free(b);
}

/* The pass printer's record: each pass's name, and its text's first line. */
typedef struct printed {
    char names[256];
    char first[64];
    int calls;
} printed;

static void on_pass(const char *pass, const char *text, size_t len, void *user)
{
    printed *p = user;
    CHECK(strlen(text) == len);
    if (p->calls++ == 0)
        snprintf(p->first, sizeof p->first, "%.*s", (int)strcspn(text, "\n"), text);
    size_t n = strlen(p->names);
    snprintf(p->names + n, sizeof p->names - n, "%s%s", n ? "," : "", pass);
}

static void test_passes(void)
{
    shardc_options *opt = shardc_options_new();
    CHECK(shardc_options_set_mesh(opt, "2x2", NULL) == SHARDC_OK);
    CHECK(shardc_options_set_archs(opt, "none", NULL) == SHARDC_OK);
    printed pr = {{0}, {0}, 0};
    char *err = NULL;
    CHECK(shardc_options_print_after(opt, "partition,propagate,memplan", on_pass, &pr, &err) ==
          SHARDC_OK);
    shardc_program *p = NULL;
    CHECK(shardc_compile_string(opt, "m.sh", model, strlen(model), &p, &err) == SHARDC_OK);
    /* in the list's order, whatever the order asked; fuse is not run
     * without kernels */
    CHECK_STR(pr.names, "propagate,partition,memplan");
    CHECK_STR(pr.first, "mesh dp = 2, tp = 2");
    char *text = NULL;
    CHECK(shardc_program_emit(p, "after-pass", &text, NULL, NULL) == SHARDC_OK);
    CHECK(text && !strncmp(text, "# memory plan: arena ", 21));
    shardc_free(text);
    /* each pass that ran has its wall time; fuse did not run, nor does a
     * name that is no pass */
    const char *order[] = {"autodiff", "simplify", "input-init", "propagate", "partition",
                           "pipeline-split", "bucket", "matmul-parts", "verify", "fuse", "memplan"};
    int npass = 0;
    while (shardc_pass_name(npass))
        npass++;
    CHECK(npass == 11 && shardc_pass_name(-1) == NULL);
    for (int i = 0; i < npass && i < 11; i++)
        CHECK_STR(shardc_pass_name(i), order[i]);
    CHECK(shardc_program_seconds(p, "frontend") >= 0);
    CHECK(shardc_program_seconds(p, "partition") >= 0);
    CHECK(shardc_program_seconds(p, "memplan") >= 0);
    CHECK(shardc_program_seconds(p, "fuse") == -1);
    CHECK(shardc_program_seconds(p, "matmul-parts") == -1);
    CHECK(shardc_program_seconds(p, "partitioner") == -1);
    CHECK(shardc_program_seconds(p, NULL) == -1 && shardc_program_seconds(NULL, "memplan") == -1);
    /* the plan's steps: none before a plan is made, each once it is */
    static const char *const steps[] = {"plan/report", "plan/kernels", "plan/lowering",
                                        "plan/validation", "plan/loop-form", "plan/bytes"};
    int nstep = 0;
    while (shardc_plan_step_name(nstep))
        nstep++;
    CHECK(nstep == 6 && shardc_plan_step_name(-1) == NULL);
    for (int i = 0; i < nstep && i < 6; i++) {
        CHECK_STR(shardc_plan_step_name(i), steps[i]);
        CHECK(shardc_program_seconds(p, steps[i]) == -1);
    }
    CHECK(shardc_program_seconds(p, "plan/") == -1 && shardc_program_seconds(p, "plan") == -1);
    shardc_plan *made = NULL;
    CHECK(shardc_program_plan(p, &made, NULL) == SHARDC_OK);
    shardc_plan_free(made);
    for (int i = 0; i < 6; i++)
        CHECK(shardc_program_seconds(p, steps[i]) >= 0);
    shardc_program_free(p);

    /* stopped after propagate: only "after-pass", which is train-ir's text */
    CHECK(shardc_options_print_after(opt, "all", NULL, NULL, NULL) == SHARDC_OK);
    CHECK(shardc_options_stop_after(opt, "propagate", NULL) == SHARDC_OK);
    CHECK(shardc_compile_string(opt, "m.sh", model, strlen(model), &p, NULL) == SHARDC_OK);
    CHECK(shardc_program_seconds(p, "propagate") >= 0);
    CHECK(shardc_program_seconds(p, "partition") == -1); /* stopped before it */
    CHECK(shardc_program_emit(p, "after-pass", &text, NULL, NULL) == SHARDC_OK);
    CHECK(text && strstr(text, "%y = gelu %0 : f32[8, 16] auto(dp, tp)\n"));
    shardc_free(text);
    CHECK(shardc_program_emit(p, "sharded-ir", &text, NULL, &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "it ended after propagate"));
    shardc_free(err);
    err = NULL;
    shardc_plan *pl = NULL;
    CHECK(shardc_program_plan(p, &pl, &err) == SHARDC_ERR_USAGE && pl == NULL);
    shardc_free(err);
    err = NULL;
    shardc_program_free(p);

    /* names that are no pass */
    CHECK(shardc_options_stop_after(opt, "partitioner", &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "the passes: autodiff, simplify, input-init"));
    shardc_free(err);
    err = NULL;
    CHECK(shardc_options_only_passes(opt, "propagate,,partition", &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    err = NULL;
    CHECK(shardc_options_only_passes(opt, "all", &err) == SHARDC_ERR_USAGE);
    shardc_free(err);
    shardc_options_free(opt);
}

int main(void)
{
    CHECK(strcmp(shardc_version(), "0.1.0") == 0);
    test_compile();
    test_options();
    test_null_options();
    test_file();
    test_check_writable();
    test_passes();
    test_threads();
    return CHECK_DONE();
}
