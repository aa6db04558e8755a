/* api_plan.c: a compiled program's plan (its bytes, with the report in
 * them) and what is read from it: `--emit schedule`. Below api.c (which
 * compiles and emits) and api_run.c (plans as objects), over the pass
 * pipeline's result, codegen and the plan reader; and `--emit loops`,
 * the plan as its file holds it. */
#include "api_internal.h"

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

shardc_status api_partial(const shardc_program *prog, const char *what, char **error)
{
    int last = prog->res.last;
    return api_fail(error, SHARDC_ERR_USAGE, "'%s' needs the whole pass pipeline, and this "
                    "compilation ran only part of it (--passes or --stop-after; it ended after "
                    "%s): only 'after-pass' can be emitted", what,
                    last >= 0 ? pass_name(last) : "no pass");
}

shardc_status api_report_only(const char *what, char **error)
{
    return api_fail(error, SHARDC_ERR_USAGE, "'%s' needs the compiled program, and this "
                    "compilation was for its report alone (shardc_options_set_report_only): "
                    "only 'report' and 'report-json' can be emitted; compile it again "
                    "without it", what);
}

shardc_status api_plan_only(const char *what, char **error)
{
    return api_fail(error, SHARDC_ERR_USAGE, "'%s' needs the compiled program, and this "
                    "compilation was for its plan alone (shardc_options_set_plan_only): only "
                    "the plan, 'report' and 'report-json' can be had; compile it again "
                    "without it", what);
}

void api_program_tasks(const shardc_program *prog, su_buf *b)
{
    const pass_pipeline *pp = &prog->res.pipe;
    if (!pp->nstages)
        return;
    const ir_module *m = pp->stage[0];
    int P = pp->nstages, V = m->pipe.chunks;
    char sched[32];
    su_buf_printf(b, "# pipeline: %s over %s, %d stages, %d microbatches",
                  pass_schedule_name(&m->pipe, sched), m->mesh.name[m->pipe.axis], P,
                  m->pipe.microbatches);
    if (V > 1)
        su_buf_printf(b, ", %d chunks per stage", V);
    su_buf_printf(b, "\n# repetitions of the pipelined repeat per %s:", V > 1 ? "chunk" : "stage");
    for (int c = 0; pp->first_rep && c < P * V; c++) {
        int a = pp->first_rep[c], z = pp->first_rep[c + 1] - 1;
        su_buf_printf(b, a == z ? " %d" : " %d-%d", a, z);
        if (V > 1)
            su_buf_printf(b, " (stage %d)", c % P);
    }
    su_buf_printf(b, "\n# each stage's steps in order: F<m> and B<m> are the forward and "
                  "backward of microbatch m%s\n", V > 1 ? " through the stage's chunk v "
                  "(F<m>.<v>)" : "");
    for (int s = 0; s < P; s++) {
        su_buf_printf(b, "# stage %d:", s);
        for (int k = 0; k < pp->ntasks[s]; k++) {
            const pass_task *t = pp->task[s][k];
            su_buf_printf(b, " %c%d", t->forward ? 'F' : 'B', t->mb);
            if (V > 1)
                su_buf_printf(b, ".%d", t->chunk / P);
        }
        su_buf_putc(b, '\n');
    }
    su_buf_putc(b, '\n');
}

/* A plan being written: what it holds, freed by api_program_plan
 * whichever way it ended. */
typedef struct plan_run {
    jmp_buf oom;
    const shardc_program *prog;
    su_buf rep;             /* the JSON report */
    uint8_t *bytes;         /* the result (malloc'd) */
    size_t len;
    su_status err;
    bool ok;
    bool placeholder;       /* modules without code (for the schedule) */
    double seconds[API_PLAN_STEPS]; /* api_plan_times's */
} plan_run;

/* The plan's report (the program's lock held: api_fusion). */
static void plan_report(void *arg)
{
    plan_run *r = arg;
    const shardc_program *prog = r->prog;
    int n;
    ir_module *const *st = pass_result_stages(&prog->res, &n);
    pass_report_on(st, n, &prog->res.pipe, prog->res.mp, api_fusion(prog, n), prog->hw,
                   prog->mem_limit, true, &r->rep);
}

void api_plan_options(const shardc_program *prog, const pass_result *r, double *seconds,
                      cg_plan_options *o)
{
    memset(o, 0, sizeof *o);
    o->mp = r->mp;
    o->fusion = r->fusion;
    o->kernels = r->fused;
    o->nvrtc.narchs = prog->narchs > 0 ? prog->narchs : 0;
    memcpy(o->nvrtc.arch, prog->arch, sizeof o->nvrtc.arch);
    o->nvrtc.cache_dir = prog->cache_dir;
    o->source = prog->source;
    o->seconds = seconds;
}

static void plan_work(void *arg)
{
    plan_run *r = arg;
    const shardc_program *prog = r->prog;
    int n;
    ir_module *const *st = pass_result_stages(&prog->res, &n);
    double t0 = su_seconds();
    pthread_mutex_lock(&prog->plan_times->lock);
    bool done = su_guarded(&r->oom, plan_report, r);
    api_drop_estimate(prog); /* read: the plan's steps would hold it through their peak */
    pthread_mutex_unlock(&prog->plan_times->lock);
    if (!done)
        su_oom(&r->oom);
    r->seconds[0] = su_seconds() - t0;
    cg_plan_options o;
    api_plan_options(prog, &prog->res, r->seconds + 1, &o);
    o.placeholder_code = r->placeholder;
    r->ok = cg_plan_bytes(st, n, r->rep.s, &o, &r->bytes, &r->len, &r->err, &r->oom);
}

/* The plan file of prog, with the JSON report in it; with placeholder,
 * its kernels' modules without code (cg_plan_options.placeholder_code). */
static shardc_status program_plan(const shardc_program *prog, bool placeholder, uint8_t **bytes,
                                  size_t *len, char **error)
{
    if (prog->partial)
        return api_partial(prog, "a plan", error);
    if (prog->report_only)
        return api_report_only("a plan", error);
    if (prog->plan) { /* made with the program (shardc_options_set_plan_only) */
        *bytes = malloc(prog->plan_len ? prog->plan_len : 1);
        if (!*bytes)
            return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
        memcpy(*bytes, prog->plan, prog->plan_len);
        *len = prog->plan_len;
        return SHARDC_OK;
    }
    plan_run r = {.prog = prog, .placeholder = placeholder};
    su_buf_init(&r.rep, &r.oom);
    bool done = su_catch(&r.oom, plan_work, &r);
    su_buf_free(&r.rep);
    if (!done) {
        free(r.bytes);
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    if (!r.ok) {
        free(r.bytes);
        if (r.err.kind == SU_NOMEM)
            return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
        if (r.err.kind == SU_USAGE) /* kernels asked for, no NVRTC here */
            return api_fail(error, SHARDC_ERR_USAGE, "%s", r.err.msg);
        return api_fail(error, SHARDC_ERR_INTERNAL, "internal error: writing the plan: %s",
                        r.err.msg);
    }
    api_plan_times *t = prog->plan_times;
    pthread_mutex_lock(&t->lock);
    memcpy(t->s, r.seconds, sizeof t->s);
    pthread_mutex_unlock(&t->lock);
    *bytes = r.bytes;
    *len = r.len;
    return SHARDC_OK;
}

shardc_status api_program_plan(const shardc_program *prog, uint8_t **bytes, size_t *len,
                               char **error)
{
    return program_plan(prog, false, bytes, len, error);
}

/* Reads the plan of prog back as its file holds it (with placeholder,
 * without compiled kernels; a pipeline's stages in loop form). A failure
 * here is the compiler's bug. */
static shardc_status read_as_written(const shardc_program *prog, bool placeholder,
                                     rt_plan **out, char **error)
{
    uint8_t *bytes;
    size_t len;
    shardc_status st = program_plan(prog, placeholder, &bytes, &len, error);
    if (st != SHARDC_OK)
        return st;
    su_status err;
    *out = rt_plan_read(bytes, len, "plan", &err);
    free(bytes);
    if (!*out && err.kind == SU_NOMEM)
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    if (!*out)
        return api_fail(error, SHARDC_ERR_INTERNAL, "internal error: the plan does not read "
                        "back: %s", err.msg);
    return SHARDC_OK;
}

shardc_status api_program_read_plan(const shardc_program *prog, rt_plan **out, char **error)
{
    return read_as_written(prog, false, out, error); /* a session expands its own stages */
}

/* `--emit schedule` (expanded, with each stage's loop form as the file
 * held it) or `--emit loops` (as the file holds it), after the tasks'
 * order. */
typedef struct text_run {
    jmp_buf oom;
    const shardc_program *prog;
    const rt_plan *p;
    const rt_loop_form *loops; /* the schedule's; NULL: print the loop form */
    su_buf b;
    char *text;             /* the result (malloc'd) */
    size_t len;
} text_run;

static void plan_text(void *arg)
{
    text_run *r = arg;
    api_program_tasks(r->prog, &r->b);
    if (r->loops)
        rt_plan_print_schedule_loops(r->p, r->loops, &r->b);
    else
        rt_plan_print_loops(r->p, &r->b);
    r->len = r->b.len;
    r->text = su_buf_take(&r->b);
}

/* The kernels' names and launches, not their code: no NVRTC. */
static shardc_status emit_plan(const shardc_program *prog, bool expanded, char **text,
                               size_t *len, char **error)
{
    rt_plan *p;
    rt_loop_form *loops = NULL;
    shardc_status st = read_as_written(prog, true, &p, error);
    if (st != SHARDC_OK)
        return st;
    if (expanded) {
        loops = calloc((size_t)p->nstages + 1, sizeof *loops);
        if (!loops) {
            rt_plan_free(p);
            return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
        }
        for (int s = 0; s < p->nstages; s++) {
            const rt_program *g = &p->stage[s];
            loops[s] = (rt_loop_form){g->nbody, g->ninstr, g->nitem, g->nmb};
        }
        su_status err;
        if (!rt_plan_expand(p, &err)) {
            rt_plan_free(p);
            free(loops);
            return err.kind == SU_NOMEM
                       ? api_fail(error, SHARDC_ERR_NOMEM, "out of memory")
                       : api_fail(error, SHARDC_ERR_INTERNAL, "internal error: the plan does "
                                  "not read back: plan: %s", err.msg);
        }
    }
    text_run r = {.prog = prog, .p = p, .loops = loops};
    su_buf_init(&r.b, &r.oom);
    bool done = su_catch(&r.oom, plan_text, &r);
    su_buf_free(&r.b);
    rt_plan_free(p);
    free(loops);
    if (!done)
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    if (len)
        *len = r.len;
    *text = r.text;
    return SHARDC_OK;
}

shardc_status api_program_schedule(const shardc_program *prog, char **text, size_t *len,
                                   char **error)
{
    return emit_plan(prog, true, text, len, error);
}

shardc_status api_program_loops(const shardc_program *prog, char **text, size_t *len,
                                char **error)
{
    return emit_plan(prog, false, text, len, error);
}
