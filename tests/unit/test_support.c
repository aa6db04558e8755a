/* test_support.c: arenas, buffers, vectors, number formatting and the
 * diagnostic format (file:line:col, source line, caret). */
#include "check.h"
#include "support/support.h"

#include <stdlib.h>

static void test_arena(void)
{
    su_arena a;
    su_arena_init(&a, NULL);
    char *small = su_alloc(&a, 3);
    CHECK(((uintptr_t)small & 15) == 0);
    char *big = su_alloc(&a, 1 << 20); /* larger than a chunk */
    big[(1 << 20) - 1] = 1;
    char *after = su_alloc(&a, 8); /* still served from the first chunk */
    CHECK(after == small + 16);
    CHECK_STR(su_strndup(&a, "abcdef", 3), "abc");
    CHECK_STR(su_sprintf(&a, "%s.%d", "layers", 3), "layers.3");
    su_arena_free(&a);
}

static void test_buf_and_vec(void)
{
    su_buf b;
    su_buf_init(&b, NULL);
    for (int i = 0; i < 1000; i++)
        su_buf_printf(&b, "%d,", i % 10);
    CHECK_INT(b.len, 2000);
    CHECK(b.s[b.len] == 0);
    char *s = su_buf_take(&b);
    CHECK(s[0] == '0' && s[1999] == ',');
    free(s);
    CHECK(b.s == NULL && b.len == 0);
    su_vec v = {0};
    for (intptr_t i = 0; i < 100; i++)
        su_vec_push(&v, NULL, (void *)i);
    CHECK_INT(v.n, 100);
    CHECK_INT((intptr_t)v.v[99], 99);
    su_vec_free(&v);
}

static void test_fmt_double(void)
{
    char out[32];
    const double cases[] = {0.02, 1e-5, 3e-4, 1.0, -2.5, 0.1 + 0.2, 1e300, 123456789.0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        su_fmt_double(out, cases[i]);
        CHECK(strtod(out, NULL) == cases[i]);
    }
    su_fmt_double(out, 0.02);
    CHECK_STR(out, "0.02");
    su_fmt_double(out, 1.0);
    CHECK_STR(out, "1.0");
    su_fmt_double(out, 1e-5);
    CHECK_STR(out, "1e-05");
}

static void test_diag(void)
{
    const char text[] = "mesh dp\n\tx = foo + 1\n";
    su_src src = {"m.sh", text, sizeof text - 1};
    su_diag d;
    su_diag_init(&d, NULL);
    su_error_at(&d, &src, (su_loc){2, 6}, "unknown name '%s'", "foo");
    su_error_at(&d, &src, (su_loc){1, 1}, "a second error is not kept");
    CHECK_STR(d.msg.s, "m.sh:2:6: error: unknown name 'foo'\n"
                       "\tx = foo + 1\n"
                       "\t    ^\n");
    CHECK_INT(d.nerrors, 2);
    su_diag_free(&d);
    su_diag_init(&d, NULL);
    su_error_at(&d, &src, (su_loc){0, 0}, "-D Q: the model has no constant 'Q'");
    CHECK_STR(d.msg.s, "m.sh: error: -D Q: the model has no constant 'Q'\n");
    su_diag_free(&d);
}

static void test_checked_math(void)
{
    int64_t r;
    CHECK(su_mul64(1ll << 31, 1ll << 31, &r) && r == 1ll << 62);
    CHECK(!su_mul64(1ll << 32, 1ll << 32, &r));
    CHECK(!su_add64(INT64_MAX, 1, &r));
}

int main(void)
{
    test_arena();
    test_buf_and_vec();
    test_fmt_double();
    test_diag();
    test_checked_math();
    return CHECK_DONE();
}
