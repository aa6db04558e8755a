/* test_master_init.c: the plan's states made from a param (RT_INIT_PARAM,
 * the f32 master copy of a bf16 param): written and read back with their
 * param's name, and refused by the validator when the name is of no param
 * or the shapes differ. */
#include "api/api_internal.h"
#include "check.h"
#include "runtime/plan/plan.h"

#include <shardc.h>
#include <stdlib.h>
#include <string.h>

static const char MODEL[] =
    "mesh dp\n"
    "input x : f32[4, 8] shard(dp, _)\n"
    "param w : bf16[8, 8] = normal(0.1)\n"
    "loss = mse(cast(cast(x, bf16) @ w, f32), x)\n"
    "train loss with adamw(lr = 0.001) zero 1 over dp\n";

static rt_io *find(rt_plan *p, const char *name)
{
    for (int i = 0; i < p->nio; i++)
        if (!strcmp(p->io[i].name, name))
            return &p->io[i];
    return NULL;
}

static void expect_invalid(rt_plan *p, const char *want)
{
    su_status err;
    CHECK(!rt_plan_validate(p, &err));
    CHECK_STR(err.msg, want);
}

int main(void)
{
    shardc_options *opt = shardc_options_new();
    CHECK(shardc_options_set_mesh(opt, "2", NULL) == SHARDC_OK);
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    char *err = NULL;
    CHECK(shardc_compile_string(opt, "m.sh", MODEL, strlen(MODEL), &prog, &err) == SHARDC_OK);
    CHECK(shardc_program_plan(prog, &plan, &err) == SHARDC_OK);
    rt_plan *p = plan->p;
    rt_io *m = find(p, "opt.w.master");
    CHECK(m && m->kind == RT_IO_STATE && m->init == RT_INIT_PARAM);
    CHECK_STR(m->init_param, "w");
    CHECK(m->type.dtype == RT_F32 && m->sh.naxes[0] == 1); /* sharded over dp by zero 1 */
    CHECK(find(p, "w")->sh.naxes[0] == 0);                 /* the param is not */

    /* written and read back: the same bytes */
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    su_status e;
    CHECK(rt_plan_write(p, &a, &na, &e));
    rt_plan *q = rt_plan_read(a, na, "m.plan", &e);
    CHECK(q != NULL);
    CHECK_STR(find(q, "opt.w.master")->init_param, "w");
    CHECK(find(q, "opt.w.m")->init_param == NULL);
    CHECK(rt_plan_write(q, &b, &nb, &e));
    CHECK(na == nb && !memcmp(a, b, na));

    char *good = m->init_param;
    m->init_param = (char *)"nope";
    expect_invalid(p, "I/O entry 2 (opt.w.master): made from param 'nope', which the plan "
                      "does not have");
    m->init_param = (char *)"x"; /* an input, not a param */
    expect_invalid(p, "I/O entry 2 (opt.w.master): made from param 'x', which the plan "
                      "does not have");
    m->init_param = good;
    m->type.dim[1] = 4;
    m->type.dim[0] = 16;
    expect_invalid(p, "I/O entry 2 (opt.w.master): made from param 'w', but it is f32[16, 4] "
                      "and the param bf16[8, 8]");
    m->type.dim[0] = 8;
    m->type.dim[1] = 8;
    m->init = RT_INIT_ZEROS;
    expect_invalid(p, "I/O entry 2 (opt.w.master): names param 'w' without the initializer "
                      "param");
    m->init = RT_INIT_PARAM;
    su_status err2;
    CHECK(rt_plan_validate(p, &err2));

    free(a);
    free(b);
    rt_plan_free(q);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return CHECK_DONE();
}
