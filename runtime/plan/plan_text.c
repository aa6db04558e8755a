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

/* An attention instruction's heads_inner (keepdims, a mask): "true" for
 * every operand it may name, else the list of those it names. */
static const char *heads_text(const rt_instr *in, char *buf, size_t n)
{
    static const char *const qkv[] = {"q", "k", "v", "dy"}, *const qkdy[] = {"q", "k", "dy"},
                             *const ydy[] = {"y", "dy"};
    if (in->keepdims == rt_heads_all(in->op))
        return "true";
    size_t at = 0;
    at += (size_t)snprintf(buf, n, "[");
    for (int i = 0, k = 0; i < 8 && at < n; i++) {
        if (!(in->keepdims >> i & 1))
            continue;
        const char *name = 1 << i == RT_HEADS_RESULT ? "result"
                           : i >= rt_attn_layout_operands(in->op) ? "?"
                           : in->op == RT_OP_ATTN_DV ? qkdy[i]
                           : in->op == RT_OP_ATTN_DELTA ? ydy[i] : qkv[i];
        at += (size_t)snprintf(buf + at, n - at, "%s%s", k++ ? ", " : "", name);
    }
    if (at < n)
        snprintf(buf + at, n - at, "]");
    return buf;
}

static void instr_str(const rt_plan *p, const rt_instr *in, su_buf *b)
{
    char tb[160], hb[64];
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
        if (in->dim & (RT_TRANS_A | RT_TRANS_B))
            ATTR("trans = %s", (in->dim & 3) == RT_TRANS_A   ? "a"
                               : (in->dim & 3) == RT_TRANS_B ? "b"
                                                             : "ab");
        if (in->dim & RT_MM_PARTS)
            ATTR("parts = true");
        break;
    case RT_OP_SPLIT3:
        ATTR("dim = %lld", (long long)in->dim);
        if (in->dim2)
            ATTR("reversed = true");
        break;
    case RT_OP_LAYERNORM:
    case RT_OP_RMSNORM:
    case RT_OP_LAYERNORM_RSTD:
    case RT_OP_RMSNORM_RSTD:
        su_fmt_double(num, in->eps);
        ATTR("eps = %s", num);
        break;
    case RT_OP_ATTENTION:
    case RT_OP_ATTN_PROBS:
    case RT_OP_ATTN_STATS:
    case RT_OP_ATTN_DQ:
    case RT_OP_ATTN_DK:
    case RT_OP_ATTN_DV:
    case RT_OP_ATTN_LSE:
        ATTR("causal = %s", in->causal ? "true" : "false");
        if (in->keepdims)
            ATTR("heads_inner = %s", heads_text(in, hb, sizeof hb));
        break;
    case RT_OP_ATTN_DELTA:
        if (in->keepdims)
            ATTR("heads_inner = %s", heads_text(in, hb, sizeof hb));
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

/* The mesh and the I/O table. */
static void plan_head(const rt_plan *p, su_buf *b)
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
}

/* "stage 1 (pp = 1)", or "(every rank)" without a pipeline. */
static void stage_name(const rt_plan *p, int st, su_buf *b)
{
    su_buf_printf(b, "\nstage %d", st);
    if (p->stage_axis >= 0)
        su_buf_printf(b, " (%s = %d)", p->axis_name[p->stage_axis], st);
    else
        su_buf_puts(b, " (every rank)");
}

/* Stage st's instructions as stage_instrs prints them. */
static void print_instrs(const rt_plan *p, int st, su_buf *b)
{
    stage_text t = {p, st, b, anchors(p, st)};
    bool ok = su_guarded(b->oom, stage_instrs, &t); /* at is freed either way */
    free(t.at);
    if (!ok)
        su_oom(b->oom);
}

void rt_plan_print_schedule_loops(const rt_plan *p, const rt_loop_form *loops, su_buf *b)
{
    plan_head(p, b);
    for (int st = 0; st < p->nstages; st++) {
        const rt_program *prog = &p->stage[st];
        stage_name(p, st, b);
        su_buf_printf(b, ": %d instructions, %d buffers in an arena of %lld bytes",
                      (int)prog->ninstr, (int)prog->nbuf, (long long)prog->arena_bytes);
        stage_kernels_str(p, st, b);
        su_buf_putc(b, '\n');
        if (loops && loops[st].nbody > 0)
            su_buf_printf(b, "// in the plan: %d bod%s of %d instructions, run in %d items for %d "
                          "microbatch%s\n", (int)loops[st].nbody, loops[st].nbody == 1 ? "y" : "ies",
                          (int)loops[st].ninstr, (int)loops[st].nitem, (int)loops[st].nmb,
                          loops[st].nmb == 1 ? "" : "es");
        print_instrs(p, st, b);
    }
}

/* ---- the loop form as the plan holds it (`--emit loops`) ---- */

/* The longest run of whole repeats of a pattern at x[i..n): its period
 * (1..64 elements, the shortest of the longest runs) into *period and its
 * repeats, at least 2 (else 0). x's elements are `stride` int32s each
 * (x[k * stride ..]), compared whole; with `counting`, each repeat's last
 * int32 (an item's microbatch) is *step more than the repeat before's
 * (step >= 1, the same for every element of the pattern), else equal. */
static int64_t repeats(const int32_t *x, int stride, int64_t i, int64_t n, bool counting,
                       int *period, int32_t *step)
{
    int64_t best = 0;
    *period = 0;
    *step = 0;
    for (int pd = 1; pd <= 64 && i + 2 * pd <= n; pd++) {
        int32_t c = 0;
        if (counting) {
            c = x[(i + pd) * stride + stride - 1] - x[i * stride + stride - 1];
            if (c < 1)
                continue;
        }
        int64_t r = 1;
        for (;; r++) {
            bool same = i + (r + 1) * pd <= n;
            for (int q = 0; same && q < pd; q++) {
                const int32_t *a = &x[(i + q) * stride], *e = &x[(i + r * pd + q) * stride];
                for (int k = 0; same && k < stride; k++)
                    same = (int64_t)e[k] == a[k] + (k == stride - 1 ? (int64_t)r * c : 0);
            }
            if (!same)
                break;
        }
        if (r >= 2 && r * pd > best * *period) {
            best = r;
            *period = pd;
            *step = c;
        }
    }
    return best;
}

/* A slot map's values for microbatches 0 .. nmb - 1, a pattern repeated
 * written once: "0 (1 2 3 0) x 3 1 2 3", "0 (1) x 15". */
static void slots_str(const int32_t *v, int32_t nmb, su_buf *b)
{
    for (int64_t i = 0; i < nmb;) {
        int pd;
        int32_t step;
        int64_t r = repeats(v, 1, i, nmb, false, &pd, &step);
        if (r * pd >= 3) {
            su_buf_puts(b, " (");
            for (int q = 0; q < pd; q++)
                su_buf_printf(b, "%s%d", q ? " " : "", (int)v[i + q]);
            su_buf_printf(b, ") x %lld", (long long)r);
            i += r * pd;
        } else {
            su_buf_printf(b, " %d", (int)v[i++]);
        }
    }
}

/* " b3(m - 1)": item k of a loop over m, m0 its first microbatch. */
static void item_str(const rt_program *g, int64_t k, int32_t m0, su_buf *b)
{
    int32_t d = g->item[2 * k + 1] - m0;
    su_buf_printf(b, " b%d(m", (int)g->item[2 * k]);
    if (d)
        su_buf_printf(b, " %c %d", d > 0 ? '+' : '-', (int)(d > 0 ? d : -d));
    su_buf_putc(b, ')');
}

/* The items of a program in loop form, in order, a run of them that
 * repeats with each microbatch moved on by the same step written once:
 * "b2(m) b1(m + 4) for m = 1 .. 3" runs b2 for m and b1 for m + 4, m from
 * 1 to 3 in turn; "... for m = 0 .. 12 step 4", m = 0, 4, 8 and 12; a
 * body of more than 8 items after "for m = 3 .. 55 step 4:", 8 a line. */
static void items_str(const rt_program *g, su_buf *b)
{
    int on_line = 0;
    for (int64_t i = 0; i < g->nitem;) {
        int pd;
        int32_t step;
        int64_t r = repeats(g->item, 2, i, g->nitem, true, &pd, &step);
        if (r >= 3) {
            if (on_line)
                su_buf_putc(b, '\n');
            int32_t m0 = g->item[2 * i + 1];
            su_buf_printf(b, "%s", pd > 8 ? "    for" : "   ");
            for (int q = 0; q < pd && pd <= 8; q++)
                item_str(g, i + q, m0, b);
            su_buf_printf(b, "%s m = %d .. %lld", pd > 8 ? "" : " for", (int)m0,
                          (long long)m0 + (r - 1) * step);
            if (step > 1)
                su_buf_printf(b, " step %d", (int)step);
            if (pd > 8) { /* a long body, on lines of its own */
                su_buf_putc(b, ':');
                for (int q = 0; q < pd; q++) {
                    if (q % 8 == 0)
                        su_buf_puts(b, "\n       ");
                    item_str(g, i + q, m0, b);
                }
            }
            su_buf_putc(b, '\n');
            on_line = 0;
            i += r * pd;
            continue;
        }
        su_buf_printf(b, "%s b%d(%d)", on_line ? "" : "   ", (int)g->item[2 * i],
                      (int)g->item[2 * i + 1]);
        if (++on_line == 12) {
            su_buf_putc(b, '\n');
            on_line = 0;
        }
        i++;
    }
    if (on_line)
        su_buf_putc(b, '\n');
}

/* Stage st in loop form: its slotted buffers and slot maps, each body's
 * instructions (with the kernels anchored there, and the step of an offset
 * that moves with the microbatch) and how often it runs, then the items. */
static void loop_stage(const rt_plan *p, int st, su_buf *b)
{
    const rt_program *g = &p->stage[st];
    stage_name(p, st, b);
    su_buf_printf(b, ": in loop form, %d bod%s of %d instructions run in %d items for %d "
                  "microbatch%s; %d buffers in an arena of %lld bytes", (int)g->nbody,
                  g->nbody == 1 ? "y" : "ies", (int)g->ninstr, (int)g->nitem, (int)g->nmb,
                  g->nmb == 1 ? "" : "es", (int)g->nbuf, (long long)g->arena_bytes);
    stage_kernels_str(p, st, b);
    su_buf_putc(b, '\n');
    if (g->buf_slots) {
        su_buf_puts(b, "// a slotted buffer is a value of one microbatch, held in the copy of "
                       "its slot in its slot map\n");
        for (int32_t k = 0; k < g->nbuf; k++) {
            int32_t map = g->buf_slots[k];
            if (map < 0)
                continue;
            int32_t ns = 0;
            for (int32_t j = 0; j < g->nmb; j++)
                ns = g->slotmap[(int64_t)map * g->nmb + j] + 1 > ns
                         ? g->slotmap[(int64_t)map * g->nmb + j] + 1
                         : ns;
            su_buf_printf(b, "//   %%%d: slot map %d, copies", (int)k, (int)map);
            for (int32_t q = 0; q < ns; q++)
                su_buf_printf(b, " %%%d", (int)g->copy_buf[g->buf_copy_at[k] + q]);
            su_buf_putc(b, '\n');
        }
        su_buf_puts(b, "// each microbatch's slot, microbatch 0 first (\"(1 2) x 3\": 1 2 1 2 1 2)\n");
        for (int32_t map = 0; map < g->nslotmap; map++) {
            su_buf_printf(b, "//   slot map %d:", (int)map);
            slots_str(&g->slotmap[(int64_t)map * g->nmb], g->nmb, b);
            su_buf_putc(b, '\n');
        }
    }
    int32_t *at = anchors(p, st);
    for (int32_t k = 0; k < g->nbody; k++) {
        int32_t first = g->body_start[k];
        int32_t end = k + 1 < g->nbody ? g->body_start[k + 1] : g->ninstr;
        int64_t runs = 0;
        int32_t lo = -1, hi = -1;
        for (int32_t i = 0; i < g->nitem; i++)
            if (g->item[2 * i] == k) {
                int32_t mb = g->item[2 * i + 1];
                lo = !runs || mb < lo ? mb : lo;
                hi = !runs || mb > hi ? mb : hi;
                runs++;
            }
        su_buf_printf(b, "body b%d: %d instruction%s, run %lld time%s", (int)k, (int)(end - first),
                      end - first == 1 ? "" : "s", (long long)runs, runs == 1 ? "" : "s");
        if (runs == 1)
            su_buf_printf(b, " (microbatch %d)", (int)lo);
        else if (runs > 1)
            su_buf_printf(b, " (microbatches %d to %d)", (int)lo, (int)hi);
        su_buf_putc(b, '\n');
        for (int32_t i = first; i < end; i++) {
            instr_str(p, &g->instr[i], b);
            int64_t step = g->instr_step ? g->instr_step[i] : 0;
            if (step) {
                if (b->len && b->s[b->len - 1] == '\n')
                    b->s[--b->len] = 0;
                su_buf_printf(b, "    // offset %lld + %lld per microbatch\n",
                              (long long)g->instr[i].offset, (long long)step);
            }
            const rt_kernel *kr = kernel_at(p, st, i, at);
            if (kr)
                kernel_str(p, g, kr, b);
        }
    }
    free(at);
    su_buf_puts(b, "items, in order: body(microbatch)\n");
    items_str(g, b);
}

void rt_plan_print_loops(const rt_plan *p, su_buf *b)
{
    plan_head(p, b);
    for (int st = 0; st < p->nstages; st++) {
        const rt_program *prog = &p->stage[st];
        if (prog->nbody > 0) {
            loop_stage(p, st, b);
            continue;
        }
        stage_name(p, st, b);
        su_buf_printf(b, ": %d instructions, %d buffers in an arena of %lld bytes",
                      (int)prog->ninstr, (int)prog->nbuf, (long long)prog->arena_bytes);
        stage_kernels_str(p, st, b);
        su_buf_putc(b, '\n');
        print_instrs(p, st, b);
    }
}
