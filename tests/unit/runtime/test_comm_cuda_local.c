/* test_comm_cuda_local.c: `--comm local` on the cuda backend, device to
 * device (runtime/comm/comm_dev.h, runtime/comm/comm_cuda_local.h), without a GPU.
 *
 * - rt_local_slice: for every (count, members) the slices cover the
 *   elements once, in member order, their sizes within one of each other.
 * - A fake device on host memory (an rt_dev_ops that queues every copy and
 *   reduction and runs them only at its sync, as a stream would; its
 *   reduction is the kernel's rule in C). Every collective, send and recv
 *   of real plans (the examples and test models on several meshes, ZeRO 1
 *   to 3 for reduce_scatter and all_gather, a pipeline for send and recv)
 *   and of made-up instructions (all_to_all, dims other than 0, f16, bf16,
 *   i32, nan in a max, groups of one, uneven slices, in place or not) runs
 *   on every rank's thread through rt_dcomm_*, then the same op through the
 *   host communicator (rt_all_reduce, ..., with the re-layout of a dim
 *   other than 0 done here by index arithmetic, as session_rank.c means it),
 *   and the two results must agree to the byte. The operand is written
 *   through the fake's queue (a member publishing before its device is
 *   done would publish stale bytes), the queue must be empty when the op
 *   returns, and the operand is poisoned before the host op's first wait
 *   (a peer reading it late would read poison).
 * - Failures say what the host path says: a member that never comes (the
 *   timeout), a send nobody receives, a failed peer; a device error names
 *   the op and the group.
 * - rt_cuda_local_usable's decisions.
 * - The reduction kernel compiles with NVRTC for sm_80 and sm_90, takes
 *   exactly an rt_dreduce and uses no local memory. */
#include "shardc.h"
#include "api/api_internal.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/comm/comm_cuda_local.h"
#include "runtime/comm/comm_dev.h"
#include "runtime/comm/comm_impl.h"
#include "support/support.h"
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

/* ---- slices ---- */

static void test_slices(void)
{
    for (int64_t n = 1; n <= 9; n++)
        for (int64_t count = 0; count <= 50; count++) {
            int64_t next = 0, small = count / n;
            for (int64_t me = 0; me < n; me++) {
                int64_t lo, hi;
                rt_local_slice(count, n, me, &lo, &hi);
                CHECK_INT(lo, next);
                CHECK(hi - lo == small || hi - lo == small + 1);
                next = hi;
            }
            CHECK_INT(next, count);
        }
}

/* ---- the fake device ---- */

typedef struct fop {
    bool reduce;
    rt_dptr dst, src;
    size_t dpitch, spitch, width, rows;
    rt_dreduce r;
} fop;

typedef struct fake {
    rt_dev_ops ops;
    fop *q;
    int n, cap;
    const char *fail_sync; /* a device error to report at the next sync */
} fake;

static fop *push(fake *f)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->q = realloc(f->q, (size_t)f->cap * sizeof *f->q);
        if (!f->q)
            abort();
    }
    memset(&f->q[f->n], 0, sizeof *f->q);
    return &f->q[f->n++];
}

static int f_copy(void *ctx, rt_dptr dst, size_t dpitch, rt_dptr src, size_t spitch,
                  size_t width, size_t rows, su_status *err)
{
    if (rows > 1 && (dpitch < width || spitch < width)) { /* cuMemcpy2D's rule */
        su_fail(err, SU_INPUT, "pitch %zu or %zu below width %zu", dpitch, spitch, width);
        return -1;
    }
    fop *o = push(ctx);
    o->dst = dst, o->src = src, o->dpitch = dpitch, o->spitch = spitch;
    o->width = width, o->rows = rows;
    return 0;
}

static int f_reduce(void *ctx, const rt_dreduce *r, su_status *err)
{
    if (r->n < 1 || r->n > RT_DCOMM_MAX_MEMBERS || r->cols < 1 || r->spitch < r->cols) {
        su_fail(err, SU_INPUT, "bad reduction: %d members, %lld cols, pitch %lld", r->n,
                (long long)r->cols, (long long)r->spitch);
        return -1;
    }
    fop *o = push(ctx);
    o->reduce = true;
    o->r = *r;
    return 0;
}

static float load(int dtype, rt_dptr p, int64_t i)
{
    float v;
    const uint16_t *h = (const uint16_t *)(uintptr_t)p;
    if (dtype == RT_F32)
        memcpy(&v, (const char *)(uintptr_t)p + 4 * i, 4);
    else
        v = dtype == RT_F16 ? su_f16_to_f32(h[i]) : su_bf16_to_f32(h[i]);
    return v;
}

static void store(int dtype, rt_dptr p, int64_t i, float v)
{
    uint16_t *h = (uint16_t *)(uintptr_t)p;
    if (dtype == RT_F32)
        memcpy((char *)(uintptr_t)p + 4 * i, &v, 4);
    else
        h[i] = dtype == RT_F16 ? su_f32_to_f16(v) : su_f32_to_bf16(v);
}

/* The kernel's rule (comm_cuda_local.c) for one element. */
static void reduce_one(const rt_dreduce *r, int64_t at, int64_t e)
{
    if (r->dtype == RT_I32) {
        uint32_t acc = ((const uint32_t *)(uintptr_t)r->src[0])[at];
        for (int j = 1; j < r->n; j++) {
            uint32_t x = ((const uint32_t *)(uintptr_t)r->src[j])[at];
            acc = !r->max ? acc + x : (int32_t)x > (int32_t)acc ? x : acc;
        }
        for (int j = 0; j < (r->dst ? 1 : r->n); j++)
            ((uint32_t *)(uintptr_t)(r->dst ? r->dst : r->src[j]))[r->dst ? e : at] = acc;
        return;
    }
    float acc = load(r->dtype, r->src[0], at);
    for (int j = 1; j < r->n; j++) {
        float v = load(r->dtype, r->src[j], at);
        acc = !r->max ? acc + v : v > acc || v != v ? v : acc;
    }
    if (r->dst)
        store(r->dtype, r->dst, e, acc);
    else
        for (int j = 0; j < r->n; j++)
            store(r->dtype, r->src[j], at, acc);
}

static int f_sync(void *ctx, su_status *err)
{
    fake *f = ctx;
    for (int k = 0; k < f->n; k++) {
        const fop *o = &f->q[k];
        for (size_t row = 0; !o->reduce && row < o->rows; row++)
            memmove((char *)(uintptr_t)o->dst + row * o->dpitch,
                    (const char *)(uintptr_t)o->src + row * o->spitch, o->width);
        for (int64_t e = 0; o->reduce && e < o->r.rows * o->r.cols; e++)
            reduce_one(&o->r, e / o->r.cols * o->r.spitch + e % o->r.cols, e);
    }
    f->n = 0;
    if (f->fail_sync) {
        su_fail(err, SU_INPUT, "%s", f->fail_sync);
        return -1;
    }
    return 0;
}

static void fake_init(fake *f, void *staging, int64_t staging_bytes)
{
    memset(f, 0, sizeof *f);
    f->ops = (rt_dev_ops){f, f_copy, f_reduce, f_sync, (rt_dptr)(uintptr_t)staging,
                          staging_bytes};
}

static rt_dptr D(const void *p)
{
    return (rt_dptr)(uintptr_t)p;
}

/* ---- the host's re-layout, by index arithmetic ---- */

/* Steps idx through t's elements in row-major order. */
static void next_index(const rt_type *t, int64_t *idx)
{
    for (int d = t->rank - 1; d >= 0; d--) {
        if (++idx[d] < t->dim[d])
            return;
        idx[d] = 0;
    }
}

/* Element idx of the whole (t) in block j along dim, at *lin in it
 * (blocks of t's dim[dim] / G). */
static int64_t block_of(const rt_type *t, int dim, int64_t G, const int64_t *idx, int64_t *lin)
{
    int64_t n = t->dim[dim] / G;
    *lin = 0;
    for (int d = 0; d < t->rank; d++)
        *lin = *lin * (d == dim ? n : t->dim[d]) + (d == dim ? idx[d] % n : idx[d]);
    return idx[dim] / n;
}

/* dst = t's G blocks along dim, one after another. concat: the other way:
 * src the blocks, dst the whole. */
static void relayout(const rt_type *t, int dim, int64_t G, const uint8_t *src, uint8_t *dst,
                     bool concat)
{
    int64_t es = rt_dtype_size(t->dtype), n = rt_type_numel(t), blk = n / G;
    int64_t idx[RT_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++, next_index(t, idx)) {
        int64_t lin, j = block_of(t, dim, G, idx, &lin);
        if (concat)
            memcpy(dst + e * es, src + (j * blk + lin) * es, (size_t)es);
        else
            memcpy(dst + (j * blk + lin) * es, src + e * es, (size_t)es);
    }
}

/* The op on the host: the communicator and the re-layout above. */
static int host_op(rt_comm *c, rt_group *g, const rt_instr *in, int64_t peer, const uint8_t *hin,
                   uint8_t *hout)
{
    int64_t ib = in->nin ? rt_type_bytes(&in->in_t[0]) : 0, G = g ? rt_group_size(g) : 1;
    int64_t count = rt_type_numel(&in->out_t);
    int dtype = in->out_t.dtype;
    uint8_t *t1 = malloc((size_t)ib * (size_t)G + 1), *t2 = malloc((size_t)ib * (size_t)G + 1);
    int rc = -1;
    rt_type b = in->in_t[0];
    switch (in->op) {
    case RT_OP_SEND: rc = rt_send(c, peer, hin, ib); break;
    case RT_OP_RECV: rc = rt_recv(c, peer, hout, rt_type_bytes(&in->out_t)); break;
    case RT_OP_ALL_REDUCE:
        memcpy(hout, hin, (size_t)ib);
        rc = in->dim == RT_REDUCE_MAX ? rt_all_reduce_max(g, hout, count, dtype)
                                      : rt_all_reduce(g, hout, count, dtype);
        break;
    case RT_OP_BROADCAST:
        memcpy(hout, hin, (size_t)ib);
        rc = rt_broadcast(g, hout, ib);
        break;
    case RT_OP_ALL_GATHER:
        rc = rt_all_gather(g, hin, t1, ib);
        b.dim[in->dim] *= G; /* the whole */
        if (rc == 0)
            relayout(&b, (int)in->dim, G, t1, hout, true);
        break;
    case RT_OP_REDUCE_SCATTER:
        relayout(&in->in_t[0], (int)in->dim, G, hin, t1, false);
        rc = rt_reduce_scatter(g, t1, hout, count, dtype);
        break;
    case RT_OP_ALL_TO_ALL:
        relayout(&in->in_t[0], (int)in->dim, G, hin, t1, false);
        rc = rt_all_to_all(g, t1, t2, ib / G);
        b.dim[in->dim] /= G;
        b.dim[in->dim2] *= G; /* the result */
        if (rc == 0)
            relayout(&b, (int)in->dim2, G, t2, hout, true);
        break;
    }
    free(t1);
    free(t2);
    return rc;
}

/* ---- every rank's thread ---- */

enum { MAXKEYS = 64 };

typedef struct job {
    const rt_plan *p;
    rt_local_world *w;
    int nkeys;
    uint8_t key[MAXKEYS][RT_MAX_AXES], keyn[MAXKEYS]; /* the groups, made in this order */
    const char *what;
} job;

typedef struct rank_job {
    const job *j;
    int64_t rank;
    int fails;
    long ops[RT_NOPS]; /* run, by opcode */
} rank_job;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Values whose f32 sums round differently in another order; with nans,
 * a nan now and then; i32 wrapping now and then. */
static void fill(uint8_t *buf, const rt_type *t, uint64_t seed, bool nans)
{
    int64_t n = rt_type_numel(t);
    for (int64_t e = 0; e < n; e++) {
        uint64_t x = rnd(&seed);
        float v = (float)(x % 1000003) / 997.0f - 500.0f;
        if (nans && x % 23 == 0)
            v = NAN;
        int32_t k = (int32_t)(x % 2001) - 1000;
        if (x % 29 == 0)
            k = INT32_MAX - (int32_t)(x % 7);
        switch (t->dtype) {
        case RT_F32: memcpy(buf + 4 * e, &v, 4); break;
        case RT_F16: ((uint16_t *)buf)[e] = su_f32_to_f16(v / 8); break;
        case RT_BF16: ((uint16_t *)buf)[e] = su_f32_to_bf16(v); break;
        default: memcpy(buf + 4 * e, &k, 4); break;
        }
    }
}

static int64_t stage_peer(const rt_plan *p, const int64_t *coord, int64_t stage)
{
    int64_t r = 0;
    for (int a = 0; a < p->naxes; a++)
        r = r * p->axis_size[a] + (a == p->stage_axis ? stage : coord[a]);
    return r;
}

static rt_group *group_for(const job *j, rt_group **groups, const rt_instr *in)
{
    for (int k = 0; k < j->nkeys; k++)
        if (j->keyn[k] == in->naxes && !memcmp(j->key[k], in->axes, in->naxes))
            return groups[k];
    return NULL;
}

/* Where the two results differ, said. */
static void report(rank_job *rj, int i, const rt_instr *in, const uint8_t *got,
                   const uint8_t *want, int64_t bytes)
{
    int64_t es = rt_dtype_size(in->out_t.dtype), at = 0;
    while (at < bytes && got[at] == want[at])
        at++;
    fprintf(stderr, "  %s, rank %lld, instruction %d (%s, %s, %lld bytes): element %lld differs\n",
            rj->j->what, (long long)rj->rank, i, rt_ops[in->op].name,
            rt_dtype_name(in->out_t.dtype), (long long)bytes, (long long)(at / es));
    rj->fails++;
}

/* Instruction i on the fake device, then on the host; 0, or -1 after an
 * error (the world is then failed). */
static int one_op(rank_job *rj, rt_comm *c, rt_group **groups, fake *f, uint8_t *arena,
                  const rt_program *g, int i, const int64_t *coord)
{
    const rt_instr *in = &g->instr[i];
    const job *j = rj->j;
    bool p2p = in->op == RT_OP_SEND || in->op == RT_OP_RECV;
    rt_group *grp = p2p ? NULL : group_for(j, groups, in);
    int64_t peer = p2p ? stage_peer(j->p, coord, in->dim) : -1;
    int64_t ib = in->nin ? rt_type_bytes(&in->in_t[0]) : 0;
    int64_t ob = in->out >= 0 ? rt_type_bytes(&in->out_t) : 0;
    uint8_t *src = in->nin ? arena + g->buf_offset[in->in[0]] : NULL;
    uint8_t *dst = in->out >= 0 ? arena + g->buf_offset[in->out] : NULL;
    uint8_t *hin = malloc((size_t)ib + 1), *hout = calloc((size_t)ob + 1, 1);
    su_status err = {SU_OK, ""};
    if (in->nin)
        fill(hin, &in->in_t[0], (uint64_t)rj->rank * 7919 + (uint64_t)i * 104729 + 1,
             in->op == RT_OP_ALL_REDUCE && in->dim == RT_REDUCE_MAX);
    /* the operand as a kernel writes it: done only at the next sync */
    if (src)
        f_copy(f, D(src), (size_t)ib, D(hin), (size_t)ib, (size_t)ib, 1, &err);
    int rc = p2p ? rt_dcomm_p2p(c, &f->ops, in, peer, D(src), D(dst))
                 : rt_dcomm_collective(grp, &f->ops, in, D(src), D(dst));
    if (rc != 0)
        snprintf(err.msg, sizeof err.msg, "%s", rt_comm_error(c));
    if (rc == 0 && f->n != 0)
        snprintf(err.msg, sizeof err.msg, "%d device ops left queued", f->n);
    if (rc == 0 && src && src != dst)
        memset(src, 0xa5, (size_t)ib); /* the operand's bytes reused at once */
    if (!err.msg[0] && host_op(c, grp, in, peer, hin, hout) != 0)
        snprintf(err.msg, sizeof err.msg, "host: %s", rt_comm_error(c));
    if (!err.msg[0] && f_sync(f, &err) == 0 && dst && memcmp(dst, hout, (size_t)ob) != 0)
        report(rj, i, in, dst, hout, ob);
    free(hin);
    free(hout);
    rj->ops[in->op]++;
    if (!err.msg[0])
        return 0;
    fprintf(stderr, "  %s, rank %lld, instruction %d (%s): %s\n", j->what, (long long)rj->rank, i,
            rt_ops[in->op].name, err.msg);
    rj->fails++;
    rt_comm_abort(c, err.msg);
    return -1;
}

static void *rank_main(void *arg)
{
    rank_job *rj = arg;
    const job *j = rj->j;
    const rt_plan *p = j->p;
    rt_comm *c = rt_local_comm(j->w, rj->rank);
    int64_t coord[RT_MAX_AXES];
    rt_plan_coords(p, rj->rank, coord);
    const rt_program *g = &p->stage[p->stage_axis >= 0 ? coord[p->stage_axis] : 0];
    rt_group *groups[MAXKEYS];
    for (int k = 0; k < j->nkeys; k++)
        if (rt_comm_group(c, j->key[k], j->keyn[k], &groups[k]) != 0)
            abort();
    int64_t sb = rt_dcomm_staging_bytes(g);
    uint8_t *staging = malloc((size_t)sb + 1), *arena = calloc((size_t)g->arena_bytes + 1, 1);
    fake f;
    fake_init(&f, staging, sb);
    for (int i = 0; i < g->ninstr; i++)
        if (rt_ops[g->instr[i].op].cls == RT_K_COMM &&
            one_op(rj, c, groups, &f, arena, g, i, coord) != 0)
            break;
    free(f.q);
    free(staging);
    free(arena);
    return NULL;
}

/* Every rank of p runs its stage's communication both ways. */
static void run_plan(const rt_plan *p, const char *what, long *ops)
{
    job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    j.what = what;
    for (int st = 0; st < p->nstages; st++)
        for (int i = 0; i < p->stage[st].ninstr; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            bool known = false;
            if (rt_ops[in->op].cls != RT_K_COMM || in->op == RT_OP_SEND || in->op == RT_OP_RECV)
                continue;
            for (int k = 0; k < j.nkeys; k++)
                known |= j.keyn[k] == in->naxes && !memcmp(j.key[k], in->axes, in->naxes);
            if (!known && j.nkeys < MAXKEYS) {
                memcpy(j.key[j.nkeys], in->axes, in->naxes);
                j.keyn[j.nkeys++] = in->naxes;
            }
        }
    rt_mesh_desc mesh;
    memset(&mesh, 0, sizeof mesh);
    mesh.naxes = p->naxes;
    for (int a = 0; a < p->naxes; a++) {
        mesh.size[a] = p->axis_size[a];
        mesh.name[a] = p->axis_name[a];
    }
    su_status err;
    j.w = rt_local_world_new(&mesh, 60000, &err);
    CHECK(j.w != NULL);
    int64_t n = rt_plan_ranks(p);
    rank_job *rj = calloc((size_t)n, sizeof *rj);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    for (int64_t r = 0; j.w && r < n; r++) {
        rj[r].j = &j;
        rj[r].rank = r;
        CHECK(pthread_create(&th[r], NULL, rank_main, &rj[r]) == 0);
    }
    for (int64_t r = 0; j.w && r < n; r++) {
        pthread_join(th[r], NULL);
        CHECK_INT(rj[r].fails, 0);
        for (int op = 0; op < RT_NOPS; op++)
            ops[op] += rj[r].ops[op];
    }
    for (int64_t r = 0; j.w && r < n; r++)
        rt_comm_free(rt_local_comm(j.w, r));
    rt_local_world_free(j.w);
    free(rj);
    free(th);
}

/* ---- real plans ---- */

/* The model at path (with " zero K over dp" after its train line when
 * zero > 0), compiled for mesh without kernels, then run_plan. */
static void check_model(const char *path, const char *mesh, int zero, long *ops)
{
    char what[512];
    snprintf(what, sizeof what, "%s --mesh %s%s", strrchr(path, '/') + 1, mesh,
             zero == 1 ? " zero 1" : zero == 2 ? " zero 2" : zero == 3 ? " zero 3" : "");
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL);
    if (!fp)
        return;
    static char file[1 << 16], text[(1 << 16) + 64];
    size_t len = fread(file, 1, sizeof file - 1, fp);
    fclose(fp);
    file[len] = 0;
    const char *train = strstr(file, "\ntrain ");
    const char *eol = train ? strchr(train + 1, '\n') : NULL;
    size_t head = zero > 0 && eol ? (size_t)(eol - file) : len;
    memcpy(text, file, head); /* then " zero K over dp" before the train line's end */
    int k = head < len ? sprintf(text + head, " zero %d over dp", zero) : 0;
    memcpy(text + head + k, file + head, len - head + 1);
    CHECK(zero == 0 || eol != NULL);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *e = NULL;
    bool ok = shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK &&
              shardc_options_set_archs(opt, "none", &e) == SHARDC_OK &&
              shardc_compile_string(opt, path, text, strlen(text), &prog, &e) == SHARDC_OK &&
              shardc_program_plan(prog, &plan, &e) == SHARDC_OK;
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  %s: %s\n", what, e ? e : "?");
    su_status xe;
    if (ok) /* every stage plain, as the ranks run them (the plan keeps its loop form) */
        CHECK(ok = rt_plan_expand(plan->p, &xe));
    if (ok)
        run_plan(plan->p, what, ops);
    shardc_free(e);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

static void test_plans(void)
{
    static const struct {
        const char *file, *mesh;
        int zero;
    } runs[] = {
        {"examples/mlp.sh", "2x2", 0},
        {"examples/mlp.sh", "4x1", 0},
        {"examples/mlp.sh", "1x2", 0},
        {"examples/transformer.sh", "2x2", 0},
        {"examples/transformer.sh", "1x4", 0},
        {"examples/pipeline.sh", "2x2x2", 0},
        {"examples/pipeline.sh", "1x1x4", 0},
        {"tests/models/vocab_parallel.sh", "2x2", 0},
        {"tests/models/mlp_bf16.sh", "2x2", 1},
        {"tests/models/mlp_bf16.sh", "2x2", 2},
        {"tests/models/mlp_bf16.sh", "4x1", 3},
        {"tests/models/mlp_f16.sh", "2x2", 3},
        {"examples/transformer.sh", "2x2", 3},
    };
    long ops[RT_NOPS] = {0};
    char path[4200];
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        snprintf(path, sizeof path, "%s/%s", check_repo_dir(), runs[i].file);
        check_model(path, runs[i].mesh, runs[i].zero, ops);
    }
    printf("plans: %ld all_reduce, %ld reduce_scatter, %ld all_gather, %ld send, %ld recv "
           "(ops times ranks) through the fake device and the host\n",
           ops[RT_OP_ALL_REDUCE], ops[RT_OP_REDUCE_SCATTER], ops[RT_OP_ALL_GATHER],
           ops[RT_OP_SEND], ops[RT_OP_RECV]);
    /* the plans hold what they are here for */
    CHECK(ops[RT_OP_ALL_REDUCE] > 0 && ops[RT_OP_REDUCE_SCATTER] > 0 &&
          ops[RT_OP_ALL_GATHER] > 0 && ops[RT_OP_SEND] > 0 && ops[RT_OP_RECV] > 0);
}

/* ---- made-up instructions ---- */

typedef struct made {
    rt_plan p;
    rt_program g;
    rt_instr in[256];
    int64_t off[512];
    int64_t bytes[512];
} made;

static rt_type ty(int dtype, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    rt_type t = {.dtype = (uint8_t)dtype, .rank = (uint8_t)rank, .dim = {d0, d1, d2}};
    return t;
}

/* Appends op over axes (n of them) with operand type t; the result's type
 * follows from dim, dim2 and the group's size G; in place: the result in
 * the operand's buffer. */
static void add(made *m, int op, const uint8_t *axes, int n, rt_type t, int dim, int dim2,
                int64_t G, bool in_place, int dim_attr)
{
    rt_instr *in = &m->in[m->g.ninstr++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->nin = 1;
    in->in_t[0] = t;
    in->out_t = t;
    in->dim = dim_attr >= 0 ? dim_attr : dim;
    in->dim2 = dim2;
    in->naxes = (uint8_t)n;
    memcpy(in->axes, axes, (size_t)n);
    if (op == RT_OP_REDUCE_SCATTER)
        in->out_t.dim[dim] /= G;
    if (op == RT_OP_ALL_GATHER)
        in->out_t.dim[dim] *= G;
    if (op == RT_OP_ALL_TO_ALL) {
        in->out_t.dim[dim] /= G;
        in->out_t.dim[dim2] *= G;
    }
    for (int k = 0; k < 2; k++) {
        int32_t b = m->g.nbuf;
        if (k == 1 && in_place) {
            in->out = in->in[0];
            break;
        }
        int64_t bytes = rt_type_bytes(k ? &in->out_t : &in->in_t[0]);
        m->off[b] = m->g.arena_bytes;
        m->bytes[b] = bytes;
        m->g.arena_bytes += (bytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
        m->g.nbuf++;
        *(k ? &in->out : &in->in[0]) = b;
    }
}

/* Mesh a=2, b=3, c=1: groups of 3 (b), 6 (a, b and b, a), 2 (a) and 1
 * (c), every op and dtype. */
static void test_made(void)
{
    static made m;
    static char *names[] = {"a", "b", "c"};
    memset(&m, 0, sizeof m);
    m.p.naxes = 3;
    m.p.axis_size[0] = 2, m.p.axis_size[1] = 3, m.p.axis_size[2] = 1;
    for (int a = 0; a < 3; a++)
        m.p.axis_name[a] = names[a];
    m.p.stage_axis = -1;
    m.p.nstages = 1;
    m.p.init_module = -1;
    m.p.stage = &m.g;
    m.g.instr = m.in;
    m.g.buf_offset = m.off;
    m.g.buf_bytes = m.bytes;
    const uint8_t A[] = {0}, B[] = {1}, C[] = {2}, AB[] = {0, 1}, BA[] = {1, 0};
    const int dtypes[] = {RT_F32, RT_F16, RT_BF16, RT_I32};
    for (int k = 0; k < 4; k++) {
        int dt = dtypes[k];
        add(&m, RT_OP_ALL_REDUCE, B, 1, ty(dt, 1, 13, 0, 0), 0, 0, 3, false, RT_REDUCE_SUM);
        add(&m, RT_OP_ALL_REDUCE, AB, 2, ty(dt, 2, 5, 3, 0), 0, 0, 6, true, RT_REDUCE_SUM);
        add(&m, RT_OP_ALL_REDUCE, B, 1, ty(dt, 2, 7, 3, 0), 0, 0, 3, false, RT_REDUCE_MAX);
        add(&m, RT_OP_ALL_REDUCE, BA, 2, ty(dt, 1, 4, 0, 0), 0, 0, 6, true, RT_REDUCE_MAX);
        add(&m, RT_OP_ALL_REDUCE, C, 1, ty(dt, 1, 4, 0, 0), 0, 0, 1, false, RT_REDUCE_SUM);
        add(&m, RT_OP_ALL_REDUCE, A, 1, ty(dt, 0, 0, 0, 0), 0, 0, 2, true, RT_REDUCE_SUM);
        add(&m, RT_OP_REDUCE_SCATTER, B, 1, ty(dt, 2, 6, 4, 0), 0, 0, 3, false, -1);
        add(&m, RT_OP_REDUCE_SCATTER, B, 1, ty(dt, 3, 2, 6, 5), 1, 0, 3, false, -1);
        add(&m, RT_OP_REDUCE_SCATTER, AB, 2, ty(dt, 3, 3, 2, 12), 2, 0, 6, false, -1);
        add(&m, RT_OP_REDUCE_SCATTER, C, 1, ty(dt, 2, 2, 4, 0), 1, 0, 1, false, -1);
        add(&m, RT_OP_ALL_GATHER, B, 1, ty(dt, 2, 2, 3, 0), 0, 0, 3, false, -1);
        add(&m, RT_OP_ALL_GATHER, B, 1, ty(dt, 3, 2, 3, 5), 1, 0, 3, false, -1);
        add(&m, RT_OP_ALL_GATHER, BA, 2, ty(dt, 3, 2, 3, 1), 2, 0, 6, false, -1);
        add(&m, RT_OP_ALL_GATHER, C, 1, ty(dt, 2, 2, 3, 0), 1, 0, 1, false, -1);
        add(&m, RT_OP_ALL_TO_ALL, B, 1, ty(dt, 3, 6, 4, 3), 0, 1, 3, false, -1);
        add(&m, RT_OP_ALL_TO_ALL, B, 1, ty(dt, 3, 2, 6, 3), 1, 0, 3, false, -1);
        add(&m, RT_OP_ALL_TO_ALL, AB, 2, ty(dt, 3, 2, 3, 6), 2, 0, 6, false, -1);
        add(&m, RT_OP_ALL_TO_ALL, C, 1, ty(dt, 2, 2, 3, 0), 1, 0, 1, false, -1);
        add(&m, RT_OP_BROADCAST, A, 1, ty(dt, 2, 5, 2, 0), 0, 0, 2, false, -1);
        add(&m, RT_OP_BROADCAST, AB, 2, ty(dt, 1, 9, 0, 0), 0, 0, 6, true, -1);
    }
    long ops[RT_NOPS] = {0};
    run_plan(&m.p, "made-up instructions on mesh 2x3x1", ops);
    printf("made up: %ld all_reduce, %ld reduce_scatter, %ld all_gather, %ld all_to_all, "
           "%ld broadcast (ops times ranks)\n",
           ops[RT_OP_ALL_REDUCE], ops[RT_OP_REDUCE_SCATTER], ops[RT_OP_ALL_GATHER],
           ops[RT_OP_ALL_TO_ALL], ops[RT_OP_BROADCAST]);
    CHECK_INT(ops[RT_OP_ALL_TO_ALL], 4 * 4 * 6);
}

/* ---- failures ---- */

static rt_local_world *world(int64_t n, int timeout_ms)
{
    static char *names[] = {"x"};
    rt_mesh_desc mesh = {.naxes = 1, .size = {n}, .name = {names[0]}};
    su_status err;
    rt_local_world *w = rt_local_world_new(&mesh, timeout_ms, &err);
    CHECK(w != NULL);
    return w;
}

static void free_world(rt_local_world *w, int64_t n)
{
    for (int64_t r = 0; r < n; r++)
        rt_comm_free(rt_local_comm(w, r));
    rt_local_world_free(w);
}

/* The message of a 2-rank world's rank 0 doing one op alone (device: on
 * the fake device) into msg. */
static void alone(bool device, int op, char *msg, size_t n)
{
    rt_local_world *w = world(2, 50);
    rt_comm *c = rt_local_comm(w, 0);
    uint8_t axis = 0;
    rt_group *g = NULL;
    CHECK(rt_comm_group(c, &axis, 1, &g) == 0);
    float buf[8] = {0};
    fake f;
    fake_init(&f, NULL, 0);
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.nin = op != RT_OP_RECV;
    in.in_t[0] = in.out_t = ty(RT_F32, 1, 8, 0, 0);
    in.naxes = 1;
    in.dim = op == RT_OP_RECV; /* recv: from stage 1, rank 1 */
    int rc;
    if (op == RT_OP_RECV)
        rc = device ? rt_dcomm_p2p(c, &f.ops, &in, 1, 0, D(buf)) : rt_recv(c, 1, buf, 32);
    else
        rc = device ? rt_dcomm_collective(g, &f.ops, &in, D(buf), D(buf))
                    : rt_all_reduce(g, buf, 8, RT_F32);
    CHECK_INT(rc, -1);
    snprintf(msg, n, "%s", rt_comm_error(c));
    free(f.q);
    free_world(w, 2);
}

static void test_failures(void)
{
    char dev[RT_COMM_ERRLEN], host[RT_COMM_ERRLEN];
    alone(true, RT_OP_ALL_REDUCE, dev, sizeof dev);
    alone(false, RT_OP_ALL_REDUCE, host, sizeof host);
    CHECK_STR(dev, host);
    CHECK(strstr(dev, "timed out after 50 ms in all_reduce over axes (x)") != NULL);
    alone(true, RT_OP_RECV, dev, sizeof dev);
    alone(false, RT_OP_RECV, host, sizeof host);
    CHECK_STR(dev, host);
    CHECK_STR(dev, "recv on rank 0 from rank 1 timed out after 50 ms: rank 1 sent nothing");

    /* a failed peer: rank 1 aborts, rank 0's device collective says so */
    rt_local_world *w = world(2, 10000);
    uint8_t axis = 0;
    rt_group *g = NULL;
    CHECK(rt_comm_group(rt_local_comm(w, 0), &axis, 1, &g) == 0);
    rt_comm_abort(rt_local_comm(w, 1), "embedding id 7 is outside the table's 4 rows");
    float buf[4] = {0};
    fake f;
    fake_init(&f, NULL, 0);
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = RT_OP_ALL_GATHER;
    in.nin = 1;
    in.in_t[0] = ty(RT_F32, 1, 2, 0, 0);
    in.out_t = ty(RT_F32, 1, 4, 0, 0);
    in.naxes = 1;
    CHECK_INT(rt_dcomm_collective(g, &f.ops, &in, D(buf), D(buf + 2)), -1);
    CHECK_STR(rt_comm_error(rt_local_comm(w, 0)),
              "rank 1 failed: embedding id 7 is outside the table's 4 rows");
    free_world(w, 2);

    /* a device error: named with the op and the group */
    w = world(1, 1000);
    CHECK(rt_comm_group(rt_local_comm(w, 0), &axis, 1, &g) == 0);
    f.fail_sync = "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)";
    in.out_t = in.in_t[0];
    CHECK_INT(rt_dcomm_collective(g, &f.ops, &in, D(buf), D(buf + 2)), -1);
    CHECK_STR(rt_comm_error(rt_local_comm(w, 0)),
              "all_gather over axes (x) on the device: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal "
              "memory access was encountered)");
    free(f.q);
    free_world(w, 1);
}

/* ---- when the device path runs ---- */

static void test_usable(void)
{
    char why[256] = "";
    CHECK(rt_cuda_local_usable(1, 8, 4, true, why, sizeof why));
    CHECK(rt_cuda_local_usable(4, 1, 1, true, why, sizeof why)); /* one rank: one GPU used */
    CHECK(rt_cuda_local_usable(1, 256, 256, true, why, sizeof why));
    CHECK(!rt_cuda_local_usable(2, 4, 2, true, why, sizeof why));
    CHECK_STR(why, "the 4 ranks spread over 2 GPUs (rank r on GPU r mod 2), and GPU-to-GPU "
                   "access is not set up");
    CHECK(!rt_cuda_local_usable(1, 512, 257, true, why, sizeof why));
    CHECK_STR(why, "a group of 257 ranks (the kernel reads at most 256)");
    CHECK(!rt_cuda_local_usable(1, 4, 4, false, why, sizeof why));
    CHECK_STR(why, "this build has no NVRTC to compile the reduction kernel");
}

/* ---- the kernel ---- */

static void test_kernel(void)
{
    if (!rt_nvrtc_available()) {
        printf("skipped: no NVRTC in this build: the reduction kernel is not compiled\n");
        return;
    }
    rt_nvrtc_options o = {.narchs = 2, .arch = {80, 90}};
    su_buf err;
    su_buf_init(&err, NULL);
    rt_nvrtc_output out;
    bool ok = rt_nvrtc_compile(RT_CUDA_LOCAL_ENTRY, rt_cuda_local_source(), &o, &out, &err);
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  %s\n", err.s);
    for (int i = 0; ok && i < out.narchs; i++)
        CHECK(out.cubin_len[i] > 64 && !memcmp(out.cubin[i], "\x7f" "ELF", 4));
    char param[128];
    snprintf(param, sizeof param, ".param .align 8 .b8 %s_param_0[%zu]", RT_CUDA_LOCAL_ENTRY,
             sizeof(rt_dreduce));
    CHECK(ok && strstr(out.ptx, param) != NULL); /* the parameter is an rt_dreduce */
    CHECK(ok && !strstr(out.ptx, "__local_depot")); /* the addresses read in place */
    CHECK(ok && !out.log);                          /* no warnings */
    if (ok && out.log)
        fprintf(stderr, "  NVRTC: %s\n", out.log);
    printf("reduction kernel: cubins for sm_80 and sm_90 (%zu, %zu bytes), PTX %zu bytes\n",
           out.cubin_len[0], out.cubin_len[1], out.ptx_len);
    rt_nvrtc_output_free(&out);
    su_buf_free(&err);
}

int main(void)
{
    test_slices();
    test_usable();
    test_failures();
    test_made();
    test_plans();
    test_kernel();
    return CHECK_DONE();
}
