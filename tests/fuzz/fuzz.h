/* fuzz.h: what the fuzz targets share: the state of one run, kept in one
 * place so that an allocation failure (a longjmp out of the library) can
 * still free it, and the IR round-trip property both targets check.
 * Included by exactly one target per program, hence the static functions. */
#ifndef SHARDC_FUZZ_H
#define SHARDC_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct fuzz_state {
    su_diag diag;       /* the error of the first compilation, if any */
    su_diag pdiag;      /* the error reading the printed IR back */
    su_buf err;         /* ir_verify's message */
    su_buf a, b;        /* print(m), print(parse(print(m))) */
    ir_module *m, *m2;
} fuzz_state;

static void fuzz_init(fuzz_state *st, jmp_buf *oom)
{
    memset(st, 0, sizeof *st);
    su_diag_init(&st->diag, oom);
    su_diag_init(&st->pdiag, oom);
    su_buf_init(&st->err, oom);
    su_buf_init(&st->a, oom);
    su_buf_init(&st->b, oom);
}

static void fuzz_free(fuzz_state *st)
{
    ir_module_free(st->m);
    ir_module_free(st->m2);
    su_buf_free(&st->b);
    su_buf_free(&st->a);
    su_buf_free(&st->err);
    su_diag_free(&st->pdiag);
    su_diag_free(&st->diag);
}

static const char *fuzz_str(const su_buf *b)
{
    return b->s ? b->s : "";
}

/* A broken property is a finding: say which, show the evidence, abort()
 * so that libFuzzer saves the input. */
static void fuzz_fail(const char *what, const char *detail, const char *text)
{
    fprintf(stderr, "fuzz: %s\n%s\n--- IR ---\n%s\n", what, detail, text);
    abort();
}

/* A compilation that fails must say why, and not as an internal error. */
static void fuzz_check_diag(const su_diag *d)
{
    if (d->internal)
        fuzz_fail("internal error", fuzz_str(&d->msg), "");
    if (d->nerrors == 0 || d->msg.len == 0)
        fuzz_fail("compilation failed without a message", "", "");
}

/* st->m must verify, and print(parse(print(m))) == print(m). */
static void fuzz_roundtrip(fuzz_state *st, jmp_buf *oom)
{
    if (!ir_verify(st->m, &st->err))
        fuzz_fail("the module fails ir_verify", fuzz_str(&st->err), "");
    ir_print(st->m, &st->a);
    su_src src = {"fuzz.ir", fuzz_str(&st->a), st->a.len};
    st->m2 = ir_parse(&src, &st->pdiag, oom);
    if (!st->m2)
        fuzz_fail("the printed IR does not parse back", fuzz_str(&st->pdiag.msg),
                  fuzz_str(&st->a));
    ir_print(st->m2, &st->b);
    if (st->a.len != st->b.len || memcmp(fuzz_str(&st->a), fuzz_str(&st->b), st->a.len) != 0)
        fuzz_fail("the IR read back prints differently", fuzz_str(&st->b), fuzz_str(&st->a));
}

#endif
