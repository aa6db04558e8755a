/* simplify.c: a logical program's scalar arithmetic made once
 * (pass_simplify; DESIGN.md §3).
 *
 * Autodiff writes the optimizer's update of every param with its own copy
 * of the step's scalars: under a learning-rate schedule each param's
 * weight decay is w (1 - lr_t wd), and lr_t wd and 1 - lr_t wd were made
 * again for every param (a program with 37 params had 37 such pairs, each
 * a kernel of one element a step on a GPU, between the optimizer's
 * multi-tensor kernels). The loss's gradient starts from 1 times the
 * mean's 1 / N, two constants. Here, on the logical program before
 * anything is sharded:
 *
 * - Common scalars are made once. An op of rank 0 that computes an
 *   elementwise function of its operands (a constant, or an op
 *   ir_pointwise names: not dropout, which draws, nor a source) and that
 *   another op before it in the optimizer phase already computes (the
 *   same opcode, attributes, result type and sharding, the same operands,
 *   a constant operand by its value, not in a recompute block) is
 *   dropped, and its readers read the earlier one. The repetition must
 *   be the same too,
 *   unless both are made from params, states and constants alone (per
 *   step: the pipeline split computes such values once per stage,
 *   whatever their repetition).
 * - Constants are folded: add, sub, mul, div, max and min of two float
 *   constants of rank 0, and neg of one, become the constant they make.
 *   The value is the one the backends compute: each operand as a constant
 *   is materialised (the value rounded to f32, then to the dtype), the
 *   operation in f32 (IEEE, as the CPU backend and the kernels do it),
 *   the result rounded to the dtype; so a plan computes the same bits with
 *   or without this pass.
 * - The scalar ops nothing reads any more go.
 *
 * Nothing of another rank is touched: merging two copies of a tensor
 * would keep one alive where the program made it twice (the backward
 * reshards an activation again rather than keep it, by design). */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether op is an elementwise function of its operands alone (no
 * source but const, no draw), so two with equal operands are equal. */
static bool pure(const ir_op *op)
{
    return op->code == IR_CONST || ir_pointwise(op->code);
}

/* Whether op is one this pass may drop or fold: pure, one result of rank
 * 0, outside a recompute block. */
static bool scalar(const ir_op *op)
{
    return pure(op) && op->nres == 1 && op->res[0]->type.rank == 0 && !op->recompute;
}

/* Whether op folds (two float constants, or one for neg) into *out: the
 * value a constant of its result's dtype is made from. */
static bool fold(const ir_op *op, double *out)
{
    ir_dtype t = op->res[0]->type.dtype;
    if (t != IR_F32 && t != IR_BF16 && t != IR_F16)
        return false;
    float x[2];
    for (int k = 0; k < op->nin; k++) {
        const ir_op *d = op->in[k]->def;
        if (d->code != IR_CONST || op->in[k]->type.dtype != t || op->in[k]->type.rank)
            return false;
        x[k] = ir_const_f32(d->a->value, t);
    }
    float r;
    switch (op->code) {
    case IR_ADD: r = x[0] + x[1]; break;
    case IR_SUB: r = x[0] - x[1]; break;
    case IR_MUL: r = x[0] * x[1]; break;
    case IR_DIV: r = x[0] / x[1]; break;
    /* nan in either gives nan, as the CPU backend's max and min */
    case IR_MAX: r = x[0] > x[1] || x[0] != x[0] ? x[0] : x[1]; break;
    case IR_MIN: r = x[0] < x[1] || x[0] != x[0] ? x[0] : x[1]; break;
    case IR_NEG: r = -x[0]; break;
    default: return false;
    }
    *out = ir_const_f32(r, t); /* exact in the dtype: materialised again as itself */
    return true;
}

typedef struct simplify {
    ir_module *m;
    ir_value **to;      /* [next_id]: the value a dropped one's readers read, or NULL */
    uint8_t *step;      /* [next_id]: made from params, states and constants alone */
    int *uses;          /* [next_id]: readers (ops, outputs, updates, the loss) */
    int *table;         /* open addressing: op indices of the scalars kept, -1 none */
    size_t cap;
    bool *gone;         /* [ops] */
} simplify;

static ir_value *now(const simplify *S, ir_value *v)
{
    while (S->to[v->id])
        v = S->to[v->id];
    return v;
}

/* Whether the repetition is part of op's identity: not for a value made
 * per step. */
static int rep_of(const simplify *S, const ir_op *op)
{
    return S->step[op->res[0]->id] ? -1 : op->rep;
}

static uint64_t key_hash(const simplify *S, const ir_op *op)
{
    uint64_t w[4 + 3] = {(uint64_t)op->code, (uint64_t)(uintptr_t)op->a,
                         (uint64_t)op->res[0]->type.dtype << 8 | op->phase,
                         (uint64_t)(uint32_t)rep_of(S, op)};
    for (int k = 0; k < op->nin && k < 3; k++) /* at most 3 (where); a constant by value */
        w[4 + k] = op->in[k]->def->code == IR_CONST && !op->in[k]->type.rank
                       ? (uint64_t)(uintptr_t)op->in[k]->def->a
                       : (uint64_t)op->in[k]->id;
    return su_fnv_bytes(SU_FNV_BASIS, w, sizeof w);
}

/* Operands x and y are the same value, or constants alike (a rank 0
 * constant is never shared: each keeps its reader). */
static bool same_operand(const ir_value *x, const ir_value *y)
{
    if (x == y)
        return true;
    const ir_op *a = x->def, *b = y->def;
    return a->code == IR_CONST && b->code == IR_CONST && a->a == b->a && !x->type.rank &&
           ir_type_eq(&x->type, &y->type) && !memcmp(&x->sh, &y->sh, sizeof x->sh);
}

static bool same(const simplify *S, const ir_op *a, const ir_op *b)
{
    if (a->code != b->code || a->a != b->a || a->nin != b->nin || a->phase != b->phase ||
        rep_of(S, a) != rep_of(S, b) || !ir_type_eq(&a->res[0]->type, &b->res[0]->type) ||
        memcmp(&a->res[0]->sh, &b->res[0]->sh, sizeof a->res[0]->sh))
        return false;
    for (int k = 0; k < a->nin; k++)
        if (!same_operand(a->in[k], b->in[k]))
            return false;
    return true;
}

/* The kept scalar op that op (index i) makes again, or -1; op is kept
 * (entered) when there is none. */
static int seen(simplify *S, int i)
{
    const ir_op *op = IR_OP(S->m, i);
    size_t mask = S->cap - 1, at = (size_t)key_hash(S, op) & mask;
    for (; S->table[at] >= 0; at = (at + 1) & mask)
        if (same(S, IR_OP(S->m, S->table[at]), op))
            return S->table[at];
    S->table[at] = i;
    return -1;
}

static void use(simplify *S, const ir_value *v, int d)
{
    if (v)
        S->uses[v->id] += d;
}

static void work(void *arg)
{
    simplify *S = arg;
    ir_module *m = S->m;
    int n = m->ops.n;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++)
            op->in[k] = now(S, op->in[k]);
        /* per step: a param, a state, a constant, or a pure op of such */
        bool step = op->code == IR_PARAM || op->code == IR_STATE || op->code == IR_CONST;
        if (!step && pure(op)) {
            step = true;
            for (int k = 0; k < op->nin; k++)
                step = step && S->step[op->in[k]->id];
        }
        for (int r = 0; r < op->nres; r++)
            S->step[op->res[r]->id] = step;
        if (!scalar(op))
            continue;
        double v;
        if (op->code != IR_CONST && fold(op, &v)) {
            op->code = IR_CONST;
            op->nin = 0;
            ir_op_set_attrs(m, op, &(ir_attrs){.value = v});
            S->step[op->res[0]->id] = 1;
        }
        int e = op->code == IR_CONST || op->phase != IR_PH_OPTIMIZER ? -1 : seen(S, i);
        if (e >= 0) {
            S->to[op->res[0]->id] = IR_OP(m, e)->res[0];
            S->gone[i] = true;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        IR_OUTPUT(m, i)->v = now(S, IR_OUTPUT(m, i)->v);
    for (int i = 0; i < m->updates.n; i++) {
        ir_update *u = IR_UPDATE(m, i);
        u->v = now(S, u->v);
        if (u->grad)
            u->grad = now(S, u->grad);
    }
    if (m->train.loss)
        m->train.loss = now(S, m->train.loss);
    /* the scalars nothing reads, last first, so a chain goes whole */
    for (int i = 0; i < n; i++)
        if (!S->gone[i])
            for (int k = 0; k < IR_OP(m, i)->nin; k++)
                use(S, IR_OP(m, i)->in[k], 1);
    for (int i = 0; i < m->outputs.n; i++)
        use(S, IR_OUTPUT(m, i)->v, 1);
    for (int i = 0; i < m->updates.n; i++) {
        use(S, IR_UPDATE(m, i)->v, 1);
        use(S, IR_UPDATE(m, i)->grad, 1);
    }
    use(S, m->train.loss, 1);
    for (int i = n - 1; i >= 0; i--) {
        ir_op *op = IR_OP(m, i);
        if (S->gone[i] || !scalar(op) || S->uses[op->res[0]->id])
            continue;
        S->gone[i] = true;
        for (int k = 0; k < op->nin; k++)
            use(S, op->in[k], -1);
    }
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!S->gone[i])
            m->ops.v[kept++] = m->ops.v[i];
    m->ops.n = kept;
}

int pass_simplify(ir_module *m)
{
    int n = m->ops.n, nv = m->next_id + 1;
    simplify S = {.m = m};
    S.cap = 16;
    while (S.cap < 2 * (size_t)n + 2)
        S.cap *= 2;
    S.to = calloc((size_t)nv, sizeof *S.to);
    S.step = calloc((size_t)nv, 1);
    S.uses = calloc((size_t)nv, sizeof *S.uses);
    S.table = malloc(S.cap * sizeof *S.table);
    S.gone = calloc((size_t)n + 1, sizeof *S.gone);
    bool ok = S.to && S.step && S.uses && S.table && S.gone;
    if (ok) {
        memset(S.table, 0xff, S.cap * sizeof *S.table);
        ok = su_guarded(m->oom, work, &S);
    }
    free(S.to);
    free(S.step);
    free(S.uses);
    free(S.table);
    free(S.gone);
    if (!ok)
        su_oom(m->oom);
    return n - m->ops.n;
}
