/* instances.c: a pipeline stage's middle microbatches held once
 * (pass_share_instances, pass_expand_instances; DESIGN.md §3).
 *
 * The split unrolls a stage's tasks, one instance per microbatch, and
 * stamps each op with its task and microbatch (ir_op.task, .mb); the
 * sends and receives of microbatch j are stamped (-1, j), and here the
 * inserts that put microbatch j's rows of an output into place after the
 * tasks (made once) are taken as stamped (gather, j), a task of their
 * own (struct stamps). Microbatch 0's
 * instances start the sums over microbatches and the last's ends them
 * (a mean's scale), but every microbatch between is the same program as
 * microbatch 2's: the same ops, attributes, types and names, in the same
 * order, reading the same per-step values, its own microbatch's values
 * where microbatch 2's read microbatch 2's, and the microbatch before's
 * (the running sums) where microbatch 2's read microbatch 1's; only the
 * offsets and tags that count microbatches differ, by the same step from
 * one to the next.
 *
 * pass_share_instances proves that of every middle microbatch, 3 .. M - 2,
 * op by op against microbatch 2 (the template) and microbatch 1 (which
 * gives each offset's and tag's step), and that nothing but those
 * microbatches and the last reads their values. Then it takes their ops
 * out of the program: each run of them (between two ops it keeps) becomes
 * one `instances` op, whose tag indexes the module's ir_shared (the run's
 * pieces: whole task instances, and ranges of a microbatch's sends and
 * receives or of its gathering's inserts). The last microbatch's ops that read microbatch M - 2's values
 * (its adds to the running sums) read microbatch 2's in the meantime, so
 * that the program stays whole: every value it reads is made in it. The
 * passes that run on it (bucket, matmul-parts, verify) see each task once
 * per kept microbatch (0, 1, 2 and M - 1), not once per microbatch, and
 * treat a task's instances alike, so a middle microbatch's instance is
 * what they make of microbatch 2's.
 *
 * pass_expand_instances puts the middle microbatches back, each a copy
 * of microbatch 2's ops as they are now, in the place its run held, its
 * offsets and tags stepped on, and gives the last microbatch's sums back
 * their operand from microbatch M - 2: the unrolled program, as though
 * the passes had run on it (the same ops in the same order; only value
 * ids differ, which nothing after reads for more than identity).
 *
 * A stage whose middle microbatches differ from microbatch 2's in any way,
 * or whose values an op made once reads (a batch reduction of values
 * made from the inputs and params alone, which the split makes once for
 * every microbatch), stays unrolled.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

enum { TEMPLATE = PASS_HELD_TEMPLATE }; /* the microbatch a middle one is copied from */

/* Each op's stamp and its place among the ops of that stamp: the ops of
 * stamp (task, mb) in program order, op indices seq[start[k] .. start[k +
 * 1]) for key k = (task + 1) * M + mb; pos[i], op i's index there (-1:
 * made once). The stamps are the ops' (ir_op.task, .mb: -1 for sends and
 * receives), but for the outputs' gathering: an insert made once that
 * puts microbatch j's rows of an output into place (pipesplit.c's
 * gather_mb) is stamped (gather, j), a task of its own, so that a middle
 * microbatch's rows are copied from microbatch 2's like its task's ops
 * (and put back with their own stamp, made once). */
typedef struct stamps {
    int M, ntask, gather;    /* tasks -1 .. ntask - 2; gather = ntask - 2 */
    int *start, *seq, *pos;
    int *task, *mb;          /* [ops]: each op's stamp */
    uint8_t *gone;           /* [ops]: whether a middle microbatch's op (removed) */
} stamps;

static int stamp_key(const stamps *S, int task, int mb)
{
    return (task + 1) * S->M + mb;
}

/* Op i's key (-1: made once, or a stamp out of range). */
static int key_at(const stamps *S, int i)
{
    int t = S->task[i], j = S->mb[i];
    return t == 0 || t < -1 || t > S->ntask - 2 || j < 0 || j >= S->M ? -1 : stamp_key(S, t, j);
}

static int seq_len(const stamps *S, int k)
{
    return S->start[k + 1] - S->start[k];
}

static const ir_op *seq_op(const ir_module *m, const stamps *S, int k, int p)
{
    return IR_OP(m, S->seq[S->start[k] + p]);
}

static void stamps_free(stamps *S)
{
    free(S->start);
    free(S->seq);
    free(S->pos);
    free(S->task);
    free(S->mb);
    free(S->gone);
}

static bool middle(const stamps *S, int mb)
{
    return mb > TEMPLATE && mb < S->M - 1;
}

/* maxtask: the largest task of the program whose stamps these are (-1:
 * this one's, counted). */
static bool stamps_make(const ir_module *m, int M, int maxtask, stamps *S)
{
    int n = m->ops.n;
    if (maxtask < 0) {
        maxtask = 0;
        for (int i = 0; i < n; i++)
            maxtask = IR_OP(m, i)->task > maxtask ? IR_OP(m, i)->task : maxtask;
    }
    *S = (stamps){.M = M, .ntask = maxtask + 3, .gather = maxtask + 1};
    size_t nk = (size_t)S->ntask * (size_t)M;
    S->start = calloc(nk + 1, sizeof *S->start);
    S->seq = malloc((size_t)(n + 1) * sizeof *S->seq);
    S->pos = malloc((size_t)(n + 1) * sizeof *S->pos);
    S->task = malloc((size_t)(n + 1) * sizeof *S->task);
    S->mb = malloc((size_t)(n + 1) * sizeof *S->mb);
    S->gone = malloc((size_t)n + 1);
    int *key = malloc((size_t)(n + 1) * sizeof *key);
    int *fill = malloc((nk + 1) * sizeof *fill);
    if (!S->start || !S->seq || !S->pos || !S->task || !S->mb || !S->gone || !key || !fill) {
        stamps_free(S);
        free(key);
        free(fill);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const ir_op *op = IR_OP(m, i);
        S->task[i] = op->task;
        S->mb[i] = op->mb;
        if (op->task == 0 && op->code == IR_INSERT && op->nin == 2 && op->in[1]->def->task) {
            S->task[i] = S->gather;
            S->mb[i] = op->in[1]->def->mb;
        }
        key[i] = key_at(S, i);
        S->gone[i] = key[i] >= 0 && middle(S, S->mb[i]);
        if (key[i] >= 0)
            S->start[key[i] + 1]++;
    }
    for (size_t k = 0; k < nk; k++)
        S->start[k + 1] += S->start[k];
    memcpy(fill, S->start, (nk + 1) * sizeof *fill);
    for (int i = 0; i < n; i++) {
        int k = key[i];
        S->pos[i] = k >= 0 ? fill[k] - S->start[k] : -1;
        if (k >= 0)
            S->seq[fill[k]++] = i;
    }
    free(key);
    free(fill);
    return true;
}

/* Whether the instances of task may lie in pieces: sends and receives,
 * and the outputs' gathering, spread over the program; a task's ops lie
 * together. */
static bool in_pieces(const stamps *S, int task)
{
    return task == -1 || task == S->gather;
}

/* Piece pc of a held program (stamps S): microbatch 2's and 1's ops it
 * copies are stamps *k2 and *k1, places [*first, *end) of them. False
 * when the piece is malformed (a task out of range, not a middle
 * microbatch, places outside microbatch 2's, microbatch 1 of another
 * length). */
static bool piece_span(const stamps *S, const ir_piece *pc, int *k2, int *k1, int *first,
                       int *end)
{
    if (pc->task < -1 || pc->task == 0 || pc->task > S->ntask - 2 || !middle(S, pc->mb))
        return false;
    *k2 = stamp_key(S, pc->task, TEMPLATE);
    *k1 = stamp_key(S, pc->task, TEMPLATE - 1);
    int n = seq_len(S, *k2);
    *first = in_pieces(S, pc->task) ? pc->first : 0;
    *end = in_pieces(S, pc->task) ? pc->end : n;
    return seq_len(S, *k1) == n && *first >= 0 && *end <= n;
}

/* Microbatch mb's copy of an offset or tag that is x2 in microbatch 2's
 * op and x1 in microbatch 1's: stepped on by their difference. */
static int64_t stepped(int64_t x2, int64_t x1, int mb)
{
    return x2 + (int64_t)(mb - TEMPLATE) * (x2 - x1);
}

/* [m->next_id]: the index of the op that makes each value, -1 for none
 * (malloc'd; NULL: no memory). */
static int *def_indices(const ir_module *m)
{
    int *at = malloc((size_t)(m->next_id + 1) * sizeof *at);
    if (!at)
        return NULL;
    memset(at, 0xff, (size_t)(m->next_id + 1) * sizeof *at);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int r = 0; r < op->nres; r++)
            if (op->res[r]->id >= 0 && op->res[r]->id < m->next_id)
                at[op->res[r]->id] = i;
    }
    return at;
}

/* ---- sharing ---- */

typedef struct share {
    ir_module *m;
    bool held;           /* split held: placeholders for middle tasks (placeholder) */
    stamps S;
    int *at;             /* [next_id]: the index of the op that makes each value (-1: none) */
    ir_op **out;         /* take_out's new op list (malloc'd) */
} share;

/* The index of the op that makes v (-1: none). */
static int index_of(const share *H, const ir_value *v)
{
    return v->id >= 0 && v->id < H->m->next_id ? H->at[v->id] : -1;
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Whether op x (microbatch j) and its template t (microbatch 2) carry the
 * same attributes but for an offset and a tag that step by what t's and
 * t1's (microbatch 1's) differ by, once per microbatch. */
static bool attrs_alike(const ir_op *x, const ir_op *t, const ir_op *t1, int j)
{
    if (x->a == t->a) /* then t's offset and tag take no step */
        return t->a == t1->a || (t->a->offset == t1->a->offset && t->a->tag == t1->a->tag);
    ir_attrs a, b;
    memcpy(&a, x->a, sizeof a);
    memcpy(&b, t->a, sizeof b);
    int64_t d = j - TEMPLATE;
    if (a.offset - b.offset != d * (b.offset - t1->a->offset) ||
        a.tag - b.tag != d * (b.tag - t1->a->tag))
        return false;
    if (!same_text(a.name, b.name) || !same_text(a.init_param, b.init_param))
        return false;
    a.offset = b.offset = a.tag = b.tag = 0;
    a.name = b.name = a.init_param = b.init_param = NULL;
    return !memcmp(&a, &b, sizeof a); /* interned copies: zero padding */
}

/* Whether op is a middle microbatch's task held by the split
 * (pass_pipeline_split_held): an `instances` op of no run yet. */
static bool placeholder(const ir_op *op)
{
    return op->code == IR_INSTANCES && op->a->tag < 0;
}

/* Whether operand y of op x of microbatch j is to operand z of its
 * template (microbatch 2's) what the copy makes of it: the same value
 * made once, or the value of the same place of microbatch j where z is
 * microbatch 2's, of microbatch j - 1 where z is microbatch 1's. In a
 * split held, a middle microbatch's send reads microbatch 2's value in
 * place of its own (which its held task stands for): microbatch 2's send
 * reads it too. */
static bool operand_alike(const share *H, const ir_op *x, const ir_value *y, const ir_value *z,
                          int j)
{
    const stamps *S = &H->S;
    int iy = index_of(H, y), iz = index_of(H, z);
    if (iy < 0 || iz < 0)
        return false;
    if (y == z)
        return S->task[iz] == 0 ||
               (H->held && x->code == IR_SEND && S->task[iz] > 0 && S->mb[iz] == TEMPLATE);
    if (y->res != z->res || S->task[iy] == 0 || S->task[iy] != S->task[iz] ||
        S->pos[iy] != S->pos[iz])
        return false;
    int jy = S->mb[iy], jz = S->mb[iz];
    return (jz == TEMPLATE && jy == j) || (jz == TEMPLATE - 1 && jy == j - 1);
}

static bool op_alike(const share *H, const ir_op *x, const ir_op *t, const ir_op *t1, int j)
{
    if (x->code != t->code || x->nin != t->nin || x->nres != t->nres || x->phase != t->phase ||
        x->rep != t->rep || x->recompute != t->recompute || x->task != t->task ||
        x->loc.line != t->loc.line || x->loc.col != t->loc.col || t1->code != t->code ||
        !attrs_alike(x, t, t1, j))
        return false;
    for (int r = 0; r < x->nres; r++) {
        const ir_value *a = x->res[r], *b = t->res[r];
        if (!ir_type_eq(&a->type, &b->type) || memcmp(&a->sh, &b->sh, sizeof a->sh) ||
            !same_text(a->name, b->name))
            return false;
    }
    for (int k = 0; k < x->nin; k++)
        if (!operand_alike(H, x, x->in[k], t->in[k], j))
            return false;
    return true;
}

/* Every middle microbatch's stamps against the template's. */
static bool all_alike(const share *H)
{
    const ir_module *m = H->m;
    const stamps *S = &H->S;
    for (int task = -1; task < S->ntask - 1; task++) {
        if (task == 0)
            continue;
        int k2 = stamp_key(S, task, TEMPLATE), k1 = stamp_key(S, task, TEMPLATE - 1);
        int n = seq_len(S, k2);
        for (int j = TEMPLATE + 1; j < S->M - 1; j++) {
            int kj = stamp_key(S, task, j);
            if (!in_pieces(S, task) && seq_len(S, kj) == 1 && placeholder(seq_op(m, S, kj, 0))) {
                /* held by the split: microbatch 2's instance, by construction */
                if (seq_len(S, k1) != n)
                    return false;
                continue;
            }
            if (seq_len(S, kj) != n || (n && seq_len(S, k1) != n))
                return false;
            /* a task's instance lies in one piece, whole: a pass may add
             * ops to its template or drop some */
            if (!in_pieces(S, task) && n &&
                S->seq[S->start[kj] + n - 1] - S->seq[S->start[kj]] != n - 1)
                return false;
            for (int p = 0; p < n; p++)
                if (!op_alike(H, seq_op(m, S, kj, p), seq_op(m, S, k2, p),
                              seq_op(m, S, k1, p), j))
                    return false;
        }
    }
    return true;
}

/* Whether op i is a middle microbatch's (of a task, a send or receive, or
 * the gathering of an output). */
static bool removed(const stamps *S, int i)
{
    return i >= 0 && S->gone[i];
}

static bool value_removed(const share *H, const ir_value *v)
{
    return removed(&H->S, index_of(H, v));
}

/* Nothing reads a middle microbatch's value but the middle microbatches
 * and the last microbatch's ops, and those only microbatch M - 2's: each
 * such operand is pointed at its template's value (microbatch 2's). */
static bool readers_kept(share *H)
{
    ir_module *m = H->m;
    const stamps *S = &H->S;
    int M = S->M;
    for (int i = 0; i < m->outputs.n; i++)
        if (value_removed(H, IR_OUTPUT(m, i)->v))
            return false;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        if (value_removed(H, u->src) || value_removed(H, u->v) ||
            (u->grad && value_removed(H, u->grad)))
            return false;
    }
    if (m->train.loss && value_removed(H, m->train.loss))
        return false;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (removed(S, i))
            continue;
        for (int k = 0; k < op->nin; k++) {
            int d = index_of(H, op->in[k]);
            if (removed(S, d) &&
                (key_at(S, i) < 0 || S->mb[i] != M - 1 || S->mb[d] != M - 2))
                return false;
        }
    }
    for (int i = 0; i < m->ops.n; i++) {
        ir_op *op = IR_OP(m, i);
        if (removed(S, i))
            continue;
        for (int k = 0; k < op->nin; k++) {
            int d = index_of(H, op->in[k]);
            if (!removed(S, d))
                continue;
            int kt = stamp_key(S, S->task[d], TEMPLATE);
            op->in[k] = seq_op(m, S, kt, S->pos[d])->res[op->in[k]->res];
        }
    }
    return true;
}

/* Whether op i starts a piece of a run (which ends at op i - 1, or goes
 * on with op i). */
static bool new_piece(const stamps *S, int i)
{
    return i == 0 || !removed(S, i - 1) || S->task[i - 1] != S->task[i] ||
           S->mb[i - 1] != S->mb[i] || S->pos[i - 1] + 1 != S->pos[i];
}

/* Each run of middle microbatches' ops becomes an `instances` op. */
static void take_out(share *H)
{
    ir_module *m = H->m;
    const stamps *S = &H->S;
    int n = m->ops.n, nruns = 0, npieces = 0;
    for (int i = 0; i < n; i++)
        if (removed(S, i)) {
            nruns += i == 0 || !removed(S, i - 1);
            npieces += new_piece(S, i);
        }
    ir_shared *sh = calloc(1, sizeof *sh);
    int *run = malloc((size_t)(nruns + 1) * sizeof *run);
    ir_piece *piece = malloc((size_t)(npieces + 1) * sizeof *piece);
    ir_op **out = H->out = malloc((size_t)(n + 1) * sizeof *out);
    if (!sh || !run || !piece || !out) {
        free(sh);
        free(run);
        free(piece);
        su_oom(m->oom);
    }
    *sh = (ir_shared){.microbatches = S->M, .nruns = nruns, .run = run, .piece = piece,
                      .maxtask = S->gather - 1,
                      .p2p = seq_len(S, stamp_key(S, -1, TEMPLATE)),
                      .gathers = seq_len(S, stamp_key(S, S->gather, TEMPLATE))};
    m->shared = sh; /* the module's to free, whatever happens next */
    int r = 0, q = 0, no = 0;
    for (int i = 0; i < n; i++) {
        ir_op *op = IR_OP(m, i);
        if (!removed(S, i)) {
            out[no++] = op;
            continue;
        }
        if (i == 0 || !removed(S, i - 1)) {
            run[r] = q;
            ir_op *x = ir_append_interned(m, IR_INSTANCES, NULL, 0,
                                          ir_attrs_intern(m, &(ir_attrs){.tag = r}), NULL);
            m->ops.n--; /* placed below, not at the end */
            out[no++] = x;
            r++;
        }
        if (new_piece(S, i))
            piece[q++] = (ir_piece){.task = S->task[i], .mb = S->mb[i], .first = S->pos[i],
                                    .end = S->pos[i] + 1};
        else
            piece[q - 1].end++;
    }
    run[nruns] = q;
    memcpy(m->ops.v, out, (size_t)no * sizeof *out);
    m->ops.n = no;
}

static void share_work(void *arg)
{
    share *H = arg;
    if (!all_alike(H) || !readers_kept(H))
        return;
    take_out(H);
}

bool pass_instances_placeholders(const ir_module *m)
{
    for (int i = 0; i < m->ops.n; i++)
        if (placeholder(IR_OP(m, i)))
            return true;
    return false;
}

bool pass_share_instances(ir_module *m)
{
    int M = m->pipe.microbatches;
    if (m->stage < 0 || m->shared || M < TEMPLATE + 3)
        return false;
    share H = {.m = m, .at = def_indices(m), .held = pass_instances_placeholders(m)};
    if (!H.at || !stamps_make(m, M, -1, &H.S)) {
        free(H.at);
        su_oom(m->oom);
    }
    bool done = su_guarded(m->oom, share_work, &H);
    stamps_free(&H.S);
    free(H.at);
    free(H.out);
    if (!done)
        su_oom(m->oom);
    if (m->shared && !m->shared->nruns) {
        ir_shared_free(m->shared);
        m->shared = NULL;
    }
    return m->shared != NULL;
}

/* ---- expansion ---- */

typedef struct expand {
    ir_module *m;
    stamps S;            /* of the program with the middle microbatches out */
    su_vec old;          /* its ops */
    int *at;             /* [next_id then]: the index in old of the op making each value */
    int next_id;
    su_arena scratch;
    ir_op ***made;       /* [key]: a middle microbatch's copies, by place */
    int *src, *mbof;     /* wanted: each op's index in old (a copy: its
                          * template's) and microbatch (-1: kept), malloc'd */
    int nmap, capmap;
    pass_rewrite *rw;    /* wanted: the kept ops' operands changed, malloc'd */
    int nrw, caprw;
    bool ok;
} expand;

/* The op just put at the end of the program came from old op src, the
 * copy for microbatch mb (-1: old op src itself). */
static void note(expand *E, int src, int mb)
{
    if (E->capmap < 0) /* no map wanted */
        return;
    if (E->nmap == E->capmap) {
        int cap = E->capmap ? 2 * E->capmap : 1024;
        int *a = realloc(E->src, (size_t)cap * sizeof *a);
        if (a)
            E->src = a;
        int *b = a ? realloc(E->mbof, (size_t)cap * sizeof *b) : NULL;
        if (b)
            E->mbof = b;
        if (!a || !b)
            su_oom(E->m->oom);
        E->capmap = cap;
    }
    E->src[E->nmap] = src;
    E->mbof[E->nmap++] = mb;
}

/* Operand k of kept op op (old op i) is about to change: noted (for the
 * map, and to put it back should the expansion fail). */
static void rewritten(expand *E, ir_op *op, int i, int k)
{
    if (E->nrw == E->caprw) {
        int cap = E->caprw ? 2 * E->caprw : 64;
        pass_rewrite *a = realloc(E->rw, (size_t)cap * sizeof *a);
        if (!a)
            su_oom(E->m->oom);
        E->rw = a;
        E->caprw = cap;
    }
    E->rw[E->nrw++] = (pass_rewrite){.op = op, .held = i, .at = k, .old = op->in[k]};
}

/* The index in old of the op that makes v (-1: none, or made since). */
static int ex_index(const expand *E, const ir_value *v)
{
    return v->id >= 0 && v->id < E->next_id ? E->at[v->id] : -1;
}

/* The op of stamp (task, mb) at place p: kept, or made. */
static ir_op *ex_op(const expand *E, int task, int mb, int p)
{
    if (task < -1 || task > E->S.ntask - 2 || task == 0 || mb < 0 || mb >= E->S.M)
        return NULL;
    int k = stamp_key(&E->S, task, mb);
    if (middle(&E->S, mb))
        return E->made[k] && p >= 0 && p < seq_len(&E->S, stamp_key(&E->S, task, TEMPLATE))
                   ? E->made[k][p]
                   : NULL;
    if (p < 0 || p >= seq_len(&E->S, k))
        return NULL;
    return (ir_op *)E->old.v[E->S.seq[E->S.start[k] + p]];
}

/* Microbatch j's copy of template operand z. */
static ir_value *ex_operand(expand *E, const ir_value *z, int j)
{
    int i = ex_index(E, z);
    if (i >= 0 && E->S.task[i] == 0)
        return (ir_value *)z;
    int t = i >= 0 ? E->S.task[i] : 0, mb = i >= 0 ? E->S.mb[i] : -1;
    const ir_op *x = mb == TEMPLATE     ? ex_op(E, t, j, E->S.pos[i])
                     : mb == TEMPLATE - 1 ? ex_op(E, t, j - 1, E->S.pos[i])
                                          : NULL;
    if (!x || z->res >= x->nres) {
        E->ok = false;
        return (ir_value *)z;
    }
    return x->res[z->res];
}

/* Microbatch j's copy of template op t (template index ti, at place p of
 * its stamp; t1: microbatch 1's op there). */
static void copy_op(expand *E, const ir_op *t, int ti, const ir_op *t1, int j, int p)
{
    ir_module *m = E->m;
    ir_value *in[16];
    ir_type ty[16];
    if (t->nin > 16 || t->nres > 16 || t1->code != t->code) {
        E->ok = false;
        return;
    }
    for (int k = 0; k < t->nin; k++)
        in[k] = ex_operand(E, t->in[k], j);
    for (int r = 0; r < t->nres; r++)
        ty[r] = t->res[r]->type;
    const ir_attrs *a = t->a;
    if (t->a != t1->a && (t->a->offset != t1->a->offset || t->a->tag != t1->a->tag)) {
        ir_attrs c = *t->a;
        c.offset = stepped(t->a->offset, t1->a->offset, j);
        c.tag = stepped(t->a->tag, t1->a->tag, j);
        a = ir_attrs_intern(m, &c);
    }
    ir_op *x = ir_append_interned(m, t->code, in, t->nin, a, ty);
    x->rep = t->rep;
    x->phase = t->phase;
    x->recompute = t->recompute;
    x->task = t->task;
    x->mb = t->task ? j : t->mb; /* a gathering's insert: made once, as its template */
    x->loc = t->loc;
    for (int r = 0; r < t->nres; r++) {
        x->res[r]->sh = t->res[r]->sh;
        x->res[r]->name = t->res[r]->name;
    }
    E->made[stamp_key(&E->S, E->S.task[ti], j)][p] = x;
    note(E, ti, j);
}

static void expand_run(expand *E, int r)
{
    const ir_shared *sh = E->m->shared;
    const stamps *S = &E->S;
    for (int q = sh->run[r]; q < sh->run[r + 1] && E->ok; q++) {
        const ir_piece *pc = &sh->piece[q];
        int k2, k1, first, end;
        if (!piece_span(S, pc, &k2, &k1, &first, &end)) {
            E->ok = false;
            return;
        }
        int n = seq_len(S, k2), kj = stamp_key(S, pc->task, pc->mb);
        if (!E->made[kj]) {
            E->made[kj] = su_alloc(&E->scratch, (size_t)(n + 1) * sizeof **E->made);
            memset(E->made[kj], 0, (size_t)(n + 1) * sizeof **E->made);
        }
        for (int p = first; p < end && E->ok; p++) {
            int ti = S->seq[S->start[k2] + p];
            copy_op(E, E->old.v[ti], ti, E->old.v[S->seq[S->start[k1] + p]], pc->mb, p);
        }
    }
}

static void expand_work(void *arg)
{
    expand *E = arg;
    ir_module *m = E->m;
    const ir_shared *sh = m->shared;
    const stamps *S = &E->S;
    int M = sh->microbatches;
    su_arena_init(&E->scratch, m->oom);
    E->old = m->ops;
    size_t nk = (size_t)S->ntask * (size_t)M;
    E->made = su_alloc(&E->scratch, (nk + 1) * sizeof *E->made);
    memset(E->made, 0, (nk + 1) * sizeof *E->made);
    /* what the pieces index must be as it was */
    if (seq_len(S, stamp_key(S, -1, TEMPLATE)) != sh->p2p ||
        seq_len(S, stamp_key(S, S->gather, TEMPLATE)) != sh->gathers) {
        E->ok = false;
        return;
    }
    m->ops = (su_vec){0}; /* the program again, op by op */
    for (int i = 0; i < E->old.n && E->ok; i++) {
        ir_op *op = E->old.v[i];
        if (op->code == IR_INSTANCES) {
            if (op->a->tag < 0 || op->a->tag >= sh->nruns) {
                E->ok = false;
                break;
            }
            expand_run(E, (int)op->a->tag);
            continue;
        }
        if (key_at(S, i) >= 0 && S->mb[i] == M - 1)
            for (int k = 0; k < op->nin; k++) { /* a running sum: microbatch M - 2's */
                int d = ex_index(E, op->in[k]);
                if (d < 0 || key_at(S, d) < 0 || S->mb[d] != TEMPLATE)
                    continue;
                ir_op *x = ex_op(E, S->task[d], M - 2, S->pos[d]);
                if (!x || op->in[k]->res >= x->nres) {
                    E->ok = false;
                    break;
                }
                rewritten(E, op, i, k);
                op->in[k] = x->res[op->in[k]->res];
            }
        su_vec_push(&m->ops, m->oom, op);
        note(E, i, -1);
    }
}

bool pass_expand_instances(ir_module *m, su_buf *err)
{
    return pass_expand_instances_map(m, NULL, err);
}

bool pass_expand_instances_map(ir_module *m, pass_expansion *map, su_buf *err)
{
    if (map)
        *map = (pass_expansion){0};
    if (!m->shared)
        return true;
    int M = m->shared->microbatches;
    expand E = {.m = m, .ok = true, .at = def_indices(m), .next_id = m->next_id,
                .capmap = map ? 0 : -1};
    if (!E.at || !stamps_make(m, m->shared->microbatches, m->shared->maxtask, &E.S)) {
        free(E.at);
        su_oom(m->oom);
    }
    bool done = su_guarded(m->oom, expand_work, &E);
    stamps_free(&E.S);
    free(E.at);
    su_arena_free(&E.scratch);
    if (done && E.ok && map && E.nmap != m->ops.n)
        E.ok = false;
    if (done && E.ok) {
        if (map)
            *map = (pass_expansion){.src = E.src, .mb = E.mbof, .n = E.nmap,
                                    .microbatches = M, .rw = E.rw, .nrw = E.nrw};
        else
            free(E.rw);
        su_vec_free(&E.old);
        ir_shared_free(m->shared);
        m->shared = NULL;
        return true;
    }
    free(E.src);
    free(E.mbof);
    /* the program as it was, with the middle microbatches out (and the
     * last microbatch's sums reading microbatch 2's again) */
    for (int k = E.nrw - 1; k >= 0; k--)
        E.rw[k].op->in[E.rw[k].at] = E.rw[k].old;
    free(E.rw);
    if (E.old.v && m->ops.v != E.old.v) {
        su_vec_free(&m->ops);
        m->ops = E.old;
    }
    if (!done)
        su_oom(m->oom);
    su_buf_printf(err, "internal error: stage %d's middle microbatches could not be put back "
                  "from microbatch %d's ops", m->stage, TEMPLATE);
    return false;
}

void pass_expansion_free(pass_expansion *map)
{
    free(map->src);
    free(map->mb);
    free(map->rw);
    *map = (pass_expansion){0};
}

/* ---- what the held program hides, for the passes that take it ---- */

/* Held program m's stamps into *S and the index of the op making each
 * value (def_indices), which the caller frees with stamps_free and free;
 * out of memory jumps to m->oom. */
static int *held_tables(const ir_module *m, stamps *S)
{
    const ir_shared *sh = m->shared;
    int *def = def_indices(m);
    if (!def || !stamps_make(m, sh->microbatches, sh->maxtask, S)) {
        free(def);
        su_oom(m->oom);
    }
    return def;
}

bool pass_instances_verify(const ir_module *m, su_buf *err, int *bad)
{
    const ir_shared *sh = m->shared;
    *bad = -1;
    if (!sh)
        return true;
    stamps S;
    int *def = held_tables(m, &S);
    for (int i = 0; i < m->ops.n && *bad < 0; i++) {
        if (key_at(&S, i) >= 0)
            continue; /* a task's, a send's or receive's, a gathering's */
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            const ir_value *z = op->in[k];
            int d = z->id >= 0 && z->id < m->next_id ? def[z->id] : -1;
            if (d >= 0 && key_at(&S, d) >= 0 && S.mb[d] == TEMPLATE) {
                *bad = i;
                su_buf_printf(err, "stage %d holds microbatches %d to %d once, "
                              "as microbatch %d, but %s (op %d), made once, reads microbatch "
                              "%d's value: it would read that microbatch's alone once they are "
                              "put back", m->stage, TEMPLATE + 1, sh->microbatches - 2,
                              TEMPLATE, ir_ops[op->code].name, i, TEMPLATE);
                break;
            }
        }
    }
    stamps_free(&S);
    free(def);
    return *bad < 0;
}

bool pass_instances_hidden(const ir_module *m, int *count, int *at)
{
    const ir_shared *sh = m->shared;
    if (!sh)
        return true;
    stamps S;
    int *def = held_tables(m, &S);
    bool ok = true;
    for (int i = 0; i < m->ops.n && ok; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code != IR_INSTANCES)
            continue;
        if (op->a->tag < 0 || op->a->tag >= sh->nruns) {
            ok = false;
            break;
        }
        for (int q = sh->run[op->a->tag]; q < sh->run[op->a->tag + 1] && ok; q++) {
            const ir_piece *pc = &sh->piece[q];
            int k2, k1, first, end;
            if (pc->mb != TEMPLATE + 1) /* microbatch 3 reads microbatch 2's */
                continue;
            if (!piece_span(&S, pc, &k2, &k1, &first, &end)) {
                ok = false;
                break;
            }
            for (int p = first; p < end; p++) {
                const ir_op *t = seq_op(m, &S, k2, p);
                for (int k = 0; k < t->nin; k++) {
                    const ir_value *z = t->in[k];
                    int d = z->id >= 0 && z->id < m->next_id ? def[z->id] : -1;
                    if (d < 0 || key_at(&S, d) < 0 || S.mb[d] != TEMPLATE - 1)
                        continue;
                    int kd = stamp_key(&S, S.task[d], TEMPLATE);
                    if (S.pos[d] >= seq_len(&S, kd)) {
                        ok = false;
                        break;
                    }
                    const ir_op *x = seq_op(m, &S, kd, S.pos[d]);
                    if (z->res >= x->nres) {
                        ok = false;
                        break;
                    }
                    int v = x->res[z->res]->id;
                    count[v]++;
                    at[v] = i; /* the instances ops come in order */
                }
            }
        }
    }
    stamps_free(&S);
    free(def);
    return ok;
}

int pass_instances_p2p(const ir_module *m, pass_p2p_op **out)
{
    *out = NULL;
    const ir_shared *sh = m->shared;
    stamps S;
    if (sh && !stamps_make(m, sh->microbatches, sh->maxtask, &S))
        su_oom(m->oom);
    pass_p2p_op *rec = NULL;
    int n = 0, cap = 0, at = 0;
    bool ok = true;
    for (int i = 0; i < m->ops.n && ok; i++) {
        const ir_op *op = IR_OP(m, i);
        int q0 = 0, q1 = 1; /* an op kept: itself, once */
        if (op->code == IR_INSTANCES) {
            if (!sh || op->a->tag < 0 || op->a->tag >= sh->nruns) {
                ok = false;
                break;
            }
            q0 = sh->run[op->a->tag];
            q1 = sh->run[op->a->tag + 1];
        }
        for (int q = q0; q < q1 && ok; q++) {
            int k2 = -1, k1 = -1, first = 0, end = 1, mb = -1;
            if (op->code == IR_INSTANCES) {
                mb = sh->piece[q].mb;
                if (!piece_span(&S, &sh->piece[q], &k2, &k1, &first, &end)) {
                    ok = false;
                    break;
                }
            }
            for (int p = first; p < end; p++, at++) {
                const ir_op *t = k2 < 0 ? op : seq_op(m, &S, k2, p);
                if (ir_ops[t->code].cls != IR_C_P2P || t->code == IR_INSTANCES)
                    continue;
                int64_t tag = k2 < 0 ? ir_p2p_tag(t) /* the copy's, as copy_op steps it */
                                     : stepped(ir_p2p_tag(t), ir_p2p_tag(seq_op(m, &S, k1, p)), mb);
                if (n == cap) {
                    cap = cap ? 2 * cap : 256;
                    pass_p2p_op *r = realloc(rec, (size_t)cap * sizeof *r);
                    if (!r) {
                        free(rec);
                        if (sh)
                            stamps_free(&S);
                        su_oom(m->oom);
                    }
                    rec = r;
                }
                rec[n++] = (pass_p2p_op){.op = t, .tag = tag, .index = at};
            }
        }
    }
    if (sh)
        stamps_free(&S);
    if (!ok) {
        free(rec);
        return -1;
    }
    *out = rec;
    return n;
}
