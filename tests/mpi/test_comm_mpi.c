/* test_comm_mpi.c: the MPI communicator on 4 processes (ctest runs it under
 * mpirun -np 4): every collective over every kind of group of the mesh 2x2
 * and of the mesh 4, and point to point (tests/unit/comm_checks.h, whose
 * expectations the test computes itself), a receive of the wrong size, and
 * the errors of a mesh that does not match the world.
 * Every rank prints its failures (naming the rank and the check); rank 0
 * prints the totals over all ranks, and every rank exits nonzero if any
 * rank failed. rt_comm_abort is not tested here: it ends the job. */
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
    char err[256] = "";
    rt_comm *c = rt_mpi_comm_new(m, err, sizeof err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new: %s", err);
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
    char err[256] = "";
    rt_comm *c = rt_mpi_comm_new(m, err, sizeof err);
    CC_CHECK(rep, c != NULL, "rt_mpi_comm_new: %s", err);
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

/* Wrong sizes fail on every rank alike, before any collective call. */
static void check_mismatch(cc_report *rep)
{
    char err[256] = "";
    rt_mesh_desc three = {1, {3}, {"dp"}};
    CC_CHECK(rep, rt_mpi_comm_new(&three, err, sizeof err) == NULL &&
                      strcmp(err, "the plan's mesh dp=3 has 3 ranks, but MPI started 4 "
                                  "processes: run mpirun -np 3") == 0,
             "mesh of 3 ranks: \"%s\"", err);
    rt_mesh_desc eight = {2, {2, 4}, {"dp", "tp"}};
    CC_CHECK(rep, rt_mpi_comm_new(&eight, err, sizeof err) == NULL &&
                      strcmp(err, "the plan's mesh dp=2 x tp=4 has 8 ranks, but MPI started 4 "
                                  "processes: run mpirun -np 8") == 0,
             "mesh of 8 ranks: \"%s\"", err);
    rt_mesh_desc one = {0, {0}, {NULL}};
    CC_CHECK(rep, rt_mpi_comm_new(&one, err, sizeof err) == NULL &&
                      strcmp(err, "the plan's mesh (no axes) has 1 rank, but MPI started 4 "
                                  "processes: run mpirun -np 1") == 0,
             "mesh of 1 rank: \"%s\"", err);
}

int main(int argc, char **argv)
{
    cc_report rep = {0};
    char err[256] = "";
    rt_mesh_desc m22 = {2, {2, 2}, {"dp", "tp"}};
    /* before MPI_Init: a clear error, no crash */
    rep.checks++;
    if (rt_mpi_comm_new(&m22, err, sizeof err) != NULL ||
        strcmp(err, "MPI is not initialised: call MPI_Init before rt_mpi_comm_new") != 0)
        cc_fail(&rep, __FILE__, __LINE__, "before MPI_Init: \"%s\"", err);
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
    int mine[2] = {rep.checks, rep.fails}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d checks on 4 ranks, %d failed\n", all[0], all[1]);
    leaks_ignored(true);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
