/* ir_eval.c: the reference interpreter of ir_eval.h. Every op is the
 * plainest double-precision loop over its math: unravel the result index,
 * find each operand's element by NumPy broadcasting, accumulate in double.
 * Speed does not matter (tests run tiny shapes); obviousness does, since
 * gradient checks and kernel tests trust it. Values live in one malloc'd
 * array per value id, remade by every run. */
#include "ir_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_MAX_IN = 4 }; /* operands of one op (attention, adamw) */

struct ev_module {
    const ir_module *m;
    int cap;            /* entries of val and given */
    double **val;       /* [cap]: by value id, computed by the last run */
    double **given;     /* [cap]: by source value id, data from ev_set */
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "ir_eval: out of memory\n");
        abort();
    }
    return p;
}

static bool fail(char *err, size_t errlen, const char *fmt, ...) SU_PRINTF(3, 4);

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* Grows the arrays to the module's current value count. */
static void reserve(ev_module *ev)
{
    int n = ev->m->next_id;
    if (n <= ev->cap)
        return;
    double **val = xcalloc((size_t)n, sizeof *val), **given = xcalloc((size_t)n, sizeof *given);
    for (int i = 0; i < ev->cap; i++) {
        val[i] = ev->val[i];
        given[i] = ev->given[i];
    }
    free(ev->val);
    free(ev->given);
    ev->val = val;
    ev->given = given;
    ev->cap = n;
}

ev_module *ev_new(const ir_module *m)
{
    ev_module *ev = xcalloc(1, sizeof *ev);
    ev->m = m;
    reserve(ev);
    return ev;
}

void ev_free(ev_module *ev)
{
    if (!ev)
        return;
    for (int i = 0; i < ev->cap; i++) {
        free(ev->val[i]);
        free(ev->given[i]);
    }
    free(ev->val);
    free(ev->given);
    free(ev);
}

static size_t numel(const ir_type *t) { return (size_t)ir_type_numel(t); }

bool ev_set(ev_module *ev, const char *name, const double *data)
{
    reserve(ev);
    for (int i = 0; i < ev->m->ops.n; i++) {
        const ir_op *op = IR_OP(ev->m, i);
        bool named = op->code == IR_INPUT || op->code == IR_PARAM || op->code == IR_STATE;
        if (!named || !op->a->name || strcmp(op->a->name, name) != 0)
            continue;
        const ir_value *v = op->res[0];
        size_t n = numel(&v->type);
        if (!ev->given[v->id])
            ev->given[v->id] = xcalloc(n, sizeof(double));
        memcpy(ev->given[v->id], data, n * sizeof(double));
        return true;
    }
    return false;
}

const double *ev_value(const ev_module *ev, const ir_value *v)
{
    return v && v->id >= 0 && v->id < ev->cap ? ev->val[v->id] : NULL;
}

/* ---- indexing ---- */

/* The multi-index of flat (row-major) index i in shape t. */
static void unravel(size_t i, const ir_type *t, int64_t *idx)
{
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = (int64_t)(i % (size_t)t->dim[d]);
        i /= (size_t)t->dim[d];
    }
}

/* The flat index into x (shape t) of the element that NumPy broadcasting
 * pairs with result index idx (rank n >= t->rank, aligned at the end). */
static size_t bcast_at(const int64_t *idx, int n, const ir_type *t)
{
    size_t off = 0;
    int lead = n - t->rank;
    for (int d = 0; d < t->rank; d++)
        off = off * (size_t)t->dim[d] + (size_t)(t->dim[d] == 1 ? 0 : idx[lead + d]);
    return off;
}

/* The product of dims [from, to) of t. */
static size_t dims(const ir_type *t, int from, int to)
{
    size_t n = 1;
    for (int d = from; d < to; d++)
        n *= (size_t)t->dim[d];
    return n;
}

/* ---- elementwise ---- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static const double GELU_C = 0.7978845608028654; /* sqrt(2 / pi) */

static double gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(GELU_C * (x + 0.044715 * x * x * x)));
}

static double gelu_deriv(double x)
{
    double t = tanh(GELU_C * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * 0.044715 * x * x);
}

/* i32 arithmetic wraps, as the runtime's does. */
static double wrap32(double x)
{
    return (double)(int32_t)(uint32_t)(uint64_t)(int64_t)x;
}

static double binop(ir_opcode c, double a, double b, bool i32)
{
    double s;
    switch (c) {
    case IR_ADD: return i32 ? wrap32(a + b) : a + b;
    case IR_SUB: return i32 ? wrap32(a - b) : a - b;
    case IR_MUL: return i32 ? wrap32(a * b) : a * b;
    case IR_DIV: return i32 ? wrap32(trunc(a / b)) : a / b;
    case IR_MAX: return a > b ? a : b;
    case IR_MIN: return a < b ? a : b;
    case IR_POW: return pow(a, b);
    case IR_GT: return a > b ? 1.0 : 0.0;
    case IR_EQ: return a == b ? 1.0 : 0.0;
    case IR_LESS: return a < b;
    case IR_LESS_EQ: return a <= b;
    case IR_GREATER: return a > b;
    case IR_GREATER_EQ: return a >= b;
    case IR_EQUAL: return a == b;
    case IR_NOT_EQUAL: return a != b;
    case IR_GELU_GRAD: return b * gelu_deriv(a);
    case IR_SILU_GRAD:
        s = sigmoid(a);
        return b * s * (1.0 + a * (1.0 - s));
    default: su_unreachable();
    }
}

static bool eval_binary(const ir_op *op, const double *a, const double *b, const double *c,
                        double *y, char *err, size_t errlen)
{
    const ir_type *ty = &op->res[0]->type;
    bool i32 = ty->dtype == IR_I32;
    int64_t idx[IR_MAX_RANK];
    for (size_t i = 0; i < numel(ty) && op->code == IR_WHERE; i++) { /* (c, a, b) */
        unravel(i, ty, idx);
        y[i] = a[bcast_at(idx, ty->rank, &op->in[0]->type)] != 0
                   ? b[bcast_at(idx, ty->rank, &op->in[1]->type)]
                   : c[bcast_at(idx, ty->rank, &op->in[2]->type)];
    }
    for (size_t i = 0; i < numel(ty) && op->code != IR_WHERE; i++) {
        unravel(i, ty, idx);
        double x = a[bcast_at(idx, ty->rank, &op->in[0]->type)];
        double z = b[bcast_at(idx, ty->rank, &op->in[1]->type)];
        if (i32 && op->code == IR_DIV && z == 0)
            return fail(err, errlen, "div: i32 division by zero at result index %zu", i);
        y[i] = binop(op->code, x, z, i32);
    }
    return true;
}

/* Toward zero, saturating at the int32 range; nan is 0 (as the runtime). */
static double to_i32(double x)
{
    if (x != x)
        return 0;
    return x >= 2147483647.0 ? 2147483647.0 : x <= -2147483648.0 ? -2147483648.0 : trunc(x);
}

static double unop(const ir_op *op, double x)
{
    switch (op->code) {
    case IR_NEG: return -x;
    case IR_ABS: return fabs(x);
    case IR_RELU: return x > 0 ? x : 0.0;
    case IR_GELU: return gelu(x);
    case IR_SILU: return x * sigmoid(x);
    case IR_TANH: return tanh(x);
    case IR_SIGMOID: return sigmoid(x);
    case IR_EXP: return exp(x);
    case IR_LOG: return log(x);
    case IR_SQRT: return sqrt(x);
    case IR_RSQRT: return 1.0 / sqrt(x);
    case IR_SIN: return sin(x);
    case IR_COS: return cos(x);
    case IR_CAST:
        return op->a->dtype == IR_BOOL ? x != 0 : op->a->dtype == IR_I32 ? to_i32(x) : x;
    default: su_unreachable();
    }
}

/* ---- contractions ---- */

/* The batch dims of a matmul operand (all but its last two; none for 1-D). */
static ir_type batch_of(const ir_type *t, int keep)
{
    ir_type b = *t;
    b.rank = t->rank - keep < 0 ? 0 : t->rank - keep;
    return b;
}

/* NumPy matmul: 1-D a is [1, K] and 1-D b is [K, 1], both then dropped;
 * batch dims broadcast. */
static void eval_matmul(const ir_op *op, const double *a, const double *b, double *y)
{
    const ir_type *ta = &op->in[0]->type, *tb = &op->in[1]->type, *ty = &op->res[0]->type;
    size_t k = (size_t)ta->dim[ta->rank - 1];
    size_t m = ta->rank >= 2 ? (size_t)ta->dim[ta->rank - 2] : 1;
    size_t n = tb->rank >= 2 ? (size_t)tb->dim[tb->rank - 1] : 1;
    ir_type ba = batch_of(ta, 2), bb = batch_of(tb, 2);
    ir_type bo = batch_of(ty, (ta->rank >= 2) + (tb->rank >= 2));
    int64_t idx[IR_MAX_RANK];
    for (size_t t = 0; t < numel(&bo); t++) {
        unravel(t, &bo, idx);
        const double *pa = a + bcast_at(idx, bo.rank, &ba) * m * k;
        const double *pb = b + bcast_at(idx, bo.rank, &bb) * k * n;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t l = 0; l < k; l++)
                    s += pa[i * k + l] * pb[l * n + j];
                y[t * m * n + i * n + j] = s;
            }
    }
}

/* Row s of p [S, T] (scores of one head) becomes the softmax over the keys
 * it sees, t <= s + (T - S) when causal; the rest (and a row that sees
 * none) is 0, as the runtime's kernel. */
static void masked_softmax(double *p, size_t S, size_t T, bool causal)
{
    for (size_t s = 0; s < S; s++) {
        double *row = p + s * T;
        long long end = causal ? (long long)s + ((long long)T - (long long)S) + 1 : (long long)T;
        size_t e = end < 0 ? 0 : end > (long long)T ? T : (size_t)end;
        double mx = -INFINITY, sum = 0;
        for (size_t t = 0; t < e; t++)
            mx = row[t] > mx ? row[t] : mx;
        for (size_t t = 0; t < e; t++)
            sum += (row[t] = exp(row[t] - mx));
        for (size_t t = 0; t < T; t++)
            row[t] = t < e ? row[t] / sum : 0.0;
    }
}

/* attention (v not NULL: probs @ v into y) and attn_probs (v NULL: the
 * probs [..., S, T] into y), per leading index. */
static void eval_attention(const ir_op *op, const double *q, const double *k, const double *v,
                           double *y)
{
    const ir_type *tq = &op->in[0]->type;
    int r = tq->rank;
    size_t S = (size_t)tq->dim[r - 2], d = (size_t)tq->dim[r - 1];
    size_t T = (size_t)op->in[1]->type.dim[r - 2];
    size_t dv = v ? (size_t)op->in[2]->type.dim[r - 1] : 0, heads = dims(tq, 0, r - 2);
    double *p = xcalloc(S * T, sizeof *p), scale = 1.0 / sqrt((double)d);
    for (size_t h = 0; h < heads; h++) {
        const double *qh = q + h * S * d, *kh = k + h * T * d;
        for (size_t s = 0; s < S; s++)
            for (size_t t = 0; t < T; t++) {
                double acc = 0;
                for (size_t l = 0; l < d; l++)
                    acc += qh[s * d + l] * kh[t * d + l];
                p[s * T + t] = acc * scale;
            }
        masked_softmax(p, S, T, op->a->causal);
        if (!v) {
            memcpy(y + h * S * T, p, S * T * sizeof *p);
            continue;
        }
        for (size_t s = 0; s < S; s++)
            for (size_t j = 0; j < dv; j++) {
                double acc = 0;
                for (size_t t = 0; t < T; t++)
                    acc += p[s * T + t] * v[h * T * dv + t * dv + j];
                y[h * S * dv + s * dv + j] = acc;
            }
    }
    free(p);
}

/* ---- reductions and normalisations ---- */

/* sum, mean, amax over a->axis; keepdims does not change the layout. */
static void eval_reduce(const ir_op *op, const double *x, double *y)
{
    const ir_type *t = &op->in[0]->type;
    int ax = (int)op->a->axis;
    size_t outer = dims(t, 0, ax), n = (size_t)t->dim[ax], inner = dims(t, ax + 1, t->rank);
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
            double acc = op->code == IR_AMAX ? -INFINITY : 0.0;
            for (size_t j = 0; j < n; j++) {
                double e = x[(o * n + j) * inner + i];
                acc = op->code == IR_AMAX ? (e > acc ? e : acc) : acc + e;
            }
            y[o * inner + i] = op->code == IR_MEAN ? acc / (double)n : acc;
        }
}

static void eval_softmax(const ir_op *op, const double *x, double *y)
{
    const ir_type *t = &op->in[0]->type;
    int ax = (int)op->a->axis;
    size_t outer = dims(t, 0, ax), n = (size_t)t->dim[ax], inner = dims(t, ax + 1, t->rank);
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < n; j++)
                mx = fmax(mx, x[(o * n + j) * inner + i]);
            for (size_t j = 0; j < n; j++)
                sum += exp(x[(o * n + j) * inner + i] - mx);
            for (size_t j = 0; j < n; j++)
                y[(o * n + j) * inner + i] = exp(x[(o * n + j) * inner + i] - mx) / sum;
        }
}

/* layernorm (b not NULL): (x - mean) / sqrt(var + eps) * g + b with the
 * biased variance; rmsnorm (b NULL): x / sqrt(mean(x^2) + eps) * g. Over
 * the last dim. */
static void eval_norm(const ir_op *op, const double *x, const double *g, const double *b,
                      double *y)
{
    const ir_type *t = &op->in[0]->type;
    size_t D = (size_t)t->dim[t->rank - 1], rows = numel(t) / D;
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * D;
        double mean = 0, var = 0;
        if (b) {
            for (size_t i = 0; i < D; i++)
                mean += xr[i] / (double)D;
        }
        for (size_t i = 0; i < D; i++)
            var += (xr[i] - mean) * (xr[i] - mean) / (double)D;
        double inv = 1.0 / sqrt(var + op->a->eps);
        for (size_t i = 0; i < D; i++)
            y[r * D + i] = (xr[i] - mean) * inv * g[i] + (b ? b[i] : 0.0);
    }
}

/* ---- layout ---- */

/* out dim i is in dim perm[i]. */
static void eval_transpose(const ir_op *op, const double *x, double *y)
{
    const ir_type *tx = &op->in[0]->type, *ty = &op->res[0]->type;
    size_t stride[IR_MAX_RANK];
    int64_t idx[IR_MAX_RANK];
    for (int d = tx->rank - 1; d >= 0; d--)
        stride[d] = d == tx->rank - 1 ? 1 : stride[d + 1] * (size_t)tx->dim[d + 1];
    for (size_t i = 0; i < numel(ty); i++) {
        unravel(i, ty, idx);
        size_t off = 0;
        for (int d = 0; d < ty->rank; d++)
            off += (size_t)idx[d] * stride[op->a->list[d]];
        y[i] = x[off];
    }
}

static void eval_expand(const ir_op *op, const double *x, double *y)
{
    const ir_type *ty = &op->res[0]->type;
    int64_t idx[IR_MAX_RANK];
    for (size_t i = 0; i < numel(ty); i++) {
        unravel(i, ty, idx);
        y[i] = x[bcast_at(idx, ty->rank, &op->in[0]->type)];
    }
}

/* An id (a double holding an i32) that indexes a table of n rows. */
static bool check_id(const char *what, double id, size_t at, size_t n, char *err,
                     size_t errlen)
{
    if (id >= 0 && id < (double)n && id == trunc(id))
        return true;
    return fail(err, errlen, "%s: id %g at index %zu is out of range [0, %zu)", what, id, at, n);
}

/* embedding (table, ids) -> [..., D]; embedding_grad (ids, dy) -> [V, D]. */
static bool eval_embedding(const ir_op *op, const double *x0, const double *x1, double *y,
                           char *err, size_t errlen)
{
    bool grad = op->code == IR_EMBEDDING_GRAD;
    const ir_type *ty = &op->res[0]->type;
    const ir_type *tt = grad ? ty : &op->in[0]->type, *ti = &op->in[grad ? 0 : 1]->type;
    const double *ids = grad ? x0 : x1;
    size_t V = (size_t)tt->dim[0], D = (size_t)tt->dim[1];
    for (size_t r = 0; r < numel(ti); r++) {
        if (!check_id(ir_ops[op->code].name, ids[r], r, V, err, errlen))
            return false;
        size_t row = (size_t)ids[r];
        for (size_t d = 0; d < D; d++) {
            if (grad)
                y[row * D + d] += x1[r * D + d];
            else
                y[r * D + d] = x0[row * D + d];
        }
    }
    return true;
}

/* ---- losses ---- */

static void eval_mse(const ir_op *op, const double *a, const double *b, double *y)
{
    size_t n = numel(&op->in[0]->type);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (a[i] - b[i]) * (a[i] - b[i]);
    *y = s / (double)n;
}

/* cross_entropy: the mean over rows of logsumexp(row) - row[label];
 * cross_entropy_grad: per row softmax(row) - one_hot(label), unscaled. */
static bool eval_xent(const ir_op *op, const double *x, const double *labels, double *y,
                      char *err, size_t errlen)
{
    const ir_type *t = &op->in[0]->type;
    size_t C = (size_t)t->dim[t->rank - 1], rows = numel(t) / C;
    bool grad = op->code == IR_XENT_GRAD;
    double loss = 0;
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * C;
        if (!check_id(ir_ops[op->code].name, labels[r], r, C, err, errlen))
            return false;
        size_t label = (size_t)labels[r];
        double mx = -INFINITY, sum = 0;
        for (size_t c = 0; c < C; c++)
            mx = fmax(mx, xr[c]);
        for (size_t c = 0; c < C; c++)
            sum += exp(xr[c] - mx);
        loss += mx + log(sum) - xr[label];
        for (size_t c = 0; grad && c < C; c++)
            y[r * C + c] = exp(xr[c] - mx) / sum - (c == label ? 1.0 : 0.0);
    }
    if (!grad)
        *y = loss / (double)rows;
    return true;
}

/* ---- optimizer ---- */

static void eval_optim(const ir_op *op, double *const *x, double *y)
{
    const ir_attrs *a = op->a;
    size_t n = numel(&op->res[0]->type);
    for (size_t i = 0; i < n; i++) {
        switch (op->code) {
        case IR_MOMENTUM:
            y[i] = a->momentum * x[0][i] + x[1][i] + a->wd * x[2][i];
            break;
        case IR_SGD: y[i] = x[0][i] - a->lr * (x[1][i] + a->wd * x[0][i]); break;
        case IR_ADAM_M: y[i] = a->beta1 * x[0][i] + (1 - a->beta1) * x[1][i]; break;
        case IR_ADAM_V: y[i] = a->beta2 * x[0][i] + (1 - a->beta2) * x[1][i] * x[1][i]; break;
        case IR_ADAMW: {
            double t = x[3][0];
            double mhat = x[1][i] / (1 - pow(a->beta1, t)), vhat = x[2][i] / (1 - pow(a->beta2, t));
            y[i] = x[0][i] * (1 - a->lr * a->wd) - a->lr * mhat / (sqrt(vhat) + a->eps);
            break;
        }
        default: su_unreachable();
        }
    }
}

/* narrow and concat: x viewed as [outer, dim, inner]. */
static void eval_narrow_concat(const ir_op *op, double *const *x, double *y)
{
    const ir_type *t = &op->res[0]->type;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < t->rank; d++) {
        if (d < op->a->dim)
            outer *= (size_t)t->dim[d];
        else if (d > op->a->dim)
            inner *= (size_t)t->dim[d];
    }
    size_t rows = (size_t)t->dim[op->a->dim];
    for (size_t o = 0, k = 0; o < outer; o++) {
        if (op->code == IR_NARROW) {
            size_t from = (size_t)op->in[0]->type.dim[op->a->dim];
            for (size_t i = 0; i < rows * inner; i++)
                y[k++] = x[0][(o * from + (size_t)op->a->offset) * inner + i];
            continue;
        }
        for (int j = 0; j < op->nin; j++) {
            size_t len = (size_t)op->in[j]->type.dim[op->a->dim] * inner;
            for (size_t i = 0; i < len; i++)
                y[k++] = x[j][o * len + i];
        }
    }
}

/* ---- ops ---- */

static bool eval_source(const ev_module *ev, const ir_op *op, double *y, char *err,
                        size_t errlen)
{
    const ir_value *v = op->res[0];
    size_t n = numel(&v->type);
    if (op->code != IR_CONST && ev->given[v->id]) {
        memcpy(y, ev->given[v->id], n * sizeof *y);
        return true;
    }
    ir_init_kind init = op->code == IR_CONST ? IR_INIT_NONE : op->a->init.kind;
    if (op->code == IR_INPUT || (op->code != IR_CONST && init != IR_INIT_ZEROS &&
                                 init != IR_INIT_ONES))
        return fail(err, errlen, "%s \"%s\" has no data (ev_set it)", ir_ops[op->code].name,
                    op->a->name ? op->a->name : "?");
    double fill = op->code == IR_CONST ? op->a->value : init == IR_INIT_ONES ? 1.0 : 0.0;
    for (size_t i = 0; i < n; i++)
        y[i] = fill;
    return true;
}

static bool eval_op(const ev_module *ev, const ir_op *op, double *const *x, double *y,
                    char *err, size_t errlen)
{
    size_t n = numel(&op->res[0]->type);
    switch (ir_ops[op->code].cls) {
    case IR_C_SOURCE: return eval_source(ev, op, y, err, errlen);
    case IR_C_BINARY: return eval_binary(op, x[0], x[1], x[2], y, err, errlen);
    case IR_C_UNARY:
        for (size_t i = 0; i < n; i++)
            y[i] = unop(op, x[0][i]);
        return true;
    case IR_C_OPTIM: eval_optim(op, x, y); return true;
    case IR_C_COMM: break;
    default:
        switch (op->code) {
        case IR_MATMUL: eval_matmul(op, x[0], x[1], y); return true;
        case IR_ATTENTION: eval_attention(op, x[0], x[1], x[2], y); return true;
        case IR_ATTN_PROBS: eval_attention(op, x[0], x[1], NULL, y); return true;
        case IR_SUM:
        case IR_MEAN:
        case IR_AMAX: eval_reduce(op, x[0], y); return true;
        case IR_SOFTMAX: eval_softmax(op, x[0], y); return true;
        case IR_LAYERNORM: eval_norm(op, x[0], x[1], x[2], y); return true;
        case IR_RMSNORM: eval_norm(op, x[0], x[1], NULL, y); return true;
        case IR_CONSTRAIN:
        case IR_RESHAPE: memcpy(y, x[0], n * sizeof *y); return true;
        case IR_TRANSPOSE: eval_transpose(op, x[0], y); return true;
        case IR_EXPAND: eval_expand(op, x[0], y); return true;
        case IR_NARROW:
        case IR_CONCAT: eval_narrow_concat(op, x, y); return true;
        case IR_EMBEDDING:
        case IR_EMBEDDING_GRAD: return eval_embedding(op, x[0], x[1], y, err, errlen);
        case IR_MSE: eval_mse(op, x[0], x[1], y); return true;
        case IR_XENT:
        case IR_XENT_GRAD: return eval_xent(op, x[0], x[1], y, err, errlen);
        default: break;
        }
    }
    return fail(err, errlen, "%s is not supported by the reference evaluator",
                ir_ops[op->code].name);
}

bool ev_run_to(ev_module *ev, const ir_value *last, char *err, size_t errlen)
{
    reserve(ev);
    for (int i = 0; i < ev->cap; i++) {
        free(ev->val[i]);
        ev->val[i] = NULL;
    }
    for (int i = 0; i < ev->m->ops.n; i++) {
        const ir_op *op = IR_OP(ev->m, i);
        double *x[EV_MAX_IN] = {NULL};
        if (op->nres != 1 || op->nin > EV_MAX_IN)
            return fail(err, errlen, "op %d (%s) has %d results and %d operands", i,
                        ir_ops[op->code].name, op->nres, op->nin);
        for (int j = 0; j < op->nin; j++)
            if (!(x[j] = ev->val[op->in[j]->id]))
                return fail(err, errlen, "op %d (%s): operand %d is not computed yet", i,
                            ir_ops[op->code].name, j + 1);
        double *y = xcalloc(numel(&op->res[0]->type), sizeof *y);
        ev->val[op->res[0]->id] = y;
        if (!eval_op(ev, op, x, y, err, errlen))
            return false;
        if (op->res[0] == last)
            break;
    }
    return true;
}

bool ev_run(ev_module *ev, char *err, size_t errlen) { return ev_run_to(ev, NULL, err, errlen); }
