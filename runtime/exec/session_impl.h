/* session_impl.h: what the files of the executor share (private to
 * runtime/exec/): the session and rank structs, and the pieces each file
 * makes for the others. session.c's file comment says how a run goes.
 *
 *   session.c         the session and its entry points (session.h): new,
 *                     free, bind, run, outputs, the loss, saving params,
 *                     the trace
 *   session_rank.c    one rank's run: a rank's block of a tensor, sources
 *                     (bound tensors, checkpoints, files, the seed),
 *                     collectives with their re-layout, the CPU loop, the
 *                     cuda backend's hooks
 *   session_gather.c  the ranks' blocks into full tensors (outputs, the
 *                     params and states saved); the updates applied after
 *                     a run
 *   session_ckpt.c    checkpoints: saving, resuming, the step count and
 *                     the per-step input batches; agree(), the MPI ranks'
 *                     common result
 */
#ifndef SHARDC_RT_SESSION_IMPL_H
#define SHARDC_RT_SESSION_IMPL_H
#include "runtime/exec/session.h"
#include "support/support.h"

#include "runtime/exec/checkpoint.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comm_cuda_local.h"
#include "runtime/comm/comm_nccl.h"
#include "runtime/exec/cuda.h"
#include "runtime/io/tensors.h"
#include "runtime/exec/trace.h"
#include "runtime/exec/strided.h"

#include <pthread.h>

#define ERRLEN 1024

typedef struct axes_key {
    uint8_t n;
    uint8_t axes[RT_MAX_AXES];
} axes_key;

typedef struct binding {
    char *name;
    rt_view v;                /* the caller's memory: host, or CUDA with
                               * the cuda backend */
} binding;

typedef struct rank_state {
    rt_session *s;
    int64_t rank;
    int64_t coord[RT_MAX_AXES];
    const rt_program *prog;
    rt_comm *comm;
    rt_group **groups;        /* per s->keys entry */
    uint8_t *arena;           /* prog's arena_bytes, allocated once */
    size_t arena_mapped;      /* its bytes when it is mapped memory, else 0 */
    void **buf;               /* per buffer of prog: its place in the arena */
    bool params_loaded;
    bool kept_on_device;      /* cuda: params' and states' host copies are stale */
    rt_trace tr;              /* --trace: the instructions run, timed */
    rt_cuda_rank *cuda;       /* the cuda backend's device state */
    int failed;
    su_status err;
} rank_state;

struct rt_session {
    const rt_plan *p;         /* the stages this process runs plain: the caller's
                               * plan, or where it holds some in loop form, view */
    rt_plan view;             /* the caller's plan with this process's stages
                               * expanded (view.mem_ NULL: none made) */
    rt_session_opts o;
    rt_st_file *params, *inputs;
    rt_local_world *world;
    rt_nccl *nccl;            /* --comm nccl: the device's communicators */
    rt_cuda_local *dlocal;    /* cuda with --comm local: collectives device to device */
    int64_t nranks;           /* in the mesh */
    int64_t nhere;            /* run by this process */
    rank_state *ranks;
    int nkeys;
    axes_key *keys;           /* the groups every rank makes, in this order */
    int nbind;
    binding *bind;
    bool params_dirty;
    bool failed;              /* a run failed: only rt_session_free is left */
    int64_t steps;            /* successful runs */
    rt_ckpt *ckpt;            /* rt_session_resume's: the params and states */
    char *resumed;            /* its step folder (malloc'd) */
    char resume_note[ERRLEN]; /* why not the one the pointer names, or "" */
    int64_t step_base;        /* the step count is step_base + steps */
    void **out;               /* per io entry: gathered output (outputs only) */
    int32_t *first;           /* per io entry: rt_plan_io_first */
    char *generated;
    pthread_mutex_t mu;       /* first_err */
    su_status first_err;
    bool has_err;
    double trace_origin;      /* rt_trace_now() when the timeline starts */
    bool origin_set;
};

/* The full tensors of every param and state, in I/O table order, each
 * name once: names, types and data (malloc'd, freed by rt_sess_free_kept). */
typedef struct kept {
    int n;
    const char **names;
    rt_type *types;
    void **data;
} kept;

/* ---- session_rank.c ---- */

/* The start of this rank's block of a tensor of local type t sharded by sh. */
void rt_sess_block_start(const rt_plan *p, const int64_t *coord, const rt_sharding *sh,
                         const rt_type *local, int64_t *start);
/* Copies the block [start, start + count) of a row-major tensor of shape
 * full (esize-byte elements) from full_data to block (packed), or the
 * other way round when to_full. */
void rt_sess_copy_block(const rt_type *full, const int64_t *start, const int64_t *count,
                        int esize, const uint8_t *full_data, uint8_t *block, bool to_full);
/* The tensor bound as name (rt_session_bind, rt_session_bind_view), or NULL. */
const binding *rt_sess_find_binding(const rt_session *s, const char *name);
/* Reads the block [start, start + count) of the full tensor bound in b
 * into dst (host, packed row-major): from host memory, or from CUDA
 * memory by the driver. 0, or -1 with err. */
int rt_sess_read_bound(const binding *b, const int64_t *start, const int64_t *count, void *dst,
                       su_status *err);
/* The host copier of rt_copy_runs (strided.h): ctx is {dst, src}. */
int rt_sess_host_copy(void *ctx, int64_t doff, int64_t soff, int64_t bytes);
/* Frees p, a buffer rs's comm was given, unless the comm is stuck
 * (rt_comm_stuck): then p is kept for the life of the process. */
void rt_sess_comm_free(const rank_state *rs, void *p);
/* Makes rs's arena, buffers and groups, the first time; 0, or -1 with
 * rs->err set. */
int rt_sess_rank_setup(rank_state *rs);
/* Frees rs's arena, unless its comm is stuck (rt_sess_comm_free). */
void rt_sess_arena_free(rank_state *rs);
/* Runs rs's program once, on the CPU or the cuda backend; 0, or -1 with
 * rs->err set. */
int rt_sess_rank_run(rank_state *rs);
/* Records rs's failure: the session's first error, if it is the first
 * (under local, every other rank's comm is aborted). */
void rt_sess_rank_failed(rank_state *rs);
/* A rank's thread (arg: its rank_state): rt_sess_rank_run. */
void *rt_sess_rank_thread(void *arg);

/* ---- session_gather.c ---- */

/* Every output from the blocks of the local ranks of its stage into s->out. */
int rt_sess_gather_outputs_local(rt_session *s);
/* Whether the rank at coord holds a block of entry io: it is of io's stage. */
bool rt_sess_holds(const rt_plan *p, const int64_t *coord, const rt_io *io);
/* Under MPI, collective: every output to every rank; 0, or -1 with
 * rs->err set. */
int rt_sess_gather_outputs_mpi(rt_session *s, rank_state *rs);
/* Whether io lives across runs: a param or a state. */
bool rt_sess_is_kept(const rt_io *io);
/* After a run: each param's and state's update buffer becomes its buffer
 * (the cuda backend: on the device, done in the run). */
void rt_sess_apply_updates(rt_session *s);
/* The cuda backend keeps params and states on the device between runs:
 * their values to the local ranks' host copies, where a run left them
 * there (rank_state.kept_on_device). 0, or -1 with err set. */
int rt_sess_sync_kept(rt_session *s, su_status *err);
/* The full params and states into k (under MPI, collective); 0, or -1 with
 * err set. k is freed by rt_sess_free_kept either way. */
int rt_sess_gather_kept(rt_session *s, kept *k, su_status *err);
void rt_sess_free_kept(kept *k);

#endif
