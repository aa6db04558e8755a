/* lower.c: statements. Walks the program in source order: the mesh and
 * constants, declarations, assignments with sharding constraints, block
 * calls (inlined, with the parameter-naming rule of LANGUAGE.md §8),
 * repeats (unrolled), the pipeline and training settings; then the checks
 * that need the whole program. */
#include "lower.h"
#include "parse.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_MAX_WORK = 5 * 1000 * 1000 };

typedef enum { AT_TOP, AT_BLOCK, AT_REPEAT } fe_where;

/* Where statements run: the scope names resolve in, the naming frame, and
 * for a block body the value it returns. */
typedef struct fe_ctx {
    fe_where where;
    fe_scope *scope;
    fe_frame *frame;
    const fe_block *block;
    bool in_repeat;
    ir_value **ret;         /* the block's results, once its return has run */
} fe_ctx;

/* ---- symbols ---- */

static const char *decl_word(const fe_sym *sym)
{
    switch (sym->kind) {
    case SYM_CONST: return "a constant";
    case SYM_BLOCK: return "a block";
    case SYM_TENSOR:
        if (sym->decl && sym->decl->kind == ST_INPUT) return "an input";
        if (sym->decl && sym->decl->kind == ST_PARAM) return "a param";
        return "a value";
    }
    su_unreachable();
}

/* Fails when name is already declared in s, unless by the same statement
 * (a repeat runs its declarations once per repetition). */
static void check_new(fe_lower *L, fe_scope *s, const char *name, su_loc loc,
                      const ast_stmt *decl)
{
    fe_sym *old = fe_map_get(&s->syms, name);
    if (!old && s->global)
        old = fe_lookup(L, s, name);
    if (old && !(decl && old->decl == decl))
        fe_fail(L, loc, "'%s' is already defined as %s (line %d)", name, decl_word(old),
                old->loc.line);
}

static fe_sym *bind(fe_lower *L, fe_scope *s, const char *name, fe_sym_kind kind,
                    const ast_stmt *decl, su_loc loc)
{
    fe_sym *sym = su_alloc(L->arena, sizeof *sym);
    sym->kind = kind;
    sym->decl = decl;
    sym->loc = loc;
    fe_map_put(&s->syms, L->arena, name, sym);
    return sym;
}

/* ---- shardings ---- */

static void check_axes_divide(fe_lower *L, const ast_shard_entry *e, const ir_sharding *sh,
                              int d, const ir_type *t, const char *what)
{
    int64_t split = ir_sharding_split(sh, &L->m->mesh, d);
    if (t->dim[d] % split == 0)
        return;
    const ir_mesh *mesh = &L->m->mesh;
    if (sh->naxes[d] == 1) {
        int a = sh->axes[d][0];
        fe_fail(L, e->loc, "dimension %d of '%s' has size %lld, which axis %s (size %lld) "
                "does not divide", d, what, (long long)t->dim[d], mesh->name[a],
                (long long)mesh->size[a]);
    }
    char names[128] = "", sizes[128] = "";
    for (int i = 0; i < sh->naxes[d]; i++) {
        int a = sh->axes[d][i];
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 mesh->name[a]);
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%lld", i ? " x " : "",
                 (long long)mesh->size[a]);
    }
    fe_fail(L, e->loc, "dimension %d of '%s' has size %lld, which axes (%s) (sizes %s = %lld) "
            "do not divide", d, what, (long long)t->dim[d], names, sizes, (long long)split);
}

/* Checks a shard(...) annotation against the value's type. */
static ir_sharding shard_eval(fe_lower *L, const ast_shard *a, const ir_type *t,
                              const char *what)
{
    ir_sharding sh = {.kind = IR_SH_FIXED};
    if (a->nentries != t->rank)
        fe_fail(L, a->loc, "the annotation of '%s' has %d entr%s, but '%s' has rank %d", what,
                a->nentries, a->nentries == 1 ? "y" : "ies", what, t->rank);
    unsigned used = 0;
    int d = 0;
    for (const ast_shard_entry *e = a->entries; e; e = e->next, d++) {
        for (const ast_axis *ax = e->axes; ax; ax = ax->next) {
            int i = ir_mesh_axis(&L->m->mesh, ax->name, strlen(ax->name));
            if (i < 0)
                fe_fail(L, ax->loc, "unknown mesh axis '%s'%s", ax->name,
                        L->m->mesh.naxes ? "" : " (the model declares no mesh)");
            if (used & (1u << i))
                fe_fail(L, ax->loc, "mesh axis '%s' appears twice in the annotation of '%s'",
                        ax->name, what);
            used |= 1u << i;
            sh.axes[d][sh.naxes[d]++] = (uint8_t)i;
        }
        check_axes_divide(L, e, &sh, d, t, what);
    }
    return sh;
}

/* ---- declarations ---- */

static void lower_mesh(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    if (L->mesh_stmt)
        fe_fail(L, st->loc, "the mesh is already declared (line %d)", L->mesh_stmt->loc.line);
    L->mesh_stmt = st;
    ir_mesh *mesh = &L->m->mesh;
    const fe_options *o = L->opt;
    int n = 0;
    for (const ast_item *it = st->items; it; it = it->next, n++) {
        if (n == IR_MAX_AXES)
            fe_fail(L, it->loc, "a mesh has at most %d axes", IR_MAX_AXES);
        if (strcmp(it->name, "_") == 0)
            fe_fail(L, it->loc, "'_' cannot name a mesh axis: in a shard annotation it means "
                                "not split");
        if (ir_mesh_axis(mesh, it->name, strlen(it->name)) >= 0)
            fe_fail(L, it->loc, "mesh axis '%s' is declared twice", it->name);
        mesh->name[n] = su_strdup(&L->m->arena, it->name);
        mesh->size[n] = it->value ? fe_const_eval(L, c->scope, it->value) : 1;
        if (mesh->size[n] < 1)
            fe_fail(L, it->value->loc, "mesh axis '%s' has size %lld; sizes must be at least 1",
                    it->name, (long long)mesh->size[n]);
        mesh->naxes = n + 1;
    }
    if (o->nmesh && (o->nmesh != n || o->mesh_too_long)) {
        char names[256] = "";
        for (int i = 0; i < n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     mesh->name[i]);
        fe_fail(L, st->loc, "--mesh gives %s%d size%s, but the mesh has %d ax%s (%s)",
                o->mesh_too_long ? "more than " : "", o->nmesh, o->nmesh == 1 ? "" : "s", n,
                n == 1 ? "is" : "es", names);
    }
    for (int i = 0; i < o->nmesh; i++) {
        if (o->mesh[i] < 1)
            fe_fail(L, st->loc, "--mesh gives size %lld for axis '%s'; sizes must be at least 1",
                    (long long)o->mesh[i], mesh->name[i]);
        mesh->size[i] = o->mesh[i];
    }
    int64_t ranks = 1;
    for (int i = 0; i < n; i++)
        if (!su_mul64(ranks, mesh->size[i], &ranks) || ranks > (1ll << 31))
            fe_fail(L, st->loc, "the mesh has more than 2^31 ranks");
}

static void lower_let(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    for (const ast_item *it = st->items; it; it = it->next) {
        check_new(L, c->scope, it->name, it->loc, NULL);
        int64_t v = 0;
        bool overridden = false;
        for (int i = 0; i < L->opt->ndefines; i++)
            if (!strcmp(L->opt->defines[i].name, it->name)) {
                v = L->opt->defines[i].value; /* the last -D wins */
                L->define_used[i] = overridden = true;
            }
        if (!overridden)
            v = fe_const_eval(L, c->scope, it->value);
        bind(L, c->scope, it->name, SYM_CONST, st, it->loc)->c = v;
    }
}

const char *fe_prefix(fe_lower *L, fe_frame *f)
{
    if (!f->prefix)
        f->prefix = su_sprintf(L->arena, "%s%s.%lld.", fe_prefix(L, (fe_frame *)f->parent),
                               f->rep_name, (long long)f->rep_index);
    return f->prefix;
}

static const char *full_name(fe_lower *L, fe_frame *f, const char *name)
{
    return su_sprintf(L->arena, "%s%s", fe_prefix(L, f), name);
}

/* An i32 param holds integers: normal has no integer meaning, and
 * uniform(LO, HI) draws integers in [LO, HI), so its bounds must be whole
 * i32 values (the runtime would otherwise floor them: uniform(-0.5, 0.5)
 * would make every element -1). */
static void check_int_init(fe_lower *L, const ast_node *n, const ir_init *in)
{
    if (in->kind == IR_INIT_NORMAL)
        fe_fail(L, n->loc, "an i32 param cannot be made by normal, which makes floats (use "
                "zeros, ones or uniform(LO, HI) with whole-number bounds)");
    if (in->kind != IR_INIT_UNIFORM)
        return;
    if (in->a != floor(in->a) || in->b != floor(in->b))
        fe_fail(L, n->loc, "uniform for an i32 param needs whole-number bounds (it makes "
                "integers in [LO, HI)), got uniform(%g, %g)", in->a, in->b);
    if (in->a < INT32_MIN || in->b > (double)INT32_MAX + 1)
        fe_fail(L, n->loc, "uniform for an i32 param needs bounds within i32 (-2147483648 to "
                "2147483648), got uniform(%g, %g)", in->a, in->b);
}

/* zeros | ones | normal(STD) | uniform(LO, HI), for a param of dtype dt */
static ir_init init_eval(fe_lower *L, fe_scope *s, const ast_node *n, ir_dtype dt)
{
    ir_init in = {0};
    const char *fn = n->kind == AST_NAME || n->kind == AST_CALL ? n->str : "";
    int nargs = 0;
    for (const ast_node *a = n->kind == AST_CALL ? n->args : NULL; a; a = a->next)
        nargs++;
    if (!strcmp(fn, "zeros") || !strcmp(fn, "ones")) {
        if (n->kind == AST_CALL)
            fe_fail(L, n->loc, "'%s' takes no arguments", fn);
        in.kind = fn[0] == 'z' ? IR_INIT_ZEROS : IR_INIT_ONES;
    } else if (!strcmp(fn, "normal") && n->kind == AST_CALL && nargs == 1) {
        in.kind = IR_INIT_NORMAL;
        in.a = fe_number(L, s, n->args, "the standard deviation of normal");
        if (!(in.a > 0))
            fe_fail(L, n->args->loc, "the standard deviation of normal must be positive");
    } else if (!strcmp(fn, "uniform") && n->kind == AST_CALL && nargs == 2) {
        in.kind = IR_INIT_UNIFORM;
        in.a = fe_number(L, s, n->args, "the low bound of uniform");
        in.b = fe_number(L, s, n->args->next, "the high bound of uniform");
        if (!(in.a < in.b))
            fe_fail(L, n->loc, "uniform needs LO < HI, got uniform(%g, %g)", in.a, in.b);
    } else {
        fe_fail(L, n->loc, "unknown initializer (use zeros, ones, normal(STD) or "
                "uniform(LO, HI))");
    }
    if (dt == IR_I32)
        check_int_init(L, n, &in);
    return in;
}

/* input NAME : TYPE [SHARDING] and param NAME : TYPE [SHARDING] [= INIT] */
static void lower_source(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    bool is_param = st->kind == ST_PARAM;
    check_new(L, c->scope, st->name, st->name_loc, st);
    ir_attrs a = {0};
    a.name = is_param ? full_name(L, c->frame, st->name) : st->name;
    ir_type t = fe_type_eval(L, c->scope, st->type, a.name);
    if (is_param && t.dtype == IR_BOOL)
        fe_fail(L, st->type->loc, "param '%s' is bool: a param is trained or updated, so it "
                "holds numbers (use an input for a mask)", st->name);
    ir_sharding sh = {0};
    if (st->shard)
        sh = shard_eval(L, st->shard, &t, a.name);
    if (is_param) {
        const ast_stmt *other = fe_map_get(&L->param_names, a.name);
        if (other)
            fe_fail(L, st->name_loc, "two params have the full name '%s' (the other is on "
                    "line %d)", a.name, other->name_loc.line);
        fe_map_put(&L->param_names, L->arena, a.name, (void *)st);
        if (st->expr)
            a.init = init_eval(L, c->scope, st->expr, t.dtype);
    }
    fe_tick(L, st->loc);
    a.name = su_strdup(&L->m->arena, a.name);
    ir_op *op = ir_append(L->m, is_param ? IR_PARAM : IR_INPUT, NULL, 0, &a, &t);
    op->loc = st->name_loc;
    op->rep = L->rep;
    ir_value *v = op->res[0];
    v->name = a.name;
    v->sh = sh;
    bind(L, c->scope, st->name, SYM_TENSOR, st, st->name_loc)->val = (fe_val){.v = v};
}

/* Binds name to v, a value an assignment made (the ops from first_new on
 * are its own), under the annotation sh when there is one. */
static void assign_name(fe_lower *L, fe_ctx *c, const char *name, su_loc loc, fe_val v,
                        const ast_shard *shard, int first_new, su_loc st_loc)
{
    fe_sym *old = fe_lookup(L, c->scope, name);
    if (shard) {
        ir_value *t = fe_tensor(L, v, IR_F32, loc);
        /* A value this statement just made takes the constraint itself;
         * any other (a name, an input, a block's named result) gets an
         * identity op carrying it, so the original keeps its own. */
        bool fresh = L->m->ops.n > first_new && IR_OP(L->m, L->m->ops.n - 1) == t->def &&
                     t->sh.kind == IR_SH_NONE && !t->name;
        ir_sharding sh = shard_eval(L, shard, &t->type, name);
        if (!fresh) {
            ir_attrs none = {0};
            fe_tick(L, st_loc);
            ir_op *op = ir_append(L->m, IR_CONSTRAIN, &t, 1, &none, &t->type);
            op->loc = shard->loc;
            op->rep = L->rep;
            t = op->res[0];
        }
        t->sh = sh;
        v = (fe_val){.v = t};
    }
    if (v.v && !v.v->name && v.v->def->code != IR_INPUT && v.v->def->code != IR_PARAM)
        v.v->name = su_strdup(&L->m->arena, full_name(L, c->frame, name));
    if (old) {
        old->val = v;
        return;
    }
    bind(L, c->scope, name, SYM_TENSOR, NULL, loc)->val = v;
}

static void check_assignable(fe_lower *L, fe_ctx *c, const char *name, su_loc loc)
{
    fe_sym *old = fe_lookup(L, c->scope, name);
    if (old && old->kind != SYM_TENSOR)
        fe_fail(L, loc, "cannot assign to '%s', which is %s (line %d)", name, decl_word(old),
                old->loc.line);
}

/* NAME = EXPR [SHARDING], or NAME, NAME, ... = CALL of a block that
 * returns several values */
static void lower_assign(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    int first_new = L->m->ops.n;
    if (!st->items) {
        check_assignable(L, c, st->name, st->name_loc);
        fe_val v = fe_eval(L, c->scope, c->frame, st->expr);
        assign_name(L, c, st->name, st->name_loc, v, st->shard, first_new, st->loc);
        return;
    }
    int n = 0;
    for (const ast_item *it = st->items; it; it = it->next, n++) {
        check_assignable(L, c, it->name, it->loc);
        for (const ast_item *j = st->items; j != it; j = j->next)
            if (!strcmp(j->name, it->name))
                fe_fail(L, it->loc, "'%s' is bound twice here", it->name);
    }
    if (st->shard)
        fe_fail(L, st->shard->loc, "an annotation after several names would be ambiguous; "
                "annotate each name on a line of its own");
    ir_value *out[FE_MAX_RESULTS];
    int got = fe_eval_results(L, c->scope, c->frame, st->expr, out);
    if (got == 0)
        fe_fail(L, st->expr->loc, "this gives one value, but %d names are bound to it", n);
    if (got != n)
        fe_fail(L, st->expr->loc, "this gives %d values, but %d names are bound to them", got,
                n);
    int i = 0;
    for (const ast_item *it = st->items; it; it = it->next, i++)
        assign_name(L, c, it->name, it->loc, (fe_val){.v = out[i]}, NULL, first_new, st->loc);
}

static void lower_output(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    for (const ast_item *it = st->items; it; it = it->next) {
        for (int i = 0; i < L->m->outputs.n; i++)
            if (!strcmp(IR_OUTPUT(L->m, i)->name, it->name))
                fe_fail(L, it->loc, "'%s' is already an output (line %d)", it->name,
                        IR_OUTPUT(L->m, i)->loc.line);
        fe_sym *sym = fe_lookup(L, c->scope, it->name);
        if (!sym)
            fe_fail(L, it->loc, "unknown name '%s'", it->name);
        if (sym->kind != SYM_TENSOR)
            fe_fail(L, it->loc, "'%s' is %s; only tensors can be outputs", it->name,
                    decl_word(sym));
        ir_value *v = fe_tensor(L, sym->val, IR_F32, it->loc);
        if (!v->name) /* a number made into a tensor here */
            v->name = su_strdup(&L->m->arena, it->name);
        ir_add_output(L->m, it->name, v, it->loc);
    }
}

/* ---- blocks ---- */

static void lower_block_def(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    check_new(L, c->scope, st->name, st->name_loc, NULL);
    fe_block *b = su_alloc(L->arena, sizeof *b);
    b->def = (ast_stmt *)st;
    b->recompute = st->recompute;
    for (const ast_item *it = st->items; it; it = it->next)
        b->nparams++;
    if (b->nparams > 64)
        fe_fail(L, st->name_loc, "block '%s' has more than 64 parameters", st->name);
    b->pnames = su_alloc(L->arena, (size_t)b->nparams * sizeof *b->pnames + 1);
    b->plocs = su_alloc(L->arena, (size_t)b->nparams * sizeof *b->plocs + 1);
    b->ptypes = su_alloc(L->arena, (size_t)b->nparams * sizeof *b->ptypes + 1);
    int i = 0;
    for (const ast_item *it = st->items; it; it = it->next, i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(b->pnames[j], it->name))
                fe_fail(L, it->loc, "block '%s' has two parameters named '%s'", st->name,
                        it->name);
        fe_sym *g = fe_map_get(&c->scope->syms, it->name);
        if (g && g->kind != SYM_TENSOR)
            fe_fail(L, it->loc, "parameter '%s' of block '%s' hides %s (line %d)", it->name,
                    st->name, decl_word(g), g->loc.line);
        b->pnames[i] = it->name;
        b->plocs[i] = it->loc;
        b->ptypes[i] = fe_type_eval(L, c->scope, it->type, it->name);
    }
    for (const ast_type *t = st->type; t; t = t->next)
        b->nret++;
    if (b->nret > FE_MAX_RESULTS)
        fe_fail(L, st->type->loc, "block '%s' returns more than %d values", st->name,
                FE_MAX_RESULTS);
    b->rets = su_alloc(L->arena, (size_t)b->nret * sizeof *b->rets);
    i = 0;
    for (const ast_type *t = st->type; t; t = t->next, i++)
        b->rets[i] = fe_type_eval(L, c->scope, t, st->name);
    bind(L, c->scope, st->name, SYM_BLOCK, st, st->name_loc)->block = b;
    *L->blocks_tail = b;
    L->blocks_tail = &b->next;
}

static void run(fe_lower *L, fe_ctx *c, const ast_stmt *list);

/* Runs a block's body for a call, its results into out (fe_lower.call_block). */
static void call_block(fe_lower *L, fe_frame *f, const fe_block *b, ir_value **args, su_loc loc,
                       ir_value **out)
{
    const char *bname = b->def->name;
    if (b->active)
        fe_fail(L, loc, "block '%s' calls itself", bname);
    intptr_t k = (intptr_t)fe_map_get(&f->counts, bname);
    fe_map_put(&f->counts, L->arena, bname, (void *)(k + 1));
    const char *pre = fe_prefix(L, f);
    fe_frame frame = {.prefix = k ? su_sprintf(L->arena, "%s%s.%ld.", pre, bname, (long)k)
                                  : su_sprintf(L->arena, "%s%s.", pre, bname)};
    fe_scope scope = {.global = &L->global, .block = bname};
    for (int i = 0; i < b->nparams; i++)
        bind(L, &scope, b->pnames[i], SYM_TENSOR, NULL, b->plocs[i])->val =
            (fe_val){.v = args[i]};
    fe_ctx c = {.where = AT_BLOCK, .scope = &scope, .frame = &frame, .block = b};
    ((fe_block *)b)->active = true;
    int outer = L->recompute; /* a recompute block inside another is the outer's */
    if ((b->recompute || L->opt->recompute) && !outer)
        L->recompute = ++L->nrecompute;
    run(L, &c, b->def->body);
    L->recompute = outer;
    ((fe_block *)b)->active = false;
    if (!c.ret)
        fe_fail(L, b->def->name_loc, "block '%s' ends without 'return'", bname);
    memcpy(out, c.ret, (size_t)b->nret * sizeof *out);
}

/* Runs a block once on inputs of its declared types in a scratch module, so
 * a block that is never called is checked all the same. */
static void check_block(fe_lower *L, fe_block *b)
{
    ir_module *real = L->m;
    fe_map names = L->param_names;
    L->scratch = L->m = ir_module_new(real->oom);
    L->m->mesh = real->mesh;
    L->param_names = (fe_map){0};
    ir_value *args[64];
    for (int i = 0; i < b->nparams; i++) {
        ir_attrs a = {.name = b->pnames[i]};
        args[i] = ir_append(L->m, IR_INPUT, NULL, 0, &a, &b->ptypes[i])->res[0];
    }
    fe_frame frame = {.prefix = ""};
    ir_value *out[FE_MAX_RESULTS];
    call_block(L, &frame, b, args, b->def->name_loc, out);
    L->m = real;
    L->param_names = names;
    ir_module_free(L->scratch);
    L->scratch = NULL;
}

static void lower_return(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    const fe_block *b = c->block;
    int n = 0;
    for (const ast_node *e = st->expr; e; e = e->next)
        n++;
    if (n != b->nret)
        fe_fail(L, st->loc, "block '%s' returns %d value%s here, but declares %d",
                b->def->name, n, n == 1 ? "" : "s", b->nret);
    ir_value **ret = su_alloc(L->arena, (size_t)n * sizeof *ret);
    int i = 0;
    for (const ast_node *e = st->expr; e; e = e->next, i++) {
        fe_val v = fe_eval(L, c->scope, c->frame, e);
        const ir_type *want = &b->rets[i];
        char ws[128], gs[128], which[32] = "";
        fe_type_str(ws, sizeof ws, want);
        if (n > 1)
            snprintf(which, sizeof which, " as its result %d", i + 1);
        if (!v.v && want->rank != 0)
            fe_fail(L, e->loc, "block '%s' returns a number%s, but declares %s", b->def->name,
                    which, ws);
        ir_value *r = fe_tensor(L, v, want->dtype, e->loc);
        fe_type_str(gs, sizeof gs, &r->type);
        if (!ir_type_eq(&r->type, want))
            fe_fail(L, e->loc, "block '%s' returns %s%s, but declares %s", b->def->name, gs,
                    which, ws);
        ret[i] = r;
    }
    c->ret = ret;
}

/* ---- repeat, pipeline, train ---- */

static void lower_repeat(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    int64_t n = fe_const_eval(L, c->scope, st->expr);
    if (n < 1)
        fe_fail(L, st->expr->loc, "repeat count must be at least 1, got %lld", (long long)n);
    if (st->axis) {
        if (c->where != AT_TOP)
            fe_fail(L, st->loc, "'repeat ... over' belongs at the top level");
        if (L->over_stmt)
            fe_fail(L, st->loc, "only one 'repeat ... over' is allowed (the first is on line %d)",
                    L->over_stmt->loc.line);
        int ax = ir_mesh_axis(&L->m->mesh, st->axis, strlen(st->axis));
        if (ax < 0)
            fe_fail(L, st->axis_loc, "unknown mesh axis '%s'", st->axis);
        if (n < L->m->mesh.size[ax])
            fe_fail(L, st->expr->loc, "%lld repetitions cannot fill the %lld stages of axis %s "
                    "(one each at least)", (long long)n, (long long)L->m->mesh.size[ax],
                    st->axis);
        if (n > (1 << 30))
            fe_fail(L, st->expr->loc, "too many repetitions for a pipeline");
        L->over_stmt = st;
        L->m->pipe.axis = ax;
        L->m->pipe.repeats = (int)n;
        if (!L->pipeline_stmt)
            L->m->pipe.loc = st->loc;
    }
    L->in_repeat++;
    for (int64_t i = 0; i < n; i++) {
        fe_tick(L, st->loc);
        fe_frame frame = {.parent = c->frame, .rep_name = st->name, .rep_index = i};
        fe_ctx inner = *c;
        inner.where = c->where == AT_BLOCK ? AT_BLOCK : AT_REPEAT;
        inner.frame = &frame;
        inner.in_repeat = true;
        if (st->axis)
            L->rep = (int)i;
        run(L, &inner, st->body);
        if (inner.ret)
            c->ret = inner.ret;
    }
    if (st->axis)
        L->rep = -1;
    L->in_repeat--;
}

static void lower_pipeline(fe_lower *L, const ast_stmt *st)
{
    if (L->pipeline_stmt)
        fe_fail(L, st->loc, "'pipeline' is already given (line %d)", L->pipeline_stmt->loc.line);
    L->pipeline_stmt = st;
    ir_pipeline *p = &L->m->pipe;
    p->loc = st->loc;
    int64_t m = fe_const_eval(L, &L->global, st->expr);
    if (m < 1 || m > (1 << 30))
        fe_fail(L, st->expr->loc, "microbatches must be between 1 and 2^30, got %lld",
                (long long)m);
    p->microbatches = (int)m;
    p->chunks = 1;
    if (!strcmp(st->name, "gpipe"))
        p->schedule = IR_SCHED_GPIPE;
    else if (!strcmp(st->name, "1f1b"))
        p->schedule = IR_SCHED_1F1B;
    else if (!strcmp(st->name, "interleaved"))
        p->schedule = IR_SCHED_INTERLEAVED;
    else
        fe_fail(L, st->name_loc, "unknown schedule '%s' (use gpipe, 1f1b or interleaved(V))",
                st->name);
    if (p->schedule == IR_SCHED_INTERLEAVED) {
        if (!st->expr2)
            fe_fail(L, st->name_loc, "interleaved needs its number of chunks: interleaved(V)");
        int64_t v = fe_const_eval(L, &L->global, st->expr2);
        if (v < 1 || v > (1 << 20))
            fe_fail(L, st->expr2->loc, "interleaved needs at least 1 chunk per stage, got %lld",
                    (long long)v);
        p->chunks = (int)v;
    } else if (st->expr2) {
        fe_fail(L, st->expr2->loc, "schedule '%s' takes no argument", st->name);
    }
}

typedef struct fe_optdesc {
    const char *name;
    size_t off;
} fe_optdesc;

#define SCHEDULE_OPTS                                                                 \
    {"warmup", offsetof(ir_train, warmup)}, {"decay", offsetof(ir_train, decay)},     \
        {"steps", offsetof(ir_train, steps)}, {"min_lr", offsetof(ir_train, min_lr)}
static const fe_optdesc sgd_opts[] = {
    {"lr", offsetof(ir_train, lr)}, {"momentum", offsetof(ir_train, momentum)},
    {"wd", offsetof(ir_train, wd)}, {"clip", offsetof(ir_train, clip)}, SCHEDULE_OPTS,
    {NULL, 0}};
static const fe_optdesc adamw_opts[] = {
    {"lr", offsetof(ir_train, lr)}, {"beta1", offsetof(ir_train, beta1)},
    {"beta2", offsetof(ir_train, beta2)}, {"eps", offsetof(ir_train, eps)},
    {"wd", offsetof(ir_train, wd)}, {"clip", offsetof(ir_train, clip)}, SCHEDULE_OPTS,
    {NULL, 0}};

/* OPTIMIZER(OPTION = VALUE, ...): named options only, lr required. */
static void optimizer_eval(fe_lower *L, const ast_node *n, ir_train *t)
{
    const char *name = n->kind == AST_NAME || n->kind == AST_CALL ? n->str : "";
    const fe_optdesc *opts;
    if (!strcmp(name, "sgd")) {
        t->opt = IR_OPT_SGD;
        opts = sgd_opts;
    } else if (!strcmp(name, "adamw")) {
        t->opt = IR_OPT_ADAMW;
        opts = adamw_opts; /* PyTorch's AdamW defaults */
        t->beta1 = 0.9, t->beta2 = 0.999, t->eps = 1e-8, t->wd = 0.01;
    } else {
        fe_fail(L, n->loc, "unknown optimizer (use sgd(...) or adamw(...))");
    }
    for (const ast_node *a = n->kind == AST_CALL ? n->args : NULL; a; a = a->next) {
        if (a->kind != AST_KWARG)
            fe_fail(L, a->loc, "options of %s are named, as in %s(lr = 0.01)", name, name);
        const fe_optdesc *o = opts;
        while (o->name && strcmp(o->name, a->str))
            o++;
        if (!o->name)
            fe_fail(L, a->loc, "%s has no option '%s' (its options: %s)", name, a->str,
                    t->opt == IR_OPT_SGD
                        ? "lr, momentum, wd, clip, warmup, decay, steps, min_lr"
                        : "lr, beta1, beta2, eps, wd, clip, warmup, decay, steps, min_lr");
        if (!strcmp(a->str, "decay")) { /* decay = none | cosine | linear */
            const char *d = a->lhs->kind == AST_NAME ? a->lhs->str : "";
            if (strcmp(d, "none") && strcmp(d, "cosine") && strcmp(d, "linear"))
                fe_fail(L, a->lhs->loc, "decay of %s is none, cosine or linear", name);
            t->decay = !strcmp(d, "cosine")   ? IR_DECAY_COSINE
                       : !strcmp(d, "linear") ? IR_DECAY_LINEAR
                                              : IR_DECAY_NONE;
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "option '%s' of %s", a->str, name);
        double v = fe_number(L, &L->global, a->lhs, what);
        bool count = !strcmp(a->str, "warmup") || !strcmp(a->str, "steps");
        bool ok = !strcmp(a->str, "lr") || !strcmp(a->str, "eps") || !strcmp(a->str, "clip")
                      ? v > 0
                  : !strcmp(a->str, "wd") || !strcmp(a->str, "min_lr") ? v >= 0
                  : count ? v >= 0 && v == floor(v) && v < 1e15
                          : v >= 0 && v < 1;
        if (!ok)
            fe_fail(L, a->lhs->loc, "%s is out of range: %g", what, v);
        *(double *)((char *)t + o->off) = v;
    }
    if (!(t->lr > 0))
        fe_fail(L, n->loc, "%s needs a learning rate, as in %s(lr = 0.01)", name, name);
    if (t->decay != IR_DECAY_NONE && !(t->steps > t->warmup))
        fe_fail(L, n->loc, "decay needs steps past the warmup: steps = %g, warmup = %g",
                t->steps, t->warmup);
    if (t->decay != IR_DECAY_NONE && t->min_lr > t->lr)
        fe_fail(L, n->loc, "min_lr %g is above lr %g", t->min_lr, t->lr);
}

static void lower_train(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    if (L->train_stmt)
        fe_fail(L, st->loc, "'train' is already given (line %d)", L->train_stmt->loc.line);
    L->train_stmt = st;
    fe_sym *sym = fe_lookup(L, c->scope, st->name);
    if (!sym)
        fe_fail(L, st->name_loc, "unknown name '%s'", st->name);
    if (sym->kind != SYM_TENSOR || !sym->val.v)
        fe_fail(L, st->name_loc, "train needs a scalar tensor loss; '%s' is %s", st->name,
                sym->kind == SYM_TENSOR ? "a number" : decl_word(sym));
    ir_value *loss = sym->val.v;
    char ts[128];
    fe_type_str(ts, sizeof ts, &loss->type);
    if (loss->type.rank != 0)
        fe_fail(L, st->name_loc, "train needs a scalar loss, but '%s' is %s", st->name, ts);
    if (!ir_dtype_is_float(loss->type.dtype))
        fe_fail(L, st->name_loc, "train needs a floating-point loss, but '%s' is %s", st->name,
                ts);
    ir_train *t = &L->m->train;
    optimizer_eval(L, st->expr, t);
    if (st->expr2) {
        int64_t k = fe_const_eval(L, c->scope, st->expr2);
        if (k < 0 || k > 3)
            fe_fail(L, st->expr2->loc, "zero stage must be 0, 1, 2 or 3, got %lld",
                    (long long)k);
        int ax = ir_mesh_axis(&L->m->mesh, st->axis, strlen(st->axis));
        if (ax < 0)
            fe_fail(L, st->axis_loc, "unknown mesh axis '%s'", st->axis);
        t->zero = (int)k; /* 0: no ZeRO, so that -D can switch it off */
        t->zero_axis = k ? ax : -1;
    }
    t->loss = loss;
}

/* ---- statements ---- */

static const char *stmt_word(ast_stmt_kind k)
{
    static const char *words[] = {
        [ST_MESH] = "mesh", [ST_LET] = "let", [ST_INPUT] = "input", [ST_PARAM] = "param",
        [ST_OUTPUT] = "output", [ST_ASSIGN] = "=", [ST_BLOCK] = "block",
        [ST_RETURN] = "return", [ST_REPEAT] = "repeat", [ST_PIPELINE] = "pipeline",
        [ST_TRAIN] = "train",
    };
    return words[k];
}

static void check_place(fe_lower *L, fe_ctx *c, const ast_stmt *st)
{
    switch (st->kind) {
    case ST_MESH: case ST_LET: case ST_INPUT: case ST_OUTPUT: case ST_BLOCK:
    case ST_PIPELINE: case ST_TRAIN:
        if (c->where != AT_TOP)
            fe_fail(L, st->loc, "'%s' belongs at the top level, not inside a %s",
                    stmt_word(st->kind), c->where == AT_BLOCK ? "block" : "repeat");
        break;
    case ST_RETURN:
        if (c->where != AT_BLOCK)
            fe_fail(L, st->loc, "'return' outside a block");
        if (c->in_repeat)
            fe_fail(L, st->loc, "'return' inside a 'repeat'; return after the repeat");
        break;
    default:
        break;
    }
    if (c->ret)
        fe_fail(L, st->loc, "statement after 'return' is never run");
}

static void run(fe_lower *L, fe_ctx *c, const ast_stmt *list)
{
    for (const ast_stmt *st = list; st; st = st->next) {
        fe_tick(L, st->loc);
        check_place(L, c, st);
        switch (st->kind) {
        case ST_MESH: lower_mesh(L, c, st); break;
        case ST_LET: lower_let(L, c, st); break;
        case ST_INPUT: case ST_PARAM: lower_source(L, c, st); break;
        case ST_OUTPUT: lower_output(L, c, st); break;
        case ST_ASSIGN: lower_assign(L, c, st); break;
        case ST_BLOCK: lower_block_def(L, c, st); break;
        case ST_RETURN: lower_return(L, c, st); break;
        case ST_REPEAT: lower_repeat(L, c, st); break;
        case ST_PIPELINE: lower_pipeline(L, st); break;
        case ST_TRAIN: lower_train(L, c, st); break;
        }
    }
}

/* ---- whole-program checks ---- */

static void check_pipeline(fe_lower *L)
{
    ir_pipeline *p = &L->m->pipe;
    if (L->pipeline_stmt && !L->over_stmt)
        fe_fail(L, L->pipeline_stmt->loc, "'pipeline' needs a 'repeat ... over AXIS' to split "
                "into stages");
    if (!L->over_stmt)
        return;
    int64_t stages = L->m->mesh.size[p->axis];
    if (p->repeats < stages * p->chunks)
        fe_fail(L, L->pipeline_stmt ? L->pipeline_stmt->loc : L->over_stmt->loc,
                "%d repetitions cannot fill %lld stages x %d chunks (one each at least)",
                p->repeats, (long long)stages, p->chunks);
    bool flag = L->opt->microbatches > 0; /* --microbatches, over the file's */
    for (int i = 0; i < L->m->ops.n; i++) {
        ir_op *op = IR_OP(L->m, i);
        if (op->code != IR_INPUT || (!L->pipeline_stmt && !flag))
            continue;
        const ir_type *t = &op->res[0]->type;
        if (t->rank == 0 || t->dim[0] % p->microbatches)
            fe_fail(L, flag ? (su_loc){0, 0} : L->pipeline_stmt->expr->loc,
                    "%s%d microbatches do not divide the batch dimension of input '%s' (%lld)",
                    flag ? "--microbatches: " : "", p->microbatches, op->a->name,
                    t->rank ? (long long)t->dim[0] : 0ll);
    }
}

/* Whether the loss depends on a param through floating-point values, the
 * ones autodiff differentiates (passes/autodiff.c, mark_needs), and with
 * stop: not through a stop_gradient, as autodiff sees it. */
static bool loss_needs_param(fe_lower *L, bool stop)
{
    const ir_module *m = L->m;
    bool *needs = su_alloc(L->arena, (size_t)m->next_id + 1);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        bool any = op->code == IR_PARAM;
        for (int j = 0; j < op->nin && !(stop && op->code == IR_STOP_GRADIENT); j++)
            any |= needs[op->in[j]->id];
        for (int r = 0; r < op->nres; r++)
            needs[op->res[r]->id] = any && ir_dtype_is_float(op->res[r]->type.dtype);
    }
    return needs[m->train.loss->id];
}

/* The command line's strategy over the model's (fe_options): ZeRO, the
 * pipeline's schedule and microbatches, keeping gathered activations. Errors have no place in the file:
 * they name the flag. */
static void apply_overrides(fe_lower *L)
{
    const fe_options *o = L->opt;
    ir_module *m = L->m;
    su_loc none = {0, 0};
    if (o->zero_set) {
        if (!L->train_stmt)
            fe_fail(L, none, "--zero %d: the model has no 'train', so no optimizer to shard",
                    o->zero);
        int ax = m->train.zero_axis;
        if (o->zero_axis[0]) {
            ax = ir_mesh_axis(&m->mesh, o->zero_axis, strlen(o->zero_axis));
            if (ax < 0)
                fe_fail(L, none, "--zero %d:%s: the mesh has no axis '%s'", o->zero,
                        o->zero_axis, o->zero_axis);
        } else if (ax < 0) {
            ax = ir_mesh_axis(&m->mesh, "dp", 2);
            if (ax < 0 && o->zero > 0)
                fe_fail(L, none, "--zero %d: the model has no zero clause and its mesh no "
                        "axis dp; name the axis: --zero %d:AXIS", o->zero, o->zero);
        }
        m->train.zero = o->zero;
        m->train.zero_axis = o->zero ? ax : -1;
    }
    if ((o->schedule_set || o->microbatches) && !L->over_stmt)
        fe_fail(L, none, "--%s: the model has no pipelined 'repeat ... over AXIS'",
                o->schedule_set ? "schedule" : "microbatches");
    if (o->schedule_set) {
        m->pipe.schedule = (ir_schedule)o->schedule;
        m->pipe.chunks = o->schedule == IR_SCHED_INTERLEAVED ? o->chunks : 1;
    }
    if (o->microbatches)
        m->pipe.microbatches = o->microbatches;
    m->pipe.unroll = o->unroll;
    if (o->keep_gathered) {
        if (!L->train_stmt)
            fe_fail(L, none, "--keep-gathered: the model has no 'train', so no backward to "
                    "read gathered activations");
        m->train.keep_gathered = true;
    }
}

static void check_program(fe_lower *L)
{
    for (int i = 0; i < L->opt->ndefines; i++)
        if (!L->define_used[i])
            fe_fail(L, (su_loc){0, 0}, "-D %s: the model has no constant '%s'",
                    L->opt->defines[i].name, L->opt->defines[i].name);
    if (L->opt->nmesh && !L->mesh_stmt)
        fe_fail(L, (su_loc){0, 0}, "--mesh gives axis sizes, but the model declares no mesh");
    for (fe_block *b = L->blocks; b; b = b->next)
        check_block(L, b);
    apply_overrides(L);
    check_pipeline(L);
    if (L->train_stmt) {
        bool has_param = false;
        for (int i = 0; i < L->m->ops.n && !has_param; i++)
            has_param = IR_OP(L->m, i)->code == IR_PARAM;
        if (!has_param)
            fe_fail(L, L->train_stmt->loc, "train: the program has no param to train");
        if (!loss_needs_param(L, false))
            fe_fail(L, L->train_stmt->name_loc, "train: the loss '%s' does not depend on any "
                    "param, so there is nothing to train", L->train_stmt->name);
        if (!loss_needs_param(L, true))
            fe_fail(L, L->train_stmt->name_loc, "train: the loss '%s' depends on params only "
                    "through stop_gradient, so no gradient reaches one", L->train_stmt->name);
    }
}

/* A program hands back outputs or trains; without either its plan would
 * run and compute nothing, which is a mistake rather than a wish. The
 * error points at the last statement, where the output is missing. */
static void check_computes(fe_lower *L, const ast_stmt *program)
{
    if (L->m->outputs.n > 0 || L->train_stmt)
        return;
    const ast_stmt *last = program;
    while (last->next)
        last = last->next;
    fe_fail(L, last->loc, "the program ends here without an 'output' or a 'train', so it "
            "computes nothing");
}

/* No place in the file (line 0): a whole-program error. A constant, not a
 * compound literal, since it is read after setjmp. */
static const su_loc NO_LOC = {0, 0};

/* Runs the program; false when an error unwound it. */
static bool lower_program(fe_lower *L, const ast_stmt *program)
{
    fe_frame top = {.prefix = ""};
    fe_ctx c = {.where = AT_TOP, .scope = &L->global, .frame = &top};
    if (setjmp(L->fail))
        return false;
    if (!program) /* nothing, or only comments: there is no place to point at */
        fe_fail(L, NO_LOC, "the program is empty: it has no statement (a program declares "
                "its inputs and params, computes, and ends with 'output' or 'train')");
    for (const ast_stmt *st = program; st; st = st->next)
        L->trains |= st->kind == ST_TRAIN;
    run(L, &c, program);
    check_program(L);
    check_computes(L, program);
    return true;
}

/* The frontend's internal check: the IR it made must verify. */
static bool verified(ir_module *m, su_diag *diag, const su_src *src, su_buf *err)
{
    bool ok = ir_verify(m, err);
    if (!ok) {
        diag->internal = true;
        su_error_at(diag, src, (su_loc){0, 0}, "internal error: the frontend made invalid IR: %s",
                    err->s ? err->s : "");
    }
    return ok;
}

/* One compilation: what it holds, for fe_compile to free after an
 * allocation failure too. */
typedef struct fe_run {
    const su_src *src;
    const fe_options *opt;
    su_diag *diag;
    su_arena arena;         /* the AST, symbols, names */
    fe_lower *L;
    ir_module *m;           /* the module made (NULL: none yet) */
    su_buf err;             /* the verifier's message */
    bool ok;
} fe_run;

static void compile_run(void *arg)
{
    fe_run *r = arg;
    fe_parse P = {.arena = &r->arena, .diag = r->diag, .src = r->src};
    if (!fe_parse_source(&P))
        return;
    fe_lower *L = r->L = su_alloc(&r->arena, sizeof *L);
    L->arena = &r->arena;
    L->diag = r->diag;
    L->src = r->src;
    L->opt = r->opt;
    L->rep = -1;
    L->max_work = r->opt->max_work > 0 ? r->opt->max_work : DEFAULT_MAX_WORK;
    L->define_used = su_alloc(&r->arena, (size_t)r->opt->ndefines + 1);
    L->blocks_tail = &L->blocks;
    L->call_block = call_block;
    L->m = r->m = ir_module_new(r->arena.oom);
    r->ok = lower_program(L, P.program) && verified(r->m, r->diag, r->src, &r->err);
}

ir_module *fe_compile(const su_src *whole, const fe_options *opt, su_diag *diag, jmp_buf *oom)
{
    if (whole->len > (size_t)1 << 30) {
        su_error_at(diag, whole, (su_loc){0, 0}, "the file is larger than 1 GiB");
        return NULL;
    }
    su_src text = *whole; /* without a byte order mark */
    if (!su_src_prepare(&text, diag))
        return NULL;
    fe_run r = {.src = &text, .opt = opt, .diag = diag};
    su_arena_init(&r.arena, oom);
    su_buf_init(&r.err, oom);
    bool done = su_guarded(oom, compile_run, &r);
    if (r.L)
        ir_module_free(r.L->scratch); /* a block's trial run that failed */
    if (!done || !r.ok) {
        ir_module_free(r.m);
        r.m = NULL;
    }
    su_buf_free(&r.err);
    su_arena_free(&r.arena);
    if (!done)
        su_oom(oom);
    return r.m;
}
