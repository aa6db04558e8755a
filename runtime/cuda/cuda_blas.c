/* cuda_blas.c: cuBLASLt loaded at run time, and the plan's matmul on it
 * (cuda_blas.h). */
#include "runtime/cuda/cuda_blas.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuBLASLt's types as far as they are used: handles and descriptors are
 * pointers, enums unsigned ints, with cublasLt.h's values (checked below
 * when the toolkit's headers are here). */
typedef unsigned int lt_status;
typedef struct {
    uint64_t data[8];
} lt_algo;
typedef struct {
    lt_algo algo;
    size_t workspace;
    lt_status state;
    float waves;
    int reserved[4];
} lt_heuristic;

enum {
    LT_SUCCESS = 0,
    LT_COMPUTE_32F = 68,
    LT_R_32F = 0,
    LT_R_16F = 2,
    LT_R_16BF = 14,
    LT_LAYOUT_BATCH_COUNT = 5,
    LT_LAYOUT_BATCH_STRIDE = 6,
    LT_PREF_MAX_WORKSPACE = 1,
    LT_PREF_MIN_ALIGNMENT_A = 5,
    LT_DESC_TRANSA = 3,
    LT_DESC_TRANSB = 4,
    LT_OP_N = 0,
    LT_OP_T = 1,
    LT_DESC_EPILOGUE = 7,
    LT_DESC_BIAS_POINTER = 8,
    LT_DESC_AUX_POINTER = 11,
    LT_DESC_AUX_LD = 12,
    LT_DESC_AUX_BATCH_STRIDE = 13,
    LT_STATUS_NOT_SUPPORTED = 15,
    LT_EPILOGUE_DEFAULT = 1,
    LT_EPILOGUE_RELU = 2,
    LT_EPILOGUE_BIAS = 4,
    LT_EPILOGUE_GELU = 32,
    LT_EPILOGUE_AUX = 128,
    LT_EPILOGUE_DGELU = 192, /* AUX | 64: the GELU input matrix read, not stored */
};

typedef struct lt_api {
    lt_status (*Create)(void **handle);
    lt_status (*Destroy)(void *handle);
    lt_status (*MatmulDescCreate)(void **desc, unsigned int compute, unsigned int scale);
    lt_status (*MatmulDescDestroy)(void *desc);
    lt_status (*MatmulDescSetAttribute)(void *desc, unsigned int attr, const void *buf,
                                        size_t size);
    lt_status (*MatrixLayoutCreate)(void **layout, unsigned int type, uint64_t rows,
                                    uint64_t cols, int64_t ld);
    lt_status (*MatrixLayoutDestroy)(void *layout);
    lt_status (*MatrixLayoutSetAttribute)(void *layout, unsigned int attr, const void *buf,
                                          size_t size);
    lt_status (*MatmulPreferenceCreate)(void **pref);
    lt_status (*MatmulPreferenceDestroy)(void *pref);
    lt_status (*MatmulPreferenceSetAttribute)(void *pref, unsigned int attr, const void *buf,
                                              size_t size);
    lt_status (*MatmulAlgoGetHeuristic)(void *handle, void *desc, void *a, void *b, void *c,
                                        void *d, void *pref, int requested,
                                        lt_heuristic *results, int *returned);
    lt_status (*Matmul)(void *handle, void *desc, const void *alpha, const void *a, void *adesc,
                        const void *b, void *bdesc, const void *beta, const void *c, void *cdesc,
                        void *d, void *ddesc, const lt_algo *algo, void *workspace,
                        size_t workspace_bytes, rt_cu_stream stream);
    const char *(*GetStatusString)(lt_status status);
} lt_api;

static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
#define E(member) {"cublasLt" #member, offsetof(lt_api, member)}
    E(Create), E(Destroy), E(MatmulDescCreate), E(MatmulDescDestroy), E(MatmulDescSetAttribute),
    E(MatrixLayoutCreate),
    E(MatrixLayoutDestroy), E(MatrixLayoutSetAttribute), E(MatmulPreferenceCreate),
    E(MatmulPreferenceDestroy), E(MatmulPreferenceSetAttribute), E(MatmulAlgoGetHeuristic),
    E(Matmul), E(GetStatusString),
#undef E
};

#ifdef SHARDC_HAVE_NVRTC
#include <cublasLt.h>
#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs)
SAME_VALUE(LT_SUCCESS, CUBLAS_STATUS_SUCCESS);
SAME_VALUE(LT_COMPUTE_32F, CUBLAS_COMPUTE_32F);
SAME_VALUE(LT_R_32F, CUDA_R_32F);
SAME_VALUE(LT_R_16F, CUDA_R_16F);
SAME_VALUE(LT_R_16BF, CUDA_R_16BF);
SAME_VALUE(LT_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME_VALUE(LT_LAYOUT_BATCH_STRIDE, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME_VALUE(LT_PREF_MAX_WORKSPACE, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME_VALUE(LT_PREF_MIN_ALIGNMENT_A, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
SAME_VALUE(LT_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA);
SAME_VALUE(LT_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB);
SAME_VALUE(LT_OP_N, CUBLAS_OP_N);
SAME_VALUE(LT_OP_T, CUBLAS_OP_T);
SAME_VALUE(LT_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_EPILOGUE);
SAME_VALUE(LT_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
SAME_VALUE(LT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_DEFAULT);
SAME_VALUE(LT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_RELU);
SAME_VALUE(LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_BIAS);
SAME_VALUE(LT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU);
SAME_VALUE(LT_EPILOGUE_RELU | LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS);
SAME_VALUE(LT_EPILOGUE_GELU | LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS);
SAME_VALUE(LT_EPILOGUE_GELU | LT_EPILOGUE_AUX, CUBLASLT_EPILOGUE_GELU_AUX);
SAME_VALUE(LT_EPILOGUE_GELU | LT_EPILOGUE_AUX | LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
SAME_VALUE(LT_EPILOGUE_DGELU, CUBLASLT_EPILOGUE_DGELU);
SAME_VALUE(LT_DESC_AUX_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
SAME_VALUE(LT_DESC_AUX_LD, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
SAME_VALUE(LT_DESC_AUX_BATCH_STRIDE, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE);
SAME_VALUE(LT_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_NOT_SUPPORTED);
_Static_assert(__builtin_types_compatible_p(
                   __typeof__(&cublasLtMatmulDescSetAttribute),
                   cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                      const void *, size_t)),
               "cublasLtMatmulDescSetAttribute");
_Static_assert(sizeof(lt_heuristic) == sizeof(cublasLtMatmulHeuristicResult_t) &&
                   offsetof(lt_heuristic, state) ==
                       offsetof(cublasLtMatmulHeuristicResult_t, state) &&
                   sizeof(lt_algo) == sizeof(cublasLtMatmulAlgo_t),
               "lt_heuristic is not cublasLtMatmulHeuristicResult_t");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cublasLtGetStatusString),
                                            const char *(*)(cublasStatus_t)) &&
                   __builtin_types_compatible_p(lt_status, cublasStatus_t),
               "cublasLtGetStatusString");
#endif

/* The outcome of the one load, immutable once made (as the driver's). */
static struct {
    lt_api api;
    bool ok;
    char msg[512];
} loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const char *const names[] = {"libcublasLt.so", "libcublasLt.so.13",
                                        "libcublasLt.so.12", "libcublasLt.so.11"};
    void *lib = NULL;
    const char *why = "";
    for (size_t i = 0; !lib && i < sizeof names / sizeof *names; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && i == 0)
            why = dlerror();
    }
    if (!lib) {
        snprintf(loaded.msg, sizeof loaded.msg, "cannot load libcublasLt.so (nor .so.13, .so.12, "
                 ".so.11): %s", why ? why : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        void *sym = dlsym(lib, entries[i].symbol);
        if (!sym) {
            snprintf(loaded.msg, sizeof loaded.msg, "libcublasLt has no symbol %s",
                     entries[i].symbol);
            dlclose(lib);
            return;
        }
        memcpy((char *)&loaded.api + entries[i].offset, &sym, sizeof sym);
    }
    loaded.ok = true;
}

/* A matmul's cuBLASLt descriptors and algorithm, made at its first call
 * and kept for the handle's life: the same shape, dtype, epilogue and
 * beta find them again, so a step queries the heuristic once per
 * distinct matmul, not once per call (the bias pointer, which differs
 * between calls of one shape, is set on the kept descriptor each time). */
typedef struct lt_plan {
    int64_t m, n, k, batch, stride_a, stride_b;
    bool ta, tb;
    unsigned int type, ctype;
    int64_t lda, ldb;
    uint32_t align_b;
    uint32_t epilogue;
    bool residual;
    /* a GELU_AUX epilogue cuBLASLt has no algorithm for: two calls, the
     * gelu's operand into the aux matrix, then the gelu of it (no
     * descriptors) */
    bool split;
    void *desc, *la, *lb, *lc;
    lt_heuristic h;
} lt_plan;

struct rt_blas {
    void *handle;
    lt_plan *plan;
    int nplan, capplan;
    rt_cu_ptr ws;                   /* the workspace, of ws_bytes; 0: none */
    size_t ws_bytes;
    bool warned_split;              /* said once that a GELU_AUX matmul runs twice */
    bool warned_dgelu;              /* said once that a DGELU matmul runs plain */
};

rt_blas *rt_blas_new(su_status *err)
{
    pthread_once(&load_once, load);
    if (!loaded.ok) {
        su_fail(err, SU_GPU, "%s", loaded.msg);
        return NULL;
    }
    rt_blas *b = calloc(1, sizeof *b);
    if (!b) {
        su_fail(err, SU_NOMEM, "out of memory");
        return NULL;
    }
    lt_status st = loaded.api.Create(&b->handle);
    if (st != LT_SUCCESS) {
        su_fail(err, SU_GPU, "cublasLtCreate: %s", loaded.api.GetStatusString(st));
        free(b);
        return NULL;
    }
    return b;
}

/* The descriptors and layouts of p, where made. */
static void lt_plan_clear(lt_plan *p)
{
    if (p->lc)
        loaded.api.MatrixLayoutDestroy(p->lc);
    if (p->lb)
        loaded.api.MatrixLayoutDestroy(p->lb);
    if (p->la)
        loaded.api.MatrixLayoutDestroy(p->la);
    if (p->desc)
        loaded.api.MatmulDescDestroy(p->desc);
    p->desc = p->la = p->lb = p->lc = NULL;
}

bool rt_blas_workspace_bytes(const char *v, size_t *bytes, su_status *err)
{
    *bytes = RT_BLAS_WORKSPACE;
    if (!v || !*v)
        return true;
    *bytes = 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    unsigned long long unit = !end                   ? 0
                              : !*end                ? 1
                              : !strcmp(end, "KiB")  ? 1ull << 10
                              : !strcmp(end, "MiB")  ? 1ull << 20
                              : !strcmp(end, "GiB")  ? 1ull << 30
                                                     : 0;
    if (!unit || errno || n > (1ull << 40) / unit) {
        su_fail(err, SU_USAGE, "$SHARDC_BLAS_WORKSPACE '%s': expected a number of bytes, or a "
                "size such as 32MiB (KiB, MiB or GiB), at most 1 TiB", v);
        return false;
    }
    *bytes = (size_t)(n * unit);
    return true;
}

void rt_blas_set_workspace(rt_blas *b, rt_cu_ptr ws, size_t bytes)
{
    b->ws = bytes ? ws : 0;
    b->ws_bytes = ws ? bytes : 0;
}

void rt_blas_free(rt_blas *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nplan; i++)
        lt_plan_clear(&b->plan[i]);
    free(b->plan);
    loaded.api.Destroy(b->handle);
    free(b);
}

/* ---- the shapes ---- */

/* A matmul as cuBLASLt sees it: row-major [batch] x [M, K] @ [K, N]. */
typedef struct mm {
    int64_t m, n, k, batch;
    int64_t stride_a, stride_b;     /* elements between batches; 0: repeated */
    bool ta, tb;                    /* a stored [K, M], b [N, K] (plan.h's RT_TRANS_*) */
    unsigned int type;              /* a's and b's */
    unsigned int ctype;             /* the result's (and a residual's) */
    int64_t lda, ldb;               /* the stored rows' lengths: a's K (M if ta), b's N (K
                                     * if tb), or longer for a view of columns */
    uint32_t align_b;               /* b's pointer's alignment, bytes (256: the arena's) */
} mm;

static int64_t numel(const int64_t *d, int n)
{
    int64_t e = 1;
    for (int i = 0; i < n; i++)
        e *= d[i];
    return e;
}

/* The batch dims of a and b (right-aligned) agree, or one side has none
 * but 1s. */
static bool plan_mm(const rt_instr *in, mm *s, su_status *err)
{
    const rt_type *a = &in->in_t[0], *b = &in->in_t[1];
    int na = a->rank > 2 ? a->rank - 2 : 0, nb = b->rank > 2 ? b->rank - 2 : 0;
    int64_t ea = numel(a->dim, na), eb = numel(b->dim, nb);
    bool same = ea == eb;
    for (int i = 1; same && i <= (na > nb ? na : nb); i++) {
        int64_t da = i <= na ? a->dim[na - i] : 1, db = i <= nb ? b->dim[nb - i] : 1;
        same = da == db;
    }
    if (!same && ea != 1 && eb != 1) {
        su_fail(err, SU_INPUT, "batch dimensions that broadcast against each other other than "
                "wholly are not supported on the GPU");
        return false;
    }
    switch (a->dtype) {
    case RT_F32: s->type = LT_R_32F; break;
    case RT_F16: s->type = LT_R_16F; break;
    case RT_BF16: s->type = LT_R_16BF; break;
    default:
        su_fail(err, SU_INPUT, "a matmul of %s is not supported on the GPU (f32, f16, bf16 are)",
                rt_dtype_name(a->dtype));
        return false;
    }
    rt_mm_dims d = rt_matmul_dims(in);
    s->ctype = s->type;
    s->k = d.k, s->m = d.m, s->n = d.n, s->ta = d.ta, s->tb = d.tb;
    s->lda = s->ta ? s->m : s->k;
    s->ldb = s->tb ? s->k : s->n;
    s->align_b = RT_ALIGN;
    s->batch = ea > eb ? ea : eb;
    s->stride_a = ea == 1 ? 0 : s->m * s->k;
    s->stride_b = eb == 1 ? 0 : s->k * s->n;
    if (s->batch > 1 && eb == 1 && !s->ta) {
        /* b one matrix for every batch, a's batches one row-major
         * [batch M, K] (not stored transposed), as the result and a
         * residual are [batch M, N]: one matmul of batch M rows, as
         * PyTorch's linear layers are (a model's x @ w over [B, S, D]) */
        s->m *= s->batch;
        s->batch = 1;
        s->stride_a = 0;
    }
    return true;
}

bool rt_blas_supports(const rt_instr *in, su_status *err)
{
    mm s;
    return plan_mm(in, &s, err);
}

/* ---- the call ---- */

#define LT_CHECK(call)                                                                          \
    do {                                                                                        \
        lt_status st_ = loaded.api.call;                                                        \
        if (st_ != LT_SUCCESS) {                                                                \
            su_fail(err, SU_GPU, "%s:%d: cublasLt%.*s: %s", __FILE__, __LINE__,                \
                    (int)strcspn(#call, "("), #call, loaded.api.GetStatusString(st_));         \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

/* A column-major rows x cols layout with leading dimension ld, batched. */
static lt_status layout(void **l, unsigned int type, int64_t rows, int64_t cols, int64_t ld,
                        int64_t batch, int64_t stride)
{
    lt_status st = loaded.api.MatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, ld);
    if (st != LT_SUCCESS || batch == 1)
        return st;
    int32_t count = (int32_t)batch;
    st = loaded.api.MatrixLayoutSetAttribute(*l, LT_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (st == LT_SUCCESS)
        st = loaded.api.MatrixLayoutSetAttribute(*l, LT_LAYOUT_BATCH_STRIDE, &stride,
                                                 sizeof stride);
    return st;
}

/* cuBLASLt's epilogue for RT_EPI_* bits (the residual is C, not an
 * epilogue): the bias added, then the activation; or the gelu's
 * gradient. */
static uint32_t lt_epilogue(unsigned bits)
{
    if (bits & RT_EPI_DGELU)
        return LT_EPILOGUE_DGELU;
    uint32_t e = 0;
    if (bits & RT_EPI_BIAS)
        e |= LT_EPILOGUE_BIAS;
    if (bits & RT_EPI_RELU)
        e |= LT_EPILOGUE_RELU;
    if (bits & RT_EPI_GELU)
        e |= LT_EPILOGUE_GELU;
    if ((bits & RT_EPI_GELU) && (bits & RT_EPI_AUX))
        e |= LT_EPILOGUE_AUX;
    return e ? e : LT_EPILOGUE_DEFAULT;
}

/* The kept plan of matmul p with this epilogue, or NULL. */
static lt_plan *find_plan(rt_blas *b, const mm *p, uint32_t epilogue, bool residual)
{
    for (int i = 0; i < b->nplan; i++) {
        lt_plan *q = &b->plan[i];
        if (q->m == p->m && q->n == p->n && q->k == p->k && q->batch == p->batch &&
            q->stride_a == p->stride_a && q->stride_b == p->stride_b && q->type == p->type &&
            q->ctype == p->ctype && q->lda == p->lda && q->ldb == p->ldb &&
            q->align_b == p->align_b &&
            q->ta == p->ta && q->tb == p->tb &&
            q->epilogue == epilogue && q->residual == residual)
            return q;
    }
    return NULL;
}

/* Makes the descriptors of matmul p and asks the heuristic for its
 * algorithm into *q; false with the failing call in err. */
static bool make_plan(rt_blas *b, const mm *p, uint32_t epilogue, bool residual, lt_plan *q,
                      su_status *err)
{
    void *pref = NULL;
    bool ok = false;
    uint64_t max_workspace = b->ws_bytes;
    int found = 0;
    *q = (lt_plan){.m = p->m, .n = p->n, .k = p->k, .batch = p->batch, .stride_a = p->stride_a,
                   .stride_b = p->stride_b, .ta = p->ta, .tb = p->tb, .type = p->type,
                   .ctype = p->ctype, .lda = p->lda, .ldb = p->ldb, .align_b = p->align_b,
                   .epilogue = epilogue, .residual = residual};
    /* column-major C^T[N, M] = B^T[N, K] A^T[K, M]; the bias, of length N,
     * is along D^T's rows, so along the rows of the row-major result, and
     * the same for every batch (BIAS_BATCH_STRIDE left 0). A layout
     * describes the operand as stored, before cuBLASLt's op: row-major b
     * [K, N] is column-major [N, K], the B^T cuBLASLt's first operand needs
     * (op N); b stored [N, K] (tb) is column-major [K, N], B, whose op T is
     * B^T; likewise a [M, K] is column-major [K, M] = A^T (op N), and a
     * stored [K, M] (ta) is column-major [M, K] = A (op T). */
    int32_t opa = p->tb ? LT_OP_T : LT_OP_N, opb = p->ta ? LT_OP_T : LT_OP_N;
    LT_CHECK(MatmulDescCreate(&q->desc, LT_COMPUTE_32F, LT_R_32F));
    LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_TRANSA, &opa, sizeof opa));
    LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_TRANSB, &opb, sizeof opb));
    bool aux = epilogue & LT_EPILOGUE_AUX;
    if (aux) {
        /* the GELU input matrix (stored by GELU_AUX, read by DGELU): D's
         * layout, column-major [N, M] (ld N, a multiple of 8: plan.h's
         * RT_EPI_AUX_ALIGN); the heuristic reads its pointer's alignment
         * only: the arena's, each call sets it */
        int64_t ld = p->n, stride = p->m * p->n;
        const void *align = (const void *)(uintptr_t)RT_ALIGN;
        LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_AUX_LD, &ld, sizeof ld));
        if (p->batch > 1)
            LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_AUX_BATCH_STRIDE, &stride,
                                            sizeof stride));
        LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_AUX_POINTER, &align, sizeof align));
    }
    lt_status st = p->tb ? layout(&q->la, p->type, p->k, p->n, p->ldb, p->batch, p->stride_b)
                         : layout(&q->la, p->type, p->n, p->k, p->ldb, p->batch, p->stride_b);
    if (st == LT_SUCCESS)
        st = p->ta ? layout(&q->lb, p->type, p->m, p->k, p->lda, p->batch, p->stride_a)
                   : layout(&q->lb, p->type, p->k, p->m, p->lda, p->batch, p->stride_a);
    if (st == LT_SUCCESS)
        st = layout(&q->lc, p->ctype, p->n, p->m, p->n, p->batch, p->m * p->n);
    if (st != LT_SUCCESS) {
        su_fail(err, SU_GPU, "%s:%d: cublasLtMatrixLayoutCreate: %s", __FILE__, __LINE__,
                loaded.api.GetStatusString(st));
        goto done;
    }
    LT_CHECK(MatmulPreferenceCreate(&pref));
    LT_CHECK(MatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE, &max_workspace,
                                          sizeof max_workspace));
    /* b is cuBLASLt's A (above); a view of parts may start past the
     * arena's 256-byte alignment: algorithms that need more are left out */
    if (p->align_b < RT_ALIGN)
        LT_CHECK(MatmulPreferenceSetAttribute(pref, LT_PREF_MIN_ALIGNMENT_A, &p->align_b,
                                              sizeof p->align_b));
    lt_status hs = loaded.api.MatmulAlgoGetHeuristic(b->handle, q->desc, q->la, q->lb, q->lc,
                                                     q->lc, pref, 1, &q->h, &found);
    if (aux && (hs == LT_STATUS_NOT_SUPPORTED || (hs == LT_SUCCESS && found < 1))) {
        /* none for the GELU_AUX epilogue: two calls; for DGELU: the matmul
         * plain, the gradient the caller's (lt_plan.split) */
        lt_plan_clear(q);
        q->split = true;
        ok = true;
        goto done;
    }
    if (hs != LT_SUCCESS) {
        su_fail(err, SU_GPU, "%s:%d: cublasLtMatmulAlgoGetHeuristic: %s", __FILE__, __LINE__,
                loaded.api.GetStatusString(hs));
        goto done;
    }
    if (found < 1) {
        su_fail(err, SU_GPU, "cuBLASLt has no algorithm for this matmul (M %lld, N %lld, K "
                "%lld, batch %lld, epilogue %u, beta %d) within a workspace of %zu bytes",
                (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch,
                (unsigned)epilogue, residual ? 1 : 0, b->ws_bytes);
        goto done;
    }
    ok = true;
done:
    if (pref)
        loaded.api.MatmulPreferenceDestroy(pref);
    if (!ok)
        lt_plan_clear(q);
    return ok;
}

/* The kept plan of matmul p, made at its first call. */
static lt_plan *plan_for(rt_blas *b, const mm *p, uint32_t epilogue, bool residual,
                         su_status *err)
{
    lt_plan *q = find_plan(b, p, epilogue, residual);
    if (q)
        return q;
    if (b->nplan == b->capplan) {
        int cap = b->capplan ? 2 * b->capplan : 16;
        lt_plan *more = realloc(b->plan, (size_t)cap * sizeof *more);
        if (!more) {
            su_fail(err, SU_NOMEM, "out of memory");
            return NULL;
        }
        b->plan = more;
        b->capplan = cap;
    }
    if (!make_plan(b, p, epilogue, residual, &b->plan[b->nplan], err))
        return NULL;
    return &b->plan[b->nplan++];
}

/* Queues matmul p: out = act(a @ bm + beta c + bias), bits the epilogue's
 * RT_EPI_* bits but the residual, beta 1 where c is to be read; with
 * RT_EPI_AUX, aux = a @ bm + beta c + bias too; with RT_EPI_DGELU, out =
 * gelu'(aux) (a @ bm), or where cuBLASLt has no algorithm for that, out =
 * a @ bm and *left set (rt_blas_epilogue.dgelu_left). */
static bool call(rt_blas *b, const mm *p, unsigned bits, rt_cu_ptr bias_ptr, rt_cu_ptr a,
                 rt_cu_ptr bm, rt_cu_ptr c, bool read_c, rt_cu_ptr out, rt_cu_ptr aux_ptr,
                 rt_cu_stream s, bool *left, su_status *err)
{
    float one = 1.0f, beta = read_c ? 1.0f : 0.0f;
    uint32_t epilogue = lt_epilogue(bits);
    const void *bias = bits & RT_EPI_BIAS ? (const void *)(uintptr_t)bias_ptr : NULL;
    lt_plan *q = plan_for(b, p, epilogue, read_c, err);
    if (!q)
        return false;
    if (q->split && (bits & RT_EPI_DGELU)) { /* the product plain, the gradient left */
        if (!b->warned_dgelu) {
            b->warned_dgelu = true;
            fprintf(stderr, "shardrun: cuBLASLt has no algorithm for a matmul (M %lld, N %lld, "
                    "K %lld) with its gelu's gradient (EPILOGUE_DGELU): it runs plain, then a "
                    "kernel of the gradient\n", (long long)p->m, (long long)p->n,
                    (long long)p->k);
        }
        *left = true;
        return call(b, p, bits & ~(unsigned)RT_EPI_DGELU, 0, a, bm, c, read_c, out, 0, s, left,
                    err);
    }
    if (q->split) { /* the operand into aux (which overlaps nothing read), then the gelu */
        if (!b->warned_split) {
            b->warned_split = true;
            fprintf(stderr, "shardrun: cuBLASLt has no algorithm for a matmul (M %lld, N %lld, "
                    "K %lld) storing its gelu's operand (EPILOGUE_GELU_AUX): it runs twice, "
                    "once for each result\n", (long long)p->m, (long long)p->n, (long long)p->k);
        }
        unsigned act = (unsigned)(RT_EPI_GELU | RT_EPI_AUX);
        return call(b, p, bits & ~act, bias_ptr, a, bm, c, read_c, aux_ptr, 0, s, left, err) &&
               call(b, p, bits & ~(unsigned)RT_EPI_AUX, bias_ptr, a, bm, c, read_c, out, 0, s,
                    left, err);
    }
    if (bias)
        LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (epilogue & LT_EPILOGUE_AUX) {
        const void *aux = (const void *)(uintptr_t)aux_ptr;
        LT_CHECK(MatmulDescSetAttribute(q->desc, LT_DESC_AUX_POINTER, &aux, sizeof aux));
    }
    /* C: the residual (beta 1), else D itself (beta 0: not read) */
    LT_CHECK(Matmul(b->handle, q->desc, &one, (const void *)(uintptr_t)bm, q->la,
                    (const void *)(uintptr_t)a, q->lb, &beta,
                    (const void *)(uintptr_t)(read_c ? c : out), q->lc, (void *)(uintptr_t)out,
                    q->lc, &q->h.algo, (void *)(uintptr_t)b->ws, b->ws_bytes, s));
    return true;
done:
    return false;
}

bool rt_blas_matmul(rt_blas *b, const rt_instr *in, rt_blas_epilogue *epi, rt_cu_ptr a,
                    rt_cu_ptr bm, rt_cu_ptr out, rt_cu_stream s, su_status *err)
{
    mm p;
    if (!plan_mm(in, &p, err))
        return false;
    unsigned bits = epi ? epi->bits : 0;
    bool residual = bits & RT_EPI_RESIDUAL, left = false;
    unsigned act = bits & ~(unsigned)RT_EPI_RESIDUAL;
    rt_cu_ptr bias = epi ? epi->bias : 0, res = residual ? epi->residual : 0;
    rt_cu_ptr aux = epi && (bits & (RT_EPI_AUX | RT_EPI_DGELU)) ? epi->aux : 0;
    if (epi)
        epi->dgelu_left = false;
    if (!(in->dim & RT_MM_PARTS)) {
        bool ok = call(b, &p, act, bias, a, bm, res, residual, out, aux, s, &left, err);
        if (epi)
            epi->dgelu_left = left;
        return ok;
    }
    if (bits & (RT_EPI_AUX | RT_EPI_DGELU)) {
        su_fail(err, SU_INPUT, "a matmul of parts does not read or store its gelu's operand");
        return false;
    }
    /* parts (cuda_blas.h): a's h m l and b's l m h along K, 3 K1 of them;
     * call c: a's first (3 - c) K1 against b's last as many, the products
     * whose parts' ranks sum to 2 - c, each call adding to the last's
     * result (the first to the residual), the epilogue with the last */
    if (p.type != LT_R_16BF || p.k % 3) {
        su_fail(err, SU_INPUT, "a matmul of parts reads bf16 parts, 3 along K");
        return false;
    }
    int64_t k1 = p.k / 3;
    p.ctype = LT_R_32F;
    for (int c = 0; c < 3; c++) {
        p.k = (3 - c) * k1;
        int64_t skip = c * k1 * (p.tb ? 1 : p.n) * 2; /* bytes of b's first c K */
        rt_cu_ptr bv = bm + (rt_cu_ptr)skip;
        p.align_b = RT_ALIGN;
        while (skip % p.align_b)
            p.align_b /= 2;
        if (!call(b, &p, c == 2 ? act : 0, bias, a, bv, c ? out : res, c > 0 || residual, out, 0,
                  s, &left, err))
            return false;
    }
    return true;
}

