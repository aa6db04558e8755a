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
 * keeps its two passes.
 *
 * Then, outside pipelines, the gradient and the elementwise ops after it
 * that scale it (autodiff's 1 / rows, a const) move to just after the
 * lse, where only ops of scalars (the loss's mean over the ranks and its
 * all-reduce) and renames stood between: the fusion then computes the
 * gradient in the loss's kernel, which has each row's max and sum
 * (fuse.c's xgrad_fits), in a second pass over each row right after the
 * first, so that no kernel of its own reads the logits again and the lse
 * is not stored. The moved values are born earlier only by ops that hold
 * nothing, so no peak grows. In a pipeline the loss and its gradient are
 * tasks of their own (the forward and the backward), which no kernel
 * joins. */
#include "passes.h"
#include "fuse.h"

#include <string.h>

/* Whether op holds no bytes worth a place and keeps nothing alive: a
 * constrain that renames its operand (the same local type), or an op of
 * scalars alone (a const, the loss's mean over the ranks and its
 * all-reduce). */
static bool holds_nothing(const ir_op *op)
{
    if (op->code == IR_CONSTRAIN && op->nin == 1 && op->nres == 1 &&
        ir_type_eq(&op->res[0]->type, &op->in[0]->type))
        return true;
    for (int k = 0; k < op->nin; k++)
        if (ir_type_numel(&op->in[k]->type) > 1)
            return false;
    for (int r = 0; r < op->nres; r++)
        if (ir_type_numel(&op->res[r]->type) > 1)
            return false;
    return op->code != IR_INSTANCES;
}

/* The index of the op that makes v in m (defat, by value id), or -1. */
static int made_at(const int *defat, const ir_value *v)
{
    return v->def ? defat[v->id] : -1;
}

/* The gradient at index gi (its lse at li < gi) moved to just after the
 * lse with what it needs from between (renames of its operands) and the
 * elementwise ops after it of its shape that read it (its chain), when
 * every op between holds nothing and the chain is whole (no other
 * elementwise op reads a chain value); the consts the chain reads move
 * with it. defat: each value's op index, by id; move: scratch of
 * m->ops.n flags. Whether it moved. */
static bool hoist(ir_module *m, int li, int gi, const int *defat, bool *move)
{
    int n = m->ops.n;
    const ir_op *g = IR_OP(m, gi);
    memset(move, 0, (size_t)n * sizeof *move);
    for (int i = li + 1; i < gi; i++)
        if (!holds_nothing(IR_OP(m, i)) || IR_OP(m, i)->rep != g->rep)
            return false;
    move[gi] = true;
    /* what it reads from between (renames of its logits or labels, and
     * what they rename) moves with it */
    for (int i = gi - 1; i > li; i--)
        for (int j = i + 1; j <= gi && !move[i]; j++)
            move[i] = move[j] && IR_OP(m, i)->nres &&
                      ir_op_reads(IR_OP(m, j), IR_OP(m, i)->res[0]);
    /* the chain: elementwise ops of the gradient's type that read it or a
     * chain value, their other operands made before the lse or consts */
    for (int i = gi + 1; i < n && i <= gi + PASS_FUSE_HOLD; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code == IR_CONST && op->nin == 0)
            continue; /* moves when a chain op reads it */
        bool chained = false, ok = pass_fuse_elementwise(op) && op->rep == g->rep &&
                                   ir_type_eq(&op->res[0]->type, &g->res[0]->type);
        for (int k = 0; ok && k < op->nin; k++) {
            int at = made_at(defat, op->in[k]);
            chained |= at >= gi && move[at];
            ok = at <= li || move[at] || IR_OP(m, at)->code == IR_CONST;
        }
        if (!ok || !chained)
            break;
        for (int k = 0; k < op->nin; k++)
            if (made_at(defat, op->in[k]) > li)
                move[made_at(defat, op->in[k])] = true;
        move[i] = true;
    }
    /* whole: no elementwise op left behind reads a chain value */
    for (int i = gi + 1; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; !move[i] && pass_fuse_elementwise(op) && k < op->nin; k++) {
            int at = made_at(defat, op->in[k]);
            if (at >= gi && move[at] && IR_OP(m, at)->code != IR_CONST)
                return false;
        }
    }
    ir_op **v = su_alloc(&m->arena, (size_t)n * sizeof *v);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (i <= li || move[i])
            v[k++] = IR_OP(m, i);
    for (int i = li + 1; i < n; i++)
        if (!move[i])
            v[k++] = IR_OP(m, i);
    memcpy(m->ops.v, v, (size_t)n * sizeof *v);
    return true;
}

/* Each value's op index in m, by id, into defat. */
static void index_defs(const ir_module *m, int *defat)
{
    for (int i = 0; i <= m->next_id; i++)
        defat[i] = -1;
    for (int i = 0; i < m->ops.n; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            defat[IR_OP(m, i)->res[r]->id] = i;
}

/* Each gradient of grads (ng of them, with their lse ops) moved by hoist,
 * outside pipelines. */
static void hoist_grads(ir_module *m, ir_op *const *grads, ir_op *const *lses, int ng)
{
    if (m->pipe.axis >= 0)
        return;
    int *defat = su_alloc(&m->arena, ((size_t)m->next_id + 1) * sizeof *defat);
    bool *move = su_alloc(&m->arena, (size_t)m->ops.n * sizeof *move);
    for (int j = 0; j < ng; j++) {
        index_defs(m, defat);
        int gi = made_at(defat, grads[j]->res[0]), li = made_at(defat, lses[j]->res[0]);
        if (li >= 0 && gi > li + 1)
            hoist(m, li, gi, defat, move);
    }
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
    ir_op **grads = su_alloc(&m->arena, (size_t)n * sizeof *grads);
    ir_op **lses = su_alloc(&m->arena, (size_t)n * sizeof *lses);
    for (int i = 0; i < n; i++) {
        ir_op *g = IR_OP(m, i);
        if (g->code == IR_XENT && xent[ir_renamed_from(g->in[0])->id] < 0)
            xent[ir_renamed_from(g->in[0])->id] = i;
        if (g->code != IR_XENT_GRAD || g->nin != 2)
            continue;
        int j = xent[ir_renamed_from(g->in[0])->id];
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
        grads[done] = g;
        lses[done++] = lse[j];
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
    hoist_grads(m, grads, lses, done);
    return done;
}
