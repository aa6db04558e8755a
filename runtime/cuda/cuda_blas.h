/* cuda_blas.h: matmul on the GPU through cuBLASLt, loaded at run time.
 *
 * libcublasLt is opened with dlopen at the first matmul a session needs
 * (the names libcublasLt.so, then .so.13, .so.12, .so.11), never linked.
 * A matmul of the plan (NumPy semantics, row-major) becomes one
 * cublasLtMatmul: row-major C[M, N] = A[M, K] B[K, N] is column-major
 * C^T = B^T A^T, so B's buffer is cuBLASLt's first operand and A's its
 * second, neither transposed; batch dimensions are a strided batch, an
 * operand without them repeated (stride 0), but where b has none and a
 * is not stored transposed, a's batches are the rows of one matmul (a
 * model's x @ w over [B, S, D] is one of B S rows, as PyTorch's linear). f32 computes in f32 (no
 * TF32), f16 and bf16 accumulate in f32, as the CPU backend does.
 * rt_blas_set_workspace gives a handle a workspace (the session's, of
 * RT_BLAS_WORKSPACE bytes unless $SHARDC_BLAS_WORKSPACE says otherwise:
 * runtime/exec/cuda.c), which lets the heuristic choose algorithms that
 * need one (split-K), each deterministic; without one it chooses among
 * the others. A handle keeps
 * each distinct matmul's descriptors and the heuristic's algorithm from
 * its first call, so later calls (every step's) only queue the matmul.
 *
 * A matmul kernel of the plan (RT_KS_MATMUL) is the same call with an
 * epilogue: cuBLASLt computes D = act(A B + beta C + bias), so a residual
 * is C with beta 1 (D's layout; C may be D), a bias is
 * CUBLASLT_MATMUL_DESC_BIAS_POINTER with CUBLASLT_EPILOGUE_BIAS (its type
 * left at the default, D's: the plan's bias has the result's dtype), the
 * same vector for every batch, and relu or gelu (both tanh
 * approximations, cuBLASLt's and runtime/cpu/cpu.c's) is EPILOGUE_RELU or
 * _GELU, with _BIAS when there is one. A gelu whose operand is stored too
 * (RT_EPI_AUX) is EPILOGUE_GELU_AUX(_BIAS), the operand cuBLASLt's GELU
 * input matrix (EPILOGUE_AUX_POINTER, its leading dim N, a batch's stride
 * M N); where the heuristic has no algorithm for that, the matmul runs
 * twice, its sum into the operand's buffer, then with the gelu into the
 * result's (said once on stderr). A gelu_grad(x, the product)
 * (RT_EPI_DGELU) is EPILOGUE_DGELU, x the GELU input matrix, read; where
 * the heuristic has no algorithm for that, the matmul runs plain and the
 * caller applies the gradient (rt_blas_epilogue.dgelu_left; said once on
 * stderr). */
#ifndef SHARDC_RT_CUDA_BLAS_H
#define SHARDC_RT_CUDA_BLAS_H
#include "support/support.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/plan/plan.h"

typedef struct rt_blas rt_blas;

/* Whether the cuda backend runs this matmul: f32, f16 or bf16, and batch
 * dimensions that either agree or belong to one operand only. false with
 * the reason in err. */
bool rt_blas_supports(const rt_instr *in, su_status *err);

/* A cuBLASLt handle for the current context (cuBLASLt loaded at the first
 * call). NULL with a message ("cannot load libcublasLt.so: ...") on
 * failure. */
rt_blas *rt_blas_new(su_status *err);
void rt_blas_free(rt_blas *b);
/* Device memory of `bytes` at ws that b's matmuls may use as cuBLASLt's
 * workspace from now on (the heuristic is asked for algorithms within
 * it); before its first matmul, so that every one is planned with it.
 * The caller keeps it allocated while b lives. */
void rt_blas_set_workspace(rt_blas *b, rt_cu_ptr ws, size_t bytes);
/* The workspace of a session whose stage has matmuls: 32 MiB, NVIDIA's
 * recommendation for Hopper (4 MiB before it) and PyTorch's there. On an
 * H200 (bench/results/gpt2-nvidia-h200.md, run 4) GPT-2's f32 step took
 * 161.6 ms with it and 180.6 ms without (the weight gradients' matmuls, K
 * = 8192, at 0.48 to 0.84 of cuBLASLt given one); bf16's 21.75 and 21.6. */
enum { RT_BLAS_WORKSPACE = 32 << 20 };
/* The workspace $SHARDC_BLAS_WORKSPACE asks for, from its value (NULL when
 * unset): a number of bytes, or with KiB, MiB or GiB after it, at most 1
 * TiB; 0: none (*bytes 0); NULL or empty: RT_BLAS_WORKSPACE. The session
 * allocates it beside the arena (not in the plan's figures). false with
 * the message in err. */
bool rt_blas_workspace_bytes(const char *value, size_t *bytes, su_status *err);

/* A matmul's epilogue: RT_EPI_* bits and the operands they need. */
typedef struct rt_blas_epilogue {
    unsigned bits;
    rt_cu_ptr bias;         /* RT_EPI_BIAS: N elements of the result's dtype */
    rt_cu_ptr residual;     /* RT_EPI_RESIDUAL: of the result's type */
    rt_cu_ptr aux;          /* RT_EPI_AUX: the gelu's operand, stored; RT_EPI_DGELU:
                             * gelu_grad's x, read; of the result's type */
    bool dgelu_left;        /* set by rt_blas_matmul: RT_EPI_DGELU that cuBLASLt
                             * has no algorithm for; the result is then the
                             * plain product, which the caller makes gelu_grad(aux,
                             * result) in place */
} rt_blas_epilogue;

/* Queues matmul `in` (rt_blas_supports) on stream s: out = a @ b, then
 * the epilogue (NULL: none), device pointers; out overlaps none of the
 * others (but may be the residual). A matmul of parts (below) is three
 * calls, the residual added in the first, the bias and activation in the
 * last. false with the cuBLASLt call and its status in err. */
bool rt_blas_matmul(rt_blas *b, const rt_instr *in, rt_blas_epilogue *epi, rt_cu_ptr a,
                    rt_cu_ptr bm, rt_cu_ptr out, rt_cu_stream s, su_status *err);

/* A matmul of parts (RT_MM_PARTS, plan_ops.def): an f32 matmul from bf16
 * parts, about f32's precision on bf16 tensor cores, as rt_blas_matmul
 * queues it. Each f32 x of a and b is three bf16 parts, h = bf16(x), m =
 * bf16(x - h), l = bf16(x - h - m) (each difference exact in f32), and x =
 * h + m + l exactly where |x| >= 2^-100 (l is then a normal bf16 of x's
 * last 8 bits; below, l loses some). The product of a and b is then the six
 * products of parts whose ranks (h 0, m 1, l 2) sum to at most 2, as three
 * cuBLASLt calls of bf16 operands and an f32 result, each adding to the
 * last one's, smallest first:
 *   a[:, 0:3K] (h m l) @ b[0:3K] (l m h)    ranks 2: hl + mm + lh
 *   a[:, 0:2K] (h m)   @ b[K:3K] (m h)      ranks 1: hm + mh
 *   a[:, 0:K]  (h)     @ b[2K:3K] (h)       rank 0: hh, with the epilogue
 * Each product of parts is exact in f32; the terms left out (ml, lm, ll)
 * are below 3 x 2^-24 of |a_ik b_kj| together, so the result is as near
 * a @ b as f32's own sums are (bench_cuda --x3 measures both), for 6 K bf16
 * products of tensor-core work where f32 had K on CUDA cores (which run
 * f32 some 15 times slower than bf16's tensor cores on an H100).
 *
 * Where h is not finite (x inf or NaN, or past bf16's largest, 3.39e38),
 * m and l are 0.
 * The parts are split3's (plan_ops.def), the kernel codegen/cuda_ops.c's
 * emit_split3 writes. A view of b's parts may start less than 256-byte
 * aligned (K not a multiple of 128): the heuristic is told its alignment,
 * so that it leaves out the algorithms that need more. */

#endif
