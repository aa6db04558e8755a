/* trace.c: the measured timeline (trace.h). */
#include "runtime/exec/trace.h"
#include "support/support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double rt_trace_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add_event(rt_trace *t, int32_t instr, int32_t kernel, int32_t step, double t0,
                      double t1)
{
    if (t->n == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 1024;
        rt_trace_ev *ev = t->lost ? NULL : realloc(t->ev, (size_t)cap * sizeof *ev);
        if (!ev) {
            t->lost++;
            return;
        }
        t->ev = ev;
        t->cap = cap;
    }
    t->ev[t->n++] = (rt_trace_ev){instr, step, kernel, t0, t1};
}

void rt_trace_add(rt_trace *t, int32_t instr, int32_t step, double t0, double t1)
{
    add_event(t, instr, -1, step, t0, t1);
}

void rt_trace_add_device(rt_trace *t, int32_t instr, int32_t kernel, int32_t step, double start,
                         float begin_ms, float end_ms)
{
    double t0 = start + (double)begin_ms * 1e-3, t1 = start + (double)end_ms * 1e-3;
    add_event(t, instr, kernel, step, t0, t1 > t0 ? t1 : t0);
}

void rt_trace_free(rt_trace *t)
{
    free(t->ev);
    memset(t, 0, sizeof *t);
}

/* A growing string; an allocation failure makes it NULL for good. */
typedef struct text {
    char *s;
    size_t len, cap;
    bool started;       /* an element of traceEvents is written */
} text;

static void add(text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *b, const char *fmt, ...)
{
    if (!b->s && b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->cap ? 2 * b->cap : 1 << 16) + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) {
            free(b->s);
            b->s = NULL;
            b->cap = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Starts the next element of traceEvents. */
static void item(text *b)
{
    add(b, b->started ? ",\n" : "\n");
    b->started = true;
}

static void rank_names(text *b, const rt_plan *p, int64_t r, int stage)
{
    item(b);
    if (p->nstages > 1)
        add(b, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": "
            "{\"name\": \"rank %lld (stage %d)\"}}", (long long)r, (long long)r, stage);
    else
        add(b, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": "
            "{\"name\": \"rank %lld\"}}", (long long)r, (long long)r);
    item(b);
    add(b, "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %lld, \"args\": "
        "{\"sort_index\": %lld}}", (long long)r, (long long)r);
    static const char *const names[2] = {"compute", "communication"};
    for (int t = 0; t < 2; t++) {
        item(b);
        add(b, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %d, "
            "\"args\": {\"name\": \"%s\"}}", (long long)r, t, names[t]);
    }
}

static void rank_events(text *b, const rt_plan *p, const rt_program *prog, int64_t r,
                        const rt_trace *t)
{
    for (int64_t i = 0; i < t->n; i++) {
        const rt_trace_ev *e = &t->ev[i];
        if (e->instr < 0 || e->instr >= prog->ninstr)
            continue;
        const rt_instr *in = &prog->instr[e->instr];
        const rt_kernel *k = e->kernel >= 0 && e->kernel < p->nkernels ? &p->kernel[e->kernel]
                                                                        : NULL;
        bool p2p = in->op == RT_OP_SEND || in->op == RT_OP_RECV;
        bool comm = rt_ops[in->op].cls == RT_K_COMM;
        const char *cat = k ? "kernel" : p2p ? "p2p" : comm ? "collective" :
                          rt_ops[in->op].cls == RT_K_SOURCE ? "source" : "compute";
        item(b);
        add(b, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %lld, "
            "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"instr\": %d, \"step\": %d",
            k ? k->name : rt_ops[in->op].name, cat, (long long)r,
            comm ? 1 : 0, e->t0 * 1e6, (e->t1 - e->t0) * 1e6, e->instr, e->step);
        if (k)
            add(b, ", \"op\": \"%s\", \"instrs\": %d", rt_ops[in->op].name, (int)k->ninstr);
        if (p2p)
            add(b, ", \"peer_stage\": %lld", (long long)in->dim);
        add(b, "}}");
    }
}

int rt_trace_write(const char *path, const rt_plan *p, const rt_trace *tr, int64_t nranks,
                   const char *backend, const char *comm, su_status *err)
{
    text b = {0};
    int64_t lost = 0;
    for (int64_t r = 0; r < nranks; r++)
        lost += tr[r].lost;
    add(&b, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"shardrun\", "
        "\"backend\": \"%s\", \"comm\": \"%s\", \"events_lost\": %lld},\n\"traceEvents\": [", backend, comm, (long long)lost);
    for (int64_t r = 0; r < nranks; r++) {
        int64_t coord[RT_MAX_AXES];
        rt_plan_coords(p, r, coord);
        int stage = p->stage_axis >= 0 ? (int)coord[p->stage_axis] : 0;
        rank_names(&b, p, r, stage);
        rank_events(&b, p, &p->stage[stage], r, &tr[r]);
    }
    add(&b, "\n]}\n");
    if (!b.s) {
        su_fail(err, SU_NOMEM, "out of memory for the trace");
        return -1;
    }
    int rc = su_write_file(path, b.s, b.len, err);
    free(b.s);
    return rc;
}
