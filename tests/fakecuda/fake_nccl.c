/* fake_nccl.c: libnccl.so.2 for tests on machines without a GPU.
 *
 * The nccl communicator (runtime/comm/comm_nccl.c) opens libnccl.so.2
 * with dlopen. Put first on LD_LIBRARY_PATH beside fake_driver.c's
 * libcuda.so.1, this library stands in for NCCL: every entry point the
 * communicator uses, with NCCL's names and types (nccl_api.h), between
 * the processes of an MPI job on one machine. Device memory is the fake
 * driver's host memory, so the bytes really move: a collective's result
 * is the reduction of its members' operands (in member order 0..G-1, f16
 * and bf16 in f32 rounded once), a recv gets what its peer sent.
 *
 * The work is NCCL's in shape: a collective, send or recv is queued on its
 * stream (fakecuda_stream_enqueue) and returns; a thread per stream runs
 * the stream's ops in order, each meeting its peers through a file shared
 * by the communicator's processes (mapped; unlinked once all have it), and
 * completes the stream's ticket. Until then an event recorded on the
 * stream is not done (cuEventQuery: CUDA_ERROR_NOT_READY), and what the
 * stream or a stream waiting on that event does next waits. So an op
 * whose peer never comes stays in flight, as on a GPU, for the caller's
 * watchdog to find; ncclCommAbort ends it.
 *
 * On a stream being captured into a CUDA graph (the fake driver's capture,
 * which a stream joins by waiting on an event recorded in it), an op
 * becomes a node of the graph (fakecuda_capture_host): it runs at each of
 * the graph's launches, in the launching thread, in order with the
 * graph's copies, after the ops its stream's runner still has. Such a
 * launch waits until the op's peers come, so a collective that hangs in a
 * graph hangs the launch (FAKENCCL_HANG is for eager ops).
 *
 * What is checked, as a strict NCCL would (a breach is described on
 * stderr as "fake_nccl: ..." and counted among fake_driver.c's errors):
 *
 * - every buffer lies inside one live allocation of the fake driver, on a
 *   live stream;
 * - every member of a communicator calls the same collective, with the
 *   same count, type, reduction and root, as its n-th op (a mismatch
 *   fails the op on every member with ncclInvalidUsage);
 * - a recv is as long as the send it meets; send and recv rendezvous (a
 *   send is done once its peer has taken the bytes);
 * - ops of a group (ncclGroupStart/End) are sends and receives on one
 *   communicator and stream;
 * - every wait gives up after FAKENCCL_TIMEOUT seconds (default 300), or
 *   at once when a member aborted the communicator (ncclRemoteError).
 *
 * Communicators made with config->blocking = 0 answer ncclInProgress from
 * ncclCommInitRankConfig, ncclCommSplit and ncclCommFinalize, and
 * ncclCommGetAsyncError says ncclInProgress once before ncclSuccess, so a
 * caller must poll as NCCL's nonblocking mode asks.
 *
 * The environment steers it:
 *   FAKECUDA_FAIL=NAME:K[:CODE]  (fake_driver.c's variable) the K-th call
 *                         of nccl entry point NAME (ncclAllReduce, ...)
 *                         fails with CODE (default 2, ncclSystemError);
 *   FAKENCCL_HANG=R:K     in the process whose world rank (its first
 *                         communicator's rank) is R, the K-th op run (1:
 *                         the first; a graph's too) never completes: it
 *                         waits, as a GPU kernel stuck on a lost peer,
 *                         until aborted;
 *   FAKENCCL_BYTES=N      the most bytes one rank's operand or one message
 *                         may have (default 64 MiB; the shared file is
 *                         sparse);
 *   FAKENCCL_TIMEOUT=S    as above;
 *   FAKECUDA_LOG=FILE     at exit, append every entry point's call count
 *                         and "live_nccl_comms N".
 */
#include "runtime/comm/nccl_api.h"
#include "runtime/cuda/cuda_driver.h"
#include "support/support.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

enum {
    N_OK = 0,
    N_SYSTEM = 2,
    N_INTERNAL = 3,
    N_INVALID_ARGUMENT = 4,
    N_INVALID_USAGE = 5,
    N_REMOTE = 6,
    N_IN_PROGRESS = 7,
    SPLIT_NOCOLOR = -1,
    ID_MAGIC = 0x46414b45, /* "FAKE" */
};

/* ---- entry points: counts and injected failures ---- */

#define ENTRIES(X)                                                                              \
    X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommSplit)             \
    X(ncclCommGetAsyncError) X(ncclCommAbort) X(ncclCommDestroy) X(ncclCommFinalize)            \
    X(ncclGetErrorString) X(ncclGetLastError) X(ncclAllReduce) X(ncclReduceScatter)            \
    X(ncclAllGather) X(ncclBroadcast) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

#define ENUM(name) E_##name,
enum { ENTRIES(ENUM) NENTRIES };
#undef ENUM
#define NAME(name) #name,
static const char *const entry_name[NENTRIES] = {ENTRIES(NAME)};
#undef NAME

static atomic_long calls[NENTRIES];
static struct {
    int entry;
    long call;
    rt_nccl_result code;
} fail[16];
static int nfail;
static int hang_rank = -1;
static long hang_op;
static size_t cap = (size_t)64 << 20;
static double timeout_s = 300;

/* the fake driver's, from the libcuda.so.1 the process loaded */
static int (*in_device)(rt_cu_ptr p, size_t n);
static void (*driver_breach)(const char *what);
static void (*driver_log)(const char *text, size_t n);
static long (*stream_enqueue)(rt_cu_stream s);
static void (*stream_complete)(rt_cu_stream s, long ticket);
static int (*capture_host)(rt_cu_stream s, void (*fn)(void *), void *arg);

static void breach(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void breach(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fake_nccl: %s\n", msg);
    if (driver_breach) /* counted among the driver's errors */
        driver_breach(msg);
}

static rt_nccl_result enter(int e)
{
    long k = atomic_fetch_add(&calls[e], 1) + 1;
    for (int i = 0; i < nfail; i++)
        if (fail[i].entry == e && fail[i].call == k)
            return fail[i].code;
    return N_OK;
}

#define ENTER(name)                                                                             \
    do {                                                                                        \
        rt_nccl_result injected_ = enter(E_##name);                                             \
        if (injected_)                                                                          \
            return injected_;                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- the shared file of a communicator ---- */

/* A member's op on the communicator's n-th collective: what it is, posted
 * with its operand, and done once it has read every member's. */
typedef struct slot {
    _Atomic long posted, done;
    int kind, dtype, redop, root;
    long count, bytes;
    int color, key;
    char pad[64];
} slot;

/* Messages from one member to another: the n-th sent, the n-th taken. */
typedef struct chan {
    _Atomic long sent, taken;
    long bytes;
    char pad[40];
} chan;

typedef struct shared {
    _Atomic int joined, attached;
    _Atomic int aborted_by; /* a member's rank + 1 */
} shared;

/* What ncclGetUniqueId hands out: the shared file's path. */
typedef struct fake_id {
    int magic;
    char path[120];
} fake_id;

struct ncclComm {
    struct ncclComm *next;
    int nranks, rank;
    unsigned char *base;
    size_t size;
    shared *sh;
    slot *slots;
    chan *chans;
    unsigned char *slot_data, *chan_data;
    char path[120];
    bool blocking;
    /* the runner's, in stream order: collectives and messages so far */
    long coll_seq;
    long *sent, *recvd;
    /* ncclInProgress polls left before the state shows (nonblocking) */
    _Atomic int polls;
    _Atomic int state;       /* ncclCommGetAsyncError's answer */
    _Atomic bool aborted;
    int splits;              /* children split from it, naming their files */
    char last[256];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER; /* a runner finished an op */
static struct ncclComm *comms;
static int world_rank = -1;
static long ops_run; /* by this process's runners, for FAKENCCL_HANG */

static size_t round_up(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

static size_t layout(struct ncclComm *c, int n)
{
    size_t at = round_up(sizeof(shared));
    size_t slots_at = at;
    at = round_up(at + (size_t)n * sizeof(slot));
    size_t chans_at = at;
    at = round_up(at + (size_t)n * n * sizeof(chan));
    size_t slot_data_at = at;
    at += (size_t)n * cap;
    size_t chan_data_at = at;
    at += (size_t)n * n * cap;
    if (c) {
        c->sh = (shared *)c->base;
        c->slots = (slot *)(c->base + slots_at);
        c->chans = (chan *)(c->base + chans_at);
        c->slot_data = c->base + slot_data_at;
        c->chan_data = c->base + chan_data_at;
    }
    return at;
}

static void set_error(struct ncclComm *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_error(struct ncclComm *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last, sizeof c->last, fmt, ap);
    va_end(ap);
    atomic_store(&c->state, code);
}

/* Waits until *v >= want. 0; -1 when c was aborted here or by a member
 * (then its state says so), or after the timeout (a breach). */
static int await(struct ncclComm *c, _Atomic long *v, long want, const char *what)
{
    double t0 = 0;
    for (int spin = 0; atomic_load_explicit(v, memory_order_acquire) < want; spin++) {
        if (atomic_load(&c->aborted))
            return -1;
        int by = atomic_load(&c->sh->aborted_by);
        if (by) {
            set_error(c, N_REMOTE, "rank %d aborted the communicator", by - 1);
            return -1;
        }
        if (spin < 64) {
            sched_yield();
            continue;
        }
        if (t0 == 0)
            t0 = now_s();
        if (now_s() - t0 > timeout_s) {
            breach("rank %d of %d waited %g s in %s", c->rank, c->nranks, timeout_s, what);
            set_error(c, N_SYSTEM, "timed out in %s", what);
            return -1;
        }
        struct timespec t = {0, 50000};
        nanosleep(&t, NULL);
    }
    return 0;
}

/* Maps the file of id for member rank of n; waits until all have it. */
static int join(struct ncclComm *c, const fake_id *id, int n, int rank)
{
    c->nranks = n;
    c->rank = rank;
    snprintf(c->path, sizeof c->path, "%s", id->path);
    c->size = layout(NULL, n);
    int fd = open(id->path, O_RDWR | O_CREAT, 0600);
    if (fd < 0) {
        breach("cannot open %s", id->path);
        return -1;
    }
    if (ftruncate(fd, (off_t)c->size) != 0) {
        close(fd);
        breach("cannot size %s", id->path);
        return -1;
    }
    c->base = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c->base == MAP_FAILED) {
        c->base = NULL;
        breach("cannot map %s", id->path);
        return -1;
    }
    layout(c, n);
    c->sent = calloc((size_t)n, sizeof *c->sent);
    c->recvd = calloc((size_t)n, sizeof *c->recvd);
    if (!c->sent || !c->recvd)
        return -1;
    atomic_fetch_add(&c->sh->joined, 1);
    int all;
    double t0 = now_s();
    while ((all = atomic_load(&c->sh->joined)) < n) {
        if (now_s() - t0 > timeout_s) {
            breach("rank %d of %d: only %d ranks joined %s in %g s", rank, n, all, id->path,
                   timeout_s);
            return -1;
        }
        struct timespec t = {0, 100000};
        nanosleep(&t, NULL);
    }
    if (atomic_fetch_add(&c->sh->attached, 1) + 1 == n)
        unlink(id->path); /* every member has it mapped */
    return 0;
}

static struct ncclComm *new_comm(bool blocking)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->blocking = blocking;
    atomic_store(&c->polls, blocking ? 0 : 1);
    atomic_store(&c->state, N_OK);
    return c;
}

static void free_comm(struct ncclComm *c)
{
    if (c->base)
        munmap(c->base, c->size);
    free(c->sent);
    free(c->recvd);
    free(c);
}

static bool live_comm(const struct ncclComm *c)
{
    pthread_mutex_lock(&lock);
    const struct ncclComm *x = comms;
    while (x && x != c)
        x = x->next;
    pthread_mutex_unlock(&lock);
    return x != NULL;
}

static void add_comm(struct ncclComm *c)
{
    pthread_mutex_lock(&lock);
    c->next = comms;
    comms = c;
    pthread_mutex_unlock(&lock);
}

/* ---- ops, queued per stream ---- */

typedef enum { OP_ALL_REDUCE, OP_REDUCE_SCATTER, OP_ALL_GATHER, OP_BROADCAST, OP_P2P } op_kind;
static const char *const op_name[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather",
                                      "ncclBroadcast", "ncclSend/ncclRecv"};

typedef struct xfer {
    bool send;
    rt_cu_ptr buf;
    size_t bytes;
    int peer;
} xfer;

typedef struct op {
    op_kind kind;
    struct ncclComm *comm;
    rt_cu_ptr send, recv;
    size_t count;
    int dtype, redop, root;
    xfer *x;
    int nx;
    rt_cu_stream stream;
    long ticket;
    struct op *next;
} op;

typedef struct runner {
    rt_cu_stream stream;
    op *head, *tail;
    op *current;
    pthread_cond_t more;
    struct runner *next;
} runner;
static runner *runners;

static size_t dtype_size(int t)
{
    switch (t) {
    case RT_NCCL_UINT8: return 1;
    case RT_NCCL_FLOAT16: case RT_NCCL_BFLOAT16: return 2;
    case RT_NCCL_INT32: case RT_NCCL_FLOAT32: return 4;
    default: return 0;
    }
}

/* An element of type t as f32 (support/half.c's conversions), and back,
 * rounded to nearest even. */
static float get(const unsigned char *p, int t)
{
    uint16_t h;
    float f;
    if (t == RT_NCCL_FLOAT16 || t == RT_NCCL_BFLOAT16) {
        memcpy(&h, p, 2);
        return t == RT_NCCL_FLOAT16 ? su_f16_to_f32(h) : su_bf16_to_f32(h);
    }
    memcpy(&f, p, 4);
    return f;
}

static void put(unsigned char *p, int t, float f)
{
    if (t == RT_NCCL_FLOAT16 || t == RT_NCCL_BFLOAT16) {
        uint16_t h = t == RT_NCCL_FLOAT16 ? su_f32_to_f16(f) : su_f32_to_bf16(f);
        memcpy(p, &h, 2);
        return;
    }
    memcpy(p, &f, 4);
}

/* dst[i] = the reduction over members j of src_j[i], i < count. */
static void reduce(struct ncclComm *c, unsigned char *dst, size_t first, size_t count, int t,
                   int redop)
{
    size_t es = dtype_size(t);
    for (size_t i = 0; i < count; i++) {
        const unsigned char *q = c->slot_data + (first + i) * es;
        if (t == RT_NCCL_INT32 || t == RT_NCCL_UINT8) {
            int64_t acc = 0;
            for (int j = 0; j < c->nranks; j++) {
                int64_t v = 0;
                if (t == RT_NCCL_INT32) {
                    int32_t w;
                    memcpy(&w, q + (size_t)j * cap, 4);
                    v = w;
                } else {
                    v = q[(size_t)j * cap];
                }
                acc = j == 0 ? v : redop == RT_NCCL_MAX ? (v > acc ? v : acc)
                                                        : (int64_t)((uint64_t)acc + (uint64_t)v);
            }
            if (t == RT_NCCL_INT32) {
                int32_t w = (int32_t)(uint32_t)acc;
                memcpy(dst + i * es, &w, 4);
            } else {
                dst[i] = (unsigned char)acc;
            }
            continue;
        }
        float acc = 0;
        for (int j = 0; j < c->nranks; j++) {
            float v = get(q + (size_t)j * cap, t);
            acc = j == 0 ? v : redop == RT_NCCL_MAX ? (v > acc || v != v ? v : acc) : acc + v;
        }
        put(dst + i * es, t, acc);
    }
}

/* A collective: my operand into my slot, every member's read, mine written. */
static void run_collective(op *o)
{
    struct ncclComm *c = o->comm;
    int n = c->nranks, me = c->rank;
    size_t es = dtype_size(o->dtype);
    size_t in_bytes = o->kind == OP_REDUCE_SCATTER ? o->count * es * (size_t)n : o->count * es;
    long k = ++c->coll_seq;
    char what[128];
    snprintf(what, sizeof what, "%s #%ld", op_name[o->kind], k);
    for (int j = 0; j < n; j++) /* every member has read my operand of the last one */
        if (await(c, &c->slots[j].done, k - 1, what) != 0)
            return;
    slot *mine = &c->slots[me];
    mine->kind = (int)o->kind;
    mine->dtype = o->dtype;
    mine->redop = o->redop;
    mine->root = o->root;
    mine->count = (long)o->count;
    mine->bytes = (long)in_bytes;
    if (o->kind != OP_BROADCAST || me == o->root)
        memcpy(c->slot_data + (size_t)me * cap, (const void *)(uintptr_t)o->send, in_bytes);
    atomic_store_explicit(&mine->posted, k, memory_order_release);
    for (int j = 0; j < n; j++)
        if (await(c, &c->slots[j].posted, k, what) != 0)
            return;
    for (int j = 0; j < n; j++) {
        const slot *s = &c->slots[j];
        if (s->kind != mine->kind || s->dtype != mine->dtype || s->count != mine->count ||
            (o->kind != OP_ALL_GATHER && o->kind != OP_BROADCAST && s->redop != mine->redop) ||
            (o->kind == OP_BROADCAST && s->root != mine->root)) {
            breach("%s on rank %d of %d: rank %d calls %s (count %ld, type %d, op %d, root %d) "
                   "where this one calls count %ld, type %d, op %d, root %d",
                   what, me, n, j, op_name[s->kind], s->count, s->dtype, s->redop, s->root,
                   mine->count, mine->dtype, mine->redop, mine->root);
            set_error(c, N_INVALID_USAGE, "%s: ranks %d and %d call different collectives",
                      what, me, j);
            atomic_store_explicit(&mine->done, k, memory_order_release);
            return;
        }
    }
    unsigned char *out = (unsigned char *)(uintptr_t)o->recv;
    switch (o->kind) {
    case OP_ALL_REDUCE:
        reduce(c, out, 0, o->count, o->dtype, o->redop);
        break;
    case OP_REDUCE_SCATTER:
        reduce(c, out, (size_t)me * o->count, o->count, o->dtype, o->redop);
        break;
    case OP_ALL_GATHER:
        for (int j = 0; j < n; j++)
            memcpy(out + (size_t)j * in_bytes, c->slot_data + (size_t)j * cap, in_bytes);
        break;
    case OP_BROADCAST:
        memmove(out, c->slot_data + (size_t)o->root * cap, in_bytes);
        break;
    case OP_P2P:
        break;
    }
    atomic_store_explicit(&mine->done, k, memory_order_release);
}

static chan *chan_of(struct ncclComm *c, int from, int to)
{
    return &c->chans[(size_t)from * c->nranks + to];
}

static unsigned char *chan_data(struct ncclComm *c, int from, int to)
{
    return c->chan_data + ((size_t)from * c->nranks + to) * cap;
}

/* A group of sends and receives: the sends posted, the receives taken,
 * then every send waited for until its peer has taken it. */
static void run_p2p(op *o)
{
    struct ncclComm *c = o->comm;
    int me = c->rank;
    long *seq = calloc((size_t)o->nx, sizeof *seq);
    if (!seq) {
        set_error(c, N_SYSTEM, "out of memory");
        return;
    }
    char what[128];
    for (int i = 0; i < o->nx; i++) {
        const xfer *x = &o->x[i];
        if (!x->send)
            continue;
        chan *ch = chan_of(c, me, x->peer);
        long k = seq[i] = ++c->sent[x->peer];
        snprintf(what, sizeof what, "ncclSend #%ld to rank %d", k, x->peer);
        if (await(c, &ch->taken, k - 1, what) != 0)
            goto out;
        memcpy(chan_data(c, me, x->peer), (const void *)(uintptr_t)x->buf, x->bytes);
        ch->bytes = (long)x->bytes;
        atomic_store_explicit(&ch->sent, k, memory_order_release);
    }
    for (int i = 0; i < o->nx; i++) {
        const xfer *x = &o->x[i];
        if (x->send)
            continue;
        chan *ch = chan_of(c, x->peer, me);
        long k = ++c->recvd[x->peer];
        snprintf(what, sizeof what, "ncclRecv #%ld from rank %d", k, x->peer);
        if (await(c, &ch->sent, k, what) != 0)
            goto out;
        if ((size_t)ch->bytes != x->bytes) {
            breach("%s on rank %d: %zu bytes received where %ld were sent", what, me, x->bytes,
                   ch->bytes);
            set_error(c, N_INVALID_USAGE, "%s: the send and the recv differ in size", what);
        } else {
            memcpy((void *)(uintptr_t)x->buf, chan_data(c, x->peer, me), x->bytes);
        }
        atomic_store_explicit(&ch->taken, k, memory_order_release);
    }
    for (int i = 0; i < o->nx; i++)
        if (o->x[i].send) {
            snprintf(what, sizeof what, "ncclSend #%ld to rank %d", seq[i], o->x[i].peer);
            if (await(c, &chan_of(c, me, o->x[i].peer)->taken, seq[i], what) != 0)
                goto out;
        }
out:
    free(seq);
}

/* Whether this op is the one FAKENCCL_HANG names: then it waits until its
 * communicator is aborted. */
static void maybe_hang(op *o)
{
    if (world_rank != hang_rank || ++ops_run != hang_op)
        return;
    fprintf(stderr, "fake_nccl: rank %d: op %ld hangs (FAKENCCL_HANG)\n", world_rank, ops_run);
    while (!atomic_load(&o->comm->aborted) && !atomic_load(&o->comm->sh->aborted_by)) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
}

static void *run_stream(void *arg)
{
    runner *r = arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!r->head)
            pthread_cond_wait(&r->more, &lock);
        op *o = r->head;
        r->current = o;
        pthread_mutex_unlock(&lock);
        struct ncclComm *c = o->comm; /* NULL: its communicator was aborted */
        if (c && hang_rank >= 0)
            maybe_hang(o);
        /* an aborted or failed communicator runs nothing more */
        if (c && !atomic_load(&c->aborted) && !atomic_load(&c->sh->aborted_by) &&
            atomic_load(&c->state) == N_OK)
            (o->kind == OP_P2P ? run_p2p : run_collective)(o);
        pthread_mutex_lock(&lock);
        r->head = o->next;
        if (!r->head)
            r->tail = NULL;
        r->current = NULL;
        pthread_cond_broadcast(&idle);
        pthread_mutex_unlock(&lock);
        stream_complete(o->stream, o->ticket);
        free(o->x);
        free(o);
    }
    return NULL;
}

/* Ops captured into CUDA graphs: kept for the graphs' launches (and
 * reachable, for the leak checker), until the process ends. */
static op *captured;

/* A captured op, at a launch of its graph: run now, in the launching
 * thread, in order with the graph's copies, after what its stream's runner
 * still has (the eager ops queued before). */
static void run_captured(void *arg)
{
    op *o = arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        const runner *r = runners;
        while (r && r->stream != o->stream)
            r = r->next;
        if (!r || !r->head)
            break;
        pthread_cond_wait(&idle, &lock);
    }
    pthread_mutex_unlock(&lock);
    struct ncclComm *c = o->comm;
    if (!live_comm(c)) {
        breach("%s in a CUDA graph launched after its communicator was destroyed",
               op_name[o->kind]);
        return;
    }
    if (hang_rank >= 0)
        maybe_hang(o);
    if (!atomic_load(&c->aborted) && !atomic_load(&c->sh->aborted_by) &&
        atomic_load(&c->state) == N_OK)
        (o->kind == OP_P2P ? run_p2p : run_collective)(o);
}

/* Queues o on its stream's runner (started at the stream's first op), or,
 * on a stream being captured, into the graph. */
static rt_nccl_result queue(op *o)
{
    if (capture_host(o->stream, run_captured, o) == 0) {
        pthread_mutex_lock(&lock);
        o->next = captured;
        captured = o;
        pthread_mutex_unlock(&lock);
        return N_OK;
    }
    o->ticket = stream_enqueue(o->stream);
    if (o->ticket < 0) {
        breach("%s: stream %p is not a live stream", op_name[o->kind], (void *)o->stream);
        free(o->x);
        free(o);
        return N_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&lock);
    runner *r = runners;
    while (r && r->stream != o->stream)
        r = r->next;
    if (!r) {
        r = calloc(1, sizeof *r);
        pthread_t th;
        bool started = false;
        if (r) {
            pthread_cond_init(&r->more, NULL);
            r->stream = o->stream;
            started = pthread_create(&th, NULL, run_stream, r) == 0;
        }
        if (!started) {
            pthread_mutex_unlock(&lock);
            stream_complete(o->stream, o->ticket);
            free(r);
            free(o->x);
            free(o);
            return N_SYSTEM;
        }
        pthread_detach(th);
        r->next = runners;
        runners = r;
    }
    if (r->tail)
        r->tail->next = o;
    else
        r->head = o;
    r->tail = o;
    pthread_cond_signal(&r->more);
    pthread_mutex_unlock(&lock);
    return N_OK;
}

/* Whether a runner has an op of c queued or running (lock held). */
static bool busy_with(const struct ncclComm *c)
{
    for (const runner *r = runners; r; r = r->next)
        for (const op *o = r->head; o; o = o->next)
            if (o->comm == c)
                return true;
    return false;
}

/* Returns once no runner has an op of c queued or running. */
static void wait_ops_locked(const struct ncclComm *c)
{
    while (busy_with(c))
        pthread_cond_wait(&idle, &lock);
}

static void wait_ops(const struct ncclComm *c)
{
    pthread_mutex_lock(&lock);
    wait_ops_locked(c);
    pthread_mutex_unlock(&lock);
}

/* Whether c is a live communicator; if not, a breach of `call`. */
static bool known(const struct ncclComm *c, const char *call)
{
    if (live_comm(c))
        return true;
    breach("%s: not a live communicator", call);
    return false;
}

/* ---- set-up and the report at exit ---- */

static void report(void)
{
    if (!driver_log)
        return;
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return;
    for (int i = 0; i < NENTRIES; i++)
        fprintf(f, "%s %ld\n", entry_name[i], atomic_load(&calls[i]));
    long live = 0;
    pthread_mutex_lock(&lock);
    for (const struct ncclComm *c = comms; c; c = c->next)
        live++;
    pthread_mutex_unlock(&lock);
    fprintf(f, "live_nccl_comms %ld\n", live);
    if (fclose(f) == 0)
        driver_log(text, n);
    free(text);
}

static bool driver_ready(void)
{
    if (stream_enqueue)
        return true;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!drv)
        drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (drv) {
        *(void **)&in_device = dlsym(drv, "fakecuda_in_device");
        *(void **)&driver_breach = dlsym(drv, "fakecuda_breach");
        *(void **)&driver_log = dlsym(drv, "fakecuda_log");
        *(void **)&stream_complete = dlsym(drv, "fakecuda_stream_complete");
        *(void **)&stream_enqueue = dlsym(drv, "fakecuda_stream_enqueue");
        *(void **)&capture_host = dlsym(drv, "fakecuda_capture_host");
    }
    if (!stream_enqueue || !stream_complete || !in_device || !capture_host) {
        fprintf(stderr, "fake_nccl: the libcuda.so.1 loaded is not tests/fakecuda's\n");
        return false;
    }
    return true;
}

__attribute__((constructor)) static void setup(void)
{
    for (const char *s = getenv("FAKECUDA_FAIL"); s && *s;
         s = strchr(s, ',') ? strchr(s, ',') + 1 : "") {
        const char *colon = strchr(s, ':');
        if (!colon || strncmp(s, "nccl", 4) != 0)
            continue;
        for (int i = 0; i < NENTRIES && nfail < (int)(sizeof fail / sizeof *fail); i++)
            if (strlen(entry_name[i]) == (size_t)(colon - s) &&
                !strncmp(entry_name[i], s, (size_t)(colon - s))) {
                char *end;
                fail[nfail].entry = i;
                fail[nfail].call = strtol(colon + 1, &end, 10);
                fail[nfail].code = *end == ':' ? (rt_nccl_result)strtoul(end + 1, NULL, 10)
                                               : N_SYSTEM;
                nfail++;
            }
    }
    const char *s = getenv("FAKENCCL_HANG");
    if (s && *s && sscanf(s, "%d:%ld", &hang_rank, &hang_op) != 2)
        hang_rank = -1;
    s = getenv("FAKENCCL_BYTES");
    if (s && *s)
        cap = (size_t)strtoull(s, NULL, 10);
    s = getenv("FAKENCCL_TIMEOUT");
    if (s && *s)
        timeout_s = atof(s);
    atexit(report);
}

/* ---- the entry points ---- */

API rt_nccl_result ncclGetVersion(int *version)
{
    ENTER(ncclGetVersion);
    *version = 22800;
    return N_OK;
}

API rt_nccl_result ncclGetUniqueId(rt_nccl_id *id)
{
    ENTER(ncclGetUniqueId);
    static atomic_int made;
    fake_id f;
    memset(&f, 0, sizeof f);
    f.magic = ID_MAGIC;
    const char *tmp = getenv("TMPDIR");
    snprintf(f.path, sizeof f.path, "%s/fakenccl-%d-%d-%ld", tmp && *tmp ? tmp : "/tmp",
             (int)getpid(), atomic_fetch_add(&made, 1), (long)time(NULL));
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &f, sizeof f);
    return N_OK;
}

API rt_nccl_result ncclCommInitRankConfig(rt_nccl_comm *comm, int nranks, rt_nccl_id id,
                                          int rank, rt_nccl_config *config)
{
    ENTER(ncclCommInitRankConfig);
    fake_id f;
    memcpy(&f, id.internal, sizeof f);
    if (f.magic != ID_MAGIC || nranks < 1 || rank < 0 || rank >= nranks) {
        breach("ncclCommInitRankConfig: rank %d of %d, or an id not from ncclGetUniqueId",
               rank, nranks);
        return N_INVALID_ARGUMENT;
    }
    if (config && (config->magic != RT_NCCL_CONFIG_MAGIC || config->size < sizeof *config)) {
        breach("ncclCommInitRankConfig: a config not made as NCCL_CONFIG_INITIALIZER makes it");
        return N_INVALID_ARGUMENT;
    }
    if (!driver_ready())
        return N_SYSTEM;
    struct ncclComm *c = new_comm(!config || config->blocking != 0);
    if (!c)
        return N_SYSTEM;
    if (join(c, &f, nranks, rank) != 0) {
        free_comm(c);
        return N_SYSTEM;
    }
    if (world_rank < 0)
        world_rank = rank;
    add_comm(c);
    *comm = c;
    return c->blocking ? N_OK : N_IN_PROGRESS;
}

/* Collective over comm's members: each one's (color, key) through a
 * collective of its own; the members of one color in (key, rank) order
 * make the child, whose file is named after the parent's. */
API rt_nccl_result ncclCommSplit(rt_nccl_comm comm, int color, int key, rt_nccl_comm *newcomm,
                                 rt_nccl_config *config)
{
    ENTER(ncclCommSplit);
    struct ncclComm *c = comm;
    if (!known(c, "ncclCommSplit"))
        return N_INVALID_ARGUMENT;
    wait_ops(c); /* the split comes after the ops queued on c */
    long k = ++c->coll_seq;
    for (int j = 0; j < c->nranks; j++) /* every member has read my last slot */
        if (await(c, &c->slots[j].done, k - 1, "ncclCommSplit") != 0)
            return N_REMOTE;
    slot *mine = &c->slots[c->rank];
    mine->kind = -1;
    mine->color = color;
    mine->key = key;
    atomic_store_explicit(&mine->posted, k, memory_order_release);
    int n = 0, rank = 0;
    for (int j = 0; j < c->nranks; j++) {
        if (await(c, &c->slots[j].posted, k, "ncclCommSplit") != 0)
            return N_REMOTE;
        const slot *s = &c->slots[j];
        if (s->kind != -1) {
            breach("ncclCommSplit on rank %d: rank %d calls %s", c->rank, j, op_name[s->kind]);
            return N_INVALID_USAGE;
        }
        if (color != SPLIT_NOCOLOR && s->color == color) {
            n++;
            rank += s->key < key || (s->key == key && j < c->rank);
        }
    }
    atomic_store_explicit(&mine->done, k, memory_order_release);
    int split = c->splits++;
    *newcomm = NULL;
    if (color == SPLIT_NOCOLOR)
        return c->blocking ? N_OK : N_IN_PROGRESS;
    bool blocking = config ? config->blocking != 0 : c->blocking;
    struct ncclComm *child = new_comm(blocking);
    fake_id f;
    memset(&f, 0, sizeof f);
    f.magic = ID_MAGIC;
    char name[sizeof c->path + 32];
    snprintf(name, sizeof name, "%s.%d.%d", c->path, split, color);
    bool fits = strlen(name) < sizeof f.path;
    if (fits)
        memcpy(f.path, name, strlen(name) + 1);
    if (!child || !fits || join(child, &f, n, rank) != 0) {
        if (child)
            free_comm(child);
        return N_SYSTEM;
    }
    add_comm(child);
    *newcomm = child;
    atomic_store(&c->polls, blocking ? 0 : 1);
    return blocking ? N_OK : N_IN_PROGRESS;
}

API rt_nccl_result ncclCommGetAsyncError(rt_nccl_comm comm, rt_nccl_result *state)
{
    ENTER(ncclCommGetAsyncError);
    struct ncclComm *c = comm;
    if (!known(c, "ncclCommGetAsyncError"))
        return N_INVALID_ARGUMENT;
    if (atomic_load(&c->polls) > 0) {
        atomic_fetch_sub(&c->polls, 1);
        *state = N_IN_PROGRESS;
        return N_OK;
    }
    *state = (rt_nccl_result)atomic_load(&c->state);
    return N_OK;
}

/* Whether a runner is running an op of c now (lock held). */
static bool running(const struct ncclComm *c)
{
    for (const runner *r = runners; r; r = r->next)
        if (r->current && r->current->comm == c)
            return true;
    return false;
}

/* c leaves the list and is unmapped: once its ops are all run, or when
 * aborted, once the one running ends (it gives up at its next look) and
 * with those queued behind it left to complete without running, as NCCL's
 * abort ends a communicator's kernels. */
static rt_nccl_result drop(struct ncclComm *c, bool abort, const char *call)
{
    if (!known(c, call))
        return N_INVALID_ARGUMENT;
    if (abort) {
        atomic_store(&c->aborted, true);
        int none = 0;
        atomic_compare_exchange_strong(&c->sh->aborted_by, &none, c->rank + 1);
    }
    pthread_mutex_lock(&lock);
    if (abort) {
        for (runner *r = runners; r; r = r->next)
            for (op *o = r->head; o; o = o->next)
                if (o != r->current && o->comm == c)
                    o->comm = NULL;
        while (running(c))
            pthread_cond_wait(&idle, &lock);
    }
    wait_ops_locked(c);
    struct ncclComm **at = &comms;
    while (*at != c)
        at = &(*at)->next;
    *at = c->next;
    pthread_mutex_unlock(&lock);
    free_comm(c);
    return N_OK;
}

API rt_nccl_result ncclCommAbort(rt_nccl_comm comm)
{
    ENTER(ncclCommAbort);
    return comm ? drop(comm, true, "ncclCommAbort") : N_OK;
}

API rt_nccl_result ncclCommDestroy(rt_nccl_comm comm)
{
    ENTER(ncclCommDestroy);
    struct ncclComm *c = comm;
    if (!c)
        return N_OK;
    pthread_mutex_lock(&lock);
    bool busy = busy_with(c);
    pthread_mutex_unlock(&lock);
    if (busy)
        breach("ncclCommDestroy: ops still queued (ncclCommFinalize first)");
    return drop(c, false, "ncclCommDestroy");
}

API rt_nccl_result ncclCommFinalize(rt_nccl_comm comm)
{
    ENTER(ncclCommFinalize);
    struct ncclComm *c = comm;
    if (!known(c, "ncclCommFinalize"))
        return N_INVALID_ARGUMENT;
    wait_ops(c);
    atomic_store(&c->polls, c->blocking ? 0 : 1);
    return c->blocking ? N_OK : N_IN_PROGRESS;
}

API const char *ncclGetErrorString(rt_nccl_result r)
{
    enter(E_ncclGetErrorString);
    static const char *const text[] = {
        "no error", "unhandled cuda error", "unhandled system error", "internal error",
        "invalid argument", "invalid usage", "remote process exited or there was a network error",
        "NCCL operation in progress"};
    return r < sizeof text / sizeof *text ? text[r] : "unknown result code";
}

API const char *ncclGetLastError(rt_nccl_comm comm)
{
    enter(E_ncclGetLastError);
    return comm && live_comm(comm) ? ((struct ncclComm *)comm)->last : "";
}

/* ---- collectives and messages ---- */

/* Initial-exec, as the pretend driver's `current`: a dlopen'd library's
 * dynamic TLS is what GCC 12's LeakSanitizer (libasan.so.8) tracks through
 * __tls_get_addr, and at the exit of an MPI rank it has read a bogus block
 * from that tracking ("DTLS 9 at 0x642c-0x100000752e"; its tracer then
 * dies of a segfault and the rank aborts, failing lit/fakecuda/nccl.sh
 * under ASan, more or less often as the run's timing moves). In the
 * static TLS glibc keeps for dlopen'd libraries these are no block of
 * the tracker's. */
static __thread __attribute__((tls_model("initial-exec"))) int group_depth;
static __thread __attribute__((tls_model("initial-exec"))) op *group;

/* The checks of an op's type and buffers before it is queued. */
static rt_nccl_result check(const char *call, int dtype, rt_cu_ptr a, size_t abytes, rt_cu_ptr b,
                            size_t bbytes)
{
    if (!dtype_size(dtype)) {
        breach("%s: data type %d is not one this fake has", call, dtype);
        return N_INVALID_ARGUMENT;
    }
    if (abytes > cap || bbytes > cap) {
        breach("%s: %zu bytes, more than FAKENCCL_BYTES (%zu)", call,
               abytes > bbytes ? abytes : bbytes, cap);
        return N_INVALID_ARGUMENT;
    }
    if ((abytes && !in_device(a, abytes)) || (bbytes && !in_device(b, bbytes))) {
        breach("%s: a buffer of %zu or %zu bytes at 0x%llx or 0x%llx is not inside one live "
               "allocation", call, abytes, bbytes, a, b);
        return N_INVALID_ARGUMENT;
    }
    return N_OK;
}

static rt_nccl_result collective(const char *call, op_kind kind, const void *send, void *recv,
                                 size_t count, int dtype, int redop, int root,
                                 struct ncclComm *c, rt_cu_stream s)
{
    if (group_depth) {
        breach("%s inside a group: not modelled", call);
        return N_INVALID_USAGE;
    }
    if (!known(c, call))
        return N_INVALID_ARGUMENT;
    size_t es = dtype_size(dtype);
    size_t in = kind == OP_REDUCE_SCATTER ? count * (size_t)c->nranks : count;
    size_t out = kind == OP_ALL_GATHER ? count * (size_t)c->nranks : count;
    rt_cu_ptr a = (rt_cu_ptr)(uintptr_t)send, b = (rt_cu_ptr)(uintptr_t)recv;
    bool sends = kind != OP_BROADCAST || c->rank == root;
    rt_nccl_result r = check(call, dtype, a, sends ? in * es : 0, b, out * es);
    if (r)
        return r;
    if (kind == OP_BROADCAST && (root < 0 || root >= c->nranks)) {
        breach("%s: root %d of %d ranks", call, root, c->nranks);
        return N_INVALID_ARGUMENT;
    }
    op *o = calloc(1, sizeof *o);
    if (!o)
        return N_SYSTEM;
    *o = (op){kind, c, a, b, count, dtype, redop, root, NULL, 0, s, 0, NULL};
    return queue(o);
}

API rt_nccl_result ncclAllReduce(const void *send, void *recv, size_t count, rt_nccl_dtype t,
                                 rt_nccl_op op_, rt_nccl_comm comm, rt_cu_stream s)
{
    ENTER(ncclAllReduce);
    return collective("ncclAllReduce", OP_ALL_REDUCE, send, recv, count, (int)t, (int)op_, 0,
                      comm, s);
}

API rt_nccl_result ncclReduceScatter(const void *send, void *recv, size_t recvcount,
                                     rt_nccl_dtype t, rt_nccl_op op_, rt_nccl_comm comm,
                                     rt_cu_stream s)
{
    ENTER(ncclReduceScatter);
    return collective("ncclReduceScatter", OP_REDUCE_SCATTER, send, recv, recvcount, (int)t,
                      (int)op_, 0, comm, s);
}

API rt_nccl_result ncclAllGather(const void *send, void *recv, size_t sendcount, rt_nccl_dtype t,
                                 rt_nccl_comm comm, rt_cu_stream s)
{
    ENTER(ncclAllGather);
    return collective("ncclAllGather", OP_ALL_GATHER, send, recv, sendcount, (int)t, 0, 0, comm,
                      s);
}

API rt_nccl_result ncclBroadcast(const void *send, void *recv, size_t count, rt_nccl_dtype t,
                                 int root, rt_nccl_comm comm, rt_cu_stream s)
{
    ENTER(ncclBroadcast);
    return collective("ncclBroadcast", OP_BROADCAST, send, recv, count, (int)t, 0, root, comm, s);
}

/* A send or recv: into the open group, or a group of its own. */
static rt_nccl_result p2p(const char *call, bool send, void *buf, size_t count, int dtype,
                          int peer, struct ncclComm *c, rt_cu_stream s)
{
    if (!known(c, call))
        return N_INVALID_ARGUMENT;
    size_t bytes = count * dtype_size(dtype);
    rt_cu_ptr a = (rt_cu_ptr)(uintptr_t)buf;
    rt_nccl_result r = check(call, dtype, a, bytes, 0, 0);
    if (r)
        return r;
    if (peer < 0 || peer >= c->nranks) {
        breach("%s: peer %d of %d ranks", call, peer, c->nranks);
        return N_INVALID_ARGUMENT;
    }
    op *o = group;
    if (o && (o->comm != c || o->stream != s)) {
        breach("%s: a group's ops on two communicators or streams (not modelled)", call);
        return N_INVALID_USAGE;
    }
    if (!o) {
        o = calloc(1, sizeof *o);
        if (!o)
            return N_SYSTEM;
        *o = (op){OP_P2P, c, 0, 0, 0, dtype, 0, 0, NULL, 0, s, 0, NULL};
    }
    xfer *x = realloc(o->x, ((size_t)o->nx + 1) * sizeof *x);
    if (!x) {
        if (!group)
            free(o);
        return N_SYSTEM;
    }
    o->x = x;
    o->x[o->nx++] = (xfer){send, a, bytes, peer};
    if (group_depth) {
        group = o;
        return N_OK;
    }
    return queue(o);
}

API rt_nccl_result ncclSend(const void *send, size_t count, rt_nccl_dtype t, int peer,
                            rt_nccl_comm comm, rt_cu_stream s)
{
    ENTER(ncclSend);
    return p2p("ncclSend", true, (void *)send, count, (int)t, peer, comm, s);
}

API rt_nccl_result ncclRecv(void *recv, size_t count, rt_nccl_dtype t, int peer,
                            rt_nccl_comm comm, rt_cu_stream s)
{
    ENTER(ncclRecv);
    return p2p("ncclRecv", false, recv, count, (int)t, peer, comm, s);
}

API rt_nccl_result ncclGroupStart(void)
{
    ENTER(ncclGroupStart);
    group_depth++;
    return N_OK;
}

API rt_nccl_result ncclGroupEnd(void)
{
    rt_nccl_result injected = enter(E_ncclGroupEnd);
    if (group_depth == 0) {
        breach("ncclGroupEnd without ncclGroupStart");
        return N_INVALID_USAGE;
    }
    if (--group_depth || !group)
        return injected;
    op *o = group;
    group = NULL;
    if (injected) { /* the group's ops are dropped, as NCCL's failed group */
        free(o->x);
        free(o);
        return injected;
    }
    return queue(o);
}
