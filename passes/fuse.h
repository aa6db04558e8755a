/* fuse.h: op fusion (DESIGN.md §3.7), the groups that become one CUDA
 * kernel each (codegen/cuda.c).
 *
 * The pass reads a module (partitioned, or not: it only looks at ops,
 * shapes and dtypes) and leaves it unchanged: the grouping lives beside it,
 * indexed by op and value. Two kinds of group:
 *
 *   elementwise  unary and binary ops (NumPy broadcasting), cast, expand,
 *                the *_grad elementwise ops and the optimizer updates, all
 *                with the group's one result shape, its domain;
 *   reduce       one single-axis reduction or row op (sum, mean, amax,
 *                softmax, layernorm, rmsnorm, cross_entropy,
 *                cross_entropy_grad, mse) with the elementwise ops that
 *                feed it fused in front (the prologue, of its operand's
 *                shape) and elementwise ops of its result's shape that
 *                consume it after (the epilogue).
 *
 * Matmul, attention, embedding, transpose, reshape, slices, buckets,
 * collectives and sources are never in a group. A value of a group that
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
 * Deterministic: ops are visited in program order, and an op joins the
 * group of one of its operands (the one whose group was last extended)
 * when the rules allow it, else starts a group; other elementwise groups
 * it may join too merge into that one (adam_m and adam_v into adamw's
 * kernel; both operands' producers into mse's). Ops of different phases
 * (forward, backward, optimizer) or pipeline repetitions never share a
 * group, so a pipeline schedule can still order them.
 *
 * Not done: matmul epilogues (bias, activation, residual add) for the
 * cuBLASLt path; i32 arithmetic (only casts from and to i32 and the labels
 * of cross_entropy are fused).
 */
#ifndef SHARDC_FUSE_H
#define SHARDC_FUSE_H

#include "../ir/ir.h"

typedef enum { PASS_FUSE_ELEMENTWISE, PASS_FUSE_REDUCE } pass_fuse_kind;

typedef struct pass_fgroup {
    int id;                 /* index in pass_fusion.groups, in order of first op */
    const char *name;       /* "k3_add_gelu": k<id>_ and up to four op names */
    pass_fuse_kind kind;
    int nops;
    int *ops;               /* op indices of the module, in program order */
    int reduce;             /* REDUCE: the op index of the reduction; -1 */
    int anchor;             /* the last op: where the kernel runs */
    int nin;
    const ir_value **in;    /* read from outside the group, in order of first use */
    int nout;
    const ir_value **out;   /* stored, in program order */
} pass_fgroup;

typedef struct pass_fusion {
    int ngroups;
    pass_fgroup *groups;
    int nops;               /* the module's op count */
    int *group_of;          /* [nops]: each op's group, -1 for none */
    int nvalues;            /* the module's next_id */
    bool *stored;           /* [nvalues]: a value of a group that is stored */
    su_arena arena;
} pass_fusion;

/* Groups the ops of m into *f (free it with pass_fusion_free, also after a
 * failure). False with a message in err when m is malformed (an operand no
 * earlier op defines). */
bool pass_fuse(const ir_module *m, pass_fusion *f, su_buf *err);
void pass_fusion_free(pass_fusion *f);

/* Whether op i of the group is in front of its reduction (prologue), is
 * the reduction, or comes after it (epilogue); elementwise groups have
 * only PASS_FUSE_MAIN ops. */
typedef enum { PASS_FUSE_PROLOGUE, PASS_FUSE_MAIN, PASS_FUSE_EPILOGUE } pass_fuse_role;
pass_fuse_role pass_fuse_op_role(const pass_fgroup *g, int op_index);

/* `--emit fused-ir`: m printed as ir_print does, with a comment line
 * "// kernel NAME: ..." before each group's first op (what it computes,
 * what it reads and stores) and "// NAME" (or "// NAME, stored") after
 * each grouped op. Comments run to the end of the line, so the text
 * parses back to m. */
void pass_fusion_print(const ir_module *m, const pass_fusion *f, su_buf *out);

#endif
