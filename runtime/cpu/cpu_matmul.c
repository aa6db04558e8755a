/* cpu_matmul.c: the CPU backend's matrix kernels, matmul, attention,
 * attn_probs and attention's backward (attn_stats, attn_dq, attn_dk,
 * attn_dv, attn_lse, attn_delta), called by rt_cpu_run (cpu.c) with f32 operands (f16 and bf16
 * arrive promoted) or, for matmul, i32. The products go through
 * cblas_sgemm.
 */
#include "runtime/cpu/cpu_internal.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A batched matmul: out[batch] = a[batch] [m, k] @ b[batch] [k, n], where
 * the batch walks the result's batch dims and each operand's offset (in
 * matrices) follows its own strides, 0 along a broadcast dim. */
typedef struct mm_geom {
    int64_t m, k, n;
    bool ta, tb;                   /* a, b read transposed (plan.h's RT_TRANS_*) */
    int nb;                        /* batch dims of the result */
    int64_t bd[RT_MAX_RANK];
    int64_t sa[RT_MAX_RANK], sb[RT_MAX_RANK];
    int64_t batches;
} mm_geom;

/* t's batch dims (all but its last two; none for rank <= 2), aligned at the
 * end of the result's nb batch dims: strides in matrices, 0 broadcasts. */
static void batch_strides(const rt_type *t, int nb, int64_t *s)
{
    int tb = t->rank > 2 ? t->rank - 2 : 0;
    int64_t acc = 1;
    for (int i = nb - 1; i >= 0; i--) {
        int j = i - (nb - tb);
        int64_t dj = j >= 0 ? t->dim[j] : 1;
        s[i] = dj == 1 ? 0 : acc;
        acc *= dj;
    }
}

static void mm_geom_make(const rt_instr *in, mm_geom *g)
{
    const rt_type *ta = &in->in_t[0], *tb = &in->in_t[1], *to = &in->out_t;
    rt_mm_dims d = rt_matmul_dims(in);
    g->k = d.k, g->m = d.m, g->n = d.n, g->ta = d.ta, g->tb = d.tb;
    g->nb = to->rank - (ta->rank >= 2) - (tb->rank >= 2);
    g->batches = 1;
    for (int i = 0; i < g->nb; i++) {
        g->bd[i] = to->dim[i];
        g->batches *= to->dim[i];
    }
    batch_strides(ta, g->nb, g->sa);
    batch_strides(tb, g->nb, g->sb);
}

/* The operands' matrix offsets of batch number t. */
static void batch_offsets(const mm_geom *g, int64_t t, int64_t *oa, int64_t *ob)
{
    *oa = *ob = 0;
    for (int i = g->nb - 1; i >= 0; i--) {
        int64_t c = t % g->bd[i];
        t /= g->bd[i];
        *oa += c * g->sa[i];
        *ob += c * g->sb[i];
    }
}

static int fits_int(int64_t v)
{
    return v <= INT_MAX;
}

static void sgemm_nn(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
                (int)k, b, (int)n, 0.0f, c, (int)n);
}

/* c [m, n] = a @ b, a stored [m, k] or, ta, [k, m]; b [k, n] or, tb, [n, k]. */
static void sgemm_t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                    const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0f, a, (int)(ta ? m : k), b, (int)(tb ? k : n), 0.0f,
                c, (int)n);
}

/* i32: int64 accumulation, the low 32 bits stored (wraps, as i32 add does). */
static void matmul_i32(const int32_t *a, const int32_t *b, int32_t *c, int64_t m, int64_t n,
                       int64_t k)
{
    for (int64_t i = 0; i < m; i++) {
        uint32_t *row = (uint32_t *)c + i * n;
        memset(row, 0, (size_t)n * sizeof *row);
        for (int64_t p = 0; p < k; p++) {
            uint32_t av = (uint32_t)a[i * k + p];
            for (int64_t j = 0; j < n; j++)
                row[j] += av * (uint32_t)b[p * n + j];
        }
    }
}

/* The parts' product (RT_MM_PARTS; the parts widened to f32, exactly) into
 * c [m, n]: three sgemm over views of the parts, each adding to the last,
 * smallest first (plan_ops.def): a's first 3 K, 2 K, then K of its parts
 * (h m l) against b's last as many (of l m h); k is 3 K. */
static void sgemm_parts(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                        const float *b, float *c)
{
    int64_t k1 = k / 3;
    for (int s = 0; s < 3; s++) {
        int64_t kk = (3 - s) * k1;
        const float *bv = b + s * k1 * (tb ? 1 : n); /* b's first s K skipped */
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)kk, 1.0f, a, (int)(ta ? m : k), bv, (int)(tb ? k : n),
                    s ? 1.0f : 0.0f, c, (int)n);
    }
}

/* NumPy matmul, an operand read transposed where its trans bit says (f32
 * only: the compiler folds no transpose of i32), or a product of parts
 * (RT_MM_PARTS, sgemm_parts). When b has no batch dims
 * (or only dims of 1) and a is not transposed, a's batch dims fold into M:
 * the whole product is one sgemm ([B, S, D] @ [D, F] is [B*S, D] @ [D,
 * F]). */
int rt_cpu_matmul_(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    mm_geom g;
    mm_geom_make(in, &g);
    int i32 = in->out_t.dtype == RT_I32;
    int64_t m = g.m, batches = g.batches;
    if (i32 && (g.ta || g.tb))
        return su_fail(err, SU_INPUT, "matmul of i32 reads no operand transposed");
    if (rt_type_numel(&in->in_t[1]) == g.k * g.n && !g.ta) {
        m *= batches; /* a's batch dims are the result's, contiguous */
        batches = 1;
    }
    if (!fits_int(m) || !fits_int(g.n) || !fits_int(g.k))
        return su_fail(err, SU_INPUT, "matmul of [%lld, %lld] @ [%lld, %lld] is too large for BLAS",
                    (long long)m, (long long)g.k, (long long)g.k, (long long)g.n);
    int64_t sza = g.m * g.k, szb = g.k * g.n, szo = g.m * g.n;
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa, ob;
        batch_offsets(&g, t, &oa, &ob);
        if (i32)
            matmul_i32((const int32_t *)x[0] + oa * sza, (const int32_t *)x[1] + ob * szb,
                       (int32_t *)y + t * szo, m, g.n, g.k);
        else if (in->dim & RT_MM_PARTS)
            sgemm_parts(g.ta, g.tb, m, g.n, g.k, (const float *)x[0] + oa * sza,
                        (const float *)x[1] + ob * szb, (float *)y + t * szo);
        else
            sgemm_t(g.ta, g.tb, m, g.n, g.k, (const float *)x[0] + oa * sza,
                    (const float *)x[1] + ob * szb, (float *)y + t * szo);
    }
    return 0;
}

/* Row i of the scores p [s, t] becomes softmax over the keys it may see,
 * when causal j <= pos[i], or without pos j <= i + (t - s) (the mask
 * aligned to the end); the rest are 0, so a row that sees no key is all
 * 0. */
static void masked_softmax(float *p, int64_t s, int64_t t, int causal, const int32_t *pos)
{
    for (int64_t i = 0; i < s; i++) {
        float *row = p + i * t;
        int64_t last = pos ? pos[i] : i + (t - s);
        int64_t end = causal ? last + 1 : t; /* keys [0, end) */
        end = end < 0 ? 0 : end > t ? t : end;
        float mx = -INFINITY;
        for (int64_t j = 0; j < end; j++)
            mx = row[j] > mx ? row[j] : mx;
        double sum = 0;
        for (int64_t j = 0; j < end; j++) {
            row[j] = expf(row[j] - mx);
            sum += row[j];
        }
        float scale = end > 0 ? (float)(1.0 / sum) : 0.0f;
        for (int64_t j = 0; j < end; j++)
            row[j] *= scale;
        for (int64_t j = end; j < t; j++)
            row[j] = 0.0f;
    }
}

/* p [s, t] = softmax(q k^T / sqrt(d) + mask) for q [s, d], k [t, d]:
 * attention's probabilities, and attn_probs' result (pos: the query
 * positions, or NULL). */
static void attn_scores(const float *q, const float *k, float *p, int64_t s, int64_t t,
                        int64_t d, int causal, const int32_t *pos)
{
    float scale = (float)(1.0 / sqrt((double)d));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s, (int)t, (int)d, scale, q,
                (int)d, k, (int)d, 0.0f, p, (int)t);
    masked_softmax(p, s, t, causal, pos);
}

/* attn_probs: per leading index h, p_h [S, T] = attn_scores(q_h, k_h), so
 * that attention(q, k, v) is attn_probs(q, k) @ v (the same sgemm calls). */
int rt_cpu_attn_probs_(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    const rt_type *tq = &in->in_t[0];
    int r = tq->rank;
    int64_t s = tq->dim[r - 2], d = tq->dim[r - 1], t = in->in_t[1].dim[r - 2];
    int64_t heads = rt_type_numel(tq) / (s * d);
    const int32_t *pos = in->nin > 2 ? x[2] : NULL;
    if (!fits_int(s) || !fits_int(t) || !fits_int(d))
        return su_fail(err, SU_INPUT, "attn_probs with S = %lld, T = %lld is too large for BLAS",
                           (long long)s, (long long)t);
    for (int64_t h = 0; h < heads; h++)
        attn_scores((const float *)x[0] + h * s * d, (const float *)x[1] + h * t * d,
                    (float *)y + h * s * t, s, t, d, in->causal, pos);
    return 0;
}

/* attention: per leading index h, softmax(q_h k_g^T / sqrt(d) + mask) v_g
 * with q [S, d], k [T, d], v [T, dv], g = h / (H / G) for H query and G
 * key heads (rt_attn_group; g = h without groups); two sgemms and [S, T]
 * of scratch. */
int rt_cpu_attention_(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    const rt_type *tq = &in->in_t[0], *tv = &in->in_t[2];
    int r = tq->rank;
    int64_t s = tq->dim[r - 2], d = tq->dim[r - 1], t = in->in_t[1].dim[r - 2];
    int64_t dv = tv->dim[r - 1], heads = rt_type_numel(tq) / (s * d), grp = rt_attn_group(in);
    const int32_t *pos = in->nin > 3 ? x[3] : NULL;
    if (!fits_int(s) || !fits_int(t) || !fits_int(d) || !fits_int(dv))
        return su_fail(err, SU_INPUT, "attention with S = %lld, T = %lld is too large for BLAS",
                    (long long)s, (long long)t);
    size_t bytes = (size_t)(s * t) * sizeof(float);
    float *p = malloc(bytes);
    if (!p)
        return su_fail(err, SU_NOMEM, "out of memory: attention needs %zu bytes of scratch", bytes);
    for (int64_t h = 0; h < heads; h++) {
        const float *q = (const float *)x[0] + h * s * d;
        const float *k = (const float *)x[1] + h / grp * t * d;
        const float *v = (const float *)x[2] + h / grp * t * dv;
        attn_scores(q, k, p, s, t, d, in->causal, pos);
        sgemm_nn(s, dv, t, p, v, (float *)y + h * s * dv);
    }
    free(p);
    return 0;
}

/* ---- attention's backward (attn_stats, attn_dq, attn_dk, attn_dv) ----
 *
 * Per leading index h, each score again where it is needed, no [S, T]
 * buffer: s_ij = c q_i . k_j (c = 1 / sqrt(d) as f32, the dot in double,
 * rounded to f32 as attn_scores' sgemm rounds it) over the keys j < end_i
 * row i sees, p_ij = exp(s_ij - lse_i), dp_ij = dy_i . v_j, ds_ij = p_ij
 * (dp_ij - delta_i); sums in double, each result rounded once. With
 * groups (rt_attn_group), head h reads key and value head h / grp, and
 * attn_dk's and attn_dv's head g sums over query heads g grp .. g grp +
 * grp - 1, head after head, each one's rows in order. */

typedef struct ag_view {
    int64_t s, t, d, dv, heads, grp; /* heads: q's */
    const float *q, *k, *v, *dy, *st; /* v NULL for attn_dv; st NULL for attn_stats */
    const int32_t *pos;
    int causal;
    float c;
} ag_view;

static ag_view ag_view_of(const rt_instr *in, const void *const *x)
{
    const rt_type *tq = &in->in_t[0];
    if (in->op == RT_OP_ATTN_LSE) { /* (q, k[, pos]) */
        ag_view a = {.s = tq->dim[tq->rank - 2], .d = tq->dim[tq->rank - 1],
                     .t = in->in_t[1].dim[tq->rank - 2], .q = x[0], .k = x[1],
                     .pos = in->nin > 2 ? x[2] : NULL, .causal = in->causal};
        a.heads = rt_type_numel(tq) / (a.s * a.d);
        a.grp = rt_attn_group(in);
        a.c = (float)(1.0 / sqrt((double)a.d));
        return a;
    }
    int r = tq->rank, has_v = in->op != RT_OP_ATTN_DV, has_st = in->op != RT_OP_ATTN_STATS;
    int idy = has_v ? 3 : 2;
    ag_view a = {.s = tq->dim[r - 2], .d = tq->dim[r - 1], .t = in->in_t[1].dim[r - 2],
                 .dv = in->in_t[idy].dim[r - 1], .q = x[0], .k = x[1],
                 .v = has_v ? x[2] : NULL, .dy = x[idy], .st = has_st ? x[idy + 1] : NULL,
                 .causal = in->causal};
    a.heads = rt_type_numel(tq) / (a.s * a.d);
    a.grp = rt_attn_group(in);
    a.pos = in->nin > idy + 1 + has_st ? x[idy + 1 + has_st] : NULL;
    a.c = (float)(1.0 / sqrt((double)a.d));
    return a;
}

/* The end of the keys query row i sees: attention's causal rule
 * (masked_softmax's). */
static int64_t ag_end(const ag_view *a, int64_t i)
{
    if (!a->causal)
        return a->t;
    int64_t end = (a->pos ? a->pos[i] : i + (a->t - a->s)) + 1;
    return end < 0 ? 0 : end > a->t ? a->t : end;
}

static double ag_dot(const float *x, const float *y, int64_t n)
{
    double acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += (double)x[i] * y[i];
    return acc;
}

/* The score of row i and key j of head h. */
static float ag_score(const ag_view *a, int64_t h, int64_t i, int64_t j)
{
    return (float)(a->c * ag_dot(a->q + (h * a->s + i) * a->d,
                                 a->k + (h / a->grp * a->t + j) * a->d, a->d));
}

static double ag_dp(const ag_view *a, int64_t h, int64_t i, int64_t j)
{
    return ag_dot(a->dy + (h * a->s + i) * a->dv, a->v + (h / a->grp * a->t + j) * a->dv,
                  a->dv);
}

/* The log-sum-exp of row i of head h, which sees keys [0, end), end > 0:
 * its scores left in sc[]. A NaN score makes it NaN. */
static float ag_lse_row(const ag_view *a, int64_t h, int64_t i, int64_t end, float *sc)
{
    float mx = -INFINITY;
    for (int64_t j = 0; j < end; j++) {
        sc[j] = ag_score(a, h, i, j);
        mx = sc[j] > mx || sc[j] != sc[j] ? sc[j] : mx;
    }
    double l = 0;
    for (int64_t j = 0; j < end; j++)
        l += exp((double)sc[j] - mx);
    return (float)(mx + log(l));
}

/* attn_stats: per row, [lse, delta]; a row that sees no key is [0, 0]. A
 * NaN score makes both NaN. attn_lse (lse_only): per row, lse alone. */
static int ag_stats(const ag_view *a, float *y, bool lse_only, su_status *err)
{
    float *sc = malloc((size_t)(a->t > 0 ? a->t : 1) * sizeof *sc);
    if (!sc)
        return su_fail(err, SU_NOMEM, "out of memory: %s needs %lld bytes of scratch",
                       lse_only ? "attn_lse" : "attn_stats", (long long)a->t * 4);
    for (int64_t h = 0; h < a->heads; h++)
        for (int64_t i = 0; i < a->s; i++) {
            int64_t end = ag_end(a, i);
            if (lse_only) {
                y[h * a->s + i] = end ? ag_lse_row(a, h, i, end, sc) : 0.0f;
                continue;
            }
            float *out = y + (h * a->s + i) * 2;
            out[0] = out[1] = 0.0f;
            if (end == 0)
                continue;
            float lse = ag_lse_row(a, h, i, end, sc);
            double delta = 0;
            for (int64_t j = 0; j < end; j++)
                delta += (double)expf(sc[j] - lse) * ag_dp(a, h, i, j);
            out[0] = lse;
            out[1] = (float)delta;
        }
    free(sc);
    return 0;
}

/* attn_delta (y, dy, lse): per row, [lse, the dot of y's and dy's rows]. */
static void ag_delta(const rt_instr *in, const void *const *x, float *out)
{
    const rt_type *ty = &in->in_t[0];
    int64_t w = ty->dim[ty->rank - 1], rows = w ? rt_type_numel(ty) / w : 0;
    const float *y = x[0], *dy = x[1], *lse = x[2];
    for (int64_t i = 0; i < rows; i++) {
        out[2 * i] = lse[i];
        out[2 * i + 1] = (float)ag_dot(y + i * w, dy + i * w, w);
    }
}

/* attn_dq: row by row. */
static int ag_dq(const ag_view *a, float *y, su_status *err)
{
    double *acc = malloc((size_t)a->d * sizeof *acc);
    if (!acc)
        return su_fail(err, SU_NOMEM, "out of memory: attn_dq needs %lld bytes of scratch",
                       (long long)a->d * 8);
    for (int64_t h = 0; h < a->heads; h++)
        for (int64_t i = 0; i < a->s; i++) {
            int64_t end = ag_end(a, i);
            const float *st = a->st + (h * a->s + i) * 2;
            memset(acc, 0, (size_t)a->d * sizeof *acc);
            for (int64_t j = 0; j < end; j++) {
                float p = expf(ag_score(a, h, i, j) - st[0]);
                double ds = p * (ag_dp(a, h, i, j) - st[1]);
                const float *kj = a->k + (h / a->grp * a->t + j) * a->d;
                for (int64_t c = 0; c < a->d; c++)
                    acc[c] += ds * kj[c];
            }
            float *out = y + (h * a->s + i) * a->d;
            for (int64_t c = 0; c < a->d; c++)
                out[c] = (float)(a->c * acc[c]);
        }
    free(acc);
    return 0;
}

/* attn_dk and attn_dv: key by key, summed over the rows in order. */
static int ag_dkv(const ag_view *a, bool dk, float *y, su_status *err)
{
    int64_t w = dk ? a->d : a->dv;
    double *acc = malloc((size_t)(a->t * w > 0 ? a->t * w : 1) * sizeof *acc);
    if (!acc)
        return su_fail(err, SU_NOMEM, "out of memory: %s needs %lld bytes of scratch",
                       dk ? "attn_dk" : "attn_dv", (long long)(a->t * w) * 8);
    for (int64_t g = 0; g < a->heads / a->grp; g++) {
        memset(acc, 0, (size_t)(a->t * w) * sizeof *acc);
        for (int64_t h = g * a->grp; h < (g + 1) * a->grp; h++)
            for (int64_t i = 0; i < a->s; i++) {
                int64_t end = ag_end(a, i);
                const float *st = a->st + (h * a->s + i) * 2;
                const float *row = dk ? a->q + (h * a->s + i) * a->d
                                      : a->dy + (h * a->s + i) * a->dv;
                for (int64_t j = 0; j < end; j++) {
                    double p = expf(ag_score(a, h, i, j) - st[0]);
                    double f = dk ? p * (ag_dp(a, h, i, j) - st[1]) : p;
                    for (int64_t c = 0; c < w; c++)
                        acc[j * w + c] += f * row[c];
                }
            }
        float *out = y + g * a->t * w;
        for (int64_t x = 0; x < a->t * w; x++)
            out[x] = (float)(dk ? a->c * acc[x] : acc[x]);
    }
    free(acc);
    return 0;
}

int rt_cpu_attn_grad_(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    if (in->op == RT_OP_ATTN_DELTA) {
        ag_delta(in, x, y);
        return 0;
    }
    ag_view a = ag_view_of(in, x);
    switch (in->op) {
    case RT_OP_ATTN_STATS: return ag_stats(&a, y, false, err);
    case RT_OP_ATTN_LSE: return ag_stats(&a, y, true, err);
    case RT_OP_ATTN_DQ: return ag_dq(&a, y, err);
    default: return ag_dkv(&a, in->op == RT_OP_ATTN_DK, y, err);
    }
}

/* [L, a, b, c] -> [L, b, a, c] (t's dims -3, -2, -1 and the rest). */
static void swap_heads(const float *x, float *y, const rt_type *t)
{
    int r = t->rank;
    int64_t a = t->dim[r - 3], b = t->dim[r - 2], c = t->dim[r - 1];
    int64_t lead = rt_type_numel(t) / (a * b * c);
    for (int64_t l = 0; l < lead; l++)
        for (int64_t i = 0; i < a; i++)
            for (int64_t j = 0; j < b; j++)
                memcpy(y + ((l * b + j) * a + i) * c, x + ((l * a + i) * b + j) * c,
                       (size_t)c * sizeof *x);
}

int rt_cpu_attn_heads_(const rt_instr *in, const void *const *x, void *y, su_status *err)
{
    int nt = rt_attn_layout_operands(in->op);
    bool result = in->keepdims & RT_HEADS_RESULT;
    rt_instr l = *in;
    l.keepdims = 0;
    const void *lx[RT_MAX_IN];
    float *tmp[RT_MAX_IN + 1] = {0};
    int rc = -1;
    for (int i = 0; i < in->nin; i++) {
        lx[i] = x[i];
        if (i >= nt || !(in->keepdims >> i & 1))
            continue;
        size_t n = (size_t)rt_type_numel(&in->in_t[i]);
        if (!(tmp[i] = malloc((n ? n : 1) * sizeof(float)))) {
            su_fail(err, SU_NOMEM, "out of memory: %s needs %zu bytes of scratch",
                    rt_ops[in->op].name, n * sizeof(float));
            goto done;
        }
        swap_heads(x[i], tmp[i], &in->in_t[i]);
        l.in_t[i] = rt_type_swap_heads(&in->in_t[i]);
        lx[i] = tmp[i];
    }
    void *ly = y;
    if (result) {
        size_t n = (size_t)rt_type_numel(&in->out_t);
        if (!(tmp[RT_MAX_IN] = malloc((n ? n : 1) * sizeof(float)))) {
            su_fail(err, SU_NOMEM, "out of memory: %s needs %zu bytes of scratch",
                    rt_ops[in->op].name, n * sizeof(float));
            goto done;
        }
        l.out_t = rt_type_swap_heads(&in->out_t);
        ly = tmp[RT_MAX_IN];
    }
    rc = in->op == RT_OP_ATTENTION ? rt_cpu_attention_(&l, lx, ly, err)
                                   : rt_cpu_attn_grad_(&l, lx, ly, err);
    if (rc == 0 && result)
        swap_heads(ly, y, &l.out_t);
done:
    for (int i = 0; i <= RT_MAX_IN; i++)
        free(tmp[i]);
    return rc;
}
