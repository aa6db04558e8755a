/* test_autodiff.c: autodiff and the optimizer (passes/autodiff.c) against
 * finite differences. First the reference evaluator (ir_eval.c, compiled
 * in here) is checked against hand-computed values; then, for every op of
 * LANGUAGE.md §7, a small training module is differentiated, evaluated in
 * double precision with random params and inputs (fixed seeds), and each
 * gradient element is compared with the central difference of the loss;
 * last, one and two steps of sgd with momentum and of adamw are checked
 * against their formulas. A failure names the case (the op), the param and
 * the element, with the max absolute and relative error. */
#include "../../ir/ir.h"
#include "../../passes/passes.h"
#include "check.h"
#include "ir_eval.c"

#include <math.h>
#include <stdlib.h>

static jmp_buf oom;

/* ---- helpers ---- */

static ir_module *parse(const char *text)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    ir_module *m = ir_parse(&src, &d, &oom);
    if (!m) {
        fprintf(stderr, "test_autodiff: bad test text:\n%s\n%s\n", d.msg.s, text);
        abort();
    }
    su_diag_free(&d);
    return m;
}

static ir_value *find(const ir_module *m, const char *name)
{
    for (int i = 0; i < m->ops.n; i++) {
        ir_value *v = IR_OP(m, i)->res[0];
        if (v->name && strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

/* splitmix64: the same numbers on every machine. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Within |got - want| <= atol + rtol * |want|. */
static bool close_to(double got, double want, double atol, double rtol)
{
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ---- the evaluator against hand-computed values ---- */

#define IN(name, type) "%" name " = input {name = \"" name "\"} : " type "\n"
#define PARAM(name, type) "%" name " = param {name = \"" name "\", init = zeros} : " type "\n"

/* Evaluates text with the given sources (name, data, name, data, ...,
 * NULL) and checks %y against want (n values) to 1e-12. */
static void check_eval(const char *what, const char *text, const double *want, size_t n, ...)
{
    ir_module *m = parse(text);
    ev_module *ev = ev_new(m);
    va_list ap;
    va_start(ap, n);
    for (const char *name; (name = va_arg(ap, const char *));)
        CHECK(ev_set(ev, name, va_arg(ap, const double *)));
    va_end(ap);
    char err[256] = "";
    bool ok = ev_run(ev, err, sizeof err);
    CHECK(ok);
    const double *y = ok ? ev_value(ev, find(m, "y")) : NULL;
    for (size_t i = 0; y && i < n; i++) {
        check_count++;
        if (!close_to(y[i], want[i], 1e-12, 1e-12)) {
            check_failures++;
            fprintf(stderr, "eval %s: y[%zu] = %.17g, want %.17g\n", what, i, y[i], want[i]);
        }
    }
    if (!ok)
        fprintf(stderr, "eval %s: %s\n", what, err);
    ev_free(ev);
    ir_module_free(m);
}

static void test_eval_contract(void)
{
    static const double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    check_eval("matmul", IN("a", "f32[2, 2]") IN("b", "f32[2, 2]")
               "%y = matmul %a, %b : f32[2, 2]\n", (double[]){19, 22, 43, 50}, 4, "a", a, "b", b,
               NULL);
    check_eval("matmul 1-D", IN("a", "f32[2]") IN("b", "f32[2, 2]")
               "%y = matmul %a, %b : f32[2]\n", (double[]){1 * 1 + 2 * 3, 1 * 2 + 2 * 4}, 2,
               "a", (double[]){1, 2}, "b", a, NULL);
    check_eval("matmul dot", IN("a", "f32[2]") IN("b", "f32[2]") "%y = matmul %a, %b : f32[]\n",
               (double[]){11}, 1, "a", (double[]){1, 2}, "b", (double[]){3, 4}, NULL);
    /* batch broadcast: a [2, 1, 2] against b [2, 1] */
    check_eval("matmul batch", IN("a", "f32[2, 1, 2]") IN("b", "f32[2, 1]")
               "%y = matmul %a, %b : f32[2, 1, 1]\n", (double[]){1 * 5 + 2 * 6, 3 * 5 + 4 * 6}, 2,
               "a", a, "b", (double[]){5, 6}, NULL);
    /* q k^T / sqrt(1): row 0 sees key 0 only; row 1 weighs [1, 2] */
    const double q[] = {1, 1}, k[] = {0, log(2.0)}, v[] = {1, 4};
    check_eval("attention", IN("q", "f32[2, 1]") IN("k", "f32[2, 1]") IN("v", "f32[2, 1]")
               "%y = attention %q, %k, %v {causal = true} : f32[2, 1]\n", (double[]){1, 3}, 2,
               "q", q, "k", k, "v", v, NULL);
    check_eval("attn_probs", IN("q", "f32[2, 1]") IN("k", "f32[2, 1]")
               "%y = attn_probs %q, %k {causal = true} : f32[2, 2]\n",
               (double[]){1, 0, 1.0 / 3, 2.0 / 3}, 4, "q", q, "k", k, NULL);
    /* S = 1 < T = 2, causal: the one row sees both keys (mask at the end) */
    check_eval("attention S < T", IN("q", "f32[1, 1]") IN("k", "f32[2, 1]") IN("v", "f32[2, 1]")
               "%y = attention %q, %k, %v {causal = true} : f32[1, 1]\n", (double[]){3}, 1,
               "q", q, "k", k, "v", v, NULL);
    /* S = 2 > T = 1, causal: row 0 sees nothing (0), row 1 key 0 */
    check_eval("attention S > T", IN("q", "f32[2, 1]") IN("k", "f32[1, 1]") IN("v", "f32[1, 1]")
               "%y = attention %q, %k, %v {causal = true} : f32[2, 1]\n", (double[]){0, 1}, 2,
               "q", q, "k", k, "v", v, NULL);
}

static void test_eval_norm(void)
{
    static const double x[] = {1, 2, 3};
    double s = 1 / sqrt(2.0 / 3 + 1e-5), r = 1 / sqrt(14.0 / 3 + 1e-6);
    check_eval("softmax", IN("x", "f32[2]") "%y = softmax %x {axis = 0} : f32[2]\n",
               (double[]){1.0 / 3, 2.0 / 3}, 2, "x", (double[]){0, log(2.0)}, NULL);
    check_eval("softmax axis 0", IN("x", "f32[2, 2]") "%y = softmax %x {axis = 0} : f32[2, 2]\n",
               (double[]){1.0 / 3, 0.5, 2.0 / 3, 0.5}, 4, "x", (double[]){0, 7, log(2.0), 7},
               NULL);
    check_eval("layernorm", IN("x", "f32[3]") IN("g", "f32[3]") IN("b", "f32[3]")
               "%y = layernorm %x, %g, %b {eps = 1e-05} : f32[3]\n",
               (double[]){-s * 2 + 1, 1, s * 0.5 + 1}, 3, "x", x, "g", (double[]){2, 1, 0.5},
               "b", (double[]){1, 1, 1}, NULL);
    check_eval("rmsnorm", IN("x", "f32[3]") IN("g", "f32[3]")
               "%y = rmsnorm %x, %g {eps = 1e-06} : f32[3]\n", (double[]){r, 4 * r, 3 * r}, 3,
               "x", x, "g", (double[]){1, 2, 1}, NULL);
    check_eval("sum", IN("x", "f32[2, 3]") "%y = sum %x {axis = 0, keepdims = true} : f32[1, 3]\n",
               (double[]){5, 7, 9}, 3, "x", (double[]){1, 2, 3, 4, 5, 6}, NULL);
    check_eval("mean", IN("x", "f32[2, 3]") "%y = mean %x {axis = 1, keepdims = false} : f32[2]\n",
               (double[]){2, 5}, 2, "x", (double[]){1, 2, 3, 4, 5, 6}, NULL);
    check_eval("amax", IN("x", "f32[2, 3]") "%y = amax %x {axis = 0, keepdims = false} : f32[3]\n",
               (double[]){4, 5, 3}, 3, "x", (double[]){1, 5, 3, 4, 2, -6}, NULL);
    check_eval("amax middle", IN("x", "f32[2, 2, 2]")
               "%y = amax %x {axis = 1, keepdims = false} : f32[2, 2]\n",
               (double[]){3, 4, 7, 8}, 4, "x", (double[]){1, 2, 3, 4, 5, 6, 7, 8}, NULL);
}

static void test_eval_layout(void)
{
    static const double x6[] = {0, 1, 2, 3, 4, 5};
    double x24[24], want[24];
    for (int i = 0; i < 24; i++)
        x24[i] = i;
    /* y[i][j][k] = x[j][k][i] with x [2, 3, 4] and y [4, 2, 3] */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++)
                want[(i * 2 + j) * 3 + k] = x24[(j * 3 + k) * 4 + i];
    check_eval("transpose", IN("x", "f32[2, 3]") "%y = transpose %x {perm = [1, 0]} : f32[3, 2]\n",
               (double[]){0, 3, 1, 4, 2, 5}, 6, "x", x6, NULL);
    check_eval("transpose 3-D", IN("x", "f32[2, 3, 4]")
               "%y = transpose %x {perm = [2, 0, 1]} : f32[4, 2, 3]\n", want, 24, "x", x24, NULL);
    check_eval("reshape", IN("x", "f32[2, 3]") "%y = reshape %x {shape = [3, 2]} : f32[3, 2]\n",
               x6, 6, "x", x6, NULL);
    check_eval("expand", IN("x", "f32[2, 1]") "%y = expand %x {shape = [2, 2, 3]} : f32[2, 2, 3]\n",
               (double[]){1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, 12, "x", (double[]){1, 2}, NULL);
    check_eval("embedding", IN("t", "f32[3, 2]") IN("i", "i32[3]")
               "%y = embedding %t, %i : f32[3, 2]\n", (double[]){5, 6, 1, 2, 5, 6}, 6,
               "t", (double[]){1, 2, 3, 4, 5, 6}, "i", (double[]){2, 0, 2}, NULL);
    check_eval("embedding_grad", IN("i", "i32[3]") IN("d", "f32[3, 2]")
               "%y = embedding_grad %i, %d {shape = [3, 2]} : f32[3, 2]\n",
               (double[]){2, 2, 0, 0, 4, 4}, 6, "i", (double[]){2, 0, 2},
               "d", (double[]){1, 1, 2, 2, 3, 3}, NULL);
    check_eval("cast", IN("x", "f32[3]") "%y = cast %x {dtype = i32} : i32[3]\n",
               (double[]){-1, 2, 0}, 3, "x", (double[]){-1.7, 2.5, -0.2}, NULL);
}

static void test_eval_elementwise(void)
{
    check_eval("sub broadcast", IN("a", "f32[2, 1]") IN("b", "f32[1, 3]")
               "%y = sub %a, %b : f32[2, 3]\n", (double[]){9, 8, 7, 19, 18, 17}, 6,
               "a", (double[]){10, 20}, "b", (double[]){1, 2, 3}, NULL);
    check_eval("pow const", IN("a", "f32[2]") "%c = const {value = 3} : f32[]\n"
               "%y = pow %a, %c : f32[2]\n", (double[]){8, 0.125}, 2, "a", (double[]){2, 0.5},
               NULL);
    check_eval("i32 div", IN("a", "i32[2]") IN("b", "i32[2]") "%y = div %a, %b : i32[2]\n",
               (double[]){3, -3}, 2, "a", (double[]){7, -7}, "b", (double[]){2, 2}, NULL);
    check_eval("gt eq", IN("a", "f32[3]") IN("b", "f32[3]") "%g = gt %a, %b : f32[3]\n"
               "%e = eq %a, %b : f32[3]\n%y = add %g, %e : f32[3]\n", (double[]){1, 1, 0}, 3,
               "a", (double[]){2, 1, 0}, "b", (double[]){1, 1, 1}, NULL);
    check_eval("gelu silu", IN("a", "f32[2]") "%g = gelu %a : f32[2]\n%s = silu %a : f32[2]\n"
               "%y = sub %g, %s : f32[2]\n",
               (double[]){0.8411919906082768 - 0.7310585786300049,
                          -0.15880800939172324 + 0.2689414213699951}, 2,
               "a", (double[]){1, -1}, NULL);
    check_eval("mse", IN("a", "f32[2]") IN("b", "f32[2]") "%y = mse %a, %b : f32[]\n",
               (double[]){2.5}, 1, "a", (double[]){1, 2}, "b", (double[]){0, 0}, NULL);
    double l = log(1.5); /* -log softmax([0, log 2])[1] = log(3/2) */
    check_eval("cross_entropy", IN("x", "f32[2, 2]") IN("l", "i32[2]")
               "%y = cross_entropy %x, %l : f32[]\n", (double[]){(l + log(3.0)) / 2}, 1,
               "x", (double[]){0, log(2.0), 0, log(2.0)}, "l", (double[]){1, 0}, NULL);
    check_eval("cross_entropy_grad", IN("x", "f32[2, 2]") IN("l", "i32[2]")
               "%y = cross_entropy_grad %x, %l : f32[2, 2]\n",
               (double[]){1.0 / 3, -1.0 / 3, -2.0 / 3, 2.0 / 3}, 4,
               "x", (double[]){0, log(2.0), 0, log(2.0)}, "l", (double[]){1, 0}, NULL);
}

/* gelu_grad and silu_grad against central differences of gelu and silu
 * as the evaluator computes them. */
static void test_eval_act_grads(void)
{
    for (double x = -3; x <= 3; x += 0.25) {
        double h = 1e-5;
        double dg = (gelu(x + h) - gelu(x - h)) / (2 * h);
        double ds = ((x + h) * sigmoid(x + h) - (x - h) * sigmoid(x - h)) / (2 * h);
        CHECK(close_to(binop(IR_GELU_GRAD, x, 2.0, false), 2 * dg, 1e-8, 1e-8));
        CHECK(close_to(binop(IR_SILU_GRAD, x, 2.0, false), 2 * ds, 1e-8, 1e-8));
    }
}

static void test_eval_optim(void)
{
    static const double p[] = {1, -2}, g[] = {0.5, 0.25}, m[] = {0.1, 0.2}, v[] = {0.01, 0.04};
    check_eval("momentum", IN("b", "f32[2]") IN("g", "f32[2]") IN("p", "f32[2]")
               "%y = momentum %b, %g, %p {momentum = 0.9, wd = 0.01} : f32[2]\n",
               (double[]){0.9 * 0.1 + 0.5 + 0.01, 0.9 * 0.2 + 0.25 - 0.02}, 2,
               "b", m, "g", g, "p", p, NULL);
    check_eval("sgd", IN("p", "f32[2]") IN("d", "f32[2]")
               "%y = sgd %p, %d {lr = 0.1, wd = 0.01} : f32[2]\n",
               (double[]){1 - 0.1 * (0.5 + 0.01), -2 - 0.1 * (0.25 - 0.02)}, 2, "p", p, "d", g,
               NULL);
    check_eval("adam_m", IN("m", "f32[2]") IN("g", "f32[2]")
               "%y = adam_m %m, %g {beta1 = 0.9} : f32[2]\n",
               (double[]){0.09 + 0.05, 0.18 + 0.025}, 2, "m", m, "g", g, NULL);
    check_eval("adam_v", IN("v", "f32[2]") IN("g", "f32[2]")
               "%y = adam_v %v, %g {beta2 = 0.99} : f32[2]\n",
               (double[]){0.0099 + 0.0025, 0.0396 + 0.000625}, 2, "v", v, "g", g, NULL);
    /* t = 2: mhat = m / 0.19, vhat = v / 0.0199 */
    double w0 = 1 * (1 - 0.01 * 0.1) - 0.01 * (0.1 / 0.19) / (sqrt(0.01 / 0.0199) + 1e-8);
    double w1 = -2 * (1 - 0.01 * 0.1) - 0.01 * (0.2 / 0.19) / (sqrt(0.04 / 0.0199) + 1e-8);
    check_eval("adamw", IN("p", "f32[2]") IN("m", "f32[2]") IN("v", "f32[2]") IN("t", "f32[]")
               "%y = adamw %p, %m, %v, %t {eps = 1e-08, lr = 0.01, beta1 = 0.9, beta2 = 0.99, "
               "wd = 0.1} : f32[2]\n",
               (double[]){w0, w1}, 2, "p", p, "m", m, "v", v, "t", (double[]){2}, NULL);
}

/* ---- gradient checks ---- */

typedef struct gcase {
    const char *op;     /* the op whose backward rule it checks (messages) */
    const char *body;   /* IR ops making %y (probed to a scalar) or %loss */
    double lo, hi;      /* float sources: uniform in [lo, hi] */
    double gap;         /* ... redrawn while |x| < gap (kinks at 0) */
    int imax;           /* i32 sources: uniform integers in [0, imax) */
} gcase;

enum { MAX_SAMPLES = 30 };
static const double FD_H = 1e-5, FD_ATOL = 1e-6, FD_RTOL = 1e-5;
#define TRAIN_SGD "train %loss with sgd(lr = 0.1, momentum = 0.0, wd = 0.0)\n"

/* "f32[2, 3]" of t without its first k dims. */
static void type_text(su_buf *b, const ir_type *t, int k)
{
    ir_type u = *t;
    u.rank = t->rank - k;
    memmove(u.dim, t->dim + k, (size_t)u.rank * sizeof *u.dim);
    ir_type_print(b, &u);
}

/* The training module of case c: its body, and unless the body makes
 * %loss, loss = sum(y * probe) with probe a random input of y's type, so
 * that every element of y gets a different upstream gradient. */
static char *case_text(const gcase *c)
{
    su_buf b;
    su_buf_init(&b, &oom);
    su_buf_puts(&b, c->body);
    if (!strstr(c->body, "%loss =")) {
        ir_module *m = parse(c->body);
        const ir_type *t = &find(m, "y")->type;
        su_buf_puts(&b, "%probe = input {name = \"probe\"} : ");
        type_text(&b, t, 0);
        su_buf_puts(&b, "\n%probe_y = mul %y, %probe : ");
        type_text(&b, t, 0);
        for (int k = 0; k < t->rank; k++) {
            su_buf_printf(&b, "\n%%%s = sum %%probe_%s {axis = 0, keepdims = false} : ",
                          k + 1 == t->rank ? "loss" : su_sprintf(&m->arena, "probe_s%d", k),
                          k ? su_sprintf(&m->arena, "s%d", k - 1) : "y");
            type_text(&b, t, k + 1);
        }
        if (t->rank == 0)
            su_buf_puts(&b, "\n%loss = add %probe_y, %probe : f32[]");
        su_buf_putc(&b, '\n');
        ir_module_free(m);
    }
    su_buf_puts(&b, TRAIN_SGD);
    return su_buf_take(&b);
}

/* The data of every input and param, by op index, drawn as c says. */
static double **make_sources(const gcase *c, const ir_module *m, ev_module *ev, uint64_t seed)
{
    double **data = calloc((size_t)m->ops.n, sizeof *data);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_INPUT && op->code != IR_PARAM)
            continue;
        size_t n = numel(&op->res[0]->type);
        data[i] = calloc(n, sizeof **data);
        for (size_t j = 0; j < n; j++) {
            double x;
            if (op->res[0]->type.dtype == IR_I32)
                x = (double)(rng_next(&seed) % (uint64_t)(c->imax ? c->imax : 1));
            else if (strcmp(op->a->name, "probe") == 0)
                x = rng_uniform(&seed, -1, 1);
            else
                do
                    x = rng_uniform(&seed, c->lo, c->hi);
                while (fabs(x) < c->gap);
            data[i][j] = x;
        }
        ev_set(ev, op->a->name, data[i]);
    }
    return data;
}

/* The loss with param op i's element j moved by dx (forward only). */
static double loss_at(ev_module *ev, const ir_module *m, const ir_op *op, double *p, size_t j,
                      double dx)
{
    char err[256];
    double keep = p[j];
    p[j] = keep + dx;
    ev_set(ev, op->a->name, p);
    bool ok = ev_run_to(ev, m->train.loss, err, sizeof err);
    double l = ok ? *ev_value(ev, m->train.loss) : NAN;
    if (!ok)
        fprintf(stderr, "  forward failed: %s\n", err);
    p[j] = keep;
    ev_set(ev, op->a->name, p);
    return l;
}

/* Compares param op's gradient g (evaluated) with central differences on
 * up to MAX_SAMPLES of its elements; one check per param. */
static void check_param_grad(const gcase *c, ev_module *ev, const ir_module *m,
                             const ir_op *op, double *p, const double *g)
{
    size_t n = numel(&op->res[0]->type), nsamp = n < MAX_SAMPLES ? n : MAX_SAMPLES;
    double max_abs = 0, max_rel = 0;
    int bad = 0;
    for (size_t s = 0; s < nsamp; s++) {
        size_t j = s * n / nsamp;
        double fp = loss_at(ev, m, op, p, j, FD_H), fm = loss_at(ev, m, op, p, j, -FD_H);
        double num = (fp - fm) / (2 * FD_H), e = fabs(g[j] - num);
        max_abs = fmax(max_abs, e);
        max_rel = fmax(max_rel, e / fmax(fabs(num), 1e-300));
        if (!close_to(g[j], num, FD_ATOL, FD_RTOL) && bad++ < 3)
            fprintf(stderr, "  %s: d loss / d %s[%zu] = %.10g, finite difference %.10g\n", c->op,
                    op->a->name, j, g[j], num);
    }
    check_count++;
    if (bad) {
        check_failures++;
        fprintf(stderr, "grad %s: %s: %d of %zu elements off (max abs err %.3g, max rel err "
                "%.3g)\n", c->op, op->a->name, bad, nsamp, max_abs, max_rel);
    }
}

/* The sgd step (lr 0.1, no momentum or decay) of every param it updates. */
static void check_sgd_updates(const gcase *c, const ir_module *m, const ev_module *ev,
                              const pass_grads *gr)
{
    for (int u = 0; u < m->updates.n; u++) {
        const ir_update *up = IR_UPDATE(m, u);
        const double *p = ev_value(ev, up->src), *nv = ev_value(ev, up->v), *g = NULL;
        for (int i = 0; i < gr->n; i++)
            if (gr->param[i] == up->src)
                g = ev_value(ev, gr->grad[i]);
        check_count++;
        bool ok = p && nv && g;
        for (size_t j = 0; ok && j < numel(&up->src->type); j++)
            ok = close_to(nv[j], p[j] - 0.1 * g[j], 1e-12, 1e-12);
        if (!ok) {
            check_failures++;
            fprintf(stderr, "grad %s: the sgd update of %s is not p - lr * grad\n", c->op,
                    up->src->def->a->name ? up->src->def->a->name : "?");
        }
    }
}

/* Every param has exactly one gradient of its own type; every param the
 * loss depends on (all of them in these cases) has one update. */
static bool check_grads_shape(const gcase *c, const ir_module *m, const pass_grads *gr)
{
    int np = 0;
    bool ok = true;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_PARAM)
            continue;
        int seen = 0;
        for (int k = 0; k < gr->n; k++)
            if (gr->param[k] == op->res[0]) {
                seen++;
                ok &= gr->grad[k] && ir_type_eq(&gr->grad[k]->type, &op->res[0]->type);
            }
        ok &= seen == 1;
        np++;
    }
    ok &= gr->n == np && m->updates.n == np;
    check_count++;
    if (!ok) {
        check_failures++;
        fprintf(stderr, "grad %s: grads (%d) or updates (%d) do not match the %d params\n", c->op,
                gr->n, m->updates.n, np);
    }
    return ok;
}

/* Every gradient against finite differences. The gradients are copied
 * first: the forward runs of the differences remake every value. */
static void check_grads_fd(const gcase *c, const ir_module *m, ev_module *ev,
                           const pass_grads *gr, double **data)
{
    double **g = calloc((size_t)gr->n + 1, sizeof *g);
    for (int i = 0; i < gr->n; i++) {
        size_t n = numel(&gr->grad[i]->type);
        g[i] = malloc(n * sizeof **g);
        memcpy(g[i], ev_value(ev, gr->grad[i]), n * sizeof **g);
    }
    for (int i = 0; i < gr->n; i++) {
        int k = 0;
        while (IR_OP(m, k)->res[0] != gr->param[i])
            k++;
        check_param_grad(c, ev, m, IR_OP(m, k), data[k], g[i]);
        free(g[i]);
    }
    free(g);
}

/* Differentiates, verifies, evaluates, then compares each gradient with
 * finite differences and each update with the sgd step. */
static void check_case(const gcase *c, uint64_t seed)
{
    char *text = case_text(c);
    ir_module *m = parse(text);
    pass_grads gr;
    su_buf err;
    su_buf_init(&err, &oom);
    bool ok = pass_autodiff(m, &gr, &err, NULL);
    check_count++;
    if (!ok || !ir_verify(m, &err)) {
        check_failures++;
        fprintf(stderr, "grad %s: %s: %s\n", c->op, ok ? "verifier" : "autodiff", err.s);
        goto done;
    }
    ev_module *ev = ev_new(m);
    double **data = make_sources(c, m, ev, seed);
    char msg[256] = "";
    check_count++;
    if (!ev_run(ev, msg, sizeof msg)) {
        check_failures++;
        fprintf(stderr, "grad %s: evaluation failed: %s\n", c->op, msg);
    } else if (check_grads_shape(c, m, &gr)) {
        check_sgd_updates(c, m, ev, &gr);
        check_grads_fd(c, m, ev, &gr, data);
    }
    for (int i = 0; i < m->ops.n; i++)
        free(data[i]);
    free(data);
    ev_free(ev);
done:
    su_buf_free(&err);
    ir_module_free(m);
    free(text);
}

static void run_cases(const gcase *cases, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        check_case(&cases[i], seed + i);
}

#define P3x4 PARAM("a", "f32[3, 4]")
#define P4 PARAM("b", "f32[4]")
#define P3x1 PARAM("a", "f32[3, 1]")
#define P1x4 PARAM("b", "f32[1, 4]")
#define CONST "%c = const {value = 1.5} : f32[]\n"
/* Both operands params: [3, 4] and [4], [3, 1] and [1, 4], then [3, 4] and
 * a scalar constant on each side. */
#define BINARY(name, lo, hi)                                                          \
    {name " [3,4] [4]", P3x4 P4 "%y = " name " %a, %b : f32[3, 4]\n", lo, hi, 0, 0},  \
    {name " [3,1] [1,4]", P3x1 P1x4 "%y = " name " %a, %b : f32[3, 4]\n", lo, hi, 0, 0}, \
    {name " [3,4] const", P3x4 CONST "%y = " name " %a, %c : f32[3, 4]\n", lo, hi, 0, 0}, \
    {name " const [3,4]", P3x4 CONST "%y = " name " %c, %a : f32[3, 4]\n", lo, hi, 0, 0}

static const gcase binary_cases[] = {
    BINARY("add", -2, 2),
    BINARY("sub", -2, 2),
    BINARY("mul", -2, 2),
    BINARY("div", 0.5, 2),
    BINARY("max", -2, 2),
    BINARY("min", -2, 2),
    BINARY("pow", 0.5, 2),
    {"mul [2,3,4] [3,1]", PARAM("a", "f32[2, 3, 4]") PARAM("b", "f32[3, 1]")
     "%y = mul %a, %b : f32[2, 3, 4]\n", -2, 2, 0, 0},
    {"add [4] [2,3,4]", PARAM("a", "f32[4]") PARAM("b", "f32[2, 3, 4]")
     "%y = add %a, %b : f32[2, 3, 4]\n", -2, 2, 0, 0},
    {"sub [3,4] [3,4]", P3x4 PARAM("b", "f32[3, 4]") "%y = sub %a, %b : f32[3, 4]\n", -2, 2, 0, 0},
    /* where's condition from a param (kept off 0, the kink): the gradient
     * to each branch where it is picked, summed over their broadcast */
    {"where [3,4] [4] [3,1]", P3x4 P4 PARAM("d", "f32[3, 1]")
     "%z = const {value = 0.0} : f32[]\n%c = greater %a, %z : bool[3, 4]\n"
     "%w = where %c, %b, %d : f32[3, 4]\n%y = mul %w, %a : f32[3, 4]\n", -2, 2, 0.05, 0},
    {"where [4] const", P4 "%z = const {value = 0.5} : f32[]\n"
     "%c = less_equal %b, %z : bool[4]\n%y = where %c, %z, %b : f32[4]\n", -2, 2, 0, 0},
};

#define UNARY(name, lo, hi, gap) \
    {name, P3x4 "%y = " name " %a : f32[3, 4]\n", lo, hi, gap, 0}

static const gcase unary_cases[] = {
    UNARY("neg", -2, 2, 0),     UNARY("abs", -2, 2, 0.05),  UNARY("relu", -2, 2, 0.05),
    UNARY("gelu", -3, 3, 0),    UNARY("silu", -3, 3, 0),    UNARY("tanh", -2, 2, 0),
    UNARY("sigmoid", -3, 3, 0), UNARY("exp", -2, 2, 0),     UNARY("log", 0.5, 2, 0),
    UNARY("sqrt", 0.5, 2, 0),   UNARY("rsqrt", 0.5, 2, 0),  UNARY("sin", -3, 3, 0),
    UNARY("cos", -3, 3, 0),
    {"cast f32", P3x4 "%y = cast %a {dtype = f32} : f32[3, 4]\n", -2, 2, 0, 0},
    {"constrain", P3x4 "%y = constrain %a : f32[3, 4]\n", -2, 2, 0, 0},
};

static const gcase contract_cases[] = {
    {"matmul 2-D @ 2-D", P3x4 PARAM("b", "f32[4, 5]") "%y = matmul %a, %b : f32[3, 5]\n",
     -1, 1, 0, 0},
    {"matmul 3-D @ 2-D", PARAM("a", "f32[2, 3, 4]") PARAM("b", "f32[4, 5]")
     "%y = matmul %a, %b : f32[2, 3, 5]\n", -1, 1, 0, 0},
    {"matmul 3-D @ 3-D", PARAM("a", "f32[2, 3, 4]") PARAM("b", "f32[2, 4, 5]")
     "%y = matmul %a, %b : f32[2, 3, 5]\n", -1, 1, 0, 0},
    {"matmul 2-D @ 3-D", P3x4 PARAM("b", "f32[2, 4, 5]") "%y = matmul %a, %b : f32[2, 3, 5]\n",
     -1, 1, 0, 0},
    {"matmul 4-D @ 3-D broadcast", PARAM("a", "f32[2, 1, 3, 4]") PARAM("b", "f32[3, 4, 2]")
     "%y = matmul %a, %b : f32[2, 3, 3, 2]\n", -1, 1, 0, 0},
    {"matmul 2-D @ 1-D", P3x4 P4 "%y = matmul %a, %b : f32[3]\n", -1, 1, 0, 0},
    {"matmul 1-D @ 2-D", P4 PARAM("a", "f32[4, 5]") "%y = matmul %b, %a : f32[5]\n", -1, 1, 0, 0},
    {"matmul 3-D @ 1-D", PARAM("a", "f32[2, 3, 4]") P4 "%y = matmul %a, %b : f32[2, 3]\n",
     -1, 1, 0, 0},
    {"matmul 1-D @ 1-D", PARAM("a", "f32[4]") P4 "%y = matmul %a, %b : f32[]\n", -1, 1, 0, 0},
    {"attention causal S == T", PARAM("q", "f32[2, 3, 4]") PARAM("k", "f32[2, 3, 4]")
     PARAM("v", "f32[2, 3, 5]") "%y = attention %q, %k, %v {causal = true} : f32[2, 3, 5]\n",
     -1.5, 1.5, 0, 0},
    {"attention S == T", PARAM("q", "f32[2, 3, 4]") PARAM("k", "f32[2, 3, 4]")
     PARAM("v", "f32[2, 3, 5]") "%y = attention %q, %k, %v {causal = false} : f32[2, 3, 5]\n",
     -1.5, 1.5, 0, 0},
    {"attention causal S < T", PARAM("q", "f32[2, 3, 4]") PARAM("k", "f32[2, 5, 4]")
     PARAM("v", "f32[2, 5, 3]") "%y = attention %q, %k, %v {causal = true} : f32[2, 3, 3]\n",
     -1.5, 1.5, 0, 0},
    {"attention S < T", PARAM("q", "f32[2, 3, 4]") PARAM("k", "f32[2, 5, 4]")
     PARAM("v", "f32[2, 5, 3]") "%y = attention %q, %k, %v {causal = false} : f32[2, 3, 3]\n",
     -1.5, 1.5, 0, 0},
    {"attention causal S > T", PARAM("q", "f32[2, 5, 4]") PARAM("k", "f32[2, 3, 4]")
     PARAM("v", "f32[2, 3, 3]") "%y = attention %q, %k, %v {causal = true} : f32[2, 5, 3]\n",
     -1.5, 1.5, 0, 0},
    {"attention causal 4-D", PARAM("q", "f32[1, 2, 4, 3]") PARAM("k", "f32[1, 2, 4, 3]")
     PARAM("v", "f32[1, 2, 4, 2]") "%y = attention %q, %k, %v {causal = true} : f32[1, 2, 4, 2]\n",
     -1.5, 1.5, 0, 0},
};

#define REDUCE(name, ax, kd, type)                                                   \
    {name " axis " #ax " keepdims " #kd, P3x4 "%y = " name " %a {axis = " #ax        \
     ", keepdims = " #kd "} : " type "\n", -2, 2, 0, 0}

static const gcase reduce_cases[] = {
    REDUCE("sum", 0, false, "f32[4]"),     REDUCE("sum", 1, true, "f32[3, 1]"),
    REDUCE("sum", 0, true, "f32[1, 4]"),   REDUCE("sum", 1, false, "f32[3]"),
    REDUCE("mean", 0, false, "f32[4]"),    REDUCE("mean", 1, true, "f32[3, 1]"),
    REDUCE("mean", 0, true, "f32[1, 4]"),  REDUCE("mean", 1, false, "f32[3]"),
    REDUCE("amax", 0, false, "f32[4]"),    REDUCE("amax", 1, true, "f32[3, 1]"),
    REDUCE("amax", 0, true, "f32[1, 4]"),  REDUCE("amax", 1, false, "f32[3]"),
    {"sum middle axis", PARAM("a", "f32[2, 3, 4]")
     "%y = sum %a {axis = 1, keepdims = false} : f32[2, 4]\n", -2, 2, 0, 0},
    {"mean middle axis", PARAM("a", "f32[2, 3, 4]")
     "%y = mean %a {axis = 1, keepdims = true} : f32[2, 1, 4]\n", -2, 2, 0, 0},
    {"amax middle axis", PARAM("a", "f32[2, 3, 4]")
     "%y = amax %a {axis = 1, keepdims = false} : f32[2, 4]\n", -2, 2, 0, 0},
    {"softmax axis 0", P3x4 "%y = softmax %a {axis = 0} : f32[3, 4]\n", -2, 2, 0, 0},
    {"softmax axis 1", P3x4 "%y = softmax %a {axis = 1} : f32[3, 4]\n", -2, 2, 0, 0},
    {"softmax middle axis", PARAM("a", "f32[2, 3, 4]") "%y = softmax %a {axis = 1} : f32[2, 3, 4]\n",
     -2, 2, 0, 0},
    {"layernorm", PARAM("x", "f32[3, 5]") PARAM("g", "f32[5]") PARAM("b", "f32[5]")
     "%y = layernorm %x, %g, %b {eps = 1e-05} : f32[3, 5]\n", -2, 2, 0, 0},
    {"layernorm 3-D", PARAM("x", "f32[2, 2, 5]") PARAM("g", "f32[5]") PARAM("b", "f32[5]")
     "%y = layernorm %x, %g, %b {eps = 1e-05} : f32[2, 2, 5]\n", -2, 2, 0, 0},
    {"rmsnorm", PARAM("x", "f32[3, 5]") PARAM("g", "f32[5]")
     "%y = rmsnorm %x, %g {eps = 1e-06} : f32[3, 5]\n", -2, 2, 0, 0},
    {"rmsnorm 3-D", PARAM("x", "f32[2, 2, 5]") PARAM("g", "f32[5]")
     "%y = rmsnorm %x, %g {eps = 1e-06} : f32[2, 2, 5]\n", -2, 2, 0, 0},
};

static const gcase layout_cases[] = {
    {"transpose 2-D", P3x4 "%y = transpose %a {perm = [1, 0]} : f32[4, 3]\n", -2, 2, 0, 0},
    {"transpose 3-D", PARAM("a", "f32[2, 3, 4]")
     "%y = transpose %a {perm = [2, 0, 1]} : f32[4, 2, 3]\n", -2, 2, 0, 0},
    {"reshape", P3x4 "%y = reshape %a {shape = [2, 6]} : f32[2, 6]\n", -2, 2, 0, 0},
    {"reshape 3-D", PARAM("a", "f32[2, 3, 4]") "%y = reshape %a {shape = [6, 4]} : f32[6, 4]\n",
     -2, 2, 0, 0},
    {"narrow middle", PARAM("a", "f32[2, 5, 3]")
     "%y = narrow %a {dim = 1, offset = 1, bound = 3} : f32[2, 2, 3]\n", -2, 2, 0, 0},
    {"narrow first", P3x4 "%y = narrow %a {dim = 0, offset = 0, bound = 2} : f32[2, 4]\n",
     -2, 2, 0, 0},
    {"narrow last", P3x4 "%y = narrow %a {dim = 1, offset = 3, bound = 4} : f32[3, 1]\n",
     -2, 2, 0, 0},
    {"concat 2", P3x4 PARAM("b", "f32[3, 2]") "%y = concat %a, %b {dim = 1} : f32[3, 6]\n",
     -2, 2, 0, 0},
    {"concat 4, one operand twice", P3x4 PARAM("b", "f32[1, 4]")
     "%y = concat %b, %a, %b, %a {dim = 0} : f32[8, 4]\n", -2, 2, 0, 0},
    {"embedding", PARAM("t", "f32[5, 3]") IN("ids", "i32[7]")
     "%y = embedding %t, %ids : f32[7, 3]\n", -2, 2, 0, 5},
    {"embedding 2-D ids", PARAM("t", "f32[4, 3]") IN("ids", "i32[2, 4]")
     "%y = embedding %t, %ids : f32[2, 4, 3]\n", -2, 2, 0, 4},
    {"mse", P3x4 IN("t", "f32[3, 4]") "%loss = mse %a, %t : f32[]\n", -2, 2, 0, 0},
    {"mse both params", P3x4 PARAM("b", "f32[3, 4]") "%loss = mse %a, %b : f32[]\n", -2, 2, 0, 0},
    {"cross_entropy", PARAM("x", "f32[4, 5]") IN("l", "i32[4]")
     "%loss = cross_entropy %x, %l : f32[]\n", -2, 2, 0, 5},
    {"cross_entropy 3-D", PARAM("x", "f32[2, 3, 5]") IN("l", "i32[2, 3]")
     "%loss = cross_entropy %x, %l : f32[]\n", -2, 2, 0, 5},
    {"cross_entropy 1-D", PARAM("x", "f32[5]") IN("l", "i32[]")
     "%loss = cross_entropy %x, %l : f32[]\n", -2, 2, 0, 5},
};

static const gcase model_cases[] = {
    /* w three times, e twice: shares must add up */
    {"param used twice", PARAM("w", "f32[3, 3]") IN("x", "f32[2, 3]")
     "%h = matmul %x, %w : f32[2, 3]\n%h2 = matmul %h, %w : f32[2, 3]\n"
     "%s = sum %w {axis = 0, keepdims = false} : f32[3]\n%e = exp %h2 : f32[2, 3]\n"
     "%e2 = mul %e, %e : f32[2, 3]\n%y = add %e2, %s : f32[2, 3]\n", -0.7, 0.7, 0, 0},
    {"mlp gelu", IN("x", "f32[4, 5]") PARAM("w1", "f32[5, 6]") PARAM("b1", "f32[6]")
     PARAM("w2", "f32[6, 3]") PARAM("b2", "f32[3]") IN("t", "f32[4, 3]")
     "%h = matmul %x, %w1 : f32[4, 6]\n%hb = add %h, %b1 : f32[4, 6]\n"
     "%g = gelu %hb : f32[4, 6]\n%o = matmul %g, %w2 : f32[4, 3]\n"
     "%ob = add %o, %b2 : f32[4, 3]\n%loss = mse %ob, %t : f32[]\n", -1, 1, 0, 0},
    {"mlp silu cross_entropy", IN("x", "f32[4, 5]") PARAM("w1", "f32[5, 6]")
     PARAM("w2", "f32[6, 3]") IN("l", "i32[4]")
     "%h = matmul %x, %w1 : f32[4, 6]\n%g = silu %h : f32[4, 6]\n"
     "%o = matmul %g, %w2 : f32[4, 3]\n%loss = cross_entropy %o, %l : f32[]\n", -1, 1, 0, 3},
    /* embedding, layernorm, per-head attention, residual, logits */
    {"attention block", PARAM("emb", "f32[6, 4]") IN("ids", "i32[2, 3]")
     PARAM("g", "f32[4]") PARAM("b", "f32[4]") PARAM("wq", "f32[4, 4]") PARAM("wk", "f32[4, 4]")
     PARAM("wv", "f32[4, 4]") IN("l", "i32[2, 3]")
     "%x = embedding %emb, %ids : f32[2, 3, 4]\n"
     "%n = layernorm %x, %g, %b {eps = 1e-05} : f32[2, 3, 4]\n"
     "%q = matmul %n, %wq : f32[2, 3, 4]\n%k = matmul %n, %wk : f32[2, 3, 4]\n"
     "%v = matmul %n, %wv : f32[2, 3, 4]\n"
     "%qh = reshape %q {shape = [2, 3, 2, 2]} : f32[2, 3, 2, 2]\n"
     "%kh = reshape %k {shape = [2, 3, 2, 2]} : f32[2, 3, 2, 2]\n"
     "%vh = reshape %v {shape = [2, 3, 2, 2]} : f32[2, 3, 2, 2]\n"
     "%qt = transpose %qh {perm = [0, 2, 1, 3]} : f32[2, 2, 3, 2]\n"
     "%kt = transpose %kh {perm = [0, 2, 1, 3]} : f32[2, 2, 3, 2]\n"
     "%vt = transpose %vh {perm = [0, 2, 1, 3]} : f32[2, 2, 3, 2]\n"
     "%a = attention %qt, %kt, %vt {causal = true} : f32[2, 2, 3, 2]\n"
     "%at = transpose %a {perm = [0, 2, 1, 3]} : f32[2, 3, 2, 2]\n"
     "%ar = reshape %at {shape = [2, 3, 4]} : f32[2, 3, 4]\n"
     "%r = add %x, %ar : f32[2, 3, 4]\n"
     "%et = transpose %emb {perm = [1, 0]} : f32[4, 6]\n"
     "%o = matmul %r, %et : f32[2, 3, 6]\n%loss = cross_entropy %o, %l : f32[]\n",
     -1, 1, 0, 6},
};

#define RUN_CASES(cases, seed) run_cases(cases, sizeof cases / sizeof *cases, seed)

/* ---- the optimizer ---- */

/* A training module stepped by hand: after each run, the evaluator holds
 * every update's new value, and data the params and states it started
 * from. */
typedef struct step {
    ir_module *m;
    pass_grads gr;
    ev_module *ev;
    double **data;      /* by op index: the data of params and states */
} step;

static const char optim_body[] =
    IN("x", "f32[4, 3]") PARAM("w", "f32[3, 2]") PARAM("b", "f32[2]") IN("t", "f32[4, 2]")
    "%h = matmul %x, %w : f32[4, 2]\n%o = add %h, %b : f32[4, 2]\n"
    "%loss = mse %o, %t : f32[]\n";

/* The value of v in the last run, NULL when not computed. */
static const double *val(const step *s, const ir_value *v) { return ev_value(s->ev, v); }

static const double *grad_of(const step *s, const ir_value *p)
{
    for (int i = 0; i < s->gr.n; i++)
        if (s->gr.param[i] == p)
            return val(s, s->gr.grad[i]);
    return NULL;
}

static void step_check(const char *what, const char *name, const double *got,
                       const double *want, size_t n)
{
    check_count++;
    for (size_t j = 0; j < n; j++)
        if (!got || !close_to(got[j], want[j], 1e-12, 1e-10)) {
            check_failures++;
            fprintf(stderr, "optimizer %s: %s[%zu] = %.12g, want %.12g\n", what, name, j,
                    got ? got[j] : NAN, want[j]);
            return;
        }
}

/* Parses and differentiates the optimizer module with train line tl, sets
 * random params and inputs; states stay at their init (zeros). */
static bool step_begin(step *s, const char *tl)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", optim_body, tl);
    memset(s, 0, sizeof *s);
    s->m = parse(text);
    su_buf err;
    su_buf_init(&err, &oom);
    bool ok = pass_autodiff(s->m, &s->gr, &err, NULL) && ir_verify(s->m, &err);
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "optimizer %.*s: %s\n", (int)strcspn(tl, "\n"), tl, err.s);
    su_buf_free(&err);
    if (!ok)
        return false;
    s->ev = ev_new(s->m);
    gcase c = {.lo = -1, .hi = 1};
    s->data = make_sources(&c, s->m, s->ev, 42);
    for (int i = 0; i < s->m->ops.n; i++) {
        const ir_op *op = IR_OP(s->m, i);
        if (op->code == IR_STATE) {
            CHECK(op->a->init.kind == IR_INIT_ZEROS);
            s->data[i] = calloc(numel(&op->res[0]->type), sizeof(double));
        }
    }
    return true;
}

/* Evaluates the step; false (with a failed check) on an error. */
static bool step_run(step *s)
{
    char err[256];
    bool ok = ev_run(s->ev, err, sizeof err);
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "optimizer: evaluation failed: %s\n", err);
    return ok;
}

/* Moves every param and state to its updated value for the next step. */
static void step_advance(step *s)
{
    for (int u = 0; u < s->m->updates.n; u++) {
        const ir_update *up = IR_UPDATE(s->m, u);
        const ir_op *op = up->src->def;
        int k = 0;
        while (IR_OP(s->m, k) != op)
            k++;
        memcpy(s->data[k], val(s, up->v), numel(&up->v->type) * sizeof(double));
    }
    for (int i = 0; i < s->m->ops.n; i++)
        if (s->data[i])
            ev_set(s->ev, IR_OP(s->m, i)->a->name, s->data[i]);
}

static void step_end(step *s)
{
    for (int i = 0; s->data && i < s->m->ops.n; i++)
        free(s->data[i]);
    free(s->data);
    ev_free(s->ev);
    ir_module_free(s->m);
}

/* The update of source src, or NULL. */
static const ir_value *update_of(const ir_module *m, const ir_value *src)
{
    for (int u = 0; u < m->updates.n; u++)
        if (IR_UPDATE(m, u)->src == src)
            return IR_UPDATE(m, u)->v;
    return NULL;
}

typedef struct optim {
    const char *name;       /* for messages */
    const char *train;      /* the train line */
    bool adamw;
    double lr, momentum, beta1, beta2, eps, wd;
} optim;

enum { R_NONE, R_BUF, R_M, R_V, R_STEP };
static const char *const role_names[] = {"none", "momentum buffer", "adam m", "adam v", "step"};

/* The new value of a state of role r, from its value st, its param's p
 * and gradient g (n elements). */
static void state_want(const optim *o, int r, const double *p, const double *g,
                       const double *st, double *out, size_t n)
{
    for (size_t j = 0; j < n; j++)
        out[j] = r == R_BUF ? o->momentum * st[j] + g[j] + o->wd * p[j]
               : r == R_M   ? o->beta1 * st[j] + (1 - o->beta1) * g[j]
               : r == R_V   ? o->beta2 * st[j] + (1 - o->beta2) * g[j] * g[j]
                            : st[j] + 1;
}

/* True when got equals what state_want gives. */
static bool state_is(const step *s, const optim *o, int r, int k, int owner, const double *got)
{
    const ir_value *v = IR_OP(s->m, k)->res[0];
    size_t n = numel(&v->type);
    const double *p = owner >= 0 ? s->data[owner] : NULL;
    const double *g = owner >= 0 ? grad_of(s, IR_OP(s->m, owner)->res[0]) : NULL;
    if (r != R_STEP && (!g || !ir_type_eq(&v->type, &IR_OP(s->m, owner)->res[0]->type)))
        return false;
    double *want = calloc(n, sizeof *want);
    state_want(o, r, p, g, s->data[k], want, n);
    bool ok = got != NULL;
    for (size_t j = 0; ok && j < n; j++)
        ok = close_to(got[j], want[j], 1e-12, 1e-10);
    free(want);
    return ok;
}

/* After the first step (states at zero), tells each state's role and
 * param (op indices) by which formula its update matches. */
static bool assign_roles(const step *s, const optim *o, int *role, int *owner)
{
    bool ok = true;
    for (int k = 0; k < s->m->ops.n; k++) {
        const ir_op *op = IR_OP(s->m, k);
        role[k] = R_NONE;
        owner[k] = -1;
        if (op->code != IR_STATE)
            continue;
        const double *got = val(s, update_of(s->m, op->res[0]));
        for (int r = o->adamw ? R_M : R_BUF; r <= (o->adamw ? R_STEP : R_BUF) && !role[k]; r++)
            for (int q = r == R_STEP ? -1 : 0; q < s->m->ops.n && !role[k]; q++)
                if ((q < 0 || IR_OP(s->m, q)->code == IR_PARAM) && state_is(s, o, r, k, q, got)) {
                    role[k] = r;
                    owner[k] = q;
                }
        check_count++;
        if (!role[k]) {
            ok = false;
            check_failures++;
            fprintf(stderr, "optimizer %s: the update of state %s matches no formula\n",
                    o->name, op->a->name);
        }
    }
    return ok;
}

/* The op index of the state of role r owned by param op k (or any, for
 * the step count), or -1. */
static int state_for(const step *s, const int *role, const int *owner, int r, int k)
{
    for (int i = 0; i < s->m->ops.n; i++)
        if (role[i] == r && (r == R_STEP || owner[i] == k))
            return i;
    return -1;
}

/* The new value of param op k (n elements, gradient g) into out. */
static bool param_want(const step *s, const optim *o, const int *role, const int *owner, int k,
                       const double *g, double *out, size_t n)
{
    const double *p = s->data[k];
    int b = state_for(s, role, owner, R_BUF, k), m = state_for(s, role, owner, R_M, k);
    int v = state_for(s, role, owner, R_V, k), t = state_for(s, role, owner, R_STEP, k);
    if (o->adamw ? m < 0 || v < 0 || t < 0 : b < 0)
        return false;
    double step_no = o->adamw ? s->data[t][0] + 1 : 0;
    for (size_t j = 0; j < n; j++) {
        if (!o->adamw) {
            out[j] = p[j] - o->lr * (o->momentum * s->data[b][j] + g[j] + o->wd * p[j]);
            continue;
        }
        double mj = o->beta1 * s->data[m][j] + (1 - o->beta1) * g[j];
        double vj = o->beta2 * s->data[v][j] + (1 - o->beta2) * g[j] * g[j];
        double mhat = mj / (1 - pow(o->beta1, step_no)), vhat = vj / (1 - pow(o->beta2, step_no));
        out[j] = p[j] * (1 - o->lr * o->wd) - o->lr * mhat / (sqrt(vhat) + o->eps);
    }
    return true;
}

/* Checks every update of the step just run against its formula. */
static void check_step(const step *s, const optim *o, const int *role, const int *owner,
                       int step_no)
{
    char what[300];
    snprintf(what, sizeof what, "%s, step %d", o->name, step_no);
    for (int k = 0; k < s->m->ops.n; k++) {
        const ir_op *op = IR_OP(s->m, k);
        const ir_value *up = update_of(s->m, op->res[0]);
        size_t n = numel(&op->res[0]->type);
        double *want = calloc(n, sizeof *want);
        if (op->code == IR_STATE && role[k]) {
            const double *g = owner[k] >= 0 ? grad_of(s, IR_OP(s->m, owner[k])->res[0]) : NULL;
            state_want(o, role[k], owner[k] >= 0 ? s->data[owner[k]] : NULL, g, s->data[k],
                       want, n);
            step_check(what, su_sprintf(&s->m->arena, "%s (%s)", op->a->name, role_names[role[k]]),
                       up ? val(s, up) : NULL, want, n);
        } else if (op->code == IR_PARAM) {
            const double *g = grad_of(s, op->res[0]);
            bool ok = g && param_want(s, o, role, owner, k, g, want, n);
            if (!ok)
                fprintf(stderr, "optimizer %s: param %s lacks a gradient or its state\n", what,
                        op->a->name);
            step_check(what, op->a->name, ok && up ? val(s, up) : NULL, want, n);
        }
        free(want);
    }
}

/* Two steps of the optimizer from zero state: the first tells which state
 * is which; both check every update. */
static void test_optimizer(const optim *o)
{
    step s;
    if (!step_begin(&s, o->train)) {
        step_end(&s);
        return;
    }
    int *role = calloc((size_t)s.m->ops.n, sizeof *role);
    int *owner = calloc((size_t)s.m->ops.n, sizeof *owner);
    int nparams = 0, nstates = 0;
    for (int i = 0; i < s.m->ops.n; i++) {
        nparams += IR_OP(s.m, i)->code == IR_PARAM;
        nstates += IR_OP(s.m, i)->code == IR_STATE;
    }
    /* sgd with momentum: a buffer a param; adamw: m and v a param, one step */
    CHECK_INT(nstates, o->adamw ? 2 * nparams + 1 : nparams);
    CHECK_INT(s.m->updates.n, nparams + nstates);
    if (step_run(&s) && assign_roles(&s, o, role, owner)) {
        check_step(&s, o, role, owner, 1);
        step_advance(&s);
        if (step_run(&s))
            check_step(&s, o, role, owner, 2);
    }
    free(role);
    free(owner);
    step_end(&s);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_autodiff: out of memory\n");
        return 1;
    }
    test_eval_contract();
    test_eval_norm();
    test_eval_layout();
    test_eval_elementwise();
    test_eval_act_grads();
    test_eval_optim();
    RUN_CASES(binary_cases, 1000);
    RUN_CASES(unary_cases, 2000);
    RUN_CASES(contract_cases, 3000);
    RUN_CASES(reduce_cases, 4000);
    RUN_CASES(layout_cases, 5000);
    RUN_CASES(model_cases, 6000);
    test_optimizer(&(optim){.name = "sgd momentum",
                            .train = "train %loss with sgd(lr = 0.1, momentum = 0.9, wd = 0.01)\n",
                            .lr = 0.1, .momentum = 0.9, .wd = 0.01});
    test_optimizer(&(optim){.name = "adamw",
                            .train = "train %loss with adamw(lr = 0.01, beta1 = 0.9, "
                                     "beta2 = 0.999, eps = 1e-08, wd = 0.1)\n",
                            .adamw = true, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999,
                            .eps = 1e-8, .wd = 0.1});
    return CHECK_DONE();
}
