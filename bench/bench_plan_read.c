/* bench_plan_read.c: what a process pays to read a plan and make the
 * stages it runs plain (issue 20: a pipeline at scale). Reads PLAN as its
 * file holds it (rt_plan_load_as_written: decoded and validated, a loop
 * form a stage at a time), then expands every stage (what each process
 * did before a session expanded its own) or, with --stage S, stage S
 * alone (what a process of an MPI job does: rt_session_new). Prints one
 * line: the seconds to read, the seconds to expand, the plain
 * instructions then held, and the peak resident memory in MB. A
 * benchmark, never a test (bench/plan_read.sh runs it).
 *
 *   bench_plan_read PLAN [--stage S]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "runtime/plan/plan.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--stage") == 0)) {
        fprintf(stderr, "usage: bench_plan_read PLAN [--stage S]\n");
        return 2;
    }
    int only = argc == 4 ? atoi(argv[3]) : -1;
    su_status err;
    double t0 = now();
    rt_plan *p = rt_plan_load_as_written(argv[1], &err);
    double t1 = now();
    if (!p) {
        fprintf(stderr, "bench_plan_read: %s\n", err.msg);
        return 1;
    }
    if (only >= p->nstages) {
        fprintf(stderr, "bench_plan_read: the plan has %d stages\n", p->nstages);
        rt_plan_free(p);
        return 1;
    }
    bool *which = calloc((size_t)p->nstages + 1, sizeof *which);
    for (int s = 0; which && s < p->nstages; s++)
        which[s] = only < 0 || s == only;
    rt_plan view = *p;
    view.mem_ = NULL;
    bool ok = which && rt_plan_expand_stages(&view, which, &err);
    double t2 = now();
    if (!ok) {
        fprintf(stderr, "bench_plan_read: %s\n", which ? err.msg : "out of memory");
        free(which);
        rt_plan_view_free(&view);
        rt_plan_free(p);
        return 1;
    }
    long long held = 0;
    for (int s = 0; s < view.nstages; s++)
        held += which[s] ? view.stage[s].ninstr : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%.3f %.3f %lld %.0f\n", t1 - t0, t2 - t1, held, (double)ru.ru_maxrss / 1024.0);
    free(which);
    rt_plan_view_free(&view);
    rt_plan_free(p);
    return 0;
}
