/* fuzz_replay.c: runs a fuzz target's LLVMFuzzerTestOneInput over files,
 * without libFuzzer, so that a plain (or sanitizer) build replays the seed
 * corpus and past findings as a ctest.
 *
 *   replay_TARGET PATH...   (a folder is read recursively; entries that are
 *                            not regular files or folders are skipped)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_DEPTH = 16 }; /* guards against symlink loops */

/* Reads the whole file; NULL (with a message) when it cannot. */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    if (!buf || ferror(f)) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    /* an exact-size copy, so that ASan catches reads past the input */
    uint8_t *exact = buf ? malloc(n ? n : 1) : NULL;
    if (exact)
        memcpy(exact, buf, n);
    free(buf);
    *size = n;
    return exact;
}

/* Runs the target on path, or on everything under it; counts the inputs
 * run and returns 0 if any could not be read, 1 otherwise. */
static int replay(const char *path, int depth, long *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 0;
    }
    if (S_ISREG(st.st_mode)) {
        size_t size;
        uint8_t *data = read_file(path, &size);
        if (!data)
            return 0;
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        ++*count;
        return 1;
    }
    if (!S_ISDIR(st.st_mode) || depth >= MAX_DEPTH)
        return 1;
    DIR *dir = opendir(path);
    if (!dir) {
        perror(path);
        return 0;
    }
    int ok = 1;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.') /* ., .., hidden files */
            continue;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(len);
        if (!sub) {
            ok = 0;
            break;
        }
        snprintf(sub, len, "%s/%s", path, e->d_name);
        ok &= replay(sub, depth + 1, count);
        free(sub);
    }
    closedir(dir);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    long count = 0;
    int ok = 1;
    for (int i = 1; i < argc; i++)
        ok &= replay(argv[i], 0, &count);
    printf("%s: %ld inputs replayed\n", argv[0], count);
    return ok ? 0 : 1;
}
