/* sverify.c: the static schedule verifier (DESIGN.md §3, after
 * partitioning). The program after partitioning is SPMD: every rank of a
 * stage runs the same op list, with its mesh coordinates as parameters. So
 * the members of a collective's group (the ranks that differ only along
 * its axes) issue the same collectives, of the same kind, axes, dtype and
 * element count, in the same order, exactly when the group lies within one
 * stage: its axes must not include the pipeline axis. That is checked for
 * every collective once per stage program, not once per rank. Each
 * collective and slice must also turn its operand's sharding into its
 * result's as its semantics say, which proves the local shapes agree with
 * the sharding change. */
#include "passes.h"

#include <stdio.h>
#include <string.h>

static bool has_axis(const ir_attrs *a, int axis)
{
    for (int i = 0; i < a->naxes; i++)
        if (a->axes[i] == axis)
            return true;
    return false;
}

/* The sharding the op's semantics give from its operand's. */
static bool expected(const ir_op *op, ir_sharding *s, char *why, size_t n)
{
    const ir_attrs *a = op->a;
    int d = (int)a->dim, d2 = (int)a->dim2;
    unsigned mask = 0;
    for (int i = 0; i < a->naxes; i++)
        mask |= 1u << a->axes[i];
    switch (op->code) {
    case IR_ALL_REDUCE:
        if ((s->partial & mask) != mask)
            return snprintf(why, n, "all_reduce over axes its operand is not partial over"),
                   false;
        s->partial &= (uint16_t)~mask;
        return true;
    case IR_BROADCAST:
        return true;
    case IR_ALL_GATHER:
        if (s->naxes[d] < a->naxes ||
            memcmp(&s->axes[d][s->naxes[d] - a->naxes], a->axes, (size_t)a->naxes))
            return snprintf(why, n, "all_gather of axes that are not the minor end of dim %d",
                            d), false;
        s->naxes[d] = (uint8_t)(s->naxes[d] - a->naxes);
        return true;
    case IR_REDUCE_SCATTER:
        if ((s->partial & mask) != mask)
            return snprintf(why, n, "reduce_scatter over axes its operand is not partial over"),
                   false;
        s->partial &= (uint16_t)~mask;
        for (int i = 0; i < a->naxes; i++) /* split like a slice */
            s->axes[d][s->naxes[d]++] = a->axes[i];
        return true;
    case IR_SLICE:
        for (int i = 0; i < a->naxes; i++)
            s->axes[d][s->naxes[d]++] = a->axes[i];
        return true;
    case IR_ALL_TO_ALL:
        if (a->naxes != 1 || !s->naxes[d2] || s->axes[d2][s->naxes[d2] - 1] != a->axes[0])
            return snprintf(why, n, "all_to_all of an axis that is not the minor end of dim %d",
                            d2), false;
        s->naxes[d2]--;
        s->axes[d][s->naxes[d]++] = a->axes[0];
        return true;
    default:
        su_unreachable();
    }
}

static bool same_dims(const ir_sharding *a, const ir_sharding *b, int rank)
{
    if (a->partial != b->partial)
        return false;
    for (int d = 0; d < rank; d++)
        if (a->naxes[d] != b->naxes[d] || memcmp(a->axes[d], b->axes[d], a->naxes[d]))
            return false;
    return true;
}

bool pass_verify_schedule(const ir_module *m, su_buf *err, su_loc *at)
{
    if (!m->partitioned) {
        su_buf_puts(err, "the schedule verifier needs a partitioned module");
        return false;
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_SLICE && ir_ops[op->code].cls != IR_C_COMM)
            continue;
        if (at) /* the place of the op at fault, should this one be */
            *at = op->loc;
        const char *name = ir_ops[op->code].name;
        if (op->a->naxes < 1) {
            su_buf_printf(err, "op %d (%s) runs over no mesh axis", i, name);
            return false;
        }
        if (m->pipe.axis >= 0 && has_axis(op->a, m->pipe.axis)) {
            su_buf_printf(err, "op %d (%s) spans pipeline stages over axis %s: its group's "
                          "ranks run different programs", i, name, m->mesh.name[m->pipe.axis]);
            return false;
        }
        ir_sharding s = op->in[0]->sh;
        char why[160] = "";
        if (!expected(op, &s, why, sizeof why) ||
            !same_dims(&s, &op->res[0]->sh, op->res[0]->type.rank)) {
            su_buf_printf(err, "op %d (%s): its result's sharding does not follow from its "
                          "operand's%s%s", i, name, why[0] ? ": " : "", why);
            return false;
        }
    }
    return true;
}
