/* plan_text.h: a plan's instruction lists as text (`shardc --emit schedule`). */
#ifndef SHARDC_RT_PLAN_TEXT_H
#define SHARDC_RT_PLAN_TEXT_H
#include "runtime/plan/plan.h"
#include "support/support.h"

/* Appends the mesh, the I/O table and every stage's instructions to b. */
void rt_plan_print_schedule(const rt_plan *p, su_buf *b);

#endif
