/* test_irtext.c: the textual IR (ir/print.c, ir/parse.c). Modules built
 * with the builder cover every op, attribute kind, sharding form, pipeline
 * schedule and optimizer, and colliding names; each must survive
 * print -> parse -> print byte for byte. Handwritten texts must print back
 * as written, malformed ones must give the exact first diagnostic line, and
 * damaged texts must never crash the parser. */
#include "../../ir/ir.h"
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf oom;

/* ---- building ---- */

static ir_type T(ir_dtype dt, int rank, ...)
{
    ir_type t = {.dtype = dt, .rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        t.dim[i] = va_arg(ap, int);
    va_end(ap);
    return t;
}

static ir_value *source(ir_module *m, ir_opcode code, const char *name, ir_init init, ir_type t)
{
    ir_attrs a = {.name = name ? su_strdup(&m->arena, name) : NULL, .init = init};
    return ir_append(m, code, NULL, 0, &a, &t)->res[0];
}

static ir_value *constant(ir_module *m, double value)
{
    ir_attrs a = {.value = value};
    ir_type t = T(IR_F32, 0);
    return ir_append(m, IR_CONST, NULL, 0, &a, &t)->res[0];
}

/* code applied to nin operands (after the count), with attributes a. */
static ir_value *emit(ir_module *m, ir_opcode code, ir_attrs a, int nin, ...)
{
    ir_value *in[8];
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++)
        in[i] = va_arg(ap, ir_value *);
    va_end(ap);
    char err[256];
    ir_value *v = ir_emit(m, code, in, nin, &a, err, sizeof err);
    if (!v) {
        fprintf(stderr, "test_irtext: cannot build %s: %s\n", ir_ops[code].name, err);
        abort();
    }
    return v;
}

static ir_attrs NOATTRS;

static void name(ir_module *m, ir_value *v, const char *s) { v->name = su_strdup(&m->arena, s); }

static void sharding(ir_value *v, ir_sh_kind kind, unsigned partial)
{
    v->sh.kind = (uint8_t)kind;
    v->sh.partial = (uint16_t)partial;
}

/* Appends mesh axis a to the axes splitting dim d. */
static void split(ir_value *v, int d, int a) { v->sh.axes[d][v->sh.naxes[d]++] = (uint8_t)a; }

static void mesh(ir_module *m, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        m->mesh.name[i] = va_arg(ap, const char *);
        m->mesh.size[i] = va_arg(ap, int);
    }
    va_end(ap);
    m->mesh.naxes = n;
}

/* ---- checking ---- */

static char *print(const ir_module *m)
{
    su_buf b;
    su_buf_init(&b, &oom);
    ir_print(m, &b);
    return su_buf_take(&b);
}

/* Parses text; NULL with the diagnostic's first line in first (when given). */
static ir_module *parse(const char *text, char first[512])
{
    su_src src = {"t.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    ir_module *m = ir_parse(&src, &d, &oom);
    if (first) {
        const char *s = d.msg.s ? d.msg.s : "";
        size_t n = strcspn(s, "\n");
        snprintf(first, 512, "%.*s", (int)n, s);
    } else if (!m)
        fprintf(stderr, "%s", d.msg.s);
    su_diag_free(&d);
    return m;
}

/* The text parses, and prints back byte for byte. */
static void check_reprint(const char *text)
{
    ir_module *m = parse(text, NULL);
    CHECK(m != NULL);
    if (!m)
        return;
    char *again = print(m);
    CHECK_STR(again, text);
    free(again);
    ir_module_free(m);
}

/* print(parse(print(m))) == print(m); returns print(m) (free it). */
static char *check_roundtrip(const ir_module *m)
{
    char *text = print(m);
    check_reprint(text);
    return text;
}

static void check_error(const char *text, const char *want)
{
    char first[512];
    ir_module *m = parse(text, first);
    CHECK(m == NULL);
    ir_module_free(m);
    CHECK_STR(first, want);
    if (strcmp(first, want))
        fprintf(stderr, "  for the text:\n%s", text);
}

/* ---- modules ---- */

/* Every op and attribute kind, every sharding form, escapes, adamw. */
static ir_module *all_ops(void)
{
    ir_module *m = ir_module_new(&oom);
    mesh(m, 2, "dp", 2, "tp", 4);
    m->partitioned = true; /* it holds collectives */
    ir_value *x = source(m, IR_INPUT, "x", (ir_init){0}, T(IR_F32, 2, 8, 16));
    sharding(x, IR_SH_FIXED, 0);
    split(x, 0, 0);
    ir_value *w = source(m, IR_PARAM, "layers.0.w1", (ir_init){IR_INIT_NORMAL, 0.02, 0},
                         T(IR_F32, 2, 16, 32));
    sharding(w, IR_SH_FIXED, 0);
    split(w, 1, 1);
    ir_value *w2 = source(m, IR_PARAM, "w2", (ir_init){IR_INIT_UNIFORM, -0.1, 0.1},
                          T(IR_F32, 2, 32, 16));
    ir_value *g = source(m, IR_PARAM, "g", (ir_init){IR_INIT_ONES, 0, 0}, T(IR_F32, 1, 16));
    ir_value *b = source(m, IR_PARAM, "b", (ir_init){IR_INIT_ZEROS, 0, 0}, T(IR_F32, 1, 16));
    ir_value *e = source(m, IR_PARAM, "emb", (ir_init){IR_INIT_NONE, 0, 0}, T(IR_F32, 2, 10, 16));
    ir_value *ids = source(m, IR_INPUT, "ids \"q\" \\ \x01\xc3\xa9", (ir_init){0}, T(IR_I32, 1, 8));
    ir_value *c = constant(m, 0.5);
    constant(m, -0.0);
    constant(m, 1e-300);
    constant(m, 3.141592653589793);
    constant(m, INFINITY);

    ir_value *h = emit(m, IR_MATMUL, NOATTRS, 2, x, w);
    sharding(h, IR_SH_AUTO, 0);
    split(h, 0, 0);
    split(h, 1, 1);
    h = emit(m, IR_MATMUL, NOATTRS, 2, h, w2);
    /* operands read transposed (passes/fold.c): trans = a, b, ab */
    emit(m, IR_MATMUL, (ir_attrs){.trans = IR_TRANS_A}, 2, w2, w2);
    emit(m, IR_MATMUL, (ir_attrs){.trans = IR_TRANS_B}, 2, w2, w2);
    ir_value *w2t = emit(m, IR_TRANSPOSE, (ir_attrs){.nlist = 2, .list = {1, 0}}, 1, w2);
    emit(m, IR_MATMUL, (ir_attrs){.trans = IR_TRANS_A | IR_TRANS_B}, 2, w2, w2t);
    /* f32 matmuls as bf16 parts (passes/parts.c) */
    ir_value *pa = emit(m, IR_SPLIT3, (ir_attrs){.dim = 1}, 1, w2);
    ir_value *pb = emit(m, IR_SPLIT3, (ir_attrs){.dim = 1, .reversed = true}, 1, w2);
    emit(m, IR_MATMUL, (ir_attrs){.trans = IR_TRANS_B, .parts = true}, 2, pa, pb);
    sharding(h, IR_SH_AUTO, 0);
    split(h, 0, 0);
    split(h, 0, 1); /* tuple dim: (dp, tp) */
    static const ir_opcode binary[] = {IR_ADD, IR_SUB, IR_MUL, IR_DIV, IR_MAX, IR_MIN, IR_POW};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
        h = emit(m, binary[i], NOATTRS, 2, h, i % 2 ? c : x);
    for (int op = IR_NEG; op <= IR_COS; op++)
        h = emit(m, (ir_opcode)op, NOATTRS, 1, h);
    h = emit(m, IR_STOP_GRADIENT, NOATTRS, 1, h);
    ir_value *cast = emit(m, IR_CAST, (ir_attrs){.dtype = IR_BF16}, 1, h);
    emit(m, IR_CAST, (ir_attrs){.dtype = IR_F16}, 1, cast);
    ir_value *att = emit(m, IR_ATTENTION, (ir_attrs){.causal = true}, 3, h, x, x);
    emit(m, IR_ATTENTION, (ir_attrs){.causal = false}, 3, h, x, x);
    /* the query positions of queries split along S: attention's fourth operand */
    ir_value *pos = emit(m, IR_IOTA, (ir_attrs){.nlist = 1, .list = {8}}, 0);
    emit(m, IR_ATTENTION, (ir_attrs){.causal = true}, 4, h, x, x, pos);

    ir_value *s = emit(m, IR_SUM, (ir_attrs){.axis = 1}, 1, att);
    sharding(s, IR_SH_AUTO, 1u << 1); /* auto(dp) partial(tp) */
    split(s, 0, 0);
    ir_value *mean = emit(m, IR_MEAN, (ir_attrs){.axis = 0, .keepdims = true}, 1, att);
    sharding(mean, IR_SH_FIXED, 3); /* shard(_, _) partial(dp, tp) */
    emit(m, IR_AMAX, (ir_attrs){.axis = 1, .keepdims = false}, 1, att);
    emit(m, IR_SOFTMAX, (ir_attrs){.axis = 1}, 1, att);
    emit(m, IR_LAYERNORM, (ir_attrs){.eps = 1e-5}, 3, att, g, b);
    emit(m, IR_RMSNORM, (ir_attrs){.eps = 1e-6}, 2, att, g);
    ir_value *rowm = emit(m, IR_MEAN, (ir_attrs){.axis = 1, .keepdims = true}, 1, att);
    emit(m, IR_LAYERNORM_DX, NOATTRS, 5, att, att, rowm, rowm, g);
    emit(m, IR_RMSNORM_DX, NOATTRS, 4, att, att, rowm, g);
    emit(m, IR_LAYERNORM_RSTD, (ir_attrs){.eps = 1e-5}, 1, att);
    emit(m, IR_RMSNORM_RSTD, (ir_attrs){.eps = 1e-6}, 1, att);
    ir_value *con = emit(m, IR_CONSTRAIN, NOATTRS, 1, att);
    sharding(con, IR_SH_FIXED, 0);
    split(con, 1, 1);
    split(con, 1, 0); /* shard(_, (tp, dp)) */
    emit(m, IR_TRANSPOSE, (ir_attrs){.nlist = 2, .list = {1, 0}}, 1, att);
    emit(m, IR_RESHAPE, (ir_attrs){.nlist = 3, .list = {4, 2, 16}}, 1, att);
    ir_value *nar = emit(m, IR_NARROW, (ir_attrs){.dim = 1, .offset = 2, .bound = 5}, 1, att);
    emit(m, IR_CONCAT, (ir_attrs){.dim = 1}, 3, att, nar, att)->def->recompute = 2;
    ir_value *logits = emit(m, IR_EMBEDDING, NOATTRS, 2, e, ids);
    emit(m, IR_MSE, NOATTRS, 2, att, x);
    ir_value *loss = emit(m, IR_XENT, NOATTRS, 2, logits, ids);
    sharding(loss, IR_SH_AUTO, 0); /* auto() of a scalar */

    emit(m, IR_ALL_REDUCE, (ir_attrs){.naxes = 1, .axes = {1}}, 1, att);
    emit(m, IR_ALL_REDUCE, (ir_attrs){.naxes = 1, .axes = {1}, .reduce = IR_RED_MAX}, 1, att);
    emit(m, IR_IOTA, (ir_attrs){.nlist = 1, .list = {16}}, 0);
    emit(m, IR_REDUCE_SCATTER, (ir_attrs){.dim = 0, .naxes = 1, .axes = {0}}, 1, att);
    emit(m, IR_ALL_GATHER, (ir_attrs){.dim = 1, .naxes = 2, .axes = {0, 1}}, 1, att);
    emit(m, IR_ALL_TO_ALL, (ir_attrs){.dim = 0, .dim2 = 1, .naxes = 1, .axes = {1}}, 1, att);
    emit(m, IR_BROADCAST, (ir_attrs){.naxes = 1, .axes = {0}}, 1, att);
    emit(m, IR_SLICE, (ir_attrs){.dim = 0, .naxes = 1, .axes = {0}}, 1, att);
    /* a gradient bucket: [2, 600] holds att (2 x 256 columns) at column 8 */
    ir_value *bk = emit(m, IR_EXPAND, (ir_attrs){.nlist = 2, .list = {2, 600}}, 1, c);
    bk = emit(m, IR_INSERT, (ir_attrs){.offset = 8}, 2, bk, att);
    emit(m, IR_EXTRACT, (ir_attrs){.offset = 8, .nlist = 3, .list = {2, 32, 8}}, 1, bk);

    /* training: autodiff's ops, states, the optimizer, phases, updates */
    ir_value *st = source(m, IR_STATE, "opt.w2.m", (ir_init){IR_INIT_ZEROS, 0, 0},
                          T(IR_F32, 2, 32, 16));
    ir_value *step = source(m, IR_STATE, "opt.step", (ir_init){IR_INIT_ZEROS, 0, 0}, T(IR_F32, 0));
    emit(m, IR_GT, NOATTRS, 2, att, c);
    emit(m, IR_EQ, NOATTRS, 2, att, c);
    emit(m, IR_GELU_GRAD, NOATTRS, 2, att, att);
    /* comparisons: bool results; where picks by one */
    ir_value *cmp = NULL;
    for (int op = IR_LESS; op <= IR_NOT_EQUAL; op++)
        cmp = emit(m, (ir_opcode)op, NOATTRS, 2, att, c);
    emit(m, IR_WHERE, NOATTRS, 3, cmp, att, c);
    emit(m, IR_CAST, (ir_attrs){.dtype = IR_BOOL}, 1, att);
    ir_value *key = emit(m, IR_CAST, (ir_attrs){.dtype = IR_I32}, 1, c);
    emit(m, IR_DROPOUT, (ir_attrs){.value = 0.25, .nlist = 2, .list = {8, 64}, .dim = 0,
                                   .offset = 4, .tag = 3}, 3, x, key, pos);
    emit(m, IR_SILU_GRAD, NOATTRS, 2, att, att);
    emit(m, IR_EXPAND, (ir_attrs){.nlist = 3, .list = {2, 8, 16}}, 1, att);
    emit(m, IR_ATTN_PROBS, (ir_attrs){.causal = true}, 2, h, x);
    emit(m, IR_ATTN_PROBS, (ir_attrs){.causal = true}, 3, h, x, pos);
    /* attention's backward, made by passes/attn_grad.c; dy = att */
    ir_value *ast = emit(m, IR_ATTN_STATS, (ir_attrs){.causal = true}, 5, h, x, x, att, pos);
    emit(m, IR_ATTN_STATS, (ir_attrs){.causal = false}, 4, h, x, x, att);
    emit(m, IR_ATTN_DQ, (ir_attrs){.causal = true}, 6, h, x, x, att, ast, pos);
    emit(m, IR_ATTN_DK, (ir_attrs){.causal = true}, 5, h, x, x, att, ast);
    emit(m, IR_ATTN_DV, (ir_attrs){.causal = false}, 4, h, x, att, ast);
    ir_value *lse = emit(m, IR_ATTN_LSE, (ir_attrs){.causal = true}, 3, h, x, pos);
    emit(m, IR_ATTN_LSE, (ir_attrs){.causal = false}, 2, h, x);
    emit(m, IR_ATTN_DELTA, (ir_attrs){0}, 3, att, att, lse);
    /* heads inner (passes/fold.c): [S, H, d] stored for [H, S, d] */
    ir_value *q3 = emit(m, IR_RESHAPE, (ir_attrs){.nlist = 3, .list = {8, 2, 8}}, 1, h);
    emit(m, IR_ATTENTION, (ir_attrs){.causal = true, .heads_inner = (uint8_t)ir_heads_all(IR_ATTENTION)}, 3, q3, q3, q3);
    emit(m, IR_EMBEDDING_GRAD, (ir_attrs){.nlist = 2, .list = {10, 16}}, 2, ids, att);
    emit(m, IR_XENT_GRAD, NOATTRS, 2, logits, ids);
    ir_value *xlse = emit(m, IR_XENT_LSE, NOATTRS, 1, logits);
    emit(m, IR_XENT_GRAD, NOATTRS, 3, logits, ids, xlse);
    ir_value *cid = emit(m, IR_CHECK_IDS, (ir_attrs){.bound = 10}, 1, ids);
    emit(m, IR_CHECK_LABELS, (ir_attrs){.bound = 16}, 1, cid);
    ir_value *mm = emit(m, IR_ADAM_M, (ir_attrs){.beta1 = 0.9}, 2, st, w2);
    mm->def->phase = IR_PH_BACKWARD;
    ir_value *vv = emit(m, IR_ADAM_V, (ir_attrs){.beta2 = 0.95}, 2, st, w2);
    ir_value *nw = emit(m, IR_ADAMW, (ir_attrs){.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95,
                                                 .eps = 1e-8, .wd = 0.1}, 4, w2, mm, vv, step);
    nw->def->phase = IR_PH_OPTIMIZER;
    emit(m, IR_MOMENTUM, (ir_attrs){.momentum = 0.9, .wd = 0.01}, 3, st, w2, w2);
    emit(m, IR_SGD, (ir_attrs){.lr = 0.1, .wd = 0}, 2, w2, st);
    ir_add_update(m, w2, nw, vv);
    ir_add_update(m, st, mm, NULL);

    ir_add_output(m, "out", att, (su_loc){0, 0});
    ir_add_output(m, "odd \"name\"\t\\", s, (su_loc){0, 0});
    m->train = (ir_train){.loss = loss, .opt = IR_OPT_ADAMW, .lr = 3e-4, .beta1 = 0.9,
                          .beta2 = 0.95, .eps = 1e-8, .wd = 0.1, .zero = 2, .zero_axis = 0};
    return m;
}

static void test_all_ops(void)
{
    ir_module *m = all_ops();
    bool seen[IR_NOPS] = {false};
    for (int i = 0; i < m->ops.n; i++)
        seen[IR_OP(m, i)->code] = true;
    for (int op = 0; op < IR_NOPS; op++) /* send and recv: tests/lit/ir/roundtrip-stage.ir */
        CHECK(seen[op] || ir_ops[op].cls == IR_C_P2P);
    char *text = check_roundtrip(m);
    CHECK(strstr(text, "{name = \"layers.0.w1\", init = normal(0.02)}") != NULL);
    CHECK(strstr(text, "state {name = \"opt.step\", init = zeros} : f32[]\n") != NULL);
    CHECK(strstr(text, " = adamw %") != NULL);
    CHECK(strstr(text, " {bound = 10} : i32[8]\n") != NULL);
    CHECK(strstr(text, " = not_equal %") != NULL && strstr(text, " : bool[") != NULL);
    CHECK(strstr(text, "{value = 0.25, shape = [8, 64], dim = 0, offset = 4, tag = 3} : f32[8, 16]") != NULL);
    CHECK(strstr(text, " {dim = 1} : f32[8, 35] recompute 2\n") != NULL);
    CHECK(strstr(text, "{eps = 1e-08, lr = 0.0003, beta1 = 0.9, beta2 = 0.95, wd = 0.1} : "
                       "f32[32, 16] phase optimizer\n") != NULL);
    CHECK(strstr(text, "{beta1 = 0.9} : f32[32, 16] phase backward\n") != NULL);
    CHECK(strstr(text, "\nupdate %") != NULL);
    CHECK(strstr(text, " grad %") != NULL);
    CHECK(strstr(text, "{name = \"w2\", init = uniform(-0.1, 0.1)}") != NULL);
    CHECK(strstr(text, "{name = \"ids \\\"q\\\" \\\\ \\x01\\xc3\\xa9\"}") != NULL);
    CHECK(strstr(text, "const {value = -0.0}") != NULL);
    CHECK(strstr(text, "const {value = inf}") != NULL);
    CHECK(strstr(text, " : f32[8, 16] auto((dp, tp), _)\n") != NULL);
    CHECK(strstr(text, "{axis = 1, keepdims = false} : f32[8] auto(dp) partial(tp)\n") != NULL);
    CHECK(strstr(text, "{axis = 0, keepdims = true} : f32[1, 16] shard(_, _) partial(dp, tp)\n") != NULL);
    CHECK(strstr(text, " : f32[8, 16] shard(_, (tp, dp))\n") != NULL);
    CHECK(strstr(text, "{eps = 1e-05}") != NULL);
    CHECK(strstr(text, "{perm = [1, 0]}") != NULL);
    CHECK(strstr(text, "{shape = [4, 2, 16]}") != NULL);
    CHECK(strstr(text, "{dtype = bf16}") != NULL);
    CHECK(strstr(text, "{causal = true}") != NULL);
    CHECK(strstr(text, "{dim = 0, dim2 = 1, axes = [tp]}") != NULL);
    CHECK(strstr(text, "{dim = 1, axes = [dp, tp]}") != NULL);
    CHECK(strstr(text, " : f32[] auto()\n") != NULL);
    CHECK(strstr(text, "output \"odd \\\"name\\\"\\x09\\\\\" = %") != NULL);
    CHECK(strstr(text, "\ntrain %") != NULL);
    CHECK(strstr(text, " with adamw(lr = 0.0003, beta1 = 0.9, beta2 = 0.95, eps = 1e-08, wd = 0.1) zero 2 over dp\n") != NULL);
    free(text);
    ir_module_free(m);
}

/* Repeated names get the smallest free suffix; unnamed values are numbered
 * in order; names the text cannot hold are numbered too. */
static void test_names(void)
{
    ir_module *m = ir_module_new(&oom);
    ir_value *x1 = source(m, IR_INPUT, "in", (ir_init){0}, T(IR_F32, 1, 4));
    name(m, x1, "x");
    ir_value *x2 = emit(m, IR_RELU, NOATTRS, 1, x1);
    name(m, x2, "x");
    ir_value *u = emit(m, IR_RELU, NOATTRS, 1, x2);
    ir_value *x3 = emit(m, IR_RELU, NOATTRS, 1, u);
    name(m, x3, "x.1");
    ir_value *x4 = emit(m, IR_RELU, NOATTRS, 1, x3);
    name(m, x4, "x");
    ir_value *bad = emit(m, IR_RELU, NOATTRS, 1, x4);
    name(m, bad, "9lives");
    ir_value *y = emit(m, IR_RELU, NOATTRS, 1, bad);
    name(m, y, "_y.");
    ir_add_output(m, "y", y, (su_loc){0, 0});
    char *text = check_roundtrip(m);
    CHECK_STR(text,
              "%x = input {name = \"in\"} : f32[4]\n"
              "%x.2 = relu %x : f32[4]\n"
              "%0 = relu %x.2 : f32[4]\n"
              "%x.1 = relu %0 : f32[4]\n"
              "%x.3 = relu %x.1 : f32[4]\n"
              "%1 = relu %x.3 : f32[4]\n"
              "%_y. = relu %1 : f32[4]\n"
              "output \"y\" = %_y.\n");
    free(text);
    ir_module_free(m);
}

/* Many values with one name stay linear (a quadratic search would crawl). */
static void test_many_names(void)
{
    ir_module *m = ir_module_new(&oom);
    ir_value *v = source(m, IR_INPUT, "in", (ir_init){0}, T(IR_F32, 1, 4));
    name(m, v, "x.5");
    for (int i = 0; i < 100000; i++) {
        v = emit(m, IR_NEG, NOATTRS, 1, v);
        if (i % 3)
            name(m, v, "x");
    }
    char *text = check_roundtrip(m);
    CHECK(strstr(text, "\n%x.4 = neg %2 : f32[4]\n%x.6 = neg %x.4 : f32[4]\n%3 = neg %x.6 :") != NULL);
    free(text);
    ir_module_free(m);
}

/* No mesh, sgd, no zero. */
static void test_sgd(void)
{
    ir_module *m = ir_module_new(&oom);
    ir_value *x = source(m, IR_INPUT, "x", (ir_init){0}, T(IR_F32, 2, 4, 3));
    ir_value *w = source(m, IR_PARAM, "w", (ir_init){IR_INIT_NORMAL, 1, 0}, T(IR_F32, 2, 3, 2));
    ir_value *y = source(m, IR_INPUT, "y", (ir_init){0}, T(IR_F32, 2, 4, 2));
    ir_value *loss = emit(m, IR_MSE, NOATTRS, 2, emit(m, IR_MATMUL, NOATTRS, 2, x, w), y);
    name(m, x, "x");
    name(m, w, "w");
    name(m, y, "y");
    name(m, loss, "loss");
    m->train = (ir_train){.loss = loss, .opt = IR_OPT_SGD, .lr = 0.01, .momentum = 0.9,
                          .zero_axis = -1};
    char *text = check_roundtrip(m);
    CHECK_STR(text,
              "%x = input {name = \"x\"} : f32[4, 3]\n"
              "%w = param {name = \"w\", init = normal(1.0)} : f32[3, 2]\n"
              "%y = input {name = \"y\"} : f32[4, 2]\n"
              "%0 = matmul %x, %w : f32[4, 2]\n"
              "%loss = mse %0, %y : f32[]\n"
              "train %loss with sgd(lr = 0.01, momentum = 0.9, wd = 0.0)\n");
    free(text);
    /* clip, after wd, only when set */
    m->train.clip = 1.5;
    text = check_roundtrip(m);
    CHECK(strstr(text, "train %loss with sgd(lr = 0.01, momentum = 0.9, wd = 0.0, clip = 1.5)\n") !=
          NULL);
    free(text);
    m->train.opt = IR_OPT_ADAMW;
    text = check_roundtrip(m);
    CHECK(strstr(text, ", wd = 0.0, clip = 1.5)\n") != NULL);
    free(text);
    /* the schedule, after clip or without it */
    m->train.warmup = 100, m->train.decay = IR_DECAY_COSINE, m->train.steps = 1000;
    m->train.min_lr = 1e-5;
    text = check_roundtrip(m);
    CHECK(strstr(text, ", wd = 0.0, clip = 1.5, warmup = 100, decay = cosine, steps = 1000, "
                       "min_lr = 1e-05)\n") != NULL);
    free(text);
    m->train.clip = 0, m->train.decay = IR_DECAY_LINEAR;
    text = check_roundtrip(m);
    CHECK(strstr(text, ", wd = 0.0, warmup = 100, decay = linear, ") != NULL);
    free(text);
    ir_module_free(m);
}

/* A pipeline with each schedule, ops with rep, sgd with zero. */
static void test_pipelines(void)
{
    static const char *const want[] = {"schedule gpipe\n", "schedule 1f1b\n",
                                       "schedule interleaved(2)\n"};
    for (int s = IR_SCHED_GPIPE; s <= IR_SCHED_INTERLEAVED; s++) {
        ir_module *m = ir_module_new(&oom);
        mesh(m, 2, "dp", 2, "pp", 2);
        m->pipe = (ir_pipeline){.axis = 1, .repeats = 4, .microbatches = 8,
                                .schedule = (ir_schedule)s,
                                .chunks = s == IR_SCHED_INTERLEAVED ? 2 : 1};
        ir_value *v = source(m, IR_INPUT, "x", (ir_init){0}, T(IR_F32, 2, 8, 8));
        for (int r = 0; r < 4; r++) {
            v = emit(m, IR_GELU, NOATTRS, 1, v);
            v->def->rep = r;
        }
        ir_value *loss = emit(m, IR_SUM, (ir_attrs){.axis = 0}, 1,
                              emit(m, IR_SUM, (ir_attrs){.axis = 0}, 1, v));
        m->train = (ir_train){.loss = loss, .opt = IR_OPT_SGD, .lr = 0.1, .zero = 1,
                              .zero_axis = 0};
        char *text = check_roundtrip(m);
        CHECK(strstr(text, "pipeline over pp repeats 4 microbatches 8 ") != NULL);
        CHECK(strstr(text, want[s]) != NULL);
        CHECK(strstr(text, "%4 = gelu %3 : f32[8, 8] rep 3\n") != NULL);
        CHECK(strstr(text, ") zero 1 over dp\n") != NULL);
        free(text);
        ir_module_free(m);
    }
}

static void test_empty(void)
{
    ir_module *m = ir_module_new(&oom);
    char *text = check_roundtrip(m);
    CHECK_STR(text, "");
    free(text);
    m->partitioned = true;
    text = check_roundtrip(m);
    CHECK_STR(text, "partitioned\n");
    free(text);
    ir_module_free(m);
}

/* ---- handwritten text ---- */

static const char handwritten[] =
    "mesh dp = 2, tp = 2, pp = 2\n"
    "partitioned\n"
    "pipeline over pp repeats 4 microbatches 4 schedule 1f1b\n"
    "%x = input {name = \"x\"} : f32[32, 1024] shard(dp, _)\n"
    "%w1 = param {name = \"w1\", init = normal(0.02)} : f32[1024, 2048] shard(_, tp)\n"
    "%0 = matmul %x, %w1 : f32[32, 2048]\n"
    "%s = sum %0 {axis = 1, keepdims = false} : f32[32] auto(dp) partial(tp)\n"
    "%r = all_reduce %s {axes = [tp]} : f32[32] auto(dp)\n"
    "%g = all_gather %r {dim = 0, axes = [dp]} : f32[64] auto(_)\n"
    "%y = gelu %0 : f32[32, 2048] rep 3\n"
    "%loss = mean %g {axis = 0, keepdims = false} : f32[]\n"
    "output \"out\" = %y\n"
    "output \"s\" = %r\n"
    "train %loss with adamw(lr = 0.0003, beta1 = 0.9, beta2 = 0.95, eps = 1e-08, wd = 0.1) zero 3 over dp\n";

static void test_handwritten(void)
{
    check_reprint(handwritten);
    /* Comments, blank lines, spacing, CRLF and arbitrary numbering go away. */
    ir_module *m = parse("// a test\n\n  mesh dp=2 // two\r\n"
                         "%7 = input{name=\"a\"}:f32[2,2]shard(dp,_)\n"
                         "%3=neg %7:f32[2, 2]  // done\n"
                         "output \"o\"=%3",
                         NULL);
    CHECK(m != NULL);
    if (m) {
        char *text = print(m);
        CHECK_STR(text, "mesh dp = 2\n"
                        "%0 = input {name = \"a\"} : f32[2, 2] shard(dp, _)\n"
                        "%1 = neg %0 : f32[2, 2]\n"
                        "output \"o\" = %1\n");
        free(text);
        CHECK_INT(IR_OP(m, 1)->loc.line, 5);
        ir_module_free(m);
    }
}

/* ---- compaction ---- */

/* Whether op is one of m's list. */
static bool listed(const ir_module *m, const ir_op *op)
{
    for (int i = 0; i < m->ops.n; i++)
        if (IR_OP(m, i) == op)
            return true;
    return false;
}

/* ir_module_compact copies what the list holds into a new arena: the same
 * text, ids and order, every pointer to a copy in the list; an op dropped
 * from the list goes. A module whose list drops an op that another still
 * reads is left as it was. */
static void test_compact(void)
{
    ir_module *m = parse(handwritten, NULL);
    CHECK(m != NULL);
    if (!m)
        return;
    ir_value *w1 = IR_OP(m, 1)->res[0];
    ir_value *w1n = emit(m, IR_NEG, NOATTRS, 1, w1);
    w1n->sh = w1->sh;
    ir_add_update(m, w1, w1n, NULL);
    emit(m, IR_NEG, NOATTRS, 1, IR_OP(m, 0)->res[0]);
    m->ops.n--; /* dropped, as a pass drops a dead op */
    char *before = print(m);
    int ids = m->next_id, n = m->ops.n;
    const ir_op *first = IR_OP(m, 0);
    CHECK(ir_module_compact(m));
    char *after = print(m);
    CHECK_STR(after, before);
    free(before);
    free(after);
    CHECK_INT(m->next_id, ids);
    CHECK_INT(m->ops.n, n);
    CHECK(IR_OP(m, 0) != first); /* a copy */
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int r = 0; r < op->nres; r++)
            CHECK(op->res[r]->def == op);
        for (int k = 0; k < op->nin; k++)
            CHECK(listed(m, op->in[k]->def));
    }
    CHECK(listed(m, m->train.loss->def));
    for (int i = 0; i < m->outputs.n; i++)
        CHECK(listed(m, IR_OUTPUT(m, i)->v->def));
    CHECK_INT(m->updates.n, 1);
    CHECK(listed(m, IR_UPDATE(m, 0)->src->def) && listed(m, IR_UPDATE(m, 0)->v->def));
    CHECK(IR_UPDATE(m, 0)->grad == NULL);
    CHECK_STR(m->mesh.name[2], "pp");
    su_buf err;
    su_buf_init(&err, &oom);
    bool verified = ir_verify(m, &err);
    CHECK(verified);
    if (!verified)
        fprintf(stderr, "%s\n", err.s);
    su_buf_free(&err);

    /* the matmul (op 2) dropped, the sum still reading it: unchanged */
    void *ops[64];
    CHECK(m->ops.n < 64);
    memmove(&m->ops.v[2], &m->ops.v[3], (size_t)(m->ops.n - 3) * sizeof *m->ops.v);
    m->ops.n--;
    memcpy(ops, m->ops.v, (size_t)m->ops.n * sizeof *ops);
    const ir_value *loss = m->train.loss;
    CHECK(!ir_module_compact(m));
    CHECK(memcmp(ops, m->ops.v, (size_t)m->ops.n * sizeof *ops) == 0);
    CHECK(m->train.loss == loss);
    ir_module_free(m);
}

/* An op's attributes are the module's, one copy of each distinct set:
 * ops with equal ones share it (names compared by their text), a changed
 * op takes a new set and leaves the others as they were, and compaction
 * keeps the sharing in its new arena, and no set that no op has. */
static void test_shared_attrs(void)
{
    ir_module *m = ir_module_new(&oom);
    m->mesh = (ir_mesh){.naxes = 1, .name = {"dp"}, .size = {2}};
    char name[] = "x";
    ir_value *x = source(m, IR_INPUT, name, (ir_init){0}, T(IR_F32, 2, 4, 8));
    ir_value *s1 = emit(m, IR_SUM, (ir_attrs){.axis = 1}, 1, x);
    ir_value *s2 = emit(m, IR_SUM, (ir_attrs){.axis = 1}, 1, x);
    ir_value *s3 = emit(m, IR_SUM, (ir_attrs){.axis = 0}, 1, x);
    ir_value *n1 = emit(m, IR_NEG, NOATTRS, 1, x);
    ir_value *n2 = emit(m, IR_NEG, NOATTRS, 1, s1);
    CHECK(s1->def->a == s2->def->a);
    CHECK(s1->def->a != s3->def->a);
    CHECK(n1->def->a == n2->def->a);
    CHECK(n1->def->a != s1->def->a);
    CHECK_INT(s1->def->a->axis, 1);
    CHECK_INT(s3->def->a->axis, 0);
    /* a name's text, not its pointer: the module's copy either way */
    name[0] = 'y';
    CHECK_STR(x->def->a->name, "x");
    ir_attrs same = {.name = "x"};
    CHECK(ir_attrs_intern(m, &same) == x->def->a);
    ir_attrs other = {.name = "x2"};
    CHECK(ir_attrs_intern(m, &other) != x->def->a);

    /* one op changed: a new set for it alone */
    const ir_attrs *before = s2->def->a;
    ir_attrs a = *s2->def->a;
    a.keepdims = true;
    ir_op_set_attrs(m, s2->def, &a);
    CHECK(s2->def->a != before);
    CHECK(s1->def->a == before);
    CHECK(!s1->def->a->keepdims && s2->def->a->keepdims);
    CHECK_INT(s2->def->a->axis, 1);
    a.keepdims = false; /* back: the first set again */
    ir_op_set_attrs(m, s2->def, &a);
    CHECK(s2->def->a == s1->def->a);

    /* x's, the first two sums', none (the negs' and the sum over axis 0),
     * x2's and the changed sum's */
    CHECK_INT(m->attrs.n, 5);
    char *text = print(m);
    CHECK(ir_module_compact(m));
    CHECK_INT(m->attrs.n, 3); /* x2's and the changed sum's are no op's */
    char *again = print(m);
    CHECK_STR(again, text);
    free(text);
    free(again);
    const ir_op *o1 = IR_OP(m, 1), *o2 = IR_OP(m, 2), *o3 = IR_OP(m, 3);
    CHECK(o1->a != before); /* copies, in the new arena */
    CHECK(o1->a == o2->a && o1->a != o3->a);
    CHECK(IR_OP(m, 4)->a == IR_OP(m, 5)->a);
    CHECK_STR(IR_OP(m, 0)->a->name, "x");
    ir_attrs after = {.axis = 1};
    CHECK(ir_attrs_intern(m, &after) == o1->a); /* the module's set is the new one */
    ir_module_free(m);
}

/* ---- errors ---- */

#define IN "%x = input {name = \"x\"} : f32[2]\n"

static void test_errors(void)
{
    /* training: updates, phases */
#define TRAIN_IN "%w = param {name = \"w\", init = zeros} : f32[2]\n" \
                 "%l = mse %w, %w : f32[]\n"
    check_error(TRAIN_IN "%n = neg %w : f32[2]\nupdate %w = %n\n",
                "t.ir: error: invalid IR: updates in a module without train");
    check_error(TRAIN_IN "%n = neg %w : f32[2]\nupdate %n = %w\ntrain %l\n",
                "t.ir: error: invalid IR: update %n: only a param or a state can be "
                "updated, not the result of neg");
    check_error(TRAIN_IN "%n = sum %w {axis = 0, keepdims = true} : f32[1]\nupdate %w = %n\n"
                "train %l\n", "t.ir: error: invalid IR: update %w = %n: the new value's "
                "type f32[1] differs from f32[2]");
    check_error(TRAIN_IN "%n = neg %w : f32[2]\nupdate %w = %n\nupdate %w = %n\ntrain %l\n",
                "t.ir: error: invalid IR: %w is updated twice (updates 0 and 1)");
    check_error(TRAIN_IN "%n = neg %w : f32[2]\nupdate %w = %n grad %n\nupdate %n = %w\n"
                "train %l\n", "t.ir: error: invalid IR: update %n: only a param or a state "
                "can be updated, not the result of neg");
    check_error(TRAIN_IN "%s = state {name = \"s\", init = zeros} : f32[2]\n"
                "%n = neg %s : f32[2]\nupdate %s = %n grad %n\ntrain %l\n",
                "t.ir: error: invalid IR: update %s: only a param has a gradient");
    check_error(TRAIN_IN "%n = neg %w : f32[2]\n%g = sum %w {axis = 0, keepdims = true} : f32[1]\n"
                "update %w = %n grad %g\ntrain %l\n",
                "t.ir: error: invalid IR: update %w: its gradient %g has type f32[1], not f32[2]");
    check_error(TRAIN_IN "%n = neg %w : f32[2]\nupdate %w = %n grad %q\ntrain %l\n",
                "t.ir:4:21: error: use of undefined value %q");
    check_error(TRAIN_IN "%n = neg %w : f32[2] phase sideways\n",
                "t.ir:3:28: error: expected 'backward' or 'optimizer' after 'phase'");
    check_error(TRAIN_IN "train %l\nupdate %w = %l\n",
                "t.ir:4:1: error: updates must come before 'train'");
#undef TRAIN_IN
    check_error(IN "%y = matmull %x, %x : f32[2]\n", "t.ir:2:6: error: unknown op 'matmull'");
    check_error(IN "%y = relu %w9 : f32[2]\n", "t.ir:2:11: error: use of undefined value %w9");
    check_error(IN "%x = relu %x : f32[2]\n", "t.ir:2:1: error: value %x is defined twice");
    check_error("mesh dp = 2\n%x = input {name = \"x\"} : f32[2] shard(foo)\n",
                "t.ir:2:40: error: unknown mesh axis 'foo'");
    check_error(IN "%y = relu %x {axis = 0} : f32[2]\n",
                "t.ir:2:15: error: attribute 'axis' is not one of relu's attributes");
    check_error(IN "%y = sum %x {axis = 0} : f32[]\n",
                "t.ir:2:22: error: missing attribute 'keepdims' of sum");
    check_error(IN "%y = sum %x : f32[]\n", "t.ir:2:13: error: missing attribute 'axis' of sum");
    check_error(IN "%y = sum %x {axis = 0, axis = 0, keepdims = true} : f32[1]\n",
                "t.ir:2:24: error: attribute 'axis' is given twice");
    check_error(IN "%y = sum %x {axs = 0} : f32[]\n", "t.ir:2:14: error: unknown attribute 'axs'");
    check_error("%x = input {name = \"x\"} : f32[99999999999999999999]\n",
                "t.ir:1:31: error: integer out of range");
    check_error(IN "%y = sum %x {axis = -9223372036854775809, keepdims = true} : f32[1]\n",
                "t.ir:2:21: error: integer out of range");
    check_error(IN "%y = relu %x f32[2]\n", "t.ir:2:14: error: expected ':' after the operands");
    check_error(IN "%y = cast %x {dtype = f16} f16[2]\n",
                "t.ir:2:28: error: expected ':' after the attributes");
    check_error("%x = input {name = \"x} : f32[2]\n", "t.ir:1:20: error: unterminated string");
    check_error("%x = input {name = \"a\\q\"} : f32[2]\n", "t.ir:1:22: error: invalid escape in string");
    check_error("%x = input {name = \"a\\x00\"} : f32[2]\n",
                "t.ir:1:22: error: a string cannot hold a NUL byte");
    check_error("%x = input {name = \"x\"} : f32[1, 1, 1, 1, 1, 1, 1, 1, 1]\n",
                "t.ir:1:55: error: too many dimensions (at most 8)");
    check_error("%x = input {name = \"x\"} : f32[2, 0]\n",
                "t.ir:1:34: error: dimension must be at least 1");
    check_error(IN "%y = relu %x, %x : f32[2]\n", "t.ir:2:6: error: relu takes 1 operand, not 2");
    check_error(IN "%y, %z = relu %x : f32[2], f32[2]\n",
                "t.ir:2:10: error: relu makes 1 result, not 2");
    check_error("mesh a = 1, b = 1, c = 1, d = 1, e = 1, f = 1, g = 1, h = 1, i = 1\n",
                "t.ir:1:62: error: too many mesh axes (at most 8)");
    check_error("mesh dp = 0\n", "t.ir:1:11: error: mesh axis size must be at least 1");
    check_error("mesh dp = 2, dp = 2\n", "t.ir:1:14: error: mesh axis 'dp' is defined twice");
    check_error("mesh dp = 2\n%x = input {name = \"x\"} : f32[2, 2] shard(dp)\n",
                "t.ir:2:37: error: sharding has 1 dimension but the type has rank 2");
    check_error(IN "%y = relu $x : f32[2]\n", "t.ir:2:11: error: unexpected character '$'");
    check_error("%x = input {name = \"x\"} : f33[2]\n", "t.ir:1:27: error: unknown dtype 'f33'");
    check_error("mesh dp = 2\nmesh tp = 2\n", "t.ir:2:1: error: duplicate 'mesh' line");
    check_error(IN "mesh dp = 2\n", "t.ir:2:1: error: 'mesh' must come before ops");
    check_error(IN "output \"o\" = %x\n%y = relu %x : f32[2]\n",
                "t.ir:3:1: error: ops must come before outputs");
    check_error(IN "%y = relu %x : f32[2] foo\n", "t.ir:2:23: error: expected end of line, found 'foo'");
    check_error(IN "%1a = relu %x : f32[2]\n", "t.ir:2:1: error: invalid value name '%1a'");
    check_error("mesh dp = 2\n" IN "train %x with sgd(lr = 0.1, momentum = 0.0, wd = 0.0) zero 4 over dp\n",
                "t.ir:3:60: error: zero stage must be 1, 2 or 3");
    check_error("mesh dp = 2\n" IN "train %x with sgd(lr = 0.1, momentum = 0.0, wd = 0.0, clip = 0.0)\n",
                "t.ir:3:55: error: clip must be a positive number");
    check_error("mesh dp = 2\n" IN "train %x with sgd(lr = 0.1, momentum = 0.0, wd = 0.0, warmup = 1.0, "
                "decay = step, steps = 2.0, min_lr = 0.0)\n",
                "t.ir:3:77: error: expected a decay: 'none', 'cosine' or 'linear'");
    check_error("mesh pp = 2\npipeline over pp repeats 2 microbatches 2 schedule 2f2b\n",
                "t.ir:2:52: error: expected a schedule: 'gpipe', '1f1b' or 'interleaved(N)'");
    check_error(IN "%y = transpose %x {perm = [0, 0, 0, 0, 0, 0, 0, 0, 0]} : f32[2]\n",
                "t.ir:2:52: error: too many entries (at most 8)");
    check_error(IN "%y = add %x, %x : f32[3]\n",
                "t.ir:2:1: error: invalid IR: op 1 (add): result type f32[3] differs from the inferred f32[2]");
    check_error(IN "output \"o\" = %x\noutput \"o\" = %x\n",
                "t.ir:3:8: error: \"o\" is already an output (line 2)");
    check_error(IN "%y = sum %x {axis = 1e3, keepdims = true} : f32[1]\n",
                "t.ir:2:21: error: expected an integer");
    check_error(IN "%y = const {value = 1x} : f32[]\n", "t.ir:2:21: error: expected a number");

    /* 65 operands */
    char text[2048] = IN "%y = add %x";
    for (int i = 0; i < 64; i++)
        strcat(text, ", %x");
    strcat(text, " : f32[2]\n");
    check_error(text, "t.ir:2:266: error: too many operands (at most 64)");
}

/* ---- robustness ---- */

/* A text the parser accepts must print stably: print(parse(t)) is a fixed
 * point of print . parse. */
static void check_damaged(const char *text, size_t len, int *accepted)
{
    su_src src = {"t.ir", text, len};
    su_diag d;
    su_diag_init(&d, &oom);
    ir_module *m = ir_parse(&src, &d, &oom);
    su_diag_free(&d);
    if (!m)
        return;
    ++*accepted;
    char *once = print(m);
    ir_module_free(m);
    char *twice = NULL;
    ir_module *m2 = parse(once, NULL);
    if (m2)
        twice = print(m2);
    ir_module_free(m2);
    if (!twice || strcmp(once, twice)) /* one CHECK per failure, not per text */
        CHECK_STR(twice, once);
    free(once);
    free(twice);
}

/* Every prefix, and every byte replaced by a few troublesome ones. The
 * text is copied to an exact-size heap block so ASan sees any overread. */
static void test_damage(void)
{
    ir_module *m = all_ops();
    char *text = print(m);
    ir_module_free(m);
    size_t n = strlen(text);
    int accepted = 0;
    static const char bytes[] = {'\n', '%', '"', ',', '0', '-', '\\', '{', ']'};
    for (size_t cut = 0; cut <= n; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, text, cut);
        check_damaged(copy, cut, &accepted);
        for (size_t k = 0; cut < n && k < sizeof bytes; k += 4) {
            char *mut = malloc(n);
            memcpy(mut, text, n);
            mut[cut] = bytes[(cut + k) % sizeof bytes];
            check_damaged(mut, n, &accepted);
            free(mut);
        }
        free(copy);
    }
    CHECK(accepted > 0);
    free(text);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_irtext: out of memory\n");
        return 1;
    }
    test_all_ops();
    test_names();
    test_many_names();
    test_sgd();
    test_pipelines();
    test_empty();
    test_handwritten();
    test_compact();
    test_shared_attrs();
    test_errors();
    test_damage();
    return CHECK_DONE();
}
