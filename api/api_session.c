/* api_session.c: sessions, the running half of the public API, over
 * runtime/exec/session.h. */
#include "api_internal.h"
#include "api_backend.h"

#include "runtime/exec/session.h"
#include "runtime/io/tensors.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef SHARDC_HAVE_MPI
#include <mpi.h>

/* Open MPI keeps what MPI_Init and MPI_Finalize allocate until exit, by
 * design: leak tracking (under the sanitizers) is off during those calls. */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));
static void mpi_leaks_ignored(bool on)
{
    if (on && __lsan_disable)
        __lsan_disable();
    else if (!on && __lsan_enable)
        __lsan_enable();
}

static bool mpi_ours; /* shardc_mpi_init initialised MPI */
#endif

shardc_status shardc_mpi_init(int *rank, int *size, char **error)
{
    api_clear(error);
#ifdef SHARDC_HAVE_MPI
    int init = 0, done = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&done);
    if (done)
        return api_fail(error, SHARDC_ERR_USAGE, "MPI was finalised: it cannot start again in "
                        "this process");
    if (!init) {
        int level = 0;
        mpi_leaks_ignored(true);
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &level);
        mpi_leaks_ignored(false);
        if (rc != MPI_SUCCESS)
            return api_fail(error, SHARDC_ERR_PEER, "MPI_Init_thread failed (error %d)", rc);
        mpi_ours = true;
    }
    if (rank)
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (size)
        MPI_Comm_size(MPI_COMM_WORLD, size);
    return SHARDC_OK;
#else
    (void)rank;
    (void)size;
    return api_fail(error, SHARDC_ERR_USAGE, "this build of shardc has no MPI");
#endif
}

void shardc_mpi_finalize(void)
{
#ifdef SHARDC_HAVE_MPI
    int done = 0;
    MPI_Finalized(&done);
    if (!mpi_ours || done)
        return;
    mpi_leaks_ignored(true);
    MPI_Finalize();
    mpi_leaks_ignored(false);
#endif
}

struct shardc_session {
    const shardc_plan *plan;
    rt_session *s;
    rt_backend_kind backend;     /* named in the trace */
};

shardc_status shardc_session_new(const shardc_plan *plan, const shardc_session_config *cfg,
                                 shardc_session **out, char **error)
{
    api_clear(error);
    *out = NULL;
    static const shardc_session_config defaults;
    if (!cfg)
        cfg = &defaults;
    rt_session_opts o;
    memset(&o, 0, sizeof o);
    shardc_status st = api_backend_kind(cfg->backend, &o.backend, error);
    if (st == SHARDC_OK) /* a GPU, a driver and a plan it runs, before anything else */
        st = api_backend_check_plan(o.backend, plan->p, error);
    if (st != SHARDC_OK)
        return st;
    if (!cfg->comm || !strcmp(cfg->comm, "local"))
        o.comm = RT_COMM_LOCAL;
    else if (!strcmp(cfg->comm, "mpi"))
        o.comm = RT_COMM_MPI;
    else if (!strcmp(cfg->comm, "nccl"))
        o.comm = RT_COMM_NCCL;
    else
        return api_fail(error, SHARDC_ERR_USAGE, "unknown communicator '%s' (local, mpi, nccl)",
                        cfg->comm);
    if (o.comm == RT_COMM_NCCL && o.backend != RT_BACKEND_CUDA)
        return api_fail(error, SHARDC_ERR_USAGE, "the nccl communicator needs the cuda backend");
    if (o.comm == RT_COMM_NCCL && (st = shardc_comm_check(cfg->comm, error)) != SHARDC_OK)
        return st;
    o.params_path = cfg->params_file;
    o.init_missing = cfg->init_missing != 0;
    o.inputs_path = cfg->inputs_file;
    o.seed = cfg->seed;
    o.timeout_ms = cfg->timeout_ms;
    o.trace = cfg->trace != 0;
    o.graph = cfg->graph != 0;
    if (cfg->checkpoint_keep < 0)
        return api_fail(error, SHARDC_ERR_USAGE, "checkpoint_keep %d: expected 1 or more (0: 2)",
                        cfg->checkpoint_keep);
    o.ckpt_keep = cfg->checkpoint_keep;
    su_status err;
    if (o.graph && rt_session_graph_check(&o, &err) != 0)
        return api_status(error, &err);
    shardc_session *s = calloc(1, sizeof *s);
    if (!s)
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    s->plan = plan;
    s->backend = o.backend;
    s->s = rt_session_new(plan->p, &o, &err);
    if (!s->s) {
        free(s);
        return api_status(error, &err);
    }
    *out = s;
    return SHARDC_OK;
}

void shardc_session_free(shardc_session *s)
{
    if (!s)
        return;
    rt_session_free(s->s);
    free(s);
}

shardc_status shardc_session_bind(shardc_session *s, const char *name, const void *data,
                                  size_t bytes, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_bind(s->s, name, data, bytes, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

/* v as the runtime's view: device, dtype and byte strides checked. */
static shardc_status api_view(const shardc_tensor_view *v, const char *name, rt_view *out,
                              char **error)
{
    memset(out, 0, sizeof *out);
    if (!v || (v->rank > 0 && !v->dim))
        return api_fail(error, SHARDC_ERR_USAGE, "'%s': no view given", name);
    if (v->device != SHARDC_DEVICE_CPU && v->device != SHARDC_DEVICE_CUDA &&
        v->device != SHARDC_DEVICE_CUDA_HOST)
        return api_fail(error, SHARDC_ERR_USAGE,
                        "'%s' is on a device of type %d: shardc reads host memory (1) and CUDA "
                        "memory (2, 3 pinned)",
                        name, v->device);
    int dtype = -1;
    for (int t = 0; t < RT_NDTYPES && v->dtype; t++)
        if (!strcmp(v->dtype, rt_dtype_name(t)))
            dtype = t;
    if (dtype < 0)
        return api_fail(error, SHARDC_ERR_USAGE, "'%s': unknown dtype '%s' (f32, f16, bf16, i32, "
                                                 "bool)",
                        name, v->dtype ? v->dtype : "(null)");
    if (v->rank < 0 || v->rank > RT_MAX_RANK)
        return api_fail(error, SHARDC_ERR_USAGE, "'%s': rank %d (0 to %d)", name, v->rank,
                        RT_MAX_RANK);
    out->mem = v->device == SHARDC_DEVICE_CUDA ? RT_MEM_CUDA : RT_MEM_HOST;
    out->device = v->device_id;
    out->data = v->data;
    out->type.dtype = (uint8_t)dtype;
    out->type.rank = (uint8_t)v->rank;
    int esize = rt_dtype_size(dtype);
    for (int d = 0; d < v->rank; d++) {
        if (v->dim[d] < 0 || v->dim[d] > ((long long)1 << 40))
            return api_fail(error, SHARDC_ERR_USAGE, "'%s': dim %d is %lld", name, d, v->dim[d]);
        out->type.dim[d] = v->dim[d];
    }
    rt_row_major_strides(v->rank, out->type.dim, esize, out->stride);
    for (int d = 0; d < v->rank && v->strides; d++) {
        if (llabs(v->strides[d]) > ((long long)1 << 44))
            return api_fail(error, SHARDC_ERR_USAGE, "'%s': stride %d is %lld", name, d,
                            v->strides[d]);
        out->stride[d] = v->strides[d] * esize;
    }
    if (!v->data && rt_type_numel(&out->type) > 0)
        return api_fail(error, SHARDC_ERR_USAGE, "'%s': the view's data is NULL", name);
    return SHARDC_OK;
}

shardc_status shardc_session_bind_view(shardc_session *s, const char *name,
                                       const shardc_tensor_view *v, char **error)
{
    api_clear(error);
    rt_view rv;
    shardc_status st = api_view(v, name, &rv, error);
    if (st != SHARDC_OK)
        return st;
    su_status err;
    if (rt_session_bind_view(s->s, name, &rv, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_output_into(const shardc_session *s, const char *name,
                                         const shardc_tensor_view *dst, char **error)
{
    api_clear(error);
    rt_view rv;
    shardc_status st = api_view(dst, name, &rv, error);
    if (st != SHARDC_OK)
        return st;
    su_status err;
    if (rt_session_output_into(s->s, name, &rv, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_write_trace(shardc_session *s, const char *path, char **error)
{
    api_clear(error);
    su_status err;
    const char *backend = s->backend == RT_BACKEND_CUDA ? "cuda" : "cpu";
    if (rt_session_write_trace(s->s, path, backend, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_check_params(const shardc_session *s, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_check_params(s->s, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_run(shardc_session *s, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_run(s->s, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_output(const shardc_session *s, const char *name,
                                    const void **data, shardc_tensor_info *info, char **error)
{
    api_clear(error);
    *data = NULL;
    for (int i = 0; i < s->plan->p->nio; i++) {
        const rt_io *io = &s->plan->p->io[i];
        if (io->kind == RT_IO_OUTPUT && !strcmp(io->name, name)) {
            *data = rt_session_output(s->s, name, NULL);
            if (info)
                api_tensor_info(io, info);
            return SHARDC_OK;
        }
    }
    return api_fail(error, SHARDC_ERR_USAGE, "the plan has no output called '%s'", name);
}

const char *shardc_session_generated(const shardc_session *s)
{
    return rt_session_generated(s->s);
}

shardc_status shardc_session_save_outputs(const shardc_session *s, const char *path,
                                          char **error)
{
    api_clear(error);
    const rt_plan *p = s->plan->p;
    int n = 0;
    const char **names = calloc((size_t)p->nio + 1, sizeof *names);
    rt_type *types = calloc((size_t)p->nio + 1, sizeof *types);
    const void **data = calloc((size_t)p->nio + 1, sizeof *data);
    if (!names || !types || !data) {
        free(names);
        free(types);
        free(data);
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_OUTPUT) {
            names[n] = p->io[i].name;
            data[n] = rt_session_output(s->s, names[n], &types[n]);
            n++;
        }
    su_status err;
    int rc = rt_st_write(path, n, names, types, data, &err);
    free(names);
    free(types);
    free(data);
    if (rc != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_loss(const shardc_session *s, double *loss, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_loss(s->s, loss, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_save_params(shardc_session *s, const char *path, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_save_params(s->s, path, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

/* ---- checkpoints and per-step batches ---- */

long long shardc_session_step(const shardc_session *s)
{
    return (long long)rt_session_step(s->s);
}

shardc_status shardc_session_check_steps(const shardc_session *s, long long steps,
                                         char **error)
{
    api_clear(error);
    su_status err;
    if (steps < 0)
        return api_fail(error, SHARDC_ERR_USAGE, "%lld steps", steps);
    if (rt_session_check_steps(s->s, steps, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_save_checkpoint(shardc_session *s, const char *dir, char **error)
{
    api_clear(error);
    su_status err;
    int rc = rt_session_save_checkpoint(s->s, dir, &err);
    if (rc != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_session_resume(shardc_session *s, const char *dir, char **error)
{
    api_clear(error);
    su_status err;
    if (rt_session_resume(s->s, dir, &err) != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

const char *shardc_session_resumed_from(const shardc_session *s, const char **note)
{
    return rt_session_resumed(s->s, note);
}
