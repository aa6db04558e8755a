/* bench_cuda.h: what bench_cuda (issue 5, DESIGN.md §8) measures of a plan
 * and how it reports it, apart from the GPU: which kernels and matmuls it
 * times, the bytes and FLOPs each must move or do, the data it fills them
 * with, and the markdown report. bench_cuda_lib.c; tested without a GPU by
 * tests/unit/bench/test_bench_cuda.c. Prefix bc_.
 *
 * Conventions (printed in the report too):
 * - A kernel's bytes: each parameter read once (the first nin, each of its
 *   type's size) plus each stored value written once (the nout after
 *   them), from the kernel's parameter types; a broadcast operand counts
 *   its own size, not the size it is broadcast to.
 * - Its effective bandwidth: bytes / time; its fraction: that over the
 *   copy bandwidth, which counts a copy's read and write (2 x size / time).
 * - A matmul's FLOPs: 2 M N K per batch, the epilogue not counted.
 * - Kernels moving less than BC_SMALL_BYTES are reported apart and not
 *   held to the bandwidth goal; kernels that are not memory-bound by
 *   construction (single block, attention, attn_probs, embedding_grad)
 *   are timed and reported apart too. */
#ifndef SHARDC_BENCH_CUDA_H
#define SHARDC_BENCH_CUDA_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "passes/passes.h"
#include "runtime/plan/plan.h"

#define BC_SMALL_BYTES (1 << 20) /* under 1 MiB moved: not bandwidth-bound */
#define BC_BW_GOAL 0.85          /* of the copy bandwidth, per kernel */
#define BC_MM_GOAL 0.95          /* of cuBLAS's TFLOP/s, per matmul */
#define BC_ID_FREE 1024          /* ids no instruction bounds: [0, 1024) */

typedef enum {
    BC_BANDWIDTH, /* memory-bound, held to BC_BW_GOAL */
    BC_SMALL,     /* memory-bound but under BC_SMALL_BYTES */
    BC_OTHER,     /* not memory-bound by construction */
    BC_MATMUL,    /* a matmul kernel or a matmul instruction outside kernels */
    BC_NCLASSES
} bc_class;

/* A matmul as cuBLASLt runs it (runtime/cuda/cuda_blas.c): row-major
 * [batch] x [M, K] @ [K, N], an operand without batch dims repeated. */
typedef struct bc_mm {
    int64_t m, n, k, batch;
    int64_t stride_a, stride_b; /* elements between batches; 0: repeated */
    bool ta, tb;                /* a stored [K, M], b [N, K] (plan.h's RT_TRANS_*) */
} bc_mm;

/* One launch the benchmark times, standing for `count` of the plan's
 * kernels (or matmul instructions) that are the same launch. */
typedef struct bc_item {
    int32_t stage;
    int32_t kernel;  /* plan kernel; -1: a matmul instruction outside kernels */
    int32_t instr;   /* BC_MATMUL: the matmul instruction; else the anchor */
    int32_t count;   /* >= 1 */
    uint8_t cls;     /* bc_class */
    int64_t bytes;   /* bc_kernel_bytes (a matmul: its parameters too) */
    double flops;    /* BC_MATMUL: bc_matmul_flops */
    double us;       /* measured median, microseconds (the runtime's path) */
    double ref_us;   /* BC_MATMUL: cuBLAS called directly, microseconds */
    /* --x3, an f32 matmul (0 otherwise): as bf16 parts (cuda_blas.h's
     * rt_blas_matmul_x3), its operands split and its three calls, and the
     * calls alone, microseconds; and the largest error of 64 sampled
     * results, without the epilogue, of the f32 matmul and of the parts',
     * each against a double dot product, over sum |a_ik b_kj|, in units
     * of 2^-24 */
    double x3_us, x3_mm_us, err_f32, err_x3;
} bc_item;

/* Each parameter of k read once plus each stored value written once. */
int64_t bc_kernel_bytes(const rt_kernel *k);
/* The shape of matmul instruction mm as cuBLASLt runs it; false when mm is
 * not a matmul. */
bool bc_matmul_shape(const rt_instr *mm, bc_mm *s);
/* 2 M N K batch; 0 for an instruction that is not a matmul. */
double bc_matmul_flops(const rt_instr *mm);
/* The class of kernel k of plan p (bc_class). */
int bc_kernel_class(const rt_plan *p, const rt_kernel *k);
/* The launches to time, stage by stage: the kernels that are not matmuls
 * in plan order, then the matmuls (matmul kernels and matmul instructions
 * outside kernels) in instruction order; a launch the same as an earlier
 * one of its stage (same module and geometry and parameter types; for a
 * matmul, the same types and epilogue) counts there instead. *items is
 * malloc'd; returns their number, -1 when out of memory. */
int bc_select(const rt_plan *p, bc_item **items);
/* Valid ids for i32 buffer buf, a parameter of kernel k: [0, bound) with
 * bound the smallest of the rows of an embedding table (ids), the classes
 * of a cross_entropy or its grad (labels), the rows of an embedding_grad
 * result (ids) among the kernel's instructions reading it, through
 * copies (reshapes); BC_ID_FREE when none reads it so. */
int64_t bc_id_bound(const rt_plan *p, const rt_kernel *k, int32_t buf);
/* Fills dst, of type t, with data any kernel accepts: floats in [0.5, 1)
 * (exact in every float dtype: positive, so log, sqrt and a variance stay
 * finite), i32 in [0, bound); pseudo-random from seed. */
void bc_fill(void *dst, const rt_type *t, int64_t bound, uint64_t seed);
/* "bias+residual+gelu", "none". */
const char *bc_epilogue_name(unsigned bits, char *buf, size_t n);
/* "1.50 GiB", "1.00 MiB", "12.0 KiB", "4 B". */
const char *bc_bytes_str(int64_t bytes, char *buf, size_t n);

/* The machine and the copy bandwidth, for the report's head. */
typedef struct bc_machine {
    char gpu[256];         /* cuDeviceGetName */
    int cc;                /* compute capability, 90 */
    int sms;
    int64_t mem_bytes, l2_bytes;
    int cuda_driver;       /* cuDriverGetVersion: 12040 */
    char nvidia_driver[128]; /* /proc/driver/nvidia/version's, or "" */
    int nvrtc_major, nvrtc_minor;
    long cublaslt;         /* cublasLtGetVersion: 130001; 0 unknown */
    char date[64];
    int repeat;            /* timed launches per kernel (median) */
    int64_t flush_bytes;   /* read between launches to empty the L2 */
    int64_t copy_bytes;    /* the copy's size */
    double copy_gbs;       /* 2 x copy_bytes / median time, GB/s (1e9) */
} bc_machine;

/* The launches of one plan, measured. */
typedef struct bc_result {
    const char *model;     /* "examples/mlp.sh" */
    const char *mesh;      /* "2x2" */
    const rt_plan *plan;
    const bc_item *item;
    int nitems;
    bool x3;               /* --x3: f32 matmuls timed as bf16 parts too */
} bc_result;

/* How many launches meet each goal (distinct launches; plan_* count the
 * plan's kernels they stand for). */
typedef struct bc_tally {
    int bw, bw_ok, bw_plan, bw_plan_ok;
    int small, other;
    int mm, mm_ok, mm_plan, mm_plan_ok;
} bc_tally;

/* Adds the launches of r to t. */
void bc_tally_add(bc_tally *t, const bc_result *r, double copy_gbs);
/* The tables of one plan. */
void bc_report_plan(FILE *f, const bc_result *r, double copy_gbs);
/* The whole report: the machine, the conventions, every plan's tables and
 * the summary lines. */
void bc_report(FILE *f, const bc_machine *m, const bc_result *r, int nr);

/* ---- calibration (bench_cuda --calibrate FILE.json; docs/hw/README.md) ----
 *
 * The launch cost and the per-class efficiencies that make shardc's
 * estimate (pass_timeline: launch + max(FLOPs / (peak x efficiency), bytes
 * / (mem_bw x mem_eff))) of the measured launches what was measured, each
 * launch counted as often as the plans run it:
 * - launch_s: the median of the small memory-bound launches' times
 *   (BC_SMALL) past their bytes at mem_bw (launch_n of them); the fits
 *   below take it (or, without a small launch, pk's) as each launch's
 *   cost;
 * - mem_eff: the memory-bound launches (BC_BANDWIDTH): their bytes over
 *   mem_bw x their time past the launch cost; class_eff[c], the same of
 *   the launches of class c alone (bc_kernel_kclass; the profile's
 *   "mem_eff_by_class"): the memory-bound ones, and the others of
 *   BC_SMALL_BYTES or more that are not attention (embedding_grad, a
 *   kernel of one block), which the estimate times by their bytes too;
 * - matmul_eff: the matmuls, binned by FLOPs per half decade: per bin the
 *   fraction whose estimate is the bin's time (FLOPs / peak summed, over
 *   the time past the launch cost), at the bin's geometric mean FLOPs;
 *   the peak is the tensor cores' for an f16 or bf16 matmul;
 * - attention_eff: the attention kernels (forward, probabilities and the
 *   backward's), their FLOPs as the estimate counts them (bc_attention_flops)
 *   over the peak the estimate gives them (bc_peak: the tensor cores'
 *   for 16-bit ones on them, a sixth of it for f32 ones on them as bf16
 *   parts, else f32's), by time.
 * A class with no launch keeps 0 (not measured); every fraction is held
 * to (0, 1]. */
typedef struct bc_calibration {
    double mem_eff, attn_eff;
    int nmm;
    double mm[16][2];          /* [FLOPs, fraction], FLOPs increasing */
    int mem_n, mm_n, attn_n;   /* plan kernels each figure comes from */
    double class_eff[PASS_KC_COUNT];
    int class_n[PASS_KC_COUNT];
    double launch_s;           /* 0: not measured */
    int launch_n;
} bc_calibration;

/* The peaks the efficiencies are fractions of, and the launch cost
 * where none is measured (the base profile's). */
typedef struct bc_peaks {
    double tc_flops, f32_flops, mem_bw, launch_s;
} bc_peaks;

/* The peak an attention kernel's FLOPs are timed against, as the
 * estimate's (passes/timeline.c) */
typedef enum {
    BC_PEAK_F32,   /* f32_flops: f32 FMAs on the CUDA cores */
    BC_PEAK_TC,    /* tc_flops: f16 or bf16 on tensor cores (pass_attn_tensor_cores) */
    BC_PEAK_PARTS  /* tc_flops / 6: f32 as bf16 parts, each product as six (pass_attn_x3) */
} bc_peak;
/* The FLOPs of kernel k's attention instruction (attention, attn_probs,
 * attn_lse, attn_stats, attn_dq, attn_dk, attn_dv) as passes/cost.c
 * counts the op, or of an attention pair's two (attn_dv then attn_dk: as
 * pass_attn_pair_flops counts them), and in *peak the peak the estimate
 * times it on; 0 when k runs none. */
double bc_attention_flops(const rt_plan *p, const rt_kernel *k, bc_peak *peak);
/* The peak of kind `peak` on pk. */
double bc_peak_flops(const bc_peaks *pk, bc_peak peak);
/* Kernel k's class (passes.h: pass_kclass): the highest of its
 * instructions', classed by pass_op_kclass as the estimate classes the
 * ops of the group it was made from. */
pass_kclass bc_kernel_kclass(const rt_plan *p, const rt_kernel *k);
/* The efficiencies of the measured launches of r[nr]. */
void bc_calibrate(const bc_result *r, int nr, const bc_peaks *pk, bc_calibration *c);
/* A profile in the form of the files in docs/hw/ (shardc --hw FILE.json): base's
 * fields, with c's mem_eff, matmul_eff, attention_eff and mem_eff_by_class
 * where measured,
 * named name, and the command that measured them as "calibrated_by". */
void bc_write_profile(FILE *f, const pass_hw *base, const bc_calibration *c, const char *name,
                      const char *desc, const char *calibrated_by);

#endif
