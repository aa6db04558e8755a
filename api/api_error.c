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
