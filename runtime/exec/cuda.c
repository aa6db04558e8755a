/* cuda.c: the CUDA backend (cuda.h): a rank's device state, made at its
 * first run, and its execution loop: each kernel at its anchor, the other
 * instructions on the device or, for sources and collectives, through
 * the session's host paths. Everything a rank queues goes to its one
 * stream. A run's inputs are read before it starts (prepare_inputs): those
 * the host reads land in the rank's page-locked block and are copied in
 * asynchronously at their instructions, so an input neither drains the
 * stream nor splits a graph; the other copies to and from the host are
 * synchronous, after the stream has drained. With --graph the device spans of a run run as CUDA graphs
 * from the second run on, with --trace an event pair times each
 * instruction, and after each run the kernels' error words say whether an
 * id or label was outside its range (cuda_step.h). */
#include "runtime/exec/cuda.h"
#include "support/support.h"

#include "runtime/comm/comm_cuda_local.h"
#include "runtime/comm/comm_nccl.h"
#include "runtime/cpu/cpu.h"
#include "runtime/cuda/cuda_blas.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_src.h"
#include "runtime/cuda/cuda_step.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/exec/init_gen.h"
#include "runtime/exec/trace.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_SHARED = 48 * 1024, JIT_LOG = 4096, PIN_ALIGN = 256 };

/* Where an input's block comes from in a run (prepare_inputs). */
typedef enum { IN_NONE, IN_SEEDED, IN_DEVICE, IN_HOST } in_mode;
typedef struct in_source {
    in_mode mode;
    sh_init_args g;   /* IN_SEEDED: made from the seed on the device */
    rt_view at;       /* IN_DEVICE: copied on the device from the caller's CUDA memory */
} in_source;          /* IN_HOST: copied in from the rank's page-locked block */

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
    rt_cu_func *fn;             /* per kernel of the plan: its entry, loaded */
    rt_cu_func init_fn;         /* the init module's entry, loaded at its first use */
    int32_t *kernel_at;         /* per instruction: the kernel it belongs to, -1 none */
    rt_blas *blas;              /* when the stage has a matmul outside kernels */
    rt_cu_ptr blas_ws;          /* its workspace ($SHARDC_BLAS_WORKSPACE), 0 none */
    rt_cu_module dgelu_mod;     /* gelu_grad in place, where cuBLASLt had no DGELU
                                 * epilogue (run_dgelu): compiled at its first use */
    rt_cu_func dgelu_fn[2];     /* its entries: bf16, f16 */
    /* --comm nccl (rt_cuda_host.nccl): collectives, sends and receives on
     * the device, on a stream of their own */
    rt_nccl *nccl;
    rt_cu_stream comm;          /* non-blocking */
    rt_cu_event *ready, *done;  /* per instruction; made for the communication ones */
    rt_cu_event *watched;       /* the same: recorded as a graph's node (--graph),
                                 * for the watchdog at each launch */
    int32_t last_comm;          /* the last communication instruction a capture
                                 * queued, -1 none: the span's end waits for it */
    int32_t cap_first;          /* the first instruction of the span captured */
    int32_t *wait_first;        /* per step 0..ninstr, + 1: where its waits start in */
    int32_t *wait;              /* the communication instructions the compute
                                 * stream waits for before that step */
    rt_cuda_local_rank *local;  /* --comm local device to device; NULL: through the host */
    /* the kernels' error words (cuda_step.h): after each launch of a kernel
     * whose module has one, the word is copied to the kernel's slot and
     * cleared, so the slots tell which kernel met a bad id */
    rt_cu_ptr *errword;         /* per module: its sh_error, 0 none */
    int32_t *slot;              /* per kernel: its slot, -1 none */
    int32_t nslots;
    rt_cu_ptr slots;            /* nslots words */
    uint64_t *words;            /* their host copy, made by finish */
    /* --trace: an event pair around each instruction run, times read after
     * the run against its start event */
    rt_cu_event start, *ev_begin, *ev_end; /* per instruction, made at the first traced run */
    bool *timed;                /* per instruction: between its events this run */
    double start_s;             /* when the device passed `start`, from the trace origin */
    bool capturing;             /* in a stream capture: events become record nodes */
    /* --graph: the device spans of a run, captured at the second */
    int64_t runs;               /* finished */
    int32_t nspans;             /* -1: not computed yet */
    rt_graph_span *span;
    rt_cu_graph_exec *exec;     /* per span, NULL until captured */
    /* inputs: each one's source this run, read before the run starts
     * (prepare_inputs), and the source its span's graph was captured with
     * (mode IN_NONE: not captured); those the host reads go to a place of
     * their own in the page-locked block, made at the first such run, so
     * that a graph's copy of it reads the same address every run */
    in_source *src, *captured;  /* per instruction; IN_NONE but for inputs */
    int64_t *pin_at;            /* per instruction: its place in pin, -1 none */
    int64_t pin_bytes;
    unsigned char *pin;         /* pin_bytes, page-locked; NULL until needed */
    bool queued;                /* a run's work may still be queued (it failed) */
};


/* ---- what runs outside kernels ---- */

/* Per instruction of stage st: the kernel whose group holds it, -1 none
 * (malloc'd; NULL when out of memory). */
static int32_t *kernels_of(const rt_plan *p, int st)
{
    return rt_cuda_kernel_map(p, st);
}

/* An instruction on i32 and bool only (index arithmetic, moves of masks:
 * the fusion pass leaves it out of kernels): run by the CPU backend on the host copies. */
static bool on_host(const rt_instr *in)
{
    return rt_cuda_on_host(in);
}

/* Whether the backend runs in outside a kernel; why not into why. */
static bool runs_alone(const rt_instr *in, su_status *why)
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
        return rt_blas_supports(in, why);
    default:
        if (on_host(in)) /* i32 arithmetic: the CPU backend on the host copies */
            return true;
        su_fail(why, SU_INPUT, "no kernel of the plan runs it, and the cuda backend has none of "
                "its own for it");
        return false;
    }
}

/* Whether the backend runs in as part of kernel k: a matmul kernel's
 * matmul is cuBLASLt's (rt_blas_supports); why not into why. */
static bool runs_in_kernel(const rt_kernel *k, const rt_instr *in, su_status *why)
{
    return k->strategy != RT_KS_MATMUL || in->op != RT_OP_MATMUL || rt_blas_supports(in, why);
}

int rt_cuda_check_plan(const rt_plan *p, su_status *err)
{
    su_status why;
    for (int st = 0; st < p->nstages; st++) {
        int32_t *at = kernels_of(p, st);
        if (!at)
            return su_fail(err, SU_NOMEM, "out of memory");
        const rt_program *g = &p->stage[st];
        int bad = -1;
        for (int i = 0; i < g->ninstr && bad < 0; i++)
            if (at[i] < 0 ? !runs_alone(&g->instr[i], &why)
                          : !runs_in_kernel(&p->kernel[at[i]], &g->instr[i], &why))
                bad = i;
        free(at);
        bool none = !p->nkernels && bad >= 0 && g->instr[bad].op != RT_OP_MATMUL;
        char where[256];
        if (bad >= 0)
            return su_fail(err, why.kind, "%sstage %d, instruction %d (%s): %s%s",
                           rt_instr_where(p, &g->instr[bad], where, sizeof where), st, bad,
                           rt_ops[g->instr[bad].op].name, why.msg,
                           none ? " (the plan has no kernels: was it compiled with --arch "
                                  "none?)"
                                : "");
    }
    return 0;
}

int rt_cuda_check(const rt_plan *p, su_status *err)
{
    if (rt_cu_probe(err) != RT_CU_OK)
        return 1;
    return rt_cuda_check_plan(p, err) == 0 ? 0 : 2;
}

/* ---- setup ---- */

#define CU(call) RT_CU_CHECK(r->cu, call, err)

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

static int load_module(rt_cuda_rank *r, int32_t mi, su_status *err)
{
    const rt_module *m = &r->p->module[mi];
    const rt_image *im = pick_image(m, r->cc);
    if (!im) {
        char archs[256] = "";
        for (int i = 0; i < m->ncubin; i++)
            snprintf(archs + strlen(archs), sizeof archs - strlen(archs), "%s%s", i ? ", " : "",
                     m->cubin[i].arch);
        return su_fail(err, SU_INPUT, "kernel module %s holds cubins for %s and PTX for %s, none of "
                    "which runs on this GPU (sm_%d): compile the model with --arch sm_%d", m->entry[0],
                    archs, m->ptx.arch, r->cc, r->cc);
    }
    char log[JIT_LOG] = "";
    unsigned int opt[2] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    rt_cu_result res = r->cu->ModuleLoadDataEx(&r->mod[mi], im->data, 2, opt, val);
    if (res != RT_CU_SUCCESS) {
        char what[256];
        return su_fail(err, SU_GPU, "loading kernel module %s (%s): %s%s%s", m->entry[0],
                    im->arch, rt_cu_describe(r->cu, res, what, sizeof what), *log ? ": " : "",
                    log);
    }
    return 0;
}

/* Every module the stage's kernels run, and their dynamic shared memory
 * where it is above the default. */
static int load_modules(rt_cuda_rank *r, su_status *err)
{
    const rt_plan *p = r->p;
    r->mod = calloc((size_t)p->nmodules + 1, sizeof *r->mod);
    r->fn = calloc((size_t)p->nkernels + 1, sizeof *r->fn);
    if (!r->mod || !r->fn)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->stage != r->stage || kr->strategy == RT_KS_MATMUL) /* cuBLASLt's */
            continue;
        if (!r->mod[kr->module] && load_module(r, kr->module, err) != 0)
            return -1;
        const char *entry = p->module[kr->module].entry[kr->entry];
        if (!CU(ModuleGetFunction(&r->fn[k], r->mod[kr->module], entry)))
            return -1;
        if (kr->shared_bytes > DEFAULT_SHARED &&
            !CU(FuncSetAttribute(r->fn[k], RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, kr->shared_bytes)))
            return -1;
    }
    return 0;
}

/* The error word of every loaded module that has one (cuModuleGetGlobal;
 * CUDA_ERROR_NOT_FOUND: none), and a slot per kernel of the stage whose
 * module has one, zeroed. */
static int setup_error_words(rt_cuda_rank *r, su_status *err)
{
    const rt_plan *p = r->p;
    r->errword = calloc((size_t)p->nmodules + 1, sizeof *r->errword);
    r->slot = malloc(((size_t)p->nkernels + 1) * sizeof *r->slot);
    if (!r->errword || !r->slot)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int m = 0; m < p->nmodules; m++) {
        size_t bytes = 0;
        if (!r->mod[m])
            continue;
        rt_cu_result res = r->cu->ModuleGetGlobal(&r->errword[m], &bytes, r->mod[m], "sh_error");
        if (res == RT_CU_ERROR_NOT_FOUND) {
            r->errword[m] = 0;
            continue;
        }
        if (!rt_cu_check(r->cu, res, "ModuleGetGlobal(sh_error)", __FILE__, __LINE__, err))
            return -1;
        if (bytes != sizeof(uint64_t))
            return su_fail(err, SU_INTERNAL, "kernel module %s: sh_error has %zu bytes, not 8",
                        p->module[m].entry[0], bytes);
    }
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        bool has = kr->stage == r->stage && kr->module >= 0 && r->errword[kr->module];
        r->slot[k] = has ? r->nslots++ : -1;
    }
    size_t bytes = (size_t)r->nslots * sizeof(uint64_t);
    if (r->nslots && !(r->words = malloc(bytes)))
        return su_fail(err, SU_NOMEM, "out of memory");
    if (r->nslots &&
        (!CU(MemAlloc(&r->slots, bytes)) || !CU(MemsetD8Async(r->slots, 0, bytes, r->stream))))
        return -1;
    return 0;
}

/* The device (rank mod the device count; with nccl, the rank's GPU of its
 * node), its primary context, made current, and its compute capability. */
static int open_device(rt_cuda_rank *r, int64_t rank, su_status *err)
{
    int n = 0, major = 0, minor = 0;
    if (!CU(DeviceGetCount(&n)))
        return -1;
    if (n < 1)
        return su_fail(err, SU_GPU, "no CUDA device");
    int ordinal = r->nccl ? rt_nccl_device(r->nccl) : (int)(rank % n);
    if (ordinal >= n)
        return su_fail(err, SU_GPU, "the nccl communicator gives this rank GPU %d of %d", ordinal,
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
static int setup_nccl(rt_cuda_rank *r, su_status *err)
{
    const rt_program *g = r->g;
    int n = g->ninstr;
    int32_t *launch_at = malloc(((size_t)n + 1) * sizeof *launch_at);
    int32_t *wait_at = malloc(((size_t)n + 1) * sizeof *wait_at);
    r->ready = calloc((size_t)n + 1, sizeof *r->ready);
    r->done = calloc((size_t)n + 1, sizeof *r->done);
    r->watched = calloc((size_t)n + 1, sizeof *r->watched);
    r->wait_first = calloc((size_t)n + 2, sizeof *r->wait_first);
    r->wait = malloc(((size_t)n + 1) * sizeof *r->wait);
    int rc = 0;
    if (!launch_at || !wait_at || !r->ready || !r->done || !r->watched || !r->wait_first ||
        !r->wait)
        rc = su_fail(err, SU_NOMEM, "out of memory");
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
             !CU(EventCreate(&r->done[i], RT_CU_EVENT_DISABLE_TIMING)) ||
             !CU(EventCreate(&r->watched[i], RT_CU_EVENT_DISABLE_TIMING))))
            rc = -1;
    free(launch_at);
    free(wait_at);
    return rc;
}

static int setup(rt_cuda_rank *r, int64_t rank, su_status *err)
{
    rt_cu_status why;
    r->cu = rt_cu_load(&why, err);
    if (!r->cu || open_device(r, rank, err) != 0)
        return -1;
    size_t bytes = (size_t)(r->g->arena_bytes > 0 ? r->g->arena_bytes : 1);
    /* non-blocking: the legacy stream (which other ranks' threads may use)
     * never waits for it, so a stream capture here meets no implicit
     * dependency; everything of the rank goes through it */
    if (!CU(StreamCreate(&r->stream, RT_CU_STREAM_NON_BLOCKING)))
        return -1;
    rt_cu_result res = r->cu->MemAlloc(&r->arena, bytes);
    if (res != RT_CU_SUCCESS) { /* most likely the plan is too big for this GPU */
        r->arena = 0;
        char what[256], need[32], room[96] = "", fr[32], tot[32];
        size_t avail = 0, total = 0;
        if (r->cu->MemGetInfo(&avail, &total) == RT_CU_SUCCESS)
            snprintf(room, sizeof room, " (%s free of %s)", su_size_text((int64_t)avail, fr),
                     su_size_text((int64_t)total, tot));
        return su_fail(err, SU_GPU, "the plan's arena of %s (shardc --report's peak per rank) "
                       "does not fit on GPU %d%s: cuMemAlloc: %s",
                       su_size_text((int64_t)bytes, need), r->dev, room,
                       rt_cu_describe(r->cu, res, what, sizeof what));
    }
    if (!CU(MemsetD8Async(r->arena, 0, bytes, r->stream)))
        return -1;
    r->kernel_at = kernels_of(r->p, r->stage);
    if (!r->kernel_at)
        return su_fail(err, SU_NOMEM, "out of memory");
    bool matmul = false;
    for (int i = 0; i < r->g->ninstr; i++)
        matmul |= r->g->instr[i].op == RT_OP_MATMUL; /* alone or in a matmul kernel */
    size_t ws = 0;
    if (matmul && (!rt_blas_workspace_bytes(getenv("SHARDC_BLAS_WORKSPACE"), &ws, err) ||
                   !(r->blas = rt_blas_new(err))))
        return -1;
    if (ws) {
        if (!CU(MemAlloc(&r->blas_ws, ws)))
            return -1;
        rt_blas_set_workspace(r->blas, r->blas_ws, ws);
    }
    if (r->nccl && setup_nccl(r, err) != 0)
        return -1;
    r->nspans = -1;
    if (load_modules(r, err) != 0)
        return -1;
    return setup_error_words(r, err);
}

/* The device objects of the error slots, the trace and the graphs. */
static void free_extras(rt_cuda_rank *r)
{
    const rt_cu_api *cu = r->cu;
    if (r->slots)
        cu->MemFree(r->slots);
    for (int i = 0; r->ev_begin && r->ev_end && i < r->g->ninstr; i++) {
        if (r->ev_begin[i])
            cu->EventDestroy(r->ev_begin[i]);
        if (r->ev_end[i])
            cu->EventDestroy(r->ev_end[i]);
    }
    if (r->start)
        cu->EventDestroy(r->start);
    for (int s = 0; r->exec && s < r->nspans; s++)
        if (r->exec[s])
            cu->GraphExecDestroy(r->exec[s]);
    if (r->pin) /* after the graphs that copy from it */
        cu->MemFreeHost(r->pin);
}

void rt_cuda_rank_free(rt_cuda_rank *r)
{
    if (!r)
        return;
    const rt_cu_api *cu = r->cu;
    if (cu && r->ctx) {
        cu->CtxSetCurrent(r->ctx);
        rt_blas_free(r->blas);
        if (r->blas_ws)
            cu->MemFree(r->blas_ws);
        for (int i = 0; r->mod && i < r->p->nmodules; i++)
            if (r->mod[i])
                cu->ModuleUnload(r->mod[i]);
        if (r->dgelu_mod)
            cu->ModuleUnload(r->dgelu_mod);
        if (r->arena)
            cu->MemFree(r->arena);
        if (r->stream)
            cu->StreamDestroy(r->stream);
        if (r->comm)
            cu->StreamDestroy(r->comm);
        for (int i = 0; r->ready && r->done && r->watched && i < r->g->ninstr; i++) {
            if (r->ready[i])
                cu->EventDestroy(r->ready[i]);
            if (r->done[i])
                cu->EventDestroy(r->done[i]);
            if (r->watched[i])
                cu->EventDestroy(r->watched[i]);
        }
        free_extras(r);
        rt_cuda_local_rank_free(r->local);
        cu->DevicePrimaryCtxRelease(r->dev);
    }
    free(r->errword);
    free(r->slot);
    free(r->words);
    free(r->ev_begin);
    free(r->ev_end);
    free(r->timed);
    free(r->span);
    free(r->exec);
    free(r->src);
    free(r->captured);
    free(r->pin_at);
    free(r->mod);
    free(r->fn);
    free(r->kernel_at);
    free(r->ready);
    free(r->done);
    free(r->watched);
    free(r->wait_first);
    free(r->wait);
    free(r);
}

/* ---- instructions ---- */

static rt_cu_ptr dev(const rt_cuda_rank *r, int32_t b)
{
    return r->arena + (rt_cu_ptr)r->g->buf_offset[b];
}

/* After kernel k's launch, where its module has an error word: the word
 * to the kernel's slot, then cleared for the next launch of the module
 * (setup_error_words). */
static int keep_error_word(rt_cuda_rank *r, const rt_kernel *k, su_status *err)
{
    int32_t slot = r->slot[k - r->p->kernel];
    if (slot < 0)
        return 0;
    rt_cu_ptr word = r->errword[k->module];
    return CU(MemcpyDtoDAsync(r->slots + (rt_cu_ptr)slot * sizeof(uint64_t), word,
                              sizeof(uint64_t), r->stream)) &&
                   CU(MemsetD8Async(word, 0, sizeof(uint64_t), r->stream))
               ? 0
               : -1;
}

static int launch(rt_cuda_rank *r, const rt_kernel *k, su_status *err)
{
    rt_cu_ptr ptr[RT_MAX_KPARAMS];
    void *arg[RT_MAX_KPARAMS];
    for (int j = 0; j < k->nin + k->nout; j++) {
        ptr[j] = dev(r, k->param[j]);
        arg[j] = &ptr[j];
    }
    char msg[512];
    rt_cu_result res = r->cu->LaunchKernel(r->fn[k - r->p->kernel], (unsigned int)k->grid, 1, 1,
                                           (unsigned int)k->block, 1, 1,
                                           (unsigned int)k->shared_bytes, r->stream, arg, NULL);
    if (res != RT_CU_SUCCESS)
        return su_fail(err, SU_GPU, "launching kernel %s (grid %lld, block %d, %d shared bytes): %s",
                    k->name, (long long)k->grid, k->block, k->shared_bytes,
                    rt_cu_describe(r->cu, res, msg, sizeof msg));
    return keep_error_word(r, k, err);
}

/* Rows of width bytes from src (pitch spitch, starting at byte sx of each
 * row) to dst (pitch dpitch, at byte dx), device to device. */
static int copy_rows(rt_cuda_rank *r, rt_cu_ptr dst, size_t dx, size_t dpitch, rt_cu_ptr src,
                     size_t sx, size_t spitch, size_t width, size_t rows, su_status *err)
{
    return rt_cu_copy_rows(r->cu, r->stream, dst, dx, dpitch, src, sx, spitch, width, rows, err);
}

/* slice: this rank's block of dim over the instruction's axes (as
 * runtime/cpu/cpu.c's k_slice). */
static int run_slice(rt_cuda_rank *r, const rt_instr *in, su_status *err)
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
                     (size_t)(dn * inner), run, (size_t)outer, err);
}

/* Whether insert or extract in moves nothing: the value is its columns
 * of a one-row bucket (rt_bucket_view, on the arena's addresses), and an
 * insert's bucket is its result's buffer. */
static bool bucket_noop(const rt_cuda_rank *r, const rt_instr *in)
{
    int64_t out = (int64_t)dev(r, in->out);
    if (in->op == RT_OP_EXTRACT)
        return rt_bucket_view(in, 0, (int64_t)dev(r, in->in[0]), out);
    return in->op == RT_OP_INSERT && dev(r, in->out) == dev(r, in->in[0]) &&
           rt_bucket_view(in, 1, (int64_t)dev(r, in->in[1]), out);
}

/* insert and extract: the value as [R, n/R] in the bucket's columns
 * offset.. (as runtime/cpu/cpu.c's k_bucket). */
static int run_bucket(rt_cuda_rank *r, const rt_instr *in, su_status *err)
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
                         (size_t)rows, err);
    }
    size_t w = (size_t)(rt_type_numel(&in->in_t[1]) / rows) * es;
    if (dev(r, in->out) != dev(r, in->in[0]) &&
        !CU(MemcpyDtoDAsync(dev(r, in->out), dev(r, in->in[0]), (size_t)rt_type_bytes(b),
                            r->stream)))
        return -1;
    if (rows == 1 && dev(r, in->in[1]) == dev(r, in->out) + at)
        return 0; /* computed in its columns (rt_bucket_view) */
    return copy_rows(r, dev(r, in->out), at, pitch, dev(r, in->in[1]), 0, w, w, (size_t)rows,
                     err);
}

static int run_on_host(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in);

static int run_compute(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    su_status *err = h->err;
    switch (in->op) {
    case RT_OP_COPY:
        if (dev(r, in->out) == dev(r, in->in[0]))
            return 0;
        return CU(MemcpyDtoDAsync(dev(r, in->out), dev(r, in->in[0]),
                                  (size_t)rt_type_bytes(&in->out_t), r->stream))
                   ? 0
                   : -1;
    case RT_OP_SLICE:
        return run_slice(r, in, err);
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
        return run_bucket(r, in, err);
    case RT_OP_MATMUL:
        return rt_blas_matmul(r->blas, in, NULL, dev(r, in->in[0]), dev(r, in->in[1]),
                              dev(r, in->out), r->stream, err)
                   ? 0
                   : -1;
    default: /* i32 arithmetic; rt_cuda_check refused the rest */
        if (on_host(in))
            return run_on_host(r, h, in);
        return su_fail(err, SU_INTERNAL, "the cuda backend cannot run %s outside a kernel",
                    rt_ops[in->op].name);
    }
}

static int to_host(rt_cuda_rank *r, void *host, int32_t b, int64_t bytes, su_status *err)
{
    return CU(MemcpyDtoHAsync(host, dev(r, b), (size_t)bytes, r->stream)) &&
                   CU(StreamSynchronize(r->stream))
               ? 0
               : -1;
}

static int to_device(rt_cuda_rank *r, int32_t b, const void *host, int64_t bytes, su_status *err)
{
    return CU(MemcpyHtoDAsync(dev(r, b), host, (size_t)bytes, r->stream)) &&
                   CU(StreamSynchronize(r->stream))
               ? 0
               : -1;
}

/* Waits for what the rank queued, before the host touches its buffers. */
static int drain(rt_cuda_rank *r, su_status *err)
{
    return CU(StreamSynchronize(r->stream)) ? 0 : -1;
}

/* The device-to-device copier of rt_copy_runs, on the rank's stream. */
typedef struct dtod {
    rt_cuda_rank *r;
    rt_cu_ptr dst, src;
    su_status *err;
} dtod;

static int dtod_run(void *ctx, int64_t doff, int64_t soff, int64_t bytes)
{
    dtod *c = ctx;
    rt_cuda_rank *r = c->r;
    su_status *err = c->err;
    return CU(MemcpyDtoDAsync(c->dst + (rt_cu_ptr)doff, c->src + (rt_cu_ptr)soff, (size_t)bytes,
                              r->stream))
               ? 0
               : -1;
}

/* A block made from the seed into dst, on the device by the plan's init
 * module (loaded at its first use): a thread per element, grid-striding. */
static int run_init(rt_cuda_rank *r, const sh_init_args *g, rt_cu_ptr dst, su_status *err)
{
    enum { INIT_BLOCK = 256, INIT_GRID = 1 << 16 };
    int32_t m = r->p->init_module;
    if (!r->init_fn && ((!r->mod[m] && load_module(r, m, err) != 0) ||
                        !CU(ModuleGetFunction(&r->init_fn, r->mod[m], RT_INIT_ENTRY))))
        return -1;
    int64_t blocks = (g->n + INIT_BLOCK - 1) / INIT_BLOCK;
    unsigned grid = (unsigned)(blocks < INIT_GRID ? blocks : INIT_GRID);
    sh_init_args a = *g;
    void *arg[2] = {&a, &dst};
    char msg[512];
    rt_cu_result res = r->cu->LaunchKernel(r->init_fn, grid, 1, 1, INIT_BLOCK, 1, 1, 0, r->stream,
                                           arg, NULL);
    if (res != RT_CU_SUCCESS)
        return su_fail(err, SU_GPU, "launching " RT_INIT_ENTRY " (grid %u, block %d): %s", grid,
                       INIT_BLOCK, rt_cu_describe(r->cu, res, msg, sizeof msg));
    return 0;
}

/* The device copies of the caller's CUDA view at into buffer b. */
static int copy_view(rt_cuda_rank *r, const rt_view *at, int32_t b, su_status *err)
{
    int esize = rt_dtype_size(at->type.dtype);
    int64_t dstride[RT_MAX_RANK];
    rt_row_major_strides(at->type.rank, at->type.dim, esize, dstride);
    dtod c = {r, dev(r, b), (rt_cu_ptr)(uintptr_t)at->data, err};
    return rt_copy_runs(at->type.rank, at->type.dim, esize, dstride, at->stride, dtod_run, &c);
}

/* Input instruction i, from the source prepare_inputs found for it: no
 * host work, so it neither drains the stream nor splits a graph. */
static int run_input(rt_cuda_rank *r, int32_t i, su_status *err)
{
    const rt_instr *in = &r->g->instr[i];
    const in_source *s = &r->src[i];
    switch (s->mode) {
    case IN_SEEDED:
        return run_init(r, &s->g, dev(r, in->out), err);
    case IN_DEVICE:
        return copy_view(r, &s->at, in->out, err);
    case IN_HOST:
        return CU(MemcpyHtoDAsync(dev(r, in->out), r->pin + r->pin_at[i],
                                  (size_t)rt_type_bytes(&in->out_t), r->stream))
                   ? 0
                   : -1;
    case IN_NONE:
        break;
    }
    return su_fail(err, SU_INTERNAL, "input instruction %d has no source this run", (int)i);
}

/* Whether an input's two sources make the same device work (a graph
 * captured with one serves the other). */
static bool same_source(const in_source *a, const in_source *b)
{
    if (a->mode != b->mode)
        return false;
    switch (a->mode) {
    case IN_SEEDED:
        return memcmp(&a->g, &b->g, sizeof a->g) == 0;
    case IN_DEVICE:
        if (a->at.data != b->at.data || !rt_type_eq(&a->at.type, &b->at.type))
            return false;
        for (int d = 0; d < a->at.type.rank; d++)
            if (a->at.stride[d] != b->at.stride[d])
                return false;
        return true;
    default:
        return true;
    }
}

/* Input instruction i's source this run into r->src[i]: made from the
 * seed (the init module loaded now, outside any capture), bound in CUDA
 * memory, or read by the host into its place in the page-locked block
 * (made now, with a place for every input of the stage, so that its
 * addresses never change). */
static int input_source(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    su_status *err = h->err;
    const rt_instr *in = &r->g->instr[i];
    in_source *s = &r->src[i];
    memset(s, 0, sizeof *s);
    int made = h->seeded && r->p->init_module >= 0 ? h->seeded(h->rank, in, &s->g) : 0;
    if (made < 0)
        return -1;
    int32_t m = r->p->init_module;
    if (made > 0) {
        s->mode = IN_SEEDED;
        return r->init_fn || ((r->mod[m] || load_module(r, m, err) == 0) &&
                              CU(ModuleGetFunction(&r->init_fn, r->mod[m], RT_INIT_ENTRY)))
                   ? 0
                   : -1;
    }
    if (h->bound_device && h->bound_device(h->rank, in, &s->at)) {
        s->mode = IN_DEVICE;
        return 0;
    }
    s->mode = IN_HOST;
    if (!r->pin && !CU(MemAllocHost((void **)&r->pin, (size_t)r->pin_bytes)))
        return su_prefix(err, "page-locked host memory for the stage's inputs (%lld bytes): ",
                         (long long)r->pin_bytes);
    return h->source(h->rank, in, r->pin + r->pin_at[i]);
}

/* Before a run: each input's source (input_source), a failure named by
 * its instruction. After a run that failed before its wait, the stream is
 * drained first: the block may still be read by that run's copies. */
static int prepare_inputs(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    const rt_program *g = r->g;
    if (r->pin && r->queued && drain(r, err) != 0)
        return -1;
    r->queued = true; /* from here until finish's wait */
    if (!r->src) {
        r->src = calloc((size_t)g->ninstr + 1, sizeof *r->src);
        r->captured = calloc((size_t)g->ninstr + 1, sizeof *r->captured);
        r->pin_at = malloc(((size_t)g->ninstr + 1) * sizeof *r->pin_at);
        if (!r->src || !r->captured || !r->pin_at)
            return su_fail(err, SU_NOMEM, "out of memory");
        for (int i = 0; i < g->ninstr; i++) {
            r->pin_at[i] = -1;
            if (g->instr[i].op == RT_OP_INPUT) {
                r->pin_at[i] = r->pin_bytes;
                int64_t b = rt_type_bytes(&g->instr[i].out_t);
                r->pin_bytes += (b + PIN_ALIGN - 1) / PIN_ALIGN * PIN_ALIGN;
            }
        }
    }
    for (int i = 0; i < g->ninstr; i++) {
        const rt_instr *in = &g->instr[i];
        if (in->op == RT_OP_INPUT && input_source(r, h, i) != 0) {
            char where[256];
            return su_prefix(err, "%sinstruction %d (%s): ",
                             rt_instr_where(r->p, in, where, sizeof where), i,
                             rt_ops[in->op].name);
        }
    }
    return 0;
}

/* A source other than an input (run_input): read into its host buffer by
 * the session, then copied over; a tensor the caller bound in CUDA memory,
 * copied on the device from there; one made from the seed, made on the
 * device where the plan has an init module. Params and states stay on the
 * device between runs. */
static int run_source(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if (in->op == RT_OP_INPUT)
        return run_input(r, (int32_t)(in - r->g->instr), h->err);
    if ((in->op == RT_OP_PARAM || in->op == RT_OP_STATE) && !h->load_params)
        return 0;
    if (h->seeded && r->p->init_module >= 0) {
        sh_init_args g;
        int made = h->seeded(h->rank, in, &g);
        if (made != 0)
            return made > 0 ? run_init(r, &g, dev(r, in->out), h->err) : -1;
    }
    rt_view at;
    if (h->bound_device && h->bound_device(h->rank, in, &at))
        return copy_view(r, &at, in->out, h->err);
    if (drain(r, h->err) != 0 || h->source(h->rank, in, h->buf[in->out]) != 0)
        return -1;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err);
}

/* A const: its buffer filled on the device by a memset of its element
 * (rt_cuda_const_word), so it needs no host copy and a graph holds it. */
static int run_const(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    su_status *err = h->err;
    int bytes = 4;
    uint32_t w = rt_cuda_const_word(in, &bytes);
    size_t n = (size_t)rt_type_numel(&in->out_t);
    bool ok = bytes == 2 ? CU(MemsetD16Async(dev(r, in->out), (unsigned short)w, n, r->stream))
                         : CU(MemsetD32Async(dev(r, in->out), w, n, r->stream));
    return ok ? 0 : -1;
}

/* With nccl, instruction i (a collective, send or recv) on the comm
 * stream, after everything the compute stream queued before it. In a
 * capture the wait joins the comm stream to it, and the op's watched event
 * is recorded as a node of the graph, for the watchdog at each launch. */
static int run_comm_nccl(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    su_status *err = h->err;
    const rt_instr *in = &r->g->instr[i];
    if (!CU(EventRecord(r->ready[i], r->stream)) || !CU(StreamWaitEvent(r->comm, r->ready[i], 0)))
        return -1;
    rt_cu_ptr src = in->nin ? dev(r, in->in[0]) : 0, dst = in->out >= 0 ? dev(r, in->out) : 0;
    if (rt_nccl_run(r->nccl, in, src, dst, r->comm, r->done[i],
                    r->capturing ? r->watched[i] : NULL, err) != 0)
        return -1;
    r->last_comm = i;
    return 0;
}

/* Before step j (ninstr: the end of the run), the compute stream waits for
 * the communication whose bytes it touches there (rt_nccl_wait_points).
 * In a capture only for what the capture queued: an earlier span's graph
 * waited for all of its own before it ended. */
static int wait_comm(rt_cuda_rank *r, int j, su_status *err)
{
    for (int k = r->nccl ? r->wait_first[j] : 0; r->nccl && k < r->wait_first[j + 1]; k++)
        if ((!r->capturing || r->wait[k] >= r->cap_first) &&
            !CU(StreamWaitEvent(r->stream, r->done[r->wait[k]], 0)))
            return -1;
    return 0;
}

/* A collective, send or recv: with --comm local on one GPU device to
 * device (comm_dev.h: it waits for the stream itself); else the operand
 * to its host buffer, the session's communicator there, the result back. */
static int run_comm(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if (r->local)
        return h->comm_dev(h->rank, in, rt_cuda_local_ops(r->local),
                           in->nin ? dev(r, in->in[0]) : 0, in->out >= 0 ? dev(r, in->out) : 0);
    if (drain(r, h->err) != 0)
        return -1;
    if (in->nin &&
        to_host(r, h->buf[in->in[0]], in->in[0], rt_type_bytes(&in->in_t[0]), h->err) != 0)
        return -1;
    if (h->comm(h->rank, in, h->buf) != 0)
        return -1;
    if (in->out < 0)
        return 0;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err);
}

/* An i32 instruction on the host copies of its operands, by the CPU
 * backend; its result copied back. */
static int run_on_host(rt_cuda_rank *r, const rt_cuda_host *h, const rt_instr *in)
{
    if (drain(r, h->err) != 0)
        return -1;
    for (int i = 0; i < in->nin; i++)
        if (to_host(r, h->buf[in->in[i]], in->in[i], rt_type_bytes(&in->in_t[i]), h->err) != 0)
            return -1;
    rt_cpu_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    memcpy(ctx.coord, r->coord, sizeof ctx.coord);
    ctx.axis_size = r->p->axis_size;
    ctx.naxes = r->p->naxes;
    if (rt_cpu_run(&ctx, in, h->buf, h->err) != 0)
        return -1;
    return to_device(r, in->out, h->buf[in->out], rt_type_bytes(&in->out_t), h->err);
}

/* y = gelu_grad(x, y) in place over the n elements of a 16-bit dtype: a
 * DGELU epilogue that cuBLASLt had no algorithm for (rt_blas_epilogue's
 * dgelu_left), the module compiled by NVRTC at its first use. */
static int run_dgelu(rt_cuda_rank *r, rt_cu_ptr x, rt_cu_ptr y, int dtype, int64_t n,
                     su_status *err)
{
    enum { BLOCK = 256, GRID = 1 << 16 };
    int which = dtype == RT_F16;
    if (!r->dgelu_mod) {
        void *image = NULL;
        if (rt_nvrtc_image("sh_dgelu", RT_CUDA_DGELU_SRC, "the gelu_grad kernel", r->cc, &image,
                           err) != 0)
            return -1;
        char log[JIT_LOG] = "", what[256];
        unsigned int opt[2] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *val[2] = {log, (void *)(uintptr_t)sizeof log};
        rt_cu_result res = r->cu->ModuleLoadDataEx(&r->dgelu_mod, image, 2, opt, val);
        free(image);
        if (res != RT_CU_SUCCESS) {
            r->dgelu_mod = NULL;
            return su_fail(err, SU_GPU, "loading the gelu_grad kernel: %s%s%s",
                           rt_cu_describe(r->cu, res, what, sizeof what), *log ? ": " : "", log);
        }
        if (!CU(ModuleGetFunction(&r->dgelu_fn[0], r->dgelu_mod, "sh_dgelu_bf16")) ||
            !CU(ModuleGetFunction(&r->dgelu_fn[1], r->dgelu_mod, "sh_dgelu_f16")))
            return -1;
    }
    int64_t blocks = (n + BLOCK - 1) / BLOCK;
    unsigned grid = (unsigned)(blocks < GRID ? blocks : GRID);
    long long count = n;
    void *arg[3] = {&x, &y, &count};
    char what[256];
    rt_cu_result res = r->cu->LaunchKernel(r->dgelu_fn[which], grid, 1, 1, BLOCK, 1, 1, 0,
                                           r->stream, arg, NULL);
    if (res != RT_CU_SUCCESS)
        return su_fail(err, SU_GPU, "launching the gelu_grad kernel (grid %u, block %d): %s",
                       grid, BLOCK, rt_cu_describe(r->cu, res, what, sizeof what));
    return 0;
}

/* A matmul kernel: one cuBLASLt call, its matmul with the epilogue
 * (parameters A, B, the bias and the residual where there are, or
 * gelu_grad's x, the result, the gelu's operand where it is stored too;
 * runtime/plan/plan.h); a gelu_grad that cuBLASLt cannot do after the
 * matmul, a kernel after it. */
static int run_matmul_kernel(rt_cuda_rank *r, const rt_kernel *k, su_status *err)
{
    rt_blas_epilogue epi = {.bits = k->epilogue};
    int j = 2;
    if (k->epilogue & RT_EPI_BIAS)
        epi.bias = dev(r, k->param[j++]);
    if (k->epilogue & RT_EPI_RESIDUAL)
        epi.residual = dev(r, k->param[j++]);
    if (k->epilogue & RT_EPI_DGELU)
        epi.aux = dev(r, k->param[j++]);
    if (k->epilogue & RT_EPI_AUX)
        epi.aux = dev(r, k->param[j + 1]);
    const rt_instr *mm = &r->g->instr[k->instr[0]];
    rt_cu_ptr out = dev(r, k->param[j]);
    if (!rt_blas_matmul(r->blas, mm, &epi, dev(r, k->param[0]), dev(r, k->param[1]), out,
                        r->stream, err))
        return -1;
    if (!epi.dgelu_left)
        return 0;
    const rt_type *t = &k->param_t[j];
    return run_dgelu(r, epi.aux, out, t->dtype, rt_type_bytes(t) / rt_dtype_size(t->dtype), err);
}

/* Instruction i: its kernel at the anchor (nothing at the group's other
 * instructions), else the instruction itself. */
static int step(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    const rt_instr *in = &r->g->instr[i];
    int32_t k = r->kernel_at[i];
    if (wait_comm(r, i, h->err) != 0)
        return -1;
    if (k >= 0) {
        const rt_kernel *kr = &r->p->kernel[k];
        if (kr->instr[kr->ninstr - 1] != i)
            return 0;
        return kr->strategy == RT_KS_MATMUL ? run_matmul_kernel(r, kr, h->err)
                                            : launch(r, kr, h->err);
    }
    switch (rt_ops[in->op].cls) {
    case RT_K_SOURCE:
        return in->op == RT_OP_CONST ? run_const(r, h, in) : run_source(r, h, in);
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

/* After the run, queued behind it: the stage's outputs to the host, then
 * each param's and state's new value into its buffer on the device, for
 * the next run (and to the host, where the session applies it, unless
 * they stay on the device: h->keep_on_device), and the error slots to the
 * host (check_error_words reads them); then one wait for it all. */
static int finish(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    const rt_plan *p = r->p;
    if (wait_comm(r, r->g->ninstr, err) != 0)
        return -1;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage == r->stage && io->kind == RT_IO_OUTPUT &&
            !CU(MemcpyDtoHAsync(h->buf[io->buffer], dev(r, io->buffer),
                                (size_t)local_bytes(p, io), r->stream)))
            return -1;
    }
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage != r->stage || io->update < 0 ||
            (io->kind != RT_IO_PARAM && io->kind != RT_IO_STATE))
            continue;
        size_t n = (size_t)local_bytes(p, io);
        if (!h->keep_on_device &&
            !CU(MemcpyDtoHAsync(h->buf[io->update], dev(r, io->update), n, r->stream)))
            return -1;
        if (io->update != io->buffer &&
            !CU(MemcpyDtoDAsync(dev(r, io->buffer), dev(r, io->update), n, r->stream)))
            return -1;
    }
    if (r->nslots && !CU(MemcpyDtoHAsync(r->words, r->slots,
                                         (size_t)r->nslots * sizeof *r->words, r->stream)))
        return -1;
    if (drain(r, err) != 0)
        return -1;
    r->queued = false;
    /* the watchdog forgets the run's collectives, all done */
    return r->nccl ? rt_nccl_settle(r->nccl, err) : 0;
}

/* ---- a run: eager or by graphs, its trace and its error words ---- */

/* Whether instruction i does something this run, so that the trace shows
 * it: not a group's instruction before its anchor, not a param or state
 * kept on the device, not an insert or extract that is a view of its
 * bucket (as the estimate's timeline, which times none of these). */
static bool traced(const rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    const rt_instr *in = &r->g->instr[i];
    int32_t k = r->kernel_at[i];
    if (k >= 0)
        return r->p->kernel[k].instr[r->p->kernel[k].ninstr - 1] == i;
    if ((in->op == RT_OP_INSERT || in->op == RT_OP_EXTRACT) && bucket_noop(r, in))
        return false;
    return h->load_params || (in->op != RT_OP_PARAM && in->op != RT_OP_STATE);
}

/* Event e recorded on stream s; in a capture as an event record node,
 * which records it again at each launch of the graph. */
static int mark(rt_cuda_rank *r, rt_cu_event e, rt_cu_stream s, su_status *err)
{
    bool ok = r->capturing ? CU(EventRecordWithFlags(e, s, RT_CU_EVENT_RECORD_EXTERNAL))
                           : CU(EventRecord(e, s));
    return ok ? 0 : -1;
}

/* Instruction i, between its trace events when tracing (it begins when
 * the compute stream reaches it; an nccl op ends on the comm stream); a
 * failure names it. */
static int run_instr(rt_cuda_rank *r, const rt_cuda_host *h, int i)
{
    su_status *err = h->err;
    const rt_instr *in = &r->g->instr[i];
    bool timed = h->trace && traced(r, h, i);
    rt_cu_stream end_on = r->nccl && rt_ops[in->op].cls == RT_K_COMM ? r->comm : r->stream;
    if (timed && mark(r, r->ev_begin[i], r->stream, err) != 0)
        return -1;
    if (step(r, h, i) != 0) {
        char where[256];
        return su_prefix(err, "%sinstruction %d (%s): ",
                         rt_instr_where(r->p, in, where, sizeof where), i, rt_ops[in->op].name);
    }
    if (timed && mark(r, r->ev_end[i], end_on, err) != 0)
        return -1;
    if (timed)
        r->timed[i] = true;
    return 0;
}

/* --trace: the event pool (two per instruction and the start, made at the
 * first traced run), then the run's start event, recorded on the idle
 * stream; the host's clock is read around its synchronisation. */
static int trace_start(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    int n = r->g->ninstr;
    if (!r->timed) {
        r->ev_begin = calloc((size_t)n + 1, sizeof *r->ev_begin);
        r->ev_end = calloc((size_t)n + 1, sizeof *r->ev_end);
        r->timed = calloc((size_t)n + 1, sizeof *r->timed);
        if (!r->ev_begin || !r->ev_end || !r->timed)
            return su_fail(err, SU_NOMEM, "out of memory");
        if (!CU(EventCreate(&r->start, RT_CU_EVENT_DEFAULT)))
            return -1;
        for (int i = 0; i < n; i++)
            if (!CU(EventCreate(&r->ev_begin[i], RT_CU_EVENT_DEFAULT)) ||
                !CU(EventCreate(&r->ev_end[i], RT_CU_EVENT_DEFAULT)))
                return -1;
    }
    memset(r->timed, 0, (size_t)n * sizeof *r->timed);
    double t0 = rt_trace_now();
    if (!CU(EventRecord(r->start, r->stream)) || !CU(StreamSynchronize(r->stream)))
        return -1;
    r->start_s = (t0 + rt_trace_now()) / 2 - h->origin;
    return 0;
}

/* After the run: each timed instruction's device times into the trace. */
static int trace_read(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    if (r->nccl && !CU(StreamSynchronize(r->comm))) /* the end events of its ops */
        return -1;
    for (int i = 0; i < r->g->ninstr; i++) {
        float b = 0, e = 0;
        if (!r->timed[i])
            continue;
        if (!CU(EventElapsedTime(&b, r->start, r->ev_begin[i])) ||
            !CU(EventElapsedTime(&e, r->start, r->ev_end[i])))
            return -1;
        rt_trace_add_device(h->trace, i, r->kernel_at[i], h->step, r->start_s, b, e);
    }
    return 0;
}

/* After the run (its slots copied by finish): the kernel that met an id
 * or a label outside its range first in program order fails the run, with
 * the CPU backend's message. */
static int check_error_words(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    const uint64_t *w = r->words;
    if (!r->nslots)
        return 0;
    int32_t bad = -1, first = INT32_MAX;
    for (int k = 0; k < r->p->nkernels; k++) {
        const rt_kernel *kr = &r->p->kernel[k];
        int32_t at = rt_cuda_checked_instr(r->p, kr);
        at = at < 0 ? kr->instr[kr->ninstr - 1] : at;
        if (r->slot[k] >= 0 && w[r->slot[k]] && at < first) {
            bad = k;
            first = at;
        }
    }
    if (bad >= 0) { /* an id or label outside its range: the data's fault */
        char msg[1024];
        rt_cuda_error_message(r->p, bad, w[r->slot[bad]], msg, sizeof msg);
        su_fail(err, SU_INPUT, "%s", msg);
    }
    return bad >= 0 ? -1 : 0;
}

/* Span s as a graph: its instructions queued under cuStreamBeginCapture
 * (thread-local: other ranks' threads go on with their own work), then
 * instantiated. */
static int capture(rt_cuda_rank *r, const rt_cuda_host *h, int s)
{
    su_status *err = h->err;
    const rt_graph_span *sp = &r->span[s];
    if (!CU(StreamBeginCapture(r->stream, RT_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)))
        return -1;
    r->capturing = true;
    r->last_comm = -1;
    r->cap_first = sp->first;
    int rc = 0;
    for (int i = sp->first; rc == 0 && i < sp->end; i++)
        rc = run_instr(r, h, i);
    /* the comm stream joined the capture: it rejoins the compute stream
     * after everything it queued (its last op's done event recorded again
     * at its end: the trace's events come after the op) */
    if (rc == 0 && r->last_comm >= 0 &&
        (!CU(EventRecord(r->done[r->last_comm], r->comm)) ||
         !CU(StreamWaitEvent(r->stream, r->done[r->last_comm], 0))))
        rc = -1;
    r->capturing = false;
    rt_cu_graph graph = NULL;
    rt_cu_result res = r->cu->StreamEndCapture(r->stream, &graph); /* also after a failure */
    if (rc == 0 && !rt_cu_check(r->cu, res, "StreamEndCapture", __FILE__, __LINE__, err))
        rc = -1;
    if (rc == 0 && !CU(GraphInstantiate(&r->exec[s], graph, 0)))
        rc = -1;
    for (int i = sp->first; rc == 0 && i < sp->end; i++) /* what its inputs' copies hold */
        r->captured[i] = r->src[i];
    if (graph)
        r->cu->GraphDestroy(graph);
    if (rc != 0) {
        su_prefix(err, "capturing instructions %d..%d as a CUDA graph: ", (int)sp->first,
                  (int)sp->end - 1);
    }
    return rc;
}

/* A run by graphs: each span's graph (captured at its first use), the
 * host instructions between them as in an eager run. */
static int run_graphs(rt_cuda_rank *r, const rt_cuda_host *h)
{
    su_status *err = h->err;
    if (r->nspans < 0) {
        r->span = malloc(((size_t)r->g->ninstr / 2 + 1) * sizeof *r->span);
        int32_t n = r->span ? rt_cuda_graph_spans(r->p, r->stage, r->nccl != NULL, r->span) : -1;
        r->exec = n >= 0 ? calloc((size_t)n + 1, sizeof *r->exec) : NULL;
        if (!r->exec)
            return su_fail(err, SU_NOMEM, "out of memory");
        r->nspans = n;
    }
    /* an input whose source changed since its graph was captured (bound
     * or unbound, bound to other CUDA memory): every graph captured again */
    for (int i = 0; i < r->g->ninstr; i++)
        if (r->captured[i].mode != IN_NONE && !same_source(&r->captured[i], &r->src[i])) {
            for (int k = 0; k < r->nspans; k++) {
                rt_cu_graph_exec x = r->exec[k];
                r->exec[k] = NULL;
                if (x && !CU(GraphExecDestroy(x)))
                    return -1;
            }
            memset(r->captured, 0, (size_t)r->g->ninstr * sizeof *r->captured);
            break;
        }
    int s = 0;
    for (int i = 0; i < r->g->ninstr;) {
        if (s == r->nspans || i < r->span[s].first) {
            if (run_instr(r, h, i++) != 0)
                return -1;
            continue;
        }
        if (!r->exec[s] && capture(r, h, s) != 0)
            return -1;
        if (!CU(GraphLaunch(r->exec[s], r->stream))) {
            return su_prefix(err, "launching the graph of instructions %d..%d: ",
                             (int)r->span[s].first, (int)r->span[s].end - 1);
        }
        /* the graph's collectives, sends and receives to the watchdog,
         * their events recorded by this launch */
        for (int j = r->span[s].first; r->nccl && j < r->span[s].end; j++)
            if (rt_ops[r->g->instr[j].op].cls == RT_K_COMM &&
                rt_nccl_watch(r->nccl, &r->g->instr[j], r->watched[j], err) != 0)
                return -1;
        for (int j = r->span[s].first; h->trace && j < r->span[s].end; j++)
            r->timed[j] = traced(r, h, j);
        i = r->span[s++].end;
    }
    return 0;
}

static int run_eager(rt_cuda_rank *r, const rt_cuda_host *h)
{
    for (int i = 0; i < r->g->ninstr; i++)
        if (run_instr(r, h, i) != 0)
            return -1;
    return 0;
}

int rt_cuda_kept_to_host(rt_cuda_rank *r, void *const *buf, su_status *err)
{
    if (!r)
        return 0;
    if (!CU(CtxSetCurrent(r->ctx)))
        return -1;
    const rt_plan *p = r->p;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage == r->stage && (io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE) &&
            to_host(r, buf[io->buffer], io->buffer, local_bytes(p, io), err) != 0)
            return -1;
    }
    return 0;
}

int rt_cuda_run(rt_cuda_rank **rp, const rt_plan *p, int stage, int64_t rank,
                const rt_cuda_host *h)
{
    su_status *err = h->err;
    rt_cuda_rank *r = *rp;
    if (!r) {
        r = *rp = calloc(1, sizeof *r);
        if (!r)
            return su_fail(err, SU_NOMEM, "out of memory");
        r->p = p;
        r->stage = stage;
        r->g = &p->stage[stage];
        r->nccl = h->nccl;
        rt_plan_coords(p, rank, r->coord);
        if (setup(r, rank, err) != 0)
            return -1;
        if (h->local && rt_cuda_local_rank_new(h->local, r->cu, r->dev, r->cc, r->stream, stage,
                                               &r->local, err) != 0)
            return -1;
    } else if (!CU(CtxSetCurrent(r->ctx))) { /* each run's threads are new */
        return -1;
    }
    if (prepare_inputs(r, h) != 0 || (h->trace && trace_start(r, h) != 0))
        return -1;
    /* graphs from the second run on, and never in a run that loads params */
    bool graphs = h->graph && r->runs > 0 && !h->load_params;
    if ((graphs ? run_graphs(r, h) : run_eager(r, h)) != 0 || finish(r, h) != 0 ||
        check_error_words(r, h) != 0) {
        if (r->nccl) /* the watchdog's failure, when there is one, is the cause */
            rt_nccl_failed(r->nccl, err);
        return -1;
    }
    if (h->trace && trace_read(r, h) != 0)
        return -1;
    r->runs++;
    return 0;
}
