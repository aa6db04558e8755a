/* comm_local.c: the local communicator (comm.h): every rank is a thread of
 * one process, and collectives go through shared memory.
 *
 * The world holds one instance per group (keyed by axes list and color),
 * made by the first member to ask for it. An instance has a slot per member
 * and a barrier. A collective publishes the member's buffers in its slot,
 * waits at the barrier, then each member copies what it needs straight from
 * its peers' buffers (reductions: each member sums a disjoint 1/size slice
 * of the elements over all members in member order 0..size-1 and writes it
 * into every member's buffer, so the result is bit-identical everywhere and
 * never depends on timing), and a second wait keeps everyone's buffers alive
 * until all readers are done.
 *
 * One mutex per world guards every barrier and the failure state, so a
 * failure can wake every waiter without losing a wakeup. Only the first
 * wait of an op can fail (abort, timeout): once it has passed, every member
 * has arrived and reads its peers' memory, so the second wait always waits
 * for all of them (it never blocks long: the work between is plain copying).
 *
 * Point to point is a rendezvous through a channel per ordered pair of
 * ranks (sender, receiver), in the receiver's list, made at first use: the
 * sender posts its buffer and waits; the receiver waits for a post, claims
 * it, copies straight from the sender's buffer and marks it done, which
 * releases the sender. One message at a time per channel, so messages
 * arrive in the order they were sent. A send withdraws its post when it
 * gives up (abort, timeout) before the receiver claimed it; once claimed,
 * it waits for the copy, which always completes. Each rank waits on a
 * condition of its own, so a transfer wakes only its two ranks.
 *
 * The device flavour (rt_local_run_with, rt_local_p2p_with: the cuda
 * backend's collectives on device memory, comm_dev.c) goes through the
 * same slots, waits and channels; only the copying is the caller's.
 */
#include "runtime/comm/comm_impl.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_MS (10 * 60 * 1000)
/* Yields a waiter spends watching for the last arrival before it sleeps:
 * most waits are short, and a wakeup costs far more than a yield. */
#define SPIN_YIELDS 100

/* What a member published for the current op. */
typedef rt_local_slot lslot;

/* One group's shared state: its slots and its barrier. */
typedef struct linst {
    struct linst *next;
    int naxes;
    uint8_t axes[RT_MAX_AXES];
    int64_t color, n;
    pthread_cond_t cv;
    int64_t arrived;    /* members waiting at the current barrier */
    _Atomic uint64_t gen; /* barriers completed; written under the mutex */
    uint64_t *entered;  /* (n) barriers each member has entered */
    lslot *slot;        /* (n) */
} linst;

/* A channel's states: a message posted by the sender, claimed by the
 * receiver (copying it), done (copied) or refused (another size); the
 * sender makes it empty again. */
enum { CH_EMPTY, CH_POSTED, CH_CLAIMED, CH_DONE, CH_REFUSED };

/* Messages from one rank to another, one at a time. */
typedef struct lchan {
    struct lchan *next;  /* the receiver's other channels */
    int64_t from;
    int state;
    const void *buf;     /* the sender's, while posted or claimed */
    int64_t bytes, want; /* the sender's size; the receiver's when refused */
} lchan;

/* What a rank waits on in point to point. */
typedef struct lrank {
    pthread_cond_t cv;   /* only this rank waits on it */
    lchan *inbox;        /* the channels to this rank */
} lrank;

struct rt_local_world {
    pthread_mutex_t mu; /* guards everything below but comm */
    int64_t ranks;
    int timeout_ms;
    rt_comm *comm;      /* (ranks) */
    lrank *rk;          /* (ranks) */
    linst *insts;
    bool failed;
    char fail_msg[RT_COMM_ERRLEN];
};

/* Under w->mu: the world has failed; the caller's error becomes why. */
static int failed_locked(rt_comm *c)
{
    rt_local_world *w = c->impl;
    memcpy(c->err, w->fail_msg, sizeof c->err);
    return -1;
}

/* Under w->mu: marks the world failed (the first failure wins) and wakes
 * every waiter of every group. */
static void fail_locked(rt_local_world *w, const char *msg)
{
    if (!w->failed) {
        w->failed = true;
        size_t n = strnlen(msg, sizeof w->fail_msg - 1);
        memcpy(w->fail_msg, msg, n);
        w->fail_msg[n] = 0;
    }
    for (linst *in = w->insts; in; in = in->next)
        pthread_cond_broadcast(&in->cv);
    for (int64_t r = 0; r < w->ranks; r++)
        pthread_cond_broadcast(&w->rk[r].cv);
}

static int l_check(rt_comm *c)
{
    rt_local_world *w = c->impl;
    pthread_mutex_lock(&w->mu);
    int rc = w->failed ? failed_locked(c) : 0;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static void l_abort(rt_comm *c, const char *msg)
{
    rt_local_world *w = c->impl;
    pthread_mutex_lock(&w->mu);
    fail_locked(w, msg);
    pthread_mutex_unlock(&w->mu);
}

/* ---- group instances ---- */

static void inst_free(linst *in)
{
    pthread_cond_destroy(&in->cv);
    free(in->entered);
    free(in->slot);
    free(in);
}

static linst *inst_new(const rt_group *g)
{
    linst *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->naxes = g->naxes;
    memcpy(in->axes, g->axes, sizeof in->axes);
    in->color = g->color;
    in->n = g->size;
    in->entered = calloc((size_t)g->size, sizeof *in->entered);
    in->slot = calloc((size_t)g->size, sizeof *in->slot);
    pthread_condattr_t attr;
    bool ok = in->entered && in->slot && pthread_condattr_init(&attr) == 0;
    if (ok) {
        /* deadlines on the monotonic clock: a clock change cannot fire them */
        ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
             pthread_cond_init(&in->cv, &attr) == 0;
        pthread_condattr_destroy(&attr);
    }
    if (!ok) {
        free(in->entered);
        free(in->slot);
        free(in);
        return NULL;
    }
    return in;
}

/* The world's instance of g's group, made by the first member to ask. */
static int l_group_new(rt_comm *c, rt_group *g)
{
    rt_local_world *w = c->impl;
    pthread_mutex_lock(&w->mu);
    if (w->failed) {
        int rc = failed_locked(c);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    linst *in = w->insts;
    while (in && !(in->naxes == g->naxes && in->color == g->color &&
                   memcmp(in->axes, g->axes, sizeof in->axes) == 0))
        in = in->next;
    if (!in && (in = inst_new(g))) {
        in->next = w->insts;
        w->insts = in;
    }
    pthread_mutex_unlock(&w->mu);
    if (!in) {
        rt_comm_setfail(c, SU_NOMEM, "group over %s: out of memory", g->desc);
        return -1;
    }
    g->impl = in;
    return 0;
}

/* The instance belongs to the world: it goes with rt_local_world_free. */
static void l_group_free(rt_group *g)
{
    g->impl = NULL;
}

/* ---- the barrier ---- */

static struct timespec deadline_after(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Under w->mu, after a timeout: "timed out after ...: waiting for member 0
 * (rank 0)" into the caller's error, and the world fails with it. */
static void timed_out_locked(rt_group *g, int op, const linst *in)
{
    rt_comm *c = g->comm;
    rt_local_world *w = c->impl;
    /* the members that have not entered the barrier this member waits at */
    int64_t missing = 0;
    for (int64_t m = 0; m < in->n; m++)
        missing += in->entered[m] < in->entered[g->index];
    size_t k = (size_t)snprintf(c->err, sizeof c->err,
                                "timed out after %d ms in %s over %s (group of %lld ranks, "
                                "member %lld): waiting for member%s",
                                w->timeout_ms, rt_comm_op_name(op), g->desc, (long long)g->size,
                                (long long)g->index, missing > 1 ? "s" : "");
    int64_t shown = 0;
    for (int64_t m = 0; m < in->n && shown < 4 && k < sizeof c->err; m++)
        if (in->entered[m] < in->entered[g->index])
            k += (size_t)snprintf(c->err + k, sizeof c->err - k, "%s %lld (rank %lld)",
                                  shown++ ? "," : "", (long long)m,
                                  (long long)rt_group_member_rank(g, m));
    if (missing > shown && k < sizeof c->err)
        snprintf(c->err + k, sizeof c->err - k, " and %lld more", (long long)(missing - shown));
    char msg[RT_COMM_ERRLEN + 32];
    snprintf(msg, sizeof msg, "rank %lld %s", (long long)c->rank, c->err);
    fail_locked(w, msg);
}

/* Waits until every member of g's group has arrived. An abortable wait
 * returns -1 at once when the world fails (before or while waiting) or the
 * timeout passes, and then withdraws its arrival; the other kind always
 * waits for everyone. */
static int l_wait(rt_group *g, int op, bool abortable)
{
    rt_comm *c = g->comm;
    rt_local_world *w = c->impl;
    linst *in = g->impl;
    pthread_mutex_lock(&w->mu);
    if (abortable && w->failed) {
        int rc = failed_locked(c);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    uint64_t gen = atomic_load_explicit(&in->gen, memory_order_relaxed);
    in->entered[g->index]++;
    if (++in->arrived == in->n) {
        in->arrived = 0;
        atomic_store_explicit(&in->gen, gen + 1, memory_order_release);
        pthread_cond_broadcast(&in->cv);
        pthread_mutex_unlock(&w->mu);
        return 0;
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < SPIN_YIELDS; i++) {
        if (atomic_load_explicit(&in->gen, memory_order_acquire) != gen)
            return 0;
        sched_yield();
    }
    struct timespec dl = deadline_after(w->timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    while (atomic_load_explicit(&in->gen, memory_order_relaxed) == gen) {
        if (!abortable) {
            pthread_cond_wait(&in->cv, &w->mu);
            continue;
        }
        bool timeout = false;
        if (!w->failed)
            timeout = pthread_cond_timedwait(&in->cv, &w->mu, &dl) == ETIMEDOUT;
        if (atomic_load_explicit(&in->gen, memory_order_relaxed) != gen ||
            !(w->failed || timeout))
            continue;
        if (w->failed)
            failed_locked(c);
        else
            timed_out_locked(g, op, in);
        in->arrived--;
        in->entered[g->index]--;
        rc = -1;
        break;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* ---- the collectives ---- */

enum { CHUNK = 256 }; /* elements summed at a time */

/* Elements [lo, hi) of every member's buffer become their sum (their
 * maximum with max), taken in member order. */
static void all_reduce_slice(const linst *in, int dtype, int64_t lo, int64_t hi, bool max)
{
    union { float f[CHUNK]; uint32_t u[CHUNK]; } acc;
    uint32_t out[CHUNK];
    int64_t es = rt_dtype_size(dtype);
    for (int64_t e = lo; e < hi; e += CHUNK) {
        int64_t k = hi - e < CHUNK ? hi - e : CHUNK;
        for (int64_t j = 0; j < in->n; j++)
            rt_comm_acc_add(dtype, &acc, (const char *)in->slot[j].recv + e * es, k, j == 0, max);
        rt_comm_acc_out(dtype, &acc, out, k);
        for (int64_t j = 0; j < in->n; j++)
            memcpy((char *)in->slot[j].recv + e * es, out, (size_t)(k * es));
    }
}

/* recv = the sum over members of their send's block `me`. */
static void reduce_scatter(const linst *in, int64_t me, void *recv, int64_t count, int dtype)
{
    union { float f[CHUNK]; uint32_t u[CHUNK]; } acc;
    int64_t es = rt_dtype_size(dtype);
    for (int64_t e = 0; e < count; e += CHUNK) {
        int64_t k = count - e < CHUNK ? count - e : CHUNK;
        for (int64_t j = 0; j < in->n; j++)
            rt_comm_acc_add(dtype, &acc, (const char *)in->slot[j].send + (me * count + e) * es, k,
                    j == 0, false);
        rt_comm_acc_out(dtype, &acc, (char *)recv + e * es, k);
    }
}

/* "all_reduce(8 x f32)", "all_gather(64 bytes)", "barrier" into buf. */
static const char *slot_str(const lslot *s, char *buf, size_t size)
{
    const char *name = rt_comm_op_name(s->op);
    if (s->op == RT_CO_BARRIER)
        snprintf(buf, size, "%s", name);
    else if (s->op == RT_CO_ALL_REDUCE || s->op == RT_CO_ALL_REDUCE_MAX ||
             s->op == RT_CO_REDUCE_SCATTER)
        snprintf(buf, size, "%s(%lld x %s)", name, (long long)s->count, rt_dtype_name(s->dtype));
    else
        snprintf(buf, size, "%s(%lld bytes)", name, (long long)s->count);
    return buf;
}

/* Every member compares every slot with member 0's, so all of them agree
 * on the verdict. */
static int check_same(rt_group *g, const linst *in)
{
    const lslot *s0 = &in->slot[0];
    for (int64_t j = 1; j < in->n; j++) {
        const lslot *s = &in->slot[j];
        if (s->op == s0->op && s->count == s0->count && s->dtype == s0->dtype)
            continue;
        char a[96], b[96];
        rt_comm_seterr(g->comm, "collective mismatch in the group over %s: member 0 called %s "
                       "but member %lld (rank %lld) called %s", g->desc,
                       slot_str(s0, a, sizeof a), (long long)j,
                       (long long)rt_group_member_rank(g, j), slot_str(s, b, sizeof b));
        return -1;
    }
    return 0;
}

static void work(rt_group *g, const linst *in, int op, void *recv, int64_t count, int dtype)
{
    int64_t n = in->n, me = g->index;
    switch (op) {
    case RT_CO_ALL_REDUCE:
    case RT_CO_ALL_REDUCE_MAX: {
        int64_t lo, hi;
        rt_local_slice(count, n, me, &lo, &hi);
        all_reduce_slice(in, dtype, lo, hi, op == RT_CO_ALL_REDUCE_MAX);
        break;
    }
    case RT_CO_REDUCE_SCATTER: reduce_scatter(in, me, recv, count, dtype); break;
    case RT_CO_ALL_GATHER:
        for (int64_t j = 0; j < n; j++)
            memcpy((char *)recv + j * count, in->slot[j].send, (size_t)count);
        break;
    case RT_CO_ALL_TO_ALL:
        for (int64_t j = 0; j < n; j++)
            memcpy((char *)recv + j * count, (const char *)in->slot[j].send + me * count,
                   (size_t)count);
        break;
    case RT_CO_BROADCAST:
        if (me != 0)
            memcpy(recv, in->slot[0].recv, (size_t)count);
        break;
    default: break;
    }
}

void rt_local_slice(int64_t count, int64_t n, int64_t me, int64_t *lo, int64_t *hi)
{
    int64_t q = count / n, r = count % n;
    *lo = me * q + (me < r ? me : r);
    *hi = *lo + q + (me < r);
}

/* The op in slot s, between the two waits: fn(arg, g, every slot), or
 * the host's work when fn is NULL. */
static int run_between(rt_group *g, const lslot *s, rt_local_work fn, void *arg)
{
    linst *in = g->impl;
    /* Nobody reads this slot now: the last op's readers passed its second
     * wait before this member could. */
    in->slot[g->index] = *s;
    if (l_wait(g, s->op, true))
        return -1;
    int rc = check_same(g, in);
    if (rc == 0 && fn)
        rc = fn(arg, g, in->slot);
    else if (rc == 0)
        work(g, in, s->op, s->recv, s->count, s->dtype);
    l_wait(g, s->op, false);
    return rc;
}

static int l_run(rt_group *g, int op, const void *send, void *recv, int64_t count, int dtype)
{
    lslot s = {op, dtype, count, send, recv};
    return run_between(g, &s, NULL, NULL);
}

/* ---- point to point ---- */

/* Under w->mu: the channel from rank `from` to rank `to`, made at first
 * use; NULL when out of memory. */
static lchan *chan_locked(rt_local_world *w, int64_t from, int64_t to)
{
    lchan *ch = w->rk[to].inbox;
    while (ch && ch->from != from)
        ch = ch->next;
    if (!ch && (ch = calloc(1, sizeof *ch))) {
        ch->from = from;
        ch->next = w->rk[to].inbox;
        w->rk[to].inbox = ch;
    }
    return ch;
}

/* Under w->mu, on rank me's condition, until ch holds a posted message
 * (posted) or no longer does (!posted): 0 when it does, 1 when the world
 * has failed, 2 when the deadline has passed. */
static int wait_chan_locked(rt_local_world *w, int64_t me, const lchan *ch, bool posted,
                            const struct timespec *dl)
{
    for (;;) {
        if ((ch->state == CH_POSTED) == posted)
            return 0;
        if (w->failed)
            return 1;
        if (pthread_cond_timedwait(&w->rk[me].cv, &w->mu, dl) == ETIMEDOUT &&
            (ch->state == CH_POSTED) != posted)
            return w->failed ? 1 : 2;
    }
}

/* "rank 0 sent 64 bytes, rank 1 expects 32" after "what: size mismatch: ". */
static void mismatch_err(rt_comm *c, const char *what, int64_t from, int64_t sent, int64_t to,
                         int64_t want)
{
    rt_comm_seterr(c, "%s: size mismatch: rank %lld sent %lld bytes, rank %lld expects %lld",
                   what, (long long)from, (long long)sent, (long long)to, (long long)want);
}

static int l_send(rt_comm *c, int64_t peer, const void *buf, int64_t bytes, const char *what)
{
    rt_local_world *w = c->impl;
    int64_t me = c->rank;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    lchan *ch = w->failed ? NULL : chan_locked(w, me, peer);
    if (!ch) {
        rc = w->failed ? failed_locked(c)
                       : (rt_comm_setfail(c, SU_NOMEM, "%s: out of memory", what), -1);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    /* empty: this rank's last send on it has finished */
    ch->buf = buf;
    ch->bytes = bytes;
    ch->state = CH_POSTED;
    pthread_cond_broadcast(&w->rk[peer].cv);
    struct timespec dl = deadline_after(w->timeout_ms);
    int why = wait_chan_locked(w, me, ch, false, &dl);
    if (why != 0) { /* still posted: withdrawn, the receiver never sees it */
        ch->state = CH_EMPTY;
        if (why == 1)
            failed_locked(c);
        else
            rt_comm_seterr(c, "%s timed out after %d ms: rank %lld did not receive", what,
                           w->timeout_ms, (long long)peer);
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    while (ch->state == CH_CLAIMED) /* the receiver is copying: it always finishes */
        pthread_cond_wait(&w->rk[me].cv, &w->mu);
    if (ch->state == CH_REFUSED) {
        mismatch_err(c, what, me, bytes, peer, ch->want);
        rc = -1;
    }
    ch->state = CH_EMPTY;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int l_recv(rt_comm *c, int64_t peer, void *buf, int64_t bytes, const char *what,
                  rt_local_copy copy, void *arg)
{
    rt_local_world *w = c->impl;
    int64_t me = c->rank;
    pthread_mutex_lock(&w->mu);
    lchan *ch = w->failed ? NULL : chan_locked(w, peer, me);
    if (!ch) {
        int rc = w->failed ? failed_locked(c)
                           : (rt_comm_setfail(c, SU_NOMEM, "%s: out of memory", what), -1);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    struct timespec dl = deadline_after(w->timeout_ms);
    int why = wait_chan_locked(w, me, ch, true, &dl);
    if (why == 1) {
        failed_locked(c);
    } else if (why == 2) {
        rt_comm_seterr(c, "%s timed out after %d ms: rank %lld sent nothing", what,
                       w->timeout_ms, (long long)peer);
    } else if (ch->bytes != bytes) {
        ch->state = CH_REFUSED;
        ch->want = bytes;
        pthread_cond_broadcast(&w->rk[peer].cv);
        mismatch_err(c, what, peer, ch->bytes, me, bytes);
        why = -1;
    }
    if (why != 0) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    ch->state = CH_CLAIMED;
    const void *src = ch->buf;
    pthread_mutex_unlock(&w->mu);
    int rc = 0;
    if (bytes > 0 && copy) /* the device flavour: the sender always goes free */
        rc = copy(arg, c, buf, src, bytes);
    else if (bytes > 0)
        memcpy(buf, src, (size_t)bytes);
    pthread_mutex_lock(&w->mu);
    ch->state = CH_DONE;
    pthread_cond_broadcast(&w->rk[peer].cv);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* rt_send or rt_recv, the receive's bytes moved by copy (NULL: memcpy). */
static int p2p_with(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes,
                    rt_local_copy copy, void *arg)
{
    char what[96];
    bool send = op == RT_CO_SEND;
    snprintf(what, sizeof what, "%s on rank %lld %s rank %lld", send ? "send" : "recv",
             (long long)c->rank, send ? "to" : "from", (long long)peer);
    return send ? l_send(c, peer, buf, bytes, what)
                : l_recv(c, peer, buf, bytes, what, copy, arg);
}

static int l_p2p(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes)
{
    return p2p_with(c, op, peer, buf, bytes, NULL, NULL);
}

static void l_free(rt_comm *c)
{
    (void)c; /* the comm's memory belongs to the world */
}

static const rt_comm_ops local_ops = {
    l_group_new, l_group_free, l_check, l_run, l_p2p, l_abort, l_free,
};

/* ---- the device flavour (comm_impl.h) ---- */

static int not_local(rt_comm *c, const char *what)
{
    rt_comm_seterr(c, "%s on the device needs the local communicator", what);
    return -1;
}

int rt_local_run_with(rt_group *g, int op, const void *send, void *recv, int64_t count,
                      int dtype, rt_local_work work, void *arg)
{
    rt_comm *c = g->comm;
    if (c->ops != &local_ops)
        return not_local(c, rt_comm_op_name(op));
    if (l_check(c))
        return -1;
    lslot s = {op, dtype, count, send, recv};
    if (g->size == 1) /* no instance: nobody to wait for */
        return work(arg, g, &s);
    return run_between(g, &s, work, arg);
}

int rt_local_p2p_with(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes,
                      rt_local_copy copy, void *arg)
{
    if (c->ops != &local_ops)
        return not_local(c, rt_comm_op_name(op));
    if (peer < 0 || peer >= c->ranks || peer == c->rank || bytes < 0) {
        rt_comm_seterr(c, "%s on rank %lld: bad peer %lld or size %lld", rt_comm_op_name(op),
                       (long long)c->rank, (long long)peer, (long long)bytes);
        return -1;
    }
    return p2p_with(c, op, peer, buf, bytes, copy, arg);
}

/* ---- the world ---- */

/* Every rank's condition, on the monotonic clock; on failure none is
 * left (nor the world's mutex). */
static bool rank_conds_init(rt_local_world *w, int64_t ranks)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) {
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    int64_t r = 0;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0)
        while (r < ranks && pthread_cond_init(&w->rk[r].cv, &attr) == 0)
            r++;
    pthread_condattr_destroy(&attr);
    if (r == ranks)
        return true;
    while (r > 0)
        pthread_cond_destroy(&w->rk[--r].cv);
    pthread_mutex_destroy(&w->mu);
    return false;
}

rt_local_world *rt_local_world_new(const rt_mesh_desc *mesh, int timeout_ms, su_status *err)
{
    int64_t ranks;
    if (!rt_comm_mesh_check(mesh, &ranks, err))
        return NULL;
    if (timeout_ms < 0) {
        su_fail(err, SU_USAGE, "negative timeout %d ms", timeout_ms);
        return NULL;
    }
    rt_local_world *w = calloc(1, sizeof *w);
    if (w) {
        w->comm = calloc((size_t)ranks, sizeof *w->comm);
        w->rk = calloc((size_t)ranks, sizeof *w->rk);
    }
    if (!w || !w->comm || !w->rk || pthread_mutex_init(&w->mu, NULL) != 0 ||
        !rank_conds_init(w, ranks)) {
        if (w) {
            free(w->comm);
            free(w->rk);
        }
        free(w);
        su_fail(err, SU_NOMEM, "out of memory making a local world of %lld ranks",
                (long long)ranks);
        return NULL;
    }
    w->ranks = ranks;
    w->timeout_ms = timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS;
    for (int64_t r = 0; r < ranks; r++)
        rt_comm_init(&w->comm[r], &local_ops, w, mesh, r, ranks);
    return w;
}

rt_comm *rt_local_comm(rt_local_world *w, int64_t rank)
{
    return w && rank >= 0 && rank < w->ranks ? &w->comm[rank] : NULL;
}

void rt_local_world_free(rt_local_world *w)
{
    if (!w)
        return;
    for (int64_t r = 0; r < w->ranks; r++)
        rt_comm_drop_groups(&w->comm[r]);
    while (w->insts) {
        linst *in = w->insts;
        w->insts = in->next;
        inst_free(in);
    }
    for (int64_t r = 0; r < w->ranks; r++) {
        while (w->rk[r].inbox) {
            lchan *ch = w->rk[r].inbox;
            w->rk[r].inbox = ch->next;
            free(ch);
        }
        pthread_cond_destroy(&w->rk[r].cv);
    }
    pthread_mutex_destroy(&w->mu);
    free(w->comm);
    free(w->rk);
    free(w);
}
