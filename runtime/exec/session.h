/* session.h: running a plan (DESIGN.md §5). A session holds the ranks this
 * process runs (all of them with the `local` communicator, one per thread;
 * its own one under `mpi`), their buffers, and the tensors the caller bound.
 *
 * Pipeline stages: each rank runs the program of its stage (its coordinate
 * on the plan's stage_axis) and loads only the inputs, params and states
 * of that stage, from the same files; send and recv go to the rank of the
 * peer stage with the same other coordinates. A name with entries on
 * several stages (an input two stages read, the step count every stage
 * keeps) is one tensor: bound once, listed once by rt_session_generated,
 * saved once (from its first entry, rt_plan_io_first). Outputs are
 * gathered from the ranks of their stage; under MPI every process gets
 * every output, the loss included, wherever its stage runs.
 *
 * Where a rank's input, param or state comes from, first match wins:
 *   1. a full host tensor bound by name (rt_session_bind);
 *   2. params and states: the checkpoint, after rt_session_resume (it
 *      holds them all, so the params file is not read);
 *   3. the params file (params and states) or the inputs file (inputs),
 *      safetensors, each rank reading only its shard's bytes; an input
 *      whose tensor there has one more, leading dim ([N, dims of the
 *      input]) holds a batch per step: step k (counting from 1, and on from
 *      a resumed checkpoint's step) reads batch k;
 *   4. made from the seed: a param or a state by its init, an input (only
 *      when no inputs file is given) by its init in the plan (floats
 *      normal(1), ids uniform over [0, N) for the N table rows or logit
 *      classes they index, else zeros: the compiler sets it). With an
 *      inputs file, an input missing from it is an error; with a params
 *      file, so is a param missing from it (not bound, not resumed)
 *      unless opts.init_missing, while a state may be (optimizer states
 *      start from their init, a master from its param).
 * The files are matched against the plan (runtime/io/match.h): a tensor of
 * the params file that is no param or state of the plan, or a param or
 * state in the inputs file, is an error at rt_session_new.
 * Params and states are loaded at the first run and kept; binding a param
 * or a state again reloads them all at the next run. A training step's plan
 * names, per param and state, the buffer holding its new value: after each
 * run it replaces the kept value, so the next run starts from it.
 * Outputs are gathered to their full shape after every run.
 */
#ifndef SHARDC_RT_SESSION_H
#define SHARDC_RT_SESSION_H
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/exec/strided.h"

/* nccl: one process per rank as mpi (whose communicator the session keeps
 * for its host work), the plan's collectives, sends and receives by NCCL
 * on the device (runtime/comm/comm_nccl.h); the cuda backend only. */
typedef enum { RT_COMM_LOCAL, RT_COMM_MPI, RT_COMM_NCCL } rt_comm_kind;
/* cpu: runtime/cpu/cpu.c; cuda: runtime/exec/cuda.c (rt_session_new refuses a plan
 * it cannot run, or a machine without a driver or a GPU, first). */
typedef enum { RT_BACKEND_CPU, RT_BACKEND_CUDA } rt_backend_kind;

typedef struct rt_session_opts {
    rt_comm_kind comm;
    rt_backend_kind backend;
    const char *params_path;     /* NULL: none */
    bool init_missing;           /* params missing from the params file are
                                  * made by their init, not an error */
    const char *inputs_path;     /* NULL: none */
    uint64_t seed;
    int timeout_ms;              /* per collective, send or recv wait (local,
                                  * mpi; nccl: the watchdog's); 0: the default */
    bool trace;                  /* time every instruction (runtime/exec/trace.h) */
    bool graph;                  /* cuda: from the second run on, CUDA graphs
                                  * (runtime/cuda/cuda_step.h); not with nccl */
    int ckpt_keep;               /* checkpoints a folder keeps (checkpoint.h);
                                  * 0: RT_CKPT_KEEP */
} rt_session_opts;

typedef struct rt_session rt_session;

/* Whether opts.graph goes with the other options: 0, or -1 with "CUDA
 * graphs need the cuda backend" or "CUDA graphs are not supported with
 * the nccl communicator yet (...)" in err. rt_session_new checks it. */
int rt_session_graph_check(const rt_session_opts *o, su_status *err);

/* A session over plan p (borrowed: it must outlive the session). Under
 * RT_COMM_MPI, MPI must be initialised and its world size equal the plan's
 * rank count. Opens the files (their headers are checked here). */
rt_session *rt_session_new(const rt_plan *p, const rt_session_opts *o, su_status *err);
void rt_session_free(rt_session *s);

/* Binds the full (global) tensor called name to host memory holding
 * `bytes` bytes of its type (row-major). The memory is borrowed until the
 * session is freed or the name is bound again; it is read at each run.
 * Errors: no input or param of that name, a size that differs. */
int rt_session_bind(rt_session *s, const char *name, const void *data, size_t bytes,
                    su_status *err);

/* Binds the full tensor called name to the caller's view v, in place: host
 * memory with any strides, or (the cuda backend only) CUDA memory, which
 * each rank reads on the device. v's type must be the tensor's; a CUDA
 * view must lie inside one allocation of device v->device (the driver's
 * pointer attributes say so). Borrowed, and read, as rt_session_bind's
 * memory; CUDA memory is read on the ranks' own streams during the run,
 * so writes the caller queued to it must be complete first. Errors (no
 * such tensor, another type, CUDA memory on the cpu backend, a pointer
 * that is not CUDA memory there) leave the session as it was. */
int rt_session_bind_view(rt_session *s, const char *name, const rt_view *v, su_status *err);

/* Writes the output called name of the last run into the caller's view
 * dst (its type the output's; host memory, or CUDA memory by the driver,
 * synchronously), with any strides that do not overlap. Errors: no such
 * output, no run yet, another type, overlapping strides, a CUDA pointer
 * that is not device memory of that size. */
int rt_session_output_into(const rt_session *s, const char *name, const rt_view *dst,
                           su_status *err);

/* Runs the plan once on every rank of this process; after a failed run
 * the session can only be freed. Params and states are loaded on the first
 * run and kept (and updated, in a training step); inputs are read at every
 * run. On failure the
 * message names the rank ("rank 3: embedding id 1024 at index 5 is outside
 * the table's 1024 rows"); under MPI the other processes may be waiting
 * for this one (until their timeout): ending the job is the caller's
 * decision (shardrun calls MPI_Abort). */
int rt_session_run(rt_session *s, su_status *err);

/* Whether the next run finds every param (match.h: rt_match_missing): in
 * the params file, bound, or resumed from a checkpoint, or made by its
 * init with opts.init_missing or without a params file. rt_session_run
 * checks it first; its failure leaves the session usable (bind the
 * missing ones, and run). */
int rt_session_check_params(const rt_session *s, su_status *err);

/* With opts.trace: writes the timeline of every run so far, every rank's
 * (runtime/exec/trace.h), to path. Under MPI every process must call it (the
 * events are gathered) and rank 0 writes the file. backend names the
 * compute backend in the file. */
int rt_session_write_trace(rt_session *s, const char *path, const char *backend, su_status *err);

/* This process's rank (0 with `local`, which runs them all). Every process
 * holds the gathered outputs, whichever stage computed them. */
int64_t rt_session_rank(const rt_session *s);

/* The output called name after a run: its full type and data (owned by the
 * session, valid until the next run). NULL when there is no such output. */
const void *rt_session_output(const rt_session *s, const char *name, rt_type *type);

/* Which inputs, params and states the last run made from the seed (or
 * would have, for params and states already loaded): names joined by
 * ", " ("" when none). Owned by the session. */
const char *rt_session_generated(const rt_session *s);

/* The number of runs that succeeded (training steps taken). */
int64_t rt_session_steps(const rt_session *s);

/* The loss of the last run, converted to double. Errors: the plan has no
 * loss (not a training step), no run has succeeded yet. */
int rt_session_loss(const rt_session *s, double *loss, su_status *err);

/* Gathers every param and state to its full shape (their values now: after
 * the last run's updates) and writes them as one safetensors file, through
 * a temporary file renamed into place. Under MPI every rank must call it
 * (the gathering is collective) and only rank 0 writes. Errors: no run has
 * succeeded yet, the last run failed, the file cannot be written. */
int rt_session_save_params(rt_session *s, const char *path, su_status *err);

/* ---- checkpoints and per-step batches (checkpoint.h) ---- */

/* The step count: the successful runs, plus the step of the checkpoint
 * resumed (rt_session_resume). Step k+1 reads batch k+1 of inputs with a
 * step dimension. */
int64_t rt_session_step(const rt_session *s);

/* Checks before running that the inputs file has a batch for each of the
 * next `steps` steps, for every input it holds with a step dimension (and
 * not bound). Errors name the file, the tensor and the steps. */
int rt_session_check_steps(const rt_session *s, int64_t steps, su_status *err);

/* Writes a sharded checkpoint of every param and state, their values now,
 * into the checkpoint folder dir (made when missing; layout and guarantees
 * in checkpoint.h): one file per rank with the boxes it owns (each
 * distinct box once) and an index with the step count (rt_session_step),
 * in a new step folder that the pointer dir/latest names only once it is
 * complete; then checkpoints beyond the newest opts.ckpt_keep are deleted.
 * An interrupted save leaves the previous checkpoint as it was, and
 * pointed at. Under MPI every rank must call it (each writes its own file;
 * rank 0, once all have, the index and the pointer) and all return the
 * same result. Returns 0; -2 when there is nothing to save yet (no run
 * has succeeded, the last run failed, or params were bound or a
 * checkpoint resumed since the last run, so they are not loaded); -1 when
 * a file cannot be written. */
int rt_session_save_checkpoint(rt_session *s, const char *dir, su_status *err);

/* Resumes from the checkpoint that dir names (rt_ckpt_locate: the step
 * folder dir/latest names, a step folder itself, a version 1 checkpoint,
 * or the newest complete step folder when the pointer is missing or names
 * an incomplete one), saved on any mesh: checks its index against the
 * plan (every param and state there, same kind, dtype and shape, nothing
 * the plan lacks), that the shards cover each box this process's ranks
 * hold, and opens the shard files those boxes overlap (each checked
 * against the index, its size and CRC-32, reading it whole). The next run reads every param and state from it,
 * each rank only the parts of the shards overlapping its box, and the step
 * count goes on from the checkpoint's. Under MPI every rank must call it,
 * all read the step folder rank 0 found, and all return the same result.
 * On failure the session is as before. */
int rt_session_resume(rt_session *s, const char *dir, su_status *err);

/* The step folder the last rt_session_resume read (NULL before one), and
 * in *note "" or why it is not the one the pointer names. */
const char *rt_session_resumed(const rt_session *s, const char **note);

#endif
