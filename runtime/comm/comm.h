/* comm.h: communicators (DESIGN.md §5). One rt_comm per rank; groups are
 * sets of ranks that differ only in the coordinates of some mesh axes.
 *
 * Ranks are laid out row-major over the mesh axes (the first axis major),
 * identically for every implementation: rank r has coordinates
 * rt_plan_coords(r). A group over axes (a0, a1, ...) holds the ranks that
 * share this rank's coordinates on every other axis; its members are ordered
 * row-major over (a0, a1, ...) in the order given, a0 major. This member
 * index is what all_gather concatenates by, reduce_scatter and all_to_all
 * split by, and broadcast's root (member 0) is.
 *
 * Every call is collective over its group: all members call it with the same
 * arguments (counts, dtype), in the same order. The buffers are flat: the
 * executor does any re-layout for a dimension other than 0.
 *
 * Send and receive buffers of reduce_scatter, all_gather and all_to_all must
 * not overlap (as MPI without MPI_IN_PLACE); all_reduce and broadcast work in
 * place.
 *
 * Point to point (rt_send, rt_recv: pipeline stages) is between two world
 * ranks. Between one sender and one receiver, messages arrive in the order
 * they were sent. A send may wait until its receive is posted
 * (rendezvous, as NCCL's): with `local` it always does (the receiver copies
 * straight from the sender's buffer, so there is no buffering and a
 * schedule that would deadlock under NCCL deadlocks here too, and times
 * out); with `mpi` it is MPI_Send's choice (eager below MPI's threshold).
 * The receiver names the byte count it expects: a message of another size
 * fails the receive (with `local`, the send too) with a message naming both
 * ranks and both sizes.
 *
 * Errors: every call returns 0, or -1 with a message in the rt_comm (read it
 * with rt_comm_error). No call ends the process. With `local`, a peer that
 * fails aborts the whole world: its peers' calls return -1 with "rank R
 * failed: ..." instead of waiting forever, and a collective whose first
 * wait (for every member to arrive) lasts longer than the timeout fails the
 * world with a message naming the op, the group and the missing member;
 * the second wait (members reading each other's buffers) always completes.
 * A send or a receive that waits longer than the timeout returns -1 ("recv
 * on rank 1 from rank 0 timed out after 200 ms: rank 0 sent nothing") but
 * leaves the world as it is: the caller, which knows which instruction it
 * was, calls rt_comm_abort with its own message.
 *
 * With `mpi` every wait is bounded by the timeout too: a collective that
 * lasts longer fails with the op, the group and the members that do not
 * answer ("timed out after 2000 ms in all_reduce over axes (dp) (group of
 * 2 ranks, member 0): member 1 (rank 1) does not answer (stopped, or busy
 * outside communication)"), a send or receive likewise with its peer.
 * MPI cannot cancel what it started, so after such a timeout the comm has
 * failed (later calls return the same error) and is stuck
 * (rt_comm_stuck): the op may still read or write the buffers it was
 * given if the peer comes back, so the caller must keep them, or end the
 * job. rt_comm_abort fails this process's comm only; the peers learn of it
 * by their own timeouts, unless the caller ends the job (MPI_Abort, as
 * shardrun does).
 */
#ifndef SHARDC_RT_COMM_H
#define SHARDC_RT_COMM_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/plan/plan.h"

typedef struct rt_comm rt_comm;
typedef struct rt_group rt_group;

typedef struct rt_mesh_desc {
    int naxes;
    int64_t size[RT_MAX_AXES];
    const char *name[RT_MAX_AXES]; /* for messages */
} rt_mesh_desc;

/* ---- local: one process, one thread per rank ---- */
typedef struct rt_local_world rt_local_world;
/* A world of all ranks of the mesh (their product); timeout_ms bounds every
 * wait (0: 10 minutes). NULL with err on failure. */
rt_local_world *rt_local_world_new(const rt_mesh_desc *mesh, int timeout_ms, su_status *err);
/* Frees the world; all its comms must be closed first. */
void rt_local_world_free(rt_local_world *w);
/* The communicator of rank r (0 <= r < ranks); call once per rank, from
 * that rank's thread or before starting it. */
rt_comm *rt_local_comm(rt_local_world *w, int64_t rank);
/* Marks the world failed because of this rank: every wait in every other
 * rank returns -1 with "rank R failed: why". Under `mpi`: this comm only
 * (every later call returns the error); it never ends the process. */
void rt_comm_abort(rt_comm *c, const char *why);

/* ---- mpi: one process per rank (only with SHARDC_HAVE_MPI) ---- */
/* Uses MPI_COMM_WORLD, whose size must equal the mesh's rank count and whose
 * rank order is the row-major rank order. MPI must be initialised by the
 * caller. timeout_ms bounds every wait (0: 10 minutes). Collective over
 * MPI_COMM_WORLD. NULL with err (naming both sizes) on a mismatch. */
rt_comm *rt_mpi_comm_new(const rt_mesh_desc *mesh, int timeout_ms, su_status *err);

/* ---- every implementation ---- */
int64_t rt_comm_rank(const rt_comm *c);
int64_t rt_comm_size(const rt_comm *c);
const char *rt_comm_error(const rt_comm *c);
/* c's error into err, with its kind (SU_PEER for a failed or silent peer,
 * SU_GPU for a device failure inside an op, SU_INTERNAL for arguments no
 * validated plan makes): returns -1. */
int rt_comm_status(const rt_comm *c, su_status *err);
/* Whether an op of c timed out while MPI still held it (`mpi` only): MPI
 * may then read or write that op's buffers whenever its peer comes back,
 * so the caller must never free or reuse them. */
bool rt_comm_stuck(const rt_comm *c);
/* The group over the given axes (0..RT_MAX_AXES distinct mesh axes; none
 * gives the group of this rank alone). Every
 * rank of the world must make the same groups in the same order (MPI's
 * communicator split is collective over the world). The comm owns it. */
int rt_comm_group(rt_comm *c, const uint8_t *axes, int naxes, rt_group **out);
int64_t rt_group_size(const rt_group *g);
int64_t rt_group_index(const rt_group *g); /* this rank's member index */

/* In place, sum, count elements of dtype (f32 summed in f32; f16, bf16 summed
 * in f32 and rounded; i32 in i32). */
int rt_all_reduce(rt_group *g, void *buf, int64_t count, int dtype);
/* As rt_all_reduce, the elementwise maximum instead of the sum (nan wins,
 * as the CPU backend's amax; f16 and bf16 exact). */
int rt_all_reduce_max(rt_group *g, void *buf, int64_t count, int dtype);
/* send: count*size elements; recv: count elements, the sum of member
 * index's block. */
int rt_reduce_scatter(rt_group *g, const void *send, void *recv, int64_t count, int dtype);
/* send: bytes; recv: size*bytes, member i's at offset i*bytes. */
int rt_all_gather(rt_group *g, const void *send, void *recv, int64_t bytes);
/* send: size blocks of bytes, block j for member j; recv: size blocks, block
 * i from member i. */
int rt_all_to_all(rt_group *g, const void *send, void *recv, int64_t bytes);
/* In place from member 0. */
int rt_broadcast(rt_group *g, void *buf, int64_t bytes);
/* Waits for every member. */
int rt_barrier(rt_group *g);

/* Point to point with world rank peer (not this rank): rt_send sends the
 * `bytes` bytes at buf; rt_recv receives a message of exactly `bytes` bytes
 * into buf. */
int rt_send(rt_comm *c, int64_t peer, const void *buf, int64_t bytes);
int rt_recv(rt_comm *c, int64_t peer, void *buf, int64_t bytes);

/* Closes the comm and its groups. */
void rt_comm_free(rt_comm *c);

#endif
