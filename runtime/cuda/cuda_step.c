/* cuda_step.c: the CUDA backend's decisions that need no GPU (cuda_step.h):
 * each instruction's role in a graph run, the spans captured as graphs,
 * and the kernels' error words with their messages. */
#include "runtime/cuda/cuda_step.h"

#include "support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t *rt_cuda_kernel_map(const rt_plan *p, int st)
{
    const rt_program *g = &p->stage[st];
    int32_t *at = malloc(((size_t)g->ninstr + 1) * sizeof *at);
    if (!at)
        return NULL;
    for (int i = 0; i < g->ninstr; i++)
        at[i] = -1;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernel[k].stage == st)
            for (int j = 0; j < p->kernel[k].ninstr; j++)
                at[p->kernel[k].instr[j]] = k;
    return at;
}

bool rt_cuda_on_host(const rt_instr *in)
{
    if (in->out_t.dtype != RT_I32 && in->out_t.dtype != RT_BOOL)
        return false;
    for (int i = 0; i < in->nin; i++)
        if (in->in_t[i].dtype != RT_I32 && in->in_t[i].dtype != RT_BOOL)
            return false;
    return true;
}

/* Whether a compute instruction outside kernels moves no byte: a copy onto
 * itself, an extract that is a view of its bucket's columns (as cuda.c's
 * run_compute and run_bucket skip them). */
static bool in_place(const rt_program *g, const rt_instr *in)
{
    const int64_t *off = g->buf_offset;
    if (in->op == RT_OP_COPY)
        return off[in->out] == off[in->in[0]];
    if (in->op == RT_OP_EXTRACT) {
        int64_t es = rt_dtype_size(in->in_t[0].dtype);
        return in->in_t[0].dim[0] == 1 && off[in->out] == off[in->in[0]] + in->offset * es;
    }
    return false;
}

uint32_t rt_cuda_const_word(const rt_instr *in, int *bytes)
{
    float f = (float)in->value;
    uint32_t w;
    *bytes = 2;
    switch (in->out_t.dtype) {
    case RT_F16:
        return su_f32_to_f16(f);
    case RT_BF16:
        return su_f32_to_bf16(f);
    case RT_F32:
        memcpy(&w, &f, sizeof w);
        break;
    default:
        w = (uint32_t)(int32_t)in->value;
        break;
    }
    *bytes = 4;
    return w;
}

rt_step_role rt_cuda_step_role(const rt_plan *p, int st, const int32_t *kernel_at, int i,
                               bool comm_on_device)
{
    const rt_program *g = &p->stage[st];
    const rt_instr *in = &g->instr[i];
    if (kernel_at[i] >= 0) {
        const rt_kernel *k = &p->kernel[kernel_at[i]];
        return k->instr[k->ninstr - 1] == i ? RT_STEP_DEVICE : RT_STEP_IDLE;
    }
    switch (rt_ops[in->op].cls) {
    case RT_K_SOURCE: /* params and states stay on the device between runs; a
                       * const is a memset, an input a copy or init kernel
                       * (its host part is done before the run) */
        return in->op == RT_OP_PARAM || in->op == RT_OP_STATE ? RT_STEP_IDLE : RT_STEP_DEVICE;
    case RT_K_COMM:
        return comm_on_device ? RT_STEP_DEVICE : RT_STEP_HOST;
    default:
        break;
    }
    switch (in->op) { /* as cuda.c's run_compute: these on the device, whatever the dtype */
    case RT_OP_COPY:
    case RT_OP_SLICE:
    case RT_OP_INSERT:
    case RT_OP_EXTRACT:
    case RT_OP_MATMUL:
        return in_place(g, in) ? RT_STEP_IDLE : RT_STEP_DEVICE;
    default: /* i32 arithmetic (rt_cuda_check_plan refused anything else) */
        return rt_cuda_on_host(in) ? RT_STEP_HOST : RT_STEP_DEVICE;
    }
}

int32_t rt_cuda_graph_spans(const rt_plan *p, int st, bool comm_on_device, rt_graph_span *out)
{
    int32_t *at = rt_cuda_kernel_map(p, st);
    if (!at)
        return -1;
    const rt_program *g = &p->stage[st];
    int32_t n = 0, first = -1, last = -1;
    for (int i = 0; i <= g->ninstr; i++) {
        rt_step_role role =
            i < g->ninstr ? rt_cuda_step_role(p, st, at, i, comm_on_device) : RT_STEP_HOST;
        if (role == RT_STEP_DEVICE) {
            first = first < 0 ? i : first;
            last = i;
        } else if (role == RT_STEP_HOST && first >= 0) {
            out[n++] = (rt_graph_span){first, last + 1};
            first = -1;
        }
    }
    free(at);
    return n;
}

uint64_t rt_cuda_error_word(int64_t index, int32_t id)
{
    return (uint64_t)(0xffffffffu - (uint32_t)index) << 32 | (uint32_t)id;
}

bool rt_cuda_error_decode(uint64_t word, int64_t *index, int32_t *id)
{
    if (!word)
        return false;
    *index = (int64_t)(0xffffffffu - (uint32_t)(word >> 32));
    *id = (int32_t)(uint32_t)word;
    return true;
}

int32_t rt_cuda_checked_instr(const rt_plan *p, const rt_kernel *k)
{
    const rt_program *g = &p->stage[k->stage];
    for (int j = 0; j < k->ninstr; j++)
        switch (g->instr[k->instr[j]].op) {
        case RT_OP_EMBEDDING:
        case RT_OP_EMBEDDING_GRAD:
        case RT_OP_XENT:
        case RT_OP_XENT_GRAD:
        case RT_OP_CHECK_IDS:
        case RT_OP_CHECK_LABELS:
            return k->instr[j];
        case RT_OP_DIV: /* of i32: a zero divisor (one fused with other ops
                         * divides by a const that is not 0: it never fails) */
            if (g->instr[k->instr[j]].out_t.dtype == RT_I32)
                return k->instr[j];
            break;
        default:
            break;
        }
    return -1;
}

void rt_cuda_error_message(const rt_plan *p, int32_t k, uint64_t word, char *buf, size_t n)
{
    const rt_kernel *kr = &p->kernel[k];
    int64_t index = 0;
    int32_t id = 0;
    rt_cuda_error_decode(word, &index, &id);
    int32_t i = rt_cuda_checked_instr(p, kr);
    if (i < 0) {
        snprintf(buf, n, "stage %d, kernel %s: id %d at index %lld is outside its range",
                 (int)kr->stage, kr->name, (int)id, (long long)index);
        return;
    }
    const rt_instr *in = &p->stage[kr->stage].instr[i];
    const char *op = rt_ops[in->op].name;
    char where[256];
    int len = snprintf(buf, n, "%sstage %d, instruction %d (%s, kernel %s): ",
                       rt_instr_where(p, in, where, sizeof where), (int)kr->stage, (int)i, op,
                       kr->name);
    if (len < 0 || (size_t)len >= n)
        return;
    buf += len;
    n -= (size_t)len;
    /* the formats of cpu.c's id_error, label_error and k_binary's; a check
     * speaks for the op whose split ids or labels it checks, up to its
     * bound */
    if (in->op == RT_OP_DIV) {
        snprintf(buf, n, "%s: i32 division by zero at result index %lld", op, (long long)index);
    } else if (in->op == RT_OP_EMBEDDING || in->op == RT_OP_EMBEDDING_GRAD || in->op == RT_OP_CHECK_IDS) {
        int64_t v = in->op == RT_OP_EMBEDDING    ? in->in_t[0].dim[0]
                    : in->op == RT_OP_CHECK_IDS ? in->dim
                                                 : in->out_t.dim[0];
        snprintf(buf, n, "%s id %d at index %lld is outside the table's %lld rows",
                 in->op == RT_OP_CHECK_IDS ? "embedding" : op, (int)id, (long long)index,
                 (long long)v);
    } else {
        const rt_type *t = &in->in_t[0];
        int64_t c = in->op == RT_OP_CHECK_LABELS ? in->dim : t->dim[t->rank - 1];
        snprintf(buf, n, "%s label %d at index %lld is outside the %lld classes (0..%lld)",
                 in->op == RT_OP_CHECK_LABELS ? "cross_entropy" : op, (int)id, (long long)index,
                 (long long)c, (long long)c - 1);
    }
}
