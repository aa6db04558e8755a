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
 *   order (comm.c makes each axes list's group once). A barrier polled
 *   against the timeout goes first, so a rank that never comes is a
 *   timeout rather than a split that waits forever.
 * - f32 and i32 reduce as MPI_FLOAT and MPI_INT. f16 and bf16 have no
 *   portable MPI type: they go through an f32 scratch (converted, reduced in
 *   f32 by MPI, rounded back once), SCRATCH_ELEMS elements at a time.
 *   all_reduce max is MPI_MAX (how a nan compares is MPI's business).
 * - MPI counts are ints: anything larger goes in pieces of at most
 *   RT_MPI_MAX_COUNT (a piece of a strided layout travels as a byte type
 *   resized to the block's extent).
 * - A small op (blocks of at most DIRECT_BYTES, in a group of at most
 *   DIRECT_MEMBERS) is a direct exchange: every member sends its
 *   block(s) straight to every other by MPI_Isend and MPI_Irecv and sums
 *   what it received itself, in member order, as the local communicator
 *   does (so to the bit). A nonblocking collective's schedule costs more
 *   than the bytes at that size (MPI's blocking collectives have no
 *   timeout).
 * - The summation order of a larger reduction is MPI's, not member order:
 *   the result is still the same on every member for MPI's algorithms, but
 *   may differ in the last bit from the local communicator's.
 * - Every wait is bounded by the timeout: each op is MPI's nonblocking form
 *   (MPI_Iallreduce, MPI_Isend, MPI_Iprobe, ...) tested until it
 *   completes: back to back for the first 2 ms (most waits are short, and
 *   end as soon as with MPI's blocking calls), then with naps (a long wait
 *   costs no core). Past the timeout the rank pings the peers it waits for
 *   (an empty synchronous send, which every rank waiting in this comm
 *   answers), so the message says which of them does not answer: stopped,
 *   or busy outside communication.
 * - MPI cannot cancel a collective it has started (nor reliably a send):
 *   after a timeout the op stays MPI's and may still touch its buffers if
 *   the peer comes back. The comm then fails (every later call returns the
 *   error) and is marked stuck (rt_comm_stuck): its caller must keep the
 *   buffers or end the job. A receive that times out before anything
 *   arrived leaves nothing behind and the comm as it was, as with `local`.
 * - The library never ends the process: rt_comm_abort only fails this
 *   comm; ending the job (MPI_Abort, so that no peer waits for the
 *   timeout) is the caller's decision (shardrun makes it).
 * - Mismatched arguments among members are MPI's to detect (a truncation
 *   error, or a timeout); the local communicator reports them.
 * - Point to point is MPI_Isend and MPI_Irecv of bytes on the comm's world
 *   duplicate with one tag, so messages between two ranks keep their order
 *   (MPI's non-overtaking rule). The receiver probes first and compares the
 *   incoming size with its own (MPI_Get_count), so a mismatch is an error
 *   naming both ranks and sizes rather than a truncation.
 */
#include "runtime/comm/comm_impl.h"
#include "support/support.h"
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef RT_MPI_MAX_COUNT
#define RT_MPI_MAX_COUNT INT_MAX /* a test build may lower it to exercise the pieces */
#endif
#define SCRATCH_ELEMS 65536      /* f32 elements converted at a time */
#define P2P_TAG 17               /* every send and recv: order is per pair */
#define PING_TAG 18              /* a timed-out rank's question: are you there? */
#define DIRECT_TAG 19            /* small collectives, on the group's communicator */
#ifndef DIRECT_BYTES
#define DIRECT_BYTES 2048        /* the largest block of a direct exchange */
#endif
enum { DIRECT_MEMBERS = 16, DIRECT_CHUNK = 256 };
#define DEFAULT_TIMEOUT_MS (10 * 60 * 1000)

/* How a wait polls: tests back to back (as MPI's blocking calls do) for
 * SPIN_S, the clock read every CLOCK_EVERY tests; then a nap between tests
 * of a twentieth of the time waited so far, from NAP_MIN_S to NAP_MAX_S
 * (a wait ends at most about 5% later than it could have, and a long one
 * costs no core). A rank that timed out waits at most GRACE_S for its
 * peers' answers. */
enum { CLOCK_EVERY = 64 };
#define SPIN_S 0.002
#define NAP_MIN_S 50e-6
#define NAP_MAX_S 1e-3
#define GRACE_S 1.0

typedef struct mpi_impl {
    MPI_Comm world;     /* a duplicate of MPI_COMM_WORLD (MPI_COMM_NULL until made) */
    MPI_Comm dup;       /* where MPI_Comm_idup makes it */
    double timeout_s;   /* bounds every wait */
    bool failed;        /* a timeout or an abort: every later call fails */
    char fail[RT_COMM_ERRLEN];
    MPI_Request *late;  /* (nlate) the requests of the op that timed out */
    int nlate;
    void *scratch;      /* f16/bf16 reductions' f32 staging, bytes */
    size_t scratch_bytes;
} mpi_impl;

/* What a wait came to: done, an MPI error (the comm's error set), or the
 * timeout with a request left to MPI (the comm is then stuck) or with
 * nothing under way (a receive that saw nothing arrive). */
enum { W_DONE = 0, W_ERROR = -1, W_LATE = 1, W_LATE_IDLE = 2 };

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

/* ---- waiting with a deadline ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void nap(double s)
{
    s = s < NAP_MIN_S ? NAP_MIN_S : s > NAP_MAX_S ? NAP_MAX_S : s;
    struct timespec t = {0, (long)(s * 1e9)};
    nanosleep(&t, NULL);
}

/* Receives every ping waiting for this rank: the pinging rank's
 * synchronous send then completes, which is its answer. */
static void answer_pings(mpi_impl *m)
{
    int flag = 0;
    MPI_Status st;
    while (MPI_Iprobe(MPI_ANY_SOURCE, PING_TAG, m->world, &flag, &st) == MPI_SUCCESS && flag)
        MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, PING_TAG, m->world, MPI_STATUS_IGNORE);
}

typedef struct waiter {
    double start; /* monotonic seconds */
    long tests;
    bool napping; /* past SPIN_S */
} waiter;

static waiter wait_start(void)
{
    return (waiter){now_s(), 0, false};
}

/* After a test that found the wait not over: true once it has lasted
 * longer than the timeout; else backs off (see SPIN_S) and, once napping,
 * answers pings. */
static bool late(mpi_impl *m, waiter *w)
{
    if (!w->napping && ++w->tests % CLOCK_EVERY != 0)
        return false;
    double t = now_s() - w->start;
    if (t > m->timeout_s)
        return true;
    if (t < SPIN_S)
        return false;
    w->napping = true;
    if (m->world != MPI_COMM_NULL)
        answer_pings(m);
    nap(t / 20);
    return false;
}

/* Keeps the n requests of an op that MPI still holds (m->late), so that
 * m_free can tell whether they have completed since. */
static void keep_late(mpi_impl *m, int n, const MPI_Request *r)
{
    free(m->late);
    m->nlate = 0;
    if ((m->late = malloc((size_t)n * sizeof *r))) {
        memcpy(m->late, r, (size_t)n * sizeof *r);
        m->nlate = n;
    }
}

/* Tests the n requests r until they all complete (W_DONE), MPI fails
 * (W_ERROR, the error set) or the timeout passes (W_LATE: they are left
 * to MPI, kept in m->late). */
static int m_waitall(rt_comm *c, int n, MPI_Request *r, const char *what)
{
    mpi_impl *m = c->impl;
    waiter w = wait_start();
    for (;;) {
        int done = 0;
        if (!MPI_OK(c, what, MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE)))
            return W_ERROR;
        if (done)
            return W_DONE;
        if (late(m, &w)) {
            keep_late(m, n, r);
            return W_LATE;
        }
    }
}

static int m_wait(rt_comm *c, MPI_Request *r, const char *what)
{
    return m_waitall(c, 1, r, what);
}

/* After a timeout: which of the n world ranks peer[] answer a ping within
 * the grace (answered[i]). A rank waiting in this comm answers; one that
 * is stopped, gone, or computing does not. */
static void ping(mpi_impl *m, const int64_t *peer, int64_t n, bool *answered)
{
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    for (int64_t i = 0; i < n; i++) {
        answered[i] = false;
        if (req && MPI_Issend(NULL, 0, MPI_BYTE, (int)peer[i], PING_TAG, m->world, &req[i]) !=
                       MPI_SUCCESS)
            req[i] = MPI_REQUEST_NULL;
    }
    if (!req)
        return; /* out of memory: nobody is known to answer */
    double t0 = now_s(), grace = m->timeout_s < GRACE_S ? m->timeout_s : GRACE_S;
    for (int64_t left = n; left > 0 && now_s() - t0 < grace;) {
        answer_pings(m); /* the peers may be pinging this rank too */
        for (int64_t i = 0; i < n; i++) {
            int done = 0;
            if (!answered[i] && req[i] != MPI_REQUEST_NULL &&
                MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
                answered[i] = true;
                left--;
            }
        }
        nap(NAP_MAX_S);
    }
    for (int64_t i = 0; i < n; i++)
        if (req[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&req[i]); /* an empty message: no buffer to keep */
    free(req);
}

/* Appends to c's error (from offset k) who of the n world ranks peer[]
 * (member[i] their member indices, or NULL) does not answer a ping:
 * "member 1 (rank 1) does not answer (stopped, or busy outside
 * communication)"; at most four named. */
static void blame(rt_comm *c, size_t k, const int64_t *peer, const int64_t *member, int64_t n)
{
    bool *answered = malloc((size_t)(n ? n : 1) * sizeof *answered);
    if (!answered) {
        snprintf(c->err + k, sizeof c->err - k, "(out of memory asking the peers)");
        return;
    }
    ping(c->impl, peer, n, answered);
    int64_t silent = 0, shown = 0;
    for (int64_t i = 0; i < n; i++)
        silent += !answered[i];
    for (int64_t i = 0; i < n && shown < 4 && k < sizeof c->err; i++) {
        if (answered[i])
            continue;
        const char *sep = shown == 0 ? "" : shown + 1 == silent ? " and " : ", ";
        if (member)
            k += (size_t)snprintf(c->err + k, sizeof c->err - k, "%smember %lld (rank %lld)",
                                  sep, (long long)member[i], (long long)peer[i]);
        else
            k += (size_t)snprintf(c->err + k, sizeof c->err - k, "%srank %lld", sep,
                                  (long long)peer[i]);
        shown++;
    }
    if (k < sizeof c->err && silent > shown)
        k += (size_t)snprintf(c->err + k, sizeof c->err - k, " and %lld more",
                              (long long)(silent - shown));
    if (k < sizeof c->err && silent)
        snprintf(c->err + k, sizeof c->err - k,
                 " %s not answer (stopped, or busy outside communication)",
                 silent == 1 ? "does" : "do");
    else if (k < sizeof c->err)
        snprintf(c->err + k, sizeof c->err - k,
                 "%s, waiting in another operation (do the ranks run the same plan?)",
                 n == 1 ? "it answers" : "every one answers");
    free(answered);
}

/* The comm fails with its current error: every later call returns it. */
static void fail(rt_comm *c)
{
    mpi_impl *m = c->impl;
    m->failed = true;
    memcpy(m->fail, c->err, sizeof m->fail);
}

/* After a collective's timeout: the message naming the members that do
 * not answer; the comm fails and is stuck. */
static int late_collective(rt_group *g, int op)
{
    rt_comm *c = g->comm;
    mpi_impl *m = c->impl;
    c->err_kind = SU_PEER; /* a peer that does not answer */
    size_t k = (size_t)snprintf(c->err, sizeof c->err,
                                "timed out after %.0f ms in %s over %s (group of %lld ranks, "
                                "member %lld): ", m->timeout_s * 1e3, rt_comm_op_name(op),
                                g->desc, (long long)g->size, (long long)g->index);
    int64_t n = g->size - 1, *peer = malloc((size_t)n * 2 * sizeof *peer);
    if (!peer) {
        snprintf(c->err + k, sizeof c->err - k, "(out of memory asking the peers)");
    } else {
        for (int64_t j = 0, i = 0; j < g->size; j++)
            if (j != g->index) {
                peer[i] = rt_group_member_rank(g, j);
                peer[n + i++] = j;
            }
        blame(c, k < sizeof c->err ? k : sizeof c->err - 1, peer, peer + n, n);
        free(peer);
    }
    c->stuck = true;
    fail(c);
    return -1;
}

/* ---- groups ---- */

/* Every rank of the world has come to make a group: a barrier polled
 * against the timeout, so that the split after it (which MPI cannot
 * bound) only starts when everyone is there. */
static int all_here(rt_comm *c, const char *what)
{
    mpi_impl *m = c->impl;
    MPI_Request r;
    if (!MPI_OK(c, what, MPI_Ibarrier(m->world, &r)))
        return -1;
    int w = m_wait(c, &r, what);
    if (w != W_LATE)
        return w == W_DONE ? 0 : -1;
    c->err_kind = SU_PEER; /* a peer that does not answer */
    size_t k = (size_t)snprintf(c->err, sizeof c->err, "%s: timed out after %.0f ms: ", what,
                                m->timeout_s * 1e3);
    int64_t n = c->ranks - 1, *peer = malloc((size_t)n * sizeof *peer);
    if (peer) {
        for (int64_t r2 = 0, i = 0; r2 < c->ranks; r2++)
            if (r2 != c->rank)
                peer[i++] = r2;
        blame(c, k < sizeof c->err ? k : sizeof c->err - 1, peer, NULL, n);
        free(peer);
    }
    c->stuck = true;
    fail(c);
    return -1;
}

static int m_group_new(rt_comm *c, rt_group *g)
{
    mpi_impl *m = c->impl;
    char what[sizeof g->desc + 16];
    snprintf(what, sizeof what, "group over %s", g->desc);
    MPI_Comm *sub = malloc(sizeof *sub);
    if (!sub) {
        rt_comm_setfail(c, SU_NOMEM, "%s: out of memory", what);
        return -1;
    }
    if (all_here(c, what) != 0 ||
        !MPI_OK(c, what, MPI_Comm_split(m->world, (int)g->color, (int)g->index, sub))) {
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
        dst[e] = dtype == RT_F16 ? su_f16_to_f32(h[e]) : su_bf16_to_f32(h[e]);
}

static void from_f32(int dtype, const float *src, void *dst, int64_t k)
{
    uint16_t *h = dst;
    for (int64_t e = 0; e < k; e++)
        h[e] = dtype == RT_F16 ? su_f32_to_f16(src[e]) : su_f32_to_bf16(src[e]);
}

/* The comm's staging of at least `bytes` bytes (kept between ops, and
 * never freed while an op that timed out may still write it); NULL with
 * the error set. */
static void *scratch(rt_comm *c, size_t bytes, const char *what)
{
    mpi_impl *m = c->impl;
    if (m->scratch_bytes < bytes) {
        void *p = malloc(bytes);
        if (!p) {
            rt_comm_setfail(c, SU_NOMEM, "%s: out of memory", what);
            return NULL;
        }
        free(m->scratch);
        m->scratch = p;
        m->scratch_bytes = bytes;
    }
    return m->scratch;
}

/* In place: MPI_Iallreduce of k elements, waited for. */
static int iallreduce(rt_comm *c, MPI_Comm comm, void *buf, int k, MPI_Datatype t, MPI_Op mop,
                      const char *what)
{
    MPI_Request r;
    if (!MPI_OK(c, what, MPI_Iallreduce(MPI_IN_PLACE, buf, k, t, mop, comm, &r)))
        return W_ERROR;
    return m_wait(c, &r, what);
}

static int m_all_reduce(rt_group *g, MPI_Comm comm, void *buf, int64_t count, int dtype,
                        MPI_Op mop, const char *what)
{
    rt_comm *c = g->comm;
    char *p = buf;
    int w = W_DONE;
    if (dtype == RT_F32 || dtype == RT_I32) {
        for (int64_t o = 0; o < count && w == W_DONE; o += RT_MPI_MAX_COUNT)
            w = iallreduce(c, comm, p + 4 * o, (int)min64(count - o, RT_MPI_MAX_COUNT),
                           mpi_type(dtype), mop, what);
        return w;
    }
    int64_t piece = min64(SCRATCH_ELEMS, RT_MPI_MAX_COUNT);
    float *tmp = scratch(c, (size_t)piece * sizeof *tmp, what);
    if (!tmp)
        return W_ERROR;
    for (int64_t o = 0; o < count && w == W_DONE; o += piece) {
        int64_t k = min64(count - o, piece);
        to_f32(dtype, p + 2 * o, tmp, k);
        if ((w = iallreduce(c, comm, tmp, (int)k, MPI_FLOAT, mop, what)) == W_DONE)
            from_f32(dtype, tmp, p + 2 * o, k);
    }
    return w;
}

static int ireduce_scatter(rt_comm *c, MPI_Comm comm, const void *send, void *recv, int k,
                           int dtype, const char *what)
{
    MPI_Request r;
    if (!MPI_OK(c, what, MPI_Ireduce_scatter_block(send, recv, k, mpi_type(dtype), MPI_SUM,
                                                   comm, &r)))
        return W_ERROR;
    return m_wait(c, &r, what);
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
    char *tmp = scratch(c, (size_t)(piece * (n + 1) * 4), what); /* (n, piece) in, (piece) out */
    if (!tmp)
        return W_ERROR;
    char *out = tmp + piece * n * 4;
    bool wide = dtype == RT_F32 || dtype == RT_I32;
    int w = W_DONE;
    for (int64_t o = 0; o < count && w == W_DONE; o += piece) {
        int64_t k = min64(count - o, piece);
        for (int64_t j = 0; j < n; j++) {
            const char *src = (const char *)send + (j * count + o) * es;
            if (wide)
                memcpy(tmp + j * k * 4, src, (size_t)(k * 4));
            else
                to_f32(dtype, src, (float *)(void *)(tmp + j * k * 4), k);
        }
        if ((w = ireduce_scatter(c, comm, tmp, out, (int)k, dtype, what)) != W_DONE)
            break;
        if (wide)
            memcpy((char *)recv + o * 4, out, (size_t)(k * 4));
        else
            from_f32(dtype, (const float *)(void *)out, (char *)recv + o * 2, k);
    }
    return w;
}

static int m_reduce_scatter(rt_group *g, MPI_Comm comm, const void *send, void *recv,
                            int64_t count, int dtype, const char *what)
{
    if ((dtype == RT_F32 || dtype == RT_I32) && count <= RT_MPI_MAX_COUNT / g->size)
        return ireduce_scatter(g->comm, comm, send, recv, (int)count, dtype, what);
    return m_reduce_scatter_pieces(g, comm, send, recv, count, dtype, what);
}

/* ---- byte collectives ---- */

/* all_gather or all_to_all of one element of type st per member from send
 * into one element of type rt per member of recv, waited for. */
static int iblocks(rt_comm *c, MPI_Comm comm, int op, const void *send, int sk,
                   MPI_Datatype st, void *recv, int rk, MPI_Datatype rty, const char *what)
{
    MPI_Request r;
    bool ok = op == RT_CO_ALL_GATHER
                  ? MPI_OK(c, what, MPI_Iallgather(send, sk, st, recv, rk, rty, comm, &r))
                  : MPI_OK(c, what, MPI_Ialltoall(send, sk, st, recv, rk, rty, comm, &r));
    return ok ? m_wait(c, &r, what) : W_ERROR;
}

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
            return W_ERROR;
        int ok = MPI_OK(c, what, MPI_Type_create_resized(piece, 0, (MPI_Aint)bytes, &block));
        MPI_Type_free(&piece);
        if (!ok)
            return W_ERROR;
        int w = W_ERROR;
        if (MPI_OK(c, what, MPI_Type_commit(&block)))
            w = op == RT_CO_ALL_GATHER
                    ? iblocks(c, comm, op, send + o, k, MPI_BYTE, recv + o, 1, block, what)
                    : iblocks(c, comm, op, send + o, 1, block, recv + o, 1, block, what);
        MPI_Type_free(&block); /* MPI keeps it while an op uses it */
        if (w != W_DONE)
            return w;
    }
    return W_DONE;
}

static int m_bytes(rt_group *g, MPI_Comm comm, int op, const void *send, void *recv,
                   int64_t bytes, const char *what)
{
    rt_comm *c = g->comm;
    if (op != RT_CO_BROADCAST) {
        if (bytes > RT_MPI_MAX_COUNT)
            return m_blocks_pieces(g, comm, op, send, recv, bytes, what);
        return iblocks(c, comm, op, send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE,
                       what);
    }
    int w = W_DONE; /* broadcast: contiguous, so plain pieces */
    for (int64_t o = 0; o < bytes && w == W_DONE; o += RT_MPI_MAX_COUNT) {
        MPI_Request r;
        int k = (int)min64(bytes - o, RT_MPI_MAX_COUNT);
        w = MPI_OK(c, what, MPI_Ibcast((char *)recv + o, k, MPI_BYTE, 0, comm, &r))
                ? m_wait(c, &r, what)
                : W_ERROR;
    }
    return w;
}

/* ---- small collectives: a direct exchange ---- */

/* Whether op moves few enough bytes for a direct exchange: every member
 * sends its block(s) straight to every other (or member 0 to all, for a
 * broadcast) by MPI_Isend and MPI_Irecv, and reduces what it received
 * itself. For blocks small enough that MPI sends them eagerly (no
 * handshake), one such round costs less than a nonblocking collective's
 * schedule (measured: a 64-byte all_reduce on 2 ranks about 1.5 us
 * against 3.3 us by MPI_Iallreduce and 4 us by MPI_Allreduce); from a
 * few KB on, MPI's own algorithms are as fast or faster. */
static bool direct(const rt_group *g, int op, int64_t count, int dtype)
{
    bool typed = op == RT_CO_ALL_REDUCE || op == RT_CO_ALL_REDUCE_MAX ||
                 op == RT_CO_REDUCE_SCATTER;
    int64_t block = count * (typed ? rt_dtype_size(dtype) : 1);
    return g->size <= DIRECT_MEMBERS && block <= DIRECT_BYTES;
}

/* Posts the direct exchange of `bytes` bytes with every other member j:
 * a receive into recv + j*rstride and a send from send + j*sstride; with
 * root >= 0 only root sends, and the others receive from it. Then waits
 * for all of them. */
static int exchange(rt_group *g, MPI_Comm comm, const char *send, int64_t sstride, char *recv,
                    int64_t rstride, int64_t bytes, int64_t root, const char *what)
{
    rt_comm *c = g->comm;
    int64_t n = g->size, me = g->index;
    MPI_Request req[2 * DIRECT_MEMBERS];
    int k = 0; /* posted */
    bool ok = true;
    for (int64_t j = 0; j < n && ok; j++) {
        if (j == me)
            continue;
        if ((root < 0 || j == root) &&
            (ok = MPI_OK(c, what, MPI_Irecv(recv + j * rstride, (int)bytes, MPI_BYTE, (int)j,
                                            DIRECT_TAG, comm, &req[k]))))
            k++;
        if (ok && (root < 0 || me == root) &&
            (ok = MPI_OK(c, what, MPI_Isend(send + j * sstride, (int)bytes, MPI_BYTE, (int)j,
                                            DIRECT_TAG, comm, &req[k]))))
            k++;
    }
    int w = ok ? m_waitall(c, k, req, what) : W_ERROR;
    if (w != W_ERROR)
        return w;
    /* an error (such as a message of another size: the members disagree)
     * with requests still posted, which MPI may complete: the comm fails */
    if (k > 0)
        keep_late(c->impl, k, req);
    c->stuck = true;
    fail(c);
    return W_ERROR;
}

/* The op by a direct exchange (direct() said yes). Reductions go through
 * the comm's scratch, a block per member, reduced in member order: the
 * result is the same on every member, and the local communicator's. */
static int m_direct(rt_group *g, MPI_Comm comm, int op, const void *send, void *recv,
                    int64_t count, int dtype, const char *what)
{
    int64_t n = g->size, me = g->index;
    bool reduce = op == RT_CO_ALL_REDUCE || op == RT_CO_ALL_REDUCE_MAX ||
                  op == RT_CO_REDUCE_SCATTER;
    int64_t block = count * (reduce ? rt_dtype_size(dtype) : 1);
    const char *s = send;
    switch (op) {
    case RT_CO_BARRIER: return exchange(g, comm, NULL, 0, NULL, 0, 0, -1, what);
    case RT_CO_BROADCAST: return exchange(g, comm, recv, 0, recv, 0, block, 0, what);
    case RT_CO_ALL_GATHER:
    case RT_CO_ALL_TO_ALL: {
        int64_t stride = op == RT_CO_ALL_TO_ALL ? block : 0;
        memcpy((char *)recv + me * block, s + me * stride, (size_t)block);
        return exchange(g, comm, s, stride, recv, block, block, -1, what);
    }
    default: break;
    }
    char *tmp = scratch(g->comm, (size_t)(n * block) + 1, what);
    if (!tmp)
        return W_ERROR;
    int64_t stride = op == RT_CO_REDUCE_SCATTER ? block : 0;
    memcpy(tmp + me * block, s + me * stride, (size_t)block);
    int w = exchange(g, comm, s, stride, tmp, block, block, -1, what);
    if (w != W_DONE)
        return w;
    union { float f[DIRECT_CHUNK]; uint32_t u[DIRECT_CHUNK]; } acc;
    int64_t es = rt_dtype_size(dtype);
    for (int64_t e = 0; e < count; e += DIRECT_CHUNK) {
        int64_t k = count - e < DIRECT_CHUNK ? count - e : DIRECT_CHUNK;
        for (int64_t j = 0; j < n; j++)
            rt_comm_acc_add(dtype, &acc, tmp + j * block + e * es, k, j == 0,
                            op == RT_CO_ALL_REDUCE_MAX);
        rt_comm_acc_out(dtype, &acc, (char *)recv + e * es, k);
    }
    return W_DONE;
}

static int m_run(rt_group *g, int op, const void *send, void *recv, int64_t count, int dtype)
{
    MPI_Comm comm = *(MPI_Comm *)g->impl;
    char what[sizeof g->desc + 32];
    snprintf(what, sizeof what, "%s over %s", rt_comm_op_name(op), g->desc);
    int w;
    MPI_Request r;
    if (direct(g, op, count, dtype))
        w = m_direct(g, comm, op, send, recv, count, dtype, what);
    else if (op == RT_CO_ALL_REDUCE || op == RT_CO_ALL_REDUCE_MAX)
        w = m_all_reduce(g, comm, recv, count, dtype, op == RT_CO_ALL_REDUCE ? MPI_SUM : MPI_MAX,
                         what);
    else if (op == RT_CO_REDUCE_SCATTER)
        w = m_reduce_scatter(g, comm, send, recv, count, dtype, what);
    else if (op == RT_CO_BARRIER) /* only past DIRECT_MEMBERS */
        w = MPI_OK(g->comm, what, MPI_Ibarrier(comm, &r)) ? m_wait(g->comm, &r, what) : W_ERROR;
    else
        w = m_bytes(g, comm, op, send, recv, count, what);
    if (w == W_LATE)
        return late_collective(g, op);
    return w == W_DONE ? 0 : -1;
}

/* ---- point to point ---- */

/* After a send's or receive's timeout, o of `bytes` bytes moved: "rank 0
 * sent nothing; rank 0 does not answer (...)". The comm fails, stuck,
 * when MPI still holds a request (w == W_LATE). */
static int late_p2p(rt_comm *c, bool send, int64_t peer, int64_t o, int64_t bytes, int w,
                    const char *what)
{
    mpi_impl *m = c->impl;
    c->err_kind = SU_PEER; /* a peer that does not answer */
    size_t k = (size_t)snprintf(c->err, sizeof c->err, "%s timed out after %.0f ms: rank %lld ",
                                what, m->timeout_s * 1e3, (long long)peer);
    if (!send && w == W_LATE && k < sizeof c->err) /* the message had begun to arrive */
        k += (size_t)snprintf(c->err + k, sizeof c->err - k, "did not finish sending %lld "
                              "bytes; ", (long long)bytes);
    else if (o == 0 && k < sizeof c->err)
        k += (size_t)snprintf(c->err + k, sizeof c->err - k, "%s; ",
                              send ? "did not receive" : "sent nothing");
    else if (k < sizeof c->err)
        k += (size_t)snprintf(c->err + k, sizeof c->err - k, "%s %lld of %lld bytes; ",
                              send ? "received" : "sent", (long long)o, (long long)bytes);
    if (k < sizeof c->err) /* "...; rank 0 does not answer (...)" */
        blame(c, k, &peer, NULL, 1);
    if (w == W_LATE) {
        c->stuck = true;
        fail(c);
    }
    return -1;
}

/* One piece of a receive: k bytes expected at offset o of `bytes`; the
 * incoming size is checked before it is received. */
static int m_recv_piece(rt_comm *c, MPI_Comm world, int64_t peer, char *buf, int64_t o, int k,
                        int64_t bytes, const char *what)
{
    mpi_impl *m = c->impl;
    MPI_Status st;
    int flag = 0, n = 0;
    waiter w = wait_start();
    for (;;) {
        if (!MPI_OK(c, what, MPI_Iprobe((int)peer, P2P_TAG, world, &flag, &st)))
            return W_ERROR;
        if (flag)
            break;
        if (late(m, &w))
            return W_LATE_IDLE;
    }
    if (!MPI_OK(c, what, MPI_Get_count(&st, MPI_BYTE, &n)))
        return W_ERROR;
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
        return W_ERROR;
    }
    MPI_Request r;
    if (!MPI_OK(c, what, MPI_Irecv(buf + o, k, MPI_BYTE, (int)peer, P2P_TAG, world, &r)))
        return W_ERROR;
    return m_wait(c, &r, what);
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
        int k = (int)min64(bytes - o, RT_MPI_MAX_COUNT), w;
        MPI_Request r;
        if (send)
            w = MPI_OK(c, what, MPI_Isend((char *)buf + o, k, MPI_BYTE, (int)peer, P2P_TAG,
                                          m->world, &r))
                    ? m_wait(c, &r, what)
                    : W_ERROR;
        else
            w = m_recv_piece(c, m->world, peer, buf, o, k, bytes, what);
        if (w == W_LATE || w == W_LATE_IDLE)
            return late_p2p(c, send, peer, o, bytes, w, what);
        if (w != W_DONE)
            return -1;
        o += k;
    } while (o < bytes);
    return 0;
}

/* ---- the comm ---- */

static int m_check(rt_comm *c)
{
    mpi_impl *m = c->impl;
    if (!m->failed)
        return 0;
    memcpy(c->err, m->fail, sizeof c->err);
    return -1;
}

/* Fails this comm only: ending the job is the caller's decision. */
static void m_abort(rt_comm *c, const char *msg)
{
    (void)msg; /* already c's error */
    fail(c);
}

static void m_free(rt_comm *c)
{
    mpi_impl *m = c->impl;
    int done = 1;
    if (m->nlate && !finalized())
        MPI_Testall(m->nlate, m->late, &done, MPI_STATUSES_IGNORE);
    if (done) /* else MPI may still write the scratch: it is kept */
        free(m->scratch);
    free(m->late);
    if (!finalized())
        MPI_Comm_free(&m->world);
    free(m);
    free(c);
}

static const rt_comm_ops mpi_ops = {
    m_group_new, m_group_free, m_check, m_run, m_p2p, m_abort, m_free,
};

/* m->world := a duplicate of MPI_COMM_WORLD, made by every rank together
 * within the timeout; -1 with err (c and m freed, or kept when MPI may
 * still write the handle: a timeout). */
static int dup_world(rt_comm *c, su_status *err)
{
    mpi_impl *m = c->impl;
    const char *what = "mpi communicator";
    MPI_Request r;
    int w = MPI_OK(c, what, MPI_Comm_idup(MPI_COMM_WORLD, &m->dup, &r)) ? m_wait(c, &r, what)
                                                                        : W_ERROR;
    if (w == W_DONE) {
        m->world = m->dup;
        return 0;
    }
    if (w == W_LATE) /* the peers cannot be asked without the duplicate */
        su_fail(err, SU_PEER, "making the MPI communicator timed out after %.0f ms: another rank "
                "did not come (stopped, or busy elsewhere)", m->timeout_s * 1e3);
    else
        su_fail(err, SU_PEER, "%s", c->err);
    if (w == W_LATE)
        return -1; /* c and m stay: MPI writes m->dup if the duplicate is ever made */
    free(c);
    free(m);
    return -1;
}

rt_comm *rt_mpi_comm_new(const rt_mesh_desc *mesh, int timeout_ms, su_status *err)
{
    int64_t ranks;
    if (!rt_comm_mesh_check(mesh, &ranks, err))
        return NULL;
    if (timeout_ms < 0) {
        su_fail(err, SU_USAGE, "timeout of %d ms: must be positive (0: the default)", timeout_ms);
        return NULL;
    }
    int init = 0;
    MPI_Initialized(&init);
    if (!init || finalized()) {
        su_fail(err, SU_USAGE, "MPI is %s: the comm 'mpi' needs MPI initialised first (MPI_Init, "
                "or shardc_mpi_init)", init ? "already finalized" : "not initialised");
        return NULL;
    }
    int size = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != ranks) {
        char ms[RT_MAX_AXES * (RT_COMM_NAMELEN + 24)];
        su_fail(err, SU_USAGE, "the plan's mesh %s has %lld rank%s, but MPI started %d process%s: "
                "run mpirun -np %lld", rt_comm_mesh_str(mesh, ms, sizeof ms), (long long)ranks,
                ranks == 1 ? "" : "s", size, size == 1 ? "" : "es", (long long)ranks);
        return NULL;
    }
    rt_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        su_fail(err, SU_NOMEM, "out of memory making the MPI communicator");
        return NULL;
    }
    m->timeout_s = (timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS) / 1e3;
    m->world = MPI_COMM_NULL;
    rt_comm_init(c, &mpi_ops, m, mesh, rank, ranks);
    if (dup_world(c, err) != 0)
        return NULL;
    if (!MPI_OK(c, "mpi communicator", MPI_Comm_set_errhandler(m->world, MPI_ERRORS_RETURN))) {
        su_fail(err, SU_PEER, "%s", c->err);
        MPI_Comm_free(&m->world);
        free(c);
        free(m);
        return NULL;
    }
    return c;
}
