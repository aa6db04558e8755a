/* test_reduce_max.c: the pieces of all_reduce with max and iota that the
 * vocabulary-parallel decompositions (passes/partition_split.c) rely on, below
 * the lit and run tests: the plan's shape rules (rt_instr_check: the
 * operation in all_reduce's dim, 0 or 1 only; iota an i32 vector), the
 * CPU kernel of iota and the IR's inference of iota. The collective
 * itself: comm_checks.h (local and mpi); plans holding it, written by
 * shardc and run by shardrun: tests/lit/partition and
 * run/vocab_parallel. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir/ir.h"
#include "runtime/cpu/cpu.h"
#include "runtime/plan/plan.h"

static rt_plan mesh_tp2(void)
{
    static char tp[] = "tp";
    rt_plan p;
    memset(&p, 0, sizeof p);
    p.naxes = 1;
    p.axis_name[0] = tp;
    p.axis_size[0] = 2;
    p.stage_axis = -1;
    p.nstages = 1;
    p.init_module = -1;
    return p;
}

static rt_type vec(int dtype, int64_t n)
{
    rt_type t = {.dtype = (uint8_t)dtype, .rank = 1};
    t.dim[0] = n;
    return t;
}

static void test_all_reduce_rule(void)
{
    rt_plan p = mesh_tp2();
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = RT_OP_ALL_REDUCE;
    in.nin = 1;
    in.in_t[0] = in.out_t = vec(RT_F32, 8);
    in.out = 1;
    in.naxes = 1;
    su_status err = {SU_OK, ""};
    for (int64_t red = RT_REDUCE_SUM; red <= RT_REDUCE_MAX; red++) {
        in.dim = red;
        CHECK(rt_instr_check(&p, &in, &err));
    }
    in.dim = 2;
    CHECK(!rt_instr_check(&p, &in, &err));
    CHECK_STR(err.msg, "reduce operation 2 is unknown (0 sum, 1 max)");
    in.dim = -1;
    CHECK(!rt_instr_check(&p, &in, &err));
}

static void test_iota(void)
{
    rt_plan p = mesh_tp2();
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = RT_OP_IOTA;
    in.out_t = vec(RT_I32, 5);
    su_status err = {SU_OK, ""};
    CHECK(rt_instr_check(&p, &in, &err));
    int32_t buf[5] = {9, 9, 9, 9, 9};
    void *bufs[1] = {buf};
    rt_cpu_ctx ctx = {.axis_size = p.axis_size, .naxes = 1};
    CHECK_INT(rt_cpu_run(&ctx, &in, bufs, &err), 0);
    for (int i = 0; i < 5; i++)
        CHECK_INT(buf[i], i);
    in.out_t = vec(RT_F32, 5);
    CHECK(!rt_instr_check(&p, &in, &err));
    CHECK_STR(err.msg, "the result is f32[5]; iota makes an i32 vector");

    ir_attrs a = {.nlist = 1, .list = {16}};
    ir_type t;
    char why[256] = "";
    CHECK(ir_infer(NULL, IR_IOTA, NULL, 0, &a, &t, why, sizeof why));
    CHECK_INT(t.dtype, IR_I32);
    CHECK_INT(t.rank, 1);
    CHECK_INT(t.dim[0], 16);
    a.nlist = 2;
    CHECK(!ir_infer(NULL, IR_IOTA, NULL, 0, &a, &t, why, sizeof why));
    CHECK_STR(why, "iota needs a shape of one dimension of size >= 1");
}

int main(void)
{
    test_all_reduce_rule();
    test_iota();
    return CHECK_DONE();
}
