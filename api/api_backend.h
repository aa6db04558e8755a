/* api_backend.h: the compute backends a session may run on
 * (api_backend.c). */
#ifndef SHARDC_API_BACKEND_H
#define SHARDC_API_BACKEND_H
#include "shardc.h"
#include "runtime/plan/plan.h"
#include "runtime/exec/session.h"

/* The backend called name (NULL: cpu) into *kind; SHARDC_ERR_USAGE for
 * another name. */
shardc_status api_backend_kind(const char *name, rt_backend_kind *kind, char **error);

/* Whether plan p can run on backend kind here: for cuda, a driver and a
 * device (SHARDC_ERR_NO_GPU) and every instruction one it runs
 * (SHARDC_ERR_INPUT, naming it). */
shardc_status api_backend_check_plan(rt_backend_kind kind, const rt_plan *p, char **error);

#endif
