/* pipesplit.c: the pipeline split (DESIGN.md §3.5, LANGUAGE.md §9); its
 * analysis is pipeclass.c's, its verifier p2pverify.c's (pipesplit.h).
 *
 * From the partitioned module, which every rank of every stage would run
 * whole, makes one program per stage of the pipeline axis: the chunks of the
 * pipelined repeat it owns, for each microbatch, in the order its schedule
 * gives, with send and recv where a value crosses stages.
 *
 * Each value of the partitioned module gets a kind:
 *   PRE   per step, made before any microbatch: params, states, constants
 *         and whatever is made from them alone (computed once per stage, at
 *         first use);
 *   MB    per microbatch: what depends on the inputs row by row. Its local
 *         type has dimension `bd` (where the batch rows are, the major part
 *         of that dimension) divided by the microbatch count;
 *   ACC   the result of an op that reduces over the batch (a gradient's
 *         matmul or sum over batch rows, embedding_grad, a loss): computed
 *         per microbatch and accumulated (sum, mean of the microbatches'
 *         means, max);
 *   POST  per step, made from accumulated values: gradient synchronisation,
 *         the optimizer, the loss's all_reduce.
 * The split is exact because every batch-reducing op's full-batch result is
 * the sum (mean, max) of its microbatch results, and every backward
 * constant carries the full batch's row count. A per-microbatch op that
 * reads an accumulated value (batch statistics) cannot be pipelined and is
 * an error. A per-step value may span the batch only along a dimension
 * where all its elements are equal (the gradient of a sum or mean over the
 * batch, a per-step scalar expanded over the rows): each microbatch reads
 * a slice of it. So a loss that is a sum or mean over the rows of per-row
 * terms, then scaled or summed with others, is the sum or mean of its
 * microbatches' losses, and so are its gradients.
 *
 * Microbatch j is one set of global batch rows, the same for every input
 * whatever its sharding: with N the least common multiple of the number of
 * blocks the inputs' (and outputs') dimension 0 is split into, and of the
 * splits along the batch of the per-step values that microbatches read row
 * by row (the dropout of a gradient the same in every row), the batch
 * of B rows is N blocks of M microbatches of B / (N M) rows, and
 * microbatch j is the j-th part of every block. An input split into n
 * blocks holds N / n of them; its microbatch j is the j-th part of each
 * (columns of a bucket [N / n, local numel]). So on every rank each
 * microbatch value is the local shard, under its sharding, of what the
 * partitioned program computes on a batch of those rows, and the
 * partitioner's collectives and slices, which work on any batch size,
 * pair the right rows.
 *
 * MB and ACC ops belong to a chunk: a repetition's chunk is rep / (L / C)
 * for C = stages x chunks per stage; others take the latest chunk of their
 * operands. Ops made only from inputs and per-step values float: each stage
 * computes them itself when it first needs them (a batch reduction of
 * them, and what is made from it, every microbatch at once). An output
 * that floats is read where it was made, else on a stage holding a param
 * it reads (every copy of a param gets this step's value, below); an
 * output of a param is read where it is updated. Chunk c runs on stage
 * c % P; its forward ops run in the tasks F(c, j), its backward ops in
 * B(c, j). A value one stage makes and another reads is sent at the end of
 * the producing task and received at the start of the consuming one.
 *
 * A param with an update lives on the stage that makes its gradient (and
 * updates it there). Another stage may read it too, for a per-step value
 * (the gradient through a later layer, made from its params alone, where
 * the loss's gradient is the same in every row) or for the forward op of
 * a value whose gradient reaches the param on a later stage, or of a
 * value made before the pipelined repeat and read after it: that stage
 * receives its value before anything else runs. A param that two
 * forward ops on two stages read is shared by stages: an error.
 */
#include "pipesplit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building one stage's program ---- */

typedef struct st {
    pl *L;
    ir_module *dst;
    int s;
    ir_value **pre;     /* [nv]: per-step values made on this stage */
    ir_value **full;    /* [nv]: inputs read whole */
    ir_value ***mb;     /* [nv]: per value, its M microbatch values here (made or
                         * received), a row made when the stage first touches
                         * the value (mb_at): a stage holds a few of the
                         * model's values, and nv * M pointers a stage made a
                         * deep pipeline's split quadratic in the microbatches.
                         * A held stage's row is of HELD_ROW (microbatches 0, 1,
                         * 2 and M - 1: mb_slot) until a middle microbatch's
                         * value is received into it */
    uint8_t *short_row; /* [nv]: mb[id] is of HELD_ROW */
    ir_value **step;    /* [nv]: ACC (running, then final) and POST values */
    ir_value **slice;   /* [nv]: per-step values as microbatches read them (cut) */
    int *nacc;          /* [nv]: contributions accumulated */
    const ir_op **fwd;  /* [nv]: params a forward op here reads (directly or through
                         * per-step values): the first op that reads it; other
                         * per-step values: non-NULL once walked */
    const ir_op *reader; /* the op, not per-step, whose operands are being made
                         * (NULL: an output's or an update's) */
    uint8_t ctx;        /* its phase */
    bool output;        /* making an output no task made: no gradient flows back
                         * through its ops, so their reads are not forward reads */
    su_vec bounds;      /* op index ranges [start, end) of sends and recvs between tasks
                         * (intptr_t pairs) */
    int *want;          /* [nv]: recv_task's values to receive */
    int task, cur_mb;   /* what ops made now are stamped with (ir_op.task, .mb): the
                         * task being computed; -1 for the sends and receives of a
                         * microbatch's values; 0 while making per-step values and
                         * what is made once (an input read whole, a value's slice
                         * that every microbatch reads) */
    bool failed;
    bool held;          /* a middle microbatch's task (3 .. M - 2) is one placeholder
                         * op, not its ops (held_task) */
    bool held_miss;     /* something other than a middle microbatch's sends read one
                         * of its values, which held_task does not make: the split
                         * is made again, this stage without placeholders */
    su_ptrmap attrs;    /* the source's attributes as dst's (each interned once),
                         * by the source's pointer, in dst's arena */
} st;

/* A held stage makes the values of microbatches 0, 1, 2 (its template)
 * and M - 1 alone; it receives every microbatch's. */
enum { HELD_ROW = PASS_HELD_TEMPLATE + 2 };

/* Microbatch j's slot in a short row; -1: a middle microbatch's, none. */
static int mb_slot(const st *S, int j)
{
    return j <= PASS_HELD_TEMPLATE ? j : j == S->L->M - 1 ? HELD_ROW - 1 : -1;
}

/* Microbatch j's value of source value id on this stage: its slot, the
 * value's row made (zeroed, by su_alloc) when it has none, in the stage's
 * module's arena (the stages' tasks run on threads of their own, each
 * allocating only in its module, under its job's guard; the rows go when
 * the module is compacted). */
static ir_value **mb_at(st *S, int id, int j)
{
    int M = S->L->M;
    if (!S->mb[id]) {
        S->short_row[id] = S->held && M > HELD_ROW && mb_slot(S, j) >= 0;
        S->mb[id] = su_alloc(&S->dst->arena,
                             (size_t)(S->short_row[id] ? HELD_ROW : M) * sizeof **S->mb);
    }
    if (S->short_row[id] && mb_slot(S, j) < 0) { /* a middle microbatch's: the whole row */
        ir_value **row = su_alloc(&S->dst->arena, (size_t)M * sizeof *row);
        for (int k = 0; k < M; k++)
            if (mb_slot(S, k) >= 0)
                row[k] = S->mb[id][mb_slot(S, k)];
        S->mb[id] = row;
        S->short_row[id] = 0;
    }
    return &S->mb[id][S->short_row[id] ? mb_slot(S, j) : j];
}

/* The same, NULL where it is not here (the row is not made). */
static ir_value *mb_get(const st *S, int id, int j)
{
    if (!S->mb[id])
        return NULL;
    if (!S->short_row[id])
        return S->mb[id][j];
    return mb_slot(S, j) >= 0 ? S->mb[id][mb_slot(S, j)] : NULL;
}

/* Whether microbatch j's tasks are placeholders here (st.held). */
static bool held_mb(const st *S, int j)
{
    return S->held && j > PASS_HELD_TEMPLATE && j < S->L->M - 1;
}

static ir_type mb_type(const pl *L, const ir_value *v)
{
    ir_type t = v->type;
    t.dim[L->bd[v->id]] /= L->M;
    return t;
}

/* An op into dst with attributes that are dst's (ir_attrs_intern). */
static ir_value *append_interned(st *S, const ir_op *like, ir_opcode code, ir_value **in,
                                 int nin, const ir_attrs *a, const ir_type *t,
                                 const ir_sharding *sh)
{
    ir_op *d = ir_append_interned(S->dst, code, in, nin, a, t);
    if (!S->L->m->pipe.unroll) {
        d->task = S->task;
        d->mb = S->cur_mb;
    }
    if (like) {
        d->rep = like->rep;
        d->phase = like->phase;
        d->loc = like->loc;
    }
    if (!d->nres)
        return NULL;
    if (sh)
        d->res[0]->sh = *sh;
    else
        d->res[0]->sh.kind = IR_SH_AUTO;
    if (like)
        d->res[0]->name = like->res[0]->name;
    return d->res[0];
}

static ir_value *append(st *S, const ir_op *like, ir_opcode code, ir_value **in, int nin,
                        const ir_attrs *a, const ir_type *t, const ir_sharding *sh)
{
    return append_interned(S, like, code, in, nin, ir_attrs_intern(S->dst, a), t, sh);
}

/* a, the source's, as dst's: interned the first time the split copies an
 * op that has it (every microbatch's copy of an op has it). */
static const ir_attrs *dst_attrs(st *S, const ir_attrs *a)
{
    S->attrs.a = &S->dst->arena;
    const ir_attrs *x = su_ptrmap_get(&S->attrs, a);
    if (!x) {
        x = ir_attrs_intern(S->dst, a);
        su_ptrmap_put(&S->attrs, a, (void *)x);
    }
    return x;
}

static ir_value *copy_op(st *S, const ir_op *op, ir_value **in, const ir_type *t)
{
    ir_attrs a = *op->a;
    if ((ir_ops[op->code].attrs & IR_A_SHAPE) && op->code != IR_DROPOUT) {
        a.nlist = t->rank;
        memcpy(a.list, t->dim, sizeof a.list);
        return append(S, op, op->code, in, op->nin, &a, t, &op->res[0]->sh);
    }
    return append_interned(S, op, op->code, in, op->nin, dst_attrs(S, op->a), t,
                           &op->res[0]->sh);
}

static ir_value *get(st *S, const ir_value *v, int j);
static bool make_step(st *S, const ir_value *v);

static bool operands(st *S, const ir_op *op, int j, ir_value **in)
{
    uint8_t ctx = S->ctx;
    const ir_op *reader = S->reader;
    if (S->L->kind[op->res[0]->id] != K_PRE) {
        S->ctx = op->phase;
        S->reader = op;
    }
    for (int k = 0; k < op->nin; k++)
        if (!(in[k] = get(S, op->in[k], j)))
            return false;
    S->ctx = ctx;
    S->reader = reader;
    return true;
}

/* Microbatch j of an input: the input read whole, viewed as a bucket of
 * one row per block it holds (N / its blocks), the j-th part of every row
 * (the batch is dimension 0, its major part). */
static ir_value *input_mb(st *S, const ir_op *op, int j)
{
    pl *L = S->L;
    int id = op->res[0]->id;
    if (!S->full[id]) {
        int task = S->task;
        S->task = 0;
        S->full[id] = copy_op(S, op, NULL, &op->res[0]->type);
        S->task = task;
    }
    ir_value *x = S->full[id];
    int64_t n = ir_type_numel(&x->type), k = L->N / pass_pl_blocks_of(L, op->res[0]);
    ir_type rows = {.dtype = x->type.dtype, .rank = 2, .dim = {k, n / k}};
    ir_attrs ra = {.nlist = 2, .list = {k, n / k}};
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_value *flat = append(S, op, IR_RESHAPE, &x, 1, &ra, &rows, &rep);
    ir_type t = mb_type(L, op->res[0]);
    ir_attrs ea = {.offset = j * (n / k / L->M), .nlist = t.rank};
    memcpy(ea.list, t.dim, sizeof ea.list);
    ir_value *r = append(S, op, IR_EXTRACT, &flat, 1, &ea, &t, &op->res[0]->sh);
    r->name = op->res[0]->name;
    return r;
}

/* Microbatch j's part of per-step value x (of v) along dimension d, x
 * holding `blocks` blocks of the batch there: part j of every block, the
 * columns of a bucket of one row per index of the dimensions before d and
 * block (as input_mb reads an input). */
static ir_value *part_of(st *S, const ir_value *v, ir_value *x, int d, int64_t blocks, int j)
{
    pl *L = S->L;
    int64_t rows = blocks, n = ir_type_numel(&v->type);
    for (int q = 0; q < d; q++)
        rows *= v->type.dim[q];
    ir_type b = {.dtype = v->type.dtype, .rank = 2, .dim = {rows, n / rows}};
    ir_attrs ra = {.nlist = 2, .list = {rows, n / rows}};
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_value *flat = append(S, v->def, IR_RESHAPE, &x, 1, &ra, &b, &rep);
    ir_type t = v->type;
    t.dim[d] /= L->M;
    ir_attrs ea = {.offset = j * (n / rows / L->M), .nlist = t.rank};
    memcpy(ea.list, t.dim, sizeof ea.list);
    return append(S, v->def, IR_EXTRACT, &flat, 1, &ea, &t, &v->sh);
}

/* A microbatch's slice of per-step value v along dimension d, where v is
 * the same everywhere (per_step_fits): its first M-th, made once. */
static ir_value *slice_of(st *S, const ir_value *v, int d)
{
    pl *L = S->L;
    ir_value *x = get(S, v, 0);
    if (!x || L->M == 1)
        return x;
    ir_value **slot = &S->slice[v->id];
    if (!*slot || (*slot)->type.dim[d] * L->M != v->type.dim[d]) {
        int task = S->task;
        S->task = 0;
        *slot = part_of(S, v, x, d, 1, 0);
        S->task = task;
    }
    return *slot;
}

/* Microbatch j's rows of per-step value v along dimension d, where v
 * differs from row to row: the rows microbatch j holds of every block of
 * the batch that v's shard holds (N over the blocks d is split into). */
static ir_value *rows_of(st *S, const ir_value *v, int d, int j)
{
    pl *L = S->L;
    ir_value *x = get(S, v, 0);
    if (!x || L->M == 1)
        return x;
    return part_of(S, v, x, d, L->N / ir_sharding_split(&v->sh, &L->m->mesh, d), j);
}

/* The operands of a per-microbatch or accumulated op, per-step values that
 * span the batch as slices (the microbatch's own rows where they differ
 * row by row). */
static bool mb_operands(st *S, const ir_op *op, int j, ir_value **in)
{
    if (!operands(S, op, j, in))
        return false;
    for (int k = 0; k < op->nin; k++) {
        int d = S->L->cut[(size_t)op->res[0]->id * MAX_IN + k];
        if (d >= CUT_ROWS)
            in[k] = rows_of(S, op->in[k], d - CUT_ROWS, j);
        else if (d >= 0)
            in[k] = slice_of(S, op->in[k], d);
        if (d >= 0 && !in[k])
            return false;
    }
    return true;
}

/* Microbatch j of a dropout, where its bits come from: its rows of the
 * batch dim d. Where d is split, the op's position operand for d (the
 * global rows of the rank's) was cut to the microbatch's own rows
 * (pipeclass.c, rule_dropout), and the op reads them from 0. Where d is
 * whole, the rows are part j of each block of the batch the rank's value
 * holds (input_mb), k blocks: with one, rows j * n .. (n per microbatch),
 * the op at that offset; with several, each block's part is one run of
 * global rows, a dropout of each at its offset, joined. */
static ir_value *dropout_mb(st *S, const ir_op *op, int j, ir_value **in, const ir_type *t)
{
    pl *L = S->L;
    const ir_value *r = op->res[0];
    int d = L->bd[r->id];
    int64_t k = L->N / ir_sharding_split(&r->sh, &L->m->mesh, d), n = t->dim[d] / k;
    ir_attrs a = *op->a;
    a.dim = d;
    a.offset = r->sh.naxes[d] ? 0 : j * t->dim[d];
    if (r->sh.naxes[d] || k == 1)
        return append(S, op, op->code, in, op->nin, &a, t, &r->sh);
    ir_value *part = NULL; /* the blocks' dropouts, joined along d */
    for (int64_t b = 0; b < k; b++) {
        ir_type bt = *t;
        bt.dim[d] = n;
        ir_attrs na = {.dim = d, .offset = b * n, .bound = (b + 1) * n};
        ir_value *bin[MAX_IN];
        memcpy(bin, in, (size_t)op->nin * sizeof *bin);
        bin[0] = append(S, op, IR_NARROW, &in[0], 1, &na, &bt, &in[0]->sh);
        a.offset = b * (t->dim[d] * L->M / k) + j * n; /* the block's rows, then part j's */
        ir_value *y = append(S, op, op->code, bin, op->nin, &a, &bt, &r->sh);
        if (part) {
            ir_type jt = part->type;
            jt.dim[d] += n;
            ir_value *two[2] = {part, y};
            ir_attrs ca = {.dim = d};
            y = append(S, op, IR_CONCAT, two, 2, &ca, &jt, &r->sh);
        }
        part = y;
    }
    return part;
}

static ir_value *emit_mb(st *S, const ir_op *op, int j)
{
    if (op->code == IR_INPUT)
        return input_mb(S, op, j);
    ir_value *in[MAX_IN];
    if (!mb_operands(S, op, j, in))
        return NULL;
    ir_type t = mb_type(S->L, op->res[0]);
    if (op->code == IR_DROPOUT)
        return dropout_mb(S, op, j, in, &t);
    return copy_op(S, op, in, &t);
}

/* Op, a forward op (NULL: an output), reads per-step value v: so it or
 * the ops that make v read params (st.fwd). */
static void read_forward(st *S, const ir_value *v, const ir_op *op)
{
    if (S->fwd[v->id] || S->output)
        return;
    S->fwd[v->id] = op ? op : v->def;
    for (int k = 0; k < v->def->nin; k++)
        if (S->L->kind[v->def->in[k]->id] == K_PRE)
            read_forward(S, v->def->in[k], v->def);
}

static ir_value *get(st *S, const ir_value *v, int j)
{
    pl *L = S->L;
    int id = v->id;
    switch (L->kind[id]) {
    case K_PRE:
        if (!S->pre[id]) {
            ir_value *in[MAX_IN];
            int task = S->task;
            S->task = 0;
            if (!operands(S, v->def, 0, in))
                return NULL;
            S->pre[id] = copy_op(S, v->def, in, &v->type);
            S->task = task;
        }
        if (S->ctx == IR_PH_FORWARD)
            read_forward(S, v, S->reader);
        return S->pre[id];
    case K_MB: {
        if (held_mb(S, j)) { /* not made: the split is made again, S unheld */
            S->held_miss = true;
            j = PASS_HELD_TEMPLATE;
        }
        ir_value **slot = mb_at(S, id, j);
        if (!*slot && L->floating[id])
            *slot = emit_mb(S, v->def, j);
        if (!*slot && !S->failed) {
            S->failed = true;
            pass_pl_fail_at(L, v->def->loc, "internal error: microbatch %d of this value is not on stage %d", j,
                 S->s);
        }
        return *slot;
    }
    default:
        if (!S->step[id] && L->stage[id] < 0) {
            int task = S->task;
            S->task = 0;
            if (!make_step(S, v))
                return NULL;
            S->task = task;
        }
        if (!S->step[id] && !S->failed) {
            S->failed = true;
            pass_pl_fail_at(L, v->def->loc, "internal error: this per-step value is not on stage %d", S->s);
        }
        return S->step[id];
    }
}

/* One microbatch's contribution to an accumulated value: op's copy for
 * microbatch j, then add_in's. */
static ir_value *contribute(st *S, const ir_op *op, int j)
{
    ir_value *in[MAX_IN];
    if (!mb_operands(S, op, j, in))
        return NULL;
    return copy_op(S, op, in, &op->res[0]->type);
}

/* t, op's contribution, added to what op's value has accumulated (and
 * scaled to the mean with the last microbatch's). */
static void add_in(st *S, const ir_op *op, ir_value *t)
{
    pl *L = S->L;
    int id = op->res[0]->id;
    if (S->step[id]) {
        ir_value *ab[2] = {S->step[id], t};
        t = append(S, op, L->acc[id] == ACC_MAX ? IR_MAX : IR_ADD, ab, 2, &(ir_attrs){0},
                   &t->type, &op->res[0]->sh);
    }
    S->step[id] = t;
    if (++S->nacc[id] == L->M && L->acc[id] == ACC_MEAN && L->M > 1) {
        ir_type sc = {.dtype = t->type.dtype};
        ir_value *c = append(S, op, IR_CONST, NULL, 0, &(ir_attrs){.value = 1.0 / L->M}, &sc,
                             NULL);
        ir_value *ab[2] = {t, c};
        S->step[id] = append(S, op, IR_MUL, ab, 2, &(ir_attrs){0}, &t->type, &op->res[0]->sh);
    }
}

static bool accumulate(st *S, const ir_op *op, int j)
{
    ir_value *t = contribute(S, op, j);
    if (t)
        add_in(S, op, t);
    return t != NULL;
}

/* A per-step value any stage can make (from inputs and per-step values),
 * where it is first read: every microbatch's contribution at once. */
static bool make_step(st *S, const ir_value *v)
{
    const ir_op *op = v->def;
    if (S->L->kind[v->id] == K_ACC) {
        for (int j = 0; j < S->L->M; j++)
            if (!accumulate(S, op, j))
                return false;
        return true;
    }
    ir_value *in[MAX_IN];
    if (!operands(S, op, 0, in))
        return false;
    S->step[v->id] = copy_op(S, op, in, &v->type);
    return true;
}

static int64_t tag_of(const pl *L, int id, int j)
{
    return (int64_t)id * L->M + j;
}

/* The attributes' tag of microbatch j's send or recv of value id: the tag
 * of microbatch 0's, the op stamped with j (ir_p2p_tag), or with
 * --unroll, which stamps no op, j's own. */
static int64_t mb_tag(const st *S, int id, int j)
{
    return tag_of(S->L, id, S->L->m->pipe.unroll ? j : 0);
}

/* Whether op runs in a task (of its chunk and phase): a per-microbatch op
 * or an accumulated one, not floating. */
static bool in_a_task(const pl *L, const ir_op *op)
{
    int id = op->res[0]->id;
    return L->kind[id] == K_MB ? !L->floating[id] : L->kind[id] == K_ACC && !L->floating[id];
}

static int task_kind(int chunk, bool forward)
{
    return 2 * chunk + forward;
}

/* The ops of each kind of task, once for every task of the stages (a
 * counting sort of the module's ops by kind), and the values by id. */
static void index_tasks(pl *L)
{
    const ir_module *m = L->m;
    int nk = 2 * L->C, n = m->ops.n;
    L->task_start = su_alloc(&L->ar, (size_t)(nk + 1) * sizeof *L->task_start);
    memset(L->task_start, 0, (size_t)(nk + 1) * sizeof *L->task_start);
    L->val = su_alloc(&L->ar, (size_t)L->nv * sizeof *L->val);
    memset(L->val, 0, (size_t)L->nv * sizeof *L->val);
    int *kind_of = su_alloc(&L->ar, (size_t)(n + 1) * sizeof *kind_of);
    for (int i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nres; k++)
            L->val[op->res[k]->id] = op->res[k];
        kind_of[i] = in_a_task(L, op) ? task_kind(L->chunk[op->res[0]->id],
                                                  op->phase == IR_PH_FORWARD)
                                      : -1;
        if (kind_of[i] >= 0)
            L->task_start[kind_of[i] + 1]++;
    }
    for (int k = 0; k < nk; k++)
        L->task_start[k + 1] += L->task_start[k];
    L->task_op = su_alloc(&L->ar, (size_t)(L->task_start[nk] + 1) * sizeof *L->task_op);
    int *fill = su_alloc(&L->ar, (size_t)(nk + 1) * sizeof *fill);
    memcpy(fill, L->task_start, (size_t)(nk + 1) * sizeof *fill);
    for (int i = 0; i < n; i++)
        if (kind_of[i] >= 0)
            L->task_op[fill[kind_of[i]]++] = i;
}

/* Task t's ops: the module's op indices [*first, *end) of L->task_op. */
static void task_ops(const pl *L, const pass_task *t, int *first, int *end)
{
    int k = task_kind(t->chunk, t->forward);
    *first = L->task_start[k];
    *end = L->task_start[k + 1];
}

/* Receives what task t reads from other stages, in value order. */
static void recv_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb;
    int nrecv = 0, first, end;
    int *want = S->want;
    task_ops(L, t, &first, &end);
    for (int q = first; q < end; q++) {
        const ir_op *op = IR_OP(m, L->task_op[q]);
        for (int k = 0; k < op->nin; k++) {
            const ir_value *x = op->in[k];
            if (L->kind[x->id] != K_MB || L->floating[x->id] ||
                pass_pl_stage_of(L, L->chunk[x->id]) == S->s)
                continue;
            bool seen = mb_get(S, x->id, j) != NULL;
            for (int q = 0; q < nrecv && !seen; q++)
                seen = want[q] == x->id;
            if (!seen)
                want[nrecv++] = x->id;
        }
    }
    for (int a = 1; a < nrecv; a++)
        for (int b = a; b > 0 && want[b - 1] > want[b]; b--) {
            int tmp = want[b];
            want[b] = want[b - 1];
            want[b - 1] = tmp;
        }
    S->task = -1; /* a microbatch's, in no task */
    S->cur_mb = j;
    for (int q = 0; q < nrecv; q++) {
        const ir_value *x = L->val[want[q]];
        ir_type ty = mb_type(L, x);
        ir_attrs a = {.peer = pass_pl_stage_of(L, L->chunk[x->id]), .tag = mb_tag(S, x->id, j)};
        ir_value *r = append(S, x->def, IR_RECV, NULL, 0, &a, &ty, &x->sh);
        *mb_at(S, x->id, j) = r;
    }
    S->task = S->cur_mb = 0;
}

/* A middle microbatch's task held: one placeholder op with the task's
 * stamp (an `instances` op of no run yet), which pass_share_instances
 * takes as microbatch 2's instance of the task, copied (DESIGN.md §3,
 * pass 6); its contributions to the sums over microbatches are counted,
 * their adds being microbatch 2's: the last microbatch adds to microbatch
 * 2's sums, as pass_share_instances points it there. */
static void held_task(st *S, const pass_task *t, int first, int end)
{
    pl *L = S->L;
    ir_op *d = ir_append_interned(S->dst, IR_INSTANCES, NULL, 0,
                                  ir_attrs_intern(S->dst, &(ir_attrs){.tag = -1}), NULL);
    d->task = 1 + task_kind(t->chunk, t->forward);
    d->mb = t->mb;
    for (int q = first; q < end; q++) {
        int id = IR_OP(L->m, L->task_op[q])->res[0]->id;
        if (L->kind[id] == K_ACC)
            S->nacc[id]++;
    }
}

static bool compute_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb, first, end;
    task_ops(L, t, &first, &end);
    if (held_mb(S, j)) {
        held_task(S, t, first, end);
        return true;
    }
    S->task = 1 + task_kind(t->chunk, t->forward);
    S->cur_mb = j;
    /* a loss's contribution is added in after the task's ops, which never
     * read the sum: an add between a loss and the statistics made after it
     * (cross_entropy_lse, passes/xent_grad.c) would keep the fusion from
     * joining them. Other contributions (gradients summed over the
     * microbatches) are added in at once, so that each is freed there;
     * so is a loss's past PENDING of them */
    enum { PENDING = 8 };
    int npend = 0;
    const ir_op *pop[PENDING];
    ir_value *pval[PENDING];
    for (int q = first; q < end && !S->failed; q++) {
        const ir_op *op = IR_OP(m, L->task_op[q]);
        int id = op->res[0]->id;
        if (L->kind[id] == K_ACC) {
            ir_value *c = contribute(S, op, j);
            if (!c)
                return false;
            if (npend == PENDING || ir_ops[op->code].cls != IR_C_LOSS) {
                add_in(S, op, c);
            } else {
                pop[npend] = op;
                pval[npend++] = c;
            }
            continue;
        }
        ir_value *v = emit_mb(S, op, j);
        if (!v)
            return false;
        *mb_at(S, id, j) = v;
    }
    for (int q = 0; q < npend; q++)
        add_in(S, pop[q], pval[q]);
    S->task = S->cur_mb = 0;
    return !S->failed;
}

/* Sends what other stages read of task t's values, in value order. */
static void send_task(st *S, const pass_task *t)
{
    pl *L = S->L;
    const ir_module *m = L->m;
    int j = t->mb, first, end;
    task_ops(L, t, &first, &end);
    for (int q = first; q < end && !S->failed; q++) {
        const ir_op *op = IR_OP(m, L->task_op[q]);
        int id = op->res[0]->id;
        if (L->kind[id] != K_MB || !L->to[id])
            continue;
        S->task = -1;
        S->cur_mb = j;
        for (int s = 0; s < L->P; s++)
            if (L->to[id] & (1ull << s)) {
                /* a middle microbatch's held: microbatch 2's value stands
                 * for its own (the send is taken out as a copy of
                 * microbatch 2's, pass_share_instances) */
                ir_value *x = mb_get(S, id, held_mb(S, j) ? PASS_HELD_TEMPLATE : j);
                if (!x && held_mb(S, j)) {
                    S->held_miss = true; /* the split is made again, S unheld */
                    continue;
                }
                ir_attrs a = {.peer = s, .tag = mb_tag(S, id, j)};
                append(S, op, IR_SEND, &x, 1, &a, NULL, NULL);
            }
        S->task = S->cur_mb = 0;
    }
}

static void bound(st *S, int start)
{
    su_vec_push(&S->bounds, S->dst->oom, (void *)(intptr_t)start);
    su_vec_push(&S->bounds, S->dst->oom, (void *)(intptr_t)S->dst->ops.n);
}

/* The stage's tasks in order; between two tasks, the first one's sends and
 * the next one's recvs (their order is order_p2p's). */
static bool run_tasks(st *S, pass_task *const *task, int n)
{
    int start = S->dst->ops.n;
    if (n)
        recv_task(S, task[0]);
    bound(S, start);
    for (int k = 0; k < n; k++) {
        if (!compute_task(S, task[k]))
            return false;
        start = S->dst->ops.n;
        send_task(S, task[k]);
        if (k + 1 < n)
            recv_task(S, task[k + 1]);
        bound(S, start);
    }
    return !S->failed;
}

typedef struct paired {
    int gap, seq, op;
} paired;

static int by_gap(const void *x, const void *y)
{
    const paired *a = x, *b = y;
    return a->gap != b->gap ? (a->gap > b->gap) - (a->gap < b->gap)
                            : (a->seq > b->seq) - (a->seq < b->seq);
}

/* A send waits for its recv (as NCCL's do). Between two tasks a stage's
 * recvs for the next task and its sends are independent of each other, and
 * a send may also wait for a later gap between tasks (its value stays live
 * longer). This runs all stages together, pairing a send with its recv
 * whenever the receiver has reached the gap before the task that reads the
 * value, moving a stage on once its recvs are done, and puts each stage's
 * sends and recvs into the gaps where they paired, in pairing order. Fails
 * only when the schedule itself waits in a cycle. */
/* An empty vector with room for n pointers: filled with at most n, it
 * never grows, so nothing leaks when an allocation fails while it is held. */
static su_vec vec_of(const pl *L, int n)
{
    return (su_vec){su_xmalloc(L->m->oom, (size_t)(n > 0 ? n : 1) * sizeof(void *)), 0,
                    n > 0 ? n : 1};
}

static bool order_p2p(pl *L, st *S)
{
    int P = L->P;
    int *cur = su_alloc(&L->ar, (size_t)P * sizeof *cur);
    int **at = su_alloc(&L->ar, (size_t)P * sizeof *at); /* per op: the gap it paired in */
    int **seq = su_alloc(&L->ar, (size_t)P * sizeof *seq); /* per op: pairing order */
    /* per stage, its sends not yet paired in the gaps it has reached
     * (0 .. added), in program order: the pairing walks these, as it
     * would every send of those gaps (a paired one is passed over), so a
     * stage's walk costs the sends in flight, not every send before it */
    int **open = su_alloc(&L->ar, (size_t)P * sizeof *open);
    int *nopen = su_alloc(&L->ar, (size_t)P * sizeof *nopen);
    int *added = su_alloc(&L->ar, (size_t)P * sizeof *added);
    int nseq = 0;
    for (int s = 0; s < P; s++) {
        int n = S[s].dst->ops.n + 1;
        cur[s] = 0;
        at[s] = su_alloc(&L->ar, (size_t)n * sizeof **at);
        seq[s] = su_alloc(&L->ar, (size_t)n * sizeof **seq);
        open[s] = su_alloc(&L->ar, (size_t)n * sizeof **open);
        nopen[s] = 0;
        added[s] = -1;
        for (int i = 0; i < n; i++)
            at[s][i] = -1;
    }
#define NB(s) (S[s].bounds.n / 2)
#define LO(s, k) ((intptr_t)S[s].bounds.v[2 * (k)])
#define HI(s, k) ((intptr_t)S[s].bounds.v[2 * (k) + 1])
    for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; s++) {
            if (cur[s] > NB(s))
                continue;
            int upto = cur[s] < NB(s) ? cur[s] : NB(s) - 1;
            for (int g = added[s] + 1; g <= upto; g++)
                for (intptr_t i = LO(s, g); i < HI(s, g); i++)
                    if (IR_OP(S[s].dst, i)->code == IR_SEND && at[s][i] < 0)
                        open[s][nopen[s]++] = (int)i;
            added[s] = upto > added[s] ? upto : added[s];
            int kept = 0;
            for (int q = 0; q < nopen[s]; q++) {
                int i = open[s][q];
                const ir_op *snd = IR_OP(S[s].dst, i);
                int t = (int)snd->a->peer;
                for (intptr_t k = LO(t, cur[t]); at[s][i] < 0 && cur[t] < NB(t) && k < HI(t, cur[t]);
                     k++) {
                    const ir_op *rcv = IR_OP(S[t].dst, k);
                    if (rcv->code != IR_RECV || at[t][k] >= 0 || rcv->a->peer != s ||
                        ir_p2p_tag(rcv) != ir_p2p_tag(snd))
                        continue;
                    at[s][i] = upto;
                    at[t][k] = cur[t];
                    seq[s][i] = seq[t][k] = nseq++;
                    progress = true;
                }
                if (at[s][i] < 0)
                    open[s][kept++] = i;
            }
            nopen[s] = kept;
        }
        for (int s = 0; s < P; s++) { /* one gap on, once its recvs all paired */
            if (cur[s] >= NB(s))
                continue;
            intptr_t i = LO(s, cur[s]);
            while (i < HI(s, cur[s]) && (IR_OP(S[s].dst, i)->code == IR_SEND || at[s][i] >= 0))
                i++;
            if (i == HI(s, cur[s])) {
                cur[s]++;
                progress = true;
            }
        }
    }
    bool ok = true;
    for (int s = 0; s < P && ok; s++) {
        if (cur[s] < NB(s))
            ok = pass_pl_fail_at(L, (su_loc){0, 0}, "internal error: the schedule waits in a cycle (stage %d stops "
                      "before its task %d)", s, cur[s]);
        for (int g = 0; g < NB(s) && ok; g++)
            for (intptr_t i = LO(s, g); i < HI(s, g) && ok; i++)
                if (at[s][i] < 0)
                    ok = pass_pl_fail_at(L, (su_loc){0, 0}, "internal error: stage %d's send (tag %lld) is never "
                              "received", s, (long long)ir_p2p_tag(IR_OP(S[s].dst, i)));
    }
    /* rebuild each stage's list: every gap gets the ops that paired in it */
    for (int s = 0; s < P && ok; s++) {
        const su_vec *ops = &S[s].dst->ops;
        int np = 0;
        paired *pr = su_alloc(&L->ar, (size_t)ops->n * sizeof *pr + 1);
        for (int i = 0; i < ops->n; i++)
            if (at[s][i] >= 0)
                pr[np++] = (paired){at[s][i], seq[s][i], i};
        qsort(pr, (size_t)np, sizeof *pr, by_gap);
        su_vec out = vec_of(L, ops->n);
        int g = 0, q = 0;
        for (int i = 0; i < ops->n;) {
            if (g < NB(s) && i == LO(s, g)) {
                for (; q < np && pr[q].gap == g; q++)
                    su_vec_push(&out, L->m->oom, ops->v[pr[q].op]);
                i = (int)HI(s, g++);
                continue;
            }
            su_vec_push(&out, L->m->oom, ops->v[i++]);
        }
        for (; q < np; q++) /* gaps at the very end */
            su_vec_push(&out, L->m->oom, ops->v[pr[q].op]);
        su_vec_free(&S[s].dst->ops);
        S[s].dst->ops = out;
    }
    for (int s = 0; s < P; s++)
        su_vec_free(&S[s].bounds);
#undef NB
#undef LO
#undef HI
    return ok;
}

/* After every stage's last task: the per-step ops of each stage, in
 * program order. A per-step op that reads a per-step value another stage
 * holds (a tied param's gradient from the first and the last stage, the
 * clip's norm summed over every stage's params, the factor each stage's
 * updates read: classify_op puts the op with its largest operand) receives
 * it, and the holder sends it, both when the walk reaches the op: every
 * stage's sends and recvs of per-step values then follow one order, that
 * of the program, so each pairs without waiting in a cycle, and all come
 * after the stages' tasks. */
static bool run_post(pl *L, st *S)
{
    const ir_module *m = L->m;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        int id = op->res[0]->id, b = L->stage[id];
        for (int s = 0; s < L->P; s++)
            if (L->kind[id] == K_ACC && L->stage[id] == s && S[s].nacc[id] != L->M)
                return pass_pl_fail_at(L, op->loc, "internal error: %d of %d microbatches "
                                       "accumulated on stage %d", S[s].nacc[id], L->M, s);
        if (L->kind[id] != K_POST || b < 0)
            continue;
        for (int k = 0; k < op->nin; k++) {
            const ir_value *x = op->in[k];
            bool step = L->kind[x->id] == K_ACC || L->kind[x->id] == K_POST;
            int a = step ? L->stage[x->id] : -1;
            if (a < 0 || a == b || S[b].step[x->id])
                continue;
            ir_value *v = get(&S[a], x, 0);
            if (!v)
                return false;
            ir_attrs to = {.peer = b, .tag = tag_of(L, x->id, 0)};
            append(&S[a], x->def, IR_SEND, &v, 1, &to, NULL, NULL);
            ir_attrs from = {.peer = a, .tag = tag_of(L, x->id, 0)};
            S[b].step[x->id] = append(&S[b], x->def, IR_RECV, NULL, 0, &from, &x->type, &x->sh);
        }
        ir_value *in[MAX_IN];
        if (!operands(&S[b], op, 0, in))
            return false;
        S[b].step[id] = copy_op(&S[b], op, in, &op->res[0]->type);
    }
    for (int s = 0; s < L->P; s++)
        if (S[s].failed)
            return false;
    return true;
}

/* The stage that holds value v once every task has run; -1 when any
 * stage can make it: per-step, or made from inputs and per-step values
 * only (floating, also a batch reduction of those and what follows). */
static int home(const pl *L, const ir_value *v)
{
    int id = v->id;
    switch (L->kind[id]) {
    case K_PRE: return -1;
    case K_MB: return L->floating[id] ? -1 : pass_pl_stage_of(L, L->chunk[id]);
    default: return L->stage[id];
    }
}

/* An output of microbatch values, the inverse of input_mb: each
 * microbatch's rows into their place in the rows of a bucket (one per
 * block of the batch the value holds), then the bucket in the value's
 * shape. */
static ir_value *gather_mb(st *S, const ir_value *v)
{
    pl *L = S->L;
    int64_t n = ir_type_numel(&v->type), k = L->N / pass_pl_blocks_of(L, v), part = n / k / L->M;
    ir_sharding rep = {.kind = IR_SH_AUTO};
    ir_type sc = {.dtype = v->type.dtype}, row = {.dtype = v->type.dtype, .rank = 2, .dim = {k, n / k}};
    ir_value *z = append(S, NULL, IR_CONST, NULL, 0, &(ir_attrs){.value = 0}, &sc, &rep);
    ir_value *b = append(S, NULL, IR_EXPAND, &z, 1,
                         &(ir_attrs){.nlist = 2, .list = {k, n / k}}, &row, &rep);
    for (int j = 0; j < L->M; j++) {
        ir_value *in[2] = {b, get(S, v, j)};
        if (!in[1])
            return NULL;
        b = append(S, NULL, IR_INSERT, in, 2, &(ir_attrs){.offset = j * part}, &row, &rep);
    }
    ir_attrs ra = {.nlist = v->type.rank};
    memcpy(ra.list, v->type.dim, sizeof ra.list);
    ir_value *r = append(S, NULL, IR_RESHAPE, &b, 1, &ra, &v->type, &v->sh);
    r->name = v->name;
    return r;
}

/* Whether stage S made v (every microbatch of it). */
static bool made(st *S, const ir_value *v)
{
    const pl *L = S->L;
    if (L->kind[v->id] == K_PRE)
        return S->pre[v->id] != NULL;
    if (L->kind[v->id] != K_MB)
        return S->step[v->id] != NULL;
    for (int j = 0; j < L->M; j++) {
        if (held_mb(S, j)) { /* not made: the split is made again, S unheld */
            S->held_miss = true;
            continue;
        }
        if (!mb_get(S, v->id, j))
            return false;
    }
    return true;
}

/* The first stage that holds a param or state v reads through per-step
 * and floating values (-1: none); seen marks the values visited. */
static int param_stage(const pl *L, const st *S, const ir_value *v, bool *seen)
{
    int id = v->id;
    if (seen[id] || home(L, v) >= 0)
        return -1;
    seen[id] = true;
    if (v->def->code == IR_PARAM || v->def->code == IR_STATE) {
        for (int s = 0; s < L->P; s++)
            if (S[s].pre[id])
                return s;
        return -1;
    }
    for (int k = 0; k < v->def->nin; k++) {
        int s = param_stage(L, S, v->def->in[k], seen);
        if (s >= 0)
            return s;
    }
    return -1;
}

static int param_home(pl *L, st *S, const ir_update *u);

/* The update whose new value is v, for a param (an output of a param is
 * its value after the update); NULL when none. */
static const ir_update *param_update_of(const pl *L, const ir_value *v)
{
    for (int i = 0; i < L->m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(L->m, i);
        if (u->v == v && u->src->def->code == IR_PARAM)
            return u;
    }
    return NULL;
}

/* Where output o is read; -1 on error. A param's value after its update
 * is read where the param lives (param_home), which updates it. A value
 * any stage can make (per-step, or made from inputs and per-step values)
 * is read where it was made, else where a param it reads is held, else on
 * the last stage: every stage that holds a param receives its value from
 * the param's home at the start of the step (exchange), so each reads
 * this step's value. */
static int value_stage(pl *L, st *S, const ir_value *v);

static int output_stage(pl *L, st *S, const ir_output *o)
{
    const ir_update *u = param_update_of(L, o->v);
    if (u)
        return param_home(L, S, u);
    return value_stage(L, S, o->v);
}

/* Where a value that is not a param's new value is read, as an output
 * is (output_stage): the training loss too, so that a loss the program
 * outputs is one value on one stage, not recomputed on the last under
 * a second name (the plan writer's "train.loss"). */
static int value_stage(pl *L, st *S, const ir_value *v)
{
    int s = home(L, v);
    if (s >= 0)
        return s;
    for (int k = 0; k < L->P; k++)
        if (made(&S[k], v))
            return k;
    bool *seen = su_alloc(&L->ar, (size_t)L->nv * sizeof *seen);
    memset(seen, 0, (size_t)L->nv * sizeof *seen);
    s = param_stage(L, S, v, seen);
    return s >= 0 ? s : L->P - 1;
}

static bool outputs(pl *L, st *S)
{
    const ir_module *m = L->m;
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        int s = output_stage(L, S, o);
        if (s < 0)
            return false;
        S[s].ctx = param_update_of(L, o->v) ? IR_PH_OPTIMIZER : IR_PH_FORWARD;
        S[s].reader = NULL;
        S[s].output = true;
        ir_value *v = L->kind[o->v->id] == K_MB ? gather_mb(&S[s], o->v) : get(&S[s], o->v, 0);
        S[s].output = false;
        if (!v)
            return false;
        ir_add_output(S[s].dst, o->name, v, o->loc);
    }
    if (m->train.loss) {
        int s = value_stage(L, S, m->train.loss);
        S[s].dst->train.loss = get(&S[s], m->train.loss, 0);
    }
    return true;
}

/* The stage a param with an update lives on: where its gradient (else
 * its new value) is made, else where a forward op reads it, else where
 * any op does (stage 0 when none does). Another stage that reads it (a
 * param shared by stages, as tied input and output embeddings are, whose
 * gradients the stages' contributions sum on the home, run_post; the
 * gradient of the operation that reads it, made on an earlier stage from
 * per-step values alone; the forward op of a value whose gradient reaches
 * the param on another stage, or that both need) gets its value at the
 * start of the step (exchange). */
static int param_home(pl *L, st *S, const ir_update *u)
{
    int id = u->src->id, fwd = -1, any = -1;
    for (int s = 0; s < L->P; s++) {
        if (S[s].fwd[id] && fwd < 0)
            fwd = s;
        if (S[s].pre[id] && any < 0)
            any = s;
    }
    if (u->grad && home(L, u->grad) >= 0)
        return home(L, u->grad);
    if (home(L, u->v) >= 0)
        return home(L, u->v);
    return fwd >= 0 ? fwd : any >= 0 ? any : 0;
}

/* Where update u is made: a param's on its home (param_home), a state's
 * on every stage that reads it (the step count; stage 0 when none does).
 * Its new value and gradient must be made there. */
static bool place_update(pl *L, st *S, const ir_update *u, ir_update *out, int *at)
{
    bool param = u->src->def->code == IR_PARAM;
    int id = u->src->id, first = -1, n = 0;
    if (param && (first = param_home(L, S, u)) < 0)
        return false;
    for (int s = 0; s < L->P && !param && first < 0; s++)
        if (S[s].pre[id])
            first = s;
    for (int s = first < 0 ? 0 : first; s < L->P; s++) {
        if (first >= 0 && !S[s].pre[id] && s != first)
            continue;
        const ir_value *need[2] = {u->v, u->grad};
        for (int k = 0; k < 2; k++)
            if (need[k] && home(L, need[k]) >= 0 && home(L, need[k]) != s)
                return pass_pl_fail_at(L, u->src->def->loc, "'%s' lives on stage %d, but its %s is made on "
                            "stage %d", u->src->def->a->name, s, k ? "gradient" : "new value",
                            home(L, need[k]));
        S[s].ctx = IR_PH_OPTIMIZER;
        S[s].reader = NULL;
        ir_value *src = get(&S[s], u->src, 0), *v = get(&S[s], u->v, 0);
        ir_value *g = u->grad ? get(&S[s], u->grad, 0) : NULL;
        if (!src || !v || (u->grad && !g))
            return false;
        out[n] = (ir_update){src, v, g};
        at[n++] = s;
        if (first < 0 || param)
            break;
    }
    if (param)
        L->home[id] = at[0];
    for (; n < L->P; n++)
        at[n] = -1;
    return true;
}

/* The params are placed first: a state that only its param's update
 * reads (momentum, adamw's moments, the master copy of a bf16 param) then
 * lives with its param, whose update reads it, rather than on stage 0,
 * where its own update would read the param (a momentum's weight decay, a
 * master copy's init). The updates are added in the module's order. */
static bool updates(pl *L, st *S)
{
    const ir_module *m = L->m;
    int n = m->updates.n, P = L->P;
    ir_update *out = su_alloc(&L->ar, (size_t)(n * P + 1) * sizeof *out);
    int *at = su_alloc(&L->ar, (size_t)(n * P + 1) * sizeof *at);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const ir_update *u = IR_UPDATE(m, i);
            if ((u->src->def->code == IR_PARAM) == (pass == 0) &&
                !place_update(L, S, u, out + (size_t)i * P, at + (size_t)i * P))
                return false;
        }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < P && at[i * P + k] >= 0; k++) {
            const ir_update *u = &out[i * P + k];
            ir_add_update(S[at[i * P + k]].dst, u->src, u->v, u->grad);
        }
    return true;
}

/* Replaces every use of value a in module d by b. */
static void replace_uses(ir_module *d, const ir_value *a, ir_value *b)
{
    for (int i = 0; i < d->ops.n; i++) {
        ir_op *op = IR_OP(d, i);
        for (int k = 0; k < op->nin; k++)
            if (op->in[k] == a)
                op->in[k] = b;
    }
    for (int i = 0; i < d->outputs.n; i++)
        if (IR_OUTPUT(d, i)->v == a)
            IR_OUTPUT(d, i)->v = b;
}

/* Moves ops front of module d to its front, in that order, and drops the
 * ops marked gone (a mark per op index, for the first ngone ops: those
 * appended since, the sends and receives among front, have none). */
static void to_front(pl *L, ir_module *d, ir_op **front, int nfront, const bool *gone, int ngone)
{
    su_vec out = vec_of(L, nfront + d->ops.n);
    for (int k = 0; k < nfront; k++)
        su_vec_push(&out, L->m->oom, front[k]);
    for (int i = 0; i < d->ops.n; i++) {
        bool moved = i < ngone && gone[i];
        for (int k = 0; k < nfront && !moved; k++)
            moved = front[k] == IR_OP(d, i);
        if (!moved)
            su_vec_push(&out, L->m->oom, d->ops.v[i]);
    }
    su_vec_free(&d->ops);
    d->ops = out;
}

/* A param read on stages other than its home (param_home) is sent from
 * there to each of them before anything else runs, its copy there
 * replaced by what it receives, so every stage reads this step's value
 * and only the home updates it. Every stage's sends and recvs follow one
 * order (param, then receiving stage), so they pair without waiting in a
 * cycle. */
static bool exchange(pl *L, st *S)
{
    const ir_module *m = L->m;
    for (int s = 0; s < L->P; s++) {
        ir_module *d = S[s].dst;
        int nops = d->ops.n, nfront = 0, cap = 1;
        /* room for what the two loops below move to the front: per param
         * homed here and read elsewhere, its own def and a send to each
         * reader; per param read here and homed elsewhere, its recv (every
         * stage's front was once sized by all the updates times the stages:
         * 3.5 MB a stage on 64 stages of 96 layers) */
        for (int i = 0; i < m->updates.n; i++) {
            const ir_value *p = IR_UPDATE(m, i)->src;
            int h = p->def->code == IR_PARAM ? L->home[p->id] : -1;
            if (h < 0)
                continue;
            for (int t = 0; t < L->P; t++)
                if (t != h && S[t].pre[p->id] && (s == h || s == t))
                    cap += s == h ? 2 : 1;
        }
        ir_op **front = su_alloc(&L->ar, (size_t)cap * sizeof *front);
        bool *gone = su_alloc(&L->ar, (size_t)nops + 1);
        memset(gone, 0, (size_t)nops + 1);
        for (int i = 0; i < m->updates.n; i++) { /* the home's params first */
            const ir_value *p = IR_UPDATE(m, i)->src;
            if (p->def->code != IR_PARAM || L->home[p->id] != s)
                continue;
            for (int t = 0; t < L->P; t++)
                if (t != s && S[t].pre[p->id]) {
                    if (nfront < cap)
                        front[nfront] = S[s].pre[p->id]->def;
                    nfront++;
                    break;
                }
        }
        for (int i = 0; i < m->updates.n; i++) {
            const ir_value *p = IR_UPDATE(m, i)->src;
            int h = p->def->code == IR_PARAM ? L->home[p->id] : -1;
            if (h < 0)
                continue;
            for (int t = 0; t < L->P; t++) {
                if (t == h || !S[t].pre[p->id] || (s != h && s != t))
                    continue;
                ir_attrs a = {.peer = s == h ? t : h, .tag = tag_of(L, p->id, 0)};
                if (s == h) {
                    ir_value *x = S[s].pre[p->id];
                    append(&S[s], p->def, IR_SEND, &x, 1, &a, NULL, NULL);
                } else {
                    ir_value *old = S[s].pre[p->id];
                    ir_value *r = append(&S[s], p->def, IR_RECV, NULL, 0, &a, &old->type,
                                         &old->sh);
                    replace_uses(d, old, r);
                    for (int k = 0; k < nops; k++)
                        gone[k] = gone[k] || IR_OP(d, k) == old->def;
                    S[s].pre[p->id] = r;
                }
                if (nfront < cap)
                    front[nfront] = IR_OP(d, d->ops.n - 1);
                nfront++;
            }
        }
        if (nfront > cap)
            return pass_pl_fail_at(L, (su_loc){0, 0},
                                   "internal error: stage %d moves %d params' ops to its front, "
                                   "room for %d", s, nfront, cap);
        if (nfront)
            to_front(L, d, front, nfront, gone, nops);
    }
    return true;
}

/* A param or state that no stage reads is kept on the first stage, as
 * the unpipelined program keeps it (its value is saved after the step). */
static bool keep_unread(pl *L, st *S)
{
    for (int i = 0; i < L->m->ops.n; i++) {
        const ir_op *op = IR_OP(L->m, i);
        if (op->code != IR_PARAM && op->code != IR_STATE)
            continue;
        bool read = false;
        for (int s = 0; s < L->P && !read; s++)
            read = S[s].pre[op->res[0]->id] != NULL;
        if (!read && !get(&S[0], op->res[0], 0))
            return false;
    }
    return true;
}

static void init_stage(pl *L, st *S, int s)
{
    const ir_module *m = L->m;
    ir_module *d = ir_module_new(m->oom);
    d->mesh = m->mesh;
    d->partitioned = true;
    d->pipe = m->pipe;
    d->stage = s;
    d->train = m->train;
    d->train.loss = NULL;
    size_t nv = (size_t)L->nv;
    *S = (st){.L = L, .dst = d, .s = s};
    /* each a row per model value, zeroed by su_alloc (a large one fresh
     * from calloc: a deep pipeline's stage touches the rows of its own
     * values alone, the rest of its tables never in memory) */
    S->pre = su_alloc(&L->ar, nv * sizeof *S->pre);
    S->full = su_alloc(&L->ar, nv * sizeof *S->full);
    S->step = su_alloc(&L->ar, nv * sizeof *S->step);
    S->slice = su_alloc(&L->ar, nv * sizeof *S->slice);
    S->nacc = su_alloc(&L->ar, nv * sizeof *S->nacc);
    S->fwd = su_alloc(&L->ar, nv * sizeof *S->fwd);
    S->reader = NULL;
    S->ctx = IR_NPHASES;
    S->mb = su_alloc(&L->ar, nv * sizeof *S->mb);
    S->want = su_alloc(&L->ar, nv * sizeof *S->want);
    S->short_row = su_alloc(&L->ar, nv);
}

/* ---- the split of the repetitions (LANGUAGE.md §12) ----
 *
 * The repetitions go to the chunks in contiguous groups, at least one
 * each, that minimise the busiest chunk's work: the FLOPs of a
 * repetition's ops (forward and backward), and on the first chunk those
 * of the forward ops before the pipelined repeat and of their gradients
 * (the embedding), on the last those after it (the output layer and the
 * loss). With one chunk per stage that is the busiest stage's work; with
 * interleaved(V) the chunks are filled in turn, each to an even share of
 * the work left. Equal repetitions and nothing around them split evenly. */

/* Whether the repetitions of work w fit chunks of at most t, each taking
 * as many as fit (leaving one for each chunk after it); the chunks into
 * at when it is not NULL. */
static bool fits_in(const double *w, int n, int chunks, double pre, double post, double t,
                    int *at)
{
    int i = 0;
    for (int c = 0; c < chunks; c++) {
        double load = (c == 0 ? pre : 0) + (c == chunks - 1 ? post : 0);
        int start = i, keep = chunks - c - 1;
        while (i < n - keep && (i == start || c == chunks - 1 || load + w[i] <= t)) {
            load += w[i];
            if (at)
                at[i] = c;
            i++;
        }
        if (load > t)
            return false;
    }
    return i == n;
}

static void balance(pl *L)
{
    const ir_module *m = L->m;
    double *w = su_alloc(&L->ar, (size_t)L->L * sizeof *w), pre = 0, post = 0, total = 0;
    memset(w, 0, (size_t)L->L * sizeof *w);
    /* ops outside the repeat: before its first op (forward) or after its
     * last (backward) is the first chunk's, between them the last's */
    int first[IR_NPHASES], last[IR_NPHASES];
    for (int ph = 0; ph < IR_NPHASES; ph++)
        first[ph] = m->ops.n, last[ph] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->rep >= 0) {
            first[op->phase] = i < first[op->phase] ? i : first[op->phase];
            last[op->phase] = i;
        }
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->nres != 1 || op->phase == IR_PH_OPTIMIZER)
            continue;
        double f = pass_op_flops(op);
        total += f;
        if (op->rep >= 0 && op->rep < L->L)
            w[op->rep] += f;
        else if (op->phase == IR_PH_FORWARD ? i < first[IR_PH_FORWARD]
                                            : i > last[IR_PH_BACKWARD])
            pre += f;
        else
            post += f;
    }
    double lo = 0, hi = total + 1;
    for (int k = 0; k < 200 && hi - lo > 1e-9 * hi; k++) {
        double mid = (lo + hi) / 2;
        if (fits_in(w, L->L, L->C, pre, post, mid, NULL))
            hi = mid;
        else
            lo = mid;
    }
    L->rep_chunk = su_alloc(&L->ar, (size_t)L->L * sizeof *L->rep_chunk);
    if (L->V == 1) {
        fits_in(w, L->L, L->C, pre, post, hi, L->rep_chunk);
        return;
    }
    /* interleaved: a stage runs several chunks, so the chunks are filled
     * evenly, each to its share of what is left (rounded to the nearest
     * repetition), rather than the first ones to the bound */
    double left = post;
    for (int i = 0; i < L->L; i++)
        left += w[i];
    for (int c = 0, i = 0; c < L->C; c++) {
        double load = c == 0 ? pre : 0, share = (left + load) / (L->C - c);
        int start = i, keep = L->C - c - 1;
        while (i < L->L - keep &&
               (i == start || c == L->C - 1 || load + w[i] / 2 <= share)) {
            load += w[i];
            left -= w[i];
            L->rep_chunk[i++] = c;
        }
    }
}

static bool setup(pl *L, const ir_module *m, su_buf *err, su_loc *at)
{
    const ir_pipeline *p = &m->pipe;
    *L = (pl){.m = m, .err = err, .at = at, .M = p->microbatches, .V = p->chunks, .L = p->repeats,
              .nv = m->next_id + 1};
    L->P = (int)m->mesh.size[p->axis];
    L->C = L->P * L->V;
    su_arena_init(&L->ar, m->oom);
    if (L->L < L->C)
        return pass_pl_fail_at(L, p->loc, "%d repetitions cannot fill %d stages x %d chunks "
                               "(one each at least)", L->L, L->P, L->V);
    balance(L);
    if (L->P > 64)
        return pass_pl_fail_at(L, p->loc, "a pipeline of %d stages: at most 64 are supported", L->P);
    if (p->schedule == IR_SCHED_INTERLEAVED && L->V > 1 && L->M % L->P)
        return pass_pl_fail_at(L, p->loc, "the interleaved schedule needs the microbatches (%d) to be a "
                    "multiple of the stages (%d)", L->M, L->P);
    size_t nv = (size_t)L->nv;
    L->kind = su_alloc(&L->ar, nv);
    L->bd = su_alloc(&L->ar, nv);
    L->uniform = su_alloc(&L->ar, nv);
    L->cut = su_alloc(&L->ar, nv * MAX_IN);
    memset(L->uniform, 0, nv);
    memset(L->cut, -1, nv * MAX_IN);
    L->floating = su_alloc(&L->ar, nv * sizeof *L->floating);
    L->acc = su_alloc(&L->ar, nv);
    L->chunk = su_alloc(&L->ar, nv * sizeof *L->chunk);
    L->stage = su_alloc(&L->ar, nv * sizeof *L->stage);
    L->to = su_alloc(&L->ar, nv * sizeof *L->to);
    L->origin = su_alloc(&L->ar, nv * sizeof *L->origin);
    memset(L->origin, 0, nv * sizeof *L->origin);
    L->home = su_alloc(&L->ar, nv * sizeof *L->home);
    memset(L->home, -1, nv * sizeof *L->home);
    memset(L->kind, 0, nv);
    memset(L->bd, -1, nv);
    memset(L->floating, 0, nv * sizeof *L->floating);
    memset(L->acc, 0, nv);
    memset(L->chunk, 0, nv * sizeof *L->chunk);
    memset(L->stage, 0, nv * sizeof *L->stage);
    memset(L->to, 0, nv * sizeof *L->to);
    return true;
}

void pass_pipeline_free(pass_pipeline *pp)
{
    if (!pp)
        return;
    for (int s = 0; s < pp->nstages; s++)
        ir_module_free(pp->stage[s]);
    su_arena_free(&pp->arena);
    *pp = (pass_pipeline){0};
}

/* A split being made: what it holds, freed by pass_pipeline_split after
 * an allocation failure too (out is the caller's). */
typedef struct split_run {
    const ir_module *m;
    pass_pipeline *out;
    su_buf *err;
    su_loc *at;
    pl L;
    st *S;                  /* [L.P] */
    su_loc *at_of;          /* [L.P]: where stage s's tasks failed */
    su_vec tasks;
    bool held;              /* a middle microbatch's tasks placeholders (st.held) */
    uint8_t *unheld;        /* [L.P]: the stages made unheld all the same */
    bool missed;            /* a stage read what its held tasks do not make */
    bool ok;
} split_run;

/* Stage s's tasks, on a thread of its own (pass_for_stages): the stage's
 * module allocates under the job's guard, and an error goes to the job
 * (err, r->at_of[s]) through a copy of the split's state, which the tasks
 * only read but for an error. */
static bool stage_tasks(void *ctx, int s, su_buf *err)
{
    split_run *r = ctx;
    st *S = &r->S[s];
    ir_module *d = S->dst;
    pl own = r->L;
    own.err = err;
    own.at = &r->at_of[s];
    own.failed = false;
    S->L = &own;
    d->oom = d->arena.oom = err->oom;
    bool ok = run_tasks(S, r->out->task[s], r->out->ntasks[s]);
    d->oom = d->arena.oom = r->m->oom;
    S->L = &r->L;
    return ok;
}

/* Every stage's tasks, the stages at once; the first failing stage's
 * error is kept, as when they ran one after the other. */
static bool stages_tasks(split_run *r)
{
    pl *L = &r->L;
    r->at_of = su_alloc(&L->ar, (size_t)L->P * sizeof *r->at_of);
    memset(r->at_of, 0, (size_t)L->P * sizeof *r->at_of);
    int bad = pass_for_stages(L->P, stage_tasks, r, L->err);
    if (bad < 0)
        return true;
    L->failed = true;
    *L->at = r->at_of[bad];
    return false;
}

/* Whether a stage read a middle microbatch's value that its held tasks do
 * not make (st.held_miss): then the split stops, to be made again with
 * those stages unheld (r->unheld). */
static bool held_missed(split_run *r)
{
    for (int s = 0; r->held && s < r->L.P; s++)
        if (r->S[s].held_miss) {
            r->unheld[s] = 1;
            r->missed = true;
        }
    return r->missed;
}

static void split(void *arg)
{
    split_run *r = arg;
    const ir_module *m = r->m;
    pass_pipeline *out = r->out;
    pl *L = &r->L;
    if (!setup(L, m, r->err, r->at))
        return;
    bool train = m->updates.n > 0 || m->train.loss;
    bool ok = pass_pl_batch_blocks(L, false) && pass_pl_classify(L) && pass_pl_batch_blocks(L, true);
    if (ok)
        index_tasks(L);
    su_arena_init(&out->arena, m->oom);
    out->stage = su_alloc(&out->arena, (size_t)L->P * sizeof *out->stage);
    out->nstages = L->P; /* the stages made so far, the others NULL */
    out->ntasks = su_alloc(&out->arena, (size_t)L->P * sizeof *out->ntasks);
    out->task = su_alloc(&out->arena, (size_t)L->P * sizeof *out->task);
    st *S = r->S = su_alloc(&L->ar, (size_t)L->P * sizeof *S);
    for (int s = 0; s < L->P; s++) {
        init_stage(L, &S[s], s);
        S[s].held = r->held && !r->unheld[s] && L->M >= PASS_HELD_TEMPLATE + 3 &&
                    !m->pipe.unroll;
        out->stage[s] = S[s].dst;
        pass_pl_schedule(L, s, train, &r->tasks, m->oom, &out->arena);
        out->ntasks[s] = r->tasks.n;
        out->task[s] = su_alloc(&out->arena,
                                (size_t)(r->tasks.n ? r->tasks.n : 1) * sizeof(pass_task *));
        memcpy(out->task[s], r->tasks.v, (size_t)r->tasks.n * sizeof(pass_task *));
        r->tasks.n = 0;
    }
    ok = ok && stages_tasks(r) && !held_missed(r) && run_post(L, S) && !held_missed(r) &&
         order_p2p(L, S);
    /* the outputs first: an update then sees every stage that reads its param */
    ok = ok && outputs(L, S) && updates(L, S) && keep_unread(L, S) && exchange(L, S) &&
         !held_missed(r);
    if (ok) {
        for (int s = 0; s < L->P; s++)
            out->nsplit_held += S[s].held;
        out->bubble = pass_pl_bubble(L, out, train);
        out->nreps = L->L;
        out->first_rep = su_alloc(&out->arena, (size_t)(L->C + 1) * sizeof *out->first_rep);
        for (int c = 0, i = 0; c <= L->C; c++) {
            while (i < L->L && L->rep_chunk[i] < c)
                i++;
            out->first_rep[c] = i;
        }
    }
    r->ok = ok;
}

bool pass_pipeline_split(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at)
{
    return pass_pipeline_split_held(m, out, err, at, false);
}

static bool split_once(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at,
                       bool held, uint8_t *unheld, bool *missed, bool *oom);

bool pass_pipeline_split_held(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at,
                              bool held)
{
    /* [the stages]: setup's L->P */
    int64_t P = m->pipe.axis >= 0 && m->pipe.axis < m->mesh.naxes ? m->mesh.size[m->pipe.axis] : 1;
    uint8_t *unheld = su_xmalloc(m->oom, (size_t)(P > 0 ? P : 1));
    memset(unheld, 0, (size_t)(P > 0 ? P : 1));
    /* each try that misses makes one stage more unheld */
    bool ok = false, missed = true, oom = false;
    for (int64_t k = 0; k <= P && missed && !oom; k++)
        ok = split_once(m, out, err, at, held, unheld, &missed, &oom);
    free(unheld);
    if (oom)
        su_oom(m->oom); /* out is the caller's to free */
    return ok;
}

/* The split, its stages held (but those unheld says) where held says and
 * the stages allow; false with *missed where a stage read a middle
 * microbatch's value that held tasks do not make, that stage then marked
 * in unheld (to be made again). */
static bool split_once(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at,
                       bool held, uint8_t *unheld, bool *missed, bool *oom)
{
    *missed = false;
    *out = (pass_pipeline){0};
    *at = (su_loc){0, 0};
    if (!m->partitioned || m->pipe.axis < 0 || m->stage >= 0) {
        su_buf_puts(err, "the pipeline split needs a partitioned module with a pipeline");
        return false;
    }
    split_run r = {.m = m, .out = out, .err = err, .at = at, .held = held, .unheld = unheld};
    bool done = su_guarded(m->oom, split, &r);
    su_vec_free(&r.tasks);
    for (int s = 0; r.S && s < r.L.P; s++) { /* order_p2p frees them; not on an earlier failure */
        su_vec_free(&r.S[s].bounds);
        if (r.S[s].dst) /* a stage's job that ran out of memory left its guard */
            r.S[s].dst->oom = r.S[s].dst->arena.oom = m->oom;
    }
    su_arena_free(&r.L.ar);
    if (!done) {
        *oom = true; /* out is the caller's to free */
        return false;
    }
    if (!r.ok)
        pass_pipeline_free(out);
    *missed = !r.ok && r.missed;
    return r.ok;
}
