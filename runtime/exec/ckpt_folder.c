/* ckpt_folder.c: the checkpoint folder (checkpoint.h): a step folder per
 * checkpoint, written under a staging name and renamed when complete; the
 * pointer `latest`, replaced atomically once it is; the newest K kept; and
 * finding the checkpoint to resume from.
 *
 * The order of a save is what makes it safe to kill at any point: the
 * rank files (each fsync'd) and then the index go into step-N.partial,
 * whose entries are fsync'd; it is renamed to step-N and DIR fsync'd; only
 * then is `latest` replaced (a temporary file fsync'd and renamed over it,
 * DIR fsync'd), and only after that are older checkpoints deleted. Until
 * the pointer is replaced, it names the previous checkpoint, complete.
 *
 * Deleting is careful about what it deletes: only folders named like a
 * step folder that hold nothing but what a save writes there, so a user's
 * file in DIR, or in a folder of such a name, stays. */
#include "runtime/exec/checkpoint.h"
#include "support/support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POINTER_NAME "latest"
#define INDEX_NAME "index.json"
/* Longest pointer file read: a step folder's name and a newline. */
#define POINTER_MAX 256

/* s is ".tmp.PID.K", the suffix of su_wfile's temporary files. */
static bool tmp_suffix(const char *s)
{
    if (strncmp(s, ".tmp.", 5) != 0)
        return false;
    s += 5;
    for (int part = 0; part < 2; part++) {
        const char *d = s;
        while (*s >= '0' && *s <= '9')
            s++;
        if (s == d || *s != (part ? 0 : '.'))
            return false;
        s++;
    }
    return true;
}

/* Whether a save writes name into a step folder: index.json,
 * rank-NNNNN.safetensors, or a temporary file of either. */
static bool saved_name(const char *name)
{
    const char *p = name;
    if (!strncmp(p, INDEX_NAME, strlen(INDEX_NAME))) {
        p += strlen(INDEX_NAME);
    } else if (!strncmp(p, "rank-", 5)) {
        const char *d = p += 5;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == d || strncmp(p, ".safetensors", 12) != 0)
            return false;
        p += 12;
    } else {
        return false;
    }
    return *p == 0 || tmp_suffix(p);
}

/* fsync of a folder, so the renames in it are on disk. Some file systems
 * refuse it (EINVAL): then there is nothing more to do. */
static int sync_dir(const char *dir, su_status *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return su_fail(err, SU_IO, "%s: cannot open the folder: %s", dir, strerror(errno));
    int rc = 0;
    if (fsync(fd) != 0 && errno != EINVAL)
        rc = su_fail(err, SU_IO, "%s: cannot sync the folder: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

/* Whether path is a regular file (symlinks followed). */
static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether dir/name is a folder holding an index: a complete checkpoint (the
 * index is written last, and a step folder gets its name after it). */
static bool complete(const char *dir, const char *name)
{
    char *folder = su_path_join(dir, name), *index = folder ? su_path_join(folder, INDEX_NAME) : NULL;
    bool yes = index && is_file(index);
    free(index);
    free(folder);
    return yes;
}

/* Deletes the step folder at path when it holds nothing but what a save
 * writes there; otherwise (a file of the user's, a subfolder, a link, or
 * path itself not a folder) deletes nothing and says what is in the way. */
static int remove_step_folder(const char *path, su_status *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : su_fail(err, SU_IO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return su_fail(err, SU_IO, "%s: not a folder a save wrote: left alone", path);
    DIR *d = opendir(path);
    if (!d)
        return su_fail(err, SU_IO, "%s: cannot read the folder: %s", path, strerror(errno));
    int rc = 0;
    struct dirent *e;
    for (int pass = 0; pass < 2 && rc == 0; pass++) { /* look, then delete */
        rewinddir(d);
        while (rc == 0 && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *f = su_path_join(path, e->d_name);
            if (!f)
                rc = su_fail(err, SU_NOMEM, "%s: out of memory", path);
            else if (pass == 0 && (!saved_name(e->d_name) || lstat(f, &st) != 0 ||
                                   !S_ISREG(st.st_mode)))
                rc = su_fail(err, SU_IO, "%s: holds %s, which no save writes: left alone", path,
                             e->d_name);
            else if (pass == 1 && unlink(f) != 0 && errno != ENOENT)
                rc = su_fail(err, SU_IO, "%s: cannot delete: %s", f, strerror(errno));
            free(f);
        }
    }
    closedir(d);
    if (rc == 0 && rmdir(path) != 0 && errno != ENOENT)
        rc = su_fail(err, SU_IO, "%s: cannot delete the folder: %s", path, strerror(errno));
    return rc;
}

/* mkdir -p: every missing folder of path. */
static int make_dirs(const char *path, su_status *err)
{
    char *p = strdup(path);
    if (!p)
        return su_fail(err, SU_NOMEM, "%s: out of memory", path);
    int rc = 0;
    for (char *q = p + 1; rc == 0; q++) {
        bool end = *q == 0;
        if (*q != '/' && !end)
            continue;
        *q = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = su_fail(err, SU_IO, "%s: cannot create the checkpoint folder: %s", path,
                         strerror(errno));
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = su_fail(err, SU_IO, "%s: cannot create the checkpoint folder: %s is not a folder",
                         path, p);
        if (end)
            break;
        *q = '/';
    }
    free(p);
    return rc;
}

/* ---- the pointer ---- */

static int notef(char *note, size_t notelen, const char *fmt, ...) SU_PRINTF(3, 4);

/* Why the pointer was not used, into note: -1. */
static int notef(char *note, size_t notelen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, notelen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Reads dir/latest into name (size bytes): 1, or 0 when there is none;
 * -1 when it cannot be read or does not hold a step folder's name, with
 * why in note. */
static int read_pointer(const char *dir, char *name, size_t size, char *note, size_t notelen)
{
    char *path = su_path_join(dir, POINTER_NAME);
    if (!path)
        return notef(note, notelen, "%s: out of memory", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        int rc = e == ENOENT ? 0 : notef(note, notelen, "%s: cannot read: %s", path, strerror(e));
        free(path);
        return rc;
    }
    char buf[POINTER_MAX + 2];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    int64_t step;
    bool partial;
    int rc = 1;
    if (n == 0 || n >= size || strlen(buf) != n || !rt_ckpt_parse_step_name(buf, &step, &partial))
        rc = notef(note, notelen, "%s does not name a step folder", path);
    else
        memcpy(name, buf, n + 1);
    free(path);
    return rc;
}

/* Points dir/latest at step folder name: a temporary file, fsync'd and
 * renamed over the pointer, then dir fsync'd. */
static int write_pointer(const char *dir, const char *name, su_status *err)
{
    char *path = su_path_join(dir, POINTER_NAME);
    char text[POINTER_MAX + 2];
    snprintf(text, sizeof text, "%s\n", name);
    int rc = !path ? su_fail(err, SU_NOMEM, "%s: out of memory", dir)
                   : su_write_file(path, text, strlen(text), err);
    free(path);
    return rc == 0 ? sync_dir(dir, err) : -1;
}

/* The complete step folder of the highest step in dir (not a staging
 * one), its name into name: 1, 0 when there is none, -1 when dir cannot be
 * read. */
static int newest(const char *dir, char *name, size_t size, su_status *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return su_fail(err, SU_IO, "%s: cannot read the folder: %s", dir, strerror(errno));
    int64_t best = -1, step;
    bool partial;
    struct dirent *e;
    while ((e = readdir(d)))
        if (rt_ckpt_parse_step_name(e->d_name, &step, &partial) && !partial && step > best &&
            strlen(e->d_name) < size && complete(dir, e->d_name)) {
            best = step;
            snprintf(name, size, "%s", e->d_name);
        }
    closedir(d);
    return best >= 0;
}

/* The step folder in dir that a resume takes, by name into name: the
 * pointer's when it names a complete one (or, when it names a staging
 * folder that has since been renamed, its final name), else the newest
 * complete one, with why not the pointer's in note ("" when there is no
 * pointer). 1, 0 when there is none, -1 when dir cannot be read. */
static int current(const char *dir, char *name, size_t size, char *note, size_t notelen,
                   su_status *err)
{
    note[0] = 0;
    int have = read_pointer(dir, name, size, note, notelen);
    int64_t step;
    bool partial;
    if (have == 1) {
        if (complete(dir, name))
            return 1;
        char final[64];
        if (rt_ckpt_parse_step_name(name, &step, &partial) && partial) {
            rt_ckpt_step_name(step, false, final, sizeof final);
            if (complete(dir, final)) {
                snprintf(name, size, "%s", final);
                return 1;
            }
        }
        snprintf(note, notelen, "%s/" POINTER_NAME " names %s, which is missing or incomplete (no " INDEX_NAME ")", dir, name);
    }
    return newest(dir, name, size, err);
}

/* ---- finding a checkpoint ---- */

int rt_ckpt_locate(const char *dir, char **folder, char *note, size_t notelen, su_status *err)
{
    *folder = NULL;
    note[0] = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return su_fail(err, SU_IO, "%s: %s", dir,
                       errno == ENOENT ? "no such checkpoint folder" : strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return su_fail(err, SU_INPUT, "%s: not a folder: a checkpoint is one", dir);
    char *pointer = su_path_join(dir, POINTER_NAME), *index = su_path_join(dir, INDEX_NAME);
    bool no_pointer = pointer && lstat(pointer, &st) != 0 && errno == ENOENT;
    bool own_index = no_pointer && index && is_file(index);
    free(pointer);
    free(index);
    if (own_index) { /* a step folder named itself, or a version 1 checkpoint */
        *folder = strdup(dir);
        return *folder ? 0 : su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    }
    char name[POINTER_MAX], why[POINTER_MAX + 4096];
    int found = current(dir, name, sizeof name, why, sizeof why, err);
    if (found < 0)
        return -1;
    if (found == 0 && why[0])
        return su_fail(err, SU_INPUT, "%s, and %s holds no complete step folder", why, dir);
    if (found == 0)
        return su_fail(err, SU_INPUT, "%s: not a checkpoint: no pointer '" POINTER_NAME "', no " INDEX_NAME
                       " and no complete step folder (a save into it that did not complete?)",
                       dir);
    if (no_pointer)
        snprintf(why, sizeof why, "%s has no pointer '" POINTER_NAME "'", dir);
    if (why[0])
        snprintf(note, notelen, "%s: resumed from the newest complete checkpoint, %s", why,
                 name);
    *folder = su_path_join(dir, name);
    return *folder ? 0 : su_fail(err, SU_NOMEM, "%s: out of memory", dir);
}

/* ---- saving ---- */

char *rt_ckpt_staging(const char *dir, int64_t step)
{
    char name[64];
    rt_ckpt_step_name(step, true, name, sizeof name);
    return su_path_join(dir, name);
}

int rt_ckpt_begin(const char *dir, int64_t step, su_status *err)
{
    if (!dir[0])
        return su_fail(err, SU_USAGE, "no checkpoint folder given");
    if (make_dirs(dir, err) != 0)
        return -1;
    char part[64], cur[POINTER_MAX], why[POINTER_MAX + 4096];
    rt_ckpt_step_name(step, true, part, sizeof part);
    int found = current(dir, cur, sizeof cur, why, sizeof why, err);
    if (found < 0)
        return -1;
    if (found == 1 && !strcmp(cur, part)) /* left by a replacement that could not finish */
        return su_fail(err, SU_IO, "%s/" POINTER_NAME " names %s, which this save would write over: an earlier save of step %lld could not replace the step folder of that name; move that folder out of the way first",
                       dir, part, (long long)step);
    char *staging = su_path_join(dir, part);
    if (!staging)
        return su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    int rc = remove_step_folder(staging, err);
    if (rc == 0 && mkdir(staging, 0777) != 0)
        rc = su_fail(err, SU_IO, "%s: cannot create the folder: %s", staging, strerror(errno));
    free(staging);
    return rc;
}

/* Moves the complete staging folder to its step folder's name and points
 * the pointer at it. A step folder of that name is replaced; when it is
 * the one a resume would take, the pointer first names the staging folder,
 * so one complete checkpoint of the step is pointed at all along. */
static int publish(const char *dir, const char *final, const char *part, su_status *err)
{
    char cur[POINTER_MAX], why[POINTER_MAX + 4096];
    int found = current(dir, cur, sizeof cur, why, sizeof why, err);
    if (found < 0)
        return -1;
    char *staging = su_path_join(dir, part), *target = su_path_join(dir, final);
    struct stat st;
    int rc = staging && target ? 0 : su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    if (rc == 0 && lstat(target, &st) == 0) {
        if (found == 1 && !strcmp(cur, final))
            rc = write_pointer(dir, part, err);
        if (rc == 0)
            rc = remove_step_folder(target, err);
    }
    if (rc == 0 && rename(staging, target) != 0)
        rc = su_fail(err, SU_IO, "%s: cannot rename %s into place: %s", target, staging,
                     strerror(errno));
    if (rc == 0)
        rc = sync_dir(dir, err);
    if (rc == 0)
        rc = write_pointer(dir, final, err);
    free(staging);
    free(target);
    return rc;
}

/* An entry of the checkpoint folder, for pruning. */
typedef struct entry {
    char *name;
    int64_t step;
    bool partial, complete;
} entry;

static int by_step_down(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : 0;
}

/* The step folders of dir, and the pointer's temporary files (step -1),
 * into *out: their count, or -1 when dir cannot be read (or out of
 * memory). */
static int list_entries(const char *dir, entry **out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    entry *v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        entry x = {NULL, -1, false, false};
        bool tmp = !strncmp(e->d_name, POINTER_NAME, strlen(POINTER_NAME)) &&
                   tmp_suffix(e->d_name + strlen(POINTER_NAME));
        if (!tmp && !rt_ckpt_parse_step_name(e->d_name, &x.step, &x.partial))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            entry *w = realloc(v, (size_t)cap * sizeof *v);
            if (!w)
                break;
            v = w;
        }
        x.name = strdup(e->d_name);
        if (!x.name)
            break;
        x.complete = !tmp && !x.partial && complete(dir, x.name);
        v[n++] = x;
    }
    bool short_of_memory = e != NULL;
    closedir(d);
    if (short_of_memory) {
        for (int i = 0; i < n; i++)
            free(v[i].name);
        free(v);
        return -1;
    }
    *out = v;
    return n;
}

/* After a save of step `step` (pointed at): deletes the complete
 * checkpoints of earlier steps beyond the newest keep - 1, what
 * interrupted saves left (staging folders, step folders without an index,
 * the pointer's temporary files), never the folder the pointer names, nor
 * checkpoints of later steps (a run resumed from an earlier step does not
 * delete the steps it goes back over). Best effort: the save is done, and
 * what cannot be deleted (a user's file inside) stays. */
static void prune(const char *dir, int keep, int64_t step)
{
    char cur[POINTER_MAX], why[POINTER_MAX + 4096];
    su_status err;
    if (current(dir, cur, sizeof cur, why, sizeof why, &err) != 1)
        cur[0] = 0;
    entry *v = NULL;
    int n = list_entries(dir, &v);
    if (n < 0)
        return;
    qsort(v, (size_t)n, sizeof *v, by_step_down);
    int older = 0; /* complete checkpoints of earlier steps seen so far */
    for (int i = 0; i < n; i++) {
        entry *x = &v[i];
        char *path = su_path_join(dir, x->name);
        struct stat st;
        bool drop = x->complete ? x->step < step && ++older >= keep : x->step != step || x->partial;
        if (!path || !strcmp(x->name, cur) || !drop)
            ;
        else if (x->step < 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path);
        else if (x->step >= 0)
            remove_step_folder(path, &err);
        free(path);
        free(x->name);
    }
    free(v);
}

int rt_ckpt_commit(const char *dir, const rt_plan *p, int64_t step, const rt_st_sum *files,
                   int keep, su_status *err)
{
    char final[64], part[64];
    rt_ckpt_step_name(step, false, final, sizeof final);
    rt_ckpt_step_name(step, true, part, sizeof part);
    char *staging = su_path_join(dir, part);
    if (!staging)
        return su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    /* the rank files' renames reach the disk before the index's */
    int rc = sync_dir(staging, err);
    if (rc == 0)
        rc = rt_ckpt_write_index(staging, p, step, files, err);
    if (rc == 0)
        rc = sync_dir(staging, err);
    free(staging);
    if (rc == 0)
        rc = publish(dir, final, part, err);
    if (rc == 0)
        prune(dir, keep > 0 ? keep : RT_CKPT_KEEP, step);
    return rc;
}
