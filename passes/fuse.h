/* fuse.h: op fusion (DESIGN.md §3.7), the groups that become one CUDA
 * kernel each (codegen/cuda.c).
 *
 * The pass reads a module (partitioned, or not: it only looks at ops,
 * shapes and dtypes) and leaves it unchanged: the grouping lives beside it,
 * indexed by op and value. Three kinds of group:
 *
 *   elementwise  unary and binary ops (NumPy broadcasting), cast, expand,
 *                the *_grad elementwise ops and the optimizer updates, all
 *                with the group's one result shape, its domain; and a
 *                concat of that shape with its branches, the narrows,
 *                concats and elementwise ops of other shapes whose values
 *                only it reads (fuse.c's find_views), computed at the
 *                elements the concat reads; and a transpose that keeps
 *                its last dim last, of the domain's shape, its operand
 *                read where each element comes from (not alone: then it
 *                keeps its own kernel), or of a value of the group of
 *                the domain's shape, element e stored at the place the
 *                transpose moves it to (pass_fuse_domain);
 *   reduce       one single-axis reduction or row op (sum, mean, amax,
 *                softmax, layernorm, rmsnorm, layernorm_dx, rmsnorm_dx,
 *                layernorm_rstd, rmsnorm_rstd, cross_entropy,
 *                cross_entropy_lse, cross_entropy_grad, mse) with the elementwise ops that
 *                feed it fused in front (the prologue, of its operand's
 *                shape) and elementwise ops of its result's shape that
 *                consume it after (the epilogue);
 *   matmul       a matmul (f32, f16, bf16) with the ops cuBLASLt can do
 *                after the product in the same call (its epilogue, the
 *                PASS_EPI_* bits): the add of a bias (a vector of the
 *                result's last dim, broadcast over rows and batches; not
 *                after a matrix @ vector, whose last dim is cuBLASLt's M), the
 *                add of a residual (a value of the result's type:
 *                cuBLASLt's C with beta = 1), in either order, then at
 *                most one relu or gelu, last (cuBLASLt computes
 *                act(A B + C + bias), so nothing adds after it). Each op
 *                of the chain reads the one before, and every value but
 *                the last has that op as its only reader (no output, no
 *                update): cuBLASLt writes only the last. gelu is the tanh
 *                approximation, in runtime/cpu/cpu.c as in cuBLASLt. No CUDA
 *                C is generated for it: the plan's matmul kernel record
 *                carries the epilogue (runtime/plan/plan.h).
 *
 *   A pipeline stage's add of a microbatch's part to its sum over
 *   microbatches (a gradient's, made by the same task for the microbatch
 *   before) joins no matmul's epilogue and no reduction's: in its own
 *   elementwise kernel it writes the new sum over the old one, so the sum
 *   is one buffer through the schedule (memplan.c). Fused after the
 *   product or the reduction, it would be that kernel's result and the old
 *   sum would live until the kernel ran: two sums held from one
 *   microbatch's backward to the next's, and a microbatch's sum in other
 *   places than the one before's.
 *
 *   attention pair  attn_dv and attn_dk of one attention (attn_grad.c's:
 *                the same q, k, dy, statistics and positions, heads at
 *                most PASS_ATTN_MAX_WIDTH wide), attn_dv before attn_dk
 *                with no collective, send or recv between, at most
 *                PASS_FUSE_HOLD ops apart, and nothing between reading
 *                attn_dv's result: one kernel over the key rows computes
 *                both, each score and probability once for the two sums
 *                (codegen/cuda_ops.c); `reduce` is attn_dk's index.
 *
 *   attention with its lse  attention and the attn_lse of the same q, k,
 *                positions and flags after it (attn_grad.c's), on the
 *                same terms as the pair (no collective, send or recv
 *                between, at most PASS_FUSE_HOLD ops apart, nothing
 *                between reading attention's result): the forward's
 *                kernel also writes each row's log-sum-exp from its own
 *                max and sum, so that no kernel runs the scores for it;
 *                `reduce` is attn_lse's index.
 *
 *   a sibling sum  a sum (over an axis but the last) that a group of its
 *                own would make alone joins the column reduction's group
 *                after it that reads its operand, a sum over the same
 *                axis of a value of that shape to a result of its type
 *                (a layernorm's bias gradient, sum(dy), and its gain's,
 *                sum(dy * (x - mean) * rstd)): the kernel reads dy once
 *                for both sums and stores both (fuse.c's join_siblings: dy
 *                read from memory by both, made by no group or by a
 *                third; with no epilogue, the same phase, not the optimizer's,
 *                repetition, stamp and instances epoch, at most
 *                PASS_FUSE_HOLD ops apart with no collective, send or
 *                recv between, and nothing between reading the
 *                sibling's result); `sib` is its op index.
 *
 *   a norm's statistics  a layernorm (rmsnorm) group takes the mean over the
 *                last dim of its x, and layernorm_rstd (rmsnorm_rstd) of
 *                its x and eps, after it (norm_grad.c puts them there) on
 *                an epilogue's terms: its kernel stores each from its own
 *                sums, one value a row; no epilogue op reads them. A
 *                cross_entropy group likewise takes cross_entropy_lse of
 *                its logits (xent_grad.c), stored from the loss's max and
 *                sum.
 *
 *   a norm's column sums  a layernorm_dx (rmsnorm_dx) group of rows up to
 *                PASS_NORM_COLS_MAX_WIDTH wide takes the (at most two)
 *                column groups after it that norm_cols.c made of its
 *                gain's and bias's gradients: each a sum over axis 1 of
 *                [P, R, D] (P R the norm's rows, D their width) with
 *                elementwise ops of that shape before it, reading no
 *                value of the norm's group, of its phase, repetition,
 *                stamp and instances epoch, held briefly, with no
 *                collective, send or recv between and nothing outside
 *                the two groups between them reading a value of either
 *                (fuse.c's join_norm_cols): its kernel takes P blocks,
 *                each a run of R rows, sums each column group's elements
 *                over its rows as it walks them and stores the [P, D]
 *                partial rows (codegen/cuda_strategy.c); `cols` are the
 *                sums' op indices.
 *
 * Attention, embedding, transpose, reshape, slices, buckets, collectives,
 * sources and matmuls with nothing to fold are never in a group (but for
 * the attention pair and the attention with its lse, a concat's
 * branches (the slices among them), and a float constant
 * of rank 0 that only elementwise ops of one elementwise or reduction
 * group read, of its stamp: it joins that group after the walk, and its
 * kernel writes it as a literal, so the CUDA backend fills no buffer for
 * it; fuse.c's absorb_consts). A value of a group that
 * an op outside it, an output or an update reads (or that nothing reads)
 * is stored; any other lives in registers only.
 *
 * Where a group runs: at its last op (its anchor). The pass only groups
 * ops so that no op outside the group between the group's first op and
 * its anchor reads a value of the group, so running every op of the
 * group at the anchor computes what the program order does. A schedule
 * or memory plan built on the groups must keep every value a group reads
 * alive until the anchor.
 *
 * So a group must not grow far: an op joins a group only when the
 * values the group reads from outside stay alive at most PASS_FUSE_HOLD
 * ops past their last reader in program order, and no collective, send
 * or recv lies between (otherwise every microbatch's gradient of a
 * pipeline stage, summed by one add per microbatch, would wait for the
 * last microbatch's add: a larger arena than without kernels).
 *
 * Deterministic: ops are visited in program order, and an op joins the
 * group of one of its operands (the one whose group was last extended)
 * when the rules allow it, else starts a group; other elementwise groups
 * it may join too merge into that one (adam_m and adam_v into adamw's
 * kernel; both operands' producers into mse's). Ops of different phases
 * (forward, backward, optimizer) or pipeline repetitions never share a
 * group, so a pipeline schedule can still order them.
 *
 * Multi-tensor groups (the optimizer). After the walk, the elementwise
 * groups of the optimizer phase are gathered into multi-tensor groups, as
 * PyTorch's fused optimizers and Apex's multi_tensor_apply do: one kernel
 * updates many params, each over its own domain (its part). A run of
 * optimizer groups becomes one group (kind elementwise, nparts > 1, parts
 * the groups it was made of, each complete with its ops, inputs, outputs
 * and anchor) when no part reads a value another part makes, no
 * collective, send or recv lies between the run's first op and its last,
 * no op outside the run in that span reads a value of the run (the whole
 * group runs at its last op), all parts are of one pipeline repetition,
 * and the kernel takes at most PASS_FUSE_MULTI_PARAMS pointers; where the
 * groups repeat (a model's layers), a run holds whole periods and starts
 * where one does, so that the runs are one code (fuse.c). A group
 * the run reads from but that reads nothing of the run (adamw's step
 * count) stays out of it and runs first, on its own; any other group that
 * breaks these rules starts a new run. The group's ops, inputs and outputs
 * are the union of its parts'. Holding what the parts read until the last
 * part can raise the arena (ZeRO's slices of params and gradients): the
 * plan writer keeps a run only where it does not (pass_fuse_planned,
 * passes.h). Elsewhere (forward, backward) groups of different domains
 * stay apart.
 *
 * Totals (the optimizer's sums to scalars: clip's norm). A tensor summed
 * to a scalar (rank 0) is one or more sums, each over an axis of the one
 * before (autodiff sums a [R, C] gradient's squares over R, then over C),
 * each a kernel of its own, and clip's norm has one such chain per param
 * (GPT-2: 148), the sums added up by the epilogues. After the walk, a run
 * of such chains of the optimizer phase becomes one group of kind TOTAL,
 * as multi-tensor groups are: each chain a part (nparts >= 1; parts[r] is
 * the chain's first group, its prologue and first sum, anchor and reduce
 * that sum, and total the op index of the chain's last sum), and the ops
 * after each chain's last sum in its group (the running total's adds, the
 * norm's sqrt) the group's epilogue, which the kernel runs once, in
 * program order, after every part's sum. A chain: sums of f32 results,
 * each but the last read by the next alone and stored by nothing else,
 * the last of rank 0; a run: chains of one repetition with no collective,
 * send or recv between, no value of the run read by an op outside it in
 * its span, and at most PASS_FUSE_MULTI_PARAMS pointers; made where it
 * saves a kernel (two chains, or a chain of two sums). The kernel sums
 * each part flat, in chunks a block each, then the chunks' sums in order
 * (codegen/cuda_strategy.c): another order than the CPU backend's sums
 * over one axis, then the next.
 *
 * i32 arithmetic is elementwise too where a kernel computes exactly what
 * the CPU backend does: add, sub, mul and neg (wrapping), max, min, gt, eq,
 * abs and expand of i32 operands (a transformer's vocabulary-parallel
 * loss compares its labels with the class ids so), and div by a const
 * that is not 0 (truncating; INT32_MIN / -1 is INT32_MIN); not div by a
 * value, whose zero divisor the CPU backend reports, nor the i32
 * reductions: each of those is a kernel of its own (codegen/cuda_ops.c),
 * div's recording a zero divisor in the module's error word.
 *
 * Transposes that only feed a matmul are folded into it before fusion
 * (fold.c: cuBLASLt's TRANSA/TRANSB). Not done: gelu's pre-activation as
 * cuBLASLt's aux output (so a training step, whose gelu_grad reads it,
 * folds only the bias).
 */
#ifndef SHARDC_FUSE_H
#define SHARDC_FUSE_H

#include "../ir/ir.h"

typedef enum {
    PASS_FUSE_ELEMENTWISE,
    PASS_FUSE_REDUCE,
    PASS_FUSE_MATMUL,
    PASS_FUSE_ATTN_PAIR,
    PASS_FUSE_ATTN_LSE,
    PASS_FUSE_TOTAL,
} pass_fuse_kind;

/* Whether group g is one kernel of two attention ops (the pair, or the
 * attention with its lse): its parameters are its main op's operands (the
 * anchor's, attn_dk's; or the first, attention's), one each even where
 * they are one value, then the two results (codegen/cuda_ops.c). */
static inline bool pass_fuse_attn_two(pass_fuse_kind kind)
{
    return kind == PASS_FUSE_ATTN_PAIR || kind == PASS_FUSE_ATTN_LSE;
}

/* The widest attention head the CUDA backend's tiled kernels take
 * (codegen/cuda_ops.c, cg_attention_tiled: 8 chunks of 4 columns for
 * each of 32 threads); the passes that make ops only those kernels run
 * (fold.c, attn_grad.c) and the attention pair check it. */
#define PASS_ATTN_MAX_WIDTH 1024

/* The widest head (q's d, v's dv) of attention's kernels on tensor cores
 * (codegen/cuda_ops.c's WMMA kernels: a warp's 16 rows keep their q, k, v
 * or dy and their sums in fragments). */
#define PASS_ATTN_TC_WIDTH 128

/* Whether the kernel of op, attention or an op of its backward
 * (attn_stats, attn_dq, attn_dk, attn_dv), runs on tensor cores (WMMA,
 * 16 x 16 x 16 tiles, f32 accumulators): its q, k, v and dy operands f16
 * or bf16 alike (and its result, but attn_stats' f32 statistics), d and
 * dv multiples of 16 and at most PASS_ATTN_TC_WIDTH; the GPU sm_70 or
 * newer for f16, sm_80 for bf16 (pass_attn_tc_arch). The timeline times
 * such a kernel at the tensor-core peak. */
bool pass_attn_tensor_cores(const ir_op *op);
/* The oldest architecture (sm_NN as NN) op's tensor-core kernel needs. */
int pass_attn_tc_arch(const ir_op *op);
/* Whether f32 attention op (the forward, attn_lse, or an op of its
 * backward but attn_delta) runs on tensor cores with each f32 as three
 * bf16 parts where every target is sm_80 or newer (codegen's
 * cg_attention_x3; the timeline takes the built-in profiles' GPUs, and a
 * --hw profile's, to be): its rows (q, k, then v or attn_dv's dy, and dy)
 * and result f32, head widths multiples of 16 up to PASS_ATTN_TC_WIDTH. */
bool pass_attn_x3(const ir_op *op);

/* The widest row of a layernorm_dx or rmsnorm_dx whose kernel takes its
 * gain's and bias's column sums (norm_cols.c, fuse.c's norm_cols): a
 * warp's row in codegen's row kernels. */
#define PASS_NORM_COLS_MAX_WIDTH 1024

/* A matmul group's epilogue, bits. */
enum {
    PASS_EPI_BIAS = 1,      /* + bias, of the result's last dim */
    PASS_EPI_RESIDUAL = 2,  /* + residual, of the result's type */
    PASS_EPI_RELU = 4,
    PASS_EPI_GELU = 8,
    PASS_EPI_AUX = 16,      /* with GELU: the value it reads is stored too, read
                             * later (the backward's gelu_grad): cuBLASLt's
                             * GELU input matrix (EPILOGUE_GELU_AUX) */
    PASS_EPI_DGELU = 32,    /* gelu_grad(x, the product): the product times
                             * gelu'(x), x of the result's type read as
                             * cuBLASLt's GELU input matrix (EPILOGUE_DGELU);
                             * the chain's only step */
};

/* A matmul's value that a gelu reads and ops after it read too, stored by
 * the gelu's epilogue (PASS_EPI_AUX): its last dim a multiple of
 * PASS_EPI_AUX_ALIGN (cuBLASLt's rule for the matrix's leading dim). */
#define PASS_EPI_AUX_ALIGN 8

/* How far a group may keep what it reads alive past its last reader in
 * program order, in ops (fuse.h's header). */
#define PASS_FUSE_HOLD 32

/* The most pointer parameters (values read and stored) of a multi-tensor
 * group's kernel: 2 KiB of kernel parameters, half of what every device
 * takes, and the plan's limit (RT_MAX_KPARAMS). Two of GPT-2's layers
 * (12 params, 8 pointers each, and the step count) fit. */
#define PASS_FUSE_MULTI_PARAMS 256

typedef struct pass_fgroup {
    int id;                 /* index in pass_fusion.groups, in order of first op */
    const char *name;       /* "k3_add_gelu": k<id>_ and up to four op names */
    pass_fuse_kind kind;
    int nops;
    int *ops;               /* op indices of the module, in program order */
    int reduce;             /* REDUCE: the op index of the reduction; MATMUL: of
                             * the matmul (the first op); ATTN_PAIR: of
                             * attn_dk (the anchor); ATTN_LSE: of attn_lse
                             * (the anchor); -1 */
    unsigned epilogue;      /* MATMUL: PASS_EPI_* bits */
    const ir_value *bias;   /* MATMUL with PASS_EPI_BIAS: the bias; else NULL */
    const ir_value *residual; /* MATMUL with PASS_EPI_RESIDUAL: the residual */
    int anchor;             /* the last op: where the kernel runs */
    int nin;
    const ir_value **in;    /* read from outside the group, in order of first use */
    int nout;
    const ir_value **out;   /* stored, in program order */
    int nparts;             /* a multi-tensor group: its parts (below); else 0 */
    struct pass_fgroup *parts;
    int run;                /* a multi-tensor group: which of pass_fusion's runs
                             * it is (0 first) */
    int total;              /* a TOTAL group's part: the op index of the sum
                             * that makes its scalar (the chain's last) */
    bool has_sib;           /* REDUCE: a sibling sum joined it (sib, below) */
    int sib;                /* and its op index: a sum over the reduction's axis,
                             * not the last, of a value of the reduction's
                             * operand's shape that the group reads, which the
                             * kernel sums beside the reduction and stores */
    bool has_xgrad;         /* REDUCE of a cross_entropy: its gradient joined it */
    int xgrad;              /* and its op index: cross_entropy_grad of the same
                             * logits and labels with the group's lse, computed
                             * in a second pass over each row; the group's ops
                             * after it of the logits' shape are its chain
                             * (elementwise, reading it), the others the
                             * loss's epilogue */
    int ncols;              /* REDUCE of a layernorm_dx or rmsnorm_dx: the column
                             * sums joined (norm_cols.c's partial sums of its
                             * gain's and bias's gradients, fuse.c's
                             * join_norm_cols), 0 to 2 */
    int cols[2];            /* their op indices: each a sum over axis 1 of [P, R,
                             * D], P R the group's rows, D its width, with the
                             * elementwise ops before it of that shape (its
                             * prologue); the kernel takes P blocks, block p
                             * rows p R .. p R + R - 1, and stores the [P, D]
                             * partial rows */
} pass_fgroup;

typedef struct pass_fusion {
    int ngroups;
    pass_fgroup *groups;
    int nops;               /* the module's op count */
    int *group_of;          /* [nops]: each op's group, -1 for none */
    int nvalues;            /* the module's next_id */
    bool *stored;           /* [nvalues]: a value of a group that is stored */
    int nruns;              /* runs of optimizer groups found fit to be one
                             * multi-tensor group, made or skipped */
    bool no_register_reuse; /* for the memory plan: no result takes the buffer
                             * of an operand its kernel keeps in registers
                             * (memplan.c); pass_fuse_planned sets it where
                             * that reuse raised the arena */
    bool held_walk;         /* the groups of a held program's walk, expanded
                             * (pass_fuse_walk_held), not of a walk of every op */
    int *twin;              /* [ngroups] or NULL: of a held walk's groups copied
                             * (expand_final), each middle microbatch's copy
                             * of a group of microbatch 2's, that group (an
                             * earlier one: the copy's ops are its ops'
                             * copies, in their places); -1 for the others */
    int min_arch;           /* the oldest GPU architecture the kernels are for
                             * (sm_NN as NN; 0: the default targets', 80): the
                             * code generator uses no instruction it lacks */
    su_arena arena;
} pass_fusion;

/* Groups the ops of m into *f (free it with pass_fusion_free, also after a
 * failure). False with a message in err when m is malformed (an operand no
 * earlier op defines). */
bool pass_fuse(const ir_module *m, pass_fusion *f, su_buf *err);
/* As pass_fuse, but leaving the r-th run fit to be a multi-tensor group
 * (r < 64, counted in program order) as separate groups where bit r of
 * skip is set. pass_fuse_planned (passes.h) chooses skip by memory. */
bool pass_fuse_ex(const ir_module *m, uint64_t skip, pass_fusion *f, su_buf *err);
/* As pass_fuse, of a pipeline stage whose middle microbatches are held
 * once (m->shared): walked held, then expanded (pass_fuse_walk_held), so
 * *f is pass_fuse of m expanded, and m is expanded, also after a failure
 * when it got that far. */
bool pass_fuse_held(ir_module *m, pass_fusion *f, su_buf *err);
void pass_fusion_free(pass_fusion *f);

/* Whether sum op a may join the group of sum op b as its sibling (fuse.h's
 * rules for the two ops alone: sums of floats over the same axis, not the
 * last, of operands of one shape, to results of one type, of the same
 * phase, not the optimizer's, repetition and stamp). passes/siblings.c
 * moves what reads a's result to after b, where the kernel stores it. */
bool pass_fuse_siblings(const ir_op *a, const ir_op *b);

/* pass_fuse_ex in two halves, for a caller trying several skips
 * (pass_fuse_planned): the walk that decides every group but the
 * multi-tensor ones, done once (false with a message in err when m is
 * malformed; *w is the caller's to free with pass_fuse_walk_free, also
 * after a failure), and a fusion made from it for one skip, what
 * pass_fuse_ex(m, skip) makes, owning all its memory (free it with
 * pass_fusion_free). The walk reads m, which must outlive it. */
typedef struct pass_fuse_walk pass_fuse_walk;
bool pass_fuse_walk_new(const ir_module *m, pass_fuse_walk **w, su_buf *err);
void pass_fuse_from_walk(pass_fuse_walk *w, uint64_t skip, pass_fusion *f, su_buf *err);
/* pass_fuse_walk_new of a pipeline stage whose middle microbatches are
 * held once (m->shared; without, the same): the walk runs on the held
 * program, then m is expanded (pass_expand_instances). *w stands for the
 * walk of m expanded: pass_fuse_from_walk of it makes what it makes of
 * pass_fuse_walk_new of m, each middle microbatch's groups copies of
 * microbatch 2's (fuse.c: the held program's groups gathered, then
 * copied onto the expanded ops, where that maps; else the walk
 * expanded). False with a message in err, m expanded or not, when m is
 * malformed. */
bool pass_fuse_walk_held(ir_module *m, pass_fuse_walk **w, su_buf *err);
void pass_fuse_walk_free(pass_fuse_walk *w);

/* Whether op i of the group is in front of its reduction (prologue), is
 * the reduction (or the matmul), or comes after it (epilogue); elementwise
 * groups have only PASS_FUSE_MAIN ops. */
typedef enum { PASS_FUSE_PROLOGUE, PASS_FUSE_MAIN, PASS_FUSE_EPILOGUE } pass_fuse_role;
pass_fuse_role pass_fuse_op_role(const pass_fgroup *g, int op_index);
/* Group g's twin (pass_fusion.twin) when g is its copy to the ops'
 * attributes as well (none an offset or tag stepped per microbatch):
 * then what is made of a group's kind, ops, their types and attributes
 * and the places of their values alone (a kernel's code, an estimate's
 * time) is the twin's. -1 otherwise. m is f's module. */
int pass_fuse_twin(const ir_module *m, const pass_fusion *f, int g);

/* The part of multi-tensor group g holding op op_index; g itself for a
 * group without parts; NULL when the op is not g's. */
const pass_fgroup *pass_fuse_part(const pass_fgroup *g, int op_index);

/* Whether op adds a pipeline stage's microbatch to its sum (or max) over
 * microbatches: an add or max of a task (ir_op.task) whose first operand
 * the same task made for another microbatch (pipesplit.c's accumulation).
 * Such an op joins no matmul's or reduction's kernel (above), and the
 * memory plan writes the new sum over the old one (memplan.c). */
bool pass_pipeline_sum(const ir_op *op);

/* Whether op can be an elementwise op of a group (a reduction's
 * prologue, say), as the walk classifies it. */
bool pass_fuse_elementwise(const ir_op *op);

/* Whether gelu_grad op can run in the epilogue of the matmul that makes
 * its dy (cuBLASLt's DGELU: the product 16-bit, read by op alone, uses
 * its readers, x of its type and a last dim a multiple of
 * PASS_EPI_AUX_ALIGN), so that no elementwise kernel makes its result
 * (passes/combine.c's rows rule asks). */
bool pass_fuse_dgelu(const ir_op *op, int uses);

/* An elementwise group's domain, the shape its element e runs over: its
 * anchor's result, or where that is a transpose of a value of the group
 * stored at the places it moves the elements to (fuse.c's
 * out_transpose_fits), that value's. */
const ir_type *pass_fuse_domain(const ir_module *m, const pass_fgroup *g);

/* Whether elementwise group g holds a concat (fuse.c's find_views) or a
 * transpose. */
bool pass_fuse_views(const ir_module *m, const pass_fgroup *g);
/* Whether g's kernel may compute op op_index (of g) at other elements than
 * the one a thread writes, so reading its operands there: a concat, a
 * narrow, a branch's op of another shape than the domain, or an op of g
 * that one of those reads (computed again where it is read). No result
 * of the kernel may take the place of such an operand (memplan.c). */
bool pass_fuse_op_aside(const ir_module *m, const pass_fgroup *g, int op_index);

/* The epilogue's bits as words: "bias, relu" (into buf). */
const char *pass_fuse_epilogue_str(unsigned epilogue, char *buf, size_t size);

/* `--emit fused-ir`: m printed as ir_print does, with a comment line
 * "// kernel NAME: ..." before each group's first op (what it computes,
 * what it reads and stores; a matmul group: "matmul [64, 256] x [256,
 * 1024], epilogue bias, gelu (cuBLASLt)") and "// NAME" (or "// NAME, stored") after
 * each grouped op. Comments run to the end of the line, so the text
 * parses back to m. */
void pass_fusion_print(const ir_module *m, const pass_fusion *f, su_buf *out);

#endif
