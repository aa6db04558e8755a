/* api_run.c: the plan half of the public API, over runtime/ (sessions are
 * in api_session.c, so a program that only compiles does not pull in the
 * backends). */
#include "api_internal.h"

#include "runtime/plan/plan.h"
#include "runtime/plan/plan_text.h"
#include "runtime/exec/session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


shardc_status shardc_program_plan(const shardc_program *prog, shardc_plan **out, char **error)
{
    api_clear(error);
    *out = NULL;
    shardc_plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    shardc_status st = api_program_read_plan(prog, &pl->p, error);
    if (st != SHARDC_OK) {
        free(pl);
        return st;
    }
    *out = pl;
    return SHARDC_OK;
}

shardc_status shardc_program_save_plan(const shardc_program *prog, const char *path,
                                       char **error)
{
    api_clear(error);
    uint8_t *bytes;
    size_t len;
    shardc_status st = api_program_plan(prog, &bytes, &len, error);
    if (st != SHARDC_OK)
        return st;
    su_status err;
    int rc = su_write_file(path, bytes, len, &err);
    free(bytes);
    if (rc != 0)
        return api_status(error, &err);
    return SHARDC_OK;
}

shardc_status shardc_check_writable(const char *path, int folder, char **error)
{
    api_clear(error);
    if (!path)
        return api_fail(error, SHARDC_ERR_USAGE, "shardc_check_writable: no path");
    char why[8300];
    if (!su_path_writable(path, folder != 0, why, sizeof why))
        return api_fail(error, SHARDC_ERR_IO, "%s cannot be written: %s", path, why);
    return SHARDC_OK;
}

shardc_status shardc_plan_load(const char *path, shardc_plan **out, char **error)
{
    api_clear(error);
    *out = NULL;
    su_status err;
    rt_plan *p = rt_plan_load_as_written(path, &err); /* a session expands its own stages */
    if (!p)
        return api_status(error, &err);
    shardc_plan *pl = calloc(1, sizeof *pl);
    if (!pl) {
        rt_plan_free(p);
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    pl->p = p;
    *out = pl;
    return SHARDC_OK;
}

void shardc_plan_free(shardc_plan *plan)
{
    if (!plan)
        return;
    rt_plan_free(plan->p);
    free(plan);
}

const char *shardc_plan_report(const shardc_plan *plan)
{
    return plan->p->report ? plan->p->report : "";
}

int shardc_plan_num_axes(const shardc_plan *plan) { return plan->p->naxes; }

const char *shardc_plan_axis(const shardc_plan *plan, int i, long long *size)
{
    if (i < 0 || i >= plan->p->naxes)
        return NULL;
    if (size)
        *size = plan->p->axis_size[i];
    return plan->p->axis_name[i];
}

long long shardc_plan_ranks(const shardc_plan *plan) { return rt_plan_ranks(plan->p); }

int shardc_plan_num_tensors(const shardc_plan *plan) { return plan->p->nio; }

void api_tensor_info(const rt_io *io, shardc_tensor_info *info)
{
    static const char *const kinds[] = {"input", "param", "output", "state"};
    memset(info, 0, sizeof *info);
    info->name = io->name;
    info->kind = kinds[io->kind <= RT_IO_STATE ? io->kind : 0];
    info->dtype = rt_dtype_name(io->type.dtype);
    info->rank = io->type.rank;
    for (int d = 0; d < io->type.rank; d++)
        info->dim[d] = io->type.dim[d];
    info->bytes = (size_t)rt_type_bytes(&io->type);
}

shardc_status shardc_plan_tensor(const shardc_plan *plan, int i, shardc_tensor_info *info)
{
    if (i < 0 || i >= plan->p->nio)
        return SHARDC_ERR_USAGE;
    api_tensor_info(&plan->p->io[i], info);
    return SHARDC_OK;
}

