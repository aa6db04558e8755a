/* tensors.h: safetensors files, and parameter initialisation (DESIGN.md §5).
 *
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 * ..., optionally "__metadata__": {string: string}}), then the data, row-major
 * and little-endian, offsets relative to the end of the header. Dtypes here:
 * F32, F16, BF16, I32, BOOL (one byte, 0 or 1; the others are rejected by
 * name).
 *
 * Every function returns 0, or -1 with a message in err that names the file
 * and, where there is one, the tensor: "w.safetensors: tensor 'w1': shape
 * [1024, 4096] in the file, [1024, 2048] expected".
 */
#ifndef SHARDC_RT_TENSORS_H
#define SHARDC_RT_TENSORS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/plan/plan.h"
#include "support/support.h"

typedef struct rt_st_entry {
    char *name;
    rt_type type;                /* dtype and shape (rank <= RT_MAX_RANK; a
                                  * dim may be 0 here: an empty tensor) */
    uint64_t begin, end;         /* byte range in the data area */
} rt_st_entry;

/* An open file: its parsed header. Reads go to the file (pread), so a rank
 * reads only the bytes of its own shard. */
typedef struct rt_st_file {
    char *path;
    int fd;
    uint64_t data_start;         /* 8 + N */
    uint64_t file_size;
    int nentries;
    rt_st_entry *entries;        /* sorted by name (rt_st_find bisects) */
} rt_st_file;

/* Opens and validates the header: length within the file, JSON that parses
 * (cJSON_ParseWithLength), each entry's dtype known, shape within
 * RT_MAX_RANK dims each >= 0, offsets within the data area with
 * end - begin == numel * size, no overlapping entries, no duplicate names. */
int rt_st_open(const char *path, rt_st_file **out, su_status *err);
/* The same checks on a header held in memory (len bytes: the 8-byte length
 * and the JSON; data_size: the size of the data area). For the fuzzer. */
int rt_st_parse_header(const uint8_t *data, size_t len, uint64_t data_size, rt_st_file **out,
                       su_status *err);
void rt_st_close(rt_st_file *f);
const rt_st_entry *rt_st_find(const rt_st_file *f, const char *name);

/* Reads the block of tensor `name` that starts at start[d] and spans
 * count[d] along each dim d (a shard), row-major, into dst in the file's
 * dtype. Checks first that the tensor exists with dtype `want.dtype` and
 * shape `want` (global): a missing tensor, another dtype or shape is an
 * error naming the tensor. Issues one pread per contiguous run. */
int rt_st_read_block(const rt_st_file *f, const char *name, const rt_type *want,
                     const int64_t *start, const int64_t *count, void *dst, su_status *err);

/* Writes n tensors (names, full types, row-major data) as a safetensors file,
 * through su_wfile (support.h): a regular file replaced whole or not at all,
 * a symlink's target written, a device or FIFO written straight into. */
int rt_st_write(const char *path, int n, const char *const *names, const rt_type *types,
                const void *const *data, su_status *err);
/* What rt_st_write_sum wrote: its size and its CRC-32 (su_crc32). */
typedef struct rt_st_sum {
    int64_t bytes;
    uint32_t crc32;
    uint32_t pad;                /* zero, so the struct can travel as bytes */
} rt_st_sum;
/* rt_st_write, summing the bytes as they are written (a checkpoint's rank
 * file: its index holds the sum). */
int rt_st_write_sum(const char *path, int n, const char *const *names, const rt_type *types,
                    const void *const *data, rt_st_sum *sum, su_status *err);

/* Fills the block [start, start + count) of a tensor of global type `full`
 * made by init (zeros, ones, normal(a), uniform(a, b)) from seed and the
 * tensor's name: element i of the full tensor (row-major index) depends only
 * on (seed, name, i), so every mesh gives the same full tensor. dst is in
 * full->dtype: f32, f16, bf16, or i32 (zeros, ones, or uniform integers in
 * [floor(a), floor(b)), used for ids made from the seed). */
void rt_init_block(int init, double a, double b, uint64_t seed, const char *name,
                   const rt_type *full, const int64_t *start, const int64_t *count, void *dst);

/* rt_init_block's generator for the block [start, start + count) as
 * init_gen.h's parameters (what the CUDA backend's init kernel takes),
 * stored as dtype `out`: the tensor's own, or for a float tensor another
 * float dtype (the f32 master copy of a bf16 param: its values rounded to
 * the tensor's dtype, then converted as rt_convert_floats does). false,
 * *g zeroed, for a rank, dtype, init or out it cannot make, or an empty
 * block. */
struct sh_init_args;
bool rt_init_args(int init, double a, double b, uint64_t seed, const char *name,
                  const rt_type *full, const int64_t *start, const int64_t *count, int out,
                  struct sh_init_args *g);
/* Makes the block g describes into dst (its dtype out), on the host. */
void rt_init_fill(const struct sh_init_args *g, void *dst);

/* Converts n elements of float dtype from (f32, f16, bf16) at src into
 * dtype to at dst, through f32, rounding to nearest even: a bf16 param
 * widened exactly into its f32 master copy (RT_INIT_PARAM). */
void rt_convert_floats(int from, const void *src, int to, void *dst, int64_t n);

#endif
