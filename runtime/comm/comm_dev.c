/* comm_dev.c: the plan's collectives, sends and receives on device memory
 * for `--comm local` (comm_dev.h): which copies and reductions each
 * member queues, over the `local` communicator's slots and waits. */
#include "runtime/comm/comm_dev.h"

#include "runtime/comm/comm_impl.h"

#include <stdio.h>
#include <string.h>

/* One collective as this member runs it. */
typedef struct dop {
    const rt_dev_ops *d;
    const rt_instr *in;
    rt_dptr src, dst;         /* this member's operand and result */
    su_status err;
} dop;

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

int64_t rt_dcomm_staging_bytes(const rt_program *g)
{
    int64_t n = 0;
    for (int i = 0; i < g->ninstr; i++)
        if (g->instr[i].op == RT_OP_ALL_TO_ALL)
            n = max64(n, rt_type_bytes(&g->instr[i].in_t[0]));
    return n;
}

int64_t rt_dcomm_max_group(const rt_plan *p)
{
    int64_t most = 1;
    for (int st = 0; st < p->nstages; st++)
        for (int i = 0; i < p->stage[st].ninstr; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            if (rt_ops[in->op].cls != RT_K_COMM || in->op == RT_OP_SEND || in->op == RT_OP_RECV)
                continue;
            int64_t n = 1;
            for (int k = 0; k < in->naxes; k++)
                n *= p->axis_size[in->axes[k]];
            most = max64(most, n);
        }
    return most;
}

/* t as rows at dim: *outer rows (the dims before dim) of *run bytes. */
static void rows_at(const rt_type *t, int dim, int64_t *outer, int64_t *run)
{
    *outer = 1;
    for (int d = 0; d < dim; d++)
        *outer *= t->dim[d];
    *run = rt_type_bytes(t) / *outer;
}

static int copy(dop *o, rt_dptr dst, int64_t dpitch, rt_dptr src, int64_t spitch, int64_t width,
                int64_t rows)
{
    if (width <= 0 || rows <= 0)
        return 0;
    return o->d->copy(o->d->ctx, dst, (size_t)dpitch, src, (size_t)spitch, (size_t)width,
                      (size_t)rows, &o->err);
}

static int copy_flat(dop *o, rt_dptr dst, rt_dptr src, int64_t bytes)
{
    return dst == src ? 0 : copy(o, dst, bytes, src, bytes, bytes, 1);
}

/* session_rank.c's pack_split on the device: this member's operand
 * [outer][G*run] into the staging as G blocks [outer][run]. */
static int pack(dop *o, int64_t G)
{
    const rt_type *t = &o->in->in_t[0];
    int64_t outer, row, bytes = rt_type_bytes(t);
    if (o->d->staging_bytes < bytes) { /* rt_dcomm_staging_bytes sizes it */
        su_fail(&o->err, SU_INTERNAL, "all_to_all of %lld bytes: the staging area has %lld",
                (long long)bytes, (long long)o->d->staging_bytes);
        return -1;
    }
    rows_at(t, (int)o->in->dim, &outer, &row);
    int64_t run = row / G;
    for (int64_t j = 0; j < G; j++)
        if (copy(o, o->d->staging + (rt_dptr)(j * outer * run), run, o->src + (rt_dptr)(j * run),
                 row, run, outer) != 0)
            return -1;
    return 0;
}

/* Elements [lo, hi) of every member's result become their reduction, in
 * every member's result. */
static int reduce_all(dop *o, const rt_local_slot *slot, int64_t G, int64_t lo, int64_t hi,
                      bool max)
{
    int dtype = o->in->out_t.dtype;
    int64_t es = rt_dtype_size(dtype);
    rt_dreduce r;
    memset(&r, 0, sizeof r);
    for (int64_t j = 0; j < G; j++)
        r.src[j] = (rt_dptr)(uintptr_t)slot[j].recv + (rt_dptr)(lo * es);
    r.rows = 1;
    r.cols = r.spitch = hi - lo;
    r.n = (int32_t)G;
    r.dtype = dtype;
    r.max = max;
    return hi > lo ? o->d->reduce(o->d->ctx, &r, &o->err) : 0;
}

/* This member's result = the sum of block `me` of every member's operand,
 * read at its pitch: [outer][run] rows G*run apart. */
static int reduce_block(dop *o, const rt_local_slot *slot, int64_t G, int64_t me)
{
    const rt_type *t = &o->in->out_t;
    int64_t es = rt_dtype_size(t->dtype), outer, run;
    rows_at(t, (int)o->in->dim, &outer, &run);
    rt_dreduce r;
    memset(&r, 0, sizeof r);
    for (int64_t j = 0; j < G; j++)
        r.src[j] = (rt_dptr)(uintptr_t)slot[j].send + (rt_dptr)(me * run);
    r.dst = o->dst;
    r.rows = outer;
    r.cols = run / es;
    r.spitch = G * run / es;
    r.n = (int32_t)G;
    r.dtype = t->dtype;
    return outer * run > 0 ? o->d->reduce(o->d->ctx, &r, &o->err) : 0;
}

/* Block `at` of each member j's buffer (blk bytes each) into the result,
 * concatenated along dim in member order: the G blocks of type b as
 * [outer][run] into the result's columns j*run.. (session_rank.c's
 * unpack_concat, straight from the peers). */
static int concat(dop *o, const rt_local_slot *slot, int64_t G, const rt_type *b, int dim,
                  bool staged, int64_t at)
{
    int64_t outer, run, blk = rt_type_bytes(b);
    rows_at(b, dim, &outer, &run);
    for (int64_t j = 0; j < G; j++) {
        rt_dptr from = (rt_dptr)(uintptr_t)slot[j].send + (rt_dptr)(staged ? at * blk : 0);
        if (copy(o, o->dst + (rt_dptr)(j * run), G * run, from, run, run, outer) != 0)
            return -1;
    }
    return 0;
}

/* This member's part of the op, between the waits: queued, then waited
 * for. */
static int work(void *arg, rt_group *g, const rt_local_slot *slot)
{
    dop *o = arg;
    const rt_instr *in = o->in;
    int64_t G = g->size, me = g->index, lo, hi;
    int rc = 0;
    switch (in->op) {
    case RT_OP_ALL_REDUCE:
        rt_local_slice(rt_type_numel(&in->out_t), G, me, &lo, &hi);
        rc = G > 1 ? reduce_all(o, slot, G, lo, hi, in->dim == RT_REDUCE_MAX) : 0;
        break;
    case RT_OP_REDUCE_SCATTER:
        rc = G > 1 ? reduce_block(o, slot, G, me)
                   : copy_flat(o, o->dst, o->src, rt_type_bytes(&in->out_t));
        break;
    case RT_OP_ALL_GATHER:
        rc = concat(o, slot, G, &in->in_t[0], (int)in->dim, false, 0);
        break;
    case RT_OP_ALL_TO_ALL: {
        rt_type b = in->in_t[0];
        b.dim[in->dim] /= G;
        rc = G > 1 ? concat(o, slot, G, &b, (int)in->dim2, true, me)
                   : copy_flat(o, o->dst, o->src, rt_type_bytes(&b));
        break;
    }
    case RT_OP_BROADCAST:
        if (me != 0)
            rc = copy_flat(o, o->dst, (rt_dptr)(uintptr_t)slot[0].recv, rt_type_bytes(&in->out_t));
        break;
    default:
        break;
    }
    if (rc == 0) /* before the second wait: nothing of a peer's is touched after it */
        rc = o->d->sync(o->d->ctx, &o->err);
    if (rc != 0)
        rt_comm_setfail(g->comm, o->err.kind, "%s over %s on the device: %s", rt_ops[in->op].name,
                        g->desc, o->err.msg);
    return rc;
}

/* Before publishing: the operand's last writer done, the result holding
 * the operand for an in-place op, the staging packed for all_to_all. */
static int prepare(dop *o, int64_t G, int64_t me)
{
    const rt_instr *in = o->in;
    int rc = 0;
    if (in->op == RT_OP_ALL_REDUCE || (in->op == RT_OP_BROADCAST && me == 0))
        rc = copy_flat(o, o->dst, o->src, rt_type_bytes(&in->out_t));
    else if (in->op == RT_OP_ALL_TO_ALL && G > 1)
        rc = pack(o, G);
    return rc == 0 ? o->d->sync(o->d->ctx, &o->err) : -1;
}

int rt_dcomm_collective(rt_group *g, const rt_dev_ops *d, const rt_instr *in, rt_dptr src,
                        rt_dptr dst)
{
    dop o = {d, in, src, dst, {SU_OK, ""}};
    int64_t G = g->size, count = rt_type_numel(&in->out_t), bytes = rt_type_bytes(&in->in_t[0]);
    rt_dptr send = src;
    int op;
    switch (in->op) {
    case RT_OP_ALL_REDUCE:
        op = in->dim == RT_REDUCE_MAX ? RT_CO_ALL_REDUCE_MAX : RT_CO_ALL_REDUCE;
        send = dst;
        break;
    case RT_OP_REDUCE_SCATTER: op = RT_CO_REDUCE_SCATTER; break;
    case RT_OP_ALL_GATHER: op = RT_CO_ALL_GATHER, count = bytes; break;
    case RT_OP_ALL_TO_ALL:
        op = RT_CO_ALL_TO_ALL, count = bytes / G;
        send = G > 1 ? d->staging : src;
        break;
    case RT_OP_BROADCAST: op = RT_CO_BROADCAST, count = bytes, send = dst; break;
    default:
        rt_comm_setfail(g->comm, SU_INTERNAL, "%s is not a collective", rt_ops[in->op].name);
        return -1;
    }
    if (G > RT_DCOMM_MAX_MEMBERS) {
        rt_comm_seterr(g->comm, "%s over %s: a group of %lld ranks on the device (at most %d)",
                       rt_ops[in->op].name, g->desc, (long long)G, RT_DCOMM_MAX_MEMBERS);
        return -1;
    }
    if (prepare(&o, G, g->index) != 0) {
        rt_comm_setfail(g->comm, o.err.kind, "%s over %s on the device: %s", rt_ops[in->op].name,
                        g->desc, o.err.msg);
        return -1;
    }
    return rt_local_run_with(g, op, (const void *)(uintptr_t)send, (void *)(uintptr_t)dst, count,
                             in->in_t[0].dtype, work, &o);
}

/* A receive's copy from the sender's operand, waited for (the sender then
 * goes free). */
static int recv_copy(void *arg, rt_comm *c, void *dst, const void *src, int64_t bytes)
{
    const rt_dev_ops *d = arg;
    su_status err = {0};
    rt_dptr to = (rt_dptr)(uintptr_t)dst, from = (rt_dptr)(uintptr_t)src;
    if (d->copy(d->ctx, to, (size_t)bytes, from, (size_t)bytes, (size_t)bytes, 1,
                &err) != 0 ||
        d->sync(d->ctx, &err) != 0) {
        rt_comm_setfail(c, err.kind, "recv on rank %lld on the device: %s", (long long)c->rank,
                        err.msg);
        return -1;
    }
    return 0;
}

int rt_dcomm_p2p(rt_comm *c, const rt_dev_ops *d, const rt_instr *in, int64_t peer, rt_dptr src,
                 rt_dptr dst)
{
    su_status err = {0};
    if (in->op == RT_OP_SEND) {
        if (d->sync(d->ctx, &err) != 0) { /* the operand written, then published */
            rt_comm_setfail(c, err.kind, "send on rank %lld on the device: %s", (long long)c->rank,
                            err.msg);
            return -1;
        }
        return rt_local_p2p_with(c, RT_CO_SEND, peer, (void *)(uintptr_t)src,
                                 rt_type_bytes(&in->in_t[0]), NULL, NULL);
    }
    if (in->op != RT_OP_RECV) {
        rt_comm_setfail(c, SU_INTERNAL, "%s is not a send or recv", rt_ops[in->op].name);
        return -1;
    }
    /* the result's earlier readers are ahead of the copy on the same device queue */
    return rt_local_p2p_with(c, RT_CO_RECV, peer, (void *)(uintptr_t)dst,
                             rt_type_bytes(&in->out_t), recv_copy, (void *)d);
}
