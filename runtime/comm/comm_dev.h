/* comm_dev.h: the plan's collectives, sends and receives on device memory
 * for `--comm local` (DESIGN.md §5: every rank a thread of one process, a
 * whole mesh on one GPU), over a device given as a table of functions
 * (rt_dev_ops): comm_cuda_local.c's on the CUDA driver, a test's on host
 * memory. Nothing here touches a device itself.
 *
 * Each op is the `local` communicator's (comm_local.c, through
 * rt_local_run_with and rt_local_p2p_with: the same slots, waits,
 * timeouts and messages) on device addresses, with the re-layout of a
 * dimension other than 0 that session_rank.c does on the host done by the
 * copies themselves:
 *
 * - first every member waits for what its device has queued (d->sync),
 *   so its operand is written before a peer reads it; all_reduce copies
 *   its operand into its result first, and all_to_all packs it into the
 *   staging area ([G][outer][run] blocks, session_rank.c's pack_split: G
 *   pitched copies);
 * - between the waits, each member queues its own part and waits for it
 *   (d->sync) before the second wait, so no peer's buffer is read or
 *   written after the op returns:
 *   all_gather: G pitched copies, member j's operand ([outer][run]) into
 *     the result's columns j*run.. (session_rank.c's unpack_concat, direct);
 *   all_to_all: G pitched copies, block `me` of member j's staging into
 *     the result's columns j*run2.. at dim2;
 *   all_reduce (sum, max): one reduction of the member's slice
 *     (rt_local_slice: disjoint, in member order 0..G-1, the host's
 *     determinism contract) over every member's result, written back
 *     into every member's result;
 *   reduce_scatter: one reduction of block `me` of every member's
 *     operand, read in place at its pitch ([outer][run] rows G*run
 *     apart, so without session_rank.c's pack), into the member's result;
 *   broadcast: member 0's result into the others';
 *   send: the sender publishes its operand and waits; recv: the receiver
 *     copies it into its result and waits for the copy (d->sync).
 * A group of one copies its operand (nothing to reduce).
 *
 * i32 (counts, ids) is reduced as integers by the device's reduction,
 * never by float code; f16 and bf16 in f32, rounded once (rt_dreduce). */
#ifndef SHARDC_RT_COMM_DEV_H
#define SHARDC_RT_COMM_DEV_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/comm/comm.h"
#include "runtime/plan/plan.h"

typedef unsigned long long rt_dptr; /* a device address (CUdeviceptr: 64 bits) */

/* The most members a reduction reads: their addresses go to the kernel by
 * value (its parameter struct, under the driver's 4 KiB). */
#define RT_DCOMM_MAX_MEMBERS 256

/* One reduction, laid out as the kernel's parameter struct
 * (comm_cuda_local.c's source: keep the two in step). Element (r, c),
 * r < rows, c < cols, of member j is src[j][r*spitch + c] (elements of
 * dtype); the result, summed (max: the maximum, a nan winning as
 * runtime/cpu/cpu.c's amax) in member order 0..n-1, f16 and bf16 in f32 and
 * rounded to nearest even once, i32 in wrapping integer arithmetic, goes
 * to dst[r*cols + c], or with dst 0 back into every src[j] at its place
 * (all_reduce in place). */
typedef struct rt_dreduce {
    uint64_t src[RT_DCOMM_MAX_MEMBERS];
    uint64_t dst;
    int64_t rows, cols, spitch; /* elements */
    int32_t n, dtype, max, pad;
} rt_dreduce;

/* A device: each call queues work (in order) or waits for it. Errors:
 * -1 with a message in err. */
typedef struct rt_dev_ops {
    void *ctx;
    /* rows rows of width bytes: dst + r*dpitch <- src + r*spitch */
    int (*copy)(void *ctx, rt_dptr dst, size_t dpitch, rt_dptr src, size_t spitch, size_t width,
                size_t rows, su_status *err);
    int (*reduce)(void *ctx, const rt_dreduce *r, su_status *err);
    /* returns when everything queued so far is done */
    int (*sync)(void *ctx, su_status *err);
    rt_dptr staging;          /* all_to_all's packing area, of this rank's own */
    int64_t staging_bytes;    /* rt_dcomm_staging_bytes of the rank's stage */
} rt_dev_ops;

/* The staging all_to_all needs on stage program g: its largest operand. */
int64_t rt_dcomm_staging_bytes(const rt_program *g);
/* The largest group any collective of p runs over (1 when none). */
int64_t rt_dcomm_max_group(const rt_plan *p);

/* Collective `in` (all_reduce, reduce_scatter, all_gather, all_to_all,
 * broadcast) of a plan on group g of a `local` comm: its operand at src,
 * its result at dst (device addresses on d). Every member of g calls it
 * for the same instruction. 0, or -1 with the comm's error set (a peer's
 * failure and the timeout as the host's collectives say them). */
int rt_dcomm_collective(rt_group *g, const rt_dev_ops *d, const rt_instr *in, rt_dptr src,
                        rt_dptr dst);
/* A send (its operand at src) or recv (its result at dst) of a plan with
 * world rank peer, on a `local` comm. 0, or -1 with c's error set. */
int rt_dcomm_p2p(rt_comm *c, const rt_dev_ops *d, const rt_instr *in, int64_t peer, rt_dptr src,
                 rt_dptr dst);

#endif
