/* cuda.c: the CUDA backend (cuda.h): a rank's device state, made at its
 * first run, and its execution loop: each kernel at its anchor, the other
 * instructions on the device or, for sources and collectives, through
 * the session's host paths. Everything a rank queues goes to its one
 * stream; copies to and from the host are synchronous, after the stream
 * has drained. */
#include "cuda.h"

#include "comm_nccl.h"
#include "cpu.h"
#include "cuda_blas.h"
#include "cuda_driver.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_SHARED = 48 * 1024, JIT_LOG = 4096 };

struct rt_cuda_rank {
    const rt_cu_api *cu;
    const rt_plan *p;
    int stage;
    const rt_program *g;
    int64_t coord[RT_MAX_AXES];
    rt_cu_device dev;
    rt_cu_ctx ctx;              /* the device's primary context, retained */
    int cc;                     /* compute capability: 90 for 9.0 */
    rt_cu_stream stream;
    rt_cu_ptr arena;            /* g->arena_bytes, carved at g->buf_offset */
    rt_cu_module *mod;          /* per module of the plan, loaded if the stage uses it */
    rt_cu_func *fn;             /* per module: its entry */
    int32_t *kernel_at;         /* per instruction: the kernel it belongs to, -1 none */
    rt_blas *blas;              /* when the stage has a matmul outside kernels */
    /* --comm nccl (rt_cuda_host.nccl): collectives, sends and receives on
     * the device, on a stream of their own */
    rt_nccl *nccl;
    rt_cu_stream comm;          /* non-blocking */
    rt_cu_event *ready, *done;  /* per instruction; made for the communication ones */
    int32_t *wait_first;        /* per step 0..ninstr, + 1: where its waits start in */
    int32_t *wait;              /* the communication instructions the compute
                                 * stream waits for before that step */
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- what runs outside kernels ---- */

/* Per instruction of stage st: the kernel whose group holds it, -1 none
 * (malloc'd; NULL when out of memory). */
static int32_t *kernels_of(const rt_plan *p, int st)
{
    const rt_program *g = &p->stage[st];
    int32_t *at = malloc(((size_t)g->ninstr + 1) * sizeof *at);
    if (!at)
        return NULL;
    for (int i = 0; i < g->ninstr; i++)
        at[i] = -1;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernel[k].stage == st)
            for (int j = 0; j < p->kernel[k].ninstr; j++)
                at[p->kernel[k].instr[j]] = k;
    return at;
}

/* An instruction on i32 only (index arithmetic: the fusion pass leaves
 * it out of kernels): run by the CPU backend on the host copies. */
static bool on_host(const rt_instr *in)
{
    if (in->out_t.dtype != RT_I32)
        return false;
    for (int i = 0; i < in->nin; i++)
        if (in->in_t[i].dtype != RT_I32)
            return false;
    return true;
}

/* Whether the backend runs in outside a kernel; why not into why. */
static bool runs_alone(const rt_instr *in, char *why, size_t n)
{
    if (rt_ops[in->op].cls != RT_K_COMPUTE)
        return true; /* sources and collectives: through the host */
    switch (in->op) {
    case RT_OP_COPY:
    case RT_OP_SLICE:
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
        return true;
    case RT_OP_MATMUL:
        return rt_blas_supports(in, why, n);
    default:
        if (on_host(in)) /* i32 arithmetic: the CPU backend on the host copies */
            return true;
        snprintf(why, n, "no kernel of the plan runs it, and the cuda backend has none of its "
                 "own for it");
        return false;
    }
}

/* Whether the backend runs in as part of kernel k: a matmul kernel's
 * matmul is cuBLASLt's (rt_blas_supports); why not into why. */
static bool runs_in_kernel(const rt_kernel *k, const rt_instr *in, char *why, size_t n)
{
    return k->strategy != RT_KS_MATMUL || in->op != RT_OP_MATMUL || rt_blas_supports(in, why, n);
}

int rt_cuda_check_plan(const rt_plan *p, char *err, size_t errlen)
{
    char why[256];
    for (int st = 0; st < p->nstages; st++) {
        int32_t *at = kernels_of(p, st);
        if (!at)
            return fail(err, errlen, "out of memory");
        const rt_program *g = &p->stage[st];
        int bad = -1;
        for (int i = 0; i < g->ninstr && bad < 0; i++)
            if (at[i] < 0 ? !runs_alone(&g->instr[i], why, sizeof why)
                          : !runs_in_kernel(&p->kernel[at[i]], &g->instr[i], why, sizeof why))
                bad = i;
        free(at);
        bool none = !p->nkernels && bad >= 0 && g->instr[bad].op != RT_OP_MATMUL;
        if (bad >= 0)
            return fail(err, errlen, "stage %d, instruction %d (%s): %s%s", st, bad,
                        rt_ops[g->instr[bad].op].name, why,
                        none ? " (the plan has no kernels: was it compiled with --arch none?)"
                             : "");
    }
    return 0;
}

int rt_cuda_check(const rt_plan *p, char *err, size_t errlen)
{
    if (rt_cu_probe(err, errlen) != RT_CU_OK)
        return 1;
    return rt_cuda_check_plan(p, err, errlen) == 0 ? 0 : 2;
}

/* ---- setup ---- */

#define CU(call) RT_CU_CHECK(r->cu, call, err, errlen)

/* The image of module m for this device: the cubin of the device's
 * architecture or the nearest older one of its major version (binary
 * compatible), else the PTX when the device is as new or newer. */
static const rt_image *pick_image(const rt_module *m, int cc)
{
    const rt_image *best = NULL;
    int best_arch = 0;
    for (int i = 0; i < m->ncubin; i++) {
        int a = rt_arch_number(m->cubin[i].arch);
        if (a / 10 == cc / 10 && a <= cc && a > best_arch) {
            best = &m->cubin[i];
            best_arch = a;
        }
    }
    if (!best && rt_arch_number(m->ptx.arch) <= cc)
        best = &m->ptx;
    return best;
}

static int load_module(rt_cuda_rank *r, int32_t mi, char *err, size_t errlen)
{
    const rt_module *m = &r->p->module[mi];
    const rt_image *im = pick_image(m, r->cc);
    if (!im) {
        char archs[256] = "";
        for (int i = 0; i < m->ncubin; i++)
            snprintf(archs + strlen(archs), sizeof archs - strlen(archs), "%s%s", i ? ", " : "",
                     m->cubin[i].arch);
        return fail(err, errlen, "kernel module %s holds cubins for %s and PTX for %s, none of "
                    "which runs on this GPU (sm_%d): compile the model with --arch sm_%d", m->entry,
                    archs, m->ptx.arch, r->cc, r->cc);
    }
    char log[JIT_LOG] = "";
    unsigned int opt[2] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    rt_cu_result res = r->cu->ModuleLoadDataEx(&r->mod[mi], im->data, 2, opt, val);
    if (res != RT_CU_SUCCESS) {
        char what[256];
        return fail(err, errlen, "loading kernel module %s (%s): %s%s%s", m->entry, im->arch,
                    rt_cu_describe(r->cu, res, what, sizeof what), *log ? ": " : "", log);
    }
    return CU(ModuleGetFunction(&r->fn[mi], r->mod[mi], m->entry)) ? 0 : -1;
}

/* Every module the stage's kernels run, and their dynamic shared memory
 * where it is above the default. */
static int load_modules(rt_cuda_rank *r, char *err, size_t errlen)
{
    const rt_plan *p = r->p;
    r->mod = calloc((size_t)p->nmodules + 1, sizeof *r->mod);
    r->fn = calloc((size_t)p->nmodules + 1, sizeof *r->fn);
    if (!r->mod || !r->fn)
        return fail(err, errlen, "out of memory");
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->stage != r->stage || kr->strategy == RT_KS_MATMUL) /* cuBLASLt's */
            continue;
        if (!r->mod[kr->module] && load_module(r, kr->module, err, errlen) != 0)
            return -1;
        if (kr->shared_bytes > DEFAULT_SHARED &&
            !CU(FuncSetAttribute(r->fn[kr->module], RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED,
                                 kr->shared_bytes)))
            return -1;
    }
    return 0;
}

/* The device (rank mod the device count; with nccl, the rank's GPU of its
 * node), its primary context, made current, and its compute capability. */
static int open_device(rt_cuda_rank *r, int64_t rank, char *err, size_t errlen)
{
    int n = 0, major = 0, minor = 0;
    if (!CU(DeviceGetCount(&n)))
        return -1;
    if (n < 1)
        return fail(err, errlen, "no CUDA device");
    int ordinal = r->nccl ? rt_nccl_device(r->nccl) : (int)(rank % n);
    if (ordinal >= n)
        return fail(err, errlen, "the nccl communicator gives this rank GPU %d of %d", ordinal,
                    n);
    if (!CU(DeviceGet(&r->dev, ordinal)) || !CU(DevicePrimaryCtxRetain(&r->ctx, r->dev)))
        return -1;
    if (!CU(CtxSetCurrent(r->ctx)) ||
        !CU(DeviceGetAttribute(&major, RT_CU_ATTR_CC_MAJOR, r->dev)) ||
        !CU(DeviceGetAttribute(&minor, RT_CU_ATTR_CC_MINOR, r->dev)))
        return -1;
    r->cc = major * 10 + minor;
    return 0;
}

/* With nccl: the communication stream, an event pair per communication
 * instruction, and per step the instructions whose done event the compute
 * stream waits for there (rt_nccl_wait_points; step ninstr: the end). */
static int setup_nccl(rt_cuda_rank *r, char *err, size_t errlen)
{
    const rt_program *g = r->g;
    int n = g->ninstr;
    int32_t *launch_at = malloc(((size_t)n + 1) * sizeof *launch_at);
    int32_t *wait_at = malloc(((size_t)n + 1) * sizeof *wait_at);
    r->ready = calloc((size_t)n + 1, sizeof *r->ready);
    r->done = calloc((size_t)n + 1, sizeof *r->done);
    r->wait_first = calloc((size_t)n + 2, sizeof *r->wait_first);
    r->wait = malloc(((size_t)n + 1) * sizeof *r->wait);
    int rc = 0;
    if (!launch_at || !wait_at || !r->ready || !r->done || !r->wait_first || !r->wait)
        rc = fail(err, errlen, "out of memory");
    if (rc == 0) {
        rt_nccl_launch_steps(r->p, r->stage, launch_at);
        rt_nccl_wait_points(g, launch_at, wait_at);
        for (int i = 0; i < n; i++) /* counts, then starts (a counting sort by step) */
            if (wait_at[i] >= 0)
                r->wait_first[wait_at[i] + 1]++;
        for (int j = 0; j <= n; j++)
            r->wait_first[j + 1] += r->wait_first[j];
        int32_t *at = launch_at; /* reused: the next free slot per step */
        memcpy(at, r->wait_first, ((size_t)n + 1) * sizeof *at);
        for (int i = 0; i < n; i++)
            if (wait_at[i] >= 0)
                r->wait[at[wait_at[i]]++] = i;
    }
    if (rc == 0 && !CU(StreamCreate(&r->comm, RT_CU_STREAM_NON_BLOCKING)))
        rc = -1;
    for (int i = 0; rc == 0 && i < n; i++)
        if (rt_ops[g->instr[i].op].cls == RT_K_COMM &&
            (!CU(EventCreate(&r->ready[i], RT_CU_EVENT_DISABLE_TIMING)) ||
             !CU(EventCreate(&r->done[i], RT_CU_EVENT_DISABLE_TIMING))))
            rc = -1;
    free(launch_at);
    free(wait_at);
    return rc;
}

static int setup(rt_cuda_rank *r, int64_t rank, char *err, size_t errlen)
{
    rt_cu_status why;
    r->cu = rt_cu_load(&why, err, errlen);
    if (!r->cu || open_device(r, rank, err, errlen) != 0)
        return -1;
    size_t bytes = (size_t)(r->g->arena_bytes > 0 ? r->g->arena_bytes : 1);
    if (!CU(StreamCreate(&r->stream, 0)) || !CU(MemAlloc(&r->arena, bytes)) ||
        !CU(MemsetD8(r->arena, 0, bytes)))
        return -1;
    r->kernel_at = kernels_of(r->p, r->stage);
    if (!r->kernel_at)
        return fail(err, errlen, "out of memory");
    bool matmul = false;
    for (int i = 0; i < r->g->ninstr; i++)
        matmul |= r->g->instr[i].op == RT_OP_MATMUL; /* alone or in a matmul kernel */
    if (matmul && !(r->blas = rt_blas_new(err, errlen)))
        return -1;
    if (r->nccl && setup_nccl(r, err, errlen) != 0)
        return -1;
    return load_modules(r, err, errlen);
}

void rt_cuda_rank_free(rt_cuda_rank *r)
{
    if (!r)
        return;
    const rt_cu_api *cu = r->cu;
    if (cu && r->ctx) {
        cu->CtxSetCurrent(r->ctx);
        rt_blas_free(r->blas);
        for (int i = 0; r->mod && i < r->p->nmodules; i++)
            if (r->mod[i])
                cu->ModuleUnload(r->mod[i]);
        if (r->arena)
            cu->MemFree(r->arena);
        if (r->stream)
            cu->StreamDestroy(r->stream);
        if (r->comm)
            cu->StreamDestroy(r->comm);
        for (int i = 0; r->ready && r->done && i < r->g->ninstr; i++) {
            if (r->ready[i])
                cu->EventDestroy(r->ready[i]);
            if (r->done[i])
                cu->EventDestroy(r->done[i]);
        }
        cu->DevicePrimaryCtxRelease(r->dev);
    }
    free(r->mod);
    free(r->fn);
    free(r->kernel_at);
    free(r->ready);
    free(r->done);
    free(r->wait_first);
    free(r->wait);
    free(r);
}

/* ---- instructions ---- */

static rt_cu_ptr dev(const rt_cuda_rank *r, int32_t b)
{
    return r->arena + (rt_cu_ptr)r->g->buf_offset[b];
}

static int launch(rt_cuda_rank *r, const rt_kernel *k, char *err, size_t errlen)
{
    rt_cu_ptr ptr[RT_MAX_KPARAMS];
    void *arg[RT_MAX_KPARAMS];
    for (int j = 0; j < k->nin + k->nout; j++) {
        ptr[j] = dev(r, k->param[j]);
        arg[j] = &ptr[j];
    }
    char msg[512];
    rt_cu_result res = r->cu->LaunchKernel(r->fn[k->module], (unsigned int)k->grid, 1, 1,
                                           (unsigned int)k->block, 1, 1,
                                           (unsigned int)k->shared_bytes, r->stream, arg, NULL);
    if (res != RT_CU_SUCCESS)
        return fail(err, errlen, "launching kernel %s (grid %lld, block %d, %d shared bytes): %s",
                    k->name, (long long)k->grid, k->block, k->shared_bytes,
                    rt_cu_describe(r->cu, res, msg, sizeof msg));
    return 0;
}

/* Rows of width bytes from src (pitch spitch, starting at byte sx of each
 * row) to dst (pitch dpitch, at byte dx), device to device. */
static int copy_rows(rt_cuda_rank *r, rt_cu_ptr dst, size_t dx, size_t dpitch, rt_cu_ptr src,
                     size_t sx, size_t spitch, size_t width, size_t rows, char *err,
                     size_t errlen)
{
    rt_cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = RT_CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcXInBytes = sx;
    c.srcPitch = spitch;
    c.dstMemoryType = RT_CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dst;
    c.dstXInBytes = dx;
    c.dstPitch = dpitch;
    c.WidthInBytes = width;
    c.Height = rows;
    return CU(Memcpy2DAsync(&c, r->stream)) ? 0 : -1;
}

/* slice: this rank's block of dim over the instruction's axes (as
 * runtime/cpu.c's k_slice). */
static int run_slice(rt_cuda_rank *r, const rt_instr *in, char *err, size_t errlen)
{
    const rt_type *t = &in->in_t[0];
    int64_t blk = 0, outer = 1, inner = rt_dtype_size(t->dtype);
    for (int i = 0; i < in->naxes; i++)
        blk = blk * r->p->axis_size[in->axes[i]] + r->coord[in->axes[i]];
    for (int d = 0; d < in->dim; d++)
        outer *= t->dim[d];
    for (int d = (int)in->dim + 1; d < t->rank; d++)
        inner *= t->dim[d];
    int64_t dn = t->dim[in->dim], n = in->out_t.dim[in->dim];
    size_t run = (size_t)(n * inner);
    return copy_rows(r, dev(r, in->out), 0, run, dev(r, in->in[0]), (size_t)(blk * run),
                     (size_t)(dn * inner), run, (size_t)outer, err, errlen);
}

/* insert and extract: the value as [R, n/R] in the bucket's columns
 * offset.. (as runtime/cpu.c's k_bucket). */
static int run_bucket(rt_cuda_rank *r, const rt_instr *in, char *err, size_t errlen)
{
    const rt_type *b = &in->in_t[0];
    size_t es = (size_t)rt_dtype_size(b->dtype);
    int64_t rows = b->dim[0], cols = b->dim[1];
    size_t pitch = (size_t)cols * es, at = (size_t)in->offset * es;
    if (in->op == RT_OP_EXTRACT) {
        size_t w = (size_t)(rt_type_numel(&in->out_t) / rows) * es;
        if (rows == 1 && dev(r, in->out) == dev(r, in->in[0]) + at)
            return 0; /* a view of its columns (rt_bucket_view) */
        return copy_rows(r, dev(r, in->out), 0, w, dev(r, in->in[0]), at, pitch, w,
                         (size_t)rows, err, errlen);
    }
    size_t w = (size_t)(rt_type_numel(&in->in_t[1]) / rows) * es;
    if (dev(r, in->out) != dev(r, in->in[0]) &&
        !CU(MemcpyDtoDAsync(dev(r, in->out), dev(r, in->in[0]), (size_t)rt_type_bytes(b),
                            r->stream)))
        return -1;
    if (rows == 1 && dev(r, in->in[1]) == dev(r, in->out) + at)
        return 0; /* computed in its columns (rt_bucket_view) */
    return copy_rows(r, dev(r, in->out), at, pitch, dev(r, in->in[1]), 0, w, w, (size_t)rows,
                     err, errlen);
}

static int run_on_host(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in);

static int run_compute(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    char *err = h->err;
    size_t errlen = h->errlen;
    switch (in->op) {
    case RT_OP_COPY:
        if (dev(r, in->out) == dev(r, in->in[0]))
            return 0;
        return CU(MemcpyDtoDAsync(dev(r, in->out), dev(r, in->in[0]),
                                  (size_t)rt_type_bytes(&in->out_t), r->stream))
                   ? 0
                   : -1;
    case RT_OP_SLICE:
        return run_slice(r, in, err, errlen);
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
        return run_bucket(r, in, err, errlen);
    case RT_OP_MATMUL:
        return rt_blas_matmul(r->blas, in, NULL, dev(r, in->in[0]), dev(r, in->in[1]),
                              dev(r, in->out), r->stream, err, errlen)
                   ? 0
                   : -1;
    default: /* i32 arithmetic; rt_cuda_check refused the rest */
        if (on_host(in))
            return run_on_host(r, h, in);
        return fail(err, errlen, "the cuda backend cannot run %s outside a kernel",
                    rt_ops[in->op].name);
    }
}

static int to_host(rt_cuda_rank *r, void *host, int32_t b, int64_t bytes, char *err,
                   size_t errlen)
{
    return CU(MemcpyDtoH(host, dev(r, b), (size_t)bytes)) ? 0 : -1;
}

static int to_device(rt_cuda_rank *r, int32_t b, const void *host, int64_t bytes, char *err,
                     size_t errlen)
{
    return CU(MemcpyHtoD(dev(r, b), host, (size_t)bytes)) ? 0 : -1;
}

/* Waits for what the rank queued, before the host touches its buffers. */
static int drain(rt_cuda_rank *r, char *err, size_t errlen)
{
    return CU(StreamSynchronize(r->stream)) ? 0 : -1;
}

/* A source: read into its host buffer by the session, then copied over.
 * Params and states stay on the device between runs. */
static int run_source(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if ((in->op == RT_OP_PARAM || in->op == RT_OP_STATE) && !h->load_params)
        return 0;
    if (drain(r, h->err, h->errlen) != 0 || h->source(h->rank, in, h->buf[in->out]) != 0)
        return -1;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err, h->errlen);
}

/* With nccl, instruction i (a collective, send or recv) on the comm
 * stream, after everything the compute stream queued before it. */
static int run_comm_nccl(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    char *err = h->err;
    size_t errlen = h->errlen;
    const rt_instr *in = &r->g->instr[i];
    if (!CU(EventRecord(r->ready[i], r->stream)) || !CU(StreamWaitEvent(r->comm, r->ready[i], 0)))
        return -1;
    rt_cu_ptr src = in->nin ? dev(r, in->in[0]) : 0, dst = in->out >= 0 ? dev(r, in->out) : 0;
    return rt_nccl_run(r->nccl, in, src, dst, r->comm, r->done[i], err, errlen);
}

/* Before step j (ninstr: the end of the run), the compute stream waits for
 * the communication whose bytes it touches there (rt_nccl_wait_points). */
static int wait_comm(rt_cuda_rank *r, int j, char *err, size_t errlen)
{
    for (int k = r->nccl ? r->wait_first[j] : 0; r->nccl && k < r->wait_first[j + 1]; k++)
        if (!CU(StreamWaitEvent(r->stream, r->done[r->wait[k]], 0)))
            return -1;
    return 0;
}

/* A collective, send or recv: the operand to its host buffer, the
 * session's communicator there, the result back. */
static int run_comm(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if (drain(r, h->err, h->errlen) != 0)
        return -1;
    if (in->nin && to_host(r, h->buf[in->in[0]], in->in[0], rt_type_bytes(&in->in_t[0]), h->err,
                           h->errlen) != 0)
        return -1;
    if (h->comm(h->rank, in, h->buf) != 0)
        return -1;
    if (in->out < 0)
        return 0;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err, h->errlen);
}

/* An i32 instruction on the host copies of its operands, by the CPU
 * backend; its result copied back. */
static int run_on_host(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if (drain(r, h->err, h->errlen) != 0)
        return -1;
    for (int i = 0; i < in->nin; i++)
        if (to_host(r, h->buf[in->in[i]], in->in[i], rt_type_bytes(&in->in_t[i]), h->err,
                    h->errlen) != 0)
            return -1;
    rt_cpu_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    memcpy(ctx.coord, r->coord, sizeof ctx.coord);
    ctx.axis_size = r->p->axis_size;
    ctx.naxes = r->p->naxes;
    if (rt_cpu_run(&ctx, in, h->buf, h->err, h->errlen) != 0)
        return -1;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err, h->errlen);
}

/* A matmul kernel: one cuBLASLt call, its matmul with the epilogue
 * (parameters A, B, the bias and the residual where there are, the
 * result; runtime/plan.h). */
static int run_matmul_kernel(rt_cuda_rank *r, const rt_kernel *k, char *err, size_t errlen)
{
    rt_blas_epilogue epi = {.bits = k->epilogue};
    int j = 2;
    if (k->epilogue & RT_EPI_BIAS)
        epi.bias = dev(r, k->param[j++]);
    if (k->epilogue & RT_EPI_RESIDUAL)
        epi.residual = dev(r, k->param[j++]);
    const rt_instr *mm = &r->g->instr[k->instr[0]];
    return rt_blas_matmul(r->blas, mm, &epi, dev(r, k->param[0]), dev(r, k->param[1]),
                          dev(r, k->param[j]), r->stream, err, errlen)
               ? 0
               : -1;
}

/* Instruction i: its kernel at the anchor (nothing at the group's other
 * instructions), else the instruction itself. */
static int step(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    const rt_instr *in = &r->g->instr[i];
    int32_t k = r->kernel_at[i];
    if (wait_comm(r, i, h->err, h->errlen) != 0)
        return -1;
    if (k >= 0) {
        const rt_kernel *kr = &r->p->kernel[k];
        if (kr->instr[kr->ninstr - 1] != i)
            return 0;
        return kr->strategy == RT_KS_MATMUL ? run_matmul_kernel(r, kr, h->err, h->errlen)
                                            : launch(r, kr, h->err, h->errlen);
    }
    switch (rt_ops[in->op].cls) {
    case RT_K_SOURCE:
        return run_source(r, h, in);
    case RT_K_COMM:
        return r->nccl ? run_comm_nccl(r, h, i) : run_comm(r, h, in);
    default:
        return run_compute(r, h, in);
    }
}

/* The local shard's bytes of an I/O entry. */
static int64_t local_bytes(const rt_plan *p, const rt_io *io)
{
    rt_type t = io->type;
    for (int d = 0; d < t.rank; d++)
        for (int k = 0; k < io->sh.naxes[d]; k++)
            t.dim[d] /= p->axis_size[io->sh.axes[d][k]];
    return rt_type_bytes(&t);
}

/* After the run: the stage's outputs to the host, then each param's and
 * state's new value (to the host, where the session applies it; and into
 * its buffer on the device, for the next run). */
static int finish(rt_cuda_rank *r, const rt_cuda_host *h)
{
    char *err = h->err;
    size_t errlen = h->errlen;
    const rt_plan *p = r->p;
    if (wait_comm(r, r->g->ninstr, err, errlen) != 0 || drain(r, err, errlen) != 0)
        return -1;
    if (r->nccl) /* every op of the run is done: the watchdog forgets them */
        rt_nccl_settle(r->nccl);
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage == r->stage && io->kind == RT_IO_OUTPUT &&
            to_host(r, h->buf[io->buffer], io->buffer, local_bytes(p, io), err, errlen) != 0)
            return -1;
    }
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage != r->stage || io->update < 0 ||
            (io->kind != RT_IO_PARAM && io->kind != RT_IO_STATE))
            continue;
        int64_t n = local_bytes(p, io);
        if (to_host(r, h->buf[io->update], io->update, n, err, errlen) != 0)
            return -1;
        if (io->update != io->buffer &&
            !CU(MemcpyDtoD(dev(r, io->buffer), dev(r, io->update), (size_t)n)))
            return -1;
    }
    return 0;
}

int rt_cuda_run(rt_cuda_rank **rp, const rt_plan *p, int stage, int64_t rank,
                const rt_cuda_host *h)
{
    char *err = h->err;
    size_t errlen = h->errlen;
    rt_cuda_rank *r = *rp;
    if (!r) {
        r = *rp = calloc(1, sizeof *r);
        if (!r)
            return fail(err, errlen, "out of memory");
        r->p = p;
        r->stage = stage;
        r->g = &p->stage[stage];
        r->nccl = h->nccl;
        rt_plan_coords(p, rank, r->coord);
        if (setup(r, rank, err, errlen) != 0)
            return -1;
    } else if (!CU(CtxSetCurrent(r->ctx))) { /* each run's threads are new */
        return -1;
    }
    for (int i = 0; i < r->g->ninstr; i++)
        if (step(r, h, i) != 0) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", err);
            const rt_instr *in = &r->g->instr[i];
            return fail(err, errlen, "instruction %d (%s): %s", i, rt_ops[in->op].name, msg);
        }
    return finish(r, h);
}
