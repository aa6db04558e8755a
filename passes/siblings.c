/* siblings.c: what reads a sibling sum's result moves after the sum it
 * joins (passes.h, pass_sink_siblings).
 *
 * The fusion takes a sum of a value x alone (a layernorm's bias gradient,
 * sum(dy) over the rows) into the kernel of a sum after it that reads x
 * (its gain's, sum(dy * (x - mean) * rstd) over the same rows): one
 * kernel reads dy once for both, and stores the first at the second's
 * place (passes/fuse.h, sibling sums). So nothing may read the first
 * sum's result in between. Under data parallelism something does: the
 * partitioner puts the all-reduce of the partial sum right after it (the
 * bucket pass then an insert into a gradient bucket), and a pipeline its
 * add to the sum over microbatches.
 *
 * Here, on a stage's program before the bucket pass, for each sum a that
 * pass_fuse_siblings pairs with a later sum b within PASS_FUSE_HOLD ops,
 * where an op between (or b) that b's operand is made from reads a's
 * operand x, and b does not read a's result, directly or through the ops
 * between: the ops between that do move to just after b, in their order
 * (none of them is one b's operand is made from). Every rank of a stage runs the same
 * program, so its collectives stay in one order on all of them; an
 * all-reduce moved by a few ops is issued a kernel later. Nothing moves
 * over a send, a receive, an instances op, another collective, or an op
 * of another phase, repetition or stamp: the window ends there. */
#include "passes.h"
#include "fuse.h"

#include <string.h>

enum { W = PASS_FUSE_HOLD + 1 };

int pass_sink_siblings(ir_module *m)
{
    int n = m->ops.n, moved = 0;
    int *at = su_alloc(&m->arena, ((size_t)m->next_id + 1) * sizeof *at); /* per value id */
    for (int v = 0; v <= m->next_id; v++)
        at[v] = -1;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            at[IR_OP(m, i)->res[r]->id] = i;
    for (int i = 0; i < n; i++) {
        const ir_op *a = IR_OP(m, i);
        if (a->code != IR_SUM || a->nres != 1)
            continue;
        int end = i + PASS_FUSE_HOLD < n - 1 ? i + PASS_FUSE_HOLD : n - 1;
        bool dep[W], anc[W];
        memset(dep, 0, sizeof dep);
        int j = -1;
        for (int q = i + 1; q <= end && j < 0; q++) {
            const ir_op *b = IR_OP(m, q);
            if (b->phase != a->phase || b->rep != a->rep || b->task != a->task || b->mb != a->mb)
                break;
            /* what reads a's result, directly or through one another */
            dep[q - i] = ir_op_reads(b, a->res[0]);
            for (int k = 0; k < b->nin && !dep[q - i]; k++) {
                int d = at[b->in[k]->id];
                dep[q - i] = d > i && d < q && dep[d - i];
            }
            if (ir_op_fixed(b) && (!dep[q - i] || ir_ops[b->code].cls != IR_C_COMM))
                break; /* a dependent collective moves; nothing else fixed */
            if (!dep[q - i] && pass_fuse_siblings(a, b))
                j = q;
        }
        if (j < 0)
            continue;
        /* the ops b's operand is made from, and whether one reads x */
        memset(anc, 0, sizeof anc);
        anc[j - i] = true;
        bool reads_x = false;
        for (int q = j; q > i; q--) {
            const ir_op *op = IR_OP(m, q);
            if (!anc[q - i])
                continue;
            reads_x |= ir_op_reads(op, a->in[0]);
            for (int k = 0; k < op->nin; k++) {
                int d = at[op->in[k]->id];
                if (d > i && d < q)
                    anc[d - i] = true;
            }
        }
        /* (b is no such reader, so nothing its operand is made from is) */
        int nd = 0;
        for (int q = i + 1; q <= j; q++)
            nd += dep[q - i];
        if (!reads_x || !nd)
            continue;
        ir_op *order[W];
        int t = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int q = i + 1; q <= j; q++)
                if (dep[q - i] == (pass == 1))
                    order[t++] = IR_OP(m, q);
        for (int q = i + 1; q <= j; q++) {
            m->ops.v[q] = order[q - i - 1];
            for (int r = 0; r < order[q - i - 1]->nres; r++)
                at[order[q - i - 1]->res[r]->id] = q;
        }
        moved++;
    }
    return moved;
}
