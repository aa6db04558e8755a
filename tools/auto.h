/* auto.h: `shardc FILE --auto N`, the search over strategies (included
 * once, by shardc.c, after its parse_args).
 *
 * The candidates: every ordered factorisation of N ranks over the model's
 * mesh axes; with a `train` line, ZeRO 0 to 3 (only 0 where an axis named
 * dp has size 1) and, where it changes the plan, --recompute, and each (mesh, ZeRO) pair
 * with --keep-gathered where that changes its estimated step or memory; with a pipelined
 * repeat whose axis has more than one
 * stage, the schedules gpipe, 1f1b and interleaved(2) with S, 2S, 4S and
 * 8S microbatches (S the stages). Each is compiled in this process as
 * `shardc FILE ARGS --mesh ... --zero ... --report json` would (ARGS the
 * user's other options: -D, --hw, --bucket-mb, ...), without kernels, and
 * read back from its JSON report: the estimated step, the largest stage's
 * planned memory, the pipeline bubble and the bytes each rank sends per
 * mesh axis (the largest stage's).
 *
 * Pruning: the params, gradients and optimizer state of a (mesh, ZeRO)
 * pair do not depend on the schedule, the microbatches or recomputation,
 * so when they alone exceed the memory limit the pair's other candidates
 * are not compiled (counted as over the limit).
 *
 * The ranking: the candidates within --mem-limit (all, without one) by
 * estimated step, then by memory; the top ones are printed with the
 * command that builds each. --auto-csv FILE writes every compiled
 * candidate, --auto-svg FILE a plot of estimated step against memory.
 *
 * The compiles run on as many threads as the machine has processors (at
 * most AUTO_THREADS; SHARDC_AUTO_JOBS=N sets it): first every (mesh,
 * ZeRO) pair with the model's own schedule, then the other candidates of
 * the pairs that fit. Each candidate's figures land in its own slot and
 * are recorded in the order of a one-thread search, so the result is the
 * same whatever the thread count. (Taking the candidates with the most
 * microbatches first ended a search sooner, 46.8 s against 52.2 on
 * pipeline.sh L=32 --auto 32 with 2 threads, but ran the largest
 * compiles together: 13% more peak memory there, and on many threads as
 * many of the largest at once as there are threads, so it was left out.)
 * Those under way at once stay within a memory budget (below: the
 * compiles' memory). On a terminal, standard error shows how many of each
 * round are compiled. */
#include <cjson/cJSON.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { AUTO_MAX_AXES = 8, AUTO_ARGS = 32, AUTO_THREADS = 64 };

typedef struct auto_cand {
    long long mesh[AUTO_MAX_AXES];
    int zero;            /* -1: the model's */
    const char *sched;   /* NULL: the model's */
    int mb;              /* 0: the model's */
    bool recompute;
    bool keep;           /* --keep-gathered */
    bool compiled, fits;
    double step_ms, bubble;
    long long peak, states; /* states: params + gradients + optimizer state */
    long long grads;
    char own_sched[32];  /* the schedule the report names (with chunks: V), "" none */
    int own_mb;
    long long axis_bytes[AUTO_MAX_AXES];
    char error[512];     /* why it did not compile (the first line) */
} auto_cand;

typedef struct auto_run {
    int argc;            /* the user's arguments, without --auto and its kin */
    char **argv;
    const char *file;
    int naxes;
    char axis[AUTO_MAX_AXES][64];
    int pp;              /* the pipeline's axis, or -1 */
    bool train;
    long long limit;     /* bytes; 0: none */
    long long ranks;
    char *limit_words[2]; /* the user's --mem-limit, for the commands printed */
    int nlimit;
    auto_cand *c;
    int n, cap;
    int failed, pruned;
    char first_error[512];
    /* the compiles' memory (auto_eval_all): a candidate of M microbatches
     * is taken to need mem_base + mem_per_mb * M bytes; those at once stay
     * within budget (0: no limit) */
    double mem_base, mem_per_mb, budget;
    int own_mb;          /* the model's own microbatches (1: no pipeline) */
    int most_at_once;    /* the most compiles under way at once */
    int threads;         /* the threads the compiles ran on, at most */
    bool held_back;      /* a compile waited for memory */
} auto_run;

static char *auto_fmt_size(char *b, size_t n, double bytes)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (bytes >= 1024 && k < 4)
        bytes /= 1024, k++;
    snprintf(b, n, "%.1f %s", bytes, u[k]);
    return b;
}

static void auto_mesh_text(const auto_run *R, const auto_cand *c, char *b, size_t n)
{
    size_t k = 0;
    for (int i = 0; i < R->naxes && k < n; i++)
        k += (size_t)snprintf(b + k, n - k, "%s%lld", i ? "x" : "", c->mesh[i]);
}

/* The options of candidate c after the user's, as argv words into w
 * (texts in buf); their count. */
static int auto_words(const auto_run *R, const auto_cand *c, char **w, char buf[4][64])
{
    int n = 0;
    auto_mesh_text(R, c, buf[0], sizeof buf[0]);
    w[n++] = "--mesh";
    w[n++] = buf[0];
    if (c->zero >= 0) {
        snprintf(buf[1], sizeof buf[1], "%d", c->zero);
        w[n++] = "--zero";
        w[n++] = buf[1];
    }
    if (c->sched) {
        w[n++] = "--schedule";
        w[n++] = (char *)c->sched;
    }
    if (c->mb) {
        snprintf(buf[2], sizeof buf[2], "%d", c->mb);
        w[n++] = "--microbatches";
        w[n++] = buf[2];
    }
    if (c->recompute)
        w[n++] = "--recompute";
    if (c->keep)
        w[n++] = "--keep-gathered";
    return n;
}

/* Compiles candidate c (or the user's own options, c NULL; with mb > 0,
 * at mb microbatches) and returns its JSON report, or NULL with the error
 * kept. */
static cJSON *auto_compile(auto_run *R, auto_cand *c, bool recompute_probe, int mb)
{
    char *argv[AUTO_ARGS + 16], buf[4][64];
    int argc = 0;
    for (int i = 0; i < R->argc; i++) /* argv[0] and the user's options */
        argv[argc++] = R->argv[i];
    if (c)
        argc += auto_words(R, c, argv + argc, buf);
    if (recompute_probe)
        argv[argc++] = "--recompute";
    char mbs[32];
    if (mb > 0) {
        snprintf(mbs, sizeof mbs, "%d", mb);
        argv[argc++] = "--microbatches";
        argv[argc++] = mbs;
    }
    argv[argc++] = "--arch";
    argv[argc++] = "none";
    args a = {.opt = shardc_options_new()};
    if (!a.opt)
        return NULL;
    cJSON *json = NULL;
    char *err = NULL, *text = NULL;
    size_t len;
    shardc_program *prog = NULL;
    int rc = parse_args(argc, argv, &a);
    /* its report alone: a deep pipeline's stages dropped as they are costed */
    shardc_options_set_report_only(a.opt, 1);
    if (rc == 0 && shardc_compile_file(a.opt, a.file, &prog, &err) == SHARDC_OK &&
        shardc_program_emit(prog, "report-json", &text, &len, &err) == SHARDC_OK)
        json = cJSON_ParseWithLength(text, len);
    else if (err) /* the candidate's own slot: compiles run on several threads */
        snprintf(c ? c->error : R->first_error, sizeof R->first_error, "%.*s",
                 (int)strcspn(err, "\n"), err);
    shardc_free(text);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(a.opt);
    return json;
}

static double auto_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Reads c's figures from its report; false if the report lacks them. */
static bool auto_read(const auto_run *R, auto_cand *c, const cJSON *j)
{
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(j, "estimate");
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(j, "stages");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(j, "bytes");
    if (!est || !cJSON_IsArray(stages))
        return false;
    c->step_ms = auto_num(est, "step_ms");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(j, "pipeline");
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(pl, "schedule");
    c->bubble = auto_num(pl, "bubble");
    c->own_mb = (int)auto_num(pl, "microbatches");
    if (cJSON_IsString(sn))
        snprintf(c->own_sched, sizeof c->own_sched, auto_num(pl, "chunks") > 1 ? "%s(%.0f)" : "%s",
                 sn->valuestring, auto_num(pl, "chunks"));
    const cJSON *s;
    cJSON_ArrayForEach(s, stages) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "memory");
        long long peak = (long long)auto_num(s, "peak_bytes");
        long long st = (long long)(auto_num(m, "params") + auto_num(m, "gradients") +
                                   auto_num(m, "optimizer_state"));
        c->peak = peak > c->peak ? peak : c->peak;
        c->grads = (long long)fmax((double)c->grads, auto_num(m, "gradients"));
        c->states = st > c->states ? st : c->states;
    }
    cJSON_ArrayForEach(s, bytes) {
        const cJSON *by = cJSON_GetObjectItemCaseSensitive(s, "by_axes");
        for (int a = 0; a < R->naxes; a++) {
            long long b = (long long)auto_num(by, R->axis[a]);
            c->axis_bytes[a] = b > c->axis_bytes[a] ? b : c->axis_bytes[a];
        }
    }
    return true;
}

/* Appends c to the list *v of *n, room for *cap. */
static void auto_append(auto_cand **v, int *n, int *cap, const auto_cand *c)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        auto_cand *g = realloc(*v, (size_t)*cap * sizeof *g);
        if (!g) {
            fprintf(stderr, "shardc: error: out of memory\n");
            exit(EXIT_INTERNAL);
        }
        *v = g;
    }
    (*v)[(*n)++] = *c;
}

static void auto_add(auto_run *R, const auto_cand *c)
{
    auto_append(&R->c, &R->n, &R->cap, c);
}

/* Compiles c and reads its figures (any thread). */
static void auto_eval(auto_run *R, auto_cand *c)
{
    cJSON *j = auto_compile(R, c, false, 0);
    c->compiled = j && auto_read(R, c, j);
    cJSON_Delete(j);
    c->fits = c->compiled && (!R->limit || c->peak <= R->limit);
}

/* Records c, evaluated: its figures, or its failure (the first error of
 * the search kept). False if it did not compile. */
static bool auto_record(auto_run *R, const auto_cand *c)
{
    if (!c->compiled) {
        R->failed++;
        if (!R->first_error[0])
            snprintf(R->first_error, sizeof R->first_error, "%s", c->error);
        return false;
    }
    auto_add(R, c);
    return true;
}

/* A list of candidates evaluated together. */
typedef struct auto_batch {
    auto_run *R;
    auto_cand *c;
    int n, cap;
    int next;            /* the next to take, under lock */
    int done;            /* compiled (or failed), under lock */
    const char *round;   /* what the batch holds, for the progress line */
    bool tty;            /* standard error is a terminal: a progress line */
    double t0, shown;    /* when the search began; the line's last showing */
    double start;        /* when the batch began */
    double work, worked; /* the batch's compiles' weight (auto_need), and
                          * that of those compiled, under lock */
    double held;         /* the memory the compiles under way need, under lock */
    int running;         /* compiles under way, under lock */
    pthread_mutex_t lock;
    pthread_cond_t room; /* a compile ended: memory to start another */
} auto_batch;

/* ---- the compiles' memory ----
 *
 * A compile's memory grows with its microbatches, about linearly: a
 * pipeline's stages are unrolled in them (docs/design.md §3). Each
 * candidate is compiled for its report alone
 * (shardc_options_set_report_only), which drops each stage once it is
 * costed, so a compile holds the stages under way, not all of them.
 * Measured whole before that, on pipeline.sh with 96 layers, `--report
 * json`: 69 MB unpipelined; 1x8x8 and 1x64x8 at 64 microbatches 365 and
 * 391 MB, at 128 668 and 640 MB; 1x64x8 at 512, 2.3 GB (report-only: 459
 * MB, then 326 MB once the estimate kept no events, 2026-12-07). With 32 layers and batch 256 the line is another: 50 MB at 4, 144
 * at 64, 439 at 256.
 * So the search measures its model's line: the model's own compile (M0
 * microbatches, its probe) and, for a pipeline, the same with 4 M0 (2 M0
 * above 16, or where 4 M0 does not compile), each its peak resident memory
 * over the process's before. A candidate of M
 * microbatches is taken to need that line at M, a quarter more (for what
 * the allocator keeps), and the compiles under way at once stay within a
 * budget: four fifths of the memory the system has available when the
 * search starts (SHARDC_AUTO_MEMORY=BYTES sets it). Without a second
 * point the line is taken through a quarter of the probe's memory at 0
 * microbatches. A compile that alone exceeds the budget runs alone.
 * The results do not depend on any of this: each lands in its own slot. */

/* The resident memory now, in bytes (0: unknown). */
static double auto_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%lld %lld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

/* The most resident memory so far, in bytes. */
static double auto_peak_rss(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? 1024.0 * (double)u.ru_maxrss : 0;
}

/* The budget: SHARDC_AUTO_MEMORY's bytes, else four fifths of what
 * /proc/meminfo calls available, else half the physical memory; 0 when
 * none is known. */
static double auto_budget(void)
{
    const char *env = getenv("SHARDC_AUTO_MEMORY");
    if (env && *env) {
        char *end;
        double b = strtod(env, &end);
        if (end != env && !*end && b > 0)
            return b;
    }
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb > 0)
        return 0.8 * 1024.0 * kb;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? 0.5 * (double)pages * (double)size : 0;
}

/* The memory candidate c's compile is taken to need. */
static double auto_need(const auto_run *R, const auto_cand *c)
{
    int m = c->mb ? c->mb : R->own_mb;
    return 1.25 * (R->mem_base + R->mem_per_mb * (m > 1 ? m : 1));
}

static double auto_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The progress line, under b's lock: at most five times a second. The
 * time left is the batch's time so far over the weight compiled, times the
 * weight left: a compile's time grows with its microbatches about as its
 * memory does (pipeline.sh L=96 on 1x64x8: 0.55 s and 391 MB at 64, 5-6 s
 * and 2.3 GB at 512), so the weight is the memory it is taken to need. */
static void auto_progress(auto_batch *b)
{
    double now = auto_now();
    if (!b->tty || (now - b->shown < 0.2 && b->done < b->n))
        return;
    b->shown = now;
    int s = (int)(now - b->t0);
    fprintf(stderr, "\r\033[Kshardc: --auto: %s: %d of %d compiled, %d:%02d", b->round, b->done,
            b->n, s / 60, s % 60);
    if (b->done < b->n && b->worked > 0) {
        double left = (now - b->start) * (b->work - b->worked) / b->worked;
        int l = left < 0 ? 0 : left > 359999 ? 359999 : (int)(left + 0.5);
        fprintf(stderr, ", about %d:%02d left", l / 60, l % 60);
    }
    fflush(stderr);
}

static void auto_push(auto_batch *b, const auto_cand *c)
{
    auto_append(&b->c, &b->n, &b->cap, c);
}

/* The line of a compile's memory against its microbatches (mem_base,
 * mem_per_mb) through the probe's, mem0 (over rss0, the process's before
 * it), and for a pipeline (piped) a second compile's at 4 times the
 * microbatches (up to 16 of them, so that the second compile costs at most
 * about twice the first), else at twice them; the budget. */
static void auto_memory_line(auto_run *R, double mem0, double rss0, bool piped)
{
    mem0 = mem0 < (1 << 20) ? (1 << 20) : mem0;
    R->mem_base = mem0 / 4;
    R->mem_per_mb = (mem0 - R->mem_base) / R->own_mb;
    for (int k = R->own_mb <= 16 ? 4 : 2; piped && k >= 2; k /= 2) {
        cJSON *j = auto_compile(R, NULL, false, k * R->own_mb);
        double per = (auto_peak_rss() - rss0 - mem0) / ((k - 1.0) * R->own_mb);
        bool made = j != NULL;
        cJSON_Delete(j);
        R->first_error[0] = 0; /* k M0 need not divide the batch */
        if (made && per > 0) {
            R->mem_per_mb = per;
            R->mem_base = mem0 - per * R->own_mb > 0 ? mem0 - per * R->own_mb : 0;
            break;
        }
    }
    R->budget = auto_budget();
}

static void *auto_worker(void *arg)
{
    auto_batch *b = arg;
    auto_run *R = b->R;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        int i = b->next++;
        if (i >= b->n) {
            pthread_mutex_unlock(&b->lock);
            return NULL;
        }
        /* room for it: what the compiles under way need, and its own,
         * within the budget; or none under way */
        double need = auto_need(R, &b->c[i]);
        while (R->budget > 0 && b->running > 0 && b->held + need > R->budget) {
            R->held_back = true;
            pthread_cond_wait(&b->room, &b->lock);
        }
        b->held += need;
        b->running++;
        R->most_at_once = b->running > R->most_at_once ? b->running : R->most_at_once;
        pthread_mutex_unlock(&b->lock);
        auto_eval(R, &b->c[i]);
        /* near the budget, what the allocator keeps free goes back to
         * the system: each thread's arena keeps its own (without this,
         * pipeline.sh L=32 --auto 32 on 2 threads peaked at 727 MB within
         * a budget of 286 MB, against 509 MB one compile at a time) */
        if (R->budget > 0 && auto_rss() > R->budget / 2)
            malloc_trim(0);
        pthread_mutex_lock(&b->lock);
        b->held -= need;
        b->worked += need;
        b->running--;
        pthread_cond_broadcast(&b->room);
        b->done++;
        auto_progress(b);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Evaluates every candidate of b on up to the processors' count of
 * threads; the calling thread is one of them. */
static void auto_eval_all(auto_batch *b)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("SHARDC_AUTO_JOBS");
    if (env && atoi(env) > 0)
        cpus = atoi(env);
    int nt = cpus < 1 ? 1 : cpus > AUTO_THREADS ? AUTO_THREADS : (int)cpus;
    nt = nt > b->n ? (b->n > 0 ? b->n : 1) : nt;
    pthread_t tid[AUTO_THREADS];
    bool started[AUTO_THREADS] = {false};
    b->next = b->done = 0;
    b->shown = 0;
    b->held = 0;
    b->running = 0;
    b->start = auto_now();
    b->work = b->worked = 0;
    for (int i = 0; i < b->n; i++)
        b->work += auto_need(b->R, &b->c[i]);
    b->R->threads = nt > b->R->threads ? nt : b->R->threads;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->room, NULL);
    for (int t = 1; t < nt; t++)
        started[t] = pthread_create(&tid[t], NULL, auto_worker, b) == 0;
    auto_worker(b); /* a thread that did not start leaves its share to this one */
    for (int t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->room);
    if (b->tty && b->n) { /* the line gone: the table follows */
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

/* The (mesh, ZeRO) pairs of the mesh base (its axes set), each with the
 * model's own schedule and microbatches, into b. */
static void auto_pairs(auto_run *R, auto_cand base, auto_batch *b)
{
    /* ZeRO over a dp of 1 is no ZeRO: only stage 0 there */
    int zmax = R->train ? 3 : -1;
    for (int i = 0; i < R->naxes; i++)
        if (!strcmp(R->axis[i], "dp") && base.mesh[i] == 1 && R->train)
            zmax = 0;
    for (int z = R->train ? 0 : -1; z <= zmax; z++) {
        auto_cand c = base;
        c.zero = z;
        auto_push(b, &c);
    }
}

/* The other candidates of pair c, evaluated: --keep-gathered (training),
 * --recompute, and with a pipeline over more than one stage its schedules
 * and microbatches (but the model's own, which c is), into b. */
static void auto_variants(auto_run *R, const auto_cand *c, bool recompute_matters,
                          auto_batch *b)
{
    static const char *const scheds[] = {"gpipe", "1f1b", "interleaved(2)"};
    auto_cand base = {0};
    memcpy(base.mesh, c->mesh, sizeof base.mesh);
    base.zero = c->zero;
    bool piped = R->pp >= 0 && base.mesh[R->pp] > 1;
    if (R->train) {
        auto_cand p = base;
        p.keep = true;
        auto_push(b, &p);
    }
    for (int rc = 0; rc <= (int)recompute_matters; rc++) {
        if (rc) {
            auto_cand p = base;
            p.recompute = true;
            auto_push(b, &p);
        }
        for (int s = 0; piped && s < 3; s++)
            for (int k = 1; k <= 8; k *= 2) {
                auto_cand p = base;
                p.recompute = rc;
                p.sched = scheds[s];
                p.mb = (int)(k * base.mesh[R->pp]);
                /* the model's own, compiled as the pair (or with --recompute) */
                if (p.mb == c->own_mb && !strcmp(p.sched, c->own_sched))
                    continue;
                auto_push(b, &p);
            }
    }
}

/* Every ordered factorisation of left ranks over axes i.., each mesh's
 * pairs into b. */
static void auto_factor(auto_run *R, auto_cand *c, int i, long long left, auto_batch *b)
{
    if (i == R->naxes - 1) {
        c->mesh[i] = left;
        auto_pairs(R, *c, b);
        return;
    }
    for (long long f = 1; f <= left; f++)
        if (left % f == 0) {
            c->mesh[i] = f;
            auto_factor(R, c, i + 1, left / f, b);
        }
}

/* The whole search: the pairs, then the variants of those that fit (a
 * pair whose params, gradients and optimizer state alone exceed the limit
 * is pruned: nothing else shrinks these), recorded pair by pair, each
 * followed by its variants, as one thread would find them. */
static void auto_all(auto_run *R, bool recompute_matters)
{
    bool tty = isatty(STDERR_FILENO);
    double t0 = auto_now();
    auto_batch pairs = {.R = R, .round = "meshes and ZeRO stages", .tty = tty, .t0 = t0},
               vars = {.R = R, .round = "their schedules and options", .tty = tty, .t0 = t0};
    auto_cand c = {0};
    auto_factor(R, &c, 0, R->ranks, &pairs);
    auto_eval_all(&pairs);
    int *first = malloc(((size_t)pairs.n + 1) * sizeof *first);
    if (!first) {
        fprintf(stderr, "shardc: error: out of memory\n");
        exit(EXIT_INTERNAL);
    }
    for (int i = 0; i < pairs.n; i++) {
        const auto_cand *p = &pairs.c[i];
        first[i] = vars.n;
        bool piped = R->pp >= 0 && p->mesh[R->pp] > 1;
        if (!p->compiled)
            continue;
        if (R->limit && p->states > R->limit) {
            R->pruned += (piped ? 12 : 0) * (1 + recompute_matters) + recompute_matters + R->train;
            continue;
        }
        auto_variants(R, p, recompute_matters, &vars);
    }
    first[pairs.n] = vars.n;
    auto_eval_all(&vars);
    for (int i = 0; i < pairs.n; i++) {
        const auto_cand *p = &pairs.c[i];
        auto_record(R, p);
        for (int k = first[i]; k < first[i + 1]; k++) {
            const auto_cand *v = &vars.c[k];
            /* --keep-gathered where nothing the forward gathers is read
             * again: the pair's plan, not another strategy */
            if (v->keep && v->compiled && v->step_ms == p->step_ms && v->peak == p->peak)
                continue;
            auto_record(R, v);
        }
    }
    free(first);
    free(pairs.c);
    free(vars.c);
}

static int auto_cmp(const void *a, const void *b)
{
    const auto_cand *x = a, *y = b;
    if (x->fits != y->fits)
        return x->fits ? -1 : 1;
    if (x->step_ms != y->step_ms)
        return x->step_ms < y->step_ms ? -1 : 1;
    return (x->peak > y->peak) - (x->peak < y->peak);
}

static void auto_command(const auto_run *R, const auto_cand *c, char *b, size_t n)
{
    char *w[16], buf[4][64];
    int nw = auto_words(R, c, w, buf);
    size_t k = (size_t)snprintf(b, n, "shardc");
    for (int i = 1; i < R->argc && k < n; i++)
        k += (size_t)snprintf(b + k, n - k, " %s", R->argv[i]);
    for (int i = 0; i < nw && k < n; i++) /* interleaved(2) quoted for the shell */
        k += (size_t)snprintf(b + k, n - k, strchr(w[i], '(') ? " '%s'" : " %s", w[i]);
    for (int i = 0; i < R->nlimit && k < n; i++)
        k += (size_t)snprintf(b + k, n - k, " %s", R->limit_words[i]);
    if (k < n)
        snprintf(b + k, n - k, " -o model.plan");
}

static void auto_strategy(const auto_run *R, const auto_cand *c, char *b, size_t n)
{
    size_t k = 0;
    for (int i = 0; i < R->naxes && k < n; i++)
        k += (size_t)snprintf(b + k, n - k, "%s%s=%lld", i ? " " : "", R->axis[i], c->mesh[i]);
    if (c->zero >= 0 && k < n)
        k += (size_t)snprintf(b + k, n - k, " zero %d", c->zero);
    if (c->sched && k < n)
        k += (size_t)snprintf(b + k, n - k, " %s mb %d", c->sched, c->mb);
    if (c->recompute && k < n)
        k += (size_t)snprintf(b + k, n - k, " recompute");
    if (c->keep && k < n)
        snprintf(b + k, n - k, " keep-gathered");
}

static int auto_csv(const auto_run *R, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "shardc: error: --auto-csv %s: %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    fprintf(f, "rank,mesh,zero,schedule,microbatches,recompute,keep_gathered,step_ms,peak_bytes,"
            "fits,bubble");
    for (int a = 0; a < R->naxes; a++)
        fprintf(f, ",bytes_%s", R->axis[a]);
    fprintf(f, ",command\n");
    for (int i = 0; i < R->n; i++) {
        const auto_cand *c = &R->c[i];
        char mesh[128], cmd[1024];
        auto_mesh_text(R, c, mesh, sizeof mesh);
        auto_command(R, c, cmd, sizeof cmd);
        fprintf(f, "%d,%s,%d,%s,%d,%d,%d,%.6f,%lld,%d,%.6f", i + 1, mesh, c->zero,
                c->sched ? c->sched : "", c->mb, c->recompute, c->keep, c->step_ms, c->peak,
                c->fits, c->bubble);
        for (int a = 0; a < R->naxes; a++)
            fprintf(f, ",%lld", c->axis_bytes[a]);
        fprintf(f, ",\"%s\"\n", cmd);
    }
    return fclose(f) ? EXIT_INPUT : 0;
}

/* The plot: estimated step (y) against planned memory (x), one point per
 * compiled candidate; within the limit blue, over it grey, the best one
 * red and labelled; the limit a dashed line. */
static int auto_svg(const auto_run *R, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "shardc: error: --auto-svg %s: %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    const double W = 640, H = 420, L = 70, B = 50, T = 40, Rm = 20;
    double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0;
    for (int i = 0; i < R->n; i++) {
        double x = (double)R->c[i].peak / 1048576.0, y = R->c[i].step_ms;
        x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
    }
    if (R->limit)
        x1 = fmax(x1, (double)R->limit / 1048576.0);
    if (!(x1 > x0))
        x1 = x0 + 1;
    if (!(y1 > y0))
        y1 = y0 + 1;
    x0 = fmax(0, x0 - 0.05 * (x1 - x0)), x1 += 0.05 * (x1 - x0);
    y0 = fmax(0, y0 - 0.05 * (y1 - y0)), y1 += 0.05 * (y1 - y0);
#define PX(x) (L + ((x) - x0) / (x1 - x0) * (W - L - Rm))
#define PY(y) (H - B - ((y) - y0) / (y1 - y0) * (H - B - T))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">%s on %lld ranks: estimated step "
               "against planned memory per rank</text>\n", L, R->file, R->ranks);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
            H - B, W - Rm, H - B);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L, T,
            L, H - B);
    for (int k = 0; k <= 4; k++) {
        double x = x0 + k * (x1 - x0) / 4, y = y0 + k * (y1 - y0) / 4;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n", PX(x),
                H - B + 16, x);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", L - 6,
                PY(y) + 4, y);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">planned memory per rank "
               "(MiB)</text>\n", (L + W - Rm) / 2, H - 12);
    fprintf(f, "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
               "text-anchor=\"middle\">estimated step (ms)</text>\n", (T + H - B) / 2,
            (T + H - B) / 2);
    if (R->limit)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"grey\" "
                   "stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"grey\">"
                   "--mem-limit</text>\n",
                PX((double)R->limit / 1048576.0), T, PX((double)R->limit / 1048576.0), H - B,
                PX((double)R->limit / 1048576.0) - 70, T + 12);
    for (int i = R->n - 1; i >= 0; i--) {
        const auto_cand *c = &R->c[i];
        const char *col = i == 0 && c->fits ? "red" : c->fits ? "steelblue" : "silver";
        char s[256];
        auto_strategy(R, c, s, sizeof s);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>%s: %.3f ms, "
                   "%.1f MiB</title></circle>\n",
                PX((double)c->peak / 1048576.0), PY(c->step_ms), i == 0 ? 5 : 3, col, s,
                c->step_ms, (double)c->peak / 1048576.0);
        if (i == 0 && c->fits)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"red\">best: %s</text>\n",
                    PX((double)c->peak / 1048576.0) + 8, PY(c->step_ms) - 8, s);
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return fclose(f) ? EXIT_INPUT : 0;
}

/* `shardc FILE ARGS --auto N [--top K] [--auto-csv F] [--auto-svg F]`. */
static int auto_search(int argc, char **argv)
{
    auto_run R = {.pp = -1};
    char *kept[AUTO_ARGS], *base[AUTO_ARGS + 2];
    int nbase = 1;
    kept[R.argc++] = base[0] = argv[0];
    const char *csv = NULL, *svg = NULL, *v;
    long long top = 10;
    for (int i = 1; i < argc; i++) {
        char *end;
        if ((v = value_of(argc, argv, &i, "--auto"))) {
            errno = 0;
            R.ranks = strtoll(v, &end, 10);
            if (end == v || *end || errno || R.ranks < 1 || R.ranks > 1 << 20)
                return usage_error("--auto '%s': expected a rank count, 1 to 2^20", v);
        } else if ((v = value_of(argc, argv, &i, "--top"))) {
            errno = 0;
            top = strtoll(v, &end, 10);
            if (end == v || *end || errno || top < 1)
                return usage_error("--top '%s': expected a count", v);
        } else if ((v = value_of(argc, argv, &i, "--auto-csv"))) {
            csv = v;
        } else if ((v = value_of(argc, argv, &i, "--auto-svg"))) {
            svg = v;
        } else if (!strncmp(argv[i], "--mesh", 6) || !strncmp(argv[i], "--zero", 6) ||
                   !strncmp(argv[i], "--schedule", 10) ||
                   !strncmp(argv[i], "--microbatches", 14) || !strcmp(argv[i], "--recompute") ||
                   !strcmp(argv[i], "--keep-gathered") ||
                   !strncmp(argv[i], "--emit", 6) || !strncmp(argv[i], "--report", 8) ||
                   !strcmp(argv[i], "-o") || !strncmp(argv[i], "--trace", 7) ||
                   !strcmp(argv[i], "--explain-sharding") || !strncmp(argv[i], "--stop-after", 12) ||
                   !strncmp(argv[i], "--passes", 8) || !strncmp(argv[i], "--print-after", 13)) {
            return usage_error("--auto chooses the mesh, --zero, --schedule, --microbatches, "
                               "--recompute and --keep-gathered and prints its table: it takes "
                               "no %s", argv[i]);
        } else if (R.argc == AUTO_ARGS) {
            return usage_error("%s", "--auto: too many other options");
        } else if (!strncmp(argv[i], "--mem-limit", 11)) {
            /* read below from the options; candidates compile without it */
            R.limit_words[R.nlimit++] = base[nbase++] = argv[i];
            if (!strchr(argv[i], '=') && i + 1 < argc)
                R.limit_words[R.nlimit++] = base[nbase++] = argv[++i];
        } else {
            kept[R.argc++] = base[nbase++] = argv[i];
        }
    }
    if (!R.ranks)
        return usage_error("%s", "--auto needs a rank count");
    /* the user's options, the memory limit included, parsed as a compile would */
    args a = {.opt = shardc_options_new()};
    if (!a.opt)
        return EXIT_INTERNAL;
    int rc = parse_args(nbase, base, &a);
    R.limit = rc ? 0 : shardc_options_mem_limit(a.opt);
    R.file = a.file;
    shardc_options_free(a.opt);
    if (!rc) {
        const cli_file out[] = {{"--auto-csv", csv}, {"--auto-svg", svg}};
        const cli_file in[] = {{"the model", a.file}, {"the hardware profile", a.hw_file}};
        rc = cli_check_outputs("shardc", out, 2, in, 2);
    }
    if (rc)
        return rc;
    R.argv = kept;
    /* the model's axes, pipeline and training, from its own mesh; the
     * memory its compile takes, the yardstick of the candidates' */
    double rss0 = auto_rss();
    cJSON *probe = auto_compile(&R, NULL, false, 0);
    double mem0 = auto_peak_rss() - rss0;
    if (!probe) {
        fprintf(stderr, "shardc: error: --auto: %s does not compile with its own mesh: %s\n",
                R.file, R.first_error[0] ? R.first_error : "?");
        return EXIT_INPUT;
    }
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(probe, "mesh"), "axes");
    const cJSON *ax;
    cJSON_ArrayForEach(ax, axes) if (cJSON_IsString(ax) && R.naxes < AUTO_MAX_AXES)
        snprintf(R.axis[R.naxes++], sizeof R.axis[0], "%s", ax->valuestring);
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(probe, "pipeline");
    const cJSON *plx = cJSON_GetObjectItemCaseSensitive(pl, "axis");
    for (int i = 0; cJSON_IsString(plx) && i < R.naxes; i++)
        if (!strcmp(R.axis[i], plx->valuestring))
            R.pp = i;
    auto_cand p0 = {0};
    auto_read(&R, &p0, probe);
    R.train = p0.grads > 0;
    R.own_mb = p0.own_mb > 1 ? p0.own_mb : 1;
    auto_memory_line(&R, mem0, rss0, p0.own_mb > 0);
    cJSON_Delete(probe);
    bool recompute_matters = false;
    if (R.train) { /* only where the model has blocks: --recompute changes the plan */
        cJSON *j = auto_compile(&R, NULL, true, 0);
        auto_cand p1 = {0};
        recompute_matters = j && auto_read(&R, &p1, j) && p1.peak != p0.peak;
        cJSON_Delete(j);
    }
    if (!R.naxes) {
        fprintf(stderr, "shardc: error: --auto: %s declares no mesh\n", R.file);
        return EXIT_INPUT;
    }
    R.first_error[0] = 0;
    auto_all(&R, recompute_matters);
    qsort(R.c, (size_t)R.n, sizeof *R.c, auto_cmp);
    int fit = 0;
    for (int i = 0; i < R.n; i++)
        fit += R.c[i].fits;
    char lim[32];
    printf("# --auto %lld: %s, %d strategies compiled: %d within the memory limit (%s), %d "
           "over it, %d more pruned as over it, %d do not compile%s%s\n",
           R.ranks, R.file, R.n, fit, R.limit ? auto_fmt_size(lim, sizeof lim, (double)R.limit)
                                                : "none",
           R.n - fit, R.pruned, R.failed, R.failed ? ", as " : "",
           R.failed ? R.first_error : "");
    printf("%-4s %10s %10s %6s  %-46s", "rank", "step ms", "memory", "bubble", "strategy");
    for (int a = 0; a < R.naxes; a++)
        printf(" %10s", R.axis[a]);
    printf("   (bytes sent per rank by axis)\n");
    for (int i = 0; i < R.n && i < top && R.c[i].fits; i++) {
        const auto_cand *k = &R.c[i];
        char s[256], m[32];
        auto_strategy(&R, k, s, sizeof s);
        printf("%-4d %10.3f %10s %6.3f  %-46s", i + 1, k->step_ms,
               auto_fmt_size(m, sizeof m, (double)k->peak), k->bubble, s);
        for (int a = 0; a < R.naxes; a++)
            printf(" %10lld", k->axis_bytes[a]);
        printf("\n");
    }
    for (int i = 0; i < R.n && i < top && R.c[i].fits; i++) {
        char cmd[1024];
        auto_command(&R, &R.c[i], cmd, sizeof cmd);
        printf("%-4d %s\n", i + 1, cmd);
    }
    if (!fit)
        printf("no strategy fits the memory limit\n");
    if (R.held_back) {
        char b1[32], b2[32];
        fprintf(stderr,
                "shardc: --auto: compiles held back to stay within %s of memory: at most %d "
                "at once on %d threads (a compile taken to need %s a microbatch)\n",
                auto_fmt_size(b1, sizeof b1, R.budget), R.most_at_once, R.threads,
                auto_fmt_size(b2, sizeof b2, 1.25 * R.mem_per_mb));
    }
    rc = csv ? auto_csv(&R, csv) : 0;
    if (!rc && svg)
        rc = auto_svg(&R, svg);
    free(R.c);
    return rc ? rc : fit ? 0 : EXIT_INPUT;
}
