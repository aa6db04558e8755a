/* strided.h: copying a box of a tensor laid out with arbitrary strides
 * (a caller's view: numpy, torch, DLPack) to or from another layout, as
 * the runs of bytes contiguous in both. The session's block copies (a
 * rank's block of a full row-major tensor) and its bound views, on the
 * host or on a GPU, all go through it; the copier says where the bytes
 * live. */
#ifndef SHARDC_RT_STRIDED_H
#define SHARDC_RT_STRIDED_H
#include "runtime/plan/plan.h"

#include <stdbool.h>
#include <stdint.h>

/* Where a view's bytes live. */
typedef enum { RT_MEM_HOST, RT_MEM_CUDA } rt_mem_kind;

/* A caller's tensor in its own memory (rt_session_bind_view): its type,
 * where it is, and the byte strides of its dims. */
typedef struct rt_view {
    rt_type type;
    rt_mem_kind mem;
    int device;                   /* RT_MEM_CUDA: the device ordinal */
    const void *data;             /* element (0, 0, ...) */
    int64_t stride[RT_MAX_RANK];  /* bytes from one index of dim d to the
                                   * next; any sign, 0 repeats */
} rt_view;

/* Copies one run: `bytes` bytes from src + soff to dst + doff (byte
 * offsets, signed: a view's strides may be negative). 0, or -1 (the
 * copier keeps its error). */
typedef int (*rt_run_copier)(void *ctx, int64_t doff, int64_t soff, int64_t bytes);

/* Calls copy for every run of a rank-dimensional box of count[d] elements
 * (esize bytes each) whose element (i0, i1, ...) is at sum(i_d *
 * sstride[d]) bytes from the source's first and sum(i_d * dstride[d])
 * from the destination's; trailing dims contiguous in both (and dims of
 * one element) merge into one run. Returns 0, or the first copier
 * failure's -1. An empty box copies nothing. */
int rt_copy_runs(int rank, const int64_t *count, int esize, const int64_t *dstride,
                 const int64_t *sstride, rt_run_copier copy, void *ctx);

/* The byte strides of a row-major tensor of shape dim (rank dims). */
void rt_row_major_strides(int rank, const int64_t *dim, int esize, int64_t *stride);

/* The byte offset of element start in a layout of those strides. */
int64_t rt_strided_offset(int rank, const int64_t *start, const int64_t *stride);

/* Whether a view of shape dim and byte strides stride never puts two
 * elements on overlapping bytes (so that it can be written): sorted by
 * stride, each dim's stride is at least the extent of the ones inside it.
 * Dims of one element do not count. */
bool rt_strides_disjoint(int rank, const int64_t *dim, int esize, const int64_t *stride);

#endif
