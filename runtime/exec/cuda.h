/* cuda.h: the CUDA compute backend (DESIGN.md §5), over the driver API
 * loaded at run time (cuda_driver.h) and cuBLASLt (cuda_blas.h).
 *
 * A rank runs on device (rank mod the device count) in that device's
 * primary context (ranks of one process may share a GPU: each has its own
 * stream and arena). Its memory is one cuMemAlloc of the stage's arena,
 * carved at the memory plan's offsets. The plan's modules its stage uses
 * are loaded from the cubin for the device's architecture (or one of the
 * same major version, lower minor), else from the PTX when the device is
 * newer than it, else the session fails saying which architectures the
 * plan holds.
 *
 * The session keeps a host copy of the arena, where its existing paths
 * work: sources are read into it and copied to the device, but those made
 * from the seed, which the plan's init module makes on the device (the
 * CPU backend's bits: init_gen.h), and those the caller bound in CUDA
 * memory, copied on the device; collectives
 * and send/recv copy their operand to it, run on the host communicator
 * and copy their result back (with the local communicator on one GPU
 * they stay on the device, comm_cuda_local.h; with the nccl communicator
 * too: the compute stream records an event, a comm stream waits
 * on it and runs the op by NCCL, and the compute stream waits for the op's
 * done event only before the first later step touching its operand's or
 * result's bytes, rt_nccl_wait_points, or at the end of the run); after a run, outputs and the new values of
 * params and states are copied to it (and, on the device, each new value
 * into its param's buffer, as the session does on the host).
 *
 * Instructions: each kernel of the plan runs at its anchor with its
 * geometry and stands for its group's instructions. Outside kernels the
 * backend runs copy (device to device), slice, insert and extract (pitched
 * copies), matmul (cuBLASLt: f32, f16, bf16) and every source and
 * collective; any other compute instruction outside a kernel (attention,
 * attn_probs, embedding, embedding_grad, transpose, iota, i32 arithmetic)
 * is refused by rt_cuda_check before anything runs, naming it. */
#ifndef SHARDC_RT_CUDA_H
#define SHARDC_RT_CUDA_H
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/exec/strided.h"

#include <stdbool.h>

/* Whether the cuda backend can run plan p here: a driver and a device
 * (rt_cu_probe), and every instruction of every stage either in a kernel
 * or one the backend runs (the header's list). Returns 0; 1 with "no
 * usable CUDA driver: ..." or "no CUDA device: ..." in err; 2 with
 * "stage 0, instruction 12 (embedding): ..." for a plan it cannot run. */
int rt_cuda_check(const rt_plan *p, su_status *err);
/* The plan half of rt_cuda_check, which needs no GPU: 0, or -1 with
 * "stage 0, instruction 12 (embedding): ..." in err. */
int rt_cuda_check_plan(const rt_plan *p, su_status *err);

struct rt_dev_ops;   /* comm_dev.h */
struct sh_init_args; /* runtime/exec/init_gen.h */

/* What the session lends a rank's run: its host arena and its sources and
 * collectives, which work on host buffers. */
typedef struct rt_cuda_host {
    void *rank;                    /* the session's rank, passed back */
    void *const *buf;              /* per buffer of the stage: its host copy */
    /* fills dst (host) for a source instruction (input, param, state, const) */
    int (*source)(void *rank, const rt_instr *in, void *dst);
    /* the caller's CUDA memory bound to a source instruction's tensor
     * (rt_session_bind_view), at this rank's block: the view, with its
     * data at the block's first element; NULL when it is not bound there
     * (then `source` fills the host copy) */
    const rt_view *(*bound_device)(void *rank, const rt_instr *in, rt_view *at);
    /* whether a source instruction's tensor (input, param, state) is made
     * from the seed this run: 1 with *g, the generator's parameters for the
     * rank's block (init_gen.h); 0 when it is not (then `source` or
     * bound_device); -1 with the error. Where the plan has an init module,
     * the backend then makes the block on the device; NULL: never */
    int (*seeded)(void *rank, const rt_instr *in, struct sh_init_args *g);
    /* a collective, send or recv on host buffers */
    int (*comm)(void *rank, const rt_instr *in, void *const *buf);
    bool load_params;              /* params and states are (re)loaded this run */
    /* params and states stay on the device after the run: their host
     * copies in buf are not written (rt_cuda_kept_to_host brings them when
     * the host needs them); false: copied to buf after every run */
    bool keep_on_device;
    su_status *err;                /* the rank's status */
    /* NULL: collectives, sends and receives through `comm` on the host;
     * else (--comm nccl) on the device by NCCL, on a comm stream of the
     * rank's own, and the rank's GPU is rt_nccl_device (comm_nccl.h) */
    struct rt_nccl *nccl;
    /* --graph: from the second run on, the device spans between host
     * instructions run as CUDA graphs (cuda_step.h), nccl's ops in them */
    bool graph;
    /* --trace: this run's instructions timed on the device (an event pair
     * around each, rt_trace_add_device) into *trace; NULL: off */
    struct rt_trace *trace;
    int32_t step;                  /* the session's run, for the trace */
    double origin;                 /* the timeline's origin (rt_trace_now) */
    /* --comm local: the session's device-to-device state (comm_cuda_local.h);
     * where it runs, collectives, sends and receives go to comm_dev with
     * the rank's device (its stream) and their operand's and result's
     * device addresses (0 where none) instead of through `comm`. NULL: off */
    struct rt_cuda_local *local;
    int (*comm_dev)(void *rank, const rt_instr *in, const struct rt_dev_ops *d, uint64_t src,
                    uint64_t dst);
} rt_cuda_host;

typedef struct rt_cuda_rank rt_cuda_rank;

/* Runs stage `stage` of p once as mesh rank `rank` on the GPU; *r is the
 * rank's device state, made at the first call (context, stream, arena,
 * modules, cuBLASLt) and kept. Returns 0, or -1 with "instruction 12
 * (matmul): ..." in h->err. The plan must have passed rt_cuda_check. */
int rt_cuda_run(rt_cuda_rank **r, const rt_plan *p, int stage, int64_t rank,
                const rt_cuda_host *h);

/* Every param's and state's current value (its buffer on the device) to
 * its host copy buf[buffer], for a rank whose runs kept them on the device
 * (rt_cuda_host.keep_on_device); r NULL: nothing. 0, or -1 with err. */
int rt_cuda_kept_to_host(rt_cuda_rank *r, void *const *buf, su_status *err);

/* ---- a caller's tensors in CUDA memory (rt_session_bind_view) ---- */

/* Whether view v (RT_MEM_CUDA) is device memory of device v->device by
 * the driver's pointer attributes, every element it reaches inside one
 * allocation: 0, or -1 with "'name' (bound at 0x...) is not CUDA memory
 * ..." in err (no driver: the driver's message). */
int rt_cuda_view_check(const rt_view *v, const char *name, su_status *err);
/* The block [start, start + count) of v (RT_MEM_CUDA) to host dst,
 * packed row-major, synchronously, in device v->device's primary
 * context (the calling thread's context is restored). 0, or -1 with err. */
int rt_cuda_view_to_host(const rt_view *v, const int64_t *start, const int64_t *count,
                         void *dst, su_status *err);
/* The row-major tensor src (host, v's type) into v (RT_MEM_CUDA),
 * synchronously, as rt_cuda_view_to_host. 0, or -1 with err. */
int rt_cuda_host_to_view(const void *src, const rt_view *v, su_status *err);

/* Frees a rank's device state (NULL: nothing). */
void rt_cuda_rank_free(rt_cuda_rank *r);

#endif
