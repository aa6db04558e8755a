/* test_bench_cuda.c: the parts of bench/bench_cuda that need no GPU
 * (bench/bench_cuda.h): on a small plan built by hand, the bytes each
 * kernel moves, the FLOPs of each matmul, the class and the launches
 * chosen (the same launch counted once), the id bounds, the data, and the
 * report's rows and summary against values computed by hand. Then, where
 * NVRTC is, a real training plan with an embedding and a cross_entropy:
 * every kernel and matmul is in exactly one launch and the ids get the
 * table's rows and the classes as bounds. bench_cuda's no-GPU exit is
 * bench/bench_cuda_no_gpu.sh (ctest bench/bench_cuda-no-gpu). */
#include "bench/bench_cuda_lib.c"
#include "support/support.h"

#include "runtime/cuda/nvrtc.h"
#include "api/api_internal.h"
#include "check.h"

#include <math.h>

enum { NBUF = 16, NINSTR = 16, NKERN = 6 };

/* The hand-built plan: one stage, buffers 0..15, these instructions. */
typedef struct hand {
    rt_plan p;
    rt_program g;
    rt_instr in[NINSTR];
    rt_kernel k[NKERN];
    int64_t off[NBUF], bytes[NBUF];
    int32_t param[NKERN][4], instr[NKERN][2];
    rt_type pt[NKERN][4];
} hand;

static rt_type ty(int dtype, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    rt_type t = {.dtype = (uint8_t)dtype, .rank = (uint8_t)rank, .dim = {d0, d1, d2}};
    return t;
}

static void instr(hand *h, int i, int op, int out, rt_type out_t, int a, int b)
{
    rt_instr *in = &h->in[i];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->nin = (uint8_t)rt_ops[op].min_in;
    in->out = out;
    in->out_t = out_t;
    int src[2] = {a, b};
    for (int j = 0; j < in->nin && j < 2; j++) {
        in->in[j] = src[j];
        in->in_t[j] = h->in[src[j]].out_t; /* buffer b is made by instruction b */
    }
}

static void kernel(hand *h, int i, const char *name, int strategy, int module, int nin,
                   int nout, const int *params, int ninstr, const int *instrs)
{
    rt_kernel *k = &h->k[i];
    memset(k, 0, sizeof *k);
    k->name = (char *)name;
    k->strategy = (uint8_t)strategy;
    k->module = module;
    k->grid = 128;
    k->block = 256;
    k->nin = nin;
    k->nout = nout;
    k->param = h->param[i];
    k->param_t = h->pt[i];
    for (int j = 0; j < nin + nout; j++) {
        h->param[i][j] = params[j];
        h->pt[i][j] = h->in[params[j]].out_t;
    }
    k->ninstr = ninstr;
    k->instr = h->instr[i];
    for (int j = 0; j < ninstr; j++)
        h->instr[i][j] = instrs[j];
}

/*  0 x = input f32[256, 1024]       1 w = param f32[1024, 512]
 *  2 b = param f32[512]             3 matmul(x, w)  f32[256, 512]
 *  4 add(3, b)                      5 gelu(4)
 *  6 ids = input i32[8, 8]          7 copy(ids) i32[64]
 *  8 table = param f32[100, 64]     9 embedding(table, 7) f32[64, 64]
 * 10 gelu(5)                       11 w2 = param f32[4, 512, 128]
 * 12 matmul(10, w2) f32[4, 256, 128] (no kernel)
 * 13 labels = input i32[64]        14 cross_entropy(9, labels) f32[]
 * 15 embedding_grad(7, 9) f32[100, 64]
 * Kernels: k0 matmul 3, 4 (bias); k1 gelu 5; k2 copy+embedding; k3 gelu
 * 10 (k1's launch again); k4 cross_entropy (single block); k5
 * embedding_grad. */
static void build(hand *h)
{
    memset(h, 0, sizeof *h);
    instr(h, 0, RT_OP_INPUT, 0, ty(RT_F32, 2, 256, 1024, 0), 0, 0);
    instr(h, 1, RT_OP_PARAM, 1, ty(RT_F32, 2, 1024, 512, 0), 0, 0);
    instr(h, 2, RT_OP_PARAM, 2, ty(RT_F32, 1, 512, 0, 0), 0, 0);
    instr(h, 3, RT_OP_MATMUL, 3, ty(RT_F32, 2, 256, 512, 0), 0, 1);
    instr(h, 4, RT_OP_ADD, 4, ty(RT_F32, 2, 256, 512, 0), 3, 2);
    instr(h, 5, RT_OP_GELU, 5, ty(RT_F32, 2, 256, 512, 0), 4, 0);
    instr(h, 6, RT_OP_INPUT, 6, ty(RT_I32, 2, 8, 8, 0), 0, 0);
    instr(h, 7, RT_OP_COPY, 7, ty(RT_I32, 1, 64, 0, 0), 6, 0);
    instr(h, 8, RT_OP_PARAM, 8, ty(RT_F32, 2, 100, 64, 0), 0, 0);
    instr(h, 9, RT_OP_EMBEDDING, 9, ty(RT_F32, 2, 64, 64, 0), 8, 7);
    instr(h, 10, RT_OP_GELU, 10, ty(RT_F32, 2, 256, 512, 0), 5, 0);
    instr(h, 11, RT_OP_PARAM, 11, ty(RT_F32, 3, 4, 512, 128), 0, 0);
    instr(h, 12, RT_OP_MATMUL, 12, ty(RT_F32, 3, 4, 256, 128), 10, 11);
    instr(h, 13, RT_OP_INPUT, 13, ty(RT_I32, 1, 64, 0, 0), 0, 0);
    instr(h, 14, RT_OP_XENT, 14, ty(RT_F32, 0, 0, 0, 0), 9, 13);
    instr(h, 15, RT_OP_EMBEDDING_GRAD, 15, ty(RT_F32, 2, 100, 64, 0), 7, 9);
    kernel(h, 0, "k0_matmul_add", RT_KS_MATMUL, -1, 3, 1, (int[]){0, 1, 2, 4}, 2, (int[]){3, 4});
    h->k[0].epilogue = RT_EPI_BIAS;
    h->k[0].grid = h->k[0].block = 0;
    kernel(h, 1, "k1_gelu", RT_KS_ELEMENTWISE, 0, 1, 1, (int[]){4, 5}, 1, (int[]){5});
    kernel(h, 2, "k2_copy_embedding", RT_KS_ELEMENTWISE, 1, 2, 1, (int[]){8, 6, 9}, 2,
           (int[]){7, 9});
    kernel(h, 3, "k3_gelu", RT_KS_ELEMENTWISE, 0, 1, 1, (int[]){5, 10}, 1, (int[]){10});
    kernel(h, 4, "k4_cross_entropy", RT_KS_SINGLE_BLOCK, 2, 2, 1, (int[]){9, 13, 14}, 1,
           (int[]){14});
    kernel(h, 5, "k5_embedding_grad", RT_KS_ELEMENTWISE, 3, 2, 1, (int[]){7, 9, 15}, 1,
           (int[]){15});
    h->g.nbuf = NBUF;
    h->g.buf_offset = h->off;
    h->g.buf_bytes = h->bytes;
    h->g.ninstr = NINSTR;
    h->g.instr = h->in;
    h->p.nstages = 1;
    h->p.stage_axis = -1;
    h->p.stage = &h->g;
    h->p.loss = -1;
    h->p.init_module = -1;
    h->p.nkernels = NKERN;
    h->p.kernel = h->k;
    h->p.nmodules = 4;
}

static void test_counts(const hand *h)
{
    /* k0: x 1 MiB + w 2 MiB + b 2 KiB + out 512 KiB */
    CHECK_INT(bc_kernel_bytes(&h->k[0]), 1048576 + 2097152 + 2048 + 524288);
    CHECK_INT(bc_kernel_bytes(&h->k[1]), 2 * 524288); /* exactly 1 MiB */
    CHECK_INT(bc_kernel_bytes(&h->k[2]), 25600 + 256 + 16384);
    CHECK_INT(bc_kernel_class(&h->p, &h->k[0]), BC_MATMUL);
    CHECK_INT(bc_kernel_class(&h->p, &h->k[1]), BC_BANDWIDTH);
    CHECK_INT(bc_kernel_class(&h->p, &h->k[2]), BC_SMALL);
    CHECK_INT(bc_kernel_class(&h->p, &h->k[4]), BC_OTHER);
    CHECK_INT(bc_kernel_class(&h->p, &h->k[5]), BC_OTHER);
    bc_mm s;
    CHECK(bc_matmul_shape(&h->in[3], &s));
    CHECK(s.m == 256 && s.n == 512 && s.k == 1024 && s.batch == 1);
    CHECK(bc_matmul_shape(&h->in[12], &s));
    CHECK(s.m == 256 && s.n == 128 && s.k == 512 && s.batch == 4);
    CHECK_INT(s.stride_a, 0); /* a has no batch dims: repeated */
    CHECK_INT(s.stride_b, 512 * 128);
    CHECK(!bc_matmul_shape(&h->in[4], &s));
    CHECK(bc_matmul_flops(&h->in[3]) == 2.0 * 256 * 512 * 1024);
    CHECK(bc_matmul_flops(&h->in[12]) == 2.0 * 256 * 128 * 512 * 4);
    CHECK(bc_matmul_flops(&h->in[5]) == 0);
    /* ids through the copy into the embedding: the table's 100 rows;
     * labels: the logits' 64 classes; embedding_grad's ids: its 100 rows */
    CHECK_INT(bc_id_bound(&h->p, &h->k[2], 6), 100);
    CHECK_INT(bc_id_bound(&h->p, &h->k[4], 13), 64);
    CHECK_INT(bc_id_bound(&h->p, &h->k[5], 7), 100);
    CHECK_INT(bc_id_bound(&h->p, &h->k[1], 4), BC_ID_FREE);
}

static void test_select(const hand *h, bc_item **out, int *nout)
{
    bc_item *it = NULL;
    int n = bc_select(&h->p, &it);
    CHECK_INT(n, 6);
    if (n != 6) {
        free(it);
        *out = NULL;
        *nout = 0;
        return;
    }
    /* the kernels in plan order (k3 is k1's launch), then the matmuls */
    static const int kernel[] = {1, 2, 4, 5, 0, -1}, count[] = {2, 1, 1, 1, 1, 1};
    static const int cls[] = {BC_BANDWIDTH, BC_SMALL, BC_OTHER, BC_OTHER, BC_MATMUL, BC_MATMUL};
    for (int i = 0; i < n; i++) {
        CHECK_INT(it[i].kernel, kernel[i]);
        CHECK_INT(it[i].count, count[i]);
        CHECK_INT(it[i].cls, cls[i]);
    }
    CHECK_INT(it[4].instr, 3);
    CHECK_INT(it[5].instr, 12);
    CHECK_INT(it[5].bytes, 524288 + 1048576 + 524288);
    CHECK(it[5].flops == 134217728.0);
    *out = it;
    *nout = n;
}

static void test_fill(void)
{
    float f[1000];
    uint16_t h[1000], b[1000];
    int32_t ids[1000], again[1000];
    rt_type t = ty(RT_F32, 1, 1000, 0, 0);
    bc_fill(f, &t, 0, 7);
    t.dtype = RT_F16;
    bc_fill(h, &t, 0, 7);
    t.dtype = RT_BF16;
    bc_fill(b, &t, 0, 7);
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        float x = f[i] * 128;
        bad += !(f[i] >= 0.5f && f[i] < 1.0f) || x != floorf(x);
        bad += su_f16_to_f32(h[i]) != f[i] || su_bf16_to_f32(b[i]) != f[i]; /* exact */
    }
    CHECK_INT(bad, 0);
    t.dtype = RT_I32;
    bc_fill(ids, &t, 100, 7);
    bc_fill(again, &t, 100, 7);
    int lo = 100, hi = -1;
    for (int i = 0; i < 1000; i++) {
        lo = ids[i] < lo ? ids[i] : lo;
        hi = ids[i] > hi ? ids[i] : hi;
    }
    CHECK(lo == 0 && hi == 99); /* in range, and spread over it */
    CHECK(!memcmp(ids, again, sizeof ids));
    bc_fill(again, &t, 100, 8);
    CHECK(memcmp(ids, again, sizeof ids) != 0);
}

static void test_strings(void)
{
    char buf[64];
    CHECK_STR(bc_epilogue_name(0, buf, sizeof buf), "none");
    CHECK_STR(bc_epilogue_name(RT_EPI_BIAS | RT_EPI_RESIDUAL | RT_EPI_GELU, buf, sizeof buf),
              "bias+residual+gelu");
    CHECK_STR(bc_epilogue_name(RT_EPI_RELU, buf, sizeof buf), "relu");
    CHECK_STR(bc_bytes_str(1048576, buf, sizeof buf), "1.00 MiB");
    CHECK_STR(bc_bytes_str(3LL << 29, buf, sizeof buf), "1.50 GiB");
    CHECK_STR(bc_bytes_str(42240, buf, sizeof buf), "41.2 KiB");
    CHECK_STR(bc_bytes_str(256, buf, sizeof buf), "256 B");
}

static bool has_line(const char *text, const char *line)
{
    const char *at = strstr(text, line);
    bool ok = at && (at == text || at[-1] == '\n') && at[strlen(line)] == '\n';
    if (!ok)
        fprintf(stderr, "  missing line: %s\n", line);
    return ok;
}

/* Times chosen by hand: k1 0.5 us (1 MiB: 2097.2 GB/s, 0.70 of 3000);
 * k0 20 us against cuBLAS's 18 (2.68e8 FLOP: 13.4 and 14.9 TFLOP/s,
 * 0.90); the lone matmul 10 against 12 (1.34e8: 13.4 and 11.2, 1.20). */
static void test_report(hand *h, bc_item *it, int n)
{
    if (n != 6)
        return;
    it[0].us = 0.5;
    it[1].us = it[2].us = it[3].us = 1.0;
    it[4].us = 20, it[4].ref_us = 18;
    it[5].us = 10, it[5].ref_us = 12;
    bc_machine m;
    memset(&m, 0, sizeof m);
    snprintf(m.gpu, sizeof m.gpu, "Test GPU");
    m.cc = 90, m.sms = 132, m.mem_bytes = 141LL << 30, m.l2_bytes = 50 << 20;
    m.cuda_driver = 12040, m.nvrtc_major = 13, m.cublaslt = 130001, m.repeat = 50;
    m.copy_bytes = 1 << 30, m.copy_gbs = 3000, m.flush_bytes = 256 << 20;
    snprintf(m.date, sizeof m.date, "2026-11-22 10:00 UTC");
    bc_result r = {.model = "hand.sh", .mesh = "1", .plan = &h->p, .item = it, .nitems = n};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bc_report(f, &m, &r, 1);
    fclose(f);
    CHECK(strstr(text, "GPU: Test GPU (sm_90, 132 SMs, 141.00 GiB, L2 50.00 MiB); CUDA "
                       "driver API 12.4; NVRTC 13.0; cuBLASLt 130001. Date: 2026-11-22 10:00 "
                       "UTC.") != NULL);
    CHECK(strstr(text, "Copy bandwidth: **3000.0 GB/s** (cuMemcpyDtoDAsync of 1.00 GiB, the "
                       "median of 50,") != NULL);
    CHECK(has_line(text, "## hand.sh --mesh 1"));
    CHECK(has_line(text, "Inference; 1 rank, 1 stage, 6 kernels; 6 launches timed (kernels and "
                         "matmuls: the same launch in several places is timed once, x says how "
                         "many)"));
    CHECK(has_line(text, "| 0 | k1_gelu | elementwise | gelu | 2 | 128 x 256 | 1.00 MiB | 0.50 "
                         "| 2097.2 | 0.70 | **below 0.85** |"));
    CHECK(has_line(text, "| 0 | k2_copy_embedding | elementwise | copy, embedding | 1 | 128 x "
                         "256 | 41.2 KiB | 1.00 | 42.2 | 0.01 |"));
    CHECK(has_line(text, "| 0 | k0_matmul_add | 1 | 1 x 256 x 512 x 1024 | f32 | bias | 2.68e+08 "
                         "| 20.00 | 13.4 | 18.00 | 14.9 | 0.90 | **below 0.95** |"));
    CHECK(has_line(text, "| 0 | instruction 12 | 1 | 4 x 256 x 128 x 512 | f32 | none | "
                         "1.34e+08 | 10.00 | 13.4 | 12.00 | 11.2 | 1.20 | ok |"));
    CHECK(has_line(text, "- memory-bound kernels at >= 0.85 of the copy bandwidth: 0 of 1 "
                         "launches (0 of 2 plan kernels)"));
    CHECK(has_line(text, "- small kernels (under 1 MiB, not counted): 1; not memory-bound (not "
                         "counted): 2"));
    CHECK(has_line(text, "- matmuls at >= 0.95 of cuBLAS: 1 of 2 launches (1 of 2 in the "
                         "plans)"));
    CHECK(has_line(text, "| 0 | k4_cross_entropy | single block | cross_entropy | 1 | 128 x 256 "
                         "| 16.3 KiB | 1.00 | 16.6 | 0.01 |"));
    free(text);
    /* a kernel running gelu twice names it once */
    h->k[1].ninstr = 2;
    h->instr[1][1] = 10;
    f = open_memstream(&text, &len);
    bc_report_plan(f, &r, m.copy_gbs);
    fclose(f);
    CHECK(has_line(text, "| 0 | k1_gelu | elementwise | gelu | 2 | 128 x 256 | 1.00 MiB | 0.50 "
                         "| 2097.2 | 0.70 | **below 0.85** |"));
    /* 0.4 us: 2621.4 GB/s, 0.87 of the copy: meets the goal */
    it[0].us = 0.4;
    bc_tally t;
    memset(&t, 0, sizeof t);
    bc_tally_add(&t, &r, m.copy_gbs);
    CHECK(t.bw == 1 && t.bw_ok == 1 && t.bw_plan == 2 && t.bw_plan_ok == 2);
    CHECK(t.small == 1 && t.other == 2 && t.mm == 2 && t.mm_ok == 1);
    free(text);
    /* --x3: the f32 matmuls timed as bf16 parts get a table of their own;
     * a matmul not timed so (x3_us 0) has no row */
    r.x3 = true;
    it[4].x3_us = 8, it[4].x3_mm_us = 6.5, it[4].err_f32 = 1.25, it[4].err_x3 = 2.5;
    f = open_memstream(&text, &len);
    bc_report_plan(f, &r, m.copy_gbs);
    fclose(f);
    CHECK(has_line(text, "### f32 matmuls as bf16 parts (--x3)"));
    CHECK(has_line(text, "| 0 | k0_matmul_add | 1 | 1 x 256 x 512 x 1024 | 20.0 | 8.0 | 6.5 | "
                         "2.50 | 1.25 | 2.50 |"));
    CHECK(strstr(text, "| 0 | instruction 12 | 1 | 4 x 256 x 128 x 512 | 10.0 |") == NULL);
    free(text);
}

/* ---- a real plan (needs NVRTC) ---- */

static const char model[] =
    "mesh dp\n"
    "let B = 4, S = 8, D = 16, V = 32, C = 48\n"
    "input  tokens  : i32[B, S]\n"
    "input  targets : i32[B, S]\n"
    "param  wte : f32[V, D] = normal(0.02)\n"
    "param  w   : f32[D, C] = normal(0.02)\n"
    "param  b   : f32[C]    = zeros\n"
    "x      = embedding(wte, tokens)\n"
    "logits = gelu(x @ w + b)\n"
    "loss   = cross_entropy(logits, targets)\n"
    "output loss\n"
    "train loss with sgd(lr = 0.01)\n";

/* The ops of kernel k include op. */
static bool runs(const rt_plan *p, const rt_kernel *k, int op)
{
    for (int i = 0; i < k->ninstr; i++)
        if (p->stage[k->stage].instr[k->instr[i]].op == op)
            return true;
    return false;
}

static void check_real(const rt_plan *p)
{
    bc_item *it = NULL;
    int n = bc_select(p, &it);
    CHECK(n > 0);
    int kernels = 0, matmuls = 0, want_matmuls = 0;
    for (int i = 0; i < n; i++) {
        *(it[i].cls == BC_MATMUL ? &matmuls : &kernels) += it[i].count;
        CHECK(it[i].cls != BC_MATMUL || it[i].flops > 0);
    }
    for (int i = 0; i < p->stage[0].ninstr; i++)
        want_matmuls += p->stage[0].instr[i].op == RT_OP_MATMUL;
    int want_kernels = 0, bounds = 0;
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        want_kernels += kr->strategy != RT_KS_MATMUL;
        for (int j = 0; j < kr->nin; j++) {
            if (kr->param_t[j].dtype != RT_I32)
                continue;
            int64_t b = bc_id_bound(p, kr, kr->param[j]);
            int64_t want = runs(p, kr, RT_OP_EMBEDDING) || runs(p, kr, RT_OP_EMBEDDING_GRAD) ? 32
                           : runs(p, kr, RT_OP_XENT) || runs(p, kr, RT_OP_XENT_GRAD) ? 48
                                                                                      : -1;
            if (want > 0) {
                CHECK_INT(b, want);
                bounds++;
            }
        }
    }
    CHECK_INT(kernels, want_kernels);
    CHECK_INT(matmuls, want_matmuls); /* each matmul once: in a kernel or alone */
    CHECK(bounds >= 3); /* embedding, its grad, cross_entropy (and its grad) */
    free(it);
}

/* The tiny model's plan for sm_90, with --f32-matmul mode; NULL with the
 * reason printed. */
/* Each of p's kernels that is not cuBLASLt's is of the class the
 * estimate's trace (trace) gives the group it was made from, named
 * alike: the calibration measures what the estimate uses. Returns how
 * many were compared. */
static int check_classes(const rt_plan *p, const char *trace)
{
    int n = 0;
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->strategy == RT_KS_MATMUL)
            continue;
        char key[256];
        snprintf(key, sizeof key, "{\"name\": \"%s\", \"cat\": \"kernel\"", kr->name);
        const char *ev = strstr(trace, key);
        if (!ev && kr->ninstr == 1) { /* an op's kernel of its own: named as the op */
            snprintf(key, sizeof key, "{\"name\": \"%s\", \"cat\": \"compute\"",
                     rt_ops[p->stage[kr->stage].instr[kr->instr[0]].op].name);
            ev = strstr(trace, key);
        }
        const char *end = ev ? strstr(ev, "}}") : NULL;
        const char *cls = ev ? strstr(ev, "\"class\": \"") : NULL;
        CHECK(ev && end);
        if (!ev || !end)
            continue;
        if (bc_attention_flops(p, kr, &(bc_peak){BC_PEAK_F32}) > 0) { /* attention: no class */
            CHECK(!cls || cls > end);
            continue;
        }
        char want[64];
        snprintf(want, sizeof want, "\"class\": \"%s\"", pass_kclass_name(bc_kernel_kclass(p, kr)));
        CHECK(cls && cls < end && !strncmp(cls, want, strlen(want)));
        if (!cls || cls > end || strncmp(cls, want, strlen(want)))
            fprintf(stderr, "  kernel %s: the plan's %s, the estimate's %.30s\n", kr->name, want,
                    cls && cls < end ? cls : "none");
        n++;
    }
    return n;
}

static rt_plan *real_plan(const char *mode)
{
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    char *e = NULL, *trace = NULL;
    size_t tlen = 0;
    su_status err;
    uint8_t *bytes = NULL;
    size_t len = 0;
    bool ok = shardc_options_set_archs(opt, "sm_90", &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK &&
              shardc_options_set_f32_matmul(opt, mode, &e) == SHARDC_OK &&
              shardc_compile_string(opt, "tiny.sh", model, sizeof model - 1, &prog, &e) ==
                  SHARDC_OK &&
              api_program_plan(prog, &bytes, &len, &e) == SHARDC_OK &&
              shardc_program_emit(prog, "trace", &trace, &tlen, &e) == SHARDC_OK;
    rt_plan *p = ok ? rt_plan_read(bytes, len, "tiny.sh", &err) : NULL;
    if (!p)
        fprintf(stderr, "  tiny.sh (%s): %s\n", mode, e ? e : err.msg);
    CHECK(p != NULL);
    /* embedding, its gradient, cross_entropy and its gradient, the bias's
     * gradient (a column sum), sgd: at least 5 kernels of a class */
    if (p)
        CHECK(check_classes(p, trace) >= 5);
    shardc_free(trace);
    free(bytes);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return p;
}

/* The FLOPs of p's matmuls, each launch times its count. */
static double matmul_flops(const rt_plan *p)
{
    bc_item *it = NULL;
    int n = bc_select(p, &it);
    double f = 0;
    for (int i = 0; i < n; i++)
        f += it[i].cls == BC_MATMUL ? it[i].flops * it[i].count : 0;
    free(it);
    return f;
}

static void test_real_plan(void)
{
    if (!rt_nvrtc_available()) {
        printf("real plan: skipped (no NVRTC in this build)\n");
        return;
    }
    rt_plan *p = real_plan("f32"), *x3 = real_plan("bf16x3");
    if (p)
        check_real(p);
    /* f32 matmuls as bf16 parts: the same launches, each counting the f32
     * product's FLOPs (not the parts' 3 K) */
    if (x3)
        check_real(x3);
    if (p && x3) {
        CHECK(matmul_flops(p) > 0);
        CHECK(fabs(matmul_flops(x3) - matmul_flops(p)) <= 1e-9 * matmul_flops(p));
        int parts = 0;
        for (int i = 0; i < x3->stage[0].ninstr; i++)
            parts += x3->stage[0].instr[i].op == RT_OP_MATMUL &&
                     (x3->stage[0].instr[i].dim & RT_MM_PARTS);
        CHECK(parts >= 3); /* x @ w, and its two gradients */
    }
    rt_plan_free(p);
    rt_plan_free(x3);
}

static bool near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fabs(want);
}

/* bc_calibrate on launches timed as if each class ran at a known fraction
 * of its peak (plus the launch cost), and the profile bc_write_profile
 * makes of it read back by shardc --hw. */
static void test_calibrate(void)
{
    /* one stage: a bf16 and an f32 matmul instruction, a bf16 attention
     * over q, k, v [1, 2, 128, 64] in kernel 0 */
    rt_instr in[6];
    memset(in, 0, sizeof in);
    in[0].op = RT_OP_MATMUL;
    in[0].in_t[0] = ty(RT_BF16, 2, 64, 64, 0);
    in[1].op = RT_OP_MATMUL;
    in[1].in_t[0] = ty(RT_F32, 2, 64, 64, 0);
    in[2].op = RT_OP_ATTENTION;
    in[2].nin = 3;
    for (int i = 0; i < 3; i++)
        in[2].in_t[i] = (rt_type){.dtype = RT_BF16, .rank = 4, .dim = {1, 2, 128, 64}};
    in[2].out_t = in[2].in_t[0];
    /* kernels 1 to 3 (memory-bound): a sum over the last dim of
     * [64, 64] (a row kernel), adamw, embedding_grad */
    in[3] = (rt_instr){.op = RT_OP_SUM, .nin = 1, .axis = 1, .in_t = {ty(RT_F32, 2, 64, 64, 0)}};
    in[4] = (rt_instr){.op = RT_OP_ADAMW, .nin = 4, .in_t = {ty(RT_F32, 1, 64, 0, 0)}};
    in[5] = (rt_instr){.op = RT_OP_EMBEDDING_GRAD, .nin = 2, .in_t = {ty(RT_F32, 2, 64, 64, 0)}};
    int32_t kinstr[4] = {2, 3, 4, 5};
    rt_kernel ks[4] = {{.name = (char *)"attention", .ninstr = 1, .instr = kinstr},
                       {.name = (char *)"sum", .ninstr = 1, .instr = kinstr + 1},
                       {.name = (char *)"adamw", .ninstr = 1, .instr = kinstr + 2},
                       {.name = (char *)"embedding_grad", .ninstr = 1, .instr = kinstr + 3}};
    rt_kernel k = ks[0];
    rt_program g = {.ninstr = 6, .instr = in};
    rt_plan p = {.nstages = 1, .stage = &g, .nkernels = 4, .kernel = ks};
    CHECK_INT(bc_kernel_kclass(&p, &ks[1]), PASS_KC_ROW);
    CHECK_INT(bc_kernel_kclass(&p, &ks[2]), PASS_KC_OPTIMIZER);
    CHECK_INT(bc_kernel_kclass(&p, &ks[3]), PASS_KC_EMBEDDING_GRAD);
    in[3].axis = 0; /* over the other dim: a column kernel */
    CHECK_INT(bc_kernel_kclass(&p, &ks[1]), PASS_KC_COLUMN);
    in[3].axis = 1;
    bc_peaks pk = {.tc_flops = 1000e12, .f32_flops = 50e12, .mem_bw = 3e12, .launch_s = 4e-6};
    double attn = 2.0 * 128 * 128 * (2 * (64 + 64) + 5); /* heads x S x T x (2 (d + dv) + 5) */
    bc_peak tc = BC_PEAK_F32;
    /* a bf16 forward with heads of 64: the WMMA kernel, on tensor cores */
    CHECK(near(bc_attention_flops(&p, &k, &tc), attn) && tc == BC_PEAK_TC);
    {
        /* f32 with heads of 64: on tensor cores as bf16 parts, at a sixth
         * of their peak (the estimate's pass_attn_x3); a head width not a
         * multiple of 16: f32 FMAs */
        rt_instr one = in[2];
        int32_t zero[1] = {0};
        rt_kernel k1 = {.name = (char *)"attention", .ninstr = 1, .instr = zero};
        rt_program g1 = {.ninstr = 1, .instr = &one};
        rt_plan p1 = {.nstages = 1, .stage = &g1, .nkernels = 1, .kernel = &k1};
        for (int i = 0; i < 3; i++)
            one.in_t[i].dtype = RT_F32;
        one.out_t.dtype = RT_F32;
        CHECK(near(bc_attention_flops(&p1, &k1, &tc), attn) && tc == BC_PEAK_PARTS);
        CHECK(near(bc_peak_flops(&(bc_peaks){.tc_flops = 600e12, .f32_flops = 50e12}, tc),
                   100e12));
        for (int i = 0; i < 3; i++)
            one.in_t[i].dim[3] = 72;
        one.out_t.dim[3] = 72;
        CHECK(bc_attention_flops(&p1, &k1, &tc) > 0 && tc == BC_PEAK_F32);
        one = in[2];
        for (int i = 0; i < 3; i++)
            one.in_t[i].dim[3] = 72;
        one.out_t.dim[3] = 72;
        CHECK(bc_attention_flops(&p1, &k1, &tc) > 0 && tc == BC_PEAK_F32);
        /* attn_lse alone (q, k; its result the rows' f32 lse): heads x S x
         * T x (2 d + 3), as passes/cost.c counts it, on tensor cores in
         * bf16, and not a memory-bound kernel (nor are the backward's) */
        one = (rt_instr){.op = RT_OP_ATTN_LSE, .nin = 2, .in_t = {in[2].in_t[0], in[2].in_t[1]},
                         .out_t = {.dtype = RT_F32, .rank = 3, .dim = {1, 2, 128}}};
        CHECK(near(bc_attention_flops(&p1, &k1, &tc), 2.0 * 128 * 128 * (2 * 64 + 3)) &&
              tc == BC_PEAK_TC);
        k1.strategy = RT_KS_ROW;
        CHECK_INT(bc_kernel_class(&p1, &k1), BC_OTHER);
        one.op = RT_OP_ATTN_DQ; /* the class alone: its operands are not a dq's */
        CHECK_INT(bc_kernel_class(&p1, &k1), BC_OTHER);
    }
    {
        /* an attention pair, attn_dv then attn_dk, d 64 and dv 32: attn_dk's
         * FLOPs and p dy, heads x S x T x (4 d + 4 dv + 7), as shardc counts
         * it (passes/cost.c, pass_attn_pair_flops) */
        rt_instr bw[2];
        memset(bw, 0, sizeof bw);
        rt_type q = {.dtype = RT_BF16, .rank = 4, .dim = {1, 2, 128, 64}};
        rt_type y = {.dtype = RT_BF16, .rank = 4, .dim = {1, 2, 128, 32}};
        rt_type st = {.dtype = RT_F32, .rank = 4, .dim = {1, 2, 128, 2}};
        bw[0] = (rt_instr){.op = RT_OP_ATTN_DV, .nin = 4, .in_t = {q, q, y, st}, .out_t = y};
        bw[1] = (rt_instr){.op = RT_OP_ATTN_DK, .nin = 5, .in_t = {q, q, y, y, st}, .out_t = q};
        int32_t pinstr[2] = {0, 1};
        rt_kernel pk2 = {.name = (char *)"attn_dv_attn_dk", .ninstr = 2, .instr = pinstr};
        rt_program pg = {.ninstr = 2, .instr = bw};
        rt_plan pp = {.nstages = 1, .stage = &pg, .nkernels = 1, .kernel = &pk2};
        tc = BC_PEAK_F32; /* bf16, d 64 and dv 32: on tensor cores, as the estimate has it */
        CHECK(near(bc_attention_flops(&pp, &pk2, &tc), 2.0 * 128 * 128 * (4 * 64 + 4 * 32 + 7)));
        CHECK(tc == BC_PEAK_TC);
        int32_t one[1] = {0}; /* attn_dv alone: its own FLOPs */
        rt_kernel dvk = {.name = (char *)"attn_dv", .ninstr = 1, .instr = one};
        tc = BC_PEAK_F32;
        CHECK(near(bc_attention_flops(&pp, &dvk, &tc), 2.0 * 128 * 128 * (2 * (64 + 32) + 5)));
        CHECK(tc == BC_PEAK_TC);
        CHECK_INT(bc_kernel_class(&pp, &pk2), BC_OTHER); /* the pair: attention's */
        bw[0].in_t[2].dim[3] = bw[0].out_t.dim[3] = 40; /* dv 40: f32 FMAs */
        CHECK(bc_attention_flops(&pp, &dvk, &tc) > 0 && tc == BC_PEAK_F32);
    }
#define US(work, eff) (1e6 * (4e-6 + (work) / (eff)))
    bc_item it[] = {
        /* memory-bound: 2 x 1 GB at 0.5 (the row sum), 2 GB at 0.25
         * (adamw): 4 GB in 12 GB's time at the peak */
        {.cls = BC_BANDWIDTH, .kernel = 1, .count = 2, .bytes = 1000000000,
         .us = US(1e9 / 3e12, 0.5)},
        {.cls = BC_BANDWIDTH, .kernel = 2, .count = 1, .bytes = 2000000000,
         .us = US(2e9 / 3e12, 0.25)},
        /* small: the launch cost, 4 us past its bytes at mem_bw (the same as pk's) */
        {.cls = BC_SMALL, .kernel = 1, .count = 5, .bytes = 3000, .us = 4.001},
        /* embedding_grad (not memory-bound by construction): its class's
         * alone, 3 GB at 0.2; under 1 MiB, not counted */
        {.cls = BC_OTHER, .kernel = 3, .count = 1, .bytes = 3000000000,
         .us = US(3e9 / 3e12, 0.2)},
        {.cls = BC_OTHER, .kernel = 3, .count = 4, .bytes = 1000, .us = 9},
        /* matmuls: 1e9 FLOPs at 0.1; in one half decade, 3 x 1e12 bf16 at
         * 0.6 and 1.1e12 f32 at 0.9 */
        {.cls = BC_MATMUL, .instr = 0, .count = 1, .flops = 1e9, .us = US(1e9 / 1000e12, 0.1)},
        {.cls = BC_MATMUL, .instr = 0, .count = 3, .flops = 1e12, .us = US(1e12 / 1000e12, 0.6)},
        {.cls = BC_MATMUL, .instr = 1, .count = 1, .flops = 1.1e12, .us = US(1.1e12 / 50e12, 0.9)},
        /* attention on tensor cores at 0.4 of their peak */
        {.cls = BC_OTHER, .kernel = 0, .count = 2, .us = US(attn / 1000e12, 0.4)},
    };
#undef US
    bc_result r = {.model = "hand.sh", .mesh = "1", .plan = &p, .item = it,
                   .nitems = (int)(sizeof it / sizeof *it)};
    bc_calibration c;
    bc_calibrate(&r, 1, &pk, &c);
    CHECK(fabs(c.launch_s - 4e-6) < 1e-15);
    CHECK_INT(c.launch_n, 5);
    CHECK(near(c.mem_eff, 4.0 / 12.0));
    CHECK_INT(c.mem_n, 3);
    CHECK(fabs(c.class_eff[PASS_KC_ROW] - 0.5) < 1e-9);
    CHECK_INT(c.class_n[PASS_KC_ROW], 2);
    CHECK(fabs(c.class_eff[PASS_KC_OPTIMIZER] - 0.25) < 1e-9);
    CHECK_INT(c.class_n[PASS_KC_OPTIMIZER], 1);
    CHECK(fabs(c.class_eff[PASS_KC_EMBEDDING_GRAD] - 0.2) < 1e-9);
    CHECK_INT(c.class_n[PASS_KC_EMBEDDING_GRAD], 1);
    CHECK(c.class_eff[PASS_KC_ELEMENTWISE] == 0 && c.class_n[PASS_KC_ELEMENTWISE] == 0);
    CHECK(fabs(c.attn_eff - 0.4) < 1e-9);
    CHECK_INT(c.attn_n, 2);
    CHECK_INT(c.nmm, 2);
    CHECK_INT(c.mm_n, 5);
    CHECK(near(c.mm[0][0], 1e9) && fabs(c.mm[0][1] - 0.1) < 1e-9);
    double work = 3 * 1e12 / 1000e12 + 1.1e12 / 50e12;
    double time = 3 * 1e12 / (1000e12 * 0.6) + 1.1e12 / (50e12 * 0.9);
    CHECK(near(c.mm[1][0], exp((3 * log(1e12) + log(1.1e12)) / 4)));
    CHECK(fabs(c.mm[1][1] - work / time) < 1e-9);

    {
        /* small launches of 2.5 us (4 of the 5 times they run; one of 9 us
         * runs once): launch_s 2.5 us, which the other fits then take */
        bc_item lit[] = {
            {.cls = BC_SMALL, .kernel = 1, .count = 3, .bytes = 0, .us = 2.5},
            {.cls = BC_SMALL, .kernel = 1, .count = 1, .bytes = 0, .us = 9},
            {.cls = BC_SMALL, .kernel = 2, .count = 1, .bytes = 30000, .us = 2.51},
            {.cls = BC_BANDWIDTH, .kernel = 1, .count = 1, .bytes = 1000000000,
             .us = 1e6 * (2.5e-6 + 1e9 / 3e12 / 0.7)},
        };
        bc_result lr = {.model = "hand.sh", .mesh = "1", .plan = &p, .item = lit, .nitems = 4};
        bc_calibration lc;
        bc_calibrate(&lr, 1, &pk, &lc);
        CHECK(fabs(lc.launch_s - 2.5e-6) < 1e-15);
        CHECK_INT(lc.launch_n, 5);
        CHECK(fabs(lc.mem_eff - 0.7) < 1e-9);
        CHECK(fabs(lc.class_eff[PASS_KC_ROW] - 0.7) < 1e-9);
        char *mem = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&mem, &len);
        CHECK(mf != NULL);
        if (mf) {
            bc_write_profile(mf, pass_hw_find("h100"), &lc, "local", "d", "by");
            fclose(mf);
            const char *at = mem ? strstr(mem, "\"launch_s\": ") : NULL;
            CHECK(at && fabs(strtod(at + 12, NULL) - 2.5e-6) < 1e-15); /* not h100's 4 us */
        }
        free(mem);
    }
    /* the profile: h100's fields, the measured ones, and shardc reads it */
    char path[] = "/tmp/test_bench_cuda_XXXXXX.json";
    int fd = mkstemps(path, 5);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    CHECK(f != NULL);
    if (!f)
        return;
    bc_write_profile(f, pass_hw_find("h100"), &c, "local", "a \"quoted\" GPU",
                     "bench_cuda --calibrate x.json");
    fclose(f);
    char text[4096] = "";
    f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    CHECK(strstr(text, "\"name\": \"local\"") != NULL);
    CHECK(strstr(text, "\"desc\": \"a \\\"quoted\\\" GPU\"") != NULL);
    CHECK(strstr(text, "\"calibrated_by\": \"bench_cuda --calibrate x.json\"") != NULL);
    CHECK(strstr(text, "\"mem_eff\": 0.3333,") != NULL);
    const char *ls = strstr(text, "\"launch_s\": ");
    CHECK(ls && fabs(strtod(ls + 12, NULL) - 4e-6) < 1e-15); /* the measured one */
    CHECK(strstr(text, "\"link_eff\": 0.80000000000000004,") != NULL);
    CHECK(strstr(text, "\"matmul_eff\": [[1e+09, 0.1000], [1.024e+12, ") != NULL);
    CHECK(strstr(text, "\"attention_eff\": 0.4000") != NULL);
    CHECK(strstr(text, "\"mem_eff_by_class\": {\"row\": 0.5000, \"embedding_grad\": 0.2000, "
                       "\"optimizer\": 0.2500}") != NULL);
    shardc_options *opt = shardc_options_new();
    char *e = NULL;
    CHECK(opt && shardc_options_set_hardware(opt, path, &e) == SHARDC_OK);
    if (e)
        fprintf(stderr, "%s\n", e);
    free(e);
    shardc_options_free(opt);
    remove(path);
}

int main(void)
{
    hand h;
    build(&h);
    test_counts(&h);
    bc_item *it;
    int n;
    test_select(&h, &it, &n);
    test_fill();
    test_strings();
    test_report(&h, it, n);
    free(it);
    test_calibrate();
    test_real_plan();
    return CHECK_DONE();
}
