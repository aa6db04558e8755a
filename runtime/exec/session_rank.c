/* session_rank.c: one rank's run (session_impl.h): its block of a
 * tensor, the re-layout a collective along a dimension other than 0 needs,
 * its sources (bound tensors, the checkpoint, the params and inputs files,
 * the seed), collectives, send and recv, its setup, its walk over its
 * program on the CPU, and the hooks the cuda backend's loop calls. */
#include "runtime/exec/session_impl.h"

#include "runtime/cpu/cpu.h"
#include "runtime/exec/init_gen.h"
#include "runtime/exec/strided.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- layout helpers ---- */

/* The start of this rank's block of a tensor of local type t sharded by sh. */
void rt_sess_block_start(const rt_plan *p, const int64_t *coord, const rt_sharding *sh,
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

/* The host copier of rt_copy_runs: ctx holds {dst, src}. */
int rt_sess_host_copy(void *ctx, int64_t doff, int64_t soff, int64_t bytes)
{
    uint8_t *const *p = ctx;
    memcpy(p[0] + doff, p[1] + soff, (size_t)bytes);
    return 0;
}

/* Copies the block [start, start + count) of a row-major tensor of shape
 * full (esize-byte elements) from src (the full tensor) to dst (the block,
 * packed), or the other way round when to_full. */
void rt_sess_copy_block(const rt_type *full, const int64_t *start, const int64_t *count,
                        int esize, const uint8_t *full_data, uint8_t *block, bool to_full)
{
    int64_t fstride[RT_MAX_RANK], bstride[RT_MAX_RANK];
    rt_row_major_strides(full->rank, full->dim, esize, fstride);
    rt_row_major_strides(full->rank, count, esize, bstride);
    uint8_t *at = (uint8_t *)full_data + rt_strided_offset(full->rank, start, fstride);
    uint8_t *p[2] = {to_full ? at : block, to_full ? block : at};
    rt_copy_runs(full->rank, count, esize, to_full ? fstride : bstride,
                 to_full ? bstride : fstride, rt_sess_host_copy, p);
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

const binding *rt_sess_find_binding(const rt_session *s, const char *name)
{
    for (int i = 0; i < s->nbind; i++)
        if (strcmp(s->bind[i].name, name) == 0)
            return &s->bind[i];
    return NULL;
}

int rt_sess_read_bound(const binding *b, const int64_t *start, const int64_t *count, void *dst,
                       su_status *err)
{
    const rt_view *v = &b->v;
    if (v->mem == RT_MEM_CUDA)
        return rt_cuda_view_to_host(v, start, count, dst, err);
    int esize = rt_dtype_size(v->type.dtype);
    int64_t dstride[RT_MAX_RANK];
    rt_row_major_strides(v->type.rank, count, esize, dstride);
    void *p[2] = {dst, (uint8_t *)v->data + rt_strided_offset(v->type.rank, start, v->stride)};
    return rt_copy_runs(v->type.rank, count, esize, dstride, v->stride, rt_sess_host_copy, p);
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
    const binding *b = rt_sess_find_binding(s, src->name);
    if (b)
        rc = rt_sess_read_bound(b, start, count, tmp, &rs->err);
    else
        rc = rt_st_read_block(s->params, src->name, &src->type, start, count, tmp, &rs->err);
    if (rc == 0)
        rt_convert_floats(src->type.dtype, tmp, io->type.dtype, dst, n);
    free(tmp);
    return rc;
}

/* Whether source instruction `in` (input, param or state) is made from the
 * seed this run: nothing bound, no checkpoint, no file holds it (nor, for
 * a master copy, its param). Then 1 with *g, the generator's parameters
 * for the rank's block (init_gen.h: an f32 master is its param's values
 * in the param's dtype, widened); 0 when it is not; -1 with the error
 * when the seed cannot make it. The CPU backend fills the block with *g
 * on the host, the CUDA backend on the device (rt_cuda_host.seeded). */
static int seeded(rank_state *rs, const rt_instr *in, sh_init_args *g)
{
    rt_session *s = rs->s;
    const rt_io *io = &s->p->io[in->io];
    if (rt_sess_find_binding(s, io->name) || (s->ckpt && io->kind != RT_IO_INPUT))
        return 0;
    rt_st_file *f = io->kind == RT_IO_INPUT ? s->inputs : s->params;
    if (f && (io->kind == RT_IO_INPUT || rt_st_find(f, io->name)))
        return 0;
    const rt_io *from = io;
    if (io->init == RT_INIT_PARAM) {
        from = find_param(s->p, io->init_param);
        if (rt_sess_find_binding(s, from->name) || (s->params && rt_st_find(s->params, from->name)))
            return 0;
    }
    int64_t start[RT_MAX_RANK];
    rt_sess_block_start(s->p, rs->coord, &io->sh, &in->out_t, start);
    if (!rt_init_args(from->init, from->init_a, from->init_b, s->o.seed, from->name, &from->type,
                      start, in->out_t.dim, io->type.dtype, g))
        return su_fail(&rs->err, SU_INPUT, "'%s' (%s) cannot be made from the seed%s%s", io->name,
                       rt_dtype_name(io->type.dtype), from != io ? " as a copy of param " : "",
                       from != io ? from->name : "");
    return 1;
}

static int load_source(rank_state *rs, const rt_instr *in, void *dst)
{
    rt_session *s = rs->s;
    const rt_io *io = &s->p->io[in->io];
    sh_init_args g;
    int made = seeded(rs, in, &g);
    if (made != 0) {
        if (made > 0)
            rt_init_fill(&g, dst);
        return made > 0 ? 0 : -1;
    }
    int64_t start[RT_MAX_RANK], count[RT_MAX_RANK];
    rt_sess_block_start(s->p, rs->coord, &io->sh, &in->out_t, start);
    for (int d = 0; d < in->out_t.rank; d++)
        count[d] = in->out_t.dim[d];
    const binding *b = rt_sess_find_binding(s, io->name);
    if (b)
        return rt_sess_read_bound(b, start, count, dst, &rs->err);
    /* the master of a bound param copies the binding, as the param does,
     * over a master in the checkpoint or the params file */
    if (io->init == RT_INIT_PARAM && rt_sess_find_binding(s, io->init_param))
        return load_from_param(rs, io, start, count, dst);
    if (s->ckpt && io->kind != RT_IO_INPUT)
        return rt_ckpt_read(s->ckpt, in->io, start, count, dst, &rs->err);
    rt_st_file *f = io->kind == RT_IO_INPUT ? s->inputs : s->params;
    if (f && io->kind == RT_IO_INPUT)
        return rt_input_read(f, io, s->step_base + s->steps, start, count, dst, &rs->err);
    if (f && rt_st_find(f, io->name))
        return rt_st_read_block(f, io->name, &io->type, start, count, dst, &rs->err);
    return load_from_param(rs, io, start, count, dst); /* seeded() saw it is one */
}

/* ---- collectives ---- */

/* Frees p, a buffer rs's comm was given, unless the comm is stuck: an op
 * that timed out under MPI may still read or write it, so it is kept for
 * the life of the process (rt_comm_stuck). */
void rt_sess_comm_free(const rank_state *rs, void *p)
{
    if (!rt_comm_stuck(rs->comm))
        free(p);
}

void rt_sess_arena_free(rank_state *rs)
{
    if (!rs->arena || rt_comm_stuck(rs->comm))
        return; /* a stuck peer may still write into it */
    if (rs->arena_mapped)
        munmap(rs->arena, rs->arena_mapped);
    else
        free(rs->arena);
    rs->arena = NULL;
    rs->arena_mapped = 0;
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
    rt_sess_comm_free(rs, tmp);
    rt_sess_comm_free(rs, tmp2);
    if (rc != 0)
        rt_comm_status(rs->comm, &rs->err);
    return rc;
}

/* ---- one rank ---- */

/* An arena from this size on is mapped memory (rt_sess_rank_setup). */
enum { ARENA_MAP_BYTES = 1 << 20 };

int rt_sess_rank_setup(rank_state *rs)
{
    rt_session *s = rs->s;
    const rt_program *prog = rs->prog;
    if (!rs->buf) {
        rs->buf = calloc((size_t)prog->nbuf + 1, sizeof *rs->buf);
        if (!rs->buf)
            return su_fail(&rs->err, SU_NOMEM, "out of memory");
        /* RT_ALIGN-aligned, as the offsets are, and zero. A large arena is
         * mapped anonymous memory (page-aligned), whose pages the system
         * zeroes when they are first touched: the cuda backend's host copy
         * touches only its sources and outputs, and the CPU backend's first
         * step the rest as it computes. A memset wrote every page at setup
         * first: a GPT-2-small f32 arena is 9.5 GiB. */
        size_t n = ((size_t)prog->arena_bytes + RT_ALIGN) / RT_ALIGN * RT_ALIGN;
        int why = ENOMEM;
        if (n >= ARENA_MAP_BYTES) {
            void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                rs->arena = p;
                rs->arena_mapped = n;
            } else {
                why = errno;
            }
        } else if ((rs->arena = aligned_alloc(RT_ALIGN, n))) {
            memset(rs->arena, 0, n);
        }
        char size[32];
        if (!rs->arena) /* most likely the plan is too big for this machine */
            return su_fail(&rs->err, SU_NOMEM, "the plan's arena of %s (shardc --report's peak "
                           "per rank) does not fit in this machine's memory: %s",
                           su_size_text(prog->arena_bytes, size), strerror(why));
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

static const rt_view *cuda_bound_device(void *rank, const rt_instr *in, rt_view *at)
{
    rank_state *rs = rank;
    const rt_io *io = &rs->s->p->io[in->io];
    const binding *b = rt_sess_find_binding(rs->s, io->name);
    if (!b || b->v.mem != RT_MEM_CUDA)
        return NULL;
    int64_t start[RT_MAX_RANK];
    rt_sess_block_start(rs->s->p, rs->coord, &io->sh, &in->out_t, start);
    *at = b->v;
    at->type = in->out_t;
    at->data = (const uint8_t *)b->v.data + rt_strided_offset(io->type.rank, start, b->v.stride);
    return at;
}

static int cuda_seeded(void *rank, const rt_instr *in, sh_init_args *g)
{
    return seeded(rank, in, g);
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
    rt_cuda_host h = {.rank = rs, .buf = rs->buf, .source = cuda_source,
                      .bound_device = cuda_bound_device, .seeded = cuda_seeded,
                      .comm = cuda_comm,
                      .load_params = !rs->params_loaded || s->params_dirty,
                      .keep_on_device = true, .err = &rs->err, .nccl = s->nccl,
                      .graph = s->o.graph,
                      .trace = s->o.trace ? &rs->tr : NULL, .step = (int32_t)s->steps,
                      .origin = s->trace_origin};
    h.local = s->dlocal;
    h.comm_dev = cuda_comm_dev;
    int stage = (int)(rs->prog - s->p->stage);
    if (rt_cuda_run(&rs->cuda, s->p, stage, rs->rank, &h) != 0)
        return -1;
    rs->params_loaded = true;
    rs->kept_on_device = true;
    return 0;
}

int rt_sess_rank_run(rank_state *rs)
{
    rt_session *s = rs->s;
    if (rt_sess_rank_setup(rs) != 0)
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

void rt_sess_rank_failed(rank_state *rs)
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

void *rt_sess_rank_thread(void *arg)
{
    rank_state *rs = arg;
    if (rt_sess_rank_run(rs) != 0)
        rt_sess_rank_failed(rs);
    return NULL;
}
