/* comm.c: the communicators' dispatch layer (comm.h). It checks arguments,
 * keeps each comm's groups (made once per axes list: MPI's split is
 * collective, so a second request must not split again), computes member
 * indices and colors, does every op of a group of one rank itself (a copy
 * or nothing), and hands the rest to the implementation's rt_comm_ops
 * (comm_local.c, comm_mpi.c). */
#include "runtime/comm/comm_impl.h"
#include "support/support.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- meshes and comms ---- */

bool rt_comm_mesh_check(const rt_mesh_desc *mesh, int64_t *ranks, su_status *err)
{
    if (!mesh) {
        su_fail(err, SU_INPUT, "no mesh given");
        return false;
    }
    if (mesh->naxes < 0 || mesh->naxes > RT_MAX_AXES) {
        su_fail(err, SU_INPUT, "the mesh has %d axes; at most %d are allowed", mesh->naxes,
                RT_MAX_AXES);
        return false;
    }
    int64_t n = 1;
    for (int a = 0; a < mesh->naxes; a++) {
        if (mesh->size[a] < 1) {
            su_fail(err, SU_INPUT, "mesh axis %d (%s) has size %lld; sizes must be >= 1", a,
                    mesh->name[a] ? mesh->name[a] : "unnamed", (long long)mesh->size[a]);
            return false;
        }
        if (mesh->size[a] > INT32_MAX / n) {
            su_fail(err, SU_INPUT, "the mesh has more than %d ranks", INT32_MAX);
            return false;
        }
        n *= mesh->size[a];
    }
    *ranks = n;
    return true;
}

const char *rt_comm_mesh_str(const rt_mesh_desc *mesh, char *buf, size_t size)
{
    if (mesh->naxes == 0) {
        snprintf(buf, size, "(no axes)");
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    for (int a = 0; a < mesh->naxes && k < size; a++) {
        char def[16];
        snprintf(def, sizeof def, "axis%d", a);
        k += (size_t)snprintf(buf + k, size - k, "%s%s=%lld", a ? " x " : "",
                              mesh->name[a] ? mesh->name[a] : def, (long long)mesh->size[a]);
    }
    return buf;
}

void rt_comm_init(rt_comm *c, const rt_comm_ops *ops, void *impl, const rt_mesh_desc *mesh,
                  int64_t rank, int64_t ranks)
{
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->impl = impl;
    c->rank = rank;
    c->ranks = ranks;
    c->naxes = mesh->naxes;
    int64_t r = rank;
    for (int a = mesh->naxes - 1; a >= 0; a--) {
        c->size[a] = mesh->size[a];
        c->coord[a] = r % mesh->size[a];
        r /= mesh->size[a];
        if (mesh->name[a])
            snprintf(c->name[a], RT_COMM_NAMELEN, "%s", mesh->name[a]);
        else
            snprintf(c->name[a], RT_COMM_NAMELEN, "axis%d", a);
    }
}

void rt_comm_seterr(rt_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_kind = SU_PEER;
}

void rt_comm_setfail(rt_comm *c, su_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_kind = kind;
}

const char *rt_comm_op_name(int op)
{
    static const char *const names[RT_CO_N] = {"all_reduce", "reduce_scatter", "all_gather",
                                               "all_to_all", "broadcast",  "barrier",
                                               "send",       "recv",
                                               "all_reduce_max"};
    return op >= 0 && op < RT_CO_N ? names[op] : "?";
}

int64_t rt_comm_rank(const rt_comm *c)
{
    return c ? c->rank : -1;
}

int64_t rt_comm_size(const rt_comm *c)
{
    return c ? c->ranks : -1;
}

const char *rt_comm_error(const rt_comm *c)
{
    return c ? c->err : "no communicator";
}

int rt_comm_status(const rt_comm *c, su_status *err)
{
    /* a failure whose kind was not said is the communicator's usual one */
    su_kind k = !c ? SU_INTERNAL : c->err_kind != SU_OK ? c->err_kind : SU_PEER;
    return su_fail(err, k, "%s", rt_comm_error(c));
}

bool rt_comm_stuck(const rt_comm *c)
{
    return c && c->stuck;
}

void rt_comm_abort(rt_comm *c, const char *why)
{
    if (!c)
        return;
    rt_comm_seterr(c, "rank %lld failed: %s", (long long)c->rank, why ? why : "unknown error");
    char msg[RT_COMM_ERRLEN];
    memcpy(msg, c->err, sizeof msg);
    c->ops->abort(c, msg);
}

void rt_comm_drop_groups(rt_comm *c)
{
    while (c->groups) {
        rt_group *g = c->groups;
        c->groups = g->next;
        if (g->impl)
            c->ops->group_free(g);
        free(g);
    }
}

void rt_comm_free(rt_comm *c)
{
    if (!c)
        return;
    rt_comm_drop_groups(c);
    c->ops->free(c);
}

/* ---- reductions (comm_local.c, comm_mpi.c) ---- */

/* acc (k elements, f32 or u32) += (or = when first) src's k elements; with
 * max, acc = max(acc, src) instead (nan wins, as the CPU backend's amax). */
void rt_comm_acc_add(int dtype, void *acc, const void *src, int64_t k, bool first, bool max)
{
    float *f = acc;
    uint32_t *u = acc;
    const uint16_t *h = src;
    for (int64_t e = 0; e < k; e++) {
        float v = 0;
        uint32_t x = 0;
        switch (dtype) {
        case RT_F32: memcpy(&v, (const char *)src + 4 * e, 4); break;
        case RT_F16: v = su_f16_to_f32(h[e]); break;
        case RT_BF16: v = su_bf16_to_f32(h[e]); break;
        default: memcpy(&x, (const char *)src + 4 * e, 4); break; /* i32 wraps */
        }
        if (dtype == RT_I32)
            u[e] = first ? x : !max ? u[e] + x : (int32_t)x > (int32_t)u[e] ? x : u[e];
        else
            f[e] = first ? v : !max ? f[e] + v : v > f[e] || v != v ? v : f[e];
    }
}

/* acc's k elements in dtype into out (rounded once for f16 and bf16). */
void rt_comm_acc_out(int dtype, const void *acc, void *out, int64_t k)
{
    const float *f = acc;
    uint16_t *h = out;
    if (dtype == RT_F32 || dtype == RT_I32)
        memcpy(out, acc, (size_t)(4 * k));
    else
        for (int64_t e = 0; e < k; e++)
            h[e] = dtype == RT_F16 ? su_f32_to_f16(f[e]) : su_f32_to_bf16(f[e]);
}

/* ---- groups ---- */

int64_t rt_group_size(const rt_group *g)
{
    return g ? g->size : -1;
}

int64_t rt_group_index(const rt_group *g)
{
    return g ? g->index : -1;
}

int64_t rt_group_member_rank(const rt_group *g, int64_t m)
{
    const rt_comm *c = g->comm;
    int64_t coord[RT_MAX_AXES];
    memcpy(coord, c->coord, sizeof coord);
    for (int k = g->naxes - 1; k >= 0; k--) {
        coord[g->axes[k]] = m % c->size[g->axes[k]];
        m /= c->size[g->axes[k]];
    }
    int64_t r = 0;
    for (int a = 0; a < c->naxes; a++)
        r = r * c->size[a] + coord[a];
    return r;
}

/* "axes (dp, tp)", or "no axes", into g->desc. */
static void group_desc(rt_group *g)
{
    if (g->naxes == 0) {
        snprintf(g->desc, sizeof g->desc, "no axes");
        return;
    }
    size_t k = (size_t)snprintf(g->desc, sizeof g->desc, "axes (");
    for (int i = 0; i < g->naxes; i++)
        k += (size_t)snprintf(g->desc + k, sizeof g->desc - k, "%s%s", i ? ", " : "",
                              g->comm->name[g->axes[i]]);
    snprintf(g->desc + k, sizeof g->desc - k, ")");
}

static int check_axes(rt_comm *c, const uint8_t *axes, int naxes)
{
    if (naxes < 0 || naxes > RT_MAX_AXES || (naxes > 0 && !axes)) {
        rt_comm_setfail(c, SU_INTERNAL, "group: %d axes given; 0 to %d allowed",
                        naxes, RT_MAX_AXES);
        return -1;
    }
    for (int i = 0; i < naxes; i++) {
        if (axes[i] >= c->naxes) {
            rt_comm_setfail(c, SU_INTERNAL, "group: axis %d is not an axis of the mesh (it has %d)",
                            axes[i],
                           c->naxes);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i]) {
                rt_comm_setfail(c, SU_INTERNAL, "group: axis %d (%s) is named twice", axes[i],
                               c->name[axes[i]]);
                return -1;
            }
    }
    return 0;
}

static rt_group *find_group(rt_comm *c, const uint8_t *axes, int naxes)
{
    for (rt_group *g = c->groups; g; g = g->next)
        if (g->naxes == naxes && (naxes == 0 || memcmp(g->axes, axes, (size_t)naxes) == 0))
            return g;
    return NULL;
}

int rt_comm_group(rt_comm *c, const uint8_t *axes, int naxes, rt_group **out)
{
    if (!c || !out)
        return -1;
    *out = NULL;
    if (check_axes(c, axes, naxes) || c->ops->check(c))
        return -1;
    if ((*out = find_group(c, axes, naxes)))
        return 0;
    rt_group *g = calloc(1, sizeof *g);
    if (!g) {
        rt_comm_setfail(c, SU_NOMEM, "group: out of memory");
        return -1;
    }
    g->comm = c;
    g->naxes = naxes;
    if (naxes)
        memcpy(g->axes, axes, (size_t)naxes);
    bool in[RT_MAX_AXES] = {false};
    g->size = 1;
    for (int i = 0; i < naxes; i++) {
        in[axes[i]] = true;
        g->size *= c->size[axes[i]];
        g->index = g->index * c->size[axes[i]] + c->coord[axes[i]];
    }
    for (int a = 0; a < c->naxes; a++)
        if (!in[a])
            g->color = g->color * c->size[a] + c->coord[a];
    group_desc(g);
    if (g->size > 1 && c->ops->group_new(c, g)) {
        free(g);
        return -1;
    }
    g->next = c->groups;
    c->groups = g;
    *out = g;
    return 0;
}

/* ---- collectives ---- */

static bool overlap(const void *a, int64_t na, const void *b, int64_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na > 0 && nb > 0 && x < y + (uintptr_t)nb && y < x + (uintptr_t)na;
}

/* Argument checks common to every implementation; -1 with the error set. */
static int check_args(rt_group *g, int op, const void *send, const void *recv, int64_t count,
                      int dtype)
{
    rt_comm *c = g->comm;
    const char *name = rt_comm_op_name(op);
    bool typed = op == RT_CO_ALL_REDUCE || op == RT_CO_ALL_REDUCE_MAX ||
                 op == RT_CO_REDUCE_SCATTER;
    int64_t es = typed ? rt_dtype_size(dtype) : 1;
    if (es == 0) {
        rt_comm_setfail(c, SU_INTERNAL, "%s over %s: unknown dtype %d", name, g->desc, dtype);
        return -1;
    }
    if (count < 0) {
        rt_comm_setfail(c, SU_INTERNAL, "%s over %s: negative %s %lld", name, g->desc,
                       typed ? "count" : "size", (long long)count);
        return -1;
    }
    /* send and recv sizes in bytes */
    int64_t per = g->size * es;
    if (count > INT64_MAX / per) {
        rt_comm_setfail(c, SU_INTERNAL, "%s over %s: %lld %s overflow the address space",
                        name, g->desc,
                       (long long)count, typed ? "elements" : "bytes");
        return -1;
    }
    int64_t sb = count * es, rb = count * es;
    if (op == RT_CO_REDUCE_SCATTER || op == RT_CO_ALL_TO_ALL)
        sb = count * per;
    if (op == RT_CO_ALL_GATHER || op == RT_CO_ALL_TO_ALL)
        rb = count * per;
    if (op != RT_CO_BARRIER && count > 0 && (!send || !recv)) {
        rt_comm_setfail(c, SU_INTERNAL, "%s over %s: null buffer", name, g->desc);
        return -1;
    }
    bool copies = op == RT_CO_REDUCE_SCATTER || op == RT_CO_ALL_GATHER || op == RT_CO_ALL_TO_ALL;
    if (copies && g->size > 1 && overlap(send, sb, recv, rb)) {
        rt_comm_setfail(c, SU_INTERNAL, "%s over %s: the send and receive buffers overlap",
                        name, g->desc);
        return -1;
    }
    return 0;
}

static int run(rt_group *g, int op, const void *send, void *recv, int64_t count, int dtype)
{
    if (!g)
        return -1;
    rt_comm *c = g->comm;
    if (check_args(g, op, send, recv, count, dtype) || c->ops->check(c))
        return -1;
    if (g->size > 1)
        return c->ops->run(g, op, send, recv, count, dtype);
    /* A group of one: the sum of one value is itself, every block its own. */
    int64_t es = op == RT_CO_REDUCE_SCATTER ? rt_dtype_size(dtype) : 1;
    if ((op == RT_CO_REDUCE_SCATTER || op == RT_CO_ALL_GATHER || op == RT_CO_ALL_TO_ALL) &&
        count > 0)
        memmove(recv, send, (size_t)(count * es));
    return 0;
}

int rt_all_reduce(rt_group *g, void *buf, int64_t count, int dtype)
{
    return run(g, RT_CO_ALL_REDUCE, buf, buf, count, dtype);
}

int rt_all_reduce_max(rt_group *g, void *buf, int64_t count, int dtype)
{
    return run(g, RT_CO_ALL_REDUCE_MAX, buf, buf, count, dtype);
}

int rt_reduce_scatter(rt_group *g, const void *send, void *recv, int64_t count, int dtype)
{
    return run(g, RT_CO_REDUCE_SCATTER, send, recv, count, dtype);
}

int rt_all_gather(rt_group *g, const void *send, void *recv, int64_t bytes)
{
    return run(g, RT_CO_ALL_GATHER, send, recv, bytes, -1);
}

int rt_all_to_all(rt_group *g, const void *send, void *recv, int64_t bytes)
{
    return run(g, RT_CO_ALL_TO_ALL, send, recv, bytes, -1);
}

int rt_broadcast(rt_group *g, void *buf, int64_t bytes)
{
    return run(g, RT_CO_BROADCAST, buf, buf, bytes, -1);
}

int rt_barrier(rt_group *g)
{
    return run(g, RT_CO_BARRIER, NULL, NULL, 0, -1);
}

/* ---- point to point ---- */

static int p2p(rt_comm *c, int op, int64_t peer, void *buf, int64_t bytes)
{
    if (!c)
        return -1;
    const char *name = rt_comm_op_name(op), *dir = op == RT_CO_SEND ? "to" : "from";
    if (peer < 0 || peer >= c->ranks) {
        rt_comm_setfail(c, SU_INTERNAL, "%s on rank %lld %s rank %lld: no such rank (the world has %lld)", name,
                       (long long)c->rank, dir, (long long)peer, (long long)c->ranks);
        return -1;
    }
    if (peer == c->rank) {
        rt_comm_setfail(c, SU_INTERNAL, "%s on rank %lld %s itself", name, (long long)c->rank, dir);
        return -1;
    }
    if (bytes < 0 || (bytes > 0 && !buf)) {
        rt_comm_setfail(c, SU_INTERNAL, "%s on rank %lld %s rank %lld: %s",
                        name, (long long)c->rank, dir,
                       (long long)peer, bytes < 0 ? "negative size" : "null buffer");
        return -1;
    }
    if (c->ops->check(c))
        return -1;
    return c->ops->p2p(c, op, peer, buf, bytes);
}

int rt_send(rt_comm *c, int64_t peer, const void *buf, int64_t bytes)
{
    return p2p(c, RT_CO_SEND, peer, (void *)buf, bytes);
}

int rt_recv(rt_comm *c, int64_t peer, void *buf, int64_t bytes)
{
    return p2p(c, RT_CO_RECV, peer, buf, bytes);
}
