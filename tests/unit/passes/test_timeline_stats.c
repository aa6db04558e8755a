/* test_timeline_stats.c: the estimate's busy and exposed times of each
 * stage (pass_timeline_stats, which the report prints), made as the
 * timeline's events come, without keeping them (passes/timeline.c's
 * account), are those of the events the trace writes (pass_timeline's
 * JSON): for the first rank of each stage, the compute stream's seconds,
 * the communication stream's, and the part of each communication event
 * no compute event overlaps, summed. The trace prints microseconds to
 * three decimals, so each figure may differ from the sum of its events
 * by half a nanosecond an event: the tolerance is a nanosecond an event.
 * Models: pipeline.sh on 1x2x2 (sends and receives, tensor-parallel
 * all-reduces beside compute) and transformer.sh on 2x2 (data-parallel
 * gradient all-reduces that overlap the backward), and a row-parallel
 * matmul whose all-reduce ends the step (exposed whole), on h100. */
#include "shardc.h"
#include "../../api/api_internal.h"
#include "check.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ev {
    int tid;
    double ts, dur; /* seconds */
} ev;

typedef struct evs {
    ev *e;
    int n, cap;
} evs;

static double num_after(const char *line, const char *key)
{
    const char *at = strstr(line, key);
    return at ? atof(at + strlen(key)) : NAN;
}

/* The times of one stage's events, as the definition says. */
static pass_stage_time reference(const evs *E)
{
    pass_stage_time t = {0, 0, 0};
    for (int i = 0; i < E->n; i++) {
        const ev *c = &E->e[i];
        if (c->tid == 0) {
            t.compute_s += c->dur;
            continue;
        }
        t.comm_s += c->dur;
        double covered = 0, a = c->ts, b = c->ts + c->dur;
        for (int k = 0; k < E->n; k++) {
            if (E->e[k].tid != 0)
                continue;
            double lo = fmax(E->e[k].ts, a), hi = fmin(E->e[k].ts + E->e[k].dur, b);
            covered += hi > lo ? hi - lo : 0;
        }
        t.exposed_s += c->dur - covered;
    }
    return t;
}

/* examples/FILE's text (malloc'd). */
static char *example(const char *file)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    char *text = check_model_text(path, 0);
    CHECK(text != NULL);
    return text ? text : strdup("");
}

static jmp_buf oom;

/* A row-parallel matmul whose all-reduce ends the step, exposed. */
static const char rowpar[] = "mesh tp\n"
                             "input x : f32[64, 1024] shard(_, tp)\n"
                             "param w : f32[1024, 1024] shard(tp, _) = normal(0.02)\n"
                             "y = x @ w\n"
                             "output y\n";

static void stats_match(const char *file, const char *mesh, const char *const *defs,
                        int microbatches)
{
    char *text = strcmp(file, "rowpar") ? example(file) : strdup(rowpar), *err = NULL;
    shardc_options *o = shardc_options_new();
    CHECK(shardc_options_set_mesh(o, mesh, &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(o, "none", &err) == SHARDC_OK);
    for (int i = 0; defs[i]; i += 2)
        CHECK(shardc_options_define(o, defs[i], atoll(defs[i + 1]), &err) == SHARDC_OK);
    if (microbatches)
        CHECK(shardc_options_set_microbatches(o, microbatches, &err) == SHARDC_OK);
    shardc_program *prog = NULL;
    CHECK(shardc_compile_string(o, file, text, strlen(text), &prog, &err) == SHARDC_OK);
    shardc_options_free(o);
    free(text);
    if (!prog) {
        fprintf(stderr, "  %s on %s: %s\n", file, mesh, err ? err : "?");
        shardc_free(err);
        return;
    }
    int n;
    ir_module *const *st = pass_result_stages(&prog->res, &n);
    const pass_memplan *mp = prog->res.nplanned == n ? prog->res.mp : NULL;
    const pass_hw *hw = pass_hw_find("h100");
    CHECK(hw != NULL);
    pass_stage_time *got = calloc((size_t)n, sizeof *got);
    evs *E = calloc((size_t)n, sizeof *E);
    su_buf e, json;
    if (setjmp(oom)) {
        CHECK(!"out of memory");
        return;
    }
    su_buf_init(&e, &oom);
    su_buf_init(&json, &oom);
    double step_online = -1, step_trace = -2;
    CHECK(pass_timeline_stats(st, n, NULL, mp, hw, got, &step_online, &e));
    /* one rank a stage: the first */
    CHECK(pass_timeline(st, n, NULL, mp, hw, 1, &json, &step_trace, &e));
    CHECK(step_online == step_trace);
    int stage = 0, events = 0;
    for (char *line = json.s; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        const char *sp = strstr(line, "(stage ");
        if (strstr(line, "\"process_name\""))
            stage = sp ? atoi(sp + 7) : 0;
        if (strstr(line, "\"ph\": \"X\"") && stage >= 0 && stage < n) {
            evs *L = &E[stage];
            if (L->n == L->cap) {
                L->cap = L->cap ? 2 * L->cap : 256;
                L->e = realloc(L->e, (size_t)L->cap * sizeof *L->e);
            }
            L->e[L->n++] = (ev){(int)num_after(line, "\"tid\": "),
                                num_after(line, "\"ts\": ") * 1e-6,
                                num_after(line, "\"dur\": ") * 1e-6};
            events++;
        }
        line = end ? end + 1 : NULL;
    }
    CHECK(events > 0);
    int comm = 0;
    for (int s = 0; s < n; s++) {
        pass_stage_time want = reference(&E[s]);
        double tol = 1e-9 * (E[s].n + 1);
        bool same = fabs(got[s].compute_s - want.compute_s) <= tol &&
                    fabs(got[s].comm_s - want.comm_s) <= tol &&
                    fabs(got[s].exposed_s - want.exposed_s) <= tol;
        CHECK(same);
        if (!same)
            fprintf(stderr, "  %s on %s, stage %d: compute %.9f comm %.9f exposed %.9f, its "
                    "trace's %.9f %.9f %.9f\n", file, mesh, s, got[s].compute_s,
                    got[s].comm_s, got[s].exposed_s, want.compute_s, want.comm_s,
                    want.exposed_s);
        comm += want.comm_s > 0 && want.exposed_s < want.comm_s; /* some overlapped */
        free(E[s].e);
    }
    if (strcmp(file, "rowpar"))
        CHECK(comm > 0); /* they overlap communication with compute somewhere */
    else
        CHECK(fabs(got[0].exposed_s - got[0].comm_s) <= 1e-15 && got[0].comm_s > 0);
    su_buf_free(&e);
    su_buf_free(&json);
    free(E);
    free(got);
    shardc_program_free(prog);
}

int main(void)
{
    const char *pipe[] = {"L", "4", "B", "48", NULL};
    const char *tf[] = {NULL};
    stats_match("pipeline.sh", "1x2x2", pipe, 6);
    stats_match("transformer.sh", "2x2", tf, 0);
    stats_match("rowpar", "4", tf, 0);
    return CHECK_DONE();
}
