/* test_memplan.c: memory planning (passes/memplan.c). Small partitioned
 * modules in textual IR check the exact offsets and arena of a chain that
 * reuses memory, the buffers reshape and constrain share, when a param's or
 * state's new value takes its memory (and when it must not), the per-rank
 * breakdown, and that the checker rejects buffers sharing bytes while both
 * live. Every plan made here must pass the checker. */
#include "../../ir/ir.h"
#include "../../passes/passes.h"
#include "check.h"

#include <stdlib.h>

static jmp_buf oom;

#define B PASS_MEM_ALIGN

typedef struct run {
    ir_module *m;
    pass_memplan mp;
} run;

/* Parses text (aborting on a malformed test), verifies, plans, checks. */
static run plan(const char *text)
{
    su_src src = {"test.ir", text, strlen(text)};
    su_diag d;
    su_diag_init(&d, &oom);
    run r = {.m = ir_parse(&src, &d, &oom)};
    if (!r.m) {
        fprintf(stderr, "test_memplan: bad test text:\n%s\n", d.msg.s);
        abort();
    }
    su_diag_free(&d);
    su_buf err;
    su_buf_init(&err, &oom);
    bool ok = ir_verify(r.m, &err);
    if (!ok) {
        fprintf(stderr, "test_memplan: the test's IR does not verify: %s\n", err.s);
        abort();
    }
    CHECK(pass_plan_memory(r.m, &r.mp, &err));
    ok = pass_memplan_check(r.m, &r.mp, &err);
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  checker: %s\n", err.s);
    su_buf_free(&err);
    return r;
}

static void done(run *r)
{
    pass_memplan_free(&r->mp);
    ir_module_free(r->m);
}

static const ir_value *find(const run *r, const char *name)
{
    for (int i = 0; i < r->m->ops.n; i++) {
        const ir_value *v = IR_OP(r->m, i)->res[0];
        if (v->name && strcmp(v->name, name) == 0)
            return v;
    }
    fprintf(stderr, "test_memplan: no value %%%s\n", name);
    abort();
}

static int buf(const run *r, const char *name)
{
    return r->mp.buf[find(r, name)->id];
}

static int64_t off(const run *r, const char *name)
{
    return r->mp.offset[buf(r, name)];
}

/* A chain of four 256-byte values: each dies when the next is made, so two
 * blocks serve all four, alternating. */
static void test_chain(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[64] shard(_)\n"
                 "%a = relu %x : f32[64] auto(_)\n"
                 "%b = neg %a : f32[64] auto(_)\n"
                 "%c = exp %b : f32[64] auto(_)\n"
                 "output \"c\" = %c\n");
    CHECK_INT(r.mp.nbuf, 4);
    CHECK_INT(r.mp.arena_bytes, 2 * B);
    CHECK_INT(off(&r, "x"), 0);
    CHECK_INT(off(&r, "a"), B);
    CHECK_INT(off(&r, "b"), 0);
    CHECK_INT(off(&r, "c"), B);
    /* lifetimes: the output is read after the run */
    CHECK_INT(r.mp.start[buf(&r, "a")], 1);
    CHECK_INT(r.mp.end[buf(&r, "a")], 2);
    CHECK_INT(r.mp.end[buf(&r, "c")], 4);
    CHECK_INT(r.mp.activations, 2 * 256);
    CHECK_INT(r.mp.params + r.mp.gradients + r.mp.optimizer_state, 0);
    CHECK_INT(r.mp.top_raised_at, 1); /* %a's block is the last at the top */
    done(&r);

    /* a value read twice lives to its last reader; freed neighbours
     * coalesce; the best-fitting free block is taken */
    r = plan("mesh dp = 1\npartitioned\n"
             "%x = input {name = \"x\"} : f32[128] shard(_)\n"
             "%s = sum %x {axis = 0, keepdims = true} : f32[1] auto(_)\n"
             "%a = mul %x, %s : f32[128] auto(_)\n"
             "%t = neg %s : f32[1] auto(_)\n"
             "%b = relu %a : f32[128] auto(_)\n"
             "%c = add %b, %t : f32[128] auto(_)\n"
             "output \"c\" = %c\n");
    /* x [0, 512) dies at %a, which takes [768, 1280) above s [512, 768);
     * t takes the start of x's block; s dies at t and coalesces with the
     * rest of it into [256, 768), exactly b's size; a dies at b, and c
     * takes its place. */
    CHECK_INT(off(&r, "x"), 0);
    CHECK_INT(off(&r, "s"), 2 * B);
    CHECK_INT(off(&r, "a"), 3 * B);
    CHECK_INT(off(&r, "t"), 0);
    CHECK_INT(off(&r, "b"), B);
    CHECK_INT(off(&r, "c"), 3 * B);
    CHECK_INT(r.mp.arena_bytes, 5 * B);
    CHECK_INT(r.mp.activations, 512 + 4 + 512); /* at %a: x, s and a */
    CHECK_INT(r.mp.top_raised_at, 2);
    done(&r);
}

/* reshape and constrain are the same bytes: one buffer, no copy. */
static void test_alias(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[4, 16] shard(_, _)\n"
                 "%y = relu %x : f32[4, 16] auto(_, _)\n"
                 "%r = reshape %y {shape = [64]} : f32[64] auto(_)\n"
                 "%c = constrain %r : f32[64] shard(_)\n"
                 "%z = exp %c : f32[64] auto(_)\n"
                 "output \"z\" = %z\n");
    CHECK_INT(buf(&r, "r"), buf(&r, "y"));
    CHECK_INT(buf(&r, "c"), buf(&r, "y"));
    CHECK(buf(&r, "z") != buf(&r, "y"));
    CHECK_INT(r.mp.nbuf, 3);
    /* y's buffer lives until %z reads it through %c */
    CHECK_INT(r.mp.end[buf(&r, "y")], 4);
    done(&r);
}

#define TRAIN_HEAD                                                             \
    "mesh dp = 1\npartitioned\n"                                               \
    "%x = input {name = \"x\"} : f32[64] shard(_)\n"                           \
    "%w = param {name = \"w\", init = zeros} : f32[64] shard(_)\n"             \
    "%p = mul %x, %w : f32[64] auto(_)\n"                                      \
    "%l = mse %p, %x : f32[] auto()\n"                                         \
    "%g = mul %x, %p : f32[64] auto(_) phase backward\n"                       \
    "%m = state {name = \"w.buf\", init = zeros} : f32[64] auto(_) phase optimizer\n" \
    "%nm = momentum %m, %g, %w {momentum = 0.9, wd = 0.0} : f32[64] auto(_) phase optimizer\n" \
    "%nw = sgd %w, %nm {lr = 0.1, wd = 0.0} : f32[64] auto(_) phase optimizer\n"
#define TRAIN_TAIL "train %l with sgd(lr = 0.1, momentum = 0.9, wd = 0.0)\n"

/* A param's and a state's new values take their memory when the old ones
 * are dead: the model states are held once. */
static void test_in_place(void)
{
    run r = plan(TRAIN_HEAD "update %m = %nm\nupdate %w = %nw grad %g\n" TRAIN_TAIL);
    CHECK_INT(buf(&r, "nw"), buf(&r, "w"));
    CHECK_INT(buf(&r, "nm"), buf(&r, "m"));
    CHECK_INT(r.mp.start[buf(&r, "w")], -1);
    CHECK_INT(r.mp.end[buf(&r, "w")], r.m->ops.n);
    CHECK_INT(r.mp.params, 256);
    CHECK_INT(r.mp.optimizer_state, 256);
    CHECK_INT(r.mp.gradients, 256);
    done(&r);

    /* the old param is an output, read after the run: its new value needs
     * memory of its own, kept to the end */
    r = plan(TRAIN_HEAD "output \"w\" = %w\nupdate %m = %nm\nupdate %w = %nw grad %g\n" TRAIN_TAIL);
    CHECK(buf(&r, "nw") != buf(&r, "w"));
    CHECK_INT(r.mp.end[buf(&r, "nw")], r.m->ops.n);
    CHECK_INT(buf(&r, "nm"), buf(&r, "m"));
    done(&r);

    /* the old param is read after its new value is made */
    r = plan(TRAIN_HEAD "%q = add %w, %nw : f32[64] auto(_) phase optimizer\n"
             "output \"q\" = %q\nupdate %m = %nm\nupdate %w = %nw grad %g\n" TRAIN_TAIL);
    CHECK(buf(&r, "nw") != buf(&r, "w"));
    done(&r);

    /* the last reader is the new value's op, but not elementwise over it:
     * a matmul may not write over its operand */
    r = plan("mesh dp = 1\npartitioned\n"
             "%x = input {name = \"x\"} : f32[4, 4] shard(_, _)\n"
             "%w = param {name = \"w\", init = zeros} : f32[4, 4] shard(_, _)\n"
             "%l = mse %x, %x : f32[] auto()\n"
             "%nw = matmul %w, %x : f32[4, 4] auto(_, _) phase optimizer\n"
             "update %w = %nw\n" TRAIN_TAIL);
    CHECK(buf(&r, "nw") != buf(&r, "w"));
    done(&r);
}

/* The checker finds two buffers sharing bytes while both live. */
static void test_check(void)
{
    run r = plan("mesh dp = 1\npartitioned\n"
                 "%x = input {name = \"x\"} : f32[64] shard(_)\n"
                 "%a = relu %x : f32[64] auto(_)\n"
                 "%b = neg %a : f32[64] auto(_)\n"
                 "output \"b\" = %b\n");
    su_buf err;
    su_buf_init(&err, &oom);
    r.mp.offset[buf(&r, "b")] = off(&r, "a");
    CHECK(!pass_memplan_check(r.m, &r.mp, &err));
    CHECK_STR(err.s, "buffers 1 (ops 1..2) and 2 (ops 2..3) share bytes at 256 while both are "
                     "live");
    su_buf_free(&err);
    su_buf_init(&err, &oom);
    r.mp.offset[buf(&r, "b")] = 4 * B;
    CHECK(!pass_memplan_check(r.m, &r.mp, &err));
    CHECK_STR(err.s, "buffer 2 at 1024 (256 bytes) is misaligned or outside the arena of 512 "
                     "bytes");
    su_buf_free(&err);
    su_buf_init(&err, &oom);
    r.mp.offset[buf(&r, "b")] = -B; /* aligned, below the arena */
    CHECK(!pass_memplan_check(r.m, &r.mp, &err));
    CHECK_STR(err.s, "buffer 2 at -256 (256 bytes) is misaligned or outside the arena of 512 "
                     "bytes");
    su_buf_free(&err);
    done(&r);
}

/* Whether two of mp's own buffers share bytes while both live, pair by
 * pair: what pass_memplan_check's sweep must find. */
static bool brute_fault(const pass_memplan *mp)
{
    for (int a = 0; a < mp->nbuf; a++)
        for (int b = a + 1; b < mp->nbuf; b++) {
            if (mp->view_of[a] >= 0 || mp->view_of[b] >= 0)
                continue;
            int64_t ea = mp->offset[a] + (mp->bytes[a] ? mp->bytes[a] : 1);
            int64_t eb = mp->offset[b] + (mp->bytes[b] ? mp->bytes[b] : 1);
            if (mp->offset[a] < eb && mp->offset[b] < ea && mp->start[a] <= mp->end[b] &&
                mp->start[b] <= mp->end[a])
                return true;
        }
    return false;
}

/* The checker against brute_fault on 2000 random plans of 1 to 16
 * buffers (offsets in 16 slots of 256 bytes, sizes of 0 to 2 slots,
 * lifetimes of 1 to 4 ops starting within 24, some a view of another):
 * the same verdict, and
 * a pair it names does share bytes while both live. */
static void test_check_random(void)
{
    enum { MAXB = 16 };
    int64_t offset[MAXB], bytes[MAXB], start[MAXB], end[MAXB];
    int32_t view_of[MAXB];
    pass_memplan mp = {.offset = offset, .bytes = bytes, .start = start, .end = end,
                       .view_of = view_of, .arena_bytes = 19 * B};
    uint64_t x = 12345;
    int faults = 0;
    for (int t = 0; t < 2000; t++) {
        mp.nbuf = 1 + (int)(x % MAXB);
        for (int b = 0; b < mp.nbuf; b++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            offset[b] = (int64_t)(x >> 33) % 16 * B;
            bytes[b] = (int64_t)(x >> 40) % 3 * B;
            start[b] = (int64_t)(x >> 45) % 24;
            end[b] = start[b] + (int64_t)(x >> 50) % 4;
            view_of[b] = -1;
            if (b > 0 && (x >> 55) % 8 == 0) { /* a view: its bucket's bytes and life */
                int w = (int)((x >> 20) % (uint64_t)b);
                if (view_of[w] < 0) {
                    view_of[b] = w;
                    offset[b] = offset[w];
                    bytes[b] = bytes[w];
                    start[b] = start[w];
                    end[b] = end[w];
                }
            }
        }
        su_buf err;
        su_buf_init(&err, &oom);
        bool ok = pass_memplan_check(NULL, &mp, &err);
        CHECK(ok == !brute_fault(&mp));
        int a = -1, b = -1;
        long long sa, ea, sb, eb, at;
        if (!ok && sscanf(err.s, "buffers %d (ops %lld..%lld) and %d (ops %lld..%lld) share bytes at "
                          "%lld", &a, &sa, &ea, &b, &sb, &eb, &at) == 7) {
            faults++;
            CHECK(a >= 0 && b >= 0 && a < mp.nbuf && b < mp.nbuf && a != b);
            CHECK(start[a] <= end[b] && start[b] <= end[a]);
            CHECK(offset[a] < offset[b] + (bytes[b] ? bytes[b] : 1) &&
                  offset[b] < offset[a] + (bytes[a] ? bytes[a] : 1));
        } else if (!ok) {
            CHECK(!"a message naming two buffers");
        }
        su_buf_free(&err);
    }
    CHECK(faults > 200 && faults < 1900); /* both verdicts were tried */
}

/* The sweep's live neighbours far apart in (offset, buffer) order: N
 * buffers, one at each offset, each live at an op of its own, but for a
 * wide one at offset 0 and the last one, live at once at the end. Wide
 * enough to reach the last one's bytes, the two share them, which the
 * sweep finds across the N - 2 ranks between (dead by then), whichever
 * starts first; one byte narrower, they do not. As brute_fault says. N:
 * 300 and 6000 (the live set's words of 64 ranks, and its words of 64
 * words, crossed). */
static void test_check_far(int N)
{
    int64_t *offset = malloc((size_t)N * sizeof *offset), *bytes = malloc((size_t)N * sizeof *bytes);
    int64_t *start = malloc((size_t)N * sizeof *start), *end = malloc((size_t)N * sizeof *end);
    int32_t *view_of = malloc((size_t)N * sizeof *view_of);
    pass_memplan mp = {.nbuf = N, .offset = offset, .bytes = bytes, .start = start,
                       .end = end, .view_of = view_of, .arena_bytes = (int64_t)(N + 1) * B};
    for (int wide_first = 0; wide_first < 2; wide_first++)
        for (int reach = 0; reach < 2; reach++) {
            for (int b = 0; b < N; b++) {
                offset[b] = (int64_t)b * B;
                bytes[b] = B;
                start[b] = end[b] = b;
                view_of[b] = -1;
            }
            bytes[0] = (int64_t)(N - 1) * B + (reach ? B : 0);
            start[0] = 2 * N + !wide_first;
            end[0] = start[0] + 1;
            start[N - 1] = 2 * N + wide_first;
            end[N - 1] = start[N - 1] + 1;
            su_buf err;
            su_buf_init(&err, &oom);
            bool ok = pass_memplan_check(NULL, &mp, &err);
            CHECK(ok == !brute_fault(&mp));
            CHECK(ok == !reach);
            if (!ok)
                CHECK(strstr(err.s, "buffers 0 ") || strstr(err.s, "and 0 "));
            su_buf_free(&err);
        }
    free(offset);
    free(bytes);
    free(start);
    free(end);
    free(view_of);
}

/* The checker against brute_fault on 40 plans of 300 to 800 buffers,
 * where its live buffers are many (a deep pipeline's stage holds tens of
 * thousands): each buffer placed first fit among those live over its
 * lifetime (so the plan is sound), then, in every other plan, one buffer
 * moved onto the bytes of a later one, live when it starts (in the
 * sweep's live array, after it: the neighbour above it); the same verdict
 * every time. */
static void test_check_many(void)
{
    enum { MAXB = 800, SLOTS = 96 };
    static int64_t offset[MAXB], bytes[MAXB], start[MAXB], end[MAXB];
    static int32_t view_of[MAXB];
    pass_memplan mp = {.offset = offset, .bytes = bytes, .start = start, .end = end,
                       .view_of = view_of, .arena_bytes = (SLOTS + 4) * B};
    uint64_t x = 777;
    int faults = 0;
    for (int t = 0; t < 40; t++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        mp.nbuf = 300 + (int)((x >> 33) % 500);
        int placed = 0;
        for (int b = 0; b < mp.nbuf; b++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            bytes[b] = (int64_t)(1 + (x >> 40) % 4) * B;
            start[b] = (int64_t)(x >> 45) % 400;
            end[b] = start[b] + (int64_t)(x >> 52) % 60;
            view_of[b] = -1;
            offset[b] = -1;
            for (int64_t o = 0; o + bytes[b] <= SLOTS * B && offset[b] < 0; o += B) {
                bool clash = false;
                for (int a = 0; a < b && !clash; a++)
                    clash = offset[a] >= 0 && offset[a] < o + bytes[b] &&
                            o < offset[a] + bytes[a] && start[a] <= end[b] &&
                            start[b] <= end[a];
                if (!clash)
                    offset[b] = o;
            }
            if (offset[b] < 0) { /* no room: a buffer of no life at the top */
                offset[b] = SLOTS * B;
                bytes[b] = B;
                start[b] = 1;
                end[b] = 0;
            }
            placed++;
        }
        if (t % 2) { /* a buffer onto one after it that is live when it starts */
            int b = (int)((x >> 20) % (uint64_t)(mp.nbuf / 2));
            for (int a = mp.nbuf - 1; a > b; a--)
                if (start[a] < start[b] && start[b] <= end[a] && end[b] >= start[b]) {
                    offset[b] = offset[a];
                    break;
                }
        }
        su_buf err;
        su_buf_init(&err, &oom);
        bool ok = pass_memplan_check(NULL, &mp, &err);
        CHECK(placed == mp.nbuf && ok == !brute_fault(&mp));
        faults += !ok;
        su_buf_free(&err);
    }
    CHECK(faults >= 15 && faults <= 20); /* the moved ones, which all clash */
}

/* A pipeline stage's program (passes/pipesplit.c): twelve microbatches'
 * forward (task 1) and backward (task 2) in 1F1B's order with two in
 * flight, F0 F1 B0 F2 B1 F3 ... F11 B10 B11. The forward reads a value
 * as a receive would bring it (task -1), makes two temporaries and a value
 * its backward reads; the backward adds the microbatch's part to a sum. Placed alike, each instance's values lie
 * where an earlier microbatch's did: the temporaries where the previous
 * one's, the kept value where the one two back (the other is still in
 * flight), once the first microbatches have set the places: fewer places
 * than best fit alone, whose last microbatches stray into other free
 * blocks, so fewer slots when the plan writer rolls the instances into a
 * body. The arena is no larger than best fit alone makes it (the same
 * program unstamped). */
static void test_instances_alike(void)
{
    enum { M = 12 };
    char order[2 * M + 1] = "FF";
    for (int j = 0; j < M; j++)
        strcat(order, j + 2 < M ? "BF" : "B");
    su_buf t;
    su_buf_init(&t, &oom);
    su_buf_puts(&t, "mesh dp = 1\npartitioned\n"
                    "%x = input {name = \"x\"} : f32[64] shard(_)\n"
                    "%y = input {name = \"y\"} : f32[192] shard(_)\n");
    int f = 0, b = 0;
    for (const char *o = order; *o; o++) {
        if (*o == 'F') {
            su_buf_printf(&t, "%%q%d = neg %%x : f32[64] auto(_)\n"
                              "%%a%d = exp %%q%d : f32[64] auto(_)\n"
                              "%%b%d = relu %%y : f32[192] auto(_)\n"
                              "%%r%d = sum %%b%d {axis = 0, keepdims = true} : f32[1] auto(_)\n"
                              "%%c%d = mul %%a%d, %%r%d : f32[64] auto(_)\n", f, f, f, f, f, f, f,
                          f, f);
            f++;
        } else {
            su_buf_printf(&t, "%%g%d = mul %%c%d, %%x : f32[64] auto(_)\n", b, b);
            if (b)
                su_buf_printf(&t, "%%s%d = add %%s%d, %%g%d : f32[64] auto(_)\n", b, b - 1, b);
            else
                su_buf_printf(&t, "%%s0 = neg %%g0 : f32[64] auto(_)\n");
            b++;
        }
    }
    su_buf_printf(&t, "output \"s\" = %%s%d\n", M - 1);
    run flat = plan(t.s); /* no stamps: best fit alone */
    su_src src = {"test.ir", t.s, t.len};
    su_diag d;
    su_diag_init(&d, &oom);
    run r = {.m = ir_parse(&src, &d, &oom)};
    CHECK(r.m != NULL);
    su_diag_free(&d);
    for (int i = 0; r.m && i < r.m->ops.n; i++) {
        ir_op *op = IR_OP(r.m, i);
        const char *n = op->res[0]->name;
        if (n && strchr("qabrcgs", n[0]) && n[1] >= '0' && n[1] <= '9') {
            op->task = n[0] == 'q' ? -1 : strchr("abrc", n[0]) ? 1 : 2;
            op->mb = atoi(n + 1);
        }
    }
    su_buf err;
    su_buf_init(&err, &oom);
    CHECK(r.m && pass_plan_memory(r.m, &r.mp, &err));
    CHECK(r.m && pass_memplan_check(r.m, &r.mp, &err));
    CHECK(r.mp.arena_bytes <= flat.mp.arena_bytes);
    /* after four microbatches, every value of microbatch j lies where
     * microbatch j - 2's did (best fit alone strays at the end: the last
     * microbatches find other blocks free) */
    char name[16], back[16];
    int places = 0, flat_places = 0;
    for (const char *v = "qabrcgs"; *v; v++) {
        for (int j = 0; j < M; j++) {
            snprintf(name, sizeof name, "%c%d", *v, j);
            snprintf(back, sizeof back, "%c%d", *v, j - 2);
            if (j >= 6)
                CHECK_INT(off(&r, name), off(&r, back));
            bool known = false, flat_known = false;
            for (int k = 0; k < j; k++) {
                snprintf(back, sizeof back, "%c%d", *v, k);
                known |= off(&r, back) == off(&r, name);
                flat_known |= off(&flat, back) == off(&flat, name);
            }
            places += !known;
            flat_places += !flat_known;
        }
    }
    /* the slots the plan writer makes: fewer than best fit's */
    CHECK(places < flat_places);
    su_buf_free(&err);
    su_buf_free(&t);
    done(&flat);
    done(&r);
}

int main(void)
{
    if (setjmp(oom)) {
        fprintf(stderr, "test_memplan: out of memory\n");
        return 1;
    }
    test_chain();
    test_alias();
    test_in_place();
    test_check();
    test_check_random();
    test_check_far(300);
    test_check_far(6000);
    test_check_many();
    test_instances_alike();
    return CHECK_DONE();
}
