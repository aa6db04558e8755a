/* test_cuda_backend.c: what of the cuda backend runs without a GPU.
 *
 * - shardc_backend_check and shardc_session_new report a machine without
 *   a usable CUDA driver or a GPU with their own status,
 *   SHARDC_ERR_NO_GPU, and "no usable CUDA driver: ..." or "no CUDA
 *   device: ..." (checked only where rt_cu_probe finds no GPU: on a GPU
 *   machine tests/gpu/run.sh tests the backend itself); an unknown backend
 *   is a usage error.
 * - rt_cuda_check_plan refuses a plan without kernels (--arch none) and a
 *   matmul whose batch dimensions broadcast partly (which cuBLASLt's
 *   strided batches cannot express), naming the first instruction it
 *   cannot run (unit/test_plan_cuda checks that it takes every example's
 *   plan with kernels). Neither needs NVRTC.
 * - $SHARDC_BLAS_WORKSPACE's value becomes cuBLASLt's workspace in bytes
 *   (unset or empty: 32 MiB; 0: none), and a value that is no size is a
 *   usage error naming it. */
#include "shardc.h"
#include "runtime/exec/cuda.h"
#include "runtime/cuda/cuda_blas.h"
#include "runtime/cuda/cuda_driver.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_cuda_backend.XXXXXX";

/* The plan of examples/file (text NULL) or of text, on mesh. */
static rt_plan *compile(const char *file, const char *text, const char *mesh, const char *archs)
{
    char path[4200], out[4300];
    su_status err;
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    snprintf(out, sizeof out, "%s/plan", tmpdir);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    char *e = NULL;
    bool ok = shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK &&
              shardc_options_set_archs(opt, archs, &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK &&
              (text ? shardc_compile_string(opt, file, text, strlen(text), &prog, &e)
                    : shardc_compile_file(opt, path, &prog, &e)) == SHARDC_OK &&
              shardc_program_save_plan(prog, out, &e) == SHARDC_OK;
    rt_plan *p = ok ? rt_plan_load(out, &err) : NULL;
    if (!p)
        fprintf(stderr, "  %s on %s: %s\n", file, mesh, e ? e : err.msg);
    CHECK(p != NULL);
    unlink(out);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return p;
}

static bool starts(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* No driver or no GPU: the API's own status and the probe's message. */
static void test_no_gpu(void)
{
    char *e = NULL;
    su_status probe;
    if (rt_cu_probe(&probe) == RT_CU_OK) {
        printf("a GPU is here: the checks of a machine without one are skipped\n");
        return;
    }
    CHECK(starts(probe.msg, "no usable CUDA driver: ") || starts(probe.msg, "no CUDA device: "));
    CHECK_INT(shardc_backend_check("cuda", &e), SHARDC_ERR_NO_GPU);
    CHECK_STR(e, probe.msg);
    shardc_free(e);

    char path[4200];
    snprintf(path, sizeof path, "%s/examples/mlp.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    CHECK(shardc_options_set_archs(opt, "none", &e) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &e) == SHARDC_OK);
    CHECK(prog && shardc_program_plan(prog, &plan, &e) == SHARDC_OK);
    shardc_session_config cfg = {.backend = "cuda"};
    CHECK_INT(plan ? (int)shardc_session_new(plan, &cfg, &s, &e) : -1, SHARDC_ERR_NO_GPU);
    CHECK(s == NULL);
    CHECK_STR(e, probe.msg);
    shardc_free(e);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

static void test_backend_names(void)
{
    char *e = NULL;
    CHECK_INT(shardc_backend_check(NULL, &e), SHARDC_OK);
    CHECK(e == NULL);
    CHECK_INT(shardc_backend_check("cpu", &e), SHARDC_OK);
    CHECK_INT(shardc_backend_check("tpu", &e), SHARDC_ERR_USAGE);
    CHECK_STR(e, "unknown backend 'tpu' (cpu, cuda)");
    shardc_free(e);
}

static void test_plans(void)
{
    su_status err = {SU_OK, ""};
    rt_plan *p = compile("mlp.sh", NULL, "2x2", "none");
    if (p) {
        CHECK_INT(rt_cuda_check_plan(p, &err), -1);
        /* named by its place in the model, then in the plan */
        CHECK(strstr(err.msg, "examples/mlp.sh:12:20: stage 0, instruction 6 (add): no kernel of "
                          "the plan runs it, and the cuda backend has none of its own for it "
                          "(the plan has no kernels: was it compiled with --arch none?)"));
        rt_plan_free(p);
    }
    /* a plan of one matmul: no kernel, so NVRTC is not needed */
    p = compile("batch.sh", "mesh dp\ninput a : f32[2, 1, 4, 8]\ninput b : f32[1, 3, 8, 4]\n"
                            "c = a @ b\noutput c\n", "1", "sm_90");
    if (p) {
        CHECK_INT(rt_cuda_check_plan(p, &err), -1);
        CHECK_STR(err.msg, "batch.sh:4:7: stage 0, instruction 2 (matmul): batch dimensions that "
                       "broadcast against each other other than wholly are not supported on "
                       "the GPU");
        rt_plan_free(p);
    }
}

static void test_blas_workspace(void)
{
    static const struct {
        const char *v;
        size_t want;
    } ok[] = {{NULL, 32 << 20}, {"", 32 << 20}, {"0", 0}, {"4096", 4096}, {"64KiB", 65536},
              {"32MiB", 33554432}, {"2GiB", 2147483648u}, {"1024GiB", (size_t)1 << 40}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        su_status err = {SU_OK, ""};
        size_t n = 7;
        CHECK(rt_blas_workspace_bytes(ok[i].v, &n, &err));
        CHECK_INT((long long)n, (long long)ok[i].want);
    }
    static const char *const bad[] = {"32MB", "-1", "x", "1.5MiB", "32 MiB", "1025GiB",
                                      "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        su_status err = {SU_OK, ""};
        size_t n = 7;
        CHECK(!rt_blas_workspace_bytes(bad[i], &n, &err));
        CHECK_INT(err.kind, SU_USAGE);
        char want[200];
        snprintf(want, sizeof want, "$SHARDC_BLAS_WORKSPACE '%s': expected a number of bytes, "
                 "or a size such as 32MiB (KiB, MiB or GiB), at most 1 TiB", bad[i]);
        CHECK_STR(err.msg, want);
    }
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_backend_names();
    test_no_gpu();
    test_plans();
    test_blas_workspace();
    rmdir(tmpdir);
    return CHECK_DONE();
}
