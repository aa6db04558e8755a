/* checkpoint.c: sharded checkpoints (checkpoint.h): the folder's layout,
 * writing the rank files and the index, reading the index back against a
 * plan, and reading any box of a tensor from the shards that overlap it,
 * so a checkpoint saved on one mesh loads on another. Also inputs with a
 * leading step dimension (one batch per step).
 *
 * The session (session_ckpt.c) decides who writes and reads what, and does the
 * collectives under MPI; this file touches only files. */
#include "runtime/exec/checkpoint.h"
#include "support/support.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- step folders' names ---- */

#define STEP_PREFIX "step-"
#define PARTIAL_SUFFIX ".partial"

void rt_ckpt_step_name(int64_t step, bool partial, char *buf, size_t size)
{
    snprintf(buf, size, STEP_PREFIX "%08lld%s", (long long)step, partial ? PARTIAL_SUFFIX : "");
}

bool rt_ckpt_parse_step_name(const char *name, int64_t *step, bool *partial)
{
    if (strncmp(name, STEP_PREFIX, strlen(STEP_PREFIX)) != 0)
        return false;
    const char *p = name + strlen(STEP_PREFIX);
    int64_t v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*p - '0');
    }
    if (digits == 0 || (*p && strcmp(p, PARTIAL_SUFFIX) != 0))
        return false;
    *step = v;
    *partial = *p != 0;
    return true;
}

bool rt_ckpt_folder_step(const char *path, int64_t *step)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    char name[256];
    if (n - b >= sizeof name)
        return false;
    memcpy(name, path + b, n - b);
    name[n - b] = 0;
    bool partial;
    return rt_ckpt_parse_step_name(name, step, &partial);
}


#define INDEX_NAME "index.json"
/* Largest index accepted: far above any mesh's (about 100 bytes a shard). */
#define INDEX_MAX ((size_t)1 << 30)
/* Largest integer a JSON number (a double) holds exactly. */
#define MAX_EXACT 9007199254740992.0


/* "[4, 8]": n values of v. */
static const char *dims_str(const int64_t *v, int n, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

static void rank_file_name(int64_t rank, char *buf, size_t size)
{
    snprintf(buf, size, "rank-%05lld.safetensors", (long long)rank);
}

/* ---- layout ---- */

void rt_io_box(const rt_plan *p, const rt_io *io, const int64_t *coord, int64_t *start,
               int64_t *count)
{
    for (int d = 0; d < io->type.rank; d++) {
        int64_t block = 0, n = 1;
        for (int k = 0; k < io->sh.naxes[d]; k++) {
            int a = io->sh.axes[d][k];
            block = block * p->axis_size[a] + coord[a];
            n *= p->axis_size[a];
        }
        count[d] = io->type.dim[d] / n;
        start[d] = block * count[d];
    }
}

/* Whether mesh axis a splits some dim of io. */
static bool splits(const rt_io *io, int a)
{
    for (int d = 0; d < io->type.rank; d++)
        for (int k = 0; k < io->sh.naxes[d]; k++)
            if (io->sh.axes[d][k] == a)
                return true;
    return false;
}

bool rt_ckpt_writes(const rt_plan *p, const rt_io *io, const int64_t *coord)
{
    if (p->stage_axis >= 0 && coord[p->stage_axis] != io->stage)
        return false;
    for (int a = 0; a < p->naxes; a++)
        if (a != p->stage_axis && !splits(io, a) && coord[a] != 0)
            return false;
    return true;
}

static bool is_kept(const rt_io *io)
{
    return io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
}

/* ---- saving ---- */

int rt_ckpt_write_rank(const char *staging, int64_t rank, int n, const char *const *names,
                       const rt_type *types, const void *const *data, rt_st_sum *sum,
                       su_status *err)
{
    char name[64];
    rank_file_name(rank, name, sizeof name);
    char *path = su_path_join(staging, name);
    if (!path)
        return su_fail(err, SU_NOMEM, "%s: out of memory", staging);
    int rc = rt_st_write_sum(path, n, names, types, data, sum, err);
    struct stat st;
    if (rc == 0 && stat(path, &st) != 0)
        rc = su_fail(err, SU_IO, "%s: written, but cannot stat it: %s", path, strerror(errno));
    else if (rc == 0 && st.st_size != sum->bytes)
        rc = su_fail(err, SU_IO, "%s: %lld bytes written, but the file holds %lld", path,
                     (long long)sum->bytes, (long long)st.st_size);
    free(path);
    return rc;
}

/* An integer as a raw JSON number: cJSON prints doubles past 1e15 with an
 * exponent. */
static bool add_int(cJSON *array, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    cJSON *x = cJSON_CreateRaw(buf);
    if (x && cJSON_AddItemToArray(array, x))
        return true;
    cJSON_Delete(x);
    return false;
}

static bool add_int_member(cJSON *obj, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return cJSON_AddRawToObject(obj, key, buf) != NULL;
}

static bool add_dims(cJSON *obj, const char *key, const int64_t *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(obj, key);
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = add_int(a, v[i]);
    return ok;
}

/* The shards of io: every rank that writes it, in rank order. */
static bool add_shards(cJSON *t, const rt_plan *p, const rt_io *io)
{
    cJSON *shards = cJSON_AddArrayToObject(t, "shards");
    bool ok = shards != NULL;
    int64_t nranks = rt_plan_ranks(p);
    for (int64_t r = 0; ok && r < nranks; r++) {
        int64_t coord[RT_MAX_AXES], start[RT_MAX_RANK], count[RT_MAX_RANK];
        rt_plan_coords(p, r, coord);
        if (!rt_ckpt_writes(p, io, coord))
            continue;
        rt_io_box(p, io, coord, start, count);
        char name[64];
        rank_file_name(r, name, sizeof name);
        cJSON *s = cJSON_CreateObject();
        ok = s && cJSON_AddItemToArray(shards, s);
        if (!ok) {
            cJSON_Delete(s);
            break;
        }
        ok = cJSON_AddStringToObject(s, "file", name) &&
             add_dims(s, "offset", start, io->type.rank) &&
             add_dims(s, "shape", count, io->type.rank);
    }
    return ok;
}

/* "files": each rank's file, its rank, size and CRC-32. */
static bool add_files(cJSON *root, const rt_plan *p, const rt_st_sum *sums)
{
    cJSON *files = cJSON_AddArrayToObject(root, "files");
    bool ok = files != NULL;
    for (int64_t r = 0; ok && r < rt_plan_ranks(p); r++) {
        char name[64], crc[16];
        rank_file_name(r, name, sizeof name);
        snprintf(crc, sizeof crc, "%08" PRIx32, sums[r].crc32);
        cJSON *f = cJSON_CreateObject();
        ok = f && cJSON_AddItemToArray(files, f);
        if (!ok)
            cJSON_Delete(f);
        ok = ok && cJSON_AddStringToObject(f, "name", name) && add_int_member(f, "rank", r) &&
             add_int_member(f, "bytes", sums[r].bytes) &&
             cJSON_AddStringToObject(f, "crc32", crc);
    }
    return ok;
}

/* first: rt_plan_io_first's, so a tensor kept by several stages (the step
 * count) is listed once, with the shards of its first entry's stage. */
static cJSON *index_json(const rt_plan *p, int64_t step, const rt_st_sum *sums,
                         const int32_t *first)
{
    cJSON *root = cJSON_CreateObject(), *mesh = NULL, *axes = NULL, *sizes = NULL;
    cJSON *tensors = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", RT_CKPT_FORMAT) &&
              add_int_member(root, "version", RT_CKPT_VERSION) &&
              add_int_member(root, "step", step) &&
              (mesh = cJSON_AddObjectToObject(root, "mesh")) &&
              (axes = cJSON_AddArrayToObject(mesh, "axes")) &&
              (sizes = cJSON_AddArrayToObject(mesh, "sizes"));
    for (int a = 0; ok && a < p->naxes; a++) {
        cJSON *name = cJSON_CreateString(p->axis_name[a]);
        ok = name && cJSON_AddItemToArray(axes, name) && add_int(sizes, p->axis_size[a]);
        if (!ok)
            cJSON_Delete(name);
    }
    ok = ok && add_files(root, p, sums);
    ok = ok && (tensors = cJSON_AddObjectToObject(root, "tensors"));
    for (int i = 0; ok && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!is_kept(io) || first[i] != i)
            continue;
        cJSON *t = cJSON_AddObjectToObject(tensors, io->name);
        ok = t && cJSON_AddStringToObject(t, "kind", io->kind == RT_IO_PARAM ? "param" : "state") &&
             cJSON_AddStringToObject(t, "dtype", rt_dtype_name(io->type.dtype)) &&
             add_dims(t, "shape", io->type.dim, io->type.rank) && add_shards(t, p, io);
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int rt_ckpt_write_index(const char *dir, const rt_plan *p, int64_t step,
                        const rt_st_sum *files, su_status *err)
{
    int32_t *first = calloc((size_t)p->nio + 1, sizeof *first);
    cJSON *root = first && rt_plan_io_first(p, first) ? index_json(p, step, files, first)
                                                      : NULL;
    free(first);
    char *json = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    size_t n = json ? strlen(json) + 2 : 0;
    char *text = json ? malloc(n) : NULL;
    if (text)
        snprintf(text, n, "%s\n", json);
    cJSON_free(json);
    char *path = su_path_join(dir, INDEX_NAME);
    int rc = 0;
    if (!text || !path)
        rc = su_fail(err, SU_NOMEM, "%s: out of memory writing the index", dir);
    if (rc == 0)
        rc = su_write_file(path, text, strlen(text), err);
    free(text);
    free(path);
    return rc;
}

/* ---- loading: the index ---- */

typedef struct ck_shard {
    int file;                       /* index into rt_ckpt.files */
    int64_t off[RT_MAX_RANK];       /* the box's start in the global tensor */
    int64_t dim[RT_MAX_RANK];       /* its size (the shard's shape) */
} ck_shard;

typedef struct ck_tensor {
    const char *name;               /* in the parsed JSON (rt_ckpt.json) */
    int kind;                       /* RT_IO_PARAM or RT_IO_STATE */
    rt_type type;                   /* global */
    int nshards;
    ck_shard *shards;
    bool used;                      /* the plan has it */
} ck_tensor;

typedef struct ck_file {
    const char *name;               /* in the parsed JSON */
    int64_t rank;                   /* whose file it is (-1: version 1) */
    int64_t bytes;
    uint32_t crc32;                 /* of all its bytes (version 2) */
    rt_st_file *st;                 /* opened by rt_ckpt_prepare, when needed */
} ck_file;

struct rt_ckpt {
    char *dir;
    char *index;                    /* dir/index.json, for messages */
    cJSON *json;                    /* owns the names */
    int64_t version;
    int64_t step;
    int64_t nranks;                 /* of the mesh that saved it */
    int nfiles;
    ck_file *files;
    int ntensors;
    ck_tensor *tensors;
    int *by_io;                     /* per plan I/O entry: its tensor, or -1 */
    const rt_plan *p;
};

/* A member of obj with the given cJSON type, or NULL with a message
 * naming where ("tensor 'w1': " or ""). */
static const cJSON *member(const rt_ckpt *c, const cJSON *obj, const char *key, int type,
                           const char *type_name, const char *where, su_status *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!m)
        su_fail(err, SU_INPUT, "%s: %sno \"%s\"", c->index, where, key);
    else if ((m->type & 0xFF) != type)
        su_fail(err, SU_INPUT, "%s: %s\"%s\" is not %s", c->index, where, key, type_name);
    else
        return m;
    return NULL;
}

static bool json_int(const cJSON *j, int64_t lo, int64_t *out)
{
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= (double)lo && d <= MAX_EXACT) || d != floor(d))
        return false;
    *out = (int64_t)d;
    return true;
}

/* An array member of n (-1: up to RT_MAX_RANK) integers >= lo into v;
 * their count in *got. */
static int int_array(const rt_ckpt *c, const cJSON *obj, const char *key, int n, int64_t lo,
                     int64_t *v, int *got, const char *where, su_status *err)
{
    const cJSON *a = member(c, obj, key, cJSON_Array, "an array", where, err);
    if (!a)
        return -1;
    int size = cJSON_GetArraySize(a), i = 0;
    bool ok = n < 0 ? size <= RT_MAX_RANK : size == n;
    for (const cJSON *x = a->child; ok && x; x = x->next)
        ok = json_int(x, lo, &v[i++]);
    if (!ok) {
        if (n < 0)
            return su_fail(err, SU_INPUT, "%s: %s\"%s\" is not a list of at most %d integers >= %lld",
                        c->index, where, key, RT_MAX_RANK, (long long)lo);
        return su_fail(err, SU_INPUT, "%s: %s\"%s\" is not a list of %d integers >= %lld", c->index,
                    where, key, n, (long long)lo);
    }
    if (got)
        *got = size;
    return 0;
}

static int parse_head(rt_ckpt *c, const cJSON *root, su_status *err)
{
    if (!cJSON_IsObject(root))
        return su_fail(err, SU_INPUT, "%s: not a JSON object", c->index);
    const cJSON *format = member(c, root, "format", cJSON_String, "a string", "", err);
    if (!format)
        return -1;
    if (strcmp(format->valuestring, RT_CKPT_FORMAT) != 0)
        return su_fail(err, SU_INPUT, "%s: format \"%s\", not \"%s\"",
                       c->index, format->valuestring,
                    RT_CKPT_FORMAT);
    const cJSON *version = member(c, root, "version", cJSON_Number, "a number", "", err);
    int64_t v;
    if (!version)
        return -1;
    if (!json_int(version, 1, &v) || v > RT_CKPT_VERSION)
        return su_fail(err, SU_INPUT, "%s: version %g%s: this build reads versions 1 to %d",
                       c->index, version->valuedouble,
                       json_int(version, 1, &v) ? " is newer" : " is unknown", RT_CKPT_VERSION);
    c->version = v;
    const cJSON *step = member(c, root, "step", cJSON_Number, "a number", "", err);
    if (!step)
        return -1;
    if (!json_int(step, 0, &c->step))
        return su_fail(err, SU_INPUT, "%s: \"step\" is not an integer >= 0", c->index);
    const cJSON *mesh = member(c, root, "mesh", cJSON_Object, "an object", "", err);
    if (!mesh)
        return -1;
    const cJSON *axes = member(c, mesh, "axes", cJSON_Array, "an array", "mesh: ", err);
    int64_t sizes[RT_MAX_AXES];
    int nsizes = 0;
    if (!axes || int_array(c, mesh, "sizes", -1, 1, sizes, &nsizes, "mesh: ", err) != 0)
        return -1;
    if (cJSON_GetArraySize(axes) != nsizes)
        return su_fail(err, SU_INPUT, "%s: mesh: %d axes, but %d sizes", c->index,
                    cJSON_GetArraySize(axes), nsizes);
    c->nranks = 1;
    for (int a = 0; a < nsizes; a++)
        if (!su_mul64(c->nranks, sizes[a], &c->nranks) || c->nranks > INT32_MAX)
            return su_fail(err, SU_INPUT, "%s: mesh: more than 2^31 ranks", c->index);
    return 0;
}

/* A name the index may give a shard file: one in the folder itself. */
static bool plain_name(const char *s)
{
    return s[0] && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* "8d3f0a12": 8 hex digits. */
static bool parse_crc(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return s[8] == 0;
}

/* Entry i of "files": its name, size and (version 2) rank and CRC-32. */
static int parse_file(rt_ckpt *c, const cJSON *f, int i, su_status *err)
{
    char where[48];
    snprintf(where, sizeof where, "file %d: ", i);
    ck_file *cf = &c->files[i];
    if (!cJSON_IsObject(f))
        return su_fail(err, SU_INPUT, "%s: %snot an object", c->index, where);
    const cJSON *name = member(c, f, "name", cJSON_String, "a string", where, err);
    const cJSON *bytes = name ? member(c, f, "bytes", cJSON_Number, "a number", where, err)
                              : NULL;
    const cJSON *rank = bytes && c->version >= 2 ? member(c, f, "rank", cJSON_Number, "a number",
                                                          where, err)
                                                 : NULL;
    const cJSON *crc = rank ? member(c, f, "crc32", cJSON_String, "a string", where, err)
                            : NULL;
    if (!bytes || (c->version >= 2 && !crc))
        return -1;
    if (crc && !parse_crc(crc->valuestring, &cf->crc32))
        return su_fail(err, SU_INPUT, "%s: %s\"crc32\" \"%s\" is not 8 hex digits", c->index,
                       where, crc->valuestring);
    if (!plain_name(name->valuestring))
        return su_fail(err, SU_INPUT, "%s: %sname \"%s\" is not a file name in the folder",
                       c->index, where, name->valuestring);
    if (!json_int(bytes, 0, &cf->bytes))
        return su_fail(err, SU_INPUT, "%s: %s\"bytes\" is not an integer >= 0", c->index, where);
    cf->rank = -1;
    if (rank && (!json_int(rank, 0, &cf->rank) || cf->rank >= c->nranks))
        return su_fail(err, SU_INPUT, "%s: %s\"rank\" is not a rank of the mesh (0 to %lld)",
                       c->index, where, (long long)c->nranks - 1);
    cf->name = name->valuestring;
    for (int k = 0; k < i; k++) {
        if (!strcmp(c->files[k].name, cf->name))
            return su_fail(err, SU_INPUT, "%s: file \"%s\" is listed twice", c->index, cf->name);
        if (rank && c->files[k].rank == cf->rank)
            return su_fail(err, SU_INPUT, "%s: files \"%s\" and \"%s\" are both rank %lld's",
                           c->index, c->files[k].name, cf->name, (long long)cf->rank);
    }
    return 0;
}

/* "files": in version 2, one per rank of the mesh that saved. */
static int parse_files(rt_ckpt *c, const cJSON *root, su_status *err)
{
    const cJSON *files = member(c, root, "files", cJSON_Array, "an array", "", err);
    if (!files)
        return -1;
    c->nfiles = cJSON_GetArraySize(files);
    if (c->version >= 2 && c->nfiles != c->nranks)
        return su_fail(err, SU_INPUT, "%s: %d files, but the mesh has %lld ranks (one file each)",
                       c->index, c->nfiles, (long long)c->nranks);
    c->files = calloc((size_t)c->nfiles + 1, sizeof *c->files);
    if (!c->files)
        return su_fail(err, SU_NOMEM, "%s: out of memory", c->index);
    int i = 0;
    for (const cJSON *f = files->child; f; f = f->next, i++)
        if (parse_file(c, f, i, err) != 0)
            return -1;
    return 0;
}

static int find_file(const rt_ckpt *c, const char *name)
{
    for (int i = 0; i < c->nfiles; i++)
        if (!strcmp(c->files[i].name, name))
            return i;
    return -1;
}

static int parse_shard(rt_ckpt *c, const ck_tensor *t, const cJSON *j, int i, ck_shard *s,
                       su_status *err)
{
    char where[300], a[256], b[256], g[256];
    snprintf(where, sizeof where, "tensor '%s': shard %d: ", t->name, i);
    if (!cJSON_IsObject(j))
        return su_fail(err, SU_INPUT, "%s: %snot an object", c->index, where);
    const cJSON *file = member(c, j, "file", cJSON_String, "a string", where, err);
    if (!file)
        return -1;
    s->file = find_file(c, file->valuestring);
    if (s->file < 0)
        return su_fail(err, SU_INPUT, "%s: %sfile \"%s\" is not in \"files\"", c->index, where,
                    file->valuestring);
    int rank = t->type.rank;
    if (int_array(c, j, "offset", rank, 0, s->off, NULL, where, err) != 0 ||
        int_array(c, j, "shape", rank, 1, s->dim, NULL, where, err) != 0)
        return -1;
    for (int d = 0; d < rank; d++)
        if (s->off[d] > t->type.dim[d] - s->dim[d])
            return su_fail(err, SU_INPUT, "%s: %sthe box at %s of shape %s is outside the tensor's shape %s",
                        c->index, where, dims_str(s->off, rank, a, sizeof a),
                        dims_str(s->dim, rank, b, sizeof b),
                        dims_str(t->type.dim, rank, g, sizeof g));
    return 0;
}

static int parse_tensor(rt_ckpt *c, const cJSON *j, ck_tensor *t, su_status *err)
{
    char where[256];
    t->name = j->string;
    snprintf(where, sizeof where, "tensor '%s': ", t->name);
    if (!cJSON_IsObject(j))
        return su_fail(err, SU_INPUT, "%s: %snot an object", c->index, where);
    const cJSON *kind = member(c, j, "kind", cJSON_String, "a string", where, err);
    const cJSON *dtype = kind ? member(c, j, "dtype", cJSON_String, "a string", where, err)
                              : NULL;
    if (!dtype)
        return -1;
    if (!strcmp(kind->valuestring, "param"))
        t->kind = RT_IO_PARAM;
    else if (!strcmp(kind->valuestring, "state"))
        t->kind = RT_IO_STATE;
    else
        return su_fail(err, SU_INPUT, "%s: %skind \"%s\" (param or state expected)",
                       c->index, where,
                    kind->valuestring);
    int dt = 0;
    while (dt < RT_NDTYPES && strcmp(dtype->valuestring, rt_dtype_name(dt)) != 0)
        dt++;
    if (dt == RT_NDTYPES)
        return su_fail(err, SU_INPUT, "%s: %sdtype \"%s\" is not one of f32, f16, bf16, i32",
                    c->index, where, dtype->valuestring);
    t->type.dtype = (uint8_t)dt;
    int rank = 0;
    if (int_array(c, j, "shape", -1, 1, t->type.dim, &rank, where, err) != 0)
        return -1;
    t->type.rank = (uint8_t)rank;
    const cJSON *shards = member(c, j, "shards", cJSON_Array, "an array", where, err);
    if (!shards)
        return -1;
    t->nshards = cJSON_GetArraySize(shards);
    t->shards = calloc((size_t)t->nshards + 1, sizeof *t->shards);
    if (!t->shards)
        return su_fail(err, SU_NOMEM, "%s: out of memory", c->index);
    int i = 0;
    for (const cJSON *s = shards->child; s; s = s->next, i++)
        if (parse_shard(c, t, s, i, &t->shards[i], err) != 0)
            return -1;
    return 0;
}

static int parse_tensors(rt_ckpt *c, const cJSON *root, su_status *err)
{
    const cJSON *tensors = member(c, root, "tensors", cJSON_Object, "an object", "", err);
    if (!tensors)
        return -1;
    c->ntensors = cJSON_GetArraySize(tensors);
    c->tensors = calloc((size_t)c->ntensors + 1, sizeof *c->tensors);
    if (!c->tensors)
        return su_fail(err, SU_NOMEM, "%s: out of memory", c->index);
    int i = 0;
    for (const cJSON *t = tensors->child; t; t = t->next, i++) {
        if (parse_tensor(c, t, &c->tensors[i], err) != 0)
            return -1;
        for (int k = 0; k < i; k++)
            if (!strcmp(c->tensors[k].name, t->string))
                return su_fail(err, SU_INPUT, "%s: tensor '%s' is listed twice",
                               c->index, t->string);
    }
    return 0;
}

static const char *kind_name(int kind)
{
    return kind == RT_IO_PARAM ? "param" : "state";
}

/* Every param and state of the plan in the checkpoint, alike; nothing else
 * there. A tensor the plan lacks is an error rather than skipped: it means
 * another model or another optimizer, and resuming would quietly drop it. */
static int match_plan(rt_ckpt *c, su_status *err)
{
    const rt_plan *p = c->p;
    char a[256], b[256];
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        c->by_io[i] = -1;
        if (!is_kept(io))
            continue;
        ck_tensor *t = NULL;
        for (int k = 0; k < c->ntensors && !t; k++)
            if (!strcmp(c->tensors[k].name, io->name))
                t = &c->tensors[k];
        if (!t)
            return su_fail(err, SU_INPUT, "%s: the checkpoint has no %s '%s', which the plan has",
                        c->index, kind_name(io->kind), io->name);
        if (t->kind != io->kind)
            return su_fail(err, SU_INPUT, "%s: tensor '%s' is a %s in the checkpoint, a %s in the plan",
                        c->index, io->name, kind_name(t->kind), kind_name(io->kind));
        if (t->type.dtype != io->type.dtype)
            return su_fail(err, SU_INPUT, "%s: tensor '%s': dtype %s in the checkpoint, %s in the plan",
                        c->index, io->name, rt_dtype_name(t->type.dtype),
                        rt_dtype_name(io->type.dtype));
        bool same = t->type.rank == io->type.rank;
        for (int d = 0; same && d < io->type.rank; d++)
            same = t->type.dim[d] == io->type.dim[d];
        if (!same)
            return su_fail(err, SU_INPUT, "%s: tensor '%s': shape %s in the checkpoint, %s in the plan",
                        c->index, io->name, dims_str(t->type.dim, t->type.rank, a, sizeof a),
                        dims_str(io->type.dim, io->type.rank, b, sizeof b));
        t->used = true;
        c->by_io[i] = (int)(t - c->tensors);
    }
    for (int k = 0; k < c->ntensors; k++)
        if (!c->tensors[k].used)
            return su_fail(err, SU_INPUT, "%s: the checkpoint has '%s', which the plan does not (a checkpoint of another model or optimizer?)",
                        c->index, c->tensors[k].name);
    return 0;
}

/* The whole index file, NUL-terminated. */
static char *read_index(const char *path, size_t *len, su_status *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            su_fail(err, SU_INPUT, "%s: no such file: not a checkpoint, or its save did not complete",
                 path);
        else
            su_fail(err, SU_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *t = cap <= INDEX_MAX ? realloc(text, cap) : NULL;
            if (!t) {
                su_fail(err, SU_NOMEM, "%s: %s", path,
                     cap > INDEX_MAX ? "larger than 1 GiB: not an index" : "out of memory");
                free(text);
                fclose(f);
                return NULL;
            }
            text = t;
        }
        size_t got = fread(text + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        su_fail(err, SU_IO, "%s: cannot read: %s", path, strerror(errno));
        free(text);
        return NULL;
    }
    text[n] = 0;
    *len = n;
    return text;
}

int rt_ckpt_open(const char *dir, const rt_plan *p, rt_ckpt **out, su_status *err)
{
    *out = NULL;
    rt_ckpt *c = calloc(1, sizeof *c);
    if (!c)
        return su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    c->p = p;
    c->dir = strdup(dir);
    c->index = su_path_join(dir, INDEX_NAME);
    c->by_io = calloc((size_t)p->nio + 1, sizeof *c->by_io);
    size_t len = 0;
    char *text = NULL;
    int rc = 0;
    if (!c->dir || !c->index || !c->by_io)
        rc = su_fail(err, SU_NOMEM, "%s: out of memory", dir);
    if (rc == 0 && !(text = read_index(c->index, &len, err)))
        rc = -1;
    if (rc == 0) {
        const char *end = NULL;
        c->json = cJSON_ParseWithLengthOpts(text, len, &end, 0);
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
        if (c->json)
            at = su_json_space(text, len, at);
        if (!c->json || at < len) {
            su_loc loc = su_text_loc(text, at);
            rc = su_fail(err, SU_INPUT, "%s:%d:%d: %s (byte %zu)", c->index, loc.line, loc.col,
                         c->json ? "text after the JSON object" : "not valid JSON here", at);
        }
    }
    free(text);
    if (rc == 0)
        rc = parse_head(c, c->json, err);
    int64_t named;
    if (rc == 0 && rt_ckpt_folder_step(dir, &named) && named != c->step)
        rc = su_fail(err, SU_INPUT, "%s: step %lld, but the folder is named for step %lld: a folder renamed or copied?",
                     c->index, (long long)c->step, (long long)named);
    if (rc == 0)
        rc = parse_files(c, c->json, err);
    if (rc == 0)
        rc = parse_tensors(c, c->json, err);
    if (rc == 0)
        rc = match_plan(c, err);
    if (rc != 0) {
        rt_ckpt_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void rt_ckpt_free(rt_ckpt *c)
{
    if (!c)
        return;
    for (int i = 0; c->files && i < c->nfiles; i++)
        rt_st_close(c->files[i].st);
    free(c->files);
    for (int i = 0; c->tensors && i < c->ntensors; i++)
        free(c->tensors[i].shards);
    free(c->tensors);
    free(c->by_io);
    cJSON_Delete(c->json);
    free(c->index);
    free(c->dir);
    free(c);
}

int64_t rt_ckpt_step(const rt_ckpt *c)
{
    return c->step;
}

/* ---- loading: the shards ---- */

/* The overlap of shard s with the box [start, start + count): its start and
 * size in lo and n; false when they do not overlap. */
static bool overlap(const ck_shard *s, int rank, const int64_t *start, const int64_t *count,
                    int64_t *lo, int64_t *n)
{
    for (int d = 0; d < rank; d++) {
        int64_t a = start[d] > s->off[d] ? start[d] : s->off[d];
        int64_t b = start[d] + count[d] < s->off[d] + s->dim[d] ? start[d] + count[d]
                                                                 : s->off[d] + s->dim[d];
        if (a >= b)
            return false;
        lo[d] = a;
        n[d] = b - a;
    }
    return true;
}

static int64_t volume(const int64_t *n, int rank)
{
    int64_t v = 1;
    for (int d = 0; d < rank; d++)
        v *= n[d];
    return v;
}

/* The shards overlapping the box must cover it exactly once: pairwise
 * disjoint there, and their overlaps add up to the box. Only the shards
 * that overlap it are compared, so the cost is that of the box, not of the
 * mesh. */
static int check_cover(const rt_ckpt *c, const ck_tensor *t, const int64_t *start,
                       const int64_t *count, su_status *err)
{
    int rank = t->type.rank;
    int *hit = malloc(((size_t)t->nshards + 1) * sizeof *hit);
    if (!hit)
        return su_fail(err, SU_NOMEM, "%s: out of memory", c->index);
    int nhit = 0, rc = 0;
    int64_t covered = 0;
    char a[256], b[256];
    for (int i = 0; i < t->nshards && rc == 0; i++) {
        int64_t lo[RT_MAX_RANK], n[RT_MAX_RANK], lo2[RT_MAX_RANK], n2[RT_MAX_RANK];
        if (!overlap(&t->shards[i], rank, start, count, lo, n))
            continue;
        for (int k = 0; k < nhit && rc == 0; k++)
            if (overlap(&t->shards[hit[k]], rank, lo, n, lo2, n2))
                rc = su_fail(err, SU_INPUT, "%s: tensor '%s': shards %d and %d overlap (at %s)",
                          c->index, t->name, hit[k], i, dims_str(lo2, rank, a, sizeof a));
        hit[nhit++] = i;
        covered += volume(n, rank);
    }
    free(hit);
    if (rc == 0 && covered != volume(count, rank))
        rc = su_fail(err, SU_INPUT, "%s: tensor '%s': the shards do not cover the block at %s of shape %s",
                  c->index, t->name, dims_str(start, rank, a, sizeof a),
                  dims_str(count, rank, b, sizeof b));
    return rc;
}

static rt_type shard_type(const ck_tensor *t, const ck_shard *s)
{
    rt_type st = t->type;
    memcpy(st.dim, s->dim, sizeof st.dim);
    return st;
}

/* Bytes read at a time to sum a file. */
#define SUM_CHUNK ((size_t)1 << 20)

/* The size and CRC-32 of the file at path, read whole. */
static int file_sum(const char *path, rt_st_sum *sum, su_status *err)
{
    memset(sum, 0, sizeof *sum);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return su_fail(err, SU_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *buf = malloc(SUM_CHUNK);
    int rc = buf ? 0 : su_fail(err, SU_NOMEM, "%s: out of memory", path);
    for (ssize_t got = 1; rc == 0 && got > 0;) {
        got = read(fd, buf, SUM_CHUNK);
        if (got < 0 && errno == EINTR)
            got = 1;
        else if (got < 0)
            rc = su_fail(err, SU_IO, "%s: cannot read: %s", path, strerror(errno));
        else {
            sum->crc32 = su_crc32(sum->crc32, buf, (size_t)got);
            sum->bytes += got;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

/* Checks the file of f at path (a regular file of size bytes) against the
 * index: its size, and its CRC-32 (version 2). A file whose size and
 * CRC-32 are another file's in the index is named as swapped with it. */
static int check_file(const rt_ckpt *c, const ck_file *f, const char *path, int64_t bytes,
                      su_status *err)
{
    rt_st_sum sum = {bytes, 0, 0};
    if (c->version >= 2 && file_sum(path, &sum, err) != 0)
        return -1;
    if (sum.bytes == f->bytes && (c->version < 2 || sum.crc32 == f->crc32))
        return 0;
    for (int i = 0; c->version >= 2 && i < c->nfiles; i++) {
        const ck_file *g = &c->files[i];
        if (g != f && g->bytes == sum.bytes && g->crc32 == sum.crc32)
            return su_fail(err, SU_INPUT, "%s: holds the bytes the index gives for %s (rank %lld's file), not its own (rank %lld's): files swapped or renamed",
                           path, g->name, (long long)g->rank, (long long)f->rank);
    }
    if (sum.bytes != f->bytes)
        return su_fail(err, SU_INPUT, "%s: %lld bytes, but the index says %lld: the file is truncated or not this checkpoint's",
                       path, (long long)sum.bytes, (long long)f->bytes);
    return su_fail(err, SU_INPUT, "%s: CRC-32 %08" PRIx32 ", but the index says %08" PRIx32 ": the file is damaged or not this checkpoint's",
                   path, sum.crc32, f->crc32);
}

/* Opens the file of shard s of t (once), checks it against the index
 * (check_file) and that it holds the shard. */
static int open_shard(rt_ckpt *c, const ck_tensor *t, const ck_shard *s, su_status *err)
{
    ck_file *f = &c->files[s->file];
    char a[256], b[256];
    if (!f->st) {
        char *path = su_path_join(c->dir, f->name);
        if (!path)
            return su_fail(err, SU_NOMEM, "%s: out of memory", c->dir);
        struct stat st;
        int rc = 0;
        if (stat(path, &st) != 0)
            rc = su_fail(err, SU_IO, "%s: cannot open: %s (it holds a shard of '%s')", path,
                         strerror(errno), t->name);
        else if (!S_ISREG(st.st_mode) && c->version >= 2)
            rc = su_fail(err, SU_INPUT, "%s: not a regular file (it holds a shard of '%s')", path,
                         t->name);
        else if (S_ISREG(st.st_mode))
            rc = check_file(c, f, path, (int64_t)st.st_size, err);
        if (rc == 0)
            rc = rt_st_open(path, &f->st, err);
        free(path);
        if (rc != 0)
            return -1;
    }
    const rt_st_entry *e = rt_st_find(f->st, t->name);
    rt_type want = shard_type(t, s);
    if (!e)
        return su_fail(err, SU_INPUT, "%s: no tensor '%s', which the index puts there", f->st->path,
                    t->name);
    bool same = e->type.dtype == want.dtype && e->type.rank == want.rank;
    for (int d = 0; same && d < want.rank; d++)
        same = e->type.dim[d] == want.dim[d];
    if (!same)
        return su_fail(err, SU_INPUT, "%s: tensor '%s': %s%s in the file, %s%s in the index",
                    f->st->path, t->name, rt_dtype_name(e->type.dtype),
                    dims_str(e->type.dim, e->type.rank, a, sizeof a), rt_dtype_name(want.dtype),
                    dims_str(want.dim, want.rank, b, sizeof b));
    return 0;
}

int rt_ckpt_prepare(rt_ckpt *c, int io, const int64_t *start, const int64_t *count, su_status *err)
{
    const ck_tensor *t = &c->tensors[c->by_io[io]];
    if (check_cover(c, t, start, count, err) != 0)
        return -1;
    int64_t lo[RT_MAX_RANK], n[RT_MAX_RANK];
    for (int i = 0; i < t->nshards; i++)
        if (overlap(&t->shards[i], t->type.rank, start, count, lo, n) &&
            open_shard(c, t, &t->shards[i], err) != 0)
            return -1;
    return 0;
}

/* Copies src, a packed block of shape n, into dst, a packed block of shape
 * count, at offset at: one memcpy per row of the innermost dim. */
static void place(uint8_t *dst, const int64_t *count, const int64_t *at, const int64_t *n,
                  int rank, int esize, const uint8_t *src)
{
    if (rank == 0) {
        memcpy(dst, src, (size_t)esize);
        return;
    }
    int64_t row = n[rank - 1] * esize, rows = volume(n, rank - 1);
    int64_t idx[RT_MAX_RANK] = {0};
    for (int64_t k = 0; k < rows; k++) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++)
            off = off * count[d] + at[d] + (d < rank - 1 ? idx[d] : 0);
        memcpy(dst + off * esize, src + k * row, (size_t)row);
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < n[d])
                break;
            idx[d] = 0;
        }
    }
}

int rt_ckpt_read(const rt_ckpt *c, int io, const int64_t *start, const int64_t *count,
                 void *dst, su_status *err)
{
    const ck_tensor *t = &c->tensors[c->by_io[io]];
    int rank = t->type.rank, esize = rt_dtype_size(t->type.dtype);
    int64_t whole = volume(count, rank);
    for (int i = 0; i < t->nshards; i++) {
        const ck_shard *s = &t->shards[i];
        int64_t lo[RT_MAX_RANK], n[RT_MAX_RANK], in[RT_MAX_RANK], at[RT_MAX_RANK];
        if (!overlap(s, rank, start, count, lo, n))
            continue;
        const rt_st_file *f = c->files[s->file].st;
        if (!f)
            return su_fail(err, SU_INTERNAL, "%s: tensor '%s': read before rt_ckpt_prepare",
                           c->index,
                        t->name);
        for (int d = 0; d < rank; d++) {
            in[d] = lo[d] - s->off[d];
            at[d] = lo[d] - start[d];
        }
        rt_type want = shard_type(t, s);
        int64_t v = volume(n, rank);
        if (v == whole) { /* the shard holds the whole box: straight in */
            if (rt_st_read_block(f, t->name, &want, in, n, dst, err) != 0)
                return -1;
            continue;
        }
        uint8_t *tmp = malloc((size_t)(v * esize));
        if (!tmp)
            return su_fail(err, SU_NOMEM, "%s: out of memory reading '%s'", f->path, t->name);
        int rc = rt_st_read_block(f, t->name, &want, in, n, tmp, err);
        if (rc == 0)
            place(dst, count, at, n, rank, esize, tmp);
        free(tmp);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ---- inputs with a step dimension ---- */

int64_t rt_input_batches(const rt_st_file *f, const rt_io *io)
{
    const rt_st_entry *e = rt_st_find(f, io->name);
    if (!e || e->type.rank != io->type.rank + 1)
        return -1;
    for (int d = 0; d < io->type.rank; d++)
        if (e->type.dim[d + 1] != io->type.dim[d])
            return -1;
    return e->type.dim[0];
}

int rt_input_read(const rt_st_file *f, const rt_io *io, int64_t step, const int64_t *start,
                  const int64_t *count, void *dst, su_status *err)
{
    int64_t nb = rt_input_batches(f, io);
    if (nb < 0)
        return rt_st_read_block(f, io->name, &io->type, start, count, dst, err);
    if (step >= nb)
        return su_fail(err, SU_INPUT, "%s: tensor '%s' holds %lld batch%s (one a step), none for step %lld",
                    f->path, io->name, (long long)nb, nb == 1 ? "" : "es", (long long)step + 1);
    /* the block of batch `step`: one more dim, of size 1, in front */
    rt_type want = rt_st_find(f, io->name)->type;
    want.dtype = io->type.dtype; /* a dtype other than the file's is an error */
    int64_t st[RT_MAX_RANK], n[RT_MAX_RANK];
    st[0] = step;
    n[0] = 1;
    for (int d = 0; d < io->type.rank; d++) {
        st[d + 1] = start[d];
        n[d + 1] = count[d];
    }
    return rt_st_read_block(f, io->name, &want, st, n, dst, err);
}
