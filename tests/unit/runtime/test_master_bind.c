/* test_master_bind.c: the f32 master of a bf16 param (the state
 * opt.NAME.master, made from its param) when a host application binds the
 * param through the C API (include/shardc.h): after one step, the master
 * saved by shardc_session_save_params must be the step's update of the
 * bound tensor widened to f32, not of the params file's tensor or of the
 * seed's, on one rank and with the master sharded over two ranks by ZeRO 1
 * (the param replicated) and ZeRO 3 (both sharded); also when the params
 * file holds a master of its own (a saved run's), since a bound param
 * wins over the files, and over a checkpoint resumed; and binding the
 * param again makes the master again.
 * The model makes the step exact in f32: loss = mse(cast(w, f32), 0) has
 * the gradient w / 64 (2/N with N = 128 elements), so sgd with lr 0.5
 * gives the master w * 127/128, exact for w of 7 significant bits; the
 * checks want it to the bit. Then, for a pipeline
 * (tests/models/mlp_bf16_pp.sh), that every master lives on its param's
 * stage. */
#include "api/api_internal.h"
#include "check.h"
#include "ckpt_util.h"
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/io/tensors.h"

#include <shardc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { R = 8, C = 16, N = R * C };

static const char MODEL[] =
    "mesh dp\n"
    "input y : f32[8, 16] shard(dp, _)\n"
    "param w : bf16[8, 16] = normal(0.02)\n"
    "loss = mse(cast(w, f32), y)\n"
    "train loss with sgd(lr = 0.5)";

static const float ZEROS[N];

/* The plan of MODEL on `ranks` ranks, its train line ending in `zero K
 * over dp` when zero > 0; NULL (the failure printed) on an error. */
static shardc_plan *compile(const char *ranks, int zero)
{
    char text[512];
    if (zero)
        snprintf(text, sizeof text, "%s zero %d over dp\n", MODEL, zero);
    else
        snprintf(text, sizeof text, "%s\n", MODEL);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *err = NULL;
    if (shardc_options_set_mesh(opt, ranks, &err) != SHARDC_OK ||
        shardc_options_set_archs(opt, "none", &err) != SHARDC_OK ||
        shardc_compile_string(opt, "m.sh", text, strlen(text), &prog, &err) != SHARDC_OK ||
        shardc_program_plan(prog, &plan, &err) != SHARDC_OK)
        fprintf(stderr, "mesh %s zero %d: %s\n", ranks, zero, err ? err : "");
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return plan;
}

/* w[i] = scale * (i - 64) / 32 in bf16: 7 significant bits, 0 included */
static void make_w(float scale, uint16_t *w)
{
    for (int i = 0; i < N; i++)
        w[i] = su_f32_to_bf16(scale * (float)(i - N / 2) / 32.0f);
}

/* A params file holding w = file_w and, when master is not NULL, its own
 * opt.w.master. */
static void write_params(const char *path, const uint16_t *file_w, const float *master)
{
    rt_type tw = {.dtype = RT_BF16, .rank = 2, .dim = {R, C}}, tm = tw;
    tm.dtype = RT_F32;
    const char *names[2] = {"w", "opt.w.master"};
    rt_type types[2] = {tw, tm};
    const void *data[2] = {file_w, master};
    su_status err;
    CHECK(rt_st_write(path, master ? 2 : 1, names, types, data, &err) == 0 ||
          (fprintf(stderr, "%s\n", err.msg), 0));
}

/* Reads the full tensor `name` of the saved file f into out (in its dtype). */
static int read_full(const rt_st_file *f, const char *name, rt_dtype dtype, void *out)
{
    rt_type t = {.dtype = dtype, .rank = 2, .dim = {R, C}};
    int64_t start[2] = {0, 0};
    su_status err;
    if (rt_st_read_block(f, name, &t, start, t.dim, out, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The session's params after its step, saved to path, against the step
 * from the bound w0: master w0 * 127/128 (f32, exact), w that rounded. */
static void check_step(shardc_session *s, const char *path, const uint16_t *w0,
                       const char *what)
{
    char *err = NULL;
    CHECK(shardc_session_save_params(s, path, &err) == SHARDC_OK ||
          (fprintf(stderr, "%s: %s\n", what, err), 0));
    shardc_free(err);
    rt_st_file *f = NULL;
    su_status e;
    float master[N];
    uint16_t w[N];
    if (rt_st_open(path, &f, &e) != 0) {
        fprintf(stderr, "%s: %s\n", what, e.msg);
        CHECK(0);
        return;
    }
    CHECK(read_full(f, "opt.w.master", RT_F32, master) == 0);
    CHECK(read_full(f, "w", RT_BF16, w) == 0);
    rt_st_close(f);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float want = su_bf16_to_f32(w0[i]) * 127.0f / 128.0f;
        /* by value: -0 - 0.5 * -0 is +0 */
        if (master[i] != want || su_bf16_to_f32(w[i]) != su_bf16_to_f32(su_f32_to_bf16(want))) {
            if (bad++ < 3)
                fprintf(stderr, "%s: element %d: master %.9g, w %.9g; want %.9g and %.9g\n",
                        what, i, master[i], su_bf16_to_f32(w[i]), want,
                        su_bf16_to_f32(su_f32_to_bf16(want)));
        }
    }
    CHECK_INT(bad, 0);
}

/* One mesh: a session with params_file (or none), w bound to w0, one step
 * checked; then w bound to w1, one step checked. */
static void check_mesh(const char *ranks, int zero, const char *params_file, const char *path)
{
    char what[128];
    snprintf(what, sizeof what, "mesh %s, zero %d, %s", ranks, zero,
             params_file ? "a params file" : "no params file");
    shardc_plan *plan = compile(ranks, zero);
    CHECK(plan != NULL);
    if (!plan)
        return;
    shardc_session_config cfg = {.comm = "local", .params_file = params_file, .seed = 7};
    shardc_session *s = NULL;
    char *err = NULL;
    if (shardc_session_new(plan, &cfg, &s, &err) != SHARDC_OK) {
        fprintf(stderr, "%s: %s\n", what, err);
        CHECK(0);
        shardc_free(err);
        shardc_plan_free(plan);
        return;
    }
    uint16_t w0[N], w1[N];
    make_w(1.0f, w0);
    make_w(-0.25f, w1);
    CHECK(shardc_session_bind(s, "y", ZEROS, sizeof ZEROS, &err) == SHARDC_OK);
    CHECK(shardc_session_bind(s, "w", w0, sizeof w0, &err) == SHARDC_OK);
    CHECK(shardc_session_run(s, &err) == SHARDC_OK || (fprintf(stderr, "%s\n", err), 0));
    /* the master is made from the bound w, not from the seed */
    CHECK(!strstr(shardc_session_generated(s), "master"));
    check_step(s, path, w0, what);

    CHECK(shardc_session_bind(s, "w", w1, sizeof w1, &err) == SHARDC_OK);
    CHECK(shardc_session_run(s, &err) == SHARDC_OK || (fprintf(stderr, "%s\n", err), 0));
    strncat(what, ", w bound again", sizeof what - strlen(what) - 1);
    check_step(s, path, w1, what);
    shardc_free(err);
    shardc_session_free(s);
    shardc_plan_free(plan);
}

/* A checkpoint saved after a step on w0 (mesh 2, zero 1) holds a master;
 * a session resumed from it with w bound to w1 makes the master from w1. */
static void check_resume(const char *dir, const char *path)
{
    shardc_plan *plan = compile("2", 1);
    CHECK(plan != NULL);
    if (!plan)
        return;
    shardc_session_config cfg = {.comm = "local"};
    shardc_session *s = NULL;
    char *err = NULL;
    uint16_t w0[N], w1[N];
    make_w(1.0f, w0);
    make_w(0.5f, w1);
    CHECK(shardc_session_new(plan, &cfg, &s, &err) == SHARDC_OK);
    CHECK(s && shardc_session_bind(s, "y", ZEROS, sizeof ZEROS, &err) == SHARDC_OK);
    CHECK(s && shardc_session_bind(s, "w", w0, sizeof w0, &err) == SHARDC_OK);
    CHECK(s && shardc_session_run(s, &err) == SHARDC_OK);
    CHECK(s && shardc_session_save_checkpoint(s, dir, &err) == SHARDC_OK);
    shardc_session_free(s);
    s = NULL;
    CHECK(shardc_session_new(plan, &cfg, &s, &err) == SHARDC_OK);
    CHECK(s && shardc_session_resume(s, dir, &err) == SHARDC_OK);
    CHECK(s && shardc_session_bind(s, "y", ZEROS, sizeof ZEROS, &err) == SHARDC_OK);
    CHECK(s && shardc_session_bind(s, "w", w1, sizeof w1, &err) == SHARDC_OK);
    CHECK(s && shardc_session_run(s, &err) == SHARDC_OK);
    if (err)
        fprintf(stderr, "resumed: %s\n", err);
    if (s)
        check_step(s, path, w1, "mesh 2, zero 1, resumed with w bound");
    shardc_free(err);
    shardc_session_free(s);
    shardc_plan_free(plan);
    CHECK(ckpt_remove_tree(dir) == 0);
}

/* Every master of the pipelined model on mesh 1x2x1 is on its param's
 * stage, and each stage holds those of its own 2 layers (6 each). */
static void check_pipeline_stages(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tests/models/mlp_bf16_pp.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *err = NULL;
    CHECK(shardc_options_set_mesh(opt, "1x2x1", &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(opt, "none", &err) == SHARDC_OK);
    if (shardc_compile_file(opt, path, &prog, &err) != SHARDC_OK ||
        shardc_program_plan(prog, &plan, &err) != SHARDC_OK) {
        fprintf(stderr, "%s\n", err ? err : "");
        CHECK(0);
    }
    int per_stage[2] = {0, 0};
    const rt_plan *p = plan ? plan->p : NULL;
    for (int i = 0; p && i < p->nio; i++) {
        const rt_io *m = &p->io[i];
        if (m->init != RT_INIT_PARAM)
            continue;
        const rt_io *param = NULL;
        for (int j = 0; j < p->nio && !param; j++)
            if (p->io[j].kind == RT_IO_PARAM && !strcmp(p->io[j].name, m->init_param))
                param = &p->io[j];
        CHECK(param && param->stage == m->stage);
        if (param && param->stage != m->stage)
            fprintf(stderr, "%s on stage %d, its param on stage %d\n", m->name, m->stage,
                    param->stage);
        if (m->stage >= 0 && m->stage < 2)
            per_stage[m->stage]++;
    }
    CHECK_INT(per_stage[0], 6);
    CHECK_INT(per_stage[1], 6);
    shardc_free(err);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

int main(void)
{
    char params[96], saved[96];
    snprintf(params, sizeof params, "/tmp/test_master_bind_%ld_params.safetensors",
             (long)getpid());
    snprintf(saved, sizeof saved, "/tmp/test_master_bind_%ld_saved.safetensors", (long)getpid());
    uint16_t file_w[N];
    float file_master[N];
    make_w(3.0f, file_w);
    for (int i = 0; i < N; i++)
        file_master[i] = 0.5f;
    const struct {
        const char *ranks;
        int zero;
    } meshes[] = {{"1", 0}, {"2", 1}, {"2", 3}};
    for (size_t k = 0; k < sizeof meshes / sizeof meshes[0]; k++) {
        check_mesh(meshes[k].ranks, meshes[k].zero, NULL, saved);
        write_params(params, file_w, NULL);
        check_mesh(meshes[k].ranks, meshes[k].zero, params, saved);
        write_params(params, file_w, file_master);
        check_mesh(meshes[k].ranks, meshes[k].zero, params, saved);
    }
    char ckpt[96];
    snprintf(ckpt, sizeof ckpt, "/tmp/test_master_bind_%ld_ckpt", (long)getpid());
    check_resume(ckpt, saved);
    check_pipeline_stages();
    remove(params);
    remove(saved);
    return CHECK_DONE();
}
