/* passes.h: the transformations IR -> IR (DESIGN.md §3), one file each.
 *
 * Each pass takes its module (allocation failures jump to the module's oom)
 * and a buffer for messages, and returns false on failure. The pipeline is
 * the straight list of pass_run_pipeline (passes.c, at the end of this
 * header); the API, the report, codegen and --emit only read its result. */
#ifndef SHARDC_PASSES_H
#define SHARDC_PASSES_H

#include "../ir/ir.h"

/* Why each value has its sharding, and why each collective exists: the
 * record behind --explain-sharding. Strings live in the module's arena. */
typedef struct pass_explain {
    int nvalues;            /* = the logical module's next_id */
    const char **why;       /* [nvalues]: the rule or annotation that decided */
    bool *tie;              /* [nvalues]: a tie between equal choices was broken */
    const char **names;     /* [nvalues]: each value's name in the printed IR */
} pass_explain;

/* The gradient of the loss with respect to each param, as autodiff made
 * it: param[i] (a param op's result) has gradient grad[i] (same type), in
 * the order of the params in the module. Arrays live in the module arena. */
typedef struct pass_grads {
    int n;
    ir_value **param;
    ir_value **grad;
} pass_grads;

/* Autodiff and the optimizer (autodiff.c). For a logical module with
 * `train` (and no updates yet), appends the reverse-mode gradient of the
 * scalar loss with respect to every param (ops in phase backward), then
 * the optimizer's update of every param (phase optimizer; its state as
 * `state` sources), and records each new value as an update. A module
 * without train is left as it is. Runs before sharding propagation, so
 * gradients get shardings like any other value. When grads is not NULL it
 * receives the gradients. False with a message in err when the module
 * cannot be differentiated, and in *at (when at is not NULL) the place in
 * the source at fault: the op no rule covers, or the loss's (line 0: none
 * known). */
bool pass_autodiff(ir_module *m, pass_grads *grads, su_buf *err, su_loc *at);

/* Seeded inputs (input_init.c). On the logical module, gives every i32
 * input without an init the distribution an absent input is made from:
 * uniform(0, N), N the least of the table rows and logit classes its ids
 * index (through reshape, transpose and constrain); an input that indexes
 * nothing, and every float input, keeps none. So the seeded data depend on
 * the program only, not on the mesh. False with a message in err on a
 * partitioned module. */
bool pass_input_init(ir_module *m, su_buf *err);

/* Scalar arithmetic made once (simplify.c). On the logical module: an op
 * of rank 0 that computes an elementwise function (a constant, the
 * arithmetic, comparisons and math of ops.def; not dropout, not a source)
 * and that an earlier op computes alike (opcode, attributes, type,
 * sharding, operands, phase; repetition unless made per step) is dropped
 * and read through the earlier one; two float constants added,
 * subtracted, multiplied, divided, their max or min, or one negated,
 * become the constant they make, rounded as the backends compute it; then
 * the scalar ops nothing reads go. Returns the ops dropped. */
int pass_simplify(ir_module *m);

/* Sharding propagation (propagate.c). Gives every value of the logical
 * module m a sharding: annotations (IR_SH_FIXED) stay as they are; every
 * other value gets IR_SH_AUTO by per-op rules run forward and backward to a
 * fixed point, preferring the choice that needs no communication, and
 * replicated where no rule reaches. Deterministic. Never partial: partial
 * values exist only inside the partitioner. When ex is not NULL, fills it
 * (allocated in m's arena). Returns false with a message in err on a
 * contradiction no rule can resolve (none is known today). */
bool pass_propagate(ir_module *m, pass_explain *ex, su_buf *err);

/* Whether v's sharding is the user's annotation, or v is a transpose or
 * cast of a value whose is (a weight's transpose in the backward). */
bool pass_annotated(const ir_value *v);

/* Prints, for each value, its sharding and the reason (one line a value). */
void pass_explain_print(const ir_module *m, const pass_explain *ex, su_buf *out);

/* SPMD partitioning (partition.c). From the logical module m, whose values
 * all have shardings (pass_propagate), makes the partitioned module *out
 * (m->partitioned set, local shapes): each op becomes its local op, and
 * where an operand's sharding differs from what the op needs, the cheapest
 * resharding by bytes moved is inserted (all_gather, reduce_scatter,
 * all_reduce, all_to_all, or a local slice); partial results are resolved
 * to the value's sharding. *why (when why is not NULL) gets, per value id of
 * *out, the reason for each collective and slice (NULL for other values).
 * The program is SPMD: one module for every rank, parameterised by the
 * rank's mesh coordinates. Returns false with a message in err on failure
 * (an internal error: every valid logical module partitions). */
bool pass_partition(const ir_module *m, const pass_explain *ex, ir_module **out,
                    const char ***why, su_buf *err);

/* The static schedule verifier (sverify.c): runs the partitioned program of
 * every stage once for all its ranks and proves that each collective's
 * group lies within one stage and agrees on kind, axes, dtype, element
 * count and order (one SPMD program per stage), and that every collective
 * and slice turns its operand's sharding into its result's exactly as its
 * semantics say. False with a message naming the op on failure, and its
 * place in *at when at is not NULL: a compiled model that fails it is a
 * compiler bug, partitioned IR from a file the user's error. */
bool pass_verify_schedule(const ir_module *m, su_buf *err, su_loc *at);

/* Partial sums added before they are reduced (combine.c): an add or sub
 * of two summing collectives (all_reduce, reduce_scatter) of the same
 * kind, axes and type, read by nothing else, becomes one collective of
 * the locally added operands. Run by pass_partition; why (by value id,
 * may be NULL) gets each new collective's reason. Returns how many. */
int pass_combine_sums(ir_module *m, su_vec *why);
/* combine.c's batch and rows rules alone, on a stage's program after the
 * pipeline split (where pass_combine_sums leaves them): each microbatch's
 * weight gradient one product over its local rows, and its bias's or
 * norm gain's gradient one sum over them. Run before the buckets.
 * Returns how many. */
int pass_combine_batch(ir_module *m);

/* Attention's backward without the [S, T] probabilities (attn_grad.c):
 * autodiff's form around each attn_probs becomes attn_stats, attn_dq,
 * attn_dk and attn_dv, on a partitioned module. Run by pass_partition.
 * Returns how many. */
int pass_attn_grad(ir_module *m);

/* The input gradients of layernorm and rmsnorm as one op each
 * (norm_grad.c): autodiff's form from dy * g to dx becomes layernorm_dx or
 * rmsnorm_dx, on a partitioned module. Run by pass_partition. Returns how
 * many. */
int pass_norm_grad(ir_module *m);

/* Cross-entropy's gradient from the forward's log-sum-exp (xent_grad.c):
 * cross_entropy_grad(logits, labels) takes cross_entropy_lse(logits),
 * made just after the forward's cross_entropy of the same logits, as its
 * third operand, on a partitioned module. Run by pass_partition. Returns
 * how many gradients. */
int pass_xent_grad(ir_module *m);

/* Each rank computes only the part of a value it keeps (narrow.c): a
 * slice of a value nothing else reads becomes the value's op on slices of
 * its operands, where slicing commutes with that op (pointwise ops,
 * matmul, reductions and softmax over another axis, the norms and their
 * row statistics, transpose, attention along a leading dim), on a
 * partitioned module. Run by pass_partition
 * last. Returns how many ops it narrowed. */
int pass_narrow(ir_module *m);

/* f32 matmuls as products of bf16 parts (parts.c; shardc --f32-matmul
 * bf16x3): each matmul of f32 operands and result reads split3's parts of
 * them (ops.def), on each stage's program after the buckets. Returns how
 * many matmuls. */
int pass_matmul_parts(ir_module *m);

/* Transposes that swap the last two dims of a float value read only by
 * matmuls folded into them (fold.c): each such matmul reads the
 * transpose's operand with its trans bit (IR_A_TRANS); the transposes are
 * dropped. Run on each stage's program before the buckets. Returns how
 * many operands were folded. */
int pass_fold_transposes(ir_module *m);

/* Adds to uses (by value id) the reads of m's outputs, updates (the
 * source, the new value, the gradient) and loss: what a rewrite must keep
 * however few ops read it (fold.c). */
void pass_count_kept_reads(const ir_module *m, int *uses);
/* Whether op t is a transpose that swaps dims -3 and -2 of its float
 * operand (rank >= 3), heads at most PASS_ATTN_MAX_WIDTH wide: the
 * transpose between [.., S, H, d] and [.., H, S, d] that fold.c folds into
 * attention (heads_inner). */
bool pass_swaps_heads(const ir_op *t);

/* The pipeline split (pipesplit.c). From a partitioned module with a
 * pipeline, one program per stage of the pipeline axis (m->stage set in
 * each): its chunks of the pipelined repeat for every microbatch, in the
 * order of the schedule, with send and recv between stages, gradients
 * accumulated over the microbatches and the optimizer after the last. A
 * task is one chunk's forward or backward of one microbatch. */
typedef struct pass_task {
    bool forward;
    int chunk;          /* 0 .. stages x chunks per stage - 1; runs on chunk % stages */
    int mb;
} pass_task;
typedef struct pass_pipeline {
    int nstages;
    ir_module **stage;      /* [nstages] */
    int *ntasks;            /* [nstages] */
    pass_task ***task;      /* [nstages][ntasks]: each stage's schedule */
    /* The schedule's idle time over its ideal compute time with equal
     * per-chunk costs: (P-1)/M for gpipe and 1f1b, (P-1)/(V M) interleaved. */
    double bubble;
    int nshared;            /* the stages whose middle microbatches were held once
                             * from the split to the verifier (instances.c) */
    int nsplit_held;        /* the stages whose middle microbatches' tasks the split
                             * made as placeholders (pass_pipeline_split_held) */
    int nreps;              /* the pipelined repeat's repetitions */
    int *first_rep;         /* [nstages * chunks + 1]: chunk c runs repetitions
                             * first_rep[c] .. first_rep[c + 1] - 1 (chunk c on stage
                             * c % nstages) */
    su_arena arena;
} pass_pipeline;
/* False with a message in err when the module cannot be pipelined (an op
 * that mixes batch rows, a param shared by stages, ...), and in *at the
 * place in the source at fault (line 0: none known). */
bool pass_pipeline_split(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at);
/* The same, with held: each stage's middle microbatches' tasks (3 .. M -
 * 2, PASS_HELD_TEMPLATE + 1 on) made as placeholders (an `instances` op of
 * no run, the task's stamp) for pass_share_instances to take as copies of
 * microbatch 2's, their sends and receives made as they are unheld (the
 * sends reading microbatch 2's values); a stage that reads a middle
 * microbatch's value otherwise (an output of every microbatch's rows, an
 * op made once from every microbatch's) is made again unheld, with the
 * others held (out->nsplit_held counts the stages held). */
bool pass_pipeline_split_held(const ir_module *m, pass_pipeline *out, su_buf *err, su_loc *at,
                              bool held);
/* The microbatch whose instance of a task a middle microbatch's is held
 * as (instances.c). */
enum { PASS_HELD_TEMPLATE = 2 };
void pass_pipeline_free(pass_pipeline *pp);
/* Runs the stages' programs together and proves that every recv gets the
 * message (tag and type) its stage expects and that no stage waits forever,
 * a send waiting for its recv (rendezvous, the strictest semantics any
 * communicator has). False with the stages and ops in err. */
bool pass_verify_p2p(ir_module *const *stage, int n, su_buf *err);

/* A pipeline stage's middle microbatches held once (instances.c): on a
 * stage program as the split makes it (every op stamped with its task and
 * microbatch), proves that each microbatch 3 .. M - 2 is microbatch 2's
 * program but for its own values and the offsets and tags that count
 * microbatches, then takes their ops out, each run of them one
 * `instances` op (m->shared says what each stands for). Whether it did:
 * a stage that differs, a pipeline of fewer than 5 microbatches, or
 * a program without stamps (--unroll) stays as it was. Bucket,
 * matmul-parts and the verifier's per-stage checks run on such a
 * program; every other pass reads the program expanded. */
bool pass_share_instances(ir_module *m);
/* Whether m holds a placeholder of a held split (pass_pipeline_split_held)
 * that pass_share_instances did not take out (its proof failed there): the
 * split is to be made again unheld. */
bool pass_instances_placeholders(const ir_module *m);
/* Puts the middle microbatches back (m->shared then NULL), each a copy of
 * microbatch 2's ops as the passes left them: the program the passes
 * would have made of the unrolled one. Nothing to do without m->shared.
 * False with an internal error in err when microbatch 2's ops no longer
 * match what was taken out (m stays as it was). */
bool pass_expand_instances(ir_module *m, su_buf *err);
/* What pass_expand_instances_map made of a held program: for op i of the
 * program expanded, src[i], the index in the held program of the op it
 * is (kept, mb[i] -1) or of microbatch 2's op it copies (for microbatch
 * mb[i]); and each operand of a kept op it changed (the last
 * microbatch's adds to the running sums, which read microbatch 2's
 * values while held and microbatch M - 2's expanded): rw[k].op, op
 * rw[k].held of the held program, had rw[k].old as its operand rw[k].at.
 * Free it with pass_expansion_free. */
typedef struct pass_rewrite {
    ir_op *op;
    int held, at;
    ir_value *old;
} pass_rewrite;
typedef struct pass_expansion {
    int *src, *mb;
    int n;
    int microbatches;
    pass_rewrite *rw;
    int nrw;
} pass_expansion;
/* pass_expand_instances, with the map of what came from where (zeroed
 * when m was not held). */
bool pass_expand_instances_map(ir_module *m, pass_expansion *map, su_buf *err);
void pass_expansion_free(pass_expansion *map);
/* Whether held program m (no m->shared: any) still stands for its
 * middle microbatches as microbatch 2's: no op made once (not a task's,
 * a send's or receive's, or the outputs' gathering's) reads a value of
 * microbatch 2's, which the split never makes and a pass that moved a
 * task's op out of its task would (the expanded program would read
 * microbatch 2's value alone where the unrolled one read each middle
 * microbatch's). False with the op's index in *bad and an internal error
 * in err. */
bool pass_instances_verify(const ir_module *m, su_buf *err, int *bad);
/* For a held program: each value of microbatch 2 that a middle
 * microbatch reads (the copy of an op of microbatch 2 that reads
 * microbatch 1's value at a place reads microbatch 2's there), hidden in
 * the instances ops: count[id] += the reads, at[id] = the index of the
 * latest instances op holding one (at least what it was). Arrays of the
 * module's next_id; false when the held program is malformed. */
bool pass_instances_hidden(const ir_module *m, int *count, int *at);
/* The sends and receives of a stage program in the order it runs them,
 * a held program's middle microbatches' too (their ops microbatch 2's, the
 * tag stepped as the expansion steps it): *out malloc'd (the caller frees
 * it), the count returned, -1 when the held program is malformed. index:
 * the op's index in the program expanded. */
typedef struct pass_p2p_op {
    const ir_op *op;
    int64_t tag;
    int index;
} pass_p2p_op;
int pass_instances_p2p(const ir_module *m, pass_p2p_op **out);

/* Gradient buckets (bucket.c): in a partitioned training step, groups the
 * collectives that synchronise gradients (all_reduce, and reduce_scatter
 * where the blocks are contiguous) into buckets of at most max_bytes, one
 * collective each, issued when the bucket's last gradient is complete.
 * max_bytes <= 0 or a module without updates: nothing changes. */
bool pass_bucket(ir_module *m, int64_t max_bytes, su_buf *err);

/* A sum's all-reduces as one (join_sums.c): in each tree of scalar adds
 * of the optimizer phase (clip's norm), the partial values that
 * all-reduces of sum over the same axes make whole are added first and
 * all-reduced once, and an all-reduce of an all-reduce is one over both
 * axes sets. Run by the bucket pass, on each stage's program, before the
 * buckets. Returns the all-reduces saved. */
int pass_join_sums(ir_module *m);

/* What reads a sibling sum's result, between it and the sum whose kernel
 * it joins (fuse.h: a layernorm's bias gradient beside its gain's), moves
 * to after that sum (siblings.c): an all-reduce, a pipeline's add to the
 * sum over microbatches. Run by the bucket pass, on each stage's program,
 * before the buckets. Returns the sums whose readers moved. */
int pass_sink_siblings(ir_module *m);

/* A layernorm's (rmsnorm's) gain and bias gradients, column sums over
 * the rows of its input gradient's row op, each as partial sums over
 * runs of rows (axis 1 of [P, R, D], in f32), which the fusion gives to
 * that row op's kernel (fuse.h, a norm's column sums), and the sum of
 * those (norm_cols.c). Run by the bucket pass, on each stage's program
 * outside pipelines, after the sibling sums. Returns the norms whose sums
 * it split. */
int pass_norm_cols(ir_module *m);

/* Runs fn(ctx, s, err) for each stage s of n at once, on a thread per
 * processor (at most 16; su_processors), each with an error buffer of its
 * own whose allocation failures stay on its thread: the index of the first
 * stage (in order) whose fn returned false, with its message appended to
 * err, or -1. An allocation failure in a job jumps to err->oom once all
 * are done. fn must touch only what stage s owns. */
int pass_for_stages(int n, bool (*fn)(void *ctx, int s, su_buf *err), void *ctx, su_buf *err);

/* The memory plan (memplan.c): one arena per rank, each value of a
 * partitioned module at an offset in it; buffers are shared by values that
 * are the same bytes (reshape, constrain, in-place updates) and reused once
 * dead. Lifetimes are op indices: a buffer is live from start (written) to
 * end (last read), inclusive; start -1 for params and states (kept across
 * runs), end = the op count for what the runtime reads after the run. */
#define PASS_MEM_ALIGN 256
typedef struct pass_memplan {
    int nvalues;              /* the module's next_id + 1 */
    int32_t *buf;             /* [nvalues]: a value's buffer; -1: no op defines it */
    int nbuf;
    int64_t *offset, *bytes;  /* [nbuf]: offsets multiples of PASS_MEM_ALIGN */
    int64_t *start, *end;     /* [nbuf]: the lifetime */
    int32_t *view_of;         /* [nbuf]: the buffer whose bytes this one is a
                               * part of (a gradient extracted from its
                               * bucket), -1 for one of its own */
    int64_t arena_bytes;      /* the arena each rank allocates: its peak */
    /* Per rank: the params and optimizer states held, the gradients as the
     * optimizer reads them (after synchronisation: sharded under ZeRO-2
     * and 3), and the most bytes of everything else live at once
     * (activations, their gradients, gathered params, temporaries). */
    int64_t params, optimizer_state, gradients, activations;
    /* The peak reconciled: the op at which the most bytes besides params
     * and states are live (-1: none), those bytes that are not gradients
     * and those that are; the arena's other bytes are gaps left between
     * buffers (a freed buffer's place taken by a smaller one) and the
     * alignment of each to PASS_MEM_ALIGN. */
    int64_t fullest_op, fullest_live, fullest_grads;
    /* The op whose result last raised the arena's top (-1: the params and
     * states alone reach it): the placement of a module whose ops from
     * some op on change cannot end lower than this plan's when that op
     * comes after it (pass_fuse_planned's tries). */
    int64_t top_raised_at;
    /* The fewest bytes any placement of these buffers and lifetimes can
     * take: the params' and states', then the most bytes (each aligned to
     * PASS_MEM_ALIGN) live at one op. arena_bytes less it is what the
     * placement lost to gaps. */
    int64_t least_bytes;
    /* pass_fuse_planned's: the plan without register reuse was not placed,
     * its least_bytes no fewer than the plan with it took. */
    bool unplaced_without_reuse;
    su_arena arena;
    su_arena scratch;         /* what making the plan needs (freed once it is
                               * made, by pass_memplan_free after a failure) */
} pass_memplan;
/* Plans m's memory into *mp (free it with pass_memplan_free, also after a
 * failure). False with a message in err when m is not partitioned. */
bool pass_plan_memory(const ir_module *m, pass_memplan *mp, su_buf *err);
/* As pass_plan_memory, for a plan whose fused groups f (passes/fuse.h, of
 * m; NULL: none) also run as one kernel each at their anchor: a value a
 * group reads from outside, or stores, stays live until the anchor, and a
 * new param or state takes its old value's memory only where the kernel
 * order allows it too (memplan.c). */
struct pass_fusion;
bool pass_plan_memory_fused(const ir_module *m, const struct pass_fusion *f, pass_memplan *mp,
                            su_buf *err);
/* The fusion pass (passes/fuse.h) with its memory plan, as a plan with
 * kernels is built: each run of optimizer groups becomes a multi-tensor
 * group only where that does not raise the arena (keeping what a run reads
 * until its last op can: ZeRO's slices of params and gradients), decided
 * run by run in program order, each time against the plan without it
 * (the fusion's walk, which decides every other group, is done once:
 * pass_fuse_walk_new; each try only gathers the runs anew and plans the
 * memory; a run that starts after the op that last raised the arena's
 * top is kept untried: the plan is the same up to its first op, so its
 * groups apart cannot end lower); then results taking their kernel's dead
 * register operands' buffers (memplan.c) are kept only where that does
 * not raise the arena either (f->no_register_reuse). *f and *mp as
 * pass_fuse and pass_plan_memory_fused make them (free both, also after a
 * failure; mp may be NULL when only the groups are wanted). */
bool pass_fuse_planned(const ir_module *m, struct pass_fusion *f, pass_memplan *mp, su_buf *err);
/* pass_fuse_planned of a stage whose middle microbatches are held once
 * (m->shared; without, the same as pass_fuse_planned): the fusion's walk
 * runs on the held program, each middle microbatch's groups then copies
 * of microbatch 2's (pass_fuse_walk_held), and m is expanded. The groups
 * and plan are those pass_fuse_planned makes of m expanded. */
bool pass_fuse_planned_held(ir_module *m, struct pass_fusion *f, pass_memplan *mp, su_buf *err);
void pass_memplan_free(pass_memplan *mp);
/* mp's figures (its arena's bytes, what fills it, its fullest op, ...)
 * without its tables: nothing to free, and no value or buffer in it. */
pass_memplan pass_memplan_figures(const pass_memplan *mp);
/* Proves the plan sound: every buffer aligned and inside the arena, and no
 * two buffers sharing bytes while both live. False with the two buffers in
 * err. */
bool pass_memplan_check(const ir_module *m, const pass_memplan *mp, su_buf *err);
/* The plan as text (--print-after=memplan): the arena and what is in it,
 * then one line per value with a buffer: its bytes, offset and lifetime. */
void pass_memplan_print(const ir_module *m, const pass_memplan *mp, su_buf *out);

/* The report (report.c): per stage, FLOPs, bytes sent and the collectives
 * (and sends and recvs) in program order, as a table (json false) or one
 * JSON object. stages: the program of each stage (one module, stage -1,
 * without a pipeline); pp: the pipeline split's schedule and bubble, or
 * NULL. */
typedef struct pass_hw pass_hw; /* below */
enum { PASS_HW_MAX_POINTS = 16 }; /* pass_hw.matmul_eff */
/* mp: each stage's memory plan, as the plan holds it (the pipeline's
 * memplan pass); its arena is peak_bytes. fusion: each stage's groups as
 * the plan's kernels run them (the fuse pass's, pass_fuse_planned), which
 * the timeline then costs; NULL: it fuses each stage itself (pass_fuse). mem_limit > 0 (--mem-limit):
 * each stage's headroom under it, "mem_limit" and "headroom" in the JSON. With the step time estimated on
 * hw (pass_timeline) at the end of the table and as "estimate":
 * {"hardware", "step_ms"} before "stages" in the JSON; hw NULL: none. */
void pass_report_on(ir_module *const *stages, int n, const pass_pipeline *pp,
                    const pass_memplan *mp, const struct pass_fusion *fusion,
                    const pass_hw *hw, int64_t mem_limit, bool json, su_buf *out);
/* What the report prints of stage s of m (its memory plan mp), kept apart
 * from the program: its FLOPs, bytes sent, collectives, memory figures,
 * ranks and inputs, so that the program can go before the report is
 * written (passes.c, a report-only compilation). pass_report_from then
 * writes what pass_report_on writes of the stages these were made of:
 * stages their programs, or what is left of them (their mesh, pipeline
 * and stage), lanes their pass_lane_make's (with hw; NULL: no estimate). */
typedef struct pass_stage_cost pass_stage_cost;
struct pass_lane;
pass_stage_cost *pass_stage_cost_make(const ir_module *m, int s, const pass_memplan *mp,
                                      jmp_buf *oom);
void pass_stage_cost_free(pass_stage_cost *c);
void pass_report_from(ir_module *const *stages, int n, const pass_pipeline *pp,
                      pass_stage_cost *const *cost, struct pass_lane *const *lanes,
                      const pass_hw *hw, int64_t mem_limit, bool json, su_buf *out);

/* Local FLOPs of one op of a partitioned module (counting rules in
 * cost.c). */
double pass_op_flops(const ir_op *op);
/* The FLOPs of an attention pair's kernel (fuse.h) of attn_dk op dk:
 * attn_dk's and attn_dv's but for attn_dv's scores, which it shares. */
double pass_attn_pair_flops(const ir_op *dk);
/* Bytes one rank sends in a collective of code over `ranks` ranks, as
 * nccl-tests counts them (0 for anything but a collective). */
double pass_comm_bytes(ir_opcode code, const ir_type *in, const ir_type *out, int64_t ranks);
/* A collective or a send/recv of a partitioned module, as one rank sees it. */
typedef struct pass_coll {
    const ir_op *op;
    int64_t elements;   /* the buffer counted (all_gather: the gathered output) */
    int64_t ranks;      /* of the collective; 2 for a send or recv */
    double bytes;       /* sent by this rank (a recv: 0; its send counts them) */
} pass_coll;
/* Whether op communicates, and then what (in *c). */
bool pass_collective(const ir_module *m, const ir_op *op, pass_coll *c);
/* Bytes one rank sends for op (0 for anything but a collective). */
double pass_op_bytes(const ir_module *m, const ir_op *op);
/* Whether rank r runs stage s of m (every rank when m has no pipeline:
 * stage -1); ranks are row-major over the mesh, the first axis major. */
bool pass_rank_in_stage(const ir_module *m, int64_t r, int s);
/* "gpipe", "1f1b", "interleaved(V)". */
const char *pass_schedule_name(const ir_pipeline *p, char buf[32]);

/* The classes of memory-bound kernels, each with an efficiency of its
 * own in a hardware profile ("mem_eff_by_class"), by what the kernel
 * does: a kernel is of the highest class (the last here) of its ops'
 * (pass_op_kclass). A reduction over the last dim (sum, mean, amax,
 * softmax), the norms and their gradients and attn_delta are row
 * kernels; a reduction over another dim, a column kernel. The names are the
 * profile's keys (pass_kclass_name). */
typedef enum {
    PASS_KC_ELEMENTWISE,    /* "elementwise": elementwise ops, casts, layout */
    PASS_KC_TRANSPOSE,      /* "transpose" */
    PASS_KC_COLUMN,         /* "column": a reduction over a dim but the last */
    PASS_KC_ROW,            /* "row": over the last dim; norms, softmax */
    PASS_KC_EMBEDDING,      /* "embedding": a table's rows by ids */
    PASS_KC_EMBEDDING_GRAD, /* "embedding_grad" */
    PASS_KC_CROSS_ENTROPY,  /* "cross_entropy": the loss and its gradient */
    PASS_KC_OPTIMIZER,      /* "optimizer": sgd, momentum, adam_m, adam_v, adamw */
    PASS_KC_COUNT
} pass_kclass;
const char *pass_kclass_name(pass_kclass c);
/* The class called name (n bytes), or -1. */
int pass_kclass_find(const char *name, size_t n);
/* The class of an op by its name as ops.def and plan_ops.def spell it
 * (the two agree) and, for a reduction, whether it runs over the last
 * dim: so the compiler's groups and a plan's kernels are classed alike. */
pass_kclass pass_op_kclass(const char *op, bool last_dim);

/* Hardware profiles (timeline.c): the figures an estimated timeline runs
 * on. Peaks are the vendor's dense figures; the efficiencies say what
 * fraction of them kernels and NCCL reach in practice. */
struct pass_hw {
    const char *name;       /* "h100" */
    const char *desc;       /* "NVIDIA H100 SXM, 8 per node, NVLink 4, 400 Gb/s NDR" */
    double tc_flops;        /* f16/bf16 matmul peak, FLOP/s */
    double f32_flops;       /* f32 peak without tensor cores */
    double mem_bw;          /* device memory, bytes/s */
    double intra_bw;        /* per GPU and direction inside a node, bytes/s */
    double inter_bw;        /* per GPU and direction across nodes, bytes/s */
    int node_gpus;          /* consecutive ranks per node */
    double launch_s;        /* per kernel */
    double intra_lat_s, inter_lat_s; /* per collective or message */
    double compute_eff, mem_eff, link_eff;
    double mem_bytes;       /* device memory: the card's total */
    /* Per kernel class (0 entries, 0: compute_eff): a matmul's fraction
     * of its peak by its FLOPs, points (FLOPs, fraction) in increasing
     * FLOPs, interpolated on log FLOPs and held past the ends; attention's
     * and its backward's kernels. */
    int nmatmul_eff;
    double matmul_eff[PASS_HW_MAX_POINTS][2];
    double attn_eff;
    /* a memory-bound kernel's fraction of mem_bw by its class (0: mem_eff) */
    double class_mem_eff[PASS_KC_COUNT];
    /* a collective's or a message's fraction of the link's bandwidth by
     * the bytes it sends, inside a node and across nodes: points (bytes,
     * fraction) as matmul_eff's (0 entries: link_eff) */
    int nintra_eff;
    double intra_eff[PASS_HW_MAX_POINTS][2];
    int ninter_eff;
    double inter_eff[PASS_HW_MAX_POINTS][2];
    /* what measured the efficiencies (a profile file's calibrated_by);
     * NULL or "": not measured (the built-in profiles') */
    const char *calibrated_by;
};
/* The fraction of the link's bandwidth a collective or a message sending
 * these bytes reaches on hw, inside a node or across nodes. */
double pass_hw_link_eff(const pass_hw *hw, bool in_node, double bytes);
/* The fraction of mem_bw a kernel of class c reaches on hw. */
double pass_hw_mem_eff(const pass_hw *hw, pass_kclass c);
/* A matmul of these FLOPs: its fraction of the peak on hw (matmul_eff). */
double pass_hw_matmul_eff(const pass_hw *hw, double flops);
/* The profile called name, or NULL; pass_hw_names lists them ("a100, h100,
 * h200"). The default is pass_hw_default(). */
const pass_hw *pass_hw_find(const char *name);
const char *pass_hw_names(void);
const pass_hw *pass_hw_default(void);

/* The estimated timeline of one step (timeline.c): every stage's program
 * run on hw with a compute stream and a communication stream, as Chrome
 * trace JSON (pid = rank, tid 0 compute, tid 1 communication), and the
 * step time in *step_s. mp: each stage's memory plan ([n]; NULL: none,
 * or a stage's of another module: the bucket rule's views unknown). Rules:
 *   kernel       the ops the CUDA backend fuses into one kernel (pass_fuse,
 *                fuse.h) are one event at the group's last op, named as
 *                the kernel: launch + max(the ops' FLOPs / peak, the bytes
 *                the group reads from outside and stores / memory
 *                bandwidth), on the compute stream, after what it reads;
 *   compute op   any other: launch + max(FLOPs / peak, bytes read and
 *                written / memory bandwidth), on the compute stream,
 *                after its operands. The peak is the tensor cores' for a
 *                16-bit matmul or attention, else the f32 one, times the
 *                class's efficiency: a matmul's from the profile's
 *                matmul_eff by its FLOPs, attention's (and its
 *                backward's) attn_eff, else compute_eff; memory
 *                bandwidth times mem_eff, or for a generated kernel
 *                (not cuBLASLt's or attention's) its class's
 *                (pass_hw_mem_eff);
 *   source       an input (made on the device from the seed) or a const
 *                (a memset) each step: a kernel writing its bytes, of
 *                class elementwise; params and states cost nothing;
 *   bucket       an insert into a gradients' bucket or an extract out of
 *                it, as the CUDA backend runs them: nothing where the
 *                value is a view of its columns of a one-row bucket (the
 *                memory plan mp placed it there), else a copy of the
 *                value (launch + its bytes read and written / memory
 *                bandwidth), and of the bucket first where an insert's
 *                result is not in its bucket's buffer; with mp NULL, a
 *                copy of the value;
 *   collective   latency + bytes sent (nccl-tests' count) / (link bandwidth
 *                x pass_hw_link_eff of those bytes) (NVLink when the
 *                group is inside a node), on the
 *                communication stream, after its operand;
 *   send / recv  a rendezvous of the two stages' communication streams,
 *                latency + bytes / (link bandwidth x pass_hw_link_eff).
 * Ranks of one stage run the same program, so they have the same events;
 * past max_events events in all, only each stage's first rank is written
 * (otherData.ranks says which). False with a message in err when the
 * stages' sends and recvs do not pair up (a compiler bug). */
/* What each stage did in the estimated step: seconds its compute stream
 * and its communication stream were busy, and how much of the
 * communication ran while the compute stream was idle (exposed). */
typedef struct pass_stage_time {
    double compute_s, comm_s, exposed_s;
} pass_stage_time;
/* pass_timeline, and each stage's times into stats ([n]; NULL: none). */
bool pass_timeline_stats(ir_module *const *stages, int n, const struct pass_fusion *fusion,
                         const pass_memplan *mp, const pass_hw *hw, pass_stage_time *stats,
                         double *step_s, su_buf *err);
bool pass_timeline(ir_module *const *stages, int n, const struct pass_fusion *fusion,
                   const pass_memplan *mp, const pass_hw *hw, int64_t max_events, su_buf *json,
                   double *step_s, su_buf *err);
/* A stage's ops as the timeline runs them, made from its program and
 * kept apart from it (some 50 bytes an op, each task's instances of a
 * pipeline stage rolled onto one: passes/lane.h), so that the program can go
 * before the stages run in step: stage s of n's, f its groups (NULL, or
 * another program's: made here by pass_fuse), mp its memory plan (or
 * NULL). NULL when pass_fuse fails (why in err). pass_lanes_run runs n
 * stages' lanes as pass_timeline_stats runs their programs, with the same
 * times. */
typedef struct pass_lane pass_lane;
pass_lane *pass_lane_make(const ir_module *m, int s, int n, const struct pass_fusion *f,
                          const pass_memplan *mp, const pass_hw *hw, su_buf *err);
void pass_lane_free(pass_lane *L);
bool pass_lanes_run(pass_lane *const *lanes, int n, const pass_hw *hw, pass_stage_time *stats,
                    double *step_s, su_buf *err);

/* ---- the pipeline (passes.c) ----
 *
 * The straight list of DESIGN.md §3, each pass by its name:
 *   autodiff        the training step's backward and optimizer (logical)
 *   simplify        scalar arithmetic made once, constants folded (logical)
 *   input-init      seeded inputs' distributions (logical)
 *   propagate       every value's sharding (logical)
 *   partition       the SPMD program, with its collectives (then verified)
 *   pipeline-split  one program per pipeline stage (with a pipeline)
 *   bucket          gradient collectives grouped into buckets
 *   matmul-parts    f32 matmuls as products of bf16 parts (only with
 *                   --f32-matmul bf16x3)
 *   verify          the schedule and send/recv verifiers
 *   fuse            groups of ops run as one CUDA kernel each (only when
 *                   the plan holds kernels)
 *   memplan         each stage's memory plan, proved sound
 * A model runs the whole list. Partitioned IR from a file starts at
 * pipeline-split. */
typedef enum pass_id {
    PASS_AUTODIFF,
    PASS_SIMPLIFY,
    PASS_INPUT_INIT,
    PASS_PROPAGATE,
    PASS_PARTITION,
    PASS_PIPELINE_SPLIT,
    PASS_BUCKET,
    PASS_MATMUL_PARTS,
    PASS_VERIFY,
    PASS_FUSE,
    PASS_MEMPLAN,
    PASS_COUNT
} pass_id;
/* A pass's name ("pipeline-split"); pass_find's inverse, -1 for none. */
const char *pass_name(pass_id id);
int pass_find(const char *name, size_t len);
/* "autodiff, input-init, ..., memplan", for messages. */
const char *pass_names(void);

/* Called after each pass named in print_after with what it made, as
 * pass_result_print prints it. */
typedef void (*pass_print_fn)(const char *pass, const char *text, size_t len, void *user);

struct pass_result;
typedef struct pass_options {
    int64_t bucket_bytes;   /* the bucket pass's (0: none) */
    bool no_reasons;        /* propagate and partition keep no reasons (res.ex and
                             * res.why stay empty): --explain-sharding's text is
                             * most of their work */
    bool kernels;           /* the plan holds kernels: fuse runs */
    bool f32_parts;         /* --f32-matmul bf16x3: matmul-parts runs */
    int min_arch;           /* the oldest GPU architecture they are for (sm_NN as
                             * NN; 0: the default targets'): pass_fusion's */
    uint32_t only;          /* bit per pass_id: run only these (--passes), in
                             * the list's order; 0: the whole list */
    uint32_t print_after;   /* bit per pass_id */
    int stop_after;         /* a pass_id, or -1: run to the end */
    bool unshared;          /* every microbatch of a pipeline stage stays in its
                             * program (pass_share_instances is not run): for
                             * tests that compare the two */
    /* The compilation is for its report alone: each pipeline stage, once
     * verified, is fused (with kernels) or has its estimate's groups made,
     * has its memory plan made and checked, and its report's costs and
     * timeline lane made (on hw; NULL: none), and then its program, groups
     * and plan go (the stage left empty but for its mesh and pipeline, its
     * plan's figures kept): a deep pipeline's compile then holds only the
     * stages under way, not every stage whole. pass_report_from writes its
     * report, the same bytes. Not with only, print_after or stop_after. */
    bool report_only;
    /* With report_only, the caller's hand in it: the stages are taken a
     * batch of batch_stages at a time (0: all at once), and each batch,
     * its stages fused or grouped, memory-planned, checked and costed,
     * goes to batch (stages s0 to s1 - 1 of the n, their groups and plans
     * in r->fusion and r->mp, the fusion's min_arch set) before the stages
     * are dropped: a plan built as the stages are made
     * (cg_plan_stream_add). False: it failed, with its message in err;
     * the pipeline then fails as a bug in shardc (PASS_ERR_INTERNAL). The
     * time it takes is not the pass's (pass_result.seconds). */
    bool (*batch)(void *ctx, ir_module *const *stages, int n, int s0, int s1,
                  const struct pass_result *r, su_buf *err);
    void *batch_ctx;
    int batch_stages;
    const pass_hw *hw;
    pass_print_fn print;
    void *print_user;
} pass_options;

/* What the pipeline made. */
typedef struct pass_result {
    ir_module *m;           /* the input: the logical module, changed in place
                             * by autodiff, input-init and propagate; or
                             * partitioned IR from a file */
    pass_explain ex;        /* propagate's reasons (zeroed when it did not run) */
    ir_module *part;        /* partition's module, or NULL */
    const char **why;       /* partition's reasons, per value id of part */
    int nwhy;               /* its entries (the buckets come later) */
    pass_pipeline pipe;     /* pipeline-split's stages (none: nstages 0) */
    bool fused;             /* fuse ran: fusion holds each stage's groups */
    struct pass_fusion *fusion; /* [nplanned] */
    pass_memplan *mp;       /* [nplanned]: each stage's plan, once memplan ran (or
                             * fuse, which plans memory to choose its groups) */
    bool planned;           /* fuse made mp: memplan only checks it */
    /* Without kernels (no fuse), the groups the estimate's timeline
     * times for each stage held once up to then, made from its held
     * program before it was expanded (pass_fuse_held); the others' nops 0
     * (pass_timeline makes those itself). NULL: none. */
    struct pass_fusion *estimate; /* [nestimate] */
    int nestimate;
    /* With report_only, each pipeline stage's report costs and timeline
     * lane ([ncost]; lanes NULL without hw), its program gone. */
    pass_stage_cost **cost;
    struct pass_lane **lanes;
    int ncost;
    int nplanned;           /* the stages fuse or memplan made entries for */
    int last;               /* the last pass that ended, -1: none */
    int failed;             /* the pass that failed, -1: none */
    double seconds[PASS_COUNT]; /* the wall time each pass took (-1: not run) */
} pass_result;

/* The programs the plan holds: the stages, else the partitioned module
 * (else the input). */
ir_module *const *pass_result_stages(const pass_result *r, int *n);

typedef enum pass_status {
    PASS_OK,
    PASS_ERR_INPUT,     /* the model cannot be trained or pipelined (at: where) */
    PASS_ERR_USAGE,     /* --passes asked a pass of a module it does not take */
    PASS_ERR_INTERNAL,  /* a bug in shardc, or invalid partitioned IR from a file
                         * (at: the op at fault, line 0: none known) */
} pass_status;

/* Runs the list (or o->only) on m, into *r (freed by pass_result_free,
 * whatever the status; m stays the caller's). Stops after o->stop_after.
 * A failure gives its message in err, its place in *at (line 0: none
 * known) and the pass in r->failed. */
pass_status pass_run_pipeline(ir_module *m, const pass_options *o, pass_result *r,
                              su_buf *err, su_loc *at);
void pass_result_free(pass_result *r);
/* Frees r's estimate groups (pass_result.estimate), if any. */
void pass_result_drop_estimate(pass_result *r);
/* What pass id made, as --print-after prints it: the module as IR text
 * (each stage's program under a "// ---- stage S of N ----" line once
 * there are stages), fuse's groups as --emit fused-ir prints them,
 * memplan's plans (pass_memplan_print). id must have run. */
void pass_result_print(const pass_result *r, pass_id id, su_buf *out);

#endif
