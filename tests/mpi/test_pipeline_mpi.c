/* test_pipeline_mpi.c: pipelined plans under the MPI communicator on 4
 * processes (ctest runs it under mpirun -np 4): the chain of
 * tests/unit/pipeline_plans.h on pp = 4 and on dp x pp = 2x2, three
 * training steps, each rank's gathered outputs and loss (rank 0 is on
 * stage 0: the loss comes to it from the last stage) equal to the
 * reference bit for bit and to the same plan run with the local
 * communicator; the params and the step count saved once; a sharded
 * checkpoint saved by the four processes and resumed on another stage
 * count; and a plan in loop form (compiled by the library), of which each
 * process expands its own stage alone. Every rank prints its failures;
 * rank 0 prints the totals, and every rank exits nonzero if any rank
 * failed. */
#include "tests/unit/check.h"
#include "tests/unit/ckpt_util.h"
#include "tests/unit/pipeline_plans.h"
#include "api/api_internal.h"
#include "runtime/exec/session.h"
#include "runtime/exec/session_impl.h"
#include "runtime/io/tensors.h"

#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

/* As in test_comm_mpi.c: Open MPI's own allocations are not leaks. */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libevent_core\n";
}
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

static void leaks_ignored(bool on)
{
    if (on && __lsan_disable)
        __lsan_disable();
    else if (!on && __lsan_enable)
        __lsan_enable();
}

static int my_rank;

/* A session on t with x and the initial params bound (w0 must outlive it). */
static rt_session *open_session(const pp_plan *t, rt_comm_kind comm, const float *x,
                                const pp_ref *w0)
{
    su_status err;
    if (!rt_plan_validate(&t->p, &err)) {
        fprintf(stderr, "rank %d: invalid plan: %s\n", my_rank, err.msg);
        CHECK(0);
        return NULL;
    }
    rt_session_opts o = {.comm = comm};
    rt_session *s = rt_session_new(&t->p, &o, &err);
    bool ok = s && rt_session_bind(s, "x", x, PB * PN * sizeof *x, &err) == 0;
    for (int l = 0; ok && w0 && l < PL; l++)
        ok = rt_session_bind(s, pp_wname[l], w0->w[l], sizeof w0->w[l], &err) == 0;
    if (!ok) {
        fprintf(stderr, "rank %d: %s\n", my_rank, err.msg);
        CHECK(0);
        rt_session_free(s);
        return NULL;
    }
    return s;
}

/* One run of s against r (advanced) and, when given, against the outputs
 * of the local session `local` run alongside. */
static void check_run(rt_session *s, rt_session *local, pp_ref *r, const float *x,
                      const char *what)
{
    su_status err;
    char msg[128];
    float y[PB * PN], loss;
    pp_ref_step(r, x, y, &loss);
    if (rt_session_run(s, &err) != 0 ||
        (local && rt_session_run(local, &err) != 0)) {
        fprintf(stderr, "rank %d: %s: %s\n", my_rank, what, err.msg);
        CHECK(0);
        return;
    }
    snprintf(msg, sizeof msg, "rank %d: %s", my_rank, what);
    const float *got = rt_session_output(s, "y", NULL);
    CHECK_INT(got ? pp_diff(msg, got, y, PB * PN) : -1, 0);
    double l = 0;
    CHECK(rt_session_loss(s, &l, &err) == 0);
    if (l != loss)
        fprintf(stderr, "%s: loss %.9g, want %.9g\n", msg, l, loss);
    CHECK(l == loss);
    if (local) {
        const float *ly = rt_session_output(local, "y", NULL);
        double ll = -1;
        CHECK(ly && got && memcmp(ly, got, sizeof y) == 0);
        CHECK(rt_session_loss(local, &ll, &err) == 0 && ll == l);
    }
}

/* The params file holds w0..w3 and the step count once, as r has them. */
static void check_params_file(const char *path, const pp_ref *r)
{
    rt_st_file *f = NULL;
    su_status err;
    if (rt_st_open(path, &f, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
        return;
    }
    CHECK_INT(f->nentries, PL + 1);
    int64_t start[1] = {0}, count[1] = {PN};
    for (int l = 0; l < PL; l++) {
        float w[PN];
        rt_type t = pp_t1(PN);
        CHECK(rt_st_read_block(f, pp_wname[l], &t, start, count, w, &err) == 0);
        CHECK_INT(pp_diff("saved params", w, r->w[l], PN), 0);
    }
    float step = -1;
    rt_type st = pp_scalar();
    CHECK(rt_st_read_block(f, "step", &st, start, start, &step, &err) == 0);
    CHECK(step == r->step);
    rt_st_close(f);
}

/* Three steps of the chain on dp x S under MPI, with the local run beside
 * it on rank 0; the params saved (every rank gathers, rank 0 writes). */
static void test_chain(int dp, int S, const char *path)
{
    char what[64];
    su_status err;
    snprintf(what, sizeof what, "dp %d x pp %d", dp, S);
    pp_plan *t = malloc(sizeof *t), *tl = malloc(sizeof *tl);
    pp_make(t, dp, S);
    pp_make(tl, dp, S);
    float x[PB * PN];
    pp_inputs(x);
    pp_ref r, w0;
    pp_ref_init(&r);
    pp_ref_init(&w0);
    rt_session *s = open_session(t, RT_COMM_MPI, x, &w0);
    rt_session *local = my_rank == 0 ? open_session(tl, RT_COMM_LOCAL, x, &w0) : NULL;
    for (int step = 0; s && step < 3; step++)
        check_run(s, local, &r, x, what);
    if (s) {
        CHECK(rt_session_save_params(s, path, &err) == 0 ||
              (fprintf(stderr, "%s\n", err.msg), 0));
        MPI_Barrier(MPI_COMM_WORLD);
        if (my_rank == 0) {
            check_params_file(path, &r);
            remove(path);
        }
    }
    rt_session_free(local);
    rt_session_free(s);
    free(t);
    free(tl);
}

/* Two steps on dp x pp = 2x2 under MPI, a checkpoint (each process writes
 * its file, rank 0 the index), then rank 0 alone resumes it on pp = 4 and
 * on one rank with the local communicator for the third step. */
static void test_checkpoint(const char *dir)
{
    su_status err;
    pp_plan *t = malloc(sizeof *t);
    pp_make(t, 2, 2);
    float x[PB * PN];
    pp_inputs(x);
    pp_ref r, w0;
    pp_ref_init(&r);
    pp_ref_init(&w0);
    rt_session *s = open_session(t, RT_COMM_MPI, x, &w0);
    for (int step = 0; s && step < 2; step++)
        check_run(s, NULL, &r, x, "before the checkpoint");
    if (s && rt_session_save_checkpoint(s, dir, &err) != 0) {
        fprintf(stderr, "rank %d: %s\n", my_rank, err.msg);
        CHECK(0);
    }
    rt_session_free(s);
    static const int stages[] = {4, 1};
    for (int k = 0; my_rank == 0 && k < 2; k++) {
        pp_make(t, 1, stages[k]);
        s = open_session(t, RT_COMM_LOCAL, x, NULL);
        if (!s)
            continue;
        if (rt_session_resume(s, dir, &err) != 0) {
            fprintf(stderr, "resumed on pp %d: %s\n", stages[k], err.msg);
            CHECK(0);
        }
        CHECK_INT(rt_session_step(s), 2);
        pp_ref again = r;
        check_run(s, NULL, &again, x, "resumed");
        rt_session_free(s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (my_rank == 0) /* the step folders and the pointer, then dir */
        CHECK(ckpt_remove_tree(dir) == 0);
    free(t);
}

/* A pipeline of 4 stages compiled by the library, its plan in loop form
 * as shardc_program_plan keeps it: a session under MPI expands this
 * process's stage alone (its own copy; the plan is left as it was, for
 * other sessions), and trains on it, the loss the same on every rank as
 * the local communicator's, bit for bit. */
static const char LOOP_MODEL[] =
    "mesh pp\n"
    "input x : f32[8, 16]\n"
    "block layer(h : f32[8, 16]) -> f32[8, 16] {\n"
    "    param w : f32[16, 16] = normal(0.1)\n"
    "    return tanh(h @ w)\n"
    "}\n"
    "repeat 4 as layers over pp { x = layer(x) }\n"
    "pipeline microbatches 4 schedule 1f1b\n"
    "loss = mean(x * x)\n"
    "output x, loss\n"
    "train loss with sgd(lr = 0.1)\n";

static float loop_loss(const rt_plan *p, rt_comm_kind comm, const float *x, bool check_view)
{
    su_status err;
    rt_session_opts o = {.comm = comm, .seed = 7};
    rt_session *s = rt_session_new(p, &o, &err);
    float loss = -1.0f;
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "rank %d: %s\n", my_rank, err.msg);
        return loss;
    }
    if (check_view) {
        for (int st = 0; st < 4; st++) {
            CHECK(p->stage[st].nbody > 0); /* the caller's plan as it was */
            if (st == my_rank)             /* pp is the only axis: rank r is stage r */
                CHECK(s->p->stage[st].nbody == 0 &&
                      s->p->stage[st].ninstr > p->stage[st].ninstr);
            else
                CHECK(s->p->stage[st].nbody == p->stage[st].nbody &&
                      s->p->stage[st].ninstr == p->stage[st].ninstr);
        }
    }
    const void *out = NULL;
    if (rt_session_bind(s, "x", x, 8 * 16 * sizeof *x, &err) != 0 ||
        rt_session_run(s, &err) != 0 || !(out = rt_session_output(s, "loss", NULL))) {
        CHECK(!"the loop-form plan runs");
        fprintf(stderr, "rank %d: %s\n", my_rank, err.msg);
    } else {
        loss = *(const float *)out;
    }
    rt_session_free(s);
    return loss;
}

static void test_loop_form(void)
{
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *err = NULL;
    bool ok = opt && shardc_options_set_mesh(opt, "4", &err) == SHARDC_OK &&
              shardc_options_set_archs(opt, "none", &err) == SHARDC_OK &&
              shardc_compile_string(opt, "loop.sh", LOOP_MODEL, sizeof LOOP_MODEL - 1, &prog,
                                    &err) == SHARDC_OK &&
              shardc_program_plan(prog, &plan, &err) == SHARDC_OK;
    CHECK(ok);
    if (ok) {
        float x[8 * 16];
        for (int i = 0; i < 8 * 16; i++)
            x[i] = (float)((i * 37) % 17 - 8) / 8.0f;
        float mpi = loop_loss(plan->p, RT_COMM_MPI, x, true);
        float local = my_rank == 0 ? loop_loss(plan->p, RT_COMM_LOCAL, x, false) : 0.0f;
        MPI_Bcast(&local, 1, MPI_FLOAT, 0, MPI_COMM_WORLD);
        CHECK(mpi == local && mpi > 0.0f);
    } else {
        fprintf(stderr, "rank %d: %s\n", my_rank, err ? err : "?");
    }
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    shardc_free(err);
}

int main(int argc, char **argv)
{
    leaks_ignored(true);
    MPI_Init(&argc, &argv);
    leaks_ignored(false);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (my_rank == 0)
            fprintf(stderr, "test_pipeline_mpi needs 4 processes (mpirun -np 4), not %d\n", size);
        leaks_ignored(true);
        MPI_Finalize();
        return 1;
    }
    /* paths named by rank 0's pid, the same on every rank */
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char path[128], dir[128];
    snprintf(path, sizeof path, "/tmp/test_pipeline_mpi_%ld.safetensors", pid);
    snprintf(dir, sizeof dir, "/tmp/test_pipeline_mpi_%ld_ckpt", pid);
    test_chain(1, 4, path);
    test_chain(2, 2, path);
    test_checkpoint(dir);
    test_loop_form();
    int mine[2] = {check_count, check_failures}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (my_rank == 0)
        printf("%d checks on 4 ranks, %d failed\n", all[0], all[1]);
    leaks_ignored(true);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
