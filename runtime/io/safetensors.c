/* safetensors.c: reading and writing safetensors files (tensors.h).
 *
 * Opening a file reads and validates its whole header once; tensor data is
 * read later with pread, one call per contiguous run of the block asked for,
 * so a rank touches only the bytes of its own shard. Writing goes through
 * su_wfile (support.h): a file replaced whole or not at all, a device or
 * FIFO written straight into.
 *
 * Data is copied as is: like the rest of the runtime, this assumes a
 * little-endian host (safetensors data is little-endian).
 */
#include "runtime/io/tensors.h"
#include "support/support.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest header accepted, as the reference implementation (Rust). */
#define ST_MAX_HEADER 100000000u
/* Largest integer a JSON number (a double) holds exactly. */
#define ST_MAX_EXACT 9007199254740992.0
/* Bytes per read() call; Linux moves at most ~2 GiB per call. */
#define ST_CHUNK ((size_t)1 << 30)

static const char *const st_dtype_names[RT_NDTYPES] = {"F32", "F16", "BF16", "I32", "BOOL"};


/* "[5, 6]" into buf (at most RT_MAX_RANK dims shown). */
static const char *shape_str(const rt_type *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->rank && i < RT_MAX_RANK && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

/* "[0, 2, 1]": n values of v. */
static const char *list_str(const int64_t *v, int n, char *buf, size_t size)
{
    rt_type t = {0};
    t.rank = (uint8_t)(n < RT_MAX_RANK ? n : RT_MAX_RANK);
    memcpy(t.dim, v, t.rank * sizeof v[0]);
    return shape_str(&t, buf, size);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Offset of the first byte of s[0..n) that is not well-formed UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included), or n. */
static size_t utf8_check(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return n;
}

/* ---- reading the header ---- */

/* A JSON number that is an exact integer in [0, 2^53], in *out. */
static bool json_uint(const cJSON *j, uint64_t *out)
{
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_EXACT) || d != floor(d))
        return false;
    *out = (uint64_t)d;
    return true;
}

/* What a JSON value is, for messages: the number, or its kind. */
static const char *json_desc(const cJSON *j, char *buf, size_t size)
{
    if (cJSON_IsNumber(j))
        snprintf(buf, size, "%.17g", j->valuedouble);
    else
        snprintf(buf, size, "%s", cJSON_IsString(j) ? "a string"
                                  : cJSON_IsArray(j)  ? "an array"
                                  : cJSON_IsObject(j) ? "an object"
                                  : cJSON_IsBool(j)   ? "a boolean"
                                                      : "null");
    return buf;
}

typedef struct st_ctx {
    const char *what;            /* the file, for messages */
    uint64_t data_size;          /* bytes in the data area */
    su_status *err;
} st_ctx;

/* The member key of entry j, which must exist with the given JSON type. */
static const cJSON *member(const st_ctx *c, const cJSON *j, const char *key, int type,
                           const char *type_name)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!m)
        su_fail(c->err, SU_INPUT, "%s: tensor '%s': no \"%s\"", c->what, j->string, key);
    else if ((m->type & 0xFF) != type)
        su_fail(c->err, SU_INPUT, "%s: tensor '%s': \"%s\" is not %s", c->what, j->string, key,
             type_name);
    else
        return m;
    return NULL;
}

/* The dtype and shape of entry j into e->type, and the bytes they hold. */
static int parse_type(const st_ctx *c, const cJSON *j, rt_st_entry *e, uint64_t *bytes)
{
    const cJSON *dt = member(c, j, "dtype", cJSON_String, "a string");
    const cJSON *shape = dt ? member(c, j, "shape", cJSON_Array, "an array") : NULL;
    if (!shape)
        return -1;
    int dtype = 0;
    while (dtype < RT_NDTYPES && strcmp(dt->valuestring, st_dtype_names[dtype]) != 0)
        dtype++;
    if (dtype == RT_NDTYPES)
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': dtype %s is not supported (F32, F16, BF16, I32, BOOL)", c->what,
                    j->string, dt->valuestring);
    e->type.dtype = (uint8_t)dtype;
    int rank = cJSON_GetArraySize(shape);
    if (rank > RT_MAX_RANK)
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': rank %d is more than %d", c->what,
                    j->string, rank, RT_MAX_RANK);
    e->type.rank = (uint8_t)rank;
    /* Dims may be 0 here (an empty tensor), unlike in plans, where rt_type
     * dims are >= 1: the file may hold such a tensor, a plan never asks. */
    bool empty = false;
    int d = 0;
    for (const cJSON *x = shape->child; x; x = x->next, d++) {
        uint64_t v;
        char desc[64];
        if (!json_uint(x, &v))
            return su_fail(c->err, SU_INPUT, "%s: tensor '%s': dim %d of its shape (%s) is not a non-negative integer",
                        c->what, j->string, d, json_desc(x, desc, sizeof desc));
        e->type.dim[d] = (int64_t)v;
        empty |= v == 0;
    }
    /* numel * size within int64, checked without overflowing */
    uint64_t n = (uint64_t)rt_dtype_size(dtype);
    for (d = 0; d < rank && !empty; d++) {
        if ((uint64_t)e->type.dim[d] > (uint64_t)INT64_MAX / n) {
            char s[256];
            return su_fail(c->err, SU_INPUT, "%s: tensor '%s': shape %s of %s holds more than 2^63 bytes",
                        c->what, j->string, shape_str(&e->type, s, sizeof s),
                        st_dtype_names[dtype]);
        }
        n *= (uint64_t)e->type.dim[d];
    }
    *bytes = empty ? 0 : n;
    return 0;
}

/* Entry j ({"dtype", "shape", "data_offsets"}) into e; e->name is set later. */
static int parse_entry(const st_ctx *c, const cJSON *j, rt_st_entry *e)
{
    if (!cJSON_IsObject(j))
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': the entry is not an object", c->what,
                    j->string);
    uint64_t bytes = 0;
    if (parse_type(c, j, e, &bytes) != 0)
        return -1;
    const cJSON *off = member(c, j, "data_offsets", cJSON_Array, "an array");
    if (!off)
        return -1;
    if (cJSON_GetArraySize(off) != 2 || !json_uint(off->child, &e->begin) ||
        !json_uint(off->child->next, &e->end))
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': data_offsets is not two non-negative integers", c->what,
                    j->string);
    unsigned long long b = e->begin, en = e->end;
    if (b > en)
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                    c->what, j->string, b, en);
    if (en - b != bytes) {
        char s[256];
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its shape %s of %s needs %llu",
                    c->what, j->string, b, en, en - b, shape_str(&e->type, s, sizeof s),
                    st_dtype_names[e->type.dtype], (unsigned long long)bytes);
    }
    if (en > c->data_size)
        return su_fail(c->err, SU_INPUT, "%s: tensor '%s': data_offsets [%llu, %llu] go past the end of the data area (%llu bytes; is the file truncated?)",
                    c->what, j->string, b, en, (unsigned long long)c->data_size);
    return 0;
}

/* "__metadata__": an object of strings. */
static int check_metadata(const st_ctx *c, const cJSON *j)
{
    if (!cJSON_IsObject(j))
        return su_fail(c->err, SU_INPUT, "%s: \"__metadata__\" is not an object", c->what);
    for (const cJSON *m = j->child; m; m = m->next)
        if (!cJSON_IsString(m))
            return su_fail(c->err, SU_INPUT, "%s: \"__metadata__\" entry '%s' is not a string",
                        c->what, m->string);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const rt_st_entry *)a)->name, ((const rt_st_entry *)b)->name);
}

static int by_begin(const void *a, const void *b)
{
    const rt_st_entry *x = *(const rt_st_entry *const *)a, *y = *(const rt_st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* No duplicate names (f->entries sorted by name), no two non-empty byte
 * ranges that overlap. */
static int check_distinct(const st_ctx *c, rt_st_file *f)
{
    for (int i = 1; i < f->nentries; i++)
        if (strcmp(f->entries[i - 1].name, f->entries[i].name) == 0)
            return su_fail(c->err, SU_INPUT, "%s: duplicate tensor name '%s'", c->what,
                        f->entries[i].name);
    const rt_st_entry **order = malloc((size_t)(f->nentries ? f->nentries : 1) * sizeof *order);
    if (!order)
        return su_fail(c->err, SU_NOMEM, "%s: out of memory", c->what);
    for (int i = 0; i < f->nentries; i++)
        order[i] = &f->entries[i];
    qsort(order, (size_t)f->nentries, sizeof *order, by_begin);
    const rt_st_entry *last = NULL; /* the non-empty range reaching furthest so far */
    int rc = 0;
    for (int i = 0; i < f->nentries && rc == 0; i++) {
        const rt_st_entry *e = order[i];
        if (e->begin == e->end)
            continue;
        if (last && e->begin < last->end)
            rc = su_fail(c->err, SU_INPUT, "%s: tensors '%s' and '%s' overlap (bytes [%llu, %llu) and [%llu, %llu) of the data area)",
                      c->what, last->name, e->name, (unsigned long long)last->begin,
                      (unsigned long long)last->end, (unsigned long long)e->begin,
                      (unsigned long long)e->end);
        if (!last || e->end > last->end)
            last = e;
    }
    free(order);
    return rc;
}

/* The parsed header into a new rt_st_file: one allocation holding the
 * struct, its entries (sorted by name, so rt_st_find bisects), the path and
 * the names. */
static int build_file(const st_ctx *c, const cJSON *root, rt_st_file **out)
{
    int n = 0, nmeta = 0;
    size_t names = 0;
    for (const cJSON *j = root->child; j; j = j->next) {
        if (strcmp(j->string, "__metadata__") == 0) {
            if (++nmeta > 1)
                return su_fail(c->err, SU_INPUT, "%s: duplicate \"__metadata__\"", c->what);
            if (check_metadata(c, j) != 0)
                return -1;
            continue;
        }
        n++;
        names += strlen(j->string) + 1;
    }
    size_t pathlen = strlen(c->what) + 1;
    rt_st_file *f = malloc(sizeof *f + (size_t)n * sizeof(rt_st_entry) + pathlen + names);
    if (!f)
        return su_fail(c->err, SU_NOMEM, "%s: out of memory reading the header", c->what);
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->nentries = n;
    f->entries = (rt_st_entry *)(f + 1);
    char *p = (char *)(f->entries + n);
    f->path = memcpy(p, c->what, pathlen);
    p += pathlen;
    int i = 0;
    for (const cJSON *j = root->child; j; j = j->next) {
        if (strcmp(j->string, "__metadata__") == 0)
            continue;
        rt_st_entry *e = &f->entries[i++];
        memset(e, 0, sizeof *e);
        size_t len = strlen(j->string) + 1;
        e->name = memcpy(p, j->string, len);
        p += len;
        if (parse_entry(c, j, e) != 0) {
            free(f);
            return -1;
        }
    }
    qsort(f->entries, (size_t)n, sizeof *f->entries, by_name);
    if (check_distinct(c, f) != 0) {
        free(f);
        return -1;
    }
    *out = f;
    return 0;
}

/* The N bytes of JSON at json: UTF-8, one JSON object, then only
 * whitespace (the padding the format allows). */
static int parse_json(const st_ctx *c, const char *json, uint64_t n, rt_st_file **out)
{
    size_t bad = utf8_check((const unsigned char *)json, (size_t)n);
    if (bad < n)
        return su_fail(c->err, SU_INPUT, "%s: the header is not valid UTF-8 (byte %zu of the JSON)",
                    c->what, bad);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)n, &end, 0);
    if (!root) {
        size_t at = end && end >= json && end <= json + n ? (size_t)(end - json) : 0;
        return su_fail(c->err, SU_INPUT, "%s: the header is not valid JSON (near byte %zu of the JSON)",
                    c->what, at);
    }
    int rc = 0;
    size_t at = end && end >= json && end <= json + n ? (size_t)(end - json) : (size_t)n;
    if ((at = su_json_space(json, (size_t)n, at)) < n)
        rc = su_fail(c->err, SU_INPUT, "%s: the header has text after its JSON object (byte %zu of the JSON)",
                  c->what, at);
    if (rc == 0 && !cJSON_IsObject(root))
        rc = su_fail(c->err, SU_INPUT, "%s: the header is not a JSON object", c->what);
    if (rc == 0)
        rc = build_file(c, root, out);
    cJSON_Delete(root);
    return rc;
}

/* The header length n against the avail bytes that follow it. */
static int check_header_len(const char *what, uint64_t n, uint64_t avail, su_status *err)
{
    if (n > avail)
        return su_fail(err, SU_INPUT, "%s: header length %llu exceeds the file (%llu bytes)", what,
                    (unsigned long long)n, (unsigned long long)avail + 8);
    if (n > ST_MAX_HEADER)
        return su_fail(err, SU_INPUT, "%s: header length %llu exceeds the limit of %u bytes", what,
                    (unsigned long long)n, ST_MAX_HEADER);
    return 0;
}

int rt_st_parse_header(const uint8_t *data, size_t len, uint64_t data_size, rt_st_file **out,
                       su_status *err)
{
    const char *what = "safetensors header";
    *out = NULL;
    if (len < 8)
        return su_fail(err, SU_INPUT, "%s: the file is shorter than 8 bytes (%zu bytes)",
                       what, len);
    uint64_t n = le64(data);
    if (check_header_len(what, n, len - 8, err) != 0)
        return -1;
    st_ctx c = {what, data_size, err};
    if (parse_json(&c, (const char *)data + 8, n, out) != 0)
        return -1;
    (*out)->data_start = 8 + n;
    (*out)->file_size = 8 + n + data_size;
    return 0;
}

/* Reads n bytes at off: 0, or -1 with errno (0 at an unexpected end of file). */
static int read_full(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(fd, p, n < ST_CHUNK ? n : ST_CHUNK, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = 0;
            return -1;
        }
        p += got;
        n -= (size_t)got;
        off += (uint64_t)got;
    }
    return 0;
}

static const char *read_error(void)
{
    return errno ? strerror(errno) : "unexpected end of file";
}

/* A read that failed: the file system's error, or a file shorter than its
 * header says (the user's input). */
static su_kind read_kind(void)
{
    return errno ? SU_IO : SU_INPUT;
}

int rt_st_open(const char *path, rt_st_file **out, su_status *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return su_fail(err, SU_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    uint8_t head[8];
    char *json = NULL;
    int rc;
    if (fstat(fd, &st) != 0)
        rc = su_fail(err, SU_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = su_fail(err, SU_INPUT, "%s: not a regular file", path);
    else if (st.st_size < 8)
        rc = su_fail(err, SU_INPUT, "%s: the file is shorter than 8 bytes (%lld bytes)", path,
                  (long long)st.st_size);
    else if (read_full(fd, head, 8, 0) != 0)
        rc = su_fail(err, read_kind(), "%s: cannot read the header length: %s", path, read_error());
    else
        rc = check_header_len(path, le64(head), (uint64_t)st.st_size - 8, err);
    uint64_t n = rc == 0 ? le64(head) : 0;
    if (rc == 0 && !(json = malloc(n ? (size_t)n : 1)))
        rc = su_fail(err, SU_NOMEM, "%s: out of memory for a header of %llu bytes", path,
                  (unsigned long long)n);
    if (rc == 0 && read_full(fd, json, (size_t)n, 8) != 0)
        rc = su_fail(err, read_kind(), "%s: cannot read the header: %s", path, read_error());
    if (rc == 0) {
        st_ctx c = {path, (uint64_t)st.st_size - 8 - n, err};
        rc = parse_json(&c, json, n, out);
    }
    free(json);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    (*out)->fd = fd;
    (*out)->data_start = 8 + n;
    (*out)->file_size = (uint64_t)st.st_size;
    return 0;
}

void rt_st_close(rt_st_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f); /* entries, path and names live in the same block */
}

const rt_st_entry *rt_st_find(const rt_st_file *f, const char *name)
{
    rt_st_entry key = {0};
    key.name = (char *)name;
    return bsearch(&key, f->entries, (size_t)f->nentries, sizeof key, by_name);
}

/* ---- reading tensors ---- */

/* The checks before a block read: the tensor, its dtype and shape, the block. */
static const rt_st_entry *find_checked(const rt_st_file *f, const char *name, const rt_type *want,
                                       const int64_t *start, const int64_t *count, su_status *err)
{
    const rt_st_entry *e = rt_st_find(f, name);
    char a[256], b[256], s[256];
    if (!e) {
        su_fail(err, SU_INPUT, "%s: no tensor '%s' (the file has %d tensors)", f->path, name,
             f->nentries);
        return NULL;
    }
    if (e->type.dtype != want->dtype) {
        su_fail(err, SU_INPUT, "%s: tensor '%s': dtype %s in the file, %s expected", f->path, name,
             st_dtype_names[e->type.dtype], rt_dtype_name(want->dtype));
        return NULL;
    }
    bool same = e->type.rank == want->rank;
    for (int d = 0; same && d < e->type.rank; d++)
        same = e->type.dim[d] == want->dim[d];
    if (!same) {
        su_fail(err, SU_INPUT, "%s: tensor '%s': shape %s in the file, %s expected", f->path, name,
             shape_str(&e->type, a, sizeof a), shape_str(want, b, sizeof b));
        return NULL;
    }
    for (int d = 0; d < e->type.rank; d++)
        if (start[d] < 0 || count[d] < 0 || start[d] > e->type.dim[d] - count[d]) {
            su_fail(err, SU_INPUT, "%s: tensor '%s': the block at %s of size %s is outside its shape %s",
                 f->path, name, list_str(start, e->type.rank, a, sizeof a),
                 list_str(count, e->type.rank, b, sizeof b), shape_str(&e->type, s, sizeof s));
            return NULL;
        }
    return e;
}

int rt_st_read_block(const rt_st_file *f, const char *name, const rt_type *want,
                     const int64_t *start, const int64_t *count, void *dst, su_status *err)
{
    const rt_st_entry *e = find_checked(f, name, want, start, count, err);
    if (!e)
        return -1;
    const int rank = e->type.rank;
    const int64_t *dim = e->type.dim;
    for (int d = 0; d < rank; d++)
        if (count[d] == 0)
            return 0;
    if (f->fd < 0)
        return su_fail(err, SU_INPUT, "%s: no file to read tensor '%s' from", f->path, name);
    /* A run spans count[k] along dim k and every dim after k whole: k is the
     * outermost dim such that the block covers the dims after it. */
    int k = rank > 0 ? rank - 1 : 0;
    while (k > 0 && start[k] == 0 && count[k] == dim[k])
        k--;
    int64_t stride[RT_MAX_RANK + 1]; /* elements */
    stride[rank] = 1;
    for (int d = rank - 1; d >= 0; d--)
        stride[d] = stride[d + 1] * dim[d];
    const int64_t size = rt_dtype_size(e->type.dtype);
    const int64_t run = rank > 0 ? count[k] * stride[k + 1] * size : size; /* bytes */
    int64_t idx[RT_MAX_RANK] = {0}; /* position in the block along dims < k */
    char *out = dst;
    for (;;) {
        int64_t el = rank > 0 ? start[k] * stride[k + 1] : 0;
        for (int d = 0; d < k; d++)
            el += (start[d] + idx[d]) * stride[d + 1];
        uint64_t off = f->data_start + e->begin + (uint64_t)(el * size);
        if (read_full(f->fd, out, (size_t)run, off) != 0)
            return su_fail(err, read_kind(),
                           "%s: tensor '%s': cannot read %lld bytes at offset %llu: %s", f->path, name,
                           (long long)run, (unsigned long long)off, read_error());
        if (e->type.dtype == RT_BOOL) /* one byte, 0 or 1: a kernel compares them */
            for (int64_t b = 0; b < run; b++)
                if ((unsigned char)out[b] > 1)
                    return su_fail(err, SU_INPUT, "%s: tensor '%s': byte %lld of its data is %u, "
                                   "not a bool (0 or 1)", f->path, name,
                                   (long long)(el + b), (unsigned)(unsigned char)out[b]);
        out += run;
        int d = k - 1;
        while (d >= 0 && ++idx[d] == count[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

/* ---- writing ---- */

/* Checks the tensors to write: names non-empty, UTF-8, unique and not
 * "__metadata__"; valid types; data present. */
static int check_write(const char *path, int n, const char *const *names, const rt_type *types,
                       const void *const *data, su_status *err)
{
    if (n < 0)
        return su_fail(err, SU_INPUT, "%s: %d tensors to write", path, n);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        const rt_type *t = &types[i];
        if (!names[i] || !names[i][0])
            return su_fail(err, SU_INPUT, "%s: tensor %d has an empty name", path, i);
        if (utf8_check((const unsigned char *)names[i], strlen(names[i])) < strlen(names[i]))
            return su_fail(err, SU_INPUT, "%s: tensor name '%s' is not valid UTF-8",
                           path, names[i]);
        if (strcmp(names[i], "__metadata__") == 0)
            return su_fail(err, SU_INPUT, "%s: the tensor name '__metadata__' is reserved", path);
        if (t->dtype >= RT_NDTYPES || t->rank > RT_MAX_RANK)
            return su_fail(err, SU_INPUT, "%s: tensor '%s': invalid type (dtype %d, rank %d)", path,
                        names[i], t->dtype, t->rank);
        bool empty = false;
        uint64_t bytes = (uint64_t)rt_dtype_size(t->dtype);
        for (int d = 0; d < t->rank; d++) {
            if (t->dim[d] < 0 || t->dim[d] > (int64_t)ST_MAX_EXACT)
                return su_fail(err, SU_INPUT, "%s: tensor '%s': dim %d is %lld", path, names[i], d,
                            (long long)t->dim[d]);
            empty |= t->dim[d] == 0;
        }
        for (int d = 0; d < t->rank && !empty; d++) {
            if ((uint64_t)t->dim[d] > (uint64_t)INT64_MAX / bytes)
                return su_fail(err, SU_INPUT, "%s: tensor '%s' holds more than 2^63 bytes", path,
                            names[i]);
            bytes *= (uint64_t)t->dim[d];
        }
        if (!empty && !data[i])
            return su_fail(err, SU_INPUT, "%s: tensor '%s': no data", path, names[i]);
        if (!empty && bytes > (uint64_t)INT64_MAX - total)
            return su_fail(err, SU_INPUT, "%s: the tensors hold more than 2^63 bytes", path);
        total += empty ? 0 : bytes;
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return su_fail(err, SU_INPUT, "%s: duplicate tensor name '%s'", path, names[i]);
    }
    return 0;
}

/* An integer as a raw JSON number (cJSON prints doubles past 1e15 with an
 * exponent, which readers expecting integers reject). */
static bool add_uint(cJSON *array, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    cJSON *x = cJSON_CreateRaw(buf);
    if (x && cJSON_AddItemToArray(array, x))
        return true;
    cJSON_Delete(x);
    return false;
}

/* The header JSON (cJSON_free it), each tensor placed after the previous. */
static char *header_json(int n, const char *const *names, const rt_type *types)
{
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    uint64_t at = 0;
    for (int i = 0; ok && i < n; i++) {
        cJSON *t = cJSON_CreateObject(), *shape = NULL, *off = NULL;
        if (!t || !cJSON_AddItemToObject(root, names[i], t)) {
            cJSON_Delete(t);
            ok = false;
            break;
        }
        ok = cJSON_AddStringToObject(t, "dtype", st_dtype_names[types[i].dtype]) &&
             (shape = cJSON_AddArrayToObject(t, "shape")) &&
             (off = cJSON_AddArrayToObject(t, "data_offsets"));
        for (int d = 0; ok && d < types[i].rank; d++)
            ok = add_uint(shape, (uint64_t)types[i].dim[d]);
        uint64_t bytes = (uint64_t)rt_type_bytes(&types[i]);
        ok = ok && add_uint(off, at) && add_uint(off, at + bytes);
        at += bytes;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* n bytes to w, counted into sum (bytes and CRC-32). */
static void put(su_wfile *w, rt_st_sum *sum, const void *p, size_t n)
{
    su_wfile_write(w, p, n);
    sum->bytes += (int64_t)n;
    sum->crc32 = su_crc32(sum->crc32, p, n);
}

/* The header (8-byte length, JSON padded with spaces to a multiple of 8)
 * and the data, to w. */
static void write_body(su_wfile *w, const char *json, int n, const rt_type *types,
                       const void *const *data, rt_st_sum *sum)
{
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    uint8_t head[8];
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = "        ";
    put(w, sum, head, 8);
    put(w, sum, json, len);
    put(w, sum, spaces, padded - len);
    for (int i = 0; i < n; i++)
        put(w, sum, data[i], (size_t)rt_type_bytes(&types[i]));
}

int rt_st_write_sum(const char *path, int n, const char *const *names, const rt_type *types,
                    const void *const *data, rt_st_sum *sum, su_status *err)
{
    memset(sum, 0, sizeof *sum);
    if (check_write(path, n, names, types, data, err) != 0)
        return -1;
    char *json = header_json(n, names, types);
    if (!json)
        return su_fail(err, SU_NOMEM, "%s: out of memory writing the header", path);
    su_wfile w;
    int rc = su_wfile_open(&w, path, err);
    if (rc == 0) {
        write_body(&w, json, n, types, data, sum);
        rc = su_wfile_commit(&w, err);
    }
    cJSON_free(json);
    return rc;
}

int rt_st_write(const char *path, int n, const char *const *names, const rt_type *types,
                const void *const *data, su_status *err)
{
    rt_st_sum sum;
    return rt_st_write_sum(path, n, names, types, data, &sum, err);
}
