/* test_fuse.c: op fusion (passes/fuse.c). Small modules in textual IR
 * check the groups: an elementwise chain with broadcasting, a value read
 * outside its group (stored, and where it stops the group), reductions
 * with their producers and consumers, elementwise groups that merge, ops
 * that are never fused, phases kept apart. Every example, compiled on a
 * few meshes through the API, checks the pass's invariants (a group runs
 * at its last op: nothing between its first op and there reads it; a
 * value is stored exactly when something outside its group reads it),
 * that the grouping is the same on a second run, and that --emit
 * fused-ir is the IR with comments added (and parses back to the same
 * module, when the program is one; a pipeline's stages are not modules of
 * their own). */
#include "shardc.h"
#include "../../ir/ir.h"
#include "../../passes/fuse.h"
#include "../../passes/passes.h"
#include "../../codegen/cuda.h"
#include "../../api/api_internal.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>

static jmp_buf oom;

typedef struct run {
    ir_module *m;
    pass_fusion f;
} run;

static ir_module *parse(const char *text)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    ir_module *m = ir_parse(&src, &d, &oom);
    if (!m) {
        fprintf(stderr, "test_fuse: bad test text:\n%s\n", d.msg.s);
        abort();
    }
    su_diag_free(&d);
    return m;
}

static run fuse(const char *text)
{
    run r = {.m = parse(text)};
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(pass_fuse(r.m, &r.f, &err));
    su_buf_free(&err);
    return r;
}

/* As the plan writer and --emit fused-ir group (pass_fuse_planned). */
static run fuse_planned(const char *text)
{
    run r = {.m = parse(text)};
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(pass_fuse_planned(r.m, &r.f, NULL, &err));
    su_buf_free(&err);
    return r;
}

static void done(run *r)
{
    pass_fusion_free(&r->f);
    ir_module_free(r->m);
}

static int op_index(const run *r, const char *name)
{
    for (int i = 0; i < r->m->ops.n; i++) {
        const ir_op *op = IR_OP(r->m, i);
        if (op->nres && op->res[0]->name && !strcmp(op->res[0]->name, name))
            return i;
    }
    fprintf(stderr, "test_fuse: no value %%%s\n", name);
    abort();
}

/* The group of the op making %name, or NULL. */
static const pass_fgroup *group(const run *r, const char *name)
{
    int g = r->f.group_of[op_index(r, name)];
    return g < 0 ? NULL : &r->f.groups[g];
}

static bool stored(const run *r, const char *name)
{
    return r->f.stored[IR_OP(r->m, op_index(r, name))->res[0]->id];
}

/* "x y" for a group's inputs (or outputs), by value name. */
static char *names(const ir_value *const *v, int n)
{
    static char buf[4][256];
    static int which;
    char *b = buf[which++ % 4];
    b[0] = 0;
    for (int i = 0; i < n; i++)
        snprintf(b + strlen(b), 256 - strlen(b), "%s%s", i ? " " : "", v[i]->name ? v[i]->name : "?");
    return b;
}

static void test_chain(void)
{
    run r = fuse("%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%b = param {name = \"b\", init = zeros} : f32[8]\n"
                 "%z = input {name = \"z\"} : f32[4, 8]\n"
                 "%a = add %x, %b : f32[4, 8]\n"
                 "%g = gelu %a : f32[4, 8]\n"
                 "%c = mul %g, %z : f32[4, 8]\n"
                 "output \"c\" = %c\n");
    CHECK_INT(r.f.ngroups, 1);
    const pass_fgroup *g = group(&r, "a");
    CHECK(g && g == group(&r, "g") && g == group(&r, "c"));
    if (g) {
        CHECK_STR(g->name, "k0_add_gelu_mul");
        CHECK(g->kind == PASS_FUSE_ELEMENTWISE);
        CHECK_INT(g->nops, 3);
        CHECK_INT(g->anchor, op_index(&r, "c"));
        CHECK_STR(names(g->in, g->nin), "x b z");
        CHECK_STR(names(g->out, g->nout), "c");
    }
    CHECK(!stored(&r, "a") && !stored(&r, "g") && stored(&r, "c"));
    CHECK(r.f.group_of[op_index(&r, "x")] < 0); /* sources are never fused */
    done(&r);
}

/* %a is read by a matmul after the group: it is stored, the group goes on.
 * %p is read by a matmul before %q wants to join: %q starts a new group. */
static void test_read_outside(void)
{
    run r = fuse("%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%w = param {name = \"w\", init = zeros} : f32[8, 8]\n"
                 "%a = relu %x : f32[4, 8]\n"
                 "%b = neg %a : f32[4, 8]\n"
                 "%m = matmul %a, %w : f32[4, 8]\n"
                 "%p = exp %m : f32[4, 8]\n"
                 "%n = matmul %p, %w : f32[4, 8]\n"
                 "%q = log %p : f32[4, 8]\n"
                 "output \"b\" = %b\n"
                 "output \"n\" = %n\n"
                 "output \"q\" = %q\n");
    CHECK(group(&r, "a") && group(&r, "a") == group(&r, "b"));
    CHECK(stored(&r, "a") && stored(&r, "b"));
    CHECK(group(&r, "p") && group(&r, "q") && group(&r, "p") != group(&r, "q"));
    CHECK(stored(&r, "p"));
    CHECK(group(&r, "m") == NULL && group(&r, "n") == NULL);
    const pass_fgroup *q = group(&r, "q");
    CHECK(q && q->nin == 1 && !strcmp(q->in[0]->name, "p"));
    done(&r);
}

/* Producers in front of a reduction; a row op with consumers after it. */
static void test_reductions(void)
{
    run r = fuse("%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%y = input {name = \"y\"} : f32[4]\n"
                 "%e = const {value = 1e-05} : f32[]\n"
                 "%t = mean %x {axis = 1, keepdims = true} : f32[4, 1]\n"
                 "%d = sub %x, %t : f32[4, 8]\n"
                 "%s = mul %d, %d : f32[4, 8]\n"
                 "%v = mean %s {axis = 1, keepdims = true} : f32[4, 1]\n"
                 "%ve = add %v, %e : f32[4, 1]\n"
                 "%r = rsqrt %ve : f32[4, 1]\n"
                 "%n = mul %d, %r : f32[4, 8]\n"
                 "%sm = softmax %n {axis = 1} : f32[4, 8]\n"
                 "%o = mul %sm, %x : f32[4, 8]\n"
                 "%cs = sum %o {axis = 0, keepdims = false} : f32[8]\n"
                 "output \"o\" = %o\n"
                 "output \"cs\" = %cs\n"
                 "output \"y\" = %y\n");
    const pass_fgroup *t = group(&r, "t"), *v = group(&r, "v"), *sm = group(&r, "sm");
    CHECK(t && t->kind == PASS_FUSE_REDUCE && t->nops == 1);
    CHECK(v && v == group(&r, "d") && v == group(&r, "s") && v == group(&r, "ve") &&
          v == group(&r, "r"));
    if (v) {
        CHECK_STR(v->name, "k1_sub_mul_mean_add");
        CHECK_INT(v->reduce, op_index(&r, "v"));
        CHECK(pass_fuse_op_role(v, op_index(&r, "d")) == PASS_FUSE_PROLOGUE);
        CHECK(pass_fuse_op_role(v, op_index(&r, "v")) == PASS_FUSE_MAIN);
        CHECK(pass_fuse_op_role(v, op_index(&r, "r")) == PASS_FUSE_EPILOGUE);
        CHECK_STR(names(v->out, v->nout), "d r");
    }
    CHECK(stored(&r, "d") && !stored(&r, "s") && !stored(&r, "v") && stored(&r, "r"));
    /* %n (a product of [4, 8] and [4, 1]) feeds the softmax; %o consumes it */
    CHECK(sm && sm == group(&r, "n") && sm == group(&r, "o"));
    CHECK(!stored(&r, "n") && !stored(&r, "sm") && stored(&r, "o"));
    /* a second reduction is a group of its own */
    CHECK(group(&r, "cs") && group(&r, "cs") != sm);
    CHECK_INT(r.f.ngroups, 4);
    done(&r);
}

/* The op that feeds a reduction's epilogue must not read its prologue. */
static void test_epilogue_reads_prologue(void)
{
    run r = fuse("%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%a = exp %x : f32[4, 8]\n"
                 "%s = softmax %a {axis = 1} : f32[4, 8]\n"
                 "%o = mul %s, %a : f32[4, 8]\n"
                 "output \"o\" = %o\n");
    CHECK(group(&r, "a") == group(&r, "s"));
    CHECK(group(&r, "o") && group(&r, "o") != group(&r, "s"));
    CHECK(stored(&r, "a") && stored(&r, "s"));
    done(&r);
}

/* Two elementwise groups that a third op reads merge into one kernel;
 * mse takes both of its operands' producers. */
static void test_merge(void)
{
    run r = fuse("%m = input {name = \"m\"} : f32[16]\n"
                 "%v = input {name = \"v\"} : f32[16]\n"
                 "%g = input {name = \"g\"} : f32[16]\n"
                 "%m2 = adam_m %m, %g {beta1 = 0.9} : f32[16]\n"
                 "%v2 = adam_v %v, %g {beta2 = 0.999} : f32[16]\n"
                 "%u = div %m2, %v2 : f32[16]\n"
                 "%a = exp %m : f32[16]\n"
                 "%b = exp %v : f32[16]\n"
                 "%l = mse %a, %b : f32[]\n"
                 "output \"m2\" = %m2\n"
                 "output \"v2\" = %v2\n"
                 "output \"u\" = %u\n"
                 "output \"l\" = %l\n");
    CHECK_INT(r.f.ngroups, 2);
    const pass_fgroup *g = group(&r, "u");
    CHECK(g && g == group(&r, "m2") && g == group(&r, "v2"));
    if (g)
        CHECK_STR(g->name, "k0_adam_m_adam_v_div");
    CHECK(group(&r, "l") && group(&r, "l") == group(&r, "a") && group(&r, "l") == group(&r, "b"));
    done(&r);
}

static void test_never_fused(void)
{
    run r = fuse("mesh tp = 2\n"
                 "partitioned\n"
                 "%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%ids = input {name = \"ids\"} : i32[4]\n"
                 "%t = param {name = \"t\", init = zeros} : f32[16, 8]\n"
                 "%e = embedding %t, %ids : f32[4, 8]\n"
                 "%tr = transpose %e {perm = [1, 0]} : f32[8, 4]\n"
                 "%rs = reshape %tr {shape = [32]} : f32[32]\n"
                 "%ar = all_reduce %rs {axes = [tp]} : f32[32]\n"
                 "%i1 = div %ids, %ids : i32[4]\n"
                 "%i2 = add %i1, %ids : i32[4]\n"
                 "%c = cast %i2 {dtype = f32} : f32[4]\n"
                 "%d = exp %c : f32[4]\n"
                 "%s = sum %i2 {axis = 0, keepdims = false} : i32[]\n"
                 "output \"ar\" = %ar\n"
                 "output \"d\" = %d\n"
                 "output \"s\" = %s\n");
    /* i32 div (its division by zero is the CPU backend's error) and
     * reductions of i32 stay out */
    const char *never[] = {"x", "ids", "t", "e", "tr", "rs", "ar", "i1", "s"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        CHECK(group(&r, never[i]) == NULL);
    /* i32 add and the cast from i32 are fused, so is what follows */
    CHECK(group(&r, "i2") && group(&r, "i2") == group(&r, "c") && group(&r, "c") == group(&r, "d"));
    CHECK(stored(&r, "i2")); /* the sum reads it */
    CHECK_INT(r.f.ngroups, 1);
    done(&r);
}

static void test_phases(void)
{
    run r = fuse("%x = input {name = \"x\"} : f32[8]\n"
                 "%a = exp %x : f32[8]\n"
                 "%b = exp %a : f32[8] phase backward\n"
                 "%c = exp %b : f32[8] phase backward\n"
                 "output \"c\" = %c\n");
    CHECK(group(&r, "a") && group(&r, "b") && group(&r, "a") != group(&r, "b"));
    CHECK(group(&r, "b") == group(&r, "c"));
    CHECK(stored(&r, "a") && !stored(&r, "b"));
    done(&r);
}

/* ---- invariants on every example ---- */

/* A multi-tensor group's parts cover its ops exactly, in the optimizer
 * phase, no part reads another's value, no collective lies between its
 * first op and its anchor, and its kernel takes at most
 * PASS_FUSE_MULTI_PARAMS pointers. The count of violations. */
static int check_multi(const run *r, const int *defat)
{
    const ir_module *m = r->m;
    int bad = 0;
    for (int k = 0; k < r->f.ngroups; k++) {
        const pass_fgroup *g = &r->f.groups[k];
        if (!g->nparts || g->kind == PASS_FUSE_TOTAL)
            continue;
        int nops = 0;
        bad += g->nparts < 2 || g->nin + g->nout > PASS_FUSE_MULTI_PARAMS;
        for (int p = 0; p < g->nparts; p++) {
            const pass_fgroup *part = &g->parts[p];
            nops += part->nops;
            bad += part->nparts != 0 || part->anchor > g->anchor;
            for (int i = 0; i < part->nops; i++) {
                const ir_op *op = IR_OP(m, part->ops[i]);
                bad += r->f.group_of[part->ops[i]] != k || op->phase != IR_PH_OPTIMIZER ||
                       pass_fuse_part(g, part->ops[i]) != part;
                for (int j = 0; j < op->nin; j++) {
                    int at = defat[op->in[j]->id];
                    const pass_fgroup *from = r->f.group_of[at] == k ? pass_fuse_part(g, at) : NULL;
                    bad += from != NULL && from != part;
                }
            }
        }
        bad += nops != g->nops;
        for (int i = g->ops[0]; i <= g->anchor; i++) {
            ir_opclass c = ir_ops[IR_OP(m, i)->code].cls;
            bad += c == IR_C_COMM || c == IR_C_P2P;
        }
    }
    return bad;
}

/* Whether every reader of v is an op of group g, or a constrain whose
 * result's readers are (a TOTAL group reads through the partitioner's
 * renames, fuse.h); outputs and updates are not. With after >= 0, ops
 * after op index after count as g's too (a rename that ops before the
 * kernel runs read only when they are the kernel's). */
static bool read_inside(const run *r, const ir_value *v, int g, int after)
{
    if (after >= 0) {
        const ir_module *m = r->m;
        for (int i = 0; i <= after && i < m->ops.n; i++) {
            const ir_op *op = IR_OP(m, i);
            for (int k = 0; k < op->nin; k++)
                if (op->in[k] == v && r->f.group_of[i] != g &&
                    !(op->code == IR_CONSTRAIN && read_inside(r, op->res[0], g, after)))
                    return false;
        }
        return true;
    }
    const ir_module *m = r->m;
    for (int i = 0; i < m->outputs.n; i++)
        if (IR_OUTPUT(m, i)->v == v)
            return false;
    for (int i = 0; i < m->updates.n; i++)
        if (IR_UPDATE(m, i)->v == v || IR_UPDATE(m, i)->grad == v)
            return false;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++)
            if (op->in[k] == v && r->f.group_of[i] != g &&
                !(op->code == IR_CONSTRAIN && read_inside(r, op->res[0], g, -1)))
                return false;
    }
    return true;
}

/* A TOTAL group (fuse.h): its ops those of the optimizer phase that
 * group_of gives it, ascending; each part a reduction group of its ops
 * (prologue and first sum) whose total is a sum of rank 0 of the group;
 * no collective, send or recv between its first op and its anchor; at
 * most PASS_FUSE_MULTI_PARAMS pointers. The count of violations. */
static int check_total(const run *r)
{
    const ir_module *m = r->m;
    int bad = 0;
    for (int k = 0; k < r->f.ngroups; k++) {
        const pass_fgroup *g = &r->f.groups[k];
        if (g->kind != PASS_FUSE_TOTAL)
            continue;
        bad += g->nparts < 1 || g->nin + g->nout > PASS_FUSE_MULTI_PARAMS;
        int n = 0;
        for (int i = 0; i < m->ops.n; i++)
            if (r->f.group_of[i] == k) {
                bad += n >= g->nops || g->ops[n] != i ||
                       IR_OP(m, i)->phase != IR_PH_OPTIMIZER;
                n++;
            }
        bad += n != g->nops || g->anchor != g->ops[g->nops - 1];
        for (int p = 0; p < g->nparts; p++) {
            const pass_fgroup *part = &g->parts[p];
            bad += part->kind != PASS_FUSE_REDUCE || part->ops[part->nops - 1] != part->reduce ||
                   IR_OP(m, part->reduce)->code != IR_SUM || r->f.group_of[part->total] != k ||
                   IR_OP(m, part->total)->code != IR_SUM ||
                   IR_OP(m, part->total)->res[0]->type.rank != 0;
            for (int i = 0; i < part->nops; i++)
                bad += r->f.group_of[part->ops[i]] != k;
        }
        for (int i = g->ops[0]; i <= g->anchor; i++) {
            ir_opclass c = ir_ops[IR_OP(m, i)->code].cls;
            bad += c == IR_C_COMM || c == IR_C_P2P;
        }
    }
    return bad;
}

/* Nothing between a group's first op and its anchor reads the group, and
 * a value is stored exactly when an op outside its group, an output or an
 * update reads it, or nothing does. */
static void check_invariants(const run *r, const char *where)
{
    const ir_module *m = r->m;
    const pass_fusion *f = &r->f;
    int bad = 0;
    int *defat = calloc((size_t)m->next_id + 1, sizeof *defat), *outside = NULL;
    outside = calloc((size_t)m->next_id + 1, sizeof *outside);
    int *readers = calloc((size_t)m->next_id + 1, sizeof *readers);
    if (!defat || !outside || !readers)
        abort();
    for (int i = 0; i < m->ops.n; i++)
        for (int k = 0; k < IR_OP(m, i)->nres; k++)
            defat[IR_OP(m, i)->res[k]->id] = i;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            int g = f->group_of[defat[op->in[k]->id]];
            readers[op->in[k]->id]++;
            if (g >= 0 && g != f->group_of[i] && op->code == IR_CONSTRAIN &&
                f->groups[g].kind == PASS_FUSE_TOTAL) {
                /* a rename (no instruction): the group reads through it, or
                 * ops after the kernel do, the value then stored */
                if (!read_inside(r, op->res[0], g, -1))
                    outside[op->in[k]->id] = 1;
                bad += !read_inside(r, op->res[0], g, f->groups[g].anchor);
                continue;
            }
            if (g >= 0 && g != f->group_of[i]) {
                outside[op->in[k]->id] = 1;
                bad += i < f->groups[g].anchor; /* read before the kernel runs */
            }
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        outside[IR_OUTPUT(m, i)->v->id] = 1;
    for (int i = 0; i < m->updates.n; i++) {
        outside[IR_UPDATE(m, i)->v->id] = 1;
        if (IR_UPDATE(m, i)->grad) /* the gradient the update records (clipped) */
            outside[IR_UPDATE(m, i)->grad->id] = 1;
    }
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (f->group_of[i] < 0)
            continue;
        int id = op->res[0]->id;
        bad += f->stored[id] != (outside[id] || readers[id] == 0);
        const pass_fgroup *g = &f->groups[f->group_of[i]];
        /* one phase a group; a cross_entropy's with its gradient has the
         * gradient's chain (ops of the logits' shape from the gradient on)
         * in the gradient's, the rest (the loss's, or a const the chain
         * reads) in either */
        int ph = IR_OP(m, g->anchor)->phase;
        if (g->has_xgrad) {
            int lp = IR_OP(m, g->reduce)->phase, gp = IR_OP(m, g->xgrad)->phase;
            bool chain = i >= g->xgrad &&
                         ir_shape_eq(&op->res[0]->type, &IR_OP(m, g->reduce)->in[0]->type);
            ph = chain || op->phase == gp ? gp : lp;
            bad += chain && op->code != IR_XENT_GRAD && !pass_fuse_elementwise(op);
            bad += op->task != IR_OP(m, g->reduce)->task || op->mb != IR_OP(m, g->reduce)->mb;
        }
        bad += i > g->anchor || ph != op->phase;
    }
    bad += check_multi(r, defat);
    bad += check_total(r);
    CHECK_INT(bad, 0);
    if (bad)
        fprintf(stderr, "  in %s\n", where);
    free(defat);
    free(outside);
    free(readers);
}

/* The programs of an --emit text: one, or a pipeline's stages, each after
 * a "// ---- stage S of N ----" line. Modifies text; returns the count. */
static int split_stages(char *text, char **prog, int max)
{
    if (strncmp(text, "// ---- stage", 13)) {
        prog[0] = text;
        return 1;
    }
    int n = 0;
    for (char *p = text; p && n < max; p = strstr(p, "\n// ---- stage")) {
        if (p != text)
            *p++ = 0;
        prog[n++] = strchr(p, '\n') + 1;
    }
    return n;
}

/* fused-ir text without its comment lines and comments: the IR. */
static char *strip_comments(const char *text)
{
    su_buf b;
    su_buf_init(&b, &oom);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        const char *c = strstr(p, "  // k");
        if (!strncmp(p, "// kernel ", 10)) {
            /* dropped */
        } else if (c && c < p + len) {
            su_buf_put(&b, p, (size_t)(c - p));
            su_buf_putc(&b, '\n');
        } else {
            su_buf_put(&b, p, len);
        }
        p += len;
    }
    return su_buf_take(&b);
}

/* One program of an example: the invariants, the same groups on a second
 * run, and its fused-ir text, which parses back to it. */
static void check_program(const char *ir, const char *fused, const char *where)
{
    run all = fuse(ir); /* every run of optimizer groups made one */
    check_invariants(&all, where);
    done(&all);
    run r = fuse_planned(ir);
    check_invariants(&r, where);
    run again = fuse_planned(ir);
    su_buf a, b, c;
    su_buf_init(&a, &oom);
    su_buf_init(&b, &oom);
    su_buf_init(&c, &oom);
    pass_fusion_print(r.m, &r.f, &a);
    pass_fusion_print(again.m, &again.f, &b);
    CHECK(a.s && b.s && !strcmp(a.s, b.s));
    CHECK(a.s && !strcmp(a.s, fused));
    ir_module *back = parse(fused); /* comments are comments */
    ir_print(back, &c);
    CHECK(c.s && !strcmp(c.s, ir));
    ir_module_free(back);
    su_buf_free(&a);
    su_buf_free(&b);
    su_buf_free(&c);
    done(&again);
    done(&r);
}

static void check_example(const char *file, const char *mesh)
{
    char path[4200], where[4300];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    shardc_options *opt = shardc_options_new();
    char *err = NULL, *ir = NULL, *fused = NULL;
    shardc_program *prog = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &err) == SHARDC_OK);
    CHECK(prog && shardc_program_emit(prog, "stage-ir", &ir, NULL, &err) == SHARDC_OK);
    CHECK(prog && shardc_program_emit(prog, "fused-ir", &fused, NULL, &err) == SHARDC_OK);
    if (!ir || !fused) {
        fprintf(stderr, "  %s on %s: %s\n", file, mesh, err ? err : "?");
    } else {
        char *irs[16], *fuseds[16];
        int n = split_stages(ir, irs, 16);
        CHECK_INT(split_stages(fused, fuseds, 16), n);
        for (int s = 0; s < n; s++) {
            snprintf(where, sizeof where, "%s on %s, program %d", file, mesh, s);
            char *bare = strip_comments(fuseds[s]);
            CHECK(!strcmp(bare, irs[s]));
            free(bare);
            /* a pipeline stage's program is not a module of its own: it
             * does not parse alone */
            if (n == 1)
                check_program(irs[s], fuseds[s], where);
        }
        char *whole = NULL; /* a pipeline's program before the split */
        if (n > 1 && shardc_program_emit(prog, "sharded-ir", &whole, NULL, &err) == SHARDC_OK) {
            run r = fuse(whole);
            snprintf(where, sizeof where, "%s on %s before the pipeline split", file, mesh);
            check_invariants(&r, where);
            done(&r);
        }
        shardc_free(whole);
    }
    shardc_free(ir);
    shardc_free(fused);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

/* The fuse pass fuses a pipeline's stages on threads of their own (a
 * thread per processor): each stage's groups are what pass_fuse_planned
 * makes of that stage alone. pipeline.sh on 2x2x2 with interleaved(2)
 * and ZeRO 1 has two stages of two chunks each and runs of optimizer
 * updates on each, so the tries of pass_fuse_planned ran. */
static bool same_fusion(const pass_fusion *a, const pass_fusion *b);

static void test_stages_at_once(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/pipeline.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    char *err = NULL;
    shardc_program *prog = NULL;
    CHECK(shardc_options_set_mesh(opt, "2x2x2", &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(opt, "sm_90", &err) == SHARDC_OK);
    CHECK(shardc_options_set_schedule(opt, "interleaved(2)", &err) == SHARDC_OK);
    CHECK(shardc_options_set_zero(opt, 1, NULL, &err) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &err) == SHARDC_OK);
    if (!prog) {
        fprintf(stderr, "  pipeline.sh: %s\n", err ? err : "?");
        shardc_free(err);
        shardc_options_free(opt);
        return;
    }
    int n;
    ir_module *const *st = pass_result_stages(&prog->res, &n);
    CHECK_INT(n, 2);
    CHECK(prog->res.fused && prog->res.nplanned == n);
    int runs = 0;
    for (int s = 0; s < n && prog->res.fused; s++) {
        pass_fusion alone;
        su_buf e;
        su_buf_init(&e, &oom);
        CHECK(pass_fuse_planned(st[s], &alone, NULL, &e));
        CHECK(same_fusion(&prog->res.fusion[s], &alone));
        CHECK(prog->res.fusion[s].no_register_reuse == alone.no_register_reuse);
        runs += alone.nruns;
        pass_fusion_free(&alone);
        su_buf_free(&e);
    }
    CHECK(runs >= 2); /* the tries ran */
    shardc_program_free(prog);
    shardc_free(err);
    shardc_options_free(opt);
}

/* The memory plan with results over their kernels' dead register
 * operands (memplan.c) is kept only where it does not raise the arena:
 * on every stage of several programs, the plan made is no larger than the
 * plan with the choice flipped, and smaller where it is the plan without
 * the reuse. No plan takes fewer bytes than its least_bytes, and
 * pass_fuse_planned does not place the plan without the reuse where, and
 * only where, its least_bytes is no fewer than the plan with it took
 * (*unplaced counts those stages). */
static void check_register_reuse(const char *file, const char *mesh, int *off, int *unplaced)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    shardc_options *opt = shardc_options_new();
    char *err = NULL;
    shardc_program *prog = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(opt, "sm_90", &err) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &err) == SHARDC_OK);
    int n = 0;
    ir_module *const *st = prog ? pass_result_stages(&prog->res, &n) : NULL;
    for (int s = 0; s < n; s++) {
        pass_fusion *f = &prog->res.fusion[s];
        pass_memplan flipped;
        su_buf e;
        su_buf_init(&e, &oom);
        f->no_register_reuse = !f->no_register_reuse;
        CHECK(pass_plan_memory_fused(st[s], f, &flipped, &e));
        f->no_register_reuse = !f->no_register_reuse;
        const pass_memplan *made = &prog->res.mp[s];
        if (f->no_register_reuse)
            CHECK(made->arena_bytes < flipped.arena_bytes);
        else
            CHECK(made->arena_bytes <= flipped.arena_bytes);
        CHECK(made->least_bytes > 0 && made->least_bytes <= made->arena_bytes);
        CHECK(flipped.least_bytes > 0 && flipped.least_bytes <= flipped.arena_bytes);
        /* the plan without the reuse: flipped, or the one made */
        const pass_memplan *without = f->no_register_reuse ? made : &flipped;
        const pass_memplan *with = f->no_register_reuse ? &flipped : made;
        bool bound = without->least_bytes >= with->arena_bytes;
        CHECK(made->unplaced_without_reuse == bound);
        *unplaced += bound;
        *off += f->no_register_reuse;
        pass_memplan_free(&flipped);
        su_buf_free(&e);
    }
    shardc_program_free(prog);
    shardc_free(err);
    shardc_options_free(opt);
}

static void test_register_reuse(void)
{
    int off = 0, unplaced = 0;
    check_register_reuse("transformer.sh", "1x1", &off, &unplaced);
    check_register_reuse("transformer.sh", "2x2", &off, &unplaced);
    check_register_reuse("pipeline.sh", "2x2x2", &off, &unplaced);
    check_register_reuse("moe.sh", "2x2", &off, &unplaced);
    check_register_reuse("moe.sh", "1x1", &off, &unplaced);
    CHECK(off >= 1); /* moe.sh's on 1x1 raised its arena with the reuse (pipeline.sh's
                      * stage did, before the norms' gradients were one op each) */
}

/* %b reads %a, the exp of %x, after n transposes that no group takes:
 * it joins %a's group when %x (read by %a only) is held at most
 * PASS_FUSE_HOLD ops past %a. */
static bool joins_after(int n)
{
    su_buf t;
    su_buf_init(&t, &oom);
    su_buf_puts(&t, "mesh dp = 1\npartitioned\n"
                    "%x = input {name = \"x\"} : f32[4, 4]\n"
                    "%y = input {name = \"y\"} : f32[4, 4]\n"
                    "%a = exp %x : f32[4, 4]\n");
    for (int i = 0; i < n; i++)
        su_buf_printf(&t, "%%t%d = transpose %%y {perm = [1, 0]} : f32[4, 4]\n", i);
    su_buf_puts(&t, "%b = add %a, %y : f32[4, 4]\noutput \"b\" = %b\n");
    for (int i = 0; i < n; i++)
        su_buf_printf(&t, "output \"t%d\" = %%t%d\n", i, i);
    run r = fuse(t.s);
    bool joined = group(&r, "a") && group(&r, "a") == group(&r, "b");
    done(&r);
    su_buf_free(&t);
    return joined;
}

static void test_hold(void)
{
    CHECK(joins_after(0));
    CHECK(joins_after(PASS_FUSE_HOLD - 1)); /* %b is PASS_FUSE_HOLD ops after %a */
    CHECK(!joins_after(PASS_FUSE_HOLD));
    CHECK(!joins_after(3 * PASS_FUSE_HOLD));
}

/* n sgd updates of params of n shapes ([1], [2], ...; with a period p,
 * three of shapes [1000], [1001], [1002], then [1], [2], ... [p] over and
 * over): multi-tensor groups of at most PASS_FUSE_MULTI_PARAMS pointers
 * (3 per update: the param, its gradient, the new value), in program
 * order; skip leaves runs apart. Returns the groups' part counts (0 for a
 * plain group) in parts[], the count of groups. */
static void sgd_text(int n, int period, su_buf *t);

static int sgd_run(int n, int period, uint64_t skip, int *parts, int *nruns)
{
    su_buf t;
    sgd_text(n, period, &t);
    run r = {.m = parse(t.s)};
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(pass_fuse_ex(r.m, skip, &r.f, &err));
    int k = 0;
    for (int g = 0; g < r.f.ngroups; g++)
        if (IR_OP(r.m, r.f.groups[g].anchor)->phase == IR_PH_OPTIMIZER)
            parts[k++] = r.f.groups[g].nparts;
    *nruns = r.f.nruns;
    su_buf_free(&err);
    su_buf_free(&t);
    done(&r);
    return k;
}

/* The module of sgd_run, n updates, into t (initialised here). */
static void sgd_text(int n, int period, su_buf *t0)
{
    su_buf *tp = t0;
#define t (*tp)
    su_buf_init(&t, &oom);
    su_buf_puts(&t, "mesh dp = 1\npartitioned\n%x = input {name = \"x\"} : f32[2]\n"
                    "%l = mse %x, %x : f32[]\n");
    for (int i = 0; i < n; i++) {
        int d = !period ? i + 1 : i < 3 ? 1000 + i : (i - 3) % period + 1;
        su_buf_printf(&t, "%%w%d = param {name = \"w%d\", init = zeros} : f32[%d]\n"
                          "%%g%d = exp %%w%d : f32[%d] phase backward\n",
                      i, i, d, i, i, d);
    }
    for (int i = 0; i < n; i++) {
        int d = !period ? i + 1 : i < 3 ? 1000 + i : (i - 3) % period + 1;
        su_buf_printf(&t, "%%n%d = sgd %%w%d, %%g%d {lr = 0.1, wd = 0.0} : f32[%d] phase optimizer\n",
                      i, i, i, d);
    }
    for (int i = 0; i < n; i++)
        su_buf_printf(&t, "update %%w%d = %%n%d grad %%g%d\n", i, i, i);
    su_buf_puts(&t, "train %l with sgd(lr = 0.1, momentum = 0.0, wd = 0.0)\n");
#undef t
}

/* Whether groups a and b are the same: kind, ops, what they read and
 * store, anchor, name and parts. */
static bool same_group(const pass_fgroup *a, const pass_fgroup *b)
{
    bool same = a->id == b->id && a->kind == b->kind && a->nops == b->nops &&
                a->nin == b->nin && a->nout == b->nout && a->reduce == b->reduce &&
                a->anchor == b->anchor && a->nparts == b->nparts && !strcmp(a->name, b->name) &&
                a->epilogue == b->epilogue && a->bias == b->bias && a->residual == b->residual;
    for (int i = 0; same && i < a->nops; i++)
        same = a->ops[i] == b->ops[i];
    for (int i = 0; same && i < a->nin; i++)
        same = a->in[i] == b->in[i];
    for (int i = 0; same && i < a->nout; i++)
        same = a->out[i] == b->out[i];
    for (int r = 0; same && r < a->nparts; r++)
        same = same_group(&a->parts[r], &b->parts[r]);
    return same;
}

static bool same_fusion(const pass_fusion *a, const pass_fusion *b)
{
    bool same = a->ngroups == b->ngroups && a->nops == b->nops && a->nvalues == b->nvalues &&
                a->nruns == b->nruns;
    for (int i = 0; same && i < a->nops; i++)
        same = a->group_of[i] == b->group_of[i];
    for (int v = 0; same && v < a->nvalues; v++)
        same = a->stored[v] == b->stored[v];
    for (int k = 0; same && k < a->ngroups; k++)
        same = same_group(&a->groups[k], &b->groups[k]);
    return same;
}

/* pass_fuse_planned's tries: one walk, a fusion per skip made from it,
 * each what pass_fuse_ex makes for that skip, each owning its memory
 * (freed in another order than made, one after the walk is gone). */
static void test_walk_reused(void)
{
    su_buf t, err;
    sgd_text(200, 0, &t);
    su_buf_init(&err, &oom);
    ir_module *m = parse(t.s);
    pass_fuse_walk *w = NULL;
    CHECK(pass_fuse_walk_new(m, &w, &err));
    enum { NSKIP = 5 };
    const uint64_t skips[NSKIP] = {0, 1, 2, 3, 7};
    pass_fusion tried[NSKIP];
    for (int i = 0; i < NSKIP; i++)
        pass_fuse_from_walk(w, skips[i], &tried[i], &err);
    pass_fusion_free(&tried[2]);
    for (int i = 0; i < NSKIP; i++) {
        if (i == 2)
            pass_fuse_from_walk(w, skips[i], &tried[i], &err); /* again, after a free */
        pass_fusion ref;
        CHECK(pass_fuse_ex(m, skips[i], &ref, &err));
        CHECK(same_fusion(&tried[i], &ref));
        pass_fusion_free(&ref);
    }
    /* the skips made different groupings: the test compares something */
    CHECK_INT(tried[0].nruns, 3);
    CHECK_INT(tried[1].ngroups, tried[0].ngroups + PASS_FUSE_MULTI_PARAMS / 3 - 1);
    pass_fuse_walk_free(w);
    pass_fusion ref;
    CHECK(pass_fuse_ex(m, skips[4], &ref, &err));
    CHECK(same_fusion(&tried[4], &ref)); /* still whole without the walk */
    CHECK(!same_fusion(&tried[3], &ref));
    pass_fusion_free(&ref);
    for (int i = NSKIP - 1; i >= 0; i--)
        pass_fusion_free(&tried[i]);
    /* a malformed module fails the walk, which is still the caller's to free */
    ir_module *bad = parse("mesh dp = 1\npartitioned\n%x = input {name = \"x\"} : f32[2]\n"
                           "%y = neg %x : f32[2]\noutput \"y\" = %y\n");
    IR_OP(bad, 1)->in[0] = IR_OP(bad, 1)->res[0]; /* reads its own result */
    w = NULL;
    su_buf_free(&err);
    su_buf_init(&err, &oom);
    CHECK(!pass_fuse_walk_new(bad, &w, &err));
    CHECK(w != NULL && strstr(err.s, "reads a value no earlier op makes"));
    pass_fuse_walk_free(w);
    ir_module_free(bad);
    ir_module_free(m);
    su_buf_free(&err);
    su_buf_free(&t);
}

static void test_multi_tensor(void)
{
    int parts[300], nruns;
    const int full = PASS_FUSE_MULTI_PARAMS / 3;
    /* 200 updates, 3 pointers each: 85 + 85 + 30 */
    CHECK_INT(sgd_run(200, 0, 0, parts, &nruns), 3);
    CHECK_INT(parts[0], full);
    CHECK_INT(parts[1], full);
    CHECK_INT(parts[2], 200 - 2 * full);
    CHECK_INT(nruns, 3);
    /* the second run skipped: its 85 updates are groups of their own */
    CHECK_INT(sgd_run(200, 0, 2, parts, &nruns), 2 + full);
    CHECK_INT(parts[0], full);
    CHECK_INT(parts[1], 0);
    CHECK_INT(parts[1 + full], 200 - 2 * full);
    CHECK_INT(nruns, 3);
    /* one update: no run */
    CHECK_INT(sgd_run(1, 0, 0, parts, &nruns), 1);
    CHECK_INT(parts[0], 0);
    CHECK_INT(nruns, 0);
}

/* Runs cut where the updates repeat (fuse.c, "runs that repeat"): three
 * updates of their own shapes, then shapes [1] .. [7] over and over. The
 * three are a run, ending where the stretch starts; then runs of whole
 * periods, as many as fit (12 periods: 84 updates, 252 pointers), the same
 * shapes in the same order each; the last takes the rest. Greedily, the
 * first run took 85 updates and the second began 5 shapes into the period. */
static void test_multi_period(void)
{
    int parts[300], nruns;
    const int whole = PASS_FUSE_MULTI_PARAMS / 3 / 7 * 7;
    CHECK_INT(whole, 84);
    CHECK_INT(sgd_run(200, 7, 0, parts, &nruns), 4);
    CHECK_INT(parts[0], 3);
    CHECK_INT(parts[1], whole);
    CHECK_INT(parts[2], whole);
    CHECK_INT(parts[3], 200 - 3 - 2 * whole);
    CHECK_INT(nruns, 4);
    /* shapes [1] .. [150], then [1] .. [47]: repeated less than twice, no
     * stretch; the runs are cut greedily */
    CHECK_INT(sgd_run(200, 150, 0, parts, &nruns), 3);
    CHECK_INT(parts[0], PASS_FUSE_MULTI_PARAMS / 3);
}

/* The timeline costs the groups it is given (the plan's, whose runs
 * pass_fuse_planned may have left apart), else it fuses each stage
 * itself: 200 sgd updates as three multi-tensor kernels, or with the
 * first run apart, 85 kernels more, each a launch. */
static void test_timeline_fusion(void)
{
    su_buf t, err;
    sgd_text(200, 0, &t);
    su_buf_init(&err, &oom);
    ir_module *m = parse(t.s);
    pass_fusion whole, apart;
    CHECK(pass_fuse_ex(m, 0, &whole, &err));
    CHECK(pass_fuse_ex(m, 1, &apart, &err));
    const pass_hw *hw = pass_hw_default();
    double own = 0, given = 0, split = 0;
    CHECK(pass_timeline_stats(&m, 1, NULL, NULL, hw, NULL, &own, &err));
    CHECK(pass_timeline_stats(&m, 1, &whole, NULL, hw, NULL, &given, &err));
    CHECK(pass_timeline_stats(&m, 1, &apart, NULL, hw, NULL, &split, &err));
    CHECK(own > 0 && own == given);
    CHECK(split > given + 80 * hw->launch_s);
    pass_fusion_free(&whole);
    pass_fusion_free(&apart);
    ir_module_free(m);
    su_buf_free(&err);
    su_buf_free(&t);
}

/* A matmul of parts (passes/parts.c) on the timeline: three launches, its
 * FLOPs the f32 product's at a sixth of the tensor-core peak, and its
 * bytes the parts read once and twice again in views (3 + 2 + 1 thirds),
 * the result written once and read and written again twice; a step of
 * that one kernel after its two inputs', each made on the device (a
 * launch and its bytes written). Its f32 twin takes one launch at the f32
 * peak over its operands and result. */
static void test_timeline_parts(void)
{
    static const char parts[] = "mesh dp = 1\npartitioned\n"
                                "%a = input {name = \"a\"} : bf16[64, 768]\n"
                                "%b = input {name = \"b\"} : bf16[768, 512]\n"
                                "%c = matmul %a, %b {parts = true} : f32[64, 512]\n"
                                "output \"c\" = %c\n";
    static const char f32[] = "mesh dp = 1\npartitioned\n"
                              "%a = input {name = \"a\"} : f32[64, 256]\n"
                              "%b = input {name = \"b\"} : f32[256, 512]\n"
                              "%c = matmul %a, %b : f32[64, 512]\n"
                              "output \"c\" = %c\n";
    su_buf err;
    su_buf_init(&err, &oom);
    const pass_hw *hw = pass_hw_default();
    double flops = 2.0 * 64 * 512 * 256, eff = pass_hw_matmul_eff(hw, flops);
    double pa = 64 * 768 * 2, pb = 768 * 512 * 2, c = 64 * 512 * 4;
    double tf = flops / (hw->tc_flops / 6 * eff);
    double tm = (2 * pa + 2 * pb + 5 * c) / (hw->mem_bw * hw->mem_eff);
    double bw = hw->mem_bw * hw->mem_eff; /* the inputs' kernels */
    double want = 2 * hw->launch_s + (pa + pb) / bw + 3 * hw->launch_s + (tf > tm ? tf : tm);
    ir_module *m = parse(parts);
    double step = 0;
    CHECK(pass_timeline_stats(&m, 1, NULL, NULL, hw, NULL, &step, &err));
    CHECK(fabs(step - want) <= 1e-12 * want);
    if (fabs(step - want) > 1e-12 * want)
        fprintf(stderr, "  parts: step %.9g s, want %.9g s\n", step, want);
    ir_module_free(m);
    m = parse(f32);
    tf = flops / (hw->f32_flops * eff);
    tm = (64 * 256 * 4 + 256 * 512 * 4 + c) / (hw->mem_bw * hw->mem_eff);
    want = 2 * hw->launch_s + (64 * 256 * 4 + 256 * 512 * 4) / bw + hw->launch_s +
           (tf > tm ? tf : tm);
    CHECK(pass_timeline_stats(&m, 1, NULL, NULL, hw, NULL, &step, &err));
    CHECK(fabs(step - want) <= 1e-12 * want);
    ir_module_free(m);
    su_buf_free(&err);
}

/* Matmul groups: the chain, the epilogue bits, the bias and residual. */
static void test_matmul_epilogue(void)
{
    run r = fuse("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[4, 8]\n"
                 "%z = input {name = \"z\"} : f32[4, 16]\n"
                 "%w = param {name = \"w\", init = zeros} : f32[8, 16]\n"
                 "%b = param {name = \"b\", init = zeros} : f32[16]\n"
                 "%m = matmul %x, %w : f32[4, 16]\n"
                 "%c = add %b, %m : f32[4, 16]\n"
                 "%r = add %c, %z : f32[4, 16]\n"
                 "%g = relu %r : f32[4, 16]\n"
                 "%n = neg %g : f32[4, 16]\n"
                 "output \"n\" = %n\n");
    const pass_fgroup *g = group(&r, "m");
    CHECK(g && g->kind == PASS_FUSE_MATMUL);
    if (g) {
        CHECK_INT(g->epilogue, PASS_EPI_BIAS | PASS_EPI_RESIDUAL | PASS_EPI_RELU);
        CHECK_INT(g->nops, 4);
        CHECK_INT(g->reduce, op_index(&r, "m"));
        CHECK_INT(g->anchor, op_index(&r, "g"));
        CHECK(g->bias && !strcmp(g->bias->name, "b"));
        CHECK(g->residual && !strcmp(g->residual->name, "z"));
        CHECK_STR(names(g->in, g->nin), "x w b z");
        CHECK_STR(names(g->out, g->nout), "g");
        CHECK(pass_fuse_op_role(g, op_index(&r, "m")) == PASS_FUSE_MAIN);
        CHECK(pass_fuse_op_role(g, op_index(&r, "r")) == PASS_FUSE_EPILOGUE);
    }
    CHECK(!stored(&r, "m") && !stored(&r, "c") && !stored(&r, "r") && stored(&r, "g"));
    CHECK(group(&r, "n") && group(&r, "n")->kind == PASS_FUSE_ELEMENTWISE);
    char buf[64];
    CHECK_STR(pass_fuse_epilogue_str(PASS_EPI_BIAS | PASS_EPI_GELU, buf, sizeof buf),
              "bias, gelu");
    done(&r);
}

/* A concat joins an elementwise group with its branches (fuse.c's
 * find_views): RoPE's rotate-half, its narrows and neg, one kernel with
 * the muls and the add around it, which reads x, c and s and stores y
 * alone; a reduction after it starts a group of its own, so y is stored
 * for it. A branch value also read elsewhere (%ng2, an output) stays
 * out, a group of its own, stored; so does a narrow with an all_reduce
 * between it and the concat (%far), which keeps its own kernel. */
static void test_views(void)
{
    run r = fuse("mesh tp = 2\n"
                 "partitioned\n"
                 "%x = input {name = \"x\"} : f32[2, 4, 8]\n"
                 "%c = input {name = \"c\"} : f32[4, 8]\n"
                 "%s = input {name = \"s\"} : f32[4, 8]\n"
                 "%z = input {name = \"z\"} : f32[8]\n"
                 "%m = mul %x, %c : f32[2, 4, 8]\n"
                 "%hi = narrow %x {dim = 2, offset = 4, bound = 8} : f32[2, 4, 4]\n"
                 "%ng = neg %hi : f32[2, 4, 4]\n"
                 "%lo = narrow %x {dim = 2, offset = 0, bound = 4} : f32[2, 4, 4]\n"
                 "%rot = concat %ng, %lo {dim = 2} : f32[2, 4, 8]\n"
                 "%t = mul %rot, %s : f32[2, 4, 8]\n"
                 "%y = add %m, %t : f32[2, 4, 8]\n"
                 "%sm = sum %y {axis = 2, keepdims = false} : f32[2, 4]\n"
                 "%lo2 = narrow %x {dim = 2, offset = 0, bound = 4} : f32[2, 4, 4]\n"
                 "%hi2 = narrow %x {dim = 2, offset = 4, bound = 8} : f32[2, 4, 4]\n"
                 "%ng2 = neg %hi2 : f32[2, 4, 4]\n"
                 "%rot2 = concat %lo2, %ng2 {dim = 2} : f32[2, 4, 8]\n"
                 "%far = narrow %c {dim = 0, offset = 0, bound = 2} : f32[2, 8]\n"
                 "%ar = all_reduce %z {axes = [tp]} : f32[8]\n"
                 "%near = narrow %c {dim = 0, offset = 2, bound = 4} : f32[2, 8]\n"
                 "%cc = concat %far, %near {dim = 0} : f32[4, 8]\n"
                 "output \"sm\" = %sm\n"
                 "output \"rot2\" = %rot2\n"
                 "output \"ng2\" = %ng2\n"
                 "output \"cc\" = %cc\n"
                 "output \"ar\" = %ar\n");
    const pass_fgroup *g = group(&r, "y");
    CHECK(g && g->kind == PASS_FUSE_ELEMENTWISE && pass_fuse_views(r.m, g));
    const char *in_g[] = {"m", "hi", "ng", "lo", "rot", "t"};
    for (size_t i = 0; i < sizeof in_g / sizeof in_g[0]; i++) {
        CHECK(group(&r, in_g[i]) == g);
        CHECK(!stored(&r, in_g[i]));
    }
    if (g) {
        CHECK_INT(g->nops, 7);
        CHECK_STR(names(g->in, g->nin), "x c s");
        CHECK_STR(names(g->out, g->nout), "y");
    }
    CHECK(stored(&r, "y"));
    CHECK(group(&r, "sm") && group(&r, "sm") != g && group(&r, "sm")->kind == PASS_FUSE_REDUCE);
    /* %ng2 is an output too: no branch, a group of its own, stored (and
     * %hi2, which it alone reads, a narrow's own kernel) */
    const pass_fgroup *g2 = group(&r, "rot2");
    CHECK(g2 && g2 != g && pass_fuse_views(r.m, g2));
    CHECK(group(&r, "lo2") == g2 && !stored(&r, "lo2"));
    CHECK(group(&r, "ng2") && group(&r, "ng2") != g2 && stored(&r, "ng2"));
    CHECK(group(&r, "hi2") == NULL);
    /* the all_reduce between %far and %cc keeps %far out */
    CHECK(group(&r, "far") == NULL);
    CHECK(group(&r, "near") && group(&r, "near") == group(&r, "cc"));
    CHECK(group(&r, "sm") && !pass_fuse_views(r.m, group(&r, "sm")));
    /* which ops the kernel computes at other elements than its own */
    const char *aside[] = {"hi", "ng", "lo", "rot"}, *own[] = {"m", "t", "y"};
    for (size_t i = 0; g && i < 4; i++)
        CHECK(pass_fuse_op_aside(r.m, g, op_index(&r, aside[i])));
    for (size_t i = 0; g && i < 3; i++)
        CHECK(!pass_fuse_op_aside(r.m, g, op_index(&r, own[i])));
    done(&r);

    /* RoPE's gradient: each narrow's padded with zeros, the pads added;
     * %u, which the narrows read, is computed again at their elements */
    r = fuse("%d = input {name = \"d\"} : f32[2, 4, 8]\n"
             "%s = input {name = \"s\"} : f32[4, 8]\n"
             "%c = input {name = \"c\"} : f32[4, 8]\n"
             "%u = mul %d, %s : f32[2, 4, 8]\n"
             "%a = narrow %u {dim = 2, offset = 0, bound = 4} : f32[2, 4, 4]\n"
             "%b = narrow %u {dim = 2, offset = 4, bound = 8} : f32[2, 4, 4]\n"
             "%z = const {value = 0.0} : f32[]\n"
             "%zp = expand %z {shape = [2, 4, 4]} : f32[2, 4, 4]\n"
             "%p1 = concat %b, %zp {dim = 2} : f32[2, 4, 8]\n"
             "%na = neg %a : f32[2, 4, 4]\n"
             "%z2 = const {value = 0.0} : f32[]\n"
             "%zq = expand %z2 {shape = [2, 4, 4]} : f32[2, 4, 4]\n"
             "%p2 = concat %zq, %na {dim = 2} : f32[2, 4, 8]\n"
             "%sum = add %p1, %p2 : f32[2, 4, 8]\n"
             "%dc = mul %d, %c : f32[2, 4, 8]\n"
             "%dx = add %sum, %dc : f32[2, 4, 8]\n"
             "output \"dx\" = %dx\n");
    g = group(&r, "dx");
    CHECK_INT(r.f.ngroups, 1);
    if (g) {
        CHECK_STR(names(g->in, g->nin), "d s c");
        CHECK_STR(names(g->out, g->nout), "dx");
        CHECK(pass_fuse_op_aside(r.m, g, op_index(&r, "u")));
        CHECK(pass_fuse_op_aside(r.m, g, op_index(&r, "zp")));
        CHECK(!pass_fuse_op_aside(r.m, g, op_index(&r, "sum")));
        CHECK(!pass_fuse_op_aside(r.m, g, op_index(&r, "dc")));
    }
    done(&r);
}

/* A transpose that keeps its last dim last joins the elementwise group
 * that reads it (its kernel reads the operand where each element comes
 * from); alone it keeps its own kernel (16-byte words), as does one that
 * moves the last dim (a tiled kernel) and one a reduction reads. */
static void test_transpose_member(void)
{
    run r = fuse("%a = input {name = \"a\"} : f32[2, 3, 4]\n"
                 "%b = input {name = \"b\"} : f32[3, 2, 4]\n"
                 "%t = transpose %a {perm = [1, 0, 2]} : f32[3, 2, 4]\n"
                 "%y = add %t, %b : f32[3, 2, 4]\n"
                 "%u = transpose %a {perm = [1, 0, 2]} : f32[3, 2, 4]\n"
                 "%w = transpose %a {perm = [0, 2, 1]} : f32[2, 4, 3]\n"
                 "%wn = neg %w : f32[2, 4, 3]\n"
                 "%v = transpose %b {perm = [1, 0, 2]} : f32[2, 3, 4]\n"
                 "%s = sum %v {axis = 2, keepdims = false} : f32[2, 3]\n"
                 "output \"y\" = %y\n"
                 "output \"u\" = %u\n"
                 "output \"wn\" = %wn\n"
                 "output \"s\" = %s\n");
    const pass_fgroup *g = group(&r, "y");
    CHECK(g && g == group(&r, "t") && pass_fuse_views(r.m, g));
    CHECK(!stored(&r, "t") && stored(&r, "y"));
    if (g) {
        CHECK_STR(names(g->in, g->nin), "a b");
        CHECK(pass_fuse_op_aside(r.m, g, op_index(&r, "t")));
        CHECK(!pass_fuse_op_aside(r.m, g, op_index(&r, "y")));
    }
    CHECK(group(&r, "u") == NULL && group(&r, "w") == NULL && group(&r, "v") == NULL);
    CHECK(group(&r, "wn") && group(&r, "wn") != g);
    CHECK(group(&r, "s") && group(&r, "s")->kind == PASS_FUSE_REDUCE && group(&r, "s")->nops == 1);
    done(&r);

    /* a transpose of a value of the group: stored where it moves each
     * element, the group's domain its operand's; the operand is stored
     * too only where something else reads it */
    r = fuse("%a = input {name = \"a\"} : f32[2, 3, 4]\n"
             "%e = exp %a : f32[2, 3, 4]\n"
             "%f = neg %e : f32[2, 3, 4]\n"
             "%et = transpose %f {perm = [1, 0, 2]} : f32[3, 2, 4]\n"
             "%g = sqrt %a : f32[2, 3, 4]\n"
             "%gt = transpose %g {perm = [2, 1, 0]} : f32[4, 3, 2]\n"
             "%h = abs %a : f32[2, 3, 4]\n"
             "%ht = transpose %h {perm = [1, 0, 2]} : f32[3, 2, 4]\n"
             "output \"et\" = %et\n"
             "output \"gt\" = %gt\n"
             "output \"ht\" = %ht\n"
             "output \"h\" = %h\n");
    g = group(&r, "et");
    CHECK(g && g == group(&r, "e") && g == group(&r, "f") && pass_fuse_views(r.m, g));
    if (g) {
        CHECK_INT(g->anchor, op_index(&r, "et"));
        const ir_type *d = pass_fuse_domain(r.m, g);
        CHECK(d->rank == 3 && d->dim[0] == 2 && d->dim[1] == 3 && d->dim[2] == 4);
        CHECK_STR(names(g->out, g->nout), "et");
    }
    CHECK(!stored(&r, "e") && !stored(&r, "f") && stored(&r, "et"));
    /* moving the last dim: its own tiled kernel, the operand stored */
    CHECK(group(&r, "gt") == NULL && stored(&r, "g"));
    CHECK(group(&r, "ht") && group(&r, "ht") == group(&r, "h") && stored(&r, "h") &&
          stored(&r, "ht"));
    done(&r);
}

/* cg_cuda_generate_known: a kernel whose key an earlier one of the call
 * had, or that the callback knows, gets no source, and otherwise what
 * cg_cuda_generate gives it: its name, key, geometry and parameters. */
static int known_calls;
static const char *known_key;
static bool knows(void *ctx, const char *key, uint64_t hash)
{
    (void)ctx;
    known_calls++;
    CHECK(hash == cg_cuda_key_hash(key));
    return known_key && !strcmp(key, known_key);
}

static void test_generate_known(void)
{
    run r = fuse("%a = input {name = \"a\"} : f32[64, 32] auto(_, _)\n"
                 "%b = input {name = \"b\"} : f32[64, 32] auto(_, _)\n"
                 "%0 = mul %a, %a : f32[64, 32] auto(_, _)\n"
                 "%1 = add %0, %a : f32[64, 32] auto(_, _)\n"
                 "%2 = mul %b, %b : f32[64, 32] auto(_, _)\n"
                 "%3 = add %2, %b : f32[64, 32] auto(_, _)\n"
                 "%t = transpose %1 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 "%u = transpose %3 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 "output \"t\" = %t\n"
                 "output \"u\" = %u\n");
    su_buf err;
    su_buf_init(&err, &oom);
    cg_cuda plain, k1, k2;
    CHECK(cg_cuda_generate(r.m, &r.f, &plain, &err));
    CHECK(cg_cuda_generate_known(r.m, &r.f, &k1, &err, knows, NULL));
    CHECK_INT(plain.nkernels, 4);
    CHECK_INT(k1.nkernels, 4);
    if (plain.nkernels == 4 && k1.nkernels == 4) {
        CHECK(!strcmp(plain.k[0].key, plain.k[1].key) && !strcmp(plain.k[2].key, plain.k[3].key));
        CHECK(strcmp(plain.k[0].key, plain.k[2].key) != 0);
        for (int i = 0; i < 4; i++) {
            const cg_cuda_kernel *a = &plain.k[i], *b = &k1.k[i];
            CHECK(a->source != NULL);
            CHECK((b->source != NULL) == (i == 0 || i == 2)); /* the first of each key */
            CHECK_STR(b->name, a->name);
            CHECK_STR(b->key, a->key);
            CHECK(b->key_hash == a->key_hash && a->key_hash == cg_cuda_key_hash(a->key));
            CHECK(b->strategy == a->strategy && b->grid == a->grid && b->block == a->block &&
                  b->shared_bytes == a->shared_bytes && b->nparams == a->nparams &&
                  b->group == a->group && b->op == a->op);
            for (int j = 0; j < a->nparams && j < b->nparams; j++)
                CHECK(a->params[j] == b->params[j]);
            if (b->source)
                CHECK_STR(b->source, a->source);
        }
        CHECK_INT(known_calls, 2); /* once per new key */
        /* a key the callback knows (a module made it): no source either */
        known_key = plain.k[2].key;
        CHECK(cg_cuda_generate_known(r.m, &r.f, &k2, &err, knows, NULL));
        CHECK(k2.k[0].source != NULL && k2.k[2].source == NULL && k2.k[3].source == NULL);
        cg_cuda_free(&k2);
    }
    cg_cuda_free(&plain);
    cg_cuda_free(&k1);
    su_buf_free(&err);
    pass_fusion_free(&r.f);
    ir_module_free(r.m);
}

/* cg_cuda_generate_known's kernels taken for their structure: each is
 * what cg_cuda_generate gives it (name, key, geometry, parameters), with a
 * source only where its key is new to the call, among groups and ops that
 * differ from the first only in their operands' order, in an input read
 * twice where it reads two, in a value stored as well, in a dtype or in a
 * transpose's shape, and two reading each a constant; attentions of
 * three values and of one. */
static void test_generate_same(void)
{
    run r = fuse("%a = input {name = \"a\"} : f32[64, 32] auto(_, _)\n"
                 "%b = input {name = \"b\"} : f32[64, 32] auto(_, _)\n"
                 "%c = input {name = \"c\"} : f32[64, 32] auto(_, _)\n"
                 "%h = input {name = \"h\"} : bf16[64, 32] auto(_, _)\n"
                 "%g = input {name = \"g\"} : bf16[64, 32] auto(_, _)\n"
                 "%q = input {name = \"q\"} : f32[32, 32] auto(_, _)\n"
                 "%two = const {value = 2.0} : f32[]\n"
                 "%three = const {value = 3.0} : f32[]\n"
                 /* the first group, and its twin on b and c */
                 "%0 = mul %a, %b : f32[64, 32] auto(_, _)\n"
                 "%1 = sub %0, %a : f32[64, 32] auto(_, _)\n"
                 "%t0 = transpose %1 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 "%2 = mul %b, %c : f32[64, 32] auto(_, _)\n"
                 "%3 = sub %2, %b : f32[64, 32] auto(_, _)\n"
                 "%t1 = transpose %3 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 /* the sub's operands the other way round */
                 "%4 = mul %a, %b : f32[64, 32] auto(_, _)\n"
                 "%5 = sub %a, %4 : f32[64, 32] auto(_, _)\n"
                 "%t2 = transpose %5 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 /* one input read twice where the first reads two */
                 "%6 = mul %a, %a : f32[64, 32] auto(_, _)\n"
                 "%7 = sub %6, %a : f32[64, 32] auto(_, _)\n"
                 "%t3 = transpose %7 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 /* the product stored as well */
                 "%8 = mul %b, %c : f32[64, 32] auto(_, _)\n"
                 "%9 = sub %8, %b : f32[64, 32] auto(_, _)\n"
                 "%t4 = transpose %9 {perm = [1, 0]} : f32[32, 64] auto(_, _)\n"
                 /* bf16 */
                 "%10 = mul %h, %g : bf16[64, 32] auto(_, _)\n"
                 "%11 = sub %10, %h : bf16[64, 32] auto(_, _)\n"
                 "%t5 = transpose %11 {perm = [1, 0]} : bf16[32, 64] auto(_, _)\n"
                 /* two constants, each its kernel's literal */
                 "%12 = mul %a, %two : f32[64, 32] auto(_, _)\n"
                 "%13 = sub %12, %a : f32[64, 32] auto(_, _)\n"
                 "%14 = mul %b, %three : f32[64, 32] auto(_, _)\n"
                 "%15 = sub %14, %b : f32[64, 32] auto(_, _)\n"
                 /* a transpose of another shape */
                 "%t6 = transpose %q {perm = [1, 0]} : f32[32, 32] auto(_, _)\n"
                 /* attention of three values, then of one value three times */
                 "%x0 = attention %q, %t6, %q {causal = false} : f32[32, 32] auto(_, _)\n"
                 "%x1 = attention %t6, %t6, %t6 {causal = false} : f32[32, 32] auto(_, _)\n"
                 "%x2 = attention %q, %x0, %q {causal = false} : f32[32, 32] auto(_, _)\n"
                 "output \"x1\" = %x1\n"
                 "output \"x2\" = %x2\n"
                 "output \"t0\" = %t0\n"
                 "output \"t1\" = %t1\n"
                 "output \"t2\" = %t2\n"
                 "output \"t3\" = %t3\n"
                 "output \"p\" = %8\n"
                 "output \"t4\" = %t4\n"
                 "output \"t5\" = %t5\n"
                 "output \"u\" = %13\n"
                 "output \"v\" = %15\n"
                 "output \"t6\" = %t6\n");
    su_buf err;
    su_buf_init(&err, &oom);
    cg_cuda plain, k1;
    known_calls = 0;
    known_key = NULL;
    CHECK(cg_cuda_generate(r.m, &r.f, &plain, &err));
    CHECK(cg_cuda_generate_known(r.m, &r.f, &k1, &err, knows, NULL));
    CHECK_INT(plain.nkernels, 18);
    CHECK_INT(k1.nkernels, plain.nkernels);
    int distinct = 0;
    for (int i = 0; i < plain.nkernels && i < k1.nkernels; i++) {
        const cg_cuda_kernel *a = &plain.k[i], *b = &k1.k[i];
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen = seen || !strcmp(plain.k[j].key, a->key);
        distinct += !seen;
        CHECK((b->source != NULL) == !seen);
        CHECK_STR(b->name, a->name);
        CHECK_STR(b->key, a->key);
        CHECK(b->key_hash == a->key_hash);
        CHECK(b->strategy == a->strategy && b->grid == a->grid && b->block == a->block &&
              b->shared_bytes == a->shared_bytes && b->vec == a->vec &&
              b->nparams == a->nparams && b->group == a->group && b->op == a->op);
        for (int j = 0; j < a->nparams && j < b->nparams; j++)
            CHECK(a->params[j] == b->params[j]);
    }
    /* the twin group, four transposes of the first's shape and the third
     * attention take an earlier kernel's code; the other groups (the two
     * constants' too: each kernel writes its constant as a literal, 2.0f
     * and 3.0f), the bf16 transpose, the square one and the attention of
     * one value are made */
    CHECK_INT(k1.nsame, 6);
    CHECK_INT(known_calls, distinct);
    cg_cuda_free(&plain);
    cg_cuda_free(&k1);
    su_buf_free(&err);
    done(&r);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_fuse: out of memory\n");
        return 1;
    }
    test_chain();
    test_read_outside();
    test_reductions();
    test_epilogue_reads_prologue();
    test_merge();
    test_never_fused();
    test_phases();
    test_hold();
    test_matmul_epilogue();
    test_views();
    test_transpose_member();
    test_timeline_parts();
    test_multi_tensor();
    test_multi_period();
    test_timeline_fusion();
    test_walk_reused();
    test_generate_known();
    test_generate_same();
    check_example("mlp.sh", "1x1");
    check_example("mlp.sh", "2x2");
    check_example("transformer.sh", "2x2");
    check_example("transformer.sh", "4x2");
    check_example("pipeline.sh", "2x2x2");
    check_example("llama.sh", "1x1"); /* clip's norm: TOTAL groups, through renames */
    check_example("llama.sh", "2x2");
    check_example("moe.sh", "2x2");
    test_stages_at_once();
    test_register_reuse();
    return CHECK_DONE();
}
