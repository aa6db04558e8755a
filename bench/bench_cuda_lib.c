/* bench_cuda_lib.c: bench_cuda's choice of launches, its byte and FLOP
 * counts, its data and its report (bench_cuda.h): everything of the GPU
 * benchmark that needs no GPU. */
#include "bench_cuda.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"
#include "passes/fuse.h" /* PASS_ATTN_TC_WIDTH */

int64_t bc_kernel_bytes(const rt_kernel *k)
{
    int64_t bytes = 0;
    for (int j = 0; j < k->nin + k->nout; j++)
        bytes += rt_type_bytes(&k->param_t[j]);
    return bytes;
}

static int64_t numel(const int64_t *d, int n)
{
    int64_t e = 1;
    for (int i = 0; i < n; i++)
        e *= d[i];
    return e;
}

/* As runtime/cuda/cuda_blas.c's plan_mm: batch dims right-aligned, the larger
 * batch wins (the runtime refuses partial broadcasts before it runs). */
bool bc_matmul_shape(const rt_instr *mm, bc_mm *s)
{
    if (mm->op != RT_OP_MATMUL)
        return false;
    const rt_type *a = &mm->in_t[0], *b = &mm->in_t[1];
    int na = a->rank > 2 ? a->rank - 2 : 0, nb = b->rank > 2 ? b->rank - 2 : 0;
    int64_t ea = numel(a->dim, na), eb = numel(b->dim, nb);
    rt_mm_dims d = rt_matmul_dims(mm);
    s->k = d.k, s->m = d.m, s->n = d.n, s->ta = d.ta, s->tb = d.tb;
    s->batch = ea > eb ? ea : eb;
    s->stride_a = ea == 1 ? 0 : s->m * s->k;
    s->stride_b = eb == 1 ? 0 : s->k * s->n;
    if (s->batch > 1 && eb == 1 && !s->ta) { /* one matmul of a's rows, as plan_mm's */
        s->m *= s->batch;
        s->batch = 1;
        s->stride_a = 0;
    }
    return true;
}

double bc_matmul_flops(const rt_instr *mm)
{
    bc_mm s;
    if (!bc_matmul_shape(mm, &s))
        return 0;
    /* a matmul of parts (RT_MM_PARTS): the f32 product's, K a third */
    double k = (double)s.k / (mm->dim & RT_MM_PARTS ? 3 : 1);
    return 2.0 * (double)s.m * (double)s.n * k * (double)s.batch;
}

int bc_kernel_class(const rt_plan *p, const rt_kernel *k)
{
    if (k->strategy == RT_KS_MATMUL)
        return BC_MATMUL;
    if (k->strategy == RT_KS_SINGLE_BLOCK)
        return BC_OTHER;
    const rt_program *g = &p->stage[k->stage];
    for (int i = 0; i < k->ninstr; i++) {
        int op = g->instr[k->instr[i]].op;
        /* attention and its backward's kernels (attn_delta's a row
         * kernel), as the estimate's is_attention: run 4 on the H200 had
         * attn_dq and the attn_dv/attn_dk pair among the memory-bound, so
         * that --calibrate gave "elementwise" 0.09 of mem_bw */
        if (op == RT_OP_ATTENTION || op == RT_OP_ATTN_PROBS || op == RT_OP_EMBEDDING_GRAD ||
            (rt_attn_layout_operands(op) && op != RT_OP_ATTN_DELTA))
            return BC_OTHER;
    }
    return bc_kernel_bytes(k) < BC_SMALL_BYTES ? BC_SMALL : BC_BANDWIDTH;
}

static bool same_params(const rt_kernel *a, const rt_kernel *b)
{
    if (a->nin != b->nin || a->nout != b->nout)
        return false;
    for (int j = 0; j < a->nin + a->nout; j++)
        if (!rt_type_eq(&a->param_t[j], &b->param_t[j]))
            return false;
    return true;
}

static bool same_instr_types(const rt_instr *a, const rt_instr *b)
{
    return rt_type_eq(&a->in_t[0], &b->in_t[0]) && rt_type_eq(&a->in_t[1], &b->in_t[1]) &&
           rt_type_eq(&a->out_t, &b->out_t);
}

/* Whether item x times what y would: the same code on the same types. */
static bool same_launch(const rt_plan *p, const bc_item *x, const bc_item *y)
{
    if (x->stage != y->stage || x->cls != y->cls || (x->kernel < 0) != (y->kernel < 0))
        return false;
    const rt_program *g = &p->stage[x->stage];
    if (x->cls == BC_MATMUL) {
        if (!same_instr_types(&g->instr[x->instr], &g->instr[y->instr]))
            return false;
        if (x->kernel < 0)
            return true;
        const rt_kernel *a = &p->kernel[x->kernel], *b = &p->kernel[y->kernel];
        return a->epilogue == b->epilogue && same_params(a, b);
    }
    const rt_kernel *a = &p->kernel[x->kernel], *b = &p->kernel[y->kernel];
    return a->module == b->module && a->grid == b->grid && a->block == b->block &&
           a->shared_bytes == b->shared_bytes && same_params(a, b);
}

/* Appends it to v (n items, cap room) unless an earlier one is the same
 * launch, which counts it instead. false when out of memory. */
static bool add_item(const rt_plan *p, bc_item **v, int *n, int *cap, const bc_item *it)
{
    for (int i = 0; i < *n; i++)
        if (same_launch(p, &(*v)[i], it)) {
            (*v)[i].count++;
            return true;
        }
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        bc_item *w = realloc(*v, (size_t)c * sizeof *w);
        if (!w)
            return false;
        *v = w;
        *cap = c;
    }
    (*v)[(*n)++] = *it;
    return true;
}

/* Per instruction of stage s, the kernel holding it, or -1 (malloc'd;
 * NULL when out of memory). */
static int32_t *kernel_of(const rt_plan *p, int s)
{
    int n = p->stage[s].ninstr;
    int32_t *at = malloc(((size_t)n + 1) * sizeof *at);
    if (!at)
        return NULL;
    for (int i = 0; i < n; i++)
        at[i] = -1;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernel[k].stage == s)
            for (int j = 0; j < p->kernel[k].ninstr; j++)
                at[p->kernel[k].instr[j]] = k;
    return at;
}

/* The stage's matmuls in instruction order: matmul kernels (at their
 * matmul) and matmul instructions in no kernel. */
static bool select_matmuls(const rt_plan *p, int s, bc_item **v, int *n, int *cap)
{
    int32_t *at = kernel_of(p, s);
    if (!at)
        return false;
    const rt_program *g = &p->stage[s];
    bool ok = true;
    for (int i = 0; ok && i < g->ninstr; i++) {
        if (g->instr[i].op != RT_OP_MATMUL)
            continue;
        int32_t k = at[i];
        if (k >= 0 && p->kernel[k].strategy != RT_KS_MATMUL)
            continue; /* not one the backend runs through cuBLASLt */
        bc_item it = {.stage = s, .kernel = k, .instr = i, .count = 1, .cls = BC_MATMUL,
                      .flops = bc_matmul_flops(&g->instr[i])};
        it.bytes = k >= 0 ? bc_kernel_bytes(&p->kernel[k])
                          : rt_type_bytes(&g->instr[i].in_t[0]) +
                                rt_type_bytes(&g->instr[i].in_t[1]) +
                                rt_type_bytes(&g->instr[i].out_t);
        ok = add_item(p, v, n, cap, &it);
    }
    free(at);
    return ok;
}

int bc_select(const rt_plan *p, bc_item **items)
{
    bc_item *v = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    for (int s = 0; ok && s < p->nstages; s++) {
        for (int k = 0; ok && k < p->nkernels; k++) {
            const rt_kernel *kr = &p->kernel[k];
            if (kr->stage != s || kr->strategy == RT_KS_MATMUL)
                continue;
            bc_item it = {.stage = s, .kernel = k, .instr = kr->instr[kr->ninstr - 1],
                          .count = 1, .cls = (uint8_t)bc_kernel_class(p, kr),
                          .bytes = bc_kernel_bytes(kr)};
            ok = add_item(p, &v, &n, &cap, &it);
        }
        ok = ok && select_matmuls(p, s, &v, &n, &cap);
    }
    if (!ok) {
        free(v);
        return -1;
    }
    *items = v;
    return n;
}

/* The bound buf's i32 values need among instructions instr[0..n) of
 * stage g, through copies up to depth levels. */
static int64_t bound_in(const rt_program *g, const int32_t *instr, int n, int32_t buf, int depth)
{
    int64_t bound = BC_ID_FREE;
    for (int i = 0; i < n; i++) {
        const rt_instr *in = &g->instr[instr[i]];
        for (int j = 0; j < in->nin; j++) {
            if (in->in[j] != buf || in->in_t[j].dtype != RT_I32)
                continue;
            int64_t b = BC_ID_FREE;
            if (in->op == RT_OP_EMBEDDING && j == 1)
                b = in->in_t[0].dim[0];
            else if ((in->op == RT_OP_XENT || in->op == RT_OP_XENT_GRAD) && j == 1)
                b = in->in_t[0].dim[in->in_t[0].rank - 1];
            else if (in->op == RT_OP_EMBEDDING_GRAD && j == 0)
                b = in->out_t.dim[0];
            else if (in->op == RT_OP_COPY && depth > 0 && in->out != buf)
                b = bound_in(g, instr, n, in->out, depth - 1);
            if (b < bound)
                bound = b;
        }
    }
    return bound;
}

int64_t bc_id_bound(const rt_plan *p, const rt_kernel *k, int32_t buf)
{
    return bound_in(&p->stage[k->stage], k->instr, k->ninstr, buf, 8);
}

/* splitmix64: a well-mixed 64-bit value of x. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

void bc_fill(void *dst, const rt_type *t, int64_t bound, uint64_t seed)
{
    int64_t n = rt_type_numel(t);
    uint64_t base = mix(seed);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = mix(base ^ (uint64_t)i);
        /* 0.5 + r/128, r < 64: six bits of mantissa, exact in bf16 too */
        float f = 0.5f + (float)(r % 64) / 128.0f;
        switch (t->dtype) {
        case RT_F32: ((float *)dst)[i] = f; break;
        case RT_F16: ((uint16_t *)dst)[i] = su_f32_to_f16(f); break;
        case RT_BF16: ((uint16_t *)dst)[i] = su_f32_to_bf16(f); break;
        case RT_I32: ((int32_t *)dst)[i] = (int32_t)(r % (uint64_t)(bound > 0 ? bound : 1)); break;
        default: break;
        }
    }
}

const char *bc_epilogue_name(unsigned bits, char *buf, size_t n)
{
    static const char *const names[] = {"bias", "residual", "relu", "gelu"};
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 4; i++)
        if (bits & (1u << i))
            used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s",
                                     used ? "+" : "", names[i]);
    if (!used)
        snprintf(buf, n, "none");
    return buf;
}

const char *bc_bytes_str(int64_t bytes, char *buf, size_t n)
{
    if (bytes >= (1 << 30))
        snprintf(buf, n, "%.2f GiB", (double)bytes / (1 << 30));
    else if (bytes >= (1 << 20))
        snprintf(buf, n, "%.2f MiB", (double)bytes / (1 << 20));
    else if (bytes >= (1 << 10))
        snprintf(buf, n, "%.1f KiB", (double)bytes / (1 << 10));
    else
        snprintf(buf, n, "%" PRId64 " B", bytes);
    return buf;
}

/* ---- the report ---- */

/* GB/s (1e9 bytes) of bytes moved in us microseconds. */
static double gbs(int64_t bytes, double us)
{
    return us > 0 ? (double)bytes / (us * 1e3) : 0;
}

static double tflops(double flops, double us)
{
    return us > 0 ? flops / (us * 1e6) : 0;
}

void bc_tally_add(bc_tally *t, const bc_result *r, double copy_gbs)
{
    for (int i = 0; i < r->nitems; i++) {
        const bc_item *it = &r->item[i];
        bool ok;
        switch (it->cls) {
        case BC_BANDWIDTH:
            ok = copy_gbs > 0 && gbs(it->bytes, it->us) >= BC_BW_GOAL * copy_gbs;
            t->bw++, t->bw_ok += ok, t->bw_plan += it->count, t->bw_plan_ok += ok * it->count;
            break;
        case BC_SMALL: t->small++; break;
        case BC_OTHER: t->other++; break;
        case BC_MATMUL:
            if (r->plan->stage[it->stage].instr[it->instr].dim & RT_MM_PARTS)
                break; /* a matmul of parts: no one call of cuBLASLt to compare */
            ok = it->us > 0 && it->ref_us / it->us >= BC_MM_GOAL;
            t->mm++, t->mm_ok += ok, t->mm_plan += it->count, t->mm_plan_ok += ok * it->count;
            break;
        default: break;
        }
    }
}

/* The ops of kernel k, each once in order of first use: "add, gelu"
 * (an optimizer's kernel over 18 params is "adam_m, adam_v, adamw"). */
static const char *ops_of(const rt_plan *p, const rt_kernel *k, char *buf, size_t n)
{
    const rt_program *g = &p->stage[k->stage];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->ninstr && used < n; i++) {
        int op = g->instr[k->instr[i]].op;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = g->instr[k->instr[j]].op == op;
        if (!seen)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
                                     rt_ops[op].name);
    }
    return buf;
}

/* One row of a memory-bound table; with the goal's flag when goal. */
static void kernel_row(FILE *f, const bc_result *r, const bc_item *it, double copy_gbs, bool goal)
{
    const rt_kernel *k = &r->plan->kernel[it->kernel];
    char bytes[32], ops[160];
    double bw = gbs(it->bytes, it->us), frac = copy_gbs > 0 ? bw / copy_gbs : 0;
    fprintf(f, "| %d | %s | %s | %s | %d | %" PRId64 " x %d | %s | %.2f | %.1f | %.2f |", it->stage,
            k->name, rt_kernel_strategy_name(k->strategy), ops_of(r->plan, k, ops, sizeof ops),
            it->count, k->grid, k->block, bc_bytes_str(it->bytes, bytes, sizeof bytes), it->us,
            bw, frac);
    if (goal)
        fprintf(f, " %s |", frac >= BC_BW_GOAL ? "ok" : "**below 0.85**");
    fputc('\n', f);
}

static void kernel_table(FILE *f, const bc_result *r, double copy_gbs, int cls, const char *title)
{
    int n = 0;
    for (int i = 0; i < r->nitems; i++)
        n += r->item[i].cls == cls;
    if (!n)
        return;
    bool goal = cls == BC_BANDWIDTH;
    fprintf(f, "### %s\n\n", title);
    fprintf(f, "| stage | kernel | strategy | ops | x | grid x block | bytes | us | GB/s | "
               "of copy |%s\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |%s\n",
            goal ? " goal 0.85 |" : "", goal ? " --- |" : "");
    for (int i = 0; i < r->nitems; i++)
        if (r->item[i].cls == cls)
            kernel_row(f, r, &r->item[i], copy_gbs, goal);
    fputc('\n', f);
}

/* "4 x 32 x 2048 x 1024" (batch, M, N, K). */
static void matmul_row(FILE *f, const bc_result *r, const bc_item *it)
{
    const rt_instr *mm = &r->plan->stage[it->stage].instr[it->instr];
    bc_mm s;
    bc_matmul_shape(mm, &s);
    char name[80], epi[64];
    if (it->kernel >= 0)
        snprintf(name, sizeof name, "%s", r->plan->kernel[it->kernel].name);
    else
        snprintf(name, sizeof name, "instruction %d", it->instr);
    double rt = tflops(it->flops, it->us), ref = tflops(it->flops, it->ref_us);
    double ratio = it->us > 0 ? it->ref_us / it->us : 0;
    if (mm->dim & RT_MM_PARTS) { /* three calls: no one call of cuBLASLt to compare */
        fprintf(f, "| %d | %s | %d | %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64
                   " | f32 as bf16 parts | %s | %.3g | %.2f | %.1f | - | - | - | parts |\n",
                it->stage, name, it->count, s.batch, s.m, s.n, s.k / 3,
                bc_epilogue_name(it->kernel >= 0 ? r->plan->kernel[it->kernel].epilogue : 0, epi,
                                 sizeof epi),
                it->flops, it->us, rt);
        return;
    }
    fprintf(f, "| %d | %s | %d | %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64
               " | %s | %s | %.3g | %.2f | %.1f | %.2f | %.1f | %.2f | %s |\n",
            it->stage, name, it->count, s.batch, s.m, s.n, s.k, rt_dtype_name(mm->in_t[0].dtype),
            bc_epilogue_name(it->kernel >= 0 ? r->plan->kernel[it->kernel].epilogue : 0, epi,
                             sizeof epi),
            it->flops, it->us, rt, it->ref_us, ref, ratio,
            ratio >= BC_MM_GOAL ? "ok" : "**below 0.95**");
}

void bc_report_plan(FILE *f, const bc_result *r, double copy_gbs)
{
    fprintf(f, "## %s --mesh %s\n\n", r->model, r->mesh);
    fprintf(f, "%s; %" PRId64 " rank%s, %d stage%s, %d kernels; %d launches timed (kernels "
               "and matmuls: the same launch in several places is timed once, x says how "
               "many)\n\n",
            r->plan->loss >= 0 ? "A training step" : "Inference", rt_plan_ranks(r->plan),
            rt_plan_ranks(r->plan) > 1 ? "s" : "", r->plan->nstages,
            r->plan->nstages > 1 ? "s" : "",
            r->plan->nkernels, r->nitems);
    kernel_table(f, r, copy_gbs, BC_BANDWIDTH, "Memory-bound kernels (goal: 0.85 of the copy "
                 "bandwidth)");
    kernel_table(f, r, copy_gbs, BC_SMALL, "Small kernels (under 1 MiB moved; not counted)");
    kernel_table(f, r, copy_gbs, BC_OTHER, "Kernels not memory-bound (single block, attention, "
                 "embedding_grad; not counted)");
    int n = 0;
    for (int i = 0; i < r->nitems; i++)
        n += r->item[i].cls == BC_MATMUL;
    if (!n)
        return;
    fprintf(f, "### Matmuls (goal: 0.95 of cuBLAS)\n\n");
    fprintf(f, "| stage | matmul | x | batch x M x N x K | dtype | epilogue | FLOP | runtime us | "
               "TFLOP/s | cuBLAS us | TFLOP/s | ratio | goal 0.95 |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < r->nitems; i++)
        if (r->item[i].cls == BC_MATMUL)
            matmul_row(f, r, &r->item[i]);
    fputc('\n', f);
    if (!r->x3)
        return;
    fprintf(f, "### f32 matmuls as bf16 parts (--x3)\n\n"
               "Each f32 operand split into three bf16 parts and the six products of parts "
               "whose ranks sum to at most 2, as three cuBLASLt calls of bf16 operands and an "
               "f32 result (runtime/cuda/cuda_blas.h: rt_blas_matmul_x3). speedup: the f32 "
               "matmul's time over the parts' (split included). Errors: the largest of 64 "
               "sampled results without the epilogue, against a double dot product, over "
               "sum |a_ik b_kj|, in units of 2^-24.\n\n"
               "| stage | matmul | x | batch x M x N x K | f32 us | split + 3 calls us | "
               "3 calls us | speedup | f32 error | parts' error |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < r->nitems; i++) {
        const bc_item *it = &r->item[i];
        if (it->cls != BC_MATMUL || it->x3_us <= 0)
            continue;
        bc_mm s;
        bc_matmul_shape(&r->plan->stage[it->stage].instr[it->instr], &s);
        char name[80];
        if (it->kernel >= 0)
            snprintf(name, sizeof name, "%s", r->plan->kernel[it->kernel].name);
        else
            snprintf(name, sizeof name, "instruction %d", it->instr);
        fprintf(f, "| %d | %s | %d | %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64
                   " | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f |\n",
                it->stage, name, it->count, s.batch, s.m, s.n, s.k, it->us, it->x3_us,
                it->x3_mm_us, it->us / it->x3_us, it->err_f32, it->err_x3);
    }
    fputc('\n', f);
}

static void report_head(FILE *f, const bc_machine *m)
{
    char mem[32], l2[32], flush[32], copy[32];
    fprintf(f, "# Kernels against the copy bandwidth, matmuls against cuBLAS\n\n");
    fprintf(f, "GPU: %s (sm_%d, %d SMs, %s, L2 %s); CUDA driver API %d.%d%s%s; NVRTC %d.%d; "
               "cuBLASLt %ld. Date: %s.\n\n",
            m->gpu, m->cc, m->sms, bc_bytes_str(m->mem_bytes, mem, sizeof mem),
            bc_bytes_str(m->l2_bytes, l2, sizeof l2), m->cuda_driver / 1000,
            m->cuda_driver % 1000 / 10, *m->nvidia_driver ? ", kernel driver " : "",
            m->nvidia_driver, m->nvrtc_major, m->nvrtc_minor, m->cublaslt, m->date);
    fprintf(f, "Copy bandwidth: **%.1f GB/s** (cuMemcpyDtoDAsync of %s, the median of %d, "
               "counted as read + write: 2 x size / time; GB = 1e9 bytes).\n\n",
            m->copy_gbs, bc_bytes_str(m->copy_bytes, copy, sizeof copy), m->repeat);
    fprintf(f, "Each launch: its inputs filled with valid data (floats in [0.5, 1), ids in "
               "range), %s read by a kernel of its own before each launch (so the L2 holds "
               "none of its data), timed alone with events; the median of %d after 3 untimed. "
               "A kernel's bytes: each parameter read once plus each stored value written "
               "once, of its parameter types; GB/s = bytes / time; \"of copy\" = that over "
               "the copy bandwidth. Under %s moved a kernel is reported apart and not held to "
               "the goal. A matmul's FLOP: 2 M N K per batch (the epilogue not counted); "
               "\"runtime\" is rt_blas_matmul with the plan's epilogue, as the cuda backend "
               "calls it (descriptors and the heuristic per call, no workspace); \"cuBLAS\" "
               "is cublasLtMatmul on the same shape, dtype, layout and epilogue with its "
               "descriptors made once and the heuristic's first algorithm for a 32 MiB "
               "workspace; ratio = cuBLAS time / runtime time.\n\n",
            bc_bytes_str(m->flush_bytes, flush, sizeof flush), m->repeat,
            bc_bytes_str(BC_SMALL_BYTES, copy, sizeof copy));
}

void bc_report(FILE *f, const bc_machine *m, const bc_result *r, int nr)
{
    report_head(f, m);
    bc_tally t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < nr; i++) {
        bc_report_plan(f, &r[i], m->copy_gbs);
        bc_tally_add(&t, &r[i], m->copy_gbs);
    }
    fprintf(f, "## Summary\n\n");
    fprintf(f, "- memory-bound kernels at >= 0.85 of the copy bandwidth: %d of %d launches "
               "(%d of %d plan kernels)\n", t.bw_ok, t.bw, t.bw_plan_ok, t.bw_plan);
    fprintf(f, "- small kernels (under 1 MiB, not counted): %d; not memory-bound (not "
               "counted): %d\n", t.small, t.other);
    fprintf(f, "- matmuls at >= 0.95 of cuBLAS: %d of %d launches (%d of %d in the plans)\n",
            t.mm_ok, t.mm, t.mm_plan_ok, t.mm_plan);
}

/* ---- calibration ---- */

/* Operand i of attention instruction in as it computes on it (with
 * heads_inner, the stored [.., S, H, d] as [.., H, S, d]). */
static rt_type logical(const rt_instr *in, int i)
{
    return in->keepdims && i < rt_attn_layout_operands(in->op) ? rt_type_swap_heads(&in->in_t[i])
                                                                : in->in_t[i];
}

/* passes/cost.c's count for one attention instruction. */
static double attention_flops(const rt_instr *in)
{
    double in0 = (double)rt_type_numel(&in->in_t[0]);
    rt_type q = logical(in, 0), k = logical(in, 1);
    int r = q.rank;
    if (r < 2 || k.rank != r)
        return 0;
    double s = (double)q.dim[r - 2], d = (double)q.dim[r - 1], t = (double)k.dim[r - 2];
    double heads = in0 / (s * d);
    switch (in->op) {
    case RT_OP_ATTENTION: {
        rt_type v = logical(in, 2);
        return heads * s * t * (2 * (d + (double)v.dim[r - 1]) + 5);
    }
    case RT_OP_ATTN_PROBS: {
        double out = (double)rt_type_numel(&in->out_t);
        return 2 * out * (double)in->in_t[0].dim[in->in_t[0].rank - 1] + 5 * out;
    }
    case RT_OP_ATTN_LSE: return heads * s * t * (2 * d + 3);
    case RT_OP_ATTN_STATS: case RT_OP_ATTN_DQ: case RT_OP_ATTN_DK: case RT_OP_ATTN_DV: {
        double dv = (double)in->in_t[in->op == RT_OP_ATTN_DV ? 2 : 3].dim[r - 1];
        bool two = in->op == RT_OP_ATTN_STATS || in->op == RT_OP_ATTN_DV;
        return heads * s * t * (two ? 2 * (d + dv) + 5 : 4 * d + 2 * dv + 7);
    }
    default:
        return 0;
    }
}

/* passes/fuse.c's attn_tc_rows on a plan's attention instruction
 * (attention or an op of its backward): q, k, v (attn_dv: dy) and dy of
 * one dtype, 16-bit (f32: pass_attn_x3's, its parts on tensor cores), the
 * result too but for attn_stats' and attn_lse's, d and dv multiples of
 * 16 up to PASS_ATTN_TC_WIDTH (attn_lse has no v: its one width is q's). */
static bool tc_rows(const rt_instr *in, bool f32)
{
    int rows = rt_attn_layout_operands(in->op), dt = in->in_t[0].dtype, r = in->in_t[0].rank;
    bool own = in->op == RT_OP_ATTN_STATS || in->op == RT_OP_ATTN_LSE; /* f32 results */
    if (rows == 0 || in->op == RT_OP_ATTN_DELTA ||
        (f32 ? dt != RT_F32 : dt != RT_BF16 && dt != RT_F16) || in->nin < rows || r < 2 ||
        (!own && in->out_t.dtype != dt))
        return false;
    for (int i = 0; i < rows; i++)
        if (in->in_t[i].dtype != dt)
            return false;
    int64_t d = in->in_t[0].dim[r - 1];
    int64_t dv = in->op == RT_OP_ATTN_LSE ? d : in->in_t[2].dim[r - 1];
    return d > 0 && dv > 0 && d % 16 == 0 && dv % 16 == 0 && d <= PASS_ATTN_TC_WIDTH &&
           dv <= PASS_ATTN_TC_WIDTH;
}

/* The peak the estimate times attention instruction in on: shardc's
 * attention kernels compute in f32 FMAs, whatever the dtype
 * (codegen/README.md), but for the 16-bit ones that pass_attn_tensor_cores
 * puts on tensor cores and the f32 ones pass_attn_x3 puts there as parts. */
static bc_peak attention_peak(const rt_instr *in)
{
    return tc_rows(in, false) ? BC_PEAK_TC : tc_rows(in, true) ? BC_PEAK_PARTS : BC_PEAK_F32;
}

double bc_peak_flops(const bc_peaks *pk, bc_peak peak)
{
    return peak == BC_PEAK_TC ? pk->tc_flops : peak == BC_PEAK_PARTS ? pk->tc_flops / 6
                                                                     : pk->f32_flops;
}

double bc_attention_flops(const rt_plan *p, const rt_kernel *k, bc_peak *peak)
{
    const rt_program *g = &p->stage[k->stage];
    *peak = BC_PEAK_F32;
    /* an attention pair (passes/fuse.h): attn_dv's scores are attn_dk's,
     * so the kernel does attn_dk's work and p dy: 2 dv a pair of rows */
    if (k->ninstr == 2 && g->instr[k->instr[0]].op == RT_OP_ATTN_DV &&
        g->instr[k->instr[1]].op == RT_OP_ATTN_DK) {
        const rt_instr *dv = &g->instr[k->instr[0]], *dk = &g->instr[k->instr[1]];
        rt_type q = logical(dv, 0);
        int r = q.rank;
        double d = (double)q.dim[r - 1], w = (double)dv->in_t[2].dim[r - 1];
        double pairs = attention_flops(dv) / (2 * (d + w) + 5);
        *peak = attention_peak(dk);
        return attention_flops(dk) + pairs * 2 * w;
    }
    for (int i = 0; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        double f = attention_flops(in);
        if (f > 0) {
            *peak = attention_peak(in);
            return f;
        }
    }
    return 0;
}

static double fraction(double x)
{
    return !(x > 0) ? 0 : x > 1 ? 1 : x;
}

pass_kclass bc_kernel_kclass(const rt_plan *p, const rt_kernel *k)
{
    const rt_program *g = &p->stage[k->stage];
    pass_kclass kc = PASS_KC_ELEMENTWISE;
    for (int i = 0; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        pass_kclass c = pass_op_kclass(rt_ops[in->op].name, in->axis == in->in_t[0].rank - 1);
        kc = c > kc ? c : kc;
    }
    return kc;
}

typedef struct launch_sample {
    double s;  /* a small launch's time past its bytes at mem_bw */
    int n;     /* how often the plans run it */
} launch_sample;

static int by_s(const void *x, const void *y)
{
    double a = ((const launch_sample *)x)->s, b = ((const launch_sample *)y)->s;
    return (a > b) - (a < b);
}

/* The launch cost: the median, each launch counted as often as its plans
 * run it, of the small memory-bound launches' times (BC_SMALL: under
 * BC_SMALL_BYTES, a few tenths of a microsecond of bytes) past their
 * bytes at the full bandwidth; 0 without one. */
static double launch_cost(const bc_result *r, int nr, const bc_peaks *pk, int *count)
{
    int n = 0, total = 0;
    for (int j = 0; j < nr; j++)
        for (int i = 0; i < r[j].nitems; i++)
            n += r[j].item[i].cls == BC_SMALL && r[j].item[i].us > 0;
    launch_sample *v = n ? malloc((size_t)n * sizeof *v) : NULL;
    *count = 0;
    if (!v)
        return 0;
    n = 0;
    for (int j = 0; j < nr; j++)
        for (int i = 0; i < r[j].nitems; i++) {
            const bc_item *it = &r[j].item[i];
            if (it->cls != BC_SMALL || !(it->us > 0))
                continue;
            v[n++] = (launch_sample){it->us * 1e-6 - (double)it->bytes / pk->mem_bw, it->count};
            total += it->count;
        }
    qsort(v, (size_t)n, sizeof *v, by_s);
    double med = v[n - 1].s;
    for (int i = 0, seen = 0; i < n; i++) /* the first past half the launches */
        if ((seen += v[i].n) * 2 > total) {
            med = v[i].s;
            break;
        }
    free(v);
    *count = total;
    return med > 0 ? med : 0;
}

void bc_calibrate(const bc_result *r, int nr, const bc_peaks *pk, bc_calibration *c)
{
    enum { BINS = 40 }; /* half decades from 1 FLOP: 1e20 at most */
    double mem_bytes = 0, mem_s = 0, attn_work = 0, attn_s = 0;
    double class_bytes[PASS_KC_COUNT] = {0}, class_s[PASS_KC_COUNT] = {0};
    double bin_work[BINS] = {0}, bin_s[BINS] = {0}, bin_log[BINS] = {0}, bin_n[BINS] = {0};
    memset(c, 0, sizeof *c);
    c->launch_s = launch_cost(r, nr, pk, &c->launch_n);
    double launch = c->launch_s > 0 ? c->launch_s : pk->launch_s;
    for (int j = 0; j < nr; j++)
        for (int i = 0; i < r[j].nitems; i++) {
            const bc_item *it = &r[j].item[i];
            double s = it->us * 1e-6 - launch, n = it->count;
            if (!(it->us > 0))
                continue;
            if (s < 1e-9)
                s = 1e-9; /* no faster than its launch: the work is all but free */
            const rt_plan *p = r[j].plan;
            if (it->cls == BC_BANDWIDTH) {
                mem_bytes += n * (double)it->bytes;
                mem_s += n * s;
                c->mem_n += it->count;
                if (it->kernel >= 0) {
                    pass_kclass kc = bc_kernel_kclass(p, &p->kernel[it->kernel]);
                    class_bytes[kc] += n * (double)it->bytes;
                    class_s[kc] += n * s;
                    c->class_n[kc] += it->count;
                }
            } else if (it->cls == BC_MATMUL && it->flops > 0 &&
                       !(p->stage[it->stage].instr[it->instr].dim & RT_MM_PARTS)) {
                int dt = p->stage[it->stage].instr[it->instr].in_t[0].dtype;
                double peak = dt == RT_F16 || dt == RT_BF16 ? pk->tc_flops : pk->f32_flops;
                int b = (int)floor(2 * log10(it->flops));
                b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;
                bin_work[b] += n * it->flops / peak;
                bin_s[b] += n * s;
                bin_log[b] += n * log(it->flops);
                bin_n[b] += n;
                c->mm_n += it->count;
            } else if (it->cls == BC_OTHER && it->kernel >= 0) {
                bc_peak peak;
                double f = bc_attention_flops(p, &p->kernel[it->kernel], &peak);
                if (f > 0) {
                    attn_work += n * f / bc_peak_flops(pk, peak);
                    attn_s += n * s;
                    c->attn_n += it->count;
                } else if (it->bytes >= BC_SMALL_BYTES) {
                    /* embedding_grad, a kernel of one block: its class's */
                    pass_kclass kc = bc_kernel_kclass(p, &p->kernel[it->kernel]);
                    class_bytes[kc] += n * (double)it->bytes;
                    class_s[kc] += n * s;
                    c->class_n[kc] += it->count;
                }
            }
        }
    if (mem_s > 0)
        c->mem_eff = fraction(mem_bytes / (pk->mem_bw * mem_s));
    if (attn_s > 0)
        c->attn_eff = fraction(attn_work / attn_s);
    for (int k = 0; k < PASS_KC_COUNT; k++)
        if (class_s[k] > 0)
            c->class_eff[k] = fraction(class_bytes[k] / (pk->mem_bw * class_s[k]));
    for (int b = 0; b < BINS && c->nmm < 16; b++)
        if (bin_n[b] > 0) {
            c->mm[c->nmm][0] = exp(bin_log[b] / bin_n[b]);
            c->mm[c->nmm][1] = fraction(bin_work[b] / bin_s[b]);
            c->nmm++;
        }
}

/* s as a JSON string's contents (quotes, backslashes and control
 * characters escaped). */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
}

void bc_write_profile(FILE *f, const pass_hw *base, const bc_calibration *c, const char *name,
                      const char *desc, const char *calibrated_by)
{
    fprintf(f, "{\n  \"name\": \"");
    json_str(f, name);
    fprintf(f, "\",\n  \"desc\": \"");
    json_str(f, desc);
    fprintf(f, "\",\n  \"calibrated_by\": \"");
    json_str(f, calibrated_by);
    fprintf(f, "\",\n");
    fprintf(f, "  \"tc_flops\": %.17g,\n  \"f32_flops\": %.17g,\n  \"mem_bw\": %.17g,\n",
            base->tc_flops, base->f32_flops, base->mem_bw);
    fprintf(f, "  \"intra_bw\": %.17g,\n  \"inter_bw\": %.17g,\n  \"node_gpus\": %d,\n",
            base->intra_bw, base->inter_bw, base->node_gpus);
    fprintf(f, "  \"launch_s\": %.17g,\n  \"intra_lat_s\": %.17g,\n  \"inter_lat_s\": %.17g,\n",
            c->launch_s > 0 ? c->launch_s : base->launch_s, base->intra_lat_s, base->inter_lat_s);
    fprintf(f, "  \"compute_eff\": %.17g,\n  \"mem_eff\": %.4f,\n  \"link_eff\": %.17g,\n",
            base->compute_eff, c->mem_eff > 0 ? c->mem_eff : base->mem_eff, base->link_eff);
    fprintf(f, "  \"mem_bytes\": %.17g", base->mem_bytes);
    if (c->nmm > 0) {
        fprintf(f, ",\n  \"matmul_eff\": [");
        for (int i = 0; i < c->nmm; i++)
            fprintf(f, "%s[%.4g, %.4f]", i ? ", " : "", c->mm[i][0], c->mm[i][1]);
        fprintf(f, "]");
    }
    if (c->attn_eff > 0)
        fprintf(f, ",\n  \"attention_eff\": %.4f", c->attn_eff);
    bool any = false;
    for (int k = 0; k < PASS_KC_COUNT; k++)
        if (c->class_eff[k] > 0) {
            fprintf(f, "%s\"%s\": %.4f", any ? ", " : ",\n  \"mem_eff_by_class\": {",
                    pass_kclass_name(k), c->class_eff[k]);
            any = true;
        }
    fprintf(f, "%s\n}\n", any ? "}" : "");
}
