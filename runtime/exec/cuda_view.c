/* cuda_view.c: a caller's tensors in CUDA memory (cuda.h): checking that
 * a bound pointer is device memory that holds the whole view, and the
 * synchronous copies between such a view and the host (a bf16 param's
 * master made from a param bound on the device; an output written into
 * the caller's device tensor). The ranks' own reads of a bound view are
 * device-to-device copies on their streams, in cuda.c. */
#include "runtime/exec/cuda.h"

#include "runtime/cuda/cuda_driver.h"

#include <stdint.h>

/* The lowest and highest byte offsets, from v->data, of v's elements
 * (the last element's bytes included). */
static void view_extent(const rt_view *v, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = rt_dtype_size(v->type.dtype);
    for (int d = 0; d < v->type.rank; d++) {
        int64_t span = (v->type.dim[d] - 1) * v->stride[d];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
}

int rt_cuda_view_check(const rt_view *v, const char *name, su_status *err)
{
    const rt_cu_api *cu = rt_cu_load(NULL, err);
    if (!cu)
        return -1;
    rt_cu_ptr p = (rt_cu_ptr)(uintptr_t)v->data, start = 0;
    unsigned int type = 0;
    int ordinal = -1;
    size_t size = 0;
    if (cu->PointerGetAttribute(&type, RT_CU_POINTER_ATTR_MEMORY_TYPE, p) != RT_CU_SUCCESS ||
        (type != RT_CU_MEMORYTYPE_DEVICE && type != RT_CU_MEMORYTYPE_UNIFIED))
        return su_fail(err, SU_USAGE,
                       "'%s' (at %p) is not CUDA device memory: the driver does not know the "
                       "pointer as an allocation on a device",
                       name, v->data);
    if (cu->PointerGetAttribute(&ordinal, RT_CU_POINTER_ATTR_DEVICE_ORDINAL, p) ==
            RT_CU_SUCCESS &&
        ordinal != v->device)
        return su_fail(err, SU_USAGE, "'%s' is said to be on CUDA device %d, but its memory is "
                                      "on device %d",
                       name, v->device, ordinal);
    if (cu->PointerGetAttribute(&start, RT_CU_POINTER_ATTR_RANGE_START, p) != RT_CU_SUCCESS ||
        cu->PointerGetAttribute(&size, RT_CU_POINTER_ATTR_RANGE_SIZE, p) != RT_CU_SUCCESS)
        return 0; /* the driver keeps no range for it (managed memory): trust the view */
    int64_t lo, hi;
    view_extent(v, &lo, &hi);
    if ((int64_t)(p - start) + lo < 0 || (int64_t)(p - start) + hi > (int64_t)size)
        return su_fail(err, SU_USAGE,
                       "'%s' reaches bytes %lld..%lld from its first element, outside its CUDA "
                       "allocation (%zu bytes, the element at byte %llu of it)",
                       name, (long long)lo, (long long)hi, size,
                       (unsigned long long)(p - start));
    return 0;
}

/* Device ordinal's primary context made current for a copy; the thread's
 * own context saved in *saved, for restore(). */
static int enter(const rt_cu_api *cu, int ordinal, rt_cu_ctx *saved, rt_cu_device *dev,
                 su_status *err)
{
    rt_cu_ctx ctx;
    if (!RT_CU_CHECK(cu, CtxGetCurrent(saved), err) ||
        !RT_CU_CHECK(cu, DeviceGet(dev, ordinal), err) ||
        !RT_CU_CHECK(cu, DevicePrimaryCtxRetain(&ctx, *dev), err))
        return -1;
    if (!RT_CU_CHECK(cu, CtxSetCurrent(ctx), err)) {
        cu->DevicePrimaryCtxRelease(*dev);
        return -1;
    }
    return 0;
}

static void restore(const rt_cu_api *cu, rt_cu_ctx saved, rt_cu_device dev)
{
    cu->CtxSetCurrent(saved);
    cu->DevicePrimaryCtxRelease(dev);
}

typedef struct host_copy {
    const rt_cu_api *cu;
    uint8_t *host;
    rt_cu_ptr dev;
    bool to_device;
    su_status *err;
} host_copy;

static int host_run(void *ctx, int64_t doff, int64_t soff, int64_t bytes)
{
    host_copy *c = ctx;
    const rt_cu_api *cu = c->cu;
    if (c->to_device)
        return RT_CU_CHECK(cu, MemcpyHtoD(c->dev + (rt_cu_ptr)doff, c->host + soff, (size_t)bytes),
                           c->err)
                   ? 0
                   : -1;
    return RT_CU_CHECK(cu, MemcpyDtoH(c->host + doff, c->dev + (rt_cu_ptr)soff, (size_t)bytes),
                       c->err)
               ? 0
               : -1;
}

/* The copies between the host layout (packed row-major of count) and the
 * device view v at start, in v's device's primary context. */
static int copy_view(const rt_view *v, const int64_t *start, const int64_t *count, uint8_t *host,
                     bool to_device, su_status *err)
{
    const rt_cu_api *cu = rt_cu_load(NULL, err);
    if (!cu)
        return -1;
    rt_cu_ctx saved;
    rt_cu_device dev;
    if (enter(cu, v->device, &saved, &dev, err) != 0)
        return -1;
    int rank = v->type.rank, esize = rt_dtype_size(v->type.dtype);
    int64_t hstride[RT_MAX_RANK];
    rt_row_major_strides(rank, count, esize, hstride);
    host_copy c = {cu, host,
                   (rt_cu_ptr)(uintptr_t)v->data + (rt_cu_ptr)rt_strided_offset(rank, start,
                                                                               v->stride),
                   to_device, err};
    int rc = to_device ? rt_copy_runs(rank, count, esize, v->stride, hstride, host_run, &c)
                       : rt_copy_runs(rank, count, esize, hstride, v->stride, host_run, &c);
    restore(cu, saved, dev);
    return rc;
}

int rt_cuda_view_to_host(const rt_view *v, const int64_t *start, const int64_t *count,
                         void *dst, su_status *err)
{
    return copy_view(v, start, count, dst, false, err);
}

int rt_cuda_host_to_view(const void *src, const rt_view *v, su_status *err)
{
    int64_t start[RT_MAX_RANK] = {0};
    return copy_view(v, start, v->type.dim, (uint8_t *)src, true, err);
}
