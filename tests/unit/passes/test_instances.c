/* test_instances.c: a pipeline stage's middle microbatches held once from
 * the split to the verifier (passes/instances.c) change nothing. For each
 * schedule, microbatch count and mesh below, the program compiled so and
 * the program compiled with every microbatch through every pass
 * (api_options_set_unshared) print the same stages, op for op with the
 * same task and microbatch stamps, and make the same plan, byte for byte;
 * and the stages are held once where the test says they can be (every
 * stage of the examples from 5 microbatches on; none with 4, nor with
 * --unroll, whose ops carry no task). A stage where an op made once reads
 * a middle microbatch's value stays unrolled, and still makes the same
 * plan. The proof itself is tested on stage programs made by hand, each
 * with one flaw it must find. */
#include "shardc.h"
#include "../../api/api_internal.h"
#include "check.h"

#include <setjmp.h>
#include <stdlib.h>

typedef struct compiled {
    shardc_program *prog;
    char *stages;           /* emit "stage-ir" */
    uint8_t *plan;
    size_t len;
} compiled;

static void set(shardc_options *o, const char *mesh, const char *const *defs)
{
    char *err = NULL;
    CHECK(shardc_options_set_mesh(o, mesh, &err) == SHARDC_OK);
    CHECK(shardc_options_set_archs(o, "none", &err) == SHARDC_OK);
    for (int i = 0; defs && defs[i]; i += 2)
        CHECK(shardc_options_define(o, defs[i], atoll(defs[i + 1]), &err) == SHARDC_OK);
    shardc_free(err);
}

static compiled compile(const char *name, const char *text, const char *mesh,
                        const char *const *defs, bool unshared, bool unroll)
{
    compiled c = {0};
    shardc_options *o = shardc_options_new();
    set(o, mesh, defs);
    api_options_set_unshared(o, unshared);
    shardc_options_set_unroll(o, unroll);
    char *err = NULL;
    if (shardc_compile_string(o, name, text, strlen(text), &c.prog, &err) != SHARDC_OK ||
        shardc_program_emit(c.prog, "stage-ir", &c.stages, NULL, &err) != SHARDC_OK ||
        api_program_plan(c.prog, &c.plan, &c.len, &err) != SHARDC_OK) {
        CHECK(!"compiles");
        fprintf(stderr, "  %s on %s: %s\n", name, mesh, err ? err : "?");
    }
    shardc_free(err);
    shardc_options_free(o);
    return c;
}

static void done(compiled *c)
{
    shardc_program_free(c->prog);
    shardc_free(c->stages);
    free(c->plan);
}

/* The two compiles agree; returns the stages held once. */
static int compare(const char *what, const char *text, const char *mesh,
                   const char *const *defs, bool unroll)
{
    compiled a = compile(what, text, mesh, defs, false, unroll);
    compiled b = compile(what, text, mesh, defs, true, unroll);
    int shared = -1;
    if (a.prog && b.prog && a.plan && b.plan) {
        const pass_pipeline *pa = &a.prog->res.pipe, *pb = &b.prog->res.pipe;
        CHECK_INT(pb->nshared, 0);
        CHECK(a.stages && b.stages && !strcmp(a.stages, b.stages));
        CHECK(a.len == b.len && !memcmp(a.plan, b.plan, a.len));
        CHECK_INT(pa->nstages, pb->nstages);
        int differ = 0;
        for (int s = 0; s < pa->nstages && s < pb->nstages; s++) {
            const ir_module *x = pa->stage[s], *y = pb->stage[s];
            CHECK(!x->shared);
            CHECK_INT(x->ops.n, y->ops.n);
            for (int i = 0; i < x->ops.n && i < y->ops.n; i++)
                differ += IR_OP(x, i)->task != IR_OP(y, i)->task ||
                          IR_OP(x, i)->mb != IR_OP(y, i)->mb;
        }
        CHECK_INT(differ, 0);
        if (a.len != b.len || memcmp(a.plan, b.plan, a.len) || differ ||
            strcmp(a.stages, b.stages))
            fprintf(stderr, "  %s on %s: the two compiles differ\n", what, mesh);
        shared = pa->nshared;
    }
    done(&a);
    done(&b);
    return shared;
}

static char *example(const char *file)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    FILE *f = fopen(path, "rb");
    char *text = calloc(1, 1 << 20);
    size_t n = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 0);
    return text;
}

/* pipeline.sh's small GPT with L layers, on the schedule and microbatch
 * count given (its pipeline line replaced). */
static char *pipeline_text(const char *line)
{
    char *text = example("pipeline.sh");
    char *at = text ? strstr(text, "pipeline microbatches 4 schedule 1f1b") : NULL;
    CHECK(at != NULL);
    if (!at)
        return text;
    char *rest = strdup(strchr(at, '\n'));
    snprintf(at, (size_t)(1 << 20) - (size_t)(at - text), "%s%s", line, rest);
    free(rest);
    return text;
}

static void test_examples(void)
{
    static const struct {
        const char *line, *mesh, *L, *B;
        int shared;     /* the stages held once */
    } cases[] = {
        {"pipeline microbatches 5 schedule 1f1b", "1x2x1", "4", "40", 2},
        {"pipeline microbatches 6 schedule gpipe", "1x2x2", "4", "48", 2},
        {"pipeline microbatches 12 schedule 1f1b", "2x4x1", "8", "96", 4},
        {"pipeline microbatches 16 schedule 1f1b", "1x8x1", "8", "64", 8},
        {"pipeline microbatches 8 schedule interleaved(2)", "1x4x1", "8", "64", 4},
        {"pipeline microbatches 16 schedule interleaved(2)", "1x2x2", "8", "64", 2},
        {"pipeline microbatches 4 schedule 1f1b", "1x2x1", "4", "32", 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = pipeline_text(cases[c].line);
        const char *defs[] = {"L", cases[c].L, "B", cases[c].B, NULL};
        int shared = compare(cases[c].line, text, cases[c].mesh, defs, false);
        CHECK_INT(shared, cases[c].shared);
        if (shared != cases[c].shared)
            fprintf(stderr, "  %s on %s\n", cases[c].line, cases[c].mesh);
        free(text);
    }
    /* --unroll: no stamps, nothing held once, the same plan either way */
    char *text = pipeline_text("pipeline microbatches 6 schedule 1f1b");
    const char *defs[] = {"L", "4", "B", "48", NULL};
    CHECK_INT(compare("--unroll", text, "1x2x1", defs, true), 0);
    free(text);
}

/* Dropout in every layer (each microbatch's rows at its own offset), and
 * outputs of every microbatch's rows, which the last stage gathers into
 * place after its tasks (its middle microbatches' inserts are held once
 * too). An output made from the inputs and params alone (u), outside
 * every task, from a value a task made (v, first needed by the first
 * layer's forward): the first stage makes it once for every microbatch,
 * reading each one's v, and stays unrolled. */
static const char *const dropout_model =
    "mesh dp, pp\n"
    "let B = 24, D = 16\n"
    "input x : f32[B, D] shard(dp, _)\n"
    "param w0 : f32[D, D] = normal(0.1)\n"
    "%s"
    "h = h0 @ w0\n"
    "repeat 4 as layers over pp {\n"
    "    param w : f32[D, D] = normal(0.1)\n"
    "    h = dropout(gelu(h @ w), 0.25) + h\n"
    "}\n"
    "loss = mean(h * h)\n"
    "%s"
    "pipeline microbatches 6 schedule 1f1b\n"
    "train loss with sgd(lr = 0.1)\n";

static void test_corners(void)
{
    char text[2048];
    const char *plain = "h0 = x\n";
    snprintf(text, sizeof text, dropout_model, plain, "output loss\n");
    CHECK_INT(compare("dropout", text, "1x2", NULL, false), 2);
    CHECK_INT(compare("dropout over dp", text, "2x2", NULL, false), 2);
    snprintf(text, sizeof text, dropout_model, plain, "output loss\noutput h\n");
    CHECK_INT(compare("an output of every microbatch", text, "1x2", NULL, false), 2);
    CHECK_INT(compare("an output of every microbatch over dp", text, "2x2", NULL, false), 2);
    snprintf(text, sizeof text, dropout_model,
             "param g : f32[D] = zeros\nv = x + g\nh0 = v * 0.5\n",
             "u = where(v > -0.3, v, 0.5 * v)\noutput loss\noutput u\n");
    CHECK_INT(compare("an output made once from a task's value", text, "1x2", NULL, false), 1);
}

/* ---- the proof, on stage programs made by hand ----
 *
 * Six microbatches of one task, each: a = extract(x) {offset = 32 j} (its
 * part of the input), b = a * w (w made once), and the running sum s_j =
 * s_(j-1) + b (s_0 = b); the output s_5. Microbatches 3 and 4 are held
 * once and put back as they were; a program where microbatch 3 or 4
 * differs from microbatch 2 in any way the copy would not make is left
 * as it was. */

enum { HM = 6 };
static jmp_buf oom;

typedef enum {
    SAME,
    OFFSET,     /* microbatch 4's offset off the step */
    VALUE,      /* microbatch 3's multiplier another constant */
    OPERAND,    /* microbatch 4's sum reads microbatch 2's, not 3's */
    READER,     /* an op made once reads microbatch 3's b */
    TYPE,       /* microbatch 4's b an f16 */
} flaw;

static ir_op *stamped(ir_op *op, int task, int mb)
{
    op->task = task;
    op->mb = mb;
    return op;
}

static ir_module *hand_made(flaw f)
{
    ir_module *m = ir_module_new(&oom);
    m->mesh = (ir_mesh){.naxes = 1, .name = {"pp"}, .size = {2}};
    m->pipe = (ir_pipeline){.axis = 0, .repeats = 2, .microbatches = HM, .chunks = 1};
    m->partitioned = true;
    m->stage = 0;
    ir_type rows = {IR_F32, 2, {1, HM * 32}}, part = {IR_F32, 2, {8, 4}};
    ir_type half = {IR_F16, 2, {8, 4}};
    ir_value *x = ir_append(m, IR_INPUT, NULL, 0, &(ir_attrs){.name = "x"}, &rows)->res[0];
    ir_type one = {IR_F32, 0, {0}};
    ir_value *w = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 2}, &one)->res[0];
    ir_value *w3 = ir_append(m, IR_CONST, NULL, 0, &(ir_attrs){.value = 3}, &one)->res[0];
    ir_value *s[HM], *b3 = NULL;
    for (int j = 0; j < HM; j++) {
        int64_t off = f == OFFSET && j == 4 ? 130 : 32 * j;
        ir_attrs ea = {.offset = off, .nlist = 2, .list = {8, 4}};
        ir_value *a = stamped(ir_append(m, IR_EXTRACT, &x, 1, &ea, &part), 1, j)->res[0];
        ir_value *ab[2] = {a, f == VALUE && j == 3 ? w3 : w};
        ir_value *b = stamped(ir_append(m, IR_MUL, ab, 2, NULL,
                                           f == TYPE && j == 4 ? &half : &part), 1, j)->res[0];
        b3 = j == 3 ? b : b3;
        if (j == 0) {
            s[j] = b;
            continue;
        }
        ir_value *sb[2] = {f == OPERAND && j == 4 ? s[2] : s[j - 1], b};
        s[j] = stamped(ir_append(m, IR_ADD, sb, 2, NULL, &part), 1, j)->res[0];
    }
    if (f == READER)
        ir_append(m, IR_NEG, &b3, 1, NULL, &part);
    ir_add_output(m, "s", s[HM - 1], (su_loc){0, 0});
    return m;
}

static char *printed(const ir_module *m)
{
    su_buf b;
    su_buf_init(&b, &oom);
    ir_print(m, &b);
    return b.s;
}

static void test_proof(void)
{
    static const char *const names[] = {"same", "offset", "value", "operand", "reader", "type"};
    for (flaw f = SAME; f <= TYPE; f++) {
        ir_module *m = hand_made(f);
        char *before = printed(m);
        int n = m->ops.n;
        bool shared = pass_share_instances(m);
        CHECK_INT(shared, f == SAME);
        if (shared != (f == SAME))
            fprintf(stderr, "  %s: shared %d\n", names[f], shared);
        if (shared) { /* microbatches 3 and 4: one run of 6 ops, then put back */
            CHECK_INT(m->ops.n, n - 6 + 1);
            CHECK(m->shared && m->shared->nruns == 1);
            su_buf err;
            su_buf_init(&err, &oom);
            CHECK(ir_verify(m, &err));
            if (err.len)
                fprintf(stderr, "  %s: %s\n", names[f], err.s);
            err.len = 0;
            CHECK(pass_expand_instances(m, &err));
            su_buf_free(&err);
            CHECK(!m->shared);
        } else {
            CHECK(!m->shared);
        }
        char *after = printed(m);
        CHECK_STR(after, before);
        CHECK_INT(m->ops.n, n);
        for (int i = 0; i < m->ops.n; i++)
            if (IR_OP(m, i)->code == IR_EXTRACT)
                CHECK_INT(IR_OP(m, i)->a->offset, f == OFFSET && IR_OP(m, i)->mb == 4
                                                      ? 130 : 32 * IR_OP(m, i)->mb);
        free(before);
        free(after);
        ir_module_free(m);
    }
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_instances: out of memory\n");
        return 1;
    }
    test_proof();
    test_examples();
    test_corners();
    return CHECK_DONE();
}
