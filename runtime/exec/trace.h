/* trace.h: the measured timeline of a run (`shardrun --trace FILE`), in
 * the Chrome trace format `shardc --trace` writes its estimate in: pid =
 * rank, tid 0 compute, tid 1 communication (collectives, send and recv),
 * one complete ("X") event per instruction run, ts and dur in microseconds
 * from a common origin (taken after a barrier under MPI).
 *
 * The cpu backend times each instruction's call on the host. The cuda
 * backend times them on the device: an event pair around each
 * instruction (a kernel at its anchor, named after the kernel), read
 * after the run against a start event the device passed at a known host
 * time (rt_trace_add_device), so device and host times share the origin.
 * An instruction that works on the host (a source, a collective through
 * the host) spans, on the device's clock, from the moment the stream
 * reaches it to the end of its copy back. */
#ifndef SHARDC_RT_TRACE_H
#define SHARDC_RT_TRACE_H
#include "support/support.h"
#include "runtime/plan/plan.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rt_trace_ev {
    int32_t instr;      /* index in the rank's stage program */
    int32_t step;       /* the session's run, from 0 */
    int32_t kernel;     /* the plan's kernel launched there, -1 none */
    double t0, t1;      /* seconds from the origin */
} rt_trace_ev;

/* One rank's events; an allocation failure drops the rest (lost > 0). */
typedef struct rt_trace {
    rt_trace_ev *ev;
    int64_t n, cap, lost;
} rt_trace;

double rt_trace_now(void); /* CLOCK_MONOTONIC, seconds */
void rt_trace_add(rt_trace *t, int32_t instr, int32_t step, double t0, double t1);
/* An instruction timed on the device: from begin_ms to end_ms (cuEventElapsedTime,
 * milliseconds) after the run's start event, which the device passed at
 * `start` seconds from the origin; kernel: the plan's kernel it launched, -1
 * none. An end before the begin (the two events on different streams) is
 * taken as the begin. */
void rt_trace_add_device(rt_trace *t, int32_t instr, int32_t kernel, int32_t step, double start,
                         float begin_ms, float end_ms);
void rt_trace_free(rt_trace *t);

/* Every rank's events, rank r's in tr[r] (tr[r].n == 0 for a rank with
 * none), as JSON written atomically to path. backend and comm name the
 * run in otherData. */
int rt_trace_write(const char *path, const rt_plan *p, const rt_trace *tr, int64_t nranks,
                   const char *backend, const char *comm, su_status *err);
#endif
