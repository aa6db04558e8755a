/* ir.h: the intermediate representation (DESIGN.md §2).
 *
 * A module is one graph in SSA form: an ordered list of ops (the order is
 * also the dominance order: an operand is defined by an earlier op), each
 * making one or more values. A value has a dtype, a static shape and a
 * sharding. Before partitioning shapes are global; after it they are the
 * local shard of one rank. Everything lives in the module's arena.
 *
 * Textual form (print.c writes it, parse.c reads it back exactly):
 *
 *   mesh dp = 2, tp = 2
 *   partitioned                      (only once shapes are local)
 *   pipeline over pp repeats 4 microbatches 4 schedule 1f1b
 *   %x = input {name = "x"} : f32[64, 1024] shard(dp, _)
 *   %w1 = param {name = "w1", init = normal(0.02)} : f32[1024, 4096] shard(_, tp)
 *   %0 = matmul %x, %w1 : f32[64, 4096]
 *   %s = sum %0 {axis = 1, keepdims = false} : f32[64] auto(dp) partial(tp)
 *   %y = gelu %0 : f32[64, 4096] rep 3
 *   output "out" = %y
 *   update %w1 = %9                  (training: w1's value after the step)
 *   train %loss with adamw(lr = 0.0003, ...) zero 2 over dp
 *
 * shard(...) is a user annotation (a hard constraint), auto(...) a sharding
 * chosen by propagation; a value with neither has none yet. "rep N" marks
 * an op made by repetition N of the pipelined `repeat ... over`; "phase
 * backward" (or optimizer) an op of that part of a training step. Comments
 * run from "//" to the end of the line.
 */
#ifndef SHARDC_IR_H
#define SHARDC_IR_H

#include "../support/support.h"

#define IR_MAX_RANK 8
#define IR_MAX_AXES 8 /* mesh axes */

/* ---- dtypes and types ---- */

/* bool: one byte, 0 or 1 (comparisons' results, where's condition) */
typedef enum { IR_F32, IR_F16, IR_BF16, IR_I32, IR_BOOL, IR_NDTYPES } ir_dtype;

const char *ir_dtype_name(ir_dtype t);
int ir_dtype_size(ir_dtype t); /* bytes */
bool ir_dtype_is_float(ir_dtype t);
/* Reads a dtype name (s need not be NUL-terminated); false if unknown. */
bool ir_dtype_lookup(const char *s, size_t n, ir_dtype *out);

typedef struct ir_type {
    ir_dtype dtype;
    int rank;                    /* 0 for a scalar */
    int64_t dim[IR_MAX_RANK];    /* each >= 1 */
} ir_type;

int64_t ir_type_numel(const ir_type *t); /* the verifier bounds it to int64 */
bool ir_type_eq(const ir_type *a, const ir_type *b);
bool ir_shape_eq(const ir_type *a, const ir_type *b); /* the dims alone */
void ir_type_print(su_buf *b, const ir_type *t); /* "f32[64, 1024]" */

/* ---- meshes and shardings ---- */

typedef struct ir_mesh {
    int naxes;                      /* 0: no mesh (the unsharded program) */
    const char *name[IR_MAX_AXES];
    int64_t size[IR_MAX_AXES];      /* each >= 1 */
    su_loc loc;                     /* the mesh line of textual IR, for messages
                                     * (line 0: none) */
} ir_mesh;

/* Index of the axis called name in the mesh, or -1. */
int ir_mesh_axis(const ir_mesh *m, const char *name, size_t n);
int64_t ir_mesh_ranks(const ir_mesh *m);

typedef enum {
    IR_SH_NONE,   /* not decided yet */
    IR_SH_FIXED,  /* a user annotation: a hard constraint */
    IR_SH_AUTO,   /* chosen by propagation */
} ir_sh_kind;

/* Per tensor dimension, the ordered list of mesh axes it is split over
 * (major first), plus the set of axes over which the value is partial.
 * Axes named nowhere are replicated. */
typedef struct ir_sharding {
    uint8_t kind;                           /* ir_sh_kind */
    uint8_t naxes[IR_MAX_RANK];             /* axes splitting dim d */
    uint8_t axes[IR_MAX_RANK][IR_MAX_AXES]; /* mesh axis indices */
    uint16_t partial;                       /* bit a: partial over axis a */
} ir_sharding;

/* Product of the sizes of the axes splitting dim d. */
int64_t ir_sharding_split(const ir_sharding *s, const ir_mesh *m, int d);
bool ir_sharding_eq(const ir_sharding *a, const ir_sharding *b, int rank);
/* Prints "shard(dp, (tp, sp))", "auto(_) partial(tp)", or nothing for NONE. */
void ir_sharding_print(su_buf *b, const ir_sharding *s, const ir_mesh *m, int rank);

/* ---- ops ---- */

typedef enum {
#define X(e, name, mn, mx, nres, attrs, cls) IR_##e,
#include "ops.def"
#undef X
    IR_NOPS
} ir_opcode;

enum { /* attribute bits of ops.def */
    IR_A_NAME = 1 << 0,     /* name: the tensor's name (input, param) */
    IR_A_INIT = 1 << 1,     /* init: a param's initializer, an input's when made
                             * from the seed; optional for an input, none when absent */
    IR_A_VALUE = 1 << 2,    /* value: a constant's value */
    IR_A_AXIS = 1 << 3,     /* axis: normalised to 0..rank-1 */
    IR_A_KEEPDIMS = 1 << 4,
    IR_A_EPS = 1 << 5,
    IR_A_CAUSAL = 1 << 6,
    IR_A_PERM = 1 << 7,     /* list: a permutation */
    IR_A_SHAPE = 1 << 8,    /* list: the new shape */
    IR_A_DTYPE = 1 << 9,    /* dtype: cast's target */
    IR_A_DIM = 1 << 10,     /* dim: gathered / scattered / split dim */
    IR_A_DIM2 = 1 << 11,    /* dim2: all_to_all's concatenated dim */
    IR_A_AXES = 1 << 12,    /* axes: mesh axes a collective runs over */
    IR_A_LR = 1 << 13,      /* optimizer hyperparameters */
    IR_A_MOMENTUM = 1 << 14,
    IR_A_BETA1 = 1 << 15,
    IR_A_BETA2 = 1 << 16,
    IR_A_WD = 1 << 17,
    IR_A_OFFSET = 1 << 18,  /* offset: a column in a bucket (insert, extract) */
    IR_A_PEER = 1 << 19,    /* peer: the other stage of a send or recv */
    IR_A_TAG = 1 << 20,     /* tag: which message a send or recv carries */
    IR_A_REDUCE = 1 << 21,  /* reduce: all_reduce's operation; optional, sum when absent */
    IR_A_BOUND = 1 << 22,   /* bound: check_ids and check_labels take ids in [0, bound) */
    IR_A_TRANS = 1 << 23,   /* trans: matmul's operands read with their last two dims
                             * swapped (IR_TRANS_*); optional, none when absent */
    IR_A_HEADS = 1 << 24,   /* heads_inner: which of attention's operands and result hold
                             * each position's heads together (IR_HEADS_*); optional,
                             * none when absent */
    IR_A_PARTS = 1 << 25,   /* parts: a matmul of split3's bf16 parts (ops.def);
                             * optional, false when absent */
    IR_A_REVERSED = 1 << 26, /* reversed: split3's parts in the order l m h; optional,
                              * false when absent */
};

/* matmul's trans bits (IR_A_TRANS): printed `trans = a`, `b` or `ab`. */
enum { IR_TRANS_A = 1, IR_TRANS_B = 2 };

/* What an all_reduce computes over its group (IR_A_REDUCE). Sum is the
 * default and is not printed: `all_reduce %x {axes = [tp], reduce = max}`. */
typedef enum { IR_RED_SUM, IR_RED_MAX, IR_NREDUCE } ir_reduce;

/* IR_C_BINARY: elementwise with NumPy broadcasting over two operands, or
 * three for where */
typedef enum {
    IR_C_SOURCE, IR_C_BINARY, IR_C_UNARY, IR_C_CONTRACT, IR_C_REDUCE,
    IR_C_NORM, IR_C_LAYOUT, IR_C_LOSS, IR_C_COMM,
    IR_C_OPTIM,  /* optimizer updates: elementwise, operands of one shape */
    IR_C_P2P,    /* send and recv between pipeline stages */
} ir_opclass;

typedef struct ir_opinfo {
    const char *name;
    int min_in, max_in, nres;
    unsigned attrs;     /* IR_A_* */
    ir_opclass cls;
} ir_opinfo;

extern const ir_opinfo ir_ops[IR_NOPS]; /* read-only table */
/* The opcode named s (not NUL-terminated), or -1. */
int ir_op_lookup(const char *s, size_t n);
/* How the user writes the op in the language: "+" for add, "@" for matmul,
 * "-" for neg, the call's name otherwise. Used in messages. */
const char *ir_op_display(ir_opcode code);
/* Whether each element of the op's result is a function of the same
 * element of its operands alone (NumPy broadcasting): the arithmetic, the
 * comparisons, where, the activations and their *_grad, the math
 * functions, cast. Not expand (a shape), dropout (a position and a key),
 * nor a source. */
bool ir_pointwise(ir_opcode code);
/* The value a constant of float dtype t holds, widened to f32: v rounded
 * to f32, then to t, as the backends fill it (the runtime's
 * rt_cuda_const_word and fill_const). */
float ir_const_f32(double v, ir_dtype t);

/* IR_INIT_PARAM: a state made from a param (ir_attrs.init_param), its
 * values converted to the state's dtype (an f32 master copy of a bf16 or
 * f16 param), printed `init = param("w1")`. */
typedef enum {
    IR_INIT_NONE, IR_INIT_ZEROS, IR_INIT_ONES, IR_INIT_NORMAL, IR_INIT_UNIFORM, IR_INIT_PARAM
} ir_init_kind;

typedef struct ir_init {
    ir_init_kind kind;
    double a, b;        /* normal: a = std; uniform: [a, b) */
} ir_init;

/* Every attribute an op may carry; the op table says which are meaningful
 * for each op (the others stay zero). */
typedef struct ir_attrs {
    const char *name;   /* IR_A_NAME */
    ir_init init;       /* IR_A_INIT */
    const char *init_param; /* IR_A_INIT of kind IR_INIT_PARAM: the param's name */
    double value;       /* IR_A_VALUE */
    int64_t axis;       /* IR_A_AXIS */
    bool keepdims;      /* IR_A_KEEPDIMS */
    bool causal;        /* IR_A_CAUSAL */
    double eps;         /* IR_A_EPS */
    int nlist;          /* IR_A_PERM / IR_A_SHAPE */
    int64_t list[IR_MAX_RANK];
    ir_dtype dtype;     /* IR_A_DTYPE */
    int64_t dim, dim2;  /* IR_A_DIM, IR_A_DIM2 */
    int naxes;          /* IR_A_AXES: mesh axis indices, major first */
    uint8_t axes[IR_MAX_AXES];
    double lr, momentum, beta1, beta2, wd; /* IR_A_LR ... IR_A_WD */
    int64_t offset;     /* IR_A_OFFSET */
    int64_t peer;       /* IR_A_PEER */
    int64_t tag;        /* IR_A_TAG */
    uint8_t reduce;     /* IR_A_REDUCE: ir_reduce */
    int64_t bound;      /* IR_A_BOUND */
    uint8_t trans;      /* IR_A_TRANS: IR_TRANS_A | IR_TRANS_B */
    uint8_t heads_inner; /* IR_A_HEADS: bit i for layout operand i, IR_HEADS_RESULT */
    bool parts;         /* IR_A_PARTS */
    bool reversed;      /* IR_A_REVERSED */
} ir_attrs;

typedef struct ir_op ir_op;

typedef struct ir_value {
    int id;             /* unique in the module, in creation order */
    int res;            /* which result of def */
    const char *name;   /* a readable name (source variable), or NULL */
    ir_op *def;         /* the op that makes it */
    ir_type type;
    ir_sharding sh;
} ir_value; /* in this order, 176 bytes: a pipeline's stages hold millions */

/* Which part of a training step an op belongs to (printed "phase backward";
 * forward is the default and not printed). */
typedef enum { IR_PH_FORWARD, IR_PH_BACKWARD, IR_PH_OPTIMIZER, IR_NPHASES } ir_phase;
const char *ir_phase_name(ir_phase ph); /* "forward", "backward", "optimizer" */

struct ir_op {
    ir_opcode code;
    int nin;
    ir_value **in;      /* operands */
    int nres;
    ir_value **res;     /* results */
    const ir_attrs *a;  /* never NULL: the module's, shared by the ops whose
                         * attributes are equal (ir_attrs_intern); to change
                         * one op's, give it new ones (ir_op_set_attrs) */
    int rep;            /* repetition of the pipelined repeat, or -1 */
    uint8_t phase;      /* ir_phase */
    int recompute;      /* the call of a `recompute block` that made it (1, 2, ...;
                         * printed "recompute N"), 0: none. Autodiff recomputes
                         * such ops in the backward instead of keeping their
                         * values; no later pass reads it */
    int task, mb;       /* a pipeline stage's program: 1 + the kind of the task
                         * (a chunk's forward or backward) whose microbatch mb
                         * made it (pipesplit.c); task -1: a send or receive of
                         * microbatch mb's value; 0: made once, not per
                         * microbatch. Not printed; the memory plan places a
                         * task's instances alike and the plan writer rolls
                         * them into one loop body */
    su_loc loc;         /* where the source made it (line 0: unknown) */
};

/* The tag of send or recv op, which pairs it with its peer's: its
 * attributes' plus, for a microbatch's (task -1), its microbatch. The
 * pipeline split gives a value's sends (receives) of every microbatch one
 * set of attributes, the tag of microbatch 0's, where a set a tag had
 * been 272 bytes a microbatch (ir_attrs). */
static inline int64_t ir_p2p_tag(const ir_op *op)
{
    return op->a->tag + (op->task == -1 ? op->mb : 0);
}

/* ---- the module ---- */

typedef enum { IR_OPT_NONE, IR_OPT_SGD, IR_OPT_ADAMW } ir_optimizer;
/* The learning rate's decay after the warmup (LANGUAGE.md §12). */
typedef enum { IR_DECAY_NONE, IR_DECAY_COSINE, IR_DECAY_LINEAR } ir_decay;
typedef enum { IR_SCHED_GPIPE, IR_SCHED_1F1B, IR_SCHED_INTERLEAVED } ir_schedule;

typedef struct ir_train {
    ir_value *loss;         /* NULL: inference only */
    ir_optimizer opt;
    double lr, momentum;    /* sgd */
    double beta1, beta2, eps, wd; /* adamw (wd also sgd's weight decay) */
    double clip;            /* the gradients' global L2 norm clipped to it; 0: none */
    /* the learning rate of step t (from 1): lr t / warmup up to warmup,
     * then decay to min_lr at steps; all 0 (and none): lr throughout */
    double warmup, steps, min_lr;
    ir_decay decay;
    int zero;               /* ZeRO stage 0..3 */
    int zero_axis;          /* mesh axis of ZeRO; -1 when zero == 0 */
    /* the backward reads the activations the forward gathered rather than
     * gathering them again (shardc --keep-gathered; printed "keep gathered") */
    bool keep_gathered;
} ir_train;

typedef struct ir_pipeline {
    int axis;               /* mesh axis of the stages, -1: no pipeline */
    int repeats;            /* L: repetitions of the pipelined repeat */
    int microbatches;       /* M */
    ir_schedule schedule;
    int chunks;             /* V of interleaved(V); 1 otherwise */
    bool unroll;            /* --unroll: the stages' ops carry no task (ir_op.task),
                             * so the plan holds every microbatch's copy of a task
                             * (not in the textual form) */
    su_loc loc;             /* the pipeline statement, else the repeat ... over (not
                             * in the textual form: line 0 there) */
} ir_pipeline;

typedef struct ir_output {
    const char *name;
    ir_value *v;
    su_loc loc;
} ir_output;

/* After a training step, the param or state src takes the value v (same
 * type; after partitioning, the same sharding). A param's update also names
 * grad, the gradient of the loss with respect to it as the optimizer reads
 * it (the same global type; after partitioning, the layout propagation gave
 * the gradient, e.g. sharded under ZeRO-2); NULL for a state. Printed
 * "update %w1 = %9 grad %7". */
typedef struct ir_update {
    ir_value *src;
    ir_value *v;
    ir_value *grad;
} ir_update;

/* A module's attributes, each once (ir_attrs_intern): open addressing. */
typedef struct ir_attrs_set {
    const ir_attrs **slot;  /* [cap], in the module's arena */
    size_t cap, n;          /* cap a power of two over twice n; 0: none yet */
} ir_attrs_set;

/* A pipeline stage's middle microbatches, held once (passes/instances.c):
 * run r (the `instances` op of tag r) stands for pieces run[r] ..
 * run[r + 1] - 1, each microbatch mb's copy of ops [first, end) of
 * microbatch 2's with its stamp: a task's whole instance (task 1 ..
 * maxtask), or some of its sends and receives (task -1; microbatch 2 had
 * p2p of them) or of the inserts that gather an output's rows (task
 * maxtask + 1; gathers of them). */
typedef struct ir_piece {
    int task, mb, first, end;
} ir_piece;
typedef struct ir_shared {
    int microbatches;
    int nruns;
    int *run;               /* [nruns + 1] */
    ir_piece *piece;
    int maxtask, p2p, gathers;
} ir_shared;
void ir_shared_free(ir_shared *sh);

typedef struct ir_module {
    su_arena arena;
    jmp_buf *oom;
    ir_mesh mesh;
    su_vec ops;             /* ir_op *, in program order */
    su_vec outputs;         /* ir_output * */
    su_vec updates;         /* ir_update *: empty until autodiff has run */
    ir_train train;
    ir_pipeline pipe;
    bool partitioned;       /* shapes are local shards ("partitioned" line) */
    int stage;              /* the one pipeline stage this program runs ("stage S"
                             * line, after the pipeline split), or -1: every stage */
    int next_id;
    ir_attrs_set attrs;     /* every op's attributes, each once */
    ir_shared *shared;      /* malloc'd, NULL: none held once (instances.c) */
} ir_module;

#define IR_OP(m, i) ((ir_op *)(m)->ops.v[i])
#define IR_OUTPUT(m, i) ((ir_output *)(m)->outputs.v[i])
#define IR_UPDATE(m, i) ((ir_update *)(m)->updates.v[i])

/* A new, empty module: no mesh axes, no ops, no pipeline, no training.
 * Allocation failures jump to *oom. Never NULL. */
ir_module *ir_module_new(jmp_buf *oom);
void ir_module_free(ir_module *m);
/* Copies m's ops, their values, its outputs, updates and names into a new
 * arena and frees the old one, so that what passes left there (ops they
 * dropped from the list, their values, scratch) goes. Value ids, the
 * ops' order and everything else stay. False, m unchanged, when some
 * operand, output or update names a value no op of m makes (the
 * verifier's to report). */
bool ir_module_compact(ir_module *m);

/* The module's copy of attributes a (its strings its own too), shared with
 * every op whose attributes are the same: the same bytes but for the
 * strings, which are compared by their text. Most ops' attributes are
 * few (a pipeline stage's microbatches repeat their ops), so an op holds
 * a pointer, not a copy. a NULL: none (all zero). */
const ir_attrs *ir_attrs_intern(ir_module *m, const ir_attrs *a);
/* op's attributes replaced by (the module's copy of) a. */
void ir_op_set_attrs(ir_module *m, ir_op *op, const ir_attrs *a);

/* Appends an op with the given operands, attributes and result types
 * (nres of them, as the op table says) and returns it. No checking: the
 * caller either inferred the types (ir_emit) or the verifier runs later. */
ir_op *ir_append(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                 const ir_attrs *a, const ir_type *res_types);
/* The same with attributes that are already m's (ir_attrs_intern's
 * result), not looked up again: for a pass that copies many ops whose
 * attributes it has interned once. */
ir_op *ir_append_interned(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                          const ir_attrs *interned, const ir_type *res_types);

/* Attention's operands in heads_inner layout (IR_A_HEADS): attention's q,
 * k, v; attn_stats', attn_dq's and attn_dk's q, k, v, dy; attn_dv's q, k,
 * dy; attn_lse's q, k; attn_delta's y, dy (0 for other ops). */
int ir_attn_layout_operands(ir_opcode code);
/* Whether an op with IR_A_HEADS stores its result with the heads inner
 * too (attention and its gradients), not as computed (the statistics:
 * attn_stats, attn_lse, attn_delta). */
bool ir_attn_result_swapped(ir_opcode code);
/* Grouped-query attention: the query heads of an attention op (or of
 * attn_lse, attn_stats, attn_dq, attn_dk, attn_dv) that read each key and
 * value head, H / G for q with H heads and k and v with G (ops.def); 1
 * where k has q's heads, and for every other op. */
int64_t ir_attn_group(const ir_op *op);
/* t with dims rank-3 and rank-2 swapped (rank >= 3). */
ir_type ir_type_swap_heads(const ir_type *t);
/* heads_inner's bits (IR_A_HEADS): bit i (i < ir_attn_layout_operands)
 * for operand i stored [.., S, H, d], IR_HEADS_RESULT for the result
 * (ir_attn_result_swapped's ops); ir_heads_all(code), every one of code's
 * (the text's `heads_inner = true`); ir_heads_name(code, i), the name
 * of bit i in the text's list form (`heads_inner = [v, result]`), or
 * NULL where code has no such bit. */
enum { IR_HEADS_RESULT = 1 << 4 };
unsigned ir_heads_all(ir_opcode code);
const char *ir_heads_name(ir_opcode code, int bit);
/* Whether op reads operand i, or (i < 0) writes its result, with the heads
 * inner. */
bool ir_heads_in(const ir_op *op, int i);

/* Whether op reads v (as any operand). */
bool ir_op_reads(const ir_op *op, const ir_value *v);
/* Whether op must keep its place when a pass moves the ops around it: a
 * collective, a send or recv, an instances op (every rank of a stage
 * issues its collectives in one order). */
bool ir_op_fixed(const ir_op *op);
/* v, or the value the renames of v were made from: constrains of one
 * operand to its own local type, which after partitioning hold the same
 * bytes (real moves are collectives there; memplan.c gives them one
 * buffer). */
const ir_value *ir_renamed_from(const ir_value *v);

/* Infers the result type of code applied to operands of the given types.
 * attrs must be set as the op table says (axis may be negative here: it is
 * normalised in place). On a shape or dtype error returns false and writes
 * a message for the user (lowercase, no final period) into err. */
bool ir_infer(const ir_mesh *mesh, ir_opcode code, const ir_type *const *in, int nin,
              ir_attrs *a, ir_type *out, char *err, size_t errlen);

/* Infers the result type and appends the op; NULL with err set on error. */
ir_value *ir_emit(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                  ir_attrs *a, char *err, size_t errlen);

void ir_add_output(ir_module *m, const char *name, ir_value *v, su_loc loc);
void ir_add_update(ir_module *m, ir_value *src, ir_value *v, ir_value *grad);

/* Writes the textual form. */
void ir_print(const ir_module *m, su_buf *out);
/* The name each value prints with ("%x", "%x.1", "%4"), indexed by value
 * id (NULL for an id no op makes), allocated in arena a, so that messages
 * name values as the printed IR does. */
const char **ir_value_print_names(const ir_module *m, su_arena *a);
/* The same names, each made into text when first asked for: for a module
 * of many values of which few are printed (a pipeline stage's kernels).
 * ir_names_get gives value id's name as ir_value_print_names would; all of
 * it lives in arena a. */
typedef struct ir_names {
    su_arena *a;
    int n;              /* value ids 0 .. n - 1 */
    const char **vname; /* by id: its printed name without the %, NULL if numbered */
    int *vnum;          /* by id: its number; -1 if no op makes it */
    const char **text;  /* by id: "%name" or "%N", once asked for */
} ir_names;
void ir_names_init(ir_names *n, const ir_module *m, su_arena *a);
const char *ir_names_get(ir_names *n, int id);

/* Reads the textual form. On a syntax or meaning error returns NULL with the
 * error (file:line:col, source line, caret) recorded in diag. Allocation
 * failures jump to *oom. The result passes ir_verify. */
ir_module *ir_parse(const su_src *src, su_diag *diag, jmp_buf *oom);

/* Checks the module's invariants: operand counts and attributes against the
 * op table, result types against ir_infer, shardings valid for the mesh and
 * dividing their dimensions (global shapes), SSA dominance, outputs and the
 * training loss. Returns true, or false with a message in err. */
bool ir_verify(const ir_module *m, su_buf *err);
/* As ir_verify; on failure *bad_op is the index of the op at fault, or -1
 * when the fault is not one op's (the mesh, outputs, training). */
bool ir_verify_at(const ir_module *m, su_buf *err, int *bad_op);

#endif
