/* plan_loop.c: a program's loop form (plan.h) expanded into the plain
 * form, rt_plan_expand: rt_plan_read_plain runs it after reading, and
 * rt_plan_validate on a copy of a plan in memory.
 *
 * Item i of the schedule (body b, microbatch j) becomes body b's
 * instructions, in order, each with its offset stepped j times and each
 * slotted buffer replaced by its copy for j's slot, a buffer of the
 * program (the buffer table stays as it is). A
 * kernel of body b becomes one kernel per item of b, in the order of the
 * items, its instructions and parameters moved with them; the kernels of
 * a plain program stay as they are. So the plain program is exactly the
 * one a compiler unrolling the loops would have written. What the loop
 * form says is checked here only as far as expanding it needs (indices
 * in range, sizes that do not overflow); the plain form is then
 * rt_plan_validate's.
 */
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"

#include <stdlib.h>
#include <string.h>

/* The slots of a map: its largest, plus one. */
static int32_t slot_count(const rt_program *g, int32_t map)
{
    int32_t k = 0;
    for (int32_t j = 0; j < g->nmb; j++)
        if (g->slotmap[(int64_t)map * g->nmb + j] >= k)
            k = g->slotmap[(int64_t)map * g->nmb + j] + 1;
    return k;
}

static bool slotted(const rt_program *g, int32_t b)
{
    return g->buf_slots && b >= 0 && b < g->nbuf && g->buf_slots[b] >= 0;
}

static int32_t body_end(const rt_program *g, int32_t b)
{
    return b + 1 < g->nbody ? g->body_start[b + 1] : g->ninstr;
}

int64_t rt_plan_body_len(const rt_program *g, int32_t b)
{
    return body_end(g, b) - g->body_start[b];
}

/* The body holding instruction k (in range). */
static int32_t body_of(const rt_program *g, int32_t k)
{
    int32_t lo = 0, hi = g->nbody - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (g->body_start[mid] <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int32_t rt_plan_body_of(const rt_program *g, int32_t k)
{
    return body_of(g, k);
}

/* Bodies, items and slot maps of program g (stage s): in range. */
static bool check_schedule(const rt_program *g, int s, su_status *err)
{
    if (!g->body_start)
        return rt_plan_fail(err, "stage %d: %d bodies but no body table", s, g->nbody);
    for (int32_t b = 0; b < g->nbody; b++) {
        int32_t lo = b ? g->body_start[b - 1] : 0;
        if ((b == 0 && g->body_start[0] != 0) || g->body_start[b] < lo ||
            g->body_start[b] > g->ninstr)
            return rt_plan_fail(err, "stage %d: body %d starts at instruction %d (body 0 starts "
                                "at 0, each at or after the one before, none past the %d "
                                "instructions)", s, b, g->body_start[b], g->ninstr);
    }
    if (g->nmb < 1)
        return rt_plan_fail(err, "stage %d: the loop form has %d microbatches; at least 1", s,
                            g->nmb);
    if (g->nitem < 0 || (g->nitem > 0 && !g->item))
        return rt_plan_fail(err, "stage %d: a schedule of %d items is not valid", s, g->nitem);
    for (int32_t i = 0; i < g->nitem; i++) {
        int32_t b = g->item[2 * i], j = g->item[2 * i + 1];
        if (b < 0 || b >= g->nbody || j < 0 || j >= g->nmb)
            return rt_plan_fail(err, "stage %d: item %d runs body %d for microbatch %d; the "
                                "program has %d bodies and %d microbatches", s, i, b, j,
                                g->nbody, g->nmb);
    }
    if (g->nslotmap < 0 || (g->nslotmap > 0 && !g->slotmap))
        return rt_plan_fail(err, "stage %d: a table of %d slot maps is not valid", s,
                            g->nslotmap);
    for (int64_t i = 0; i < (int64_t)g->nslotmap * g->nmb; i++)
        if (g->slotmap[i] < 0 || g->slotmap[i] >= g->nmb)
            return rt_plan_fail(err, "stage %d: slot map %lld gives microbatch %lld slot %d; "
                                "the slots are 0 .. %d (one per microbatch at most)", s,
                                (long long)(i / g->nmb), (long long)(i % g->nmb),
                                g->slotmap[i], g->nmb - 1);
    return true;
}

/* check_slots's slotted buffers of g: a map in range, and a copy for each
 * of its slots (slots[map]: its count, -1 until counted) in the copy
 * table, a plain buffer. */
static bool check_copies(const rt_program *g, int s, int32_t *slots, su_status *err)
{
    for (int32_t b = 0; g->buf_slots && b < g->nbuf; b++) {
        int32_t map = g->buf_slots[b];
        if (map < 0)
            continue;
        if (map >= g->nslotmap)
            return rt_plan_fail(err, "stage %d: buffer %d takes slot map %d; the program has "
                                "%d", s, b, map, g->nslotmap);
        if (slots[map] < 0)
            slots[map] = slot_count(g, map);
        int64_t at = g->buf_copy_at[b], k = slots[map];
        if (at < 0 || at > g->ncopy || k > g->ncopy - at)
            return rt_plan_fail(err, "stage %d: buffer %d's copies for slots 0 .. %lld start at "
                                "%lld of a copy table of %lld", s, b, (long long)(k - 1),
                                (long long)at, (long long)g->ncopy);
        for (int64_t q = 0; q < k; q++) {
            int32_t c = g->copy_buf[at + q];
            if (c < 0 || c >= g->nbuf || slotted(g, c))
                return rt_plan_fail(err, "stage %d: buffer %d's copy for slot %lld is buffer %d, "
                                    "not a plain buffer of the %d", s, b, (long long)q, c,
                                    g->nbuf);
        }
    }
    return true;
}

/* The slotted buffers of g: a map in range, and a copy for each of its
 * slots in the copy table, a plain buffer; and none an I/O entry's. */
static bool check_slots(const rt_plan *p, const rt_program *g, int s, su_status *err)
{
    if (g->buf_slots &&
        (g->nbuf < 0 || !g->buf_copy_at || g->ncopy < 0 || (g->ncopy > 0 && !g->copy_buf)))
        return rt_plan_fail(err, "stage %d: slotted buffers without a copy table", s);
    /* each map's slots, counted once (a map serves many buffers, and a
     * count reads its every microbatch): -1 until counted */
    int32_t *slots = g->buf_slots ? malloc(((size_t)g->nslotmap + 1) * sizeof *slots) : NULL;
    if (g->buf_slots && !slots)
        return rt_plan_nomem(err);
    for (int32_t m = 0; slots && m < g->nslotmap; m++)
        slots[m] = -1;
    bool ok = check_copies(g, s, slots, err);
    free(slots);
    if (!ok)
        return false;
    for (int32_t i = 0; p->io && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->stage == s && (slotted(g, io->buffer) || slotted(g, io->update)))
            return rt_plan_fail(err, "I/O entry %d ('%s') lives in a slotted buffer of stage "
                                "%d: a tensor of the step is one buffer", i,
                                io->name ? io->name : "?", s);
    }
    return true;
}

/* Kernel k of a program in loop form: its instructions in range and in
 * one body, which *body gets. */
static bool kernel_body(const rt_plan *p, int32_t i, int32_t *body, su_status *err)
{
    const rt_kernel *k = &p->kernel[i];
    const rt_program *g = &p->stage[k->stage];
    if (k->ninstr < 1 || !k->instr)
        return rt_plan_fail(err, "kernel %d of stage %d stands for no instruction", i, k->stage);
    for (int32_t q = 0; q < k->ninstr; q++)
        if (k->instr[q] < 0 || k->instr[q] >= g->ninstr)
            return rt_plan_fail(err, "kernel %d of stage %d: instruction %d is out of range "
                                "(the program has %d)", i, k->stage, k->instr[q], g->ninstr);
    *body = body_of(g, k->instr[0]);
    for (int32_t q = 1; q < k->ninstr; q++)
        if (body_of(g, k->instr[q]) != *body)
            return rt_plan_fail(err, "kernel %d of stage %d stands for instructions of bodies "
                                "%d and %d: a kernel runs within one body", i, k->stage, *body,
                                body_of(g, k->instr[q]));
    return true;
}

typedef struct expand {
    rt_plan *p;
    su_status *err;
} expand;

static int32_t buffer_for(const rt_program *g, int32_t b, int32_t j)
{
    if (!slotted(g, b))
        return b;
    int32_t slot = g->slotmap[(int64_t)g->buf_slots[b] * g->nmb + j];
    return g->copy_buf[g->buf_copy_at[b] + slot];
}

/* The instructions of stage s's plain program, q's (ninstr of them). */
static bool expand_instrs(expand *e, const rt_program *g, int s, rt_program *q, int64_t ninstr)
{
    q->ninstr = (int32_t)ninstr;
    q->instr = rt_plan_alloc(e->p, (size_t)ninstr, sizeof *q->instr);
    if (ninstr && !q->instr)
        return rt_plan_nomem(e->err);
    rt_instr *out = q->instr;
    for (int32_t i = 0; i < g->nitem; i++) {
        int32_t b = g->item[2 * i], j = g->item[2 * i + 1];
        for (int32_t k = g->body_start[b]; k < body_end(g, b); k++) {
            rt_instr x = g->instr[k];
            int64_t step = g->instr_step ? g->instr_step[k] : 0, by;
            if (__builtin_mul_overflow(step, (int64_t)j, &by) ||
                __builtin_add_overflow(x.offset, by, &x.offset))
                return rt_plan_fail(e->err, "stage %d: instruction %d's offset for microbatch "
                                    "%d overflows", s, k, j);
            for (int a = 0; a < x.nin && a < RT_MAX_IN; a++)
                x.in[a] = buffer_for(g, x.in[a], j);
            x.out = buffer_for(g, x.out, j);
            *out++ = x;
        }
    }
    return true;
}

/* A copy of kernel k for item (body start `first`, microbatch j) whose
 * instructions start at `at` in the plain program. */
static bool expand_kernel(expand *e, const rt_program *g, const rt_kernel *k, int32_t first,
                          int64_t at, int32_t j, rt_kernel *out)
{
    *out = *k;
    out->instr = rt_plan_alloc(e->p, (size_t)k->ninstr, sizeof *out->instr);
    if (!out->instr)
        return rt_plan_nomem(e->err);
    for (int32_t q = 0; q < k->ninstr; q++)
        out->instr[q] = (int32_t)(at + k->instr[q] - first);
    int64_t np = (int64_t)k->nin + k->nout;
    bool any = false;
    for (int64_t q = 0; k->param && q < np; q++)
        any |= slotted(g, k->param[q]);
    if (!any)
        return true;
    out->param = rt_plan_alloc(e->p, (size_t)np, sizeof *out->param);
    if (!out->param)
        return rt_plan_nomem(e->err);
    for (int64_t q = 0; q < np; q++)
        out->param[q] = buffer_for(g, k->param[q], j);
    return true;
}

static bool loop_form(const rt_plan *p, int s)
{
    return p->stage[s].nbody != 0;
}

static bool check_kernels_of(const rt_plan *p, const bool *which, int32_t *body,
                             int64_t *const *runs, int64_t *nkernels, su_status *err);

/* Whether stage s is expanded: in loop form, and selected by which
 * (NULL: every stage). */
static bool expanded(const rt_plan *p, const bool *which, int s)
{
    return loop_form(p, s) && (!which || which[s]);
}

/* Every check of the stages `which` selects (NULL: all) before anything
 * is allocated; *ninstr and *nkernels the sizes of the plain form, where
 * those stages are expanded and the others stay as they are, unread (a
 * validator checking one stage of many reads that one alone). */
static bool check_all(const rt_plan *p, const bool *which, int32_t *body, int64_t *ninstr,
                      int64_t *nkernels, su_status *err)
{
    int64_t total = 0;
    for (int s = 0; s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        ninstr[s] = g->ninstr;
        if (!expanded(p, which, s))
            goto add;
        if (g->nbody < 0 || g->ninstr < 0 || (g->ninstr > 0 && !g->instr))
            return rt_plan_fail(err, "stage %d: a loop form of %d bodies over %d instructions "
                                "is not valid", s, g->nbody, g->ninstr);
        if (!check_schedule(g, s, err) || !check_slots(p, g, s, err))
            return false;
        ninstr[s] = 0;
        for (int32_t i = 0; i < g->nitem; i++) {
            int32_t b = g->item[2 * i];
            ninstr[s] += body_end(g, b) - g->body_start[b];
            if (ninstr[s] > RT_MAX_EXPANDED_INSTR)
                break;
        }
    add:
        total += ninstr[s];
        if (total > RT_MAX_EXPANDED_INSTR)
            return rt_plan_fail(err, "the loop form expands to more than %d instructions "
                                "(stage %d's schedule): more than this runtime runs",
                                RT_MAX_EXPANDED_INSTR, s);
    }
    /* each expanded loop form's items per body: runs[s][b] (in range:
     * checked above) */
    int64_t **runs = calloc((size_t)p->nstages + 1, sizeof *runs);
    if (!runs)
        return rt_plan_nomem(err);
    for (int s = 0; s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        if (!expanded(p, which, s))
            continue;
        runs[s] = calloc((size_t)g->nbody + 1, sizeof *runs[s]);
        if (!runs[s]) {
            for (int t = 0; t < s; t++)
                free(runs[t]);
            free(runs);
            return rt_plan_nomem(err);
        }
        for (int32_t q = 0; q < g->nitem; q++)
            runs[s][g->item[2 * q]]++;
    }
    bool ok = check_kernels_of(p, which, body, runs, nkernels, err);
    for (int s = 0; s < p->nstages; s++)
        free(runs[s]);
    free(runs);
    return ok;
}

/* check_all's kernels: each of an expanded loop form in one body, and
 * counted once per item of it (runs: items per body). */
static bool check_kernels_of(const rt_plan *p, const bool *which, int32_t *body,
                             int64_t *const *runs, int64_t *nkernels, su_status *err)
{
    int64_t all = 0;
    *nkernels = 0;
    for (int32_t i = 0; i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        body[i] = -1;
        if (k->stage < 0 || k->stage >= p->nstages || !expanded(p, which, k->stage)) {
            ++*nkernels;
            ++all;
            continue;
        }
        if (!kernel_body(p, i, &body[i], err))
            return false;
        int64_t n = runs[k->stage][body[i]];
        all += n;
        *nkernels += n;
        if (all > RT_MAX_EXPANDED_INSTR)
            return rt_plan_fail(err, "the loop form expands to more than %d kernels",
                                RT_MAX_EXPANDED_INSTR);
    }
    return true;
}

/* Stage s's kernels into out (plain, or a loop form not expanded now, at
 * NULL: as they are; loop form: each of body b once per item of b, in item
 * order, those of one body in their order in the plan); the count
 * written. */
static int64_t stage_kernels(expand *e, int s, const int32_t *body, const int64_t *at,
                             rt_kernel *out, bool *ok)
{
    const rt_plan *p = e->p;
    const rt_program *g = &p->stage[s];
    int64_t n = 0;
    if (!loop_form(p, s) || !at) { /* plain, or a loop form left as it is */
        for (int32_t i = 0; i < p->nkernels; i++)
            if (p->kernel[i].stage == s)
                out[n++] = p->kernel[i];
        return n;
    }
    /* the stage's kernels by body: list[start[b] .. start[b + 1]) */
    int32_t *start = calloc((size_t)g->nbody + 2, sizeof *start);
    int32_t *list = malloc(((size_t)p->nkernels + 1) * sizeof *list);
    if (!start || !list) {
        free(start);
        free(list);
        *ok = rt_plan_nomem(e->err);
        return 0;
    }
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].stage == s)
            start[body[i] + 2]++;
    for (int32_t b = 0; b < g->nbody; b++)
        start[b + 2] += start[b + 1];
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].stage == s)
            list[start[body[i] + 1]++] = i;
    for (int32_t it = 0; it < g->nitem && *ok; it++) {
        int32_t b = g->item[2 * it], j = g->item[2 * it + 1];
        for (int32_t q = start[b]; q < start[b + 1] && *ok; q++)
            *ok = expand_kernel(e, g, &p->kernel[list[q]], g->body_start[b], at[it], j,
                                &out[n++]);
    }
    free(start);
    free(list);
    return n;
}

/* rt_plan_check_loops of the stages which selects (NULL: all). */
static bool check_loops_of(const rt_plan *p, const bool *which, su_status *err)
{
    bool any = false;
    for (int s = 0; p->stage && s < p->nstages; s++)
        any |= expanded(p, which, s);
    if (!any || (p->nkernels > 0 && !p->kernel) || p->nkernels < 0)
        return true;
    int32_t *body = malloc(((size_t)p->nkernels + 1) * sizeof *body);
    int64_t *ninstr = malloc((size_t)p->nstages * sizeof *ninstr), nkernels = 0;
    bool ok = body && ninstr ? check_all(p, which, body, ninstr, &nkernels, err)
                             : rt_plan_nomem(err);
    free(body);
    free(ninstr);
    return ok;
}

bool rt_plan_check_loops(const rt_plan *p, su_status *err)
{
    return check_loops_of(p, NULL, err);
}

bool rt_plan_check_loop_stage(const rt_plan *p, int s, su_status *err)
{
    if (!p->stage || s < 0 || s >= p->nstages)
        return true;
    bool *which = calloc((size_t)p->nstages + 1, sizeof *which);
    if (!which)
        return rt_plan_nomem(err);
    which[s] = true;
    bool ok = check_loops_of(p, which, err);
    free(which);
    return ok;
}

bool rt_plan_expand_stages(rt_plan *p, const bool *which, su_status *err)
{
    bool any = false;
    for (int s = 0; p->stage && s < p->nstages; s++)
        any |= expanded(p, which, s);
    if (!any || (p->nkernels > 0 && !p->kernel) || p->nkernels < 0)
        return true; /* nothing to expand, or the validator's to refuse */
    int32_t *body = malloc(((size_t)p->nkernels + 1) * sizeof *body);
    int64_t *ninstr = malloc((size_t)p->nstages * sizeof *ninstr), nkernels = 0;
    if (!body || !ninstr) {
        free(body);
        free(ninstr);
        return rt_plan_nomem(err);
    }
    bool ok = check_all(p, which, body, ninstr, &nkernels, err);
    rt_program *stage = ok ? rt_plan_alloc(p, (size_t)p->nstages, sizeof *stage) : NULL;
    rt_kernel *kernel = ok ? rt_plan_alloc(p, (size_t)nkernels + 1, sizeof *kernel) : NULL;
    if (ok && (!stage || !kernel))
        ok = rt_plan_nomem(err);
    expand e = {p, err};
    int64_t nk = 0;
    for (int s = 0; ok && s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        stage[s] = *g;
        if (!loop_form(p, s) || (which && !which[s])) {
            nk += stage_kernels(&e, s, body, NULL, kernel + nk, &ok);
            continue;
        }
        int64_t *at = malloc(((size_t)g->nitem + 1) * sizeof *at); /* each item's first instruction */
        if (!at)
            ok = rt_plan_nomem(err);
        for (int32_t i = 0, n = 0; ok && i < g->nitem; i++) {
            at[i] = n;
            n += body_end(g, g->item[2 * i]) - g->body_start[g->item[2 * i]];
        }
        rt_program *q = &stage[s];
        ok = ok && expand_instrs(&e, g, s, q, ninstr[s]);
        if (ok)
            nk += stage_kernels(&e, s, body, at, kernel + nk, &ok);
        q->nbody = q->nmb = q->nitem = q->nslotmap = 0;
        q->body_start = q->item = q->slotmap = q->buf_slots = NULL;
        q->buf_copy_at = q->instr_step = NULL;
        q->copy_buf = NULL;
        q->ncopy = 0;
        free(at);
    }
    for (int32_t i = 0; ok && i < p->nkernels; i++) /* a stage out of range: the validator's */
        if (p->kernel[i].stage < 0 || p->kernel[i].stage >= p->nstages)
            kernel[nk++] = p->kernel[i];
    if (ok) {
        p->stage = stage;
        p->kernel = kernel;
        p->nkernels = (int32_t)nk;
    }
    free(body);
    free(ninstr);
    return ok;
}

void rt_plan_view_free(rt_plan *view)
{
    rt_plan_free_blocks(view->mem_);
    view->mem_ = NULL;
}

bool rt_plan_expand(rt_plan *p, su_status *err)
{
    return rt_plan_expand_stages(p, NULL, err);
}

rt_plan *rt_plan_read_plain(const uint8_t *data, size_t len, const char *what, su_status *err)
{
    rt_plan *p = rt_plan_read(data, len, what, err);
    if (p && !rt_plan_expand(p, err)) {
        su_prefix(err, "%s: ", what ? what : "plan");
        rt_plan_free(p);
        return NULL;
    }
    return p;
}

/* ---- the items the validator expands (rt_plan_loop_sample) ---- */

/* Adds buffer b's slot map to body b's list (maps: per map, the body that
 * listed it last, so each is listed once). */
static void add_map(const rt_program *g, int32_t buf, int32_t body, int32_t *last,
                    int32_t *list, int32_t *n)
{
    if (!slotted(g, buf))
        return;
    int32_t m = g->buf_slots[buf];
    if (last[m] != body) {
        last[m] = body;
        list[(*n)++] = m;
    }
}

enum { SAMPLE_CLASSES = 16 }; /* classes compared within one hash */

typedef struct sample_key {
    uint64_t hash;
    int32_t j, item;
} sample_key;

static int cmp_sample(const void *a, const void *b)
{
    const sample_key *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->j != y->j)
        return x->j < y->j ? -1 : 1;
    return x->item < y->item ? -1 : x->item > y->item;
}

/* Whether microbatches i and j take the same slot in each of n maps. */
static bool same_slots(const rt_program *g, const int32_t *maps, int32_t n, int32_t i, int32_t j)
{
    for (int32_t q = 0; q < n; q++)
        if (g->slotmap[(int64_t)maps[q] * g->nmb + i] != g->slotmap[(int64_t)maps[q] * g->nmb + j])
            return false;
    return true;
}

bool rt_plan_loop_sample(const rt_plan *p, int s, int32_t **keep, int32_t *nkeep,
                         su_status *err)
{
    const rt_program *g = &p->stage[s];
    *keep = NULL;
    *nkeep = 0;
    size_t nb = (size_t)g->nbody, ni = (size_t)g->nitem;
    /* each body's slot maps: mapstart[b] .. mapstart[b + 1] of maps[] */
    size_t cap = (size_t)g->ninstr * (RT_MAX_IN + 1) + 1;
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].stage == s)
            cap += (size_t)p->kernel[i].nin + (size_t)p->kernel[i].nout;
    int32_t *last = malloc(((size_t)g->nslotmap + 1) * sizeof *last);
    int32_t *maps = malloc(cap * sizeof *maps);
    int32_t *mapstart = malloc((nb + 1) * sizeof *mapstart);
    int32_t *kbody = malloc(((size_t)p->nkernels + 1) * sizeof *kbody);
    int32_t *kstart = calloc(nb + 2, sizeof *kstart); /* each body's kernels: */
    int32_t *klist = malloc(((size_t)p->nkernels + 1) * sizeof *klist); /* klist[kstart[b] ..] */
    int32_t *istart = calloc(nb + 2, sizeof *istart); /* and items */
    int32_t *ilist = malloc((ni + 1) * sizeof *ilist);
    sample_key *key = malloc((ni + 1) * sizeof *key);
    int32_t *out = malloc((ni + 1) * sizeof *out);
    bool *kept = calloc(ni + 1, sizeof *kept);
    bool ok = last && maps && mapstart && kbody && kstart && klist && istart && ilist && key &&
              out && kept;
    if (!ok)
        goto done;
    for (int32_t m = 0; m < g->nslotmap; m++)
        last[m] = -1;
    for (int32_t i = 0; i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        kbody[i] = k->stage == s && k->ninstr > 0 ? body_of(g, k->instr[0]) : -1;
        if (kbody[i] >= 0)
            kstart[kbody[i] + 2]++;
    }
    for (size_t b = 0; b < nb; b++)
        kstart[b + 2] += kstart[b + 1];
    for (int32_t i = 0; i < p->nkernels; i++)
        if (kbody[i] >= 0)
            klist[kstart[kbody[i] + 1]++] = i;
    for (int32_t i = 0; i < g->nitem; i++)
        istart[g->item[2 * i] + 2]++;
    for (size_t b = 0; b < nb; b++)
        istart[b + 2] += istart[b + 1];
    for (int32_t i = 0; i < g->nitem; i++)
        ilist[istart[g->item[2 * i] + 1]++] = i;
    int32_t n = 0;
    for (int32_t b = 0; b < g->nbody; b++) {
        mapstart[b] = n;
        for (int32_t k = g->body_start[b]; k < body_end(g, b); k++) {
            const rt_instr *x = &g->instr[k];
            for (int a = 0; a < x->nin && a < RT_MAX_IN; a++)
                add_map(g, x->in[a], b, last, maps, &n);
            add_map(g, x->out, b, last, maps, &n);
        }
        for (int32_t x = kstart[b]; x < kstart[b + 1]; x++) {
            const rt_kernel *k = &p->kernel[klist[x]];
            for (int32_t q = 0; k->param && q < k->nin + k->nout; q++)
                add_map(g, k->param[q], b, last, maps, &n);
        }
    }
    mapstart[nb] = n;
    /* the items of each body by the hash of their slots, then microbatch */
    for (int32_t b = 0; b < g->nbody; b++) {
        const int32_t *bm = maps + mapstart[b];
        int32_t nm = mapstart[b + 1] - mapstart[b], nk = 0;
        for (int32_t x = istart[b]; x < istart[b + 1]; x++) {
            int32_t i = ilist[x], j = g->item[2 * i + 1];
            uint64_t h = 1469598103934665603u;
            for (int32_t q = 0; q < nm; q++)
                h = (h ^ (uint64_t)(uint32_t)g->slotmap[(int64_t)bm[q] * g->nmb + j]) *
                    1099511628211u;
            key[nk++] = (sample_key){h, j, i};
        }
        qsort(key, (size_t)nk, sizeof *key, cmp_sample);
        /* within a hash, the classes of equal slots: of each, the first
         * item of its least microbatch and the first of its greatest (the
         * keys ascend by microbatch, then item). Past SAMPLE_CLASSES
         * classes in one hash (slots made to collide), every item left
         * of it is kept: more items are as sound, and the work stays
         * linear */
        for (int32_t lo = 0, hi; lo < nk; lo = hi) {
            for (hi = lo + 1; hi < nk && key[hi].hash == key[lo].hash; hi++)
                ;
            int classes = 0;
            for (int32_t a = lo; a < hi; a++) {
                if (key[a].item < 0)
                    continue; /* in an earlier class */
                if (++classes > SAMPLE_CLASSES) {
                    kept[key[a].item] = true;
                    continue;
                }
                int32_t least = key[a].item, most = key[a].item, mostj = key[a].j;
                for (int32_t c = a + 1; c < hi; c++)
                    if (key[c].item >= 0 && same_slots(g, bm, nm, key[a].j, key[c].j)) {
                        if (key[c].j > mostj) {
                            most = key[c].item;
                            mostj = key[c].j;
                        }
                        key[c].item = -1;
                    }
                kept[least] = kept[most] = true;
            }
        }
    }
    for (int32_t i = 0; i < g->nitem; i++)
        if (kept[i])
            out[(*nkeep)++] = i;
done:
    free(last);
    free(maps);
    free(mapstart);
    free(kbody);
    free(kstart);
    free(klist);
    free(istart);
    free(ilist);
    free(key);
    free(kept);
    if (!ok) {
        free(out);
        return rt_plan_nomem(err);
    }
    *keep = out;
    return true;
}
