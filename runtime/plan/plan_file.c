/* plan_file.c: reading a plan file from disk (rt_plan_load). */
#include "runtime/plan/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

rt_plan *rt_plan_load(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *data = malloc(len ? len : 1);
    if (!data) {
        fail(err, errlen, "%s: out of memory (%zu bytes)", path, len);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, data + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fail(err, errlen, "%s: read failed: %s", path, r < 0 ? strerror(errno) : "early end");
            free(data);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    rt_plan *p = rt_plan_read(data, len, path, err, errlen);
    free(data);
    return p;
}

