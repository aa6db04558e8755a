/* pipeline_plans.h: pipelined plans built by hand, and their reference in
 * C, shared by test_pipeline.c (ranks are threads) and
 * tests/mpi/test_pipeline_mpi.c (ranks are processes).
 *
 * The chain: PL layers over a mesh pp = S (or dp = D x pp = S), the layers
 * split evenly over the stages. Stage 0 reads the input x [PB, PN] (split
 * over dp), each layer l computes h = h * w_l + c_l (w_l a param [PN],
 * c_l a constant), a stage sends h to the next, which receives it; the
 * last stage reads x again (an input entry on two stages) and outputs
 * y = h + x and loss = the sum of y (all_reduced over dp). A training
 * step: each w_l becomes w_l + 1/4, and every stage keeps the step count
 * `step` (a state with an entry per stage), step + 1.
 *
 * Every value is a small dyadic rational (x in eighths, w in quarters, c
 * in eighths), so every f32 product and sum is exact and the outputs equal
 * the reference bit for bit, whatever the order of the sums.
 */
#ifndef SHARDC_TEST_PIPELINE_PLANS_H
#define SHARDC_TEST_PIPELINE_PLANS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/plan/plan.h"

enum { PB = 4, PN = 8, PL = 4, PP_MAXS = 4, PP_BUF = 48, PP_INSTR = 48, PP_IO = 24 };

typedef struct pp_plan {
    rt_plan p;
    rt_io io[PP_IO];
    rt_program stage[PP_MAXS];
    int64_t bytes[PP_MAXS][PP_BUF], offs[PP_MAXS][PP_BUF];
    rt_instr instr[PP_MAXS][PP_INSTR];
    int dp, nstages;
} pp_plan;

static const char *const pp_wname[PL] = {"w0", "w1", "w2", "w3"};

static rt_type pp_t2(int64_t a, int64_t b)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = RT_F32;
    t.rank = 2;
    t.dim[0] = a;
    t.dim[1] = b;
    return t;
}

static rt_type pp_t1(int64_t a)
{
    rt_type t = pp_t2(a, 1);
    t.rank = 1;
    t.dim[1] = 0;
    return t;
}

static rt_type pp_scalar(void)
{
    rt_type t = pp_t2(0, 0);
    t.rank = 0;
    return t;
}

/* A new buffer of stage s for a value of type t, after the others. */
static int pp_buf(pp_plan *t, int s, rt_type ty)
{
    rt_program *g = &t->stage[s];
    int b = g->nbuf++;
    t->bytes[s][b] = rt_type_bytes(&ty);
    t->offs[s][b] = g->arena_bytes;
    g->arena_bytes += (t->bytes[s][b] + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
    return b;
}

/* An instruction of stage s writing a new buffer of type out_t (none for a
 * send: pass RT_OP_SEND); operands as (buffer, type) pairs. Returns it. */
static rt_instr *pp_ins(pp_plan *t, int s, int op, rt_type out_t, int nin, ...)
{
    rt_instr *in = &t->instr[s][t->stage[s].ninstr++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->nin = (uint8_t)nin;
    in->out_t = out_t;
    in->io = -1;
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++) {
        in->in[i] = va_arg(ap, int);
        in->in_t[i] = va_arg(ap, rt_type);
    }
    va_end(ap);
    in->out = op == RT_OP_SEND ? -1 : pp_buf(t, s, out_t);
    return in;
}

static int pp_const(pp_plan *t, int s, double v)
{
    rt_instr *in = pp_ins(t, s, RT_OP_CONST, pp_scalar(), 0);
    in->value = v;
    return in->out;
}

static rt_io *pp_io(pp_plan *t, int kind, const char *name, rt_type ty, bool split, int stage)
{
    rt_io *io = &t->io[t->p.nio++];
    memset(io, 0, sizeof *io);
    io->kind = (uint8_t)kind;
    io->name = (char *)name;
    io->type = ty;
    if (split && t->dp > 1) {
        io->sh.naxes[0] = 1; /* over dp, axis 0 */
        io->sh.axes[0][0] = 0;
    }
    io->stage = stage;
    io->buffer = -1;
    io->update = -1;
    return io;
}

/* A source instruction of stage s filling a new buffer from entry io. */
static int pp_source(pp_plan *t, int s, int op, int io, rt_type local)
{
    rt_instr *in = pp_ins(t, s, op, local, 0);
    in->io = io;
    if (op != RT_OP_INPUT)
        t->io[io].buffer = in->out;
    return in->out;
}

static double pp_c(int l)
{
    return 0.125 * (l + 1);
}

/* Layer l on stage s: h * w_l + c_l, and w_l's update. Returns h's buffer. */
static int pp_layer(pp_plan *t, int s, int l, int h, rt_type local)
{
    int io = (int)(pp_io(t, RT_IO_PARAM, pp_wname[l], pp_t1(PN), false, s) - t->io);
    int w = pp_source(t, s, RT_OP_PARAM, io, pp_t1(PN));
    int m = pp_ins(t, s, RT_OP_MUL, local, 2, h, local, w, pp_t1(PN))->out;
    int c = pp_const(t, s, pp_c(l));
    int out = pp_ins(t, s, RT_OP_ADD, local, 2, m, local, c, pp_scalar())->out;
    int q = pp_const(t, s, 0.25);
    t->io[io].update = pp_ins(t, s, RT_OP_ADD, pp_t1(PN), 2, w, pp_t1(PN), q, pp_scalar())->out;
    return out;
}

/* The step count of stage s: an entry of its own, step + 1 after a run. */
static void pp_step(pp_plan *t, int s)
{
    int io = (int)(pp_io(t, RT_IO_STATE, "step", pp_scalar(), false, s) - t->io);
    t->io[io].init = RT_INIT_ZEROS;
    int st = pp_source(t, s, RT_OP_STATE, io, pp_scalar());
    int one = pp_const(t, s, 1);
    t->io[io].update = pp_ins(t, s, RT_OP_ADD, pp_scalar(), 2, st, pp_scalar(), one,
                              pp_scalar())->out;
}

/* The last stage's tail: y = h + x, loss = sum of y over every rank. */
static void pp_tail(pp_plan *t, int s, int h, int x_io, rt_type local)
{
    if (x_io < 0) /* x again, an entry of this stage */
        x_io = (int)(pp_io(t, RT_IO_INPUT, "x", pp_t2(PB, PN), true, s) - t->io);
    int x = pp_source(t, s, RT_OP_INPUT, x_io, local);
    int y = pp_ins(t, s, RT_OP_ADD, local, 2, h, local, x, local)->out;
    rt_instr *r = pp_ins(t, s, RT_OP_SUM, pp_t1(local.dim[0]), 1, y, local);
    r->axis = 1;
    rt_instr *tot = pp_ins(t, s, RT_OP_SUM, pp_scalar(), 1, r->out, pp_t1(local.dim[0]));
    int loss = tot->out;
    if (t->dp > 1) {
        rt_instr *ar = pp_ins(t, s, RT_OP_ALL_REDUCE, pp_scalar(), 1, loss, pp_scalar());
        ar->naxes = 1;
        ar->axes[0] = 0; /* dp */
        loss = ar->out;
    }
    pp_io(t, RT_IO_OUTPUT, "y", pp_t2(PB, PN), true, s)->buffer = y;
    t->p.loss = t->p.nio;
    pp_io(t, RT_IO_OUTPUT, "loss", pp_scalar(), false, s)->buffer = loss;
}

/* The chain on dp x pp = dp x S (dp = 1: the mesh pp = S alone). */
static void pp_make(pp_plan *t, int dp, int S)
{
    static char *const names[] = {"dp", "pp"};
    memset(t, 0, sizeof *t);
    t->dp = dp;
    t->nstages = S;
    t->p.naxes = dp > 1 ? 2 : 1;
    if (dp > 1) {
        t->p.axis_name[0] = names[0];
        t->p.axis_size[0] = dp;
    }
    t->p.axis_name[t->p.naxes - 1] = names[1];
    t->p.axis_size[t->p.naxes - 1] = S;
    t->p.stage_axis = t->p.naxes - 1;
    t->p.nstages = S;
    t->p.stage = t->stage;
    t->p.io = t->io;
    t->p.loss = -1;
    t->p.init_module = -1;
    t->p.report = (char *)"";
    for (int s = 0; s < S; s++) {
        t->stage[s].buf_bytes = t->bytes[s];
        t->stage[s].buf_offset = t->offs[s];
        t->stage[s].instr = t->instr[s];
    }
    rt_type local = pp_t2(PB / dp, PN);
    int x_io = (int)(pp_io(t, RT_IO_INPUT, "x", pp_t2(PB, PN), true, 0) - t->io);
    for (int s = 0; s < S; s++) {
        int h;
        if (s == 0) {
            h = pp_source(t, 0, RT_OP_INPUT, x_io, local);
        } else {
            rt_instr *rv = pp_ins(t, s, RT_OP_RECV, local, 0);
            rv->dim = s - 1;
            h = rv->out;
        }
        for (int l = s * PL / S; l < (s + 1) * PL / S; l++)
            h = pp_layer(t, s, l, h, local);
        pp_step(t, s);
        if (s < S - 1)
            pp_ins(t, s, RT_OP_SEND, local, 1, h, local)->dim = s + 1;
        else
            pp_tail(t, s, h, S == 1 ? x_io : -1, local);
    }
}

/* ---- the reference ---- */

typedef struct pp_ref {
    float w[PL][PN];
    float step;
} pp_ref;

static float pp_x(int i)
{
    return (float)((i * 5 + 3) % 17 - 8) / 8.0f;
}

static void pp_ref_init(pp_ref *r)
{
    memset(r, 0, sizeof *r);
    for (int l = 0; l < PL; l++)
        for (int j = 0; j < PN; j++)
            r->w[l][j] = (float)((j + 2 * l) % 5 - 2) / 4.0f;
}

/* One step: y (PB x PN) and the loss from the current values, then the
 * updates. */
static void pp_ref_step(pp_ref *r, const float *x, float *y, float *loss)
{
    float sum = 0;
    for (int b = 0; b < PB; b++)
        for (int j = 0; j < PN; j++) {
            float h = x[b * PN + j];
            for (int l = 0; l < PL; l++)
                h = h * r->w[l][j] + (float)pp_c(l);
            y[b * PN + j] = h + x[b * PN + j];
            sum += y[b * PN + j];
        }
    *loss = sum;
    for (int l = 0; l < PL; l++)
        for (int j = 0; j < PN; j++)
            r->w[l][j] += 0.25f;
    r->step += 1;
}

/* Element i of x. */
static void pp_inputs(float *x)
{
    for (int i = 0; i < PB * PN; i++)
        x[i] = pp_x(i);
}

/* Elements of got that differ from want (bit for bit: the values are
 * exact); prints the first. */
static int pp_diff(const char *what, const float *got, const float *want, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0 && bad++ == 0)
            fprintf(stderr, "%s: element %d is %.9g, want %.9g\n", what, i, got[i], want[i]);
    return bad;
}

#endif
