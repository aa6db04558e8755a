/* input_init.c: how an input absent at run time is made from the seed,
 * pass_input_init.
 *
 * Runs on the logical module, where every op sees whole tensors, so the
 * answer is the same on every mesh; partitioning and the pipeline split
 * copy the input's init to its local ops, and the plan writer hands it to
 * the runtime, which makes each rank's block of the one full tensor
 * (runtime/exec/init.c). An i32 input holds ids: it becomes uniform(0, N), N
 * the rows of the tables and the classes of the logits it indexes (the
 * least of them, so that every reader gets ids in range), followed through
 * the ops that move ids without changing them (reshape, transpose,
 * constrain). Other inputs keep no init: the plan writer makes float
 * inputs normal(1) and ids that index nothing zeros.
 */
#include "passes.h"

/* The least bound on the ids v holds that its readers need, or 0 when none
 * indexes anything; seen marks the values already followed (a value may
 * reach a reader by several paths). */
static int64_t id_bound(const ir_module *m, const ir_value *v, bool *seen)
{
    if (seen[v->id])
        return 0;
    seen[v->id] = true;
    int64_t bound = 0;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            if (op->in[k] != v)
                continue;
            int64_t b = 0;
            if (op->code == IR_EMBEDDING && k == 1)
                b = op->in[0]->type.dim[0];
            else if (op->code == IR_XENT && k == 1)
                b = op->in[0]->type.dim[op->in[0]->type.rank - 1];
            else if (op->code == IR_RESHAPE || op->code == IR_TRANSPOSE ||
                     op->code == IR_CONSTRAIN)
                b = id_bound(m, op->res[0], seen);
            if (b > 0 && (bound == 0 || b < bound))
                bound = b;
        }
    }
    return bound;
}

bool pass_input_init(ir_module *m, su_buf *err)
{
    if (m->partitioned) {
        su_buf_puts(err, "the inputs' inits are set on the logical module, before partitioning");
        return false;
    }
    bool *seen = su_alloc(&m->arena, ((size_t)m->next_id + 1) * sizeof *seen);
    for (int i = 0; i < m->ops.n; i++) {
        ir_op *op = IR_OP(m, i);
        if (op->code != IR_INPUT || op->res[0]->type.dtype != IR_I32 ||
            op->a->init.kind != IR_INIT_NONE)
            continue;
        for (int k = 0; k < m->next_id; k++)
            seen[k] = false;
        int64_t n = id_bound(m, op->res[0], seen);
        if (n > 0) {
            ir_attrs a = *op->a;
            a.init = (ir_init){.kind = IR_INIT_UNIFORM, .a = 0, .b = (double)n};
            ir_op_set_attrs(m, op, &a);
        }
    }
    return true;
}
