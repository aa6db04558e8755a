/* test_comm_local.c: the local communicator, one thread per rank: every
 * collective over every kind of group on meshes 1, 4, 2x2, 2x3 and 2x2x2
 * (comm_checks.h), 20 times over to shake out races; barriers that really
 * wait; abort and timeout waking the waiters; mismatched calls; bad worlds;
 * point to point (comm_checks.h), its timeouts, size mismatches and aborts;
 * and the communicators' f16 and bf16 conversions. */
#include "check.h"
#include "support/support.h"
#include "comm_checks.h"
#include "runtime/comm/comm_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define REPEATS 20

static const char *const axis_names[] = {"dp", "tp", "pp"};

static rt_mesh_desc mesh_of(int naxes, const int64_t *size)
{
    rt_mesh_desc m = {0};
    m.naxes = naxes;
    for (int a = 0; a < naxes; a++) {
        m.size[a] = size[a];
        m.name[a] = axis_names[a];
    }
    return m;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* One rank's thread: what it runs and what it found. */
typedef struct rank_ctx {
    rt_local_world *w;
    const rt_mesh_desc *mesh;
    int64_t rank;
    atomic_int *arrivals;   /* shared by the ranks of a world */
    bool large;             /* run cc_large too */
    void (*body)(struct rank_ctx *);
    cc_report rep;
    int rc;                 /* abort and timeout tests: the failing call's result */
    double ms;              /* and how long it took */
    char err[512];
} rank_ctx;

static void *rank_main(void *arg)
{
    rank_ctx *x = arg;
    x->body(x);
    return NULL;
}

/* Runs body on every rank of a world, one thread each, and adds the ranks'
 * checks to check.h's counters. */
static void run_ranks(rt_local_world *w, const rt_mesh_desc *m, void (*body)(rank_ctx *),
                      rank_ctx *x, bool large)
{
    int64_t n = cc_ranks(m);
    pthread_t th[CC_MAX_RANKS];
    atomic_int arrivals = 0;
    for (int64_t r = 0; r < n; r++) {
        x[r] = (rank_ctx){.w = w, .mesh = m, .rank = r, .arrivals = &arrivals, .body = body,
                            .large = large};
        x[r].rep.rank = r;
        CHECK(pthread_create(&th[r], NULL, rank_main, &x[r]) == 0);
    }
    for (int64_t r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        check_count += x[r].rep.checks;
        check_failures += x[r].rep.fails;
    }
}

/* A barrier over every axis lets nobody through before everyone arrived. */
static void barrier_waits(rt_comm *c, rank_ctx *x)
{
    uint8_t all[RT_MAX_AXES] = {0, 1, 2};
    rt_group *g = NULL;
    CC_CHECK(&x->rep, rt_comm_group(c, all, x->mesh->naxes, &g) == 0, "world group: %s",
             rt_comm_error(c));
    int n = (int)cc_ranks(x->mesh);
    for (int it = 1; it <= 10 && g; it++) {
        atomic_fetch_add(x->arrivals, 1);
        CC_CHECK(&x->rep, rt_barrier(g) == 0, "barrier: %s", rt_comm_error(c));
        int seen = atomic_load(x->arrivals);
        CC_CHECK(&x->rep, seen >= it * n, "barrier %d let rank %lld through after %d of %d "
                 "arrivals", it, (long long)x->rank, seen, it * n);
    }
}

static void collectives_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    cc_opts opts = {.member_order = true, .large = x->large};
    cc_run(c, x->mesh, &x->rep, &opts);
    barrier_waits(c, x);
    rt_comm_free(c);
}

static void test_collectives(void)
{
    static const int64_t sizes[][3] = {{1}, {4}, {2, 2}, {2, 3}, {2, 2, 2}};
    static const int naxes[] = {1, 1, 2, 2, 3};
    for (int rep = 0; rep < REPEATS; rep++) {
        for (size_t i = 0; i < sizeof naxes / sizeof *naxes; i++) {
            rt_mesh_desc m = mesh_of(naxes[i], sizes[i]);
            su_status err = {SU_OK, ""};
            rt_local_world *w = rt_local_world_new(&m, 20000, &err);
            CHECK(w != NULL);
            if (!w) {
                fprintf(stderr, "  %s\n", err.msg);
                continue;
            }
            rank_ctx x[CC_MAX_RANKS];
            int before = check_failures;
            /* the large sizes once, on the meshes of 4 ranks (like the MPI test) */
            run_ranks(w, &m, collectives_body, x, rep == 0 && cc_ranks(&m) == 4);
            rt_local_world_free(w);
            if (check_failures > before)
                fprintf(stderr, "  (mesh %zu, repetition %d)\n", i, rep);
        }
    }
}

/* The mesh of no axes: one rank, every op a copy or nothing. */
static void test_single(void)
{
    rt_mesh_desc m = {0};
    su_status err;
    rt_local_world *w = rt_local_world_new(&m, 0, &err);
    CHECK(w != NULL);
    rank_ctx x[1];
    run_ranks(w, &m, collectives_body, x, true);
    rt_local_world_free(w);
}

/* ---- failures ---- */

static void abort_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    uint8_t all[2] = {0, 1}, tp[1] = {1};
    rt_group *g = NULL, *gtp = NULL, *self = NULL;
    float v[3] = {1, 2, 3};
    CC_CHECK(&x->rep, rt_comm_group(c, all, 2, &g) == 0 && rt_comm_group(c, tp, 1, &gtp) == 0 &&
                          rt_comm_group(c, NULL, 0, &self) == 0,
             "groups: %s", rt_comm_error(c));
    CC_CHECK(&x->rep, rt_all_reduce(g, v, 3, RT_F32) == 0 && v[2] == 12, "first all_reduce");
    double t0 = now_ms();
    if (x->rank == 2) {
        sleep_ms(50); /* the others are waiting by now */
        rt_comm_abort(c, "out of memory in matmul");
        x->rc = -1;
    } else {
        x->rc = rt_all_reduce(g, v, 3, RT_F32);
    }
    x->ms = now_ms() - t0;
    snprintf(x->err, sizeof x->err, "%s", rt_comm_error(c));
    /* every later call fails at once, on every rank, any group */
    t0 = now_ms();
    rt_group *fresh = NULL;
    uint8_t dp[1] = {0};
    int later = rt_barrier(gtp) == -1 && rt_all_reduce(self, v, 3, RT_F32) == -1 &&
                rt_broadcast(g, v, 4) == -1 && rt_comm_group(c, dp, 1, &fresh) == -1;
    CC_CHECK(&x->rep, later && now_ms() - t0 < 500 &&
                          strcmp(rt_comm_error(c), "rank 2 failed: out of memory in matmul") == 0,
             "calls after the abort: \"%s\"", rt_comm_error(c));
    rt_comm_free(c);
}

static void test_abort(void)
{
    int64_t size[2] = {2, 2};
    rt_mesh_desc m = mesh_of(2, size);
    su_status err;
    rt_local_world *w = rt_local_world_new(&m, 20000, &err);
    CHECK(w != NULL);
    rank_ctx x[4];
    run_ranks(w, &m, abort_body, x, false);
    for (int r = 0; r < 4; r++) {
        CHECK_INT(x[r].rc, -1);
        CHECK_STR(x[r].err, "rank 2 failed: out of memory in matmul");
        if (r != 2 && !(x[r].ms < 1000))
            fprintf(stderr, "rank %d took %.0f ms to see the abort\n", r, x[r].ms);
        CHECK(r == 2 || x[r].ms < 1000);
    }
    rt_local_world_free(w);
}

/* Ranks 0..2 wait in an all_reduce that rank 3 never joins (it calls only
 * once the others have given up). */
static void timeout_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    uint8_t all[2] = {0, 1};
    rt_group *g = NULL;
    float v[2] = {1, 2};
    CC_CHECK(&x->rep, rt_comm_group(c, all, 2, &g) == 0, "group: %s", rt_comm_error(c));
    double t0 = now_ms();
    x->rc = rt_all_reduce(g, v, 2, RT_F32);
    x->ms = now_ms() - t0;
    snprintf(x->err, sizeof x->err, "%s", rt_comm_error(c));
    rt_comm_free(c);
}

static void test_timeout(void)
{
    int64_t size[2] = {2, 2};
    rt_mesh_desc m = mesh_of(2, size);
    su_status err;
    rt_local_world *w = rt_local_world_new(&m, 200, &err);
    CHECK(w != NULL);
    /* run ranks 0..2 as threads: run_ranks over a mesh of 3 would not do,
     * so start them by hand */
    rt_comm *c3 = rt_local_comm(w, 3);
    rt_group *g3 = NULL;
    uint8_t all[2] = {0, 1};
    CHECK(rt_comm_group(c3, all, 2, &g3) == 0);
    rank_ctx x[3];
    pthread_t th[3];
    for (int r = 0; r < 3; r++) {
        x[r] = (rank_ctx){.w = w, .mesh = &m, .rank = r, .body = timeout_body};
        x[r].rep.rank = r;
        CHECK(pthread_create(&th[r], NULL, rank_main, &x[r]) == 0);
    }
    int first = 0;
    const char *want = "timed out after 200 ms in all_reduce over axes (dp, tp) (group of 4 "
                       "ranks, member ";
    for (int r = 0; r < 3; r++) {
        pthread_join(th[r], NULL);
        check_count += x[r].rep.checks;
        check_failures += x[r].rep.fails;
        CHECK_INT(x[r].rc, -1);
        CHECK(x[r].ms >= 190 && x[r].ms < 2000);
        /* the first to time out reports itself; the others are woken and
         * report it with its rank */
        first += strncmp(x[r].err, want, strlen(want)) == 0;
        CHECK(strstr(x[r].err, want) != NULL);
        CHECK(strstr(x[r].err, "): waiting for member 3 (rank 3)") != NULL);
        if (!strstr(x[r].err, want))
            fprintf(stderr, "  rank %d: \"%s\"\n", r, x[r].err);
    }
    CHECK_INT(first, 1);
    /* rank 3 arrives late: it fails at once */
    float v[2] = {1, 2};
    double t0 = now_ms();
    CHECK_INT(rt_all_reduce(g3, v, 2, RT_F32), -1);
    CHECK(now_ms() - t0 < 100);
    CHECK(strstr(rt_comm_error(c3), want) != NULL);
    CHECK(v[0] == 1 && v[1] == 2);
    rt_comm_free(c3);
    rt_local_world_free(w);

    /* the message of a lone waiter, in full */
    int64_t two[1] = {2};
    m = mesh_of(1, two);
    w = rt_local_world_new(&m, 200, &err);
    rt_comm *c = rt_local_comm(w, 1);
    rt_group *g = NULL;
    uint8_t dp[1] = {0};
    CHECK(rt_comm_group(c, dp, 1, &g) == 0);
    CHECK_INT(rt_barrier(g), -1);
    CHECK_STR(rt_comm_error(c), "timed out after 200 ms in barrier over axes (dp) (group of 2 "
                                "ranks, member 1): waiting for member 0 (rank 0)");
    rt_comm *c0 = rt_local_comm(w, 0);
    CHECK(rt_comm_group(c0, dp, 1, &g) == -1);
    CHECK_STR(rt_comm_error(c0), "rank 1 timed out after 200 ms in barrier over axes (dp) "
                                 "(group of 2 ranks, member 1): waiting for member 0 (rank 0)");
    rt_local_world_free(w); /* its comms were never closed: the world frees them */
}

/* Members calling different collectives: all of them fail the same way, and
 * the world goes on. */
static void mismatch_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    uint8_t dp[1] = {0};
    rt_group *g = NULL;
    float v[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CC_CHECK(&x->rep, rt_comm_group(c, dp, 1, &g) == 0, "group: %s", rt_comm_error(c));
    x->rc = rt_all_reduce(g, v, x->rank == 0 ? 8 : 9, RT_F32);
    snprintf(x->err, sizeof x->err, "%s", rt_comm_error(c));
    CC_CHECK(&x->rep, v[0] == 1, "a mismatched all_reduce changed the buffer");
    CC_CHECK(&x->rep, rt_all_reduce(g, v, 9, RT_F32) == 0 && v[8] == 2,
             "all_reduce after a mismatch: %s", rt_comm_error(c));
    rt_comm_free(c);
}

static void test_mismatch(void)
{
    int64_t two[1] = {2};
    rt_mesh_desc m = mesh_of(1, two);
    su_status err;
    rt_local_world *w = rt_local_world_new(&m, 5000, &err);
    rank_ctx x[2];
    run_ranks(w, &m, mismatch_body, x, false);
    for (int r = 0; r < 2; r++) {
        CHECK_INT(x[r].rc, -1);
        CHECK_STR(x[r].err, "collective mismatch in the group over axes (dp): member 0 called "
                            "all_reduce(8 x f32) but member 1 (rank 1) called all_reduce(9 x f32)");
    }
    rt_local_world_free(w);
}

/* ---- point to point failures ---- */

/* Rank 1 receives from rank 0, which sends nothing: a timeout, and the
 * world goes on. Then rank 0 sends while rank 1 does not receive: a
 * timeout, and the post is withdrawn (rank 1's next receive gets the next
 * message, not it). Then a size mismatch fails both sides, and the world
 * still goes on. */
static void p2p_timeout_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    uint8_t a[16] = {1, 2, 3}, b[16] = {0};
    cc_report *rep = &x->rep;
    double t0 = now_ms();
    if (x->rank == 1) {
        CC_CHECK(rep, rt_recv(c, 0, b, 8) == -1, "recv from a silent rank");
        double ms = now_ms() - t0;
        CC_CHECK(rep, ms >= 90 && ms < 2000, "recv timed out after %.0f ms", ms);
        CC_CHECK(rep, !strcmp(rt_comm_error(c), "recv on rank 1 from rank 0 timed out after 100 "
                              "ms: rank 0 sent nothing"), "\"%s\"", rt_comm_error(c));
        atomic_fetch_add(x->arrivals, 1);       /* 1: rank 0 may send now */
        while (atomic_load(x->arrivals) < 2)    /* 2: its send has timed out */
            sleep_ms(1);
        CC_CHECK(rep, rt_recv(c, 0, b, 4) == 0 && b[0] == 9 && b[3] == 12, "recv after the "
                 "timeouts: %s", rt_comm_error(c));
        CC_CHECK(rep, rt_recv(c, 0, b, 8) == -1, "recv of the wrong size");
        CC_CHECK(rep, !strcmp(rt_comm_error(c), "recv on rank 1 from rank 0: size mismatch: rank "
                              "0 sent 16 bytes, rank 1 expects 8"), "\"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_recv(c, 0, b, 2) == 0 && b[1] == 2, "recv after a mismatch: %s",
                 rt_comm_error(c));
    } else {
        while (atomic_load(x->arrivals) < 1)
            sleep_ms(1);
        t0 = now_ms();
        CC_CHECK(rep, rt_send(c, 1, a, 16) == -1, "send to a rank that does not receive");
        double ms = now_ms() - t0;
        CC_CHECK(rep, ms >= 90 && ms < 2000, "send timed out after %.0f ms", ms);
        CC_CHECK(rep, !strcmp(rt_comm_error(c), "send on rank 0 to rank 1 timed out after 100 ms: "
                              "rank 1 did not receive"), "\"%s\"", rt_comm_error(c));
        atomic_fetch_add(x->arrivals, 1);
        uint8_t d[4] = {9, 10, 11, 12};
        CC_CHECK(rep, rt_send(c, 1, d, 4) == 0, "send after the timeouts: %s", rt_comm_error(c));
        CC_CHECK(rep, rt_send(c, 1, a, 16) == -1, "send of the wrong size");
        CC_CHECK(rep, !strcmp(rt_comm_error(c), "send on rank 0 to rank 1: size mismatch: rank 0 "
                              "sent 16 bytes, rank 1 expects 8"), "\"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_send(c, 1, a, 2) == 0, "send after a mismatch: %s", rt_comm_error(c));
    }
    rt_comm_free(c);
}

/* A rank that fails wakes a recv and a send waiting on ranks that never
 * come: rank 3 aborts while rank 0 receives from rank 1 and rank 2 sends
 * to rank 1 (which does nothing). */
static void p2p_abort_body(rank_ctx *x)
{
    rt_comm *c = rt_local_comm(x->w, x->rank);
    uint8_t b[8] = {0};
    double t0 = now_ms();
    x->rc = -1;
    if (x->rank == 0)
        x->rc = rt_recv(c, 1, b, 8);
    else if (x->rank == 2)
        x->rc = rt_send(c, 1, b, 8);
    else if (x->rank == 3) {
        sleep_ms(50);
        rt_comm_abort(c, "out of memory in matmul");
    }
    x->ms = now_ms() - t0;
    snprintf(x->err, sizeof x->err, "%s", rt_comm_error(c));
    rt_comm_free(c);
}

static void test_p2p_failures(void)
{
    int64_t two[1] = {2}, four[1] = {4};
    rt_mesh_desc m = mesh_of(1, two);
    su_status err;
    rt_local_world *w = rt_local_world_new(&m, 100, &err);
    rank_ctx x[4];
    run_ranks(w, &m, p2p_timeout_body, x, false);
    rt_local_world_free(w);

    m = mesh_of(1, four);
    w = rt_local_world_new(&m, 20000, &err);
    run_ranks(w, &m, p2p_abort_body, x, false);
    for (int r = 0; r < 4; r += 2) {
        CHECK_INT(x[r].rc, -1);
        CHECK_STR(x[r].err, "rank 3 failed: out of memory in matmul");
        CHECK(x[r].ms < 2000);
    }
    rt_local_world_free(w);
}

static void test_bad_worlds(void)
{
    su_status err;
    int64_t size[2] = {2, 0};
    rt_mesh_desc m = mesh_of(2, size);
    CHECK(rt_local_world_new(&m, 0, &err) == NULL);
    CHECK_STR(err.msg, "mesh axis 1 (tp) has size 0; sizes must be >= 1");
    size[1] = 2;
    m = mesh_of(2, size);
    CHECK(rt_local_world_new(&m, -5, &err) == NULL);
    CHECK_STR(err.msg, "negative timeout -5 ms");
    m.naxes = RT_MAX_AXES + 1;
    CHECK(rt_local_world_new(&m, 0, &err) == NULL);
    CHECK_STR(err.msg, "the mesh has 9 axes; at most 8 are allowed");
    m = mesh_of(2, size);
    rt_local_world *w = rt_local_world_new(&m, 0, &err);
    CHECK(rt_local_comm(w, 4) == NULL && rt_local_comm(w, -1) == NULL);
    CHECK(rt_local_comm(w, 3) != NULL && rt_comm_rank(rt_local_comm(w, 3)) == 3);
    rt_local_world_free(w);
}

/* ---- the f16 and bf16 conversions the communicators use ---- */

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* f32 -> f16 by arithmetic in double (nearbyint rounds to nearest even):
 * an independent reference for every finite input. */
static uint16_t ref_f16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a < ldexp(1, -14)) /* subnormal: units of 2^-24; 1024 is the smallest normal */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * ldexp(1, 24)));
    int e;
    frexp(a, &e);
    e--;
    double r = nearbyint(ldexp(a, 10 - e));
    if (r == 2048)
        r = 1024, e++;
    if (e > 15)
        return sign | 0x7c00;
    return (uint16_t)(sign | (e + 15) << 10 | ((int)r - 1024));
}

static void test_conversions(void)
{
    int bad16 = 0, badb = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t x = (uint16_t)h;
        bool nan16 = (x & 0x7c00) == 0x7c00 && (x & 0x3ff);
        float f = su_f16_to_f32(x);
        bad16 += nan16 ? !isnan(f) || !isnan(float_of(bits_of(f))) : su_f32_to_f16(f) != x;
        bool nanb = (x & 0x7f80) == 0x7f80 && (x & 0x7f);
        float b = su_bf16_to_f32(x);
        badb += nanb ? !isnan(b) || (su_f32_to_bf16(b) & 0x7fff) <= 0x7f80
                     : su_f32_to_bf16(b) != x || bits_of(b) != h << 16;
    }
    CHECK_INT(bad16, 0); /* every f16 survives f16 -> f32 -> f16; NaN stays NaN */
    CHECK_INT(badb, 0);
    /* rounding: pseudo-random floats from 2^-30 to 2^17 against the reference */
    uint32_t st = 12345;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        st = st * 1664525u + 1013904223u;
        float f = float_of((st & 0x807fffffu) | (uint32_t)(97 + (st >> 8) % 48) << 23);
        bad += su_f32_to_f16(f) != ref_f16(f);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(su_f32_to_f16(65504.0f), 0x7bff);
    CHECK_INT(su_f32_to_f16(65519.99f), 0x7bff);
    CHECK_INT(su_f32_to_f16(65520.0f), 0x7c00);     /* ties away from 65504: inf */
    CHECK_INT(su_f32_to_f16(-INFINITY), 0xfc00);
    CHECK_INT(su_f32_to_f16(ldexpf(1, -24)), 0x0001);
    CHECK_INT(su_f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie to even: zero */
    CHECK_INT(su_f32_to_f16(ldexpf(3, -26)), 0x0001);
    CHECK_INT(su_f32_to_f16(-0.0f), 0x8000);
    CHECK(isnan(su_f16_to_f32(su_f32_to_f16(NAN))));
    CHECK_INT(su_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);   /* tie to even: 1 */
    CHECK_INT(su_f32_to_bf16(1.0f + ldexpf(3, -8)), 0x3f82);   /* tie to even: up */
    CHECK_INT(su_f32_to_bf16(FLT_MAX), 0x7f80);                /* rounds to inf */
    CHECK_INT(su_f32_to_bf16(-INFINITY), 0xff80);
    CHECK(isnan(su_bf16_to_f32(su_f32_to_bf16(float_of(0x7f800001)))));
}

int main(void)
{
    test_conversions();
    test_bad_worlds();
    test_single();
    test_collectives();
    test_mismatch();
    test_abort();
    test_timeout();
    test_p2p_failures();
    return CHECK_DONE();
}
