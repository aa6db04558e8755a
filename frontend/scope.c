/* scope.c: what lowering resolves names in and reports through: string
 * maps, scopes, the error exit and the work count. It calls nothing else
 * of the frontend. */
#include "lower.h"

#include <stdarg.h>
#include <string.h>

void fe_fail(fe_lower *L, su_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_verror_at(L->diag, L->src, loc, fmt, ap);
    va_end(ap);
    longjmp(L->fail, 1);
}

void fe_tick(fe_lower *L, su_loc loc)
{
    if (++L->work > L->max_work)
        fe_fail(L, loc, "the program is too large: it unrolls to more than %lld ops and "
                "statements", (long long)L->max_work);
}

/* ---- string maps ---- */

static uint64_t hash(const char *s)
{
    return su_fnv_str(SU_FNV_BASIS, s);
}

void *fe_map_get(const fe_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    for (uint64_t i = hash(key) & (uint64_t)(m->cap - 1);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (!m->keys[i])
            return NULL;
        if (!strcmp(m->keys[i], key))
            return m->vals[i];
    }
}

static void map_grow(fe_map *m, su_arena *a)
{
    fe_map old = *m;
    m->cap = old.cap ? old.cap * 2 : 16;
    m->n = 0;
    m->keys = su_alloc(a, (size_t)m->cap * sizeof *m->keys);
    m->vals = su_alloc(a, (size_t)m->cap * sizeof *m->vals);
    for (int i = 0; i < old.cap; i++)
        if (old.keys[i])
            fe_map_put(m, a, old.keys[i], old.vals[i]);
}

void fe_map_put(fe_map *m, su_arena *a, const char *key, void *val)
{
    if ((m->n + 1) * 2 > m->cap)
        map_grow(m, a);
    uint64_t i = hash(key) & (uint64_t)(m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key))
        i = (i + 1) & (uint64_t)(m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

/* Inside a block, only the block's own names, and the program's constants
 * and blocks, are visible. */
fe_sym *fe_lookup(fe_lower *L, fe_scope *s, const char *name)
{
    (void)L;
    fe_sym *sym = fe_map_get(&s->syms, name);
    if (sym || !s->global)
        return sym;
    sym = fe_map_get(&s->global->syms, name);
    return sym && sym->kind != SYM_TENSOR ? sym : NULL;
}
