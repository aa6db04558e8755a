/* fuzz_plan.c: libFuzzer target on the plan reader (runtime/plan/plan_io.c).
 * Any input may be rejected, but with a message naming the source; a plan
 * that reads must write back to exactly the bytes it was read from (the
 * file form is canonical), and those bytes must read again and write the
 * same once more. A plan in loop form expands, and the plain plan writes
 * and reads.
 *
 * Fuzz mode: an input starting with the byte 'F' is the rest of it with
 * every CRC and the header's total size recomputed before reading. Random
 * mutations of a plain plan almost never get past the checksums, so the
 * decoder and the validator behind them would go unexplored; the 'F' seeds
 * in corpus/plan/ let the fuzzer reach them. Inputs without the 'F' still
 * test the checksums and the header themselves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan/plan.h"
#include "support/support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rd(const uint8_t *b, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void wr(uint8_t *b, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        b[i] = (uint8_t)(v >> 8 * i);
}

/* Fuzz mode's repair: each section's CRC, as far as the section headers
 * the header's count announces lie inside the input, then the total size
 * and the header's CRC. Lengths stay as they are. */
static void fix_up(uint8_t *b, size_t n)
{
    if (n < 28)
        return;
    uint64_t nsec = rd(b + 12, 4);
    size_t pos = 28;
    for (uint64_t i = 0; i < nsec && n - pos >= 20; i++) {
        uint64_t len = rd(b + pos + 8, 8);
        if (len > n - pos - 20)
            break;
        wr(b + pos + 16, su_crc32(0, b + pos + 20, (size_t)len), 4);
        pos += 20 + (size_t)len;
    }
    wr(b + 16, n, 8);
    wr(b + 24, su_crc32(0, b, 24), 4);
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_plan: %s\n%s\n", what, detail);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    su_status err = {SU_OK, ""};
    uint8_t *copy = NULL;
    if (size > 0 && data[0] == 'F') {
        /* an exact-size copy, so that ASan still sees reads past the end */
        copy = malloc(size - 1 ? size - 1 : 1);
        if (!copy)
            return 0;
        memcpy(copy, data + 1, size - 1);
        fix_up(copy, size - 1);
        data = copy;
        size--;
    }
    rt_plan *p = rt_plan_read(data, size, "fuzz.plan", &err);
    if (!p) {
        if (strncmp(err.msg, "fuzz.plan: ", 11) != 0 || strlen(err.msg) <= 11)
            fail("a rejection without a proper message", err.msg);
        free(copy);
        return 0;
    }
    uint8_t *a = NULL, *b = NULL;
    size_t na, nb;
    if (!rt_plan_write(p, &a, &na, &err))
        fail("a plan that was read does not write", err.msg);
    if (na != size || memcmp(a, data, size) != 0)
        fail("writing a plan that was read gives other bytes", "");
    rt_plan *q = rt_plan_read(a, na, "rewritten.plan", &err);
    if (!q)
        fail("a written plan does not read", err.msg);
    if (!rt_plan_write(q, &b, &nb, &err))
        fail("a plan read from a written one does not write", err.msg);
    if (nb != na || memcmp(a, b, na) != 0)
        fail("write(read(write(p))) differs from write(p)", "");
    /* the loop form, validated on an expanded copy, expands; the plain
     * plan writes and reads */
    free(b);
    b = NULL;
    if (!rt_plan_expand(q, &err)) {
        if (err.kind != SU_NOMEM)
            fail("a plan that validates does not expand", err.msg);
    } else {
        rt_plan *e = NULL;
        if (!rt_plan_write(q, &b, &nb, &err) || !(e = rt_plan_read(b, nb, "plain.plan", &err)))
            fail("an expanded plan does not write and read", err.msg);
        rt_plan_free(e);
    }
    rt_plan_free(q);
    rt_plan_free(p);
    free(b);
    free(a);
    free(copy);
    return 0;
}
