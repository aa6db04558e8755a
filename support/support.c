/* support.c: arenas, growable buffers and vectors, and diagnostics. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void su_die_unreachable(const char *file, int line)
{
    fprintf(stderr, "shardc: internal error: unreachable code reached at %s:%d\n", file, line);
    abort();
}

double su_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void su_oom(jmp_buf *oom)
{
    if (oom)
        longjmp(*oom, 1);
    fprintf(stderr, "shardc: out of memory\n");
    abort();
}

void *su_xmalloc(jmp_buf *oom, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        su_oom(oom);
    return p;
}

void *su_xrealloc(jmp_buf *oom, void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        su_oom(oom);
    return q;
}

bool su_guarded(jmp_buf *oom, void (*fn)(void *arg), void *arg)
{
    if (!oom) { /* allocation failures abort */
        fn(arg);
        return true;
    }
    /* saved is not changed after setjmp, so it is intact after the jump */
    jmp_buf saved;
    memcpy(saved, *oom, sizeof saved);
    if (setjmp(*oom)) {
        memcpy(*oom, saved, sizeof saved);
        return false;
    }
    fn(arg);
    memcpy(*oom, saved, sizeof saved);
    return true;
}

bool su_catch(jmp_buf *oom, void (*fn)(void *arg), void *arg)
{
    if (setjmp(*oom))
        return false;
    fn(arg);
    return true;
}

/* ---- arena ---- */

struct su_chunk {
    su_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_MIN = 64 * 1024 };

void su_arena_init(su_arena *a, jmp_buf *oom)
{
    a->head = NULL;
    a->oom = oom;
}

void su_arena_free(su_arena *a)
{
    su_chunk *c = a->head;
    while (c) {
        su_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

void su_arena_take(su_arena *to, su_arena *from)
{
    su_chunk *c = from->head;
    if (!c)
        return;
    su_chunk *last = c;
    while (last->next)
        last = last->next;
    if (to->head) { /* behind the head, which stays the one allocated from */
        last->next = to->head->next;
        to->head->next = c;
    } else {
        to->head = c;
    }
    from->head = NULL;
}

static void *arena_alloc(su_arena *a, size_t n, bool zero)
{
    n = (n + 15) & ~(size_t)15;
    su_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
        if (cap > SIZE_MAX / 2)
            su_oom(a->oom);
        if (n > CHUNK_MIN) {
            /* A big one-off block: calloc's (fresh pages come zeroed, and
             * untouched ones cost nothing), behind the head so the head's
             * free space is not wasted. */
            c = zero ? calloc(1, sizeof *c + cap) : malloc(sizeof *c + cap);
            if (!c)
                su_oom(a->oom);
            c->cap = c->used = cap;
            if (a->head) {
                c->next = a->head->next;
                a->head->next = c;
            } else {
                c->next = NULL;
                a->head = c;
            }
            return c->data;
        }
        c = su_xmalloc(a->oom, sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    if (zero)
        memset(p, 0, n);
    return p;
}

void *su_alloc(su_arena *a, size_t n)
{
    return arena_alloc(a, n, true);
}

void *su_alloc_raw(su_arena *a, size_t n)
{
    return arena_alloc(a, n, false);
}

char *su_strndup(su_arena *a, const char *s, size_t n)
{
    char *p = su_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *su_strdup(su_arena *a, const char *s)
{
    return su_strndup(a, s, strlen(s));
}

static size_t ptr_slot(const su_ptrmap *m, const void *key)
{
    return (size_t)(((uintptr_t)key * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
}

void *su_ptrmap_get(const su_ptrmap *m, const void *key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = ptr_slot(m, key); m->key[i]; i = (i + 1) & (m->cap - 1))
        if (m->key[i] == key)
            return m->val[i];
    return NULL;
}

void su_ptrmap_put(su_ptrmap *m, const void *key, void *val)
{
    if (2 * (m->n + 1) > m->cap) {
        su_ptrmap g = {.a = m->a, .cap = m->cap ? 2 * m->cap : 256};
        g.key = su_alloc(g.a, g.cap * sizeof *g.key);
        g.val = su_alloc(g.a, g.cap * sizeof *g.val);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i])
                su_ptrmap_put(&g, m->key[i], m->val[i]);
        *m = g;
    }
    size_t i = ptr_slot(m, key);
    while (m->key[i])
        i = (i + 1) & (m->cap - 1);
    m->key[i] = key;
    m->val[i] = val;
    m->n++;
}

char *su_sprintf(su_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = su_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void su_vec_push(su_vec *vec, jmp_buf *oom, void *p)
{
    if (vec->n == vec->cap) {
        int cap = vec->cap ? vec->cap * 2 : 16;
        vec->v = su_xrealloc(oom, vec->v, (size_t)cap * sizeof *vec->v);
        vec->cap = cap;
    }
    vec->v[vec->n++] = p;
}

void su_vec_free(su_vec *vec)
{
    free(vec->v);
    vec->v = NULL;
    vec->n = vec->cap = 0;
}

/* ---- buffers ---- */

void su_buf_init(su_buf *b, jmp_buf *oom)
{
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = oom;
    b->arena = NULL;
}

void su_buf_init_in(su_buf *b, su_arena *a)
{
    su_buf_init(b, a->oom);
    b->arena = a;
}

void su_buf_free(su_buf *b)
{
    if (!b->arena)
        free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static void reserve(su_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    if (b->arena) {
        char *s = su_alloc(b->arena, cap);
        if (b->len)
            memcpy(s, b->s, b->len + 1);
        b->s = s;
    } else {
        char *s = realloc(b->s, cap);
        if (!s) { /* a buffer that holds nothing else leaks nothing */
            su_buf_free(b);
            su_oom(b->oom);
        }
        b->s = s;
    }
    b->cap = cap;
}

void su_buf_put(su_buf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void su_buf_puts(su_buf *b, const char *s)
{
    su_buf_put(b, s, strlen(s));
}

void su_buf_putc(su_buf *b, char c)
{
    su_buf_put(b, &c, 1);
}

void su_buf_vprintf(su_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    /* straight into the room there is; formatted again only when short */
    size_t room = b->cap - b->len;
    int n = vsnprintf(room ? b->s + b->len : NULL, room, fmt, ap);
    if ((size_t)n >= room) {
        if (room)
            b->s[b->len] = 0; /* as it was, should the growth fail */
        reserve(b, (size_t)n);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    b->len += (size_t)n;
}

void su_buf_printf(su_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *su_buf_take(su_buf *b)
{
    if (b->arena)
        su_unreachable();
    if (!b->s) {
        reserve(b, 0);
        b->s[0] = 0;
    }
    char *s = b->s;
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void su_fmt_double(char out[32], double d)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            break;
    }
    /* Keep a float looking like a float, so "1" reads back as a float. */
    if (!strpbrk(out, ".eEn")) /* n: nan, inf */
        strcat(out, ".0");
}

/* ---- diagnostics ---- */

void su_diag_init(su_diag *d, jmp_buf *oom)
{
    su_buf_init(&d->msg, oom);
    d->nerrors = 0;
    d->internal = false;
}

void su_diag_free(su_diag *d)
{
    su_buf_free(&d->msg);
}

/* Appends the source line of loc and a caret under its column; tabs before
 * the column are kept so the caret lines up in any editor, and other
 * control bytes (a NUL, which would end the message) show as spaces. */
static void show_line(su_buf *b, const su_src *src, su_loc loc)
{
    const char *p = src->text, *end = src->text + src->len;
    for (int line = 1; line < loc.line && p < end; p++)
        if (*p == '\n')
            line++;
    const char *eol = p;
    while (eol < end && *eol != '\n')
        eol++;
    if (eol > p && eol[-1] == '\r')
        eol--;
    for (const char *q = p; q < eol; q++) {
        unsigned char c = (unsigned char)*q;
        su_buf_putc(b, (c < 0x20 && c != '\t') || c == 0x7f ? ' ' : (char)c);
    }
    su_buf_putc(b, '\n');
    for (int i = 1; i < loc.col; i++)
        su_buf_putc(b, (p + i - 1 < eol && p[i - 1] == '\t') ? '\t' : ' ');
    su_buf_puts(b, "^\n");
}

void su_verror_at(su_diag *d, const su_src *src, su_loc loc, const char *fmt, va_list ap)
{
    if (d->nerrors++)
        return;
    su_buf *b = &d->msg;
    if (src && loc.line > 0)
        su_buf_printf(b, "%s:%d:%d: error: ", src->name, loc.line, loc.col);
    else if (src)
        su_buf_printf(b, "%s: error: ", src->name);
    else
        su_buf_puts(b, "error: ");
    su_buf_vprintf(b, fmt, ap);
    su_buf_putc(b, '\n');
    if (src && loc.line > 0)
        show_line(b, src, loc);
}

void su_error_at(su_diag *d, const su_src *src, su_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_verror_at(d, src, loc, fmt, ap);
    va_end(ap);
}

bool su_src_prepare(su_src *src, su_diag *d)
{
    static const char bom[3] = {'\xef', '\xbb', '\xbf'};
    if (src->len >= 3 && !memcmp(src->text, bom, 3)) {
        src->text += 3;
        src->len -= 3;
    }
    const char *nul = memchr(src->text, 0, src->len);
    if (!nul)
        return true;
    su_error_at(d, src, su_text_loc(src->text, (size_t)(nul - src->text)),
                "unexpected NUL byte (0x00): a model is UTF-8 text");
    return false;
}

su_loc su_text_loc(const char *text, size_t at)
{
    su_loc loc = {1, 1};
    for (size_t i = 0; i < at; i++) {
        loc.col++;
        if (text[i] == '\n')
            loc = (su_loc){loc.line + 1, 1};
    }
    return loc;
}

const char *su_size_text(int64_t n, char *buf)
{
    if (n >= (int64_t)1 << 40)
        snprintf(buf, 32, "%.2f TiB", (double)n / 1099511627776.0);
    else if (n >= (int64_t)1 << 30)
        snprintf(buf, 32, "%.2f GiB", (double)n / 1073741824.0);
    else if (n >= (int64_t)1 << 20)
        snprintf(buf, 32, "%.1f MiB", (double)n / 1048576.0);
    else
        snprintf(buf, 32, "%.1f KiB", (double)n / 1024.0);
    return buf;
}

size_t su_json_space(const char *text, size_t n, size_t at)
{
    while (at < n && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' || text[at] == '\n'))
        at++;
    return at;
}

bool su_mul64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

bool su_add64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

int su_edit_distance(const char *a, const char *b, int limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (limit < 0 || (la > lb ? la - lb : lb - la) > (size_t)limit)
        return limit + 1;
    /* three rows of the table: the one two back (for swaps), the last, this */
    int *row = malloc(3 * (lb + 1) * sizeof *row);
    if (!row)
        return limit + 1;
    int *back = row, *prev = row + lb + 1, *cur = row + 2 * (lb + 1);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        int least = cur[0];
        for (size_t j = 1; j <= lb; j++) {
            int d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                back[j - 2] + 1 < d)
                d = back[j - 2] + 1;
            cur[j] = d;
            least = d < least ? d : least;
        }
        if (least > limit) { /* every later row is at least as far */
            free(row);
            return limit + 1;
        }
        int *t = back;
        back = prev;
        prev = cur;
        cur = t;
    }
    int d = prev[lb];
    free(row);
    return d <= limit ? d : limit + 1;
}

const char *su_nearest(const char *name, const char *const *cand, int n)
{
    const char *best = NULL;
    int best_d = 0;
    size_t ln = strlen(name);
    for (int i = 0; i < n; i++) {
        if (!cand[i])
            continue;
        if (!strcasecmp(name, cand[i]) && strcmp(name, cand[i]))
            return cand[i]; /* only the case differs: nearest of all */
        size_t lc = strlen(cand[i]), longer = ln > lc ? ln : lc, shorter = ln < lc ? ln : lc;
        int limit = (int)((longer + 3) / 4);
        if (shorter <= (size_t)limit)
            limit = (int)shorter - 1;
        if (best && best_d - 1 < limit)
            limit = best_d - 1; /* only a nearer one can win */
        int d = su_edit_distance(name, cand[i], limit);
        if (d <= limit && d > 0) {
            best = cand[i];
            best_d = d;
        }
    }
    return best;
}

int su_failv(su_status *err, su_kind kind, const char *fmt, va_list ap)
{
    if (err) {
        err->kind = kind;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return -1;
}

int su_fail(su_status *err, su_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_failv(err, kind, fmt, ap);
    va_end(ap);
    return -1;
}

int su_prefix(su_status *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char head[SU_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return -1;
    size_t h = (size_t)n < sizeof head ? (size_t)n : sizeof head - 1;
    size_t m = strnlen(err->msg, sizeof err->msg - 1);
    if (h + m >= sizeof err->msg)
        m = sizeof err->msg - 1 - h;
    memmove(err->msg + h, err->msg, m);
    memcpy(err->msg, head, h);
    err->msg[h + m] = '\0';
    if (err->kind == SU_OK)
        err->kind = SU_INTERNAL; /* a prefix to no failure is a bug */
    return -1;
}

int su_status_copy(su_status *err, const su_status *src)
{
    if (err && err != src) {
        err->kind = src->kind;
        snprintf(err->msg, sizeof err->msg, "%s", src->msg);
    }
    return -1;
}

void su_status_clear(su_status *err)
{
    if (err) {
        err->kind = SU_OK;
        err->msg[0] = '\0';
    }
}

const char *su_kind_name(su_kind k)
{
    static const char *const names[] = {"ok", "input", "usage", "I/O", "out of memory", "GPU",
                                        "peer", "internal"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}
