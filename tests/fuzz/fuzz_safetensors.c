/* fuzz_safetensors.c: libFuzzer target on the safetensors header reader
 * (rt_st_parse_header). The input is a file's start: the 8-byte length N,
 * N bytes of JSON, and whatever follows counts as the data area (when the
 * input is shorter than 8 + N, there is no data area). Any input may be
 * rejected, but only with a message; a header that is accepted must keep
 * every tensor's bytes inside the data area, each holding numel * size
 * bytes, with no two tensors overlapping and no two names alike. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/io/tensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const rt_st_file *f, int i, int j, const char *what)
{
    fprintf(stderr, "fuzz: %s: tensor '%s'%s%s\n", what, f->entries[i].name, j >= 0 ? " and " : "",
            j >= 0 ? f->entries[j].name : "");
    abort();
}

/* The properties of an accepted header. O(n^2), and inputs are small. */
static void check_file(const rt_st_file *f, uint64_t data_size)
{
    for (int i = 0; i < f->nentries; i++) {
        const rt_st_entry *e = &f->entries[i];
        if (e->begin > e->end || e->end > data_size)
            fuzz_fail(f, i, -1, "bytes outside the data area");
        if (e->type.rank > RT_MAX_RANK || e->type.dtype >= RT_NDTYPES)
            fuzz_fail(f, i, -1, "an invalid type");
        /* numel * size, knowing it fits the data area (< 2^63) */
        uint64_t bytes = (uint64_t)rt_dtype_size(e->type.dtype);
        for (int d = 0; d < e->type.rank; d++) {
            if (e->type.dim[d] < 0)
                fuzz_fail(f, i, -1, "a negative dim");
            if (e->type.dim[d] == 0)
                bytes = 0;
            else if (bytes > data_size / (uint64_t)e->type.dim[d])
                bytes = data_size + 1; /* too large either way */
            else
                bytes *= (uint64_t)e->type.dim[d];
        }
        if (e->end - e->begin != bytes)
            fuzz_fail(f, i, -1, "a byte range that does not match the shape");
        if (rt_st_find(f, e->name) != e)
            fuzz_fail(f, i, -1, "rt_st_find does not find the entry");
        for (int j = 0; j < i; j++) {
            const rt_st_entry *o = &f->entries[j];
            if (strcmp(e->name, o->name) == 0)
                fuzz_fail(f, i, j, "a duplicate name");
            if (e->begin < e->end && o->begin < o->end && e->begin < o->end && o->begin < e->end)
                fuzz_fail(f, i, j, "overlapping byte ranges");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0 && size >= 8; i--)
        n = n << 8 | data[i];
    uint64_t data_size = size >= 8 && size - 8 >= n ? size - 8 - n : 0;
    su_status err = {SU_OK, ""};
    rt_st_file *f = NULL;
    if (rt_st_parse_header(data, size, data_size, &f, &err) != 0) {
        if (f || !err.msg[0])
            abort(); /* a rejection returns no file and says why */
        return 0;
    }
    if (!f || f->data_start != 8 + n || f->file_size != 8 + n + data_size)
        abort();
    check_file(f, data_size);
    rt_st_close(f);
    return 0;
}
