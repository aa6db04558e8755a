/* plan.h: the plan (DESIGN.md §4) in memory, and its file form.
 *
 * The plan is the one contract between the compiler and the runtime: the
 * writer (codegen/) fills an rt_plan from the partitioned IR, rt_plan_write
 * turns it into bytes, rt_plan_read turns bytes back into an rt_plan and
 * validates it, and the runtime executes it without ever seeing the IR.
 *
 * A plan is SPMD: one program per pipeline stage, shared by every rank of
 * that stage; the rank's mesh coordinates are its parameters (slices,
 * collective groups, send and recv peers). With a pipeline axis
 * (stage_axis), stage S is run by the ranks whose coordinate on that axis
 * is S, and stages exchange values with send and recv (plan_ops.def).
 * Shapes inside programs are local shards; shapes in the I/O table are
 * global.
 *
 * A program is a list of buffers and a list of instructions in execution
 * order. Every instruction names its operand and result buffers and carries
 * their types, so kernels never look at buffers' declared sizes except to
 * check that the types fit.
 *
 * File form (all integers little-endian):
 *   header   8 bytes magic "SHRDPLAN", u32 version, u32 section count,
 *            u64 total file size, u32 CRC32 of the preceding 24 bytes
 *   section  u32 tag (4 ASCII chars), u32 reserved (0), u64 payload length,
 *            u32 CRC32 (IEEE, as zlib) of the payload, then the payload
 * Sections, in this order: "MESH", "IOTB", one "PROG" per stage, "KERN"
 * (the kernels, and the modules of cubins and PTX they run; none in a
 * CPU-only plan), "REPT"
 * (the report as JSON text).
 * The reader never reads past a section and rejects a truncated file, a bad
 * CRC, a wrong magic or a newer version with a message that says which.
 */
#ifndef SHARDC_RT_PLAN_H
#define SHARDC_RT_PLAN_H
#include "support/support.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_PLAN_MAGIC "SHRDPLAN"
#define RT_PLAN_VERSION 23
#define RT_MAX_RANK 8
#define RT_MAX_AXES 8
#define RT_MAX_IN 6

/* dropout's 24 random bits of the element at global index g (mod 2^32) of
 * the dropout tagged tag under the i32 key (the seed and the step): two
 * rounds of splitmix64's output function, the CPU backend's and the CUDA
 * kernels' alike (codegen/cuda_ops.c writes the same in CUDA C). */
static inline uint32_t rt_dropout_bits(int32_t key, int64_t tag, uint32_t g)
{
    uint64_t z = ((uint64_t)(uint32_t)key << 32 | (uint32_t)tag) + 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 2; round++) {
        z ^= z >> 30;
        z *= 0xbf58476d1ce4e5b9ull;
        z ^= z >> 27;
        z *= 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (round == 0)
            z += (uint64_t)g * 0x9e3779b97f4a7c15ull;
    }
    return (uint32_t)(z >> 40);
}

/* The 24-bit threshold of dropout's probability p: an element is dropped
 * where its bits are below it. */
static inline uint32_t rt_dropout_threshold(double p)
{
    return (uint32_t)(p * 16777216.0 + 0.5);
}

/* Same numbering and sizes as the IR's dtypes. */
/* bool (format 9): one byte, 0 or 1 */
typedef enum { RT_F32, RT_F16, RT_BF16, RT_I32, RT_BOOL, RT_NDTYPES } rt_dtype;
const char *rt_dtype_name(int dtype);      /* "f32"; "?" when out of range */
int rt_dtype_size(int dtype);              /* bytes; 0 when out of range */

typedef struct rt_type {
    uint8_t dtype;                 /* rt_dtype */
    uint8_t rank;                  /* 0..RT_MAX_RANK; 0 is a scalar */
    int64_t dim[RT_MAX_RANK];      /* each >= 1 */
} rt_type;
int64_t rt_type_numel(const rt_type *t);
/* Same dtype, rank and dims. */
bool rt_type_eq(const rt_type *a, const rt_type *b);
int64_t rt_type_bytes(const rt_type *t);
/* "f32[64, 1024]" into buf. */
const char *rt_type_str(const rt_type *t, char *buf, size_t size);

typedef enum {
#define X(e, name, min_in, max_in, cls) RT_OP_##e,
#include "runtime/plan/plan_ops.def"
#undef X
    RT_NOPS
} rt_opcode;
typedef enum { RT_K_SOURCE, RT_K_COMPUTE, RT_K_COMM } rt_opclass;
typedef struct rt_opinfo {
    const char *name;
    int min_in, max_in;            /* operands; past min_in they are optional */
    rt_opclass cls;
} rt_opinfo;
extern const rt_opinfo rt_ops[RT_NOPS];
int rt_op_lookup(const char *name); /* the opcode called name, or -1 */
/* Elementwise ops whose result may take an operand's memory (same type). */
bool rt_op_in_place(int op);
struct rt_instr;
/* Whether operand i of instruction `in`, at arena offset in_off, and its
 * result, at out_off, are a view of one another: an extract's result that
 * is its columns of a one-row bucket [1, M], or an insert's value (i = 1)
 * that already lies in its columns of the one-row bucket it makes. Then
 * there is nothing to copy. */
bool rt_bucket_view(const struct rt_instr *in, int i, int64_t in_off, int64_t out_off);

/* Which operands a matmul reads with their last two dims swapped (its
 * `dim` field, format 11; 0 before): a [.., K, M] read as [.., M, K].
 * RT_MM_PARTS (format 16): its operands are split3's bf16 parts of f32
 * values (plan_ops.def), its result f32. */
enum { RT_TRANS_A = 1, RT_TRANS_B = 2, RT_MM_PARTS = 4 };

/* A matmul's M, N and K and whether it reads a and b transposed (the
 * `dim` bits): a [.., M, K] or [.., K, M], b [.., K, N] or [.., N, K],
 * rank-1 operands as NumPy promotes them. */
typedef struct rt_mm_dims {
    int64_t m, n, k;
    bool ta, tb;
} rt_mm_dims;
rt_mm_dims rt_matmul_dims(const struct rt_instr *in);

/* Attention's operands whose dims -3 and -2 its `keepdims` field may swap
 * (heads_inner, format 11: [.., S, H, d] stored for the [.., H, S, d] it
 * computes on; the result too, but attn_stats'): attention's q, k, v;
 * attn_stats', attn_dq's, attn_dk's q, k, v, dy; attn_dv's q, k, dy; 0
 * for other ops. Since format 22 `keepdims` is a mask: bit i for
 * operand i, RT_HEADS_RESULT for the result, each on its own;
 * rt_heads_all(op) every one op has. */
int rt_attn_layout_operands(int op);
/* Whether such an op's result may be stored with the heads inner too (not
 * attn_stats', attn_lse's or attn_delta's, which keep their forms). */
bool rt_attn_result_swapped(int op);
enum { RT_HEADS_RESULT = 1 << 4 };
unsigned rt_heads_all(int op);
/* t (rank >= 3) with dims rank-3 and rank-2 swapped. */
rt_type rt_type_swap_heads(const rt_type *t);
/* Grouped-query attention (format 21): the query heads that read each key
 * and value head of attention, attn_lse, attn_stats, attn_dq, attn_dk or
 * attn_dv, H / G for q with H heads and k with G (dim -3, or -2 with the
 * heads inner); 1 where k has q's heads, and for other ops. attn_dk's and
 * attn_dv's results have k's G heads, each the sum over its H / G query
 * heads. */
int64_t rt_attn_group(const struct rt_instr *in);

/* What an all_reduce computes (its `dim` field; sum, 0, in plans from
 * before the field had a meaning). */
typedef enum { RT_REDUCE_SUM, RT_REDUCE_MAX, RT_NREDUCE } rt_reduce;

typedef struct rt_instr {
    uint16_t op;                   /* rt_opcode */
    uint8_t nin;                   /* rt_ops[op].min_in .. max_in */
    int32_t in[RT_MAX_IN];         /* operand buffers */
    rt_type in_t[RT_MAX_IN];
    int32_t out;                   /* result buffer; -1 for a send (no result) */
    rt_type out_t;
    /* attributes; each op reads the ones plan_ops.def names, the rest are 0 */
    int32_t io;                    /* input, param: index into rt_plan.io */
    double value;                  /* const */
    int64_t axis;                  /* 0..rank-1 of in_t[0] */
    uint8_t keepdims, causal;      /* keepdims: reductions; attention's heads_inner */
    double eps;
    uint8_t nlist;                 /* transpose: the permutation */
    int64_t list[RT_MAX_RANK];
    int64_t dim, dim2;             /* slice and collectives; send, recv: the peer stage;
                                    * all_reduce: the operation, rt_reduce;
                                    * matmul: RT_TRANS_A | RT_TRANS_B;
                                    * check_ids, check_labels: the bound */
    uint8_t naxes;                 /* slice and collectives: mesh axes, major first */
    uint8_t axes[RT_MAX_AXES];
    double lr, momentum, beta1, beta2, wd; /* optimizer updates (plan_ops.def) */
    int64_t offset;                /* insert, extract: the first column in the bucket */
    int32_t line, col;             /* the op's place in rt_plan.source (1-based;
                                    * line 0: none), for messages */
} rt_instr;

/* A rank's buffers lie in one arena it allocates once (the compiler's
 * memory plan): buffer b is buf_bytes[b] bytes at buf_offset[b]. Buffers
 * that are never live at once may share bytes; an instruction's result
 * never overlaps an operand, except exactly, of the same type, for the ops
 * rt_op_in_place allows (each element is read before it is written), and
 * where one is the other's columns in a one-row bucket (rt_bucket_view:
 * nothing to copy). */
#define RT_ALIGN 256
/* A program in loop form (format 14; nbody > 0) holds its instructions
 * once for however many times they run: a pipeline stage's forward and
 * backward of one microbatch, run for each in its schedule's order.
 * instr[] is then the bodies, one after the other: body b is
 * instr[body_start[b] .. body_start[b + 1]) (the last ends at ninstr;
 * body_start[0] is 0 and they do not decrease), and the program runs its
 * schedule's items in order, item i running body item[2i] for microbatch
 * item[2i + 1] (0 .. nmb - 1; a body outside any loop, such as the
 * optimizer after the last microbatch, is an item of microbatch 0). For
 * microbatch j each of the body's instructions runs with
 *   - its offset plus j instr_step[k] (an extract or insert of the
 *     microbatch's columns, a dropout of its rows), and
 *   - in place of each buffer b with buf_slots[b] >= 0 (a value of one
 *     microbatch, which the memory plan places where it fits), buffer
 *     copy_buf[buf_copy_at[b] + s], b's copy for slot
 *     s = slotmap[buf_slots[b] * nmb + j]: a plain buffer of the program.
 * The slots of a map are 0 .. its largest; microbatches whose values lie
 * in one place share a slot, and so one buffer (never live at once, as
 * any buffers that share bytes). A slotted buffer itself appears only in
 * bodies. A kernel stands for instructions of one body and runs in each of
 * its items. rt_plan_read expands every such program into the plain
 * form (rt_plan_read_plain, rt_plan_expand): the runtime never sees a
 * loop. */
typedef struct rt_program {
    int64_t arena_bytes;
    int32_t nbuf;
    int64_t *buf_offset;           /* nbuf offsets, multiples of RT_ALIGN */
    int64_t *buf_bytes;            /* nbuf sizes; a buffer may serve several values */
    int32_t ninstr;
    rt_instr *instr;
    /* the loop form (above); nbody 0: the plain form, the rest unused */
    int32_t nbody;
    int32_t *body_start;           /* nbody */
    int32_t nmb;                   /* microbatches, >= 1 */
    int32_t nitem;
    int32_t *item;                 /* 2 nitem: (body, microbatch) */
    int32_t nslotmap;
    int32_t *slotmap;              /* nslotmap x nmb: each microbatch's slot */
    int32_t *buf_slots;            /* nbuf: a slot map, or -1 (NULL: every -1) */
    int64_t *buf_copy_at;          /* nbuf: a slotted buffer's copies in copy_buf */
    int64_t ncopy;
    int32_t *copy_buf;             /* the slotted buffers' copies, buffer numbers */
    int64_t *instr_step;           /* ninstr: the offset's step per microbatch (NULL: 0) */
} rt_program;

/* The instructions, over all stages, that the loop form may expand to. */
#define RT_MAX_EXPANDED_INSTR (1 << 22)

/* STATE: optimizer state and the step count; kept across steps and saved
 * with the params, made by its init, never trained. */
typedef enum { RT_IO_INPUT, RT_IO_PARAM, RT_IO_OUTPUT, RT_IO_STATE } rt_io_kind;
/* RT_INIT_PARAM (format 4): a state made from a param, converted to the
 * state's dtype (the f32 master copy of a bf16 or f16 param): the param's
 * own source (bound tensor, file, or its initializer from the seed) read
 * in the state's box. */
typedef enum {
    RT_INIT_NONE,
    RT_INIT_ZEROS,
    RT_INIT_ONES,
    RT_INIT_NORMAL,
    RT_INIT_UNIFORM,
    RT_INIT_PARAM,
} rt_init_kind;

/* Per dimension the mesh axes splitting it (major first), plus the axes over
 * which the value is partial (outputs never are). */
typedef struct rt_sharding {
    uint8_t naxes[RT_MAX_RANK];
    uint8_t axes[RT_MAX_RANK][RT_MAX_AXES];
    uint16_t partial;
} rt_sharding;

/* One tensor of the I/O table, held by the ranks of one stage. A name may
 * have one entry on each of several stages (an input the first and the
 * last stage read, the step count every stage keeps): they stand for one
 * tensor, so they agree on kind, type, sharding and init (an output has
 * one entry). No sharding names the pipeline axis. */
typedef struct rt_io {
    uint8_t kind;                  /* rt_io_kind */
    char *name;                    /* the safetensors name (LANGUAGE.md §8) */
    rt_type type;                  /* global shape */
    rt_sharding sh;
    uint8_t init;                  /* params, and inputs made from the seed when
                                    * absent: rt_init_kind */
    double init_a, init_b;         /* normal: a = std; uniform: [a, b) */
    char *init_param;              /* RT_INIT_PARAM: the param's name; else NULL */
    int32_t stage;                 /* the stage whose program holds it */
    int32_t buffer;                /* outputs: the buffer with the local shard;
                                    * params and states: the buffer their source
                                    * instruction fills (kept across runs);
                                    * inputs: -1 */
    int32_t update;                /* params and states of a training step: the
                                    * buffer holding the value that replaces the
                                    * local shard after each run (same local
                                    * type); -1: none (inference, inputs, outputs) */
} rt_io;

/* Kernels (codegen/cuda.c). A module is compiled code: a cubin per
 * architecture and PTX for the newest, defining extern "C" __global__
 * functions, its entries (several kernels' code compiled as one program,
 * format 10). A kernel is one fused group of passes/fuse.h in a stage's
 * program, run by one entry of a module; kernels whose code is the same
 * but for names (a transformer's layers) share one entry. A kernel
 * stands for the instructions instr[] (ascending; the last, its anchor, is
 * where it runs): a GPU backend launches it at the anchor with its
 * geometry and skips the others, since running the group there computes
 * what the instructions compute in order (the compiler keeps every buffer
 * the kernel reads or writes live until the anchor). The CPU backend runs
 * the instructions and ignores the kernels. The parameters are device
 * pointers into the rank's arena: the nin buffers it reads, then the nout
 * it writes, each with the type of the value the instructions read or
 * make there.
 *
 * A matmul kernel (strategy RT_KS_MATMUL, format 4) is no module's: it is
 * one cuBLASLt call with an epilogue. Its first instruction is a matmul;
 * each later one reads the one before it (its result, of the matmul's
 * result type) and is an add of a bias (RT_EPI_BIAS: the other operand
 * of the result's dtype and last dim, every other dim 1; the matmul's B
 * a matrix, not a vector), an add of a
 * residual (RT_EPI_RESIDUAL: the other operand of the result's type), or,
 * last, a relu or gelu (tanh approximation); at most one of each, and
 * `epilogue` holds exactly the bits the instructions make, but for
 * RT_EPI_AUX (format 17), which a gelu may carry: the gelu's operand (the
 * chain's value before it, read by later instructions too, its last dim a
 * multiple of RT_EPI_AUX_ALIGN) is stored as well, cuBLASLt's GELU input
 * matrix. Or (RT_EPI_DGELU, format 23) the one later instruction is a
 * gelu_grad(x, the matmul's result), x of the result's type, 16-bit, its
 * last dim a multiple of RT_EPI_AUX_ALIGN, read as cuBLASLt's GELU input
 * matrix (EPILOGUE_DGELU: the product times gelu'(x)). module is -1,
 * grid, block and shared_bytes are 0; the parameters are the matmul's two
 * operands, then the bias and the residual where there are (with
 * RT_EPI_DGELU: x), then the last instruction's result, then with
 * RT_EPI_AUX the gelu's operand (nout 1, or 2), each output overlapping
 * none of the others (but the result may be the residual's very buffer).
 * cuBLASLt computes act(A B + C + bias), C the residual (beta 1), or
 * gelu'(x) A B, which is what the instructions compute in order, up to
 * rounding (the activation of the unrounded sum: its operand as stored
 * is rounded to the result's dtype; gelu_grad's product likewise). */
typedef enum {
    RT_KS_ELEMENTWISE, RT_KS_ROW, RT_KS_COLUMN, RT_KS_SINGLE_BLOCK, RT_KS_MATMUL,
    RT_NKSTRATEGIES
} rt_kernel_strategy;
/* A matmul kernel's epilogue, bits. */
enum {
    RT_EPI_BIAS = 1, RT_EPI_RESIDUAL = 2, RT_EPI_RELU = 4, RT_EPI_GELU = 8,
    RT_EPI_AUX = 16, /* format 17: with RT_EPI_GELU, its operand stored too */
    RT_EPI_DGELU = 32, /* format 23: gelu_grad(x, the product), alone */
    RT_EPI_ALL = 63
};
/* An RT_EPI_AUX operand's last dim is a multiple of this (cuBLASLt's
 * leading dimension of its GELU input matrix). */
enum { RT_EPI_AUX_ALIGN = 8 };
#define RT_MAX_KPARAMS 256         /* pointer parameters of one kernel */
#define RT_MAX_BLOCK 1024          /* threads per block */
#define RT_MAX_SHARED (1 << 20)    /* dynamic shared bytes (devices have less) */

typedef struct rt_image {
    char *arch;                    /* a cubin's: "sm_80" (compute capability 8.0);
                                    * the PTX's: "compute_90" (a virtual architecture) */
    uint8_t *data;                 /* a cubin (ELF), or PTX text NUL-terminated */
    size_t len;                    /* >= 1; PTX: without the NUL */
} rt_image;

typedef struct rt_module {
    int32_t nentry;                /* >= 1 */
    char **entry;                  /* its __global__ functions: "k3_add_gelu", ...;
                                    * distinct, each run by a kernel */
    int32_t ncubin;                /* >= 1 */
    rt_image *cubin;               /* one per architecture, distinct */
    rt_image ptx;                  /* for the newest: JIT-compiled on later devices */
} rt_module;

typedef struct rt_kernel {
    int32_t stage;                 /* the program it belongs to */
    char *name;                    /* the group's: "k17_add_gelu" */
    int32_t module;                /* the code it runs: an index in rt_plan.module;
                                    * -1 for a matmul kernel */
    int32_t entry;                 /* its function: an index in the module's
                                    * entry[]; 0 for a matmul kernel */
    uint8_t strategy;              /* rt_kernel_strategy */
    uint8_t epilogue;              /* RT_KS_MATMUL: RT_EPI_* bits; else 0 */
    int64_t grid;                  /* blocks along x (y, z: 1) */
    int32_t block;                 /* threads per block along x */
    int32_t shared_bytes;          /* dynamic shared memory per block */
    int32_t nin, nout;             /* parameters: nin read, then nout written */
    int32_t *param;                /* nin + nout buffers of the stage's program */
    rt_type *param_t;              /* the type each is read or written as */
    int32_t ninstr;                /* >= 1 */
    int32_t *instr;                /* instruction indices, ascending; the last is the anchor;
                                    * compute instructions, and constants the code writes
                                    * as literals (version 20: the CPU backend fills
                                    * them, the CUDA backend does not) */
} rt_kernel;

#define RT_INIT_ENTRY "sh_init"

typedef struct rt_plan {
    int32_t naxes;                 /* mesh; 0 is a single rank */
    char *axis_name[RT_MAX_AXES];
    int64_t axis_size[RT_MAX_AXES];
    int32_t stage_axis;            /* pipeline axis, or -1 */
    int32_t nstages;               /* >= 1 */
    rt_program *stage;
    int32_t nio;
    rt_io *io;
    int32_t loss;                  /* training: the output entry holding the loss
                                    * (a floating-point scalar); -1: inference */
    int32_t nmodules;              /* 0 for a CPU-only plan; each used by a kernel */
    rt_module *module;
    int32_t nkernels;
    rt_kernel *kernel;
    /* format 12: the module whose one entry, RT_INIT_ENTRY, is init_gen.h's
     * kernel: a GPU backend makes the sources that come from the seed with
     * it on the device, the same bits as the CPU backend's rt_init_block
     * (runtime/io/tensors.h). No kernel runs it; -1: none (a CPU-only plan,
     * or one whose sources are all bound or read) */
    int32_t init_module;
    char *report;                  /* JSON text, NUL-terminated; may be "" */
    size_t report_len;
    char *source;                  /* the model's file as the compiler was given
                                    * it, for messages; may be NULL or "" */
    void *mem_;                    /* owned memory (rt_plan_free) */
} rt_plan;

int64_t rt_plan_ranks(const rt_plan *p);
/* Coordinates of rank r (row-major over the axes, first axis major). */
void rt_plan_coords(const rt_plan *p, int64_t r, int64_t coord[RT_MAX_AXES]);

/* Writes the file form into *out (malloc'd; free()), *len its size; the
 * plan is validated first (rt_plan_validate), and a plan that fails is not
 * written. */
bool rt_plan_write(const rt_plan *p, uint8_t **out, size_t *len, su_status *err);
/* rt_plan_write for a plan whose plain form was validated before its
 * programs were rolled into loop form (codegen/plan_roll.c): the loop form
 * is checked as far as expanding it needs (rt_plan_check_loops), not
 * expanded and validated again, which would cost what the plain form did.
 * Reading it (rt_plan_read) validates it whole. */
bool rt_plan_write_rolled(const struct rt_plan *p, uint8_t **out, size_t *len, su_status *err);
/* The checks rt_plan_expand makes before it expands anything (indices,
 * slots, copies and kernels in range, the size of the expansion). */
bool rt_plan_check_loops(const struct rt_plan *p, su_status *err);
/* The same of stage s's loop form alone (true when it is plain), its own
 * expansion bounded: what a validator checking the plan a stage at a time
 * reads of each (rt_plan_validate_stage), where rt_plan_check_loops of
 * the whole plan would read every stage again for each. */
bool rt_plan_check_loop_stage(const struct rt_plan *p, int s, su_status *err);
/* rt_plan_read, then rt_plan_expand: the plan the runtime runs (what
 * rt_plan_load and the library read). */
rt_plan *rt_plan_read_plain(const uint8_t *data, size_t len, const char *what, su_status *err);
/* Expands every program of p in loop form into the plain form (p's own
 * stage table and kernel table are replaced by new ones, allocated on
 * p->mem_, which rt_plan_free frees); true and nothing changed when none
 * is. false with a message when the loop form is wrong (an item's body
 * or microbatch out of range, a slot's copy that is no plain buffer, a kernel
 * over two bodies, an I/O entry in a slotted buffer, more than
 * RT_MAX_EXPANDED_INSTR instructions, ...); what the plain form then says
 * is rt_plan_validate's to check. */
bool rt_plan_expand(rt_plan *p, su_status *err);
/* rt_plan_expand of the stages which[s] selects (NULL: all): their
 * programs plain and their kernels one per item, the other stages and
 * their kernels as they were, unread (the selected stages checked as
 * rt_plan_expand checks them, and their expansion bounded; a plan read
 * and validated has had every stage checked). What a process that runs
 * only some stages needs (rt_session_new), and how the validator checks a
 * loop form, one stage at a time. */
bool rt_plan_expand_stages(rt_plan *p, const bool *which, su_status *err);
/* A view of a plan p, some stages expanded, that shares the rest with p:
 * *view = *p, view->mem_ NULL, then rt_plan_expand_stages(view, ...).
 * Frees what the expansion allocated (view->mem_), not p's. */
void rt_plan_view_free(rt_plan *view);
/* Reads and validates a plan from bytes; NULL with a message in err
 * ("truncated file: ...", "checksum mismatch in section PROG (stage 0): the
 * file is corrupt", ...). Fields past a count (dims past the rank, operands
 * past nin) are not stored and read back as 0. what
 * names the source in messages (a file name). Never reads out of bounds.
 * A program in loop form stays so (the runtime needs rt_plan_read_plain). */
rt_plan *rt_plan_read(const uint8_t *data, size_t len, const char *what, su_status *err);
/* Frees a plan that rt_plan_read (or rt_plan_load) made; NULL is a no-op. */
void rt_plan_free(rt_plan *p);
/* "model.sh:12:5: " when instruction in has a place in p's source, else
 * "" (into buf): the prefix of a message about it. */
const char *rt_instr_where(const rt_plan *p, const rt_instr *in, char *buf, size_t size);
/* Reads a whole plan file and rt_plan_read_plain's it; NULL with err
 * naming the file on failure (runtime/plan/plan_file.c). */
rt_plan *rt_plan_load(const char *path, su_status *err);
/* The same, rt_plan_read's: its loop forms kept (validated), as a session
 * takes them, expanding only the stages its process runs
 * (rt_session_new). */
rt_plan *rt_plan_load_as_written(const char *path, su_status *err);
/* The checks rt_plan_read runs after decoding: indices in range, types that
 * fit their buffers, each instruction's shapes consistent for its op
 * (rt_instr_check), I/O entries consistent with the programs; a plan with
 * programs in loop form, each such program on a copy of it expanded for
 * a sample of its items, one at a time (plan_validate.c's
 * check_loop_stage: for each body and tuple of slots, the least and the
 * greatest microbatch, which pass exactly when every microbatch does). */
bool rt_plan_validate(const rt_plan *p, su_status *err);
/* rt_plan_validate's checks in two halves, for a writer that holds one
 * stage's plain program at a time (a pipeline's stages, rolled a few at
 * a time: codegen/plan_build.c). rt_plan_validate_stage checks stage s:
 * its buffers, its instructions, the sources of its params and states,
 * and its kernels (their modules' entries in range), a loop form as
 * rt_plan_validate checks it (its structure, then its instructions on a
 * sample of its items, those of the least and the greatest microbatch of
 * each body and tuple of slots its buffers take: plan_validate.c); the I/O
 * entries and modules they name must be in p, and p's kernels may be some
 * stages' only. rt_plan_validate_rest checks the rest on the whole plan,
 * its programs plain or in loop form: the size of the whole expansion
 * (each stage's half bounds its own), the mesh, the I/O entries, the
 * loss, each module on its own and that each is some kernel's, and the
 * report. A plan whose every stage passes the first and
 * which passes the second passes rt_plan_validate. */
bool rt_plan_validate_stage(const rt_plan *p, int s, su_status *err);
bool rt_plan_validate_rest(const rt_plan *p, su_status *err);
/* Of stage s, plain: every buffer an instruction or one of the stage's
 * kernels names in range, and every instruction a kernel names: what the
 * writer checks before it rolls a stage into loop form
 * (codegen/plan_roll.c indexes by them), then rt_plan_validate_stage
 * checks the loop form it rolled. */
bool rt_plan_check_refs(const rt_plan *p, int s, su_status *err);
/* Its kernels' part: every buffer and instruction the stage's kernels name
 * in range (of the stage's nbuf and ninstr; its instructions unread). */
bool rt_plan_check_kernel_refs(const rt_plan *p, int s, su_status *err);
/* Shape rules of one instruction (local shapes), so kernels can trust them. */
bool rt_instr_check(const rt_plan *p, const rt_instr *in, su_status *err);
/* For each I/O entry i of a validated plan, first[i] (nio entries): the
 * lowest index of the entries with its name in its namespace (outputs, or
 * inputs, params and states), i itself when there is no
 * other; those entries stand for one tensor. false when out of memory. */
bool rt_plan_io_first(const rt_plan *p, int32_t *first);

/* The compute capability an architecture name stands for: "sm_80" and
 * "compute_80" give 80; -1 for a name not of that form ("sm_" or
 * "compute_" then 2 or 3 digits, 10 or more). */
int rt_arch_number(const char *name);
/* The name of a strategy: "elementwise", "row", "column", "single block",
 * "matmul". */
const char *rt_kernel_strategy_name(int strategy);

#endif
