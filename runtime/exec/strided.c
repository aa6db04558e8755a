/* strided.c: box copies between strided layouts as contiguous runs
 * (strided.h). */
#include "runtime/exec/strided.h"

#include <stdlib.h>

void rt_row_major_strides(int rank, const int64_t *dim, int esize, int64_t *stride)
{
    int64_t s = esize;
    for (int d = rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= dim[d];
    }
}

int64_t rt_strided_offset(int rank, const int64_t *start, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = 0; d < rank; d++)
        off += start[d] * stride[d];
    return off;
}

int rt_copy_runs(int rank, const int64_t *count, int esize, const int64_t *dstride,
                 const int64_t *sstride, rt_run_copier copy, void *ctx)
{
    for (int d = 0; d < rank; d++)
        if (count[d] <= 0)
            return 0;
    /* the run: trailing dims whose strides continue it in both layouts */
    int64_t run = esize;
    int inner = rank;
    while (inner > 0 && (count[inner - 1] == 1 ||
                         (dstride[inner - 1] == run && sstride[inner - 1] == run))) {
        run *= count[inner - 1];
        inner--;
    }
    int64_t idx[RT_MAX_RANK] = {0};
    int64_t doff = 0, soff = 0;
    for (;;) {
        if (copy(ctx, doff, soff, run) != 0)
            return -1;
        int d = inner - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < count[d]) {
                doff += dstride[d];
                soff += sstride[d];
                break;
            }
            doff -= (count[d] - 1) * dstride[d];
            soff -= (count[d] - 1) * sstride[d];
            idx[d] = 0;
        }
        if (d < 0)
            return 0;
    }
}

bool rt_strides_disjoint(int rank, const int64_t *dim, int esize, const int64_t *stride)
{
    int order[RT_MAX_RANK], n = 0;
    for (int d = 0; d < rank; d++)
        if (dim[d] > 1)
            order[n++] = d;
    /* insertion sort by |stride|, innermost first */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && llabs(stride[order[j]]) < llabs(stride[order[j - 1]]); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t extent = esize; /* bytes the inner dims span */
    for (int i = 0; i < n; i++) {
        int64_t s = llabs(stride[order[i]]);
        if (s < extent)
            return false;
        extent += s * (dim[order[i]] - 1);
    }
    return true;
}
