/* comm_checks.h: the collective and point-to-point checks every
 * communicator must pass, shared by test_comm_local.c (ranks are threads)
 * and tests/mpi/test_comm_mpi.c (ranks are processes). Each rank calls
 * cc_run on its comm; every rank makes the same calls in the same order,
 * as comm.h demands.
 *
 * The expectations never come from the library: the test lays the mesh out
 * itself (row-major, last axis fastest), finds each group's members by
 * scanning every rank, and computes each result from the members' input
 * formulas. Checks count into a cc_report per rank (check.h's counters are
 * not thread-safe), and a failure prints the rank, the check and the values.
 */
#ifndef SHARDC_TEST_COMM_CHECKS_H
#define SHARDC_TEST_COMM_CHECKS_H

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm/comm.h"

#define CC_MAX_RANKS 64

typedef struct cc_report {
    int64_t rank;
    int checks, fails;
} cc_report;

/* What an implementation promises beyond comm.h. */
typedef struct cc_opts {
    bool member_order; /* f32 sums in member order (local); MPI picks its own */
    bool large;        /* also run cc_large */
} cc_opts;

static void cc_fail(cc_report *rep, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cc_fail(cc_report *rep, const char *file, int line, const char *fmt, ...)
{
    rep->fails++;
    if (rep->fails > 20) /* the first ones say enough */
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %lld: %s:%d: check failed: %s\n", (long long)rep->rank, file, line, msg);
}

/* CC_CHECK(rep, cond, "format", ...): the message says what was checked. */
#define CC_CHECK(rep, cond, ...)                                                 \
    do {                                                                         \
        (rep)->checks++;                                                         \
        if (!(cond))                                                             \
            cc_fail((rep), __FILE__, __LINE__, __VA_ARGS__);                     \
    } while (0)

/* ---- the test's own model of the mesh ---- */

typedef struct cc_group {
    int naxes;
    uint8_t axes[RT_MAX_AXES];
    char desc[96];                 /* "(dp, tp)" */
    int64_t size, index;
    int64_t member[CC_MAX_RANKS];  /* world rank of each member index */
} cc_group;

static int64_t cc_ranks(const rt_mesh_desc *m)
{
    int64_t n = 1;
    for (int a = 0; a < m->naxes; a++)
        n *= m->size[a];
    return n;
}

static void cc_coords(const rt_mesh_desc *m, int64_t r, int64_t coord[RT_MAX_AXES])
{
    for (int a = m->naxes - 1; a >= 0; a--) {
        coord[a] = r % m->size[a];
        r /= m->size[a];
    }
}

/* The group of `rank` over axes: every rank that shares rank's coordinates
 * off the axes, placed at its row-major index over the axes. */
static void cc_group_of(const rt_mesh_desc *m, int64_t rank, const uint8_t *axes, int naxes,
                        cc_group *g)
{
    memset(g, 0, sizeof *g);
    g->naxes = naxes;
    memcpy(g->axes, axes, (size_t)naxes);
    size_t k = (size_t)snprintf(g->desc, sizeof g->desc, "(");
    for (int i = 0; i < naxes; i++)
        k += (size_t)snprintf(g->desc + k, sizeof g->desc - k, "%s%s", i ? ", " : "",
                              m->name[axes[i]]);
    snprintf(g->desc + k, sizeof g->desc - k, ")");
    int64_t mine[RT_MAX_AXES], other[RT_MAX_AXES];
    cc_coords(m, rank, mine);
    for (int64_t r = 0; r < cc_ranks(m); r++) {
        cc_coords(m, r, other);
        bool same = true;
        for (int a = 0; a < m->naxes; a++) {
            bool in = memchr(axes, a, (size_t)naxes) != NULL;
            same = same && (in || other[a] == mine[a]);
        }
        if (!same)
            continue;
        int64_t idx = 0;
        for (int i = 0; i < naxes; i++)
            idx = idx * m->size[axes[i]] + other[axes[i]];
        g->member[idx] = r;
        g->size++;
        if (r == rank)
            g->index = idx;
    }
}

/* ---- f16 and bf16, independently of the library ---- */

/* v rounded to nearest even with `bits` stored mantissa bits and exponent
 * bias `bias`; normal numbers and zero only (what the tests use). */
static uint16_t cc_round(double v, int bits, int bias)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int e;
    frexp(fabs(v), &e);
    e--; /* |v| = 1.f * 2^e */
    double r = nearbyint(ldexp(fabs(v), bits - e));
    if (r == ldexp(1, bits + 1)) {
        r /= 2;
        e++;
    }
    return (uint16_t)(sign | (e + bias) << bits | ((int)r - (1 << bits)));
}

static uint16_t cc_f16(double v)
{
    return cc_round(v, 10, 15);
}

static uint16_t cc_bf16(double v)
{
    return cc_round(v, 7, 127);
}

/* ---- inputs ---- */

static float cc_vf(int64_t r, int64_t e) /* small integers: every sum exact */
{
    return (float)((r * 7 + e * 3) % 19 - 9);
}

static int32_t cc_vi(int64_t r, int64_t e) /* up to +-2e8: 8 of them fit */
{
    return (int32_t)(((uint64_t)r * 2654435761u + (uint64_t)e * 40503u) % 400000001u) - 200000000;
}

static double cc_vh(int64_t r, int64_t e) /* halves in [-10, 10]: sums exact in f16 */
{
    return ((r * 5 + e * 3) % 41 - 20) * 0.5;
}

static double cc_vb(int64_t r, int64_t e) /* quarters in [-4, 4]: sums exact in bf16 */
{
    return ((r * 3 + e * 7) % 33 - 16) * 0.25;
}

/* Floats of mixed signs and magnitudes: their sum depends on the order. */
static float cc_vr(int64_t r, int64_t e)
{
    uint32_t h = (uint32_t)(r + 1) * 0x9E3779B1u ^ (uint32_t)(e + 7) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    float m = (float)(h & 0xffffff) / 16777216.0f + 0.5f;
    return ldexpf(h & 0x80000000u ? -m : m, (int)((h >> 24) % 24) - 12);
}

static uint8_t cc_byte(int64_t r, int64_t j, int64_t k)
{
    return (uint8_t)(r * 37 + j * 11 + k * 3 + 1);
}

/* ---- the checks ---- */

/* all_reduce in each dtype; the sums are exact, so equality is the test. */
static void cc_all_reduce(rt_group *rg, const cc_group *g, cc_report *rep, int64_t count)
{
    float *f = malloc((size_t)(count + 1) * 4);
    int32_t *i = malloc((size_t)(count + 1) * 4);
    uint16_t *h = malloc((size_t)(count + 1) * 2), *b = malloc((size_t)(count + 1) * 2);
    for (int64_t e = 0; e < count; e++) {
        f[e] = cc_vf(rep->rank, e);
        i[e] = cc_vi(rep->rank, e);
        h[e] = cc_f16(cc_vh(rep->rank, e));
        b[e] = cc_bf16(cc_vb(rep->rank, e));
    }
    CC_CHECK(rep, rt_all_reduce(rg, f, count, RT_F32) == 0, "all_reduce f32 over %s", g->desc);
    CC_CHECK(rep, rt_all_reduce(rg, i, count, RT_I32) == 0, "all_reduce i32 over %s", g->desc);
    CC_CHECK(rep, rt_all_reduce(rg, h, count, RT_F16) == 0, "all_reduce f16 over %s", g->desc);
    CC_CHECK(rep, rt_all_reduce(rg, b, count, RT_BF16) == 0, "all_reduce bf16 over %s", g->desc);
    int bad[4] = {0};
    int64_t first[4] = {-1, -1, -1, -1};
    for (int64_t e = 0; e < count; e++) {
        double sf = 0, sh = 0, sb = 0;
        int64_t si = 0;
        for (int64_t m = 0; m < g->size; m++) {
            sf += cc_vf(g->member[m], e);
            si += cc_vi(g->member[m], e);
            sh += cc_vh(g->member[m], e);
            sb += cc_vb(g->member[m], e);
        }
        bool wrong[4] = {f[e] != sf, i[e] != si, h[e] != cc_f16(sh), b[e] != cc_bf16(sb)};
        for (int d = 0; d < 4; d++)
            if (wrong[d] && bad[d]++ == 0)
                first[d] = e;
    }
    const char *names[4] = {"f32", "i32", "f16", "bf16"};
    for (int d = 0; d < 4; d++)
        CC_CHECK(rep, bad[d] == 0, "all_reduce %s over %s, count %lld: %d wrong sums, the "
                 "first at [%lld]", names[d], g->desc, (long long)count, bad[d],
                 (long long)first[d]);
    free(f);
    free(i);
    free(h);
    free(b);
}

/* f16 and bf16 are summed in f32 and rounded once: member 0 holds 2048
 * (256 in bf16) and every other member 1, which a sum in f16 would lose. */
/* all_reduce with max: every dtype, the elementwise maximum over the
 * members, exactly (cc_vr's mixed magnitudes and signs for f32; a member's
 * nan wins in f32 under `local`, as the CPU backend's amax, checked when
 * member_order says the implementation is ours). */
static void cc_all_reduce_max(rt_group *rg, const cc_group *g, cc_report *rep, int64_t count,
                              bool member_order)
{
    float *f = malloc((size_t)(count + 1) * 4);
    int32_t *i = malloc((size_t)(count + 1) * 4);
    uint16_t *h = malloc((size_t)(count + 1) * 2), *b = malloc((size_t)(count + 1) * 2);
    bool nan = member_order && count > 2 && g->size > 1;
    for (int64_t e = 0; e < count; e++) {
        f[e] = cc_vr(rep->rank, e);
        i[e] = cc_vi(rep->rank, e);
        h[e] = cc_f16(cc_vh(rep->rank, e));
        b[e] = cc_bf16(cc_vb(rep->rank, e));
    }
    if (nan && g->index == g->size - 1) /* element 2: only the last member's is nan */
        f[2] = NAN;
    CC_CHECK(rep, rt_all_reduce_max(rg, f, count, RT_F32) == 0, "all_reduce max f32 over %s",
             g->desc);
    CC_CHECK(rep, rt_all_reduce_max(rg, i, count, RT_I32) == 0, "all_reduce max i32 over %s",
             g->desc);
    CC_CHECK(rep, rt_all_reduce_max(rg, h, count, RT_F16) == 0, "all_reduce max f16 over %s",
             g->desc);
    CC_CHECK(rep, rt_all_reduce_max(rg, b, count, RT_BF16) == 0, "all_reduce max bf16 over %s",
             g->desc);
    int bad[4] = {0};
    int64_t first[4] = {-1, -1, -1, -1};
    for (int64_t e = 0; e < count; e++) {
        float mf = cc_vr(g->member[0], e);
        int32_t mi = cc_vi(g->member[0], e);
        double mh = cc_vh(g->member[0], e), mb = cc_vb(g->member[0], e);
        for (int64_t m = 1; m < g->size; m++) {
            mf = fmaxf(mf, cc_vr(g->member[m], e));
            mi = cc_vi(g->member[m], e) > mi ? cc_vi(g->member[m], e) : mi;
            mh = fmax(mh, cc_vh(g->member[m], e));
            mb = fmax(mb, cc_vb(g->member[m], e));
        }
        bool fwrong = nan && e == 2 ? !isnan(f[e]) : f[e] != mf;
        bool wrong[4] = {fwrong, i[e] != mi, h[e] != cc_f16(mh), b[e] != cc_bf16(mb)};
        for (int d = 0; d < 4; d++)
            if (wrong[d] && bad[d]++ == 0)
                first[d] = e;
    }
    const char *names[4] = {"f32", "i32", "f16", "bf16"};
    for (int d = 0; d < 4; d++)
        CC_CHECK(rep, bad[d] == 0, "all_reduce max %s over %s, count %lld: %d wrong maxima, "
                 "the first at [%lld]", names[d], g->desc, (long long)count, bad[d],
                 (long long)first[d]);
    free(f);
    free(i);
    free(h);
    free(b);
}

static void cc_all_reduce_rounding(rt_group *rg, const cc_group *g, cc_report *rep)
{
    uint16_t h[2], b[2];
    double big_h = g->index == 0 ? 2048 : 1, big_b = g->index == 0 ? 256 : 1;
    h[0] = cc_f16(big_h), h[1] = cc_f16(-big_h);
    b[0] = cc_bf16(big_b), b[1] = cc_bf16(-big_b);
    CC_CHECK(rep, rt_all_reduce(rg, h, 2, RT_F16) == 0, "all_reduce f16 over %s", g->desc);
    CC_CHECK(rep, rt_all_reduce(rg, b, 2, RT_BF16) == 0, "all_reduce bf16 over %s", g->desc);
    double n1 = (double)(g->size - 1);
    CC_CHECK(rep, h[0] == cc_f16(2048 + n1) && h[1] == cc_f16(-2048 - n1),
             "all_reduce f16 over %s of 2048 and %g ones: got 0x%04x 0x%04x, want 0x%04x", g->desc,
             n1, h[0], h[1], cc_f16(2048 + n1));
    CC_CHECK(rep, b[0] == cc_bf16(256 + n1) && b[1] == cc_bf16(-256 - n1),
             "all_reduce bf16 over %s of 256 and %g ones: got 0x%04x 0x%04x, want 0x%04x",
             g->desc, n1, b[0], b[1], cc_bf16(256 + n1));
}

/* f32 sums are identical bits on every member (compared through an
 * all_gather), and with member_order they are the member-order sum. */
static void cc_all_reduce_order(rt_group *rg, const cc_group *g, cc_report *rep,
                                bool member_order)
{
    enum { N = 64 };
    float x[N], want[N], rev[N];
    for (int e = 0; e < N; e++) {
        x[e] = cc_vr(rep->rank, e);
        want[e] = cc_vr(g->member[0], e);
        for (int64_t m = 1; m < g->size; m++)
            want[e] += cc_vr(g->member[m], e);
        rev[e] = cc_vr(g->member[g->size - 1], e);
        for (int64_t m = g->size - 2; m >= 0; m--)
            rev[e] += cc_vr(g->member[m], e);
    }
    if (member_order && g->size >= 3) /* the data must tell the orders apart */
        CC_CHECK(rep, memcmp(want, rev, sizeof want) != 0,
                 "test data over %s: member order and reverse order give the same sums", g->desc);
    CC_CHECK(rep, rt_all_reduce(rg, x, N, RT_F32) == 0, "all_reduce f32 over %s", g->desc);
    int bad = 0, first = 0;
    for (int e = N - 1; e >= 0; e--)
        if (memcmp(&x[e], &want[e], 4) != 0)
            bad++, first = e;
    if (member_order)
        CC_CHECK(rep, bad == 0, "all_reduce f32 over %s: %d of %d sums differ from the "
                 "member-order sum (e.g. [%d]: got %.9g, want %.9g)", g->desc, bad, N, first,
                 x[first], want[first]);
    /* in any order: the sum up to rounding, size f32 ulps of the terms' magnitude */
    for (int e = 0; e < N; e++) {
        double mag = 0;
        for (int64_t m = 0; m < g->size; m++)
            mag += fabs(cc_vr(g->member[m], e));
        double tol = (double)g->size * FLT_EPSILON * mag;
        CC_CHECK(rep, fabs((double)x[e] - (double)want[e]) <= tol,
                 "all_reduce f32 over %s [%d]: got %.9g, want %.9g (tolerance %.3g)", g->desc, e,
                 x[e], want[e], tol);
    }
    float *all = malloc(sizeof x * (size_t)g->size);
    CC_CHECK(rep, rt_all_gather(rg, x, all, sizeof x) == 0, "all_gather over %s", g->desc);
    for (int64_t m = 0; m < g->size; m++)
        CC_CHECK(rep, memcmp(all + m * N, x, sizeof x) == 0,
                 "all_reduce f32 over %s: member %lld's result differs from this member's bits",
                 g->desc, (long long)m);
    free(all);
}

static void cc_reduce_scatter(rt_group *rg, const cc_group *g, cc_report *rep, int64_t count)
{
    int64_t n = count * g->size;
    float *f = malloc((size_t)n * 4), *fr = malloc((size_t)count * 4 + 4);
    int32_t *i = malloc((size_t)n * 4), *ir = malloc((size_t)count * 4 + 4);
    uint16_t *h = malloc((size_t)n * 2), *hr = malloc((size_t)count * 2 + 2);
    uint16_t *b = malloc((size_t)n * 2), *br = malloc((size_t)count * 2 + 2);
    for (int64_t e = 0; e < n; e++) {
        f[e] = cc_vf(rep->rank, e);
        i[e] = cc_vi(rep->rank, e);
        h[e] = cc_f16(cc_vh(rep->rank, e));
        b[e] = cc_bf16(cc_vb(rep->rank, e));
    }
    fr[count] = -1234.5f; /* a guard after the block */
    CC_CHECK(rep, rt_reduce_scatter(rg, f, fr, count, RT_F32) == 0, "reduce_scatter f32 over %s",
             g->desc);
    CC_CHECK(rep, rt_reduce_scatter(rg, i, ir, count, RT_I32) == 0, "reduce_scatter i32 over %s",
             g->desc);
    CC_CHECK(rep, rt_reduce_scatter(rg, h, hr, count, RT_F16) == 0, "reduce_scatter f16 over %s",
             g->desc);
    CC_CHECK(rep, rt_reduce_scatter(rg, b, br, count, RT_BF16) == 0,
             "reduce_scatter bf16 over %s", g->desc);
    CC_CHECK(rep, fr[count] == -1234.5f, "reduce_scatter f32 over %s wrote past its block",
             g->desc);
    int bad[4] = {0};
    for (int64_t e = 0; e < count; e++) {
        int64_t at = g->index * count + e;
        double sf = 0, sh = 0, sb = 0;
        int64_t si = 0;
        for (int64_t m = 0; m < g->size; m++) {
            sf += cc_vf(g->member[m], at);
            si += cc_vi(g->member[m], at);
            sh += cc_vh(g->member[m], at);
            sb += cc_vb(g->member[m], at);
        }
        bad[0] += fr[e] != sf;
        bad[1] += ir[e] != si;
        bad[2] += hr[e] != cc_f16(sh);
        bad[3] += br[e] != cc_bf16(sb);
    }
    const char *names[4] = {"f32", "i32", "f16", "bf16"};
    for (int d = 0; d < 4; d++)
        CC_CHECK(rep, bad[d] == 0, "reduce_scatter %s over %s, count %lld: %d wrong sums",
                 names[d], g->desc, (long long)count, bad[d]);
    free(f), free(fr), free(i), free(ir), free(h), free(hr), free(b), free(br);
}

static void cc_bytes(rt_group *rg, const cc_group *g, cc_report *rep, int64_t bytes)
{
    int64_t n = g->size;
    uint8_t *send = malloc((size_t)(bytes * n + 1)), *recv = malloc((size_t)(bytes * n + 1));
    /* all_gather: member i's bytes at i*bytes */
    for (int64_t k = 0; k < bytes; k++)
        send[k] = cc_byte(rep->rank, 0, k);
    memset(recv, 0xEE, (size_t)(bytes * n + 1));
    CC_CHECK(rep, rt_all_gather(rg, send, recv, bytes) == 0, "all_gather over %s", g->desc);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < bytes; k++)
            bad += recv[i * bytes + k] != cc_byte(g->member[i], 0, k);
    CC_CHECK(rep, bad == 0 && recv[bytes * n] == 0xEE,
             "all_gather over %s of %lld bytes: %d wrong bytes (guard 0x%02x)", g->desc,
             (long long)bytes, bad, recv[bytes * n]);
    /* all_to_all: block j of the send goes to member j */
    for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < bytes; k++)
            send[j * bytes + k] = cc_byte(rep->rank, j, k);
    memset(recv, 0xEE, (size_t)(bytes * n + 1));
    CC_CHECK(rep, rt_all_to_all(rg, send, recv, bytes) == 0, "all_to_all over %s", g->desc);
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < bytes; k++)
            bad += recv[i * bytes + k] != cc_byte(g->member[i], g->index, k);
    CC_CHECK(rep, bad == 0 && recv[bytes * n] == 0xEE,
             "all_to_all over %s of %lld bytes: %d wrong bytes", g->desc, (long long)bytes, bad);
    /* broadcast from member 0 */
    for (int64_t k = 0; k < bytes; k++)
        send[k] = cc_byte(rep->rank, 99, k);
    send[bytes] = 0xEE;
    CC_CHECK(rep, rt_broadcast(rg, send, bytes) == 0, "broadcast over %s", g->desc);
    bad = 0;
    for (int64_t k = 0; k < bytes; k++)
        bad += send[k] != cc_byte(g->member[0], 99, k);
    CC_CHECK(rep, bad == 0 && send[bytes] == 0xEE, "broadcast over %s of %lld bytes: %d wrong",
             g->desc, (long long)bytes, bad);
    free(send);
    free(recv);
}

/* Every collective over the group of axes. */
static void cc_group_checks(rt_comm *c, const rt_mesh_desc *m, const uint8_t *axes, int naxes,
                            cc_report *rep, const cc_opts *opts)
{
    cc_group g;
    cc_group_of(m, rep->rank, axes, naxes, &g);
    rt_group *rg = NULL, *again = NULL;
    CC_CHECK(rep, rt_comm_group(c, axes, naxes, &rg) == 0, "group over %s: %s", g.desc,
             rt_comm_error(c));
    if (!rg)
        return;
    CC_CHECK(rep, rt_comm_group(c, axes, naxes, &again) == 0 && again == rg,
             "group over %s: a second request made a new group", g.desc);
    CC_CHECK(rep, rt_group_size(rg) == g.size, "group over %s: size %lld, want %lld", g.desc,
             (long long)rt_group_size(rg), (long long)g.size);
    CC_CHECK(rep, rt_group_index(rg) == g.index, "group over %s: member index %lld, want %lld",
             g.desc, (long long)rt_group_index(rg), (long long)g.index);
    const int64_t counts[] = {0, 1, 3, 37, 1000};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        cc_all_reduce(rg, &g, rep, counts[k]);
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        cc_all_reduce_max(rg, &g, rep, counts[k], opts->member_order);
    cc_all_reduce_rounding(rg, &g, rep);
    cc_all_reduce_order(rg, &g, rep, opts->member_order);
    cc_reduce_scatter(rg, &g, rep, 0);
    cc_reduce_scatter(rg, &g, rep, 5);
    cc_reduce_scatter(rg, &g, rep, 300);
    cc_bytes(rg, &g, rep, 0);
    cc_bytes(rg, &g, rep, 13);
    cc_bytes(rg, &g, rep, 1000);
    CC_CHECK(rep, rt_barrier(rg) == 0, "barrier over %s: %s", g.desc, rt_comm_error(c));
    /* nothing above may leave an error behind */
    CC_CHECK(rep, rt_comm_error(c)[0] == 0, "over %s: stray error \"%s\"", g.desc,
             rt_comm_error(c));
}

/* Argument errors: reported at once, the same on every rank, so the world
 * goes on. */
static void cc_errors(rt_comm *c, const rt_mesh_desc *m, cc_report *rep)
{
    uint8_t out_of_range[1] = {(uint8_t)m->naxes}, twice[2] = {0, 0};
    rt_group *g = NULL;
    CC_CHECK(rep, rt_comm_group(c, out_of_range, 1, &g) == -1 && !g &&
                      strstr(rt_comm_error(c), "is not an axis of the mesh"),
             "group over a missing axis: \"%s\"", rt_comm_error(c));
    if (m->naxes > 0)
        CC_CHECK(rep, rt_comm_group(c, twice, 2, &g) == -1 &&
                          strstr(rt_comm_error(c), "is named twice"),
                 "group over an axis twice: \"%s\"", rt_comm_error(c));
    uint8_t all[RT_MAX_AXES];
    for (int a = 0; a < m->naxes; a++)
        all[a] = (uint8_t)a;
    CC_CHECK(rep, rt_comm_group(c, all, m->naxes, &g) == 0, "group over every axis: %s",
             rt_comm_error(c));
    float x[4] = {0};
    CC_CHECK(rep, rt_all_reduce(g, x, 4, 7) == -1 &&
                      strstr(rt_comm_error(c), "all_reduce over ") &&
                      strstr(rt_comm_error(c), ": unknown dtype 7"),
             "all_reduce of dtype 7: \"%s\"", rt_comm_error(c));
    CC_CHECK(rep, rt_all_reduce(g, x, -1, RT_F32) == -1 &&
                      strstr(rt_comm_error(c), "negative count -1"),
             "all_reduce of -1 elements: \"%s\"", rt_comm_error(c));
    CC_CHECK(rep, rt_broadcast(g, NULL, 4) == -1 && strstr(rt_comm_error(c), "null buffer"),
             "broadcast of NULL: \"%s\"", rt_comm_error(c));
    if (cc_ranks(m) > 1) {
        uint8_t *buf = malloc((size_t)(4 * cc_ranks(m)));
        CC_CHECK(rep, rt_all_gather(g, buf + 4, buf, 4) == -1 &&
                          strstr(rt_comm_error(c), "buffers overlap"),
                 "all_gather into its own send: \"%s\"", rt_comm_error(c));
        free(buf);
    }
}

/* Every axes list a test runs: none, each axis, each ordered pair, all in
 * order, all reversed, all rotated. Returns the count. */
static int cc_axis_lists(int naxes, uint8_t lists[][RT_MAX_AXES], int *len)
{
    int n = 0;
    len[n++] = 0;
    for (int a = 0; a < naxes; a++)
        lists[n][0] = (uint8_t)a, len[n++] = 1;
    for (int a = 0; a < naxes; a++)
        for (int b = 0; b < naxes; b++)
            if (a != b)
                lists[n][0] = (uint8_t)a, lists[n][1] = (uint8_t)b, len[n++] = 2;
    for (int rot = 0; rot < 3 && naxes > 2; rot++, n++) {
        len[n] = naxes;
        for (int k = 0; k < naxes; k++)
            lists[n][k] = (uint8_t)(rot == 0   ? k
                                    : rot == 1 ? naxes - 1 - k
                                               : (k + 1) % naxes);
    }
    return n;
}

/* Sizes past the chunks an implementation may work in (comm_mpi.c converts
 * f16 and bf16 through an f32 scratch of 65536 elements), over every axis. */
static void cc_large(rt_comm *c, const rt_mesh_desc *m, cc_report *rep)
{
    uint8_t all[RT_MAX_AXES];
    for (int a = 0; a < m->naxes; a++)
        all[a] = (uint8_t)a;
    cc_group g;
    cc_group_of(m, rep->rank, all, m->naxes, &g);
    rt_group *rg = NULL;
    CC_CHECK(rep, rt_comm_group(c, all, m->naxes, &rg) == 0, "group over %s: %s", g.desc,
             rt_comm_error(c));
    if (!rg)
        return;
    cc_all_reduce(rg, &g, rep, 100000);
    cc_reduce_scatter(rg, &g, rep, 20000);
    cc_bytes(rg, &g, rep, 100000);
}

/* Everything above, on one rank. */
/* ---- point to point ---- */

/* Messages of these sizes in a row, so that a reordering is a size
 * mismatch and a mixup of contents shows. */
static const int64_t cc_p2p_sizes[] = {1, 0, 1000, 70001, 3};
#define CC_P2P_N ((int)(sizeof cc_p2p_sizes / sizeof *cc_p2p_sizes))

/* Rank `from` sends its messages to rank `to`, which checks them. */
static void cc_p2p_pair(rt_comm *c, cc_report *rep, int64_t from, int64_t to)
{
    int64_t me = rt_comm_rank(c);
    uint8_t *buf = malloc(70001);
    CC_CHECK(rep, buf != NULL, "out of memory");
    for (int k = 0; buf && k < CC_P2P_N; k++) {
        int64_t n = cc_p2p_sizes[k];
        if (me == from) {
            for (int64_t j = 0; j < n; j++)
                buf[j] = cc_byte(from, k, j);
            CC_CHECK(rep, rt_send(c, to, buf, n) == 0, "send %d of %lld bytes to rank %lld: %s",
                     k, (long long)n, (long long)to, rt_comm_error(c));
            continue;
        }
        memset(buf, 0xee, 70001);
        CC_CHECK(rep, rt_recv(c, from, buf, n) == 0, "recv %d of %lld bytes from rank %lld: %s", k,
                 (long long)n, (long long)from, rt_comm_error(c));
        int64_t bad = 0;
        for (int64_t j = 0; j < n; j++)
            bad += buf[j] != cc_byte(from, k, j);
        CC_CHECK(rep, bad == 0 && (n == 70001 || buf[n] == 0xee),
                 "recv %d from rank %lld: %lld of %lld bytes wrong, or written past", k,
                 (long long)from, (long long)bad, (long long)n);
    }
    free(buf);
}

/* rt_send and rt_recv: in two rounds of disjoint pairs (even rank to the
 * next, then odd rank to the next, around), every rank sends the sizes
 * above in a row and receives its neighbour's, so that no pattern needs
 * buffering; then the argument errors. A world of an odd number of ranks
 * runs the errors only. */
static void cc_p2p(rt_comm *c, const rt_mesh_desc *m, cc_report *rep)
{
    int64_t n = cc_ranks(m), r = rt_comm_rank(c);
    for (int round = 0; n % 2 == 0 && round < 2; round++) {
        bool sender = r % 2 == round;
        int64_t from = sender ? r : (r + n - 1) % n, to = sender ? (r + 1) % n : r;
        cc_p2p_pair(c, rep, from, to);
    }
    char buf[4];
    char want[128];
    CC_CHECK(rep, rt_send(c, n, buf, 4) == -1, "send to rank %lld", (long long)n);
    snprintf(want, sizeof want, "send on rank %lld to rank %lld: no such rank (the world has %lld)",
             (long long)r, (long long)n, (long long)n);
    CC_CHECK(rep, strcmp(rt_comm_error(c), want) == 0, "\"%s\"", rt_comm_error(c));
    CC_CHECK(rep, rt_recv(c, r, buf, 4) == -1, "recv from itself");
    snprintf(want, sizeof want, "recv on rank %lld from itself", (long long)r);
    CC_CHECK(rep, strcmp(rt_comm_error(c), want) == 0, "\"%s\"", rt_comm_error(c));
    CC_CHECK(rep, rt_recv(c, -1, buf, 4) == -1 && strstr(rt_comm_error(c), "no such rank"),
             "recv from rank -1: \"%s\"", rt_comm_error(c));
    if (n > 1) {
        CC_CHECK(rep, rt_send(c, (r + 1) % n, buf, -1) == -1 &&
                          strstr(rt_comm_error(c), ": negative size"),
                 "negative size: \"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_send(c, (r + 1) % n, NULL, 4) == -1 &&
                          strstr(rt_comm_error(c), ": null buffer"),
                 "null buffer: \"%s\"", rt_comm_error(c));
    }
}

static void cc_run(rt_comm *c, const rt_mesh_desc *m, cc_report *rep, const cc_opts *opts)
{
    CC_CHECK(rep, rt_comm_rank(c) == rep->rank && rt_comm_size(c) == cc_ranks(m),
             "rank %lld of %lld, want %lld of %lld", (long long)rt_comm_rank(c),
             (long long)rt_comm_size(c), (long long)rep->rank, (long long)cc_ranks(m));
    uint8_t lists[1 + RT_MAX_AXES + RT_MAX_AXES * RT_MAX_AXES + 3][RT_MAX_AXES];
    int len[1 + RT_MAX_AXES + RT_MAX_AXES * RT_MAX_AXES + 3];
    int n = cc_axis_lists(m->naxes, lists, len);
    for (int i = 0; i < n; i++)
        cc_group_checks(c, m, lists[i], len[i], rep, opts);
    if (opts->large)
        cc_large(c, m, rep);
    cc_errors(c, m, rep);
    cc_p2p(c, m, rep);
}

#endif
