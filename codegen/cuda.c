/* cuda.c: CUDA C for fused groups (cuda.h).
 *
 * A kernel's source is made in three parts: the body (the strategy's loops
 * around "tiles"), then the helpers the body used, then the header comment
 * and the signature. A tile is the code for VEC consecutive elements of a
 * domain starting at element index `e` (a variable the loops declare): the
 * loads of the values the group reads (vector loads where the value is
 * contiguous along the domain's last dim), the ops in f32 registers, and
 * the stores of the values the group stores. */
#include "cuda_gen.h"
#include "runtime/cuda/cuda_src.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- assembling the source ---- */

static const char *const helper_text[X_COUNT] = {
    [X_VEC] =
    "// VEC elements of T in one aligned load or store.\n"
    "template <typename T, int N> struct alignas(sizeof(T) * N) vec {\n"
    "    T v[N];\n"
    "};\n",
    [X_SIGMOID] =
    "__device__ __forceinline__ float sh_sigmoid(float v)\n"
    "{\n"
    "    if (v >= 0)\n"
    "        return 1.0f / (1.0f + expf(-v));\n"
    "    float e = expf(v); // never overflows for v < 0\n"
    "    return e / (1.0f + e);\n"
    "}\n",
    [X_GELU] =
    "// gelu, the tanh approximation\n"
    "__device__ __forceinline__ float sh_gelu(float v)\n"
    "{\n"
    "    const float c = 0.7978845608028654f; // sqrt(2 / pi)\n"
    "    return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));\n"
    "}\n",
    [X_GELU_GRAD] = RT_CUDA_GELU_GRAD_SRC,
    [X_SILU_GRAD] =
    "// d/dv of v * sigmoid(v)\n"
    "__device__ __forceinline__ float sh_silu_grad(float v)\n"
    "{\n"
    "    float s = sh_sigmoid(v);\n"
    "    return s * (1.0f + v * (1.0f - s));\n"
    "}\n",
    [X_TO_I32] =
    "// toward zero, saturating at the int32 range; nan is 0\n"
    "__device__ __forceinline__ int sh_f32_to_i32(float f)\n"
    "{\n"
    "    if (f != f)\n"
    "        return 0;\n"
    "    if (f >= 2147483648.0f)\n"
    "        return 2147483647;\n"
    "    if (f <= -2147483648.0f)\n"
    "        return -2147483647 - 1;\n"
    "    return (int)f;\n"
    "}\n",
    [X_I32_ODD] =
    "// v rounded to odd at f32's 24 bits, so that rounding it to f16 or\n"
    "// bf16 rounds v once\n"
    "__device__ __forceinline__ float sh_i32_to_f32_odd(int v)\n"
    "{\n"
    "    unsigned a = v < 0 ? 0u - (unsigned)v : (unsigned)v;\n"
    "    int s = 0;\n"
    "    while ((a >> s) >= (1u << 24))\n"
    "        s++;\n"
    "    unsigned keep = (a >> s) | ((a & ((1u << s) - 1)) != 0);\n"
    "    float f = ldexpf((float)keep, s);\n"
    "    return v < 0 ? -f : f;\n"
    "}\n",
    [X_F16] =
    "// v rounded to f16 (to nearest even), as an f32\n"
    "__device__ __forceinline__ float sh_f16(float v)\n"
    "{\n"
    "    return __half2float(__float2half_rn(v));\n"
    "}\n",
    [X_BF16] =
    "// v rounded to bf16 (to nearest even), as an f32\n"
    "__device__ __forceinline__ float sh_bf16(float v)\n"
    "{\n"
    "    return __bfloat162float(__float2bfloat16_rn(v));\n"
    "}\n",
    [X_AMAX] =
    "// amax's step: nan wins, as NumPy's\n"
    "__device__ __forceinline__ float sh_amax(float a, float b)\n"
    "{\n"
    "    return b > a || b != b ? b : a;\n"
    "}\n",
    [X_WARP] =
    "// Sum and max over the warp; every lane gets the same bits.\n"
    "__device__ __forceinline__ float sh_warp_sum(float v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ float sh_warp_max(float v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    return v;\n"
    "}\n",
    [X_BLOCK] =
    "// Sum, max and amax over the block: warps first, then the warps' values\n"
    "// (red: one float per warp) in warp order, so every thread gets the\n"
    "// same bits. Every thread of the block must call them.\n"
    "__device__ __forceinline__ float sh_block_sum(float v, float *red)\n"
    "{\n"
    "    v = sh_warp_sum(v);\n"
    "    __syncthreads(); // red may still be read by the previous reduction\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v += red[w];\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ float sh_block_max(float v, float *red)\n"
    "{\n"
    "    v = sh_warp_max(v);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v = fmaxf(v, red[w]);\n"
    "    return v;\n"
    "}\n",
    [X_BLOCK_AMAX] =
    "// amax over the warp, and over the block as sh_block_max\n"
    "__device__ __forceinline__ float sh_warp_amax(float v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v = sh_amax(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ float sh_block_amax(float v, float *red)\n"
    "{\n"
    "    v = sh_warp_amax(v);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v = sh_amax(v, red[w]);\n"
    "    return v;\n"
    "}\n",
    [X_ADAMW] =
    "// adamw's step-dependent coefficients, folded in double as the CPU\n"
    "// backend folds them: lr / (1 - beta1^t) and 1 / (1 - beta2^t)\n"
    "__device__ __forceinline__ void sh_adamw_coef(float t, double lr, double beta1, double beta2,\n"
    "                                              float *step, float *vscale)\n"
    "{\n"
    "    *step = (float)(lr / (1.0 - pow(beta1, (double)t)));\n"
    "    *vscale = (float)(1.0 / (1.0 - pow(beta2, (double)t)));\n"
    "}\n",
    [X_XENT_GRAD] =
    "// one element of softmax(row) - one_hot(label); a label outside the\n"
    "// row makes the row nan\n"
    "__device__ __forceinline__ float sh_xent_grad(float x, float mx, float scale, i64 col,\n"
    "                                              int label, i64 n)\n"
    "{\n"
    "    if (label < 0 || label >= n)\n"
    "        return SH_NAN;\n"
    "    float g = expf(x - mx) * scale;\n"
    "    return col == label ? g - 1.0f : g;\n"
    "}\n",
    [X_NAN] =
    "#define SH_NAN __int_as_float(0x7fffffff)\n",
    [X_ERROR] =
    "// The lowest index whose id (or label) is outside its range, for the\n"
    "// runtime to read after the step (runtime/cuda/cuda_step.h): 0 none, else\n"
    "// (0xffffffff - index) << 32 | the id's 32 bits, so atomicMax keeps the\n"
    "// lowest index, the one the CPU backend names.\n"
    "__device__ unsigned long long sh_error;\n"
    "__device__ __forceinline__ void sh_bad_id(i64 index, int id)\n"
    "{\n"
    "    atomicMax(&sh_error, (unsigned long long)(0xffffffffu - (unsigned int)index) << 32 |\n"
    "                             (unsigned int)id);\n"
    "}\n",
    [X_ONLINE] =
    "// Online softmax statistics: m the max seen, s the sum of exp(x - m).\n"
    "// A new max rescales s; x - x makes an infinite x's term NaN, as\n"
    "// exp(x - max) is in one pass; -inf adds nothing. The merge of two\n"
    "// pairs is symmetric, so every lane of a butterfly gets the same bits.\n"
    "__device__ __forceinline__ void sh_online(float &m, float &s, float x)\n"
    "{\n"
    "    if (x > m) {\n"
    "        s = s * expf(m - x) + expf(x - x);\n"
    "        m = x;\n"
    "    } else if (x != __int_as_float(0xff800000)) {\n"
    "        s += expf(x - m);\n"
    "    }\n"
    "}\n"
    "// The same for V elements at once: their max first, then the sum rescaled\n"
    "// once, and their exps independent of one another (not a chain through\n"
    "// m and s); -inf adds nothing, NaN makes s NaN, +inf too (inf - inf).\n"
    "template <int V>\n"
    "__device__ __forceinline__ void sh_online_vec(float &m, float &s, const float (&x)[V])\n"
    "{\n"
    "    float mx = x[0];\n"
    "    #pragma unroll\n"
    "    for (int q = 1; q < V; q++)\n"
    "        mx = fmaxf(mx, x[q]);\n"
    "    if (mx > m) {\n"
    "        s *= expf(m - mx); // 0 while m is -inf\n"
    "        m = mx;\n"
    "    }\n"
    "    float t = 0.0f;\n"
    "    #pragma unroll\n"
    "    for (int q = 0; q < V; q++)\n"
    "        t += x[q] == __int_as_float(0xff800000) ? 0.0f : expf(x[q] - m);\n"
    "    s += t;\n"
    "}\n"
    "__device__ __forceinline__ void sh_online_merge(float &m, float &s, float m2, float s2)\n"
    "{\n"
    "    const float mx = fmaxf(m, m2);\n"
    "    if (mx == __int_as_float(0xff800000)) { // neither saw a finite x\n"
    "        s += s2;\n"
    "        return;\n"
    "    }\n"
    "    s = (m == mx ? s : s * expf(m - mx)) + (m2 == mx ? s2 : s2 * expf(m2 - mx));\n"
    "    m = mx;\n"
    "}\n"
    "// The pair over the warp, by a butterfly: every lane gets the same bits.\n"
    "__device__ __forceinline__ void sh_warp_online(float &m, float &s)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1) {\n"
    "        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);\n"
    "        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);\n"
    "        sh_online_merge(m, s, m2, s2);\n"
    "    }\n"
    "}\n"
    "// The pair over the block (red: two floats per warp), warps in order:\n"
    "// every thread gets the same bits. Every thread of the block calls it.\n"
    "__device__ __forceinline__ void sh_block_online(float &m, float &s, float *red)\n"
    "{\n"
    "    sh_warp_online(m, s);\n"
    "    const int nw = blockDim.x / 32;\n"
    "    __syncthreads(); // red may still be read by the previous row\n"
    "    if (threadIdx.x % 32 == 0) {\n"
    "        red[threadIdx.x / 32] = m;\n"
    "        red[nw + threadIdx.x / 32] = s;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    m = red[0];\n"
    "    s = red[nw];\n"
    "    for (int w = 1; w < nw; w++)\n"
    "        sh_online_merge(m, s, red[w], red[nw + w]);\n"
    "}\n",
    [X_PARTS] =
    "// One partial result per block (at most 1024 blocks), summed by the\n"
    "// block that finishes last, in block order, so the sum does not depend on\n"
    "// which block ends when; the count goes back to 0 for the next launch.\n"
    "// Thread 0 of every block calls sh_last_block once.\n"
    "__device__ float sh_part[1024];\n"
    "__device__ unsigned int sh_done;\n"
    "__device__ __forceinline__ bool sh_last_block(float v)\n"
    "{\n"
    "    sh_part[blockIdx.x] = v;\n"
    "    __threadfence();\n"
    "    if (atomicAdd(&sh_done, 1u) + 1 != gridDim.x)\n"
    "        return false;\n"
    "    __threadfence();\n"
    "    sh_done = 0;\n"
    "    return true;\n"
    "}\n"
    "__device__ __forceinline__ float sh_parts_sum(void)\n"
    "{\n"
    "    float acc = 0.0f;\n"
    "    for (unsigned int b = 0; b < gridDim.x; b++)\n"
    "        acc += ((volatile float *)sh_part)[b];\n"
    "    return acc;\n"
    "}\n",
    [X_COLPARTS] =
    "// A column reduction whose rows are split over blocks: each block's 32\n"
    "// lanes' partial results (up to 8 a lane), and per group of columns how\n"
    "// many of its blocks are done; the group's last block sums the parts in\n"
    "// block order and sets the count back to 0 for the next launch.\n"
    "__device__ float sh_cpart[256 * 32 * 8];\n"
    "__device__ unsigned int sh_cdone[256];\n",
    [X_MMA] =
    "// Tensor cores through PTX (sm_80 on). ldmatrix loads 8 x 8 tiles of\n"
    "// 16-bit values from shared memory, lanes 0-7 giving the rows of the\n"
    "// first, 8-15 of the second, 16-31 of the third and fourth: lane l gets\n"
    "// row l / 4, columns 2 (l % 4) and the next (.trans: the transpose's).\n"
    "// mma.sync m16n8k16 adds A (16 x 16, row) times B (16 x 8, col) into a\n"
    "// lane's 4 f32 of the 16 x 8 sum: rows l / 4 and l / 4 + 8, columns\n"
    "// 2 (l % 4) and the next. The emulator of the tests defines SH_EMULATED\n"
    "// and its own of these.\n"
    "#ifndef SH_EMULATED\n"
    "__device__ __forceinline__ unsigned sh_smem(const void *p)\n"
    "{\n"
    "    return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n"
    "__device__ __forceinline__ void sh_ldsm2(unsigned &r0, unsigned &r1, const void *p)\n"
    "{\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\"\n"
    "                 : \"=r\"(r0), \"=r\"(r1) : \"r\"(sh_smem(p)) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void sh_ldsm2t(unsigned &r0, unsigned &r1, const void *p)\n"
    "{\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\"\n"
    "                 : \"=r\"(r0), \"=r\"(r1) : \"r\"(sh_smem(p)) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void sh_ldsm4(unsigned (&r)[4], const void *p)\n"
    "{\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3])\n"
    "                 : \"r\"(sh_smem(p)) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void sh_mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0,\n"
    "                                            unsigned b1)\n"
    "{\n"
    "    asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, \"\n"
    "        \"{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
    "        : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "__device__ __forceinline__ void sh_mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0,\n"
    "                                           unsigned b1)\n"
    "{\n"
    "    asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, \"\n"
    "        \"{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
    "        : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "// cp.async: 16 bytes from global memory to shared memory without\n"
    "// registers (zeros where full is false: the source is not read), in a\n"
    "// group per commit; sh_cp_wait_all waits for every group this thread\n"
    "// committed. Another thread's copies are seen after a barrier past its wait.\n"
    "__device__ __forceinline__ void sh_cp16(void *dst, const void *src, bool full)\n"
    "{\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\"\n"
    "                 :: \"r\"(sh_smem(dst)), \"l\"(src), \"r\"(full ? 16 : 0) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void sh_cp_commit(void)\n"
    "{\n"
    "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void sh_cp_wait_all(void)\n"
    "{\n"
    "    asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n"
    "}\n"
    "// The larger of a and b, NaN if either is (max.NaN); 2^x with a result\n"
    "// below 2^-126 flushed to 0 (ex2.approx.ftz, 2 ulp): one instruction each\n"
    "__device__ __forceinline__ float sh_max_nan(float a, float b)\n"
    "{\n"
    "    float r;\n"
    "    asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
    "    return r;\n"
    "}\n"
    "__device__ __forceinline__ float sh_exp2(float x)\n"
    "{\n"
    "    float r;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
    "    return r;\n"
    "}\n"
    "#endif\n"
    "// Two 16-bit values as one register of a fragment, lo the lower column\n"
    "__device__ __forceinline__ unsigned sh_pack2(unsigned short lo, unsigned short hi)\n"
    "{\n"
    "    return (unsigned)lo | (unsigned)hi << 16;\n"
    "}\n"
    "#ifdef __CUDA_BF16_TYPES_EXIST__\n"
    "// x and y (f32) as three bf16 parts each, packed in pairs: h = bf16(x), m =\n"
    "// bf16(x - h), l = bf16(x - h - m), each difference exact in f32\n"
    "__device__ __forceinline__ void sh_split3_2(float x, float y, unsigned &h, unsigned &m,\n"
    "                                            unsigned &l)\n"
    "{\n"
    "    const __nv_bfloat162 a = __floats2bfloat162_rn(x, y);\n"
    "    const float rx = x - __low2float(a), ry = y - __high2float(a);\n"
    "    const __nv_bfloat162 b = __floats2bfloat162_rn(rx, ry);\n"
    "    const __nv_bfloat162 c = __floats2bfloat162_rn(rx - __low2float(b), ry - __high2float(b));\n"
    "    h = sh_pack2(__bfloat16_as_ushort(a.x), __bfloat16_as_ushort(a.y));\n"
    "    m = sh_pack2(__bfloat16_as_ushort(b.x), __bfloat16_as_ushort(b.y));\n"
    "    l = sh_pack2(__bfloat16_as_ushort(c.x), __bfloat16_as_ushort(c.y));\n"
    "}\n"
    "// Eight f32 (a, then b) as three 16-byte rows of their bf16 parts\n"
    "__device__ __forceinline__ void sh_split3(float4 a, float4 b, uint4 &h, uint4 &m, uint4 &l)\n"
    "{\n"
    "    sh_split3_2(a.x, a.y, h.x, m.x, l.x);\n"
    "    sh_split3_2(a.z, a.w, h.y, m.y, l.y);\n"
    "    sh_split3_2(b.x, b.y, h.z, m.z, l.z);\n"
    "    sh_split3_2(b.z, b.w, h.w, m.w, l.w);\n"
    "}\n"
    "#endif\n",
};

/* Helpers in an order where each comes after those it uses. */
static const unsigned helper_order[] = {
    H_NAN, H_VEC, H_SIGMOID, H_GELU, H_GELU_GRAD, H_SILU_GRAD, H_TO_I32, H_I32_ODD,
    H_F16, H_BF16, H_AMAX, H_WARP, H_BLOCK, H_BLOCK_AMAX, H_ADAMW, H_XENT_GRAD, H_ERROR,
    H_ONLINE, H_PARTS, H_COLPARTS, H_MMA,
};

static int cg_helper_index(unsigned bit)
{
    int i = 0;
    while (HELPER(i) != bit)
        i++;
    return i;
}

void cg_put_prelude(gen *G, su_buf *b)
{
    /* a dtype stored, or only rounded to (a cast through bf16 in registers) */
    if (G->f16 || (G->helpers & H_F16))
        su_buf_puts(b, "#include <cuda_fp16.h>\n");
    if (G->bf16 || (G->helpers & H_BF16))
        su_buf_puts(b, "#include <cuda_bf16.h>\n");
    if (G->wmma)
        su_buf_puts(b, "#include <mma.h>\n");
    su_buf_puts(b, "\ntypedef long long i64;\n");
    for (size_t i = 0; i < sizeof helper_order / sizeof helper_order[0]; i++)
        if (G->helpers & helper_order[i])
            su_buf_printf(b, "\n%s", helper_text[cg_helper_index(helper_order[i])]);
    su_buf_putc(b, '\n');
}

/* A value as the IR prints it ("%h.1"); for the key, "%" and its C name. */
const char *cg_ir_name(gen *G, const ir_value *v)
{
    return G->canon ? cg_fmt(G, "%%%s", cg_cname(G, v)) : ir_names_get(G->pname, v->id);
}

void cg_put_op_line(gen *G, su_buf *b, const ir_op *op)
{
    su_buf_printf(b, "//   %s = %s", cg_ir_name(G, op->res[0]), ir_ops[op->code].name);
    for (int i = 0; i < op->nin; i++)
        su_buf_printf(b, "%s %s", i ? "," : "", cg_ir_name(G, op->in[i]));
    if (op->code == IR_SUM || op->code == IR_MEAN || op->code == IR_AMAX ||
        op->code == IR_SOFTMAX)
        su_buf_printf(b, " {axis = %lld}", (long long)op->a->axis);
    if (op->code == IR_CONST) /* the literal the kernel writes (cg_reg) */
        su_buf_printf(b, " %s", cg_reg(G, op->res[0]));
    if (G->f->stored[op->res[0]->id])
        su_buf_puts(b, "  (stored)");
    su_buf_putc(b, '\n');
}

void cg_put_shape(su_buf *b, const ir_type *t)
{
    su_buf_printf(b, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    su_buf_putc(b, ']');
}

/* The bytes of k's widest vector load or store (VEC elements of its
 * widest value), which the buffers' alignment must cover. */
static int vec_bytes(const gen *G, const cg_cuda_kernel *k)
{
    int size = 2;
    for (int i = 0; i < G->g->nin + G->g->nout; i++) {
        const ir_value *v = i < G->g->nin ? G->g->in[i] : G->g->out[i - G->g->nin];
        int s = v->type.dtype == IR_F16 || v->type.dtype == IR_BF16 ? 2 : 4;
        size = s > size ? s : size;
    }
    return k->vec * size;
}

/* put_header of a multi-tensor kernel: each part's domain and ops. */
static void put_multi_header(gen *G, const cg_cuda_kernel *k, su_buf *b)
{
    const pass_fgroup *w = G->g;
    su_buf_printf(b, "// %s: multi-tensor elementwise kernel over %d tensors\n", k->name,
                  w->nparts);
    for (int r = 0; r < w->nparts; r++) {
        su_buf_printf(b, "// part %d, over ", r);
        cg_put_shape(b, &IR_OP(G->m, w->parts[r].anchor)->res[0]->type);
        su_buf_putc(b, '\n');
        for (int i = 0; i < w->parts[r].nops; i++)
            cg_put_op_line(G, b, IR_OP(G->m, w->parts[r].ops[i]));
    }
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_printf(b, "// each part's elements in blocks of %d threads, %s, part after part; "
                     "blocks grid-stride\n",
                  k->block, k->vec > 4 ? "8 elements per thread where its last dim divides by 8 "
                                         "and it has 16-bit values, else 4 where it divides by 4"
                  : k->vec > 1 ? "4 elements per thread where its last dim divides by 4"
                               : "one element per thread");
    if (k->vec > 1)
        su_buf_printf(b, "// assumes %d-byte aligned buffers\n", vec_bytes(G, k));
}

/* put_header of a TOTAL kernel (passes/fuse.h): each part's sum and the
 * epilogue. */
static void put_total_header(gen *G, const cg_cuda_kernel *k, su_buf *b)
{
    const pass_fgroup *w = G->g;
    su_buf_printf(b, "// %s: multi-tensor sums to scalars over %d tensor%s\n", k->name,
                  w->nparts, w->nparts == 1 ? "" : "s");
    for (int r = 0; r < w->nparts; r++) {
        const pass_fgroup *p = &w->parts[r];
        su_buf_printf(b, "// part %d, summed over ", r);
        cg_put_shape(b, &IR_OP(G->m, p->reduce)->in[0]->type);
        su_buf_printf(b, " into %s\n", cg_ir_name(G, IR_OP(G->m, p->total)->res[0]));
        for (int i = 0; i < p->nops; i++)
            if (p->ops[i] != p->reduce)
                cg_put_op_line(G, b, IR_OP(G->m, p->ops[i]));
    }
    su_buf_puts(b, "// then, once:\n");
    for (int i = 0; i < w->nops; i++) {
        const ir_op *op = IR_OP(G->m, w->ops[i]);
        bool sum = op->code == IR_SUM, part = false;
        for (int r = 0; r < w->nparts && !part; r++)
            part = pass_fuse_part(&w->parts[r], w->ops[i]) != NULL;
        if (!sum && !part)
            cg_put_op_line(G, b, op);
    }
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_puts(b, "// each part's elements in chunks, a block a chunk (grid-stride), each chunk's "
                   "sum to sh_cpart; the last block to finish sums each part's chunks in order, "
                   "then runs the epilogue\n");
    if (k->vec > 1)
        su_buf_printf(b, "// assumes %d-byte aligned buffers\n", vec_bytes(G, k));
}

/* The comment at the top: what the kernel computes, and how to launch it. */
static void put_header(gen *G, const cg_cuda_kernel *k, su_buf *b)
{
    if (G->g->kind == PASS_FUSE_TOTAL) {
        put_total_header(G, k, b);
        return;
    }
    if (G->g->nparts) {
        put_multi_header(G, k, b);
        return;
    }
    su_buf_printf(b, "// %s: %s kernel over ", k->name, cg_cuda_strategy_name(k->strategy));
    cg_put_shape(b, G->red ? &G->red->in[0]->type : pass_fuse_domain(G->m, G->g));
    if (G->red) {
        rview v = cg_red_view(G->red);
        int64_t rows = v.outer * v.inner;
        su_buf_printf(b, " (%lld row%s of %lld%s)", (long long)rows, rows == 1 ? "" : "s",
                      (long long)v.n, k->strategy == CG_CUDA_COLUMN ? ", strided" : "");
    }
    su_buf_putc(b, '\n');
    for (int i = 0; i < G->g->nops; i++)
        cg_put_op_line(G, b, IR_OP(G->m, G->g->ops[i]));
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    switch (k->strategy) {
    case CG_CUDA_ELEMENTWISE:
        if (k->vec > 1)
            su_buf_printf(b, "// one thread per %d elements, grid-stride", k->vec);
        else
            su_buf_puts(b, "// one thread per element, grid-stride");
        break;
    case CG_CUDA_ROW:
        if (G->whole && G->whole->ncols)
            su_buf_printf(b, "// a warp per row, each block a run of rows whose column sums it "
                             "stores as a partial row; %d elements per load", k->vec);
        else
            su_buf_printf(b, "// %s, grid-stride over rows; %d elements per load",
                          k->warp_rows ? "a warp per row, 8 rows a block" : "one block per row",
                          k->vec);
        break;
    case CG_CUDA_COLUMN: /* single-pass ones take blocks (shared memory) */
        if (!k->shared_bytes && k->vec > 1)
            su_buf_printf(b, "// one thread per %d results, looping over the reduced axis", k->vec);
        else
            su_buf_puts(b, !k->shared_bytes ? "// one thread per result, looping over the reduced axis"
                       : G->helpers & H_COLPARTS
                           ? "// a block per 32 lanes' results and run of the reduced axis, "
                             "its warps splitting the run; the last block of the group sums "
                             "the runs' parts"
                           : "// a block per 32 lanes' results, its warps splitting the "
                             "reduced axis");
        if (k->shared_bytes && k->vec > 1)
            su_buf_printf(b, "; %d columns a lane", k->vec);
        break;
    default:
        su_buf_puts(b, "// one block; warp w takes rows w, w + warps, ...");
        break;
    }
    if (k->vec > 1)
        su_buf_printf(b, "; assumes %d-byte aligned buffers and the last dim divisible by %d",
                      vec_bytes(G, k), k->vec);
    su_buf_putc(b, '\n');
}

/* The pointer parameters: inputs (const) then stored values. */
static void put_signature(gen *G, cg_cuda_kernel *k, su_buf *b)
{
    bool in_place = false; /* a new param or state may take its old value's memory */
    for (int i = 0; i < G->m->updates.n; i++)
        for (int j = 0; j < G->g->nout; j++)
            in_place |= IR_UPDATE(G->m, i)->v == G->g->out[j];
    const char *restrict_ = in_place ? "" : "__restrict__ ";
    if (G->min_blocks)
        su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d, %d)\n%s(", k->block,
                      G->min_blocks, k->name);
    else
        su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", k->block,
                      k->name);
    for (int i = 0; i < k->nparams; i++) {
        const ir_value *v = k->params[i];
        su_buf_printf(b, "%s%s%s *%sp_%s", i ? ",\n    " : "\n    ", i < G->g->nin ? "const " : "",
                      cg_ctype(G, v->type.dtype), restrict_, cg_cname(G, v));
    }
    su_buf_puts(b, ")\n{\n");
}

static void assemble(gen *G, cg_cuda_kernel *k, const char *body)
{
    su_buf b;
    su_buf_init_in(&b, G->arena);
    su_buf sig;
    su_buf_init_in(&sig, G->arena);
    put_signature(G, k, &sig); /* first: it names the dtypes it needs */
    put_header(G, k, &b);
    cg_put_prelude(G, &b);
    su_buf_puts(&b, sig.s);
    su_buf_puts(&b, body);
    su_buf_puts(&b, "}\n");
    k->source = su_strdup(G->arena, b.s);
    su_buf_free(&sig);
    su_buf_free(&b);
}

static void gen_kernel(gen *G, cg_cuda_kernel *k)
{
    const pass_fgroup *g = G->g;
    if (pass_fuse_attn_two(g->kind)) {
        cg_gen_attn_pair(G, k, g);
        return;
    }
    k->name = G->canon ? "K" : g->name;
    k->group = g->id;
    k->op = -1;
    k->nparams = g->nin + g->nout;
    k->params = su_alloc(G->arena, (size_t)(k->nparams + 1) * sizeof *k->params);
    for (int i = 0; i < g->nin; i++)
        k->params[i] = g->in[i];
    for (int i = 0; i < g->nout; i++)
        k->params[g->nin + i] = g->out[i];
    for (int i = 0; i < k->nparams; i++)
        cg_cname(G, k->params[i]);
    su_buf body;
    su_buf_init_in(&body, G->arena);
    G->b = &body;
    G->indent = 1;
    G->whole = g;
    for (int r = 0; r < g->nparts; r++) { /* in part r, in_group means part r's */
        G->g = &g->parts[r];
        cg_emit_hoisted(G);
    }
    G->g = g;
    if (!g->nparts)
        cg_emit_hoisted(G);
    if (g->kind == PASS_FUSE_TOTAL) {
        cg_emit_total(G, k);
    } else if (g->nparts) {
        cg_emit_multi(G, k);
    } else if (!G->red) {
        cg_emit_elementwise(G, k);
    } else {
        rview v = cg_red_view(G->red);
        if (G->red->code == IR_XENT)
            cg_emit_xent(G, k, &v);
        else if (v.inner == 1)
            cg_emit_row(G, k, &v);
        else
            cg_emit_column(G, k, &v);
    }
    assemble(G, k, body.s ? body.s : "");
    su_buf_free(&body);
}

/* Keys seen by one generate call: an open-addressed set of strings. */
typedef struct keyset {
    const char **slot;
    size_t cap;         /* a power of two, over twice the keys */
} keyset;

uint64_t cg_cuda_key_hash(const char *s)
{
    return su_fnv_str(SU_FNV_BASIS, s);
}

/* The set's copy of key (of hash h), or NULL when it has none; *slot is
 * where a copy goes. */
static const char *seen_key(keyset *ks, const char *key, uint64_t h, const char ***slot)
{
    size_t i = (size_t)h & (ks->cap - 1);
    for (; ks->slot[i]; i = (i + 1) & (ks->cap - 1))
        if (!strcmp(ks->slot[i], key))
            return ks->slot[i];
    *slot = &ks->slot[i];
    return NULL;
}

/* Kernel k's key: the canonical kernel c's source, made in a scratch
 * arena, kept once per call (a pipeline's stage repeats each of its
 * kernels for every microbatch: keeping every copy held gigabytes).
 * Whether the key is known (made by an earlier kernel of the call, or
 * known says so); then k takes c's launch and, copied, its parameters. */
static bool key_of(cg_cuda *out, keyset *ks, cg_cuda_kernel *k, const cg_cuda_kernel *c,
                   bool (*known)(void *ctx, const char *key, uint64_t hash), void *ctx)
{
    uint64_t h = cg_cuda_key_hash(c->source);
    const char **slot = NULL, *key = ks->slot ? seen_key(ks, c->source, h, &slot) : NULL;
    bool was = key != NULL;
    if (!key) {
        key = su_strdup(&out->arena, c->source);
        if (slot)
            *slot = key;
    }
    was = was || (known && known(ctx, key, h));
    if (was) {
        *k = *c;
        k->source = NULL;
        k->params = su_alloc(&out->arena, (size_t)(c->nparams + 1) * sizeof *k->params);
        memcpy(k->params, c->params, (size_t)c->nparams * sizeof *k->params);
    }
    k->key = key;
    k->key_hash = h;
    return was;
}

/* ---- kernels the same as one made before ----
 *
 * A pipeline stage holds each task's ops once for every microbatch, and a
 * model's layers repeat: most kernels of a stage are the code of an earlier
 * one. Making a kernel's key (its whole source) only to find it known was
 * most of the plan writer's time at 128 microbatches. So a group (an
 * attention pair's too, whose parameters are its attn_dk's operands and
 * the two results: cg_attn_pair_params), or an op with a kernel of its
 * own, whose structure equals that of one made before in the same call
 * takes that one's key and launch without making its own:
 * its ops pairwise of one code, with the same attributes (their bytes) and
 * result types; each operand the same op's result within the group, or the
 * same place in the group's inputs, of one type; the same results stored
 * and updated in place. That is everything the generator reads of a group
 * (its ops, their values' types, pass_fusion's stored, the module's
 * updates) but the names, which a key has canonical. Equal bytes of the
 * attributes are a sufficient sameness (equal name pointers are equal
 * names), never a loose one. Debug builds (asserts on) make the key as well
 * and fail where it differs from the one taken. */

typedef struct same {
    const ir_module *m;
    const pass_fusion *f;
    bool *updated;      /* [next_id + 1]: a value an update writes */
    int *first;         /* [cap]: the first made kernel of a hash, or -1 */
    int *next;          /* [kernels]: the next made kernel of its hash, or -1 */
    uint64_t *hash;     /* [kernels]: each kernel's structure hash */
    int cap;            /* a power of two */
} same;

static uint64_t smix(uint64_t h, uint64_t x)
{
    return (h ^ x) * 0x100000001B3ull;
}

/* The ops of kernel k (a group's, or an op's own): *ops, their count. */
static int kernel_ops(const same *S, const cg_cuda_kernel *k, const int **ops)
{
    if (k->group >= 0) {
        *ops = S->f->groups[k->group].ops;
        return S->f->groups[k->group].nops;
    }
    *ops = &k->op;
    return 1;
}

/* Whether kernel k (its group or op set, not yet made) may take another's
 * code: a plain group or an attention pair (not a multi-tensor group or a
 * matmul) or an op's own. */
static bool may_share(const same *S, int group)
{
    if (group < 0)
        return true;
    const pass_fgroup *g = &S->f->groups[group];
    return g->nparts == 0 && g->kind != PASS_FUSE_MATMUL;
}

static uint64_t structure_hash(const same *S, const int *ops, int nops, uint64_t h)
{
    h = smix(h, (uint64_t)nops);
    for (int i = 0; i < nops; i++) {
        const ir_op *op = IR_OP(S->m, ops[i]);
        h = smix(h, (uint64_t)op->code << 16 | (uint64_t)op->nin << 8 | (uint64_t)op->nres);
        const ir_type *t = &op->res[0]->type;
        h = smix(h, (uint64_t)t->dtype << 8 | (uint64_t)t->rank);
        for (int d = 0; d < t->rank; d++)
            h = smix(h, (uint64_t)t->dim[d]);
    }
    return h;
}

/* Where value v stands for a kernel of ops[0..nops) with inputs in[0..nin):
 * an op's result within (position and result, from 1) or an input (from
 * -1 down); 0: neither. */
static long value_place(const ir_module *m, const int *ops, int nops, const ir_value **in,
                        int nin, const ir_value *v)
{
    for (int q = 0; q < nops; q++)
        if (IR_OP(m, ops[q]) == v->def)
            return 1 + (long)q * 256 + v->res;
    for (int j = 0; j < nin; j++)
        if (in[j] == v)
            return -1 - j;
    return 0;
}

/* Whether the group or op of a (not yet made) has the structure of made
 * kernel b's: see above. */
static bool same_structure(const same *S, const cg_cuda_kernel *a, const cg_cuda_kernel *b)
{
    if ((a->group < 0) != (b->group < 0))
        return false;
    const ir_module *m = S->m;
    const int *oa, *ob;
    int n = kernel_ops(S, a, &oa);
    if (n != kernel_ops(S, b, &ob))
        return false;
    const pass_fgroup *ga = a->group >= 0 ? &S->f->groups[a->group] : NULL;
    const pass_fgroup *gb = b->group >= 0 ? &S->f->groups[b->group] : NULL;
    if (ga) {
        if (ga->kind != gb->kind || ga->nin != gb->nin || ga->nout != gb->nout)
            return false;
        long ra = ga->reduce < 0 ? 0 : value_place(m, oa, n, NULL, 0, IR_OP(m, ga->reduce)->res[0]);
        long rb = gb->reduce < 0 ? 0 : value_place(m, ob, n, NULL, 0, IR_OP(m, gb->reduce)->res[0]);
        long aa = value_place(m, oa, n, NULL, 0, IR_OP(m, ga->anchor)->res[0]);
        long ab = value_place(m, ob, n, NULL, 0, IR_OP(m, gb->anchor)->res[0]);
        if (ra != rb || aa != ab)
            return false;
        for (int j = 0; j < ga->nin; j++)
            if (!ir_type_eq(&ga->in[j]->type, &gb->in[j]->type))
                return false;
        for (int j = 0; j < ga->nout; j++)
            if (value_place(m, oa, n, NULL, 0, ga->out[j]) !=
                    value_place(m, ob, n, NULL, 0, gb->out[j]) ||
                S->updated[ga->out[j]->id] != S->updated[gb->out[j]->id])
                return false;
    }
    for (int i = 0; i < n; i++) {
        const ir_op *x = IR_OP(m, oa[i]), *y = IR_OP(m, ob[i]);
        if (x->code != y->code || x->nin != y->nin || x->nres != y->nres ||
            x->phase != y->phase || (x->a != y->a && memcmp(x->a, y->a, sizeof *x->a) != 0))
            return false;
        for (int r = 0; r < x->nres; r++)
            if (!ir_type_eq(&x->res[r]->type, &y->res[r]->type) ||
                S->f->stored[x->res[r]->id] != S->f->stored[y->res[r]->id] ||
                S->updated[x->res[r]->id] != S->updated[y->res[r]->id])
                return false;
        for (int j = 0; j < x->nin; j++) {
            if (!ir_type_eq(&x->in[j]->type, &y->in[j]->type))
                return false;
            if (ga) {
                long pa = value_place(m, oa, n, ga->in, ga->nin, x->in[j]);
                if (pa == 0 || pa != value_place(m, ob, n, gb->in, gb->nin, y->in[j]))
                    return false;
            } else { /* an op's own: which operands are one value */
                for (int l = 0; l < j; l++)
                    if ((x->in[l] == x->in[j]) != (y->in[l] == y->in[j]))
                        return false;
            }
        }
    }
    return true;
}

static void same_init(same *S, const ir_module *m, const pass_fusion *f, int nkernels,
                      su_arena *a)
{
    S->m = m;
    S->f = f;
    S->updated = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *S->updated);
    memset(S->updated, 0, (size_t)(m->next_id + 1) * sizeof *S->updated);
    for (int i = 0; i < m->updates.n; i++)
        S->updated[IR_UPDATE(m, i)->v->id] = true;
    S->cap = 64;
    while (S->cap < 2 * nkernels)
        S->cap *= 2;
    S->first = su_alloc(a, (size_t)S->cap * sizeof *S->first);
    for (int i = 0; i < S->cap; i++)
        S->first[i] = -1;
    S->next = su_alloc(a, (size_t)(nkernels + 1) * sizeof *S->next);
    S->hash = su_alloc(a, (size_t)(nkernels + 1) * sizeof *S->hash);
}

/* The made kernel of out whose structure k's group or op has, or -1; its
 * hash into *h. */
static int same_find(const same *S, const cg_cuda *out, const cg_cuda_kernel *k, uint64_t *h)
{
    const int *ops;
    int n = kernel_ops(S, k, &ops);
    *h = structure_hash(S, ops, n, k->group >= 0 ? 0x9E3779B97F4A7C15ull : 0xC2B2AE3D27D4EB4Full);
    for (int i = S->first[*h & (uint64_t)(S->cap - 1)]; i >= 0; i = S->next[i])
        if (S->hash[i] == *h && same_structure(S, k, &out->k[i]))
            return i;
    return -1;
}

/* The made kernel whose code kernel k's group takes as a copy of its
 * twin's (pass_fusion.twin: a held stage's middle microbatch's copy of
 * microbatch 2's group, its ops the twin's ops copied in their places),
 * or -1 (no twin, its kernel not made yet, or an op's attributes not the
 * twin op's: an offset or tag stepped per microbatch). kof: each group's
 * kernel so far (-1: none). The copy then has its twin's structure: what
 * same_structure compares but the attributes and the results updated is
 * the twin's by the copy's making. */
static int twin_made(const same *S, const int *kof, const cg_cuda_kernel *k)
{
    const pass_fusion *f = S->f;
    int t = pass_fuse_twin(S->m, f, k->group);
    if (t < 0 || kof[t] < 0)
        return -1;
    const pass_fgroup *a = &f->groups[k->group], *b = &f->groups[t];
    for (int j = 0; j < a->nout; j++)
        if (S->updated[a->out[j]->id] != S->updated[b->out[j]->id])
            return -1;
    return kof[t];
}

/* Kernel i of out, made, is found by its structure from now on. */
static void same_add(same *S, int i, uint64_t h)
{
    S->hash[i] = h;
    S->next[i] = S->first[h & (uint64_t)(S->cap - 1)];
    S->first[h & (uint64_t)(S->cap - 1)] = i;
}

/* k (its group or op and parameters set) takes made kernel r's code and
 * launch, with no source. */
static void take_code(cg_cuda_kernel *k, const cg_cuda_kernel *r)
{
    k->source = NULL;
    k->key = r->key;
    k->key_hash = r->key_hash;
    k->strategy = r->strategy;
    k->grid = r->grid;
    k->block = r->block;
    k->shared_bytes = r->shared_bytes;
    k->vec = r->vec;
    k->warp_rows = r->warp_rows;
}

bool cg_cuda_generate(const ir_module *m, const pass_fusion *f, cg_cuda *out, su_buf *err)
{
    return cg_cuda_generate_known(m, f, out, err, NULL, NULL);
}

bool cg_cuda_generate_known(const ir_module *m, const pass_fusion *f, cg_cuda *out, su_buf *err,
                            bool (*known)(void *ctx, const char *key, uint64_t hash),
                            void *ctx)
{
    memset(out, 0, sizeof *out);
    su_arena_init(&out->arena, err->oom);
    su_arena_init(&out->scratch, err->oom);
    /* at most a kernel per group but the matmuls' and per op of its own
     * outside the groups (a pipeline stage's ops outnumber its kernels
     * some three to one) */
    int most = 1;
    for (int g = 0; g < f->ngroups; g++)
        most += f->groups[g].kind != PASS_FUSE_MATMUL;
    for (int i = 0; i < m->ops.n; i++)
        most += f->group_of[i] < 0 && cg_cuda_op_kernel(IR_OP(m, i));
    out->k = su_alloc(&out->arena, (size_t)most * sizeof *out->k);
    /* the printed names, made when a kernel's source first needs them (a
     * key names values by their order of use) */
    ir_names *pname = NULL;
    keyset ks = {.cap = 64};
    while (known && ks.cap < 2 * (size_t)most)
        ks.cap *= 2;
    if (known)
        ks.slot = su_alloc(&out->arena, ks.cap * sizeof *ks.slot);
    /* the key first (the kernel with canonical names, in a scratch arena);
     * the source with the program's names only when the key is new */
    su_arena *scr = &out->scratch; /* freed by cg_cuda_free after a failure too */
    same S = {0};
    int *kof = NULL; /* each group's kernel (twin_made) */
    if (known) {
        same_init(&S, m, f, most, &out->arena);
        if (f->twin) {
            kof = su_alloc(&out->arena, ((size_t)f->ngroups + 1) * sizeof *kof);
            for (int g = 0; g < f->ngroups; g++)
                kof[g] = -1;
        }
    }
    bool ok = true;
    int id = f->ngroups; /* the ops with kernels of their own, numbered on */
    for (int i = 0; i < f->ngroups + m->ops.n && ok; i++) {
        const pass_fgroup *g = i < f->ngroups ? &f->groups[i] : NULL;
        const ir_op *op = g ? NULL : IR_OP(m, i - f->ngroups);
        if (g && g->kind == PASS_FUSE_MATMUL)
            continue; /* cuBLASLt with its epilogue: no CUDA C */
        if (g && (g->nops == 0 || (g->kind == PASS_FUSE_REDUCE && g->reduce < 0))) {
            su_buf_printf(err, "internal error: fused group %s has no ops", g->name);
            ok = false;
            break;
        }
        if (op && (f->group_of[i - f->ngroups] >= 0 || !cg_cuda_op_kernel(op)))
            continue;
        const ir_op *red = g && g->kind == PASS_FUSE_REDUCE ? IR_OP(m, g->reduce) : NULL;
        if (g && g->has_sib && (!red || red->code != IR_SUM || cg_red_view(red).inner == 1)) {
            /* only the column kernels sum a sibling (fuse.c's sib_sum) */
            su_buf_printf(err, "internal error: fused group %s has a sibling sum but no column "
                               "reduction", g->name);
            ok = false;
            break;
        }
        if (g && g->ncols &&
            (!red || (red->code != IR_LAYERNORM_DX && red->code != IR_RMSNORM_DX) ||
             cg_red_view(red).n > PASS_NORM_COLS_MAX_WIDTH)) {
            /* only cg_emit_row's warp rows sum a norm's columns beside it */
            su_buf_printf(err, "internal error: fused group %s has column sums but no norm "
                               "gradient of warp rows", g->name);
            ok = false;
            break;
        }
        if (g && g->has_xgrad && (!red || red->code != IR_XENT)) {
            /* only cg_emit_xent computes a gradient beside its loss */
            su_buf_printf(err, "internal error: fused group %s has a cross_entropy gradient but "
                               "no cross_entropy", g->name);
            ok = false;
            break;
        }
        int at = out->nkernels++, kid = g ? i : id++;
        cg_cuda_kernel *k = &out->k[at];
        memset(k, 0, sizeof *k);
        k->group = g ? i : -1;
        k->op = g ? -1 : i - f->ngroups;
        uint64_t h = 0;
        int r = -1;
        if (known && may_share(&S, k->group)) {
            r = kof ? twin_made(&S, kof, k) : -1;
            out->ntwin += r >= 0;
            if (r < 0)
                r = same_find(&S, out, k, &h);
        }
        if (kof && g)
            kof[i] = at;
        if (r >= 0) { /* another's code: this one's name and values */
            out->nsame++;
            take_code(k, &out->k[r]);
            k->name = g ? g->name : cg_op_kernel_name(&out->arena, op, kid);
            if (g && pass_fuse_attn_two(g->kind))
                cg_attn_pair_params(m, g, k, &out->arena);
            else {
                k->nparams = g ? g->nin + g->nout : op->nin + 1;
                k->params = su_alloc(&out->arena, (size_t)(k->nparams + 1) * sizeof *k->params);
                for (int j = 0; g && j < g->nin; j++)
                    k->params[j] = g->in[j];
                for (int j = 0; g && j < g->nout; j++)
                    k->params[g->nin + j] = g->out[j];
                for (int j = 0; !g && j < op->nin; j++)
                    k->params[j] = op->in[j];
                if (!g)
                    k->params[op->nin] = op->res[0];
            }
#ifndef NDEBUG
            gen C = {.m = m, .f = f, .g = g, .pname = pname, .arena = scr, .canon = true};
            C.red = red;
            cg_cuda_kernel canon;
            memset(&canon, 0, sizeof canon);
            if (g)
                gen_kernel(&C, &canon);
            else
                cg_gen_op_kernel(&C, &canon, op, i - f->ngroups, kid);
            if (strcmp(canon.source, k->key) != 0 || canon.nparams != k->nparams ||
                memcmp(canon.params, k->params, (size_t)k->nparams * sizeof *k->params) ||
                canon.grid != k->grid || canon.block != k->block ||
                canon.shared_bytes != k->shared_bytes || canon.vec != k->vec ||
                canon.strategy != k->strategy) {
                su_buf_printf(err, "internal error: kernel %s taken as %s's code, which differs",
                              k->name, out->k[r].name);
                ok = false;
            }
            su_arena_free(scr);
#endif
            continue;
        }
        cg_cuda_kernel canon;
        gen C = {.m = m, .f = f, .g = g, .pname = pname, .arena = scr, .canon = true};
        C.red = red;
        memset(&canon, 0, sizeof canon);
        if (g)
            gen_kernel(&C, &canon);
        else
            cg_gen_op_kernel(&C, &canon, op, i - f->ngroups, kid);
        if (key_of(out, known ? &ks : &(keyset){0}, k, &canon, known, ctx)) {
            k->name = g ? g->name : cg_op_kernel_name(&out->arena, op, kid);
        } else {
            const char *key = k->key;
            uint64_t kh = k->key_hash;
            if (!pname) {
                pname = su_alloc(&out->arena, sizeof *pname);
                ir_names_init(pname, m, &out->arena);
            }
            gen G = {.m = m, .f = f, .g = g, .pname = pname, .arena = &out->arena};
            G.red = red;
            if (g)
                gen_kernel(&G, k);
            else
                cg_gen_op_kernel(&G, k, op, i - f->ngroups, kid);
            k->key = key;
            k->key_hash = kh;
        }
        if (known && may_share(&S, k->group)) /* same_find gave its hash */
            same_add(&S, at, h);
        su_arena_free(scr);
    }
    su_arena_free(scr);
    return ok;
}

void cg_cuda_free(cg_cuda *c)
{
    su_arena_free(&c->scratch);
    su_arena_free(&c->arena);
    memset(c, 0, sizeof *c);
}

const char *cg_cuda_strategy_name(cg_cuda_strategy s)
{
    switch (s) {
    case CG_CUDA_ELEMENTWISE: return "elementwise";
    case CG_CUDA_ROW: return "row";
    case CG_CUDA_COLUMN: return "column";
    default: return "single block";
    }
}

void cg_cuda_print(const cg_cuda *c, const char *targets, su_buf *out)
{
    su_buf_printf(out, "// shardc: %d CUDA kernel%s", c->nkernels, c->nkernels == 1 ? "" : "s");
    if (targets)
        su_buf_printf(out, " for %s", targets);
    su_buf_puts(out, "\n");
    for (int i = 0; i < c->nkernels; i++)
        su_buf_printf(out, "\n%s", c->k[i].source);
}
