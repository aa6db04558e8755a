/* support.h: the small toolbox every stage shares.
 *
 * - su_arena: bump allocation, freed all at once (compiler data: AST, IR,
 *   strings). An allocation failure jumps to the owner's jmp_buf, so no
 *   caller checks for NULL and the library never exits.
 * - su_buf: a growable byte string with printf, for text output.
 * - su_src / su_loc / su_diag: source text, positions, and the one error
 *   message a compilation reports, formatted as
 *   "file:line:col: error: message", the source line, and a caret.
 * - su_wfile: the one way output files are written (file.c): replaced
 *   whole through a renamed temporary file, or written straight into a
 *   device or FIFO, never half-written and never clobbering /dev/null.
 */
#ifndef SHARDC_SUPPORT_H
#define SHARDC_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SU_NORETURN __attribute__((noreturn))
#else
#define SU_PRINTF(f, a)
#define SU_NORETURN
#endif

/* Marks code that cannot be reached; names the file and line. */
#define su_unreachable() su_die_unreachable(__FILE__, __LINE__)
SU_NORETURN void su_die_unreachable(const char *file, int line);

/* ---- memory ---- */

/* Jumps to *oom (when set) on allocation failure; abort()s otherwise. */
SU_NORETURN void su_oom(jmp_buf *oom);
void *su_xmalloc(jmp_buf *oom, size_t n);
void *su_xrealloc(jmp_buf *oom, void *p, size_t n);

/* Allocation failures jump to the jmp_buf of the call the library is
 * serving (each API entry point has its own, api/api.c), never to one of
 * an earlier call. What a function makes for its caller (a module, a
 * pass's result) is the caller's to free, also after a failure jumped past
 * it. A function's own temporaries live in such an object's arena, or the
 * function runs its work through su_guarded and frees them after it,
 * whichever way it ended:
 *
 *     ctx c = {...};                       (what the work holds)
 *     bool ok = su_guarded(oom, work, &c);
 *     ...free what c holds...
 *     if (!ok)
 *         su_oom(oom);                     (pass the failure on)
 *
 * su_guarded runs fn(arg) with *oom set to come back to it (whatever jumps
 * to *oom, an arena, a buffer or a module, stops there first) and puts *oom
 * back: true when fn returned, false when an allocation failed (with oom
 * NULL, allocation failures abort: fn just runs). */
bool su_guarded(jmp_buf *oom, void (*fn)(void *arg), void *arg);
/* The top of a call (an API entry point): runs fn(arg) with *oom set to
 * come back here; true when fn returned, false when an allocation failed.
 * What fn made lives in arg, for the caller to free either way. */
bool su_catch(jmp_buf *oom, void (*fn)(void *arg), void *arg);

typedef struct su_chunk su_chunk;
typedef struct su_arena {
    su_chunk *head;
    jmp_buf *oom;   /* where to jump when memory runs out; may be NULL */
} su_arena;

void su_arena_init(su_arena *a, jmp_buf *oom);
void su_arena_free(su_arena *a);
/* Moves what from holds into to: it lives until su_arena_free(to); from
 * is left empty. */
void su_arena_take(su_arena *to, su_arena *from);
/* Zeroed, 16-byte aligned memory that lives until su_arena_free. */
void *su_alloc(su_arena *a, size_t n);
/* As su_alloc, but not zeroed: for an array its caller writes whole
 * before it reads any of it (zeroing such tables, then filling them, was
 * 15% of a 128-microbatch pipeline's memory plans' instructions under
 * callgrind). */
void *su_alloc_raw(su_arena *a, size_t n);
char *su_strndup(su_arena *a, const char *s, size_t n);
char *su_strdup(su_arena *a, const char *s);
char *su_sprintf(su_arena *a, const char *fmt, ...) SU_PRINTF(2, 3);

/* A map from pointers to pointers, by open addressing in an arena (grown
 * by doubling; an old table stays until the arena is freed): for a pass
 * that maps each of a few pointers, met many times, once. A zeroed map
 * with a set is empty. */
typedef struct su_ptrmap {
    su_arena *a;
    const void **key;
    void **val;
    size_t cap, n;
} su_ptrmap;
void *su_ptrmap_get(const su_ptrmap *m, const void *key); /* NULL: not there */
void su_ptrmap_put(su_ptrmap *m, const void *key, void *val); /* key: not NULL, not there */

/* A growable array of pointers, malloc-backed (freed with su_vec_free). */
typedef struct su_vec {
    void **v;
    int n, cap;
} su_vec;
void su_vec_push(su_vec *vec, jmp_buf *oom, void *p);
void su_vec_free(su_vec *vec);

/* ---- text ---- */

/* A buffer whose growth fails is emptied (its text freed) before the jump,
 * so a temporary buffer that nothing else allocates under leaks nothing. */
typedef struct su_buf {
    char *s;        /* NUL-terminated while len > 0 or after any append */
    size_t len, cap;
    jmp_buf *oom;
    su_arena *arena; /* where the text lives when not malloc'd */
} su_buf;

void su_buf_init(su_buf *b, jmp_buf *oom);
/* A buffer whose text lives in arena a (a grown buffer leaves its old copy
 * there): for temporaries freed with their arena, never leaked by an
 * allocation failure. su_buf_take does not apply; su_buf_free empties it. */
void su_buf_init_in(su_buf *b, su_arena *a);
void su_buf_free(su_buf *b);
void su_buf_put(su_buf *b, const char *s, size_t n);
void su_buf_puts(su_buf *b, const char *s);
void su_buf_putc(su_buf *b, char c);
void su_buf_printf(su_buf *b, const char *fmt, ...) SU_PRINTF(2, 3);

void su_buf_vprintf(su_buf *b, const char *fmt, va_list ap);
/* Hands the string to the caller (malloc'd, free()); the buffer empties. */
char *su_buf_take(su_buf *b);

/* Shortest decimal text that reads back (strtod) to exactly d. */
void su_fmt_double(char out[32], double d);

/* ---- sources and diagnostics ---- */

typedef struct su_src {
    const char *name;   /* as the user named the file */
    const char *text;   /* need not be NUL-terminated */
    size_t len;
} su_src;

typedef struct su_loc {
    int line, col;      /* 1-based; line 0 means "no place in the file" */
} su_loc;

typedef struct su_diag {
    su_buf msg;         /* the formatted error, empty while none */
    int nerrors;
    bool internal;      /* the error is a bug in shardc, not the user's */
} su_diag;

void su_diag_init(su_diag *d, jmp_buf *oom);
void su_diag_free(su_diag *d);
/* Records an error at loc in src (only the first error of a compilation is
 * kept: later ones are usually consequences of it). */
void su_error_at(su_diag *d, const su_src *src, su_loc loc, const char *fmt, ...)
    SU_PRINTF(4, 5);
void su_verror_at(su_diag *d, const su_src *src, su_loc loc, const char *fmt, va_list ap);

/* ---- output files ---- */

/* dir + "/" + name, malloc'd (NULL when out of memory). */
char *su_path_join(const char *dir, const char *name);

/* A file being written. Where path names a regular file or nothing (after
 * following symlinks: the link stays, its target is written), the bytes go
 * to a temporary file in the target's folder, fsync'd and renamed over it
 * at commit, keeping the replaced file's permissions; a failure leaves the
 * target as it was. A character device, FIFO or socket, or an open file
 * named through /proc/self/fd (/dev/stdout), is written straight into
 * (no truncation; a FIFO's open waits for a reader). A folder is an error.
 * Messages name path as the caller gave it, and the reason (errno's text). */
/* The runtime's error convention (and the file writer's): a function that
 * can fail takes `su_status *err` last and says that it failed by its
 * result (-1, NULL or false); err then holds what went wrong: a kind, which
 * the API maps to its status codes (include/shardc.h) and shardrun to its
 * exit codes, and a message for the user. err may be NULL (nothing is
 * written). A caller that adds context keeps the kind (su_prefix). */
typedef enum su_kind {
    SU_OK = 0,
    SU_INPUT,    /* the plan, a file's contents or the data are wrong */
    SU_USAGE,    /* a call the session cannot take (now, or with these arguments) */
    SU_IO,       /* a file or folder could not be read or written */
    SU_NOMEM,    /* out of memory */
    SU_GPU,      /* the driver, a kernel, cuBLASLt, NVRTC or NCCL failed */
    SU_PEER,     /* another rank failed, stopped, or did not answer in time */
    SU_INTERNAL, /* a bug in shardc */
} su_kind;

enum { SU_MSG_LEN = 4096 }; /* a files mismatch lists names */

typedef struct su_status {
    su_kind kind; /* SU_OK until a failure */
    char msg[SU_MSG_LEN];
} su_status;

/* Sets err's kind and message; returns -1, so a failure reads
 * `return su_fail(err, SU_IO, "%s: ...", path)`. */
int su_fail(su_status *err, su_kind kind, const char *fmt, ...) SU_PRINTF(3, 4);
int su_failv(su_status *err, su_kind kind, const char *fmt, va_list ap);
/* Puts fmt's text before err's message, the kind kept; returns -1. */
int su_prefix(su_status *err, const char *fmt, ...) SU_PRINTF(2, 3);
/* Copies src (kind and message) into err; returns -1. */
int su_status_copy(su_status *err, const su_status *src);
/* Clears err to SU_OK and an empty message. */
void su_status_clear(su_status *err);
/* "input", "usage", "I/O", ... for messages and tests. */
const char *su_kind_name(su_kind k);

typedef struct su_wfile {
    const char *path;   /* as the caller named it (not copied) */
    char *dest;         /* what the temporary file replaces (malloc'd) */
    char *tmp;          /* the temporary file (malloc'd); NULL: writing
                         * straight into path */
    int fd;
    int error;          /* errno of the first failed write, 0 while none */
} su_wfile;

/* Opens path for writing: 0, or -1 with the message in err (nothing left
 * behind). */
int su_wfile_open(su_wfile *w, const char *path, su_status *err);
/* Appends n bytes: 0, or -1 after a failure (kept for su_wfile_commit,
 * later writes do nothing). */
int su_wfile_write(su_wfile *w, const void *data, size_t n);
/* Finishes the file (fsync and rename, or close): 0, or -1 with the message
 * in err and the temporary file removed. w is closed either way. */
int su_wfile_commit(su_wfile *w, su_status *err);
/* Gives up: closes w and removes its temporary file; the target is as it
 * was. Safe after a failed open or a commit. */
void su_wfile_abort(su_wfile *w);
/* Writes len bytes to path through su_wfile: 0, or -1 with the message. */
int su_write_file(const char *path, const void *data, size_t len, su_status *err);

/* Whether su_wfile could write path later, or with folder, whether a
 * folder could be made there with its missing parents (as a checkpoint's
 * is): a file's folder (a symlink's target's, through every link) must
 * exist and be writable; a folder, or a missing path ending in '/', is no
 * file; a file on the way is no folder. Nothing is made. False with why
 * (n bytes), said before a long run rather than after it. */
bool su_path_writable(const char *path, bool folder, char *why, size_t n);

/* Readies src for a scanner: skips a UTF-8 byte order mark at its start
 * (some editors write one; lines and columns then count from after it),
 * and reports the first NUL byte, which no model or IR holds, at its line
 * and column (false). */
bool su_src_prepare(su_src *src, su_diag *d);

/* The line and column (1-based, columns in bytes) of byte `at` of text. */
su_loc su_text_loc(const char *text, size_t at);

/* n bytes for a message, into buf (of 32), returned, in whichever unit
 * reads best: "0.8 KiB", "54.2 MiB", "9.53 GiB", "128.00 TiB". */
const char *su_size_text(int64_t n, char *buf);

/* The first byte of text[at .. n) that is not JSON whitespace (space, tab,
 * CR, LF), or n: where the text after a parsed JSON value must end. A NUL
 * byte is text, not an end. */
size_t su_json_space(const char *text, size_t n, size_t at);

/* Checked int64 arithmetic: false on overflow. */
bool su_mul64(int64_t a, int64_t b, int64_t *out);
bool su_add64(int64_t a, int64_t b, int64_t *out);

/* ---- names ---- */

/* The edit distance between a and b (insertions, deletions, substitutions
 * and swaps of two neighbouring bytes, each 1: the optimal string alignment
 * distance), or limit + 1 when it is more than limit (found without
 * computing the whole table). */
int su_edit_distance(const char *a, const char *b, int limit);
/* Of the n names in cand (NULLs skipped), the nearest to name when it is
 * close enough to be a slip of the keyboard: at most a quarter of the longer
 * length in edits, rounded up, and fewer edits than the shorter has bytes
 * ("w1" gives "w_1" or "w2", never "x" for "y"); the first of equals. A
 * name that differs from name only in case is nearest of all ("W" gives
 * "w"). NULL when none is. */
const char *su_nearest(const char *name, const char *const *cand, int n);

/* ---- threads (parallel.c) ---- */

#define SU_MAX_THREADS 64

/* The processors online, from 1 to SU_MAX_THREADS; $SHARDC_THREADS, a
 * count from 1 to SU_MAX_THREADS, instead when set (the threads the
 * compiler's stages and NVRTC run on). */
int su_processors(void);
/* $SHARDC_THREADS's value v: 0 when unset or empty, the count, or -1 when
 * it is not a count from 1 to SU_MAX_THREADS. */
int su_threads_env(const char *v);
/* Runs fn(ctx, i) for every i in [0, n) on up to `threads` threads (at
 * most SU_MAX_THREADS), the caller's among them, each taking the next i;
 * a thread that cannot start leaves its share to the others. With one
 * thread, or no mutex, the items run in order on the caller's thread. fn
 * must be safe to run at once for different i, and keeps what it has to
 * say in ctx (an allocation failure included: no jump may leave fn). */
void su_parallel_for(int n, int threads, void (*fn)(void *ctx, int i), void *ctx);
/* A job for another thread (su_parallel_for): runs fn(arg, err) with an
 * error buffer and an allocation guard of its own, and gives what fn
 * wrote into err in *msg (malloc'd; NULL when nothing, or no memory for
 * it) and in *oom whether an allocation failed (then false). fn's result
 * otherwise. */
bool su_job(bool (*fn)(void *arg, su_buf *err), void *arg, char **msg, bool *oom);

/* ---- string hashes ---- */

/* FNV-1a (64-bit) of n bytes, or of a string's text up to its NUL (none
 * for NULL), continuing from h: SU_FNV_BASIS, the offset basis, to start.
 * For hash tables, and for the names they give that must not change (the
 * init's values from the seed, NVRTC's cache files). */
#define SU_FNV_BASIS 0xCBF29CE484222325ull
static inline uint64_t su_fnv_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}
static inline uint64_t su_fnv_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    return h;
}

/* ---- time ---- */

/* Seconds on a monotonic clock, from an arbitrary start: differences time
 * a piece of work. */
double su_seconds(void);

/* ---- checksums (crc32.c) ---- */

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of n bytes, continuing
 * from crc (0 to start). */
uint32_t su_crc32(uint32_t crc, const void *data, size_t n);

/* ---- f16 and bf16 (half.c) ---- */

/* To f32 exactly, and from f32 rounded to nearest even (inf past the
 * largest f16; NaN stays a quiet NaN). */
float su_f16_to_f32(uint16_t h);
uint16_t su_f32_to_f16(float f);
float su_bf16_to_f32(uint16_t h);
uint16_t su_f32_to_bf16(float f);

#endif
