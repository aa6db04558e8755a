/* comm_cuda_local.c: the device of comm_dev.c on the CUDA driver
 * (comm_cuda_local.h): copies and the reduction kernel on a rank's own
 * stream, the kernel compiled by NVRTC once per session and loaded into
 * the primary context its ranks share. */
#include "runtime/comm/comm_cuda_local.h"
#include "support/support.h"

#include "runtime/cuda/nvrtc.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's dtype codes are rt_dtype's. */
_Static_assert(RT_F32 == 0 && RT_F16 == 1 && RT_BF16 == 2 && RT_I32 == 3,
               "the reduction kernel's dtype codes");
/* Its parameter: 256 addresses and the rest, under the driver's 4 KiB. */
_Static_assert(sizeof(rt_dreduce) == 8 * RT_DCOMM_MAX_MEMBERS + 8 + 3 * 8 + 4 * 4,
               "rt_dreduce as the kernel's shardc_reduce_args");

enum { BLOCK = 256, JIT_LOG = 4096 };

/* One thread per element, grid-striding; element (r, c) of each member at
 * r*spitch + c. Conversions are runtime/cpu/cpu.c's, bit for bit, so the
 * result is the host communicator's (comm_local.c) to the bit. */
static const char source[] =
    "/* shardc: the reductions of --comm local on the device\n"
    " * (runtime/comm/comm_cuda_local.c, runtime/comm/comm_dev.h) */\n"
    "typedef unsigned int u32;\n"
    "typedef unsigned short u16;\n"
    "typedef unsigned long long u64;\n"
    "\n"
    "struct shardc_reduce_args { /* runtime/comm/comm_dev.h: rt_dreduce */\n"
    "    u64 src[256];\n"
    "    u64 dst; /* 0: the result back into every src */\n"
    "    long long rows, cols, spitch;\n"
    "    int n, dtype, max, pad;\n"
    "};\n"
    "\n"
    "__device__ float f16_to_f32(u16 h)\n"
    "{\n"
    "    u32 sign = (u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "    if (e == 0) {\n"
    "        float f = (float)m * 5.9604644775390625e-8f; /* 2^-24 */\n"
    "        return sign ? -f : f;\n"
    "    }\n"
    "    if (e == 0x1f)\n"
    "        return __uint_as_float(sign | 0x7f800000u | (m << 13));\n"
    "    return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));\n"
    "}\n"
    "\n"
    "__device__ u32 round_even(u32 q, u32 rem, int shift)\n"
    "{\n"
    "    u32 half = 1u << (shift - 1);\n"
    "    return q + (rem > half || (rem == half && (q & 1)));\n"
    "}\n"
    "\n"
    "__device__ u16 f32_to_f16(float f)\n"
    "{\n"
    "    u32 x = __float_as_uint(f);\n"
    "    u16 sign = (u16)((x >> 16) & 0x8000u);\n"
    "    x &= 0x7fffffffu;\n"
    "    if (x >= 0x7f800000u)\n"
    "        return sign | (x > 0x7f800000u ? (u16)(0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u);\n"
    "    if (x >= 0x477ff000u)\n"
    "        return sign | 0x7c00u;\n"
    "    u32 e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;\n"
    "    if (x >= 0x38800000u)\n"
    "        return sign | (u16)round_even(((e - 112) << 10) | ((m >> 13) & 0x3ffu), m & 0x1fffu, 13);\n"
    "    int shift = 126 - (int)e;\n"
    "    if (shift > 25)\n"
    "        return sign;\n"
    "    return sign | (u16)round_even(m >> shift, m & ((1u << shift) - 1), shift);\n"
    "}\n"
    "\n"
    "__device__ u16 f32_to_bf16(float f)\n"
    "{\n"
    "    u32 x = __float_as_uint(f);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u)\n"
    "        return (u16)((x >> 16) | 0x40u);\n"
    "    return (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "}\n"
    "\n"
    "__device__ float load(int dtype, u64 p, long long i)\n"
    "{\n"
    "    if (dtype == 0)\n"
    "        return ((const float *)p)[i];\n"
    "    u16 h = ((const u16 *)p)[i];\n"
    "    return dtype == 1 ? f16_to_f32(h) : __uint_as_float((u32)h << 16);\n"
    "}\n"
    "\n"
    "__device__ void store(int dtype, u64 p, long long i, float v)\n"
    "{\n"
    "    if (dtype == 0)\n"
    "        ((float *)p)[i] = v;\n"
    "    else\n"
    "        ((u16 *)p)[i] = dtype == 1 ? f32_to_f16(v) : f32_to_bf16(v);\n"
    "}\n"
    "\n"
    "/* i32: wrapping sum, signed max; never through float */\n"
    "__device__ void reduce_i32(const shardc_reduce_args &a, long long at, long long e)\n"
    "{\n"
    "    u32 acc = ((const u32 *)a.src[0])[at];\n"
    "    for (int j = 1; j < a.n; j++) {\n"
    "        u32 x = ((const u32 *)a.src[j])[at];\n"
    "        acc = !a.max ? acc + x : (int)x > (int)acc ? x : acc;\n"
    "    }\n"
    "    if (a.dst)\n"
    "        ((u32 *)a.dst)[e] = acc;\n"
    "    else\n"
    "        for (int j = 0; j < a.n; j++)\n"
    "            ((u32 *)a.src[j])[at] = acc;\n"
    "}\n"
    "\n"
    "/* f32, f16, bf16: in f32, member order; max: a nan wins (cpu.c's amax) */\n"
    "__device__ void reduce_float(const shardc_reduce_args &a, long long at, long long e)\n"
    "{\n"
    "    float acc = load(a.dtype, a.src[0], at);\n"
    "    for (int j = 1; j < a.n; j++) {\n"
    "        float v = load(a.dtype, a.src[j], at);\n"
    "        acc = !a.max ? acc + v : v > acc || v != v ? v : acc;\n"
    "    }\n"
    "    if (a.dst)\n"
    "        store(a.dtype, a.dst, e, acc);\n"
    "    else\n"
    "        for (int j = 0; j < a.n; j++)\n"
    "            store(a.dtype, a.src[j], at, acc);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "shardc_comm_reduce(const shardc_reduce_args a)\n"
    "{\n"
    "    long long total = a.rows * a.cols, step = (long long)gridDim.x * blockDim.x;\n"
    "    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;\n"
    "         e += step) {\n"
    "        long long r = e / a.cols, at = r * a.spitch + (e - r * a.cols);\n"
    "        if (a.dtype == 3)\n"
    "            reduce_i32(a, at, e);\n"
    "        else\n"
    "            reduce_float(a, at, e);\n"
    "    }\n"
    "}\n";

const char *rt_cuda_local_source(void)
{
    return source;
}

bool rt_cuda_local_usable(int ndev, int64_t ranks, int64_t max_group, bool nvrtc, char *why,
                          size_t n)
{
    if (!nvrtc)
        snprintf(why, n, "this build has no NVRTC to compile the reduction kernel");
    else if (ndev > 1 && ranks > 1)
        snprintf(why, n, "the %lld ranks spread over %d GPUs (rank r on GPU r mod %d), and "
                 "GPU-to-GPU access is not set up", (long long)ranks, ndev, ndev);
    else if (max_group > RT_DCOMM_MAX_MEMBERS)
        snprintf(why, n, "a group of %lld ranks (the kernel reads at most %d)",
                 (long long)max_group, RT_DCOMM_MAX_MEMBERS);
    else
        return true;
    return false;
}

/* ---- the session's state ---- */

enum { UNKNOWN, ON, OFF, FAILED };

struct rt_cuda_local {
    pthread_mutex_t mu;       /* everything below */
    const rt_plan *p;
    int64_t ranks, max_group;
    int state;                /* decided by the first rank */
    char why[512];            /* OFF: why not; FAILED: the error, for every rank */
    const rt_cu_api *cu;
    rt_cu_device dev;
    rt_cu_ctx ctx;            /* dev's primary context, retained while mod lives */
    rt_cu_module mod;
    rt_cu_func fn;
    int sms;                  /* multiprocessors: the grid's cap */
};

rt_cuda_local *rt_cuda_local_new(const rt_plan *p)
{
    rt_cuda_local *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        return NULL;
    }
    l->p = p;
    l->ranks = rt_plan_ranks(p);
    l->max_group = rt_dcomm_max_group(p);
    return l;
}

void rt_cuda_local_free(rt_cuda_local *l)
{
    if (!l)
        return;
    if (l->mod && l->cu->CtxSetCurrent(l->ctx) == RT_CU_SUCCESS)
        l->cu->ModuleUnload(l->mod);
    if (l->ctx)
        l->cu->DevicePrimaryCtxRelease(l->dev);
    pthread_mutex_destroy(&l->mu);
    free(l);
}


#define CU(call) RT_CU_CHECK(l->cu, call, err)

/* Under l->mu, by the first rank: the module in dev's primary context
 * (current on this thread). */
static int load(rt_cuda_local *l, rt_cu_device dev, int cc, su_status *err)
{
    void *image = NULL;
    if (rt_nvrtc_image(RT_CUDA_LOCAL_ENTRY, source, "the reduction kernel", cc, &image, err) != 0)
        return -1;
    char log[JIT_LOG] = "";
    unsigned int opt[2] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    int rc = 0;
    if (!CU(DevicePrimaryCtxRetain(&l->ctx, dev)))
        rc = -1;
    else
        l->dev = dev;
    rt_cu_result res = rc == 0 ? l->cu->ModuleLoadDataEx(&l->mod, image, 2, opt, val) : 0;
    if (res != RT_CU_SUCCESS) {
        char what[256];
        l->mod = NULL;
        rc = su_fail(err, SU_GPU, "loading the reduction kernel: %s%s%s",
                  rt_cu_describe(l->cu, res, what, sizeof what), *log ? ": " : "", log);
    }
    free(image);
    if (rc == 0 && (!CU(ModuleGetFunction(&l->fn, l->mod, RT_CUDA_LOCAL_ENTRY)) ||
                    !CU(DeviceGetAttribute(&l->sms, RT_CU_ATTR_MULTIPROCESSOR_COUNT, dev))))
        rc = -1;
    return rc;
}

/* Under l->mu: ON, OFF or FAILED, decided once for the session. */
static int decide(rt_cuda_local *l, const rt_cu_api *cu, rt_cu_device dev, int cc)
{
    if (l->state != UNKNOWN)
        return l->state;
    l->cu = cu;
    int ndev = 0;
    su_status err = {SU_OK, ""};
    if (!RT_CU_CHECK(cu, DeviceGetCount(&ndev), &err))
        l->state = FAILED;
    else if (!rt_cuda_local_usable(ndev, l->ranks, l->max_group, rt_nvrtc_available(), l->why,
                                   sizeof l->why))
        l->state = OFF;
    else if (l->max_group == 1) /* groups of one copy: no kernel to compile */
        l->state = ON;
    else
        l->state = load(l, dev, cc, &err) == 0 ? ON : FAILED;
    if (l->state == FAILED)
        snprintf(l->why, sizeof l->why, "--comm local on the device: %.*s",
                 (int)sizeof l->why - 64, err.msg);
    return l->state;
}

/* ---- a rank's device ---- */

struct rt_cuda_local_rank {
    rt_cuda_local *l;
    const rt_cu_api *cu;
    rt_cu_stream stream;      /* the rank's compute stream */
    rt_dev_ops ops;           /* ctx: this */
};

#undef CU
#define CU(call) RT_CU_CHECK(lr->cu, call, err)

static int d_copy(void *ctx, rt_dptr dst, size_t dpitch, rt_dptr src, size_t spitch,
                  size_t width, size_t rows, su_status *err)
{
    rt_cuda_local_rank *lr = ctx;
    return rt_cu_copy_rows(lr->cu, lr->stream, dst, 0, dpitch, src, 0, spitch, width, rows, err);
}

static int d_reduce(void *ctx, const rt_dreduce *r, su_status *err)
{
    rt_cuda_local_rank *lr = ctx;
    int64_t total = r->rows * r->cols, blocks = (total + BLOCK - 1) / BLOCK;
    int64_t most = 8 * (int64_t)(lr->l->sms > 0 ? lr->l->sms : 1); /* then grid-stride */
    void *arg[1] = {(void *)r};
    if (total <= 0)
        return 0;
    if (!lr->l->fn) /* comm_dev reduces only over groups of more than one */
        return su_fail(err, SU_GPU, "a reduction over %d members in a plan whose groups have one",
                    r->n);
    return CU(LaunchKernel(lr->l->fn, (unsigned int)(blocks < most ? blocks : most), 1, 1, BLOCK,
                           1, 1, 0, lr->stream, arg, NULL))
               ? 0
               : -1;
}

static int d_sync(void *ctx, su_status *err)
{
    rt_cuda_local_rank *lr = ctx;
    return CU(StreamSynchronize(lr->stream)) ? 0 : -1;
}

int rt_cuda_local_rank_new(rt_cuda_local *l, const rt_cu_api *cu, rt_cu_device dev, int cc,
                           rt_cu_stream stream, int stage, rt_cuda_local_rank **out, su_status *err)
{
    *out = NULL;
    pthread_mutex_lock(&l->mu);
    int state = decide(l, cu, dev, cc);
    pthread_mutex_unlock(&l->mu);
    if (state == FAILED)
        return su_fail(err, SU_GPU, "%s", l->why); /* written once, before state was */
    if (state == OFF)
        return 0;
    rt_cuda_local_rank *lr = calloc(1, sizeof *lr);
    if (!lr)
        return su_fail(err, SU_NOMEM, "out of memory");
    lr->l = l;
    lr->cu = cu;
    lr->stream = stream;
    lr->ops = (rt_dev_ops){lr, d_copy, d_reduce, d_sync, 0,
                           rt_dcomm_staging_bytes(&l->p->stage[stage])};
    rt_cu_ptr staging = 0;
    if (lr->ops.staging_bytes > 0 && !CU(MemAlloc(&staging, (size_t)lr->ops.staging_bytes))) {
        free(lr);
        return -1;
    }
    lr->ops.staging = staging;
    *out = lr;
    return 0;
}

const rt_dev_ops *rt_cuda_local_ops(const rt_cuda_local_rank *lr)
{
    return &lr->ops;
}

void rt_cuda_local_rank_free(rt_cuda_local_rank *lr)
{
    if (!lr)
        return;
    if (lr->ops.staging)
        lr->cu->MemFree(lr->ops.staging);
    free(lr);
}
