/* ir.c: the module and its builder. The vocabulary it is made of (dtypes,
 * types, meshes, shardings, the op table) is in types.c, shape rules in
 * infer.c, text in print.c/parse.c, invariants in verify.c. */
#include "ir.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(ir_value) <= 176, "ir_value grew: a pipeline's stages hold millions "
                                         "(mind the padding between its fields)");

/* ---- the module ---- */

bool ir_op_reads(const ir_op *op, const ir_value *v)
{
    for (int k = 0; k < op->nin; k++)
        if (op->in[k] == v)
            return true;
    return false;
}

bool ir_op_fixed(const ir_op *op)
{
    ir_opclass c = ir_ops[op->code].cls;
    return c == IR_C_COMM || c == IR_C_P2P || op->code == IR_INSTANCES;
}

const ir_value *ir_renamed_from(const ir_value *v)
{
    while (v->def && v->def->code == IR_CONSTRAIN && v->def->nin == 1 &&
           ir_type_eq(&v->type, &v->def->in[0]->type))
        v = v->def->in[0];
    return v;
}

ir_module *ir_module_new(jmp_buf *oom)
{
    ir_module *m = su_xmalloc(oom, sizeof *m);
    memset(m, 0, sizeof *m);
    su_arena_init(&m->arena, oom);
    m->oom = oom;
    m->pipe.axis = -1;
    m->pipe.microbatches = 1;
    m->pipe.chunks = 1;
    m->stage = -1;
    m->train.zero_axis = -1;
    return m;
}

void ir_shared_free(ir_shared *sh)
{
    if (!sh)
        return;
    free(sh->run);
    free(sh->piece);
    free(sh);
}

void ir_module_free(ir_module *m)
{
    if (!m)
        return;
    ir_shared_free(m->shared);
    su_vec_free(&m->ops);
    su_vec_free(&m->outputs);
    su_vec_free(&m->updates);
    su_arena_free(&m->arena);
    free(m);
}

/* ---- attributes, each once ---- */

/* a's fields into *z, zeroed first so that its padding is zero whatever
 * a's was, and its strings' pointers cleared (compared by their text). */
static void attrs_bare(const ir_attrs *a, ir_attrs *z)
{
    /* a field added to ir_attrs is copied here too */
    _Static_assert(sizeof(ir_attrs) == 272, "ir_attrs changed: copy its new fields here");
    memset(z, 0, sizeof *z);
    z->init.kind = a->init.kind;
    z->init.a = a->init.a;
    z->init.b = a->init.b;
    z->value = a->value;
    z->axis = a->axis;
    z->keepdims = a->keepdims;
    z->causal = a->causal;
    z->eps = a->eps;
    z->nlist = a->nlist;
    memcpy(z->list, a->list, sizeof z->list);
    z->dtype = a->dtype;
    z->dim = a->dim;
    z->dim2 = a->dim2;
    z->naxes = a->naxes;
    memcpy(z->axes, a->axes, sizeof z->axes);
    z->lr = a->lr;
    z->momentum = a->momentum;
    z->beta1 = a->beta1;
    z->beta2 = a->beta2;
    z->wd = a->wd;
    z->offset = a->offset;
    z->peer = a->peer;
    z->tag = a->tag;
    z->reduce = a->reduce;
    z->bound = a->bound;
    z->trans = a->trans;
    z->heads_inner = a->heads_inner;
    z->parts = a->parts;
    z->reversed = a->reversed;
}

/* The hash of attributes a, z its attrs_bare form: z's words, then the
 * strings' text. */
static uint64_t attrs_hash(const ir_attrs *a, const ir_attrs *z)
{
    /* four lanes of words, so that the multiplies do not wait on each other */
    uint64_t h[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                     0x27D4EB2F165667C5ull};
    const unsigned char *p = (const unsigned char *)z;
    _Static_assert(sizeof *z % 32 == 16, "two words after the lanes' rounds");
    size_t i = 0;
    for (; i + 32 <= sizeof *z; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * 0xff51afd7ed558ccdull;
        }
    for (int k = 0; i < sizeof *z; i += 8, k++) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h[k] = (h[k] ^ w) * 0xff51afd7ed558ccdull;
    }
    uint64_t x = h[0] ^ (h[1] >> 17) ^ (h[2] << 7) ^ (h[3] >> 29);
    x = (x ^ (x >> 32)) * 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 29;
    return su_fnv_str(su_fnv_str(x, a->name) ^ 1, a->init_param);
}

static bool str_eq(const char *x, const char *y)
{
    return x == y || (x && y && !strcmp(x, y));
}

/* Whether set c (the module's: attrs_bare's form but for its strings)
 * holds attributes a, z their attrs_bare form. */
static bool attrs_eq(const ir_attrs *c, const ir_attrs *a, const ir_attrs *z)
{
    const size_t ip = offsetof(ir_attrs, init_param), skip = sizeof(const char *);
    _Static_assert(offsetof(ir_attrs, name) == 0, "name first");
    const unsigned char *x = (const unsigned char *)c, *y = (const unsigned char *)z;
    return !memcmp(x + skip, y + skip, ip - skip) &&
           !memcmp(x + ip + skip, y + ip + skip, sizeof *z - ip - skip) &&
           str_eq(c->name, a->name) && str_eq(c->init_param, a->init_param);
}

/* a's copy in set t, made in arena ar when t has none. */
static const ir_attrs *attrs_in(ir_attrs_set *t, su_arena *ar, const ir_attrs *a)
{
    static const ir_attrs none;
    if (!a)
        a = &none;
    ir_attrs z;
    attrs_bare(a, &z);
    uint64_t h = attrs_hash(a, &z);
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        const ir_attrs **slot = su_alloc(ar, cap * sizeof *slot);
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slot[i])
                continue;
            ir_attrs zi;
            attrs_bare(t->slot[i], &zi);
            size_t j = (size_t)attrs_hash(t->slot[i], &zi) & (cap - 1);
            while (slot[j])
                j = (j + 1) & (cap - 1);
            slot[j] = t->slot[i];
        }
        t->slot = slot;
        t->cap = cap;
    }
    size_t j = (size_t)h & (t->cap - 1);
    for (; t->slot[j]; j = (j + 1) & (t->cap - 1))
        if (attrs_eq(t->slot[j], a, &z))
            return t->slot[j];
    ir_attrs *x = su_alloc(ar, sizeof *x);
    memcpy(x, &z, sizeof z); /* padding zero: the bytes same_structure compares */
    if (a->name) /* the module owns its strings */
        x->name = su_strdup(ar, a->name);
    if (a->init_param)
        x->init_param = su_strdup(ar, a->init_param);
    t->slot[j] = x;
    t->n++;
    return x;
}

const ir_attrs *ir_attrs_intern(ir_module *m, const ir_attrs *a)
{
    return attrs_in(&m->attrs, &m->arena, a);
}

void ir_op_set_attrs(ir_module *m, ir_op *op, const ir_attrs *a)
{
    op->a = ir_attrs_intern(m, a);
}

/* ---- compaction ---- */

/* A module's copy being made: the new arena, each old value's copy (by
 * id) and each op's, and whether every pointer found its copy. */
typedef struct compact_run {
    ir_module *m;
    su_arena a;
    ir_value **val;     /* [next_id] (malloc'd) */
    ir_op **op;         /* [ops.n] (malloc'd) */
    ir_attrs_set attrs; /* the ops' attributes, each once, in a */
    const ir_attrs **from, **to; /* [nmap] (malloc'd): attrs_copy's, made by attrs_map */
    size_t nmap, nfrom;
    su_ptrmap names;    /* names copied, by the old pointer (in a) */
    bool whole;
} compact_run;

/* The copy of old attributes o in c's set, made when an op first has
 * them: the old set's that no op has any more (a pipeline stage's middle
 * microbatches' sends and receives, each with its own tag, once
 * pass_share_instances has taken them out) are not copied. Found by the
 * old pointer after (c->from and c->to, open addressing over the old
 * set's size; attributes outside the old set, which no pass makes, are
 * interned by their content each time). */
static const ir_attrs *attrs_copy(compact_run *c, const ir_attrs *o)
{
    size_t cap = c->nmap;
    size_t j = (size_t)(((uintptr_t)o >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
    for (; c->from[j]; j = (j + 1) & (cap - 1))
        if (c->from[j] == o)
            return c->to[j];
    const ir_attrs *x = attrs_in(&c->attrs, &c->a, o);
    if (2 * (c->nfrom + 1) <= cap) { /* room left (an old set's are at most half) */
        c->from[j] = o;
        c->to[j] = x;
        c->nfrom++;
    }
    return x;
}

/* c->from and c->to, empty: room for every attribute set of the old
 * module. */
static void attrs_map(compact_run *c)
{
    const ir_attrs_set *old = &c->m->attrs;
    size_t cap = 16;
    while (cap < 2 * old->n + 2)
        cap *= 2;
    c->from = su_xmalloc(c->m->oom, cap * sizeof *c->from);
    c->to = su_xmalloc(c->m->oom, cap * sizeof *c->to);
    memset(c->from, 0, cap * sizeof *c->from);
    c->nmap = cap;
    c->nfrom = 0;
}

static const char *dup_name(su_arena *a, const char *s)
{
    return s ? su_strdup(a, s) : NULL;
}

/* A value's name in the copy: each old string copied once, however many
 * values share it (a pipeline stage's every microbatch names its values
 * as the source does). */
static const char *value_name(compact_run *c, const char *s)
{
    if (!s)
        return NULL;
    char *x = su_ptrmap_get(&c->names, s);
    if (!x) {
        x = su_strdup(&c->a, s);
        su_ptrmap_put(&c->names, s, x);
    }
    return x;
}

/* The copy of old value v; NULL (and the copy not whole) when v is one no
 * op of the module makes. */
static ir_value *copy_of(compact_run *c, const ir_value *v)
{
    if (!v)
        return NULL;
    ir_value *x = v->id >= 0 && v->id < c->m->next_id ? c->val[v->id] : NULL;
    if (!x)
        c->whole = false;
    return x;
}

static void compact_work(void *arg)
{
    compact_run *c = arg;
    ir_module *m = c->m;
    su_arena *a = &c->a;
    int n = m->ops.n;
    c->val = su_xmalloc(m->oom, ((size_t)m->next_id + 1) * sizeof *c->val);
    memset(c->val, 0, ((size_t)m->next_id + 1) * sizeof *c->val);
    c->op = su_xmalloc(m->oom, ((size_t)n + 1) * sizeof *c->op);
    attrs_map(c);
    c->whole = true;
    /* the ops and their results, in order; then their operands */
    for (int i = 0; i < n; i++) {
        const ir_op *o = IR_OP(m, i);
        ir_op *x = su_alloc(a, sizeof *x);
        *x = *o;
        x->a = attrs_copy(c, o->a);
        x->res = su_alloc(a, (size_t)(o->nres ? o->nres : 1) * sizeof *x->res);
        for (int r = 0; r < o->nres; r++) {
            const ir_value *v = o->res[r];
            ir_value *y = su_alloc(a, sizeof *y);
            *y = *v;
            y->name = value_name(c, v->name);
            y->def = x;
            x->res[r] = y;
            if (v->id < 0 || v->id >= m->next_id || c->val[v->id])
                c->whole = false; /* an id out of range, or made twice */
            else
                c->val[v->id] = y;
        }
        c->op[i] = x;
    }
    for (int i = 0; i < n; i++) {
        const ir_op *o = IR_OP(m, i);
        ir_op *x = c->op[i];
        x->in = su_alloc(a, (size_t)(o->nin ? o->nin : 1) * sizeof *x->in);
        for (int k = 0; k < o->nin; k++)
            x->in[k] = copy_of(c, o->in[k]);
    }
    ir_output **out = su_alloc(a, ((size_t)m->outputs.n + 1) * sizeof *out);
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        out[i] = su_alloc(a, sizeof *out[i]);
        *out[i] = *o;
        out[i]->name = dup_name(a, o->name);
        out[i]->v = copy_of(c, o->v);
    }
    ir_update **up = su_alloc(a, ((size_t)m->updates.n + 1) * sizeof *up);
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        up[i] = su_alloc(a, sizeof *up[i]);
        up[i]->src = copy_of(c, u->src);
        up[i]->v = copy_of(c, u->v);
        up[i]->grad = copy_of(c, u->grad);
    }
    ir_value *loss = copy_of(c, m->train.loss);
    const char *axis[IR_MAX_AXES];
    for (int d = 0; d < m->mesh.naxes; d++)
        axis[d] = dup_name(a, m->mesh.name[d]);
    if (!c->whole)
        return; /* the module stays as it was, for the verifier to name */
    for (int i = 0; i < n; i++)
        m->ops.v[i] = c->op[i];
    for (int i = 0; i < m->outputs.n; i++)
        m->outputs.v[i] = out[i];
    for (int i = 0; i < m->updates.n; i++)
        m->updates.v[i] = up[i];
    m->train.loss = loss;
    for (int d = 0; d < m->mesh.naxes; d++)
        m->mesh.name[d] = axis[d];
    m->attrs = c->attrs;
    su_arena old = m->arena;
    m->arena = c->a;
    c->a = old; /* freed by the caller */
}

bool ir_module_compact(ir_module *m)
{
    compact_run c = {.m = m};
    su_arena_init(&c.a, m->arena.oom);
    c.names.a = &c.a;
    bool done = su_guarded(m->oom, compact_work, &c);
    bool whole = done && c.whole;
    su_arena_free(&c.a); /* the old arena once compacted, else the copy */
    free(c.val);
    free(c.op);
    free(c.from);
    free(c.to);
    if (!done)
        su_oom(m->oom);
    return whole;
}

ir_op *ir_append(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                 const ir_attrs *a, const ir_type *res_types)
{
    return ir_append_interned(m, code, in, nin, ir_attrs_intern(m, a), res_types);
}

ir_op *ir_append_interned(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                          const ir_attrs *interned, const ir_type *res_types)
{
    /* the op, its operands' and results' arrays and its results in one
     * block (a pipeline's stages hold millions of ops: 16 bytes an op
     * fewer than four blocks rounded up apart) */
    int nres = ir_ops[code].nres;
    size_t nin_a = (size_t)(nin ? nin : 1), nres_a = (size_t)(nres ? nres : 1);
    char *block = su_alloc(&m->arena, sizeof(ir_op) + (nin_a + nres_a) * sizeof(ir_value *) +
                                          (size_t)nres * sizeof(ir_value));
    _Static_assert(sizeof(ir_op) % _Alignof(ir_value) == 0 &&
                       sizeof(ir_value *) % _Alignof(ir_value) == 0,
                   "an op's results follow its arrays aligned");
    ir_op *op = (ir_op *)block;
    op->code = code;
    op->rep = -1;
    op->nin = nin;
    op->in = (ir_value **)(block + sizeof(ir_op));
    for (int i = 0; i < nin; i++)
        op->in[i] = in[i];
    op->a = interned;
    op->nres = nres;
    op->res = op->in + nin_a;
    ir_value *vals = (ir_value *)(op->res + nres_a);
    for (int i = 0; i < op->nres; i++) {
        ir_value *v = &vals[i];
        v->id = m->next_id++;
        v->type = res_types[i];
        v->def = op;
        v->res = i;
        op->res[i] = v;
    }
    su_vec_push(&m->ops, m->oom, op);
    return op;
}

ir_value *ir_emit(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                  ir_attrs *a, char *err, size_t errlen)
{
    const ir_type *types[8];
    if (nin > 8) {
        snprintf(err, errlen, "too many operands");
        return NULL;
    }
    for (int i = 0; i < nin; i++)
        types[i] = &in[i]->type;
    ir_type out;
    if (!ir_infer(&m->mesh, code, types, nin, a, &out, err, errlen))
        return NULL;
    return ir_append(m, code, in, nin, a, &out)->res[0];
}

void ir_add_output(ir_module *m, const char *name, ir_value *v, su_loc loc)
{
    ir_output *o = su_alloc(&m->arena, sizeof *o);
    o->name = su_strdup(&m->arena, name);
    o->v = v;
    o->loc = loc;
    su_vec_push(&m->outputs, m->oom, o);
}

void ir_add_update(ir_module *m, ir_value *src, ir_value *v, ir_value *grad)
{
    ir_update *u = su_alloc(&m->arena, sizeof *u);
    u->src = src;
    u->v = v;
    u->grad = grad;
    su_vec_push(&m->updates, m->oom, u);
}
