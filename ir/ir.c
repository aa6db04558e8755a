/* ir.c: the module and its builder. The vocabulary it is made of (dtypes,
 * types, meshes, shardings, the op table) is in types.c, shape rules in
 * infer.c, text in print.c/parse.c, invariants in verify.c. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the module ---- */

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

void ir_module_free(ir_module *m)
{
    if (!m)
        return;
    su_vec_free(&m->ops);
    su_vec_free(&m->outputs);
    su_vec_free(&m->updates);
    su_arena_free(&m->arena);
    free(m);
}

ir_op *ir_append(ir_module *m, ir_opcode code, ir_value *const *in, int nin,
                 const ir_attrs *a, const ir_type *res_types)
{
    ir_op *op = su_alloc(&m->arena, sizeof *op);
    op->code = code;
    op->rep = -1;
    op->nin = nin;
    op->in = su_alloc(&m->arena, (size_t)(nin ? nin : 1) * sizeof *op->in);
    for (int i = 0; i < nin; i++)
        op->in[i] = in[i];
    if (a)
        op->a = *a;
    if (op->a.name) /* the module owns its strings */
        op->a.name = su_strdup(&m->arena, op->a.name);
    if (op->a.init_param)
        op->a.init_param = su_strdup(&m->arena, op->a.init_param);
    op->nres = ir_ops[code].nres;
    op->res = su_alloc(&m->arena, (size_t)(op->nres ? op->nres : 1) * sizeof *op->res);
    for (int i = 0; i < op->nres; i++) {
        ir_value *v = su_alloc(&m->arena, sizeof *v);
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
