/* cli.h: what the command-line programs (shardc, shardrun) share. Each
 * includes it once, hence the static functions. */
#ifndef SHARDC_TOOLS_CLI_H
#define SHARDC_TOOLS_CLI_H
#include "shardc.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Exit codes: 0 success, 1 an error in the user's input (or a file that
 * cannot be read or written, or more memory than the machine gives: a
 * model or plan too big for it), 2 bad usage, 3 an internal error, 4 no GPU
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
    case SHARDC_ERR_INPUT: case SHARDC_ERR_IO: case SHARDC_ERR_NOMEM: return EXIT_INPUT;
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

/* Whether path can be written once the work is done
 * (shardc_check_writable: a file replaced through a temporary file in its
 * folder, or with folder, a folder made with its missing parents). Said
 * before the work (a training run, a compile with NVRTC) rather than after
 * it, when its results would be lost. Returns 0, or EXIT_INPUT after
 * printing why to stderr; exits on an allocation failure. */
static int cli_check_writable(const char *tool, const char *what, const char *path, bool folder)
{
    if (!path)
        return 0;
    char *msg = NULL;
    shardc_status st = shardc_check_writable(path, folder, &msg);
    if (st != SHARDC_OK)
        fprintf(stderr, "%s: error: %s %s\n", tool, what, msg ? msg : "out of memory");
    shardc_free(msg);
    return st == SHARDC_OK ? 0 : EXIT_INPUT;
}

#endif
