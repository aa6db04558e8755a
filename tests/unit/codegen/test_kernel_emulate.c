/* test_kernel_emulate.c: the generated CUDA kernels compute what the CPU
 * backend computes, checked without a GPU. Every kernel of a plan (all but
 * the cuBLASLt matmuls) is compiled as C++ for the host (c++, with the CUDA
 * toolkit's cuda_fp16.h and cuda_bf16.h, which have host code; no
 * contraction into FMAs, as NVRTC is told) after kernel_emulate.hpp, the
 * device runtime on the host, and run over its launch geometry from the
 * plan, one block after another: the kernels whose threads work alone
 * (elementwise and multi-tensor groups, column reductions, the optimizer
 * updates, transpose, embedding and its gradient, iota) thread after
 * thread, the cooperative ones (row reductions: softmax, layernorm,
 * rmsnorm, sum, mean and amax over the last axis, cross_entropy's
 * gradient; cross_entropy in one block; attention, attn_probs and
 * attention's backward: attn_stats, attn_dq, attn_dk, attn_dv) with a
 * block's threads as fibers meeting at __syncthreads and in warp shuffles
 * (kernel_emulate.hpp says how). The source's `extern __shared__ T x[];`
 * becomes `T *const x = (T *)emu_dynamic_shared;`, the launch's
 * shared_bytes from the plan, poisoned with NaN bytes at each block's
 * start. Each kernel's inputs get the same random bytes in two arenas; the
 * CPU backend runs the kernel's instructions one by one (rt_cpu_run) in
 * one, the emulated kernel runs in the other, and every buffer the kernel
 * writes must hold the same bits (NaN matching NaN), or for a kernel that
 * sums in another order than the CPU backend agree within the tolerance
 * tolerance() states. Before the launch the emulated arena's bytes outside
 * the kernel's buffers are set to 0xA5 (poison_gaps), so a read past an
 * operand's end shows in the results, and after it no byte outside the
 * results may have changed (first_stray_write): a write past a result's
 * end, or into an operand, fails the kernel.
 *
 * What this cannot see: races between blocks (they run in order 0 ..
 * grid-1, each to its end) and between the threads of a block beyond what
 * the barriers order (a fiber runs until it waits), device rounding that
 * differs from the host's (none for +, -, *, / and sqrt, IEEE on both;
 * expf, logf, tanhf and powf come from the host's libm on both sides here,
 * CUDA's own to within an ulp or two on a GPU). Alignment it does see: the
 * kernels are compiled with -fsanitize=alignment, trapping, so a vector
 * load or store (alignas 16 or 32) at an address it does not divide stops
 * the test with SIGILL, as the GPU's misaligned access would stop the
 * kernel. WMMA's pointers are checked by the emulator itself.
 *
 * Under AddressSanitizer the fibers run too: they run only the kernels'
 * library, which is not instrumented, and switch stacks there (on x86-64
 * by kernel_emulate.hpp's own switch, elsewhere by swapcontext, whose
 * interceptor copes with stacks it did not allocate).
 *
 * With $SHARDC_EMU_CACHE set (ctest sets the build's nvrtc-cache/emulate),
 * each compiled library is kept there by a hash of everything its compile
 * reads, and a later run loads it rather than compile it again (build()).
 *
 * With arguments, `test_kernel_emulate MODEL MESH [NAME=VALUE ...]
 * [--arch sm_XY] [shardc's options]` checks the kernels of that one model
 * for that target (sm_80 without; one_model; tests/diff's soak runs it on
 * generated programs).
 *
 * Needs NVRTC (the plans carry kernels) and a C++ compiler ($CXX, else
 * c++): without either it prints "skipped: ..." and exits 77.
 * $SHARDC_CUDA_INCLUDE overrides the CUDA headers' folder. */
#include "shardc.h"
#include "support/support.h"
#include "runtime/cuda/cuda_src.h"
#include "runtime/cuda/cuda_step.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cpu/cpu.h"
#include "runtime/exec/init_gen.h"
#include "runtime/io/tensors.h"
#include "runtime/plan/plan.h"
#include "codegen/cuda.h"
#include "check.h"

#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_kernel_emulate.XXXXXX";

/* The fill of a constant instruction, as the backends make it (the value
 * rounded to f32, then to the dtype: rt_cuda_const_word). */
static void fill_const(const rt_instr *in, void *dst)
{
    int bytes = 4;
    uint32_t w = rt_cuda_const_word(in, &bytes);
    int64_t n = rt_type_numel(&in->out_t);
    for (int64_t i = 0; i < n; i++)
        memcpy((uint8_t *)dst + i * bytes, &w, (size_t)bytes);
}
static const char *cxx;
static int emu_cache_hits; /* libraries taken from $SHARDC_EMU_CACHE */
static const char *const *flags; /* one_model's shardc options, as the CLI's (nflags words) */
static int nflags;

/* ---- the launches' memory (kernel_emulate.hpp's emu_setup) ---- */

enum { STACK = 64 << 10, GUARD = 4 << 10, SHARED_CAP = RT_MAX_SHARED };
/* RT_MAX_BLOCK slots (kernel_emulate.hpp's MAX_THREADS): a guard page, a fiber's stack */
static uint8_t *stacks;
static uint8_t *stack[RT_MAX_BLOCK];  /* each slot's STACK bytes */
static uint8_t *shared_end;           /* SHARED_CAP bytes of shared memory end here, at a guard */
static char launch_msg[512];          /* why a launch failed */

/* Maps the stacks and the shared memory, once for every launch: pages are
 * touched only as the fibers use them. */
static bool map_launch_memory(void)
{
    size_t slot = GUARD + STACK;
    void *st = mmap(NULL, RT_MAX_BLOCK * slot, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *sh = mmap(NULL, SHARED_CAP + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (st == MAP_FAILED || sh == MAP_FAILED)
        return false;
    stacks = st;
    shared_end = (uint8_t *)sh + SHARED_CAP;
    bool ok = mprotect(shared_end, GUARD, PROT_NONE) == 0;
    for (int t = 0; t < RT_MAX_BLOCK; t++) {
        ok = ok && mprotect(stacks + t * slot, GUARD, PROT_NONE) == 0;
        stack[t] = stacks + t * slot + GUARD;
    }
    return ok;
}

static void unmap_launch_memory(void)
{
    munmap(stacks, RT_MAX_BLOCK * (size_t)(GUARD + STACK));
    munmap(shared_end - SHARED_CAP, SHARED_CAP + GUARD);
}

/* ---- what ran ---- */

/* Kernels by kind: alone (threads in turn) or cooperative (fibers). */
enum { K_ELEMENTWISE, K_MULTI, K_COLUMN, K_ROW, K_SINGLE_BLOCK, K_ATTENTION, NKINDS };
static const char *const kind_name[NKINDS] = {"elementwise", "multi-tensor", "column", "row",
                                              "single block", "attention"};
static int ran[2][NKINDS];   /* [cooperative][kind] */
static int op_ran[RT_NOPS];  /* kernels run, by the ops of their instructions */
static int pairs_ran;        /* attention pairs run (passes/fuse.h): attn_dv and
                              * attn_dk in one kernel */
static int fwd_lse_ran;      /* attention and its attn_lse in one kernel, run */
static int lse_alone_ran;    /* attn_lse in a kernel of its own, run */
static int delta_ran[2];     /* attn_delta kernels a lane a column, and a vector a lane */
static int delta_past;       /* of the latter, with a warp's rows past the last */
static int emb_ran[2];       /* embedding kernels an element a thread, and 16 bytes a thread */
static int col_split_ran;    /* column reductions whose rows are split over blocks, run */
static int col_vec_ran;      /* column reductions of vectors a lane, run */
static int col_vec_split_ran; /* and of those, split over blocks */
static int col_vec_thread_ran; /* a thread per vector of results (a short axis), run */
static int sib_ran[3];       /* column reductions with a sibling sum (passes/fuse.c's
                              * join_siblings): by blocks not split, split over blocks, a
                              * thread per result or vector of results */
static int online_ran;       /* softmax or cross_entropy's gradient, max and sum in one pass */
static int online_vec_ran;   /* kernels taking a vector's elements at once online
                              * (sh_online_vec: cross_entropy, and the two above) */
static int ahead_ran;        /* row kernels loading steps of a row ahead (cuda_strategy.c's
                              * row_loop_ahead) */
static int left_ran;         /* of them, with steps left after the loop (guarded) */
static int ahead_elem_ran;   /* of them, loading an element a step */
static int wmma_ran;         /* kernels on tensor cores through nvcuda::wmma run */
static int x3_ran;           /* f32 attention on tensor cores, as bf16 parts (tolerance_x3) */
static int mma_ran;          /* kernels on tensor cores through PTX's mma.sync run */
static int rows32_ran;       /* attention forwards of 32 rows a warp run
                              * ($SHARDC_EXPERIMENT_ATTN_ROWS=32) */
static int async_ran;        /* of them, with two copies of the other side's tiles (cp.async) */
static int split_vec_ran;    /* split3 kernels taking 4 elements a thread */
static int i32_reduce_ran;   /* kernels of an amax or sum of i32 alone */
static int i32_div_ran;      /* kernels of a div of i32 alone */
static int i32_div_fused_ran; /* elementwise kernels with a div of i32 by a const among
                               * other ops */
static int xent_lse_ran[2];  /* kernels of a cross_entropy_lse alone, and beside its
                              * cross_entropy (which stores it) */
static int xent_grad_ran[2]; /* kernels of a cross_entropy_grad finding its rows' max and
                              * sum, and from a given lse */
static const char *arch = "sm_80"; /* the kernels' target */
static double worst[NKINDS]; /* the largest error as a fraction of its tolerance, by kind */
static bool lenient;         /* one model from the command line: a kernel whose inputs the
                              * CPU backend refuses (fill's ids past a small table) is
                              * skipped, not failed */
static int skipped;          /* kernels so skipped */

/* ---- the plan and its kernels' sources ---- */

typedef struct model {
    rt_plan *plan;
    char *cuda; /* --emit cuda */
} model;

/* Compiles path (text: its contents with " zero K over dp" appended to the
 * train line when zero > 0) on mesh with kernels for arch, each constant
 * of defines ("NAME=VALUE ...") overridden as -D does. */
static model compile(const char *path, const char *mesh, int zero, const char *defines)
{
    char out[4300], *e = NULL, name[64];
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
              shardc_options_set_archs(opt, arch, &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK;
    long long v;
    int used;
    for (const char *d = defines; ok && sscanf(d, " %63[A-Za-z0-9_]=%lld%n", name, &v, &used) == 2;
         d += used)
        ok = shardc_options_define(opt, name, v, &e) == SHARDC_OK;
    for (int i = 0; ok && i < nflags; i++) { /* one_model's shardc options */
        const char *f = flags[i], *val = i + 1 < nflags ? flags[i + 1] : "";
        if (!strcmp(f, "--recompute") || !strcmp(f, "--keep-gathered")) {
            if (f[2] == 'r')
                shardc_options_set_recompute(opt, 1);
            else
                shardc_options_set_keep_gathered(opt, 1);
            continue;
        }
        i++;
        if (!strcmp(f, "--dtype"))
            ok = shardc_options_set_dtype(opt, val, &e) == SHARDC_OK;
        else if (!strcmp(f, "--schedule"))
            ok = shardc_options_set_schedule(opt, val, &e) == SHARDC_OK;
        else if (!strcmp(f, "--microbatches"))
            ok = shardc_options_set_microbatches(opt, atoll(val), &e) == SHARDC_OK;
        else if (!strcmp(f, "--zero"))
            ok = shardc_options_set_zero(opt, atoi(val), NULL, &e) == SHARDC_OK;
        else if (!strcmp(f, "--f32-matmul"))
            ok = shardc_options_set_f32_matmul(opt, val, &e) == SHARDC_OK;
    }
    ok = ok && shardc_compile_string(opt, path, text, strlen(text), &prog, &e) == SHARDC_OK &&
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

/* The source of kernel name of stage st in --emit cuda's text (malloc'd),
 * or NULL: from its "// NAME: " line to the next kernel's. A pipeline's
 * stages are numbered from k0 each ("// ---- stage ST of N ----" before
 * each), so the name is looked for in the stage's part. */
static char *source_of(const char *cuda, int st, const char *name)
{
    char head[160], mark[64];
    snprintf(mark, sizeof mark, "// ---- stage %d of ", st);
    const char *from = strstr(cuda, mark), *to = NULL;
    if (from)
        to = strstr(from + 1, "// ---- stage ");
    else
        from = cuda;
    snprintf(head, sizeof head, "\n// %s: ", name);
    const char *p = strstr(from, head);
    if (!p || (to && p > to))
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

/* Whether a kernel's threads cooperate (the emulator runs them as fibers). */
static bool cooperative(const char *src)
{
    static const char *const calls[] = {"__syncthreads", "__syncwarp", "__shfl", "__ballot",
                                        "__any_sync", "__all_sync", "__activemask", "__shared__"};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (strstr(src, calls[i]))
            return true;
    return false;
}

static int kind_of(const rt_program *g, const rt_kernel *k, const char *src)
{
    for (int i = 0; i < k->ninstr; i++) {
        int op = g->instr[k->instr[i]].op;
        if (op == RT_OP_ATTENTION || op == RT_OP_ATTN_PROBS || op == RT_OP_ATTN_STATS ||
            op == RT_OP_ATTN_DQ || op == RT_OP_ATTN_DK || op == RT_OP_ATTN_DV ||
            op == RT_OP_ATTN_LSE)
            return K_ATTENTION;
    }
    switch (k->strategy) {
    case RT_KS_ROW: return K_ROW;
    case RT_KS_COLUMN: return K_COLUMN;
    case RT_KS_SINGLE_BLOCK: return K_SINGLE_BLOCK;
    default: return strstr(src, "multi-tensor") ? K_MULTI : K_ELEMENTWISE;
    }
}

/* ---- the host build of the kernels ---- */

/* Writes line (len bytes, with its newline) to f, an `extern __shared__ T
 * x[];` as `T *const x = (T *)emu_dynamic_shared;`; false for one it cannot
 * read. */
static bool put_line(FILE *f, const char *line, size_t len)
{
    static const char ext[] = "extern __shared__ ";
    char buf[1024];
    if (len >= sizeof buf) /* no declaration is that long */
        return fwrite(line, 1, len, f) == len;
    memcpy(buf, line, len);
    buf[len] = 0;
    char *x = strstr(buf, ext);
    if (!x)
        return fputs(buf, f) >= 0;
    char *type = x + strlen(ext), *end = strstr(type, "[];"), *name = end;
    if (!strncmp(type, "__align__(", 10)) { /* the emulator's base is 128-byte aligned */
        char *close = strchr(type, ')');
        type = close && close < end ? close + 1 : type;
        while (*type == ' ')
            type++;
    }
    if (!end)
        return false;
    while (name > type && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
        name--;
    int tlen = (int)(name - type);
    while (tlen > 0 && type[tlen - 1] == ' ')
        tlen--;
    if (name == end || tlen == 0)
        return false;
    fprintf(f, "%.*s%.*s *const %.*s = (%.*s *)emu_dynamic_shared;%s", (int)(x - buf), buf, tlen,
            type, (int)(end - name), name, tlen, type, end + 3);
    return true;
}

/* Appends src without its #include lines, its dynamic shared memory
 * rewritten (put_line); false where that fails. */
static bool put_source(FILE *f, const char *src)
{
    bool ok = true;
    for (const char *p = src; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (strncmp(p, "#include", 8))
            ok = put_line(f, p, len) && ok;
        p += len;
    }
    return ok;
}

/* ---- the compiled libraries' cache ($SHARDC_EMU_CACHE) ----
 *
 * A library is kept as DIR/emu-HASH.so, HASH a 64-bit FNV-1a of its C++
 * file, the command's flags and include folders, kernel_emulate.hpp's
 * text, the compiler's --version and NVRTC's version (which names the
 * toolkit whose headers it reads), so a kept library is the one the same
 * compile would make. Each is compiled under a name of its own and renamed
 * into place, so processes may share the folder (ctest runs this test and
 * diff/emulate at once; CI's sanitizer stage reads the first stage's). */

/* The file at path into h (a missing one hashes as its absence). */
static uint64_t fnv_file(uint64_t h, const char *path)
{
    FILE *f = fopen(path, "rb");
    char buf[65536];
    size_t n;
    if (!f)
        return su_fnv_bytes(h, "\0missing", 8);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        h = su_fnv_bytes(h, buf, n);
    fclose(f);
    return h;
}

/* What besides the file decides the library: the flags, the compiler and
 * the headers (once per process). */
static uint64_t compile_identity(const char *flags)
{
    static uint64_t id;
    static bool done;
    if (!done) {
        char cmd[4400], hdr[4300], line[512];
        uint64_t h = SU_FNV_BASIS;
        snprintf(hdr, sizeof hdr, "%s/tests/unit/codegen/kernel_emulate.hpp", check_repo_dir());
        h = fnv_file(h, hdr);
        snprintf(cmd, sizeof cmd, "%s --version 2>&1", cxx);
        FILE *v = popen(cmd, "r");
        while (v && fgets(line, sizeof line, v))
            h = su_fnv_str(h, line);
        if (v)
            pclose(v);
        int major = 0, minor = 0;
        rt_nvrtc_version(&major, &minor);
        snprintf(line, sizeof line, "nvrtc %d.%d", major, minor);
        id = su_fnv_str(h, line);
        done = true;
    }
    return su_fnv_str(id, flags);
}

/* Builds the kernels name[0..n) (sources src[], coop[]: run as fibers)
 * into one shared library, each in a namespace of its own with a launcher
 * emu_NAME, after kernel_emulate.hpp, then `extra` (NULL: none) as it is
 * but for its #include lines; its handle, set up. */
static void *build(const char *const *name, char *const *src, const bool *coop, int n,
                   const char *extra)
{
    char cpp[4300], so[4600], cmd[20000];
    snprintf(cpp, sizeof cpp, "%s/kernels.cpp", tmpdir);
    snprintf(so, sizeof so, "%s/kernels.so", tmpdir);
    FILE *f = fopen(cpp, "w");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    fputs("#include \"kernel_emulate.hpp\"\n", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "namespace n_%s {\n", name[i]);
        bool ok = put_source(f, src[i]);
        if (!ok)
            fprintf(stderr, "  %s: a shared declaration the test cannot rewrite\n", name[i]);
        CHECK(ok);
        fprintf(f, "}\nextern \"C\" int emu_%s(void **p, unsigned g, unsigned b, unsigned sh)\n"
                   "{ return emu_launch(n_%s::%s, p, g, b, sh, %s); }\n",
                name[i], name[i], name[i], coop[i] ? "true" : "false");
    }
    if (extra)
        CHECK(put_source(f, extra));
    fclose(f);
    const char *inc = getenv("SHARDC_CUDA_INCLUDE");
    char flags[9000];
    snprintf(flags, sizeof flags,
             "-std=c++14 -O1 -ffp-contract=off -fPIC -shared -w -fsanitize=alignment "
             "-fsanitize-undefined-trap-on-error -I'%s/tests/unit/codegen' -I'%s'",
             check_repo_dir(), inc ? inc : rt_nvrtc_default_include_path());
    const char *cache = getenv("SHARDC_EMU_CACHE");
    char kept[4400] = "", part[4500] = "";
    bool have = false;
    if (cache && *cache) {
        uint64_t key = fnv_file(compile_identity(flags), cpp);
        snprintf(kept, sizeof kept, "%s/emu-%016llx.so", cache, (unsigned long long)key);
        snprintf(part, sizeof part, "%s.%ld.part", kept, (long)getpid());
        for (char *q = kept + 1; (q = strchr(q, '/')); q++) { /* the folders, as mkdir -p */
            *q = 0;
            mkdir(kept, 0777);
            *q = '/';
        }
        have = access(kept, R_OK) == 0;
        if (have)
            emu_cache_hits++;
        snprintf(so, sizeof so, "%s", have ? kept : part);
    }
    int rc = 0;
    void *h = NULL;
    for (int attempt = 0; attempt < 2 && rc == 0 && !h; attempt++) {
        if (attempt) { /* a kept library that does not load is compiled again */
            if (!have)
                break;
            unlink(kept);
            have = false;
            emu_cache_hits--;
            snprintf(so, sizeof so, "%s", part);
        }
        if (!have) {
            snprintf(cmd, sizeof cmd, "%s %s '%s' -o '%s'", cxx, flags, cpp, so);
            rc = system(cmd);
            CHECK_INT(rc, 0);
            if (rc == 0 && cache && *cache && rename(part, kept) == 0)
                snprintf(so, sizeof so, "%s", kept);
        }
        h = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    }
    if (rc == 0 && !h)
        fprintf(stderr, "  dlopen: %s\n", dlerror());
    CHECK(rc != 0 || h != NULL);
    typedef void (*setup_fn)(uint8_t *const *stack, size_t stack_size, uint8_t *shared_end,
                             size_t shared_cap, char *msg, size_t msg_size);
    setup_fn setup = h ? (setup_fn)(uintptr_t)dlsym(h, "emu_setup") : NULL;
    CHECK(!h || setup);
    if (setup)
        setup(stack, STACK, shared_end, SHARED_CAP, launch_msg, sizeof launch_msg);
    else if (h)
        dlclose(h);
    unlink(cpp);
    if (!cache || !*cache || strcmp(so, kept))
        unlink(so); /* a kept library stays */
    return setup ? h : NULL;
}

/* ---- the emulator itself ---- */

/* A kernel's emu_NAME: 0, or -1 with the reason in launch_msg. */
typedef int (*launcher)(void **p, unsigned g, unsigned b, unsigned shared);

/* Kernels with CUDA semantics known by heart: shuffles writes out [64, 8]
 * (ints) from blocks of 64 threads (two: the second must find its shared
 * memory poisoned again), early_exit out[t * 8], copies out[t * 4 ..] from
 * cp.async's copies of out[256 ..] (the emulator's, stricter than a GPU's:
 * a copy seen by no thread before a barrier past its wait); then three
 * launches that must fail. */
static const char *const self_name[] = {"shuffles", "early_exit", "copies", "exit_at",
                                        "exit_before", "deadlock"};
static const char *const self_src[] = {
    "extern \"C\" __global__ void shuffles(int *out)\n"
    "{\n"
    "    extern __shared__ int sh[]; // blockDim.x ints\n"
    "    const int t = threadIdx.x, lane = t % 32;\n"
    "    int *o = out + t * 8;\n"
    "    o[0] = __shfl_sync(0xffffffffu, t, 35);\n"
    "    o[1] = __shfl_sync(0xffffffffu, t, 5, 8);\n"
    "    o[2] = __shfl_up_sync(0xffffffffu, t, 2, 16);\n"
    "    o[3] = __shfl_down_sync(0xffffffffu, t, 3, 16);\n"
    "    o[4] = __shfl_xor_sync(0xffffffffu, t, 17, 16);\n"
    "    o[5] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);\n"
    "    o[6] = __any_sync(0xffffffffu, lane == 31) + 2 * __all_sync(0xffffffffu, lane < 31);\n"
    "    o[7] = sh[t] == -1; // poisoned\n"
    "    __syncthreads();\n"
    "    sh[t] = t;\n"
    "    __syncthreads();\n"
    "    o[7] += 2 * sh[(t + 1) % blockDim.x];\n"
    "}\n",
    "extern \"C\" __global__ void early_exit(int *out)\n"
    "{\n"
    "    if (threadIdx.x >= 40)\n"
    "        return;\n"
    "    __syncthreads(); // the returned threads count as arrived\n"
    "    out[threadIdx.x * 8] = 7;\n"
    "}\n",
    "extern \"C\" __global__ void copies(int *out)\n"
    "{\n"
    "    extern __shared__ int sh[]; // 4 ints a thread\n"
    "    const int t = threadIdx.x;\n"
    "    int *o = out + t * 4;\n"
    "    sh_cp16(sh + t * 4, out + 256 + t * 4, true);\n"
    "    sh_cp_commit();\n"
    "    o[0] = sh[t * 4]; // not waited for: NaN bytes\n"
    "    sh_cp_wait_all();\n"
    "    o[1] = sh[(t + 1) % 64 * 4]; // another's, before a barrier: NaN bytes\n"
    "    __syncthreads();\n"
    "    o[2] = sh[(t + 1) % 64 * 4]; // landed\n"
    "    __syncthreads(); // read before the next copy over it\n"
    "    sh_cp16(sh + t * 4, out, false);\n"
    "    sh_cp_wait_all();\n"
    "    __syncthreads();\n"
    "    o[3] = sh[t * 4 + 1]; // zeros\n"
    "}\n",
    "extern \"C\" __global__ void exit_at(int *out)\n"
    "{\n"
    "    if (threadIdx.x == 37) // lanes 0 .. 4 of warp 1 wait in the shuffle\n"
    "        return;\n"
    "    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);\n"
    "}\n",
    "extern \"C\" __global__ void exit_before(int *out)\n"
    "{\n"
    "    if (threadIdx.x == 32) // returns before the others of warp 1 run\n"
    "        return;\n"
    "    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);\n"
    "}\n",
    "extern \"C\" __global__ void deadlock(int *out)\n"
    "{\n"
    "    if (threadIdx.x == 40)\n"
    "        __syncwarp();\n"
    "    __syncthreads();\n"
    "    out[threadIdx.x] = 1;\n"
    "}\n",
};

/* What shuffles writes for thread t, item i (CUDA's semantics, a lane's
 * source outside its segment of width lanes being itself, except that
 * __shfl_xor_sync may read an earlier segment). */
static int self_expect(int t, int i)
{
    int lane = t % 32, base = t - lane;
    switch (i) {
    case 0: return base + 35 % 32;
    case 1: return t / 8 * 8 + 5;
    case 2: return lane % 16 >= 2 ? t - 2 : t;
    case 3: return lane % 16 + 3 < 16 ? t + 3 : t;
    case 4: return (lane ^ 17) < lane / 16 * 16 + 16 ? base + (lane ^ 17) : t;
    case 5: return 0x49249249;
    case 6: return 1;
    default: return 1 + 2 * ((t + 1) % 64);
    }
}

/* The emulator's shuffles, barriers and shared memory against
 * self_expect, and its failures for a lane returning while its warp-mates
 * wait in a shuffle, a shuffle after a warp-mate returned, a deadlock. */
static void check_emulator(void)
{
    enum { N = sizeof self_name / sizeof self_name[0] };
    static const bool coop[N] = {true, true, true, true, true, true};
    _Alignas(16) int out[64 * 8];
    void *p[] = {out};
    void *lib = build(self_name, (char *const *)self_src, coop, N, NULL);
    launcher run[N];
    for (int i = 0; lib && i < N; i++) {
        char sym[64];
        snprintf(sym, sizeof sym, "emu_%s", self_name[i]);
        run[i] = (launcher)(uintptr_t)dlsym(lib, sym);
        CHECK(run[i] != NULL);
        if (!run[i])
            lib = NULL;
    }
    if (!lib)
        return;
    CHECK_INT(run[0](p, 2, 64, 64 * sizeof(int)), 0);
    int bad = 0;
    for (int t = 0; t < 64; t++)
        for (int i = 0; i < 8; i++)
            if (out[t * 8 + i] != self_expect(t, i) && bad++ < 5)
                fprintf(stderr, "  emulator: shuffles: thread %d, item %d: %d, want %d\n", t, i,
                        out[t * 8 + i], self_expect(t, i));
    CHECK_INT(bad, 0);
    memset(out, 0, sizeof out);
    CHECK_INT(run[1](p, 1, 64, 0), 0);
    bad = 0;
    for (int t = 0; t < 64; t++)
        bad += out[t * 8] != (t < 40 ? 7 : 0);
    CHECK_INT(bad, 0);
    /* cp.async: a copy lands at the first barrier after its thread's wait */
    for (int i = 0; i < 256; i++)
        out[256 + i] = 1000 + i;
    CHECK_INT(run[2](p, 1, 64, 64 * 4 * sizeof(int)), 0);
    bad = 0;
    for (int t = 0; t < 64; t++) {
        int want[4] = {-1, -1, 1000 + (t + 1) % 64 * 4, 0};
        for (int i = 0; i < 4; i++)
            if (out[t * 4 + i] != want[i] && bad++ < 5)
                fprintf(stderr, "  emulator: copies: thread %d, item %d: %d, want %d\n", t, i,
                        out[t * 4 + i], want[i]);
    }
    CHECK_INT(bad, 0);
    static const char *const want[] = {"returned while", "of whose lanes have returned",
                                       "deadlock"};
    for (int i = 3; i < N; i++) {
        CHECK_INT(run[i](p, 1, 64, 0), -1);
        CHECK(strstr(launch_msg, want[i - 3]) != NULL);
        printf("emulator: %s fails as it should: %s\n", self_name[i], launch_msg);
    }
    dlclose(lib);
}

/* The runtime's gelu_grad in place (runtime/cuda/cuda_src.h's
 * RT_CUDA_DGELU_SRC, run after a matmul whose DGELU epilogue cuBLASLt has
 * no algorithm for): for bf16 and f16, over 1000 elements on 2 blocks of
 * 64 threads (each thread striding over several), the same bits as the
 * CPU backend's gelu_grad instruction. */
static void check_dgelu_kernel(void)
{
    enum { N = 1000 };
    /* the emulator passes pointers: wrappers pass the count by one */
    static const char *const name[] = {"dgelu_bf16"};
    static char *const src[] = {
        RT_CUDA_DGELU_SRC
        "extern \"C\" __global__ void dgelu_bf16(const __nv_bfloat16 *x, __nv_bfloat16 *y, "
        "const long long *n)\n{ sh_dgelu_bf16(x, y, *n); }\n"
        "extern \"C\" __global__ void dgelu_f16(const __half *x, __half *y, const long long "
        "*n)\n{ sh_dgelu_f16(x, y, *n); }\n"};
    static const bool coop[] = {false};
    const char *extra = "extern \"C\" int emu_dgelu_f16(void **p, unsigned g, unsigned b, "
                        "unsigned sh)\n{ return emu_launch(n_dgelu_bf16::dgelu_f16, p, g, b, "
                        "sh, false); }\n";
    void *lib = build(name, src, coop, 1, extra);
    if (!lib)
        return;
    static const int dtype[2] = {RT_BF16, RT_F16};
    static const char *const sym[2] = {"emu_dgelu_bf16", "emu_dgelu_f16"};
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (int t = 0; t < 2; t++) {
        launcher run = (launcher)(uintptr_t)dlsym(lib, sym[t]);
        CHECK(run != NULL);
        if (!run)
            continue;
        _Alignas(16) uint16_t x[N], y[N], want[N];
        for (int i = 0; i < N; i++) { /* x over [-6, 6) and y over [-3, 3), as 16-bit */
            r = r * 6364136223846793005u + 1442695040888963407u;
            float xv = (float)(r >> 40 & 0xffff) / 65536.0f * 12.0f - 6.0f;
            float yv = (float)(r >> 20 & 0xffff) / 65536.0f * 6.0f - 3.0f;
            x[i] = dtype[t] == RT_BF16 ? su_f32_to_bf16(xv) : su_f32_to_f16(xv);
            y[i] = dtype[t] == RT_BF16 ? su_f32_to_bf16(yv) : su_f32_to_f16(yv);
        }
        rt_instr in;
        memset(&in, 0, sizeof in);
        in.op = RT_OP_GELU_GRAD;
        in.nin = 2;
        in.in[0] = 0, in.in[1] = 1, in.out = 2;
        rt_type ty = {.dtype = (uint8_t)dtype[t], .rank = 1, .dim = {N}};
        in.in_t[0] = in.in_t[1] = in.out_t = ty;
        void *bufs[3] = {x, y, want};
        rt_cpu_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        su_status err = {SU_OK, ""};
        CHECK_INT(rt_cpu_run(&ctx, &in, bufs, &err), 0);
        long long n = N;
        void *p[] = {x, y, &n};
        CHECK_INT(run(p, 2, 64, 0), 0);
        int bad = 0;
        for (int i = 0; i < N; i++)
            if (y[i] != want[i] && bad++ < 5)
                fprintf(stderr, "  %s: element %d: 0x%04x, the CPU backend's 0x%04x\n",
                        sym[t] + 4, i, y[i], want[i]);
        CHECK_INT(bad, 0);
    }
    printf("the runtime's gelu_grad kernel (bf16, f16): the CPU backend's bits\n");
    dlclose(lib);
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
 * scalar (adamw's step) 3, i32 in 0..3 (ids and labels in range), bools
 * 0 or 1. */
static void fill(uint8_t *a, const rt_type *t)
{
    int64_t n = rt_type_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float f = t->rank == 0 ? 3.0f : 0.25f + (float)(next() % 4096) / 4096.0f;
        switch (t->dtype) {
        case RT_F32: memcpy(a + 4 * i, &f, 4); break;
        case RT_F16: ((uint16_t *)a)[i] = su_f32_to_f16(f); break;
        case RT_BF16: ((uint16_t *)a)[i] = su_f32_to_bf16(f); break;
        case RT_BOOL: a[i] = (uint8_t)(next() % 2); break;
        default: ((int32_t *)a)[i] = (int32_t)(next() % 4); break;
        }
    }
}

/* The tolerance of kernel k, relative to |CPU's value| + 1 (so absolute
 * where values cancel), from the terms its instructions sum in another
 * order than the CPU backend (in f32, in threads' strides and then a tree
 * over lanes and warps; the CPU backend in index order, mostly in double).
 * A sum of n terms in any order is within (n - 1) 2^-24 of the sum of
 * their magnitudes. The inputs, uniform in [0.25, 1.25), make terms of a
 * few units at most (products of up to three inputs, exps of differences
 * to the max, squared deviations) and results of one or a few, which the
 * kernel's elementwise tail scales by a few at most (layernorm's 1/std,
 * about 3.5 for these inputs). So a kernel gets 16 n 2^-24, n its longest
 * sum's terms (where terms cancel the worst case is larger, but rounding
 * errors grow like sqrt(n) there):
 *   sum, mean (a column or a row)  the reduced extent
 *   softmax, cross_entropy's       the row: the max is exact, exp the
 *   gradient, layernorm, rmsnorm,  host's expf on both sides, the scale
 *   their rstds, cross_entropy_lse a sum's inverse (cross_entropy_grad
 *                                  from a given lse sums nothing: to the
 *                                  bit)
 *   layernorm_dx, rmsnorm_dx       the row: sums of dy g and dy g xh
 *                                  (|xh| < 1.6 for these inputs), each
 *                                  mean scaled by xh and rstd after
 *   cross_entropy                  the classes, then the rows' losses
 *   mse                            every element
 *   attention, attn_probs,         a score is a dot product of d terms
 *   attn_lse                       below 1.6 each, scaled by 1/sqrt(d):
 *                                  within 1.6 d^1.5 2^-24, which makes a
 *                                  probability exp(s_j) / sum exp(s_k)
 *                                  within twice that relatively; then the
 *                                  sum of t keys' exps and attention's
 *                                  t-term sums of p v (the CPU backend's
 *                                  sgemm, OpenBLAS's order): 3.2 d^1.5 + 2 t
 *   attn_stats, attn_dq, attn_dk,  p as attention's (lse an input but to
 *   attn_dv                        attn_stats), dp = dy . v a dot product
 *                                  of dv positive terms, within dv 2^-24
 *                                  relatively (delta, an input but to
 *                                  attn_stats, is mostly smaller: little
 *                                  cancels in dp - delta), then the
 *                                  n-term sums over the t keys a row
 *                                  sees (attn_stats, attn_dq) or the s
 *                                  rows that see a key (attn_dk,
 *                                  attn_dv; of grouped heads, the rows
 *                                  of the group's H / G query heads):
 *                                  3.2 d^1.5 + dv + 2 n
 *   attn_delta                     a dot product of the row's dv terms
 * A kernel with such a sum whose results are 16-bit gets one unit in the
 * last place more (below). Every other kernel (elementwise, amax: order
 * does not matter) to the bit. */
static double tolerance(const rt_program *g, const rt_kernel *k)
{
    int64_t n = 0;
    for (int i = 0; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        const rt_type *t = &in->in_t[0];
        int r = t->rank;
        int64_t m = 0;
        switch (in->op) {
        case RT_OP_SUM:
        case RT_OP_MEAN:
        case RT_OP_SOFTMAX: m = r ? t->dim[in->axis] : 1; break;
        case RT_OP_LAYERNORM:
        case RT_OP_RMSNORM:
        case RT_OP_LAYERNORM_DX:
        case RT_OP_RMSNORM_DX:
        case RT_OP_LAYERNORM_RSTD:
        case RT_OP_RMSNORM_RSTD:
        case RT_OP_XENT_LSE: m = t->dim[r - 1]; break;
        case RT_OP_XENT_GRAD: m = in->nin == 3 ? 0 : t->dim[r - 1]; break;
        case RT_OP_XENT: m = t->dim[r - 1] + rt_type_numel(t) / t->dim[r - 1]; break;
        case RT_OP_MSE: m = rt_type_numel(t); break;
        case RT_OP_ATTN_DELTA: m = t->dim[r - 1]; break;
        case RT_OP_ATTENTION:
        case RT_OP_ATTN_PROBS:
        case RT_OP_ATTN_LSE: { /* keys: k's dim -2, -3 with the heads inner */
            int64_t d = t->dim[r - 1], keys = in->in_t[1].dim[r - 2 - (in->keepdims ? 1 : 0)];
            m = (int64_t)ceil(3.2 * pow((double)d, 1.5)) + 2 * keys;
            break;
        }
        case RT_OP_ATTN_STATS:
        case RT_OP_ATTN_DQ:
        case RT_OP_ATTN_DK:
        case RT_OP_ATTN_DV: { /* in_t[2]: v, or attn_dv's dy */
            bool by_key = in->op == RT_OP_ATTN_DK || in->op == RT_OP_ATTN_DV;
            int seq = r - 2 - (in->keepdims ? 1 : 0); /* S's and T's dim */
            int64_t d = t->dim[r - 1], dv = in->in_t[2].dim[r - 1];
            /* attn_dk and attn_dv of grouped heads sum over the group's
             * query heads' rows */
            int64_t terms = by_key ? t->dim[seq] * rt_attn_group(in) : in->in_t[1].dim[seq];
            m = (int64_t)ceil(3.2 * pow((double)d, 1.5)) + dv + 2 * terms;
            break;
        }
        default: break;
        }
        n = m > n ? m : n;
    }
    double tol = 16 * (double)n * 0x1p-24;
    /* a result of 16 bits of a kernel that sums in another order than the
     * CPU's (tensor cores' too) may round to the next value: one unit in
     * the last place, relative to a value at the bottom of its binade
     * (bf16's 8 bits: 2^-7; f16's 11: 2^-10). Seen: an f16 rmsnorm's row
     * of 16, one unit apart (generated program 1890181) */
    double ulp = 0;
    for (int i = 0; n > 0 && i < k->ninstr; i++) {
        int dt = g->instr[k->instr[i]].out_t.dtype;
        if (dt == RT_BF16 || dt == RT_F16)
            ulp = dt == RT_BF16 ? 0x1p-7 : ulp > 0x1p-10 ? ulp : 0x1p-10;
    }
    return tol + ulp;
}

/* The tolerance of an f32 attention kernel on tensor cores (each f32 as
 * three bf16 parts, each product as six: codegen/cuda_ops.c's
 * cg_attention_x3), relative to |CPU's value| + 1: tolerance()'s sum of n
 * terms, but sqrt(n) of them, not n. Its products are within about 2^-22 of
 * f32's, so its errors are those of sums in another order, which grow like
 * sqrt(n) with these inputs (measured: a hundredth of this on
 * attn_shapes.sh). tolerance()'s worst case of n passes such a kernel
 * whose products keep 8 bits (the middle parts left out: checked, 0.83 of
 * it), which this one fails (42 times it); one that keeps 16 bits (the low
 * parts left out) passes both, inside the noise of the sums' order. */
static double tolerance_x3(const rt_program *g, const rt_kernel *k)
{
    double n = tolerance(g, k) / (16 * 0x1p-24);
    return 16 * sqrt(n) * 0x1p-24;
}

/* What an error is relative to, beside |CPU's value|: 1 (tolerance()),
 * but for a kernel of softmax or cross_entropy's gradient, whose results
 * are a row's probabilities (p, or p less one at the label) of about 1 /
 * n each for these inputs (n the row's length): 1 / n there, else a
 * result off by any factor would pass for rows of thousands. */
static double error_floor(const rt_program *g, const rt_kernel *k)
{
    double floor = 1;
    for (int i = 0; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        const rt_type *t = &in->in_t[0];
        if ((in->op == RT_OP_SOFTMAX || in->op == RT_OP_XENT_GRAD) && t->rank >= 1) {
            int64_t n = in->op == RT_OP_SOFTMAX ? t->dim[in->axis] : t->dim[t->rank - 1];
            floor = n > 1 && 1.0 / (double)n < floor ? 1.0 / (double)n : floor;
        }
    }
    return floor;
}

/* The value of an element of dtype dt, as a double. */
static double value(const uint8_t *x, int dt)
{
    float f;
    uint16_t h;
    int32_t i;
    if (dt == RT_F32) {
        memcpy(&f, x, 4);
        return f;
    }
    if (dt == RT_I32) {
        memcpy(&i, x, 4);
        return i;
    }
    if (dt == RT_BOOL)
        return x[0];
    memcpy(&h, x, 2);
    return dt == RT_F16 ? su_f16_to_f32(h) : su_bf16_to_f32(h);
}

/* How far an element x is from the CPU's y (dtype dt): 0 for the same bits
 * or both NaN, else |x - y| / (|y| + 1) for floats (infinity across NaN),
 * infinity for i32. */
static double error(const uint8_t *x, const uint8_t *y, int dt, double floor)
{
    if (!memcmp(x, y, (size_t)rt_dtype_size(dt)))
        return 0;
    if (dt != RT_F32 && dt != RT_F16 && dt != RT_BF16)
        return INFINITY;
    double a = value(x, dt), b = value(y, dt);
    if (isnan(a) && isnan(b))
        return 0;
    double e = fabs(a - b) / (fabs(b) + floor);
    return isnan(e) ? INFINITY : e;
}

/* An element's bits, for messages. */
static uint32_t word(const uint8_t *x, int64_t size)
{
    uint32_t w = 0;
    memcpy(&w, x, (size_t)size);
    return w;
}

/* Whether output j of kernel k agrees within tol > 0 (or to the bit): the
 * emulated arena emu against the CPU's; *worst the largest error as a
 * fraction of tol, where it is larger. */
static bool compare(const rt_program *g, const rt_kernel *k, int j, const uint8_t *cpu,
                    const uint8_t *emu, double tol, double floor, double *worst,
                    const char *where)
{
    const rt_type *t = &k->param_t[j];
    int64_t n = rt_type_numel(t), es = rt_dtype_size(t->dtype), at = 0;
    const uint8_t *a = cpu + g->buf_offset[k->param[j]], *b = emu + g->buf_offset[k->param[j]];
    double max = 0;
    for (int64_t e = 0; e < n; e++) {
        double d = error(b + e * es, a + e * es, t->dtype, floor);
        if (d > max) {
            max = d;
            at = e;
        }
    }
    if (tol > 0 && max / tol > *worst)
        *worst = max / tol;
    if (max <= tol)
        return true;
    fprintf(stderr,
            "  %s: kernel %s: parameter %d, element %lld differs from the CPU backend's: %.9g "
            "(bits %08x), CPU %.9g (%08x); error %.3g relative to |CPU| + %.3g, tolerance "
            "%.3g\n",
            where, k->name, j, (long long)at, value(b + at * es, t->dtype),
            (unsigned)word(b + at * es, es), value(a + at * es, t->dtype),
            (unsigned)word(a + at * es, es), max, floor, tol);
    return false;
}

/* n bytes (and 16 more) of zeros at a multiple of RT_ALIGN, as a GPU's
 * arena starts (cuMemAlloc's 256 bytes), so that the kernels' vector
 * loads meet the alignment they assume and the check of it. */
/* The byte ranges [lo, hi) of kernel k's parameters j0 .. j1 - 1 in the
 * arena, sorted and merged: *n of them in r (room for j1 - j0). */
typedef struct brange {
    int64_t lo, hi;
} brange;

static int cmp_brange(const void *a, const void *b)
{
    int64_t x = ((const brange *)a)->lo, y = ((const brange *)b)->lo;
    return (x > y) - (x < y);
}

static int param_ranges(const rt_program *g, const rt_kernel *k, int j0, int j1, brange *r)
{
    int n = 0;
    for (int j = j0; j < j1; j++)
        r[n++] = (brange){g->buf_offset[k->param[j]],
                          g->buf_offset[k->param[j]] + g->buf_bytes[k->param[j]]};
    qsort(r, (size_t)n, sizeof *r, cmp_brange);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && r[i].lo <= r[m - 1].hi)
            r[m - 1].hi = r[i].hi > r[m - 1].hi ? r[i].hi : r[m - 1].hi;
        else
            r[m++] = r[i];
    }
    return m;
}

/* The emulated arena a (span bytes) outside every parameter of kernel k
 * set to a pattern no result or operand of fill's makes, so that a kernel
 * that reads or writes past its buffers shows: what it read is not its
 * operand's, and what it wrote changes bytes (first_stray_write). */
static void poison_gaps(const rt_program *g, const rt_kernel *k, uint8_t *a, size_t span)
{
    brange *r = malloc((size_t)(k->nin + k->nout + 1) * sizeof *r);
    if (!r)
        abort(); /* a test's allocation */
    int n = param_ranges(g, k, 0, k->nin + k->nout, r);
    int64_t at = 0;
    for (int i = 0; i <= n; i++) {
        int64_t end = i < n ? r[i].lo : (int64_t)span;
        if (end > at)
            memset(a + at, 0xA5, (size_t)(end - at));
        if (i < n && r[i].hi > at)
            at = r[i].hi;
    }
    free(r);
}

/* The first byte below span that the launch changed (before, after)
 * outside kernel k's results, or -1. */
static int64_t first_stray_write(const rt_program *g, const rt_kernel *k, const uint8_t *before,
                                 const uint8_t *after, size_t span)
{
    brange *r = malloc((size_t)(k->nin + k->nout + 1) * sizeof *r);
    if (!r)
        abort(); /* a test's allocation */
    int n = param_ranges(g, k, k->nin, k->nin + k->nout, r);
    int64_t at = 0;
    for (int i = 0; i <= n; i++) {
        int64_t end = i < n ? r[i].lo : (int64_t)span;
        if (end > at && memcmp(before + at, after + at, (size_t)(end - at)))
            for (int64_t b = at; b < end; b++)
                if (before[b] != after[b]) {
                    free(r);
                    return b;
                }
        if (i < n && r[i].hi > at)
            at = r[i].hi;
    }
    free(r);
    return -1;
}

static uint8_t *arena_alloc(int64_t n)
{
    size_t bytes = ((size_t)n + 16 + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
    uint8_t *p = aligned_alloc(RT_ALIGN, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* embedding_grad's operands filled again (in the CPU's arena a, before it
 * is copied): ids over the whole table, and gradients with 24 random bits,
 * where fill's (multiples of 2^-12 below 1.25) would sum to the same bits
 * in any order; so a row's sum out of index order, or a row of the table
 * left out, shows in the result's bits. */
static void fill_embedding_grad(uint8_t *a, const rt_program *g, const rt_instr *in)
{
    int32_t *ids = (int32_t *)(a + g->buf_offset[in->in[0]]);
    int64_t n = rt_type_numel(&in->in_t[0]), v = in->out_t.dim[0];
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)(next() % (uint32_t)v);
    if (in->in_t[1].dtype != RT_F32)
        return; /* 16-bit gradients: few bits, summed in f32 exactly in any order */
    float *dy = (float *)(a + g->buf_offset[in->in[1]]);
    int64_t m = rt_type_numel(&in->in_t[1]);
    for (int64_t i = 0; i < m; i++)
        dy[i] = 0.25f + (float)(next() & 0xffffff) / (float)0x1000000;
}

/* A softmax's or cross-entropy's float inputs filled again: uniform in
 * [-2.5, 2.5) with 24 random bits (their products up to about 6), so that
 * the exps of a row's elements span e^12 and an element left out of a
 * row's sums, or counted in another's place, moves them by far more than
 * the tolerance; fill's values (within 1 of each other) would move them by
 * less than a sum's rounding. Scalars (adamw's step) are left alone. */
static void fill_spread(uint8_t *a, const rt_type *t)
{
    if (t->rank == 0 || (t->dtype != RT_F32 && t->dtype != RT_F16 && t->dtype != RT_BF16))
        return;
    int64_t n = rt_type_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float f = -2.5f + 5.0f * (float)(next() & 0xffffff) / (float)0x1000000;
        switch (t->dtype) {
        case RT_F32: memcpy(a + 4 * i, &f, 4); break;
        case RT_F16: ((uint16_t *)a)[i] = su_f32_to_f16(f); break;
        default: ((uint16_t *)a)[i] = su_f32_to_bf16(f); break;
        }
    }
}

/* An i32 division's operands filled again (fill's 0 .. 3 would divide
 * by zero, which the CPU backend refuses): the dividend over the whole
 * range, negatives and INT32_MIN included, the divisor in -7 .. 7 but 0,
 * with -1 where the dividend is INT32_MIN (the one quotient that
 * overflows: INT32_MIN, as the CPU backend's). A broadcast operand may
 * meet INT32_MIN's -1 elsewhere too, and quotients of both signs round
 * toward zero. */
static bool kernel_reads(const rt_kernel *k, int32_t buf)
{
    for (int i = 0; i < k->nin; i++)
        if (k->param[i] == buf)
            return true;
    return false;
}

static void fill_div(uint8_t *cpu, const rt_program *g, const rt_kernel *k, const rt_instr *in)
{
    if (in->out_t.dtype != RT_I32 || in->nin != 2 || !kernel_reads(k, in->in[1]))
        return;
    int32_t *a = (int32_t *)(cpu + g->buf_offset[in->in[0]]);
    int32_t *b = (int32_t *)(cpu + g->buf_offset[in->in[1]]);
    int64_t na = rt_type_numel(&in->in_t[0]), nb = rt_type_numel(&in->in_t[1]);
    /* a dividend the kernel makes itself (fused) is its own: its buffer,
     * which may be another value's, is left alone */
    if (kernel_reads(k, in->in[0])) {
        for (int64_t i = 0; i < na; i++)
            a[i] = (int32_t)(uint32_t)next();
        a[0] = INT32_MIN;
    }
    for (int64_t i = 0; i < nb; i++) {
        int32_t d = (int32_t)(next() % 7) + 1;
        b[i] = next() % 2 ? d : -d;
    }
    /* a single divisor (a const's, in an elementwise kernel) is -1 every
     * other time, so both ways of dividing are checked */
    static int single;
    if (nb > 1 || single++ % 2 == 0)
        b[0] = -1;
    else if (b[0] == -1 || b[0] == 1)
        b[0] = b[0] * 3;
}

/* Kernel ki of stage st: its inputs filled alike, the CPU's instructions
 * against the emulated kernel; false where they differ beyond the
 * kernel's tolerance, or the launch fails. */
static bool run_kernel(const rt_plan *p, int st, int ki, void *lib, int kind, bool x3,
                       const char *where)
{
    const rt_kernel *k = &p->kernel[ki];
    const rt_program *g = &p->stage[st];
    char sym[200];
    snprintf(sym, sizeof sym, "emu_%s", k->name);
    launcher run = (launcher)(uintptr_t)dlsym(lib, sym);
    CHECK(run != NULL);
    if (!run)
        return false;
    uint8_t *cpu = arena_alloc(g->arena_bytes), *emu = arena_alloc(g->arena_bytes);
    void **bufs = malloc((size_t)(g->nbuf + 1) * sizeof *bufs);
    void **params = malloc((size_t)(k->nin + k->nout + 1) * sizeof *params);
    for (int i = 0; i < k->nin; i++)
        fill(cpu + g->buf_offset[k->param[i]], &k->param_t[i]);
    for (int i = 0; i < k->ninstr; i++) {
        int op = g->instr[k->instr[i]].op;
        if (op == RT_OP_EMBEDDING_GRAD)
            fill_embedding_grad(cpu, g, &g->instr[k->instr[i]]);
        if (op == RT_OP_DIV)
            fill_div(cpu, g, k, &g->instr[k->instr[i]]);
        /* split3's too: a value of fill's 12 bits has no third part */
        if (op == RT_OP_SOFTMAX || op == RT_OP_XENT || op == RT_OP_XENT_GRAD ||
            op == RT_OP_SPLIT3)
            for (int j = 0; j < k->nin; j++)
                fill_spread(cpu + g->buf_offset[k->param[j]], &k->param_t[j]);
    }
    memcpy(emu, cpu, (size_t)g->arena_bytes);
    rt_cpu_ctx ctx = {.axis_size = p->axis_size, .naxes = p->naxes};
    for (int b = 0; b < g->nbuf; b++)
        bufs[b] = cpu + g->buf_offset[b];
    /* The values the kernel keeps in registers get buffers of their own
     * here: in the plan they may share bytes with a value the kernel reads
     * that an op between the group's ops makes (the memory plan's CPU order
     * writes that value after the register value's last read), which the
     * arena already holds now. */
    void **scratch = calloc((size_t)g->nbuf + 1, sizeof *scratch);
    for (int i = 0; i < k->ninstr; i++) {
        int b = g->instr[k->instr[i]].out;
        bool param = false;
        for (int j = 0; j < k->nin + k->nout; j++)
            param |= k->param[j] == b;
        if (b >= 0 && !param && !scratch[b])
            bufs[b] = scratch[b] = arena_alloc(g->buf_bytes[b]);
    }
    su_status err = {SU_OK, ""};
    bool ok = true;
    for (int i = 0; i < k->ninstr && ok; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        if (in->op == RT_OP_CONST) /* a constant the kernel reads as a literal: filled */
            fill_const(in, bufs[in->out]);
        else
            ok = rt_cpu_run(&ctx, in, bufs, &err) == 0;
    }
    for (int b = 0; b < g->nbuf; b++)
        free(scratch[b]);
    free(scratch);
    if (!ok && lenient) { /* a random program's ids out of range for these inputs */
        printf("  %s: %s: not checked: the CPU backend refused its inputs: %s\n", where, k->name,
               err.msg);
        skipped++;
        free(params);
        free(bufs);
        free(cpu);
        free(emu);
        return false;
    }
    if (!ok)
        fprintf(stderr, "  %s: %s: the CPU backend failed: %s\n", where, k->name, err.msg);
    CHECK(ok);
    for (int i = 0; i < k->nin + k->nout; i++)
        params[i] = emu + g->buf_offset[k->param[i]];
    /* the arena as the launch finds it (and the bytes arena_alloc adds past
     * it): the kernel may write its results' bytes and no others */
    size_t span = (size_t)g->arena_bytes + 16;
    uint8_t *before = ok ? malloc(span) : NULL;
    if (before) {
        poison_gaps(g, k, emu, span);
        memcpy(before, emu, span);
    }
    if (ok && run(params, (unsigned)k->grid, (unsigned)k->block, (unsigned)k->shared_bytes)) {
        fprintf(stderr, "  %s: kernel %s: the emulated launch failed: %s\n", where, k->name,
                launch_msg);
        ok = false;
    }
    if (ok && before) {
        int64_t stray = first_stray_write(g, k, before, emu, span);
        if (stray >= 0) {
            fprintf(stderr, "  %s: kernel %s wrote arena byte %lld, outside its results\n",
                    where, k->name, (long long)stray);
            ok = false;
        }
    }
    free(before);
    double tol = x3 ? tolerance_x3(g, k) : tolerance(g, k);
    double floor = error_floor(g, k);
    for (int j = k->nin; ok && j < k->nin + k->nout; j++)
        ok = compare(g, k, j, cpu, emu, tol, floor, &worst[kind], where);
    CHECK(ok);
    free(params);
    free(bufs);
    free(cpu);
    free(emu);
    return ok;
}

/* Every kernel of file (on mesh, ZeRO zero, constants defines) emulated;
 * how many ran, *coop of them cooperative. */
static int check_model(const char *file, const char *mesh, int zero, const char *defines,
                       int *coop)
{
    char path[4200], where[4400];
    if (file[0] == '/')
        snprintf(path, sizeof path, "%s", file);
    else
        snprintf(path, sizeof path, "%s/%s", check_repo_dir(), file);
    snprintf(where, sizeof where, "%s on %s%s", file, mesh, zero ? " with zero" : "");
    model md = compile(path, mesh, zero, defines);
    if (!md.plan) {
        shardc_free(md.cuda);
        return 0;
    }
    const rt_plan *p = md.plan;
    int nran = 0;
    for (int st = 0; st < p->nstages; st++) {
        int *k = malloc((size_t)(p->nkernels + 1) * sizeof *k), n = 0;
        char **src = malloc((size_t)(p->nkernels + 1) * sizeof *src);
        const char **name = malloc((size_t)(p->nkernels + 1) * sizeof *name);
        bool *co = malloc((size_t)(p->nkernels + 1) * sizeof *co);
        /* a pipeline stage's kernel of a loop body runs once per microbatch
         * under its one name: built once (the first nb), each run */
        const char **bname = malloc((size_t)(p->nkernels + 1) * sizeof *bname);
        char **bsrc = malloc((size_t)(p->nkernels + 1) * sizeof *bsrc);
        bool *bco = malloc((size_t)(p->nkernels + 1) * sizeof *bco);
        int nb = 0;
        for (int i = 0; i < p->nkernels; i++) {
            if (p->kernel[i].stage != st || p->kernel[i].module < 0)
                continue;
            int seen = 0;
            while (seen < n && strcmp(name[seen], p->kernel[i].name) != 0)
                seen++;
            char *s = seen < n ? NULL : source_of(md.cuda, st, p->kernel[i].name);
            CHECK(seen < n || s != NULL);
            if (seen < n || s) {
                bool again = seen < n;
                name[n] = p->kernel[i].name;
                k[n] = i;
                co[n] = again ? co[seen] : cooperative(s);
                src[n] = again ? src[seen] : s;
                n++;
                if (s) {
                    bname[nb] = name[n - 1];
                    bco[nb] = co[n - 1];
                    bsrc[nb++] = s;
                }
            }
        }
        void *lib = nb ? build(bname, bsrc, bco, nb, NULL) : NULL;
        for (int i = 0; lib && i < n; i++) {
            const rt_kernel *kn = &p->kernel[k[i]];
            int kind = kind_of(&p->stage[st], kn, src[i]);
            bool x3 = strstr(src[i], "sh_split3(f0, f1") != NULL;
            x3_ran += x3;
            if (!run_kernel(p, st, k[i], lib, kind, x3, where))
                continue;
            nran++;
            *coop += co[i];
            ran[co[i]][kind]++;
            int dv = 0, dk = 0, fw = 0, lse = 0;
            const rt_instr *first = &p->stage[st].instr[kn->instr[0]];
            i32_reduce_ran += kn->ninstr == 1 && (first->op == RT_OP_AMAX || first->op == RT_OP_SUM) &&
                              first->out_t.dtype == RT_I32;
            i32_div_ran += kn->ninstr == 1 && first->op == RT_OP_DIV && first->out_t.dtype == RT_I32;
            for (int j = 0; j < kn->ninstr; j++) {
                const rt_instr *in = &p->stage[st].instr[kn->instr[j]];
                if (in->op == RT_OP_XENT_LSE)
                    xent_lse_ran[kn->ninstr > 1]++;
                if (in->op == RT_OP_XENT_GRAD)
                    xent_grad_ran[in->nin == 3]++;
            }
            for (int j = 0; kn->ninstr > 1 && j < kn->ninstr; j++) {
                const rt_instr *in = &p->stage[st].instr[kn->instr[j]];
                if (in->op == RT_OP_DIV && in->out_t.dtype == RT_I32) {
                    i32_div_fused_ran++;
                    break;
                }
            }
            for (int j = 0; j < kn->ninstr; j++) {
                int op = p->stage[st].instr[kn->instr[j]].op;
                op_ran[op]++;
                dv += op == RT_OP_ATTN_DV;
                dk += op == RT_OP_ATTN_DK;
                fw += op == RT_OP_ATTENTION;
                lse += op == RT_OP_ATTN_LSE;
            }
            pairs_ran += dv && dk;
            fwd_lse_ran += fw && lse;
            lse_alone_ran += lse && !fw;
            if (kn->ninstr == 1 && first->op == RT_OP_EMBEDDING)
                emb_ran[strstr(src[i], "one thread per 16 bytes of a row") != NULL]++;
            if (kn->ninstr == 1 && first->op == RT_OP_ATTN_DELTA) {
                const char *pw = strstr(src[i], "// rows a warp: ");
                int per = pw ? atoi(pw + strlen("// rows a warp: ")) : 0;
                int64_t rows = rt_type_numel(&first->out_t) / 2;
                delta_ran[per > 0]++;
                delta_past += per > 0 && rows % per != 0;
            }
            col_split_ran += strstr(src[i], "sh_cdone[gi] = 0") != NULL;
            col_vec_ran += strstr(src[i], "the lane's columns' partial results") != NULL;
            col_vec_split_ran += strstr(src[i], "the group's last block: the runs' parts") != NULL;
            col_vec_thread_ran += strstr(src[i], "// the thread's results") != NULL;
            if (strstr(src[i], "// the sibling sum"))
                sib_ran[strstr(src[i], "sh_cdone[gi] = 0")                       ? 1
                        : strstr(src[i], "t < ") && strstr(src[i], "t += stride") ? 2
                                                                                   : 0]++;
            online_ran += strstr(src[i], "sh_online(acc, acc2, xin)") != NULL ||
                          strstr(src[i], "sh_online_vec(acc, acc2, xv)") != NULL;
            online_vec_ran += strstr(src[i], "sh_online_vec(m, s, xv);") != NULL ||
                              strstr(src[i], "sh_online_vec(acc, acc2, xv);") != NULL;
            ahead_ran += strstr(src[i], "steps' loads in flight a thread") != NULL;
            left_ran += strstr(src[i], "// the steps left, at most") != NULL;
            ahead_elem_ran += strstr(src[i], "[u] = p_") != NULL;
            wmma_ran += strstr(src[i], "wmma::mma_sync") != NULL;
            mma_ran += strstr(src[i], "sh_mma_bf16(") != NULL || strstr(src[i], "sh_mma_f16(") != NULL;
            rows32_ran += strstr(src[i], "(its rows: two tiles of 16)") != NULL;
            async_ran += strstr(src[i], "sh_cp_wait_all();") != NULL;
            split_vec_ran += strstr(src[i], "vec<__nv_bfloat16, 4> ph, pm, pl;") != NULL;
        }
        if (lib)
            dlclose(lib);
        for (int i = 0; i < nb; i++)
            free(bsrc[i]);
        free(bname);
        free(bsrc);
        free(bco);
        free(co);
        free(name);
        free(src);
        free(k);
    }
    rt_plan_free(md.plan);
    shardc_free(md.cuda);
    return nran;
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

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints the kinds of kernels that ran, cooperative or not. */
static void print_kinds(int coop)
{
    const char *sep = "";
    for (int i = 0; i < NKINDS; i++)
        if (ran[coop][i]) {
            printf("%s%d %s", sep, ran[coop][i], kind_name[i]);
            sep = ", ";
        }
}

/* ---- the init module's kernel (runtime/exec/init_gen.h) ---- */

/* The init module's source as the plan builder compiles it, run through a
 * launcher that takes the parameters as cuLaunchKernel's (a pointer to
 * each): sh_init's by-value struct does not fit emu_launch's pointers. */
static const char init_launcher[] =
    "static sh_init_args emu_init_g;\n"
    "static void *emu_init_dst;\n"
    "static void emu_init_thunk(void *) { sh_init(emu_init_g, emu_init_dst); }\n"
    "extern \"C\" int emu_sh_init(void **p, unsigned g, unsigned b)\n"
    "{\n"
    "    std::memcpy(&emu_init_g, p[0], sizeof emu_init_g);\n"
    "    std::memcpy(&emu_init_dst, p[1], sizeof emu_init_dst);\n"
    "    void *none[1] = {nullptr};\n"
    "    return emu_launch(emu_init_thunk, none, g, b, 0, false);\n"
    "}\n";

typedef int (*init_launcher_fn)(void **p, unsigned g, unsigned b);

/* One block of one tensor made by the emulated sh_init (3 blocks of 64
 * threads, so the threads stride the grid) and by the host's rt_init_fill:
 * the same bits; and not the bits of another seed. */
static void check_init_case(init_launcher_fn run, int init, double a, double b, int dtype,
                            int out, int rank, const int64_t *full, const int64_t *start,
                            const int64_t *count)
{
    rt_type t = {.dtype = (uint8_t)dtype, .rank = (uint8_t)rank};
    for (int d = 0; d < rank; d++)
        t.dim[d] = full[d];
    sh_init_args g, other;
    CHECK(rt_init_args(init, a, b, 1234, "layers.3.w", &t, start, count, out, &g));
    CHECK(rt_init_args(init, a, b, 1235, "layers.3.w", &t, start, count, out, &other));
    size_t bytes = (size_t)g.n * (size_t)rt_dtype_size(out);
    uint8_t *host = calloc(bytes + 1, 1), *emu = malloc(bytes + 1), *seed2 = calloc(bytes + 1, 1);
    memset(emu, 0xA5, bytes + 1);
    rt_init_fill(&g, host);
    rt_init_fill(&other, seed2);
    void *dst = emu, *p[2] = {&g, &dst};
    int rc = run(p, 3, 64);
    if (rc != 0)
        fprintf(stderr, "  sh_init: %s\n", launch_msg);
    CHECK_INT(rc, 0);
    bool same = memcmp(host, emu, bytes) == 0;
    if (!same)
        fprintf(stderr, "  sh_init differs from the host: init %d, %s as %s\n", init,
                rt_dtype_name(dtype), rt_dtype_name(out));
    CHECK(same);
    CHECK_INT(emu[bytes], 0xA5); /* nothing past the block */
    if (init == RT_INIT_NORMAL || init == RT_INIT_UNIFORM)
        CHECK(memcmp(host, seed2, bytes) != 0);
    if (out != dtype) { /* the master: the tensor's own values, converted */
        uint8_t *own = calloc((size_t)g.n * (size_t)rt_dtype_size(dtype) + 1, 1),
                *conv = calloc(bytes + 1, 1);
        rt_init_block(init, a, b, 1234, "layers.3.w", &t, start, count, own);
        rt_convert_floats(dtype, own, out, conv, g.n);
        CHECK(memcmp(conv, host, bytes) == 0);
        free(own);
        free(conv);
    }
    free(host);
    free(emu);
    free(seed2);
}

static void check_init_kernel(void)
{
    const char *head = "#define SH_INIT_DEVICE 1\n#define SH_INIT_KERNEL 1\n";
    size_t n = strlen(head) + strlen(cg_init_source) + sizeof init_launcher;
    char *tu = malloc(n);
    snprintf(tu, n, "%s%s%s", head, cg_init_source, init_launcher);
    void *lib = build(NULL, NULL, NULL, 0, tu);
    free(tu);
    init_launcher_fn run = lib ? (init_launcher_fn)(uintptr_t)dlsym(lib, "emu_sh_init") : NULL;
    CHECK(run != NULL);
    if (!run)
        return;
    const int64_t full2[2] = {37, 53}, start2[2] = {5, 11}, count2[2] = {20, 30};
    const int64_t z2[2] = {0, 0};
    const int64_t ids[2] = {8, 1024}, idstart[2] = {4, 512}, idcount[2] = {4, 512};
    const int64_t full3[3] = {4, 9, 16}, start3[3] = {2, 0, 8}, count3[3] = {2, 9, 8};
    const int64_t none[1] = {0};
    enum { F = RT_F32, H = RT_F16, BF = RT_BF16 };
    check_init_case(run, RT_INIT_NORMAL, 0.02, 0, F, F, 2, full2, start2, count2);
    check_init_case(run, RT_INIT_NORMAL, 1.5, 0, BF, BF, 2, full2, start2, count2);
    check_init_case(run, RT_INIT_NORMAL, 3, 0, H, H, 3, full3, start3, count3);
    check_init_case(run, RT_INIT_UNIFORM, -1, 2, F, F, 2, full2, z2, full2);
    check_init_case(run, RT_INIT_UNIFORM, -3, 2, H, H, 2, full2, start2, count2);
    /* [-0.5, 0.25) in bf16: rounding reaches 0.25, kept below it */
    check_init_case(run, RT_INIT_UNIFORM, -0.5, 0.25, BF, BF, 2, full2, z2, full2);
    check_init_case(run, RT_INIT_UNIFORM, 0, 50304, RT_I32, RT_I32, 2, ids, idstart, idcount);
    check_init_case(run, RT_INIT_UNIFORM, 0, 2, RT_BOOL, RT_BOOL, 2, full2, start2, count2);
    check_init_case(run, RT_INIT_ZEROS, 0, 0, RT_I32, RT_I32, 2, full2, start2, count2);
    check_init_case(run, RT_INIT_ONES, 0, 0, BF, BF, 3, full3, start3, count3);
    check_init_case(run, RT_INIT_NORMAL, 1, 0, F, F, 0, none, none, none); /* a scalar */
    /* master copies: a bf16 and an f16 param's values widened to f32, and
     * an f32 tensor's rounded to bf16 */
    check_init_case(run, RT_INIT_NORMAL, 0.02, 0, BF, F, 2, full2, start2, count2);
    check_init_case(run, RT_INIT_UNIFORM, -3, 2, H, F, 3, full3, start3, count3);
    check_init_case(run, RT_INIT_NORMAL, 1, 0, F, BF, 2, full2, z2, full2);
    printf("sh_init: 14 blocks emulated against the host\n");
    dlclose(lib);
}

/* `test_kernel_emulate MODEL MESH [NAME=VALUE | OPTION ...]`: every kernel
 * of one model (a path from here) on one mesh, its constants overridden as
 * -D does, and shardc's --dtype T, --zero K, --schedule S,
 * --microbatches N, --recompute and --keep-gathered as the CLI takes
 * them, against the CPU backend as above (tests/diff/diffcheck.py runs it
 * on generated programs under DIFF_EMULATE). Exit 0 when every kernel that
 * ran agrees, 1 otherwise, 2 for bad usage, 77 when it cannot run. */
static int one_model(int argc, char **argv)
{
    char path[4096], defines[2048] = "";
    if (!realpath(argv[1], path)) {
        perror(argv[1]);
        return 1;
    }
    static const char *const valued[] = {"--dtype", "--zero", "--schedule", "--microbatches",
                                         "--f32-matmul"};
    static const char *opts[64];
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) { /* the kernels' target */
            arch = argv[++i];
            continue;
        }
        if (argv[i][0] != '-') {
            size_t n = strlen(defines);
            snprintf(defines + n, sizeof defines - n, "%s%s", n ? " " : "", argv[i]);
            continue;
        }
        bool flag = !strcmp(argv[i], "--recompute") || !strcmp(argv[i], "--keep-gathered"),
             with_value = false;
        for (size_t j = 0; j < sizeof valued / sizeof *valued; j++)
            with_value |= !strcmp(argv[i], valued[j]) && i + 1 < argc;
        if ((!flag && !with_value) || nflags + 2 > (int)(sizeof opts / sizeof *opts)) {
            fprintf(stderr, "test_kernel_emulate: unknown option '%s'\n", argv[i]);
            return 2;
        }
        opts[nflags++] = argv[i];
        if (with_value)
            opts[nflags++] = argv[++i];
    }
    flags = opts;
    lenient = true;
    double t0 = now();
    int coop = 0, n = check_model(path, argv[2], 0, defines, &coop);
    printf("%s on %s: %d kernels emulated, %d cooperative, %d not checked (%.1f s); the largest "
           "error as a fraction of its tolerance:",
           argv[1], argv[2], n, coop, skipped, now() - t0);
    for (int i = K_COLUMN; i < NKINDS; i++)
        printf("%s %s %.2g", i > K_COLUMN ? "," : "", kind_name[i], worst[i]);
    printf("\n");
    unmap_launch_memory();
    rmdir(tmpdir);
    return CHECK_DONE();
}

int main(int argc, char **argv)
{
    if (argc != 1 && argc < 3) {
        fprintf(stderr, "usage: test_kernel_emulate [MODEL MESH [NAME=VALUE ...]]\n");
        return 2;
    }
    if (!rt_nvrtc_available()) {
        printf("skipped: no NVRTC\n");
        return 77;
    }
    if (!(cxx = find_cxx())) {
        printf("skipped: no C++ compiler ($CXX or c++)\n");
        return 77;
    }
    if (!mkdtemp(tmpdir) || !map_launch_memory()) {
        perror("test_kernel_emulate");
        return 1;
    }
    if (argc > 1)
        return one_model(argc, argv);
    check_emulator();
    check_init_kernel();
    check_dgelu_kernel();
    rng = 0x5eed;
    int nrun = 0, coop = 0;
    /* transformer.sh at the training tests' shapes (S=32, D=128, V=256;
     * every kernel of its 4 layers, each split dim still a few rows or
     * columns a rank): at its own shapes the 2x2 case takes 50 s (its
     * arenas, and the fibers' context switches: a few hundred ns each, one
     * per thread and barrier). */
    struct {
        const char *file, *mesh;
        int zero;
        const char *defines, *dtype; /* dtype: --dtype's, or NULL */
        const char *arch;            /* the kernels' target, or NULL for sm_80 */
        const char *f32_matmul;      /* --f32-matmul's mode, or NULL */
        const char *rows;            /* $SHARDC_EXPERIMENT_ATTN_ROWS while it compiles, or NULL */
    } cases[] = {
        {"examples/mlp.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        {"examples/transformer.sh", "2x2", 0, "S=32 D=128 V=256", NULL, NULL, NULL, NULL},
        {"examples/transformer.sh", "4x1", 1, "S=32 D=128 V=256", NULL, NULL, NULL, NULL},
        /* in bf16: each layernorm's input gradient with its gain's and
         * bias's partial sums over runs of 16 rows (norm_cols.c), 8 blocks
         * of a rank's 128 rows, each f32 column sum of bf16 elements */
        {"examples/transformer.sh", "2x2", 0, "S=32 D=128 V=256", "bf16", NULL, NULL, NULL},
        {"tests/models/mlp_bf16.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/mlp_bf16.sh", "4x1", 1, "", NULL, NULL, NULL, NULL},
        {"tests/models/mlp_bf16_momentum.sh", "2x2", 3, "", NULL, NULL, NULL, NULL},
        {"tests/models/vocab_parallel.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        /* softmax, rmsnorm unsplit */
        {"tests/models/vocab_parallel.sh", "2x1", 0, "", NULL, NULL, NULL, NULL},
        {"tests/lit/cuda/i32.ir", "1", 0, "", NULL, NULL, NULL, NULL},
        /* an embedding's rows of 6 f32: an element a thread */
        {"tests/lit/cuda/embedding.sh", "2", 0, "", NULL, NULL, NULL, NULL},
        /* attn_delta's warps with rows past the last */
        {"tests/models/attn_delta_rows.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        /* cross_entropy_lse alone (before its loss) */
        {"tests/models/xent_lse.ir", "2", 0, "", NULL, NULL, NULL, NULL},
        /* amax and sum of i32, kernels of their own */
        {"tests/models/i32_reduce.sh", "2", 0, "", NULL, NULL, NULL, NULL},
        /* div of i32, a kernel of its own */
        {"tests/models/i32_div.sh", "2", 0, "", NULL, NULL, NULL, NULL},
        /* attention tiles partly empty */
        {"tests/models/attn_shapes.sh", "1", 0, "B=1 H=1", NULL, NULL, NULL, NULL},
        /* for sm_75: its f32 forward on CUDA cores (for sm_80, tensor cores) */
        {"tests/models/attn_shapes.sh", "1", 0, "B=1 H=1", NULL, "sm_75", NULL, NULL},
        {"tests/models/attn_bf16.sh", "1", 0, "", NULL, NULL, NULL, NULL}, /* attention on tensor cores */
        {"tests/models/attn_bf16.sh", "2", 0, "", NULL, NULL, NULL, NULL}, /* and over split queries */
        {"tests/models/attn_tiles.sh", "1", 0, "", NULL, NULL, NULL, NULL}, /* tiles copied, and staged */
        /* the forwards of 32 rows a warp (an experiment, codegen/cuda_ops.c's
         * attn_rows32): causal and not, keys fewer than queries and more, f16,
         * queries split, GPT-2's head width, wider heads (16 rows) */
        {"tests/models/attn_bf16.sh", "2", 0, "", NULL, NULL, NULL, "32"},
        {"tests/models/attn_tiles.sh", "1", 0, "", NULL, NULL, NULL, "32"},
        /* f32 on tensor cores, split queries */
        {"tests/models/attn_f32.sh", "2", 0, "", NULL, NULL, NULL, NULL},
        /* for sm_75, where f16 attention takes WMMA (bf16 the CUDA cores) */
        {"tests/models/attn_bf16.sh", "1", 0, "", NULL, "sm_75", NULL, NULL},
        /* ids, classes, tiles overhanging */
        {"tests/models/kernel_shapes.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        /* bool, comparisons, where */
        {"tests/models/select_masks.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        /* clip's norm as one kernel: parts of two chunks, the factor in its
         * epilogue (1x1), partial sums before their all-reduce (2x2) */
        {"tests/models/clip_total.sh", "1x1", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/clip_total.sh", "1x1", 0, "", "bf16", NULL, NULL, NULL},
        {"tests/models/clip_total.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        /* concats with their branches in elementwise kernels (RoPE's
         * rotation, three pieces along a middle dim, nested) and their
         * gradients' zero pads */
        {"tests/models/concat_views.sh", "2x2", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/concat_views.sh", "1x1", 0, "", "bf16", NULL, NULL, NULL},
        /* a layernorm's bias and gain gradients in one kernel (sibling
         * sums), each of the column kernels' ways */
        {"tests/models/sibling_sums.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        /* a cross_entropy and its gradient in one kernel (the second pass
         * over each row), one const scaling both (transformer.sh on 4x1
         * above has such a kernel too) */
        {"tests/lit/cuda/cross-entropy-shared-const.ir", "1", 0, "", NULL, NULL, NULL, NULL},
        /* and over GPT-2's vocabulary in bf16, both passes 4 loads ahead */
        {"tests/models/xent_rows.sh", "1", 0, "R=4", NULL, NULL, NULL, NULL},
        /* a vector's views at once, or lane by lane where a concat's
         * pieces or a broadcast along the last dim do not allow it */
        {"tests/models/view_lanes.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        /* and an operand every lane reads one element of (a [1] expanded
         * over a concat's pieces) loaded once */
        {"tests/models/view_shared.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        /* routing, experts by all-to-all */
        {"examples/moe.sh", "2x2", 0, "S=16 D=64 F=64 L=1", NULL, NULL, NULL, NULL},
        /* RoPE, grouped-query attention (4 heads of 32, 2 for k and v) on
         * tensor cores, SwiGLU, rmsnorm, clipping, in bf16 */
        {"examples/llama.sh", "2x2", 0, "S=16 D=128 H=4 G=2 F=352 V=64 L=1", "bf16", NULL, NULL, NULL},
        /* grouped-query attention, its kernels reading the key heads
         * themselves and summing each one's gradient over its group: f32,
         * bf16 (multi-query, and with the heads inner), f16; on 2, a
         * rank's share of the batch; for sm_75, f32 and bf16 on the CUDA
         * cores and f16 on WMMA */
        {"tests/models/attn_groups.sh", "1", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/attn_groups.sh", "2", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/attn_groups.sh", "1", 0, "", NULL, "sm_75", NULL, NULL},
        /* attn_lse alone (f32, bf16 with the heads inner, f16 grouped, bf16
         * with k's heads alone inner), for sm_80 and sm_75 */
        {"tests/models/attn_lse.ir", "1", 0, "", NULL, NULL, NULL, NULL},
        {"tests/models/attn_lse.ir", "1", 0, "", NULL, "sm_75", NULL, NULL},
        /* f32 matmuls as bf16 parts: the splits (the products are cuBLASLt's) */
        {"examples/transformer.sh", "2x2", 0, "S=32 D=128 V=256 L=1", NULL, NULL, "bf16x3", NULL},
        /* and an element a thread, where a split's run does not divide by 4 */
        {"tests/models/parts_odd.sh", "1", 0, "", NULL, NULL, "bf16x3", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = now();
        int c = 0;
        const char *opt[4];
        nflags = 0;
        if (cases[i].dtype)
            opt[nflags++] = "--dtype", opt[nflags++] = cases[i].dtype;
        if (cases[i].f32_matmul)
            opt[nflags++] = "--f32-matmul", opt[nflags++] = cases[i].f32_matmul;
        flags = opt;
        arch = cases[i].arch ? cases[i].arch : "sm_80";
        if (cases[i].rows)
            setenv("SHARDC_EXPERIMENT_ATTN_ROWS", cases[i].rows, 1);
        int n = check_model(cases[i].file, cases[i].mesh, cases[i].zero, cases[i].defines, &c);
        unsetenv("SHARDC_EXPERIMENT_ATTN_ROWS");
        printf("%s on %s%s%s%s%s%s%s for %s: %d kernels emulated, %d cooperative (%.1f s)\n",
               cases[i].file, cases[i].mesh, cases[i].zero ? " with zero" : "",
               cases[i].dtype ? " in " : "", cases[i].dtype ? cases[i].dtype : "",
               cases[i].f32_matmul ? " with f32 matmuls as " : "",
               cases[i].f32_matmul ? cases[i].f32_matmul : "",
               cases[i].rows ? " with attention's 32 rows a warp" : "", arch, n, c, now() - t0);
        CHECK(n > 0);
        nrun += n;
        coop += c;
    }
    printf("%d kernels emulated: %d alone (", nrun, nrun - coop);
    print_kinds(0);
    printf("), %d cooperative (", coop);
    print_kinds(1);
    printf(")\nthe largest error as a fraction of its tolerance:");
    for (int i = K_COLUMN; i < NKINDS; i++)
        printf("%s %s %.2g", i > K_COLUMN ? "," : "", kind_name[i], worst[i]);
    printf("\n");
    CHECK(ran[0][K_MULTI] >= 5);
    CHECK(coop >= 140); /* 158 when written */
    printf("attention pairs (attn_dv and attn_dk in one kernel): %d\n", pairs_ran);
    CHECK(pairs_ran >= 3);
    printf("attention with its lse in one kernel: %d; attn_lse alone: %d\n", fwd_lse_ran,
           lse_alone_ran);
    CHECK(fwd_lse_ran >= 10);
    printf("attn_delta kernels: %d a lane a column, %d a vector a lane\n", delta_ran[0],
           delta_ran[1]);
    /* heads of whole 16-byte vectors a vector a lane (transformer.sh's f32
     * of 32 and 64, llama.sh's bf16 of 32, attn_bf16.sh's, attn_delta_rows.sh's
     * three with a warp's rows past the last), attn_shapes.sh's odd widths
     * a lane a column (12 and 36 when written) */
    printf("attn_delta kernels with a warp's rows past the last: %d\n", delta_past);
    CHECK(delta_ran[0] >= 6 && delta_ran[1] >= 20 && delta_past >= 3);
    /* rows of whole 16-byte words a word a thread (transformer.sh's f32
     * of 128, llama.sh's bf16, ...), the others an element a thread
     * (lit/cuda/embedding.sh's rows of 6 f32) */
    printf("embedding kernels: %d an element a thread, %d 16 bytes a thread\n", emb_ran[0],
           emb_ran[1]);
    CHECK(emb_ran[0] >= 1 && emb_ran[1] >= 4);
    /* the last of a group's blocks sums the parts (transformer.sh's norm
     * and bias gradients over 256 rows: 9 kernels on 2x2 when written) */
    printf("column reductions split over blocks: %d\n", col_split_ran);
    CHECK(col_split_ran >= 9);
    /* kernel_shapes.sh's four (three split) and the models' bf16 and f32
     * norm and bias gradients */
    printf("column reductions of vectors a lane: %d, %d of them split over blocks\n", col_vec_ran,
           col_vec_split_ran);
    CHECK(col_vec_ran >= 4 && col_vec_split_ran >= 3);
    /* kernel_shapes.sh's sum over 3 rows, and the models' bias and norm
     * gradients summed over the batch first */
    printf("column reductions over a short axis, a thread per vector of results: %d\n",
           col_vec_thread_ran);
    CHECK(col_vec_thread_ran >= 1);
    /* sibling_sums.sh's five (two split, one not, two a thread a result
     * or vector), and transformer.sh's layernorms' gradients on one rank */
    printf("column reductions with a sibling sum: %d by blocks, %d split over blocks, %d a thread "
           "a result\n", sib_ran[0], sib_ran[1], sib_ran[2]);
    CHECK(sib_ran[0] >= 1 && sib_ran[1] >= 2 && sib_ran[2] >= 2);
    /* kernel_shapes.sh's rows of 40000: the softmax and the cross-entropy
     * gradient (2 when written) */
    printf("softmax and cross-entropy gradients with the max and sum online: %d\n", online_ran);
    CHECK(online_ran >= 2);
    /* kernel_shapes.sh's cross-entropies (over 3000 classes and 40000: 4
     * floats a load) and its rows of 40000, and the GPT-like models'
     * cross-entropies */
    printf("kernels taking a vector's elements online at once: %d\n", online_vec_ran);
    CHECK(online_vec_ran >= 4);
    /* one layer's matmuls (forward, and backward's data and weight
     * gradients), the lm head's, each operand split */
    /* kernel_shapes.sh's cross-entropies, softmaxes and gradients over long
     * rows (of 3000, 5003, 40000 and 56000: a thread's steps loaded ahead,
     * then 1 to 3 steps left; the 5003 classes an element a load), its
     * means over rows of 300 and 58 (a warp's), and other models' mse and
     * sums over rows (17 when written, 14 with steps left, 2 an element a
     * step) */
    printf("row kernels loading steps ahead: %d, %d with steps left, %d an element a step\n",
           ahead_ran, left_ran, ahead_elem_ran);
    CHECK(ahead_ran >= 15 && left_ran >= 12 && ahead_elem_ran >= 2);
    printf("split3 kernels (f32 matmuls' operands as bf16 parts): %d, %d of them 4 elements a "
           "thread\n", op_ran[RT_OP_SPLIT3], split_vec_ran);
    CHECK(op_ran[RT_OP_SPLIT3] >= 16);
    /* the kernels of single i32 ops: a vocabulary-parallel step's checks of
     * its ids and labels (vocab_parallel.sh on 2x2) and its amax of row
     * numbers, i32_reduce.sh's amax and sums, i32_div.sh's divisions (3
     * a rank, 2 ranks), and its divisions by consts inside elementwise
     * kernels (2 a rank) */
    printf("kernels of check_ids %d, check_labels %d, i32 amax and sum %d, i32 div %d, "
           "elementwise kernels dividing i32 by a const %d\n",
           op_ran[RT_OP_CHECK_IDS], op_ran[RT_OP_CHECK_LABELS], i32_reduce_ran, i32_div_ran,
           i32_div_fused_ran);
    CHECK(op_ran[RT_OP_CHECK_IDS] >= 2 && op_ran[RT_OP_CHECK_LABELS] >= 2);
    CHECK(i32_reduce_ran >= 6);
    CHECK(i32_div_ran >= 3);
    CHECK(i32_div_fused_ran >= 2);
    /* cross_entropy_lse alone: xent_lse.ir's rows of 96 (a warp's) and
     * 1500 (a block's); stored by the loss's kernel: the training models'
     * (transformer.sh's and llama.sh's among them); the gradients from
     * it: all of those; a gradient finding its max and sum itself:
     * xent_lse.ir's third */
    printf("kernels of cross_entropy_lse %d, of cross_entropy storing it %d, of "
           "cross_entropy_grad from it %d, of cross_entropy_grad without it %d\n",
           xent_lse_ran[0], xent_lse_ran[1], xent_grad_ran[1], xent_grad_ran[0]);
    CHECK(xent_lse_ran[0] >= 2 && xent_lse_ran[1] >= 6 && xent_grad_ran[1] >= 8 &&
          xent_grad_ran[0] >= 1);
    CHECK(split_vec_ran >= 12 && op_ran[RT_OP_SPLIT3] - split_vec_ran >= 4);
    CHECK(lse_alone_ran >= 6);
    printf("attention kernels on tensor cores: %d through mma.sync (%d with the tiles copied by "
           "cp.async), %d through WMMA\n", mma_ran, async_ran, wmma_ran);
    /* attn_bf16.sh's forwards of width 32 and 48 and attn_tiles.sh's of
     * 64 (its wider ones keep 16 rows a warp) */
    printf("attention forwards of 32 rows a warp: %d\n", rows32_ran);
    CHECK(rows32_ran >= 6);
    /* attn_bf16.sh on 1 and 2 for sm_80: 7 forwards (bf16 causal, plain,
     * heads inner, not folded, recomputed; f16 over split queries on 2, not
     * folded), lse alone or with the forward, and their backward's stats,
     * dq, dk, dv and a pair: 32 when written, 59 with the lse kernels and
     * the three attentions after them; llama.sh's grouped-query attention
     * in bf16 some more. For sm_75 the f16 attentions and their backward on
     * WMMA (9). Attention with its lse: 21 kernels, the lse alone 6 (the
     * unfolded attentions', on 1 and 2 for sm_80 and on 1 for sm_75). */
    CHECK(mma_ran >= 30);
    /* the kernels of head widths up to 64 on mma.sync take two copies of
     * the other side's tiles (attn_bf16.sh's, llama.sh's, attn_tiles.sh's
     * o); attn_tiles.sh's w, of 128, stages them between barriers: its
     * forward, attn_dq and pair */
    CHECK(async_ran >= 40);
    CHECK(mma_ran - async_ran >= 3);
    CHECK(wmma_ran >= 4);
    /* f32 attention and its backward on tensor cores (as bf16 parts):
     * attn_shapes.sh's (forwards with their lse and alone, attn_dq, attn_dv
     * and a pair), attn_f32.sh's (over split queries, heads inner), and
     * transformer.sh's on its meshes */
    printf("f32 attention kernels on tensor cores: %d\n", x3_ran);
    CHECK(x3_ran >= 28);
    /* the ops whose kernels cooperate, each run at least once */
    static const int need[] = {RT_OP_ATTENTION, RT_OP_ATTN_PROBS, RT_OP_ATTN_STATS,
                               RT_OP_ATTN_DQ, RT_OP_ATTN_DK, RT_OP_ATTN_DV, RT_OP_ATTN_LSE,
                               RT_OP_ATTN_DELTA, RT_OP_SOFTMAX,
                               RT_OP_LAYERNORM, RT_OP_RMSNORM, RT_OP_XENT, RT_OP_XENT_GRAD,
                               RT_OP_EMBEDDING_GRAD, RT_OP_SUM, RT_OP_MEAN, RT_OP_AMAX};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (!op_ran[need[i]])
            fprintf(stderr, "  no kernel of %s ran\n", rt_ops[need[i]].name);
        CHECK(op_ran[need[i]] > 0);
    }
    if (emu_cache_hits)
        printf("compiled libraries from $SHARDC_EMU_CACHE: %d\n", emu_cache_hits);
    unmap_launch_memory();
    rmdir(tmpdir);
    return CHECK_DONE();
}
