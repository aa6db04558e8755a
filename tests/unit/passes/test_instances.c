/* test_instances.c: a pipeline stage's middle microbatches held once from
 * the split to the verifier (passes/instances.c) change nothing. For each
 * schedule, microbatch count and mesh below, the program compiled so and
 * the program compiled with every microbatch through every pass
 * (api_options_set_unshared) print the same stages, op for op with the
 * same task and microbatch stamps, and make the same plan, byte for byte;
 * and the stages are held once where the test says they can be (every
 * stage of the examples from 5 microbatches on; none with 4, nor with
 * --unroll, whose ops carry no task). A stage where an op made once reads
 * a middle microbatch's value stays unrolled, and still makes the same
 * plan. With kernels (for sm_80, not compiled), the fuse pass walks a held
 * stage as it is and expands it (pass_fuse_walk_held): the groups
 * (`--emit fused-ir`), memory plans and reports are the same text as the
 * unshared compile's, and every held stage's groups came from the held
 * walk. The proof itself is tested on stage programs made by hand, each
 * with one flaw it must find, and the held walk on one whose middle
 * microbatches read a value microbatch 2 keeps in a kernel's registers
 * but for them. A report-only compilation (shardc_options_set_report_only),
 * which costs each stage and drops its program as it goes, writes the
 * same reports (text and JSON, with kernels and without, with a memory
 * limit), its stages' programs gone, and refuses every other output. So
 * does a plan-only compilation (shardc_options_set_plan_only), which
 * builds the plan a batch of stages at a time as it makes them: the same
 * plan, byte for byte, with batches of one stage and of the machine's
 * processors, with kernels (once) and without, with --unroll, and the
 * same failure over a memory limit. */
#include "shardc.h"
#include "../../api/api_internal.h"
#include "../../passes/fuse.h"
#include "../../codegen/cuda.h"
#include "check.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>

typedef struct compiled {
    shardc_program *prog;
    char *stages;           /* emit "stage-ir" */
    uint8_t *plan;
    size_t len;
    char *fused, *plans, *report; /* with kernels: fused-ir, the memory plans,
                                   * report-json */
    int held_walks;         /* stages whose groups came from the held walk */
    /* without kernels: the report before the plan and after it; the
     * stages with the estimate's groups (pass_result.estimate) before the
     * plan, those groups the same as pass_fuse of the stage, and whether
     * the plan dropped them */
    char *report_before, *report_after;
    int estimated;
    bool estimate_same, dropped;
} compiled;

static void set(shardc_options *o, const char *mesh, const char *const *defs, bool kernels)
{
    char *err = NULL;
    CHECK(shardc_options_set_mesh(o, mesh, &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(o, kernels ? "sm_80" : "none", &err) == SHARDC_OK);
    for (int i = 0; defs && defs[i]; i += 2)
        CHECK(shardc_options_define(o, defs[i], atoll(defs[i + 1]), &err) == SHARDC_OK);
    shardc_free(err);
}

static jmp_buf oom;

/* The stages' memory plans as text. */
static char *memory_plans(const shardc_program *prog)
{
    int n;
    ir_module *const *st = pass_result_stages(&prog->res, &n);
    su_buf b;
    su_buf_init(&b, &oom);
    for (int s = 0; s < n && s < prog->res.nplanned; s++)
        pass_memplan_print(st[s], &prog->res.mp[s], &b);
    return b.s ? b.s : strdup("");
}

/* A value as the op making it and which result: the same in two
 * compiles of one program, whatever the value ids. */
static long where(const int *def, const ir_value *v)
{
    return v ? (long)def[v->id] * 16 + v->res : -1;
}

static int *def_of(const ir_module *m)
{
    int *def = malloc(((size_t)m->next_id + 1) * sizeof *def);
    for (int i = 0; i < m->ops.n; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            def[IR_OP(m, i)->res[r]->id] = i;
    return def;
}

static bool groups_same(const pass_fgroup *g, const pass_fgroup *h, const int *dg,
                        const int *dh)
{
    bool ok = g->kind == h->kind && g->nops == h->nops && g->reduce == h->reduce &&
              g->anchor == h->anchor && g->epilogue == h->epilogue && g->nin == h->nin &&
              g->nout == h->nout && g->nparts == h->nparts && g->run == h->run &&
              !strcmp(g->name, h->name) && where(dg, g->bias) == where(dh, h->bias) &&
              where(dg, g->residual) == where(dh, h->residual);
    for (int i = 0; ok && i < g->nops; i++)
        ok = g->ops[i] == h->ops[i];
    for (int i = 0; ok && i < g->nin; i++)
        ok = where(dg, g->in[i]) == where(dh, h->in[i]);
    for (int i = 0; ok && i < g->nout; i++)
        ok = where(dg, g->out[i]) == where(dh, h->out[i]);
    for (int r = 0; ok && r < g->nparts; r++)
        ok = groups_same(&g->parts[r], &h->parts[r], dg, dh);
    return ok;
}

/* Two fusions of one program, compiled two ways: the same groups, by op
 * index and by the ops making the values they read and store. */
static bool fusion_same(const ir_module *ma, const pass_fusion *fa, const ir_module *mb,
                        const pass_fusion *fb)
{
    if (ma->ops.n != mb->ops.n || fa->ngroups != fb->ngroups ||
        fa->no_register_reuse != fb->no_register_reuse || fa->nruns != fb->nruns)
        return false;
    int *da = def_of(ma), *db = def_of(mb);
    bool ok = true;
    for (int i = 0; ok && i < ma->ops.n; i++) {
        ok = fa->group_of[i] == fb->group_of[i];
        const ir_op *x = IR_OP(ma, i), *y = IR_OP(mb, i);
        for (int r = 0; ok && r < x->nres; r++)
            ok = fa->stored[x->res[r]->id] == fb->stored[y->res[r]->id];
    }
    for (int k = 0; ok && k < fa->ngroups; k++)
        ok = groups_same(&fa->groups[k], &fb->groups[k], da, db);
    free(da);
    free(db);
    return ok;
}

/* With kernels: the groups, plans and report, no plan (NVRTC). */
static compiled compile_kernels(const char *name, const char *text, const char *mesh,
                                const char *const *defs, bool unshared)
{
    compiled c = {0};
    shardc_options *o = shardc_options_new();
    set(o, mesh, defs, true);
    api_options_set_unshared(o, unshared);
    char *err = NULL;
    if (shardc_compile_string(o, name, text, strlen(text), &c.prog, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "fused-ir", &c.fused, NULL, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "report-json", &c.report, NULL, &err) != SHARDC_OK) {
        CHECK(!"compiles with kernels");
        fprintf(stderr, "  %s on %s: %s\n", name, mesh, err ? err : "?");
    } else {
        c.plans = memory_plans(c.prog);
        for (int s = 0; s < c.prog->res.nplanned; s++)
            c.held_walks += c.prog->res.fusion[s].held_walk;
    }
    shardc_free(err);
    shardc_options_free(o);
    return c;
}

static compiled compile(const char *name, const char *text, const char *mesh,
                        const char *const *defs, bool unshared, bool unroll)
{
    compiled c = {0};
    shardc_options *o = shardc_options_new();
    set(o, mesh, defs, false);
    api_options_set_unshared(o, unshared);
    shardc_options_set_unroll(o, unroll);
    char *err = NULL;
    if (shardc_compile_string(o, name, text, strlen(text), &c.prog, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "stage-ir", &c.stages, NULL, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "report-json", &c.report_before, NULL, &err) !=
            SHARDC_OK) {
        CHECK(!"compiles");
        fprintf(stderr, "  %s on %s: %s\n", name, mesh, err ? err : "?");
        shardc_free(err);
        shardc_options_free(o);
        return c;
    }
    /* the held stages' groups for the estimate, walked held: a walk of
     * every op of the expanded stage makes the same */
    const pass_result *r = &c.prog->res;
    c.estimate_same = true;
    for (int s = 0; s < r->nestimate && s < r->pipe.nstages; s++) {
        const ir_module *m = r->pipe.stage[s];
        if (r->estimate[s].nops != m->ops.n)
            continue;
        c.estimated++;
        pass_fusion f;
        su_buf e;
        su_buf_init(&e, &oom);
        CHECK(pass_fuse(m, &f, &e));
        c.estimate_same = c.estimate_same && fusion_same(m, &r->estimate[s], m, &f);
        pass_fusion_free(&f);
        su_buf_free(&e);
    }
    if (api_program_plan(c.prog, &c.plan, &c.len, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "report-json", &c.report_after, NULL, &err) != SHARDC_OK) {
        CHECK(!"writes its plan");
        fprintf(stderr, "  %s on %s: %s\n", name, mesh, err ? err : "?");
    }
    c.dropped = !c.prog->res.estimate && !c.prog->res.nestimate;
    shardc_free(err);
    shardc_options_free(o);
    return c;
}

static bool same_text(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* The program compiled for its report alone and compiled whole: the same
 * report and report-json, the report-only compile's stage programs gone
 * (each costed and dropped), and its other outputs refused. */
static void report_only_same(const char *name, const char *text, const char *mesh,
                             const char *const *defs, bool kernels)
{
    char *rep[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [report only][json] */
    shardc_program *p[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        shardc_options *o = shardc_options_new();
        set(o, mesh, defs, kernels);
        char *err = NULL;
        CHECK(shardc_options_set_mem_limit(o, "1GiB", &err) == SHARDC_OK);
        shardc_options_set_report_only(o, k);
        if (shardc_compile_string(o, name, text, strlen(text), &p[k], &err) != SHARDC_OK ||
            shardc_program_emit(p[k], "report", &rep[k][0], NULL, &err) != SHARDC_OK ||
            shardc_program_emit(p[k], "report-json", &rep[k][1], NULL, &err) != SHARDC_OK) {
            CHECK(!"compiles for its report");
            fprintf(stderr, "  %s on %s (report only %d): %s\n", name, mesh, k,
                    err ? err : "?");
        }
        shardc_free(err);
        shardc_options_free(o);
    }
    CHECK(same_text(rep[0][0], rep[1][0]));
    CHECK(same_text(rep[0][1], rep[1][1]));
    if (!same_text(rep[0][0], rep[1][0]) || !same_text(rep[0][1], rep[1][1]))
        fprintf(stderr, "  %s on %s (kernels %d): the report-only compile's report differs\n",
                name, mesh, kernels);
    if (p[1]) {
        const pass_result *r = &p[1]->res;
        int gone = 0;
        for (int s = 0; s < r->pipe.nstages; s++)
            gone += r->pipe.stage[s]->ops.n == 0;
        CHECK_INT(gone, r->pipe.nstages);
        CHECK_INT(r->ncost, r->pipe.nstages);
        char *out = NULL, *err = NULL;
        CHECK(shardc_program_emit(p[1], "stage-ir", &out, NULL, &err) == SHARDC_ERR_USAGE);
        CHECK(out == NULL && err && strstr(err, "'stage-ir' needs the compiled program"));
        shardc_free(err);
        err = NULL;
        uint8_t *plan = NULL;
        size_t len = 0;
        CHECK(api_program_plan(p[1], &plan, &len, &err) == SHARDC_ERR_USAGE);
        CHECK(plan == NULL && err && strstr(err, "'a plan' needs the compiled program"));
        shardc_free(err);
    }
    for (int k = 0; k < 2; k++) {
        shardc_program_free(p[k]);
        shardc_free(rep[k][0]);
        shardc_free(rep[k][1]);
    }
}

/* Compiled with mem_limit (NULL: none), for its plan alone or not; its
 * plan (or the failure's status and message) and reports. */
typedef struct planned {
    shardc_program *p;
    shardc_status st;
    char *err;
    uint8_t *plan;
    size_t len;
    char *rep, *json;
} planned;

static planned plan_of(const char *name, const char *text, const char *mesh,
                       const char *const *defs, bool kernels, bool unroll, const char *limit,
                       bool alone)
{
    planned c = {0};
    shardc_options *o = shardc_options_new();
    set(o, mesh, defs, kernels);
    shardc_options_set_unroll(o, unroll);
    const char *cache = getenv("SHARDC_CACHE_DIR");
    if (cache && *cache)
        CHECK(shardc_options_set_cache_dir(o, cache, &c.err) == SHARDC_OK);
    if (limit)
        CHECK(shardc_options_set_mem_limit(o, limit, &c.err) == SHARDC_OK);
    shardc_options_set_plan_only(o, alone);
    c.st = shardc_compile_string(o, name, text, strlen(text), &c.p, &c.err);
    if (c.st == SHARDC_OK)
        c.st = api_program_plan(c.p, &c.plan, &c.len, &c.err);
    if (c.st == SHARDC_OK)
        c.st = shardc_program_emit(c.p, "report", &c.rep, NULL, &c.err);
    if (c.st == SHARDC_OK)
        c.st = shardc_program_emit(c.p, "report-json", &c.json, NULL, &c.err);
    shardc_options_free(o);
    return c;
}

static void planned_free(planned *c)
{
    shardc_program_free(c->p);
    shardc_free(c->err);
    free(c->plan);
    shardc_free(c->rep);
    shardc_free(c->json);
}

/* The program compiled for its plan alone (shardc_options_set_plan_only:
 * a pipeline's stages built into the plan a batch at a time, with
 * `threads` processors, 0: the machine's, and dropped) and compiled
 * whole: the same plan, byte for byte, and the same reports; its stage
 * programs gone, its plan made during the compile, its other outputs
 * refused; and over a memory limit, the same failure. */
static void plan_only_same(const char *name, const char *text, const char *mesh,
                           const char *const *defs, bool kernels, bool unroll, int threads)
{
    char was[32] = "";
    const char *env = getenv("SHARDC_THREADS");
    snprintf(was, sizeof was, "%s", env ? env : "");
    for (int limited = 0; limited < 2; limited++) {
        const char *limit = limited ? "64KiB" : "1GiB";
        planned c[2];
        c[0] = plan_of(name, text, mesh, defs, kernels, unroll, limit, false);
        if (threads > 0) {
            char t[16];
            snprintf(t, sizeof t, "%d", threads);
            setenv("SHARDC_THREADS", t, 1);
        }
        c[1] = plan_of(name, text, mesh, defs, kernels, unroll, limit, true);
        if (env)
            setenv("SHARDC_THREADS", was, 1);
        else
            unsetenv("SHARDC_THREADS");
        bool same = c[0].st == c[1].st && c[0].len == c[1].len &&
                    (!c[0].len || !memcmp(c[0].plan, c[1].plan, c[0].len)) &&
                    (c[0].st != SHARDC_OK ||
                     (same_text(c[0].rep, c[1].rep) && same_text(c[0].json, c[1].json))) &&
                    (c[0].st == SHARDC_OK || same_text(c[0].err, c[1].err));
        CHECK(same);
        CHECK_INT(c[0].st, limited ? SHARDC_ERR_INPUT : SHARDC_OK);
        if (!same || c[0].st != (limited ? SHARDC_ERR_INPUT : SHARDC_OK))
            fprintf(stderr, "  %s on %s (kernels %d, unroll %d, threads %d, limit %s): the "
                    "plan-only compile differs: %d %s / %d %s\n", name, mesh, kernels, unroll,
                    threads, limit, c[0].st, c[0].err ? c[0].err : "", c[1].st,
                    c[1].err ? c[1].err : "");
        if (!limited && c[1].st == SHARDC_OK) {
            const pass_result *r = &c[1].p->res;
            int gone = 0;
            for (int s = 0; s < r->pipe.nstages; s++)
                gone += r->pipe.stage[s]->ops.n == 0;
            CHECK_INT(gone, r->pipe.nstages);
            CHECK(shardc_program_seconds(c[1].p, "plan") >= 0);
            CHECK(shardc_program_seconds(c[0].p, "plan") < 0);
            CHECK(shardc_program_seconds(c[1].p, "plan/lowering") >= 0);
            char *out = NULL, *err = NULL;
            CHECK(shardc_program_emit(c[1].p, "stage-ir", &out, NULL, &err) ==
                  SHARDC_ERR_USAGE);
            CHECK(out == NULL && err && strstr(err, "was for its plan alone"));
            shardc_free(err);
            err = NULL;
            CHECK(shardc_program_emit(c[1].p, "schedule", &out, NULL, &err) ==
                  SHARDC_ERR_USAGE);
            shardc_free(err);
            uint8_t *again = NULL; /* the plan asked for again */
            size_t len = 0;
            CHECK(api_program_plan(c[1].p, &again, &len, NULL) == SHARDC_OK);
            CHECK(again && len == c[1].len && !memcmp(again, c[1].plan, len));
            free(again);
        }
        planned_free(&c[0]);
        planned_free(&c[1]);
    }
}

static void done(compiled *c)
{
    shardc_program_free(c->prog);
    shardc_free(c->stages);
    free(c->plan);
    shardc_free(c->fused);
    shardc_free(c->report);
    shardc_free(c->report_before);
    shardc_free(c->report_after);
    free(c->plans);
}

/* The stages the last compare's held compile split held
 * (pass_pipeline_split_held: their middle microbatches' tasks never made). */
static int split_held;

/* The two compiles agree; returns the stages held once. */
static int compare(const char *what, const char *text, const char *mesh,
                   const char *const *defs, bool unroll)
{
    compiled a = compile(what, text, mesh, defs, false, unroll);
    compiled b = compile(what, text, mesh, defs, true, unroll);
    int shared = -1;
    if (a.prog && b.prog && a.plan && b.plan) {
        const pass_pipeline *pa = &a.prog->res.pipe, *pb = &b.prog->res.pipe;
        CHECK_INT(pb->nshared, 0);
        CHECK(a.stages && b.stages && !strcmp(a.stages, b.stages));
        CHECK(a.len == b.len && !memcmp(a.plan, b.plan, a.len));
        CHECK_INT(pa->nstages, pb->nstages);
        int differ = 0;
        for (int s = 0; s < pa->nstages && s < pb->nstages; s++) {
            const ir_module *x = pa->stage[s], *y = pb->stage[s];
            CHECK(!x->shared);
            CHECK_INT(x->ops.n, y->ops.n);
            for (int i = 0; i < x->ops.n && i < y->ops.n; i++)
                differ += IR_OP(x, i)->task != IR_OP(y, i)->task ||
                          IR_OP(x, i)->mb != IR_OP(y, i)->mb;
        }
        CHECK_INT(differ, 0);
        if (a.len != b.len || memcmp(a.plan, b.plan, a.len) || differ ||
            strcmp(a.stages, b.stages))
            fprintf(stderr, "  %s on %s: the two compiles differ\n", what, mesh);
        shared = pa->nshared;
        split_held = pa->nsplit_held;
        CHECK_INT(pb->nsplit_held, 0);
        /* without kernels, the estimate's groups of each held stage were
         * walked held; the reports, before the plan dropped them and
         * after, are the unshared compile's */
        CHECK_INT(a.estimated, pa->nshared);
        CHECK_INT(b.estimated, 0);
        CHECK(a.estimate_same);
        CHECK(a.dropped && b.dropped);
        CHECK(same_text(a.report_before, b.report_before));
        CHECK(same_text(a.report_after, b.report_before));
        CHECK(same_text(b.report_after, b.report_before));
        if (a.estimated != pa->nshared || !a.estimate_same ||
            !same_text(a.report_before, b.report_before) ||
            !same_text(a.report_after, b.report_before))
            fprintf(stderr, "  %s on %s: the estimate's groups differ (%d of %d stages)\n",
                    what, mesh, a.estimated, pa->nshared);
    }
    done(&a);
    done(&b);
    if (unroll)
        return shared;
    /* with kernels: fuse walks the held stages */
    a = compile_kernels(what, text, mesh, defs, false);
    b = compile_kernels(what, text, mesh, defs, true);
    if (a.prog && b.prog) {
        CHECK(same_text(a.fused, b.fused));
        bool same = a.prog->res.nplanned == b.prog->res.nplanned;
        int n;
        ir_module *const *sa = pass_result_stages(&a.prog->res, &n);
        ir_module *const *sb = pass_result_stages(&b.prog->res, &n);
        for (int s = 0; same && s < a.prog->res.nplanned; s++)
            same = fusion_same(sa[s], &a.prog->res.fusion[s], sb[s], &b.prog->res.fusion[s]);
        CHECK(same);
        CHECK(same_text(a.plans, b.plans));
        CHECK(same_text(a.report, b.report));
        CHECK_INT(a.held_walks, a.prog->res.pipe.nshared);
        CHECK_INT(b.held_walks, 0);
        if (!same_text(a.fused, b.fused) || !same_text(a.plans, b.plans) ||
            !same_text(a.report, b.report) || a.held_walks != a.prog->res.pipe.nshared)
            fprintf(stderr, "  %s on %s: with kernels, the two compiles differ (held walks %d "
                    "of %d)\n", what, mesh, a.held_walks, a.prog->res.pipe.nshared);
    }
    done(&a);
    done(&b);
    return shared;
}

static char *example(const char *file)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    FILE *f = fopen(path, "rb");
    char *text = calloc(1, 1 << 20);
    size_t n = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 0);
    return text;
}

/* pipeline.sh's small GPT with L layers, on the schedule and microbatch
 * count given (its pipeline line replaced). */
static char *pipeline_text(const char *line)
{
    char *text = example("pipeline.sh");
    char *at = text ? strstr(text, "pipeline microbatches 4 schedule 1f1b") : NULL;
    CHECK(at != NULL);
    if (!at)
        return text;
    char *rest = strdup(strchr(at, '\n'));
    snprintf(at, (size_t)(1 << 20) - (size_t)(at - text), "%s%s", line, rest);
    free(rest);
    return text;
}

static void test_examples(void)
{
    static const struct {
        const char *line, *mesh, *L, *B;
        int shared;     /* the stages held once */
    } cases[] = {
        {"pipeline microbatches 5 schedule 1f1b", "1x2x1", "4", "40", 2},
        {"pipeline microbatches 6 schedule gpipe", "1x2x2", "4", "48", 2},
        {"pipeline microbatches 12 schedule 1f1b", "2x4x1", "8", "96", 4},
        {"pipeline microbatches 16 schedule 1f1b", "1x8x1", "8", "64", 8},
        {"pipeline microbatches 8 schedule interleaved(2)", "1x4x1", "8", "64", 4},
        {"pipeline microbatches 16 schedule interleaved(2)", "1x2x2", "8", "64", 2},
        {"pipeline microbatches 4 schedule 1f1b", "1x2x1", "4", "32", 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = pipeline_text(cases[c].line);
        const char *defs[] = {"L", cases[c].L, "B", cases[c].B, NULL};
        int shared = compare(cases[c].line, text, cases[c].mesh, defs, false);
        report_only_same(cases[c].line, text, cases[c].mesh, defs, false);
        report_only_same(cases[c].line, text, cases[c].mesh, defs, true);
        /* batches of one stage, and of the machine's processors; with
         * kernels (compiled for sm_80, through the build's cache) once */
        plan_only_same(cases[c].line, text, cases[c].mesh, defs, false, false, 1);
        plan_only_same(cases[c].line, text, cases[c].mesh, defs, false, false, 0);
        if (c == 0 && rt_nvrtc_available())
            plan_only_same(cases[c].line, text, cases[c].mesh, defs, true, false, 1);
        CHECK_INT(shared, cases[c].shared);
        /* every stage held once was split held: nothing reads a middle
         * microbatch's value but its sends */
        CHECK_INT(split_held, shared);
        if (shared != cases[c].shared)
            fprintf(stderr, "  %s on %s\n", cases[c].line, cases[c].mesh);
        free(text);
    }
    /* --unroll: no stamps, nothing held once, the same plan either way */
    char *text = pipeline_text("pipeline microbatches 6 schedule 1f1b");
    const char *defs[] = {"L", "4", "B", "48", NULL};
    CHECK_INT(compare("--unroll", text, "1x2x1", defs, true), 0);
    plan_only_same("--unroll", text, "1x2x1", defs, false, true, 1);
    free(text);
}

/* Dropout in every layer (each microbatch's rows at its own offset), and
 * outputs of every microbatch's rows, which the last stage gathers into
 * place after its tasks (its middle microbatches' inserts are held once
 * too). An output made from the inputs and params alone (u), outside
 * every task, from a value a task made (v, first needed by the first
 * layer's forward): the first stage makes it once for every microbatch,
 * reading each one's v, and stays unrolled. */
static const char *const dropout_model =
    "mesh dp, pp\n"
    "let B = 24, D = 16\n"
    "input x : f32[B, D] shard(dp, _)\n"
    "param w0 : f32[D, D] = normal(0.1)\n"
    "%s"
    "h = h0 @ w0\n"
    "repeat 4 as layers over pp {\n"
    "    param w : f32[D, D] = normal(0.1)\n"
    "    h = dropout(gelu(h @ w), 0.25) + h\n"
    "}\n"
    "loss = mean(h * h)\n"
    "%s"
    "pipeline microbatches 6 schedule 1f1b\n"
    "train loss with sgd(lr = 0.1)\n";

static void test_corners(void)
{
    char text[2048];
    const char *plain = "h0 = x\n";
    snprintf(text, sizeof text, dropout_model, plain, "output loss\n");
    CHECK_INT(compare("dropout", text, "1x2", NULL, false), 2);
    CHECK_INT(split_held, 2);
    CHECK_INT(compare("dropout over dp", text, "2x2", NULL, false), 2);
    CHECK_INT(split_held, 2);
    /* the last stage reads each microbatch's rows to gather them: made
     * again unheld, then held once by the proof; the first split held */
    snprintf(text, sizeof text, dropout_model, plain, "output loss\noutput h\n");
    CHECK_INT(compare("an output of every microbatch", text, "1x2", NULL, false), 2);
    CHECK_INT(split_held, 1);
    CHECK_INT(compare("an output of every microbatch over dp", text, "2x2", NULL, false), 2);
    CHECK_INT(split_held, 1);
    snprintf(text, sizeof text, dropout_model,
             "param g : f32[D] = zeros\nv = x + g\nh0 = v * 0.5\n",
             "u = where(v > -0.3, v, 0.5 * v)\noutput loss\noutput u\n");
    CHECK_INT(compare("an output made once from a task's value", text, "1x2", NULL, false), 1);
    CHECK_INT(split_held, 1);
}

/* ---- the proof, on stage programs made by hand ----
 *
 * Six microbatches of one task, each: a = extract(x) {offset = 32 j} (its
 * part of the input), b = a * w (w made once), and the running sum s_j =
 * s_(j-1) + b (s_0 = b); the output s_5. Microbatches 3 and 4 are held
 * once and put back as they were; a program where microbatch 3 or 4
 * differs from microbatch 2 in any way the copy would not make is left
 * as it was. */

enum { HM = 6 };

typedef enum {
    SAME,
    OFFSET,     /* microbatch 4's offset off the step */
    VALUE,      /* microbatch 3's multiplier another constant */
    OPERAND,    /* microbatch 4's sum reads microbatch 2's, not 3's */
    READER,     /* an op made once reads microbatch 3's b */
    TYPE,       /* microbatch 4's b an f16 */
} flaw;

static ir_op *stamped(ir_op *op, int task, int mb)
{
    op->task = task;
    op->mb = mb;
    return op;
}

/* A stage program of HM microbatches on a 2-stage pipeline, its input x
 * (each microbatch's part 32 elements on). */
static ir_module *stage_module(ir_value **x)
{
    ir_module *m = ir_module_new(&oom);
    m->mesh = (ir_mesh){.naxes = 1, .name = {"pp"}, .size = {2}};
    m->pipe = (ir_pipeline){.axis = 0, .repeats = 2, .microbatches = HM, .chunks = 1};
    m->partitioned = true;
    m->stage = 0;
    ir_type rows = {IR_F32, 2, {1, HM * 32}};
    *x = ir_append(m, IR_INPUT, NULL, 0, &(ir_attrs){.name = "x"}, &rows)->res[0];
    return m;
}

static ir_module *hand_made(flaw f)
{
    ir_value *x;
    ir_module *m = stage_module(&x);
    ir_type part = {IR_F32, 2, {8, 4}};
    ir_type half = {IR_F16, 2, {8, 4}};
    ir_type one = {IR_F32, 0, {0}};
    ir_value *w = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 2}, &one)->res[0];
    ir_value *w3 = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 3}, &one)->res[0];
    ir_value *s[HM], *b3 = NULL;
    for (int j = 0; j < HM; j++) {
        int64_t off = f == OFFSET && j == 4 ? 130 : 32 * j;
        ir_attrs ea = {.offset = off, .nlist = 2, .list = {8, 4}};
        ir_value *a = stamped(ir_append(m, IR_EXTRACT, &x, 1, &ea, &part), 1, j)->res[0];
        ir_value *ab[2] = {a, f == VALUE && j == 3 ? w3 : w};
        ir_value *b = stamped(ir_append(m, IR_MUL, ab, 2, NULL,
                                           f == TYPE && j == 4 ? &half : &part), 1, j)->res[0];
        b3 = j == 3 ? b : b3;
        if (j == 0) {
            s[j] = b;
            continue;
        }
        ir_value *sb[2] = {f == OPERAND && j == 4 ? s[2] : s[j - 1], b};
        s[j] = stamped(ir_append(m, IR_ADD, sb, 2, NULL, &part), 1, j)->res[0];
    }
    if (f == READER)
        ir_append(m, IR_NEG, &b3, 1, NULL, &part);
    ir_add_output(m, "s", s[HM - 1], (su_loc){0, 0});
    return m;
}

static char *printed(const ir_module *m)
{
    su_buf b;
    su_buf_init(&b, &oom);
    ir_print(m, &b);
    return b.s;
}

static void test_proof(void)
{
    static const char *const names[] = {"same", "offset", "value", "operand", "reader", "type"};
    for (flaw f = SAME; f <= TYPE; f++) {
        ir_module *m = hand_made(f);
        char *before = printed(m);
        int n = m->ops.n;
        bool shared = pass_share_instances(m);
        CHECK_INT(shared, f == SAME);
        if (shared != (f == SAME))
            fprintf(stderr, "  %s: shared %d\n", names[f], shared);
        if (shared) { /* microbatches 3 and 4: one run of 6 ops, then put back */
            CHECK_INT(m->ops.n, n - 6 + 1);
            CHECK(m->shared && m->shared->nruns == 1);
            su_buf err;
            su_buf_init(&err, &oom);
            CHECK(ir_verify(m, &err));
            if (err.len)
                fprintf(stderr, "  %s: %s\n", names[f], err.s);
            err.len = 0;
            CHECK(pass_expand_instances(m, &err));
            su_buf_free(&err);
            CHECK(!m->shared);
        } else {
            CHECK(!m->shared);
        }
        char *after = printed(m);
        CHECK_STR(after, before);
        CHECK_INT(m->ops.n, n);
        for (int i = 0; i < m->ops.n; i++)
            if (IR_OP(m, i)->code == IR_EXTRACT)
                CHECK_INT(IR_OP(m, i)->a->offset, f == OFFSET && IR_OP(m, i)->mb == 4
                                                      ? 130 : 32 * IR_OP(m, i)->mb);
        free(before);
        free(after);
        ir_module_free(m);
    }
}

/* pass_instances_verify: a held program's op made once that reads
 * microbatch 2's value (as combine.c's rows rule once made, moving a
 * sum over microbatches out of its tasks) is refused, naming the op;
 * the held program as the proof leaves it, and one whose op made once
 * reads the last microbatch's sum (as a step's update reads it), pass. */
static void test_verify(void)
{
    ir_module *m = hand_made(SAME);
    CHECK(pass_share_instances(m));
    su_buf err;
    su_buf_init(&err, &oom);
    int bad = 7;
    CHECK(pass_instances_verify(m, &err, &bad));
    CHECK_INT(bad, -1);
    CHECK_INT((int)err.len, 0);
    const ir_value *b2 = NULL, *last = NULL;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code == IR_MUL && op->task == 1 && op->mb == 2)
            b2 = op->res[0];
        if (op->code == IR_ADD && op->task == 1 && op->mb == HM - 1)
            last = op->res[0];
    }
    CHECK(b2 && last);
    ir_type part = {IR_F32, 2, {8, 4}};
    ir_append(m, IR_NEG, (ir_value **)&last, 1, NULL, &part);
    CHECK(pass_instances_verify(m, &err, &bad));
    int at = m->ops.n;
    ir_append(m, IR_NEG, (ir_value **)&b2, 1, NULL, &part);
    CHECK(!pass_instances_verify(m, &err, &bad));
    CHECK_INT(bad, at);
    CHECK(err.s && strstr(err.s, "neg (op ") && strstr(err.s, "reads microbatch 2's value"));
    su_buf_free(&err);
    ir_module_free(m);
    /* an unheld program: nothing to check */
    m = hand_made(READER);
    CHECK(!pass_share_instances(m));
    su_buf_init(&err, &oom);
    CHECK(pass_instances_verify(m, &err, &bad));
    CHECK_INT(bad, -1);
    su_buf_free(&err);
    ir_module_free(m);
}

/* ---- the fusion's walk of a held program ----
 *
 * Six microbatches of one task; microbatches 1 .. 4 each read three
 * values of the microbatch before (as the running sums do), values that
 * microbatch 2's own ops read otherwise only inside one group, so only
 * the hidden reads by microbatch 3 tell how the unrolled program groups
 * them: c = a @ w is read by its bias add alone (a matmul epilogue, but
 * for the next microbatch's read), k = a @ w by f = k * 2 alone (f's
 * group then holds k past PASS_FUSE_HOLD fillers to h = f * 5, as the next
 * microbatch's read keeps k alive that long), and f by h alone (stored for
 * the next microbatch). The last microbatch reads them of microbatch 4
 * too (last_reads), as a pipeline's last microbatch adds to the sums: the
 * groups of the held walk, expanded, are then the unrolled walk's. When it
 * does not, microbatch 4's groups are microbatch 2's (its c stored, where
 * the unrolled walk keeps it in the epilogue's registers), so only the
 * middle microbatches before it match; both are sound. */
static ir_module *hidden_reads(bool last_reads)
{
    ir_value *x;
    ir_module *m = stage_module(&x);
    ir_type part = {IR_F32, 2, {8, 4}};
    ir_type wt = {IR_F32, 2, {4, 4}}, bt = {IR_F32, 1, {4}}, one = {IR_F32, 0, {0}};
    ir_value *w = ir_append(m, IR_PARAM, NULL, 0, &(ir_attrs){.name = "w"}, &wt)->res[0];
    ir_value *g = ir_append(m, IR_PARAM, NULL, 0, &(ir_attrs){.name = "g"}, &bt)->res[0];
    ir_value *two = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 2}, &one)->res[0];
    ir_value *five = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 5}, &one)->res[0];
    ir_value *c0 = NULL, *k0 = NULL, *f0 = NULL, *h = NULL;
    for (int j = 0; j < HM; j++) {
        ir_attrs ea = {.offset = 32 * j, .nlist = 2, .list = {8, 4}};
        ir_value *a = stamped(ir_append(m, IR_EXTRACT, &x, 1, &ea, &part), 1, j)->res[0];
        ir_value *aw[2] = {a, w};
        ir_value *c = stamped(ir_append(m, IR_MATMUL, aw, 2, NULL, &part), 1, j)->res[0];
        ir_value *cg[2] = {c, g};
        ir_value *d = stamped(ir_append(m, IR_ADD, cg, 2, NULL, &part), 1, j)->res[0];
        ir_value *k = stamped(ir_append(m, IR_MATMUL, aw, 2, NULL, &part), 1, j)->res[0];
        ir_value *k2[2] = {k, two};
        ir_value *f = stamped(ir_append(m, IR_MUL, k2, 2, NULL, &part), 1, j)->res[0];
        for (int q = 0; q < PASS_FUSE_HOLD + 2; q++)
            stamped(ir_append(m, IR_NEG, &g, 1, NULL, &bt), 1, j);
        ir_value *f5[2] = {f, five};
        h = stamped(ir_append(m, IR_MUL, f5, 2, NULL, &part), 1, j)->res[0];
        if (j > 0 && (j < HM - 1 || last_reads)) {
            ir_value *dc[2] = {d, c0};
            stamped(ir_append(m, IR_ADD, dc, 2, NULL, &part), 1, j);
            ir_value *hf[2] = {h, f0};
            ir_value *l = stamped(ir_append(m, IR_ADD, hf, 2, NULL, &part), 1, j)->res[0];
            ir_value *lk[2] = {l, k0};
            stamped(ir_append(m, IR_ADD, lk, 2, NULL, &part), 1, j);
        }
        c0 = c, k0 = k, f0 = f;
    }
    ir_add_output(m, "h", h, (su_loc){0, 0});
    return m;
}

static char *fused_text(const ir_module *m, const pass_fusion *f)
{
    su_buf b;
    su_buf_init(&b, &oom);
    pass_fusion_print(m, f, &b);
    return b.s;
}

/* Sound groups: a value of a group that an op outside it, or an output,
 * reads is stored, and no op between a group's first op and its anchor
 * reads a value of the group. */
static bool fusion_sound(const ir_module *m, const pass_fusion *f)
{
    int *def = malloc(((size_t)m->next_id + 1) * sizeof *def);
    for (int i = 0; i < m->ops.n; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            def[IR_OP(m, i)->res[r]->id] = i;
    bool ok = true;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            int gd = f->group_of[def[op->in[k]->id]];
            ok = ok && (gd < 0 || gd == f->group_of[i] || f->stored[op->in[k]->id]);
            for (int g = 0; gd >= 0 && g < f->ngroups && gd != f->group_of[i]; g++)
                ok = ok && !(g == gd && f->groups[g].ops[0] < i && i < f->groups[g].anchor);
        }
    }
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_value *v = IR_OUTPUT(m, i)->v;
        ok = ok && (f->group_of[def[v->id]] < 0 || f->stored[v->id]);
    }
    free(def);
    return ok;
}

/* The lines of text from the one holding `from` to the one holding `to`. */
static char *lines_between(const char *text, const char *from, const char *to)
{
    const char *a = text ? strstr(text, from) : NULL;
    const char *b = a ? strstr(a, to) : NULL;
    if (!a || !b)
        return strdup("(not found)");
    while (a > text && a[-1] != '\n')
        a--;
    return strndup(a, (size_t)(b - a));
}

static void test_held_walk(void)
{
    for (int last = 0; last < 2; last++) {
        su_buf err;
        su_buf_init(&err, &oom);
        ir_module *u = hidden_reads(last), *m = hidden_reads(last);
        pass_fusion fu, fm;
        CHECK(pass_fuse_planned(u, &fu, NULL, &err));
        CHECK(!fu.held_walk);
        CHECK(pass_share_instances(m));
        CHECK(m->shared && m->shared->nruns >= 1);
        CHECK(pass_fuse_planned_held(m, &fm, NULL, &err));
        CHECK(!m->shared);
        CHECK(fm.held_walk);
        if (err.len)
            fprintf(stderr, "  held walk: %s\n", err.s);
        CHECK(fusion_sound(u, &fu));
        CHECK(fusion_sound(m, &fm));
        char *a = fused_text(u, &fu), *b = fused_text(m, &fm);
        /* microbatch 3's ops, middle, alike */
        char *a3 = lines_between(a, "offset = 96", "offset = 128");
        char *b3 = lines_between(b, "offset = 96", "offset = 128");
        CHECK_STR(b3, a3);
        if (last) {
            CHECK_STR(b, a);
            CHECK(fusion_same(m, &fm, u, &fu));
        }
        /* what the test is about: a middle microbatch's c keeps no
         * epilogue (microbatch 4's has one when the last does not read it,
         * and the last's), and f's group takes h and the adds after */
        int bias = 0;
        for (const char *t = a; t && (t = strstr(t, "kernel k")) != NULL; t++)
            bias += !strncmp(strchr(t, ':'), ": matmul", 8);
        CHECK_INT(bias, last ? 1 : 2);
        CHECK(strstr(a3, ": matmul") == NULL);
        CHECK(strstr(a3, "_mul_add: elementwise over [8, 4]; reads %") != NULL);
        free(a3);
        free(b3);
        free(a);
        free(b);
        pass_fusion_free(&fu);
        pass_fusion_free(&fm);
        ir_module_free(u);
        ir_module_free(m);
        su_buf_free(&err);
    }
}

static bool knows_none(void *ctx, const char *key, uint64_t hash)
{
    (void)ctx, (void)key, (void)hash;
    return false;
}

/* Kernels k and w (cg_cuda_generate_known of one fusion, with and without
 * its twins) the same: name, key, launch, parameters, a source or none. */
static bool kernels_same(const cg_cuda *k, const cg_cuda *w)
{
    if (k->nkernels != w->nkernels)
        return false;
    for (int i = 0; i < k->nkernels; i++) {
        const cg_cuda_kernel *a = &k->k[i], *b = &w->k[i];
        if (strcmp(a->name, b->name) || strcmp(a->key, b->key) || a->key_hash != b->key_hash ||
            a->strategy != b->strategy || a->grid != b->grid || a->block != b->block ||
            a->shared_bytes != b->shared_bytes || a->vec != b->vec || a->group != b->group ||
            a->op != b->op || a->nparams != b->nparams || !a->source != !b->source ||
            (a->source && strcmp(a->source, b->source)))
            return false;
        for (int j = 0; j < a->nparams; j++)
            if (a->params[j] != b->params[j])
                return false;
    }
    return true;
}

/* A held walk's groups copied for a middle microbatch name their twin,
 * microbatch 2's group (pass_fusion.twin), and the code generator takes
 * the twin's code for each such copy without looking it up by structure:
 * the kernels are those made without the twins, and each copy took its
 * twin's. A copy whose op's attributes are not its twin op's (as where an
 * offset steps per microbatch) is looked up as any other. The estimate
 * times each copy as its twin: its timeline the same as without. */
static void test_twin_kernels(void)
{
    su_buf err;
    su_buf_init(&err, &oom);
    ir_module *m = hidden_reads(true);
    CHECK(pass_share_instances(m));
    pass_fusion f;
    CHECK(pass_fuse_planned_held(m, &f, NULL, &err));
    CHECK(f.held_walk && f.twin != NULL);
    int copies = 0;
    for (int g = 0; f.twin && g < f.ngroups; g++) {
        int t = f.twin[g];
        if (t < 0)
            continue;
        copies++;
        const pass_fgroup *a = &f.groups[g], *b = &f.groups[t];
        CHECK(t < g && a->kind == b->kind && a->nops == b->nops);
        for (int q = 0; q < a->nops && q < b->nops; q++) {
            const ir_op *x = IR_OP(m, a->ops[q]), *y = IR_OP(m, b->ops[q]);
            CHECK(x->code == y->code && x->task == y->task && y->mb == 2 && x->mb > 2);
        }
    }
    CHECK(copies > 0);
    cg_cuda k, w, s;
    CHECK(cg_cuda_generate_known(m, &f, &k, &err, knows_none, NULL));
    int *twin = f.twin;
    f.twin = NULL;
    CHECK(cg_cuda_generate_known(m, &f, &w, &err, knows_none, NULL));
    f.twin = twin;
    CHECK(kernels_same(&k, &w));
    CHECK(k.ntwin > 0 && w.ntwin == 0 && k.nsame == w.nsame);
    int taken = 0; /* the copies with a kernel of their own (not matmuls) */
    for (int i = 0; i < k.nkernels; i++)
        taken += k.k[i].group >= 0 && f.twin[k.k[i].group] >= 0;
    CHECK_INT(k.ntwin, taken);
    /* a copy's op given other attributes: looked up by its structure */
    int g0 = -1;
    for (int i = 0; i < k.nkernels && g0 < 0; i++)
        if (k.k[i].group >= 0 && f.twin[k.k[i].group] >= 0)
            g0 = k.k[i].group;
    CHECK(g0 >= 0);
    if (g0 >= 0) {
        ir_op *x = IR_OP(m, f.groups[g0].ops[f.groups[g0].nops - 1]);
        ir_attrs c = x->a ? *x->a : (ir_attrs){0};
        c.value = 7.25;
        x->a = ir_attrs_intern(m, &c);
        CHECK(cg_cuda_generate_known(m, &f, &s, &err, knows_none, NULL));
        f.twin = NULL;
        cg_cuda_free(&w);
        CHECK(cg_cuda_generate_known(m, &f, &w, &err, knows_none, NULL));
        f.twin = twin;
        CHECK(kernels_same(&s, &w));
        CHECK_INT(s.ntwin, k.ntwin - 1);
        cg_cuda_free(&s);
    }
    /* the estimate's groups timed: a copy's time its twin's, the same
     * timeline as without the twins, to the bit */
    ir_module *st[1] = {m};
    double with = 0, without = -1;
    su_buf ja, jb;
    su_buf_init(&ja, &oom);
    su_buf_init(&jb, &oom);
    CHECK(pass_timeline(st, 1, &f, NULL, pass_hw_default(), 100000, &ja, &with, &err));
    f.twin = NULL;
    CHECK(pass_timeline(st, 1, &f, NULL, pass_hw_default(), 100000, &jb, &without, &err));
    f.twin = twin;
    CHECK(with > 0 && with == without);
    CHECK(ja.len > 0 && ja.len == jb.len && !memcmp(ja.s, jb.s, ja.len));
    su_buf_free(&ja);
    su_buf_free(&jb);
    if (err.len)
        fprintf(stderr, "  twin kernels: %s\n", err.s);
    cg_cuda_free(&k);
    cg_cuda_free(&w);
    pass_fusion_free(&f);
    ir_module_free(m);
    su_buf_free(&err);
}

/* A held walk's groups are copied onto the expanded ops (fuse.c's
 * expand_final) only where each expanded op is its held op or that op's
 * copy: a middle microbatch's add made a sub after the walk sends the
 * walk back to a walk of every op, whose groups are pass_fuse's of the
 * program as it now is. */
static void test_lazy_fallback(void)
{
    su_buf err;
    su_buf_init(&err, &oom);
    ir_module *m = hidden_reads(true);
    CHECK(pass_share_instances(m));
    pass_fuse_walk *w = NULL;
    CHECK(pass_fuse_walk_held(m, &w, &err));
    CHECK(!m->shared);
    pass_fusion held, back, fresh;
    pass_fuse_from_walk(w, 0, &held, &err);
    CHECK(held.held_walk); /* the copies */
    ir_op *add = NULL;
    for (int i = 0; i < m->ops.n && !add; i++)
        if (IR_OP(m, i)->code == IR_ADD && IR_OP(m, i)->task > 0 && IR_OP(m, i)->mb == 3)
            add = IR_OP(m, i);
    CHECK(add != NULL);
    if (add)
        add->code = IR_SUB;
    pass_fuse_from_walk(w, 0, &back, &err);
    CHECK(!back.held_walk); /* the walk of every op */
    CHECK(pass_fuse(m, &fresh, &err));
    CHECK(fusion_same(m, &back, m, &fresh));
    CHECK(fusion_sound(m, &back));
    pass_fusion again; /* the walk stays the walk of every op */
    pass_fuse_from_walk(w, 0, &again, &err);
    CHECK(!again.held_walk);
    CHECK(fusion_same(m, &again, m, &back));
    pass_fusion_free(&held);
    pass_fusion_free(&back);
    pass_fusion_free(&fresh);
    pass_fusion_free(&again);
    pass_fuse_walk_free(w);
    ir_module_free(m);
    su_buf_free(&err);
}

/* A group that would span the instances op: s = p * 2 reads only a value
 * made once, and microbatch 3 reads microbatch 2's s (t = s of the one
 * before @ q, which joins no group); the last microbatch reads microbatch 4's s (u = s * 3)
 * right after making its own. In the unrolled program u joins microbatch
 * 4's s; in the held one it would join microbatch 2's across the middle
 * microbatches, which read that s before the group's kernel ran: no group
 * spans an instances op, so u keeps a group of its own. */
static ir_module *spanning(void)
{
    ir_value *x;
    ir_module *m = stage_module(&x);
    ir_type part = {IR_F32, 2, {8, 4}}, one = {IR_F32, 0, {0}};
    ir_value *p = ir_append(m, IR_PARAM, NULL, 0, &(ir_attrs){.name = "p"}, &part)->res[0];
    ir_type qt = {IR_F32, 2, {4, 4}};
    ir_value *q = ir_append(m, IR_PARAM, NULL, 0, &(ir_attrs){.name = "q"}, &qt)->res[0];
    ir_value *two = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 2}, &one)->res[0];
    ir_value *three = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 3}, &one)->res[0];
    ir_value *s0 = NULL, *u = NULL;
    for (int j = 0; j < HM; j++) {
        ir_attrs ea = {.offset = 32 * j, .nlist = 2, .list = {8, 4}};
        stamped(ir_append(m, IR_EXTRACT, &x, 1, &ea, &part), 1, j);
        ir_value *p2[2] = {p, two};
        ir_value *sj = stamped(ir_append(m, IR_MUL, p2, 2, NULL, &part), 1, j)->res[0];
        if (j > 0 && j < HM - 1) {
            ir_value *sq[2] = {s0, q};
            stamped(ir_append(m, IR_MATMUL, sq, 2, NULL, &part), 1, j);
        }
        if (j == HM - 1) {
            ir_value *s3[2] = {s0, three};
            u = stamped(ir_append(m, IR_MUL, s3, 2, NULL, &part), 1, j)->res[0];
        }
        s0 = sj;
    }
    ir_add_output(m, "u", u, (su_loc){0, 0});
    return m;
}

static void test_no_span(void)
{
    su_buf err;
    su_buf_init(&err, &oom);
    ir_module *u = spanning(), *m = spanning();
    pass_fusion fu, fm;
    CHECK(pass_fuse_planned(u, &fu, NULL, &err));
    CHECK(pass_share_instances(m));
    CHECK(pass_fuse_planned_held(m, &fm, NULL, &err));
    CHECK(fm.held_walk);
    CHECK(fusion_sound(u, &fu));
    CHECK(fusion_sound(m, &fm));
    /* the last microbatch's u: with microbatch 4's s unrolled, alone held */
    int last = m->ops.n - 1;
    CHECK_INT(fu.groups[fu.group_of[last]].nops, 2);
    CHECK_INT(fm.groups[fm.group_of[last]].nops, 1);
    pass_fusion_free(&fu);
    pass_fusion_free(&fm);
    ir_module_free(u);
    ir_module_free(m);
    su_buf_free(&err);
}

/* A program without kernels whose stages are held: plans written on one
 * thread (the first drops the estimate's groups) while another emits its
 * report, which reads them under the program's lock (api_fusion): every
 * plan and every report is the one a single thread makes. */
typedef struct racer {
    const shardc_program *prog;
    const uint8_t *plan;
    size_t len;
    const char *report;
    int differ;
} racer;

static void *plans(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 4; i++) {
        uint8_t *b = NULL;
        size_t n = 0;
        if (api_program_plan(r->prog, &b, &n, NULL) != SHARDC_OK || n != r->len ||
            memcmp(b, r->plan, n))
            r->differ++;
        free(b);
    }
    return NULL;
}

static void *reports(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 8; i++) {
        char *t = NULL;
        if (shardc_program_emit(r->prog, "report-json", &t, NULL, NULL) != SHARDC_OK ||
            !same_text(t, r->report))
            r->differ++;
        shardc_free(t);
    }
    return NULL;
}

static void test_estimate_threads(void)
{
    char *text = pipeline_text("pipeline microbatches 8 schedule 1f1b");
    const char *defs[] = {"L", "4", "B", "64", NULL};
    compiled one = compile("threads", text, "1x2x1", defs, false, false);
    shardc_options *o = shardc_options_new();
    set(o, "1x2x1", defs, false);
    shardc_program *prog = NULL;
    char *err = NULL;
    CHECK(shardc_compile_string(o, "threads", text, strlen(text), &prog, &err) == SHARDC_OK);
    if (prog && one.plan && one.report_before) {
        CHECK_INT(prog->res.nestimate, 2);
        racer a = {prog, one.plan, one.len, one.report_before, 0}, b = a;
        pthread_t ta, tb;
        CHECK(pthread_create(&ta, NULL, plans, &a) == 0);
        CHECK(pthread_create(&tb, NULL, reports, &b) == 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK_INT(a.differ, 0);
        CHECK_INT(b.differ, 0);
        CHECK(!prog->res.estimate);
    }
    shardc_program_free(prog);
    shardc_options_free(o);
    shardc_free(err);
    done(&one);
    free(text);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_instances: out of memory\n");
        return 1;
    }
    test_proof();
    test_verify();
    test_held_walk();
    test_lazy_fallback();
    test_twin_kernels();
    test_estimate_threads();
    test_no_span();
    test_examples();
    test_corners();
    return CHECK_DONE();
}
