/* xent_grad.c: cross-entropy's gradient from the forward's log-sum-exp
 * (ops.def's cross_entropy_lse; DESIGN.md §3.4).
 *
 * Autodiff writes the gradient of cross_entropy(logits, labels) as
 * cross_entropy_grad(logits, labels) = softmax(logits) - one_hot(labels),
 * which finds each row's max and sum of exp again: over GPT-2's 50304
 * classes a row, two passes over the logits (the max and sum online, then
 * the results), where the forward's cross_entropy had made both. Here, on
 * each rank's local program after partitioning, where the program holds
 * cross_entropy of the same logits before the gradient (the same value, or
 * one the partitioner's identities of the same local type, constrain, make
 * of it), in the same repetition, the rows' log-sum-exp
 *   lse = cross_entropy_lse(logits)     f32 [..., 1], just after that op
 * becomes the gradient's third operand, and the gradient is
 * exp(logits - lse) - one_hot(labels): one pass over the logits. The
 * forward's kernel stores lse from its own max and sum (passes/fuse.c), as
 * PyTorch keeps its log-softmax for the backward. A gradient of logits
 * split along the classes is not this op (partition_split.c computes it
 * from the forward's collected statistics already), and any other form
 * keeps its two passes. */
#include "passes.h"

#include <string.h>

/* v, or the value the identities of its local type (constrain) were made
 * from. */
static const ir_value *source_of(const ir_value *v)
{
    while (v->def && v->def->code == IR_CONSTRAIN && v->def->nin == 1 &&
           ir_type_eq(&v->type, &v->def->in[0]->type))
        v = v->def->in[0];
    return v;
}

int pass_xent_grad(ir_module *m)
{
    int n = m->ops.n;
    bool any = false;
    for (int i = 0; i < n && !any; i++)
        any = IR_OP(m, i)->code == IR_XENT_GRAD && IR_OP(m, i)->nin == 2;
    if (!any)
        return 0;
    /* per op index: the lse made just after it (a cross_entropy's); per
     * value id: the first cross_entropy of logits made from it, -1 none */
    ir_op **lse = su_alloc(&m->arena, (size_t)n * sizeof *lse);
    memset(lse, 0, (size_t)n * sizeof *lse);
    size_t nv = (size_t)m->next_id + 1;
    int *xent = su_alloc(&m->arena, nv * sizeof *xent);
    for (size_t v = 0; v < nv; v++)
        xent[v] = -1;
    int done = 0, made = 0;
    for (int i = 0; i < n; i++) {
        ir_op *g = IR_OP(m, i);
        if (g->code == IR_XENT && xent[source_of(g->in[0])->id] < 0)
            xent[source_of(g->in[0])->id] = i;
        if (g->code != IR_XENT_GRAD || g->nin != 2)
            continue;
        int j = xent[source_of(g->in[0])->id];
        if (j < 0 || IR_OP(m, j)->rep != g->rep ||
            !ir_type_eq(&IR_OP(m, j)->in[0]->type, &g->in[0]->type))
            continue;
        const ir_op *x = IR_OP(m, j);
        if (!lse[j]) {
            ir_type t = x->in[0]->type;
            t.dtype = IR_F32;
            t.dim[t.rank - 1] = 1;
            ir_value *in[1] = {x->in[0]};
            ir_op *l = ir_append(m, IR_XENT_LSE, in, 1, &(ir_attrs){0}, &t);
            l->loc = x->loc, l->rep = x->rep, l->phase = x->phase;
            l->res[0]->sh = x->in[0]->sh;
            lse[j] = l;
            made++;
        }
        ir_value **gin = su_alloc(&m->arena, 3 * sizeof *gin);
        gin[0] = g->in[0];
        gin[1] = g->in[1];
        gin[2] = lse[j]->res[0];
        g->in = gin;
        g->nin = 3;
        done++;
    }
    if (!made)
        return 0;
    ir_op **out = su_alloc(&m->arena, ((size_t)n + (size_t)made) * sizeof *out);
    int nout = 0;
    for (int i = 0; i < n; i++) {
        out[nout++] = IR_OP(m, i);
        if (lse[i])
            out[nout++] = lse[i];
    }
    m->ops.n = 0;
    for (int i = 0; i < nout; i++)
        m->ops.v[m->ops.n++] = out[i];
    return done;
}
