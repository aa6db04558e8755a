/* lane.c: a timeline lane's records rolled (lane.h): each run of one
 * task's records of one microbatch kept once, the runs like it as pieces
 * that step its value ids, and the cursor that reads them back.
 *
 * A deep pipeline's report held every stage's records unrolled until the
 * stages ran in step: pipeline.sh L=96 on 64 stages at 512 microbatches,
 * 77,901 records and 247,009 ids on each of its first 32 stages (2.9 MB).
 * Rolled, such a stage keeps 2,550 records and 3,644 ids literal, 2,057
 * pieces of 44 bytes and 8,661 ids written out (0.24 MB). */
#include "lane.h"

#include <stdlib.h>
#include <string.h>

typedef struct tmpl {
    int32_t task, n, lit;  /* a literal run of task's n records at lit */
    int32_t prev;          /* the template before of that task and length; -1 */
    bool flagged;          /* R->how set for its ids (by its first match) */
} tmpl;

typedef struct tkey {
    int32_t task, n, last; /* the latest template of task and length n */
} tkey;

typedef struct roller {
    lane_recs *R;
    const lop *op;         /* the unrolled records, ids, ops */
    int32_t n, nids;
    const int32_t *ids, *op_of, *stamp;
    int32_t caplit, capids, cappiece, cappatch;
    tmpl *t;
    int32_t nt, capt;
    tkey *key;             /* a task's and length's latest template */
    int32_t nkey, capkey;
    lane_patch *tp;        /* the match under way's patches, and (a */
    int32_t ntp, captp;    /* template's first) its ids' how, in pairs */
    int32_t *tf;
    int32_t ntf, captf;
    jmp_buf *oom;
} roller;

/* p (of *cap elements of size) with room for need. */
static void *room(jmp_buf *oom, void *p, int32_t *cap, int64_t need, size_t size)
{
    if (need <= *cap)
        return p;
    int64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    if (c > INT32_MAX)
        su_oom(oom);
    *cap = (int32_t)c;
    return su_xrealloc(oom, p, (size_t)c * size);
}

/* Unrolled record k's outs. */
static int32_t full_nout(const roller *r, int32_t k)
{
    return (k + 1 < r->n ? r->op[k + 1].in : r->nids) - r->op[k].in - r->op[k].nin;
}

/* A piece appended: p, or (p literal) the last piece grown when it is
 * literal and ends where p starts. */
static void add_piece(roller *r, lane_piece p)
{
    lane_recs *R = r->R;
    if (p.shift == 0 && R->npiece > 0) {
        lane_piece *q = &R->piece[R->npiece - 1];
        if (q->shift == 0 && q->lit + q->n == p.lit) {
            q->n += p.n;
            return;
        }
    }
    R->piece = room(r->oom, R->piece, &r->cappiece, (int64_t)R->npiece + 1, sizeof *R->piece);
    R->piece[R->npiece++] = p;
}

/* Unrolled records [k0, k1) appended literal; their first's index. */
static int32_t add_lit(roller *r, int32_t k0, int32_t k1)
{
    lane_recs *R = r->R;
    int32_t cnt = k1 - k0, i0 = r->op[k0].in;
    int32_t nid = (k1 < r->n ? r->op[k1].in : r->nids) - i0;
    int32_t capl = r->caplit, at = R->nlit;
    R->lit = room(r->oom, R->lit, &r->caplit, (int64_t)at + cnt, sizeof *R->lit);
    if (r->op_of)
        R->op_of = room(r->oom, R->op_of, &capl, (int64_t)at + cnt, sizeof *R->op_of);
    int32_t capi = r->capids;
    R->ids = room(r->oom, R->ids, &r->capids, (int64_t)R->nids + nid, sizeof *R->ids);
    R->how = room(r->oom, R->how, &capi, (int64_t)R->nids + nid, sizeof *R->how);
    for (int32_t k = 0; k < cnt; k++) {
        R->lit[at + k] = r->op[k0 + k];
        R->lit[at + k].in += R->nids - i0;
        if (r->op_of)
            R->op_of[at + k] = r->op_of[k0 + k];
    }
    if (nid) {
        memcpy(R->ids + R->nids, r->ids + i0, (size_t)nid * sizeof *R->ids);
        memset(R->how + R->nids, LANE_SHIFT, (size_t)nid);
    }
    R->nids += nid;
    R->nlit += cnt;
    add_piece(r, (lane_piece){.lit = at, .n = cnt, .patch = R->npatch});
    return at;
}

/* Whether two records are alike but for their ids, aux stepped by group
 * where they are a group's kernel. */
static bool same_rec(const lop *t, const lop *f, int32_t group)
{
    return t->code == f->code && t->kind == f->kind && t->st == f->st && t->nin == f->nin &&
           memcmp(&t->dur, &f->dur, sizeof t->dur) == 0 &&
           (int64_t)t->aux + (t->kind == L_GROUP ? group : 0) == f->aux;
}

/* Whether the unrolled records from k0 are an instance of template T: its
 * records alike, each id the template's stepped as T's ids' how say (by
 * the instance's shift, not at all, or by one of LANE_STEPS steps the
 * instance sets where it first reads one of theirs: a backward reading
 * its microbatch's forward's values, a sum the microbatch before made),
 * but for few written out (r->tp). T's first match finds how (into r->tf:
 * id, how): an id the shift gives steps by it, the template's own stays,
 * another takes the step it needs, a new one while there are fewer than
 * LANE_STEPS. The piece into *p. */
static bool match(roller *r, const tmpl *T, int32_t k0, lane_piece *p)
{
    const lane_recs *R = r->R;
    const lop *t = &R->lit[T->lit], *f = &r->op[k0];
    int32_t base = t[0].in;
    int64_t shift = 0, group = 0;
    bool have = false, grp = false;
    int64_t nid = 0;
    for (int32_t i = 0; i < T->n; i++) {
        int32_t nout = lane_lit_nout(R, T->lit + i);
        if (nout != full_nout(r, k0 + i) || t[i].nin != f[i].nin || t[i].kind != f[i].kind)
            return false;
        if (!have && nout > 0) {
            shift = (int64_t)r->ids[f[i].in + f[i].nin] - R->ids[t[i].in + t[i].nin];
            have = true;
        }
        if (!grp && t[i].kind == L_GROUP) {
            group = (int64_t)f[i].aux - t[i].aux;
            grp = true;
        }
        nid += t[i].nin + nout;
    }
    if (!have || shift == 0 || shift != (int32_t)shift || group != (int32_t)group)
        return false;
    int64_t op = r->op_of ? (int64_t)r->op_of[k0] - R->op_of[T->lit] : 0;
    *p = (lane_piece){.lit = T->lit, .n = T->n, .shift = (int32_t)shift,
                      .group = (int32_t)group, .op = (int32_t)op};
    bool set[LANE_STEPS] = {false};
    int nstep = 0;
    r->ntp = r->ntf = 0;
    for (int32_t i = 0; i < T->n; i++) {
        if (!same_rec(&t[i], &f[i], (int32_t)group))
            return false;
        if (r->op_of && (int64_t)R->op_of[T->lit + i] + op != r->op_of[k0 + i])
            return false;
        int32_t m = t[i].nin + lane_lit_nout(R, T->lit + i);
        for (int32_t q = 0; q < m; q++) {
            int32_t it = t[i].in + q, want = r->ids[f[i].in + q];
            int64_t id = R->ids[it], d = (int64_t)want - id;
            int how = T->flagged ? R->how[it] : -1;
            if (how < 0) { /* T's first match: its ids' how found */
                how = d == shift ? LANE_SHIFT : d == 0 ? LANE_FIXED : -1;
                for (int k = 0; how < 0 && k < nstep; k++)
                    how = p->step[k] == d ? LANE_STEP + k : -1;
                if (how < 0 && nstep < LANE_STEPS && d == (int32_t)d) {
                    p->step[nstep] = (int32_t)d;
                    set[nstep] = true;
                    how = LANE_STEP + nstep++;
                }
                r->tf = room(r->oom, r->tf, &r->captf, (int64_t)r->ntf + 2, sizeof *r->tf);
                r->tf[r->ntf++] = it;
                r->tf[r->ntf++] = how < 0 ? LANE_SHIFT : how;
            } else if (how >= LANE_STEP && !set[how - LANE_STEP] && d == (int32_t)d) {
                p->step[how - LANE_STEP] = (int32_t)d;
                set[how - LANE_STEP] = true;
            }
            int64_t exp = how == LANE_SHIFT   ? id + shift
                          : how == LANE_FIXED ? id
                          : how >= LANE_STEP  ? id + p->step[how - LANE_STEP]
                                              : INT64_MIN;
            if (exp == want)
                continue;
            if (r->ntp >= nid / 4 + 2)
                return false; /* little like it: literal */
            r->tp = room(r->oom, r->tp, &r->captp, (int64_t)r->ntp + 1, sizeof *r->tp);
            r->tp[r->ntp++] = (lane_patch){it - base, want};
        }
    }
    return true;
}

/* The unrolled records [k0, k1), one task's of one microbatch: a piece of
 * the latest template of that task and length they match writing out at
 * most one id in 16 (of the latest four), else literal and a template
 * while its task has fewer than four of that length (where microbatch 0
 * starts the sums over microbatches, microbatch 1 reads them as the ones
 * after it do), else a piece of the one of the four that writes out
 * fewest. */
static void add_run(roller *r, int32_t task, int32_t k0, int32_t k1)
{
    lane_recs *R = r->R;
    int tried = 0, best = -1;
    int32_t fewest = INT32_MAX, kk = 0;
    int32_t nid = (k1 < r->n ? r->op[k1].in : r->nids) - r->op[k0].in;
    while (kk < r->nkey && (r->key[kk].task != task || r->key[kk].n != k1 - k0))
        kk++;
    lane_piece p;
    bool taken = false;
    for (int32_t j = kk < r->nkey ? r->key[kk].last : -1; j >= 0 && tried < 4 && !taken;
         j = r->t[j].prev) {
        tried++;
        if (!match(r, &r->t[j], k0, &p))
            continue;
        taken = r->ntp <= nid / 16 + 1;
        if (taken || r->ntp < fewest) {
            best = j;
            fewest = r->ntp;
        }
    }
    if (best >= 0 && !taken && tried == 4)
        taken = match(r, &r->t[best], k0, &p); /* its patches again */
    if (taken) {
        tmpl *T = &r->t[best];
        for (int32_t i = 0; i < r->ntf; i += 2)
            R->how[r->tf[i]] = (uint8_t)r->tf[i + 1];
        T->flagged = true;
        p.patch = R->npatch;
        p.npatch = r->ntp;
        R->patch = room(r->oom, R->patch, &r->cappatch, (int64_t)R->npatch + r->ntp,
                        sizeof *R->patch);
        if (r->ntp)
            memcpy(R->patch + R->npatch, r->tp, (size_t)r->ntp * sizeof *r->tp);
        R->npatch += r->ntp;
        add_piece(r, p);
        return;
    }
    int32_t at = add_lit(r, k0, k1);
    r->t = room(r->oom, r->t, &r->capt, (int64_t)r->nt + 1, sizeof *r->t);
    if (kk == r->nkey) {
        r->key = room(r->oom, r->key, &r->capkey, (int64_t)r->nkey + 1, sizeof *r->key);
        r->key[r->nkey++] = (tkey){task, k1 - k0, -1};
    }
    r->t[r->nt] = (tmpl){task, k1 - k0, at, r->key[kk].last, false};
    r->key[kk].last = r->nt++;
}

static void load(const lane_recs *R, lane_cursor *c);

#ifndef NDEBUG
/* Whether R reads back as the n unrolled records op (ids, op_of) it was
 * made from, record for record and id for id (Debug builds check every
 * lane they roll). */
static bool reads_back(const lane_recs *R, const lop *op, int32_t n, const int32_t *ids,
                       int32_t nids, const int32_t *op_of, jmp_buf *oom)
{
    lane_cursor c = {0};
    pass_lane_cursor_start(R, &c, oom);
    bool ok = R->n == n;
    for (int32_t k = 0; ok && k < n; k++, pass_lane_cursor_step(R, &c)) {
        int32_t nout = (k + 1 < n ? op[k + 1].in : nids) - op[k].in - op[k].nin;
        lop want = op[k];
        want.in = 0;
        ok = c.next == k && memcmp(&c.rec, &want, sizeof want) == 0 && c.nout == nout &&
             memcmp(c.ids, ids + op[k].in, (size_t)(op[k].nin + nout) * sizeof *ids) == 0 &&
             c.op == (op_of ? op_of[k] : k);
    }
    pass_lane_cursor_free(&c);
    return ok;
}
#endif

static void roll_work(void *arg)
{
    roller *r = arg;
    lane_recs *R = r->R;
    const lop *op = r->op;
    const int32_t *stamp = r->stamp;
    int32_t n = r->n;
    R->n = n;
    for (int32_t k = 0; k < n; k++) {
        int32_t m = op[k].nin + full_nout(r, k);
        if (m > R->most)
            R->most = m;
    }
    for (int32_t k = 0; k < n;) {
        int32_t task = stamp[2 * k], mb = stamp[2 * k + 1], e = k + 1;
        if (task <= 0 || op[k].kind == L_P2P) {
            add_lit(r, k, e);
            k = e;
            continue;
        }
        while (e < n && stamp[2 * e] == task && stamp[2 * e + 1] == mb && op[e].kind != L_P2P)
            e++;
        add_run(r, task, k, e);
        k = e;
    }
    /* their exact size: a deep pipeline's lanes are all kept until they
     * run in step */
    jmp_buf *oom = r->oom;
    R->lit = su_xrealloc(oom, R->lit, ((size_t)R->nlit + 1) * sizeof *R->lit);
    if (R->op_of)
        R->op_of = su_xrealloc(oom, R->op_of, ((size_t)R->nlit + 1) * sizeof *R->op_of);
    R->ids = su_xrealloc(oom, R->ids, ((size_t)R->nids + 1) * sizeof *R->ids);
    R->how = su_xrealloc(oom, R->how, (size_t)R->nids + 1);
    R->piece = su_xrealloc(oom, R->piece, ((size_t)R->npiece + 1) * sizeof *R->piece);
    R->patch = su_xrealloc(oom, R->patch, ((size_t)R->npatch + 1) * sizeof *R->patch);
#ifndef NDEBUG
    if (!reads_back(R, op, n, r->ids, r->nids, r->op_of, oom))
        su_unreachable(); /* the rolled records read back as made */
#endif
}

void pass_lane_roll(lane_recs *R, const lop *op, int32_t n, const int32_t *ids, int32_t nids,
                    const int32_t *op_of, const int32_t *stamp, jmp_buf *oom)
{
    memset(R, 0, sizeof *R);
    roller r = {.R = R, .op = op, .n = n, .nids = nids, .ids = ids, .op_of = op_of,
                .stamp = stamp, .oom = oom};
    bool done = su_guarded(oom, roll_work, &r);
    free(r.t);
    free(r.key);
    free(r.tp);
    free(r.tf);
    if (!done) {
        pass_lane_recs_free(R);
        su_oom(oom);
    }
}

void pass_lane_recs_free(lane_recs *R)
{
    free(R->lit);
    free(R->ids);
    free(R->how);
    free(R->op_of);
    free(R->piece);
    free(R->patch);
    memset(R, 0, sizeof *R);
}

/* c->rec and its ids: record c->at of piece c->piece. */
static void load(const lane_recs *R, lane_cursor *c)
{
    const lane_piece *p = &R->piece[c->piece];
    int32_t k = p->lit + c->at;
    const lop *t = &R->lit[k];
    c->rec = *t;
    c->rec.in = 0;
    if (t->kind == L_GROUP)
        c->rec.aux += p->group;
    c->nout = lane_lit_nout(R, k);
    int32_t m = t->nin + c->nout;
    for (int32_t q = 0; q < m; q++) { /* a literal piece: shift and steps 0 */
        int32_t it = t->in + q, how = R->how[it];
        int64_t d = how == LANE_SHIFT ? p->shift : how == LANE_FIXED ? 0 : p->step[how - LANE_STEP];
        c->ids[q] = (int32_t)(R->ids[it] + d); /* an id written out: any, then the patch's */
    }
    int32_t rel = t->in - R->lit[p->lit].in, end = p->patch + p->npatch;
    for (; c->patch < end && R->patch[c->patch].at < rel + m; c->patch++)
        c->ids[R->patch[c->patch].at - rel] = R->patch[c->patch].id;
    c->op = R->op_of ? R->op_of[k] + p->op : c->next;
}

void pass_lane_cursor_start(const lane_recs *R, lane_cursor *c, jmp_buf *oom)
{
    pass_lane_cursor_free(c);
    c->ids = su_xmalloc(oom, ((size_t)R->most + 1) * sizeof *c->ids);
    c->next = c->piece = c->at = 0;
    c->patch = R->npiece ? R->piece[0].patch : 0;
    if (R->n > 0)
        load(R, c);
}

void pass_lane_cursor_step(const lane_recs *R, lane_cursor *c)
{
    c->next++;
    if (++c->at == R->piece[c->piece].n) {
        c->piece++;
        c->at = 0;
        if (c->piece < R->npiece)
            c->patch = R->piece[c->piece].patch;
    }
    if (c->next < R->n)
        load(R, c);
}

void pass_lane_cursor_free(lane_cursor *c)
{
    free(c->ids);
    c->ids = NULL;
}
