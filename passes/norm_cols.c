/* norm_cols.c: a layernorm's (rmsnorm's) gain and bias gradients summed
 * by the row kernel of its input gradient (passes.h, pass_norm_cols).
 *
 * After combine.c's rows rule, a norm's gain gradient is a column sum
 * over the N rows of the batch, sum(dy * (x - mean) * rstd) (rmsnorm:
 * sum(dy * (x * r))), and its bias's sum(dy): column kernels that read
 * dy, x and the statistics again after (or before) the row kernel of
 * layernorm_dx(dy, x, mean, rstd, g) reads them all. A column sum over
 * N rows cannot be a row kernel's: it needs every row. But its partial
 * sums over runs of rows can, one run a block, as each block walks its
 * rows: so each such sum S over [N, D] becomes
 *   the sum over axis 1 of [P, R, D] (N = P R rows, R a block's run),
 *     in f32 (a cast first where S is 16-bit): P partial rows, [P, D];
 *   the sum of those over axis 0, [D] in f32, cast to S's dtype;
 * and the fusion gives the partial sums to the norm's row kernel
 * (fuse.c's norm_cols: its grid is then P blocks, each its run of R
 * rows), while a small column kernel sums the P partial rows. dy and x
 * are read once for the three results. PyTorch's compiled layernorm
 * backward splits its gain and bias gradients so too.
 *
 * Here, on each stage's program after the rows rule and the sibling
 * sums (not in pipelines, whose sums are over a microbatch's rows and
 * added over microbatches), for each layernorm_dx or rmsnorm_dx L of a
 * float value [..., D] with D at most PASS_NORM_COLS_MAX_WIDTH (a warp's
 * row in codegen), N its rows: the (at most two) sums before it within
 * PASS_FUSE_HOLD ops, of its phase, repetition and stamp, over axis 0 of
 * a float [N, D] value made by a chain of elementwise ops whose leaves
 * are reshapes to [N, D] or [N, 1] of L's dy, x and statistics (in row
 * order: element e is element e), and values of rank 0 or [D]. The chain's
 * values must be read by the chain and the sums alone, so that they can
 * take their [P, R, D] and [P, R, 1] types in place (each element keeps
 * its bits: every op computes what it did). L, and the elementwise ops
 * of its shape after it that read it (the residual gradient's add, a
 * cast: its epilogue), move to just before the first op of the chains, each
 * operand of theirs being made before it; the partial sums stand where
 * the sums stood, and the sums of the partial rows after the last of
 * them, so that nothing between L and the partial sums reads what the
 * fused kernel makes. P is the largest divisor of N up to
 * NORM_COLS_PARTS with runs of at least NORM_COLS_RUN rows; N too short
 * for two runs keeps its sums. The sums' order changes (runs, then
 * their partial sums), within a reduction's rounding. */
#include "passes.h"
#include "fuse.h"

#include <stdlib.h>
#include <string.h>

enum {
    NORM_COLS_PARTS = 256, /* partial rows at most: each a block of the row kernel */
    NORM_COLS_RUN = 16,    /* a block's rows at least (2 a warp of 8) */
    CHAIN_MAX = 24,        /* a sum's chain of ops at most */
};

typedef struct cand {
    int at;                 /* the sum's op index */
    int nchain;             /* its chain: op indices, the leaves' reshapes among them */
    int chain[CHAIN_MAX];
    int nleaf;              /* L's operands of [N, D] or [N, 1] it reads as they are
                             * (a norm of a matrix), which a reshape of each
                             * will stand for */
    const ir_value *leaf[4];
} cand;

typedef struct nc {
    ir_module *m;
    int n;
    int *defat;             /* per value id: its op index, -1 none */
    int *nread;             /* per value id: ops reading it (an op once each) */
    bool *ext;              /* per value id: an output or an update reads it */
    bool *mark, *saved, *hoist; /* per op index: scratch */
    size_t capv, capo;      /* the arrays' room: values, ops */
} nc;

static bool same_stamp(const ir_op *a, const ir_op *b)
{
    return a->phase == b->phase && a->rep == b->rep && a->task == b->task && a->mb == b->mb;
}

static bool is_float(ir_dtype t)
{
    return t == IR_F32 || t == IR_F16 || t == IR_BF16;
}

/* Whether v is one of L's row-aligned operands: dy, x and its statistics
 * (not the gain, a [D] value). */
static bool norm_operand(const ir_op *L, const ir_value *v)
{
    int rows_in = L->code == IR_LAYERNORM_DX ? 4 : 3;
    for (int i = 0; i < rows_in && i < L->nin; i++)
        if (L->in[i] == v)
            return true;
    return false;
}

/* Whether t is [N, D] (or, with col, [N, 1]). */
static bool rows_type(const ir_type *t, int64_t N, int64_t D, bool col)
{
    return t->rank == 2 && t->dim[0] == N && (t->dim[1] == D || (col && t->dim[1] == 1));
}

/* Op at index i of the chain of sum c, walked back from v: false where v
 * cannot be (a leaf or an op of the chain, or a broadcast value). */
static bool walk(nc *C, const ir_op *L, const ir_op *s, cand *c, const ir_value *v, int64_t N,
                 int64_t D)
{
    const ir_type *t = &v->type;
    if (t->rank == 0 || (t->rank == 1 && t->dim[0] == D))
        return true; /* broadcast over the rows: kept as it is */
    int at = C->defat[v->id];
    if (at < 0 || !rows_type(t, N, D, true) || !is_float(t->dtype))
        return false;
    if (norm_operand(L, v)) { /* L's [N, D] (or [N, 1]) operand itself */
        bool known = false;
        for (int k = 0; k < c->nleaf; k++)
            known |= c->leaf[k] == v;
        if (!known && c->nleaf < 4)
            c->leaf[c->nleaf++] = v;
        return known || c->leaf[c->nleaf - 1] == v;
    }
    ir_op *op = IR_OP(C->m, at);
    if (C->mark[at])
        return true; /* already in the chain */
    if (!same_stamp(op, s) || op->nres != 1 || c->nchain == CHAIN_MAX)
        return false;
    C->mark[at] = true;
    c->chain[c->nchain++] = at;
    if (op->code == IR_RESHAPE) /* a leaf: L's operand in row order */
        return norm_operand(L, op->in[0]) && ir_type_numel(&op->in[0]->type) == ir_type_numel(t);
    if (!pass_fuse_elementwise(op) || !rows_type(t, N, D, false))
        return false; /* an op of the chain is of the sum's shape (fuse.c's join_norm_cols) */
    for (int k = 0; k < op->nin; k++)
        if (!walk(C, L, s, c, op->in[k], N, D))
            return false;
    return true;
}

/* Whether the sum at index i is a column sum of L's rows with a chain
 * (into *c; the chain's ops marked in C->mark). */
static bool candidate(nc *C, const ir_op *L, int i, int64_t N, int64_t D, cand *c)
{
    const ir_op *s = IR_OP(C->m, i);
    if (s->code != IR_SUM || s->nin != 1 || s->nres != 1 || !same_stamp(s, L))
        return false;
    const ir_type *t = &s->in[0]->type;
    int64_t ax = s->a->axis < 0 ? s->a->axis + t->rank : s->a->axis;
    if (ax != 0 || s->a->keepdims || !rows_type(t, N, D, false) || !is_float(t->dtype) ||
        C->ext[s->in[0]->id] || C->defat[s->in[0]->id] < 0)
        return false;
    c->at = i;
    c->nchain = c->nleaf = 0;
    return walk(C, L, s, c, s->in[0], N, D);
}

/* The sharding of [P, R, ...rest] from [N, ...rest]: N's axes on P. */
static ir_sharding split_rows(const ir_sharding *sh)
{
    ir_sharding o = *sh;
    o.naxes[1] = 0;
    memset(o.axes[1], 0, sizeof o.axes[1]);
    o.naxes[2] = sh->naxes[1];
    memcpy(o.axes[2], sh->axes[1], sizeof o.axes[2]);
    return o;
}

static ir_op *append(ir_module *m, ir_opcode code, ir_value *in, const ir_attrs *a,
                     const ir_type *t, const ir_sharding *sh, const ir_op *like)
{
    ir_op *op = ir_append(m, code, &in, 1, a, t);
    op->loc = like->loc;
    op->rep = like->rep;
    op->phase = like->phase;
    op->task = like->task;
    op->mb = like->mb;
    op->res[0]->sh = *sh;
    return op;
}

/* Rewrites L (index li) with its sums c[0 .. ncand), the ops hoisted
 * (hoist[i]) to just before first, the chains' first op; out: the
 * module's new order. */
static void rewrite(nc *C, int li, const cand *c, int ncand, const bool *hoist, int first,
                    int64_t P)
{
    ir_module *m = C->m;
    const ir_op *L = IR_OP(m, li);
    int64_t D = L->res[0]->type.dim[L->res[0]->type.rank - 1];
    int64_t R = ir_type_numel(&L->res[0]->type) / D / P;
    /* L's operands the chains read as they are: a reshape of each to
     * [P, R, ...] in their place, just before the chains */
    ir_op *view[8];
    const ir_value *of[8];
    int nview = 0;
    for (int k = 0; k < ncand; k++)
        for (int j = 0; j < c[k].nleaf; j++) {
            const ir_value *v = c[k].leaf[j];
            int q = 0;
            while (q < nview && of[q] != v)
                q++;
            if (q == nview) {
                int64_t last = v->type.dim[1];
                ir_type tv = {.dtype = v->type.dtype, .rank = 3, .dim = {P, R, last}};
                ir_sharding sh = split_rows(&v->sh);
                ir_attrs a = {.nlist = 3, .list = {P, R, last}};
                view[nview] = append(m, IR_RESHAPE, (ir_value *)v, &a, &tv, &sh,
                                     IR_OP(m, c[k].at));
                of[nview++] = v;
            }
        }
    for (int k = 0; k < ncand; k++) {
        for (int j = 0; j <= c[k].nchain; j++) {
            ir_op *op = IR_OP(m, j < c[k].nchain ? c[k].chain[j] : c[k].at);
            if (op->code == IR_RESHAPE && j < c[k].nchain)
                continue; /* a reshape leaf reads L's operand in its own shape */
            for (int i = 0; i < op->nin; i++)
                for (int q = 0; q < nview; q++)
                    if (op->in[i] == of[q])
                        op->in[i] = view[q]->res[0];
        }
    }
    /* the chains' values [P, R, D] and [P, R, 1] in place */
    for (int k = 0; k < ncand; k++)
        for (int j = 0; j < c[k].nchain; j++) {
            ir_op *op = IR_OP(m, c[k].chain[j]);
            ir_value *v = op->res[0];
            if (v->type.rank == 3)
                continue; /* the other sum's chain too */
            int64_t last = v->type.dim[1];
            v->type.rank = 3;
            v->type.dim[0] = P;
            v->type.dim[1] = R;
            v->type.dim[2] = last;
            v->sh = split_rows(&v->sh);
            if (op->code == IR_RESHAPE) {
                ir_attrs a = *op->a;
                a.nlist = 3;
                a.list[0] = P;
                a.list[1] = R;
                a.list[2] = last;
                ir_op_set_attrs(m, op, &a);
            }
        }
    /* each sum: [cast,] partial sum at its place; the partial rows' sums
     * (and casts back) after the last */
    ir_op *part[2][2] = {{NULL}}, *fin[2][2] = {{NULL}};
    int last = 0;
    for (int k = 0; k < ncand; k++) {
        ir_op *s = IR_OP(m, c[k].at);
        last = c[k].at > last ? c[k].at : last;
        ir_value *f = s->in[0], *r = s->res[0];
        ir_type t32 = f->type;
        t32.dtype = IR_F32;
        if (f->type.dtype != IR_F32) {
            part[k][0] = append(m, IR_CAST, f, &(ir_attrs){.dtype = IR_F32}, &t32, &f->sh, s);
            f = part[k][0]->res[0];
        }
        ir_type tp = {.dtype = IR_F32, .rank = 2, .dim = {P, D}};
        ir_sharding shp = f->sh;
        shp.naxes[1] = f->sh.naxes[2];
        memcpy(shp.axes[1], f->sh.axes[2], sizeof shp.axes[1]);
        shp.naxes[2] = 0;
        part[k][1] = append(m, IR_SUM, f, &(ir_attrs){.axis = 1}, &tp, &shp, s);
        ir_type tf = r->type;
        tf.dtype = IR_F32;
        fin[k][0] = append(m, IR_SUM, part[k][1]->res[0], &(ir_attrs){.axis = 0}, &tf, &r->sh, s);
        ir_op *end = fin[k][0];
        if (r->type.dtype != IR_F32) {
            fin[k][1] = append(m, IR_CAST, fin[k][0]->res[0], &(ir_attrs){.dtype = r->type.dtype},
                               &r->type, &r->sh, s);
            end = fin[k][1];
        }
        /* the last op makes the sum's value: its readers read it still */
        r->def = end;
        r->res = 0;
        end->res[0] = r;
    }
    int n = C->n, total = m->ops.n, k2 = 0;
    ir_op **out = su_alloc(&m->arena, (size_t)total * sizeof *out);
    for (int i = 0; i < n; i++) {
        if (i == first) {
            for (int j = 0; j < n; j++)
                if (hoist[j])
                    out[k2++] = IR_OP(m, j);
            for (int q = 0; q < nview; q++)
                out[k2++] = view[q];
        }
        if (hoist[i])
            continue;
        int which = -1;
        for (int k = 0; k < ncand; k++)
            which = c[k].at == i ? k : which;
        if (which < 0) {
            out[k2++] = IR_OP(m, i);
            continue;
        }
        for (int q = 0; q < 2; q++)
            if (part[which][q])
                out[k2++] = part[which][q];
        if (i == last)
            for (int k = 0; k < ncand; k++)
                for (int q = 0; q < 2; q++)
                    if (fin[k][q])
                        out[k2++] = fin[k][q];
    }
    m->ops.n = 0;
    for (int i = 0; i < k2; i++)
        m->ops.v[m->ops.n++] = out[i];
}

/* The partial rows for N rows in runs of at least NORM_COLS_RUN rows, or
 * 0: none fit. */
static int64_t parts_for(int64_t N)
{
    for (int64_t p = NORM_COLS_PARTS; p >= 2; p--)
        if (N % p == 0 && N / p >= NORM_COLS_RUN)
            return p;
    return 0;
}

/* The module indexed into C: each rewrite adds a few ops and values, so
 * the arrays take room for more than it has at first, and are made anew
 * only when it runs out. */
static void index_module(nc *C)
{
    ir_module *m = C->m;
    C->n = m->ops.n;
    size_t nv = (size_t)m->next_id + 1, no = (size_t)C->n + 1;
    if (nv > C->capv) {
        C->capv = nv + nv / 4 + 64;
        C->defat = su_alloc(&m->arena, C->capv * sizeof *C->defat);
        C->nread = su_alloc(&m->arena, C->capv * sizeof *C->nread);
        C->ext = su_alloc(&m->arena, C->capv * sizeof *C->ext);
    }
    if (no > C->capo) {
        C->capo = no + no / 4 + 64;
        C->mark = su_alloc(&m->arena, C->capo * sizeof *C->mark);
        C->saved = su_alloc(&m->arena, C->capo * sizeof *C->saved);
        C->hoist = su_alloc(&m->arena, C->capo * sizeof *C->hoist);
    }
    memset(C->nread, 0, nv * sizeof *C->nread);
    memset(C->ext, 0, nv * sizeof *C->ext);
    for (size_t v = 0; v < nv; v++)
        C->defat[v] = -1;
    for (int i = 0; i < C->n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int r = 0; r < op->nres; r++)
            C->defat[op->res[r]->id] = i;
        for (int k = 0; k < op->nin; k++) {
            bool again = false;
            for (int q = 0; q < k; q++)
                again |= op->in[q] == op->in[k];
            C->nread[op->in[k]->id] += !again;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        C->ext[IR_OUTPUT(m, i)->v->id] = true;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        C->ext[u->v->id] = true;
        if (u->grad)
            C->ext[u->grad->id] = true;
        if (u->src)
            C->ext[u->src->id] = true;
    }
}

/* Whether each value the chains make is read by the chains and the sums
 * alone (c's chains marked in C->mark). */
static bool chains_closed(const nc *C, const cand *c, int ncand)
{
    const ir_module *m = C->m;
    for (int k = 0; k < ncand; k++)
        for (int j = 0; j < c[k].nchain; j++) {
            const ir_value *v = IR_OP(m, c[k].chain[j])->res[0];
            if (C->ext[v->id])
                return false;
            int readers = 0;
            for (int i = 0; i < C->n; i++) {
                bool sum = false;
                for (int q = 0; q < ncand; q++)
                    sum |= c[q].at == i;
                if ((C->mark[i] || sum) && ir_op_reads(IR_OP(m, i), v))
                    readers++;
            }
            if (readers != C->nread[v->id])
                return false;
        }
    return true;
}

/* Whether the fusion puts op in a group of its own kind: an elementwise
 * op, a reduction, a norm or a loss (their groups take the elementwise
 * ops after them that read them). */
static bool grouped(const ir_op *op)
{
    ir_opclass c = ir_ops[op->code].cls;
    return pass_fuse_elementwise(op) || c == IR_C_REDUCE || c == IR_C_NORM || c == IR_C_LOSS;
}

/* L at li with its sums, their chains' ops from first to the last sum at
 * last: the ops that move before first (into hoist): L and the
 * elementwise ops of its shape after it that read it or one another, each
 * operand made before first; false where L's own cannot, or such an op
 * reading them cannot move and may join L's kernel after the sums (the
 * fusion puts an op in the group of its operand's extended last: one
 * made by an op of a group, elementwise, a reduction or a norm, that
 * stays after first keeps it out), or a
 * collective, send, receive or instances op lies among the sums' (an
 * all-reduce of a sum after them, which L moves over, may). */
static bool plan_hoist(const nc *C, int li, int first, int last, bool *hoist)
{
    const ir_module *m = C->m;
    const ir_op *L = IR_OP(m, li);
    memset(hoist, 0, (size_t)C->n * sizeof *hoist);
    for (int k = 0; k < L->nin; k++)
        if (C->defat[L->in[k]->id] >= first)
            return false;
    for (int i = first; i <= last; i++)
        if (ir_op_fixed(IR_OP(m, i)))
            return false; /* the fusion joins nothing over a collective */
    hoist[li] = true;
    for (int i = li + 1; i < C->n && i <= li + PASS_FUSE_HOLD; i++) {
        const ir_op *op = IR_OP(m, i);
        if (ir_op_fixed(op))
            break;
        /* an op an epilogue of L's group may take */
        bool epi = pass_fuse_elementwise(op) && same_stamp(op, L) && op->nres == 1 &&
                   ir_shape_eq(&op->res[0]->type, &L->res[0]->type);
        bool reads = false, fresher = false, ok = epi;
        for (int k = 0; k < op->nin; k++) {
            int at = C->defat[op->in[k]->id];
            if (at >= 0 && hoist[at])
                reads = true;
            else
                ok = ok && at < first;
            fresher |= at >= first && !hoist[at] && grouped(IR_OP(m, at));
        }
        if (reads && ok)
            hoist[i] = true;
        else if (reads && !fresher && epi)
            return false; /* it could join L's kernel as its epilogue, after the sums */
    }
    return true;
}

/* An experiment's switch: $SHARDC_EXPERIMENT_NORM_COLS=0 while the
 * program compiles leaves the sums as they are (one column kernel), so
 * that bench/gpu_session.sh can time GPT-2's step both ways. */
static bool norm_cols_off(void)
{
    const char *e = getenv("SHARDC_EXPERIMENT_NORM_COLS");
    return e && strcmp(e, "0") == 0;
}

int pass_norm_cols(ir_module *m)
{
    if (m->pipe.axis >= 0 || norm_cols_off())
        return 0;
    bool any = false;
    for (int i = 0; i < m->ops.n && !any; i++)
        any = IR_OP(m, i)->code == IR_LAYERNORM_DX || IR_OP(m, i)->code == IR_RMSNORM_DX;
    if (!any)
        return 0;
    int done = 0;
    nc C = {.m = m};
    index_module(&C);
    for (int li = 0; li < C.n; li++) {
        const ir_op *L = IR_OP(m, li);
        if ((L->code != IR_LAYERNORM_DX && L->code != IR_RMSNORM_DX) || L->nres != 1)
            continue;
        const ir_type *t = &L->res[0]->type;
        int64_t D = t->rank >= 1 ? t->dim[t->rank - 1] : 0;
        if (!is_float(t->dtype) || D < 1 || D > PASS_NORM_COLS_MAX_WIDTH)
            continue;
        int64_t N = ir_type_numel(t) / D, P = parts_for(N);
        if (!P)
            continue;
        cand c[2];
        int ncand = 0;
        memset(C.mark, 0, ((size_t)C.n + 1) * sizeof *C.mark);
        for (int i = li - 1; i >= 0 && i >= li - PASS_FUSE_HOLD && ncand < 2; i--) {
            memcpy(C.saved, C.mark, ((size_t)C.n + 1) * sizeof *C.saved);
            if (candidate(&C, L, i, N, D, &c[ncand]))
                ncand++;
            else
                memcpy(C.mark, C.saved, ((size_t)C.n + 1) * sizeof *C.mark); /* not its chain */
        }
        if (!ncand || !chains_closed(&C, c, ncand))
            continue;
        int first = li, last = 0;
        for (int k = 0; k < ncand; k++) {
            first = c[k].at < first ? c[k].at : first;
            last = c[k].at > last ? c[k].at : last;
            for (int j = 0; j < c[k].nchain; j++)
                first = c[k].chain[j] < first ? c[k].chain[j] : first;
        }
        /* the earlier sum's value is made after the later's partial sum:
         * nothing between may read it */
        bool read = false;
        for (int k = 0; k < ncand && !read; k++)
            for (int i = c[k].at + 1; i <= last && !read; i++)
                read = ir_op_reads(IR_OP(m, i), IR_OP(m, c[k].at)->res[0]);
        if (read || !plan_hoist(&C, li, first, last, C.hoist))
            continue;
        rewrite(&C, li, c, ncand, C.hoist, first, P);
        done++;
        index_module(&C); /* the ops moved: index them again */
        li = C.defat[L->res[0]->id];
    }
    return done;
}
