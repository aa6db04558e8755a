/* p2pverify.c: the cross-stage verifier (pass_verify_p2p, passes.h): the
 * stages' programs run together, every send meeting its recv. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sends' and receives' types: what is sent, what is received. */
static const ir_type *p2p_type(const ir_op *op)
{
    return op->code == IR_SEND ? &op->in[0]->type : &op->res[0]->type;
}

static void p2p_mismatch(su_buf *err, int s, const pass_p2p_op *rcv, int t,
                         const pass_p2p_op *snd)
{
    const ir_type *rt = p2p_type(rcv->op), *st = p2p_type(snd->op);
    su_buf_printf(err, "stage %d op %d (recv, tag %lld, %s[%lld elements]) meets stage %d op %d "
                  "(send, tag %lld, %s[%lld elements])", s, rcv->index, (long long)rcv->tag,
                  ir_dtype_name(rt->dtype), (long long)ir_type_numel(rt), t, snd->index,
                  (long long)snd->tag, ir_dtype_name(st->dtype), (long long)ir_type_numel(st));
}

/* Runs every stage's program together: compute and collectives (within
 * one stage) proceed; a send and its recv proceed together when both
 * stages have reached them (rendezvous), and must agree on tag and type.
 * Each stage's sends and receives in its order (pass_instances_p2p: a
 * held stage's middle microbatches' too, as expanded). */
typedef struct p2p_run {
    ir_module *const *stage;
    int n;
    su_buf *err;
    pass_p2p_op **rec;      /* [n]: each stage's sends and receives */
    int *nrec;
    int *pc;                /* [n]: each stage's next one */
    bool ok;
} p2p_run;

static void verify_p2p(void *arg)
{
    p2p_run *r = arg;
    int n = r->n;
    su_buf *err = r->err;
    r->rec = su_xmalloc(err->oom, (size_t)n * sizeof *r->rec);
    memset(r->rec, 0, (size_t)n * sizeof *r->rec);
    int *nrec = r->nrec = su_xmalloc(err->oom, (size_t)n * sizeof *nrec);
    int *pc = r->pc = su_xmalloc(err->oom, (size_t)n * sizeof *pc);
    memset(pc, 0, (size_t)n * sizeof *pc);
    for (int s = 0; s < n; s++) {
        nrec[s] = pass_instances_p2p(r->stage[s], &r->rec[s]);
        if (nrec[s] < 0) {
            su_buf_printf(err, "stage %d: its middle microbatches, held once, are malformed", s);
            r->ok = false;
            return;
        }
    }
    pass_p2p_op **rec = r->rec;
    bool ok = true, progress = true;
    while (ok && progress) {
        progress = false;
        for (int s = 0; ok && s < n; s++) {
            if (pc[s] >= nrec[s] || rec[s][pc[s]].op->code != IR_SEND)
                continue;
            const pass_p2p_op *snd = &rec[s][pc[s]];
            int t = (int)snd->op->a->peer;
            if (t < 0 || t >= n || pc[t] >= nrec[t])
                continue;
            const pass_p2p_op *rcv = &rec[t][pc[t]];
            if (rcv->op->code != IR_RECV || rcv->op->a->peer != s)
                continue;
            if (rcv->tag != snd->tag || !ir_type_eq(p2p_type(rcv->op), p2p_type(snd->op))) {
                p2p_mismatch(err, t, rcv, s, snd);
                ok = false;
                break;
            }
            pc[s]++, pc[t]++;
            progress = true;
        }
    }
    for (int s = 0; ok && s < n; s++)
        if (pc[s] < nrec[s]) {
            su_buf_puts(err, "deadlock: every unfinished stage waits:");
            for (int t = 0; t < n; t++)
                if (pc[t] < nrec[t]) {
                    const pass_p2p_op *x = &rec[t][pc[t]];
                    su_buf_printf(err, " stage %d op %d (%s %s stage %lld, tag %lld);", t,
                                  x->index, ir_ops[x->op->code].name,
                                  x->op->code == IR_SEND ? "to" : "from",
                                  (long long)x->op->a->peer, (long long)x->tag);
                }
            ok = false;
        }
    r->ok = ok;
}

bool pass_verify_p2p(ir_module *const *stage, int n, su_buf *err)
{
    p2p_run r = {.stage = stage, .n = n, .err = err};
    bool done = su_guarded(err->oom, verify_p2p, &r);
    for (int s = 0; r.rec && s < n; s++)
        free(r.rec[s]);
    free(r.rec);
    free(r.nrec);
    free(r.pc);
    if (!done)
        su_oom(err->oom);
    return r.ok;
}
