/* cpu_internal.h: what the CPU backend's files (cpu.c, cpu_matmul.c) share. */
#ifndef SHARDC_RT_CPU_INTERNAL_H
#define SHARDC_RT_CPU_INTERNAL_H
#include "cpu.h"

/* cpu_matmul.c. x[i] is operand i, y the result; f32 or i32 only. */
int rt_cpu_matmul_(const rt_instr *in, const void *const *x, void *y, char *err, size_t errlen);
int rt_cpu_attention_(const rt_instr *in, const void *const *x, void *y, char *err,
                      size_t errlen);
int rt_cpu_attn_probs_(const rt_instr *in, const void *const *x, void *y, char *err,
                       size_t errlen);

/* Writes the message into err (when there is room) and returns -1. */
int rt_cpu_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
