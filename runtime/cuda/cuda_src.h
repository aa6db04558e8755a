/* cuda_src.h: CUDA C text that the compiler's kernels (codegen/cuda.c)
 * and the runtime's own kernels (runtime/exec/cuda.c) both compile, so
 * that each computes what the other does, bit for bit. */
#ifndef SHARDC_RT_CUDA_SRC_H
#define SHARDC_RT_CUDA_SRC_H

/* gelu's derivative, of the tanh approximation (runtime/cpu/cpu.c's
 * gelu_gradf, the same operations in the same order). */
#define RT_CUDA_GELU_GRAD_SRC                                                                  \
    "// d/dv of sh_gelu\n"                                                                     \
    "__device__ __forceinline__ float sh_gelu_grad(float v)\n"                                 \
    "{\n"                                                                                      \
    "    const float c = 0.7978845608028654f;\n"                                               \
    "    float th = tanhf(c * (v + 0.044715f * v * v * v));\n"                                 \
    "    return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * c * (1.0f + 0.134145f * "   \
    "v * v);\n"                                                                                \
    "}\n"

/* gelu_grad in place, y = y gelu'(x) over n elements of bf16
 * (sh_dgelu_bf16) or f16 (sh_dgelu_f16), each op in f32 and the product
 * rounded once, as the compiler's kernels and the CPU backend compute it:
 * what runtime/exec/cuda.c runs after a matmul whose DGELU epilogue
 * cuBLASLt has no algorithm for, a thread an element, grid-striding. */
#define RT_CUDA_DGELU_SRC                                                                      \
    "#include <cuda_bf16.h>\n"                                                                 \
    "#include <cuda_fp16.h>\n" RT_CUDA_GELU_GRAD_SRC                                           \
    "#define DGELU(name, T, load, store) \\\n"                                                  \
    "    extern \"C\" __global__ void name(const T *__restrict__ x, T *y, long long n) \\\n"    \
    "    { \\\n"                                                                                \
    "        for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; \\\n"   \
    "             e += (long long)gridDim.x * blockDim.x) \\\n"                                  \
    "            y[e] = store(load(y[e]) * sh_gelu_grad(load(x[e]))); \\\n"                     \
    "    }\n"                                                                                     \
    "DGELU(sh_dgelu_bf16, __nv_bfloat16, __bfloat162float, __float2bfloat16_rn)\n"               \
    "DGELU(sh_dgelu_f16, __half, __half2float, __float2half_rn)\n"

#endif
