/* comm_mpi.c: the MPI communicator (comm.h): one process per rank, the
 * rank being the process's rank in MPI_COMM_WORLD. Built only when CMake
 * finds MPI (SHARDC_HAVE_MPI).
 *
 * - The comm works in its own duplicate of MPI_COMM_WORLD, so its traffic
 *   never matches the application's and MPI_COMM_WORLD's error handler is
 *   left alone; the duplicate and every group have MPI_ERRORS_RETURN, and a
 *   failed call comes back as -1 with MPI's own message.
 * - A group is MPI_Comm_split(color = index of the coordinates on the other
 *   axes, key = member index); the split is collective over the world,
 *   which is why comm.h asks every rank to make the same groups in the same
 *   order (comm.c makes each axes list's group once).
 * - f32 and i32 reduce as MPI_FLOAT and MPI_INT. f16 and bf16 have no
 *   portable MPI type: they go through an f32 scratch (converted, reduced in
 *   f32 by MPI, rounded back once), SCRATCH_ELEMS elements at a time.
 *   all_reduce max is MPI_MAX (how a nan compares is MPI's business).
 * - MPI counts are ints: anything larger goes in pieces of at most
 *   RT_MPI_MAX_COUNT (a piece of a strided layout travels as a byte type
 *   resized to the block's extent).
 * - The summation order of a reduction is MPI's, not member order: the
 *   result is still the same on every member for MPI's algorithms, but may
 *   differ in the last bit from the local communicator's.
 * - There is no timeout: MPI collectives cannot be interrupted. A rank that
 *   fails calls rt_comm_abort, which records the message and calls
 *   MPI_Abort(MPI_COMM_WORLD, 1): under mpirun the launcher then kills every
 *   process, so no peer waits forever. This is the one place the library
 *   ends the process, and only because the caller asked to abort the world.
 * - Mismatched arguments among members are MPI's to detect (a truncation
 *   error, or a hang); the local communicator reports them.
 * - Point to point is MPI_Send and MPI_Recv of bytes on the comm's world
 *   duplicate with one tag, so messages between two ranks keep their order
 *   (MPI's non-overtaking rule). The receiver probes first and compares the
 *   incoming size with its own (MPI_Get_count), so a mismatch is an error
 *   naming both ranks and sizes rather than a truncation. Like the
 *   collectives, no timeout: a receive that never matches waits until the
 *   job is aborted.
 */
#include "comm_impl.h"
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RT_MPI_MAX_COUNT
#define RT_MPI_MAX_COUNT INT_MAX /* a test build may lower it to exercise the pieces */
#endif
#define SCRATCH_ELEMS 65536      /* f32 elements converted at a time */
#define P2P_TAG 17               /* every send and recv: order is per pair */

typedef struct mpi_impl {
    MPI_Comm world; /* a duplicate of MPI_COMM_WORLD */
    bool failed;
} mpi_impl;

/* 0 if rc is MPI_SUCCESS; else -1 with "what: MPI_Xxx failed: MPI's
 * message (comm_mpi.c:LINE)" as the comm's error. */
static int check_mpi(rt_comm *c, const char *what, const char *call, int line, int rc)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error %d", rc);
    rt_comm_seterr(c, "%s: %.*s failed: %s (comm_mpi.c:%d)", what, (int)strcspn(call, "("),
                   call, msg, line);
    return -1;
}
#define MPI_OK(c, what, call) (check_mpi((c), (what), #call, __LINE__, (call)) == 0)

static bool finalized(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    return fin != 0;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- groups ---- */

static int m_group_new(rt_comm *c, rt_group *g)
{
    mpi_impl *m = c->impl;
    char what[sizeof g->desc + 16];
    snprintf(what, sizeof what, "group over %s", g->desc);
    MPI_Comm *sub = malloc(sizeof *sub);
    if (!sub) {
        rt_comm_seterr(c, "%s: out of memory", what);
        return -1;
    }
    if (!MPI_OK(c, what, MPI_Comm_split(m->world, (int)g->color, (int)g->index, sub))) {
        free(sub);
        return -1;
    }
    int size = 0, rank = -1;
    if (!MPI_OK(c, what, MPI_Comm_set_errhandler(*sub, MPI_ERRORS_RETURN)) ||
        !MPI_OK(c, what, MPI_Comm_size(*sub, &size)) ||
        !MPI_OK(c, what, MPI_Comm_rank(*sub, &rank))) {
        MPI_Comm_free(sub);
        free(sub);
        return -1;
    }
    if (size != g->size || rank != g->index) {
        rt_comm_seterr(c, "%s: MPI_Comm_split made a group of %d ranks with this rank at %d, "
                       "want %lld ranks and member %lld", what, size, rank,
                       (long long)g->size, (long long)g->index);
        MPI_Comm_free(sub);
        free(sub);
        return -1;
    }
    g->impl = sub;
    return 0;
}

static void m_group_free(rt_group *g)
{
    MPI_Comm *sub = g->impl;
    if (!finalized())
        MPI_Comm_free(sub);
    free(sub);
    g->impl = NULL;
}

/* ---- reductions ---- */

static MPI_Datatype mpi_type(int dtype)
{
    return dtype == RT_I32 ? MPI_INT : MPI_FLOAT;
}

static void to_f32(int dtype, const void *src, float *dst, int64_t k)
{
    const uint16_t *h = src;
    for (int64_t e = 0; e < k; e++)
        dst[e] = dtype == RT_F16 ? rt_f16_to_f32(h[e]) : rt_bf16_to_f32(h[e]);
}

static void from_f32(int dtype, const float *src, void *dst, int64_t k)
{
    uint16_t *h = dst;
    for (int64_t e = 0; e < k; e++)
        h[e] = dtype == RT_F16 ? rt_f32_to_f16(src[e]) : rt_f32_to_bf16(src[e]);
}

static int m_all_reduce(rt_group *g, MPI_Comm comm, void *buf, int64_t count, int dtype,
                        MPI_Op mop, const char *what)
{
    rt_comm *c = g->comm;
    char *p = buf;
    if (dtype == RT_F32 || dtype == RT_I32) {
        for (int64_t o = 0; o < count; o += RT_MPI_MAX_COUNT) {
            int k = (int)min64(count - o, RT_MPI_MAX_COUNT);
            if (!MPI_OK(c, what, MPI_Allreduce(MPI_IN_PLACE, p + 4 * o, k, mpi_type(dtype),
                                               mop, comm)))
                return -1;
        }
        return 0;
    }
    int64_t piece = min64(SCRATCH_ELEMS, RT_MPI_MAX_COUNT);
    float *tmp = malloc((size_t)piece * sizeof *tmp);
    if (!tmp) {
        rt_comm_seterr(c, "%s: out of memory", what);
        return -1;
    }
    int rc = 0;
    for (int64_t o = 0; o < count && rc == 0; o += piece) {
        int64_t k = min64(count - o, piece);
        to_f32(dtype, p + 2 * o, tmp, k);
        if (!MPI_OK(c, what, MPI_Allreduce(MPI_IN_PLACE, tmp, (int)k, MPI_FLOAT, mop, comm)))
            rc = -1;
        else
            from_f32(dtype, tmp, p + 2 * o, k);
    }
    free(tmp);
    return rc;
}

/* Pieces [o, o+k) of every member's block, packed one after the other into
 * an f32 or i32 scratch, reduced and scattered; for f16 and bf16, and for
 * counts past an int. */
static int m_reduce_scatter_pieces(rt_group *g, MPI_Comm comm, const void *send, void *recv,
                                   int64_t count, int dtype, const char *what)
{
    rt_comm *c = g->comm;
    int64_t n = g->size, es = rt_dtype_size(dtype);
    int64_t piece = min64(SCRATCH_ELEMS, RT_MPI_MAX_COUNT) / n;
    piece = piece < 1 ? 1 : piece;
    char *tmp = malloc((size_t)(piece * (n + 1) * 4)); /* (n, piece) in, then (piece) out */
    if (!tmp) {
        rt_comm_seterr(c, "%s: out of memory", what);
        return -1;
    }
    char *out = tmp + piece * n * 4;
    bool wide = dtype == RT_F32 || dtype == RT_I32;
    int rc = 0;
    for (int64_t o = 0; o < count && rc == 0; o += piece) {
        int64_t k = min64(count - o, piece);
        for (int64_t j = 0; j < n; j++) {
            const char *src = (const char *)send + (j * count + o) * es;
            if (wide)
                memcpy(tmp + j * k * 4, src, (size_t)(k * 4));
            else
                to_f32(dtype, src, (float *)(void *)(tmp + j * k * 4), k);
        }
        if (!MPI_OK(c, what, MPI_Reduce_scatter_block(tmp, out, (int)k, mpi_type(dtype), MPI_SUM,
                                                      comm)))
            rc = -1;
        else if (wide)
            memcpy((char *)recv + o * 4, out, (size_t)(k * 4));
        else
            from_f32(dtype, (const float *)(void *)out, (char *)recv + o * 2, k);
    }
    free(tmp);
    return rc;
}

static int m_reduce_scatter(rt_group *g, MPI_Comm comm, const void *send, void *recv,
                            int64_t count, int dtype, const char *what)
{
    if ((dtype == RT_F32 || dtype == RT_I32) && count <= RT_MPI_MAX_COUNT / g->size)
        return MPI_OK(g->comm, what, MPI_Reduce_scatter_block(send, recv, (int)count,
                                                             mpi_type(dtype), MPI_SUM, comm))
                   ? 0
                   : -1;
    return m_reduce_scatter_pieces(g, comm, send, recv, count, dtype, what);
}

/* ---- byte collectives ---- */

/* all_gather and all_to_all of more than an int's worth of bytes: piece
 * [o, o+k) of every block, as one element of a k-byte type whose extent is
 * the block size, so member i's piece lands at i*bytes + o. */
static int m_blocks_pieces(rt_group *g, MPI_Comm comm, int op, const char *send, char *recv,
                           int64_t bytes, const char *what)
{
    rt_comm *c = g->comm;
    for (int64_t o = 0; o < bytes; o += RT_MPI_MAX_COUNT) {
        int k = (int)min64(bytes - o, RT_MPI_MAX_COUNT);
        MPI_Datatype piece, block;
        if (!MPI_OK(c, what, MPI_Type_contiguous(k, MPI_BYTE, &piece)))
            return -1;
        int ok = MPI_OK(c, what, MPI_Type_create_resized(piece, 0, (MPI_Aint)bytes, &block));
        MPI_Type_free(&piece);
        if (!ok)
            return -1;
        ok = MPI_OK(c, what, MPI_Type_commit(&block));
        if (ok && op == RT_CO_ALL_GATHER)
            ok = MPI_OK(c, what, MPI_Allgather(send + o, k, MPI_BYTE, recv + o, 1, block, comm));
        else if (ok)
            ok = MPI_OK(c, what, MPI_Alltoall(send + o, 1, block, recv + o, 1, block, comm));
        MPI_Type_free(&block);
        if (!ok)
            return -1;
    }
    return 0;
}

static int m_bytes(rt_group *g, MPI_Comm comm, int op, const void *send, void *recv,
                   int64_t bytes, const char *what)
{
    rt_comm *c = g->comm;
    int k = (int)min64(bytes, RT_MPI_MAX_COUNT);
    switch (op) {
    case RT_CO_ALL_GATHER:
        if (bytes > RT_MPI_MAX_COUNT)
            return m_blocks_pieces(g, comm, op, send, recv, bytes, what);
        return MPI_OK(c, what, MPI_Allgather(send, k, MPI_BYTE, recv, k, MPI_BYTE, comm)) ? 0
                                                                                         : -1;
    case RT_CO_ALL_TO_ALL:
        if (bytes > RT_MPI_MAX_COUNT)
            return m_blocks_pieces(g, comm, op, send, recv, bytes, what);
        return MPI_OK(c, what, MPI_Alltoall(send, k, MPI_BYTE, recv, k, MPI_BYTE, comm)) ? 0
                                                                                        : -1;
    default: /* broadcast: contiguous, so plain pieces */
        for (int64_t o = 0; o < bytes; o += RT_MPI_MAX_COUNT) {
            k = (int)min64(bytes - o, RT_MPI_MAX_COUNT);
            if (!MPI_OK(c, what, MPI_Bcast((char *)recv + o, k, MPI_BYTE, 0, comm)))
                return -1;
        }
        return 0;
    }
}

static int m_run(rt_group *g, int op, const void *send, void *recv, int64_t count, int dtype)
{
    MPI_Comm comm = *(MPI_Comm *)g->impl;
    char what[sizeof g->desc + 32];
    snprintf(what, sizeof what, "%s over %s", rt_comm_op_name(op), g->desc);
    switch (op) {
    case RT_CO_ALL_REDUCE: return m_all_reduce(g, comm, recv, count, dtype, MPI_SUM, what);
    case RT_CO_ALL_REDUCE_MAX:
        return m_all_reduce(g, comm, recv, count, dtype, MPI_MAX, what);
    case RT_CO_REDUCE_SCATTER: return m_reduce_scatter(g, comm, send, recv, count, dtype, what);
    case RT_CO_BARRIER: return MPI_OK(g->comm, what, MPI_Barrier(comm)) ? 0 : -1;
    default: return m_bytes(g, comm, op, send, recv, count, what);
    }
}

/* ---- point to point ---- */

/* One piece of a receive: k bytes expected at offset o of `bytes`; the
 * incoming size is checked before it is received. */
static int m_recv_piece(rt_comm *c, MPI_Comm world, int64_t peer, char *buf, int64_t o, int k,
                        int64_t bytes, const char *what)
{
    MPI_Status st;
    int n = 0;
    if (!MPI_OK(c, what, MPI_Probe((int)peer, P2P_TAG, world, &st)) ||
        !MPI_OK(c, what, MPI_Get_count(&st, MPI_BYTE, &n)))
        return -1;
    if (n != k) {
        /* a piece shorter than the largest ends the sender's message */
        if (n < RT_MPI_MAX_COUNT)
            rt_comm_seterr(c, "%s: size mismatch: rank %lld sent %lld bytes, rank %lld expects "
                           "%lld", what, (long long)peer, (long long)(o + n), (long long)c->rank,
                           (long long)bytes);
        else
            rt_comm_seterr(c, "%s: size mismatch: rank %lld sent more than %lld bytes, rank %lld "
                           "expects %lld", what, (long long)peer, (long long)(o + k),
                           (long long)c->rank, (long long)bytes);
        return -1;
    }
    return MPI_OK(c, what, MPI_Recv(buf + o, k, MPI_BYTE, (int)peer, P2P_TAG, world,
                                    MPI_STATUS_IGNORE)) ? 0 : -1;
}

/* In pieces of at most RT_MPI_MAX_COUNT bytes (one, empty, for 0 bytes). */
static int m_p2p(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes)
{
    mpi_impl *m = c->impl;
    bool send = op == RT_CO_SEND;
    char what[96];
    snprintf(what, sizeof what, "%s on rank %lld %s rank %lld", send ? "send" : "recv",
             (long long)c->rank, send ? "to" : "from", (long long)peer);
    int64_t o = 0;
    do {
        int k = (int)min64(bytes - o, RT_MPI_MAX_COUNT);
        if (send && !MPI_OK(c, what, MPI_Send((char *)buf + o, k, MPI_BYTE, (int)peer, P2P_TAG,
                                              m->world)))
            return -1;
        if (!send && m_recv_piece(c, m->world, peer, buf, o, k, bytes, what) != 0)
            return -1;
        o += k;
    } while (o < bytes);
    return 0;
}

/* ---- the comm ---- */

static int m_check(rt_comm *c)
{
    mpi_impl *m = c->impl;
    return m->failed ? -1 : 0; /* the error is the abort's */
}

static void m_abort(rt_comm *c, const char *msg)
{
    mpi_impl *m = c->impl;
    (void)msg; /* already c's error; mpirun prints the abort */
    m->failed = true;
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void m_free(rt_comm *c)
{
    mpi_impl *m = c->impl;
    if (!finalized())
        MPI_Comm_free(&m->world);
    free(m);
    free(c);
}

static const rt_comm_ops mpi_ops = {
    m_group_new, m_group_free, m_check, m_run, m_p2p, m_abort, m_free,
};

rt_comm *rt_mpi_comm_new(const rt_mesh_desc *mesh, char *err, size_t errlen)
{
    int64_t ranks;
    if (!rt_comm_mesh_check(mesh, &ranks, err, errlen))
        return NULL;
    int init = 0;
    MPI_Initialized(&init);
    if (!init || finalized()) {
        snprintf(err, errlen, "MPI is %s: call MPI_Init before rt_mpi_comm_new",
                 init ? "already finalized" : "not initialised");
        return NULL;
    }
    int size = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != ranks) {
        char ms[RT_MAX_AXES * (RT_COMM_NAMELEN + 24)];
        snprintf(err, errlen, "the plan's mesh %s has %lld rank%s, but MPI started %d process%s: "
                 "run mpirun -np %lld", rt_comm_mesh_str(mesh, ms, sizeof ms), (long long)ranks,
                 ranks == 1 ? "" : "s", size, size == 1 ? "" : "es", (long long)ranks);
        return NULL;
    }
    rt_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        snprintf(err, errlen, "out of memory making the MPI communicator");
        return NULL;
    }
    rt_comm_init(c, &mpi_ops, m, mesh, rank, ranks);
    if (!MPI_OK(c, "mpi communicator", MPI_Comm_dup(MPI_COMM_WORLD, &m->world))) {
        snprintf(err, errlen, "%s", c->err);
        free(c);
        free(m);
        return NULL;
    }
    if (!MPI_OK(c, "mpi communicator", MPI_Comm_set_errhandler(m->world, MPI_ERRORS_RETURN))) {
        snprintf(err, errlen, "%s", c->err);
        MPI_Comm_free(&m->world);
        free(c);
        free(m);
        return NULL;
    }
    return c;
}
