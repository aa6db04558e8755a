/* ir_eval.h: a test-only reference interpreter of the logical IR in double
 * precision. It runs an ir_module (global shapes, not partitioned) op by op
 * with the plainest loops that state each op's math (ops.def, LANGUAGE.md
 * §7), so that tests can compare the compiler's passes and kernels against
 * it. i32 values are held as doubles holding integers. Collectives and slice
 * (partitioned modules only) are not supported. */
#ifndef SHARDC_TEST_IR_EVAL_H
#define SHARDC_TEST_IR_EVAL_H

#include "../../ir/ir.h"

typedef struct ev_module ev_module;

/* An evaluator of m, which must outlive it. Ops appended to m later are
 * evaluated too. Never NULL (aborts when memory runs out). */
ev_module *ev_new(const ir_module *m);
void ev_free(ev_module *ev);

/* Gives the source (input, param or state) called name the data
 * (numel of its type, row-major; copied). False when no source has that
 * name. A param or state left unset is made by its init when that is zeros
 * or ones; any other unset source is an error of ev_run. */
bool ev_set(ev_module *ev, const char *name, const double *data);

/* Evaluates every op in program order. False with a message in err (an
 * unset source, an id out of range, an op it does not support). */
bool ev_run(ev_module *ev, char *err, size_t errlen);
/* As ev_run, but stops after the op that makes last (the forward part up
 * to the loss, say); last NULL runs everything. */
bool ev_run_to(ev_module *ev, const ir_value *last, char *err, size_t errlen);

/* The value v after the last run (numel of its type, row-major), or NULL
 * when that run did not compute it. */
const double *ev_value(const ev_module *ev, const ir_value *v);

#endif
