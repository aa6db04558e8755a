/* plan_io.c: the plan's file form (plan.h): the writer and the reader,
 * both of which run the validator (plan_validate.c).
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
 *             u16 op, u8 nin (<= 6), nin x (i32 in, type in_t),
 *             i32 out, type out_t, i32 io, f64 value, i64 axis,
 *             u8 keepdims, u8 causal, f64 eps, u8 nlist (<= 8),
 *             nlist x i64 list, i64 dim, i64 dim2, u8 naxes (<= 8),
 *             naxes x u8 axes, f64 lr, f64 momentum, f64 beta1,
 *             f64 beta2, f64 wd, i64 offset, i32 line, i32 col;
 *           then the loop form (plan.h): u32 nbody, and unless it is 0,
 *             nbody x i32 body start, i32 nmb, u32 nitem,
 *             nitem x (i32 body, i32 microbatch), u32 nslotmap,
 *             nslotmap x nmb x i32 slot, u32 nslotted,
 *             nslotted x (i32 buffer, i32 slot map, then for each slot
 *             of the map the i32 buffer that is its copy) (the slotted
 *             buffers, ascending), u32 nstep,
 *             nstep x (i32 instruction, i64 step) (the nonzero steps,
 *             ascending)
 *   KERN    u32 nmodules, then per module (blob = u64 length + the bytes):
 *             str entry, u32 ncubin, ncubin x (str arch, blob cubin),
 *             str PTX arch, blob PTX (text, no NUL);
 *           u32 nkernels, then per kernel:
 *             i32 stage, str name, i32 module, u8 strategy, u8 epilogue, i64 grid,
 *             i32 block, i32 shared bytes, u32 nin, u32 nout,
 *             (nin + nout) x (i32 buffer, type),
 *             u32 ninstr, ninstr x i32 instruction;
 *           then i32 init_module (an index, or -1)
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
 * and column in it, which runtime errors name. Version 10 lets a module
 * hold several entries (a count, then the names) and gives each kernel
 * the index of its entry, after its module. Version 11 appends attention's
 * backward (attn_stats, attn_dq, attn_dk, attn_dv), whose instructions
 * take up to 6 operands (<= 6 below). Version 12 ends KERN with the
 * init module (plan.h), which makes sources from the seed on a GPU.
 * Version 14 ends PROG with the loop form (the reader keeps it; the
 * runtime reads with rt_plan_read_plain, which expands it). Version 15
 * appends attn_lse and attn_delta. Version 18 appends layernorm_rstd and
 * rmsnorm_rstd. Version 19 appends cross_entropy_lse and lets
 * cross_entropy_grad take it as a third operand. Version 20 lets a kernel
 * stand for constants too (each written in its code as a literal: the
 * CPU backend fills it, the CUDA backend does not).
 * Older versions are refused, not converted (recompiling is cheap).
 */
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"
#include "support/support.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    HDR_SIZE = 28,  /* magic 8, version 4, section count 4, total 8, CRC 4 */
    SEC_HDR = 20,   /* tag 4, reserved 4, payload length 8, CRC 4 */
    IO_MIN = 38,    /* the smallest IOTB entry: a scalar with an empty name */
    INSTR_MIN = 113, /* the smallest instruction: no operands, list or axes */
    PROG_MIN = 12,  /* the smallest PROG payload: three counts of 0 */
    MODULE_MIN = 24, /* the smallest module: one empty entry, no cubin, empty PTX */
    KERNEL_MIN = 46, /* the smallest kernel: empty name and lists */
    NSEC_FIXED = 4, /* MESH, IOTB, KERN, REPT; plus one PROG per stage */
};

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
    set_le(w->p + at + 16, su_crc32(0, w->p + at + SEC_HDR, len), 4);
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

/* The slots of map `map` of g: its largest, plus one. */
static int64_t slots_of(const rt_program *g, int32_t map)
{
    int64_t k = 0;
    for (int32_t j = 0; j < g->nmb; j++)
        if (g->slotmap[(int64_t)map * g->nmb + j] >= k)
            k = (int64_t)g->slotmap[(int64_t)map * g->nmb + j] + 1;
    return k;
}

/* The loop form (plan.h), sparse: only slotted buffers and nonzero steps. */
static void write_loop(wbuf *w, const rt_program *g)
{
    put_le(w, (uint64_t)g->nbody, 4);
    if (g->nbody <= 0)
        return;
    for (int b = 0; b < g->nbody; b++)
        put_le(w, (uint32_t)g->body_start[b], 4);
    put_le(w, (uint32_t)g->nmb, 4);
    put_le(w, (uint64_t)g->nitem, 4);
    for (int i = 0; i < 2 * g->nitem; i++)
        put_le(w, (uint32_t)g->item[i], 4);
    put_le(w, (uint64_t)g->nslotmap, 4);
    for (int64_t i = 0; i < (int64_t)g->nslotmap * g->nmb; i++)
        put_le(w, (uint32_t)g->slotmap[i], 4);
    int n = 0;
    for (int b = 0; g->buf_slots && b < g->nbuf; b++)
        n += g->buf_slots[b] >= 0;
    put_le(w, (uint64_t)n, 4);
    for (int b = 0; g->buf_slots && b < g->nbuf; b++)
        if (g->buf_slots[b] >= 0) {
            put_le(w, (uint32_t)b, 4);
            put_le(w, (uint32_t)g->buf_slots[b], 4);
            int64_t k = slots_of(g, g->buf_slots[b]);
            for (int64_t q = 0; q < k; q++)
                put_le(w, (uint32_t)g->copy_buf[g->buf_copy_at[b] + q], 4);
        }
    n = 0;
    for (int k = 0; g->instr_step && k < g->ninstr; k++)
        n += g->instr_step[k] != 0;
    put_le(w, (uint64_t)n, 4);
    for (int k = 0; g->instr_step && k < g->ninstr; k++)
        if (g->instr_step[k]) {
            put_le(w, (uint32_t)k, 4);
            put_le(w, (uint64_t)g->instr_step[k], 8);
        }
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
    write_loop(w, g);
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
        put_le(w, (uint64_t)m->nentry, 4);
        for (int j = 0; j < m->nentry; j++)
            put_str(w, m->entry[j]);
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
        put_le(w, (uint32_t)k->entry, 4);
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
    put_le(w, (uint32_t)p->init_module, 4);
    end_section(w, at);
}

/* Validates first, so that a file it writes always reads; the plan may be
 * any in memory (mem_ unused) and is not modified. */
static bool write_plan(const rt_plan *p, uint8_t **out, size_t *len, su_status *err);

bool rt_plan_write(const rt_plan *p, uint8_t **out, size_t *len, su_status *err)
{
    su_status msg;
    *out = NULL;
    *len = 0;
    if (!rt_plan_validate(p, &msg))
        return rt_plan_wrap(err, &msg, "cannot write an invalid plan: ");
    return write_plan(p, out, len, err);
}

bool rt_plan_write_rolled(const rt_plan *p, uint8_t **out, size_t *len, su_status *err)
{
    su_status msg;
    *out = NULL;
    *len = 0;
    if (!rt_plan_check_loops(p, &msg))
        return rt_plan_wrap(err, &msg, "cannot write an invalid plan: ");
    return write_plan(p, out, len, err);
}

static bool write_plan(const rt_plan *p, uint8_t **out, size_t *len, su_status *err)
{
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
        return rt_plan_nomem(err);
    }
    memcpy(w.p, RT_PLAN_MAGIC, 8);
    set_le(w.p + 8, RT_PLAN_VERSION, 4);
    set_le(w.p + 12, (uint64_t)p->nstages + NSEC_FIXED, 4);
    set_le(w.p + 16, w.n, 8);
    set_le(w.p + 24, su_crc32(0, w.p, 24), 4);
    *out = w.p;
    *len = w.n;
    return true;
}

/* ---- rt_plan_read ---- */

typedef struct reader {
    const uint8_t *data;
    size_t len;
    const char *what;
    su_status *err;
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

/* rt_plan_fail() with the source's name in front: "model.plan: ...". */
static bool rfail(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_failv(r->err, SU_INPUT, fmt, ap);
    va_end(ap);
    su_prefix(r->err, "%s: ", r->what);
    return false;
}

/* Out of memory while reading: false, the message as rfail's. */
static bool rnomem(reader *r)
{
    su_fail(r->err, SU_NOMEM, "%s: out of memory", r->what);
    return false;
}

/* count zeroed elements of size bytes, owned by the plan; NULL for none
 * (ALLOC tells that from a failure, which has set the message). */
static void *alloc(reader *r, size_t count, size_t size)
{
    void *v = rt_plan_alloc(r->p, count, size);
    if (!v && count)
        rnomem(r);
    return v;
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
    if (su_crc32(0, h + SEC_HDR, (size_t)plen) != get_le(h + 16, 4))
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

/* The loop form (write_loop): the sparse lists ascending, their indices
 * in range; what the rest says is rt_plan_expand's to check. */
static bool read_loop(cur *c, rt_program *g)
{
    if (!get_count(c, "the body count", 4, &g->nbody))
        return false;
    if (g->nbody == 0)
        return true;
    if (!ALLOC(c->r, g->body_start, g->nbody))
        return false;
    for (int b = 0; b < g->nbody; b++)
        if (!get_i32(c, "body start", &g->body_start[b]))
            return false;
    int32_t n;
    if (!get_i32(c, "the microbatch count", &g->nmb))
        return false;
    if (g->nmb < 1)
        return rfail(c->r, "section %s: the microbatch count is %d; at least 1", c->sec, g->nmb);
    if (!get_count(c, "the item count", 8, &g->nitem) || !ALLOC(c->r, g->item, 2 * (size_t)g->nitem))
        return false;
    for (int i = 0; i < 2 * g->nitem; i++)
        if (!get_i32(c, "item", &g->item[i]))
            return false;
    if (!get_count(c, "the slot map count", 4, &g->nslotmap))
        return false;
    if ((uint64_t)g->nslotmap * (uint64_t)g->nmb > (c->n - c->pos) / 4)
        return rfail(c->r, "section %s: %d slot maps of %d microbatches do not fit the %zu "
                     "bytes left", c->sec, g->nslotmap, g->nmb, c->n - c->pos);
    if (!ALLOC(c->r, g->slotmap, (size_t)g->nslotmap * (size_t)g->nmb))
        return false;
    for (int64_t i = 0; i < (int64_t)g->nslotmap * g->nmb; i++)
        if (!get_i32(c, "slot", &g->slotmap[i]))
            return false;
    for (int64_t i = 0; i < (int64_t)g->nslotmap * g->nmb; i++)
        if (g->slotmap[i] < 0 || g->slotmap[i] >= g->nmb)
            return rfail(c->r, "section %s: slot map %lld gives microbatch %lld slot %d; the "
                         "slots are 0 .. %d", c->sec, (long long)(i / g->nmb),
                         (long long)(i % g->nmb), g->slotmap[i], g->nmb - 1);
    if (!get_count(c, "the slotted buffer count", 8, &n) ||
        !ALLOC(c->r, g->buf_slots, g->nbuf) || !ALLOC(c->r, g->buf_copy_at, g->nbuf))
        return false;
    for (int b = 0; b < g->nbuf; b++)
        g->buf_slots[b] = -1;
    /* twice: the copies counted, then read */
    size_t pos = c->pos;
    for (int pass = 0; pass < 2; pass++) {
        c->pos = pos;
        g->ncopy = 0;
        for (int i = 0, last = -1; i < n; i++) {
            int32_t b, map;
            if (!get_i32(c, "slotted buffer", &b) || !get_i32(c, "slot map", &map))
                return false;
            if (b <= last || b >= g->nbuf || map < 0 || map >= g->nslotmap)
                return rfail(c->r, "section %s: slotted buffer %d (slot map %d) is out of order "
                             "or out of range (the program has %d buffers and %d slot maps)",
                             c->sec, b, map, g->nbuf, g->nslotmap);
            int64_t k = slots_of(g, map);
            if ((uint64_t)k > (c->n - c->pos) / 4)
                return rfail(c->r, "section %s: slotted buffer %d's %lld copies do not fit the "
                             "%zu bytes left", c->sec, b, (long long)k, c->n - c->pos);
            g->buf_slots[b] = map;
            g->buf_copy_at[b] = g->ncopy;
            for (int64_t q = 0; q < k; q++) {
                int32_t copy = 0;
                if (!get_i32(c, "copy", &copy))
                    return false;
                if (pass)
                    g->copy_buf[g->ncopy] = copy;
                g->ncopy++;
            }
            last = b;
        }
        if (!pass && !ALLOC(c->r, g->copy_buf, g->ncopy))
            return false;
    }
    if (!get_count(c, "the step count", 12, &n) || !ALLOC(c->r, g->instr_step, g->ninstr))
        return false;
    for (int i = 0, last = -1; i < n; i++) {
        int32_t k;
        int64_t step;
        if (!get_i32(c, "stepped instruction", &k) || !get_i64(c, "step", &step))
            return false;
        if (k <= last || k >= g->ninstr || step == 0)
            return rfail(c->r, "section %s: the step of instruction %d is out of order, out of "
                         "range (the program has %d instructions) or 0", c->sec, k, g->ninstr);
        g->instr_step[k] = step;
        last = k;
    }
    return true;
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
    c->where[0] = 0;
    return read_loop(c, g) && close_section(c);
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
    if (!get_count(c, "the entry count", 4, &m->nentry) || !ALLOC(c->r, m->entry, m->nentry))
        return false;
    for (int j = 0; j < m->nentry; j++)
        if (!get_str(c, "entry", &m->entry[j]))
            return false;
    if (!get_count(c, "the cubin count", 12, &m->ncubin) || !ALLOC(c->r, m->cubin, m->ncubin))
        return false;
    for (int j = 0; j < m->ncubin; j++)
        if (!get_image(c, "cubin", &m->cubin[j]))
            return false;
    return get_image(c, "PTX", &m->ptx);
}

static bool read_kernel(cur *c, rt_kernel *k)
{
    return get_i32(c, "stage", &k->stage) && get_str(c, "name", &k->name) &&
           get_i32(c, "module", &k->module) && get_i32(c, "entry", &k->entry) &&
           get_u8(c, "strategy", &k->strategy) &&
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
    c->where[0] = 0;
    return get_i32(c, "the init module", &p->init_module) && close_section(c);
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
    if (su_crc32(0, d, 24) != get_le(d + 24, 4))
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
    su_status msg;
    if (!rt_plan_validate(p, &msg)) {
        su_status_copy(r->err, &msg);
        su_prefix(r->err, "%s: ", r->what);
        return false;
    }
    return true;
}

/* Counts are checked against the bytes left before anything is allocated
 * for them; every message starts with "what: ". */
rt_plan *rt_plan_read(const uint8_t *data, size_t len, const char *what, su_status *err)
{
    reader r = {data, len, what ? what : "plan", err, NULL};
    r.p = calloc(1, sizeof *r.p);
    if (!r.p) {
        rnomem(&r);
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
    rt_plan_free_blocks(p->mem_);
    free(p);
}
