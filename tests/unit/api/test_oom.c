/* test_oom.c: the C API under allocation failure. One sequence of calls
 * (options, compiling, every output of shardc_program_emit, the program
 * compiled again for its report alone and its two reports, and for its
 * plan alone, its two reports and its plan saved, the plan made,
 * saved and loaded, a training session with bound inputs, a step, its
 * output, outputs file, trace, params and a checkpoint, and a second
 * session resumed from it for another step) runs once to count its
 * allocations, then again for every k with the k-th allocation made to
 * fail, until a run makes fewer than k; for a data-parallel model and a
 * pipelined one over 2 and over 8 microbatches (compiled from a file, and
 * again from its logical IR). Each call must succeed with the reference run's
 * result, or fail with a status and a message: SHARDC_ERR_NOMEM for the
 * compiler's calls, never SHARDC_ERR_INTERNAL. It must never crash, exit
 * or leak: every block the library allocated during a run is freed by the
 * end of it (and LeakSanitizer agrees, in the sanitizer build).
 *
 * The library's malloc, calloc, realloc, strdup and strndup calls (its
 * own, su_xmalloc's, arenas' and buffers') are wrapped at link time
 * (-Wl,--wrap, tests/CMakeLists.txt), so the hook lives in this test and
 * the library's code is the shipped code. Allocations inside other
 * libraries (libc's stdio, cJSON, OpenBLAS, MPI) are not counted. Files go
 * to $TMPDIR, else /dev/shm (no fsync costs), else /tmp.
 *
 *   test_oom [FIRST [LAST [STRIDE]]]   the ks to try (default: all, every 1;
 *                                      SHARDC_OOM_STRIDE sets the stride;
 *                                      SHARDC_OOM_VERBOSE prints each
 *                                      failed call's message)
 */
#include "check.h"
#include "ckpt_util.h"
#include "runtime/cuda/nvrtc.h"
#include "shardc.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

/* ---- the allocation hook ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void __real_free(void *p);

static atomic_long fail_at;    /* the allocation to fail (1-based); 0: none */
static atomic_long nalloc;     /* allocations counted since arm() */
static atomic_bool counting;   /* whether allocations are counted */
static atomic_bool injected;   /* the failure happened */
static bool verbose;           /* SHARDC_OOM_VERBOSE: each failed call's message */

/* The blocks allocated while counting, until freed (open addressing, keyed
 * by address; a free of a block from before is not in it). */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *live;
static size_t live_cap, live_n, live_used; /* used: live and tombstones */
#define TOMB ((uintptr_t)1)

static size_t slot_of(uintptr_t p, size_t cap)
{
    return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static void live_grow(void)
{
    size_t cap = live_cap ? live_cap * 2 : 1 << 12;
    if (live_n * 4 < live_cap)
        cap = live_cap; /* mostly tombstones: rehash at the same size */
    uintptr_t *t = __real_calloc(cap, sizeof *t);
    if (!t)
        abort();
    for (size_t i = 0; i < live_cap; i++)
        if (live[i] > TOMB) {
            size_t j = slot_of(live[i], cap);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = live[i];
        }
    __real_free(live);
    live = t;
    live_cap = cap;
    live_used = live_n;
}

static void live_add(void *p)
{
    if (!p || !atomic_load(&counting))
        return;
    pthread_mutex_lock(&live_mu);
    if ((live_used + 1) * 2 > live_cap)
        live_grow();
    size_t j = slot_of((uintptr_t)p, live_cap);
    while (live[j] > TOMB)
        j = (j + 1) & (live_cap - 1);
    if (!live[j])
        live_used++;
    live[j] = (uintptr_t)p;
    live_n++;
    pthread_mutex_unlock(&live_mu);
}

static void live_remove(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&live_mu);
    if (live_cap) {
        size_t j = slot_of((uintptr_t)p, live_cap);
        while (live[j] && live[j] != (uintptr_t)p)
            j = (j + 1) & (live_cap - 1);
        if (live[j]) {
            live[j] = TOMB;
            live_n--;
        }
    }
    pthread_mutex_unlock(&live_mu);
}

/* Whether this allocation is the one to fail. */
static bool fail_now(void)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed))
        return false;
    long k = atomic_fetch_add(&nalloc, 1) + 1;
    if (k != atomic_load(&fail_at))
        return false;
    atomic_store(&injected, true);
    errno = ENOMEM;
    return true;
}

void *__wrap_malloc(size_t n)
{
    if (fail_now())
        return NULL;
    void *p = __real_malloc(n);
    live_add(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (fail_now())
        return NULL;
    void *p = __real_calloc(n, size);
    live_add(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_now())
        return NULL;
    void *q = __real_realloc(p, n);
    if (q || n == 0) {
        live_remove(p);
        live_add(q);
    }
    return q;
}

char *__wrap_strdup(const char *s)
{
    if (fail_now())
        return NULL;
    char *p = __real_strdup(s);
    live_add(p);
    return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
    if (fail_now())
        return NULL;
    char *p = __real_strndup(s, n);
    live_add(p);
    return p;
}

void __wrap_free(void *p)
{
    live_remove(p);
    __real_free(p);
}

/* Counts from here, failing allocation k (0: none). */
static void arm(long k)
{
    atomic_store(&nalloc, 0);
    atomic_store(&fail_at, k);
    atomic_store(&injected, false);
    atomic_store(&counting, true);
}

static void disarm(void) { atomic_store(&counting, false); }

/* ---- the sequence ---- */

/* A model and how the sequence feeds it: x (and y, when it has one) bound
 * as [8, 4] f32, the output `out` read back. */
typedef struct model {
    const char *name, *text, *mesh;
    bool has_y;
    const char *out;
    bool from_file;          /* shardc_compile_file, not _string */
    const char *archs;       /* the kernels' targets (compiled by NVRTC,
                              * through a cache), "none": no kernels */
    int stride;              /* of k, times the test's */
} model;

#define MLP                                                                    \
    "mesh dp\n"                                                                \
    "let B = 8, D = 4, H = 8\n"                                                \
    "input  x  : f32[B, D] shard(dp, _)\n"                                     \
    "input  y  : f32[B, D] shard(dp, _)\n"                                     \
    "param  w1 : f32[D, H] = normal(0.5)\n"                                    \
    "param  w2 : f32[H, D] = normal(0.5)\n"                                    \
    "out  = gelu(x @ w1) @ w2\n"                                               \
    "loss = mse(out, y)\n"                                                     \
    "output out, loss\n"                                                       \
    "train loss with adamw(lr = 0.01)\n"

/* Two layers over two stages, trained with momentum, in M microbatches. */
#define PIPELINE(M)                                                            \
    "mesh pp\n"                                                                \
    "input x : f32[8, 4]\n"                                                    \
    "block layer(h : f32[8, 4]) -> f32[8, 4] {\n"                              \
    "    param w : f32[4, 4] = normal(0.5)\n"                                  \
    "    return tanh(h @ w)\n"                                                 \
    "}\n"                                                                      \
    "repeat 2 as layers over pp { x = layer(x) }\n"                            \
    "param g : f32[4] = normal(0.5)\n"                                         \
    "loss = sum(sum(x - g, axis = 0), axis = -1)\n"                            \
    "train loss with sgd(lr = 0.05, momentum = 0.9)\n"                         \
    "pipeline microbatches " M " schedule 1f1b\n"

static const model models[] = {
    /* data parallel, adamw's states, gradients in one bucket */
    {"mlp", MLP,
     "2", true, "out", false, "none", 1},
    /* two stages, 1F1B over two microbatches, momentum */
    {"pipeline", PIPELINE("2"), "2", false, "loss", true, "none", 1},
    /* the same over eight microbatches: the middle ones held once from the
     * split to the verifier (passes/instances.c), then put back */
    {"pipeline-8", PIPELINE("8"), "2", false, "loss", true, "none", 1},
    /* mlp with a kernel plan, when NVRTC is here: every 50th k (each
     * run builds three plans with kernels, read from NVRTC's cache) */
    {"mlp-kernels", MLP, "2", true, "out", false, "sm_80", 50},
};

static const char *const kinds[] = {"ir",       "train-ir", "sharded-ir", "stage-ir",
                                    "fused-ir", "cuda",     "explain",    "report",
                                    "report-json", "schedule", "trace"};
#define NKINDS (int)(sizeof kinds / sizeof *kinds)

/* What a run gives: hashes of every text and tensor it made. */
typedef struct result {
    uint64_t emit[NKINDS];
    uint64_t out;          /* the output "out" of the first step */
    double loss[2];        /* after step 1 and the resumed step 2 */
    int calls;             /* calls that succeeded */
} result;

static float xs[8 * 4], ys[8 * 4];
static char dir[64], plan_path[96], ckpt_path[96], params_path[96], trace_path[96],
    outputs_path[96], model_path[96], cache_path[96];

static uint64_t hash(const void *data, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)data)[i]) * 0x100000001b3ull;
    return h;
}

/* The state of one run; everything is freed by run_free. */
typedef struct run {
    const model *M;
    long k;                  /* the allocation failed, 0: none */
    const result *want;      /* the reference run's results, NULL: this is it */
    result got;
    shardc_options *opt;
    shardc_program *prog, *prog_ir, *prog_rep, *prog_plan;
    uint64_t alone;          /* the plan-only compile's plan, its file's hash */
    char *ir;                /* the logical IR, compiled again as textual IR */
    shardc_plan *plan, *plan2;
    shardc_session *s, *s2;
    bool failed;             /* a call failed: the sequence stopped */
    const char *failed_in;   /* the call */
    bool compiler;           /* in the compiler's calls (up to the plan) */
} run;

/* Checks a call's status: a failure stops the sequence, and must come
 * with a message, and only where a failure was injected. */
static bool ok(run *r, shardc_status st, char **errp, const char *what)
{
    char *err = *errp;
    *errp = NULL;
    if (st == SHARDC_OK) {
        if (err) {
            fprintf(stderr, "k=%ld: %s succeeded with a message: %s\n", r->k, what, err);
            CHECK(err == NULL);
        }
        shardc_free(err);
        r->got.calls++;
        return true;
    }
    r->failed = true;
    r->failed_in = what;
    if (verbose)
        fprintf(stderr, "k=%ld: %s: status %d: %s\n", r->k, what, (int)st, err ? err : "(none)");
    if (!atomic_load(&injected) || !err || !*err || st < SHARDC_ERR_INPUT ||
        st > SHARDC_ERR_PEER)
        fprintf(stderr, "k=%ld: %s: status %d without an injected failure or a message: %s\n",
                r->k, what, (int)st, err ? err : "(none)");
    CHECK(atomic_load(&injected));
    CHECK(err && *err);
    CHECK(st >= SHARDC_ERR_INPUT && st <= SHARDC_ERR_PEER);
    /* never blamed on a bug; the compiler's calls say what it was */
    if (st == SHARDC_ERR_INTERNAL || (r->compiler && st != SHARDC_ERR_NOMEM))
        fprintf(stderr, "k=%ld: %s: status %d for an allocation failure: %s\n", r->k, what,
                (int)st, err ? err : "(none)");
    CHECK(st != SHARDC_ERR_INTERNAL);
    CHECK(!r->compiler || st == SHARDC_ERR_NOMEM);
    shardc_free(err);
    return false;
}

/* A result of a call that succeeded must be the reference run's. */
#define SAME(r, field, what)                                                     \
    do {                                                                         \
        if ((r)->want && (r)->got.field != (r)->want->field) {                   \
            fprintf(stderr, "k=%ld: %s differs from the reference run's\n",      \
                    (r)->k, what);                                               \
            CHECK((r)->got.field == (r)->want->field);                           \
        }                                                                        \
    } while (0)

static bool emit_all(run *r)
{
    for (int i = 0; i < NKINDS; i++) {
        char *text = NULL, *err = NULL;
        size_t len = 0;
        if (!ok(r, shardc_program_emit(r->prog, kinds[i], &text, &len, &err), &err, kinds[i]))
            return false;
        CHECK(text && strlen(text) == len);
        r->got.emit[i] = text ? hash(text, len) : 0;
        SAME(r, emit[i], kinds[i]);
        shardc_free(text);
    }
    return true;
}

/* The model compiled again into *prog, with the options as they are. */
static bool compile_again(run *r, shardc_program **prog, const char *what)
{
    char *err = NULL;
    return ok(r, r->M->from_file ? shardc_compile_file(r->opt, model_path, prog, &err)
                                 : shardc_compile_string(r->opt, "m.sh", r->M->text,
                                                         strlen(r->M->text), prog, &err),
              &err, what);
}

/* prog's two reports are the whole program's. */
static bool reports_same(run *r, const shardc_program *prog, const char *what)
{
    char *err = NULL;
    for (int i = 0; i < NKINDS; i++) {
        if (strcmp(kinds[i], "report") && strcmp(kinds[i], "report-json"))
            continue;
        char *text = NULL;
        size_t len = 0;
        if (!ok(r, shardc_program_emit(prog, kinds[i], &text, &len, &err), &err, what))
            return false;
        if (r->got.emit[i] != (text ? hash(text, len) : 0)) {
            fprintf(stderr, "k=%ld: the %s compile's %s differs\n", r->k, what, kinds[i]);
            CHECK(!"the compile's report is the whole program's");
        }
        shardc_free(text);
    }
    return true;
}

/* The program compiled for its report alone (its stages dropped as they
 * are costed): its two reports are the whole program's. */
static bool report_alone(run *r)
{
    shardc_options_set_report_only(r->opt, 1);
    bool done = compile_again(r, &r->prog_rep, "compile report only");
    shardc_options_set_report_only(r->opt, 0);
    return done && reports_same(r, r->prog_rep, "report-only");
}

static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint64_t h = 0xcbf29ce484222325ull;
    int c;
    while (f && (c = getc(f)) != EOF)
        h = (h ^ (unsigned char)c) * 0x100000001b3ull;
    if (f)
        fclose(f);
    return f ? h : 0;
}

/* The program compiled for its plan alone (a pipeline's stages built into
 * it as they are made): its two reports are the whole program's, and its
 * plan, saved, is kept by its hash (plan_same). */
static bool plan_alone(run *r)
{
    char *err = NULL;
    shardc_options_set_plan_only(r->opt, 1);
    bool done = compile_again(r, &r->prog_plan, "compile plan only");
    shardc_options_set_plan_only(r->opt, 0);
    if (!done || !reports_same(r, r->prog_plan, "plan-only"))
        return false;
    r->compiler = false; /* writing a file may fail as I/O (save_plan below) */
    done = ok(r, shardc_program_save_plan(r->prog_plan, plan_path, &err), &err,
              "save plan only");
    r->compiler = true;
    if (!done)
        return false;
    r->alone = file_hash(plan_path);
    return true;
}

/* The whole program's plan, saved, is the plan-only compile's. */
static bool plan_same(run *r)
{
    uint64_t h = file_hash(plan_path);
    if (h != r->alone || !h) {
        fprintf(stderr, "k=%ld: the plan-only compile's plan differs\n", r->k);
        CHECK(!"the plan-only compile's plan is the whole program's");
    }
    return true;
}

/* A session on r->plan with x and y bound. */
static bool open_session(run *r, shardc_session **s)
{
    shardc_session_config cfg = {.backend = "cpu", .comm = "local", .seed = 7, .trace = 1};
    char *err = NULL;
    return ok(r, shardc_session_new(r->plan, &cfg, s, &err), &err, "session_new") &&
           ok(r, shardc_session_check_steps(*s, 1, &err), &err, "check_steps") &&
           ok(r, shardc_session_bind(*s, "x", xs, sizeof xs, &err), &err, "bind x") &&
           (!r->M->has_y ||
            ok(r, shardc_session_bind(*s, "y", ys, sizeof ys, &err), &err, "bind y"));
}

static bool step(run *r, shardc_session *s, int i)
{
    char *err = NULL;
    if (!ok(r, shardc_session_run(s, &err), &err, "run") ||
        !ok(r, shardc_session_loss(s, &r->got.loss[i], &err), &err, "loss"))
        return false;
    SAME(r, loss[i], "the loss");
    return true;
}

static void sequence(run *r)
{
    char *err = NULL;
    r->opt = shardc_options_new();
    if (!r->opt) {
        CHECK(atomic_load(&injected));
        r->failed = true;
        return;
    }
    r->compiler = true;
    const model *M = r->M;
    if (!ok(r, shardc_options_set_mesh(r->opt, M->mesh, &err), &err, "set_mesh") ||
        !ok(r, shardc_options_set_archs(r->opt, M->archs, &err), &err, "set_archs") ||
        !ok(r, shardc_options_set_cache_dir(r->opt, cache_path, &err), &err, "set_cache_dir") ||
        (M->has_y && !ok(r, shardc_options_define(r->opt, "H", 8, &err), &err, "define")) ||
        !ok(r, M->from_file ? shardc_compile_file(r->opt, model_path, &r->prog, &err)
                            : shardc_compile_string(r->opt, "m.sh", M->text, strlen(M->text),
                                                    &r->prog, &err),
            &err, "compile") ||
        !emit_all(r) || !report_alone(r) || !plan_alone(r) ||
        !ok(r, shardc_program_emit(r->prog, "ir", &r->ir, NULL, &err), &err, "ir") ||
        !ok(r, shardc_compile_string(r->opt, "m.ir", r->ir, strlen(r->ir), &r->prog_ir, &err),
            &err, "compile ir") ||
        !ok(r, shardc_program_plan(r->prog, &r->plan2, &err), &err, "program_plan") ||
        (r->compiler = false) ||
        !ok(r, shardc_program_save_plan(r->prog, plan_path, &err), &err, "save_plan") ||
        !ok(r, shardc_plan_load(plan_path, &r->plan, &err), &err, "plan_load") ||
        !plan_same(r) ||
        !open_session(r, &r->s) || !step(r, r->s, 0))
        return;
    const void *data = NULL;
    shardc_tensor_info info;
    if (!ok(r, shardc_session_output(r->s, M->out, &data, &info, &err), &err, "output"))
        return;
    r->got.out = hash(data, info.bytes);
    SAME(r, out, "the output");
    if (!ok(r, shardc_session_save_outputs(r->s, outputs_path, &err), &err, "save_outputs") ||
        !ok(r, shardc_session_write_trace(r->s, trace_path, &err), &err, "write_trace") ||
        !ok(r, shardc_session_save_params(r->s, params_path, &err), &err, "save_params") ||
        !ok(r, shardc_session_save_checkpoint(r->s, ckpt_path, &err), &err, "save_checkpoint") ||
        !open_session(r, &r->s2) ||
        !ok(r, shardc_session_resume(r->s2, ckpt_path, &err), &err, "resume") ||
        !step(r, r->s2, 1))
        return;
    CHECK_INT(shardc_session_step(r->s2), 2);
}

static void run_free(run *r)
{
    shardc_session_free(r->s2);
    shardc_session_free(r->s);
    shardc_plan_free(r->plan);
    shardc_plan_free(r->plan2);
    shardc_program_free(r->prog);
    shardc_program_free(r->prog_ir);
    shardc_program_free(r->prog_rep);
    shardc_program_free(r->prog_plan);
    shardc_free(r->ir);
    shardc_options_free(r->opt);
}

/* How many runs stopped at each call. */
static struct {
    const char *what;
    int n;
} stops[64];

static void count_stop(const char *what)
{
    int i = 0;
    while (stops[i].what && strcmp(stops[i].what, what) != 0 && i < 63)
        i++;
    stops[i].what = what;
    stops[i].n++;
}

/* Runs the sequence failing allocation k (0: none) and returns how many
 * allocations it made. */
static long try(const model *M, long k, const result *want, result *got)
{
    run r = {.M = M, .k = k, .want = want};
    /* each run saves into a folder of its own: a save that fails after it
     * has moved the pointer to its new step folder leaves a checkpoint the
     * next save of the same step must not write over */
    ckpt_remove_tree(ckpt_path);
    arm(k);
    sequence(&r);
    run_free(&r);
    disarm();
    long n = atomic_load(&nalloc);
    if (live_n) {
        fprintf(stderr, "%s, k=%ld: %zu blocks the library allocated are not freed\n", M->name,
                k, live_n);
        CHECK_INT(live_n, 0);
        pthread_mutex_lock(&live_mu);
        memset(live, 0, live_cap * sizeof *live);
        live_n = live_used = 0;
        pthread_mutex_unlock(&live_mu);
    }
    if (!want && r.failed) {
        fprintf(stderr, "the reference run failed\n");
        CHECK(!r.failed);
    }
    if (want && r.failed)
        count_stop(r.failed_in ? r.failed_in : "options_new");
    if (got)
        *got = r.got;
    return n;
}

/* Runs M's sequence failing allocation k for k = first, first + stride,
 * ... up to last (0: until a run makes fewer than k). */
static void sweep(const model *M, long first, long last, long stride)
{
    FILE *f = fopen(model_path, "w");
    CHECK(f && fputs(M->text, f) >= 0);
    if (f)
        fclose(f);
    /* Twice without failures: the first run makes what lives until exit
     * (libc's and OpenBLAS's first-use state), the second counts. */
    result want;
    try(M, 0, NULL, NULL);
    long total = try(M, 0, NULL, &want);
    printf("%s: the sequence makes %ld allocations in %d calls\n", M->name, total, want.calls);
    CHECK(want.calls > 20);
    long tried = 0, failed_calls = 0;
    memset(stops, 0, sizeof stops);
    for (long k = first; last ? k <= last : true; k += stride) {
        result got;
        long n = try(M, k, &want, &got);
        tried++;
        failed_calls += got.calls < want.calls;
        if (n < k)
            break; /* the run completed with no allocation failed */
        if (check_failures > 20) {
            fprintf(stderr, "too many failures; stopping at k=%ld\n", k);
            break;
        }
    }
    printf("%s: tried %ld values of k (from %ld, every %ld); %ld runs stopped at a failed "
           "call:", M->name, tried, first, stride, failed_calls);
    for (int i = 0; stops[i].what; i++)
        printf("%s %s %d", i ? "," : "", stops[i].what, stops[i].n);
    printf("\n");
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                char sub[512];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    long first = argc > 1 ? atol(argv[1]) : 1, last = argc > 2 ? atol(argv[2]) : 0;
    const char *env = getenv("SHARDC_OOM_STRIDE");
    verbose = getenv("SHARDC_OOM_VERBOSE") != NULL;
    long stride = argc > 3 ? atol(argv[3]) : env && *env ? atol(env) : 1;
    if (first < 1 || stride < 1) {
        fprintf(stderr, "usage: test_oom [FIRST [LAST [STRIDE]]]\n");
        return 2;
    }
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/shardc-oom-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        perror("test_oom: mkdtemp");
        return 1;
    }
    snprintf(plan_path, sizeof plan_path, "%s/m.plan", dir);
    snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt", dir);
    snprintf(params_path, sizeof params_path, "%s/params.safetensors", dir);
    snprintf(trace_path, sizeof trace_path, "%s/trace.json", dir);
    snprintf(outputs_path, sizeof outputs_path, "%s/out.safetensors", dir);
    snprintf(model_path, sizeof model_path, "%s/m.sh", dir);
    snprintf(cache_path, sizeof cache_path, "%s/nvrtc-cache", dir);
    for (int i = 0; i < 8 * 4; i++) {
        xs[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
        ys[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    }

    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        if (strcmp(models[m].archs, "none") != 0 && !rt_nvrtc_available()) {
            printf("%s: skipped: no NVRTC\n", models[m].name);
            continue;
        }
        sweep(&models[m], first, last, stride * models[m].stride);
    }
    remove_tree(dir);
    return CHECK_DONE();
}
