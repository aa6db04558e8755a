/* api_error.c: the API's messages: every entry point's error text goes
 * through api_fail. */
#include "api_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

shardc_status api_fail(char **error, shardc_status st, const char *fmt, ...)
{
    if (error) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        *error = malloc((size_t)n + 1);
        if (*error) {
            va_start(ap, fmt);
            vsnprintf(*error, (size_t)n + 1, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

shardc_status api_status(char **error, const su_status *st)
{
    static const shardc_status code[] = {
        [SU_OK] = SHARDC_ERR_INTERNAL, /* a failure that did not say: a bug */
        [SU_INPUT] = SHARDC_ERR_INPUT,
        [SU_USAGE] = SHARDC_ERR_USAGE,
        [SU_IO] = SHARDC_ERR_IO,
        [SU_NOMEM] = SHARDC_ERR_NOMEM,
        [SU_GPU] = SHARDC_ERR_GPU,
        [SU_PEER] = SHARDC_ERR_PEER,
        [SU_INTERNAL] = SHARDC_ERR_INTERNAL,
    };
    shardc_status c = (unsigned)st->kind < sizeof code / sizeof *code ? code[st->kind]
                                                                       : SHARDC_ERR_INTERNAL;
    return api_fail(error, c, "%s", st->msg[0] ? st->msg : "failed (no message)");
}
