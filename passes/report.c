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

#include <stdio.h>
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
    su_buf_putc(b, '[');
    for (int i = 0; i < op->a.naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m->mesh.name[op->a.axes[i]]);
    su_buf_putc(b, ']');
}

static void report_json(const ir_module *m, su_buf *b, double flops, double bytes,
                        const pass_memplan *mp)
{
    int64_t ranks = ir_mesh_ranks(&m->mesh);
    su_buf_puts(b, "{\"mesh\": {\"axes\": [");
    for (int i = 0; i < m->mesh.naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m->mesh.name[i]);
    su_buf_puts(b, "], \"sizes\": [");
    for (int i = 0; i < m->mesh.naxes; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)m->mesh.size[i]);
    su_buf_puts(b, "]}, \"stages\": [{\"ranks\": [");
    for (int64_t r = 0; r < ranks; r++)
        su_buf_printf(b, "%s%lld", r ? ", " : "", (long long)r);
    su_buf_printf(b, "], \"flops\": %.0f, \"peak_bytes\": %lld, \"memory\": {\"params\": %lld, "
                  "\"gradients\": %lld, \"optimizer_state\": %lld, \"activations\": %lld}, "
                  "\"bytes_sent\": %.0f, \"collectives\": [", flops, (long long)mp->arena_bytes,
                  (long long)mp->params, (long long)mp->gradients,
                  (long long)mp->optimizer_state, (long long)mp->activations, bytes);
    bool first = true;
    for (int i = 0; i < m->ops.n; i++) {
        coll c;
        if (!collective(m, IR_OP(m, i), &c))
            continue;
        su_buf_printf(b, "%s{\"kind\": \"%s\", \"axes\": ", first ? "" : ", ",
                      ir_ops[c.op->code].name);
        axes_json(b, m, c.op);
        su_buf_printf(b, ", \"dtype\": \"%s\", \"elements\": %lld, \"phase\": \"%s\"}",
                      ir_dtype_name(c.op->in[0]->type.dtype), (long long)c.elements,
                      ir_phase_name((ir_phase)c.op->phase));
        first = false;
    }
    su_buf_puts(b, "]}]}\n");
}

static void report_table(const ir_module *m, su_buf *b, double flops, double bytes,
                         const pass_memplan *mp)
{
    su_buf_printf(b, "stage 0: ranks 0..%lld (%lld ranks)\n",
                  (long long)ir_mesh_ranks(&m->mesh) - 1, (long long)ir_mesh_ranks(&m->mesh));
    su_buf_printf(b, "  flops per rank:       %.0f\n", flops);
    su_buf_printf(b, "  bytes sent per rank:  %.0f\n", bytes);
    su_buf_printf(b, "  peak bytes per rank:  %lld\n", (long long)mp->arena_bytes);
    su_buf_printf(b, "    params            %14lld\n", (long long)mp->params);
    su_buf_printf(b, "    gradients         %14lld\n", (long long)mp->gradients);
    su_buf_printf(b, "    optimizer state   %14lld\n", (long long)mp->optimizer_state);
    su_buf_printf(b, "    activations       %14lld  (the most live at once)\n",
                  (long long)mp->activations);
    su_buf_puts(b, "  collectives (program order):\n");
    su_buf_printf(b, "    %-4s %-15s %-10s %-5s %14s %14s  %s\n", "#", "kind", "axes", "dtype",
                  "elements", "bytes sent", "phase");
    int n = 0;
    for (int i = 0; i < m->ops.n; i++) {
        coll c;
        if (!collective(m, IR_OP(m, i), &c))
            continue;
        char axes[64] = "";
        for (int k = 0; k < c.op->a.naxes; k++)
            snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", k ? "," : "",
                     m->mesh.name[c.op->a.axes[k]]);
        su_buf_printf(b, "    %-4d %-15s %-10s %-5s %14lld %14.0f  %s\n", n++,
                      ir_ops[c.op->code].name, axes, ir_dtype_name(c.op->in[0]->type.dtype),
                      (long long)c.elements, c.bytes, ir_phase_name((ir_phase)c.op->phase));
    }
    if (!n)
        su_buf_puts(b, "    (none)\n");
}

double pass_op_bytes(const ir_module *m, const ir_op *op)
{
    coll c;
    return collective(m, op, &c) ? c.bytes : 0;
}

void pass_report(const ir_module *m, bool json, su_buf *out)
{
    double flops = 0, bytes = 0;
    for (int i = 0; i < m->ops.n; i++) {
        coll c;
        flops += pass_op_flops(IR_OP(m, i));
        if (collective(m, IR_OP(m, i), &c))
            bytes += c.bytes;
    }
    pass_memplan mp;
    su_buf err = {.oom = m->oom};
    if (!pass_plan_memory(m, &mp, &err))
        su_unreachable(); /* the report is made of partitioned modules */
    su_buf_free(&err);
    if (json)
        report_json(m, out, flops, bytes, &mp);
    else
        report_table(m, out, flops, bytes, &mp);
    pass_memplan_free(&mp);
}
