/* codegen.h: from the partitioned IR to the plan file (DESIGN.md §4). */
#ifndef SHARDC_CODEGEN_H
#define SHARDC_CODEGEN_H
#include "support/support.h"
#include "ir/ir.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/plan/plan.h"

struct pass_fusion;
struct pass_memplan;
/* The steps of writing a plan that cg_plan_bytes times (cg_plan_options.
 * seconds; the API names them, shardc_plan_step_name): the kernels (CUDA
 * C, then NVRTC or its cache), the stages' instructions, their
 * validation, a pipeline stage's roll into loop form, the file's bytes. */
enum { CG_T_KERNELS, CG_T_LOWER, CG_T_VALIDATE, CG_T_ROLL, CG_T_BYTES, CG_PLAN_STEPS };
typedef struct cg_plan_options {
    /* each stage's memory plan and (with kernels) groups, as the pass
     * pipeline made them (passes.h: pass_result's mp and fusion) */
    const struct pass_memplan *mp;
    const struct pass_fusion *fusion;
    bool kernels;               /* embed each fused group's kernel, compiled */
    bool placeholder_code;      /* with kernels: their modules hold a
                                 * placeholder byte per image instead of
                                 * code, NVRTC is not run; such a plan is
                                 * only read in-process, for its schedule
                                 * (--emit schedule), never run or written */
    rt_nvrtc_options nvrtc;     /* for them: targets, headers, cache */
    const char *source;         /* the model's file, which the ops' places
                                 * are in (the plan keeps both for the
                                 * runtime's messages); NULL: none */
    bool unroll;                /* a pipeline stage's microbatches written
                                 * one after the other, not in loop form */
    double *seconds;            /* [CG_PLAN_STEPS]: each step's wall time
                                 * added (NULL: not timed) */
} cg_plan_options;

/* The plan of a partitioned program, in its file form (runtime/plan/plan.h),
 * with the report (JSON text, may be NULL) in its REPT section: stages[s]
 * is stage s's program (nstages of them, from the pipeline split; one
 * module, stage -1, without a pipeline), laid out by o->mp. With
 * o->kernels, every stage's fused groups (o->fusion) (passes/fuse.h, as `--emit fused-ir`
 * shows them) become kernels in the KERN section, compiled by NVRTC as
 * o->nvrtc says, and the memory plan keeps what they read and write live
 * until their anchors. *out is malloc'd (free()). False with a message in
 * err when a stage holds something the plan cannot express (a bug in the
 * passes, reported as one) or NVRTC fails (the message names the kernel).
 * Allocation failures jump to *oom (the caller's; never the modules'). */
/* A pipeline stage's plain instructions as plan_build.c lowers them for
 * the roll, packed: each instruction is its shape (the instruction but for
 * its buffers and offset, as plan_roll.c compares instances: shapes are
 * distinct under cg_instr_same, so two instructions are the same but for
 * those exactly when their shapes are one) with its buffers and offset. A
 * deep pipeline's stage lowers to some 150,000 instructions of a few
 * thousand shapes: 40 bytes each, where an rt_instr takes 760. */
typedef struct cg_pinstr {
    int32_t shape;              /* cg_packed.shape[shape] */
    int32_t out;                /* the instruction's, rt_instr's */
    int32_t in[RT_MAX_IN];
    int64_t offset;
} cg_pinstr;
typedef struct cg_packed {
    rt_instr *shape;            /* malloc'd: each as its first instruction was */
    uint64_t *hash;             /* per shape: cg_instr_hash */
    int32_t nshape, capshape;
    int32_t *slot;              /* shapes by hash, open addressing, -1 free (malloc'd) */
    int32_t capslot;            /* a power of two, over twice nshape; 0: none yet */
    cg_pinstr *ins;             /* malloc'd */
    int32_t n, cap;
} cg_packed;
/* Whether a and b are the same instruction but for their buffers (whether
 * each is one: >= 0) and offset; and a hash that is equal where that is. */
bool cg_instr_same(const rt_instr *a, const rt_instr *b);
uint64_t cg_instr_hash(const rt_instr *a);
/* Instruction in appended to P (its shape found, or added): its shape's
 * index returned. Allocation failures jump to *oom (P stays whole, for
 * cg_packed_free). */
int32_t cg_pack(cg_packed *P, const rt_instr *in, jmp_buf *oom);
/* An instruction of P's shape `shape` appended to P, its operands'
 * buffers in[0 .. nin) (0 past them, as a lowered rt_instr has them),
 * out and offset: cg_pack's append, once it has the shape. */
void cg_pack_shape(cg_packed *P, int32_t shape, const int32_t *in, int nin, int32_t out,
                   int64_t offset, jmp_buf *oom);
/* Instruction k of P, whole: as it was packed but for what cg_instr_same
 * does not compare (the operands' types past nin, say), which its
 * shape's first instruction gives. */
void cg_unpack(const cg_packed *P, int32_t k, rt_instr *out);
void cg_packed_free(cg_packed *P);
/* plan_roll.c (for plan_build.c): stages s0 to s1 - 1 of plan p (plain,
 * their kernels among p's, their instructions packed[s] (the programs'
 * own instr unread: NULL)) rolled into the loop form where the instances
 * of a task repeat; task[s][k] and mb[s][k] are instruction k's stamp
 * (ir_op.task, .mb). For each, out[s - s0]: whether it rolled, and if so
 * its program and kernels (their own memory, from a: the plain program's
 * may be freed), and its I/O entries' buffers in p numbered again (a stage
 * that does not roll is left as it was). The stages roll at once, on a
 * thread per processor (at most 16); the result is the same whatever the
 * count. */
typedef struct cg_rolled {
    bool rolled;
    rt_program prog;
    rt_kernel *kernel;
    int32_t nkernels;
} cg_rolled;
void cg_plan_roll_stages(rt_plan *p, int s0, int s1, const cg_packed *packed,
                         int32_t *const *task, int32_t *const *mb, su_arena *a, jmp_buf *oom,
                         cg_rolled *out);
bool cg_plan_bytes(ir_module *const *stages, int nstages, const char *report,
                   const cg_plan_options *o, uint8_t **out, size_t *len, su_status *err,
                   jmp_buf *oom);
/* How many of a pipeline's stages cg_plan_bytes builds at once: the
 * processors, at most 16. */
int cg_plan_batch_stages(void);
/* A pipeline's plan (in loop form: not o->unroll) built a batch of stages
 * at a time as its caller makes them, so that the caller may drop each
 * batch's programs, groups and memory plans once it is in: the same bytes
 * as cg_plan_bytes's. cg_plan_stream_new copies o (whose mp and fusion
 * arrays, and seconds, stay the caller's: entries s0 to s1 - 1 are read
 * by cg_plan_stream_add of those stages only); NULL when out of memory.
 * cg_plan_stream_add gives stages s0 to s1 - 1 (stages[s]), in order from
 * 0; cg_plan_stream_end writes the plan with report (may be NULL) once
 * every stage is in. Both return false with a message in err as
 * cg_plan_bytes does; their allocation failures jump to *oom, and
 * cg_plan_stream_free then frees what the stream holds, whatever it had
 * come to. */
typedef struct cg_plan_stream cg_plan_stream;
cg_plan_stream *cg_plan_stream_new(int nstages, const cg_plan_options *o, su_status *err,
                                   jmp_buf *oom);
bool cg_plan_stream_add(cg_plan_stream *ps, ir_module *const *stages, int s0, int s1);
bool cg_plan_stream_end(cg_plan_stream *ps, const char *report, uint8_t **out, size_t *len);
void cg_plan_stream_free(cg_plan_stream *ps);

#endif
