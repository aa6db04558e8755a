/* cuda_driver.h: the CUDA driver API, loaded at run time (DESIGN.md §5).
 *
 * libcuda.so.1 is opened with dlopen at its first use, never linked, so
 * every program starts on a machine without a driver or a GPU and only a
 * session on the cuda backend needs one. The entry points the backend
 * uses are resolved into a table (the `_v2` symbols where cuda.h maps a
 * name to one: cuMemAlloc is cuMemAlloc_v2, cuGraphInstantiate is
 * cuGraphInstantiateWithFlags; but cuEventElapsedTime, whose _v2 of CUDA
 * 12.8 has the same type, for older drivers), and cuInit(0) is called,
 * once per process. The types here are the driver's own (the same struct
 * tags, integer types for its enums), declared without cuda.h so that a
 * build without the CUDA toolkit compiles them; with the toolkit,
 * cuda_driver.c checks every entry point's type and every constant
 * against cuda.h at compile time.
 *
 * The loaded table is the one process-wide state of the runtime: it is
 * made once (pthread_once) and never changes, like the driver it stands
 * for. */
#ifndef SHARDC_RT_CUDA_DRIVER_H
#define SHARDC_RT_CUDA_DRIVER_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>

typedef unsigned int rt_cu_result;          /* CUresult */
typedef int rt_cu_device;                   /* CUdevice */
typedef unsigned long long rt_cu_ptr;       /* CUdeviceptr (64-bit) */
typedef struct CUctx_st *rt_cu_ctx;         /* CUcontext */
typedef struct CUmod_st *rt_cu_module;      /* CUmodule */
typedef struct CUfunc_st *rt_cu_func;       /* CUfunction */
typedef struct CUstream_st *rt_cu_stream;   /* CUstream */
typedef struct CUevent_st *rt_cu_event;     /* CUevent */
typedef struct CUgraph_st *rt_cu_graph;     /* CUgraph */
typedef struct CUgraphExec_st *rt_cu_graph_exec; /* CUgraphExec */

/* CUDA_MEMCPY2D: a copy of Height rows of WidthInBytes between pitched
 * memory (for the backend: device to device). */
typedef struct rt_cu_memcpy2d {
    size_t srcXInBytes, srcY;
    unsigned int srcMemoryType;             /* CUmemorytype */
    const void *srcHost;
    rt_cu_ptr srcDevice;
    struct CUarray_st *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    unsigned int dstMemoryType;
    void *dstHost;
    rt_cu_ptr dstDevice;
    struct CUarray_st *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} rt_cu_memcpy2d;

/* The constants used, with cuda.h's values (checked there). */
enum {
    RT_CU_SUCCESS = 0,
    RT_CU_ERROR_STUB_LIBRARY = 34,
    RT_CU_ERROR_NO_DEVICE = 100,
    RT_CU_ERROR_NOT_FOUND = 500,
    RT_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    RT_CU_ATTR_MAX_GRID_DIM_X = 5,
    RT_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    RT_CU_ATTR_CC_MAJOR = 75,
    RT_CU_ATTR_CC_MINOR = 76,
    RT_CU_ATTR_MAX_SHARED_OPTIN = 97,
    RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED = 8,
    RT_CU_MEMORYTYPE_HOST = 1,
    RT_CU_MEMORYTYPE_DEVICE = 2,
    RT_CU_MEMORYTYPE_UNIFIED = 4,
    RT_CU_POINTER_ATTR_MEMORY_TYPE = 2,
    RT_CU_POINTER_ATTR_DEVICE_ORDINAL = 9,
    RT_CU_POINTER_ATTR_RANGE_START = 11,
    RT_CU_POINTER_ATTR_RANGE_SIZE = 12,
    RT_CU_STREAM_NON_BLOCKING = 1,
    RT_CU_EVENT_DEFAULT = 0,
    RT_CU_EVENT_DISABLE_TIMING = 2,
    RT_CU_EVENT_RECORD_EXTERNAL = 1,        /* in a capture: an event record node */
    RT_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    RT_CU_JIT_ERROR_LOG_BUFFER = 5,
    RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* The entry points, by their cuda.h names without "cu". */
typedef struct rt_cu_api {
    rt_cu_result (*Init)(unsigned int flags);
    rt_cu_result (*DriverGetVersion)(int *version);
    rt_cu_result (*DeviceGetCount)(int *count);
    rt_cu_result (*DeviceGet)(rt_cu_device *dev, int ordinal);
    rt_cu_result (*DeviceGetAttribute)(int *value, unsigned int attr, rt_cu_device dev);
    rt_cu_result (*DeviceGetName)(char *name, int len, rt_cu_device dev);
    rt_cu_result (*DevicePrimaryCtxRetain)(rt_cu_ctx *ctx, rt_cu_device dev);
    rt_cu_result (*DevicePrimaryCtxRelease)(rt_cu_device dev);
    rt_cu_result (*CtxSetCurrent)(rt_cu_ctx ctx);
    rt_cu_result (*CtxGetCurrent)(rt_cu_ctx *ctx);
    rt_cu_result (*PointerGetAttribute)(void *data, unsigned int attr, rt_cu_ptr ptr);
    rt_cu_result (*ModuleLoadDataEx)(rt_cu_module *mod, const void *image, unsigned int n,
                                     unsigned int *options, void **values);
    rt_cu_result (*ModuleUnload)(rt_cu_module mod);
    rt_cu_result (*ModuleGetFunction)(rt_cu_func *f, rt_cu_module mod, const char *name);
    rt_cu_result (*ModuleGetGlobal)(rt_cu_ptr *p, size_t *bytes, rt_cu_module mod,
                                    const char *name);
    rt_cu_result (*FuncSetAttribute)(rt_cu_func f, unsigned int attr, int value);
    rt_cu_result (*LaunchKernel)(rt_cu_func f, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shared, rt_cu_stream stream, void **params,
                                 void **extra);
    rt_cu_result (*MemAlloc)(rt_cu_ptr *p, size_t bytes);
    rt_cu_result (*MemGetInfo)(size_t *avail, size_t *total);
    rt_cu_result (*MemFree)(rt_cu_ptr p);
    rt_cu_result (*MemAllocHost)(void **p, size_t bytes); /* page-locked */
    rt_cu_result (*MemFreeHost)(void *p);
    rt_cu_result (*MemcpyHtoD)(rt_cu_ptr dst, const void *src, size_t bytes);
    rt_cu_result (*MemcpyDtoH)(void *dst, rt_cu_ptr src, size_t bytes);
    rt_cu_result (*MemcpyDtoD)(rt_cu_ptr dst, rt_cu_ptr src, size_t bytes);
    rt_cu_result (*MemcpyDtoDAsync)(rt_cu_ptr dst, rt_cu_ptr src, size_t bytes, rt_cu_stream s);
    rt_cu_result (*MemcpyHtoDAsync)(rt_cu_ptr dst, const void *src, size_t bytes, rt_cu_stream s);
    rt_cu_result (*MemcpyDtoHAsync)(void *dst, rt_cu_ptr src, size_t bytes, rt_cu_stream s);
    rt_cu_result (*Memcpy2DAsync)(const rt_cu_memcpy2d *copy, rt_cu_stream s);
    rt_cu_result (*MemsetD8)(rt_cu_ptr dst, unsigned char value, size_t n);
    rt_cu_result (*MemsetD8Async)(rt_cu_ptr dst, unsigned char value, size_t n, rt_cu_stream s);
    rt_cu_result (*MemsetD16Async)(rt_cu_ptr dst, unsigned short value, size_t n,
                                   rt_cu_stream s);
    rt_cu_result (*MemsetD32Async)(rt_cu_ptr dst, unsigned int value, size_t n, rt_cu_stream s);
    rt_cu_result (*StreamCreate)(rt_cu_stream *s, unsigned int flags);
    rt_cu_result (*StreamDestroy)(rt_cu_stream s);
    rt_cu_result (*StreamSynchronize)(rt_cu_stream s);
    rt_cu_result (*EventCreate)(rt_cu_event *e, unsigned int flags);
    rt_cu_result (*EventDestroy)(rt_cu_event e);
    rt_cu_result (*EventRecord)(rt_cu_event e, rt_cu_stream s);
    rt_cu_result (*StreamWaitEvent)(rt_cu_stream s, rt_cu_event e, unsigned int flags);
    rt_cu_result (*EventRecordWithFlags)(rt_cu_event e, rt_cu_stream s, unsigned int flags);
    rt_cu_result (*EventElapsedTime)(float *ms, rt_cu_event start, rt_cu_event end);
    rt_cu_result (*StreamBeginCapture)(rt_cu_stream s, unsigned int mode);
    rt_cu_result (*StreamEndCapture)(rt_cu_stream s, rt_cu_graph *graph);
    rt_cu_result (*GraphInstantiate)(rt_cu_graph_exec *exec, rt_cu_graph graph,
                                     unsigned long long flags);
    rt_cu_result (*GraphLaunch)(rt_cu_graph_exec exec, rt_cu_stream s);
    rt_cu_result (*GraphExecDestroy)(rt_cu_graph_exec exec);
    rt_cu_result (*GraphDestroy)(rt_cu_graph graph);
    rt_cu_result (*GetErrorName)(rt_cu_result r, const char **name);
    rt_cu_result (*GetErrorString)(rt_cu_result r, const char **text);
} rt_cu_api;

/* Why the driver cannot be used: the library or a symbol is missing, or
 * cuInit fails (a stub library); or there is a driver but no device. */
typedef enum { RT_CU_OK, RT_CU_NO_DRIVER, RT_CU_NO_DEVICE } rt_cu_status;

/* The driver's table, loaded and initialised at the first call (later
 * calls return the same table, or the same failure). NULL with a message
 * in err when the driver cannot be used: "cannot load libcuda.so.1: ...",
 * "libcuda.so.1 has no symbol cuMemAlloc_v2", "cuInit failed:
 * CUDA_ERROR_STUB_LIBRARY (...)"; *why (may be NULL) says which kind. */
const rt_cu_api *rt_cu_load(rt_cu_status *why, su_status *err);

/* Whether this machine can run the cuda backend: a driver (rt_cu_load)
 * and at least one device. RT_CU_OK, or the kind of failure with a
 * message: "no usable CUDA driver: ..." or "no CUDA device: ...". */
rt_cu_status rt_cu_probe(su_status *err);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for r, into buf. */
const char *rt_cu_describe(const rt_cu_api *cu, rt_cu_result r, char *buf, size_t n);

/* The checking macro of the driver API family (STYLE.md): false, with
 * "file:line: cuCall: CUDA_ERROR_... (text)" in err, when call fails. */
#define RT_CU_CHECK(cu, call, err)                                                      \
    rt_cu_check((cu), (cu)->call, #call, __FILE__, __LINE__, (err))
bool rt_cu_check(const rt_cu_api *cu, rt_cu_result r, const char *call, const char *file,
                 int line, su_status *err);

/* Queues on stream s a device-to-device copy of rows rows of width bytes
 * from src (pitch spitch, from byte sx of each row) to dst (pitch dpitch,
 * at byte dx): one plain copy for a single row. 0, or -1 with err. */
int rt_cu_copy_rows(const rt_cu_api *cu, rt_cu_stream s, rt_cu_ptr dst, size_t dx, size_t dpitch,
                    rt_cu_ptr src, size_t sx, size_t spitch, size_t width, size_t rows,
                    su_status *err);

#endif
