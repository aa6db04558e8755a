/* fuse.c: op fusion (fuse.h). The matmul groups are found first (each
 * matmul's chain of single-use successors); then one walk over the ops in
 * program order decides the other groups; a last pass fills each group's
 * ops, the values it reads from outside and the values it stores. The
 * module is not changed. */
#include "fuse.h"
#include "passes.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { F_NONE, F_EW, F_RED } fclass;

/* A group while the walk builds it. */
typedef struct grp {
    pass_fuse_kind kind;
    ir_type dom;        /* the elementwise domain, or the reduction's operand */
    ir_type epi;        /* REDUCE: the reduction's result (the epilogue's domain) */
    int reduce;         /* REDUCE: op index of the reduction */
    int last;           /* op index of the latest op */
    int phase, rep;
    int hold;           /* the earliest last reader (program order) of what
                         * the group reads from outside; INT_MAX: none */
    bool sealed;        /* an op outside the group read one of its values */
    int epoch;          /* the instances ops before its first op (a held
                         * program's: a group never spans one) */
    unsigned epilogue;  /* MATMUL: PASS_EPI_* */
    const ir_value *bias, *residual;
    bool views;         /* ELEMENTWISE: holds a concat and its branches (find_views)
                         * or a transpose, so no reduction joins it */
    bool has_sib;       /* REDUCE: a sibling sum joined it (join_siblings), op sib */
    int sib;
    bool has_xgrad;     /* REDUCE of a cross_entropy: its gradient joined it
                         * (xgrad_fits), op xgrad, of phase xphase */
    int xgrad, xphase;
    int ncols;          /* REDUCE of a layernorm_dx or rmsnorm_dx: the column
                         * groups joined (join_norm_cols), their sums' ops */
    int cols[2];
} grp;

typedef struct walker {
    const ir_module *m;
    pass_fusion *f;
    grp *g;
    int ng;
    int *parent;        /* per group: the group it was merged into (union-find) */
    int *defat;         /* per value id: the op index making it, -1 none */
    int *nuse;          /* per value id: readers (ops, outputs, updates) */
    int *reader;        /* per value id: the last op reading it, -1 none */
    int *lastread;      /* per value id: the last op reading it, m->ops.n when
                         * read after the run (an output, an update) */
    int *ncomm;         /* per op index i: collectives, sends, recvs before i */
    int epoch;          /* the instances ops walked */
    const int *hidden;  /* a held program (pass_fuse_walk_held): per value id,
                         * the reads of it the instances ops hide (NULL: none) */
    int *norm;          /* per value id: the group whose reduction is a layernorm,
                         * rmsnorm or cross_entropy of it, -1 none */
    bool *stat;         /* per op index: a statistic that group stores (stat_fits) */
    int *view;          /* per op index: the concat whose branch it is, the
                         * concat itself for one with branches, -1 (find_views) */
} walker;

static bool is_float(ir_dtype t)
{
    return t == IR_F32 || t == IR_F16 || t == IR_BF16;
}

/* Whether every operand and the result of op are floats. */
static bool all_float(const ir_op *op)
{
    if (!is_float(op->res[0]->type.dtype))
        return false;
    for (int i = 0; i < op->nin; i++)
        if (!is_float(op->in[i]->type.dtype))
            return false;
    return true;
}

/* Whether v is a const (broadcast, reshaped or constrained) whose i32
 * value is not 0. */
static bool nonzero_const(const ir_value *v)
{
    while (v->def && (v->def->code == IR_EXPAND || v->def->code == IR_RESHAPE ||
                      v->def->code == IR_CONSTRAIN))
        v = v->def->in[0];
    if (!v->def || v->def->code != IR_CONST)
        return false;
    double c = v->def->a->value; /* made i32 as (int32_t)c: exact for these */
    /* the range first: a cast of NaN or of a double outside it is undefined */
    return c >= -2147483648.0 && c <= 2147483647.0 && c == (double)(int32_t)c && c != 0;
}

/* Whether op is i32 arithmetic a kernel computes as the CPU backend
 * does (wrapping add, sub, mul and neg; max, min, gt, eq, abs;
 * expand; div by a const that is not 0, truncating, INT32_MIN / -1
 * giving INT32_MIN): every operand and the result i32. Not div by a
 * value, whose division by zero the CPU backend reports: a kernel of its
 * own records it (codegen/cuda_ops.c). */
static bool i32_exact(const ir_op *op)
{
    if (op->res[0]->type.dtype != IR_I32)
        return false;
    for (int i = 0; i < op->nin; i++)
        if (op->in[i]->type.dtype != IR_I32)
            return false;
    switch (op->code) {
    case IR_ADD:
    case IR_SUB:
    case IR_MUL:
    case IR_MAX:
    case IR_MIN:
    case IR_GT:
    case IR_EQ:
    case IR_NEG:
    case IR_ABS:
    case IR_EXPAND:
        return true;
    case IR_DIV:
        return nonzero_const(op->in[1]);
    default:
        return false;
    }
}

/* What part op can take in a group: elementwise, reduction, or none. */
static fclass classify(const ir_op *op)
{
    if (op->nres != 1)
        return F_NONE;
    switch (op->code) {
    case IR_CAST:
    case IR_WHERE: /* picks; any dtype */
    case IR_LESS:
    case IR_LESS_EQ:
    case IR_GREATER:
    case IR_GREATER_EQ:
    case IR_EQUAL:
    case IR_NOT_EQUAL: /* exact on every dtype: floats widen to f32 exactly */
        return F_EW; /* from and to any dtype, i32 and bool included */
    case IR_EXPAND:
        return all_float(op) || i32_exact(op) ? F_EW : F_NONE;
    case IR_SUM:
    case IR_MEAN:
    case IR_AMAX:
    case IR_SOFTMAX:
    case IR_LAYERNORM:
    case IR_RMSNORM:
    case IR_LAYERNORM_DX:
    case IR_RMSNORM_DX:
    case IR_LAYERNORM_RSTD:
    case IR_RMSNORM_RSTD:
    case IR_XENT_LSE:
    case IR_MSE:
        return all_float(op) ? F_RED : F_NONE;
    case IR_XENT:
    case IR_XENT_GRAD: /* (logits, i32 labels[, f32 lse]) */
        return is_float(op->in[0]->type.dtype) && op->in[1]->type.dtype == IR_I32 &&
                       is_float(op->res[0]->type.dtype)
                   ? F_RED
                   : F_NONE;
    default:
        break;
    }
    ir_opclass cls = ir_ops[op->code].cls;
    if (cls == IR_C_BINARY || cls == IR_C_UNARY || cls == IR_C_OPTIM)
        return all_float(op) || i32_exact(op) ? F_EW : F_NONE;
    return F_NONE;
}

bool pass_pipeline_sum(const ir_op *op)
{
    /* the op's own fields first: most ops are not adds, and reading the
     * operand's op is a pass over the stage's ops of its own */
    if ((op->code != IR_ADD && op->code != IR_MAX) || op->task <= 0 || op->nres != 1 ||
        !op->nin)
        return false;
    const ir_value *a = op->in[0];
    return a && a->def && a->def->task == op->task && a->def->mb != op->mb;
}

bool pass_fuse_elementwise(const ir_op *op)
{
    return classify(op) == F_EW;
}

bool pass_fuse_views(const ir_module *m, const pass_fgroup *g)
{
    for (int i = 0; g->kind == PASS_FUSE_ELEMENTWISE && i < g->nops; i++) {
        ir_opcode c = IR_OP(m, g->ops[i])->code;
        if (c == IR_CONCAT || c == IR_TRANSPOSE)
            return true;
    }
    return false;
}

const ir_type *pass_fuse_domain(const ir_module *m, const pass_fgroup *g)
{
    const ir_op *a = IR_OP(m, g->anchor);
    if (g->kind == PASS_FUSE_ELEMENTWISE && a->code == IR_TRANSPOSE &&
        !ir_shape_eq(&a->res[0]->type, &a->in[0]->type)) {
        for (int i = 0; i < g->nops; i++) /* its operand made in the group */
            if (IR_OP(m, g->ops[i])->res[0] == a->in[0])
                return &a->in[0]->type;
    }
    return &a->res[0]->type;
}

bool pass_fuse_op_aside(const ir_module *m, const pass_fgroup *g, int op_index)
{
    if (!pass_fuse_views(m, g))
        return false;
    const ir_type *dom = pass_fuse_domain(m, g);
    bool *aside = calloc((size_t)g->nops, sizeof *aside);
    if (!aside)
        return true; /* the safe answer */
    /* from the group's last op back: an op is aside when it is a view, or
     * an op aside reads it (its readers come after it) */
    bool found = false;
    for (int k = g->nops - 1; k >= 0; k--) {
        const ir_op *op = IR_OP(m, g->ops[k]);
        aside[k] = op->code == IR_CONCAT || op->code == IR_NARROW || op->code == IR_TRANSPOSE ||
                   !ir_shape_eq(&op->res[0]->type, dom);
        for (int j = k + 1; j < g->nops && !aside[k]; j++) {
            const ir_op *r = IR_OP(m, g->ops[j]);
            for (int q = 0; aside[j] && q < r->nin; q++)
                aside[k] = aside[k] || r->in[q] == op->res[0];
        }
        if (g->ops[k] == op_index) {
            found = aside[k];
            break;
        }
    }
    free(aside);
    return found;
}

/* The group a group was merged into, at the end of the chain. */
static int root(const walker *w, int k)
{
    while (w->parent[k] != k) {
        w->parent[k] = w->parent[w->parent[k]];
        k = w->parent[k];
    }
    return k;
}

/* The group of value v, or -1. */
static int group_of_value(const walker *w, const ir_value *v)
{
    int at = w->defat[v->id];
    return at < 0 || w->f->group_of[at] < 0 ? -1 : root(w, w->f->group_of[at]);
}

/* Whether the group may run at op i: what it reads from outside is then
 * kept alive at most PASS_FUSE_HOLD ops past its last reader, and over no
 * collective, send or recv (fuse.h). */
static bool holds_briefly(const walker *w, const grp *g, int i)
{
    if (g->hold >= i)
        return true;
    return i - g->hold <= PASS_FUSE_HOLD && w->ncomm[i] == w->ncomm[g->hold + 1];
}

/* ---- a cross_entropy's gradient in its kernel ----
 *
 * xent_grad.c gives the gradient exp(logits - lse) - one_hot(labels) the
 * forward's lse and moves it, with the elementwise ops that scale it,
 * to just after the lse. The gradient then joins the cross_entropy's
 * group: its kernel has each row's max and sum once its first pass over
 * the row is done, and writes the row's gradient in a second pass
 * (codegen/cuda_strategy.c's cg_emit_xent), so that no kernel of its own
 * reads the logits again. It joins where the lse is a statistic of the
 * group, its logits and labels the cross_entropy's (or renames of them:
 * the same bytes), in the same repetition and task (a pipeline's
 * forward and backward are tasks of their own), held briefly; of the
 * backward (the group's phase is the forward's). The elementwise ops of its shape
 * that read it, or the values they make, then join as its chain, of its
 * phase; an op of the cross_entropy's result (the loss scaled) still
 * joins that result's epilogue. */

/* An experiment, off unless $SHARDC_EXPERIMENT_XENT_APART is 1 while the
 * program compiles: no gradient joins the loss's group, so each keeps the
 * kernel of its own that reads the lse the loss's kernel stores (one pass
 * over the logits each way, the form before the gradient joined). Where
 * the fused kernel's second pass over a row no longer finds the row in
 * the L2 cache (GPT-2's rows are 100 KB, a few hundred in flight), the
 * two kernels may be faster: bench/gpu_session.sh times GPT-2's bf16 step
 * both ways. */
static bool xent_apart(void)
{
    const char *e = getenv("SHARDC_EXPERIMENT_XENT_APART");
    return e && strcmp(e, "1") == 0;
}

/* Whether op i, a cross_entropy_grad with the lse, may join group k. */
static bool xgrad_fits(const walker *w, int k, int i)
{
    const grp *g = &w->g[k];
    const ir_op *op = IR_OP(w->m, i);
    if (xent_apart() || op->code != IR_XENT_GRAD || op->nin != 3 || g->kind != PASS_FUSE_REDUCE ||
        g->has_xgrad || g->has_sib || g->sealed || g->epoch != w->epoch || g->rep != op->rep ||
        !holds_briefly(w, g, i) || op->phase == IR_PH_OPTIMIZER)
        return false;
    const ir_op *l = IR_OP(w->m, g->reduce);
    int at = w->defat[op->in[2]->id];
    if (op->task != l->task || op->mb != l->mb)
        return false; /* a pipeline's forward and backward tasks */
    return l->code == IR_XENT && at >= 0 && w->stat[at] && group_of_value(w, op->in[2]) == k &&
           ir_renamed_from(op->in[0]) == ir_renamed_from(l->in[0]) &&
           ir_renamed_from(op->in[1]) == ir_renamed_from(l->in[1]) &&
           group_of_value(w, op->in[0]) < 0 && ir_type_eq(&op->in[0]->type, &l->in[0]->type);
}

/* Whether elementwise op i of the domain's shape may join group k's
 * gradient chain: of its phase and repetition, held briefly, reading of
 * the group only the gradient and its chain. */
static bool xchain_fits(const walker *w, int k, int i)
{
    const grp *g = &w->g[k];
    const ir_op *op = IR_OP(w->m, i);
    if (g->sealed || g->epoch != w->epoch || op->phase != g->xphase || g->rep != op->rep ||
        !holds_briefly(w, g, i) || pass_pipeline_sum(op) || op->code == IR_TRANSPOSE)
        return false;
    bool reads = false;
    for (int q = 0; q < op->nin; q++) {
        if (group_of_value(w, op->in[q]) != k)
            continue;
        if (w->defat[op->in[q]->id] < g->xgrad)
            return false;
        reads = true;
    }
    return reads;
}

/* Whether op i, of class c, may join group k. */
static bool eligible(const walker *w, int k, int i, fclass c)
{
    const grp *g = &w->g[k];
    const ir_op *op = IR_OP(w->m, i);
    if (g->has_xgrad && c == F_EW && ir_shape_eq(&op->res[0]->type, &g->dom))
        return xchain_fits(w, k, i);
    if (g->sealed || g->epoch != w->epoch || g->phase != op->phase || g->rep != op->rep ||
        !holds_briefly(w, g, i))
        return false;
    if (c == F_RED) {
        if (g->kind != PASS_FUSE_ELEMENTWISE || g->views ||
            !ir_shape_eq(&op->in[0]->type, &g->dom))
            return false;
        /* only the elementwise operands (x, and mse's both) come from the
         * prologue; gains, biases and labels are read from memory */
        int main = op->code == IR_MSE ? 2 : 1;
        for (int i = main; i < op->nin; i++)
            if (group_of_value(w, op->in[i]) == k)
                return false;
        return true;
    }
    const ir_type *t = &op->res[0]->type;
    if (g->kind == PASS_FUSE_ELEMENTWISE)
        return ir_shape_eq(t, &g->dom);
    if (pass_pipeline_sum(op) || op->code == IR_TRANSPOSE)
        return false;
    if (!ir_shape_eq(t, &g->epi))
        return false;
    /* an epilogue reads the reduction's result and other epilogue values,
     * never the prologue's (computed per element before the reduction)
     * nor a statistic the group stores (one a row) */
    for (int i = 0; i < op->nin; i++)
        if (group_of_value(w, op->in[i]) == k &&
            (w->defat[op->in[i]->id] < g->reduce || w->stat[w->defat[op->in[i]->id]]))
            return false;
    return true;
}

/* Whether op i is a statistic of the layernorm, rmsnorm or cross_entropy
 * of group k that its kernel has from its own sums, and may store: the
 * mean over the last dim of a layernorm's x (kept or not), layernorm_rstd
 * (rmsnorm_rstd) of a layernorm's (rmsnorm's) x with its eps (norm_grad.c
 * puts them just after it), or cross_entropy_lse of a cross_entropy's
 * logits (xent_grad.c likewise), where op i could join the group's epilogue
 * (fuse.h's rules: not sealed, the same phase and repetition, held
 * briefly). */
static bool stat_fits(const walker *w, int k, int i)
{
    const grp *g = &w->g[k];
    const ir_op *op = IR_OP(w->m, i), *l = IR_OP(w->m, g->reduce);
    if (g->kind != PASS_FUSE_REDUCE || g->sealed || g->epoch != w->epoch ||
        g->phase != op->phase || g->rep != op->rep || !holds_briefly(w, g, i) ||
        l->in[0] != op->in[0] || !all_float(op))
        return false;
    switch (op->code) {
    case IR_MEAN:
        return l->code == IR_LAYERNORM && (op->a->axis == op->in[0]->type.rank - 1);
    case IR_LAYERNORM_RSTD:
        return l->code == IR_LAYERNORM && op->a->eps == l->a->eps;
    case IR_RMSNORM_RSTD:
        return l->code == IR_RMSNORM && op->a->eps == l->a->eps;
    case IR_XENT_LSE:
        return l->code == IR_XENT;
    default:
        return false;
    }
}

static int new_group(walker *w, const ir_op *op, fclass c, int at)
{
    grp *g = &w->g[w->ng];
    memset(g, 0, sizeof *g);
    g->kind = c == F_RED ? PASS_FUSE_REDUCE : PASS_FUSE_ELEMENTWISE;
    g->dom = c == F_RED ? op->in[0]->type : op->res[0]->type;
    g->epi = op->res[0]->type;
    g->reduce = c == F_RED ? at : -1;
    g->last = at;
    g->phase = op->phase;
    g->rep = op->rep;
    g->hold = INT_MAX;
    g->epoch = w->epoch;
    w->parent[w->ng] = w->ng;
    return w->ng++;
}

/* Op i joins group k: what it reads from outside k counts in k's hold. */
static void hold_operands(walker *w, int k, int i)
{
    const ir_op *op = IR_OP(w->m, i);
    for (int j = 0; j < op->nin; j++) {
        int lr = w->lastread[op->in[j]->id];
        if (group_of_value(w, op->in[j]) != k && lr < w->g[k].hold)
            w->g[k].hold = lr;
    }
}

/* The elementwise groups of cand[0 .. ncand) but chosen merge into
 * chosen (one kernel at the op placed computes them all). */
static void merge_into(walker *w, int chosen, const int *cand, int ncand)
{
    for (int j = 0; j < ncand; j++)
        if (cand[j] != chosen && w->g[cand[j]].kind == PASS_FUSE_ELEMENTWISE) {
            w->parent[cand[j]] = chosen;
            w->g[chosen].views |= w->g[cand[j]].views;
            if (w->g[cand[j]].hold < w->g[chosen].hold)
                w->g[chosen].hold = w->g[cand[j]].hold;
        }
}

/* The groups of op's operands but chosen are sealed: op, outside them,
 * reads their values. */
static void seal_read(walker *w, const ir_op *op, int chosen)
{
    for (int k = 0; k < op->nin; k++) {
        int gk = group_of_value(w, op->in[k]);
        if (gk >= 0 && gk != chosen)
            w->g[gk].sealed = true;
    }
}

/* ---- concats and their branches ----
 *
 * A concat of floats (RoPE's concat([-x[..., h:], x[..., :h]]), a
 * narrow's gradient padded with zeros) joins an elementwise group of its
 * result's shape with its branches: the narrows, concats and elementwise
 * ops (expands of constants among them) whose values only the concat
 * reads, through one another. Its kernel computes the concat's element e
 * from the branch holding it, each branch op at the element that branch
 * needs, from the values the branches read (codegen's view_emit): loaded
 * at that element, or, for a value of the group, computed again there
 * from what the group reads. So a branch's ops are kernels of no size of
 * their own, and their values never reach memory. The branch's ops come
 * within PASS_FUSE_HOLD ops before the concat with no collective, send,
 * recv or instances op between, of its phase and repetition, not the
 * optimizer's; no reduction joins such a group (a value of its epilogue
 * could not be computed again at another element), and on a GPU no
 * result of its kernel takes the place of a value it reads
 * (memplan.c's gpu_in_place): a thread reads other elements than its
 * own. */

enum { VIEW_OPS = 24 }; /* a concat's branch ops at most */

/* Whether op may be a concat's branch op (or, with root, the concat
 * itself): of floats, one result, in no group the walk placed before. */
static bool view_kind(const walker *w, int i, bool root)
{
    const ir_op *op = IR_OP(w->m, i);
    if (op->nres != 1 || w->f->group_of[i] >= 0 || !all_float(op) ||
        op->phase == IR_PH_OPTIMIZER)
        return false;
    if (root || op->code == IR_CONCAT)
        return op->code == IR_CONCAT;
    if (op->code == IR_NARROW)
        return true;
    return classify(op) == F_EW && ir_ops[op->code].cls != IR_C_OPTIM && !pass_pipeline_sum(op);
}

/* w->view: each concat that has branch ops (or none: the concat of two
 * loaded values is elementwise too) and its branch ops, found from the
 * last op back, so that every reader of a value is seen before its
 * maker. */
static void find_views(walker *w)
{
    su_arena *tmp = &w->f->arena;
    const ir_module *m = w->m;
    int n = m->ops.n, nv = m->next_id + 1;
    w->view = su_alloc(&w->f->arena, ((size_t)n + 1) * sizeof *w->view);
    int *by = su_alloc(tmp, (size_t)nv * sizeof *by);    /* the concat reading v, -2 two */
    int *reads = su_alloc(tmp, (size_t)nv * sizeof *reads);
    int *count = su_alloc(tmp, ((size_t)n + 1) * sizeof *count); /* per concat: branch ops */
    int *epoch = su_alloc(tmp, ((size_t)n + 1) * sizeof *epoch);
    for (int v = 0; v < nv; v++)
        by[v] = -1;
    for (int i = 0, e = 0; i < n; i++) {
        w->view[i] = -1;
        e += IR_OP(m, i)->code == IR_INSTANCES;
        epoch[i] = e;
    }
    for (int i = n - 1; i >= 0; i--) {
        const ir_op *op = IR_OP(m, i);
        int c = -1;
        if (op->nres == 1 && view_kind(w, i, false)) {
            int id = op->res[0]->id, r = by[id];
            if (r >= 0 && reads[id] == w->nuse[id] && !(w->hidden && w->hidden[id]) &&
                r - i <= PASS_FUSE_HOLD && w->ncomm[i + 1] == w->ncomm[r] &&
                epoch[i] == epoch[r] && count[r] < VIEW_OPS) {
                const ir_op *ro = IR_OP(m, r);
                if (ro->phase == op->phase && ro->rep == op->rep)
                    c = r;
            }
        }
        if (c >= 0) {
            count[c]++;
        } else if (view_kind(w, i, true)) {
            c = i;
            count[c] = 0;
        }
        if (c < 0)
            continue;
        w->view[i] = c;
        for (int k = 0; k < op->nin; k++) {
            int id = op->in[k]->id;
            if (by[id] == -1) {
                by[id] = c;
                reads[id] = 0;
            }
            if (by[id] == c)
                reads[id]++;
            else
                by[id] = -2;
        }
    }
}

/* Places concat c and its branch ops (find_views): in the group of a value
 * they read, as place() does for one op (an elementwise group of c's
 * shape, without a reduction), or in a new group; the groups of the other
 * values they read are sealed. */
static void place_view(walker *w, int c)
{
    const ir_op *cop = IR_OP(w->m, c);
    int ops[VIEW_OPS + 1], nops = 0;
    for (int j = c - PASS_FUSE_HOLD < 0 ? 0 : c - PASS_FUSE_HOLD; j <= c; j++)
        if (w->view[j] == c)
            ops[nops++] = j;
    int cand[8], ncand = 0, chosen = -1;
    for (int q = 0; q < nops; q++) {
        const ir_op *op = IR_OP(w->m, ops[q]);
        for (int k = 0; k < op->nin; k++) {
            int d = w->defat[op->in[k]->id];
            if (d >= 0 && w->view[d] == c)
                continue; /* a branch's own */
            int gk = group_of_value(w, op->in[k]);
            bool dup = gk < 0 || ncand == 8;
            for (int j = 0; j < ncand && !dup; j++)
                dup = cand[j] == gk;
            if (dup)
                continue;
            const grp *g = &w->g[gk];
            if (g->kind == PASS_FUSE_ELEMENTWISE && eligible(w, gk, c, F_EW)) {
                cand[ncand++] = gk;
                if (chosen < 0 || g->last > w->g[chosen].last)
                    chosen = gk;
            }
        }
    }
    if (chosen >= 0)
        merge_into(w, chosen, cand, ncand);
    for (int q = 0; q < nops; q++)
        seal_read(w, IR_OP(w->m, ops[q]), chosen);
    if (chosen < 0)
        chosen = new_group(w, cop, F_EW, c);
    for (int q = 0; q < nops; q++)
        w->f->group_of[ops[q]] = chosen;
    for (int q = 0; q < nops; q++)
        hold_operands(w, chosen, ops[q]);
    w->g[chosen].last = c;
    w->g[chosen].views = true;
}

/* Whether transpose op may be an op of an elementwise group: of floats,
 * not the optimizer's, its last dim staying last (a thread reads the
 * operand at the element it moves there, runs of the last dim
 * contiguous; one that moves the last dim keeps its tiled kernel). A
 * group of it alone is none (drop_lone_transposes): its own kernel moves
 * 16-byte words. */
static bool transpose_member(const walker *w, int i)
{
    const ir_op *op = IR_OP(w->m, i);
    if (op->code != IR_TRANSPOSE || op->nres != 1 || w->f->group_of[i] >= 0 || !all_float(op) ||
        op->phase == IR_PH_OPTIMIZER)
        return false;
    int r = op->res[0]->type.rank;
    return r >= 1 && op->a->list[r - 1] == r - 1;
}

/* Whether transpose op i (transpose_member) may join group k, which makes
 * its operand, storing the operand's element e at the place the
 * transpose moves it to: k elementwise, of the operand's shape (made at
 * each element, not a concat's branch), not the transpose's, and on
 * eligible()'s terms but the shape. The transpose is then the group's
 * anchor, and the group's domain its operand's (pass_fuse_domain); no op
 * of the group reads it at e (no op of its shape joins). llama's
 * backward: the RoPE gradient's kernel stores dq and dk as [B, S, H, E]
 * for the matmuls after them. */
static bool out_transpose_fits(const walker *w, int k, int i)
{
    const grp *g = &w->g[k];
    const ir_op *op = IR_OP(w->m, i);
    const ir_value *x = op->in[0];
    int d = w->defat[x->id];
    return g->kind == PASS_FUSE_ELEMENTWISE && !g->sealed && g->epoch == w->epoch &&
           g->phase == op->phase && g->rep == op->rep && holds_briefly(w, g, i) &&
           ir_shape_eq(&x->type, &g->dom) && !ir_shape_eq(&op->res[0]->type, &g->dom) &&
           d >= 0 && w->view[d] < 0;
}

/* Places op i: in the group of one of its operands, the one extended
 * last, when eligible; else in a new group. When that group is
 * elementwise, the other eligible elementwise groups it reads from merge
 * into it (none of them was read outside, so one kernel at op i computes
 * them all); every other group op i reads from is sealed. */
static void place(walker *w, int i)
{
    const ir_op *op = IR_OP(w->m, i);
    if (op->code == IR_INSTANCES) { /* no group spans the ops it stands for */
        w->epoch++;
        return;
    }
    if (w->view[i] >= 0) { /* a concat's branch joins with it */
        if (w->view[i] == i)
            place_view(w, i);
        return;
    }
    /* a matmul group's ops were placed before the walk */
    fclass c = w->f->group_of[i] >= 0 ? F_NONE : classify(op);
    bool tr = c == F_NONE && transpose_member(w, i);
    if (tr)
        c = F_EW;
    int xk = tr ? group_of_value(w, op->in[0]) : -1;
    if (xk >= 0 && out_transpose_fits(w, xk, i)) { /* stored where it moves them */
        w->g[xk].last = i;
        w->g[xk].views = true;
        w->f->group_of[i] = xk;
        return;
    }
    int nk = c == F_RED && op->nin == 1 ? w->norm[op->in[0]->id] : -1;
    if (nk >= 0 && stat_fits(w, root(w, nk), i)) { /* stored by the norm's kernel */
        nk = root(w, nk);
        w->stat[i] = true;
        w->g[nk].last = i;
        w->f->group_of[i] = nk;
        hold_operands(w, nk, i);
        return;
    }
    int gk = op->code == IR_XENT_GRAD && op->nin == 3 ? group_of_value(w, op->in[2]) : -1;
    if (gk >= 0 && xgrad_fits(w, gk, i)) { /* its row's second pass (above) */
        grp *g = &w->g[gk];
        g->has_xgrad = true;
        g->xgrad = i;
        g->xphase = op->phase;
        g->last = i;
        seal_read(w, op, gk);
        w->f->group_of[i] = gk;
        hold_operands(w, gk, i);
        return;
    }
    int cand[8], ncand = 0, chosen = -1;
    for (int k = 0; c != F_NONE && k < op->nin && ncand < 8; k++) {
        int gk = group_of_value(w, op->in[k]);
        bool dup = false;
        for (int j = 0; j < ncand; j++)
            dup |= cand[j] == gk;
        if (gk >= 0 && !dup && eligible(w, gk, i, c)) {
            cand[ncand++] = gk;
            if (chosen < 0 || w->g[gk].last > w->g[chosen].last)
                chosen = gk;
        }
    }
    if (chosen >= 0 && w->g[chosen].kind == PASS_FUSE_ELEMENTWISE)
        merge_into(w, chosen, cand, ncand);
    seal_read(w, op, chosen);
    if (c == F_NONE)
        return;
    if (chosen < 0) {
        chosen = new_group(w, op, c, i);
    } else if (c == F_RED) {
        grp *g = &w->g[chosen];
        g->kind = PASS_FUSE_REDUCE;
        g->reduce = i;
        g->epi = op->res[0]->type;
    }
    w->g[chosen].last = i;
    w->g[chosen].views |= tr;
    w->f->group_of[i] = chosen;
    hold_operands(w, chosen, i);
    if (op->code == IR_LAYERNORM || op->code == IR_RMSNORM || op->code == IR_XENT)
        w->norm[op->in[0]->id] = chosen;
}

/* ---- sibling sums (fuse.h) ----
 *
 * A layernorm's bias gradient, sum(dy) over the rows, and its gain's,
 * sum(dy * (x - mean) * rstd) over the same rows, were two column kernels
 * each reading dy. The first, a group of its sum alone, joins the
 * second's group (the later of the two in program order, where its
 * kernel runs): the kernel sums dy beside the product (a second
 * accumulator, codegen/cuda_strategy.c) and stores both results. */

/* Whether op is a sum that may be a sibling: of floats, over an axis
 * with more than one element after it (a column reduction: codegen's
 * row kernels take one whose dims after the axis are all 1s). */
static bool sib_sum(const ir_op *op)
{
    if (op->code != IR_SUM || op->nin != 1 || op->nres != 1 || !all_float(op))
        return false;
    const ir_type *t = &op->in[0]->type;
    int64_t ax = op->a->axis < 0 ? op->a->axis + t->rank : op->a->axis, inner = 1;
    for (int64_t d = ax + 1; d < t->rank; d++)
        inner *= t->dim[d];
    return ax >= 0 && ax < t->rank && inner > 1;
}

bool pass_fuse_siblings(const ir_op *a, const ir_op *b)
{
    if (!sib_sum(a) || !sib_sum(b) || a->phase == IR_PH_OPTIMIZER || a->phase != b->phase ||
        a->rep != b->rep || a->task != b->task || a->mb != b->mb)
        return false;
    int64_t rank = a->in[0]->type.rank;
    int64_t xa = a->a->axis < 0 ? a->a->axis + rank : a->a->axis;
    int64_t xb = b->a->axis < 0 ? b->a->axis + rank : b->a->axis;
    return xa == xb && a->a->keepdims == b->a->keepdims &&
           ir_shape_eq(&a->in[0]->type, &b->in[0]->type) &&
           ir_type_eq(&a->res[0]->type, &b->res[0]->type);
}

/* ---- a norm's column sums in its input gradient's kernel ----
 *
 * norm_cols.c makes a layernorm's (rmsnorm's) gain and bias gradients
 * partial sums over runs of the rows of layernorm_dx (rmsnorm_dx), just
 * after it: each a column group, its elementwise ops over [P, R, D] and
 * the sum over axis 1 (R), reading L's operands through reshapes. Such a
 * group (at most two) joins the group of L, a row kernel of warp rows (D
 * at most PASS_NORM_COLS_MAX_WIDTH), where its sum's rows are L's (P R of
 * them, D wide), it has no epilogue and reads nothing of L's group, it is
 * of L's group's phase, repetition and instances epoch, held briefly,
 * with no collective, send or recv between, and no op outside the two
 * groups between L's group's last op and the column sum reads a value of
 * either. The kernel then takes P blocks, each a run of R rows, and sums
 * the column group's values over its rows as it walks them
 * (codegen/cuda_strategy.c); the partial rows, [P, D], are stored. */

/* Whether op is a sum of a column group of norm_cols.c for a norm over
 * rows rows of width D. */
static bool norm_col_sum(const ir_op *op, int64_t rows, int64_t D)
{
    if (op->code != IR_SUM || op->nin != 1 || op->nres != 1 || op->a->keepdims ||
        op->res[0]->type.dtype != IR_F32)
        return false;
    const ir_type *t = &op->in[0]->type;
    int64_t ax = op->a->axis < 0 ? op->a->axis + t->rank : op->a->axis;
    return t->rank == 3 && ax == 1 && t->dim[0] * t->dim[1] == rows && t->dim[2] == D;
}

static void join_norm_cols(walker *w)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    int n = m->ops.n;
    for (int li = 0; li < n; li++) {
        int a = f->group_of[li] >= 0 ? root(w, f->group_of[li]) : -1;
        const ir_op *L = IR_OP(m, li);
        if (a < 0 || w->g[a].kind != PASS_FUSE_REDUCE || w->g[a].reduce != li ||
            (L->code != IR_LAYERNORM_DX && L->code != IR_RMSNORM_DX))
            continue;
        grp *A = &w->g[a];
        const ir_type *t = &L->res[0]->type;
        int64_t D = t->dim[t->rank - 1], rows = ir_type_numel(t) / D;
        if (D > PASS_NORM_COLS_MAX_WIDTH || A->has_sib || A->has_xgrad || A->ncols)
            continue;
        int from = A->last, end = from + PASS_FUSE_HOLD < n - 1 ? from + PASS_FUSE_HOLD : n - 1;
        for (int j = from + 1; j <= end && A->ncols < 2; j++) {
            const ir_op *oj = IR_OP(m, j);
            if (oj->code == IR_INSTANCES || w->ncomm[j] != w->ncomm[from + 1])
                break;
            int b = f->group_of[j] >= 0 ? root(w, f->group_of[j]) : -1;
            /* an op of neither group that reads a value of A (or of a
             * column group already joined) ends the search */
            bool reads = false;
            for (int k = 0; k < oj->nin && b != a; k++)
                reads |= group_of_value(w, oj->in[k]) == a;
            if (reads && (b < 0 || w->g[b].kind != PASS_FUSE_REDUCE))
                break;
            if (b < 0 || b == a || !norm_col_sum(oj, rows, D))
                continue;
            grp *B = &w->g[b];
            if (B->kind != PASS_FUSE_REDUCE || B->reduce != j || B->last != j || B->has_sib ||
                B->has_xgrad || B->epoch != A->epoch || B->phase != A->phase || B->rep != A->rep ||
                oj->task != L->task || oj->mb != L->mb || reads)
                continue;
            /* its ops: the sum and elementwise ops of its operand's shape
             * before it, none reading A's values; held briefly with A's */
            bool ok = true;
            for (int q = from + 1; q < j && ok; q++) {
                if (f->group_of[q] < 0 || root(w, f->group_of[q]) != b)
                    continue;
                const ir_op *oq = IR_OP(m, q);
                ok = ir_shape_eq(&oq->res[0]->type, &oj->in[0]->type);
                for (int k = 0; k < oq->nin; k++)
                    ok = ok && group_of_value(w, oq->in[k]) != a;
            }
            int hold = B->hold < A->hold ? B->hold : A->hold;
            if (!ok || (hold < j && j - hold > PASS_FUSE_HOLD))
                continue;
            w->parent[b] = a;
            A->cols[A->ncols++] = j;
            A->hold = hold;
            A->last = j;
        }
    }
}

static void join_siblings(walker *w)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    int n = m->ops.n;
    int *count = su_alloc(&f->arena, (size_t)(w->ng + 1) * sizeof *count);
    memset(count, 0, (size_t)(w->ng + 1) * sizeof *count);
    for (int i = 0; i < n; i++)
        if (f->group_of[i] >= 0)
            count[root(w, f->group_of[i])]++;
    for (int i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        int a = f->group_of[i] >= 0 ? root(w, f->group_of[i]) : -1;
        if (a < 0 || w->g[a].kind != PASS_FUSE_REDUCE || w->g[a].reduce != i || count[a] != 1 ||
            !sib_sum(op) || op->phase == IR_PH_OPTIMIZER)
            continue;
        /* x read from memory, as the other group reads it: made by no
         * group, or by a third (a pipeline stage's attention layernorm's dy,
         * the adds of q's, k's and v's input gradients, stored) */
        const ir_value *x = op->in[0];
        int gx = group_of_value(w, x);
        /* nothing may read the sum's result before the later group's
         * kernel stores it (passes/siblings.c moves what did, the
         * partitioner's all-reduce, after the later sum) */
        const ir_value *r = op->res[0];
        int end = i + PASS_FUSE_HOLD < n - 1 ? i + PASS_FUSE_HOLD : n - 1;
        bool reads_x[PASS_FUSE_HOLD + 1] = {false};
        for (int j = i + 1; j <= end; j++) {
            const ir_op *oj = IR_OP(m, j);
            bool reads_r = false;
            for (int k = 0; k < oj->nin; k++) {
                reads_r |= oj->in[k] == r;
                reads_x[j - i] |= oj->in[k] == x;
            }
            if (reads_r || oj->code == IR_INSTANCES || w->ncomm[j] != w->ncomm[i + 1] ||
                oj->task != op->task || oj->mb != op->mb)
                break;
            int b = f->group_of[j] >= 0 ? root(w, f->group_of[j]) : -1;
            if (b < 0 || b == a)
                continue;
            grp *B = &w->g[b];
            if (B->kind != PASS_FUSE_REDUCE || B->reduce != j || B->last != j || B->has_sib ||
                !pass_fuse_siblings(op, oj) || B->epoch != w->g[a].epoch || gx == b)
                continue;
            bool reads = false; /* an op of the group after the sum reads x */
            for (int q = i + 1; q <= j && !reads; q++)
                reads = reads_x[q - i] && f->group_of[q] >= 0 && root(w, f->group_of[q]) == b;
            if (!reads)
                continue;
            w->parent[a] = b;
            B->has_sib = true;
            B->sib = i;
            if (w->g[a].hold < B->hold)
                B->hold = w->g[a].hold;
            count[b]++;
            break;
        }
    }
}

/* A group of a transpose alone is none: the transpose keeps its own
 * kernel (transpose_member). */
static void drop_lone_transposes(walker *w)
{
    int *n = su_alloc(&w->f->arena, (size_t)(w->ng + 1) * sizeof *n);
    for (int i = 0; i < w->f->nops; i++)
        if (w->f->group_of[i] >= 0)
            n[root(w, w->f->group_of[i])]++;
    for (int i = 0; i < w->f->nops; i++)
        if (w->f->group_of[i] >= 0 && IR_OP(w->m, i)->code == IR_TRANSPOSE &&
            n[root(w, w->f->group_of[i])] == 1)
            w->f->group_of[i] = -1;
}

/* Numbers the merged groups 0, 1, ... in order of their first op, and
 * makes group_of[] refer to them. */
static void renumber(walker *w)
{
    pass_fusion *f = w->f;
    int *newid = su_alloc(&f->arena, (size_t)(w->ng + 1) * sizeof *newid);
    for (int k = 0; k < w->ng; k++)
        newid[k] = -1;
    f->groups = su_alloc(&f->arena, (size_t)(w->ng + 1) * sizeof *f->groups);
    for (int i = 0; i < f->nops; i++) {
        if (f->group_of[i] < 0)
            continue;
        int r = root(w, f->group_of[i]);
        if (newid[r] < 0) {
            pass_fgroup *g = &f->groups[f->ngroups];
            g->id = f->ngroups;
            g->kind = w->g[r].kind;
            g->reduce = w->g[r].reduce;
            g->epilogue = w->g[r].epilogue;
            g->bias = w->g[r].bias;
            g->residual = w->g[r].residual;
            g->has_sib = w->g[r].has_sib;
            g->sib = w->g[r].sib;
            g->has_xgrad = w->g[r].has_xgrad;
            g->xgrad = w->g[r].xgrad;
            g->ncols = w->g[r].ncols;
            g->cols[0] = w->g[r].cols[0];
            g->cols[1] = w->g[r].cols[1];
            newid[r] = f->ngroups++;
        }
        f->group_of[i] = newid[r];
    }
}

/* Appends the decimal digits of v to s at *n (of size room). */
static void put_int(char *s, size_t *n, size_t room, unsigned v)
{
    char d[12];
    int k = 0;
    do
        d[k++] = (char)('0' + v % 10);
    while (v /= 10);
    while (k && *n + 1 < room)
        s[(*n)++] = d[--k];
    s[*n] = 0;
}

/* Appends text t to s at *n (of size room), cut where it would not fit. */
static void put_text(char *s, size_t *n, size_t room, const char *t)
{
    while (*t && *n + 1 < room)
        s[(*n)++] = *t++;
    s[*n] = 0;
}

/* "k3_add_gelu": the group's number and its distinct op names, up to four
 * (a constrain, which only renames a value in a matmul's or a TOTAL
 * group's chain, names nothing). */
static const char *group_name(const ir_module *m, pass_fusion *f, const pass_fgroup *g)
{
    /* "k" and an int, four op names (ops.def's are at most 18
     * characters) and "_x" and an int: made here, then kept at its length
     * (a pipeline's stage names a group for every microbatch, again at
     * every try of pass_fuse_planned, so not by snprintf, which took a
     * quarter of the fusion's time on a deep pipeline's report) */
    char s[160];
    size_t n = 0;
    put_text(s, &n, sizeof s, "k");
    put_int(s, &n, sizeof s, (unsigned)g->id);
    int seen[4]; /* op codes: each names one op */
    int nseen = 0;
    for (int i = 0; i < g->nops && nseen < 4; i++) {
        int code = IR_OP(m, g->ops[i])->code;
        bool dup = code == IR_CONSTRAIN; /* a rename in a chain: no work */
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == code;
        if (!dup) {
            seen[nseen++] = code;
            put_text(s, &n, sizeof s, "_");
            put_text(s, &n, sizeof s, ir_ops[code].name);
        }
    }
    if (g->nparts) {
        put_text(s, &n, sizeof s, "_x");
        put_int(s, &n, sizeof s, (unsigned)g->nparts);
    }
    return su_strdup(&f->arena, s);
}

/* Marks the values that must be stored: read by an op of another group
 * (or of none), by an output or an update, or by nothing at all. */
static void mark_stored(const walker *w)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    int *readers = su_alloc(&f->arena, ((size_t)f->nvalues + 1) * sizeof *readers);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            int gv = group_of_value(w, op->in[k]);
            readers[op->in[k]->id]++;
            if (gv >= 0 && gv != f->group_of[i])
                f->stored[op->in[k]->id] = true;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        f->stored[IR_OUTPUT(m, i)->v->id] = true;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        f->stored[u->v->id] = true;
        if (u->grad)
            f->stored[u->grad->id] = true;
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (f->group_of[i] >= 0 && readers[op->res[0]->id] == 0)
            f->stored[op->res[0]->id] = true;
    }
    /* a value a middle microbatch reads (held in an instances op) */
    for (int v = 0; w->hidden && v < f->nvalues; v++)
        if (w->hidden[v])
            f->stored[v] = true;
    /* only values of groups are "stored" in this sense */
    for (int v = 0; v < f->nvalues; v++)
        if (w->defat[v] < 0 || f->group_of[w->defat[v]] < 0)
            f->stored[v] = false;
}

/* Fills every group's ops, inputs and outputs in one walk over the ops. */
static void fill_groups(const walker *w)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    int *nin = su_alloc(&f->arena, (size_t)(f->ngroups + 1) * sizeof *nin);
    for (int i = 0; i < m->ops.n; i++) {
        int k = f->group_of[i];
        if (k >= 0) {
            f->groups[k].nops++;
            nin[k] += IR_OP(m, i)->nin;
        }
    }
    for (int k = 0; k < f->ngroups; k++) {
        pass_fgroup *g = &f->groups[k];
        g->ops = su_alloc(&f->arena, (size_t)g->nops * sizeof *g->ops);
        g->in = su_alloc(&f->arena, (size_t)(nin[k] + 1) * sizeof *g->in);
        g->out = su_alloc(&f->arena, (size_t)g->nops * sizeof *g->out);
        g->nops = 0;
    }
    for (int i = 0; i < m->ops.n; i++) {
        if (f->group_of[i] < 0)
            continue;
        pass_fgroup *g = &f->groups[f->group_of[i]];
        const ir_op *op = IR_OP(m, i);
        g->ops[g->nops++] = i;
        for (int k = 0; k < op->nin; k++) {
            const ir_value *v = op->in[k];
            bool known = group_of_value(w, v) == g->id;
            for (int j = 0; j < g->nin && !known; j++)
                known = g->in[j] == v;
            if (!known)
                g->in[g->nin++] = v;
        }
        if (f->stored[op->res[0]->id])
            g->out[g->nout++] = op->res[0];
    }
    for (int k = 0; k < f->ngroups; k++) {
        pass_fgroup *g = &f->groups[k];
        g->anchor = g->ops[g->nops - 1];
        g->name = NULL; /* named once numbered for good (gather_multi) */
    }
}

/* ---- multi-tensor groups (fuse.h) ---- */

/* Builds the runs of optimizer groups into multi-tensor groups. */
typedef struct multi {
    const walker *w;
    int *mark;          /* per group: the stamp of the run it is in */
    int stamp;
    int *vmark;         /* per value id: the stamp counting it as a parameter */
    int vstamp;
    int run[PASS_FUSE_MULTI_PARAMS];
    int nrun;
    int nparams;        /* distinct values the run reads and stores */
    uint64_t skip;      /* pass_fuse_ex's */
    int *defer;         /* groups the run reads from, left out of it and */
    int ndefer;         /* numbered after it */
    uint64_t *sig;      /* per group: what its code depends on (group_sig) */
    int *per;           /* per group: the period of the repeating stretch it is
                         * in (find_periods), 0 none */
} multi;

/* What a group does to the run: joins it, stays out of it (a group that
 * only feeds it, as adamw's step count: it runs first, on its own), or
 * ends it. */
typedef enum { M_JOIN, M_BYPASS, M_BREAK } mjoin;

static bool multi_candidate(const ir_module *m, const pass_fgroup *g)
{
    return g->kind == PASS_FUSE_ELEMENTWISE && IR_OP(m, g->anchor)->phase == IR_PH_OPTIMIZER;
}

/* The distinct values the run's kernel would take with groups extra[0 ..
 * nextra) added. */
static int multi_params_n(multi *M, const int *extra, int nextra)
{
    M->vstamp++;
    int n = 0;
    for (int r = 0; r < M->nrun + nextra; r++) {
        const pass_fgroup *p = &M->w->f->groups[r < M->nrun ? M->run[r] : extra[r - M->nrun]];
        for (int j = 0; j < p->nin + p->nout; j++) {
            const ir_value *v = j < p->nin ? p->in[j] : p->out[j - p->nin];
            if (M->vmark[v->id] != M->vstamp) {
                M->vmark[v->id] = M->vstamp;
                n++;
            }
        }
    }
    return n;
}

/* The distinct values the run's kernel would take with group k added. */
static int multi_params(multi *M, int k)
{
    return multi_params_n(M, &k, 1);
}

/* Whether group k may join the run (fuse.h): the same repetition, no
 * value passed between parts, no collective in the span, no reader
 * outside the run in the span, and few enough parameters. A group that
 * reads nothing of the run but that the run reads from stays out. */
static mjoin multi_joins(multi *M, int k)
{
    const walker *w = M->w;
    const pass_fusion *f = w->f;
    const pass_fgroup *g = &f->groups[k], *first = &f->groups[M->run[0]];
    if (M->nrun == PASS_FUSE_MULTI_PARAMS ||
        IR_OP(w->m, g->anchor)->rep != IR_OP(w->m, first->anchor)->rep)
        return M_BREAK;
    for (int j = 0; j < g->nin; j++) {
        int gv = group_of_value(w, g->in[j]);
        if (gv >= 0 && M->mark[gv] == M->stamp)
            return M_BREAK;
    }
    int lo = first->ops[0], hi = g->anchor;
    for (int r = 0; r < M->nrun; r++)
        if (f->groups[M->run[r]].anchor > hi)
            hi = f->groups[M->run[r]].anchor;
    if (w->ncomm[hi] != w->ncomm[lo])
        return M_BREAK;
    for (int r = 0; r < M->nrun; r++) { /* the run reads k: k runs before it */
        const pass_fgroup *p = &f->groups[M->run[r]];
        for (int j = 0; j < p->nin; j++)
            if (group_of_value(w, p->in[j]) == k)
                return M_BYPASS;
    }
    M->mark[k] = M->stamp; /* k's values count as the run's below */
    bool ok = true;
    for (int i = lo; i <= hi && ok; i++) {
        const ir_op *op = IR_OP(w->m, i);
        int gi = f->group_of[i];
        bool inside = gi >= 0 && M->mark[gi] == M->stamp;
        for (int j = 0; j < op->nin && ok; j++) {
            int gv = group_of_value(w, op->in[j]);
            bool from_run = gv >= 0 && M->mark[gv] == M->stamp;
            ok = !from_run || (inside && gv == gi); /* no reader outside, no value between parts */
        }
    }
    M->mark[k] = -1;
    if (!ok)
        return M_BREAK;
    int n = multi_params(M, k);
    if (n > PASS_FUSE_MULTI_PARAMS)
        return M_BREAK;
    M->nparams = n;
    return M_JOIN;
}

/* The run as one group at groups[at] (its parts copied out first). */
static void multi_build(multi *M, pass_fgroup *out, int at)
{
    const walker *w = M->w;
    pass_fusion *f = w->f;
    pass_fgroup *parts = su_alloc(&f->arena, (size_t)M->nrun * sizeof *parts);
    int nops = 0, nin = 0, nout = 0;
    for (int r = 0; r < M->nrun; r++) {
        parts[r] = f->groups[M->run[r]];
        nops += parts[r].nops;
        nin += parts[r].nin;
        nout += parts[r].nout;
    }
    pass_fgroup *g = &out[at];
    memset(g, 0, sizeof *g);
    g->id = at;
    g->kind = PASS_FUSE_ELEMENTWISE;
    g->reduce = -1;
    g->nparts = M->nrun;
    g->parts = parts;
    g->ops = su_alloc(&f->arena, (size_t)nops * sizeof *g->ops);
    g->in = su_alloc(&f->arena, (size_t)(nin + 1) * sizeof *g->in);
    g->out = su_alloc(&f->arena, (size_t)(nout + 1) * sizeof *g->out);
    int lo = parts[0].ops[0];
    for (int i = lo; g->nops < nops; i++) {
        int gi = f->group_of[i];
        if (gi < 0 || M->mark[gi] != M->stamp)
            continue;
        const ir_op *op = IR_OP(w->m, i);
        g->ops[g->nops++] = i;
        for (int j = 0; j < op->nin; j++) {
            const ir_value *v = op->in[j];
            int gv = group_of_value(w, v);
            bool known = gv >= 0 && M->mark[gv] == M->stamp;
            for (int q = 0; q < g->nin && !known; q++)
                known = g->in[q] == v;
            if (!known)
                g->in[g->nin++] = v;
        }
        if (f->stored[op->res[0]->id])
            g->out[g->nout++] = op->res[0];
    }
    g->anchor = g->ops[g->nops - 1];
}

/* Ends the run: two or more groups become one at out[*nout], unless the
 * caller skips the run; a single group stays as it is. */
static void multi_flush(multi *M, pass_fgroup *out, int *nout, int *newid)
{
    pass_fusion *f = M->w->f;
    int r = M->nrun > 1 ? f->nruns++ : -1;
    if (r >= 0 && !(r < 64 && (M->skip >> r & 1))) {
        multi_build(M, out, *nout);
        out[*nout].run = r;
        for (int k = 0; k < M->nrun; k++)
            newid[M->run[k]] = *nout;
        ++*nout;
    } else {
        for (int k = 0; k < M->nrun; k++) {
            out[*nout] = f->groups[M->run[k]];
            out[*nout].id = *nout;
            newid[M->run[k]] = (*nout)++;
        }
    }
    for (int k = 0; k < M->ndefer; k++) { /* their first ops come later */
        out[*nout] = f->groups[M->defer[k]];
        out[*nout].id = *nout;
        newid[M->defer[k]] = (*nout)++;
    }
    M->nrun = M->ndefer = 0;
    M->stamp++;
}

/* ---- runs that repeat ----
 *
 * A model's layers have the same params, so their updates come as one
 * stretch of groups repeating with a period (GPT-2's 12 params a layer).
 * Cut greedily at the parameter limit, the runs start at a different place
 * in the period each time, and every run is code of its own: NVRTC
 * compiled ten multi-tensor kernels of GPT-2's AdamW, 0.2 s each. So a run
 * that starts before such a stretch ends where it begins, and a run inside
 * one holds whole periods, as many as the parameter limit allows (else as
 * the greedy rule cuts): the stretch's runs are then the same code but for
 * names, compiled once. A stretch counts when it holds two periods and at
 * least MIN_STRETCH groups (not two like params side by side). */
enum { MAX_PERIOD = 64, MIN_STRETCH = 8 };

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t mix_type(uint64_t h, const ir_type *t)
{
    h = mix(h, (uint64_t)t->dtype << 8 | (uint64_t)t->rank);
    for (int d = 0; d < t->rank; d++)
        h = mix(h, (uint64_t)t->dim[d]);
    return h;
}

static uint64_t mix_double(uint64_t h, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return mix(h, u);
}

/* What group g's code depends on: its ops, their types and the
 * attributes an elementwise kernel reads, and for each operand the op of
 * the group making it or its type. Groups of equal signature make equal
 * parts of a multi-tensor kernel; a collision only costs a run cut in a
 * worse place, never a wrong kernel. */
static uint64_t group_sig(const walker *w, const pass_fgroup *g)
{
    uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)g->kind << 32 | (uint64_t)g->nops);
    for (int i = 0; i < g->nops; i++) {
        const ir_op *op = IR_OP(w->m, g->ops[i]);
        const ir_attrs *a = op->a;
        h = mix(h, (uint64_t)op->code << 16 | (uint64_t)op->nin);
        h = mix_type(h, &op->res[0]->type);
        h = mix(h, (uint64_t)w->f->stored[op->res[0]->id]);
        h = mix_double(mix_double(mix_double(h, a->value), a->eps), a->lr);
        h = mix_double(mix_double(mix_double(h, a->momentum), a->beta1), a->beta2);
        h = mix_double(h, a->wd);
        h = mix(mix(mix(h, (uint64_t)a->axis), (uint64_t)a->dtype), (uint64_t)a->dim);
        for (int k = 0; k < op->nin; k++) {
            const ir_value *v = op->in[k];
            int at = -1;
            for (int q = 0; q < i && at < 0; q++)
                if (IR_OP(w->m, g->ops[q]) == v->def)
                    at = q;
            h = at >= 0 ? mix(h, (uint64_t)at) : mix_type(mix(h, ~0ull), &v->type);
        }
    }
    return h;
}

/* Each group's signature, and the period of the repeating stretch of
 * groups it lies in (0: none): for p from 1 up, the stretches where each
 * group's signature equals that p groups on, each long enough, claim
 * their groups that no shorter period claimed. Only the groups from the
 * first candidate on are looked at (the optimizer's come last). */
static void find_periods(multi *M, int first)
{
    const walker *w = M->w;
    const pass_fusion *f = w->f;
    int n = f->ngroups;
    for (int k = 0; k < n; k++) {
        M->per[k] = 0;
        M->sig[k] = k < first || !multi_candidate(w->m, &f->groups[k])
                        ? ~(uint64_t)k
                        : group_sig(w, &f->groups[k]);
    }
    for (int p = 1; p <= MAX_PERIOD && first + 2 * p <= n; p++)
        for (int s = first; s + p < n;) {
            if (M->sig[s] != M->sig[s + p]) {
                s++;
                continue;
            }
            int e = s;
            while (e + p < n && M->sig[e] == M->sig[e + p])
                e++;
            /* [s, e + p) repeats with period p */
            if (e - s >= p && e - s + p >= MIN_STRETCH)
                for (int k = s; k < e + p; k++)
                    if (!M->per[k])
                        M->per[k] = p;
            s = e + 1;
        }
}

/* Whether the run, made greedily so far, should end before group k,
 * which may join it (above): k starts a repeating stretch that the run
 * did not start in, or the run holds whole periods of one and the next
 * period would not fit in the parameters. A run that reaches the end of
 * its stretch goes on greedily (its code is its own anyway). */
static bool period_ends(multi *M, int k)
{
    int k0 = M->run[0], p = M->per[k0];
    if (!p)
        return M->per[k] > 0;
    if (M->per[k] != p) /* past the stretch: on, unless another starts */
        return M->per[k] > 0;
    if ((k - k0) % p)
        return false;
    int next[MAX_PERIOD];
    if (k + p > M->w->f->ngroups)
        return false;
    for (int i = 0; i < p; i++)
        next[i] = k + i;
    return multi_params_n(M, next, p) > PASS_FUSE_MULTI_PARAMS;
}

/* ---- totals (fuse.h) ---- */

/* Whether group g sums to an f32 value in the optimizer phase. */
static bool total_sum(const walker *w, const pass_fgroup *g)
{
    if (g->kind != PASS_FUSE_REDUCE || g->nparts || g->reduce < 0)
        return false;
    const ir_op *r = IR_OP(w->m, g->reduce);
    return r->code == IR_SUM && r->nin == 1 && r->phase == IR_PH_OPTIMIZER &&
           r->res[0]->type.dtype == IR_F32;
}

/* Whether op only renames its operand: a constrain, which the partitioner
 * leaves where a partial value over an axis of one rank becomes whole
 * (the same bytes: the memory plan shares its buffer, the plan holds no
 * instruction for it). A TOTAL group reads through such ops. */
static bool total_alias(const ir_op *op)
{
    return op->code == IR_CONSTRAIN && op->nin == 1 && op->nres == 1;
}

/* The value v renames, through any number of total_alias ops. */
static const ir_value *total_src(const ir_value *v)
{
    while (v->def && total_alias(v->def))
        v = v->def->in[0];
    return v;
}

/* The group of the chain after group k (fuse.h): a sum of k's sum alone
 * (or of a rename of it, total_alias), which nothing else reads; -1 when
 * k's sum is no such link. */
static int total_next(const walker *w, int k)
{
    const pass_fusion *f = w->f;
    const pass_fgroup *g = &f->groups[k];
    const ir_value *r = IR_OP(w->m, g->reduce)->res[0];
    if (!r->type.rank || g->anchor != g->reduce || g->nout != 1 || g->out[0] != r)
        return -1;
    while (w->nuse[r->id] == 1 && w->reader[r->id] >= 0 &&
           total_alias(IR_OP(w->m, w->reader[r->id])))
        r = IR_OP(w->m, w->reader[r->id])->res[0];
    if (w->nuse[r->id] != 1 || w->reader[r->id] < 0)
        return -1;
    int j = w->reader[r->id], n = f->group_of[j];
    if (n < 0 || !total_sum(w, &f->groups[n]) || f->groups[n].ops[0] != j ||
        f->groups[n].reduce != j || IR_OP(w->m, j)->rep != IR_OP(w->m, g->reduce)->rep)
        return -1;
    return n;
}

/* The chain starting at group k, its groups into chain[] (at most
 * PASS_FUSE_MULTI_PARAMS): how many, or 0 when it does not reach a scalar
 * (or k is another's link). */
static int total_chain(const walker *w, int k, const bool *linked, int *chain)
{
    if (!total_sum(w, &w->f->groups[k]) || linked[k])
        return 0;
    int n = 0;
    for (int g = k; g >= 0 && n < PASS_FUSE_MULTI_PARAMS; g = total_next(w, g)) {
        chain[n++] = g;
        const pass_fgroup *t = &w->f->groups[g];
        if (IR_OP(w->m, t->reduce)->res[0]->type.rank)
            continue;
        /* the last: its epilogue scalars of floats, which the kernel's
         * last block computes */
        for (int i = 0; i < t->nops; i++) {
            const ir_op *op = IR_OP(w->m, t->ops[i]);
            if (t->ops[i] > t->reduce &&
                (op->nres != 1 || op->res[0]->type.rank || !is_float(op->res[0]->type.dtype)))
                return 0;
        }
        return n;
    }
    return 0;
}

/* Whether group g is scalars that a TOTAL group's epilogue may run: an
 * elementwise group (not multi-tensor) of the optimizer phase and
 * repetition rep, every op's result a float of rank 0. */
static bool total_scalars(const walker *w, const pass_fgroup *g, int rep)
{
    if (g->kind != PASS_FUSE_ELEMENTWISE || g->nparts)
        return false;
    for (int i = 0; i < g->nops; i++) {
        const ir_op *op = IR_OP(w->m, g->ops[i]);
        if (op->phase != IR_PH_OPTIMIZER || op->rep != rep || op->nres != 1 ||
            op->res[0]->type.rank || !is_float(op->res[0]->type.dtype))
            return false;
    }
    return true;
}

/* Builds a run of chains (their groups marked in mark[] with stamp) into
 * the TOTAL group out (parts: each chain's first group, total set). */
static void total_build(const walker *w, const int *first, const int *last, int nchains,
                        const int *mark, int stamp, pass_fgroup *out, su_arena *tmp)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    pass_fgroup *parts = su_alloc(&f->arena, (size_t)nchains * sizeof *parts);
    int lo = f->groups[first[0]].ops[0], hi = 0, nops = 0;
    for (int k = 0; k < f->ngroups; k++) /* the chains' groups, and scalars between */
        if (mark[k] == stamp && f->groups[k].anchor > hi)
            hi = f->groups[k].anchor;
    for (int c = 0; c < nchains; c++) {
        parts[c] = f->groups[first[c]];
        parts[c].total = f->groups[last[c]].reduce;
        parts[c].anchor = parts[c].reduce;
        /* a chain of one group: the part is its prologue and sum */
        int np = 0;
        while (np < parts[c].nops && parts[c].ops[np] <= parts[c].reduce)
            np++;
        parts[c].nops = np;
    }
    int nreads = 0;
    for (int i = lo; i <= hi; i++)
        if (f->group_of[i] >= 0 && mark[f->group_of[i]] == stamp) {
            nops++;
            nreads += IR_OP(m, i)->nin;
        }
    /* the reads of each value outside the group (stored: read so, or by
     * an output or an update, or by nothing: mark_stored's rule), a
     * rename's reads counting as its operand's where a reader outside
     * reads the rename: from the last op back, each op outside the group
     * adds its reads, a rename only when its result is read outside */
    int *ext = su_alloc(tmp, ((size_t)f->nvalues + 1) * sizeof *ext);
    memset(ext, 0, ((size_t)f->nvalues + 1) * sizeof *ext);
    for (int i = 0; i < m->ops.n; i++)
        for (int j = 0; j < IR_OP(m, i)->nin; j++)
            ext[IR_OP(m, i)->in[j]->id]--;
    for (int v = 0; v < f->nvalues; v++)
        ext[v] += w->nuse[v]; /* the outputs' and updates' reads */
    for (int i = m->ops.n - 1; i >= lo; i--) {
        const ir_op *op = IR_OP(m, i);
        if (f->group_of[i] >= 0 && mark[f->group_of[i]] == stamp)
            continue;
        if (total_alias(op) && ext[op->res[0]->id] <= 0)
            continue;
        for (int j = 0; j < op->nin; j++)
            ext[op->in[j]->id]++;
    }
    pass_fgroup *g = out;
    memset(g, 0, sizeof *g);
    g->kind = PASS_FUSE_TOTAL;
    g->reduce = -1;
    g->nparts = nchains;
    g->parts = parts;
    g->ops = su_alloc(&f->arena, (size_t)nops * sizeof *g->ops);
    g->in = su_alloc(&f->arena, ((size_t)nreads + 1) * sizeof *g->in);
    g->out = su_alloc(&f->arena, ((size_t)nops + 1) * sizeof *g->out);
    for (int i = lo; i <= hi; i++) {
        if (f->group_of[i] < 0 || mark[f->group_of[i]] != stamp)
            continue;
        const ir_op *op = IR_OP(m, i);
        g->ops[g->nops++] = i;
        for (int j = 0; j < op->nin; j++) {
            const ir_value *v = op->in[j];
            int at = w->defat[total_src(v)->id];
            bool known = at >= 0 && f->group_of[at] >= 0 && mark[f->group_of[at]] == stamp;
            for (int q = 0; q < g->nin && !known; q++)
                known = g->in[q] == v;
            if (!known)
                g->in[g->nin++] = v;
        }
        const ir_value *r = op->res[0];
        f->stored[r->id] = !w->nuse[r->id] || ext[r->id] > 0;
        if (f->stored[r->id])
            g->out[g->nout++] = r;
    }
    g->anchor = g->ops[g->nops - 1];
    /* each part's stores: its prologue's values read outside it */
    for (int c = 0; c < nchains; c++) {
        pass_fgroup *p = &parts[c];
        const ir_value **o = su_alloc(&f->arena, ((size_t)p->nops + 1) * sizeof *o);
        int no = 0;
        for (int i = 0; i < p->nops; i++)
            if (f->stored[IR_OP(m, p->ops[i])->res[0]->id])
                o[no++] = IR_OP(m, p->ops[i])->res[0];
        p->out = o;
        p->nout = no;
    }
}

/* Gathers the chains of sums to scalars into TOTAL groups (fuse.h),
 * renumbering the groups and group_of[]. */
static void gather_totals(walker *w, su_arena *tmp)
{
    pass_fusion *f = w->f;
    const ir_module *m = w->m;
    int n = f->ngroups;
    bool *linked = su_alloc(tmp, ((size_t)n + 1) * sizeof *linked);
    memset(linked, 0, ((size_t)n + 1) * sizeof *linked);
    bool any = false;
    for (int k = 0; k < n; k++)
        if (total_sum(w, &f->groups[k])) {
            int nx = total_next(w, k);
            if (nx >= 0)
                linked[nx] = true;
            any = true;
        }
    if (!any)
        return;
    int *mark = su_alloc(tmp, ((size_t)n + 1) * sizeof *mark); /* a run's stamp, or 0 */
    int *vmark = su_alloc(tmp, ((size_t)f->nvalues + 1) * sizeof *vmark);
    memset(mark, 0, ((size_t)n + 1) * sizeof *mark);
    memset(vmark, 0, ((size_t)f->nvalues + 1) * sizeof *vmark);
    int *chain = su_alloc(tmp, (PASS_FUSE_MULTI_PARAMS + 1) * sizeof *chain);
    int *first = su_alloc(tmp, ((size_t)n + 1) * sizeof *first);
    int *last = su_alloc(tmp, ((size_t)n + 1) * sizeof *last);
    int *newid = su_alloc(tmp, ((size_t)n + 1) * sizeof *newid);
    pass_fgroup *out = su_alloc(&f->arena, ((size_t)n + 1) * sizeof *out);
    int nout = 0, stamp = 0, made = 0;
    for (int k = 0; k < n; k++) {
        if (mark[k] > 0)
            continue; /* in a run made already */
        int len = total_chain(w, k, linked, chain);
        bool ok = len > 0;
        int nch = 0, nlinks = 0, lo = f->groups[k].ops[0], hi = 0;
        if (ok) {
            /* the run from chain k on, greedily: each chain's groups get
             * the run's stamp; a group that is not a free chain's start,
             * or a chain that breaks a rule, ends it */
            stamp++;
            int nparams = 0, rep = IR_OP(m, f->groups[k].reduce)->rep;
            for (int q = k; q < n; q++) {
                if (mark[q] == stamp)
                    continue; /* a link of one of the run's chains */
                int cl = mark[q] ? 0 : total_chain(w, q, linked, chain);
                if (!cl && !mark[q] && total_scalars(w, &f->groups[q], rep) &&
                    w->ncomm[f->groups[q].anchor] == w->ncomm[lo]) {
                    mark[q] = stamp; /* scalars between chains: the epilogue's */
                    hi = f->groups[q].anchor > hi ? f->groups[q].anchor : hi;
                    continue;
                }
                if (!cl)
                    break;
                const pass_fgroup *tail = &f->groups[chain[cl - 1]];
                if (IR_OP(m, tail->anchor)->rep != rep || w->ncomm[tail->anchor] != w->ncomm[lo])
                    break;
                int add = 0; /* the values new to the run: the pointer limit */
                for (int c = 0; c < cl; c++) {
                    const pass_fgroup *g = &f->groups[chain[c]];
                    for (int j = 0; j < g->nin + g->nout; j++) {
                        const ir_value *v = j < g->nin ? g->in[j] : g->out[j - g->nin];
                        add += vmark[v->id] != stamp;
                        vmark[v->id] = stamp;
                    }
                }
                if (nch && nparams + add > PASS_FUSE_MULTI_PARAMS)
                    break;
                nparams += add;
                for (int c = 0; c < cl; c++)
                    mark[chain[c]] = stamp;
                first[nch] = chain[0];
                last[nch++] = chain[cl - 1];
                nlinks += cl - 1;
                hi = tail->anchor > hi ? tail->anchor : hi;
            }
            /* worth a kernel less, and no op outside the run, between its
             * first op and its last, reads a value of the run (the kernel
             * runs at the last) */
            ok = nch > 1 || nlinks > 0;
            for (int i = lo; i <= hi && ok; i++) {
                int gi = f->group_of[i];
                const ir_op *op = IR_OP(m, i);
                if ((gi >= 0 && mark[gi] == stamp) || total_alias(op))
                    continue;
                for (int j = 0; j < op->nin && ok; j++) {
                    int at = w->defat[total_src(op->in[j])->id];
                    ok = at < 0 || f->group_of[at] < 0 || mark[f->group_of[at]] != stamp;
                }
            }
            if (!ok) /* the chains stay as they are; a later one may start a run */
                for (int q = k; q < n; q++)
                    if (mark[q] == stamp)
                        mark[q] = 0;
        }
        if (!ok) {
            out[nout] = f->groups[k];
            out[nout].id = nout;
            newid[k] = nout++;
            continue;
        }
        total_build(w, first, last, nch, mark, stamp, &out[nout], tmp);
        out[nout].id = nout;
        for (int q = k; q < n; q++)
            if (mark[q] == stamp)
                newid[q] = nout;
        nout++;
        made++;
    }
    if (!made)
        return;
    for (int i = 0; i < f->nops; i++)
        if (f->group_of[i] >= 0)
            f->group_of[i] = newid[f->group_of[i]];
    f->groups = out;
    f->ngroups = nout;
}

/* Gathers the optimizer's elementwise groups into multi-tensor groups
 * (fuse.h), renumbering the groups and group_of[], and names every group
 * (group_name). What only the gathering reads lives in tmp. */
static void gather_multi(walker *w, uint64_t skip, su_arena *tmp)
{
    pass_fusion *f = w->f;
    const ir_module *m = w->m;
    multi M = {.w = w, .stamp = 1, .skip = skip};
    M.mark = su_alloc(tmp, (size_t)(f->ngroups + 1) * sizeof *M.mark);
    M.vmark = su_alloc(tmp, (size_t)(f->nvalues + 1) * sizeof *M.vmark);
    memset(M.vmark, 0, (size_t)(f->nvalues + 1) * sizeof *M.vmark);
    int *newid = su_alloc(tmp, (size_t)(f->ngroups + 1) * sizeof *newid);
    M.defer = su_alloc(tmp, (size_t)(f->ngroups + 1) * sizeof *M.defer);
    pass_fgroup *out = su_alloc(&f->arena, (size_t)(f->ngroups + 1) * sizeof *out);
    int nout = 0;
    M.sig = su_alloc(tmp, (size_t)(f->ngroups + 1) * sizeof *M.sig);
    M.per = su_alloc(tmp, (size_t)(f->ngroups + 1) * sizeof *M.per);
    int first = f->ngroups;
    for (int k = 0; k < f->ngroups; k++) {
        M.mark[k] = -1;
        if (first == f->ngroups && multi_candidate(m, &f->groups[k]))
            first = k;
    }
    find_periods(&M, first);
    for (int k = 0; k < f->ngroups; k++) {
        const pass_fgroup *g = &f->groups[k];
        bool cand = multi_candidate(m, g);
        mjoin j = M.nrun > 0 && cand ? multi_joins(&M, k) : M_BREAK;
        if (j == M_JOIN && period_ends(&M, k))
            j = M_BREAK;
        if (j == M_BYPASS) {
            M.defer[M.ndefer++] = k;
            continue;
        }
        if (M.nrun > 0 && j == M_BREAK)
            multi_flush(&M, out, &nout, newid);
        if (!cand) {
            out[nout] = *g;
            out[nout].id = nout;
            newid[k] = nout++;
            continue;
        }
        if (M.nrun == 0)
            M.nparams = multi_params(&M, k);
        M.run[M.nrun++] = k;
        M.mark[k] = M.stamp;
    }
    multi_flush(&M, out, &nout, newid);
    for (int i = 0; i < f->nops; i++)
        if (f->group_of[i] >= 0)
            f->group_of[i] = newid[f->group_of[i]];
    f->groups = out;
    f->ngroups = nout;
    for (int k = 0; k < nout; k++) {
        pass_fgroup *g = &out[k];
        g->name = group_name(m, f, g);
        for (int r = 0; r < g->nparts; r++) {
            g->parts[r].id = k;
            g->parts[r].name = g->name;
        }
    }
}

/* A use of v after the run (an output, an update): read at op n. */
static void use_after(walker *w, const ir_value *v)
{
    if (v) {
        w->nuse[v->id]++;
        w->lastread[v->id] = w->m->ops.n;
    }
}

/* Maps value ids to the op making them, counts their readers, and counts
 * the collectives before each op (the walker's arrays, made in its
 * fusion's arena); false when an operand is made by no earlier op. */
static bool index_values(walker *w, su_buf *err)
{
    const ir_module *m = w->m;
    su_arena *a = &w->f->arena;
    w->defat = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *w->defat);
    w->nuse = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *w->nuse);
    w->reader = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *w->reader);
    w->lastread = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *w->lastread);
    w->ncomm = su_alloc(a, ((size_t)m->ops.n + 1) * sizeof *w->ncomm);
    w->norm = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *w->norm);
    w->stat = su_alloc(a, ((size_t)m->ops.n + 1) * sizeof *w->stat);
    memset(w->stat, 0, ((size_t)m->ops.n + 1) * sizeof *w->stat);
    for (int v = 0; v <= m->next_id; v++)
        w->defat[v] = w->reader[v] = w->lastread[v] = w->norm[v] = -1;
    w->ncomm[0] = 0;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        ir_opclass cls = ir_ops[op->code].cls;
        w->ncomm[i + 1] = w->ncomm[i] + (cls == IR_C_COMM || cls == IR_C_P2P);
        for (int k = 0; k < op->nin; k++) {
            int id = op->in[k]->id;
            if (id < 0 || id >= m->next_id || w->defat[id] < 0) {
                su_buf_printf(err, "fusion: op %d (%s) reads a value no earlier op makes", i,
                              ir_ops[op->code].name);
                return false;
            }
            w->nuse[id]++;
            w->reader[id] = w->lastread[id] = i;
        }
        for (int r = 0; r < op->nres; r++)
            if (op->res[r]->id >= 0 && op->res[r]->id < m->next_id)
                w->defat[op->res[r]->id] = i;
    }
    for (int i = 0; i < m->outputs.n; i++)
        use_after(w, IR_OUTPUT(m, i)->v);
    use_after(w, m->train.loss);
    for (int i = 0; i < m->updates.n; i++) {
        use_after(w, IR_UPDATE(m, i)->v);
        use_after(w, IR_UPDATE(m, i)->grad);
    }
    return true;
}

/* ---- matmul epilogues ---- */

/* A bias for a result of type t: t's dtype, its last dim, every other
 * dim 1 (broadcast over rows and batches). */
static bool is_bias(const ir_type *b, const ir_type *t)
{
    if (b->dtype != t->dtype || b->rank < 1 || b->rank > t->rank ||
        b->dim[b->rank - 1] != t->dim[t->rank - 1])
        return false;
    for (int d = 0; d < b->rank - 1; d++)
        if (b->dim[d] != 1)
            return false;
    return true;
}

/* A gelu_grad(x, cur) that cuBLASLt can do after matmul mm as its
 * EPILOGUE_DGELU, x (into *other) read as the GELU input matrix: the
 * chain's first and only step, the matmul not of parts, cur 16-bit
 * (Transformer Engine's and Apex's MLP backward; as with the GELU input
 * matrix stored, PASS_EPI_AUX) with a last dim a multiple of
 * PASS_EPI_AUX_ALIGN, and x of cur's type (a [M, N] matrix as D is, the
 * same batches) but not cur itself. GPT-2's MLP backward: gelu_grad(h @
 * w1 + b1, dy @ w2^T), whose x the forward's GELU_AUX stored. */
static unsigned dgelu_step(const ir_op *mm, const ir_op *op, const ir_value *cur,
                           unsigned have, const ir_value **other)
{
    const ir_value *x = op->in[0];
    if (have || mm->a->parts || mm->in[0]->type.rank < 2 || mm->in[1]->type.rank < 2 ||
        op->nin != 2 || op->in[1] != cur || x == cur ||
        !ir_type_eq(&x->type, &cur->type) || cur->type.rank < 1 ||
        (cur->type.dtype != IR_BF16 && cur->type.dtype != IR_F16) ||
        cur->type.dim[cur->type.rank - 1] % PASS_EPI_AUX_ALIGN)
        return 0;
    *other = x;
    return PASS_EPI_DGELU;
}

bool pass_fuse_dgelu(const ir_op *op, int uses)
{
    const ir_op *mm = op->code == IR_GELU_GRAD && op->nin == 2 ? op->in[1]->def : NULL;
    const ir_value *x;
    return mm && mm->code == IR_MATMUL && mm->nres == 1 && all_float(mm) && uses == 1 &&
           op->phase == mm->phase && op->rep == mm->rep &&
           dgelu_step(mm, op, mm->res[0], 0, &x) == PASS_EPI_DGELU;
}

/* What op adds to the epilogue of matmul mm (epilogue so far: have) when
 * it reads cur, the chain's last value: a PASS_EPI_* bit, its other
 * operand in *other; 0 when it cannot join (fuse.h). */
static unsigned epilogue_step(const ir_op *mm, const ir_op *op, const ir_value *cur,
                              unsigned have, const ir_value **other)
{
    *other = NULL;
    if (op->phase != mm->phase || op->rep != mm->rep || op->nres != 1 ||
        !ir_type_eq(&op->res[0]->type, &cur->type) ||
        (have & (PASS_EPI_RELU | PASS_EPI_GELU | PASS_EPI_DGELU)))
        return 0;
    if (op->code == IR_RELU || op->code == IR_GELU)
        return op->code == IR_RELU ? PASS_EPI_RELU : PASS_EPI_GELU;
    if (op->code == IR_GELU_GRAD)
        return dgelu_step(mm, op, cur, have, other);
    if (op->code != IR_ADD || op->in[0] == op->in[1])
        return 0;
    const ir_value *o = op->in[0] == cur ? op->in[1] : op->in[0];
    /* a matrix @ vector has N = 1 for cuBLASLt: no bias along its last dim */
    bool vec = mm->in[1]->type.rank < 2;
    unsigned bit = ir_type_eq(&o->type, &cur->type)        ? PASS_EPI_RESIDUAL
                   : !vec && is_bias(&o->type, &cur->type) ? PASS_EPI_BIAS
                                                           : 0;
    if (have & bit)
        return 0;
    *other = o;
    return bit;
}

/* The op after matmul op i that reads cur (the chain's value, read more
 * than once) first, when it is a gelu that cuBLASLt can do with cur
 * stored as its GELU input matrix (PASS_EPI_AUX): the matmul not of
 * parts (three calls), cur 16-bit (the epilogue of Transformer Engine's
 * bf16 and f16 MLPs; an f32 matmul that cuBLASLt had no algorithm for
 * would run twice, costing more than the gelu kernel it saves) with a
 * last dim a multiple of PASS_EPI_AUX_ALIGN, and no op before the gelu
 * reading cur, which the group writes there; else -1. GPT-2's MLP:
 * gelu(h @ w1 + b1), whose operand the backward's gelu_grad reads. */
static int gelu_first(const walker *w, int i, const ir_value *cur)
{
    const ir_op *mm = IR_OP(w->m, i);
    if (mm->a->parts || cur->type.rank < 1 ||
        (cur->type.dtype != IR_BF16 && cur->type.dtype != IR_F16) ||
        cur->type.dim[cur->type.rank - 1] % PASS_EPI_AUX_ALIGN)
        return -1;
    int end = i + PASS_FUSE_HOLD < w->m->ops.n ? i + PASS_FUSE_HOLD + 1 : w->m->ops.n;
    for (int j = i + 1; j < end; j++) {
        const ir_op *op = IR_OP(w->m, j);
        for (int k = 0; k < op->nin; k++)
            if (op->in[k] == cur)
                return op->code == IR_GELU && op->nin == 1 ? j : -1;
    }
    return -1;
}

/* Matmul op i and the chain of ops cuBLASLt does after it, as a group of
 * its own when the chain is not empty. */
static void matmul_group(walker *w, int i)
{
    const ir_op *mm = IR_OP(w->m, i);
    if (mm->code != IR_MATMUL || mm->nres != 1 || !all_float(mm))
        return;
    grp g;
    memset(&g, 0, sizeof g);
    int chain[8], n = 0, nstep = 0, last = 0; /* last: the chain up to its last step */
    const ir_value *cur = mm->res[0];
    while (nstep < 4 && n < 8) {
        /* the next op: cur's one reader, or a gelu that reads it first
         * with cur stored for its later readers (PASS_EPI_AUX) */
        bool aux = false;
        int at = -1;
        if (w->nuse[cur->id] == 1 && w->reader[cur->id] >= 0)
            at = w->reader[cur->id];
        else if (w->nuse[cur->id] > 1 && (at = gelu_first(w, i, cur)) >= 0)
            aux = true;
        if (at < 0 || w->f->group_of[at] >= 0)
            break;
        /* the group runs at its last op and keeps the matmul's operands
         * alive until then: as for any group, at most PASS_FUSE_HOLD ops
         * later and over no collective (a gradient's product added to the
         * accumulator a microbatch later would hold the product's rows) */
        if (at - i > PASS_FUSE_HOLD || w->ncomm[at] != w->ncomm[i + 1])
            break;
        const ir_op *op = IR_OP(w->m, at);
        const ir_value *other;
        if (pass_pipeline_sum(op))
            break;
        if (!aux && total_alias(op) && op->phase == mm->phase && op->rep == mm->rep &&
            ir_type_eq(&op->res[0]->type, &cur->type)) {
            /* a rename (a partial over mesh axes of one rank made whole,
             * the same bytes): the chain goes on through it, and ends
             * at a step */
            chain[n++] = at;
            cur = op->res[0];
            continue;
        }
        unsigned bit = epilogue_step(mm, op, cur, g.epilogue, &other);
        if (!bit || (aux && bit != PASS_EPI_GELU))
            break;
        g.epilogue |= bit | (aux ? PASS_EPI_AUX : 0);
        if (bit == PASS_EPI_BIAS)
            g.bias = other;
        if (bit == PASS_EPI_RESIDUAL)
            g.residual = other;
        chain[n++] = at;
        nstep++;
        last = n;
        cur = op->res[0];
    }
    n = last;
    if (n == 0)
        return;
    cur = IR_OP(w->m, chain[n - 1])->res[0];
    int k = new_group(w, mm, F_EW, i);
    g.kind = PASS_FUSE_MATMUL;
    g.dom = g.epi = cur->type;
    g.reduce = i;
    g.last = chain[n - 1];
    g.phase = mm->phase;
    g.rep = mm->rep;
    g.hold = INT_MAX;
    g.sealed = true; /* nothing else joins it */
    w->g[k] = g;
    w->f->group_of[i] = k;
    for (int j = 0; j < n; j++)
        w->f->group_of[chain[j]] = k;
}

/* Whether attn_dk op dk and attn_dv op dv are of one attention: the same
 * q, k, dy, statistics and positions, each with its heads inner in both
 * or in neither (heads_inner's bits: dk's q, k, v, dy, dv's q, k, dy;
 * their results each its own), flags, phase and repetition, and heads the
 * tiled kernels take. */
static bool pair_of(const ir_op *dk, const ir_op *dv)
{
    unsigned hk = dk->a->heads_inner, hv = dv->a->heads_inner;
    if ((hk & 3) != (hv & 3) || (hk >> 3 & 1) != (hv >> 2 & 1))
        return false;
    if (dk->nin != dv->nin + 1 || dk->a->causal != dv->a->causal ||
        dk->phase != dv->phase || dk->rep != dv->rep ||
        dk->res[0]->type.dtype != dv->res[0]->type.dtype)
        return false;
    if (dk->in[0] != dv->in[0] || dk->in[1] != dv->in[1] || dk->in[3] != dv->in[2] ||
        dk->in[4] != dv->in[3] || (dk->nin == 6 && dk->in[5] != dv->in[4]))
        return false;
    const ir_type *q = &dk->in[0]->type, *dy = &dk->in[3]->type;
    return q->rank >= 2 && q->dim[q->rank - 1] <= PASS_ATTN_MAX_WIDTH &&
           dy->dim[dy->rank - 1] <= PASS_ATTN_MAX_WIDTH;
}

/* Whether op is an op of attention (but attn_delta) whose rows (q, k,
 * then v (attn_dv: dy), and dy) are all of one dtype, 16-bit, or with f32
 * f32, and its result too where it has their layout (attn_stats' and
 * attn_lse's are f32 anyway), its head widths multiples of 16 up to
 * PASS_ATTN_TC_WIDTH. */
static bool attn_tc_rows(const ir_op *op, bool f32)
{
    int rows = ir_attn_layout_operands(op->code);
    if (rows == 0 || op->code == IR_ATTN_DELTA || op->nres != 1 || op->nin < rows)
        return false;
    ir_dtype t = op->in[0]->type.dtype;
    if (f32 ? t != IR_F32 : t != IR_F16 && t != IR_BF16)
        return false;
    for (int i = 1; i < rows; i++)
        if (op->in[i]->type.dtype != t)
            return false;
    if (ir_attn_result_swapped(op->code) && op->res[0]->type.dtype != t)
        return false;
    /* attn_lse has no v: its one width is q's */
    const ir_type *q = &op->in[0]->type;
    const ir_type *v = op->code == IR_ATTN_LSE ? q : &op->in[2]->type;
    if (q->rank < 2 || v->rank != q->rank)
        return false;
    int64_t d = q->dim[q->rank - 1], dv = v->dim[v->rank - 1];
    return d % 16 == 0 && dv % 16 == 0 && d > 0 && dv > 0 && d <= PASS_ATTN_TC_WIDTH &&
           dv <= PASS_ATTN_TC_WIDTH;
}

bool pass_attn_tensor_cores(const ir_op *op)
{
    return attn_tc_rows(op, false);
}

bool pass_attn_x3(const ir_op *op)
{
    return attn_tc_rows(op, true);
}

int pass_attn_tc_arch(const ir_op *op)
{
    return op->in[0]->type.dtype == IR_BF16 ? 80 : 70;
}

/* Whether attn_lse op l and attention op a are of one attention: the
 * same q, k and positions, flags, phase and repetition, and heads the
 * tiled kernels take. */
static bool lse_of(const ir_op *l, const ir_op *a)
{
    if (a->nin != l->nin + 1 || a->in[0] != l->in[0] || a->in[1] != l->in[1] ||
        (l->nin == 3 && a->in[3] != l->in[2]) || a->a->causal != l->a->causal ||
        (a->a->heads_inner & 3) != l->a->heads_inner || a->phase != l->phase ||
        a->rep != l->rep)
        return false;
    const ir_type *q = &a->in[0]->type, *v = &a->in[2]->type;
    return q->dim[q->rank - 1] <= PASS_ATTN_MAX_WIDTH && v->dim[v->rank - 1] <= PASS_ATTN_MAX_WIDTH;
}

/* Op i, of code `anchor`, with the op of code `first` before it that
 * `same` pairs it with as one group of kind (fuse.h: the attention pair,
 * attention with its lse): no collective, send or recv between, at most
 * PASS_FUSE_HOLD ops apart, and nothing between reading the first op's
 * result, which the kernel writes at i. */
static void attn_two(walker *w, int i, ir_opcode anchor, ir_opcode first,
                     bool (*same)(const ir_op *, const ir_op *), pass_fuse_kind kind)
{
    const ir_op *an = IR_OP(w->m, i);
    if (an->code != anchor || an->nres != 1 || w->f->group_of[i] >= 0)
        return;
    int lo = i - PASS_FUSE_HOLD < 0 ? 0 : i - PASS_FUSE_HOLD;
    for (int j = i - 1; j >= lo; j--) {
        const ir_op *fo = IR_OP(w->m, j);
        if (fo->code != first || fo->nres != 1 || w->f->group_of[j] >= 0 || !same(an, fo))
            continue;
        if (w->ncomm[i] != w->ncomm[j + 1])
            return; /* a collective, send or recv between */
        for (int x = j + 1; x < i; x++) {
            const ir_op *op = IR_OP(w->m, x);
            for (int k = 0; k < op->nin; k++)
                if (op->in[k] == fo->res[0])
                    return;
        }
        int k = new_group(w, an, F_EW, i);
        w->g[k].kind = kind;
        w->g[k].reduce = i;
        w->g[k].sealed = true; /* nothing else joins it */
        w->f->group_of[j] = k;
        w->f->group_of[i] = k;
        return;
    }
}

bool pass_fuse(const ir_module *m, pass_fusion *f, su_buf *err)
{
    return pass_fuse_ex(m, 0, f, err);
}

/* The walk of pass_fuse_ex, done once for the multi-tensor runs' tries
 * (fuse.h): the groups before gather_multi in pre, and the walker that
 * made them (w.f is &pre). */
struct pass_fuse_walk {
    walker w;
    pass_fusion pre;
    bool held;      /* a held program's walk (pass_fuse_walk_held) */
    /* lazy: w and pre stay the held program's (its ops hops, read through
     * view, the module's fields but for its ops and values), the module
     * itself expanded (mx); each pass_fuse_from_walk gathers the held
     * program's groups and copies them onto the expanded ops
     * (expand_final), where a walk expanded would gather every middle
     * microbatch's copies of them again */
    bool lazy;
    ir_module view;
    const ir_module *mx;
    ir_op **hops;
    int nheld;
    pass_expansion map;
    int *kept_at;   /* [nheld]: a held op's index in mx, -1 (an instances op) */
    int *cidx;      /* [nheld]: a copied op's rank among them (microbatch 2's
                     * ops the middle microbatches copy), -1 */
    int *copy_at;   /* [ncopied * M]: copy c's index in mx for microbatch j at c M + j */
    int ncopied;
    int last_copy;  /* the index in mx of the last copy */
    const ir_value **rwnew; /* [view.next_id]: a value a kept op read while held,
                             * which the expansion changed (map.rw), its value
                             * expanded; NULL none */
    uint8_t *rwop;  /* [nheld]: a kept op whose operand the expansion changed */
    pass_fusion xgroups; /* expand_walk's, when the lazy walk falls back to it */
    su_arena xtmp;
};

static void walk_into(pass_fuse_walk *W, const ir_module *m, su_buf *err, const int *hidden,
                      const int *hidden_at);

static bool walk_new(const ir_module *m, pass_fuse_walk **out, su_buf *err, const int *hidden,
                     const int *hidden_at)
{
    pass_fuse_walk *W = su_xmalloc(err->oom, sizeof *W);
    memset(W, 0, sizeof *W);
    *out = W; /* the caller's to free, also after a failure */
    walk_into(W, m, err, hidden, hidden_at);
    return W->w.m != NULL;
}

/* W (zeroed) the walk of m; W->w.m NULL when m is malformed. */
static void walk_into(pass_fuse_walk *W, const ir_module *m, su_buf *err, const int *hidden,
                      const int *hidden_at)
{
    pass_fusion *f = &W->pre;
    su_arena_init(&f->arena, err->oom);
    f->nops = m->ops.n;
    f->nvalues = m->next_id;
    f->group_of = su_alloc(&f->arena, (size_t)(f->nops + 1) * sizeof *f->group_of);
    f->stored = su_alloc(&f->arena, (size_t)(f->nvalues + 1) * sizeof *f->stored);
    for (int i = 0; i < f->nops; i++)
        f->group_of[i] = -1;
    walker *w = &W->w;
    *w = (walker){.m = m, .f = f};
    w->g = su_alloc(&f->arena, (size_t)(f->nops + 1) * sizeof *w->g);
    w->parent = su_alloc(&f->arena, (size_t)(f->nops + 1) * sizeof *w->parent);
    if (!index_values(w, err)) {
        w->m = NULL;
        return;
    }
    w->hidden = hidden;
    for (int v = 0; hidden && v < m->next_id; v++)
        if (hidden[v]) { /* read later, by a microbatch the instances ops hold */
            w->nuse[v] += hidden[v];
            w->lastread[v] = hidden_at[v] > w->lastread[v] ? hidden_at[v] : w->lastread[v];
        }
    for (int i = 0; i < m->ops.n; i++)
        matmul_group(w, i);
    for (int i = 0; i < m->ops.n; i++) {
        attn_two(w, i, IR_ATTN_DK, IR_ATTN_DV, pair_of, PASS_FUSE_ATTN_PAIR);
        attn_two(w, i, IR_ATTN_LSE, IR_ATTENTION, lse_of, PASS_FUSE_ATTN_LSE);
    }
    find_views(w);
    for (int i = 0; i < m->ops.n; i++)
        place(w, i);
    join_norm_cols(w);
    join_siblings(w);
    drop_lone_transposes(w);
    renumber(w);
    w->ng = f->ngroups;
    for (int k = 0; k < w->ng; k++)
        w->parent[k] = k; /* group_of[] now holds the final numbers */
    mark_stored(w);
    fill_groups(w);
    w->hidden = NULL; /* the caller's */
}

bool pass_fuse_walk_new(const ir_module *m, pass_fuse_walk **out, su_buf *err)
{
    return walk_new(m, out, err, NULL, NULL);
}

/* ---- a held program's walk, expanded ----
 *
 * The walk of a held program (passes/instances.c) decides the groups of
 * microbatch 2's ops as it would decide them in the unrolled program:
 * every value a middle microbatch reads counts those reads (its readers,
 * its last read after microbatch 2's ops, stored), and no group spans an
 * instances op (which counts as a send among the collectives). A group
 * lies within one task's instance, so a middle microbatch's copies of
 * microbatch 2's ops make copies of its groups, each reading that
 * microbatch's values where microbatch 2's read its own. Expanded, each
 * group of the held walk is one group of the program expanded per
 * microbatch it stands for, numbered again in order of its first op,
 * its ops, inputs and outputs taken from the expanded ops; a value's
 * `stored` is its template's. */

/* W (the walk of the held program, whose ops were held[0 .. nheld)) made
 * the walk of mx, the program expanded by map. False, W unchanged, when a
 * group of the held walk does not map one to one onto the expanded ops.
 * The new groups are made in *fx and the scratch in *tmp, the caller's
 * to free however this ends (an allocation failure jumps out of it). */
static bool expand_walk(pass_fuse_walk *W, const ir_module *mx, ir_op *const *held, int nheld,
                        const pass_expansion *map, pass_fusion *nf, su_arena *tmp,
                        su_buf *err)
{
    const pass_fusion *pre = &W->pre;
    int ng = pre->ngroups, M = map->microbatches, n = mx->ops.n;
    if (map->n != n || M < 1)
        return false;
    memset(nf, 0, sizeof *nf);
    su_arena_init(&nf->arena, err->oom);
    su_arena *a = &nf->arena;
    nf->nops = n;
    nf->nvalues = mx->next_id;
    nf->group_of = su_alloc(a, (size_t)(n + 1) * sizeof *nf->group_of);
    nf->stored = su_alloc(a, (size_t)(nf->nvalues + 1) * sizeof *nf->stored);
    su_arena_init(tmp, err->oom);
    size_t slots = (size_t)ng * (size_t)(M + 1) + 1;
    int *id = su_alloc(tmp, slots * sizeof *id); /* (group, microbatch + 1): its number */
    int *gsrc = su_alloc(tmp, slots * sizeof *gsrc);
    for (size_t k = 0; k < slots; k++)
        id[k] = -1;
    int nng = 0;
    bool ok = true;
    for (int e = 0; e < n && ok; e++) {
        int s = map->src[e], j = map->mb[e];
        const ir_op *op = IR_OP(mx, e), *h = s >= 0 && s < nheld ? held[s] : NULL;
        ok = h && j >= -1 && j < M && h->nres == op->nres && h->code == op->code;
        for (int r = 0; ok && r < op->nres; r++)
            nf->stored[op->res[r]->id] = pre->stored[h->res[r]->id];
        int hg = ok ? pre->group_of[s] : -1;
        nf->group_of[e] = -1;
        if (hg < 0)
            continue;
        int *slot = &id[(size_t)hg * (size_t)(M + 1) + (size_t)(j + 1)];
        if (*slot < 0) {
            gsrc[nng] = hg;
            *slot = nng++;
        }
        nf->group_of[e] = *slot;
    }
    walker *w = &W->w, x = {.m = mx, .f = nf}; /* no grp: the walk is done */
    if (ok) {
        nf->ngroups = nng;
        nf->groups = su_alloc(a, (size_t)(nng + 1) * sizeof *nf->groups);
        for (int k = 0; k < nng; k++) {
            const pass_fgroup *G = &pre->groups[gsrc[k]];
            nf->groups[k] = (pass_fgroup){.id = k, .kind = G->kind, .epilogue = G->epilogue,
                                         .reduce = -1};
        }
        x.parent = su_alloc(a, (size_t)(nng + 1) * sizeof *x.parent);
        for (int k = 0; k < nng; k++)
            x.parent[k] = k;
        x.ng = nng;
        ok = index_values(&x, err);
    }
    if (ok)
        fill_groups(&x);
    /* each group the held one's ops, place for place */
    for (int k = 0; ok && k < nng; k++) {
        const pass_fgroup *G = &pre->groups[gsrc[k]];
        pass_fgroup *g = &nf->groups[k];
        ok = g->nops == G->nops;
        for (int q = 0; ok && q < g->nops; q++)
            ok = map->src[g->ops[q]] == G->ops[q];
        for (int q = 0; ok && q < g->nops; q++) {
            if (G->ops[q] == G->reduce)
                g->reduce = g->ops[q];
            if (G->has_sib && G->ops[q] == G->sib) {
                g->has_sib = true;
                g->sib = g->ops[q];
            }
            if (G->has_xgrad && G->ops[q] == G->xgrad) {
                g->has_xgrad = true;
                g->xgrad = g->ops[q];
            }
            for (int c = 0; c < G->ncols; c++)
                if (G->ops[q] == G->cols[c])
                    g->cols[g->ncols++] = g->ops[q];
            const ir_op *h = held[G->ops[q]], *op = IR_OP(mx, g->ops[q]);
            for (int i = 0; i < h->nin && i < op->nin; i++) {
                if (G->bias && h->in[i] == G->bias && !g->bias)
                    g->bias = op->in[i];
                if (G->residual && h->in[i] == G->residual && !g->residual)
                    g->residual = op->in[i];
            }
        }
        ok = ok && (G->reduce < 0) == (g->reduce < 0) && G->has_sib == g->has_sib &&
             G->has_xgrad == g->has_xgrad && G->ncols == g->ncols &&
             !G->bias == !g->bias &&
             !G->residual == !g->residual;
    }
    su_arena_free(tmp);
    if (!ok) {
        pass_fusion_free(nf);
        return false;
    }
    pass_fusion_free(&W->pre);
    W->pre = *nf;
    memset(nf, 0, sizeof *nf); /* W's now */
    *w = x;
    w->f = &W->pre;
    W->held = true;
    return true;
}

/* ---- a held program's groups, copied ----
 *
 * What the walk expanded and the gathering (pass_fuse_from_walk) make of
 * a held program can be made from the held program's own groups: a
 * middle microbatch's groups are copies of microbatch 2's, the rest the
 * held program's, and the gathering (the optimizer's TOTAL and
 * multi-tensor groups, its constants' literals) changes no group of a
 * middle microbatch, nor the order of the groups before the last copied
 * op. So a lazy walk gathers the held program's groups, then copies
 * them onto the expanded ops (expand_final): each op's group, each
 * value's `stored` its template's, each group of the held program one
 * group per microbatch it stands for, numbered in order of first op up
 * to the last copy, the rest in the gathering's order, as the walk
 * expanded and its gathering number them. */

/* The index in mx of held op s for microbatch j (-1: the op kept), -1
 * none. */
static int xi(const pass_fuse_walk *W, int s, int j)
{
    if (s < 0 || s >= W->nheld)
        return -1;
    if (j < 0)
        return W->kept_at[s];
    int c = W->cidx[s];
    return c < 0 || j >= W->map.microbatches
               ? -1
               : W->copy_at[(size_t)c * (size_t)W->map.microbatches + (size_t)j];
}

/* The tables of a lazy walk (struct pass_fuse_walk), freed and cleared. */
static void lazy_tables_free(pass_fuse_walk *W)
{
    free(W->kept_at);
    free(W->cidx);
    free(W->copy_at);
    free(W->rwnew);
    free(W->rwop);
    W->kept_at = W->cidx = W->copy_at = NULL;
    W->rwnew = NULL;
    W->rwop = NULL;
}

/* Whether the held program's walk W (its module mx now expanded by map,
 * its ops hops[0 .. nheld), held_next its next_id) can stay held, each
 * gathering copied (expand_final): its groups each of copied ops alone
 * or of kept ops alone, and the groups the gathering may join or move
 * (the optimizer's) after every copy. Then W keeps hops and map (true). */
static bool go_lazy(pass_fuse_walk *W, const ir_module *mx, ir_op **hops, int nheld,
                    const pass_expansion *map, int held_next, su_buf *err)
{
    int n = mx->ops.n, M = map->microbatches;
    if (map->n != n || M < 1 || nheld < 1)
        return false;
    W->view = *mx;
    W->view.ops = (su_vec){.v = (void **)hops, .n = nheld, .cap = nheld};
    W->view.next_id = held_next;
    W->view.shared = NULL;
    W->w.m = &W->view;
    W->nheld = nheld;
    W->kept_at = su_xmalloc(err->oom, ((size_t)nheld + 1) * sizeof *W->kept_at);
    W->cidx = su_xmalloc(err->oom, ((size_t)nheld + 1) * sizeof *W->cidx);
    for (int s = 0; s < nheld; s++)
        W->kept_at[s] = W->cidx[s] = -1;
    bool ok = true;
    W->ncopied = 0;
    W->last_copy = -1;
    for (int e = 0; e < n && ok; e++) {
        int s = map->src[e], j = map->mb[e];
        ok = s >= 0 && s < nheld && j >= -1 && j < M;
        if (!ok)
            break;
        if (j < 0) {
            W->kept_at[s] = e;
        } else {
            if (W->cidx[s] < 0)
                W->cidx[s] = W->ncopied++;
            W->last_copy = e;
        }
    }
    if (ok) {
        size_t nc = (size_t)W->ncopied * (size_t)M + 1;
        W->copy_at = su_xmalloc(err->oom, nc * sizeof *W->copy_at);
        for (size_t k = 0; k < nc; k++)
            W->copy_at[k] = -1;
        for (int e = 0; e < n; e++)
            if (map->mb[e] >= 0)
                W->copy_at[(size_t)W->cidx[map->src[e]] * (size_t)M + (size_t)map->mb[e]] = e;
        W->rwnew = su_xmalloc(err->oom, ((size_t)held_next + 1) * sizeof *W->rwnew);
        memset(W->rwnew, 0, ((size_t)held_next + 1) * sizeof *W->rwnew);
        W->rwop = su_xmalloc(err->oom, (size_t)nheld + 1);
        memset(W->rwop, 0, (size_t)nheld + 1);
    }
    for (int k = 0; ok && k < map->nrw; k++) {
        const pass_rewrite *r = &map->rw[k];
        ir_value *now = r->op->in[r->at];
        ok = r->old->id >= 0 && r->old->id < held_next && r->held >= 0 && r->held < nheld &&
             hops[r->held] == r->op && (!W->rwnew[r->old->id] || W->rwnew[r->old->id] == now);
        if (ok) {
            W->rwnew[r->old->id] = now;
            W->rwop[r->held] = 1;
        }
    }
    const pass_fusion *pre = &W->pre;
    for (int k = 0; ok && k < pre->ngroups; k++) {
        const pass_fgroup *G = &pre->groups[k];
        ok = G->nops > 0 && G->ops[0] >= 0 && G->ops[0] < nheld;
        bool copied = ok && W->cidx[G->ops[0]] >= 0;
        for (int q = 0; ok && q < G->nops; q++) {
            int h = G->ops[q];
            ok = h >= 0 && h < nheld && W->kept_at[h] >= 0 && (W->cidx[h] >= 0) == copied;
        }
        if (ok && (multi_candidate(&W->view, G) || total_sum(&W->w, G)))
            ok = W->kept_at[G->ops[0]] > W->last_copy;
    }
    if (!ok) {
        lazy_tables_free(W);
        W->map = (pass_expansion){0};
        W->nheld = 0;
        W->w.m = mx;
        return false;
    }
    W->mx = mx;
    W->hops = hops;
    W->map = *map;
    W->lazy = true;
    return true;
}

/* The kept ops' operands the expansion changed, as they were held (held
 * true) or as they are expanded. */
static void held_operands(const pass_fuse_walk *W, bool held)
{
    for (int k = 0; k < W->map.nrw; k++)
        W->map.rw[k].op->in[W->map.rw[k].at] =
            held ? W->map.rw[k].old : (ir_value *)W->rwnew[W->map.rw[k].old->id];
}

/* "k<id>" and what follows the number of name t, cut at 159 characters
 * as group_name's are: written once into its place in a (a held stage's
 * copies of groups are named one by one, over a million on a deep
 * pipeline's report). */
static const char *renamed(su_arena *a, int id, const char *t)
{
    const char *rest = t ? t + (*t == 'k') : "";
    while (*rest >= '0' && *rest <= '9')
        rest++;
    char d[12];
    size_t nd = 0, nr = strlen(rest);
    unsigned v = (unsigned)id;
    do
        d[nd++] = (char)('0' + v % 10);
    while (v /= 10);
    if (1 + nd + nr > 159)
        nr = 159 - 1 - nd;
    char *s = su_alloc_raw(a, 1 + nd + nr + 1);
    s[0] = 'k';
    for (size_t k = 0; k < nd; k++)
        s[1 + k] = d[nd - 1 - k];
    memcpy(s + 1 + nd, rest, nr);
    s[1 + nd + nr] = 0;
    return s;
}

/* Where group G's value v lies in its ops (held program W): result r of
 * its op q as q << 6 | r << 1 | 1, operand i as q << 6 | i << 1; -1
 * nowhere, -2 for no value. */
static int place_of(const pass_fuse_walk *W, const pass_fgroup *G, const ir_value *v)
{
    if (!v)
        return -2;
    for (int q = 0; q < G->nops; q++) {
        const ir_op *h = W->hops[G->ops[q]];
        for (int r = 0; r < h->nres && r < 32; r++)
            if (h->res[r] == v)
                return q << 6 | r << 1 | 1;
        for (int i = 0; i < h->nin && i < 32; i++)
            if (h->in[i] == v)
                return q << 6 | i << 1;
    }
    return -1;
}

/* The value at place p (place_of) of the ops ops of mx. */
static const ir_value *at_place(const ir_module *mx, const int *ops, int p)
{
    const ir_op *o = IR_OP(mx, ops[p >> 6]);
    int i = p >> 1 & 31;
    return p & 1 ? (i < o->nres ? o->res[i] : NULL) : (i < o->nin ? o->in[i] : NULL);
}

/* Group G's values as places in its ops (place_of), into a: its in[],
 * out[], bias and residual; NULL when one lies nowhere. */
static int *recipe(const pass_fuse_walk *W, const pass_fgroup *G, su_arena *a)
{
    int n = G->nin + G->nout + 2;
    int *r = su_alloc(a, (size_t)n * sizeof *r);
    for (int k = 0; k < n; k++) {
        const ir_value *v = k < G->nin             ? G->in[k]
                            : k < G->nin + G->nout ? G->out[k - G->nin]
                            : k == n - 2           ? G->bias
                                                   : G->residual;
        if ((r[k] = place_of(W, G, v)) == -1)
            return NULL;
    }
    return r;
}

/* Value v of a kept group of the held program: itself, or what the
 * expansion made of it where the group's ops read it changed (remap: the
 * last microbatch's adds to the running sums, which read no other value
 * of microbatch 2's). */
static const ir_value *kept_val(const pass_fuse_walk *W, const ir_value *v, bool remap)
{
    if (!v || v->id < 0 || v->id >= W->view.next_id)
        return v;
    return remap && W->rwnew[v->id] ? W->rwnew[v->id] : v;
}

/* Group G of the held program copied for microbatch j (-1: kept) into
 * *g, its arrays in a; for a copy, rcp is G's recipe. False when it does
 * not map. */
static bool copy_group(const pass_fuse_walk *W, const pass_fgroup *G, int j, pass_fgroup *g,
                       su_arena *a, const int *rcp)
{
    const ir_module *mx = W->mx;
    *g = *G;
    /* its values, then its ops, in one block (each written below, or the
     * copy is not made) */
    size_t nv = (size_t)G->nin + 1 + (size_t)G->nout + 1;
    const ir_value **v = su_alloc_raw(a, nv * sizeof *v + ((size_t)G->nops + 1) * sizeof *g->ops);
    g->in = v;
    g->out = v + G->nin + 1;
    g->in[G->nin] = g->out[G->nout] = NULL;
    g->ops = (int *)(v + nv);
    g->ops[G->nops] = 0;
    bool remap = false;
    for (int q = 0; q < G->nops; q++) {
        int x = xi(W, G->ops[q], j);
        if (x < 0 || (q && x <= g->ops[q - 1]))
            return false;
        g->ops[q] = x;
        if (j < 0)
            remap |= W->rwop[G->ops[q]];
    }
    if (j >= 0) { /* the copy's ops hold its values where the template's hold theirs */
        for (int k = 0; k < G->nin; k++)
            if (!(g->in[k] = at_place(mx, g->ops, rcp[k])))
                return false;
        for (int k = 0; k < G->nout; k++)
            if (!(g->out[k] = at_place(mx, g->ops, rcp[G->nin + k])))
                return false;
        int b = rcp[G->nin + G->nout], r = rcp[G->nin + G->nout + 1];
        g->bias = b >= 0 ? at_place(mx, g->ops, b) : NULL;
        g->residual = r >= 0 ? at_place(mx, g->ops, r) : NULL;
    } else {
        for (int k = 0; k < G->nin; k++)
            g->in[k] = kept_val(W, G->in[k], remap);
        for (int k = 0; k < G->nout; k++) /* its own results: never changed */
            g->out[k] = G->out[k];
        g->bias = kept_val(W, G->bias, remap);
        g->residual = kept_val(W, G->residual, remap);
    }
    if (!g->bias != !G->bias || !g->residual != !G->residual)
        return false;
    g->anchor = xi(W, G->anchor, j);
    if (G->reduce >= 0)
        g->reduce = xi(W, G->reduce, j);
    if (G->has_sib)
        g->sib = xi(W, G->sib, j);
    if (G->has_xgrad)
        g->xgrad = xi(W, G->xgrad, j);
    for (int c = 0; c < G->ncols && c < 2; c++)
        g->cols[c] = xi(W, G->cols[c], j);
    bool ok = g->anchor >= 0 && (G->reduce < 0 || g->reduce >= 0) && (!G->has_sib || g->sib >= 0) &&
              (!G->has_xgrad || g->xgrad >= 0);
    for (int c = 0; c < G->ncols && c < 2; c++)
        ok = ok && g->cols[c] >= 0;
    return ok;
}

/* The held program's gathered groups fh (W lazy) made the groups of the
 * program expanded, into *f (zeroed, its arena made), scratch in tmp:
 * false when they do not map. */
static bool expand_final(const pass_fuse_walk *W, const pass_fusion *fh, pass_fusion *f,
                         su_arena *tmp)
{
    const ir_module *mx = W->mx;
    const pass_expansion *map = &W->map;
    int n = mx->ops.n, M = map->microbatches, ng = fh->ngroups, hn = W->view.next_id;
    if (fh->nops != W->nheld || fh->nvalues != hn || map->n != n)
        return false;
    su_arena *a = &f->arena;
    f->nops = n;
    f->nvalues = mx->next_id;
    f->nruns = fh->nruns;
    f->held_walk = true;
    /* each array written whole (or as far as it is read) before it is read */
    f->group_of = su_alloc_raw(a, ((size_t)n + 1) * sizeof *f->group_of);
    f->stored = su_alloc_raw(a, ((size_t)f->nvalues + 1) * sizeof *f->stored);
    memset(f->stored, 0, ((size_t)f->nvalues + 1) * sizeof *f->stored);
    size_t slots = (size_t)ng * (size_t)(M + 1) + 1;
    int *id = su_alloc_raw(tmp, slots * sizeof *id); /* (group, microbatch + 1): its number */
    int *gsrc = su_alloc_raw(tmp, slots * sizeof *gsrc);
    int *gmb = su_alloc_raw(tmp, slots * sizeof *gmb);
    for (size_t k = 0; k < slots; k++)
        id[k] = -1;
    int nng = 0;
    for (int e = 0; e < n; e++) {
        int s = map->src[e], j = map->mb[e];
        const ir_op *h = W->hops[s], *o = IR_OP(mx, e);
        if (h->nres != o->nres || h->code != o->code)
            return false;
        for (int r = 0; r < o->nres; r++) {
            if (h->res[r]->id < 0 || h->res[r]->id >= hn)
                return false;
            f->stored[o->res[r]->id] = fh->stored[h->res[r]->id];
        }
        int hg = fh->group_of[s];
        if (hg < 0 || e > W->last_copy)
            continue;
        int *slot = &id[(size_t)hg * (size_t)(M + 1) + (size_t)(j + 1)];
        if (*slot < 0) {
            gsrc[nng] = hg;
            gmb[nng] = j;
            *slot = nng++;
        }
    }
    for (int hg = 0; hg < ng; hg++) /* after the last copy: the gathering's order */
        if (id[(size_t)hg * (size_t)(M + 1)] < 0) {
            gsrc[nng] = hg;
            gmb[nng] = -1;
            id[(size_t)hg * (size_t)(M + 1)] = nng++;
        }
    int grouped = 0;
    for (int e = 0; e < n; e++) {
        int hg = fh->group_of[map->src[e]];
        f->group_of[e] = hg < 0 ? -1 : id[(size_t)hg * (size_t)(M + 1) + (size_t)(map->mb[e] + 1)];
        if (hg >= 0 && f->group_of[e] < 0)
            return false;
        grouped += hg >= 0;
    }
    f->ngroups = nng;
    /* each group a copy of its held one (copy_group), or f is dropped */
    f->groups = su_alloc_raw(a, ((size_t)nng + 1) * sizeof *f->groups);
    memset(&f->groups[nng], 0, sizeof *f->groups);
    f->twin = su_alloc_raw(a, ((size_t)nng + 1) * sizeof *f->twin);
    for (int k = 0; k < nng; k++) { /* a copy's template: its held group kept */
        int t = gmb[k] >= 0 ? id[(size_t)gsrc[k] * (size_t)(M + 1)] : -1;
        f->twin[k] = t < k ? t : -1;
    }
    int **rcp = su_alloc(tmp, ((size_t)ng + 1) * sizeof *rcp); /* each copied group's recipe */
    memset(rcp, 0, ((size_t)ng + 1) * sizeof *rcp);
    for (int k = 0; k < nng; k++) {
        const pass_fgroup *G = &fh->groups[gsrc[k]];
        int j = gmb[k];
        pass_fgroup *g = &f->groups[k];
        if (j >= 0 && !rcp[gsrc[k]] && !(rcp[gsrc[k]] = recipe(W, G, tmp)))
            return false;
        if ((G->nparts && j >= 0) || !copy_group(W, G, j, g, a, j >= 0 ? rcp[gsrc[k]] : NULL))
            return false;
        g->id = k;
        g->name = renamed(a, k, G->name);
        if (G->nparts) {
            g->parts = su_alloc(a, (size_t)G->nparts * sizeof *g->parts);
            for (int r = 0; r < G->nparts; r++) {
                pass_fgroup *p = &g->parts[r];
                if (!copy_group(W, &G->parts[r], -1, p, a, NULL))
                    return false;
                if (G->kind == PASS_FUSE_TOTAL && (p->total = xi(W, G->parts[r].total, -1)) < 0)
                    return false;
                p->id = k;
                p->name = g->name;
            }
        }
        for (int q = 0; q < g->nops; q++)
            if (f->group_of[g->ops[q]] != k)
                return false;
        grouped -= g->nops;
    }
    return grouped == 0;
}

/* pass_fuse_walk_held's work, what it holds freed by the caller however
 * it ends. */
typedef struct held_run {
    ir_module *m;
    pass_fuse_walk **out;
    su_buf *err;
    int *hidden, *hidden_at;
    ir_op **held;
    pass_expansion map;
    pass_fusion groups;     /* expand_walk's, until the walk takes them */
    su_arena tmp;           /* expand_walk's scratch */
    bool ok;
} held_run;

static void walk_held(void *arg)
{
    held_run *h = arg;
    ir_module *m = h->m;
    su_buf *err = h->err;
    size_t nv = (size_t)m->next_id + 1;
    h->hidden = su_xmalloc(err->oom, nv * sizeof *h->hidden);
    h->hidden_at = su_xmalloc(err->oom, nv * sizeof *h->hidden_at);
    for (size_t v = 0; v < nv; v++) {
        h->hidden[v] = 0;
        h->hidden_at[v] = -1;
    }
    int nheld = m->ops.n, held_next = m->next_id;
    if (pass_instances_hidden(m, h->hidden, h->hidden_at)) {
        h->ok = walk_new(m, h->out, err, h->hidden, h->hidden_at);
        if (!h->ok)
            return;
        h->held = su_xmalloc(err->oom, ((size_t)nheld + 1) * sizeof *h->held);
        memcpy(h->held, m->ops.v, (size_t)nheld * sizeof *h->held);
    }
    if (!pass_expand_instances_map(m, &h->map, err)) {
        h->ok = false;
        return;
    }
    if (*h->out && go_lazy(*h->out, m, h->held, nheld, &h->map, held_next, err)) {
        h->held = NULL; /* the walk's now */
        h->map = (pass_expansion){0};
        return;
    }
    if (*h->out && expand_walk(*h->out, m, h->held, nheld, &h->map, &h->groups, &h->tmp, err))
        return;
    /* the walk of the program expanded, when the held one's does not map */
    pass_fuse_walk_free(*h->out);
    *h->out = NULL;
    h->ok = walk_new(m, h->out, err, NULL, NULL);
}

bool pass_fuse_walk_held(ir_module *m, pass_fuse_walk **out, su_buf *err)
{
    *out = NULL;
    if (!m->shared)
        return pass_fuse_walk_new(m, out, err);
    held_run h = {.m = m, .out = out, .err = err};
    bool done = su_guarded(err->oom, walk_held, &h);
    free(h.hidden);
    free(h.hidden_at);
    free(h.held);
    pass_expansion_free(&h.map);
    pass_fusion_free(&h.groups);
    su_arena_free(&h.tmp);
    if (!done)
        su_oom(err->oom);
    return h.ok;
}

static void walk_free_parts(pass_fuse_walk *W);

/* W, lazy, no longer: the walk expanded as a walk that is not lazy has
 * it (expand_walk; else the walk of the program expanded). */
static void unlazy(pass_fuse_walk *W, su_buf *err)
{
    const ir_module *mx = W->mx;
    W->lazy = false;
    bool ok = expand_walk(W, mx, W->hops, W->nheld, &W->map, &W->xgroups, &W->xtmp, err);
    if (!ok) {
        walk_free_parts(W);
        memset(W, 0, sizeof *W);
        walk_into(W, mx, err, NULL, NULL);
    }
}

static void walk_free_parts(pass_fuse_walk *W)
{
    pass_fusion_free(&W->pre);
    free(W->hops);
    pass_expansion_free(&W->map);
    lazy_tables_free(W);
    pass_fusion_free(&W->xgroups);
    su_arena_free(&W->xtmp);
}

void pass_fuse_walk_free(pass_fuse_walk *W)
{
    if (W)
        walk_free_parts(W);
    free(W);
}

/* n elements of size each from src, copied into a. */
static void *dup_in(su_arena *a, const void *src, size_t n, size_t size)
{
    void *d = su_alloc(a, (n ? n : 1) * size);
    if (n)
        memcpy(d, src, n * size);
    return d;
}

/* pass_fuse_from_walk's gathering, its scratch arena freed by the
 * caller however it ends. */
typedef struct from_run {
    const pass_fusion *pre;
    walker w;
    uint64_t skip;
    su_arena tmp;
} from_run;

/* ---- constants as literals ----
 *
 * A float constant of rank 0 whose every reader is an elementwise op of
 * one group (of an elementwise group, or the prologue or epilogue of a
 * reduction's, not the reduction itself, which reads its other operands
 * from memory; not a multi-tensor group) joins that group: its kernel
 * writes the value as a literal (codegen/cuda_tile.c's cg_reg), rounded
 * to the dtype as the constant's fill would round it, so the CUDA
 * backend runs no fill for it (a memset a step: llama.sh had 33) and the
 * kernel takes one pointer fewer. The CPU backend still fills it, op by
 * op. An output, an update or a value a held microbatch reads keeps its
 * fill, and so does a constant of another stamp than its readers' anchor,
 * or with an op of another stamp between it and the group (a pipeline
 * stage's constant made once, read by every microbatch's task): a kernel
 * stands for instructions of one loop body. */
static bool scalar_const(const ir_value *v)
{
    return v->def && v->def->code == IR_CONST && !v->type.rank && is_float(v->type.dtype);
}

/* Whether op i of group k may read a constant of the group as a literal:
 * an elementwise op that IEEE rounds exactly (arithmetic, comparisons,
 * picks, casts), so that no compiler computes it otherwise for knowing the
 * operand: not pow, whose literal exponent 2 the host's compiler makes x *
 * x (not libm's powf, as the CPU backend calls it), nor a transcendental
 * function, which a compiler may evaluate at compile time by another
 * method. */
static bool literal_reader(const ir_module *m, const pass_fgroup *g, int i)
{
    const ir_op *op = IR_OP(m, i);
    /* a TOTAL group's epilogue (its scalars, not a part's ops nor a sum) */
    bool epi = g->kind == PASS_FUSE_TOTAL && op->code != IR_SUM && !pass_fuse_part(g, i);
    if (!epi && (g->nparts || (g->kind != PASS_FUSE_ELEMENTWISE && g->kind != PASS_FUSE_REDUCE) ||
                 i == g->reduce))
        return false;
    switch (op->code) {
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MAX: case IR_MIN:
    case IR_GT: case IR_EQ: case IR_LESS: case IR_LESS_EQ: case IR_GREATER:
    case IR_GREATER_EQ: case IR_EQUAL: case IR_NOT_EQUAL: case IR_WHERE: case IR_NEG:
    case IR_ABS: case IR_RELU: case IR_CAST: case IR_EXPAND: case IR_SQRT:
        return classify(op) == F_EW;
    default:
        return false;
    }
}

static void absorb_consts(const walker *w, su_arena *tmp)
{
    const ir_module *m = w->m;
    pass_fusion *f = w->f;
    int *grp = su_alloc(tmp, ((size_t)f->nvalues + 1) * sizeof *grp); /* -1 none, -2 no */
    for (int v = 0; v < f->nvalues; v++)
        grp[v] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            const ir_value *v = op->in[k];
            if (!scalar_const(v))
                continue;
            int g = f->group_of[i];
            bool ok = g >= 0 && literal_reader(m, &f->groups[g], i);
            grp[v->id] = !ok ? -2 : grp[v->id] == -1 || grp[v->id] == g ? g : -2;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        grp[IR_OUTPUT(m, i)->v->id] = -2;
    for (int i = 0; i < m->updates.n; i++) {
        grp[IR_UPDATE(m, i)->v->id] = -2;
        if (IR_UPDATE(m, i)->grad)
            grp[IR_UPDATE(m, i)->grad->id] = -2;
    }
    if (m->train.loss)
        grp[m->train.loss->id] = -2;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_CONST || !scalar_const(op->res[0]) || f->group_of[i] >= 0)
            continue;
        int v = op->res[0]->id, k = grp[v];
        if (k < 0 || (w->hidden && w->hidden[v]))
            continue;
        pass_fgroup *g = &f->groups[k];
        const ir_op *a = IR_OP(m, g->anchor);
        bool near = op->task == a->task && op->mb == a->mb && i < g->anchor;
        for (int j = i + 1; near && j < g->ops[0]; j++) /* one run of its stamp */
            near = IR_OP(m, j)->task == op->task && IR_OP(m, j)->mb == op->mb;
        if (!near)
            continue;
        int *ops = su_alloc(&f->arena, ((size_t)g->nops + 1) * sizeof *ops), n = 0, j = 0;
        while (j < g->nops && g->ops[j] < i) /* in program order: before the anchor */
            ops[n++] = g->ops[j++];
        ops[n++] = i;
        while (j < g->nops)
            ops[n++] = g->ops[j++];
        g->ops = ops;
        g->nops = n;
        int nin = 0;
        for (int q = 0; q < g->nin; q++)
            if (g->in[q] != op->res[0])
                g->in[nin++] = g->in[q];
        g->nin = nin;
        f->group_of[i] = k;
    }
}

/* The groups, read by the gathering, which makes f's own array, in
 * scratch; each group's arrays in f's arena (the gathered groups keep
 * them). */
static void from_work(void *arg)
{
    from_run *r = arg;
    pass_fusion *f = r->w.f;
    f->ngroups = r->pre->ngroups;
    f->groups = dup_in(&r->tmp, r->pre->groups, (size_t)f->ngroups + 1, sizeof *f->groups);
    for (int k = 0; k < f->ngroups; k++) {
        pass_fgroup *g = &f->groups[k];
        g->ops = dup_in(&f->arena, g->ops, (size_t)g->nops, sizeof *g->ops);
        g->in = dup_in(&f->arena, g->in, (size_t)g->nin, sizeof *g->in);
        g->out = dup_in(&f->arena, g->out, (size_t)g->nout, sizeof *g->out);
    }
    gather_totals(&r->w, &r->tmp);
    gather_multi(&r->w, r->skip, &r->tmp);
    absorb_consts(&r->w, &r->tmp);
}

/* pass_fuse_from_walk of a lazy walk: its held program's groups gathered
 * (the kept ops reading what they read held), then copied. */
typedef struct lazy_run {
    pass_fuse_walk *W;
    uint64_t skip;
    pass_fusion *f, held;
    su_buf *err;
    su_arena tmp;
    bool ok;
} lazy_run;

static void from_walk_plain(const pass_fuse_walk *W, uint64_t skip, pass_fusion *f, su_buf *err);

static void lazy_work(void *arg)
{
    lazy_run *r = arg;
    held_operands(r->W, true);
    from_walk_plain(r->W, r->skip, &r->held, r->err);
    held_operands(r->W, false);
    su_arena_init(&r->f->arena, r->err->oom);
    su_arena_init(&r->tmp, r->err->oom);
    r->ok = expand_final(r->W, &r->held, r->f, &r->tmp);
}

void pass_fuse_from_walk(pass_fuse_walk *W, uint64_t skip, pass_fusion *f, su_buf *err)
{
    if (W->lazy) {
        memset(f, 0, sizeof *f);
        lazy_run r = {.W = W, .skip = skip, .f = f, .err = err};
        bool done = su_guarded(err->oom, lazy_work, &r);
        held_operands(W, false);
        pass_fusion_free(&r.held);
        su_arena_free(&r.tmp);
        if (!done)
            su_oom(err->oom);
        if (r.ok)
            return;
        pass_fusion_free(f);
        unlazy(W, err); /* never seen: the copies differ from the walk expanded */
    }
    from_walk_plain(W, skip, f, err);
}

static void from_walk_plain(const pass_fuse_walk *W, uint64_t skip, pass_fusion *f, su_buf *err)
{
    const pass_fusion *pre = &W->pre;
    memset(f, 0, sizeof *f);
    su_arena_init(&f->arena, err->oom);
    su_arena *a = &f->arena;
    f->nops = pre->nops;
    f->nvalues = pre->nvalues;
    f->group_of = dup_in(a, pre->group_of, (size_t)f->nops + 1, sizeof *f->group_of);
    f->stored = dup_in(a, pre->stored, (size_t)f->nvalues + 1, sizeof *f->stored);
    f->held_walk = W->held;
    /* the walker is read only but for f's arrays: parent[] is the identity */
    from_run r = {.pre = pre, .w = W->w, .skip = skip};
    r.w.f = f;
    su_arena_init(&r.tmp, err->oom);
    bool done = su_guarded(err->oom, from_work, &r);
    su_arena_free(&r.tmp);
    if (!done)
        su_oom(err->oom);
}

/* pass_fuse_ex's work, its walk freed by the caller however it ends. */
typedef struct ex_run {
    const ir_module *m;
    ir_module *held;    /* a held stage, walked held (m is it); NULL: none */
    uint64_t skip;
    pass_fusion *f;
    su_buf *err;
    pass_fuse_walk *walk;
    bool ok;
} ex_run;

static void fuse_ex(void *arg)
{
    ex_run *r = arg;
    r->ok = r->held ? pass_fuse_walk_held(r->held, &r->walk, r->err)
                    : pass_fuse_walk_new(r->m, &r->walk, r->err);
    if (r->ok)
        pass_fuse_from_walk(r->walk, r->skip, r->f, r->err);
}

static bool fuse_ex_run(const ir_module *m, ir_module *held, uint64_t skip, pass_fusion *f,
                        su_buf *err)
{
    memset(f, 0, sizeof *f);
    ex_run r = {.m = m, .held = held, .skip = skip, .f = f, .err = err};
    bool done = su_guarded(err->oom, fuse_ex, &r);
    pass_fuse_walk_free(r.walk);
    if (!done)
        su_oom(err->oom);
    return r.ok;
}

bool pass_fuse_ex(const ir_module *m, uint64_t skip, pass_fusion *f, su_buf *err)
{
    return fuse_ex_run(m, NULL, skip, f, err);
}

bool pass_fuse_held(ir_module *m, pass_fusion *f, su_buf *err)
{
    return fuse_ex_run(m, m->shared ? m : NULL, 0, f, err);
}

void pass_fusion_free(pass_fusion *f)
{
    su_arena_free(&f->arena);
    memset(f, 0, sizeof *f);
}

int pass_fuse_twin(const ir_module *m, const pass_fusion *f, int g)
{
    if (!f->twin || g < 0 || g >= f->ngroups || f->twin[g] < 0)
        return -1;
    const pass_fgroup *a = &f->groups[g], *b = &f->groups[f->twin[g]];
    if (a->kind != b->kind || a->nops != b->nops || a->nin != b->nin || a->nout != b->nout)
        return -1;
    for (int q = 0; q < a->nops; q++) {
        const ir_attrs *x = IR_OP(m, a->ops[q])->a, *y = IR_OP(m, b->ops[q])->a;
        if (x != y && (!x || !y || memcmp(x, y, sizeof *x) != 0))
            return -1;
    }
    return f->twin[g];
}

pass_fuse_role pass_fuse_op_role(const pass_fgroup *g, int op_index)
{
    if (g->kind == PASS_FUSE_ELEMENTWISE || g->kind == PASS_FUSE_ATTN_PAIR ||
        g->kind == PASS_FUSE_ATTN_LSE || op_index == g->reduce)
        return PASS_FUSE_MAIN;
    return op_index < g->reduce ? PASS_FUSE_PROLOGUE : PASS_FUSE_EPILOGUE;
}

static bool has_op(const pass_fgroup *g, int op_index)
{
    int lo = 0, hi = g->nops - 1; /* ops ascend */
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (g->ops[mid] == op_index)
            return true;
        if (g->ops[mid] < op_index)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return false;
}

const pass_fgroup *pass_fuse_part(const pass_fgroup *g, int op_index)
{
    if (!g->nparts)
        return has_op(g, op_index) ? g : NULL;
    for (int r = 0; r < g->nparts; r++)
        if (has_op(&g->parts[r], op_index))
            return &g->parts[r];
    return NULL;
}

const char *pass_fuse_epilogue_str(unsigned epilogue, char *buf, size_t size)
{
    static const char *const names[] = {"bias", "residual", "relu", "gelu",
                                        "its operand stored (aux)",
                                        "gelu_grad, its operand read (aux)"};
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < 6; i++)
        if (epilogue & (1u << i) && at < size)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? ", " : "", names[i]);
    return buf;
}

/* ---- --emit fused-ir ---- */

static void put_shape(su_buf *b, const ir_type *t)
{
    su_buf_putc(b, '[');
    for (int i = 0; i < t->rank; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    su_buf_putc(b, ']');
}

static void put_values(su_buf *b, const char *what, const ir_value *const *v, int n,
                       const char **names)
{
    su_buf_printf(b, "; %s", what);
    if (n == 0)
        su_buf_puts(b, " nothing");
    for (int i = 0; i < n; i++)
        su_buf_printf(b, "%s %s", i ? "," : "", names[v[i]->id] ? names[v[i]->id] : "%?");
}

/* "// kernel k3_mean: mean over axis 2 of [4, 128, 256]; reads %x; stores %5" */
static void put_group_comment(const ir_module *m, const pass_fgroup *g, const char **names,
                              su_buf *b)
{
    su_buf_printf(b, "// kernel %s: ", g->name);
    if (g->kind == PASS_FUSE_MATMUL) {
        const ir_op *mm = IR_OP(m, g->reduce);
        char epi[64];
        su_buf_puts(b, "matmul ");
        put_shape(b, &mm->in[0]->type);
        su_buf_puts(b, " x ");
        put_shape(b, &mm->in[1]->type);
        su_buf_printf(b, ", epilogue %s (cuBLASLt)",
                      pass_fuse_epilogue_str(g->epilogue, epi, sizeof epi));
    } else if (g->kind == PASS_FUSE_TOTAL) {
        su_buf_printf(b, "sums to scalars of %d tensor%s", g->nparts, g->nparts == 1 ? "" : "s");
        for (int r = 0; r < g->nparts; r++) {
            su_buf_puts(b, r ? ", " : " ");
            put_shape(b, &IR_OP(m, g->parts[r].reduce)->in[0]->type);
        }
        su_buf_puts(b, ", then scalars");
    } else if (g->nparts) {
        su_buf_printf(b, "multi-tensor elementwise over %d domains", g->nparts);
        for (int r = 0; r < g->nparts; r++) {
            su_buf_puts(b, r ? ", " : " ");
            put_shape(b, &IR_OP(m, g->parts[r].anchor)->res[0]->type);
        }
    } else if (g->kind == PASS_FUSE_ELEMENTWISE) {
        su_buf_puts(b, "elementwise over ");
        put_shape(b, pass_fuse_domain(m, g));
    } else if (g->kind == PASS_FUSE_ATTN_PAIR) {
        su_buf_puts(b, "attn_dv and attn_dk over ");
        put_shape(b, &IR_OP(m, g->anchor)->res[0]->type);
        su_buf_puts(b, ", each p once for both");
    } else if (g->kind == PASS_FUSE_ATTN_LSE) {
        su_buf_puts(b, "attention and attn_lse over ");
        put_shape(b, &IR_OP(m, g->ops[0])->res[0]->type);
        su_buf_puts(b, ", the log-sum-exp from the forward's sums");
    } else {
        const ir_op *r = IR_OP(m, g->reduce);
        const ir_type *t = &r->in[0]->type;
        su_buf_printf(b, "%s over ", ir_ops[r->code].name);
        if (r->code == IR_SUM || r->code == IR_MEAN || r->code == IR_AMAX ||
            r->code == IR_SOFTMAX)
            su_buf_printf(b, "axis %lld of ", (long long)r->a->axis);
        else if (r->code != IR_MSE)
            su_buf_puts(b, "the last axis of ");
        put_shape(b, t);
        if (g->has_sib)
            su_buf_puts(b, " with a sibling sum"); /* fuse.h */
        if (g->has_xgrad)
            su_buf_puts(b, " and its gradient"); /* fuse.c's xgrad_fits */
        if (g->ncols)
            su_buf_printf(b, " with %s over runs of its rows",
                          g->ncols == 1 ? "a column sum" : "two column sums"); /* join_norm_cols */
    }
    put_values(b, "reads", g->in, g->nin, names);
    put_values(b, "stores", g->out, g->nout, names);
    su_buf_putc(b, '\n');
}

typedef struct fusion_print {
    const ir_module *m;
    const pass_fusion *f;
    su_buf *out;
    su_arena scratch;       /* the module's text and names */
} fusion_print;

/* The op a group's comment is printed above: its first that is not a
 * constant it writes as a literal (which may lie before another group's
 * ops), else its first. */
static int first_printed(const ir_module *m, const pass_fgroup *g)
{
    for (int i = 0; i < g->nops; i++)
        if (IR_OP(m, g->ops[i])->code != IR_CONST)
            return g->ops[i];
    return g->ops[0];
}

static void print_fusion(void *arg)
{
    fusion_print *r = arg;
    const ir_module *m = r->m;
    const pass_fusion *f = r->f;
    su_buf text;
    su_buf_init_in(&text, &r->scratch);
    ir_print(m, &text);
    const char **names = ir_value_print_names(m, &r->scratch);
    /* one line per op after the header; after them one per output and
     * update, and the train line */
    int nlines = 0;
    for (size_t i = 0; i < text.len; i++)
        nlines += text.s[i] == '\n';
    int header = nlines - m->ops.n - m->outputs.n - m->updates.n - (m->train.loss ? 1 : 0);
    const char *p = text.s ? text.s : "";
    for (int line = 0; *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        int op = line - header;
        int gk = op >= 0 && op < m->ops.n && header >= 0 ? f->group_of[op] : -1;
        const pass_fgroup *g = gk >= 0 ? &f->groups[gk] : NULL;
        if (g && first_printed(m, g) == op)
            put_group_comment(m, g, names, r->out);
        su_buf_put(r->out, p, len);
        if (g)
            su_buf_printf(r->out, "  // %s%s", g->name,
                          f->stored[IR_OP(m, op)->res[0]->id] ? ", stored" : "");
        su_buf_putc(r->out, '\n');
        p += len + (nl ? 1 : 0);
    }
}

void pass_fusion_print(const ir_module *m, const pass_fusion *f, su_buf *out)
{
    fusion_print r = {.m = m, .f = f, .out = out};
    su_arena_init(&r.scratch, out->oom);
    bool done = su_guarded(out->oom, print_fusion, &r);
    su_arena_free(&r.scratch);
    if (!done)
        su_oom(out->oom);
}
