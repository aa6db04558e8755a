/* plan_text.h: a plan's instruction lists as text (`shardc --emit schedule` and
 * `--emit loops`). */
#ifndef SHARDC_RT_PLAN_TEXT_H
#define SHARDC_RT_PLAN_TEXT_H
#include "runtime/plan/plan.h"
#include "support/support.h"

/* A stage's program as the plan file holds it, in loop form (plan.h):
 * its bodies, their instructions and the schedule's items over nmb
 * microbatches; nbody 0: plain. */
typedef struct rt_loop_form {
    int32_t nbody, ninstr, nitem, nmb;
} rt_loop_form;

/* Appends the mesh, the I/O table and every stage's instructions to b. */
void rt_plan_print_schedule(const rt_plan *p, su_buf *b);
/* The same, each stage's instructions as the runtime runs them (p plain),
 * with the loop form its file held, loops[stage] (NULL: none): "// in the
 * plan: 15 bodies of 462 instructions, run in 161 items for 16
 * microbatches" after the stage's line. */
void rt_plan_print_schedule_loops(const rt_plan *p, const rt_loop_form *loops, su_buf *b);
/* The mesh, the I/O table and every stage as the plan holds it (p as
 * rt_plan_read keeps it, not expanded): a stage in loop form by its
 * slotted buffers and slot maps, its bodies, each once, with how often and
 * for which microbatches it runs, and its items in order, a run that
 * repeats with the microbatch one more written once ("b2(m) b1(m) for m =
 * 1 .. 13"); a plain stage as rt_plan_print_schedule prints it. The text
 * does not grow with the microbatches where the plan does not. */
void rt_plan_print_loops(const rt_plan *p, su_buf *b);

#endif
