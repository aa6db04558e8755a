/* test_plan_loop.c: a program's loop form (plan.h, format 14;
 * runtime/plan/plan_loop.c). A plan whose one stage runs a body for each
 * of 2 microbatches (its slice of the input into a slotted buffer, a relu
 * that a kernel stands for, and the sum into an accumulator) writes and
 * reads back in loop form to the same bytes, and expands to exactly the
 * plan written unrolled by hand, and expanded a stage at a time to the
 * same stages; it runs on the CPU backend to the sum
 * of the two slices' relus; every wrong loop form is refused with its
 * message, by the validator and by the reader, also where only a middle
 * microbatch's kernel is wrong by its parameters' slots (the validator's
 * sample of items).
 *
 *   test_plan_loop                    runs the tests
 *   test_plan_loop --write-seeds DIR  writes the loop plan as fuzz seeds
 *                                     (tests/fuzz/corpus/plan)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "shardc.h"
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"

#define ERRLEN 1024
#include "plan_read_checks.h"

static rt_type vec(int64_t n)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = RT_F32;
    t.rank = 1;
    t.dim[0] = n;
    return t;
}

static rt_type mat(int64_t r, int64_t c)
{
    rt_type t = vec(r);
    t.rank = 2;
    t.dim[1] = c;
    return t;
}

enum { NBUF = 8, NINSTR = 12, NKERN = 4 };

typedef struct fixture {
    rt_plan p;
    rt_program g;
    rt_io io[2];
    int64_t offs[NBUF], bytes[NBUF];
    rt_instr instr[NINSTR];
    int32_t body_start[3], item[8], slotmap[2], buf_slots[NBUF];
    int64_t buf_copy_at[NBUF], instr_step[NINSTR];
    int32_t copy_buf[4];
    rt_module mod;
    char *entry[1];
    rt_image cubin[1];
    rt_kernel kern[NKERN];
    int32_t param[NKERN][2], list[NKERN][1];
    rt_type param_t[NKERN][2];
} fixture;

static uint8_t cubin90[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 90, 0};
static char ptx[] = ".version 8.8\n.target sm_90\n.address_size 64\n";

static void buffer(fixture *f, int64_t off, int64_t bytes)
{
    f->offs[f->g.nbuf] = off;
    f->bytes[f->g.nbuf++] = bytes;
}

static rt_instr *instr(fixture *f, int op, int out, rt_type out_t)
{
    rt_instr *in = &f->instr[f->g.ninstr++];
    in->op = (uint16_t)op;
    in->out = out;
    in->out_t = out_t;
    in->io = -1;
    return in;
}

static rt_instr *operand(rt_instr *in, int b, rt_type t)
{
    in->in[in->nin] = b;
    in->in_t[in->nin++] = t;
    return in;
}

/* The relu kernel of instruction k: reads buffer a, writes buffer r. */
static void relu_kernel(fixture *f, int k, int a, int r)
{
    int i = f->p.nkernels++;
    rt_kernel *kr = &f->kern[i];
    kr->stage = 0;
    kr->name = (char *)"k0_relu";
    kr->module = 0;
    kr->strategy = RT_KS_ELEMENTWISE;
    kr->grid = 1;
    kr->block = 32;
    kr->ninstr = 1;
    kr->instr = f->list[i];
    f->list[i][0] = k;
    kr->nin = kr->nout = 1;
    kr->param = f->param[i];
    kr->param_t = f->param_t[i];
    f->param[i][0] = a;
    f->param[i][1] = r;
    f->param_t[i][0] = f->param_t[i][1] = vec(4);
}

/* x f32[8] in, y f32[4] out: y = relu(x[0:4]) + relu(x[4:8]), the two
 * halves being microbatches 0 and 1. The buffers: 0 x, 1 microbatch 0's
 * slice, 2 its relu, 3 the sum, 4 microbatch 1's slice, 5 the loop form's
 * slotted buffer for the slice (copies 1 and 4; unused unrolled). */
static void begin(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->p.nstages = 1;
    f->p.stage = &f->g;
    f->p.stage_axis = -1;
    f->p.loss = -1;
    f->p.init_module = -1;
    f->p.report = (char *)"";
    f->p.io = f->io;
    f->p.nio = 2;
    f->io[0] = (rt_io){.kind = RT_IO_INPUT, .name = (char *)"x", .type = vec(8),
                       .buffer = -1, .update = -1};
    f->io[1] = (rt_io){.kind = RT_IO_OUTPUT, .name = (char *)"y", .type = vec(4),
                       .buffer = 3, .update = -1};
    f->g.buf_offset = f->offs;
    f->g.buf_bytes = f->bytes;
    f->g.instr = f->instr;
    f->g.arena_bytes = 1280;
    buffer(f, 0, 32);
    buffer(f, 256, 16);
    buffer(f, 768, 16);
    buffer(f, 1024, 16);
    buffer(f, 512, 16);
    buffer(f, 256, 16);
    f->entry[0] = (char *)"k0_relu";
    f->cubin[0] = (rt_image){(char *)"sm_90", cubin90, sizeof cubin90};
    f->mod = (rt_module){1, f->entry, 1, f->cubin,
                         {(char *)"compute_90", (uint8_t *)ptx, strlen(ptx)}};
    f->p.module = &f->mod;
    f->p.nmodules = 1;
    f->p.kernel = f->kern;
    instr(f, RT_OP_INPUT, 0, vec(8))->io = 0;
    instr(f, RT_OP_CONST, 3, vec(4));
}

/* One microbatch's instructions, the slice into buffer slice at offset. */
static void microbatch(fixture *f, int slice, int64_t offset)
{
    operand(instr(f, RT_OP_EXTRACT, slice, vec(4)), 0, mat(1, 8))->offset = offset;
    relu_kernel(f, f->g.ninstr, slice, 2);
    operand(instr(f, RT_OP_RELU, 2, vec(4)), slice, vec(4));
    operand(operand(instr(f, RT_OP_ADD, 3, vec(4)), 3, vec(4)), 2, vec(4));
}

/* The loop form: body 0 the input and the sum's zeros, body 1 one
 * microbatch (its slice in slotted buffer 5, buffer 1 for microbatch 0 and
 * 4 for 1; the extract's offset stepping by 4), body 2 empty; items
 * (0, 0), (1, 0), (1, 1), (2, 0). */
static void make_loop(fixture *f)
{
    begin(f);
    microbatch(f, 5, 0);
    rt_program *g = &f->g;
    g->nbody = 3;
    g->body_start = f->body_start;
    f->body_start[1] = 2;
    f->body_start[2] = 5;
    g->nmb = 2;
    g->nitem = 4;
    g->item = f->item;
    memcpy(f->item, (int32_t[]){0, 0, 1, 0, 1, 1, 2, 0}, sizeof f->item);
    g->nslotmap = 1;
    g->slotmap = f->slotmap;
    f->slotmap[1] = 1;
    g->buf_slots = f->buf_slots;
    g->buf_copy_at = f->buf_copy_at;
    g->copy_buf = f->copy_buf;
    g->ncopy = 2;
    for (int b = 0; b < NBUF; b++)
        f->buf_slots[b] = -1;
    f->buf_slots[5] = 0;
    f->copy_buf[0] = 1;
    f->copy_buf[1] = 4;
    g->instr_step = f->instr_step;
    f->instr_step[2] = 4;
}

/* The same, unrolled by hand. */
static void make_flat(fixture *f)
{
    begin(f);
    microbatch(f, 1, 0);
    microbatch(f, 4, 4);
}

static uint8_t *written(const rt_plan *p, size_t *n)
{
    su_status err = {SU_OK, ""};
    uint8_t *b = NULL;
    *n = 0;
    if (!rt_plan_write(p, &b, n, &err))
        fprintf(stderr, "write: %s\n", err.msg);
    return b;
}

static void test_expand(void)
{
    fixture lf, ff;
    make_loop(&lf);
    make_flat(&ff);
    size_t nl, nf, nr, ne;
    uint8_t *bl = written(&lf.p, &nl), *bf = written(&ff.p, &nf);
    CHECK(bl && bf);
    if (!bl || !bf)
        return;
    CHECK(nl < nf); /* the body once, against twice */
    su_status err = {SU_OK, ""};
    /* read as it is: the loop form, which writes the same bytes */
    rt_plan *p = rt_plan_read(bl, nl, "loop.plan", &err);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->stage[0].nbody, 3);
        CHECK_INT(p->stage[0].nitem, 4);
        CHECK_INT(p->stage[0].instr_step[2], 4);
        CHECK_INT(p->stage[0].buf_slots[5], 0);
        CHECK_INT(p->stage[0].buf_slots[1], -1);
        CHECK_INT(p->stage[0].copy_buf[1], 4);
        CHECK_INT(p->nkernels, 1);
        uint8_t *br = written(p, &nr);
        CHECK(br && nr == nl && memcmp(br, bl, nl) == 0);
        free(br);
        rt_plan_free(p);
    }
    /* read plain: the hand-unrolled plan, byte for byte */
    rt_plan *q = rt_plan_read_plain(bl, nl, "loop.plan", &err);
    CHECK(q != NULL);
    if (q) {
        const rt_program *g = &q->stage[0];
        CHECK_INT(g->nbody, 0);
        CHECK_INT(g->nbuf, 6);
        CHECK_INT(g->buf_offset[4], 512);
        CHECK_INT(g->ninstr, 8);
        CHECK_INT(g->instr[5].offset, 4);
        CHECK_INT(g->instr[5].out, 4);
        CHECK_INT(g->instr[6].in[0], 4);
        CHECK_INT(g->instr[7].out, 3);
        CHECK_INT(q->nkernels, 2);
        CHECK_INT(q->kernel[1].instr[0], 6);
        CHECK_INT(q->kernel[1].param[0], 4);
        CHECK_INT(q->kernel[0].param[0], 1);
        uint8_t *be = written(q, &ne);
        CHECK(be && ne == nf && memcmp(be, bf, nf) == 0);
        free(be);
        rt_plan_free(q);
    }
    free(bl);
    free(bf);
}

/* A plan of two stages, each f's loop program as two[] holds it (the
 * caller may edit stage 1's), stage 1's kernel a copy of stage 0's. */
static rt_plan two_stages(const fixture *f, rt_program two[2], rt_kernel kern[2])
{
    kern[0] = kern[1] = f->kern[0];
    kern[1].stage = 1;
    rt_plan p = f->p;
    p.nstages = 2;
    p.stage = two;
    p.kernel = kern;
    p.nkernels = 2;
    return p;
}

/* rt_plan_expand_stages: a plan of two stages, each the loop program
 * (stage 1's kernel a copy of stage 0's), with stage 1 alone expanded is
 * stage 0 as it was (its loop form, its one kernel over body 1) and stage
 * 1 as rt_plan_expand makes it, instruction for instruction and kernel for
 * kernel; the plan it was copied from is left as it was. */
static void test_expand_stages(void)
{
    fixture f;
    make_loop(&f);
    rt_program two[2] = {f.g, f.g};
    rt_kernel kern[2];
    rt_plan p = two_stages(&f, two, kern);
    su_status err = {SU_OK, ""};
    rt_plan one = p, all = p;
    one.mem_ = all.mem_ = NULL;
    bool which[2] = {false, true};
    CHECK(rt_plan_expand_stages(&one, which, &err));
    CHECK(rt_plan_expand(&all, &err));
    CHECK_INT(one.stage[0].nbody, 3);
    CHECK(one.stage[0].instr == f.g.instr && one.stage[0].item == f.g.item);
    CHECK_INT(one.stage[1].nbody, 0);
    CHECK_INT(all.stage[0].nbody, 0);
    CHECK_INT(one.stage[1].ninstr, 8);
    CHECK_INT(all.stage[1].ninstr, 8);
    CHECK(memcmp(one.stage[1].instr, all.stage[1].instr, 8 * sizeof *one.stage[1].instr) == 0);
    /* stage 0's kernel as it was, then stage 1's, one per item of body 1 */
    CHECK_INT(one.nkernels, 3);
    CHECK_INT(all.nkernels, 4);
    CHECK(one.kernel[0].stage == 0 && one.kernel[0].instr[0] == f.kern[0].instr[0]);
    for (int k = 0; k < 2; k++) {
        const rt_kernel *a = &one.kernel[1 + k], *b = &all.kernel[2 + k];
        CHECK(a->stage == 1 && b->stage == 1);
        CHECK(a->instr[0] == b->instr[0] && a->param[0] == b->param[0] &&
              a->param[1] == b->param[1]);
    }
    CHECK(p.stage == two && p.kernel == kern && two[1].nbody == 3); /* untouched */
    /* no stage chosen: nothing is expanded and nothing changes */
    rt_plan none = p;
    none.mem_ = NULL;
    bool neither[2] = {false, false};
    CHECK(rt_plan_expand_stages(&none, neither, &err));
    CHECK(none.stage == two && none.kernel == kern);
    rt_plan_view_free(&one);
    rt_plan_view_free(&all);
    rt_plan_view_free(&none);
}

/* A plan checked a stage at a time reads each stage's loop form alone:
 * two stages, each the loop program, stage 1's item 2 running a body it
 * has not. Stage 0's checks (rt_plan_check_loop_stage, its expansion
 * alone) pass without reading stage 1; stage 1's fail and name it, as do
 * the whole plan's checks (rt_plan_check_loops, rt_plan_validate_rest,
 * which bounds the whole expansion, and rt_plan_validate). */
static void test_check_one_stage(void)
{
    fixture f;
    make_loop(&f);
    rt_program two[2] = {f.g, f.g};
    int32_t item[64];
    CHECK(2 * f.g.nitem <= 64);
    memcpy(item, f.g.item, 2 * (size_t)f.g.nitem * sizeof *item);
    item[4] = 3; /* item 2 runs body 3; the program has 3 */
    two[1].item = item;
    rt_kernel kern[2];
    rt_plan p = two_stages(&f, two, kern);
    su_status err = {SU_OK, ""};
    CHECK(rt_plan_check_loop_stage(&p, 0, &err));
    rt_plan one = p;
    one.mem_ = NULL;
    bool which[2] = {true, false};
    CHECK(rt_plan_expand_stages(&one, which, &err));
    CHECK_INT(one.stage[0].nbody, 0);
    CHECK(one.stage[1].item == item); /* as it was */
    rt_plan_view_free(&one);
    const char *want = "stage 1: item 2 runs body 3 for microbatch 1";
    err = (su_status){SU_OK, ""};
    CHECK(!rt_plan_check_loop_stage(&p, 1, &err) && strstr(err.msg, want));
    err = (su_status){SU_OK, ""};
    CHECK(!rt_plan_check_loops(&p, &err) && strstr(err.msg, want));
    err = (su_status){SU_OK, ""};
    CHECK(!rt_plan_validate_rest(&p, &err) && strstr(err.msg, want));
    err = (su_status){SU_OK, ""};
    CHECK(!rt_plan_validate(&p, &err) && strstr(err.msg, want));
    two[1].item = f.g.item; /* mended: every check passes */
    CHECK(rt_plan_check_loop_stage(&p, 1, &err) && rt_plan_check_loops(&p, &err));
}

/* The loop plan saved, loaded by the library and run on the CPU backend:
 * y is the sum of the two halves' relus, exactly (one add each, in
 * microbatch order, onto zeros). */
static void test_run(void)
{
    fixture f;
    make_loop(&f);
    size_t n;
    uint8_t *b = written(&f.p, &n);
    char path[] = "/tmp/test_plan_loop_XXXXXX";
    int fd = mkstemp(path);
    CHECK(b && fd >= 0 && write(fd, b, n) == (ssize_t)n);
    if (fd >= 0)
        close(fd);
    free(b);
    char *error = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    float x[8] = {1.5f, -2.0f, 0.25f, 3.0f, -1.0f, 4.5f, 0.125f, -0.5f};
    const void *y = NULL;
    shardc_session_config cfg = {.comm = "local", .seed = 1};
    CHECK(shardc_plan_load(path, &plan, &error) == SHARDC_OK);
    if (plan && shardc_session_new(plan, &cfg, &s, &error) == SHARDC_OK &&
        shardc_session_bind(s, "x", x, sizeof x, &error) == SHARDC_OK &&
        shardc_session_run(s, &error) == SHARDC_OK &&
        shardc_session_output(s, "y", &y, NULL, &error) == SHARDC_OK) {
        const float *got = y;
        for (int i = 0; i < 4; i++) {
            float a = x[i] > 0 ? x[i] : 0, c = x[i + 4] > 0 ? x[i + 4] : 0, want = a + c;
            CHECK(got[i] == want);
        }
    } else {
        CHECK(!"the loop plan runs");
        fprintf(stderr, "  %s\n", error ? error : "");
    }
    shardc_session_free(s);
    shardc_plan_free(plan);
    shardc_free(error);
    unlink(path);
}

static void expect_invalid(const rt_plan *p, const char *want, int line)
{
    su_status err = {SU_OK, ""};
    bool ok = rt_plan_validate(p, &err);
    check_count++;
    if (ok || !strstr(err.msg, want)) {
        check_failures++;
        fprintf(stderr, "test_plan_loop.c:%d: validate %s \"%s\", want an error with \"%s\"\n",
                line, ok ? "accepted the plan" : "said", err.msg, want);
    }
}
#define EXPECT_INVALID(p, want) expect_invalid(p, want, __LINE__)

static void test_validate(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    make_loop(&f);
    CHECK(rt_plan_validate(&f.p, &err));
    f.body_start[0] = 1;
    EXPECT_INVALID(&f.p, "stage 0: body 0 starts at instruction 1");
    make_loop(&f);
    f.body_start[2] = 1;
    EXPECT_INVALID(&f.p, "stage 0: body 2 starts at instruction 1");
    make_loop(&f);
    f.item[4] = 3;
    EXPECT_INVALID(&f.p, "stage 0: item 2 runs body 3 for microbatch 1; the program has 3 "
                   "bodies and 2 microbatches");
    make_loop(&f);
    f.item[5] = 2;
    EXPECT_INVALID(&f.p, "item 2 runs body 1 for microbatch 2");
    make_loop(&f);
    f.g.nmb = 0;
    EXPECT_INVALID(&f.p, "stage 0: the loop form has 0 microbatches; at least 1");
    make_loop(&f);
    f.slotmap[1] = 2;
    EXPECT_INVALID(&f.p, "stage 0: slot map 0 gives microbatch 1 slot 2; the slots are 0 .. 1");
    make_loop(&f);
    f.buf_slots[5] = 1;
    EXPECT_INVALID(&f.p, "stage 0: buffer 5 takes slot map 1; the program has 1");
    make_loop(&f);
    f.copy_buf[1] = 6;
    EXPECT_INVALID(&f.p, "stage 0: buffer 5's copy for slot 1 is buffer 6, not a plain buffer of "
                   "the 6");
    make_loop(&f);
    f.copy_buf[1] = 5;
    EXPECT_INVALID(&f.p, "stage 0: buffer 5's copy for slot 1 is buffer 5, not a plain buffer");
    make_loop(&f);
    f.buf_copy_at[5] = 1;
    EXPECT_INVALID(&f.p, "stage 0: buffer 5's copies for slots 0 .. 1 start at 1 of a copy "
                   "table of 2");
    make_loop(&f);
    f.buf_slots[3] = 0;
    f.buf_copy_at[3] = 0;
    EXPECT_INVALID(&f.p, "I/O entry 1 ('y') lives in a slotted buffer of stage 0");
    make_loop(&f);
    f.kern[0].ninstr = 1;
    f.list[0][0] = 1;
    CHECK(rt_plan_validate(&f.p, &err) == false); /* a const is no kernel's, whatever the body */
    make_loop(&f);
    f.g.instr_step[3] = 1; /* a relu's offset is 0: its steps are no matter */
    CHECK(rt_plan_validate(&f.p, &err));
    f.g.instr_step[3] = 0;
    f.instr[2].offset = INT64_MAX;
    EXPECT_INVALID(&f.p, "stage 0: instruction 2's offset for microbatch 1 overflows");
    make_loop(&f);
    f.instr_step[2] = 8; /* microbatch 1 reads past the bucket: the plain form's check */
    EXPECT_INVALID(&f.p, "instruction 5 (extract)");
    /* more instructions than the runtime runs: 3 a microbatch */
    make_loop(&f);
    int32_t nitem = RT_MAX_EXPANDED_INSTR / 3 + 1;
    int32_t *item = malloc(2 * (size_t)nitem * sizeof *item);
    for (int32_t i = 0; i < nitem; i++)
        item[2 * i] = 1, item[2 * i + 1] = i % 2;
    f.g.item = item;
    f.g.nitem = nitem;
    EXPECT_INVALID(&f.p, "the loop form expands to more than 4194304 instructions (stage 0's "
                   "schedule)");
    free(item);
}

/* A kernel over two bodies: the relu kernel's instruction list given the
 * extract of body 1 and the relu (fine), then the const of body 0. */
static void test_kernel_bodies(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    make_loop(&f);
    f.kern[0].ninstr = 2;
    f.kern[0].instr = (int32_t[]){1, 3};
    EXPECT_INVALID(&f.p, "kernel 0 of stage 0 stands for instructions of bodies 0 and 1: a "
                   "kernel runs within one body");
    f.kern[0].instr = (int32_t[]){3, 9};
    EXPECT_INVALID(&f.p, "kernel 0 of stage 0: instruction 9 is out of range (the program has 5)");
    (void)err;
}

/* The validator's sample (rt_plan_loop_sample) counts the slot maps of a
 * body's kernels' parameters too, not only of its instructions' buffers:
 * three microbatches, the relu's operand (slotted buffer 5) in one slot
 * for all (buffer 1), and the relu kernel's parameter made buffer 6,
 * slotted by a map of its own, buffer 1 for microbatches 0 and 2 and
 * buffer 4 for microbatch 1. Only microbatch 1's kernel reads a buffer
 * its instruction does not, and a sample by the instructions' slots alone
 * (one class, microbatches 0 and 2) would pass. */
static void test_sample_kernel_params(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    make_loop(&f);
    rt_program *g = &f.g;
    int32_t item[10] = {0, 0, 1, 0, 1, 1, 1, 2, 2, 0}, slotmap[6] = {0, 0, 0, 0, 1, 0};
    g->nmb = 3;
    g->item = item;
    g->nitem = 5;
    g->slotmap = slotmap;
    g->nslotmap = 2;
    f.instr_step[2] = 0; /* every microbatch's slice at 0: 8 columns hold one */
    buffer(&f, 256, 16);
    f.buf_slots[6] = 1;
    f.buf_copy_at[6] = 2;
    f.copy_buf[2] = 1;
    f.copy_buf[3] = 4;
    g->ncopy = 4;
    CHECK(rt_plan_validate(&f.p, &err));
    CHECK(rt_plan_validate_stage_whole(&f.p, 0, &err));
    f.param[0][0] = 6;
    EXPECT_INVALID(&f.p, "parameter 0 is buffer 4 as f32[4], but no instruction of the kernel "
                         "reads it as that type");
    CHECK(!rt_plan_validate_stage_whole(&f.p, 0, &err));
    f.param[0][0] = 5;
    CHECK(rt_plan_validate(&f.p, &err));
}

/* What the writer checks before it rolls a stage (rt_plan_check_refs):
 * the buffers and instructions the roll indexes by, in range. */
static void test_check_refs(void)
{
    fixture f;
    su_status err = {SU_OK, ""};
    make_loop(&f);
    CHECK(rt_plan_check_refs(&f.p, 0, &err));
    f.instr[2].in[0] = 6;
    CHECK(!rt_plan_check_refs(&f.p, 0, &err));
    CHECK_STR(err.msg, "stage 0, instruction 2: an operand or the result is out of range (the "
                       "program has 6 buffers)");
    make_loop(&f);
    f.instr[2].out = -2;
    CHECK(!rt_plan_check_refs(&f.p, 0, &err));
    make_loop(&f);
    f.param[0][1] = 6;
    CHECK(!rt_plan_check_refs(&f.p, 0, &err));
    CHECK_STR(err.msg, "kernel 0 of stage 0: an instruction or a parameter is out of range");
    make_loop(&f);
    f.kern[0].instr = (int32_t[]){5};
    CHECK(!rt_plan_check_refs(&f.p, 0, &err));
    make_loop(&f);
    f.kern[0].stage = 1; /* another stage's: not this one's to check */
    CHECK(rt_plan_check_refs(&f.p, 0, &err));
    /* the kernels' part alone reads no instruction (the writer's are
     * packed then: codegen.h's cg_packed) */
    make_loop(&f);
    f.p.stage[0].instr = NULL;
    CHECK(rt_plan_check_kernel_refs(&f.p, 0, &err));
    f.param[0][1] = 6;
    CHECK(!rt_plan_check_kernel_refs(&f.p, 0, &err));
    CHECK_STR(err.msg, "kernel 0 of stage 0: an instruction or a parameter is out of range");
    make_loop(&f);
    f.p.stage[0].instr = NULL;
    f.kern[0].instr = (int32_t[]){5};
    CHECK(!rt_plan_check_kernel_refs(&f.p, 0, &err));
}

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

/* The offset of section i's header. */
static size_t section_at(const uint8_t *b, int i)
{
    size_t pos = 28;
    for (int k = 0; k < i; k++)
        pos += 20 + (size_t)rd(b + pos + 8, 8);
    return pos;
}

/* Every CRC and the total size recomputed after an edit. */
static void refix(uint8_t *b, size_t n)
{
    uint64_t nsec = rd(b + 12, 4);
    size_t pos = 28;
    for (uint64_t i = 0; i < nsec; i++) {
        uint64_t len = rd(b + pos + 8, 8);
        wr(b + pos + 16, su_crc32(0, b + pos + 20, (size_t)len), 4);
        pos += 20 + (size_t)len;
    }
    wr(b + 16, n, 8);
    wr(b + 24, su_crc32(0, b, 24), 4);
}

/* The reader: the loop form's tail of PROG (ending with the one step,
 * instruction 2's 4, and the one slotted buffer before it) edited. */
static void test_read(void)
{
    fixture f;
    make_loop(&f);
    size_t n;
    uint8_t *b = written(&f.p, &n);
    if (!b)
        return;
    uint8_t *c = malloc(n);
    size_t end = section_at(b, 3); /* KERN: PROG ends just before */
    CHECK_INT(rd(b + end - 12, 4), 2);
    CHECK_INT(rd(b + end - 8, 8), 4);
    memcpy(c, b, n);
    wr(c + end - 8, 0, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section PROG (stage 0): the step of instruction 2 is out of order, "
                      "out of range (the program has 5 instructions) or 0");
    memcpy(c, b, n);
    wr(c + end - 12, 5, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "the step of instruction 5 is out of order");
    /* the slotted buffer: (5, map 0, copies 1 and 4), then the step count */
    CHECK_INT(rd(b + end - 32, 4), 5);
    CHECK_INT(rd(b + end - 28, 4), 0);
    CHECK_INT(rd(b + end - 24, 4), 1);
    CHECK_INT(rd(b + end - 20, 4), 4);
    memcpy(c, b, n);
    wr(c + end - 32, 7, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section PROG (stage 0): slotted buffer 7 (slot map 0) is out of "
                      "order or out of range (the program has 6 buffers and 1 slot maps)");
    memcpy(c, b, n);
    wr(c + end - 28, 1, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "slotted buffer 5 (slot map 1) is out of order or out of range");
    memcpy(c, b, n);
    wr(c + end - 20, 9, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "buffer 5's copy for slot 1 is buffer 9, not a plain buffer of the 6");
    /* the slot map: microbatch 1's slot 1, then the slotted buffer count */
    CHECK_INT(rd(b + end - 40, 4), 1);
    memcpy(c, b, n);
    wr(c + end - 40, 5, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section PROG (stage 0): slot map 0 gives microbatch 1 slot 5; the "
                      "slots are 0 .. 1");
    /* PROG 4 bytes short: the last step cut */
    size_t prog = section_at(b, 2);
    memcpy(c, b, end - 4);
    memcpy(c + end - 4, b + end, n - end);
    wr(c + prog + 8, rd(b + prog + 8, 8) - 4, 8);
    refix(c, n - 4);
    EXPECT_READ_ERROR(c, n - 4, "section PROG (stage 0): the step count is 1, but the 8 bytes "
                      "left hold at most 0");
    free(c);
    free(b);
}

static int write_seeds(const char *dir)
{
    fixture f;
    make_loop(&f);
    size_t n;
    uint8_t *b = written(&f.p, &n);
    int bad = !b;
    for (int fuzz = 0; b && fuzz < 2; fuzz++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%sloop.plan", dir, fuzz ? "F-" : "");
        FILE *out = fopen(path, "wb");
        if (!out || (fuzz && fputc('F', out) == EOF) || fwrite(b, 1, n, out) != n ||
            fclose(out) != 0) {
            perror(path);
            bad = 1;
        }
    }
    free(b);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
        return write_seeds(argv[2]);
    test_expand();
    test_expand_stages();
    test_check_one_stage();
    test_run();
    test_validate();
    test_kernel_bodies();
    test_check_refs();
    test_sample_kernel_params();
    test_read();
    return CHECK_DONE();
}
