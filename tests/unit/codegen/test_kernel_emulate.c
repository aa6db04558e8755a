/* test_kernel_emulate.c: the generated CUDA kernels compute what the CPU
 * backend computes, checked without a GPU. The kernels of a plan that
 * use no block-level cooperation (no __syncthreads, warp shuffle or
 * shared memory: the elementwise and multi-tensor groups, i32 arithmetic,
 * the optimizer updates, transpose, embedding, iota) are compiled as C++
 * for the host (c++, with the CUDA toolkit's cuda_fp16.h and cuda_bf16.h,
 * which have host code; no contraction into FMAs, as NVRTC is told) and
 * run thread by thread over their launch geometry from the plan, one
 * block after another. Each kernel's inputs get the same random bytes in
 * two arenas; the CPU backend runs the kernel's instructions one by one
 * (rt_cpu_run) in one, the emulated kernel runs in the other, and every
 * buffer the kernel writes must hold the same bits (NaN matching NaN).
 * Row and column reductions, cross_entropy and attention (which need a
 * block's threads at once) are not run here; their source compiles with
 * NVRTC in test_cuda_codegen.
 *
 * What this cannot see: races between threads and blocks (they run one
 * at a time), device rounding that differs from the host's (none for
 * these ops: IEEE f32 +, -, *, / and sqrt round alike; expf, logf, tanhf
 * and powf come from the host's libm on both sides here, CUDA's own to
 * within an ulp or two on a GPU), and alignment (the host does not trap).
 *
 * Needs NVRTC (the plans carry kernels) and a C++ compiler ($CXX, else
 * c++): without either it prints "skipped: ..." and exits 77.
 * $SHARDC_CUDA_INCLUDE overrides the CUDA headers' folder. */
#include "shardc.h"
#include "support/support.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cpu/cpu.h"
#include "runtime/plan/plan.h"
#include "check.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_kernel_emulate.XXXXXX";
static const char *cxx;
static int nrun; /* kernels emulated, over all models */

/* ---- the plan and its kernels' sources ---- */

typedef struct model {
    rt_plan *plan;
    char *cuda; /* --emit cuda */
} model;

/* Compiles path (text: its contents with " zero K over dp" appended to the
 * train line when zero > 0) on mesh with kernels for sm_80. */
static model compile(const char *path, const char *mesh, int zero)
{
    char out[4300], *e = NULL;
    su_status err;
    snprintf(out, sizeof out, "%s/plan", tmpdir);
    model md = {0};
    char *text = check_model_text(path, zero);
    CHECK(text != NULL);
    if (!text)
        return md;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    bool ok = shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK &&
              shardc_options_set_archs(opt, "sm_80", &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK &&
              shardc_compile_string(opt, path, text, strlen(text), &prog, &e) == SHARDC_OK &&
              shardc_program_save_plan(prog, out, &e) == SHARDC_OK &&
              shardc_program_emit(prog, "cuda", &md.cuda, NULL, &e) == SHARDC_OK;
    md.plan = ok ? rt_plan_load(out, &err) : NULL;
    if (!md.plan)
        fprintf(stderr, "  %s on %s: %s\n", path, mesh, e ? e : err.msg);
    CHECK(md.plan != NULL);
    unlink(out);
    free(text);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return md;
}

/* The source of kernel name in --emit cuda's text (malloc'd), or NULL:
 * from its "// NAME: " line to the next kernel's. */
static char *source_of(const char *cuda, const char *name)
{
    char head[160];
    snprintf(head, sizeof head, "\n// %s: ", name);
    const char *p = strstr(cuda, head);
    if (!p)
        return NULL;
    p++;
    const char *q = p + 1;
    for (;;) {
        q = strstr(q, "\n// k");
        if (!q || (q[5] >= '0' && q[5] <= '9'))
            break;
        q++;
    }
    size_t len = q ? (size_t)(q - p) : strlen(p);
    char *s = malloc(len + 1);
    memcpy(s, p, len);
    s[len] = 0;
    return s;
}

/* Whether a kernel's threads work alone (the emulator runs them so). */
static bool alone(const char *src)
{
    return !strstr(src, "__syncthreads") && !strstr(src, "__shfl") && !strstr(src, "__shared__");
}

/* ---- the host build of the kernels ---- */

static const char prelude[] =
    "#include <cmath>\n"
    "#include <cstddef>\n"
    "#include <cstdint>\n"
    "#include <cstring>\n"
    "#include <utility>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#undef __global__\n"
    "#define __global__\n"
    "#undef __launch_bounds__\n"
    "#define __launch_bounds__(...)\n"
    "struct emu_dim3 { unsigned x, y, z; };\n"
    "static emu_dim3 threadIdx, blockIdx, blockDim, gridDim;\n"
    "static float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }\n"
    "static int __float_as_int(float f) { int x; std::memcpy(&x, &f, 4); return x; }\n"
    "static float __uint_as_float(unsigned x) { float f; std::memcpy(&f, &x, 4); return f; }\n"
    "static unsigned __float_as_uint(float f) { unsigned x; std::memcpy(&x, &f, 4); return x; }\n"
    "// one thread at a time: atomics are plain read-modify-writes\n"
    "static unsigned long long atomicMax(unsigned long long *p, unsigned long long v)\n"
    "{ unsigned long long o = *p; if (v > o) *p = v; return o; }\n"
    "template <typename... A, std::size_t... I>\n"
    "static void emu_call(void (*f)(A...), void **p, std::index_sequence<I...>)\n"
    "{ f(static_cast<A>(p[I])...); }\n"
    "template <typename... A>\n"
    "static void emu_launch(void (*f)(A...), void **p, unsigned grid, unsigned block)\n"
    "{\n"
    "    gridDim = {grid, 1, 1};\n"
    "    blockDim = {block, 1, 1};\n"
    "    for (unsigned b = 0; b < grid; b++)\n"
    "        for (unsigned t = 0; t < block; t++) {\n"
    "            blockIdx = {b, 0, 0};\n"
    "            threadIdx = {t, 0, 0};\n"
    "            emu_call(f, p, std::index_sequence_for<A...>{});\n"
    "        }\n"
    "}\n";

/* Appends src without its #include lines. */
static void put_source(FILE *f, const char *src)
{
    for (const char *p = src; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (strncmp(p, "#include", 8))
            fwrite(p, 1, len, f);
        p += len;
    }
}

/* Builds the kernels k[0..n) (sources src[]) into one shared library,
 * each in a namespace of its own with a launcher emu_NAME; its handle. */
static void *build(const rt_plan *p, const int *k, char **src, int n)
{
    char cpp[4300], so[4300], cmd[13000];
    snprintf(cpp, sizeof cpp, "%s/kernels.cpp", tmpdir);
    snprintf(so, sizeof so, "%s/kernels.so", tmpdir);
    FILE *f = fopen(cpp, "w");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    fputs(prelude, f);
    for (int i = 0; i < n; i++) {
        const char *name = p->kernel[k[i]].name;
        fprintf(f, "namespace n_%s {\n", name);
        put_source(f, src[i]);
        fprintf(f, "}\nextern \"C\" void emu_%s(void **p, unsigned g, unsigned b)\n"
                   "{ emu_launch(n_%s::%s, p, g, b); }\n",
                name, name, name);
    }
    fclose(f);
    const char *inc = getenv("SHARDC_CUDA_INCLUDE");
    snprintf(cmd, sizeof cmd,
             "%s -std=c++14 -O1 -ffp-contract=off -fPIC -shared -w -I'%s' '%s' -o '%s'", cxx,
             inc ? inc : rt_nvrtc_default_include_path(), cpp, so);
    int rc = system(cmd);
    CHECK_INT(rc, 0);
    void *h = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (rc == 0 && !h)
        fprintf(stderr, "  dlopen: %s\n", dlerror());
    CHECK(rc != 0 || h != NULL);
    unlink(cpp);
    unlink(so);
    return h;
}

/* ---- running a kernel both ways ---- */

static uint64_t rng;

static uint32_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* Fills buffer bytes at a of type t: floats uniform in [0.25, 1.25) (so
 * that logs, square roots and adamw's second moments stay real), an f32
 * scalar (adamw's step) 3, i32 in 0..3 (ids and labels in range). */
static void fill(uint8_t *a, const rt_type *t)
{
    int64_t n = rt_type_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float f = t->rank == 0 ? 3.0f : 0.25f + (float)(next() % 4096) / 4096.0f;
        switch (t->dtype) {
        case RT_F32: memcpy(a + 4 * i, &f, 4); break;
        case RT_F16: ((uint16_t *)a)[i] = su_f32_to_f16(f); break;
        case RT_BF16: ((uint16_t *)a)[i] = su_f32_to_bf16(f); break;
        default: ((int32_t *)a)[i] = (int32_t)(next() % 4); break;
        }
    }
}

/* Whether two elements of dtype dt agree: the same bits, or both NaN;
 * with tol > 0, floats with |x - y| <= tol (|y| + 1). */
static bool same(const uint8_t *x, const uint8_t *y, int dt, double tol)
{
    float fa, fb;
    if (dt == RT_F32) {
        memcpy(&fa, x, 4);
        memcpy(&fb, y, 4);
    } else if (dt == RT_F16 || dt == RT_BF16) {
        uint16_t a, b;
        memcpy(&a, x, 2);
        memcpy(&b, y, 2);
        fa = dt == RT_F16 ? su_f16_to_f32(a) : su_bf16_to_f32(a);
        fb = dt == RT_F16 ? su_f16_to_f32(b) : su_bf16_to_f32(b);
    } else {
        return !memcmp(x, y, 4);
    }
    if (!memcmp(x, y, (size_t)rt_dtype_size(dt)) || (isnan(fa) && isnan(fb)))
        return true;
    return tol > 0 && fabs((double)fa - fb) <= tol * (fabs((double)fb) + 1);
}

/* An element's bits, for messages. */
static uint32_t word(const uint8_t *x, int64_t size)
{
    uint32_t w = 0;
    memcpy(&w, x, (size_t)size);
    return w;
}

typedef void (*launcher)(void **p, unsigned g, unsigned b);

/* Kernel ki of stage st: its inputs filled alike, the CPU's instructions
 * against the emulated kernel; false at the first differing element. */
static bool run_kernel(const rt_plan *p, int st, int ki, void *lib, const char *where)
{
    const rt_kernel *k = &p->kernel[ki];
    const rt_program *g = &p->stage[st];
    char sym[200];
    snprintf(sym, sizeof sym, "emu_%s", k->name);
    launcher run = (launcher)(uintptr_t)dlsym(lib, sym);
    CHECK(run != NULL);
    if (!run)
        return false;
    uint8_t *cpu = calloc(1, (size_t)g->arena_bytes + 16), *emu = calloc(1, (size_t)g->arena_bytes + 16);
    void **bufs = malloc((size_t)(g->nbuf + 1) * sizeof *bufs);
    void **params = malloc((size_t)(k->nin + k->nout + 1) * sizeof *params);
    for (int i = 0; i < k->nin; i++)
        fill(cpu + g->buf_offset[k->param[i]], &k->param_t[i]);
    memcpy(emu, cpu, (size_t)g->arena_bytes);
    rt_cpu_ctx ctx = {.axis_size = p->axis_size, .naxes = p->naxes};
    for (int b = 0; b < g->nbuf; b++)
        bufs[b] = cpu + g->buf_offset[b];
    su_status err = {SU_OK, ""};
    bool ok = true;
    for (int i = 0; i < k->ninstr && ok; i++)
        ok = rt_cpu_run(&ctx, &g->instr[k->instr[i]], bufs, &err) == 0;
    if (!ok)
        fprintf(stderr, "  %s: %s: the CPU backend failed: %s\n", where, k->name, err.msg);
    CHECK(ok);
    for (int i = 0; i < k->nin + k->nout; i++)
        params[i] = emu + g->buf_offset[k->param[i]];
    if (ok)
        run(params, (unsigned)k->grid, (unsigned)k->block);
    /* a column reduction sums in f32 in its own order, the CPU backend in
     * double: terms here are at most a few units (products of a few inputs
     * in [0.25, 1.25)), so n <= 1024 of them agree within n 2^-24 of the
     * terms' size, relative to the sum or absolute where they cancel;
     * every other kernel to the bit */
    double tol = k->strategy == RT_KS_ELEMENTWISE ? 0 : 1024 * 0x1p-24;
    for (int j = k->nin; ok && j < k->nin + k->nout; j++) {
        const rt_type *t = &k->param_t[j];
        int64_t n = rt_type_numel(t), es = rt_dtype_size(t->dtype);
        const uint8_t *a = cpu + g->buf_offset[k->param[j]], *b = emu + g->buf_offset[k->param[j]];
        for (int64_t e = 0; e < n; e++)
            if (!same(b + e * es, a + e * es, t->dtype, tol)) {
                fprintf(stderr, "  %s: kernel %s: parameter %d, element %lld differs from the CPU "
                                "backend's (bits %08x, CPU %08x)\n",
                        where, k->name, j, (long long)e, (unsigned)word(b + e * es, es),
                        (unsigned)word(a + e * es, es));
                ok = false;
                break;
            }
    }
    CHECK(ok);
    free(params);
    free(bufs);
    free(cpu);
    free(emu);
    return ok;
}

/* Every kernel of file (on mesh, ZeRO zero) that works thread by thread,
 * emulated. Returns how many ran; *multi counts the multi-tensor ones. */
static int check_model(const char *file, const char *mesh, int zero, int *multi)
{
    char path[4200], where[4400];
    snprintf(path, sizeof path, "%s/%s", check_repo_dir(), file);
    snprintf(where, sizeof where, "%s on %s%s", file, mesh, zero ? " with zero" : "");
    model md = compile(path, mesh, zero);
    if (!md.plan) {
        shardc_free(md.cuda);
        return 0;
    }
    const rt_plan *p = md.plan;
    int ran = 0;
    for (int st = 0; st < p->nstages; st++) {
        int *k = malloc((size_t)(p->nkernels + 1) * sizeof *k), n = 0;
        char **src = malloc((size_t)(p->nkernels + 1) * sizeof *src);
        for (int i = 0; i < p->nkernels; i++) {
            if (p->kernel[i].stage != st || p->kernel[i].module < 0)
                continue;
            char *s = source_of(md.cuda, p->kernel[i].name);
            CHECK(s != NULL);
            if (s && alone(s)) {
                k[n] = i;
                src[n++] = s;
            } else {
                free(s);
            }
        }
        void *lib = n ? build(p, k, src, n) : NULL;
        for (int i = 0; lib && i < n; i++) {
            ran += run_kernel(p, st, k[i], lib, where);
            *multi += strstr(src[i], "multi-tensor") != NULL;
        }
        if (lib)
            dlclose(lib);
        for (int i = 0; i < n; i++)
            free(src[i]);
        free(src);
        free(k);
    }
    rt_plan_free(md.plan);
    shardc_free(md.cuda);
    return ran;
}

/* A C++ compiler that runs: $CXX, else c++. */
static const char *find_cxx(void)
{
    const char *c = getenv("CXX");
    if (!c || !*c)
        c = "c++";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --version > /dev/null 2>&1", c);
    return system(cmd) == 0 ? c : NULL;
}

int main(void)
{
    if (!rt_nvrtc_available()) {
        printf("skipped: no NVRTC\n");
        return 77;
    }
    if (!(cxx = find_cxx())) {
        printf("skipped: no C++ compiler ($CXX or c++)\n");
        return 77;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rng = 0x5eed;
    int multi = 0;
    struct {
        const char *file, *mesh;
        int zero;
    } cases[] = {
        {"examples/mlp.sh", "2x2", 0},
        {"examples/transformer.sh", "2x2", 0},
        {"examples/transformer.sh", "4x1", 1},
        {"tests/models/mlp_bf16.sh", "2x2", 0},
        {"tests/models/mlp_bf16.sh", "4x1", 1},
        {"tests/models/mlp_bf16_momentum.sh", "2x2", 3},
        {"tests/models/vocab_parallel.sh", "2x2", 0},
        {"tests/lit/cuda/i32.ir", "1", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ran = check_model(cases[i].file, cases[i].mesh, cases[i].zero, &multi);
        CHECK(ran > 0);
        nrun += ran;
    }
    CHECK(multi >= 5);
    printf("%d kernels emulated, %d of them multi-tensor\n", nrun, multi);
    rmdir(tmpdir);
    return CHECK_DONE();
}
