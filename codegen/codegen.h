/* codegen.h: from the partitioned IR to the plan file (DESIGN.md §4). */
#ifndef SHARDC_CODEGEN_H
#define SHARDC_CODEGEN_H
#include "ir/ir.h"

/* The plan of a partitioned program, in its file form (runtime/plan.h),
 * with the report (JSON text, may be NULL) in its REPT section: stages[s]
 * is stage s's program (nstages of them, from the pipeline split; one
 * module, stage -1, without a pipeline). *out is malloc'd (free()). False
 * with a message in err when a stage holds something the plan cannot
 * express (a bug in the passes, reported as one). Allocation failures jump
 * to *stages[0]->oom. */
bool cg_plan_bytes(ir_module *const *stages, int nstages, const char *report, uint8_t **out,
                   size_t *len, char *err, size_t errlen);

#endif
