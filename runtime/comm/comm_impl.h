/* comm_impl.h: what the communicator implementations (comm_local.c,
 * comm_mpi.c) share with the dispatch layer (comm.c). Private to runtime/.
 *
 * comm.c owns everything that does not depend on the transport: argument
 * checks (point to point's too), the group table of a comm (groups are made once per axes list),
 * member indices and group colors, groups of one rank (every op a copy or a
 * no-op), message formatting. An implementation fills an rt_comm_ops and
 * only ever sees groups of more than one rank with checked arguments.
 */
#ifndef SHARDC_RT_COMM_IMPL_H
#define SHARDC_RT_COMM_IMPL_H
#include "support/support.h"
#include <stdbool.h>
#include "runtime/comm/comm.h"

#if defined(__GNUC__)
#define RT_COMM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RT_COMM_PRINTF(f, a)
#endif

#define RT_COMM_ERRLEN 512
#define RT_COMM_NAMELEN 32

typedef enum {
    RT_CO_ALL_REDUCE,
    RT_CO_REDUCE_SCATTER,
    RT_CO_ALL_GATHER,
    RT_CO_ALL_TO_ALL,
    RT_CO_BROADCAST,
    RT_CO_BARRIER,
    RT_CO_SEND,
    RT_CO_RECV,
    RT_CO_ALL_REDUCE_MAX, /* all_reduce with max instead of sum */
    RT_CO_N
} rt_comm_op;

typedef struct rt_comm_ops {
    /* Makes g->impl for a group of more than one rank (g's fields other
     * than impl and next are set). -1 with the comm's error set. */
    int (*group_new)(rt_comm *c, rt_group *g);
    void (*group_free)(rt_group *g);
    /* -1 with the comm's error set when the world has failed. */
    int (*check)(rt_comm *c);
    /* One collective on a group of more than one rank. count is elements
     * of dtype for all_reduce (sum or max) and reduce_scatter, bytes for the others
     * (dtype then unused). all_reduce and broadcast work in recv (send ==
     * recv); barrier has no buffers. */
    int (*run)(rt_group *g, int op, const void *send, void *recv, int64_t count, int dtype);
    /* rt_send (op RT_CO_SEND: buf is only read) or rt_recv (RT_CO_RECV)
     * with world rank peer, another rank of the world; checked arguments. */
    int (*p2p)(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes);
    /* msg is "rank R failed: why"; c's error is already set to it. */
    void (*abort)(rt_comm *c, const char *msg);
    /* Releases what the implementation holds for c; its groups are gone. */
    void (*free)(rt_comm *c);
} rt_comm_ops;

struct rt_comm {
    const rt_comm_ops *ops;
    void *impl;
    int64_t rank, ranks;
    int naxes;
    int64_t size[RT_MAX_AXES];              /* the mesh */
    int64_t coord[RT_MAX_AXES];             /* this rank's coordinates */
    char name[RT_MAX_AXES][RT_COMM_NAMELEN]; /* axis names, for messages */
    rt_group *groups;                       /* made so far, newest first */
    bool stuck;                             /* rt_comm_stuck */
    char err[RT_COMM_ERRLEN];
    su_kind err_kind;                       /* what kind of failure err is */
};

struct rt_group {
    rt_comm *comm;
    rt_group *next;
    int naxes;
    uint8_t axes[RT_MAX_AXES];
    int64_t size;   /* ranks in the group */
    int64_t index;  /* this rank's member index, row-major over axes */
    int64_t color;  /* row-major index of the coordinates on the other axes */
    char desc[RT_MAX_AXES * (RT_COMM_NAMELEN + 2) + 16]; /* "axes (dp, tp)" */
    void *impl;     /* NULL for a group of one rank */
};

/* Checks the mesh (0..RT_MAX_AXES axes, sizes >= 1, at most INT32_MAX ranks)
 * and counts its ranks; false with err. */
bool rt_comm_mesh_check(const rt_mesh_desc *mesh, int64_t *ranks, su_status *err);
/* "dp=2 x tp=4" ("(no axes)" for none) into buf. */
const char *rt_comm_mesh_str(const rt_mesh_desc *mesh, char *buf, size_t size);
/* Fills c for rank `rank` of a checked mesh; groups none, error "". */
void rt_comm_init(rt_comm *c, const rt_comm_ops *ops, void *impl, const rt_mesh_desc *mesh,
                  int64_t rank, int64_t ranks);
/* Frees every group of c (ops->group_free first). */
void rt_comm_drop_groups(rt_comm *c);
/* Sets c's error: a peer's failure or a wait that timed out (SU_PEER). */
void rt_comm_seterr(rt_comm *c, const char *fmt, ...) RT_COMM_PRINTF(2, 3);
/* Sets c's error of another kind: a device failure inside an op (SU_GPU),
 * arguments the plan's validator should have refused (SU_INTERNAL). */
void rt_comm_setfail(rt_comm *c, su_kind kind, const char *fmt, ...) RT_COMM_PRINTF(3, 4);
/* "all_reduce", ... */
const char *rt_comm_op_name(int op);
/* The world rank of member m of g. */
int64_t rt_group_member_rank(const rt_group *g, int64_t m);
/* The member-order reductions of every implementation, CHUNK elements at
 * a time: acc (k elements, f32 or u32) += (or = when first) src's k
 * elements of dtype; with max, acc = max(acc, src) instead (nan wins, as
 * the CPU backend's amax). f16 and bf16 accumulate in f32, i32 wraps. */
void rt_comm_acc_add(int dtype, void *acc, const void *src, int64_t k, bool first, bool max);
/* acc's k elements in dtype into out (rounded once for f16 and bf16). */
void rt_comm_acc_out(int dtype, const void *acc, void *out, int64_t k);

/* ---- the device flavour of `local` (comm_local.c, for comm_dev.c) ----
 * The same slots, barriers, failure and timeouts as every local op, but
 * what moves between the two waits is the caller's: the buffers a member
 * publishes are device addresses, which only the caller can copy. */

/* What a member publishes for an op (count and dtype as in rt_comm_ops.run). */
typedef struct rt_local_slot {
    int op, dtype;
    int64_t count;
    const void *send;
    void *recv;
} rt_local_slot;

/* Runs between the waits on every member, with every member's slot
 * (slot[m] is member m's); 0, or -1 with the comm's error set. */
typedef int (*rt_local_work)(void *arg, rt_group *g, const rt_local_slot *slot);
/* One collective of g, a group of a `local` comm (of any size: a group of
 * one calls work with its own slot alone): publishes (op, dtype, count,
 * send, recv), waits for every member (abortable: failure and timeout as
 * rt_all_reduce's), checks that they agree, calls work, and waits again
 * (always completes: work must not wait on another member). 0, or -1 with
 * the comm's error set; -1 ("... needs the local communicator") on a
 * comm of another kind. */
int rt_local_run_with(rt_group *g, int op, const void *send, void *recv, int64_t count,
                      int dtype, rt_local_work work, void *arg);
/* Copies bytes from the sender's buffer src to dst for a receive (the
 * copy must be complete on return: the sender may then reuse src); 0, or
 * -1 with c's error set. */
typedef int (*rt_local_copy)(void *arg, rt_comm *c, void *dst, const void *src, int64_t bytes);
/* rt_send (op RT_CO_SEND: copy unused) or rt_recv (RT_CO_RECV: the bytes
 * move by copy instead of memcpy) on a `local` comm, with rt_send's
 * rendezvous, timeouts and messages. */
int rt_local_p2p_with(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes,
                      rt_local_copy copy, void *arg);
/* The elements [*lo, *hi) of count that member me of n reduces (disjoint,
 * in member order, covering count; sizes differ by at most one). */
void rt_local_slice(int64_t count, int64_t n, int64_t me, int64_t *lo, int64_t *hi);

#endif
