/* api_check.h: what the C API tests share. */
#ifndef SHARDC_TEST_API_CHECK_H
#define SHARDC_TEST_API_CHECK_H

#include "shardc.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Whether st is SHARDC_ERR_USAGE with want in its message *err (said on
 * stderr when not); *err freed and cleared either way. */
static inline bool usage_error(shardc_status st, char **err, const char *want)
{
    bool ok = st == SHARDC_ERR_USAGE && *err && strstr(*err, want);
    if (!ok)
        fprintf(stderr, "want usage error '%s', got %d: %s\n", want, (int)st,
                *err ? *err : "(none)");
    shardc_free(*err);
    *err = NULL;
    return ok;
}

#endif
