/* session.c: the executor. Each rank walks its stage's instruction list in
 * order: sources fill buffers (from bound host tensors, safetensors files
 * or the seed), compute instructions go to the CPU backend, collectives to
 * the communicator, with the re-layout a dimension other than 0 needs
 * (communicators move flat blocks, member by member, as NCCL does), and
 * send and recv to the communicator's point to point, with the peer of the
 * other stage.
 *
 * Pipeline stages: a rank holds only the I/O entries of its stage (one
 * name may have an entry on several stages: one tensor, so it is listed,
 * gathered and saved once, from its first entry, rt_plan_io_first).
 * Outputs are gathered from the ranks of their stage; under MPI every rank
 * gets every output, so the loss reaches rank 0 wherever it was computed.
 *
 * Params and states live in their buffers across runs: they are loaded at
 * the first run (and after a param is bound again), and in a training step
 * each one's update buffer is copied into its buffer after the run, so the
 * next run starts from the new values. */
#include "runtime/exec/session.h"
#include "support/support.h"

#include "runtime/exec/checkpoint.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comm_cuda_local.h"
#include "runtime/comm/comm_nccl.h"
#include "runtime/cpu/cpu.h"
#include "runtime/exec/cuda.h"
#include "runtime/io/match.h"
#include "runtime/io/tensors.h"
#include "runtime/exec/trace.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024

typedef struct axes_key {
    uint8_t n;
    uint8_t axes[RT_MAX_AXES];
} axes_key;

typedef struct binding {
    char *name;
    const void *data;
    size_t bytes;
} binding;

typedef struct rank_state {
    rt_session *s;
    int64_t rank;
    int64_t coord[RT_MAX_AXES];
    const rt_program *prog;
    rt_comm *comm;
    rt_group **groups;        /* per s->keys entry */
    uint8_t *arena;           /* prog's arena_bytes, allocated once */
    void **buf;               /* per buffer of prog: its place in the arena */
    bool params_loaded;
    rt_trace tr;              /* --trace: the instructions run, timed */
    rt_cuda_rank *cuda;       /* the cuda backend's device state */
    int failed;
    su_status err;
} rank_state;

struct rt_session {
    const rt_plan *p;
    rt_session_opts o;
    rt_st_file *params, *inputs;
    rt_local_world *world;
    rt_nccl *nccl;            /* --comm nccl: the device's communicators */
    rt_cuda_local *dlocal;    /* cuda with --comm local: collectives device to device */
    int64_t nranks;           /* in the mesh */
    int64_t nhere;            /* run by this process */
    rank_state *ranks;
    int nkeys;
    axes_key *keys;           /* the groups every rank makes, in this order */
    int nbind;
    binding *bind;
    bool params_dirty;
    bool failed;              /* a run failed: only rt_session_free is left */
    int64_t steps;            /* successful runs */
    rt_ckpt *ckpt;            /* rt_session_resume's: the params and states */
    char *resumed;            /* its step folder (malloc'd) */
    char resume_note[ERRLEN]; /* why not the one the pointer names, or "" */
    int64_t step_base;        /* the step count is step_base + steps */
    void **out;               /* per io entry: gathered output (outputs only) */
    int32_t *first;           /* per io entry: rt_plan_io_first */
    char *generated;
    pthread_mutex_t mu;       /* first_err */
    su_status first_err;
    bool has_err;
    double trace_origin;      /* rt_trace_now() when the timeline starts */
    bool origin_set;
};


/* ---- layout helpers ---- */

/* The start of this rank's block of a tensor of local type t sharded by sh. */
static void block_start(const rt_plan *p, const int64_t *coord, const rt_sharding *sh,
                        const rt_type *local, int64_t *start)
{
    for (int d = 0; d < local->rank; d++) {
        int64_t b = 0;
        for (int k = 0; k < sh->naxes[d]; k++) {
            int a = sh->axes[d][k];
            b = b * p->axis_size[a] + coord[a];
        }
        start[d] = b * local->dim[d];
    }
}

/* Copies the block [start, start + count) of a row-major tensor of shape
 * full (esize-byte elements) from src (the full tensor) to dst (the block,
 * packed), or the other way round when to_full. */
static void copy_block(const rt_type *full, const int64_t *start, const int64_t *count,
                       int esize, const uint8_t *full_data, uint8_t *block, bool to_full)
{
    int r = full->rank;
    if (r == 0) {
        if (to_full)
            memcpy((uint8_t *)full_data, block, (size_t)esize);
        else
            memcpy(block, full_data, (size_t)esize);
        return;
    }
    /* the innermost run: the last dims the block spans whole merge into it */
    int64_t run = count[r - 1] * esize;
    int inner = r - 1;
    while (inner > 0 && count[inner] == full->dim[inner] && start[inner] == 0) {
        inner--;
        run *= count[inner];
    }
    /* strides of the full tensor, in bytes */
    int64_t stride[RT_MAX_RANK];
    stride[r - 1] = esize;
    for (int d = r - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * full->dim[d + 1];
    int64_t idx[RT_MAX_RANK] = {0};
    int64_t nruns = 1;
    for (int d = 0; d < inner; d++)
        nruns *= count[d];
    uint8_t *out = block;
    for (int64_t k = 0; k < nruns; k++) {
        int64_t off = 0;
        for (int d = 0; d < r; d++)
            off += (start[d] + (d < inner ? idx[d] : 0)) * stride[d];
        if (to_full)
            memcpy((uint8_t *)full_data + off, out, (size_t)run);
        else
            memcpy(out, full_data + off, (size_t)run);
        out += run;
        for (int d = inner - 1; d >= 0; d--) {
            if (++idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Split along dim into G member blocks: src [outer][G*n*inner] to
 * dst [G][outer][n*inner]. */
static void pack_split(const rt_type *t, int dim, int64_t G, const uint8_t *src, uint8_t *dst)
{
    int64_t outer = 1, inner = rt_dtype_size(t->dtype);
    for (int d = 0; d < dim; d++)
        outer *= t->dim[d];
    for (int d = dim + 1; d < t->rank; d++)
        inner *= t->dim[d];
    int64_t n = t->dim[dim] / G, run = n * inner;
    for (int64_t g = 0; g < G; g++)
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (g * outer + o) * run, src + (o * G + g) * run, (size_t)run);
}

/* The inverse: G blocks of type b (each [outer][n*inner]) concatenated
 * along dim into dst [outer][G*n*inner]. */
static void unpack_concat(const rt_type *b, int dim, int64_t G, const uint8_t *src, uint8_t *dst)
{
    int64_t outer = 1, inner = rt_dtype_size(b->dtype);
    for (int d = 0; d < dim; d++)
        outer *= b->dim[d];
    for (int d = dim + 1; d < b->rank; d++)
        inner *= b->dim[d];
    int64_t run = b->dim[dim] * inner;
    for (int64_t g = 0; g < G; g++)
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (o * G + g) * run, src + (g * outer + o) * run, (size_t)run);
}

static int64_t outer_of(const rt_type *t, int dim)
{
    int64_t outer = 1;
    for (int d = 0; d < dim; d++)
        outer *= t->dim[d];
    return outer;
}

/* ---- sources ---- */

static const binding *find_binding(const rt_session *s, const char *name)
{
    for (int i = 0; i < s->nbind; i++)
        if (strcmp(s->bind[i].name, name) == 0)
            return &s->bind[i];
    return NULL;
}

static void fill_const(const rt_type *t, double v, void *dst)
{
    int64_t n = rt_type_numel(t);
    switch (t->dtype) {
    case RT_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)dst)[i] = (float)v;
        break;
    case RT_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = su_f32_to_f16((float)v);
        break;
    case RT_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = su_f32_to_bf16((float)v);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = (int32_t)v;
        break;
    }
}

/* The param called name (the plan's validator saw that there is one). */
static const rt_io *find_param(const rt_plan *p, const char *name)
{
    for (int32_t i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_PARAM && !strcmp(p->io[i].name, name))
            return &p->io[i];
    return NULL;
}

/* A state made from a param (an f32 master copy of a bf16 param): the box
 * [start, start + count) of the param's tensor, which may not be the box the
 * rank holds of the param itself (ZeRO shards the master, not the param),
 * read as the param is (its bound tensor, the params file, or its init from
 * the seed, rounded to its dtype), then converted to the state's dtype. */
static int load_from_param(rank_state *rs, const rt_io *io, const int64_t *start,
                           const int64_t *count, void *dst)
{
    rt_session *s = rs->s;
    const rt_io *src = find_param(s->p, io->init_param);
    int64_t n = 1;
    for (int d = 0; d < io->type.rank; d++)
        n *= count[d];
    int esize = rt_dtype_size(src->type.dtype);
    void *tmp = malloc((size_t)(n > 0 ? n : 1) * (size_t)esize);
    if (!tmp)
        return su_fail(&rs->err, SU_NOMEM, "out of memory making '%s' from param '%s'",
                    io->name, src->name);
    int rc = 0;
    const binding *b = find_binding(s, src->name);
    if (b)
        copy_block(&src->type, start, count, esize, b->data, tmp, false);
    else if (s->params && rt_st_find(s->params, src->name))
        rc = rt_st_read_block(s->params, src->name, &src->type, start, count, tmp, &rs->err);
    else
        rt_init_block(src->init, src->init_a, src->init_b, s->o.seed, src->name, &src->type,
                      start, count, tmp);
    if (rc == 0)
        rt_convert_floats(src->type.dtype, tmp, io->type.dtype, dst, n);
    free(tmp);
    return rc;
}

static int load_source(rank_state *rs, const rt_instr *in, void *dst)
{
    rt_session *s = rs->s;
    const rt_io *io = &s->p->io[in->io];
    int64_t start[RT_MAX_RANK], count[RT_MAX_RANK];
    block_start(s->p, rs->coord, &io->sh, &in->out_t, start);
    for (int d = 0; d < in->out_t.rank; d++)
        count[d] = in->out_t.dim[d];
    const binding *b = find_binding(s, io->name);
    if (b) {
        copy_block(&io->type, start, count, rt_dtype_size(io->type.dtype), b->data, dst, false);
        return 0;
    }
    /* the master of a bound param copies the binding, as the param does,
     * over a master in the checkpoint or the params file */
    if (io->init == RT_INIT_PARAM && find_binding(s, io->init_param))
        return load_from_param(rs, io, start, count, dst);
    if (s->ckpt && io->kind != RT_IO_INPUT)
        return rt_ckpt_read(s->ckpt, in->io, start, count, dst, &rs->err);
    rt_st_file *f = io->kind == RT_IO_INPUT ? s->inputs : s->params;
    if (f && io->kind == RT_IO_INPUT)
        return rt_input_read(f, io, s->step_base + s->steps, start, count, dst, &rs->err);
    if (f && rt_st_find(f, io->name))
        return rt_st_read_block(f, io->name, &io->type, start, count, dst, &rs->err);
    if (io->init == RT_INIT_PARAM)
        return load_from_param(rs, io, start, count, dst);
    rt_init_block(io->init, io->init_a, io->init_b, s->o.seed, io->name, &io->type, start, count,
                  dst);
    return 0;
}

/* ---- collectives ---- */

/* Frees p, a buffer rs's comm was given, unless the comm is stuck: an op
 * that timed out under MPI may still read or write it, so it is kept for
 * the life of the process (rt_comm_stuck). */
static void comm_free(const rank_state *rs, void *p)
{
    if (!rt_comm_stuck(rs->comm))
        free(p);
}

static int group_of(rank_state *rs, const rt_instr *in, rt_group **g)
{
    const rt_session *s = rs->s;
    for (int k = 0; k < s->nkeys; k++)
        if (s->keys[k].n == in->naxes && memcmp(s->keys[k].axes, in->axes, in->naxes) == 0) {
            *g = rs->groups[k];
            return 0;
        }
    return su_fail(&rs->err, SU_INTERNAL, "no group for the collective's axes");
}

/* The rank of stage `stage` that this rank's send or recv pairs with: its
 * coordinates but on the pipeline axis, where it is `stage`. */
static int64_t stage_peer(const rt_plan *p, const int64_t *coord, int64_t stage)
{
    int64_t r = 0;
    for (int a = 0; a < p->naxes; a++)
        r = r * p->axis_size[a] + (a == p->stage_axis ? stage : coord[a]);
    return r;
}

static int run_p2p(rank_state *rs, const rt_instr *in, void *const *bufs)
{
    int64_t peer = stage_peer(rs->s->p, rs->coord, in->dim);
    int rc = in->op == RT_OP_SEND
                 ? rt_send(rs->comm, peer, bufs[in->in[0]], rt_type_bytes(&in->in_t[0]))
                 : rt_recv(rs->comm, peer, bufs[in->out], rt_type_bytes(&in->out_t));
    if (rc != 0)
        rt_comm_status(rs->comm, &rs->err);
    return rc;
}

static int run_comm(rank_state *rs, const rt_instr *in, void *const *bufs)
{
    if (in->op == RT_OP_SEND || in->op == RT_OP_RECV)
        return run_p2p(rs, in, bufs);
    rt_group *g = NULL;
    if (group_of(rs, in, &g) != 0)
        return -1;
    int64_t G = rt_group_size(g);
    const uint8_t *src = bufs[in->in[0]];
    uint8_t *dst = bufs[in->out];
    int64_t in_bytes = rt_type_bytes(&in->in_t[0]), out_bytes = rt_type_bytes(&in->out_t);
    int dtype = in->in_t[0].dtype;
    uint8_t *tmp = NULL, *tmp2 = NULL;
    int rc = 0;
    switch (in->op) {
    case RT_OP_ALL_REDUCE:
        if (dst != src) /* the memory plan may reduce in place */
            memcpy(dst, src, (size_t)in_bytes);
        if (in->dim == RT_REDUCE_MAX)
            rc = rt_all_reduce_max(g, dst, rt_type_numel(&in->out_t), dtype);
        else
            rc = rt_all_reduce(g, dst, rt_type_numel(&in->out_t), dtype);
        break;
    case RT_OP_BROADCAST:
        memcpy(dst, src, (size_t)in_bytes);
        rc = rt_broadcast(g, dst, out_bytes);
        break;
    case RT_OP_ALL_GATHER:
        if (outer_of(&in->in_t[0], (int)in->dim) == 1) {
            rc = rt_all_gather(g, src, dst, in_bytes);
            break;
        }
        tmp = malloc((size_t)out_bytes);
        if (!tmp)
            return su_fail(&rs->err, SU_NOMEM, "out of memory in all_gather");
        rc = rt_all_gather(g, src, tmp, in_bytes);
        if (rc == 0)
            unpack_concat(&in->in_t[0], (int)in->dim, G, tmp, dst);
        break;
    case RT_OP_REDUCE_SCATTER:
        if (outer_of(&in->in_t[0], (int)in->dim) == 1) {
            rc = rt_reduce_scatter(g, src, dst, rt_type_numel(&in->out_t), dtype);
            break;
        }
        tmp = malloc((size_t)in_bytes);
        if (!tmp)
            return su_fail(&rs->err, SU_NOMEM, "out of memory in reduce_scatter");
        pack_split(&in->in_t[0], (int)in->dim, G, src, tmp);
        rc = rt_reduce_scatter(g, tmp, dst, rt_type_numel(&in->out_t), dtype);
        break;
    case RT_OP_ALL_TO_ALL: {
        tmp = malloc((size_t)in_bytes);
        tmp2 = malloc((size_t)in_bytes);
        if (!tmp || !tmp2) {
            free(tmp);
            free(tmp2);
            return su_fail(&rs->err, SU_NOMEM, "out of memory in all_to_all");
        }
        pack_split(&in->in_t[0], (int)in->dim, G, src, tmp);
        rc = rt_all_to_all(g, tmp, tmp2, in_bytes / G);
        if (rc == 0) {
            rt_type blk = in->in_t[0];
            blk.dim[in->dim] /= G;
            unpack_concat(&blk, (int)in->dim2, G, tmp2, dst);
        }
        break;
    }
    default:
        return su_fail(&rs->err, SU_INTERNAL, "%s is not a collective", rt_ops[in->op].name);
    }
    comm_free(rs, tmp);
    comm_free(rs, tmp2);
    if (rc != 0)
        rt_comm_status(rs->comm, &rs->err);
    return rc;
}

/* ---- one rank ---- */

static int rank_setup(rank_state *rs)
{
    rt_session *s = rs->s;
    const rt_program *prog = rs->prog;
    if (!rs->buf) {
        rs->buf = calloc((size_t)prog->nbuf + 1, sizeof *rs->buf);
        if (!rs->buf)
            return su_fail(&rs->err, SU_NOMEM, "out of memory");
        /* RT_ALIGN-aligned, as the offsets are */
        size_t n = ((size_t)prog->arena_bytes + RT_ALIGN) / RT_ALIGN * RT_ALIGN;
        rs->arena = aligned_alloc(RT_ALIGN, n);
        if (!rs->arena)
            return su_fail(&rs->err, SU_NOMEM, "out of memory for the arena (%lld bytes)",
                        (long long)prog->arena_bytes);
        memset(rs->arena, 0, n);
        for (int i = 0; i < prog->nbuf; i++)
            rs->buf[i] = rs->arena + prog->buf_offset[i];
    }
    if (!rs->groups) {
        rs->groups = calloc((size_t)s->nkeys + 1, sizeof *rs->groups);
        if (!rs->groups)
            return su_fail(&rs->err, SU_NOMEM, "out of memory");
        for (int k = 0; k < s->nkeys; k++) {
            if (rt_comm_group(rs->comm, s->keys[k].axes, s->keys[k].n, &rs->groups[k]) != 0)
                return rt_comm_status(rs->comm, &rs->err);
            if (s->nccl && rt_nccl_group(s->nccl, rs->groups[k], &rs->err) != 0)
                return -1;
        }
    }
    return 0;
}

/* The timeline's origin: now, at the first traced run; under MPI after a
 * barrier of every rank, so the processes' clocks start together. */
static int trace_origin(rank_state *rs)
{
    rt_session *s = rs->s;
    if (s->origin_set)
        return 0;
    if (s->o.comm != RT_COMM_LOCAL && rt_barrier(rs->groups[s->nkeys - 1]) != 0)
        return rt_comm_status(rs->comm, &rs->err);
    s->trace_origin = rt_trace_now();
    s->origin_set = true;
    return 0;
}

/* ---- the cuda backend's hook (runtime/exec/cuda.h): its own loop, over the
 * sources and collectives here, on the host copy of the arena ---- */

static int cuda_source(void *rank, const rt_instr *in, void *dst)
{
    if (in->op == RT_OP_CONST) {
        fill_const(&in->out_t, in->value, dst);
        return 0;
    }
    return load_source(rank, in, dst);
}

static int cuda_comm(void *rank, const rt_instr *in, void *const *buf)
{
    return run_comm(rank, in, buf);
}

/* With --comm local on one GPU: collective, send or recv `in` on the
 * device (comm_dev.h), with the group or the peer rank found here. */
static int cuda_comm_dev(void *rank, const rt_instr *in, const rt_dev_ops *d, uint64_t src,
                         uint64_t dst)
{
    rank_state *rs = rank;
    rt_group *g = NULL;
    int rc;
    if (in->op == RT_OP_SEND || in->op == RT_OP_RECV)
        rc = rt_dcomm_p2p(rs->comm, d, in, stage_peer(rs->s->p, rs->coord, in->dim), src, dst);
    else if (group_of(rs, in, &g) != 0)
        return -1;
    else
        rc = rt_dcomm_collective(g, d, in, src, dst);
    if (rc != 0)
        rt_comm_status(rs->comm, &rs->err);
    return rc;
}

static int rank_run_cuda(rank_state *rs)
{
    rt_session *s = rs->s;
    if (s->o.trace && trace_origin(rs) != 0)
        return -1;
    rt_cuda_host h = {.rank = rs, .buf = rs->buf, .source = cuda_source, .comm = cuda_comm,
                      .load_params = !rs->params_loaded || s->params_dirty, .err = &rs->err,
                      .nccl = s->nccl, .graph = s->o.graph,
                      .trace = s->o.trace ? &rs->tr : NULL, .step = (int32_t)s->steps,
                      .origin = s->trace_origin};
    h.local = s->dlocal;
    h.comm_dev = cuda_comm_dev;
    int stage = (int)(rs->prog - s->p->stage);
    if (rt_cuda_run(&rs->cuda, s->p, stage, rs->rank, &h) != 0)
        return -1;
    rs->params_loaded = true;
    return 0;
}

static int rank_run(rank_state *rs)
{
    rt_session *s = rs->s;
    if (rank_setup(rs) != 0)
        return -1;
    if (s->o.backend == RT_BACKEND_CUDA)
        return rank_run_cuda(rs);
    rt_cpu_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    memcpy(ctx.coord, rs->coord, sizeof ctx.coord);
    ctx.axis_size = s->p->axis_size;
    ctx.naxes = s->p->naxes;
    const rt_program *prog = rs->prog;
    bool load_params = !rs->params_loaded || s->params_dirty;
    if (s->o.trace && trace_origin(rs) != 0)
        return -1;
    for (int i = 0; i < prog->ninstr; i++) {
        const rt_instr *in = &prog->instr[i];
        int rc = 0;
        double t0 = s->o.trace ? rt_trace_now() : 0;
        switch (rt_ops[in->op].cls) {
        case RT_K_SOURCE:
            if (in->op == RT_OP_CONST)
                fill_const(&in->out_t, in->value, rs->buf[in->out]);
            else if (in->op == RT_OP_INPUT || load_params)
                rc = load_source(rs, in, rs->buf[in->out]);
            break;
        case RT_K_COMPUTE:
            rc = rt_cpu_run(&ctx, in, rs->buf, &rs->err);
            break;
        case RT_K_COMM:
            rc = run_comm(rs, in, rs->buf);
            break;
        }
        if (rc != 0) {
            char where[256];
            rt_instr_where(s->p, in, where, sizeof where);
            if (in->op == RT_OP_SEND || in->op == RT_OP_RECV)
                return su_prefix(&rs->err, "%sinstruction %d (%s %s stage %lld): ", where, i,
                                 rt_ops[in->op].name, in->op == RT_OP_SEND ? "to" : "from",
                                 (long long)in->dim);
            return su_prefix(&rs->err, "%sinstruction %d (%s): ", where, i, rt_ops[in->op].name);
        }
        bool idle = rt_ops[in->op].cls == RT_K_SOURCE && in->op != RT_OP_INPUT && !load_params;
        if (s->o.trace && !idle)
            rt_trace_add(&rs->tr, i, (int32_t)s->steps, t0 - s->trace_origin,
                         rt_trace_now() - s->trace_origin);
    }
    rs->params_loaded = true;
    return 0;
}

static void rank_failed(rank_state *rs)
{
    rt_session *s = rs->s;
    rs->failed = 1;
    pthread_mutex_lock(&s->mu);
    if (!s->has_err) {
        s->has_err = true;
        su_status_copy(&s->first_err, &rs->err);
        su_prefix(&s->first_err, "rank %lld: ", (long long)rs->rank);
        if (s->o.comm == RT_COMM_LOCAL)
            rt_comm_abort(rs->comm, rs->err.msg);
    }
    pthread_mutex_unlock(&s->mu);
}

static void *rank_thread(void *arg)
{
    rank_state *rs = arg;
    if (rank_run(rs) != 0)
        rank_failed(rs);
    return NULL;
}

/* ---- outputs ---- */

/* The shard of an I/O entry one rank holds: each dim divided by the sizes
 * of the axes splitting it. */
static rt_type local_type(const rt_plan *p, const rt_io *io)
{
    rt_type local = io->type;
    for (int d = 0; d < local.rank; d++)
        for (int k = 0; k < io->sh.naxes[d]; k++)
            local.dim[d] /= p->axis_size[io->sh.axes[d][k]];
    return local;
}

static int gather_outputs_local(rt_session *s)
{
    const rt_plan *p = s->p;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->kind != RT_IO_OUTPUT)
            continue;
        int esize = rt_dtype_size(io->type.dtype);
        rt_type local = local_type(p, io);
        for (int64_t r = 0; r < s->nhere; r++) {
            rank_state *rs = &s->ranks[r];
            if (rs->prog != &p->stage[io->stage])
                continue;
            int64_t start[RT_MAX_RANK];
            block_start(p, rs->coord, &io->sh, &local, start);
            copy_block(&io->type, start, local.dim, esize, s->out[i], rs->buf[io->buffer], true);
        }
    }
    return 0;
}

/* The ranks whose blocks make up entry io: those of its stage. */
static bool holds(const rt_plan *p, const int64_t *coord, const rt_io *io)
{
    return p->stage_axis < 0 || coord[p->stage_axis] == io->stage;
}

/* Under MPI, collective: entry io's full tensor into full on every rank,
 * from every rank's block over the group of all axes (member index ==
 * rank; a rank of another stage sends zeros), placed by the ranks of its
 * stage. */
static int gather_mpi(rt_session *s, const rt_io *io, uint8_t *full, su_status *err)
{
    const rt_plan *p = s->p;
    rank_state *rs = &s->ranks[0];
    rt_type local = local_type(p, io);
    int64_t lb = rt_type_bytes(&local);
    uint8_t *mine = calloc(1, (size_t)lb), *all = malloc((size_t)(lb * s->nranks));
    if (!mine || !all) {
        free(mine);
        free(all);
        return su_fail(err, SU_NOMEM, "out of memory gathering '%s'", io->name);
    }
    if (holds(p, rs->coord, io))
        memcpy(mine, rs->buf[io->buffer], (size_t)lb);
    int rc = rt_all_gather(rs->groups[s->nkeys - 1], mine, all, lb);
    if (rc != 0)
        su_fail(err, SU_PEER, "gathering '%s': %s", io->name, rt_comm_error(rs->comm));
    for (int64_t r = 0; rc == 0 && r < s->nranks; r++) {
        int64_t coord[RT_MAX_AXES], start[RT_MAX_RANK];
        rt_plan_coords(p, r, coord);
        if (!holds(p, coord, io))
            continue;
        block_start(p, coord, &io->sh, &local, start);
        copy_block(&io->type, start, local.dim, rt_dtype_size(io->type.dtype), full,
                   all + r * lb, true);
    }
    comm_free(rs, mine);
    comm_free(rs, all);
    return rc == 0 ? 0 : -1;
}

/* Under MPI: every rank gets every output, gathered from the ranks of its
 * stage (gather_mpi). */
static int gather_outputs_mpi(rt_session *s, rank_state *rs)
{
    const rt_plan *p = s->p;
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_OUTPUT &&
            gather_mpi(s, &p->io[i], s->out[i], &rs->err) != 0)
            return -1;
    return 0;
}

/* ---- training: updates, saving params ---- */

static bool is_kept(const rt_io *io)
{
    return io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
}

/* After a run: every param's and state's new value (its update buffer)
 * becomes its value (its buffer), on each rank of its stage. */
static void apply_updates(rt_session *s)
{
    const rt_plan *p = s->p;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!is_kept(io) || io->update < 0 || io->update == io->buffer)
            continue;
        rt_type local = local_type(p, io);
        for (int64_t r = 0; r < s->nhere; r++) {
            rank_state *rs = &s->ranks[r];
            if (rs->prog == &p->stage[io->stage])
                memcpy(rs->buf[io->buffer], rs->buf[io->update], (size_t)rt_type_bytes(&local));
        }
    }
}

/* Places every local rank's block of io into full. */
static void gather_kept_local(rt_session *s, const rt_io *io, uint8_t *full)
{
    rt_type local = local_type(s->p, io);
    for (int64_t r = 0; r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        int64_t start[RT_MAX_RANK];
        if (!holds(s->p, rs->coord, io))
            continue;
        block_start(s->p, rs->coord, &io->sh, &local, start);
        copy_block(&io->type, start, local.dim, rt_dtype_size(io->type.dtype), full,
                   rs->buf[io->buffer], true);
    }
}

/* The full tensors of every param and state, in I/O table order, each
 * name once: names, types and data (malloc'd, freed by free_kept). */
typedef struct kept {
    int n;
    const char **names;
    rt_type *types;
    void **data;
} kept;

static void free_kept(kept *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->data[i]);
    free(k->names);
    free(k->types);
    free(k->data);
}

static int gather_kept(rt_session *s, kept *k, su_status *err)
{
    const rt_plan *p = s->p;
    memset(k, 0, sizeof *k);
    k->names = calloc((size_t)p->nio + 1, sizeof *k->names);
    k->types = calloc((size_t)p->nio + 1, sizeof *k->types);
    k->data = calloc((size_t)p->nio + 1, sizeof *k->data);
    if (!k->names || !k->types || !k->data)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!is_kept(io) || s->first[i] != i)
            continue;
        uint8_t *full = calloc(1, (size_t)rt_type_bytes(&io->type) + 1);
        if (!full)
            return su_fail(err, SU_NOMEM, "out of memory gathering '%s'", io->name);
        k->names[k->n] = io->name;
        k->types[k->n] = io->type;
        k->data[k->n++] = full;
        if (s->o.comm == RT_COMM_LOCAL)
            gather_kept_local(s, io, full);
        else if (gather_mpi(s, io, full, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- the session ---- */

static void add_key(rt_session *s, const uint8_t *axes, int n)
{
    for (int k = 0; k < s->nkeys; k++)
        if (s->keys[k].n == n && memcmp(s->keys[k].axes, axes, (size_t)n) == 0)
            return;
    axes_key *key = &s->keys[s->nkeys++];
    memset(key, 0, sizeof *key);
    key->n = (uint8_t)n;
    memcpy(key->axes, axes, (size_t)n);
}

int rt_session_graph_check(const rt_session_opts *o, su_status *err)
{
    if (o->backend != RT_BACKEND_CUDA)
        return su_fail(err, SU_USAGE, "CUDA graphs need the cuda backend");
    if (o->comm == RT_COMM_NCCL)
        return su_fail(err, SU_USAGE, "CUDA graphs are not supported with the nccl communicator yet "
                    "(its collectives run on a stream of their own, outside the capture)");
    return 0;
}

rt_session *rt_session_new(const rt_plan *p, const rt_session_opts *o, su_status *err)
{
    if (o->comm == RT_COMM_NCCL && o->backend != RT_BACKEND_CUDA) {
        su_fail(err, SU_USAGE, "the nccl communicator needs the cuda backend");
        return NULL;
    }
    if (o->graph && rt_session_graph_check(o, err) != 0)
        return NULL;
    if (o->backend == RT_BACKEND_CUDA && rt_cuda_check(p, err) != 0)
        return NULL;
    rt_session *s = calloc(1, sizeof *s);
    if (!s) {
        su_fail(err, SU_NOMEM, "out of memory");
        return NULL;
    }
    s->p = p;
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    s->nranks = rt_plan_ranks(p);
    s->params_dirty = false;
    /* the groups: every distinct axes list of every stage's collectives, in
     * order of appearance, then the group of all axes (outputs) */
    int maxkeys = 1;
    for (int st = 0; st < p->nstages; st++)
        maxkeys += p->stage[st].ninstr;
    s->keys = calloc((size_t)maxkeys, sizeof *s->keys);
    s->out = calloc((size_t)p->nio + 1, sizeof *s->out);
    s->first = calloc((size_t)p->nio + 1, sizeof *s->first);
    if (!s->keys || !s->out || !s->first || !rt_plan_io_first(p, s->first)) {
        su_fail(err, SU_NOMEM, "out of memory");
        goto bad;
    }
    for (int st = 0; st < p->nstages; st++)
        for (int i = 0; i < p->stage[st].ninstr; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            if (rt_ops[in->op].cls == RT_K_COMM && in->op != RT_OP_SEND && in->op != RT_OP_RECV)
                add_key(s, in->axes, in->naxes);
        }
    uint8_t all[RT_MAX_AXES];
    for (int a = 0; a < p->naxes; a++)
        all[a] = (uint8_t)a;
    /* the all-axes group goes last, even if a collective made it already */
    axes_key allkey;
    memset(&allkey, 0, sizeof allkey);
    allkey.n = (uint8_t)p->naxes;
    memcpy(allkey.axes, all, (size_t)p->naxes);
    s->keys[s->nkeys++] = allkey;
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_OUTPUT) {
            s->out[i] = calloc(1, (size_t)rt_type_bytes(&p->io[i].type) + 1);
            if (!s->out[i]) {
                su_fail(err, SU_NOMEM, "out of memory for output '%s'", p->io[i].name);
                goto bad;
            }
        }
    if (o->params_path && rt_st_open(o->params_path, &s->params, err) != 0)
        goto bad;
    if (o->inputs_path && rt_st_open(o->inputs_path, &s->inputs, err) != 0)
        goto bad;
    if (rt_match_files(p, s->first, s->params, s->inputs, err) != 0)
        goto bad;
    rt_mesh_desc mesh;
    memset(&mesh, 0, sizeof mesh);
    mesh.naxes = p->naxes;
    for (int a = 0; a < p->naxes; a++) {
        mesh.size[a] = p->axis_size[a];
        mesh.name[a] = p->axis_name[a];
    }
    if (o->comm == RT_COMM_LOCAL) {
        s->world = rt_local_world_new(&mesh, o->timeout_ms, err);
        if (!s->world)
            goto bad;
        if (o->backend == RT_BACKEND_CUDA && !(s->dlocal = rt_cuda_local_new(p))) {
            su_fail(err, SU_NOMEM, "out of memory");
            goto bad;
        }
        s->nhere = s->nranks;
    } else {
#ifdef SHARDC_HAVE_MPI
        s->nhere = 1;
#else
        su_fail(err, SU_USAGE, "this build of shardc has no MPI: use the local communicator");
        goto bad;
#endif
    }
    s->ranks = calloc((size_t)s->nhere, sizeof *s->ranks);
    if (!s->ranks) {
        su_fail(err, SU_NOMEM, "out of memory");
        goto bad;
    }
    for (int64_t r = 0; r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        rs->s = s;
        if (o->comm == RT_COMM_LOCAL) {
            rs->comm = rt_local_comm(s->world, r);
        } else {
#ifdef SHARDC_HAVE_MPI
            rs->comm = rt_mpi_comm_new(&mesh, o->timeout_ms, err);
#endif
        }
        if (!rs->comm) {
            if (o->comm == RT_COMM_LOCAL)
                su_fail(err, SU_INTERNAL, "cannot make the communicator of rank %lld",
                        (long long)r);
            goto bad;
        }
        rs->rank = rt_comm_rank(rs->comm);
        rt_plan_coords(p, rs->rank, rs->coord);
        int stage = p->stage_axis >= 0 ? (int)rs->coord[p->stage_axis] : 0;
        rs->prog = &p->stage[stage];
    }
    if (o->comm == RT_COMM_NCCL && !(s->nccl = rt_nccl_new(p, &mesh, o->timeout_ms, err)))
        goto bad;
    return s;
bad:
    rt_session_free(s);
    return NULL;
}

void rt_session_free(rt_session *s)
{
    if (!s)
        return;
    for (int64_t r = 0; s->ranks && r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        rt_trace_free(&rs->tr);
        rt_cuda_rank_free(rs->cuda);
        comm_free(rs, rs->arena);
        free(rs->buf);
        free(rs->groups);
        if (rs->comm)
            rt_comm_free(rs->comm);
    }
    rt_nccl_free(s->nccl); /* the ranks' device state, which used it, is gone */
    rt_cuda_local_free(s->dlocal);
    free(s->ranks);
    if (s->world)
        rt_local_world_free(s->world);
    rt_st_close(s->params);
    rt_st_close(s->inputs);
    rt_ckpt_free(s->ckpt);
    free(s->resumed);
    for (int i = 0; s->out && i < s->p->nio; i++)
        free(s->out[i]);
    free(s->out);
    free(s->first);
    for (int i = 0; i < s->nbind; i++)
        free(s->bind[i].name);
    free(s->bind);
    free(s->keys);
    free(s->generated);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The place of I/O entry io's declaration ("model.sh:3:8: "), from the
 * instruction that makes it, or "". */
static const char *io_where(const rt_plan *p, const rt_io *io, char *buf, size_t size)
{
    buf[0] = 0;
    for (int st = 0; st < p->nstages && !buf[0]; st++)
        for (int i = 0; i < p->stage[st].ninstr && !buf[0]; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            if (rt_ops[in->op].cls == RT_K_SOURCE && in->io >= 0 && &p->io[in->io] == io)
                rt_instr_where(p, in, buf, size);
        }
    return buf;
}

int rt_session_bind(rt_session *s, const char *name, const void *data, size_t bytes,
                    su_status *err)
{
    const rt_io *io = NULL;
    for (int i = 0; i < s->p->nio && !io; i++)
        if (s->p->io[i].kind != RT_IO_OUTPUT && strcmp(s->p->io[i].name, name) == 0)
            io = &s->p->io[i];
    if (!io)
        return su_fail(err, SU_USAGE, "the plan has no input, param or state called '%s'", name);
    char tb[128], where[256];
    if ((int64_t)bytes != rt_type_bytes(&io->type))
        return su_fail(err, SU_USAGE, "%s'%s' is %s (%lld bytes), but %zu bytes were bound",
                       io_where(s->p, io, where, sizeof where), name,
                       rt_type_str(&io->type, tb, sizeof tb),
                       (long long)rt_type_bytes(&io->type), bytes);
    for (int i = 0; i < s->nbind; i++)
        if (strcmp(s->bind[i].name, name) == 0) {
            s->bind[i].data = data;
            s->bind[i].bytes = bytes;
            s->params_dirty |= is_kept(io);
            return 0;
        }
    binding *nb = realloc(s->bind, ((size_t)s->nbind + 1) * sizeof *nb);
    if (!nb)
        return su_fail(err, SU_NOMEM, "out of memory");
    s->bind = nb;
    char *copy = strdup(name);
    if (!copy)
        return su_fail(err, SU_NOMEM, "out of memory");
    s->bind[s->nbind++] = (binding){copy, data, bytes};
    s->params_dirty |= is_kept(io);
    return 0;
}

/* Names of the sources the run makes from the seed. */
static int note_generated(rt_session *s, su_status *err)
{
    size_t cap = 1, len = 0;
    for (int i = 0; i < s->p->nio; i++)
        cap += strlen(s->p->io[i].name) + 2;
    char *g = malloc(cap);
    if (!g)
        return su_fail(err, SU_NOMEM, "out of memory");
    g[0] = 0;
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        /* a master copy is made from the seed when its param is */
        const char *from = io->init == RT_INIT_PARAM ? io->init_param : io->name;
        if (io->kind == RT_IO_OUTPUT || s->first[i] != i || find_binding(s, io->name) ||
            find_binding(s, from))
            continue;
        if (s->ckpt && io->kind != RT_IO_INPUT)
            continue;
        rt_st_file *f = io->kind == RT_IO_INPUT ? s->inputs : s->params;
        if (f && (io->kind == RT_IO_INPUT || rt_st_find(f, io->name) || rt_st_find(f, from)))
            continue;
        len += (size_t)snprintf(g + len, cap - len, "%s%s", len ? ", " : "", io->name);
    }
    free(s->generated);
    s->generated = g;
    return 0;
}

int rt_session_check_params(const rt_session *s, su_status *err)
{
    if (!s->params || s->ckpt) /* the checkpoint holds every param */
        return 0;
    bool *bound = calloc((size_t)s->p->nio + 1, sizeof *bound);
    if (!bound)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; i < s->p->nio; i++)
        bound[i] = find_binding(s, s->p->io[i].name) != NULL;
    int rc = rt_match_missing(s->p, s->first, s->params, bound, s->o.init_missing, err);
    free(bound);
    return rc;
}

/* Every rank a thread of this process, then the outputs. */
static int run_local(rt_session *s, su_status *err)
{
    pthread_t *th = calloc((size_t)s->nhere, sizeof *th);
    if (!th)
        return su_fail(err, SU_NOMEM, "out of memory");
    int64_t started = 0;
    for (; started < s->nhere; started++)
        if (pthread_create(&th[started], NULL, rank_thread, &s->ranks[started]) != 0)
            break;
    if (started < s->nhere && started > 0) {
        su_fail(&s->ranks[started].err, SU_INTERNAL, "cannot start a thread for it");
        s->ranks[started].rank = started;
        rank_failed(&s->ranks[started]);
    }
    for (int64_t r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    free(th);
    if (started == 0)
        return su_fail(err, SU_INTERNAL, "cannot start the rank threads");
    if (s->has_err)
        return su_status_copy(err, &s->first_err);
    return gather_outputs_local(s);
}

/* Outputs are gathered before the updates are applied, so an output that
 * shares a param's buffer shows the value the run used. */
int rt_session_run(rt_session *s, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "an earlier run failed: the session can only be freed");
    s->has_err = false;
    if (rt_session_check_params(s, err) != 0 || note_generated(s, err) != 0)
        return -1;
    if (s->o.comm == RT_COMM_LOCAL) {
        if (s->o.trace && !s->origin_set) { /* the rank threads share one clock */
            s->trace_origin = rt_trace_now();
            s->origin_set = true;
        }
        if (run_local(s, err) != 0) {
            s->failed = true;
            return -1;
        }
    } else {
        rank_state *rs = &s->ranks[0];
        if (rank_run(rs) != 0 || gather_outputs_mpi(s, rs) != 0) {
            s->failed = true;
            su_status_copy(err, &rs->err);
            return su_prefix(err, "rank %lld: ", (long long)rs->rank);
        }
    }
    apply_updates(s);
    s->params_dirty = false;
    s->steps++;
    return 0;
}

/* Every rank's events to every process (the all-axes group's members are
 * in rank order): the counts, then the events padded to the longest. */
static int gather_trace_mpi(rt_session *s, rt_trace *all, rt_trace_ev **mem, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    rt_group *g = rs->groups[s->nkeys - 1];
    int64_t *count = calloc((size_t)s->nranks, sizeof *count), n = rs->tr.n, most = 0;
    if (!count)
        return su_fail(err, SU_NOMEM, "out of memory");
    if (rt_all_gather(g, &n, count, sizeof n) != 0) {
        comm_free(rs, count);
        return su_fail(err, SU_PEER, "gathering the trace: %s", rt_comm_error(rs->comm));
    }
    for (int64_t r = 0; r < s->nranks; r++)
        most = count[r] > most ? count[r] : most;
    size_t each = (size_t)most * sizeof(rt_trace_ev);
    rt_trace_ev *send = calloc(most + 1, sizeof *send);
    *mem = calloc((size_t)s->nranks * (size_t)most + 1, sizeof **mem);
    int rc = 0;
    if (!send || !*mem)
        rc = su_fail(err, SU_NOMEM, "out of memory for the trace");
    if (!rc && n)
        memcpy(send, rs->tr.ev, (size_t)n * sizeof *send);
    if (!rc && most && rt_all_gather(g, send, *mem, (int64_t)each) != 0)
        rc = su_fail(err, SU_PEER, "gathering the trace: %s", rt_comm_error(rs->comm));
    for (int64_t r = 0; !rc && r < s->nranks; r++)
        all[r] = (rt_trace){.ev = *mem + (size_t)r * (size_t)most, .n = count[r]};
    if (rc && rt_comm_stuck(rs->comm))
        *mem = NULL; /* kept: comm_free */
    comm_free(rs, send);
    comm_free(rs, count);
    return rc;
}

int rt_session_write_trace(rt_session *s, const char *path, const char *backend, su_status *err)
{
    if (!s->o.trace)
        return su_fail(err, SU_USAGE, "the session was not opened with tracing on");
    if (s->steps == 0 || s->failed)
        return su_fail(err, SU_USAGE, "no successful run to trace");
    rt_trace *all = calloc((size_t)s->nranks, sizeof *all);
    if (!all)
        return su_fail(err, SU_NOMEM, "out of memory");
    rt_trace_ev *mem = NULL;
    int rc = 0;
    const char *comm = s->o.comm == RT_COMM_LOCAL ? "local"
                       : s->o.comm == RT_COMM_MPI ? "mpi" : "nccl";
    if (s->o.comm == RT_COMM_LOCAL) {
        for (int64_t r = 0; r < s->nhere; r++)
            all[s->ranks[r].rank] = s->ranks[r].tr;
    } else {
        rc = gather_trace_mpi(s, all, &mem, err);
    }
    if (!rc && rt_session_rank(s) == 0)
        rc = rt_trace_write(path, s->p, all, s->nranks, backend, comm, err);
    free(mem);
    free(all);
    return rc;
}

int64_t rt_session_rank(const rt_session *s)
{
    return s->o.comm != RT_COMM_LOCAL && s->nhere > 0 ? s->ranks[0].rank : 0;
}

const void *rt_session_output(const rt_session *s, const char *name, rt_type *type)
{
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        if (io->kind == RT_IO_OUTPUT && strcmp(io->name, name) == 0) {
            if (type)
                *type = io->type;
            return s->out[i];
        }
    }
    return NULL;
}

const char *rt_session_generated(const rt_session *s)
{
    return s->generated ? s->generated : "";
}

int64_t rt_session_steps(const rt_session *s)
{
    return s->steps;
}

int rt_session_loss(const rt_session *s, double *loss, su_status *err)
{
    const rt_plan *p = s->p;
    *loss = NAN;
    if (p->loss < 0)
        return su_fail(err, SU_USAGE, "the plan has no loss (it was not compiled for training)");
    if (s->steps == 0 || s->failed)
        return su_fail(err, SU_USAGE, "no loss yet: %s", s->failed ? "the last run failed"
                                                              : "no step has run");
    const void *v = s->out[p->loss];
    switch (p->io[p->loss].type.dtype) {
    case RT_F16:
        *loss = su_f16_to_f32(*(const uint16_t *)v);
        break;
    case RT_BF16:
        *loss = su_bf16_to_f32(*(const uint16_t *)v);
        break;
    default:
        *loss = *(const float *)v;
        break;
    }
    return 0;
}

int rt_session_save_params(rt_session *s, const char *path, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "%s: not written: the last run failed", path);
    if (s->steps == 0)
        return su_fail(err, SU_USAGE, "%s: not written: no step has run, so no params are loaded",
                    path);
    kept k;
    int rc = gather_kept(s, &k, err);
    if (rc == 0 && rt_session_rank(s) == 0)
        rc = rt_st_write(path, k.n, k.names, k.types, (const void *const *)k.data, err);
    free_kept(&k);
    return rc;
}

/* ==== checkpoints and per-step input batches (checkpoint.h) ====
 * Saving: every rank writes the boxes it owns (rt_ckpt_writes) from its
 * param and state buffers to its own file; then one process writes the
 * index. Resuming: the index is read and checked against the plan, each
 * rank's boxes are checked to be covered and the shard files they need
 * opened; the boxes are read at the next run (load_source), as a params
 * file's would be. Under MPI each step that can fail on one rank ends in
 * agree(), so every rank returns the same result. */

int64_t rt_session_step(const rt_session *s)
{
    return s->step_base + s->steps;
}

int rt_session_check_steps(const rt_session *s, int64_t steps, su_status *err)
{
    if (!s->inputs)
        return 0;
    int64_t first = rt_session_step(s) + 1, last = rt_session_step(s) + steps;
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        if (io->kind != RT_IO_INPUT || s->first[i] != i || find_binding(s, io->name))
            continue;
        int64_t nb = rt_input_batches(s->inputs, io);
        if (nb >= 0 && nb < last)
            return su_fail(err, SU_INPUT, "%s: tensor '%s' holds %lld batch%s (one a step), but steps %lld to %lld need %lld",
                        s->inputs->path, io->name, (long long)nb, nb == 1 ? "" : "es",
                        (long long)first, (long long)last, (long long)last);
    }
    return 0;
}

/* Under MPI: whether any rank failed (rc != 0, its message in msg), the
 * first failing rank's message into err. Collective over every rank. */
static int agree(rt_session *s, int rc, const su_status *msg, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    if (rank_setup(rs) != 0)
        return su_status_copy(err, &rs->err);
    /* each rank's record: its kind (0: none) in the first byte, then the
     * message */
    char mine[ERRLEN];
    memset(mine, 0, sizeof mine);
    if (rc != 0) {
        mine[0] = (char)(msg->kind != SU_OK ? msg->kind : SU_INTERNAL);
        snprintf(mine + 1, sizeof mine - 1, "%.*s", ERRLEN - 2, msg->msg[0] ? msg->msg : "failed");
    }
    char *all = malloc((size_t)(ERRLEN * s->nranks));
    if (!all)
        return su_fail(err, SU_NOMEM, "out of memory");
    if (rt_all_gather(rs->groups[s->nkeys - 1], mine, all, ERRLEN) != 0)
        rc = rt_comm_status(rs->comm, err);
    else
        rc = 0;
    for (int64_t r = 0; rc == 0 && r < s->nranks; r++) {
        const char *rec = all + r * ERRLEN;
        if (rec[0])
            rc = su_fail(err, (su_kind)rec[0], "%.*s", ERRLEN - 1, rec + 1);
    }
    comm_free(rs, all);
    return rc;
}

/* Checks and opens what rank rs will read from checkpoint c. */
static int prepare_rank(rt_session *s, rt_ckpt *c, const rank_state *rs, su_status *err)
{
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        int64_t start[RT_MAX_RANK], count[RT_MAX_RANK];
        if (!is_kept(io) || !holds(s->p, rs->coord, io))
            continue;
        rt_io_box(s->p, io, rs->coord, start, count);
        if (rt_ckpt_prepare(c, i, start, count, err) != 0)
            return su_prefix(err, "rank %lld: ", (long long)rs->rank);
    }
    return 0;
}

/* The step folder that dir names (rt_ckpt_locate) into *folder, and a
 * note (ERRLEN bytes). Under MPI, rank 0's: every process then reads the
 * same one, even one that sees the pointer at another moment. */
static int locate(rt_session *s, const char *dir, char **folder, char *note, su_status *err)
{
    su_status msg = {SU_OK, ""};
    int rc = rt_ckpt_locate(dir, folder, note, ERRLEN, &msg);
    if (s->o.comm == RT_COMM_LOCAL)
        return rc == 0 ? 0 : su_status_copy(err, &msg);
    if (rc == 0 && strlen(*folder) >= PATH_MAX)
        rc = su_fail(&msg, SU_INPUT, "%s: a path longer than %d bytes", *folder, PATH_MAX - 1);
    if (agree(s, rc, &msg, err) != 0) {
        free(*folder);
        *folder = NULL;
        return -1;
    }
    /* every process's note and folder, then rank 0's in their place */
    char *mine = calloc(1, ERRLEN + PATH_MAX);
    char *all = malloc((size_t)s->nranks * (ERRLEN + PATH_MAX)), *chosen = NULL;
    rank_state *rs = &s->ranks[0];
    rc = !mine || !all ? su_fail(&msg, SU_NOMEM, "out of memory") : 0;
    if (rc == 0) {
        memcpy(mine, note, strlen(note) + 1);
        memcpy(mine + ERRLEN, *folder, strlen(*folder) + 1);
        if (rt_all_gather(rs->groups[s->nkeys - 1], mine, all, ERRLEN + PATH_MAX) != 0)
            rc = rt_comm_status(rs->comm, &msg);
    }
    if (rc == 0 && !(chosen = strdup(all + ERRLEN)))
        rc = su_fail(&msg, SU_NOMEM, "out of memory");
    if (rc == 0)
        memcpy(note, all, ERRLEN);
    comm_free(rs, mine); /* a stuck comm may still write them */
    comm_free(rs, all);
    free(*folder);
    *folder = chosen;
    return agree(s, rc, &msg, err);
}

int rt_session_resume(rt_session *s, const char *dir, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "%s: not resumed: an earlier run failed", dir);
    su_status msg = {SU_OK, ""};
    char note[ERRLEN] = "";
    char *folder = NULL;
    if (locate(s, dir, &folder, note, err) != 0)
        return -1;
    rt_ckpt *c = NULL;
    int rc = rt_ckpt_open(folder, s->p, &c, &msg);
    for (int64_t r = 0; rc == 0 && r < s->nhere; r++)
        rc = prepare_rank(s, c, &s->ranks[r], &msg);
    if (s->o.comm != RT_COMM_LOCAL)
        rc = agree(s, rc, &msg, err);
    else if (rc != 0)
        su_status_copy(err, &msg);
    if (rc != 0) {
        rt_ckpt_free(c);
        free(folder);
        return -1;
    }
    rt_ckpt_free(s->ckpt);
    s->ckpt = c;
    free(s->resumed);
    s->resumed = folder;
    memcpy(s->resume_note, note, sizeof note);
    s->step_base = rt_ckpt_step(c) - s->steps;
    s->params_dirty = true; /* every param and state is read again */
    return 0;
}

const char *rt_session_resumed(const rt_session *s, const char **note)
{
    if (note)
        *note = s->resumed ? s->resume_note : "";
    return s->resumed;
}

/* Writes rank rs's file: its boxes of every param and state it owns. */
static int write_rank_file(rt_session *s, const rank_state *rs, const char *dir,
                           rt_st_sum *sum, su_status *err)
{
    const rt_plan *p = s->p;
    const char **names = calloc((size_t)p->nio + 1, sizeof *names);
    rt_type *types = calloc((size_t)p->nio + 1, sizeof *types);
    const void **data = calloc((size_t)p->nio + 1, sizeof *data);
    int n = 0, rc = 0;
    if (!names || !types || !data)
        rc = su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        int64_t start[RT_MAX_RANK];
        if (!is_kept(io) || s->first[i] != i || !rt_ckpt_writes(p, io, rs->coord))
            continue;
        names[n] = io->name;
        types[n] = io->type;
        rt_io_box(p, io, rs->coord, start, types[n].dim);
        data[n++] = rs->buf[io->buffer];
    }
    if (rc == 0)
        rc = rt_ckpt_write_rank(dir, rs->rank, n, names, types, data, sum, err);
    free(names);
    free(types);
    free(data);
    return rc;
}

static int save_checkpoint_local(rt_session *s, const char *dir, int64_t step, su_status *err)
{
    rt_st_sum *sums = calloc((size_t)s->nranks, sizeof *sums);
    char *staging = rt_ckpt_staging(dir, step);
    int rc = sums && staging ? rt_ckpt_begin(dir, step, err)
                             : su_fail(err, SU_NOMEM, "out of memory");
    for (int64_t r = 0; rc == 0 && r < s->nhere; r++)
        rc = write_rank_file(s, &s->ranks[r], staging, &sums[s->ranks[r].rank], err);
    if (rc == 0)
        rc = rt_ckpt_commit(dir, s->p, step, sums, s->o.ckpt_keep, err);
    free(staging);
    free(sums);
    return rc;
}

/* Rank 0 makes the staging folder; every rank writes its file there (and
 * fsyncs it); once all have, rank 0 gathers their sizes and CRC-32s,
 * writes the index and commits. Each part ends in agree(), so no rank
 * goes on past a failure and rank 0 commits only a complete folder. */
static int save_checkpoint_mpi(rt_session *s, const char *dir, int64_t step, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    su_status msg = {SU_OK, ""};
    rt_st_sum mine = {0, 0, 0}, *sums = calloc((size_t)s->nranks, sizeof *sums);
    char *staging = rt_ckpt_staging(dir, step);
    int rc = !sums || !staging ? su_fail(&msg, SU_NOMEM, "out of memory")
             : rs->rank == 0    ? rt_ckpt_begin(dir, step, &msg)
                                : 0;
    if (agree(s, rc, &msg, err) == 0) {
        rc = write_rank_file(s, rs, staging, &mine, &msg);
        rc = agree(s, rc, &msg, err);
    } else {
        rc = -1;
    }
    free(staging);
    if (rc != 0) {
        free(sums);
        return -1;
    }
    if (rt_all_gather(rs->groups[s->nkeys - 1], &mine, sums, sizeof mine) != 0)
        rc = rt_comm_status(rs->comm, &msg);
    if (rc == 0 && rs->rank == 0)
        rc = rt_ckpt_commit(dir, s->p, step, sums, s->o.ckpt_keep, &msg);
    comm_free(rs, sums);
    return agree(s, rc, &msg, err);
}

int rt_session_save_checkpoint(rt_session *s, const char *dir, su_status *err)
{
    const char *why = s->failed ? "the last run failed"
                      : s->steps == 0 ? "no step has run, so no params are loaded"
                      : s->params_dirty ? "params were bound or a checkpoint resumed since the last step, and are loaded at the next"
                                        : NULL;
    if (why) {
        su_fail(err, SU_USAGE, "%s: not saved: %s", dir, why);
        return -2;
    }
    if (s->o.comm != RT_COMM_LOCAL)
        return save_checkpoint_mpi(s, dir, rt_session_step(s), err);
    return save_checkpoint_local(s, dir, rt_session_step(s), err);
}
