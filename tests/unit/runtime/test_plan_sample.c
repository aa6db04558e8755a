/* test_plan_sample.c: the validator checks a program in loop form on a
 * sample of its items expanded (rt_plan_loop_sample: for each body and
 * each tuple of slots its buffers take, the items of the least and the
 * greatest microbatch), not on the whole expansion. The sample must give
 * the whole expansion's verdict on every plan. Compiled pipelines (1F1B
 * with kernels where NVRTC is built in, interleaved, GPipe; 6 to 16
 * microbatches, so that slots cycle: at 8, interleaved's first stage
 * takes best fit's placement, whose slots do not, and the sample is the
 * whole) pass both; then each is edited at
 * random, an edit at a time (a step or an offset of a body's instruction,
 * a microbatch's slot, a slot's copy, an operand, a result, a kernel's
 * parameter, a buffer's place, an item's microbatch), and the edited
 * stage's two verdicts (rt_plan_validate_stage, and the same on the whole
 * expansion) must agree on every edited plan. The edits are drawn so that both kinds
 * of verdict occur often: the test fails when fewer than a tenth of the
 * edits of a plan are refused, or fewer than a tenth accepted. And the
 * sample is smaller than the expansion (the point of it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "check.h"
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"
#include <shardc.h>

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t draw(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (uint32_t)(rng % n) : 0;
}

/* The slots of map m: its largest, plus one. */
static int32_t slots_of(const rt_program *g, int32_t m)
{
    int32_t k = 0;
    for (int32_t j = 0; j < g->nmb; j++)
        if (g->slotmap[(int64_t)m * g->nmb + j] >= k)
            k = g->slotmap[(int64_t)m * g->nmb + j] + 1;
    return k;
}

/* One edit of stage s at random: *cell the int32 or int64 changed, its old
 * value kept for undo. */
typedef struct edit {
    int32_t *i32;
    int64_t *i64;
    int64_t old;
    const char *what;
} edit;

static void set32(edit *e, int32_t *p, int32_t v, const char *what)
{
    *e = (edit){.i32 = p, .old = *p, .what = what};
    *p = v;
}

static void set64(edit *e, int64_t *p, int64_t v, const char *what)
{
    *e = (edit){.i64 = p, .old = *p, .what = what};
    *p = v;
}

static void undo(const edit *e)
{
    if (e->i32)
        *e->i32 = (int32_t)e->old;
    if (e->i64)
        *e->i64 = e->old;
}

/* A buffer of g: one the body's instructions use (so sizes and places
 * are alike), or any. */
static int32_t some_buffer(const rt_program *g)
{
    if (draw(4) == 0)
        return (int32_t)draw((uint32_t)g->nbuf);
    const rt_instr *x = &g->instr[draw((uint32_t)g->ninstr)];
    return x->nin && draw(2) ? x->in[draw((uint32_t)x->nin)] : x->out;
}

static bool make_edit(rt_plan *p, int s, edit *e)
{
    rt_program *g = &p->stage[s];
    int32_t k = (int32_t)draw((uint32_t)g->ninstr);
    rt_instr *x = &g->instr[k];
    switch (draw(9)) {
    case 0: /* a step: a few rows more or less a microbatch */
        if (!g->instr_step)
            return false;
        set64(e, &g->instr_step[k], g->instr_step[k] + (int64_t)draw(9) - 4, "a step");
        return true;
    case 1: /* the offset of an instruction that steps */
        for (int t = 0; t < 64 && !(g->instr_step && g->instr_step[k]); t++)
            k = (int32_t)draw((uint32_t)g->ninstr);
        if (!g->instr_step || !g->instr_step[k])
            return false;
        x = &g->instr[k];
        set64(e, &x->offset, x->offset + g->instr_step[k] * ((int64_t)draw(5) - 2) +
                                 (int64_t)draw(3) - 1, "an offset");
        return true;
    case 2: { /* a microbatch's slot, among the map's slots */
        if (g->nslotmap < 1)
            return false;
        int32_t m = (int32_t)draw((uint32_t)g->nslotmap), j = (int32_t)draw((uint32_t)g->nmb);
        set32(e, &g->slotmap[(int64_t)m * g->nmb + j], (int32_t)draw((uint32_t)slots_of(g, m)),
              "a slot");
        return true;
    }
    case 3: /* a slot's copy */
        if (g->ncopy < 1)
            return false;
        set32(e, &g->copy_buf[draw((uint32_t)g->ncopy)], some_buffer(g), "a copy");
        return true;
    case 4: /* an operand */
        if (x->nin < 1)
            return false;
        set32(e, &x->in[draw((uint32_t)x->nin)], some_buffer(g), "an operand");
        return true;
    case 5: /* a result */
        if (x->out < 0)
            return false;
        set32(e, &x->out, some_buffer(g), "a result");
        return true;
    case 6: { /* a kernel's parameter */
        int32_t n = 0, pick;
        for (int32_t i = 0; i < p->nkernels; i++)
            n += p->kernel[i].stage == s && p->kernel[i].param;
        if (!n)
            return false;
        pick = (int32_t)draw((uint32_t)n);
        for (int32_t i = 0; i < p->nkernels; i++) {
            rt_kernel *kn = &p->kernel[i];
            if (kn->stage != s || !kn->param || pick--)
                continue;
            set32(e, &kn->param[draw((uint32_t)(kn->nin + kn->nout))], some_buffer(g),
                  "a kernel's parameter");
            return true;
        }
        return false;
    }
    case 7: { /* a buffer's place: another's */
        int32_t a = some_buffer(g), b = some_buffer(g);
        if (a < 0 || b < 0)
            return false;
        set64(e, &g->buf_offset[a], g->buf_offset[b], "a buffer's place");
        return true;
    }
    default: /* an item's microbatch */
        if (g->nitem < 1)
            return false;
        set32(e, &g->item[2 * draw((uint32_t)g->nitem) + 1], (int32_t)draw((uint32_t)g->nmb),
              "an item's microbatch");
        return true;
    }
}

/* The instructions of the expansion and of the sample, over p's stages in
 * loop form. */
static void sizes(const rt_plan *p, int64_t *whole, int64_t *sample)
{
    *whole = *sample = 0;
    for (int s = 0; s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        if (!g->nbody)
            continue;
        int32_t *keep = NULL, nkeep = 0;
        su_status err = {SU_OK, ""};
        CHECK(rt_plan_loop_sample(p, s, &keep, &nkeep, &err));
        for (int32_t i = 0; i < g->nitem; i++)
            *whole += rt_plan_body_len(g, g->item[2 * i]);
        for (int32_t r = 0; r < nkeep; r++)
            *sample += rt_plan_body_len(g, g->item[2 * keep[r]]);
        free(keep);
    }
}

static void check_plan(const char *name, const char *mesh, const char *schedule, int mbs,
                       const char *archs, int edits)
{
    char path[4200], *err = NULL;
    snprintf(path, sizeof path, "%s/examples/pipeline.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    static const struct {
        const char *name;
        long long v;
    } defs[] = {{"S", 16}, {"D", 32}, {"NH", 2}, {"V", 64}, {"L", 4}};
    bool ok = opt && shardc_options_set_mesh(opt, mesh, &err) == SHARDC_OK &&
              shardc_options_set_schedule(opt, schedule, &err) == SHARDC_OK &&
              shardc_options_set_microbatches(opt, mbs, &err) == SHARDC_OK &&
              shardc_options_define(opt, "B", 2LL * mbs, &err) == SHARDC_OK &&
              shardc_options_set_archs(opt, archs, &err) == SHARDC_OK;
    for (size_t i = 0; ok && i < sizeof defs / sizeof *defs; i++)
        ok = shardc_options_define(opt, defs[i].name, defs[i].v, &err) == SHARDC_OK;
    const char *cache = getenv("SHARDC_CACHE_DIR");
    if (ok && cache && *cache)
        ok = shardc_options_set_cache_dir(opt, cache, &err) == SHARDC_OK;
    ok = ok && shardc_compile_file(opt, path, &prog, &err) == SHARDC_OK &&
         shardc_program_plan(prog, &plan, &err) == SHARDC_OK;
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "%s: %s\n", name, err ? err : "?");
        goto done;
    }
    rt_plan *p = plan->p;
    su_status e1 = {SU_OK, ""}, e2 = {SU_OK, ""};
    CHECK(rt_plan_validate(p, &e1));
    for (int s = 0; s < p->nstages; s++)
        CHECK(rt_plan_validate_stage(p, s, &e1) && rt_plan_validate_stage_whole(p, s, &e2));
    int nloop = 0, nkern = 0;
    for (int s = 0; s < p->nstages; s++)
        nloop += p->stage[s].nbody > 0;
    for (int32_t i = 0; i < p->nkernels; i++)
        nkern += p->kernel[i].param != NULL;
    CHECK(nloop == p->nstages);
    int64_t whole, sample;
    sizes(p, &whole, &sample);
    CHECK(sample < whole);
    int refused = 0, accepted = 0, made = 0;
    for (int t = 0; t < edits; t++) {
        int s = (int)draw((uint32_t)p->nstages);
        edit e;
        if (!make_edit(p, s, &e))
            continue;
        made++;
        e1 = (su_status){SU_OK, ""};
        e2 = (su_status){SU_OK, ""};
        bool a = rt_plan_validate_stage(p, s, &e1), b = rt_plan_validate_stage_whole(p, s, &e2);
        CHECK(a == b);
        if (a != b)
            fprintf(stderr, "%s: edit %d (%s, stage %d): the sample says %s, the whole "
                    "expansion %s\n", name, t, e.what, s, a ? "valid" : e1.msg,
                    b ? "valid" : e2.msg);
        refused += !b;
        accepted += b;
        undo(&e);
    }
    CHECK(made >= edits / 2 && refused * 10 >= made && accepted * 10 >= made);
    printf("%s: %d edits, %d refused, %d accepted; %d kernels with parameters; the sample "
           "expands %lld of %lld instructions\n", name, made, refused, accepted, nkern,
           (long long)sample, (long long)whole);
    CHECK(rt_plan_validate(p, &e1)); /* every edit undone */
done:
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    shardc_free(err);
}

int main(void)
{
    /* kernels where this library compiles them (NVRTC through the build's
     * cache), else a plan without */
    char *err = NULL;
    shardc_options *probe = shardc_options_new();
    bool nvrtc = probe && shardc_options_set_archs(probe, "sm_90", &err) == SHARDC_OK;
    shardc_options_free(probe);
    shardc_free(err);
    check_plan("1f1b", "1x4x1", "1f1b", 12, nvrtc ? "sm_90" : "none", 400);
    check_plan("interleaved", "1x2x1", "interleaved(2)", 16, "none", 100);
    check_plan("gpipe", "1x2x1", "gpipe", 6, "none", 100);
    return CHECK_DONE();
}
