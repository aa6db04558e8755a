/* test_plan_kernels.c: kernels in the plan file (runtime/plan/plan_io.c, the
 * KERN section of format 4): a plan with modules and kernels (two of them
 * sharing a module) built in memory writes, reads back field by field and
 * writes the same bytes; the validator's rules on modules and kernels,
 * each with its message; matmul kernels (cuBLASLt with an epilogue) the
 * same way; a KERN section cut short at every length,
 * flipped, or holding a length, an instruction or an image that does not
 * fit, is refused naming the section, the module or the kernel; `shardc
 * --emit schedule` text names each kernel at its anchor. No GPU and no
 * NVRTC are needed: the images are stand-ins.
 *
 *   test_plan_kernels                    runs the tests
 *   test_plan_kernels --write-seeds DIR  writes the fuzz seeds of kernel
 *                                        plans (tests/fuzz/corpus/plan)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_text.h"

#define ERRLEN 1024

/* ---- the fixture: x + b, gelu, a row sum, a matmul, exp, exp ---- */

static rt_type ty(int dtype, int rank, int64_t d0, int64_t d1)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = (uint8_t)dtype;
    t.rank = (uint8_t)rank;
    t.dim[0] = d0;
    t.dim[1] = d1;
    return t;
}

enum { NBUF = 9, NINSTR = 9, NKERN = 4, NMOD = 3 };

/* A plan and its storage; make() fills it again, so tests may break it. */
typedef struct fixture {
    rt_plan p;
    rt_program stage;
    rt_io io[5];
    int64_t bytes[NBUF], offs[NBUF];
    rt_instr instr[NINSTR];
    rt_module mod[NMOD + 1];     /* + 1: room for an init module */
    char *entry[NMOD + 1][2];
    rt_image cubin[NMOD + 1][2];
    rt_kernel kern[NKERN];
    int32_t param[NKERN][5], list[NKERN][4];
    rt_type param_t[NKERN][5];
} fixture;

static uint8_t cubin80[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 80};
static uint8_t cubin90[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 90, 0};
static char ptx[] = ".version 8.8\n.target sm_90\n.address_size 64\n";

static rt_instr *add(fixture *f, int op, int out, rt_type out_t, int nin, int a, rt_type at,
                     int b, rt_type bt)
{
    rt_instr *in = &f->instr[f->stage.ninstr++];
    in->op = (uint16_t)op;
    in->nin = (uint8_t)nin;
    in->out = out;
    in->out_t = out_t;
    in->io = -1;
    in->in[0] = a, in->in_t[0] = at;
    in->in[1] = b, in->in_t[1] = bt;
    if (nin < 2)
        memset(&in->in_t[1], 0, sizeof in->in_t[1]), in->in[1] = 0;
    if (nin < 1)
        memset(&in->in_t[0], 0, sizeof in->in_t[0]), in->in[0] = 0;
    return in;
}

/* A module with stand-in images for sm_80, sm_90 and compute_90, and
 * nentry entries (format 10). */
static void module(fixture *f, int nentry, const char *e0, const char *e1)
{
    int m = f->p.nmodules++;
    f->cubin[m][0] = (rt_image){(char *)"sm_80", cubin80, sizeof cubin80};
    f->cubin[m][1] = (rt_image){(char *)"sm_90", cubin90, sizeof cubin90};
    f->entry[m][0] = (char *)e0;
    f->entry[m][1] = (char *)e1;
    f->mod[m] = (rt_module){nentry, f->entry[m], 2, f->cubin[m],
                            {(char *)"compute_90", (uint8_t *)ptx, strlen(ptx)}};
}

/* Kernel k: its module, its instructions, its reads then its writes as
 * (buffer, type). */
static rt_kernel *kernel(fixture *f, const char *name, int mod, int strategy, int64_t grid,
                         int block, int shared, int ninstr, const int *instr, int nin, int nout,
                         ...)
{
    int k = f->p.nkernels++;
    rt_kernel *kr = &f->kern[k];
    kr->stage = 0;
    kr->name = (char *)name;
    kr->module = mod;
    kr->entry = 0;
    kr->strategy = (uint8_t)strategy;
    kr->grid = grid;
    kr->block = block;
    kr->shared_bytes = shared;
    kr->ninstr = ninstr;
    kr->instr = f->list[k];
    memcpy(f->list[k], instr, (size_t)ninstr * sizeof *instr);
    kr->nin = nin;
    kr->nout = nout;
    kr->param = f->param[k];
    kr->param_t = f->param_t[k];
    va_list ap;
    va_start(ap, nout);
    for (int j = 0; j < nin + nout; j++) {
        f->param[k][j] = va_arg(ap, int);
        f->param_t[k][j] = va_arg(ap, rt_type);
    }
    va_end(ap);
    return kr;
}

static void make(fixture *f)
{
    static char *const names[] = {(char *)"dp"};
    enum { F = RT_F32 };
    memset(f, 0, sizeof *f);
    f->p.naxes = 1;
    f->p.axis_name[0] = names[0];
    f->p.axis_size[0] = 2;
    f->p.stage_axis = -1;
    f->p.nstages = 1;
    f->p.stage = &f->stage;
    f->p.loss = -1;
    f->p.init_module = -1;
    f->p.report = (char *)"{}";
    f->p.report_len = 2;
    f->p.kernel = f->kern;
    f->p.module = f->mod;
    f->stage.buf_bytes = f->bytes;
    f->stage.buf_offset = f->offs;
    f->stage.instr = f->instr;
    static const int64_t sizes[NBUF] = {128, 32, 128, 128, 16, 256, 128, 128, 128};
    for (int b = 0; b < NBUF; b++) {
        f->offs[b] = f->stage.arena_bytes;
        f->bytes[b] = sizes[b];
        f->stage.arena_bytes += RT_ALIGN;
    }
    f->stage.nbuf = NBUF;
    rt_type x = ty(F, 2, 4, 8), row = ty(F, 1, 8, 0), w = ty(F, 2, 8, 8), s = ty(F, 1, 4, 0);
    rt_type gx = ty(F, 2, 8, 8), gs = ty(F, 1, 8, 0);
    f->p.io = f->io;
    f->io[0] = (rt_io){.kind = RT_IO_INPUT, .name = (char *)"x", .type = gx, .buffer = -1,
                       .update = -1};
    f->io[0].sh.naxes[0] = 1; /* split over dp */
    f->io[1] = (rt_io){.kind = RT_IO_PARAM, .name = (char *)"b", .type = row, .buffer = 1,
                       .update = -1, .init = RT_INIT_ZEROS};
    f->io[2] = (rt_io){.kind = RT_IO_PARAM, .name = (char *)"w", .type = w, .buffer = 5,
                       .update = -1, .init = RT_INIT_ONES};
    f->io[3] = (rt_io){.kind = RT_IO_OUTPUT, .name = (char *)"s", .type = gs, .buffer = 4,
                       .update = -1};
    f->io[3].sh.naxes[0] = 1;
    f->io[4] = (rt_io){.kind = RT_IO_OUTPUT, .name = (char *)"y", .type = gx, .buffer = 7,
                       .update = -1};
    f->io[4].sh.naxes[0] = 1;
    f->p.nio = 5;
    add(f, RT_OP_INPUT, 0, x, 0, 0, x, 0, x)->io = 0;
    add(f, RT_OP_PARAM, 1, row, 0, 0, x, 0, x)->io = 1;
    add(f, RT_OP_ADD, 2, x, 2, 0, x, 1, row);
    add(f, RT_OP_GELU, 3, x, 1, 2, x, 0, x);
    add(f, RT_OP_SUM, 4, s, 1, 3, x, 0, x)->axis = 1;
    add(f, RT_OP_PARAM, 5, w, 0, 0, x, 0, x)->io = 2;
    add(f, RT_OP_MATMUL, 6, x, 2, 3, x, 5, w);
    add(f, RT_OP_EXP, 7, x, 1, 6, x, 0, x);
    add(f, RT_OP_EXP, 8, x, 1, 3, x, 0, x);
    module(f, 1, "k0_add_gelu", NULL);
    module(f, 1, "k1_sum", NULL);
    module(f, 2, "k2_exp", "k3_exp"); /* two kernels' code in one program */
    kernel(f, "k0_add_gelu", 0, RT_KS_ELEMENTWISE, 1, 32, 0, 2, (int[]){2, 3}, 2, 1, 0, x, 1,
           row, 3, x);
    kernel(f, "k1_sum", 1, RT_KS_ROW, 4, 32, 4, 1, (int[]){4}, 1, 1, 3, x, 4, s);
    kernel(f, "k2_exp", 2, RT_KS_ELEMENTWISE, 1, 32, 0, 1, (int[]){7}, 1, 1, 6, x, 7, x);
    kernel(f, "k3_exp", 2, RT_KS_ELEMENTWISE, 1, 32, 0, 1, (int[]){8}, 1, 1, 3, x, 8, x)->entry =
        1;
}

/* The fixture with kernel 2 a matmul kernel: %6 = %3 @ %5, then %7 =
 * %6 + %1 (a bias of the result's last dim) in cuBLASLt's epilogue. */
static void make_matmul(fixture *f)
{
    make(f);
    rt_type x = ty(RT_F32, 2, 4, 8), row = ty(RT_F32, 1, 8, 0), w = ty(RT_F32, 2, 8, 8);
    rt_instr *bias = &f->instr[7];
    bias->op = RT_OP_ADD;
    bias->nin = 2;
    bias->in[1] = 1, bias->in_t[1] = row;
    f->p.nkernels = 2;
    rt_kernel *k = kernel(f, "k2_matmul_add", -1, RT_KS_MATMUL, 0, 0, 0, 2, (int[]){6, 7}, 3, 1,
                          3, x, 5, w, 1, row, 7, x);
    k->epilogue = RT_EPI_BIAS;
    kernel(f, "k3_exp", 2, RT_KS_ELEMENTWISE, 1, 32, 0, 1, (int[]){8}, 1, 1, 3, x, 8, x);
    f->mod[2].nentry = 1; /* k2_exp's code is cuBLASLt's now */
}

/* make_matmul's, the bias add made a residual add (of %0) and followed
 * by a gelu (%8, no kernel of its own any more). */
static void make_matmul_gelu(fixture *f)
{
    make_matmul(f);
    rt_type x = ty(RT_F32, 2, 4, 8), w = ty(RT_F32, 2, 8, 8);
    f->instr[7].in[1] = 0, f->instr[7].in_t[1] = x;
    rt_instr *gelu = &f->instr[8];
    gelu->op = RT_OP_GELU;
    gelu->in[0] = 7;
    f->p.nkernels = 2;
    f->p.nmodules = 2;
    rt_kernel *k = kernel(f, "k2_matmul_add_gelu", -1, RT_KS_MATMUL, 0, 0, 0, 3,
                          (int[]){6, 7, 8}, 3, 1, 3, x, 5, w, 0, x, 8, x);
    k->epilogue = RT_EPI_RESIDUAL | RT_EPI_GELU;
}

/* make_matmul_gelu's, the gelu's operand (%7, the residual add's
 * result) stored too (RT_EPI_AUX): a fifth parameter, an output. */
static void make_matmul_aux(fixture *f)
{
    make_matmul_gelu(f);
    rt_type x = ty(RT_F32, 2, 4, 8);
    rt_kernel *k = &f->kern[2];
    k->epilogue |= RT_EPI_AUX;
    k->nout = 2;
    f->param[2][4] = 7;
    f->param_t[2][4] = x;
}

/* make_matmul's with a gelu_grad(%0, %6) after the matmul in place of the
 * bias add (RT_EPI_DGELU), every value of the matmul bf16: %0 (x) read as
 * cuBLASLt's GELU input matrix, the third parameter. */
static void make_matmul_dgelu(fixture *f)
{
    make_matmul(f);
    rt_type x = ty(RT_BF16, 2, 4, 8), w = ty(RT_BF16, 2, 8, 8);
    rt_instr *mm = &f->instr[6], *dg = &f->instr[7];
    mm->in_t[0] = x, mm->in_t[1] = w, mm->out_t = x;
    dg->op = RT_OP_GELU_GRAD;
    dg->nin = 2;
    dg->in[0] = 0, dg->in_t[0] = x;
    dg->in[1] = 6, dg->in_t[1] = x;
    dg->out_t = x;
    f->p.nkernels = 2;
    rt_kernel *k = kernel(f, "k2_matmul_gelu_grad", -1, RT_KS_MATMUL, 0, 0, 0, 2,
                          (int[]){6, 7}, 3, 1, 3, x, 5, w, 0, x, 7, x);
    k->epilogue = RT_EPI_DGELU;
    rt_type fx = ty(RT_F32, 2, 4, 8);
    kernel(f, "k3_exp", 2, RT_KS_ELEMENTWISE, 1, 32, 0, 1, (int[]){8}, 1, 1, 3, fx, 8, fx);
}

/* ---- bytes ---- */

static uint64_t rd(const uint8_t *b, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void wr(uint8_t *b, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        b[i] = (uint8_t)(v >> 8 * i);
}

/* Offset of section i (0-based): MESH IOTB PROG KERN REPT. */
static size_t section_at(const uint8_t *b, int i)
{
    size_t pos = 28;
    for (; i > 0; i--)
        pos += 20 + (size_t)rd(b + pos + 8, 8);
    return pos;
}

/* Every CRC and the header's total size right again after an edit. */
static void refix(uint8_t *b, size_t n)
{
    uint32_t nsec = (uint32_t)rd(b + 12, 4);
    size_t pos = 28;
    for (uint32_t i = 0; i < nsec && pos + 20 <= n; i++) {
        uint64_t len = rd(b + pos + 8, 8);
        if (len > n - pos - 20)
            break;
        wr(b + pos + 16, su_crc32(0, b + pos + 20, (size_t)len), 4);
        pos += 20 + (size_t)len;
    }
    wr(b + 16, n, 8);
    wr(b + 24, su_crc32(0, b, 24), 4);
}

static uint8_t *written(size_t *n)
{
    fixture f;
    su_status err;
    uint8_t *b = NULL;
    make(&f);
    if (!rt_plan_write(&f.p, &b, n, &err)) {
        fprintf(stderr, "test_plan_kernels: cannot write the fixture: %s\n", err.msg);
        exit(1);
    }
    return b;
}

/* Where the fields of module 0 and kernel 0 lie in the file (the KERN
 * layout of plan_io.c, walked here on its own). */
typedef struct kern0 {
    size_t kern, payload;
    size_t entry, ncubin, arch0, cubin0_len, cubin0, ptx_len, ptx;   /* module 0 */
    size_t entry2_1;                                                  /* module 2's second */
    size_t nkernels, name, module, kentry, epilogue, grid, block, nin, params, ninstr, instr,
        end; /* kernel 0 */
} kern0;

static size_t skip_type(const uint8_t *b, size_t at)
{
    return at + 2 + 8 * (size_t)b[at + 1];
}

static size_t skip_str(const uint8_t *b, size_t at)
{
    return at + 4 + (size_t)rd(b + at, 4);
}

static size_t skip_blob(const uint8_t *b, size_t at)
{
    at = skip_str(b, at); /* the arch */
    return at + 8 + (size_t)rd(b + at, 8);
}

static kern0 locate(const uint8_t *b)
{
    kern0 k;
    k.kern = section_at(b, 3);
    k.payload = k.kern + 20;
    size_t at = k.payload + 4, nmod = (size_t)rd(b + k.payload, 4);
    for (size_t m = 0; m < nmod; m++) {
        size_t ne = (size_t)rd(b + at, 4), e = at + 4;
        at += 4;
        for (size_t j = 0; j < ne; j++) {
            if (m == 2 && j == 1)
                k.entry2_1 = at;
            at = skip_str(b, at);
        }
        size_t nc = at, ncubin = (size_t)rd(b + at, 4), a0 = at + 4;
        at += 4;
        for (size_t j = 0; j < ncubin; j++)
            at = skip_blob(b, at);
        size_t pl = skip_str(b, at);
        at = skip_blob(b, at);
        if (m == 0) {
            k.entry = e, k.ncubin = nc, k.arch0 = a0;
            k.cubin0_len = skip_str(b, a0), k.cubin0 = k.cubin0_len + 8;
            k.ptx_len = pl, k.ptx = pl + 8;
        }
    }
    k.nkernels = at;
    at += 4 + 4; /* count, stage */
    k.name = at;
    at = skip_str(b, at);
    k.module = at;
    k.kentry = at + 4;
    k.epilogue = at + 4 + 4 + 1;
    at += 4 + 4 + 1 + 1; /* module, entry, strategy, epilogue */
    k.grid = at;
    k.block = at + 8;
    at += 8 + 4 + 4; /* grid, block, shared */
    k.nin = at;
    size_t np = (size_t)(rd(b + at, 4) + rd(b + at + 4, 4));
    at += 8;
    k.params = at;
    for (size_t j = 0; j < np; j++)
        at = skip_type(b, at + 4);
    k.ninstr = at;
    k.instr = at + 4;
    k.end = at + 4 + 4 * (size_t)rd(b + at, 4);
    return k;
}

#include "plan_read_checks.h"

static void expect_invalid(const rt_plan *p, const char *want, int line)
{
    su_status err = {SU_OK, ""};
    bool ok = rt_plan_validate(p, &err);
    check_count++;
    if (ok || strcmp(err.msg, want) != 0) {
        check_failures++;
        fprintf(stderr, "test_plan_kernels.c:%d: validate %s \"%s\",\n  want \"%s\"\n", line,
                ok ? "accepted the plan" : "said", err.msg, want);
    }
}
#define EXPECT_INVALID(p, want) expect_invalid(p, want, __LINE__)

/* ---- tests ---- */

static bool image_eq(const rt_image *a, const rt_image *b)
{
    return !strcmp(a->arch, b->arch) && a->len == b->len && !memcmp(a->data, b->data, a->len);
}

static void check_module_eq(const rt_module *a, const rt_module *b)
{
    CHECK_INT(a->nentry, b->nentry);
    for (int e = 0; e < a->nentry && e < b->nentry; e++)
        CHECK_STR(a->entry[e], b->entry[e]);
    CHECK_INT(a->ncubin, b->ncubin);
    for (int j = 0; j < a->ncubin && j < b->ncubin; j++)
        CHECK(image_eq(&a->cubin[j], &b->cubin[j]));
    CHECK(image_eq(&a->ptx, &b->ptx));
    CHECK(b->ptx.data[b->ptx.len] == 0); /* PTX reads as a string */
}

static void check_kernel_eq(const rt_kernel *a, const rt_kernel *b)
{
    CHECK_INT(a->stage, b->stage);
    CHECK_STR(a->name, b->name);
    CHECK_INT(a->module, b->module);
    CHECK_INT(a->strategy, b->strategy);
    CHECK_INT(a->epilogue, b->epilogue);
    CHECK_INT(a->grid, b->grid);
    CHECK_INT(a->block, b->block);
    CHECK_INT(a->shared_bytes, b->shared_bytes);
    CHECK_INT(a->nin, b->nin);
    CHECK_INT(a->nout, b->nout);
    for (int j = 0; j < a->nin + a->nout && j < b->nin + b->nout; j++) {
        CHECK_INT(a->param[j], b->param[j]);
        CHECK(!memcmp(&a->param_t[j], &b->param_t[j], sizeof a->param_t[j]));
    }
    CHECK_INT(a->ninstr, b->ninstr);
    for (int j = 0; j < a->ninstr && j < b->ninstr; j++)
        CHECK_INT(a->instr[j], b->instr[j]);
}

/* Written, read back equal, written again to the same bytes; version 5. */
static void test_roundtrip(void)
{
    fixture f;
    make(&f);
    su_status err = {SU_OK, ""};
    CHECK(rt_plan_validate(&f.p, &err));
    if (err.msg[0])
        fprintf(stderr, "fixture: %s\n", err.msg);
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(rt_plan_write(&f.p, &a, &na, &err));
    CHECK_INT(rd(a + 8, 4), 23);
    CHECK_INT(RT_PLAN_VERSION, 23);
    rt_plan *p = rt_plan_read(a, na, "kernels.plan", &err);
    CHECK(p != NULL);
    if (!p) {
        fprintf(stderr, "  %s\n", err.msg);
        free(a);
        return;
    }
    CHECK_INT(p->nmodules, NMOD);
    for (int m = 0; m < NMOD && m < p->nmodules; m++)
        check_module_eq(&f.mod[m], &p->module[m]);
    CHECK_INT(p->nkernels, NKERN);
    for (int k = 0; k < NKERN && k < p->nkernels; k++)
        check_kernel_eq(&f.kern[k], &p->kernel[k]);
    CHECK(rt_plan_write(p, &b, &nb, &err));
    CHECK(nb == na && b && !memcmp(a, b, na));
    /* the KERN section holds the modules, then the kernels, by the
     * documented layout */
    kern0 k = locate(a);
    CHECK(!memcmp(a + k.kern, "KERN", 4));
    CHECK_INT(rd(a + k.payload, 4), NMOD);
    CHECK(!memcmp(a + k.entry + 4, "k0_add_gelu", 11));
    CHECK_INT(rd(a + k.ncubin, 4), 2);
    CHECK(!memcmp(a + k.arch0 + 4, "sm_80", 5));
    CHECK_INT(rd(a + k.cubin0_len, 8), sizeof cubin80);
    CHECK(!memcmp(a + k.cubin0, cubin80, sizeof cubin80));
    CHECK(!memcmp(a + k.ptx, ptx, strlen(ptx)));
    CHECK_INT(rd(a + k.nkernels, 4), NKERN);
    CHECK(!memcmp(a + k.name + 4, "k0_add_gelu", 11));
    CHECK_INT(rd(a + k.module, 4), 0);
    CHECK_INT(rd(a + k.kentry, 4), 0);
    CHECK(!memcmp(a + k.entry2_1 + 4, "k3_exp", 6));
    CHECK_INT(a[k.epilogue], 0);
    CHECK_INT(rd(a + k.ninstr, 4), 2);
    CHECK_INT(rd(a + k.instr + 4, 4), 3);
    CHECK(!memcmp(a + k.end + 4 + 4, "k1_sum", 6));
    CHECK_INT(k.end + 4 + 4 + 4 + 6 < na, 1);
    rt_plan_free(p);
    free(a);
    free(b);

    /* a plan without kernels: KERN holds two counts of 0 and no init
     * module (-1) */
    make(&f);
    f.p.nkernels = f.p.nmodules = 0;
    CHECK(rt_plan_write(&f.p, &a, &na, &err));
    size_t at = section_at(a, 3);
    CHECK_INT(rd(a + at + 8, 8), 12);
    CHECK_INT(rd(a + at + 20, 4), 0);
    CHECK_INT(rd(a + at + 24, 4), 0);
    CHECK_INT(rd(a + at + 28, 4), 0xffffffffu);
    free(a);
}

/* The init module (format 12): a module whose one entry is sh_init, run by
 * the backend and by no kernel, round trips, and KERN ends with its
 * index; the validator's rules on it, each with its message. */
static void test_init_module(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    make(&f);
    module(&f, 1, RT_INIT_ENTRY, NULL);
    f.p.init_module = NMOD;
    CHECK(rt_plan_validate(&f.p, &err));
    if (err.msg[0])
        fprintf(stderr, "  %s\n", err.msg);
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(rt_plan_write(&f.p, &a, &na, &err));
    rt_plan *p = a ? rt_plan_read(a, na, "init.plan", &err) : NULL;
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->init_module, NMOD);
        CHECK_INT(p->nmodules, NMOD + 1);
        for (int m = 0; m <= NMOD && m < p->nmodules; m++)
            check_module_eq(&f.mod[m], &p->module[m]);
        CHECK(rt_plan_write(p, &b, &nb, &err));
        CHECK(nb == na && b && !memcmp(a, b, na));
    }
    if (a) { /* KERN's last 4 bytes */
        size_t at = section_at(a, 3);
        CHECK(!memcmp(a + at, "KERN", 4));
        CHECK_INT(rd(a + at + 20 + rd(a + at + 8, 8) - 4, 4), NMOD);
    }
    rt_plan_free(p);
    free(a);
    free(b);

    make(&f);
    module(&f, 1, RT_INIT_ENTRY, NULL);
    EXPECT_INVALID(&f.p, "module 3: entry sh_init runs no kernel"); /* not named the init module */
    f.p.init_module = NMOD + 1;
    EXPECT_INVALID(&f.p, "the init module 4 is out of range (the plan has 4 modules)");
    f.p.init_module = -2;
    EXPECT_INVALID(&f.p, "the init module -2 is out of range (the plan has 4 modules)");
    f.p.init_module = 1;
    EXPECT_INVALID(&f.p, "the init module 1 has 1 entries (k1_sum), not the one entry sh_init");
    f.p.init_module = 2;
    EXPECT_INVALID(&f.p, "the init module 2 has 2 entries (k2_exp, ...), not the one entry "
                         "sh_init");
    f.p.init_module = NMOD;
    f.kern[1].module = NMOD; /* k1_sum would run sh_init */
    EXPECT_INVALID(&f.p, "kernel 1 (k1_sum) runs the init module 3, which only the backend runs");
}

static void test_arch_names(void)
{
    CHECK_INT(rt_arch_number("sm_80"), 80);
    CHECK_INT(rt_arch_number("compute_90"), 90);
    CHECK_INT(rt_arch_number("sm_100"), 100);
    CHECK_INT(rt_arch_number("sm_8"), -1);
    CHECK_INT(rt_arch_number("sm_1000"), -1);
    CHECK_INT(rt_arch_number("sm_080"), -1);
    CHECK_INT(rt_arch_number("sm_90a"), -1);
    CHECK_INT(rt_arch_number("compute80"), -1);
    CHECK_INT(rt_arch_number(""), -1);
    CHECK_INT(rt_arch_number(NULL), -1);
    CHECK_STR(rt_kernel_strategy_name(RT_KS_ROW), "row");
    CHECK_STR(rt_kernel_strategy_name(RT_NKSTRATEGIES), "?");
}

/* Every rule of check_kernels, each with its message. */
static void test_validate(void)
{
    fixture f;
    const char *k0 = "kernel 0 (k0_add_gelu) of stage 0: ";
    char want[ERRLEN];
#define INVALID(edit, msg)                                                                   \
    do {                                                                                     \
        make(&f);                                                                            \
        edit;                                                                                \
        snprintf(want, sizeof want, "%s%s", k0, msg);                                        \
        EXPECT_INVALID(&f.p, want);                                                          \
    } while (0)
    make(&f);
    f.kern[0].stage = 1;
    EXPECT_INVALID(&f.p, "kernel 0: stage 1 is out of range (the plan has 1)");
    make(&f);
    f.kern[0].name = (char *)"k0 add";
    EXPECT_INVALID(&f.p, "kernel 0 (?) of stage 0: the name 'k0 add' is not a C identifier");
    make(&f);
    f.kern[0].name = (char *)"0k";
    EXPECT_INVALID(&f.p, "kernel 0 (?) of stage 0: the name '0k' is not a C identifier");
    make(&f);
    f.p.nkernels = -1;
    EXPECT_INVALID(&f.p, "a table of -1 kernels is not valid");

    INVALID(f.kern[0].strategy = RT_NKSTRATEGIES, "unknown strategy (5)");
    INVALID(f.kern[0].epilogue = RT_EPI_BIAS, "only matmul kernels have an epilogue; this one "
                                              "(elementwise) has 0x1");
    INVALID(f.kern[0].grid = 0, "a grid of 0 blocks; 1 to 2^31-1 are possible");
    INVALID(f.kern[0].grid = (int64_t)1 << 31,
            "a grid of 2147483648 blocks; 1 to 2^31-1 are possible");
    INVALID(f.kern[0].block = 1025, "a block of 1025 threads; 1 to 1024 are possible");
    INVALID(f.kern[0].shared_bytes = -1,
            "-1 bytes of dynamic shared memory; 0 to 1048576 are possible");

    INVALID(f.kern[0].ninstr = 0, "stands for no instruction");
    INVALID(f.list[0][1] = 9, "instruction 9 is out of range (the program has 9)");
    INVALID(f.list[0][1] = -1, "instruction -1 is out of range (the program has 9)");
    INVALID((f.list[0][0] = 3, f.list[0][1] = 2),
            "instructions 3 and 2 are not in ascending order");
    INVALID(f.list[0][0] = 1, "instruction 1 (param) is not a compute instruction");
    make(&f); /* two kernels claim one instruction */
    f.list[2][0] = 4;
    f.param[2][0] = 3, f.param[2][1] = 4;
    f.param_t[2][1] = f.instr[4].out_t;
    EXPECT_INVALID(&f.p, "kernel 2 (k2_exp) of stage 0: instruction 4 belongs to kernel 1 too");

    INVALID(f.kern[0].nout = 0, "has 2 inputs and 0 outputs; at most 256 parameters, one output "
                                "or more");
    INVALID(f.kern[0].nin = -1, "has -1 inputs and 1 outputs; at most 256 parameters, one "
                                "output or more");
    INVALID(f.kern[0].nin = 256, "has 256 inputs and 1 outputs; at most 256 parameters, one "
                                 "output or more");
    INVALID(f.param[0][0] = 9, "buffer 9 (parameter 0) is out of range (the program has 9 "
                               "buffers)");
    INVALID(f.param_t[0][1].dtype = RT_F16, "parameter 1 is buffer 1 as f16[8], but no "
                                            "instruction of the kernel reads it as that type");
    INVALID(f.param[0][1] = 5, "parameter 1 is buffer 5 as f32[8], but no instruction of the "
                               "kernel reads it as that type");
    INVALID(f.param[0][2] = 6, "parameter 2 is buffer 6 as f32[4, 8], but no instruction of the "
                               "kernel writes it as that type");
    INVALID(f.param_t[0][0].dim[0] = 0, "parameter 0 has a dimension of size 0: f32[0, 8]");
    INVALID(f.param_t[0][0].dim[0] = 64,
            "parameter 0 f32[64, 8] (2048 bytes) does not fit buffer 0 (128 bytes)");

    INVALID(f.kern[0].module = 3, "module 3 is out of range (the plan has 3)");
    INVALID(f.kern[0].entry = 1, "entry 1 is out of range (module 0 has 1)");
    INVALID(f.kern[0].module = -1, "module -1 is out of range (the plan has 3)");
#undef INVALID

    /* modules: named "module M (entry): " */
    k0 = "module 1 (k1_sum): ";
#define INVALID(edit, msg)                                                                   \
    do {                                                                                     \
        make(&f);                                                                            \
        edit;                                                                                \
        snprintf(want, sizeof want, "%s%s", k0, msg);                                        \
        EXPECT_INVALID(&f.p, want);                                                          \
    } while (0)
    INVALID(f.mod[1].ncubin = 0, "has 0 cubins; 1 to 64 are needed");
    INVALID(f.mod[1].ncubin = 65, "has 65 cubins; 1 to 64 are needed");
    INVALID(f.cubin[1][1].arch = (char *)"sm_9",
            "cubin 1 has the architecture 'sm_9'; expected sm_NN");
    INVALID(f.cubin[1][1].arch = (char *)"compute_90",
            "cubin 1 has the architecture 'compute_90'; expected sm_NN");
    INVALID(f.cubin[1][1].arch = (char *)"sm_80", "cubins 0 and 1 are both for sm_80");
    INVALID(f.cubin[1][0].len = 0, "cubin 0 for sm_80 is empty");
    INVALID(f.mod[1].ptx.arch = (char *)"sm_90",
            "the PTX has the architecture 'sm_90'; expected compute_NN");
    INVALID(f.mod[1].ptx.len = 0, "the PTX for compute_90 is empty");
    INVALID(f.mod[1].ptx.len = strlen(ptx) + 1, "the PTX for compute_90 contains a NUL byte");
#undef INVALID
    make(&f);
    f.entry[1][0] = (char *)"k1-sum";
    EXPECT_INVALID(&f.p, "module 1 (?): entry 0, 'k1-sum', is not a C identifier");
    make(&f);
    f.entry[2][1] = (char *)"k2_exp";
    EXPECT_INVALID(&f.p, "module 2 (k2_exp): entry 'k2_exp' is there twice");
    make(&f);
    f.mod[2].nentry = 0;
    EXPECT_INVALID(&f.p, "module 2 (?): has 0 entries; 1 or more are needed");
    make(&f); /* no kernel runs module 1 */
    f.kern[1].module = 0;
    EXPECT_INVALID(&f.p, "module 1: entry k1_sum runs no kernel");
    make(&f); /* nor module 2's second entry */
    f.kern[3].entry = 0;
    EXPECT_INVALID(&f.p, "module 2: entry k3_exp runs no kernel");
    make(&f);
    f.p.nmodules = -2;
    EXPECT_INVALID(&f.p, "a table of -2 modules is not valid");

    /* the writer refuses what the validator refuses */
    make(&f);
    f.kern[1].block = 0;
    uint8_t *b = NULL;
    size_t n = 0;
    su_status err;
    CHECK(!rt_plan_write(&f.p, &b, &n, &err));
    CHECK_STR(err.msg, "cannot write an invalid plan: kernel 1 (k1_sum) of stage 0: a block of 0 "
                   "threads; 1 to 1024 are possible");
    CHECK(b == NULL);
}

/* KERN cut at every length (lengths and CRCs made right again), so that
 * only the decoder can notice: each cut fails with a message naming
 * the section, never reading past it. */
static void test_cut(void)
{
    size_t n;
    uint8_t *b = written(&n);
    size_t kern = section_at(b, 3), plen = (size_t)rd(b + kern + 8, 8);
    size_t tail = n - (kern + 20 + plen); /* REPT */
    uint8_t *c = malloc(n);
    char err[ERRLEN];
    int bad = 0;
    for (size_t cut = 0; cut < plen; cut++) {
        memcpy(c, b, kern + 20 + cut);
        memcpy(c + kern + 20 + cut, b + kern + 20 + plen, tail);
        wr(c + kern + 8, cut, 8);
        size_t m = kern + 20 + cut + tail;
        refix(c, m);
        read_msg(c, m, err);
        bool named = strstr(err, "model.plan: section KERN") == err;
        if (!named && bad++ < 3)
            fprintf(stderr, "KERN cut to %zu of %zu bytes: \"%s\"\n", cut, plen, err);
    }
    CHECK_INT(bad, 0);
    /* two of the messages exactly: a cubin longer than what is left, the
     * count cut in two */
    kern0 k = locate(b);
    memcpy(c, b, n);
    wr(c + k.cubin0_len, 1000, 8);
    refix(c, n);
    char want[160];
    snprintf(want, sizeof want, "model.plan: section KERN: module 0, cubin has length 1000, "
             "beyond the %zu bytes left", kern + 20 + plen - k.cubin0);
    CHECK_STR(read_msg(c, n, err), want);
    size_t cut;
    cut = 2;
    memcpy(c, b, kern + 20 + cut);
    memcpy(c + kern + 20 + cut, b + kern + 20 + plen, tail);
    wr(c + kern + 8, cut, 8);
    refix(c, kern + 20 + cut + tail);
    CHECK_STR(read_msg(c, kern + 20 + cut + tail, err),
              "model.plan: section KERN ends early: the module count needs 4 bytes, 2 are left");
    free(c);
    free(b);
}

/* Damaged KERN sections: a flipped bit (the CRC catches it), then edits
 * with the CRCs made right, which the decoder or the validator refuse. */
static void test_corrupt(void)
{
    size_t n;
    uint8_t *b = written(&n);
    uint8_t *c = malloc(n);
    kern0 k = locate(b);
    char err[ERRLEN];

    memcpy(c, b, n);
    c[k.cubin0 + 2] ^= 0x10;
    CHECK_STR(read_msg(c, n, err), "model.plan: checksum mismatch in section KERN: the file is "
                                   "corrupt");
    memcpy(c, b, n);
    c[k.name + 5] ^= 0x01;
    EXPECT_READ_ERROR(c, n, "checksum mismatch in section KERN");
    memcpy(c, b, n);
    c[k.ptx + 1] ^= 0x01;
    EXPECT_READ_ERROR(c, n, "checksum mismatch in section KERN");

    memcpy(c, b, n); /* the anchor past the program */
    wr(c + k.instr + 4, 9, 4);
    refix(c, n);
    CHECK_STR(read_msg(c, n, err), "model.plan: kernel 0 (k0_add_gelu) of stage 0: instruction "
                                   "9 is out of range (the program has 9)");
    memcpy(c, b, n); /* a parameter's buffer read as another */
    wr(c + k.params, 6, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "kernel 0 (k0_add_gelu) of stage 0: parameter 0 is buffer 6 as "
                            "f32[4, 8], but no instruction of the kernel reads it as that type");
    memcpy(c, b, n); /* a grid of 0 */
    wr(c + k.grid, 0, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "kernel 0 (k0_add_gelu) of stage 0: a grid of 0 blocks");
    memcpy(c, b, n); /* an arch name that is not one */
    c[k.arch0 + 4 + 3] = 'x';
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "model.plan: module 0 (k0_add_gelu): cubin 0 has the architecture "
                            "'sm_x0'; expected sm_NN");
    memcpy(c, b, n); /* a NUL in the PTX */
    c[k.ptx + 3] = 0;
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "module 0 (k0_add_gelu): the PTX for compute_90 contains a NUL "
                            "byte");
    memcpy(c, b, n); /* a kernel's module past the table */
    wr(c + k.module, 7, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "kernel 0 (k0_add_gelu) of stage 0: module 7 is out of range (the "
                            "plan has 3)");
    memcpy(c, b, n); /* a huge module count */
    wr(c + k.payload, 0x10000000, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section KERN: the module count is 268435456, but the");
    memcpy(c, b, n); /* a huge count of instructions */
    wr(c + k.ninstr, 0x7fffffff, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section KERN: kernel 0, the instruction count is 2147483647, but the");
    memcpy(c, b, n); /* a cubin length far past the section */
    wr(c + k.cubin0_len, (uint64_t)1 << 62, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section KERN: module 0, cubin has length 4611686018427387904, "
                            "beyond the");
    memcpy(c, b, n); /* one kernel fewer than the count says: trailing bytes */
    wr(c + k.nkernels, NKERN - 1, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section KERN has");
    free(c);
    free(b);
}

/* Matmul kernels: written and read back equal; every rule of
 * check_matmul with its message; named at their anchor by --emit
 * schedule; a damaged epilogue byte refused. */
static void test_matmul_kernels(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    char want[ERRLEN];
    void (*makers[])(fixture *) = {make_matmul, make_matmul_gelu, make_matmul_aux};
    for (int m = 0; m < 3; m++) {
        makers[m](&f);
        uint8_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        CHECK(rt_plan_write(&f.p, &a, &na, &err));
        rt_plan *p = a ? rt_plan_read(a, na, "mm.plan", &err) : NULL;
        CHECK(p != NULL);
        if (!p) {
            fprintf(stderr, "  %s\n", err.msg);
            free(a);
            continue;
        }
        CHECK_INT(p->nkernels, f.p.nkernels);
        for (int k = 0; k < f.p.nkernels && k < p->nkernels; k++)
            check_kernel_eq(&f.kern[k], &p->kernel[k]);
        CHECK(rt_plan_write(p, &b, &nb, &err));
        CHECK(nb == na && b && !memcmp(a, b, na));
        rt_plan_free(p);
        free(a);
        free(b);
    }
    const char *k2 = "kernel 2 (k2_matmul_add) of stage 0: ";
#define INVALID(edit, msg)                                                                   \
    do {                                                                                     \
        make_matmul(&f);                                                                     \
        edit;                                                                                \
        snprintf(want, sizeof want, "%s%s", k2, msg);                                        \
        EXPECT_INVALID(&f.p, want);                                                          \
    } while (0)
    INVALID(f.kern[2].module = 0, "a matmul kernel has module 0, entry 0, grid 0, block 0 and 0 shared "
                                  "bytes; expected -1 and zeros (cuBLASLt runs it)");
    INVALID(f.kern[2].grid = 1, "a matmul kernel has module -1, entry 0, grid 1, block 0 and 0 shared "
                                "bytes; expected -1 and zeros (cuBLASLt runs it)");
    INVALID(f.kern[2].epilogue = 0x40, "unknown epilogue bits 0x40");
    INVALID(f.kern[2].epilogue = RT_EPI_BIAS | RT_EPI_AUX, "its epilogue stores an activation's "
                                                          "operand (0x10) without a gelu");
    INVALID(f.kern[2].epilogue = RT_EPI_BIAS | RT_EPI_RELU,
            "its epilogue is 0x5, but its instructions make 0x1");
    INVALID(f.kern[2].epilogue = 0, "its epilogue is 0x0, but its instructions make 0x1");
    INVALID((f.list[2][0] = 7, f.kern[2].ninstr = 1, f.param[2][0] = 6, f.param[2][1] = 1,
             f.param_t[2][1] = f.instr[7].in_t[1], f.kern[2].nin = 2, f.param[2][2] = 7,
             f.param_t[2][2] = f.instr[7].out_t),
            "its first instruction (7, add) is not a matmul");
    /* a bias along the wrong dim: [4, 1] broadcast over columns */
    INVALID((f.instr[7].in_t[1] = ty(RT_F32, 2, 4, 1), f.param_t[2][2] = f.instr[7].in_t[1]),
            "instruction 7 (add) is not a bias or residual add, relu, gelu or gelu_grad of "
            "instruction 6's result that cuBLASLt can do after it");
    INVALID((f.instr[7].op = RT_OP_MUL),
            "instruction 7 (mul) is not a bias or residual add, relu, gelu or gelu_grad of "
            "instruction 6's result that cuBLASLt can do after it");
    INVALID((f.param[2][0] = 5, f.param_t[2][0] = f.instr[6].in_t[1], f.param[2][1] = 3,
             f.param_t[2][1] = f.instr[6].in_t[0]),
            "parameter 0 is buffer 5 as f32[8, 8]; its instructions make it buffer 3");
    INVALID((f.kern[2].nin = 2, f.param[2][2] = 7, f.param_t[2][2] = f.instr[7].out_t),
            "has 2 inputs and 1 outputs; its instructions make 3 and 1");
    INVALID(f.offs[7] = f.offs[3], "its result (buffer 7) shares bytes with parameter 0 "
                                   "(buffer 3)");
#undef INVALID
    /* the gelu's operand stored too: as the fifth parameter, an output
     * apart from everything else */
    const char *ka = "kernel 2 (k2_matmul_add_gelu) of stage 0: ";
#define INVALID(edit, msg)                                                                   \
    do {                                                                                     \
        make_matmul_aux(&f);                                                                 \
        edit;                                                                                \
        snprintf(want, sizeof want, "%s%s", ka, msg);                                        \
        EXPECT_INVALID(&f.p, want);                                                          \
    } while (0)
    INVALID(f.kern[2].nout = 1, "has 3 inputs and 1 outputs; its instructions make 3 and 2");
    INVALID(f.param[2][4] = 8, "parameter 4 is buffer 8 as f32[4, 8]; its instructions make it "
                               "buffer 7");
    INVALID(f.offs[7] = f.offs[8], "its gelu's operand (buffer 7) shares bytes with parameter 3 "
                                   "(buffer 8)");
    INVALID(f.offs[7] = f.offs[5], "its gelu's operand (buffer 7) shares bytes with parameter 1 "
                                   "(buffer 5)");
    INVALID((f.kern[2].epilogue &= ~(unsigned)RT_EPI_AUX),
            "has 3 inputs and 2 outputs; its instructions make 3 and 1");
#undef INVALID
    /* after the activation nothing more: relu, then a bias add */
    make_matmul_gelu(&f);
    f.instr[7].op = RT_OP_RELU;
    f.instr[7].nin = 1;
    memset(&f.instr[7].in_t[1], 0, sizeof f.instr[7].in_t[1]);
    f.instr[7].in[1] = 0;
    f.instr[8] = f.instr[7];
    f.instr[8].op = RT_OP_ADD;
    f.instr[8].nin = 2;
    f.instr[8].in[0] = 7, f.instr[8].out = 8;
    f.instr[8].in[1] = 1, f.instr[8].in_t[1] = ty(RT_F32, 1, 8, 0);
    f.kern[2].nin = 3;
    f.param[2][2] = 1, f.param_t[2][2] = f.instr[8].in_t[1];
    f.kern[2].epilogue = RT_EPI_RELU | RT_EPI_BIAS;
    EXPECT_INVALID(&f.p, "kernel 2 (k2_matmul_add_gelu) of stage 0: instruction 8 (add) is not a "
                         "bias or residual add, relu, gelu or gelu_grad of instruction 7's result "
                         "that cuBLASLt can do after it");

    /* gelu_grad(x, the product) in the epilogue (RT_EPI_DGELU): x read as
     * the third parameter; 16-bit only, x of the result's type and apart
     * from it, nothing after it */
    const char *kd = "kernel 2 (k2_matmul_gelu_grad) of stage 0: ";
#define INVALID(edit, msg)                                                                   \
    do {                                                                                     \
        make_matmul_dgelu(&f);                                                               \
        edit;                                                                                \
        snprintf(want, sizeof want, "%s%s", kd, msg);                                        \
        EXPECT_INVALID(&f.p, want);                                                          \
    } while (0)
    make_matmul_dgelu(&f);
    CHECK(rt_plan_validate(&f.p, &err));
    if (err.kind != SU_OK)
        fprintf(stderr, "  dgelu fixture: %s\n", err.msg);
    INVALID(f.kern[2].epilogue = RT_EPI_GELU, "its epilogue is 0x8, but its instructions make "
                                              "0x20");
    INVALID((f.kern[2].nin = 2, f.param[2][2] = 7, f.param_t[2][2] = f.instr[7].out_t),
            "has 2 inputs and 1 outputs; its instructions make 3 and 1");
    INVALID((f.param[2][2] = 8), "parameter 2 is buffer 8 as bf16[4, 8], but no instruction of "
                                 "the kernel reads it as that type");
    INVALID(f.offs[0] = f.offs[7], "its result (buffer 7) shares bytes with parameter 2 "
                                   "(buffer 0)");
    INVALID((f.instr[7].in[0] = 6, f.param[2][2] = 6), "instruction 7 (gelu_grad) is not a bias or residual add, "
                                    "relu, gelu or gelu_grad of instruction 6's result that "
                                    "cuBLASLt can do after it");
#undef INVALID

    /* --emit schedule names it at its anchor */
    jmp_buf oom;
    if (setjmp(oom)) {
        CHECK(0);
        return;
    }
    su_buf t;
    su_buf_init(&t, &oom);
    make_matmul_gelu(&f);
    rt_plan_print_schedule(&f.p, &t);
    CHECK(strstr(t.s, "2304 bytes, 2 kernels of 2 modules (cubins for sm_80, sm_90; PTX for "
                      "compute_90), 1 matmul through cuBLASLt with epilogues\n") != NULL);
    CHECK(strstr(t.s, "  %8 = gelu %7 : f32[4, 8]    // kernel k2_matmul_add_gelu (cuBLASLt, "
                      "epilogue residual, gelu): runs %6, %7, %8; reads %3, %5, %0; writes "
                      "%8\n") != NULL);
    su_buf_free(&t);

    /* a damaged epilogue byte: the validator names the kernel */
    make_matmul(&f);
    uint8_t *b = NULL;
    size_t n = 0;
    CHECK(rt_plan_write(&f.p, &b, &n, &err));
    kern0 k = locate(b);
    size_t at = k.end; /* kernel 1, then kernel 2's epilogue */
    for (int j = 1; j < 2; j++) {
        at = skip_str(b, at + 4) + 4 + 4 + 1 + 1 + 8 + 4 + 4;
        size_t np = (size_t)(rd(b + at, 4) + rd(b + at + 4, 4));
        at += 8;
        for (size_t q = 0; q < np; q++)
            at = skip_type(b, at + 4);
        at += 4 + 4 * (size_t)rd(b + at, 4);
    }
    at = skip_str(b, at + 4) + 4 + 4 + 1;
    CHECK_INT(b[at], RT_EPI_BIAS);
    b[at] = RT_EPI_GELU | RT_EPI_BIAS;
    refix(b, n);
    EXPECT_READ_ERROR(b, n, "kernel 2 (k2_matmul_add) of stage 0: its epilogue is 0x9, but its "
                            "instructions make 0x1");
    free(b);
}

static void test_schedule_text(void)
{
    fixture f;
    make(&f);
    jmp_buf oom;
    if (setjmp(oom)) {
        CHECK(0);
        return;
    }
    su_buf b;
    su_buf_init(&b, &oom);
    rt_plan_print_schedule(&f.p, &b);
    char *text = su_buf_take(&b);
    CHECK_STR(text,
              "mesh dp = 2\n"
              "// 2 ranks, 1 stage\n"
              "input \"x\" : f32[8, 8] shard(dp, _)\n"
              "param \"b\" : f32[8] shard(_) = %1\n"
              "param \"w\" : f32[8, 8] shard(_, _) = %5\n"
              "output \"s\" : f32[8] shard(dp) = %4\n"
              "output \"y\" : f32[8, 8] shard(dp, _) = %7\n"
              "\n"
              "stage 0 (every rank): 9 instructions, 9 buffers in an arena of 2304 bytes, "
              "4 kernels of 3 modules (cubins for sm_80, sm_90; PTX for compute_90)\n"
              "  %0 = input {name = \"x\"} : f32[4, 8]\n"
              "  %1 = param {name = \"b\"} : f32[8]\n"
              "  %2 = add %0, %1 : f32[4, 8]\n"
              "  %3 = gelu %2 : f32[4, 8]    // kernel k0_add_gelu (elementwise, grid 1, block "
              "32, 0 shared bytes): runs %2, %3; reads %0, %1; writes %3\n"
              "  %4 = sum %3 {axis = 1, keepdims = false} : f32[4]    // kernel k1_sum (row, "
              "grid 4, block 32, 4 shared bytes): runs %4; reads %3; writes %4\n"
              "  %5 = param {name = \"w\"} : f32[8, 8]\n"
              "  %6 = matmul %3, %5 : f32[4, 8]\n"
              "  %7 = exp %6 : f32[4, 8]    // kernel k2_exp (elementwise, grid 1, block 32, 0 "
              "shared bytes): runs %7; reads %6; writes %7\n"
              "  %8 = exp %3 : f32[4, 8]    // kernel k3_exp (elementwise, grid 1, "
              "block 32, 0 shared bytes): runs %8; reads %3; writes %8\n");
    free(text);
}

/* ---- seeds for the fuzz corpus ---- */

static int write_file(const char *dir, const char *name, const char *prefix, const uint8_t *b,
                      size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    size_t np = strlen(prefix);
    if (!f || fwrite(prefix, 1, np, f) != np || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* The fixture, plain and in fuzz form ('F': CRCs recomputed), and in fuzz
 * form with its anchor past the program (refused by the validator). */
static int write_seeds(const char *dir)
{
    size_t n;
    uint8_t *b = written(&n);
    int bad = write_file(dir, "kernels.plan", "", b, n) |
              write_file(dir, "F-kernels.plan", "F", b, n);
    kern0 k = locate(b);
    wr(b + k.instr + 4, 9, 4);
    bad |= write_file(dir, "F-kernels-bad-anchor.plan", "F", b, n);
    free(b);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
        return write_seeds(argv[2]);
    test_roundtrip();
    test_arch_names();
    test_validate();
    test_cut();
    test_corrupt();
    test_schedule_text();
    test_matmul_kernels();
    test_init_module();
    return CHECK_DONE();
}
