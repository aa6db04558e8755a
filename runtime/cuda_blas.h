/* cuda_blas.h: matmul on the GPU through cuBLASLt, loaded at run time.
 *
 * libcublasLt is opened with dlopen at the first matmul a session needs
 * (the names libcublasLt.so, then .so.13, .so.12, .so.11), never linked.
 * A matmul of the plan (NumPy semantics, row-major) becomes one
 * cublasLtMatmul: row-major C[M, N] = A[M, K] B[K, N] is column-major
 * C^T = B^T A^T, so B's buffer is cuBLASLt's first operand and A's its
 * second, neither transposed; batch dimensions are a strided batch, an
 * operand without them repeated (stride 0). f32 computes in f32 (no
 * TF32), f16 and bf16 accumulate in f32, as the CPU backend does. No
 * workspace: the rank's one arena is all its device memory. */
#ifndef SHARDC_RT_CUDA_BLAS_H
#define SHARDC_RT_CUDA_BLAS_H
#include "cuda_driver.h"
#include "plan.h"

typedef struct rt_blas rt_blas;

/* Whether the cuda backend runs this matmul: f32, f16 or bf16, and batch
 * dimensions that either agree or belong to one operand only. false with
 * the reason in err. */
bool rt_blas_supports(const rt_instr *in, char *err, size_t errlen);

/* A cuBLASLt handle for the current context (cuBLASLt loaded at the first
 * call). NULL with a message ("cannot load libcublasLt.so: ...") on
 * failure. */
rt_blas *rt_blas_new(char *err, size_t errlen);
void rt_blas_free(rt_blas *b);

/* Queues matmul `in` (rt_blas_supports) on stream s: out = a @ b, device
 * pointers. false with the cuBLASLt call and its status in err. */
bool rt_blas_matmul(rt_blas *b, const rt_instr *in, rt_cu_ptr a, rt_cu_ptr bm, rt_cu_ptr out,
                    rt_cu_stream s, char *err, size_t errlen);

#endif
