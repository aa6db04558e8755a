/* passes.c: the pass pipeline, DESIGN.md §3's straight list, run once per
 * compilation: every later reader (the API, the report, codegen, --emit)
 * takes what it made from the pass_result. */
#include "passes.h"

#include "fuse.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[PASS_COUNT] = {
    [PASS_AUTODIFF] = "autodiff",
    [PASS_SIMPLIFY] = "simplify",
    [PASS_INPUT_INIT] = "input-init",
    [PASS_PROPAGATE] = "propagate",
    [PASS_PARTITION] = "partition",
    [PASS_PIPELINE_SPLIT] = "pipeline-split",
    [PASS_BUCKET] = "bucket",
    [PASS_MATMUL_PARTS] = "matmul-parts",
    [PASS_VERIFY] = "verify",
    [PASS_FUSE] = "fuse",
    [PASS_MEMPLAN] = "memplan",
};

const char *pass_name(pass_id id)
{
    return id >= 0 && id < PASS_COUNT ? names[id] : "?";
}

int pass_find(const char *name, size_t len)
{
    for (int i = 0; i < PASS_COUNT; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], name, len))
            return i;
    return -1;
}

const char *pass_names(void)
{
    return "autodiff, simplify, input-init, propagate, partition, pipeline-split, bucket, matmul-parts, "
           "verify, fuse, memplan";
}

ir_module *const *pass_result_stages(const pass_result *r, int *n)
{
    if (r->pipe.nstages) {
        *n = r->pipe.nstages;
        return r->pipe.stage;
    }
    *n = 1;
    return r->part ? &r->part : &r->m;
}

void pass_result_drop_estimate(pass_result *r)
{
    for (int s = 0; s < r->nestimate; s++)
        pass_fusion_free(&r->estimate[s]);
    free(r->estimate);
    r->estimate = NULL;
    r->nestimate = 0;
}

void pass_result_free(pass_result *r)
{
    for (int s = 0; s < r->nplanned; s++) {
        if (r->fusion)
            pass_fusion_free(&r->fusion[s]);
        if (r->mp)
            pass_memplan_free(&r->mp[s]);
    }
    free(r->fusion);
    free(r->mp);
    for (int s = 0; s < r->ncost; s++) {
        pass_stage_cost_free(r->cost[s]);
        if (r->lanes)
            pass_lane_free(r->lanes[s]);
    }
    free(r->cost);
    free(r->lanes);
    r->cost = NULL;
    r->lanes = NULL;
    r->ncost = 0;
    pass_result_drop_estimate(r);
    pass_pipeline_free(&r->pipe);
    ir_module_free(r->part);
    r->fusion = NULL;
    r->mp = NULL;
    r->planned = false;
    r->part = NULL;
    r->nplanned = 0;
}

/* A run of the pipeline: its options, result and messages, and what
 * --print-after prints (freed by pass_run_pipeline whichever way it ended). */
typedef struct run {
    const pass_options *o;
    pass_result *r;
    su_buf *err;
    su_loc *at;
    su_buf text;
    pass_status st;
    double handed;      /* seconds of the pass so far in o->batch, not its own */
} run;

static bool partitioned(const pass_result *r)
{
    return r->part || r->m->partitioned;
}

/* Why pass id cannot run on what the list has made so far, or NULL. */
static const char *cannot_run(const run *u, pass_id id)
{
    const pass_result *r = u->r;
    switch (id) {
    case PASS_AUTODIFF: case PASS_SIMPLIFY: case PASS_INPUT_INIT: case PASS_PROPAGATE:
        return partitioned(r) ? "it takes a logical module, and this one is partitioned" : NULL;
    case PASS_PARTITION:
        if (partitioned(r))
            return "it takes a logical module, and this one is partitioned";
        for (int i = 0; i < r->m->ops.n; i++) {
            const ir_op *op = IR_OP(r->m, i);
            for (int k = 0; k < op->nres; k++)
                if (op->res[k]->sh.kind == IR_SH_NONE)
                    return "it reads every value's sharding, and some have none (run "
                           "propagate before it)";
        }
        return NULL;
    case PASS_PIPELINE_SPLIT:
        if (!partitioned(r))
            return "it takes a partitioned module (run partition before it)";
        return r->pipe.nstages || r->m->stage >= 0 ? "the module is one stage's program already"
                                                   : NULL;
    default:
        return partitioned(r) ? NULL : "it takes a partitioned module (run partition before it)";
    }
}

/* A failure of a pass that only a bug (or invalid partitioned IR from a
 * file) makes. */
static pass_status internal(const run *u, const ir_module *m, int bad)
{
    if (bad >= 0 && bad < m->ops.n)
        *u->at = IR_OP(m, bad)->loc;
    return PASS_ERR_INTERNAL;
}

static pass_status autodiff(run *u)
{
    su_buf msg;
    su_buf_init(&msg, u->err->oom);
    bool ok = pass_autodiff(u->r->m, NULL, &msg, u->at);
    if (!ok)
        su_buf_printf(u->err, "cannot train: %s", msg.s ? msg.s : "?");
    su_buf_free(&msg);
    return ok ? PASS_OK : PASS_ERR_INPUT;
}

static pass_status simplify(run *u)
{
    pass_simplify(u->r->m);
    su_buf msg;
    su_buf_init(&msg, u->err->oom);
    bool ok = ir_verify(u->r->m, &msg);
    if (!ok)
        su_buf_printf(u->err, "internal error after simplify: %s", msg.s ? msg.s : "?");
    su_buf_free(&msg);
    return ok ? PASS_OK : PASS_ERR_INTERNAL;
}

static pass_status input_init(run *u)
{
    return pass_input_init(u->r->m, u->err) ? PASS_OK : PASS_ERR_INTERNAL;
}

static pass_status propagate(run *u)
{
    pass_explain *ex = u->o->no_reasons ? NULL : &u->r->ex;
    return pass_propagate(u->r->m, ex, u->err) ? PASS_OK : PASS_ERR_INTERNAL;
}

static pass_status partition(run *u)
{
    pass_result *r = u->r;
    bool ok = pass_partition(r->m, r->ex.why ? &r->ex : NULL, &r->part, &r->why, u->err);
    if (r->part)
        r->nwhy = r->part->next_id;
    return ok && ir_verify(r->part, u->err) ? PASS_OK : PASS_ERR_INTERNAL;
}

static pass_status share_instances(run *u);

static pass_status pipeline_split(run *u)
{
    pass_result *r = u->r;
    ir_module *m = r->part ? r->part : r->m;
    if (m->pipe.axis < 0)
        return PASS_OK;
    if (!pass_pipeline_split_held(m, &r->pipe, u->err, u->at, !u->o->unshared))
        return PASS_ERR_INPUT;
    if (u->o->unshared)
        return PASS_OK;
    pass_status st = share_instances(u);
    for (int s = 0; st == PASS_OK && s < r->pipe.nstages; s++)
        if (pass_instances_placeholders(r->pipe.stage[s])) {
            /* a stage held by the split that the proof refused (never
             * seen): the split again, every microbatch made */
            pass_pipeline_free(&r->pipe);
            if (!pass_pipeline_split_held(m, &r->pipe, u->err, u->at, false))
                return PASS_ERR_INPUT;
            st = share_instances(u);
            break;
        }
    return st;
}

/* fuse and memplan keep one entry per stage. */
static void per_stage(run *u, int n)
{
    pass_result *r = u->r;
    jmp_buf *oom = u->err->oom;
    if (!r->fusion) {
        r->fusion = su_xmalloc(oom, (size_t)n * sizeof *r->fusion);
        memset(r->fusion, 0, (size_t)n * sizeof *r->fusion);
    }
    if (!r->mp) {
        r->mp = su_xmalloc(oom, (size_t)n * sizeof *r->mp);
        memset(r->mp, 0, (size_t)n * sizeof *r->mp);
    }
    r->nplanned = n;
}

/* ---- bucket, verify, fuse and memplan: the stages on threads ----
 *
 * Each stage's pass_fuse_planned reads only its own module and writes only
 * its own fusion (and its plan), and so does each stage's memory plan;
 * the bucket pass and the verifier each rewrite or read one stage's module
 * alone. So the stages of a pipeline are bucketed, verified, fused and
 * planned at once, by a thread
 * per processor (at most STAGE_THREADS), each taking the next stage. A job
 * runs under its own allocation guard and keeps its message; the results
 * are read in stage order, so the first failing stage's message is the
 * one reported, whatever the thread count. One stage runs on the caller's
 * thread. */
enum { STAGE_THREADS = 16 };

typedef struct stage_job {
    bool (*run)(struct stage_job *j, su_buf *err);
    const ir_module *m;
    ir_module *w;       /* bucket: the stage it rewrites (m too), whose
                         * allocation failures jump to the job's guard while
                         * it runs; own, own_arena: the module's, given back */
    jmp_buf *own, *own_arena;
    struct pass_fusion *f;
    pass_memplan *mp;
    bool made;          /* memplan: mp is fuse's plan, only to check */
    bool combine;       /* bucket: combine the batches a pipeline left */
    int64_t bytes;      /* bucket: the bucket size */
    int bad;            /* verify: the op that failed the check, or -1 */
    bool held;          /* share: the stage's middle microbatches are held once */
    bool kernels;       /* report: the stage is fused (else its estimate's groups made) */
    struct pass_fusion *est; /* report: its estimate's groups */
    const pass_hw *hw;  /* report: the estimate's hardware, or NULL */
    int n;              /* report: the stages */
    ir_module **slot;   /* report: where the stage's program is held */
    pass_stage_cost **cost;  /* report: its costs, made here */
    struct pass_lane **lane; /* report: its lane, made here */
    bool (*fn)(void *ctx, int s, su_buf *err); /* pass_for_stages: stage s's job */
    void *ctx;
    int s;
    su_loc at;          /* verify: where the schedule's check failed */
    char *msg;          /* malloc'd; NULL: none, or no memory for it */
    bool ok, oom;
} stage_job;

static bool stage_run(void *arg, su_buf *err)
{
    stage_job *j = arg;
    return j->run(j, err);
}

/* su_parallel_for's item i: stage i's job. */
static void stage_item(void *ctx, int i)
{
    stage_job *j = &((stage_job *)ctx)[i];
    j->ok = su_job(stage_run, j, &j->msg, &j->oom);
}

static void free_stage_jobs(stage_job *job, int n)
{
    for (int s = 0; s < n; s++)
        free(job[s].msg);
    free(job);
}

/* Runs the n jobs; the first failing stage's message into u->err, naming
 * the stage's memory plan after it when `plan`, and its index into *bad
 * (-1: none failed). An allocation failure fails as on this thread, the
 * jobs freed; otherwise free_stage_jobs frees them. */
static void run_stage_jobs_keep(su_buf *err, stage_job *job, int n, bool plan, int *bad)
{
    int nt = n > 1 ? su_processors() : 1;
    su_parallel_for(n, nt > STAGE_THREADS ? STAGE_THREADS : nt, stage_item, job);
    for (int s = 0; s < n; s++)
        if (job[s].w) {
            job[s].w->oom = job[s].own;
            job[s].w->arena.oom = job[s].own_arena;
        }
    *bad = -1;
    for (int s = 0; s < n && *bad < 0; s++)
        if (!job[s].ok)
            *bad = s;
    if (*bad >= 0 && job[*bad].oom) {
        free_stage_jobs(job, n);
        su_oom(err->oom); /* as when the stage runs on this thread */
    }
    if (*bad >= 0) {
        su_buf_puts(err, job[*bad].msg ? job[*bad].msg : "out of memory");
        if (plan)
            su_buf_printf(err, " (the memory plan of stage %d)", *bad);
    }
}

/* As run_stage_jobs_keep, the jobs freed after: whether none failed. */
static bool run_stage_jobs(run *u, stage_job *job, int n, bool plan)
{
    int bad;
    run_stage_jobs_keep(u->err, job, n, plan, &bad);
    free_stage_jobs(job, n);
    return bad < 0;
}

/* n zeroed jobs (calloc'd; run_stage_jobs frees them). */
static stage_job *stage_jobs(run *u, int n)
{
    stage_job *job = calloc((size_t)n, sizeof *job);
    if (!job)
        su_oom(u->err->oom);
    return job;
}

static bool ctx_stage(stage_job *j, su_buf *err)
{
    return j->fn(j->ctx, j->s, err);
}

int pass_for_stages(int n, bool (*fn)(void *ctx, int s, su_buf *err), void *ctx, su_buf *err)
{
    stage_job *job = calloc((size_t)(n > 0 ? n : 1), sizeof *job);
    if (!job)
        su_oom(err->oom);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = ctx_stage, .fn = fn, .ctx = ctx, .s = s};
    int bad;
    run_stage_jobs_keep(err, job, n, false, &bad);
    free_stage_jobs(job, n);
    return bad;
}

static bool fuse_stage(stage_job *j, su_buf *err)
{
    if (!j->w)
        return pass_fuse_planned(j->m, j->f, j->mp, err);
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    return pass_fuse_planned_held(j->w, j->f, j->mp, err);
}

/* The n stages' groups made: they are for the targets' oldest
 * architecture (which the memory plan does not read). */
static pass_status fused(run *u, int n)
{
    for (int s = 0; s < n; s++)
        u->r->fusion[s].min_arch = u->o->min_arch;
    u->r->fused = true;
    u->r->planned = true;
    return PASS_OK;
}

/* The groups as the plan runs them: each run of optimizer groups kept as
 * one kernel only where that does not raise the arena (pass_fuse_planned,
 * whose last plan memplan keeps). */
static pass_status fuse(run *u)
{
    int n;
    ir_module *const *st = pass_result_stages(u->r, &n);
    per_stage(u, n);
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++) {
        job[s] = (stage_job){.run = fuse_stage, .m = st[s], .f = &u->r->fusion[s],
                             .mp = &u->r->mp[s]};
        if (st[s]->shared) { /* walked held, then expanded (pass_fuse_planned_held) */
            job[s].w = st[s];
            job[s].own = st[s]->oom;
            job[s].own_arena = st[s]->arena.oom;
        }
    }
    if (!run_stage_jobs(u, job, n, false))
        return PASS_ERR_INTERNAL;
    return fused(u, n);
}

/* Each stage's plan (fuse's, when it made one: the plan its groups were
 * chosen by, which is the plan of those groups) and its check. */
static bool plan_stage(stage_job *j, su_buf *err)
{
    return (j->made || pass_plan_memory_fused(j->m, j->f, j->mp, err)) &&
           pass_memplan_check(j->m, j->mp, err);
}

static pass_status memplan(run *u)
{
    pass_result *r = u->r;
    int n;
    ir_module *const *st = pass_result_stages(r, &n);
    bool fused = r->fused, made = r->planned;
    per_stage(u, n);
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = plan_stage, .m = st[s], .f = fused ? &r->fusion[s] : NULL,
                             .mp = &r->mp[s], .made = made};
    if (!run_stage_jobs(u, job, n, true))
        return PASS_ERR_INTERNAL;
    r->planned = true;
    return PASS_OK;
}

static bool bucket_stage(stage_job *j, su_buf *err)
{
    j->w->oom = err->oom; /* run_stage_jobs_keep gives the module its own back */
    j->w->arena.oom = err->oom;
    if (j->combine) /* the partitioner left pipelines' batches */
        pass_combine_batch(j->w);
    pass_fold_transposes(j->w);
    /* a pipeline stage's module (the split's, which nothing outside it
     * points into): what the split, the combining and the folding dropped
     * (a fifth of its values) goes, and the ops lie in their order. Not
     * the partitioned module, whose arena holds the partitioner's reasons */
    if (j->combine)
        ir_module_compact(j->w);
    pass_join_sums(j->w);
    pass_sink_siblings(j->w);
    pass_norm_cols(j->w);
    return ir_verify(j->w, err) && pass_bucket(j->w, j->bytes, err);
}

static pass_status bucket(run *u)
{
    int n;
    ir_module *const *st = pass_result_stages(u->r, &n);
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = bucket_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom, .combine = u->r->pipe.nstages > 0,
                             .bytes = u->o->bucket_bytes};
    return run_stage_jobs(u, job, n, false) ? PASS_OK : PASS_ERR_INTERNAL;
}

/* ---- a pipeline stage's middle microbatches, held once from the split
 * to the verifier (instances.c) ---- */

static bool share_stage(stage_job *j, su_buf *err)
{
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    j->held = pass_share_instances(j->w);
    return true;
}

static pass_status share_instances(run *u)
{
    int n = u->r->pipe.nstages;
    ir_module **st = u->r->pipe.stage;
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = share_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom};
    int bad;
    run_stage_jobs_keep(u->err, job, n, false, &bad);
    for (int s = 0; s < n && bad < 0; s++)
        u->r->pipe.nshared += job[s].held;
    free_stage_jobs(job, n);
    return bad < 0 ? PASS_OK : PASS_ERR_INTERNAL;
}

static bool expand_stage(stage_job *j, su_buf *err)
{
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    return pass_expand_instances(j->w, err);
}

/* Without kernels, the estimate's groups of each held stage (what
 * pass_timeline would otherwise make of it expanded, from a walk of every
 * op): walked held, which expands it. */
static bool estimate_stage(stage_job *j, su_buf *err)
{
    if (!j->w->shared)
        return true;
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    return pass_fuse_held(j->w, j->f, err);
}

/* Whether a stage of r's pipeline is held once. */
static bool any_held(const pass_result *r)
{
    for (int s = 0; s < r->pipe.nstages; s++)
        if (r->pipe.stage[s]->shared)
            return true;
    return false;
}

static pass_status estimate_groups(run *u)
{
    pass_result *r = u->r;
    int n = r->pipe.nstages;
    ir_module **st = r->pipe.stage;
    if (!any_held(r) || r->estimate)
        return PASS_OK;
    r->estimate = su_xmalloc(u->err->oom, (size_t)n * sizeof *r->estimate);
    memset(r->estimate, 0, (size_t)n * sizeof *r->estimate);
    r->nestimate = n;
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = estimate_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom, .f = &r->estimate[s]};
    return run_stage_jobs(u, job, n, false) ? PASS_OK : PASS_ERR_INTERNAL;
}

/* Every stage whole again (what every pass after the verifier's per-stage
 * checks, and every reader of the result, takes). */
static pass_status expand_instances(run *u)
{
    int n = u->r->pipe.nstages;
    ir_module **st = u->r->pipe.stage;
    if (!any_held(u->r))
        return PASS_OK;
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = expand_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom};
    return run_stage_jobs(u, job, n, false) ? PASS_OK : PASS_ERR_INTERNAL;
}

/* ---- a report-only compilation: each stage costed, then dropped ---- */

typedef struct shell_make {
    const ir_module *m;
    ir_module *e;
} shell_make;

static void shell_work(void *arg)
{
    shell_make *k = arg;
    for (int a = 0; a < k->m->mesh.naxes; a++)
        k->e->mesh.name[a] = su_strdup(&k->e->arena, k->m->mesh.name[a]);
}

/* What is left of stage program m once its report's costs are made: an
 * empty program with its mesh (the names its own), pipeline and stage. */
static ir_module *stage_shell(const ir_module *m, jmp_buf *oom)
{
    ir_module *e = ir_module_new(oom);
    e->mesh = m->mesh;
    e->pipe = m->pipe;
    e->partitioned = m->partitioned;
    e->stage = m->stage;
    shell_make k = {m, e};
    if (!su_guarded(oom, shell_work, &k)) { /* e is no one's yet */
        ir_module_free(e);
        su_oom(oom);
    }
    return e;
}

/* Stage s: fused and planned as the fuse pass would (with kernels), or
 * its estimate's groups made and planned as the memplan pass would; the
 * plan checked; its report's costs and lane made. */
static bool cost_stage(stage_job *j, su_buf *err)
{
    ir_module *m = j->w;
    m->oom = err->oom; /* as bucket_stage */
    m->arena.oom = err->oom;
    const struct pass_fusion *f = NULL;
    if (j->kernels) {
        if (!(m->shared ? pass_fuse_planned_held(m, j->f, j->mp, err)
                        : pass_fuse_planned(m, j->f, j->mp, err)))
            return false;
        f = j->f;
    } else {
        if (m->shared && !pass_fuse_held(m, j->est, err))
            return false;
        if (!pass_expand_instances(m, err) || !pass_plan_memory_fused(m, NULL, j->mp, err))
            return false;
        f = j->est;
    }
    if (!pass_memplan_check(m, j->mp, err))
        return false;
    *j->cost = pass_stage_cost_make(m, j->s, j->mp, err->oom);
    return !j->hw || (*j->lane = pass_lane_make(m, j->s, j->n, f, j->mp, j->hw, err));
}

/* Stage s once costed (cost_stage): its groups, its plan's tables and its
 * program go (the plan's figures stay in mp). */
static bool drop_stage(stage_job *j, su_buf *err)
{
    ir_module *m = j->w;
    m->oom = err->oom; /* as bucket_stage */
    m->arena.oom = err->oom;
    pass_fusion_free(j->kernels ? j->f : j->est);
    pass_memplan kept = pass_memplan_figures(j->mp);
    pass_memplan_free(j->mp);
    *j->mp = kept;
    ir_module *e = stage_shell(m, err->oom);
    *j->slot = e;
    j->w = e; /* given the program's oom back (run_stage_jobs_keep) */
    j->own_arena = j->own;
    ir_module_free(m);
    return true;
}

static bool report_stage(stage_job *j, su_buf *err)
{
    return cost_stage(j, err) && drop_stage(j, err);
}

/* Whether the run is a report-only compilation of a pipeline's stages
 * (pass_options.report_only). */
static bool reporting(const run *u)
{
    const pass_options *o = u->o;
    return o->report_only && !o->only && !o->print_after && o->stop_after < 0 &&
           u->r->pipe.nstages > 0;
}

/* Step `run` (report_stage, cost_stage or drop_stage) of stages s0 to
 * s1 - 1, a thread each; a failure's message names the stage's memory
 * plan (but drop_stage's, an allocation's). */
static bool report_step(run *u, bool (*step)(stage_job *, su_buf *), int s0, int s1)
{
    pass_result *r = u->r;
    ir_module **st = r->pipe.stage;
    stage_job *job = stage_jobs(u, s1 - s0);
    for (int s = s0; s < s1; s++)
        job[s - s0] = (stage_job){.run = step, .m = st[s], .w = st[s], .own = st[s]->oom,
                                  .own_arena = st[s]->arena.oom, .f = &r->fusion[s],
                                  .mp = &r->mp[s], .kernels = u->o->kernels,
                                  .est = r->estimate ? &r->estimate[s] : NULL, .hw = u->o->hw,
                                  .n = r->pipe.nstages, .s = s, .slot = &st[s],
                                  .cost = &r->cost[s],
                                  .lane = r->lanes ? &r->lanes[s] : NULL};
    int bad;
    run_stage_jobs_keep(u->err, job, s1 - s0, false, &bad);
    free_stage_jobs(job, s1 - s0);
    if (bad >= 0 && step != drop_stage)
        su_buf_printf(u->err, " (the memory plan of stage %d)", s0 + bad);
    return bad < 0;
}

/* The fuse pass (with kernels) or the memplan pass of a report-only
 * compilation: every stage costed and dropped (report_stage), or with
 * o->batch, costed, handed on and dropped a batch at a time. */
static pass_status report_stages(run *u)
{
    pass_result *r = u->r;
    int n = r->pipe.nstages;
    ir_module **st = r->pipe.stage;
    jmp_buf *oom = u->err->oom;
    per_stage(u, n);
    if (!u->o->kernels && !r->estimate) {
        r->estimate = su_xmalloc(oom, (size_t)n * sizeof *r->estimate);
        memset(r->estimate, 0, (size_t)n * sizeof *r->estimate);
        r->nestimate = n;
    }
    r->cost = su_xmalloc(oom, (size_t)n * sizeof *r->cost);
    memset(r->cost, 0, (size_t)n * sizeof *r->cost);
    r->ncost = n;
    if (u->o->hw) {
        r->lanes = su_xmalloc(oom, (size_t)n * sizeof *r->lanes);
        memset(r->lanes, 0, (size_t)n * sizeof *r->lanes);
    }
    const pass_options *o = u->o;
    if (!o->batch) { /* each stage costed and dropped on its thread */
        if (!report_step(u, report_stage, 0, n))
            return PASS_ERR_INTERNAL;
    }
    int batch = o->batch_stages > 0 ? o->batch_stages : n;
    for (int s0 = 0; o->batch && s0 < n; s0 += batch) {
        int s1 = s0 + batch < n ? s0 + batch : n;
        if (!report_step(u, cost_stage, s0, s1))
            return PASS_ERR_INTERNAL; /* the stages not dropped are r's */
        for (int s = s0; s < s1 && o->kernels; s++)
            r->fusion[s].min_arch = o->min_arch; /* as fused() */
        r->fused = o->kernels;
        double t0 = su_seconds();
        bool ok = o->batch(o->batch_ctx, st, n, s0, s1, r, u->err);
        u->handed += su_seconds() - t0;
        if (!ok || !report_step(u, drop_stage, s0, s1))
            return PASS_ERR_INTERNAL;
    }
    r->fused = false; /* its groups are gone */
    r->planned = true;
    return PASS_OK;
}

static bool parts_stage(stage_job *j, su_buf *err)
{
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    pass_matmul_parts(j->w);
    return true;
}

static pass_status matmul_parts(run *u)
{
    int n;
    ir_module *const *st = pass_result_stages(u->r, &n);
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = parts_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom};
    return run_stage_jobs(u, job, n, false) ? PASS_OK : PASS_ERR_INTERNAL;
}

static bool verify_stage(stage_job *j, su_buf *err)
{
    j->w->oom = err->oom; /* as bucket_stage */
    j->w->arena.oom = err->oom;
    return ir_verify_at(j->m, err, &j->bad) && pass_instances_verify(j->m, err, &j->bad) &&
           pass_verify_schedule(j->m, err, &j->at);
}

static pass_status verify(run *u)
{
    int n, first;
    ir_module *const *st = pass_result_stages(u->r, &n);
    stage_job *job = stage_jobs(u, n);
    for (int s = 0; s < n; s++)
        job[s] = (stage_job){.run = verify_stage, .m = st[s], .w = st[s], .own = st[s]->oom,
                             .own_arena = st[s]->arena.oom, .bad = -1};
    run_stage_jobs_keep(u->err, job, n, false, &first);
    int bad = first >= 0 ? job[first].bad : -1;
    su_loc at = first >= 0 ? job[first].at : (su_loc){0, 0};
    free_stage_jobs(job, n);
    if (first >= 0) {
        if (at.line) /* the schedule's check says where */
            *u->at = at;
        return internal(u, st[first], bad);
    }
    /* held stages' middle microbatches' sends and receives too */
    return n > 1 && !pass_verify_p2p(st, n, u->err) ? PASS_ERR_INTERNAL : PASS_OK;
}

static pass_status (*const runs[PASS_COUNT])(run *) = {
    [PASS_AUTODIFF] = autodiff,
    [PASS_SIMPLIFY] = simplify,
    [PASS_INPUT_INIT] = input_init,
    [PASS_PROPAGATE] = propagate,
    [PASS_PARTITION] = partition,
    [PASS_PIPELINE_SPLIT] = pipeline_split,
    [PASS_BUCKET] = bucket,
    [PASS_MATMUL_PARTS] = matmul_parts,
    [PASS_VERIFY] = verify,
    [PASS_FUSE] = fuse,
    [PASS_MEMPLAN] = memplan,
};

void pass_result_print(const pass_result *r, pass_id id, su_buf *b)
{
    if (id <= PASS_PROPAGATE) {
        ir_print(r->m, b);
    } else if (id == PASS_PARTITION) {
        ir_print(r->part, b);
    } else {
        int n;
        ir_module *const *st = pass_result_stages(r, &n);
        for (int s = 0; s < n; s++) {
            if (n > 1)
                su_buf_printf(b, "%s// ---- stage %d of %d ----\n", s ? "\n" : "", s, n);
            if (id == PASS_FUSE)
                pass_fusion_print(st[s], &r->fusion[s], b);
            else if (id == PASS_MEMPLAN)
                pass_memplan_print(st[s], &r->mp[s], b);
            else
                ir_print(st[s], b);
        }
    }
}

static void print_after(run *u, pass_id id)
{
    su_buf *b = &u->text;
    b->len = 0;
    if (b->s)
        b->s[0] = 0;
    pass_result_print(u->r, id, b);
    u->o->print(names[id], b->s ? b->s : "", b->len, u->o->print_user);
}

/* Whether the whole list runs pass id: the logical passes only on a
 * logical module, fuse only for a plan with kernels, matmul-parts only
 * when asked for. */
static bool in_list(const run *u, pass_id id)
{
    if (id <= PASS_PARTITION)
        return !partitioned(u->r);
    if (id == PASS_MATMUL_PARTS)
        return u->o->f32_parts;
    return id != PASS_FUSE || u->o->kernels;
}

/* Pass id, begun at t0, has ended with u->st: its time, and whether it
 * succeeded (else it is the one that failed, with a message). */
static bool ended(run *u, pass_id id, double t0)
{
    pass_result *r = u->r;
    r->seconds[id] = su_seconds() - t0 - u->handed; /* not the caller's batch's */
    u->handed = 0;
    if (u->st != PASS_OK) {
        r->failed = id;
        if (!u->err->len)
            su_buf_printf(u->err, "the pass %s failed", names[id]);
        return false;
    }
    r->last = id;
    return true;
}

static void pipeline(void *arg)
{
    run *u = arg;
    const pass_options *o = u->o;
    pass_result *r = u->r;
    u->st = PASS_OK;
    for (int id = 0; id < PASS_COUNT; id++) {
        if (o->only ? !(o->only & 1u << id) : !in_list(u, id))
            continue;
        const char *why = cannot_run(u, id);
        if (why) {
            r->failed = id;
            su_buf_printf(u->err, "the pass %s cannot run here: %s", names[id], why);
            u->st = o->only ? PASS_ERR_USAGE : PASS_ERR_INTERNAL;
            return;
        }
        double t0 = su_seconds();
        if (reporting(u) && id > PASS_VERIFY) {
            /* each stage costed and dropped: by the fuse pass with
             * kernels, else by the memplan pass */
            u->st = id == (o->kernels ? PASS_FUSE : PASS_MEMPLAN) ? report_stages(u) : PASS_OK;
            if (!ended(u, id, t0))
                return;
            continue;
        }
        /* fuse walks a held stage as it is, then expands it; without
         * kernels the estimate's groups are walked so before the rest */
        u->st = id > PASS_VERIFY && !o->kernels ? estimate_groups(u) : PASS_OK;
        if (u->st == PASS_OK)
            u->st = id > PASS_VERIFY && id != PASS_FUSE ? expand_instances(u) : PASS_OK;
        if (u->st == PASS_OK)
            u->st = runs[id](u);
        /* what is printed, or the last pass's, is the whole program */
        bool shown = (o->print && (o->print_after & 1u << id)) || id == o->stop_after;
        if (u->st == PASS_OK && shown)
            u->st = expand_instances(u);
        if (!ended(u, id, t0))
            return;
        if (o->print && (o->print_after & 1u << id))
            print_after(u, id);
        if (id == o->stop_after)
            return;
    }
    if ((u->st = expand_instances(u)) != PASS_OK)
        r->failed = r->last;
}

pass_status pass_run_pipeline(ir_module *m, const pass_options *o, pass_result *r,
                              su_buf *err, su_loc *at)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->last = r->failed = -1;
    for (int id = 0; id < PASS_COUNT; id++)
        r->seconds[id] = -1;
    *at = (su_loc){0, 0};
    run u = {.o = o, .r = r, .err = err, .at = at};
    su_buf_init(&u.text, err->oom);
    bool done = su_guarded(err->oom, pipeline, &u);
    su_buf_free(&u.text);
    if (!done)
        su_oom(err->oom);
    return u.st;
}
