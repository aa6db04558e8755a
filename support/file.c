/* file.c: the one way every output file is written (su_wfile, support.h).
 *
 * What a user expects of `-o F`: a regular file (or a missing one) is
 * replaced whole or not at all, so it goes through a temporary file in the
 * same folder, fsync'd and renamed over it; a symlink stays a link and its
 * target is what gets written; a device or a FIFO (/dev/null, /dev/stdout
 * on a pipe, a FIFO with a reader) is written straight into, as a shell's
 * `>` would, never replaced by a plain file; a folder is an error.
 */
#include "support.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

/* Symlinks followed before giving up (the kernel's own limit). */
#define MAX_LINKS 40
/* Bytes per write() call; Linux moves at most ~2 GiB per call. */
#define CHUNK ((size_t)1 << 30)


/* The folder part of path with its final '/' ("" when there is none). */
static size_t dir_len(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

/* Whether the link at path lives in procfs: /proc/self/fd/N (what
 * /dev/stdout points to) names an open file, not a path to replace. */
static bool on_procfs(const char *path)
{
    size_t n = dir_len(path);
    char *dir = n ? strndup(path, n) : strdup(".");
    struct statfs fs;
    bool proc = dir && statfs(dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
    free(dir);
    return proc;
}

/* The target of the link at path, as a path (relative targets joined to
 * the link's folder); malloc'd, NULL with errno set on failure. */
static char *link_target(const char *path)
{
    for (size_t cap = 256; cap <= (size_t)PATH_MAX * 16; cap *= 2) {
        size_t dn = dir_len(path);
        char *buf = malloc(dn + cap);
        if (!buf)
            return NULL;
        ssize_t n = readlink(path, buf + dn, cap);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[dn + (size_t)n] = 0;
            if (buf[dn] == '/')
                memmove(buf, buf + dn, (size_t)n + 1);
            else
                memcpy(buf, path, dn);
            return buf;
        }
        free(buf);
    }
    errno = ENAMETOOLONG;
    return NULL;
}

/* The file path ends at: its final symlinks followed (the folders on the
 * way are the kernel's to resolve), a missing file named by its missing
 * path. *proc is set, and the link's path returned, when a link is one of
 * procfs's. Malloc'd; NULL with errno set on failure. */
static char *resolve(const char *path, bool *proc)
{
    char *cur = strdup(path);
    for (int hops = 0; cur; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        if ((*proc = on_procfs(cur)))
            return cur;
        char *next = hops < MAX_LINKS ? link_target(cur) : NULL;
        int saved = hops < MAX_LINKS ? errno : ELOOP;
        free(cur);
        cur = next;
        errno = saved;
    }
    return NULL;
}

/* The folder of path p (malloc'd, taken): "." for a name without one, "/"
 * for one in the root. NULL: no memory. */
static char *folder_of(char *p)
{
    size_t dn = dir_len(p);
    if (dn == 0) {
        free(p);
        return strdup(".");
    }
    p[dn > 1 ? dn - 1 : 1] = 0;
    return p;
}

/* Whether folder dir (made, parents and all, when missing and make) can be
 * written into: its nearest existing folder must be one, and writable.
 * False with the reason in why. */
static bool folder_writable(const char *dir, bool make, char *why, size_t n)
{
    char *at = strdup(dir);
    struct stat st;
    while (at && stat(at, &st) != 0) { /* up to what exists: a file there says why */
        if (errno != ENOENT && errno != ENOTDIR) {
            snprintf(why, n, "%s: %s", at, strerror(errno));
            free(at);
            return false;
        }
        if (errno == ENOENT && !make) {
            snprintf(why, n, "the folder %s does not exist", at);
            free(at);
            return false;
        }
        size_t k = strlen(at);
        while (k > 1 && at[k - 1] == '/') /* "a/b/" is "a/b" */
            at[--k] = 0;
        at = folder_of(at);
    }
    if (!at) {
        snprintf(why, n, "out of memory");
        return false;
    }
    bool ok = S_ISDIR(st.st_mode) && access(at, W_OK | X_OK) == 0;
    if (!S_ISDIR(st.st_mode))
        snprintf(why, n, "%s is not a folder", at);
    else if (!ok)
        snprintf(why, n, "cannot write into %s: %s", at, strerror(errno));
    free(at);
    return ok;
}

bool su_path_writable(const char *path, bool folder, char *why, size_t n)
{
    why[0] = 0;
    if (!path[0]) {
        snprintf(why, n, "an empty name names no file");
        return false;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return false;
    }
    if (folder) {
        if (exists && !S_ISDIR(st.st_mode)) {
            snprintf(why, n, "%s is not a folder", path);
            return false;
        }
        return folder_writable(path, true, why, n);
    }
    if (exists && S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%s is a folder", path);
        return false;
    }
    if (exists && !S_ISREG(st.st_mode))
        return true; /* a device or FIFO, written straight into */
    if (!exists && path[0] && path[strlen(path) - 1] == '/') {
        snprintf(why, n, "%s ends in /, which names a folder", path);
        return false;
    }
    /* su_wfile_open's way: the file the final links lead to is replaced
     * through a temporary file in its folder */
    bool proc = false;
    char *dest = resolve(path, &proc);
    if (!dest) {
        snprintf(why, n, "%s", strerror(errno));
        return false;
    }
    if (proc) {
        free(dest);
        return true;
    }
    char *dir = folder_of(dest);
    bool ok = dir && folder_writable(dir, false, why, n);
    if (!dir)
        snprintf(why, n, "out of memory");
    free(dir);
    return ok;
}

/* Writes straight into what path names (a device, a FIFO, an open file
 * behind /proc/self/fd): no O_TRUNC, and O_APPEND on a regular file, so
 * `--outputs /dev/stdout >> log` adds to the log. A FIFO's open waits for
 * its reader, as a shell's `>` does. */
static int open_straight(su_wfile *w, bool regular, su_status *err)
{
    w->fd = open(w->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (regular ? O_APPEND : 0));
    if (w->fd < 0)
        return su_fail(err, SU_IO, "%s: cannot write: %s", w->path, strerror(errno));
    return 0;
}

/* Creates "dest.tmp.PID.K" (O_EXCL: the first K free) for a later rename
 * over dest; mode (when >= 0) is the replaced file's, so a private file
 * stays private. */
static int open_temp(su_wfile *w, char *dest, int mode, su_status *err)
{
    size_t n = strlen(dest) + 48;
    w->dest = dest;
    w->tmp = malloc(n);
    if (!w->tmp)
        return su_fail(err, SU_NOMEM, "%s: out of memory", w->path);
    for (int k = 0; k < 100; k++) {
        snprintf(w->tmp, n, "%s.tmp.%ld.%d", dest, (long)getpid(), k);
        w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0 || errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        su_fail(err, SU_IO, "%s: cannot create the temporary file %s: %s", w->path, w->tmp,
             strerror(errno));
        free(w->tmp); /* not ours to remove */
        w->tmp = NULL;
        return -1;
    }
    if (mode >= 0 && fchmod(w->fd, (mode_t)mode) != 0)
        return su_fail(err, SU_IO, "%s: cannot set the mode of %s: %s", w->path, w->tmp,
                    strerror(errno));
    return 0;
}

int su_wfile_open(su_wfile *w, const char *path, su_status *err)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    w->fd = -1;
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return su_fail(err, SU_IO, "%s: cannot write: %s", path, strerror(errno));
    if (exists && S_ISDIR(st.st_mode))
        return su_fail(err, SU_IO, "%s: cannot write: %s", path, strerror(EISDIR));
    if (exists && !S_ISREG(st.st_mode))
        return open_straight(w, false, err);
    bool proc = false;
    char *dest = resolve(path, &proc);
    if (!dest)
        return su_fail(err, SU_IO, "%s: cannot write: %s", path, strerror(errno));
    if (proc) {
        free(dest);
        return open_straight(w, true, err);
    }
    int rc = open_temp(w, dest, exists ? (int)(st.st_mode & 0777) : -1, err);
    if (rc != 0)
        su_wfile_abort(w);
    return rc;
}

/* write() with SIGPIPE held back: a FIFO whose reader has gone is an
 * error (EPIPE) to report, not the end of the host process. */
static ssize_t write_nosigpipe(int fd, const void *p, size_t n)
{
    sigset_t pipe, old, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    ssize_t put = write(fd, p, n);
    int saved = errno;
    if (put < 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return put;
}

int su_wfile_write(su_wfile *w, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0 && !w->error) {
        size_t k = n < CHUNK ? n : CHUNK;
        ssize_t put = w->tmp ? write(w->fd, p, k) : write_nosigpipe(w->fd, p, k);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            w->error = put == 0 ? EIO : errno;
            break;
        }
        p += put;
        n -= (size_t)put;
    }
    return w->error ? -1 : 0;
}

int su_wfile_commit(su_wfile *w, su_status *err)
{
    int rc = 0;
    if (w->error)
        rc = su_fail(err, SU_IO, "%s: cannot write: %s", w->path, strerror(w->error));
    else if (w->tmp && fsync(w->fd) != 0)
        rc = su_fail(err, SU_IO, "%s: cannot write: %s", w->path, strerror(errno));
    int fd = w->fd;
    w->fd = -1;
    if (close(fd) != 0 && rc == 0)
        rc = su_fail(err, SU_IO, "%s: cannot write: %s", w->path, strerror(errno));
    if (rc == 0 && w->tmp && rename(w->tmp, w->dest) != 0)
        rc = su_fail(err, SU_IO, "%s: cannot rename %s into place: %s", w->path, w->tmp,
                  strerror(errno));
    if (rc == 0) {
        free(w->tmp);
        w->tmp = NULL;
    }
    su_wfile_abort(w);
    return rc;
}

void su_wfile_abort(su_wfile *w)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->tmp)
        unlink(w->tmp);
    free(w->tmp);
    free(w->dest);
    w->fd = -1;
    w->tmp = w->dest = NULL;
}

int su_write_file(const char *path, const void *data, size_t len, su_status *err)
{
    su_wfile w;
    if (su_wfile_open(&w, path, err) != 0)
        return -1;
    su_wfile_write(&w, data, len);
    return su_wfile_commit(&w, err);
}

char *su_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}
