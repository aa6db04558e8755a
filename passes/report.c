/* report.c: what a partitioned program costs each rank, before anything
 * runs: FLOPs, and every collective with its per-rank element count and
 * bytes sent as nccl-tests counts them (all_reduce 2(n-1)/n, all_gather,
 * reduce_scatter and all_to_all (n-1)/n, times elements x dtype size).
 *
 * FLOPs are counted per op on local shapes: matmul 2*M*N*K (per batch);
 * attention 2*S*T*(d + dv) per head plus 5*S*T for its softmax; softmax
 * 5, layernorm 8, rmsnorm 5, mse 3 and cross_entropy 5 per input element;
 * other elementwise ops and reductions 1 per element; layout ops,
 * constants and communication 0. */
#include "passes.h"

#include "fuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double pass_op_flops(const ir_op *op)
{
    const ir_type *r = &op->res[0]->type;
    double out = (double)ir_type_numel(r);
    double in0 = op->nin ? (double)ir_type_numel(&op->in[0]->type) : 0;
    switch (op->code) {
    case IR_MATMUL: {
        const ir_type *a = &op->in[0]->type;
        return 2 * out * (double)a->dim[a->rank - 1];
    }
    case IR_ATTENTION: {
        const ir_type *q = &op->in[0]->type, *k = &op->in[1]->type, *v = &op->in[2]->type;
        double heads = in0 / ((double)q->dim[q->rank - 2] * (double)q->dim[q->rank - 1]);
        double st = (double)q->dim[q->rank - 2] * (double)k->dim[k->rank - 2];
        return heads * st * (2 * ((double)q->dim[q->rank - 1] + (double)v->dim[v->rank - 1]) + 5);
    }
    case IR_ATTN_PROBS: { /* q @ kT, then softmax */
        const ir_type *q = &op->in[0]->type;
        return 2 * out * (double)q->dim[q->rank - 1] + 5 * out;
    }
    case IR_SOFTMAX: case IR_RMSNORM: case IR_XENT: case IR_XENT_GRAD: return 5 * in0;
    case IR_EMBEDDING_GRAD: return (double)ir_type_numel(&op->in[1]->type);
    case IR_ADAMW: return 12 * out;
    case IR_ADAM_M: case IR_ADAM_V: case IR_MOMENTUM: case IR_SGD: return 3 * out;
    case IR_GELU_GRAD: case IR_SILU_GRAD: return 8 * out;
    case IR_LAYERNORM: return 8 * in0;
    case IR_MSE: return 3 * in0;
    case IR_SUM: case IR_MEAN: case IR_AMAX: return in0;
    default: break;
    }
    switch (ir_ops[op->code].cls) {
    case IR_C_BINARY: case IR_C_UNARY:
        return op->code == IR_CONSTRAIN ? 0 : out;
    default:
        return 0;
    }
}

double pass_comm_bytes(ir_opcode code, const ir_type *in, const ir_type *out, int64_t ranks)
{
    /* all_gather counts the gathered output; the others the input buffer */
    double elements = (double)ir_type_numel(code == IR_ALL_GATHER ? out : in);
    double f = ranks > 1 ? (double)(ranks - 1) / (double)ranks : 0;
    switch (code) {
    case IR_ALL_REDUCE: f *= 2; break;
    case IR_BROADCAST: f = ranks > 1 ? 1 : 0; break;
    case IR_ALL_GATHER: case IR_REDUCE_SCATTER: case IR_ALL_TO_ALL: break;
    default: return 0; /* slices and local ops send nothing */
    }
    return f * elements * ir_dtype_size(in->dtype);
}

typedef struct coll {
    const ir_op *op;
    int64_t elements;
    int64_t ranks;
    double bytes;
} coll;

static bool collective(const ir_module *m, const ir_op *op, coll *c)
{
    if (ir_ops[op->code].cls == IR_C_P2P) { /* what is sent, counted once, by the sender */
        c->op = op;
        c->ranks = 2;
        const ir_type *t = op->code == IR_SEND ? &op->in[0]->type : &op->res[0]->type;
        c->elements = ir_type_numel(t);
        c->bytes = op->code == IR_SEND ? (double)c->elements * ir_dtype_size(t->dtype) : 0;
        return true;
    }
    if (ir_ops[op->code].cls != IR_C_COMM)
        return false;
    c->op = op;
    c->ranks = 1;
    for (int i = 0; i < op->a.naxes; i++)
        c->ranks *= m->mesh.size[op->a.axes[i]];
    const ir_type *in = &op->in[0]->type, *out = &op->res[0]->type;
    c->elements = ir_type_numel(op->code == IR_ALL_GATHER ? out : in);
    c->bytes = pass_comm_bytes(op->code, in, out, c->ranks);
    return true;
}

static void axes_json(su_buf *b, const ir_module *m, const ir_op *op)
{
    if (ir_ops[op->code].cls == IR_C_P2P) {
        su_buf_printf(b, "[\"%s\"]", m->mesh.name[m->pipe.axis]);
        return;
    }
    su_buf_putc(b, '[');
    for (int i = 0; i < op->a.naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m->mesh.name[op->a.axes[i]]);
    su_buf_putc(b, ']');
}

typedef struct stage_cost {
    double flops, bytes;
    pass_memplan mp;
} stage_cost;

/* The ranks of stage s: all of them without a pipeline, else those whose
 * coordinate on the pipeline axis is s. */
bool pass_rank_in_stage(const ir_module *m, int64_t r, int s)
{
    if (m->stage < 0)
        return true;
    int64_t below = 1;
    for (int a = m->mesh.naxes - 1; a > m->pipe.axis; a--)
        below *= m->mesh.size[a];
    return (r / below) % m->mesh.size[m->pipe.axis] == s;
}

const char *pass_schedule_name(const ir_pipeline *p, char buf[32])
{
    if (p->schedule == IR_SCHED_INTERLEAVED)
        snprintf(buf, 32, "interleaved(%d)", p->chunks);
    else
        snprintf(buf, 32, "%s", p->schedule == IR_SCHED_GPIPE ? "gpipe" : "1f1b");
    return buf;
}

/* The step time estimated on a hardware profile, or none (hw NULL). */
typedef struct estimate {
    const pass_hw *hw;
    double step_s;
} estimate;

static void report_json(ir_module *const *st, int n, const pass_pipeline *pp, su_buf *b,
                        const stage_cost *cost, const estimate *est)
{
    const ir_module *m0 = st[0];
    int64_t ranks = ir_mesh_ranks(&m0->mesh);
    su_buf_puts(b, "{\"mesh\": {\"axes\": [");
    for (int i = 0; i < m0->mesh.naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m0->mesh.name[i]);
    su_buf_puts(b, "], \"sizes\": [");
    for (int i = 0; i < m0->mesh.naxes; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)m0->mesh.size[i]);
    su_buf_puts(b, "]}, ");
    if (pp && pp->nstages) {
        char sched[32];
        su_buf_printf(b, "\"pipeline\": {\"axis\": \"%s\", \"schedule\": \"%s\", "
                      "\"stages\": %d, \"microbatches\": %d, \"chunks\": %d, "
                      "\"bubble\": %.6f}, ", m0->mesh.name[m0->pipe.axis],
                      pass_schedule_name(&m0->pipe, sched), pp->nstages, m0->pipe.microbatches,
                      m0->pipe.chunks, pp->bubble);
    }
    if (est->hw)
        su_buf_printf(b, "\"estimate\": {\"hardware\": \"%s\", \"step_ms\": %.6f}, ",
                      est->hw->name, est->step_s * 1e3);
    su_buf_puts(b, "\"stages\": [");
    for (int s = 0; s < n; s++) {
        const ir_module *m = st[s];
        const pass_memplan *mp = &cost[s].mp;
        su_buf_puts(b, s ? ", {\"ranks\": [" : "{\"ranks\": [");
        bool first = true;
        for (int64_t r = 0; r < ranks; r++)
            if (pass_rank_in_stage(m, r, s)) {
                su_buf_printf(b, "%s%lld", first ? "" : ", ", (long long)r);
                first = false;
            }
        su_buf_printf(b, "], \"flops\": %.0f, \"peak_bytes\": %lld, \"memory\": {\"params\": "
                      "%lld, \"gradients\": %lld, \"optimizer_state\": %lld, \"activations\": "
                      "%lld}, \"bytes_sent\": %.0f, \"collectives\": [", cost[s].flops,
                      (long long)mp->arena_bytes, (long long)mp->params, (long long)mp->gradients,
                      (long long)mp->optimizer_state, (long long)mp->activations, cost[s].bytes);
        first = true;
        for (int i = 0; i < m->ops.n; i++) {
            coll c;
            if (!collective(m, IR_OP(m, i), &c))
                continue;
            su_buf_printf(b, "%s{\"kind\": \"%s\", \"axes\": ", first ? "" : ", ",
                          ir_ops[c.op->code].name);
            axes_json(b, m, c.op);
            const ir_value *v = c.op->nres ? c.op->res[0] : c.op->in[0];
            su_buf_printf(b, ", \"dtype\": \"%s\", \"elements\": %lld, ",
                          ir_dtype_name(v->type.dtype), (long long)c.elements);
            if (c.op->code == IR_ALL_REDUCE && c.op->a.reduce == IR_RED_MAX)
                su_buf_puts(b, "\"reduce\": \"max\", "); /* sum is not named */
            if (c.op->code == IR_SEND || c.op->code == IR_RECV)
                su_buf_printf(b, "\"peer\": %lld, ", (long long)c.op->a.peer);
            su_buf_printf(b, "\"phase\": \"%s\"}", ir_phase_name((ir_phase)c.op->phase));
            first = false;
        }
        su_buf_puts(b, "]}");
    }
    su_buf_puts(b, "]}\n");
}

static void report_table(ir_module *const *st, int n, const pass_pipeline *pp, su_buf *b,
                         const stage_cost *cost, const estimate *est)
{
    const ir_module *m0 = st[0];
    if (pp && pp->nstages) {
        char sched[32];
        su_buf_printf(b, "pipeline: %s over %s, %d stages, %d microbatches, bubble %.4f of the "
                      "ideal compute time\n", pass_schedule_name(&m0->pipe, sched),
                      m0->mesh.name[m0->pipe.axis], pp->nstages, m0->pipe.microbatches,
                      pp->bubble);
    }
    for (int s = 0; s < n; s++) {
        const ir_module *m = st[s];
        const pass_memplan *mp = &cost[s].mp;
        int64_t count = 0, lo = -1;
        for (int64_t r = 0; r < ir_mesh_ranks(&m->mesh); r++)
            if (pass_rank_in_stage(m, r, s)) {
                count++;
                lo = lo < 0 ? r : lo;
            }
        if (m->stage < 0)
            su_buf_printf(b, "stage 0: ranks 0..%lld (%lld ranks)\n", (long long)count - 1,
                          (long long)count);
        else
            su_buf_printf(b, "stage %d: %lld ranks, the first %lld\n", s, (long long)count,
                          (long long)lo);
        su_buf_printf(b, "  flops per rank:       %.0f\n", cost[s].flops);
        su_buf_printf(b, "  bytes sent per rank:  %.0f\n", cost[s].bytes);
        su_buf_printf(b, "  peak bytes per rank:  %lld\n", (long long)mp->arena_bytes);
        su_buf_printf(b, "    params            %14lld\n", (long long)mp->params);
        su_buf_printf(b, "    gradients         %14lld\n", (long long)mp->gradients);
        su_buf_printf(b, "    optimizer state   %14lld\n", (long long)mp->optimizer_state);
        su_buf_printf(b, "    activations       %14lld  (the most live at once)\n",
                      (long long)mp->activations);
        su_buf_puts(b, "  collectives (program order):\n");
        su_buf_printf(b, "    %-4s %-15s %-10s %-5s %14s %14s  %s\n", "#", "kind", "axes",
                      "dtype", "elements", "bytes sent", "phase");
        int k = 0;
        for (int i = 0; i < m->ops.n; i++) {
            coll c;
            if (!collective(m, IR_OP(m, i), &c))
                continue;
            char axes[64] = "";
            if (ir_ops[c.op->code].cls == IR_C_P2P)
                snprintf(axes, sizeof axes, "%s->%lld", m->mesh.name[m->pipe.axis],
                         (long long)c.op->a.peer);
            for (int q = 0; q < c.op->a.naxes && ir_ops[c.op->code].cls == IR_C_COMM; q++)
                snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", q ? "," : "",
                         m->mesh.name[c.op->a.axes[q]]);
            const ir_value *v = c.op->nres ? c.op->res[0] : c.op->in[0];
            bool max = c.op->code == IR_ALL_REDUCE && c.op->a.reduce == IR_RED_MAX;
            su_buf_printf(b, "    %-4d %-15s %-10s %-5s %14lld %14.0f  %s\n", k++,
                          max ? "all_reduce(max)" : ir_ops[c.op->code].name, axes,
                          ir_dtype_name(v->type.dtype),
                          (long long)c.elements, c.bytes, ir_phase_name((ir_phase)c.op->phase));
        }
        if (!k)
            su_buf_puts(b, "    (none)\n");
    }
    if (est->hw)
        su_buf_printf(b, "step time, estimated on %s: %.3f ms (the timeline: shardc --trace)\n",
                      est->hw->name, est->step_s * 1e3);
}

double pass_op_bytes(const ir_module *m, const ir_op *op)
{
    coll c;
    return collective(m, op, &c) ? c.bytes : 0;
}

void pass_report(ir_module *const *stages, int n, const pass_pipeline *pp, bool json,
                 su_buf *out)
{
    pass_report_on(stages, n, pp, NULL, false, json, out);
}

/* Stage m's memory plan, as the plan writer makes it (codegen/plan_build.c):
 * with the fusion pass's groups when the plan has kernels. */
static void plan_memory(const ir_module *m, bool fused, pass_memplan *mp)
{
    su_buf err = {.oom = m->oom};
    pass_fusion f;
    memset(&f, 0, sizeof f);
    /* the report is made of partitioned modules, which both passes take */
    if (fused ? !pass_fuse_planned(m, &f, mp, &err) : !pass_plan_memory_fused(m, NULL, mp, &err))
        su_unreachable();
    pass_fusion_free(&f);
    su_buf_free(&err);
}

void pass_report_on(ir_module *const *stages, int n, const pass_pipeline *pp, const pass_hw *hw,
                    bool fused, bool json, su_buf *out)
{
    estimate est = {hw, 0};
    if (hw) { /* the timeline's events are not wanted, only its length */
        su_buf scratch, err;
        su_buf_init(&scratch, out->oom);
        su_buf_init(&err, out->oom);
        if (!pass_timeline(stages, n, hw, 0, &scratch, &est.step_s, &err))
            est.hw = NULL; /* a compiler bug the verifier reports first */
        su_buf_free(&scratch);
        su_buf_free(&err);
    }
    stage_cost *cost = su_xmalloc(stages[0]->oom, (size_t)n * sizeof *cost);
    for (int s = 0; s < n; s++) {
        const ir_module *m = stages[s];
        cost[s].flops = cost[s].bytes = 0;
        for (int i = 0; i < m->ops.n; i++) {
            coll c;
            if (IR_OP(m, i)->nres)
                cost[s].flops += pass_op_flops(IR_OP(m, i));
            if (collective(m, IR_OP(m, i), &c))
                cost[s].bytes += c.bytes;
        }
        plan_memory(m, fused, &cost[s].mp);
    }
    if (json)
        report_json(stages, n, pp, out, cost, &est);
    else
        report_table(stages, n, pp, out, cost, &est);
    for (int s = 0; s < n; s++)
        pass_memplan_free(&cost[s].mp);
    free(cost);
}
