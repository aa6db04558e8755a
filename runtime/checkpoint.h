/* checkpoint.h: sharded checkpoints, and inputs with one batch per step
 * (DESIGN.md §5: "a checkpoint is sharded per rank with an index, and
 * loads on a different mesh").
 *
 * A checkpoint is a folder:
 *   rank-NNNNN.safetensors  one per rank of the mesh that saved it: the
 *                           rank's local shard of every param and state it
 *                           writes (see rt_ckpt_writes), under the tensor's
 *                           own name; a rank that writes none has an empty
 *                           file
 *   index.json              written last, so a folder without it is not a
 *                           checkpoint (an interrupted save removes the old
 *                           one first):
 *     {"format": "shardc-checkpoint", "version": 1, "step": 3,
 *      "mesh": {"axes": ["dp", "tp"], "sizes": [2, 2]},
 *      "files": [{"name": "rank-00000.safetensors", "bytes": 1234}, ...],
 *      "tensors": {"w1": {"kind": "param", "dtype": "f32",
 *                         "shape": [1024, 4096],
 *                         "shards": [{"file": "rank-00000.safetensors",
 *                                     "offset": [0, 0],
 *                                     "shape": [1024, 2048]}, ...]},
 *                  ...}}
 *     offset: where the shard's box starts in the global tensor, per dim;
 *     shape: the box's size (the local shape). The shards of a tensor
 *     tile it: each element in exactly one shard.
 * A reader needs only the index and the shard files: its mesh may differ
 * from the one that saved (each rank reads the parts of the shards that
 * overlap its own box), and so may its pipeline stages: a tensor is listed
 * once, by name, whichever stage saved it and however many stages keep
 * it, and every stage that holds it reads it by its boxes.
 *
 * Every function returns 0, or -1 with a message in err that names the
 * file and, where there is one, the tensor.
 */
#ifndef SHARDC_RT_CHECKPOINT_H
#define SHARDC_RT_CHECKPOINT_H
#include "plan.h"
#include "tensors.h"

#define RT_CKPT_FORMAT "shardc-checkpoint"
#define RT_CKPT_VERSION 1

/* ---- layout ---- */

/* The box of I/O entry io that the rank at coord holds: start (global
 * offsets) and count (the local shape), each dim divided by the sizes of
 * the axes splitting it, the rank's block row-major over those axes. */
void rt_io_box(const rt_plan *p, const rt_io *io, const int64_t *coord, int64_t *start,
               int64_t *count);
/* Whether the rank at coord writes its box of io (a param or a state) to
 * a checkpoint: it holds io (its pipeline stage) and its coordinate is 0
 * on every other axis that does not split io, so each distinct box is
 * written once, not once per replica. A tensor with entries on several
 * stages (the step count) is written from its first entry only
 * (rt_plan_io_first): the callers skip the others. */
bool rt_ckpt_writes(const rt_plan *p, const rt_io *io, const int64_t *coord);

/* ---- saving ---- */

/* Makes dir (and its parents) when missing, and removes dir/index.json,
 * so that until rt_ckpt_write_index succeeds the folder is not a
 * checkpoint. */
int rt_ckpt_begin(const char *dir, char *err, size_t errlen);
/* Writes rank's file (n tensors: names, local types, data) through a
 * temporary file renamed into place; its size in *bytes. */
int rt_ckpt_write_rank(const char *dir, int64_t rank, int n, const char *const *names,
                       const rt_type *types, const void *const *data, int64_t *bytes,
                       char *err, size_t errlen);
/* Writes dir/index.json (temporary file, fsync, rename, fsync of dir) for
 * plan p after `step` steps; file_bytes: the size of each rank's file. */
int rt_ckpt_write_index(const char *dir, const rt_plan *p, int64_t step,
                        const int64_t *file_bytes, char *err, size_t errlen);

/* ---- loading ---- */

typedef struct rt_ckpt rt_ckpt;

/* Reads dir/index.json and checks it against plan p: the format and
 * version; every param and state of p present, with the same kind, dtype
 * and global shape; no tensor p lacks (a checkpoint of another model);
 * each shard's box inside its tensor, in a file the index lists. */
int rt_ckpt_open(const char *dir, const rt_plan *p, rt_ckpt **out, char *err, size_t errlen);
void rt_ckpt_free(rt_ckpt *c);
/* The step count the checkpoint was saved at. */
int64_t rt_ckpt_step(const rt_ckpt *c);
/* Before reading the box [start, start + count) of plan entry io (a param
 * or a state): checks that the shards overlapping it cover it exactly once,
 * and opens their files (each once), checking each file's size against the
 * index (a truncated file) and that it holds the shard with its dtype and
 * shape. Not thread-safe: call it before the ranks start. */
int rt_ckpt_prepare(rt_ckpt *c, int io, const int64_t *start, const int64_t *count, char *err,
                    size_t errlen);
/* Reads that box (prepared before) into dst, row-major in the tensor's
 * dtype: from each overlapping shard, only the overlap. Thread-safe. */
int rt_ckpt_read(const rt_ckpt *c, int io, const int64_t *start, const int64_t *count,
                 void *dst, char *err, size_t errlen);

/* ---- inputs with a step dimension ---- */

/* How many batches the inputs file f holds for input io: N when its tensor
 * of that name has the shape [N, dims of io] (one batch per step), -1 when
 * it has any other shape or is missing (then it is read whole at every
 * step, or is an error rt_st_read_block names). */
int64_t rt_input_batches(const rt_st_file *f, const rt_io *io);
/* Reads the block [start, start + count) of input io for step `step`
 * (0-based): of batch `step` when the file has a step dimension, else of
 * the one tensor. */
int rt_input_read(const rt_st_file *f, const rt_io *io, int64_t step, const int64_t *start,
                  const int64_t *count, void *dst, char *err, size_t errlen);

#endif
