/* comm_nccl.c: the nccl communicator (comm_nccl.h): the pure parts first
 * (rank -> GPU map, wait points, the watchdog's decision), then, with MPI,
 * the bootstrap, the ops on the comm stream and the watchdog thread. */
#include "runtime/comm/comm_nccl.h"

#include "runtime/comm/comm_impl.h"
#include "runtime/comm/nccl_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the rank -> GPU map ---- */

/* The ranks of host h: how many, and the lowest and highest local rank. */
static int ranks_on(int n, const char *const *host, const int *local, const char *h, int *lo,
                    int *hi)
{
    int count = 0;
    *lo = 1 << 30, *hi = -1;
    for (int r = 0; r < n; r++)
        if (!strcmp(host[r], h)) {
            count++;
            *lo = local[r] < *lo ? local[r] : *lo;
            *hi = local[r] > *hi ? local[r] : *hi;
        }
    return count;
}

int rt_nccl_check_map(int n, const char *const *host, const int *local, const int *ndev,
                      const char *const *bus, su_status *err)
{
    for (int r = 0; r < n; r++) {
        int lo, hi, count = ranks_on(n, host, local, host[r], &lo, &hi);
        if (count > ndev[r] || local[r] >= ndev[r]) {
            su_fail(err, SU_GPU, "host %s runs local ranks %d to %d (%d rank%s) but has %d "
                    "GPU%s: the nccl communicator needs one GPU per rank", host[r], lo, hi,
                    count, count == 1 ? "" : "s", ndev[r], ndev[r] == 1 ? "" : "s");
            return -1;
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (!strcmp(host[a], host[b]) && (local[a] == local[b] || !strcmp(bus[a], bus[b]))) {
                su_fail(err, SU_GPU, "ranks %d and %d (local ranks %d and %d on host %s) would "
                        "share the GPU at PCI bus %s", a, b, local[a], local[b], host[a],
                        bus[a]);
                return -1;
            }
    return 0;
}

/* ---- wait points ---- */

void rt_nccl_launch_steps(const rt_plan *p, int st, int32_t *launch_at)
{
    const rt_program *g = &p->stage[st];
    for (int i = 0; i < g->ninstr; i++)
        launch_at[i] = i;
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->stage == st && kr->ninstr > 0)
            for (int j = 0; j < kr->ninstr; j++)
                launch_at[kr->instr[j]] = kr->instr[kr->ninstr - 1];
    }
}

typedef struct span {
    int64_t lo, hi; /* [lo, hi) arena bytes */
} span;

static span span_of(const rt_program *g, int32_t b, const rt_type *t)
{
    int64_t at = g->buf_offset[b];
    return (span){at, at + rt_type_bytes(t)};
}

static bool touches(const rt_program *g, const rt_instr *in, const span *s, int ns)
{
    for (int k = 0; k <= in->nin; k++) {
        int32_t b = k < in->nin ? in->in[k] : in->out;
        if (b < 0)
            continue;
        span t = span_of(g, b, k < in->nin ? &in->in_t[k] : &in->out_t);
        for (int j = 0; j < ns; j++)
            if (t.lo < s[j].hi && s[j].lo < t.hi)
                return true;
    }
    return false;
}

void rt_nccl_wait_points(const rt_program *g, const int32_t *launch_at, int32_t *wait_at)
{
    for (int c = 0; c < g->ninstr; c++) {
        const rt_instr *in = &g->instr[c];
        wait_at[c] = -1;
        if (rt_ops[in->op].cls != RT_K_COMM)
            continue;
        span s[2];
        int ns = 0;
        if (in->nin > 0)
            s[ns++] = span_of(g, in->in[0], &in->in_t[0]);
        if (in->out >= 0)
            s[ns++] = span_of(g, in->out, &in->out_t);
        wait_at[c] = g->ninstr;
        for (int i = 0; i < g->ninstr; i++) {
            int32_t at = launch_at ? launch_at[i] : i;
            const rt_instr *o = &g->instr[i];
            if (at > c && at < wait_at[c] && rt_ops[o->op].cls != RT_K_COMM &&
                touches(g, o, s, ns))
                wait_at[c] = at;
        }
    }
}

/* ---- the watchdog's decision ---- */

int rt_nccl_expired(int n, const double *start, const bool *done, double now, double timeout_s)
{
    int oldest = -1;
    for (int i = 0; i < n; i++)
        if (!done[i] && (oldest < 0 || start[i] < start[oldest]))
            oldest = i;
    return oldest >= 0 && now - start[oldest] > timeout_s ? oldest : -1;
}

#ifdef SHARDC_HAVE_MPI
/* ==== the communicator: MPI, a GPU and NCCL ==== */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

enum { BUS_LEN = 32, HOST_LEN = MPI_MAX_PROCESSOR_NAME, POLL_NS = 5 * 1000 * 1000 };
#define NOT_READY 600 /* CUDA_ERROR_NOT_READY: an event not yet reached */

typedef struct ngroup {
    uint8_t naxes, axes[RT_MAX_AXES];
    rt_nccl_comm comm;
    int64_t seq;      /* ops issued on it */
    char desc[sizeof ((rt_group *)0)->desc];
} ngroup;

typedef struct inflight {
    char what[384];   /* "instruction 7 (all_reduce on axes (dp) #3)" */
    double start;
    rt_cu_event done;
    bool finished;
} inflight;

struct rt_nccl {
    const rt_nccl_api *nc;
    const rt_cu_api *cu;
    const rt_plan *p;
    int rank, ranks, device;
    int64_t coord[RT_MAX_AXES];
    double timeout_s;
    rt_cu_device dev;
    rt_cu_ctx ctx;            /* the device's primary context, retained */
    rt_nccl_comm world;
    ngroup *group;
    int ngroups;
    int64_t *p2p_seq;         /* per peer rank: sends and receives issued */
    rt_cu_ptr staging;        /* the stage's largest re-layout, bytes */
    pthread_mutex_t mu;       /* every NCCL call; group and ngroups (the watchdog reads
                               * them), and the fields below */
    inflight *op;
    int nop, capop;
    bool failed;              /* the communicators are aborted: every call fails */
    char fail[512];           /* why */
    bool stop;
    pthread_t watchdog;
    bool watching;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void nap(void)
{
    struct timespec t = {0, POLL_NS};
    nanosleep(&t, NULL);
}

#define CU(call) RT_CU_CHECK(n->cu, call, err)
#define NC(call) RT_NCCL_CHECK(n->nc, call, err)

/* Every communicator aborted (groups first: they were split from the
 * world), which ends their kernels in flight, and n failed with msg: every
 * later call returns it (rt_nccl_failed). Called with n->mu held, so no
 * other NCCL call is under way. The job goes on: ending it is the
 * caller's decision (shardrun: MPI_Abort), as the library never exits. */
static void fail_locked(rt_nccl *n, const char *msg)
{
    if (n->failed)
        return;
    for (int g = n->ngroups - 1; g >= 0; g--)
        if (n->group[g].comm) {
            n->nc->CommAbort(n->group[g].comm);
            n->group[g].comm = NULL;
        }
    if (n->world) {
        n->nc->CommAbort(n->world);
        n->world = NULL;
    }
    snprintf(n->fail, sizeof n->fail, "%s (the nccl communicators are aborted)", msg);
    n->failed = true;
}

/* Under n->mu: -1 with n's failure in err once it has failed. */
static int failed_locked(rt_nccl *n, su_status *err)
{
    if (!n->failed)
        return 0;
    su_fail(err, SU_GPU, "%s", n->fail);
    return -1;
}

/* Polls c until its last call has left ncclInProgress; 0 when it
 * succeeded, -1 with err when it failed. Past the timeout -1 naming
 * `what`, and when fatal every communicator is aborted (fail_locked). */
static int settle(rt_nccl *n, rt_nccl_comm c, const char *what, bool fatal, su_status *err)
{
    double t0 = now_s();
    for (;;) {
        rt_nccl_result state = RT_NCCL_IN_PROGRESS;
        pthread_mutex_lock(&n->mu);
        if (n->failed) { /* the watchdog aborted c */
            int rc = failed_locked(n, err);
            pthread_mutex_unlock(&n->mu);
            return rc;
        }
        rt_nccl_result r = n->nc->CommGetAsyncError(c, &state);
        if (r == RT_NCCL_SUCCESS && state == RT_NCCL_IN_PROGRESS && now_s() - t0 > n->timeout_s) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s did not complete within %g s", what, n->timeout_s);
            if (fatal)
                fail_locked(n, msg);
            pthread_mutex_unlock(&n->mu);
            return su_fail(err, SU_PEER, "%s", fatal ? n->fail : msg);
        }
        pthread_mutex_unlock(&n->mu);
        if (r != RT_NCCL_SUCCESS)
            state = r;
        if (state == RT_NCCL_SUCCESS)
            return 0;
        if (state != RT_NCCL_IN_PROGRESS) {
            char d[256];
            const char *last = n->nc->GetLastError(c);
            return su_fail(err, SU_GPU, "%s: %s%s%s",
                           what, rt_nccl_describe(n->nc, state, d, sizeof d),
                           last && *last ? ": " : "", last ? last : "");
        }
        sched_yield();
    }
}

/* ---- bootstrap ---- */

/* This rank's node name, local rank, the node's device count and the bus
 * id of device `local rank` (when it exists). */
static int describe_self(rt_nccl *n, char *host, int *local, int *ndev, char *bus, su_status *err)
{
    MPI_Comm node;
    int len = 0;
    MPI_Get_processor_name(host, &len);
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n->rank, MPI_INFO_NULL,
                            &node) != MPI_SUCCESS)
        return su_fail(err, SU_PEER, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    MPI_Comm_rank(node, local);
    MPI_Comm_free(&node);
    if (!CU(DeviceGetCount(ndev)))
        return -1;
    bus[0] = 0;
    if (*local < *ndev) {
        if (!CU(DeviceGet(&n->dev, *local)) ||
            !rt_cu_check(n->cu, n->nc->DeviceGetPCIBusId(bus, BUS_LEN, n->dev),
                         "DeviceGetPCIBusId", __FILE__, __LINE__, err))
            return -1;
    }
    return 0;
}

/* Every rank's description to every rank, then the check of the map. */
static int check_map(rt_nccl *n, su_status *err)
{
    char host[HOST_LEN], bus[BUS_LEN];
    int mine[2]; /* local rank, device count */
    memset(host, 0, sizeof host);
    if (describe_self(n, host, &mine[0], &mine[1], bus, err) != 0)
        return -1;
    char *hosts = calloc((size_t)n->ranks, HOST_LEN), *buses = calloc((size_t)n->ranks, BUS_LEN);
    int *ints = calloc((size_t)n->ranks * 2, sizeof *ints), *local = calloc((size_t)n->ranks, sizeof *local),
        *ndev = calloc((size_t)n->ranks, sizeof *ndev);
    const char **hp = calloc((size_t)n->ranks, sizeof *hp), **bp = calloc((size_t)n->ranks, sizeof *bp);
    int rc = -1;
    if (!hosts || !buses || !ints || !local || !ndev || !hp || !bp) {
        su_fail(err, SU_NOMEM, "out of memory");
    } else if (MPI_Allgather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, MPI_COMM_WORLD) ||
               MPI_Allgather(bus, BUS_LEN, MPI_CHAR, buses, BUS_LEN, MPI_CHAR, MPI_COMM_WORLD) ||
               MPI_Allgather(mine, 2, MPI_INT, ints, 2, MPI_INT, MPI_COMM_WORLD)) {
        su_fail(err, SU_PEER, "MPI_Allgather of the rank -> GPU map failed");
    } else {
        for (int r = 0; r < n->ranks; r++) {
            hp[r] = hosts + (size_t)r * HOST_LEN;
            bp[r] = buses + (size_t)r * BUS_LEN;
            local[r] = ints[2 * r];
            ndev[r] = ints[2 * r + 1];
        }
        rc = rt_nccl_check_map(n->ranks, hp, local, ndev, bp, err);
        n->device = mine[0];
    }
    free(hosts);
    free(buses);
    free(ints);
    free(local);
    free(ndev);
    free(hp);
    free(bp);
    return rc;
}

/* The bytes of staging the re-layouts of stage program g need. */
static int64_t staging_bytes(const rt_program *g)
{
    int64_t most = 1;
    for (int i = 0; i < g->ninstr; i++) {
        const rt_instr *in = &g->instr[i];
        int64_t need = 0;
        if (in->op == RT_OP_ALL_TO_ALL)
            need = 2 * rt_type_bytes(&in->in_t[0]);
        else if (in->op == RT_OP_ALL_GATHER && in->dim > 0)
            need = rt_type_bytes(&in->out_t);
        else if (in->op == RT_OP_REDUCE_SCATTER && in->dim > 0)
            need = rt_type_bytes(&in->in_t[0]);
        most = need > most ? need : most;
    }
    return most;
}

/* The device, its context current, the staging area; the world
 * communicator from rank 0's id. */
static int open_world(rt_nccl *n, su_status *err)
{
    if (!CU(DevicePrimaryCtxRetain(&n->ctx, n->dev)) || !CU(CtxSetCurrent(n->ctx)))
        return -1;
    int st = n->p->stage_axis >= 0 ? (int)n->coord[n->p->stage_axis] : 0;
    if (!CU(MemAlloc(&n->staging, (size_t)staging_bytes(&n->p->stage[st]))))
        return -1;
    rt_nccl_id id;
    memset(&id, 0, sizeof id);
    if (n->rank == 0 && !NC(GetUniqueId(&id)))
        return -1;
    if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return su_fail(err, SU_PEER, "MPI_Bcast of the NCCL id failed");
    rt_nccl_config cfg = {sizeof cfg, RT_NCCL_CONFIG_MAGIC, RT_NCCL_CONFIG_VERSION, 0,
                          RT_NCCL_UNDEF_INT, RT_NCCL_UNDEF_INT, RT_NCCL_UNDEF_INT, NULL,
                          RT_NCCL_UNDEF_INT};
    pthread_mutex_lock(&n->mu);
    bool ok = NC(CommInitRankConfig(&n->world, n->ranks, id, n->rank, &cfg));
    pthread_mutex_unlock(&n->mu);
    if (!ok)
        return -1;
    return settle(n, n->world, "ncclCommInitRankConfig", false, err);
}

static void *watch(void *arg);

rt_nccl *rt_nccl_new(const rt_plan *p, const rt_mesh_desc *mesh, int timeout_ms, su_status *err)
{
    rt_nccl *n = calloc(1, sizeof *n);
    if (!n) {
        su_fail(err, SU_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&n->mu, NULL);
    n->p = p;
    n->timeout_s = (timeout_ms > 0 ? timeout_ms : 600000) / 1000.0;
    n->nc = rt_nccl_load(err);
    n->cu = n->nc ? rt_cu_load(NULL, err) : NULL;
    if (!n->cu)
        goto bad;
    MPI_Comm_rank(MPI_COMM_WORLD, &n->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n->ranks);
    int64_t want = rt_plan_ranks(p);
    if (n->ranks != want) {
        char m[256];
        su_fail(err, SU_INPUT, "the MPI world has %d process%s but the mesh %s has %lld ranks",
              n->ranks, n->ranks == 1 ? "" : "es", rt_comm_mesh_str(mesh, m, sizeof m),
              (long long)want);
        goto bad;
    }
    rt_plan_coords(p, n->rank, n->coord);
    n->p2p_seq = calloc((size_t)n->ranks, sizeof *n->p2p_seq);
    if (!n->p2p_seq) {
        su_fail(err, SU_NOMEM, "out of memory");
        goto bad;
    }
    if (check_map(n, err) != 0 || open_world(n, err) != 0)
        goto bad;
    if (pthread_create(&n->watchdog, NULL, watch, n) != 0) {
        su_fail(err, SU_INTERNAL, "cannot start the watchdog thread");
        goto bad;
    }
    n->watching = true;
    return n;
bad:
    rt_nccl_free(n);
    return NULL;
}

int rt_nccl_group(rt_nccl *n, const rt_group *g, su_status *err)
{
    /* the watchdog reads the groups under n->mu: the array moves under it
     * too, or the watchdog's look may read the block realloc freed */
    pthread_mutex_lock(&n->mu);
    ngroup *ng = realloc(n->group, ((size_t)n->ngroups + 1) * sizeof *ng);
    if (!ng) {
        pthread_mutex_unlock(&n->mu);
        return su_fail(err, SU_NOMEM, "out of memory");
    }
    n->group = ng;
    ng = &n->group[n->ngroups];
    memset(ng, 0, sizeof *ng);
    ng->naxes = (uint8_t)g->naxes;
    memcpy(ng->axes, g->axes, sizeof ng->axes);
    snprintf(ng->desc, sizeof ng->desc, "%s", g->desc);
    bool ok = NC(CommSplit(n->world, (int)g->color, (int)g->index, &ng->comm, NULL));
    n->ngroups++;
    pthread_mutex_unlock(&n->mu);
    if (!ok)
        return -1;
    char what[sizeof g->desc + 32];
    snprintf(what, sizeof what, "ncclCommSplit for %s", g->desc);
    /* the split's progress shows on the parent and on the child */
    if (settle(n, n->world, what, false, err) != 0)
        return -1;
    return ng->comm ? settle(n, ng->comm, what, false, err) : 0;
}

int rt_nccl_device(const rt_nccl *n)
{
    return n->device;
}

/* ---- the ops ---- */

static rt_nccl_dtype nccl_type(int dtype)
{
    switch (dtype) {
    case RT_F16: return RT_NCCL_FLOAT16;
    case RT_BF16: return RT_NCCL_BFLOAT16;
    case RT_I32: return RT_NCCL_INT32;
    default: return RT_NCCL_FLOAT32;
    }
}

static void *ptr(rt_cu_ptr p)
{
    return (void *)(uintptr_t)p;
}

/* rows rows of width bytes, device to device on s; none when empty. */
static int rows(rt_nccl *n, rt_cu_ptr dst, size_t dpitch, rt_cu_ptr src, size_t spitch,
                size_t width, size_t nrows, rt_cu_stream s, su_status *err)
{
    if (!width || !nrows)
        return 0;
    rt_cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = RT_CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = spitch;
    c.dstDevice = dst;
    c.dstPitch = dpitch;
    c.WidthInBytes = width;
    c.Height = nrows;
    return CU(Memcpy2DAsync(&c, s)) ? 0 : -1;
}

/* outer, and run = the bytes of dims dim.. of t (t's dim `dim` counted
 * whole). */
static void split_at(const rt_type *t, int dim, int64_t *outer, int64_t *run)
{
    *outer = 1;
    *run = rt_dtype_size(t->dtype);
    for (int d = 0; d < dim; d++)
        *outer *= t->dim[d];
    for (int d = dim; d < t->rank; d++)
        *run *= t->dim[d];
}

/* session_rank.c's pack_split on the device: src [outer][G*run] to dst
 * [G][outer][run] (t's dim `dim` split G ways). */
static int pack_split(rt_nccl *n, const rt_type *t, int dim, int64_t G, rt_cu_ptr src,
                      rt_cu_ptr dst, rt_cu_stream s, su_status *err)
{
    int64_t outer, whole;
    split_at(t, dim, &outer, &whole);
    size_t run = (size_t)(whole / G);
    for (int64_t g = 0; g < G; g++)
        if (rows(n, dst + (rt_cu_ptr)(g * outer) * run, run, src + (rt_cu_ptr)g * run,
                 (size_t)whole, run, (size_t)outer, s, err) != 0)
            return -1;
    return 0;
}

/* session_rank.c's unpack_concat: G blocks of type b ([outer][run] each)
 * to dst [outer][G*run], concatenated along dim. */
static int unpack_concat(rt_nccl *n, const rt_type *b, int dim, int64_t G, rt_cu_ptr src,
                         rt_cu_ptr dst, rt_cu_stream s, su_status *err)
{
    int64_t outer, run;
    split_at(b, dim, &outer, &run);
    for (int64_t g = 0; g < G; g++)
        if (rows(n, dst + (rt_cu_ptr)(g * run), (size_t)(G * run),
                 src + (rt_cu_ptr)(g * outer * run), (size_t)run, (size_t)run, (size_t)outer, s,
                 err) != 0)
            return -1;
    return 0;
}

static ngroup *group_for(rt_nccl *n, const rt_instr *in)
{
    for (int g = 0; g < n->ngroups; g++)
        if (n->group[g].naxes == in->naxes && !memcmp(n->group[g].axes, in->axes, in->naxes))
            return &n->group[g];
    return NULL;
}

/* The world rank of the peer stage of a send or recv (session_rank.c's
 * stage_peer): this rank's coordinates, the stage axis's set to `stage`. */
static int peer_of(const rt_nccl *n, int64_t stage)
{
    int64_t r = 0;
    for (int a = 0; a < n->p->naxes; a++)
        r = r * n->p->axis_size[a] + (a == n->p->stage_axis ? stage : n->coord[a]);
    return (int)r;
}

/* in's index in this rank's stage program, for messages. */
static int instr_index(const rt_nccl *n, const rt_instr *in)
{
    int st = n->p->stage_axis >= 0 ? (int)n->coord[n->p->stage_axis] : 0;
    return (int)(in - n->p->stage[st].instr);
}

/* The NCCL calls of a collective on group comm c (G members), from src
 * (or the packed staging) to dst (or the staging, unpacked after). */
static bool issue_collective(rt_nccl *n, const rt_instr *in, rt_nccl_comm c, int G,
                             rt_cu_ptr src, rt_cu_ptr dst, rt_cu_stream s, su_status *err)
{
    int64_t in_bytes = rt_type_bytes(&in->in_t[0]);
    rt_nccl_dtype t = nccl_type(in->in_t[0].dtype);
    switch (in->op) {
    case RT_OP_ALL_REDUCE:
        return NC(AllReduce(ptr(src), ptr(dst), (size_t)rt_type_numel(&in->out_t), t,
                            in->dim == RT_REDUCE_MAX ? RT_NCCL_MAX : RT_NCCL_SUM, c, s));
    case RT_OP_BROADCAST:
        return NC(Broadcast(ptr(src), ptr(dst), (size_t)in_bytes, RT_NCCL_UINT8, 0, c, s));
    case RT_OP_ALL_GATHER:
        return NC(AllGather(ptr(src), ptr(dst), (size_t)in_bytes, RT_NCCL_UINT8, c, s));
    case RT_OP_REDUCE_SCATTER:
        return NC(ReduceScatter(ptr(src), ptr(dst), (size_t)rt_type_numel(&in->out_t), t,
                                RT_NCCL_SUM, c, s));
    case RT_OP_ALL_TO_ALL: {
        size_t blk = (size_t)(in_bytes / G);
        bool ok = NC(GroupStart());
        for (int j = 0; ok && j < G; j++)
            ok = NC(Send(ptr(src + j * blk), blk, RT_NCCL_UINT8, j, c, s)) &&
                 NC(Recv(ptr(dst + j * blk), blk, RT_NCCL_UINT8, j, c, s));
        /* a group once started is ended, whatever failed in it */
        bool ended = NC(GroupEnd());
        return ok && ended;
    }
    default:
        su_fail(err, SU_INTERNAL, "%s is not a collective", rt_ops[in->op].name);
        return false;
    }
}

/* A collective: the re-layout into the staging, the NCCL call, polled
 * until issued, the re-layout out of it. */
static int run_collective(rt_nccl *n, const rt_instr *in, rt_cu_ptr src, rt_cu_ptr dst,
                          rt_cu_stream s, char *what, size_t wlen, su_status *err)
{
    ngroup *g = group_for(n, in);
    if (!g)
        return su_fail(err, SU_INTERNAL, "no nccl communicator for the collective's axes");
    snprintf(what, wlen, "instruction %d (%s on %s #%lld)", instr_index(n, in),
             rt_ops[in->op].name, g->desc, (long long)++g->seq);
    int G = 1;
    for (int k = 0; k < in->naxes; k++)
        G *= (int)n->p->axis_size[in->axes[k]];
    const rt_type *t = &in->in_t[0];
    rt_cu_ptr a = src, b = dst;
    int64_t in_bytes = rt_type_bytes(t);
    if (in->op == RT_OP_ALL_TO_ALL) { /* pack into staging[0], receive into staging[1] */
        a = n->staging, b = n->staging + (rt_cu_ptr)in_bytes;
        if (pack_split(n, t, (int)in->dim, G, src, a, s, err) != 0)
            return -1;
    } else if (in->op == RT_OP_REDUCE_SCATTER && in->dim > 0) {
        a = n->staging;
        if (pack_split(n, t, (int)in->dim, G, src, a, s, err) != 0)
            return -1;
    } else if (in->op == RT_OP_ALL_GATHER && in->dim > 0) {
        b = n->staging;
    }
    pthread_mutex_lock(&n->mu); /* the watchdog may abort (and clear) g->comm */
    rt_nccl_comm c = g->comm;
    bool ok = failed_locked(n, err) == 0 &&
              issue_collective(n, in, c, G, a, b, s, err);
    pthread_mutex_unlock(&n->mu);
    if (!ok || settle(n, c, what, true, err) != 0)
        return -1;
    if (in->op == RT_OP_ALL_GATHER && in->dim > 0)
        return unpack_concat(n, t, (int)in->dim, G, b, dst, s, err);
    if (in->op == RT_OP_ALL_TO_ALL) {
        rt_type blk = *t;
        blk.dim[in->dim] /= G;
        return unpack_concat(n, &blk, (int)in->dim2, G, b, dst, s, err);
    }
    return 0;
}

static int run_p2p(rt_nccl *n, const rt_instr *in, rt_cu_ptr src, rt_cu_ptr dst,
                   rt_cu_stream s, char *what, size_t wlen, su_status *err)
{
    int peer = peer_of(n, in->dim);
    bool send = in->op == RT_OP_SEND;
    snprintf(what, wlen, "instruction %d (%s %s rank %d (stage %lld) #%lld)",
             instr_index(n, in), send ? "send" : "recv", send ? "to" : "from", peer,
             (long long)in->dim, (long long)++n->p2p_seq[peer]);
    pthread_mutex_lock(&n->mu); /* the watchdog may abort (and clear) n->world */
    rt_nccl_comm c = n->world;
    bool ok = failed_locked(n, err) == 0 &&
              (send ? NC(Send(ptr(src), (size_t)rt_type_bytes(&in->in_t[0]), RT_NCCL_UINT8,
                              peer, c, s))
                    : NC(Recv(ptr(dst), (size_t)rt_type_bytes(&in->out_t), RT_NCCL_UINT8, peer,
                              c, s)));
    pthread_mutex_unlock(&n->mu);
    return ok ? settle(n, c, what, true, err) : -1;
}

/* Hands an op in flight to the watchdog. */
static int watch_op(rt_nccl *n, const char *what, double start, rt_cu_event done, su_status *err)
{
    pthread_mutex_lock(&n->mu);
    if (n->nop == n->capop) {
        int cap = n->capop ? 2 * n->capop : 16;
        inflight *op = realloc(n->op, (size_t)cap * sizeof *op);
        if (!op) {
            pthread_mutex_unlock(&n->mu);
            return su_fail(err, SU_NOMEM, "out of memory");
        }
        n->op = op;
        n->capop = cap;
    }
    inflight *o = &n->op[n->nop++];
    snprintf(o->what, sizeof o->what, "%s", what);
    o->start = start;
    o->done = done;
    o->finished = false;
    pthread_mutex_unlock(&n->mu);
    return 0;
}

int rt_nccl_run(rt_nccl *n, const rt_instr *in, rt_cu_ptr src, rt_cu_ptr dst, rt_cu_stream s,
                rt_cu_event done, rt_cu_event watched, su_status *err)
{
    char what[384];
    double start = now_s();
    int rc = in->op == RT_OP_SEND || in->op == RT_OP_RECV
                 ? run_p2p(n, in, src, dst, s, what, sizeof what, err)
                 : run_collective(n, in, src, dst, s, what, sizeof what, err);
    if (rc != 0 || !CU(EventRecord(done, s)))
        return -1;
    if (watched)
        return CU(EventRecordWithFlags(watched, s, RT_CU_EVENT_RECORD_EXTERNAL)) ? 0 : -1;
    return watch_op(n, what, start, done, err);
}

int rt_nccl_watch(rt_nccl *n, const rt_instr *in, rt_cu_event watched, su_status *err)
{
    char what[384];
    int idx = instr_index(n, in);
    if (in->op == RT_OP_SEND || in->op == RT_OP_RECV) {
        bool send = in->op == RT_OP_SEND;
        snprintf(what, sizeof what, "instruction %d (%s %s rank %d (stage %lld) in a CUDA graph)",
                 idx, send ? "send" : "recv", send ? "to" : "from", peer_of(n, in->dim),
                 (long long)in->dim);
    } else {
        const ngroup *g = group_for(n, in);
        snprintf(what, sizeof what, "instruction %d (%s on %s in a CUDA graph)", idx,
                 rt_ops[in->op].name, g ? g->desc : "its group");
    }
    pthread_mutex_lock(&n->mu);
    int rc = failed_locked(n, err);
    pthread_mutex_unlock(&n->mu);
    return rc != 0 ? -1 : watch_op(n, what, now_s(), watched, err);
}

int rt_nccl_settle(rt_nccl *n, su_status *err)
{
    pthread_mutex_lock(&n->mu);
    n->nop = 0;
    int rc = failed_locked(n, err);
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int rt_nccl_failed(rt_nccl *n, su_status *err)
{
    pthread_mutex_lock(&n->mu);
    int rc = failed_locked(n, err);
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* ---- the watchdog ---- */

/* One look at everything in flight, n->mu held: finished ops marked; the
 * expired one (or an asynchronous error) fails n, aborting the
 * communicators. */
static void look(rt_nccl *n, double *start, bool *done)
{
    for (int i = 0; i < n->nop; i++) {
        inflight *o = &n->op[i];
        rt_cu_result r = o->finished ? RT_CU_SUCCESS : n->nc->EventQuery(o->done);
        char msg[512], d[256];
        if (r != RT_CU_SUCCESS && r != NOT_READY) {
            snprintf(msg, sizeof msg, "%s failed on the device: %s", o->what,
                     rt_cu_describe(n->cu, r, d, sizeof d));
            fail_locked(n, msg);
            return;
        }
        o->finished = r == RT_CU_SUCCESS;
        start[i] = o->start;
        done[i] = o->finished;
    }
    int late = rt_nccl_expired(n->nop, start, done, now_s(), n->timeout_s);
    if (late >= 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s did not complete within %g s (NCCL does not say which "
                 "peer it waits for)", n->op[late].what, n->timeout_s);
        fail_locked(n, msg);
        return;
    }
    for (int g = -1; g < n->ngroups; g++) {
        rt_nccl_comm c = g < 0 ? n->world : n->group[g].comm;
        rt_nccl_result state = RT_NCCL_SUCCESS;
        if (!c || n->nc->CommGetAsyncError(c, &state) != RT_NCCL_SUCCESS)
            continue;
        if (state != RT_NCCL_SUCCESS && state != RT_NCCL_IN_PROGRESS) {
            char msg[512], d[256];
            snprintf(msg, sizeof msg, "nccl communicator of %s failed: %s",
                     g < 0 ? "the world" : n->group[g].desc,
                     rt_nccl_describe(n->nc, state, d, sizeof d));
            fail_locked(n, msg);
            return;
        }
    }
}

static void *watch(void *arg)
{
    rt_nccl *n = arg;
    double *start = NULL;
    bool *done = NULL;
    int cap = 0;
    n->cu->CtxSetCurrent(n->ctx); /* cuEventQuery needs the context here too */
    for (;;) {
        nap();
        pthread_mutex_lock(&n->mu);
        if (n->stop) {
            pthread_mutex_unlock(&n->mu);
            break;
        }
        if (n->nop > cap) {
            double *s2 = realloc(start, (size_t)n->capop * sizeof *s2);
            start = s2 ? s2 : start;
            bool *d2 = s2 ? realloc(done, (size_t)n->capop * sizeof *d2) : NULL;
            done = d2 ? d2 : done;
            cap = s2 && d2 ? n->capop : cap;
        }
        if (n->nop <= cap && !n->failed)
            look(n, start, done);
        pthread_mutex_unlock(&n->mu);
    }
    free(start);
    free(done);
    return NULL;
}

/* Finalizes c (collective over its ranks: every rank frees the same
 * communicators in the same order), then destroys it; aborts it instead
 * when finalizing fails or does not complete within the timeout. */
static void close_comm(rt_nccl *n, rt_nccl_comm c)
{
    su_status err;
    if (!c)
        return;
    pthread_mutex_lock(&n->mu);
    rt_nccl_result r = n->nc->CommFinalize(c);
    pthread_mutex_unlock(&n->mu);
    if ((r == RT_NCCL_SUCCESS || r == RT_NCCL_IN_PROGRESS) &&
        settle(n, c, "ncclCommFinalize", false, &err) == 0)
        n->nc->CommDestroy(c);
    else
        n->nc->CommAbort(c);
}

void rt_nccl_free(rt_nccl *n)
{
    if (!n)
        return;
    if (n->watching) {
        pthread_mutex_lock(&n->mu);
        n->stop = true;
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->watchdog, NULL);
    }
    for (int g = n->ngroups; g >= 0; g--) /* the groups, then the world */
        close_comm(n, g < n->ngroups ? n->group[g].comm : n->world);
    if (n->ctx) {
        n->cu->CtxSetCurrent(n->ctx);
        if (n->staging)
            n->cu->MemFree(n->staging);
        n->cu->DevicePrimaryCtxRelease(n->dev);
    }
    free(n->group);
    free(n->op);
    free(n->p2p_seq);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

#else /* no MPI: the pure parts only */

rt_nccl *rt_nccl_new(const rt_plan *p, const rt_mesh_desc *mesh, int timeout_ms, su_status *err)
{
    (void)p, (void)mesh, (void)timeout_ms;
    su_fail(err, SU_GPU, "this build of shardc has no MPI, which the nccl communicator needs");
    return NULL;
}
int rt_nccl_group(rt_nccl *n, const rt_group *g, su_status *err)
{
    (void)n, (void)g;
    su_fail(err, SU_GPU, "no nccl communicator");
    return -1;
}
int rt_nccl_device(const rt_nccl *n)
{
    (void)n;
    return 0;
}
int rt_nccl_run(rt_nccl *n, const rt_instr *in, rt_cu_ptr src, rt_cu_ptr dst, rt_cu_stream s,
                rt_cu_event done, rt_cu_event watched, su_status *err)
{
    (void)n, (void)in, (void)src, (void)dst, (void)s, (void)done, (void)watched;
    su_fail(err, SU_GPU, "no nccl communicator");
    return -1;
}

int rt_nccl_watch(rt_nccl *n, const rt_instr *in, rt_cu_event watched, su_status *err)
{
    (void)n, (void)in, (void)watched;
    su_fail(err, SU_GPU, "no nccl communicator");
    return -1;
}
int rt_nccl_settle(rt_nccl *n, su_status *err)
{
    (void)n;
    su_fail(err, SU_GPU, "no nccl communicator");
    return -1;
}
int rt_nccl_failed(rt_nccl *n, su_status *err)
{
    (void)n, (void)err;
    return 0;
}
void rt_nccl_free(rt_nccl *n)
{
    (void)n;
}
#endif
