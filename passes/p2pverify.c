/* p2pverify.c: the cross-stage verifier (pass_verify_p2p, passes.h): the
 * stages' programs run together, every send meeting its recv. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void p2p_mismatch(su_buf *err, int s, int i, const ir_op *op, int t, int k,
                         const ir_op *snd)
{
    su_buf_printf(err, "stage %d op %d (recv, tag %lld, %s[%lld elements]) meets stage %d op %d "
                  "(send, tag %lld, %s[%lld elements])", s, i, (long long)op->a->tag,
                  ir_dtype_name(op->res[0]->type.dtype),
                  (long long)ir_type_numel(&op->res[0]->type), t, k, (long long)snd->a->tag,
                  ir_dtype_name(snd->in[0]->type.dtype),
                  (long long)ir_type_numel(&snd->in[0]->type));
}

/* Runs every stage's program together: compute and collectives (within
 * one stage) proceed; a send and its recv proceed together when both
 * stages have reached them (rendezvous), and must agree on tag and type. */
typedef struct p2p_run {
    ir_module *const *stage;
    int n;
    su_buf *err;
    int *pc;                /* [n]: each stage's next op */
    bool ok;
} p2p_run;

static void verify_p2p(void *arg)
{
    p2p_run *r = arg;
    ir_module *const *stage = r->stage;
    int n = r->n;
    su_buf *err = r->err;
    int *pc = r->pc = su_xmalloc(err->oom, (size_t)n * sizeof *pc);
    memset(pc, 0, (size_t)n * sizeof *pc);
    bool ok = true, progress = true;
    while (ok && progress) {
        progress = false;
        for (int s = 0; s < n; s++) /* up to the next send or recv */
            while (pc[s] < stage[s]->ops.n && ir_ops[IR_OP(stage[s], pc[s])->code].cls != IR_C_P2P) {
                pc[s]++;
                progress = true;
            }
        for (int s = 0; ok && s < n; s++) {
            if (pc[s] >= stage[s]->ops.n || IR_OP(stage[s], pc[s])->code != IR_SEND)
                continue;
            const ir_op *snd = IR_OP(stage[s], pc[s]);
            int t = (int)snd->a->peer;
            if (t < 0 || t >= n || pc[t] >= stage[t]->ops.n)
                continue;
            const ir_op *rcv = IR_OP(stage[t], pc[t]);
            if (rcv->code != IR_RECV || rcv->a->peer != s)
                continue;
            if (rcv->a->tag != snd->a->tag || !ir_type_eq(&rcv->res[0]->type, &snd->in[0]->type)) {
                p2p_mismatch(err, t, pc[t], rcv, s, pc[s], snd);
                ok = false;
                break;
            }
            pc[s]++, pc[t]++;
            progress = true;
        }
    }
    for (int s = 0; ok && s < n; s++)
        if (pc[s] < stage[s]->ops.n) {
            su_buf_puts(err, "deadlock: every unfinished stage waits:");
            for (int t = 0; t < n; t++)
                if (pc[t] < stage[t]->ops.n) {
                    const ir_op *op = IR_OP(stage[t], pc[t]);
                    su_buf_printf(err, " stage %d op %d (%s %s stage %lld, tag %lld);", t, pc[t],
                                  ir_ops[op->code].name, op->code == IR_SEND ? "to" : "from",
                                  (long long)op->a->peer, (long long)op->a->tag);
                }
            ok = false;
        }
    r->ok = ok;
}

bool pass_verify_p2p(ir_module *const *stage, int n, su_buf *err)
{
    p2p_run r = {.stage = stage, .n = n, .err = err};
    bool done = su_guarded(err->oom, verify_p2p, &r);
    free(r.pc);
    if (!done)
        su_oom(err->oom);
    return r.ok;
}
