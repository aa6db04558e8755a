/* pipesplit.h: what the pipeline split's files share (private to passes/):
 *   pipesplit.c  building each stage's program (the split itself; its file
 *                comment says what a value's kind and chunk are)
 *   pipeclass.c  each value's kind, batch dimension and chunk; the
 *                schedules and their bubble
 *   p2pverify.c  the cross-stage verifier, pass_verify_p2p
 */
#ifndef SHARDC_PASS_PIPESPLIT_H
#define SHARDC_PASS_PIPESPLIT_H
#include "passes.h"

enum { K_PRE, K_MB, K_ACC, K_POST };
enum { MAX_IN = 8 };            /* operands of an op, at most */
enum { CUT_ROWS = 64 };         /* pl.cut: the microbatch's own rows, not any slice */
enum { ACC_SUM, ACC_MEAN, ACC_MAX };

typedef struct pl {
    const ir_module *m;
    su_buf *err;
    int P, M, V, C, L;          /* stages, microbatches, chunks per stage, chunks, repeats */
    int64_t N;                  /* blocks of the batch (see above) */
    int64_t need;               /* what N must be a multiple of besides the inputs' and
                                 * outputs' blocks: the splits along the batch of the
                                 * per-step values microbatches read row by row (0: 1) */
    int nv;
    uint8_t *kind;              /* per value id */
    int8_t *bd;                 /* MB: the batch dimension */
    uint8_t *uniform;           /* PRE: bit d: the elements are equal along dimension d */
    int8_t *cut;                /* [nv * MAX_IN], by result id: MB and ACC ops, the
                                 * dimension of per-step operand k that spans the batch
                                 * (read as a microbatch slice; | CUT_ROWS: the
                                 * microbatch's own rows), or -1 */
    bool *floating;             /* MB: made from inputs and per-step values only; ACC: a
                                 * batch reduction of such values */
    int *chunk;                 /* MB (not floating) and ACC: the chunk */
    int *rep_chunk;             /* [L]: the chunk of each repetition (pass_pl_balance) */
    uint8_t *acc;               /* ACC: ACC_* */
    int *stage;                 /* ACC, POST: the stage; -1: any (made from floating values) */
    uint64_t *to;               /* MB (not floating): stages other than its own that read it */
    const ir_op **origin;       /* ACC, POST: the batch reduction it comes from */
    int *home;                  /* a param with an update: the stage it lives on (-1: none yet) */
    int *task_op;               /* the ops of the module in the tasks, by task kind (chunk,
                                 * forward or backward: 2 chunk + forward), in program order:
                                 * kind k's are task_op[task_start[k] .. task_start[k + 1]) */
    int *task_start;            /* [2 C + 1] */
    const ir_value **val;       /* by value id: the value of the module (NULL: none) */
    su_loc *at;                 /* where the first error is (line 0: nowhere) */
    bool failed;                /* an error is recorded (only the first is kept) */
    su_arena ar;
} pl;

static inline int pass_pl_stage_of(const pl *L, int chunk)
{
    return chunk % L->P;
}

/* An error at a place in the source (a declaration, the pipeline
 * statement; line 0: none); only the first error is kept. */
bool pass_pl_fail_at(pl *L, su_loc at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Every value's kind, batch dimension and chunk (pipesplit.c's comment);
 * false with the error recorded. */
bool pass_pl_classify(pl *L);
/* The number of blocks dimension 0 of a batch value is split into. */
int64_t pass_pl_blocks_of(const pl *L, const ir_value *v);
/* N (pipesplit.c's comment): the least common multiple of the blocks of
 * the inputs and, once classified (with_outputs), of the outputs that hold
 * the batch. Checks that every one of them splits. */
bool pass_pl_batch_blocks(pl *L, bool with_outputs);
/* Stage s's tasks in the order of its schedule, into out (pass_task *). */
void pass_pl_schedule(const pl *L, int s, bool train, su_vec *out, jmp_buf *oom, su_arena *a);
/* The schedule's idle time over its ideal compute time (pass_pipeline's
 * bubble). */
double pass_pl_bubble(pl *L, pass_pipeline *pp, bool train);

#endif
