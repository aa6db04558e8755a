/* test_comm_stream.c: where the cuda backend's compute stream waits for a
 * collective, send or recv run on the comm stream (rt_nccl_wait_points,
 * runtime/comm/comm_nccl.h), on the real plans of every example (compiled here,
 * --arch none) on several meshes, against a brute-force check: the runs of
 * the arena holding the op's operand and result, and the steps after it
 * scanned in order for the first whose instructions touch those bytes.
 * Each plan is checked with each instruction at its own step and with a
 * made-up fusion (runs of compute instructions launched at the run's last
 * one, as a kernel's group is at its anchor). */
#include "shardc.h"
#include "api/api_internal.h"
#include "runtime/comm/comm_nccl.h"
#include "check.h"

#include <stdlib.h>

/* Whether buffer b's bytes (t's size at its offset) overlap [lo, hi). */
static bool touches(const rt_program *g, int32_t b, const rt_type *t, int64_t lo, int64_t hi)
{
    if (b < 0)
        return false;
    int64_t at = g->buf_offset[b], n = rt_type_bytes(t);
    return n > 0 && at < hi && lo < at + n;
}

/* The brute force: the first step j > c at which a non-comm instruction
 * launched at j touches one of c's bytes (its operand's or its result's,
 * each a run of the arena); g->ninstr when none. by_step lists the
 * instructions in the order of their launch steps, start[j] where step j's
 * begin. */
static int32_t brute_wait(const rt_program *g, const int32_t *by_step, const int32_t *start,
                          int c)
{
    const rt_instr *in = &g->instr[c];
    int64_t lo[2], hi[2];
    for (int k = 0; k < 2; k++) {
        int32_t b = k == 0 ? (in->nin ? in->in[0] : -1) : in->out;
        const rt_type *t = k == 0 ? &in->in_t[0] : &in->out_t;
        lo[k] = b >= 0 ? g->buf_offset[b] : 0;
        hi[k] = b >= 0 ? lo[k] + rt_type_bytes(t) : 0;
    }
    for (int j = c + 1; j < g->ninstr; j++)
        for (int32_t q = start[j]; q < start[j + 1]; q++) {
            const rt_instr *o = &g->instr[by_step[q]];
            if (rt_ops[o->op].cls == RT_K_COMM)
                continue;
            for (int k = 0; k <= o->nin; k++) {
                int32_t b = k < o->nin ? o->in[k] : o->out;
                const rt_type *t = k < o->nin ? &o->in_t[k] : &o->out_t;
                if (touches(g, b, t, lo[0], hi[0]) || touches(g, b, t, lo[1], hi[1]))
                    return j;
            }
        }
    return g->ninstr;
}

/* A made-up fusion: each run of up to 3 consecutive compute instructions
 * launched at its last one. */
static void fake_kernels(const rt_program *g, int32_t *launch_at)
{
    for (int i = 0; i < g->ninstr;) {
        int end = i;
        while (end + 1 < g->ninstr && end - i < 2 &&
               rt_ops[g->instr[end + 1].op].cls == RT_K_COMPUTE &&
               rt_ops[g->instr[i].op].cls == RT_K_COMPUTE)
            end++;
        for (int k = i; k <= end; k++)
            launch_at[k] = end;
        i = end + 1;
    }
}

static int ncomm, nearly; /* over every plan: comm ops, and those waited for before the end */

static void check_program(const rt_program *g, const int32_t *launch_at, const char *what)
{
    int32_t *wait = calloc((size_t)g->ninstr + 1, sizeof *wait);
    if (!wait)
        abort();
    rt_nccl_wait_points(g, launch_at, wait);
    /* the instructions by launch step: step j's are by_step[start[j] ..
     * start[j + 1]) */
    int32_t *ident = calloc((size_t)g->ninstr + 1, sizeof *ident);
    int32_t *start = calloc((size_t)g->ninstr + 2, sizeof *start);
    int32_t *fill = calloc((size_t)g->ninstr + 1, sizeof *fill);
    int32_t *by_step = calloc((size_t)g->ninstr + 1, sizeof *by_step);
    if (!ident || !start || !fill || !by_step)
        abort();
    for (int i = 0; i < g->ninstr; i++) {
        ident[i] = launch_at ? launch_at[i] : i;
        CHECK(ident[i] >= 0 && ident[i] < g->ninstr);
        start[ident[i] + 1]++;
    }
    for (int j = 0; j < g->ninstr; j++)
        start[j + 1] += start[j];
    for (int i = 0; i < g->ninstr; i++)
        by_step[start[ident[i]] + fill[ident[i]]++] = i;
    for (int c = 0; c < g->ninstr; c++) {
        if (rt_ops[g->instr[c].op].cls != RT_K_COMM) {
            CHECK_INT(wait[c], -1);
            continue;
        }
        int32_t want = brute_wait(g, by_step, start, c);
        if (wait[c] != want)
            fprintf(stderr, "  %s: instruction %d (%s)\n", what, c, rt_ops[g->instr[c].op].name);
        CHECK_INT(wait[c], want);
        ncomm++;
        nearly += want < g->ninstr;
    }
    free(by_step);
    free(fill);
    free(start);
    free(ident);
    free(wait);
}

static void check_example(const char *example, const char *mesh)
{
    char path[4200], what[256];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), example);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *e = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK);
    CHECK(shardc_options_set_archs(opt, "none", &e) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &e) == SHARDC_OK);
    CHECK(prog && shardc_program_plan(prog, &plan, &e) == SHARDC_OK);
    if (e)
        fprintf(stderr, "%s --mesh %s: %s\n", example, mesh, e);
    su_status xe;
    if (plan) /* every stage plain, as the ranks run them (the plan keeps its loop form) */
        CHECK(rt_plan_expand(plan->p, &xe));
    for (int st = 0; plan && st < plan->p->nstages; st++) {
        const rt_program *g = &plan->p->stage[st];
        int32_t *launch = calloc((size_t)g->ninstr + 1, sizeof *launch);
        snprintf(what, sizeof what, "%s --mesh %s stage %d", example, mesh, st);
        rt_nccl_launch_steps(plan->p, st, launch);
        for (int i = 0; i < g->ninstr; i++) /* --arch none: no kernels */
            CHECK_INT(launch[i], i);
        check_program(g, NULL, what);
        fake_kernels(g, launch);
        check_program(g, launch, what);
        free(launch);
    }
    shardc_free(e);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

int main(void)
{
    static const struct {
        const char *example, *mesh;
    } runs[] = {
        {"mlp.sh", "2x2"},         {"mlp.sh", "4x1"},         {"mlp.sh", "1x2"},
        {"transformer.sh", "2x2"}, {"transformer.sh", "1x4"}, {"pipeline.sh", "2x2x2"},
        {"pipeline.sh", "1x4x1"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
        check_example(runs[i].example, runs[i].mesh);
    /* the plans have collectives, and some are needed before the end */
    printf("%d communication instructions, %d waited for before the end of the step\n", ncomm,
           nearly);
    CHECK(ncomm > 20);
    CHECK(nearly > 0);
    return CHECK_DONE();
}
