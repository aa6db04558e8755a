/* report.c: what a partitioned program costs each rank, before anything
 * runs: FLOPs and every collective with its bytes (counted in cost.c), the
 * memory plan, and the estimated step (timeline.c). */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The arena's bytes besides params, states and what is live at the
 * fullest op: gaps between buffers and alignment. */
static int64_t fullest_gaps(const pass_memplan *mp)
{
    return mp->arena_bytes - mp->params - mp->optimizer_state - mp->fullest_live -
           mp->fullest_grads;
}

/* A collective of a stage as the report prints it, kept apart from the
 * program (pass_stage_cost): one entry of the stage's list. */
typedef struct coll_rec {
    double bytes;
    int64_t elements, times, peer;
    int line;
    uint16_t code;
    uint8_t dtype, phase, naxes, max; /* max: an all_reduce of the maximum */
    uint8_t axes[IR_MAX_AXES];
} coll_rec;

/* A collective's axes as text, "dp,tp"; a send or recv's the pipeline
 * axis, with "->PEER" when peer. */
static const char *axes_text(const ir_module *m, const coll_rec *c, bool peer, char buf[64])
{
    buf[0] = 0;
    if (ir_ops[c->code].cls == IR_C_P2P) {
        snprintf(buf, 64, peer ? "%s->%lld" : "%s", m->mesh.name[m->pipe.axis],
                 (long long)c->peer);
        return buf;
    }
    for (int q = 0; q < c->naxes; q++)
        snprintf(buf + strlen(buf), 64 - strlen(buf), "%s%s", q ? "," : "",
                 m->mesh.name[c->axes[q]]);
    return buf;
}

static void axes_json(su_buf *b, const ir_module *m, const coll_rec *c)
{
    if (ir_ops[c->code].cls == IR_C_P2P) {
        su_buf_printf(b, "[\"%s\"]", m->mesh.name[m->pipe.axis]);
        return;
    }
    su_buf_putc(b, '[');
    for (int i = 0; i < c->naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m->mesh.name[c->axes[i]]);
    su_buf_putc(b, ']');
}

/* Op's collective c as a record (times 1). */
static coll_rec coll_record(const pass_coll *c)
{
    const ir_op *op = c->op;
    const ir_value *v = op->nres ? op->res[0] : op->in[0];
    coll_rec r = {.bytes = c->bytes, .elements = c->elements, .times = 1,
                  .peer = op->a->peer, .line = op->loc.line, .code = (uint16_t)op->code,
                  .dtype = (uint8_t)v->type.dtype, .phase = op->phase,
                  .naxes = (uint8_t)op->a->naxes,
                  .max = op->code == IR_ALL_REDUCE && op->a->reduce == IR_RED_MAX};
    for (int q = 0; q < op->a->naxes && q < IR_MAX_AXES; q++)
        r.axes[q] = (uint8_t)op->a->axes[q];
    return r;
}

/* ---- a stage's collectives, a pipeline task's once ---- */

/* One entry of a stage's list of collectives: the first op in program
 * order that runs it and how many times a step it runs. A pipeline stage
 * runs each task (ir_op.task > 0) and the sends and receives of each
 * microbatch (task -1) once per microbatch: the collective at position k
 * of a later microbatch's instance, the same collective as the first
 * instance's (kind, axes, dtype, elements, reduction, peer, phase and
 * line), is counted in that one's entry, so the list does not grow with
 * the microbatches. Anything else, and an instance's collective that
 * differs, has an entry of its own. */
typedef struct coll_entry {
    int64_t op;
    int64_t times;
} coll_entry;

typedef struct coll_list {
    coll_entry *e;
    int64_t n;
    int64_t *all;   /* every collective's op index, in program order */
    int64_t nall;
} coll_list;

static bool coll_same(const ir_module *m, const ir_op *a, const ir_op *b)
{
    pass_coll ca, cb;
    pass_collective(m, a, &ca);
    pass_collective(m, b, &cb);
    if (ca.elements != cb.elements || ca.bytes != cb.bytes)
        return false;
    if (a->code != b->code || a->a->naxes != b->a->naxes || a->phase != b->phase ||
        a->loc.line != b->loc.line || a->a->peer != b->a->peer || a->a->reduce != b->a->reduce)
        return false;
    for (int q = 0; q < a->a->naxes; q++)
        if (a->a->axes[q] != b->a->axes[q])
            return false;
    const ir_value *va = a->nres ? a->res[0] : a->in[0];
    const ir_value *vb = b->nres ? b->res[0] : b->in[0];
    return va->type.dtype == vb->type.dtype;
}

/* m's list (its memory on a), of its collectives L->all[0 .. L->nall). */
static void coll_entries(const ir_module *m, su_arena *a, coll_list *L)
{
    int32_t lo = 0, hi = 0, nmb = 0; /* tasks lo .. hi, microbatches 0 .. nmb - 1 */
    int64_t ncoll = L->nall;
    const int64_t *at_op = L->all;
    for (int64_t k = 0; k < ncoll; k++) {
        const ir_op *op = IR_OP(m, at_op[k]);
        if (op->task && op->mb >= 0) {
            lo = op->task < lo ? op->task : lo;
            hi = op->task > hi ? op->task : hi;
            nmb = op->mb + 1 > nmb ? op->mb + 1 : nmb;
        }
    }
    L->e = su_alloc(a, (size_t)(ncoll + 1) * sizeof *L->e);
    L->n = 0;
    /* per (task, microbatch) its collectives so far; per task the first
     * microbatch met and, by position, the entry of that instance's
     * collective there */
    size_t ntask = (size_t)(hi - lo + 1), per = (size_t)nmb + 1;
    int64_t *seen = su_alloc(a, ntask * per * sizeof *seen);
    memset(seen, 0, ntask * per * sizeof *seen);
    int32_t *first_mb = su_alloc(a, ntask * sizeof *first_mb);
    int64_t **at = su_alloc(a, ntask * sizeof *at);
    for (size_t t = 0; t < ntask; t++)
        first_mb[t] = -1;
    for (int64_t k = 0; k < ncoll; k++) {
        const ir_op *op = IR_OP(m, at_op[k]);
        if (op->task && op->mb >= 0) {
            size_t t = (size_t)(op->task - lo);
            first_mb[t] = first_mb[t] < 0 ? op->mb : first_mb[t];
            seen[t * per + (size_t)op->mb]++;
        }
    }
    for (size_t t = 0; t < ntask; t++) {
        int64_t n = first_mb[t] < 0 ? 0 : seen[t * per + (size_t)first_mb[t]];
        at[t] = su_alloc(a, (size_t)(n + 1) * sizeof *at[t]);
        for (size_t q = 0; q < per; q++)
            seen[t * per + q] = 0;
    }
    for (int64_t k = 0; k < ncoll; k++) {
        int64_t i = at_op[k];
        const ir_op *op = IR_OP(m, i);
        if (!op->task || op->mb < 0) {
            L->e[L->n++] = (coll_entry){i, 1};
            continue;
        }
        size_t t = (size_t)(op->task - lo);
        int64_t pos = seen[t * per + (size_t)op->mb]++;
        if (op->mb == first_mb[t]) {
            at[t][pos] = L->n;
        } else if (pos < seen[t * per + (size_t)first_mb[t]] &&
                   coll_same(m, IR_OP(m, L->e[at[t][pos]].op), op)) {
            L->e[at[t][pos]].times++;
            continue;
        }
        L->e[L->n++] = (coll_entry){i, 1};
    }
}


const char *pass_schedule_name(const ir_pipeline *p, char buf[32])
{
    if (p->schedule == IR_SCHED_INTERLEAVED)
        snprintf(buf, 32, "interleaved(%d)", p->chunks);
    else
        snprintf(buf, 32, "%s", p->schedule == IR_SCHED_GPIPE ? "gpipe" : "1f1b");
    return buf;
}

/* The step time estimated on a hardware profile, or none (hw NULL). */
typedef struct estimate {
    const pass_hw *hw;
    double step_s;
    int64_t mem_limit;      /* --mem-limit, bytes; 0: none */
    pass_stage_time *times; /* [n]: each stage's busy times, with hw */
    double mfu;             /* the step's FLOPs over ranks x step x the tensor-core peak */
    int busiest;            /* the stage computing longest */
    double imbalance;       /* its compute time over the stages' mean */
    const char *unit_input; /* the input counted for throughput (NULL: none) */
    bool tokens;            /* counted as tokens (its ids), else as samples (its rows) */
    double units;           /* tokens or samples a step */
} estimate;

/* s as a JSON string: quotes, backslashes and control bytes escaped. */
static void json_str(su_buf *b, const char *s)
{
    su_buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            su_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            su_buf_printf(b, "\\u%04x", c);
        else
            su_buf_putc(b, (char)c);
    }
    su_buf_putc(b, '"');
}

/* A stage's bytes sent summed by kind of collective and by axes (their
 * names joined by ','; send and recv: the pipeline axis), in order of
 * first appearance. */
enum { MAX_TOTALS = 32 };
typedef struct totals {
    int n;
    char key[MAX_TOTALS][64];
    double bytes[MAX_TOTALS];
    int count[MAX_TOTALS];
} totals;

static void total_add(totals *t, const char *key, double bytes)
{
    int i = 0;
    while (i < t->n && strcmp(t->key[i], key))
        i++;
    if (i == t->n) {
        if (t->n == MAX_TOTALS)
            return; /* more than 32 distinct axis sets: not in a mesh of 8 axes' reports */
        snprintf(t->key[t->n++], sizeof t->key[0], "%s", key);
    }
    t->bytes[i] += bytes;
    t->count[i]++;
}

/* An input of a stage, as the throughput counts it (step_units). */
typedef struct unit_in {
    const char *name;
    bool ids;               /* i32: token ids */
    double numel, rows;     /* global */
} unit_in;

/* ---- a stage's costs, kept apart from its program ---- */

/* What the report prints of stage s, made from its program and memory
 * plan (pass_stage_cost_make), which can then go: a deep pipeline's
 * report without its stages' programs all at once (passes.c). */
struct pass_stage_cost {
    su_arena a;
    bool whole;             /* the program has no stages (ir_module.stage -1) */
    double flops, bytes;
    pass_memplan mp;        /* the plan's figures (its arrays gone) */
    int fullest_line;       /* the line of its fullest op */
    int64_t *ranks, nranks; /* the ranks that run it */
    coll_rec *coll;         /* its collectives, a pipeline task's once */
    int64_t ncoll;
    totals kind, axes;      /* its bytes sent, summed */
    unit_in *in;            /* its inputs, in program order */
    int nin;
};
typedef struct pass_stage_cost stage_cost;

static void stage_cost_fill(stage_cost *c, const ir_module *m, int s, const pass_memplan *mp,
                            su_arena *scratch)
{
    su_arena *a = &c->a;
    c->whole = m->stage < 0;
    c->mp = pass_memplan_figures(mp);
    c->fullest_line = mp->fullest_op >= 0 && mp->fullest_op < m->ops.n
                          ? IR_OP(m, mp->fullest_op)->loc.line
                          : 0;
    int64_t ranks = ir_mesh_ranks(&m->mesh), k = 0;
    for (int64_t r = 0; r < ranks; r++)
        k += pass_rank_in_stage(m, r, s);
    c->ranks = su_alloc(a, ((size_t)k + 1) * sizeof *c->ranks);
    for (int64_t r = 0; r < ranks; r++)
        if (pass_rank_in_stage(m, r, s))
            c->ranks[c->nranks++] = r;
    coll_list L = {0};
    int64_t cap = 0;
    int nin = 0;
    /* the last collective's axes and their text: a stage's sends and
     * receives, one a microbatch, share theirs */
    bool had = false, was_p2p = false;
    uint8_t had_n = 0, had_axes[IR_MAX_AXES] = {0};
    char ax[64] = "";
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        pass_coll cl;
        nin += op->code == IR_INPUT;
        if (op->nres)
            c->flops += pass_op_flops(op);
        if (pass_collective(m, op, &cl)) {
            c->bytes += cl.bytes;
            if (L.nall == cap) { /* few of the ops: grown, not one per op */
                cap = cap ? 2 * cap : 64;
                int64_t *all = su_alloc(scratch, (size_t)cap * sizeof *all);
                if (L.nall)
                    memcpy(all, L.all, (size_t)L.nall * sizeof *all);
                L.all = all;
            }
            L.all[L.nall++] = i;
            coll_rec r = coll_record(&cl);
            bool p2p = ir_ops[r.code].cls == IR_C_P2P;
            if (!had || p2p != was_p2p ||
                (!p2p && (r.naxes != had_n || memcmp(r.axes, had_axes, r.naxes) != 0))) {
                axes_text(m, &r, false, ax);
                had = true, was_p2p = p2p, had_n = r.naxes;
                memcpy(had_axes, r.axes, sizeof had_axes);
            }
            total_add(&c->kind, ir_ops[op->code].name, cl.bytes);
            total_add(&c->axes, ax, cl.bytes);
        }
    }
    coll_entries(m, scratch, &L);
    c->coll = su_alloc(a, ((size_t)L.n + 1) * sizeof *c->coll);
    for (int64_t e = 0; e < L.n; e++) {
        pass_coll cl;
        pass_collective(m, IR_OP(m, L.e[e].op), &cl);
        c->coll[e] = coll_record(&cl);
        c->coll[e].times = L.e[e].times;
    }
    c->ncoll = L.n;
    c->in = su_alloc(a, ((size_t)nin + 1) * sizeof *c->in);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_INPUT)
            continue;
        const ir_value *v = op->res[0];
        double numel = 1, rows = 1;
        for (int d = 0; d < v->type.rank; d++) {
            double g = (double)v->type.dim[d] * (double)ir_sharding_split(&v->sh, &m->mesh, d);
            numel *= g;
            rows = d == 0 ? g : rows;
        }
        c->in[c->nin++] = (unit_in){op->a->name ? su_strdup(a, op->a->name) : NULL,
                                    v->type.dtype == IR_I32, numel, rows};
    }
}

typedef struct cost_make {
    stage_cost *c;
    const ir_module *m;
    int s;
    const pass_memplan *mp;
    su_arena scratch;   /* the collectives' lists before they are counted */
} cost_make;

static void cost_make_work(void *arg)
{
    cost_make *k = arg;
    stage_cost_fill(k->c, k->m, k->s, k->mp, &k->scratch);
}

pass_stage_cost *pass_stage_cost_make(const ir_module *m, int s, const pass_memplan *mp,
                                      jmp_buf *oom)
{
    stage_cost *c = su_xmalloc(oom, sizeof *c);
    memset(c, 0, sizeof *c);
    su_arena_init(&c->a, oom);
    cost_make k = {c, m, s, mp, {0}};
    su_arena_init(&k.scratch, oom);
    bool done = su_guarded(oom, cost_make_work, &k);
    su_arena_free(&k.scratch); /* only the counted records are kept (c->a) */
    if (!done) {
        pass_stage_cost_free(c);
        su_oom(oom);
    }
    return c;
}

void pass_stage_cost_free(pass_stage_cost *c)
{
    if (!c)
        return;
    su_arena_free(&c->a);
    free(c);
}

/* What a step consumes, for throughput: the elements of the largest i32
 * input (token ids: a [B, S] batch is B x S tokens), else the rows of the
 * first input (samples). Global counts, from any stage that holds it. */
static void step_units(const stage_cost *const *cost, int n, estimate *est)
{
    for (int s = 0; s < n; s++)
        for (int i = 0; i < cost[s]->nin; i++) {
            const unit_in *u = &cost[s]->in[i];
            if (u->ids && (!est->tokens || u->numel > est->units)) {
                est->unit_input = u->name, est->tokens = true, est->units = u->numel;
            } else if (!u->ids && !est->unit_input) {
                est->unit_input = u->name, est->units = u->rows;
            }
        }
}

static void totals_json(su_buf *b, const char *name, const totals *t)
{
    su_buf_printf(b, "\"%s\": {", name);
    for (int i = 0; i < t->n; i++)
        su_buf_printf(b, "%s\"%s\": %.0f", i ? ", " : "", t->key[i], t->bytes[i]);
    su_buf_puts(b, "}, ");
}

/* "bytes": per stage, its bytes sent by kind and by axes, and each
 * collective's bytes and source line (0: none), in the order of the
 * stage's "collectives" (kept apart from them, so that the objects of
 * "stages" keep their fields). */
static void bytes_json(int n, su_buf *b, const stage_cost *const *cost)
{
    su_buf_puts(b, "\"bytes\": [");
    for (int s = 0; s < n; s++) {
        const stage_cost *c = cost[s];
        su_buf_printf(b, "%s{", s ? ", " : "");
        totals_json(b, "by_kind", &c->kind);
        totals_json(b, "by_axes", &c->axes);
        su_buf_puts(b, "\"each\": [");
        for (int64_t e = 0; e < c->ncoll; e++) {
            const coll_rec *r = &c->coll[e];
            su_buf_printf(b, "%s{\"bytes\": %.0f, \"line\": %d", e ? ", " : "", r->bytes,
                          r->line);
            if (r->times > 1)
                su_buf_printf(b, ", \"times\": %lld", (long long)r->times);
            su_buf_putc(b, '}');
        }
        su_buf_puts(b, "]}");
    }
    su_buf_puts(b, "], ");
}

static void totals_text(su_buf *b, const char *name, const totals *t)
{
    su_buf_printf(b, "  bytes sent by %-6s", name);
    for (int i = 0; i < t->n; i++)
        su_buf_printf(b, "%s %s %.0f (%d)", i ? "," : "", t->key[i], t->bytes[i], t->count[i]);
    su_buf_puts(b, t->n ? "\n" : " (none)\n");
}

/* m0: the first stage's program, or the shell passes.c leaves of it (its
 * mesh and pipeline). */
static void report_json(const ir_module *m0, int n, const pass_pipeline *pp, su_buf *b,
                        const stage_cost *const *cost, const estimate *est)
{
    su_buf_puts(b, "{\"mesh\": {\"axes\": [");
    for (int i = 0; i < m0->mesh.naxes; i++)
        su_buf_printf(b, "%s\"%s\"", i ? ", " : "", m0->mesh.name[i]);
    su_buf_puts(b, "], \"sizes\": [");
    for (int i = 0; i < m0->mesh.naxes; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)m0->mesh.size[i]);
    su_buf_puts(b, "]}, ");
    if (pp && pp->nstages) {
        char sched[32];
        su_buf_printf(b, "\"pipeline\": {\"axis\": \"%s\", \"schedule\": \"%s\", "
                      "\"stages\": %d, \"microbatches\": %d, \"chunks\": %d, "
                      "\"bubble\": %.6f}, ", m0->mesh.name[m0->pipe.axis],
                      pass_schedule_name(&m0->pipe, sched), pp->nstages, m0->pipe.microbatches,
                      m0->pipe.chunks, pp->bubble);
    }
    if (est->hw) {
        su_buf_printf(b, "\"estimate\": {\"hardware\": \"%s\", \"step_ms\": %.6f, \"mfu\": "
                      "%.6f, \"imbalance\": %.6f, ", est->hw->name,
                      est->step_s * 1e3, est->mfu, est->imbalance);
        if (est->hw->calibrated_by && *est->hw->calibrated_by) {
            su_buf_puts(b, "\"calibrated_by\": ");
            json_str(b, est->hw->calibrated_by);
            su_buf_puts(b, ", ");
        } else {
            su_buf_puts(b, "\"calibrated_by\": null, ");
        }
        if (est->unit_input) {
            su_buf_printf(b, "\"throughput\": {\"input\": ");
            json_str(b, est->unit_input);
            su_buf_printf(b, ", \"unit\": \"%s\", \"per_step\": %.0f, \"per_s\": %.6g}, ",
                          est->tokens ? "tokens" : "samples", est->units,
                          est->step_s > 0 ? est->units / est->step_s : 0);
        }
        su_buf_puts(b, "\"stages\": [");
        for (int s = 0; s < n; s++)
            su_buf_printf(b, "%s{\"compute_ms\": %.6f, \"comm_ms\": %.6f, "
                          "\"exposed_comm_ms\": %.6f}", s ? ", " : "",
                          est->times[s].compute_s * 1e3, est->times[s].comm_s * 1e3,
                          est->times[s].exposed_s * 1e3);
        su_buf_puts(b, "]}, ");
    }
    if (est->mem_limit > 0)
        su_buf_printf(b, "\"mem_limit\": %lld, ", (long long)est->mem_limit);
    bytes_json(n, b, cost);
    su_buf_puts(b, "\"stages\": [");
    for (int s = 0; s < n; s++) {
        const stage_cost *c = cost[s];
        const pass_memplan *mp = &c->mp;
        su_buf_puts(b, s ? ", {\"ranks\": [" : "{\"ranks\": [");
        for (int64_t r = 0; r < c->nranks; r++)
            su_buf_printf(b, "%s%lld", r ? ", " : "", (long long)c->ranks[r]);
        su_buf_printf(b, "], \"flops\": %.0f, \"peak_bytes\": %lld, \"memory\": {\"params\": "
                      "%lld, \"gradients\": %lld, \"optimizer_state\": %lld, \"activations\": "
                      "%lld}, ", c->flops, (long long)mp->arena_bytes, (long long)mp->params,
                      (long long)mp->gradients, (long long)mp->optimizer_state,
                      (long long)mp->activations);
        if (mp->fullest_op >= 0)
            su_buf_printf(b, "\"fullest\": {\"op\": %lld, \"line\": %d, \"activations\": %lld, "
                          "\"gradients\": %lld, \"gaps\": %lld}, ", (long long)mp->fullest_op,
                          c->fullest_line, (long long)mp->fullest_live,
                          (long long)mp->fullest_grads, (long long)fullest_gaps(mp));
        if (est->mem_limit > 0)
            su_buf_printf(b, "\"headroom\": %lld, ",
                          (long long)(est->mem_limit - mp->arena_bytes));
        su_buf_printf(b, "\"bytes_sent\": %.0f, \"collectives\": [", c->bytes);
        for (int64_t e = 0; e < c->ncoll; e++) {
            const coll_rec *r = &c->coll[e];
            su_buf_printf(b, "%s{\"kind\": \"%s\", \"axes\": ", e ? ", " : "",
                          ir_ops[r->code].name);
            axes_json(b, m0, r);
            su_buf_printf(b, ", \"dtype\": \"%s\", \"elements\": %lld, ",
                          ir_dtype_name((ir_dtype)r->dtype), (long long)r->elements);
            if (r->max)
                su_buf_puts(b, "\"reduce\": \"max\", "); /* sum is not named */
            if (r->code == IR_SEND || r->code == IR_RECV)
                su_buf_printf(b, "\"peer\": %lld, ", (long long)r->peer);
            su_buf_printf(b, "\"phase\": \"%s\"", ir_phase_name((ir_phase)r->phase));
            if (r->times > 1)
                su_buf_printf(b, ", \"times\": %lld", (long long)r->times);
            su_buf_putc(b, '}');
        }
        su_buf_puts(b, "]}");
    }
    su_buf_puts(b, "]}\n");
}

static void report_table(const ir_module *m0, int n, const pass_pipeline *pp, su_buf *b,
                         const stage_cost *const *cost, const estimate *est)
{
    if (pp && pp->nstages) {
        char sched[32];
        su_buf_printf(b, "pipeline: %s over %s, %d stages, %d microbatches, bubble %.4f of the "
                      "ideal compute time\n", pass_schedule_name(&m0->pipe, sched),
                      m0->mesh.name[m0->pipe.axis], pp->nstages, m0->pipe.microbatches,
                      pp->bubble);
    }
    for (int s = 0; s < n; s++) {
        const stage_cost *c = cost[s];
        const pass_memplan *mp = &c->mp;
        int64_t count = c->nranks, lo = count ? c->ranks[0] : -1;
        if (c->whole)
            su_buf_printf(b, "stage 0: ranks 0..%lld (%lld ranks)\n", (long long)count - 1,
                          (long long)count);
        else
            su_buf_printf(b, "stage %d: %lld ranks, the first %lld\n", s, (long long)count,
                          (long long)lo);
        su_buf_printf(b, "  flops per rank:       %.0f\n", c->flops);
        su_buf_printf(b, "  bytes sent per rank:  %.0f\n", c->bytes);
        su_buf_printf(b, "  peak bytes per rank:  %lld\n", (long long)mp->arena_bytes);
        su_buf_printf(b, "    params            %14lld\n", (long long)mp->params);
        su_buf_printf(b, "    gradients         %14lld\n", (long long)mp->gradients);
        su_buf_printf(b, "    optimizer state   %14lld\n", (long long)mp->optimizer_state);
        su_buf_printf(b, "    activations       %14lld  (the most live at once)\n",
                      (long long)mp->activations);
        if (mp->fullest_op >= 0)
            su_buf_printf(b, "  peak reconciled:      params and optimizer state, then at op %lld "
                          "(line %d) %lld of activations and %lld of gradients live, and %lld "
                          "of gaps between buffers and alignment\n",
                          (long long)mp->fullest_op, c->fullest_line,
                          (long long)mp->fullest_live, (long long)mp->fullest_grads,
                          (long long)fullest_gaps(mp));
        if (est->mem_limit > 0)
            su_buf_printf(b, "  headroom per rank:    %lld under --mem-limit %lld (%.1f%% used)\n",
                          (long long)(est->mem_limit - mp->arena_bytes),
                          (long long)est->mem_limit,
                          100.0 * (double)mp->arena_bytes / (double)est->mem_limit);
        su_buf_puts(b, "  collectives (program order):\n");
        su_buf_printf(b, "    %-4s %-15s %-10s %-5s %14s %14s  %s\n", "#", "kind", "axes",
                      "dtype", "elements", "bytes sent", "phase");
        int k = 0;
        for (int64_t e = 0; e < c->ncoll; e++) {
            const coll_rec *r = &c->coll[e];
            char axes[64];
            axes_text(m0, r, true, axes);
            su_buf_printf(b, "    %-4d %-15s %-10s %-5s %14lld %14.0f  %s", k++,
                          r->max ? "all_reduce(max)" : ir_ops[r->code].name, axes,
                          ir_dtype_name((ir_dtype)r->dtype), (long long)r->elements, r->bytes,
                          ir_phase_name((ir_phase)r->phase));
            if (r->times > 1) /* once per microbatch */
                su_buf_printf(b, ", %lld times", (long long)r->times);
            su_buf_putc(b, '\n');
        }
        if (!k)
            su_buf_puts(b, "    (none)\n");
        if (k) {
            totals_text(b, "kind:", &c->kind);
            totals_text(b, "axes:", &c->axes);
        }
    }
    if (est->hw) {
        su_buf_printf(b, "step time, estimated on %s: %.3f ms (the timeline: shardc --trace)\n",
                      est->hw->name, est->step_s * 1e3);
        for (int s = 0; s < n; s++)
            su_buf_printf(b, "  stage %d: compute %.3f ms, communication %.3f ms (%.3f ms of it "
                          "exposed: the compute stream idle)\n", s,
                          est->times[s].compute_s * 1e3, est->times[s].comm_s * 1e3,
                          est->times[s].exposed_s * 1e3);
        if (n > 1)
            su_buf_printf(b, "  imbalance: stage %d computes %.2fx the stages' mean\n",
                          est->busiest, est->imbalance);
        su_buf_printf(b, "  model FLOPs utilisation: %.2f%% of %s's bf16 tensor-core peak\n",
                      100 * est->mfu, est->hw->name);
        if (est->unit_input && est->step_s > 0)
            su_buf_printf(b, "  throughput: %.4g %s/s (%.0f a step: %s '%s')\n",
                          est->units / est->step_s, est->tokens ? "tokens" : "samples",
                          est->units, est->tokens ? "the ids of input" : "the rows of input",
                          est->unit_input);
        const char *by = est->hw->calibrated_by;
        if (by && *by)
            su_buf_printf(b, "  efficiencies: calibrated by %s\n", by);
        else
            su_buf_puts(b, "  efficiencies: not measured on a GPU (the profile has no "
                           "calibrated_by; bench_cuda --calibrate measures them: "
                           "docs/hw/README.md)\n");
    }
}

/* A report being made: what it holds, freed by pass_report_on after an
 * allocation failure too. */
typedef struct report_run {
    ir_module *const *stages;
    int n;
    const pass_pipeline *pp;
    const pass_memplan *mp;
    const struct pass_fusion *fusion;
    pass_lane *const *lanes;  /* pass_report_from's; NULL: the timeline of the stages */
    bool json;
    su_buf *out;
    estimate est;
    su_buf err;
    stage_cost **cost;      /* [n], zeroed; made here unless given */
    bool own;               /* cost made here (freed by pass_report_on) */
    bool timeline_ok;
} report_run;

/* Job k of report's: with an estimate, job 0 is the timeline's times,
 * which walks every stage in step and runs beside the others (a third of
 * a deep pipeline's report, 64 stages at 256 microbatches), first so
 * that the stages' costs run beside it rather than before it; every
 * other job is a stage's costs, in stage order. Each allocates only in
 * its own arena or the timeline's, on its own thread (pass_for_stages). */
static bool report_job(void *ctx, int k, su_buf *err)
{
    report_run *r = ctx;
    int s = r->est.hw ? k - 1 : k;
    if (s < 0) {
        /* its message (a compiler bug the verifier reports first) is
         * dropped with this job's err: the estimate is then left out */
        r->timeline_ok = r->lanes ? pass_lanes_run(r->lanes, r->n, r->est.hw, r->est.times,
                                                   &r->est.step_s, err)
                                  : pass_timeline_stats(r->stages, r->n, r->fusion, r->mp,
                                                        r->est.hw, r->est.times,
                                                        &r->est.step_s, err);
        return true;
    }
    if (r->own)
        r->cost[s] = pass_stage_cost_make(r->stages[s], s, &r->mp[s], err->oom);
    return true;
}

static void report(void *arg)
{
    report_run *r = arg;
    r->est.times = su_xmalloc(r->out->oom, (size_t)r->n * sizeof *r->est.times);
    if (r->own) {
        r->cost = su_xmalloc(r->out->oom, (size_t)(r->n ? r->n : 1) * sizeof *r->cost);
        memset(r->cost, 0, (size_t)(r->n ? r->n : 1) * sizeof *r->cost);
    }
    /* the timeline's events are not wanted, only its times */
    pass_for_stages(r->n + (r->est.hw != NULL), report_job, r, &r->err);
    for (int s = 0; r->own && s < r->n; s++)
        if (r->cost[s])
            r->cost[s]->a.oom = r->out->oom; /* its job's guard is gone */
    for (int s = 0; s < r->n; s++)
        if (!r->cost[s])
            su_oom(r->out->oom); /* its job ran out of memory */
    if (r->est.hw && !r->timeline_ok)
        r->est.hw = NULL;
    const stage_cost *const *cost = (const stage_cost *const *)r->cost;
    if (r->est.hw) {
        double flops = 0, mean = 0, most = -1;
        for (int s = 0; s < r->n; s++) {
            flops += cost[s]->flops * (double)cost[s]->nranks;
            mean += r->est.times[s].compute_s / r->n;
            if (r->est.times[s].compute_s > most)
                most = r->est.times[s].compute_s, r->est.busiest = s;
        }
        double peak = r->est.step_s * (double)ir_mesh_ranks(&r->stages[0]->mesh) *
                      r->est.hw->tc_flops;
        r->est.mfu = peak > 0 ? flops / peak : 0;
        step_units(cost, r->n, &r->est);
        r->est.imbalance = mean > 0 ? most / mean : 1;
    }
    if (r->json)
        report_json(r->stages[0], r->n, r->pp, r->out, cost, &r->est);
    else
        report_table(r->stages[0], r->n, r->pp, r->out, cost, &r->est);
}

static void report_run_on(report_run *r)
{
    su_buf *out = r->out;
    su_buf_init(&r->err, out->oom);
    bool done = su_guarded(out->oom, report, r);
    free(r->est.times);
    for (int s = 0; r->own && r->cost && s < r->n; s++)
        pass_stage_cost_free(r->cost[s]);
    if (r->own)
        free(r->cost);
    su_buf_free(&r->err);
    if (!done)
        su_oom(out->oom);
}

void pass_report_on(ir_module *const *stages, int n, const pass_pipeline *pp,
                    const pass_memplan *mp, const struct pass_fusion *fusion, const pass_hw *hw,
                    int64_t mem_limit, bool json, su_buf *out)
{
    report_run r = {.stages = stages, .n = n, .pp = pp, .mp = mp, .fusion = fusion,
                    .json = json, .out = out, .own = true,
                    .est = {.hw = hw, .mem_limit = mem_limit}};
    report_run_on(&r);
}

void pass_report_from(ir_module *const *stages, int n, const pass_pipeline *pp,
                      pass_stage_cost *const *cost, pass_lane *const *lanes, const pass_hw *hw,
                      int64_t mem_limit, bool json, su_buf *out)
{
    report_run r = {.stages = stages, .n = n, .pp = pp, .lanes = lanes, .json = json,
                    .out = out, .cost = (stage_cost **)cost,
                    .est = {.hw = lanes ? hw : NULL, .mem_limit = mem_limit}};
    report_run_on(&r);
}
