/* test_cuda_codegen.c: the CUDA kernels compile with NVRTC (DESIGN.md §7,
 * "every kernel of every example compiles with NVRTC in CI"). No GPU is
 * needed, only NVRTC; a build without it prints "skipped: no NVRTC" and
 * exits 77, which ctest counts as skipped.
 *
 * - Every kernel `--emit cuda` prints for every example (each examples/X.sh,
 *   training steps included) on several meshes, for a bf16 and an f16
 *   model that uses every fusible op, and for tests/models/attn_bf16.sh's
 *   and attn_tiles.sh's attention, compiles for sm_80 and sm_90 to
 *   non-empty cubins (ELF files) and to PTX that defines the kernel.
 *   Kernels that are the same code but for their names (the layers of a
 *   transformer) are compiled once.
 * - A broken source fails with a message naming the kernel and quoting
 *   NVRTC's log.
 * - The disk cache: a second compile is all hits with the same bytes; a
 *   corrupted or truncated entry is a miss and is rewritten.
 *
 * The cache lives in a fresh temporary folder, removed at the end.
 * $SHARDC_CUDA_INCLUDE overrides the CUDA headers' folder. With
 * $SHARDC_TEST_CODEGEN_ONLY set (CI's sanitizer stage, after the first
 * stage ran this test whole), the models' kernels are generated and
 * checked as text but not compiled: NVRTC is not instrumented, and
 * compiling them again under the sanitizers took 3.5 minutes. */
#include "shardc.h"
#include "runtime/cuda/nvrtc.h"
#include "check.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static jmp_buf oom;
static rt_nvrtc_options nvrtc_opts;
static bool codegen_only; /* $SHARDC_TEST_CODEGEN_ONLY: the models' kernels not compiled */

/* ---- kernels as --emit cuda prints them ---- */

/* Whether line at p is a kernel's first line: "// k<digits>_<name>: ". */
static bool kernel_start(const char *p)
{
    if (strncmp(p, "// k", 4) || p[4] < '0' || p[4] > '9')
        return false;
    const char *q = p + 4;
    while (*q >= '0' && *q <= '9')
        q++;
    return *q == '_';
}

/* The source s with comments dropped, the kernel's name as K and every
 * generated identifier (p_, v_, l_, s_, step_, vscale_) renamed in order
 * of appearance, so that kernels differing only in names compare equal. */
static char *normalise(const char *s, const char *name)
{
    su_buf out;
    su_buf_init(&out, &oom);
    const char *seen[512];
    size_t seenlen[512];
    int nseen = 0;
    while (*s) {
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        bool start = (*s == '_' || (*s | 32) >= 'a') && (*s | 32) <= 'z';
        if (!start) {
            su_buf_putc(&out, *s++);
            continue;
        }
        const char *t = s;
        while (*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9'))
            s++;
        size_t n = (size_t)(s - t);
        static const char *const prefix[] = {"p_", "v_", "l_", "s_", "step_", "vscale_"};
        bool gen = false;
        for (int i = 0; i < 6; i++)
            gen |= n > strlen(prefix[i]) && !strncmp(t, prefix[i], strlen(prefix[i]));
        if (n == strlen(name) && !strncmp(t, name, n)) {
            su_buf_putc(&out, 'K');
        } else if (gen) {
            int k = 0;
            while (k < nseen && !(seenlen[k] == n && !strncmp(seen[k], t, n)))
                k++;
            if (k == nseen && nseen < 512) {
                seen[nseen] = t;
                seenlen[nseen++] = n;
            }
            su_buf_printf(&out, "id%d", k);
        } else {
            su_buf_put(&out, t, n);
        }
    }
    return su_buf_take(&out);
}

typedef struct tally {
    int kernels, distinct, compiled;
    char **norm;            /* the distinct kernels' normal forms */
    int cap;
} tally;

static bool seen_before(tally *t, char *norm)
{
    for (int i = 0; i < t->distinct; i++)
        if (!strcmp(t->norm[i], norm))
            return true;
    if (t->distinct == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->norm = realloc(t->norm, (size_t)t->cap * sizeof *t->norm);
        if (!t->norm)
            abort();
    }
    t->norm[t->distinct++] = norm;
    return false;
}

/* Compiles one kernel and checks what comes back. */
static void compile_kernel(const char *name, const char *src, const char *where)
{
    su_buf err;
    su_buf_init(&err, &oom);
    rt_nvrtc_output out;
    bool ok = rt_nvrtc_compile(name, src, &nvrtc_opts, &out, &err);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "  %s: %s\n--- source ---\n%s\n", where, err.s, src);
    } else {
        CHECK_INT(out.narchs, 2);
        for (int i = 0; i < out.narchs; i++) {
            CHECK(out.cubin_len[i] > 64);
            CHECK(!memcmp(out.cubin[i], "\x7f" "ELF", 4));
        }
        CHECK_INT(out.ptx_arch, 90);
        CHECK(out.ptx_len > 0 && strstr(out.ptx, ".target sm_90"));
        CHECK(strstr(out.ptx, name) != NULL);
        CHECK(out.log == NULL || out.cache_hits > 0); /* generated code compiles cleanly */
        if (out.log)
            fprintf(stderr, "  %s: %s: NVRTC warns:\n%s\n--- source ---\n%s\n", where, name,
                    out.log, src);
    }
    rt_nvrtc_output_free(&out);
    su_buf_free(&err);
}

/* Splits the text of --emit cuda into kernels and compiles each distinct
 * one. */
static void compile_emitted(const char *text, const char *where, tally *t)
{
    const char *p = text;
    int before = t->kernels;
    while ((p = strstr(p, "\n// k"))) {
        p++;
        if (!kernel_start(p))
            continue;
        const char *end = p + 1;
        while ((end = strstr(end, "\n// ")) && !kernel_start(end + 1) &&
               strncmp(end + 1, "// ---- stage", 13))
            end++;
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        char *src = malloc(len + 1), name[128];
        if (!src)
            abort();
        memcpy(src, p, len);
        src[len] = 0;
        sscanf(src + 3, "%127[A-Za-z0-9_]", name);
        t->kernels++;
        CHECK(strstr(src, "// launch: grid (") != NULL);
        CHECK(strstr(src, "__global__ void __launch_bounds__(") != NULL);
        char *norm = normalise(src, name);
        if (!seen_before(t, norm)) {
            if (!codegen_only) {
                compile_kernel(name, src, where);
                t->compiled++;
            }
        } else {
            free(norm);
        }
        free(src);
        p += len - 1;
    }
    CHECK(t->kernels > before); /* every model here has something to fuse */
}

/* Compiles a model (a file, or text when text is not NULL) on a mesh and
 * compiles its kernels. */
static const char *f32_matmul; /* check_model's --f32-matmul mode, or NULL */

static void check_model(const char *path, const char *text, const char *mesh, const char *define,
                        tally *t)
{
    shardc_options *opt = shardc_options_new();
    char *err = NULL, *cuda = NULL;
    CHECK(shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK);
    if (f32_matmul)
        CHECK(shardc_options_set_f32_matmul(opt, f32_matmul, &err) == SHARDC_OK);
    if (define)
        CHECK(shardc_options_define(opt, define, 2, &err) == SHARDC_OK);
    shardc_program *prog = NULL;
    shardc_status st = text ? shardc_compile_string(opt, path, text, strlen(text), &prog, &err)
                            : shardc_compile_file(opt, path, &prog, &err);
    CHECK(st == SHARDC_OK);
    if (st == SHARDC_OK) {
        CHECK(shardc_program_emit(prog, "cuda", &cuda, NULL, &err) == SHARDC_OK);
        char where[512];
        snprintf(where, sizeof where, "%s on %s", path, mesh);
        if (cuda)
            compile_emitted(cuda, where, t);
    } else {
        fprintf(stderr, "  %s: %s\n", path, err ? err : "?");
    }
    shardc_free(cuda);
    shardc_free(err);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

/* Every fusible op, row and column reductions, casts through i32, a loss
 * and adamw: in bf16, and with f16 in its place. */
static const char half_model[] =
    "mesh dp\n"
    "let B = 8, D = 64, V = 32\n"
    "input  x   : bf16[B, D] shard(dp, _)\n"
    "input  lab : i32[B]     shard(dp)\n"
    "param  w   : bf16[D, V] = normal(0.02)\n"
    "param  g   : bf16[D]    = ones\n"
    "param  b   : bf16[D]    = zeros\n"
    "h      = layernorm(x, g, b)\n"
    "r      = rmsnorm(h, g)\n"
    "a      = silu(r) * sigmoid(r) + tanh(r) - abs(r) / sqrt(exp(r) + 1)\n"
    "logits = gelu(a @ w)\n"
    "p      = softmax(logits, axis = 0)\n"
    "s      = sum(p, axis = 1)\n"
    "mx     = amax(logits, axis = 1, keepdims = true)\n"
    "mn     = mean(logits, axis = 0)\n"
    "c      = cast(logits - mx, f32)\n"
    "ci     = cast(c * 100, i32)\n"
    "cf     = cast(ci, bf16)\n"
    "e      = max(cf, min(logits, pow(relu(logits), -logits))) + rsqrt(log(exp(logits) + 2))\n"
    "loss   = cross_entropy(logits, lab) + mse(e, logits)\n"
    "output s, mn, e, loss\n"
    "train loss with adamw(lr = 1e-3)\n";

static void test_models(void)
{
    tally t = {0};
    char path[4400];
    static const struct {
        const char *file, *mesh, *define;
    } runs[] = {
        {"mlp.sh", "1x1", NULL},           {"mlp.sh", "2x2", NULL},
        {"transformer.sh", "1x1", "L"},    {"transformer.sh", "2x2", "L"},
        {"pipeline.sh", "2x2x2", NULL},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), runs[i].file);
        check_model(path, NULL, runs[i].mesh, runs[i].define, &t);
    }
    /* 16-bit attention on tensor cores, forward and backward (the examples
     * are f32): its kernels of query rows with the tiles copied by
     * cp.async, the pairs, and those of heads of 128 that stage them */
    static const char *const attn[] = {"attn_bf16.sh", "attn_tiles.sh"};
    for (size_t i = 0; i < sizeof attn / sizeof attn[0]; i++) {
        snprintf(path, sizeof path, "%s/tests/models/%s", check_repo_dir(), attn[i]);
        check_model(path, NULL, "1", NULL, &t);
    }
    /* f32 matmuls as bf16 parts: the split kernels, 4 elements a thread
     * and (parts_odd.sh) one */
    f32_matmul = "bf16x3";
    snprintf(path, sizeof path, "%s/examples/mlp.sh", check_repo_dir());
    check_model(path, NULL, "2x2", NULL, &t);
    snprintf(path, sizeof path, "%s/tests/models/parts_odd.sh", check_repo_dir());
    check_model(path, NULL, "1", NULL, &t);
    f32_matmul = NULL;
    char *f16 = strdup(half_model);
    for (char *q = f16; (q = strstr(q, "bf16")); q++)
        memcpy(q, " f16", 4);
    check_model("half-bf16.sh", half_model, "2", NULL, &t);
    check_model("half-f16.sh", f16, "2", NULL, &t);
    free(f16);
    printf("kernels: %d, distinct: %d, compiled: %d%s\n", t.kernels, t.distinct, t.compiled,
           codegen_only ? " ($SHARDC_TEST_CODEGEN_ONLY: generated, not compiled)" : "");
    CHECK(codegen_only ? t.compiled == 0 : t.compiled == t.distinct);
    for (int i = 0; i < t.distinct; i++)
        free(t.norm[i]);
    free(t.norm);
}

/* ---- errors and the cache ---- */

static void test_broken_source(void)
{
    su_buf err;
    su_buf_init(&err, &oom);
    rt_nvrtc_output out;
    const char *src = "extern \"C\" __global__ void kbroken(float *p)\n"
                      "{\n    p[0] = undefined_thing;\n}\n";
    CHECK(!rt_nvrtc_compile("kbroken", src, &nvrtc_opts, &out, &err));
    CHECK(err.s && strstr(err.s, "kernel kbroken: NVRTC cannot compile it for sm_80"));
    CHECK(err.s && strstr(err.s, "undefined_thing")); /* the log, quoted */
    CHECK(out.cubin[0] == NULL && out.ptx == NULL);
    if (err.s && !strstr(err.s, "undefined_thing"))
        fprintf(stderr, "  got: %s\n", err.s);
    rt_nvrtc_output_free(&out);
    su_buf_free(&err);
}

static bool same_output(const rt_nvrtc_output *a, const rt_nvrtc_output *b)
{
    if (a->narchs != b->narchs || a->ptx_len != b->ptx_len || memcmp(a->ptx, b->ptx, a->ptx_len))
        return false;
    for (int i = 0; i < a->narchs; i++)
        if (a->cubin_len[i] != b->cubin_len[i] || memcmp(a->cubin[i], b->cubin[i], a->cubin_len[i]))
            return false;
    return true;
}

/* The path of the cache's one entry ending in suffix. */
static bool find_entry(const char *dir, const char *suffix, char *path, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        size_t len = strlen(e->d_name), k = strlen(suffix);
        if (len > k && !strcmp(e->d_name + len - k, suffix)) {
            snprintf(path, n, "%s/%s", dir, e->d_name);
            found = true;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Flips a byte near the end of the file (the payload), or truncates it. */
static void damage(const char *path, bool truncate_it)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    if (truncate_it) {
        CHECK(ftruncate(fileno(f), size / 2) == 0);
    } else {
        fseek(f, size - 10, SEEK_SET);
        int c = fgetc(f);
        fseek(f, size - 10, SEEK_SET);
        fputc(c ^ 0x5a, f);
    }
    fclose(f);
}

static bool compile_to(const char *src, const rt_nvrtc_options *o, rt_nvrtc_output *out)
{
    su_buf err;
    su_buf_init(&err, &oom);
    bool ok = rt_nvrtc_compile("kcache", src, o, out, &err);
    if (!ok)
        fprintf(stderr, "  cache test: %s\n", err.s);
    su_buf_free(&err);
    return ok;
}

static void test_cache(const char *dir)
{
    rt_nvrtc_options o = nvrtc_opts;
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/cache-test/nested", dir); /* made on the first write */
    o.cache_dir = sub;
    const char *src = "extern \"C\" __global__ void kcache(float *p)\n"
                      "{\n    p[threadIdx.x] = 2.0f * p[threadIdx.x];\n}\n";
    rt_nvrtc_output first, again, fixed, cut;
    CHECK(compile_to(src, &o, &first));
    CHECK_INT(first.cache_hits, 0);
    CHECK_INT(count_files(sub), 3); /* two cubins and the PTX */
    CHECK(compile_to(src, &o, &again));
    CHECK_INT(again.cache_hits, 3);
    CHECK(same_output(&first, &again));

    char path[4400];
    CHECK(find_entry(sub, "-sm_80.cubin", path, sizeof path));
    damage(path, false);
    CHECK(compile_to(src, &o, &fixed));
    CHECK_INT(fixed.cache_hits, 2); /* the damaged entry recompiled */
    CHECK(same_output(&first, &fixed));
    rt_nvrtc_output_free(&again);
    CHECK(compile_to(src, &o, &again)); /* and rewritten */
    CHECK_INT(again.cache_hits, 3);

    /* the PTX comes from sm_90's compile: without it, that compile runs
     * again (its cubin the same) */
    CHECK(find_entry(sub, "-sm_90.ptx", path, sizeof path));
    damage(path, true);
    CHECK(compile_to(src, &o, &cut));
    CHECK_INT(cut.cache_hits, 1);
    CHECK(same_output(&first, &cut));

    /* other options are another entry */
    o.narchs = 1;
    o.arch[0] = 80;
    rt_nvrtc_output one;
    CHECK(compile_to(src, &o, &one));
    CHECK_INT(one.cache_hits, 0); /* PTX for sm_80 is new: sm_80's compile runs again */
    CHECK_INT(one.ptx_arch, 80);
    CHECK_INT(count_files(sub), 4);
    rt_nvrtc_output_free(&one);
    rt_nvrtc_output_free(&first);
    rt_nvrtc_output_free(&again);
    rt_nvrtc_output_free(&fixed);
    rt_nvrtc_output_free(&cut);
}

/* ---- what needs no NVRTC ---- */

static void test_archs(void)
{
    int arch[RT_MAX_ARCHS], n = -1;
    su_status err;
    CHECK(rt_parse_archs("sm_80,sm_90,sm_80", arch, &n, &err));
    CHECK_INT(n, 2);
    CHECK_INT(arch[0], 80);
    CHECK_INT(arch[1], 90);
    CHECK(!rt_parse_archs("sm_8x", arch, &n, &err));
    CHECK_STR(err.msg, "--arch 'sm_8x': expected sm_NN, as in --arch sm_80,sm_90");
    CHECK(!rt_parse_archs("sm_80,", arch, &n, &err));
    CHECK(!rt_parse_archs("compute_80", arch, &n, &err));
    su_buf b;
    su_buf_init(&b, &oom);
    rt_archs_describe(arch, 0, &b);
    CHECK_STR(b.s, "sm_80, sm_90; PTX for sm_90");
    su_buf_free(&b);

    /* the default targets: the machine's GPUs' capabilities NVRTC takes */
    n = rt_default_archs_pick((const int[]){90}, 1, arch);
    CHECK_INT(n, 1);
    CHECK_INT(arch[0], 90);
    n = rt_default_archs_pick(NULL, 0, arch); /* no GPU */
    CHECK_INT(n, 2);
    CHECK_INT(arch[0], 80);
    CHECK_INT(arch[1], 90);
    n = rt_default_archs_pick((const int[]){90, 80, 90, 80}, 4, arch); /* two kinds of GPU */
    CHECK_INT(n, 2);
    CHECK_INT(arch[0], 80);
    CHECK_INT(arch[1], 90);
    n = rt_default_archs_pick((const int[]){5}, 1, arch); /* sm_5: none NVRTC compiles for */
    CHECK_INT(n, 2);
    CHECK_INT(arch[0], 80);
    n = rt_default_archs_pick((const int[]){86, 5}, 2, arch);
    CHECK_INT(n, 1);
    CHECK_INT(arch[0], 86);
    /* here: found once, and sorted; where there is no NVML (as on the build
     * machine), sm_80 and sm_90 */
    n = rt_default_archs(arch);
    CHECK(n >= 1 && n <= RT_MAX_ARCHS);
    for (int i = 1; i < n; i++)
        CHECK(arch[i - 1] < arch[i]);
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (nvml) {
        dlclose(nvml);
    } else {
        CHECK_INT(n, 2);
        CHECK_INT(arch[0], 80);
        CHECK_INT(arch[1], 90);
    }
    CHECK_INT(rt_default_archs(arch), n); /* found once, kept */

    char *d = rt_nvrtc_cache_dir("/a", "/b", "/c");
    CHECK_STR(d, "/a");
    free(d);
    d = rt_nvrtc_cache_dir("", "/b", "/c");
    CHECK_STR(d, "/b/shardc");
    free(d);
    d = rt_nvrtc_cache_dir(NULL, NULL, "/c");
    CHECK_STR(d, "/c/.cache/shardc");
    free(d);
    CHECK(rt_nvrtc_cache_dir(NULL, "", NULL) == NULL);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            remove_tree(path);
        else
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_cuda_codegen: out of memory\n");
        return 1;
    }
    test_archs();
    if (!rt_nvrtc_available()) {
        if (check_failures)
            return CHECK_DONE();
        printf("skipped: no NVRTC\n");
        return 77;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/shardc-cuda-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("test_cuda_codegen: mkdtemp");
        return 1;
    }
    nvrtc_opts.include_path = getenv("SHARDC_CUDA_INCLUDE");
    const char *only = getenv("SHARDC_TEST_CODEGEN_ONLY");
    codegen_only = only && *only;
    nvrtc_opts.cache_dir = dir;
    test_broken_source();
    test_cache(dir);
    test_models();
    remove_tree(dir);
    return CHECK_DONE();
}
