/* test_memplan_kernels.c: the memory plan of a program whose fused groups
 * run as kernels at their anchors (pass_plan_memory_fused). A plan is run
 * here on paper, in program order (the CPU backend's) and in kernel order
 * (each group at its anchor, reading the values it reads from outside and
 * writing the values it stores; its other values stay in registers), and
 * every read must find the value it reads still in its buffer.
 *
 * - The plain memory plan is wrong in kernel order where a group reads a
 *   value whose last reader in program order comes before the anchor (an
 *   op in between takes its memory), where a group stores a value nothing
 *   reads (written at the anchor over an op's result made in between),
 *   and where a param's new value takes the param's memory although a
 *   later kernel still reads the param. The fused plan is right in both
 *   orders in each case.
 * - In-place updates stay where the kernel order allows them (an
 *   elementwise kernel reads each old element before writing the new one):
 *   a training step still holds each param and state once.
 * - A multi-tensor group (the optimizer's params in one kernel) runs its
 *   parts at once: a part may update in place only what no other part
 *   reads, and the paper run counts a part writing bytes another part
 *   reads as a clobber. pass_fuse_planned drops a multi-tensor group that
 *   raises the arena.
 * - Every example on several meshes (each program of the partitioned
 *   module, and ZeRO 1 to 3 variants of the training examples): sound in
 *   both orders. */
#include "shardc.h"
#include "../../ir/ir.h"
#include "../../passes/fuse.h"
#include "../../passes/passes.h"
#include "check.h"

#include <stdlib.h>

static jmp_buf oom;

typedef struct run {
    ir_module *m;
    pass_fusion f;
    pass_memplan plain, fused;
} run;

/* skip: pass_fuse_ex's (bit r leaves the r-th multi-tensor run apart). */
static run plan_ex(const char *text, uint64_t skip)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    run r = {.m = ir_parse(&src, &d, &oom)};
    if (!r.m) {
        fprintf(stderr, "test_memplan_kernels: bad test text:\n%s\n", d.msg.s);
        abort();
    }
    su_diag_free(&d);
    su_buf err;
    su_buf_init(&err, &oom);
    if (!ir_verify(r.m, &err)) {
        fprintf(stderr, "test_memplan_kernels: the IR does not verify: %s\n", err.s);
        abort();
    }
    CHECK(pass_fuse_ex(r.m, skip, &r.f, &err));
    CHECK(pass_plan_memory(r.m, &r.plain, &err));
    CHECK(pass_plan_memory_fused(r.m, &r.f, &r.fused, &err));
    CHECK(pass_memplan_check(r.m, &r.plain, &err));
    CHECK(pass_memplan_check(r.m, &r.fused, &err));
    if (err.s)
        fprintf(stderr, "  %s\n", err.s);
    su_buf_free(&err);
    return r;
}

static run plan(const char *text)
{
    return plan_ex(text, 0);
}

static void done(run *r)
{
    pass_memplan_free(&r->plain);
    pass_memplan_free(&r->fused);
    pass_fusion_free(&r->f);
    ir_module_free(r->m);
}

static const ir_value *value(const run *r, const char *name)
{
    for (int i = 0; i < r->m->ops.n; i++) {
        const ir_value *v = IR_OP(r->m, i)->res[0];
        if (v->name && !strcmp(v->name, name))
            return v;
    }
    fprintf(stderr, "test_memplan_kernels: no value %%%s\n", name);
    abort();
}

/* The index of the op making %name. */
static int op_index(const run *r, const char *name)
{
    const ir_value *v = value(r, name);
    for (int i = 0; i < r->m->ops.n; i++)
        if (IR_OP(r->m, i)->nres && IR_OP(r->m, i)->res[0] == v)
            return i;
    abort();
}

/* The group of the op making %name, -1 none. */
static int group_of(const run *r, const char *name)
{
    const ir_value *v = value(r, name);
    for (int i = 0; i < r->m->ops.n; i++)
        if (IR_OP(r->m, i)->nres && IR_OP(r->m, i)->res[0] == v)
            return r->f.group_of[i];
    return -1;
}

/* ---- running a plan on paper ---- */

/* Writes are byte ranges of the arena: an op writes its result's bytes,
 * except that an insert over its own one-row bucket writes only its
 * columns (the rest is in place) and an extract whose result is a view of
 * its bucket's columns writes nothing (its value is the bucket's). */
typedef struct wev {
    int64_t off, end, t;
} wev;

typedef struct sim {
    const ir_module *m;
    const pass_memplan *mp;
    int64_t *wtime;     /* per value: when its bytes were written, -1 never */
    wev *ev;            /* every write, in time order */
    int nev;
    int bad;
    char first[512];
} sim;

static void note(sim *s, const char *fmt, const char *name, long long t)
{
    if (s->bad++ == 0)
        snprintf(s->first, sizeof s->first, fmt, name, t);
}

static int64_t bytes_of(const ir_value *v)
{
    return ir_type_numel(&v->type) * ir_dtype_size(v->type.dtype);
}

/* A read of bytes [off, end) of v at time t: no write to them since v's. */
static void read_range(sim *s, const ir_value *v, int64_t off, int64_t end, int64_t t)
{
    const char *name = v->name ? v->name : "?";
    if (s->wtime[v->id] < 0) {
        note(s, "%%%s is read at %lld but was never written", name, (long long)t);
        return;
    }
    for (int i = s->nev - 1; i >= 0 && s->ev[i].t > s->wtime[v->id]; i--)
        if (s->ev[i].off < end && off < s->ev[i].end) {
            note(s, "%%%s is read at %lld after its bytes were written over", name, (long long)t);
            return;
        }
}

/* A read of all of v at time t. */
static void read_at(sim *s, const ir_value *v, int64_t t)
{
    int64_t off = s->mp->offset[s->mp->buf[v->id]];
    read_range(s, v, off, off + bytes_of(v), t);
}

static void write_range(sim *s, int64_t off, int64_t end, int64_t t)
{
    s->ev = realloc(s->ev, ((size_t)s->nev + 1) * sizeof *s->ev);
    s->ev[s->nev++] = (wev){off, end, t};
}

static void write_at(sim *s, const ir_value *v, int64_t t)
{
    int64_t off = s->mp->offset[s->mp->buf[v->id]];
    write_range(s, off, off + bytes_of(v), t);
    s->wtime[v->id] = t;
}

/* An op that makes no instruction: its result is its operand's bytes. */
static bool alias(const sim *s, const ir_op *op)
{
    return (op->code == IR_CONSTRAIN || op->code == IR_RESHAPE) &&
           s->mp->buf[op->res[0]->id] == s->mp->buf[op->in[0]->id];
}

/* insert and extract over a one-row bucket in place / as a view: what
 * they write (the header); false for any other op. */
static bool bucket_op(sim *s, const ir_op *op, int64_t t)
{
    const pass_memplan *mp = s->mp;
    if (op->code != IR_EXTRACT && op->code != IR_INSERT)
        return false;
    int rb = mp->buf[op->res[0]->id], ib = mp->buf[op->in[0]->id];
    int64_t es = ir_dtype_size(op->in[0]->type.dtype);
    if (op->code == IR_EXTRACT && mp->view_of[rb] == ib) {
        s->wtime[op->res[0]->id] = s->wtime[op->in[0]->id];
        return true;
    }
    if (op->code != IR_INSERT || rb != ib || op->in[0]->type.dim[0] != 1)
        return false;
    int64_t off = mp->offset[rb] + op->a->offset * es;
    write_range(s, off, off + bytes_of(op->in[1]), t);
    s->wtime[op->res[0]->id] = t;
    return true;
}

/* Whether bytes of v and w overlap in the plan. */
static bool overlap(const sim *s, const ir_value *v, const ir_value *w)
{
    int64_t a = s->mp->offset[s->mp->buf[v->id]], b = s->mp->offset[s->mp->buf[w->id]];
    return a < b + bytes_of(w) && b < a + bytes_of(v);
}

/* The parts of a multi-tensor kernel run at once: a part writing bytes
 * another part reads is a race, whatever the order of the paper run. */
static void check_parts(sim *s, const pass_fgroup *g, int64_t t)
{
    for (int p = 0; p < g->nparts; p++)
        for (int q = 0; q < g->nparts; q++)
            for (int i = 0; p != q && i < g->parts[p].nout; i++)
                for (int j = 0; j < g->parts[q].nin; j++)
                    if (overlap(s, g->parts[p].out[i], g->parts[q].in[j]))
                        note(s, "%%%s is written over by another part of its kernel at %lld",
                             g->parts[q].in[j]->name ? g->parts[q].in[j]->name : "?",
                             (long long)t);
}

/* One time step: op t in program order, or in kernel order the group
 * whose anchor it is (nothing for its other ops). Reads come first. */
static void step(sim *s, const pass_fusion *f, int64_t t)
{
    const ir_op *op = IR_OP(s->m, t);
    int gk = f ? f->group_of[t] : -1;
    if (gk >= 0) {
        const pass_fgroup *g = &f->groups[gk];
        if (g->anchor != t)
            return;
        check_parts(s, g, t);
        for (int i = 0; i < g->nin; i++)
            read_at(s, g->in[i], t);
        for (int i = 0; i < g->nout; i++)
            write_at(s, g->out[i], t);
        return;
    }
    if (op->nres && alias(s, op)) {
        s->wtime[op->res[0]->id] = s->wtime[op->in[0]->id];
        return;
    }
    if (op->code == IR_INSERT && op->in[0]->type.dim[0] == 1 &&
        s->mp->buf[op->in[0]->id] == s->mp->buf[op->res[0]->id]) {
        /* in place: reads x only; the rest of the bucket stays as it is
         * (gradients computed in their columns early may already lie
         * there) */
        read_at(s, op->in[1], t);
    } else {
        for (int i = 0; i < op->nin; i++)
            read_at(s, op->in[i], t);
    }
    if (op->nres && bucket_op(s, op, t))
        return;
    for (int i = 0; i < op->nres; i++)
        write_at(s, op->res[i], t);
}

/* The clobbered reads of m's run under plan mp, in kernel order with f,
 * else in program order; what the runtime reads after the run (outputs,
 * the loss, new values) is read last. */
static int simulate(const ir_module *m, const pass_fusion *f, const pass_memplan *mp,
                    const char *where)
{
    sim s = {.m = m, .mp = mp};
    s.wtime = malloc(((size_t)mp->nvalues + 1) * sizeof *s.wtime);
    for (int v = 0; v < mp->nvalues; v++)
        s.wtime[v] = -1;
    for (int64_t t = 0; t < m->ops.n; t++)
        step(&s, f, t);
    for (int i = 0; i < m->outputs.n; i++)
        read_at(&s, IR_OUTPUT(m, i)->v, m->ops.n);
    for (int i = 0; i < m->updates.n; i++)
        read_at(&s, IR_UPDATE(m, i)->v, m->ops.n);
    if (s.bad && where)
        fprintf(stderr, "  %s: %d clobbered reads; the first: %s\n", where, s.bad, s.first);
    free(s.wtime);
    free(s.ev);
    return s.bad;
}

/* ---- cases ---- */

/* %x's last reader in program order is %a, the first op of a group whose
 * kernel runs at %b; the matmul in between takes %x's memory in the plain
 * plan. */
static void test_input_until_anchor(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[16, 16] shard(_, _)\n"
                 "%y = input {name = \"y\"} : f32[16, 16] shard(_, _)\n"
                 "%a = exp %x : f32[16, 16] auto(_, _)\n"
                 "%m = matmul %y, %y : f32[16, 16] auto(_, _)\n"
                 "%b = add %a, %y : f32[16, 16] auto(_, _)\n"
                 "output \"m\" = %m\n"
                 "output \"b\" = %b\n");
    const ir_value *x = value(&r, "x"), *m = value(&r, "m");
    CHECK_INT(r.f.ngroups, 1);
    CHECK_INT(r.f.groups[0].anchor, 4);
    /* plain: %m at %x's offset, clobbered when the kernel reads %x */
    CHECK_INT(r.plain.offset[r.plain.buf[m->id]], r.plain.offset[r.plain.buf[x->id]]);
    CHECK_INT(simulate(r.m, NULL, &r.plain, NULL), 0);
    CHECK(simulate(r.m, &r.f, &r.plain, NULL) > 0);
    /* fused: %x lives until the anchor */
    CHECK_INT(r.fused.end[r.fused.buf[x->id]], 4);
    CHECK(r.fused.offset[r.fused.buf[m->id]] != r.fused.offset[r.fused.buf[x->id]]);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* %c is stored although nothing reads it, so the kernel writes it at its
 * anchor %d; the plain plan frees it at once, and %m takes its memory. */
static void test_stored_until_anchor(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[16, 16] shard(_, _)\n"
                 "%y = input {name = \"y\"} : f32[8, 16] shard(_, _)\n"
                 "%a = exp %x : f32[16, 16] auto(_, _)\n"
                 "%c = cast %a {dtype = f16} : f16[16, 16] auto(_, _)\n"
                 "%m = matmul %y, %x : f32[8, 16] auto(_, _)\n"
                 "%d = mul %a, %x : f32[16, 16] auto(_, _)\n"
                 "output \"m\" = %m\n"
                 "output \"d\" = %d\n");
    const ir_value *c = value(&r, "c"), *m = value(&r, "m");
    CHECK_INT(r.f.ngroups, 1);
    CHECK(r.f.stored[c->id]);
    CHECK_INT(r.plain.offset[r.plain.buf[m->id]], r.plain.offset[r.plain.buf[c->id]]);
    CHECK(simulate(r.m, &r.f, &r.plain, NULL) > 0);
    CHECK_INT(r.fused.end[r.fused.buf[c->id]], 5);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* A group's result written over an operand the group keeps in
 * registers, of its type, dying there: one buffer (the GPU never touches
 * the operand's, the CPU reads each element before writing it). As a
 * cross-entropy gradient scaled by the loss's: %e is %s's buffer. Not
 * where the operand is stored (%t, read by the matmul), of another type
 * (%c, a cast), or read after the op (%u, read again by %v). The results
 * are read by a matmul, not outputs, which keep a buffer of their own. */
static void test_internal_in_place(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[16, 16] shard(_, _)\n"
                 "%k = input {name = \"k\"} : i32[16] shard(_)\n"
                 "%h = input {name = \"h\"} : f32[] shard()\n"
                 "%s = cross_entropy_grad %x, %k : f32[16, 16] auto(_, _)\n"
                 "%e = mul %s, %h : f32[16, 16] auto(_, _)\n"
                 "%t = exp %x : f32[16, 16] auto(_, _)\n"
                 "%m = matmul %t, %t : f32[16, 16] auto(_, _)\n"
                 "%n = neg %t : f32[16, 16] auto(_, _)\n"
                 "%a = exp %m : f32[16, 16] auto(_, _)\n"
                 "%c = cast %a {dtype = f16} : f16[16, 16] auto(_, _)\n"
                 "%u = exp %m : f32[16, 16] auto(_, _)\n"
                 "%w = neg %u : f32[16, 16] auto(_, _)\n"
                 "%v = mul %w, %u : f32[16, 16] auto(_, _)\n"
                 "%pe = matmul %e, %v : f32[16, 16] auto(_, _)\n"
                 "output \"pe\" = %pe\n"
                 "output \"n\" = %n\n"
                 "output \"c\" = %c\n");
    const ir_value *sv = value(&r, "s"), *e = value(&r, "e"), *t = value(&r, "t");
    const ir_value *n = value(&r, "n"), *a = value(&r, "a"), *c = value(&r, "c");
    const ir_value *u = value(&r, "u"), *w = value(&r, "w"), *v = value(&r, "v");
    CHECK(group_of(&r, "s") >= 0 && group_of(&r, "s") == group_of(&r, "e"));
    CHECK(!r.f.stored[sv->id] && r.f.stored[e->id]);
    CHECK_INT(r.fused.buf[e->id], r.fused.buf[sv->id]);
    CHECK(r.plain.buf[e->id] != r.plain.buf[sv->id]); /* without kernels: not so */
    CHECK(r.f.stored[t->id] && r.fused.buf[n->id] != r.fused.buf[t->id]);
    CHECK(group_of(&r, "a") == group_of(&r, "c") && r.fused.buf[c->id] != r.fused.buf[a->id]);
    CHECK(group_of(&r, "u") == group_of(&r, "v") && !r.f.stored[w->id]);
    CHECK(r.fused.buf[w->id] != r.fused.buf[u->id]);
    CHECK_INT(r.fused.buf[v->id], r.fused.buf[w->id]); /* %w dies at %v: shared */
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

#define TRAIN_HEAD                                                             \
    "mesh dp = 1\npartitioned\n"                                               \
    "%x = input {name = \"x\"} : f32[64] shard(_)\n"                           \
    "%w = param {name = \"w\", init = zeros} : f32[64] shard(_)\n"             \
    "%p = mul %x, %w : f32[64] auto(_)\n"                                      \
    "%l = mse %p, %x : f32[] auto()\n"                                         \
    "%g = mul %x, %p : f32[64] auto(_) phase backward\n"
#define TRAIN_TAIL "train %l with sgd(lr = 0.1, momentum = 0.9, wd = 0.0)\n"

/* The momentum and the sgd update are one kernel: the state's and the
 * param's new values still take their memory (read, then written, element
 * by element). */
static void test_in_place_kept(void)
{
    run r = plan(TRAIN_HEAD
                 "%m = state {name = \"w.buf\", init = zeros} : f32[64] auto(_) phase optimizer\n"
                 "%nm = momentum %m, %g, %w {momentum = 0.9, wd = 0.0} : f32[64] auto(_) phase "
                 "optimizer\n"
                 "%nw = sgd %w, %nm {lr = 0.1, wd = 0.0} : f32[64] auto(_) phase optimizer\n"
                 "update %m = %nm\nupdate %w = %nw grad %g\n" TRAIN_TAIL);
    const ir_value *w = value(&r, "w"), *nw = value(&r, "nw");
    const ir_value *m = value(&r, "m"), *nm = value(&r, "nm");
    CHECK(group_of(&r, "nm") >= 0 && group_of(&r, "nm") == group_of(&r, "nw"));
    CHECK_INT(r.fused.buf[nw->id], r.fused.buf[w->id]);
    CHECK_INT(r.fused.buf[nm->id], r.fused.buf[m->id]);
    CHECK_INT(r.fused.params, r.plain.params);
    CHECK_INT(r.fused.optimizer_state, r.plain.optimizer_state);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* The param's last reader in program order is the update itself, but a
 * kernel that reads it runs later (%b's): in place only in the plain plan,
 * which that kernel then reads wrong. */
#define REFUSED_TEXT                                                                 \
    TRAIN_HEAD "%a = mul %w, %x : f32[64] auto(_) phase optimizer\n"                 \
               "%nw = sgd %w, %g {lr = 0.1, wd = 0.0} : f32[64] auto(_) phase optimizer\n" \
               "%b = exp %a : f32[64] auto(_) phase optimizer\n"                     \
               "output \"b\" = %b\n"                                                 \
               "update %w = %nw grad %g\n" TRAIN_TAIL

static void test_in_place_refused(void)
{
    run r = plan_ex(REFUSED_TEXT, 1); /* two kernels, not one multi-tensor one */
    const ir_value *w = value(&r, "w"), *nw = value(&r, "nw");
    /* %a and %b: one kernel, at %b; the update another */
    CHECK(group_of(&r, "a") >= 0 && group_of(&r, "a") == group_of(&r, "b"));
    CHECK(group_of(&r, "nw") != group_of(&r, "a"));
    CHECK_INT(r.plain.buf[nw->id], r.plain.buf[w->id]);
    CHECK(simulate(r.m, &r.f, &r.plain, NULL) > 0);
    CHECK(r.fused.buf[nw->id] != r.fused.buf[w->id]);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* The same as one multi-tensor kernel: part {%a, %b} reads %w while part
 * {%nw} writes the new value, at once; so %nw must not take %w's memory,
 * which the plain plan does. */
static void test_multi_in_place_refused(void)
{
    run r = plan(REFUSED_TEXT);
    const ir_value *w = value(&r, "w"), *nw = value(&r, "nw");
    int g = group_of(&r, "nw");
    CHECK(g >= 0 && g == group_of(&r, "a") && g == group_of(&r, "b"));
    CHECK(g >= 0 && r.f.groups[g].nparts == 2);
    CHECK_INT(r.plain.buf[nw->id], r.plain.buf[w->id]);
    CHECK(simulate(r.m, &r.f, &r.plain, NULL) > 0); /* the race */
    CHECK(r.fused.buf[nw->id] != r.fused.buf[w->id]);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* Two params of different shapes: one kernel of two parts (the step's
 * momentum states too), each part updating its own param and state in
 * place. */
static void test_multi_in_place_kept(void)
{
    run r = plan(TRAIN_HEAD
                 "%v = param {name = \"v\", init = zeros} : f32[8, 4] shard(_, _)\n"
                 "%gv = exp %v : f32[8, 4] auto(_, _) phase backward\n"
                 "%m = state {name = \"w.buf\", init = zeros} : f32[64] auto(_) phase optimizer\n"
                 "%nm = momentum %m, %g, %w {momentum = 0.9, wd = 0.0} : f32[64] auto(_) phase "
                 "optimizer\n"
                 "%nw = sgd %w, %nm {lr = 0.1, wd = 0.0} : f32[64] auto(_) phase optimizer\n"
                 "%mv = state {name = \"v.buf\", init = zeros} : f32[8, 4] auto(_, _) phase "
                 "optimizer\n"
                 "%nmv = momentum %mv, %gv, %v {momentum = 0.9, wd = 0.0} : f32[8, 4] auto(_, _) "
                 "phase optimizer\n"
                 "%nv = sgd %v, %nmv {lr = 0.1, wd = 0.0} : f32[8, 4] auto(_, _) phase optimizer\n"
                 "update %m = %nm\nupdate %w = %nw grad %g\n"
                 "update %mv = %nmv\nupdate %v = %nv grad %gv\n" TRAIN_TAIL);
    int g = group_of(&r, "nw");
    CHECK(g >= 0 && g == group_of(&r, "nv") && r.f.groups[g].nparts == 2);
    const char *pairs[][2] = {{"w", "nw"}, {"m", "nm"}, {"v", "nv"}, {"mv", "nmv"}};
    for (int i = 0; i < 4; i++)
        CHECK_INT(r.fused.buf[value(&r, pairs[i][1])->id], r.fused.buf[value(&r, pairs[i][0])->id]);
    CHECK_INT(r.fused.params, r.plain.params);
    CHECK_INT(r.fused.optimizer_state, r.plain.optimizer_state);
    CHECK_INT(simulate(r.m, NULL, &r.fused, "program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "kernel order"), 0);
    done(&r);
}

/* %t1 and %t2 (matmuls: in no group) are read by two updates.
 * As one multi-tensor kernel, %t1 lives until the second update, so %t2
 * cannot take its memory: the arena grows by %t2's 16 KiB (the optimizer
 * holds the most here), and pass_fuse_planned keeps the two kernels
 * apart. */
static void test_multi_dropped_for_memory(void)
{
    const char *text =
        "mesh dp = 1\npartitioned\n"
        "%x = input {name = \"x\"} : f32[4] shard(_)\n"
        "%r = input {name = \"r\"} : f32[1, 64] shard(_, _)\n"
        "%c = input {name = \"c\"} : f32[64, 1] shard(_, _)\n"
        "%w1 = param {name = \"w1\", init = zeros} : f32[64, 64] shard(_, _)\n"
        "%w2 = param {name = \"w2\", init = zeros} : f32[64, 64] shard(_, _)\n"
        "%l = mse %x, %x : f32[] auto()\n"
        "%t1 = matmul %c, %r : f32[64, 64] auto(_, _) phase optimizer\n"
        "%n1 = sgd %w1, %t1 {lr = 0.1, wd = 0.0} : f32[64, 64] auto(_, _) phase optimizer\n"
        "%t2 = matmul %c, %r : f32[64, 64] auto(_, _) phase optimizer\n"
        "%n2 = sgd %w2, %t2 {lr = 0.1, wd = 0.0} : f32[64, 64] auto(_, _) phase optimizer\n"
        "update %w1 = %n1\nupdate %w2 = %n2\n"
        "train %l with sgd(lr = 0.1, momentum = 0.0, wd = 0.0)\n";
    run r = plan(text);
    CHECK_INT(r.f.nruns, 1);
    int g = group_of(&r, "n1");
    CHECK(g >= 0 && g == group_of(&r, "n2"));
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "multi, kernel order"), 0);
    su_buf err = {.oom = &oom};
    pass_fusion f;
    pass_memplan mp;
    CHECK(pass_fuse_planned(r.m, &f, &mp, &err));
    CHECK_INT(f.nruns, 1);
    int k1 = f.group_of[op_index(&r, "n1")], k2 = f.group_of[op_index(&r, "n2")];
    CHECK(k1 >= 0 && k2 >= 0 && k1 != k2);
    CHECK_INT(mp.arena_bytes + 64 * 64 * 4, r.fused.arena_bytes);
    pass_fusion_free(&f);
    pass_memplan_free(&mp);
    su_buf_free(&err);
    done(&r);
}

/* A bucket of two gradients (all_reduce over dp): %g1 and %g2 are computed
 * in their columns of the bucket (after its zeros), the all_reduce sums in
 * place, and %e1 and %e2 are views of the sum: one buffer in all. %g0,
 * computed before the zeros, and %g3, at a column offset that is not a
 * multiple of PASS_MEM_ALIGN, are copied. Sound in both orders. */
#define BUCKET_HEAD                                                                     \
    "mesh dp = 2\npartitioned\n"                                                       \
    "%x = input {name = \"x\"} : f32[64] shard(_) partial(dp)\n"                     \
    "%y = input {name = \"y\"} : f32[64] shard(_) partial(dp)\n"
static void test_bucket_views(void)
{
    run r = plan(BUCKET_HEAD
                 "%z = const {value = 0.0} : f32[] auto() partial(dp)\n"
                 "%b0 = expand %z {shape = [1, 128]} : f32[1, 128] auto(_, _) partial(dp)\n"
                 "%g1 = exp %x : f32[64] auto(_) partial(dp)\n"
                 "%b1 = insert %b0, %g1 {offset = 0} : f32[1, 128] auto(_, _) partial(dp)\n"
                 "%g2 = exp %y : f32[64] auto(_) partial(dp)\n"
                 "%b2 = insert %b1, %g2 {offset = 64} : f32[1, 128] auto(_, _) partial(dp)\n"
                 "%r = all_reduce %b2 {axes = [dp]} : f32[1, 128] auto(_, _)\n"
                 "%e1 = extract %r {shape = [64], offset = 0} : f32[64] auto(_)\n"
                 "%e2 = extract %r {shape = [64], offset = 64} : f32[64] auto(_)\n"
                 "%s1 = exp %e1 : f32[64] auto(_)\n"
                 "%s2 = exp %e2 : f32[64] auto(_)\n"
                 "output \"s1\" = %s1\noutput \"s2\" = %s2\n");
    for (int k = 0; k < 2; k++) {
        const pass_memplan *mp = k ? &r.fused : &r.plain;
        int b = mp->buf[value(&r, "b0")->id];
        CHECK_INT(mp->buf[value(&r, "r")->id], b); /* summed in place */
        CHECK_INT(mp->view_of[mp->buf[value(&r, "g1")->id]], b);
        CHECK_INT(mp->view_of[mp->buf[value(&r, "g2")->id]], b);
        CHECK_INT(mp->view_of[mp->buf[value(&r, "e1")->id]], b);
        CHECK_INT(mp->offset[mp->buf[value(&r, "g2")->id]], mp->offset[b] + 256);
        CHECK_INT(mp->offset[mp->buf[value(&r, "e2")->id]], mp->offset[b] + 256);
        CHECK_INT(mp->end[b], mp->end[mp->buf[value(&r, "e2")->id]]);
    }
    CHECK_INT(simulate(r.m, NULL, &r.plain, "views, program order"), 0);
    CHECK_INT(simulate(r.m, &r.f, &r.fused, "views, kernel order"), 0);
    done(&r);

    run c = plan(BUCKET_HEAD
                 "%u = input {name = \"u\"} : f32[1] shard(_) partial(dp)\n"
                 "%g0 = exp %x : f32[64] auto(_) partial(dp)\n"
                 "%z = const {value = 0.0} : f32[] auto() partial(dp)\n"
                 "%b0 = expand %z {shape = [1, 129]} : f32[1, 129] auto(_, _) partial(dp)\n"
                 "%b1 = insert %b0, %g0 {offset = 0} : f32[1, 129] auto(_, _) partial(dp)\n"
                 "%g3 = exp %u : f32[1] auto(_) partial(dp)\n"
                 "%b2 = insert %b1, %g3 {offset = 64} : f32[1, 129] auto(_, _) partial(dp)\n"
                 "%g4 = exp %y : f32[64] auto(_) partial(dp)\n"
                 "%b3 = insert %b2, %g4 {offset = 65} : f32[1, 129] auto(_, _) partial(dp)\n"
                 "%r = all_reduce %b3 {axes = [dp]} : f32[1, 129] auto(_, _)\n"
                 "%e0 = extract %r {shape = [64], offset = 0} : f32[64] auto(_)\n"
                 "%e3 = extract %r {shape = [1], offset = 64} : f32[1] auto(_)\n"
                 "%e4 = extract %r {shape = [64], offset = 65} : f32[64] auto(_)\n"
                 "output \"e0\" = %e0\noutput \"e3\" = %e3\noutput \"e4\" = %e4\n");
    CHECK_INT(c.plain.view_of[c.plain.buf[value(&c, "g0")->id]], -1); /* before the zeros */
    CHECK_INT(c.plain.view_of[c.plain.buf[value(&c, "g4")->id]], -1); /* misaligned */
    CHECK(c.plain.view_of[c.plain.buf[value(&c, "g3")->id]] >= 0);    /* at 256 bytes */
    /* an output is never a view, so none of the sum's */
    CHECK_INT(c.plain.view_of[c.plain.buf[value(&c, "e0")->id]], -1);
    CHECK_INT(simulate(c.m, NULL, &c.plain, "copies, program order"), 0);
    CHECK_INT(simulate(c.m, &c.f, &c.fused, "copies, kernel order"), 0);
    done(&c);
}

/* ---- the examples ---- */

static void check_example_zero(const char *file, const char *mesh, int zero)
{
    char path[4200], where[4300];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    shardc_options *opt = shardc_options_new();
    char *err = NULL, *ir = NULL;
    shardc_program *prog = NULL;
    char *text = check_model_text(path, zero);
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK);
    CHECK(text && shardc_compile_string(opt, path, text, strlen(text), &prog, &err) == SHARDC_OK);
    free(text);
    CHECK(prog && shardc_program_emit(prog, "sharded-ir", &ir, NULL, &err) == SHARDC_OK);
    if (ir) {
        run r = plan(ir);
        snprintf(where, sizeof where, "%s zero %d on %s, program order", file, zero, mesh);
        CHECK_INT(simulate(r.m, NULL, &r.fused, where), 0);
        snprintf(where, sizeof where, "%s zero %d on %s, kernel order", file, zero, mesh);
        CHECK_INT(simulate(r.m, &r.f, &r.fused, where), 0);
        /* the plain plan in program order, as the CPU backend runs it */
        snprintf(where, sizeof where, "%s zero %d on %s, plain plan", file, zero, mesh);
        CHECK_INT(simulate(r.m, NULL, &r.plain, where), 0);
        CHECK_INT(r.fused.params, r.plain.params);
        CHECK_INT(r.fused.optimizer_state, r.plain.optimizer_state);
        CHECK_INT(r.fused.gradients, r.plain.gradients);
        done(&r);
    } else {
        fprintf(stderr, "  %s on %s: %s\n", file, mesh, err ? err : "?");
    }
    shardc_free(ir);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

static void check_example(const char *file, const char *mesh)
{
    check_example_zero(file, mesh, 0);
}

int main(void)
{
    test_internal_in_place();
    if (setjmp(oom)) {
        fprintf(stderr, "test_memplan_kernels: out of memory\n");
        return 1;
    }
    test_input_until_anchor();
    test_stored_until_anchor();
    test_in_place_kept();
    test_in_place_refused();
    test_multi_in_place_refused();
    test_multi_in_place_kept();
    test_multi_dropped_for_memory();
    test_bucket_views();
    check_example("mlp.sh", "1x1");
    check_example("mlp.sh", "2x2");
    check_example("transformer.sh", "1x1");
    check_example("transformer.sh", "2x2");
    check_example("transformer.sh", "4x2");
    for (int zero = 1; zero <= 3; zero++) {
        check_example_zero("mlp.sh", "2x2", zero);
        check_example_zero("transformer.sh", "4x1", zero);
    }
    return CHECK_DONE();
}
