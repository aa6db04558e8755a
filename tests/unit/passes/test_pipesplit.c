/* test_pipesplit: the cross-stage verifier (pass_verify_p2p) on stage
 * programs written as IR, and the pipeline split's programs passing it for
 * every schedule. */
#include "check.h"
#include "passes/passes.h"

#include <setjmp.h>
#include <stdlib.h>

static jmp_buf oom;

static ir_module *parse(const char *text)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    ir_module *m = ir_parse(&src, &d, &oom);
    if (!m) {
        fprintf(stderr, "test_pipesplit: bad test text:\n%s\n", d.msg.s);
        abort();
    }
    su_diag_free(&d);
    return m;
}

#define HEAD(s) "mesh pp = 2\npartitioned\npipeline over pp repeats 2 microbatches 1 schedule gpipe stage " s "\n"

/* Stage 0 and stage 1's programs; verifies them together, returns whether
 * they pass and the message. */
static bool verify(const char *s0, const char *s1, char *msg, size_t n)
{
    ir_module *st[2] = {parse(s0), parse(s1)};
    su_buf err;
    su_buf_init(&err, &oom);
    bool ok = pass_verify_p2p(st, 2, &err);
    snprintf(msg, n, "%s", err.s ? err.s : "");
    su_buf_free(&err);
    ir_module_free(st[0]);
    ir_module_free(st[1]);
    return ok;
}

static void test_verifier(void)
{
    char msg[512];
    /* an exchange: 0 sends then receives, 1 receives then sends */
    const char *s0 = HEAD("0") "%a = const {value = 1.0} : f32[]\n"
                               "send %a {peer = 1, tag = 7}\n"
                               "%b = recv {peer = 1, tag = 8} : f32[]\n";
    const char *s1 = HEAD("1") "%a = recv {peer = 0, tag = 7} : f32[]\n"
                               "send %a {peer = 0, tag = 8}\n";
    CHECK(verify(s0, s1, msg, sizeof msg));
    CHECK_STR(msg, "");

    /* stage programs print as they parse */
    for (int k = 0; k < 2; k++) {
        const char *text = k ? s1 : s0;
        ir_module *m = parse(text);
        su_buf b;
        su_buf_init(&b, &oom);
        ir_print(m, &b);
        CHECK_STR(b.s, text);
        su_buf_free(&b);
        ir_module_free(m);
    }

    /* both send first: with rendezvous sends, each waits for the other */
    const char *d1 = HEAD("1") "%c = const {value = 2.0} : f32[]\n"
                               "send %c {peer = 0, tag = 8}\n"
                               "%a = recv {peer = 0, tag = 7} : f32[]\n";
    CHECK(!verify(s0, d1, msg, sizeof msg));
    CHECK_STR(msg, "deadlock: every unfinished stage waits: stage 0 op 1 (send to stage 1, "
                   "tag 7); stage 1 op 1 (send to stage 0, tag 8);");

    /* the recv expects another message */
    const char *t1 = HEAD("1") "%a = recv {peer = 0, tag = 9} : f32[]\n"
                               "send %a {peer = 0, tag = 8}\n";
    CHECK(!verify(s0, t1, msg, sizeof msg));
    CHECK_STR(msg, "stage 1 op 0 (recv, tag 9, f32[1 elements]) meets stage 0 op 1 (send, tag "
                   "7, f32[1 elements])");

    /* the same message, another type */
    const char *y1 = HEAD("1") "%a = recv {peer = 0, tag = 7} : f32[2]\n"
                               "%z = const {value = 0.0} : f32[]\n"
                               "send %z {peer = 0, tag = 8}\n";
    CHECK(!verify(s0, y1, msg, sizeof msg));
    CHECK(strstr(msg, "f32[2 elements]") != NULL);

    /* a send nobody receives */
    const char *n1 = HEAD("1") "%z = const {value = 0.0} : f32[]\n"
                               "send %z {peer = 0, tag = 8}\n";
    CHECK(!verify(s0, n1, msg, sizeof msg));
    CHECK(strstr(msg, "deadlock") != NULL);
}

/* Stage s's sends and receives of microbatches' values (task -1): one
 * set of attributes for a value's every microbatch (peer and the tag of
 * microbatch 0's), each op's tag that plus its microbatch, no two alike.
 * The count of such ops, -1 when one breaks the rule. */
static int p2p_shared(const ir_module *st, int M)
{
    int n = 0, nsets = 0;
    for (int i = 0; i < st->ops.n; i++) {
        const ir_op *op = IR_OP(st, i);
        if ((op->code != IR_SEND && op->code != IR_RECV) || op->task != -1)
            continue;
        n++;
        if (ir_p2p_tag(op) != op->a->tag + op->mb || op->mb < 0 || op->mb >= M)
            return -1;
        bool first = true; /* the set's first op: its other ops are microbatches 1 ..  */
        for (int k = 0; k < i && first; k++)
            first = IR_OP(st, k)->a != op->a || IR_OP(st, k)->code != op->code;
        nsets += first;
        for (int k = 0; k < i; k++) {
            const ir_op *o = IR_OP(st, k);
            if (o->code == op->code && o->task == -1 && o->a->peer == op->a->peer &&
                ir_p2p_tag(o) == ir_p2p_tag(op))
                return -1; /* two ops of one message */
        }
    }
    return nsets * M == n ? n : -1;
}

/* A model of 4 layers over pp, with every schedule on 2 and 4 stages: the
 * split's programs pass ir_verify and the verifier, the bubble is the
 * schedule's formula, and a value's sends and receives share their
 * attributes over the microbatches (p2p_shared). */
static const char *model =
    "mesh dp = 1, pp = %d\n"
    "pipeline over pp repeats 4 microbatches %d schedule %s\n"
    "%%x = input {name = \"x\"} : f32[8, 16] auto(dp, _)\n"
    "%%y = input {name = \"y\"} : f32[8, 16] auto(dp, _)\n"
    "%%w0 = param {name = \"w0\", init = ones} : f32[16, 16] auto(_, _) rep 0\n"
    "%%h0 = matmul %%x, %%w0 : f32[8, 16] auto(dp, _) rep 0\n"
    "%%w1 = param {name = \"w1\", init = ones} : f32[16, 16] auto(_, _) rep 1\n"
    "%%h1 = matmul %%h0, %%w1 : f32[8, 16] auto(dp, _) rep 1\n"
    "%%w2 = param {name = \"w2\", init = ones} : f32[16, 16] auto(_, _) rep 2\n"
    "%%h2 = matmul %%h1, %%w2 : f32[8, 16] auto(dp, _) rep 2\n"
    "%%w3 = param {name = \"w3\", init = ones} : f32[16, 16] auto(_, _) rep 3\n"
    "%%h3 = matmul %%h2, %%w3 : f32[8, 16] auto(dp, _) rep 3\n"
    "%%l = mse %%h3, %%y : f32[] auto()\n"
    "output \"loss\" = %%l\n"
    "train %%l with sgd(lr = 0.1, momentum = 0.0, wd = 0.0)\n";

static void test_schedules(void)
{
    static const struct {
        const char *sched;
        int stages, mb;
        double bubble;
    } cases[] = {
        {"gpipe", 2, 4, 0.25},         {"gpipe", 4, 4, 0.75},
        {"1f1b", 2, 4, 0.25},          {"1f1b", 4, 8, 0.375},
        {"interleaved(2)", 2, 4, 0.125}, {"interleaved(2)", 2, 8, 0.0625},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[2048];
        snprintf(text, sizeof text, model, cases[c].stages, cases[c].mb, cases[c].sched);
        ir_module *m = parse(text);
        CHECK(pass_autodiff(m, NULL, &(su_buf){.oom = &oom}, NULL));
        su_buf err;
        su_buf_init(&err, &oom);
        ir_module *part = NULL;
        bool ok = pass_propagate(m, NULL, &err) && pass_partition(m, NULL, &part, NULL, &err);
        CHECK(ok);
        pass_pipeline pp;
        su_loc at;
        ok = ok && pass_pipeline_split(part, &pp, &err, &at);
        CHECK(ok);
        if (!ok) {
            fprintf(stderr, "  %s: %s\n", cases[c].sched, err.s ? err.s : "");
        } else {
            CHECK_INT(pp.nstages, cases[c].stages);
            for (int s = 0; s < pp.nstages; s++)
                CHECK(ir_verify(pp.stage[s], &err));
            CHECK(pass_verify_p2p(pp.stage, pp.nstages, &err));
            CHECK(pp.bubble > cases[c].bubble - 1e-12 && pp.bubble < cases[c].bubble + 1e-12);
            /* every stage runs each microbatch's forward and backward of each of its chunks */
            int V = strcmp(cases[c].sched, "interleaved(2)") ? 1 : 2;
            for (int s = 0; s < pp.nstages; s++)
                CHECK_INT(pp.ntasks[s], 2 * V * cases[c].mb);
            for (int s = 0; s < pp.nstages; s++)
                CHECK(p2p_shared(pp.stage[s], cases[c].mb) > 0);
            pass_pipeline_free(&pp);
        }
        su_buf_free(&err);
        ir_module_free(part);
        ir_module_free(m);
    }
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_pipesplit: out of memory\n");
        return 1;
    }
    test_verifier();
    test_schedules();
    return CHECK_DONE();
}
