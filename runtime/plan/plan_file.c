/* plan_file.c: reading a plan file from disk (rt_plan_load, plain, and
 * rt_plan_load_as_written, its loop forms kept). */
#include "runtime/plan/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rt_plan *load(const char *path, bool plain, su_status *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        su_fail(err, SU_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        su_fail(err, SU_IO, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *data = malloc(len ? len : 1);
    if (!data) {
        su_fail(err, SU_NOMEM, "%s: out of memory (%zu bytes)", path, len);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, data + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            su_fail(err, SU_IO, "%s: read failed: %s", path, r < 0 ? strerror(errno) : "early end");
            free(data);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    rt_plan *p = plain ? rt_plan_read_plain(data, len, path, err)
                       : rt_plan_read(data, len, path, err);
    free(data);
    return p;
}

rt_plan *rt_plan_load(const char *path, su_status *err)
{
    return load(path, true, err);
}

rt_plan *rt_plan_load_as_written(const char *path, su_status *err)
{
    return load(path, false, err);
}

