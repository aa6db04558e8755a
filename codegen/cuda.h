/* cuda.h: CUDA C for fused groups (DESIGN.md §4): one readable kernel per
 * group of passes/fuse.h, with its launch geometry.
 *
 * A kernel computes exactly what the CPU backend (runtime/cpu/cpu.c) computes
 * op by op: the same formulas (gelu's tanh approximation, the optimizer
 * updates with their coefficients folded in double and applied in f32,
 * layernorm's eps added to the variance), NumPy broadcasting, and the
 * same rounding: f16 and bf16 values are loaded into f32, every op
 * computes in f32 and rounds its result to its own dtype, as the CPU
 * backend's promoted kernels do, and NVRTC is asked not to contract
 * a * b + c into FMAs (rt_nvrtc_compile). Reductions accumulate in f32 in
 * a fixed tree order (the CPU backend sums in double), so sums agree to
 * f32 rounding, not bit for bit. A kernel cannot stop with a message, so
 * an id outside the table (embedding, embedding_grad) or a label outside
 * 0..C-1 (cross_entropy, cross_entropy_grad) makes the result's row (the
 * loss) NaN, keeping the rest of the step deterministic, and is recorded
 * in the module's error word: a module-scope
 * `__device__ unsigned long long sh_error`, 0 when all is well, else
 * (0xffffffff - index) << 32 | id for the lowest bad index (atomicMax),
 * which the runtime finds with cuModuleGetGlobal, reads after the step and
 * reports with the CPU backend's message (runtime/cuda/cuda_step.h). Modules
 * of other kernels have no sh_error.
 *
 * Strategies:
 *   elementwise   one thread per VEC elements, grid-stride; VEC = 4 when
 *                 the domain's last dim divides by 4 (vector loads). A
 *                 multi-tensor group (passes/fuse.h): each part's VEC
 *                 steps in blocks, part after part, a block running one
 *                 part, blocks grid-strided; vec is 4 when a part's is
 *   row           a reduction over the last axis (inner size 1): one block
 *                 per row (grid-stride over rows), warp shuffles then
 *                 shared memory across warps; a row of up to 32 elements
 *                 per thread stays in registers between passes
 *   column        a reduction over another axis: one thread per output,
 *                 looping over the axis (coalesced across threads)
 *   single block  cross_entropy: one block, a warp per row, the mean of
 *                 the rows' losses summed in a fixed order
 *
 * Every buffer is assumed aligned to 16 bytes (the memory plan aligns to
 * PASS_MEM_ALIGN); the geometry is 1-D (y and z are 1). */
#ifndef SHARDC_CG_CUDA_H
#define SHARDC_CG_CUDA_H

#include "ir/ir.h"
#include "passes/fuse.h"

typedef enum {
    CG_CUDA_ELEMENTWISE,
    CG_CUDA_ROW,
    CG_CUDA_COLUMN,
    CG_CUDA_SINGLE_BLOCK,
} cg_cuda_strategy;

typedef struct cg_cuda_kernel {
    const char *name;           /* the group's: "k3_add_gelu" */
    const char *source;         /* one translation unit: a header comment
                                 * with the launch, includes, helpers, and
                                 * one extern "C" __global__ function */
    const char *key;            /* the source made with the kernel called K
                                 * and the values a0, a1, ... in order of
                                 * first use: kernels with equal keys are the
                                 * same code and launch but for names */
    uint64_t key_hash;          /* cg_cuda_key_hash(key) */
    int group;                  /* index in pass_fusion.groups; -1: an op's */
    int op;                     /* an op's kernel: the op's index; -1 */
    cg_cuda_strategy strategy;
    int64_t grid;               /* blocks along x */
    int block;                  /* threads per block along x */
    int shared_bytes;           /* dynamic shared memory per block */
    int vec;                    /* elements per vector load: 1 or 4 */
    bool warp_rows;             /* a row kernel of a group: a warp per row, 8
                                 * rows a block (else a block per row) */
    int nparams;
    const ir_value **params;    /* the pointer parameters in order: the
                                 * group's inputs, then the values it stores */
} cg_cuda_kernel;

typedef struct cg_cuda {
    int nkernels;
    cg_cuda_kernel *k;          /* one per group, in the groups' order */
    int nsame;                  /* cg_cuda_generate_known: kernels that took an
                                 * earlier one's code for their structure, their
                                 * key not made (cuda.c) */
    int ntwin;                  /* of those, the copies of a held stage's group
                                 * that took their twin's code (pass_fusion.twin),
                                 * not looked up by their structure */
    su_arena arena;
    su_arena scratch;           /* each key while it is made (cuda.c) */
} cg_cuda;

/* Generates the kernel of every group of f (pass_fuse over m), then of
 * every op outside the groups that cg_cuda_op_kernel names (numbered on
 * after the groups: "k12_transpose"), into *out (free it with
 * cg_cuda_free, also after a failure). False with a message in err for a
 * group the generator cannot express (a bug in the pass). */
bool cg_cuda_generate(const ir_module *m, const pass_fusion *f, cg_cuda *out, su_buf *err);
/* As cg_cuda_generate, but a kernel whose key is known already (made by
 * an earlier kernel of this call, or known(ctx, key) says so: a module
 * holds its code) gets no source of its own (source NULL), only its name,
 * key, geometry and parameters: the plan writer compiles each key once,
 * and a pipeline's stages repeat their kernels for every microbatch. A
 * kernel whose group or op has the structure of one made before in the
 * call takes that one's key and launch without its key being made (nsame
 * counts them; debug builds make the key and fail where it differs). */
bool cg_cuda_generate_known(const ir_module *m, const pass_fusion *f, cg_cuda *out, su_buf *err,
                            bool (*known)(void *ctx, const char *key, uint64_t hash),
                            void *ctx);
void cg_cuda_free(cg_cuda *c);
/* The hash of a kernel's key (FNV-1a, 64 bits). */
uint64_t cg_cuda_key_hash(const char *key);

/* Whether op, outside any group, gets a kernel of its own: transpose,
 * embedding, iota, and (on floats) embedding_grad, attention, attn_probs
 * and attention's backward (attn_stats, attn_dq, attn_dk, attn_dv, heads
 * up to 1024 wide); a GPU backend needs one to run it. */
bool cg_cuda_op_kernel(const ir_op *op);

/* The name of a strategy: "elementwise", "row", "column", "single block". */
const char *cg_cuda_strategy_name(cg_cuda_strategy s);

/* The text of runtime/exec/init_gen.h (embedded by CMakeLists.txt): with
 * SH_INIT_KERNEL defined before it, the source of the plan's init module,
 * whose kernel sh_init makes a block of a tensor from the seed on the
 * device as the CPU backend makes it on the host. */
extern const char cg_init_source[];

/* `--emit cuda`: a first comment line (with targets, e.g. "sm_80, sm_90;
 * PTX for sm_90", when not NULL), then every kernel's source, a blank
 * line between two. */
void cg_cuda_print(const cg_cuda *c, const char *targets, su_buf *out);

#endif
