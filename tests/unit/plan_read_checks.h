/* plan_read_checks.h: reading a plan that must fail, for the unit tests of
 * the plan reader (test_plan.c, test_plan_kernels.c). The includer
 * defines ERRLEN and includes check.h and runtime/plan/plan.h first. */
#ifndef SHARDC_TEST_PLAN_READ_CHECKS_H
#define SHARDC_TEST_PLAN_READ_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rt_plan_read from an exact-size copy, so that ASan sees any overread;
 * the plan is freed, and the message returned (empty when it read). */
static const char *read_msg(const uint8_t *b, size_t n, char *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (n)
        memcpy(copy, b, n);
    su_status st = {SU_OK, ""};
    rt_plan *p = rt_plan_read(copy, n, "model.plan", &st);
    if (p)
        err[0] = 0;
    else
        snprintf(err, ERRLEN, "%.*s", ERRLEN - 1, st.msg[0] ? st.msg : "(failed without a message)");
    rt_plan_free(p);
    free(copy);
    return err;
}

/* The read of b fails with a message holding want, prefixed by the name. */
static void expect_read_error(const uint8_t *b, size_t n, const char *want, int line)
{
    char err[ERRLEN];
    read_msg(b, n, err);
    check_count++;
    if (!strstr(err, want) || strncmp(err, "model.plan: ", 12) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: read error \"%s\", want one with \"%s\"\n", __BASE_FILE__,
                line, err, want);
    }
}
#define EXPECT_READ_ERROR(b, n, want) expect_read_error(b, n, want, __LINE__)

#endif
