/* test_pipeline.c: pipelined plans on the CPU backend with the local
 * communicator (runtime/exec/session.c, comm_local.c): the chain of
 * pipeline_plans.h on pp = 2, pp = 4 and dp x pp = 2x2, three training
 * steps each, its outputs, loss, params and step count equal to the
 * reference bit for bit (every value is exact); a checkpoint saved on one
 * stage count and resumed on others; and the failures of point to point:
 * a recv nobody sends to, a size mismatch, a schedule that deadlocks under
 * rendezvous, and a failed peer waking a waiting recv, each an error that
 * names the rank, the instruction and the peer, without hanging. */
#include "check.h"
#include "ckpt_util.h"
#include "pipeline_plans.h"
#include "runtime/exec/session.h"
#include "runtime/io/tensors.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ERRLEN 2048

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void tmp_path(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/tmp/test_pipeline_%ld_%s", (long)getpid(), what);
}

/* A session on the chain, with x bound; NULL (a failed check) on error. */
static rt_session *chain_session(const pp_plan *t, const float *x, int timeout_ms)
{
    su_status err;
    if (!rt_plan_validate(&t->p, &err)) {
        fprintf(stderr, "dp %d, %d stages: invalid plan: %s\n", t->dp, t->nstages, err.msg);
        CHECK(0);
        return NULL;
    }
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .timeout_ms = timeout_ms};
    rt_session *s = rt_session_new(&t->p, &o, &err);
    if (!s || rt_session_bind(s, "x", x, PB * PN * sizeof *x, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
        rt_session_free(s);
        return NULL;
    }
    return s;
}

/* One run of s against the reference r (advanced by it). */
static void check_run(rt_session *s, pp_ref *r, const float *x, const char *what)
{
    su_status err;
    float y[PB * PN], loss;
    pp_ref_step(r, x, y, &loss);
    if (rt_session_run(s, &err) != 0) {
        fprintf(stderr, "%s: %s\n", what, err.msg);
        CHECK(0);
        return;
    }
    rt_type t;
    const float *got = rt_session_output(s, "y", &t);
    CHECK(got && t.rank == 2 && t.dim[0] == PB && t.dim[1] == PN);
    CHECK_INT(got ? pp_diff(what, got, y, PB * PN) : -1, 0);
    double l = 0;
    CHECK(rt_session_loss(s, &l, &err) == 0);
    if (l != loss)
        fprintf(stderr, "%s: loss %.9g, want %.9g\n", what, l, loss);
    CHECK(l == loss);
}

/* The params file written by rt_session_save_params holds w0..w3 and the
 * step count once, as r has them. */
static void check_params_file(const char *path, const pp_ref *r, const char *what)
{
    rt_st_file *f = NULL;
    su_status err;
    if (rt_st_open(path, &f, &err) != 0) {
        fprintf(stderr, "%s: %s\n", what, err.msg);
        CHECK(0);
        return;
    }
    CHECK_INT(f->nentries, PL + 1);
    for (int l = 0; l < PL; l++) {
        float w[PN];
        int64_t start[1] = {0}, count[1] = {PN};
        rt_type t = pp_t1(PN);
        CHECK(rt_st_read_block(f, pp_wname[l], &t, start, count, w, &err) == 0);
        CHECK_INT(pp_diff(what, w, r->w[l], PN), 0);
    }
    float step = -1;
    rt_type st = pp_scalar();
    int64_t none[1] = {0};
    CHECK(rt_st_read_block(f, "step", &st, none, none, &step, &err) == 0);
    CHECK(step == r->step);
    rt_st_close(f);
}

/* Three steps of the chain on dp x S, then its params and step count. */
static void test_chain(int dp, int S)
{
    char what[64], path[128];
    su_status err;
    snprintf(what, sizeof what, "dp %d x pp %d", dp, S);
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, dp, S);
    float x[PB * PN];
    pp_inputs(x);
    rt_session *s = chain_session(t, x, 0);
    pp_ref r, w0; /* w0: the bound params (borrowed: they must not move) */
    pp_ref_init(&r);
    pp_ref_init(&w0);
    for (int l = 0; s && l < PL; l++)
        CHECK(rt_session_bind(s, pp_wname[l], w0.w[l], sizeof w0.w[l], &err) == 0);
    for (int step = 0; s && step < 3; step++)
        check_run(s, &r, x, what);
    if (s) {
        CHECK_STR(rt_session_generated(s), "step"); /* once, though every stage keeps it */
        tmp_path(path, sizeof path, "params.safetensors");
        CHECK(rt_session_save_params(s, path, &err) == 0);
        check_params_file(path, &r, what);
        remove(path);
    }
    rt_session_free(s);
    free(t);
}

/* ---- checkpoints across stage counts ---- */

/* How many times the index lists the tensor (cJSON's layout: a tab after
 * the colon). */
static int index_mentions(const char *dir, const char *name)
{
    char path[4200], key[64], text[65536];
    ckpt_index_path(dir, path, sizeof path);
    snprintf(key, sizeof key, "\"%s\":\t{", name);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = 0;
    int k = 0;
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key))
        k++;
    return k;
}

/* Two steps on dp x pp = save_dp x save_S, a checkpoint, then a third
 * step resumed on each of the other meshes: the values of three steps in
 * a row. */
static void test_checkpoint(int save_dp, int save_S)
{
    static const int meshes[][2] = {{1, 1}, {1, 2}, {1, 4}, {2, 2}, {2, 1}};
    char dir[128], what[96];
    su_status err;
    tmp_path(dir, sizeof dir, "ckpt");
    float x[PB * PN];
    pp_inputs(x);
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, save_dp, save_S);
    rt_session *s = chain_session(t, x, 0);
    pp_ref r, w0; /* w0: the bound params (borrowed: they must not move) */
    pp_ref_init(&r);
    pp_ref_init(&w0);
    for (int l = 0; s && l < PL; l++)
        CHECK(rt_session_bind(s, pp_wname[l], w0.w[l], sizeof w0.w[l], &err) == 0);
    for (int step = 0; s && step < 2; step++)
        check_run(s, &r, x, "before the checkpoint");
    if (s && rt_session_save_checkpoint(s, dir, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
    }
    rt_session_free(s);
    CHECK_INT(index_mentions(dir, "step"), 1);
    CHECK_INT(index_mentions(dir, "w3"), 1);
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++) {
        int dp = meshes[m][0], S = meshes[m][1];
        if (dp == save_dp && S == save_S)
            continue;
        snprintf(what, sizeof what, "saved on %dx%d, resumed on %dx%d", save_dp, save_S, dp, S);
        pp_make(t, dp, S);
        s = chain_session(t, x, 0);
        if (!s)
            continue;
        if (rt_session_resume(s, dir, &err) != 0) {
            fprintf(stderr, "%s: %s\n", what, err.msg);
            CHECK(0);
        }
        CHECK_INT(rt_session_step(s), 2);
        pp_ref again = r;
        check_run(s, &again, x, what);
        CHECK_STR(rt_session_generated(s), "");
        char path[128];
        tmp_path(path, sizeof path, "resumed.safetensors");
        CHECK(rt_session_save_params(s, path, &err) == 0);
        check_params_file(path, &again, what);
        remove(path);
        rt_session_free(s);
    }
    free(t);
    CHECK(ckpt_remove_tree(dir) == 0);
}

/* ---- failures ---- */

/* The kind of run_failing's last failure (SU_OK when it ran). */
static su_kind failed_kind;

/* Runs the plan once with options o; the error (empty when it ran) into
 * err (ERRLEN bytes) and its kind into failed_kind, and how long the run
 * took. */
static double run_failing(const pp_plan *t, const rt_session_opts *o, char *err)
{
    failed_kind = SU_OK;
    su_status e;
    err[0] = 0;
    if (!rt_plan_validate(&t->p, &e)) {
        snprintf(err, ERRLEN, "invalid plan: %.1900s", e.msg);
        return 0;
    }
    rt_session *s = rt_session_new(&t->p, o, &e);
    if (!s) {
        snprintf(err, ERRLEN, "no session: %.1900s", e.msg);
        return 0;
    }
    float x[PB * PN];
    pp_inputs(x);
    if (!o->inputs_path)
        rt_session_bind(s, "x", x, sizeof x, &e);
    double t0 = now_ms();
    if (rt_session_run(s, &e) != 0) {
        snprintf(err, ERRLEN, "%.1900s", e.msg);
        failed_kind = e.kind;
    }
    double ms = now_ms() - t0;
    /* a failed session refuses another run, and frees cleanly */
    if (err[0])
        CHECK(rt_session_run(s, &e) != 0 && strstr(e.msg, "an earlier run failed"));
    rt_session_free(s);
    return ms;
}

/* The last instruction of stage s, removed. */
static rt_instr pp_pop(pp_plan *t, int s)
{
    return t->instr[s][--t->stage[s].ninstr];
}

static void test_recv_timeout(void)
{
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, 1, 2);
    rt_instr send = pp_pop(t, 0); /* stage 0 never sends */
    CHECK_INT(send.op, RT_OP_SEND);
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .timeout_ms = 200};
    char err[ERRLEN];
    double ms = run_failing(t, &o, err);
    CHECK_STR(err, "rank 1: instruction 0 (recv from stage 0): recv on rank 1 from rank 0 "
                   "timed out after 200 ms: rank 0 sent nothing");
    CHECK(failed_kind == SU_PEER); /* a wait for a peer timed out */
    CHECK(ms >= 190 && ms < 5000);

    /* on dp x pp, the peer of rank 3 (dp 1, pp 1) is rank 2 (dp 1, pp 0) */
    pp_make(t, 2, 2);
    pp_pop(t, 0);
    run_failing(t, &o, err);
    CHECK(strstr(err, "instruction 0 (recv from stage 0): recv on rank 1 from rank 0 timed out") ||
          strstr(err, "instruction 0 (recv from stage 0): recv on rank 3 from rank 2 timed out"));
    free(t);
}

/* Stage 0 sends half of h; stage 1 expects all of it. */
static void test_size_mismatch(void)
{
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, 1, 2);
    rt_instr *send = &t->instr[0][t->stage[0].ninstr - 1];
    CHECK_INT(send->op, RT_OP_SEND);
    send->in_t[0] = send->out_t = pp_t2(PB, PN / 2);
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .timeout_ms = 5000};
    char err[ERRLEN];
    run_failing(t, &o, err);
    /* whichever side speaks first: both name both ranks and sizes */
    const char *recv_msg = "rank 1: instruction 0 (recv from stage 0): recv on rank 1 from rank 0: "
                           "size mismatch: rank 0 sent 64 bytes, rank 1 expects 128";
    char send_msg[256];
    snprintf(send_msg, sizeof send_msg, "rank 0: instruction %d (send to stage 1): send on rank 0 "
             "to rank 1: size mismatch: rank 0 sent 64 bytes, rank 1 expects 128",
             t->stage[0].ninstr - 1);
    if (strcmp(err, recv_msg) != 0 && strcmp(err, send_msg) != 0)
        fprintf(stderr, "size mismatch: \"%s\"\n", err);
    CHECK(strcmp(err, recv_msg) == 0 || strcmp(err, send_msg) == 0);
    CHECK(failed_kind == SU_PEER);
    free(t);
}

/* Both stages send to each other before receiving: fine with buffering,
 * a deadlock under rendezvous (as under NCCL), so a timeout here. */
static void test_rendezvous_deadlock(void)
{
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, 1, 2);
    /* stage 0: after its send, a recv from stage 1 */
    rt_instr *rv = pp_ins(t, 0, RT_OP_RECV, pp_scalar(), 0);
    rv->dim = 1;
    /* stage 1: a send to stage 0 in front of everything */
    int c = pp_const(t, 1, 2.0);
    rt_instr *snd = pp_ins(t, 1, RT_OP_SEND, pp_scalar(), 1, c, pp_scalar());
    snd->dim = 0;
    rt_program *g = &t->stage[1];
    rt_instr moved[2] = {t->instr[1][g->ninstr - 2], t->instr[1][g->ninstr - 1]};
    memmove(&t->instr[1][2], &t->instr[1][0], (size_t)(g->ninstr - 2) * sizeof moved[0]);
    t->instr[1][0] = moved[0];
    t->instr[1][1] = moved[1];
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .timeout_ms = 300};
    char err[ERRLEN];
    double ms = run_failing(t, &o, err);
    char want0[160];
    snprintf(want0, sizeof want0, "rank 0: instruction %d (send to stage 1): send on rank 0 to "
             "rank 1 timed out after 300 ms: rank 1 did not receive", t->stage[0].ninstr - 2);
    const char *want1 = "rank 1: instruction 1 (send to stage 0): send on rank 1 to rank 0 timed "
                        "out after 300 ms: rank 0 did not receive";
    if (strcmp(err, want0) != 0 && strcmp(err, want1) != 0)
        fprintf(stderr, "deadlock: \"%s\"\n", err);
    CHECK(strcmp(err, want0) == 0 || strcmp(err, want1) == 0);
    CHECK(ms < 5000);

    /* the same exchange ordered (stage 1 receives first) runs */
    pp_make(t, 1, 2);
    rv = pp_ins(t, 0, RT_OP_RECV, pp_scalar(), 0);
    rv->dim = 1;
    c = pp_const(t, 1, 2.0);
    pp_ins(t, 1, RT_OP_SEND, pp_scalar(), 1, c, pp_scalar())->dim = 0;
    run_failing(t, &o, err);
    CHECK_STR(err, "");
    free(t);
}

/* Stage 0 fails on its first instruction (x is missing from the inputs
 * file); rank 1, waiting in its recv with a long timeout, is woken. */
static void test_peer_failure(void)
{
    char path[128];
    su_status err;
    tmp_path(path, sizeof path, "inputs.safetensors");
    const char *name = "other";
    rt_type ty = pp_t1(4);
    float v[4] = {0};
    const void *data = v;
    CHECK(rt_st_write(path, 1, &name, &ty, &data, &err) == 0);
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, 1, 2);
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .timeout_ms = 60000, .inputs_path = path};
    double ms = run_failing(t, &o, err.msg);
    CHECK(strncmp(err.msg, "rank 0: instruction 0 (input): ", 31) == 0);
    CHECK(ms < 10000);
    remove(path);
    free(t);
}

int main(void)
{
    test_chain(1, 2);
    test_chain(1, 4);
    test_chain(2, 2);
    test_chain(1, 1);
    test_checkpoint(1, 2);
    test_checkpoint(2, 2);
    test_checkpoint(1, 4);
    test_recv_timeout();
    test_size_mismatch();
    test_rendezvous_deadlock();
    test_peer_failure();
    return CHECK_DONE();
}
