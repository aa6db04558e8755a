/* parallel.c: a loop over independent items on a few threads
 * (support.h). */
#include "support.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct par {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n, next;
    pthread_mutex_t mu;
} par;

static void *par_worker(void *arg)
{
    par *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        p->fn(p->ctx, i);
    }
}

int su_threads_env(const char *v)
{
    if (!v || !*v)
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 1 || n > SU_MAX_THREADS ? -1 : (int)n;
}

int su_processors(void)
{
    int t = su_threads_env(getenv("SHARDC_THREADS"));
    if (t > 0)
        return t;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > SU_MAX_THREADS ? SU_MAX_THREADS : (int)n;
}

void su_parallel_for(int n, int threads, void (*fn)(void *ctx, int i), void *ctx)
{
    int nt = threads < 1 ? 1 : threads > SU_MAX_THREADS ? SU_MAX_THREADS : threads;
    nt = nt > n ? n : nt;
    par p = {.fn = fn, .ctx = ctx, .n = n};
    if (nt <= 1 || pthread_mutex_init(&p.mu, NULL) != 0) {
        for (int i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pthread_t tid[SU_MAX_THREADS];
    bool started[SU_MAX_THREADS] = {false};
    for (int t = 1; t < nt; t++) /* a thread that cannot start leaves its share to the others */
        started[t] = pthread_create(&tid[t], NULL, par_worker, &p) == 0;
    par_worker(&p);
    for (int t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&p.mu);
}

typedef struct job_call {
    bool (*fn)(void *arg, su_buf *err);
    void *arg;
    su_buf *err;
    bool ok;
} job_call;

static void job_run(void *p)
{
    job_call *c = p;
    c->ok = c->fn(c->arg, c->err);
}

bool su_job(bool (*fn)(void *arg, su_buf *err), void *arg, char **msg, bool *oom)
{
    jmp_buf guard;
    su_buf err;
    su_buf_init(&err, &guard);
    job_call c = {fn, arg, &err, false};
    *msg = NULL;
    *oom = !su_catch(&guard, job_run, &c);
    if (*oom)
        c.ok = false;
    else if (err.len)
        *msg = strdup(err.s);
    su_buf_free(&err);
    return c.ok;
}
