/* cli.h: what the command-line programs (shardc, shardrun) share. Each
 * includes it once, hence the static functions. */
#ifndef SHARDC_TOOLS_CLI_H
#define SHARDC_TOOLS_CLI_H
#include "shardc.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Exit codes: 0 success, 1 an error in the user's input (or a file that
 * cannot be read or written), 2 bad usage, 3 an internal error, 4 no GPU
 * (shardrun --backend cuda without a usable CUDA driver or GPU), 5 the GPU
 * failed during a run, 6 another rank failed, stopped or did not answer
 * (this rank's run failed because of it). */
enum {
    EXIT_INPUT = 1,
    EXIT_USAGE = 2,
    EXIT_INTERNAL = 3,
    EXIT_NO_GPU = 4,
    EXIT_GPU = 5,
    EXIT_PEER = 6,
};

static int exit_code(shardc_status st)
{
    switch (st) {
    case SHARDC_OK: return 0;
    case SHARDC_ERR_INPUT: case SHARDC_ERR_IO: return EXIT_INPUT;
    case SHARDC_ERR_USAGE: return EXIT_USAGE;
    case SHARDC_ERR_NO_GPU: return EXIT_NO_GPU;
    case SHARDC_ERR_GPU: return EXIT_GPU;
    case SHARDC_ERR_PEER: return EXIT_PEER;
    default: return EXIT_INTERNAL;
    }
}

/* The value of option `name` given as "--name VALUE" or "--name=VALUE"
 * (advancing *i past VALUE); "" when VALUE is missing; NULL when argv[*i]
 * is another option. */
static const char *value_of(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (strcmp(argv[*i], name) != 0)
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

/* A file a command reads or writes, by the option that names it. */
typedef struct cli_file {
    const char *what; /* "the model", "-o", ... */
    const char *path; /* NULL: not given */
} cli_file;

/* Milliseconds on a monotonic clock, from an arbitrary start. */
static inline double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Set by a tool whose usage errors another process prints (shardrun on
 * an MPI launcher's ranks but 0): cli_check_outputs then says nothing. */
static bool cli_quiet;

/* Whether paths a and b name one file: the same file once symlinks are
 * followed, where both exist, else the same text. */
static bool cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(a, b) == 0;
}

/* Refuses, as bad usage, an output that would replace one of the inputs
 * (`shardc m.sh -o m.sh` would leave the plan where the model was) or
 * another output: a device or a FIFO (/dev/null, /dev/stdout), which an
 * output streams into rather than replaces, may be named by several.
 * Returns 0, or EXIT_USAGE after printing which two options name the
 * file. */
static int cli_check_outputs(const char *tool, const cli_file *out, int nout,
                             const cli_file *in, int nin)
{
    FILE *say = cli_quiet ? NULL : stderr;
    for (int i = 0; i < nout; i++) {
        struct stat st;
        if (!out[i].path || (stat(out[i].path, &st) == 0 && !S_ISREG(st.st_mode)))
            continue;
        for (int j = 0; j < nin; j++)
            if (in[j].path && cli_same_file(out[i].path, in[j].path)) {
                if (say)
                    fprintf(say, "%s: error: %s %s is %s (%s): the output would replace it; "
                            "choose another file\n", tool, out[i].what, out[i].path, in[j].what,
                            in[j].path);
                return EXIT_USAGE;
            }
        for (int j = 0; j < i; j++)
            if (out[j].path && cli_same_file(out[i].path, out[j].path)) {
                if (say)
                    fprintf(say, "%s: error: %s and %s both name %s: one would replace the "
                            "other; choose two files\n", tool, out[j].what, out[i].what,
                            out[i].path);
                return EXIT_USAGE;
            }
    }
    return 0;
}

/* Whether folder dir (made by the caller, parents and all, when missing)
 * can be written into: its nearest existing folder must be one, and
 * writable. False with the reason in why. */
static bool cli_folder_writable(const char *dir, bool make, char *why, size_t n)
{
    char at[2 * PATH_MAX + 8];
    snprintf(at, sizeof at, "%s", dir);
    struct stat st;
    while (stat(at, &st) != 0) { /* up to what exists: a file there says why */
        if (errno != ENOENT && errno != ENOTDIR) {
            snprintf(why, n, "%s: %s", at, strerror(errno));
            return false;
        }
        if (errno == ENOENT && !make) {
            snprintf(why, n, "the folder %s does not exist", at);
            return false;
        }
        char up[sizeof at];
        snprintf(up, sizeof up, "%s", at);
        snprintf(at, sizeof at, "%s", dirname(up));
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%s is not a folder", at);
        return false;
    }
    if (access(at, W_OK | X_OK) != 0) {
        snprintf(why, n, "cannot write into %s: %s", at, strerror(errno));
        return false;
    }
    return true;
}

/* Whether path can be written once the work is done: a file, replaced
 * whole through a temporary file beside it (so its folder must exist and
 * be writable; a device or FIFO is written in place), or with folder, a
 * folder made with its missing parents. Said before the work (a training
 * run, a compile with NVRTC) rather than after it, when its results would
 * be lost. Returns 0, or EXIT_INPUT after printing why to say (NULL:
 * nowhere). */
static int cli_check_writable(FILE *say, const char *tool, const char *what, const char *path,
                              bool folder)
{
    if (!path)
        return 0;
    char why[8300] = "";
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (folder) {
        if (exists && !S_ISDIR(st.st_mode))
            snprintf(why, sizeof why, "%s is not a folder", path);
        else
            cli_folder_writable(path, true, why, sizeof why);
    } else if (exists && S_ISDIR(st.st_mode)) {
        snprintf(why, sizeof why, "%s is a folder", path);
    } else if (!exists && path[0] && path[strlen(path) - 1] == '/') {
        snprintf(why, sizeof why, "%s ends in /, which names a folder", path);
    } else if (!exists || S_ISREG(st.st_mode)) {
        /* a symlink's target gets the file: an existing one's real path,
         * a dangling one's target (relative: from the link's folder) */
        char real[2 * PATH_MAX + 8], dir[PATH_MAX];
        const char *at = path;
        struct stat lst;
        ssize_t n;
        if (exists && realpath(path, real)) {
            at = real;
        } else if (!exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) &&
                   (n = readlink(path, dir, sizeof dir - 1)) > 0) {
            dir[n] = 0;
            char from[PATH_MAX];
            snprintf(from, sizeof from, "%s", path);
            if (dir[0] == '/')
                snprintf(real, sizeof real, "%s", dir);
            else
                snprintf(real, sizeof real, "%s/%s", dirname(from), dir);
            at = real;
        }
        char up[sizeof real];
        snprintf(up, sizeof up, "%s", at);
        cli_folder_writable(dirname(up), false, why, sizeof why);
    }
    if (!why[0])
        return 0;
    if (say)
        fprintf(say, "%s: error: %s %s cannot be written: %s\n", tool, what, path, why);
    return EXIT_INPUT;
}

#endif
