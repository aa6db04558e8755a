/* nccl_api.h: NCCL, loaded at run time (DESIGN.md §5), as cuda_driver.h
 * loads the CUDA driver.
 *
 * libnccl.so.2 is opened with dlopen at the first use of the `nccl`
 * communicator, never linked, so every program starts on a machine without
 * NCCL. The entry points are resolved into a table; the types here are
 * NCCL's own (integer types for its enums, the same struct layouts),
 * declared without nccl.h; where nccl.h is found at build time
 * (SHARDC_HAVE_NCCL_H), nccl_api.c checks every entry point's type, every
 * constant and the config's layout against it at compile time.
 *
 * The config is the prefix of ncclConfig_t that NCCL 2.18 defined, with
 * version 2.18.0: NCCL copies min(size, its own size) bytes of it over its
 * defaults, so a newer library leaves its newer fields at their defaults,
 * and 2.18 is the oldest with ncclCommSplit, which the communicator needs.
 *
 * The table also holds the few driver entry points only the comm stream
 * and its watchdog use (cuEventQuery, cuDeviceGetPCIBusId), resolved from
 * the libcuda.so.1 that cuda_driver.c loaded. */
#ifndef SHARDC_RT_NCCL_API_H
#define SHARDC_RT_NCCL_API_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>

#include "runtime/cuda/cuda_driver.h"

typedef unsigned int rt_nccl_result;           /* ncclResult_t (gcc: an enum of
                                                * non-negative values is unsigned int) */
typedef unsigned int rt_nccl_dtype;            /* ncclDataType_t */
typedef unsigned int rt_nccl_op;               /* ncclRedOp_t */
typedef struct ncclComm *rt_nccl_comm;         /* ncclComm_t */
typedef struct rt_nccl_id {                    /* ncclUniqueId */
    char internal[128];
} rt_nccl_id;

/* ncclConfig_t as of NCCL 2.18 (a prefix of every later one). */
typedef struct rt_nccl_config {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
} rt_nccl_config;

/* nccl.h's values (checked there). */
enum {
    RT_NCCL_SUCCESS = 0,
    RT_NCCL_IN_PROGRESS = 7,
    RT_NCCL_SUM = 0,
    RT_NCCL_MAX = 2,
    RT_NCCL_UINT8 = 1,
    RT_NCCL_INT32 = 2,
    RT_NCCL_FLOAT16 = 6,
    RT_NCCL_FLOAT32 = 7,
    RT_NCCL_BFLOAT16 = 9,
    RT_NCCL_CONFIG_MAGIC = 0xcafebeef,
    RT_NCCL_CONFIG_VERSION = 21800, /* NCCL_VERSION(2, 18, 0) */
    RT_NCCL_MIN_VERSION = 21800,
};
#define RT_NCCL_UNDEF_INT (-2147483647 - 1) /* NCCL_CONFIG_UNDEF_INT: INT_MIN */

/* The entry points, by their nccl.h names without "nccl". */
typedef struct rt_nccl_api {
    rt_nccl_result (*GetVersion)(int *version);
    rt_nccl_result (*GetUniqueId)(rt_nccl_id *id);
    rt_nccl_result (*CommInitRankConfig)(rt_nccl_comm *comm, int nranks, rt_nccl_id id, int rank,
                                         rt_nccl_config *config);
    rt_nccl_result (*CommSplit)(rt_nccl_comm comm, int color, int key, rt_nccl_comm *newcomm,
                                rt_nccl_config *config);
    rt_nccl_result (*CommGetAsyncError)(rt_nccl_comm comm, rt_nccl_result *state);
    rt_nccl_result (*CommAbort)(rt_nccl_comm comm);
    rt_nccl_result (*CommDestroy)(rt_nccl_comm comm);
    rt_nccl_result (*CommFinalize)(rt_nccl_comm comm);
    const char *(*GetErrorString)(rt_nccl_result r);
    const char *(*GetLastError)(rt_nccl_comm comm);
    rt_nccl_result (*AllReduce)(const void *send, void *recv, size_t count, rt_nccl_dtype dtype,
                                rt_nccl_op op, rt_nccl_comm comm, rt_cu_stream s);
    rt_nccl_result (*ReduceScatter)(const void *send, void *recv, size_t recvcount,
                                    rt_nccl_dtype dtype, rt_nccl_op op, rt_nccl_comm comm,
                                    rt_cu_stream s);
    rt_nccl_result (*AllGather)(const void *send, void *recv, size_t sendcount,
                                rt_nccl_dtype dtype, rt_nccl_comm comm, rt_cu_stream s);
    rt_nccl_result (*Broadcast)(const void *send, void *recv, size_t count, rt_nccl_dtype dtype,
                                int root, rt_nccl_comm comm, rt_cu_stream s);
    rt_nccl_result (*Send)(const void *send, size_t count, rt_nccl_dtype dtype, int peer,
                           rt_nccl_comm comm, rt_cu_stream s);
    rt_nccl_result (*Recv)(void *recv, size_t count, rt_nccl_dtype dtype, int peer,
                           rt_nccl_comm comm, rt_cu_stream s);
    rt_nccl_result (*GroupStart)(void);
    rt_nccl_result (*GroupEnd)(void);
    /* the driver's, from libcuda.so.1 */
    rt_cu_result (*EventQuery)(rt_cu_event e);
    rt_cu_result (*DeviceGetPCIBusId)(char *bus, int len, rt_cu_device dev);
} rt_nccl_api;

/* Opens library `lib` (dlopen's name, "libnccl.so.2" for the process's
 * table) and fills *api; 0, or -1 with "cannot load libnccl.so.2: ...",
 * "libnccl.so.2 has no symbol ncclCommSplit (...)" or "libnccl.so.2 is
 * NCCL 2.17.1; the nccl communicator needs 2.18 or newer" in err. The
 * driver entries are left NULL. The library stays open. */
int rt_nccl_open(const char *lib, rt_nccl_api *api, su_status *err);

/* The process's table: libnccl.so.2 and the driver entries, loaded at the
 * first call (pthread_once; later calls return the same table or the same
 * failure). NULL with "no usable NCCL: ..." in err. Needs a usable driver
 * (rt_cu_load) for the driver entries. */
const rt_nccl_api *rt_nccl_load(su_status *err);

/* "ncclSystemError (unhandled system error ...)" for r, into buf. */
const char *rt_nccl_describe(const rt_nccl_api *nc, rt_nccl_result r, char *buf, size_t n);

/* The checking macro of the NCCL family (STYLE.md): false, with
 * "file:line: ncclCall(...): ncclXxx (text)" in err, when call returns
 * neither ncclSuccess nor ncclInProgress (a nonblocking communicator's
 * "issued, not yet done": the caller polls ncclCommGetAsyncError). */
#define RT_NCCL_CHECK(nc, call, err)                                                    \
    rt_nccl_check((nc), (nc)->call, #call, __FILE__, __LINE__, (err))
bool rt_nccl_check(const rt_nccl_api *nc, rt_nccl_result r, const char *call, const char *file,
                   int line, su_status *err);

#endif
