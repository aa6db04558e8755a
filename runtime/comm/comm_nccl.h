/* comm_nccl.h: the `nccl` communicator of the cuda backend (DESIGN.md §5):
 * one process per GPU, launched by mpirun or srun, the plan's collectives,
 * sends and receives run by NCCL on the device, on a communication stream
 * of their own. The session keeps the `mpi` communicator for what it does
 * on the host (gathering outputs, checkpoints, agreeing on errors).
 *
 * Bootstrap (rt_nccl_new, collective over MPI_COMM_WORLD): the rank -> GPU
 * map is checked first (rt_nccl_check_map: the device is the rank's index
 * among the ranks of its node, MPI_COMM_TYPE_SHARED; a node with more
 * ranks than GPUs, or two ranks on one GPU, is refused before NCCL is
 * called); then rank 0's ncclGetUniqueId goes to every rank by MPI_Bcast
 * and the world communicator is made with ncclCommInitRankConfig,
 * nonblocking (config.blocking = 0: every call may return ncclInProgress,
 * and the caller polls ncclCommGetAsyncError until it leaves that state).
 * One communicator per group (rt_nccl_group, in the order the session
 * makes its groups) is split from it: color = the group's color, key = the
 * member index (comm.h's layout, so an NCCL rank is a member index).
 *
 * Ops (rt_nccl_run): all_reduce (ncclSum, or ncclMax for reduce=max),
 * reduce_scatter, all_gather, broadcast (root member 0), all_to_all
 * (ncclSend/ncclRecv to every member in one group call) and the pipeline's
 * send and recv (with the world rank of the peer stage). A dimension other
 * than 0 is re-laid out on the device, on the comm stream, by pitched
 * copies (cuMemcpy2DAsync) through a staging area of the rank's own,
 * sized for its stage's largest collective; work on the comm stream runs
 * in order, so one staging area serves them all.
 *
 * Watchdog: a thread per process polls the done event of every op in
 * flight (cuEventQuery) and every communicator's ncclCommGetAsyncError.
 * An op not done within the timeout, or an asynchronous NCCL error, fails
 * the communicator: ncclCommAbort on every NCCL communicator (which ends
 * their kernels in flight, so the rank's streams drain), and every later
 * call returns "instruction 7 (all_reduce on axes (dp) #N) did not
 * complete within T s ..." (rt_nccl_failed). The library never ends the
 * process: the caller decides (shardrun calls MPI_Abort). NCCL calls of
 * the rank's thread and of the watchdog hold one mutex, so ncclCommAbort
 * never runs during another NCCL call (NCCL's rule for a safe abort). MPI
 * should be initialised with at least MPI_THREAD_SERIALIZED (shardrun
 * does): the rank's work runs on a thread of its own.
 *
 * The pure parts (the map check, where the compute stream waits, the
 * watchdog's decision) build and are tested everywhere; the rest needs MPI
 * (SHARDC_HAVE_MPI), a GPU and libnccl.so.2 (nccl_api.h). */
#ifndef SHARDC_RT_COMM_NCCL_H
#define SHARDC_RT_COMM_NCCL_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/comm/comm.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/plan/plan.h"

/* ---- pure: the rank -> GPU map ---- */

/* Whether every rank r of n can have a GPU of its own: host[r] its node's
 * name, local[r] its index among that node's ranks (its device), ndev[r]
 * the node's device count, bus[r] the PCI bus id of its device ("" when it
 * has none). 0, or -1 with "host gpu1 runs local ranks 0 to 3 (4 ranks)
 * but has 2 GPUs: the nccl communicator needs one GPU per rank" or
 * "ranks 0 and 1 (local ranks 0 and 1 on host gpu1) would share the GPU at
 * PCI bus 0000:3b:00.0" in err. */
int rt_nccl_check_map(int n, const char *const *host, const int *local, const int *ndev,
                      const char *const *bus, su_status *err);

/* ---- pure: where the compute stream waits for a collective ---- */

/* Per instruction i of stage st: the step of the backend's loop at which
 * it touches memory: its kernel's anchor (the group's last instruction)
 * when a kernel of the plan runs it, else i. */
void rt_nccl_launch_steps(const rt_plan *p, int st, int32_t *launch_at);

/* For each communication instruction c of g (collective, send, recv):
 * wait_at[c] = the first step j > c at which a non-communication
 * instruction i with launch_at[i] == j (NULL: i itself) reads or writes an
 * arena byte of c's operand or result (buffers by g->buf_offset, sized by
 * their types: the memory planner reuses memory), or g->ninstr when none
 * does (the compute stream then waits at the end of the step). Later
 * communication instructions need no wait: the comm stream runs them in
 * order. wait_at[i] = -1 for the others. */
void rt_nccl_wait_points(const rt_program *g, const int32_t *launch_at, int32_t *wait_at);

/* ---- pure: the watchdog's decision ---- */

/* Of n ops in flight (start[i]: when op i was issued, seconds on a
 * monotonic clock; done[i]: its done event has completed), the one that
 * has waited longest if it has waited more than timeout_s at time now;
 * -1 when none has. */
int rt_nccl_expired(int n, const double *start, const bool *done, double now, double timeout_s);

/* ---- the communicator (with MPI, a GPU and NCCL) ---- */

typedef struct rt_nccl rt_nccl;

/* The nccl communicator of this process's rank (its MPI_COMM_WORLD rank,
 * whose size must be p's rank count) for stage programs of p; timeout_ms
 * bounds every op (0: 10 minutes). MPI must be initialised; collective
 * over MPI_COMM_WORLD. NULL with err on failure ("no usable NCCL: ..." is
 * kept as the message's start, for the caller's exit code). */
rt_nccl *rt_nccl_new(const rt_plan *p, const rt_mesh_desc *mesh, int timeout_ms, su_status *err);
/* The communicator for group g (g's color and member index; g of this
 * rank's host communicator): every rank calls it for the same groups in
 * the same order. 0, or -1 with err. */
int rt_nccl_group(rt_nccl *n, const rt_group *g, su_status *err);
/* The device ordinal of this rank (its local rank). */
int rt_nccl_device(const rt_nccl *n);
/* Enqueues communication instruction `in` on stream s (the comm stream,
 * of n's device's primary context, current on this thread): its operand
 * at device address src, its result at dst (0 where the op has none);
 * then records `done` on s and hands it to the watchdog. With `watched`
 * (s is being captured into a CUDA graph, joined to the capture of the
 * compute stream): `done` is recorded as the capture's (for its waits),
 * `watched` as a node of the graph (RT_CU_EVENT_RECORD_EXTERNAL), and the
 * watchdog is handed it at each launch (rt_nccl_watch), not now. 0, or -1
 * with err (an op that cannot be issued within the timeout fails n as the
 * watchdog does; so does every op once n has failed). */
int rt_nccl_run(rt_nccl *n, const rt_instr *in, rt_cu_ptr src, rt_cu_ptr dst, rt_cu_stream s,
                rt_cu_event done, rt_cu_event watched, su_status *err);
/* A graph holding `in` (captured by rt_nccl_run with `watched`) was just
 * launched: its watched event, recorded by that launch, to the watchdog
 * ("instruction 7 (all_reduce on axes (dp) in a CUDA graph)"). 0, or -1
 * with err once n has failed. */
int rt_nccl_watch(rt_nccl *n, const rt_instr *in, rt_cu_event watched, su_status *err);
/* The step is over and every done event has completed (the compute stream
 * waited on them and was drained): the watchdog forgets them, so their
 * events can be recorded again. 0, or -1 with the watchdog's message in
 * err when it failed n during the step (the streams drained because it
 * aborted the communicators: the step's results are not to be used). */
int rt_nccl_settle(rt_nccl *n, su_status *err);
/* 0, or -1 with the watchdog's message in err once it has failed n (an op
 * late or an asynchronous NCCL error): a failure of the rank's own call
 * after that is its consequence, and this its cause. */
int rt_nccl_failed(rt_nccl *n, su_status *err);
/* Stops the watchdog, destroys the communicators and the staging area. */
void rt_nccl_free(rt_nccl *n);

#endif
