/* plan_roll.c: a pipeline stage's program rolled into the plan's loop form
 * (runtime/plan/plan.h), cg_plan_roll_stages.
 *
 * The pipeline split unrolls a stage's tasks, one copy per microbatch, and
 * stamps each op with its task and microbatch (ir_op.task, .mb). Lowered,
 * every copy of a task, an instance, is a run of instructions with one
 * stamp. The instances of one task whose instructions and kernels are the
 * same but for their buffers and their offsets become one body, run for
 * each microbatch, when the instances' buffers say so:
 *   - an instruction's offset moves by the same step from each microbatch
 *     to the next (a microbatch's columns of an input);
 *   - each buffer of the template (the first instance of the commonest
 *     length) stands for one buffer of every other instance, of its size
 *     (a one-to-one map, so that two operands are one buffer in every
 *     instance or in none): the template's own buffer in every instance,
 *     or a slotted buffer, whose copy for each microbatch lies where that
 *     microbatch's instance has its buffer (one slot per place, in the
 *     order the microbatches meet them: the memory plan reuses a few
 *     places, so the copies are few).
 * Expanded, the loop form is then the unrolled program but for buffer
 * numbers (a slotted buffer's copies are new ones) and kernel names
 * (every instance's kernels take the template's): each instruction reads
 * and writes the bytes it did, so it computes what it did. Everything
 * else (what the stage makes once, the sends and receives, an instance
 * that differs from its task's others, such as the first microbatch's
 * backward, which starts the sums the others add to) stays as it was, in
 * bodies run once. Buffers only the rolled instances used go, and the
 * buffers are numbered again (the I/O entries follow).
 */
#include "codegen.h"

#include "runtime/plan/plan.h"

#include <stdlib.h>
#include <string.h>

typedef struct seg {
    int32_t first, end;  /* instructions */
    int32_t task, mb;    /* its stamp; task 0: made once */
    bool rolled;         /* an instance of a rolled task */
    int32_t nk;          /* its kernels: kern[k0 .. k0 + nk) of the stage's, by first instruction */
    int32_t k0;
} seg;

typedef struct roll {
    su_arena *a;
    rt_plan *p;
    int s;
    const rt_program *g;  /* its buffers and instruction count; the instructions
                           * themselves are P's */
    const cg_packed *P;
    int32_t nmb;
    seg *seg;
    int32_t nseg;
    int32_t *kern;       /* the stage's kernels (indices into p->kernel), by segment then
                          * first instruction */
    int32_t nkern;
    int32_t *seg_of;     /* per instruction: its segment */
    /* matching one instance against its template: per buffer of the program,
     * the template's buffer it stands for and the reverse (-1 none), with
     * the buffers touched, to clear them */
    int32_t *to_t, *from_t, *touched;
    int32_t ntouched;
} roll;

static bool dbl_same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

bool cg_instr_same(const rt_instr *a, const rt_instr *b)
{
    if (a->op != b->op || a->nin != b->nin || !rt_type_eq(&a->out_t, &b->out_t) ||
        a->io != b->io || !dbl_same(a->value, b->value) || a->axis != b->axis ||
        a->keepdims != b->keepdims || a->causal != b->causal || !dbl_same(a->eps, b->eps) ||
        a->nlist != b->nlist || a->dim != b->dim || a->dim2 != b->dim2 || a->naxes != b->naxes ||
        !dbl_same(a->lr, b->lr) || !dbl_same(a->momentum, b->momentum) ||
        !dbl_same(a->beta1, b->beta1) || !dbl_same(a->beta2, b->beta2) ||
        !dbl_same(a->wd, b->wd) || a->line != b->line || a->col != b->col)
        return false;
    for (int i = 0; i < a->nin && i < RT_MAX_IN; i++)
        if (!rt_type_eq(&a->in_t[i], &b->in_t[i]) || (a->in[i] < 0) != (b->in[i] < 0))
            return false;
    for (int i = 0; i < a->nlist && i < RT_MAX_RANK; i++)
        if (a->list[i] != b->list[i])
            return false;
    for (int i = 0; i < a->naxes && i < RT_MAX_AXES; i++)
        if (a->axes[i] != b->axes[i])
            return false;
    return (a->out < 0) == (b->out < 0);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h;
}

static uint64_t dbl_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static uint64_t type_hash(uint64_t h, const rt_type *t)
{
    h = mix(h, (uint64_t)t->dtype << 8 | t->rank);
    for (int i = 0; i < t->rank && i < RT_MAX_RANK; i++)
        h = mix(h, (uint64_t)t->dim[i]);
    return h;
}

uint64_t cg_instr_hash(const rt_instr *a)
{
    uint64_t h = mix(0, (uint64_t)a->op << 16 | (uint64_t)a->nin << 8 | (a->out < 0));
    h = type_hash(h, &a->out_t);
    h = mix(h, (uint64_t)(uint32_t)a->io);
    h = mix(h, dbl_bits(a->value));
    h = mix(h, (uint64_t)a->axis);
    h = mix(h, (uint64_t)a->keepdims << 8 | a->causal);
    h = mix(h, dbl_bits(a->eps));
    h = mix(h, (uint64_t)a->nlist << 8 | a->naxes);
    h = mix(h, (uint64_t)a->dim);
    h = mix(h, (uint64_t)a->dim2);
    h = mix(h, dbl_bits(a->lr) ^ dbl_bits(a->momentum) * 3 ^ dbl_bits(a->beta1) * 5 ^
                   dbl_bits(a->beta2) * 7 ^ dbl_bits(a->wd) * 11);
    h = mix(h, (uint64_t)(uint32_t)a->line << 32 | (uint32_t)a->col);
    for (int i = 0; i < a->nin && i < RT_MAX_IN; i++)
        h = mix(type_hash(h, &a->in_t[i]), a->in[i] < 0);
    for (int i = 0; i < a->nlist && i < RT_MAX_RANK; i++)
        h = mix(h, (uint64_t)a->list[i]);
    for (int i = 0; i < a->naxes && i < RT_MAX_AXES; i++)
        h = mix(h, a->axes[i]);
    return h;
}

/* Grows *v (n of size each, room for *cap) to room for one more. */
static void grow(jmp_buf *oom, void **v, int32_t n, int32_t *cap, size_t size, int32_t first)
{
    if (n < *cap)
        return;
    if (*cap > INT32_MAX / 2)
        su_oom(oom); /* never so: ninstr is an int32_t */
    int32_t c = *cap ? 2 * *cap : first;
    void *g = realloc(*v, (size_t)c * size);
    if (!g)
        su_oom(oom); /* the old block is still *v, freed by the caller */
    *v = g;
    *cap = c;
}

int32_t cg_pack(cg_packed *P, const rt_instr *in, jmp_buf *oom)
{
    uint64_t h = cg_instr_hash(in);
    if (2 * (P->nshape + 1) > P->capslot) { /* the slots again, twice as many */
        int32_t cap = P->capslot ? 2 * P->capslot : 4096;
        int32_t *slot = malloc((size_t)cap * sizeof *slot);
        if (!slot)
            su_oom(oom);
        for (int32_t i = 0; i < cap; i++)
            slot[i] = -1;
        for (int32_t k = 0; k < P->nshape; k++) {
            uint32_t i = (uint32_t)P->hash[k] & (uint32_t)(cap - 1);
            while (slot[i] >= 0)
                i = (i + 1) & (uint32_t)(cap - 1);
            slot[i] = k;
        }
        free(P->slot);
        P->slot = slot;
        P->capslot = cap;
    }
    uint32_t mask = (uint32_t)P->capslot - 1, i = (uint32_t)h & mask;
    while (P->slot[i] >= 0 &&
           (P->hash[P->slot[i]] != h || !cg_instr_same(&P->shape[P->slot[i]], in)))
        i = (i + 1) & mask;
    if (P->slot[i] < 0) {
        int32_t cap = P->capshape;
        grow(oom, (void **)&P->shape, P->nshape, &cap, sizeof *P->shape, 256);
        grow(oom, (void **)&P->hash, P->nshape, &P->capshape, sizeof *P->hash, 256);
        P->shape[P->nshape] = *in;
        P->hash[P->nshape] = h;
        P->slot[i] = P->nshape++;
    }
    cg_pack_shape(P, P->slot[i], in->in, RT_MAX_IN, in->out, in->offset, oom);
    return P->slot[i];
}

void cg_pack_shape(cg_packed *P, int32_t shape, const int32_t *in, int nin, int32_t out,
                   int64_t offset, jmp_buf *oom)
{
    grow(oom, (void **)&P->ins, P->n, &P->cap, sizeof *P->ins, 4096);
    cg_pinstr *e = &P->ins[P->n++];
    e->shape = shape;
    e->out = out;
    for (int i = 0; i < RT_MAX_IN; i++)
        e->in[i] = i < nin ? in[i] : 0;
    e->offset = offset;
}

void cg_unpack(const cg_packed *P, int32_t k, rt_instr *out)
{
    const cg_pinstr *e = &P->ins[k];
    *out = P->shape[e->shape];
    memcpy(out->in, e->in, sizeof out->in);
    out->out = e->out;
    out->offset = e->offset;
}

void cg_packed_free(cg_packed *P)
{
    free(P->shape);
    free(P->hash);
    free(P->slot);
    free(P->ins);
    memset(P, 0, sizeof *P);
}

/* Everything but the name, the instructions' place and the parameters'
 * buffers. */
static bool kernel_same(const rt_kernel *a, const rt_kernel *b)
{
    if (a->module != b->module || a->entry != b->entry || a->strategy != b->strategy ||
        a->epilogue != b->epilogue || a->grid != b->grid || a->block != b->block ||
        a->shared_bytes != b->shared_bytes || a->nin != b->nin || a->nout != b->nout ||
        a->ninstr != b->ninstr)
        return false;
    for (int32_t i = 0; i < a->nin + a->nout; i++)
        if (!rt_type_eq(&a->param_t[i], &b->param_t[i]))
            return false;
    return true;
}

/* Instance buffer x stands for template buffer t: true when that keeps the
 * map one to one. */
static bool pair(roll *R, int32_t t, int32_t x)
{
    if (t < 0 || x < 0)
        return t == x || (t < 0 && x < 0);
    if (R->to_t[x] < 0 && R->from_t[t] < 0) {
        R->to_t[x] = t;
        R->from_t[t] = x;
        R->touched[R->ntouched++] = x;
        R->touched[R->ntouched++] = ~t;
        return R->g->buf_bytes[x] == R->g->buf_bytes[t];
    }
    return R->to_t[x] == t && R->from_t[t] == x;
}

static void unpair(roll *R)
{
    for (int32_t i = 0; i < R->ntouched; i++) {
        if (R->touched[i] >= 0)
            R->to_t[R->touched[i]] = -1;
        else
            R->from_t[~R->touched[i]] = -1;
    }
    R->ntouched = 0;
}

/* Whether instance x matches template t (its instructions, its offsets
 * given the steps known so far, and its kernels): the buffer map is left
 * in to_t / from_t, and the steps it fixes are added to step / known. */
static bool match(roll *R, const seg *t, const seg *x, int64_t *step, bool *known)
{
    const cg_packed *P = R->P;
    int32_t n = t->end - t->first;
    if (x->end - x->first != n || x->nk != t->nk)
        return false;
    for (int32_t q = 0; q < n; q++) {
        const cg_pinstr *a = &P->ins[t->first + q], *b = &P->ins[x->first + q];
        if (a->shape != b->shape) /* cg_instr_same */
            return false;
        for (int i = 0; i < P->shape[a->shape].nin; i++)
            if (!pair(R, a->in[i], b->in[i]))
                return false;
        if (!pair(R, a->out, b->out))
            return false;
        int64_t d = b->offset - a->offset, dj = (int64_t)x->mb - t->mb;
        if (known[q] ? d != step[q] * dj : d % dj != 0)
            return false;
    }
    for (int32_t k = 0; k < t->nk; k++) {
        const rt_kernel *a = &R->p->kernel[R->kern[t->k0 + k]];
        const rt_kernel *b = &R->p->kernel[R->kern[x->k0 + k]];
        if (!kernel_same(a, b))
            return false;
        for (int32_t i = 0; i < a->ninstr; i++)
            if (a->instr[i] - t->first != b->instr[i] - x->first)
                return false;
        for (int32_t i = 0; i < a->nin + a->nout; i++)
            if (!pair(R, a->param[i], b->param[i]))
                return false;
    }
    for (int32_t q = 0; q < n; q++)
        if (!known[q]) {
            step[q] = (P->ins[x->first + q].offset - P->ins[t->first + q].offset) /
                      ((int64_t)x->mb - t->mb);
            known[q] = true;
        }
    return true;
}

/* A rolled task: its template, the template's buffers (in order of first
 * use) and, per buffer, what it becomes. */
typedef struct body {
    int32_t task;
    int32_t body;        /* its number in the program, once written; -1 before */
    int32_t tmpl;        /* the template's segment */
    int64_t *step;       /* per instruction */
    int32_t nbuf;
    int32_t *buf;        /* the template's buffers */
    bool *moved;         /* per template buffer: another buffer in some instance (it
                          * becomes a slotted buffer); else the same in all (plain) */
    int32_t *orig;       /* per template buffer: [nmb] its buffer in each microbatch's
                          * instance (-1: none rolled) */
    int32_t *entry;      /* per template buffer that moved: its slotted buffer, once
                          * numbered */
} body;

/* Every buffer template t reads or writes, in order of first use, into
 * B->buf (from_t marks them; the caller clears). */
static void template_buffers(roll *R, body *B, const seg *t)
{
    const cg_packed *P = R->P;
    int32_t cap = 0;
    for (int32_t q = t->first; q < t->end; q++)
        cap += P->shape[P->ins[q].shape].nin + 1;
    for (int32_t k = 0; k < t->nk; k++) {
        const rt_kernel *kr = &R->p->kernel[R->kern[t->k0 + k]];
        cap += kr->nin + kr->nout;
    }
    B->buf = su_alloc(R->a, (size_t)(cap + 1) * sizeof *B->buf);
    B->nbuf = 0;
#define ADD(b)                                                                 \
    do {                                                                       \
        int32_t b_ = (b);                                                      \
        if (b_ >= 0 && R->from_t[b_] == -1) {                                  \
            R->from_t[b_] = -2;                                                \
            R->touched[R->ntouched++] = ~b_;                                   \
            B->buf[B->nbuf++] = b_;                                            \
        }                                                                      \
    } while (0)
    for (int32_t q = t->first; q < t->end; q++) {
        for (int i = 0; i < P->shape[P->ins[q].shape].nin; i++)
            ADD(P->ins[q].in[i]);
        ADD(P->ins[q].out);
    }
    for (int32_t k = 0; k < t->nk; k++) {
        const rt_kernel *kr = &R->p->kernel[R->kern[t->k0 + k]];
        for (int32_t i = 0; i < kr->nin + kr->nout; i++)
            ADD(kr->param[i]);
    }
#undef ADD
    unpair(R);
}

/* Rolls task `task`'s instances, inst[n] (segments, mb distinct): true
 * when they all roll, B filled. Instances whose shape is not the
 * template's (the commonest) are left out, not rolled (their segment's
 * rolled flag stays false). */
static bool roll_task(roll *R, body *B, int32_t *inst, int32_t n)
{
    /* the template: the first instance of the commonest (length, kernels) */
    int32_t best = -1, best_count = 0;
    for (int32_t i = 0; i < n; i++) {
        const seg *a = &R->seg[inst[i]];
        int32_t c = 0;
        for (int32_t k = 0; k < n; k++) {
            const seg *b = &R->seg[inst[k]];
            c += b->end - b->first == a->end - a->first && b->nk == a->nk;
        }
        if (c > best_count)
            best = i, best_count = c;
        if (best_count * 2 > n)
            break;
    }
    if (best_count < 2)
        return false;
    const seg *t = &R->seg[inst[best]];
    int32_t len = t->end - t->first;
    B->tmpl = inst[best];
    B->step = su_alloc(R->a, (size_t)(len + 1) * sizeof *B->step);
    bool *known = su_alloc(R->a, (size_t)(len + 1) * sizeof *known);
    template_buffers(R, B, t);
    /* per instance that matches, each template buffer's counterpart */
    size_t nmb = (size_t)R->nmb;
    int32_t *ok = su_alloc(R->a, (size_t)n * sizeof *ok), nok = 0;
    B->orig = su_alloc(R->a, (size_t)(B->nbuf + 1) * nmb * sizeof *B->orig);
    B->moved = su_alloc(R->a, (size_t)(B->nbuf + 1) * sizeof *B->moved);
    B->entry = su_alloc(R->a, (size_t)(B->nbuf + 1) * sizeof *B->entry);
    for (size_t q = 0; q < (size_t)B->nbuf * nmb; q++)
        B->orig[q] = -1;
    for (int32_t i = 0; i < n; i++) {
        const seg *x = &R->seg[inst[i]];
        if (x->end - x->first != len || x->nk != t->nk)
            continue;
        bool same = i == best || match(R, t, x, B->step, known);
        for (int32_t b = 0; same && b < B->nbuf; b++)
            same = i == best || R->from_t[B->buf[b]] >= 0; /* each template buffer used */
        for (int32_t b = 0; same && b < B->nbuf; b++) {
            int32_t xb = i == best ? B->buf[b] : R->from_t[B->buf[b]];
            B->orig[(size_t)b * nmb + (size_t)x->mb] = xb;
            B->moved[b] |= xb != B->buf[b];
        }
        unpair(R);
        if (same)
            ok[nok++] = inst[i];
    }
    if (nok < 2)
        return false;
    for (int32_t q = 0; q < len; q++)
        if (!known[q])
            B->step[q] = 0;
    for (int32_t i = 0; i < nok; i++)
        R->seg[ok[i]].rolled = true;
    return true;
}

/* Segments of equal stamps, each with its kernels; a stamp that several
 * segments share, or a kernel over two segments, leaves them unrollable
 * (task 0). */
static void segments(roll *R, const int32_t *task, const int32_t *mb)
{
    const rt_program *g = R->g;
    int32_t nseg = 0; /* runs of one stamp: a few per task and microbatch */
    for (int32_t k = 0; k < g->ninstr; k++)
        nseg += !k || task[k] != task[k - 1] || mb[k] != mb[k - 1];
    R->seg = su_alloc(R->a, (size_t)(nseg + 1) * sizeof *R->seg);
    R->seg_of = su_alloc(R->a, (size_t)(g->ninstr + 1) * sizeof *R->seg_of);
    R->nseg = 0;
    for (int32_t k = 0; k < g->ninstr; k++) {
        seg *last = R->nseg ? &R->seg[R->nseg - 1] : NULL;
        if (!last || last->task != task[k] || last->mb != mb[k])
            R->seg[R->nseg++] = (seg){.first = k, .end = k, .task = task[k], .mb = mb[k]};
        R->seg[R->nseg - 1].end = k + 1;
        R->seg_of[k] = R->nseg - 1;
    }
    /* the stage's kernels by segment, then first instruction */
    int32_t n = 0;
    for (int32_t i = 0; i < R->p->nkernels; i++)
        n += R->p->kernel[i].stage == R->s;
    R->kern = su_alloc(R->a, (size_t)(n + 1) * sizeof *R->kern);
    int32_t *first = su_alloc(R->a, (size_t)(g->ninstr + 1) * sizeof *first);
    for (int32_t k = 0; k < g->ninstr; k++)
        first[k] = -1;
    for (int32_t i = 0; i < R->p->nkernels; i++) {
        const rt_kernel *kr = &R->p->kernel[i];
        if (kr->stage != R->s)
            continue;
        first[kr->instr[0]] = i;
        int32_t a = R->seg_of[kr->instr[0]], b = R->seg_of[kr->instr[kr->ninstr - 1]];
        for (int32_t q = a; q <= b && a != b; q++)
            R->seg[q].task = 0;
    }
    R->nkern = 0;
    for (int32_t q = 0; q < R->nseg; q++) {
        R->seg[q].k0 = R->nkern;
        for (int32_t k = R->seg[q].first; k < R->seg[q].end; k++)
            if (first[k] >= 0)
                R->kern[R->nkern++] = first[k];
        R->seg[q].nk = R->nkern - R->seg[q].k0;
    }
}

/* Segment indices with their stamps, for sorting. */
typedef struct stamped {
    int32_t task, mb, q;
} stamped;

static int by_stamp(const void *x, const void *y)
{
    const stamped *a = x, *b = y;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    if (a->mb != b->mb)
        return a->mb < b->mb ? -1 : 1;
    return a->q < b->q ? -1 : a->q > b->q;
}

/* A slot map equal to one already made, or a new one. */
static int32_t slot_map(su_vec *maps, const int32_t *slot, int32_t nmb, su_arena *a, jmp_buf *oom)
{
    for (int32_t i = 0; i < maps->n; i++)
        if (memcmp(maps->v[i], slot, (size_t)nmb * sizeof *slot) == 0)
            return i;
    int32_t *m = su_alloc(a, (size_t)nmb * sizeof *m);
    memcpy(m, slot, (size_t)nmb * sizeof *m);
    su_vec_push(maps, oom, m);
    return (int32_t)maps->n - 1;
}

/* Segment sg's instructions and kernels appended to out: as they are
 * (B NULL), or as task B's body (sg its template; a buffer that moved
 * becomes its slotted buffer, offsets at microbatch 0 with their steps);
 * buffers renumbered by id. */
static void emit(roll *R, rt_program *out, const seg *sg, body *B, const int32_t *id,
                 su_vec *kout, jmp_buf *oom)
{
    if (B)
        for (int32_t b = 0; b < B->nbuf; b++) /* template buffer -> its number */
            R->to_t[B->buf[b]] = B->moved[b] ? B->entry[b] : id[B->buf[b]];
#define NUM(b) ((b) < 0 ? (b) : B ? R->to_t[b] : id[b])
    int32_t at = out->ninstr;
    for (int32_t k = sg->first; k < sg->end; k++) {
        rt_instr x;
        cg_unpack(R->P, k, &x);
        for (int i = 0; i < x.nin; i++)
            x.in[i] = NUM(x.in[i]);
        x.out = NUM(x.out);
        int64_t step = B ? B->step[k - sg->first] : 0;
        x.offset -= step * sg->mb;
        out->instr_step[out->ninstr] = step;
        out->instr[out->ninstr++] = x;
    }
    for (int32_t k = 0; k < sg->nk; k++) {
        const rt_kernel *kr = &R->p->kernel[R->kern[sg->k0 + k]];
        rt_kernel *nk = su_alloc(R->a, sizeof *nk);
        *nk = *kr; /* its own copies: the plain kernels may be freed */
        nk->name = su_strdup(R->a, kr->name);
        nk->param_t = su_alloc(R->a, (size_t)(kr->nin + kr->nout + 1) * sizeof *nk->param_t);
        memcpy(nk->param_t, kr->param_t, (size_t)(kr->nin + kr->nout) * sizeof *nk->param_t);
        nk->instr = su_alloc(R->a, (size_t)kr->ninstr * sizeof *nk->instr);
        for (int32_t i = 0; i < kr->ninstr; i++)
            nk->instr[i] = at + kr->instr[i] - sg->first;
        nk->param = su_alloc(R->a, (size_t)(kr->nin + kr->nout + 1) * sizeof *nk->param);
        for (int32_t i = 0; i < kr->nin + kr->nout; i++)
            nk->param[i] = NUM(kr->param[i]);
        su_vec_push(kout, oom, nk);
    }
#undef NUM
    if (B)
        for (int32_t b = 0; b < B->nbuf; b++)
            R->to_t[B->buf[b]] = -1;
}

static int32_t uf_find(int32_t *up, int32_t x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

/* The loop form of R's program, given its rolled tasks (per task, the
 * body or NULL): the new program into *out, the stage's new kernels into
 * kout, the I/O entries renumbered.
 *
 * Buffers. The buffers that stand for one template buffer in the
 * instances are one value's, microbatch by microbatch, and so are those
 * that another task's template buffer stands for when they share one (a
 * forward's activation and the backward reading it): such buffers form a
 * class, and the buffers of a class at one offset (values never live at
 * once, as they share bytes) become one buffer, a copy, the class's copies
 * in the order the microbatches meet them. Everything, what runs once too,
 * then names the copies. Each template buffer that moved becomes a
 * slotted buffer of its own (appended; its bytes are its first copy's),
 * whose map gives each microbatch the copy its instance used. The other
 * buffers stay, numbered again, when something names them. */
static void write_loop(roll *R, body **by_task, int32_t maxtask, rt_program *out, su_vec *kout,
                       jmp_buf *oom)
{
    const rt_program *g = R->g;
    rt_plan *p = R->p;
    su_arena *a = R->a;
    size_t nmb = (size_t)R->nmb;
    int32_t nb = g->nbuf;
    /* classes: union of each moved template buffer's counterparts */
    int32_t *up = su_alloc(a, (size_t)(nb + 1) * sizeof *up);
    bool *in_class = su_alloc(a, (size_t)(nb + 1) * sizeof *in_class);
    for (int32_t b = 0; b < nb; b++)
        up[b] = b;
    for (int32_t t = 1; t <= maxtask; t++) {
        const body *B = by_task[t];
        for (int32_t b = 0; B && b < B->nbuf; b++)
            for (size_t j = 0; B->moved[b] && j < nmb; j++) {
                int32_t x = B->orig[(size_t)b * nmb + j];
                if (x < 0)
                    continue;
                in_class[x] = true;
                int32_t r0 = uf_find(up, B->buf[b]), r1 = uf_find(up, x);
                in_class[B->buf[b]] = true;
                if (r0 != r1)
                    up[r1] = r0;
            }
    }
    /* each class member's copy: the first member met at its offset */
    int32_t *copy = su_alloc(a, (size_t)(nb + 1) * sizeof *copy);
    int32_t *first_at = su_alloc(a, (size_t)(nb + 1) * sizeof *first_at); /* per member */
    for (int32_t b = 0; b < nb; b++)
        copy[b] = first_at[b] = -1;
    /* members by class, in buffer order: a class's members met at an offset
     * take its first one */
    int32_t *head = su_alloc(a, (size_t)(nb + 1) * sizeof *head);
    int32_t *next = su_alloc(a, (size_t)(nb + 1) * sizeof *next);
    for (int32_t b = 0; b < nb; b++)
        head[b] = -1;
    for (int32_t b = nb - 1; b >= 0; b--)
        if (in_class[b]) {
            int32_t r = uf_find(up, b);
            next[b] = head[r];
            head[r] = b;
        }
    /* a class's offsets met so far, each with its first member (a class
     * has a member per microbatch, at a few offsets: its slots) */
    int64_t *seen_off = su_alloc(a, (size_t)(nb + 1) * sizeof *seen_off);
    int32_t *seen_b = su_alloc(a, (size_t)(nb + 1) * sizeof *seen_b);
    for (int32_t r = 0; r < nb; r++) {
        int32_t nseen = 0;
        for (int32_t b = head[r]; b >= 0; b = next[b]) {
            int32_t d = 0;
            while (d < nseen && seen_off[d] != g->buf_offset[b])
                d++;
            if (d == nseen) {
                seen_off[nseen] = g->buf_offset[b];
                seen_b[nseen++] = b;
            }
            copy[b] = seen_b[d];
        }
    }
    /* the buffers kept: the I/O entries', what runs once names, the plain
     * template buffers, every copy */
    int32_t *id = su_alloc(a, (size_t)(nb + 1) * sizeof *id);
    for (int32_t b = 0; b < nb; b++)
        id[b] = -1;
#define KEEP(b) do { int32_t b_ = (b); if (b_ >= 0) id[in_class[b_] ? copy[b_] : b_] = 0; } while (0)
    for (int32_t i = 0; i < p->nio; i++)
        if (p->io[i].stage == R->s) {
            KEEP(p->io[i].buffer);
            KEEP(p->io[i].update);
        }
    for (int32_t q = 0; q < R->nseg; q++) {
        const seg *sg = &R->seg[q];
        const body *B = sg->rolled ? by_task[sg->task] : NULL;
        if (B) {
            if (B->tmpl == q)
                for (int32_t b = 0; b < B->nbuf; b++)
                    if (!B->moved[b])
                        KEEP(B->buf[b]);
            continue;
        }
        for (int32_t k = sg->first; k < sg->end; k++) {
            const cg_pinstr *e = &R->P->ins[k];
            for (int i = 0; i < R->P->shape[e->shape].nin; i++)
                KEEP(e->in[i]);
            KEEP(e->out);
        }
        for (int32_t k = 0; k < sg->nk; k++) {
            const rt_kernel *kr = &p->kernel[R->kern[sg->k0 + k]];
            for (int32_t i = 0; i < kr->nin + kr->nout; i++)
                KEEP(kr->param[i]);
        }
    }
    for (int32_t b = 0; b < nb; b++)
        if (in_class[b])
            id[copy[b]] = 0;
#undef KEEP
    int32_t n = 0;
    for (int32_t b = 0; b < nb; b++)
        if (id[b] == 0)
            id[b] = n++;
    for (int32_t b = 0; b < nb; b++) /* a member: its copy's number */
        if (in_class[b])
            id[b] = id[copy[b]];
    /* the slotted buffers, each class's copies listed once */
    int32_t nslotted = 0;
    for (int32_t t = 1; t <= maxtask; t++)
        for (int32_t b = 0; by_task[t] && b < by_task[t]->nbuf; b++)
            nslotted += by_task[t]->moved[b];
    out->arena_bytes = g->arena_bytes;
    out->nbuf = n + nslotted;
    out->buf_offset = su_alloc(a, (size_t)(out->nbuf + 1) * sizeof *out->buf_offset);
    out->buf_bytes = su_alloc(a, (size_t)(out->nbuf + 1) * sizeof *out->buf_bytes);
    out->buf_slots = su_alloc(a, (size_t)(out->nbuf + 1) * sizeof *out->buf_slots);
    out->buf_copy_at = su_alloc(a, (size_t)(out->nbuf + 1) * sizeof *out->buf_copy_at);
    for (int32_t b = 0; b < nb; b++)
        if (id[b] >= 0 && (!in_class[b] || copy[b] == b)) {
            out->buf_offset[id[b]] = g->buf_offset[b];
            out->buf_bytes[id[b]] = g->buf_bytes[b];
            out->buf_slots[id[b]] = -1;
        }
    int64_t *list_at = su_alloc(a, (size_t)(nb + 1) * sizeof *list_at); /* per class root */
    int32_t *nlist = su_alloc(a, (size_t)(nb + 1) * sizeof *nlist);
    int64_t ncopy = 0;
    for (int32_t r = 0; r < nb; r++) {
        list_at[r] = -1;
        nlist[r] = 0;
        for (int32_t b = head[r]; b >= 0; b = next[b])
            nlist[r] += copy[b] == b;
        if (nlist[r]) {
            list_at[r] = ncopy;
            ncopy += nlist[r];
        }
    }
    /* a class of more copies than microbatches (two template buffers that
     * share an instance's buffer, with the other instances of each
     * elsewhere): its buffers list their own copies after the classes',
     * as the slots are one per microbatch at most */
    int64_t own = 0;
    for (int32_t t = 1; t <= maxtask; t++)
        for (int32_t b = 0; by_task[t] && b < by_task[t]->nbuf; b++)
            if (by_task[t]->moved[b] && nlist[uf_find(up, by_task[t]->buf[b])] > (int32_t)nmb)
                own += (int64_t)nmb;
    out->copy_buf = su_alloc(a, (size_t)(ncopy + own + 1) * sizeof *out->copy_buf);
    for (int32_t r = 0; r < nb; r++) {
        int64_t at = list_at[r];
        for (int32_t b = head[r]; b >= 0; b = next[b])
            if (copy[b] == b)
                out->copy_buf[at++] = id[b];
    }
    su_vec maps = {0};
    int32_t *slot = su_alloc(a, (nmb + 1) * sizeof *slot);
    int32_t *qpos = su_alloc(a, ((size_t)n + 1) * sizeof *qpos); /* a copy's place in its list */
    for (int32_t i = 0; i <= n; i++)
        qpos[i] = -1;
    int32_t e = n;
    for (int32_t t = 1; t <= maxtask; t++) {
        body *B = by_task[t];
        for (int32_t b = 0; B && b < B->nbuf; b++) {
            if (!B->moved[b])
                continue;
            int32_t r = uf_find(up, B->buf[b]);
            int64_t at = list_at[r];
            int32_t nl = nlist[r];
            if (nl > (int32_t)nmb) { /* its own list: its microbatches' copies, in turn */
                at = ncopy;
                nl = 0;
                for (size_t j = 0; j < nmb; j++) {
                    int32_t x = B->orig[(size_t)b * nmb + j], q = 0;
                    while (x >= 0 && q < nl && out->copy_buf[at + q] != id[x])
                        q++;
                    if (x >= 0 && q == nl)
                        out->copy_buf[at + nl++] = id[x];
                }
                if (!nl) /* no instance has it (never so): the class's first */
                    out->copy_buf[at + nl++] = out->copy_buf[list_at[r]];
                ncopy += nl;
            }
            /* microbatch j's slot: its buffer's copy's place in the list */
            for (int32_t q = 0; q < nl; q++)
                qpos[out->copy_buf[at + q]] = q;
            for (size_t j = 0; j < nmb; j++) {
                int32_t x = B->orig[(size_t)b * nmb + j];
                slot[j] = x >= 0 && id[x] >= 0 && qpos[id[x]] >= 0 ? qpos[id[x]] : 0;
            }
            for (int32_t q = 0; q < nl; q++)
                qpos[out->copy_buf[at + q]] = -1;
            int32_t c0 = out->copy_buf[at];
            B->entry[b] = e;
            out->buf_offset[e] = out->buf_offset[c0];
            out->buf_bytes[e] = out->buf_bytes[c0];
            out->buf_slots[e] = slot_map(&maps, slot, R->nmb, a, oom);
            out->buf_copy_at[e] = at;
            e++;
        }
    }
    out->ncopy = ncopy;
    /* instructions: bodies in order of first use; items in program order */
    int32_t ninstr = 0;
    for (int32_t q = 0; q < R->nseg; q++) {
        const seg *sg = &R->seg[q];
        if (!sg->rolled || by_task[sg->task]->tmpl == q)
            ninstr += sg->end - sg->first;
    }
    out->instr = su_alloc(a, (size_t)(ninstr + 1) * sizeof *out->instr);
    out->instr_step = su_alloc(a, (size_t)(ninstr + 1) * sizeof *out->instr_step);
    out->body_start = su_alloc(a, (size_t)(R->nseg + 1) * sizeof *out->body_start);
    out->item = su_alloc(a, (size_t)(2 * R->nseg + 1) * sizeof *out->item);
    out->nmb = R->nmb;
    out->ninstr = out->nbody = out->nitem = 0;
    bool open = false; /* the last body runs once and takes what follows */
    for (int32_t q = 0; q < R->nseg; q++) {
        const seg *sg = &R->seg[q];
        body *B = sg->rolled ? by_task[sg->task] : NULL;
        if (!B) {
            if (!open) {
                out->body_start[out->nbody] = out->ninstr;
                out->item[2 * out->nitem] = out->nbody++;
                out->item[2 * out->nitem++ + 1] = 0;
                open = true;
            }
            emit(R, out, sg, NULL, id, kout, oom);
            continue;
        }
        open = false;
        if (B->body < 0) { /* the task's body, at its first instance */
            B->body = out->nbody++;
            out->body_start[B->body] = out->ninstr;
            emit(R, out, &R->seg[B->tmpl], B, id, kout, oom);
        }
        out->item[2 * out->nitem] = B->body;
        out->item[2 * out->nitem++ + 1] = sg->mb;
    }
    out->nslotmap = (int32_t)maps.n;
    out->slotmap = su_alloc(a, ((size_t)maps.n * nmb + 1) * sizeof *out->slotmap);
    for (int32_t i = 0; i < maps.n; i++)
        memcpy(&out->slotmap[(size_t)i * nmb], maps.v[i], nmb * sizeof *out->slotmap);
    su_vec_free(&maps);
    for (int32_t i = 0; i < p->nio; i++)
        if (p->io[i].stage == R->s) {
            if (p->io[i].buffer >= 0)
                p->io[i].buffer = id[p->io[i].buffer];
            if (p->io[i].update >= 0)
                p->io[i].update = id[p->io[i].update];
        }
}

/* The sends and receives of a microbatch's values (task -1, the pipeline
 * split's stamp for both) are runs of their own between the instances,
 * several for one microbatch. A run takes a new task number, after
 * maxtask, per kind (the same instructions but for their buffers: a
 * receive from one stage of one type, say) and per its place among the
 * microbatch's runs of that kind (an interleaved schedule receives each
 * of a stage's chunks from the stage before alike), so that the runs of
 * one part roll as the tasks do, one body each, rather than stay once per
 * microbatch: the returned largest task number. Their order, and so the
 * messages', is the program's either way. */
static int32_t p2p_tasks(roll *R, int32_t maxtask)
{
    const cg_packed *P = R->P;
    int32_t *rep = su_alloc(R->a, (size_t)(R->nseg + 1) * sizeof *rep), nrep = 0;
    int32_t *kind = su_alloc(R->a, (size_t)(R->nseg + 1) * sizeof *kind);
    for (int32_t q = 0; q < R->nseg; q++) {
        seg *sg = &R->seg[q];
        kind[q] = -1;
        if (sg->task != -1)
            continue;
        int32_t c = 0;
        for (; c < nrep; c++) {
            const seg *r = &R->seg[rep[c]];
            bool same = r->end - r->first == sg->end - sg->first;
            for (int32_t k = 0; same && k < sg->end - sg->first; k++)
                same = P->ins[r->first + k].shape == P->ins[sg->first + k].shape;
            if (same)
                break;
        }
        if (c == nrep)
            rep[nrep++] = q;
        kind[q] = c;
    }
    /* per (kind, microbatch) the runs met so far; per (kind, place) its
     * task number */
    size_t nmb = (size_t)R->nmb;
    int32_t *met = su_alloc(R->a, ((size_t)nrep * nmb + 1) * sizeof *met); /* zeroed */
    int32_t *cap = su_alloc(R->a, ((size_t)nrep + 1) * sizeof *cap); /* places per kind */
    for (int32_t q = 0; q < R->nseg; q++)
        if (kind[q] >= 0 && R->seg[q].mb >= 0 && (size_t)R->seg[q].mb < nmb) {
            int32_t k = ++met[(size_t)kind[q] * nmb + (size_t)R->seg[q].mb];
            cap[kind[q]] = k > cap[kind[q]] ? k : cap[kind[q]];
        }
    int32_t *first = su_alloc(R->a, ((size_t)nrep + 1) * sizeof *first); /* kind's first number */
    int32_t next = maxtask + 1;
    for (int32_t c = 0; c < nrep; c++) {
        first[c] = next;
        next += cap[c] ? cap[c] : 1;
    }
    memset(met, 0, ((size_t)nrep * nmb + 1) * sizeof *met);
    for (int32_t q = 0; q < R->nseg; q++) {
        if (kind[q] < 0)
            continue;
        int32_t mb = R->seg[q].mb;
        int32_t place = mb >= 0 && (size_t)mb < nmb ? met[(size_t)kind[q] * nmb + (size_t)mb]++ : 0;
        R->seg[q].task = first[kind[q]] + place;
    }
    return next - 1;
}

/* Stage s rolled: its program into *out and its kernels into kout, its
 * I/O entries' buffers numbered again; false when nothing rolls (nothing
 * changed). Reads p's kernels and stage s's program; writes only stage s's
 * I/O entries, so the stages roll at once. */
static bool roll_stage(rt_plan *p, int s, const cg_packed *P, const int32_t *task,
                       const int32_t *mb, su_arena *a, jmp_buf *oom, rt_program *out,
                       su_vec *kout)
{
    rt_program *g = &p->stage[s];
    roll R = {.a = a, .p = p, .s = s, .g = g, .P = P};
    int32_t maxtask = 0;
    R.nmb = 1;
    for (int32_t k = 0; k < g->ninstr; k++) {
        if (task[k] > maxtask)
            maxtask = task[k];
        if (task[k] && mb[k] + 1 > R.nmb)
            R.nmb = mb[k] + 1;
    }
    if (!maxtask)
        return false;
    segments(&R, task, mb);
    maxtask = p2p_tasks(&R, maxtask);
    R.to_t = su_alloc(a, (size_t)(g->nbuf + 1) * sizeof *R.to_t);
    R.from_t = su_alloc(a, (size_t)(g->nbuf + 1) * sizeof *R.from_t);
    R.touched = su_alloc(a, (size_t)(2 * g->nbuf + 2) * sizeof *R.touched);
    for (int32_t b = 0; b < g->nbuf; b++)
        R.to_t[b] = R.from_t[b] = -1;
    /* the segments by stamp: a stamp on two segments is no instance */
    stamped *st = su_alloc(a, (size_t)(R.nseg + 1) * sizeof *st);
    int32_t *order = su_alloc(a, (size_t)(R.nseg + 1) * sizeof *order), n = 0;
    for (int32_t q = 0; q < R.nseg; q++)
        if (R.seg[q].task)
            st[n++] = (stamped){R.seg[q].task, R.seg[q].mb, q};
    qsort(st, (size_t)n, sizeof *st, by_stamp);
    for (int32_t i = 0; i < n; i++)
        order[i] = st[i].q;
    for (int32_t i = 0; i + 1 < n; i++)
        if (R.seg[order[i]].task == R.seg[order[i + 1]].task &&
            R.seg[order[i]].mb == R.seg[order[i + 1]].mb)
            R.seg[order[i]].task = R.seg[order[i + 1]].task = -1;
    body **by_task = su_alloc(a, (size_t)(maxtask + 1) * sizeof *by_task);
    memset(by_task, 0, (size_t)(maxtask + 1) * sizeof *by_task);
    bool any = false;
    for (int32_t i = 0; i < n;) {
        int32_t j = i, t = R.seg[order[i]].task;
        while (j < n && R.seg[order[j]].task == t)
            j++;
        int32_t *inst = su_alloc(a, (size_t)(j - i + 1) * sizeof *inst), ni = 0;
        for (int32_t k = i; k < j; k++)
            if (R.seg[order[k]].task > 0)
                inst[ni++] = order[k];
        body *B = su_alloc(a, sizeof *B);
        memset(B, 0, sizeof *B);
        B->task = t;
        B->body = -1;
        if (t > 0 && ni >= 2 && roll_task(&R, B, inst, ni)) {
            by_task[t] = B;
            any = true;
        }
        i = j;
    }
    if (!any)
        return false;
    memset(out, 0, sizeof *out);
    write_loop(&R, by_task, maxtask, out, kout, oom);
    return true;
}

/* ---- every stage at once ---- */

typedef struct roll_job {
    rt_plan *p;
    int s;
    const cg_packed *P;
    const int32_t *task, *mb;
    su_arena arena;     /* the rolled program's memory, the caller's arena's after */
    jmp_buf oom;
    rt_program out;
    su_vec kout;        /* rt_kernel * in arena */
    bool rolled, failed;
} roll_job;

static void roll_item(void *ctx, int i)
{
    roll_job *j = &((roll_job *)ctx)[i];
    su_arena_init(&j->arena, &j->oom);
    if (setjmp(j->oom)) { /* an allocation failure: the caller jumps once all are done */
        j->failed = true;
        return;
    }
    j->rolled = roll_stage(j->p, j->s, j->P, j->task, j->mb, &j->arena, &j->oom, &j->out,
                           &j->kout);
}

/* n elements of size each from src, copied into a (NULL stays NULL). */
static void *copy_of(su_arena *a, const void *src, size_t n, size_t each)
{
    if (!src)
        return NULL;
    void *d = su_alloc(a, (n + 1) * each);
    memcpy(d, src, n * each);
    return d;
}

/* Rolled program g and its kernels k[0 .. nk) copied into a, the roll's
 * own memory (its analysis's too) left to be freed. */
static void copy_rolled(const rt_program *g, rt_kernel *const *k, int32_t nk, su_arena *a,
                        cg_rolled *o)
{
    rt_program *c = &o->prog;
    *c = *g;
    size_t nb = (size_t)g->nbuf;
    c->buf_offset = copy_of(a, g->buf_offset, nb, sizeof *g->buf_offset);
    c->buf_bytes = copy_of(a, g->buf_bytes, nb, sizeof *g->buf_bytes);
    c->buf_slots = copy_of(a, g->buf_slots, nb, sizeof *g->buf_slots);
    c->buf_copy_at = copy_of(a, g->buf_copy_at, nb, sizeof *g->buf_copy_at);
    c->copy_buf = copy_of(a, g->copy_buf, (size_t)g->ncopy, sizeof *g->copy_buf);
    c->instr = copy_of(a, g->instr, (size_t)g->ninstr, sizeof *g->instr);
    c->instr_step = copy_of(a, g->instr_step, (size_t)g->ninstr, sizeof *g->instr_step);
    c->body_start = copy_of(a, g->body_start, (size_t)g->nbody, sizeof *g->body_start);
    c->item = copy_of(a, g->item, 2 * (size_t)g->nitem, sizeof *g->item);
    c->slotmap = copy_of(a, g->slotmap, (size_t)g->nslotmap * (size_t)g->nmb,
                         sizeof *g->slotmap);
    o->nkernels = nk;
    o->kernel = su_alloc(a, ((size_t)nk + 1) * sizeof *o->kernel);
    for (int32_t i = 0; i < nk; i++) {
        const rt_kernel *kr = k[i];
        rt_kernel *d = &o->kernel[i];
        size_t np = (size_t)(kr->nin + kr->nout);
        *d = *kr;
        d->name = su_strdup(a, kr->name);
        d->param = copy_of(a, kr->param, np, sizeof *kr->param);
        d->param_t = copy_of(a, kr->param_t, np, sizeof *kr->param_t);
        d->instr = copy_of(a, kr->instr, (size_t)kr->ninstr, sizeof *kr->instr);
    }
}

typedef struct roll_copy {
    roll_job *job;
    int n;
    cg_rolled *out;
    su_arena *a;
} roll_copy;

static void copy_all(void *arg)
{
    roll_copy *c = arg;
    for (int i = 0; i < c->n; i++) {
        cg_rolled *o = &c->out[i];
        memset(o, 0, sizeof *o);
        o->rolled = c->job[i].rolled;
        if (o->rolled)
            copy_rolled(&c->job[i].out, (rt_kernel *const *)c->job[i].kout.v,
                        (int32_t)c->job[i].kout.n, c->a, o);
    }
}

void cg_plan_roll_stages(rt_plan *p, int s0, int s1, const cg_packed *packed,
                         int32_t *const *task, int32_t *const *mb, su_arena *a, jmp_buf *oom,
                         cg_rolled *out)
{
    int n = s1 - s0;
    roll_job *job = calloc((size_t)(n > 0 ? n : 1), sizeof *job);
    if (!job)
        su_oom(oom);
    for (int i = 0; i < n; i++) {
        job[i].p = p;
        job[i].s = s0 + i;
        job[i].P = &packed[s0 + i];
        job[i].task = task[s0 + i];
        job[i].mb = mb[s0 + i];
    }
    int nt = su_processors();
    su_parallel_for(n, nt > 16 ? 16 : nt, roll_item, job);
    bool failed = false;
    for (int i = 0; i < n; i++)
        failed = failed || job[i].failed;
    /* each rolled program and its kernels copied out of its job's arena,
     * which also holds the roll's analysis (at 512 microbatches several
     * times the program: the per-buffer and per-instruction maps, each
     * buffer's places per microbatch) */
    roll_copy c = {job, n, out, a};
    failed = failed || !su_guarded(oom, copy_all, &c);
    for (int i = 0; i < n; i++) {
        su_vec_free(&job[i].kout);
        su_arena_free(&job[i].arena);
    }
    free(job);
    if (failed)
        su_oom(oom);
}
