/* session.h: running a plan (DESIGN.md §5). A session holds the ranks this
 * process runs (all of them with the `local` communicator, one per thread;
 * its own one under `mpi`), their buffers, and the tensors the caller bound.
 *
 * Where a rank's input, param or state comes from, first match wins:
 *   1. a full host tensor bound by name (rt_session_bind);
 *   2. the params file (params and states) or the inputs file (inputs),
 *      safetensors, each rank reading only its shard's bytes;
 *   3. made from the seed: a param or a state by its init, an input (only
 *      when no inputs file is given) by the plan's default (floats
 *      normal(1), ids uniform over their valid range). With an inputs file,
 *      an input missing from it is an error.
 * Params and states are loaded at the first run and kept; binding a param
 * or a state again reloads them all at the next run. A training step's plan
 * names, per param and state, the buffer holding its new value: after each
 * run it replaces the kept value, so the next run starts from it.
 * Outputs are gathered to their full shape after every run.
 */
#ifndef SHARDC_RT_SESSION_H
#define SHARDC_RT_SESSION_H
#include "plan.h"

typedef enum { RT_COMM_LOCAL, RT_COMM_MPI } rt_comm_kind;

typedef struct rt_session_opts {
    rt_comm_kind comm;
    const char *params_path;     /* NULL: none */
    const char *inputs_path;     /* NULL: none */
    uint64_t seed;
    int timeout_ms;              /* per collective wait; 0: the default */
} rt_session_opts;

typedef struct rt_session rt_session;

/* A session over plan p (borrowed: it must outlive the session). Under
 * RT_COMM_MPI, MPI must be initialised and its world size equal the plan's
 * rank count. Opens the files (their headers are checked here). */
rt_session *rt_session_new(const rt_plan *p, const rt_session_opts *o, char *err,
                           size_t errlen);
void rt_session_free(rt_session *s);

/* Binds the full (global) tensor called name to host memory holding
 * `bytes` bytes of its type (row-major). The memory is borrowed until the
 * session is freed or the name is bound again; it is read at each run.
 * Errors: no input or param of that name, a size that differs. */
int rt_session_bind(rt_session *s, const char *name, const void *data, size_t bytes, char *err,
                    size_t errlen);

/* Runs the plan once on every rank of this process; after a failed run
 * the session can only be freed. Params and states are loaded on the first
 * run and kept (and updated, in a training step); inputs are read at every
 * run. On failure the
 * message names the rank ("rank 3: embedding id 1024 at index 5 is outside
 * the table's 1024 rows"); under MPI the caller should then call
 * rt_session_abort so the other processes stop. */
int rt_session_run(rt_session *s, char *err, size_t errlen);

/* Stops every process of an MPI run (MPI_Abort); a no-op with `local`. */
void rt_session_abort(rt_session *s, const char *why);

/* This process's rank (0 with `local`, which runs them all), and whether it
 * holds the gathered outputs (every rank does). */
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
int rt_session_loss(const rt_session *s, double *loss, char *err, size_t errlen);

/* Gathers every param and state to its full shape (their values now: after
 * the last run's updates) and writes them as one safetensors file, through
 * a temporary file renamed into place. Under MPI every rank must call it
 * (the gathering is collective) and only rank 0 writes. Errors: no run has
 * succeeded yet, the last run failed, the file cannot be written. */
int rt_session_save_params(rt_session *s, const char *path, char *err, size_t errlen);

#endif
