/* fake_driver.c: libcuda.so.1 for tests on machines without a GPU.
 *
 * The CUDA backend opens libcuda.so.1 with dlopen (runtime/cuda/
 * cuda_driver.c). Put first on LD_LIBRARY_PATH, this library stands in
 * for the driver: every entry point the backend uses, with the driver's
 * names and types, on a pretend device of compute capability 9.0. Device
 * memory is host memory, so copies and memsets move bytes; kernels and
 * cuBLASLt's matmuls (fake_cublaslt.c) run nothing, so what a plan
 * computes is not checked here (tests/gpu/run.sh does that on a GPU). What
 * is checked is the host side of the backend, as a strict driver would:
 *
 * - every copy, memset and 2-D copy lies inside one live allocation, and
 *   every handle passed is one made and not yet destroyed;
 * - a module is a cubin (an ELF file for the CUDA machine), or PTX whose
 *   target the device can compile (its sm_NN at most the device's, as
 *   the driver JITs it), and each function or global asked of it is in
 *   the cubin's symbol table, or declared by the PTX (.entry, .global);
 * - a launch's block has at most 1024 threads and its grid fits; dynamic
 *   shared memory above 48 KiB was allowed first with cuFuncSetAttribute,
 *   and never above the device's 227 KiB;
 * - while a stream is captured into a graph, nothing synchronises it, and
 *   the thread capturing it allocates no memory, loads no module and
 *   copies nothing synchronously (the calls thread-local mode forbids
 *   that thread; other threads, and other streams, go on as before); a
 *   stream that waits on an event recorded in the capture joins it (its
 *   work goes into the graph), a wait in a capture on an event recorded
 *   outside it is refused, and the capture ends only once every stream
 *   that joined it was waited for after its last captured work;
 * - a copy captured into a graph reads or writes host memory only inside
 *   a live page-locked allocation (cuMemAllocHost), as the driver refuses
 *   pageable memory in a capture, and that allocation is still live at
 *   each of the graph's launches.
 *
 * Work runs as it is queued, except what another library queues on a
 * stream (fake_nccl.c, through fakecuda_stream_enqueue): until that is
 * done, the stream's next copy, launch or sync waits, an event recorded
 * behind it is not done (cuEventQuery: CUDA_ERROR_NOT_READY), and
 * cuStreamWaitEvent on such an event waits.
 *
 * A breach returns the error a driver would (CUDA_ERROR_INVALID_VALUE,
 * _INVALID_HANDLE, _NOT_FOUND, _INVALID_IMAGE, _STREAM_CAPTURE_UNSUPPORTED)
 * and is described on stderr as "fake_driver: ...".
 *
 * The environment steers it:
 *   FAKECUDA_LOG=FILE     at exit, append every entry point's call count
 *                         ("cuLaunchKernel 1234"), then what is still
 *                         live ("live_allocations N", "live_bytes N",
 *                         "live_streams N", "live_events N",
 *                         "live_modules N", "live_graphs N",
 *                         "live_graph_execs N", "live_host_allocations N":
 *                         the page-locked ones; a module's globals and
 *                         functions go with it) and "errors N" (the
 *                         breaches above);
 *   FAKECUDA_FAIL=NAME:K[:CODE][,...]  the K-th call of entry point NAME
 *                         (counted from 1) fails with CODE (default 2,
 *                         CUDA_ERROR_OUT_OF_MEMORY, for cuMemAlloc_v2;
 *                         999, CUDA_ERROR_UNKNOWN, for others); the
 *                         names of cuBLASLt's and NCCL's entry points are
 *                         for fake_cublaslt.c and fake_nccl.c;
 *   FAKECUDA_MEMORY=BYTES the device's memory (default 80 GiB): an
 *                         allocation beyond it is out of memory;
 *   FAKECUDA_DEVICES=N    the devices (default 1; 0: CUDA_ERROR_NO_DEVICE
 *                         from cuInit);
 *   FAKECUDA_CC=NN        their compute capability (default 90: sm_90).
 */
#include "runtime/cuda/cuda_driver.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

enum {
    ERR_INVALID_VALUE = 1,
    ERR_OUT_OF_MEMORY = 2,
    ERR_NO_DEVICE = 100,
    ERR_INVALID_IMAGE = 200,
    ERR_INVALID_HANDLE = 400,
    ERR_NOT_FOUND = 500,
    ERR_NOT_READY = 600,
    ERR_CAPTURE_UNSUPPORTED = 900,
    ERR_CAPTURE_UNJOINED = 904,
    ERR_CAPTURE_ISOLATION = 906,
    ERR_UNKNOWN = 999,
    DEFAULT_SHARED = 48 * 1024,
    MAX_SHARED = 227 * 1024,
};

/* ---- entry points: counts and injected failures ---- */

#define ENTRIES(X)                                                                              \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)                         \
    X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain)                      \
    X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent) X(cuCtxGetCurrent)                       \
    X(cuPointerGetAttribute) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)    \
    X(cuModuleGetGlobal_v2) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuMemAlloc_v2)            \
    X(cuMemGetInfo_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2)                    \
    X(cuMemcpyDtoDAsync_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2)                     \
    X(cuMemcpy2DAsync_v2) X(cuMemsetD8_v2) X(cuMemsetD8Async) X(cuMemsetD16Async)               \
    X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize)          \
    X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord) X(cuStreamWaitEvent)                 \
    X(cuEventRecordWithFlags) X(cuEventElapsedTime) X(cuStreamBeginCapture_v2)                  \
    X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)                      \
    X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuGetErrorName) X(cuGetErrorString)           \
    X(cuEventQuery) X(cuDeviceGetPCIBusId) X(cuMemAllocHost_v2) X(cuMemFreeHost)

#define ENUM(name) E_##name,
enum { ENTRIES(ENUM) NENTRIES };
#undef ENUM
#define NAME(name) #name,
static const char *const entry_name[NENTRIES] = {ENTRIES(NAME)};
#undef NAME

static atomic_long calls[NENTRIES];
static atomic_long errors;

typedef struct failure {
    int entry;
    long call;
    rt_cu_result code;
} failure;
static failure fail[16];
static int nfail;
static size_t memory_limit = (size_t)80 << 30;
static int ndevices = 1;
static int device_cc = 90;

static void breach(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void breach(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fake_driver: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add(&errors, 1);
}

/* Counts a call of entry e; the error it is made to fail with, or 0. */
static rt_cu_result enter(int e)
{
    long k = atomic_fetch_add(&calls[e], 1) + 1;
    for (int i = 0; i < nfail; i++)
        if (fail[i].entry == e && fail[i].call == k)
            return fail[i].code;
    return RT_CU_SUCCESS;
}

#define ENTER(name)                                                                             \
    do {                                                                                        \
        rt_cu_result injected_ = enter(E_##name);                                               \
        if (injected_)                                                                          \
            return injected_;                                                                   \
    } while (0)

/* ---- what lives: allocations and handles ---- */

typedef enum { H_STREAM, H_EVENT, H_MODULE, H_FUNC, H_GRAPH, H_EXEC, NKINDS } kind;

/* A copy or memset captured into a graph: done at each of the graph's
 * launches, not when captured (as a driver's graph does it). */
typedef enum { R_DTOD, R_HTOD, R_DTOH, R_2D, R_SET, R_EVENT, R_HOST } rec_kind;
typedef struct rec {
    rec_kind kind;
    rt_cu_ptr dst, src;
    void *hdst;
    const void *hsrc;
    size_t n, size;                 /* bytes (a memset: elements of size bytes) */
    uint32_t value;
    rt_cu_memcpy2d c;
    struct handle *event;           /* R_EVENT: the event recorded */
    void (*fn)(void *);             /* R_HOST: another library's work (fake_nccl.c) */
    void *arg;
    struct rec *next;
} rec;
static const char *const kind_name[NKINDS] = {"streams", "events", "modules", "functions",
                                              "graphs", "graph_execs"};

typedef struct handle {
    kind kind;
    struct handle *next, *prev;     /* the list of live handles */
    /* a stream */
    int capturing;                  /* 1 while captured into a graph */
    pthread_t by;                   /* the thread capturing it */
    /* a captured stream: the stream whose capture it is in (itself where
     * it began, another where it joined by waiting on an event recorded in
     * that capture), its work captured so far, and how much of that the
     * origin waited for (a joined stream must be waited for whole before
     * the capture ends) */
    struct handle *origin;
    long nops, joined_upto;
    /* work queued on it by another library (fake_nccl.c): tickets issued
     * and done, in order; the stream's own copies, memsets, launches and
     * syncs wait until done catches up (fakecuda_stream_enqueue) */
    long issued, done;
    /* a capturing stream, a graph or an instantiated one: its copies and
     * memsets in order */
    rec *ops, **tail;
    /* a module: its cubin; a function: its module, dynamic shared bytes allowed */
    unsigned char *image;
    size_t image_len;
    struct handle *module;
    int max_shared;
    bool ptx;                       /* a module: PTX text, not a cubin */
    char name[128];
    /* an event: its flags, and when it was last recorded (a nanosecond
     * of the pretend clock, stamp(); 0: never) */
    unsigned flags;
    long stamp;
    /* an event recorded behind such work: complete once on->done reaches
     * ticket (NULL: complete when recorded) */
    struct handle *on;
    long ticket;
    /* an event recorded in a capture going on: the stream, and its work
     * captured up to and with the record (NULL: recorded outside one) */
    struct handle *cap;
    long cap_at;
} handle;

typedef struct alloc {
    unsigned char *p;
    size_t bytes;
    struct alloc *next;
    struct handle *owner;           /* a module's global: the module; else NULL */
    char name[64];
} alloc;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER; /* a stream's done moved */
static long last_stamp;            /* the pretend clock's last reading */
static handle *handles;
static alloc *allocs;
static alloc *pinned;               /* page-locked host memory (cuMemAllocHost) */
static size_t allocated;

/* The pretend clock (lock held), in nanoseconds: the host's monotonic
 * clock, moved on by at least one at each reading, so that no two records
 * share a time. A device's events measure real time, and shardrun --trace
 * places each step's events after the host's reading of its start, so
 * this clock must not run ahead of the host's: a count of records did,
 * and the next step's first events fell before the last ones of the step
 * before. */
static long stamp(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long now = (long)t.tv_sec * 1000000000L + t.tv_nsec;
    last_stamp = now > last_stamp ? now : last_stamp + 1;
    return last_stamp;
}

static void free_ops(rec *r)
{
    while (r) {
        rec *next = r->next;
        free(r);
        r = next;
    }
}

/* The live handles by address too (open addressing; TOMB a removed one),
 * so that live() and drop() take constant time: a run with --trace makes
 * two events an instruction, and a walk of the list at every call made a
 * long pipeline's run take minutes. Under lock. */
static handle **hset;
static size_t hcap, hused, hlive;   /* slots, those not empty, live handles */
#define TOMB ((handle *)1)

static size_t hslot(const void *h)
{
    uint64_t x = (uint64_t)(uintptr_t)h;
    x ^= x >> 29;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 24) & (hcap - 1);
}

/* The slot holding h, or -1. */
static long hfind(const void *h)
{
    if (!hcap)
        return -1;
    for (size_t i = hslot(h);; i = (i + 1) & (hcap - 1)) {
        if (!hset[i])
            return -1;
        if (hset[i] == h)
            return (long)i;
    }
}

static bool hadd(handle *h)
{
    if ((hused + 1) * 2 > hcap) { /* grow (or clear the tombstones) */
        size_t cap = 64;
        while (cap < 4 * (hlive + 1))
            cap *= 2;
        handle **old = hset;
        size_t ocap = hcap;
        hset = calloc(cap, sizeof *hset);
        if (!hset) {
            hset = old;
            return false;
        }
        hcap = cap;
        hused = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i] && old[i] != TOMB) {
                size_t j = hslot(old[i]);
                while (hset[j])
                    j = (j + 1) & (hcap - 1);
                hset[j] = old[i];
                hused++;
            }
        free(old);
    }
    size_t j = hslot(h);
    while (hset[j] && hset[j] != TOMB)
        j = (j + 1) & (hcap - 1);
    hused += !hset[j];
    hset[j] = h;
    hlive++;
    return true;
}

/* Takes x out of the list and the set. */
static void unlink_handle(handle *x)
{
    long i = hfind(x);
    if (i >= 0) {
        hset[i] = TOMB;
        hlive--;
    }
    if (x->prev)
        x->prev->next = x->next;
    else
        handles = x->next;
    if (x->next)
        x->next->prev = x->prev;
}

static handle *new_handle(kind k)
{
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->kind = k;
    h->tail = &h->ops;
    pthread_mutex_lock(&lock);
    if (!hadd(h)) {
        pthread_mutex_unlock(&lock);
        free(h);
        return NULL;
    }
    h->next = handles;
    if (handles)
        handles->prev = h;
    handles = h;
    pthread_mutex_unlock(&lock);
    return h;
}

/* Whether h is a live handle of kind k (NULL: the null stream, where allowed). */
static bool live(const void *h, kind k)
{
    pthread_mutex_lock(&lock);
    long i = h ? hfind(h) : -1;
    bool ok = i >= 0 && hset[i]->kind == k;
    pthread_mutex_unlock(&lock);
    return ok;
}

static bool drop(void *h, kind k)
{
    pthread_mutex_lock(&lock);
    long i = h ? hfind(h) : -1;
    handle *x = i >= 0 && hset[i]->kind == k ? hset[i] : NULL;
    if (x)
        unlink_handle(x);
    pthread_mutex_unlock(&lock);
    if (x) {
        free(x->image);
        free_ops(x->ops);
        free(x);
    }
    return x != NULL;
}

static bool stream_ok(rt_cu_stream s, const char *call)
{
    if (!s || live(s, H_STREAM))
        return true;
    breach("%s: stream %p is not a live stream", call, (void *)s);
    return false;
}

static bool capturing(rt_cu_stream s)
{
    pthread_mutex_lock(&lock);
    bool c = s && ((handle *)s)->capturing;
    pthread_mutex_unlock(&lock);
    return c;
}

/* Returns when the work other libraries queued on s is done, so that what
 * s does next comes after it (the null stream: nothing is queued there). */
static void wait_idle(rt_cu_stream s)
{
    if (!s)
        return;
    pthread_mutex_lock(&lock);
    handle *h = (handle *)s;
    while (h->done < h->issued)
        pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
}

/* Whether event e has completed (lock held). */
static bool event_done(const handle *e)
{
    return !e->on || e->on->done >= e->ticket;
}

/* For fake_nccl.c: a ticket for work of its own queued on stream s (done
 * by fakecuda_stream_complete, in order); what s does next waits for it,
 * an event recorded on s after it completes with it. -1 when s is not a
 * live stream or is being captured (the fake queues nothing in a graph). */
API long fakecuda_stream_enqueue(rt_cu_stream s)
{
    if (!s || !live(s, H_STREAM) || capturing(s))
        return -1;
    pthread_mutex_lock(&lock);
    long t = ++((handle *)s)->issued;
    pthread_mutex_unlock(&lock);
    return t;
}

/* For fake_nccl.c: the work of ticket t on s is done (tickets complete in
 * the order they were issued). */
API void fakecuda_stream_complete(rt_cu_stream s, long t)
{
    pthread_mutex_lock(&lock);
    handle *h = (handle *)s;
    if (t > h->done)
        h->done = t;
    pthread_cond_broadcast(&progress);
    pthread_mutex_unlock(&lock);
}

/* Whether this thread is capturing a stream (thread-local mode forbids it
 * the calls that may synchronise or allocate). */
static bool any_capture(void)
{
    pthread_mutex_lock(&lock);
    bool c = false;
    for (const handle *x = handles; x && !c; x = x->next)
        c = x->kind == H_STREAM && x->capturing && pthread_equal(x->by, pthread_self());
    pthread_mutex_unlock(&lock);
    return c;
}

/* The allocation holding [p, p + n), or NULL. */
static const alloc *holding(rt_cu_ptr p, size_t n)
{
    const unsigned char *q = (const unsigned char *)(uintptr_t)p;
    pthread_mutex_lock(&lock);
    const alloc *a = allocs;
    while (a && !(q >= a->p && q <= a->p + a->bytes && n <= (size_t)(a->p + a->bytes - q)))
        a = a->next;
    pthread_mutex_unlock(&lock);
    return a;
}

/* Whether host memory [p, p + n) lies inside one live page-locked allocation. */
static bool is_pinned(const void *p, size_t n)
{
    const unsigned char *q = p;
    pthread_mutex_lock(&lock);
    const alloc *a = pinned;
    while (a && !(q >= a->p && q <= a->p + a->bytes && n <= (size_t)(a->p + a->bytes - q)))
        a = a->next;
    pthread_mutex_unlock(&lock);
    return a != NULL;
}

/* A graph's copy to or from the host: its host side inside page-locked
 * memory (a breach otherwise, named by call). */
static bool host_side_pinned(const rec *r, const char *call)
{
    if (r->kind != R_HTOD && r->kind != R_DTOH)
        return true;
    const void *h = r->kind == R_HTOD ? r->hsrc : (const void *)r->hdst;
    if (r->n == 0 || is_pinned(h, r->n))
        return true;
    breach("%s: host memory [%p, +%zu) is not inside one live page-locked allocation "
           "(cuMemAllocHost): a graph copies only those",
           call, h, r->n);
    return false;
}

static bool in_device(rt_cu_ptr p, size_t n, const char *call, const char *what)
{
    if (n == 0 || holding(p, n))
        return true;
    breach("%s: %s [0x%llx, +%zu) is not inside one live allocation", call, what, p, n);
    return false;
}

/* For fake_cublaslt.c: whether [p, p + n) lies inside a live allocation. */
API int fakecuda_in_device(rt_cu_ptr p, size_t n)
{
    return n == 0 || holding(p, n) != NULL;
}

API void fakecuda_breach(const char *what)
{
    breach("%s", what);
}

/* For tests: the allocations live now, of device memory (a module's
 * globals not counted) and page-locked host memory. */
API long fakecuda_live_allocations(void)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (const alloc *a = allocs; a; a = a->next)
        n += !a->owner;
    for (const alloc *a = pinned; a; a = a->next)
        n++;
    pthread_mutex_unlock(&lock);
    return n;
}

/* For tests: the streams, events, modules, graphs and instantiated graphs
 * live now, together. */
API long fakecuda_live_handles(void)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (const handle *h = handles; h; h = h->next)
        n += h->kind != H_FUNC;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- set-up and the report at exit ---- */

/* For fake_cublaslt.c and fake_nccl.c too: text appended to FAKECUDA_LOG
 * by one write, so that the processes of an MPI job (and the libraries of
 * one process) sharing the file do not cut each other's lines. */
API void fakecuda_log(const char *text, size_t n)
{
    const char *path = getenv("FAKECUDA_LOG");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0)
        return;
    if (write(fd, text, n) != (ssize_t)n)
        fprintf(stderr, "fake_driver: cannot write FAKECUDA_LOG %s\n", path);
    close(fd);
}

static void report(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return;
    for (int i = 0; i < NENTRIES; i++)
        fprintf(f, "%s %ld\n", entry_name[i], atomic_load(&calls[i]));
    long nalloc = 0, nh[NKINDS] = {0};
    size_t bytes = 0;
    pthread_mutex_lock(&lock);
    for (const alloc *a = allocs; a; a = a->next)
        if (!a->owner) {
            nalloc++;
            bytes += a->bytes;
        }
    for (const handle *h = handles; h; h = h->next)
        nh[h->kind]++;
    long npinned = 0;
    for (const alloc *a = pinned; a; a = a->next)
        npinned++;
    pthread_mutex_unlock(&lock);
    fprintf(f, "live_allocations %ld\nlive_bytes %zu\n", nalloc, bytes);
    for (int k = 0; k < NKINDS; k++)
        if (k != H_FUNC) /* a module's functions go with it */
            fprintf(f, "live_%s %ld\n", kind_name[k], nh[k]);
    fprintf(f, "live_host_allocations %ld\n", npinned);
    fprintf(f, "errors %ld\n", atomic_load(&errors));
    if (fclose(f) == 0)
        fakecuda_log(text, n);
    free(text);
}

__attribute__((constructor)) static void setup(void)
{
    const char *s = getenv("FAKECUDA_MEMORY");
    if (s && *s)
        memory_limit = (size_t)strtoull(s, NULL, 10);
    s = getenv("FAKECUDA_DEVICES");
    if (s && *s)
        ndevices = atoi(s);
    s = getenv("FAKECUDA_CC");
    if (s && *s)
        device_cc = atoi(s);
    s = getenv("FAKECUDA_FAIL");
    while (s && *s && nfail < (int)(sizeof fail / sizeof *fail)) {
        const char *colon = strchr(s, ':');
        if (!colon)
            break;
        int e = -1;
        for (int i = 0; i < NENTRIES; i++)
            if (strlen(entry_name[i]) == (size_t)(colon - s) &&
                !strncmp(entry_name[i], s, (size_t)(colon - s)))
                e = i;
        char *end;
        long k = strtol(colon + 1, &end, 10);
        rt_cu_result code = e == E_cuMemAlloc_v2 ? ERR_OUT_OF_MEMORY : ERR_UNKNOWN;
        if (*end == ':')
            code = (rt_cu_result)strtoul(end + 1, &end, 10);
        if (e < 0 && (!strncmp(s, "cublasLt", 8) || !strncmp(s, "nccl", 4))) {
            /* fake_cublaslt.c's and fake_nccl.c's */
            s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL;
            continue;
        }
        if (e < 0 || k < 1) {
            fprintf(stderr, "fake_driver: FAKECUDA_FAIL: cannot read '%s'\n", s);
            exit(2);
        }
        fail[nfail++] = (failure){e, k, code};
        s = *end == ',' ? end + 1 : NULL;
    }
    atexit(report);
}

/* ---- the entry points ---- */

API rt_cu_result cuInit(unsigned int flags)
{
    ENTER(cuInit);
    return flags ? ERR_INVALID_VALUE : ndevices > 0 ? RT_CU_SUCCESS : ERR_NO_DEVICE;
}

API rt_cu_result cuDriverGetVersion(int *v)
{
    ENTER(cuDriverGetVersion);
    *v = 13000;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuDeviceGetCount(int *n)
{
    ENTER(cuDeviceGetCount);
    *n = ndevices;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuDeviceGet(rt_cu_device *d, int ordinal)
{
    ENTER(cuDeviceGet);
    if (ordinal < 0 || ordinal >= ndevices)
        return ERR_INVALID_VALUE;
    *d = ordinal;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuDeviceGetAttribute(int *v, unsigned int attr, rt_cu_device d)
{
    ENTER(cuDeviceGetAttribute);
    if (d < 0 || d >= ndevices)
        return ERR_INVALID_VALUE;
    switch (attr) {
    case RT_CU_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case RT_CU_ATTR_MAX_GRID_DIM_X: *v = 2147483647; break;
    case RT_CU_ATTR_MULTIPROCESSOR_COUNT: *v = 132; break;
    case RT_CU_ATTR_CC_MAJOR: *v = device_cc / 10; break;
    case RT_CU_ATTR_CC_MINOR: *v = device_cc % 10; break;
    case RT_CU_ATTR_MAX_SHARED_OPTIN: *v = MAX_SHARED; break;
    default: *v = 0; break;
    }
    return RT_CU_SUCCESS;
}

API rt_cu_result cuDeviceGetName(char *name, int len, rt_cu_device d)
{
    ENTER(cuDeviceGetName);
    if (d < 0 || d >= ndevices || len < 1)
        return ERR_INVALID_VALUE;
    snprintf(name, (size_t)len, "shardc fake device %d", d);
    return RT_CU_SUCCESS;
}

/* Device d's PCI bus id: bus d + 1, one device a bus. */
API rt_cu_result cuDeviceGetPCIBusId(char *bus, int len, rt_cu_device d)
{
    ENTER(cuDeviceGetPCIBusId);
    if (d < 0 || d >= ndevices || len < 13)
        return ERR_INVALID_VALUE;
    snprintf(bus, (size_t)len, "0000:%02x:00.0", (d + 1) & 0xff);
    return RT_CU_SUCCESS;
}

static struct CUctx_st *const the_ctx = (struct CUctx_st *)&the_ctx;
/* initial-exec: no dynamic TLS block for LeakSanitizer's tracker to
 * misread at exit (fake_nccl.c's group_depth says how it failed) */
static __thread __attribute__((tls_model("initial-exec"))) rt_cu_ctx current;

API rt_cu_result cuDevicePrimaryCtxRetain(rt_cu_ctx *c, rt_cu_device d)
{
    ENTER(cuDevicePrimaryCtxRetain);
    if (d < 0 || d >= ndevices)
        return ERR_INVALID_VALUE;
    *c = the_ctx;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuDevicePrimaryCtxRelease_v2(rt_cu_device d)
{
    ENTER(cuDevicePrimaryCtxRelease_v2);
    return d < 0 || d >= ndevices ? ERR_INVALID_VALUE : RT_CU_SUCCESS;
}

API rt_cu_result cuCtxSetCurrent(rt_cu_ctx c)
{
    ENTER(cuCtxSetCurrent);
    if (c && c != the_ctx)
        return ERR_INVALID_HANDLE;
    current = c;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuCtxGetCurrent(rt_cu_ctx *c)
{
    ENTER(cuCtxGetCurrent);
    *c = current;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuPointerGetAttribute(void *data, unsigned int attr, rt_cu_ptr p)
{
    ENTER(cuPointerGetAttribute);
    const alloc *a = holding(p, 1);
    if (!a)
        return ERR_INVALID_VALUE; /* not memory the driver knows */
    switch (attr) {
    case RT_CU_POINTER_ATTR_MEMORY_TYPE: *(unsigned int *)data = RT_CU_MEMORYTYPE_DEVICE; break;
    case RT_CU_POINTER_ATTR_DEVICE_ORDINAL: *(int *)data = 0; break;
    case RT_CU_POINTER_ATTR_RANGE_START: *(rt_cu_ptr *)data = (rt_cu_ptr)(uintptr_t)a->p; break;
    case RT_CU_POINTER_ATTR_RANGE_SIZE: *(size_t *)data = a->bytes; break;
    default: return ERR_INVALID_VALUE;
    }
    return RT_CU_SUCCESS;
}

/* ---- modules: cubins, read as ELF files ---- */

typedef struct {
    unsigned char ident[16];
    uint16_t type, machine;
    uint32_t version;
    uint64_t entry, phoff, shoff;
    uint32_t flags;
    uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
} elf_header;
typedef struct {
    uint32_t name, type;
    uint64_t flags, addr, offset, size;
    uint32_t link, info;
    uint64_t addralign, entsize;
} elf_section;
typedef struct {
    uint32_t name;
    unsigned char info, other;
    uint16_t shndx;
    uint64_t value, size;
} elf_symbol;
enum { ELF_MACHINE_CUDA = 190, SHT_SYMTAB = 2 };

/* Whether the cubin's symbol table names sym. */
/* Whether PTX text declares sym: an .entry, or a .global variable. */
static bool ptx_declares(const char *ptx, const char *sym)
{
    size_t n = strlen(sym);
    for (const char *line = ptx; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *kw = NULL;
        for (const char *q = line; q + 7 <= line + len && !kw; q++)
            if (!strncmp(q, ".entry ", 7) || !strncmp(q, ".global", 7))
                kw = q;
        for (const char *q = kw; q && q + n <= line + len; q++)
            if (!strncmp(q, sym, n) && (q == line || q[-1] == ' ' || q[-1] == '\t') &&
                (q + n == line + len || strchr("( \t[;", q[n])))
                return true;
    }
    return false;
}

static bool has_symbol(const handle *mod, const char *sym)
{
    if (mod->ptx)
        return ptx_declares((const char *)mod->image, sym);
    const unsigned char *b = mod->image;
    size_t n = mod->image_len;
    elf_header h;
    memcpy(&h, b, sizeof h);
    for (int i = 0; i < h.shnum; i++) {
        elf_section s, str;
        memcpy(&s, b + h.shoff + (size_t)i * h.shentsize, sizeof s);
        if (s.type != SHT_SYMTAB || s.link >= h.shnum || s.entsize < sizeof(elf_symbol))
            continue;
        memcpy(&str, b + h.shoff + (size_t)s.link * h.shentsize, sizeof str);
        if (s.offset > n || s.size > n - s.offset || str.offset > n || str.size > n - str.offset)
            continue;
        for (uint64_t k = 0; k + s.entsize <= s.size; k += s.entsize) {
            elf_symbol y;
            memcpy(&y, b + s.offset + k, sizeof y);
            if (y.name < str.size && !strncmp((const char *)b + str.offset + y.name, sym,
                                              str.size - y.name) &&
                strlen(sym) < str.size - y.name)
                return true;
        }
    }
    return false;
}

/* The length of a cubin at image (its header and section table inside
 * it), or 0 when it is not one for the CUDA machine. */
static size_t cubin_length(const unsigned char *b)
{
    elf_header h;
    memcpy(&h, b, sizeof h);
    if (memcmp(h.ident, "\177ELF", 4) || h.ident[4] != 2 || h.machine != ELF_MACHINE_CUDA ||
        h.shentsize < sizeof(elf_section) || h.shoff < sizeof h)
        return 0;
    size_t end = h.shoff + (size_t)h.shnum * h.shentsize;
    for (int i = 0; i < h.shnum; i++) {
        elf_section s;
        memcpy(&s, b + h.shoff + (size_t)i * h.shentsize, sizeof s);
        if (s.type != 8 /* SHT_NOBITS */ && s.offset + s.size > end)
            end = s.offset + s.size;
    }
    return end;
}

API rt_cu_result cuModuleLoadDataEx(rt_cu_module *m, const void *image, unsigned int n,
                                    unsigned int *opts, void **vals)
{
    ENTER(cuModuleLoadDataEx);
    (void)n, (void)opts, (void)vals;
    if (!image)
        return ERR_INVALID_VALUE;
    if (any_capture()) {
        breach("cuModuleLoadDataEx while a stream is captured");
        return ERR_CAPTURE_UNSUPPORTED;
    }
    /* PTX: text with its .version and .target; the driver compiles it
     * for the device, which must be at least the target */
    const char *text = image;
    const char *target = memcmp(text, "\177ELF", 4) ? strstr(text, ".target sm_") : NULL;
    bool ptx = target && strstr(text, ".version") && strstr(text, ".entry");
    size_t len = ptx ? strlen(text) + 1 : cubin_length(image);
    if (ptx && atoi(target + 11) > device_cc) {
        breach("cuModuleLoadDataEx: PTX for sm_%d on a device of sm_%d", atoi(target + 11),
               device_cc);
        return 218; /* CUDA_ERROR_INVALID_PTX */
    }
    if (!len) {
        breach("cuModuleLoadDataEx: the image is neither a cubin for the CUDA machine nor PTX");
        return ERR_INVALID_IMAGE;
    }
    handle *h = new_handle(H_MODULE);
    if (!h || !(h->image = malloc(len))) {
        if (h)
            drop(h, H_MODULE);
        return ERR_OUT_OF_MEMORY;
    }
    memcpy(h->image, image, len);
    h->image_len = len;
    h->ptx = ptx;
    *m = (rt_cu_module)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuModuleUnload(rt_cu_module m)
{
    ENTER(cuModuleUnload);
    if (!drop(m, H_MODULE)) {
        breach("cuModuleUnload: %p is not a loaded module", (void *)m);
        return ERR_INVALID_HANDLE;
    }
    /* its functions and globals go with it */
    pthread_mutex_lock(&lock);
    for (handle *x = handles, *next; x; x = next) {
        next = x->next;
        if (x->kind == H_FUNC && x->module == (handle *)m) {
            unlink_handle(x);
            free(x);
        }
    }
    alloc **g = &allocs;
    while (*g) {
        alloc *a = *g;
        if (a->owner == (handle *)m) {
            *g = a->next;
            free(a->p);
            free(a);
        } else {
            g = &a->next;
        }
    }
    pthread_mutex_unlock(&lock);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuModuleGetFunction(rt_cu_func *f, rt_cu_module m, const char *name)
{
    ENTER(cuModuleGetFunction);
    if (!live(m, H_MODULE)) {
        breach("cuModuleGetFunction(%s): %p is not a loaded module", name, (void *)m);
        return ERR_INVALID_HANDLE;
    }
    if (!has_symbol((handle *)m, name))
        return ERR_NOT_FOUND;
    handle *h = new_handle(H_FUNC);
    if (!h)
        return ERR_OUT_OF_MEMORY;
    h->module = (handle *)m;
    h->max_shared = DEFAULT_SHARED;
    snprintf(h->name, sizeof h->name, "%s", name);
    *f = (rt_cu_func)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuModuleGetGlobal_v2(rt_cu_ptr *p, size_t *bytes, rt_cu_module m,
                                      const char *name)
{
    ENTER(cuModuleGetGlobal_v2);
    if (!live(m, H_MODULE)) {
        breach("cuModuleGetGlobal(%s): %p is not a loaded module", name, (void *)m);
        return ERR_INVALID_HANDLE;
    }
    if (!has_symbol((handle *)m, name))
        return ERR_NOT_FOUND;
    /* the global's 8 bytes (the backend's globals are error words), zero
     * as the cubin's, the module's until it is unloaded; the same bytes
     * each time it is asked for */
    pthread_mutex_lock(&lock);
    alloc *a = allocs;
    while (a && !(a->owner == (handle *)m && !strcmp(a->name, name)))
        a = a->next;
    pthread_mutex_unlock(&lock);
    if (!a) {
        a = calloc(1, sizeof *a);
        if (!a || !(a->p = calloc(1, 8))) {
            free(a);
            return ERR_OUT_OF_MEMORY;
        }
        a->bytes = 8;
        a->owner = (handle *)m;
        snprintf(a->name, sizeof a->name, "%s", name);
        pthread_mutex_lock(&lock);
        a->next = allocs;
        allocs = a;
        pthread_mutex_unlock(&lock);
    }
    *p = (rt_cu_ptr)(uintptr_t)a->p;
    if (bytes)
        *bytes = a->bytes;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuFuncSetAttribute(rt_cu_func f, unsigned int attr, int value)
{
    ENTER(cuFuncSetAttribute);
    if (!live(f, H_FUNC))
        return ERR_INVALID_HANDLE;
    if (attr != RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED)
        return RT_CU_SUCCESS;
    if (value < 0 || value > MAX_SHARED)
        return ERR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    ((handle *)f)->max_shared = value;
    pthread_mutex_unlock(&lock);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuLaunchKernel(rt_cu_func f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, rt_cu_stream s, void **params, void **extra)
{
    ENTER(cuLaunchKernel);
    if (!live(f, H_FUNC)) {
        breach("cuLaunchKernel: %p is not a function of a loaded module", (void *)f);
        return ERR_INVALID_HANDLE;
    }
    const handle *h = (const handle *)f;
    if (!stream_ok(s, "cuLaunchKernel"))
        return ERR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bz > 64 ||
        (unsigned long long)bx * by * bz > 1024) {
        breach("cuLaunchKernel(%s): grid %ux%ux%u, block %ux%ux%u", h->name, gx, gy, gz, bx,
               by, bz);
        return ERR_INVALID_VALUE;
    }
    if ((int)shared > h->max_shared) {
        breach("cuLaunchKernel(%s): %u bytes of dynamic shared memory, %d allowed", h->name,
               shared, h->max_shared);
        return ERR_INVALID_VALUE;
    }
    if (!params && !extra) {
        breach("cuLaunchKernel(%s): no parameters", h->name);
        return ERR_INVALID_VALUE;
    }
    if (!capturing(s)) {
        wait_idle(s);
    } else {
        pthread_mutex_lock(&lock);
        ((handle *)s)->nops++;
        pthread_mutex_unlock(&lock);
    }
    return RT_CU_SUCCESS;
}

/* ---- memory ---- */

static rt_cu_result mem_alloc(rt_cu_ptr *p, size_t bytes)
{
    if (!bytes)
        return ERR_INVALID_VALUE;
    alloc *a = calloc(1, sizeof *a);
    if (!a)
        return ERR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    bool fits = bytes <= memory_limit - allocated && allocated <= memory_limit;
    if (fits)
        allocated += bytes;
    pthread_mutex_unlock(&lock);
    if (!fits || !(a->p = malloc(bytes))) {
        if (fits) {
            pthread_mutex_lock(&lock);
            allocated -= bytes;
            pthread_mutex_unlock(&lock);
        }
        free(a);
        return ERR_OUT_OF_MEMORY;
    }
    memset(a->p, 0xa5, bytes < 4096 ? bytes : 4096); /* not zeros: nothing may assume them */
    a->bytes = bytes;
    pthread_mutex_lock(&lock);
    a->next = allocs;
    allocs = a;
    pthread_mutex_unlock(&lock);
    *p = (rt_cu_ptr)(uintptr_t)a->p;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuMemAlloc_v2(rt_cu_ptr *p, size_t bytes)
{
    ENTER(cuMemAlloc_v2);
    if (any_capture()) {
        breach("cuMemAlloc while a stream is captured");
        return ERR_CAPTURE_UNSUPPORTED;
    }
    return mem_alloc(p, bytes);
}

API rt_cu_result cuMemGetInfo_v2(size_t *avail, size_t *total)
{
    ENTER(cuMemGetInfo_v2);
    pthread_mutex_lock(&lock);
    *avail = memory_limit - allocated;
    *total = memory_limit;
    pthread_mutex_unlock(&lock);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuMemFree_v2(rt_cu_ptr p)
{
    ENTER(cuMemFree_v2);
    if (!p)
        return RT_CU_SUCCESS;
    unsigned char *q = (unsigned char *)(uintptr_t)p;
    pthread_mutex_lock(&lock);
    alloc **at = &allocs;
    while (*at && ((*at)->p != q || (*at)->owner))
        at = &(*at)->next;
    alloc *a = *at;
    if (a) {
        *at = a->next;
        allocated -= a->bytes;
    }
    pthread_mutex_unlock(&lock);
    if (!a) {
        breach("cuMemFree: 0x%llx is not the start of a live allocation", p);
        return ERR_INVALID_VALUE;
    }
    free(a->p);
    free(a);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuMemAllocHost_v2(void **p, size_t bytes)
{
    ENTER(cuMemAllocHost_v2);
    if (any_capture()) {
        breach("cuMemAllocHost while a stream is captured");
        return ERR_CAPTURE_UNSUPPORTED;
    }
    alloc *a = calloc(1, sizeof *a);
    if (!a || !(a->p = malloc(bytes ? bytes : 1))) {
        free(a);
        return ERR_OUT_OF_MEMORY;
    }
    a->bytes = bytes;
    pthread_mutex_lock(&lock);
    a->next = pinned;
    pinned = a;
    pthread_mutex_unlock(&lock);
    *p = a->p;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuMemFreeHost(void *p)
{
    ENTER(cuMemFreeHost);
    pthread_mutex_lock(&lock);
    alloc **at = &pinned;
    while (*at && (*at)->p != p)
        at = &(*at)->next;
    alloc *a = *at;
    if (a)
        *at = a->next;
    pthread_mutex_unlock(&lock);
    if (!a) {
        breach("cuMemFreeHost: %p is not the start of a live page-locked allocation", p);
        return ERR_INVALID_VALUE;
    }
    free(a->p);
    free(a);
    return RT_CU_SUCCESS;
}

static rt_cu_result sync_call(const char *call)
{
    if (any_capture()) {
        breach("%s (synchronous) while this thread captures a stream", call);
        return ERR_CAPTURE_UNSUPPORTED;
    }
    return RT_CU_SUCCESS;
}

/* Does r, its device memory checked again (a graph's copy may outlive
 * what it copies). */
static rt_cu_result do_rec(const rec *r, const char *call)
{
    switch (r->kind) {
    case R_DTOD:
        if (!in_device(r->dst, r->n, call, "the destination") ||
            !in_device(r->src, r->n, call, "the source"))
            return ERR_INVALID_VALUE;
        if (r->n)
            memmove((void *)(uintptr_t)r->dst, (const void *)(uintptr_t)r->src, r->n);
        return RT_CU_SUCCESS;
    case R_HTOD:
        if (!in_device(r->dst, r->n, call, "the destination"))
            return ERR_INVALID_VALUE;
        if (r->n)
            memcpy((void *)(uintptr_t)r->dst, r->hsrc, r->n);
        return RT_CU_SUCCESS;
    case R_DTOH:
        if (!in_device(r->src, r->n, call, "the source"))
            return ERR_INVALID_VALUE;
        if (r->n)
            memcpy(r->hdst, (const void *)(uintptr_t)r->src, r->n);
        return RT_CU_SUCCESS;
    case R_2D: {
        const rt_cu_memcpy2d *c = &r->c;
        size_t sfirst = c->srcY * c->srcPitch + c->srcXInBytes;
        size_t dfirst = c->dstY * c->dstPitch + c->dstXInBytes;
        size_t span_s = (c->Height - 1) * c->srcPitch + c->WidthInBytes;
        size_t span_d = (c->Height - 1) * c->dstPitch + c->WidthInBytes;
        if (!in_device(c->srcDevice + sfirst, span_s, call, "the source rows") ||
            !in_device(c->dstDevice + dfirst, span_d, call, "the destination rows"))
            return ERR_INVALID_VALUE;
        for (size_t y = 0; y < c->Height; y++)
            memmove((unsigned char *)(uintptr_t)c->dstDevice + dfirst + y * c->dstPitch,
                    (const unsigned char *)(uintptr_t)c->srcDevice + sfirst + y * c->srcPitch,
                    c->WidthInBytes);
        return RT_CU_SUCCESS;
    }
    case R_EVENT:
        if (!live(r->event, H_EVENT)) {
            breach("%s: a recorded event that is no longer live", call);
            return ERR_INVALID_HANDLE;
        }
        pthread_mutex_lock(&lock);
        r->event->stamp = stamp();
        pthread_mutex_unlock(&lock);
        return RT_CU_SUCCESS;
    case R_HOST:
        r->fn(r->arg);
        return RT_CU_SUCCESS;
    case R_SET:
        if (r->n > SIZE_MAX / r->size || !in_device(r->dst, r->n * r->size, call, "the destination"))
            return ERR_INVALID_VALUE;
        if (r->size == 1) {
            memset((void *)(uintptr_t)r->dst, (int)r->value, r->n);
            return RT_CU_SUCCESS;
        }
        if (r->dst % r->size) {
            breach("%s: 0x%llx is not aligned to %zu bytes", call, r->dst, r->size);
            return ERR_INVALID_VALUE;
        }
        for (size_t i = 0; i < r->n; i++)
            if (r->size == 2) {
                uint16_t v = (uint16_t)r->value;
                memcpy((unsigned char *)(uintptr_t)r->dst + 2 * i, &v, 2);
            } else {
                memcpy((unsigned char *)(uintptr_t)r->dst + 4 * i, &r->value, 4);
            }
        return RT_CU_SUCCESS;
    }
    return ERR_INVALID_VALUE;
}

/* r on stream s: checked, then done now, or recorded into the graph s is
 * being captured into (done at its launches). */
static rt_cu_result issue(rt_cu_stream s, rec r, const char *call)
{
    if (!stream_ok(s, call))
        return ERR_INVALID_HANDLE;
    if (!capturing(s)) {
        if (r.kind == R_EVENT) { /* behind the work queued on s: complete with it */
            pthread_mutex_lock(&lock);
            r.event->on = s && ((handle *)s)->done < ((handle *)s)->issued ? (handle *)s : NULL;
            r.event->ticket = s ? ((handle *)s)->issued : 0;
            r.event->cap = NULL;
            pthread_mutex_unlock(&lock);
        } else {
            wait_idle(s);
        }
        return do_rec(&r, call);
    }
    /* checked now too: a capture of a bad copy fails where it is made */
    rec *x = malloc(sizeof *x);
    if (!x)
        return ERR_OUT_OF_MEMORY;
    *x = r;
    x->next = NULL;
    bool ok = true;
    switch (r.kind) {
    case R_DTOD: ok = fakecuda_in_device(r.dst, r.n) && fakecuda_in_device(r.src, r.n); break;
    case R_HTOD: case R_SET: ok = fakecuda_in_device(r.dst, r.n * (r.kind == R_SET ? r.size : 1)); break;
    case R_DTOH: ok = fakecuda_in_device(r.src, r.n); break;
    case R_2D: case R_EVENT: case R_HOST: ok = true; break;
    }
    if (!ok) {
        free(x);
        breach("%s (captured): memory not inside one live allocation", call);
        return ERR_INVALID_VALUE;
    }
    if (!host_side_pinned(&r, call)) {
        free(x);
        return ERR_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_lock(&lock);
    handle *h = (handle *)s, *o = h->origin ? h->origin : h;
    *o->tail = x;
    o->tail = &x->next;
    h->nops++;
    if (r.kind == R_EVENT) {
        r.event->cap = h;
        r.event->cap_at = h->nops;
    }
    pthread_mutex_unlock(&lock);
    return RT_CU_SUCCESS;
}

/* For fake_nccl.c: fn(arg) as a node of the graph stream s is captured
 * into, run at each of its launches, in order with the graph's copies;
 * -1 when s is not being captured. The caller keeps arg alive. */
API int fakecuda_capture_host(rt_cu_stream s, void (*fn)(void *), void *arg)
{
    if (!s || !live(s, H_STREAM) || !capturing(s))
        return -1;
    return issue(s, (rec){.kind = R_HOST, .fn = fn, .arg = arg}, "a captured host node") ? -1
                                                                                           : 0;
}

API rt_cu_result cuMemcpyHtoD_v2(rt_cu_ptr dst, const void *src, size_t n)
{
    ENTER(cuMemcpyHtoD_v2);
    rt_cu_result r = sync_call("cuMemcpyHtoD");
    return r ? r : do_rec(&(rec){.kind = R_HTOD, .dst = dst, .hsrc = src, .n = n}, "cuMemcpyHtoD");
}

API rt_cu_result cuMemcpyDtoH_v2(void *dst, rt_cu_ptr src, size_t n)
{
    ENTER(cuMemcpyDtoH_v2);
    rt_cu_result r = sync_call("cuMemcpyDtoH");
    return r ? r : do_rec(&(rec){.kind = R_DTOH, .hdst = dst, .src = src, .n = n}, "cuMemcpyDtoH");
}

API rt_cu_result cuMemcpyDtoD_v2(rt_cu_ptr dst, rt_cu_ptr src, size_t n)
{
    ENTER(cuMemcpyDtoD_v2);
    rt_cu_result r = sync_call("cuMemcpyDtoD");
    return r ? r : do_rec(&(rec){.kind = R_DTOD, .dst = dst, .src = src, .n = n}, "cuMemcpyDtoD");
}

API rt_cu_result cuMemcpyDtoDAsync_v2(rt_cu_ptr dst, rt_cu_ptr src, size_t n, rt_cu_stream s)
{
    ENTER(cuMemcpyDtoDAsync_v2);
    return issue(s, (rec){.kind = R_DTOD, .dst = dst, .src = src, .n = n}, "cuMemcpyDtoDAsync");
}

API rt_cu_result cuMemcpyHtoDAsync_v2(rt_cu_ptr dst, const void *src, size_t n, rt_cu_stream s)
{
    ENTER(cuMemcpyHtoDAsync_v2);
    return issue(s, (rec){.kind = R_HTOD, .dst = dst, .hsrc = src, .n = n}, "cuMemcpyHtoDAsync");
}

API rt_cu_result cuMemcpyDtoHAsync_v2(void *dst, rt_cu_ptr src, size_t n, rt_cu_stream s)
{
    ENTER(cuMemcpyDtoHAsync_v2);
    return issue(s, (rec){.kind = R_DTOH, .hdst = dst, .src = src, .n = n}, "cuMemcpyDtoHAsync");
}

API rt_cu_result cuMemcpy2DAsync_v2(const rt_cu_memcpy2d *c, rt_cu_stream s)
{
    ENTER(cuMemcpy2DAsync_v2);
    if (c->srcMemoryType != RT_CU_MEMORYTYPE_DEVICE || c->dstMemoryType != RT_CU_MEMORYTYPE_DEVICE) {
        breach("cuMemcpy2DAsync: only device-to-device copies are faked");
        return ERR_INVALID_VALUE;
    }
    if (!c->Height || !c->WidthInBytes)
        return stream_ok(s, "cuMemcpy2DAsync") ? RT_CU_SUCCESS : ERR_INVALID_HANDLE;
    if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes) {
        breach("cuMemcpy2DAsync: pitch below the width");
        return ERR_INVALID_VALUE;
    }
    return issue(s, (rec){.kind = R_2D, .c = *c}, "cuMemcpy2DAsync");
}

static rt_cu_result memset_n(rt_cu_ptr dst, uint32_t value, size_t n, size_t size,
                             rt_cu_stream s, const char *call)
{
    rec r = {.kind = R_SET, .dst = dst, .value = value, .n = n, .size = size};
    return s ? issue(s, r, call) : do_rec(&r, call);
}

API rt_cu_result cuMemsetD8_v2(rt_cu_ptr dst, unsigned char v, size_t n)
{
    ENTER(cuMemsetD8_v2);
    rt_cu_result r = sync_call("cuMemsetD8");
    return r ? r : memset_n(dst, v, n, 1, NULL, "cuMemsetD8");
}

API rt_cu_result cuMemsetD8Async(rt_cu_ptr dst, unsigned char v, size_t n, rt_cu_stream s)
{
    ENTER(cuMemsetD8Async);
    return memset_n(dst, v, n, 1, s, "cuMemsetD8Async");
}

API rt_cu_result cuMemsetD16Async(rt_cu_ptr dst, unsigned short v, size_t n, rt_cu_stream s)
{
    ENTER(cuMemsetD16Async);
    return memset_n(dst, v, n, 2, s, "cuMemsetD16Async");
}

API rt_cu_result cuMemsetD32Async(rt_cu_ptr dst, unsigned int v, size_t n, rt_cu_stream s)
{
    ENTER(cuMemsetD32Async);
    return memset_n(dst, v, n, 4, s, "cuMemsetD32Async");
}

/* ---- streams, events, graphs ---- */

API rt_cu_result cuStreamCreate(rt_cu_stream *s, unsigned int flags)
{
    ENTER(cuStreamCreate);
    (void)flags;
    handle *h = new_handle(H_STREAM);
    if (!h)
        return ERR_OUT_OF_MEMORY;
    *s = (rt_cu_stream)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuStreamDestroy_v2(rt_cu_stream s)
{
    ENTER(cuStreamDestroy_v2);
    if (capturing(s))
        breach("cuStreamDestroy: the stream is being captured");
    if (live(s, H_STREAM)) {
        pthread_mutex_lock(&lock);
        const handle *h = (const handle *)s;
        bool busy = h->done < h->issued;
        for (const handle *e = handles; e; e = e->next) /* events recorded on it forget it */
            if (e->kind == H_EVENT && e->on == h)
                ((handle *)e)->on = NULL;
        pthread_mutex_unlock(&lock);
        if (busy)
            breach("cuStreamDestroy: work queued on the stream is not done");
    }
    if (!drop(s, H_STREAM)) {
        breach("cuStreamDestroy: %p is not a live stream", (void *)s);
        return ERR_INVALID_HANDLE;
    }
    return RT_CU_SUCCESS;
}

API rt_cu_result cuStreamSynchronize(rt_cu_stream s)
{
    ENTER(cuStreamSynchronize);
    if (!stream_ok(s, "cuStreamSynchronize"))
        return ERR_INVALID_HANDLE;
    if (capturing(s)) {
        breach("cuStreamSynchronize of a stream being captured");
        return ERR_CAPTURE_UNSUPPORTED;
    }
    wait_idle(s);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuEventCreate(rt_cu_event *e, unsigned int flags)
{
    ENTER(cuEventCreate);
    handle *h = new_handle(H_EVENT);
    if (!h)
        return ERR_OUT_OF_MEMORY;
    h->flags = flags;
    *e = (rt_cu_event)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuEventDestroy_v2(rt_cu_event e)
{
    ENTER(cuEventDestroy_v2);
    if (!drop(e, H_EVENT)) {
        breach("cuEventDestroy: %p is not a live event", (void *)e);
        return ERR_INVALID_HANDLE;
    }
    return RT_CU_SUCCESS;
}

static rt_cu_result event_stream(rt_cu_event e, rt_cu_stream s, const char *call)
{
    if (!live(e, H_EVENT)) {
        breach("%s: %p is not a live event", call, (void *)e);
        return ERR_INVALID_HANDLE;
    }
    return stream_ok(s, call) ? RT_CU_SUCCESS : ERR_INVALID_HANDLE;
}

/* A record of e on s: now, or at each launch of the graph s is captured
 * into. */
static rt_cu_result record_event(rt_cu_event e, rt_cu_stream s, const char *call)
{
    rt_cu_result r = event_stream(e, s, call);
    return r ? r : issue(s, (rec){.kind = R_EVENT, .event = (handle *)e}, call);
}

API rt_cu_result cuEventRecord(rt_cu_event e, rt_cu_stream s)
{
    ENTER(cuEventRecord);
    return record_event(e, s, "cuEventRecord");
}

/* s waits for e: this fake runs s's work as it is queued, so the caller
 * waits here until e completes (not in a capture: there e recorded in the
 * graph only orders it). */
API rt_cu_result cuStreamWaitEvent(rt_cu_stream s, rt_cu_event e, unsigned int flags)
{
    ENTER(cuStreamWaitEvent);
    (void)flags;
    rt_cu_result r = event_stream(e, s, "cuStreamWaitEvent");
    if (r)
        return r;
    pthread_mutex_lock(&lock);
    handle *h = (handle *)s, *ev = (handle *)e;
    if (ev->cap || (h && h->capturing)) { /* a capture's ordering, not a wait now */
        const char *bad = NULL;
        if (!h)
            bad = "an event of a capture, by the null stream";
        else if (!ev->cap)
            bad = "an event not recorded in the capture";
        else if (h->capturing && h->origin != ev->cap->origin)
            bad = "an event of another capture";
        if (!bad && !h->capturing) { /* s joins the capture */
            h->capturing = 1;
            h->by = pthread_self();
            h->origin = ev->cap->origin;
            h->nops = h->joined_upto = 0;
        }
        if (!bad && h == h->origin && ev->cap != h && ev->cap->joined_upto < ev->cap_at)
            ev->cap->joined_upto = ev->cap_at;
        pthread_mutex_unlock(&lock);
        if (bad) {
            breach("cuStreamWaitEvent: %s (CUDA_ERROR_STREAM_CAPTURE_ISOLATION)", bad);
            return ERR_CAPTURE_ISOLATION;
        }
        return RT_CU_SUCCESS;
    }
    while (!event_done((handle *)e))
        pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    return RT_CU_SUCCESS;
}

API rt_cu_result cuEventQuery(rt_cu_event e)
{
    ENTER(cuEventQuery);
    if (!live(e, H_EVENT)) {
        breach("cuEventQuery: %p is not a live event", (void *)e);
        return ERR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&lock);
    bool done = event_done((handle *)e);
    pthread_mutex_unlock(&lock);
    return done ? RT_CU_SUCCESS : ERR_NOT_READY;
}

API rt_cu_result cuEventRecordWithFlags(rt_cu_event e, rt_cu_stream s, unsigned int flags)
{
    ENTER(cuEventRecordWithFlags);
    (void)flags;
    return record_event(e, s, "cuEventRecordWithFlags");
}

API rt_cu_result cuEventElapsedTime(float *ms, rt_cu_event a, rt_cu_event b)
{
    ENTER(cuEventElapsedTime);
    if (!live(a, H_EVENT) || !live(b, H_EVENT))
        return ERR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    const handle *x = (const handle *)a, *y = (const handle *)b;
    bool timed = !(x->flags & RT_CU_EVENT_DISABLE_TIMING) && !(y->flags & RT_CU_EVENT_DISABLE_TIMING);
    long from = x->stamp, to = y->stamp;
    pthread_mutex_unlock(&lock);
    if (!timed) {
        breach("cuEventElapsedTime: an event made with CU_EVENT_DISABLE_TIMING");
        return ERR_INVALID_HANDLE;
    }
    if (!from || !to) {
        breach("cuEventElapsedTime: an event never recorded");
        return ERR_INVALID_HANDLE;
    }
    *ms = (float)((double)(to - from) * 1e-6); /* nanoseconds */
    return RT_CU_SUCCESS;
}

API rt_cu_result cuStreamBeginCapture_v2(rt_cu_stream s, unsigned int mode)
{
    ENTER(cuStreamBeginCapture_v2);
    (void)mode;
    if (!s || !live(s, H_STREAM)) {
        breach("cuStreamBeginCapture: %p is not a live stream", (void *)s);
        return ERR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&lock);
    handle *h = (handle *)s;
    int was = h->capturing;
    if (!was) {
        h->capturing = 1;
        h->by = pthread_self();
        h->origin = h;
        h->nops = h->joined_upto = 0;
    }
    pthread_mutex_unlock(&lock);
    if (was) {
        breach("cuStreamBeginCapture: the stream is captured already");
        return ERR_INVALID_VALUE;
    }
    return RT_CU_SUCCESS;
}

API rt_cu_result cuStreamEndCapture(rt_cu_stream s, rt_cu_graph *g)
{
    /* a failure ends the capture too (a driver's, of a capture it has
     * invalidated), so it is counted and injected after that */
    rt_cu_result injected = enter(E_cuStreamEndCapture);
    if (!s || !live(s, H_STREAM))
        return ERR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    handle *o = (handle *)s;
    int was = o->capturing && o->origin == o;
    char unjoined[160] = "";
    if (o->capturing && o->origin != o) {
        snprintf(unjoined, sizeof unjoined, "the stream joined another stream's capture");
        was = 0;
    }
    for (handle *x = handles; was && x; x = x->next) {
        if (x->kind == H_STREAM && x != o && x->capturing && x->origin == o) {
            if (x->joined_upto < x->nops && !*unjoined)
                snprintf(unjoined, sizeof unjoined, "a stream that joined it has %ld of %ld "
                         "captured ops the capture does not wait for", x->nops - x->joined_upto,
                         x->nops);
            x->capturing = 0;
            x->origin = NULL;
        }
        if (x->kind == H_EVENT && x->cap && x->cap->origin == o)
            x->cap = NULL;
    }
    if (was) {
        o->capturing = 0;
        o->origin = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (*unjoined) {
        breach("cuStreamEndCapture: %s (CUDA_ERROR_STREAM_CAPTURE_UNJOINED)", unjoined);
        if (!injected)
            injected = ERR_CAPTURE_UNJOINED;
    }
    pthread_mutex_lock(&lock); /* what was captured: the graph's, or dropped */
    rec *ops = ((handle *)s)->ops;
    ((handle *)s)->ops = NULL;
    ((handle *)s)->tail = &((handle *)s)->ops;
    pthread_mutex_unlock(&lock);
    if (injected || !was) {
        free_ops(ops);
        if (!was)
            breach("cuStreamEndCapture: the stream is not captured");
        return injected ? injected : ERR_INVALID_VALUE;
    }
    handle *h = new_handle(H_GRAPH);
    if (!h) {
        free_ops(ops);
        return ERR_OUT_OF_MEMORY;
    }
    h->ops = ops;
    *g = (rt_cu_graph)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuGraphInstantiateWithFlags(rt_cu_graph_exec *x, rt_cu_graph g,
                                             unsigned long long flags)
{
    ENTER(cuGraphInstantiateWithFlags);
    (void)flags;
    if (!live(g, H_GRAPH))
        return ERR_INVALID_HANDLE;
    handle *h = new_handle(H_EXEC);
    if (!h)
        return ERR_OUT_OF_MEMORY;
    /* its own copy of the graph's work: the graph may go first */
    for (const rec *r = ((handle *)g)->ops; r; r = r->next) {
        rec *c = malloc(sizeof *c);
        if (!c) {
            drop(h, H_EXEC);
            return ERR_OUT_OF_MEMORY;
        }
        *c = *r;
        c->next = NULL;
        *h->tail = c;
        h->tail = &c->next;
    }
    *x = (rt_cu_graph_exec)h;
    return RT_CU_SUCCESS;
}

API rt_cu_result cuGraphLaunch(rt_cu_graph_exec x, rt_cu_stream s)
{
    ENTER(cuGraphLaunch);
    if (!live(x, H_EXEC)) {
        breach("cuGraphLaunch: %p is not an instantiated graph", (void *)x);
        return ERR_INVALID_HANDLE;
    }
    if (!stream_ok(s, "cuGraphLaunch"))
        return ERR_INVALID_HANDLE;
    if (!capturing(s))
        wait_idle(s);
    for (const rec *r = ((handle *)x)->ops; r; r = r->next) {
        if (!host_side_pinned(r, "cuGraphLaunch (a copy of the graph)"))
            return ERR_INVALID_VALUE;
        rt_cu_result res = do_rec(r, "cuGraphLaunch (a copy or memset of the graph)");
        if (res)
            return res;
    }
    return RT_CU_SUCCESS;
}

API rt_cu_result cuGraphExecDestroy(rt_cu_graph_exec x)
{
    ENTER(cuGraphExecDestroy);
    if (!drop(x, H_EXEC)) {
        breach("cuGraphExecDestroy: %p is not an instantiated graph", (void *)x);
        return ERR_INVALID_HANDLE;
    }
    return RT_CU_SUCCESS;
}

API rt_cu_result cuGraphDestroy(rt_cu_graph g)
{
    ENTER(cuGraphDestroy);
    if (!drop(g, H_GRAPH)) {
        breach("cuGraphDestroy: %p is not a graph", (void *)g);
        return ERR_INVALID_HANDLE;
    }
    return RT_CU_SUCCESS;
}

/* NVRTC (13.0) looks for cuInit and cuGetExportTable in a libcuda.so.1
 * the process has loaded, and calls through what it finds: a driver's
 * private tables, which this one has none of. */
API rt_cu_result cuGetExportTable(const void **table, const void *id)
{
    (void)id;
    if (table)
        *table = NULL;
    return ERR_NOT_FOUND;
}

/* ---- errors ---- */

static const struct {
    rt_cu_result code;
    const char *name, *text;
} names[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {ERR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {ERR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {ERR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {ERR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {ERR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {ERR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {ERR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {ERR_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {ERR_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capture sequence contains a fork that was not joined to the primary stream"},
    {ERR_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {ERR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

API rt_cu_result cuGetErrorName(rt_cu_result r, const char **name)
{
    ENTER(cuGetErrorName);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].code == r) {
            *name = names[i].name;
            return RT_CU_SUCCESS;
        }
    return ERR_INVALID_VALUE;
}

API rt_cu_result cuGetErrorString(rt_cu_result r, const char **text)
{
    ENTER(cuGetErrorString);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].code == r) {
            *text = names[i].text;
            return RT_CU_SUCCESS;
        }
    return ERR_INVALID_VALUE;
}
