/* cpu_internal.h: what the CPU backend's files (cpu.c, cpu_matmul.c) share. */
#ifndef SHARDC_RT_CPU_INTERNAL_H
#define SHARDC_RT_CPU_INTERNAL_H
#include "runtime/cpu/cpu.h"
#include "support/support.h"

/* cpu_matmul.c. x[i] is operand i, y the result; f32 or i32 only. */
int rt_cpu_matmul_(const rt_instr *in, const void *const *x, void *y, su_status *err);
int rt_cpu_attention_(const rt_instr *in, const void *const *x, void *y, su_status *err);
int rt_cpu_attn_probs_(const rt_instr *in, const void *const *x, void *y, su_status *err);
/* attn_stats, attn_dq, attn_dk, attn_dv, attn_lse and attn_delta
 * (plan_ops.def) */
int rt_cpu_attn_grad_(const rt_instr *in, const void *const *x, void *y, su_status *err);
/* attention and its backward with heads_inner (keepdims): the dims -3
 * and -2 of the layout operands it names swapped into scratch, the op,
 * the result back where it names it */
int rt_cpu_attn_heads_(const rt_instr *in, const void *const *x, void *y, su_status *err);

#endif
