/* cuda.c: CUDA C for fused groups (cuda.h).
 *
 * A kernel's source is made in three parts: the body (the strategy's loops
 * around "tiles"), then the helpers the body used, then the header comment
 * and the signature. A tile is the code for VEC consecutive elements of a
 * domain starting at element index `e` (a variable the loops declare): the
 * loads of the values the group reads (vector loads where the value is
 * contiguous along the domain's last dim), the ops in f32 registers, and
 * the stores of the values the group stores. */
#include "cuda.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK_EW = 256, MAX_GRID = 65535, MAX_CACHED = 32 };

/* Device helpers, emitted when the body uses them: X_* index helper_text,
 * H_* are the bits of gen.helpers. */
enum {
    X_VEC,
    X_SIGMOID,
    X_GELU,
    X_GELU_GRAD,
    X_SILU_GRAD,
    X_TO_I32,
    X_I32_ODD,
    X_F16,
    X_BF16,
    X_AMAX,
    X_WARP,
    X_BLOCK,
    X_BLOCK_AMAX,
    X_ADAMW,
    X_XENT_GRAD,
    X_NAN,
    X_ERROR,
    X_COUNT
};
#define HELPER(x) (1u << (x))
enum {
    H_VEC = HELPER(X_VEC),
    H_SIGMOID = HELPER(X_SIGMOID),
    H_GELU = HELPER(X_GELU),
    H_GELU_GRAD = HELPER(X_GELU_GRAD),
    H_SILU_GRAD = HELPER(X_SILU_GRAD),
    H_TO_I32 = HELPER(X_TO_I32),
    H_I32_ODD = HELPER(X_I32_ODD),
    H_F16 = HELPER(X_F16),
    H_BF16 = HELPER(X_BF16),
    H_AMAX = HELPER(X_AMAX),
    H_WARP = HELPER(X_WARP),
    H_BLOCK = HELPER(X_BLOCK),
    H_BLOCK_AMAX = HELPER(X_BLOCK_AMAX),
    H_ADAMW = HELPER(X_ADAMW),
    H_XENT_GRAD = HELPER(X_XENT_GRAD),
    H_NAN = HELPER(X_NAN),
    H_ERROR = HELPER(X_ERROR),
};

typedef struct gen {
    const ir_module *m;
    const pass_fusion *f;
    const pass_fgroup *g;       /* the group being emitted: the kernel's, or
                                 * one part of a multi-tensor group */
    const pass_fgroup *whole;   /* the kernel's group */
    const ir_op *red;           /* the reduction, or NULL */
    const char **pname;         /* printed IR name by value id */
    int nnamed, capnamed;       /* the values the kernel touches, and */
    const ir_value **named;     /* their C names */
    const char **cname;
    su_arena *arena;
    su_buf *b;                  /* the body being written */
    int indent;
    unsigned helpers;
    bool f16, bf16;             /* the kernel touches these dtypes */
    bool canon;                 /* names by order of first use: the key */
} gen;

/* What one tile computes (see the file comment). */
typedef struct tile {
    const ir_type *dom;         /* the shape the element index e runs over */
    int vec;                    /* elements from e on: 1, or a divisor of dom's last dim */
    bool prologue;              /* the ops before the reduction (all, elementwise) */
    bool store_prologue;        /* and their stored values */
    const char *xin;            /* without prologue: the reduction's input element */
    const char *consume;        /* statements per element, after xin */
    const char *rexpr;          /* the reduction's result (then the epilogue), or NULL */
} tile;

static void line(gen *G, const char *fmt, ...) SU_PRINTF(2, 3);
static void line(gen *G, const char *fmt, ...)
{
    for (int i = 0; i < G->indent; i++)
        su_buf_puts(G->b, "    ");
    va_list ap;
    va_start(ap, fmt);
    su_buf_vprintf(G->b, fmt, ap);
    va_end(ap);
    su_buf_putc(G->b, '\n');
}

/* ---- literals, types, names ---- */

/* A float literal that reads back as f exactly ("0.01f", "1.0f"). */
static void put_f32(su_buf *b, float f)
{
    if (isnan(f) || isinf(f)) {
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        su_buf_printf(b, "__int_as_float(0x%08x)", (unsigned)u);
        return;
    }
    char s[48];
    for (int digits = 6; digits <= 9; digits++) { /* the shortest that reads back */
        snprintf(s, sizeof s, "%.*g", digits, (double)f);
        if (strtof(s, NULL) == f)
            break;
    }
    su_buf_puts(b, s);
    if (!strpbrk(s, ".e"))
        su_buf_puts(b, ".0");
    su_buf_putc(b, 'f');
}

/* A double literal that reads back exactly. */
static void put_f64(su_buf *b, double d)
{
    char s[48];
    for (int digits = 15; digits <= 17; digits++) { /* the shortest that reads back */
        snprintf(s, sizeof s, "%.*g", digits, d);
        if (strtod(s, NULL) == d)
            break;
    }
    su_buf_puts(b, s);
    if (!strpbrk(s, ".en"))
        su_buf_puts(b, ".0");
}

static const char *f32_text(gen *G, float f)
{
    su_buf b;
    su_buf_init_in(&b, G->arena);
    put_f32(&b, f);
    const char *s = su_strdup(G->arena, b.s);
    su_buf_free(&b);
    return s;
}

static const char *fmt(gen *G, const char *f, ...) SU_PRINTF(2, 3);
static const char *fmt(gen *G, const char *f, ...)
{
    su_buf b;
    su_buf_init_in(&b, G->arena);
    va_list ap;
    va_start(ap, f);
    su_buf_vprintf(&b, f, ap);
    va_end(ap);
    const char *s = su_strdup(G->arena, b.s ? b.s : "");
    su_buf_free(&b);
    return s;
}

static const char *ctype(gen *G, ir_dtype t)
{
    switch (t) {
    case IR_F16: G->f16 = true; return "__half";
    case IR_BF16: G->bf16 = true; return "__nv_bfloat16";
    case IR_I32: return "int";
    default: return "float";
    }
}

static const char *regtype(ir_dtype t)
{
    return t == IR_I32 ? "int" : "float";
}

/* expr (of storage type t) widened into a register. */
static const char *load_conv(gen *G, ir_dtype t, const char *expr)
{
    ctype(G, t);
    if (t == IR_F16)
        return fmt(G, "__half2float(%s)", expr);
    if (t == IR_BF16)
        return fmt(G, "__bfloat162float(%s)", expr);
    return expr;
}

/* A register of dtype t converted for storing (already rounded to t). */
static const char *store_conv(gen *G, ir_dtype t, const char *reg)
{
    ctype(G, t);
    if (t == IR_F16)
        return fmt(G, "__float2half_rn(%s)", reg);
    if (t == IR_BF16)
        return fmt(G, "__float2bfloat16_rn(%s)", reg);
    return reg;
}

/* expr rounded to dtype t, as a result of that dtype is. */
static const char *round_to(gen *G, ir_dtype t, const char *expr)
{
    if (t == IR_F16) {
        G->helpers |= H_F16;
        return fmt(G, "sh_f16(%s)", expr);
    }
    if (t == IR_BF16) {
        G->helpers |= H_BF16;
        return fmt(G, "sh_bf16(%s)", expr);
    }
    return expr;
}

/* The C name of a value: its printed name, '.' as '_', "%5" as "t5";
 * made unique in the kernel with the value's id. For the key (canon):
 * "a0", "a1", ... in the order the generator first names them. */
static const char *cname(gen *G, const ir_value *v)
{
    for (int i = 0; i < G->nnamed; i++)
        if (G->named[i] == v)
            return G->cname[i];
    const char *p = G->pname[v->id] ? G->pname[v->id] + 1 : "v";
    char *s = su_sprintf(G->arena, "%s%s", *p >= '0' && *p <= '9' ? "t" : "", p);
    if (G->canon)
        s = su_sprintf(G->arena, "a%d", G->nnamed);
    for (char *c = s; *c; c++)
        if (*c == '.')
            *c = '_';
    for (int i = 0; i < G->nnamed && !G->canon; i++)
        if (!strcmp(G->cname[i], s)) {
            s = su_sprintf(G->arena, "%s_%d", s, v->id);
            break;
        }
    if (G->nnamed == G->capnamed) {
        int cap = G->capnamed ? 2 * G->capnamed : 16;
        const ir_value **nv = su_alloc(G->arena, (size_t)cap * sizeof *nv);
        const char **nc = su_alloc(G->arena, (size_t)cap * sizeof *nc);
        if (G->nnamed) {
            memcpy(nv, G->named, (size_t)G->nnamed * sizeof *nv);
            memcpy(nc, G->cname, (size_t)G->nnamed * sizeof *nc);
        }
        G->named = nv;
        G->cname = nc;
        G->capnamed = cap;
    }
    G->named[G->nnamed] = v;
    G->cname[G->nnamed++] = s;
    return s;
}

static const char *reg(gen *G, const ir_value *v)
{
    return fmt(G, "v_%s", cname(G, v));
}

/* ---- offsets: NumPy broadcasting of a value into a domain ---- */

/* The element offset in a value of type t for element `e` of the domain
 * dom that t broadcasts to: dims merged where t is contiguous (or
 * broadcast) across them, so a bias [H] in [B, H] reads `e % H`. */
static const char *offset(gen *G, const ir_type *dom, const ir_type *t, const char *e)
{
    int r = dom->rank, nm = 0;
    int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK], inner[IR_MAX_RANK];
    int64_t acc = 1, dacc = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - t->rank);
        int64_t tdim = j >= 0 ? t->dim[j] : 1, di = dom->dim[i];
        int64_t si = tdim == 1 ? 0 : acc;
        acc *= tdim;
        if (di != 1) {
            if (nm > 0 && si == stride[nm - 1] * size[nm - 1]) {
                size[nm - 1] *= di;
            } else {
                size[nm] = di;
                stride[nm] = si;
                inner[nm++] = dacc;
            }
        }
        dacc *= di;
    }
    su_buf b;
    su_buf_init_in(&b, G->arena);
    int terms = 0;
    for (int k = nm - 1; k >= 0; k--) { /* outermost first */
        if (stride[k] == 0)
            continue;
        bool outer = k == nm - 1;
        const char *base = inner[k] == 1 ? e : fmt(G, "%s / %lld", e, (long long)inner[k]);
        if (!outer)
            base = inner[k] == 1 ? fmt(G, "%s %% %lld", e, (long long)size[k])
                                 : fmt(G, "(%s) %% %lld", base, (long long)size[k]);
        if (stride[k] != 1)
            base = fmt(G, "(%s) * %lld", base, (long long)stride[k]);
        su_buf_printf(&b, "%s%s", terms++ ? " + " : "", base);
    }
    const char *s = !terms ? "0" : terms > 1 ? fmt(G, "(%s)", b.s) : fmt(G, "%s", b.s);
    su_buf_free(&b);
    return s;
}

/* Whether the elements e .. e + vec - 1 of dom are consecutive in t. */
static bool contiguous_last(const ir_type *dom, const ir_type *t)
{
    return dom->rank >= 1 && t->rank >= 1 && dom->dim[dom->rank - 1] > 1 &&
           t->dim[t->rank - 1] == dom->dim[dom->rank - 1];
}

/* ---- ops ---- */

/* The module index of the group's op making v, or -1 when v comes from
 * outside the group. */
static int op_of(const gen *G, const ir_value *v)
{
    for (int i = 0; i < G->g->nops; i++)
        if (IR_OP(G->m, G->g->ops[i])->res[0] == v)
            return G->g->ops[i];
    return -1;
}

static bool in_group(const gen *G, const ir_value *v)
{
    return op_of(G, v) >= 0;
}

/* The expression of an elementwise op over its operands' registers a, b, c. */
/* The expression of an i32 op (passes/fuse.c's i32_exact) over int
 * registers: add, sub, mul and neg wrap (two's complement, computed
 * unsigned: signed overflow is undefined in CUDA C++ as in C), as the CPU
 * backend's do. */
static const char *ew_expr_i32(gen *G, const ir_op *op, const char *a, const char *b)
{
    switch (op->code) {
    case IR_ADD: return fmt(G, "(int)((unsigned)%s + (unsigned)%s)", a, b);
    case IR_SUB: return fmt(G, "(int)((unsigned)%s - (unsigned)%s)", a, b);
    case IR_MUL: return fmt(G, "(int)((unsigned)%s * (unsigned)%s)", a, b);
    case IR_MAX: return fmt(G, "%s > %s ? %s : %s", a, b, a, b);
    case IR_MIN: return fmt(G, "%s < %s ? %s : %s", a, b, a, b);
    case IR_GT: return fmt(G, "%s > %s ? 1 : 0", a, b);
    case IR_EQ: return fmt(G, "%s == %s ? 1 : 0", a, b);
    case IR_NEG: return fmt(G, "(int)(0u - (unsigned)%s)", a);
    case IR_ABS: return fmt(G, "%s < 0 ? (int)(0u - (unsigned)%s) : %s", a, a, a);
    case IR_EXPAND: return a;
    default: su_unreachable();
    }
}

static const char *ew_expr(gen *G, const ir_op *op, const char *a, const char *b, const char *c)
{
    const ir_attrs *at = &op->a;
    if (op->res[0]->type.dtype == IR_I32)
        return ew_expr_i32(G, op, a, b);
    switch (op->code) {
    case IR_ADD: return fmt(G, "%s + %s", a, b);
    case IR_SUB: return fmt(G, "%s - %s", a, b);
    case IR_MUL: return fmt(G, "%s * %s", a, b);
    case IR_DIV: return fmt(G, "%s / %s", a, b);
    /* nan in either operand gives nan, as NumPy's maximum and minimum */
    case IR_MAX: return fmt(G, "%s > %s || %s != %s ? %s : %s", a, b, a, a, a, b);
    case IR_MIN: return fmt(G, "%s < %s || %s != %s ? %s : %s", a, b, a, a, a, b);
    case IR_POW: return fmt(G, "powf(%s, %s)", a, b);
    case IR_GT: return fmt(G, "%s > %s ? 1.0f : 0.0f", a, b);
    case IR_EQ: return fmt(G, "%s == %s ? 1.0f : 0.0f", a, b);
    case IR_GELU_GRAD: G->helpers |= H_GELU_GRAD; return fmt(G, "%s * sh_gelu_grad(%s)", b, a);
    case IR_SILU_GRAD: G->helpers |= H_SILU_GRAD | H_SIGMOID;
        return fmt(G, "%s * sh_silu_grad(%s)", b, a);
    case IR_NEG: return fmt(G, "-%s", a);
    case IR_ABS: return fmt(G, "fabsf(%s)", a);
    case IR_RELU: return fmt(G, "%s < 0 ? 0.0f : %s", a, a); /* nan stays nan */
    case IR_GELU: G->helpers |= H_GELU; return fmt(G, "sh_gelu(%s)", a);
    case IR_SILU: G->helpers |= H_SIGMOID; return fmt(G, "%s * sh_sigmoid(%s)", a, a);
    case IR_TANH: return fmt(G, "tanhf(%s)", a);
    case IR_SIGMOID: G->helpers |= H_SIGMOID; return fmt(G, "sh_sigmoid(%s)", a);
    case IR_EXP: return fmt(G, "expf(%s)", a);
    case IR_LOG: return fmt(G, "logf(%s)", a);
    case IR_SQRT: return fmt(G, "sqrtf(%s)", a);
    case IR_RSQRT: return fmt(G, "1.0f / sqrtf(%s)", a);
    case IR_EXPAND: return a;
    case IR_MOMENTUM: /* (buf, g, p) */
        return fmt(G, "%s * %s + (%s + %s * %s)", f32_text(G, (float)at->momentum), a, b,
                   f32_text(G, (float)at->wd), c);
    case IR_SGD: /* (p, d) */
        return fmt(G, "%s - %s * (%s + %s * %s)", a, f32_text(G, (float)at->lr), b,
                   f32_text(G, (float)at->wd), a);
    case IR_ADAM_M: /* (m, g) */
        return fmt(G, "%s * %s + %s * %s", f32_text(G, (float)at->beta1), a,
                   f32_text(G, (float)(1.0 - at->beta1)), b);
    case IR_ADAM_V: /* (v, g) */
        return fmt(G, "%s * %s + %s * %s * %s", f32_text(G, (float)at->beta2), a,
                   f32_text(G, (float)(1.0 - at->beta2)), b, b);
    default:
        su_unreachable();
    }
}

/* cast: every float widens to f32 exactly; i32 to f16 or bf16 goes
 * through f32 rounded to odd, so that it is rounded once. */
static const char *cast_expr(gen *G, ir_dtype from, ir_dtype to, const char *a)
{
    if (from == IR_I32 && to == IR_I32)
        return a;
    if (to == IR_I32) {
        G->helpers |= H_TO_I32;
        return fmt(G, "sh_f32_to_i32(%s)", a);
    }
    if (from == IR_I32) {
        if (to == IR_F32)
            return fmt(G, "(float)%s", a);
        G->helpers |= H_I32_ODD;
        return round_to(G, to, fmt(G, "sh_i32_to_f32_odd(%s)", a));
    }
    return round_to(G, to, a);
}

/* The adamw op whose coefficients op uses: in a multi-tensor kernel,
 * the first of its adamw ops reading the same step t from memory with
 * the same lr, beta1 and beta2 (emit_hoisted computes each set once). */
static const ir_op *coef_owner(const gen *G, const ir_op *op)
{
    const pass_fgroup *w = G->whole;
    if (!w || !w->nparts)
        return op;
    for (int k = 0; k < w->nops; k++)
        if (IR_OP(G->m, w->ops[k])->res[0] == op->in[3])
            return op; /* t computed in the kernel: no hoisting */
    for (int k = 0; k < w->nops; k++) {
        const ir_op *o = IR_OP(G->m, w->ops[k]);
        if (o == op)
            return op;
        if (o->code == IR_ADAMW && o->in[3] == op->in[3] && o->a.lr == op->a.lr &&
            o->a.beta1 == op->a.beta1 && o->a.beta2 == op->a.beta2)
            return o;
    }
    return op;
}

/* The names of adamw's coefficients that depend on the step t. */
static const char *adamw_coef(gen *G, const ir_op *op, const char *which)
{
    return fmt(G, "%s_%s", which, cname(G, coef_owner(G, op)->res[0]));
}

/* Computes adamw's bias corrections from the step t (a register or a load). */
static void emit_adamw_coef(gen *G, const ir_op *op, const char *t)
{
    G->helpers |= H_ADAMW;
    line(G, "float %s, %s; // adamw's bias corrections for the step t", adamw_coef(G, op, "step"),
         adamw_coef(G, op, "vscale"));
    su_buf b;
    su_buf_init_in(&b, G->arena);
    put_f64(&b, op->a.lr);
    su_buf_puts(&b, ", ");
    put_f64(&b, op->a.beta1);
    su_buf_puts(&b, ", ");
    put_f64(&b, op->a.beta2);
    line(G, "sh_adamw_coef(%s, %s, &%s, &%s);", t, b.s, adamw_coef(G, op, "step"),
         adamw_coef(G, op, "vscale"));
    su_buf_free(&b);
}

/* `const float v_r = ...;` for an elementwise op of the group. */
static void emit_op(gen *G, const ir_op *op)
{
    const char *a = reg(G, op->in[0]);
    const char *b = op->nin > 1 ? reg(G, op->in[1]) : NULL;
    const char *c = op->nin > 2 ? reg(G, op->in[2]) : NULL;
    const ir_value *r = op->res[0];
    const char *e;
    if (op->code == IR_CAST) {
        e = cast_expr(G, op->in[0]->type.dtype, r->type.dtype, a);
    } else if (op->code == IR_ADAMW) { /* (p, m, v, t) */
        if (in_group(G, op->in[3]))
            emit_adamw_coef(G, op, reg(G, op->in[3]));
        float decay = (float)(1.0 - op->a.lr * op->a.wd);
        e = fmt(G, "%s * %s - %s * %s / (sqrtf(%s * %s) + %s)", a, f32_text(G, decay),
                adamw_coef(G, op, "step"), b, c, adamw_coef(G, op, "vscale"),
                f32_text(G, (float)op->a.eps));
        e = round_to(G, r->type.dtype, e);
    } else {
        e = ew_expr(G, op, a, b, c);
        if (op->code != IR_EXPAND)
            e = round_to(G, r->type.dtype, e);
    }
    line(G, "const %s %s = %s; // %s", regtype(r->type.dtype), reg(G, r), e,
         ir_ops[op->code].name);
}

/* ---- tiles ---- */

/* A set of values, in order of insertion: at most the group's inputs
 * and results. */
typedef struct vlist {
    int n;
    const ir_value **v;
} vlist;

static vlist vlist_new(gen *G)
{
    size_t cap = (size_t)(G->g->nin + G->g->nops + 1);
    return (vlist){0, su_alloc(G->arena, cap * sizeof(const ir_value *))};
}

static void vlist_add(vlist *l, const ir_value *v)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return;
    l->v[l->n++] = v;
}

/* Whether op index i computes in the tile's prologue (everything of an
 * elementwise group) or epilogue. */
static bool before_red(const gen *G, int i)
{
    return !G->red || i < G->g->reduce;
}

/* The reduction's operands a tile with a prologue reads element-wise. */
static int red_main_inputs(const ir_op *r)
{
    return r->code == IR_MSE ? 2 : 1;
}

/* The values a tile reads from outside the group, and those it stores. */
static void tile_values(gen *G, const tile *t, vlist *loads, vlist *stores)
{
    const pass_fgroup *g = G->g;
    for (int k = 0; k < g->nops; k++) {
        int i = g->ops[k];
        const ir_op *op = IR_OP(G->m, i);
        bool pro = before_red(G, i), epi = G->red && i > g->reduce;
        bool main = G->red && i == g->reduce;
        if (!(pro && t->prologue) && !(epi && t->rexpr) && !main)
            continue;
        for (int j = 0; j < op->nin; j++) {
            bool norm = op->code == IR_LAYERNORM || op->code == IR_RMSNORM;
            bool wanted = !main || (t->prologue && j < red_main_inputs(op)) ||
                          (t->rexpr && j > 0 && norm);
            bool hoisted = op->code == IR_ADAMW && j == 3; /* emit_hoisted's */
            if (wanted && !hoisted && !in_group(G, op->in[j]))
                vlist_add(loads, op->in[j]);
        }
        bool st = G->f->stored[op->res[0]->id];
        if (st && ((pro && t->store_prologue) || ((main || epi) && t->rexpr)))
            vlist_add(stores, op->res[0]);
    }
}

static void emit_loads(gen *G, const tile *t, const vlist *loads, const char *e)
{
    for (int i = 0; i < loads->n; i++) {
        const ir_value *v = loads->v[i];
        ir_dtype dt = v->type.dtype;
        const char *id = cname(G, v), *off = offset(G, t->dom, &v->type, e);
        if (t->vec > 1 && contiguous_last(t->dom, &v->type)) {
            G->helpers |= H_VEC;
            const char *ty = ctype(G, dt);
            line(G, "const vec<%s, %d> l_%s = *reinterpret_cast<const vec<%s, %d> *>(p_%s + %s);",
                 ty, t->vec, id, ty, t->vec, id, off);
        } else {
            line(G, "const %s v_%s = %s;", regtype(dt), id,
                 load_conv(G, dt, fmt(G, "p_%s[%s]", id, off)));
        }
    }
}

static void emit_stores(gen *G, const tile *t, const vlist *stores, const char *e)
{
    for (int i = 0; i < stores->n; i++) {
        const ir_value *v = stores->v[i];
        const char *id = cname(G, v), *val = store_conv(G, v->type.dtype, reg(G, v));
        if (t->vec > 1)
            line(G, "s_%s.v[q] = %s;", id, val);
        else
            line(G, "p_%s[%s] = %s;", id, e, val);
    }
}

/* The reduction's input element, from the prologue's registers. */
static const char *red_input(gen *G)
{
    if (G->red->code == IR_MSE)
        return fmt(G, "%s - %s", reg(G, G->red->in[0]), reg(G, G->red->in[1]));
    return reg(G, G->red->in[0]);
}

/* Emits the ops of the tile: prologue, xin and consume, result, epilogue. */
static void emit_tile_ops(gen *G, const tile *t, const vlist *stores, const char *e)
{
    const pass_fgroup *g = G->g;
    if (t->prologue)
        for (int k = 0; k < g->nops; k++)
            if (before_red(G, g->ops[k]) && g->ops[k] != g->reduce)
                emit_op(G, IR_OP(G->m, g->ops[k]));
    vlist pro = vlist_new(G), rest = vlist_new(G);
    for (int i = 0; i < stores->n; i++)
        vlist_add(before_red(G, op_of(G, stores->v[i])) ? &pro : &rest, stores->v[i]);
    emit_stores(G, t, &pro, e);
    if (G->red && (t->prologue || t->xin))
        line(G, "const float xin = %s;", t->prologue ? red_input(G) : t->xin);
    if (t->consume)
        line(G, "%s", t->consume);
    if (!t->rexpr)
        return;
    const ir_value *r = G->red->res[0];
    line(G, "const float %s = %s; // %s", reg(G, r), round_to(G, r->type.dtype, t->rexpr),
         ir_ops[G->red->code].name);
    for (int k = 0; k < g->nops; k++)
        if (g->ops[k] > g->reduce)
            emit_op(G, IR_OP(G->m, g->ops[k]));
    emit_stores(G, t, &rest, e);
}

/* One tile at element index `e` (declared by the caller). */
static void emit_tile(gen *G, const tile *t)
{
    vlist loads = vlist_new(G), stores = vlist_new(G);
    tile_values(G, t, &loads, &stores);
    emit_loads(G, t, &loads, "e");
    if (t->vec == 1) {
        emit_tile_ops(G, t, &stores, "e");
        return;
    }
    G->helpers |= H_VEC;
    for (int i = 0; i < stores.n; i++)
        line(G, "vec<%s, %d> s_%s;", ctype(G, stores.v[i]->type.dtype), t->vec,
             cname(G, stores.v[i]));
    line(G, "#pragma unroll");
    line(G, "for (int q = 0; q < %d; q++) {", t->vec);
    G->indent++;
    for (int i = 0; i < loads.n; i++) {
        const ir_value *v = loads.v[i];
        if (contiguous_last(t->dom, &v->type))
            line(G, "const %s v_%s = %s;", regtype(v->type.dtype), cname(G, v),
                 load_conv(G, v->type.dtype, fmt(G, "l_%s.v[q]", cname(G, v))));
    }
    emit_tile_ops(G, t, &stores, "e + q");
    G->indent--;
    line(G, "}");
    for (int i = 0; i < stores.n; i++) {
        const ir_value *v = stores.v[i];
        const char *ty = ctype(G, v->type.dtype);
        line(G, "*reinterpret_cast<vec<%s, %d> *>(p_%s + e) = s_%s;", ty, t->vec, cname(G, v),
             cname(G, v));
    }
}

/* ---- strategies ---- */

/* Where the group's adamw updates read the step t from memory, their
 * coefficients are computed once, before the loops. */
static void emit_hoisted(gen *G)
{
    for (int k = 0; k < G->g->nops; k++) {
        const ir_op *op = IR_OP(G->m, G->g->ops[k]);
        if (op->code == IR_ADAMW && !in_group(G, op->in[3]) && coef_owner(G, op) == op)
            emit_adamw_coef(G, op, load_conv(G, op->in[3]->type.dtype,
                                             fmt(G, "p_%s[0]", cname(G, op->in[3]))));
    }
}

static int pow2_at_least(int64_t n)
{
    int p = 1;
    while (p < n && p < (1 << 30))
        p <<= 1;
    return p;
}

static int clamp_block(int64_t threads, int cap)
{
    int64_t t = (threads + 31) / 32 * 32;
    return t < 32 ? 32 : t > cap ? cap : (int)t;
}

static int64_t grid_for(int64_t work, int block)
{
    int64_t g = (work + block - 1) / block;
    return g < 1 ? 1 : g > MAX_GRID ? MAX_GRID : g;
}

static void emit_elementwise(gen *G, cg_cuda_kernel *k)
{
    const ir_type *dom = &IR_OP(G->m, G->g->anchor)->res[0]->type;
    int64_t n = ir_type_numel(dom);
    k->vec = dom->rank >= 1 && dom->dim[dom->rank - 1] % 4 == 0 ? 4 : 1;
    int64_t steps = n / k->vec;
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->block = clamp_block(steps, BLOCK_EW);
    k->grid = grid_for(steps, k->block);
    line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    line(G, "for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < %lld; i += stride) {",
         (long long)steps);
    G->indent++;
    if (k->vec > 1)
        line(G, "const i64 e = i * %d; // the first of this step's elements", k->vec);
    else
        line(G, "const i64 e = i;");
    tile t = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true};
    emit_tile(G, &t);
    G->indent--;
    line(G, "}");
}

static const char *ir_name(gen *G, const ir_value *v);

/* VEC for an elementwise domain: 4 when its last dim divides by 4. */
static int vec_for(const ir_type *dom)
{
    return dom->rank >= 1 && dom->dim[dom->rank - 1] % 4 == 0 ? 4 : 1;
}

/* A multi-tensor group (fuse.h): its parts' steps (VEC elements each)
 * cut into blocks, part after part; a block takes its part's steps from
 * b * block on, so every thread of a block runs the same part. The
 * blocks are grid-strided. */
static void emit_multi(gen *G, cg_cuda_kernel *k)
{
    const pass_fgroup *whole = G->g;
    int64_t maxsteps = 1, nblocks = 0;
    k->vec = 1;
    for (int r = 0; r < whole->nparts; r++) {
        const ir_type *dom = &IR_OP(G->m, whole->parts[r].anchor)->res[0]->type;
        int64_t steps = ir_type_numel(dom) / vec_for(dom);
        maxsteps = steps > maxsteps ? steps : maxsteps;
        k->vec = vec_for(dom) > k->vec ? vec_for(dom) : k->vec;
    }
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->block = clamp_block(maxsteps, BLOCK_EW);
    for (int r = 0; r < whole->nparts; r++) {
        const ir_type *dom = &IR_OP(G->m, whole->parts[r].anchor)->res[0]->type;
        int64_t steps = ir_type_numel(dom) / vec_for(dom);
        nblocks += (steps + k->block - 1) / k->block;
    }
    k->grid = nblocks > MAX_GRID ? MAX_GRID : nblocks;
    line(G, "for (i64 b = blockIdx.x; b < %lld; b += gridDim.x) {", (long long)nblocks);
    G->indent++;
    int64_t first = 0;
    for (int r = 0; r < whole->nparts; r++) {
        G->g = &whole->parts[r];
        const ir_type *dom = &IR_OP(G->m, G->g->anchor)->res[0]->type;
        int vec = vec_for(dom);
        int64_t steps = ir_type_numel(dom) / vec, end = first + (steps + k->block - 1) / k->block;
        const char *what = fmt(G, "part %d: %s, blocks %lld .. %lld", r,
                               ir_name(G, IR_OP(G->m, G->g->anchor)->res[0]), (long long)first,
                               (long long)end - 1);
        if (r == 0)
            line(G, "if (b < %lld) { // %s", (long long)end, what);
        else if (r + 1 < whole->nparts)
            line(G, "} else if (b < %lld) { // %s", (long long)end, what);
        else
            line(G, "} else { // %s", what);
        G->indent++;
        line(G, "const i64 i = (b - %lld) * %d + threadIdx.x;", (long long)first, k->block);
        line(G, "if (i < %lld) {", (long long)steps);
        G->indent++;
        if (vec > 1)
            line(G, "const i64 e = i * %d;", vec);
        else
            line(G, "const i64 e = i;");
        tile t = {.dom = dom, .vec = vec, .prologue = true, .store_prologue = true};
        emit_tile(G, &t);
        G->indent--;
        line(G, "}");
        G->indent--;
        first = end;
    }
    line(G, "}");
    G->indent--;
    line(G, "}");
    G->g = whole;
}

/* A reduction's shape: x viewed as [outer, n, inner] around the axis. */
typedef struct rview {
    int64_t outer, n, inner;
} rview;

static rview red_view(const ir_op *r)
{
    const ir_type *t = &r->in[0]->type;
    rview v = {1, 1, 1};
    int64_t axis = t->rank - 1;
    if (r->code == IR_SUM || r->code == IR_MEAN || r->code == IR_AMAX || r->code == IR_SOFTMAX)
        axis = r->a.axis;
    if (r->code == IR_MSE) {
        v.n = ir_type_numel(t);
        return v;
    }
    for (int64_t i = 0; i < t->rank; i++) {
        if (i < axis)
            v.outer *= t->dim[i];
        else if (i > axis)
            v.inner *= t->dim[i];
        else
            v.n = t->dim[i];
    }
    return v;
}

/* The per-kind pieces of a reduction: identity and consume statements of
 * each pass, the code between passes, and the result's expression. */
typedef struct rparts {
    int passes;
    const char *init1, *consume1, *after1;
    const char *consume2, *after2;
    const char *result;     /* uses xin (row ops) or acc (reductions) */
} rparts;

/* x summed (or maxed) over the block, when the row is the block's. */
static const char *bsum(gen *G, bool block, const char *x)
{
    return block ? fmt(G, "sh_block_sum(%s, red)", x) : x;
}

static const char *bmax(gen *G, bool block, const char *x)
{
    return block ? fmt(G, "sh_block_max(%s, red)", x) : x;
}

static rparts red_parts(gen *G, const rview *v, bool block, const char *col)
{
    const ir_op *r = G->red;
    const char *n = f32_text(G, (float)v->n), *eps = f32_text(G, (float)r->a.eps);
    rparts p = {.passes = 1, .init1 = "0.0f", .consume1 = "acc += xin;", .result = "acc"};
    if (block)
        G->helpers |= H_BLOCK | H_WARP;
    switch (r->code) {
    case IR_SUM:
        break;
    case IR_MEAN:
        p.result = fmt(G, "acc / %s", n);
        break;
    case IR_MSE:
        p.consume1 = "acc += xin * xin;";
        p.result = fmt(G, "acc / %s", n);
        break;
    case IR_AMAX:
        G->helpers |= H_AMAX;
        p.init1 = "__int_as_float(0xff800000) /* -inf */";
        p.consume1 = "acc = sh_amax(acc, xin);";
        break;
    case IR_SOFTMAX:
    case IR_XENT_GRAD:
        p.passes = 3;
        p.init1 = "__int_as_float(0xff800000) /* -inf */";
        p.consume1 = "acc = fmaxf(acc, xin);";
        p.after1 = fmt(G, "const float mx = %s;", bmax(G, block, "acc"));
        p.consume2 = "acc2 += expf(xin - mx);";
        p.after2 = fmt(G, "const float scale = 1.0f / %s;", bsum(G, block, "acc2"));
        p.result = "expf(xin - mx) * scale";
        if (r->code == IR_XENT_GRAD) {
            G->helpers |= H_XENT_GRAD | H_NAN;
            p.result = fmt(G, "sh_xent_grad(xin, mx, scale, %s, lab, %lld)", col, (long long)v->n);
        }
        break;
    case IR_LAYERNORM:
        p.passes = 3;
        p.after1 = fmt(G, "const float mean = %s / %s;", bsum(G, block, "acc"), n);
        p.consume2 = "acc2 += (xin - mean) * (xin - mean);";
        p.after2 = fmt(G, "const float rstd = 1.0f / sqrtf(%s / %s + %s);",
                       bsum(G, block, "acc2"), n, eps);
        p.result = fmt(G, "(xin - mean) * rstd * %s + %s", reg(G, r->in[1]), reg(G, r->in[2]));
        break;
    case IR_RMSNORM:
        p.passes = 2;
        p.consume1 = "acc += xin * xin;";
        p.after1 = fmt(G, "const float rstd = 1.0f / sqrtf(%s / %s + %s);",
                       bsum(G, block, "acc"), n, eps);
        p.result = fmt(G, "xin * rstd * %s", reg(G, r->in[1]));
        break;
    default:
        su_unreachable();
    }
    if (r->code == IR_AMAX && block)
        G->helpers |= H_BLOCK_AMAX;
    return p;
}

/* The final block-wide step of a reduction: its result and epilogue,
 * computed by thread 0 at output index oidx. */
static void emit_reduced(gen *G, const rparts *p, const char *combine, const char *oidx)
{
    if (combine)
        line(G, "acc = %s;", combine);
    line(G, "if (threadIdx.x == 0) {");
    G->indent++;
    line(G, "const i64 e = %s; // the result's element", oidx);
    tile t = {.dom = &G->red->res[0]->type, .vec = 1, .rexpr = p->result};
    emit_tile(G, &t);
    G->indent--;
    line(G, "}");
}

/* One loop over this thread's elements of the row, each a tile; with
 * `cached`, over the registers xs[] instead after the first pass. */
static void row_loop(gen *G, const rview *v, int block, int vec, bool cached, tile *t,
                     bool fill_cache)
{
    int64_t n = v->n, span = (int64_t)block * vec;
    if (cached) {
        int items = (int)((n + span - 1) / span);
        line(G, "#pragma unroll");
        line(G, "for (int j = 0; j < %d; j++) {", items);
        G->indent++;
        bool uses_c = n % span || t->prologue || t->rexpr;
        if (uses_c)
            line(G, "const i64 c = ((i64)j * %d + threadIdx.x) * %d;", block, vec);
        if (n % span) {
            line(G, "if (c < %lld) {", (long long)n);
            G->indent++;
        }
        const char *slot = vec > 1 ? fmt(G, "xs[j * %d + q]", vec) : "xs[j]";
        if (fill_cache)
            t->consume = fmt(G, "%s = xin;%s%s", slot, t->consume ? " " : "",
                             t->consume ? t->consume : "");
        else
            t->xin = slot;
    } else {
        line(G, "for (i64 c = (i64)threadIdx.x * %d; c < %lld; c += %lld) {", vec, (long long)n,
             (long long)span);
        G->indent++;
    }
    if (t->prologue || t->rexpr) /* else the tile only reads registers */
        line(G, "const i64 e = row * %lld + c;", (long long)n);
    emit_tile(G, t);
    if (cached && n % span) {
        G->indent--;
        line(G, "}");
    }
    G->indent--;
    line(G, "}");
}

static void emit_row(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const ir_type *dom = &G->red->in[0]->type;
    k->vec = v->n % 4 == 0 && dom->rank >= 1 && dom->dim[dom->rank - 1] % 4 == 0 ? 4 : 1;
    k->strategy = CG_CUDA_ROW;
    k->block = clamp_block(pow2_at_least((v->n + k->vec - 1) / k->vec), 1024);
    k->grid = grid_for(v->outer, 1);
    k->shared_bytes = k->block / 32 * (int)sizeof(float);
    int64_t span = (int64_t)k->block * k->vec, items = (v->n + span - 1) / span;
    rparts p = red_parts(G, v, true, k->vec > 1 ? "c + q" : "c");
    bool cached = p.passes > 1 && items * k->vec <= MAX_CACHED;
    line(G, "extern __shared__ float red[]; // one float per warp");
    line(G, "for (i64 row = blockIdx.x; row < %lld; row += gridDim.x) {", (long long)v->outer);
    G->indent++;
    if (G->red->code == IR_XENT_GRAD) {
        G->helpers |= H_ERROR;
        line(G, "const int lab = p_%s[row];", cname(G, G->red->in[1]));
        line(G, "if ((lab < 0 || lab >= %lld) && threadIdx.x == 0)", (long long)v->n);
        line(G, "    sh_bad_id(row, lab); // the runtime's error; the row is NaN meanwhile");
    }
    if (cached)
        line(G, "float xs[%lld]; // this thread's elements of the row", (long long)(items * k->vec));
    line(G, "float acc = %s;", p.init1);
    tile t1 = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true,
               .consume = p.consume1};
    row_loop(G, v, k->block, k->vec, cached, &t1, true);
    if (p.passes == 1) {
        emit_reduced(G, &p, fmt(G, "%s(acc, red)", G->red->code == IR_AMAX ? "sh_block_amax"
                                                   : "sh_block_sum"),
                     "row");
    } else {
        line(G, "%s", p.after1);
        if (p.passes == 3) {
            line(G, "float acc2 = 0.0f;");
            tile t2 = {.dom = dom, .vec = k->vec, .prologue = !cached, .consume = p.consume2};
            row_loop(G, v, k->block, k->vec, cached, &t2, false);
            line(G, "%s", p.after2);
        }
        tile t3 = {.dom = dom, .vec = k->vec, .prologue = !cached, .rexpr = p.result};
        row_loop(G, v, k->block, k->vec, cached, &t3, false);
    }
    G->indent--;
    line(G, "}");
}

/* A loop over the axis for the column t: element e = base + k * inner. */
static void column_loop(gen *G, const rview *v, tile *t)
{
    line(G, "for (i64 k = 0; k < %lld; k++) {", (long long)v->n);
    G->indent++;
    line(G, "const i64 e = base + k * %lld;", (long long)v->inner);
    emit_tile(G, t);
    G->indent--;
    line(G, "}");
}

static void emit_column(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const ir_type *dom = &G->red->in[0]->type;
    int64_t cols = v->outer * v->inner;
    k->vec = 1;
    k->strategy = CG_CUDA_COLUMN;
    k->block = clamp_block(cols, BLOCK_EW);
    k->grid = grid_for(cols, k->block);
    rparts p = red_parts(G, v, false, NULL);
    line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    line(G, "for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < %lld; t += stride) {",
         (long long)cols);
    G->indent++;
    line(G, "const i64 base = t / %lld * %lld + t %% %lld; // element (t / inner, 0, t %% inner)",
         (long long)v->inner, (long long)(v->n * v->inner), (long long)v->inner);
    line(G, "float acc = %s;", p.init1);
    tile t1 = {.dom = dom, .vec = 1, .prologue = true, .store_prologue = true,
               .consume = p.consume1};
    column_loop(G, v, &t1);
    if (p.passes == 1) {
        line(G, "{");
        G->indent++;
        line(G, "const i64 e = t; // the result's element");
        tile t2 = {.dom = &G->red->res[0]->type, .vec = 1, .rexpr = p.result};
        emit_tile(G, &t2);
        G->indent--;
        line(G, "}");
    } else { /* softmax */
        line(G, "%s", p.after1);
        line(G, "float acc2 = 0.0f;");
        tile t2 = {.dom = dom, .vec = 1, .prologue = true, .consume = p.consume2};
        column_loop(G, v, &t2);
        line(G, "%s", p.after2);
        tile t3 = {.dom = dom, .vec = 1, .prologue = true, .rexpr = p.result};
        column_loop(G, v, &t3);
    }
    G->indent--;
    line(G, "}");
}

/* cross_entropy: one block, warp w takes rows w, w + warps, ...; each row
 * is max, sum of exp, and the label's logit, all warp-wide. */
static void emit_xent(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const ir_type *dom = &G->red->in[0]->type;
    int64_t rows = v->outer;
    k->vec = 1;
    k->strategy = CG_CUDA_SINGLE_BLOCK;
    k->block = (int)(32 * (rows < 32 ? rows : 32));
    k->grid = 1;
    k->shared_bytes = k->block / 32 * (int)sizeof(float);
    G->helpers |= H_WARP | H_BLOCK | H_NAN | H_ERROR;
    line(G, "extern __shared__ float red[]; // one float per warp");
    line(G, "const int lane = threadIdx.x %% 32;");
    line(G, "float total = 0.0f; // this warp's rows' losses, in row order");
    line(G, "for (i64 row = threadIdx.x / 32; row < %lld; row += blockDim.x / 32) {",
         (long long)rows);
    G->indent++;
    line(G, "const int lab = p_%s[row];", cname(G, G->red->in[1]));
    line(G, "float acc = __int_as_float(0xff800000) /* -inf */;");
    const char *cl = fmt(G, "for (i64 c = lane; c < %lld; c += 32) {", (long long)v->n);
    const char *el = fmt(G, "const i64 e = row * %lld + c;", (long long)v->n);
    tile t1 = {.dom = dom, .vec = 1, .prologue = true, .store_prologue = true,
               .consume = "acc = fmaxf(acc, xin);"};
    tile t2 = {.dom = dom, .vec = 1, .prologue = true, .consume = "acc2 += expf(xin - mx);"};
    tile t3 = {.dom = dom, .vec = 1, .prologue = true, .consume = "picked = xin;"};
    line(G, "%s", cl);
    G->indent++;
    line(G, "%s", el);
    emit_tile(G, &t1);
    G->indent--;
    line(G, "}");
    line(G, "const float mx = sh_warp_max(acc);");
    line(G, "float acc2 = 0.0f;");
    line(G, "%s", cl);
    G->indent++;
    line(G, "%s", el);
    emit_tile(G, &t2);
    G->indent--;
    line(G, "}");
    line(G, "const float sum = sh_warp_sum(acc2);");
    line(G, "const bool valid = lab >= 0 && lab < %lld;", (long long)v->n);
    line(G, "if (!valid && lane == 0)");
    line(G, "    sh_bad_id(row, lab); // the runtime's error; the loss is NaN meanwhile");
    line(G, "float picked = 0.0f; // the label's logit");
    line(G, "if (valid) {");
    G->indent++;
    line(G, "const i64 e = row * %lld + lab;", (long long)v->n);
    emit_tile(G, &t3);
    G->indent--;
    line(G, "}");
    line(G, "total += valid ? mx + logf(sum) - picked : SH_NAN;");
    G->indent--;
    line(G, "}");
    line(G, "const float acc = sh_block_sum(lane == 0 ? total : 0.0f, red);");
    rparts p = {.result = fmt(G, "acc / %s", f32_text(G, (float)rows))};
    emit_reduced(G, &p, NULL, "0");
}

/* ---- assembling the source ---- */

static const char *const helper_text[X_COUNT] = {
    [X_VEC] =
    "// VEC elements of T in one aligned load or store.\n"
    "template <typename T, int N> struct alignas(sizeof(T) * N) vec {\n"
    "    T v[N];\n"
    "};\n",
    [X_SIGMOID] =
    "__device__ __forceinline__ float sh_sigmoid(float v)\n"
    "{\n"
    "    if (v >= 0)\n"
    "        return 1.0f / (1.0f + expf(-v));\n"
    "    float e = expf(v); // never overflows for v < 0\n"
    "    return e / (1.0f + e);\n"
    "}\n",
    [X_GELU] =
    "// gelu, the tanh approximation\n"
    "__device__ __forceinline__ float sh_gelu(float v)\n"
    "{\n"
    "    const float c = 0.7978845608028654f; // sqrt(2 / pi)\n"
    "    return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));\n"
    "}\n",
    [X_GELU_GRAD] =
    "// d/dv of sh_gelu\n"
    "__device__ __forceinline__ float sh_gelu_grad(float v)\n"
    "{\n"
    "    const float c = 0.7978845608028654f;\n"
    "    float th = tanhf(c * (v + 0.044715f * v * v * v));\n"
    "    return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * c * (1.0f + 0.134145f * v * v);\n"
    "}\n",
    [X_SILU_GRAD] =
    "// d/dv of v * sigmoid(v)\n"
    "__device__ __forceinline__ float sh_silu_grad(float v)\n"
    "{\n"
    "    float s = sh_sigmoid(v);\n"
    "    return s * (1.0f + v * (1.0f - s));\n"
    "}\n",
    [X_TO_I32] =
    "// toward zero, saturating at the int32 range; nan is 0\n"
    "__device__ __forceinline__ int sh_f32_to_i32(float f)\n"
    "{\n"
    "    if (f != f)\n"
    "        return 0;\n"
    "    if (f >= 2147483648.0f)\n"
    "        return 2147483647;\n"
    "    if (f <= -2147483648.0f)\n"
    "        return -2147483647 - 1;\n"
    "    return (int)f;\n"
    "}\n",
    [X_I32_ODD] =
    "// v rounded to odd at f32's 24 bits, so that rounding it to f16 or\n"
    "// bf16 rounds v once\n"
    "__device__ __forceinline__ float sh_i32_to_f32_odd(int v)\n"
    "{\n"
    "    unsigned a = v < 0 ? 0u - (unsigned)v : (unsigned)v;\n"
    "    int s = 0;\n"
    "    while ((a >> s) >= (1u << 24))\n"
    "        s++;\n"
    "    unsigned keep = (a >> s) | ((a & ((1u << s) - 1)) != 0);\n"
    "    float f = ldexpf((float)keep, s);\n"
    "    return v < 0 ? -f : f;\n"
    "}\n",
    [X_F16] =
    "// v rounded to f16 (to nearest even), as an f32\n"
    "__device__ __forceinline__ float sh_f16(float v)\n"
    "{\n"
    "    return __half2float(__float2half_rn(v));\n"
    "}\n",
    [X_BF16] =
    "// v rounded to bf16 (to nearest even), as an f32\n"
    "__device__ __forceinline__ float sh_bf16(float v)\n"
    "{\n"
    "    return __bfloat162float(__float2bfloat16_rn(v));\n"
    "}\n",
    [X_AMAX] =
    "// amax's step: nan wins, as NumPy's\n"
    "__device__ __forceinline__ float sh_amax(float a, float b)\n"
    "{\n"
    "    return b > a || b != b ? b : a;\n"
    "}\n",
    [X_WARP] =
    "// Sum and max over the warp; every lane gets the same bits.\n"
    "__device__ __forceinline__ float sh_warp_sum(float v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ float sh_warp_max(float v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    return v;\n"
    "}\n",
    [X_BLOCK] =
    "// Sum, max and amax over the block: warps first, then the warps' values\n"
    "// (red: one float per warp) in warp order, so every thread gets the\n"
    "// same bits. Every thread of the block must call them.\n"
    "__device__ __forceinline__ float sh_block_sum(float v, float *red)\n"
    "{\n"
    "    v = sh_warp_sum(v);\n"
    "    __syncthreads(); // red may still be read by the previous reduction\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v += red[w];\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ float sh_block_max(float v, float *red)\n"
    "{\n"
    "    v = sh_warp_max(v);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v = fmaxf(v, red[w]);\n"
    "    return v;\n"
    "}\n",
    [X_BLOCK_AMAX] =
    "// amax over the block, as sh_block_max\n"
    "__device__ __forceinline__ float sh_block_amax(float v, float *red)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v = sh_amax(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x % 32 == 0)\n"
    "        red[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = red[0];\n"
    "    for (int w = 1; w < blockDim.x / 32; w++)\n"
    "        v = sh_amax(v, red[w]);\n"
    "    return v;\n"
    "}\n",
    [X_ADAMW] =
    "// adamw's step-dependent coefficients, folded in double as the CPU\n"
    "// backend folds them: lr / (1 - beta1^t) and 1 / (1 - beta2^t)\n"
    "__device__ __forceinline__ void sh_adamw_coef(float t, double lr, double beta1, double beta2,\n"
    "                                              float *step, float *vscale)\n"
    "{\n"
    "    *step = (float)(lr / (1.0 - pow(beta1, (double)t)));\n"
    "    *vscale = (float)(1.0 / (1.0 - pow(beta2, (double)t)));\n"
    "}\n",
    [X_XENT_GRAD] =
    "// one element of softmax(row) - one_hot(label); a label outside the\n"
    "// row makes the row nan\n"
    "__device__ __forceinline__ float sh_xent_grad(float x, float mx, float scale, i64 col,\n"
    "                                              int label, i64 n)\n"
    "{\n"
    "    if (label < 0 || label >= n)\n"
    "        return SH_NAN;\n"
    "    float g = expf(x - mx) * scale;\n"
    "    return col == label ? g - 1.0f : g;\n"
    "}\n",
    [X_NAN] =
    "#define SH_NAN __int_as_float(0x7fffffff)\n",
    [X_ERROR] =
    "// The lowest index whose id (or label) is outside its range, for the\n"
    "// runtime to read after the step (runtime/cuda_step.h): 0 none, else\n"
    "// (0xffffffff - index) << 32 | the id's 32 bits, so atomicMax keeps the\n"
    "// lowest index, the one the CPU backend names.\n"
    "__device__ unsigned long long sh_error;\n"
    "__device__ __forceinline__ void sh_bad_id(i64 index, int id)\n"
    "{\n"
    "    atomicMax(&sh_error, (unsigned long long)(0xffffffffu - (unsigned int)index) << 32 |\n"
    "                             (unsigned int)id);\n"
    "}\n",
};

/* Helpers in an order where each comes after those it uses. */
static const unsigned helper_order[] = {
    H_NAN, H_VEC, H_SIGMOID, H_GELU, H_GELU_GRAD, H_SILU_GRAD, H_TO_I32, H_I32_ODD,
    H_F16, H_BF16, H_AMAX, H_WARP, H_BLOCK, H_BLOCK_AMAX, H_ADAMW, H_XENT_GRAD, H_ERROR,
};

static int helper_index(unsigned bit)
{
    int i = 0;
    while (HELPER(i) != bit)
        i++;
    return i;
}

/* A value as the IR prints it ("%h.1"); for the key, "%" and its C name. */
static const char *ir_name(gen *G, const ir_value *v)
{
    return G->canon ? fmt(G, "%%%s", cname(G, v)) : G->pname[v->id];
}

static void put_op_line(gen *G, su_buf *b, const ir_op *op)
{
    su_buf_printf(b, "//   %s = %s", ir_name(G, op->res[0]), ir_ops[op->code].name);
    for (int i = 0; i < op->nin; i++)
        su_buf_printf(b, "%s %s", i ? "," : "", ir_name(G, op->in[i]));
    if (op->code == IR_SUM || op->code == IR_MEAN || op->code == IR_AMAX ||
        op->code == IR_SOFTMAX)
        su_buf_printf(b, " {axis = %lld}", (long long)op->a.axis);
    if (G->f->stored[op->res[0]->id])
        su_buf_puts(b, "  (stored)");
    su_buf_putc(b, '\n');
}

static void put_shape(su_buf *b, const ir_type *t)
{
    su_buf_printf(b, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    su_buf_putc(b, ']');
}

/* put_header of a multi-tensor kernel: each part's domain and ops. */
static void put_multi_header(gen *G, const cg_cuda_kernel *k, su_buf *b)
{
    const pass_fgroup *w = G->g;
    su_buf_printf(b, "// %s: multi-tensor elementwise kernel over %d tensors\n", k->name,
                  w->nparts);
    for (int r = 0; r < w->nparts; r++) {
        su_buf_printf(b, "// part %d, over ", r);
        put_shape(b, &IR_OP(G->m, w->parts[r].anchor)->res[0]->type);
        su_buf_putc(b, '\n');
        for (int i = 0; i < w->parts[r].nops; i++)
            put_op_line(G, b, IR_OP(G->m, w->parts[r].ops[i]));
    }
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_printf(b, "// each part's elements in blocks of %d threads, %s, part after part; "
                     "blocks grid-stride\n",
                  k->block, k->vec > 1 ? "4 elements per thread where its last dim divides by 4"
                                       : "one element per thread");
    if (k->vec > 1)
        su_buf_puts(b, "// assumes 16-byte aligned buffers\n");
}

/* The comment at the top: what the kernel computes, and how to launch it. */
static void put_header(gen *G, const cg_cuda_kernel *k, su_buf *b)
{
    if (G->g->nparts) {
        put_multi_header(G, k, b);
        return;
    }
    su_buf_printf(b, "// %s: %s kernel over ", k->name, cg_cuda_strategy_name(k->strategy));
    put_shape(b, G->red ? &G->red->in[0]->type : &IR_OP(G->m, G->g->anchor)->res[0]->type);
    if (G->red) {
        rview v = red_view(G->red);
        int64_t rows = v.outer * v.inner;
        su_buf_printf(b, " (%lld row%s of %lld%s)", (long long)rows, rows == 1 ? "" : "s",
                      (long long)v.n, k->strategy == CG_CUDA_COLUMN ? ", strided" : "");
    }
    su_buf_putc(b, '\n');
    for (int i = 0; i < G->g->nops; i++)
        put_op_line(G, b, IR_OP(G->m, G->g->ops[i]));
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    switch (k->strategy) {
    case CG_CUDA_ELEMENTWISE:
        if (k->vec > 1)
            su_buf_printf(b, "// one thread per %d elements, grid-stride", k->vec);
        else
            su_buf_puts(b, "// one thread per element, grid-stride");
        break;
    case CG_CUDA_ROW:
        su_buf_printf(b, "// one block per row, grid-stride over rows; %d elements per load", k->vec);
        break;
    case CG_CUDA_COLUMN:
        su_buf_puts(b, "// one thread per result, looping over the reduced axis");
        break;
    default:
        su_buf_puts(b, "// one block; warp w takes rows w, w + warps, ...");
        break;
    }
    if (k->vec > 1)
        su_buf_printf(b, "; assumes 16-byte aligned buffers and the last dim divisible by %d",
                      k->vec);
    su_buf_putc(b, '\n');
}

/* The pointer parameters: inputs (const) then stored values. */
static void put_signature(gen *G, cg_cuda_kernel *k, su_buf *b)
{
    bool in_place = false; /* a new param or state may take its old value's memory */
    for (int i = 0; i < G->m->updates.n; i++)
        for (int j = 0; j < G->g->nout; j++)
            in_place |= IR_UPDATE(G->m, i)->v == G->g->out[j];
    const char *restrict_ = in_place ? "" : "__restrict__ ";
    su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", k->block, k->name);
    for (int i = 0; i < k->nparams; i++) {
        const ir_value *v = k->params[i];
        su_buf_printf(b, "%s%s%s *%sp_%s", i ? ",\n    " : "\n    ", i < G->g->nin ? "const " : "",
                      ctype(G, v->type.dtype), restrict_, cname(G, v));
    }
    su_buf_puts(b, ")\n{\n");
}

static void assemble(gen *G, cg_cuda_kernel *k, const char *body)
{
    su_buf b;
    su_buf_init_in(&b, G->arena);
    su_buf sig;
    su_buf_init_in(&sig, G->arena);
    put_signature(G, k, &sig); /* first: it names the dtypes it needs */
    put_header(G, k, &b);
    if (G->f16)
        su_buf_puts(&b, "#include <cuda_fp16.h>\n");
    if (G->bf16)
        su_buf_puts(&b, "#include <cuda_bf16.h>\n");
    su_buf_puts(&b, "\ntypedef long long i64;\n");
    for (size_t i = 0; i < sizeof helper_order / sizeof helper_order[0]; i++)
        if (G->helpers & helper_order[i])
            su_buf_printf(&b, "\n%s", helper_text[helper_index(helper_order[i])]);
    su_buf_putc(&b, '\n');
    su_buf_puts(&b, sig.s);
    su_buf_puts(&b, body);
    su_buf_puts(&b, "}\n");
    k->source = su_strdup(G->arena, b.s);
    su_buf_free(&sig);
    su_buf_free(&b);
}

static void gen_kernel(gen *G, cg_cuda_kernel *k)
{
    const pass_fgroup *g = G->g;
    k->name = G->canon ? "K" : g->name;
    k->group = g->id;
    k->op = -1;
    k->nparams = g->nin + g->nout;
    k->params = su_alloc(G->arena, (size_t)(k->nparams + 1) * sizeof *k->params);
    for (int i = 0; i < g->nin; i++)
        k->params[i] = g->in[i];
    for (int i = 0; i < g->nout; i++)
        k->params[g->nin + i] = g->out[i];
    for (int i = 0; i < k->nparams; i++)
        cname(G, k->params[i]);
    su_buf body;
    su_buf_init_in(&body, G->arena);
    G->b = &body;
    G->indent = 1;
    G->whole = g;
    for (int r = 0; r < g->nparts; r++) { /* in part r, in_group means part r's */
        G->g = &g->parts[r];
        emit_hoisted(G);
    }
    G->g = g;
    if (!g->nparts)
        emit_hoisted(G);
    if (g->nparts) {
        emit_multi(G, k);
    } else if (!G->red) {
        emit_elementwise(G, k);
    } else {
        rview v = red_view(G->red);
        if (G->red->code == IR_XENT)
            emit_xent(G, k, &v);
        else if (v.inner == 1)
            emit_row(G, k, &v);
        else
            emit_column(G, k, &v);
    }
    assemble(G, k, body.s ? body.s : "");
    su_buf_free(&body);
}

/* ---- kernels of single ops ----
 *
 * The ops the fusion pass never groups but that need a kernel on the GPU
 * (a gather, a permutation, attention) get one of their own, standing for
 * their one instruction: transpose and embedding move elements (of any
 * dtype, as raw 2- or 4-byte words), iota counts, embedding_grad sums each
 * table row's gradients in index order (as the CPU backend does: one
 * thread per element of the table, so no atomics and the same bits in
 * f32), attention and attn_probs take one block per query row (scores in
 * shared memory, the row's max and sum by block reductions). An id outside
 * the table makes the row NaN (so the rest of the step stays
 * deterministic) and is recorded in the module's error word, sh_error
 * (the helper X_ERROR): the runtime reads it after the step and fails
 * with the CPU backend's message (runtime/cuda_step.h). */

enum { BLOCK_OP = 256 };

bool cg_cuda_op_kernel(const ir_op *op)
{
    switch (op->code) {
    case IR_TRANSPOSE:
    case IR_EMBEDDING:
    case IR_IOTA:
        return op->nres == 1;
    case IR_EMBEDDING_GRAD:
    case IR_ATTENTION:
    case IR_ATTN_PROBS:
        return op->nres == 1 && op->res[0]->type.dtype != IR_I32;
    default:
        return false;
    }
}

/* The raw word of a dtype's size, for ops that only move elements. */
static const char *word(ir_dtype t)
{
    return ir_dtype_size(t) == 2 ? "unsigned short" : "unsigned int";
}

/* A quiet NaN of float dtype t, as its raw word. */
static const char *nan_word(ir_dtype t)
{
    return t == IR_F16 ? "0x7e00u" : t == IR_BF16 ? "0x7fc0u" : "0x7fc00000u";
}

/* The grid-stride loop over n elements (e), its body from the caller. */
static void elementwise_loop(gen *G, cg_cuda_kernel *k, int64_t n)
{
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->vec = 1;
    k->block = clamp_block(n, BLOCK_OP);
    k->grid = grid_for(n, k->block);
    line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    line(G, "for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < %lld; e += stride) {",
         (long long)n);
    G->indent++;
}

/* transpose: element e of the result, its index digits from the last dim,
 * each a digit of input dim perm[i] (dims of size 1 skipped). */
static void emit_transpose(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *x = &op->in[0]->type, *y = &op->res[0]->type;
    int64_t istr[IR_MAX_RANK], acc = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        istr[i] = acc;
        acc *= x->dim[i];
    }
    elementwise_loop(G, k, ir_type_numel(y));
    line(G, "i64 r = e, src = 0;");
    for (int i = y->rank - 1; i >= 0; i--) {
        if (y->dim[i] == 1)
            continue;
        line(G, "src += (r %% %lld) * %lld; // result dim %d is input dim %lld",
             (long long)y->dim[i], (long long)istr[op->a.list[i]], i, (long long)op->a.list[i]);
        line(G, "r /= %lld;", (long long)y->dim[i]);
    }
    line(G, "p1[e] = p0[src];");
    G->indent--;
    line(G, "}");
}

static void emit_iota(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    elementwise_loop(G, k, ir_type_numel(&op->res[0]->type));
    line(G, "p0[e] = (int)e;");
    G->indent--;
    line(G, "}");
}

/* embedding (table [V, D], ids): row ids[e / D] of the table. */
static void emit_embedding(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    int64_t v = t->dim[0], d = t->dim[1];
    G->helpers |= H_ERROR;
    elementwise_loop(G, k, ir_type_numel(&op->res[0]->type));
    line(G, "const i64 i = e / %lld; // the id's index", (long long)d);
    line(G, "const int id = p1[i];");
    line(G, "const bool inside = id >= 0 && id < %lld;", (long long)v);
    line(G, "if (!inside && e %% %lld == 0)", (long long)d);
    line(G, "    sh_bad_id(i, id); // the runtime's error; the row is NaN meanwhile");
    line(G, "p2[e] = inside ? p0[(i64)id * %lld + e %% %lld] : %s;", (long long)d, (long long)d,
         nan_word(t->dtype));
    G->indent--;
    line(G, "}");
}

/* embedding_grad (ids [n], dy [n, D]) -> [V, D]: element (row, col) sums
 * dy[i, col] over the i with ids[i] == row, in index order. */
static void emit_embedding_grad(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *y = &op->res[0]->type;
    int64_t v = y->dim[0], d = y->dim[1], n = ir_type_numel(&op->in[0]->type);
    ir_dtype dt = y->dtype;
    G->helpers |= H_ERROR;
    elementwise_loop(G, k, v * d);
    line(G, "const i64 row = e / %lld, col = e %% %lld;", (long long)d, (long long)d);
    line(G, "float acc = 0.0f;");
    line(G, "for (i64 i = 0; i < %lld; i++) {", (long long)n);
    line(G, "    const int id = p0[i];");
    line(G, "    if (id < 0 || id >= %lld) { // outside the table: NaN, and the runtime's error",
         (long long)v);
    line(G, "        acc = __int_as_float(0x7fc00000);");
    line(G, "        if (e == 0)");
    line(G, "            sh_bad_id(i, id);");
    line(G, "    } else if (id == row) {");
    line(G, "        acc += %s;", load_conv(G, dt, fmt(G, "p1[i * %lld + col]", (long long)d)));
    line(G, "    }");
    line(G, "}");
    line(G, "p2[e] = %s;", store_conv(G, dt, "acc"));
    G->indent--;
    line(G, "}");
}

/* attention (q, k, v[, pos]) and attn_probs (q, k[, pos]): one block per
 * query row of a head: the scores q.k * scale of the keys it sees (causal:
 * j <= pos[i], or without pos the mask aligned to the end, as
 * runtime/cpu_matmul.c's), their softmax, then the row of p @ v, or of p. */
static void emit_attention(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *q = &op->in[0]->type;
    int r = q->rank;
    int64_t s = q->dim[r - 2], d = q->dim[r - 1], t = op->in[1]->type.dim[r - 2];
    int64_t heads = ir_type_numel(q) / (s * d);
    bool probs = op->code == IR_ATTN_PROBS;
    int64_t dv = probs ? t : op->in[2]->type.dim[r - 1];
    bool pos = op->nin > (probs ? 2 : 3); /* the query positions, the last operand */
    ir_dtype dt = q->dtype;
    float scale = (float)(1.0 / sqrt((double)d));
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = clamp_block(pow2_at_least(t > dv ? t : dv), BLOCK_OP);
    k->grid = grid_for(heads * s, 1);
    k->shared_bytes = (int)((t + k->block / 32) * (int64_t)sizeof(float));
    G->helpers |= H_WARP | H_BLOCK;
    const char *out = fmt(G, "p%d", op->nin);
    line(G, "extern __shared__ float sc[]; // the row's %lld scores, then one float per warp",
         (long long)t);
    line(G, "float *red = sc + %lld;", (long long)t);
    line(G, "for (i64 row = blockIdx.x; row < %lld; row += gridDim.x) {", (long long)(heads * s));
    G->indent++;
    line(G, "const i64 h = row / %lld, i = row %% %lld;", (long long)s, (long long)s);
    if (op->a.causal && pos)
        line(G, "const i64 end = min(max((i64)p%d[i] + 1, (i64)0), (i64)%lld); // keys [0, end)",
             op->nin - 1, (long long)t);
    else if (op->a.causal)
        line(G, "const i64 end = min(max(i + %lld, (i64)0), (i64)%lld); // keys [0, end)",
             (long long)(t - s + 1), (long long)t);
    else
        line(G, "const i64 end = %lld;", (long long)t);
    line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x) {");
    line(G, "    float acc = 0.0f;");
    line(G, "    for (i64 c = 0; c < %lld; c++)", (long long)d);
    line(G, "        acc += %s * %s;", load_conv(G, dt, fmt(G, "p0[row * %lld + c]", (long long)d)),
         load_conv(G, dt, fmt(G, "p1[(h * %lld + j) * %lld + c]", (long long)t, (long long)d)));
    line(G, "    sc[j] = acc * %s;", f32_text(G, scale));
    line(G, "}");
    line(G, "float mx = __int_as_float(0xff800000); // -inf");
    line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x)");
    line(G, "    mx = fmaxf(mx, sc[j]);");
    line(G, "mx = sh_block_max(mx, red);");
    line(G, "float sum = 0.0f;");
    line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x) {");
    line(G, "    sc[j] = expf(sc[j] - mx);");
    line(G, "    sum += sc[j];");
    line(G, "}");
    line(G, "sum = sh_block_sum(sum, red); // also orders the writes to sc before the reads");
    line(G, "const float inv = end > 0 ? 1.0f / sum : 0.0f;");
    if (probs) {
        line(G, "for (i64 j = threadIdx.x; j < %lld; j += blockDim.x)", (long long)t);
        line(G, "    %s[row * %lld + j] = %s;", out, (long long)t,
             store_conv(G, dt, round_to(G, dt, "(j < end ? sc[j] * inv : 0.0f)")));
    } else {
        line(G, "for (i64 c = threadIdx.x; c < %lld; c += blockDim.x) {", (long long)dv);
        line(G, "    float acc = 0.0f;");
        line(G, "    for (i64 j = 0; j < end; j++)");
        line(G, "        acc += sc[j] * inv * %s;",
             load_conv(G, dt, fmt(G, "p2[(h * %lld + j) * %lld + c]", (long long)t,
                                  (long long)dv)));
        line(G, "    %s[row * %lld + c] = %s;", out, (long long)dv,
             store_conv(G, dt, round_to(G, dt, "acc")));
        line(G, "}");
    }
    line(G, "__syncthreads(); // sc is the next row's");
    G->indent--;
    line(G, "}");
}

/* The signature: p0, p1, ... the operands (const) and the result. */
static void op_signature(gen *G, const cg_cuda_kernel *k, const ir_op *op, su_buf *b)
{
    bool raw = op->code == IR_TRANSPOSE || op->code == IR_EMBEDDING;
    su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", k->block, k->name);
    for (int i = 0; i <= op->nin; i++) {
        const ir_value *v = i < op->nin ? op->in[i] : op->res[0];
        bool id = v->type.dtype == IR_I32;
        const char *ty = id ? "int" : raw ? word(v->type.dtype) : ctype(G, v->type.dtype);
        su_buf_printf(b, "%s%s%s *__restrict__ p%d", i ? ",\n    " : "\n    ",
                      i < op->nin ? "const " : "", ty, i);
    }
    su_buf_puts(b, ")\n{\n");
}

/* The header comment: the op, its operands, the launch. */
static void op_header(gen *G, const cg_cuda_kernel *k, const ir_op *op, su_buf *b)
{
    su_buf_printf(b, "// %s: %s kernel of %s over ", k->name, cg_cuda_strategy_name(k->strategy),
                  ir_ops[op->code].name);
    put_shape(b, &op->res[0]->type);
    su_buf_putc(b, '\n');
    put_op_line(G, b, op);
    if (op->nin)
        su_buf_printf(b, "// parameters: the operand%s p0%s, the result p%d\n",
                      op->nin > 1 ? "s" : "",
                      op->nin > 2 ? fmt(G, " .. p%d", op->nin - 1) : op->nin > 1 ? ", p1" : "",
                      op->nin);
    else
        su_buf_puts(b, "// parameter: the result p0\n");
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_puts(b, k->strategy == CG_CUDA_ROW
                       ? "// one block per query row, grid-stride over rows\n"
                       : "// one thread per element of the result, grid-stride\n");
    if (op->code == IR_EMBEDDING || op->code == IR_EMBEDDING_GRAD)
        su_buf_puts(b, "// an id outside the table: its row NaN, and the lowest such index in "
                       "sh_error\n");
}

/* The kernel of op i, numbered id. */
static void gen_op_kernel(gen *G, cg_cuda_kernel *k, const ir_op *op, int i, int id)
{
    k->name = G->canon ? "K" : su_sprintf(G->arena, "k%d_%s", id, ir_ops[op->code].name);
    k->group = -1;
    k->op = i;
    k->nparams = op->nin + 1;
    k->params = su_alloc(G->arena, (size_t)(k->nparams + 1) * sizeof *k->params);
    for (int j = 0; j < op->nin; j++)
        k->params[j] = op->in[j];
    k->params[op->nin] = op->res[0];
    su_buf body;
    su_buf_init_in(&body, G->arena);
    G->b = &body;
    G->indent = 1;
    switch (op->code) {
    case IR_TRANSPOSE: emit_transpose(G, k, op); break;
    case IR_IOTA: emit_iota(G, k, op); break;
    case IR_EMBEDDING: emit_embedding(G, k, op); break;
    case IR_EMBEDDING_GRAD: emit_embedding_grad(G, k, op); break;
    default: emit_attention(G, k, op); break;
    }
    su_buf b, sig;
    su_buf_init_in(&b, G->arena);
    su_buf_init_in(&sig, G->arena);
    op_signature(G, k, op, &sig); /* first: it names the dtypes it needs */
    op_header(G, k, op, &b);
    if (G->f16)
        su_buf_puts(&b, "#include <cuda_fp16.h>\n");
    if (G->bf16)
        su_buf_puts(&b, "#include <cuda_bf16.h>\n");
    su_buf_puts(&b, "\ntypedef long long i64;\n");
    for (size_t h = 0; h < sizeof helper_order / sizeof helper_order[0]; h++)
        if (G->helpers & helper_order[h])
            su_buf_printf(&b, "\n%s", helper_text[helper_index(helper_order[h])]);
    su_buf_putc(&b, '\n');
    su_buf_puts(&b, sig.s);
    su_buf_puts(&b, body.s ? body.s : "");
    su_buf_puts(&b, "}\n");
    k->source = su_strdup(G->arena, b.s);
    su_buf_free(&sig);
    su_buf_free(&b);
    su_buf_free(&body);
}

bool cg_cuda_generate(const ir_module *m, const pass_fusion *f, cg_cuda *out, su_buf *err)
{
    memset(out, 0, sizeof *out);
    su_arena_init(&out->arena, err->oom);
    out->k = su_alloc(&out->arena, (size_t)(f->ngroups + m->ops.n + 1) * sizeof *out->k);
    const char **pname = ir_value_print_names(m, &out->arena);
    for (int i = 0; i < f->ngroups; i++) {
        const pass_fgroup *g = &f->groups[i];
        if (g->kind == PASS_FUSE_MATMUL)
            continue; /* cuBLASLt with its epilogue: no CUDA C */
        if (g->nops == 0 || (g->kind == PASS_FUSE_REDUCE && g->reduce < 0)) {
            su_buf_printf(err, "internal error: fused group %s has no ops", g->name);
            return false;
        }
        gen G = {.m = m, .f = f, .g = g, .pname = pname, .arena = &out->arena};
        G.red = g->kind == PASS_FUSE_REDUCE ? IR_OP(m, g->reduce) : NULL;
        cg_cuda_kernel *k = &out->k[out->nkernels++], canon;
        gen_kernel(&G, k);
        gen C = {.m = m, .f = f, .g = g, .pname = pname, .arena = &out->arena, .canon = true};
        C.red = G.red;
        memset(&canon, 0, sizeof canon);
        gen_kernel(&C, &canon);
        k->key = canon.source;
    }
    int id = f->ngroups; /* the ops with kernels of their own, numbered on */
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (f->group_of[i] >= 0 || !cg_cuda_op_kernel(op))
            continue;
        gen G = {.m = m, .f = f, .pname = pname, .arena = &out->arena};
        gen C = {.m = m, .f = f, .pname = pname, .arena = &out->arena, .canon = true};
        cg_cuda_kernel *k = &out->k[out->nkernels++], canon;
        memset(k, 0, sizeof *k);
        memset(&canon, 0, sizeof canon);
        gen_op_kernel(&G, k, op, i, id);
        gen_op_kernel(&C, &canon, op, i, id++);
        k->key = canon.source;
    }
    return true;
}

void cg_cuda_free(cg_cuda *c)
{
    su_arena_free(&c->arena);
    memset(c, 0, sizeof *c);
}

const char *cg_cuda_strategy_name(cg_cuda_strategy s)
{
    switch (s) {
    case CG_CUDA_ELEMENTWISE: return "elementwise";
    case CG_CUDA_ROW: return "row";
    case CG_CUDA_COLUMN: return "column";
    default: return "single block";
    }
}

void cg_cuda_print(const cg_cuda *c, const char *targets, su_buf *out)
{
    su_buf_printf(out, "// shardc: %d CUDA kernel%s", c->nkernels, c->nkernels == 1 ? "" : "s");
    if (targets)
        su_buf_printf(out, " for %s", targets);
    su_buf_puts(out, "\n");
    for (int i = 0; i < c->nkernels; i++)
        su_buf_printf(out, "\n%s", c->k[i].source);
}
