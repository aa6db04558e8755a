/* test_plan_cuda.c: the kernels of real plans (codegen/plan_build.c with
 * NVRTC). Every example (examples/X.sh) on its default mesh, and a few on
 * sharded meshes, compiles to a plan whose modules hold a non-empty cubin
 * (an ELF file naming the module's entry) for sm_80 and for sm_90 and PTX
 * for compute_90 with the entry's .entry line; the kernels are those
 * `--emit cuda` prints, and layers that are the same code share a
 * module. The plan is then run on paper in the order a GPU backend runs
 * it (each kernel at its anchor, reading its first nin parameters and
 * writing the rest; the other instructions in order) and in program order:
 * no read finds its buffer written over by another since it was written.
 * `--arch none` gives the same plan without kernels. The cuda backend
 * would run every instruction (rt_cuda_check_plan).
 *
 * Needs NVRTC, not a GPU: a build without it prints "skipped: no NVRTC"
 * and exits 77. The cache is $SHARDC_CACHE_DIR when set (ctest sets the
 * build folder's), else none. */
#include "shardc.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/exec/cuda.h"
#include "runtime/plan/plan.h"
#include "check.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_plan_cuda.XXXXXX";

/* The plan of file on mesh (NULL: its default) for archs; NULL on failure. */
static rt_plan *compile(const char *file, const char *mesh, const char *archs)
{
    char path[4200], out[4300];
    su_status err;
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    snprintf(out, sizeof out, "%s/plan", tmpdir);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    char *e = NULL;
    bool ok = (!mesh || shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK) &&
              shardc_options_set_archs(opt, archs, &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK &&
              shardc_compile_file(opt, path, &prog, &e) == SHARDC_OK &&
              shardc_program_save_plan(prog, out, &e) == SHARDC_OK;
    rt_plan *p = ok ? rt_plan_load(out, &err) : NULL;
    if (!p)
        fprintf(stderr, "  %s on %s: %s\n", file, mesh ? mesh : "its mesh", e ? e : err.msg);
    CHECK(p != NULL);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return p;
}

static bool has(const uint8_t *data, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(data + i, s, n))
            return true;
    return false;
}

/* Each module: cubins for sm_80 and sm_90, ELF files that name each of
 * its entries; PTX for compute_90 with ".entry NAME" for each. */
static void check_modules(const rt_plan *p, const char *where)
{
    int bad = 0;
    for (int i = 0; i < p->nmodules; i++) {
        const rt_module *m = &p->module[i];
        bool ok = m->nentry >= 1 && m->ncubin == 2 && !strcmp(m->cubin[0].arch, "sm_80") &&
                  !strcmp(m->cubin[1].arch, "sm_90") && !strcmp(m->ptx.arch, "compute_90");
        for (int e = 0; ok && e < m->nentry; e++) {
            for (int j = 0; ok && j < m->ncubin; j++)
                ok = m->cubin[j].len > 64 && !memcmp(m->cubin[j].data, "\177ELF", 4) &&
                     has(m->cubin[j].data, m->cubin[j].len, m->entry[e]);
            char entry[300];
            snprintf(entry, sizeof entry, ".entry %s(", m->entry[e]);
            ok = ok && strstr((char *)m->ptx.data, entry);
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s: module %d (%s) lacks a cubin or its PTX\n", where, i,
                    m->entry[0]);
    }
    CHECK_INT(bad, 0);
}

/* ---- the plan run on paper ---- */

/* Per instruction of stage st: the kernel it belongs to, -1 none
 * (malloc'd). */
static int32_t *owners(const rt_plan *p, int st)
{
    const rt_program *g = &p->stage[st];
    int32_t *own = malloc(((size_t)g->ninstr + 1) * sizeof *own);
    for (int i = 0; i < g->ninstr; i++)
        own[i] = -1;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernel[k].stage == st)
            for (int j = 0; j < p->kernel[k].ninstr; j++)
                own[p->kernel[k].instr[j]] = k;
    return own;
}

/* Writes are byte ranges of the arena: an instruction writes its result's
 * buffer (a kernel its written parameters), except that an insert over
 * its own one-row bucket writes only its columns, and an extract that is a
 * view of its bucket's columns (rt_bucket_view) writes nothing. */
typedef struct wev {
    int64_t lo, hi, t;
} wev;

typedef struct paper {
    const rt_program *g;
    int64_t *written;   /* per buffer: the time its value was written, -1 never */
    wev *ev;
    int nev;
    int bad;
    char first[256];
} paper;

static void event(paper *s, int64_t lo, int64_t hi, int64_t t)
{
    s->ev = realloc(s->ev, ((size_t)s->nev + 1) * sizeof *s->ev);
    s->ev[s->nev++] = (wev){lo, hi, t};
}

static void write_buf(paper *s, int32_t b, int64_t t)
{
    s->written[b] = t;
    event(s, s->g->buf_offset[b], s->g->buf_offset[b] + s->g->buf_bytes[b], t);
}

/* A read of bytes [lo, hi) of buffer b at time t: b written before, and
 * none of those bytes written since. */
static void read_range(paper *s, int32_t b, int64_t lo, int64_t hi, int64_t t)
{
    bool ok = s->written[b] >= 0;
    for (int i = s->nev - 1; ok && i >= 0 && s->ev[i].t > s->written[b]; i--)
        ok = s->ev[i].lo >= hi || s->ev[i].hi <= lo || s->ev[i].lo == s->ev[i].hi;
    if (!ok && s->bad++ == 0)
        snprintf(s->first, sizeof s->first, "buffer %d read at %lld %s", b, (long long)t,
                 s->written[b] < 0 ? "was never written" : "was written over");
}

static void read_buf(paper *s, int32_t b, int64_t t)
{
    read_range(s, b, s->g->buf_offset[b], s->g->buf_offset[b] + s->g->buf_bytes[b], t);
}

/* An instruction outside kernels: its reads, then its writes. */
static void run_instr(paper *s, const rt_instr *in, int64_t t)
{
    const rt_program *g = s->g;
    const rt_type *bt = &in->in_t[0];
    bool one_row = in->nin && bt->rank == 2 && bt->dim[0] == 1;
    if (in->op == RT_OP_INSERT && one_row && in->out == in->in[0]) {
        /* in place: reads x, writes x's columns; the rest of the bucket
         * stays as it is, read by no one here (gradients computed in their
         * columns early may already lie there) */
        int64_t c = g->buf_offset[in->out] + in->offset * rt_dtype_size(bt->dtype);
        int64_t w = rt_type_bytes(&in->in_t[1]);
        read_buf(s, in->in[1], t);
        s->written[in->out] = t;
        event(s, c, c + w, t);
        return;
    }
    for (int j = 0; j < in->nin; j++)
        read_buf(s, in->in[j], t);
    if (in->op == RT_OP_EXTRACT &&
        rt_bucket_view(in, 0, g->buf_offset[in->in[0]], g->buf_offset[in->out])) {
        s->written[in->out] = t; /* the bucket's bytes, as they are */
        return;
    }
    if (in->out >= 0)
        write_buf(s, in->out, t);
}

/* Stage st in kernel order (kernels true) or program order: the reads
 * that find their buffer written over, or never written. */
static int run_on_paper(const rt_plan *p, int st, bool kernels, const char *where)
{
    const rt_program *g = &p->stage[st];
    paper s = {.g = g};
    s.written = malloc(((size_t)g->nbuf + 1) * sizeof *s.written);
    for (int b = 0; b < g->nbuf; b++)
        s.written[b] = -1;
    int32_t *own = owners(p, st);
    for (int t = 0; t < g->ninstr; t++) {
        const rt_instr *in = &g->instr[t];
        const rt_kernel *k = kernels && own[t] >= 0 ? &p->kernel[own[t]] : NULL;
        if (k && k->instr[k->ninstr - 1] != t)
            continue;
        if (k) {
            for (int j = 0; j < k->nin; j++)
                read_buf(&s, k->param[j], t);
            for (int j = k->nin; j < k->nin + k->nout; j++)
                write_buf(&s, k->param[j], t);
            continue;
        }
        run_instr(&s, in, t);
    }
    for (int i = 0; i < p->nio; i++) { /* read after the run */
        const rt_io *io = &p->io[i];
        if (io->stage != st)
            continue;
        if (io->kind != RT_IO_INPUT && io->buffer >= 0)
            read_buf(&s, io->update >= 0 ? io->update : io->buffer, g->ninstr);
    }
    if (s.bad)
        fprintf(stderr, "  %s, stage %d, %s order: %d bad reads; the first: %s\n", where, st,
                kernels ? "kernel" : "program", s.bad, s.first);
    free(own);
    free(s.written);
    free(s.ev);
    return s.bad;
}

static void check_example(const char *file, const char *mesh)
{
    char where[512];
    snprintf(where, sizeof where, "%s on %s", file, mesh ? mesh : "its mesh");
    rt_plan *p = compile(file, mesh, "sm_80,sm_90");
    if (!p)
        return;
    CHECK(p->nkernels > 0);
    CHECK(p->nmodules > 0 && p->nmodules <= p->nkernels);
    check_modules(p, where);
    su_status err;
    int rc = rt_cuda_check_plan(p, &err); /* the cuda backend runs all of it */
    if (rc)
        fprintf(stderr, "  %s: %s\n", where, err.msg);
    CHECK_INT(rc, 0);
    for (int st = 0; st < p->nstages; st++) {
        CHECK_INT(run_on_paper(p, st, true, where), 0);
        CHECK_INT(run_on_paper(p, st, false, where), 0);
    }
    rt_plan *cpu = compile(file, mesh, "none");
    if (cpu) {
        CHECK_INT(cpu->nkernels, 0);
        CHECK_INT(cpu->nmodules, 0);
        CHECK_INT(cpu->nstages, p->nstages);
        for (int st = 0; st < p->nstages && st < cpu->nstages; st++)
            CHECK_INT(cpu->stage[st].ninstr, p->stage[st].ninstr);
    }
    rt_plan_free(cpu);
    rt_plan_free(p);
}

/* Every example (examples/X.sh) on its default mesh. */
static void check_all_examples(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/examples", check_repo_dir());
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".sh")) {
            check_example(e->d_name, NULL);
            n++;
        }
    }
    if (d)
        closedir(d);
    CHECK(n >= 3);
}

/* The kernels `--emit cuda` prints (each fused group's, then those of
 * single ops) are the plan's, in order, then come its matmul kernels
 * (cuBLASLt's, no CUDA C: one per layer's first MLP matmul with its bias),
 * and the transformer's layers share modules. */
static void check_kernels_are_emitted(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/transformer.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    char *text = NULL, *e = NULL;
    CHECK(shardc_compile_file(opt, path, &prog, &e) == SHARDC_OK);
    CHECK(prog && shardc_program_emit(prog, "cuda", &text, NULL, &e) == SHARDC_OK);
    rt_plan *p = compile("transformer.sh", NULL, "sm_80,sm_90");
    int n = 0, bad = 0;
    for (const char *s = text; p && s && (s = strstr(s, "\n// k")); s++) {
        const char *name = s + 4, *colon = strchr(name, ':');
        if (!colon || colon - name > 200)
            continue;
        bool same = n < p->nkernels && (size_t)(colon - name) == strlen(p->kernel[n].name) &&
                    !strncmp(name, p->kernel[n].name, (size_t)(colon - name));
        if (!same && bad++ < 3)
            fprintf(stderr, "  kernel %d: --emit cuda has %.*s\n", n, (int)(colon - name), name);
        n++;
    }
    if (p) {
        CHECK_INT(bad, 0);
        int nmm = 0, nbias = 0, nres = 0;
        for (int k = n; k < p->nkernels; k++) {
            bool mm = p->kernel[k].strategy == RT_KS_MATMUL && p->kernel[k].module == -1;
            nmm += mm;
            nbias += mm && p->kernel[k].epilogue == RT_EPI_BIAS;
            nres += mm && (p->kernel[k].epilogue & RT_EPI_RESIDUAL);
        }
        CHECK_INT(nbias, 4); /* L = 4 layers: the MLP's first matmul */
        /* and a residual in 4 a layer, through the constrain of a tensor
         * axis of one rank: the attention's output projection and the
         * MLP's second matmul, the data gradients of v and q */
        CHECK_INT(nres, 16);
        CHECK_INT(p->nkernels, n + nmm);
        CHECK_INT(nmm, nbias + nres);
        CHECK(p->nmodules * 2 < p->nkernels);
    }
    rt_plan_free(p);
    shardc_free(text);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

int main(void)
{
    if (!rt_nvrtc_available()) {
        printf("skipped: no NVRTC\n");
        return 77;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    check_all_examples();
    check_example("mlp.sh", "2x2");
    check_example("transformer.sh", "2x2");
    check_example("pipeline.sh", "2x2x2");
    check_kernels_are_emitted();
    char plan[64];
    snprintf(plan, sizeof plan, "%s/plan", tmpdir);
    unlink(plan);
    rmdir(tmpdir);
    return CHECK_DONE();
}
