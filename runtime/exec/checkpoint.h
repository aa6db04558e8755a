/* checkpoint.h: sharded checkpoints, and inputs with one batch per step
 * (DESIGN.md §5: "a checkpoint is sharded per rank with an index, and
 * loads on a different mesh").
 *
 * A checkpoint folder (the DIR of --save DIR) holds one subfolder per
 * checkpoint and a pointer to the newest:
 *   latest                  "step-00000005\n": the name of the step folder
 *                           to resume; replaced atomically (a temporary
 *                           file renamed over it), and only once that
 *                           folder is complete
 *   step-00000005/          a checkpoint, complete: a save writes into
 *                           step-00000005.partial/ and renames it when its
 *                           last file (the index) is on disk
 *   step-00000004/          older ones: the newest K are kept (the one
 *                           saved last, and the K - 1 before it by step;
 *                           default 2), the rest deleted only after the
 *                           pointer names the new one
 * so a save killed at any point leaves the last complete checkpoint, and
 * the pointer to it, untouched. A save deletes only what a save writes
 * (the folders step-N and step-N.partial holding nothing but index.json,
 * rank files and their temporary files; latest's temporary files): the
 * user's own files in DIR stay. One save at a time into a folder.
 *
 * A step folder:
 *   rank-NNNNN.safetensors  one per rank of the mesh that saved it: the
 *                           rank's local shard of every param and state it
 *                           writes (see rt_ckpt_writes), under the tensor's
 *                           own name; a rank that writes none has an empty
 *                           file
 *   index.json              written last:
 *     {"format": "shardc-checkpoint", "version": 2, "step": 3,
 *      "mesh": {"axes": ["dp", "tp"], "sizes": [2, 2]},
 *      "files": [{"name": "rank-00000.safetensors", "rank": 0,
 *                 "bytes": 1234, "crc32": "8d3f0a12"}, ...],
 *      "tensors": {"w1": {"kind": "param", "dtype": "f32",
 *                         "shape": [1024, 4096],
 *                         "shards": [{"file": "rank-00000.safetensors",
 *                                     "offset": [0, 0],
 *                                     "shape": [1024, 2048]}, ...]},
 *                  ...}}
 *     rank: whose file it is, and its tag (below); bytes, crc32: its
 *     size and its CRC-32 (IEEE, as zlib's; 8 hex digits), over the whole
 *     file. offset: where the shard's box starts in the global tensor, per
 *     dim; shape: the box's size (the local shape). The shards of a
 *     tensor tile it: each element in exactly one shard.
 * A reader checks each file before reading from it: its size and CRC-32,
 * so a truncated, damaged or swapped file is refused (a file whose size
 * and CRC-32 are those of another file of the index is named as swapped
 * with it, by rank). Version 1 (shardc before the step folders) is the
 * same index without the files' rank and CRC-32, at the top of DIR itself:
 * still read, checked for sizes only.
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
#include "support/support.h"
#include "runtime/plan/plan.h"
#include "runtime/io/tensors.h"

#define RT_CKPT_FORMAT "shardc-checkpoint"
#define RT_CKPT_VERSION 2
/* Checkpoints a folder keeps when the caller gives 0. */
#define RT_CKPT_KEEP 2

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

/* A save of step `step` into folder dir: rt_ckpt_begin (one process), then
 * every rank's file into rt_ckpt_staging's folder (rt_ckpt_write_rank),
 * then rt_ckpt_commit (one process, after every rank's file is written). */

/* dir/step-NNNNNNNN.partial, where the ranks write their files (malloc'd,
 * NULL when out of memory). */
char *rt_ckpt_staging(const char *dir, int64_t step);
/* Makes dir (and its parents) when missing, and an empty staging folder
 * for step (one left by an interrupted save is emptied first). */
int rt_ckpt_begin(const char *dir, int64_t step, su_status *err);
/* Writes rank's file (n tensors: names, local types, data) into the
 * staging folder: a temporary file, fsync'd and renamed into place; its
 * size and CRC-32 in *sum. */
int rt_ckpt_write_rank(const char *staging, int64_t rank, int n, const char *const *names,
                       const rt_type *types, const void *const *data, rt_st_sum *sum,
                       su_status *err);
/* Writes folder/index.json (a temporary file, fsync'd, renamed) for plan p
 * after `step` steps; files: each rank's file's size and CRC-32. The first
 * part of rt_ckpt_commit. */
int rt_ckpt_write_index(const char *folder, const rt_plan *p, int64_t step,
                        const rt_st_sum *files, su_status *err);
/* Completes the save: the index (plan p after `step` steps; files: each
 * rank's file's size and CRC-32) into the staging folder, fsync'd; the
 * folder renamed to dir/step-NNNNNNNN; dir/latest pointed at it; then the
 * checkpoints beyond the newest `keep` (0: RT_CKPT_KEEP) deleted, and what
 * interrupted saves left. A step folder of the same step is replaced, the
 * pointer moving to the new one before the old goes. */
int rt_ckpt_commit(const char *dir, const rt_plan *p, int64_t step, const rt_st_sum *files,
                   int keep, su_status *err);

/* ---- finding a checkpoint ---- */

/* The step folder that dir names, malloc'd into *folder: the one dir/latest
 * names; without a pointer, dir itself when it holds an index (a step
 * folder, or a version 1 checkpoint); and when the pointer is missing or
 * names a folder that is not complete, the newest complete step folder,
 * with a note saying so in note ("" otherwise). Errors: dir is not a
 * folder, or holds no complete checkpoint. */
int rt_ckpt_locate(const char *dir, char **folder, char *note, size_t notelen, su_status *err);

/* Step folders' names: "step-00000005", or "step-00000005.partial" for
 * the folder a checkpoint is written in before it is committed. */
void rt_ckpt_step_name(int64_t step, bool partial, char *buf, size_t size);
/* Whether name is a step folder's ("step-", digits, and ".partial" or
 * nothing): its step in *step, and which in *partial. */
bool rt_ckpt_parse_step_name(const char *name, int64_t *step, bool *partial);
/* Whether the last part of path is a step folder's name (step-N or
 * step-N.partial): N in *step. */
bool rt_ckpt_folder_step(const char *path, int64_t *step);

/* ---- loading ---- */

typedef struct rt_ckpt rt_ckpt;

/* Reads the index of step folder dir (rt_ckpt_locate's) and checks it
 * against plan p: the format and version; the step the folder's name
 * gives, if it is a step folder's; the files, one per rank (version 2);
 * every param and state of p present, with the same kind, dtype
 * and global shape; no tensor p lacks (a checkpoint of another model);
 * each shard's box inside its tensor, in a file the index lists. */
int rt_ckpt_open(const char *dir, const rt_plan *p, rt_ckpt **out, su_status *err);
void rt_ckpt_free(rt_ckpt *c);
/* The step count the checkpoint was saved at. */
int64_t rt_ckpt_step(const rt_ckpt *c);
/* Before reading the box [start, start + count) of plan entry io (a param
 * or a state): checks that the shards overlapping it cover it exactly once,
 * and opens their files (each once), checking each file against the index
 * (its size, and its CRC-32 over all its bytes) and that it holds the
 * shard with its dtype and shape. Not thread-safe: call it before the
 * ranks start. */
int rt_ckpt_prepare(rt_ckpt *c, int io, const int64_t *start, const int64_t *count, su_status *err);
/* Reads that box (prepared before) into dst, row-major in the tensor's
 * dtype: from each overlapping shard, only the overlap. Thread-safe. */
int rt_ckpt_read(const rt_ckpt *c, int io, const int64_t *start, const int64_t *count,
                 void *dst, su_status *err);

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
                  const int64_t *count, void *dst, su_status *err);

#endif
