/* cuda_tile.c: the CUDA C generator's small pieces (cuda_gen.h): literals,
 * types and names, NumPy broadcasting offsets, each op's expression in
 * registers, and tiles: the loads, ops and stores for VEC elements from
 * index e (cuda.c's file comment). */
#include "cuda_gen.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_line(gen *G, const char *fmt, ...)
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

const char *cg_f32_text(gen *G, float f)
{
    su_buf b;
    su_buf_init_in(&b, G->arena);
    put_f32(&b, f);
    const char *s = su_strdup(G->arena, b.s);
    su_buf_free(&b);
    return s;
}

const char *cg_fmt(gen *G, const char *f, ...)
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

const char *cg_ctype(gen *G, ir_dtype t)
{
    switch (t) {
    case IR_F16: G->f16 = true; return "__half";
    case IR_BF16: G->bf16 = true; return "__nv_bfloat16";
    case IR_I32: return "int";
    case IR_BOOL: return "unsigned char";
    default: return "float";
    }
}

/* i32 and bool (0 or 1) are int registers; the floats float. */
static const char *regtype(ir_dtype t)
{
    return t == IR_I32 || t == IR_BOOL ? "int" : "float";
}

/* expr (of storage type t) widened into a register. */
const char *cg_load_conv(gen *G, ir_dtype t, const char *expr)
{
    cg_ctype(G, t);
    if (t == IR_F16)
        return cg_fmt(G, "__half2float(%s)", expr);
    if (t == IR_BF16)
        return cg_fmt(G, "__bfloat162float(%s)", expr);
    return expr;
}

/* A register of dtype t converted for storing (already rounded to t). */
const char *cg_store_conv(gen *G, ir_dtype t, const char *reg)
{
    cg_ctype(G, t);
    if (t == IR_F16)
        return cg_fmt(G, "__float2half_rn(%s)", reg);
    if (t == IR_BF16)
        return cg_fmt(G, "__float2bfloat16_rn(%s)", reg);
    if (t == IR_BOOL)
        return cg_fmt(G, "(unsigned char)%s", reg);
    return reg;
}

/* expr rounded to dtype t, as a result of that dtype is. */
const char *cg_round_to(gen *G, ir_dtype t, const char *expr)
{
    if (t == IR_F16) {
        G->helpers |= H_F16;
        return cg_fmt(G, "sh_f16(%s)", expr);
    }
    if (t == IR_BF16) {
        G->helpers |= H_BF16;
        return cg_fmt(G, "sh_bf16(%s)", expr);
    }
    return expr;
}

/* The C name of a value: its printed name, '.' as '_', "%5" as "t5";
 * made unique in the kernel with the value's id. For the key (canon):
 * "a0", "a1", ... in the order the generator first names them. */
const char *cg_cname(gen *G, const ir_value *v)
{
    for (int i = 0; i < G->nnamed; i++)
        if (G->named[i] == v)
            return G->cname[i];
    char *s;
    if (G->canon) {
        s = su_sprintf(G->arena, "a%d", G->nnamed);
    } else {
        const char *p = ir_names_get(G->pname, v->id);
        p = p ? p + 1 : "v";
        s = su_sprintf(G->arena, "%s%s", *p >= '0' && *p <= '9' ? "t" : "", p);
    }
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

const char *cg_reg(gen *G, const ir_value *v)
{
    if (v->def && v->def->code == IR_CONST && cg_in_group(G, v)) {
        /* a constant of the group (fuse.c's absorb_consts): its value as
         * the fill makes it */
        float f = ir_const_f32(v->def->a->value, v->type.dtype);
        const char *t = cg_f32_text(G, f);
        return signbit(f) ? cg_fmt(G, "(%s)", t) : t;
    }
    return cg_fmt(G, "v_%s", cg_cname(G, v));
}

/* ---- offsets: NumPy broadcasting of a value into a domain ---- */

/* The offset, in a value whose dim i of dom has stride to[i] (0: the
 * value broadcasts along it), of element e of dom (row-major): each digit
 * of e times its stride, dims contiguous on both sides (or broadcast
 * along both) taken as one. */
static const char *strided_offset(gen *G, const ir_type *dom, const int64_t *to, const char *e)
{
    int nm = 0;
    int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK], inner[IR_MAX_RANK];
    int64_t dacc = 1;
    for (int i = dom->rank - 1; i >= 0; i--) {
        int64_t si = to[i], di = dom->dim[i];
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
        const char *base = inner[k] == 1 ? e : cg_fmt(G, "%s / %lld", e, (long long)inner[k]);
        if (!outer)
            base = inner[k] == 1 ? cg_fmt(G, "%s %% %lld", e, (long long)size[k])
                                 : cg_fmt(G, "(%s) %% %lld", base, (long long)size[k]);
        if (stride[k] != 1)
            base = cg_fmt(G, "(%s) * %lld", base, (long long)stride[k]);
        su_buf_printf(&b, "%s%s", terms++ ? " + " : "", base);
    }
    const char *s = !terms ? "0" : terms > 1 ? cg_fmt(G, "(%s)", b.s) : cg_fmt(G, "%s", b.s);
    su_buf_free(&b);
    return s;
}

/* The element offset in a value of type t for element `e` of the domain
 * dom that t broadcasts to: dims merged where t is contiguous (or
 * broadcast) across them, so a bias [H] in [B, H] reads `e % H`. */
const char *cg_offset(gen *G, const ir_type *dom, const ir_type *t, const char *e)
{
    int r = dom->rank;
    int64_t to[IR_MAX_RANK], acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - t->rank);
        int64_t tdim = j >= 0 ? t->dim[j] : 1;
        to[i] = tdim == 1 ? 0 : acc;
        acc *= tdim;
    }
    return strided_offset(G, dom, to, e);
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

bool cg_in_group(const gen *G, const ir_value *v)
{
    return op_of(G, v) >= 0;
}

bool cg_stat_member(const gen *G, const ir_op *op)
{
    const ir_op *r = G->red;
    if (!r || op == r || op->nin != 1 || op->in[0] != r->in[0])
        return false;
    switch (r->code) {
    case IR_LAYERNORM: return op->code == IR_MEAN || op->code == IR_LAYERNORM_RSTD;
    case IR_RMSNORM: return op->code == IR_RMSNORM_RSTD;
    case IR_XENT: return op->code == IR_XENT_LSE;
    default: return false;
    }
}

const ir_op *cg_sib(const gen *G)
{
    const pass_fgroup *g = G->g;
    return G->red && g->kind == PASS_FUSE_REDUCE && g->has_sib ? IR_OP(G->m, g->sib) : NULL;
}

/* Whether op index i is the kernel's sibling sum. */
static bool is_sib(const gen *G, int i)
{
    const ir_op *s = cg_sib(G);
    return s && i == G->g->sib;
}

/* The expression of an elementwise op over its operands' registers a, b, c. */
/* The expression of an i32 op (passes/fuse.c's i32_exact) over int
 * registers: add, sub, mul and neg wrap (two's complement, computed
 * unsigned: signed overflow is undefined in CUDA C++ as in C), as the CPU
 * backend's do. */
static const char *ew_expr_i32(gen *G, const ir_op *op, const char *a, const char *b)
{
    switch (op->code) {
    case IR_ADD: return cg_fmt(G, "(int)((unsigned)%s + (unsigned)%s)", a, b);
    case IR_SUB: return cg_fmt(G, "(int)((unsigned)%s - (unsigned)%s)", a, b);
    case IR_MUL: return cg_fmt(G, "(int)((unsigned)%s * (unsigned)%s)", a, b);
    case IR_MAX: return cg_fmt(G, "%s > %s ? %s : %s", a, b, a, b);
    case IR_MIN: return cg_fmt(G, "%s < %s ? %s : %s", a, b, a, b);
    case IR_GT: return cg_fmt(G, "%s > %s ? 1 : 0", a, b);
    case IR_EQ: return cg_fmt(G, "%s == %s ? 1 : 0", a, b);
    case IR_NEG: return cg_fmt(G, "(int)(0u - (unsigned)%s)", a);
    case IR_ABS: return cg_fmt(G, "%s < 0 ? (int)(0u - (unsigned)%s) : %s", a, a, a);
    case IR_EXPAND: return a;
    /* by a const that is not 0 (the fusion pass's rule); -INT32_MIN
     * wraps to itself, as the CPU backend's INT32_MIN / -1 */
    case IR_DIV: return cg_fmt(G, "%s == -1 ? (int)(0u - (unsigned)%s) : %s / %s", b, a, a, b);
    default: su_unreachable();
    }
}

static const char *ew_expr(gen *G, const ir_op *op, const char *a, const char *b, const char *c)
{
    const ir_attrs *at = op->a;
    switch (op->code) { /* on registers of any dtype */
    case IR_LESS: return cg_fmt(G, "%s < %s ? 1 : 0", a, b);
    case IR_LESS_EQ: return cg_fmt(G, "%s <= %s ? 1 : 0", a, b);
    case IR_GREATER: return cg_fmt(G, "%s > %s ? 1 : 0", a, b);
    case IR_GREATER_EQ: return cg_fmt(G, "%s >= %s ? 1 : 0", a, b);
    case IR_EQUAL: return cg_fmt(G, "%s == %s ? 1 : 0", a, b);
    case IR_NOT_EQUAL: return cg_fmt(G, "%s != %s ? 1 : 0", a, b);
    case IR_WHERE: return cg_fmt(G, "%s ? %s : %s", a, b, c);
    default: break;
    }
    if (op->res[0]->type.dtype == IR_I32)
        return ew_expr_i32(G, op, a, b);
    switch (op->code) {
    case IR_ADD: return cg_fmt(G, "%s + %s", a, b);
    case IR_SUB: return cg_fmt(G, "%s - %s", a, b);
    case IR_MUL: return cg_fmt(G, "%s * %s", a, b);
    case IR_DIV: return cg_fmt(G, "%s / %s", a, b);
    /* nan in either operand gives nan, as NumPy's maximum and minimum */
    case IR_MAX: return cg_fmt(G, "%s > %s || %s != %s ? %s : %s", a, b, a, a, a, b);
    case IR_MIN: return cg_fmt(G, "%s < %s || %s != %s ? %s : %s", a, b, a, a, a, b);
    case IR_POW: return cg_fmt(G, "powf(%s, %s)", a, b);
    case IR_GT: return cg_fmt(G, "%s > %s ? 1.0f : 0.0f", a, b);
    case IR_EQ: return cg_fmt(G, "%s == %s ? 1.0f : 0.0f", a, b);
    case IR_GELU_GRAD: G->helpers |= H_GELU_GRAD; return cg_fmt(G, "%s * sh_gelu_grad(%s)", b, a);
    case IR_SILU_GRAD: G->helpers |= H_SILU_GRAD | H_SIGMOID;
        return cg_fmt(G, "%s * sh_silu_grad(%s)", b, a);
    case IR_NEG: return cg_fmt(G, "-%s", a);
    case IR_ABS: return cg_fmt(G, "fabsf(%s)", a);
    case IR_RELU: return cg_fmt(G, "%s < 0 ? 0.0f : %s", a, a); /* nan stays nan */
    case IR_GELU: G->helpers |= H_GELU; return cg_fmt(G, "sh_gelu(%s)", a);
    case IR_SILU: G->helpers |= H_SIGMOID; return cg_fmt(G, "%s * sh_sigmoid(%s)", a, a);
    case IR_TANH: return cg_fmt(G, "tanhf(%s)", a);
    case IR_SIGMOID: G->helpers |= H_SIGMOID; return cg_fmt(G, "sh_sigmoid(%s)", a);
    case IR_EXP: return cg_fmt(G, "expf(%s)", a);
    case IR_LOG: return cg_fmt(G, "logf(%s)", a);
    case IR_SQRT: return cg_fmt(G, "sqrtf(%s)", a);
    case IR_RSQRT: return cg_fmt(G, "1.0f / sqrtf(%s)", a);
    case IR_SIN: return cg_fmt(G, "sinf(%s)", a);
    case IR_COS: return cg_fmt(G, "cosf(%s)", a);
    case IR_EXPAND: return a;
    case IR_MOMENTUM: /* (buf, g, p) */
        return cg_fmt(G, "%s * %s + (%s + %s * %s)", cg_f32_text(G, (float)at->momentum), a, b,
                   cg_f32_text(G, (float)at->wd), c);
    case IR_SGD: /* (p, d) */
        return cg_fmt(G, "%s - %s * (%s + %s * %s)", a, cg_f32_text(G, (float)at->lr), b,
                   cg_f32_text(G, (float)at->wd), a);
    case IR_ADAM_M: /* (m, g) */
        return cg_fmt(G, "%s * %s + %s * %s", cg_f32_text(G, (float)at->beta1), a,
                   cg_f32_text(G, (float)(1.0 - at->beta1)), b);
    case IR_ADAM_V: /* (v, g) */
        return cg_fmt(G, "%s * %s + %s * %s * %s", cg_f32_text(G, (float)at->beta2), a,
                   cg_f32_text(G, (float)(1.0 - at->beta2)), b, b);
    default:
        su_unreachable();
    }
}

/* cast: every float widens to f32 exactly; i32 to f16 or bf16 goes
 * through f32 rounded to odd, so that it is rounded once. */
static const char *cast_expr(gen *G, ir_dtype from, ir_dtype to, const char *a)
{
    if (to == IR_BOOL) /* nan is true, as in Python */
        return cg_fmt(G, "%s != 0 ? 1 : 0", a);
    if (from == IR_BOOL) /* true is 1 */
        return to == IR_I32 ? cg_fmt(G, "%s != 0 ? 1 : 0", a) : cg_fmt(G, "%s != 0 ? 1.0f : 0.0f", a);
    if (from == IR_I32 && to == IR_I32)
        return a;
    if (to == IR_I32) {
        G->helpers |= H_TO_I32;
        return cg_fmt(G, "sh_f32_to_i32(%s)", a);
    }
    if (from == IR_I32) {
        if (to == IR_F32)
            return cg_fmt(G, "(float)%s", a);
        G->helpers |= H_I32_ODD;
        return cg_round_to(G, to, cg_fmt(G, "sh_i32_to_f32_odd(%s)", a));
    }
    return cg_round_to(G, to, a);
}

/* The adamw op whose coefficients op uses: in a multi-tensor kernel,
 * the first of its adamw ops reading the same step t from memory with
 * the same lr, beta1 and beta2 (emit_hoisted computes each set once). */
const ir_op *cg_coef_owner(const gen *G, const ir_op *op)
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
        if (o->code == IR_ADAMW && o->in[3] == op->in[3] && o->a->lr == op->a->lr &&
            o->a->beta1 == op->a->beta1 && o->a->beta2 == op->a->beta2)
            return o;
    }
    return op;
}

/* The names of adamw's coefficients that depend on the step t. */
static const char *adamw_coef(gen *G, const ir_op *op, const char *which)
{
    return cg_fmt(G, "%s_%s", which, cg_cname(G, cg_coef_owner(G, op)->res[0]));
}

/* Computes adamw's bias corrections from the step t (a register or a load). */
void cg_emit_adamw_coef(gen *G, const ir_op *op, const char *t)
{
    G->helpers |= H_ADAMW;
    cg_line(G, "float %s, %s; // adamw's bias corrections for the step t", adamw_coef(G, op, "step"),
         adamw_coef(G, op, "vscale"));
    su_buf b;
    su_buf_init_in(&b, G->arena);
    put_f64(&b, op->a->lr);
    su_buf_puts(&b, ", ");
    put_f64(&b, op->a->beta1);
    su_buf_puts(&b, ", ");
    put_f64(&b, op->a->beta2);
    cg_line(G, "sh_adamw_coef(%s, %s, &%s, &%s);", t, b.s, adamw_coef(G, op, "step"),
         adamw_coef(G, op, "vscale"));
    su_buf_free(&b);
}

/* `const float v_r = ...;` for an elementwise op of the group. */
void cg_emit_op(gen *G, const ir_op *op)
{
    if (op->code == IR_CONST)
        return; /* a literal where it is read (cg_reg) */
    const char *a = cg_reg(G, op->in[0]);
    const char *b = op->nin > 1 ? cg_reg(G, op->in[1]) : NULL;
    const char *c = op->nin > 2 ? cg_reg(G, op->in[2]) : NULL;
    const ir_value *r = op->res[0];
    const char *e;
    if (op->code == IR_CAST) {
        e = cast_expr(G, op->in[0]->type.dtype, r->type.dtype, a);
    } else if (op->code == IR_ADAMW) { /* (p, m, v, t) */
        if (cg_in_group(G, op->in[3]))
            cg_emit_adamw_coef(G, op, cg_reg(G, op->in[3]));
        float decay = (float)(1.0 - op->a->lr * op->a->wd);
        e = cg_fmt(G, "%s * %s - %s * %s / (sqrtf(%s * %s) + %s)", a, cg_f32_text(G, decay),
                adamw_coef(G, op, "step"), b, c, adamw_coef(G, op, "vscale"),
                cg_f32_text(G, (float)op->a->eps));
        e = cg_round_to(G, r->type.dtype, e);
    } else {
        e = ew_expr(G, op, a, b, c);
        if (op->code != IR_EXPAND)
            e = cg_round_to(G, r->type.dtype, e);
    }
    cg_line(G, "const %s %s = %s; // %s", regtype(r->type.dtype), cg_reg(G, r), e,
         ir_ops[op->code].name);
}

/* ---- a concat and its branches (passes/fuse.c's find_views) ----
 *
 * In a group with a concat, the ops of the tile's domain run at the
 * element e as the others do, but a concat (and a narrow) reads its
 * operand at another element, and the ops of its branches (of smaller
 * shapes) run only where a concat reads them: view_emit writes the
 * statements that compute a value at a given element of its own shape,
 * loading what the group reads from outside there, and computing a value
 * of the group there again from its operands (a value of the domain at e
 * itself is the register already made). */

static const char *view_temp(gen *G)
{
    return cg_fmt(G, "u%d", G->ntemp++);
}

/* The elements after dim d of t. */
static int64_t inner_of(const ir_type *t, int d)
{
    int64_t n = 1;
    for (int i = d + 1; i < t->rank; i++)
        n *= t->dim[i];
    return n;
}

static const char *view_emit(gen *G, const ir_value *v, const char *idx);

/* Whether idx is the tile's element ("e", "(e + q)"). */
static bool at_tile(const gen *G, const char *idx)
{
    size_t n = strlen(G->ve);
    return !strcmp(idx, G->ve) ||
           (idx[0] == '(' && !strncmp(idx + 1, G->ve, n) && idx[n + 1] == ')' && !idx[n + 2]);
}

/* idx as a name where it is more than one: a temporary holds a
 * computed index that is read more than once. */
static const char *index_once(gen *G, const char *idx)
{
    for (const char *c = idx; *c; c++)
        if (*c == ' ' && !at_tile(G, idx)) {
            const char *t = view_temp(G);
            cg_line(G, "const i64 %s = %s;", t, idx);
            return t;
        }
    return idx;
}

/* An index: idx, of a value whose dim d holds `len` of `inner` elements
 * each (and `outer` rows of those), moved to a value whose dim d holds
 * `to`, its element `shift` of that dim where idx's is 0. A temporary
 * where the text grows long. */
static const char *view_index(gen *G, const char *idx, int64_t outer, int64_t len, int64_t inner,
                              int64_t to, int64_t shift)
{
    idx = index_once(G, idx);
    su_buf b;
    su_buf_init_in(&b, G->arena);
    su_buf_printf(&b, "%s", idx);
    if (outer > 1 && to != len)
        su_buf_printf(&b, " %c %s / %lld * %lld", to > len ? '+' : '-', idx,
                      (long long)(len * inner), (long long)((to > len ? to - len : len - to) * inner));
    if (shift)
        su_buf_printf(&b, " %c %lld", shift > 0 ? '+' : '-',
                      (long long)((shift > 0 ? shift : -shift) * inner));
    const char *i;
    i = cg_fmt(G, "(%s)", b.s);
    su_buf_free(&b);
    return i;
}

/* The offset, in a value whose dim d has stride to[d], of element idx of
 * shape t (row-major): each digit of idx times its stride there, dims
 * contiguous on both sides taken as one. */
static const char *permuted_index(gen *G, const ir_type *t, const int64_t *to, const char *idx)
{
    return strided_offset(G, t, to, index_once(G, idx));
}

static void strides_of(const ir_type *t, int64_t *s)
{
    int64_t acc = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        s[i] = acc;
        acc *= t->dim[i];
    }
}

/* The operand's element of transpose op's element idx (result dim i is
 * operand dim perm[i]). */
static const char *transposed_index(gen *G, const ir_op *op, const char *idx)
{
    int64_t xs[IR_MAX_RANK], to[IR_MAX_RANK];
    strides_of(&op->in[0]->type, xs);
    for (int i = 0; i < op->res[0]->type.rank; i++)
        to[i] = xs[op->a->list[i]];
    return permuted_index(G, &op->res[0]->type, to, idx);
}

/* The result's element of transpose op that its operand's element idx
 * becomes (operand dim perm[i] is result dim i). */
static const char *transposed_place(gen *G, const ir_op *op, const char *idx)
{
    int64_t ts[IR_MAX_RANK], to[IR_MAX_RANK];
    strides_of(&op->res[0]->type, ts);
    for (int i = 0; i < op->res[0]->type.rank; i++)
        to[op->a->list[i]] = ts[i];
    return permuted_index(G, &op->in[0]->type, to, idx);
}

/* In a vector's views (G->vq, view_vectors) a value is a vector of
 * registers, read as lane q: v's lane, and v = x in every lane. */
static const char *view_lane(gen *G, const char *v)
{
    return G->vq ? cg_fmt(G, "%s.v[q]", v) : v;
}

static void view_set(gen *G, const char *v, const char *x)
{
    if (!G->vq) {
        cg_line(G, "%s = %s;", v, x);
        return;
    }
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int q = 0; q < %d; q++)", G->vq);
    cg_line(G, "    %s.v[q] = %s;", v, x);
}

/* The statements computing op's result at element idx of its shape; the
 * register (or literal) holding it. In a vector's views, for the vector
 * whose first element is idx: lane q of the vector of registers. */
static const char *view_emit_op(gen *G, const ir_op *op, const char *idx)
{
    idx = at_tile(G, idx) ? cg_fmt(G, "(%s)", G->ve) : idx; /* else a temporary */
    const ir_value *r = op->res[0];
    const ir_type *t = &r->type;
    if (op->code == IR_CONST)
        return cg_reg(G, r); /* every lane's */
    idx = index_once(G, idx);
    if (op->code == IR_NARROW) {
        const ir_type *x = &op->in[0]->type;
        int d = (int)op->a->dim;
        int64_t inner = inner_of(t, d), len = t->dim[d];
        int64_t outer = ir_type_numel(t) / (len * inner);
        return view_emit(G, op->in[0],
                         view_index(G, idx, outer, len, inner, x->dim[d], op->a->offset));
    }
    if (op->code == IR_TRANSPOSE)
        return view_emit(G, op->in[0], transposed_index(G, op, idx));
    const char *v = view_temp(G);
    const char *decl = G->vq ? cg_fmt(G, "vec<%s, %d>", regtype(t->dtype), G->vq)
                             : regtype(t->dtype);
    if (op->code == IR_CONCAT) {
        int d = (int)op->a->dim;
        int64_t inner = inner_of(t, d), len = t->dim[d];
        int64_t outer = ir_type_numel(t) / (len * inner);
        const char *row = view_temp(G);
        cg_line(G, "%s %s; // concat", decl, v);
        if (inner == 1)
            cg_line(G, "const i64 %s = %s %% %lld; // its element of the dim", row, idx,
                    (long long)len);
        else
            cg_line(G, "const i64 %s = %s / %lld %% %lld; // its element of the dim", row, idx,
                    (long long)inner, (long long)len);
        int64_t at = 0;
        for (int k = 0; k < op->nin; k++) {
            int64_t n = op->in[k]->type.dim[d];
            if (k == 0)
                cg_line(G, "if (%s < %lld) {", row, (long long)n);
            else if (k + 1 < op->nin)
                cg_line(G, "} else if (%s < %lld) {", row, (long long)(at + n));
            else
                cg_line(G, "} else {");
            G->indent++;
            view_set(G, v, view_emit(G, op->in[k], view_index(G, idx, outer, len, inner, n, -at)));
            G->indent--;
            at += n;
        }
        cg_line(G, "}");
        return view_lane(G, v);
    }
    const char *a[3] = {NULL, NULL, NULL};
    for (int k = 0; k < op->nin && k < 3; k++) {
        const ir_type *xt = &op->in[k]->type;
        int vq = G->vq;
        bool shared = G->vshared;
        /* an operand broadcast along the last dim (an expand of a [1],
         * a scalar's): every lane reads its same element, which is no
         * vector of lanes in memory (a vector load there read past a
         * [1]'s buffer: seed 2879296), so it is computed once, a scalar */
        if (vq && (xt->rank < 1 || xt->dim[xt->rank - 1] != t->dim[t->rank - 1])) {
            G->vq = 0;
            G->vshared = true;
        }
        a[k] = view_emit(G, op->in[k], cg_offset(G, t, xt, idx));
        G->vq = vq;
        G->vshared = shared;
    }
    const char *e;
    if (op->code == IR_CAST)
        e = cast_expr(G, op->in[0]->type.dtype, t->dtype, a[0]);
    else if (op->code == IR_EXPAND)
        e = a[0];
    else
        e = cg_round_to(G, t->dtype, ew_expr(G, op, a[0], a[1], a[2]));
    if (!G->vq) {
        cg_line(G, "const %s %s = %s; // %s", decl, v, e, ir_ops[op->code].name);
        return v;
    }
    cg_line(G, "%s %s; // %s", decl, v, ir_ops[op->code].name);
    view_set(G, v, e);
    return view_lane(G, v);
}

/* v at element idx of its shape: loaded where it comes from outside the
 * group, the register made at e for a value of the domain there, else
 * computed there. In a vector's views: one aligned vector loaded; the
 * domain's value at the tile's element, which the tile's loop makes,
 * cannot be had there (vfail). */
static const char *view_emit(gen *G, const ir_value *v, const char *idx)
{
    int at = op_of(G, v);
    ir_dtype dt = v->type.dtype;
    if (at < 0 && G->vq) {
        const char *w = view_temp(G), *ty = cg_ctype(G, dt);
        cg_line(G, "const vec<%s, %d> %s = *reinterpret_cast<const vec<%s, %d> *>(p_%s + %s);", ty,
                G->vq, w, ty, G->vq, cg_cname(G, v), idx);
        return cg_load_conv(G, dt, cg_fmt(G, "%s.v[q]", w));
    }
    if (at < 0) {
        const char *r = view_temp(G);
        cg_line(G, "const %s %s = %s;", regtype(dt), r,
                cg_load_conv(G, dt, cg_fmt(G, "p_%s[%s]", cg_cname(G, v), idx)));
        return r;
    }
    if (ir_shape_eq(&v->type, G->vdom) && at_tile(G, idx)) {
        if (!G->vq && !G->vshared)
            return cg_reg(G, v);
        G->vfail = true;
        return "0";
    }
    return view_emit_op(G, IR_OP(G->m, at), idx);
}

/* Whether v is a transpose of the group that its domain's element e
 * stores at the place it moves it to (fuse.c's output transposes): of
 * another shape than the domain, its operand of the domain's. */
static bool out_transpose(const gen *G, const ir_value *v)
{
    const ir_op *op = v->def;
    return G->vdom && op && op->code == IR_TRANSPOSE && cg_in_group(G, v) &&
           !ir_shape_eq(&v->type, G->vdom) && ir_shape_eq(&op->in[0]->type, G->vdom);
}

/* Whether op of a group with a concat is computed by view_emit: a
 * concat, a narrow, an op of another shape than the domain (a branch's),
 * or one that reads a branch's value. */
static bool view_op(const gen *G, const ir_op *op)
{
    if (!G->vdom)
        return false;
    if (op->code == IR_CONCAT || op->code == IR_NARROW || op->code == IR_TRANSPOSE ||
        !ir_shape_eq(&op->res[0]->type, G->vdom))
        return true;
    for (int k = 0; k < op->nin; k++)
        if (cg_in_group(G, op->in[k]) && !ir_shape_eq(&op->in[k]->type, G->vdom))
            return true;
    return false;
}

/* Whether a vector's n lanes (n elements from a multiple of n, along the
 * domain's last dim) take their views lane for lane: every index the
 * group's view ops compute for lane q is the first lane's plus q, and
 * the first lane's a multiple of n, so that each load from outside is
 * lane q of an aligned vector of n and a concat takes one branch for
 * all. So where each of them keeps the last dim whole in steps of n: a
 * concat or narrow along the last dim in pieces and at offsets that are
 * multiples of n (along another dim, the last dim, a multiple of n, is
 * whole), a transpose that keeps the last dim last, an op of a branch
 * reading each operand from outside the group along the same last dim
 * (not broadcast along it), and every value's last dim a multiple of n. */
static bool view_lanes(const gen *G, int n)
{
    for (int i = 0; i < G->g->nops; i++) {
        const ir_op *op = IR_OP(G->m, G->g->ops[i]);
        const ir_type *t = &op->res[0]->type;
        int r = t->rank;
        bool view = view_op(G, op) || out_transpose(G, op->res[0]);
        if (!view || op->code == IR_CONST)
            continue;
        if (r < 1 || t->dim[r - 1] % n)
            return false;
        if (op->code == IR_TRANSPOSE && op->a->list[r - 1] != r - 1)
            return false;
        if (op->code == IR_CONCAT && op->a->dim == r - 1)
            for (int k = 0; k < op->nin; k++)
                if (op->in[k]->type.dim[r - 1] % n)
                    return false;
        if (op->code == IR_NARROW && op->a->dim == r - 1 &&
            (op->a->offset % n || op->in[0]->type.dim[r - 1] % n))
            return false;
        bool moves = op->code == IR_CONCAT || op->code == IR_NARROW || op->code == IR_TRANSPOSE;
        for (int k = 0; k < op->nin && !moves; k++) { /* an elementwise op's broadcasts */
            const ir_value *x = op->in[k];
            const ir_op *d = x->def;
            if (d && d->code == IR_CONST && cg_in_group(G, x))
                continue;
            if (x->type.rank < 1 || x->type.dim[x->type.rank - 1] != t->dim[r - 1])
                return false;
        }
    }
    return true;
}

/* ---- a vector's views at once ----
 *
 * Where a vector's lanes take the group's views lane for lane
 * (view_lanes), its views are computed before the tile's loop over the
 * lanes, once for the vector: each index is the first lane's, each load
 * from outside one aligned vector (16 bytes: a bf16 rotation's reads of
 * the rotated half are one load for 8 lanes where each lane had read 2
 * bytes), a concat takes one branch, and each op of a branch computes its
 * lanes in a loop. The values are vectors of registers (vec<float, n>);
 * the functions return the expression of lane q of one, to be read inside
 * such a loop. A view that reaches a value the tile's loop makes (the
 * domain's at the tile's element) cannot be had before that loop: vfail,
 * and the tile computes its views lane by lane as before. view_emit and
 * view_emit_op (above) take either way. */

/* Before tile t's loop over its lanes: the group's views of the domain's
 * shape (those emit_tile_ops computes with view_emit_op), each once for
 * the vector at e, its lanes named in G->vname; nothing where the lanes
 * do not take them lane for lane, or a view reaches a register of the
 * loop (the statements made so far then dropped). */
static void view_vectors(gen *G, const tile *t)
{
    G->vname = NULL;
    if (!G->vdom || t->vec < 2 || !view_lanes(G, t->vec))
        return;
    size_t len = G->b->len;
    int ntemp = G->ntemp;
    unsigned helpers = G->helpers;
    const char **names = su_alloc(G->arena, (size_t)G->g->nops * sizeof *names);
    G->vq = t->vec;
    G->vfail = false;
    G->ve = "e";
    for (int k = 0; k < G->g->nops && !G->vfail; k++) {
        const ir_op *op = IR_OP(G->m, G->g->ops[k]);
        names[k] = NULL;
        if (view_op(G, op) && ir_shape_eq(&op->res[0]->type, t->dom) && op->code != IR_CONST)
            names[k] = view_emit_op(G, op, "e");
    }
    G->vq = 0;
    if (G->vfail) {
        G->b->len = len;
        if (len)
            G->b->s[len] = 0;
        G->ntemp = ntemp;
        G->helpers = helpers;
        return;
    }
    G->vname = names;
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
        if (is_sib(G, i)) { /* its operand read beside the prologue's, its result stored */
            if (t->prologue && !cg_in_group(G, op->in[0]))
                vlist_add(loads, op->in[0]);
            if (t->rexpr && G->f->stored[op->res[0]->id])
                vlist_add(stores, op->res[0]);
            continue;
        }
        bool pro = before_red(G, i), epi = G->red && i > g->reduce;
        bool main = G->red && i == g->reduce;
        if ((!(pro && t->prologue) && !(epi && t->rexpr) && !main) || cg_stat_member(G, op))
            continue;
        /* a concat's, a narrow's and its branches' reads are view_emit's */
        for (int j = 0; j < op->nin && !view_op(G, op); j++) {
            bool dx = op->code == IR_LAYERNORM_DX || op->code == IR_RMSNORM_DX;
            bool norm = op->code == IR_LAYERNORM || op->code == IR_RMSNORM || dx;
            bool wanted = !main || (t->prologue && j < red_main_inputs(op)) ||
                          (t->rexpr && j > 0 && norm) || (t->consume && j > 0 && dx);
            bool hoisted = op->code == IR_ADAMW && j == 3; /* emit_hoisted's */
            if (wanted && !hoisted && !cg_in_group(G, op->in[j]))
                vlist_add(loads, op->in[j]);
        }
        bool st = G->f->stored[op->res[0]->id];
        if (st && ((pro && t->store_prologue) || ((main || epi) && t->rexpr)))
            vlist_add(stores, op->res[0]);
    }
}

void cg_tile_memory(gen *G, const tile *t, const ir_value ***vals, int *n)
{
    vlist loads = vlist_new(G), stores = vlist_new(G);
    tile_values(G, t, &loads, &stores);
    for (int i = 0; i < stores.n; i++)
        vlist_add(&loads, stores.v[i]);
    *vals = loads.v;
    *n = loads.n;
}

/* Whether tile t takes v from the loads made ahead of it (l_NAME[u]). */
static bool loaded_ahead(const tile *t, const ir_value *v)
{
    return t->ahead && contiguous_last(t->dom, &v->type);
}

/* The values of cg_tile_ahead, in the order the tile loads them. */
static vlist ahead_values(gen *G, const tile *t)
{
    vlist loads = vlist_new(G), stores = vlist_new(G), along = vlist_new(G);
    tile_values(G, t, &loads, &stores);
    for (int i = 0; i < loads.n; i++)
        if (contiguous_last(t->dom, &loads.v[i]->type))
            vlist_add(&along, loads.v[i]);
    return along;
}

int cg_tile_ahead(gen *G, const tile *t)
{
    return ahead_values(G, t).n;
}

void cg_emit_ahead_arrays(gen *G, const tile *t, int steps)
{
    vlist along = ahead_values(G, t);
    for (int i = 0; i < along.n; i++) {
        const ir_value *v = along.v[i];
        const char *ty = cg_ctype(G, v->type.dtype), *id = cg_cname(G, v);
        if (t->vec > 1) {
            G->helpers |= H_VEC;
            cg_line(G, "vec<%s, %d> l_%s[%d];", ty, t->vec, id, steps);
        } else {
            cg_line(G, "%s l_%s[%d];", ty, id, steps);
        }
    }
}

void cg_emit_ahead_loads(gen *G, const tile *t)
{
    vlist along = ahead_values(G, t);
    for (int i = 0; i < along.n; i++) {
        const ir_value *v = along.v[i];
        const char *ty = cg_ctype(G, v->type.dtype), *id = cg_cname(G, v);
        const char *off = cg_offset(G, t->dom, &v->type, "e");
        if (t->vec > 1)
            cg_line(G, "l_%s[u] = *reinterpret_cast<const vec<%s, %d> *>(p_%s + %s);", id, ty,
                    t->vec, id, off);
        else
            cg_line(G, "l_%s[u] = p_%s[%s];", id, id, off);
    }
}

bool cg_tile_reads_e(gen *G, const tile *t)
{
    vlist loads = vlist_new(G), stores = vlist_new(G);
    tile_values(G, t, &loads, &stores);
    bool reads = stores.n > 0;
    for (int i = 0; i < loads.n; i++)
        reads |= !loaded_ahead(t, loads.v[i]);
    return reads;
}

static void emit_loads(gen *G, const tile *t, const vlist *loads, const char *e)
{
    for (int i = 0; i < loads->n; i++) {
        const ir_value *v = loads->v[i];
        ir_dtype dt = v->type.dtype;
        const char *id = cg_cname(G, v);
        if (loaded_ahead(t, v)) { /* a vector's elements are read in the tile's loop */
            if (t->vec == 1)
                cg_line(G, "const %s v_%s = %s;", regtype(dt), id,
                        cg_load_conv(G, dt, cg_fmt(G, "l_%s[%s]", id, t->ahead)));
            continue;
        }
        const char *off = cg_offset(G, t->dom, &v->type, e);
        if (t->vec > 1 && contiguous_last(t->dom, &v->type)) {
            G->helpers |= H_VEC;
            const char *ty = cg_ctype(G, dt);
            cg_line(G, "const vec<%s, %d> l_%s = *reinterpret_cast<const vec<%s, %d> *>(p_%s + %s);",
                 ty, t->vec, id, ty, t->vec, id, off);
        } else {
            cg_line(G, "const %s v_%s = %s;", regtype(dt), id,
                 cg_load_conv(G, dt, cg_fmt(G, "p_%s[%s]", id, off)));
        }
    }
}

static void emit_stores(gen *G, const tile *t, const vlist *stores, const char *e)
{
    for (int i = 0; i < stores->n; i++) {
        const ir_value *v = stores->v[i];
        const char *id = cg_cname(G, v);
        if (out_transpose(G, v)) { /* the operand's element e, at its place */
            const ir_op *op = v->def;
            const char *val = cg_store_conv(G, v->type.dtype, view_emit(G, op->in[0], e));
            cg_line(G, "p_%s[%s] = %s; // transposed", id,
                    transposed_place(G, op, at_tile(G, e) ? cg_fmt(G, "(%s)", e) : e), val);
            continue;
        }
        const char *val = cg_store_conv(G, v->type.dtype, cg_reg(G, v));
        if (t->vec > 1)
            cg_line(G, "s_%s.v[q] = %s;", id, val);
        else
            cg_line(G, "p_%s[%s] = %s;", id, e, val);
    }
}

/* The reduction's input element, from the prologue's registers. */
static const char *red_input(gen *G)
{
    if (G->red->code == IR_MSE)
        return cg_fmt(G, "%s - %s", cg_reg(G, G->red->in[0]), cg_reg(G, G->red->in[1]));
    return cg_reg(G, G->red->in[0]);
}

/* Emits the ops of the tile: prologue, xin and consume, result, epilogue. */
static void emit_tile_ops(gen *G, const tile *t, const vlist *stores, const char *e)
{
    const pass_fgroup *g = G->g;
    G->ve = e;
    if (t->prologue)
        for (int k = 0; k < g->nops; k++) {
            const ir_op *op = IR_OP(G->m, g->ops[k]);
            if (!before_red(G, g->ops[k]) || g->ops[k] == g->reduce || is_sib(G, g->ops[k]))
                continue;
            if (!view_op(G, op)) {
                cg_emit_op(G, op);
            } else if (ir_shape_eq(&op->res[0]->type, t->dom)) { /* else where a concat reads it */
                const ir_value *r = op->res[0];
                cg_line(G, "const %s %s = %s; // %s", regtype(r->type.dtype), cg_reg(G, r),
                        G->vname && G->vname[k] ? G->vname[k] : view_emit_op(G, op, e),
                        ir_ops[op->code].name);
            }
        }
    vlist pro = vlist_new(G), rest = vlist_new(G);
    for (int i = 0; i < stores->n; i++) {
        int at = op_of(G, stores->v[i]);
        vlist_add(before_red(G, at) && !is_sib(G, at) ? &pro : &rest, stores->v[i]);
    }
    emit_stores(G, t, &pro, e);
    if (G->red && (t->prologue || t->xin))
        cg_line(G, "const float xin = %s;", t->prologue ? red_input(G) : t->xin);
    if (t->consume)
        cg_line(G, "%s", t->consume);
    if (!t->rexpr)
        return;
    const ir_value *r = G->red->res[0];
    cg_line(G, "const float %s = %s; // %s", cg_reg(G, r), cg_round_to(G, r->type.dtype, t->rexpr),
         ir_ops[G->red->code].name);
    const ir_op *sib = cg_sib(G);
    if (sib && t->srexpr)
        cg_line(G, "const float %s = %s; // the sibling sum", cg_reg(G, sib->res[0]),
                cg_round_to(G, sib->res[0]->type.dtype, t->srexpr));
    for (int k = 0; k < g->nops; k++)
        if (g->ops[k] > g->reduce && !cg_stat_member(G, IR_OP(G->m, g->ops[k])))
            cg_emit_op(G, IR_OP(G->m, g->ops[k]));
    emit_stores(G, t, &rest, e);
}

/* One tile at element index `e` (declared by the caller). */
void cg_emit_tile(gen *G, const tile *t)
{
    vlist loads = vlist_new(G), stores = vlist_new(G);
    tile_values(G, t, &loads, &stores);
    emit_loads(G, t, &loads, "e");
    if (t->pre)
        cg_line(G, "%s", t->pre);
    if (t->vec == 1) {
        emit_tile_ops(G, t, &stores, "e");
        if (t->post)
            cg_line(G, "%s", t->post);
        return;
    }
    G->helpers |= H_VEC;
    view_vectors(G, t);
    for (int i = 0; i < stores.n; i++)
        if (!out_transpose(G, stores.v[i]))
            cg_line(G, "vec<%s, %d> s_%s;", cg_ctype(G, stores.v[i]->type.dtype), t->vec,
                    cg_cname(G, stores.v[i]));
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int q = 0; q < %d; q++) {", t->vec);
    G->indent++;
    for (int i = 0; i < loads.n; i++) {
        const ir_value *v = loads.v[i];
        if (contiguous_last(t->dom, &v->type))
            cg_line(G, "const %s v_%s = %s;", regtype(v->type.dtype), cg_cname(G, v),
                 cg_load_conv(G, v->type.dtype,
                              t->ahead ? cg_fmt(G, "l_%s[%s].v[q]", cg_cname(G, v), t->ahead)
                                       : cg_fmt(G, "l_%s.v[q]", cg_cname(G, v))));
    }
    emit_tile_ops(G, t, &stores, "e + q");
    G->vname = NULL;
    G->indent--;
    cg_line(G, "}");
    if (t->post)
        cg_line(G, "%s", t->post);
    for (int i = 0; i < stores.n; i++) {
        const ir_value *v = stores.v[i];
        const char *ty = cg_ctype(G, v->type.dtype);
        if (!out_transpose(G, v))
            cg_line(G, "*reinterpret_cast<vec<%s, %d> *>(p_%s + e) = s_%s;", ty, t->vec,
                    cg_cname(G, v), cg_cname(G, v));
    }
}
