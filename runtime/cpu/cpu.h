/* cpu.h: the CPU compute backend (DESIGN.md §5): a reference C kernel for
 * every compute opcode of plan_ops.def. f32 computes in f32; f16 and bf16
 * are stored as such and computed in f32 (rounded to nearest even on
 * store); i32 appears as ids and labels, and in elementwise ops, casts and
 * layout ops. Matmul goes through CBLAS (OpenBLAS).
 *
 * Kernels trust the instruction's types (rt_instr_check has run) and the
 * buffer pointers (each holds at least its type's bytes). Results never
 * alias operands, except that in == out is allowed for elementwise unary ops
 * and for the optimizer updates (the result over any operand of its type).
 */
#ifndef SHARDC_RT_CPU_H
#define SHARDC_RT_CPU_H
#include "support/support.h"
#include "runtime/plan/plan.h"

typedef struct rt_cpu_ctx {
    int64_t coord[RT_MAX_AXES];    /* this rank's mesh coordinates */
    const int64_t *axis_size;      /* the mesh's axis sizes */
    int naxes;
} rt_cpu_ctx;

/* Runs one instruction of class RT_K_COMPUTE. bufs[in->in[i]] and
 * bufs[in->out] are the operand and result memory. Returns 0, or -1 with a
 * message in err (out of memory, an id or label out of range in embedding,
 * embedding_grad, cross_entropy or cross_entropy_grad: "embedding id 70000
 * at index 12 is outside the table's 1024 rows"). */
int rt_cpu_run(const rt_cpu_ctx *ctx, const rt_instr *in, void *const *bufs, su_status *err);

#endif
