/* print.c: the textual form of a module (ir_print). The format is the one
 * the header of ir.h shows; parse.c reads it back, and the two must agree
 * byte for byte: print(parse(print(m))) == print(m) for any module.
 *
 * The only subtle part is naming values: explicit names are kept when they
 * are valid and unique; a repeated name becomes `name.K` (K the smallest
 * suffix that is free); every other value is numbered %0, %1, ... in order
 * of definition. Numbers are all digits and names start with a letter or
 * '_', so the two never collide. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* Attribute names, indexed by IR_A_* bit; the bit order is the print order. */
static const char *const attr_names[] = {
    "name", "init", "value", "axis", "keepdims", "eps", "causal",
    "perm", "shape", "dtype", "dim", "dim2", "axes",
    "lr", "momentum", "beta1", "beta2", "wd", "offset", "peer", "tag", "reduce", "bound",
    "trans", "heads_inner", "parts", "reversed",
};
/* all_reduce's operations, indexed by ir_reduce (the same table as parse.c's) */
static const char *const reduce_names[IR_NREDUCE] = {"sum", "max"};
enum { NATTRS = sizeof attr_names / sizeof attr_names[0] };

/* ---- a set of strings (open addressing), for the names in use ---- */

typedef struct name_slot {
    const char *key;    /* NULL: empty */
    bool printed;       /* some value already prints as this name */
    int next_k;         /* as a base: no free `key.K` below this K */
} name_slot;

typedef struct name_set {
    name_slot *slot;
    size_t cap, n;      /* cap: a power of two, kept at most half full */
} name_set;

static name_slot *set_find(const name_set *set, const char *key)
{
    size_t i = su_fnv_str(SU_FNV_BASIS, key) & (set->cap - 1);
    while (set->slot[i].key && strcmp(set->slot[i].key, key))
        i = (i + 1) & (set->cap - 1);
    return &set->slot[i];
}

static void set_grow(name_set *set, jmp_buf *oom)
{
    name_set old = *set;
    size_t cap = old.cap ? old.cap * 2 : 64;
    set->slot = su_xmalloc(oom, cap * sizeof *set->slot);
    set->cap = cap;
    memset(set->slot, 0, cap * sizeof *set->slot);
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i].key)
            *set_find(set, old.slot[i].key) = old.slot[i];
    free(old.slot);
}

/* The slot of key, added (not printed, next_k 1) when absent. The pointer
 * is valid until the next call. */
static name_slot *set_add(name_set *set, jmp_buf *oom, const char *key)
{
    if (2 * (set->n + 1) > set->cap)
        set_grow(set, oom);
    name_slot *s = set_find(set, key);
    if (!s->key) {
        s->key = key;
        s->next_k = 1;
        set->n++;
    }
    return s;
}

/* ---- value names ---- */

typedef struct printer {
    const ir_module *m;
    su_buf *out;
    jmp_buf *oom;       /* the caller's */
    su_arena scratch;   /* generated names */
    su_arena *keep;     /* ir_names_init: the names and their arrays, NULL: scratch */
    name_set names;
    const char **vname; /* by value id: the printed name, NULL if numbered */
    int *vnum;          /* by value id: the number; -1 if not defined here */
} printer;

/* Must match parse.c's value-name token: [A-Za-z_][A-Za-z0-9_.]* */
static bool valid_name(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
            return false;
    return true;
}

/* A name for a second value called base. The smallest free K only grows
 * (names are only ever added), so the search resumes where the last one
 * for this base stopped, which keeps n repeats of a name linear. */
static const char *fresh_name(printer *p, const char *base)
{
    int k = set_add(&p->names, p->oom, base)->next_k;
    char *name;
    for (;; k++) {
        name = su_sprintf(p->keep ? p->keep : &p->scratch, "%s.%d", base, k);
        if (!set_find(&p->names, name)->key)
            break;
    }
    set_add(&p->names, p->oom, name)->printed = true;
    set_add(&p->names, p->oom, base)->next_k = k + 1;
    return name;
}

static void name_value(printer *p, const ir_value *v, int *counter)
{
    if (v->id < 0 || v->id >= p->m->next_id)
        return; /* not made by this module: prints as %? */
    if (!valid_name(v->name)) {
        p->vnum[v->id] = (*counter)++;
        return;
    }
    name_slot *s = set_add(&p->names, p->oom, v->name);
    if (!s->printed) {
        s->printed = true;
        p->vname[v->id] = v->name;
    } else
        p->vname[v->id] = fresh_name(p, v->name);
    p->vnum[v->id] = 0;
}

/* Names every value before anything prints, so that the whole set of
 * explicit names is known when a repeat needs a fresh one. */
static void name_values(printer *p)
{
    const ir_module *m = p->m;
    size_t n = (size_t)(m->next_id > 0 ? m->next_id : 1);
    su_arena *a = p->keep ? p->keep : &p->scratch;
    p->vname = su_alloc(a, n * sizeof *p->vname);
    p->vnum = su_alloc(a, n * sizeof *p->vnum);
    for (size_t i = 0; i < n; i++)
        p->vnum[i] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int r = 0; r < op->nres; r++)
            if (valid_name(op->res[r]->name))
                set_add(&p->names, p->oom, op->res[r]->name);
    }
    int counter = 0;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int r = 0; r < op->nres; r++)
            name_value(p, op->res[r], &counter);
    }
}

static void put_value(printer *p, const ir_value *v)
{
    if (!v || v->id < 0 || v->id >= p->m->next_id || p->vnum[v->id] < 0)
        su_buf_puts(p->out, "%?"); /* a broken module; the verifier says why */
    else if (p->vname[v->id])
        su_buf_printf(p->out, "%%%s", p->vname[v->id]);
    else
        su_buf_printf(p->out, "%%%d", p->vnum[v->id]);
}

/* ---- small pieces ---- */

static void put_double(su_buf *b, double d)
{
    char s[32];
    su_fmt_double(s, d);
    su_buf_puts(b, s);
}

/* Escapes '"', '\\' and every byte outside printable ASCII, so the text is
 * one line of ASCII whatever the name holds. */
static void put_string(su_buf *b, const char *s)
{
    su_buf_putc(b, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            su_buf_printf(b, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            su_buf_printf(b, "\\x%02x", c);
        else
            su_buf_putc(b, (char)c);
    }
    su_buf_putc(b, '"');
}

static const char *axis_name(const ir_mesh *mesh, int a)
{
    return a >= 0 && a < mesh->naxes ? mesh->name[a] : "?";
}

static void put_init(su_buf *b, const ir_init *in, const char *param)
{
    switch (in->kind) {
    case IR_INIT_NONE: su_buf_puts(b, "none"); break;
    case IR_INIT_ZEROS: su_buf_puts(b, "zeros"); break;
    case IR_INIT_ONES: su_buf_puts(b, "ones"); break;
    case IR_INIT_NORMAL:
        su_buf_puts(b, "normal(");
        put_double(b, in->a);
        su_buf_putc(b, ')');
        break;
    case IR_INIT_UNIFORM:
        su_buf_puts(b, "uniform(");
        put_double(b, in->a);
        su_buf_puts(b, ", ");
        put_double(b, in->b);
        su_buf_putc(b, ')');
        break;
    case IR_INIT_PARAM:
        su_buf_puts(b, "param(");
        put_string(b, param);
        su_buf_putc(b, ')');
        break;
    default: su_buf_puts(b, "?"); break;
    }
}

static void put_int_list(su_buf *b, const int64_t *v, int n)
{
    su_buf_putc(b, '[');
    for (int i = 0; i < n; i++)
        su_buf_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    su_buf_putc(b, ']');
}

/* ---- ops ---- */

/* Prints the value of the attribute with bit number bit. */
static void put_attr(printer *p, ir_opcode code, const ir_attrs *a, int bit)
{
    su_buf *b = p->out;
    int nlist = a->nlist < 0 ? 0 : a->nlist > IR_MAX_RANK ? IR_MAX_RANK : a->nlist;
    switch (1 << bit) {
    case IR_A_NAME: put_string(b, a->name); break;
    case IR_A_INIT: put_init(b, &a->init, a->init_param); break;
    case IR_A_VALUE: put_double(b, a->value); break;
    case IR_A_AXIS: su_buf_printf(b, "%lld", (long long)a->axis); break;
    case IR_A_KEEPDIMS: su_buf_puts(b, a->keepdims ? "true" : "false"); break;
    case IR_A_EPS: put_double(b, a->eps); break;
    case IR_A_CAUSAL: su_buf_puts(b, a->causal ? "true" : "false"); break;
    case IR_A_PERM:
    case IR_A_SHAPE: put_int_list(b, a->list, nlist); break;
    case IR_A_DTYPE:
        su_buf_puts(b, (unsigned)a->dtype < IR_NDTYPES ? ir_dtype_name(a->dtype) : "?");
        break;
    case IR_A_DIM: su_buf_printf(b, "%lld", (long long)a->dim); break;
    case IR_A_DIM2: su_buf_printf(b, "%lld", (long long)a->dim2); break;
    case IR_A_LR: put_double(b, a->lr); break;
    case IR_A_MOMENTUM: put_double(b, a->momentum); break;
    case IR_A_BETA1: put_double(b, a->beta1); break;
    case IR_A_BETA2: put_double(b, a->beta2); break;
    case IR_A_WD: put_double(b, a->wd); break;
    case IR_A_OFFSET: su_buf_printf(b, "%lld", (long long)a->offset); break;
    case IR_A_PEER: su_buf_printf(b, "%lld", (long long)a->peer); break;
    case IR_A_TAG: su_buf_printf(b, "%lld", (long long)a->tag); break;
    case IR_A_BOUND: su_buf_printf(b, "%lld", (long long)a->bound); break;
    case IR_A_REDUCE:
        su_buf_puts(b, a->reduce < IR_NREDUCE ? reduce_names[a->reduce] : "?");
        break;
    case IR_A_HEADS: /* true: all of them; else the list of those inner */
        if (a->heads_inner == ir_heads_all(code) || !a->heads_inner) {
            su_buf_puts(b, a->heads_inner ? "true" : "false");
            break;
        }
        su_buf_putc(b, '[');
        for (int i = 0, n = 0; i < 8; i++)
            if (a->heads_inner >> i & 1)
                su_buf_printf(b, "%s%s", n++ ? ", " : "",
                              ir_heads_name(code, i) ? ir_heads_name(code, i) : "?");
        su_buf_putc(b, ']');
        break;
    case IR_A_PARTS: su_buf_puts(b, a->parts ? "true" : "false"); break;
    case IR_A_REVERSED: su_buf_puts(b, a->reversed ? "true" : "false"); break;
    case IR_A_TRANS:
        su_buf_puts(b, a->trans == IR_TRANS_A ? "a" : a->trans == IR_TRANS_B ? "b"
                       : a->trans == (IR_TRANS_A | IR_TRANS_B) ? "ab" : "?");
        break;
    case IR_A_AXES:
        su_buf_putc(b, '[');
        for (int i = 0; i < a->naxes && i < IR_MAX_AXES; i++)
            su_buf_printf(b, "%s%s", i ? ", " : "", axis_name(&p->m->mesh, a->axes[i]));
        su_buf_putc(b, ']');
        break;
    default: su_unreachable();
    }
}

/* " {name = v, ...}": every attribute the op table gives the op, but an
 * optional one at its default (reduce = sum, an input's init = none, no
 * trans, heads_inner, parts and reversed false). */
static void put_attrs(printer *p, const ir_op *op)
{
    unsigned bits = ir_ops[op->code].attrs;
    if (op->a->reduce == IR_RED_SUM)
        bits &= ~(unsigned)IR_A_REDUCE;
    if (!op->a->trans)
        bits &= ~(unsigned)IR_A_TRANS;
    if (!op->a->heads_inner)
        bits &= ~(unsigned)IR_A_HEADS;
    if (!op->a->parts)
        bits &= ~(unsigned)IR_A_PARTS;
    if (!op->a->reversed)
        bits &= ~(unsigned)IR_A_REVERSED;
    if (op->code == IR_INPUT && op->a->init.kind == IR_INIT_NONE)
        bits &= ~(unsigned)IR_A_INIT;
    if (!bits)
        return;
    su_buf_puts(p->out, " {");
    bool first = true;
    for (int bit = 0; bit < NATTRS; bit++)
        if (bits & (1u << bit)) {
            su_buf_printf(p->out, "%s%s = ", first ? "" : ", ", attr_names[bit]);
            if ((1u << bit) == IR_A_TAG && (op->code == IR_SEND || op->code == IR_RECV)) {
                ir_attrs t = *op->a;
                t.tag = ir_p2p_tag(op);
                put_attr(p, op->code, &t, bit);
            } else {
                put_attr(p, op->code, op->a, bit);
            }
            first = false;
        }
    su_buf_putc(p->out, '}');
}

/* %r = name %a, %b {attrs} : type sharding rep N recompute K phase P */
static void put_op(printer *p, const ir_op *op)
{
    su_buf *b = p->out;
    for (int r = 0; r < op->nres; r++) {
        su_buf_puts(b, r ? ", " : "");
        put_value(p, op->res[r]);
    }
    su_buf_puts(b, op->nres ? " = " : "");
    su_buf_puts(b, ir_ops[op->code].name);
    for (int i = 0; i < op->nin; i++) {
        su_buf_puts(b, i ? ", " : " ");
        put_value(p, op->in[i]);
    }
    put_attrs(p, op);
    for (int r = 0; r < op->nres; r++) {
        const ir_value *v = op->res[r];
        su_buf_puts(b, r ? ", " : " : ");
        ir_type_print(b, &v->type);
        if (v->sh.kind != IR_SH_NONE) {
            su_buf_putc(b, ' ');
            ir_sharding_print(b, &v->sh, &p->m->mesh, v->type.rank);
        }
    }
    if (op->rep >= 0)
        su_buf_printf(b, " rep %d", op->rep);
    if (op->recompute)
        su_buf_printf(b, " recompute %d", op->recompute);
    if (op->phase != IR_PH_FORWARD)
        su_buf_printf(b, " phase %s", ir_phase_name((ir_phase)op->phase));
    su_buf_putc(b, '\n');
}

/* ---- module-level lines ---- */

static void put_header(printer *p)
{
    const ir_module *m = p->m;
    su_buf *b = p->out;
    if (m->mesh.naxes > 0) {
        su_buf_puts(b, "mesh ");
        for (int a = 0; a < m->mesh.naxes; a++)
            su_buf_printf(b, "%s%s = %lld", a ? ", " : "", m->mesh.name[a],
                          (long long)m->mesh.size[a]);
        su_buf_putc(b, '\n');
    }
    if (m->partitioned)
        su_buf_puts(b, "partitioned\n");
    const ir_pipeline *pp = &m->pipe;
    if (pp->axis < 0)
        return;
    su_buf_printf(b, "pipeline over %s repeats %d microbatches %d schedule ",
                  axis_name(&m->mesh, pp->axis), pp->repeats, pp->microbatches);
    switch (pp->schedule) {
    case IR_SCHED_GPIPE: su_buf_puts(b, "gpipe"); break;
    case IR_SCHED_1F1B: su_buf_puts(b, "1f1b"); break;
    case IR_SCHED_INTERLEAVED: su_buf_printf(b, "interleaved(%d)", pp->chunks); break;
    default: su_buf_puts(b, "?"); break;
    }
    if (m->stage >= 0)
        su_buf_printf(b, " stage %d", m->stage);
    su_buf_putc(b, '\n');
}

static void put_hyper(su_buf *b, const char *name, double d, bool last)
{
    su_buf_printf(b, "%s = ", name);
    put_double(b, d);
    su_buf_puts(b, last ? ")" : ", ");
}

/* train %loss [with sgd(...) | adamw(...)] [zero N over axis] */
static void put_train(printer *p)
{
    const ir_train *t = &p->m->train;
    su_buf *b = p->out;
    bool sched = t->warmup > 0 || t->decay != IR_DECAY_NONE;
    su_buf_puts(b, "train ");
    put_value(p, t->loss);
    if (t->opt == IR_OPT_SGD) {
        su_buf_puts(b, " with sgd(");
        put_hyper(b, "lr", t->lr, false);
        put_hyper(b, "momentum", t->momentum, false);
        put_hyper(b, "wd", t->wd, !(t->clip > 0) && !sched);
    } else if (t->opt == IR_OPT_ADAMW) {
        su_buf_puts(b, " with adamw(");
        put_hyper(b, "lr", t->lr, false);
        put_hyper(b, "beta1", t->beta1, false);
        put_hyper(b, "beta2", t->beta2, false);
        put_hyper(b, "eps", t->eps, false);
        put_hyper(b, "wd", t->wd, !(t->clip > 0) && !sched);
    }
    if (t->opt != IR_OPT_NONE && t->clip > 0)
        put_hyper(b, "clip", t->clip, !sched);
    if (t->opt != IR_OPT_NONE && sched) {
        static const char *const decays[] = {"none", "cosine", "linear"};
        su_buf_printf(b, "warmup = %lld, decay = %s, steps = %lld, ", (long long)t->warmup,
                      decays[t->decay], (long long)t->steps); /* counts */
        put_hyper(b, "min_lr", t->min_lr, true);
    }
    if (t->zero > 0)
        su_buf_printf(b, " zero %d over %s", t->zero, axis_name(&p->m->mesh, t->zero_axis));
    if (t->keep_gathered)
        su_buf_puts(b, " keep gathered");
    su_buf_putc(b, '\n');
}

static void put_module(printer *p)
{
    const ir_module *m = p->m;
    name_values(p);
    put_header(p);
    for (int i = 0; i < m->ops.n; i++)
        put_op(p, IR_OP(m, i));
    for (int i = 0; i < m->outputs.n; i++) {
        su_buf_puts(p->out, "output ");
        put_string(p->out, IR_OUTPUT(m, i)->name);
        su_buf_puts(p->out, " = ");
        put_value(p, IR_OUTPUT(m, i)->v);
        su_buf_putc(p->out, '\n');
    }
    for (int i = 0; i < m->updates.n; i++) {
        su_buf_puts(p->out, "update ");
        put_value(p, IR_UPDATE(m, i)->src);
        su_buf_puts(p->out, " = ");
        put_value(p, IR_UPDATE(m, i)->v);
        if (IR_UPDATE(m, i)->grad) {
            su_buf_puts(p->out, " grad ");
            put_value(p, IR_UPDATE(m, i)->grad);
        }
        su_buf_putc(p->out, '\n');
    }
    if (m->train.loss)
        put_train(p);
}

static void print(void *arg)
{
    put_module(arg);
}

/* The printer's own memory is freed here after an allocation failure too. */
void ir_print(const ir_module *m, su_buf *out)
{
    printer p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.out = out;
    p.oom = out->arena ? out->arena->oom : out->oom;
    if (!p.oom)
        p.oom = m->oom;
    su_arena_init(&p.scratch, p.oom);
    bool done = su_guarded(p.oom, print, &p);
    free(p.names.slot);
    su_arena_free(&p.scratch);
    if (!done)
        su_oom(p.oom);
}


static void names_work(void *arg)
{
    name_values(arg);
}

void ir_names_init(ir_names *n, const ir_module *m, su_arena *a)
{
    printer p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.keep = a;
    p.oom = a->oom ? a->oom : m->oom;
    su_arena_init(&p.scratch, p.oom);
    bool done = su_guarded(p.oom, names_work, &p);
    free(p.names.slot);
    su_arena_free(&p.scratch);
    if (!done)
        su_oom(p.oom);
    n->a = a;
    n->n = m->next_id;
    n->vname = p.vname;
    n->vnum = p.vnum;
    n->text = su_alloc(a, ((size_t)n->n + 1) * sizeof *n->text);
}

const char *ir_names_get(ir_names *n, int id)
{
    if (id < 0 || id >= n->n || n->vnum[id] < 0)
        return NULL;
    if (!n->text[id])
        n->text[id] = n->vname[id] ? su_sprintf(n->a, "%%%s", n->vname[id])
                                   : su_sprintf(n->a, "%%%d", n->vnum[id]);
    return n->text[id];
}

/* Names every value as ir_print would, into a: ir_names's names, each
 * made at once. */
const char **ir_value_print_names(const ir_module *m, su_arena *a)
{
    ir_names n;
    ir_names_init(&n, m, a);
    const char **named = su_alloc(a, (size_t)(m->next_id + 1) * sizeof *named);
    for (int id = 0; id < m->next_id; id++)
        named[id] = ir_names_get(&n, id);
    return named;
}
