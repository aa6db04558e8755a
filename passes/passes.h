/* passes.h: the transformations IR -> IR (DESIGN.md §3), one file each.
 *
 * Each pass takes the module and a pass context (allocation failures jump to
 * ctx->oom; messages for the user go to ctx->err) and returns false on
 * failure. The pipeline is the straight list of calls in pass_run_pipeline. */
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
 * cannot be differentiated. */
bool pass_autodiff(ir_module *m, pass_grads *grads, su_buf *err);

/* Sharding propagation (propagate.c). Gives every value of the logical
 * module m a sharding: annotations (IR_SH_FIXED) stay as they are; every
 * other value gets IR_SH_AUTO by per-op rules run forward and backward to a
 * fixed point, preferring the choice that needs no communication, and
 * replicated where no rule reaches. Deterministic. Never partial: partial
 * values exist only inside the partitioner. When ex is not NULL, fills it
 * (allocated in m's arena). Returns false with a message in err on a
 * contradiction no rule can resolve (none is known today). */
bool pass_propagate(ir_module *m, pass_explain *ex, su_buf *err);

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
 * semantics say. False with a message naming the op on failure: a plan that
 * fails it is a compiler bug. */
bool pass_verify_schedule(const ir_module *m, su_buf *err);

/* The pipeline split (pipeline.c). From a partitioned module with a
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
    su_arena arena;
} pass_pipeline;
/* False with a message in err when the module cannot be pipelined (an op
 * that mixes batch rows, a param shared by stages, ...). */
bool pass_pipeline_split(const ir_module *m, pass_pipeline *out, su_buf *err);
void pass_pipeline_free(pass_pipeline *pp);
/* Runs the stages' programs together and proves that every recv gets the
 * message (tag and type) its stage expects and that no stage waits forever,
 * a send waiting for its recv (rendezvous, the strictest semantics any
 * communicator has). False with the stages and ops in err. */
bool pass_verify_p2p(ir_module *const *stage, int n, su_buf *err);

/* Gradient buckets (bucket.c): in a partitioned training step, groups the
 * collectives that synchronise gradients (all_reduce, and reduce_scatter
 * where the blocks are contiguous) into buckets of at most max_bytes, one
 * collective each, issued when the bucket's last gradient is complete.
 * max_bytes <= 0 or a module without updates: nothing changes. */
bool pass_bucket(ir_module *m, int64_t max_bytes, su_buf *err);

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
    int64_t arena_bytes;      /* the arena each rank allocates: its peak */
    /* Per rank: the params and optimizer states held, the gradients as the
     * optimizer reads them (after synchronisation: sharded under ZeRO-2
     * and 3), and the most bytes of everything else live at once
     * (activations, their gradients, gathered params, temporaries). */
    int64_t params, optimizer_state, gradients, activations;
    su_arena arena;
} pass_memplan;
/* Plans m's memory into *mp (free it with pass_memplan_free, also after a
 * failure). False with a message in err when m is not partitioned. */
bool pass_plan_memory(const ir_module *m, pass_memplan *mp, su_buf *err);
void pass_memplan_free(pass_memplan *mp);
/* Proves the plan sound: every buffer aligned and inside the arena, and no
 * two buffers sharing bytes while both live. False with the two buffers in
 * err. */
bool pass_memplan_check(const ir_module *m, const pass_memplan *mp, su_buf *err);

/* The report (report.c): per stage, FLOPs, bytes sent and the collectives
 * (and sends and recvs) in program order, as a table (json false) or one
 * JSON object. stages: the program of each stage (one module, stage -1,
 * without a pipeline); pp: the pipeline split's schedule and bubble, or
 * NULL. */
void pass_report(ir_module *const *stages, int n, const pass_pipeline *pp, bool json,
                 su_buf *out);

/* Local FLOPs of one op of a partitioned module (counting rules in
 * report.c). */
double pass_op_flops(const ir_op *op);
/* Bytes one rank sends in a collective of code over `ranks` ranks, as
 * nccl-tests counts them (0 for anything but a collective). */
double pass_comm_bytes(ir_opcode code, const ir_type *in, const ir_type *out, int64_t ranks);
/* Bytes one rank sends for op (0 for anything but a collective). */
double pass_op_bytes(const ir_module *m, const ir_op *op);

#endif
