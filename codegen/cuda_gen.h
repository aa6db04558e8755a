/* cuda_gen.h: what the files of the CUDA C generator share (private to
 * codegen/): the generator's state, tiles, the device helpers' bits, and
 * the pieces each file writes for the others.
 *
 *   cuda.c           assembling a kernel's source, cg_cuda_generate
 *   cuda_tile.c      literals, types, names, broadcasting offsets, one op's
 *                    expression, tiles (the code for VEC elements)
 *   cuda_strategy.c  the loops of each strategy around the tiles
 *   cuda_ops.c       the kernels of single ops (transpose, embedding,
 *                    attention, ...)
 */
#ifndef SHARDC_CG_CUDA_GEN_H
#define SHARDC_CG_CUDA_GEN_H
#include "cuda.h"

enum { BLOCK_EW = 256, MAX_GRID = 65535, MAX_CACHED = 32, MAX_PARTS = 1024 };
/* A column reduction's blocks at most, where its rows are split (X_COLPARTS:
 * 32 partial results a block) */
enum { MAX_COL_BLOCKS = 256 };

/* Device helpers, emitted when the body uses them: X_* index helper_text,
 * H_* are the bits of gen.helpers. */
enum {
    X_VEC,
    X_SIGMOID,
    X_GELU,
    X_GELU_GRAD,
    X_SILU_GRAD,
    X_TO_I32,
    X_I32_ODD,
    X_F16,
    X_BF16,
    X_AMAX,
    X_WARP,
    X_BLOCK,
    X_BLOCK_AMAX,
    X_ADAMW,
    X_XENT_GRAD,
    X_NAN,
    X_ERROR,
    X_ONLINE,
    X_PARTS,
    X_COLPARTS,
    X_MMA,
    X_COUNT
};
#define HELPER(x) (1u << (x))
enum {
    H_VEC = HELPER(X_VEC),
    H_SIGMOID = HELPER(X_SIGMOID),
    H_GELU = HELPER(X_GELU),
    H_GELU_GRAD = HELPER(X_GELU_GRAD),
    H_SILU_GRAD = HELPER(X_SILU_GRAD),
    H_TO_I32 = HELPER(X_TO_I32),
    H_I32_ODD = HELPER(X_I32_ODD),
    H_F16 = HELPER(X_F16),
    H_BF16 = HELPER(X_BF16),
    H_AMAX = HELPER(X_AMAX),
    H_WARP = HELPER(X_WARP),
    H_BLOCK = HELPER(X_BLOCK),
    H_BLOCK_AMAX = HELPER(X_BLOCK_AMAX),
    H_ADAMW = HELPER(X_ADAMW),
    H_XENT_GRAD = HELPER(X_XENT_GRAD),
    H_NAN = HELPER(X_NAN),
    H_ERROR = HELPER(X_ERROR),
    H_ONLINE = HELPER(X_ONLINE),
    H_PARTS = HELPER(X_PARTS),
    H_COLPARTS = HELPER(X_COLPARTS),
    H_MMA = HELPER(X_MMA),
};

typedef struct gen {
    const ir_module *m;
    const pass_fusion *f;
    const pass_fgroup *g;       /* the group being emitted: the kernel's, or
                                 * one part of a multi-tensor group */
    const pass_fgroup *whole;   /* the kernel's group */
    const ir_op *red;           /* the reduction, or NULL */
    ir_names *pname;            /* printed IR names (ir_names_get) */
    int nnamed, capnamed;       /* the values the kernel touches, and */
    const ir_value **named;     /* their C names */
    const char **cname;
    su_arena *arena;
    su_buf *b;                  /* the body being written */
    int indent;
    unsigned helpers;
    bool f16, bf16;             /* the kernel touches these dtypes */
    bool canon;                 /* names by order of first use: the key */
    bool wmma;                  /* the kernel uses nvcuda::wmma (mma.h) */
    int min_blocks;             /* __launch_bounds__'s blocks a processor at least, or 0 */
    int64_t at_heads;           /* attention kernels: the heads H of operands that
                                 * hold them inner ([.., S, H, d]), else 0 */
    unsigned at_inner;          /* the operands and results (bit p<n>) that do */
    int64_t at_grp;             /* and the query heads a key head has (ir_attn_group) */
    unsigned at_kv;             /* the operands and results (bit p<n>) of key heads */
    const ir_type *vdom;        /* a group with a concat (pass_fuse_views): the tile's
                                 * domain while its ops are emitted, else NULL */
    const char *ve;             /* and its element there ("e", "e + q") */
    int ntemp;                  /* the kernel's temporaries t0, t1, ... so far */
    int vq;                     /* a vector's views computed at once (cuda_tile.c's
                                 * view_lanes): its elements, else 0 */
    bool vfail;                 /* and one of them reached a register of the tile's loop */
    bool vshared;               /* computing, within those views, an operand every lane
                                 * reads the same element of (broadcast along the last
                                 * dim): once, as scalars (vq 0 meanwhile) */
    const char **vname;         /* by the group's op: the lane q of its vector so computed */
} gen;

/* What one tile computes (see the file comment). */
typedef struct tile {
    const ir_type *dom;         /* the shape the element index e runs over */
    int vec;                    /* elements from e on: 1, or a divisor of dom's last dim */
    bool prologue;              /* the ops before the reduction (all, elementwise) */
    bool store_prologue;        /* and their stored values */
    const char *xin;            /* without prologue: the reduction's input element */
    const char *consume;        /* statements per element, after xin */
    const char *pre, *post;     /* statements once per tile, before and after its
                                 * elements (a vector's: consume may gather them) */
    const char *rexpr;          /* the reduction's result (then the epilogue), or NULL */
    const char *srexpr;         /* with rexpr: the sibling sum's result (cg_sib), or NULL */
    const char *ahead;          /* the step whose loads cg_emit_ahead_loads made (the
                                 * values along the last dim, in l_NAME[ahead]), or NULL */
} tile;

/* A reduction's shape: x viewed as [outer, n, inner] around the axis. */
typedef struct rview {
    int64_t outer, n, inner;
} rview;

/* ---- cuda_tile.c ---- */

/* A line of the body at the current indent. */
void cg_line(gen *G, const char *fmt, ...) SU_PRINTF(2, 3);
/* Text in the generator's arena. */
const char *cg_fmt(gen *G, const char *f, ...) SU_PRINTF(2, 3);
/* An f32 literal that reads back as f. */
const char *cg_f32_text(gen *G, float f);
/* The C type of a dtype in memory (__half, __nv_bfloat16, float, int). */
const char *cg_ctype(gen *G, ir_dtype t);
/* A value of dtype t loaded into an f32 (or int) register, and back. */
const char *cg_load_conv(gen *G, ir_dtype t, const char *expr);
const char *cg_store_conv(gen *G, ir_dtype t, const char *reg);
/* expr rounded to t's precision, still in a register. */
const char *cg_round_to(gen *G, ir_dtype t, const char *expr);
/* A value's C name in the kernel (a parameter p_NAME), and its register. */
const char *cg_cname(gen *G, const ir_value *v);
const char *cg_reg(gen *G, const ir_value *v);
/* Whether v is made by an op of the group being emitted. */
bool cg_in_group(const gen *G, const ir_value *v);
/* Whether op is a statistic the group's layernorm, rmsnorm or
 * cross_entropy stores from its own sums (passes/fuse.c's stat_fits): one
 * value a row, stored by the row loop (cg_emit_row, cg_emit_xent), not by
 * the tiles. */
bool cg_stat_member(const gen *G, const ir_op *op);
/* The sibling sum of the kernel's reduction (pass_fgroup.has_sib), or
 * NULL: a tile with a prologue loads its operand, its consume sums it
 * (the caller's), and a tile with a result stores its own (srexpr). */
const ir_op *cg_sib(const gen *G);
/* The element offset in a value of type t for element e (an expression)
 * of the domain dom that t broadcasts to (NumPy's rules). */
const char *cg_offset(gen *G, const ir_type *dom, const ir_type *t, const char *e);
/* The adamw op whose coefficients op shares (the first with its step). */
const ir_op *cg_coef_owner(const gen *G, const ir_op *op);
/* adamw's coefficients from the step t, as statements. */
void cg_emit_adamw_coef(gen *G, const ir_op *op, const char *t);
/* One op of the group as a statement: its result's register from its
 * operands' (a constant of the group is a literal, and makes none). */
void cg_emit_op(gen *G, const ir_op *op);
/* One tile (see cuda.c's file comment). */
void cg_emit_tile(gen *G, const tile *t);
/* The values tile t reads or writes through their pointers (p_NAME). */
void cg_tile_memory(gen *G, const tile *t, const ir_value ***vals, int *n);
/* The values tile t loads along the domain's last dim (a vector, or an
 * element, a step): those it can load ahead. */
int cg_tile_ahead(gen *G, const tile *t);
/* Loads ahead for `steps` steps of tile t: the arrays l_NAME[steps], then
 * (in a loop over u that declares e) step u's loads into l_NAME[u]; a
 * tile with .ahead = "u" then reads them there. */
void cg_emit_ahead_arrays(gen *G, const tile *t, int steps);
void cg_emit_ahead_loads(gen *G, const tile *t);
/* Whether tile t reads its element index e (a load or a store). */
bool cg_tile_reads_e(gen *G, const tile *t);

/* ---- cuda_strategy.c ---- */

/* adamw's coefficients, once before the loops where they read memory. */
void cg_emit_hoisted(gen *G);
/* Launch geometry: a power of two >= n, a block size, a grid. */
int cg_pow2_at_least(int64_t n);
int cg_clamp_block(int64_t threads, int cap);
int64_t cg_grid_for(int64_t work, int block);
/* The strategies' bodies (cuda.h), each setting k's geometry. */
int cg_vec_of(const pass_fgroup *g, const ir_type *dom, int64_t last);
void cg_emit_elementwise(gen *G, cg_cuda_kernel *k);
void cg_emit_multi(gen *G, cg_cuda_kernel *k);
void cg_emit_total(gen *G, cg_cuda_kernel *k);
rview cg_red_view(const ir_op *r);
void cg_emit_row(gen *G, cg_cuda_kernel *k, const rview *v);
void cg_emit_column(gen *G, cg_cuda_kernel *k, const rview *v);
void cg_emit_xent(gen *G, cg_cuda_kernel *k, const rview *v);

/* ---- cuda.c ---- */

/* A value's name in the printed IR, for comments. */
const char *cg_ir_name(gen *G, const ir_value *v);
/* An op as a comment line of the kernel's header, and a shape. */
void cg_put_op_line(gen *G, su_buf *b, const ir_op *op);
void cg_put_shape(su_buf *b, const ir_type *t);
/* What every kernel's source starts with after its header: the dtype
 * includes, i64, and the device helpers the body used. */
void cg_put_prelude(gen *G, su_buf *b);

/* ---- cuda_ops.c ---- */

/* The kernel of op (cg_cuda_op_kernel), the i-th of the module, id its
 * number in the kernel's name. */
void cg_gen_op_kernel(gen *G, cg_cuda_kernel *k, const ir_op *op, int i, int id);
/* The kernel of a pair group (passes/fuse.h: attn_dv and attn_dk). */
void cg_gen_attn_pair(gen *G, cg_cuda_kernel *k, const pass_fgroup *g);
/* A pair's parameters into k (in a): attn_dk's operands, one each even
 * where they are one value (attention(x, x, x)), its result, then attn_dv's
 * (cg_gen_attn_pair's, and a pair's that takes an earlier one's code). */
void cg_attn_pair_params(const ir_module *m, const pass_fgroup *g, cg_cuda_kernel *k, su_arena *a);
/* Whether attention op's kernel is the tensor-core one (the fusion's
 * oldest architecture has them). */
bool cg_attention_wmma(const gen *G, const ir_op *op);
bool cg_attention_mma(const gen *G, const ir_op *op);
/* The name of op's own kernel, numbered id: "k12_transpose". */
const char *cg_op_kernel_name(su_arena *a, const ir_op *op, int id);

#endif
