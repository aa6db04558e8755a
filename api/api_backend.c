/* api_backend.c: choosing and checking a session's compute backend; the
 * cuda backend is checked before anything else, so that a machine without
 * a driver or a GPU says so at once (runtime/cuda/cuda_driver.h). */
#include "api_backend.h"

#include "api_internal.h"
#include "runtime/exec/cuda.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/comm/nccl_api.h"

#include <string.h>

shardc_status api_backend_kind(const char *name, rt_backend_kind *kind, char **error)
{
    if (!name || !strcmp(name, "cpu"))
        *kind = RT_BACKEND_CPU;
    else if (!strcmp(name, "cuda"))
        *kind = RT_BACKEND_CUDA;
    else
        return api_fail(error, SHARDC_ERR_USAGE, "unknown backend '%s' (cpu, cuda)", name);
    return SHARDC_OK;
}

shardc_status shardc_backend_check(const char *backend, char **error)
{
    api_clear(error);
    rt_backend_kind kind = RT_BACKEND_CPU;
    shardc_status st = api_backend_kind(backend, &kind, error);
    if (st != SHARDC_OK || kind == RT_BACKEND_CPU)
        return st;
    su_status err;
    if (rt_cu_probe(&err) != RT_CU_OK)
        return api_fail(error, SHARDC_ERR_NO_GPU, "%s", err.msg);
    return SHARDC_OK;
}

shardc_status api_backend_check_plan(rt_backend_kind kind, const rt_plan *p, char **error)
{
    if (kind == RT_BACKEND_CPU)
        return SHARDC_OK;
    su_status err;
    switch (rt_cuda_check(p, &err)) {
    case 0:
        return SHARDC_OK;
    case 1:
        return api_fail(error, SHARDC_ERR_NO_GPU, "%s", err.msg);
    default:
        su_prefix(&err, "the cuda backend cannot run this plan: ");
        return api_status(error, &err);
    }
}

shardc_status shardc_comm_check(const char *comm, char **error)
{
    api_clear(error);
    if (!comm || !strcmp(comm, "local") || !strcmp(comm, "mpi"))
        return SHARDC_OK;
    if (strcmp(comm, "nccl") != 0)
        return api_fail(error, SHARDC_ERR_USAGE, "unknown communicator '%s' (local, mpi, nccl)",
                        comm);
    su_status err;
    if (!rt_nccl_load(&err))
        return api_fail(error, SHARDC_ERR_NO_GPU, "%s", err.msg);
    return SHARDC_OK;
}
