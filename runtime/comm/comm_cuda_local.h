/* comm_cuda_local.h: `--comm local` on the cuda backend, device to device
 * (DESIGN.md §5: one process, one thread per rank, a whole mesh on one
 * GPU). comm_dev.c decides what moves; this is its device: copies
 * (cuMemcpyDtoDAsync, cuMemcpy2DAsync for the pitched re-layouts) and the
 * reduction kernel on the rank's own stream, and cuStreamSynchronize.
 *
 * Every rank of the session runs in its device's primary context, so a
 * rank's device addresses are valid in every other rank's thread. The
 * path runs when every rank is on one device: the driver sees one GPU, or
 * the mesh has one rank (rank r runs on device r mod the device count, so
 * with several GPUs the ranks spread and a kernel would read another
 * GPU's memory, which needs peer access this backend does not set up);
 * when every group has at most RT_DCOMM_MAX_MEMBERS ranks; and when this
 * build has NVRTC. Otherwise collectives go through the host as with
 * `--comm mpi` (rt_cuda_local_rank_new gives no rank state).
 *
 * The reduction kernel (rt_cuda_local_source) is compiled by NVRTC at the
 * first run of the session's first rank (not at all when every group has
 * one rank: nothing is reduced), for the device's architecture (a cubin;
 * PTX of the newest architecture NVRTC knows when the device is newer),
 * and loaded once into the primary context, which the session's state
 * retains until rt_cuda_local_free. */
#ifndef SHARDC_RT_COMM_CUDA_LOCAL_H
#define SHARDC_RT_COMM_CUDA_LOCAL_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/comm/comm_dev.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/plan/plan.h"

/* The kernel's CUDA C source (no headers: NVRTC compiles it alone) and its
 * entry, whose one parameter is an rt_dreduce (comm_dev.h). */
const char *rt_cuda_local_source(void);
#define RT_CUDA_LOCAL_ENTRY "shardc_comm_reduce"

/* Whether the device path runs for a session of `ranks` ranks whose
 * largest group has max_group ranks, on a machine with ndev devices, in a
 * build with (nvrtc) or without NVRTC; false with why it does not. */
bool rt_cuda_local_usable(int ndev, int64_t ranks, int64_t max_group, bool nvrtc, char *why,
                          size_t n);

/* A session's shared state: whether the path runs, the compiled kernel,
 * the module. Made by the session (no CUDA call), used by its ranks'
 * threads. NULL when out of memory. */
typedef struct rt_cuda_local rt_cuda_local;
rt_cuda_local *rt_cuda_local_new(const rt_plan *p);
/* After every rank's state is freed. */
void rt_cuda_local_free(rt_cuda_local *l);

/* A rank's device for comm_dev.c: its stream (of device dev, whose
 * primary context is current), its staging area (rt_dcomm_staging_bytes
 * of its stage), the kernel. At the rank's first run. 0 with *out NULL
 * when the path does not run (the host path then); -1 with err. */
typedef struct rt_cuda_local_rank rt_cuda_local_rank;
int rt_cuda_local_rank_new(rt_cuda_local *l, const rt_cu_api *cu, rt_cu_device dev, int cc,
                           rt_cu_stream stream, int stage, rt_cuda_local_rank **out,
                           su_status *err);
const rt_dev_ops *rt_cuda_local_ops(const rt_cuda_local_rank *lr);
/* With the rank's context current (NULL: nothing). */
void rt_cuda_local_rank_free(rt_cuda_local_rank *lr);

#endif
