/* expr.c: expressions: integer constant expressions (shapes, counts),
 * tensor expressions with literal folding, and the builtin calls of
 * LANGUAGE.md §7 bound by a signature table. */
#include "lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- integer constants ---- */

/* The op of an AST_BINARY's symbol (parser.y: 'l' is <=, 'g' >=, 'e' ==,
 * 'n' !=); '@' is matmul's. */
static const ir_opcode binops[128] = {
    ['+'] = IR_ADD, ['-'] = IR_SUB, ['*'] = IR_MUL, ['/'] = IR_DIV, ['@'] = IR_MATMUL,
    ['<'] = IR_LESS, ['l'] = IR_LESS_EQ, ['>'] = IR_GREATER, ['g'] = IR_GREATER_EQ,
    ['e'] = IR_EQUAL, ['n'] = IR_NOT_EQUAL,
};

static int64_t const_binary(fe_lower *L, const ast_node *n, int64_t a, int64_t b)
{
    int64_t r;
    switch (n->op) {
    case '+':
        if (!su_add64(a, b, &r))
            fe_fail(L, n->loc, "integer overflow in '+'");
        return r;
    case '-':
        if (b == INT64_MIN || !su_add64(a, -b, &r))
            fe_fail(L, n->loc, "integer overflow in '-'");
        return r;
    case '*':
        if (!su_mul64(a, b, &r))
            fe_fail(L, n->loc, "integer overflow in '*'");
        return r;
    case '/':
        if (b == 0)
            fe_fail(L, n->loc, "division by zero");
        if (a == INT64_MIN && b == -1)
            fe_fail(L, n->loc, "integer overflow in '/'");
        if (a % b != 0)
            fe_fail(L, n->loc, "%lld / %lld is not exact (remainder %lld)", (long long)a,
                    (long long)b, (long long)(a % b));
        return a / b;
    default:
        fe_fail(L, n->loc, "'%s' is not allowed in an integer constant expression",
                ir_op_display(binops[n->op & 127]));
    }
}

enum { MAX_DEPTH = 1000 };

static void enter(fe_lower *L, const ast_node *n)
{
    if (++L->depth > MAX_DEPTH)
        fe_fail(L, n->loc, "the expression is nested more than %d levels deep", MAX_DEPTH);
}

static int64_t const_eval(fe_lower *L, fe_scope *s, const ast_node *n);

int64_t fe_const_eval(fe_lower *L, fe_scope *s, const ast_node *n)
{
    enter(L, n);
    int64_t v = const_eval(L, s, n);
    L->depth--;
    return v;
}

static int64_t const_eval(fe_lower *L, fe_scope *s, const ast_node *n)
{
    switch (n->kind) {
    case AST_INT:
        return n->ival;
    case AST_NAME: {
        fe_sym *sym = fe_lookup(L, s, n->str);
        if (!sym)
            fe_fail(L, n->loc, "unknown name '%s'", n->str);
        if (sym->kind != SYM_CONST)
            fe_fail(L, n->loc, "'%s' is not an integer constant", n->str);
        return sym->c;
    }
    case AST_BINARY:
        return const_binary(L, n, fe_const_eval(L, s, n->lhs), fe_const_eval(L, s, n->rhs));
    case AST_NEG: {
        int64_t v = fe_const_eval(L, s, n->lhs);
        if (v == INT64_MIN)
            fe_fail(L, n->loc, "integer overflow in '-'");
        return -v;
    }
    default:
        fe_fail(L, n->loc, "expected an integer constant expression");
    }
}

/* ---- types ---- */

void fe_type_str(char *out, size_t n, const ir_type *t)
{
    int k = snprintf(out, n, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k > 0 && (size_t)k < n; i++)
        k += snprintf(out + k, n - (size_t)k, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    if (k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, "]");
}

ir_dtype fe_dtype(const fe_lower *L, ir_dtype t)
{
    return t == IR_F32 && L->opt->dtype_set ? (ir_dtype)L->opt->dtype : t;
}

ir_type fe_type_eval(fe_lower *L, fe_scope *s, const ast_type *t, const char *what)
{
    ir_type ty = {.dtype = fe_dtype(L, t->dtype)};
    int64_t numel = 1;
    for (const ast_node *d = t->dims; d; d = d->next) {
        if (ty.rank == IR_MAX_RANK)
            fe_fail(L, d->loc, "'%s' has more than %d dimensions", what, IR_MAX_RANK);
        int64_t v = fe_const_eval(L, s, d);
        if (v < 1)
            fe_fail(L, d->loc, "dimension %d of '%s' is %lld; sizes must be at least 1",
                    ty.rank, what, (long long)v);
        if (!su_mul64(numel, v, &numel))
            fe_fail(L, d->loc, "'%s' has too many elements", what);
        ty.dim[ty.rank++] = v;
    }
    return ty;
}

/* ---- tensors and literals ---- */

#define emit fe_emit

ir_value *fe_emit(fe_lower *L, ir_opcode code, ir_value **in, int nin, ir_attrs *a, su_loc loc)
{
    char err[256];
    ir_attrs none = {0};
    fe_tick(L, loc);
    ir_value *v = ir_emit(L->m, code, in, nin, a ? a : &none, err, sizeof err);
    if (!v)
        fe_fail(L, loc, "%s", err);
    v->def->loc = loc;
    v->def->rep = L->rep;
    v->def->recompute = L->recompute;
    return v;
}

ir_value *fe_tensor(fe_lower *L, fe_val v, ir_dtype dt, su_loc loc)
{
    if (v.v)
        return v.v;
    if (!isfinite(v.num))
        fe_fail(L, loc, "this number is not finite (it overflows or divides by zero)");
    if (dt == IR_BOOL)
        fe_fail(L, loc, "a number cannot be used as a bool (compare it with a tensor instead)");
    if (dt == IR_I32 && !v.is_int) {
        char text[32];
        su_fmt_double(text, v.num);
        fe_fail(L, loc, "the number %s cannot be used with an i32 tensor (cast the tensor)",
                text);
    }
    fe_tick(L, loc);
    ir_type t = {.dtype = dt, .rank = 0};
    ir_attrs a = {.value = v.num};
    ir_op *op = ir_append(L->m, IR_CONST, NULL, 0, &a, &t);
    op->loc = loc;
    op->rep = L->rep;
    return op->res[0];
}

static fe_val num(double x, bool is_int)
{
    return (fe_val){.num = x, .is_int = is_int};
}

static double fold_unary(ir_opcode code, double x)
{
    switch (code) {
    case IR_NEG: return -x;
    case IR_ABS: return fabs(x);
    case IR_RELU: return x > 0 ? x : 0;
    case IR_GELU: return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case IR_SILU: return x / (1 + exp(-x));
    case IR_TANH: return tanh(x);
    case IR_SIGMOID: return 1 / (1 + exp(-x));
    case IR_EXP: return exp(x);
    case IR_LOG: return log(x);
    case IR_SQRT: return sqrt(x);
    case IR_RSQRT: return 1 / sqrt(x);
    case IR_SIN: return sin(x);
    case IR_COS: return cos(x);
    default: su_unreachable();
    }
}

static fe_val fold_binary(ir_opcode code, fe_val a, fe_val b)
{
    bool ints = a.is_int && b.is_int;
    switch (code) {
    case IR_ADD: return num(a.num + b.num, ints);
    case IR_SUB: return num(a.num - b.num, ints);
    case IR_MUL: return num(a.num * b.num, ints);
    case IR_DIV: return num(a.num / b.num, false);
    case IR_MAX: return num(a.num > b.num ? a.num : b.num, ints);
    case IR_MIN: return num(a.num < b.num ? a.num : b.num, ints);
    case IR_POW: return num(pow(a.num, b.num), false);
    default: su_unreachable();
    }
}

static bool is_compare(ir_opcode code)
{
    return code >= IR_LESS && code <= IR_NOT_EQUAL;
}

/* a OP b for an elementwise binary op; numbers fold, a number meeting a
 * tensor takes the tensor's dtype. A comparison needs a tensor, and a
 * bool tensor is compared only with another. */
static fe_val binary(fe_lower *L, ir_opcode code, fe_val a, fe_val b, su_loc loc)
{
    if (!a.v && !b.v && is_compare(code))
        fe_fail(L, loc, "'%s' compares two numbers: a comparison needs a tensor on one side",
                ir_op_display(code));
    if (!a.v && !b.v)
        return fold_binary(code, a, b);
    ir_dtype dt = a.v ? a.v->type.dtype : b.v->type.dtype;
    if (dt == IR_BOOL && (!a.v || !b.v))
        fe_fail(L, loc, "a bool tensor meets a number in '%s' (use the tensor itself, or "
                "cast it to a number type)", ir_op_display(code));
    ir_value *in[2] = {fe_tensor(L, a, dt, loc), fe_tensor(L, b, dt, loc)};
    return (fe_val){.v = emit(L, code, in, 2, NULL, loc)};
}

static fe_val unary(fe_lower *L, ir_opcode code, fe_val a, su_loc loc)
{
    if (!a.v)
        return num(fold_unary(code, a.num), code == IR_NEG || code == IR_ABS ? a.is_int : false);
    return (fe_val){.v = emit(L, code, &a.v, 1, NULL, loc)};
}

double fe_number(fe_lower *L, fe_scope *s, const ast_node *n, const char *what)
{
    if (n->kind == AST_BOOL || n->kind == AST_STRING || n->kind == AST_LIST ||
        n->kind == AST_DTYPE || n->kind == AST_KWARG)
        fe_fail(L, n->loc, "%s must be a number", what);
    fe_val v = fe_eval(L, s, NULL, n);
    if (v.v)
        fe_fail(L, n->loc, "%s must be a number, not a tensor", what);
    if (!isfinite(v.num))
        fe_fail(L, n->loc, "%s is not finite (it overflows or divides by zero)", what);
    return v.num;
}

/* ---- builtin calls ---- */

typedef enum { P_TENSOR, P_INT, P_FLOAT, P_BOOL, P_LIST, P_DTYPE } fe_pkind;

typedef struct fe_param {
    const char *name;
    fe_pkind kind;
    bool optional;
    double def;          /* default of an optional number or bool */
} fe_param;

typedef struct fe_builtin {
    const char *name;
    ir_opcode code;
    int np;
    fe_param p[6];
} fe_builtin;

#define T(n) {n, P_TENSOR, false, 0}
static const fe_builtin builtins[] = {
    {"relu", IR_RELU, 1, {T("x")}},       {"gelu", IR_GELU, 1, {T("x")}},
    {"silu", IR_SILU, 1, {T("x")}},       {"tanh", IR_TANH, 1, {T("x")}},
    {"sigmoid", IR_SIGMOID, 1, {T("x")}}, {"exp", IR_EXP, 1, {T("x")}},
    {"log", IR_LOG, 1, {T("x")}},         {"sqrt", IR_SQRT, 1, {T("x")}},
    {"rsqrt", IR_RSQRT, 1, {T("x")}},     {"neg", IR_NEG, 1, {T("x")}},
    {"abs", IR_ABS, 1, {T("x")}},         {"sin", IR_SIN, 1, {T("x")}},
    {"cos", IR_COS, 1, {T("x")}},         {"stop_gradient", IR_STOP_GRADIENT, 1, {T("x")}},
    {"max", IR_MAX, 2, {T("a"), T("b")}}, {"min", IR_MIN, 2, {T("a"), T("b")}},
    {"pow", IR_POW, 2, {T("a"), T("b")}},
    {"where", IR_WHERE, 3, {T("cond"), T("a"), T("b")}},
    {"dropout", IR_DROPOUT, 2, {T("x"), {"p", P_FLOAT, false, 0}}},
    {"sum", IR_SUM, 3, {T("x"), {"axis", P_INT, true, 0}, {"keepdims", P_BOOL, true, 0}}},
    {"mean", IR_MEAN, 3, {T("x"), {"axis", P_INT, true, 0}, {"keepdims", P_BOOL, true, 0}}},
    {"amax", IR_AMAX, 3, {T("x"), {"axis", P_INT, true, 0}, {"keepdims", P_BOOL, true, 0}}},
    {"softmax", IR_SOFTMAX, 2, {T("x"), {"axis", P_INT, true, -1}}},
    {"arange", IR_IOTA, 1, {{"n", P_INT, false, 0}}},
    {"layernorm", IR_LAYERNORM, 4, {T("x"), T("g"), T("b"), {"eps", P_FLOAT, true, 1e-5}}},
    {"rmsnorm", IR_RMSNORM, 3, {T("x"), T("g"), {"eps", P_FLOAT, true, 1e-6}}},
    {"transpose", IR_TRANSPOSE, 2, {T("x"), {"perm", P_LIST, true, 0}}},
    {"reshape", IR_RESHAPE, 2, {T("x"), {"shape", P_LIST, false, 0}}},
    {"cast", IR_CAST, 2, {T("x"), {"dtype", P_DTYPE, false, 0}}},
    {"embedding", IR_EMBEDDING, 2, {T("table"), T("ids")}},
    {"attention", IR_ATTENTION, 6, {T("q"), T("k"), T("v"), {"causal", P_BOOL, true, 1},
                                    {"scale", P_FLOAT, true, 0}, {"mask", P_TENSOR, true, 0}}},
    {"mse", IR_MSE, 2, {T("pred"), T("target")}},
    {"cross_entropy", IR_XENT, 2, {T("logits"), T("labels")}},
};
#undef T

/* The arguments of one builtin call, bound to its parameters. */
typedef struct fe_args {
    const ast_node *node[6]; /* NULL: not given */
    fe_val t[6];
    double num[6];
    int nlist;
    int64_t list[IR_MAX_RANK];
    ir_dtype dtype;
} fe_args;

void fe_bind(fe_lower *L, const char *fn, const char *const *names, const bool *optional,
             int np, const ast_node *call, const ast_node **node)
{
    char list[128] = "";
    for (int i = 0; i < np; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 names[i]);
    int pos = 0;
    for (const ast_node *a = call->args; a; a = a->next) {
        int i = -1;
        if (a->kind == AST_KWARG) {
            for (int k = 0; k < np && i < 0; k++)
                if (!strcmp(names[k], a->str))
                    i = k;
            if (i < 0)
                fe_fail(L, a->loc, "'%s' has no argument named '%s' (its arguments: %s)", fn,
                        a->str, list);
        } else if ((i = pos++) >= np) {
            fe_fail(L, a->loc, "too many arguments to '%s' (it takes %s)", fn, list);
        }
        if (node[i])
            fe_fail(L, a->loc, "argument '%s' of '%s' is given twice", names[i], fn);
        node[i] = a->kind == AST_KWARG ? a->lhs : a;
    }
    for (int i = 0; i < np; i++)
        if (!node[i] && !(optional && optional[i]))
            fe_fail(L, call->loc, "'%s' needs argument '%s'", fn, names[i]);
}

/* Matches the call's positional and keyword arguments to b's parameters. */
static void bind_args(fe_lower *L, const fe_builtin *b, const ast_node *call, fe_args *A)
{
    const char *names[6] = {0};
    bool optional[6] = {0};
    for (int i = 0; i < b->np; i++) {
        names[i] = b->p[i].name;
        optional[i] = b->p[i].optional;
    }
    fe_bind(L, b->name, names, optional, b->np, call, A->node);
}

static void eval_list(fe_lower *L, fe_scope *s, const fe_builtin *b, int i, const ast_node *n,
                      fe_args *A)
{
    if (n->kind != AST_LIST)
        fe_fail(L, n->loc, "argument '%s' of '%s' must be a list like [1, 0]", b->p[i].name,
                b->name);
    A->nlist = 0;
    for (const ast_node *e = n->args; e; e = e->next) {
        if (A->nlist == IR_MAX_RANK)
            fe_fail(L, e->loc, "argument '%s' of '%s' has more than %d entries", b->p[i].name,
                    b->name, IR_MAX_RANK);
        A->list[A->nlist++] = fe_const_eval(L, s, e);
    }
}

/* Evaluates each bound argument as its parameter's kind requires. */
static void eval_args(fe_lower *L, fe_scope *s, fe_frame *f, const fe_builtin *b, fe_args *A)
{
    char what[96];
    for (int i = 0; i < b->np; i++) {
        const ast_node *n = A->node[i];
        A->num[i] = b->p[i].def;
        if (!n)
            continue;
        snprintf(what, sizeof what, "argument '%s' of '%s'", b->p[i].name, b->name);
        switch (b->p[i].kind) {
        case P_TENSOR:
            A->t[i] = fe_eval(L, s, f, n);
            break;
        case P_INT:
            A->num[i] = (double)fe_const_eval(L, s, n);
            break;
        case P_FLOAT:
            A->num[i] = fe_number(L, s, n, what);
            break;
        case P_BOOL:
            if (n->kind != AST_BOOL)
                fe_fail(L, n->loc, "%s must be true or false", what);
            A->num[i] = (double)n->ival;
            break;
        case P_LIST:
            eval_list(L, s, b, i, n, A);
            break;
        case P_DTYPE:
            if (n->kind != AST_DTYPE)
                fe_fail(L, n->loc, "%s must be a dtype (f32, f16, bf16 or i32)", what);
            A->dtype = fe_dtype(L, n->dtype);
            break;
        }
    }
}

/* The tensor of argument i; a number is an error for ops that need a
 * tensor (reductions, normalisations, layouts, losses). */
static ir_value *need_tensor(fe_lower *L, const fe_builtin *b, fe_args *A, int i)
{
    if (!A->t[i].v)
        fe_fail(L, A->node[i]->loc, "argument '%s' of '%s' must be a tensor, not a number",
                b->p[i].name, b->name);
    return A->t[i].v;
}

/* sum/mean/amax without an axis reduce every axis, last first. */
static fe_val reduce_all(fe_lower *L, ir_opcode code, ir_value *x, bool keepdims, su_loc loc)
{
    int rank = x->type.rank;
    if (rank == 0)
        fe_fail(L, loc, "'%s' of a scalar has no axis to reduce", ir_op_display(code));
    for (int ax = rank - 1; ax >= 0; ax--) {
        ir_attrs a = {.axis = keepdims ? ax : x->type.rank - 1, .keepdims = keepdims};
        x = emit(L, code, &x, 1, &a, loc);
    }
    return (fe_val){.v = x};
}

/* x [..., G, T, e] with each of its G heads repeated r times, head after
 * head: [..., G r, T, e] (grouped-query attention's keys and values, so
 * that query head h reads head h / r). A reshape, an expand and a reshape:
 * split over an axis that divides G, the heads stay split. */
static ir_value *repeat_heads(fe_lower *L, ir_value *x, int64_t r, su_loc loc)
{
    int rank = x->type.rank;
    ir_attrs a = {.nlist = rank + 1};
    for (int d = 0, k = 0; d < rank; d++) {
        a.list[k++] = x->type.dim[d];
        if (d == rank - 3)
            a.list[k++] = 1;
    }
    ir_value *v = emit(L, IR_RESHAPE, &x, 1, &a, loc);
    a.list[rank - 2] = r;
    v = emit(L, IR_EXPAND, &v, 1, &a, loc);
    ir_attrs back = {.nlist = rank};
    memcpy(back.list, x->type.dim, (size_t)rank * sizeof *back.list);
    back.list[rank - 3] *= r;
    return emit(L, IR_RESHAPE, &v, 1, &back, loc);
}

static ir_value *scalar_of(fe_lower *L, double x, ir_dtype dt, su_loc loc)
{
    return fe_tensor(L, num(x, false), dt, loc);
}

/* x times the number c, computed in f32 and rounded to x's dtype once, as
 * PyTorch's bf16 and f16 arithmetic does (c itself is never rounded). */
static ir_value *scaled(fe_lower *L, ir_value *x, double c, su_loc loc)
{
    ir_dtype dt = x->type.dtype;
    ir_attrs f32 = {.dtype = IR_F32}, back = {.dtype = dt};
    ir_value *y = dt == IR_F32 ? x : emit(L, IR_CAST, &x, 1, &f32, loc);
    y = emit(L, IR_MUL, (ir_value *[]){y, scalar_of(L, c, IR_F32, loc)}, 2, NULL, loc);
    return dt == IR_F32 ? y : emit(L, IR_CAST, &y, 1, &back, loc);
}

/* attention(q, k, v, causal, scale, mask) (LANGUAGE.md §12). Grouped-query
 * attention (k and v with G heads dividing q's H) repeats the key and
 * value heads; scale S multiplies q by S sqrt(d), so the attention op's 1
 * / sqrt(d) gives S, as PyTorch's math attention scales its operands; a
 * mask is added to the scores, so the scores are made whole: q @ kT times
 * the scale, plus the mask and, when causal, -1e30 (f16: -65504) where j >
 * i + T - S, then softmax and @ v. */
static fe_val attention(fe_lower *L, const fe_builtin *b, fe_args *A, su_loc loc)
{
    ir_value *q = need_tensor(L, b, A, 0), *k = need_tensor(L, b, A, 1);
    ir_value *v = need_tensor(L, b, A, 2);
    bool causal = A->num[3] != 0;
    int rank = q->type.rank;
    if (rank >= 3 && k->type.rank == rank && v->type.rank == rank &&
        k->type.dim[rank - 3] < q->type.dim[rank - 3]) { /* fewer: grouped-query heads */
        int64_t h = q->type.dim[rank - 3], g = k->type.dim[rank - 3];
        if (g < 1 || h % g || v->type.dim[rank - 3] != g)
            fe_fail(L, A->node[1]->loc, "attention: the key and value heads (%lld and %lld) "
                    "must be equal and divide the query heads (%lld)", (long long)g,
                    (long long)v->type.dim[rank - 3], (long long)h);
        k = repeat_heads(L, k, h / g, loc);
        v = repeat_heads(L, v, h / g, loc);
    }
    /* a scalar q has no head dim: its shape rule refuses it at the emit */
    double d = rank >= 1 ? (double)q->type.dim[rank - 1] : 1.0;
    if (A->node[4] && !(A->num[4] > 0))
        fe_fail(L, A->node[4]->loc, "attention's scale must be positive, got %g", A->num[4]);
    double scale = A->node[4] ? A->num[4] : 1 / sqrt(d);
    ir_dtype dt = q->type.dtype;
    if (!A->node[5]) {
        if (A->node[4])
            q = scaled(L, q, scale * sqrt(d), loc);
        ir_attrs a = {.causal = causal};
        return (fe_val){.v = emit(L, IR_ATTENTION, (ir_value *[]){q, k, v}, 3, &a, loc)};
    }
    ir_value *mask = need_tensor(L, b, A, 5);
    if (rank < 2 || k->type.rank < 2)
        fe_fail(L, loc, "attention needs q and k of rank 2 or more");
    ir_attrs sw = {.nlist = k->type.rank};
    for (int i = 0; i < k->type.rank; i++)
        sw.list[i] = i;
    sw.list[k->type.rank - 2] = k->type.rank - 1;
    sw.list[k->type.rank - 1] = k->type.rank - 2;
    ir_value *kt = emit(L, IR_TRANSPOSE, &k, 1, &sw, loc);
    ir_value *s = emit(L, IR_MATMUL, (ir_value *[]){q, kt}, 2, NULL, loc);
    s = scaled(L, s, scale, loc);
    if (mask->type.dtype != dt)
        fe_fail(L, A->node[5]->loc, "attention's mask is %s, but the scores are %s",
                ir_dtype_name(mask->type.dtype), ir_dtype_name(dt));
    s = emit(L, IR_ADD, (ir_value *[]){s, mask}, 2, NULL, A->node[5]->loc);
    if (causal) {
        int64_t sq = q->type.dim[rank - 2], tk = k->type.dim[k->type.rank - 2];
        ir_attrs ia = {.nlist = 1, .list = {sq}}, ja = {.nlist = 1, .list = {tk}};
        ir_value *i = emit(L, IR_IOTA, NULL, 0, &ia, loc), *j = emit(L, IR_IOTA, NULL, 0, &ja, loc);
        ir_attrs f32 = {.dtype = IR_F32};
        i = emit(L, IR_CAST, &i, 1, &f32, loc);
        j = emit(L, IR_CAST, &j, 1, &f32, loc);
        ir_attrs col = {.nlist = 2, .list = {sq, 1}};
        i = emit(L, IR_RESHAPE, &i, 1, &col, loc);
        i = emit(L, IR_ADD, (ir_value *[]){i, scalar_of(L, (double)(tk - sq), IR_F32, loc)}, 2,
                 NULL, loc);
        ir_value *after = emit(L, IR_GT, (ir_value *[]){j, i}, 2, NULL, loc); /* [S, T] */
        ir_value *big = scalar_of(L, dt == IR_F16 ? -65504.0 : -1e30, IR_F32, loc);
        ir_value *cm = emit(L, IR_MUL, (ir_value *[]){after, big}, 2, NULL, loc);
        if (dt != IR_F32) {
            ir_attrs to = {.dtype = dt};
            cm = emit(L, IR_CAST, &cm, 1, &to, loc);
        }
        s = emit(L, IR_ADD, (ir_value *[]){s, cm}, 2, NULL, loc);
    }
    ir_attrs last = {.axis = -1};
    ir_value *p = emit(L, IR_SOFTMAX, &s, 1, &last, loc);
    return (fe_val){.v = emit(L, IR_MATMUL, (ir_value *[]){p, v}, 2, NULL, loc)};
}

/* where(c, a, b): numbers take the other operand's dtype; two numbers are
 * i32 when both are integers, else f32 (the --dtype's float). */
static fe_val where(fe_lower *L, fe_args *A, su_loc loc)
{
    fe_val a = A->t[1], b = A->t[2];
    if (!A->t[0].v)
        fe_fail(L, A->node[0]->loc, "where needs a bool tensor as its condition, not a number");
    ir_dtype dt = a.v ? a.v->type.dtype
                  : b.v ? b.v->type.dtype
                  : a.is_int && b.is_int ? IR_I32
                                         : fe_dtype(L, IR_F32);
    if (dt == IR_BOOL && (!a.v || !b.v))
        fe_fail(L, (a.v ? A->node[2] : A->node[1])->loc,
                "where picks between a bool tensor and a number (give two bool tensors, or "
                "cast the tensor to a number type)");
    ir_value *in[3] = {A->t[0].v, fe_tensor(L, a, dt, A->node[1]->loc),
                       fe_tensor(L, b, dt, A->node[2]->loc)};
    return (fe_val){.v = emit(L, IR_WHERE, in, 3, NULL, loc)};
}

/* An op of the forward made outside any repetition or recompute region: the
 * dropout key's, which every dropout reads. */
static ir_value *key_op(fe_lower *L, ir_opcode code, ir_value **in, int nin, const ir_attrs *a,
                        const ir_type *t)
{
    ir_op *op = ir_append(L->m, code, in, nin, a, t);
    op->rep = -1;
    return op->res[0];
}

/* The i32 key of dropout's bits in a training step: the state "rng.seed",
 * drawn from the run's seed, plus the step number (the state "opt.step"
 * plus one, which the optimizer counts) times 1000003, wrapping. Made at
 * the first dropout, once per module. */
static ir_value *dropout_key(fe_lower *L)
{
    if (L->dropout_key && L->dropout_key_m == L->m)
        return L->dropout_key;
    ir_type f = {.dtype = IR_F32}, i = {.dtype = IR_I32};
    ir_attrs sa = {.name = "opt.step", .init = {.kind = IR_INIT_ZEROS}};
    ir_attrs ka = {.name = "rng.seed", .init = {.kind = IR_INIT_UNIFORM, .a = 0, .b = 2147483647.0}};
    ir_value *step = key_op(L, IR_STATE, NULL, 0, &sa, &f);
    ir_value *seed = key_op(L, IR_STATE, NULL, 0, &ka, &i);
    ir_value *one = key_op(L, IR_CONST, NULL, 0, &(ir_attrs){.value = 1}, &f);
    ir_value *mul = key_op(L, IR_CONST, NULL, 0, &(ir_attrs){.value = 1000003}, &i);
    ir_value *t = key_op(L, IR_ADD, (ir_value *[]){step, one}, 2, NULL, &f);
    t = key_op(L, IR_CAST, &t, 1, &(ir_attrs){.dtype = IR_I32}, &i);
    t = key_op(L, IR_MUL, (ir_value *[]){t, mul}, 2, NULL, &i);
    L->dropout_key = key_op(L, IR_ADD, (ir_value *[]){seed, t}, 2, NULL, &i);
    L->dropout_key_m = L->m;
    return L->dropout_key;
}

/* dropout(x, p): x itself outside training (and for p = 0); in a training
 * program the op, its tag the count of dropouts made so far, so that each
 * layer of a repeat draws its own bits. */
static fe_val dropout(fe_lower *L, const fe_builtin *b, fe_args *A, su_loc loc)
{
    ir_value *x = need_tensor(L, b, A, 0);
    double p = A->num[1];
    if (!(p >= 0 && p < 1))
        fe_fail(L, A->node[1]->loc, "dropout's probability must be at least 0 and below 1, "
                "got %g", p);
    if (!ir_dtype_is_float(x->type.dtype))
        fe_fail(L, A->node[0]->loc, "dropout needs a floating-point tensor, got %s",
                ir_dtype_name(x->type.dtype));
    if (!L->trains || p == 0)
        return (fe_val){.v = x};
    ir_attrs a = {.value = p, .tag = L->ndropout++, .nlist = x->type.rank};
    memcpy(a.list, x->type.dim, sizeof a.list);
    ir_value *in[2] = {x, dropout_key(L)};
    return (fe_val){.v = emit(L, IR_DROPOUT, in, 2, &a, loc)};
}

static fe_val call_builtin(fe_lower *L, fe_scope *s, fe_frame *f, const fe_builtin *b,
                           const ast_node *call)
{
    fe_args A = {0};
    bind_args(L, b, call, &A);
    eval_args(L, s, f, b, &A);
    ir_attrs a = {0};
    ir_value *in[3];
    su_loc loc = call->loc;
    const ir_opinfo *info = &ir_ops[b->code];
    if (info->cls == IR_C_UNARY && b->code != IR_CAST && b->code != IR_DROPOUT)
        return unary(L, b->code, A.t[0], loc);
    if (b->code == IR_WHERE)
        return where(L, &A, loc);
    if (info->cls == IR_C_BINARY)
        return binary(L, b->code, A.t[0], A.t[1], loc);
    switch (b->code) {
    case IR_IOTA: /* arange(N): i32[N], 0 .. N-1 */
        if (A.num[0] < 1)
            fe_fail(L, A.node[0]->loc, "arange needs a length of at least 1, got %lld",
                    (long long)A.num[0]);
        a.nlist = 1;
        a.list[0] = (int64_t)A.num[0];
        break;
    case IR_STOP_GRADIENT:
        if (!A.t[0].v) /* a number has no gradient */
            return A.t[0];
        in[0] = A.t[0].v;
        break;
    case IR_CAST:
        a.dtype = A.dtype;
        if (!A.t[0].v)
            return (fe_val){.v = fe_tensor(L, A.t[0], A.dtype, loc)};
        return (fe_val){.v = emit(L, IR_CAST, &A.t[0].v, 1, &a, loc)};
    case IR_SUM: case IR_MEAN: case IR_AMAX:
        in[0] = need_tensor(L, b, &A, 0);
        if (!A.node[1])
            return reduce_all(L, b->code, in[0], A.num[2] != 0, loc);
        a.axis = (int64_t)A.num[1];
        a.keepdims = A.num[2] != 0;
        break;
    case IR_SOFTMAX:
        in[0] = need_tensor(L, b, &A, 0);
        a.axis = (int64_t)A.num[1];
        break;
    case IR_LAYERNORM: case IR_RMSNORM:
        for (int i = 0; i < info->max_in; i++)
            in[i] = need_tensor(L, b, &A, i);
        a.eps = A.num[info->max_in];
        break;
    case IR_TRANSPOSE:
        in[0] = need_tensor(L, b, &A, 0);
        a.nlist = A.node[1] ? A.nlist : in[0]->type.rank;
        for (int i = 0; i < a.nlist; i++) /* default: reverse the axes */
            a.list[i] = A.node[1] ? A.list[i] : a.nlist - 1 - i;
        break;
    case IR_RESHAPE:
        in[0] = need_tensor(L, b, &A, 0);
        a.nlist = A.nlist;
        memcpy(a.list, A.list, sizeof a.list);
        break;
    case IR_ATTENTION:
        return attention(L, b, &A, loc);
    case IR_DROPOUT:
        return dropout(L, b, &A, loc);
    default: /* the op's own operands; the optional ones are the compiler's */
        for (int i = 0; i < info->min_in; i++)
            in[i] = need_tensor(L, b, &A, i);
        break;
    }
    return (fe_val){.v = emit(L, b->code, in, info->min_in, &a, loc)};
}

/* A call of a block: positional tensor arguments of the declared types. */
/* Calls block b with call's arguments, its results into out. */
static void call_block_into(fe_lower *L, fe_scope *s, fe_frame *f, const fe_block *b,
                            const ast_node *call, ir_value **out)
{
    ir_value *args[64];
    int n = 0;
    for (const ast_node *a = call->args; a; a = a->next, n++) {
        if (a->kind == AST_KWARG)
            fe_fail(L, a->loc, "block arguments are positional");
        if (n >= b->nparams)
            fe_fail(L, a->loc, "block '%s' takes %d argument%s", b->def->name, b->nparams,
                    b->nparams == 1 ? "" : "s");
        fe_val v = fe_eval(L, s, f, a);
        const ir_type *want = &b->ptypes[n];
        char ws[128], gs[128];
        fe_type_str(ws, sizeof ws, want);
        if (!v.v && want->rank != 0)
            fe_fail(L, a->loc, "argument '%s' of block '%s' must be a %s tensor, not a number",
                    b->pnames[n], b->def->name, ws);
        args[n] = fe_tensor(L, v, want->dtype, a->loc);
        fe_type_str(gs, sizeof gs, &args[n]->type);
        if (!ir_type_eq(&args[n]->type, want))
            fe_fail(L, a->loc, "argument '%s' of block '%s' is %s, but the block takes %s",
                    b->pnames[n], b->def->name, gs, ws);
    }
    if (n != b->nparams)
        fe_fail(L, call->loc, "block '%s' takes %d argument%s, but %d %s given", b->def->name,
                b->nparams, b->nparams == 1 ? "" : "s", n, n == 1 ? "is" : "are");
    L->call_block(L, f, b, args, call->loc, out);
}

static fe_val call_block(fe_lower *L, fe_scope *s, fe_frame *f, const fe_block *b,
                         const ast_node *call)
{
    if (b->nret != 1)
        fe_fail(L, call->loc, "block '%s' returns %d values; bind each to a name, as in "
                "a, b = %s(...)", b->def->name, b->nret, b->def->name);
    ir_value *out[FE_MAX_RESULTS];
    call_block_into(L, s, f, b, call, out);
    return (fe_val){.v = out[0]};
}

static int split(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *call, ir_value **out);

int fe_eval_results(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n, ir_value **out)
{
    if (n->kind != AST_CALL)
        return 0;
    fe_sym *sym = fe_lookup(L, s, n->str);
    if ((!sym || sym->kind != SYM_BLOCK) && !strcmp(n->str, "split")) {
        enter(L, n);
        int k = split(L, s, f, n, out);
        L->depth--;
        return k;
    }
    if (!sym || sym->kind != SYM_BLOCK) {
        enter(L, n);
        int k = fe_select_call(L, s, f, n, out);
        L->depth--;
        return k > 1 ? k : 0;
    }
    if (!sym || sym->kind != SYM_BLOCK || sym->block->nret == 1)
        return 0;
    if (!f)
        fe_fail(L, n->loc, "a block cannot be called here");
    enter(L, n);
    call_block_into(L, s, f, sym->block, n, out);
    L->depth--;
    return sym->block->nret;
}

/* ---- indexing and joining (LANGUAGE.md §12) ---- */

static ir_value *narrow(fe_lower *L, ir_value *x, int dim, int64_t lo, int64_t hi, su_loc loc)
{
    if (lo == 0 && hi == x->type.dim[dim])
        return x;
    ir_attrs a = {.dim = dim, .offset = lo, .bound = hi};
    return emit(L, IR_NARROW, &x, 1, &a, loc);
}

/* A dimension or axis argument: -rank .. rank - 1, negative from the end. */
static int dim_arg(fe_lower *L, int64_t k, int rank, const char *what, su_loc loc)
{
    if (k < -rank || k >= rank)
        fe_fail(L, loc, "%s %lld is out of range for a tensor of rank %d", what, (long long)k,
                rank);
    return (int)(k < 0 ? k + rank : k);
}

/* x[i, a:b, :, -1]: Python's basic indexing with constant bounds. A range
 * keeps its dim (its bounds clamped to it, as Python's; an empty range is
 * an error), an integer removes it; missing trailing dims are whole. Each
 * sliced dim is a narrow, the removed dims one reshape. */
static fe_val index_expr(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n)
{
    fe_val base = fe_eval(L, s, f, n->lhs);
    if (!base.v)
        fe_fail(L, n->loc, "only a tensor can be indexed, not a number");
    ir_value *x = base.v;
    int rank = x->type.rank, d = 0;
    bool removed[IR_MAX_RANK] = {0};
    for (const ast_node *e = n->args; e; e = e->next, d++) {
        if (d == rank)
            fe_fail(L, e->loc, "too many indices: the tensor has %d dimension%s", rank,
                    rank == 1 ? "" : "s");
        int64_t size = x->type.dim[d];
        if (!e->ival) {
            int64_t i = fe_const_eval(L, s, e->lhs);
            if (i < -size || i >= size)
                fe_fail(L, e->loc, "index %lld is out of range for dimension %d of size %lld",
                        (long long)i, d, (long long)size);
            i += i < 0 ? size : 0;
            x = narrow(L, x, d, i, i + 1, e->loc);
            removed[d] = true;
            continue;
        }
        int64_t lo = e->lhs ? fe_const_eval(L, s, e->lhs) : 0;
        int64_t hi = e->rhs ? fe_const_eval(L, s, e->rhs) : size;
        int64_t a = lo < 0 ? lo + size : lo, b = hi < 0 ? hi + size : hi;
        a = a < 0 ? 0 : a > size ? size : a;
        b = b < 0 ? 0 : b > size ? size : b;
        if (b <= a)
            fe_fail(L, e->loc, "the slice %lld:%lld of dimension %d (size %lld) is empty",
                    (long long)lo, (long long)hi, d, (long long)size);
        x = narrow(L, x, d, a, b, e->loc);
    }
    ir_attrs r = {0};
    bool any = false;
    for (int k = 0; k < rank; k++) {
        any |= removed[k];
        if (!removed[k])
            r.list[r.nlist++] = x->type.dim[k];
    }
    return (fe_val){.v = any ? emit(L, IR_RESHAPE, &x, 1, &r, n->loc) : x};
}

/* concat([a, b, ...], axis = K); the IR's concat joins at most 4, so a
 * longer list is joined 4, then the result and 3 more, and so on. */
static fe_val concat(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *call)
{
    static const char *const names[] = {"tensors", "axis"};
    static const bool optional[] = {false, true};
    const ast_node *node[2] = {NULL, NULL};
    fe_bind(L, "concat", names, optional, 2, call, node);
    const ast_node *list = node[0], *axis = node[1];
    if (list->kind != AST_LIST || !list->args)
        fe_fail(L, list->loc, "'concat' needs a list of tensors, as in "
                "concat([a, b], axis = 0)");
    ir_value *in[4];
    int n = 0, dim = 0;
    ir_value *acc = NULL;
    for (const ast_node *e = list->args; e; e = e->next) {
        fe_val v = fe_eval(L, s, f, e);
        if (!v.v)
            fe_fail(L, e->loc, "'concat' joins tensors, not numbers");
        if (!acc && !n)
            dim = dim_arg(L, axis ? fe_const_eval(L, s, axis) : 0, v.v->type.rank,
                          "concat's axis", axis ? axis->loc : call->loc);
        if (n == 4) {
            ir_attrs a = {.dim = dim};
            acc = emit(L, IR_CONCAT, in, n, &a, call->loc);
            in[0] = acc;
            n = 1;
        }
        in[n++] = v.v;
    }
    if (n == 1)
        return (fe_val){.v = in[0]};
    ir_attrs a = {.dim = dim};
    return (fe_val){.v = emit(L, IR_CONCAT, in, n, &a, call->loc)};
}

/* split(x, [n0, n1, ...], axis = K): a narrow per size; the sizes sum to
 * the dim. Returns the count of results in out (at most FE_MAX_RESULTS). */
static int split(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *call, ir_value **out)
{
    static const fe_builtin b = {"split", IR_NARROW, 3,
                                 {{"x", P_TENSOR, false, 0}, {"sizes", P_LIST, false, 0},
                                  {"axis", P_INT, true, 0}}};
    fe_args A = {0};
    bind_args(L, &b, call, &A);
    A.t[0] = fe_eval(L, s, f, A.node[0]);
    ir_value *x = need_tensor(L, &b, &A, 0);
    const ast_node *sizes = A.node[1];
    if (sizes->kind != AST_LIST || !sizes->args)
        fe_fail(L, sizes->loc, "split's sizes must be a list like [64, 64]");
    int dim = dim_arg(L, A.node[2] ? fe_const_eval(L, s, A.node[2]) : 0, x->type.rank,
                      "split's axis", A.node[2] ? A.node[2]->loc : call->loc);
    int n = 0;
    int64_t at = 0;
    for (const ast_node *e = sizes->args; e; e = e->next) {
        if (n == FE_MAX_RESULTS)
            fe_fail(L, e->loc, "split makes at most %d pieces", FE_MAX_RESULTS);
        int64_t k = fe_const_eval(L, s, e);
        if (k < 1 || k > x->type.dim[dim] - at)
            fe_fail(L, e->loc, "split's size %lld does not fit: dimension %d has %lld "
                    "elements, %lld of them after the earlier pieces", (long long)k, dim,
                    (long long)x->type.dim[dim], (long long)(x->type.dim[dim] - at));
        out[n++] = narrow(L, x, dim, at, at + k, call->loc);
        at += k;
    }
    if (at != x->type.dim[dim])
        fe_fail(L, sizes->loc, "split's sizes sum to %lld, but dimension %d has %lld elements",
                (long long)at, dim, (long long)x->type.dim[dim]);
    return n;
}

static fe_val call(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n)
{
    fe_sym *sym = fe_lookup(L, s, n->str);
    if (sym && sym->kind == SYM_BLOCK) {
        if (!f)
            fe_fail(L, n->loc, "a block cannot be called here");
        return call_block(L, s, f, sym->block, n);
    }
    ir_value *sel[FE_MAX_RESULTS];
    int nsel = fe_select_call(L, s, f, n, sel);
    if (nsel > 1)
        fe_fail(L, n->loc, "%s gives %d values here; bind each to a name, as in "
                "v, i = %s(...)", n->str, nsel, n->str);
    if (nsel == 1)
        return (fe_val){.v = sel[0]};
    if (!strcmp(n->str, "concat"))
        return concat(L, s, f, n);
    if (!strcmp(n->str, "split")) {
        ir_value *out[FE_MAX_RESULTS];
        int k = split(L, s, f, n, out);
        if (k != 1)
            fe_fail(L, n->loc, "split gives %d values here; bind each to a name, as in "
                    "a, b = split(...)", k);
        return (fe_val){.v = out[0]};
    }
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, n->str))
            return call_builtin(L, s, f, &builtins[i], n);
    if (sym)
        fe_fail(L, n->loc, "'%s' is not a function", n->str);
    fe_fail(L, n->loc, "unknown function '%s'", n->str);
}

static fe_val name(fe_lower *L, fe_scope *s, const ast_node *n)
{
    fe_sym *sym = fe_lookup(L, s, n->str);
    if (!sym) {
        fe_sym *outer = s->global ? fe_map_get(&s->global->syms, n->str) : NULL;
        if (outer && outer->kind == SYM_TENSOR)
            fe_fail(L, n->loc, "'%s' is defined outside block '%s'; pass it as an argument",
                    n->str, s->block);
        fe_fail(L, n->loc, "unknown name '%s'", n->str);
    }
    if (sym->kind == SYM_CONST)
        return num((double)sym->c, true);
    if (sym->kind == SYM_BLOCK)
        fe_fail(L, n->loc, "'%s' is a block; call it as %s(...)", n->str, n->str);
    return sym->val;
}


static fe_val eval(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n);

fe_val fe_eval(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n)
{
    enter(L, n);
    fe_val v = eval(L, s, f, n);
    L->depth--;
    return v;
}

static fe_val eval(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n)
{
    switch (n->kind) {
    case AST_INT:
        return num((double)n->ival, true);
    case AST_FLOAT:
        return num(n->fval, false);
    case AST_NAME:
        return name(L, s, n);
    case AST_NEG:
        return unary(L, IR_NEG, fe_eval(L, s, f, n->lhs), n->loc);
    case AST_BINARY: {
        fe_val a = fe_eval(L, s, f, n->lhs), b = fe_eval(L, s, f, n->rhs);
        if (n->op != '@')
            return binary(L, binops[n->op], a, b, n->loc);
        if (!a.v || !b.v)
            fe_fail(L, n->loc, "'@' needs tensors on both sides, not a number");
        ir_value *in[2] = {a.v, b.v};
        return (fe_val){.v = emit(L, IR_MATMUL, in, 2, NULL, n->loc)};
    }
    case AST_CALL:
        return call(L, s, f, n);
    case AST_BOOL:
        fe_fail(L, n->loc, "expected a tensor or a number, not %s", n->ival ? "true" : "false");
    case AST_DTYPE:
        fe_fail(L, n->loc, "expected a tensor or a number, not the dtype %s",
                ir_dtype_name(n->dtype));
    case AST_STRING:
        fe_fail(L, n->loc, "expected a tensor or a number, not a string");
    case AST_LIST:
        fe_fail(L, n->loc, "expected a tensor or a number, not a list");
    case AST_INDEX:
        return index_expr(L, s, f, n);
    case AST_KWARG:
    case AST_SLICE:
        break;
    }
    su_unreachable();
}
