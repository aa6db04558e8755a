/* test_session.c: the C API's plans and sessions (include/shardc.h):
 * compile, plan, save and load, bind, run, read outputs, against a
 * reference computed here; and two compilations plus two sessions in two
 * threads at once. Tolerance: f32 against a double reference, rtol 1e-5
 * plus atol 1e-6 (sums of at most 64 products).
 *
 * Then training steps (runtime/exec/session.h) on a plan built by hand: params
 * and states updated after each run, the loss, saving them, and loading
 * them back to go on; checked against the same steps in double, tolerance
 * 1e-6 (a few f32 operations on values of order 1). Then sharded
 * checkpoints saved on one mesh and resumed on others, and inputs with a
 * batch per step, against the same reference. Last, params files that do
 * not fit the plan (a typo, a missing param, none at all). */
#include "check.h"
#include "api_check.h"
#include "ckpt_util.h"
#include "shardc.h"
#include "runtime/plan/plan.h"
#include "runtime/exec/session.h"
#include "runtime/io/tensors.h"

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
    /* with the place of x's declaration in the model */
    CHECK_STR(err, "m.sh:3:8: 'x' is f32[8, 16] (512 bytes), but 12 bytes were bound");
    shardc_free(err);
    err = NULL;
    CHECK(shardc_session_bind(s, "nope", small, sizeof small, &err) == SHARDC_ERR_USAGE);
    CHECK(err && strstr(err, "no input, param or state called 'nope'"));
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
    CHECK(shardc_session_new(plan, &missing, &s, &err) == SHARDC_ERR_IO); /* cannot open */
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
    CHECK(shardc_plan_load(path, &plan, &err) == SHARDC_ERR_IO);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

/* ---- training steps on a plan built by hand ---- */

/* A training step over mesh dp = R, with w, x and the momentum buffer split
 * over dp: loss = mean((w - x)^2); g = dloss/dw = (w - x) / 2; SGD with
 * momentum written with sub, mul and add: buf = 0.9 buf + g,
 * w = w - 0.1 buf; and a step count, a scalar state: step = step + 1. */
enum { TN = 4, TBUF = 20, TINSTR = 24, TIO = 6 };

typedef struct train_plan {
    rt_plan p;
    rt_io io[TIO];
    rt_program prog;
    int64_t bufs[TBUF];
    int64_t offs[TBUF];
    rt_instr instr[TINSTR];
} train_plan;

static rt_type ttype(int64_t n)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = RT_F32;
    t.rank = n ? 1 : 0;
    t.dim[0] = n;
    return t;
}

/* in_a, in_b: operand buffers (-1: none); out_n: the result's length (0: a
 * scalar); operand types follow from the buffers' lengths in len[]. */
static rt_instr *tinstr(train_plan *t, int op, int out, const int64_t *len, int in_a, int in_b)
{
    rt_instr *in = &t->instr[t->prog.ninstr++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->out = out;
    in->out_t = ttype(len[out]);
    in->io = -1;
    int ins[2] = {in_a, in_b};
    for (int i = 0; i < 2 && ins[i] >= 0; i++) {
        in->in[i] = ins[i];
        in->in_t[i] = ttype(len[ins[i]]);
        in->nin = (uint8_t)(i + 1);
    }
    return in;
}

static rt_io *tio(train_plan *t, int kind, const char *name, bool vector, int buffer, int update)
{
    rt_io *io = &t->io[t->p.nio++];
    memset(io, 0, sizeof *io);
    io->kind = (uint8_t)kind;
    io->name = (char *)name;
    io->type = ttype(vector ? TN : 0);
    io->sh.naxes[0] = vector ? 1 : 0; /* over dp */
    io->buffer = buffer;
    io->update = update;
    io->init = kind == RT_IO_STATE ? RT_INIT_ZEROS : RT_INIT_NONE;
    return io;
}

static void make_train_plan(train_plan *t, int64_t ranks)
{
    static char *const axis = "dp";
    int64_t n = TN / ranks;
    /* per buffer: its length (0: a scalar) */
    const int64_t len[TBUF] = {n, n, n, n, 0, 0, 0, 0, 0, n, n, 0, n, n, 0, n, n, 0, 0, 0};
    memset(t, 0, sizeof *t);
    t->p.naxes = 1;
    t->p.axis_name[0] = axis;
    t->p.axis_size[0] = ranks;
    t->p.stage_axis = -1;
    t->p.nstages = 1;
    t->p.init_module = -1;
    t->p.stage = &t->prog;
    t->p.io = t->io;
    t->p.report = (char *)"";
    t->prog.buf_bytes = t->bufs;
    t->prog.buf_offset = t->offs;
    t->prog.instr = t->instr;
    t->prog.nbuf = TBUF;
    for (int b = 0; b < TBUF; b++) { /* one after another in the arena */
        t->bufs[b] = 4 * (len[b] ? len[b] : 1);
        t->offs[b] = t->prog.arena_bytes;
        t->prog.arena_bytes += (t->bufs[b] + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
    }
    tio(t, RT_IO_INPUT, "x", true, -1, -1);
    tio(t, RT_IO_PARAM, "w", true, 1, 16);
    tio(t, RT_IO_STATE, "w.buf", true, 10, 13);
    tio(t, RT_IO_STATE, "step", false, 17, 19);
    tio(t, RT_IO_OUTPUT, "loss", false, 7, -1);
    tio(t, RT_IO_OUTPUT, "w.new", true, 16, -1);
    t->p.loss = 4;
    tinstr(t, RT_OP_INPUT, 0, len, -1, -1)->io = 0;
    tinstr(t, RT_OP_PARAM, 1, len, -1, -1)->io = 1;
    tinstr(t, RT_OP_SUB, 2, len, 1, 0);                       /* d = w - x */
    tinstr(t, RT_OP_MUL, 3, len, 2, 2);
    tinstr(t, RT_OP_SUM, 4, len, 3, -1);                      /* this rank's sum of d^2 */
    rt_instr *in = tinstr(t, RT_OP_ALL_REDUCE, 5, len, 4, -1);
    in->naxes = 1;
    tinstr(t, RT_OP_CONST, 6, len, -1, -1)->value = 1.0 / TN;
    tinstr(t, RT_OP_MUL, 7, len, 5, 6);                       /* loss */
    tinstr(t, RT_OP_CONST, 8, len, -1, -1)->value = 2.0 / TN;
    tinstr(t, RT_OP_MUL, 9, len, 2, 8);                       /* g */
    tinstr(t, RT_OP_STATE, 10, len, -1, -1)->io = 2;
    tinstr(t, RT_OP_CONST, 11, len, -1, -1)->value = 0.9;
    tinstr(t, RT_OP_MUL, 12, len, 10, 11);
    tinstr(t, RT_OP_ADD, 13, len, 12, 9);                     /* buf' */
    tinstr(t, RT_OP_CONST, 14, len, -1, -1)->value = 0.1;
    tinstr(t, RT_OP_MUL, 15, len, 13, 14);
    tinstr(t, RT_OP_SUB, 16, len, 1, 15);                     /* w' */
    tinstr(t, RT_OP_STATE, 17, len, -1, -1)->io = 3;
    tinstr(t, RT_OP_CONST, 18, len, -1, -1)->value = 1;
    tinstr(t, RT_OP_ADD, 19, len, 17, 18);                    /* step' */
}

static const float train_x[TN] = {1, 2, -1, 0.5f}, train_w0[TN] = {0.5f, -1, 2, 0.25f};

/* The reference, in double: one step from (w, buf, step); returns the
 * loss the step computes (before its update). */
typedef struct train_ref {
    double w[TN], buf[TN], step;
} train_ref;

static double ref_step_x(train_ref *r, const float *x)
{
    double loss = 0;
    for (int i = 0; i < TN; i++) {
        double d = r->w[i] - x[i];
        loss += d * d / TN;
        r->buf[i] = 0.9 * r->buf[i] + 2.0 * d / TN;
        r->w[i] -= 0.1 * r->buf[i];
    }
    r->step += 1;
    return loss;
}

static double ref_step(train_ref *r)
{
    return ref_step_x(r, train_x);
}

static void ref_start(train_ref *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < TN; i++)
        r->w[i] = train_w0[i];
}

static bool near(double got, double want)
{
    return fabs(got - want) <= 1e-6 + 1e-6 * fabs(want);
}

/* Counts the elements of got (n floats) that differ from want; prints the
 * worst. */
static int mismatches(const char *what, const float *got, const double *want, int n)
{
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (!near(got[i], want[i]))
            bad++;
        worst = fmax(worst, fabs(got[i] - want[i]));
    }
    if (bad)
        fprintf(stderr, "%s: %d of %d elements differ, max abs error %g\n", what, bad, n, worst);
    return bad;
}

/* Reads tensor name (f32, n elements, rank 1 or 0) from a safetensors file. */
static int read_tensor(const rt_st_file *f, const char *name, int n, float *out)
{
    rt_type t = ttype(n > 1 ? n : 0);
    int64_t start[1] = {0}, count[1] = {n};
    su_status err;
    if (rt_st_read_block(f, name, &t, start, count, out, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The saved file holds w, w.buf and step as r has them. */
static void check_saved(const char *path, const train_ref *r)
{
    rt_st_file *f = NULL;
    su_status err;
    float w[TN], buf[TN], step;
    CHECK(rt_st_open(path, &f, &err) == 0);
    if (!f) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    CHECK_INT(f->nentries, 3);
    CHECK(read_tensor(f, "w", TN, w) == 0 && read_tensor(f, "w.buf", TN, buf) == 0 &&
          read_tensor(f, "step", 1, &step) == 0);
    CHECK_INT(mismatches("saved w", w, r->w, TN), 0);
    CHECK_INT(mismatches("saved w.buf", buf, r->buf, TN), 0);
    CHECK(step == r->step);
    rt_st_close(f);
}

/* One step of session s, on input x, checked against r (advanced by it). */
static void check_step_x(rt_session *s, train_ref *r, const float *x, const char *what)
{
    su_status err;
    double loss = NAN;
    double want = ref_step_x(r, x);
    CHECK(rt_session_run(s, &err) == 0 || (fprintf(stderr, "%s\n", err.msg), 0));
    CHECK(rt_session_loss(s, &loss, &err) == 0);
    if (!near(loss, want))
        fprintf(stderr, "%s: loss %.9g, want %.9g\n", what, loss, want);
    CHECK(near(loss, want));
    rt_type t;
    const float *wnew = rt_session_output(s, "w.new", &t);
    CHECK(wnew && mismatches(what, wnew, r->w, TN) == 0);
}

static void check_step(rt_session *s, train_ref *r, const char *what)
{
    check_step_x(s, r, train_x, what);
}

static void test_train(int64_t ranks)
{
    train_plan t;
    su_status err;
    char path[96], what[64];
    make_train_plan(&t, ranks);
    CHECK(rt_plan_validate(&t.p, &err) || (fprintf(stderr, "%s\n", err.msg), 0));
    snprintf(path, sizeof path, "/tmp/test_session_%ld_%lld.safetensors", (long)getpid(),
             (long long)ranks);
    rt_session_opts o = {.comm = RT_COMM_LOCAL};
    rt_session *s = rt_session_new(&t.p, &o, &err);
    CHECK(s != NULL);
    if (!s)
        return;
    double loss;
    CHECK(rt_session_loss(s, &loss, &err) != 0);
    CHECK(strstr(err.msg, "no loss yet: no step has run"));
    CHECK(rt_session_save_params(s, path, &err) != 0);
    CHECK(strstr(err.msg, "no step has run"));
    CHECK(rt_session_bind(s, "x", train_x, sizeof train_x, &err) == 0);
    CHECK(rt_session_bind(s, "w", train_w0, sizeof train_w0, &err) == 0);
    train_ref r;
    ref_start(&r);
    for (int step = 1; step <= 3; step++) {
        snprintf(what, sizeof what, "%lld ranks, step %d", (long long)ranks, step);
        check_step(s, &r, what);
    }
    CHECK_INT(rt_session_steps(s), 3);
    CHECK_STR(rt_session_generated(s), "w.buf, step");
    CHECK(rt_session_save_params(s, path, &err) == 0);
    check_saved(path, &r);

    /* binding w again starts over: w, and the states, are loaded again */
    train_ref again;
    ref_start(&again);
    CHECK(rt_session_bind(s, "w", train_w0, sizeof train_w0, &err) == 0);
    check_step(s, &again, "after binding w again");
    rt_session_free(s);

    /* a session on the saved file goes on from step 3 */
    o.params_path = path;
    s = rt_session_new(&t.p, &o, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(rt_session_bind(s, "x", train_x, sizeof train_x, &err) == 0);
        check_step(s, &r, "from the saved file");
        CHECK_STR(rt_session_generated(s), "");
        rt_session_free(s);
    }
    remove(path);
}

/* The same plan without its loss and updates: an inference step. */
static void test_no_loss(void)
{
    train_plan t;
    su_status err;
    make_train_plan(&t, 2);
    t.p.loss = -1;
    t.p.init_module = -1;
    for (int i = 0; i < t.p.nio; i++)
        t.io[i].update = -1;
    CHECK(rt_plan_validate(&t.p, &err));
    rt_session_opts o = {.comm = RT_COMM_LOCAL};
    rt_session *s = rt_session_new(&t.p, &o, &err);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(rt_session_bind(s, "w", train_w0, sizeof train_w0, &err) == 0);
    CHECK(rt_session_bind(s, "x", train_x, sizeof train_x, &err) == 0);
    double loss;
    train_ref r;
    for (int step = 0; step < 2; step++) { /* nothing moves */
        ref_start(&r);
        double want = ref_step(&r);
        CHECK(rt_session_run(s, &err) == 0);
        const float *l = rt_session_output(s, "loss", NULL);
        CHECK(l && near(*l, want));
    }
    CHECK(rt_session_loss(s, &loss, &err) != 0);
    CHECK_STR(err.msg, "the plan has no loss (it was not compiled for training)");
    rt_session_free(s);
}

/* The C API's side: a plan file with a loss, through shardc_session_*. */
static void test_train_api(void)
{
    train_plan t;
    su_status err;
    char plan_path[96], params_path[96];
    make_train_plan(&t, 2);
    uint8_t *bytes = NULL;
    size_t len = 0;
    CHECK(rt_plan_write(&t.p, &bytes, &len, &err));
    snprintf(plan_path, sizeof plan_path, "/tmp/test_session_%ld_train.plan", (long)getpid());
    snprintf(params_path, sizeof params_path, "/tmp/test_session_%ld_api.safetensors",
             (long)getpid());
    FILE *f = fopen(plan_path, "wb");
    CHECK(f && fwrite(bytes, 1, len, f) == len);
    if (f)
        fclose(f);
    free(bytes);
    char *e = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    CHECK(shardc_plan_load(plan_path, &plan, &e) == SHARDC_OK);
    if (!plan || shardc_session_new(plan, NULL, &s, &e) != SHARDC_OK) {
        fprintf(stderr, "%s\n", e ? e : "");
        CHECK(0);
        shardc_free(e);
        shardc_plan_free(plan);
        return;
    }
    shardc_tensor_info info;
    CHECK(shardc_plan_tensor(plan, 3, &info) == SHARDC_OK);
    CHECK_STR(info.kind, "state");
    double loss = 0;
    CHECK(shardc_session_loss(s, &loss, &e) == SHARDC_ERR_USAGE);
    CHECK(e && strstr(e, "no step has run"));
    shardc_free(e);
    CHECK(shardc_session_save_params(s, params_path, &e) == SHARDC_ERR_USAGE);
    shardc_free(e);
    CHECK(shardc_session_bind(s, "x", train_x, sizeof train_x, &e) == SHARDC_OK);
    CHECK(shardc_session_bind(s, "w", train_w0, sizeof train_w0, &e) == SHARDC_OK);
    train_ref r;
    ref_start(&r);
    for (int step = 0; step < 2; step++) {
        double want = ref_step(&r);
        CHECK(shardc_session_run(s, &e) == SHARDC_OK);
        CHECK(shardc_session_loss(s, &loss, &e) == SHARDC_OK && near(loss, want));
    }
    CHECK(shardc_session_save_params(s, "/nonexistent/dir/p.safetensors", &e) == SHARDC_ERR_IO);
    CHECK(e && strstr(e, "/nonexistent/dir/p.safetensors"));
    shardc_free(e);
    CHECK(shardc_session_save_params(s, params_path, &e) == SHARDC_OK);
    check_saved(params_path, &r);
    shardc_session_free(s);
    shardc_plan_free(plan);
    remove(params_path);
    remove(plan_path);
}

/* ---- checkpoints and per-step batches ---- */

/* The training plan above for `ranks` ranks, through a plan file (so the
 * C API sees it as a host application would). */
static shardc_plan *train_plan_file(int64_t ranks, const char *path)
{
    train_plan t;
    su_status err;
    uint8_t *bytes = NULL;
    size_t len = 0;
    make_train_plan(&t, ranks);
    CHECK(rt_plan_write(&t.p, &bytes, &len, &err));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(bytes, 1, len, f) == len);
    if (f)
        fclose(f);
    free(bytes);
    shardc_plan *plan = NULL;
    char *e = NULL;
    if (shardc_plan_load(path, &plan, &e) != SHARDC_OK) {
        fprintf(stderr, "%s\n", e ? e : "");
        CHECK(0);
    }
    shardc_free(e);
    remove(path);
    return plan;
}

/* One step through the C API on input x (bound), checked against r. */
static void api_step(shardc_session *s, train_ref *r, const float *x, const char *what)
{
    char *e = NULL;
    double loss = NAN, want = ref_step_x(r, x);
    const void *wnew = NULL;
    CHECK(shardc_session_bind(s, "x", x, TN * sizeof *x, &e) == SHARDC_OK);
    if (shardc_session_run(s, &e) != SHARDC_OK) {
        fprintf(stderr, "%s: %s\n", what, e ? e : "");
        CHECK(0);
        shardc_free(e);
        return;
    }
    CHECK(shardc_session_loss(s, &loss, &e) == SHARDC_OK);
    if (!near(loss, want))
        fprintf(stderr, "%s: loss %.9g, want %.9g\n", what, loss, want);
    CHECK(near(loss, want));
    CHECK(shardc_session_output(s, "w.new", &wnew, NULL, &e) == SHARDC_OK);
    CHECK(wnew && mismatches(what, wnew, r->w, TN) == 0);
}

/* 3 steps on 2 ranks, a checkpoint, then 2 more steps resumed on 4 ranks
 * (each reads half of one rank's shard of w and w.buf), on 1 (both shards)
 * and on 2: the same values as 5 steps in a row (the reference in double,
 * 1e-6: the resumed steps start from exactly the saved f32 values). */
static void test_checkpoint_api(void)
{
    char dir[96], plan_path[96], bad[160];
    char *e = NULL;
    snprintf(dir, sizeof dir, "/tmp/test_session_%ld_ckpt", (long)getpid());
    snprintf(plan_path, sizeof plan_path, "/tmp/test_session_%ld_ckpt.plan", (long)getpid());
    shardc_plan *plan = train_plan_file(2, plan_path);
    shardc_session *s = NULL;
    if (!plan || shardc_session_new(plan, NULL, &s, &e) != SHARDC_OK) {
        CHECK(0);
        shardc_free(e);
        shardc_plan_free(plan);
        return;
    }
    CHECK(shardc_session_save_checkpoint(s, dir, &e) == SHARDC_ERR_USAGE);
    CHECK(e && strstr(e, "not saved: no step has run"));
    shardc_free(e);
    CHECK(shardc_session_bind(s, "w", train_w0, sizeof train_w0, &e) == SHARDC_OK);
    train_ref r;
    ref_start(&r);
    for (int step = 1; step <= 3; step++)
        api_step(s, &r, train_x, "before the checkpoint");
    CHECK_INT(shardc_session_step(s), 3);
    CHECK(shardc_session_save_checkpoint(s, dir, &e) == SHARDC_OK);
    /* a folder that cannot be made: its parent is a file */
    snprintf(bad, sizeof bad, "%s/latest/sub", dir);
    CHECK(shardc_session_save_checkpoint(s, bad, &e) == SHARDC_ERR_IO);
    CHECK(e && strstr(e, "cannot create the checkpoint folder"));
    shardc_free(e);
    shardc_session_free(s);
    shardc_plan_free(plan);

    static const int64_t meshes[] = {4, 1, 2};
    for (int m = 0; m < 3; m++) {
        char what[64];
        snprintf(what, sizeof what, "resumed on %lld ranks", (long long)meshes[m]);
        plan = train_plan_file(meshes[m], plan_path);
        s = NULL;
        if (!plan || shardc_session_new(plan, NULL, &s, &e) != SHARDC_OK) {
            CHECK(0);
            shardc_free(e);
            shardc_plan_free(plan);
            continue;
        }
        if (shardc_session_resume(s, dir, &e) != SHARDC_OK) {
            fprintf(stderr, "%s: %s\n", what, e ? e : "");
            CHECK(0);
            shardc_free(e);
        }
        CHECK_INT(shardc_session_step(s), 3);
        train_ref again = r;
        api_step(s, &again, train_x, what);
        CHECK_STR(shardc_session_generated(s), ""); /* x bound, the rest resumed */
        api_step(s, &again, train_x, what);
        CHECK_INT(shardc_session_step(s), 5);
        CHECK(again.step == 5);
        /* resuming again rewinds: the next step is step 4 once more */
        CHECK(shardc_session_resume(s, dir, &e) == SHARDC_OK);
        CHECK(shardc_session_save_checkpoint(s, dir, &e) == SHARDC_ERR_USAGE);
        CHECK(e && strstr(e, "are loaded at the next"));
        shardc_free(e);
        again = r;
        api_step(s, &again, train_x, "resumed twice");
        CHECK_INT(shardc_session_step(s), 4);
        shardc_session_free(s);
        shardc_plan_free(plan);
    }

    /* no checkpoint there: an error, and the session goes on as before */
    plan = train_plan_file(2, plan_path);
    s = NULL;
    if (plan && shardc_session_new(plan, NULL, &s, &e) == SHARDC_OK) {
        CHECK(shardc_session_resume(s, "/nonexistent/ck", &e) == SHARDC_ERR_IO);
        CHECK_STR(e, "/nonexistent/ck: no such checkpoint folder");
        shardc_free(e);
        CHECK_INT(shardc_session_step(s), 0);
        CHECK(shardc_session_bind(s, "w", train_w0, sizeof train_w0, &e) == SHARDC_OK);
        train_ref fresh;
        ref_start(&fresh);
        api_step(s, &fresh, train_x, "after a failed resume");
        /* a rank file with a byte flipped: refused before any step, naming
         * the file, and the session goes on as before */
        char path[4200];
        ckpt_index_path(dir, path, sizeof path);
        snprintf(strrchr(path, '/'), 32, "/rank-00001.safetensors");
        FILE *f = fopen(path, "r+b");
        int c = f && fseek(f, -1, SEEK_END) == 0 ? fgetc(f) : EOF;
        CHECK(c != EOF && fseek(f, -1, SEEK_END) == 0 && fputc(c ^ 1, f) != EOF);
        if (f)
            fclose(f);
        CHECK(shardc_session_resume(s, dir, &e) == SHARDC_ERR_INPUT);
        CHECK(e && strstr(e, "rank-00001.safetensors: CRC-32 ") &&
              strstr(e, ": the file is damaged or not this checkpoint's"));
        shardc_free(e);
        CHECK_INT(shardc_session_step(s), 1);
        shardc_session_free(s);
    }
    shardc_plan_free(plan);
    CHECK(ckpt_remove_tree(dir) == 0);
}

/* config.checkpoint_keep through the C API: 1 keeps only the newest
 * checkpoint, a negative count is refused; shardc_session_resumed_from
 * names the step folder read, with no note when the pointer names it. */
static void test_checkpoint_keep_api(void)
{
    char dir[96], plan_path[96], want[160];
    char *e = NULL;
    snprintf(dir, sizeof dir, "/tmp/test_session_%ld_keep", (long)getpid());
    snprintf(plan_path, sizeof plan_path, "/tmp/test_session_%ld_keep.plan", (long)getpid());
    shardc_plan *plan = train_plan_file(2, plan_path);
    shardc_session *s = NULL;
    shardc_session_config cfg = {.checkpoint_keep = -1};
    CHECK(plan && shardc_session_new(plan, &cfg, &s, &e) == SHARDC_ERR_USAGE);
    CHECK_STR(e, "checkpoint_keep -1: expected 1 or more (0: 2)");
    shardc_free(e);
    cfg.checkpoint_keep = 1;
    if (!plan || shardc_session_new(plan, &cfg, &s, &e) != SHARDC_OK) {
        CHECK(0);
        shardc_free(e);
        shardc_plan_free(plan);
        return;
    }
    CHECK(shardc_session_resumed_from(s, NULL) == NULL);
    CHECK(shardc_session_bind(s, "w", train_w0, sizeof train_w0, &e) == SHARDC_OK);
    train_ref r;
    ref_start(&r);
    for (int step = 1; step <= 2; step++) {
        api_step(s, &r, train_x, "keep 1");
        CHECK(shardc_session_save_checkpoint(s, dir, &e) == SHARDC_OK);
    }
    snprintf(want, sizeof want, "%s/step-00000001", dir);
    CHECK(access(want, F_OK) != 0);
    CHECK(shardc_session_resume(s, dir, &e) == SHARDC_OK);
    const char *note = NULL;
    snprintf(want, sizeof want, "%s/step-00000002", dir);
    CHECK_STR(shardc_session_resumed_from(s, &note), want);
    CHECK_STR(note, "");
    shardc_session_free(s);
    shardc_plan_free(plan);
    CHECK(ckpt_remove_tree(dir) == 0);
}

/* An inputs file whose x holds 3 batches, [3, 4]: step k reads batch k, on
 * from a resumed checkpoint's step, and a fourth step is refused. */
static void test_batches(void)
{
    static const float xs[3][TN] = {{1, 2, -1, 0.5f}, {-2, 0, 1, 3}, {0.25f, -0.5f, 4, 1}};
    char path[96], dir[96];
    su_status err;
    snprintf(path, sizeof path, "/tmp/test_session_%ld_batches.safetensors", (long)getpid());
    snprintf(dir, sizeof dir, "/tmp/test_session_%ld_bckpt", (long)getpid());
    rt_type t = ttype(TN);
    t.rank = 2;
    t.dim[0] = 3;
    t.dim[1] = TN;
    const char *name = "x";
    const void *data = xs;
    CHECK(rt_st_write(path, 1, &name, &t, &data, &err) == 0);
    train_plan tp;
    make_train_plan(&tp, 2);
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .inputs_path = path};
    rt_session *s = rt_session_new(&tp.p, &o, &err);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(rt_session_check_steps(s, 3, &err) == 0);
    CHECK(rt_session_check_steps(s, 4, &err) != 0);
    CHECK(strstr(err.msg, "batches.safetensors: tensor 'x' holds 3 batches (one a step), but steps 1 to 4 need 4"));
    CHECK(rt_session_bind(s, "w", train_w0, sizeof train_w0, &err) == 0);
    train_ref r;
    ref_start(&r);
    check_step_x(s, &r, xs[0], "batch 1");
    check_step_x(s, &r, xs[1], "batch 2");
    CHECK(rt_session_save_checkpoint(s, dir, &err) == 0);
    train_ref at2 = r;
    check_step_x(s, &r, xs[2], "batch 3");
    CHECK(rt_session_run(s, &err) != 0);
    /* both ranks fail at once: either may be the one reported */
    CHECK((strncmp(err.msg, "rank 0: ", 8) == 0 || strncmp(err.msg, "rank 1: ", 8) == 0) &&
          strstr(err.msg, ": instruction 0 (input): ") &&
          strstr(err.msg, "batches.safetensors: tensor 'x' holds 3 batches (one a step), none for step 4"));
    rt_session_free(s);

    /* resumed at step 2 on 1 rank: the next step reads batch 3 */
    make_train_plan(&tp, 1);
    s = rt_session_new(&tp.p, &o, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(rt_session_resume(s, dir, &err) == 0 || (fprintf(stderr, "%s\n", err.msg), 0));
        CHECK_INT(rt_session_step(s), 2);
        CHECK(rt_session_check_steps(s, 2, &err) != 0);
        CHECK(strstr(err.msg, "but steps 3 to 4 need 4"));
        check_step_x(s, &at2, xs[2], "batch 3, resumed");
        rt_session_free(s);
    }
    remove(path);
    CHECK(ckpt_remove_tree(dir) == 0);
}

/* ---- outputs named after an input and a param ---- */

/* Inputs and outputs are separate namespaces (LANGUAGE.md §12): the input
 * x and the output x (x @ w), the param w and the output w, its value after
 * each step's update. loss = mean((x @ w)^2) over 4 x 4 elements, so
 * dloss/dw = x^T (2 h) / 16, and sgd(lr = 0.5); checked against the same
 * steps in double (1e-6). */
static const char named_model[] =
    "mesh dp, tp\n"
    "input x : f32[4, 4] shard(dp, _)\n"
    "param w : f32[4, 4] shard(_, tp) = normal(0.1)\n"
    "x = x @ w\n"
    "loss = mean(mean(x * x, axis = 1), axis = 0)\n"
    "output x, w\n"
    "train loss with sgd(lr = 0.5)\n";

/* One step of named_model in double: h = x @ w (the forward's, before the
 * update), then w updated in place. */
static void named_step(const float *x, double *w, double *h)
{
    double g[16] = {0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            h[i * 4 + j] = 0;
            for (int k = 0; k < 4; k++)
                h[i * 4 + j] += (double)x[i * 4 + k] * w[k * 4 + j];
        }
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                g[k * 4 + j] += x[i * 4 + k] * 2 * h[i * 4 + j] / 16;
    for (int i = 0; i < 16; i++)
        w[i] -= 0.5 * g[i];
}

static void test_output_names(const char *mesh)
{
    char *e = NULL;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    if (shardc_options_set_mesh(opt, mesh, &e) ||
        shardc_compile_string(opt, "named.sh", named_model, sizeof named_model - 1, &prog, &e) ||
        shardc_program_plan(prog, &plan, &e) || shardc_session_new(plan, NULL, &s, &e)) {
        fprintf(stderr, "output names, mesh %s: %s\n", mesh, e ? e : "");
        CHECK(0);
        goto out;
    }
    /* the table holds x as an input and an output, w as a param and an output */
    char kinds[64] = "";
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        CHECK(shardc_plan_tensor(plan, i, &t) == SHARDC_OK);
        if (!strcmp(t.name, "x") || !strcmp(t.name, "w"))
            snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s %s",
                     *kinds ? ", " : "", t.kind, t.name);
    }
    CHECK_STR(kinds, "input x, param w, output x, output w");
    float x[16], w0[16];
    double w[16], h[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)((i * 7) % 9 - 4) / 4.0f;
        w0[i] = (float)((i * 5) % 7 - 3) / 8.0f;
        w[i] = w0[i];
    }
    CHECK(shardc_session_bind(s, "x", x, sizeof x, &e) == SHARDC_OK);
    CHECK(shardc_session_bind(s, "w", w0, sizeof w0, &e) == SHARDC_OK);
    for (int step = 1; step <= 2; step++) {
        const void *xo = NULL, *wo = NULL;
        shardc_tensor_info ti;
        if (shardc_session_run(s, &e) != SHARDC_OK) {
            fprintf(stderr, "output names, mesh %s: %s\n", mesh, e ? e : "");
            CHECK(0);
            break;
        }
        named_step(x, w, h);
        CHECK(shardc_session_output(s, "x", &xo, &ti, &e) == SHARDC_OK);
        CHECK_STR(ti.kind, "output");
        CHECK(shardc_session_output(s, "w", &wo, NULL, &e) == SHARDC_OK);
        CHECK(xo && mismatches("output x", xo, h, 16) == 0);
        CHECK(wo && mismatches("output w after the update", wo, w, 16) == 0);
    }
out:
    shardc_free(e);
    shardc_session_free(s);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

/* ---- strict params files ---- */

/* A safetensors file at path holding n of the model's tensors of data d,
 * under the names given ("w1", "w_2", "x"; each of w1's, w2's or x's
 * shape by the name's last character). */
static void write_model_file(const char *path, const data *d, int n, const char *const *names)
{
    rt_type types[4];
    const void *ptrs[4];
    for (int i = 0; i < n; i++) {
        char last = names[i][strlen(names[i]) - 1];
        types[i] = (rt_type){.dtype = RT_F32, .rank = 2};
        types[i].dim[0] = last == '1' ? D : last == '2' ? H : B;
        types[i].dim[1] = last == '1' ? H : D;
        ptrs[i] = last == '1' ? (const void *)d->w1 : last == '2' ? (const void *)d->w2 : d->x;
    }
    su_status err;
    CHECK(rt_st_write(path, n, names, types, ptrs, &err) == 0);
}

/* A session on the params file at path with init_missing; NULL and the
 * message in *err when shardc_session_new fails. */
static shardc_session *strict_session(const shardc_plan *plan, const char *path,
                                      const char *inputs, int init_missing, char **err)
{
    shardc_session_config cfg = {.comm = "local", .params_file = path, .inputs_file = inputs,
                                 .init_missing = init_missing};
    shardc_session *s = NULL;
    shardc_free(*err);
    *err = NULL;
    return shardc_session_new(plan, &cfg, &s, err) == SHARDC_OK ? s : NULL;
}

/* A params file must fit the plan: an unknown tensor is an error at
 * shardc_session_new naming the nearest param, a missing param one at the
 * run (the session still usable: binding it makes the run go), unless
 * init_missing makes it from the seed; a file with no param at all stays
 * an error; a param in the inputs file is one too. */
static void test_strict_params(void)
{
    static data d;
    make_data(&d, 2);
    char *err = NULL, path[96], inputs[96];
    snprintf(path, sizeof path, "/tmp/test_session_%ld_strict.safetensors", (long)getpid());
    snprintf(inputs, sizeof inputs, "/tmp/test_session_%ld_strict_in.safetensors",
             (long)getpid());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    CHECK(shardc_options_set_mesh(opt, "2x2", &err) == SHARDC_OK);
    CHECK(shardc_compile_string(opt, "m.sh", model, sizeof model - 1, &prog, &err) == SHARDC_OK);
    CHECK(prog && shardc_program_plan(prog, &plan, &err) == SHARDC_OK);
    if (!plan)
        return;

    const char *typo[] = {"w1", "w_2"};
    write_model_file(path, &d, 2, typo);
    CHECK(strict_session(plan, path, NULL, 1, &err) == NULL);
    CHECK(err && strstr(err, ": the params file has 1 tensor that is no param or state of the "
                             "plan: 'w_2' (did you mean 'w2'?); and lacks 1 param of the plan: "
                             "'w2'"));

    const char *only_w1[] = {"w1"};
    write_model_file(path, &d, 1, only_w1);
    shardc_session *s = strict_session(plan, path, NULL, 0, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(shardc_session_bind(s, "x", d.x, sizeof d.x, &err) == SHARDC_OK);
        CHECK(shardc_session_check_params(s, &err) == SHARDC_ERR_INPUT);
        CHECK(err && strstr(err, ": the params file lacks 1 param of the plan: 'w2'"));
        shardc_free(err);
        err = NULL;
        CHECK(shardc_session_run(s, &err) == SHARDC_ERR_INPUT);
        CHECK(err && strstr(err, "lacks 1 param of the plan: 'w2'"));
        shardc_free(err);
        err = NULL;
        /* still usable: w2 bound, the run reads w1 from the file */
        CHECK(shardc_session_bind(s, "w2", d.w2, sizeof d.w2, &err) == SHARDC_OK);
        CHECK(shardc_session_check_params(s, &err) == SHARDC_OK);
        CHECK(shardc_session_run(s, &err) == SHARDC_OK);
        const void *y = NULL;
        CHECK(shardc_session_output(s, "y", &y, NULL, &err) == SHARDC_OK);
        CHECK_INT(y ? close_to(y, d.y, B * D) : -1, 0);
        CHECK_STR(shardc_session_generated(s), "");
        shardc_session_free(s);
    }
    /* init_missing: w2 made by its init, and said so */
    s = strict_session(plan, path, NULL, 1, &err);
    CHECK(s && shardc_session_bind(s, "x", d.x, sizeof d.x, &err) == SHARDC_OK);
    CHECK(s && shardc_session_run(s, &err) == SHARDC_OK);
    CHECK_STR(s ? shardc_session_generated(s) : "", "w2");
    shardc_session_free(s);

    /* a file without params: an error even with init_missing */
    write_model_file(path, &d, 0, NULL);
    s = strict_session(plan, path, NULL, 1, &err);
    CHECK(s && shardc_session_run(s, &err) == SHARDC_ERR_INPUT);
    CHECK(err && strstr(err, ": the params file has none of the plan's 2 params (it is empty)"));
    shardc_session_free(s);

    /* a param in the inputs file is an error; one file given as both holds both */
    const char *all[] = {"w1", "w2", "x"};
    write_model_file(inputs, &d, 3, all);
    write_model_file(path, &d, 2, all);
    CHECK(strict_session(plan, path, inputs, 0, &err) == NULL);
    CHECK(err && strstr(err, ": the inputs file has 2 tensors that are a param or state of the "
                             "plan, which the params file gives, not the inputs file: 'w1', "
                             "'w2'"));
    s = strict_session(plan, inputs, inputs, 0, &err);
    CHECK(s && shardc_session_run(s, &err) == SHARDC_OK);
    CHECK_STR(s ? shardc_session_generated(s) : "", "");
    shardc_session_free(s);
    shardc_free(err);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    remove(path);
    remove(inputs);
}

/* Tensors bound and outputs written as strided views
 * (shardc_session_bind_view, shardc_session_output_into): x bound
 * transposed in memory (column-major, strides {1, B}) and w1 with a row
 * pitch wider than its rows, on 1x1 and 2x2 (x split by rows, w1 by
 * columns); y written into every other float of a larger buffer and s
 * into a reversed view. Against the reference as test_meshes, and the
 * errors of the views. */
/* Whether st is SHARDC_ERR_USAGE with want in *err (freed here). */
static void test_views(const char *mesh)
{
    data d;
    make_data(&d, 11);
    float xt[D * B], w1p[D * (H + 3)];
    for (int b = 0; b < B; b++)
        for (int k = 0; k < D; k++)
            xt[k * B + b] = d.x[b * D + k];
    for (int i = 0; i < D; i++)
        for (int j = 0; j < H + 3; j++)
            w1p[i * (H + 3) + j] = j < H ? d.w1[i * H + j] : NAN;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    char *err = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK &&
          shardc_options_set_archs(opt, "none", &err) == SHARDC_OK &&
          shardc_compile_string(opt, "m.sh", model, sizeof model - 1, &prog, &err) == SHARDC_OK &&
          shardc_program_plan(prog, &plan, &err) == SHARDC_OK &&
          shardc_session_new(plan, NULL, &s, &err) == SHARDC_OK);
    if (!s) {
        fprintf(stderr, "%s\n", err ? err : "?");
        return;
    }
    long long xdim[2] = {B, D}, xstr[2] = {1, B};
    long long wdim[2] = {D, H}, wstr[2] = {H + 3, 1};
    shardc_tensor_view xv = {SHARDC_DEVICE_CPU, 0, xt, "f32", 2, xdim, xstr};
    shardc_tensor_view wv = {SHARDC_DEVICE_CPU, 0, w1p, "f32", 2, wdim, wstr};
    shardc_tensor_view w2v = {SHARDC_DEVICE_CPU, 0, d.w2, "f32", 2, (long long[]){H, D}, NULL};
    CHECK(shardc_session_bind_view(s, "x", &xv, &err) == SHARDC_OK);
    CHECK(shardc_session_bind_view(s, "w1", &wv, &err) == SHARDC_OK);
    CHECK(shardc_session_bind_view(s, "w2", &w2v, &err) == SHARDC_OK);

    /* before a run there is nothing to write */
    float y[2 * B * D], sum[B];
    long long ydim[2] = {B, D}, ystr[2] = {2 * D, 2}, sdim[1] = {B}, sstr[1] = {-1};
    shardc_tensor_view yv = {SHARDC_DEVICE_CPU, 0, y, "f32", 2, ydim, ystr};
    shardc_tensor_view sv = {SHARDC_DEVICE_CPU, 0, sum + B - 1, "f32", 1, sdim, sstr};
    CHECK(usage_error(shardc_session_output_into(s, "y", &yv, &err), &err,
                      "no step has run"));
    CHECK(shardc_session_run(s, &err) == SHARDC_OK);
    for (int i = 0; i < 2 * B * D; i++)
        y[i] = -7.0f;
    CHECK(shardc_session_output_into(s, "y", &yv, &err) == SHARDC_OK);
    CHECK(shardc_session_output_into(s, "s", &sv, &err) == SHARDC_OK);
    float packed[B * D], rev[B];
    for (int i = 0; i < B * D; i++) {
        packed[i] = y[2 * i];
        CHECK(y[2 * i + 1] == -7.0f); /* the gaps untouched */
    }
    for (int b = 0; b < B; b++)
        rev[b] = sum[B - 1 - b];
    CHECK(close_to(packed, d.y, B * D) == 0);
    CHECK(close_to(rev, d.s, B) == 0);

    /* the errors */
    shardc_tensor_view bad = xv;
    bad.dtype = "bf16";
    CHECK(shardc_session_bind_view(s, "x", &bad, &err) == SHARDC_ERR_USAGE);
    CHECK_STR(err, "m.sh:3:8: 'x' is f32[8, 16], but a bf16[8, 16] tensor was bound");
    shardc_free(err);
    err = NULL;
    bad = xv;
    bad.dtype = "f64";
    CHECK(usage_error(shardc_session_bind_view(s, "x", &bad, &err), &err,
                      "unknown dtype 'f64'"));
    bad = xv;
    bad.device = 7;
    CHECK(usage_error(shardc_session_bind_view(s, "x", &bad, &err), &err,
                      "device of type 7"));
    bad = xv;
    bad.device = SHARDC_DEVICE_CUDA;
    CHECK(usage_error(shardc_session_bind_view(s, "x", &bad, &err), &err,
                      "'x' is bound in CUDA memory (device 0), but the session runs on "
                             "the cpu backend"));
    long long rep[2] = {0, 1};
    shardc_tensor_view over = {SHARDC_DEVICE_CPU, 0, y, "f32", 2, ydim, rep};
    CHECK(usage_error(shardc_session_output_into(s, "y", &over, &err), &err,
                      "overlapping elements"));
    CHECK(usage_error(shardc_session_output_into(s, "nope", &yv, &err), &err,
                      "no output called 'nope'"));
    /* the failed binds left x bound as it was: the next run agrees */
    CHECK(shardc_session_run(s, &err) == SHARDC_OK);
    CHECK(shardc_session_output_into(s, "y", &yv, &err) == SHARDC_OK);
    for (int i = 0; i < B * D; i++)
        packed[i] = y[2 * i];
    CHECK(close_to(packed, d.y, B * D) == 0);
    shardc_free(err);
    shardc_session_free(s);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

int main(void)
{
    test_meshes();
    test_threads();
    test_save_load_and_errors();
    test_train(1);
    test_train(2);
    test_no_loss();
    test_train_api();
    test_checkpoint_api();
    test_checkpoint_keep_api();
    test_batches();
    test_output_names("1x1");
    test_output_names("2x2");
    test_output_names("4x1");
    test_strict_params();
    test_views("1x1");
    test_views("2x2");
    return CHECK_DONE();
}
