/* test_nvrtc_load.c: NVRTC's library is loaded when a kernel is first
 * compiled, never linked: a process that makes a plan without kernels
 * (--arch none) and its report does not map it; one that makes a plan with
 * kernels then has it mapped, where this build has NVRTC and the machine
 * its library (else that plan fails, saying why, and nothing is mapped). */
#include "check.h"
#include "shardc.h"

#include "runtime/cuda/nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char model[] = "mesh dp\n"
                            "input x : f32[8, 16] shard(dp, _)\n"
                            "param w : f32[16, 16] = normal(0.02)\n"
                            "y = gelu(x @ w)\n"
                            "output y\n";

/* Whether NVRTC's library is mapped into this process; -1: no
 * /proc/self/maps to read. */
static int nvrtc_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, "libnvrtc") != NULL;
    fclose(f);
    return found;
}

/* The plan of model for archs, and its report; the plan's status. */
static shardc_status plan_for(const char *archs, char **err)
{
    shardc_options *opt = shardc_options_new();
    CHECK(shardc_options_set_mesh(opt, "2", NULL) == SHARDC_OK);
    shardc_status st = shardc_options_set_archs(opt, archs, err);
    shardc_program *p = NULL;
    if (st == SHARDC_OK)
        st = shardc_compile_string(opt, "m.sh", model, strlen(model), &p, err);
    shardc_plan *plan = NULL;
    if (st == SHARDC_OK)
        st = shardc_program_plan(p, &plan, err);
    char *report = NULL;
    if (st == SHARDC_OK) {
        CHECK(shardc_program_emit(p, "report", &report, NULL, NULL) == SHARDC_OK);
        CHECK(report && strstr(report, "y"));
    }
    shardc_free(report);
    shardc_plan_free(plan);
    shardc_program_free(p);
    shardc_options_free(opt);
    return st;
}

int main(void)
{
    int at_start = nvrtc_mapped();
    if (at_start < 0) {
        printf("skipped: no /proc/self/maps\n");
        return 77;
    }
    CHECK_INT(at_start, 0); /* not linked */
    char *err = NULL;
    CHECK(plan_for("none", &err) == SHARDC_OK);
    CHECK(err == NULL);
    CHECK_INT(nvrtc_mapped(), 0);
    shardc_status st = plan_for("sm_90", &err);
    if (st == SHARDC_OK) {
        CHECK_INT(nvrtc_mapped(), 1); /* loaded to compile the gelu's kernel */
        CHECK(rt_nvrtc_available());
        CHECK_STR(rt_nvrtc_why(), "");
    } else {
        /* a build without NVRTC, or its library not on this machine */
        CHECK(err && (strstr(err, "NVRTC is not available") ||
                      strstr(err, "NVRTC cannot be loaded")));
        CHECK_INT(nvrtc_mapped(), 0);
        CHECK(!rt_nvrtc_available() && *rt_nvrtc_why());
    }
    shardc_free(err);
    return CHECK_DONE();
}
