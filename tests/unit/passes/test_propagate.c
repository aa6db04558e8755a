/* test_propagate.c: sharding propagation (passes/propagate.c). Small IR
 * texts, each exercising one rule forward and backward, check the exact
 * sharding every value ends with (as ir_sharding_print writes it) and the
 * reason; then ties, dropped axes, determinism, a Megatron MLP and an
 * attention block whose heads land on tp. Every propagated module must
 * still pass the verifier. */
#include "../../ir/ir.h"
#include "../../passes/passes.h"
#include "check.h"

#include <stdlib.h>

static jmp_buf oom;

#define MESH "mesh dp = 2, tp = 4\n"

typedef struct run {
    ir_module *m;
    pass_explain ex;
} run;

/* Parses text (aborting on a malformed test), propagates, verifies. */
static run propagate(const char *text)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    run r = {.m = ir_parse(&src, &d, &oom)};
    if (!r.m) {
        fprintf(stderr, "test_propagate: bad test text:\n%s\n", d.msg.s);
        abort();
    }
    su_diag_free(&d);
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(pass_propagate(r.m, &r.ex, &err));
    bool ok = ir_verify(r.m, &err);
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  verifier: %s\n", err.s);
    su_buf_free(&err);
    return r;
}

static ir_value *find(const run *r, const char *name)
{
    for (int i = 0; i < r->m->ops.n; i++) {
        ir_value *v = IR_OP(r->m, i)->res[0];
        if (v->name && strcmp(v->name, name) == 0)
            return v;
    }
    fprintf(stderr, "test_propagate: no value %%%s\n", name);
    abort();
}

/* The sharding of %name as the printer writes it (arena string). */
static const char *sh(const run *r, const char *name)
{
    ir_value *v = find(r, name);
    su_buf b;
    su_buf_init(&b, &oom);
    ir_sharding_print(&b, &v->sh, &r->m->mesh, v->type.rank);
    const char *s = su_strdup(&r->m->arena, b.len ? b.s : "");
    su_buf_free(&b);
    return s;
}

static const char *why(const run *r, const char *name) { return r->ex.why[find(r, name)->id]; }
static bool tie(const run *r, const char *name) { return r->ex.tie[find(r, name)->id]; }

/* ---- elementwise ---- */

static void test_unary(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16] shard(dp, tp)\n"
        "%g = gelu %x : f32[8, 16]\n"
        "%c = cast %g {dtype = bf16} : bf16[8, 16]\n"
        "%u = input {name = \"u\"} : f32[8, 16]\n"
        "%e = exp %u : f32[8, 16]\n"
        "%d = cast %c {dtype = f32} : f32[8, 16]\n"
        "%y = add %e, %d : f32[8, 16] shard(_, tp)\n");
    CHECK_STR(sh(&r, "x"), "shard(dp, tp)");
    CHECK_STR(why(&r, "x"), "annotation");
    CHECK_STR(sh(&r, "g"), "auto(dp, tp)");
    CHECK_STR(why(&r, "g"), "forward from %x through gelu");
    CHECK_STR(sh(&r, "c"), "auto(dp, tp)");
    CHECK_STR(why(&r, "c"), "forward from %g through cast");
    /* %e is reached backward from the annotated %y, then %u from %e */
    CHECK_STR(sh(&r, "e"), "auto(_, tp)");
    CHECK_STR(why(&r, "e"), "backward from %y through add (operand a)");
    CHECK_STR(sh(&r, "u"), "auto(_, tp)");
    CHECK_STR(why(&r, "u"), "backward from %e through exp (operand x)");
    CHECK_STR(sh(&r, "y"), "shard(_, tp)");
    ir_module_free(r.m);
}

static void test_binary(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16] shard(dp, _)\n"
        "%b = param {name = \"b\", init = zeros} : f32[16] shard(tp)\n"
        "%y = add %x, %b : f32[8, 16]\n"
        "%col = input {name = \"col\"} : f32[8, 1] shard(dp, _)\n"
        "%w = input {name = \"w\"} : f32[8, 16]\n"
        "%z = mul %col, %w : f32[8, 16]\n"
        "%s = input {name = \"s\"} : f32[16]\n"
        "%t = input {name = \"t\"} : f32[1, 16]\n"
        "%u = sub %z, %s : f32[8, 16]\n"
        "%v = div %t, %u : f32[8, 16] shard(dp, tp)\n");
    /* aligned at the end: %b's only dim is the last */
    CHECK_STR(sh(&r, "y"), "auto(dp, tp)");
    CHECK_STR(why(&r, "y"), "forward from %x and %b through add");
    CHECK(!tie(&r, "y"));
    /* a broadcast dim of size 1 contributes nothing */
    CHECK_STR(sh(&r, "z"), "auto(dp, _)");
    CHECK_STR(why(&r, "z"), "forward from %col through mul");
    CHECK_STR(sh(&r, "u"), "auto(dp, _)");
    /* backward: full dims get the result's axes, size-1 and missing none */
    CHECK_STR(sh(&r, "w"), "auto(dp, _)");
    CHECK_STR(why(&r, "w"), "backward from %z through mul (operand b)");
    CHECK_STR(sh(&r, "s"), "auto(_)");
    CHECK_STR(why(&r, "s"), "backward from %u through sub (operand b)");
    CHECK_STR(sh(&r, "t"), "auto(_, tp)");
    CHECK_STR(why(&r, "t"), "backward from %v through div (operand a)");
    ir_module_free(r.m);
}

static void test_tie_and_drops(void)
{
    run r = propagate(MESH
        "%a = input {name = \"a\"} : f32[8, 16] shard(dp, _)\n"
        "%b = input {name = \"b\"} : f32[8, 16] shard(tp, _)\n"
        "%y = max %a, %b : f32[8, 16]\n"
        "%c = input {name = \"c\"} : f32[8, 16] shard(_, dp)\n"
        "%z = min %a, %c : f32[8, 16]\n"
        "%d = input {name = \"d\"} : f32[8, 16] shard(_, (tp, dp))\n"
        "%e = input {name = \"e\"} : f32[8, 6] shard(dp, _)\n"
        "%f = input {name = \"f\"} : f32[6] shard(dp)\n"
        "%g = add %e, %f : f32[8, 6]\n"
        "%h = mul %b, %d : f32[8, 16]\n");
    CHECK_STR(sh(&r, "y"), "auto(dp, _)");
    CHECK(tie(&r, "y"));
    CHECK_STR(why(&r, "y"),
              "forward from %a and %b through max; tie: %a has (dp, _) and %b has (tp, _); took %a");
    /* no tie (different dims), but dp may split only one dim */
    CHECK_STR(sh(&r, "z"), "auto(dp, _)");
    CHECK(!tie(&r, "z"));
    CHECK_STR(why(&r, "z"), "forward from %a and %c through min; dropped dp from dim 1: already used");
    /* tp on dim 0 from %b; %d's (tp, dp) keeps only dp */
    CHECK_STR(sh(&r, "h"), "auto(tp, dp)");
    CHECK_STR(why(&r, "h"), "forward from %b and %d through mul; dropped tp from dim 1: already used");
    /* dp (2) splits 6, but it is taken by dim 0 */
    CHECK_STR(sh(&r, "g"), "auto(dp, _)");
    ir_module_free(r.m);}

/* ---- contractions ---- */

static void test_matmul(void)
{
    run r = propagate(MESH
        "%a = input {name = \"a\"} : f32[4, 8, 16] shard(dp, _, tp)\n"
        "%b = param {name = \"b\", init = zeros} : f32[16, 32] shard(_, tp)\n"
        "%y = matmul %a, %b : f32[4, 8, 32]\n"
        "%c = input {name = \"c\"} : f32[8, 16] shard(tp, _)\n"
        "%z = matmul %c, %b : f32[8, 32]\n"
        "%c2 = input {name = \"c2\"} : f32[64, 16] shard(tp, _)\n"
        "%z2 = matmul %c2, %b : f32[64, 32]\n"
        "%v = input {name = \"v\"} : f32[16]\n"
        "%m = input {name = \"m\"} : f32[8, 16] shard(dp, tp)\n"
        "%mv = matmul %m, %v : f32[8]\n"
        "%u = input {name = \"u\"} : f32[16] shard(tp)\n"
        "%vm = matmul %u, %b : f32[32]\n");
    /* batch from a; M from a; N from b; K (tp on a) contracted away */
    CHECK_STR(sh(&r, "y"), "auto(dp, _, tp)");
    CHECK_STR(why(&r, "y"), "forward from %a and %b through matmul");
    /* tp on both M and N: N keeps it when a is the smaller operand to gather */
    CHECK_STR(sh(&r, "z"), "auto(_, tp)");
    CHECK_STR(why(&r, "z"),
              "forward from %c and %b through matmul; dropped tp from the M dim: the N dim "
              "has it, and gathering %c costs less than gathering %b");
    /* ... and M keeps it when a is not */
    CHECK_STR(sh(&r, "z2"), "auto(tp, _)");
    CHECK_STR(why(&r, "z2"),
              "forward from %c2 and %b through matmul; dropped tp from the N dim: the M dim has it");
    /* 1-D operands lose their M or N */
    CHECK_STR(sh(&r, "mv"), "auto(dp)");
    CHECK_STR(sh(&r, "vm"), "auto(tp)");
    /* backward: the vector's K from the matrix's K */
    CHECK_STR(sh(&r, "v"), "auto(tp)");
    CHECK_STR(why(&r, "v"), "backward from %mv through matmul (operand b); K dim from %m");
    ir_module_free(r.m);

    /* a row-parallel weight pulls its input's last dim; the result's M and
     * N go back to a and b */
    r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 64]\n"
        "%h = gelu %x : f32[8, 64]\n"
        "%w2 = param {name = \"w2\", init = zeros} : f32[64, 16] shard(tp, _)\n"
        "%y = matmul %h, %w2 : f32[8, 16]\n"
        "%p = input {name = \"p\"} : f32[8, 32]\n"
        "%q = input {name = \"q\"} : f32[32, 16]\n"
        "%o = matmul %p, %q : f32[8, 16]\n"
        "%oc = constrain %o : f32[8, 16] shard(dp, tp)\n"
        "%s = add %o, %y : f32[8, 16] shard(dp, tp)\n");
    /* y, partial over tp, takes its reader's tp on dim 1: reduce-scattered */
    CHECK_STR(sh(&r, "y"), "auto(_, tp)");
    CHECK_STR(why(&r, "y"), "forward from %w2 through matmul; tp on dim 1, as its readers "
                            "split it: its partial sum over tp is reduce-scattered there, not "
                            "all-reduced");
    CHECK_STR(sh(&r, "h"), "auto(_, tp)");
    CHECK_STR(why(&r, "h"), "backward from %y through matmul (operand a); K dim from %w2");
    CHECK_STR(sh(&r, "x"), "auto(_, tp)");
    CHECK_STR(why(&r, "x"), "backward from %h through gelu (operand x)");
    CHECK_STR(sh(&r, "o"), "auto(dp, tp)");
    CHECK_STR(why(&r, "o"), "backward from %s through add (operand a)");
    CHECK_STR(sh(&r, "p"), "auto(dp, _)");
    CHECK_STR(why(&r, "p"), "backward from %o through matmul (operand a)");
    /* q's K from p's K (none), N from the result */
    CHECK_STR(sh(&r, "q"), "auto(_, tp)");
    CHECK_STR(why(&r, "q"), "backward from %o through matmul (operand b)");
    ir_module_free(r.m);
}

/* A partial sum goes to its readers' split through a bias add (the
 * row-parallel layer of sequence parallelism), not where a reader is of
 * another kind or wants it whole. */
static void test_scatter_partials(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16, 64] shard(dp, _, tp)\n"
        "%w = param {name = \"w\", init = zeros} : f32[64, 32] shard(tp, _)\n"
        "%bias = param {name = \"bias\", init = zeros} : f32[32]\n"
        "%y = matmul %x, %w : f32[8, 16, 32]\n"
        "%z = add %y, %bias : f32[8, 16, 32]\n"
        "%r = input {name = \"r\"} : f32[8, 16, 32] shard(dp, tp, _)\n"
        "%s = add %r, %z : f32[8, 16, 32]\n"
        "%y2 = matmul %x, %w : f32[8, 16, 32]\n"
        "%e = exp %y2 : f32[8, 16, 32]\n"
        "%q = input {name = \"q\"} : f32[32, 4]\n"
        "%m = matmul %y2, %q : f32[8, 16, 4]\n"
        "%f = add %r, %e : f32[8, 16, 32]\n");
    CHECK_STR(sh(&r, "s"), "auto(dp, tp, _)");
    CHECK_STR(sh(&r, "z"), "auto(dp, tp, _)");
    CHECK_STR(sh(&r, "y"), "auto(dp, tp, _)");
    CHECK(strstr(why(&r, "y"), "tp on dim 1, as its readers split it") != NULL);
    CHECK(strstr(why(&r, "z"), "tp on dim 1, as its readers split it") != NULL);
    /* y2 is also read by a matmul: all-reduced where it is made */
    CHECK_STR(sh(&r, "y2"), "auto(dp, _, _)");
    CHECK_STR(sh(&r, "e"), "auto(dp, tp, _)");
    ir_module_free(r.m);
}

static void test_attention(void)
{
    run r = propagate(MESH
        "%q = input {name = \"q\"} : f32[2, 4, 16, 8] shard(dp, tp, _, _)\n"
        "%k = input {name = \"k\"} : f32[2, 4, 32, 8]\n"
        "%v = input {name = \"v\"} : f32[2, 4, 32, 12] shard(_, _, _, tp)\n"
        "%o = attention %q, %k, %v {causal = true} : f32[2, 4, 16, 12]\n"
        "%q2 = input {name = \"q2\"} : f32[2, 4, 16, 8]\n"
        "%k2 = input {name = \"k2\"} : f32[2, 4, 16, 8] shard(dp, tp, _, _)\n"
        "%v2 = input {name = \"v2\"} : f32[2, 4, 16, 8]\n"
        "%o2 = attention %q2, %k2, %v2 {causal = false} : f32[2, 4, 16, 8]\n"
        "%q3 = input {name = \"q3\"} : f32[2, 4, 16, 8]\n"
        "%k3 = input {name = \"k3\"} : f32[2, 4, 16, 8]\n"
        "%v3 = input {name = \"v3\"} : f32[2, 4, 16, 8]\n"
        "%o3 = attention %q3, %k3, %v3 {causal = false} : f32[2, 4, 16, 8] shard(_, _, tp, dp)\n"
        "%r3 = relu %o3 : f32[2, 4, 16, 8]\n");
    /* leading dims and S from q, the last from v's last */
    CHECK_STR(sh(&r, "o"), "auto(dp, tp, _, _)");
    CHECK_STR(why(&r, "o"), "forward from %q and %v through attention; dropped tp from dim 3: already used");
    CHECK_STR(sh(&r, "k"), "auto(dp, tp, _, _)");
    CHECK_STR(why(&r, "k"), "backward from %o through attention (operand k)");
    /* no q yet: leading dims from k */
    CHECK_STR(sh(&r, "o2"), "auto(dp, tp, _, _)");
    CHECK_STR(sh(&r, "q2"), "auto(dp, tp, _, _)");
    /* backward: q gets leading and S; k leading; v leading and last */
    CHECK_STR(sh(&r, "q3"), "auto(_, _, tp, _)");
    CHECK_STR(why(&r, "q3"), "backward from %o3 through attention (operand q)");
    CHECK_STR(sh(&r, "k3"), "auto(_, _, _, _)");
    CHECK_STR(sh(&r, "v3"), "auto(_, _, _, dp)");
    CHECK_STR(why(&r, "v3"), "backward from %o3 through attention (operand v)");
    CHECK_STR(sh(&r, "r3"), "auto(_, _, tp, dp)");
    ir_module_free(r.m);
}

/* ---- reductions and normalisations ---- */

static void test_reduce(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16, 4] shard(dp, tp, _)\n"
        "%s = sum %x {axis = 1, keepdims = false} : f32[8, 4]\n"
        "%m = mean %x {axis = 0, keepdims = true} : f32[1, 16, 4]\n"
        "%a = amax %x {axis = 2, keepdims = false} : f32[8, 16]\n"
        "%u = input {name = \"u\"} : f32[8, 16]\n"
        "%us = sum %u {axis = 0, keepdims = false} : f32[16]\n"
        "%c = input {name = \"c\"} : f32[16] shard(tp)\n"
        "%t = add %us, %c : f32[16]\n"
        "%w = input {name = \"w\"} : f32[8, 16]\n"
        "%wm = mean %w {axis = 1, keepdims = true} : f32[8, 1] shard(dp, _)\n");
    CHECK_STR(sh(&r, "s"), "auto(dp, _)");
    CHECK_STR(why(&r, "s"), "forward from %x through sum");
    CHECK_STR(sh(&r, "m"), "auto(_, tp, _)");
    CHECK_STR(sh(&r, "a"), "auto(dp, tp)");
    CHECK_STR(sh(&r, "us"), "auto(tp)");
    CHECK_STR(sh(&r, "u"), "auto(_, tp)");
    CHECK_STR(why(&r, "u"), "backward from %us through sum (operand x)");
    CHECK_STR(sh(&r, "w"), "auto(dp, _)");
    ir_module_free(r.m);
}

static void test_norm(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16] shard(dp, tp)\n"
        "%g = param {name = \"g\", init = ones} : f32[16]\n"
        "%b = param {name = \"b\", init = zeros} : f32[16]\n"
        "%l = layernorm %x, %g, %b {eps = 1e-05} : f32[8, 16]\n"
        "%g2 = param {name = \"g2\", init = ones} : f32[16]\n"
        "%n = rmsnorm %x, %g2 {eps = 1e-05} : f32[8, 16]\n"
        "%s = softmax %x {axis = 1} : f32[8, 16]\n"
        "%y = input {name = \"y\"} : f32[8, 16]\n"
        "%ys = softmax %y {axis = 0} : f32[8, 16] shard(_, tp)\n");
    /* the split normalised dim stays: 2 all_reduces over tp (4 ranks) of
     * one f32 per local row (4) cost less than gathering x's 4 local rows
     * whole (the partitioner then computes on the split dim) */
    CHECK_STR(sh(&r, "l"), "auto(dp, tp)");
    CHECK_STR(why(&r, "l"), "forward from %x through layernorm; dim 1 split over tp: partial "
              "statistics (48 bytes per rank) cost less than gathering it (192)");
    CHECK_STR(sh(&r, "g"), "auto(tp)");
    CHECK_STR(why(&r, "g"), "backward from %l through layernorm (operand g)");
    CHECK_STR(sh(&r, "b"), "auto(tp)");
    CHECK_STR(why(&r, "b"), "backward from %l through layernorm (operand b)");
    CHECK_STR(sh(&r, "n"), "auto(dp, tp)");
    CHECK_STR(sh(&r, "g2"), "auto(tp)");
    CHECK_STR(sh(&r, "s"), "auto(dp, tp)");
    CHECK_STR(sh(&r, "y"), "auto(_, tp)");
    CHECK_STR(why(&r, "y"), "backward from %ys through softmax (operand x)");
    ir_module_free(r.m);
}

/* ---- layout ---- */

static void test_transpose(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[2, 4, 8] shard(dp, _, tp)\n"
        "%t = transpose %x {perm = [2, 0, 1]} : f32[8, 2, 4]\n"
        "%u = input {name = \"u\"} : f32[2, 4, 8]\n"
        "%ut = transpose %u {perm = [1, 2, 0]} : f32[4, 8, 2] shard(tp, _, dp)\n");
    CHECK_STR(sh(&r, "t"), "auto(tp, dp, _)");
    CHECK_STR(why(&r, "t"), "forward from %x through transpose");
    CHECK_STR(sh(&r, "u"), "auto(dp, tp, _)");
    CHECK_STR(why(&r, "u"), "backward from %ut through transpose (operand x)");
    ir_module_free(r.m);
}

static void test_reshape(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 128, 256] shard(dp, _, tp)\n"
        "%h = reshape %x {shape = [8, 128, 8, 32]} : f32[8, 128, 8, 32]\n"
        "%m = reshape %h {shape = [8, 128, 256]} : f32[8, 128, 256]\n"
        "%f = reshape %x {shape = [1024, 256]} : f32[1024, 256]\n"
        "%y = input {name = \"y\"} : f32[8, 32] shard(_, tp)\n"
        "%g = reshape %y {shape = [256]} : f32[256]\n"
        "%z = input {name = \"z\"} : f32[256] shard((dp, tp))\n"
        "%p = reshape %z {shape = [2, 128]} : f32[2, 128]\n"
        "%o = input {name = \"o\"} : f32[1, 64] shard(_, tp)\n"
        "%q = reshape %o {shape = [64, 1]} : f32[64, 1]\n"
        "%u = input {name = \"u\"} : f32[4, 64]\n"
        "%ur = reshape %u {shape = [4, 8, 8]} : f32[4, 8, 8] shard(_, tp, dp)\n");
    /* heads: the split model dim becomes the (major) head dim */
    CHECK_STR(sh(&r, "h"), "auto(dp, _, tp, _)");
    CHECK_STR(why(&r, "h"), "forward from %x through reshape");
    CHECK_STR(sh(&r, "m"), "auto(dp, _, tp)");
    /* merging batch and sequence: the major dim keeps dp */
    CHECK_STR(sh(&r, "f"), "auto(dp, tp)");
    /* a split minor dim of a merge must be gathered */
    CHECK_STR(sh(&r, "g"), "auto(_)");
    CHECK_STR(why(&r, "g"), "forward from %y through reshape; dropped tp of %y dim 1: "
                            "it does not stay major (%y must be gathered)");
    /* only the prefix of the axes that divides the new major dim */
    CHECK_STR(sh(&r, "p"), "auto(dp, _)");
    CHECK_STR(why(&r, "p"), "forward from %z through reshape; dropped tp of %z dim 0: "
                            "it does not stay major (%z must be gathered)");
    /* size-1 dims attach to their neighbours */
    CHECK_STR(sh(&r, "q"), "auto(tp, _)");
    /* backward: the result's major dim goes back, the minor one is dropped */
    CHECK_STR(sh(&r, "u"), "auto(_, tp)");
    CHECK_STR(why(&r, "u"), "backward from %ur through reshape (operand x); dropped dp of %ur "
                            "dim 2: it does not stay major (%ur must be gathered)");
    ir_module_free(r.m);
}

static void test_embedding(void)
{
    run r = propagate(MESH
        "%t = param {name = \"t\", init = zeros} : f32[1000, 64] shard(tp, _)\n"
        "%ids = input {name = \"ids\"} : i32[8, 16] shard(dp, _)\n"
        "%e = embedding %t, %ids : f32[8, 16, 64]\n"
        "%t2 = param {name = \"t2\", init = zeros} : f32[1000, 64]\n"
        "%ids2 = input {name = \"ids2\"} : i32[8, 16]\n"
        "%e2 = embedding %t2, %ids2 : f32[8, 16, 64] shard(dp, _, tp)\n");
    /* the vocabulary split does not appear: the result is partial there */
    CHECK_STR(sh(&r, "e"), "auto(dp, _, _)");
    CHECK_STR(why(&r, "e"), "forward from %t and %ids through embedding");
    CHECK_STR(sh(&r, "t2"), "auto(_, tp)");
    CHECK_STR(why(&r, "t2"), "backward from %e2 through embedding (operand table)");
    CHECK_STR(sh(&r, "ids2"), "auto(dp, _)");
    CHECK_STR(why(&r, "ids2"), "backward from %e2 through embedding (operand ids)");
    ir_module_free(r.m);

    r = propagate(MESH
        "%t = param {name = \"t\", init = zeros} : f32[1000, 64] shard(_, tp)\n"
        "%ids = input {name = \"ids\"} : i32[8]\n"
        "%e = embedding %t, %ids : f32[8, 64]\n");
    CHECK_STR(sh(&r, "e"), "auto(_, tp)");
    CHECK_STR(sh(&r, "ids"), "auto(_)");
    ir_module_free(r.m);
}

static void test_loss(void)
{
    run r = propagate(MESH
        "%p = input {name = \"p\"} : f32[8, 16] shard(dp, _)\n"
        "%y = input {name = \"y\"} : f32[8, 16]\n"
        "%l = mse %p, %y : f32[]\n"
        "%lg = input {name = \"lg\"} : f32[8, 100]\n"
        "%lb = input {name = \"lb\"} : i32[8] shard(dp)\n"
        "%x = cross_entropy %lg, %lb : f32[]\n"
        "%lg2 = input {name = \"lg2\"} : f32[8, 100] shard(dp, tp)\n"
        "%lb2 = input {name = \"lb2\"} : i32[8]\n"
        "%x2 = cross_entropy %lg2, %lb2 : f32[]\n");
    CHECK_STR(sh(&r, "l"), "auto()");
    CHECK_STR(why(&r, "l"), "forward from %p through mse");
    CHECK_STR(sh(&r, "y"), "auto(dp, _)");
    CHECK_STR(why(&r, "y"), "backward from %p through mse (operand target)");
    CHECK_STR(sh(&r, "lg"), "auto(dp, _)");
    CHECK_STR(why(&r, "lg"), "backward from %lb through cross_entropy (operand logits)");
    CHECK_STR(sh(&r, "lb2"), "auto(dp)");
    CHECK_STR(why(&r, "lb2"), "backward from %lg2 through cross_entropy (operand labels)");
    ir_module_free(r.m);
}

/* A constrain is a resharding point: nothing flows back through it, and
 * what no rule reaches is replicated. */
static void test_constrain_and_replicated(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 16]\n"
        "%y = constrain %x : f32[8, 16] shard(_, tp)\n"
        "%z = relu %y : f32[8, 16]\n"
        "%c = const {value = 2} : f32[]\n"
        "%d = neg %c : f32[]\n");
    CHECK_STR(sh(&r, "x"), "auto(_, _)");
    CHECK_STR(why(&r, "x"), "replicated: no annotation or rule reaches it");
    CHECK_STR(sh(&r, "y"), "shard(_, tp)");
    CHECK_STR(why(&r, "y"), "annotation");
    CHECK_STR(sh(&r, "z"), "auto(_, tp)");
    CHECK_STR(sh(&r, "c"), "auto()");
    CHECK_STR(sh(&r, "d"), "auto()");
    CHECK_STR(why(&r, "d"), "replicated: no annotation or rule reaches it");
    ir_module_free(r.m);
}

/* ---- whole models ---- */

#define MEGATRON MESH \
    "%x = input {name = \"x\"} : f32[64, 1024] shard(dp, _)\n" \
    "%w1 = param {name = \"w1\", init = zeros} : f32[1024, 4096] shard(_, tp)\n" \
    "%b1 = param {name = \"b1\", init = zeros} : f32[4096] shard(tp)\n" \
    "%w2 = param {name = \"w2\", init = zeros} : f32[4096, 1024] shard(tp, _)\n" \
    "%b2 = param {name = \"b2\", init = zeros} : f32[1024]\n" \
    "%h0 = matmul %x, %w1 : f32[64, 4096]\n" \
    "%h1 = add %h0, %b1 : f32[64, 4096]\n" \
    "%h = gelu %h1 : f32[64, 4096]\n" \
    "%y = matmul %h, %w2 : f32[64, 1024]\n" \
    "%out = add %y, %b2 : f32[64, 1024]\n" \
    "output \"out\" = %out\n"

static void test_megatron(void)
{
    run r = propagate(MEGATRON);
    CHECK_STR(sh(&r, "h0"), "auto(dp, tp)");
    CHECK_STR(sh(&r, "h1"), "auto(dp, tp)");
    CHECK_STR(sh(&r, "h"), "auto(dp, tp)");
    CHECK_STR(why(&r, "h"), "forward from %h1 through gelu");
    CHECK_STR(sh(&r, "y"), "auto(dp, _)");
    CHECK_STR(why(&r, "y"), "forward from %h and %w2 through matmul");
    CHECK_STR(sh(&r, "out"), "auto(dp, _)");
    CHECK_STR(sh(&r, "b2"), "auto(_)");
    CHECK_STR(why(&r, "b2"), "backward from %out through add (operand b)");
    CHECK_STR(sh(&r, "w1"), "shard(_, tp)");
    ir_module_free(r.m);
}

/* Q, K, V projections split over tp on the model dim; reshape and transpose
 * put tp on the head dim, attention keeps it, and the output projection
 * (row-parallel) brings the layout back to the residual's. */
static void test_attention_block(void)
{
    run r = propagate(MESH
        "%x = input {name = \"x\"} : f32[8, 128, 256] shard(dp, _, _)\n"
        "%g = param {name = \"g\", init = ones} : f32[256]\n"
        "%n = rmsnorm %x, %g {eps = 1e-05} : f32[8, 128, 256]\n"
        "%wq = param {name = \"wq\", init = zeros} : f32[256, 256] shard(_, tp)\n"
        "%wk = param {name = \"wk\", init = zeros} : f32[256, 256] shard(_, tp)\n"
        "%wv = param {name = \"wv\", init = zeros} : f32[256, 256] shard(_, tp)\n"
        "%wo = param {name = \"wo\", init = zeros} : f32[256, 256] shard(tp, _)\n"
        "%q0 = matmul %n, %wq : f32[8, 128, 256]\n"
        "%q1 = reshape %q0 {shape = [8, 128, 8, 32]} : f32[8, 128, 8, 32]\n"
        "%q = transpose %q1 {perm = [0, 2, 1, 3]} : f32[8, 8, 128, 32]\n"
        "%k0 = matmul %n, %wk : f32[8, 128, 256]\n"
        "%k1 = reshape %k0 {shape = [8, 128, 8, 32]} : f32[8, 128, 8, 32]\n"
        "%k = transpose %k1 {perm = [0, 2, 1, 3]} : f32[8, 8, 128, 32]\n"
        "%v0 = matmul %n, %wv : f32[8, 128, 256]\n"
        "%v1 = reshape %v0 {shape = [8, 128, 8, 32]} : f32[8, 128, 8, 32]\n"
        "%v = transpose %v1 {perm = [0, 2, 1, 3]} : f32[8, 8, 128, 32]\n"
        "%a = attention %q, %k, %v {causal = true} : f32[8, 8, 128, 32]\n"
        "%at = transpose %a {perm = [0, 2, 1, 3]} : f32[8, 128, 8, 32]\n"
        "%ar = reshape %at {shape = [8, 128, 256]} : f32[8, 128, 256]\n"
        "%o = matmul %ar, %wo : f32[8, 128, 256]\n"
        "%res = add %x, %o : f32[8, 128, 256]\n");
    CHECK_STR(sh(&r, "n"), "auto(dp, _, _)");
    CHECK_STR(sh(&r, "g"), "auto(_)");
    CHECK_STR(sh(&r, "q0"), "auto(dp, _, tp)");
    CHECK_STR(sh(&r, "q1"), "auto(dp, _, tp, _)");
    CHECK_STR(sh(&r, "q"), "auto(dp, tp, _, _)");
    CHECK_STR(sh(&r, "k"), "auto(dp, tp, _, _)");
    CHECK_STR(sh(&r, "v"), "auto(dp, tp, _, _)");
    CHECK_STR(sh(&r, "a"), "auto(dp, tp, _, _)");
    CHECK_STR(why(&r, "a"), "forward from %q and %k and %v through attention");
    CHECK_STR(sh(&r, "at"), "auto(dp, _, tp, _)");
    CHECK_STR(sh(&r, "ar"), "auto(dp, _, tp)");
    CHECK_STR(sh(&r, "o"), "auto(dp, _, _)");
    CHECK_STR(sh(&r, "res"), "auto(dp, _, _)");
    ir_module_free(r.m);
}

/* ---- determinism and the explanation ---- */

static char *explain(const run *r)
{
    su_buf b;
    su_buf_init(&b, &oom);
    pass_explain_print(r->m, &r->ex, &b);
    return su_buf_take(&b);
}

static void test_determinism(void)
{
    const char *text = MESH
        "%a = input {name = \"a\"} : f32[8, 16] shard(dp, _)\n"
        "%b = input {name = \"b\"} : f32[8, 16] shard(tp, _)\n"
        "%y = max %a, %b : f32[8, 16]\n"
        "%u = input {name = \"u\"} : f32[8, 16]\n"
        "%0 = mul %u, %y : f32[8, 16]\n"
        "%w = param {name = \"w\", init = zeros} : f32[16, 8] shard(tp, _)\n"
        "%z = matmul %0, %w : f32[8, 8]\n";
    run r1 = propagate(text), r2 = propagate(text);
    char *e1 = explain(&r1), *e2 = explain(&r2);
    CHECK_STR(e1, e2);
    CHECK_STR(e1, "%a = shard(dp, _)  # annotation\n"
                  "%b = shard(tp, _)  # annotation\n"
                  "%y = auto(dp, _)  # forward from %a and %b through max; "
                  "tie: %a has (dp, _) and %b has (tp, _); took %a (tie broken)\n"
                  "%u = auto(dp, _)  # backward from %0 through mul (operand a)\n"
                  "%0 = auto(dp, _)  # forward from %y through mul\n"
                  "%w = shard(tp, _)  # annotation\n"
                  "%z = auto(dp, _)  # forward from %0 and %w through matmul\n");
    /* rerunning forgets the first run's choices and makes them again */
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(pass_propagate(r1.m, NULL, &err));
    CHECK(pass_propagate(r1.m, &r1.ex, &err));
    char *e3 = explain(&r1);
    CHECK_STR(e3, e1);
    su_buf_free(&err);
    free(e1);
    free(e2);
    free(e3);
    ir_module_free(r1.m);
    ir_module_free(r2.m);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_propagate: out of memory\n");
        return 1;
    }
    test_unary();
    test_binary();
    test_tie_and_drops();
    test_matmul();
    test_scatter_partials();
    test_attention();
    test_reduce();
    test_norm();
    test_transpose();
    test_reshape();
    test_embedding();
    test_loss();
    test_constrain_and_replicated();
    test_megatron();
    test_attention_block();
    test_determinism();
    return CHECK_DONE();
}
