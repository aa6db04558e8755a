/* test_lane_roll.c: a timeline lane's records rolled (passes/lane.c) read
 * back as the records they were made from, record for record and id for
 * id, and are rolled where they repeat.
 *
 * 1. A pipeline stage's shape made by hand: a param, then per microbatch a
 *    receive and one task's three records (a kernel reading the param,
 *    the received value and two values of an earlier task, a fused group,
 *    a kernel adding to the running sum the microbatch before made;
 *    microbatch 0 starts it from the param), the group's id stepping:
 *    microbatch 0 literal, every one after rolled onto it, each id
 *    stepped by the microbatch's shift, kept (the param) or stepped by
 *    one of the piece's own steps (the received value, the earlier
 *    task's, the sum), none written out.
 * 2. A microbatch whose kernel takes another time and one whose task has
 *    another record count, each literal; one whose earlier task's values
 *    are not one step apart, rolled with an id written out.
 * 3. 300 lanes made at random from a few templates per task (random
 *    shifts, fixed and stepped ids, ids written out, records that
 *    differ), with and without each record's op: each reads back
 *    exactly, and most roll. */
#include "../../passes/lane.h"
#include "check.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct recs {
    lop op[4096];
    int32_t ids[16384], stamp[8192], op_of[4096];
    int32_t n, nids;
} recs;

static void add(recs *r, int kind, int code, double dur, int aux, int task, int mb,
                const int32_t *in, int nin, const int32_t *out, int nout)
{
    lop *o = &r->op[r->n];
    memset(o, 0, sizeof *o);
    o->kind = (uint8_t)kind;
    o->code = (uint16_t)code;
    o->dur = dur;
    o->aux = aux;
    o->in = r->nids;
    o->nin = nin;
    for (int i = 0; i < nin; i++)
        r->ids[r->nids++] = in[i];
    for (int i = 0; i < nout; i++)
        r->ids[r->nids++] = out[i];
    r->stamp[2 * r->n] = task;
    r->stamp[2 * r->n + 1] = mb;
    r->op_of[r->n] = 3 * r->n + 1; /* a fused group's other ops between */
    r->n++;
}

/* Whether R reads back as r (with its ops when ops). */
static bool reads_back(const lane_recs *R, const recs *r, bool ops, jmp_buf *oom)
{
    lane_cursor c = {0};
    pass_lane_cursor_start(R, &c, oom);
    bool ok = R->n == r->n;
    for (int32_t k = 0; ok && k < r->n; k++, pass_lane_cursor_step(R, &c)) {
        const lop *o = &r->op[k];
        int32_t nout = (k + 1 < r->n ? r->op[k + 1].in : r->nids) - o->in - o->nin;
        ok = c.next == k && c.rec.kind == o->kind && c.rec.code == o->code &&
             c.rec.dur == o->dur && c.rec.aux == o->aux && c.rec.nin == o->nin &&
             c.rec.st == o->st && c.nout == nout &&
             memcmp(c.ids, r->ids + o->in, (size_t)(o->nin + nout) * sizeof *c.ids) == 0 &&
             c.op == (ops ? r->op_of[k] : k);
        if (!ok)
            fprintf(stderr, "record %d differs\n", k);
    }
    ok = ok && c.next == r->n;
    pass_lane_cursor_free(&c);
    return ok;
}

enum { PARAM = 1, BASE = 100, STEP = 10 };

/* Microbatch mb of the hand-made stage: a receive, then its task's three
 * records (dur0 the first kernel's time; extra: a fourth record). */
static void microbatch(recs *r, int mb, double dur0, bool extra, bool scatter)
{
    int32_t base = BASE + STEP * mb;
    int32_t recv = 7000 + 13 * mb * mb; /* no fixed step */
    add(r, L_P2P, 2, 0, mb, -1, mb, NULL, 0, &recv, 1);
    int32_t in0[4] = {PARAM, recv, 9000 + 100 * mb, 9001 + 100 * mb + (scatter ? 7 : 0)};
    int32_t out0 = base;
    add(r, L_RUN, 5, dur0, 0, 1, mb, in0, 4, &out0, 1);
    int32_t in1 = base, out1[2] = {base + 1, base + 2};
    add(r, L_GROUP, 0, 2e-6, 40 + 3 * mb, 1, mb, &in1, 1, out1, 2);
    int32_t in2[2] = {base + 2, mb ? BASE + STEP * (mb - 1) + 3 : PARAM}, out2 = base + 3;
    add(r, L_RUN, 6, 3e-6, 0, 1, mb, in2, 2, &out2, 1);
    if (extra) {
        int32_t out3 = base + 4;
        add(r, L_RUN, 7, 1e-6, 0, 1, mb, &out2, 1, &out3, 1);
    }
}

static void hand_made(jmp_buf *oom)
{
    static recs r;
    memset(&r, 0, sizeof r);
    int32_t p = PARAM;
    add(&r, L_PASS, 1, 0, 0, 0, 0, NULL, 0, &p, 1);
    for (int mb = 0; mb < 8; mb++)
        microbatch(&r, mb, 1e-6, false, false);
    for (int ops = 0; ops < 2; ops++) {
        lane_recs R;
        pass_lane_roll(&R, r.op, r.n, r.ids, r.nids, ops ? r.op_of : NULL, r.stamp, oom);
        CHECK(reads_back(&R, &r, ops, oom));
        /* the param, the receives and microbatch 0's task literal; 1 to
         * 7 pieces of it, with three steps each */
        CHECK_INT(R.nlit, 1 + 8 + 3);
        int rolled = 0;
        for (int i = 0; i < R.npiece; i++)
            rolled += R.piece[i].shift != 0;
        CHECK_INT(rolled, 7);
        CHECK_INT(R.npatch, 0);
        const lane_piece *q = &R.piece[R.npiece - 1]; /* microbatch 7's */
        CHECK_INT(q->shift, STEP * 7);
        CHECK_INT(q->step[0], 13 * 49); /* the received value */
        CHECK_INT(q->step[1], 700);     /* the earlier task's */
        CHECK_INT(q->step[2], BASE + STEP * 6 + 3 - PARAM); /* the sum */
        pass_lane_recs_free(&R);
    }

    /* microbatch 3 takes another time, 5 has a fourth record, 6 reads an
     * earlier task's values 8 ids further apart */
    memset(&r, 0, sizeof r);
    add(&r, L_PASS, 1, 0, 0, 0, 0, NULL, 0, &p, 1);
    for (int mb = 0; mb < 8; mb++)
        microbatch(&r, mb, mb == 3 ? 9e-6 : 1e-6, mb == 5, mb == 6);
    lane_recs R;
    pass_lane_roll(&R, r.op, r.n, r.ids, r.nids, r.op_of, r.stamp, oom);
    CHECK(reads_back(&R, &r, true, oom));
    int rolled = 0;
    for (int i = 0; i < R.npiece; i++)
        rolled += R.piece[i].shift != 0;
    /* 1, 2, 4, 6 and 7 onto 0 (4 and 7 past 3, whose time differs), 6
     * with its second read of the earlier task written out; 3 and 5 (four
     * records) literal */
    CHECK_INT(rolled, 5);
    CHECK_INT(R.nlit, 1 + 8 + 3 * 2 + 4);
    CHECK_INT(R.npatch, 1);
    pass_lane_recs_free(&R);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

typedef struct trec {
    int kind, nin, nout;
    double dur;
    int how[7]; /* per id: 0 a param, 1 stepped, 2 anything */
} trec;

static trec templ[3][3][6]; /* task 1 .. 3, three templates each */
static int tlen[3][3];

static void random_templates(void)
{
    for (int t = 0; t < 3; t++)
        for (int v = 0; v < 3; v++) {
            tlen[t][v] = 1 + (int)rnd(6);
            for (int i = 0; i < tlen[t][v]; i++) {
                trec *x = &templ[t][v][i];
                x->kind = rnd(8) == 0 ? L_PASS : i % 2 ? L_GROUP : L_RUN;
                x->nin = (int)rnd(4);
                x->nout = (int)rnd(3);
                x->dur = 1e-6 * (1 + rnd(3));
                for (int j = 0; j < 7; j++) {
                    uint32_t h = rnd(10);
                    x->how[j] = h < 3 ? 0 : h < 9 ? 1 : 2;
                }
            }
        }
}

/* A lane at random: literal records (a receive, a once-made op) and
 * runs, each an instance of one of its task's templates with a shift,
 * its params kept, sometimes an id, a time or a kind changed. */
static void random_lane(recs *r)
{
    memset(r, 0, sizeof *r);
    int runs = 1 + (int)rnd(60);
    for (int k = 0; k < runs && r->n < 4000 - 8; k++) {
        if (rnd(4) == 0) {
            int32_t out = (int32_t)rnd(100000);
            add(r, rnd(2) ? L_P2P : L_RUN, 2, 1e-6, (int)rnd(9), (int)rnd(2) - 1, k, NULL, 0,
                &out, 1);
            continue;
        }
        int t = (int)rnd(3), v = (int)rnd(3);
        int32_t shift = (int32_t)(STEP * (int)(1 + rnd(400))) - 2000;
        for (int i = 0; i < tlen[t][v]; i++) {
            const trec *x = &templ[t][v][i];
            int32_t ids[7];
            for (int j = 0; j < x->nin + x->nout; j++) {
                int how = rnd(40) ? x->how[j] : 2;
                if (j >= x->nin && how == 0)
                    how = 1; /* a made value is the instance's own */
                ids[j] = how == 0 ? (int32_t)(1 + j)
                         : how == 1 ? (int32_t)(10000 + 64 * t + 8 * i + j) + shift
                                    : (int32_t)rnd(100000);
            }
            int kind = rnd(50) ? x->kind : L_PASS;
            double dur = rnd(50) ? x->dur : 7e-6;
            int aux = kind == L_GROUP ? 500 + shift / STEP : 0;
            add(r, kind, 3 + i, dur, aux, t + 1, k, ids, x->nin, ids + x->nin, x->nout);
        }
    }
}

int main(void)
{
    jmp_buf oom;
    if (setjmp(oom)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    hand_made(&oom);
    random_templates();
    static recs r;
    int rolled_lanes = 0;
    for (int t = 0; t < 300; t++) {
        random_lane(&r);
        lane_recs R;
        bool ops = t % 2;
        pass_lane_roll(&R, r.op, r.n, r.ids, r.nids, ops ? r.op_of : NULL, r.stamp, &oom);
        CHECK(reads_back(&R, &r, ops, &oom));
        rolled_lanes += R.nlit < r.n;
        pass_lane_recs_free(&R);
    }
    /* the random lanes roll too, not only read back */
    CHECK(rolled_lanes > 100);
    return CHECK_DONE();
}
