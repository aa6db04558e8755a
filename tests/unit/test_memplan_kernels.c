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
 * - Every example on several meshes (each program of the partitioned
 *   module): sound in both orders. */
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

static run plan(const char *text)
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
    CHECK(pass_fuse(r.m, &r.f, &err));
    CHECK(pass_plan_memory(r.m, &r.plain, &err));
    CHECK(pass_plan_memory_fused(r.m, &r.f, &r.fused, &err));
    CHECK(pass_memplan_check(r.m, &r.plain, &err));
    CHECK(pass_memplan_check(r.m, &r.fused, &err));
    if (err.s)
        fprintf(stderr, "  %s\n", err.s);
    su_buf_free(&err);
    return r;
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

typedef struct sim {
    const ir_module *m;
    const pass_memplan *mp;
    int64_t *wtime;     /* per value: when its bytes were written, -1 never */
    int64_t *written;   /* per buffer: its last write */
    bool *overlap;      /* nbuf x nbuf: the buffers share bytes */
    int bad;
    char first[512];
} sim;

static void note(sim *s, const char *fmt, const char *name, long long t)
{
    if (s->bad++ == 0)
        snprintf(s->first, sizeof s->first, fmt, name, t);
}

/* A read of v at time t: its buffer written last by v, and no buffer
 * sharing its bytes written since. */
static void read_at(sim *s, const ir_value *v, int64_t t)
{
    int b = s->mp->buf[v->id];
    const char *name = v->name ? v->name : "?";
    if (s->wtime[v->id] < 0) {
        note(s, "%%%s is read at %lld but was never written", name, (long long)t);
        return;
    }
    bool ok = s->written[b] == s->wtime[v->id];
    for (int c = 0; ok && c < s->mp->nbuf; c++)
        ok = c == b || !s->overlap[b * s->mp->nbuf + c] || s->written[c] <= s->wtime[v->id];
    if (!ok)
        note(s, "%%%s is read at %lld after its bytes were written over", name, (long long)t);
}

/* An op that makes no instruction: its result is its operand's bytes. */
static bool alias(const sim *s, const ir_op *op)
{
    return (op->code == IR_CONSTRAIN || op->code == IR_RESHAPE) &&
           s->mp->buf[op->res[0]->id] == s->mp->buf[op->in[0]->id];
}

static void write_at(sim *s, const ir_value *v, int64_t t)
{
    s->written[s->mp->buf[v->id]] = t;
    s->wtime[v->id] = t;
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
    for (int i = 0; i < op->nin; i++)
        read_at(s, op->in[i], t);
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
    int nb = mp->nbuf;
    s.wtime = malloc(((size_t)mp->nvalues + 1) * sizeof *s.wtime);
    s.written = malloc(((size_t)nb + 1) * sizeof *s.written);
    s.overlap = calloc((size_t)nb * (size_t)nb + 1, sizeof *s.overlap);
    for (int v = 0; v < mp->nvalues; v++)
        s.wtime[v] = -1;
    for (int b = 0; b < nb; b++) {
        s.written[b] = -1;
        for (int c = 0; c < nb; c++)
            s.overlap[b * nb + c] = mp->bytes[b] && mp->bytes[c] &&
                                    mp->offset[b] < mp->offset[c] + mp->bytes[c] &&
                                    mp->offset[c] < mp->offset[b] + mp->bytes[b];
    }
    for (int64_t t = 0; t < m->ops.n; t++)
        step(&s, f, t);
    for (int i = 0; i < m->outputs.n; i++)
        read_at(&s, IR_OUTPUT(m, i)->v, m->ops.n);
    for (int i = 0; i < m->updates.n; i++)
        read_at(&s, IR_UPDATE(m, i)->v, m->ops.n);
    if (s.bad && where)
        fprintf(stderr, "  %s: %d clobbered reads; the first: %s\n", where, s.bad, s.first);
    free(s.wtime);
    free(s.written);
    free(s.overlap);
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
static void test_in_place_refused(void)
{
    run r = plan(TRAIN_HEAD
                 "%a = mul %w, %x : f32[64] auto(_) phase optimizer\n"
                 "%nw = sgd %w, %g {lr = 0.1, wd = 0.0} : f32[64] auto(_) phase optimizer\n"
                 "%b = exp %a : f32[64] auto(_) phase optimizer\n"
                 "output \"b\" = %b\n"
                 "update %w = %nw grad %g\n" TRAIN_TAIL);
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

/* ---- the examples ---- */

static void check_example(const char *file, const char *mesh)
{
    char path[4200], where[4300];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    shardc_options *opt = shardc_options_new();
    char *err = NULL, *ir = NULL;
    shardc_program *prog = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &err) == SHARDC_OK);
    CHECK(prog && shardc_program_emit(prog, "sharded-ir", &ir, NULL, &err) == SHARDC_OK);
    if (ir) {
        run r = plan(ir);
        snprintf(where, sizeof where, "%s on %s, program order", file, mesh);
        CHECK_INT(simulate(r.m, NULL, &r.fused, where), 0);
        snprintf(where, sizeof where, "%s on %s, kernel order", file, mesh);
        CHECK_INT(simulate(r.m, &r.f, &r.fused, where), 0);
        /* the plain plan in program order, as the CPU backend runs it */
        snprintf(where, sizeof where, "%s on %s, plain plan", file, mesh);
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

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_memplan_kernels: out of memory\n");
        return 1;
    }
    test_input_until_anchor();
    test_stored_until_anchor();
    test_in_place_kept();
    test_in_place_refused();
    check_example("mlp.sh", "1x1");
    check_example("mlp.sh", "2x2");
    check_example("transformer.sh", "1x1");
    check_example("transformer.sh", "2x2");
    check_example("transformer.sh", "4x2");
    return CHECK_DONE();
}
