/* match.c: the params and inputs files against the plan (match.h): which
 * tensors of a file the plan takes, which it lacks, and the messages that
 * list them. */
#include "runtime/io/match.h"
#include "support/support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A message being built; longer ones are cut (the counts come first). */
typedef struct text {
    char s[4096];
    size_t len;
} text;

static void put(text *t, const char *fmt, ...) SU_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    if (t->len >= sizeof t->s - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->len, sizeof t->s - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len = t->len + (size_t)n < sizeof t->s ? t->len + (size_t)n : sizeof t->s - 1;
}

/* 'name', a very long one cut (a file's names can be anything). */
static void put_name(text *t, const char *name)
{
    if (strlen(name) > 80)
        put(t, "'%.72s...'", name);
    else
        put(t, "'%s'", name);
}

/* "1 tensor" / "3 tensors" */
static void put_count(text *t, int n, const char *noun)
{
    put(t, "%d %s%s", n, noun, n == 1 ? "" : "s");
}

/* After listing RT_MATCH_LIST of n names: " and N more". */
static void put_more(text *t, int n)
{
    if (n > RT_MATCH_LIST)
        put(t, " and %d more", n - RT_MATCH_LIST);
}

static bool is_kept(const rt_io *io)
{
    return io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
}

static const rt_io *find_io(const rt_plan *p, const char *name, int kind)
{
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == kind && !strcmp(p->io[i].name, name))
            return &p->io[i];
    return NULL;
}

/* Whether the two open files are one file (the same path given twice, or
 * two names of it). */
static bool same_file(const rt_st_file *a, const rt_st_file *b)
{
    struct stat sa, sb;
    return fstat(a->fd, &sa) == 0 && fstat(b->fd, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The params of p (first entries) not in f and not given: their count,
 * and when t is not NULL the first names appended, ": 'a', 'b'". */
static int missing_params(text *t, const rt_plan *p, const int32_t *first, const rt_st_file *f,
                          const bool *given)
{
    int n = 0;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->kind != RT_IO_PARAM || first[i] != i || (given && given[i]) ||
            rt_st_find(f, io->name))
            continue;
        if (t && n < RT_MATCH_LIST) {
            put(t, "%s", n ? ", " : ": ");
            put_name(t, io->name);
        }
        n++;
    }
    if (t)
        put_more(t, n);
    return n;
}

/* The tensors of the params file f that the plan does not take (an
 * input's name counts as taken when `inputs_too`: the file is also the
 * inputs file), each with a hint: the input it names, or the nearest name
 * of a param or state the file lacks. used: per entry of f, scratch. */
static int check_params_file(const rt_plan *p, const int32_t *first, const rt_st_file *f,
                             bool inputs_too, bool *used, const char **cand, su_status *err)
{
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        const rt_st_entry *e = NULL;
        if (is_kept(io) || (inputs_too && io->kind == RT_IO_INPUT))
            e = rt_st_find(f, io->name);
        if (e)
            used[e - f->entries] = true;
        /* suggestions: the plan's params and states the file lacks */
        cand[i] = is_kept(io) && first[i] == i && !e ? io->name : NULL;
    }
    int unused = 0;
    for (int k = 0; k < f->nentries; k++)
        unused += !used[k];
    if (unused == 0)
        return 0;
    text t = {.len = 0};
    put(&t, "%s: the params file has ", f->path);
    put_count(&t, unused, "tensor");
    put(&t, " that %s no param or state of the plan: ", unused == 1 ? "is" : "are");
    for (int k = 0, n = 0; k < f->nentries && n < RT_MATCH_LIST; k++) {
        if (used[k])
            continue;
        const char *name = f->entries[k].name, *near;
        put(&t, "%s", n++ ? ", " : "");
        put_name(&t, name);
        if (find_io(p, name, RT_IO_INPUT))
            put(&t, " (an input of the plan: inputs come from the inputs file)");
        else if ((near = su_nearest(name, cand, p->nio)))
            put(&t, " (did you mean '%s'?)", near);
    }
    put_more(&t, unused);
    int missing = missing_params(NULL, p, first, f, NULL);
    if (missing > 0) {
        put(&t, "; and lacks ");
        put_count(&t, missing, "param");
        put(&t, " of the plan");
        missing_params(&t, p, first, f, NULL);
    }
    return su_fail(err, SU_INPUT, "%s", t.s);
}

/* The params and states of the plan in the inputs file g, which are read
 * from the params file: left there, they would be ignored. */
static int check_inputs_file(const rt_plan *p, const int32_t *first, const rt_st_file *g,
                             su_status *err)
{
    text t = {.len = 0};
    int n = 0;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!is_kept(io) || first[i] != i || !rt_st_find(g, io->name))
            continue;
        if (n < RT_MATCH_LIST) {
            put(&t, "%s", n ? ", " : "");
            put_name(&t, io->name);
        }
        n++;
    }
    if (n == 0)
        return 0;
    put_more(&t, n);
    return su_fail(err, SU_INPUT, "%s: the inputs file has %d tensor%s that %s a param or state "
                   "of the plan, which the params file gives, not the inputs file: %s",
                   g->path, n, n == 1 ? "" : "s", n == 1 ? "is" : "are", t.s);
}

int rt_match_files(const rt_plan *p, const int32_t *first, const rt_st_file *params,
                   const rt_st_file *inputs, su_status *err)
{
    bool same = params && inputs && same_file(params, inputs);
    if (params) {
        bool *used = calloc((size_t)params->nentries + 1, sizeof *used);
        const char **cand = calloc((size_t)p->nio + 1, sizeof *cand);
        int rc = used && cand ? check_params_file(p, first, params, same, used, cand, err)
                              : su_fail(err, SU_NOMEM, "%s: out of memory", params->path);
        free(used);
        free(cand);
        if (rc != 0)
            return -1;
    }
    if (inputs && !same)
        return check_inputs_file(p, first, inputs, err);
    return 0;
}

int rt_match_missing(const rt_plan *p, const int32_t *first, const rt_st_file *params,
                     const bool *given, bool init_missing, su_status *err)
{
    if (!params)
        return 0;
    int nparams = 0;
    for (int i = 0; i < p->nio; i++)
        nparams += p->io[i].kind == RT_IO_PARAM && first[i] == i;
    int missing = missing_params(NULL, p, first, params, given);
    if (missing == 0)
        return 0;
    const char *empty = params->nentries == 0 ? " (it is empty)" : "";
    text t = {.len = 0};
    if (!init_missing) {
        put(&t, "%s: the params file lacks ", params->path);
        put_count(&t, missing, "param");
        put(&t, " of the plan%s", empty);
        missing_params(&t, p, first, params, given);
        return su_fail(err, SU_INPUT, "%s", t.s);
    }
    if (missing < nparams)
        return 0;
    return su_fail(err, SU_INPUT, "%s: the params file has none of the plan's %d param%s%s: "
                   "making every one by its init would ignore the file",
                   params->path, nparams, nparams == 1 ? "" : "s",
                   empty[0] ? empty : " (only optimizer states)");
}
