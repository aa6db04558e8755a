/* test_plan_pack.c: a pipeline stage's instructions packed for the roll
 * (codegen.h's cg_packed; codegen/plan_roll.c). Two instructions are the
 * same but for their buffers and offset (cg_instr_same) exactly when the
 * roll may take one for the other: every other field the plan file holds
 * counts, and whether each operand is a buffer; what it does not hold
 * (operand types past nin, list entries past nlist) does not. Equal
 * instructions hash alike. Packed, instructions of one shape share it,
 * and each unpacks to itself, byte for byte, through the shape table's
 * regrowth (10,000 instructions of 300 shapes). cg_pack gives the shape
 * it took, and an instruction appended by that shape and its buffers
 * (cg_pack_shape, as plan_build.c lowers a task's instance like the one
 * before) is the record cg_pack makes of it. */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/codegen.h"
#include "runtime/plan/plan.h"

static rt_type mat(int64_t r, int64_t c)
{
    rt_type t;
    memset(&t, 0, sizeof t);
    t.dtype = RT_F32;
    t.rank = 2;
    t.dim[0] = r;
    t.dim[1] = c;
    return t;
}

/* A matmul of buffers a and b into c at line 7, column 3. */
static rt_instr matmul(int32_t a, int32_t b, int32_t c)
{
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)rt_op_lookup("matmul");
    in.nin = 2;
    in.in[0] = a;
    in.in[1] = b;
    in.in_t[0] = mat(4, 8);
    in.in_t[1] = mat(8, 16);
    in.out = c;
    in.out_t = mat(4, 16);
    in.io = -1;
    in.line = 7;
    in.col = 3;
    return in;
}

static bool same(const rt_instr *a, const rt_instr *b)
{
    bool s = cg_instr_same(a, b);
    CHECK(!s || cg_instr_hash(a) == cg_instr_hash(b)); /* equal: one hash */
    return s;
}

static void test_same(void)
{
    rt_instr a = matmul(3, 4, 5), b = matmul(8, 9, 10);
    b.offset = 64;
    CHECK(same(&a, &b)); /* buffers and offset aside */
    rt_instr c = a;
    c.value = 0.5;
    CHECK(!same(&a, &c));
    c = a;
    c.in_t[1].dim[1] = 32;
    CHECK(!same(&a, &c));
    c = a;
    c.in[1] = -1; /* no buffer */
    CHECK(!same(&a, &c));
    c = a;
    c.out = -1;
    CHECK(!same(&a, &c));
    c = a;
    c.line = 8;
    CHECK(!same(&a, &c));
    c = a;
    c.dim = 1;
    CHECK(!same(&a, &c));
    c = a;
    c.nlist = 1;
    c.list[0] = 1;
    CHECK(!same(&a, &c));
    rt_instr d = c;
    d.list[3] = 9; /* past nlist: not in the file */
    CHECK(same(&c, &d));
    d = a;
    d.in_t[4] = mat(2, 2); /* past nin */
    d.in_t[0].dim[5] = 7;  /* past the rank */
    CHECK(same(&a, &d));
    c = a;
    c.wd = 0.01;
    CHECK(!same(&a, &c));
}

static void test_pack(void)
{
    jmp_buf oom;
    cg_packed P;
    memset(&P, 0, sizeof P);
    if (setjmp(oom)) {
        CHECK(!"out of memory");
        cg_packed_free(&P);
        return;
    }
    enum { N = 10000, SHAPES = 300 };
    rt_instr *want = malloc(N * sizeof *want);
    CHECK(want != NULL);
    if (!want)
        return;
    for (int k = 0; k < N; k++) {
        want[k] = matmul(k % 97, k % 89 + 1, k);
        want[k].line = k % SHAPES + 1; /* the shape */
        want[k].offset = (int64_t)k * 256;
        int32_t shape = cg_pack(&P, &want[k], &oom);
        CHECK_INT(shape, k < SHAPES ? k : P.ins[k % SHAPES].shape); /* new shapes in order */
    }
    CHECK_INT(P.n, N);
    CHECK_INT(P.nshape, SHAPES);
    int bad = 0;
    for (int k = 0; k < N; k++) {
        rt_instr got;
        cg_unpack(&P, k, &got);
        bad += memcmp(&got, &want[k], sizeof got) != 0;
        bad += P.ins[k].shape != P.ins[k % SHAPES].shape;
    }
    CHECK_INT(bad, 0);
    cg_packed_free(&P);
    CHECK(P.n == 0 && !P.ins && !P.shape);
    free(want);
}

/* By shape: the same records as cg_pack's, the operands past nin 0. */
static void test_pack_shape(void)
{
    jmp_buf oom;
    cg_packed P, Q;
    memset(&P, 0, sizeof P);
    memset(&Q, 0, sizeof Q);
    if (setjmp(oom)) {
        CHECK(!"out of memory");
        cg_packed_free(&P);
        cg_packed_free(&Q);
        return;
    }
    rt_instr a = matmul(1, 2, 3), b = matmul(11, 12, 13), c = matmul(4, 5, 6);
    b.offset = 512;
    c.line = 9; /* another shape */
    int32_t sa = cg_pack(&P, &a, &oom), sc = cg_pack(&P, &c, &oom);
    CHECK_INT(cg_pack(&P, &b, &oom), sa);
    cg_pack(&Q, &a, &oom);
    cg_pack(&Q, &c, &oom);
    int32_t in[2] = {11, 12};
    cg_pack_shape(&Q, sa, in, 2, 13, 512, &oom);
    CHECK(sa != sc);
    CHECK_INT(Q.n, 3);
    CHECK(memcmp(&Q.ins[2], &P.ins[2], sizeof Q.ins[2]) == 0);
    for (int i = 2; i < RT_MAX_IN; i++)
        CHECK_INT(Q.ins[2].in[i], 0);
    rt_instr got;
    cg_unpack(&Q, 2, &got);
    CHECK(memcmp(&got, &b, sizeof got) == 0);
    cg_packed_free(&P);
    cg_packed_free(&Q);
}

int main(void)
{
    test_same();
    test_pack();
    test_pack_shape();
    return CHECK_DONE();
}
