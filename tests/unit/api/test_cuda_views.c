/* test_cuda_views.c: tensors in CUDA memory through the C API
 * (shardc_session_bind_view, shardc_session_output_into with
 * SHARDC_DEVICE_CUDA), on the pretend driver of tests/fakecuda, which
 * ctest puts first on LD_LIBRARY_PATH. Its device memory is host memory,
 * and the driver's copies move the bytes, so what a bound view's strided
 * copy and an output's gathering put where can be read back here; no
 * kernel runs, so the model only hands its inputs back as outputs.
 *
 * - An input bound as a transposed device view, on 1 and 2x2 ranks, comes
 *   back whole from shardc_session_output (host) and, through
 *   output_into, into a device view with padded rows (the gaps untouched)
 *   and one with a negative stride; an i32 input likewise.
 * - The same by CUDA graphs (cfg.graph), over three runs whose bound
 *   values change between runs.
 * - By graphs, an input's source changing between runs: bound in host
 *   memory (read into the page-locked block the graph copies from), bound
 *   as a CUDA view, as another CUDA view at another address, then in
 *   host memory again, its values changed at every run; each run hands
 *   back that run's values (a graph still copying from the old source
 *   would not).
 * - Refused, SHARDC_ERR_USAGE, the session unchanged: a view that reaches
 *   outside its allocation (bind and output), host memory said to be
 *   CUDA memory, memory on another device than the view says.
 * - Every allocation, stream, event, module, graph and cuBLASLt object the
 *   session made is freed with it.
 * Skips (77) where the fake driver is not the libcuda.so.1 found: this
 * test writes device memory from the host, which only the fake allows. */
#include "shardc.h"
#include "check.h"
#include "api_check.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

typedef unsigned long long devptr;
static unsigned (*cu_init)(unsigned);
static unsigned (*cu_alloc)(devptr *, size_t);
static unsigned (*cu_free)(devptr);
static long (*live_allocations)(void), (*live_handles)(void), (*blas_live)(void);

enum { B = 8, D = 6, N = 4, M = 6 };

static const char model[] = "mesh dp, tp\n"
                            "input x : f32[8, 6] shard(dp, _)\n"
                            "input ids : i32[4, 6] shard(_, tp)\n"
                            "output x, ids\n";

static float *dev_floats(size_t n, devptr *p)
{
    CHECK(cu_alloc(p, n * sizeof(float)) == 0);
    return (float *)(uintptr_t)*p;
}

/* What a session of the model holds. */
typedef struct held {
    shardc_options *opt;
    shardc_program *prog;
    shardc_plan *plan;
    shardc_session *s;
} held;

static void close_session(held *h)
{
    shardc_session_free(h->s);
    shardc_plan_free(h->plan);
    shardc_program_free(h->prog);
    shardc_options_free(h->opt);
}

/* The model compiled for mesh (sm_90) and a cuda session of it, by CUDA
 * graphs where graph is true; false, everything freed, when a step fails. */
static bool open_session(const char *mesh, bool graph, held *h)
{
    char *err = NULL;
    shardc_session_config cfg = {.backend = "cuda", .comm = "local", .graph = graph};
    memset(h, 0, sizeof *h);
    h->opt = shardc_options_new();
    CHECK(shardc_options_set_mesh(h->opt, mesh, &err) == SHARDC_OK &&
          shardc_options_set_archs(h->opt, "sm_90", &err) == SHARDC_OK &&
          shardc_compile_string(h->opt, "m.sh", model, sizeof model - 1, &h->prog, &err) ==
              SHARDC_OK &&
          shardc_program_plan(h->prog, &h->plan, &err) == SHARDC_OK &&
          shardc_session_new(h->plan, &cfg, &h->s, &err) == SHARDC_OK);
    if (!h->s)
        fprintf(stderr, "%s: %s\n", mesh, err ? err : "?");
    shardc_free(err);
    if (!h->s)
        close_session(h);
    return h->s != NULL;
}

static void run_mesh(const char *mesh, bool graph)
{
    char *err = NULL;
    long before = live_allocations(), handles = live_handles(), blas = blas_live ? blas_live() : 0;
    held h;
    if (!open_session(mesh, graph, &h))
        return;
    shardc_session *s = h.s;
    /* x as its transpose in device memory: xt[k][b] = x[b][k] */
    devptr xp, yp, rp, ip, jp;
    float *xt = dev_floats(D * B, &xp), *y = dev_floats(B * (D + 2), &yp);
    float *r = dev_floats(B * D, &rp);
    CHECK(cu_alloc(&ip, N * M * sizeof(int32_t)) == 0 && cu_alloc(&jp, N * M * sizeof(int32_t)) == 0);
    int32_t *ids = (int32_t *)(uintptr_t)ip, *got = (int32_t *)(uintptr_t)jp;
    long long xdim[2] = {B, D}, xstr[2] = {1, B}, idim[2] = {N, M};
    shardc_tensor_view xv = {SHARDC_DEVICE_CUDA, 0, xt, "f32", 2, xdim, xstr};
    shardc_tensor_view iv = {SHARDC_DEVICE_CUDA, 0, ids, "i32", 2, idim, NULL};
    long long ystr[2] = {D + 2, 1}, rstr[2] = {-D, 1};
    shardc_tensor_view yv = {SHARDC_DEVICE_CUDA, 0, y, "f32", 2, xdim, ystr};
    shardc_tensor_view rv = {SHARDC_DEVICE_CUDA, 0, r + (B - 1) * D, "f32", 2, xdim, rstr};
    shardc_tensor_view gv = {SHARDC_DEVICE_CUDA, 0, got, "i32", 2, idim, NULL};
    CHECK(shardc_session_bind_view(s, "x", &xv, &err) == SHARDC_OK);
    CHECK(shardc_session_bind_view(s, "ids", &iv, &err) == SHARDC_OK);
    for (int run = 0; run < (graph ? 3 : 1); run++) {
        for (int b = 0; b < B; b++)
            for (int k = 0; k < D; k++)
                xt[k * B + b] = (float)(100 * run + 10 * b + k);
        for (int i = 0; i < N * M; i++)
            ids[i] = 1000 * run + i;
        for (int i = 0; i < B * (D + 2); i++)
            y[i] = -7.0f;
        CHECK(shardc_session_run(s, &err) == SHARDC_OK);
        const void *out;
        shardc_tensor_info ti;
        CHECK(shardc_session_output(s, "x", &out, &ti, &err) == SHARDC_OK);
        CHECK(shardc_session_output_into(s, "x", &yv, &err) == SHARDC_OK);
        CHECK(shardc_session_output_into(s, "x", &rv, &err) == SHARDC_OK);
        CHECK(shardc_session_output_into(s, "ids", &gv, &err) == SHARDC_OK);
        int bad = 0;
        for (int b = 0; b < B; b++)
            for (int k = 0; k < D; k++) {
                float want = (float)(100 * run + 10 * b + k);
                bad += out && ((const float *)out)[b * D + k] != want;
                bad += y[b * (D + 2) + k] != want;
                bad += r[(B - 1 - b) * D + k] != want;
            }
        for (int b = 0; b < B; b++)
            bad += y[b * (D + 2) + D] != -7.0f || y[b * (D + 2) + D + 1] != -7.0f;
        for (int i = 0; i < N * M; i++)
            bad += got[i] != 1000 * run + i;
        CHECK_INT(bad, 0);
        if (err) {
            fprintf(stderr, "%s: %s\n", mesh, err);
            shardc_free(err);
            err = NULL;
        }
    }

    /* the errors: each refused, nothing bound anew */
    shardc_tensor_view over = {SHARDC_DEVICE_CUDA, 0, xt, "f32", 2, xdim, (long long[]){1, B + 1}};
    CHECK(usage_error(shardc_session_bind_view(s, "x", &over, &err), &err,
                      "outside its CUDA allocation"));
    shardc_tensor_view over_out = {SHARDC_DEVICE_CUDA, 0, r + 1, "f32", 2, xdim, NULL};
    CHECK(usage_error(shardc_session_output_into(s, "x", &over_out, &err), &err,
                      "CUDA"));
    float host[B * D];
    shardc_tensor_view not_dev = {SHARDC_DEVICE_CUDA, 0, host, "f32", 2, xdim, NULL};
    CHECK(usage_error(shardc_session_bind_view(s, "x", &not_dev, &err), &err,
                      "is not CUDA device memory"));
    shardc_tensor_view other = xv;
    other.device_id = 1;
    CHECK(usage_error(shardc_session_bind_view(s, "x", &other, &err), &err,
                      "device 1"));
    /* x is still the first view: one more run hands it back */
    CHECK(shardc_session_run(s, &err) == SHARDC_OK);
    CHECK(shardc_session_output_into(s, "x", &yv, &err) == SHARDC_OK);
    CHECK(y[(B - 1) * (D + 2) + D - 1] == xt[(D - 1) * B + B - 1]);

    shardc_free(err);
    close_session(&h);
    CHECK_INT(live_allocations() - before, 5); /* the test's own five */
    CHECK(cu_free(xp) == 0 && cu_free(yp) == 0 && cu_free(rp) == 0 && cu_free(ip) == 0 &&
          cu_free(jp) == 0);
    CHECK_INT(live_allocations(), before);
    CHECK_INT(live_handles(), handles); /* streams, events, modules, graphs */
    CHECK_INT(blas_live ? blas_live() : 0, blas);
}

/* x's source this run: host memory (kind 0), CUDA memory at xa (1) or
 * at xb (2), each holding `base + i` for element i. */
static void bind_x(shardc_session *s, int kind, float *host, float *xa, float *xb, float base)
{
    static long long dim[2] = {B, D};
    float *at = kind == 0 ? host : kind == 1 ? xa : xb;
    for (int i = 0; i < B * D; i++)
        at[i] = base + (float)i;
    char *err = NULL;
    if (kind == 0) {
        CHECK(shardc_session_bind(s, "x", host, sizeof(float) * B * D, &err) == SHARDC_OK);
    } else {
        shardc_tensor_view v = {SHARDC_DEVICE_CUDA, 0, at, "f32", 2, dim, NULL};
        CHECK(shardc_session_bind_view(s, "x", &v, &err) == SHARDC_OK);
    }
    if (err)
        fprintf(stderr, "bind: %s\n", err);
    shardc_free(err);
}

static void run_switching(const char *mesh)
{
    char *err = NULL;
    long before = live_allocations(), handles = live_handles();
    held h;
    if (!open_session(mesh, true, &h))
        return;
    shardc_session *s = h.s;
    devptr ap, bp;
    float host[B * D], *xa = dev_floats(B * D, &ap), *xb = dev_floats(B * D, &bp);
    int32_t ids[N * M] = {0};
    CHECK(shardc_session_bind(s, "ids", ids, sizeof ids, &err) == SHARDC_OK);
    /* runs 0-2 host (eager, captured, launched), 3-4 xa, 5 xb, 6-7 host */
    const int kind[] = {0, 0, 0, 1, 1, 2, 0, 0};
    int bad_runs = 0;
    for (int run = 0; run < (int)(sizeof kind / sizeof *kind); run++) {
        float base = 1000.0f * (float)(run + 1);
        bind_x(s, kind[run], host, xa, xb, base);
        const void *out = NULL;
        shardc_tensor_info ti;
        CHECK(shardc_session_run(s, &err) == SHARDC_OK);
        CHECK(shardc_session_output(s, "x", &out, &ti, &err) == SHARDC_OK);
        int bad = 0;
        for (int i = 0; out && i < B * D; i++)
            bad += ((const float *)out)[i] != base + (float)i;
        if (bad || !out) {
            fprintf(stderr, "%s, run %d (x bound %s): %d elements not this run's\n", mesh, run,
                    kind[run] ? "on the device" : "on the host", bad);
            bad_runs++;
        }
        if (err) {
            fprintf(stderr, "%s: %s\n", mesh, err);
            shardc_free(err);
            err = NULL;
        }
    }
    CHECK_INT(bad_runs, 0);
    close_session(&h);
    CHECK(cu_free(ap) == 0 && cu_free(bp) == 0);
    CHECK_INT(live_allocations(), before); /* the page-locked block too */
    CHECK_INT(live_handles(), handles);
}

int main(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv || !dlsym(drv, "fakecuda_live_allocations")) {
        printf("skipped: the libcuda.so.1 found is not tests/fakecuda's\n");
        return 77;
    }
    *(void **)&cu_init = dlsym(drv, "cuInit");
    *(void **)&cu_alloc = dlsym(drv, "cuMemAlloc_v2");
    *(void **)&cu_free = dlsym(drv, "cuMemFree_v2");
    *(void **)&live_allocations = dlsym(drv, "fakecuda_live_allocations");
    *(void **)&live_handles = dlsym(drv, "fakecuda_live_handles");
    void *blas = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
    if (blas)
        *(void **)&blas_live = dlsym(blas, "fakecuda_blas_live");
    CHECK(cu_init && cu_alloc && cu_free && cu_init(0) == 0);
    run_mesh("1x1", false);
    run_mesh("2x2", false);
    run_mesh("2x2", true);
    run_switching("1x1");
    run_switching("2x2");
    return CHECK_DONE();
}
