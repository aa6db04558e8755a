/* api_cuda.c: `--emit fused-ir` and `--emit cuda`: the fusion pass and the
 * kernel generator over each program of a compiled model. */
#include "api_cuda.h"

#include "api_internal.h"
#include "codegen/cuda.h"
#include "runtime/cuda/nvrtc.h"
#include "passes/fuse.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* `--emit fused-ir` or `--emit cuda` being made: what it holds, freed by
 * api_emit_kernels whichever way it ended. */
typedef struct kernels_run {
    jmp_buf oom;
    ir_module *const *progs;
    const pass_fusion *fusion; /* [n], or NULL: group them here */
    int n;
    bool cuda;
    const int *arch;
    int narchs;
    su_buf b, err, targets;
    pass_fusion f;          /* a program's groups */
    cg_cuda c;              /* their kernels */
    char *text;             /* the result (malloc'd) */
    size_t len;
    bool ok;
} kernels_run;

/* One program's groups (fused-ir) or kernels (cuda) into r->b. */
static bool emit_one(kernels_run *r, int s, const char *targets)
{
    const ir_module *m = r->progs[s];
    /* the pipeline's groups; a plan without kernels has none, so they are
     * made here as the fuse pass makes them */
    const pass_fusion *f = r->fusion ? &r->fusion[s] : &r->f;
    bool ok = r->fusion || pass_fuse_planned(m, &r->f, NULL, &r->err);
    if (ok && !r->cuda)
        pass_fusion_print(m, f, &r->b);
    if (ok && r->cuda) {
        ok = cg_cuda_generate(m, f, &r->c, &r->err);
        if (ok)
            cg_cuda_print(&r->c, targets, &r->b);
        cg_cuda_free(&r->c);
    }
    pass_fusion_free(&r->f);
    return ok;
}

static void emit_kernels(void *arg)
{
    kernels_run *r = arg;
    if (r->narchs >= 0) /* -1: --arch none, nothing is compiled */
        rt_archs_describe(r->arch, r->narchs, &r->targets);
    r->ok = true;
    for (int s = 0; r->ok && s < r->n; s++) {
        if (r->n > 1)
            su_buf_printf(&r->b, "%s// ---- stage %d of %d ----\n", s ? "\n" : "", s, r->n);
        r->ok = emit_one(r, s, r->narchs >= 0 ? r->targets.s : NULL);
    }
    if (r->ok) {
        r->len = r->b.len;
        r->text = su_buf_take(&r->b);
    }
}

shardc_status api_emit_kernels(ir_module *const *progs, const pass_fusion *fusion, int n,
                               const char *what, const int *arch, int narchs, char **text,
                               size_t *len, char **error)
{
    kernels_run r = {.progs = progs, .fusion = fusion, .n = n, .cuda = !strcmp(what, "cuda"),
                     .arch = arch, .narchs = narchs};
    su_buf_init(&r.b, &r.oom);
    su_buf_init(&r.err, &r.oom);
    su_buf_init(&r.targets, &r.oom);
    bool done = su_catch(&r.oom, emit_kernels, &r);
    shardc_status st = SHARDC_OK;
    if (!done)
        st = api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    else if (!r.ok)
        st = api_fail(error, SHARDC_ERR_INTERNAL, "internal error: %s",
                      r.err.s ? r.err.s : "fusion");
    pass_fusion_free(&r.f);
    cg_cuda_free(&r.c);
    su_buf_free(&r.b);
    su_buf_free(&r.err);
    su_buf_free(&r.targets);
    if (st != SHARDC_OK) {
        free(r.text);
        return st;
    }
    if (len)
        *len = r.len;
    *text = r.text;
    return SHARDC_OK;
}
