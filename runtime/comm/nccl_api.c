/* nccl_api.c: libnccl.so.2 loaded at run time (nccl_api.h): the entry
 * points resolved by name with dlsym into one table, the version checked,
 * and the checks and messages of the NCCL family. */
#include "runtime/comm/nccl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LIBNCCL "libnccl.so.2"
#define LIBCUDA "libcuda.so.1"

static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
#define E(member) {"nccl" #member, offsetof(rt_nccl_api, member)}
    E(GetVersion),        E(GetUniqueId),   E(CommInitRankConfig), E(CommSplit),
    E(CommGetAsyncError), E(CommAbort),     E(CommDestroy),        E(CommFinalize),
    E(GetErrorString),    E(GetLastError),  E(AllReduce),          E(ReduceScatter),
    E(AllGather),         E(Broadcast),     E(Send),               E(Recv),
    E(GroupStart),        E(GroupEnd),
#undef E
};

#ifdef SHARDC_HAVE_NCCL_H
/* With nccl.h: every entry point's type, every constant and the config's
 * layout (a prefix of ncclConfig_t) are NCCL's. */
#include <cuda.h>
#include <nccl.h>
#define SAME_TYPE(member, fn)                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((rt_nccl_api *)0)->member),         \
                                                __typeof__(&fn)),                               \
                   "rt_nccl_api." #member " is not the type of " #fn)
SAME_TYPE(GetVersion, ncclGetVersion);
SAME_TYPE(CommGetAsyncError, ncclCommGetAsyncError);
SAME_TYPE(CommAbort, ncclCommAbort);
SAME_TYPE(CommDestroy, ncclCommDestroy);
SAME_TYPE(CommFinalize, ncclCommFinalize);
SAME_TYPE(GetErrorString, ncclGetErrorString);
SAME_TYPE(GetLastError, ncclGetLastError);
SAME_TYPE(AllReduce, ncclAllReduce);
SAME_TYPE(ReduceScatter, ncclReduceScatter);
SAME_TYPE(AllGather, ncclAllGather);
SAME_TYPE(Broadcast, ncclBroadcast);
SAME_TYPE(Send, ncclSend);
SAME_TYPE(Recv, ncclRecv);
SAME_TYPE(GroupStart, ncclGroupStart);
SAME_TYPE(GroupEnd, ncclGroupEnd);
SAME_TYPE(EventQuery, cuEventQuery);
SAME_TYPE(DeviceGetPCIBusId, cuDeviceGetPCIBusId);
/* those that take the id or the config: the same but for rt_nccl_id (the
 * same layout) and rt_nccl_config (a prefix) */
_Static_assert(__builtin_types_compatible_p(__typeof__(&ncclGetUniqueId),
                                            ncclResult_t (*)(ncclUniqueId *)),
               "ncclGetUniqueId");
_Static_assert(__builtin_types_compatible_p(
                   __typeof__(&ncclCommInitRankConfig),
                   ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *)),
               "ncclCommInitRankConfig");
_Static_assert(__builtin_types_compatible_p(
                   __typeof__(&ncclCommSplit),
                   ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *)),
               "ncclCommSplit");
_Static_assert(sizeof(rt_nccl_id) == sizeof(ncclUniqueId), "rt_nccl_id is not ncclUniqueId");
#define SAME_FIELD(f)                                                                           \
    _Static_assert(offsetof(rt_nccl_config, f) == offsetof(ncclConfig_t, f) &&                  \
                       sizeof(((rt_nccl_config *)0)->f) == sizeof(((ncclConfig_t *)0)->f),      \
                   "rt_nccl_config." #f " is not ncclConfig_t's")
SAME_FIELD(size);
SAME_FIELD(magic);
SAME_FIELD(version);
SAME_FIELD(blocking);
SAME_FIELD(cgaClusterSize);
SAME_FIELD(minCTAs);
SAME_FIELD(maxCTAs);
SAME_FIELD(netName);
SAME_FIELD(splitShare);
#define SAME_VALUE(ours, theirs) _Static_assert((long long)(ours) == (long long)(theirs), #theirs)
SAME_VALUE(RT_NCCL_SUCCESS, ncclSuccess);
SAME_VALUE(RT_NCCL_IN_PROGRESS, ncclInProgress);
SAME_VALUE(RT_NCCL_SUM, ncclSum);
SAME_VALUE(RT_NCCL_MAX, ncclMax);
SAME_VALUE(RT_NCCL_UINT8, ncclUint8);
SAME_VALUE(RT_NCCL_INT32, ncclInt32);
SAME_VALUE(RT_NCCL_FLOAT16, ncclFloat16);
SAME_VALUE(RT_NCCL_FLOAT32, ncclFloat32);
SAME_VALUE(RT_NCCL_BFLOAT16, ncclBfloat16);
SAME_VALUE(RT_NCCL_UNDEF_INT, NCCL_CONFIG_UNDEF_INT);
SAME_VALUE(RT_NCCL_CONFIG_VERSION, NCCL_VERSION(2, 18, 0));
_Static_assert(NCCL_VERSION_CODE >= RT_NCCL_MIN_VERSION, "nccl.h older than 2.18");
#endif

const char *rt_nccl_describe(const rt_nccl_api *nc, rt_nccl_result r, char *buf, size_t n)
{
    static const char *const names[] = {"ncclSuccess",         "ncclUnhandledCudaError",
                                        "ncclSystemError",     "ncclInternalError",
                                        "ncclInvalidArgument", "ncclInvalidUsage",
                                        "ncclRemoteError",     "ncclInProgress"};
    const char *text = nc && nc->GetErrorString ? nc->GetErrorString(r) : NULL;
    if (r < sizeof names / sizeof *names)
        snprintf(buf, n, "%s (%s)", names[r], text ? text : "no description");
    else
        snprintf(buf, n, "NCCL error %u (%s)", r, text ? text : "no description");
    return buf;
}

bool rt_nccl_check(const rt_nccl_api *nc, rt_nccl_result r, const char *call, const char *file,
                   int line, su_status *err)
{
    if (r == RT_NCCL_SUCCESS || r == RT_NCCL_IN_PROGRESS)
        return true;
    char what[256];
    if (err) /* the entry point's name, not the call's arguments */
        su_fail(err, SU_GPU, "%s:%d: nccl%.*s: %s", file, line, (int)strcspn(call, "("), call,
                rt_nccl_describe(nc, r, what, sizeof what));
    return false;
}

int rt_nccl_open(const char *lib, rt_nccl_api *api, su_status *err)
{
    memset(api, 0, sizeof *api);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        su_fail(err, SU_GPU, "cannot load %s: %s", lib, why ? why : "dlopen failed");
        return -1;
    }
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        void *sym = dlsym(h, entries[i].symbol);
        if (!sym) {
            su_fail(err, SU_GPU, "%s has no symbol %s (NCCL older than 2.18?)", lib,
                    entries[i].symbol);
            dlclose(h);
            return -1;
        }
        memcpy((char *)api + entries[i].offset, &sym, sizeof sym);
    }
    int v = 0;
    if (api->GetVersion(&v) != RT_NCCL_SUCCESS || v < RT_NCCL_MIN_VERSION) {
        su_fail(err, SU_GPU, "%s is NCCL %d.%d.%d; the nccl communicator needs 2.18 or newer",
                lib, v / 10000, v / 100 % 100, v % 100);
        dlclose(h);
        return -1;
    }
    return 0;
}

/* The driver entries, from the libcuda.so.1 rt_cu_load opened. */
static int open_driver(rt_nccl_api *api, su_status *err)
{
    if (!rt_cu_load(NULL, err))
        return -1;
    void *h = dlopen(LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    void *q = h ? dlsym(h, "cuEventQuery") : NULL, *b = h ? dlsym(h, "cuDeviceGetPCIBusId") : NULL;
    if (!q || !b) {
        su_fail(err, SU_GPU, "%s has no symbol %s", LIBCUDA, q ? "cuDeviceGetPCIBusId"
                                                                : "cuEventQuery");
        return -1;
    }
    memcpy(&api->EventQuery, &q, sizeof q);
    memcpy(&api->DeviceGetPCIBusId, &b, sizeof b);
    return 0;
}

/* The outcome of the one load: immutable once made. */
static struct {
    rt_nccl_api api;
    bool ok;
    char msg[512];
} loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    su_status why;
    loaded.ok = rt_nccl_open(LIBNCCL, &loaded.api, &why) == 0 &&
                open_driver(&loaded.api, &why) == 0;
    if (!loaded.ok)
        snprintf(loaded.msg, sizeof loaded.msg, "no usable NCCL: %.400s", why.msg);
}

const rt_nccl_api *rt_nccl_load(su_status *err)
{
    pthread_once(&load_once, load);
    if (loaded.ok)
        return &loaded.api;
    if (err)
        su_fail(err, SU_GPU, "%s", loaded.msg);
    return NULL;
}
