/* shardc.h: the public C API of libshardc, the only header a host
 * application needs (DESIGN.md §6).
 *
 * Every call returns a status; calls that can fail with a message hand it
 * back through `char **error` (free it with shardc_free). The library keeps
 * no global mutable state: separate options and programs may be used from
 * separate threads at once. It never prints and never exits.
 */
#ifndef SHARDC_H
#define SHARDC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHARDC_API __attribute__((visibility("default")))
#else
#define SHARDC_API
#endif

typedef enum shardc_status {
    SHARDC_OK = 0,
    SHARDC_ERR_INPUT = 1,    /* the model, IR or data the user gave is wrong */
    SHARDC_ERR_USAGE = 2,    /* the call's arguments are wrong */
    SHARDC_ERR_INTERNAL = 3, /* a bug in shardc */
    SHARDC_ERR_NOMEM = 4,    /* out of memory */
    SHARDC_ERR_IO = 5,       /* a file could not be read or written */
} shardc_status;

/* The library's version, "MAJOR.MINOR.PATCH". */
SHARDC_API const char *shardc_version(void);

/* Frees a string or buffer the library handed out. */
SHARDC_API void shardc_free(void *p);

/* ---- compile options ---- */

typedef struct shardc_options shardc_options;

/* New options: mesh sizes from the model's defaults, no -D overrides.
 * NULL only when out of memory. */
SHARDC_API shardc_options *shardc_options_new(void);
SHARDC_API void shardc_options_free(shardc_options *opt);

/* Sets the mesh axis sizes, major to minor, as `--mesh 8x4` does: "8x4".
 * SHARDC_ERR_USAGE with a message for text that is not sizes joined by 'x'
 * (a zero size is accepted here and reported against the model's mesh). */
SHARDC_API shardc_status shardc_options_set_mesh(shardc_options *opt, const char *sizes,
                                                 char **error);

/* Overrides the model's `let NAME = ...` with value, as `-D NAME=VALUE`.
 * A later call for the same name replaces the earlier one. */
SHARDC_API shardc_status shardc_options_define(shardc_options *opt, const char *name,
                                               long long value, char **error);

/* ---- compilation ---- */

typedef struct shardc_program shardc_program;

/* Compiles a model in the shard language, or textual IR when filename ends
 * in ".ir". filename is used in messages. On failure *out is NULL and
 * *error (when error is not NULL) holds the diagnostic:
 * "file:line:col: error: message", the source line and a caret. */
SHARDC_API shardc_status shardc_compile_string(const shardc_options *opt, const char *filename,
                                               const char *text, size_t len,
                                               shardc_program **out, char **error);

/* As shardc_compile_string, reading the file at path (SHARDC_ERR_IO when it
 * cannot be read). */
SHARDC_API shardc_status shardc_compile_file(const shardc_options *opt, const char *path,
                                             shardc_program **out, char **error);

SHARDC_API void shardc_program_free(shardc_program *prog);

/* Renders the program as text: what = "ir" gives the textual IR. *text is
 * NUL-terminated, *len (when len is not NULL) its length; free with
 * shardc_free. SHARDC_ERR_USAGE for an unknown `what`. */
SHARDC_API shardc_status shardc_program_emit(const shardc_program *prog, const char *what,
                                             char **text, size_t *len, char **error);

#ifdef __cplusplus
}
#endif

#endif
