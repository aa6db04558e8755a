/* select.c: selection and routing (LANGUAGE.md §12): one_hot, argmax,
 * gather, cumsum and topk, each made of IR ops the rest of the compiler
 * already shards, differentiates and runs on every backend:
 *
 *   one_hot(ids, N)      ids [..., 1] == iota [N], cast to f32 (--dtype's
 *                        type under --dtype, as a written f32 would be):
 *                        an id outside [0, N) matches nothing, a zero row;
 *   argmax(x, axis)      m = amax(x) along the axis; where x == m, N - i
 *                        (i the index along the axis, in f32), else 0; N
 *                        minus the amax of that is the first index of the
 *                        maximum. Over a split axis each amax is a local
 *                        one and an all_reduce(max) of the small result;
 *   gather(x, ids, axis) the axis moved last: one_hot(ids, n) times x
 *                        (broadcast over the ids' positions), summed over
 *                        n, moved back; the gradient is the scatter-add
 *                        of PyTorch's, through the product. Memory: the
 *                        one-hot [..., m, n];
 *   cumsum(x, axis)      the axis moved last, then @ T [n, n] with T[i, j]
 *                        = 1 where i <= j: n^2 multiply-adds per row;
 *   topk(x, K)           K times: the argmax of what is left, its value
 *                        gathered from x (so the values' gradient goes to
 *                        their positions, as PyTorch's does), then that
 *                        position set to -FLT_MAX in the search copy (f32);
 *                        values and indices joined along the last axis.
 *
 * Each checks its operands and gives the user's errors at the call. */
#include "lower.h"

#include <float.h>
#include <string.h>

/* ---- arguments ---- */

typedef struct sel_args {
    const char *fn;
    const char *const *names; /* the parameters, NULL-terminated; all required */
    const ast_node *node[4];
} sel_args;

static ir_value *tensor_arg(fe_lower *L, fe_scope *s, fe_frame *f, const sel_args *a, int i)
{
    const ast_node *n = a->node[i];
    fe_val v = fe_eval(L, s, f, n);
    if (!v.v)
        fe_fail(L, n->loc, "argument '%s' of '%s' must be a tensor, not a number", a->names[i],
                a->fn);
    return v.v;
}

static int axis_arg(fe_lower *L, fe_scope *s, const sel_args *a, int i, int rank)
{
    const ast_node *n = a->node[i];
    int64_t k = fe_const_eval(L, s, n);
    if (k < -rank || k >= rank)
        fe_fail(L, n->loc, "%s's axis %lld is out of range for a tensor of rank %d", a->fn,
                (long long)k, rank);
    return (int)(k < 0 ? k + rank : k);
}

/* ---- ops ---- */

static ir_value *op1(fe_lower *L, ir_opcode code, ir_value *x, ir_attrs *a, su_loc loc)
{
    return fe_emit(L, code, &x, 1, a, loc);
}

static ir_value *op2(fe_lower *L, ir_opcode code, ir_value *x, ir_value *y, su_loc loc)
{
    return fe_emit(L, code, (ir_value *[]){x, y}, 2, NULL, loc);
}

static ir_value *cast(fe_lower *L, ir_value *x, ir_dtype t, su_loc loc)
{
    ir_attrs a = {.dtype = t};
    return x->type.dtype == t ? x : op1(L, IR_CAST, x, &a, loc);
}

static ir_value *number(fe_lower *L, double v, ir_dtype t, su_loc loc)
{
    return fe_tensor(L, (fe_val){.num = v, .is_int = t == IR_I32}, t, loc);
}

static ir_value *reshape(fe_lower *L, ir_value *x, const int64_t *dims, int rank, su_loc loc)
{
    ir_attrs a = {.nlist = rank};
    memcpy(a.list, dims, (size_t)rank * sizeof *dims);
    return op1(L, IR_RESHAPE, x, &a, loc);
}

/* 0, 1, ..., n - 1 (i32) laid along dim `at` of a rank-`rank` shape whose
 * other dims are 1 (only the trailing ones are written: broadcasting adds
 * the leading). */
static ir_value *iota_along(fe_lower *L, int64_t n, int at, int rank, su_loc loc)
{
    ir_attrs a = {.nlist = 1, .list = {n}};
    ir_value *i = fe_emit(L, IR_IOTA, NULL, 0, &a, loc);
    int64_t dims[IR_MAX_RANK];
    int k = 0;
    dims[k++] = n;
    for (int d = at + 1; d < rank; d++)
        dims[k++] = 1;
    return k == 1 ? i : reshape(L, i, dims, k, loc);
}

/* x with dim d moved last (perm), or back (inverse). */
static ir_value *move_last(fe_lower *L, ir_value *x, int d, bool back, su_loc loc)
{
    int r = x->type.rank;
    if (d == r - 1)
        return x;
    ir_attrs a = {.nlist = r};
    for (int i = 0, k = 0; i < r; i++)
        if (i != d)
            a.list[k++] = i;
    a.list[r - 1] = d;
    if (back) {
        ir_attrs inv = {.nlist = r};
        for (int i = 0; i < r; i++)
            inv.list[a.list[i]] = i;
        a = inv;
    }
    return op1(L, IR_TRANSPOSE, x, &a, loc);
}

static ir_value *one_hot(fe_lower *L, ir_value *ids, int64_t n, ir_dtype dt, su_loc loc)
{
    int64_t dims[IR_MAX_RANK];
    int r = ids->type.rank;
    if (r == IR_MAX_RANK)
        fe_fail(L, loc, "one_hot of a tensor of rank %d would have more than %d dimensions", r,
                IR_MAX_RANK);
    memcpy(dims, ids->type.dim, (size_t)r * sizeof *dims);
    dims[r] = 1;
    ir_value *col = reshape(L, ids, dims, r + 1, loc);
    return cast(L, op2(L, IR_EQ, col, iota_along(L, n, 0, 1, loc), loc), dt, loc);
}

/* The first index of the largest element along axis d (removed), i32. */
static ir_value *argmax(fe_lower *L, ir_value *x, int d, su_loc loc)
{
    int64_t n = x->type.dim[d];
    ir_attrs keep = {.axis = d, .keepdims = true}, drop = {.axis = d};
    ir_value *m = op1(L, IR_AMAX, x, &keep, loc);
    ir_value *hit = cast(L, op2(L, IR_EQ, x, m, loc), IR_F32, loc);
    ir_value *i = cast(L, iota_along(L, n, d, x->type.rank, loc), IR_F32, loc);
    ir_value *score = op2(L, IR_MUL, hit, op2(L, IR_SUB, number(L, (double)n, IR_F32, loc), i, loc),
                          loc);
    ir_value *first = op2(L, IR_SUB, number(L, (double)n, IR_F32, loc),
                          op1(L, IR_AMAX, score, &drop, loc), loc);
    return cast(L, first, IR_I32, loc);
}

/* take_along_axis(x, ids, d): ids of x's rank, the other dims equal. */
static ir_value *gather(fe_lower *L, ir_value *x, ir_value *ids, int d, su_loc loc)
{
    int r = x->type.rank;
    ir_value *xt = move_last(L, x, d, false, loc), *it = move_last(L, ids, d, false, loc);
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, xt->type.dim, (size_t)r * sizeof *dims);
    dims[r - 1] = 1;
    dims[r] = x->type.dim[d];
    ir_value *row = reshape(L, xt, dims, r + 1, loc);                  /* [..., 1, n] */
    ir_value *oh = one_hot(L, it, x->type.dim[d], x->type.dtype, loc); /* [..., m, n] */
    ir_attrs last = {.axis = r};
    ir_value *g = op1(L, IR_SUM, op2(L, IR_MUL, oh, row, loc), &last, loc);  /* [..., m] */
    return move_last(L, g, d, true, loc);
}

static ir_value *cumsum(fe_lower *L, ir_value *x, int d, su_loc loc)
{
    int64_t n = x->type.dim[d];
    ir_value *i = iota_along(L, n, 0, 2, loc), *j = iota_along(L, n, 0, 1, loc); /* [n, 1], [n] */
    ir_value *tri = op2(L, IR_GT, op2(L, IR_ADD, j, number(L, 1, IR_I32, loc), loc), i, loc);
    ir_value *y = op2(L, IR_MATMUL, move_last(L, x, d, false, loc),
                      cast(L, tri, x->type.dtype, loc), loc);
    return move_last(L, y, d, true, loc);
}

/* vals joined along their last axis (concat takes at most 4 at once). */
static ir_value *join_last(fe_lower *L, ir_value **vals, int n, su_loc loc)
{
    ir_attrs a = {.dim = vals[0]->type.rank - 1};
    ir_value *acc = vals[0];
    for (int k = 1; k < n;) {
        ir_value *in[4] = {acc};
        int m = 1;
        while (m < 4 && k < n)
            in[m++] = vals[k++];
        acc = fe_emit(L, IR_CONCAT, in, m, &a, loc);
    }
    return acc;
}

/* The K largest along the last axis, largest first (ties: the lower
 * index first), and their indices. */
static void topk(fe_lower *L, ir_value *x, int64_t k, su_loc loc, ir_value **out)
{
    int r = x->type.rank;
    int64_t n = x->type.dim[r - 1], dims[IR_MAX_RANK];
    memcpy(dims, x->type.dim, (size_t)r * sizeof *dims);
    dims[r - 1] = 1;
    ir_value *left = cast(L, x, IR_F32, loc), *vals[FE_MAX_RESULTS * 4], *idx[FE_MAX_RESULTS * 4];
    for (int j = 0; j < k; j++) {
        ir_value *i = argmax(L, left, r - 1, loc);                     /* [...] */
        idx[j] = reshape(L, i, dims, r, loc);                          /* [..., 1] */
        vals[j] = gather(L, x, idx[j], r - 1, loc);
        if (j + 1 < k) {
            ir_value *oh = one_hot(L, i, n, IR_F32, loc); /* [..., n] */
            ir_value *keep = op2(L, IR_SUB, number(L, 1, IR_F32, loc), oh, loc);
            left = op2(L, IR_ADD, op2(L, IR_MUL, left, keep, loc),
                       op2(L, IR_MUL, oh, number(L, -FLT_MAX, IR_F32, loc), loc), loc);
        }
    }
    out[0] = join_last(L, vals, (int)k, loc);
    out[1] = join_last(L, idx, (int)k, loc);
}

/* ---- calls ---- */

static void need_i32(fe_lower *L, const ast_node *n, const char *fn, const char *what,
                     const ir_value *v)
{
    char t[128];
    fe_type_str(t, sizeof t, &v->type);
    if (v->type.dtype != IR_I32)
        fe_fail(L, n->loc, "%s's %s must be i32, got %s", fn, what, t);
}

static void need_float(fe_lower *L, const ast_node *n, const char *fn, const ir_value *v)
{
    char t[128];
    fe_type_str(t, sizeof t, &v->type);
    if (!ir_dtype_is_float(v->type.dtype))
        fe_fail(L, n->loc, "%s needs a floating-point tensor, got %s", fn, t);
}

static void need_rank(fe_lower *L, const ast_node *n, const char *fn, const ir_value *v)
{
    if (v->type.rank == 0)
        fe_fail(L, n->loc, "%s of a scalar has no axis", fn);
}

int fe_select_call(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *call, ir_value **out)
{
    static const char *const one_hot_p[] = {"ids", "n", NULL}, *const argmax_p[] = {"x", "axis", NULL},
                             *const gather_p[] = {"x", "ids", "axis", NULL},
                             *const cumsum_p[] = {"x", "axis", NULL},
                             *const topk_p[] = {"x", "k", NULL};
    const char *fn = call->str;
    sel_args a = {.fn = fn};
    a.names = !strcmp(fn, "one_hot") ? one_hot_p
              : !strcmp(fn, "argmax") ? argmax_p
              : !strcmp(fn, "gather") ? gather_p
              : !strcmp(fn, "cumsum") ? cumsum_p
              : !strcmp(fn, "topk")   ? topk_p
                                      : NULL;
    if (!a.names)
        return 0;
    int np = 0;
    while (a.names[np])
        np++;
    fe_bind(L, fn, a.names, NULL, np, call, a.node);
    su_loc loc = call->loc;
    ir_value *x = tensor_arg(L, s, f, &a, 0);
    if (!strcmp(fn, "one_hot")) {
        need_i32(L, a.node[0], fn, "ids", x);
        int64_t n = fe_const_eval(L, s, a.node[1]);
        if (n < 1)
            fe_fail(L, a.node[1]->loc, "one_hot needs at least 1 class, got %lld", (long long)n);
        out[0] = one_hot(L, x, n, fe_dtype(L, IR_F32), loc); /* --dtype's, as written f32 */
        return 1;
    }
    need_rank(L, a.node[0], fn, x);
    if (!strcmp(fn, "topk")) {
        need_float(L, a.node[0], fn, x);
        int64_t k = fe_const_eval(L, s, a.node[1]);
        int64_t n = x->type.dim[x->type.rank - 1];
        if (k < 1 || k > n || k > FE_MAX_RESULTS * 4)
            fe_fail(L, a.node[1]->loc, "topk's k must be 1 to %lld, got %lld",
                    (long long)(n < FE_MAX_RESULTS * 4 ? n : FE_MAX_RESULTS * 4), (long long)k);
        topk(L, x, k, loc, out);
        return 2;
    }
    if (!strcmp(fn, "gather")) {
        ir_value *ids = tensor_arg(L, s, f, &a, 1);
        need_i32(L, a.node[1], fn, "ids", ids);
        int d = axis_arg(L, s, &a, 2, x->type.rank);
        bool same = ids->type.rank == x->type.rank && x->type.rank < IR_MAX_RANK;
        for (int k = 0; same && k < x->type.rank; k++)
            same = k == d || ids->type.dim[k] == x->type.dim[k];
        if (!same) {
            char tx[128], ti[128];
            fe_type_str(tx, sizeof tx, &x->type);
            fe_type_str(ti, sizeof ti, &ids->type);
            fe_fail(L, a.node[1]->loc, "gather needs ids of x's rank, every dim but the axis "
                    "(%d) equal to x's (rank below %d): x is %s, ids %s", d, IR_MAX_RANK, tx, ti);
        }
        out[0] = gather(L, x, ids, d, loc);
        return 1;
    }
    int d = axis_arg(L, s, &a, 1, x->type.rank);
    if (!strcmp(fn, "argmax")) {
        out[0] = argmax(L, x, d, loc);
        return 1;
    }
    need_float(L, a.node[0], fn, x);
    out[0] = cumsum(L, x, d, loc);
    return 1;
}
