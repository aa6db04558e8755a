/* codegen.h: from the partitioned IR to the plan file (DESIGN.md §4). */
#ifndef SHARDC_CODEGEN_H
#define SHARDC_CODEGEN_H
#include "ir/ir.h"

/* The plan of partitioned module m, in its file form (runtime/plan.h), with
 * the report (JSON text, may be NULL) in its REPT section. *out is
 * malloc'd (free()). False with a message in err when m holds something
 * the plan cannot express (a bug in the passes, reported as one).
 * Allocation failures jump to *m->oom. */
bool cg_plan_bytes(const ir_module *m, const char *report, uint8_t **out, size_t *len,
                   char *err, size_t errlen);

#endif
