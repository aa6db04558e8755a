/* match.h: the params and inputs files against the plan (DESIGN.md §5).
 * Nothing in them is dropped, and nothing the plan needs from them is
 * made up, without the caller asking: a tensor of the params file that is
 * no param or state of the plan is an error (a typo in a weight name, or
 * another model's file), and so is a param of the plan missing from the
 * file, unless the caller allows making the missing ones by their init.
 *
 * Messages name the file, count the names and list them (the first
 * RT_MATCH_LIST, then how many more), each unknown one with the plan's
 * nearest name where one is close (su_nearest): "w.safetensors: the
 * params file has 1 tensor that is no param or state of the plan: 'w_1'
 * (did you mean 'w1'?); and lacks 1 param of the plan: 'w1'". */
#ifndef SHARDC_RT_MATCH_H
#define SHARDC_RT_MATCH_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/plan/plan.h"
#include "runtime/io/tensors.h"

/* The names a message lists before "and N more". */
#define RT_MATCH_LIST 8

/* When a session opens its files (either may be NULL): every tensor of the
 * params file is a param or a state of plan p (an input's name there is an
 * error too, unless the inputs file is the same file), and the inputs file
 * holds no param or state (unless it is the params file). first: per io
 * entry, rt_plan_io_first (a name on several stages counts once). 0, or -1
 * with the message in err; a message about unknown tensors lists the
 * params missing from the file too (they are most often the same typo). */
int rt_match_files(const rt_plan *p, const int32_t *first, const rt_st_file *params,
                   const rt_st_file *inputs, su_status *err);

/* Before a run that loads the params from the params file: every param of
 * p is in it, except those given otherwise (given[i] for io entry i: a
 * bound tensor). With init_missing the missing ones are made by their init
 * instead, but a file holding none of the plan's params is still an error
 * (the wrong file: making every param from the seed would ignore it).
 * States may be missing (optimizer states start from their init, a master
 * copy from its param). 0, or -1 with the message in err. */
int rt_match_missing(const rt_plan *p, const int32_t *first, const rt_st_file *params,
                     const bool *given, bool init_missing, su_status *err);

#endif
