/* memplan.c: memory planning (DESIGN.md §3.8). Every value of a
 * partitioned module gets a place in one arena per rank, so the peak is
 * known before anything runs and the runtime makes one allocation.
 *
 * Buffers. Values that are the same bytes share a buffer: `constrain` (an
 * identity) and `reshape` (row-major, so the same bytes under a new shape)
 * alias their operand. A buffer lives from the op that first writes it to
 * the last op that reads it; params and states live for the whole program
 * (they are kept across runs), and so do outputs, the loss and the new
 * value of each param and state, which the runtime reads after the run.
 *
 * In-place updates. A param's or state's new value takes its buffer when
 * the old value is dead by then: its last reader comes before the op making
 * the new value, or is that op itself when the op is elementwise (unary,
 * binary, an optimizer update) and reads the old value with the new one's
 * exact type, so that each element is read before it is written. The
 * runtime then has nothing to copy after the step, and a step holds each
 * param and each optimizer state once, as the ZeRO paper counts them.
 *
 * Collectives. An all_reduce whose operand dies there sums in place (NCCL
 * and MPI both can), so a value and its sum are one buffer.
 *
 * Buckets. An insert writes over the bucket it reads when nothing reads
 * that bucket later, so a bucket is one buffer however many gradients it
 * holds. After its collective, the gradients the optimizer reads are
 * views: each extract's result is its columns of the reduced bucket (a
 * [1, M] row, so they are contiguous bytes) when they start at a multiple
 * of PASS_MEM_ALIGN, and the extract copies nothing. A bucket's gradients
 * are all views or none (the bucket then counts as gradients, not as
 * activations); the reduced bucket lives until its last gradient's last
 * reader. Before the collective, a gradient the insert is the last to read
 * is computed in its columns of a one-row bucket (again when aligned, and
 * when the bucket was zeroed before the gradient's first write), so the
 * insert copies nothing either. A view has a buffer of its own (its offset
 * inside its bucket's), never placed or freed on its own.
 *
 * Placement. Params and states first, one after another; then the other
 * buffers in program order, each at the best-fitting free block (the
 * smallest that fits, lowest address on a tie) or at the top, and freed
 * after their last reader. An op's result is placed before its dead
 * operands are freed, so no op reads and writes overlapping memory except
 * the in-place updates above. Every offset and size is a multiple of
 * PASS_MEM_ALIGN.
 *
 * A pipeline stage's tasks (ir_op.task). A value of a task's instance for
 * one microbatch takes, when it is free, the place the same value of an
 * earlier microbatch had (the nearest first): after the first few
 * microbatches each value then cycles through as many places as the
 * schedule keeps microbatches in flight, and the plan writer's loop form
 * (codegen/plan_roll.c) holds that many slots per value, not one per
 * microbatch, so a plan does not grow with them. Such places can leave gaps
 * best fit would have filled: the stage is planned both ways and the
 * smaller arena kept (the places alike on a tie).
 *
 * Kernels (pass_plan_memory_fused). A fused group of passes/fuse.h runs
 * as one kernel at its anchor (its last op), while a CPU backend runs the
 * same plan op by op; the plan must be sound for both. So a buffer lives
 * from the op that first writes it to the latest of its reads in either
 * order: the kernel reads the values the group reads from outside, and
 * writes the values it stores, at its anchor (its other values stay in
 * registers and live only in the CPU order). A new param or state takes
 * its old value's buffer only when both orders allow it: on the GPU the
 * old value's last read comes before the kernel that writes the new one,
 * or is in that kernel and the kernel is elementwise (each thread reads
 * an element, then writes the same element; not where a concat or its
 * branches read it, at other elements: pass_fuse_op_aside). And an elementwise op of a
 * group writes its result over an operand of its type that the group
 * keeps in registers and that dies at the op: the GPU never touches that
 * operand's buffer, and the CPU reads each element before writing it
 * (kernel_in_place). */
#include "passes.h"
#include "fuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    int64_t off, size;
} block;

/* twin_place's set of the offsets tried for a result: a power of two, at
 * least twice TWIN_TRIES (below) */
#define TWIN_SET 512

/* The ops as the plan's passes over them read them, made by one pass over
 * the module (op_table), the others reading these arrays in order rather
 * than each op, its results and their values again (about 5% of a deep
 * pipeline's --report json): op i's result ids res_id[res_at[i] ..
 * res_at[i + 1]), its task and microbatch, and the ops some rules look at
 * alone, in order. Only read once made, so the plans of one module that
 * pass_fuse_planned tries share one (optab_kept). */
typedef struct optab {
    int32_t *res_at, *res_id, *task, *mb;
    int64_t *insert, *extract, *all_reduce, *psum;
    int64_t ninsert, nextract, nall_reduce, npsum;
} optab;

typedef struct planner {
    const ir_module *m;
    pass_memplan *mp;
    int *parent;            /* union-find over value ids */
    int64_t *defat;         /* per value id: the index of its op, -1 none */
    const pass_fusion *f;   /* the kernels, or NULL */
    int64_t *first, *last;  /* per root: first write, last access in either order */
    int64_t *lcpu, *lgpu;   /* per root: last read in program order, on the GPU */
    int64_t *bytes;         /* per root: the largest member */
    uint8_t *kind;          /* per root: K_* bits */
    int *view_in;           /* per root: the root of the bucket it is a view
                             * in, -1 none */
    int64_t *view_at;       /* per view root: its byte offset in that bucket */
    /* the free list, sorted by offset, and the top of the arena */
    block *free;
    int nfree, capfree;
    int64_t top;
    /* twin_place's offsets tried for one result: a set by open
     * addressing, its entries current when their stamp is tried_at */
    int64_t tried_off[TWIN_SET];
    uint32_t tried_stamp[TWIN_SET];
    uint32_t tried_at;
    optab t;                /* the module's ops */
} planner;

enum {
    K_PARAM = 1,     /* holds a param */
    K_STATE = 2,     /* holds an optimizer state */
    K_KEEP = 4,      /* read after the run: an output, the loss, a new value */
    K_GRAD = 8,      /* a param's gradient as the optimizer reads it */
    K_OUTPUT = 16,   /* an output or the loss (read after the run as it was) */
    K_VIEWED = 32,   /* a reduced bucket whose views are decided */
};

static int find(planner *P, int v)
{
    while (P->parent[v] != v) {
        P->parent[v] = P->parent[P->parent[v]];
        v = P->parent[v];
    }
    return v;
}

static int64_t align_up(int64_t n)
{
    return (n + PASS_MEM_ALIGN - 1) / PASS_MEM_ALIGN * PASS_MEM_ALIGN;
}

static int64_t value_bytes(const ir_value *v)
{
    return ir_type_numel(&v->type) * ir_dtype_size(v->type.dtype);
}

/* Merges root b into root a. */
static void merge(planner *P, int a, int b)
{
    P->parent[b] = a;
    if (P->first[b] < P->first[a])
        P->first[a] = P->first[b];
    if (P->last[b] > P->last[a])
        P->last[a] = P->last[b];
    if (P->lcpu[b] > P->lcpu[a])
        P->lcpu[a] = P->lcpu[b];
    if (P->lgpu[b] > P->lgpu[a])
        P->lgpu[a] = P->lgpu[b];
    if (P->bytes[b] > P->bytes[a])
        P->bytes[a] = P->bytes[b];
    P->kind[a] |= P->kind[b];
}

/* Whether op may write its result over operand i (same type): it computes
 * element k from element k of each operand of the result's shape only. */
static bool in_place_op(const ir_op *op)
{
    ir_opclass c = ir_ops[op->code].cls;
    return c == IR_C_UNARY || c == IR_C_BINARY || c == IR_C_OPTIM;
}

/* The group of op i, or NULL (no kernels, or an op no kernel runs). */
static const pass_fgroup *group_at(const planner *P, int64_t i)
{
    if (!P->f || i < 0 || i >= P->f->nops || P->f->group_of[i] < 0)
        return NULL;
    return &P->f->groups[P->f->group_of[i]];
}

/* When a GPU writes the result v of op i: at the anchor for a value its
 * kernel stores; a value kept in registers is written only by the CPU. */
static int64_t gpu_write(const planner *P, int64_t i, const ir_value *v)
{
    const pass_fgroup *g = group_at(P, i);
    return g && P->f->stored[v->id] ? g->anchor : i;
}

/* When a GPU reads operand v of op i: at the anchor when v comes from
 * outside op i's group; never (so at i, the CPU's time) from inside it. */
static int64_t gpu_read(const planner *P, int64_t i, const ir_value *v)
{
    const pass_fgroup *g = group_at(P, i);
    return g && group_at(P, P->defat[v->id]) != g ? g->anchor : i;
}

/* Whether the GPU order lets new value nv (root v) take old value src's
 * buffer (root s): src's last GPU read is before nv's write, or in the
 * elementwise kernel that writes nv, reading src at the element it writes. */
static bool gpu_in_place(const planner *P, const ir_value *src, const ir_value *nv, int s)
{
    int64_t w = gpu_write(P, P->defat[nv->id], nv);
    if (P->lgpu[s] != w)
        return P->lgpu[s] < w;
    /* the op making nv reads src there: without a kernel, the CPU rule
     * decides (try_in_place) */
    const pass_fgroup *g = group_at(P, P->defat[nv->id]);
    if (!g)
        return true;
    if (g->kind != PASS_FUSE_ELEMENTWISE || !ir_type_eq(&src->type, &nv->type))
        return false;
    /* a multi-tensor kernel: only nv's part may read src's buffer, since
     * another part's threads read other elements; nor may a concat or
     * its branches (pass_fuse_op_aside), which read other elements too */
    const pass_fgroup *part = pass_fuse_part(g, (int)P->defat[nv->id]);
    for (int k = 0; k < g->nops; k++) {
        const ir_op *op = IR_OP(P->m, g->ops[k]);
        for (int j = 0; j < op->nin; j++)
            if (find((planner *)P, op->in[j]->id) == s &&
                (pass_fuse_part(g, g->ops[k]) != part || pass_fuse_op_aside(P->m, g, g->ops[k])))
                return false;
    }
    return true;
}

/* Update u writes over the buffer of what it updates, when that is dead by
 * then (the header). */
static void try_in_place(planner *P, const ir_update *u)
{
    int s = find(P, u->src->id), v = find(P, u->v->id);
    const ir_op *op = u->v->def;
    if (s == v || (P->kind[s] & K_OUTPUT) || (P->kind[v] & (K_PARAM | K_STATE)))
        return;
    /* the new value must start its buffer (not alias an older value) */
    if (P->first[v] != P->defat[u->v->id])
        return;
    if (P->lcpu[s] > P->first[v] || !gpu_in_place(P, u->src, u->v, s))
        return;
    if (P->lcpu[s] == P->first[v]) {
        if (!in_place_op(op))
            return;
        for (int i = 0; i < op->nin; i++)
            if (find(P, op->in[i]->id) == s && !ir_type_eq(&op->in[i]->type, &u->v->type))
                return;
    }
    merge(P, s, v);
}

/* ---- the free list ---- */

static void free_insert(planner *P, int at, block b)
{
    if (P->nfree == P->capfree) { /* in the plan's scratch: nothing to free */
        P->capfree = P->capfree ? 2 * P->capfree : 64;
        block *nb = su_alloc(&P->mp->scratch, (size_t)P->capfree * sizeof *nb);
        if (P->nfree)
            memcpy(nb, P->free, (size_t)P->nfree * sizeof *nb);
        P->free = nb;
    }
    memmove(P->free + at + 1, P->free + at, (size_t)(P->nfree - at) * sizeof *P->free);
    P->free[at] = b;
    P->nfree++;
}

static void free_remove(planner *P, int at)
{
    memmove(P->free + at, P->free + at + 1, (size_t)(P->nfree - at - 1) * sizeof *P->free);
    P->nfree--;
}

static int64_t alloc_block(planner *P, int64_t size)
{
    int best = -1;
    for (int i = 0; i < P->nfree; i++)
        if (P->free[i].size >= size && (best < 0 || P->free[i].size < P->free[best].size))
            best = i;
    if (best >= 0) {
        int64_t off = P->free[best].off;
        P->free[best].off += size;
        P->free[best].size -= size;
        if (!P->free[best].size)
            free_remove(P, best);
        return off;
    }
    /* a free block at the top grows into the fresh space above it */
    if (P->nfree && P->free[P->nfree - 1].off + P->free[P->nfree - 1].size == P->top) {
        int64_t off = P->free[P->nfree - 1].off;
        free_remove(P, P->nfree - 1);
        P->top = off + size;
        return off;
    }
    int64_t off = P->top;
    P->top += size;
    return off;
}

/* Takes [off, off + size) when it lies inside one free block: true. */
static bool take_block(planner *P, int64_t off, int64_t size)
{
    /* the last block starting at or below off (else the first): halving
     * without a branch to mispredict, as most tries fail */
    int lo = 0;
    for (int n = P->nfree; n > 1;) {
        int half = n / 2;
        lo = P->free[lo + half].off <= off ? lo + half : lo;
        n -= half;
    }
    if (!P->nfree || P->free[lo].off > off || off + size > P->free[lo].off + P->free[lo].size)
        return false;
    block b = P->free[lo];
    int64_t left = off - b.off, right = b.off + b.size - (off + size);
    if (left && right) {
        P->free[lo].size = left;
        free_insert(P, lo + 1, (block){off + size, right});
    } else if (left) {
        P->free[lo].size = left;
    } else if (right) {
        P->free[lo] = (block){off + size, right};
    } else {
        free_remove(P, lo);
    }
    return true;
}

static void free_block(planner *P, int64_t off, int64_t size)
{
    int at = 0;
    while (at < P->nfree && P->free[at].off < off)
        at++;
    /* coalesce with the neighbours */
    if (at > 0 && P->free[at - 1].off + P->free[at - 1].size == off) {
        P->free[at - 1].size += size;
        if (at < P->nfree && off + size == P->free[at].off) {
            P->free[at - 1].size += P->free[at].size;
            free_remove(P, at);
        }
        return;
    }
    if (at < P->nfree && off + size == P->free[at].off) {
        P->free[at].off = off;
        P->free[at].size += size;
        return;
    }
    free_insert(P, at, (block){off, size});
}

/* ---- a task's instances placed alike ---- */

/* An op of an instance, as twin_place reads it for a later microbatch's:
 * one record, so that a try reads one place, not the op, its buffer and
 * the buffer's lifetime and place each apart (a deep pipeline's stage
 * tries dozens of microbatches back for most results). */
typedef struct twin {
    int64_t off;         /* its first result's buffer's place once placed (place()), else -1 */
    int64_t size;        /* its bytes, aligned; -1: the first result has no buffer of its
                          * own starting at the op, which no result takes the place of */
    int32_t end;         /* that buffer's last op (op indices are ints: ir_module.ops) */
    int32_t op;          /* the op */
    int32_t buf;         /* the buffer (-1: none) */
    uint16_t code;
} twin;

/* A pipeline stage runs each task (a chunk's forward or backward,
 * ir_op.task > 0) once per microbatch, the instances one after the other
 * (pipesplit.c), and sends and receives each microbatch's values (task
 * -1): the op at position k of microbatch j's instance makes what the op
 * at position k of microbatch j - d's made, for another microbatch. Per
 * (task, microbatch), its ops in program order. */
typedef struct instances {
    int32_t ntask, nmb;  /* 0 when the module has no task */
    int64_t *start;      /* [ntask * nmb + 1]: each instance's ops in rec[] */
    twin *rec;           /* per op of each instance, in order */
    int64_t *key;        /* [ops]: the op's instance, -1 none */
    int64_t *pos;        /* [ops]: its position in its instance */
} instances;

/* How many microbatches back a result's place is looked for: more than a
 * schedule keeps in flight on a stage (1F1B: the stages, interleaved: a
 * few times more). */
#define TWIN_TRIES 64

/* P's table of its module's ops (planner), in a. */
static void op_table(planner *P, su_arena *a)
{
    const ir_module *m = P->m;
    int64_t n = m->ops.n, nres = 0, c[4] = {0};
    for (int64_t i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        nres += op->nres;
        c[0] += op->code == IR_INSERT;
        c[1] += op->code == IR_EXTRACT;
        c[2] += op->code == IR_ALL_REDUCE;
        c[3] += pass_pipeline_sum(op);
    }
    P->t.res_at = su_alloc_raw(a, (size_t)(n + 1) * sizeof *P->t.res_at);
    P->t.res_id = su_alloc_raw(a, (size_t)(nres + 1) * sizeof *P->t.res_id);
    P->t.task = su_alloc_raw(a, (size_t)(n + 1) * sizeof *P->t.task);
    P->t.mb = su_alloc_raw(a, (size_t)(n + 1) * sizeof *P->t.mb);
    int64_t **list[4] = {&P->t.insert, &P->t.extract, &P->t.all_reduce, &P->t.psum};
    for (int k = 0; k < 4; k++)
        *list[k] = su_alloc(a, (size_t)(c[k] + 1) * sizeof **list[k]);
    P->t.ninsert = P->t.nextract = P->t.nall_reduce = P->t.npsum = 0;
    int32_t r = 0;
    for (int64_t i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        P->t.res_at[i] = r;
        for (int j = 0; j < op->nres; j++)
            P->t.res_id[r++] = op->res[j]->id;
        P->t.task[i] = op->task;
        P->t.mb[i] = op->mb;
        if (op->code == IR_INSERT)
            P->t.insert[P->t.ninsert++] = i;
        if (op->code == IR_EXTRACT)
            P->t.extract[P->t.nextract++] = i;
        if (op->code == IR_ALL_REDUCE)
            P->t.all_reduce[P->t.nall_reduce++] = i;
        if (pass_pipeline_sum(op))
            P->t.psum[P->t.npsum++] = i;
    }
    P->t.res_at[n] = r;
}

/* An op table kept for the plans of one module that pass_fuse_planned
 * tries (two or more of every pipeline stage): its arrays in arena a,
 * made by the first plan. */
typedef struct optab_kept {
    su_arena a;
    bool made;
    optab t;
} optab_kept;

/* P's op table from *K, made there first when it is not yet. */
static void op_table_kept(planner *P, optab_kept *K)
{
    if (!K->made) {
        op_table(P, &K->a);
        K->t = P->t;
        K->made = true;
    }
    P->t = K->t;
}

/* P's instances, once its values have buffers (mp->buf). */
static void find_instances(const planner *P, su_arena *a, instances *I)
{
    const ir_module *m = P->m;
    const pass_memplan *mp = P->mp;
    memset(I, 0, sizeof *I);
    int64_t n = m->ops.n;
    int32_t maxtask = 0;
    for (int64_t i = 0; i < n; i++) {
        if (P->t.task[i] > 0 && P->t.mb[i] >= 0) {
            maxtask = P->t.task[i] > maxtask ? P->t.task[i] : maxtask;
            I->nmb = P->t.mb[i] + 1 > I->nmb ? P->t.mb[i] + 1 : I->nmb;
        }
    }
    if (!maxtask)
        return;
    /* the sends and receives of a microbatch's values (task -1) are one
     * more task: what microbatch j receives lies where j - d's did */
    I->ntask = maxtask + 1;
    size_t nkey = (size_t)I->ntask * (size_t)I->nmb;
    I->start = su_alloc_raw(a, (nkey + 1) * sizeof *I->start); /* zeroed below */
    I->key = su_alloc_raw(a, (size_t)(n + 1) * sizeof *I->key);
    I->pos = su_alloc_raw(a, (size_t)(n + 1) * sizeof *I->pos);
    memset(I->start, 0, (nkey + 1) * sizeof *I->start);
    for (int64_t i = 0; i < n; i++) {
        int32_t t = P->t.task[i] > 0 ? P->t.task[i] - 1 : P->t.task[i] == -1 ? maxtask : -1;
        I->key[i] = t >= 0 && P->t.mb[i] >= 0 && P->t.mb[i] < I->nmb
                        ? (int64_t)t * I->nmb + P->t.mb[i]
                        : -1;
        if (I->key[i] >= 0)
            I->start[I->key[i] + 1]++;
    }
    for (size_t k = 0; k < nkey; k++)
        I->start[k + 1] += I->start[k];
    size_t nin = (size_t)I->start[nkey] + 1;
    I->rec = su_alloc_raw(a, nin * sizeof *I->rec); /* a record per op of an instance, below */
    memset(&I->rec[nin - 1], 0, sizeof *I->rec);
    int64_t *fill = su_alloc_raw(a, (nkey + 1) * sizeof *fill);
    memcpy(fill, I->start, (nkey + 1) * sizeof *fill);
    for (int64_t i = 0; i < n; i++) {
        I->pos[i] = -1;
        if (I->key[i] < 0)
            continue;
        int64_t k = fill[I->key[i]]++;
        I->pos[i] = k - I->start[I->key[i]];
        const int32_t *at = P->t.res_at;
        int32_t tb = at[i + 1] > at[i] ? mp->buf[P->t.res_id[at[i]]] : -1;
        bool own = tb >= 0 && mp->start[tb] == i && mp->view_of[tb] < 0;
        I->rec[k] = (twin){.off = -1, .size = own ? align_up(mp->bytes[tb]) : -1,
                           .end = own ? (int32_t)mp->end[tb] : -1, .op = (int32_t)i,
                           .buf = tb, .code = (uint16_t)IR_OP(m, i)->code};
    }
}

/* The place of result j of op i, an op of a task's instance, when the
 * same result of an earlier microbatch's instance (the nearest first) had
 * a place of its size that is free now: taken, its offset; else -1. So a
 * task's instances reuse a few places in turn, as many as the schedule
 * keeps in flight, and the plan writer rolls them into one body with that
 * many slots (codegen/plan_roll.c) rather than one per microbatch. */
static int64_t twin_place(planner *P, const instances *I, const uint8_t *kind, int64_t i,
                          int j, int64_t size)
{
    const pass_memplan *mp = P->mp;
    if (!I->ntask || I->key[i] < 0)
        return -1;
    int64_t key = I->key[i], mb = key % I->nmb, pos = I->pos[i];
    int64_t len = I->start[key + 1] - I->start[key];
    uint16_t code = I->rec[I->start[key] + pos].code;
    if (++P->tried_at == 0) { /* the stamps wrapped: none is current */
        memset(P->tried_stamp, 0, sizeof P->tried_stamp);
        P->tried_at = 1;
    }
    for (int64_t d = 1; d <= mb && d <= TWIN_TRIES; d++) {
        int64_t k = key - d;
        /* an instance of another length (the first microbatch's backward,
         * which starts the sums) has its ops at other positions */
        if (I->start[k + 1] - I->start[k] != len)
            continue;
        const twin *r = &I->rec[I->start[k] + pos];
        if (r->code != code || r->op >= i)
            continue;
        int64_t off, end;
        if (!j) { /* the record says it all: placed (off >= 0) only where it has size */
            if (r->off < 0 || r->size != size)
                continue;
            off = r->off;
            end = r->end;
        } else {
            const ir_op *o = IR_OP(P->m, r->op);
            int tb = o->nres > j ? mp->buf[o->res[j]->id] : -1;
            if (tb < 0 || mp->start[tb] != r->op || mp->view_of[tb] >= 0 ||
                !(kind[tb] & 0x80) || align_up(mp->bytes[tb]) != size)
                continue;
            off = mp->offset[tb];
            end = mp->end[tb];
        }
        uint32_t h = (uint32_t)(((uint64_t)off * 0x9E3779B97F4A7C15ull) >> 55) & (TWIN_SET - 1);
        while (P->tried_stamp[h] == P->tried_at) {
            if (P->tried_off[h] == off) /* the places cycle: the older ones were tried */
                return -1;
            h = (h + 1) & (TWIN_SET - 1);
        }
        /* a twin still live (freed after op end[tb]) holds its place, of
         * this size: taking it would fail */
        if (end < i && take_block(P, off, size))
            return off;
        P->tried_off[h] = off;
        P->tried_stamp[h] = P->tried_at;
    }
    return -1;
}

/* ---- the plan ---- */

static void mark(planner *P, const ir_value *v, int kind)
{
    if (v && P->defat[v->id] >= 0)
        P->kind[find(P, v->id)] |= (uint8_t)kind;
}

/* The gradient a step keeps through its backward, as the ZeRO paper counts
 * it: the one the optimizer reads, but under zero 1 the whole unreduced
 * gradient (or bucket) that the reduce_scatter over the zero axis at the
 * end of the backward reads (bucket.c), not the shard it makes. */
static const ir_value *kept_gradient(const ir_module *m, const ir_value *g)
{
    if (!g || m->train.zero != 1)
        return g;
    const ir_value *v = g;
    if (v->def->code == IR_CAST && v->def->phase == IR_PH_OPTIMIZER)
        v = v->def->in[0]; /* a bf16 or f16 param's gradient, widened for its master */
    if (v->def->code == IR_EXTRACT)
        v = v->def->in[0]; /* its reduced bucket */
    const ir_op *rs = v->def;
    if (rs->code != IR_REDUCE_SCATTER || rs->a->naxes != 1 || rs->a->axes[0] != m->train.zero_axis)
        return g;
    return rs->in[0];
}

/* Whether extract e can be a view in the reduced bucket it reads: a [1, M]
 * row whose columns from e's offset start at a multiple of PASS_MEM_ALIGN,
 * and a result whose buffer holds nothing else that matters (no param,
 * state or output, no other bucket's view). */
static bool view_ok(planner *P, const ir_op *e)
{
    const ir_type *t = &e->in[0]->type;
    int64_t es = ir_dtype_size(t->dtype);
    if (t->rank != 2 || t->dim[0] != 1 || (e->a->offset * es) % PASS_MEM_ALIGN)
        return false;
    int r = find(P, e->res[0]->id), b = find(P, e->in[0]->id);
    return r != b && P->view_in[r] < 0 && P->view_in[b] < 0 &&
           P->bytes[r] == value_bytes(e->res[0]) &&
           !(P->kind[r] & (K_PARAM | K_STATE | K_OUTPUT)) &&
           !(P->kind[b] & (K_PARAM | K_STATE | K_OUTPUT));
}

/* Makes root r a view at byte `at` in root b, which then lives while r
 * does and holds what r holds. */
static void make_view(planner *P, int r, int b, int64_t at)
{
    P->view_in[r] = b;
    P->view_at[r] = at;
    if (P->first[r] < P->first[b])
        P->first[b] = P->first[r];
    if (P->last[r] > P->last[b])
        P->last[b] = P->last[r];
    if (P->lcpu[r] > P->lcpu[b])
        P->lcpu[b] = P->lcpu[r];
    if (P->lgpu[r] > P->lgpu[b])
        P->lgpu[b] = P->lgpu[r];
    P->kind[b] |= (uint8_t)(P->kind[r] & (K_GRAD | K_KEEP));
}

/* Insert op i (bucket, x): x computed in its columns of the bucket, when
 * the insert is x's last reader, the bucket one row, the columns aligned,
 * and the bucket's first value (the zeros, before any insert) written
 * before x's first write in both orders (the header). */
static void view_insert(planner *P, int64_t i)
{
    const ir_op *op = IR_OP(P->m, i);
    const ir_value *z = op->in[0], *x = op->in[1];
    const ir_type *t = &z->type;
    int64_t es = ir_dtype_size(t->dtype);
    if (t->rank != 2 || t->dim[0] != 1 || (op->a->offset * es) % PASS_MEM_ALIGN)
        return;
    while (z->def && z->def->code == IR_INSERT)
        z = z->def->in[0];
    int r = find(P, x->id), b = find(P, op->res[0]->id);
    int64_t zw = P->defat[z->id] < 0 ? -1 : gpu_write(P, P->defat[z->id], z);
    if (r == b || P->view_in[r] >= 0 || P->view_in[b] >= 0 || find(P, z->id) != b ||
        P->defat[z->id] < 0 || zw >= P->first[r] || P->defat[z->id] >= P->first[r] ||
        P->last[r] != i || P->bytes[r] != value_bytes(x) ||
        (P->kind[r] & (K_PARAM | K_STATE | K_KEEP | K_OUTPUT)))
        return;
    make_view(P, r, b, op->a->offset * es);
}

/* Makes the gradients extracted from each reduced bucket views in it, when
 * all of them can be and they cover it, and the gradients inserted into a
 * bucket views where they can be (the header). */
static void view_buckets(planner *P)
{
    const ir_module *m = P->m;
    for (int64_t k = 0; k < P->t.ninsert; k++)
        view_insert(P, P->t.insert[k]);
    for (int64_t x = 0; x < P->t.nextract; x++) {
        const ir_op *op = IR_OP(m, P->t.extract[x]);
        const ir_value *red = op->in[0];
        int b = find(P, red->id);
        if (P->kind[b] & K_VIEWED)
            continue;
        P->kind[b] |= K_VIEWED; /* decided, yes or no */
        bool ok = true;
        int64_t covered = 0;
        for (int64_t y = x; ok && y < P->t.nextract; y++) {
            const ir_op *e = IR_OP(m, P->t.extract[y]);
            if (e->in[0] != red)
                continue;
            ok = view_ok(P, e);
            covered += value_bytes(e->res[0]);
        }
        if (!ok || covered != value_bytes(red))
            continue;
        int64_t es = ir_dtype_size(red->type.dtype);
        for (int64_t y = x; y < P->t.nextract; y++) {
            const ir_op *e = IR_OP(m, P->t.extract[y]);
            if (e->in[0] != red)
                continue;
            make_view(P, find(P, e->res[0]->id), b, e->a->offset * es);
        }
    }
}

/* With kernels: an elementwise op of a group writes its result over an
 * operand of its type that the group keeps in registers (not stored) and
 * that dies at the op (the header). The GPU never touches that operand's
 * memory, and the CPU reads each element before writing it, so the two
 * share a buffer: a cross-entropy gradient scaled by the loss's gradient
 * is one buffer of the logits' size, not two. Not a result that is a
 * param, state, output, kept or viewed gradient, or that an insert reads
 * (the bucket's views decide its memory). (A stored operand never
 * qualifies anyway: a reader outside the group comes after the anchor, so
 * it does not die at the op.) */
static void kernel_in_place(planner *P)
{
    const ir_module *m = P->m;
    if (!P->f || P->f->no_register_reuse)
        return;
    int nv = m->next_id + 1;
    bool *inserted = su_alloc(&P->mp->scratch, (size_t)nv * sizeof *inserted);
    for (int64_t k = 0; k < P->t.ninsert; k++)
        inserted[IR_OP(m, P->t.insert[k])->in[1]->id] = true;
    const uint8_t keep = K_PARAM | K_STATE | K_KEEP | K_GRAD | K_OUTPUT | K_VIEWED;
    for (int64_t i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        const pass_fgroup *g = group_at(P, i);
        if (!g || op->nres != 1 || !in_place_op(op) || inserted[op->res[0]->id])
            continue;
        const ir_value *r = op->res[0];
        int v = find(P, r->id);
        if (P->first[v] != i || (P->kind[v] & keep) || P->view_in[v] >= 0)
            continue;
        for (int k = 0; k < op->nin; k++) {
            const ir_value *a = op->in[k];
            if (!ir_type_eq(&a->type, &r->type) || P->defat[a->id] < 0 ||
                group_at(P, P->defat[a->id]) != g || P->f->stored[a->id] || inserted[a->id])
                continue;
            int s = find(P, a->id);
            if (s == v || P->lcpu[s] != i || P->last[s] != i || (P->kind[s] & keep) ||
                P->view_in[s] >= 0)
                continue;
            merge(P, s, v);
            break;
        }
    }
}

/* A pipeline stage's sum (or max) over microbatches adds each
 * microbatch's part to the sum so far, made by the same task for the
 * microbatch before (ir_op.task): the new sum takes the old one's buffer
 * when the add is the old one's last reader in both orders (the CPU's, and
 * the GPU's: an elementwise kernel's, reading each element before writing
 * it), so a sum is one buffer through the whole schedule. */
static void accumulate_in_place(planner *P)
{
    const ir_module *m = P->m;
    const uint8_t keep = K_PARAM | K_STATE | K_KEEP | K_OUTPUT;
    for (int64_t k = 0; k < P->t.npsum; k++) {
        int64_t i = P->t.psum[k];
        const ir_op *op = IR_OP(m, i);
        const ir_value *a = op->in[0], *r = op->res[0];
        if (P->defat[a->id] < 0 || !ir_type_eq(&a->type, &r->type))
            continue;
        int s = find(P, a->id), v = find(P, r->id);
        if (s == v || P->first[v] != i || P->lcpu[s] != i || P->last[s] > i ||
            (P->kind[s] & keep) || (P->kind[v] & (K_PARAM | K_STATE)) || P->view_in[s] >= 0 ||
            P->view_in[v] >= 0 || !gpu_in_place(P, a, r, s))
            continue;
        merge(P, s, v);
    }
}

/* Buffers, their lifetimes and kinds, the in-place updates. */
static void analyse(planner *P)
{
    const ir_module *m = P->m;
    int64_t n = m->ops.n;
    for (int64_t i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int j = 0; j < op->nres; j++) {
            int v = op->res[j]->id;
            P->defat[v] = i;
            P->first[v] = P->lcpu[v] = i;
            P->lgpu[v] = P->last[v] = gpu_write(P, i, op->res[j]);
            P->bytes[v] = value_bytes(op->res[j]);
            if (op->code == IR_PARAM)
                P->kind[v] |= K_PARAM;
            if (op->code == IR_STATE)
                P->kind[v] |= K_STATE;
        }
        for (int j = 0; j < op->nin; j++) {
            int r = find(P, op->in[j]->id);
            int64_t t = gpu_read(P, i, op->in[j]);
            P->lcpu[r] = i > P->lcpu[r] ? i : P->lcpu[r];
            P->lgpu[r] = t > P->lgpu[r] ? t : P->lgpu[r];
            P->last[r] = t > P->last[r] ? t : P->last[r];
        }
        if ((op->code == IR_CONSTRAIN || op->code == IR_RESHAPE) && op->nres == 1 &&
            value_bytes(op->res[0]) == value_bytes(op->in[0])) {
            int a = find(P, op->in[0]->id), b = find(P, op->res[0]->id);
            if (a != b)
                merge(P, a, b);
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        mark(P, IR_OUTPUT(m, i)->v, K_KEEP | K_OUTPUT);
    mark(P, m->train.loss, K_KEEP | K_OUTPUT);
    /* a bucket is filled in place: each insert writes over the bucket it
     * reads, which nothing reads after it */
    for (int64_t k = 0; k < P->t.ninsert; k++) {
        int64_t i = P->t.insert[k];
        const ir_op *op = IR_OP(m, i);
        int a = find(P, op->in[0]->id), b = find(P, op->res[0]->id);
        if (a != b && P->last[a] == i && !(P->kind[a] & (K_PARAM | K_STATE | K_KEEP)) &&
            P->bytes[a] == P->bytes[b])
            merge(P, a, b);
    }
    /* an all_reduce sums in place, over an operand it is the last to read */
    for (int64_t k = 0; k < P->t.nall_reduce; k++) {
        int64_t i = P->t.all_reduce[k];
        const ir_op *op = IR_OP(m, i);
        int a = find(P, op->in[0]->id), b = find(P, op->res[0]->id);
        if (a != b && P->last[a] == i && P->first[b] == i &&
            !(P->kind[a] & (K_PARAM | K_STATE | K_KEEP)) && P->bytes[a] == P->bytes[b])
            merge(P, a, b);
    }
    for (int i = 0; i < m->updates.n; i++)
        mark(P, kept_gradient(m, IR_UPDATE(m, i)->grad), K_GRAD);
    for (int i = 0; i < m->updates.n; i++)
        try_in_place(P, IR_UPDATE(m, i));
    accumulate_in_place(P);
    for (int i = 0; i < m->updates.n; i++)
        mark(P, IR_UPDATE(m, i)->v, K_KEEP);
}

/* analyse's state, which a plan of the same module and groups with
 * register reuse (kernel_in_place) and one without share: the second
 * plan pass_fuse_planned tries takes the first's (malloc'd). */
typedef struct analysed {
    int nv;
    int *parent;
    int64_t *defat, *first, *last, *lcpu, *lgpu, *bytes;
    uint8_t *kind;
} analysed;

static void analysed_free(analysed *A)
{
    free(A->parent);
    free(A->defat);
    free(A->kind);
    *A = (analysed){0};
}

/* P's arrays of nv values, as an analysed (not malloc'd). */
static analysed planner_view(const planner *P, int nv)
{
    return (analysed){.nv = nv, .parent = P->parent, .defat = P->defat, .first = P->first,
                      .last = P->last, .lcpu = P->lcpu, .lgpu = P->lgpu, .bytes = P->bytes,
                      .kind = P->kind};
}

/* from's arrays into to's (each of from->nv values). */
static void analysed_copy(const analysed *to, const analysed *from)
{
    size_t n = (size_t)from->nv;
    memcpy(to->parent, from->parent, n * sizeof *to->parent);
    int64_t *const dst[6] = {to->defat, to->first, to->last, to->lcpu, to->lgpu, to->bytes};
    const int64_t *const src[6] = {from->defat, from->first, from->last,
                                   from->lcpu, from->lgpu, from->bytes};
    for (int k = 0; k < 6; k++)
        memcpy(dst[k], src[k], n * sizeof *dst[k]);
    memcpy(to->kind, from->kind, n);
}

/* P's analysis into *A (its arrays malloc'd: a failure jumps to oom). */
static void analysed_keep(const planner *P, int nv, analysed *A)
{
    analysed_free(A);
    A->nv = nv;
    A->parent = malloc((size_t)nv * sizeof *A->parent);
    A->defat = malloc(6 * (size_t)nv * sizeof *A->defat);
    A->kind = malloc((size_t)nv);
    if (!A->parent || !A->defat || !A->kind) {
        analysed_free(A);
        su_oom(P->mp->scratch.oom);
    }
    A->first = A->defat + nv;
    A->last = A->first + nv;
    A->lcpu = A->last + nv;
    A->lgpu = A->lcpu + nv;
    A->bytes = A->lgpu + nv;
    analysed v = planner_view(P, nv);
    analysed_copy(A, &v);
}

static void analysed_take(planner *P, const analysed *A)
{
    analysed v = planner_view(P, A->nv);
    analysed_copy(&v, A);
}

/* What analyse leaves to the plan's own rules: the results over their
 * kernels' dead register operands, then the views. */
static void analyse_rest(planner *P)
{
    kernel_in_place(P);
    /* last: a view's bucket takes no other merge afterwards */
    view_buckets(P);
}

bool pass_plan_memory(const ir_module *m, pass_memplan *mp, su_buf *err)
{
    return pass_plan_memory_fused(m, NULL, mp, err);
}

/* The buffers place() places, by the op that first writes them: born[at[i]
 * .. at[i + 1]) are op i's, (buffer, result) pairs in result order. */
typedef struct births {
    int64_t *at;
    int32_t *b, *j;
} births;

static void find_births(const planner *P, su_arena *a, births *B)
{
    const ir_module *m = P->m;
    const pass_memplan *mp = P->mp;
    int64_t n = m->ops.n;
    B->at = su_alloc_raw(a, (size_t)(n + 1) * sizeof *B->at);
    /* (born->b and born->j read only from at[i] to at[i + 1]) */
    B->b = su_alloc_raw(a, ((size_t)mp->nbuf + 1) * sizeof *B->b);
    B->j = su_alloc_raw(a, ((size_t)mp->nbuf + 1) * sizeof *B->j);
    uint8_t *listed = su_alloc_raw(a, (size_t)mp->nbuf + 1); /* zeroed below */
    memset(listed, 0, (size_t)mp->nbuf + 1);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        B->at[i] = k;
        for (int j = 0; j < P->t.res_at[i + 1] - P->t.res_at[i]; j++) {
            int b = mp->buf[P->t.res_id[P->t.res_at[i] + j]];
            if (mp->start[b] != i || listed[b] || mp->view_of[b] >= 0)
                continue;
            listed[b] = 1;
            B->b[k] = b;
            B->j[k++] = j;
        }
    }
    B->at[n] = k;
}

/* Places the buffers that are not params, states or views in program
 * order, freed after their last reader, from the top of the params and
 * states (base): each at a place alike (inst) or the best-fitting block.
 * Into P->mp: offsets, the arena, the peak and the fullest op. */
static void place(planner *P, uint8_t *kind, const instances *inst, const births *born,
                  const int32_t *head_end, const int32_t *next_end, int64_t base)
{
    const ir_module *m = P->m;
    pass_memplan *mp = P->mp;
    int64_t n = m->ops.n;
    P->nfree = 0;
    P->top = base;
    for (int b = 0; b < mp->nbuf; b++)
        kind[b] &= (uint8_t)~0x80;
    int64_t nrec = inst->ntask ? inst->start[(size_t)inst->ntask * (size_t)inst->nmb] : 0;
    for (int64_t k = 0; k < nrec; k++)
        inst->rec[k].off = -1;
    mp->top_raised_at = -1;
    int64_t live = 0, peak = 0, grads = 0;
    mp->fullest_op = -1;
    mp->fullest_live = mp->fullest_grads = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t e = born->at[i]; e < born->at[i + 1]; e++) {
            int b = born->b[e], j = born->j[e];
            kind[b] |= 0x80; /* placed */
            int64_t top = P->top, size = align_up(mp->bytes[b]);
            int64_t off = twin_place(P, inst, kind, i, j, size);
            mp->offset[b] = off >= 0 ? off : alloc_block(P, size);
            if (inst->ntask && inst->key[i] >= 0) { /* its record, for the microbatches after */
                twin *r = &inst->rec[inst->start[inst->key[i]] + inst->pos[i]];
                if (r->buf == b && r->size >= 0)
                    r->off = mp->offset[b];
            }
            if (P->top > top)
                mp->top_raised_at = i;
            *(kind[b] & K_GRAD ? &grads : &live) += mp->bytes[b];
        }
        if (live > peak)
            peak = live;
        if (live + grads > mp->fullest_live + mp->fullest_grads) {
            mp->fullest_op = i;
            mp->fullest_live = live;
            mp->fullest_grads = grads;
        }
        for (int b = head_end[i]; b >= 0; b = next_end[b]) {
            free_block(P, mp->offset[b], align_up(mp->bytes[b]));
            *(kind[b] & K_GRAD ? &grads : &live) -= mp->bytes[b];
        }
    }
    mp->arena_bytes = P->top;
    mp->activations = peak;
}

/* What place() decided, kept while the other way is tried. */
typedef struct placed {
    int64_t *offset;
    int64_t arena_bytes, activations, top_raised_at, fullest_op, fullest_live, fullest_grads;
} placed;

static void save(const pass_memplan *mp, placed *s)
{
    memcpy(s->offset, mp->offset, (size_t)mp->nbuf * sizeof *s->offset);
    s->arena_bytes = mp->arena_bytes;
    s->activations = mp->activations;
    s->top_raised_at = mp->top_raised_at;
    s->fullest_op = mp->fullest_op;
    s->fullest_live = mp->fullest_live;
    s->fullest_grads = mp->fullest_grads;
}

static void restore(pass_memplan *mp, const placed *s)
{
    memcpy(mp->offset, s->offset, (size_t)mp->nbuf * sizeof *mp->offset);
    mp->arena_bytes = s->arena_bytes;
    mp->activations = s->activations;
    mp->top_raised_at = s->top_raised_at;
    mp->fullest_op = s->fullest_op;
    mp->fullest_live = s->fullest_live;
    mp->fullest_grads = s->fullest_grads;
}

/* The most bytes place() holds at once above its base: at each op, the
 * aligned bytes of the buffers born there and of those born before and
 * not yet freed. No placement fits them in fewer, since the buffers live
 * at one op take blocks of the arena that do not overlap
 * (pass_memplan_check proves it of every plan). */
static int64_t live_bound(const ir_module *m, const pass_memplan *mp, const births *born,
                          const int32_t *head_end, const int32_t *next_end)
{
    int64_t live = 0, peak = 0;
    for (int64_t i = 0; i < m->ops.n; i++) {
        for (int64_t e = born->at[i]; e < born->at[i + 1]; e++)
            live += align_up(mp->bytes[born->b[e]]);
        if (live > peak)
            peak = live;
        for (int b = head_end[i]; b >= 0; b = next_end[b])
            live -= align_up(mp->bytes[b]);
    }
    return peak;
}

/* pass_plan_memory_fused, its analysis before the plan's own rules
 * (analyse_rest) kept into *keep or taken from *from where not NULL (a
 * plan of the same module and groups). With beat > 0, a plan that cannot
 * take fewer than beat bytes (its params', states' and live_bound's) is
 * not placed: *unplaced set, the plan's buffers and lifetimes made but
 * no offsets, its arena_bytes that bound. */
static bool plan_fused(const ir_module *m, const pass_fusion *f, pass_memplan *mp, su_buf *err,
                       analysed *keep, const analysed *from, int64_t beat, bool *unplaced,
                       optab_kept *ot)
{
    if (unplaced)
        *unplaced = false;
    memset(mp, 0, sizeof *mp);
    su_arena_init(&mp->arena, err->oom);
    su_arena_init(&mp->scratch, err->oom);
    if (!m->partitioned) {
        su_buf_printf(err, "memory is planned for a partitioned module");
        return false;
    }
    int nv = m->next_id + 1;
    int64_t n = m->ops.n;
    planner P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.mp = mp;
    if (f && f->nops != m->ops.n) {
        su_buf_printf(err, "the fusion is of another module (%d ops, not %d)", f->nops,
                      m->ops.n);
        return false;
    }
    P.f = f;
    su_arena *a = &mp->arena, *t = &mp->scratch; /* the plan; what making it needs */
    /* each written whole below (the analysis or its copy, then the
     * views') before it is read */
    P.parent = su_alloc_raw(t, (size_t)nv * sizeof *P.parent);
    P.defat = su_alloc_raw(t, (size_t)nv * sizeof *P.defat);
    P.first = su_alloc_raw(t, (size_t)nv * sizeof *P.first);
    P.last = su_alloc_raw(t, (size_t)nv * sizeof *P.last);
    P.lcpu = su_alloc_raw(t, (size_t)nv * sizeof *P.lcpu);
    P.lgpu = su_alloc_raw(t, (size_t)nv * sizeof *P.lgpu);
    P.bytes = su_alloc_raw(t, (size_t)nv * sizeof *P.bytes);
    P.kind = su_alloc_raw(t, (size_t)nv * sizeof *P.kind);
    P.view_in = su_alloc_raw(t, (size_t)nv * sizeof *P.view_in);
    P.view_at = su_alloc_raw(t, (size_t)nv * sizeof *P.view_at);
    if (ot)
        op_table_kept(&P, ot);
    else
        op_table(&P, t);
    for (int v = 0; v < nv; v++) {
        P.view_in[v] = -1;
        P.view_at[v] = 0;
    }
    if (from && from->nv == nv) {
        analysed_take(&P, from);
    } else {
        for (int v = 0; v < nv; v++) {
            P.parent[v] = v;
            P.defat[v] = P.first[v] = P.last[v] = P.lcpu[v] = P.lgpu[v] = -1;
            P.bytes[v] = 0;
            P.kind[v] = 0;
        }
        analyse(&P);
        if (keep)
            analysed_keep(&P, nv, keep);
    }
    analyse_rest(&P);

    /* Buffers numbered in the order of their first write; lifetimes. */
    mp->nvalues = nv;
    mp->buf = su_alloc_raw(a, (size_t)nv * sizeof *mp->buf);
    int32_t *root_buf = su_alloc_raw(t, (size_t)nv * sizeof *root_buf);
    for (int v = 0; v < nv; v++)
        mp->buf[v] = root_buf[v] = -1;
    int nbuf = 0;
    for (int64_t k = 0; k < P.t.res_at[n]; k++) {
        int r = find(&P, P.t.res_id[k]);
        if (root_buf[r] < 0)
            root_buf[r] = nbuf++;
        mp->buf[P.t.res_id[k]] = root_buf[r];
    }
    mp->nbuf = nbuf;
    mp->offset = su_alloc(a, ((size_t)nbuf + 1) * sizeof *mp->offset);
    /* each buffer is one root's, and written below from it */
    mp->bytes = su_alloc_raw(a, ((size_t)nbuf + 1) * sizeof *mp->bytes);
    mp->start = su_alloc_raw(a, ((size_t)nbuf + 1) * sizeof *mp->start);
    mp->end = su_alloc_raw(a, ((size_t)nbuf + 1) * sizeof *mp->end);
    mp->view_of = su_alloc_raw(a, ((size_t)nbuf + 1) * sizeof *mp->view_of);
    uint8_t *kind = su_alloc_raw(t, (size_t)nbuf + 1);
    mp->bytes[nbuf] = mp->start[nbuf] = mp->end[nbuf] = mp->view_of[nbuf] = kind[nbuf] = 0;
    for (int v = 0; v < nv; v++) {
        int b = root_buf[v];
        if (b < 0)
            continue;
        mp->bytes[b] = P.bytes[v];
        mp->view_of[b] = P.view_in[v] >= 0 ? root_buf[P.view_in[v]] : -1;
        kind[b] = P.kind[v];
        bool whole = P.kind[v] & (K_PARAM | K_STATE);
        mp->start[b] = whole ? -1 : P.first[v];
        mp->end[b] = whole || (P.kind[v] & K_KEEP) ? n : P.last[v];
    }

    /* Params and states first, then the rest in program order. */
    for (int b = 0; b < nbuf; b++)
        if (mp->start[b] < 0) {
            mp->offset[b] = P.top;
            P.top += align_up(mp->bytes[b]);
        }
    mp->top_raised_at = -1;
    /* buffers by the op that frees them */
    /* read only along the lists made below */
    int32_t *next_end = su_alloc_raw(t, ((size_t)nbuf + 1) * sizeof *next_end);
    int32_t *head_end = su_alloc_raw(t, ((size_t)n + 1) * sizeof *head_end);
    for (int64_t i = 0; i <= n; i++)
        head_end[i] = -1;
    for (int b = 0; b < nbuf; b++)
        if (mp->start[b] >= 0 && mp->end[b] < n && mp->view_of[b] < 0) {
            next_end[b] = head_end[mp->end[b]];
            head_end[mp->end[b]] = b;
        }
    births born;
    find_births(&P, t, &born);
    int64_t base = P.top;
    mp->least_bytes = base + live_bound(m, mp, &born, head_end, next_end);
    if (beat > 0 && unplaced) {
        if (mp->least_bytes >= beat) {
            mp->arena_bytes = mp->least_bytes;
            *unplaced = true;
            su_arena_free(&mp->scratch);
            return true;
        }
    }
    instances inst, none = {0};
    find_instances(&P, t, &inst);
    place(&P, kind, &none, &born, head_end, next_end, base);
    if (inst.ntask) {
        /* placing a task's instances alike can leave a gap best fit alone
         * would have filled: the smaller arena is kept (alike on a tie) */
        placed fit = {.offset = su_alloc_raw(t, ((size_t)nbuf + 1) * sizeof *fit.offset)};
        save(mp, &fit);
        place(&P, kind, &inst, &born, head_end, next_end, base);
        int64_t raised = fit.top_raised_at > mp->top_raised_at ? fit.top_raised_at
                                                              : mp->top_raised_at;
        if (fit.arena_bytes < mp->arena_bytes)
            restore(mp, &fit);
        /* either plan of a module that differs from some op on cannot end
         * lower than its kind here when that op comes after both tops */
        mp->top_raised_at = raised;
    }
    for (int v = 0; v < nv; v++)
        if (root_buf[v] >= 0 && P.view_in[v] >= 0)
            mp->offset[root_buf[v]] = mp->offset[root_buf[P.view_in[v]]] + P.view_at[v];
    for (int b = 0; b < nbuf; b++) {
        if (mp->view_of[b] >= 0)
            continue; /* its bytes are its bucket's */
        if (kind[b] & K_PARAM)
            mp->params += mp->bytes[b];
        else if (kind[b] & K_STATE)
            mp->optimizer_state += mp->bytes[b];
        else if (kind[b] & K_GRAD)
            mp->gradients += mp->bytes[b];
    }
    su_arena_free(&mp->scratch);
    return true;
}

bool pass_plan_memory_fused(const ir_module *m, const pass_fusion *f, pass_memplan *mp,
                            su_buf *err)
{
    return plan_fused(m, f, mp, err, NULL, NULL, 0, NULL, NULL);
}

void pass_memplan_free(pass_memplan *mp)
{
    su_arena_free(&mp->scratch);
    su_arena_free(&mp->arena);
    memset(mp, 0, sizeof *mp);
}

pass_memplan pass_memplan_figures(const pass_memplan *mp)
{
    pass_memplan f = *mp;
    f.nvalues = f.nbuf = 0;
    f.buf = NULL;
    f.offset = f.bytes = f.start = f.end = NULL;
    f.view_of = NULL;
    memset(&f.arena, 0, sizeof f.arena);
    memset(&f.scratch, 0, sizeof f.scratch);
    return f;
}

/* Two buffers that share bytes never live at once. A sweep over the ops:
 * the buffers taken in the order they start, each checked against those
 * live when it starts, which, sharing no bytes, lie in offset order (the
 * live array), so only its two neighbours there can share its bytes.
 * Buffers leave the array when the sweep passes their end. Before, every
 * buffer was compared with all that start below its end in the arena,
 * which a pipeline's many microbatches placed at the same offsets made
 * quadratic. */
typedef struct span {
    int64_t off, end;
    int b;
} span;

/* A buffer in the sweep's orders: its start (or end) with its span's key. */
typedef struct timed {
    int64_t t, off;
    int b;
} timed;

static int by_time(const void *x, const void *y)
{
    const timed *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->off != b->off)
        return a->off < b->off ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* v[0 .. n) in by_time's order, as one qsort would put them (that qsort
 * was a third of the check on a deep pipeline): a counting sort by time
 * (times are ops, from lo to hi), then each run of one time (most are an
 * op's few results) by offset and buffer. tmp: room for n. */
static bool sort_timed(timed *v, int n, timed *tmp, int64_t lo, int64_t hi)
{
    size_t ntimes = (size_t)(hi - lo) + 2;
    int *at = calloc(ntimes, sizeof *at);
    if (!at)
        return false;
    for (int i = 0; i < n; i++)
        at[v[i].t - lo + 1]++;
    for (size_t k = 1; k < ntimes; k++)
        at[k] += at[k - 1];
    for (int i = 0; i < n; i++)
        tmp[at[v[i].t - lo]++] = v[i];
    free(at);
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && tmp[j].t == tmp[i].t; j++)
            ;
        if (j - i > 1)
            qsort(tmp + i, (size_t)(j - i), sizeof *tmp, by_time);
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
    return true;
}

/* The sweep's live spans: each buffer of the sweep has a rank, its place
 * in the order of (offset, buffer), and a bitmap holds the live ranks,
 * with a bit per word of it that has one, so a span's live neighbours in
 * that order are the nearest set bits either side, found a word at a time
 * (a Fenwick tree of the ranks took log n steps of a cache miss each: a
 * sorted array of the live spans had cost its length at every insertion,
 * about a thousand spans on each stage of a deep pipeline, 5.5 million
 * insertions). */
typedef struct liveset {
    int n, nw;          /* ranks 0 .. n - 1, in nw words */
    uint64_t *bits;     /* [nw]: the live ranks */
    uint64_t *sum;      /* [(nw + 63) / 64]: the words of bits not 0 */
    int *buf;           /* [n]: the buffer of each rank */
} liveset;

static void live_set(liveset *L, int r)
{
    int w = r >> 6;
    L->bits[w] |= 1ull << (r & 63);
    L->sum[w >> 6] |= 1ull << (w & 63);
}

static void live_clear(liveset *L, int r)
{
    int w = r >> 6;
    L->bits[w] &= ~(1ull << (r & 63));
    if (!L->bits[w])
        L->sum[w >> 6] &= ~(1ull << (w & 63));
}

static bool live_has(const liveset *L, int r)
{
    return L->bits[r >> 6] >> (r & 63) & 1;
}

/* The greatest live rank below r, -1 none. */
static int live_prev(const liveset *L, int r)
{
    int w = r >> 6;
    uint64_t m = L->bits[w] & ((1ull << (r & 63)) - 1);
    if (m)
        return w << 6 | (63 - __builtin_clzll(m));
    int s = w >> 6;
    uint64_t ms = L->sum[s] & ((1ull << (w & 63)) - 1);
    while (!ms) {
        if (--s < 0)
            return -1;
        ms = L->sum[s];
    }
    int pw = s << 6 | (63 - __builtin_clzll(ms));
    return pw << 6 | (63 - __builtin_clzll(L->bits[pw]));
}

/* The least live rank above r, -1 none. */
static int live_next(const liveset *L, int r)
{
    int w = r >> 6;
    uint64_t m = (r & 63) == 63 ? 0 : L->bits[w] & (~0ull << ((r & 63) + 1));
    if (m)
        return w << 6 | __builtin_ctzll(m);
    int s = w >> 6, ns = (L->nw + 63) >> 6;
    uint64_t ms = (w & 63) == 63 ? 0 : L->sum[s] & (~0ull << ((w & 63) + 1));
    while (!ms) {
        if (++s >= ns)
            return -1;
        ms = L->sum[s];
    }
    int nw = s << 6 | __builtin_ctzll(ms);
    return nw << 6 | __builtin_ctzll(L->bits[nw]);
}

/* The n buffers of order[] (each once) ranked by (offset, buffer) into
 * rank[b] and L->buf: an LSD radix sort of the offsets in units of
 * PASS_MEM_ALIGN, stable, from the buffers in increasing order. tmp: room
 * for 2 n ints. False: no memory. */
static bool rank_spans(const pass_memplan *mp, const timed *order, int n, int *rank, liveset *L,
                       int *tmp)
{
    int *a = L->buf, *b = tmp;
    int64_t most = 0;
    int k = 0;
    for (int i = 0; i < mp->nbuf; i++) /* buffers in increasing order */
        rank[i] = -1;
    for (int i = 0; i < n; i++)
        rank[order[i].b] = 0;
    for (int i = 0; i < mp->nbuf; i++)
        if (!rank[i]) {
            a[k++] = i;
            most = mp->offset[i] / PASS_MEM_ALIGN > most ? mp->offset[i] / PASS_MEM_ALIGN : most;
        }
    int *count = calloc(1 << 16, sizeof *count);
    if (!count)
        return false;
    for (int shift = 0; shift < 64 && (most >> shift); shift += 16) {
        memset(count, 0, (1 << 16) * sizeof *count);
        for (int i = 0; i < n; i++)
            count[(mp->offset[a[i]] / PASS_MEM_ALIGN >> shift) & 0xffff]++;
        for (int d = 0, sum = 0; d < 1 << 16; d++) {
            int c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int i = 0; i < n; i++)
            b[count[(mp->offset[a[i]] / PASS_MEM_ALIGN >> shift) & 0xffff]++] = a[i];
        int *t = a;
        a = b;
        b = t;
    }
    free(count);
    if (a != L->buf)
        memcpy(L->buf, a, (size_t)n * sizeof *a);
    for (int r = 0; r < n; r++)
        rank[L->buf[r]] = r;
    L->n = n;
    L->nw = (n + 63) / 64 + 1;
    memset(L->bits, 0, (size_t)L->nw * sizeof *L->bits);
    memset(L->sum, 0, (size_t)((L->nw + 63) / 64) * sizeof *L->sum);
    return true;
}

static void share_msg(const pass_memplan *mp, const span *a, const span *b, char *msg,
                      size_t size)
{
    snprintf(msg, size, "buffers %d (ops %lld..%lld) and %d (ops %lld..%lld) share "
             "bytes at %lld while both are live", a->b, (long long)mp->start[a->b],
             (long long)mp->end[a->b], b->b, (long long)mp->start[b->b],
             (long long)mp->end[b->b], (long long)b->off);
}

/* The first fault of mp into msg (empty: none). sp: room for nbuf spans;
 * order: for 3 nbuf timed; rank: nbuf ints; L: its tree and buf for nbuf
 * ranks; tmp: 2 nbuf ints. False: no memory. */
static bool memplan_fault(const pass_memplan *mp, span *sp, timed *order, int *rank, liveset *L,
                          int *tmp, char *msg, size_t size)
{
    int n = 0;
    msg[0] = 0;
    for (int b = 0; b < mp->nbuf; b++) {
        int w = mp->view_of[b];
        if (w >= 0) { /* inside its bucket, which lives at least as long */
            if (mp->view_of[w] >= 0 || mp->offset[b] < mp->offset[w] ||
                mp->offset[b] + mp->bytes[b] > mp->offset[w] + mp->bytes[w] ||
                mp->start[b] < mp->start[w] || mp->end[b] > mp->end[w]) {
                snprintf(msg, size, "buffer %d is not inside buffer %d, whose view it is", b, w);
                return true;
            }
        }
        sp[b] = (span){mp->offset[b], mp->offset[b] + (mp->bytes[b] ? mp->bytes[b] : 1), b};
        if (mp->offset[b] % PASS_MEM_ALIGN || mp->offset[b] < 0 ||
            sp[b].end > mp->arena_bytes) {
            snprintf(msg, size, "buffer %d at %lld (%lld bytes) is misaligned or outside the "
                     "arena of %lld bytes", b, (long long)mp->offset[b],
                     (long long)mp->bytes[b], (long long)mp->arena_bytes);
            return true;
        }
        if (w < 0 && mp->start[b] <= mp->end[b]) /* a view shares its bucket's life */
            order[n++] = (timed){mp->start[b], mp->offset[b], b};
    }
    timed *ends = order + n;
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        ends[i] = (timed){mp->end[order[i].b], 0, order[i].b};
        lo = order[i].t < lo ? order[i].t : lo;
        hi = ends[i].t > hi ? ends[i].t : hi;
    }
    if (!sort_timed(order, n, ends + n, lo, hi) || !sort_timed(ends, n, ends + n, lo, hi) ||
        !rank_spans(mp, order, n, rank, L, tmp))
        return false;
    int gone = 0;
    for (int i = 0; i < n; i++) {
        const span *x = &sp[order[i].b];
        for (; gone < n && ends[gone].t < order[i].t; gone++) {
            int r = rank[ends[gone].b];
            if (live_has(L, r)) /* live: ended once */
                live_clear(L, r);
        }
        /* its neighbours among the live spans in (offset, buffer) order */
        int r = rank[x->b], p = live_prev(L, r), q = live_next(L, r);
        if (p >= 0) {
            const span *y = &sp[L->buf[p]];
            if (y->end > x->off) {
                share_msg(mp, y, x, msg, size);
                return true;
            }
        }
        if (q >= 0) {
            const span *y = &sp[L->buf[q]];
            if (x->end > y->off) {
                share_msg(mp, x, y, msg, size);
                return true;
            }
        }
        live_set(L, r);
    }
    return true;
}

bool pass_memplan_check(const ir_module *m, const pass_memplan *mp, su_buf *err)
{
    (void)m;
    size_t n = (size_t)mp->nbuf + 1;
    span *s = malloc(n * sizeof *s);
    timed *order = malloc(3 * n * sizeof *order);
    int *ints = malloc(5 * n * sizeof *ints + sizeof *ints);
    size_t nw = n / 64 + 2; /* liveset's words, and their words */
    uint64_t *bits = malloc((nw + nw / 64 + 1) * sizeof *bits);
    liveset L = {.bits = bits, .sum = bits ? bits + nw : NULL, .buf = ints + 2 * n + 1};
    char msg[256];
    if (!s || !order || !ints || !bits ||
        !memplan_fault(mp, s, order, ints, &L, ints + 3 * n + 1, msg, sizeof msg)) {
        free(s);
        free(order);
        free(ints);
        free(bits);
        su_oom(err->oom);
    }
    free(s); /* before the message, which may fail to allocate */
    free(order);
    free(ints);
    free(bits);
    if (msg[0])
        su_buf_puts(err, msg);
    return !msg[0];
}

/* pass_fuse_planned's tries: the fusion and plan kept, and the one tried
 * (freed here after an allocation failure too). */
typedef struct planned_run {
    const ir_module *m;
    ir_module *held;        /* m, held once: walked so, then expanded */
    pass_fusion *f, f2;
    pass_memplan *mp, mp2;
    pass_fuse_walk *walk;   /* the fusion's walk, once for every try */
    analysed an;            /* the analysis of *mp's plan (of m and *f) */
    optab_kept ot;          /* m's op table, for every plan tried */
    su_buf *err;
    bool ok;
} planned_run;

/* The first op of the module in run k of fusion f (its k-th run of
 * optimizer groups, fuse.h), or the module's end when f did not build it
 * (skipped: made of single groups). Splitting the run into its groups
 * changes the memory plan from there on only: lifetimes that end in its
 * span, merges of values it makes. Before it the two plans are the same
 * buffers placed alike, so when the arena reaches its top before that op,
 * the split cannot lower it. */
static int64_t run_start(const pass_fusion *f, int k)
{
    for (int g = 0; g < f->ngroups; g++)
        if (f->groups[g].nparts && f->groups[g].run == k)
            return f->groups[g].ops[0];
    return f->nops;
}

static void fuse_planned(void *arg)
{
    planned_run *r = arg;
    const ir_module *m = r->m;
    uint64_t skip = 0;
    r->ok = r->held ? pass_fuse_walk_held(r->held, &r->walk, r->err)
                    : pass_fuse_walk_new(m, &r->walk, r->err);
    if (r->ok)
        pass_fuse_from_walk(r->walk, skip, r->f, r->err);
    r->ok = r->ok && plan_fused(m, r->f, r->mp, r->err, &r->an, NULL, 0, NULL, &r->ot);
    for (int k = 0; r->ok && k < r->f->nruns && k < 64; k++) {
        if (r->mp->top_raised_at < run_start(r->f, k))
            continue; /* the arena is full before run k: it cannot raise it */
        pass_fuse_from_walk(r->walk, skip | (uint64_t)1 << k, &r->f2, r->err);
        r->ok = plan_fused(m, &r->f2, &r->mp2, r->err, NULL, NULL, 0, NULL, &r->ot);
        if (r->ok && r->mp2.arena_bytes < r->mp->arena_bytes) { /* run k raised the peak */
            skip |= (uint64_t)1 << k;
            analysed_free(&r->an); /* of the groups before */
            pass_fusion_free(r->f);
            pass_memplan_free(r->mp);
            *r->f = r->f2;
            *r->mp = r->mp2;
            memset(&r->f2, 0, sizeof r->f2);
            memset(&r->mp2, 0, sizeof r->mp2);
        } else {
            pass_fusion_free(&r->f2);
            pass_memplan_free(&r->mp2);
        }
    }
    /* a result over its kernel's dead register operand shortens a
     * lifetime but pins a placement: best fit can end higher. Without
     * it every lifetime is as long or longer, so the plan is placed only
     * where its bound leaves it room to take fewer bytes (on 7 of the 8
     * stages of pipeline.sh on 64x8x8 its bound is the first plan's
     * arena). */
    bool unplaced = false;
    if (r->ok) {
        r->f->no_register_reuse = true;
        r->ok = plan_fused(m, r->f, &r->mp2, r->err, NULL, r->an.nv ? &r->an : NULL,
                           r->mp->arena_bytes, &unplaced, &r->ot);
        if (r->ok && !unplaced && r->mp2.arena_bytes < r->mp->arena_bytes) {
            pass_memplan_free(r->mp);
            *r->mp = r->mp2;
            memset(&r->mp2, 0, sizeof r->mp2);
        } else {
            r->f->no_register_reuse = false;
            pass_memplan_free(&r->mp2);
        }
    }
    r->mp->unplaced_without_reuse = unplaced;
}

static bool fuse_planned_run(const ir_module *m, ir_module *held, pass_fusion *f,
                             pass_memplan *mp, su_buf *err)
{
    pass_memplan own;
    planned_run r = {.m = m, .held = held, .f = f, .mp = mp ? mp : &own, .err = err};
    memset(f, 0, sizeof *f); /* the caller's to free, also after a failure */
    memset(r.mp, 0, sizeof *r.mp);
    su_arena_init(&r.ot.a, err->oom);
    bool done = su_guarded(err->oom, fuse_planned, &r);
    su_arena_free(&r.ot.a);
    pass_fuse_walk_free(r.walk);
    analysed_free(&r.an);
    pass_fusion_free(&r.f2);
    pass_memplan_free(&r.mp2);
    if (!mp)
        pass_memplan_free(&own);
    if (!done)
        su_oom(err->oom);
    return r.ok;
}

bool pass_fuse_planned(const ir_module *m, pass_fusion *f, pass_memplan *mp, su_buf *err)
{
    return fuse_planned_run(m, NULL, f, mp, err);
}

bool pass_fuse_planned_held(ir_module *m, pass_fusion *f, pass_memplan *mp, su_buf *err)
{
    return fuse_planned_run(m, m->shared ? m : NULL, f, mp, err);
}

/* A plan being printed: its names' arena, freed by pass_memplan_print
 * whichever way it ended. */
typedef struct print_run {
    const ir_module *m;
    const pass_memplan *mp;
    su_buf *out;
    su_arena names;
} print_run;

static void print_plan(void *arg)
{
    print_run *r = arg;
    const ir_module *m = r->m;
    const pass_memplan *mp = r->mp;
    su_buf *out = r->out;
    const char **name = ir_value_print_names(m, &r->names);
    su_buf_printf(out, "# memory plan: arena %lld bytes per rank; params %lld, gradients %lld, "
                  "optimizer state %lld, activations at most %lld\n",
                  (long long)mp->arena_bytes, (long long)mp->params, (long long)mp->gradients,
                  (long long)mp->optimizer_state, (long long)mp->activations);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nres; k++) {
            const ir_value *v = op->res[k];
            int b = v->id < mp->nvalues ? mp->buf[v->id] : -1;
            if (b < 0)
                continue;
            su_buf_printf(out, "%s: buffer %d, %lld bytes at %lld, live %lld..%lld", name[v->id],
                          b, (long long)mp->bytes[b], (long long)mp->offset[b],
                          (long long)mp->start[b], (long long)mp->end[b]);
            if (mp->view_of[b] >= 0)
                su_buf_printf(out, ", a view of buffer %d", mp->view_of[b]);
            su_buf_putc(out, '\n');
        }
    }
}

void pass_memplan_print(const ir_module *m, const pass_memplan *mp, su_buf *out)
{
    print_run r = {.m = m, .mp = mp, .out = out};
    su_arena_init(&r.names, out->oom);
    bool done = su_guarded(out->oom, print_plan, &r);
    su_arena_free(&r.names);
    if (!done)
        su_oom(out->oom);
}
