/* test_tensors.c: safetensors reading and writing, and parameter
 * initialisation (runtime/io/tensors.h). Files live in a fresh folder under
 * /tmp, removed at the end. */
#include "check.h"
#include "support/support.h"
#include "runtime/io/tensors.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static su_status err;

static const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(data, 1, len, f) == len);
        fclose(f);
    }
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A safetensors file from its JSON (not padded) and datalen data bytes
 * (0, 1, 2, ...), as bytes in buf; returns the length. */
static size_t make_bytes(uint8_t *buf, const char *json, size_t datalen)
{
    size_t n = strlen(json);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, json, n);
    for (size_t i = 0; i < datalen; i++)
        buf[8 + n + i] = (uint8_t)i;
    return 8 + n + datalen;
}

/* A file made of json and datalen data bytes must be rejected by rt_st_open
 * with a message naming the file and holding phrase, and by
 * rt_st_parse_header with the phrase too. */
static void expect_reject(const char *json, size_t datalen, const char *phrase)
{
    static uint8_t buf[8192];
    size_t len = make_bytes(buf, json, datalen);
    const char *path = at("bad.safetensors");
    write_bytes(path, buf, len);
    rt_st_file *f = (rt_st_file *)1;
    err.msg[0] = 0;
    CHECK_INT(rt_st_open(path, &f, &err), -1);
    CHECK(f == NULL);
    if (!strstr(err.msg, phrase) || strncmp(err.msg, path, strlen(path)) != 0)
        fprintf(stderr, "  message: \"%s\"\n  want:    \"%s\"\n", err.msg, phrase);
    CHECK(strstr(err.msg, phrase) != NULL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    err.msg[0] = 0;
    CHECK_INT(rt_st_parse_header(buf, len, datalen, &f, &err), -1);
    CHECK(strstr(err.msg, phrase) != NULL);
    rt_st_close(f);
    unlink(path);
}

/* ---- reading what rt_st_write wrote ---- */

enum { NT = 8 };
static const char *const names[NT] = {"scalar", "vec", "mat", "cube", "w", "cube32", "empty",
                                      "layers.0.\"q\"\\\xc3\xa9\n"};
static rt_type types[NT];
static void *src[NT];

static void make_sources(void)
{
    rt_type t[NT] = {
        {RT_F32, 0, {0}},        {RT_F16, 1, {5}},        {RT_BF16, 2, {4, 6}},
        {RT_I32, 3, {3, 4, 5}},  {RT_F32, 2, {4, 6}},     {RT_F32, 3, {3, 4, 5}},
        {RT_F32, 2, {0, 3}},     {RT_I32, 1, {2}},
    };
    memcpy(types, t, sizeof t);
    for (int i = 0; i < NT; i++) {
        int64_t n = rt_type_numel(&types[i]);
        src[i] = malloc((size_t)(n ? rt_type_bytes(&types[i]) : 1));
        for (int64_t k = 0; k < n; k++) {
            switch (types[i].dtype) {
            case RT_F32: ((float *)src[i])[k] = (float)k * 1.5f - 7.0f + (float)i; break;
            case RT_I32: ((int32_t *)src[i])[k] = (int32_t)(k * 37 - 1000 + i); break;
            default: ((uint16_t *)src[i])[k] = (uint16_t)(k * 4099 + 17 * i); break;
            }
        }
    }
}

/* The block [start, start + count) of tensor i, gathered element by element
 * from the source (the reference for block reads). */
static void ref_block(int i, const int64_t *start, const int64_t *count, char *out)
{
    const rt_type *t = &types[i];
    int size = rt_dtype_size(t->dtype);
    int64_t n = 1, idx[RT_MAX_RANK] = {0};
    for (int d = 0; d < t->rank; d++)
        n *= count[d];
    for (int64_t k = 0; k < n; k++) {
        int64_t flat = 0;
        for (int d = 0; d < t->rank; d++)
            flat = flat * t->dim[d] + start[d] + idx[d];
        memcpy(out + k * size, (char *)src[i] + flat * size, (size_t)size);
        for (int d = t->rank - 1; d >= 0 && ++idx[d] == count[d]; d--)
            idx[d] = 0;
    }
}

/* Every block of tensor i (all starts and counts, count >= 1) reads back
 * as the reference. */
static void check_all_blocks(const rt_st_file *f, int i)
{
    const rt_type *t = &types[i];
    int64_t start[RT_MAX_RANK] = {0}, count[RT_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        count[d] = 1;
    char *got = malloc((size_t)rt_type_bytes(t)), *want = malloc((size_t)rt_type_bytes(t));
    int nblocks = 0, bad = 0;
    for (;;) {
        int64_t n = rt_dtype_size(t->dtype);
        for (int d = 0; d < t->rank; d++)
            n *= count[d];
        memset(got, 0xAB, (size_t)n);
        ref_block(i, start, count, want);
        if (rt_st_read_block(f, names[i], t, start, count, got, &err) != 0 ||
            memcmp(got, want, (size_t)n) != 0) {
            if (bad++ == 0)
                fprintf(stderr, "  block of '%s' at [%lld, ...] size [%lld, ...] differs: %s\n",
                        names[i], (long long)start[0], (long long)count[0], err.msg);
        }
        nblocks++;
        /* next (start, count): an odometer over dims, count fastest */
        int d = t->rank - 1;
        for (; d >= 0; d--) {
            if (start[d] + ++count[d] <= t->dim[d])
                break;
            if (++start[d] < t->dim[d]) {
                count[d] = 1;
                break;
            }
            start[d] = 0;
            count[d] = 1;
        }
        if (d < 0)
            break;
    }
    CHECK_INT(bad, 0);
    CHECK(nblocks > 1);
    free(got);
    free(want);
}

static void test_roundtrip(void)
{
    make_sources();
    const char *path = at("all.safetensors");
    CHECK_INT(rt_st_write(path, NT, names, types, (const void *const *)src, &err), 0);
    rt_st_file *f = NULL;
    CHECK_INT(rt_st_open(path, &f, &err), 0);
    if (!f) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    CHECK_INT(f->nentries, NT);
    CHECK_INT(f->data_start % 8, 0);
    uint64_t total = 0;
    for (int i = 0; i < NT; i++)
        total += (uint64_t)rt_type_bytes(&types[i]);
    CHECK_INT(f->file_size, f->data_start + total);
    for (int i = 0; i < NT; i++) {
        const rt_st_entry *e = rt_st_find(f, names[i]);
        CHECK(e != NULL);
        if (!e)
            continue;
        CHECK_STR(e->name, names[i]);
        CHECK_INT(e->type.dtype, types[i].dtype);
        CHECK_INT(e->type.rank, types[i].rank);
        for (int d = 0; d < types[i].rank; d++)
            CHECK_INT(e->type.dim[d], types[i].dim[d]);
        CHECK_INT(e->end - e->begin, rt_type_bytes(&types[i]));
        /* the whole tensor */
        int64_t start[RT_MAX_RANK] = {0};
        size_t bytes = (size_t)rt_type_bytes(&types[i]);
        char *got = malloc(bytes ? bytes : 1);
        memset(got, 0xAB, bytes);
        CHECK_INT(rt_st_read_block(f, names[i], &types[i], start, types[i].dim, got, &err), 0);
        CHECK(memcmp(got, src[i], bytes) == 0);
        free(got);
    }
    /* tensors are contiguous, in the order given */
    for (int i = 1; i < NT; i++)
        CHECK_INT(rt_st_find(f, names[i])->begin, rt_st_find(f, names[i - 1])->end);
    CHECK(rt_st_find(f, "nope") == NULL);
    /* every block: middle, leading-dim and trailing-dim blocks among them */
    check_all_blocks(f, 1);
    check_all_blocks(f, 2);
    check_all_blocks(f, 3);
    check_all_blocks(f, 5);
    /* w[2:4, 3:6] of the f32 [4, 6] tensor w[k] = 1.5 k - 3: elements 15, 16, 17, 21, 22, 23 */
    float blk[6];
    int64_t start[2] = {2, 3}, count[2] = {2, 3};
    CHECK_INT(rt_st_read_block(f, "w", &types[4], start, count, blk, &err), 0);
    const float want[6] = {19.5f, 21.0f, 22.5f, 28.5f, 30.0f, 31.5f};
    CHECK(memcmp(blk, want, sizeof want) == 0);
    /* an empty block reads nothing */
    int64_t zero[2] = {4, 0};
    CHECK_INT(rt_st_read_block(f, "w", &types[4], zero, (int64_t[]){0, 6}, blk, &err), 0);
    rt_st_close(f);
    for (int i = 0; i < NT; i++)
        free(src[i]);
}

/* A file as Python's safetensors writes it, bytes by hand: u64 N, the JSON
 * padded with spaces to a multiple of 8, the data. */
static void test_python_file(void)
{
    static const char json[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  ";
    uint8_t buf[8 + 56 + 8] = {56, 0, 0, 0, 0, 0, 0, 0};
    CHECK_INT(strlen(json), 56);
    memcpy(buf + 8, json, 56);
    static const uint8_t data[8] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0}; /* 1, -2.5 */
    memcpy(buf + 64, data, 8);
    const char *path = at("py.safetensors");
    write_bytes(path, buf, sizeof buf);
    rt_st_file *f = NULL;
    CHECK_INT(rt_st_open(path, &f, &err), 0);
    if (f) {
        CHECK_INT(f->nentries, 1);
        CHECK_INT(f->data_start, 64);
        rt_type t = {RT_F32, 1, {2}};
        float v[2] = {0, 0};
        int64_t start = 0, count = 2;
        CHECK_INT(rt_st_read_block(f, "a", &t, &start, &count, v, &err), 0);
        CHECK(v[0] == 1.0f && v[1] == -2.5f);
        rt_st_close(f);
    }
    /* rt_st_write makes the same bytes */
    const float vals[2] = {1.0f, -2.5f};
    const char *name = "a";
    const void *ptr = vals;
    rt_type t = {RT_F32, 1, {2}};
    const char *path2 = at("ours.safetensors");
    CHECK_INT(rt_st_write(path2, 1, &name, &t, &ptr, &err), 0);
    uint8_t got[sizeof buf + 1];
    FILE *fp = fopen(path2, "rb");
    CHECK(fp != NULL);
    if (fp) {
        CHECK_INT(fread(got, 1, sizeof got, fp), sizeof buf);
        CHECK(memcmp(got, buf, sizeof buf) == 0);
        fclose(fp);
    }
    /* torch's save_file: __metadata__ first; a header already a multiple of 8 */
    static const char json2[] = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"BF16\","
                                "\"shape\":[2,2],\"data_offsets\":[0,8]}}";
    uint8_t buf2[8 + 88 + 8] = {88, 0, 0, 0, 0, 0, 0, 0};
    CHECK_INT(strlen(json2), 88);
    memcpy(buf2 + 8, json2, 88);
    static const uint8_t bf[8] = {0x80, 0x3F, 0x00, 0x40, 0x40, 0xC0, 0x00, 0x00}; /* 1, 2, -3, 0 */
    memcpy(buf2 + 96, bf, 8);
    CHECK_INT(rt_st_parse_header(buf2, sizeof buf2, 8, &f, &err), 0);
    if (f) {
        CHECK_INT(f->nentries, 1);
        CHECK_STR(f->entries[0].name, "b");
        CHECK_INT(f->entries[0].type.dtype, RT_BF16);
        CHECK_INT(f->entries[0].type.dim[1], 2);
        rt_st_close(f);
    }
    write_bytes(path, buf2, sizeof buf2);
    CHECK_INT(rt_st_open(path, &f, &err), 0);
    if (f) {
        uint16_t v[4];
        rt_type tb = {RT_BF16, 2, {2, 2}};
        int64_t start[2] = {0, 0}, count[2] = {2, 2};
        CHECK_INT(rt_st_read_block(f, "b", &tb, start, count, v, &err), 0);
        CHECK(v[0] == 0x3F80 && v[1] == 0x4000 && v[2] == 0xC040 && v[3] == 0);
        rt_st_close(f);
    }
}

/* Headers that are valid: padding, empty tensors, scalars, no tensors. */
static void test_accepted(void)
{
    static uint8_t buf[256];
    rt_st_file *f = NULL;
    const char *json = "{\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[4,8]},"
                       "\"z\":{\"dtype\":\"F16\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
                       "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}   \n";
    size_t len = make_bytes(buf, json, 8);
    CHECK_INT(rt_st_parse_header(buf, len, 8, &f, &err), 0);
    if (f) {
        CHECK_INT(f->nentries, 3);
        const rt_st_entry *z = rt_st_find(f, "z");
        CHECK(z && z->type.rank == 2 && z->type.dim[1] == 0 && z->begin == 4);
        const rt_st_entry *s = rt_st_find(f, "s");
        CHECK(s && s->type.rank == 0 && s->begin == 4 && s->end == 8);
        rt_st_close(f);
    }
    len = make_bytes(buf, "{}", 0);
    CHECK_INT(rt_st_parse_header(buf, len, 0, &f, &err), 0);
    if (f) {
        CHECK_INT(f->nentries, 0);
        CHECK(rt_st_find(f, "a") == NULL);
        rt_st_close(f);
    }
    /* the data area may hold bytes no tensor claims */
    len = make_bytes(buf, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 16);
    CHECK_INT(rt_st_parse_header(buf, len, 16, &f, &err), 0);
    rt_st_close(f);
}

#define ENTRY(x) "{\"x\":" x "}"
static void test_rejected(void)
{
    /* the file and its header length */
    const char *path = at("short.safetensors");
    write_bytes(path, "\x05\0\0\0\0", 5);
    rt_st_file *f = NULL;
    CHECK_INT(rt_st_open(path, &f, &err), -1);
    CHECK(strstr(err.msg, "short.safetensors: the file is shorter than 8 bytes") != NULL);
    CHECK_INT(rt_st_parse_header((const uint8_t *)"\x05\0\0\0\0", 5, 0, &f, &err), -1);
    CHECK(strstr(err.msg, "shorter than 8 bytes") != NULL);

    uint8_t big[4096] = {0x15, 0xCD, 0x5B, 0x07}; /* 123456789 */
    path = at("len.safetensors");
    write_bytes(path, big, sizeof big);
    CHECK_INT(rt_st_open(path, &f, &err), -1);
    CHECK(strstr(err.msg, "len.safetensors: header length 123456789 exceeds the file (4096 bytes)") != NULL);
    CHECK_INT(rt_st_parse_header(big, sizeof big, 0, &f, &err), -1);
    CHECK(strstr(err.msg, "header length 123456789 exceeds the file (4096 bytes)") != NULL);
    /* past the 100 MB limit, in a sparse file that is large enough */
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    uint8_t len100[8] = {0x01, 0xE1, 0xF5, 0x05}; /* 100000001 */
    CHECK(write(fd, len100, 8) == 8);
    CHECK(ftruncate(fd, 8 + 100000001 + 16) == 0);
    close(fd);
    CHECK_INT(rt_st_open(path, &f, &err), -1);
    CHECK(strstr(err.msg, "header length 100000001 exceeds the limit of 100000000 bytes") != NULL);
    unlink(path);

    /* the JSON */
    expect_reject("{\"a\":", 0, "the header is not valid JSON");
    expect_reject("", 0, "the header is not valid JSON");
    expect_reject("[1, 2]", 0, "the header is not a JSON object");
    expect_reject("{} x", 0, "the header has text after its JSON object");
    expect_reject("{\"\xff\":1}", 0, "the header is not valid UTF-8");
    expect_reject("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"); /* a surrogate */
    /* entries */
    expect_reject(ENTRY("3"), 0, "tensor 'x': the entry is not an object");
    expect_reject(ENTRY("{\"shape\":[1],\"data_offsets\":[0,4]}"), 4, "tensor 'x': no \"dtype\"");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}"), 4, "tensor 'x': no \"shape\"");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1]}"), 4, "tensor 'x': no \"data_offsets\"");
    expect_reject(ENTRY("{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}"), 4,
                  "tensor 'x': \"dtype\" is not a string");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}"), 4,
                  "tensor 'x': \"shape\" is not an array");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}"), 4,
                  "tensor 'x': \"data_offsets\" is not an array");
    expect_reject(ENTRY("{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}"), 8,
                  "tensor 'x': dtype F64 is not supported (F32, F16, BF16, I32, BOOL)");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}"),
                  4, "tensor 'x': rank 9 is more than 8");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,4]}"), 4,
                  "tensor 'x': dim 1 of its shape (-3) is not a non-negative integer");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,4]}"), 4,
                  "dim 0 of its shape (2.5) is not a non-negative integer");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}"), 4,
                  "dim 0 of its shape (1.0000000000000001e+300) is not");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[9007199254740994],\"data_offsets\":[0,4]}"),
                  4, "dim 0 of its shape (9007199254740994) is not");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[\"4\"],\"data_offsets\":[0,4]}"), 4,
                  "dim 0 of its shape (a string) is not");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}"),
                  4, "tensor 'x': shape [4294967296, 4294967296] of F32 holds more than 2^63 bytes");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}"), 4,
                  "tensor 'x': data_offsets is not two non-negative integers");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}"), 8,
                  "data_offsets is not two non-negative integers");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}"), 4,
                  "data_offsets is not two non-negative integers");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.5]}"), 8,
                  "data_offsets is not two non-negative integers");
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}"), 8,
                  "tensor 'x': data_offsets [8, 4] end before they begin");
    expect_reject("{\"w1\":{\"dtype\":\"F32\",\"shape\":[5,6],\"data_offsets\":[0,100]}}", 200,
                  "tensor 'w1': data_offsets [0, 100] hold 100 bytes, its shape [5, 6] of F32 needs 120");
    /* a truncated file: the data area is shorter than the offsets claim */
    expect_reject(ENTRY("{\"dtype\":\"F32\",\"shape\":[30],\"data_offsets\":[0,120]}"), 64,
                  "tensor 'x': data_offsets [0, 120] go past the end of the data area (64 bytes");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                  "tensors 'a' and 'b' overlap (bytes [0, 8) and [4, 12)");
    /* overlap with a range that is not the previous one */
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                  "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}", 16,
                  "tensors 'a' and 'b' overlap");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                  "duplicate tensor name 'a'");
    expect_reject("{\"__metadata__\":[]}", 0, "\"__metadata__\" is not an object");
    expect_reject("{\"__metadata__\":{\"k\":1}}", 0, "\"__metadata__\" entry 'k' is not a string");
    expect_reject("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate \"__metadata__\"");

    /* paths that are no safetensors file */
    CHECK_INT(rt_st_open(at("missing.safetensors"), &f, &err), -1);
    CHECK(strstr(err.msg, "missing.safetensors: cannot open: ") != NULL);
    CHECK_INT(rt_st_open(dir, &f, &err), -1);
    CHECK(strstr(err.msg, ": not a regular file") != NULL);
}

static void test_read_errors(void)
{
    const char *path = at("w.safetensors");
    float w[24];
    for (int i = 0; i < 24; i++)
        w[i] = (float)i;
    const char *nm[2] = {"w", "h"};
    rt_type t[2] = {{RT_F32, 2, {4, 6}}, {RT_F16, 1, {3}}};
    uint16_t h[3] = {1, 2, 3};
    const void *data[2] = {w, h};
    CHECK_INT(rt_st_write(path, 2, nm, t, data, &err), 0);
    rt_st_file *f = NULL;
    CHECK_INT(rt_st_open(path, &f, &err), 0);
    if (!f)
        return;
    float out[24];
    int64_t start[2] = {0, 0}, count[2] = {4, 6};
    CHECK_INT(rt_st_read_block(f, "layers.0.attn.wq", &t[0], start, count, out, &err), -1);
    CHECK(strstr(err.msg, "w.safetensors: no tensor 'layers.0.attn.wq' (the file has 2 tensors)") != NULL);
    rt_type want = {RT_F32, 1, {3}};
    CHECK_INT(rt_st_read_block(f, "h", &want, start, count, out, &err), -1);
    CHECK(strstr(err.msg, "w.safetensors: tensor 'h': dtype F16 in the file, f32 expected") != NULL);
    want = (rt_type){RT_F32, 2, {4, 5}};
    CHECK_INT(rt_st_read_block(f, "w", &want, start, count, out, &err), -1);
    CHECK(strstr(err.msg, "w.safetensors: tensor 'w': shape [4, 6] in the file, [4, 5] expected") != NULL);
    want = (rt_type){RT_F32, 3, {4, 6, 1}};
    CHECK_INT(rt_st_read_block(f, "w", &want, start, count, out, &err), -1);
    CHECK(strstr(err.msg, "shape [4, 6] in the file, [4, 6, 1] expected") != NULL);
    int64_t s2[2] = {3, 0}, c2[2] = {2, 6};
    CHECK_INT(rt_st_read_block(f, "w", &t[0], s2, c2, out, &err), -1);
    CHECK(strstr(err.msg, "tensor 'w': the block at [3, 0] of size [2, 6] is outside its shape [4, 6]") != NULL);
    int64_t s3[2] = {-1, 0}, c3[2] = {1, 6};
    CHECK_INT(rt_st_read_block(f, "w", &t[0], s3, c3, out, &err), -1);
    CHECK(strstr(err.msg, "is outside its shape") != NULL);
    /* the file shrinks after the header was read: the read names the file */
    CHECK(truncate(path, (off_t)(f->data_start + 40)) == 0);
    CHECK_INT(rt_st_read_block(f, "w", &t[0], start, count, out, &err), -1);
    CHECK(strstr(err.msg, "w.safetensors: tensor 'w': cannot read") != NULL);
    CHECK(strstr(err.msg, "unexpected end of file") != NULL);
    /* the first 40 bytes are still there */
    int64_t c4[2] = {1, 6};
    CHECK_INT(rt_st_read_block(f, "w", &t[0], start, c4, out, &err), 0);
    CHECK(out[5] == 5.0f);
    rt_st_close(f);
}

/* Names the folder's entries whose name holds part, for leftover checks. */
static int count_files(const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_write_errors(void)
{
    float v[2] = {1, 2};
    const void *data[2] = {v, v};
    rt_type t[2] = {{RT_F32, 1, {2}}, {RT_F32, 1, {2}}};
    const char *dup[2] = {"a", "a"}, *empty[2] = {"a", ""}, *meta[1] = {"__metadata__"};
    const char *ok[2] = {"a", "b"};

    const char *path = at("nodir/x.safetensors");
    CHECK_INT(rt_st_write(path, 2, ok, t, data, &err), -1);
    CHECK(strstr(err.msg, "nodir/x.safetensors: cannot create the temporary file") != NULL);
    CHECK(!exists(path));

    path = at("dup.safetensors");
    CHECK_INT(rt_st_write(path, 2, dup, t, data, &err), -1);
    CHECK(strstr(err.msg, "dup.safetensors: duplicate tensor name 'a'") != NULL);
    CHECK(!exists(path));
    CHECK_INT(rt_st_write(path, 2, empty, t, data, &err), -1);
    CHECK(strstr(err.msg, "tensor 1 has an empty name") != NULL);
    CHECK_INT(rt_st_write(path, 1, meta, t, data, &err), -1);
    CHECK(strstr(err.msg, "'__metadata__' is reserved") != NULL);
    CHECK(!exists(path));

    /* a folder is in the way: an error, and no temporary file */
    path = at("adir");
    CHECK(mkdir(path, 0755) == 0);
    CHECK_INT(rt_st_write(path, 2, ok, t, data, &err), -1);
    CHECK(strstr(err.msg, "adir: cannot write: Is a directory") != NULL);
    CHECK_INT(count_files("adir.tmp"), 0);
    rmdir(path);

    /* an existing file is replaced whole */
    path = at("replace.safetensors");
    write_bytes(path, "junk", 4);
    CHECK_INT(rt_st_write(path, 1, ok, t, data, &err), 0);
    rt_st_file *f = NULL;
    CHECK_INT(rt_st_open(path, &f, &err), 0);
    CHECK(f && f->nentries == 1);
    rt_st_close(f);
    CHECK_INT(count_files(".tmp."), 0);
}

/* ---- initialisation ---- */

static int64_t count_diff(const void *a, const void *b, int64_t n, int size)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += memcmp((const char *)a + i * size, (const char *)b + i * size, (size_t)size) != 0;
    return k;
}

/* The full tensor made whole equals the same made as blocks of a split of
 * each dim into parts[d] (uneven parts allowed), pasted together. */
static void check_blocks(int init, double a, double b, const rt_type *t, const int *parts)
{
    int size = rt_dtype_size(t->dtype);
    int64_t n = rt_type_numel(t), zero[RT_MAX_RANK] = {0};
    char *whole = malloc((size_t)(n * size)), *pasted = malloc((size_t)(n * size));
    char *blk = malloc((size_t)(n * size));
    memset(pasted, 0xAB, (size_t)(n * size));
    rt_init_block(init, a, b, 42, "layers.0.w", t, zero, t->dim, whole);
    int p[RT_MAX_RANK] = {0};
    int nblocks = 0;
    for (;;) {
        int64_t start[RT_MAX_RANK], count[RT_MAX_RANK];
        for (int d = 0; d < t->rank; d++) {
            start[d] = t->dim[d] * p[d] / parts[d];
            count[d] = t->dim[d] * (p[d] + 1) / parts[d] - start[d];
        }
        rt_init_block(init, a, b, 42, "layers.0.w", t, start, count, blk);
        /* paste the block: element by element */
        int64_t m = 1, idx[RT_MAX_RANK] = {0};
        for (int d = 0; d < t->rank; d++)
            m *= count[d];
        for (int64_t k = 0; k < m; k++) {
            int64_t flat = 0;
            for (int d = 0; d < t->rank; d++)
                flat = flat * t->dim[d] + start[d] + idx[d];
            memcpy(pasted + flat * size, blk + k * size, (size_t)size);
            for (int d = t->rank - 1; d >= 0 && ++idx[d] == count[d]; d--)
                idx[d] = 0;
        }
        nblocks++;
        int d = t->rank - 1;
        while (d >= 0 && ++p[d] == parts[d])
            p[d--] = 0;
        if (d < 0)
            break;
    }
    CHECK_INT(count_diff(whole, pasted, n, size), 0);
    CHECK(nblocks > 1);
    free(whole);
    free(pasted);
    free(blk);
}

static void test_init_blocks(void)
{
    const int split22[2] = {2, 2}, split3[3] = {2, 3, 2};
    for (int dt = 0; dt < RT_NDTYPES; dt++) {
        rt_type t = {(uint8_t)dt, 2, {6, 8}};
        check_blocks(RT_INIT_UNIFORM, -1, 2, &t, split22);
        check_blocks(RT_INIT_ONES, 0, 0, &t, split22);
        if (dt != RT_I32)
            check_blocks(RT_INIT_NORMAL, 0.02, 0, &t, split22);
        rt_type t3 = {(uint8_t)dt, 3, {5, 7, 3}};
        check_blocks(RT_INIT_UNIFORM, 0, 100, &t3, split3);
    }
    /* past INIT_PARALLEL elements (2^20) a block is made by several
     * threads: the whole tensor (threads) against small blocks (one each),
     * and blocks that are themselves past it, at offsets */
    const int split_many[3] = {8, 3, 2}, split_two[3] = {2, 1, 1};
    rt_type big = {RT_F32, 3, {64, 129, 257}}, big16 = {RT_BF16, 3, {64, 129, 257}};
    check_blocks(RT_INIT_NORMAL, 0.02, 0, &big, split_many);
    check_blocks(RT_INIT_UNIFORM, -0.5, 0.5, &big16, split_two);
    /* a scalar */
    rt_type s = {RT_F32, 0, {0}};
    float x = 0, y = 1;
    rt_init_block(RT_INIT_NORMAL, 1, 0, 7, "s", &s, NULL, NULL, &x);
    rt_init_block(RT_INIT_NORMAL, 1, 0, 7, "s", &s, NULL, NULL, &y);
    CHECK(x == y && x != 0);
}

static void test_init_streams(void)
{
    enum { N = 1000 };
    rt_type t = {RT_F32, 1, {N}};
    int64_t zero = 0, n = N;
    static float a[N], b[N], c[N], d[N];
    rt_init_block(RT_INIT_NORMAL, 1, 0, 1, "w1", &t, &zero, &n, a);
    rt_init_block(RT_INIT_NORMAL, 1, 0, 1, "w1", &t, &zero, &n, b);
    rt_init_block(RT_INIT_NORMAL, 1, 0, 1, "w2", &t, &zero, &n, c);
    rt_init_block(RT_INIT_NORMAL, 1, 0, 2, "w1", &t, &zero, &n, d);
    CHECK_INT(count_diff(a, b, N, 4), 0);
    CHECK_INT(count_diff(a, c, N, 4), N);
    CHECK_INT(count_diff(a, d, N, 4), N);
    /* the value depends on the full index, not the shape: a [10, 100]
     * tensor holds the same values as the [1000] one */
    rt_type t2 = {RT_F32, 2, {10, 100}};
    int64_t s2[2] = {0, 0}, c2[2] = {10, 100};
    rt_init_block(RT_INIT_NORMAL, 1, 0, 1, "w1", &t2, s2, c2, b);
    CHECK_INT(count_diff(a, b, N, 4), 0);
}

static void test_init_stats(void)
{
    enum { N = 100000 };
    static float v[N];
    static uint16_t h[N];
    static int32_t ids[N];
    rt_type t = {RT_F32, 2, {250, 400}};
    int64_t zero[2] = {0, 0};
    rt_init_block(RT_INIT_NORMAL, 0.02, 0, 1234, "w", &t, zero, t.dim, v);
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++)
        sum += v[i];
    double mean = sum / N;
    for (int i = 0; i < N; i++)
        sq += (v[i] - mean) * (v[i] - mean);
    double sd = sqrt(sq / (N - 1));
    if (fabs(mean) >= 0.001 || fabs(sd / 0.02 - 1) >= 0.02)
        fprintf(stderr, "  normal(0.02): mean %g, std %g\n", mean, sd);
    CHECK(fabs(mean) < 0.001);
    CHECK(fabs(sd / 0.02 - 1) < 0.02);

    rt_init_block(RT_INIT_UNIFORM, -1, 2, 1234, "u", &t, zero, t.dim, v);
    int out = 0;
    sum = 0;
    for (int i = 0; i < N; i++) {
        out += !(v[i] >= -1.0f && v[i] < 2.0f);
        sum += v[i];
    }
    CHECK_INT(out, 0);
    CHECK(fabs(sum / N - 0.5) < 0.02);

    /* in bf16 the rounding reaches 2 often: the values stay below it */
    for (int dt = RT_F16; dt <= RT_BF16; dt++) {
        rt_type t16 = {(uint8_t)dt, 2, {250, 400}};
        rt_init_block(RT_INIT_UNIFORM, -1, 2, 99, "u16", &t16, zero, t16.dim, h);
        out = 0;
        sum = 0;
        for (int i = 0; i < N; i++) {
            float x = dt == RT_F16 ? su_f16_to_f32(h[i]) : su_bf16_to_f32(h[i]);
            out += !(x >= -1.0f && x < 2.0f);
            sum += x;
        }
        CHECK_INT(out, 0);
        CHECK(fabs(sum / N - 0.5) < 0.02);
    }

    rt_type ti = {RT_I32, 2, {250, 400}};
    rt_init_block(RT_INIT_UNIFORM, 0, 10, 5, "ids", &ti, zero, ti.dim, ids);
    int seen[10] = {0};
    out = 0;
    for (int i = 0; i < N; i++) {
        if (ids[i] < 0 || ids[i] >= 10)
            out++;
        else
            seen[ids[i]]++;
    }
    CHECK_INT(out, 0);
    for (int k = 0; k < 10; k++)
        CHECK(seen[k] > N / 10 - 1000 && seen[k] < N / 10 + 1000);
    /* floor of the bounds: uniform(-2.5, 1.5) gives -3, -2, ..., 0 */
    rt_init_block(RT_INIT_UNIFORM, -2.5, 1.5, 5, "ids", &ti, zero, ti.dim, ids);
    int lo = 0, hi = 0;
    for (int i = 0; i < N; i++) {
        lo += ids[i] == -3;
        hi += ids[i] == 0;
        out += ids[i] < -3 || ids[i] > 0;
    }
    CHECK_INT(out, 0);
    CHECK(lo > 0 && hi > 0);
}

static void test_init_constants(void)
{
    int64_t zero = 0, n = 3;
    for (int dt = 0; dt < RT_NDTYPES; dt++) {
        rt_type t = {(uint8_t)dt, 1, {3}};
        uint32_t buf[3];
        memset(buf, 0x55, sizeof buf);
        rt_init_block(RT_INIT_ONES, 0, 0, 1, "o", &t, &zero, &n, buf);
        const uint8_t *p = (const uint8_t *)buf;
        for (int i = 0; i < 3; i++) {
            uint32_t v = 0;
            memcpy(&v, p + i * rt_dtype_size(dt), (size_t)rt_dtype_size(dt));
            /* 1 as f32, f16, bf16, i32, bool bit patterns */
            static const uint32_t one[RT_NDTYPES] = {0x3F800000u, 0x3C00u, 0x3F80u, 1u, 1u};
            CHECK_INT(v, one[dt]);
        }
        memset(buf, 0x55, sizeof buf);
        rt_init_block(RT_INIT_ZEROS, 0, 0, 1, "z", &t, &zero, &n, buf);
        CHECK(memcmp(buf, (uint32_t[3]){0}, (size_t)(3 * rt_dtype_size(dt))) == 0);
        memset(buf, 0x55, sizeof buf);
        rt_init_block(RT_INIT_NONE, 0, 0, 1, "z", &t, &zero, &n, buf);
        CHECK(memcmp(buf, (uint32_t[3]){0}, (size_t)(3 * rt_dtype_size(dt))) == 0);
    }
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            unlink(at(e->d_name));
    if (d)
        closedir(d);
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_tensors.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_roundtrip();
    test_python_file();
    test_accepted();
    test_rejected();
    test_read_errors();
    test_write_errors();
    test_init_blocks();
    test_init_streams();
    test_init_stats();
    test_init_constants();
    cleanup();
    return CHECK_DONE();
}
