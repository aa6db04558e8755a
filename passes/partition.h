/* partition.h: what the SPMD partitioning's files share (private to
 * passes/; pass_partition in passes.h is the pass):
 *   partition.c          the walk: each logical op to its rule by its
 *                        class, then the outputs and updates
 *   partition_reshard.c  shardings; the collectives and slices that move a
 *                        value between layouts; the local op emitted and
 *                        its result brought to its assigned sharding
 *   partition_ops.c      the rules of ops on whole dims or on their
 *                        operands' shards as they lie: elementwise, matmul,
 *                        transpose, reshape, expand, attention, sources
 *   partition_split.c    the rules of ops over a dim that may stay split,
 *                        with all-reduced statistics: reductions, softmax,
 *                        the norms, the losses, cross_entropy's gradient,
 *                        embedding and its gradient (vocabulary-parallel);
 *                        a rank's global positions (causal rows, iota)
 */
#ifndef SHARDC_PASS_PARTITION_H
#define SHARDC_PASS_PARTITION_H
#include "passes.h"

/* The partitioning under way: the module being built and the logical op
 * being partitioned. */
typedef struct part {
    ir_module *dst;
    const pass_explain *ex;
    ir_value **map;         /* logical value id -> its local value */
    su_vec why;             /* dst value id -> reason (const char *) */
    const ir_op *op;        /* the logical op being partitioned */
    const char *need;       /* what the op needs, for reasons */
    const char *choice;     /* why the op computes on a split dim, for reasons */
    int zero3_axis;         /* zero 3: params' storage axis, never contracted; -1 */
    unsigned batch_axes;    /* the mesh axes that split some input's dim 0 */
    bool keep_gathered;     /* the backward reads the forward's gathered activations */
    bool *act;              /* with keep_gathered: logical value id -> an input reaches it */
    int *same;              /* logical value id -> the id of the first value equal to
                             * it (a transpose of the same value, the same way: the
                             * backward's x^T for each weight read by x), else itself */
    const ir_op **reader;   /* logical value id -> the one op that reads it, else NULL
                             * (none, several, or an output or update) */
    bool dry;               /* count bytes, emit nothing */
    double bytes;           /* bytes sent per rank, while dry */
    su_vec made;            /* reshard_made: operands already resharded */
    int *made_first;        /* logical value id -> its first in made (-1: none) */
    su_vec xent;            /* xent_stats: the forward's row statistics */
} part;

/* ---- partition_reshard.c ---- */

/* Shardings: replicated (no axes), the size of a list of mesh axes, the
 * axes a sharding uses, a global type's local one. */
ir_sharding pass_part_replicated(void);
int64_t pass_part_axes_size(const ir_mesh *me, const uint8_t *axes, int n);
unsigned pass_part_used_axes(const ir_sharding *s, int rank);
ir_type pass_part_local_type(const ir_mesh *me, const ir_type *t, const ir_sharding *s);
/* s neither partial nor fixed; dst's dim dd given src's dim sd's axes; s
 * without the axes in mask; s with dim d's axes removed. */
ir_sharding pass_part_no_partial(ir_sharding s);
void pass_part_copy_dim(ir_sharding *dst, int dd, const ir_sharding *src, int sd);
ir_sharding pass_part_strip_axes(ir_sharding s, unsigned mask);
ir_sharding pass_part_clear_dim(ir_sharding s, int d);
/* A collective or slice of v over axes, its result with sharding sh (an
 * all_reduce computing red); while P->dry, only its bytes counted. */
ir_value *pass_part_comm_red(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                             const uint8_t *axes, int naxes, const ir_sharding *sh, ir_reduce red);
ir_value *pass_part_comm(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                         const uint8_t *axes, int naxes, const ir_sharding *sh);
/* v with sharding req (not partial), and the bytes that would send. */
ir_value *pass_part_reshard(part *P, ir_value *v, const ir_sharding *req);
double pass_part_reshard_cost(part *P, ir_value *v, const ir_sharding *req);
/* The bytes bringing operand i of P->op to sharding req sends: none where
 * it was already brought there in this phase and repetition. */
double pass_part_operand_cost(part *P, int i, const ir_sharding *req);
/* Operand i of P->op with sharding req, need saying why; resharded once
 * per layout, phase and repetition. */
ir_value *pass_part_operand(part *P, int i, const ir_sharding *req, const char *need);
/* The local op code of P->op on local operands. */
ir_value *pass_part_emit_local(part *P, ir_opcode code, ir_value **in, int nin,
                               const ir_attrs *attrs);
/* P->op's logical result mapped to r, of sharding natural, resharded to
 * the result's assigned sharding. */
void pass_part_map_result(part *P, ir_value *r, const ir_sharding *natural);
/* P->op's local op on in, mapped as pass_part_map_result maps it; the
 * result multiplied by scale first. */
void pass_part_finish(part *P, ir_value **in, int nin, const ir_sharding *natural);
void pass_part_finish_scaled(part *P, ir_value **in, int nin, const ir_sharding *natural,
                             double scale);

/* ---- partition_ops.c ---- */

/* The rules: each partitions P->op into P->dst (partition.c picks one by
 * the op's class). */
void pass_part_elementwise(part *P);
void pass_part_matmul(part *P);
void pass_part_transpose(part *P);
void pass_part_reshape(part *P);
void pass_part_attention(part *P);
void pass_part_expand(part *P);
void pass_part_narrow_concat(part *P);
void pass_part_attn_probs(part *P);
void pass_part_source(part *P);

/* ---- partition_split.c ---- */

/* Rules, as above. */
void pass_part_reduce(part *P);
void pass_part_norm(part *P);
void pass_part_xent_grad(part *P);
void pass_part_loss(part *P);
void pass_part_embedding(part *P);
void pass_part_embedding_grad(part *P);
void pass_part_iota(part *P);
void pass_part_dropout(part *P);
/* The global positions of this rank's query rows among the keys, for a
 * causal attention or attn_probs on queries of sharding q; NULL where
 * they are the local ones. */
ir_value *pass_part_query_pos(part *P, const ir_sharding *q);

#endif
