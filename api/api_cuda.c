/* api_cuda.c: `--emit fused-ir` and `--emit cuda`: the fusion pass and the
 * kernel generator over each program of a compiled model. */
#include "api_cuda.h"

#include "api_internal.h"
#include "codegen/cuda.h"
#include "codegen/nvrtc.h"
#include "passes/fuse.h"
#include "passes/passes.h"

#include <string.h>

/* One program's groups (fused-ir) or kernels (cuda) into b. */
static bool emit_one(const ir_module *m, bool cuda, const char *targets, su_buf *b, su_buf *err)
{
    pass_fusion f; /* as the plan writer groups them (codegen/plan_build.c) */
    bool ok = pass_fuse_planned(m, &f, NULL, err);
    if (ok && !cuda)
        pass_fusion_print(m, &f, b);
    if (ok && cuda) {
        cg_cuda c;
        ok = cg_cuda_generate(m, &f, &c, err);
        if (ok)
            cg_cuda_print(&c, targets, b);
        cg_cuda_free(&c);
    }
    pass_fusion_free(&f);
    return ok;
}

shardc_status api_emit_kernels(ir_module *const *progs, int n, const char *what,
                               const int *arch, int narchs, char **text, size_t *len,
                               char **error)
{
    jmp_buf oom;
    su_buf b, err, targets;
    su_buf_init(&b, &oom);
    su_buf_init(&err, &oom);
    su_buf_init(&targets, &oom);
    if (setjmp(oom)) {
        su_buf_free(&b);
        su_buf_free(&err);
        su_buf_free(&targets);
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    bool cuda = !strcmp(what, "cuda"), ok = true;
    if (narchs >= 0) /* -1: --arch none, nothing is compiled */
        cg_archs_describe(arch, narchs, &targets);
    for (int s = 0; ok && s < n; s++) {
        if (n > 1)
            su_buf_printf(&b, "%s// ---- stage %d of %d ----\n", s ? "\n" : "", s, n);
        ok = emit_one(progs[s], cuda, narchs >= 0 ? targets.s : NULL, &b, &err);
    }
    shardc_status st = SHARDC_OK;
    if (ok) {
        if (len)
            *len = b.len;
        *text = su_buf_take(&b);
    } else {
        st = api_fail(error, SHARDC_ERR_INTERNAL, "internal error: %s", err.s ? err.s : "fusion");
    }
    su_buf_free(&b);
    su_buf_free(&err);
    su_buf_free(&targets);
    return st;
}
