/* test_infer.c: the shape rule of every op (ir_infer: results and exact
 * messages) and the verifier (ir_verify: a valid module passes, each kind of
 * broken one fails with a message naming the problem). */
#include "ir/ir.h"

#include <stdlib.h>

#include "check.h"

/* Fails unless got contains sub; prints the whole of got when it does not. */
#define CHECK_HAS(got, sub)                                                  \
    do {                                                                     \
        const char *g_ = (got), *s_ = (sub);                                 \
        check_count++;                                                       \
        if (!strstr(g_, s_)) {                                               \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: \"%s\" lacks \"%s\"\n",   \
                    __FILE__, __LINE__, g_, s_);                             \
        }                                                                    \
    } while (0)

#define A(...) (&(ir_attrs){__VA_ARGS__})
/* heads_inner of every operand and result code has */
#define HALL(code) ((uint8_t)ir_heads_all(code))

/* dp = 2, tp = 4, pp = 3: the mesh the collectives run on. */
static ir_mesh mesh3;

/* Reads "f32[64, 1024]" (the printed form) into a type. */
static ir_type ty(const char *s)
{
    ir_type t;
    memset(&t, 0, sizeof t);
    const char *p = strchr(s, '[');
    if (!p || !ir_dtype_lookup(s, (size_t)(p - s), &t.dtype))
        abort();
    for (p++; *p != ']';) {
        char *end;
        t.dim[t.rank++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return t;
}

/* Infers code on the types named by the NULL-terminated arguments: the
 * result's type text, or "error: " and the message. */
static const char *inf(ir_opcode code, ir_attrs *a, ...)
{
    static char res[512];
    ir_type types[8];
    const ir_type *in[8];
    int n = 0;
    va_list ap;
    va_start(ap, a);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL; n++) {
        types[n] = ty(s);
        in[n] = &types[n];
    }
    va_end(ap);
    ir_type out;
    char err[400];
    if (!ir_infer(&mesh3, code, in, n, a, &out, err, sizeof err)) {
        snprintf(res, sizeof res, "error: %s", err);
        return res;
    }
    su_buf b;
    su_buf_init(&b, NULL);
    ir_type_print(&b, &out);
    snprintf(res, sizeof res, "%s", b.s);
    su_buf_free(&b);
    return res;
}
#define INF(code, a, ...) inf(code, a, __VA_ARGS__, (const char *)NULL)

static void test_counts_and_operands(void)
{
    CHECK_STR(INF(IR_ADD, NULL, "f32[4]"), "error: '+' takes 2 operands, got 1");
    CHECK_STR(INF(IR_NEG, NULL, "f32[4]", "f32[4]"), "error: '-' takes 1 operand, got 2");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[4]"),
              "error: layernorm takes 3 operands, got 1");
    CHECK_STR(inf(IR_INPUT, A(.name = "x"), (const char *)NULL),
              "error: sources have no inferred type");
    CHECK_STR(inf(IR_PARAM, A(.name = "w"), (const char *)NULL),
              "error: sources have no inferred type");
    CHECK_STR(inf(IR_CONST, A(.value = 1), (const char *)NULL),
              "error: sources have no inferred type");
    CHECK_STR(INF(IR_EXP, NULL, "f32[0, 4]"),
              "error: operand 1 of exp has a dimension of size 0: f32[0, 4]");
    CHECK_STR(INF(IR_EXP, NULL, "f32[4294967296, 4294967296]"),
              "error: operand 1 of exp has too many elements: f32[4294967296, 4294967296]");

    ir_type big = ty("f32[2]");
    big.rank = 9;
    const ir_type *in[] = {&big};
    ir_type out;
    char err[200];
    CHECK(!ir_infer(&mesh3, IR_EXP, in, 1, NULL, &out, err, sizeof err));
    CHECK_STR(err, "operand 1 of exp has rank 9; at most 8 dimensions are supported");
    CHECK(!ir_infer(&mesh3, IR_NOPS, in, 1, NULL, &out, err, sizeof err));
    char want[40];
    snprintf(want, sizeof want, "unknown op (%d)", (int)IR_NOPS);
    CHECK_STR(err, want);
    /* A short buffer truncates, and none at all is allowed. */
    CHECK(!ir_infer(&mesh3, IR_EXP, in, 1, NULL, &out, err, 8));
    CHECK_STR(err, "operand");
    CHECK(!ir_infer(&mesh3, IR_EXP, in, 1, NULL, &out, NULL, 0));
}

static void test_binary(void)
{
    CHECK_STR(INF(IR_ADD, NULL, "f32[64, 1024]", "f32[1024]"), "f32[64, 1024]");
    CHECK_STR(INF(IR_MUL, NULL, "f32[8, 1, 6, 1]", "f32[7, 1, 5]"), "f32[8, 7, 6, 5]");
    CHECK_STR(INF(IR_SUB, NULL, "f32[]", "f32[3]"), "f32[3]");
    CHECK_STR(INF(IR_DIV, NULL, "bf16[3, 1]", "bf16[]"), "bf16[3, 1]");
    CHECK_STR(INF(IR_MAX, NULL, "i32[4]", "i32[4]"), "i32[4]");
    CHECK_STR(INF(IR_MIN, NULL, "f16[1]", "f16[5, 1]"), "f16[5, 1]");
    CHECK_STR(INF(IR_POW, NULL, "f32[2, 3]", "f32[2, 1]"), "f32[2, 3]");
    CHECK_STR(INF(IR_ADD, NULL, "f32[64, 1024]", "f32[512]"),
              "error: operands of '+' do not broadcast: f32[64, 1024] and f32[512]");
    CHECK_STR(INF(IR_MAX, NULL, "f32[2, 3]", "f32[3, 2]"),
              "error: operands of max do not broadcast: f32[2, 3] and f32[3, 2]");
    CHECK_STR(INF(IR_ADD, NULL, "f32[4]", "bf16[4]"),
              "error: mixed dtypes in '+': f32 and bf16 (use cast to convert one)");
    CHECK_STR(INF(IR_DIV, NULL, "i32[4]", "f16[4]"),
              "error: mixed dtypes in '/': i32 and f16 (use cast to convert one)");
    CHECK_STR(INF(IR_POW, NULL, "i32[8]", "i32[8]"),
              "error: pow needs floating-point operands, got i32[8]");
    CHECK_STR(INF(IR_ADD, NULL, "f32[4294967296, 1]", "f32[1, 4294967296]"),
              "error: the result of '+' has too many elements: f32[4294967296, 4294967296]");
}

static void test_unary(void)
{
    static const ir_opcode floats[] = {IR_RELU, IR_GELU, IR_SILU, IR_TANH, IR_SIGMOID,
                                       IR_EXP, IR_LOG, IR_SQRT, IR_RSQRT, IR_SIN, IR_COS};
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++) {
        char want[100];
        CHECK_STR(INF(floats[i], NULL, "bf16[2, 3]"), "bf16[2, 3]");
        snprintf(want, sizeof want, "error: %s needs a floating-point operand, got i32[8]",
                 ir_ops[floats[i]].name);
        CHECK_STR(INF(floats[i], NULL, "i32[8]"), want);
    }
    CHECK_STR(INF(IR_EXP, NULL, "i32[8]"), "error: exp needs a floating-point operand, got i32[8]");
    CHECK_STR(INF(IR_NEG, NULL, "i32[8]"), "i32[8]");
    CHECK_STR(INF(IR_ABS, NULL, "f32[]"), "f32[]");
    CHECK_STR(INF(IR_CONSTRAIN, NULL, "f16[4, 4]"), "f16[4, 4]");
    CHECK_STR(INF(IR_CAST, A(.dtype = IR_BF16), "f32[2, 3]"), "bf16[2, 3]");
    CHECK_STR(INF(IR_CAST, A(.dtype = IR_I32), "f32[]"), "i32[]");
    CHECK_STR(INF(IR_CAST, A(.dtype = (ir_dtype)9), "f32[2]"),
              "error: cast to an unknown dtype (9)");
}

static void test_matmul(void)
{
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[64, 1024]", "f32[1024, 4096]"), "f32[64, 4096]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[2, 3, 64, 32]", "f32[32, 16]"), "f32[2, 3, 64, 16]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[5, 1, 4, 3]", "f32[2, 3, 6]"), "f32[5, 2, 4, 6]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[64, 1024]", "f32[1024]"), "f32[64]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[1024]", "f32[2, 1024, 8]"), "f32[2, 8]");
    /* f32 matmuls as bf16 parts (passes/parts.c): split3 grows its dim 3
     * times in bf16; a matmul of parts contracts 3 K of bf16 into f32 */
    CHECK_STR(INF(IR_SPLIT3, A(.dim = 1), "f32[64, 1024]"), "bf16[64, 3072]");
    CHECK_STR(INF(IR_SPLIT3, A(.dim = 0, .reversed = true), "f32[1024, 8]"), "bf16[3072, 8]");
    CHECK_STR(INF(IR_SPLIT3, A(.dim = 2), "f32[64, 1024]"),
              "error: split3's dim 2 is not a dimension of f32[64, 1024]");
    CHECK_STR(INF(IR_SPLIT3, A(.dim = 0), "bf16[64, 1024]"),
              "error: split3 splits f32 into bf16 parts, got bf16[64, 1024]");
    CHECK_STR(INF(IR_MATMUL, A(.parts = true), "bf16[64, 3072]", "bf16[3072, 8]"), "f32[64, 8]");
    CHECK_STR(INF(IR_MATMUL, A(.parts = true, .trans = IR_TRANS_A), "bf16[2, 96, 5]",
                  "bf16[96, 8]"),
              "f32[2, 5, 8]");
    CHECK_STR(INF(IR_MATMUL, A(.parts = true), "bf16[64, 1024]", "bf16[1024, 8]"),
              "error: '@' of parts reads bf16 parts, 3 of them along the contracted dimension, "
              "got bf16[64, 1024] @ bf16[1024, 8]");
    CHECK_STR(INF(IR_MATMUL, A(.parts = true), "f32[64, 3072]", "f32[3072, 8]"),
              "error: '@' of parts reads bf16 parts, 3 of them along the contracted dimension, "
              "got f32[64, 3072] @ f32[3072, 8]");
    CHECK_STR(INF(IR_MATMUL, NULL, "i32[2, 3]", "i32[3, 4]"), "i32[2, 4]");
    /* operands read transposed (trans, passes/fold.c's) */
    CHECK_STR(INF(IR_MATMUL, A(.trans = IR_TRANS_A), "f32[1024, 64]", "f32[1024, 4096]"),
              "f32[64, 4096]");
    CHECK_STR(INF(IR_MATMUL, A(.trans = IR_TRANS_B), "f32[2, 3, 64, 32]", "f32[16, 32]"),
              "f32[2, 3, 64, 16]");
    CHECK_STR(INF(IR_MATMUL, A(.trans = IR_TRANS_A | IR_TRANS_B), "f32[8, 4]", "f32[5, 8]"),
              "f32[4, 5]");
    CHECK_STR(INF(IR_MATMUL, A(.trans = IR_TRANS_B), "f32[8]", "f32[8]"),
              "error: '@' reads operand 2 transposed, which needs rank 2 or more, got f32[8]");
    CHECK_STR(INF(IR_MATMUL, A(.trans = IR_TRANS_A), "f32[4, 8]", "f32[8, 5]"),
              "error: '@' contracts dimension of size 4 with one of size 8: f32[8, 4] @ "
              "f32[8, 5]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[64, 1024]", "f32[512, 4096]"),
              "error: '@' contracts dimension of size 1024 with one of size 512: "
              "f32[64, 1024] @ f32[512, 4096]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[4]", "f32[4]"), "f32[]"); /* a dot, as NumPy */
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[]", "f32[4, 4]"),
              "error: '@' needs operands of rank 1 or more, got f32[] @ f32[4, 4]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[2, 4, 5]", "f32[3, 5, 6]"),
              "error: batch dimensions of '@' do not broadcast: f32[2, 4, 5] @ f32[3, 5, 6]");
    CHECK_STR(INF(IR_MATMUL, NULL, "f32[2, 3]", "bf16[3, 4]"),
              "error: mixed dtypes in '@': f32 and bf16 (use cast to convert one)");
}

static void test_attention(void)
{
    CHECK_STR(INF(IR_ATTENTION, A(.causal = false), "f32[2, 8, 128, 64]", "f32[2, 8, 256, 64]",
                  "f32[2, 8, 256, 32]"),
              "f32[2, 8, 128, 32]");
    /* heads_inner: [B, S, H, d] stored, [B, H, S, d] computed on */
    CHECK_STR(INF(IR_ATTENTION, A(.heads_inner = HALL(IR_ATTENTION)), "f32[2, 128, 8, 64]", "f32[2, 256, 8, 64]",
                  "f32[2, 256, 8, 32]"),
              "f32[2, 128, 8, 32]");
    CHECK_STR(INF(IR_ATTN_STATS, A(.heads_inner = HALL(IR_ATTN_STATS)), "f32[2, 128, 8, 64]",
                  "f32[2, 256, 8, 64]", "f32[2, 256, 8, 32]", "f32[2, 128, 8, 32]"),
              "f32[2, 8, 128, 2]");
    CHECK_STR(INF(IR_ATTN_DV, A(.heads_inner = HALL(IR_ATTN_DV)), "f32[2, 128, 8, 64]", "f32[2, 256, 8, 64]",
                  "f32[2, 128, 8, 32]", "f32[2, 8, 128, 2]"),
              "f32[2, 256, 8, 32]");
    /* the statistics from the forward: lse and the result keep their forms */
    CHECK_STR(INF(IR_ATTN_LSE, A(.heads_inner = HALL(IR_ATTN_LSE)), "f32[2, 128, 8, 64]", "f32[2, 256, 8, 64]"),
              "f32[2, 8, 128]");
    CHECK_STR(INF(IR_ATTN_LSE, NULL, "bf16[4, 16, 32]", "bf16[4, 24, 32]"), "f32[4, 16]");
    CHECK_STR(INF(IR_ATTN_DELTA, A(.heads_inner = HALL(IR_ATTN_DELTA)), "f32[2, 128, 8, 32]",
                  "f32[2, 128, 8, 32]", "f32[2, 8, 128]"),
              "f32[2, 8, 128, 2]");
    CHECK_STR(INF(IR_ATTN_DELTA, NULL, "bf16[4, 16, 32]", "bf16[4, 16, 32]", "f32[4, 16]"),
              "f32[4, 16, 2]");
    CHECK_STR(INF(IR_ATTN_DELTA, NULL, "bf16[4, 16, 32]", "f32[4, 16, 32]", "f32[4, 16]"),
              "error: attn_delta needs y and dy of one type, got bf16[4, 16, 32] and f32[4, 16, "
              "32]");
    CHECK_STR(INF(IR_ATTN_DELTA, NULL, "f32[4, 16, 32]", "f32[4, 16, 32]", "f32[4, 32]"),
              "error: attn_delta needs lse f32[..., S] for y f32[4, 16, 32], got f32[4, 32]");
    CHECK_STR(INF(IR_ATTENTION, A(.heads_inner = HALL(IR_ATTENTION)), "f32[16, 64]", "f32[16, 64]",
                  "f32[16, 64]"),
              "error: attention with heads_inner needs operands of rank 3 or more, got operand 1 "
              "of rank 2");
    CHECK_STR(INF(IR_ATTENTION, A(.causal = true), "bf16[16, 64]", "bf16[32, 64]", "bf16[32, 64]"),
              "bf16[16, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[16, 64]", "f32[64]", "f32[16, 64]"),
              "error: attention needs k of rank 2 or more, got f32[64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 16, 64]", "f32[3, 16, 64]", "f32[3, 16, 64]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[2, 16, 64], f32[3, 16, 64] and f32[3, 16, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[16, 64]", "f32[1, 16, 64]", "f32[1, 16, 64]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[16, 64], f32[1, 16, 64] and f32[1, 16, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[16, 64]", "f32[16, 32]", "f32[16, 64]"),
              "error: attention needs q and k with the same last dimension, got f32[16, 64] "
              "and f32[16, 32]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[16, 64]", "f32[16, 64]", "f32[8, 64]"),
              "error: attention needs k and v with the same sequence length, got f32[16, 64] "
              "and f32[8, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "i32[16, 64]", "i32[16, 64]", "i32[16, 64]"),
              "error: attention needs floating-point operands, got i32[16, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[16, 64]", "f32[16, 64]", "f16[16, 64]"),
              "error: mixed dtypes in attention: f32 and f16 (use cast to convert one)");
    /* grouped-query attention: k and v with G heads dividing q's H (dim -3,
     * or -2 with the heads inner); attn_dk and attn_dv have k's heads */
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 8, 16, 64]", "f32[2, 2, 24, 64]",
                  "f32[2, 2, 24, 32]"),
              "f32[2, 8, 16, 32]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 8, 16, 64]", "f32[2, 1, 24, 64]",
                  "f32[2, 1, 24, 32]"),
              "f32[2, 8, 16, 32]");
    CHECK_STR(INF(IR_ATTENTION, A(.heads_inner = HALL(IR_ATTENTION)), "f32[2, 16, 8, 64]",
                  "f32[2, 24, 4, 64]", "f32[2, 24, 4, 64]"),
              "f32[2, 16, 8, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 8, 16, 64]", "f32[2, 3, 24, 64]",
                  "f32[2, 3, 24, 64]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[2, 8, 16, 64], f32[2, 3, 24, 64] and f32[2, 3, 24, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 8, 16, 64]", "f32[2, 2, 24, 64]",
                  "f32[2, 4, 24, 64]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[2, 8, 16, 64], f32[2, 2, 24, 64] and f32[2, 4, 24, 64]");
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[4, 16, 64]", "f32[2, 24, 64]", "f32[2, 24, 64]"),
              "f32[4, 16, 64]"); /* rank 3: dim 0 holds the heads */
    CHECK_STR(INF(IR_ATTENTION, NULL, "f32[2, 4, 16, 64]", "f32[1, 4, 24, 64]",
                  "f32[1, 4, 24, 64]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[2, 4, 16, 64], f32[1, 4, 24, 64] and f32[1, 4, 24, 64]");
    CHECK_STR(INF(IR_ATTN_LSE, NULL, "bf16[2, 8, 16, 32]", "bf16[2, 2, 24, 32]"),
              "f32[2, 8, 16]");
    CHECK_STR(INF(IR_ATTN_PROBS, NULL, "f32[2, 8, 16, 32]", "f32[2, 2, 24, 32]"),
              "error: attn_probs needs q and k with the same leading and last dimensions, got "
              "f32[2, 8, 16, 32] and f32[2, 2, 24, 32]");
    CHECK_STR(INF(IR_ATTN_DK, NULL, "f32[2, 8, 16, 32]", "f32[2, 2, 24, 32]",
                  "f32[2, 2, 24, 48]", "f32[2, 8, 16, 48]", "f32[2, 8, 16, 2]"),
              "f32[2, 2, 24, 32]");
    CHECK_STR(INF(IR_ATTN_DV, NULL, "f32[2, 8, 16, 32]", "f32[2, 2, 24, 32]",
                  "f32[2, 8, 16, 48]", "f32[2, 8, 16, 2]"),
              "f32[2, 2, 24, 48]");
    CHECK_STR(INF(IR_ATTN_DQ, A(.heads_inner = HALL(IR_ATTN_DQ)), "f32[2, 16, 8, 32]", "f32[2, 24, 2, 32]",
                  "f32[2, 24, 2, 48]", "f32[2, 16, 8, 48]", "f32[2, 8, 16, 2]"),
              "f32[2, 16, 8, 32]");
    /* heads inner operand by operand: v alone and the result; dy alone */
    CHECK_STR(INF(IR_ATTENTION, A(.heads_inner = 4 | IR_HEADS_RESULT), "f32[2, 8, 16, 64]",
                  "f32[2, 8, 24, 64]", "f32[2, 24, 8, 32]"),
              "f32[2, 16, 8, 32]");
    CHECK_STR(INF(IR_ATTN_DV, A(.heads_inner = 4), "f32[2, 8, 16, 32]", "f32[2, 2, 24, 32]",
                  "f32[2, 16, 8, 48]", "f32[2, 8, 16, 2]"),
              "f32[2, 2, 24, 48]");
    CHECK_STR(INF(IR_ATTENTION, A(.heads_inner = 4), "f32[2, 8, 16, 64]", "f32[2, 8, 24, 64]",
                  "f32[2, 8, 24, 32]"),
              "error: attention needs q, k and v with the same leading dimensions, got "
              "f32[2, 8, 16, 64], f32[2, 8, 24, 64] and f32[2, 24, 8, 32]");
    CHECK_STR(INF(IR_ATTN_LSE, A(.heads_inner = IR_HEADS_RESULT), "f32[2, 8, 16, 64]",
                  "f32[2, 8, 24, 64]"),
              "error: attn_lse's heads_inner (0x10) names operands it does not have (its own: "
              "0x3)");
    CHECK_STR(INF(IR_ATTN_STATS, NULL, "f32[2, 8, 16, 32]", "f32[2, 2, 24, 32]",
                  "f32[2, 4, 24, 48]", "f32[2, 8, 16, 48]"),
              "error: attn_stats needs q, k, v and dy with the same leading dimensions, got q "
              "f32[2, 8, 16, 32] and k f32[2, 2, 24, 32]");
}

static void test_reduce(void)
{
    ir_attrs a = {.axis = -1};
    CHECK_STR(INF(IR_SUM, &a, "f32[64, 1024]"), "f32[64]");
    CHECK_INT(a.axis, 1);
    CHECK_STR(INF(IR_SUM, A(.axis = 0, .keepdims = true), "f32[64, 1024]"), "f32[1, 1024]");
    CHECK_STR(INF(IR_MEAN, A(.axis = 1), "f16[2, 3, 4]"), "f16[2, 4]");
    CHECK_STR(INF(IR_AMAX, A(.axis = -3, .keepdims = true), "i32[2, 3, 4]"), "i32[1, 3, 4]");
    CHECK_STR(INF(IR_SUM, A(.axis = 0), "f32[7]"), "f32[]");
    CHECK_STR(INF(IR_SUM, A(.axis = 2), "f32[64, 1024]"),
              "error: axis 2 is out of range for sum of f32[64, 1024]");
    a.axis = -3;
    CHECK_STR(INF(IR_AMAX, &a, "f32[64, 1024]"),
              "error: axis -3 is out of range for amax of f32[64, 1024]");
    CHECK_INT(a.axis, -3);
    CHECK_STR(INF(IR_SUM, A(.axis = 0), "f32[]"), "error: axis 0 is out of range for sum of f32[]");
    CHECK_STR(INF(IR_MEAN, A(.axis = 0), "i32[4]"),
              "error: mean needs a floating-point operand, got i32[4]");

    a.axis = -1;
    CHECK_STR(INF(IR_SOFTMAX, &a, "f32[8, 16]"), "f32[8, 16]");
    CHECK_INT(a.axis, 1);
    CHECK_STR(INF(IR_SOFTMAX, A(.axis = 2), "f32[8, 16]"),
              "error: axis 2 is out of range for softmax of f32[8, 16]");
    CHECK_STR(INF(IR_SOFTMAX, A(.axis = 0), "i32[8]"),
              "error: softmax needs a floating-point operand, got i32[8]");
}

static void test_norms(void)
{
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[64, 1024]", "f32[1024]", "f32[1024]"),
              "f32[64, 1024]");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[64, 1024]", "f32[512]", "f32[1024]"),
              "error: layernorm needs g of shape [1024] to match the last dimension of "
              "f32[64, 1024], got f32[512]");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[64, 1024]", "f32[1024]", "f32[1, 1024]"),
              "error: layernorm needs b of shape [1024] to match the last dimension of "
              "f32[64, 1024], got f32[1, 1024]");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 0), "f32[4]", "f32[4]", "f32[4]"),
              "error: layernorm needs eps > 0, got 0");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[]", "f32[1]", "f32[1]"),
              "error: layernorm needs x of rank 1 or more, got f32[]");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "f32[4]", "bf16[4]", "f32[4]"),
              "error: mixed dtypes in layernorm: f32 and bf16 (use cast to convert one)");
    CHECK_STR(INF(IR_LAYERNORM, A(.eps = 1e-5), "i32[4]", "i32[4]", "i32[4]"),
              "error: layernorm needs floating-point operands, got i32[4]");
    CHECK_STR(INF(IR_RMSNORM, A(.eps = 1e-6), "bf16[2, 8, 64]", "bf16[64]"), "bf16[2, 8, 64]");
    CHECK_STR(INF(IR_RMSNORM, A(.eps = 1e-6), "f32[2, 8, 64]", "f32[8]"),
              "error: rmsnorm needs g of shape [64] to match the last dimension of "
              "f32[2, 8, 64], got f32[8]");
    CHECK_STR(INF(IR_RMSNORM, A(.eps = -1), "f32[4]", "f32[4]"),
              "error: rmsnorm needs eps > 0, got -1");
}

static void test_layout(void)
{
    CHECK_STR(INF(IR_NARROW, A(.dim = 1, .offset = 1, .bound = 3), "bf16[2, 5, 4]"),
              "bf16[2, 2, 4]");
    CHECK_STR(INF(IR_NARROW, A(.dim = 0, .offset = 0, .bound = 1), "i32[7]"), "i32[1]");
    CHECK_STR(INF(IR_NARROW, A(.dim = 2, .offset = 0, .bound = 1), "f32[2, 5]"),
              "error: slicing dimension 2 of f32[2, 5], which has 2");
    CHECK_STR(INF(IR_NARROW, A(.dim = 1, .offset = 3, .bound = 3), "f32[2, 5]"),
              "error: the slice 3:3 of dimension 1 of f32[2, 5] is empty or out of range");
    CHECK_STR(INF(IR_NARROW, A(.dim = 1, .offset = 3, .bound = 6), "f32[2, 5]"),
              "error: the slice 3:6 of dimension 1 of f32[2, 5] is empty or out of range");
    CHECK_STR(INF(IR_NARROW, A(.dim = 1, .offset = -1, .bound = 2), "f32[2, 5]"),
              "error: the slice -1:2 of dimension 1 of f32[2, 5] is empty or out of range");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 1), "f32[2, 3]", "f32[2, 5]"), "f32[2, 8]");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 0), "i32[1]", "i32[2]", "i32[3]", "i32[4]"), "i32[10]");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 0), "f32[2, 3]", "f32[2, 4]"),
              "error: concat along dimension 0 needs every other dimension equal: f32[2, 3] and "
              "f32[2, 4]");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 0), "f32[2, 3]", "f32[2]"),
              "error: concat along dimension 0 needs every other dimension equal: f32[2, 3] and "
              "f32[2]");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 2), "f32[2, 3]", "f32[2, 3]"),
              "error: concat along dimension 2 of f32[2, 3], which has 2");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 0), "f32[2]", "bf16[2]"),
              "error: mixed dtypes in concat: f32 and bf16 (use cast to convert one)");
    CHECK_STR(INF(IR_CONCAT, A(.dim = 0), "f32[2]"), "error: concat takes 2 to 4 operands, got 1");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 3, .list = {2, 0, 1}), "f32[2, 3, 4]"), "f32[4, 2, 3]");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 0), "f32[]"), "f32[]");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 3, .list = {0, 0, 1}), "f32[2, 3, 4]"),
              "error: transpose of f32[2, 3, 4] needs a permutation of its 3 axes, got [0, 0, 1]");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 2, .list = {1, 0}), "f32[2, 3, 4]"),
              "error: transpose of f32[2, 3, 4] needs a permutation of its 3 axes, got [1, 0]");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 2, .list = {1, 2}), "f32[2, 3]"),
              "error: transpose of f32[2, 3] needs a permutation of its 2 axes, got [1, 2]");
    CHECK_STR(INF(IR_TRANSPOSE, A(.nlist = 9), "f32[2, 3]"),
              "error: transpose takes at most 8 axes, got 9");

    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 3, .list = {64, 16, 64}), "f32[64, 1024]"),
              "f32[64, 16, 64]");
    ir_attrs a = {.nlist = 2, .list = {-1, 256}};
    CHECK_STR(INF(IR_RESHAPE, &a, "f32[64, 1024]"), "f32[256, 256]");
    CHECK_INT(a.list[0], 256);
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 0), "f32[1, 1]"), "f32[]");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 2, .list = {-1, -1}), "f32[4]"),
              "error: reshape can infer only one dimension (-1), got [-1, -1]");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 2, .list = {4, 0}), "f32[4]"),
              "error: reshape needs dimensions of size 1 or more (or one -1), got [4, 0]");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 2, .list = {4, -1}), "f32[6]"),
              "error: cannot reshape f32[6] (6 elements) to [4, -1]: 6 is not a multiple of 4");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 2, .list = {64, 512}), "f32[64, 1024]"),
              "error: cannot reshape f32[64, 1024] (65536 elements) to [64, 512] (32768 elements)");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 2, .list = {4294967296, 4294967296}), "f32[4]"),
              "error: reshape to [4294967296, 4294967296] has too many elements");
    CHECK_STR(INF(IR_RESHAPE, A(.nlist = 9), "f32[4]"),
              "error: reshape to 9 dimensions is not supported (at most 8)");

    CHECK_STR(INF(IR_EMBEDDING, NULL, "f32[1000, 64]", "i32[8, 16]"), "f32[8, 16, 64]");
    CHECK_STR(INF(IR_EMBEDDING, NULL, "bf16[1000, 64]", "i32[]"), "bf16[64]");
    CHECK_STR(INF(IR_EMBEDDING, NULL, "f32[1000, 64]", "f32[8, 16]"),
              "error: embedding ids must be i32, got f32[8, 16]");
    CHECK_STR(INF(IR_EMBEDDING, NULL, "f32[1000]", "i32[8]"),
              "error: embedding table must be a 2-D floating-point tensor, got f32[1000]");
    CHECK_STR(INF(IR_EMBEDDING, NULL, "i32[10, 4]", "i32[8]"),
              "error: embedding table must be a 2-D floating-point tensor, got i32[10, 4]");
    CHECK_STR(INF(IR_EMBEDDING, NULL, "f32[10, 4]", "i32[1, 1, 1, 1, 1, 1, 1, 2]"),
              "error: embedding of ids i32[1, 1, 1, 1, 1, 1, 1, 2] would have rank 9; at most "
              "8 dimensions are supported");
}

static void test_losses(void)
{
    CHECK_STR(INF(IR_MSE, NULL, "f32[4, 4]", "f32[4, 4]"), "f32[]");
    CHECK_STR(INF(IR_MSE, NULL, "f32[4, 4]", "f32[4]"),
              "error: mse needs operands of the same shape, got f32[4, 4] and f32[4]");
    CHECK_STR(INF(IR_MSE, NULL, "f32[4]", "f16[4]"),
              "error: mixed dtypes in mse: f32 and f16 (use cast to convert one)");
    CHECK_STR(INF(IR_MSE, NULL, "i32[4]", "i32[4]"),
              "error: mse needs floating-point operands, got i32[4]");
    CHECK_STR(INF(IR_XENT, NULL, "f32[64, 10]", "i32[64]"), "f32[]");
    CHECK_STR(INF(IR_XENT, NULL, "bf16[2, 3, 10]", "i32[2, 3]"), "bf16[]");
    CHECK_STR(INF(IR_XENT, NULL, "f32[64, 10]", "f32[64]"),
              "error: cross_entropy labels must be i32, got f32[64]");
    CHECK_STR(INF(IR_XENT, NULL, "f32[64, 10]", "i32[32]"),
              "error: cross_entropy needs labels of shape [64] for logits f32[64, 10], "
              "got i32[32]");
    CHECK_STR(INF(IR_XENT, NULL, "f32[64, 10]", "i32[64, 10]"),
              "error: cross_entropy needs labels of shape [64] for logits f32[64, 10], got "
              "i32[64, 10]");
    CHECK_STR(INF(IR_XENT, NULL, "i32[64, 10]", "i32[64]"),
              "error: cross_entropy needs floating-point logits of rank 1 or more, "
              "got i32[64, 10]");
    CHECK_STR(INF(IR_XENT, NULL, "f32[]", "i32[]"),
              "error: cross_entropy needs floating-point logits of rank 1 or more, got f32[]");
}

static void test_collectives(void)
{
    CHECK_STR(INF(IR_ALL_REDUCE, A(.naxes = 1, .axes = {1}), "f32[4, 16]"), "f32[4, 16]");
    CHECK_STR(INF(IR_BROADCAST, A(.naxes = 2, .axes = {0, 2}), "f32[4]"), "f32[4]");
    CHECK_STR(INF(IR_ALL_GATHER, A(.dim = 0, .naxes = 2, .axes = {0, 1}), "f32[4, 16]"),
              "f32[32, 16]");
    CHECK_STR(INF(IR_REDUCE_SCATTER, A(.dim = 1, .naxes = 1, .axes = {1}), "f32[4, 16]"),
              "f32[4, 4]");
    CHECK_STR(INF(IR_ALL_TO_ALL, A(.dim = 0, .dim2 = 1, .naxes = 1, .axes = {1}), "f32[8, 3]"),
              "f32[2, 12]");
    CHECK_STR(INF(IR_ALL_TO_ALL, A(.dim = 1, .dim2 = 1, .naxes = 1, .axes = {1}), "f32[8, 4]"),
              "f32[8, 4]");
    CHECK_STR(INF(IR_REDUCE_SCATTER, A(.dim = 1, .naxes = 1, .axes = {1}), "f32[4, 6]"),
              "error: reduce_scatter over 4 ranks cannot split dimension 1 of f32[4, 6] (size 6)");
    CHECK_STR(INF(IR_ALL_TO_ALL, A(.dim = 1, .dim2 = 0, .naxes = 1, .axes = {2}), "f32[8, 4]"),
              "error: all_to_all over 3 ranks cannot split dimension 1 of f32[8, 4] (size 4)");
    CHECK_STR(INF(IR_ALL_REDUCE, A(.naxes = 0), "f32[4]"),
              "error: all_reduce needs 1 to 8 mesh axes, got 0");
    CHECK_STR(INF(IR_ALL_REDUCE, A(.naxes = 1, .axes = {5}), "f32[4]"),
              "error: all_reduce runs over mesh axis 5, but the mesh has 3 axes");
    CHECK_STR(INF(IR_BROADCAST, A(.naxes = 2, .axes = {1, 1}), "f32[4]"),
              "error: broadcast names mesh axis tp twice");
    CHECK_STR(INF(IR_ALL_GATHER, A(.dim = 2, .naxes = 1, .axes = {0}), "f32[4, 16]"),
              "error: dimension 2 is out of range for all_gather of f32[4, 16]");
    CHECK_STR(INF(IR_ALL_TO_ALL, A(.dim = 0, .dim2 = -1, .naxes = 1, .axes = {0}), "f32[4, 16]"),
              "error: dimension -1 is out of range for all_to_all of f32[4, 16]");
    CHECK_STR(INF(IR_ALL_GATHER, A(.dim = 0, .naxes = 1, .axes = {0}), "f32[4611686018427387904]"),
              "error: result of all_gather is too large: dimension 0 of "
              "f32[4611686018427387904] times 2 ranks");
    CHECK_STR(INF(IR_ALL_GATHER, A(.dim = 0, .naxes = 1, .axes = {1}),
                  "f32[1099511627776, 2097152]"),
              "error: the result of all_gather has too many elements: "
              "f32[4398046511104, 2097152]");
}

/* ---- the verifier ---- */

/* x, y: f32[64, 1024] shard(dp, _); w: f32[1024, 1024] shard(_, tp);
 * h = x @ w; s = sum(h, axis = -1); loss = mse(h, y); output h; train loss.
 * Op indices: x 0, y 1, w 2, h 3, s 4, loss 5. */
typedef struct net {
    ir_module *m;
    ir_value *x, *y, *w, *h, *s, *loss;
} net;

static void shard(ir_value *v, int d, int axis)
{
    v->sh.kind = IR_SH_FIXED;
    v->sh.axes[d][v->sh.naxes[d]++] = (uint8_t)axis;
}

static ir_value *source(ir_module *m, ir_opcode code, const char *name, const char *type)
{
    ir_type t = ty(type);
    ir_value *v = ir_append(m, code, NULL, 0, A(.name = name), &t)->res[0];
    v->name = name;
    return v;
}

/* op's attributes, changed by the statement given on a_ (a copy): attributes are shared
 * (ir_attrs_intern), so a test that breaks one op's gives it new ones. */
#define EDIT_ATTRS(m, op, ...)                                                     \
    do {                                                                           \
        ir_attrs a_ = *(op)->a;                                                    \
        __VA_ARGS__;                                                               \
        ir_op_set_attrs((m), (op), &a_);                                           \
    } while (0)

static net build(jmp_buf *oom)
{
    net n;
    char err[200] = "";
    n.m = ir_module_new(oom);
    n.m->mesh = (ir_mesh){.naxes = 2, .name = {"dp", "tp"}, .size = {2, 2}};
    n.x = source(n.m, IR_INPUT, "x", "f32[64, 1024]");
    n.y = source(n.m, IR_INPUT, "y", "f32[64, 1024]");
    n.w = source(n.m, IR_PARAM, "w", "f32[1024, 1024]");
    EDIT_ATTRS(n.m, n.w->def, a_.init = (ir_init){IR_INIT_NORMAL, 0.02, 0});
    shard(n.x, 0, 0);
    shard(n.y, 0, 0);
    shard(n.w, 1, 1);
    n.h = ir_emit(n.m, IR_MATMUL, (ir_value *[]){n.x, n.w}, 2, NULL, err, sizeof err);
    n.s = ir_emit(n.m, IR_SUM, (ir_value *[]){n.h}, 1, A(.axis = -1), err, sizeof err);
    n.loss = ir_emit(n.m, IR_MSE, (ir_value *[]){n.h, n.y}, 2, NULL, err, sizeof err);
    CHECK_STR(err, "");
    ir_add_output(n.m, "h", n.h, (su_loc){0, 0});
    n.m->train.loss = n.loss;
    n.m->train.opt = IR_OPT_SGD;
    n.m->train.lr = 0.01;
    return n;
}

/* "ok", or the verifier's message; the module is freed. */
static const char *vmsg(ir_module *m)
{
    static char res[1024];
    su_buf b;
    su_buf_init(&b, NULL);
    bool ok = ir_verify(m, &b);
    snprintf(res, sizeof res, "%s", ok && !b.len ? "ok" : !ok && b.len ? b.s : "(bad report)");
    su_buf_free(&b);
    ir_module_free(m);
    return res;
}

static void test_verify_ops(jmp_buf *oom)
{
    net n = build(oom);
    CHECK_INT(n.s->def->a->axis, 1);
    CHECK_STR(vmsg(n.m), "ok");

    n = build(oom);
    n.h->type.dim[1] = 512;
    CHECK_STR(vmsg(n.m),
              "op 3 (matmul): result type f32[64, 512] differs from the inferred f32[64, 1024]");

    n = build(oom);
    n.w->type.dim[0] = 512;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): '@' contracts dimension of size 1024 with one of size "
                         "512: f32[64, 1024] @ f32[512, 1024]");

    n = build(oom);
    n.h->def->in[1] = n.loss;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): operand 2 (%5) is not defined by an earlier op");

    net other = build(oom);
    n = build(oom);
    n.h->def->in[0] = other.x;
    CHECK_HAS(vmsg(n.m), "operand 1 (%x) is not defined by an earlier op");
    ir_module_free(other.m);

    n = build(oom);
    n.h->def->in[0] = NULL;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): operand 1 is missing");

    n = build(oom);
    n.h->def->nin = 1;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): has 1 operands; the op takes 2 to 2");

    n = build(oom);
    n.h->def->code = (ir_opcode)200;
    CHECK_STR(vmsg(n.m), "op 3: unknown opcode 200");

    n = build(oom);
    n.h->res = 1;
    CHECK_HAS(vmsg(n.m), "op 3 (matmul): result 0 (%3) does not point back to its op");

    n = build(oom);
    n.h->id = 0;
    CHECK_HAS(vmsg(n.m), "op 3 (matmul): result 0 (%0) reuses value id 0");

    n = build(oom);
    n.h->id = 99;
    CHECK_HAS(vmsg(n.m), "result 0 has id 99, outside 0..5");

    n = build(oom);
    EDIT_ATTRS(n.m, n.s->def, a_.axis = -1);
    CHECK_STR(vmsg(n.m), "op 4 (sum): axis -1 is not normalised (should be 1)");

    n = build(oom);
    EDIT_ATTRS(n.m, n.s->def, a_.axis = 1);
    EDIT_ATTRS(n.m, n.s->def, a_.keepdims = true);
    CHECK_HAS(vmsg(n.m), "result type f32[64] differs from the inferred f32[64, 1]");

    n = build(oom);
    ir_type t = ty("f32[256, 256]");
    ir_append(n.m, IR_RESHAPE, &n.h, 1, A(.nlist = 2, .list = {-1, 256}), &t);
    CHECK_STR(vmsg(n.m), "op 6 (reshape): shape entry 0 is -1, not normalised to 256");

    n = build(oom);
    n.h->def->rep = 0;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): rep 0 in a module without a pipeline");
}

static void test_verify_sources(jmp_buf *oom)
{
    net n = build(oom);
    EDIT_ATTRS(n.m, n.y->def, a_.name = "x");
    CHECK_STR(vmsg(n.m), "op 1 (input): name \"x\" is already used by op 0");

    n = build(oom);
    EDIT_ATTRS(n.m, n.w->def, a_.name = "x");
    CHECK_STR(vmsg(n.m), "op 2 (param): name \"x\" is already used by op 0");

    n = build(oom);
    EDIT_ATTRS(n.m, n.x->def, a_.name = "");
    CHECK_STR(vmsg(n.m), "op 0 (input): has no name");

    n = build(oom);
    EDIT_ATTRS(n.m, n.w->def, a_.init.a = 0);
    CHECK_STR(vmsg(n.m), "op 2 (param): init normal(0) needs a std > 0");

    n = build(oom);
    EDIT_ATTRS(n.m, n.w->def, a_.init = (ir_init){IR_INIT_UNIFORM, 1, 1});
    CHECK_HAS(vmsg(n.m), "init uniform(1, 1) needs low < high");

    n = build(oom);
    ir_type t = ty("f32[4]");
    ir_append(n.m, IR_CONST, NULL, 0, A(.value = 1), &t);
    CHECK_STR(vmsg(n.m), "op 6 (const): type f32[4] is not a scalar");

    n = build(oom);
    n.x->type.dim[1] = 0;
    CHECK_STR(vmsg(n.m), "op 0 (input): %x has a dimension of size 0: f32[64, 0]");

    n = build(oom);
    n.x->type.rank = 9;
    CHECK_HAS(vmsg(n.m), "%x has rank 9");

    n = build(oom);
    n.x->type.dim[1] = INT64_MAX;
    CHECK_HAS(vmsg(n.m), "%x has too many elements");
}

static void test_verify_shardings(jmp_buf *oom)
{
    net n = build(oom);
    n.x->sh.axes[0][0] = 5;
    CHECK_STR(vmsg(n.m), "op 0 (input): sharding of %x names mesh axis 5, but the mesh has 2");

    n = build(oom);
    shard(n.x, 1, 0);
    CHECK_STR(vmsg(n.m), "op 0 (input): sharding of %x uses mesh axis dp twice");

    n = build(oom);
    n.x->sh.partial = 1;
    CHECK_HAS(vmsg(n.m), "both splits over dp and is partial over it");

    n = build(oom);
    n.x->sh.partial = 1 << 3;
    CHECK_HAS(vmsg(n.m), "partial over a mesh axis the mesh lacks");

    n = build(oom);
    n.m->mesh.size[0] = 3;
    CHECK_STR(vmsg(n.m), "op 0 (input): dimension 0 of %x has size 64, which does not divide "
                         "evenly over dp (split 3)");

    n = build(oom);
    shard(n.w, 1, 0);
    n.m->mesh.size[0] = 3;
    n.x->sh.kind = IR_SH_NONE;
    n.y->sh.kind = IR_SH_NONE;
    CHECK_HAS(vmsg(n.m), "dimension 1 of %w has size 1024, which does not divide evenly over "
                         "(tp, dp) (split 6)");

    /* Local shapes need not divide. */
    n = build(oom);
    n.m->mesh.size[0] = 3;
    n.m->partitioned = true;
    CHECK_STR(vmsg(n.m), "ok");

    n = build(oom);
    n.x->sh.kind = 7;
    CHECK_HAS(vmsg(n.m), "sharding of %x has unknown kind 7");
}

static void test_verify_module(jmp_buf *oom)
{
    net n = build(oom);
    n.m->mesh.name[1] = "dp";
    CHECK_STR(vmsg(n.m), "mesh axis name dp is used twice");

    n = build(oom);
    n.m->mesh.size[1] = 0;
    CHECK_STR(vmsg(n.m), "mesh axis tp has size 0; sizes are 1 or more");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 1, .repeats = 4, .microbatches = 2,
                              .schedule = IR_SCHED_1F1B, .chunks = 1};
    n.h->def->rep = 3;
    CHECK_STR(vmsg(n.m), "ok");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 1, .repeats = 4, .microbatches = 2,
                              .schedule = IR_SCHED_1F1B, .chunks = 1};
    n.h->def->rep = 4;
    CHECK_STR(vmsg(n.m), "op 3 (matmul): rep 4 is outside the pipeline's repetitions 0..3");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 1, .repeats = 3, .microbatches = 2, .chunks = 2,
                              .schedule = IR_SCHED_INTERLEAVED};
    CHECK_STR(vmsg(n.m), "pipeline of 3 repetitions cannot fill 2 stages of tp with 2 chunks "
                         "each (one each at least)");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 1, .repeats = 8, .microbatches = 2,
                              .schedule = IR_SCHED_1F1B, .chunks = 2};
    CHECK_HAS(vmsg(n.m), "only the interleaved schedule");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 1, .repeats = 8, .microbatches = 2,
                              .schedule = IR_SCHED_INTERLEAVED, .chunks = 2};
    CHECK_STR(vmsg(n.m), "ok");

    n = build(oom);
    n.m->pipe.axis = 2;
    CHECK_STR(vmsg(n.m), "pipeline axis 2 is not a mesh axis");

    n = build(oom);
    n.m->pipe = (ir_pipeline){.axis = 0, .repeats = 2, .microbatches = 0, .chunks = 1};
    CHECK_HAS(vmsg(n.m), "microbatches");

    net other = build(oom);
    n = build(oom);
    ir_add_output(n.m, "h2", other.h, (su_loc){0, 0});
    CHECK_STR(vmsg(n.m), "output \"h2\" is %3, which no op of the module defines");
    ir_module_free(other.m);

    n = build(oom);
    ir_add_output(n.m, "h", n.s, (su_loc){0, 0});
    CHECK_STR(vmsg(n.m), "output name \"h\" is used twice (outputs 0 and 1)");

    n = build(oom);
    ir_add_output(n.m, "", n.s, (su_loc){0, 0});
    CHECK_STR(vmsg(n.m), "output 1 has no name");
}

static void test_verify_train(jmp_buf *oom)
{
    net n = build(oom);
    n.m->train.loss = n.h;
    CHECK_STR(vmsg(n.m), "train loss %3 must be a floating-point scalar, got f32[64, 1024]");

    n = build(oom);
    n.m->train.loss = NULL;
    CHECK_STR(vmsg(n.m), "train has an optimizer but no loss");

    n = build(oom);
    n.m->train.loss = NULL;
    n.m->train.opt = IR_OPT_NONE;
    CHECK_STR(vmsg(n.m), "ok");

    net other = build(oom);
    n = build(oom);
    n.m->train.loss = other.loss;
    CHECK_HAS(vmsg(n.m), "train loss %5 is not defined by any op of the module");
    ir_module_free(other.m);

    n = build(oom);
    n.m->train.opt = IR_OPT_NONE;
    CHECK_HAS(vmsg(n.m), "is not sgd or adamw");

    n = build(oom);
    n.m->train.lr = 0;
    CHECK_STR(vmsg(n.m), "train learning rate must be > 0, got 0");

    n = build(oom);
    n.m->train.zero = 2;
    CHECK_HAS(vmsg(n.m), "train zero 2 names mesh axis -1");

    n = build(oom);
    n.m->train.zero = 4;
    CHECK_HAS(vmsg(n.m), "zero stage 4");

    n = build(oom);
    n.m->train.zero_axis = 0;
    CHECK_HAS(vmsg(n.m), "without zero");

    n = build(oom);
    n.m->train.opt = IR_OPT_ADAMW;
    n.m->train.zero = 3;
    n.m->train.zero_axis = 0;
    CHECK_STR(vmsg(n.m), "ok");
}

int main(void)
{
    mesh3 = (ir_mesh){.naxes = 3, .name = {"dp", "tp", "pp"}, .size = {2, 4, 3}};
    test_counts_and_operands();
    test_binary();
    test_unary();
    test_matmul();
    test_attention();
    test_reduce();
    test_norms();
    test_layout();
    test_losses();
    test_collectives();

    jmp_buf oom;
    if (setjmp(oom)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    test_verify_ops(&oom);
    test_verify_sources(&oom);
    test_verify_shardings(&oom);
    test_verify_module(&oom);
    test_verify_train(&oom);
    return CHECK_DONE();
}
