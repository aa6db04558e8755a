/* plan_validate.c: rt_plan_validate, which the writer and the reader both
 * run: the mesh, the I/O table, each stage's buffers and instructions
 * (their shapes by plan_rules.c), the loss, and the kernels with their
 * modules (runtime/README.md, "Kernels in the plan").
 */
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS ((int64_t)1 << 31)
enum { MAX_CUBINS = 64 /* architectures of one module */ };

static bool check_mesh(const rt_plan *p, su_status *err)
{
    if (p->naxes < 0 || p->naxes > RT_MAX_AXES)
        return rt_plan_fail(err, "the mesh has %d axes; 0 to %d are supported", p->naxes,
                            RT_MAX_AXES);
    int64_t ranks = 1;
    for (int a = 0; a < p->naxes; a++) {
        const char *name = p->axis_name[a];
        if (!name || !*name)
            return rt_plan_fail(err, "mesh axis %d has no name", a);
        for (int b = 0; b < a; b++)
            if (strcmp(p->axis_name[b], name) == 0)
                return rt_plan_fail(err, "mesh axes %d and %d are both named '%s'", b, a, name);
        if (p->axis_size[a] < 1)
            return rt_plan_fail(err, "mesh axis %s has size %lld; sizes must be 1 or more", name,
                                (long long)p->axis_size[a]);
        if (__builtin_mul_overflow(ranks, p->axis_size[a], &ranks) || ranks > MAX_RANKS)
            return rt_plan_fail(err, "the mesh has more than 2^31 ranks");
    }
    if (p->stage_axis < -1 || p->stage_axis >= p->naxes)
        return rt_plan_fail(err, "the pipeline axis %d is not an axis of the mesh (nor -1)",
                            p->stage_axis);
    int64_t want = p->stage_axis < 0 ? 1 : p->axis_size[p->stage_axis];
    if (p->nstages != want) {
        if (p->stage_axis < 0)
            return rt_plan_fail(err, "the plan has %d stages but no pipeline axis", p->nstages);
        return rt_plan_fail(err, "the plan has %d stages, but the pipeline axis %s has size %lld",
                            p->nstages, p->axis_name[p->stage_axis], (long long)want);
    }
    if (!p->stage)
        return rt_plan_fail(err, "the plan has no programs");
    return true;
}

/* Each program's buffer table and instruction list, before anything
 * indexes them: stages s0 to s1 - 1. */
static bool check_buffers(const rt_plan *p, int s0, int s1, su_status *err)
{
    for (int s = s0; s < s1; s++) {
        const rt_program *g = &p->stage[s];
        if (g->nbuf < 0 || (g->nbuf > 0 && (!g->buf_bytes || !g->buf_offset)))
            return rt_plan_fail(err, "stage %d: a table of %d buffers is not valid", s, g->nbuf);
        if (g->arena_bytes < 0)
            return rt_plan_fail(err, "stage %d: an arena of %lld bytes", s,
                                (long long)g->arena_bytes);
        for (int b = 0; b < g->nbuf; b++) {
            int64_t off = g->buf_offset[b], n = g->buf_bytes[b];
            if (n < 0)
                return rt_plan_fail(err, "stage %d: buffer %d has size %lld", s, b, (long long)n);
            if (off < 0 || off % RT_ALIGN || off > g->arena_bytes || n > g->arena_bytes - off)
                return rt_plan_fail(err, "stage %d: buffer %d (%lld bytes at offset %lld) is not "
                                    "inside the arena of %lld bytes at a multiple of %d", s, b,
                                    (long long)n, (long long)off, (long long)g->arena_bytes, RT_ALIGN);
        }
        if (g->ninstr < 0 || (g->ninstr > 0 && !g->instr))
            return rt_plan_fail(err, "stage %d: a list of %d instructions is not valid", s,
                                g->ninstr);
    }
    return true;
}

/* A value of type t fits buffer b of program g. */
/* Buffer b is in g and holds a t. what names it in a message, followed
 * by idx when that is 0 or more ("operand 2"): the name is made only for
 * a message, as every instruction's operands are checked. */
static bool check_fit(const rt_program *g, int32_t b, const rt_type *t, const char *name, int idx,
                      su_status *err)
{
    char tb[TYPE_LEN], what[48];
    bool fits = b >= 0 && b < g->nbuf && rt_type_bytes(t) <= g->buf_bytes[b];
    if (fits)
        return true;
    if (idx >= 0)
        snprintf(what, sizeof what, "%s %d", name, idx);
    else
        snprintf(what, sizeof what, "%s", name);
    if (b < 0 || b >= g->nbuf)
        return rt_plan_fail(err, "buffer %d (%s) is out of range (the program has %d buffers)",
                            b, what, g->nbuf);
    if (rt_type_bytes(t) > g->buf_bytes[b])
        return rt_plan_fail(err, "%s %s (%lld bytes) does not fit buffer %d (%lld bytes)", what,
                            rt_type_text(tb, t), (long long)rt_type_bytes(t), b, (long long)g->buf_bytes[b]);
    return true;
}

/* Params and states are made by their initializer; an input may carry one
 * too, for when it is absent at run time (codegen makes synthetic inputs
 * so). */
static bool check_init(const rt_io *io, su_status *err)
{
    if (io->init != RT_INIT_PARAM && io->init_param)
        return rt_plan_fail(err, "names param '%s' without the initializer param",
                            io->init_param);
    if (io->kind == RT_IO_OUTPUT)
        return io->init == RT_INIT_NONE ? true
                                        : rt_plan_fail(err, "an output has no initializer");
    switch (io->init) {
    case RT_INIT_NONE:
    case RT_INIT_ZEROS:
    case RT_INIT_ONES:
        return true;
    case RT_INIT_NORMAL:
        if (!(isfinite(io->init_a) && io->init_a >= 0))
            return rt_plan_fail(err, "normal initializer needs a finite std >= 0, got %g",
                                io->init_a);
        if (!rt_check_float_dtype(io->type.dtype))
            return rt_plan_fail(err, "normal initializer needs a floating-point dtype");
        return true;
    case RT_INIT_UNIFORM:
        if (!(isfinite(io->init_a) && isfinite(io->init_b) && io->init_a < io->init_b))
            return rt_plan_fail(err, "uniform initializer needs finite a < b, got [%g, %g)",
                        io->init_a, io->init_b);
        /* integers in [a, b): whole bounds within i32, as the compiler checks */
        if (!rt_check_float_dtype(io->type.dtype) &&
            (io->init_a != floor(io->init_a) || io->init_b != floor(io->init_b) ||
             io->init_a < INT32_MIN || io->init_b > (double)INT32_MAX + 1))
            return rt_plan_fail(err, "uniform initializer of an integer tensor needs whole "
                                "bounds within i32, got [%g, %g)", io->init_a, io->init_b);
        return true;
    case RT_INIT_PARAM:
        if (io->kind != RT_IO_STATE || !rt_check_float_dtype(io->type.dtype))
            return rt_plan_fail(err, "only a float state is made from a param");
        if (!io->init_param || !*io->init_param)
            return rt_plan_fail(err, "the initializer param names no param");
        return true;
    default:
        return rt_plan_fail(err, "unknown initializer (%d)", io->init);
    }
}

/* Whether entry io is split or partial over mesh axis a. */
static bool on_axis(const rt_io *io, int a)
{
    if (io->sh.partial >> a & 1)
        return true;
    for (int d = 0; d < io->type.rank; d++)
        if (memchr(io->sh.axes[d], a, io->sh.naxes[d]))
            return true;
    return false;
}

/* A state made from a param (RT_INIT_PARAM): the plan has that param (on
 * any stage), of the state's global shape. */
static bool check_from_param(const rt_plan *p, const rt_io *io, su_status *err)
{
    const rt_io *src = NULL;
    for (int32_t i = 0; i < p->nio && !src; i++)
        if (p->io[i].kind == RT_IO_PARAM && !strcmp(p->io[i].name, io->init_param))
            src = &p->io[i];
    if (!src)
        return rt_plan_fail(err, "made from param '%s', which the plan does not have",
                            io->init_param);
    bool same = src->type.rank == io->type.rank;
    for (int d = 0; same && d < io->type.rank; d++)
        same = src->type.dim[d] == io->type.dim[d];
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (!same)
        return rt_plan_fail(err, "made from param '%s', but it is %s and the param %s",
                            io->init_param, rt_type_text(b1, &io->type), rt_type_text(b2, &src->type));
    return true;
}

/* One I/O entry on its own: kind, name, type and sharding, init, stage,
 * for an output the buffer holding its local shard, and for a param or a
 * state the buffer of its update (check_sources checks its buffer). */
static bool check_io(const rt_plan *p, const rt_io *io, su_status *err)
{
    rt_type local;
    if (io->kind > RT_IO_STATE)
        return rt_plan_fail(err, "unknown kind (%d)", io->kind);
    if (!rt_io_local(p, io, &local, err) || !check_init(io, err) ||
        (io->init == RT_INIT_PARAM && !check_from_param(p, io, err)))
        return false;
    if (io->kind == RT_IO_OUTPUT && io->sh.partial)
        return rt_plan_fail(err, "an output cannot be partial (over mesh axes 0x%x)",
                            (unsigned)io->sh.partial);
    if (io->stage < 0 || io->stage >= p->nstages)
        return rt_plan_fail(err, "stage %d is out of range (the plan has %d)", io->stage,
                            p->nstages);
    if (p->stage_axis >= 0 && on_axis(io, p->stage_axis))
        return rt_plan_fail(err, "the sharding names the pipeline axis %s, but only the ranks of "
                            "stage %d hold the value", p->axis_name[p->stage_axis], io->stage);
    if (io->kind == RT_IO_OUTPUT && !check_fit(&p->stage[io->stage], io->buffer, &local,
                                               "the local shard", -1, err))
        return false;
    bool trained = io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
    if (io->update != -1 && !trained)
        return rt_plan_fail(err, "an %s has no update (buffer %d), only params and states do",
                            io->kind == RT_IO_INPUT ? "input" : "output", io->update);
    if (io->update != -1)
        return check_fit(&p->stage[io->stage], io->update, &local, "the update", -1, err);
    return true;
}

/* Names live in two namespaces (LANGUAGE.md §12): what the caller binds
 * (inputs, params, states) and what it reads back (outputs). */
typedef struct named {
    const char *name;
    int32_t out;         /* 1: an output's name, 0: an input's, param's or state's */
    int32_t stage, index;
} named;

static bool same_name(const named *x, const named *y)
{
    return x->out == y->out && strcmp(x->name, y->name) == 0;
}

/* By namespace, then name, then stage, then index. */
static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    if (x->out != y->out)
        return x->out - y->out;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->stage != y->stage)
        return (x->stage > y->stage) - (x->stage < y->stage);
    return (x->index > y->index) - (x->index < y->index);
}

/* The entries sorted by (namespace, name, stage, index); NULL when out of
 * memory. */
static named *sorted_names(const rt_plan *p)
{
    named *v = malloc(((size_t)p->nio + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (int32_t i = 0; i < p->nio; i++)
        v[i] = (named){p->io[i].name, p->io[i].kind == RT_IO_OUTPUT, p->io[i].stage, i};
    qsort(v, (size_t)p->nio, sizeof *v, cmp_named);
    return v;
}

bool rt_plan_io_first(const rt_plan *p, int32_t *first)
{
    named *v = sorted_names(p);
    if (!v)
        return false;
    for (int32_t g = 0, e; g < p->nio; g = e) {
        int32_t lo = v[g].index;
        for (e = g + 1; e < p->nio && same_name(&v[e], &v[g]); e++)
            lo = v[e].index < lo ? v[e].index : lo;
        for (int32_t i = g; i < e; i++)
            first[v[i].index] = lo;
    }
    free(v);
    return true;
}

/* What two entries of one name on two stages must share: one tensor. */
static const char *io_differ(const rt_io *a, const rt_io *b)
{
    if (a->kind != b->kind)
        return "kind";
    if (!rt_type_eq(&a->type, &b->type))
        return "type";
    if (memcmp(a->sh.naxes, b->sh.naxes, sizeof a->sh.naxes) != 0 ||
        a->sh.partial != b->sh.partial)
        return "sharding";
    for (int d = 0; d < a->type.rank; d++)
        if (memcmp(a->sh.axes[d], b->sh.axes[d], a->sh.naxes[d]) != 0)
            return "sharding";
    bool args = a->init == RT_INIT_NORMAL || a->init == RT_INIT_UNIFORM;
    if (a->init != b->init || (args && (a->init_a != b->init_a || a->init_b != b->init_b)) ||
        (a->init == RT_INIT_PARAM && strcmp(a->init_param, b->init_param) != 0))
        return "initializer";
    return NULL;
}

/* Inputs, params and states share one namespace, outputs have their own
 * (an output may bear the name of an input or a param). A name may stand
 * for one tensor on several stages (an input read by the first and the
 * last stage, the step count every stage keeps): one entry per stage, all
 * alike but for their stage, buffer and update; an output belongs to one
 * stage. Sorted, so that a plan with many parameters does not cost a
 * quadratic scan. */
static bool check_io_names(const rt_plan *p, su_status *err)
{
    if (p->nio < 2)
        return true;
    named *v = sorted_names(p);
    if (!v)
        return rt_plan_nomem(err);
    bool ok = true;
    char b1[TYPE_LEN], b2[TYPE_LEN];
    for (int32_t i = 1, g = 0; ok && i < p->nio; i++) {
        if (!same_name(&v[g], &v[i])) {
            g = i;
            continue;
        }
        const rt_io *a = &p->io[v[g].index], *b = &p->io[v[i].index];
        const char *what = io_differ(a, b);
        if (v[i - 1].stage == v[i].stage)
            ok = rt_plan_fail(err, "duplicate I/O name '%s' on stage %d (entries %d and %d)",
                              v[i].name, v[i].stage, v[i - 1].index, v[i].index);
        else if (a->kind == RT_IO_OUTPUT || b->kind == RT_IO_OUTPUT)
            ok = rt_plan_fail(err, "I/O entries %d and %d are both called '%s', on stages %d and "
                              "%d; an output belongs to one stage", v[g].index, v[i].index, v[i].name,
                              a->stage, b->stage);
        else if (what && !strcmp(what, "type"))
            ok = rt_plan_fail(err, "I/O entries %d and %d (stages %d and %d) are both called "
                              "'%s' but differ in type: %s and %s", v[g].index, v[i].index, a->stage,
                              b->stage, v[i].name, rt_type_text(b1, &a->type), rt_type_text(b2, &b->type));
        else if (what)
            ok = rt_plan_fail(err, "I/O entries %d and %d (stages %d and %d) are both called "
                              "'%s' but differ in %s", v[g].index, v[i].index, a->stage, b->stage,
                              v[i].name, what);
    }
    free(v);
    return ok;
}

static bool check_ios(const rt_plan *p, su_status *err)
{
    su_status msg;
    if (p->nio < 0 || (p->nio > 0 && !p->io))
        return rt_plan_fail(err, "an I/O table of %d entries is not valid", p->nio);
    for (int32_t i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!io->name || !*io->name)
            return rt_plan_fail(err, "I/O entry %d has no name", i);
        if (!check_io(p, io, &msg))
            return rt_plan_wrap(err, &msg, "I/O entry %d (%s): ", i, io->name);
    }
    return check_io_names(p, err);
}

/* What rt_instr_check cannot see: the buffers of the program, the stage
 * of an input's, param's or state's entry, and that a send or a recv does
 * not name the program's own stage. Only a send has no result (out = -1). */
static bool check_in_program(const rt_plan *p, int s, const rt_instr *in, su_status *err)
{
    const rt_program *g = &p->stage[s];
    if (!rt_check_operands(in, err))
        return false;
    for (int i = 0; i < in->nin; i++)
        if (!check_fit(g, in->in[i], &in->in_t[i], "operand", i + 1, err))
            return false;
    bool p2p = in->op == RT_OP_SEND || in->op == RT_OP_RECV;
    if (p2p && !rt_instr_check(p, in, err))
        return false;
    if (p2p && in->dim == s)
        return rt_plan_fail(err, "the peer stage %lld is this program's own stage",
                            (long long)in->dim);
    if (in->op == RT_OP_SEND) /* no result */
        return true;
    if (in->out == -1)
        return rt_plan_fail(err, "out is -1, but only a send has no result");
    if (!check_fit(g, in->out, &in->out_t, "the result", -1, err))
        return false;
    /* the result and an operand share memory only as rt_op_in_place allows */
    int64_t o0 = g->buf_offset[in->out], o1 = o0 + rt_type_bytes(&in->out_t);
    for (int i = 0; i < in->nin; i++) {
        int64_t a0 = g->buf_offset[in->in[i]], a1 = a0 + rt_type_bytes(&in->in_t[i]);
        if (a0 >= o1 || o0 >= a1)
            continue;
        if (a0 == o0 && rt_op_in_place(in->op) && rt_type_eq(&in->in_t[i], &in->out_t))
            continue;
        if (rt_bucket_view(in, i, a0, o0))
            continue;
        return rt_plan_fail(err, "the result (buffer %d) overlaps operand %d (buffer %d) in "
                            "memory", in->out, i + 1, in->in[i]);
    }
    if (rt_is_io_source(in->op) && in->io >= 0 && in->io < p->nio && p->io[in->io].stage != s)
        return rt_plan_fail(err, "I/O entry %d belongs to stage %d", in->io, p->io[in->io].stage);
    return p2p || rt_instr_check(p, in, err);
}

/* Where an instruction or a kernel of a checked copy lies in the plan its
 * messages name: a loop form is checked on a sample of its items expanded
 * (validate_loops), whose instruction k and kernel i are instruction
 * instr[k] and kernel kernel[i] of the stage expanded whole. NULL: the
 * copy's own numbers. */
typedef struct where {
    const int64_t *instr, *kernel;
} where;

static long long instr_at(const where *w, int64_t k)
{
    return w && w->instr ? (long long)w->instr[k] : (long long)k;
}

static long long kernel_at(const where *w, int64_t i)
{
    return w && w->kernel ? (long long)w->kernel[i] : (long long)i;
}

static bool check_programs(const rt_plan *p, int s0, int s1, const where *w, su_status *err)
{
    su_status msg;
    for (int s = s0; s < s1; s++) {
        const rt_program *g = &p->stage[s];
        for (int k = 0; k < g->ninstr; k++) {
            const rt_instr *in = &g->instr[k];
            if (in->line < 0 || in->col < 0 || (!in->line && in->col))
                return rt_plan_fail(err, "stage %d, instruction %lld: source place %d:%d is not "
                                    "a line and column", s, instr_at(w, k), (int)in->line,
                                    (int)in->col);
            if (!check_in_program(p, s, in, &msg))
                return rt_plan_wrap(err, &msg, "stage %d, instruction %lld (%s): ", s,
                                    instr_at(w, k),
                                    in->op < RT_NOPS ? rt_ops[in->op].name : "?");
        }
    }
    return true;
}

/* Each param and state of stages s0 to s1 - 1 is filled by a source
 * instruction of its stage (rt_instr_check and check_in_program have
 * checked the instructions' entries and stages), and its buffer is the
 * one every such instruction writes: the session keeps it across runs and
 * writes updates into it. */
static bool check_sources(const rt_plan *p, int s0, int s1, su_status *err)
{
    int32_t *src = malloc(((size_t)p->nio + 1) * sizeof *src);
    if (!src)
        return rt_plan_nomem(err);
    for (int32_t i = 0; i < p->nio; i++)
        src[i] = -1;
    bool ok = true;
    for (int s = s0; ok && s < s1; s++)
        for (int k = 0; ok && k < p->stage[s].ninstr; k++) {
            const rt_instr *in = &p->stage[s].instr[k];
            if (in->op != RT_OP_PARAM && in->op != RT_OP_STATE)
                continue;
            if (src[in->io] >= 0 && src[in->io] != in->out)
                ok = rt_plan_fail(err, "I/O entry %d (%s) is filled into buffers %d and %d",
                                  in->io, p->io[in->io].name, src[in->io], in->out);
            src[in->io] = in->out;
        }
    for (int32_t i = 0; ok && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if ((io->kind != RT_IO_PARAM && io->kind != RT_IO_STATE) || io->stage < s0 ||
            io->stage >= s1)
            continue;
        if (src[i] < 0)
            ok = rt_plan_fail(err, "I/O entry %d (%s): no instruction of stage %d fills it", i,
                              io->name, io->stage);
        else if (io->buffer != src[i])
            ok = rt_plan_fail(err, "I/O entry %d (%s): buffer %d is not buffer %d, which its "
                              "source instruction fills", i, io->name, io->buffer, src[i]);
    }
    free(src);
    return ok;
}

/* The loss: none (-1), or an output that is a floating-point scalar. */
static bool check_loss(const rt_plan *p, su_status *err)
{
    if (p->loss == -1)
        return true;
    if (p->loss < 0 || p->loss >= p->nio)
        return rt_plan_fail(err, "the loss is I/O entry %d, out of range (the plan has %d)",
                            p->loss, p->nio);
    const rt_io *io = &p->io[p->loss];
    char b[TYPE_LEN];
    if (io->kind != RT_IO_OUTPUT)
        return rt_plan_fail(err, "the loss is I/O entry %d (%s), which is not an output", p->loss,
                            io->name);
    if (io->type.rank != 0 || !rt_check_float_dtype(io->type.dtype))
        return rt_plan_fail(err, "the loss, output '%s', is %s; a floating-point scalar is "
                            "needed", io->name, rt_type_text(b, &io->type));
    return true;
}

/* ---- kernels ---- */

int rt_arch_number(const char *name)
{
    const char *d = NULL;
    if (name && !strncmp(name, "sm_", 3))
        d = name + 3;
    else if (name && !strncmp(name, "compute_", 8))
        d = name + 8;
    size_t n = d ? strlen(d) : 0;
    if (n < 2 || n > 3 || d[0] == '0')
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        v = v * 10 + (d[i] - '0');
    }
    return v;
}

const char *rt_kernel_strategy_name(int strategy)
{
    static const char *const names[RT_NKSTRATEGIES] = {"elementwise", "row", "column",
                                                       "single block", "matmul"};
    return strategy >= 0 && strategy < RT_NKSTRATEGIES ? names[strategy] : "?";
}

/* The name of the __global__ function: a C identifier. */
static bool is_identifier(const char *s)
{
    if (!s || !(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* One image: a well-formed architecture name with the prefix the image's
 * kind has ("sm_" for a cubin, "compute_" for PTX), and some bytes. */
static bool check_image(const rt_image *im, const char *prefix, const char *what, su_status *err)
{
    if (!im->arch || rt_arch_number(im->arch) < 0 || strncmp(im->arch, prefix, strlen(prefix)))
        return rt_plan_fail(err, "%s has the architecture '%s'; expected %sNN", what,
                            im->arch ? im->arch : "", prefix);
    if (im->len == 0 || !im->data)
        return rt_plan_fail(err, "%s for %s is empty", what, im->arch);
    if (!strcmp(prefix, "compute_") && memchr(im->data, 0, im->len))
        return rt_plan_fail(err, "%s for %s contains a NUL byte", what, im->arch);
    return true;
}

/* A module: its entries distinct C identifiers, its images (see
 * check_image), one cubin per architecture. */
static bool check_module(const rt_module *m, su_status *err)
{
    char what[32];
    if (m->nentry < 1 || !m->entry)
        return rt_plan_fail(err, "has %d entries; 1 or more are needed", m->nentry);
    for (int i = 0; i < m->nentry; i++) {
        if (!is_identifier(m->entry[i]))
            return rt_plan_fail(err, "entry %d, '%s', is not a C identifier", i,
                                m->entry[i] ? m->entry[i] : "");
        for (int j = 0; j < i; j++)
            if (!strcmp(m->entry[j], m->entry[i]))
                return rt_plan_fail(err, "entry '%s' is there twice", m->entry[i]);
    }
    if (m->ncubin < 1 || m->ncubin > MAX_CUBINS || !m->cubin)
        return rt_plan_fail(err, "has %d cubins; 1 to %d are needed", m->ncubin, MAX_CUBINS);
    for (int i = 0; i < m->ncubin; i++) {
        snprintf(what, sizeof what, "cubin %d", i);
        if (!check_image(&m->cubin[i], "sm_", what, err))
            return false;
        for (int j = 0; j < i; j++)
            if (!strcmp(m->cubin[j].arch, m->cubin[i].arch))
                return rt_plan_fail(err, "cubins %d and %d are both for %s", j, i,
                                    m->cubin[i].arch);
    }
    return check_image(&m->ptx, "compute_", "the PTX", err);
}

/* The name, the module and the launch: a known strategy, a grid and a
 * block the driver accepts; a matmul kernel has none of them, and only it
 * an epilogue. */
static bool check_launch(const rt_plan *p, const rt_kernel *k, su_status *err)
{
    if (!is_identifier(k->name))
        return rt_plan_fail(err, "the name '%s' is not a C identifier", k->name ? k->name : "");
    if (k->strategy == RT_KS_MATMUL) {
        if (k->module != -1 || k->entry != 0 || k->grid != 0 || k->block != 0 ||
            k->shared_bytes != 0)
            return rt_plan_fail(err, "a matmul kernel has module %d, entry %d, grid %lld, block "
                                "%d and %d shared bytes; expected -1 and zeros (cuBLASLt runs "
                                "it)", k->module, k->entry, (long long)k->grid, k->block,
                                k->shared_bytes);
        if (k->epilogue & ~RT_EPI_ALL)
            return rt_plan_fail(err, "unknown epilogue bits 0x%x", k->epilogue);
        return true;
    }
    if (k->epilogue)
        return rt_plan_fail(err, "only matmul kernels have an epilogue; this one (%s) has 0x%x",
                            rt_kernel_strategy_name(k->strategy), k->epilogue);
    if (k->module < 0 || k->module >= p->nmodules)
        return rt_plan_fail(err, "module %d is out of range (the plan has %d)", k->module,
                            p->nmodules);
    if (k->entry < 0 || k->entry >= p->module[k->module].nentry)
        return rt_plan_fail(err, "entry %d is out of range (module %d has %d)", k->entry,
                            k->module, p->module[k->module].nentry);
    if (k->strategy >= RT_NKSTRATEGIES)
        return rt_plan_fail(err, "unknown strategy (%d)", k->strategy);
    if (k->grid < 1 || k->grid > INT32_MAX)
        return rt_plan_fail(err, "a grid of %lld blocks; 1 to 2^31-1 are possible",
                            (long long)k->grid);
    if (k->block < 1 || k->block > RT_MAX_BLOCK)
        return rt_plan_fail(err, "a block of %d threads; 1 to %d are possible", k->block,
                            RT_MAX_BLOCK);
    if (k->shared_bytes < 0 || k->shared_bytes > RT_MAX_SHARED)
        return rt_plan_fail(err, "%d bytes of dynamic shared memory; 0 to %d are possible",
                            k->shared_bytes, RT_MAX_SHARED);
    return true;
}

/* The instructions it stands for: in the program, ascending, compute
 * instructions or constants (a constant a kernel writes as a literal:
 * the CPU backend fills it, the GPU does not), none claimed by another
 * kernel (owner: per instruction of the stage, the kernel claiming it, or
 * -1). */
static bool check_kernel_instrs(const rt_program *g, const rt_kernel *k, int32_t *owner,
                                int32_t self, const where *w, su_status *err)
{
    if (k->ninstr < 1 || !k->instr)
        return rt_plan_fail(err, "stands for no instruction");
    for (int i = 0; i < k->ninstr; i++) {
        int32_t at = k->instr[i];
        if (at < 0 || at >= g->ninstr)
            return rt_plan_fail(err, "instruction %d is out of range (the program has %d)", at,
                                g->ninstr);
        if (i > 0 && at <= k->instr[i - 1])
            return rt_plan_fail(err, "instructions %lld and %lld are not in ascending order",
                                instr_at(w, k->instr[i - 1]), instr_at(w, at));
        if (rt_ops[g->instr[at].op].cls != RT_K_COMPUTE && g->instr[at].op != RT_OP_CONST)
            return rt_plan_fail(err, "instruction %lld (%s) is not a compute instruction",
                                instr_at(w, at), rt_ops[g->instr[at].op].name);
        if (owner[at] >= 0)
            return rt_plan_fail(err, "instruction %lld belongs to kernel %lld too",
                                instr_at(w, at), kernel_at(w, owner[at]));
        owner[at] = self;
    }
    return true;
}

/* A bias for a result of type t: t's dtype and last dim, 1 elsewhere. */
static bool is_bias(const rt_type *b, const rt_type *t)
{
    if (b->dtype != t->dtype || b->rank < 1 || b->rank > t->rank || t->rank < 1 ||
        b->dim[b->rank - 1] != t->dim[t->rank - 1])
        return false;
    for (int d = 0; d < b->rank - 1; d++)
        if (b->dim[d] != 1)
            return false;
    return true;
}

/* The RT_EPI_* bit instruction in adds to a matmul kernel whose chain so
 * far made buffer cur of type t with epilogue have, its other operand in
 * *other (-1: none); 0 when it is no step plan.h allows. */
static unsigned epilogue_step(const rt_instr *in, int32_t cur, const rt_type *t, unsigned have,
                              int *other)
{
    *other = -1;
    if ((have & (RT_EPI_RELU | RT_EPI_GELU | RT_EPI_DGELU)) || !rt_type_eq(&in->out_t, t))
        return 0;
    if (in->op == RT_OP_GELU_GRAD) { /* (x, the product): alone, x read as the GELU input */
        if (have || in->in[1] != cur || !rt_type_eq(&in->in_t[1], t) || in->in[0] == cur ||
            !rt_type_eq(&in->in_t[0], t))
            return 0;
        *other = 0;
        return RT_EPI_DGELU;
    }
    if (in->op == RT_OP_RELU || in->op == RT_OP_GELU) {
        if (in->in[0] != cur || !rt_type_eq(&in->in_t[0], t))
            return 0;
        return in->op == RT_OP_RELU ? RT_EPI_RELU : RT_EPI_GELU;
    }
    if (in->op != RT_OP_ADD)
        return 0;
    int at = in->in[0] == cur && rt_type_eq(&in->in_t[0], t)   ? 0
             : in->in[1] == cur && rt_type_eq(&in->in_t[1], t) ? 1
                                                            : -1;
    if (at < 0 || in->in[1 - at] == cur)
        return 0;
    *other = 1 - at;
    const rt_type *o = &in->in_t[*other];
    unsigned bit = rt_type_eq(o, t) ? RT_EPI_RESIDUAL : is_bias(o, t) ? RT_EPI_BIAS : 0;
    return have & bit ? 0 : bit;
}

/* Whether buffers a and b share a byte. */
static bool overlap(const rt_program *g, int32_t a, int32_t b)
{
    int64_t a0 = g->buf_offset[a], a1 = a0 + g->buf_bytes[a];
    int64_t b0 = g->buf_offset[b], b1 = b0 + g->buf_bytes[b];
    return a0 < b1 && b0 < a1;
}

/* The parameters a matmul kernel must have: A, B, the bias and the
 * residual where there are, then the result, then with RT_EPI_AUX the
 * gelu's operand (*nout 1 or 2); false when an instruction is not a step
 * of plan.h's chain or the steps make another epilogue. */
static bool matmul_params(const rt_program *g, const rt_kernel *k, int32_t *want,
                          rt_type *want_t, int *nin, int *nout, su_status *err)
{
    const rt_instr *mm = &g->instr[k->instr[0]];
    if (mm->op != RT_OP_MATMUL)
        return rt_plan_fail(err, "its first instruction (%d, %s) is not a matmul", k->instr[0],
                            rt_ops[mm->op].name);
    int32_t extra[2] = {-1, -1}; /* bias, residual */
    rt_type extra_t[2];
    memset(extra_t, 0, sizeof extra_t);
    unsigned have = 0;
    const rt_instr *last = mm;
    for (int i = 1; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        int o;
        unsigned bit = epilogue_step(in, last->out, &mm->out_t, have, &o);
        if (bit == RT_EPI_BIAS && mm->in_t[1].rank < 2)
            bit = 0; /* matrix @ vector: N is 1 for cuBLASLt, the last dim is M */
        if (!bit)
            return rt_plan_fail(err, "instruction %d (%s) is not a bias or residual add, relu, "
                                "gelu or gelu_grad of instruction %d's result that cuBLASLt can "
                                "do after it",
                                k->instr[i], rt_ops[in->op].name, k->instr[i - 1]);
        have |= bit;
        if (o >= 0) {
            extra[bit == RT_EPI_RESIDUAL] = in->in[o];
            extra_t[bit == RT_EPI_RESIDUAL] = in->in_t[o];
        }
        last = in;
    }
    unsigned aux = k->epilogue & RT_EPI_AUX;
    if ((have | aux) != k->epilogue)
        return rt_plan_fail(err, "its epilogue is 0x%x, but its instructions make 0x%x",
                            k->epilogue, have);
    if (aux && !(have & RT_EPI_GELU))
        return rt_plan_fail(err, "its epilogue stores an activation's operand (0x%x) without "
                            "a gelu", RT_EPI_AUX);
    const rt_type *at = &last->in_t[0];
    if ((have & RT_EPI_DGELU) &&
        ((at->dtype != RT_BF16 && at->dtype != RT_F16) || mm->in_t[0].rank < 2 ||
         mm->in_t[1].rank < 2 || (mm->dim & RT_MM_PARTS)))
        return rt_plan_fail(err, "its gelu_grad (0x%x) is of a %s matmul: cuBLASLt's is of "
                            "16-bit matrices, not parts", RT_EPI_DGELU,
                            rt_dtype_name(at->dtype));
    if ((aux || (have & RT_EPI_DGELU)) &&
        (at->rank < 1 || at->dim[at->rank - 1] % RT_EPI_AUX_ALIGN))
        return rt_plan_fail(err, "the gelu's operand it %s has a last dim of %lld, not a "
                            "multiple of %d", aux ? "stores" : "reads",
                            at->rank ? (long long)at->dim[at->rank - 1] : 0LL, RT_EPI_AUX_ALIGN);
    int n = 0;
    for (int i = 0; i < 2; i++) {
        want[n] = mm->in[i];
        want_t[n++] = mm->in_t[i];
    }
    for (int i = 0; i < 2; i++)
        if (extra[i] >= 0) {
            want[n] = extra[i];
            want_t[n++] = extra_t[i];
        }
    *nin = n;
    *nout = aux ? 2 : 1;
    want[n] = last->out;
    want_t[n] = last->out_t;
    if (aux) {
        want[n + 1] = last->in[0];
        want_t[n + 1] = last->in_t[0];
    }
    return true;
}

/* A matmul kernel (plan.h): its chain, its parameters, and a result that
 * shares no byte with what cuBLASLt reads (but the residual may be the
 * very buffer: cuBLASLt's C and D may be one matrix). */
static bool check_matmul(const rt_program *g, const rt_kernel *k, su_status *err)
{
    int32_t want[6];
    rt_type want_t[6];
    int nin = 0, nout = 0;
    char tb[TYPE_LEN];
    if (!matmul_params(g, k, want, want_t, &nin, &nout, err))
        return false;
    if (k->nin != nin || k->nout != nout)
        return rt_plan_fail(err, "has %d inputs and %d outputs; its instructions make %d and %d",
                            k->nin, k->nout, nin, nout);
    for (int j = 0; j < nin + nout; j++)
        if (k->param[j] != want[j] || !rt_type_eq(&k->param_t[j], &want_t[j]))
            return rt_plan_fail(err, "parameter %d is buffer %d as %s; its instructions make it "
                                "buffer %d", j, k->param[j], rt_type_text(tb, &k->param_t[j]), want[j]);
    bool resid = k->epilogue & RT_EPI_RESIDUAL;
    for (int o = nin; o < nin + nout; o++) {
        int32_t d = want[o];
        for (int j = 0; j < o; j++)
            if (overlap(g, d, want[j]) && !(resid && o == nin && j == nin - 1 && want[j] == d))
                return rt_plan_fail(err, "its %s (buffer %d) shares bytes with parameter %d "
                                    "(buffer %d)", o == nin ? "result" : "gelu's operand", d, j,
                                    want[j]);
    }
    return true;
}

/* Each parameter is a buffer of the program that one of the kernel's
 * instructions reads (the first nin) or writes (the rest) as its type. */
static bool check_params(const rt_program *g, const rt_kernel *k, su_status *err)
{
    char tb[TYPE_LEN], what[48];
    if (k->nin < 0 || k->nout < 1 || k->nin > RT_MAX_KPARAMS - k->nout ||
        (!k->param || !k->param_t))
        return rt_plan_fail(err, "has %d inputs and %d outputs; at most %d parameters, one "
                            "output or more", k->nin, k->nout, RT_MAX_KPARAMS);
    for (int j = 0; j < k->nin + k->nout; j++) {
        bool in = j < k->nin, seen = false;
        const rt_type *t = &k->param_t[j];
        int32_t b = k->param[j];
        if (!rt_check_type(t, "parameter", err)) { /* named with its index for the message */
            snprintf(what, sizeof what, "parameter %d", j);
            return rt_check_type(t, what, err);
        }
        if (!check_fit(g, b, t, "parameter", j, err))
            return false;
        for (int i = 0; i < k->ninstr && !seen; i++) {
            const rt_instr *ins = &g->instr[k->instr[i]];
            if (!in)
                seen = ins->out == b && rt_type_eq(&ins->out_t, t);
            for (int o = 0; in && o < ins->nin && !seen; o++)
                seen = ins->in[o] == b && rt_type_eq(&ins->in_t[o], t);
        }
        if (!seen)
            return rt_plan_fail(err, "parameter %d is buffer %d as %s, but no instruction of the "
                                "kernel %s it as that type", j, b, rt_type_text(tb, t),
                                in ? "reads" : "writes");
    }
    return true;
}

/* Each entry of each module runs some kernel, so a plan holds no code it
 * does not run; but the init module's, which the backend runs itself. */
static bool check_modules_used(const rt_plan *p, su_status *err)
{
    int64_t total = 0;
    int32_t *first = malloc(((size_t)p->nmodules + 1) * sizeof *first);
    if (!first)
        return rt_plan_nomem(err);
    for (int32_t i = 0; i < p->nmodules; i++) {
        first[i] = (int32_t)total;
        total += p->module[i].nentry;
    }
    bool *used = calloc((size_t)total + 1, sizeof *used);
    if (!used) {
        free(first);
        return rt_plan_nomem(err);
    }
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].strategy != RT_KS_MATMUL)
            used[first[p->kernel[i].module] + p->kernel[i].entry] = true;
    bool ok = true;
    if (p->init_module >= 0) /* check_init_module: one entry, no kernel's */
        used[first[p->init_module]] = true;
    for (int32_t m = 0; ok && m < p->nmodules; m++)
        for (int32_t e = 0; ok && e < p->module[m].nentry; e++)
            if (!used[first[m] + e])
                ok = rt_plan_fail(err, "module %d: entry %s runs no kernel", m,
                                  p->module[m].entry[e]);
    free(used);
    free(first);
    return ok;
}

/* The init module (plan.h): -1, or a module whose one entry is
 * RT_INIT_ENTRY, which no kernel runs. */
static bool check_init_module(const rt_plan *p, su_status *err)
{
    int32_t m = p->init_module;
    if (m == -1)
        return true;
    if (m < 0 || m >= p->nmodules)
        return rt_plan_fail(err, "the init module %d is out of range (the plan has %d modules)", m,
                            p->nmodules);
    if (p->module[m].nentry != 1 || strcmp(p->module[m].entry[0], RT_INIT_ENTRY) != 0)
        return rt_plan_fail(err, "the init module %d has %d entries (%s%s), not the one entry "
                            RT_INIT_ENTRY, m, p->module[m].nentry, p->module[m].entry[0],
                            p->module[m].nentry > 1 ? ", ..." : "");
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].strategy != RT_KS_MATMUL && p->kernel[i].module == m)
            return rt_plan_fail(err, "kernel %d (%s) runs the init module %d, which only the "
                                "backend runs", i, is_identifier(p->kernel[i].name)
                                                        ? p->kernel[i].name : "?", m);
    return true;
}

/* The tables of modules and kernels, before anything indexes them. */
static bool check_tables(const rt_plan *p, su_status *err)
{
    if (p->nmodules < 0 || (p->nmodules > 0 && !p->module))
        return rt_plan_fail(err, "a table of %d modules is not valid", p->nmodules);
    if (p->nkernels < 0 || (p->nkernels > 0 && !p->kernel))
        return rt_plan_fail(err, "a table of %d kernels is not valid", p->nkernels);
    return true;
}

/* The tables, and every module on its own. The messages name the module
 * ("module 2 (k3_add_gelu): ..."). */
static bool check_module_table(const rt_plan *p, su_status *err)
{
    su_status msg;
    if (!check_tables(p, err))
        return false;
    for (int32_t i = 0; i < p->nmodules; i++)
        if (!check_module(&p->module[i], &msg))
            return rt_plan_wrap(err, &msg, "module %d (%s): ", i,
                                p->module[i].nentry > 0 && p->module[i].entry &&
                                        is_identifier(p->module[i].entry[0])
                                    ? p->module[i].entry[0]
                                    : "?");
    return true;
}

/* Every kernel's stage, and each kernel of stages s0 to s1 - 1: its name,
 * module, launch, instructions and parameters ("kernel 3 (k3_add_gelu) of
 * stage 0: ..."). */
static bool check_stage_kernels(const rt_plan *p, int s0, int s1, const where *w,
                                su_status *err)
{
    su_status msg;
    int64_t total = 0;
    for (int s = s0; s < s1; s++)
        total += p->stage[s].ninstr;
    int32_t *owner = malloc(((size_t)total + 1) * sizeof *owner);
    if (!owner)
        return rt_plan_nomem(err);
    for (int64_t i = 0; i < total; i++)
        owner[i] = -1;
    bool ok = true;
    for (int32_t i = 0; ok && i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        if (k->stage < 0 || k->stage >= p->nstages) {
            ok = rt_plan_fail(err, "kernel %lld: stage %d is out of range (the plan has %d)",
                              kernel_at(w, i), k->stage, p->nstages);
            break;
        }
        if (k->stage < s0 || k->stage >= s1)
            continue;
        int32_t *own = owner;
        for (int s = s0; s < k->stage; s++)
            own += p->stage[s].ninstr;
        const rt_program *g = &p->stage[k->stage];
        ok = check_launch(p, k, &msg) &&
             check_kernel_instrs(g, k, own, i, w, &msg) &&
             check_params(g, k, &msg) &&
             (k->strategy != RT_KS_MATMUL || check_matmul(g, k, &msg));
        if (!ok)
            rt_plan_wrap(err, &msg, "kernel %lld (%s) of stage %d: ", kernel_at(w, i),
                         is_identifier(k->name) ? k->name : "?", k->stage);
    }
    free(owner);
    return ok;
}

/* Every module on its own, then every kernel, and every module is some
 * kernel's. */
static bool check_kernels(const rt_plan *p, su_status *err)
{
    return check_module_table(p, err) && check_stage_kernels(p, 0, p->nstages, NULL, err) &&
           check_init_module(p, err) && check_modules_used(p, err);
}

static bool check_report(const rt_plan *p, su_status *err)
{
    if (p->report_len > 0 && !p->report)
        return rt_plan_fail(err, "the report has %zu bytes but no text", p->report_len);
    if (p->report_len > 0 && memchr(p->report, 0, p->report_len))
        return rt_plan_fail(err, "the report contains a NUL byte");
    return true;
}

/* Stage s of a plan in loop form (rt_plan_check_loops has passed it):
 * its instructions, sources and kernels checked on a copy of the plan with
 * that stage expanded for the sample of its items rt_plan_loop_sample
 * picks, for each body and each tuple of slots its buffers take the items
 * of the least and the greatest microbatch. Every check of an instruction
 * or a kernel reads its microbatch j only through those slots and through
 * its offset, the body's plus j steps, and each check of an offset bounds
 * it (or holds at 0): what holds for two microbatches of one tuple holds
 * for every microbatch between them. So the sample passes exactly when the
 * whole expansion does, and the stage is checked once per tuple, not once
 * per microbatch (128 microbatches of 8 stages: ...). The messages number
 * instructions and kernels as the stage expanded whole would. */
static bool check_loop_stage(const rt_plan *p, int s, bool *which, bool whole,
                             su_status *err)
{
    const rt_program *g = &p->stage[s];
    int32_t *keep = NULL, nkeep = 0;
    if (whole) { /* every item: the reference the sample stands for */
        keep = malloc(((size_t)g->nitem + 1) * sizeof *keep);
        if (!keep)
            return rt_plan_nomem(err);
        for (nkeep = 0; nkeep < g->nitem; nkeep++)
            keep[nkeep] = nkeep;
    } else if (!rt_plan_loop_sample(p, s, &keep, &nkeep, err)) {
        return false;
    }
    int32_t *item = malloc(2 * ((size_t)nkeep + 1) * sizeof *item);
    rt_program *st = malloc((size_t)p->nstages * sizeof *st);
    int64_t *full = malloc(((size_t)g->nitem + 1) * sizeof *full);  /* each item's first instruction */
    int64_t *fullk = malloc(((size_t)g->nitem + 1) * sizeof *fullk); /* and kernel, after base */
    int32_t *nk = calloc((size_t)g->nbody + 1, sizeof *nk);         /* each body's kernels */
    rt_plan copy = *p;
    copy.mem_ = NULL;
    int64_t *iat = NULL, *kat = NULL;
    bool ok = item && st && full && fullk && nk ? true : rt_plan_nomem(err);
    int64_t base = 0; /* the kernels of the stages before s */
    for (int32_t i = 0; ok && i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        if (k->stage >= 0 && k->stage < s)
            base++;
        else if (k->stage == s)
            nk[rt_plan_body_of(g, k->instr[0])]++;
    }
    if (ok) {
        int64_t n = 0, m = 0;
        for (int32_t i = 0; i < g->nitem; i++) {
            int32_t b = g->item[2 * i];
            full[i] = n;
            fullk[i] = m;
            n += rt_plan_body_len(g, b);
            m += nk[b];
        }
        for (int32_t r = 0; r < nkeep; r++) {
            item[2 * r] = g->item[2 * keep[r]];
            item[2 * r + 1] = g->item[2 * keep[r] + 1];
        }
        memcpy(st, p->stage, (size_t)p->nstages * sizeof *st);
        st[s].item = item;
        st[s].nitem = nkeep;
        copy.stage = st;
        which[s] = true;
        ok = rt_plan_expand_stages(&copy, which, err);
        which[s] = false;
    }
    if (ok) {
        iat = malloc(((size_t)copy.stage[s].ninstr + 1) * sizeof *iat);
        kat = malloc(((size_t)copy.nkernels + 1) * sizeof *kat);
        ok = iat && kat ? true : rt_plan_nomem(err);
    }
    if (ok) {
        int64_t n = 0, m = 0;
        for (int32_t r = 0; r < nkeep; r++) {
            int32_t b = item[2 * r];
            for (int64_t q = 0; q < rt_plan_body_len(g, b); q++)
                iat[n++] = full[keep[r]] + q;
            for (int32_t q = 0; q < nk[b]; q++)
                kat[base + m++] = base + fullk[keep[r]] + q;
        }
        int64_t shift = (g->nitem ? fullk[g->nitem - 1] + nk[g->item[2 * (g->nitem - 1)]] : 0) - m;
        for (int64_t i = 0; i < copy.nkernels; i++)
            if (i < base || i >= base + m)
                kat[i] = i < base ? i : i + shift;
        where w = {iat, kat};
        ok = check_programs(&copy, s, s + 1, &w, err) && check_sources(&copy, s, s + 1, err) &&
             check_stage_kernels(&copy, s, s + 1, &w, err);
    }
    rt_plan_free_blocks(copy.mem_);
    free(keep);
    free(item);
    free(st);
    free(full);
    free(fullk);
    free(nk);
    free(iat);
    free(kat);
    return ok;
}

/* A plan with programs in loop form: what expanding needs of every one
 * (rt_plan_check_loops), the checks the buffer tables, I/O entries and
 * modules need no expansion for, then each stage's instructions, sources
 * and kernels (check_loop_stage: a sample of its items expanded on a copy
 * of the plan, freed before the next), then the rest. The checks and
 * their order are rt_plan_validate's but for that: stage by stage. */
static bool validate_loops(const rt_plan *p, su_status *err)
{
    int n = p->nstages;
    if (!rt_plan_check_loops(p, err) || !check_mesh(p, err) || !check_buffers(p, 0, n, err) ||
        !check_ios(p, err) || !check_module_table(p, err))
        return false;
    bool *which = calloc((size_t)n + 1, sizeof *which);
    if (!which)
        return rt_plan_nomem(err);
    for (int s = 0; s < n; s++) {
        bool ok = p->stage[s].nbody
                      ? check_loop_stage(p, s, which, false, err)
                      : check_programs(p, s, s + 1, NULL, err) &&
                            check_sources(p, s, s + 1, err) &&
                            check_stage_kernels(p, s, s + 1, NULL, err);
        if (!ok) {
            free(which);
            return false;
        }
    }
    free(which);
    return check_loss(p, err) && check_init_module(p, err) && check_modules_used(p, err) &&
           check_report(p, err);
}

/* Mesh, then buffer tables, then I/O entries, then instructions, then
 * kernels: each step may index what the steps before it checked. */
bool rt_plan_validate(const rt_plan *p, su_status *err)
{
    if (!p)
        return rt_plan_fail(err, "no plan");
    for (int s = 0; p->stage && s < p->nstages; s++)
        if (p->stage[s].nbody)
            return validate_loops(p, err);
    int n = p->nstages;
    return check_mesh(p, err) && check_buffers(p, 0, n, err) && check_ios(p, err) &&
           check_programs(p, 0, n, NULL, err) && check_sources(p, 0, n, err) &&
           check_loss(p, err) && check_kernels(p, err) && check_report(p, err);
}

bool rt_plan_check_refs(const rt_plan *p, int s, su_status *err)
{
    const rt_program *g = &p->stage[s];
    if (g->nbuf < 0 || g->ninstr < 0 || (g->ninstr > 0 && !g->instr))
        return rt_plan_fail(err, "stage %d: a program of %d instructions over %d buffers is not "
                            "valid", s, g->ninstr, g->nbuf);
    for (int32_t k = 0; k < g->ninstr; k++) {
        const rt_instr *in = &g->instr[k];
        bool ok = in->nin <= RT_MAX_IN && in->out >= -1 && in->out < g->nbuf;
        for (int i = 0; ok && i < in->nin; i++)
            ok = in->in[i] >= 0 && in->in[i] < g->nbuf;
        if (!ok)
            return rt_plan_fail(err, "stage %d, instruction %d: an operand or the result is out "
                                "of range (the program has %d buffers)", s, k, g->nbuf);
    }
    return rt_plan_check_kernel_refs(p, s, err);
}

bool rt_plan_check_kernel_refs(const rt_plan *p, int s, su_status *err)
{
    const rt_program *g = &p->stage[s];
    for (int32_t i = 0; i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        if (k->stage != s)
            continue;
        bool ok = k->ninstr >= 1 && k->instr && k->nin >= 0 && k->nout >= 0 &&
                  k->nin <= RT_MAX_KPARAMS - k->nout && (k->param || !(k->nin + k->nout));
        for (int32_t q = 0; ok && q < k->ninstr; q++)
            ok = k->instr[q] >= 0 && k->instr[q] < g->ninstr;
        for (int32_t q = 0; ok && k->param && q < k->nin + k->nout; q++)
            ok = k->param[q] >= 0 && k->param[q] < g->nbuf;
        if (!ok)
            return rt_plan_fail(err, "kernel %d of stage %d: an instruction or a parameter is "
                                "out of range", i, s);
    }
    return true;
}

/* rt_plan_validate_stage of a stage in loop form: its structure, then its
 * instructions on a sample of its items, or on every item (whole). */
static bool validate_loop_stage(const rt_plan *p, int s, bool whole, su_status *err)
{
    bool *which = calloc((size_t)p->nstages + 1, sizeof *which);
    if (!which)
        return rt_plan_nomem(err);
    bool ok = check_tables(p, err) && rt_plan_check_loop_stage(p, s, err) &&
              check_buffers(p, s, s + 1, err) && check_loop_stage(p, s, which, whole, err);
    free(which);
    return ok;
}

bool rt_plan_validate_stage_whole(const rt_plan *p, int s, su_status *err)
{
    if (!p || !p->stage || s < 0 || s >= p->nstages)
        return rt_plan_fail(err, "no stage %d to check", s);
    return p->stage[s].nbody ? validate_loop_stage(p, s, true, err)
                             : rt_plan_validate_stage(p, s, err);
}

bool rt_plan_validate_stage(const rt_plan *p, int s, su_status *err)
{
    if (!p || !p->stage || s < 0 || s >= p->nstages)
        return rt_plan_fail(err, "no stage %d to check", s);
    if (p->stage[s].nbody)
        return validate_loop_stage(p, s, false, err);
    return check_buffers(p, s, s + 1, err) && check_programs(p, s, s + 1, NULL, err) &&
           check_sources(p, s, s + 1, err) && check_tables(p, err) &&
           check_stage_kernels(p, s, s + 1, NULL, err); /* the modules: the rest's, once */
}

bool rt_plan_validate_rest(const rt_plan *p, su_status *err)
{
    if (!p)
        return rt_plan_fail(err, "no plan");
    /* the whole expansion bounded: each stage's half bounds its own */
    return rt_plan_check_loops(p, err) && check_mesh(p, err) && check_ios(p, err) &&
           check_loss(p, err) && check_module_table(p, err) &&
           check_stage_kernels(p, 0, 0, NULL, err) &&
           check_init_module(p, err) && check_modules_used(p, err) && check_report(p, err);
}
