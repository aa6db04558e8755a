/* test_nccl_checks.c: the parts of the nccl communicator that need no GPU
 * (runtime/comm/comm_nccl.h, runtime/comm/nccl_api.h): the rank -> GPU map check,
 * the watchdog's decision on a fake clock, and the loading of NCCL (a
 * library that is not there; the real libnccl.so.2 where it is installed,
 * whose ncclGetVersion and ncclGetErrorString need no GPU). */
#include "shardc.h"
#include "runtime/comm/comm_nccl.h"
#include "runtime/comm/nccl_api.h"
#include "check.h"

#include <stdlib.h>

static void map_ok(void)
{
    su_status err = {SU_OK, ""};
    const char *host[] = {"a", "a", "b", "b"}, *bus[] = {"0000:01:00.0", "0000:02:00.0",
                                                         "0000:01:00.0", "0000:02:00.0"};
    int local[] = {0, 1, 0, 1}, ndev[] = {2, 2, 4, 4};
    CHECK_INT(rt_nccl_check_map(4, host, local, ndev, bus, &err), 0);
    CHECK_STR(err.msg, "");
    /* one rank alone on a host with one GPU */
    const char *h1[] = {"solo"}, *b1[] = {"0000:3b:00.0"};
    int l1[] = {0}, n1[] = {1};
    CHECK_INT(rt_nccl_check_map(1, h1, l1, n1, b1, &err), 0);
}

static void map_too_many(void)
{
    su_status err = {SU_OK, ""};
    /* host b runs 3 ranks on 2 GPUs (local rank 2 has no bus id) */
    const char *host[] = {"a", "b", "b", "b"}, *bus[] = {"0000:01:00.0", "0000:01:00.0",
                                                         "0000:02:00.0", ""};
    int local[] = {0, 0, 1, 2}, ndev[] = {1, 2, 2, 2};
    CHECK_INT(rt_nccl_check_map(4, host, local, ndev, bus, &err), -1);
    CHECK_STR(err.msg, "host b runs local ranks 0 to 2 (3 ranks) but has 2 GPUs: the nccl "
                   "communicator needs one GPU per rank");
    /* no GPU at all on the host */
    const char *h1[] = {"cpu1"}, *b1[] = {""};
    int l1[] = {0}, n1[] = {0};
    CHECK_INT(rt_nccl_check_map(1, h1, l1, n1, b1, &err), -1);
    CHECK_STR(err.msg, "host cpu1 runs local ranks 0 to 0 (1 rank) but has 0 GPUs: the nccl "
                   "communicator needs one GPU per rank");
}

static void map_shared(void)
{
    su_status err = {SU_OK, ""};
    /* two local ranks whose devices are one GPU (the same bus id: e.g.
     * CUDA_VISIBLE_DEVICES differs per rank) */
    const char *host[] = {"a", "a", "b"}, *bus[] = {"0000:01:00.0", "0000:01:00.0",
                                                    "0000:01:00.0"};
    int local[] = {0, 1, 0}, ndev[] = {2, 2, 1};
    CHECK_INT(rt_nccl_check_map(3, host, local, ndev, bus, &err), -1);
    CHECK_STR(err.msg, "ranks 0 and 1 (local ranks 0 and 1 on host a) would share the GPU at PCI "
                   "bus 0000:01:00.0");
    /* the same bus id on two hosts is two GPUs */
    const char *h2[] = {"a", "b"}, *b2[] = {"0000:01:00.0", "0000:01:00.0"};
    int l2[] = {0, 0}, n2[] = {1, 1};
    CHECK_INT(rt_nccl_check_map(2, h2, l2, n2, b2, &err), 0);
}

/* The watchdog's decision, the clock given. */
static void watchdog(void)
{
    double start[] = {10.0, 12.0, 11.0};
    bool done[] = {false, false, false};
    CHECK_INT(rt_nccl_expired(0, start, done, 100.0, 5.0), -1);
    CHECK_INT(rt_nccl_expired(3, start, done, 14.0, 5.0), -1);  /* 4 s: none */
    CHECK_INT(rt_nccl_expired(3, start, done, 15.0, 5.0), -1);  /* exactly 5 s: not past */
    CHECK_INT(rt_nccl_expired(3, start, done, 15.5, 5.0), 0);   /* op 0, the oldest */
    done[0] = true;
    CHECK_INT(rt_nccl_expired(3, start, done, 15.5, 5.0), -1);  /* op 2 has waited 4.5 s */
    CHECK_INT(rt_nccl_expired(3, start, done, 16.5, 5.0), 2);   /* then it is late */
    done[2] = true;
    CHECK_INT(rt_nccl_expired(3, start, done, 16.5, 5.0), -1);
    CHECK_INT(rt_nccl_expired(3, start, done, 1e9, 5.0), 1);
    done[1] = true;
    CHECK_INT(rt_nccl_expired(3, start, done, 1e9, 5.0), -1);   /* all done: never */
    /* a clock that advances by steps, as the thread polls: the op issued at
     * t=0 with a 2 s timeout is first reported at the first look past 2 s */
    double s1[] = {0.0};
    bool d1[] = {false};
    double t = 0;
    while (rt_nccl_expired(1, s1, d1, t, 2.0) < 0 && t < 100)
        t += 0.25;
    CHECK(t > 2.0 && t <= 2.25);
}

static void loading(void)
{
    rt_nccl_api api;
    su_status err = {SU_OK, ""};
    CHECK_INT(rt_nccl_open("libnccl-shardc-test-missing.so.2", &api, &err), -1);
    CHECK(!strncmp(err.msg, "cannot load libnccl-shardc-test-missing.so.2: ", 46));
    char buf[256];
    CHECK_STR(rt_nccl_describe(NULL, 3, buf, sizeof buf),
              "ncclInternalError (no description)");
    CHECK(!rt_nccl_check(NULL, 2, "AllReduce(...)", "x.c", 7, &err));
    CHECK_STR(err.msg, "x.c:7: ncclAllReduce: ncclSystemError (no description)");
    CHECK(rt_nccl_check(NULL, RT_NCCL_IN_PROGRESS, "AllReduce(...)", "x.c", 7, &err));
    if (rt_nccl_open("libnccl.so.2", &api, &err) != 0) {
        printf("libnccl.so.2 not loadable here (%s): its table is not checked\n", err.msg);
        return;
    }
    int v = 0;
    CHECK_INT(api.GetVersion(&v), RT_NCCL_SUCCESS);
    CHECK(v >= RT_NCCL_MIN_VERSION);
    CHECK(api.GetErrorString(RT_NCCL_IN_PROGRESS) != NULL);
    printf("libnccl.so.2: NCCL %d.%d.%d, %s\n", v / 10000, v / 100 % 100, v % 100,
           rt_nccl_describe(&api, 5, buf, sizeof buf));
    CHECK(!strncmp(buf, "ncclInvalidUsage (", 18));
}

/* The public check: NCCL here needs the driver too, and this machine
 * (CI) has none, or NCCL is missing: either way "no usable NCCL". */
static void public_check(void)
{
    char *e = NULL;
    CHECK(shardc_comm_check(NULL, &e) == SHARDC_OK);
    CHECK(shardc_comm_check("local", &e) == SHARDC_OK);
    CHECK(shardc_comm_check("mpi", &e) == SHARDC_OK);
    CHECK(shardc_comm_check("nccx", &e) == SHARDC_ERR_USAGE);
    CHECK_STR(e, "unknown communicator 'nccx' (local, mpi, nccl)");
    shardc_free(e);
    e = NULL;
    su_status why;
    if (rt_cu_probe(&why) == RT_CU_OK) {
        printf("a GPU is here: shardc_comm_check(\"nccl\") not checked for failure\n");
        return;
    }
    CHECK(shardc_comm_check("nccl", &e) == SHARDC_ERR_NO_GPU);
    CHECK(e && !strncmp(e, "no usable NCCL: ", 16));
    printf("shardc_comm_check(\"nccl\"): %s\n", e ? e : "");
    shardc_free(e);
}

int main(void)
{
    public_check();
    map_ok();
    map_too_many();
    map_shared();
    watchdog();
    loading();
    return CHECK_DONE();
}
