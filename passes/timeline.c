/* timeline.c: the estimated timeline of one step (`shardc --trace`), and
 * the hardware profiles it runs on.
 *
 * Each stage's program runs once (its ranks all run it), on two streams as
 * the CUDA backend issues them: compute ops in program order on the compute
 * stream, collectives, sends and recvs in program order on the
 * communication stream, each op starting when its stream is free and its
 * operands are made. Sends and recvs pair up between stages (peer and tag)
 * and start together, when both streams are free and the sent value is
 * made: the stages are advanced in turn, a stage stopping at a send or recv
 * until its peer reaches the matching op, which the static verifier has
 * proved always happens. Costs are in passes.h (pass_timeline). */
#include "passes.h"
#include "fuse.h"
#include "lane.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const pass_hw profiles[] = {
    {"a100", "NVIDIA A100 SXM 80GB, 8 per node, NVLink 3, 200 Gb/s HDR per GPU",
     312e12, 19.5e12, 2.039e12, 300e9, 25e9, 8, 4e-6, 10e-6, 25e-6, 0.7, 0.8, 0.8,
     81920.0 * 1048576, 0, {{0}}, 0, {0}, 0, {{0}}, 0, {{0}}, NULL},
    {"h100", "NVIDIA H100 SXM 80GB, 8 per node, NVLink 4, 400 Gb/s NDR per GPU",
     989e12, 67e12, 3.35e12, 450e9, 50e9, 8, 4e-6, 10e-6, 25e-6, 0.7, 0.8, 0.8,
     81559.0 * 1048576, 0, {{0}}, 0, {0}, 0, {{0}}, 0, {{0}}, NULL},
    {"h200", "NVIDIA H200 SXM 141GB, 8 per node, NVLink 4, 400 Gb/s NDR per GPU",
     989e12, 67e12, 4.8e12, 450e9, 50e9, 8, 4e-6, 10e-6, 25e-6, 0.7, 0.8, 0.8,
     143771.0 * 1048576, 0, {{0}}, 0, {0}, 0, {{0}}, 0, {{0}}, NULL},
};
#define NPROFILES (int)(sizeof profiles / sizeof profiles[0])

const pass_hw *pass_hw_find(const char *name)
{
    for (int i = 0; i < NPROFILES; i++)
        if (!strcmp(profiles[i].name, name))
            return &profiles[i];
    return NULL;
}

const char *pass_hw_names(void) { return "a100, h100, h200"; }

const pass_hw *pass_hw_default(void) { return &profiles[1]; }

typedef enum { ST_COMPUTE, ST_COMM } stream;

typedef struct event {
    int op;
    stream st;
    double start, dur;
    int peer;               /* send/recv: the peer stage; else -1 */
    int group;              /* a fused group's kernel: the group; else -1 */
} event;

typedef struct p2p {
    int64_t peer, tag;
} p2p;

/* A lane's records as lane_fill makes them, before pass_lane_roll: each its op
 * and its task's stamp (ir_op.task, .mb), malloc'd. */
typedef struct unrolled {
    lop *op;
    int32_t *op_of, *stamp, *ids;
    int32_t nids, capids;
    double *gt;             /* each group's time once timed (lane_fill) */
} unrolled;

struct pass_lane {
    const ir_module *m;     /* the program, for the trace's names (NULL once
                             * made by pass_lane_make) */
    const pass_fusion *f;   /* the groups the CUDA backend runs as one kernel each */
    const pass_memplan *mp; /* the stage's memory plan, or NULL (bucket_time) */
    lane_recs R;            /* its records (lane.h): the program's ops in
                             * order, but for those that are nothing where
                             * they stand (L_SKIP), rolled; each one's op in
                             * the program kept for the trace's events
                             * (sim.keep) */
    unrolled u;             /* the records unrolled, while lane_fill makes them */
    p2p *p2p;               /* malloc'd, the sends' and recvs' attributes */
    int32_t np2p, capp2p;
    int nvalues;            /* ready's entries: the program's value ids */
    lane_cursor c;          /* the record to issue, read back from R */
    double clock[2];        /* when each stream is free */
    double *ready;          /* per value id: when it is made */
    event *ev;              /* NULL: none kept (sim.keep, for the trace) */
    int nev, cap;
    /* its busy and exposed times, summed as the events come (account):
     * the sums, the compute events a later comm event may overlap, and
     * the comm events a later compute event may (malloc'd) */
    pass_stage_time t;
    struct span *cq, *pend;
    int ncq, capcq, hcq, npend, cappend, hpend;
    int64_t rank0;          /* the stage's first rank */
    pass_fusion own;        /* the groups lane_fusion made (pass_lane_make's) */
};
typedef struct pass_lane lane;

/* An event's span, for its lane's times (account). */
typedef struct span {
    double start, dur;
    double covered;         /* a comm event's: the compute events' overlap so far */
} span;

typedef struct sim {
    ir_module *const *st;
    int n;
    bool keep;              /* the events kept (for the trace's JSON) */
    const pass_hw *hw;
    const pass_fusion *given; /* [n], the plan's groups; NULL: made here */
    const pass_memplan *mp;   /* [n], the plan's memory plans; NULL: none */
    lane **lane;            /* [n] */
    pass_fusion *fus;       /* [n], each stage's made here (freed with the arena) */
    su_arena arena;
    jmp_buf *oom;
} sim;

static int64_t stride_of(const ir_mesh *me, int axis)
{
    int64_t s = 1;
    for (int a = me->naxes - 1; a > axis; a--)
        s *= me->size[a];
    return s;
}

static int64_t coord_of(const ir_mesh *me, int64_t r, int axis)
{
    return r / stride_of(me, axis) % me->size[axis];
}

/* Whether the group over op's axes holding rank r stays inside one node:
 * its lowest and highest ranks are on the same node. */
static bool group_in_node(const ir_module *m, const ir_op *op, int64_t r, int node)
{
    int64_t lo = r, hi = r;
    for (int k = 0; k < op->a->naxes; k++) {
        int ax = op->a->axes[k];
        int64_t s = stride_of(&m->mesh, ax), c = coord_of(&m->mesh, r, ax);
        lo -= c * s;
        hi += (m->mesh.size[ax] - 1 - c) * s;
    }
    return lo / node == hi / node;
}

/* The rank of stage s that shares r's other coordinates. */
static int64_t peer_rank(const ir_module *m, int64_t r, int s)
{
    int ax = m->pipe.axis;
    int64_t str = stride_of(&m->mesh, ax);
    return r + ((int64_t)s - coord_of(&m->mesh, r, ax)) * str;
}

static double value_bytes(const ir_value *v)
{
    return (double)ir_type_numel(&v->type) * ir_dtype_size(v->type.dtype);
}

/* Whether op's kernel runs on tensor cores: a 16-bit matmul (cuBLASLt),
 * or a 16-bit attention or op of its backward that the WMMA kernels take
 * (pass_attn_tensor_cores; the built-in profiles' GPUs are sm_80 or newer,
 * and a --hw profile's is taken to be). f32 attention and its backward
 * of such heads run on them too, each product as six of bf16 parts
 * (pass_attn_x3: a sixth of their peak). The other attention kernels
 * compute in f32 FMAs whatever their dtype (codegen/README.md), so their
 * peak is f32_flops. */
static bool on_tensor_cores(const ir_op *op)
{
    if (op->code == IR_ATTENTION || ir_attn_layout_operands(op->code))
        return pass_attn_tensor_cores(op); /* never attn_delta's, a row kernel */
    if (op->code != IR_MATMUL)
        return false;
    ir_dtype t = op->in[0]->type.dtype;
    return t == IR_F16 || t == IR_BF16;
}

/* The fraction a table of n points (x, fraction), x increasing, gives x:
 * interpolated on log x and held at its ends; without points, dflt. */
static double table_eff(const double (*pt)[2], int n, double x, double dflt)
{
    if (n <= 0)
        return dflt;
    if (x <= pt[0][0])
        return pt[0][1];
    for (int i = 1; i < n; i++)
        if (x <= pt[i][0]) {
            double x0 = log(pt[i - 1][0]), x1 = log(pt[i][0]);
            double t = (log(x) - x0) / (x1 - x0);
            return pt[i - 1][1] + t * (pt[i][1] - pt[i - 1][1]);
        }
    return pt[n - 1][1];
}

double pass_hw_link_eff(const pass_hw *hw, bool in_node, double bytes)
{
    return in_node ? table_eff(hw->intra_eff, hw->nintra_eff, bytes, hw->link_eff)
                   : table_eff(hw->inter_eff, hw->ninter_eff, bytes, hw->link_eff);
}

static double link_time(const pass_hw *hw, bool in_node, double bytes)
{
    double bw = (in_node ? hw->intra_bw : hw->inter_bw) * pass_hw_link_eff(hw, in_node, bytes);
    return (in_node ? hw->intra_lat_s : hw->inter_lat_s) + bytes / bw;
}

/* The fraction of its peak a matmul of these FLOPs reaches: the
 * profile's table (matmul_eff), interpolated on log FLOPs and held at its
 * ends; without one, compute_eff. */
double pass_hw_matmul_eff(const pass_hw *hw, double flops)
{
    return table_eff(hw->matmul_eff, hw->nmatmul_eff, flops, hw->compute_eff);
}

double pass_hw_mem_eff(const pass_hw *hw, pass_kclass c)
{
    return c >= 0 && c < PASS_KC_COUNT && hw->class_mem_eff[c] > 0 ? hw->class_mem_eff[c]
                                                                    : hw->mem_eff;
}

/* Attention's kernels and its backward's, which take attn_eff (not
 * attn_delta, a row kernel). */
static bool is_attention(const ir_op *op)
{
    return (op->code == IR_ATTENTION || op->code == IR_ATTN_PROBS ||
            ir_attn_layout_operands(op->code)) && op->code != IR_ATTN_DELTA;
}

/* Each op code's kernel class, over its last dim or another
 * (pass_op_kclass compares names: looked up for every op of every
 * microbatch, 4% of a deep pipeline's report) */
static pass_kclass kclass_of[IR_NOPS][2];
static pthread_once_t kclass_once = PTHREAD_ONCE_INIT;

static void kclass_init(void)
{
    for (int c = 0; c < IR_NOPS; c++)
        for (int last = 0; last < 2; last++)
            kclass_of[c][last] = pass_op_kclass(ir_ops[c].name, last);
}

/* Op's kernel class (passes.h), as a plan's instruction of it is classed. */
static pass_kclass op_class(const ir_op *op)
{
    bool last = !(ir_ops[op->code].attrs & IR_A_AXIS) || op->nin < 1 ||
                op->a->axis == op->in[0]->type.rank - 1;
    pthread_once(&kclass_once, kclass_init);
    return kclass_of[op->code][last];
}

/* A kernel's seconds: launch + the longer of its FLOPs at the peak of
 * its class (tensor cores for a 16-bit matmul; a matmul at
 * matmul_eff of its size, attention at attn_eff, anything else at
 * compute_eff) and its bytes at its share of the memory bandwidth
 * (cuBLASLt's and attention's mem_eff, the others their class's,
 * pass_hw_mem_eff). op: the kernel's main op, which names its class
 * (NULL: an elementwise or row kernel, of class kc). A matmul of parts is
 * three calls, its work and bytes as below. */
static double kernel_time(const pass_hw *hw, const ir_op *op, pass_kclass kc, double flops,
                          double bytes)
{
    double peak = op && on_tensor_cores(op) ? hw->tc_flops : hw->f32_flops, launches = 1;
    if (op && (pass_attn_x3(op) || (op->code == IR_MATMUL && op->a->parts)))
        peak = hw->tc_flops / 6; /* f32 as bf16 parts: six products on tensor cores */
    if (op && op->code == IR_MATMUL && op->a->parts) {
        /* three calls (runtime/cuda/cuda_blas.h): the parts read 3 + 2 + 1
         * thirds, twice once; the second and third read the result and
         * write it again */
        launches = 3;
        bytes += value_bytes(op->in[0]) + value_bytes(op->in[1]) + 4 * value_bytes(op->res[0]);
    }
    double eff = hw->compute_eff, mem_eff = pass_hw_mem_eff(hw, kc);
    if (op && op->code == IR_MATMUL)
        eff = pass_hw_matmul_eff(hw, flops);
    else if (op && is_attention(op) && hw->attn_eff > 0)
        eff = hw->attn_eff;
    if (op && (op->code == IR_MATMUL || is_attention(op)))
        mem_eff = hw->mem_eff;
    double tf = flops / (peak * eff);
    double tm = bytes / (hw->mem_bw * mem_eff);
    return launches * hw->launch_s + (tf > tm ? tf : tm);
}

/* The byte offset of v's buffer in L's memory plan; -1: not known. */
static int64_t placed_at(const lane *L, const ir_value *v)
{
    const pass_memplan *mp = L->mp;
    if (!mp || v->id < 0 || v->id >= mp->nvalues || mp->buf[v->id] < 0)
        return -1;
    return mp->offset[mp->buf[v->id]];
}

/* The seconds of an insert into a gradients' bucket, or an extract out
 * of it, as the CUDA backend runs them (runtime/exec/cuda.c, run_bucket):
 * nothing where the value is its columns of a one-row bucket (the memory
 * plan computed the gradient there, or made the extracted gradient a
 * view of them: memplan.c's views), else one copy of the value's bytes;
 * and an insert whose result is not in its bucket's buffer copies the
 * bucket first. Without the memory plan, the value is copied and the
 * bucket updated in place (as memplan.c places a bucket's inserts). */
static double bucket_time(const pass_hw *hw, const lane *L, const ir_op *op, pass_kclass kc)
{
    const ir_value *b = op->in[0], *out = op->res[0];
    const ir_value *v = op->code == IR_INSERT ? op->in[1] : out;
    int64_t ob = placed_at(L, b), oo = placed_at(L, out), ov = placed_at(L, v);
    int64_t at = op->a->offset * ir_dtype_size(b->type.dtype);
    double bytes = 0;
    int copies = 0;
    if (op->code == IR_INSERT && ob >= 0 && oo >= 0 && ob != oo) {
        bytes += 2 * value_bytes(b);
        copies++;
    }
    bool row = b->type.rank == 2 && b->type.dim[0] == 1;
    bool view = row && ob >= 0 && oo >= 0 && ov >= 0 &&
                (op->code == IR_INSERT ? ov == oo + at : oo == ob + at);
    if (!view) {
        bytes += 2 * value_bytes(v);
        copies++;
    }
    if (!copies)
        return 0;
    return (copies - 1) * hw->launch_s + kernel_time(hw, NULL, kc, 0, bytes);
}

/* The seconds op takes on its stream, by the rules of passes.h. */
static double op_time(const pass_hw *hw, const lane *L, const ir_op *op)
{
    const ir_module *m = L->m;
    ir_opclass cls = ir_ops[op->code].cls;
    if (cls == IR_C_P2P) {
        const ir_value *v = op->code == IR_SEND ? op->in[0] : op->res[0];
        int64_t peer = peer_rank(m, L->rank0, (int)op->a->peer);
        return link_time(hw, L->rank0 / hw->node_gpus == peer / hw->node_gpus, value_bytes(v));
    }
    if (cls == IR_C_COMM) {
        double bytes = pass_op_bytes(m, op);
        if (bytes == 0)
            return 0;
        return link_time(hw, group_in_node(m, op, L->rank0, hw->node_gpus), bytes);
    }
    if (op->code == IR_INSERT || op->code == IR_EXTRACT)
        return bucket_time(hw, L, op, op_class(op));
    double bytes = op->nres ? value_bytes(op->res[0]) : 0;
    for (int i = 0; i < op->nin; i++)
        bytes += value_bytes(op->in[i]);
    return kernel_time(hw, op, op_class(op), pass_op_flops(op), bytes);
}

/* The value whose bytes v is: through reshapes and renames of its
 * dtype and size (views of one buffer). */
static const ir_value *storage_of(const ir_value *v)
{
    while (v->def && (v->def->code == IR_RESHAPE || v->def->code == IR_CONSTRAIN) &&
           v->def->nin == 1 && v->def->in[0]->type.dtype == v->type.dtype &&
           ir_type_numel(&v->def->in[0]->type) == ir_type_numel(&v->type))
        v = v->def->in[0];
    return v;
}

/* What fused group g's kernel does: all its ops' FLOPs, and only the
 * bytes of the values it reads from outside and stores (the rest stay
 * in registers). A norm's row kernel with column sums (fuse.h's cols)
 * reads each buffer once: its column sums read reshapes of the norm's
 * dy, x and statistics (norm_cols.c), each element by the thread that
 * has just read it for the row, so from the L1 cache. (A cross_entropy's
 * kernel with its gradient reads the logits twice too, but a whole row
 * of them apart: both reads count.) */
static void group_work(const ir_module *m, const pass_fgroup *g, double *flops, double *bytes)
{
    *flops = *bytes = 0;
    for (int i = 0; i < g->nops; i++)
        *flops += pass_op_flops(IR_OP(m, g->ops[i]));
    if (g->kind == PASS_FUSE_ATTN_PAIR)
        *flops = pass_attn_pair_flops(IR_OP(m, g->reduce));
    if (g->kind == PASS_FUSE_ATTN_LSE) /* the lse from the forward's own sums */
        *flops = pass_op_flops(IR_OP(m, g->ops[0]));
    for (int i = 0; i < g->nin; i++) {
        bool again = false;
        for (int j = 0; j < i && !again && g->ncols; j++)
            again = storage_of(g->in[j]) == storage_of(g->in[i]);
        if (!again)
            *bytes += value_bytes(g->in[i]);
    }
    for (int i = 0; i < g->nout; i++)
        *bytes += value_bytes(g->out[i]);
}

/* Fused group g's main op, which names its kernel's class: cuBLASLt's
 * for a matmul and its epilogue, attention's for its kernels; NULL for
 * the others, memory-bound kernels of class *kc (the highest of their
 * ops'). */
static const ir_op *group_class(const ir_module *m, const pass_fgroup *g, pass_kclass *kc)
{
    *kc = PASS_KC_ELEMENTWISE;
    if (g->kind == PASS_FUSE_MATMUL || g->kind == PASS_FUSE_ATTN_PAIR)
        return IR_OP(m, g->reduce);
    if (g->kind == PASS_FUSE_ATTN_LSE)
        return IR_OP(m, g->ops[0]);
    for (int i = 0; i < g->nops; i++) {
        pass_kclass c = op_class(IR_OP(m, g->ops[i]));
        *kc = c > *kc ? c : *kc;
    }
    return NULL;
}

/* The seconds fused group g takes: one kernel (cuBLASLt's, for a matmul
 * and its epilogue) doing group_work. */
static double group_time(const pass_hw *hw, const ir_module *m, const pass_fgroup *g)
{
    double flops, bytes;
    group_work(m, g, &flops, &bytes);
    pass_kclass kc;
    const ir_op *main = group_class(m, g, &kc);
    return kernel_time(hw, main, kc, flops, bytes);
}

/* Ops that run no kernel and move nothing: params and states (on the
 * device from the first step on), and constrain and reshape (the same
 * bytes, a view). The other sources cost a kernel each step, as the CUDA
 * backend runs them: an input made on the device from the seed (shardrun
 * without --inputs; one from the host is a copy over PCIe instead, which
 * the estimate does not time), a const filled by a memset. */
static bool is_free(const ir_op *op)
{
    return op->code == IR_PARAM || op->code == IR_STATE || op->code == IR_CONSTRAIN ||
           op->code == IR_RESHAPE;
}

/* Appends span x to the queue q (n entries from its head h, cap). */
static void span_push(span **q, int *h, int *n, int *cap, span x, jmp_buf *oom)
{
    if (*h > 0 && *h >= *n / 2) { /* the head's space back */
        memmove(*q, *q + *h, (size_t)(*n - *h) * sizeof **q);
        *n -= *h;
        *h = 0;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *q = su_xrealloc(oom, *q, (size_t)*cap * sizeof **q);
    }
    (*q)[(*n)++] = x;
}

/* Comm event e, no compute event to overlap it any more: its exposed time. */
static void close_comm(lane *L, const span *e)
{
    L->t.exposed_s += e->dur - e->covered;
}

/* An event's share of L's times: the compute and the communication
 * stream's busy seconds, and the part of each communication event that
 * no compute event overlaps (exposed). A compute event's overlap with
 * each comm event it meets is added to that event's in the compute
 * events' order, each comm event's exposed time in the comm events' order
 * once no later compute event can meet it. Compute events start at or
 * after the compute stream's clock, comm events after the comm stream's
 * (no two of a stream overlap), so each queue keeps only what a later
 * event of the other stream may still overlap. */
static void account(sim *S, lane *L, stream st, double start, double dur)
{
    if (st == ST_COMPUTE) {
        L->t.compute_s += dur;
        double end = start + dur;
        for (int i = L->hpend; i < L->npend; i++) {
            span *e = &L->pend[i];
            double a = e->start, b = e->start + e->dur;
            if (start >= b)
                continue;
            double lo = start > a ? start : a, hi = end < b ? end : b;
            if (hi > lo)
                e->covered += hi - lo;
        }
        while (L->hpend < L->npend && L->pend[L->hpend].start + L->pend[L->hpend].dur <= end)
            close_comm(L, &L->pend[L->hpend++]); /* later compute events start after */
        span_push(&L->cq, &L->hcq, &L->ncq, &L->capcq, (span){start, dur, 0}, S->oom);
        return;
    }
    L->t.comm_s += dur;
    span e = {start, dur, 0};
    double a = start, b = start + dur;
    for (int i = L->hcq; i < L->ncq; i++) {
        const span *c = &L->cq[i];
        if (c->start >= b) /* and every later one */
            break;
        double lo = c->start > a ? c->start : a;
        double hi = c->start + c->dur < b ? c->start + c->dur : b;
        if (hi > lo)
            e.covered += hi - lo;
    }
    while (L->hcq < L->ncq && L->cq[L->hcq].start + L->cq[L->hcq].dur <= b)
        L->hcq++; /* later comm events start at or after b */
    span_push(&L->pend, &L->hpend, &L->npend, &L->cappend, e, S->oom);
    while (L->hpend < L->npend &&
           L->pend[L->hpend].start + L->pend[L->hpend].dur <= L->clock[ST_COMPUTE])
        close_comm(L, &L->pend[L->hpend++]);
}

/* L's times as they come, freed. */
static void account_free(lane *L)
{
    free(L->cq);
    free(L->pend);
    L->cq = L->pend = NULL;
    L->ncq = L->capcq = L->hcq = L->npend = L->cappend = L->hpend = 0;
}

static void record(sim *S, lane *L, int op, stream st, double start, double dur, int peer,
                   int group)
{
    account(S, L, st, start, dur);
    if (!S->keep)
        return;
    if (L->nev == L->cap) {
        L->cap = L->cap ? 2 * L->cap : 64;
        event *ev = su_alloc(&S->arena, (size_t)L->cap * sizeof *ev);
        if (L->nev)
            memcpy(ev, L->ev, (size_t)L->nev * sizeof *ev);
        L->ev = ev;
    }
    L->ev[L->nev++] = (event){op, st, start, dur, peer, group};
}

/* When the values L's record at its cursor waits for are all made, from t
 * on. */
static double ready_from(const lane *L, double t)
{
    for (int i = 0; i < L->c.rec.nin; i++)
        if (L->ready[L->c.ids[i]] > t)
            t = L->ready[L->c.ids[i]];
    return t;
}

/* Issues the local op at L's cursor (not a send or recv): a fused group's
 * kernel at its anchor, on the compute stream once what it reads is
 * made, every value of its ops made when it ends (its other ops cost
 * nothing where they stand: fuse.h, no op outside the group reads them
 * before the anchor); an op of its own on its stream after its operands;
 * one that runs nothing makes its value when its operands are made. */
static void issue(sim *S, lane *L)
{
    const lop *o = &L->c.rec;
    int32_t nout = L->c.nout;
    if (o->kind == L_PASS) {
        if (nout)
            L->ready[L->c.ids[o->nin]] = ready_from(L, 0);
        return;
    }
    stream st = o->kind == L_GROUP ? ST_COMPUTE : (stream)o->st;
    double start = o->kind == L_GROUP ? ready_from(L, L->clock[ST_COMPUTE]) : ready_from(L, 0);
    if (L->clock[st] > start)
        start = L->clock[st];
    L->clock[st] = start + o->dur;
    for (int r = 0; r < nout; r++)
        L->ready[L->c.ids[o->nin + r]] = start + o->dur;
    record(S, L, L->c.op, st, start, o->dur, -1, o->kind == L_GROUP ? o->aux : -1);
}

/* Whether the send or recv at stage s's next op meets its peer's next op;
 * if so, both run. */
static bool rendezvous(sim *S, int s)
{
    lane *A = S->lane[s];
    const lop *a = &A->c.rec;
    const p2p *pa = &A->p2p[a->aux];
    int t = (int)pa->peer;
    if (t < 0 || t >= S->n)
        return false;
    lane *B = S->lane[t];
    if (B->c.next >= B->R.n)
        return false;
    const lop *b = &B->c.rec;
    if (b->kind != L_P2P || b->code == a->code || B->p2p[b->aux].peer != s ||
        B->p2p[b->aux].tag != pa->tag)
        return false;
    lane *snd = a->code == IR_SEND ? A : B, *rcv = a->code == IR_SEND ? B : A;
    const lop *so = a->code == IR_SEND ? a : b, *ro = a->code == IR_SEND ? b : a;
    double start = ready_from(snd, 0);
    if (snd->clock[ST_COMM] > start)
        start = snd->clock[ST_COMM];
    if (rcv->clock[ST_COMM] > start)
        start = rcv->clock[ST_COMM];
    double dur = so->dur; /* op_time of the send */
    snd->clock[ST_COMM] = rcv->clock[ST_COMM] = start + dur;
    rcv->ready[rcv->c.ids[ro->nin]] = start + dur;
    record(S, snd, snd->c.op, ST_COMM, start, dur, (int)snd->p2p[so->aux].peer, -1);
    record(S, rcv, rcv->c.op, ST_COMM, start, dur, (int)rcv->p2p[ro->aux].peer, -1);
    pass_lane_cursor_step(&snd->R, &snd->c);
    pass_lane_cursor_step(&rcv->R, &rcv->c);
    return true;
}

/* Advances stage s as far as it goes; whether it moved. */
static bool advance(sim *S, int s)
{
    lane *L = S->lane[s];
    bool moved = false;
    while (L->c.next < L->R.n) {
        if (L->c.rec.kind == L_P2P) {
            if (!rendezvous(S, s))
                break;
        } else {
            issue(S, L);
            pass_lane_cursor_step(&L->R, &L->c);
        }
        moved = true;
    }
    return moved;
}

static bool simulate(sim *S, su_buf *err)
{
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < S->n; s++)
            moved = advance(S, s) || moved;
    }
    for (int s = 0; s < S->n; s++) {
        const lane *L = S->lane[s];
        if (L->c.next < L->R.n) {
            const lop *o = &L->c.rec;
            p2p none = {0, 0}, *q = o->kind == L_P2P ? &L->p2p[o->aux] : &none;
            su_buf_printf(err, "internal error: the timeline stops: stage %d waits at %s %d "
                          "(%s, peer %lld, tag %lld)", s, L->R.op_of ? "op" : "its timed op",
                          L->c.op, ir_ops[o->code].name,
                          (long long)q->peer, (long long)q->tag);
            return false;
        }
    }
    return true;
}

static int64_t first_rank(const ir_module *m, int s)
{
    int64_t ranks = ir_mesh_ranks(&m->mesh);
    for (int64_t r = 0; r < ranks; r++)
        if (pass_rank_in_stage(m, r, s))
            return r;
    return 0;
}

/* Starts the next element of traceEvents. */
static void next_event(su_buf *b, bool *first)
{
    su_buf_puts(b, *first ? "\n" : ",\n");
    *first = false;
}

static void json_event(su_buf *b, bool *first, const sim *S, int s, int64_t rank,
                       const event *e)
{
    const ir_module *m = S->lane[s]->m;
    const ir_op *op = IR_OP(m, e->op);
    ir_opclass cls = ir_ops[op->code].cls;
    const char *cat = cls == IR_C_COMM     ? "collective"
                      : cls == IR_C_P2P    ? "p2p"
                      : cls == IR_C_SOURCE ? "source" /* as shardrun --trace names them */
                                           : "compute";
    next_event(b, first);
    if (e->group >= 0) {
        const pass_fgroup *g = &S->lane[s]->f->groups[e->group];
        double flops, bytes;
        group_work(m, g, &flops, &bytes);
        su_buf_printf(b, "{\"name\": \"%s\", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": %lld, "
                      "\"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"op\": %d, \"ops\": %d",
                      g->name, (long long)rank, e->start * 1e6, e->dur * 1e6, e->op, g->nops);
        if (op->loc.line > 0)
            su_buf_printf(b, ", \"line\": %d", op->loc.line);
        su_buf_printf(b, ", \"phase\": \"%s\", \"flops\": %.0f, \"bytes\": %.0f",
                      ir_phase_name((ir_phase)op->phase), flops, bytes);
        pass_kclass kc;
        if (!group_class(m, g, &kc)) /* the class whose mem_eff it takes */
            su_buf_printf(b, ", \"class\": \"%s\"", pass_kclass_name(kc));
        su_buf_puts(b, "}}");
        return;
    }
    su_buf_printf(b, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %lld, "
                  "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"op\": %d",
                  ir_ops[op->code].name, cat, (long long)rank, (int)e->st, e->start * 1e6,
                  e->dur * 1e6, e->op);
    if (op->nres)
        su_buf_printf(b, ", \"value\": \"%%%d\"", op->res[0]->id);
    if (op->loc.line > 0)
        su_buf_printf(b, ", \"line\": %d", op->loc.line);
    su_buf_printf(b, ", \"phase\": \"%s\"", ir_phase_name((ir_phase)op->phase));
    if (cls == IR_C_P2P) {
        const ir_value *v = op->code == IR_SEND ? op->in[0] : op->res[0];
        su_buf_printf(b, ", \"peer_stage\": %d, \"bytes\": %.0f", e->peer, value_bytes(v));
    } else if (cls == IR_C_COMM) {
        su_buf_printf(b, ", \"bytes_sent\": %.0f", pass_op_bytes(m, op));
    } else {
        su_buf_printf(b, ", \"flops\": %.0f", pass_op_flops(op));
        if (cls == IR_C_SOURCE) /* what its kernel writes */
            su_buf_printf(b, ", \"bytes\": %.0f", value_bytes(op->res[0]));
        if (op->code != IR_MATMUL && !is_attention(op)) /* as kernel_time classes it */
            su_buf_printf(b, ", \"class\": \"%s\"", pass_kclass_name(op_class(op)));
    }
    su_buf_puts(b, "}}");
}

static void json_names(su_buf *b, bool *first, int64_t rank, int s, int nstages)
{
    next_event(b, first);
    if (nstages > 1)
        su_buf_printf(b, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": "
                      "{\"name\": \"rank %lld (stage %d)\"}}", (long long)rank, (long long)rank, s);
    else
        su_buf_printf(b, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": "
                      "{\"name\": \"rank %lld\"}}", (long long)rank, (long long)rank);
    su_buf_printf(b, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %lld, "
                  "\"args\": {\"sort_index\": %lld}}", (long long)rank, (long long)rank);
    static const char *const names[2] = {"compute", "communication"};
    for (int t = 0; t < 2; t++)
        su_buf_printf(b, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %d, "
                      "\"args\": {\"name\": \"%s\"}}", (long long)rank, t, names[t]);
}

static void write_json(const sim *S, int64_t max_events, double step, su_buf *b)
{
    const ir_module *m0 = S->st[0];
    int64_t ranks = ir_mesh_ranks(&m0->mesh), total = 0;
    if (ranks < 1)
        ranks = 1;
    for (int s = 0; s < S->n; s++)
        total += (int64_t)S->lane[s]->nev * (ranks / S->n);
    bool all = total <= max_events, first = true;
    su_buf_printf(b, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"shardc "
                  "estimate\", \"hardware\": \"%s\", \"hardware_desc\": \"%s\", "
                  "\"step_ms\": %.6f, \"ranks\": \"%s\"},\n\"traceEvents\": [",
                  S->hw->name, S->hw->desc, step * 1e3, all ? "all" : "the first of each stage");
    for (int64_t r = 0; r < ranks; r++) {
        int s = 0;
        while (s < S->n - 1 && !pass_rank_in_stage(S->st[s], r, s))
            s++;
        if (!all && r != S->lane[s]->rank0)
            continue;
        json_names(b, &first, r, s, S->n);
        for (int i = 0; i < S->lane[s]->nev; i++)
            json_event(b, &first, S, s, r, &S->lane[s]->ev[i]);
    }
    su_buf_puts(b, "\n]}\n");
}

typedef struct timeline_run {
    sim S;
    int64_t max_events;
    su_buf *json, *err;
    double *step_s;
    bool ok;
    pass_stage_time *stats; /* NULL: none */
} timeline_run;

/* Lane L's groups: f, the plan's, or (a plan without kernels, f NULL or
 * another program's) its own, into own. */
static bool lane_fusion(lane *L, const pass_fusion *f, pass_fusion *own, su_buf *err)
{
    if (f && f->nops == L->m->ops.n) {
        L->f = f;
        return true;
    }
    L->f = own;
    return pass_fuse(L->m, own, err);
}

/* Appends value id v to u's ids. */
static void put_id(unrolled *u, int32_t v, jmp_buf *oom)
{
    if (u->nids == u->capids) {
        int64_t cap = u->capids ? 2 * (int64_t)u->capids : 1024;
        if (cap > INT32_MAX)
            su_oom(oom);
        u->ids = su_xrealloc(oom, u->ids, (size_t)cap * sizeof *u->ids);
        u->capids = (int32_t)cap;
    }
    u->ids[u->nids++] = v;
}

/* Op op's operands' ids, then its first result's, into record o (an op
 * that is not a group's waits for its operands and makes its first
 * result). */
static void put_op(unrolled *u, lop *o, const ir_op *op, jmp_buf *oom)
{
    for (int k = 0; k < op->nin; k++)
        put_id(u, op->in[k]->id, oom);
    o->nin = op->nin;
    if (op->nres)
        put_id(u, op->res[0]->id, oom);
}

static void unrolled_free(unrolled *u)
{
    free(u->op);
    free(u->op_of);
    free(u->stamp);
    free(u->ids);
    free(u->gt);
    memset(u, 0, sizeof *u);
}

/* Lane s's records (lop), before the stages run in step: each op's kind,
 * what it waits for and makes, and what it takes where it runs (a
 * send's, a group's at its anchor, an op's of its own that costs
 * something), made unrolled and then rolled (pass_lane_roll); and its events'
 * count into L->cap: one per send and receive, per group (at its anchor)
 * and per other op that costs something (issue, rendezvous), so that its
 * list is made once, not grown (a long pipeline's lists ran to millions
 * of events, each doubling copied and on fresh pages; record() would
 * still grow it were this ever short). The lanes are made at once
 * (pass_for_stages), a third of the timeline of a deep pipeline. */
static void lane_fill(lane *L, const pass_hw *hw, bool ops, su_buf *err)
{
    const ir_module *m = L->m;
    unrolled *u = &L->u;
    int32_t nrec = 0; /* a record per op but a group's other than its anchor */
    for (int i = 0; i < m->ops.n; i++) {
        int g = L->f ? L->f->group_of[i] : -1;
        nrec += g < 0 || L->f->groups[g].anchor == i ||
                ir_ops[IR_OP(m, i)->code].cls == IR_C_P2P;
    }
    u->op = su_xmalloc(err->oom, ((size_t)nrec + 1) * sizeof *u->op);
    u->stamp = su_xmalloc(err->oom, ((size_t)nrec + 1) * 2 * sizeof *u->stamp);
    /* each group's time once timed (NaN: not yet): a held stage's middle
     * microbatch's copy of a group takes its twin's (pass_fuse_twin) */
    int ng = L->f && L->f->twin ? L->f->ngroups : 0;
    double *gt = u->gt = ng ? su_xmalloc(err->oom, (size_t)ng * sizeof *gt) : NULL;
    for (int g = 0; g < ng; g++)
        gt[g] = NAN;
    if (ops)
        u->op_of = su_xmalloc(err->oom, ((size_t)nrec + 1) * sizeof *u->op_of);
    int n = 0, k = 0;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        int g = L->f ? L->f->group_of[i] : -1;
        if (g >= 0 && L->f->groups[g].anchor != i && ir_ops[op->code].cls != IR_C_P2P)
            continue; /* L_SKIP */
        if (u->op_of)
            u->op_of[k] = i;
        u->stamp[2 * k] = op->task;
        u->stamp[2 * k + 1] = op->mb;
        lop *o = &u->op[k++];
        memset(o, 0, sizeof *o);
        o->code = (uint16_t)op->code;
        o->in = u->nids;
        if (ir_ops[op->code].cls == IR_C_P2P) {
            n++;
            o->kind = L_P2P;
            if (L->np2p == L->capp2p) {
                int32_t cap = L->capp2p ? 2 * L->capp2p : 256;
                L->p2p = su_xrealloc(err->oom, L->p2p, (size_t)cap * sizeof *L->p2p);
                L->capp2p = cap;
            }
            o->aux = L->np2p;
            L->p2p[L->np2p++] = (p2p){op->a->peer, ir_p2p_tag(op)};
            if (op->code == IR_SEND)
                o->dur = op_time(hw, L, op);
            put_op(u, o, op, err->oom);
        } else if (g >= 0) { /* its anchor */
            const pass_fgroup *G = &L->f->groups[g];
            n++;
            o->kind = L_GROUP;
            o->aux = G->id;
            int t = gt ? pass_fuse_twin(m, L->f, g) : -1;
            o->dur = t >= 0 && !isnan(gt[t]) ? gt[t] : group_time(hw, m, G);
            if (gt)
                gt[g] = o->dur;
            for (int j = 0; j < G->nin; j++)
                put_id(u, G->in[j]->id, err->oom);
            o->nin = G->nin;
            for (int j = 0; j < G->nops; j++) {
                const ir_op *x = IR_OP(m, G->ops[j]);
                for (int r = 0; r < x->nres; r++)
                    put_id(u, x->res[r]->id, err->oom);
            }
        } else {
            double dur = 0;
            bool pass = is_free(op);
            if (!pass) {
                n++;
                dur = op_time(hw, L, op);
                /* nothing runs: a view of its bucket */
                pass = dur == 0 && (op->code == IR_INSERT || op->code == IR_EXTRACT);
            }
            o->kind = pass ? L_PASS : L_RUN;
            o->st = ir_ops[op->code].cls == IR_C_COMM ? ST_COMM : ST_COMPUTE;
            o->dur = dur;
            put_op(u, o, op, err->oom);
        }
    }
    L->nvalues = m->next_id + 1;
    L->cap = n;
    pass_lane_roll(&L->R, u->op, nrec, u->ids, u->nids, u->op_of, u->stamp, err->oom);
    unrolled_free(u);
    /* its exact size: a deep pipeline's lanes are all kept until they run
     * in step */
    if (L->np2p < L->capp2p) {
        L->p2p = su_xrealloc(err->oom, L->p2p, ((size_t)L->np2p + 1) * sizeof *L->p2p);
        L->capp2p = L->np2p + 1;
    }
}

/* The timeline's stage s: its lane, made beside the others'
 * (pass_for_stages): its groups, then its records. */
static bool lane_job(void *ctx, int s, su_buf *err)
{
    sim *S = ctx;
    lane *L = S->lane[s];
    if (!lane_fusion(L, S->given ? &S->given[s] : NULL, &S->fus[s], err))
        return false;
    lane_fill(L, S->hw, S->keep, err);
    return true;
}

/* Runs S's lanes in step (each made, with its events' count in cap);
 * the step's end into *step_s, each stage's times into stats (NULL:
 * none). */
static bool run_lanes(sim *S, double *step_s, pass_stage_time *stats, su_buf *err)
{
    for (int s = 0; s < S->n; s++) {
        lane *L = S->lane[s];
        L->ev = S->keep ? su_alloc(&S->arena, ((size_t)L->cap + 1) * sizeof *L->ev) : NULL;
        L->ready = su_alloc(&S->arena, ((size_t)L->nvalues + 1) * sizeof *L->ready);
        pass_lane_cursor_start(&L->R, &L->c, S->oom);
        L->nev = 0;
        L->clock[0] = L->clock[1] = 0;
        L->t = (pass_stage_time){0, 0, 0};
        account_free(L);
    }
    if (!simulate(S, err))
        return false;
    for (int s = 0; s < S->n; s++) { /* the comm events still open */
        lane *L = S->lane[s];
        while (L->hpend < L->npend)
            close_comm(L, &L->pend[L->hpend++]);
        account_free(L);
    }
    double step = 0;
    for (int s = 0; s < S->n; s++)
        for (int t = 0; t < 2; t++)
            if (S->lane[s]->clock[t] > step)
                step = S->lane[s]->clock[t];
    *step_s = step;
    for (int s = 0; s < S->n && stats; s++)
        stats[s] = S->lane[s]->t;
    return true;
}

/* L's records, malloc'd. */
static void lane_free_recs(lane *L)
{
    unrolled_free(&L->u);
    pass_lane_recs_free(&L->R);
    pass_lane_cursor_free(&L->c);
    free(L->p2p);
    L->p2p = NULL;
}

static void timeline(void *arg)
{
    timeline_run *r = arg;
    sim *S = &r->S;
    S->lane = su_alloc(&S->arena, (size_t)S->n * sizeof *S->lane);
    S->fus = su_alloc(&S->arena, (size_t)S->n * sizeof *S->fus);
    for (int s = 0; s < S->n; s++) {
        lane *L = S->lane[s] = su_alloc(&S->arena, sizeof *L);
        L->m = S->st[s];
        L->mp = S->mp && S->mp[s].nvalues == S->st[s]->next_id + 1 ? &S->mp[s] : NULL;
        L->rank0 = S->n > 1 ? first_rank(S->st[s], s) : 0;
    }
    int bad = pass_for_stages(S->n, lane_job, S, r->err);
    r->ok = bad < 0 && run_lanes(S, r->step_s, r->stats, r->err);
    if (r->ok && r->json)
        write_json(S, r->max_events, *r->step_s, r->json);
}

static bool run_timeline(timeline_run *r, jmp_buf *oom)
{
    su_arena_init(&r->S.arena, oom);
    r->S.oom = oom;
    bool done = su_guarded(oom, timeline, r);
    for (int s = 0; r->S.fus && s < r->S.n; s++)
        pass_fusion_free(&r->S.fus[s]);
    for (int s = 0; r->S.lane && s < r->S.n; s++) {
        if (!r->S.lane[s])
            continue;
        lane_free_recs(r->S.lane[s]);
        account_free(r->S.lane[s]);
    }
    su_arena_free(&r->S.arena);
    if (!done)
        su_oom(oom);
    return r->ok;
}

bool pass_timeline(ir_module *const *stages, int n, const struct pass_fusion *fusion,
                   const pass_memplan *mp, const pass_hw *hw, int64_t max_events, su_buf *json,
                   double *step_s, su_buf *err)
{
    timeline_run r = {.S = {.st = stages, .n = n, .hw = hw, .given = fusion, .mp = mp,
                            .keep = true},
                      .max_events = max_events, .json = json, .err = err, .step_s = step_s};
    return run_timeline(&r, json->oom);
}

bool pass_timeline_stats(ir_module *const *stages, int n, const struct pass_fusion *fusion,
                         const pass_memplan *mp, const pass_hw *hw, pass_stage_time *stats,
                         double *step_s, su_buf *err)
{
    timeline_run r = {.S = {.st = stages, .n = n, .hw = hw, .given = fusion, .mp = mp},
                      .err = err,
                      .step_s = step_s, .stats = stats};
    return run_timeline(&r, err->oom);
}

/* ---- lanes made one stage at a time (a report that frees each stage's
 * program once its lane and costs are made: passes.c) ---- */

typedef struct lane_make {
    lane *L;
    const pass_fusion *f;
    const pass_hw *hw;
    su_buf *err;
} lane_make;

static void lane_make_work(void *arg)
{
    lane_make *k = arg;
    lane *L = k->L;
    if (!lane_fusion(L, k->f, &L->own, k->err)) {
        L->R.n = -1;
        return;
    }
    lane_fill(L, k->hw, false, k->err);
}

typedef struct lane_run {
    sim *S;
    su_buf *err;
    pass_stage_time *stats;
    double *step_s;
    bool ok;
} lane_run;

static void lanes_work(void *arg)
{
    lane_run *k = arg;
    k->ok = run_lanes(k->S, k->step_s, k->stats, k->err);
}

pass_lane *pass_lane_make(const ir_module *m, int s, int n, const pass_fusion *f,
                          const pass_memplan *mp, const pass_hw *hw, su_buf *err)
{
    lane *L = su_xmalloc(err->oom, sizeof *L);
    memset(L, 0, sizeof *L);
    L->m = m;
    L->mp = mp && mp->nvalues == m->next_id + 1 ? mp : NULL;
    L->rank0 = n > 1 ? first_rank(m, s) : 0;
    lane_make k = {L, f, hw, err};
    bool done = su_guarded(err->oom, lane_make_work, &k);
    pass_fusion_free(&L->own); /* the records are made: the groups are read no more */
    L->m = NULL;
    L->f = NULL;
    L->mp = NULL;
    if (!done || L->R.n < 0) {
        pass_lane_free(L);
        if (!done)
            su_oom(err->oom);
        return NULL;
    }
    return L;
}

void pass_lane_free(pass_lane *L)
{
    if (!L)
        return;
    lane_free_recs(L);
    account_free(L);
    free(L);
}

bool pass_lanes_run(pass_lane *const *lanes, int n, const pass_hw *hw, pass_stage_time *stats,
                    double *step_s, su_buf *err)
{
    timeline_run r = {.S = {.n = n, .hw = hw}, .err = err, .step_s = step_s, .stats = stats};
    sim *S = &r.S;
    su_arena_init(&S->arena, err->oom);
    S->oom = err->oom;
    S->lane = (lane **)lanes;
    lane_run k = {S, err, stats, step_s, false};
    bool done = su_guarded(err->oom, lanes_work, &k);
    for (int s = 0; s < n; s++) /* after a failure, their times as they came */
        account_free(lanes[s]);
    su_arena_free(&S->arena);
    if (!done)
        su_oom(err->oom);
    return k.ok;
}
