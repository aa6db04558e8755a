/* plan_check.h: what the plan's checker shares between its files
 * (plan_rules.c, plan_validate.c, plan_io.c); private to runtime/plan/. */
#ifndef SHARDC_RT_PLAN_CHECK_H
#define SHARDC_RT_PLAN_CHECK_H
#include "support/support.h"
#include "runtime/plan/plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

enum {
    TYPE_LEN = 200, /* "bf16[" + 8 x (", " + 20 digits) + "]" fits */
    MSG_LEN = 1024, /* an inner message before a prefix is added */
};

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

static inline bool rt_plan_fail(su_status *err, const char *fmt, ...) PRINTF(2, 3);

/* Sets err (the plan is wrong: SU_INPUT) and returns false, so a check
 * reads `return rt_plan_fail(...)`. */
static inline bool rt_plan_fail(su_status *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_failv(err, SU_INPUT, fmt, ap);
    va_end(ap);
    return false;
}

static inline bool rt_plan_wrap(su_status *err, const su_status *inner, const char *fmt, ...)
    PRINTF(3, 4);

/* inner (a part's failure) into err after fmt's text, its kind kept:
 * false. */
static inline bool rt_plan_wrap(su_status *err, const su_status *inner, const char *fmt, ...)
{
    char head[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    su_status_copy(err, inner);
    su_prefix(err, "%s", head);
    return false;
}

/* Out of memory while checking a plan: false. */
static inline bool rt_plan_nomem(su_status *err)
{
    su_fail(err, SU_NOMEM, "out of memory");
    return false;
}

/* The memory a plan owns (rt_plan.mem_): a list of blocks. */
typedef struct rt_block {
    struct rt_block *next;
    _Alignas(max_align_t) unsigned char data[];
} rt_block;
/* count zeroed elements of size bytes on p->mem_; NULL when count is 0 or
 * memory runs out (the caller tells which). */
void *rt_plan_alloc(rt_plan *p, size_t count, size_t size);
/* Frees a list of blocks. */
void rt_plan_free_blocks(void *mem);

/* Of a program in loop form that rt_plan_check_loops accepted: body b's
 * instructions, and the body holding instruction k. */
int64_t rt_plan_body_len(const rt_program *g, int32_t b);
int32_t rt_plan_body_of(const rt_program *g, int32_t k);
/* The items of stage s's loop form (of a plan rt_plan_check_loops
 * accepted) whose expansion the validator checks for all of them
 * (plan_validate.c, check_loop_stage): for each body and each distinct
 * tuple of slots that its buffers (its instructions' operands and results,
 * its kernels' parameters) take, the first item of the least microbatch
 * and the first of the greatest. *keep gets their indices, ascending
 * (malloc'd, *nkeep of them; the caller frees it). */
bool rt_plan_loop_sample(const rt_plan *p, int s, int32_t **keep, int32_t *nkeep,
                         su_status *err);

/* rt_plan_validate_stage, a program in loop form checked on its whole
 * expansion rather than on rt_plan_loop_sample's items: the reference the
 * sample must agree with (tests/unit/runtime/test_plan_sample.c). */
bool rt_plan_validate_stage_whole(const rt_plan *p, int s, su_status *err);

/* f32, f16 or bf16. */
bool rt_check_float_dtype(int dtype);
/* "f32[4, 8]" in buf, returned. */
const char *rt_type_text(char buf[TYPE_LEN], const rt_type *t);
/* A type the runtime can hold: known dtype, rank 0..8, dims >= 1, a byte
 * count that fits in int64. what names it in the message. */
bool rt_check_type(const rt_type *t, const char *what, su_status *err);
/* The size of mesh axis ax, checked against the mesh (rt_instr_check may
 * run on a plan whose mesh was never validated). */
bool rt_check_axis_size(const rt_plan *p, int ax, int64_t *size, su_status *err);
/* The local shard of an I/O entry's global type, the type and sharding
 * checked on the way (plan_rules.c). */
bool rt_io_local(const rt_plan *p, const rt_io *io, rt_type *local, su_status *err);
/* The number of ranks an instruction's mesh axes span: 1 to 8 axes, in
 * range, distinct. */
bool rt_check_group_size(const rt_plan *p, const rt_instr *in, int64_t *g, su_status *err);
/* Whether op makes its result from an I/O entry (param, input, state). */
bool rt_is_io_source(int op);
/* The opcode, the operand count, the types of the operands and the
 * result, and the list and axis counts every instruction stores. */
bool rt_check_operands(const rt_instr *in, su_status *err);

#endif
