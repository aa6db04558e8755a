/* ckpt_util.h: the unit tests' helpers for checkpoint folders
 * (runtime/exec/checkpoint.h): where the newest index is, and removing a
 * folder with everything in it. */
#ifndef SHARDC_TEST_CKPT_UTIL_H
#define SHARDC_TEST_CKPT_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/<the step folder dir/latest names>/index.json into buf ("" when
 * there is no pointer). */
static inline const char *ckpt_index_path(const char *dir, char *buf, size_t size)
{
    char path[4096], name[256] = "";
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(name, 1, sizeof name - 1, f) : 0;
    if (f)
        fclose(f);
    name[n] = 0;
    name[strcspn(name, "\n")] = 0;
    if (!name[0])
        buf[0] = 0;
    else
        snprintf(buf, size, "%s/%s/index.json", dir, name);
    return buf;
}

/* rm -r path (no links followed): 0, or -1 when something stays. */
static inline int ckpt_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub) {
            rc = -1;
            continue;
        }
        snprintf(sub, n, "%s/%s", path, e->d_name);
        rc |= ckpt_remove_tree(sub);
        free(sub);
    }
    closedir(d);
    return rmdir(path) == 0 ? rc : -1;
}

#endif
