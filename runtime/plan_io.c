/* plan_io.c: the plan's file form (plan.h): the writer, the reader, the
 * validator both run, and the shape rule of every opcode on local shapes.
 *
 * Payload encodings (little-endian; u8/u16/u32/u64 and i32/i64 of that
 * width, f64 = the IEEE-754 bits as a u64, str = u32 length + the bytes, no
 * NUL inside and no terminator):
 *   type    u8 dtype, u8 rank (<= 8), rank x i64 dim
 *   MESH    u32 naxes (<= 8), naxes x (str name, i64 size),
 *           i32 stage_axis, i32 nstages, str source
 *   IOTB    u32 nio, then per entry:
 *             u8 kind, str name, type,
 *             per dim of the type: u8 naxes (<= 8), naxes x u8 mesh axis,
 *             u16 partial, u8 init, f64 init_a, f64 init_b,
 *             str init_param (empty but for RT_INIT_PARAM),
 *             i32 stage, i32 buffer, i32 update;
 *           then i32 loss (an entry index, or -1)
 *   PROG    u32 nbuf, i64 arena bytes, nbuf x (i64 offset, i64 bytes), u32 ninstr,
 *           then per instruction:
 *             u16 op, u8 nin (<= 4), nin x (i32 in, type in_t),
 *             i32 out, type out_t, i32 io, f64 value, i64 axis,
 *             u8 keepdims, u8 causal, f64 eps, u8 nlist (<= 8),
 *             nlist x i64 list, i64 dim, i64 dim2, u8 naxes (<= 8),
 *             naxes x u8 axes, f64 lr, f64 momentum, f64 beta1,
 *             f64 beta2, f64 wd, i64 offset, i32 line, i32 col
 *   KERN    u32 nmodules, then per module (blob = u64 length + the bytes):
 *             str entry, u32 ncubin, ncubin x (str arch, blob cubin),
 *             str PTX arch, blob PTX (text, no NUL);
 *           u32 nkernels, then per kernel:
 *             i32 stage, str name, i32 module, u8 strategy, u8 epilogue, i64 grid,
 *             i32 block, i32 shared bytes, u32 nin, u32 nout,
 *             (nin + nout) x (i32 buffer, type),
 *             u32 ninstr, ninstr x i32 instruction
 *   REPT    the report's bytes as they are (no NUL)
 * A send's out is -1 (0xffffffff as an i32). Counts (u32) are at most
 * INT32_MAX. Entries past a count (dims past a rank, operands past nin,
 * ...) are not stored and read back as 0, and the writer refuses a plan
 * that fails rt_plan_validate, so the form is canonical: writing a plan
 * that was read gives back the same bytes. Version 2 added the update and
 * loss fields, the optimizer attributes and a fourth operand, then send and
 * recv, then iota (appended opcodes: older readers refuse them as unknown),
 * and all_reduce's operation in its otherwise unused dim (0 sum, 1 max:
 * earlier plans hold 0 there, so they read as before). Version 3 filled
 * KERN, which held only a count of 0 before. Version 4 added each I/O
 * entry's init_param (the f32 master copy of a bf16 or f16 param is a state
 * made from that param), and each kernel's epilogue byte (matmul kernels
 * through cuBLASLt, plan.h). Version 5 lets attention and attn_probs take
 * the query positions of a causal attention over split queries as an
 * optional last operand (plan_ops.def: min and max operand counts; the
 * bytes are laid out as before), and appends check_ids and check_labels.
 * Version 6 adds the model's file name (MESH) and each instruction's line
 * and column in it, which runtime errors name.
 * Older versions are refused, not converted (recompiling is cheap).
 */
#include "plan.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    HDR_SIZE = 28,  /* magic 8, version 4, section count 4, total 8, CRC 4 */
    SEC_HDR = 20,   /* tag 4, reserved 4, payload length 8, CRC 4 */
    IO_MIN = 38,    /* the smallest IOTB entry: a scalar with an empty name */
    INSTR_MIN = 113, /* the smallest instruction: no operands, list or axes */
    PROG_MIN = 8,   /* the smallest PROG payload: two counts of 0 */
    MODULE_MIN = 20, /* the smallest module: empty entry, no cubin, empty PTX */
    KERNEL_MIN = 42, /* the smallest kernel: empty name and lists */
    MAX_CUBINS = 64, /* architectures of one module */
    NSEC_FIXED = 4, /* MESH, IOTB, KERN, REPT; plus one PROG per stage */
    TYPE_LEN = 200, /* "bf16[" + 8 x (", " + 20 digits) + "]" fits */
    MSG_LEN = 1024, /* an inner message before a prefix is added */
};

#define MAX_RANKS ((int64_t)1 << 31)

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

static bool fail(char *err, size_t errlen, const char *fmt, ...) PRINTF(3, 4);

/* Writes the message and returns false, so a check reads `return fail(...)`. */
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* ---- CRC-32 ---- */

/* The reflected polynomial 0xEDB88320, four bits at a time. */
static const uint32_t crc_nibble[16] = {
    0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4,
    0x4DB26158, 0x5005713C, 0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C,
    0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C,
};

static uint32_t crc_bytes(uint32_t crc, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
    }
    return crc;
}

/* Shorter buffers take the nibble loop: building the eight tables of
 * slicing-by-8 costs about as much as 1 KiB by nibbles (measured). */
#define CRC_SLICE_MIN 4096

/* Slicing-by-8 (Intel's, as zlib's): t[k][x] is the CRC register's change
 * for byte x followed by k zero bytes, so eight bytes take eight lookups,
 * about 13 times as fast as the nibble loop (1.9 GB/s against 0.14 here):
 * checkpoint files of gigabytes are summed when written and read. The
 * tables are built on the stack for each long buffer (no global state).
 * Little-endian host, as the rest of the runtime. */
static uint32_t crc_slice8(uint32_t crc, const uint8_t *b, size_t n)
{
    uint32_t t[8][256];
    for (uint32_t x = 0; x < 256; x++) {
        uint32_t c = x;
        c = (c >> 4) ^ crc_nibble[c & 15];
        t[0][x] = (c >> 4) ^ crc_nibble[c & 15];
    }
    for (int k = 1; k < 8; k++)
        for (int x = 0; x < 256; x++)
            t[k][x] = (t[k - 1][x] >> 8) ^ t[0][t[k - 1][x] & 0xFF];
    for (; n >= 8; n -= 8, b += 8) {
        uint32_t lo, hi;
        memcpy(&lo, b, 4);
        memcpy(&hi, b + 4, 4);
        lo ^= crc;
        crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
              t[4][lo >> 24] ^ t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^
              t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    }
    return crc_bytes(crc, b, n);
}

uint32_t rt_crc32(uint32_t crc, const void *data, size_t n)
{
    if (n >= CRC_SLICE_MIN)
        return ~crc_slice8(~crc, data, n);
    return ~crc_bytes(~crc, data, n);
}

static uint64_t get_le(const uint8_t *b, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void set_le(uint8_t *b, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        b[i] = (uint8_t)(v >> 8 * i);
}

/* ---- types, shardings, groups: the checks shared by all parts ---- */

static bool is_float(int dtype)
{
    return dtype == RT_F32 || dtype == RT_F16 || dtype == RT_BF16;
}

static bool type_eq(const rt_type *a, const rt_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank && i < RT_MAX_RANK; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

static const char *tstr(char buf[TYPE_LEN], const rt_type *t)
{
    return rt_type_str(t, buf, TYPE_LEN);
}

/* A type the runtime can hold: known dtype, rank 0..8, dims >= 1, a byte
 * count that fits in int64. what names it in the message. */
static bool check_type(const rt_type *t, const char *what, char *err, size_t errlen)
{
    if (t->dtype >= RT_NDTYPES)
        return fail(err, errlen, "%s has an unknown dtype (%d)", what, t->dtype);
    if (t->rank > RT_MAX_RANK)
        return fail(err, errlen, "%s has rank %d; at most %d dimensions are supported", what,
                    t->rank, RT_MAX_RANK);
    int64_t n = rt_dtype_size(t->dtype);
    for (int i = 0; i < t->rank; i++) {
        char b[TYPE_LEN];
        if (t->dim[i] < 1)
            return fail(err, errlen, "%s has a dimension of size %lld: %s", what,
                        (long long)t->dim[i], tstr(b, t));
        if (__builtin_mul_overflow(n, t->dim[i], &n))
            return fail(err, errlen, "%s is too large: %s", what, tstr(b, t));
    }
    return true;
}

/* The size of mesh axis ax, checked against the mesh (rt_instr_check may
 * run on a plan whose mesh was never validated). */
static bool axis_size(const rt_plan *p, int ax, int64_t *size, char *err, size_t errlen)
{
    if (ax >= p->naxes || ax >= RT_MAX_AXES)
        return fail(err, errlen, "mesh axis %d is out of range (the mesh has %d axes)", ax,
                    p->naxes);
    if (p->axis_size[ax] < 1)
        return fail(err, errlen, "mesh axis %d has size %lld", ax, (long long)p->axis_size[ax]);
    *size = p->axis_size[ax];
    return true;
}

/* The local shard of an I/O entry's global type: dim d divided by the
 * product of the sizes of the axes splitting it. Checks the type and the
 * sharding on the way: axes in range, none used twice (partial axes
 * included), every split dim divisible, no axes on dims past the rank. */
static bool io_local(const rt_plan *p, const rt_io *io, rt_type *local, char *err, size_t errlen)
{
    const rt_sharding *sh = &io->sh;
    if (!check_type(&io->type, "the type", err, errlen))
        return false;
    *local = io->type;
    unsigned used = 0;
    for (int d = 0; d < RT_MAX_RANK; d++) {
        if (sh->naxes[d] > RT_MAX_AXES)
            return fail(err, errlen, "dimension %d is split over %d mesh axes; at most %d", d,
                        sh->naxes[d], RT_MAX_AXES);
        if (d >= io->type.rank && sh->naxes[d])
            return fail(err, errlen, "the sharding splits dimension %d of a rank-%d type", d,
                        io->type.rank);
        int64_t g = 1, size = 1;
        for (int k = 0; k < sh->naxes[d]; k++) {
            int ax = sh->axes[d][k];
            if (!axis_size(p, ax, &size, err, errlen))
                return false;
            if (used & (1u << ax))
                return fail(err, errlen, "the sharding uses mesh axis %d twice", ax);
            used |= 1u << ax;
            if (__builtin_mul_overflow(g, size, &g))
                return fail(err, errlen, "dimension %d is split over too many ranks", d);
        }
        if (d < io->type.rank && io->type.dim[d] % g)
            return fail(err, errlen,
                        "dimension %d of size %lld does not divide by %lld, the product of "
                        "the mesh axes splitting it",
                        d, (long long)io->type.dim[d], (long long)g);
        if (d < io->type.rank)
            local->dim[d] /= g;
    }
    if (p->naxes >= 0 && p->naxes < 16 && (io->sh.partial >> p->naxes))
        return fail(err, errlen, "partial over mesh axes 0x%x, but the mesh has %d axes",
                    (unsigned)io->sh.partial, p->naxes);
    if (io->sh.partial & used)
        return fail(err, errlen, "the value is partial over a mesh axis that also splits it");
    return true;
}

/* The number of ranks an instruction's mesh axes span (slice, collectives):
 * 1 to 8 axes, in range, distinct. */
static bool group_size(const rt_plan *p, const rt_instr *in, int64_t *g, char *err,
                       size_t errlen)
{
    if (in->naxes < 1 || in->naxes > RT_MAX_AXES)
        return fail(err, errlen, "needs 1 to %d mesh axes, got %d", RT_MAX_AXES, in->naxes);
    unsigned used = 0;
    *g = 1;
    for (int k = 0; k < in->naxes; k++) {
        int64_t size = 1;
        int ax = in->axes[k];
        if (!axis_size(p, ax, &size, err, errlen))
            return false;
        if (used & (1u << ax))
            return fail(err, errlen, "names mesh axis %d twice", ax);
        used |= 1u << ax;
        if (__builtin_mul_overflow(*g, size, g))
            return fail(err, errlen, "spans too many ranks");
    }
    return true;
}

/* ---- the shape rules (LANGUAGE.md §7, as ir/infer.c decides them) ---- */

/* NumPy broadcasting of two shapes aligned at their ends. */
static bool bcast(const int64_t *x, int nx, const int64_t *y, int ny, int64_t *out, uint8_t *nout)
{
    int n = nx > ny ? nx : ny;
    for (int i = 0; i < n; i++) {
        int64_t dx = i < n - nx ? 1 : x[i - (n - nx)];
        int64_t dy = i < n - ny ? 1 : y[i - (n - ny)];
        if (dx != dy && dx != 1 && dy != 1)
            return false;
        out[i] = dx == 1 ? dy : dx;
    }
    *nout = (uint8_t)n;
    return true;
}

/* The first n operands have one dtype. */
static bool same_dtype_n(const rt_instr *in, int n, char *err, size_t errlen)
{
    for (int i = 1; i < n; i++)
        if (in->in_t[i].dtype != in->in_t[0].dtype)
            return fail(err, errlen, "mixed dtypes: operand 1 is %s, operand %d is %s",
                        rt_dtype_name(in->in_t[0].dtype), i + 1,
                        rt_dtype_name(in->in_t[i].dtype));
    return true;
}

static bool same_dtype(const rt_instr *in, char *err, size_t errlen)
{
    return same_dtype_n(in, in->nin, err, errlen);
}

static bool need_float(const rt_type *t, const char *what, char *err, size_t errlen)
{
    char b[TYPE_LEN];
    if (is_float(t->dtype))
        return true;
    return fail(err, errlen, "%s must be floating-point, got %s", what, tstr(b, t));
}

static bool rule_binary(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    const rt_type *a = &in->in_t[0], *b = &in->in_t[1];
    if (!same_dtype(in, err, errlen) ||
        (in->op == RT_OP_POW && !need_float(a, "the base", err, errlen)))
        return false;
    want->dtype = a->dtype;
    if (!bcast(a->dim, a->rank, b->dim, b->rank, want->dim, &want->rank))
        return fail(err, errlen, "operands do not broadcast: %s and %s", tstr(t1, a),
                    tstr(t2, b));
    return true;
}

/* [..., M, K] @ [..., K, N] -> [..., M, N]; a 1-D operand loses its M or
 * N; the batch dims broadcast. Any dtype, as the IR allows (the CPU backend
 * has an i32 path). */
static bool rule_matmul(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *a = &in->in_t[0], *b = &in->in_t[1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    tstr(t1, a);
    tstr(t2, b);
    if (a->rank == 0 || b->rank == 0)
        return fail(err, errlen, "needs operands of rank 1 or more, got %s @ %s", t1, t2);
    if (!same_dtype(in, err, errlen))
        return false;
    int64_t ka = a->dim[a->rank - 1], kb = b->dim[b->rank == 1 ? 0 : b->rank - 2];
    if (ka != kb)
        return fail(err, errlen, "contracts dimension of size %lld with one of size %lld: %s @ %s",
                    (long long)ka, (long long)kb, t1, t2);
    int na = a->rank >= 2 ? a->rank - 2 : 0, nb = b->rank >= 2 ? b->rank - 2 : 0;
    if (!bcast(a->dim, na, b->dim, nb, want->dim, &want->rank))
        return fail(err, errlen, "batch dimensions do not broadcast: %s @ %s", t1, t2);
    want->dtype = a->dtype;
    if (a->rank >= 2)
        want->dim[want->rank++] = a->dim[a->rank - 2];
    if (b->rank >= 2)
        want->dim[want->rank++] = b->dim[b->rank - 1];
    return true;
}

/* The query positions of a causal attention or attn_probs, operand i
 * when given: i32[S] for q [..., S, d]. */
static bool rule_pos(const rt_instr *in, int i, char *err, size_t errlen)
{
    if (in->nin <= i)
        return true;
    const rt_type *q = &in->in_t[0], *pos = &in->in_t[i];
    char tq[TYPE_LEN], tp[TYPE_LEN];
    if (!in->causal)
        return fail(err, errlen, "takes query positions only when causal");
    if (pos->dtype != RT_I32 || pos->rank != 1 || pos->dim[0] != q->dim[q->rank - 2])
        return fail(err, errlen, "needs query positions i32[S] for q %s, got %s", tstr(tq, q),
                    tstr(tp, pos));
    return true;
}

/* q [..., S, d], k [..., T, d], v [..., T, dv] -> [..., S, dv]; the
 * leading dims agree exactly. */
static bool rule_attention(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    static const char *const names[] = {"q", "k", "v"};
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1], *v = &in->in_t[2];
    char tq[TYPE_LEN], tk[TYPE_LEN], tv[TYPE_LEN];
    for (int i = 0; i < 3; i++)
        if (in->in_t[i].rank < 2)
            return fail(err, errlen, "needs %s of rank 2 or more, got %s", names[i],
                        tstr(tq, &in->in_t[i]));
    if (!same_dtype_n(in, 3, err, errlen) || !need_float(q, "q", err, errlen) ||
        !rule_pos(in, 3, err, errlen))
        return false;
    tstr(tq, q);
    tstr(tk, k);
    tstr(tv, v);
    int r = q->rank;
    bool lead = k->rank == r && v->rank == r;
    for (int i = 0; lead && i < r - 2; i++)
        lead = k->dim[i] == q->dim[i] && v->dim[i] == q->dim[i];
    if (!lead)
        return fail(err, errlen, "needs q, k and v with the same leading dimensions, got %s, %s "
                    "and %s", tq, tk, tv);
    if (q->dim[r - 1] != k->dim[r - 1])
        return fail(err, errlen, "needs q and k with the same last dimension, got %s and %s", tq,
                    tk);
    if (k->dim[r - 2] != v->dim[r - 2])
        return fail(err, errlen, "needs k and v with the same sequence length, got %s and %s", tk,
                    tv);
    *want = *q;
    want->dim[r - 1] = v->dim[r - 1];
    return true;
}

static bool check_axis(const rt_instr *in, char *err, size_t errlen)
{
    char b[TYPE_LEN];
    if (in->axis < 0 || in->axis >= in->in_t[0].rank)
        return fail(err, errlen, "axis %lld is out of range for %s", (long long)in->axis,
                    tstr(b, &in->in_t[0]));
    return true;
}

static bool rule_reduce(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *x = &in->in_t[0];
    if ((in->op == RT_OP_MEAN && !need_float(x, "the operand", err, errlen)) ||
        !check_axis(in, err, errlen))
        return false;
    *want = *x;
    if (in->keepdims) {
        want->dim[in->axis] = 1;
        return true;
    }
    for (int i = (int)in->axis; i + 1 < x->rank; i++)
        want->dim[i] = x->dim[i + 1];
    want->dim[--want->rank] = 0;
    return true;
}

/* layernorm(x, g, b) and rmsnorm(x, g) over the last dim of x. */
static bool rule_norm(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    static const char *const names[] = {"x", "g", "b"};
    const rt_type *x = &in->in_t[0];
    char tx[TYPE_LEN], tp[TYPE_LEN];
    tstr(tx, x);
    if (x->rank < 1)
        return fail(err, errlen, "needs x of rank 1 or more, got %s", tx);
    if (!same_dtype(in, err, errlen) || !need_float(x, "x", err, errlen))
        return false;
    int64_t d = x->dim[x->rank - 1];
    for (int i = 1; i < in->nin; i++)
        if (in->in_t[i].rank != 1 || in->in_t[i].dim[0] != d)
            return fail(err, errlen, "needs %s of shape [%lld] to match the last dimension of %s, "
                        "got %s", names[i], (long long)d, tx, tstr(tp, &in->in_t[i]));
    if (!(in->eps > 0))
        return fail(err, errlen, "needs eps > 0, got %g", in->eps);
    *want = *x;
    return true;
}

static bool rule_transpose(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *x = &in->in_t[0];
    bool used[RT_MAX_RANK] = {false};
    bool perm = in->nlist == x->rank;
    for (int i = 0; perm && i < in->nlist; i++) {
        int64_t p = in->list[i];
        perm = p >= 0 && p < x->rank && !used[p];
        if (perm) {
            used[p] = true;
            want->dim[i] = x->dim[p];
        }
    }
    if (!perm) {
        char tx[TYPE_LEN], tl[TYPE_LEN];
        size_t k = (size_t)snprintf(tl, sizeof tl, "[");
        for (int i = 0; i < in->nlist && k < sizeof tl; i++)
            k += (size_t)snprintf(tl + k, sizeof tl - k, "%s%lld", i ? ", " : "",
                                  (long long)in->list[i]);
        if (k < sizeof tl)
            snprintf(tl + k, sizeof tl - k, "]");
        return fail(err, errlen, "needs a permutation of the %d axes of %s, got %s", x->rank,
                    tstr(tx, x), tl);
    }
    want->dtype = x->dtype;
    want->rank = x->rank;
    return true;
}

/* table [V, D] and i32 ids [...] -> [..., D]. */
static bool rule_embedding(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *table = &in->in_t[0], *ids = &in->in_t[1];
    char b[TYPE_LEN];
    if (table->rank != 2 || !is_float(table->dtype))
        return fail(err, errlen, "the table must be a 2-D floating-point tensor, got %s",
                    tstr(b, table));
    if (ids->dtype != RT_I32)
        return fail(err, errlen, "the ids must be i32, got %s", tstr(b, ids));
    if (ids->rank + 1 > RT_MAX_RANK)
        return fail(err, errlen, "ids %s would give a result of rank %d; at most %d",
                    tstr(b, ids), ids->rank + 1, RT_MAX_RANK);
    want->dtype = table->dtype;
    want->rank = (uint8_t)(ids->rank + 1);
    memcpy(want->dim, ids->dim, (size_t)ids->rank * sizeof *ids->dim);
    want->dim[ids->rank] = table->dim[1];
    return true;
}

static bool rule_mse(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!need_float(&in->in_t[0], "the prediction", err, errlen))
        return false;
    if (!type_eq(&in->in_t[0], &in->in_t[1]))
        return fail(err, errlen, "needs operands of the same type, got %s and %s",
                    tstr(t1, &in->in_t[0]), tstr(t2, &in->in_t[1]));
    want->dtype = in->in_t[0].dtype;
    return true;
}

/* logits [..., C] and i32 labels [...] -> a scalar. */
static bool rule_xent(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *logits = &in->in_t[0], *labels = &in->in_t[1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    tstr(t1, logits);
    tstr(t2, labels);
    if (logits->rank < 1 || !is_float(logits->dtype))
        return fail(err, errlen, "needs floating-point logits of rank 1 or more, got %s", t1);
    if (labels->dtype != RT_I32)
        return fail(err, errlen, "the labels must be i32, got %s", t2);
    bool match = labels->rank == logits->rank - 1;
    for (int i = 0; match && i < labels->rank; i++)
        match = labels->dim[i] == logits->dim[i];
    if (!match)
        return fail(err, errlen, "the labels %s do not match the leading dimensions of the "
                    "logits %s", t2, t1);
    want->dtype = logits->dtype;
    return true;
}

/* expand: x broadcast to out_t (NumPy's broadcast_to: x aligned at the
 * end, each of its dims 1 or equal); the result's shape is the attribute. */
static bool rule_expand(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *x = &in->in_t[0], *out = &in->out_t;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    int off = out->rank - x->rank;
    bool ok = off >= 0;
    for (int i = 0; ok && i < x->rank; i++)
        ok = x->dim[i] == 1 || x->dim[i] == out->dim[i + off];
    if (!ok)
        return fail(err, errlen, "cannot expand %s to the shape of %s", tstr(t1, x),
                    tstr(t2, out));
    *want = *out;
    want->dtype = x->dtype;
    return true;
}

/* attn_probs: q [..., S, d], k [..., T, d] -> [..., S, T]. */
static bool rule_attn_probs(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1];
    char tq[TYPE_LEN], tk[TYPE_LEN];
    if (q->rank < 2)
        return fail(err, errlen, "needs q of rank 2 or more, got %s", tstr(tq, q));
    if (!same_dtype_n(in, 2, err, errlen) || !need_float(q, "q", err, errlen) ||
        !rule_pos(in, 2, err, errlen))
        return false;
    int r = q->rank;
    bool ok = k->rank == r && k->dim[r - 1] == q->dim[r - 1];
    for (int i = 0; ok && i < r - 2; i++)
        ok = k->dim[i] == q->dim[i];
    if (!ok)
        return fail(err, errlen, "needs q and k with the same leading and last dimensions, got "
                    "%s and %s", tstr(tq, q), tstr(tk, k));
    *want = *q;
    want->dim[r - 1] = k->dim[r - 2];
    return true;
}

/* embedding_grad: i32 ids [...] and dy [..., D] -> [V, D]; V is the
 * result's (the table's rows). */
static bool rule_embedding_grad(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *ids = &in->in_t[0], *dy = &in->in_t[1], *out = &in->out_t;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (ids->dtype != RT_I32)
        return fail(err, errlen, "the ids must be i32, got %s", tstr(t1, ids));
    if (!need_float(dy, "dy", err, errlen))
        return false;
    bool ok = dy->rank == ids->rank + 1;
    for (int i = 0; ok && i < ids->rank; i++)
        ok = dy->dim[i] == ids->dim[i];
    if (!ok)
        return fail(err, errlen, "needs dy of shape [ids..., D], got ids %s and dy %s",
                    tstr(t1, ids), tstr(t2, dy));
    if (out->rank != 2)
        return fail(err, errlen, "needs a result of shape [V, %lld], got %s",
                    (long long)dy->dim[dy->rank - 1], tstr(t1, out));
    want->dtype = dy->dtype;
    want->rank = 2;
    want->dim[0] = out->dim[0];
    want->dim[1] = dy->dim[dy->rank - 1];
    return true;
}

/* Optimizer updates: every operand of the first one's type, except adamw's
 * step count t, a floating-point scalar; adamw's eps finite and >= 0. */
/* insert, extract: bucket b is [R, M] and v (of b's dtype) takes n/R of
 * its columns from offset (ir/infer.c's bucket rules). */
static bool rule_bucket(const rt_type *b, const rt_type *v, int64_t offset, const char *what,
                        char *err, size_t errlen)
{
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (b->rank != 2)
        return fail(err, errlen, "a bucket is [rows, columns], not %s", tstr(b1, b));
    if (v->dtype != b->dtype)
        return fail(err, errlen, "%s %s and the bucket %s differ in dtype", what, tstr(b1, v),
                    tstr(b2, b));
    int64_t n = rt_type_numel(v);
    if (n % b->dim[0])
        return fail(err, errlen, "%s %s does not split into the %lld rows of the bucket", what,
                    tstr(b1, v), (long long)b->dim[0]);
    if (offset < 0 || offset > b->dim[1] || n / b->dim[0] > b->dim[1] - offset)
        return fail(err, errlen, "%s %s at column %lld does not fit the bucket %s", what,
                    tstr(b1, v), (long long)offset, tstr(b2, b));
    return true;
}

static bool rule_optim(const rt_instr *in, rt_type *want, char *err, size_t errlen)
{
    const rt_type *x = &in->in_t[0];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!need_float(x, "the operand", err, errlen))
        return false;
    int n = in->op == RT_OP_ADAMW ? 3 : in->nin;
    for (int i = 1; i < n; i++)
        if (!type_eq(&in->in_t[i], x))
            return fail(err, errlen, "needs operands of one type, got %s and %s", tstr(t1, x),
                        tstr(t2, &in->in_t[i]));
    if (in->op == RT_OP_ADAMW) {
        const rt_type *t = &in->in_t[3];
        if (t->rank != 0 || !is_float(t->dtype))
            return fail(err, errlen, "needs a floating-point scalar step count, got %s",
                        tstr(t1, t));
        if (!(isfinite(in->eps) && in->eps >= 0))
            return fail(err, errlen, "needs a finite eps >= 0, got %g", in->eps);
    }
    *want = *x;
    return true;
}

/* Slice and collectives, local shapes, NCCL semantics: slice and
 * reduce_scatter divide dim by the group size G, all_gather multiplies it,
 * all_to_all divides dim and multiplies dim2. */
static bool rule_group(const rt_plan *p, const rt_instr *in, rt_type *want, char *err,
                       size_t errlen)
{
    const rt_type *x = &in->in_t[0];
    char b[TYPE_LEN];
    int64_t g = 1;
    if (!group_size(p, in, &g, err, errlen))
        return false;
    *want = *x;
    int op = in->op;
    if (op == RT_OP_ALL_REDUCE || op == RT_OP_BROADCAST)
        return true;
    if (in->dim < 0 || in->dim >= x->rank)
        return fail(err, errlen, "dimension %lld is out of range for %s", (long long)in->dim,
                    tstr(b, x));
    if (op == RT_OP_ALL_TO_ALL && (in->dim2 < 0 || in->dim2 >= x->rank))
        return fail(err, errlen, "dimension %lld is out of range for %s", (long long)in->dim2,
                    tstr(b, x));
    if (op != RT_OP_ALL_GATHER) {
        if (x->dim[in->dim] % g)
            return fail(err, errlen, "cannot split dimension %lld of %s over %lld ranks",
                        (long long)in->dim, tstr(b, x), (long long)g);
        want->dim[in->dim] /= g;
    }
    int64_t grow = op == RT_OP_ALL_GATHER ? in->dim : op == RT_OP_ALL_TO_ALL ? in->dim2 : -1;
    if (grow >= 0 && __builtin_mul_overflow(want->dim[grow], g, &want->dim[grow]))
        return fail(err, errlen, "the result is too large: dimension %lld of %s times %lld ranks",
                    (long long)grow, tstr(b, x), (long long)g);
    return true;
}

/* send and recv: a plan with a pipeline axis, a peer stage in range (not
 * the program's own: check_in_program knows it), and a send's missing
 * result (out = -1) typed as its operand. */
static bool rule_p2p(const rt_plan *p, const rt_instr *in, char *err, size_t errlen)
{
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (p->stage_axis < 0)
        return fail(err, errlen, "needs a pipeline axis, but the plan has none");
    if (in->dim < 0 || in->dim >= p->nstages)
        return fail(err, errlen, "peer stage %lld is out of range (the plan has %d stages)",
                    (long long)in->dim, p->nstages);
    if (in->op == RT_OP_RECV)
        return true;
    if (in->out != -1)
        return fail(err, errlen, "a send has no result: out must be -1, not %d", in->out);
    if (!type_eq(&in->out_t, &in->in_t[0]))
        return fail(err, errlen, "out_t is %s, but a send's is its operand's type %s",
                    tstr(b1, &in->out_t), tstr(b2, &in->in_t[0]));
    return true;
}

static bool is_io_source(int op)
{
    return op == RT_OP_INPUT || op == RT_OP_PARAM || op == RT_OP_STATE;
}

/* input, param and state: the entry exists, has the op's kind, and out_t
 * is its local shard. (Which stage holds it is rt_plan_validate's check.) */
static bool rule_source(const rt_plan *p, const rt_instr *in, char *err, size_t errlen)
{
    char msg[MSG_LEN], b1[TYPE_LEN], b2[TYPE_LEN];
    int kind = in->op == RT_OP_INPUT   ? RT_IO_INPUT
               : in->op == RT_OP_PARAM ? RT_IO_PARAM
                                       : RT_IO_STATE;
    if (in->io < 0 || in->io >= p->nio || !p->io)
        return fail(err, errlen, "I/O entry %d is out of range (the plan has %d)", in->io, p->nio);
    const rt_io *io = &p->io[in->io];
    if (io->kind != kind)
        return fail(err, errlen, "I/O entry %d is not %s", in->io,
                    kind == RT_IO_INPUT   ? "an input"
                    : kind == RT_IO_PARAM ? "a parameter"
                                          : "a state");
    rt_type local;
    if (!io_local(p, io, &local, msg, sizeof msg))
        return fail(err, errlen, "I/O entry %d: %s", in->io, msg);
    if (!type_eq(&local, &in->out_t))
        return fail(err, errlen, "the result is %s, but the local shard of I/O entry %d is %s",
                    tstr(b1, &in->out_t), in->io, tstr(b2, &local));
    return true;
}

/* The opcode, the operand count, the types of the operands and the
 * result, and the list and axis counts every instruction stores. */
static bool check_operands(const rt_instr *in, char *err, size_t errlen)
{
    if (in->op >= RT_NOPS)
        return fail(err, errlen, "unknown opcode %d", in->op);
    const rt_opinfo *info = &rt_ops[in->op];
    if (in->nin < info->min_in || in->nin > info->max_in) {
        if (info->min_in == info->max_in)
            return fail(err, errlen, "has %d operands; %s takes %d", in->nin, info->name,
                        info->min_in);
        return fail(err, errlen, "has %d operands; %s takes %d to %d", in->nin, info->name,
                    info->min_in, info->max_in);
    }
    for (int i = 0; i < in->nin; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i + 1);
        if (!check_type(&in->in_t[i], what, err, errlen))
            return false;
    }
    if (!check_type(&in->out_t, "the result", err, errlen))
        return false;
    if (in->nlist > RT_MAX_RANK)
        return fail(err, errlen, "has a list of %d entries; at most %d", in->nlist, RT_MAX_RANK);
    if (in->naxes > RT_MAX_AXES)
        return fail(err, errlen, "names %d mesh axes; at most %d", in->naxes, RT_MAX_AXES);
    const double hyper[] = {in->lr, in->momentum, in->beta1, in->beta2, in->wd};
    static const char *const hyper_names[] = {"lr", "momentum", "beta1", "beta2", "wd"};
    for (int i = 0; i < 5; i++)
        if (!isfinite(hyper[i]))
            return fail(err, errlen, "%s %g is not finite", hyper_names[i], hyper[i]);
    return true;
}

static bool is_unary(int op)
{
    return op >= RT_OP_NEG && op <= RT_OP_RSQRT;
}

static bool is_binary(int op)
{
    return (op >= RT_OP_ADD && op <= RT_OP_POW) || op == RT_OP_GT || op == RT_OP_EQ ||
           op == RT_OP_GELU_GRAD || op == RT_OP_SILU_GRAD;
}

/* The message says what is wrong, not which instruction: rt_plan_validate
 * puts "stage S, instruction K (op): " in front. p gives the mesh (group
 * sizes) and the I/O table (input, param). */
bool rt_instr_check(const rt_plan *p, const rt_instr *in, char *err, size_t errlen)
{
    if (!check_operands(in, err, errlen))
        return false;
    const rt_type *x = &in->in_t[0], *out = &in->out_t;
    char b1[TYPE_LEN], b2[TYPE_LEN];
    rt_type want;
    memset(&want, 0, sizeof want);
    bool ok;
    int op = in->op;
    if (is_io_source(op))
        return rule_source(p, in, err, errlen);
    if (op == RT_OP_CONST)
        return isfinite(in->value) ? true
                                   : fail(err, errlen, "the value %g is not finite", in->value);
    if (op == RT_OP_SEND || op == RT_OP_RECV)
        return rule_p2p(p, in, err, errlen);
    if (is_binary(op)) {
        ok = (op != RT_OP_GELU_GRAD && op != RT_OP_SILU_GRAD) ||
             need_float(x, "x", err, errlen);
        ok = ok && rule_binary(in, &want, err, errlen);
    } else if (is_unary(op)) {
        want = *x;
        ok = op == RT_OP_NEG || op == RT_OP_ABS || op == RT_OP_RELU ||
             need_float(x, "the operand", err, errlen);
    } else {
        switch (op) {
        case RT_OP_CAST:
            want = *x;
            want.dtype = out->dtype;
            ok = true;
            break;
        case RT_OP_COPY:
            if (out->dtype != x->dtype || rt_type_numel(out) != rt_type_numel(x))
                return fail(err, errlen, "copies %s to %s; a copy keeps the dtype and the "
                            "element count", tstr(b1, x), tstr(b2, out));
            return true;
        case RT_OP_MATMUL:
            ok = rule_matmul(in, &want, err, errlen);
            break;
        case RT_OP_ATTENTION:
            ok = rule_attention(in, &want, err, errlen);
            break;
        case RT_OP_SUM:
        case RT_OP_MEAN:
        case RT_OP_AMAX:
            ok = rule_reduce(in, &want, err, errlen);
            break;
        case RT_OP_SOFTMAX:
            want = *x;
            ok = need_float(x, "the operand", err, errlen) && check_axis(in, err, errlen);
            break;
        case RT_OP_LAYERNORM:
        case RT_OP_RMSNORM:
            ok = rule_norm(in, &want, err, errlen);
            break;
        case RT_OP_TRANSPOSE:
            ok = rule_transpose(in, &want, err, errlen);
            break;
        case RT_OP_EMBEDDING:
            ok = rule_embedding(in, &want, err, errlen);
            break;
        case RT_OP_MSE:
            ok = rule_mse(in, &want, err, errlen);
            break;
        case RT_OP_XENT:
            ok = rule_xent(in, &want, err, errlen);
            break;
        case RT_OP_EXPAND:
            ok = rule_expand(in, &want, err, errlen);
            break;
        case RT_OP_ATTN_PROBS:
            ok = rule_attn_probs(in, &want, err, errlen);
            break;
        case RT_OP_EMBEDDING_GRAD:
            ok = rule_embedding_grad(in, &want, err, errlen);
            break;
        case RT_OP_XENT_GRAD:
            ok = rule_xent(in, &want, err, errlen);
            want = *x;
            break;
        case RT_OP_MOMENTUM:
        case RT_OP_SGD:
        case RT_OP_ADAM_M:
        case RT_OP_ADAM_V:
        case RT_OP_ADAMW:
            ok = rule_optim(in, &want, err, errlen);
            break;
        case RT_OP_INSERT:
            want = *x;
            ok = rule_bucket(x, &in->in_t[1], in->offset, "the value", err, errlen);
            break;
        case RT_OP_EXTRACT:
            want = *out;
            ok = rule_bucket(x, out, in->offset, "the result", err, errlen);
            break;
        case RT_OP_IOTA:
            if (out->dtype != RT_I32 || out->rank != 1)
                return fail(err, errlen, "the result is %s; iota makes an i32 vector",
                            tstr(b1, out));
            return true;
        case RT_OP_CHECK_IDS:
        case RT_OP_CHECK_LABELS:
            if (in->dim < 1)
                return fail(err, errlen, "bound %lld is not 1 or more", (long long)in->dim);
            want = *x;
            ok = x->dtype == RT_I32 ||
                 fail(err, errlen, "checks i32 ids, got %s", tstr(b1, x));
            break;
        case RT_OP_ALL_REDUCE:
            if (in->dim < 0 || in->dim >= RT_NREDUCE)
                return fail(err, errlen, "reduce operation %lld is unknown (0 sum, 1 max)",
                            (long long)in->dim);
            ok = rule_group(p, in, &want, err, errlen);
            break;
        default: /* slice and the other collectives */
            ok = rule_group(p, in, &want, err, errlen);
            break;
        }
    }
    if (!ok)
        return false;
    if (!type_eq(&want, out))
        return fail(err, errlen, "the result is %s, but the operands give %s", tstr(b1, out),
                    tstr(b2, &want));
    return true;
}

/* ---- rt_plan_validate ---- */

static bool check_mesh(const rt_plan *p, char *err, size_t errlen)
{
    if (p->naxes < 0 || p->naxes > RT_MAX_AXES)
        return fail(err, errlen, "the mesh has %d axes; 0 to %d are supported", p->naxes,
                    RT_MAX_AXES);
    int64_t ranks = 1;
    for (int a = 0; a < p->naxes; a++) {
        const char *name = p->axis_name[a];
        if (!name || !*name)
            return fail(err, errlen, "mesh axis %d has no name", a);
        for (int b = 0; b < a; b++)
            if (strcmp(p->axis_name[b], name) == 0)
                return fail(err, errlen, "mesh axes %d and %d are both named '%s'", b, a, name);
        if (p->axis_size[a] < 1)
            return fail(err, errlen, "mesh axis %s has size %lld; sizes must be 1 or more", name,
                        (long long)p->axis_size[a]);
        if (__builtin_mul_overflow(ranks, p->axis_size[a], &ranks) || ranks > MAX_RANKS)
            return fail(err, errlen, "the mesh has more than 2^31 ranks");
    }
    if (p->stage_axis < -1 || p->stage_axis >= p->naxes)
        return fail(err, errlen, "the pipeline axis %d is not an axis of the mesh (nor -1)",
                    p->stage_axis);
    int64_t want = p->stage_axis < 0 ? 1 : p->axis_size[p->stage_axis];
    if (p->nstages != want) {
        if (p->stage_axis < 0)
            return fail(err, errlen, "the plan has %d stages but no pipeline axis", p->nstages);
        return fail(err, errlen, "the plan has %d stages, but the pipeline axis %s has size %lld",
                    p->nstages, p->axis_name[p->stage_axis], (long long)want);
    }
    if (!p->stage)
        return fail(err, errlen, "the plan has no programs");
    return true;
}

/* Each program's buffer table and instruction list, before anything
 * indexes them. */
static bool check_buffers(const rt_plan *p, char *err, size_t errlen)
{
    for (int s = 0; s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        if (g->nbuf < 0 || (g->nbuf > 0 && (!g->buf_bytes || !g->buf_offset)))
            return fail(err, errlen, "stage %d: a table of %d buffers is not valid", s, g->nbuf);
        if (g->arena_bytes < 0)
            return fail(err, errlen, "stage %d: an arena of %lld bytes", s,
                        (long long)g->arena_bytes);
        for (int b = 0; b < g->nbuf; b++) {
            int64_t off = g->buf_offset[b], n = g->buf_bytes[b];
            if (n < 0)
                return fail(err, errlen, "stage %d: buffer %d has size %lld", s, b, (long long)n);
            if (off < 0 || off % RT_ALIGN || off > g->arena_bytes || n > g->arena_bytes - off)
                return fail(err, errlen, "stage %d: buffer %d (%lld bytes at offset %lld) is not "
                            "inside the arena of %lld bytes at a multiple of %d", s, b,
                            (long long)n, (long long)off, (long long)g->arena_bytes, RT_ALIGN);
        }
        if (g->ninstr < 0 || (g->ninstr > 0 && !g->instr))
            return fail(err, errlen, "stage %d: a list of %d instructions is not valid", s,
                        g->ninstr);
    }
    return true;
}

/* A value of type t fits buffer b of program g. */
static bool check_fit(const rt_program *g, int32_t b, const rt_type *t, const char *what,
                      char *err, size_t errlen)
{
    char tb[TYPE_LEN];
    if (b < 0 || b >= g->nbuf)
        return fail(err, errlen, "buffer %d (%s) is out of range (the program has %d buffers)",
                    b, what, g->nbuf);
    if (rt_type_bytes(t) > g->buf_bytes[b])
        return fail(err, errlen, "%s %s (%lld bytes) does not fit buffer %d (%lld bytes)", what,
                    tstr(tb, t), (long long)rt_type_bytes(t), b, (long long)g->buf_bytes[b]);
    return true;
}

/* Params and states are made by their initializer; an input may carry one
 * too, for when it is absent at run time (codegen makes synthetic inputs
 * so). */
static bool check_init(const rt_io *io, char *err, size_t errlen)
{
    if (io->init != RT_INIT_PARAM && io->init_param)
        return fail(err, errlen, "names param '%s' without the initializer param",
                    io->init_param);
    if (io->kind == RT_IO_OUTPUT)
        return io->init == RT_INIT_NONE ? true
                                        : fail(err, errlen, "an output has no initializer");
    switch (io->init) {
    case RT_INIT_NONE:
    case RT_INIT_ZEROS:
    case RT_INIT_ONES:
        return true;
    case RT_INIT_NORMAL:
        if (!(isfinite(io->init_a) && io->init_a >= 0))
            return fail(err, errlen, "normal initializer needs a finite std >= 0, got %g",
                        io->init_a);
        if (!is_float(io->type.dtype))
            return fail(err, errlen, "normal initializer needs a floating-point dtype");
        return true;
    case RT_INIT_UNIFORM:
        if (!(isfinite(io->init_a) && isfinite(io->init_b) && io->init_a < io->init_b))
            return fail(err, errlen, "uniform initializer needs finite a < b, got [%g, %g)",
                        io->init_a, io->init_b);
        /* integers in [a, b): whole bounds within i32, as the compiler checks */
        if (!is_float(io->type.dtype) &&
            (io->init_a != floor(io->init_a) || io->init_b != floor(io->init_b) ||
             io->init_a < INT32_MIN || io->init_b > (double)INT32_MAX + 1))
            return fail(err, errlen, "uniform initializer of an integer tensor needs whole "
                        "bounds within i32, got [%g, %g)", io->init_a, io->init_b);
        return true;
    case RT_INIT_PARAM:
        if (io->kind != RT_IO_STATE || !is_float(io->type.dtype))
            return fail(err, errlen, "only a float state is made from a param");
        if (!io->init_param || !*io->init_param)
            return fail(err, errlen, "the initializer param names no param");
        return true;
    default:
        return fail(err, errlen, "unknown initializer (%d)", io->init);
    }
}

/* Whether entry io is split or partial over mesh axis a. */
static bool on_axis(const rt_io *io, int a)
{
    if (io->sh.partial >> a & 1)
        return true;
    for (int d = 0; d < io->type.rank; d++)
        if (memchr(io->sh.axes[d], a, io->sh.naxes[d]))
            return true;
    return false;
}

/* A state made from a param (RT_INIT_PARAM): the plan has that param (on
 * any stage), of the state's global shape. */
static bool check_from_param(const rt_plan *p, const rt_io *io, char *err, size_t errlen)
{
    const rt_io *src = NULL;
    for (int32_t i = 0; i < p->nio && !src; i++)
        if (p->io[i].kind == RT_IO_PARAM && !strcmp(p->io[i].name, io->init_param))
            src = &p->io[i];
    if (!src)
        return fail(err, errlen, "made from param '%s', which the plan does not have",
                    io->init_param);
    bool same = src->type.rank == io->type.rank;
    for (int d = 0; same && d < io->type.rank; d++)
        same = src->type.dim[d] == io->type.dim[d];
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (!same)
        return fail(err, errlen, "made from param '%s', but it is %s and the param %s",
                    io->init_param, tstr(b1, &io->type), tstr(b2, &src->type));
    return true;
}

/* One I/O entry on its own: kind, name, type and sharding, init, stage,
 * for an output the buffer holding its local shard, and for a param or a
 * state the buffer of its update (check_sources checks its buffer). */
static bool check_io(const rt_plan *p, const rt_io *io, char *err, size_t errlen)
{
    rt_type local;
    if (io->kind > RT_IO_STATE)
        return fail(err, errlen, "unknown kind (%d)", io->kind);
    if (!io_local(p, io, &local, err, errlen) || !check_init(io, err, errlen) ||
        (io->init == RT_INIT_PARAM && !check_from_param(p, io, err, errlen)))
        return false;
    if (io->kind == RT_IO_OUTPUT && io->sh.partial)
        return fail(err, errlen, "an output cannot be partial (over mesh axes 0x%x)",
                    (unsigned)io->sh.partial);
    if (io->stage < 0 || io->stage >= p->nstages)
        return fail(err, errlen, "stage %d is out of range (the plan has %d)", io->stage,
                    p->nstages);
    if (p->stage_axis >= 0 && on_axis(io, p->stage_axis))
        return fail(err, errlen, "the sharding names the pipeline axis %s, but only the ranks of "
                    "stage %d hold the value", p->axis_name[p->stage_axis], io->stage);
    if (io->kind == RT_IO_OUTPUT && !check_fit(&p->stage[io->stage], io->buffer, &local,
                                               "the local shard", err, errlen))
        return false;
    bool trained = io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
    if (io->update != -1 && !trained)
        return fail(err, errlen, "an %s has no update (buffer %d), only params and states do",
                    io->kind == RT_IO_INPUT ? "input" : "output", io->update);
    if (io->update != -1)
        return check_fit(&p->stage[io->stage], io->update, &local, "the update", err, errlen);
    return true;
}

/* Names live in two namespaces (LANGUAGE.md §12): what the caller binds
 * (inputs, params, states) and what it reads back (outputs). */
typedef struct named {
    const char *name;
    int32_t out;         /* 1: an output's name, 0: an input's, param's or state's */
    int32_t stage, index;
} named;

static bool same_name(const named *x, const named *y)
{
    return x->out == y->out && strcmp(x->name, y->name) == 0;
}

/* By namespace, then name, then stage, then index. */
static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    if (x->out != y->out)
        return x->out - y->out;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->stage != y->stage)
        return (x->stage > y->stage) - (x->stage < y->stage);
    return (x->index > y->index) - (x->index < y->index);
}

/* The entries sorted by (namespace, name, stage, index); NULL when out of
 * memory. */
static named *sorted_names(const rt_plan *p)
{
    named *v = malloc(((size_t)p->nio + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (int32_t i = 0; i < p->nio; i++)
        v[i] = (named){p->io[i].name, p->io[i].kind == RT_IO_OUTPUT, p->io[i].stage, i};
    qsort(v, (size_t)p->nio, sizeof *v, cmp_named);
    return v;
}

bool rt_plan_io_first(const rt_plan *p, int32_t *first)
{
    named *v = sorted_names(p);
    if (!v)
        return false;
    for (int32_t g = 0, e; g < p->nio; g = e) {
        int32_t lo = v[g].index;
        for (e = g + 1; e < p->nio && same_name(&v[e], &v[g]); e++)
            lo = v[e].index < lo ? v[e].index : lo;
        for (int32_t i = g; i < e; i++)
            first[v[i].index] = lo;
    }
    free(v);
    return true;
}

/* What two entries of one name on two stages must share: one tensor. */
static const char *io_differ(const rt_io *a, const rt_io *b)
{
    if (a->kind != b->kind)
        return "kind";
    if (!type_eq(&a->type, &b->type))
        return "type";
    if (memcmp(a->sh.naxes, b->sh.naxes, sizeof a->sh.naxes) != 0 ||
        a->sh.partial != b->sh.partial)
        return "sharding";
    for (int d = 0; d < a->type.rank; d++)
        if (memcmp(a->sh.axes[d], b->sh.axes[d], a->sh.naxes[d]) != 0)
            return "sharding";
    bool args = a->init == RT_INIT_NORMAL || a->init == RT_INIT_UNIFORM;
    if (a->init != b->init || (args && (a->init_a != b->init_a || a->init_b != b->init_b)) ||
        (a->init == RT_INIT_PARAM && strcmp(a->init_param, b->init_param) != 0))
        return "initializer";
    return NULL;
}

/* Inputs, params and states share one namespace, outputs have their own
 * (an output may bear the name of an input or a param). A name may stand
 * for one tensor on several stages (an input read by the first and the
 * last stage, the step count every stage keeps): one entry per stage, all
 * alike but for their stage, buffer and update; an output belongs to one
 * stage. Sorted, so that a plan with many parameters does not cost a
 * quadratic scan. */
static bool check_io_names(const rt_plan *p, char *err, size_t errlen)
{
    if (p->nio < 2)
        return true;
    named *v = sorted_names(p);
    if (!v)
        return fail(err, errlen, "out of memory");
    bool ok = true;
    char b1[TYPE_LEN], b2[TYPE_LEN];
    for (int32_t i = 1, g = 0; ok && i < p->nio; i++) {
        if (!same_name(&v[g], &v[i])) {
            g = i;
            continue;
        }
        const rt_io *a = &p->io[v[g].index], *b = &p->io[v[i].index];
        const char *what = io_differ(a, b);
        if (v[i - 1].stage == v[i].stage)
            ok = fail(err, errlen, "duplicate I/O name '%s' on stage %d (entries %d and %d)",
                      v[i].name, v[i].stage, v[i - 1].index, v[i].index);
        else if (a->kind == RT_IO_OUTPUT || b->kind == RT_IO_OUTPUT)
            ok = fail(err, errlen, "I/O entries %d and %d are both called '%s', on stages %d and "
                      "%d; an output belongs to one stage", v[g].index, v[i].index, v[i].name,
                      a->stage, b->stage);
        else if (what && !strcmp(what, "type"))
            ok = fail(err, errlen, "I/O entries %d and %d (stages %d and %d) are both called "
                      "'%s' but differ in type: %s and %s", v[g].index, v[i].index, a->stage,
                      b->stage, v[i].name, tstr(b1, &a->type), tstr(b2, &b->type));
        else if (what)
            ok = fail(err, errlen, "I/O entries %d and %d (stages %d and %d) are both called "
                      "'%s' but differ in %s", v[g].index, v[i].index, a->stage, b->stage,
                      v[i].name, what);
    }
    free(v);
    return ok;
}

static bool check_ios(const rt_plan *p, char *err, size_t errlen)
{
    char msg[MSG_LEN];
    if (p->nio < 0 || (p->nio > 0 && !p->io))
        return fail(err, errlen, "an I/O table of %d entries is not valid", p->nio);
    for (int32_t i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!io->name || !*io->name)
            return fail(err, errlen, "I/O entry %d has no name", i);
        if (!check_io(p, io, msg, sizeof msg))
            return fail(err, errlen, "I/O entry %d (%s): %s", i, io->name, msg);
    }
    return check_io_names(p, err, errlen);
}

/* What rt_instr_check cannot see: the buffers of the program, the stage
 * of an input's, param's or state's entry, and that a send or a recv does
 * not name the program's own stage. Only a send has no result (out = -1). */
static bool check_in_program(const rt_plan *p, int s, const rt_instr *in, char *err,
                             size_t errlen)
{
    const rt_program *g = &p->stage[s];
    if (!check_operands(in, err, errlen))
        return false;
    for (int i = 0; i < in->nin; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i + 1);
        if (!check_fit(g, in->in[i], &in->in_t[i], what, err, errlen))
            return false;
    }
    bool p2p = in->op == RT_OP_SEND || in->op == RT_OP_RECV;
    if (p2p && !rt_instr_check(p, in, err, errlen))
        return false;
    if (p2p && in->dim == s)
        return fail(err, errlen, "the peer stage %lld is this program's own stage",
                    (long long)in->dim);
    if (in->op == RT_OP_SEND) /* no result */
        return true;
    if (in->out == -1)
        return fail(err, errlen, "out is -1, but only a send has no result");
    if (!check_fit(g, in->out, &in->out_t, "the result", err, errlen))
        return false;
    /* the result and an operand share memory only as rt_op_in_place allows */
    int64_t o0 = g->buf_offset[in->out], o1 = o0 + rt_type_bytes(&in->out_t);
    for (int i = 0; i < in->nin; i++) {
        int64_t a0 = g->buf_offset[in->in[i]], a1 = a0 + rt_type_bytes(&in->in_t[i]);
        if (a0 >= o1 || o0 >= a1)
            continue;
        if (a0 == o0 && rt_op_in_place(in->op) && type_eq(&in->in_t[i], &in->out_t))
            continue;
        if (rt_bucket_view(in, i, a0, o0))
            continue;
        return fail(err, errlen, "the result (buffer %d) overlaps operand %d (buffer %d) in "
                    "memory", in->out, i + 1, in->in[i]);
    }
    if (is_io_source(in->op) && in->io >= 0 && in->io < p->nio && p->io[in->io].stage != s)
        return fail(err, errlen, "I/O entry %d belongs to stage %d", in->io, p->io[in->io].stage);
    return p2p || rt_instr_check(p, in, err, errlen);
}

static bool check_programs(const rt_plan *p, char *err, size_t errlen)
{
    char msg[MSG_LEN];
    for (int s = 0; s < p->nstages; s++) {
        const rt_program *g = &p->stage[s];
        for (int k = 0; k < g->ninstr; k++) {
            const rt_instr *in = &g->instr[k];
            if (in->line < 0 || in->col < 0 || (!in->line && in->col))
                return fail(err, errlen, "stage %d, instruction %d: source place %d:%d is not "
                            "a line and column", s, k, (int)in->line, (int)in->col);
            if (!check_in_program(p, s, in, msg, sizeof msg))
                return fail(err, errlen, "stage %d, instruction %d (%s): %s", s, k,
                            in->op < RT_NOPS ? rt_ops[in->op].name : "?", msg);
        }
    }
    return true;
}

/* Each param and state is filled by a source instruction of its stage
 * (rt_instr_check and check_in_program have checked the instructions'
 * entries and stages), and its buffer is the one every such instruction
 * writes: the session keeps it across runs and writes updates into it. */
static bool check_sources(const rt_plan *p, char *err, size_t errlen)
{
    int32_t *src = malloc(((size_t)p->nio + 1) * sizeof *src);
    if (!src)
        return fail(err, errlen, "out of memory");
    for (int32_t i = 0; i < p->nio; i++)
        src[i] = -1;
    bool ok = true;
    for (int s = 0; ok && s < p->nstages; s++)
        for (int k = 0; ok && k < p->stage[s].ninstr; k++) {
            const rt_instr *in = &p->stage[s].instr[k];
            if (in->op != RT_OP_PARAM && in->op != RT_OP_STATE)
                continue;
            if (src[in->io] >= 0 && src[in->io] != in->out)
                ok = fail(err, errlen, "I/O entry %d (%s) is filled into buffers %d and %d",
                          in->io, p->io[in->io].name, src[in->io], in->out);
            src[in->io] = in->out;
        }
    for (int32_t i = 0; ok && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->kind != RT_IO_PARAM && io->kind != RT_IO_STATE)
            continue;
        if (src[i] < 0)
            ok = fail(err, errlen, "I/O entry %d (%s): no instruction of stage %d fills it", i,
                      io->name, io->stage);
        else if (io->buffer != src[i])
            ok = fail(err, errlen, "I/O entry %d (%s): buffer %d is not buffer %d, which its "
                      "source instruction fills", i, io->name, io->buffer, src[i]);
    }
    free(src);
    return ok;
}

/* The loss: none (-1), or an output that is a floating-point scalar. */
static bool check_loss(const rt_plan *p, char *err, size_t errlen)
{
    if (p->loss == -1)
        return true;
    if (p->loss < 0 || p->loss >= p->nio)
        return fail(err, errlen, "the loss is I/O entry %d, out of range (the plan has %d)",
                    p->loss, p->nio);
    const rt_io *io = &p->io[p->loss];
    char b[TYPE_LEN];
    if (io->kind != RT_IO_OUTPUT)
        return fail(err, errlen, "the loss is I/O entry %d (%s), which is not an output", p->loss,
                    io->name);
    if (io->type.rank != 0 || !is_float(io->type.dtype))
        return fail(err, errlen, "the loss, output '%s', is %s; a floating-point scalar is "
                    "needed", io->name, tstr(b, &io->type));
    return true;
}

/* ---- kernels ---- */

int rt_arch_number(const char *name)
{
    const char *d = NULL;
    if (name && !strncmp(name, "sm_", 3))
        d = name + 3;
    else if (name && !strncmp(name, "compute_", 8))
        d = name + 8;
    size_t n = d ? strlen(d) : 0;
    if (n < 2 || n > 3 || d[0] == '0')
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        v = v * 10 + (d[i] - '0');
    }
    return v;
}

const char *rt_kernel_strategy_name(int strategy)
{
    static const char *const names[RT_NKSTRATEGIES] = {"elementwise", "row", "column",
                                                       "single block", "matmul"};
    return strategy >= 0 && strategy < RT_NKSTRATEGIES ? names[strategy] : "?";
}

/* The name of the __global__ function: a C identifier. */
static bool is_identifier(const char *s)
{
    if (!s || !(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* One image: a well-formed architecture name with the prefix the image's
 * kind has ("sm_" for a cubin, "compute_" for PTX), and some bytes. */
static bool check_image(const rt_image *im, const char *prefix, const char *what, char *err,
                        size_t errlen)
{
    if (!im->arch || rt_arch_number(im->arch) < 0 || strncmp(im->arch, prefix, strlen(prefix)))
        return fail(err, errlen, "%s has the architecture '%s'; expected %sNN", what,
                    im->arch ? im->arch : "", prefix);
    if (im->len == 0 || !im->data)
        return fail(err, errlen, "%s for %s is empty", what, im->arch);
    if (!strcmp(prefix, "compute_") && memchr(im->data, 0, im->len))
        return fail(err, errlen, "%s for %s contains a NUL byte", what, im->arch);
    return true;
}

/* A module: its entry a C identifier, its images (see check_image), one
 * cubin per architecture. */
static bool check_module(const rt_module *m, char *err, size_t errlen)
{
    char what[32];
    if (!is_identifier(m->entry))
        return fail(err, errlen, "the entry '%s' is not a C identifier", m->entry ? m->entry : "");
    if (m->ncubin < 1 || m->ncubin > MAX_CUBINS || !m->cubin)
        return fail(err, errlen, "has %d cubins; 1 to %d are needed", m->ncubin, MAX_CUBINS);
    for (int i = 0; i < m->ncubin; i++) {
        snprintf(what, sizeof what, "cubin %d", i);
        if (!check_image(&m->cubin[i], "sm_", what, err, errlen))
            return false;
        for (int j = 0; j < i; j++)
            if (!strcmp(m->cubin[j].arch, m->cubin[i].arch))
                return fail(err, errlen, "cubins %d and %d are both for %s", j, i,
                            m->cubin[i].arch);
    }
    return check_image(&m->ptx, "compute_", "the PTX", err, errlen);
}

/* The name, the module and the launch: a known strategy, a grid and a
 * block the driver accepts; a matmul kernel has none of them, and only it
 * an epilogue. */
static bool check_launch(const rt_plan *p, const rt_kernel *k, char *err, size_t errlen)
{
    if (!is_identifier(k->name))
        return fail(err, errlen, "the name '%s' is not a C identifier", k->name ? k->name : "");
    if (k->strategy == RT_KS_MATMUL) {
        if (k->module != -1 || k->grid != 0 || k->block != 0 || k->shared_bytes != 0)
            return fail(err, errlen, "a matmul kernel has module %d, grid %lld, block %d and %d "
                        "shared bytes; expected -1 and zeros (cuBLASLt runs it)", k->module,
                        (long long)k->grid, k->block, k->shared_bytes);
        if (k->epilogue & ~RT_EPI_ALL)
            return fail(err, errlen, "unknown epilogue bits 0x%x", k->epilogue);
        return true;
    }
    if (k->epilogue)
        return fail(err, errlen, "only matmul kernels have an epilogue; this one (%s) has 0x%x",
                    rt_kernel_strategy_name(k->strategy), k->epilogue);
    if (k->module < 0 || k->module >= p->nmodules)
        return fail(err, errlen, "module %d is out of range (the plan has %d)", k->module,
                    p->nmodules);
    if (k->strategy >= RT_NKSTRATEGIES)
        return fail(err, errlen, "unknown strategy (%d)", k->strategy);
    if (k->grid < 1 || k->grid > INT32_MAX)
        return fail(err, errlen, "a grid of %lld blocks; 1 to 2^31-1 are possible",
                    (long long)k->grid);
    if (k->block < 1 || k->block > RT_MAX_BLOCK)
        return fail(err, errlen, "a block of %d threads; 1 to %d are possible", k->block,
                    RT_MAX_BLOCK);
    if (k->shared_bytes < 0 || k->shared_bytes > RT_MAX_SHARED)
        return fail(err, errlen, "%d bytes of dynamic shared memory; 0 to %d are possible",
                    k->shared_bytes, RT_MAX_SHARED);
    return true;
}

/* The instructions it stands for: in the program, ascending, compute
 * instructions, none claimed by another kernel (owner: per instruction of
 * the stage, the kernel claiming it, or -1). */
static bool check_kernel_instrs(const rt_program *g, const rt_kernel *k, int32_t *owner,
                                int32_t self, char *err, size_t errlen)
{
    if (k->ninstr < 1 || !k->instr)
        return fail(err, errlen, "stands for no instruction");
    for (int i = 0; i < k->ninstr; i++) {
        int32_t at = k->instr[i];
        if (at < 0 || at >= g->ninstr)
            return fail(err, errlen, "instruction %d is out of range (the program has %d)", at,
                        g->ninstr);
        if (i > 0 && at <= k->instr[i - 1])
            return fail(err, errlen, "instructions %d and %d are not in ascending order",
                        k->instr[i - 1], at);
        if (rt_ops[g->instr[at].op].cls != RT_K_COMPUTE)
            return fail(err, errlen, "instruction %d (%s) is not a compute instruction", at,
                        rt_ops[g->instr[at].op].name);
        if (owner[at] >= 0)
            return fail(err, errlen, "instruction %d belongs to kernel %d too", at, owner[at]);
        owner[at] = self;
    }
    return true;
}

/* A bias for a result of type t: t's dtype and last dim, 1 elsewhere. */
static bool is_bias(const rt_type *b, const rt_type *t)
{
    if (b->dtype != t->dtype || b->rank < 1 || b->rank > t->rank || t->rank < 1 ||
        b->dim[b->rank - 1] != t->dim[t->rank - 1])
        return false;
    for (int d = 0; d < b->rank - 1; d++)
        if (b->dim[d] != 1)
            return false;
    return true;
}

/* The RT_EPI_* bit instruction in adds to a matmul kernel whose chain so
 * far made buffer cur of type t with epilogue have, its other operand in
 * *other (-1: none); 0 when it is no step plan.h allows. */
static unsigned epilogue_step(const rt_instr *in, int32_t cur, const rt_type *t, unsigned have,
                              int *other)
{
    *other = -1;
    if ((have & (RT_EPI_RELU | RT_EPI_GELU)) || !type_eq(&in->out_t, t))
        return 0;
    if (in->op == RT_OP_RELU || in->op == RT_OP_GELU) {
        if (in->in[0] != cur || !type_eq(&in->in_t[0], t))
            return 0;
        return in->op == RT_OP_RELU ? RT_EPI_RELU : RT_EPI_GELU;
    }
    if (in->op != RT_OP_ADD)
        return 0;
    int at = in->in[0] == cur && type_eq(&in->in_t[0], t)   ? 0
             : in->in[1] == cur && type_eq(&in->in_t[1], t) ? 1
                                                            : -1;
    if (at < 0 || in->in[1 - at] == cur)
        return 0;
    *other = 1 - at;
    const rt_type *o = &in->in_t[*other];
    unsigned bit = type_eq(o, t) ? RT_EPI_RESIDUAL : is_bias(o, t) ? RT_EPI_BIAS : 0;
    return have & bit ? 0 : bit;
}

/* Whether buffers a and b share a byte. */
static bool overlap(const rt_program *g, int32_t a, int32_t b)
{
    int64_t a0 = g->buf_offset[a], a1 = a0 + g->buf_bytes[a];
    int64_t b0 = g->buf_offset[b], b1 = b0 + g->buf_bytes[b];
    return a0 < b1 && b0 < a1;
}

/* The parameters a matmul kernel must have: A, B, the bias and the
 * residual where there are, then the result; false when an instruction is
 * not a step of plan.h's chain or the steps make another epilogue. */
static bool matmul_params(const rt_program *g, const rt_kernel *k, int32_t *want,
                          rt_type *want_t, int *nin, char *err, size_t errlen)
{
    const rt_instr *mm = &g->instr[k->instr[0]];
    if (mm->op != RT_OP_MATMUL)
        return fail(err, errlen, "its first instruction (%d, %s) is not a matmul", k->instr[0],
                    rt_ops[mm->op].name);
    int32_t extra[2] = {-1, -1}; /* bias, residual */
    rt_type extra_t[2];
    memset(extra_t, 0, sizeof extra_t);
    unsigned have = 0;
    const rt_instr *last = mm;
    for (int i = 1; i < k->ninstr; i++) {
        const rt_instr *in = &g->instr[k->instr[i]];
        int o;
        unsigned bit = epilogue_step(in, last->out, &mm->out_t, have, &o);
        if (bit == RT_EPI_BIAS && mm->in_t[1].rank < 2)
            bit = 0; /* matrix @ vector: N is 1 for cuBLASLt, the last dim is M */
        if (!bit)
            return fail(err, errlen, "instruction %d (%s) is not a bias or residual add, relu "
                        "or gelu of instruction %d's result that cuBLASLt can do after it",
                        k->instr[i], rt_ops[in->op].name, k->instr[i - 1]);
        have |= bit;
        if (o >= 0) {
            extra[bit == RT_EPI_RESIDUAL] = in->in[o];
            extra_t[bit == RT_EPI_RESIDUAL] = in->in_t[o];
        }
        last = in;
    }
    if (have != k->epilogue)
        return fail(err, errlen, "its epilogue is 0x%x, but its instructions make 0x%x",
                    k->epilogue, have);
    int n = 0;
    for (int i = 0; i < 2; i++) {
        want[n] = mm->in[i];
        want_t[n++] = mm->in_t[i];
    }
    for (int i = 0; i < 2; i++)
        if (extra[i] >= 0) {
            want[n] = extra[i];
            want_t[n++] = extra_t[i];
        }
    *nin = n;
    want[n] = last->out;
    want_t[n] = last->out_t;
    return true;
}

/* A matmul kernel (plan.h): its chain, its parameters, and a result that
 * shares no byte with what cuBLASLt reads (but the residual may be the
 * very buffer: cuBLASLt's C and D may be one matrix). */
static bool check_matmul(const rt_program *g, const rt_kernel *k, char *err, size_t errlen)
{
    int32_t want[5];
    rt_type want_t[5];
    int nin = 0;
    char tb[TYPE_LEN];
    if (!matmul_params(g, k, want, want_t, &nin, err, errlen))
        return false;
    if (k->nin != nin || k->nout != 1)
        return fail(err, errlen, "has %d inputs and %d outputs; its instructions make %d and 1",
                    k->nin, k->nout, nin);
    for (int j = 0; j <= nin; j++)
        if (k->param[j] != want[j] || !type_eq(&k->param_t[j], &want_t[j]))
            return fail(err, errlen, "parameter %d is buffer %d as %s; its instructions make it "
                        "buffer %d", j, k->param[j], tstr(tb, &k->param_t[j]), want[j]);
    int32_t d = want[nin];
    bool resid = k->epilogue & RT_EPI_RESIDUAL;
    for (int j = 0; j < nin; j++)
        if (overlap(g, d, want[j]) && !(resid && j == nin - 1 && want[j] == d))
            return fail(err, errlen, "its result (buffer %d) shares bytes with parameter %d "
                        "(buffer %d)", d, j, want[j]);
    return true;
}

/* Each parameter is a buffer of the program that one of the kernel's
 * instructions reads (the first nin) or writes (the rest) as its type. */
static bool check_params(const rt_program *g, const rt_kernel *k, char *err, size_t errlen)
{
    char tb[TYPE_LEN], what[48];
    if (k->nin < 0 || k->nout < 1 || k->nin > RT_MAX_KPARAMS - k->nout ||
        (!k->param || !k->param_t))
        return fail(err, errlen, "has %d inputs and %d outputs; at most %d parameters, one "
                    "output or more", k->nin, k->nout, RT_MAX_KPARAMS);
    for (int j = 0; j < k->nin + k->nout; j++) {
        bool in = j < k->nin, seen = false;
        const rt_type *t = &k->param_t[j];
        int32_t b = k->param[j];
        snprintf(what, sizeof what, "parameter %d", j);
        if (!check_type(t, what, err, errlen) || !check_fit(g, b, t, what, err, errlen))
            return false;
        for (int i = 0; i < k->ninstr && !seen; i++) {
            const rt_instr *ins = &g->instr[k->instr[i]];
            if (!in)
                seen = ins->out == b && type_eq(&ins->out_t, t);
            for (int o = 0; in && o < ins->nin && !seen; o++)
                seen = ins->in[o] == b && type_eq(&ins->in_t[o], t);
        }
        if (!seen)
            return fail(err, errlen, "parameter %d is buffer %d as %s, but no instruction of the "
                        "kernel %s it as that type", j, b, tstr(tb, t),
                        in ? "reads" : "writes");
    }
    return true;
}

/* Each module runs some kernel, so a plan holds no code it does not run. */
static bool check_modules_used(const rt_plan *p, char *err, size_t errlen)
{
    bool *used = calloc((size_t)p->nmodules + 1, sizeof *used);
    if (!used)
        return fail(err, errlen, "out of memory");
    for (int32_t i = 0; i < p->nkernels; i++)
        if (p->kernel[i].strategy != RT_KS_MATMUL)
            used[p->kernel[i].module] = true;
    int32_t unused = 0;
    while (unused < p->nmodules && used[unused])
        unused++;
    free(used);
    if (unused < p->nmodules)
        return fail(err, errlen, "module %d (%s) runs no kernel", unused,
                    p->module[unused].entry);
    return true;
}

/* Every module on its own, then every kernel: its stage, name, module,
 * launch, instructions and parameters; and every module is some kernel's.
 * The messages name the module ("module 2 (k3_add_gelu): ...") or the
 * kernel ("kernel 3 (k3_add_gelu) of stage 0: ..."). */
static bool check_kernels(const rt_plan *p, char *err, size_t errlen)
{
    char msg[MSG_LEN];
    if (p->nmodules < 0 || (p->nmodules > 0 && !p->module))
        return fail(err, errlen, "a table of %d modules is not valid", p->nmodules);
    if (p->nkernels < 0 || (p->nkernels > 0 && !p->kernel))
        return fail(err, errlen, "a table of %d kernels is not valid", p->nkernels);
    for (int32_t i = 0; i < p->nmodules; i++)
        if (!check_module(&p->module[i], msg, sizeof msg))
            return fail(err, errlen, "module %d (%s): %s", i,
                        is_identifier(p->module[i].entry) ? p->module[i].entry : "?", msg);
    int64_t total = 0;
    for (int s = 0; s < p->nstages; s++)
        total += p->stage[s].ninstr;
    int32_t *owner = malloc(((size_t)total + 1) * sizeof *owner);
    if (!owner)
        return fail(err, errlen, "out of memory");
    for (int64_t i = 0; i < total; i++)
        owner[i] = -1;
    bool ok = true;
    for (int32_t i = 0; ok && i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        if (k->stage < 0 || k->stage >= p->nstages) {
            ok = fail(err, errlen, "kernel %d: stage %d is out of range (the plan has %d)", i,
                      k->stage, p->nstages);
            break;
        }
        int32_t *own = owner;
        for (int s = 0; s < k->stage; s++)
            own += p->stage[s].ninstr;
        const rt_program *g = &p->stage[k->stage];
        ok = check_launch(p, k, msg, sizeof msg) &&
             check_kernel_instrs(g, k, own, i, msg, sizeof msg) &&
             check_params(g, k, msg, sizeof msg) &&
             (k->strategy != RT_KS_MATMUL || check_matmul(g, k, msg, sizeof msg));
        if (!ok)
            fail(err, errlen, "kernel %d (%s) of stage %d: %s", i,
                 is_identifier(k->name) ? k->name : "?", k->stage, msg);
    }
    free(owner);
    return ok && check_modules_used(p, err, errlen);
}

/* Mesh, then buffer tables, then I/O entries, then instructions, then
 * kernels: each step may index what the steps before it checked. */
bool rt_plan_validate(const rt_plan *p, char *err, size_t errlen)
{
    if (!p)
        return fail(err, errlen, "no plan");
    if (!check_mesh(p, err, errlen) || !check_buffers(p, err, errlen) ||
        !check_ios(p, err, errlen) || !check_programs(p, err, errlen) ||
        !check_sources(p, err, errlen) || !check_loss(p, err, errlen) ||
        !check_kernels(p, err, errlen))
        return false;
    if (p->report_len > 0 && !p->report)
        return fail(err, errlen, "the report has %zu bytes but no text", p->report_len);
    if (p->report_len > 0 && memchr(p->report, 0, p->report_len))
        return fail(err, errlen, "the report contains a NUL byte");
    return true;
}

/* ---- rt_plan_write ---- */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void put(wbuf *w, const void *src, size_t k)
{
    if (w->oom || k == 0)
        return;
    if (k > w->cap - w->n) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap - w->n < k) {
            if (cap > SIZE_MAX / 2) {
                w->oom = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *np = realloc(w->p, cap);
        if (!np) {
            w->oom = true;
            return;
        }
        w->p = np;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, k);
    w->n += k;
}

static void put_le(wbuf *w, uint64_t v, int k)
{
    uint8_t b[8];
    set_le(b, v, k);
    put(w, b, (size_t)k);
}

static void put_f64(wbuf *w, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    put_le(w, u, 8);
}

static void put_str(wbuf *w, const char *s)
{
    size_t n = strlen(s);
    put_le(w, n, 4);
    put(w, s, n);
}

static void put_type(wbuf *w, const rt_type *t)
{
    put_le(w, t->dtype, 1);
    put_le(w, t->rank, 1);
    for (int i = 0; i < t->rank; i++)
        put_le(w, (uint64_t)t->dim[i], 8);
}

/* A section header with the length and CRC to be patched by end_section. */
static size_t begin_section(wbuf *w, const char *tag)
{
    size_t at = w->n;
    put(w, tag, 4);
    put_le(w, 0, 4);
    put_le(w, 0, 8);
    put_le(w, 0, 4);
    return at;
}

static void end_section(wbuf *w, size_t at)
{
    if (w->oom)
        return;
    size_t len = w->n - at - SEC_HDR;
    set_le(w->p + at + 8, len, 8);
    set_le(w->p + at + 16, rt_crc32(0, w->p + at + SEC_HDR, len), 4);
}

static void write_mesh(wbuf *w, const rt_plan *p)
{
    size_t at = begin_section(w, "MESH");
    put_le(w, (uint64_t)p->naxes, 4);
    for (int a = 0; a < p->naxes; a++) {
        put_str(w, p->axis_name[a]);
        put_le(w, (uint64_t)p->axis_size[a], 8);
    }
    put_le(w, (uint32_t)p->stage_axis, 4);
    put_le(w, (uint32_t)p->nstages, 4);
    put_str(w, p->source ? p->source : "");
    end_section(w, at);
}

static void write_io(wbuf *w, const rt_plan *p)
{
    size_t at = begin_section(w, "IOTB");
    put_le(w, (uint64_t)p->nio, 4);
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        put_le(w, io->kind, 1);
        put_str(w, io->name);
        put_type(w, &io->type);
        for (int d = 0; d < io->type.rank; d++) {
            put_le(w, io->sh.naxes[d], 1);
            put(w, io->sh.axes[d], io->sh.naxes[d]);
        }
        put_le(w, io->sh.partial, 2);
        put_le(w, io->init, 1);
        put_f64(w, io->init_a);
        put_f64(w, io->init_b);
        put_str(w, io->init_param ? io->init_param : "");
        put_le(w, (uint32_t)io->stage, 4);
        put_le(w, (uint32_t)io->buffer, 4);
        put_le(w, (uint32_t)io->update, 4);
    }
    put_le(w, (uint32_t)p->loss, 4);
    end_section(w, at);
}

static void write_instr(wbuf *w, const rt_instr *in)
{
    put_le(w, in->op, 2);
    put_le(w, in->nin, 1);
    for (int i = 0; i < in->nin; i++) {
        put_le(w, (uint32_t)in->in[i], 4);
        put_type(w, &in->in_t[i]);
    }
    put_le(w, (uint32_t)in->out, 4);
    put_type(w, &in->out_t);
    put_le(w, (uint32_t)in->io, 4);
    put_f64(w, in->value);
    put_le(w, (uint64_t)in->axis, 8);
    put_le(w, in->keepdims, 1);
    put_le(w, in->causal, 1);
    put_f64(w, in->eps);
    put_le(w, in->nlist, 1);
    for (int i = 0; i < in->nlist; i++)
        put_le(w, (uint64_t)in->list[i], 8);
    put_le(w, (uint64_t)in->dim, 8);
    put_le(w, (uint64_t)in->dim2, 8);
    put_le(w, in->naxes, 1);
    put(w, in->axes, in->naxes);
    put_f64(w, in->lr);
    put_f64(w, in->momentum);
    put_f64(w, in->beta1);
    put_f64(w, in->beta2);
    put_f64(w, in->wd);
    put_le(w, (uint64_t)in->offset, 8);
    put_le(w, (uint32_t)in->line, 4);
    put_le(w, (uint32_t)in->col, 4);
}

static void write_prog(wbuf *w, const rt_program *g)
{
    size_t at = begin_section(w, "PROG");
    put_le(w, (uint64_t)g->nbuf, 4);
    put_le(w, (uint64_t)g->arena_bytes, 8);
    for (int b = 0; b < g->nbuf; b++) {
        put_le(w, (uint64_t)g->buf_offset[b], 8);
        put_le(w, (uint64_t)g->buf_bytes[b], 8);
    }
    put_le(w, (uint64_t)g->ninstr, 4);
    for (int k = 0; k < g->ninstr; k++)
        write_instr(w, &g->instr[k]);
    end_section(w, at);
}

static void put_blob(wbuf *w, const rt_image *im)
{
    put_str(w, im->arch);
    put_le(w, im->len, 8);
    put(w, im->data, im->len);
}

static void write_kern(wbuf *w, const rt_plan *p)
{
    size_t at = begin_section(w, "KERN");
    put_le(w, (uint64_t)p->nmodules, 4);
    for (int i = 0; i < p->nmodules; i++) {
        const rt_module *m = &p->module[i];
        put_str(w, m->entry);
        put_le(w, (uint64_t)m->ncubin, 4);
        for (int j = 0; j < m->ncubin; j++)
            put_blob(w, &m->cubin[j]);
        put_blob(w, &m->ptx);
    }
    put_le(w, (uint64_t)p->nkernels, 4);
    for (int i = 0; i < p->nkernels; i++) {
        const rt_kernel *k = &p->kernel[i];
        put_le(w, (uint32_t)k->stage, 4);
        put_str(w, k->name);
        put_le(w, (uint32_t)k->module, 4);
        put_le(w, k->strategy, 1);
        put_le(w, k->epilogue, 1);
        put_le(w, (uint64_t)k->grid, 8);
        put_le(w, (uint32_t)k->block, 4);
        put_le(w, (uint32_t)k->shared_bytes, 4);
        put_le(w, (uint64_t)k->nin, 4);
        put_le(w, (uint64_t)k->nout, 4);
        for (int j = 0; j < k->nin + k->nout; j++) {
            put_le(w, (uint32_t)k->param[j], 4);
            put_type(w, &k->param_t[j]);
        }
        put_le(w, (uint64_t)k->ninstr, 4);
        for (int j = 0; j < k->ninstr; j++)
            put_le(w, (uint32_t)k->instr[j], 4);
    }
    end_section(w, at);
}

/* Validates first, so that a file it writes always reads; the plan may be
 * any in memory (mem_ unused) and is not modified. */
bool rt_plan_write(const rt_plan *p, uint8_t **out, size_t *len, char *err, size_t errlen)
{
    char msg[MSG_LEN];
    *out = NULL;
    *len = 0;
    if (!rt_plan_validate(p, msg, sizeof msg))
        return fail(err, errlen, "cannot write an invalid plan: %s", msg);
    wbuf w = {0};
    uint8_t hdr[HDR_SIZE] = {0};
    put(&w, hdr, sizeof hdr);
    write_mesh(&w, p);
    write_io(&w, p);
    for (int s = 0; s < p->nstages; s++)
        write_prog(&w, &p->stage[s]);
    write_kern(&w, p);
    size_t at = begin_section(&w, "REPT");
    put(&w, p->report, p->report_len);
    end_section(&w, at);
    if (w.oom) {
        free(w.p);
        return fail(err, errlen, "out of memory");
    }
    memcpy(w.p, RT_PLAN_MAGIC, 8);
    set_le(w.p + 8, RT_PLAN_VERSION, 4);
    set_le(w.p + 12, (uint64_t)p->nstages + NSEC_FIXED, 4);
    set_le(w.p + 16, w.n, 8);
    set_le(w.p + 24, rt_crc32(0, w.p, 24), 4);
    *out = w.p;
    *len = w.n;
    return true;
}

/* ---- rt_plan_read ---- */

/* A read plan owns its memory as a list of blocks on p->mem_. */
typedef struct block {
    struct block *next;
    _Alignas(max_align_t) unsigned char data[];
} block;

typedef struct reader {
    const uint8_t *data;
    size_t len;
    const char *what;
    char *err;
    size_t errlen;
    rt_plan *p;
} reader;

/* A section's payload being decoded. */
typedef struct cur {
    reader *r;
    const uint8_t *b;
    size_t n, pos;
    char sec[32];   /* "PROG (stage 3)" */
    char where[48]; /* "instruction 12": the item being decoded */
} cur;

static bool rfail(reader *r, const char *fmt, ...) PRINTF(2, 3);

/* fail() with the source's name in front: "model.plan: ...". */
static bool rfail(reader *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        int k = snprintf(r->err, r->errlen, "%s: ", r->what);
        if (k >= 0 && (size_t)k < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return false;
}

/* count zeroed elements of size bytes, owned by the plan; NULL for none
 * (ALLOC tells that from a failure, which has set the message). */
static void *alloc(reader *r, size_t count, size_t size)
{
    size_t n;
    if (count == 0)
        return NULL;
    if (__builtin_mul_overflow(count, size, &n) || n > SIZE_MAX - sizeof(block)) {
        rfail(r, "out of memory");
        return NULL;
    }
    block *b = calloc(1, sizeof(block) + n);
    if (!b) {
        rfail(r, "out of memory");
        return NULL;
    }
    b->next = r->p->mem_;
    r->p->mem_ = b;
    return b->data;
}

#define ALLOC(r, ptr, count) (((ptr) = alloc(r, (size_t)(count), sizeof *(ptr))) || (count) == 0)

static bool take(cur *c, size_t k, const char *field, const uint8_t **at)
{
    if (k > c->n - c->pos)
        return rfail(c->r, "section %s ends early: %s%s%s needs %zu bytes, %zu are left", c->sec,
                     c->where, *c->where ? ", " : "", field, k, c->n - c->pos);
    *at = c->b + c->pos;
    c->pos += k;
    return true;
}

static bool get_u(cur *c, int k, const char *field, uint64_t *v)
{
    const uint8_t *at = NULL;
    if (!take(c, (size_t)k, field, &at))
        return false;
    *v = get_le(at, k);
    return true;
}

static bool get_u8(cur *c, const char *field, uint8_t *v)
{
    uint64_t u;
    return get_u(c, 1, field, &u) && (*v = (uint8_t)u, true);
}

static bool get_u16(cur *c, const char *field, uint16_t *v)
{
    uint64_t u;
    return get_u(c, 2, field, &u) && (*v = (uint16_t)u, true);
}

static bool get_i32(cur *c, const char *field, int32_t *v)
{
    uint64_t u;
    uint32_t u32;
    if (!get_u(c, 4, field, &u))
        return false;
    u32 = (uint32_t)u;
    memcpy(v, &u32, sizeof *v);
    return true;
}

static bool get_i64(cur *c, const char *field, int64_t *v)
{
    uint64_t u;
    return get_u(c, 8, field, &u) && (memcpy(v, &u, sizeof *v), true);
}

static bool get_f64(cur *c, const char *field, double *v)
{
    uint64_t u;
    return get_u(c, 8, field, &u) && (memcpy(v, &u, sizeof *v), true);
}

/* A u32 count of items of at least min bytes each: at most INT32_MAX, and
 * no more than the rest of the payload can hold, so that what is allocated
 * for them is bounded by the input's size. */
static bool get_count(cur *c, const char *field, size_t min, int32_t *count)
{
    uint64_t u;
    if (!get_u(c, 4, field, &u))
        return false;
    size_t room = (c->n - c->pos) / min;
    if (u > INT32_MAX || u > room)
        return rfail(c->r, "section %s: %s%s%s is %llu, but the %zu bytes left hold at most %zu",
                     c->sec, c->where, *c->where ? ", " : "", field, (unsigned long long)u,
                     c->n - c->pos, room);
    *count = (int32_t)u;
    return true;
}

static bool get_str(cur *c, const char *field, char **s)
{
    uint64_t n;
    const uint8_t *at = NULL;
    if (!get_u(c, 4, field, &n))
        return false;
    if (n > c->n - c->pos)
        return rfail(c->r, "section %s: %s%s%s has length %llu, beyond the %zu bytes left",
                     c->sec, c->where, *c->where ? ", " : "", field, (unsigned long long)n,
                     c->n - c->pos);
    if (!take(c, n, field, &at))
        return false;
    if (memchr(at, 0, n))
        return rfail(c->r, "section %s: %s%s%s contains a NUL byte", c->sec, c->where,
                     *c->where ? ", " : "", field);
    if (!ALLOC(c->r, *s, n + 1))
        return false;
    memcpy(*s, at, n);
    return true;
}

/* The rank must fit the struct; everything else is the validator's. */
static bool get_type(cur *c, const char *field, rt_type *t)
{
    if (!get_u8(c, field, &t->dtype) || !get_u8(c, field, &t->rank))
        return false;
    if (t->rank > RT_MAX_RANK)
        return rfail(c->r, "section %s: %s%s%s has rank %d; at most %d dimensions are supported",
                     c->sec, c->where, *c->where ? ", " : "", field, t->rank, RT_MAX_RANK);
    for (int i = 0; i < t->rank; i++)
        if (!get_i64(c, field, &t->dim[i]))
            return false;
    return true;
}

/* A u8 count of at most max entries (the size of the array holding them). */
static bool get_small(cur *c, const char *field, int max, uint8_t *n)
{
    if (!get_u8(c, field, n))
        return false;
    if (*n > max)
        return rfail(c->r, "section %s: %s%s%s is %d; at most %d", c->sec, c->where,
                     *c->where ? ", " : "", field, *n, max);
    return true;
}

/* Opens the next section, which must be tag (stage >= 0: PROG of that
 * stage), and checks its header and CRC. */
static bool open_section(reader *r, size_t *pos, const char *tag, int stage, cur *c)
{
    memset(c, 0, sizeof *c);
    c->r = r;
    if (stage >= 0)
        snprintf(c->sec, sizeof c->sec, "%s (stage %d)", tag, stage);
    else
        snprintf(c->sec, sizeof c->sec, "%s", tag);
    size_t left = r->len - *pos;
    if (left < SEC_HDR)
        return rfail(r, "truncated section %s: its header at offset %zu needs %d bytes, %zu are "
                     "left", c->sec, *pos, SEC_HDR, left);
    const uint8_t *h = r->data + *pos;
    if (memcmp(h, tag, 4) != 0) {
        bool text = true;
        for (int i = 0; i < 4; i++)
            text = text && h[i] >= 0x20 && h[i] < 0x7f && h[i] != '\'';
        if (text)
            return rfail(r, "expected section %s at offset %zu, found '%.4s'", c->sec, *pos,
                         (const char *)h);
        return rfail(r, "expected section %s at offset %zu, found tag 0x%08x", c->sec, *pos,
                     (unsigned)get_le(h, 4));
    }
    if (get_le(h + 4, 4) != 0)
        return rfail(r, "section %s: the reserved field is 0x%08x, not 0", c->sec,
                     (unsigned)get_le(h + 4, 4));
    uint64_t plen = get_le(h + 8, 8);
    if (plen > left - SEC_HDR)
        return rfail(r, "truncated section %s: its payload of %llu bytes at offset %zu runs past "
                     "the end of the file (%zu bytes)", c->sec, (unsigned long long)plen,
                     *pos + SEC_HDR, r->len);
    if (rt_crc32(0, h + SEC_HDR, (size_t)plen) != get_le(h + 16, 4))
        return rfail(r, "checksum mismatch in section %s: the file is corrupt", c->sec);
    c->b = h + SEC_HDR;
    c->n = (size_t)plen;
    *pos += SEC_HDR + (size_t)plen;
    return true;
}

static bool close_section(cur *c)
{
    c->where[0] = 0;
    if (c->pos != c->n)
        return rfail(c->r, "section %s has %zu trailing byte%s after its contents", c->sec,
                     c->n - c->pos, c->n - c->pos == 1 ? "" : "s");
    return true;
}

static bool read_mesh(cur *c, rt_plan *p)
{
    uint64_t naxes;
    if (!get_u(c, 4, "the axis count", &naxes))
        return false;
    if (naxes > RT_MAX_AXES)
        return rfail(c->r, "section MESH: the mesh has %llu axes; at most %d are supported",
                     (unsigned long long)naxes, RT_MAX_AXES);
    p->naxes = (int32_t)naxes;
    for (int a = 0; a < p->naxes; a++) {
        snprintf(c->where, sizeof c->where, "axis %d", a);
        if (!get_str(c, "name", &p->axis_name[a]) || !get_i64(c, "size", &p->axis_size[a]))
            return false;
    }
    c->where[0] = 0;
    if (!get_i32(c, "the pipeline axis", &p->stage_axis) ||
        !get_i32(c, "the stage count", &p->nstages))
        return false;
    if (p->nstages < 1)
        return rfail(c->r, "section MESH: the plan has %d stages; at least 1 is needed",
                     p->nstages);
    return get_str(c, "the source", &p->source) && close_section(c);
}

static bool read_io(cur *c, rt_plan *p)
{
    if (!get_count(c, "the entry count", IO_MIN, &p->nio) ||
        !ALLOC(c->r, p->io, p->nio))
        return false;
    for (int i = 0; i < p->nio; i++) {
        rt_io *io = &p->io[i];
        snprintf(c->where, sizeof c->where, "entry %d", i);
        if (!get_u8(c, "kind", &io->kind) || !get_str(c, "name", &io->name) ||
            !get_type(c, "type", &io->type))
            return false;
        for (int d = 0; d < io->type.rank; d++) {
            if (!get_small(c, "the sharding's axis count", RT_MAX_AXES, &io->sh.naxes[d]))
                return false;
            for (int k = 0; k < io->sh.naxes[d]; k++)
                if (!get_u8(c, "sharding", &io->sh.axes[d][k]))
                    return false;
        }
        if (!get_u16(c, "partial", &io->sh.partial) || !get_u8(c, "init", &io->init) ||
            !get_f64(c, "init_a", &io->init_a) || !get_f64(c, "init_b", &io->init_b) ||
            !get_str(c, "init_param", &io->init_param) ||
            !get_i32(c, "stage", &io->stage) || !get_i32(c, "buffer", &io->buffer) ||
            !get_i32(c, "update", &io->update))
            return false;
        if (!*io->init_param)
            io->init_param = NULL; /* none: as the writer's entries have it */
    }
    c->where[0] = 0;
    if (!get_i32(c, "the loss", &p->loss))
        return false;
    return close_section(c);
}

static bool read_instr(cur *c, rt_instr *in)
{
    if (!get_u16(c, "op", &in->op) || !get_small(c, "the operand count", RT_MAX_IN, &in->nin))
        return false;
    for (int i = 0; i < in->nin; i++)
        if (!get_i32(c, "operand", &in->in[i]) || !get_type(c, "operand type", &in->in_t[i]))
            return false;
    if (!get_i32(c, "out", &in->out) || !get_type(c, "out_t", &in->out_t) ||
        !get_i32(c, "io", &in->io) || !get_f64(c, "value", &in->value) ||
        !get_i64(c, "axis", &in->axis) || !get_u8(c, "keepdims", &in->keepdims) ||
        !get_u8(c, "causal", &in->causal) || !get_f64(c, "eps", &in->eps) ||
        !get_small(c, "the list length", RT_MAX_RANK, &in->nlist))
        return false;
    for (int i = 0; i < in->nlist; i++)
        if (!get_i64(c, "list", &in->list[i]))
            return false;
    if (!get_i64(c, "dim", &in->dim) || !get_i64(c, "dim2", &in->dim2) ||
        !get_small(c, "the axis count", RT_MAX_AXES, &in->naxes))
        return false;
    for (int i = 0; i < in->naxes; i++)
        if (!get_u8(c, "axes", &in->axes[i]))
            return false;
    return get_f64(c, "lr", &in->lr) && get_f64(c, "momentum", &in->momentum) &&
           get_f64(c, "beta1", &in->beta1) && get_f64(c, "beta2", &in->beta2) &&
           get_f64(c, "wd", &in->wd) && get_i64(c, "offset", &in->offset) &&
           get_i32(c, "line", &in->line) && get_i32(c, "column", &in->col);
}

static bool read_prog(cur *c, rt_program *g)
{
    if (!get_count(c, "the buffer count", 16, &g->nbuf) ||
        !get_i64(c, "the arena size", &g->arena_bytes) ||
        !ALLOC(c->r, g->buf_bytes, g->nbuf) || !ALLOC(c->r, g->buf_offset, g->nbuf))
        return false;
    for (int b = 0; b < g->nbuf; b++) {
        snprintf(c->where, sizeof c->where, "buffer %d", b);
        if (!get_i64(c, "offset", &g->buf_offset[b]) || !get_i64(c, "size", &g->buf_bytes[b]))
            return false;
    }
    c->where[0] = 0;
    if (!get_count(c, "the instruction count", INSTR_MIN, &g->ninstr) ||
        !ALLOC(c->r, g->instr, g->ninstr))
        return false;
    for (int k = 0; k < g->ninstr; k++) {
        snprintf(c->where, sizeof c->where, "instruction %d", k);
        if (!read_instr(c, &g->instr[k]))
            return false;
    }
    return close_section(c);
}

/* An image: str arch, u64 length, the bytes (kept with a NUL after them,
 * so PTX reads as a string). */
static bool get_image(cur *c, const char *field, rt_image *im)
{
    uint64_t n;
    const uint8_t *at = NULL;
    if (!get_str(c, field, &im->arch) || !get_u(c, 8, field, &n))
        return false;
    if (n > c->n - c->pos)
        return rfail(c->r, "section %s: %s%s%s has length %llu, beyond the %zu bytes left",
                     c->sec, c->where, *c->where ? ", " : "", field, (unsigned long long)n,
                     c->n - c->pos);
    if (!take(c, (size_t)n, field, &at) || !ALLOC(c->r, im->data, n + 1))
        return false;
    memcpy(im->data, at, (size_t)n);
    im->len = (size_t)n;
    return true;
}

/* The parameters (buffer, type) and the instructions of kernel k. */
static bool read_kernel_lists(cur *c, rt_kernel *k)
{
    if (!get_count(c, "the input count", 6, &k->nin) ||
        !get_count(c, "the output count", 6, &k->nout))
        return false;
    int64_t np = (int64_t)k->nin + k->nout;
    if (np > (int64_t)((c->n - c->pos) / 6))
        return rfail(c->r, "section %s: %s, %lld parameters do not fit the %zu bytes left",
                     c->sec, c->where, (long long)np, c->n - c->pos);
    if (!ALLOC(c->r, k->param, np) || !ALLOC(c->r, k->param_t, np))
        return false;
    for (int64_t j = 0; j < np; j++)
        if (!get_i32(c, "parameter", &k->param[j]) ||
            !get_type(c, "parameter type", &k->param_t[j]))
            return false;
    if (!get_count(c, "the instruction count", 4, &k->ninstr) ||
        !ALLOC(c->r, k->instr, k->ninstr))
        return false;
    for (int j = 0; j < k->ninstr; j++)
        if (!get_i32(c, "instruction", &k->instr[j]))
            return false;
    return true;
}

static bool read_module(cur *c, rt_module *m)
{
    if (!get_str(c, "entry", &m->entry) || !get_count(c, "the cubin count", 12, &m->ncubin) ||
        !ALLOC(c->r, m->cubin, m->ncubin))
        return false;
    for (int j = 0; j < m->ncubin; j++)
        if (!get_image(c, "cubin", &m->cubin[j]))
            return false;
    return get_image(c, "PTX", &m->ptx);
}

static bool read_kernel(cur *c, rt_kernel *k)
{
    return get_i32(c, "stage", &k->stage) && get_str(c, "name", &k->name) &&
           get_i32(c, "module", &k->module) && get_u8(c, "strategy", &k->strategy) &&
           get_u8(c, "epilogue", &k->epilogue) && get_i64(c, "grid", &k->grid) && get_i32(c, "block", &k->block) &&
           get_i32(c, "shared bytes", &k->shared_bytes) && read_kernel_lists(c, k);
}

/* The modules, then the kernels; what they say is rt_plan_validate's to
 * check. */
static bool read_kern(cur *c, rt_plan *p)
{
    if (!get_count(c, "the module count", MODULE_MIN, &p->nmodules) ||
        !ALLOC(c->r, p->module, p->nmodules))
        return false;
    for (int i = 0; i < p->nmodules; i++) {
        snprintf(c->where, sizeof c->where, "module %d", i);
        if (!read_module(c, &p->module[i]))
            return false;
    }
    c->where[0] = 0;
    if (!get_count(c, "the kernel count", KERNEL_MIN, &p->nkernels) ||
        !ALLOC(c->r, p->kernel, p->nkernels))
        return false;
    for (int i = 0; i < p->nkernels; i++) {
        snprintf(c->where, sizeof c->where, "kernel %d", i);
        if (!read_kernel(c, &p->kernel[i]))
            return false;
    }
    return close_section(c);
}

static bool read_report(cur *c, rt_plan *p)
{
    if (memchr(c->b, 0, c->n))
        return rfail(c->r, "section REPT: the report contains a NUL byte");
    if (!ALLOC(c->r, p->report, c->n + 1))
        return false;
    memcpy(p->report, c->b, c->n);
    p->report_len = c->n;
    c->pos = c->n;
    return close_section(c);
}

/* Magic, header CRC, version, total size, section count. */
static bool read_header(reader *r, uint32_t *nsec)
{
    const uint8_t *d = r->data;
    if (r->len == 0)
        return rfail(r, "truncated file: the file is empty");
    if (memcmp(d, RT_PLAN_MAGIC, r->len < 8 ? r->len : 8) != 0)
        return rfail(r, "not a shardc plan (bad magic)");
    if (r->len < HDR_SIZE)
        return rfail(r, "truncated file: %zu bytes, shorter than the %d-byte header", r->len,
                     HDR_SIZE);
    if (rt_crc32(0, d, 24) != get_le(d + 24, 4))
        return rfail(r, "checksum mismatch in the header: the file is corrupt");
    uint64_t version = get_le(d + 8, 4), total = get_le(d + 16, 8);
    if (version == 0)
        return rfail(r, "plan format version 0 is not valid: the file is corrupt");
    if (version > RT_PLAN_VERSION)
        return rfail(r, "plan format version %llu is newer than this shardrun reads (%d): "
                     "rebuild shardrun", (unsigned long long)version, RT_PLAN_VERSION);
    if (version < RT_PLAN_VERSION)
        return rfail(r, "the plan was written by an older shardc (plan format %llu; this "
                     "shardrun reads %d): compile the model again", (unsigned long long)version,
                     RT_PLAN_VERSION);
    if (total > r->len)
        return rfail(r, "truncated file: the header says %llu bytes, the file has %zu",
                     (unsigned long long)total, r->len);
    if (total < r->len)
        return rfail(r, "file size mismatch: the header says %llu bytes, the file has %zu "
                     "(trailing bytes after the plan?)", (unsigned long long)total, r->len);
    *nsec = (uint32_t)get_le(d + 12, 4);
    if (*nsec < NSEC_FIXED + 1)
        return rfail(r, "the header lists %u sections; a plan has at least %d", *nsec,
                     NSEC_FIXED + 1);
    return true;
}

/* The sections in their order, then the validator. */
static bool read_plan(reader *r)
{
    rt_plan *p = r->p;
    uint32_t nsec = 0;
    size_t pos = HDR_SIZE;
    cur c;
    if (!read_header(r, &nsec) || !open_section(r, &pos, "MESH", -1, &c) || !read_mesh(&c, p))
        return false;
    if (nsec != (uint64_t)p->nstages + NSEC_FIXED)
        return rfail(r, "the header lists %u sections, but a plan of %d stages has %lld", nsec,
                     p->nstages, (long long)p->nstages + NSEC_FIXED);
    if ((uint64_t)p->nstages > (r->len - pos) / (SEC_HDR + PROG_MIN))
        return rfail(r, "the plan has %d stages, but the %zu bytes left cannot hold their "
                     "programs", p->nstages, r->len - pos);
    if (!ALLOC(r, p->stage, p->nstages) ||
        !open_section(r, &pos, "IOTB", -1, &c) || !read_io(&c, p))
        return false;
    for (int s = 0; s < p->nstages; s++)
        if (!open_section(r, &pos, "PROG", s, &c) || !read_prog(&c, &p->stage[s]))
            return false;
    if (!open_section(r, &pos, "KERN", -1, &c) || !read_kern(&c, p) ||
        !open_section(r, &pos, "REPT", -1, &c) || !read_report(&c, p))
        return false;
    if (pos != r->len)
        return rfail(r, "%zu trailing bytes after the last section (REPT)", r->len - pos);
    char msg[MSG_LEN];
    if (!rt_plan_validate(p, msg, sizeof msg))
        return rfail(r, "%s", msg);
    return true;
}

/* Counts are checked against the bytes left before anything is allocated
 * for them; every message starts with "what: ". */
rt_plan *rt_plan_read(const uint8_t *data, size_t len, const char *what, char *err,
                      size_t errlen)
{
    reader r = {data, len, what ? what : "plan", err, errlen, NULL};
    r.p = calloc(1, sizeof *r.p);
    if (!r.p) {
        rfail(&r, "out of memory");
        return NULL;
    }
    if (!read_plan(&r)) {
        rt_plan_free(r.p);
        return NULL;
    }
    return r.p;
}

/* For plans from rt_plan_read (the plan struct and its mem_ blocks); NULL
 * is a no-op. */
void rt_plan_free(rt_plan *p)
{
    if (!p)
        return;
    for (block *b = p->mem_, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(p);
}
