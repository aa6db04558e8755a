/* check.h: the unit tests' checking macros. A failed check prints where and
 * what, and the test's exit status counts failures (ctest reads it). */
#ifndef SHARDC_TEST_CHECK_H
#define SHARDC_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                          \
    do {                                                                     \
        check_count++;                                                       \
        if (!(cond)) {                                                       \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                    \
    } while (0)

#define CHECK_STR(got, want)                                                 \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        check_count++;                                                       \
        if (!g_ || strcmp(g_, w_) != 0) {                                    \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n  got:  \"%s\"\n  want: \"%s\"\n", \
                    __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_);        \
        }                                                                    \
    } while (0)

#define CHECK_INT(got, want)                                                 \
    do {                                                                     \
        long long g_ = (long long)(got), w_ = (long long)(want);             \
        check_count++;                                                       \
        if (g_ != w_) {                                                      \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s == %lld, want %lld\n",  \
                    __FILE__, __LINE__, #got, g_, w_);                       \
        }                                                                    \
    } while (0)

/* Ends main(): prints a summary and returns the exit status. */
#define CHECK_DONE()                                                         \
    (printf("%d checks, %d failed\n", check_count, check_failures),          \
     check_failures ? 1 : 0)

/* The repository's root, from this header's path (tests/unit/check.h), for
 * tests that read examples/. */
static inline const char *check_repo_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return ".";
        *slash = 0;
    }
    return dir;
}

/* The model at path (at most 64 KiB), with " zero K over dp" appended to
 * its train line when zero > 0: malloc'd, NULL when it cannot be read or
 * has no train line to add to. */
static inline char *check_model_text(const char *path, int zero)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *text = calloc(1, 1 << 16);
    size_t n = text ? fread(text, 1, (1 << 16) - 64, fp) : 0;
    fclose(fp);
    char *train = text ? strstr(text, "\ntrain ") : NULL;
    if (!text || n == 0 || (zero && !train)) {
        free(text);
        return NULL;
    }
    if (zero) {
        char *eol = strchr(train + 1, '\n');
        size_t at = eol ? (size_t)(eol - text) : n;
        char add[32];
        int k = snprintf(add, sizeof add, " zero %d over dp", zero);
        memmove(text + at + k, text + at, n - at + 1);
        memcpy(text + at, add, (size_t)k);
    }
    return text;
}

#endif
