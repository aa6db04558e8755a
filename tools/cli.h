/* cli.h: what the command-line programs (shardc, shardrun) share. Each
 * includes it once, hence the static functions. */
#ifndef SHARDC_TOOLS_CLI_H
#define SHARDC_TOOLS_CLI_H
#include "shardc.h"

#include <string.h>

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

#endif
