/* jit_host.c: a host application that compiles a model in-process and runs
 * it through libshardc's C API (include/shardc.h), with no files: the model
 * is a string, the weights and inputs are the application's own memory.
 *
 *   build/jit_host [MESH]        (default 2x2: four ranks as threads)
 *
 * It prints each output's shape and first values, and the rank-0 report. */
#include "shardc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char model[] =
    "mesh dp, tp\n"
    "let B = 8, D = 16, H = 32\n"
    "input  x  : f32[B, D] shard(dp, _)\n"
    "param  w1 : f32[D, H] shard(_, tp) = normal(0.1)\n"
    "param  w2 : f32[H, D] shard(tp, _) = normal(0.1)\n"
    "y = gelu(x @ w1) @ w2\n"
    "s = sum(y, axis = 1)\n"
    "output y, s\n";

/* Prints the message, frees it, and says whether st was a failure. */
static int failed(shardc_status st, char *err, const char *what)
{
    if (st == SHARDC_OK)
        return 0;
    fprintf(stderr, "jit_host: %s: %s\n", what, err ? err : "out of memory");
    shardc_free(err);
    return 1;
}

int main(int argc, char **argv)
{
    const char *mesh = argc > 1 ? argv[1] : "2x2";
    char *err = NULL;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    int rc = 1;
    if (!opt || failed(shardc_options_set_mesh(opt, mesh, &err), err, "mesh") ||
        failed(shardc_compile_string(opt, "model.sh", model, sizeof model - 1, &prog, &err), err,
               "compile") ||
        failed(shardc_program_plan(prog, &plan, &err), err, "plan"))
        goto out;

    /* The input is the application's memory: x[i][j] = sin(i + j / 16). */
    enum { B = 8, D = 16 };
    static float x[B * D];
    for (int i = 0; i < B; i++)
        for (int j = 0; j < D; j++)
            x[i * D + j] = sinf((float)i + (float)j / 16.0f);

    shardc_session_config cfg = {.backend = "cpu", .comm = "local", .seed = 42};
    if (failed(shardc_session_new(plan, &cfg, &s, &err), err, "session") ||
        failed(shardc_session_bind(s, "x", x, sizeof x, &err), err, "bind x") ||
        failed(shardc_session_run(s, &err), err, "run"))
        goto out;

    printf("ran on mesh %s (%lld ranks); params made from the seed: %s\n", mesh,
           shardc_plan_ranks(plan), shardc_session_generated(s));
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        const void *data;
        shardc_plan_tensor(plan, i, &t);
        if (t.kind[0] != 'o' || failed(shardc_session_output(s, t.name, &data, &t, &err), err,
                                       "output"))
            continue;
        const float *v = data;
        printf("%s %s[", t.name, t.dtype);
        for (int d = 0; d < t.rank; d++)
            printf("%s%lld", d ? ", " : "", t.dim[d]);
        printf("]:");
        for (size_t k = 0; k < t.bytes / sizeof(float) && k < 4; k++)
            printf(" %.6f", v[k]);
        printf("%s\n", t.bytes / sizeof(float) > 4 ? " ..." : "");
    }
    printf("report: %.200s...\n", shardc_plan_report(plan));
    rc = 0;
out:
    shardc_session_free(s);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return rc;
}
