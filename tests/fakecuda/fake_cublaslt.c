/* fake_cublaslt.c: libcublasLt.so beside fake_driver.c's libcuda.so.1.
 *
 * The entry points runtime/cuda/cuda_blas.c resolves, with cuBLASLt's
 * names and its enums' values. A matmul computes nothing; what is checked
 * is what a wrong call would break on a GPU:
 *
 * - every handle, descriptor, layout and preference passed is live;
 * - a layout's leading dimension is at least its rows, and a batch's
 *   stride and count are set together;
 * - the operands' shapes agree after their ops (op(A) is C's rows by K,
 *   op(B) K by C's columns, D's layout C's) and their batch counts match;
 * - A, B, C, D, the bias (with a bias epilogue: C's rows of C's type) and
 *   the workspace lie inside live allocations of the fake driver, each
 *   element the layout reaches;
 * - with a GELU_AUX epilogue, the GELU input matrix: its leading dim set,
 *   a multiple of 8 and at least D's rows, its batch stride set where D
 *   has a batch, inside a live allocation, and sharing no byte with A, B,
 *   C or D; with a DGELU epilogue, which reads it, the same but that it
 *   may share bytes with A, B or C (not D, which is written).
 *
 * A breach is described on stderr ("fake_cublaslt: ...") and returns
 * CUBLAS_STATUS_INVALID_VALUE; it is counted in fake_driver.c's "errors".
 * FAKECUDA_LOG gets "cublasLtMatmul N" and "cublasLtMatmulAlgoGetHeuristic
 * N" lines, appended at exit, and what is still live. FAKECUDA_FAIL's
 * entries for cublasLtMatmul and cublasLtMatmulAlgoGetHeuristic (NAME:K,
 * as fake_driver.c's) make their K-th call fail with
 * CUBLAS_STATUS_EXECUTION_FAILED (13). FAKECUDA_NO_AUX=1 makes the
 * heuristic answer CUBLAS_STATUS_NOT_SUPPORTED (15) for an epilogue with a
 * GELU input matrix (GELU_AUX, DGELU), as a cuBLASLt without an algorithm
 * for one would.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef unsigned int status;
enum {
    OK = 0,
    NOT_INITIALIZED = 1,
    INVALID_VALUE = 7,
    EXECUTION_FAILED = 13,
    NOT_SUPPORTED = 15,
    R_32F = 0,
    R_16F = 2,
    R_16BF = 14,
    LAYOUT_BATCH_COUNT = 5,
    LAYOUT_BATCH_STRIDE = 6,
    DESC_TRANSA = 3,
    DESC_TRANSB = 4,
    DESC_EPILOGUE = 7,
    DESC_BIAS_POINTER = 8,
    DESC_AUX_POINTER = 11,
    DESC_AUX_LD = 12,
    DESC_AUX_BATCH_STRIDE = 13,
    EPILOGUE_BIAS = 4,
    EPILOGUE_GELU = 32,
    EPILOGUE_AUX = 128,
    EPILOGUE_DGELU = 192, /* AUX | 64 */
    OP_T = 1,
};

typedef enum { O_HANDLE, O_DESC, O_LAYOUT, O_PREF } okind;

typedef struct obj {
    okind kind;
    struct obj *next;
    /* a descriptor */
    int32_t transa, transb;
    uint32_t epilogue;
    const void *bias;
    const void *aux;
    int64_t aux_ld, aux_stride;
    int has_aux_ld, has_aux_stride;
    /* a layout */
    unsigned int type;
    uint64_t rows, cols;
    int64_t ld, stride;
    int32_t batch;
    int has_count, has_stride;
} obj;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static obj *objs;
static atomic_long n_matmul, n_heuristic;
static long fail_matmul, fail_heuristic; /* the call that fails (0: none) */
static bool no_aux; /* FAKECUDA_NO_AUX: no algorithm for a GELU_AUX epilogue */

/* fake_driver.c's, found through libcuda.so.1 (loaded already by the
 * backend, which opens the driver before cuBLASLt) */
static int (*in_device)(unsigned long long p, size_t n);
static void (*driver_breach)(const char *what);
static void (*driver_log)(const char *text, size_t n);

static void breach(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void breach(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fake_cublaslt: %s\n", msg);
    if (driver_breach)
        driver_breach(msg);
}

static void report(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = driver_log ? open_memstream(&text, &n) : NULL;
    if (!f)
        return;
    fprintf(f, "cublasLtMatmul %ld\ncublasLtMatmulAlgoGetHeuristic %ld\n",
            atomic_load(&n_matmul), atomic_load(&n_heuristic));
    long live[4] = {0};
    pthread_mutex_lock(&lock);
    for (const obj *o = objs; o; o = o->next)
        live[o->kind]++;
    pthread_mutex_unlock(&lock);
    fprintf(f, "live_cublasLt_handles %ld\nlive_cublasLt_descriptors %ld\n"
            "live_cublasLt_layouts %ld\nlive_cublasLt_preferences %ld\n",
            live[O_HANDLE], live[O_DESC], live[O_LAYOUT], live[O_PREF]);
    if (fclose(f) == 0)
        driver_log(text, n);
    free(text);
}

__attribute__((constructor)) static void setup(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!drv)
        drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (drv) {
        *(void **)&in_device = dlsym(drv, "fakecuda_in_device");
        *(void **)&driver_breach = dlsym(drv, "fakecuda_breach");
        *(void **)&driver_log = dlsym(drv, "fakecuda_log");
    }
    for (const char *f = getenv("FAKECUDA_FAIL"); f && *f; f = strchr(f, ',') ? strchr(f, ',') + 1 : "") {
        static const char mm[] = "cublasLtMatmul:", heur[] = "cublasLtMatmulAlgoGetHeuristic:";
        if (!strncmp(f, mm, sizeof mm - 1))
            fail_matmul = strtol(f + sizeof mm - 1, NULL, 10);
        else if (!strncmp(f, heur, sizeof heur - 1))
            fail_heuristic = strtol(f + sizeof heur - 1, NULL, 10);
    }
    const char *na = getenv("FAKECUDA_NO_AUX");
    no_aux = na && *na && strcmp(na, "0") != 0;
    atexit(report);
}

/* For tests: the handles, descriptors, layouts and preferences live now. */
API long fakecuda_blas_live(void)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (const obj *o = objs; o; o = o->next)
        n++;
    pthread_mutex_unlock(&lock);
    return n;
}

static obj *make(okind k)
{
    obj *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->kind = k;
    o->batch = 1;
    pthread_mutex_lock(&lock);
    o->next = objs;
    objs = o;
    pthread_mutex_unlock(&lock);
    return o;
}

static bool live(const void *p, okind k)
{
    pthread_mutex_lock(&lock);
    const obj *o = objs;
    while (o && (o != p || o->kind != k))
        o = o->next;
    pthread_mutex_unlock(&lock);
    return o != NULL;
}

static status destroy(void *p, okind k, const char *call)
{
    pthread_mutex_lock(&lock);
    obj **at = &objs;
    while (*at && (*at != p || (*at)->kind != k))
        at = &(*at)->next;
    obj *o = *at;
    if (o)
        *at = o->next;
    pthread_mutex_unlock(&lock);
    if (!o) {
        breach("%s: %p is not live", call, p);
        return INVALID_VALUE;
    }
    free(o);
    return OK;
}

API status cublasLtCreate(void **h)
{
    if (!in_device)
        return NOT_INITIALIZED; /* no fake driver loaded */
    obj *o = make(O_HANDLE);
    *h = o;
    return o ? OK : INVALID_VALUE;
}

API status cublasLtDestroy(void *h)
{
    return destroy(h, O_HANDLE, "cublasLtDestroy");
}

API status cublasLtMatmulDescCreate(void **d, unsigned int compute, unsigned int scale)
{
    (void)compute, (void)scale;
    obj *o = make(O_DESC);
    *d = o;
    return o ? OK : INVALID_VALUE;
}

API status cublasLtMatmulDescDestroy(void *d)
{
    return destroy(d, O_DESC, "cublasLtMatmulDescDestroy");
}

API status cublasLtMatmulDescSetAttribute(void *d, unsigned int attr, const void *buf,
                                          size_t size)
{
    if (!live(d, O_DESC)) {
        breach("cublasLtMatmulDescSetAttribute: %p is not a live descriptor", d);
        return INVALID_VALUE;
    }
    obj *o = d;
    switch (attr) {
    case DESC_TRANSA:
    case DESC_TRANSB:
        if (size != sizeof(int32_t))
            return INVALID_VALUE;
        memcpy(attr == DESC_TRANSA ? &o->transa : &o->transb, buf, size);
        break;
    case DESC_EPILOGUE:
        if (size != sizeof(uint32_t))
            return INVALID_VALUE;
        memcpy(&o->epilogue, buf, size);
        break;
    case DESC_BIAS_POINTER:
        if (size != sizeof(void *))
            return INVALID_VALUE;
        memcpy(&o->bias, buf, size);
        break;
    case DESC_AUX_POINTER:
        if (size != sizeof(void *))
            return INVALID_VALUE;
        memcpy(&o->aux, buf, size);
        break;
    case DESC_AUX_LD:
    case DESC_AUX_BATCH_STRIDE:
        if (size != sizeof(int64_t))
            return INVALID_VALUE;
        memcpy(attr == DESC_AUX_LD ? &o->aux_ld : &o->aux_stride, buf, size);
        *(attr == DESC_AUX_LD ? &o->has_aux_ld : &o->has_aux_stride) = 1;
        break;
    default:
        break;
    }
    return OK;
}

API status cublasLtMatrixLayoutCreate(void **l, unsigned int type, uint64_t rows, uint64_t cols,
                                      int64_t ld)
{
    if (type != R_32F && type != R_16F && type != R_16BF) {
        breach("cublasLtMatrixLayoutCreate: data type %u", type);
        return INVALID_VALUE;
    }
    if (ld < (int64_t)rows || !rows || !cols) {
        breach("cublasLtMatrixLayoutCreate: %llu x %llu with leading dimension %lld",
               (unsigned long long)rows, (unsigned long long)cols, (long long)ld);
        return INVALID_VALUE;
    }
    obj *o = make(O_LAYOUT);
    if (!o)
        return INVALID_VALUE;
    o->type = type;
    o->rows = rows;
    o->cols = cols;
    o->ld = ld;
    *l = o;
    return OK;
}

API status cublasLtMatrixLayoutDestroy(void *l)
{
    return destroy(l, O_LAYOUT, "cublasLtMatrixLayoutDestroy");
}

API status cublasLtMatrixLayoutSetAttribute(void *l, unsigned int attr, const void *buf,
                                            size_t size)
{
    if (!live(l, O_LAYOUT)) {
        breach("cublasLtMatrixLayoutSetAttribute: %p is not a live layout", l);
        return INVALID_VALUE;
    }
    obj *o = l;
    if (attr == LAYOUT_BATCH_COUNT) {
        if (size != sizeof(int32_t))
            return INVALID_VALUE;
        memcpy(&o->batch, buf, size);
        o->has_count = 1;
    } else if (attr == LAYOUT_BATCH_STRIDE) {
        if (size != sizeof(int64_t))
            return INVALID_VALUE;
        memcpy(&o->stride, buf, size);
        o->has_stride = 1;
    }
    return OK;
}

API status cublasLtMatmulPreferenceCreate(void **p)
{
    obj *o = make(O_PREF);
    *p = o;
    return o ? OK : INVALID_VALUE;
}

API status cublasLtMatmulPreferenceDestroy(void *p)
{
    return destroy(p, O_PREF, "cublasLtMatmulPreferenceDestroy");
}

API status cublasLtMatmulPreferenceSetAttribute(void *p, unsigned int attr, const void *buf,
                                                size_t size)
{
    (void)attr, (void)buf, (void)size;
    return live(p, O_PREF) ? OK : INVALID_VALUE;
}

typedef struct {
    uint64_t data[8];
} algo;
typedef struct {
    algo algo;
    size_t workspace;
    status state;
    float waves;
    int reserved[4];
} heuristic;

/* Whether the layout is whole: its batch's count and stride set together,
 * with a stride that keeps the batch's matrices apart. */
static bool layout_ok(const obj *l, const char *which)
{
    if (l->has_count != l->has_stride && l->batch > 1) {
        breach("cublasLtMatmul: %s's batch of %d has no stride", which, l->batch);
        return false;
    }
    if (l->batch > 1 && l->stride < l->ld * (int64_t)(l->cols - 1) + (int64_t)l->rows &&
        l->stride != 0) {
        breach("cublasLtMatmul: %s's batch stride %lld overlaps its %llu x %llu (ld %lld)",
               which, (long long)l->stride, (unsigned long long)l->rows,
               (unsigned long long)l->cols, (long long)l->ld);
        return false;
    }
    return true;
}

static bool shapes_ok(const obj *d, const obj *a, const obj *b, const obj *c)
{
    uint64_t ar = d->transa == OP_T ? a->cols : a->rows, ac = d->transa == OP_T ? a->rows : a->cols;
    uint64_t br = d->transb == OP_T ? b->cols : b->rows, bc = d->transb == OP_T ? b->rows : b->cols;
    if (ar != c->rows || ac != br || bc != c->cols || a->batch != c->batch ||
        b->batch != c->batch) {
        breach("cublasLtMatmul: op(A) %llu x %llu, op(B) %llu x %llu, C %llu x %llu, batches "
               "%d, %d, %d",
               (unsigned long long)ar, (unsigned long long)ac, (unsigned long long)br,
               (unsigned long long)bc, (unsigned long long)c->rows, (unsigned long long)c->cols,
               a->batch, b->batch, c->batch);
        return false;
    }
    return layout_ok(a, "A") && layout_ok(b, "B") && layout_ok(c, "C");
}

API status cublasLtMatmulAlgoGetHeuristic(void *h, void *d, void *a, void *b, void *c, void *dd,
                                          void *pref, int requested, heuristic *out,
                                          int *returned)
{
    if (atomic_fetch_add(&n_heuristic, 1) + 1 == fail_heuristic)
        return EXECUTION_FAILED;
    if (!live(h, O_HANDLE) || !live(d, O_DESC) || !live(a, O_LAYOUT) || !live(b, O_LAYOUT) ||
        !live(c, O_LAYOUT) || !live(dd, O_LAYOUT) || !live(pref, O_PREF) || requested < 1) {
        breach("cublasLtMatmulAlgoGetHeuristic: a handle, descriptor, layout or preference "
               "that is not live");
        return INVALID_VALUE;
    }
    if (!shapes_ok(d, a, b, c))
        return INVALID_VALUE;
    const obj *desc = d;
    if ((desc->epilogue & EPILOGUE_AUX) && no_aux)
        return NOT_SUPPORTED;
    memset(out, 0, sizeof *out);
    out->waves = 1.0f;
    *returned = 1;
    return OK;
}

static size_t type_bytes(unsigned int t)
{
    return t == R_32F ? 4 : 2;
}

/* Whether every element layout l reaches from p lies in device memory. */
static bool operand_ok(const void *p, const obj *l, const char *which)
{
    size_t last = (size_t)(l->batch - 1) * (size_t)l->stride +
                  (size_t)(l->cols - 1) * (size_t)l->ld + l->rows;
    size_t n = last * type_bytes(l->type);
    if (!p || !in_device((unsigned long long)(uintptr_t)p, n)) {
        breach("cublasLtMatmul: %s at %p, %zu bytes (%llu x %llu, ld %lld, batch %d, stride "
               "%lld), is not inside one live allocation",
               which, p, n, (unsigned long long)l->rows, (unsigned long long)l->cols,
               (long long)l->ld, l->batch, (long long)l->stride);
        return false;
    }
    return true;
}

/* The bytes layout l reaches from its first element. */
static size_t extent(const obj *l)
{
    return ((size_t)(l->batch - 1) * (size_t)l->stride + (size_t)(l->cols - 1) * (size_t)l->ld +
            l->rows) * type_bytes(l->type);
}

/* A GELU_AUX or DGELU epilogue's input matrix (of D's shape and type),
 * against the operands op[4] (A, B, C or NULL when not read, D) of
 * layouts l[4]: written by GELU_AUX, so apart from all four; read by
 * DGELU, so apart from D. */
static bool aux_ok(const obj *desc, const obj *D, const void *const op[4], const obj *const l[4])
{
    bool read = (desc->epilogue & EPILOGUE_DGELU) == EPILOGUE_DGELU;
    if (!desc->has_aux_ld || desc->aux_ld % 8 || desc->aux_ld < (int64_t)D->rows) {
        breach("cublasLtMatmul: the GELU input matrix's leading dim %lld (%s) is not a multiple "
               "of 8 at least D's %llu rows", (long long)desc->aux_ld,
               desc->has_aux_ld ? "set" : "not set", (unsigned long long)D->rows);
        return false;
    }
    if (D->batch > 1 && (!desc->has_aux_stride ||
                         desc->aux_stride < desc->aux_ld * (int64_t)(D->cols - 1) + (int64_t)D->rows)) {
        breach("cublasLtMatmul: the GELU input matrix's batch stride %lld (%s) overlaps its "
               "%llu x %llu", (long long)desc->aux_stride, desc->has_aux_stride ? "set" : "not set",
               (unsigned long long)D->rows, (unsigned long long)D->cols);
        return false;
    }
    size_t n = ((size_t)(D->batch - 1) * (size_t)desc->aux_stride +
                (size_t)(D->cols - 1) * (size_t)desc->aux_ld + D->rows) * type_bytes(D->type);
    uintptr_t x0 = (uintptr_t)desc->aux;
    if (!desc->aux || !in_device((unsigned long long)x0, n)) {
        breach("cublasLtMatmul: the GELU input matrix at %p (%zu bytes) is not inside one live "
               "allocation", desc->aux, n);
        return false;
    }
    static const char *const name[4] = {"A", "B", "C", "D"};
    for (int i = read ? 3 : 0; i < 4; i++) {
        uintptr_t y0 = (uintptr_t)op[i];
        if (op[i] && x0 < y0 + extent(l[i]) && y0 < x0 + n) {
            breach("cublasLtMatmul: the GELU input matrix at %p shares bytes with %s at %p",
                   desc->aux, name[i], op[i]);
            return false;
        }
    }
    return true;
}

API status cublasLtMatmul(void *h, void *d, const void *alpha, const void *a, void *la,
                          const void *b, void *lb, const void *beta, const void *c, void *lc,
                          void *dp, void *ld, const algo *al, void *ws, size_t wsbytes,
                          void *stream)
{
    (void)stream;
    if (atomic_fetch_add(&n_matmul, 1) + 1 == fail_matmul)
        return EXECUTION_FAILED;
    if (!live(h, O_HANDLE) || !live(d, O_DESC) || !live(la, O_LAYOUT) || !live(lb, O_LAYOUT) ||
        !live(lc, O_LAYOUT) || !live(ld, O_LAYOUT) || !alpha || !beta || !al) {
        breach("cublasLtMatmul: a handle, descriptor or layout that is not live, or no "
               "alpha, beta or algorithm");
        return INVALID_VALUE;
    }
    const obj *desc = d, *C = lc, *D = ld;
    if (!shapes_ok(desc, la, lb, lc))
        return INVALID_VALUE;
    if (C->rows != D->rows || C->cols != D->cols || C->batch != D->batch) {
        breach("cublasLtMatmul: C and D differ in shape");
        return INVALID_VALUE;
    }
    if (!operand_ok(a, la, "A") || !operand_ok(b, lb, "B") || !operand_ok(dp, ld, "D"))
        return INVALID_VALUE;
    float bv;
    memcpy(&bv, beta, sizeof bv);
    if (bv != 0.0f && !operand_ok(c, lc, "C"))
        return INVALID_VALUE;
    if ((desc->epilogue & EPILOGUE_BIAS) &&
        (!desc->bias || !in_device((unsigned long long)(uintptr_t)desc->bias,
                                   D->rows * type_bytes(D->type)))) {
        breach("cublasLtMatmul: the bias at %p (%llu elements) is not inside one live "
               "allocation", desc->bias, (unsigned long long)D->rows);
        return INVALID_VALUE;
    }
    if (((desc->epilogue & (EPILOGUE_AUX | EPILOGUE_GELU)) == (EPILOGUE_AUX | EPILOGUE_GELU) ||
         (desc->epilogue & EPILOGUE_DGELU) == EPILOGUE_DGELU) &&
        !aux_ok(desc, D, (const void *[]){a, b, bv != 0.0f ? c : NULL, dp},
                (const obj *[]){la, lb, lc, ld}))
        return INVALID_VALUE;
    if (wsbytes && !in_device((unsigned long long)(uintptr_t)ws, wsbytes)) {
        breach("cublasLtMatmul: the workspace (%zu bytes) is not inside one live allocation",
               wsbytes);
        return INVALID_VALUE;
    }
    return OK;
}

API const char *cublasLtGetStatusString(status s)
{
    switch (s) {
    case OK: return "CUBLAS_STATUS_SUCCESS";
    case NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}
