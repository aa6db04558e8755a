/* cuda_driver.c: libcuda.so.1 loaded at run time (cuda_driver.h): the
 * entry points resolved by name with dlsym into one table, cuInit(0), and
 * the checks and messages of the driver API family. */
#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LIBCUDA "libcuda.so.1"

/* Each entry point: the symbol (the `_v2` one where cuda.h maps the name
 * to it) and its place in the table. */
static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
#define E(member, symbol) {symbol, offsetof(rt_cu_api, member)}
    E(Init, "cuInit"),
    E(DriverGetVersion, "cuDriverGetVersion"),
    E(DeviceGetCount, "cuDeviceGetCount"),
    E(DeviceGet, "cuDeviceGet"),
    E(DeviceGetAttribute, "cuDeviceGetAttribute"),
    E(DeviceGetName, "cuDeviceGetName"),
    E(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    E(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    E(CtxSetCurrent, "cuCtxSetCurrent"),
    E(CtxGetCurrent, "cuCtxGetCurrent"),
    E(PointerGetAttribute, "cuPointerGetAttribute"),
    E(ModuleLoadDataEx, "cuModuleLoadDataEx"),
    E(ModuleUnload, "cuModuleUnload"),
    E(ModuleGetFunction, "cuModuleGetFunction"),
    E(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
    E(FuncSetAttribute, "cuFuncSetAttribute"),
    E(LaunchKernel, "cuLaunchKernel"),
    E(MemAlloc, "cuMemAlloc_v2"),
    E(MemGetInfo, "cuMemGetInfo_v2"),
    E(MemFree, "cuMemFree_v2"),
    E(MemAllocHost, "cuMemAllocHost_v2"),
    E(MemFreeHost, "cuMemFreeHost"),
    E(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    E(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    E(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    E(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    E(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    E(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    E(Memcpy2DAsync, "cuMemcpy2DAsync_v2"),
    E(MemsetD8, "cuMemsetD8_v2"),
    E(MemsetD8Async, "cuMemsetD8Async"),
    E(MemsetD16Async, "cuMemsetD16Async"),
    E(MemsetD32Async, "cuMemsetD32Async"),
    E(StreamCreate, "cuStreamCreate"),
    E(StreamDestroy, "cuStreamDestroy_v2"),
    E(StreamSynchronize, "cuStreamSynchronize"),
    E(EventCreate, "cuEventCreate"),
    E(EventDestroy, "cuEventDestroy_v2"),
    E(EventRecord, "cuEventRecord"),
    E(StreamWaitEvent, "cuStreamWaitEvent"),
    E(EventRecordWithFlags, "cuEventRecordWithFlags"),
    E(EventElapsedTime, "cuEventElapsedTime"), /* every driver has it; _v2 only 12.8's */
    E(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    E(StreamEndCapture, "cuStreamEndCapture"),
    E(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    E(GraphLaunch, "cuGraphLaunch"),
    E(GraphExecDestroy, "cuGraphExecDestroy"),
    E(GraphDestroy, "cuGraphDestroy"),
    E(GetErrorName, "cuGetErrorName"),
    E(GetErrorString, "cuGetErrorString"),
#undef E
};

#ifdef SHARDC_HAVE_NVRTC
/* With the CUDA toolkit's headers: every entry point's type, every
 * constant and the copy descriptor's layout are cuda.h's. */
#include <cuda.h>
#define SAME_TYPE(member, fn)                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((rt_cu_api *)0)->member),           \
                                                __typeof__(&fn)),                               \
                   "rt_cu_api." #member " is not the type of " #fn)
SAME_TYPE(Init, cuInit);
SAME_TYPE(DriverGetVersion, cuDriverGetVersion);
SAME_TYPE(DeviceGetCount, cuDeviceGetCount);
SAME_TYPE(DeviceGet, cuDeviceGet);
SAME_TYPE(DeviceGetAttribute, cuDeviceGetAttribute);
SAME_TYPE(DeviceGetName, cuDeviceGetName);
SAME_TYPE(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
SAME_TYPE(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
SAME_TYPE(CtxSetCurrent, cuCtxSetCurrent);
SAME_TYPE(CtxGetCurrent, cuCtxGetCurrent);
SAME_TYPE(PointerGetAttribute, cuPointerGetAttribute);
SAME_TYPE(ModuleLoadDataEx, cuModuleLoadDataEx);
SAME_TYPE(ModuleUnload, cuModuleUnload);
SAME_TYPE(ModuleGetFunction, cuModuleGetFunction);
SAME_TYPE(ModuleGetGlobal, cuModuleGetGlobal_v2);
SAME_TYPE(FuncSetAttribute, cuFuncSetAttribute);
SAME_TYPE(LaunchKernel, cuLaunchKernel);
SAME_TYPE(MemAlloc, cuMemAlloc_v2);
SAME_TYPE(MemGetInfo, cuMemGetInfo_v2);
SAME_TYPE(MemFree, cuMemFree_v2);
SAME_TYPE(MemAllocHost, cuMemAllocHost_v2);
SAME_TYPE(MemFreeHost, cuMemFreeHost);
SAME_TYPE(MemcpyHtoD, cuMemcpyHtoD_v2);
SAME_TYPE(MemcpyDtoH, cuMemcpyDtoH_v2);
SAME_TYPE(MemcpyDtoD, cuMemcpyDtoD_v2);
SAME_TYPE(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2);
SAME_TYPE(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2);
SAME_TYPE(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2);
SAME_TYPE(MemsetD8, cuMemsetD8_v2);
SAME_TYPE(MemsetD8Async, cuMemsetD8Async);
SAME_TYPE(MemsetD16Async, cuMemsetD16Async);
SAME_TYPE(MemsetD32Async, cuMemsetD32Async);
SAME_TYPE(StreamCreate, cuStreamCreate);
SAME_TYPE(StreamDestroy, cuStreamDestroy_v2);
SAME_TYPE(StreamSynchronize, cuStreamSynchronize);
SAME_TYPE(EventCreate, cuEventCreate);
SAME_TYPE(EventDestroy, cuEventDestroy_v2);
SAME_TYPE(EventRecord, cuEventRecord);
SAME_TYPE(StreamWaitEvent, cuStreamWaitEvent);
SAME_TYPE(EventRecordWithFlags, cuEventRecordWithFlags);
SAME_TYPE(EventElapsedTime, cuEventElapsedTime); /* the _v2 where cuda.h maps it: same type */
SAME_TYPE(StreamBeginCapture, cuStreamBeginCapture_v2);
SAME_TYPE(StreamEndCapture, cuStreamEndCapture);
SAME_TYPE(GraphInstantiate, cuGraphInstantiateWithFlags);
SAME_TYPE(GraphLaunch, cuGraphLaunch);
SAME_TYPE(GraphExecDestroy, cuGraphExecDestroy);
SAME_TYPE(GraphDestroy, cuGraphDestroy);
SAME_TYPE(GetErrorName, cuGetErrorName);
SAME_TYPE(GetErrorString, cuGetErrorString);
_Static_assert(__builtin_types_compatible_p(rt_cu_result (*)(const rt_cu_memcpy2d *,
                                                             rt_cu_stream),
                                            rt_cu_result (*)(const rt_cu_memcpy2d *,
                                                             CUstream)) &&
                   sizeof(rt_cu_memcpy2d) == sizeof(CUDA_MEMCPY2D) &&
                   offsetof(rt_cu_memcpy2d, srcDevice) == offsetof(CUDA_MEMCPY2D, srcDevice) &&
                   offsetof(rt_cu_memcpy2d, srcPitch) == offsetof(CUDA_MEMCPY2D, srcPitch) &&
                   offsetof(rt_cu_memcpy2d, dstMemoryType) ==
                       offsetof(CUDA_MEMCPY2D, dstMemoryType) &&
                   offsetof(rt_cu_memcpy2d, dstDevice) == offsetof(CUDA_MEMCPY2D, dstDevice) &&
                   offsetof(rt_cu_memcpy2d, dstPitch) == offsetof(CUDA_MEMCPY2D, dstPitch) &&
                   offsetof(rt_cu_memcpy2d, Height) == offsetof(CUDA_MEMCPY2D, Height),
               "rt_cu_memcpy2d is not CUDA_MEMCPY2D");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuMemcpy2DAsync_v2),
                                            CUresult (*)(const CUDA_MEMCPY2D *, CUstream)),
               "cuMemcpy2DAsync_v2");
#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs)
SAME_VALUE(RT_CU_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(RT_CU_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY);
SAME_VALUE(RT_CU_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME_VALUE(RT_CU_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME_VALUE(RT_CU_ATTR_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME_VALUE(RT_CU_ATTR_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
SAME_VALUE(RT_CU_ATTR_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME_VALUE(RT_CU_ATTR_CC_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME_VALUE(RT_CU_ATTR_CC_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME_VALUE(RT_CU_ATTR_MAX_SHARED_OPTIN, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME_VALUE(RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME_VALUE(RT_CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST);
SAME_VALUE(RT_CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE);
SAME_VALUE(RT_CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED);
SAME_VALUE(RT_CU_POINTER_ATTR_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
SAME_VALUE(RT_CU_POINTER_ATTR_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
SAME_VALUE(RT_CU_POINTER_ATTR_RANGE_START, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
SAME_VALUE(RT_CU_POINTER_ATTR_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
SAME_VALUE(RT_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(RT_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME_VALUE(RT_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME_VALUE(RT_CU_EVENT_RECORD_EXTERNAL, CU_EVENT_RECORD_EXTERNAL);
SAME_VALUE(RT_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
SAME_VALUE(RT_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME_VALUE(RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
#endif

/* The outcome of the one load: immutable once made. */
static struct {
    rt_cu_api api;
    rt_cu_status status;
    char msg[512];
} loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The errors met before the driver can describe them (a stub library's
 * cuGetErrorName fails too). */
static const struct {
    rt_cu_result r;
    const char *name, *text;
} early[] = {
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "the CUDA driver is a stub library, not a driver"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "the call needs a newer driver"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the driver and the kernel module differ in version"},
};

const char *rt_cu_describe(const rt_cu_api *cu, rt_cu_result r, char *buf, size_t n)
{
    const char *name = NULL, *text = NULL;
    if (!cu || !cu->GetErrorName || cu->GetErrorName(r, &name) != RT_CU_SUCCESS)
        name = NULL;
    if (!cu || !cu->GetErrorString || cu->GetErrorString(r, &text) != RT_CU_SUCCESS)
        text = NULL;
    for (size_t i = 0; (!name || !text) && i < sizeof early / sizeof *early; i++)
        if (early[i].r == r)
            name = early[i].name, text = early[i].text;
    if (name && text)
        snprintf(buf, n, "%s (%s)", name, text);
    else
        snprintf(buf, n, "CUDA error %u", r);
    return buf;
}

bool rt_cu_check(const rt_cu_api *cu, rt_cu_result r, const char *call, const char *file,
                 int line, su_status *err)
{
    if (r == RT_CU_SUCCESS)
        return true;
    char what[256];
    if (err) /* the entry point's name, not the call's arguments */
        su_fail(err, SU_GPU, "%s:%d: cu%.*s: %s", file, line, (int)strcspn(call, "("), call,
                rt_cu_describe(cu, r, what, sizeof what));
    return false;
}

/* dlopen, every symbol, cuInit(0); the outcome into `loaded`. */
static void load(void)
{
    void *lib = dlopen(LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    loaded.status = RT_CU_NO_DRIVER;
    if (!lib) {
        const char *why = dlerror();
        snprintf(loaded.msg, sizeof loaded.msg, "cannot load %s: %s", LIBCUDA,
                 why ? why : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        void *sym = dlsym(lib, entries[i].symbol);
        if (!sym) {
            snprintf(loaded.msg, sizeof loaded.msg, "%s has no symbol %s (a driver older than "
                     "the backend needs?)", LIBCUDA, entries[i].symbol);
            dlclose(lib);
            return;
        }
        memcpy((char *)&loaded.api + entries[i].offset, &sym, sizeof sym);
    }
    rt_cu_result r = loaded.api.Init(0);
    if (r != RT_CU_SUCCESS) {
        char what[256];
        rt_cu_describe(&loaded.api, r, what, sizeof what);
        loaded.status = r == RT_CU_ERROR_NO_DEVICE ? RT_CU_NO_DEVICE : RT_CU_NO_DRIVER;
        snprintf(loaded.msg, sizeof loaded.msg, "cuInit failed: %s", what);
        return; /* the library stays loaded: its error strings are still used */
    }
    loaded.status = RT_CU_OK;
}

const rt_cu_api *rt_cu_load(rt_cu_status *why, su_status *err)
{
    pthread_once(&load_once, load);
    if (why)
        *why = loaded.status;
    if (loaded.status == RT_CU_OK)
        return &loaded.api;
    if (err)
        su_fail(err, SU_GPU, "%s", loaded.msg);
    return NULL;
}

rt_cu_status rt_cu_probe(su_status *err)
{
    su_status st;
    rt_cu_status why;
    const rt_cu_api *cu = rt_cu_load(&why, &st);
    if (!cu) {
        su_fail(err, SU_GPU, "%s: %s",
                why == RT_CU_NO_DEVICE ? "no CUDA device" : "no usable CUDA driver", st.msg);
        return why;
    }
    int n = 0;
    if (!RT_CU_CHECK(cu, DeviceGetCount(&n), &st)) {
        su_fail(err, SU_GPU, "no usable CUDA driver: %s", st.msg);
        return RT_CU_NO_DRIVER;
    }
    if (n < 1) {
        su_fail(err, SU_GPU, "no CUDA device: the driver (%s) sees none", LIBCUDA);
        return RT_CU_NO_DEVICE;
    }
    return RT_CU_OK;
}

int rt_cu_copy_rows(const rt_cu_api *cu, rt_cu_stream s, rt_cu_ptr dst, size_t dx, size_t dpitch,
                    rt_cu_ptr src, size_t sx, size_t spitch, size_t width, size_t rows,
                    su_status *err)
{
    if (rows == 1)
        return RT_CU_CHECK(cu, MemcpyDtoDAsync(dst + dx, src + sx, width, s), err) ? 0 : -1;
    rt_cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = RT_CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcXInBytes = sx;
    c.srcPitch = spitch;
    c.dstDevice = dst;
    c.dstXInBytes = dx;
    c.dstPitch = dpitch;
    c.WidthInBytes = width;
    c.Height = rows;
    return RT_CU_CHECK(cu, Memcpy2DAsync(&c, s), err) ? 0 : -1;
}
