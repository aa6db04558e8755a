/* bench_cuda.c: the plan's kernels against the GPU's copy bandwidth and
 * its matmuls against cuBLAS (issue 5, DESIGN.md §8). A benchmark, never a
 * test.
 *
 *   bench_cuda [--model FILE]... [--mesh AxB]... [-D NAME=VALUE]...
 *              [--repeat N] [--copy-mb N] [--out FILE] [--calibrate FILE.json]
 *              [--matmuls-only] [--x3]
 *
 * Default: examples/mlp.sh, transformer.sh and pipeline.sh, each on the
 * meshes 1 and 2x2 (1s added for the axes a model has beyond the mesh
 * given: 2x2 is dp 2, pp 2, tp 1 for pipeline.sh), training steps with
 * kernels for the device's architecture. It measures:
 * 1. the device-to-device copy bandwidth (cuMemcpyDtoDAsync of --copy-mb
 *    MiB, default 1024, 2 x size / time, the median of --repeat);
 * 2. each kernel of each plan that is not a matmul, launched alone with its
 *    plan geometry in an arena of the plan's size, its inputs filled with
 *    valid data: its bytes (bench_cuda.h), time, GB/s and the fraction of
 *    the copy bandwidth (goal 0.85);
 * 3. each matmul (matmul kernels with their epilogue, matmul instructions
 *    outside kernels) through the runtime's rt_blas_matmul and through
 *    cuBLASLt called here directly: TFLOP/s of both and the ratio (goal
 *    0.95).
 * Before each timed launch a kernel reads a buffer of 4 x the L2 (at least
 * 256 MiB), so no launch finds its data in the L2 and no dirty line of
 * the last one is written back during it; each launch is timed alone with
 * a pair of events, the median of --repeat (default 50) after 3 untimed.
 * --matmuls-only times the matmuls alone. --x3 times each f32 matmul a
 * second way too, as bf16 parts (runtime/cuda/cuda_blas.h:
 * a matmul of parts): its operands split by a kernel of split3's arithmetic
 * and its three cuBLASLt calls, and the calls alone; and it measures both
 * ways' errors, without the epilogue, on 64 sampled results against dot
 * products in double on the host (bench_cuda.h: bc_item).
 * The report (markdown) goes to stdout, and to --out FILE too.
 * --calibrate FILE.json writes a hardware profile for shardc --hw (the form
 * of docs/hw/, whose README says how): the built-in profile of this GPU
 * (h100, h200 or a100 by its name; else h100's, named "local") with the
 * efficiencies of the launches measured (bc_calibrate, bench_cuda.h) and
 * this command in "calibrated_by". The file is written whole or not at
 * all (a temporary file, renamed).
 *
 * Without a usable CUDA driver and device it prints "skipped: no GPU
 * (...)" and exits 77, as tests/gpu/run.sh does. Exit 1 on any other
 * failure, 2 on a usage error. The driver and cuBLASLt are loaded with
 * dlopen, never linked. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "bench_cuda.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/cuda_blas.h"
#include "runtime/cuda/cuda_driver.h"
#include "shardc.h"

enum {
    MAX_MODELS = 16,
    MAX_MESHES = 16,
    MAX_DEFINES = 64,
    DEFAULT_REPEAT = 50,
    WARMUP = 3,
    DEFAULT_COPY_MB = 1024,
    MIN_FLUSH = 256 << 20,
    REF_WORKSPACE = 32 << 20,  /* the reference matmul's workspace */
    BC_ATTR_L2_CACHE_SIZE = 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE */
};

static void usage(void)
{
    fprintf(stderr, "usage: bench_cuda [--model FILE]... [--mesh AxB]... [-D NAME=VALUE]... "
                    "[--repeat N] [--copy-mb N] [--out FILE] [--calibrate FILE.json] "
                    "[--matmuls-only] [--x3]\n");
    exit(2);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_cuda: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ---- the driver: the runtime's table, and the entry points it lacks ---- */

typedef struct cu_extra {
    rt_cu_result (*EventElapsedTime)(float *ms, rt_cu_event start, rt_cu_event end);
    rt_cu_result (*EventSynchronize)(rt_cu_event e);
    rt_cu_result (*DeviceTotalMem)(size_t *bytes, rt_cu_device dev);
} cu_extra;

/* ---- cuBLASLt, called directly for the reference ---- */

#ifdef BENCH_HAVE_CUDA_H
/* With the toolkit's headers, the table has their types: the assertions
 * below check every entry point against them. */
#include <cublasLt.h>
#include <cuda.h>
typedef cublasLtHandle_t lt_handle;
typedef cublasLtMatmulDesc_t lt_desc;
typedef cublasLtMatrixLayout_t lt_layout;
typedef cublasLtMatmulPreference_t lt_pref;
typedef cublasLtMatmulAlgo_t lt_algo;
typedef cublasLtMatmulHeuristicResult_t lt_heuristic;
#else
typedef struct lt_handle_ *lt_handle;
typedef struct lt_desc_ *lt_desc;
typedef struct lt_layout_ *lt_layout;
typedef struct lt_pref_ *lt_pref;
typedef struct {
    uint64_t data[8];
} lt_algo;
typedef struct {
    lt_algo algo;
    size_t workspaceSize;
    unsigned int state;
    float wavesCount;
    int reserved[4];
} lt_heuristic;
#endif
typedef unsigned int lt_status;

/* cublasLt.h's values (checked there). */
enum {
    LT_SUCCESS = 0,
    LT_COMPUTE_32F = 68,
    LT_R_32F = 0,
    LT_R_16F = 2,
    LT_R_16BF = 14,
    LT_LAYOUT_BATCH_COUNT = 5,
    LT_LAYOUT_BATCH_STRIDE = 6,
    LT_PREF_MAX_WORKSPACE = 1,
    LT_DESC_TRANSA = 3,
    LT_DESC_TRANSB = 4,
    LT_DESC_EPILOGUE = 7,
    LT_DESC_BIAS_POINTER = 8,
    LT_DESC_AUX_POINTER = 11,
    LT_DESC_AUX_LD = 12,
    LT_DESC_AUX_BATCH_STRIDE = 13,
    LT_EPILOGUE_DEFAULT = 1,
    LT_EPILOGUE_RELU = 2,
    LT_EPILOGUE_BIAS = 4,
    LT_EPILOGUE_GELU = 32,
    LT_EPILOGUE_AUX = 128,
    LT_EPILOGUE_DGELU = 192,
};

typedef struct lt_api {
    lt_status (*Create)(lt_handle *h);
    lt_status (*Destroy)(lt_handle h);
    lt_status (*MatmulDescCreate)(lt_desc *d, unsigned int compute, unsigned int scale);
    lt_status (*MatmulDescDestroy)(lt_desc d);
    lt_status (*MatmulDescSetAttribute)(lt_desc d, unsigned int attr, const void *buf,
                                        size_t size);
    lt_status (*MatrixLayoutCreate)(lt_layout *l, unsigned int type, uint64_t rows,
                                    uint64_t cols, int64_t ld);
    lt_status (*MatrixLayoutDestroy)(lt_layout l);
    lt_status (*MatrixLayoutSetAttribute)(lt_layout l, unsigned int attr, const void *buf,
                                          size_t size);
    lt_status (*MatmulPreferenceCreate)(lt_pref *p);
    lt_status (*MatmulPreferenceDestroy)(lt_pref p);
    lt_status (*MatmulPreferenceSetAttribute)(lt_pref p, unsigned int attr, const void *buf,
                                              size_t size);
    lt_status (*MatmulAlgoGetHeuristic)(lt_handle h, lt_desc d, lt_layout a, lt_layout b,
                                        lt_layout c, lt_layout dd, lt_pref p, int requested,
                                        lt_heuristic *results, int *returned);
    lt_status (*Matmul)(lt_handle h, lt_desc d, const void *alpha, const void *a, lt_layout la,
                        const void *b, lt_layout lb, const void *beta, const void *c,
                        lt_layout lc, void *dd, lt_layout ld, const lt_algo *algo,
                        void *workspace, size_t workspace_bytes, rt_cu_stream s);
    const char *(*GetStatusString)(lt_status st);
    size_t (*GetVersion)(void);
} lt_api;

#ifdef BENCH_HAVE_CUDA_H
#define SAME_TYPE(table, member, fn)                                                            \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((table *)0)->member),                \
                                                __typeof__(&fn)),                                \
                   #table "." #member " is not the type of " #fn)
SAME_TYPE(cu_extra, EventElapsedTime, cuEventElapsedTime);
SAME_TYPE(cu_extra, EventSynchronize, cuEventSynchronize);
SAME_TYPE(cu_extra, DeviceTotalMem, cuDeviceTotalMem);
SAME_TYPE(lt_api, Create, cublasLtCreate);
SAME_TYPE(lt_api, Destroy, cublasLtDestroy);
SAME_TYPE(lt_api, MatmulDescCreate, cublasLtMatmulDescCreate);
SAME_TYPE(lt_api, MatmulDescDestroy, cublasLtMatmulDescDestroy);
SAME_TYPE(lt_api, MatmulDescSetAttribute, cublasLtMatmulDescSetAttribute);
SAME_TYPE(lt_api, MatrixLayoutCreate, cublasLtMatrixLayoutCreate);
SAME_TYPE(lt_api, MatrixLayoutDestroy, cublasLtMatrixLayoutDestroy);
SAME_TYPE(lt_api, MatrixLayoutSetAttribute, cublasLtMatrixLayoutSetAttribute);
SAME_TYPE(lt_api, MatmulPreferenceCreate, cublasLtMatmulPreferenceCreate);
SAME_TYPE(lt_api, MatmulPreferenceDestroy, cublasLtMatmulPreferenceDestroy);
SAME_TYPE(lt_api, MatmulPreferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute);
SAME_TYPE(lt_api, MatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic);
SAME_TYPE(lt_api, Matmul, cublasLtMatmul);
SAME_TYPE(lt_api, GetStatusString, cublasLtGetStatusString);
SAME_TYPE(lt_api, GetVersion, cublasLtGetVersion);
#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs)
SAME_VALUE(BC_ATTR_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
SAME_VALUE(LT_SUCCESS, CUBLAS_STATUS_SUCCESS);
SAME_VALUE(LT_COMPUTE_32F, CUBLAS_COMPUTE_32F);
SAME_VALUE(LT_R_32F, CUDA_R_32F);
SAME_VALUE(LT_R_16F, CUDA_R_16F);
SAME_VALUE(LT_R_16BF, CUDA_R_16BF);
SAME_VALUE(LT_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME_VALUE(LT_LAYOUT_BATCH_STRIDE, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME_VALUE(LT_PREF_MAX_WORKSPACE, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME_VALUE(LT_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA);
SAME_VALUE(LT_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB);
SAME_VALUE(LT_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_EPILOGUE);
SAME_VALUE(LT_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
SAME_VALUE(LT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_DEFAULT);
SAME_VALUE(LT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_RELU);
SAME_VALUE(LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_BIAS);
SAME_VALUE(LT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU);
SAME_VALUE(LT_EPILOGUE_GELU | LT_EPILOGUE_AUX, CUBLASLT_EPILOGUE_GELU_AUX);
SAME_VALUE(LT_EPILOGUE_DGELU, CUBLASLT_EPILOGUE_DGELU);
SAME_VALUE(LT_DESC_AUX_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
SAME_VALUE(LT_DESC_AUX_LD, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
SAME_VALUE(LT_DESC_AUX_BATCH_STRIDE, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE);
#endif

/* Resolves each name (NULL-terminated, then the next member's) into the
 * table at the offsets given; dies naming a missing symbol. */
static void resolve(void *lib, const char *libname, void *table, const char *const *names,
                    const size_t *offsets, int n)
{
    for (int i = 0; i < n; i++) {
        void *sym = dlsym(lib, names[i]);
        if (!sym)
            die("%s has no symbol %s", libname, names[i]);
        memcpy((char *)table + offsets[i], &sym, sizeof sym);
    }
}

static void load_extra(cu_extra *x)
{
    /* rt_cu_load opened it: RTLD_NOLOAD finds that handle */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        die("libcuda.so.1 is not loaded: %s", dlerror());
    /* cuda.h maps cuEventElapsedTime to _v2 from 12.8; older drivers lack it */
    const char *elapsed = dlsym(lib, "cuEventElapsedTime_v2") ? "cuEventElapsedTime_v2"
                                                              : "cuEventElapsedTime";
    const char *names[] = {elapsed, "cuEventSynchronize", "cuDeviceTotalMem_v2"};
    const size_t offsets[] = {offsetof(cu_extra, EventElapsedTime),
                              offsetof(cu_extra, EventSynchronize),
                              offsetof(cu_extra, DeviceTotalMem)};
    resolve(lib, "libcuda.so.1", x, names, offsets, 3);
}

static void load_lt(lt_api *lt)
{
    static const char *const libs[] = {"libcublasLt.so", "libcublasLt.so.13",
                                       "libcublasLt.so.12", "libcublasLt.so.11"};
    void *lib = NULL;
    for (size_t i = 0; !lib && i < sizeof libs / sizeof *libs; i++)
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        die("cannot load libcublasLt.so (nor .so.13, .so.12, .so.11): %s", dlerror());
#define E(m) "cublasLt" #m
#define O(m) offsetof(lt_api, m)
    const char *names[] = {E(Create), E(Destroy), E(MatmulDescCreate), E(MatmulDescDestroy),
                           E(MatmulDescSetAttribute), E(MatrixLayoutCreate),
                           E(MatrixLayoutDestroy), E(MatrixLayoutSetAttribute),
                           E(MatmulPreferenceCreate), E(MatmulPreferenceDestroy),
                           E(MatmulPreferenceSetAttribute), E(MatmulAlgoGetHeuristic),
                           E(Matmul), E(GetStatusString), E(GetVersion)};
    const size_t offsets[] = {O(Create), O(Destroy), O(MatmulDescCreate), O(MatmulDescDestroy),
                              O(MatmulDescSetAttribute), O(MatrixLayoutCreate),
                              O(MatrixLayoutDestroy), O(MatrixLayoutSetAttribute),
                              O(MatmulPreferenceCreate), O(MatmulPreferenceDestroy),
                              O(MatmulPreferenceSetAttribute), O(MatmulAlgoGetHeuristic),
                              O(Matmul), O(GetStatusString), O(GetVersion)};
#undef E
#undef O
    resolve(lib, "libcublasLt", lt, names, offsets, (int)(sizeof names / sizeof *names));
}

/* ---- the device ---- */

typedef struct gpu {
    const rt_cu_api *cu;
    cu_extra x;
    lt_api lt;
    lt_handle lth;
    rt_blas *blas;                 /* the runtime's matmul path */
    rt_cu_device dev;
    rt_cu_ctx ctx;
    rt_cu_stream s;
    int cc, repeat;
    rt_cu_event *ev;               /* 2 x repeat: a start and a stop per launch */
    rt_cu_module flush_mod;
    rt_cu_func flush_fn;
    rt_cu_ptr flush;               /* flush_bytes, zeros */
    int64_t flush_bytes;
    rt_cu_ptr workspace;           /* REF_WORKSPACE bytes */
    rt_cu_ptr blas_ws;             /* the runtime's matmuls' (rt_blas_workspace_bytes), 0 none */
    char *cache_dir;               /* NVRTC's cache, or NULL */
    bool x3;                       /* --x3 */
    rt_cu_module split_mod;        /* --x3: split_source */
    rt_cu_func split_fn;
} gpu;

static su_status cu_err;
#define CU(g, call)                                                                             \
    do {                                                                                        \
        if (!RT_CU_CHECK((g)->cu, call, &cu_err))                                          \
            die("%s", cu_err.msg);                                                              \
    } while (0)
#define CUX(g, call)                                                                            \
    do {                                                                                        \
        if (!rt_cu_check((g)->cu, (g)->x.call, #call, __FILE__, __LINE__, &cu_err))             \
            die("%s", cu_err.msg);                                                              \
    } while (0)
#define LT(g, call)                                                                             \
    do {                                                                                        \
        lt_status st_ = (g)->lt.call;                                                           \
        if (st_ != LT_SUCCESS)                                                                  \
            die("%s:%d: cublasLt%s: %s", __FILE__, __LINE__, #call,                             \
                (g)->lt.GetStatusString(st_));                                                  \
    } while (0)

static int attribute(gpu *g, unsigned int attr)
{
    int v = 0;
    CU(g, DeviceGetAttribute(&v, attr, g->dev));
    return v;
}

/* The first line of /proc/driver/nvidia/version's version: "550.54.15". */
static void kernel_driver(char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512], version[64];
    if (f && fgets(line, sizeof line, f)) {
        const char *m = strstr(line, "Kernel Module");
        if (m && sscanf(m + strlen("Kernel Module"), "%63s", version) == 1)
            snprintf(buf, n, "%s", version);
    }
    if (f)
        fclose(f);
}

/* Device 0, its primary context, a stream, the events and what the
 * report's head says of the machine. */
static void open_gpu(gpu *g, bc_machine *m)
{
    CU(g, DeviceGet(&g->dev, 0));
    CU(g, DevicePrimaryCtxRetain(&g->ctx, g->dev));
    CU(g, CtxSetCurrent(g->ctx));
    CU(g, StreamCreate(&g->s, RT_CU_STREAM_NON_BLOCKING));
    g->ev = calloc((size_t)2 * (size_t)g->repeat, sizeof *g->ev);
    if (!g->ev)
        die("out of memory");
    for (int i = 0; i < 2 * g->repeat; i++)
        CU(g, EventCreate(&g->ev[i], 0));
    CU(g, DeviceGetName(m->gpu, (int)sizeof m->gpu, g->dev));
    g->cc = attribute(g, RT_CU_ATTR_CC_MAJOR) * 10 + attribute(g, RT_CU_ATTR_CC_MINOR);
    m->cc = g->cc;
    m->sms = attribute(g, RT_CU_ATTR_MULTIPROCESSOR_COUNT);
    m->l2_bytes = attribute(g, BC_ATTR_L2_CACHE_SIZE);
    size_t mem = 0;
    CUX(g, DeviceTotalMem(&mem, g->dev));
    m->mem_bytes = (int64_t)mem;
    CU(g, DriverGetVersion(&m->cuda_driver));
    kernel_driver(m->nvidia_driver, sizeof m->nvidia_driver);
    rt_nvrtc_version(&m->nvrtc_major, &m->nvrtc_minor);
    m->cublaslt = (long)g->lt.GetVersion();
    time_t now = time(NULL);
    strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    m->repeat = g->repeat;
}

/* ---- timing ---- */

typedef void (*enqueue_fn)(gpu *g, void *arg);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reads the flush buffer: the L2 then holds none of the next launch's
 * data, and nothing dirty (a memset would leave its lines to be written
 * back during the launch). */
static void flush_l2(gpu *g)
{
    long long n = g->flush_bytes / 16;
    rt_cu_ptr p = g->flush, sink = g->flush;
    void *arg[] = {&p, &n, &sink};
    CU(g, LaunchKernel(g->flush_fn, 1024, 1, 1, 256, 1, 1, 0, g->s, arg, NULL));
}

/* The median time of `repeat` launches of what enqueue queues, in
 * microseconds, after WARMUP untimed; each alone between two events, after
 * a flush of the L2 when flush. */
static double median_us(gpu *g, enqueue_fn enqueue, void *arg, bool flush)
{
    for (int i = 0; i < WARMUP; i++) {
        if (flush)
            flush_l2(g);
        enqueue(g, arg);
    }
    for (int i = 0; i < g->repeat; i++) {
        if (flush)
            flush_l2(g);
        CU(g, EventRecord(g->ev[2 * i], g->s));
        enqueue(g, arg);
        CU(g, EventRecord(g->ev[2 * i + 1], g->s));
    }
    CUX(g, EventSynchronize(g->ev[2 * g->repeat - 1]));
    double *us = malloc((size_t)g->repeat * sizeof *us);
    if (!us)
        die("out of memory");
    for (int i = 0; i < g->repeat; i++) {
        float ms = 0;
        CUX(g, EventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]));
        us[i] = ms * 1e3;
    }
    qsort(us, (size_t)g->repeat, sizeof *us, cmp_double);
    double med = g->repeat % 2 ? us[g->repeat / 2]
                               : (us[g->repeat / 2 - 1] + us[g->repeat / 2]) / 2;
    free(us);
    return med;
}

/* ---- the copy bandwidth ---- */

typedef struct copy_arg {
    rt_cu_ptr dst, src;
    size_t bytes;
} copy_arg;

static void enqueue_copy(gpu *g, void *arg)
{
    copy_arg *c = arg;
    CU(g, MemcpyDtoDAsync(c->dst, c->src, c->bytes, g->s));
}

/* GB/s of copying bytes device to device, counting the read and the
 * write: 2 x bytes / the median time. */
static double copy_bandwidth(gpu *g, int64_t bytes)
{
    copy_arg c = {.bytes = (size_t)bytes};
    CU(g, MemAlloc(&c.src, c.bytes));
    CU(g, MemAlloc(&c.dst, c.bytes));
    CU(g, MemsetD8(c.src, 1, c.bytes));
    double us = median_us(g, enqueue_copy, &c, false);
    CU(g, MemFree(c.src));
    CU(g, MemFree(c.dst));
    return 2.0 * (double)bytes / (us * 1e3);
}

/* ---- modules ---- */

static const char flush_source[] =
    "extern \"C\" __global__ void bc_flush(const float4 *p, long long n, float *sink)\n"
    "{\n"
    "    float acc = 0.0f;\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        const float4 v = p[i];\n"
    "        acc += v.x + v.y + v.z + v.w;\n"
    "    }\n"
    "    if (acc == 1234.5f) // the buffer is zeros: never, but the loads stay\n"
    "        *sink = acc;\n"
    "}\n";

/* --x3's split of an f32 operand into its bf16 parts, the arithmetic of
 * the split3 kernels shardc generates (codegen/cuda_ops.c: emit_split3):
 * x [outer, K, inner] into [outer, 3, K, inner], h m l, or l m h (rev). */
static const char split_source[] =
    "#include <cuda_bf16.h>\n"
    "struct alignas(8) bf4 { __nv_bfloat16 v[4]; };\n"
    "__device__ __forceinline__ void parts(float v, __nv_bfloat16 &h, __nv_bfloat16 &m,\n"
    "                                      __nv_bfloat16 &l)\n"
    "{\n"
    "    h = __float2bfloat16_rn(v);\n"
    "    const float hf = __bfloat162float(h);\n"
    "    const float rest = fabsf(hf) <= 3.40282347e38f ? v - hf : 0.0f;\n"
    "    m = __float2bfloat16_rn(rest);\n"
    "    l = __float2bfloat16_rn(rest - __bfloat162float(m));\n"
    "}\n"
    "extern \"C\" __global__ void bc_split3(const float *__restrict__ x,\n"
    "                                     __nv_bfloat16 *__restrict__ p, long long outer,\n"
    "                                     long long k, long long inner, int rev)\n"
    "{\n"
    "    const long long per = k * inner, n = outer * per;\n"
    "    const long long step = (long long)gridDim.x * blockDim.x;\n"
    "    const long long hi = rev ? 2 * per : 0, lo = rev ? 0 : 2 * per;\n"
    "    if (per % 4 == 0) { // as the generated kernels: 4 elements a thread\n"
    "        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n / 4;\n"
    "             i += step) {\n"
    "            const long long e = i * 4, o = e / per, r = e - o * per;\n"
    "            const float4 v = reinterpret_cast<const float4 *>(x)[i];\n"
    "            const float vs[4] = {v.x, v.y, v.z, v.w};\n"
    "            bf4 h, m, l;\n"
    "            for (int q = 0; q < 4; q++)\n"
    "                parts(vs[q], h.v[q], m.v[q], l.v[q]);\n"
    "            __nv_bfloat16 *const q = p + o * 3 * per + r;\n"
    "            *reinterpret_cast<bf4 *>(q + hi) = h;\n"
    "            *reinterpret_cast<bf4 *>(q + per) = m;\n"
    "            *reinterpret_cast<bf4 *>(q + lo) = l;\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n"
    "        const long long o = i / per, r = i - o * per;\n"
    "        __nv_bfloat16 h, m, l;\n"
    "        parts(x[i], h, m, l);\n"
    "        __nv_bfloat16 *const q = p + o * 3 * per + r;\n"
    "        q[hi] = h;\n"
    "        q[per] = m;\n"
    "        q[lo] = l;\n"
    "    }\n"
    "}\n";

static void load_image(gpu *g, rt_cu_module *mod, const void *image, const char *what)
{
    char log[4096] = "";
    unsigned int opt[2] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    rt_cu_result r = g->cu->ModuleLoadDataEx(mod, image, 2, opt, val);
    if (r != RT_CU_SUCCESS) {
        char msg[512];
        die("loading %s: %s%s%s", what, rt_cu_describe(g->cu, r, msg, sizeof msg),
            *log ? ": " : "", log);
    }
}

/* Kernel name of source, compiled here by NVRTC for the device, into
 * *mod and *fn. */
static void own_kernel(gpu *g, const char *name, const char *source, rt_cu_module *mod,
                       rt_cu_func *fn)
{
    rt_nvrtc_options o = {.narchs = 1, .arch = {g->cc}, .cache_dir = g->cache_dir};
    rt_nvrtc_output out;
    jmp_buf oom;
    su_buf e;
    su_buf_init(&e, &oom);
    if (setjmp(oom))
        die("out of memory");
    if (!rt_nvrtc_compile(name, source, &o, &out, &e))
        die("%s", e.s);
    load_image(g, mod, out.cubin[0], name);
    rt_nvrtc_output_free(&out);
    su_buf_free(&e);
    CU(g, ModuleGetFunction(fn, *mod, name));
}

/* The flush kernel and its buffer: 4 x the L2, at least MIN_FLUSH bytes,
 * zeros. */
static void setup_flush(gpu *g, int64_t l2_bytes)
{
    own_kernel(g, "bc_flush", flush_source, &g->flush_mod, &g->flush_fn);
    g->flush_bytes = 4 * l2_bytes > MIN_FLUSH ? 4 * l2_bytes : MIN_FLUSH;
    CU(g, MemAlloc(&g->flush, (size_t)g->flush_bytes));
    CU(g, MemsetD8(g->flush, 0, (size_t)g->flush_bytes));
}

/* The image of module m for this device: the cubin of its architecture
 * (the plan is compiled for it), else the PTX. */
static const void *image_for(const rt_module *m, int cc)
{
    for (int i = 0; i < m->ncubin; i++)
        if (rt_arch_number(m->cubin[i].arch) == cc)
            return m->cubin[i].data;
    return m->ptx.data;
}

/* ---- one plan ---- */

typedef struct plan_dev {
    const rt_plan *p;
    rt_cu_ptr arena;               /* the largest stage's arena */
    rt_cu_module *mod;             /* per module, loaded at first use */
    rt_cu_func *fn;                /* per kernel, found at first use */
} plan_dev;

static rt_cu_ptr buf_ptr(const plan_dev *d, int stage, int32_t b)
{
    return d->arena + (rt_cu_ptr)d->p->stage[stage].buf_offset[b];
}

/* Fills buffer b of the stage, of type t, with bc_fill's data. */
static void fill(gpu *g, const plan_dev *d, int stage, int32_t b, const rt_type *t,
                 int64_t bound, uint64_t seed)
{
    size_t bytes = (size_t)rt_type_bytes(t);
    void *host = malloc(bytes ? bytes : 1);
    if (!host)
        die("out of memory");
    bc_fill(host, t, bound, seed);
    CU(g, MemcpyHtoD(buf_ptr(d, stage, b), host, bytes));
    free(host);
}

/* The inputs of item it, filled (the outputs need nothing). */
static void fill_inputs(gpu *g, const plan_dev *d, const bc_item *it, uint64_t seed)
{
    if (it->kernel < 0) {
        const rt_instr *mm = &d->p->stage[it->stage].instr[it->instr];
        for (int j = 0; j < 2; j++)
            fill(g, d, it->stage, mm->in[j], &mm->in_t[j], 0, seed + (uint64_t)j);
        return;
    }
    const rt_kernel *k = &d->p->kernel[it->kernel];
    for (int j = 0; j < k->nin; j++) {
        int64_t bound = k->param_t[j].dtype == RT_I32 ? bc_id_bound(d->p, k, k->param[j]) : 0;
        fill(g, d, it->stage, k->param[j], &k->param_t[j], bound, seed + (uint64_t)j);
    }
}

typedef struct kernel_arg {
    rt_cu_func fn;
    const rt_kernel *k;
    rt_cu_ptr ptr[RT_MAX_KPARAMS];
    void *arg[RT_MAX_KPARAMS];
} kernel_arg;

static void enqueue_kernel(gpu *g, void *arg)
{
    kernel_arg *a = arg;
    const rt_kernel *k = a->k;
    CU(g, LaunchKernel(a->fn, (unsigned int)k->grid, 1, 1, (unsigned int)k->block, 1, 1,
                       (unsigned int)k->shared_bytes, g->s, a->arg, NULL));
}

static void time_kernel(gpu *g, plan_dev *d, bc_item *it)
{
    const rt_kernel *k = &d->p->kernel[it->kernel];
    const rt_module *m = &d->p->module[k->module];
    if (!d->mod[k->module])
        load_image(g, &d->mod[k->module], image_for(m, g->cc), m->entry[0]);
    if (!d->fn[it->kernel])
        CU(g, ModuleGetFunction(&d->fn[it->kernel], d->mod[k->module], m->entry[k->entry]));
    kernel_arg a = {.fn = d->fn[it->kernel], .k = k};
    if (k->shared_bytes > 48 * 1024)
        CU(g, FuncSetAttribute(a.fn, RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, k->shared_bytes));
    for (int j = 0; j < k->nin + k->nout; j++) {
        a.ptr[j] = buf_ptr(d, it->stage, k->param[j]);
        a.arg[j] = &a.ptr[j];
    }
    it->us = median_us(g, enqueue_kernel, &a, true);
}

/* A matmul's operands in the arena: A, B, the epilogue's, the result. */
typedef struct matmul_arg {
    const rt_instr *mm;
    rt_blas_epilogue epi;
    rt_cu_ptr a, b, out;
    /* the reference's cuBLASLt objects */
    lt_desc desc;
    lt_layout la, lb, lc;
    lt_algo algo;
    float beta;
} matmul_arg;

static void matmul_operands(const plan_dev *d, const bc_item *it, matmul_arg *m)
{
    const rt_program *g = &d->p->stage[it->stage];
    m->mm = &g->instr[it->instr];
    if (it->kernel < 0) { /* a matmul alone: no epilogue */
        m->a = buf_ptr(d, it->stage, m->mm->in[0]);
        m->b = buf_ptr(d, it->stage, m->mm->in[1]);
        m->out = buf_ptr(d, it->stage, m->mm->out);
        return;
    }
    const rt_kernel *k = &d->p->kernel[it->kernel];
    int j = 2;
    m->epi.bits = k->epilogue;
    m->a = buf_ptr(d, it->stage, k->param[0]);
    m->b = buf_ptr(d, it->stage, k->param[1]);
    if (k->epilogue & RT_EPI_BIAS)
        m->epi.bias = buf_ptr(d, it->stage, k->param[j++]);
    if (k->epilogue & RT_EPI_RESIDUAL)
        m->epi.residual = buf_ptr(d, it->stage, k->param[j++]);
    if (k->epilogue & RT_EPI_DGELU) /* gelu_grad's x, read */
        m->epi.aux = buf_ptr(d, it->stage, k->param[j++]);
    m->out = buf_ptr(d, it->stage, k->param[j]);
    if (k->epilogue & RT_EPI_AUX) /* the gelu's operand, stored too */
        m->epi.aux = buf_ptr(d, it->stage, k->param[j + 1]);
}

static void enqueue_runtime_matmul(gpu *g, void *arg)
{
    matmul_arg *m = arg;
    su_status err;
    if (!rt_blas_matmul(g->blas, m->mm, &m->epi, m->a, m->b, m->out, g->s, &err))
        die("rt_blas_matmul: %s", err.msg);
}

static void enqueue_reference(gpu *g, void *arg)
{
    matmul_arg *m = arg;
    const float one = 1.0f;
    rt_cu_ptr c = m->epi.bits & RT_EPI_RESIDUAL ? m->epi.residual : m->out;
    LT(g, Matmul(g->lth, m->desc, &one, (const void *)(uintptr_t)m->b, m->la,
                 (const void *)(uintptr_t)m->a, m->lb, &m->beta, (const void *)(uintptr_t)c,
                 m->lc, (void *)(uintptr_t)m->out, m->lc, &m->algo,
                 (void *)(uintptr_t)g->workspace, REF_WORKSPACE, g->s));
}

/* A column-major rows x cols layout, batched. */
static void ref_layout(gpu *g, lt_layout *l, unsigned int type, int64_t rows, int64_t cols,
                       int64_t batch, int64_t stride)
{
    LT(g, MatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, rows));
    if (batch == 1)
        return;
    int32_t count = (int32_t)batch;
    LT(g, MatrixLayoutSetAttribute(*l, LT_LAYOUT_BATCH_COUNT, &count, sizeof count));
    LT(g, MatrixLayoutSetAttribute(*l, LT_LAYOUT_BATCH_STRIDE, &stride, sizeof stride));
}

/* The reference call's objects, made once: row-major C = A B as
 * column-major C^T = B^T A^T, as the runtime lays it out, the same
 * epilogue, and the heuristic's first algorithm for REF_WORKSPACE. */
static void ref_setup(gpu *g, matmul_arg *m)
{
    bc_mm s;
    bc_matmul_shape(m->mm, &s);
    unsigned int type = m->mm->in_t[0].dtype == RT_F16    ? LT_R_16F
                        : m->mm->in_t[0].dtype == RT_BF16 ? LT_R_16BF
                                                          : LT_R_32F;
    uint32_t epi = LT_EPILOGUE_DEFAULT;
    if (m->epi.bits & (RT_EPI_BIAS | RT_EPI_RELU | RT_EPI_GELU))
        epi = (m->epi.bits & RT_EPI_BIAS ? LT_EPILOGUE_BIAS : 0) |
              (m->epi.bits & RT_EPI_RELU ? LT_EPILOGUE_RELU : 0) |
              (m->epi.bits & RT_EPI_GELU ? LT_EPILOGUE_GELU : 0) |
              ((m->epi.bits & RT_EPI_GELU) && (m->epi.bits & RT_EPI_AUX) ? LT_EPILOGUE_AUX : 0);
    if (m->epi.bits & RT_EPI_DGELU)
        epi = LT_EPILOGUE_DGELU;
    m->beta = m->epi.bits & RT_EPI_RESIDUAL ? 1.0f : 0.0f;
    LT(g, MatmulDescCreate(&m->desc, LT_COMPUTE_32F, LT_R_32F));
    LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_EPILOGUE, &epi, sizeof epi));
    if (epi & LT_EPILOGUE_AUX) { /* the GELU input matrix (stored, or DGELU's read): D's layout */
        const void *aux = (const void *)(uintptr_t)m->epi.aux;
        int64_t ld = s.n, stride = s.m * s.n;
        LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_AUX_LD, &ld, sizeof ld));
        if (s.batch > 1)
            LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_AUX_BATCH_STRIDE, &stride,
                                         sizeof stride));
        LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_AUX_POINTER, &aux, sizeof aux));
    }
    if (m->epi.bits & RT_EPI_BIAS) {
        const void *bias = (const void *)(uintptr_t)m->epi.bias;
        LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    /* an operand stored transposed: its layout as stored, cuBLASLt's op T
     * (runtime/cuda/cuda_blas.c says why) */
    int32_t opa = s.tb, opb = s.ta; /* CUBLAS_OP_N 0, CUBLAS_OP_T 1 */
    LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_TRANSA, &opa, sizeof opa));
    LT(g, MatmulDescSetAttribute(m->desc, LT_DESC_TRANSB, &opb, sizeof opb));
    if (s.tb)
        ref_layout(g, &m->la, type, s.k, s.n, s.batch, s.stride_b);
    else
        ref_layout(g, &m->la, type, s.n, s.k, s.batch, s.stride_b);
    if (s.ta)
        ref_layout(g, &m->lb, type, s.m, s.k, s.batch, s.stride_a);
    else
        ref_layout(g, &m->lb, type, s.k, s.m, s.batch, s.stride_a);
    ref_layout(g, &m->lc, type, s.n, s.m, s.batch, s.m * s.n);
    lt_pref pref;
    uint64_t ws = REF_WORKSPACE;
    lt_heuristic h;
    int found = 0;
    LT(g, MatmulPreferenceCreate(&pref));
    LT(g, MatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof ws));
    LT(g, MatmulAlgoGetHeuristic(g->lth, m->desc, m->la, m->lb, m->lc, m->lc, pref, 1, &h,
                                 &found));
    LT(g, MatmulPreferenceDestroy(pref));
    if (found < 1)
        die("cuBLASLt has no algorithm for %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64,
            s.batch, s.m, s.n, s.k);
    m->algo = h.algo;
}

static void ref_free(gpu *g, matmul_arg *m)
{
    g->lt.MatrixLayoutDestroy(m->lc);
    g->lt.MatrixLayoutDestroy(m->lb);
    g->lt.MatrixLayoutDestroy(m->la);
    g->lt.MatmulDescDestroy(m->desc);
}

/* ---- --x3: an f32 matmul as bf16 parts ---- */

typedef struct x3_arg {
    matmul_arg *m;
    rt_instr parts;       /* m's matmul as a matmul of parts (RT_MM_PARTS) */
    bc_mm s;
    rt_cu_ptr ap, bp;     /* the parts of a and b */
    bool split;           /* split the operands before the calls */
} x3_arg;

/* x [outer, K, inner] into its parts p (split_source). */
static void enqueue_split(gpu *g, rt_cu_ptr x, rt_cu_ptr p, long long outer, long long k,
                          long long inner, int rev)
{
    void *arg[] = {&x, &p, &outer, &k, &inner, &rev};
    CU(g, LaunchKernel(g->split_fn, 4 * 132, 1, 1, 256, 1, 1, 0, g->s, arg, NULL));
}

static void enqueue_x3(gpu *g, void *arg)
{
    x3_arg *x = arg;
    const bc_mm *s = &x->s;
    if (x->split) {
        /* a: [batch, M, K] (K inside) or [batch, K, M]; b: [batch, K, N] or
         * [batch, N, K] (an operand without batch dims: batch 1) */
        long long ba = s->stride_a ? s->batch : 1, bb = s->stride_b ? s->batch : 1;
        if (s->ta)
            enqueue_split(g, x->m->a, x->ap, ba, s->k, s->m, 0);
        else
            enqueue_split(g, x->m->a, x->ap, ba * s->m, s->k, 1, 0);
        if (s->tb)
            enqueue_split(g, x->m->b, x->bp, bb * s->n, s->k, 1, 1);
        else
            enqueue_split(g, x->m->b, x->bp, bb, s->k, s->n, 1);
    }
    su_status err;
    if (!rt_blas_matmul(g->blas, &x->parts, &x->m->epi, x->ap, x->bp, x->m->out, g->s, &err))
        die("rt_blas_matmul (parts): %s", err.msg);
}

/* Element (batch q, row i, column j) of a @ b in double, and sum |a b|. */
static double exact_dot(const float *a, const float *b, const bc_mm *s, int64_t q, int64_t i,
                        int64_t j, double *mag)
{
    const float *aq = a + q * s->stride_a, *bq = b + q * s->stride_b;
    double sum = 0;
    *mag = 0;
    for (int64_t k = 0; k < s->k; k++) {
        double x = s->ta ? aq[k * s->m + i] : aq[i * s->k + k];
        double y = s->tb ? bq[j * s->k + k] : bq[k * s->n + j];
        sum += x * y;
        *mag += fabs(x * y);
    }
    return sum;
}

/* Both ways' errors without the epilogue (bc_item's err_f32, err_x3), on
 * operands uniform in [-1, 1) with 24 significant bits, the outputs in
 * scratch buffers. */
static void x3_errors(gpu *g, x3_arg *x, bc_item *it)
{
    const bc_mm *s = &x->s;
    int64_t na = (s->stride_a ? s->batch : 1) * s->m * s->k;
    int64_t nb = (s->stride_b ? s->batch : 1) * s->k * s->n, nc = s->batch * s->m * s->n;
    float *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4);
    float *c32 = malloc((size_t)nc * 4), *cx3 = malloc((size_t)nc * 4);
    if (!a || !b || !c32 || !cx3)
        die("out of memory");
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < na + nb; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((int32_t)(r >> 32)) / 2147483648.0f;
        if (i < na)
            a[i] = v;
        else
            b[i - na] = v;
    }
    matmul_arg plain = *x->m;
    memset(&plain.epi, 0, sizeof plain.epi);
    CU(g, MemAlloc(&plain.a, (size_t)na * 4));
    CU(g, MemAlloc(&plain.b, (size_t)nb * 4));
    CU(g, MemAlloc(&plain.out, (size_t)nc * 4));
    CU(g, MemcpyHtoD(plain.a, a, (size_t)na * 4));
    CU(g, MemcpyHtoD(plain.b, b, (size_t)nb * 4));
    enqueue_runtime_matmul(g, &plain);
    CU(g, StreamSynchronize(g->s)); /* a stream of its own: the copy does not wait */
    CU(g, MemcpyDtoH(c32, plain.out, (size_t)nc * 4));
    x3_arg y = *x;
    y.m = &plain;
    y.split = true;
    enqueue_x3(g, &y);
    CU(g, StreamSynchronize(g->s));
    CU(g, MemcpyDtoH(cx3, plain.out, (size_t)nc * 4));
    it->err_f32 = it->err_x3 = 0;
    for (int t = 0; t < 64; t++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int64_t e = (int64_t)((r >> 16) % (uint64_t)nc);
        int64_t q = e / (s->m * s->n), i = e / s->n % s->m, j = e % s->n;
        double mag, want = exact_dot(a, b, s, q, i, j, &mag);
        double u = mag > 0 ? ldexp(mag, -24) : 1;
        double e32 = fabs(c32[e] - want) / u, ex3 = fabs(cx3[e] - want) / u;
        it->err_f32 = e32 > it->err_f32 ? e32 : it->err_f32;
        it->err_x3 = ex3 > it->err_x3 ? ex3 : it->err_x3;
    }
    CU(g, MemFree(plain.a));
    CU(g, MemFree(plain.b));
    CU(g, MemFree(plain.out));
    free(a);
    free(b);
    free(c32);
    free(cx3);
}

/* f32 matmul mm as the matmul of its operands' parts: bf16, each K 3 times
 * as long. */
static void parts_instr(const rt_instr *mm, rt_instr *p)
{
    *p = *mm;
    for (int i = 0; i < 2; i++) {
        rt_type *t = &p->in_t[i];
        bool tr = t->rank >= 2 && (mm->dim & (i ? RT_TRANS_B : RT_TRANS_A));
        /* K: a's last dim (the one before read transposed), b's first of
         * its two (its last read transposed); a vector's only one */
        int kd = t->rank == 1 ? 0 : i == 0 ? t->rank - 1 - tr : t->rank - 2 + tr;
        t->dtype = RT_BF16;
        t->dim[kd] *= 3;
    }
    p->dim |= RT_MM_PARTS;
}

static void time_x3(gpu *g, matmul_arg *m, bc_item *it)
{
    x3_arg x = {.m = m};
    parts_instr(m->mm, &x.parts);
    bc_matmul_shape(m->mm, &x.s);
    int64_t na = (x.s.stride_a ? x.s.batch : 1) * x.s.m * x.s.k;
    int64_t nb = (x.s.stride_b ? x.s.batch : 1) * x.s.k * x.s.n;
    CU(g, MemAlloc(&x.ap, (size_t)na * 6));
    CU(g, MemAlloc(&x.bp, (size_t)nb * 6));
    x.split = true;
    it->x3_us = median_us(g, enqueue_x3, &x, true);
    x.split = false;
    it->x3_mm_us = median_us(g, enqueue_x3, &x, true);
    x3_errors(g, &x, it); /* its own operands, split into the same parts' buffers */
    CU(g, MemFree(x.ap));
    CU(g, MemFree(x.bp));
}

static void time_matmul(gpu *g, plan_dev *d, bc_item *it)
{
    matmul_arg m;
    memset(&m, 0, sizeof m);
    matmul_operands(d, it, &m);
    it->us = median_us(g, enqueue_runtime_matmul, &m, true);
    if (m.mm->dim & RT_MM_PARTS) { /* three calls: no one call of cuBLASLt to compare */
        it->ref_us = 0;
        return;
    }
    ref_setup(g, &m);
    it->ref_us = median_us(g, enqueue_reference, &m, true);
    ref_free(g, &m);
    if (g->x3 && m.mm->in_t[0].dtype == RT_F32)
        time_x3(g, &m, it);
}

/* Times every item of plan p. */
static void measure_plan(gpu *g, const rt_plan *p, bc_item *items, int n, const char *what)
{
    plan_dev d = {.p = p};
    int64_t arena = 1;
    for (int s = 0; s < p->nstages; s++)
        if (p->stage[s].arena_bytes > arena)
            arena = p->stage[s].arena_bytes;
    d.mod = calloc((size_t)p->nmodules + 1, sizeof *d.mod);
    d.fn = calloc((size_t)p->nkernels + 1, sizeof *d.fn);
    if (!d.mod || !d.fn)
        die("out of memory");
    CU(g, MemAlloc(&d.arena, (size_t)arena));
    CU(g, MemsetD8(d.arena, 0, (size_t)arena));
    for (int i = 0; i < n; i++) {
        fill_inputs(g, &d, &items[i], 1000 * (uint64_t)i);
        if (items[i].cls == BC_MATMUL)
            time_matmul(g, &d, &items[i]);
        else
            time_kernel(g, &d, &items[i]);
    }
    fprintf(stderr, "bench_cuda: %s: %d launches timed\n", what, n);
    for (int i = 0; i < p->nmodules; i++)
        if (d.mod[i])
            CU(g, ModuleUnload(d.mod[i]));
    CU(g, MemFree(d.arena));
    free(d.mod);
    free(d.fn);
}

/* ---- compiling the plans ---- */

typedef struct setup {
    const char *model[MAX_MODELS];
    int nmodels;
    const char *mesh[MAX_MESHES];
    int nmeshes;
    const char *define[MAX_DEFINES];
    int ndefines;
    const char *out;
    const char *calibrate;     /* --calibrate FILE.json, or NULL */
    bool matmuls_only, x3;     /* --matmuls-only, --x3 */
    char command[2048];        /* the command line, for the profile */
    long repeat, copy_mb;
} setup;

static shardc_options *options(const setup *su, const char *mesh, const char *archs,
                               const char *cache)
{
    char *err = NULL;
    shardc_options *opt = shardc_options_new();
    if (!opt)
        die("out of memory");
    if (mesh && shardc_options_set_mesh(opt, mesh, &err) != SHARDC_OK)
        die("--mesh %s: %s", mesh, err);
    for (int i = 0; i < su->ndefines; i++) {
        char name[128];
        const char *eq = strchr(su->define[i], '=');
        char *end;
        long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
        if (!eq || eq == su->define[i] || *end || (size_t)(eq - su->define[i]) >= sizeof name)
            die("-D %s: expected NAME=INTEGER", su->define[i]);
        snprintf(name, sizeof name, "%.*s", (int)(eq - su->define[i]), su->define[i]);
        if (shardc_options_define(opt, name, v, &err) != SHARDC_OK)
            die("-D %s: %s", su->define[i], err);
    }
    if (shardc_options_set_archs(opt, archs, &err) != SHARDC_OK)
        die("--arch %s: %s", archs, err);
    if (cache && shardc_options_set_cache_dir(opt, cache, &err) != SHARDC_OK)
        die("cache %s: %s", cache, err);
    return opt;
}

/* The number of mesh axes of model (the first line of its IR, "mesh dp
 * = 1, tp = 1"). */
static int model_axes(const setup *su, const char *model)
{
    shardc_options *opt = options(su, NULL, "none", NULL);
    shardc_program *prog = NULL;
    char *err = NULL, *ir = NULL;
    if (shardc_compile_file(opt, model, &prog, &err) != SHARDC_OK ||
        shardc_program_emit(prog, "ir", &ir, NULL, &err) != SHARDC_OK)
        die("%s", err);
    int n = strncmp(ir, "mesh ", 5) ? 0 : 1;
    for (const char *c = ir; n && *c && *c != '\n'; c++)
        n += *c == ',';
    shardc_free(ir);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return n;
}

/* mesh with 1s added up to axes sizes: "2x2" on 3 axes is "2x2x1". */
static void pad_mesh(const char *mesh, int axes, char *out, size_t n)
{
    int have = 1;
    for (const char *c = mesh; *c; c++)
        have += *c == 'x';
    snprintf(out, n, "%s", mesh);
    for (int i = have; i < axes && strlen(out) + 3 < n; i++)
        strcat(out, "x1");
}

/* The training plan of model on mesh with kernels for sm_<cc>. */
static rt_plan *compile_plan(const setup *su, const char *model, const char *mesh, int cc,
                             const char *cache)
{
    char archs[16];
    su_status err;
    snprintf(archs, sizeof archs, "sm_%d", cc);
    shardc_options *opt = options(su, mesh, archs, cache);
    shardc_program *prog = NULL;
    char *e = NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (shardc_compile_file(opt, model, &prog, &e) != SHARDC_OK ||
        api_program_plan(prog, &bytes, &len, &e) != SHARDC_OK)
        die("%s --mesh %s: %s", model, mesh, e);
    rt_plan *p = rt_plan_read_plain(bytes, len, model, &err);
    if (!p)
        die("%s --mesh %s: %s", model, mesh, err.msg);
    free(bytes);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return p;
}

/* "examples/mlp.sh" for a default model, else the path given. */
static const char *display_name(const char *path)
{
    size_t n = strlen(BENCH_EXAMPLES_DIR);
    return !strncmp(path, BENCH_EXAMPLES_DIR "/", n + 1) ? path + n - strlen("examples") : path;
}

static void parse_args(int argc, char **argv, setup *su)
{
    memset(su, 0, sizeof *su);
    su->repeat = DEFAULT_REPEAT;
    su->copy_mb = DEFAULT_COPY_MB;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--matmuls-only") || !strcmp(a, "--x3")) {
            *(a[2] == 'x' ? &su->x3 : &su->matmuls_only) = true;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(a, "--model") && su->nmodels < MAX_MODELS)
            su->model[su->nmodels++] = v;
        else if (!strcmp(a, "--mesh") && su->nmeshes < MAX_MESHES)
            su->mesh[su->nmeshes++] = v;
        else if (!strcmp(a, "-D") && su->ndefines < MAX_DEFINES)
            su->define[su->ndefines++] = v;
        else if (!strcmp(a, "--repeat"))
            su->repeat = strtol(v, NULL, 10);
        else if (!strcmp(a, "--copy-mb"))
            su->copy_mb = strtol(v, NULL, 10);
        else if (!strcmp(a, "--out"))
            su->out = v;
        else if (!strcmp(a, "--calibrate"))
            su->calibrate = v;
        else
            usage();
        i++;
    }
    size_t used = (size_t)snprintf(su->command, sizeof su->command, "bench_cuda");
    for (int i = 1; i < argc && used < sizeof su->command; i++)
        used += (size_t)snprintf(su->command + used, sizeof su->command - used,
                                 strchr(argv[i], ' ') ? " '%s'" : " %s", argv[i]);
    if (su->repeat < 1 || su->repeat > 10000 || su->copy_mb < 1 || su->copy_mb > (1 << 20))
        usage();
    static const char *const models[] = {BENCH_EXAMPLES_DIR "/mlp.sh",
                                         BENCH_EXAMPLES_DIR "/transformer.sh",
                                         BENCH_EXAMPLES_DIR "/pipeline.sh"};
    if (!su->nmodels) {
        memcpy(su->model, models, sizeof models);
        su->nmodels = 3;
    }
    if (!su->nmeshes) {
        su->mesh[su->nmeshes++] = "1";
        su->mesh[su->nmeshes++] = "2x2";
    }
}

/* The GPU, cuBLASLt (the runtime's and ours), the flush kernel; dies when
 * any is missing. */
static void start(gpu *g, bc_machine *m, const setup *su)
{
    rt_cu_status why;
    g->cu = rt_cu_load(&why, &cu_err);
    if (!g->cu)
        die("%s", cu_err.msg);
    g->repeat = (int)su->repeat;
    load_extra(&g->x);
    load_lt(&g->lt);
    open_gpu(g, m);
    if (!rt_nvrtc_supports(g->cc))
        die("NVRTC %d.%d cannot compile for this GPU (sm_%d)", m->nvrtc_major, m->nvrtc_minor,
            g->cc);
    g->cache_dir = rt_nvrtc_cache_dir(getenv("SHARDC_CACHE_DIR"), getenv("XDG_CACHE_HOME"),
                                      getenv("HOME"));
    su_status err;
    size_t ws;
    if (!(g->blas = rt_blas_new(&err)) ||
        !rt_blas_workspace_bytes(getenv("SHARDC_BLAS_WORKSPACE"), &ws, &err))
        die("%s", err.msg);
    if (ws) { /* the runtime's matmuls with the workspace a session gives them */
        CU(g, MemAlloc(&g->blas_ws, ws));
        rt_blas_set_workspace(g->blas, g->blas_ws, ws);
    }
    LT(g, Create(&g->lth));
    CU(g, MemAlloc(&g->workspace, REF_WORKSPACE));
    setup_flush(g, m->l2_bytes);
    m->flush_bytes = g->flush_bytes;
    if ((g->x3 = su->x3))
        own_kernel(g, "bc_split3", split_source, &g->split_mod, &g->split_fn);
}

/* The report to stdout, and to out (opened before anything ran, so a
 * path that cannot be written fails at once) when not NULL. */
static void write_report(FILE *out, const char *path, const bc_machine *m, const bc_result *r,
                         int n)
{
    bc_report(stdout, m, r, n);
    if (!out)
        return;
    bc_report(out, m, r, n);
    if (fclose(out) != 0)
        die("%s: %s", path, strerror(errno));
}

/* --calibrate's temporary file, removed at exit unless renamed (""). */
static char cal_tmp_path[4096];

static void remove_cal_tmp(void)
{
    if (cal_tmp_path[0])
        remove(cal_tmp_path);
}

/* --calibrate: the profile into f (the temporary file tmp), then renamed
 * to path; the calibration's figures to stderr. */
static void write_profile(FILE *f, const char *tmp, const char *path, const setup *su,
                          const bc_machine *m, const bc_result *r, int n)
{
    const char *base_name = strstr(m->gpu, "H200") ? "h200" : strstr(m->gpu, "H100") ? "h100"
                            : strstr(m->gpu, "A100") ? "a100" : NULL;
    const pass_hw *base = pass_hw_find(base_name ? base_name : "h100");
    bc_peaks pk = {base->tc_flops, base->f32_flops, base->mem_bw, base->launch_s};
    bc_calibration c;
    bc_calibrate(r, n, &pk, &c);
    char desc[512], by[3072];
    snprintf(desc, sizeof desc, "%s; efficiencies measured on %s", base->desc, m->gpu);
    snprintf(by, sizeof by, "%s (%s, CUDA driver %d, %s)", su->command, m->gpu, m->cuda_driver,
             m->date);
    bc_write_profile(f, base, &c, base_name ? base_name : "local", desc, by);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        die("--calibrate %s: %s", path, strerror(errno));
    cal_tmp_path[0] = 0;
    fprintf(stderr, "bench_cuda: %s: mem_eff %.4f (%d kernels), attention_eff %.4f (%d), "
                    "matmul_eff %d points (%d matmuls)\n", path, c.mem_eff, c.mem_n, c.attn_eff,
            c.attn_n, c.nmm, c.mm_n);
    if (c.launch_n > 0)
        fprintf(stderr, "bench_cuda: %s: launch_s %.3g s (the median of %d small launches)\n",
                path, c.launch_s, c.launch_n);
    for (int k = 0; k < PASS_KC_COUNT; k++)
        if (c.class_n[k] > 0)
            fprintf(stderr, "bench_cuda: %s: %s kernels at %.4f of mem_bw (%d kernels)\n", path,
                    pass_kclass_name(k), c.class_eff[k], c.class_n[k]);
}

int main(int argc, char **argv)
{
    setup su;
    parse_args(argc, argv, &su);
    su_status why;
    if (rt_cu_probe(&why) != RT_CU_OK) {
        printf("skipped: no GPU (%s)\n", why.msg);
        return 77;
    }
    if (!rt_nvrtc_available())
        die("this build has no NVRTC: the plans' kernels cannot be compiled");
    FILE *out = su.out ? fopen(su.out, "w") : NULL;
    if (su.out && !out)
        die("--out %s: %s", su.out, strerror(errno));
    char *cal_tmp = cal_tmp_path;
    FILE *cal = NULL;
    if (su.calibrate) {
        snprintf(cal_tmp, sizeof cal_tmp_path, "%s.tmp.%ld", su.calibrate, (long)getpid());
        if (!(cal = fopen(cal_tmp, "w")))
            die("--calibrate %s: %s: %s", su.calibrate, cal_tmp, strerror(errno));
        atexit(remove_cal_tmp); /* a run that dies leaves no temporary file */
    }
    gpu g;
    bc_machine m;
    memset(&g, 0, sizeof g);
    memset(&m, 0, sizeof m);
    start(&g, &m, &su);
    m.copy_bytes = (int64_t)su.copy_mb << 20;
    m.copy_gbs = copy_bandwidth(&g, m.copy_bytes);
    fprintf(stderr, "bench_cuda: %s, copy bandwidth %.1f GB/s\n", m.gpu, m.copy_gbs);

    int n = su.nmodels * su.nmeshes;
    bc_result *res = calloc((size_t)n, sizeof *res);
    char (*meshes)[64] = calloc((size_t)n, sizeof *meshes);
    if (!res || !meshes)
        die("out of memory");
    for (int i = 0; i < su.nmodels; i++) {
        int axes = model_axes(&su, su.model[i]);
        for (int j = 0; j < su.nmeshes; j++) {
            bc_result *r = &res[i * su.nmeshes + j];
            char *mesh = meshes[i * su.nmeshes + j];
            pad_mesh(su.mesh[j], axes, mesh, sizeof *meshes);
            r->model = display_name(su.model[i]);
            r->mesh = mesh;
            fprintf(stderr, "bench_cuda: compiling %s --mesh %s\n", r->model, mesh);
            r->plan = compile_plan(&su, su.model[i], mesh, g.cc, g.cache_dir);
            bc_item *items = NULL;
            r->nitems = bc_select(r->plan, &items);
            if (r->nitems < 0)
                die("out of memory");
            if (su.matmuls_only) {
                int kept = 0;
                for (int k = 0; k < r->nitems; k++)
                    if (items[k].cls == BC_MATMUL)
                        items[kept++] = items[k];
                r->nitems = kept;
            }
            r->x3 = su.x3;
            char what[256];
            snprintf(what, sizeof what, "%s --mesh %s", r->model, mesh);
            measure_plan(&g, r->plan, items, r->nitems, what);
            r->item = items;
        }
    }
    write_report(out, su.out, &m, res, n);
    if (cal)
        write_profile(cal, cal_tmp, su.calibrate, &su, &m, res, n);
    for (int i = 0; i < n; i++) {
        free((void *)res[i].item);
        rt_plan_free((rt_plan *)res[i].plan);
    }
    free(res);
    free(meshes);
    free(g.cache_dir);
    return 0;
}
