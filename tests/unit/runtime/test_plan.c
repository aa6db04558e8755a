/* test_plan.c: the plan file form (runtime/plan/plan_io.c): round trips of plans
 * built in memory, every malformed-file case with its message, and the
 * validator's and rt_instr_check's rules.
 *
 *   test_plan                    runs the tests
 *   test_plan --write-seeds DIR  writes the fuzz seeds (tests/fuzz/corpus/plan):
 *                                each fixture plan, plain and in fuzz form
 */
#include <math.h>
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

/* ---- building plans ---- */

/* A type from its dims: T(RT_F32, 4, 16) is f32[4, 16]; S(RT_F32) a scalar. */
#define T(dt, ...) ty(dt, (int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / 8)
#define S(dt) ty(dt, NULL, 0)

static rt_type ty(int dtype, const int64_t *dims, size_t rank)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = (uint8_t)dtype;
    t.rank = (uint8_t)rank;
    for (size_t i = 0; i < rank; i++)
        t.dim[i] = dims[i];
    return t;
}

enum { MAXIO = 12, MAXBUF = 40, MAXINSTR = 40 };

/* A plan and all its storage, by value: copies are deep, memcmp compares. */
typedef struct fixture {
    rt_plan p;
    rt_io io[MAXIO];
    rt_program stage[2];
    int64_t bufs[2][MAXBUF];
    int64_t offs[2][MAXBUF];
    rt_instr instr[2][MAXINSTR];
} fixture;

static void fix_begin(fixture *f, int naxes, const char *const *names, const int64_t *sizes,
                      int stage_axis, int nstages)
{
    memset(f, 0, sizeof *f);
    f->p.naxes = naxes;
    for (int a = 0; a < naxes; a++) {
        f->p.axis_name[a] = (char *)names[a];
        f->p.axis_size[a] = sizes[a];
    }
    f->p.stage_axis = stage_axis;
    f->p.nstages = nstages;
    f->p.stage = f->stage;
    f->p.io = f->io;
    f->p.loss = -1;
    f->p.init_module = -1;
    f->p.report = (char *)"";
    for (int s = 0; s < nstages; s++) {
        f->stage[s].buf_bytes = f->bufs[s];
        f->stage[s].buf_offset = f->offs[s];
        f->stage[s].instr = f->instr[s];
    }
}

/* An I/O entry; split: dim split over mesh axis ax (-1: none). No buffer
 * (a param's or state's is set by its source, see src) and no update. */
static rt_io *add_io(fixture *f, int kind, const char *name, rt_type t, int dim, int ax,
                     int stage)
{
    rt_io *io = &f->io[f->p.nio++];
    io->kind = (uint8_t)kind;
    io->name = (char *)name;
    io->type = t;
    if (ax >= 0) {
        io->sh.naxes[dim] = 1;
        io->sh.axes[dim][0] = (uint8_t)ax;
    }
    io->stage = stage;
    io->buffer = -1;
    io->update = -1;
    return io;
}

/* A buffer after the others in the stage's arena. */
static void add_buf(fixture *f, int s, int64_t bytes)
{
    rt_program *g = &f->stage[s];
    f->offs[s][g->nbuf] = g->arena_bytes;
    f->bufs[s][g->nbuf++] = bytes;
    g->arena_bytes += (bytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

/* An instruction of stage s; operands given as (buffer, type) pairs. */
static rt_instr *add(fixture *f, int s, int op, int out, rt_type out_t, int nin, ...)
{
    rt_instr *in = &f->instr[s][f->stage[s].ninstr++];
    in->op = (uint16_t)op;
    in->nin = (uint8_t)nin;
    in->out = out;
    in->out_t = out_t;
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++) {
        in->in[i] = va_arg(ap, int);
        in->in_t[i] = va_arg(ap, rt_type);
    }
    va_end(ap);
    return in;
}

/* A source instruction of stage s (input, param, state) filling buffer out
 * from entry io; a param's or a state's entry lives in that buffer. */
static rt_instr *src(fixture *f, int s, int op, int out, rt_type out_t, int io)
{
    rt_instr *in = add(f, s, op, out, out_t, 0);
    in->io = io;
    if (op != RT_OP_INPUT)
        f->io[io].buffer = out;
    return in;
}

static void set_axes(rt_instr *in, int ax)
{
    in->naxes = 1;
    in->axes[0] = (uint8_t)ax;
}

/* Two pipeline stages over pp, tensor parallel over tp: an embedding and a
 * layernorm on stage 0, a matmul, collectives and layout ops on stage 1. */
static void make_pipeline(fixture *f)
{
    static const char *const names[] = {"pp", "tp"};
    static const int64_t sizes[] = {2, 2};
    enum { F = RT_F32, PP = 0, TP = 1 };
    fix_begin(f, 2, names, sizes, PP, 2);
    f->p.report = (char *)"{\"ranks\": 4, \"note\": \"test\"}";
    f->p.report_len = strlen(f->p.report);

    add_io(f, RT_IO_INPUT, "tokens", T(RT_I32, 8, 16), 0, -1, 0)->sh.partial = 1 << TP;
    rt_io *e = add_io(f, RT_IO_PARAM, "embed", T(F, 64, 32), 1, TP, 0);
    e->init = RT_INIT_NORMAL;
    e->init_a = 0.02;
    add_io(f, RT_IO_PARAM, "ln.g", T(F, 32), 0, -1, 0)->init = RT_INIT_ONES;
    add_io(f, RT_IO_PARAM, "ln.b", T(F, 32), 0, -1, 0)->init = RT_INIT_ZEROS;
    add_io(f, RT_IO_OUTPUT, "h", T(F, 8, 16, 32), 0, -1, 0)->buffer = 6;
    add_io(f, RT_IO_INPUT, "x", T(F, 8, 16, 32), 2, TP, 1);
    rt_io *w = add_io(f, RT_IO_PARAM, "w", T(F, 32, 8), 0, TP, 1);
    w->init = RT_INIT_UNIFORM;
    w->init_a = -0.5;
    w->init_b = 0.5;
    add_io(f, RT_IO_OUTPUT, "y", T(RT_BF16, 16, 4), 1, TP, 1)->buffer = 11;

    static const int64_t b0[] = {512, 4096, 8192, 16384, 128, 128, 16384};
    for (size_t i = 0; i < sizeof b0 / sizeof *b0; i++)
        add_buf(f, 0, b0[i]);
    src(f, 0, RT_OP_INPUT, 0, T(RT_I32, 8, 16), 0);
    src(f, 0, RT_OP_PARAM, 1, T(F, 64, 16), 1);
    add(f, 0, RT_OP_EMBEDDING, 2, T(F, 8, 16, 16), 2, 1, T(F, 64, 16), 0, T(RT_I32, 8, 16));
    rt_instr *in = add(f, 0, RT_OP_ALL_GATHER, 3, T(F, 8, 16, 32), 1, 2, T(F, 8, 16, 16));
    in->dim = 2;
    set_axes(in, TP);
    src(f, 0, RT_OP_PARAM, 4, T(F, 32), 2);
    src(f, 0, RT_OP_PARAM, 5, T(F, 32), 3);
    add(f, 0, RT_OP_LAYERNORM, 6, T(F, 8, 16, 32), 3, 3, T(F, 8, 16, 32), 4, T(F, 32), 5,
        T(F, 32))->eps = 1e-5;

    static const int64_t b1[] = {8192, 512, 4096, 8, 4096, 4096, 512, 256, 256, 256, 128, 64,
                                 8192, 4096, 4096};
    for (size_t i = 0; i < sizeof b1 / sizeof *b1; i++)
        add_buf(f, 1, b1[i]);
    src(f, 1, RT_OP_INPUT, 0, T(F, 8, 16, 16), 5);
    src(f, 1, RT_OP_PARAM, 1, T(F, 16, 8), 6);
    add(f, 1, RT_OP_MATMUL, 2, T(F, 8, 16, 8), 2, 0, T(F, 8, 16, 16), 1, T(F, 16, 8));
    set_axes(add(f, 1, RT_OP_ALL_REDUCE, 13, T(F, 8, 16, 8), 1, 2, T(F, 8, 16, 8)), TP);
    add(f, 1, RT_OP_CONST, 3, S(F), 0)->value = 0.5;
    add(f, 1, RT_OP_MUL, 4, T(F, 8, 16, 8), 2, 13, T(F, 8, 16, 8), 3, S(F));
    in = add(f, 1, RT_OP_TRANSPOSE, 5, T(F, 16, 8, 8), 1, 4, T(F, 8, 16, 8));
    in->nlist = 3;
    in->list[0] = 1, in->list[1] = 0, in->list[2] = 2;
    add(f, 1, RT_OP_SOFTMAX, 14, T(F, 16, 8, 8), 1, 5, T(F, 16, 8, 8))->axis = 2;
    in = add(f, 1, RT_OP_SUM, 6, T(F, 16, 1, 8), 1, 14, T(F, 16, 8, 8));
    in->axis = 1;
    in->keepdims = 1;
    in = add(f, 1, RT_OP_REDUCE_SCATTER, 7, T(F, 8, 1, 8), 1, 6, T(F, 16, 1, 8));
    set_axes(in, TP);
    in = add(f, 1, RT_OP_ALL_TO_ALL, 8, T(F, 16, 1, 4), 1, 7, T(F, 8, 1, 8));
    in->dim = 2;
    in->dim2 = 0;
    set_axes(in, TP);
    add(f, 1, RT_OP_COPY, 9, T(F, 16, 4), 1, 8, T(F, 16, 1, 4));
    add(f, 1, RT_OP_CAST, 10, T(RT_BF16, 16, 4), 1, 9, T(F, 16, 4));
    in = add(f, 1, RT_OP_SLICE, 11, T(RT_BF16, 16, 2), 1, 10, T(RT_BF16, 16, 4));
    in->dim = 1;
    set_axes(in, TP);
    add(f, 1, RT_OP_ATTENTION, 12, T(F, 8, 16, 16), 3, 0, T(F, 8, 16, 16), 0, T(F, 8, 16, 16), 0,
        T(F, 8, 16, 16))->causal = 1;
}

/* One stage, data parallel over dp: a small language-model loss, the ops
 * make_pipeline does not use. */
static void make_loss(fixture *f)
{
    static const char *const names[] = {"dp", "tp"};
    static const int64_t sizes[] = {2, 2};
    enum { F = RT_F32, DP = 0 };
    fix_begin(f, 2, names, sizes, -1, 1);
    for (int i = 0; i < 2; i++) { /* made as uniform ids when absent, as codegen does */
        rt_io *io = add_io(f, RT_IO_INPUT, i ? "labels" : "ids", T(RT_I32, 4, 8), 0, DP, 0);
        io->init = RT_INIT_UNIFORM;
        io->init_b = 16;
    }
    add_io(f, RT_IO_PARAM, "emb", T(F, 16, 8), 0, -1, 0)->init = RT_INIT_NORMAL;
    add_io(f, RT_IO_PARAM, "g", T(F, 8), 0, -1, 0)->init = RT_INIT_ONES;
    add_io(f, RT_IO_OUTPUT, "loss", S(F), 0, -1, 0)->buffer = 17;
    rt_io *bias = add_io(f, RT_IO_PARAM, "bias", T(F, 8, 4), 0, DP, 0); /* over (dp, tp) */
    bias->sh.naxes[0] = 2;
    bias->sh.axes[0][1] = 1;
    bias->init = RT_INIT_ZEROS;

    static const int64_t b[] = {64, 64, 512, 32, 512, 512, 64, 512, 64, 512, 1024, 4, 4, 32, 128,
                                512, 512, 4};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        add_buf(f, 0, b[i]);
    src(f, 0, RT_OP_INPUT, 0, T(RT_I32, 2, 8), 0);
    src(f, 0, RT_OP_INPUT, 1, T(RT_I32, 2, 8), 1);
    src(f, 0, RT_OP_PARAM, 2, T(F, 16, 8), 2);
    src(f, 0, RT_OP_PARAM, 3, T(F, 8), 3);
    add(f, 0, RT_OP_EMBEDDING, 4, T(F, 2, 8, 8), 2, 2, T(F, 16, 8), 0, T(RT_I32, 2, 8));
    add(f, 0, RT_OP_RMSNORM, 15, T(F, 2, 8, 8), 2, 4, T(F, 2, 8, 8), 3, T(F, 8))->eps = 1e-6;
    add(f, 0, RT_OP_GELU, 5, T(F, 2, 8, 8), 1, 15, T(F, 2, 8, 8));
    set_axes(add(f, 0, RT_OP_BROADCAST, 16, T(F, 2, 8, 8), 1, 5, T(F, 2, 8, 8)), DP);
    rt_instr *in = add(f, 0, RT_OP_AMAX, 6, T(F, 2, 8, 1), 1, 16, T(F, 2, 8, 8));
    in->axis = 2;
    in->keepdims = 1;
    /* in place: each element is read before it is written */
    add(f, 0, RT_OP_SUB, 16, T(F, 2, 8, 8), 2, 16, T(F, 2, 8, 8), 6, T(F, 2, 8, 1));
    add(f, 0, RT_OP_COPY, 5, T(F, 2, 8, 8), 1, 16, T(F, 2, 8, 8));
    add(f, 0, RT_OP_EXP, 7, T(F, 2, 8, 8), 1, 5, T(F, 2, 8, 8));
    in = add(f, 0, RT_OP_MEAN, 8, T(F, 2, 8, 1), 1, 7, T(F, 2, 8, 8));
    in->axis = 2;
    in->keepdims = 1;
    add(f, 0, RT_OP_DIV, 7, T(F, 2, 8, 8), 2, 7, T(F, 2, 8, 8), 8, T(F, 2, 8, 1));
    in = add(f, 0, RT_OP_TRANSPOSE, 9, T(F, 8, 16), 1, 2, T(F, 16, 8));
    in->nlist = 2;
    in->list[0] = 1;
    add(f, 0, RT_OP_MATMUL, 10, T(F, 2, 8, 16), 2, 7, T(F, 2, 8, 8), 9, T(F, 8, 16));
    add(f, 0, RT_OP_XENT, 11, S(F), 2, 10, T(F, 2, 8, 16), 1, T(RT_I32, 2, 8));
    set_axes(add(f, 0, RT_OP_ALL_REDUCE, 17, S(F), 1, 11, S(F)), DP);
    add(f, 0, RT_OP_MSE, 12, S(F), 2, 15, T(F, 2, 8, 8), 5, T(F, 2, 8, 8));
    src(f, 0, RT_OP_PARAM, 13, T(F, 2, 4), 5);
    in = add(f, 0, RT_OP_ALL_GATHER, 14, T(F, 8, 4), 1, 13, T(F, 2, 4));
    in->naxes = 2;
    in->axes[1] = 1;
    /* each instruction's place in the model, but the last one's (none) */
    f->p.source = (char *)"models/lm.sh";
    for (int k = 0; k + 1 < f->stage[0].ninstr; k++) {
        f->instr[0][k].line = 3 + k;
        f->instr[0][k].col = 1 + 4 * (k % 3);
    }
}

/* A training step over dp: AdamW on w (with its states, the step count
 * among them), SGD with momentum on emb, the loss; and every other opcode
 * of version 2 once. */
static void make_train(fixture *f)
{
    static const char *const names[] = {"dp"};
    static const int64_t sizes[] = {2};
    enum { F = RT_F32, I = RT_I32, DP = 0 };
    fix_begin(f, 1, names, sizes, -1, 1);
    add_io(f, RT_IO_INPUT, "x", T(F, 8, 4), 0, DP, 0)->init = RT_INIT_NORMAL;
    add_io(f, RT_IO_INPUT, "labels", T(I, 8), 0, DP, 0);
    rt_io *w = add_io(f, RT_IO_PARAM, "w", T(F, 4, 6), 0, -1, 0);
    w->init = RT_INIT_NORMAL;
    w->init_a = 0.1;
    add_io(f, RT_IO_STATE, "w.m", T(F, 4, 6), 0, -1, 0)->init = RT_INIT_ZEROS;
    add_io(f, RT_IO_STATE, "w.v", T(F, 4, 6), 0, -1, 0)->init = RT_INIT_ZEROS;
    add_io(f, RT_IO_STATE, "step", S(F), 0, -1, 0)->init = RT_INIT_ZEROS;
    add_io(f, RT_IO_OUTPUT, "loss", S(F), 0, -1, 0)->buffer = 27;
    add_io(f, RT_IO_PARAM, "emb", T(F, 10, 4), 0, -1, 0)->init = RT_INIT_ONES;
    add_io(f, RT_IO_STATE, "emb.buf", T(F, 10, 4), 0, -1, 0)->init = RT_INIT_ZEROS;
    f->p.loss = 6;

    static const int64_t b[] = {64, 16, 96, 96, 96, 4, 96, 4, 96, 64, 96, 4, 4, 96,
                                96, 96, 96, 16, 96, 96, 96, 64, 160, 160, 160, 160, 160, 4, 96,
                                192, 96, 32, 16, 64};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        add_buf(f, 0, b[i]);
    const rt_type x = T(F, 4, 4), wt = T(F, 4, 6), et = T(F, 10, 4);
    src(f, 0, RT_OP_INPUT, 0, x, 0);
    src(f, 0, RT_OP_INPUT, 1, T(I, 4), 1);
    src(f, 0, RT_OP_PARAM, 2, wt, 2);
    src(f, 0, RT_OP_STATE, 3, wt, 3);
    src(f, 0, RT_OP_STATE, 4, wt, 4);
    src(f, 0, RT_OP_STATE, 5, S(F), 5);
    add(f, 0, RT_OP_MATMUL, 6, wt, 2, 0, x, 2, wt);
    add(f, 0, RT_OP_XENT, 7, S(F), 2, 6, wt, 1, T(I, 4));
    set_axes(add(f, 0, RT_OP_ALL_REDUCE, 27, S(F), 1, 7, S(F)), DP);
    add(f, 0, RT_OP_XENT_GRAD, 8, wt, 2, 6, wt, 1, T(I, 4));
    rt_instr *in = add(f, 0, RT_OP_TRANSPOSE, 9, x, 1, 0, x);
    in->nlist = 2;
    in->list[0] = 1;
    add(f, 0, RT_OP_MATMUL, 10, wt, 2, 9, x, 8, wt);
    set_axes(add(f, 0, RT_OP_ALL_REDUCE, 28, wt, 1, 10, wt), DP);
    add(f, 0, RT_OP_CONST, 11, S(F), 0)->value = 1;
    add(f, 0, RT_OP_ADD, 12, S(F), 2, 5, S(F), 11, S(F));
    add(f, 0, RT_OP_ADAM_M, 13, wt, 2, 3, wt, 28, wt)->beta1 = 0.9;
    add(f, 0, RT_OP_ADAM_V, 14, wt, 2, 4, wt, 28, wt)->beta2 = 0.999;
    in = add(f, 0, RT_OP_ADAMW, 15, wt, 4, 2, wt, 13, wt, 14, wt, 12, S(F));
    in->lr = 1e-3;
    in->beta1 = 0.9;
    in->beta2 = 0.999;
    in->eps = 1e-8;
    in->wd = 0.01;
    f->io[2].update = 15;
    f->io[3].update = 13;
    f->io[4].update = 14;
    f->io[5].update = 12;
    add(f, 0, RT_OP_GT, 16, wt, 2, 6, wt, 11, S(F));
    add(f, 0, RT_OP_EQ, 17, T(I, 4), 2, 1, T(I, 4), 1, T(I, 4));
    add(f, 0, RT_OP_GELU_GRAD, 18, wt, 2, 6, wt, 8, wt);
    add(f, 0, RT_OP_SILU_GRAD, 19, wt, 2, 6, wt, 18, wt);
    add(f, 0, RT_OP_EXPAND, 20, wt, 1, 11, S(F));
    add(f, 0, RT_OP_ATTN_PROBS, 21, x, 2, 0, x, 0, x)->causal = 1;
    src(f, 0, RT_OP_PARAM, 22, et, 7);
    add(f, 0, RT_OP_EMBEDDING_GRAD, 23, et, 2, 1, T(I, 4), 21, x);
    src(f, 0, RT_OP_STATE, 24, et, 8);
    in = add(f, 0, RT_OP_MOMENTUM, 25, et, 3, 24, et, 23, et, 22, et);
    in->momentum = 0.9;
    in = add(f, 0, RT_OP_SGD, 26, et, 2, 22, et, 25, et);
    in->lr = 0.1;
    in->wd = 1e-4;
    f->io[7].update = 26;
    f->io[8].update = 25;
    /* attention's backward (format 11): statistics, then an instruction of
     * 6 operands, the query positions last */
    add(f, 0, RT_OP_IOTA, 32, T(I, 4), 0);
    add(f, 0, RT_OP_ATTN_STATS, 31, T(F, 4, 2), 5, 0, x, 0, x, 0, x, 0, x, 32, T(I, 4))->causal = 1;
    add(f, 0, RT_OP_ATTN_DQ, 33, x, 6, 0, x, 0, x, 0, x, 0, x, 31, T(F, 4, 2), 32, T(I, 4))
        ->causal = 1;
    /* a gradient bucket [2, 24]: w's gradient (28) in columns 12..23, in
     * place, and read back */
    const rt_type bt = T(F, 2, 24);
    add(f, 0, RT_OP_EXPAND, 29, bt, 1, 11, S(F));
    add(f, 0, RT_OP_INSERT, 29, bt, 2, 29, bt, 28, wt)->offset = 12;
    add(f, 0, RT_OP_EXTRACT, 30, wt, 1, 29, bt)->offset = 12;
}

/* No mesh, one stage, nothing in it. */
static void make_empty(fixture *f)
{
    fix_begin(f, 0, NULL, NULL, -1, 1);
}

/* Two pipeline stages on dp x pp = 2x2 joined by a send and a recv: stage
 * 0 reads x, multiplies it by w and sends it; stage 1 receives it and
 * adds x again (x has an entry on each stage), and each stage keeps the
 * step count (an entry each), step + 1. */
static void make_stages(fixture *f)
{
    static const char *const names[] = {"dp", "pp"};
    static const int64_t sizes[] = {2, 2};
    enum { F = RT_F32, DP = 0, PP = 1 };
    fix_begin(f, 2, names, sizes, PP, 2);
    add_io(f, RT_IO_INPUT, "x", T(F, 4, 8), 0, DP, 0);
    add_io(f, RT_IO_PARAM, "w", T(F, 8), 0, -1, 0)->init = RT_INIT_ONES;
    rt_io *st = add_io(f, RT_IO_STATE, "step", S(F), 0, -1, 0);
    st->init = RT_INIT_ZEROS;
    st->update = 5;
    add_io(f, RT_IO_INPUT, "x", T(F, 4, 8), 0, DP, 1);
    st = add_io(f, RT_IO_STATE, "step", S(F), 0, -1, 1);
    st->init = RT_INIT_ZEROS;
    st->update = 5;
    add_io(f, RT_IO_OUTPUT, "y", T(F, 4, 8), 0, DP, 1)->buffer = 2;
    static const int64_t b[2][6] = {{64, 32, 64, 4, 4, 4}, {64, 64, 64, 4, 4, 4}};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 6; i++)
            add_buf(f, s, b[s][i]);
    src(f, 0, RT_OP_INPUT, 0, T(F, 2, 8), 0);
    src(f, 0, RT_OP_PARAM, 1, T(F, 8), 1);
    add(f, 0, RT_OP_MUL, 2, T(F, 2, 8), 2, 0, T(F, 2, 8), 1, T(F, 8));
    add(f, 0, RT_OP_SEND, -1, T(F, 2, 8), 1, 2, T(F, 2, 8))->dim = 1;
    src(f, 0, RT_OP_STATE, 3, S(F), 2);
    add(f, 0, RT_OP_CONST, 4, S(F), 0)->value = 1;
    add(f, 0, RT_OP_ADD, 5, S(F), 2, 3, S(F), 4, S(F));
    add(f, 1, RT_OP_RECV, 0, T(F, 2, 8), 0)->dim = 0;
    src(f, 1, RT_OP_INPUT, 1, T(F, 2, 8), 3);
    add(f, 1, RT_OP_ADD, 2, T(F, 2, 8), 2, 0, T(F, 2, 8), 1, T(F, 2, 8));
    src(f, 1, RT_OP_STATE, 3, S(F), 4);
    add(f, 1, RT_OP_CONST, 4, S(F), 0)->value = 1;
    add(f, 1, RT_OP_ADD, 5, S(F), 2, 3, S(F), 4, S(F));
}

/* ---- byte helpers ---- */

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

/* Offset of section i (0-based); n when the file does not reach it. */
static size_t section_at(const uint8_t *b, size_t n, int i)
{
    size_t pos = 28;
    for (; i > 0 && pos + 20 <= n; i--)
        pos += 20 + (size_t)rd(b + pos + 8, 8);
    return pos + 20 <= n ? pos : n;
}

/* Makes the header's total size and every CRC right again after an edit. */
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

#include "plan_read_checks.h"

/* rt_plan_validate_stage on each stage, then rt_plan_validate_rest: the
 * halves a writer holding one plain stage at a time runs. */
static bool validate_halves(const rt_plan *p, su_status *err)
{
    for (int s = 0; s < p->nstages; s++)
        if (!rt_plan_validate_stage(p, s, err))
            return false;
    return rt_plan_validate_rest(p, err);
}

/* rt_plan_validate refuses p with want in its message; for a plan in
 * plain form, so do its halves (with a message of their own where the
 * fault is an I/O entry's: their instruction checks, which come first,
 * meet it). */
static void expect_invalid(const rt_plan *p, const char *want, int line)
{
    su_status err = {SU_OK, ""}, half = {SU_OK, ""};
    bool ok = rt_plan_validate(p, &err);
    check_count++;
    if (ok || !strstr(err.msg, want)) {
        check_failures++;
        fprintf(stderr, "test_plan.c:%d: validate %s \"%s\", want an error with \"%s\"\n", line,
                ok ? "accepted the plan" : "said", err.msg, want);
    }
    bool plain = p->stage && p->nstages > 0 && p->nstages <= 64;
    for (int s = 0; plain && s < p->nstages; s++)
        plain = !p->stage[s].nbody;
    if (!plain)
        return;
    check_count++;
    if (validate_halves(p, &half)) {
        check_failures++;
        fprintf(stderr, "test_plan.c:%d: the halves accept a plan validate refuses (\"%s\")\n",
                line, err.msg);
    }
}
#define EXPECT_INVALID(p, want) expect_invalid(p, want, __LINE__)

/* ---- comparisons, field by field ---- */

static bool type_same(const rt_type *a, const rt_type *b)
{
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dim, b->dim, sizeof a->dim) == 0;
}

static bool dbl_same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void check_instr_eq(const rt_instr *a, const rt_instr *b)
{
    CHECK_INT(a->op, b->op);
    CHECK_INT(a->nin, b->nin);
    for (int i = 0; i < RT_MAX_IN; i++) {
        CHECK_INT(a->in[i], b->in[i]);
        CHECK(type_same(&a->in_t[i], &b->in_t[i]));
    }
    CHECK_INT(a->out, b->out);
    CHECK(type_same(&a->out_t, &b->out_t));
    CHECK_INT(a->io, b->io);
    CHECK(dbl_same(a->value, b->value));
    CHECK_INT(a->axis, b->axis);
    CHECK_INT(a->keepdims, b->keepdims);
    CHECK_INT(a->causal, b->causal);
    CHECK(dbl_same(a->eps, b->eps));
    CHECK_INT(a->nlist, b->nlist);
    CHECK(memcmp(a->list, b->list, sizeof a->list) == 0);
    CHECK_INT(a->dim, b->dim);
    CHECK_INT(a->dim2, b->dim2);
    CHECK_INT(a->naxes, b->naxes);
    CHECK(memcmp(a->axes, b->axes, sizeof a->axes) == 0);
    CHECK(dbl_same(a->lr, b->lr));
    CHECK(dbl_same(a->momentum, b->momentum));
    CHECK(dbl_same(a->beta1, b->beta1));
    CHECK(dbl_same(a->beta2, b->beta2));
    CHECK(dbl_same(a->wd, b->wd));
    CHECK_INT(a->line, b->line);
    CHECK_INT(a->col, b->col);
}

static void check_io_eq(const rt_io *a, const rt_io *b)
{
    CHECK_INT(a->kind, b->kind);
    CHECK_STR(a->name, b->name);
    CHECK(type_same(&a->type, &b->type));
    CHECK(memcmp(a->sh.naxes, b->sh.naxes, sizeof a->sh.naxes) == 0);
    CHECK(memcmp(a->sh.axes, b->sh.axes, sizeof a->sh.axes) == 0);
    CHECK_INT(a->sh.partial, b->sh.partial);
    CHECK_INT(a->init, b->init);
    CHECK(dbl_same(a->init_a, b->init_a));
    CHECK(dbl_same(a->init_b, b->init_b));
    CHECK_INT(a->stage, b->stage);
    CHECK_INT(a->buffer, b->buffer);
    CHECK_INT(a->update, b->update);
}

static void check_plan_eq(const rt_plan *a, const rt_plan *b)
{
    CHECK_INT(a->naxes, b->naxes);
    for (int i = 0; i < a->naxes && i < b->naxes; i++) {
        CHECK_STR(a->axis_name[i], b->axis_name[i]);
        CHECK_INT(a->axis_size[i], b->axis_size[i]);
    }
    CHECK_INT(a->stage_axis, b->stage_axis);
    CHECK_INT(a->nstages, b->nstages);
    for (int s = 0; s < a->nstages && s < b->nstages; s++) {
        const rt_program *x = &a->stage[s], *y = &b->stage[s];
        CHECK_INT(x->nbuf, y->nbuf);
        for (int i = 0; i < x->nbuf && i < y->nbuf; i++)
            CHECK_INT(x->buf_bytes[i], y->buf_bytes[i]);
        CHECK_INT(x->ninstr, y->ninstr);
        for (int k = 0; k < x->ninstr && k < y->ninstr; k++)
            check_instr_eq(&x->instr[k], &y->instr[k]);
    }
    CHECK_INT(a->nio, b->nio);
    for (int i = 0; i < a->nio && i < b->nio; i++)
        check_io_eq(&a->io[i], &b->io[i]);
    CHECK_INT(a->loss, b->loss);
    CHECK_INT(a->report_len, b->report_len);
    CHECK_STR(a->report, b->report);
    CHECK_STR(a->source ? a->source : "", b->source);
}

/* ---- tests ---- */

static void test_crc(void)
{
    /* The CRC-32 check value and zlib.crc32(b"SHRDPLAN plan") (Python). */
    CHECK_INT(su_crc32(0, "123456789", 9), 0xCBF43926u);
    CHECK_INT(su_crc32(0, "SHRDPLAN plan", 13), 0xDC49376Cu);
    CHECK_INT(su_crc32(0, "", 0), 0);
    CHECK_INT(su_crc32(su_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    /* 1 MiB (slicing by 8), whole and from an odd address with an odd
     * length: zlib.crc32 of bytes((i * 131 + 7) % 251 for i in range(1 << 20))
     * and of its [3 : 3 + (1 << 20) - 10]; and the same in pieces short
     * enough for the nibble loop */
    size_t n = (size_t)1 << 20;
    unsigned char *b = malloc(n);
    CHECK(b != NULL);
    if (!b)
        return;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 131 + 7) % 251);
    CHECK_INT(su_crc32(0, b, n), 0x5DCBA3C7u);
    CHECK_INT(su_crc32(0, b + 3, n - 10), 0x93DFAF2Cu);
    uint32_t crc = 0;
    for (size_t at = 0; at < n; at += 1000)
        crc = su_crc32(crc, b + at, n - at < 1000 ? n - at : 1000);
    CHECK_INT(crc, 0x5DCBA3C7u);
    free(b);
}

/* The fixture writes, reads back equal field by field, and writing what
 * was read gives the same bytes; the writer leaves the plan untouched. */
static void roundtrip(void (*make)(fixture *), const char *name)
{
    su_status err = {SU_OK, ""};
    fixture f, before;
    make(&f);
    if (!rt_plan_validate(&f.p, &err))
        fprintf(stderr, "%s: %s\n", name, err.msg);
    CHECK(rt_plan_validate(&f.p, &err));
    before = f;
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(rt_plan_write(&f.p, &a, &na, &err));
    CHECK(memcmp(&f, &before, sizeof f) == 0);
    rt_plan *p = rt_plan_read(a, na, name, &err);
    if (!p)
        fprintf(stderr, "%s: %s\n", name, err.msg);
    CHECK(p != NULL);
    if (p) {
        check_plan_eq(&f.p, p);
        CHECK(rt_plan_write(p, &b, &nb, &err));
        CHECK(nb == na && b && memcmp(a, b, na) == 0);
    }
    CHECK_STR((const char *)a, RT_PLAN_MAGIC "\x17"); /* magic, then version 23 LE */
    CHECK_INT(rd(a + 12, 4), f.p.nstages + 4);
    CHECK_INT(rd(a + 16, 8), na);
    rt_plan_free(p);
    free(a);
    free(b);
}

/* A message's place: the model's file, line and column of an instruction
 * that has one, nothing for one without, or in a plan without a file. */
static void test_instr_where(void)
{
    fixture f;
    make_loss(&f);
    char buf[64];
    const rt_program *g = &f.stage[0];
    CHECK_STR(rt_instr_where(&f.p, &g->instr[4], buf, sizeof buf), "models/lm.sh:7:5: ");
    CHECK_STR(rt_instr_where(&f.p, &g->instr[g->ninstr - 1], buf, sizeof buf), "");
    f.p.source = (char *)"";
    CHECK_STR(rt_instr_where(&f.p, &g->instr[4], buf, sizeof buf), "");
    f.p.source = NULL;
    CHECK_STR(rt_instr_where(&f.p, &g->instr[4], buf, sizeof buf), "");
}

static void test_roundtrip(void)
{
    roundtrip(make_pipeline, "pipeline.plan");
    roundtrip(make_loss, "loss.plan");
    roundtrip(make_train, "train.plan");
    roundtrip(make_empty, "empty.plan");
    roundtrip(make_stages, "stages.plan");
    test_instr_where();
    rt_plan_free(NULL);
}

/* The written plan of make_pipeline (6 sections: MESH IOTB PROG PROG KERN
 * REPT); free() it. */
static uint8_t *written(size_t *n)
{
    fixture f;
    su_status err;
    uint8_t *b;
    make_pipeline(&f);
    if (!rt_plan_write(&f.p, &b, n, &err)) {
        fprintf(stderr, "cannot write the fixture: %s\n", err.msg);
        exit(1);
    }
    return b;
}

/* Every proper prefix of the file fails as truncated. */
static void test_truncation(void)
{
    size_t n;
    uint8_t *b = written(&n);
    char err[ERRLEN];
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        read_msg(b, k, err);
        if (!strstr(err, "truncated") && bad++ < 3)
            fprintf(stderr, "truncated to %zu of %zu bytes: \"%s\"\n", k, n, err);
    }
    CHECK_INT(bad, 0);
    read_msg(b, 100, err);
    char want[128];
    snprintf(want, sizeof want, "model.plan: truncated file: the header says %zu bytes, the file "
             "has 100", n);
    CHECK_STR(err, want);
    free(b);
}

/* A flipped bit anywhere fails; inside a payload the message names the
 * section. */
static void test_bitflips(void)
{
    static const char *const names[] = {"MESH", "IOTB", "PROG (stage 0)", "PROG (stage 1)",
                                        "KERN", "REPT"};
    size_t n;
    uint8_t *b = written(&n);
    char err[ERRLEN], want[96];
    for (int i = 0; i < 6; i++) {
        size_t at = section_at(b, n, i), len = (size_t)rd(b + at + 8, 8);
        size_t pos = at + 20 + len / 2;
        b[pos] ^= 0x10;
        snprintf(want, sizeof want, "checksum mismatch in section %s: the file is corrupt",
                 names[i]);
        EXPECT_READ_ERROR(b, n, want);
        b[pos] ^= 0x10;
        b[at + 17] ^= 1; /* the stored CRC itself */
        EXPECT_READ_ERROR(b, n, want);
        b[at + 17] ^= 1;
    }
    b[9] ^= 4; /* the version, under the header's CRC */
    EXPECT_READ_ERROR(b, n, "checksum mismatch in the header");
    b[9] ^= 4;
    int accepted = 0;
    for (size_t pos = 0; pos < n; pos++) {
        b[pos] ^= (uint8_t)(1u << pos % 8);
        accepted += read_msg(b, n, err)[0] == 0;
        b[pos] ^= (uint8_t)(1u << pos % 8);
    }
    CHECK_INT(accepted, 0);
    CHECK_STR(read_msg(b, n, err), "");
    free(b);
}

static void test_header(void)
{
    size_t n;
    uint8_t *b = written(&n);
    uint8_t *c = malloc(n + 5);
    char err[ERRLEN];
    memcpy(c, b, n);
    c[0] = 'X';
    EXPECT_READ_ERROR(c, n, "not a shardc plan (bad magic)");
    EXPECT_READ_ERROR((const uint8_t *)"PK\3\4", 4, "not a shardc plan (bad magic)");
    CHECK_STR(read_msg((const uint8_t *)"SHRD", 4, err),
              "model.plan: truncated file: 4 bytes, shorter than the 28-byte header");

    memcpy(c, b, n);
    wr(c + 8, 0, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "plan format version 0 is not valid");
    wr(c + 8, RT_PLAN_VERSION + 1, 4);
    refix(c, n);
    CHECK_STR(read_msg(c, n, err), "model.plan: plan format version 24 is newer than this "
              "shardrun reads (23): rebuild shardrun");
    wr(c + 8, 2, 4);
    refix(c, n);
    CHECK_STR(read_msg(c, n, err), "model.plan: the plan was written by an older shardc (plan "
              "format 2; this shardrun reads 23): compile the model again");

    memcpy(c, b, n); /* the total size, with a good header CRC */
    wr(c + 16, n - 1, 8);
    wr(c + 24, su_crc32(0, c, 24), 4);
    EXPECT_READ_ERROR(c, n, "file size mismatch: the header says");
    wr(c + 16, n + 1, 8);
    wr(c + 24, su_crc32(0, c, 24), 4);
    EXPECT_READ_ERROR(c, n, "truncated file: the header says");

    memcpy(c, b, n); /* trailing garbage: as appended, then with the header fixed */
    memcpy(c + n, "junk!", 5);
    EXPECT_READ_ERROR(c, n + 5, "file size mismatch");
    refix(c, n + 5);
    EXPECT_READ_ERROR(c, n + 5, "5 trailing bytes after the last section (REPT)");

    memcpy(c, b, n);
    wr(c + 12, 7, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "the header lists 7 sections, but a plan of 2 stages has 6");
    wr(c + 12, 3, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "the header lists 3 sections; a plan has at least 5");
    free(c);
    free(b);
}

static void test_sections(void)
{
    size_t n;
    uint8_t *b = written(&n);
    uint8_t *c = malloc(n + 1);
    size_t mesh = section_at(b, n, 0), io = section_at(b, n, 1), kern = section_at(b, n, 4);

    memcpy(c, b, n); /* a section out of order */
    memcpy(c + io, "PROG", 4);
    refix(c, n);
    char want[96];
    snprintf(want, sizeof want, "expected section IOTB at offset %zu, found 'PROG'", io);
    EXPECT_READ_ERROR(c, n, want);
    c[io] = 1;
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "expected section IOTB at offset");

    memcpy(c, b, n);
    c[io + 5] = 1;
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section IOTB: the reserved field is 0x00000100, not 0");

    /* one byte more in MESH's payload: its length grows, the rest moves */
    size_t mend = io;
    memcpy(c, b, mend);
    c[mend] = 0;
    memcpy(c + mend + 1, b + mend, n - mend);
    wr(c + mesh + 8, rd(b + mesh + 8, 8) + 1, 8);
    refix(c, n + 1);
    EXPECT_READ_ERROR(c, n + 1, "section MESH has 1 trailing byte after its contents");

    memcpy(c, b, n); /* MESH's length beyond the file */
    wr(c + mesh + 8, n, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "truncated section MESH: its payload of");

    memcpy(c, b, n); /* counts the payload cannot hold: no allocation for them */
    wr(c + io + 20, 0x7fffffff, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section IOTB: the entry count is 2147483647, but the");
    wr(c + io + 20, 0xffffffff, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "the entry count is 4294967295");
    size_t prog = section_at(b, n, 2);
    memcpy(c, b, n);
    wr(c + prog + 20, 1000000, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section PROG (stage 0): the buffer count is 1000000");

    memcpy(c, b, n); /* the first axis name's length past the payload, then a NUL in it */
    wr(c + mesh + 24, 1000, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section MESH: axis 0, name has length 1000, beyond the");
    memcpy(c, b, n);
    c[mesh + 29] = 0;
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section MESH: axis 0, name contains a NUL byte");
    memcpy(c, b, n); /* 9 mesh axes */
    wr(c + mesh + 20, 9, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "the mesh has 9 axes; at most 8");

    memcpy(c, b, n);
    wr(c + kern + 20, 2, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section KERN: the module count is 2, but the 8 bytes left hold at "
                      "most 0");

    memcpy(c, b, n); /* a NUL in the report */
    c[n - 3] = 0;
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "section REPT: the report contains a NUL byte");

    /* the validator runs on what was read: tp of size 3 splits nothing */
    memcpy(c, b, n);
    size_t tp_size = mesh + 20 + 4 + (4 + 2) + 8 + (4 + 2);
    CHECK_INT(rd(c + tp_size, 8), 2);
    wr(c + tp_size, 3, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "model.plan: I/O entry 1 (embed): dimension 1 of size 32 does not "
                      "divide by 3");
    free(c);
    free(b);
}

static void test_validate(void)
{
    fixture f;
    make_pipeline(&f);
    su_status err;
    CHECK(rt_plan_validate(&f.p, &err));
    rt_instr *mm = &f.instr[1][2];
    CHECK_INT(mm->op, RT_OP_MATMUL);

    mm->in[1] = 99;
    EXPECT_INVALID(&f.p, "stage 1, instruction 2 (matmul): buffer 99 (operand 2) is out of "
                   "range (the program has 15 buffers)");
    mm->in[1] = 1;
    mm->in_t[1] = T(RT_F32, 8, 8);
    EXPECT_INVALID(&f.p, "stage 1, instruction 2 (matmul): contracts dimension of size 16 with "
                   "one of size 8: f32[8, 16, 16] @ f32[8, 8]");
    mm->in_t[1] = T(RT_F32, 16, 8);
    mm->out_t = T(RT_F32, 8, 16, 4);
    EXPECT_INVALID(&f.p, "the result is f32[8, 16, 4], but the operands give f32[8, 16, 8]");
    mm->out_t = T(RT_F32, 8, 16, 8);
    f.bufs[0][2] = 8191;
    EXPECT_INVALID(&f.p, "stage 0, instruction 2 (embedding): the result f32[8, 16, 16] (8192 "
                   "bytes) does not fit buffer 2 (8191 bytes)");
    f.bufs[0][2] = 8192;
    mm->op = RT_NOPS + 3;
    char want[80];
    snprintf(want, sizeof want, "stage 1, instruction 2 (?): unknown opcode %d", RT_NOPS + 3);
    EXPECT_INVALID(&f.p, want);
    mm->op = RT_OP_EXP;
    EXPECT_INVALID(&f.p, "has 2 operands; exp takes 1");
    mm->op = RT_OP_MATMUL;
    CHECK(rt_plan_validate(&f.p, &err));
    mm->line = -1;
    EXPECT_INVALID(&f.p, "stage 1, instruction 2: source place -1:0 is not a line and column");
    mm->line = 0;
    mm->col = 7;
    EXPECT_INVALID(&f.p, "stage 1, instruction 2: source place 0:7 is not a line and column");
    mm->col = 0;
    CHECK(rt_plan_validate(&f.p, &err));

    f.io[3].name = (char *)"ln.g";
    EXPECT_INVALID(&f.p, "duplicate I/O name 'ln.g' on stage 0 (entries 2 and 3)");
    f.io[3].name = (char *)"w"; /* a name on two stages: one tensor, so alike */
    EXPECT_INVALID(&f.p, "I/O entries 3 and 6 (stages 0 and 1) are both called 'w' but differ "
                   "in type: f32[32] and f32[32, 8]");
    f.io[3].name = (char *)"";
    EXPECT_INVALID(&f.p, "I/O entry 3 has no name");
    f.io[3].name = (char *)"ln.b";
    /* outputs have a namespace of their own (LANGUAGE.md §12): an output
     * may bear a param's or an input's name, not another output's */
    f.io[4].name = (char *)"ln.g";
    f.io[7].name = (char *)"x";
    CHECK(rt_plan_validate(&f.p, &err));
    f.io[7].name = (char *)"w";
    CHECK(rt_plan_validate(&f.p, &err));
    f.io[7].name = (char *)"ln.g";
    EXPECT_INVALID(&f.p, "I/O entries 4 and 7 are both called 'ln.g', on stages 0 and 1; an "
                   "output belongs to one stage");
    f.io[4].name = (char *)"h";
    f.io[7].name = (char *)"y";

    f.io[6].type.dim[0] = 33;
    EXPECT_INVALID(&f.p, "I/O entry 6 (w): dimension 0 of size 33 does not divide by 2");
    f.io[6].type.dim[0] = 64; /* divides, but the program reads another shard */
    EXPECT_INVALID(&f.p, "stage 1, instruction 1 (param): the result is f32[16, 8], but the "
                   "local shard of I/O entry 6 is f32[32, 8]");
    f.io[6].type.dim[0] = 32;
    f.io[6].sh.naxes[1] = 1;
    f.io[6].sh.axes[1][0] = 1;
    EXPECT_INVALID(&f.p, "I/O entry 6 (w): the sharding uses mesh axis 1 twice");
    f.io[6].sh.axes[1][0] = 2;
    EXPECT_INVALID(&f.p, "mesh axis 2 is out of range (the mesh has 2 axes)");
    f.io[6].sh.naxes[1] = 0;
    f.io[6].sh.axes[1][0] = 0;
    f.io[7].sh.partial = 1;
    EXPECT_INVALID(&f.p, "I/O entry 7 (y): an output cannot be partial");
    f.io[7].sh.partial = 0;
    f.io[7].buffer = 3;
    EXPECT_INVALID(&f.p, "I/O entry 7 (y): the local shard bf16[16, 2] (64 bytes) does not fit "
                   "buffer 3 (8 bytes)");
    f.io[7].buffer = 15;
    EXPECT_INVALID(&f.p, "buffer 15 (the local shard) is out of range");
    f.io[7].buffer = 11;
    f.io[6].init_b = -1;
    EXPECT_INVALID(&f.p, "uniform initializer needs finite a < b, got [-0.5, -1)");
    f.io[6].init_b = 0.5;
    f.io[1].init_a = NAN;
    EXPECT_INVALID(&f.p, "normal initializer needs a finite std >= 0");
    f.io[1].init_a = 0.02;
    f.io[0].init = RT_INIT_UNIFORM; /* an input's, for when it is absent: ids in [0, 64) */
    f.io[0].init_b = 64;
    CHECK(rt_plan_validate(&f.p, &err));
    f.io[0].init_b = 64.5; /* integers: whole bounds, or the runtime would floor them */
    EXPECT_INVALID(&f.p, "I/O entry 0 (tokens): uniform initializer of an integer tensor needs "
                   "whole bounds within i32, got [0, 64.5)");
    f.io[0].init_b = 0;
    EXPECT_INVALID(&f.p, "I/O entry 0 (tokens): uniform initializer needs finite a < b");
    f.io[0].init = RT_INIT_NORMAL; /* no integer meaning: it made zeros */
    f.io[0].init_a = 1;
    EXPECT_INVALID(&f.p, "I/O entry 0 (tokens): normal initializer needs a floating-point dtype");
    f.io[0].init_a = 0;
    f.io[0].init = RT_INIT_NONE;
    f.io[4].init = RT_INIT_ONES;
    EXPECT_INVALID(&f.p, "I/O entry 4 (h): an output has no initializer");
    f.io[4].init = RT_INIT_NONE;
    f.io[5].stage = 0;
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (input): I/O entry 5 belongs to stage 0");
    f.io[5].stage = 2;
    EXPECT_INVALID(&f.p, "I/O entry 5 (x): stage 2 is out of range (the plan has 2)");
    f.io[5].stage = 1;
    f.instr[1][0].io = 6;
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (input): I/O entry 6 is not an input");
    f.instr[1][0].io = 5;

    f.p.nstages = 1;
    EXPECT_INVALID(&f.p, "the plan has 1 stages, but the pipeline axis pp has size 2");
    f.p.nstages = 2;
    f.p.axis_name[1] = (char *)"pp";
    EXPECT_INVALID(&f.p, "mesh axes 0 and 1 are both named 'pp'");
    f.p.axis_name[1] = (char *)"tp";
    f.p.axis_size[0] = 1 << 16;
    f.p.axis_size[1] = 1 << 16;
    EXPECT_INVALID(&f.p, "the mesh has more than 2^31 ranks");
    f.p.axis_size[0] = f.p.axis_size[1] = 2;
    f.p.stage_axis = 2;
    EXPECT_INVALID(&f.p, "the pipeline axis 2 is not an axis of the mesh");
    f.p.stage_axis = 0;
    f.p.report_len = 3;
    f.p.report = (char *)"a\0b";
    EXPECT_INVALID(&f.p, "the report contains a NUL byte");
    f.p.report = (char *)"abc";
    CHECK(rt_plan_validate(&f.p, &err));

    /* the writer refuses what the reader would */
    uint8_t *out = (uint8_t *)&f;
    size_t len = 1;
    f.instr[0][3].dim = 3;
    CHECK(!rt_plan_write(&f.p, &out, &len, &err));
    CHECK(out == NULL && len == 0);
    CHECK_STR(err.msg, "cannot write an invalid plan: stage 0, instruction 3 (all_gather): dimension 3 "
              "is out of range for f32[8, 16, 16]");
}

/* The fields of version 2 on make_train: updates, the buffers params and
 * states live in, the loss, state sources, hyperparameters. */
static void test_validate_train(void)
{
    fixture f;
    make_train(&f);
    su_status err;
    CHECK(rt_plan_validate(&f.p, &err));

    f.io[2].update = 34;
    EXPECT_INVALID(&f.p, "I/O entry 2 (w): buffer 34 (the update) is out of range (the program "
                   "has 34 buffers)");
    f.io[2].update = 5;
    EXPECT_INVALID(&f.p, "I/O entry 2 (w): the update f32[4, 6] (96 bytes) does not fit buffer 5 "
                   "(4 bytes)");
    f.io[2].update = -2;
    EXPECT_INVALID(&f.p, "buffer -2 (the update) is out of range");
    f.io[2].update = 15;
    f.io[0].update = 9;
    EXPECT_INVALID(&f.p, "I/O entry 0 (x): an input has no update (buffer 9), only params and "
                   "states do");
    f.io[0].update = -1;
    f.io[6].update = 7;
    EXPECT_INVALID(&f.p, "I/O entry 6 (loss): an output has no update (buffer 7)");
    f.io[6].update = -1;

    f.io[2].buffer = 6; /* not where its param instruction puts it */
    EXPECT_INVALID(&f.p, "I/O entry 2 (w): buffer 6 is not buffer 2, which its source "
                   "instruction fills");
    f.io[2].buffer = 2;
    f.instr[0][5].op = RT_OP_CONST; /* the step count's source gone */
    EXPECT_INVALID(&f.p, "I/O entry 5 (step): no instruction of stage 0 fills it");
    f.instr[0][5].op = RT_OP_PARAM;
    EXPECT_INVALID(&f.p, "stage 0, instruction 5 (param): I/O entry 5 is not a parameter");
    f.instr[0][5].op = RT_OP_STATE;
    f.instr[0][5].io = 2;
    EXPECT_INVALID(&f.p, "stage 0, instruction 5 (state): I/O entry 2 is not a state");
    f.instr[0][5].io = 5;
    f.io[5].kind = 4;
    EXPECT_INVALID(&f.p, "I/O entry 5 (step): unknown kind (4)");
    f.io[5].kind = RT_IO_STATE;
    f.io[5].init = RT_INIT_UNIFORM;
    EXPECT_INVALID(&f.p, "I/O entry 5 (step): uniform initializer needs finite a < b");
    f.io[5].init = RT_INIT_ZEROS;

    f.p.loss = 7;
    EXPECT_INVALID(&f.p, "the loss is I/O entry 7 (emb), which is not an output");
    f.p.loss = 9;
    EXPECT_INVALID(&f.p, "the loss is I/O entry 9, out of range (the plan has 9)");
    f.p.loss = -2;
    EXPECT_INVALID(&f.p, "the loss is I/O entry -2, out of range");
    f.p.loss = 6;
    f.io[6].type.dtype = RT_I32;
    EXPECT_INVALID(&f.p, "the loss, output 'loss', is i32[]; a floating-point scalar is needed");
    f.io[6].type = T(RT_F32, 1);
    EXPECT_INVALID(&f.p, "the loss, output 'loss', is f32[1]; a floating-point scalar is needed");
    f.io[6].type = S(RT_F32);
    f.p.loss = -1; /* an inference plan may still have updates: the session applies them */
    CHECK(rt_plan_validate(&f.p, &err));
    f.p.loss = 6;

    rt_instr *adamw = &f.instr[0][17];
    CHECK_INT(adamw->op, RT_OP_ADAMW);
    adamw->lr = NAN;
    EXPECT_INVALID(&f.p, "stage 0, instruction 17 (adamw): lr nan is not finite");
    adamw->lr = 1e-3;
    adamw->wd = -INFINITY;
    EXPECT_INVALID(&f.p, "instruction 17 (adamw): wd -inf is not finite");
    adamw->wd = 0.01;
    adamw->eps = -1;
    EXPECT_INVALID(&f.p, "instruction 17 (adamw): needs a finite eps >= 0, got -1");
    adamw->eps = 1e-8;
    f.instr[0][0].beta2 = INFINITY; /* on any instruction, though only some read them */
    EXPECT_INVALID(&f.p, "instruction 0 (input): beta2 inf is not finite");
    f.instr[0][0].beta2 = 0;
    CHECK(rt_plan_validate(&f.p, &err));
}

/* The new fields in the file: the loss at the end of IOTB, the last
 * instruction's offset (and place) at the end of PROG, the version. */
static void test_train_file(void)
{
    fixture f;
    su_status err;
    uint8_t *b;
    size_t n;
    make_train(&f);
    CHECK(rt_plan_write(&f.p, &b, &n, &err));
    uint8_t *c = malloc(n);
    size_t prog = section_at(b, n, 2), kern = section_at(b, n, 3);
    CHECK_INT(rd(b + prog - 4, 4), 6); /* IOTB ends with the loss */
    memcpy(c, b, n);
    wr(c + prog - 4, 1, 4);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "model.plan: the loss is I/O entry 1 (labels), which is not an "
                      "output");
    /* PROG ends with the last instruction's offset (an extract's), line and
     * column (none here), then a body count of 0 (no loop form) */
    CHECK_INT(rd(b + kern - 20, 8), 12);
    CHECK_INT(rd(b + kern - 12, 8), 0);
    CHECK_INT(rd(b + kern - 4, 4), 0);
    memcpy(c, b, n);
    wr(c + kern - 20, 13, 8);
    refix(c, n);
    EXPECT_READ_ERROR(c, n, "stage 0, instruction 34 (extract): the result f32[4, 6] at column "
                      "13 does not fit the bucket f32[2, 24]");

    /* IOTB four bytes shorter: the loss is missing */
    size_t io = section_at(b, n, 1);
    memcpy(c, b, prog - 4);
    memcpy(c + prog - 4, b + prog, n - prog);
    wr(c + io + 8, rd(b + io + 8, 8) - 4, 8);
    refix(c, n - 4);
    EXPECT_READ_ERROR(c, n - 4, "section IOTB ends early: the loss needs 4 bytes, 0 are left");
    free(c);
    free(b);
}

/* rt_instr_check alone on one instruction against mesh {pp: 2, tp: 2}. */
static const char *instr_msg(const rt_plan *p, const rt_instr *in, char *err)
{
    su_status st = {SU_OK, ""};
    err[0] = 0;
    if (rt_instr_check(p, in, &st))
        return "";
    snprintf(err, ERRLEN, "%.*s", ERRLEN - 1, st.msg[0] ? st.msg : "(failed without a message)");
    return err;
}

static rt_instr mk(int op, rt_type out_t, int nin, ...)
{
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.nin = (uint8_t)nin;
    in.out_t = out_t;
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++)
        in.in_t[i] = va_arg(ap, rt_type);
    va_end(ap);
    return in;
}

/* The opcodes of version 2, as ir/infer.c has the IR's. */
static void test_rules_train(const rt_plan *p)
{
    char err[ERRLEN];
    enum { F = RT_F32, I = RT_I32, H = RT_BF16 };
    rt_instr in;

    in = mk(RT_OP_GT, T(F, 4, 3), 2, T(F, 4, 1), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EQ, T(I, 4), 2, T(I, 4), S(I));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EQ, T(I, 4), 2, T(I, 4), T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "mixed dtypes: operand 1 is i32, operand 2 is f32");
    in = mk(RT_OP_GELU_GRAD, T(H, 2, 5), 2, T(H, 2, 5), T(H, 5));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_SILU_GRAD, T(I, 5), 2, T(I, 5), T(I, 5));
    CHECK_STR(instr_msg(p, &in, err), "x must be floating-point, got i32[5]");
    in = mk(RT_OP_SILU_GRAD, T(F, 5), 2, T(F, 5), T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "operands do not broadcast: f32[5] and f32[4]");

    in = mk(RT_OP_EXPAND, T(F, 2, 3, 4), 1, T(F, 3, 1));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EXPAND, T(I, 2), 1, S(I));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EXPAND, T(F, 2, 3, 4), 1, T(F, 2, 4));
    CHECK_STR(instr_msg(p, &in, err), "cannot expand f32[2, 4] to the shape of f32[2, 3, 4]");
    in = mk(RT_OP_EXPAND, T(F, 4), 1, T(F, 1, 4));
    CHECK_STR(instr_msg(p, &in, err), "cannot expand f32[1, 4] to the shape of f32[4]");
    in = mk(RT_OP_EXPAND, T(I, 4), 1, T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "the result is i32[4], but the operands give f32[4]");

    in = mk(RT_OP_ATTN_PROBS, T(F, 2, 5, 6), 2, T(F, 2, 5, 4), T(F, 2, 6, 4));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_PROBS, T(F, 2, 5, 6), 2, T(F, 2, 5, 4), T(F, 2, 6, 3));
    CHECK_STR(instr_msg(p, &in, err), "needs q and k with the same leading and last dimensions, "
              "got f32[2, 5, 4] and f32[2, 6, 3]");
    in = mk(RT_OP_ATTN_PROBS, T(F, 5), 2, T(F, 5), T(F, 5));
    CHECK_STR(instr_msg(p, &in, err), "needs q of rank 2 or more, got f32[5]");
    in = mk(RT_OP_ATTN_PROBS, T(I, 5, 5), 2, T(I, 5, 4), T(I, 5, 4));
    CHECK_STR(instr_msg(p, &in, err), "q must be floating-point, got i32[5, 4]");

    in = mk(RT_OP_EMBEDDING_GRAD, T(F, 10, 8), 2, T(I, 2, 3), T(F, 2, 3, 8));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EMBEDDING_GRAD, T(F, 10, 8), 2, T(F, 2, 3), T(F, 2, 3, 8));
    CHECK_STR(instr_msg(p, &in, err), "the ids must be i32, got f32[2, 3]");
    in = mk(RT_OP_EMBEDDING_GRAD, T(F, 10, 8), 2, T(I, 2, 3), T(F, 3, 8));
    CHECK_STR(instr_msg(p, &in, err), "needs dy of shape [ids..., D], got ids i32[2, 3] and dy "
              "f32[3, 8]");
    in = mk(RT_OP_EMBEDDING_GRAD, T(F, 80), 2, T(I, 3), T(F, 3, 8));
    CHECK_STR(instr_msg(p, &in, err), "needs a result of shape [V, 8], got f32[80]");
    in = mk(RT_OP_EMBEDDING_GRAD, T(F, 10, 4), 2, T(I, 3), T(F, 3, 8));
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[10, 4], but the operands give "
              "f32[10, 8]");

    in = mk(RT_OP_XENT_GRAD, T(F, 4, 10), 2, T(F, 4, 10), T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_XENT_GRAD, S(F), 2, T(F, 4, 10), T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[], but the operands give f32[4, 10]");
    in = mk(RT_OP_XENT_GRAD, T(F, 4, 10), 2, T(F, 4, 10), T(I, 5));
    CHECK(strstr(instr_msg(p, &in, err), "the labels i32[5] do not match"));

    in = mk(RT_OP_MOMENTUM, T(F, 3), 3, T(F, 3), T(F, 3), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_MOMENTUM, T(F, 3), 3, T(F, 3), T(F, 3), S(F));
    CHECK_STR(instr_msg(p, &in, err), "needs operands of one type, got f32[3] and f32[]");
    in = mk(RT_OP_SGD, T(H, 3), 2, T(H, 3), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "needs operands of one type, got bf16[3] and f32[3]");
    in = mk(RT_OP_ADAM_M, T(I, 3), 2, T(I, 3), T(I, 3));
    CHECK_STR(instr_msg(p, &in, err), "the operand must be floating-point, got i32[3]");
    in = mk(RT_OP_ADAM_V, T(F, 3), 2, T(F, 3), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ADAMW, T(H, 2, 2), 4, T(H, 2, 2), T(H, 2, 2), T(H, 2, 2), S(F));
    CHECK_STR(instr_msg(p, &in, err), "");
    in.in_t[3] = T(F, 1);
    CHECK_STR(instr_msg(p, &in, err), "needs a floating-point scalar step count, got f32[1]");
    in.in_t[3] = S(I);
    CHECK_STR(instr_msg(p, &in, err), "needs a floating-point scalar step count, got i32[]");
    in.in_t[3] = S(F);
    in.eps = NAN;
    CHECK_STR(instr_msg(p, &in, err), "needs a finite eps >= 0, got nan");
    in.eps = 0;
    in.momentum = NAN;
    CHECK_STR(instr_msg(p, &in, err), "momentum nan is not finite");
}

/* rt_bucket_view, which the memory rule asks before the bucket rule
 * checks the offset: an offset outside a one-row bucket is no view, and
 * is never multiplied into bytes (an offset of 2^62 overflowed int64: the
 * fuzz finding of 903e463, whose seed F-bucket-offset-overflow.plan the
 * reader now refuses at its header, format 2, before any instruction). */
static void test_bucket_view(void)
{
    rt_instr in = mk(RT_OP_EXTRACT, T(RT_F32, 4), 1, T(RT_F32, 1, 10));
    in.offset = 6;
    CHECK(rt_bucket_view(&in, 0, 1024, 1024 + 6 * 4));
    CHECK(!rt_bucket_view(&in, 0, 1024, 1024));
    CHECK(!rt_bucket_view(&in, 1, 1024, 1024 + 6 * 4));
    in.offset = (int64_t)1 << 62; /* times 4 bytes overflows */
    CHECK(!rt_bucket_view(&in, 0, 0, 0));
    in.offset = INT64_MAX;
    CHECK(!rt_bucket_view(&in, 0, 0, 0));
    in.offset = -1;
    CHECK(!rt_bucket_view(&in, 0, 1024, 1020));
    in.offset = 11; /* past the last column */
    CHECK(!rt_bucket_view(&in, 0, 0, 44));
    rt_instr ins = mk(RT_OP_INSERT, T(RT_F32, 1, 10), 2, T(RT_F32, 1, 10), T(RT_F32, 4));
    ins.offset = 6;
    CHECK(rt_bucket_view(&ins, 1, 1024 + 6 * 4, 1024));
    ins.offset = (int64_t)1 << 62;
    CHECK(!rt_bucket_view(&ins, 1, 0, 0));
    rt_instr two = mk(RT_OP_EXTRACT, T(RT_F32, 4), 1, T(RT_F32, 2, 10)); /* two rows: no view */
    CHECK(!rt_bucket_view(&two, 0, 0, 0));
}

/* insert and extract: a [rows, columns] bucket of the value's dtype, the
 * value's blocks inside its columns. */
static void test_rules_bucket(const rt_plan *p)
{
    enum { F = RT_F32, H = RT_BF16 };
    char err[ERRLEN];
    rt_instr in = mk(RT_OP_INSERT, T(F, 2, 10), 2, T(F, 2, 10), T(F, 3, 4));
    in.offset = 4;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.offset = 5;
    CHECK_STR(instr_msg(p, &in, err), "the value f32[3, 4] at column 5 does not fit the bucket "
                                      "f32[2, 10]");
    in.offset = -1;
    CHECK_STR(instr_msg(p, &in, err), "the value f32[3, 4] at column -1 does not fit the bucket "
                                      "f32[2, 10]");
    in.offset = 0;
    in.in_t[1] = T(F, 3, 3);
    CHECK_STR(instr_msg(p, &in, err), "the value f32[3, 3] does not split into the 2 rows of "
                                      "the bucket");
    in.in_t[1] = T(H, 3, 4);
    CHECK_STR(instr_msg(p, &in, err), "the value bf16[3, 4] and the bucket f32[2, 10] differ in "
                                      "dtype");
    in = mk(RT_OP_INSERT, T(F, 20), 2, T(F, 20), T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "a bucket is [rows, columns], not f32[20]");
    in = mk(RT_OP_INSERT, T(F, 2, 11), 2, T(F, 2, 10), T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[2, 11], but the operands give "
                                      "f32[2, 10]");
    in = mk(RT_OP_EXTRACT, T(H, 6), 1, T(H, 3, 4));
    in.offset = 2;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.offset = 3;
    CHECK_STR(instr_msg(p, &in, err), "the result bf16[6] at column 3 does not fit the bucket "
                                      "bf16[3, 4]");
    in.out_t = T(F, 6);
    in.offset = 0;
    CHECK_STR(instr_msg(p, &in, err), "the result f32[6] and the bucket bf16[3, 4] differ in "
                                      "dtype");
}

static void test_rules(void)
{
    fixture f;
    make_pipeline(&f);
    const rt_plan *p = &f.p;
    char err[ERRLEN];
    enum { F = RT_F32, I = RT_I32 };
    rt_instr in;

    in = mk(RT_OP_ADD, T(F, 4, 2, 3), 2, T(F, 4, 1, 3), T(F, 2, 1));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ADD, T(F, 4), 2, T(F, 3), T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "operands do not broadcast: f32[3] and f32[4]");
    in = mk(RT_OP_MAX, T(F, 4), 2, T(F, 4), T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "mixed dtypes: operand 1 is f32, operand 2 is i32");
    in = mk(RT_OP_POW, T(I, 4), 2, T(I, 4), T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "the base must be floating-point, got i32[4]");
    in = mk(RT_OP_SUB, T(I, 4), 2, T(I, 4), S(I));
    CHECK_STR(instr_msg(p, &in, err), "");

    in = mk(RT_OP_RELU, T(I, 4), 1, T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EXP, T(I, 4), 1, T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "the operand must be floating-point, got i32[4]");
    in = mk(RT_OP_TANH, T(F, 5), 1, T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[5], but the operands give f32[4]");
    in = mk(RT_OP_CAST, T(I, 2, 3), 1, T(F, 2, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_CAST, T(I, 3, 2), 1, T(F, 2, 3));
    CHECK(strstr(instr_msg(p, &in, err), "the result is i32[3, 2]"));
    in = mk(RT_OP_COPY, T(F, 6), 1, T(F, 2, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_COPY, T(F, 5), 1, T(F, 2, 3));
    CHECK(strstr(instr_msg(p, &in, err), "a copy keeps the dtype and the element count"));

    in = mk(RT_OP_MATMUL, T(F, 5), 2, T(F, 3), T(F, 3, 5));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_MATMUL, T(F, 2, 5, 4, 6), 2, T(F, 2, 1, 4, 3), T(F, 5, 3, 6));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_MATMUL, T(F, 4), 2, T(F, 4, 3), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_MATMUL, T(F, 2, 4, 6), 2, T(F, 2, 4, 3), T(F, 3, 3, 6));
    CHECK_STR(instr_msg(p, &in, err), "batch dimensions do not broadcast: f32[2, 4, 3] @ "
              "f32[3, 3, 6]");
    in = mk(RT_OP_MATMUL, T(I, 2, 2), 2, T(I, 2, 2), T(I, 2, 2)); /* the IR allows i32 */
    CHECK_STR(instr_msg(p, &in, err), "");
    /* operands read transposed (dim: RT_TRANS_A | RT_TRANS_B) */
    in = mk(RT_OP_MATMUL, T(F, 2, 4, 6), 2, T(F, 2, 3, 4), T(F, 6, 3));
    in.dim = RT_TRANS_A | RT_TRANS_B;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.dim = RT_TRANS_A;
    CHECK_STR(instr_msg(p, &in, err), "contracts dimension of size 3 with one of size 6: "
              "f32[2, 4, 3] @ f32[6, 3]");
    in.dim = 8;
    CHECK_STR(instr_msg(p, &in, err), "trans 8 is not a, b or ab (with parts: 4 more)");
    /* f32 matmuls as bf16 parts (format 16): split3 f32 -> bf16, its dim 3
     * times as long; a matmul of parts reads 3 K of bf16, makes f32 */
    in = mk(RT_OP_SPLIT3, T(RT_BF16, 2, 9, 4), 1, T(F, 2, 3, 4));
    in.dim = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.dim2 = 1; /* reversed */
    CHECK_STR(instr_msg(p, &in, err), "");
    in.dim2 = 2;
    CHECK_STR(instr_msg(p, &in, err), "splits f32[2, 3, 4] along dim 1 (order 2): it splits f32 "
              "along one of its dims, in order 0 or 1");
    in.dim2 = 0;
    in.dim = 3;
    CHECK(strstr(instr_msg(p, &in, err), "along dim 3 (order 0)"));
    in = mk(RT_OP_SPLIT3, T(RT_BF16, 2, 3, 12), 1, T(F, 2, 3, 4));
    in.dim = 1;
    CHECK_STR(instr_msg(p, &in, err), "the result is bf16[2, 3, 12], but the operands give "
              "bf16[2, 9, 4]");
    in = mk(RT_OP_MATMUL, T(F, 2, 4, 6), 2, T(RT_BF16, 2, 9, 4), T(RT_BF16, 6, 9));
    in.dim = RT_TRANS_A | RT_TRANS_B | RT_MM_PARTS;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.out_t = T(RT_BF16, 2, 4, 6);
    CHECK_STR(instr_msg(p, &in, err), "the result is bf16[2, 4, 6], but the operands give "
              "f32[2, 4, 6]");
    in = mk(RT_OP_MATMUL, T(F, 2, 4, 6), 2, T(F, 2, 9, 4), T(F, 6, 9));
    in.dim = RT_TRANS_A | RT_TRANS_B | RT_MM_PARTS;
    CHECK_STR(instr_msg(p, &in, err), "of parts reads bf16 parts, 3 of them along the "
              "contracted dimension, got f32[2, 4, 9] @ f32[9, 6]");
    in = mk(RT_OP_MATMUL, T(F, 4), 2, T(F, 3, 4), T(F, 3));
    in.dim = RT_TRANS_A | RT_TRANS_B;
    CHECK_STR(instr_msg(p, &in, err), "reads operand 2 transposed, which needs a float matrix, "
              "got f32[3]");
    in = mk(RT_OP_MATMUL, T(I, 2, 2), 2, T(I, 2, 2), T(I, 2, 2));
    in.dim = RT_TRANS_A;
    CHECK(strstr(instr_msg(p, &in, err), "needs a float matrix") != NULL);
    in = mk(RT_OP_MATMUL, T(F, 2, 2), 2, T(I, 2, 2), T(F, 2, 2));
    CHECK(strstr(instr_msg(p, &in, err), "i32") != NULL);
    in = mk(RT_OP_MATMUL, S(F), 2, S(F), T(F, 2));
    CHECK(strstr(instr_msg(p, &in, err), "needs operands of rank 1 or more"));

    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 3, T(F, 2, 5, 4), T(F, 2, 6, 4), T(F, 2, 6, 7));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 3, T(F, 2, 5, 4), T(F, 2, 6, 4), T(F, 2, 5, 7));
    CHECK(strstr(instr_msg(p, &in, err), "needs k and v with the same sequence length"));
    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 3, T(F, 2, 5, 4), T(F, 2, 6, 3), T(F, 2, 6, 7));
    CHECK(strstr(instr_msg(p, &in, err), "needs q and k with the same last dimension"));
    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 3, T(F, 2, 5, 4), T(F, 3, 6, 4), T(F, 2, 6, 7));
    CHECK(strstr(instr_msg(p, &in, err), "the same leading dimensions"));
    /* grouped-query attention (format 21): k and v with 2 heads for q's 4
     * (dim -3; -2 with the heads inner), attn_dk's and attn_dv's results
     * with k's heads; v's heads must be k's, and divide q's */
    in = mk(RT_OP_ATTENTION, T(F, 3, 4, 5, 7), 3, T(F, 3, 4, 5, 8), T(F, 3, 2, 6, 8),
            T(F, 3, 2, 6, 7));
    CHECK_STR(instr_msg(p, &in, err), "");
    CHECK_INT(rt_attn_group(&in), 2);
    in.in_t[2] = T(F, 3, 4, 6, 7);
    CHECK(strstr(instr_msg(p, &in, err), "the same leading dimensions"));
    in = mk(RT_OP_ATTENTION, T(F, 3, 4, 5, 7), 3, T(F, 3, 4, 5, 8), T(F, 3, 3, 6, 8),
            T(F, 3, 3, 6, 7));
    CHECK(strstr(instr_msg(p, &in, err), "the same leading dimensions"));
    in = mk(RT_OP_ATTENTION, T(F, 3, 5, 4, 7), 3, T(F, 3, 5, 4, 8), T(F, 3, 6, 1, 8),
            T(F, 3, 6, 1, 7));
    in.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTENTION); /* heads inner: [.., S, H, d] */
    CHECK_STR(instr_msg(p, &in, err), "");
    CHECK_INT(rt_attn_group(&in), 4);
    in = mk(RT_OP_ATTN_DK, T(F, 3, 2, 6, 8), 5, T(F, 3, 4, 5, 8), T(F, 3, 2, 6, 8),
            T(F, 3, 2, 6, 7), T(F, 3, 4, 5, 7), T(F, 3, 4, 5, 2));
    CHECK_STR(instr_msg(p, &in, err), "");
    in.out_t = T(F, 3, 4, 6, 8);
    CHECK(strstr(instr_msg(p, &in, err), "the result is f32[3, 4, 6, 8]"));
    in = mk(RT_OP_ATTN_DV, T(F, 3, 2, 6, 7), 4, T(F, 3, 4, 5, 8), T(F, 3, 2, 6, 8),
            T(F, 3, 4, 5, 7), T(F, 3, 4, 5, 2));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_LSE, T(F, 3, 4, 5), 2, T(F, 3, 4, 5, 8), T(F, 3, 2, 6, 8));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_PROBS, T(F, 3, 4, 5, 6), 2, T(F, 3, 4, 5, 8), T(F, 3, 2, 6, 8));
    CHECK(strstr(instr_msg(p, &in, err), "the same leading and last dimensions"));
    CHECK_INT(rt_attn_group(&in), 1);
    /* the query positions of a causal attention whose queries are split */
    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 4, T(F, 2, 5, 4), T(F, 2, 6, 4), T(F, 2, 6, 7),
            T(I, 5));
    in.causal = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.causal = 0;
    CHECK_STR(instr_msg(p, &in, err), "takes query positions only when causal");
    in.causal = 1;
    in.in_t[3] = T(I, 6);
    CHECK_STR(instr_msg(p, &in, err), "needs query positions i32[S] for q f32[2, 5, 4], got "
              "i32[6]");
    in.in_t[3] = T(F, 5);
    CHECK(strstr(instr_msg(p, &in, err), "got f32[5]"));
    in = mk(RT_OP_ATTENTION, T(F, 2, 5, 7), 2, T(F, 2, 5, 4), T(F, 2, 6, 4));
    CHECK_STR(instr_msg(p, &in, err), "has 2 operands; attention takes 3 to 4");
    in = mk(RT_OP_ATTN_PROBS, T(F, 5, 6), 3, T(F, 5, 4), T(F, 6, 4), T(I, 5));
    in.causal = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.in_t[2] = T(I, 6);
    CHECK(strstr(instr_msg(p, &in, err), "needs query positions i32[S]"));

    /* attention's backward: q [2, 5, 4], k [2, 6, 4], v [2, 6, 3], dy [2, 5, 3] */
    const rt_type q = T(F, 2, 5, 4), k = T(F, 2, 6, 4), v = T(F, 2, 6, 3), dy = T(F, 2, 5, 3);
    const rt_type st = T(F, 2, 5, 2);
    in = mk(RT_OP_ATTN_STATS, st, 4, q, k, v, dy);
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_STATS, T(RT_BF16, 2, 5, 2), 4, q, k, v, dy);
    CHECK_STR(instr_msg(p, &in, err), "the result is bf16[2, 5, 2], but the operands give "
              "f32[2, 5, 2]");
    in = mk(RT_OP_ATTN_DQ, q, 6, q, k, v, dy, st, T(I, 5));
    in.causal = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.causal = 0;
    CHECK_STR(instr_msg(p, &in, err), "takes query positions only when causal");
    in = mk(RT_OP_ATTN_DK, k, 5, q, k, v, dy, st);
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_DK, k, 5, q, k, v, dy, T(F, 2, 5, 3));
    CHECK_STR(instr_msg(p, &in, err), "needs the statistics f32[..., S, 2] for q f32[2, 5, 4], "
              "got f32[2, 5, 3]");
    in = mk(RT_OP_ATTN_DV, v, 4, q, k, dy, st);
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_DV, v, 4, q, k, T(F, 2, 4, 3), st);
    CHECK_STR(instr_msg(p, &in, err), "needs q [..., S, d], k [..., T, d], v [..., T, dv] and "
              "dy [..., S, dv], got q f32[2, 5, 4] and k f32[2, 6, 4]");
    in = mk(RT_OP_ATTN_DQ, q, 5, q, k, T(RT_BF16, 2, 6, 3), dy, st);
    CHECK(strstr(instr_msg(p, &in, err), "mixed dtypes"));
    in = mk(RT_OP_ATTN_DV, v, 3, q, k, dy);
    CHECK_STR(instr_msg(p, &in, err), "has 3 operands; attn_dv takes 4 to 5");
    /* the statistics from the forward (format 15): attn_lse (q, k[, pos])
     * f32 [2, 5], attn_delta (y, dy, lse) f32 [2, 5, 2] */
    const rt_type lse = T(F, 2, 5);
    in = mk(RT_OP_ATTN_LSE, lse, 3, q, k, T(I, 5));
    in.causal = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_LSE, T(F, 2, 6), 2, q, k);
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[2, 6], but the operands give f32[2, 5]");
    in = mk(RT_OP_ATTN_DELTA, st, 3, dy, dy, lse);
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTN_DELTA, st, 3, dy, T(F, 2, 5, 4), lse);
    CHECK_STR(instr_msg(p, &in, err), "needs y and dy of one type, got f32[2, 5, 3] and "
              "f32[2, 5, 4]");
    in = mk(RT_OP_ATTN_DELTA, st, 3, dy, dy, T(F, 2, 6));
    CHECK_STR(instr_msg(p, &in, err), "needs lse f32[..., S] for y f32[2, 5, 3], got f32[2, 6]");
    in = mk(RT_OP_ATTN_DELTA, st, 3, T(I, 2, 5, 3), T(I, 2, 5, 3), lse);
    CHECK_STR(instr_msg(p, &in, err), "y must be floating-point, got i32[2, 5, 3]");
    /* heads inner: y and dy stored [2, 5, H = 1, 3] for [2, 1, 5, 3]; lse
     * and the result as computed on */
    in = mk(RT_OP_ATTN_DELTA, T(F, 2, 1, 5, 2), 3, T(F, 2, 5, 1, 3), T(F, 2, 5, 1, 3),
            T(F, 2, 1, 5));
    in.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTN_DELTA);
    CHECK_STR(instr_msg(p, &in, err), "");
    in.keepdims = 0;
    CHECK(strstr(instr_msg(p, &in, err), "needs lse") != NULL);
    /* heads inner (keepdims): [B, S, H, d] stored, st as computed on */
    in = mk(RT_OP_ATTN_DQ, T(F, 5, 2, 4), 5, T(F, 5, 2, 4), T(F, 6, 2, 4), T(F, 6, 2, 3),
            T(F, 5, 2, 3), st);
    in.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTN_DQ);
    CHECK_STR(instr_msg(p, &in, err), "");
    in.keepdims = 0;
    CHECK(strstr(instr_msg(p, &in, err), "needs q [..., S, d]") != NULL);
    in = mk(RT_OP_ATTENTION, T(F, 5, 2, 3), 3, T(F, 5, 2, 4), T(F, 6, 2, 4), T(F, 6, 2, 3));
    in.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTENTION);
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_ATTENTION, T(F, 5, 3), 3, T(F, 5, 4), T(F, 6, 4), T(F, 6, 3));
    in.keepdims = (uint8_t)rt_heads_all(RT_OP_ATTENTION);
    CHECK_STR(instr_msg(p, &in, err), "holds its heads inner, which needs operands of rank 3 or "
              "more, got operand 1 of rank 2");
    /* operand by operand (format 22): v alone and the result, stored [.., T,
     * H, dv] and [.., S, H, dv]; q and k as computed on */
    in = mk(RT_OP_ATTENTION, T(F, 5, 2, 3), 3, T(F, 2, 5, 4), T(F, 2, 6, 4), T(F, 6, 2, 3));
    in.keepdims = 4 | RT_HEADS_RESULT;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.keepdims = 4;
    CHECK(strstr(instr_msg(p, &in, err), "the result is f32[5, 2, 3]"));
    in.keepdims = 3 | RT_HEADS_RESULT; /* q and k are not stored so */
    CHECK(strstr(instr_msg(p, &in, err), "needs q, k and v with the same leading dimensions"));
    in = mk(RT_OP_ATTN_LSE, T(F, 2, 5), 2, T(F, 2, 5, 4), T(F, 2, 6, 4));
    in.keepdims = RT_HEADS_RESULT; /* attn_lse's result keeps its form */
    CHECK_STR(instr_msg(p, &in, err), "holds the heads inner of operands it does not have (mask "
              "0x10; its own: 0x3)");
    in.keepdims = 8;
    CHECK(strstr(instr_msg(p, &in, err), "mask 0x8"));

    /* the checks of ids (labels) of a table (logits) split along them */
    in = mk(RT_OP_CHECK_IDS, T(I, 2, 3), 1, T(I, 2, 3));
    in.dim = 64;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.op = RT_OP_CHECK_LABELS;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.dim = 0;
    CHECK_STR(instr_msg(p, &in, err), "bound 0 is not 1 or more");
    in = mk(RT_OP_CHECK_IDS, T(F, 2, 3), 1, T(F, 2, 3));
    in.dim = 64;
    CHECK_STR(instr_msg(p, &in, err), "checks i32 ids, got f32[2, 3]");
    in = mk(RT_OP_CHECK_IDS, T(I, 3, 2), 1, T(I, 2, 3));
    in.dim = 64;
    CHECK(strstr(instr_msg(p, &in, err), "the result is i32[3, 2]"));

    in = mk(RT_OP_SUM, T(I, 5), 1, T(I, 4, 5));
    CHECK_STR(instr_msg(p, &in, err), "");
    in.axis = 2;
    CHECK_STR(instr_msg(p, &in, err), "axis 2 is out of range for i32[4, 5]");
    in = mk(RT_OP_MEAN, T(I, 4, 1), 1, T(I, 4, 5));
    in.axis = 1;
    in.keepdims = 1;
    CHECK(strstr(instr_msg(p, &in, err), "must be floating-point"));
    in.op = RT_OP_AMAX;
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_SOFTMAX, T(F, 4, 5), 1, T(F, 4, 5));
    in.axis = -1;
    CHECK_STR(instr_msg(p, &in, err), "axis -1 is out of range for f32[4, 5]");

    in = mk(RT_OP_LAYERNORM, T(F, 4, 5), 3, T(F, 4, 5), T(F, 5), T(F, 5));
    CHECK_STR(instr_msg(p, &in, err), "needs eps > 0, got 0");
    in.eps = 1e-5;
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_RMSNORM, T(F, 4, 5), 2, T(F, 4, 5), T(F, 4));
    in.eps = 1e-6;
    CHECK_STR(instr_msg(p, &in, err), "needs g of shape [5] to match the last dimension of "
              "f32[4, 5], got f32[4]");

    in = mk(RT_OP_TRANSPOSE, T(F, 5, 4), 1, T(F, 4, 5));
    in.nlist = 2;
    in.list[0] = 1;
    CHECK_STR(instr_msg(p, &in, err), "");
    in.list[0] = 0;
    CHECK_STR(instr_msg(p, &in, err), "needs a permutation of the 2 axes of f32[4, 5], got "
              "[0, 0]");
    in.nlist = 9;
    CHECK_STR(instr_msg(p, &in, err), "has a list of 9 entries; at most 8");

    in = mk(RT_OP_EMBEDDING, T(F, 3, 8), 2, T(F, 10, 8), T(I, 3));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_EMBEDDING, T(F, 3, 8), 2, T(F, 10, 8), T(F, 3));
    CHECK_STR(instr_msg(p, &in, err), "the ids must be i32, got f32[3]");
    in = mk(RT_OP_MSE, S(F), 2, T(F, 3), T(F, 4));
    CHECK(strstr(instr_msg(p, &in, err), "needs operands of the same type"));
    in = mk(RT_OP_XENT, S(F), 2, T(F, 4, 10), T(I, 4));
    CHECK_STR(instr_msg(p, &in, err), "");
    in = mk(RT_OP_XENT, S(F), 2, T(F, 4, 10), T(I, 5));
    CHECK(strstr(instr_msg(p, &in, err), "the labels i32[5] do not match"));

    test_rules_train(p);
    test_rules_bucket(p);
    test_bucket_view();

    in = mk(RT_OP_CONST, T(F, 2), 0);
    in.value = INFINITY;
    CHECK_STR(instr_msg(p, &in, err), "the value inf is not finite");

    in = mk(RT_OP_SLICE, T(F, 4, 4), 1, T(F, 4, 8));
    in.dim = 1;
    set_axes(&in, 1);
    CHECK_STR(instr_msg(p, &in, err), "");
    in.naxes = 2;
    in.axes[1] = 0;
    CHECK_STR(instr_msg(p, &in, err), "the result is f32[4, 4], but the operands give f32[4, 2]");
    in.axes[1] = 1;
    CHECK_STR(instr_msg(p, &in, err), "names mesh axis 1 twice");
    in.naxes = 1;
    in.in_t[0] = T(F, 4, 5);
    CHECK_STR(instr_msg(p, &in, err), "cannot split dimension 1 of f32[4, 5] over 2 ranks");
    in = mk(RT_OP_ALL_REDUCE, T(F, 4), 1, T(F, 4));
    CHECK_STR(instr_msg(p, &in, err), "needs 1 to 8 mesh axes, got 0");
    set_axes(&in, 2);
    CHECK_STR(instr_msg(p, &in, err), "mesh axis 2 is out of range (the mesh has 2 axes)");
    in = mk(RT_OP_ALL_TO_ALL, T(F, 4, 6), 1, T(F, 4, 6));
    in.dim = in.dim2 = 1;
    set_axes(&in, 0);
    CHECK_STR(instr_msg(p, &in, err), "");
    in.dim2 = 2;
    CHECK_STR(instr_msg(p, &in, err), "dimension 2 is out of range for f32[4, 6]");

    /* all_gather's result dimension overflows int64 */
    fixture g;
    static const char *const names[] = {"x"};
    static const int64_t sizes[] = {(int64_t)1 << 30};
    fix_begin(&g, 1, names, sizes, -1, 1);
    in = mk(RT_OP_ALL_GATHER, T(RT_BF16, 4), 1, T(RT_BF16, (int64_t)1 << 40));
    set_axes(&in, 0);
    CHECK(strstr(instr_msg(&g.p, &in, err), "the result is too large: dimension 0"));
    in = mk(RT_OP_ADD, T(F, 4), 2, T(F, 4), T(F, INT64_MAX / 2));
    CHECK_STR(instr_msg(p, &in, err), "operand 2 is too large: f32[4611686018427387903]");
    in = mk(RT_OP_ADD, T(F, 4), 2, T(F, 4), T(F, 0));
    CHECK_STR(instr_msg(p, &in, err), "operand 2 has a dimension of size 0: f32[0]");
    in.in_t[1].dtype = 9;
    CHECK_STR(instr_msg(p, &in, err), "operand 2 has an unknown dtype (9)");
}

/* ---- seeds for the fuzz corpus ---- */

static int write_file(const char *dir, const char *name, const uint8_t *prefix, size_t np,
                      const uint8_t *b, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(prefix, 1, np, f) != np || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int write_seeds(const char *dir)
{
    static const struct {
        void (*make)(fixture *);
        const char *name;
    } seeds[] = {{make_pipeline, "pipeline"}, {make_loss, "loss"}, {make_train, "train"},
                 {make_empty, "empty"}, {make_stages, "stages"}};
    int bad = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        fixture f;
        su_status err;
        char name[64];
        uint8_t *b;
        size_t n;
        seeds[i].make(&f);
        if (!rt_plan_write(&f.p, &b, &n, &err)) {
            fprintf(stderr, "%s: %s\n", seeds[i].name, err.msg);
            return 1;
        }
        snprintf(name, sizeof name, "%s.plan", seeds[i].name);
        bad |= write_file(dir, name, (const uint8_t *)"", 0, b, n);
        snprintf(name, sizeof name, "F-%s.plan", seeds[i].name);
        bad |= write_file(dir, name, (const uint8_t *)"F", 1, b, n);
        free(b);
    }
    return bad;
}

/* The arena: every buffer inside it at an aligned offset; a result shares
 * memory with an operand only exactly, with its type, in an op that allows
 * it. */
static void test_validate_arena(void)
{
    fixture f;
    make_train(&f);
    su_status err;
    CHECK(rt_plan_validate(&f.p, &err));
    rt_program *g = &f.stage[0];
    int64_t arena = g->arena_bytes;
    g->arena_bytes = f.offs[0][26] + 159;
    EXPECT_INVALID(&f.p, "stage 0: buffer 26 (160 bytes at offset 6656) is not inside the arena "
                   "of 6815 bytes at a multiple of 256");
    g->arena_bytes = -1;
    EXPECT_INVALID(&f.p, "stage 0: an arena of -1 bytes");
    g->arena_bytes = arena;
    f.offs[0][3] += 4;
    EXPECT_INVALID(&f.p, "stage 0: buffer 3 (96 bytes at offset 772) is not inside the arena");
    f.offs[0][3] -= 4;
    CHECK(rt_plan_validate(&f.p, &err));

    /* instruction 6: matmul 6 <- (0, 2); its result over its operand */
    rt_instr *mm = &f.instr[0][6];
    CHECK_INT(mm->op, RT_OP_MATMUL);
    int64_t keep = f.offs[0][6];
    f.offs[0][6] = f.offs[0][2];
    EXPECT_INVALID(&f.p, "stage 0, instruction 6 (matmul): the result (buffer 6) overlaps "
                   "operand 2 (buffer 2) in memory");
    f.offs[0][6] = keep;
    CHECK(rt_plan_validate(&f.p, &err));
    /* instruction 15: adam_m 13 <- (3, 28) may write over either operand,
     * of its own type */
    rt_instr *am = &f.instr[0][15];
    CHECK_INT(am->op, RT_OP_ADAM_M);
    keep = f.offs[0][13];
    f.offs[0][13] = f.offs[0][3];
    CHECK(rt_plan_validate(&f.p, &err));
    f.offs[0][13] = f.offs[0][28];
    CHECK(rt_plan_validate(&f.p, &err));
    am->in_t[1] = T(RT_F32, 6, 4); /* the same bytes as another type */
    EXPECT_INVALID(&f.p, "stage 0, instruction 15 (adam_m): the result (buffer 13) overlaps "
                   "operand 2 (buffer 28) in memory");
    am->in_t[1] = am->out_t;
    f.offs[0][13] = keep;
    CHECK(rt_plan_validate(&f.p, &err));
}

/* ---- pipeline stages: send, recv, entries on several stages ---- */

/* Each rule of send and recv, and of I/O entries with one name. */
static void test_validate_stages(void)
{
    fixture f;
    make_stages(&f);
    su_status err;
    CHECK(rt_plan_validate(&f.p, &err) || (fprintf(stderr, "%s\n", err.msg), 0));
    rt_instr *send = &f.instr[0][3], *recv = &f.instr[1][0], *mul = &f.instr[0][2];
    CHECK_INT(send->op, RT_OP_SEND);
    CHECK_INT(recv->op, RT_OP_RECV);

    send->dim = 2;
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): peer stage 2 is out of range (the plan "
                   "has 2 stages)");
    /* the halves: a fault of stage 0's is stage 0's to find, in the same words */
    send->dim = 1;
    CHECK(validate_halves(&f.p, &err));
    send->dim = 2;
    CHECK(!rt_plan_validate_stage(&f.p, 0, &err));
    CHECK_STR(err.msg, "stage 0, instruction 3 (send): peer stage 2 is out of range (the plan has "
              "2 stages)");
    CHECK(rt_plan_validate_stage(&f.p, 1, &err));
    CHECK(rt_plan_validate_rest(&f.p, &err));
    CHECK(!rt_plan_validate_stage(&f.p, 2, &err));
    CHECK_STR(err.msg, "no stage 2 to check");
    send->dim = 0;
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): the peer stage 0 is this program's own "
                   "stage");
    send->dim = 1;
    recv->dim = -1;
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (recv): peer stage -1 is out of range");
    recv->dim = 1;
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (recv): the peer stage 1 is this program's own "
                   "stage");
    recv->dim = 0;
    send->out = 2;
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): a send has no result: out must be -1, "
                   "not 2");
    send->out = -1;
    send->out_t = T(RT_F32, 2, 4);
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): out_t is f32[2, 4], but a send's is its "
                   "operand's type f32[2, 8]");
    send->out_t = send->in_t[0];
    send->in[0] = 6;
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): buffer 6 (operand 1) is out of range");
    send->in[0] = 2;
    mul->out = -1;
    EXPECT_INVALID(&f.p, "stage 0, instruction 2 (mul): out is -1, but only a send has no result");
    mul->out = 2;
    recv->out = -1;
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (recv): out is -1, but only a send has no "
                   "result");
    recv->out = 0;
    recv->out_t = T(RT_F32, 4, 8);
    EXPECT_INVALID(&f.p, "stage 1, instruction 0 (recv): the result f32[4, 8] (128 bytes) does "
                   "not fit buffer 0 (64 bytes)");
    recv->out_t = T(RT_F32, 2, 8);
    CHECK(rt_plan_validate(&f.p, &err));

    /* x and step have an entry on each stage; they must agree */
    f.io[4].stage = 0;
    EXPECT_INVALID(&f.p, "duplicate I/O name 'step' on stage 0 (entries 2 and 4)");
    CHECK(!rt_plan_validate_rest(&f.p, &err)); /* the table is the rest's */
    CHECK_STR(err.msg, "duplicate I/O name 'step' on stage 0 (entries 2 and 4)");
    f.io[4].stage = 1;
    f.io[3].type = T(RT_F32, 8, 8);
    EXPECT_INVALID(&f.p, "I/O entries 0 and 3 (stages 0 and 1) are both called 'x' but differ in "
                   "type: f32[4, 8] and f32[8, 8]");
    f.io[3].type = T(RT_F32, 4, 8);
    f.io[3].sh.naxes[0] = 0;
    EXPECT_INVALID(&f.p, "I/O entries 0 and 3 (stages 0 and 1) are both called 'x' but differ in "
                   "sharding");
    f.io[3].sh.naxes[0] = 1;
    f.io[4].init = RT_INIT_ONES;
    EXPECT_INVALID(&f.p, "I/O entries 2 and 4 (stages 0 and 1) are both called 'step' but differ "
                   "in initializer");
    f.io[4].init = RT_INIT_ZEROS;
    f.io[4].kind = RT_IO_PARAM;
    EXPECT_INVALID(&f.p, "I/O entries 2 and 4 (stages 0 and 1) are both called 'step' but differ "
                   "in kind");
    f.io[4].kind = RT_IO_STATE;
    rt_io *y0 = add_io(&f, RT_IO_OUTPUT, "y", T(RT_F32, 4, 8), 0, 0, 0);
    y0->buffer = 2;
    EXPECT_INVALID(&f.p, "I/O entries 6 and 5 are both called 'y', on stages 0 and 1; an output "
                   "belongs to one stage");
    y0->name = (char *)"y0";
    CHECK(rt_plan_validate(&f.p, &err));
    f.p.nio--;

    /* only the ranks of an entry's stage hold it: it cannot be split over pp */
    f.io[1].sh.naxes[0] = 1;
    f.io[1].sh.axes[0][0] = 1;
    EXPECT_INVALID(&f.p, "I/O entry 1 (w): the sharding names the pipeline axis pp, but only the "
                   "ranks of stage 0 hold the value");
    f.io[1].sh.naxes[0] = 0;
    f.io[1].sh.axes[0][0] = 0;
    f.io[1].sh.partial = 1 << 1;
    EXPECT_INVALID(&f.p, "I/O entry 1 (w): the sharding names the pipeline axis pp");
    f.io[1].sh.partial = 0;
    CHECK(rt_plan_validate(&f.p, &err));

    /* without a pipeline axis: stage 0 alone, its send going nowhere */
    f.p.stage_axis = -1;
    f.p.nstages = 1;
    f.p.nio = 3;
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (send): needs a pipeline axis, but the plan has "
                   "none");
    f.instr[0][3].op = RT_OP_RECV; /* nin stays 1 */
    EXPECT_INVALID(&f.p, "stage 0, instruction 3 (recv): has 1 operands; recv takes 0");
}

static void test_io_first(void)
{
    fixture f;
    make_stages(&f);
    int32_t first[MAXIO];
    su_status err = {SU_OK, ""};
    CHECK(rt_plan_io_first(&f.p, first));
    static const int32_t want[] = {0, 1, 2, 0, 2, 5};
    for (int i = 0; i < 6; i++)
        CHECK_INT(first[i], want[i]);
    /* outputs have a namespace of their own: the output "x" is not the input */
    f.io[5].name = (char *)"x";
    CHECK(rt_plan_validate(&f.p, &err));
    CHECK(rt_plan_io_first(&f.p, first));
    for (int i = 0; i < 6; i++)
        CHECK_INT(first[i], want[i]);
    make_pipeline(&f); /* every name once */
    CHECK(rt_plan_io_first(&f.p, first));
    for (int i = 0; i < f.p.nio; i++)
        CHECK_INT(first[i], i);
}

/* rt_instr_check alone: send and recv need a pipeline axis and a peer
 * stage in range; the program's own stage is check_in_program's. */
static void test_rules_p2p(void)
{
    fixture f;
    make_stages(&f);
    char err[ERRLEN];
    rt_instr in = mk(RT_OP_RECV, T(RT_BF16, 3, 5), 0);
    in.dim = 1;
    CHECK_STR(instr_msg(&f.p, &in, err), "");
    in.dim = 2;
    CHECK_STR(instr_msg(&f.p, &in, err), "peer stage 2 is out of range (the plan has 2 stages)");
    in = mk(RT_OP_SEND, T(RT_I32, 7), 1, T(RT_I32, 7));
    in.out = -1;
    CHECK_STR(instr_msg(&f.p, &in, err), "");
    in.out = 0;
    CHECK_STR(instr_msg(&f.p, &in, err), "a send has no result: out must be -1, not 0");
    make_pipeline(&f); /* stage axis pp, 2 stages */
    in.out = -1;
    in.dim = 1;
    CHECK_STR(instr_msg(&f.p, &in, err), "");
    make_loss(&f); /* no stage axis */
    CHECK_STR(instr_msg(&f.p, &in, err), "needs a pipeline axis, but the plan has none");
}

/* `shardc --emit schedule`: send and recv with their peer stage, and each
 * entry's stage. */
static void test_schedule_text(void)
{
    fixture f;
    make_stages(&f);
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
              "mesh dp = 2, pp = 2\n"
              "// 4 ranks, 2 stages\n"
              "input \"x\" : f32[4, 8] shard(dp, _) on stage 0\n"
              "param \"w\" : f32[8] shard(_) = %1 on stage 0\n"
              "state \"step\" : f32[] shard() = %3 <- %5 on stage 0\n"
              "input \"x\" : f32[4, 8] shard(dp, _) on stage 1\n"
              "state \"step\" : f32[] shard() = %3 <- %5 on stage 1\n"
              "output \"y\" : f32[4, 8] shard(dp, _) = %2 on stage 1\n"
              "\n"
              "stage 0 (pp = 0): 7 instructions, 6 buffers in an arena of 1536 bytes\n"
              "  %0 = input {name = \"x\"} : f32[2, 8]\n"
              "  %1 = param {name = \"w\"} : f32[8]\n"
              "  %2 = mul %0, %1 : f32[2, 8]\n"
              "  send %2 -> stage 1 : f32[2, 8]    // 64 bytes\n"
              "  %3 = state {name = \"step\"} : f32[]\n"
              "  %4 = const {value = 1.0} : f32[]\n"
              "  %5 = add %3, %4 : f32[]\n"
              "\n"
              "stage 1 (pp = 1): 6 instructions, 6 buffers in an arena of 1536 bytes\n"
              "  %0 = recv <- stage 0 : f32[2, 8]    // 64 bytes\n"
              "  %1 = input {name = \"x\"} : f32[2, 8]\n"
              "  %2 = add %0, %1 : f32[2, 8]\n"
              "  %3 = state {name = \"step\"} : f32[]\n"
              "  %4 = const {value = 1.0} : f32[]\n"
              "  %5 = add %3, %4 : f32[]\n");
    free(text);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
        return write_seeds(argv[2]);
    test_crc();
    test_roundtrip();
    test_truncation();
    test_bitflips();
    test_header();
    test_sections();
    test_validate();
    test_validate_train();
    test_validate_arena();
    test_train_file();
    test_rules();
    test_validate_stages();
    test_io_first();
    test_rules_p2p();
    test_schedule_text();
    return CHECK_DONE();
}
