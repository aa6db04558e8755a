/* plan_text.c: a plan as text (`shardc --emit schedule`): the I/O table
 * (with the buffers params and states live in, their updates and the
 * loss), then per stage the instruction list every rank of the stage
 * runs, exactly as the runtime will run it. In a plan of several
 * stages each entry says its stage ('input "x" : ... on stage 0'). A
 * kernel is named at its anchor, the instruction where a GPU backend
 * launches it, with its launch geometry and the instructions it runs. */
#include "runtime/plan/plan_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void axes_str(const rt_plan *p, const uint8_t *axes, int n, su_buf *b)
{
    for (int k = 0; k < n; k++)
        su_buf_printf(b, "%s%s", k ? ", " : "", axes[k] < p->naxes ? p->axis_name[axes[k]] : "?");
}

static void sharding_str(const rt_plan *p, const rt_io *io, su_buf *b)
{
    su_buf_puts(b, "shard(");
    for (int d = 0; d < io->type.rank; d++) {
        if (d)
            su_buf_puts(b, ", ");
        int n = io->sh.naxes[d];
        if (n == 0)
            su_buf_putc(b, '_');
        else if (n == 1)
            axes_str(p, io->sh.axes[d], 1, b);
        else {
            su_buf_putc(b, '(');
            axes_str(p, io->sh.axes[d], n, b);
            su_buf_putc(b, ')');
        }
    }
    su_buf_putc(b, ')');
}

/* "send %12 -> stage 1 : f32[2, 128]" (a send has no result) and
 * "%7 = recv <- stage 0 : f32[2, 128]", with their bytes. */
static void p2p_str(const rt_instr *in, su_buf *b)
{
    char tb[160];
    if (in->op == RT_OP_SEND)
        su_buf_printf(b, "  send %%%d -> stage %lld", (int)in->in[0], (long long)in->dim);
    else
        su_buf_printf(b, "  %%%d = recv <- stage %lld", (int)in->out, (long long)in->dim);
    su_buf_printf(b, " : %s    // %lld bytes\n", rt_type_str(&in->out_t, tb, sizeof tb),
                  (long long)rt_type_bytes(&in->out_t));
}

static void instr_str(const rt_plan *p, const rt_instr *in, su_buf *b)
{
    char tb[160];
    if (in->op == RT_OP_SEND || in->op == RT_OP_RECV) {
        p2p_str(in, b);
        return;
    }
    su_buf_printf(b, "  %%%d = %s", (int)in->out, rt_ops[in->op].name);
    for (int i = 0; i < in->nin; i++)
        su_buf_printf(b, "%s %%%d", i ? "," : "", (int)in->in[i]);
    bool open = false;
#define ATTR(...)                                                                                 \
    do {                                                                                          \
        su_buf_puts(b, open ? ", " : " {");                                                       \
        open = true;                                                                              \
        su_buf_printf(b, __VA_ARGS__);                                                            \
    } while (0)
    char num[32];
    switch (in->op) {
    case RT_OP_INPUT:
    case RT_OP_PARAM:
    case RT_OP_STATE:
        ATTR("name = \"%s\"", in->io >= 0 && in->io < p->nio ? p->io[in->io].name : "?");
        break;
    case RT_OP_CONST:
        su_fmt_double(num, in->value);
        ATTR("value = %s", num);
        break;
    case RT_OP_SUM:
    case RT_OP_MEAN:
    case RT_OP_AMAX:
        ATTR("axis = %lld, keepdims = %s", (long long)in->axis, in->keepdims ? "true" : "false");
        break;
    case RT_OP_SOFTMAX:
        ATTR("axis = %lld", (long long)in->axis);
        break;
    case RT_OP_MATMUL:
        if (in->dim)
            ATTR("trans = %s", in->dim == RT_TRANS_A ? "a" : in->dim == RT_TRANS_B ? "b" : "ab");
        break;
    case RT_OP_LAYERNORM:
    case RT_OP_RMSNORM:
        su_fmt_double(num, in->eps);
        ATTR("eps = %s", num);
        break;
    case RT_OP_ATTENTION:
    case RT_OP_ATTN_PROBS:
    case RT_OP_ATTN_STATS:
    case RT_OP_ATTN_DQ:
    case RT_OP_ATTN_DK:
    case RT_OP_ATTN_DV:
        ATTR("causal = %s", in->causal ? "true" : "false");
        if (in->keepdims)
            ATTR("heads_inner = true");
        break;
    case RT_OP_MOMENTUM:
        su_fmt_double(num, in->momentum);
        ATTR("momentum = %s", num);
        su_fmt_double(num, in->wd);
        ATTR("wd = %s", num);
        break;
    case RT_OP_SGD:
        su_fmt_double(num, in->lr);
        ATTR("lr = %s", num);
        su_fmt_double(num, in->wd);
        ATTR("wd = %s", num);
        break;
    case RT_OP_ADAM_M:
        su_fmt_double(num, in->beta1);
        ATTR("beta1 = %s", num);
        break;
    case RT_OP_ADAM_V:
        su_fmt_double(num, in->beta2);
        ATTR("beta2 = %s", num);
        break;
    case RT_OP_ADAMW: {
        static const char *const names[] = {"eps", "lr", "beta1", "beta2", "wd"};
        const double v[] = {in->eps, in->lr, in->beta1, in->beta2, in->wd};
        for (int k = 0; k < 5; k++) {
            su_fmt_double(num, v[k]);
            ATTR("%s = %s", names[k], num);
        }
        break;
    }
    case RT_OP_CHECK_IDS:
    case RT_OP_CHECK_LABELS:
        ATTR("bound = %lld", (long long)in->dim);
        break;
    case RT_OP_NARROW:
        ATTR("dim = %lld", (long long)in->dim);
        ATTR("offset = %lld", (long long)in->offset);
        break;
    case RT_OP_CONCAT:
        ATTR("dim = %lld", (long long)in->dim);
        break;
    case RT_OP_TRANSPOSE:
        ATTR("perm = [");
        for (int i = 0; i < in->nlist; i++)
            su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)in->list[i]);
        su_buf_putc(b, ']');
        break;
    default:
        break;
    }
    if (in->op == RT_OP_SLICE || in->op == RT_OP_ALL_GATHER || in->op == RT_OP_REDUCE_SCATTER ||
        in->op == RT_OP_ALL_TO_ALL)
        ATTR("dim = %lld", (long long)in->dim);
    if (in->op == RT_OP_ALL_TO_ALL)
        ATTR("dim2 = %lld", (long long)in->dim2);
    if (in->op == RT_OP_ALL_REDUCE && in->dim == RT_REDUCE_MAX)
        ATTR("reduce = max");
    if (in->op == RT_OP_SLICE || rt_ops[in->op].cls == RT_K_COMM) {
        ATTR("axes = [");
        axes_str(p, in->axes, in->naxes, b);
        su_buf_putc(b, ']');
    }
#undef ATTR
    if (open)
        su_buf_putc(b, '}');
    su_buf_printf(b, " : %s", rt_type_str(&in->out_t, tb, sizeof tb));
    if (rt_ops[in->op].cls == RT_K_COMM)
        su_buf_printf(b, "    // %lld bytes", (long long)rt_type_bytes(&in->in_t[0]));
    su_buf_putc(b, '\n');
}

/* 'output "y" : f32[8, 4] shard(dp, _) = %7'; a param or a state names its
 * buffer and, in a training step, the buffer of its new value
 * ("= %2 <- %9"); the loss says so. */
static void io_str(const rt_plan *p, int i, su_buf *b)
{
    static const char *const kinds[] = {"input", "param", "output", "state"};
    const rt_io *io = &p->io[i];
    char tb[160];
    su_buf_printf(b, "%s \"%s\" : %s ", kinds[io->kind <= RT_IO_STATE ? io->kind : 0],
                  io->name, rt_type_str(&io->type, tb, sizeof tb));
    sharding_str(p, io, b);
    if (io->kind != RT_IO_INPUT)
        su_buf_printf(b, " = %%%d", (int)io->buffer);
    if (io->update >= 0)
        su_buf_printf(b, " <- %%%d", (int)io->update);
    if (p->nstages > 1)
        su_buf_printf(b, " on stage %d", (int)io->stage);
    if (i == p->loss)
        su_buf_puts(b, "    // the loss");
    su_buf_putc(b, '\n');
}

/* Per instruction of stage st, the kernel anchored there, -1 none, into
 * at[ninstr] (malloc'd; NULL when out of memory: kernel_at then looks). */
static int32_t *anchors(const rt_plan *p, int st)
{
    int32_t n = p->stage[st].ninstr, *at = malloc(((size_t)n + 1) * sizeof *at);
    for (int32_t i = 0; at && i < n; i++)
        at[i] = -1;
    for (int k = 0; at && k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->stage == st && kr->ninstr > 0 && kr->instr[kr->ninstr - 1] >= 0 &&
            kr->instr[kr->ninstr - 1] < n && at[kr->instr[kr->ninstr - 1]] < 0)
            at[kr->instr[kr->ninstr - 1]] = k;
    }
    return at;
}

/* The kernel of stage st anchored at instruction i, or NULL (from at,
 * anchors', when there is one). */
static const rt_kernel *kernel_at(const rt_plan *p, int st, int i, const int32_t *at)
{
    if (at)
        return at[i] >= 0 ? &p->kernel[at[i]] : NULL;
    for (int k = 0; k < p->nkernels; k++) {
        const rt_kernel *kr = &p->kernel[k];
        if (kr->stage == st && kr->ninstr > 0 && kr->instr[kr->ninstr - 1] == i)
            return kr;
    }
    return NULL;
}

/* After the anchor's line (its newline taken back): "    // kernel
 * k0_add_gelu (elementwise, grid 64, block 256, 0 shared bytes): runs %6,
 * %7; reads %5, %3; writes %7", the instructions by their results; a
 * kernel running another's code says whose ("k9_add_gelu as k0_add_gelu"). */
static void kernel_str(const rt_plan *p, const rt_program *g, const rt_kernel *k, su_buf *b)
{
    static const char *const epi[] = {"bias", "residual", "relu", "gelu"};
    if (b->len && b->s[b->len - 1] == '\n')
        b->s[--b->len] = 0;
    su_buf_printf(b, "    // kernel %s", k->name);
    if (k->strategy == RT_KS_MATMUL) { /* "(cuBLASLt, epilogue bias, gelu)" */
        su_buf_puts(b, " (cuBLASLt, epilogue");
        for (int i = 0; i < 4; i++)
            if (k->epilogue & (1 << i))
                su_buf_printf(b, "%s %s", k->epilogue & ((1 << i) - 1) ? "," : "", epi[i]);
        su_buf_puts(b, k->epilogue ? "): runs" : " none): runs");
    } else {
        const char *entry = p->module[k->module].entry[k->entry];
        if (strcmp(entry, k->name) != 0)
            su_buf_printf(b, " as %s", entry);
        su_buf_printf(b, " (%s, grid %lld, block %d, %d shared bytes): runs",
                      rt_kernel_strategy_name(k->strategy), (long long)k->grid, (int)k->block,
                      (int)k->shared_bytes);
    }
    for (int i = 0; i < k->ninstr; i++)
        su_buf_printf(b, "%s %%%d", i ? "," : "", (int)g->instr[k->instr[i]].out);
    for (int j = 0; j < k->nin + k->nout; j++)
        su_buf_printf(b, "%s %%%d", j == k->nin ? "; writes" : j == 0 ? "; reads" : ",",
                      (int)k->param[j]);
    su_buf_putc(b, '\n');
}

/* Stage st's instructions, each kernel after its anchor's line (at:
 * anchors', or NULL), into b. */
typedef struct stage_text {
    const rt_plan *p;
    int st;
    su_buf *b;
    int32_t *at;
} stage_text;

static void stage_instrs(void *arg)
{
    stage_text *t = arg;
    const rt_program *prog = &t->p->stage[t->st];
    for (int i = 0; i < prog->ninstr; i++) {
        instr_str(t->p, &prog->instr[i], t->b);
        const rt_kernel *k = kernel_at(t->p, t->st, i, t->at);
        if (k)
            kernel_str(t->p, prog, k, t->b);
    }
}

/* The code kernels of stage st and their modules, as below. */
static void stage_modules_str(const rt_plan *p, int st, su_buf *b)
{
    const rt_kernel *first = NULL;
    int n = 0, nmod = 0;
    for (int m = 0; m < p->nmodules; m++) { /* the modules this stage runs */
        bool used = false;
        for (int k = 0; k < p->nkernels && !used; k++)
            used = p->kernel[k].stage == st && p->kernel[k].module == m;
        nmod += used;
    }
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernel[k].stage == st && p->kernel[k].strategy != RT_KS_MATMUL) {
            first = first ? first : &p->kernel[k];
            n++;
        }
    if (!first)
        return;
    const rt_module *m = &p->module[first->module];
    su_buf_printf(b, ", %d kernel%s of %d module%s (cubins for", n, n == 1 ? "" : "s", nmod,
                  nmod == 1 ? "" : "s");
    for (int i = 0; i < m->ncubin; i++)
        su_buf_printf(b, "%s %s", i ? "," : "", m->cubin[i].arch);
    su_buf_printf(b, "; PTX for %s)", m->ptx.arch);
}

/* ", 3 kernels of 2 modules (cubins for sm_80, sm_90; PTX for compute_90)"
 * from the module of the stage's first kernel, then ", 2 matmuls through
 * cuBLASLt with epilogues" when there are; nothing without kernels. */
static void stage_kernels_str(const rt_plan *p, int st, su_buf *b)
{
    int nmm = 0;
    for (int k = 0; k < p->nkernels; k++)
        nmm += p->kernel[k].stage == st && p->kernel[k].strategy == RT_KS_MATMUL;
    stage_modules_str(p, st, b);
    if (nmm)
        su_buf_printf(b, ", %d matmul%s through cuBLASLt with epilogues", nmm,
                      nmm == 1 ? "" : "s");
}

void rt_plan_print_schedule(const rt_plan *p, su_buf *b)
{
    rt_plan_print_schedule_loops(p, NULL, b);
}

void rt_plan_print_schedule_loops(const rt_plan *p, const rt_loop_form *loops, su_buf *b)
{
    su_buf_puts(b, "mesh");
    for (int a = 0; a < p->naxes; a++)
        su_buf_printf(b, "%s %s = %lld", a ? "," : "", p->axis_name[a], (long long)p->axis_size[a]);
    if (!p->naxes)
        su_buf_puts(b, " (one rank)");
    su_buf_printf(b, "\n// %lld rank%s, %d stage%s\n", (long long)rt_plan_ranks(p),
                  rt_plan_ranks(p) == 1 ? "" : "s", (int)p->nstages, p->nstages == 1 ? "" : "s");
    if (p->init_module >= 0)
        su_buf_printf(b, "// made from the seed on a GPU by module %d (" RT_INIT_ENTRY ")\n",
                      (int)p->init_module);
    for (int i = 0; i < p->nio; i++)
        io_str(p, i, b);
    for (int st = 0; st < p->nstages; st++) {
        const rt_program *prog = &p->stage[st];
        su_buf_printf(b, "\nstage %d", st);
        if (p->stage_axis >= 0)
            su_buf_printf(b, " (%s = %d)", p->axis_name[p->stage_axis], st);
        else
            su_buf_puts(b, " (every rank)");
        su_buf_printf(b, ": %d instructions, %d buffers in an arena of %lld bytes",
                      (int)prog->ninstr, (int)prog->nbuf, (long long)prog->arena_bytes);
        stage_kernels_str(p, st, b);
        su_buf_putc(b, '\n');
        if (loops && loops[st].nbody > 0)
            su_buf_printf(b, "// in the plan: %d bod%s of %d instructions, run in %d items for %d "
                          "microbatch%s\n", (int)loops[st].nbody, loops[st].nbody == 1 ? "y" : "ies",
                          (int)loops[st].ninstr, (int)loops[st].nitem, (int)loops[st].nmb,
                          loops[st].nmb == 1 ? "" : "es");
        stage_text t = {p, st, b, anchors(p, st)};
        bool ok = su_guarded(b->oom, stage_instrs, &t); /* at is freed either way */
        free(t.at);
        if (!ok)
            su_oom(b->oom);
    }
}
