/* lane.h: a timeline lane's records as the timeline keeps them, rolled
 * (lane.c), and the cursor that reads them back one at a time. Private to
 * timeline.c and lane.c.
 *
 * A pipeline stage runs a task's instances one microbatch after another,
 * each the same records but for the value ids it makes and reads. The
 * rolled form keeps one instance of each (its records literal) and, for
 * each instance like it, a piece: the template's records, each value id
 * stepped by the instance's shift (the values it makes), or the same in
 * every instance (a param), or stepped by one of a few steps of the
 * instance's own (the values of another instance it reads: a backward
 * its microbatch's forward's), and the few ids that fit none (a value
 * received between the instances) written out. Read back, the records are
 * the unrolled ones exactly. */
#ifndef SHARDC_PASSES_LANE_H
#define SHARDC_PASSES_LANE_H

#include "../support/support.h"

#include <stdint.h>

/* An op of a stage as the timeline runs it, made by lane_fill from the
 * stage's program, its groups and its memory plan; the simulation reads
 * these and nothing of the program: what the op waits for and what it
 * makes, as value ids (ids[in .. in + nin), then its outs up to the next
 * record's ins: lane_lit_nout), on which stream it runs and for how long;
 * 24 bytes. */
enum {
    L_SKIP,   /* a fused group's op other than its anchor: nothing where it
               * stands, so it has no record (lane_fill) */
    L_PASS,   /* runs nothing (a param, a view): its value made once its operands are */
    L_RUN,    /* a kernel or collective of its own, on stream st */
    L_GROUP,  /* a fused group's kernel, at its anchor: ins are the group's, outs
               * every value of its ops */
    L_P2P,    /* a send or recv (code), meeting its peer's */
};

typedef struct lop {
    double dur;          /* L_RUN, L_GROUP, a send: what it takes */
    int32_t in, nin;     /* its outs follow its ins: ids[in + nin ..) */
    int32_t aux;         /* L_GROUP: the group's id (its event's); L_P2P: its
                          * peer and tag (timeline.c's p2p[aux]) */
    uint16_t code;       /* the op's */
    uint8_t kind, st;
} lop;
_Static_assert(sizeof(lop) == 24, "a lane's record: 24 bytes");

/* How a template's id steps in its instances (lane_recs.how). */
enum { LANE_SHIFT, LANE_FIXED, LANE_STEP, LANE_STEPS = 4 };

/* A run of records: literal ones (lit .. lit + n, shift and steps 0), or
 * an instance of the template whose records are there. */
typedef struct lane_piece {
    int32_t lit, n;      /* its records: lit[lit .. lit + n) with */
    int32_t shift;       /* each id + shift, as its how says: */
    int32_t step[LANE_STEPS]; /* or + step[how - LANE_STEP], or as it is */
    int32_t group;       /* each L_GROUP's aux + group */
    int32_t op;          /* each record's op (op_of) + op */
    int32_t patch, npatch; /* ids written out: patch[patch .. + npatch) */
} lane_piece;

typedef struct lane_patch {
    int32_t at, id;      /* the id at the template's id at + its first, in order */
} lane_patch;

typedef struct lane_recs {
    lop *lit;            /* [nlit] the literal records (malloc'd, as all here) */
    int32_t nlit;
    int32_t *ids;        /* [nids] their ids */
    int32_t nids;
    uint8_t *how;        /* [nids]: how an instance's id steps (LANE_SHIFT ...) */
    int32_t *op_of;      /* [nlit] each literal record's op; NULL: none kept */
    lane_piece *piece;
    int32_t npiece;
    lane_patch *patch;
    int32_t npatch;
    int32_t n;           /* records in all */
    int32_t most;        /* the most ids of a record */
} lane_recs;

/* The records read back: rec (in 0) and its ids, record next (of R->n),
 * op its op (op_of, else next). */
typedef struct lane_cursor {
    int32_t next, piece, at, patch;
    lop rec;
    int32_t nout, op;
    int32_t *ids;        /* [R->most] */
} lane_cursor;

/* Record k's outs among R's literal records: the ids up to the next one's. */
static inline int32_t lane_lit_nout(const lane_recs *R, int32_t k)
{
    return (k + 1 < R->nlit ? R->lit[k + 1].in : R->nids) - R->lit[k].in - R->lit[k].nin;
}

/* R made from n records op[n] (ids[nids], each record's op op_of[n] or
 * NULL, and each its task and microbatch in stamp[2 * k], [2 * k + 1]):
 * each run of one task's records of one microbatch rolled onto an earlier
 * instance of that task where it matches one, else literal. */
void pass_lane_roll(lane_recs *R, const lop *op, int32_t n, const int32_t *ids, int32_t nids,
                    const int32_t *op_of, const int32_t *stamp, jmp_buf *oom);
void pass_lane_recs_free(lane_recs *R);

/* c at R's first record (its ids malloc'd); c->next == R->n: past the end. */
void pass_lane_cursor_start(const lane_recs *R, lane_cursor *c, jmp_buf *oom);
void pass_lane_cursor_step(const lane_recs *R, lane_cursor *c);
void pass_lane_cursor_free(lane_cursor *c);

#endif
