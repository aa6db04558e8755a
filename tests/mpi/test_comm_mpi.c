/* test_comm_mpi.c: the MPI communicator on 4 processes (ctest runs it under
 * mpirun -np 4): every collective over every kind of group of the mesh 2x2
 * and of the mesh 4, and point to point (tests/unit/comm_checks.h, whose
 * expectations the test computes itself), a receive of the wrong size, and
 * the errors of a mesh that does not match the world.
 * Then timeouts: a receive and a collective whose peer never comes, named
 * as not answering; a peer that answers; the comm after each; and
 * rt_comm_abort, which fails the comm and returns (the library never ends
 * the process).
 * Every rank prints its failures (naming the rank and the check); rank 0
 * prints the totals over all ranks, and every rank exits nonzero if any
 * rank failed. */
#include "tests/unit/comm_checks.h"

#include <mpi.h>

/* Under the sanitizer build: Open MPI leaves memory behind from MPI_Init
 * and MPI_Finalize, and from its progress thread (a libevent loop), so
 * LeakSanitizer (when linked: weak symbols) ignores what those two calls
 * allocate and what that thread does; a leak of the communicator's memory
 * still fails the test. */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libevent_core\n";
}
/* Open MPI's plugins have no frame pointers: the fast unwinder would stop
 * in them, before the frames the suppression names. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

static void leaks_ignored(bool on)
{
    if (on && __lsan_disable)
        __lsan_disable();
    else if (!on && __lsan_enable)
        __lsan_enable();
}

static void check_mesh(const rt_mesh_desc *m, cc_report *rep)
{
    su_status err = {SU_OK, ""};
    rt_comm *c = rt_mpi_comm_new(m, 0, &err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new: %s", err.msg);
    if (!c)
        return;
    cc_opts opts = {.member_order = false, .large = true};
    cc_run(c, m, rep, &opts);
    rt_comm_free(c);
}

/* A receive of the wrong size fails naming both ranks and sizes, and
 * leaves the message to a receive of the right size. Ranks 0 and 1 only;
 * the send is small, so MPI sends it eagerly and rank 0 does not wait. */
static void check_p2p_mismatch(const rt_mesh_desc *m, cc_report *rep)
{
    su_status err = {SU_OK, ""};
    rt_comm *c = rt_mpi_comm_new(m, 0, &err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new: %s", err.msg);
    if (!c)
        return;
    uint8_t a[16] = {7, 8, 9}, b[16] = {0};
    if (rep->rank == 0)
        CC_CHECK(rep, rt_send(c, 1, a, 16) == 0, "send: %s", rt_comm_error(c));
    if (rep->rank == 1) {
        CC_CHECK(rep, rt_recv(c, 0, b, 8) == -1 &&
                          strcmp(rt_comm_error(c), "recv on rank 1 from rank 0: size mismatch: "
                                                   "rank 0 sent 16 bytes, rank 1 expects 8") == 0,
                 "recv of 8 bytes: \"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_recv(c, 0, b, 16) == 0 && b[2] == 9, "recv of 16 bytes: %s",
                 rt_comm_error(c));
    }
    rt_comm_free(c);
}

/* Point to point timeouts on a comm whose timeout is 400 ms on ranks 0 to
 * 2 and 10 s on rank 3. Rank 0 receives from rank 1, which waits in plain
 * MPI (it answers no ping) until rank 0 lets it go: a timeout naming rank
 * 1 as not answering, which leaves nothing to MPI, so the comm is not
 * stuck. Rank 2 receives from rank 3, which waits in a receive of its own
 * on the comm: rank 3 answers; then rank 2 sends it its message on the
 * same comm. */
static void check_p2p_timeouts(rt_comm *c, cc_report *rep)
{
    int go = 1;
    uint8_t buf[8] = {0}, msg[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    switch (rep->rank) {
    case 0:
        CC_CHECK(rep, rt_recv(c, 1, buf, 8) == -1 &&
                          !strcmp(rt_comm_error(c), "recv on rank 0 from rank 1 timed out after "
                                  "400 ms: rank 1 sent nothing; rank 1 does not answer (stopped, "
                                  "or busy outside communication)"),
                 "recv from a rank outside the comm: \"%s\"", rt_comm_error(c));
        CC_CHECK(rep, !rt_comm_stuck(c), "stuck after a receive that saw nothing");
        MPI_Send(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
        break;
    case 1:
        MPI_Recv(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case 2:
        CC_CHECK(rep, rt_recv(c, 3, buf, 8) == -1 &&
                          !strcmp(rt_comm_error(c), "recv on rank 2 from rank 3 timed out after "
                                  "400 ms: rank 3 sent nothing; it answers, waiting in another "
                                  "operation (do the ranks run the same plan?)"),
                 "recv from a rank waiting in the comm: \"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_send(c, 3, msg, 8) == 0, "send after the timeout: %s", rt_comm_error(c));
        break;
    case 3:
        CC_CHECK(rep, rt_recv(c, 2, buf, 8) == 0 && !memcmp(buf, msg, 8), "recv from rank 2: %s",
                 rt_comm_error(c));
        break;
    }
}

/* An all_reduce over all four ranks on the same comm, which rank 3 joins
 * only when ranks 0 to 2 let it go: they time out naming member 3,
 * which does not answer; their comm fails (a later call says the same)
 * and is stuck. MPI still holds their all_reduce (a large one, MPI's
 * nonblocking collective: a small one is a direct exchange whose sum is
 * taken after the wait): once rank 3 joins, it completes in the
 * background and writes its sum into their buffers, which is why a stuck
 * comm's buffers must be kept. */
static void check_collective_timeout(rt_comm *c, rt_group *g, cc_report *rep)
{
    enum { N = 32768 }; /* 128 KB: past the direct exchange */
    static float v[N];
    for (int i = 0; i < N; i++)
        v[i] = (float)rep->rank + 1;
    int go = 1;
    if (rep->rank < 3) {
        char want[256];
        snprintf(want, sizeof want, "timed out after 400 ms in all_reduce over axes (x) (group "
                 "of 4 ranks, member %lld): member 3 (rank 3) does not answer (stopped, or busy "
                 "outside communication)", (long long)rep->rank);
        CC_CHECK(rep, rt_all_reduce(g, v, N, RT_F32) == -1 && !strcmp(rt_comm_error(c), want),
                 "all_reduce without rank 3: \"%s\"", rt_comm_error(c));
        CC_CHECK(rep, rt_comm_stuck(c), "not stuck after the all_reduce's timeout");
        CC_CHECK(rep, rt_barrier(g) == -1 && !strcmp(rt_comm_error(c), want),
                 "barrier after the timeout: \"%s\"", rt_comm_error(c));
        MPI_Send(&go, 1, MPI_INT, 3, 99, MPI_COMM_WORLD);
    } else {
        for (int r = 0; r < 3; r++) /* once all three have asked it and given up */
            MPI_Recv(&go, 1, MPI_INT, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CC_CHECK(rep, rt_all_reduce(g, v, N, RT_F32) == 0, "late all_reduce: %s",
                 rt_comm_error(c));
    }
    MPI_Barrier(MPI_COMM_WORLD); /* MPI progresses the stuck all_reduces meanwhile */
    CC_CHECK(rep, v[0] == 10 && v[N - 1] == 10, "the all_reduce's sum: %g, %g", v[0], v[N - 1]);
}

/* rt_comm_abort under mpi fails this rank's comm and returns: later calls
 * return "rank 1 failed: why"; the job goes on. */
static void check_abort(cc_report *rep)
{
    su_status err = {SU_OK, ""};
    rt_mesh_desc m4 = {1, {4}, {"x"}};
    rt_comm *c = rt_mpi_comm_new(&m4, 0, &err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new: %s", err.msg);
    if (!c)
        return;
    if (rep->rank == 1) {
        uint8_t b[4] = {0};
        rt_comm_abort(c, "out of memory in matmul");
        CC_CHECK(rep, rt_send(c, 0, b, 4) == -1 &&
                          !strcmp(rt_comm_error(c), "rank 1 failed: out of memory in matmul"),
                 "send after the abort: \"%s\"", rt_comm_error(c));
    }
    rt_comm_free(c);
}

static void check_timeouts(cc_report *rep)
{
    su_status err = {SU_OK, ""};
    rt_mesh_desc m4 = {1, {4}, {"x"}};
    MPI_Barrier(MPI_COMM_WORLD); /* the 400 ms start together */
    rt_comm *c = rt_mpi_comm_new(&m4, rep->rank == 3 ? 10000 : 400, &err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new with a timeout: %s", err.msg);
    if (!c)
        return;
    uint8_t x = 0;
    rt_group *g = NULL;
    CC_CHECK(rep, rt_comm_group(c, &x, 1, &g) == 0, "group: %s", rt_comm_error(c));
    if (g) {
        check_p2p_timeouts(c, rep);
        MPI_Barrier(MPI_COMM_WORLD); /* ranks 0 to 2 time out together, answering each other */
        check_collective_timeout(c, g, rep);
    }
    rt_comm_free(c);
    check_abort(rep);
}

/* Wrong sizes fail on every rank alike, before any collective call. */
static void check_mismatch(cc_report *rep)
{
    su_status err = {SU_OK, ""};
    rt_mesh_desc three = {1, {3}, {"dp"}};
    CC_CHECK(rep, rt_mpi_comm_new(&three, 0, &err) == NULL &&
                      strcmp(err.msg, "the plan's mesh dp=3 has 3 ranks, but MPI started 4 "
                                  "processes: run mpirun -np 3") == 0,
             "mesh of 3 ranks: \"%s\"", err.msg);
    rt_mesh_desc eight = {2, {2, 4}, {"dp", "tp"}};
    CC_CHECK(rep, rt_mpi_comm_new(&eight, 0, &err) == NULL &&
                      strcmp(err.msg, "the plan's mesh dp=2 x tp=4 has 8 ranks, but MPI started 4 "
                                  "processes: run mpirun -np 8") == 0,
             "mesh of 8 ranks: \"%s\"", err.msg);
    rt_mesh_desc one = {0, {0}, {NULL}};
    CC_CHECK(rep, rt_mpi_comm_new(&one, 0, &err) == NULL &&
                      strcmp(err.msg, "the plan's mesh (no axes) has 1 rank, but MPI started 4 "
                                  "processes: run mpirun -np 1") == 0,
             "mesh of 1 rank: \"%s\"", err.msg);
}

int main(int argc, char **argv)
{
    cc_report rep = {0};
    su_status err = {SU_OK, ""};
    rt_mesh_desc m22 = {2, {2, 2}, {"dp", "tp"}};
    /* before MPI_Init: a clear error, no crash */
    rep.checks++;
    if (rt_mpi_comm_new(&m22, 0, &err) != NULL || err.kind != SU_USAGE ||
        strcmp(err.msg, "MPI is not initialised: the comm 'mpi' needs MPI initialised first "
               "(MPI_Init, or shardc_mpi_init)") != 0)
        cc_fail(&rep, __FILE__, __LINE__, "before MPI_Init: \"%s\"", err.msg);
    leaks_ignored(true);
    MPI_Init(&argc, &argv);
    leaks_ignored(false);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rep.rank = rank;
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "test_comm_mpi needs 4 processes (mpirun -np 4), not %d\n", size);
        leaks_ignored(true);
        MPI_Finalize();
        return 1;
    }
    check_mesh(&m22, &rep);
    rt_mesh_desc m4 = {1, {4}, {"x"}};
    check_mesh(&m4, &rep);
    check_p2p_mismatch(&m4, &rep);
    check_mismatch(&rep);
    check_timeouts(&rep);
    int mine[2] = {rep.checks, rep.fails}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d checks on 4 ranks, %d failed\n", all[0], all[1]);
    leaks_ignored(true);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
