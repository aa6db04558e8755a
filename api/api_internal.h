/* api_internal.h: what the files of api/ share: the compiled program, and
 * the plan and error helpers (api_plan.c, api_error.c). */
#ifndef SHARDC_API_INTERNAL_H
#define SHARDC_API_INTERNAL_H
#include "shardc.h"
#include "codegen/codegen.h"
#include "passes/passes.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/plan/plan.h"
#include "support/support.h"
#include <pthread.h>
#include <stdint.h>

/* The steps of the last plan made from a program (shardc_plan_step_name):
 * the report, then codegen.h's CG_PLAN_STEPS; -1 before one was made. Its
 * own memory, so that a plan made from a const program can record them;
 * the lock keeps plans made on several threads at once apart. */
enum { API_PLAN_STEPS = 1 + CG_PLAN_STEPS };
typedef struct api_plan_times {
    pthread_mutex_t lock;
    double s[API_PLAN_STEPS];
} api_plan_times;

struct shardc_program {
    pass_result res;        /* what the pass pipeline made; res.m is the
                             * logical module (or partitioned IR from a
                             * file), the program's to free */
    bool partial;           /* --passes or --stop-after: res is only what
                             * those passes made, and only "after-pass"
                             * can be emitted */
    bool report_only;       /* compiled for its report alone
                             * (shardc_options_set_report_only) */
    bool plan_only;         /* compiled for its plan and report alone
                             * (shardc_options_set_plan_only) */
    uint8_t *plan;          /* a plan-only pipeline's plan, made as its
                             * stages were (malloc'd); NULL: none */
    size_t plan_len;
    double plan_s;          /* the wall time the compile spent on it */
    char *logical_ir;       /* its text as the frontend made it (malloc'd) */
    int narchs;             /* the options' --arch */
    int arch[RT_MAX_ARCHS];
    const pass_hw *hw;      /* the options' --hw: hw_copy */
    pass_hw hw_copy;
    char hw_name[64], hw_desc[256], hw_by[4096];
    int64_t mem_limit;      /* the options' --mem-limit in bytes; 0: none */
    char *cache_dir;        /* the options' (malloc'd) */
    char *source;           /* the model's file name, as given (malloc'd) */
    bool no_reasons;        /* compiled without its explanation (emit "explain" refused) */
    double frontend_s;      /* the frontend's wall time (shardc_program_seconds) */
    api_plan_times *plan_times;
};

struct shardc_plan {
    rt_plan *p;
};

/* Every microbatch of a pipeline stage through every pass, none held once
 * (pass_options.unshared): for tests that compare the two. */
void api_options_set_unshared(shardc_options *opt, bool on);
/* The options of prog's plan, r's stages laid out and fused as r says
 * (prog->res, or the pipeline's result while a plan-only compilation
 * runs), its steps' times added to seconds ([CG_PLAN_STEPS]). */
void api_plan_options(const shardc_program *prog, const pass_result *r, double *seconds,
                      cg_plan_options *o);
/* The plan file of a compiled program (malloc'd bytes). */
shardc_status api_program_plan(const shardc_program *prog, uint8_t **bytes, size_t *len,
                               char **error);
/* The plan of prog, read back into memory as its file holds it, a
 * pipeline's stages in loop form (a failure is a bug). */
shardc_status api_program_read_plan(const shardc_program *prog, rt_plan **out, char **error);
/* `--emit schedule`: the plan's instruction lists as text. */
shardc_status api_program_schedule(const shardc_program *prog, char **text, size_t *len,
                                   char **error);
/* `--emit loops`: the tasks' order, then the plan as its file holds it
 * (rt_plan_print_loops). */
shardc_status api_program_loops(const shardc_program *prog, char **text, size_t *len,
                                char **error);
/* `--emit schedule`'s head for a pipelined program: each stage's order of
 * forward and backward microbatch steps (nothing without a pipeline). */
void api_program_tasks(const shardc_program *prog, su_buf *b);
/* The groups the report's and the trace's timeline time, one per stage
 * of the n they see: the plan's kernels (the fuse pass's); without
 * kernels, the held stages' groups the pipeline made before expanding
 * them (pass_result.estimate), or NULL (the timeline fuses each stage
 * itself). Call it with plan_times->lock held: a plan drops the estimate
 * once its report has read it (api_drop_estimate), since the plan's steps
 * after it would hold it through their peak, and a report of the program
 * after that fuses those stages again, to the same groups. */
static inline const struct pass_fusion *api_fusion(const shardc_program *prog, int n)
{
    if (prog->res.fused && prog->res.nplanned == n)
        return prog->res.fusion;
    return prog->res.nestimate == n ? prog->res.estimate : NULL;
}
/* Frees prog's estimate (plan_times->lock held). */
void api_drop_estimate(const shardc_program *prog);
/* The usage error of asking output `what` (or a plan) of a compilation
 * that ran only part of the pass pipeline. */
shardc_status api_partial(const shardc_program *prog, const char *what, char **error);
/* The usage error of asking output `what` (or "a plan") of a report-only
 * compilation. */
shardc_status api_report_only(const char *what, char **error);
/* The same of a plan-only compilation. */
shardc_status api_plan_only(const char *what, char **error);
/* A malloc'd message into *error (when error is not NULL); returns st. */
shardc_status api_fail(char **error, shardc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The runtime's failure st as the API's: its message into *error, its
 * kind mapped to a status code (returned). */
shardc_status api_status(char **error, const su_status *st);

/* Fills info from an I/O entry. */
void api_tensor_info(const rt_io *io, shardc_tensor_info *info);
/* Sets *error to NULL when error is not NULL. */
static inline void api_clear(char **error)
{
    if (error)
        *error = NULL;
}

#endif
