/* cuda_strategy.c: the loops of each strategy (cuda.h) around the tiles of
 * cuda_tile.c, with their launch geometry: elementwise and multi-tensor,
 * row and column reductions, cross-entropy a block per row. */
#include "cuda_gen.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the group's adamw updates read the step t from memory, their
 * coefficients are computed once, before the loops. */
void cg_emit_hoisted(gen *G)
{
    for (int k = 0; k < G->g->nops; k++) {
        const ir_op *op = IR_OP(G->m, G->g->ops[k]);
        if (op->code == IR_ADAMW && !cg_in_group(G, op->in[3]) && cg_coef_owner(G, op) == op)
            cg_emit_adamw_coef(G, op, cg_load_conv(G, op->in[3]->type.dtype,
                                             cg_fmt(G, "p_%s[0]", cg_cname(G, op->in[3]))));
    }
}

int cg_pow2_at_least(int64_t n)
{
    int p = 1;
    while (p < n && p < (1 << 30))
        p <<= 1;
    return p;
}

int cg_clamp_block(int64_t threads, int cap)
{
    int64_t t = (threads + 31) / 32 * 32;
    return t < 32 ? 32 : t > cap ? cap : (int)t;
}

int64_t cg_grid_for(int64_t work, int block)
{
    int64_t g = (work + block - 1) / block;
    return g < 1 ? 1 : g > MAX_GRID ? MAX_GRID : g;
}

/* VEC, the elements a thread loads and stores at once where a value runs
 * along the last dim of the domain dom (`last` elements, which VEC must
 * divide: the row's and the dim's gcd for a row kernel): 8 where every
 * value group g reads or writes along it is 16-bit or narrower, some
 * 16-bit (16-byte loads of it), and last divides by 8; else 4 where it
 * divides by 4 (16 bytes of f32, 8 of a 16-bit value); else 1. Where a
 * 16-bit value meets an f32 one, 8 elements would be two 16-byte accesses
 * of the f32 value a thread, each instruction of a warp then covering
 * every other 16 bytes of 1 KB: twice the L1 requests of contiguous ones,
 * half-written sectors for the stores. On an H200 the bf16 GPT-2's
 * multi-tensor AdamW (bf16 gradients and params, f32 masters and moments,
 * 28 bytes a param either way) took 2.79 ms a step with 8, where the f32
 * model's took 1.34 with 4 (bench/results/gpt2-nvidia-h200.md). A value
 * that does not run along that dim (a row's statistic, cross_entropy's
 * i32 labels, a scalar) is read one element at a time whatever VEC is,
 * and does not count. */
int cg_vec_of(const pass_fgroup *g, const ir_type *dom, int64_t last)
{
    bool half = false, wide = false;
    int64_t along = dom->rank >= 1 ? dom->dim[dom->rank - 1] : 1;
    for (int i = 0; i < g->nin + g->nout; i++) {
        const ir_type *t = &(i < g->nin ? g->in[i] : g->out[i - g->nin])->type;
        if (along > 1 && (t->rank < 1 || t->dim[t->rank - 1] != along))
            continue; /* not along the last dim (tile.c's contiguous_last) */
        half |= t->dtype == IR_F16 || t->dtype == IR_BF16;
        wide |= ir_dtype_size(t->dtype) >= 4;
    }
    return half && !wide && last % 8 == 0 ? 8 : last % 4 == 0 ? 4 : 1;
}

void cg_emit_elementwise(gen *G, cg_cuda_kernel *k)
{
    const ir_type *dom = pass_fuse_domain(G->m, G->g);
    int64_t n = ir_type_numel(dom);
    k->vec = dom->rank >= 1 ? cg_vec_of(G->g, dom, dom->dim[dom->rank - 1]) : 1;
    int64_t steps = n / k->vec;
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->block = cg_clamp_block(steps, BLOCK_EW);
    k->grid = cg_grid_for(steps, k->block);
    cg_line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    cg_line(G, "for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < %lld; i += stride) {",
         (long long)steps);
    G->indent++;
    if (k->vec > 1)
        cg_line(G, "const i64 e = i * %d; // the first of this step's elements", k->vec);
    else
        cg_line(G, "const i64 e = i;");
    tile t = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true};
    G->vdom = pass_fuse_views(G->m, G->g) ? dom : NULL;
    cg_emit_tile(G, &t);
    G->vdom = NULL;
    G->indent--;
    cg_line(G, "}");
}


/* One part of a multi-tensor group, as code: its tile's text with the
 * values named by order of first use (so two parts doing the same to
 * different tensors read the same), the values in that order, its VEC,
 * and the first part with the same code (its class). */
typedef struct part_code {
    const char *text;
    const ir_value **vals;
    int nvals, vec;
    const ir_value **mem;       /* the values it reads or writes by pointer */
    int nmem;
    bool owner;                 /* it owns hoisted adamw coefficients */
    int cls;
    int64_t steps, blocks;
} part_code;

/* Part pc as the code of tile t over part (its reduction red, or NULL):
 * the tile's text with the values named by order of first use (so two
 * parts doing the same to different tensors read the same), the values
 * in that order, those it reads or writes by pointer, and whether it owns
 * hoisted adamw coefficients. */
static void tile_text(gen *G, const pass_fgroup *part, const ir_op *red, const tile *t,
                      part_code *pc)
{
    gen S = *G; /* a naming of its own, by first use */
    S.nnamed = S.capnamed = 0;
    S.named = NULL;
    S.cname = NULL;
    S.canon = true;
    S.indent = 0;
    S.g = part;
    S.red = red;
    su_buf b;
    su_buf_init_in(&b, G->arena);
    S.b = &b;
    cg_emit_tile(&S, t);
    pc->text = b.s ? b.s : "";
    pc->vals = S.named;
    pc->nvals = S.nnamed;
    pc->vec = t->vec;
    cg_tile_memory(&S, t, &pc->mem, &pc->nmem);
    pc->owner = false;
    for (int i = 0; i < part->nops; i++) {
        const ir_op *op = IR_OP(G->m, part->ops[i]);
        pc->owner |= op->code == IR_ADAMW && cg_coef_owner(&S, op) == op;
    }
}

/* A multi-tensor group's part as code: its elementwise tile. */
static void part_text(gen *G, const pass_fgroup *part, part_code *pc)
{
    const ir_type *dom = &IR_OP(G->m, part->anchor)->res[0]->type;
    int vec = dom->rank >= 1 ? cg_vec_of(part, dom, dom->dim[dom->rank - 1]) : 1;
    tile t = {.dom = dom, .vec = vec, .prologue = true, .store_prologue = true};
    tile_text(G, part, G->red, &t, pc);
}

/* Whether part pc reads or writes v by pointer. */
static bool by_pointer(const part_code *pc, const ir_value *v)
{
    for (int i = 0; i < pc->nmem; i++)
        if (pc->mem[i] == v)
            return true;
    return false;
}

static int param_index(const cg_cuda_kernel *k, const ir_value *v)
{
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i] == v)
            return i;
    return -1;
}

/* Whether slot j of part pc is one of its tensors, read or written by
 * pointer: then each part of the class names its own. */
static bool is_slot(const cg_cuda_kernel *k, const part_code *pc, int j)
{
    return by_pointer(pc, pc->vals[j]) && param_index(k, pc->vals[j]) >= 0;
}

static bool made_in(const gen *G, const pass_fgroup *part, const ir_value *v)
{
    gen S = *G;
    S.g = part;
    return cg_in_group(&S, v);
}

/* Whether parts a and b run the same code on their own tensors: the same
 * text, and value for value, a tensor read or written by pointer for
 * another, a value of the part for one of the other part, anything else
 * (adamw's hoisted coefficients) the same value. A part owning hoisted
 * coefficients keeps a class of its own (its tile names them by its own
 * value). */
static bool same_code(const gen *G, const cg_cuda_kernel *k, int a, int b, const part_code *pc)
{
    const pass_fgroup *w = G->g;
    if (pc[a].owner || pc[b].owner || pc[a].vec != pc[b].vec || pc[a].nvals != pc[b].nvals ||
        strcmp(pc[a].text, pc[b].text))
        return false;
    for (int j = 0; j < pc[a].nvals; j++) {
        const ir_value *va = pc[a].vals[j], *vb = pc[b].vals[j];
        bool pa = is_slot(k, &pc[a], j), pb = is_slot(k, &pc[b], j);
        if (pa != pb)
            return false;
        if (pa)
            continue;
        bool ia = made_in(G, &w->parts[a], va), ib = made_in(G, &w->parts[b], vb);
        if (ia != ib || (!ia && va != vb))
            return false;
    }
    return true;
}

/* Opens the block chunk [first, end) of the block loop's if-chain. */
static void open_chunk(gen *G, bool is_first, bool is_last, int64_t end, const char *what)
{
    if (is_first && is_last)
        cg_line(G, "{ // %s", what);
    else if (is_first)
        cg_line(G, "if (b < %lld) { // %s", (long long)end, what);
    else if (!is_last)
        cg_line(G, "} else if (b < %lld) { // %s", (long long)end, what);
    else
        cg_line(G, "} else { // %s", what);
}

/* The element loop's body for index i of steps: e, then the tile. */
static void emit_steps(gen *G, const char *steps, int vec)
{
    cg_line(G, "if (i < %s) {", steps);
    G->indent++;
    if (vec > 1)
        cg_line(G, "const i64 e = i * %d;", vec);
    else
        cg_line(G, "const i64 e = i;");
    tile t = {.dom = &IR_OP(G->m, G->g->anchor)->res[0]->type, .vec = vec, .prologue = true,
              .store_prologue = true};
    cg_emit_tile(G, &t);
    G->indent--;
    cg_line(G, "}");
}

/* A name for slot j's pointer no value of the kernel has. */
static const char *slot_name(gen *G, int j)
{
    const char *s = cg_fmt(G, "q%d", j);
    for (int i = 0; i < G->nnamed; i++)
        if (!strcmp(G->cname[i], s)) {
            s = cg_fmt(G, "%s_", s);
            i = -1;
        }
    return s;
}

/* The generator's names while one part's tile stands for its class: the
 * names it had, given back by slots_end. */
typedef struct slots_saved {
    int n, cap;
    const ir_value **v;
    const char **c;
} slots_saved;

/* Names part rep's values of slot[j] (not NULL: nslots of them) by their
 * slot, before every name the generator had, until slots_end. */
static slots_saved slots_begin(gen *G, const part_code *rep, const char **slot, int nslots)
{
    slots_saved k = {G->nnamed, G->capnamed, G->named, G->cname};
    int cap = k.n + nslots + 16;
    G->named = su_alloc(G->arena, (size_t)cap * sizeof *G->named);
    G->cname = su_alloc(G->arena, (size_t)cap * sizeof *G->cname);
    G->capnamed = cap;
    G->nnamed = 0;
    for (int j = 0; j < rep->nvals; j++)
        if (slot[j]) {
            G->named[G->nnamed] = rep->vals[j];
            G->cname[G->nnamed++] = slot[j];
        }
    memcpy(G->named + G->nnamed, k.v, (size_t)k.n * sizeof *k.v);
    memcpy(G->cname + G->nnamed, k.c, (size_t)k.n * sizeof *k.c);
    G->nnamed += k.n;
    return k;
}

static void slots_end(gen *G, const slots_saved *k)
{
    G->named = k->v;
    G->cname = k->c;
    G->nnamed = k->n;
    G->capnamed = k->cap;
}

/* The class of part r, m parts (mem) with the same code, blocks [first,
 * end): the part of block b found first, with its first block, its steps
 * and its tensors' pointers in locals p_q<j>; then one tile, part r's
 * with those names, for all of them. */
static void emit_class(gen *G, const cg_cuda_kernel *k, const part_code *pc, const int *mem,
                       int m, int64_t first)
{
    const pass_fgroup *w = G->g;
    const part_code *rep = &pc[mem[0]];
    /* the names: slot j of a kernel parameter gets q<j> in the tile */
    int nslots = 0;
    const char **slot = su_alloc(G->arena, (size_t)(rep->nvals + 1) * sizeof *slot);
    for (int j = 0; j < rep->nvals; j++) {
        int pi = param_index(k, rep->vals[j]);
        slot[j] = is_slot(k, rep, j) ? slot_name(G, j) : NULL;
        if (!slot[j])
            continue;
        nslots++;
        cg_line(G, "%s%s *p_%s;", pi < w->nin ? "const " : "",
                cg_ctype(G, rep->vals[j]->type.dtype), slot[j]);
    }
    cg_line(G, "i64 first, steps;");
    int64_t at = first;
    for (int i = 0; i < m; i++) {
        const part_code *p = &pc[mem[i]];
        int64_t end = at + p->blocks;
        const char *test = i == 0 ? cg_fmt(G, "if (b < %lld) {", (long long)end)
                           : i + 1 < m ? cg_fmt(G, "} else if (b < %lld) {", (long long)end)
                                       : "} else {";
        cg_line(G, "%s // part %d: %s", test, mem[i],
                cg_ir_name(G, IR_OP(G->m, w->parts[mem[i]].anchor)->res[0]));
        G->indent++;
        cg_line(G, "first = %lld;", (long long)at);
        cg_line(G, "steps = %lld;", (long long)p->steps);
        for (int j = 0; j < p->nvals; j++)
            if (slot[j])
                cg_line(G, "p_%s = p_%s;", slot[j], cg_cname(G, p->vals[j]));
        G->indent--;
        at = end;
    }
    cg_line(G, "}");
    cg_line(G, "const i64 i = (b - first) * %d + threadIdx.x;", k->block);
    /* the tile of the first part, its parameters named by slot */
    slots_saved saved = slots_begin(G, rep, slot, nslots);
    G->g = &w->parts[mem[0]];
    emit_steps(G, "steps", rep->vec);
    G->g = w;
    slots_end(G, &saved);
}

/* A multi-tensor group (fuse.h): its parts' steps (VEC elements each)
 * cut into blocks, part after part; a block takes its part's steps from
 * b * block on, so every thread of a block runs the same part. The
 * blocks are grid-strided. Parts that run the same code on their own
 * tensors (a model's layers' weights, updated alike) are one class: one
 * tile for all, after the block finds its part's tensors. So the source,
 * and NVRTC's time on it, grows with the kinds of part, not their count;
 * the parts of a class are next to each other in block order. */
void cg_emit_multi(gen *G, cg_cuda_kernel *k)
{
    const pass_fgroup *whole = G->g;
    int n = whole->nparts;
    part_code *pc = su_alloc(G->arena, (size_t)n * sizeof *pc);
    int64_t maxsteps = 1, nblocks = 0;
    k->vec = 1;
    for (int r = 0; r < n; r++) {
        part_text(G, &whole->parts[r], &pc[r]);
        const ir_type *dom = &IR_OP(G->m, whole->parts[r].anchor)->res[0]->type;
        pc[r].steps = ir_type_numel(dom) / pc[r].vec;
        maxsteps = pc[r].steps > maxsteps ? pc[r].steps : maxsteps;
        k->vec = pc[r].vec > k->vec ? pc[r].vec : k->vec;
        pc[r].cls = r;
        for (int s = 0; s < r && pc[r].cls == r; s++)
            if (pc[s].cls == s && same_code(G, k, s, r, pc))
                pc[r].cls = s;
    }
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->block = cg_clamp_block(maxsteps, BLOCK_EW);
    int nclasses = 0;
    for (int r = 0; r < n; r++) {
        pc[r].blocks = (pc[r].steps + k->block - 1) / k->block;
        nblocks += pc[r].blocks;
        nclasses += pc[r].cls == r;
    }
    k->grid = nblocks > MAX_GRID ? MAX_GRID : nblocks;
    cg_line(G, "for (i64 b = blockIdx.x; b < %lld; b += gridDim.x) {", (long long)nblocks);
    G->indent++;
    int64_t first = 0;
    int *mem = su_alloc(G->arena, (size_t)n * sizeof *mem), c = 0;
    for (int r = 0; r < n; r++) {
        if (pc[r].cls != r)
            continue;
        int m = 0;
        int64_t end = first;
        for (int s = r; s < n; s++)
            if (pc[s].cls == r) {
                mem[m++] = s;
                end += pc[s].blocks;
            }
        const char *what =
            m == 1 ? cg_fmt(G, "part %d: %s, blocks %lld .. %lld", r,
                            cg_ir_name(G, IR_OP(G->m, whole->parts[r].anchor)->res[0]),
                            (long long)first, (long long)end - 1)
                   : cg_fmt(G, "parts %d and %d more like it, blocks %lld .. %lld: one code", r,
                            m - 1, (long long)first, (long long)end - 1);
        open_chunk(G, c == 0, c + 1 == nclasses, end, what);
        G->indent++;
        if (m == 1) {
            cg_line(G, "const i64 i = (b - %lld) * %d + threadIdx.x;", (long long)first, k->block);
            G->g = &whole->parts[r];
            emit_steps(G, cg_fmt(G, "%lld", (long long)pc[r].steps), pc[r].vec);
            G->g = whole;
        } else {
            emit_class(G, k, pc, mem, m, first);
        }
        G->indent--;
        first = end;
        c++;
    }
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->g = whole;
}


/* A TOTAL group (passes/fuse.h): every part's elements, flat, cut into
 * chunks of TOTAL_CHUNK (more where the chunks would pass sh_cpart's
 * 65536 floats), part after part; a block sums a chunk (grid-stride over
 * the chunks), its threads each VEC elements a step, then sh_block_sum,
 * into sh_cpart[chunk]. The last block to finish (sh_cdone[0]) sums each
 * part's chunks in chunk order, a warp a part (lane l the chunks l, l +
 * 32, ..., then sh_warp_sum), so the result does not depend on the order
 * blocks run in; then its thread 0 runs the epilogue, the group's scalar
 * ops after the parts' sums, in program order, and stores what it stores. */
enum { TOTAL_CHUNK = 16384, TOTAL_MAX_CHUNKS = 256 * 32 * 8, TOTAL_BLOCK = 256 };

/* Part r of a TOTAL group as code (part_text's, for its chunk loop): its
 * tile, summing into acc, with the values named by order of first use. */
static void total_text(gen *G, const pass_fgroup *part, int vec, part_code *pc)
{
    const ir_op *red = IR_OP(G->m, part->reduce);
    tile t = {.dom = &red->in[0]->type, .vec = vec, .prologue = true, .store_prologue = true,
              .consume = "acc += xin;"};
    tile_text(G, part, red, &t, pc);
}

/* The chunk loop of part r (G->g set to it, its values named as the
 * caller chose): elements lo .. hi - 1 of its flat domain. */
static void total_loop(gen *G, int vec)
{
    cg_line(G, "#pragma unroll 4 // loads of the next steps in flight");
    cg_line(G, "for (i64 e = lo + (i64)threadIdx.x * %d; e < hi; e += %d) {", vec,
            TOTAL_BLOCK * vec);
    G->indent++;
    G->red = IR_OP(G->m, G->g->reduce);
    tile t = {.dom = &G->red->in[0]->type, .vec = vec, .prologue = true, .store_prologue = true,
              .consume = "acc += xin;"};
    cg_emit_tile(G, &t);
    G->red = NULL;
    G->indent--;
    cg_line(G, "}");
}

void cg_emit_total(gen *G, cg_cuda_kernel *k)
{
    const pass_fgroup *whole = G->g;
    const ir_module *m = G->m;
    int n = whole->nparts;
    int64_t *numel = su_alloc(G->arena, (size_t)n * sizeof *numel);
    int64_t *start = su_alloc(G->arena, (size_t)n * sizeof *start);
    int64_t *nch = su_alloc(G->arena, (size_t)n * sizeof *nch);
    part_code *pc = su_alloc(G->arena, (size_t)n * sizeof *pc);
    int64_t all = 0, chunk = TOTAL_CHUNK;
    k->vec = 1;
    for (int r = 0; r < n; r++) {
        const pass_fgroup *p = &whole->parts[r];
        const ir_type *dom = &IR_OP(m, p->reduce)->in[0]->type;
        numel[r] = ir_type_numel(dom);
        int vec = dom->rank >= 1 ? cg_vec_of(p, dom, dom->dim[dom->rank - 1]) : 1;
        k->vec = vec > k->vec ? vec : k->vec;
        all += numel[r];
        total_text(G, p, vec, &pc[r]);
        pc[r].cls = r;
        for (int q = 0; q < r && pc[r].cls == r; q++)
            if (pc[q].cls == q && same_code(G, k, q, r, pc))
                pc[r].cls = q;
    }
    while ((all + chunk - 1) / chunk + n > TOTAL_MAX_CHUNKS)
        chunk *= 2;
    /* the chunks, class after class (a class's parts next to each other) */
    int64_t nchunks = 0;
    int nclasses = 0;
    for (int r = 0; r < n; r++) {
        if (pc[r].cls != r)
            continue;
        nclasses++;
        for (int q = r; q < n; q++)
            if (pc[q].cls == r) {
                start[q] = nchunks;
                nch[q] = (numel[q] + chunk - 1) / chunk;
                nchunks += nch[q];
            }
    }
    int warps = TOTAL_BLOCK / 32;
    k->strategy = CG_CUDA_ROW;
    k->block = TOTAL_BLOCK;
    k->grid = nchunks > MAX_GRID ? MAX_GRID : nchunks;
    k->shared_bytes = (warps + n) * (int)sizeof(float);
    G->helpers |= H_WARP | H_BLOCK | H_COLPARTS;
    cg_line(G, "extern __shared__ float red[]; // [%d]: sh_block_sum's; then [%d]: each part's "
               "sum", warps, n);
    cg_line(G, "for (i64 c = blockIdx.x; c < %lld; c += gridDim.x) { // chunks of %lld elements",
            (long long)nchunks, (long long)chunk);
    G->indent++;
    cg_line(G, "float acc = 0.0f;");
    int *mem = su_alloc(G->arena, (size_t)n * sizeof *mem), c = 0;
    for (int r = 0; r < n; r++) {
        if (pc[r].cls != r)
            continue;
        int nm = 0;
        int64_t end = 0;
        for (int q = r; q < n; q++)
            if (pc[q].cls == r) {
                mem[nm++] = q;
                end = start[q] + nch[q];
            }
        const char *what =
            nm == 1 ? cg_fmt(G, "part %d: %s", r, cg_ir_name(G, IR_OP(m, whole->parts[r].total)->res[0]))
                    : cg_fmt(G, "parts %d and %d more like it: one code", r, nm - 1);
        if (nclasses == 1)
            cg_line(G, "{ // %s", what);
        else if (c == 0)
            cg_line(G, "if (c < %lld) { // %s", (long long)end, what);
        else if (c + 1 < nclasses)
            cg_line(G, "} else if (c < %lld) { // %s", (long long)end, what);
        else
            cg_line(G, "} else { // %s", what);
        G->indent++;
        if (nm == 1) {
            cg_line(G, "const i64 lo = (c - %lld) * %lld, hi = min(lo + %lld, (i64)%lld);",
                    (long long)start[r], (long long)chunk, (long long)chunk, (long long)numel[r]);
            G->g = &whole->parts[r];
            total_loop(G, pc[r].vec);
            G->g = whole;
        } else {
            /* each member's first chunk, size and tensors, then one loop,
             * the first member's with its tensors named by slot */
            const part_code *rep = &pc[mem[0]];
            const char **slot = su_alloc(G->arena, (size_t)(rep->nvals + 1) * sizeof *slot);
            int nslots = 0;
            for (int j = 0; j < rep->nvals; j++) {
                slot[j] = is_slot(k, rep, j) ? slot_name(G, j) : NULL;
                if (!slot[j])
                    continue;
                nslots++;
                bool in = param_index(k, rep->vals[j]) < whole->nin;
                cg_line(G, "%s%s *p_%s;", in ? "const " : "",
                        cg_ctype(G, rep->vals[j]->type.dtype), slot[j]);
            }
            cg_line(G, "i64 first, n;");
            for (int i = 0; i < nm; i++) {
                int q = mem[i];
                const char *test = i == 0 ? cg_fmt(G, "if (c < %lld) {", (long long)(start[q] + nch[q]))
                                   : i + 1 < nm ? cg_fmt(G, "} else if (c < %lld) {",
                                                         (long long)(start[q] + nch[q]))
                                                : "} else {";
                cg_line(G, "%s // part %d: %s", test, q,
                        cg_ir_name(G, IR_OP(m, whole->parts[q].total)->res[0]));
                G->indent++;
                cg_line(G, "first = %lld;", (long long)start[q]);
                cg_line(G, "n = %lld;", (long long)numel[q]);
                for (int j = 0; j < pc[q].nvals; j++)
                    if (slot[j])
                        cg_line(G, "p_%s = p_%s;", slot[j], cg_cname(G, pc[q].vals[j]));
                G->indent--;
            }
            cg_line(G, "}");
            cg_line(G, "const i64 lo = (c - first) * %lld, hi = min(lo + %lld, n);",
                    (long long)chunk, (long long)chunk);
            slots_saved saved = slots_begin(G, rep, slot, nslots);
            G->g = &whole->parts[mem[0]];
            total_loop(G, rep->vec);
            G->g = whole;
            slots_end(G, &saved);
        }
        G->indent--;
        c++;
    }
    cg_line(G, "}");
    cg_line(G, "acc = sh_block_sum(acc, red);");
    cg_line(G, "if (threadIdx.x == 0)");
    cg_line(G, "    sh_cpart[c] = acc;");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "__shared__ bool last; // whether this block is the last to finish");
    cg_line(G, "__threadfence(); // each chunk's sum is seen before the count grows");
    cg_line(G, "__syncthreads();");
    cg_line(G, "if (threadIdx.x == 0)");
    cg_line(G, "    last = atomicAdd(&sh_cdone[0], 1u) + 1 == gridDim.x;");
    cg_line(G, "__syncthreads();");
    cg_line(G, "if (!last)");
    cg_line(G, "    return;");
    cg_line(G, "__threadfence();");
    su_buf cuts;
    su_buf_init_in(&cuts, G->arena);
    for (int r = 0; r < n; r++)
        su_buf_printf(&cuts, "%s%lld", r ? ", " : "", (long long)start[r]);
    cg_line(G, "const i64 first[%d] = {%s}; // each part's first chunk", n, cuts.s);
    su_buf_init_in(&cuts, G->arena);
    for (int r = 0; r < n; r++)
        su_buf_printf(&cuts, "%s%lld", r ? ", " : "", (long long)(start[r] + nch[r]));
    cg_line(G, "const i64 end[%d] = {%s}; // and its last chunk's next", n, cuts.s);
    cg_line(G, "float *sums = red + %d;", warps);
    cg_line(G, "const int lane = threadIdx.x %% 32, w = threadIdx.x / 32;");
    cg_line(G, "for (int p = w; p < %d; p += %d) { // a warp a part", n, warps);
    cg_line(G, "    float s = 0.0f;");
    cg_line(G, "    for (i64 j = first[p] + lane; j < end[p]; j += 32) // the chunks in order");
    cg_line(G, "        s += ((volatile float *)sh_cpart)[j];");
    cg_line(G, "    s = sh_warp_sum(s);");
    cg_line(G, "    if (lane == 0)");
    cg_line(G, "        sums[p] = s;");
    cg_line(G, "}");
    cg_line(G, "__syncthreads();");
    cg_line(G, "if (threadIdx.x != 0)");
    cg_line(G, "    return;");
    cg_line(G, "sh_cdone[0] = 0;");
    /* the epilogue: each part's scalar, the values it reads from outside
     * (scalars), its ops in program order, its stores */
    for (int r = 0; r < n; r++) {
        const ir_value *v = IR_OP(m, whole->parts[r].total)->res[0];
        cg_line(G, "const float %s = sums[%d]; // %s", cg_reg(G, v), r, cg_ir_name(G, v));
    }
    bool *part_op = su_alloc(G->arena, (size_t)whole->nops * sizeof *part_op);
    for (int i = 0; i < whole->nops; i++) {
        const ir_op *op = IR_OP(m, whole->ops[i]);
        part_op[i] = op->code == IR_SUM;
        for (int r = 0; r < n && !part_op[i]; r++)
            part_op[i] = pass_fuse_part(&whole->parts[r], whole->ops[i]) != NULL;
    }
    for (int i = 0; i < whole->nin; i++) {
        const ir_value *v = whole->in[i];
        bool read = false;
        for (int q = 0; q < whole->nops && !read; q++) {
            const ir_op *op = IR_OP(m, whole->ops[q]);
            for (int j = 0; !part_op[q] && j < op->nin; j++)
                read |= op->in[j] == v;
        }
        if (read)
            cg_line(G, "const float %s = %s;", cg_reg(G, v),
                    cg_load_conv(G, v->type.dtype, cg_fmt(G, "p_%s[0]", cg_cname(G, v))));
    }
    /* a constrain the partitioner left (a rename, fuse.c's total_alias)
     * of a value of the kernel: a register of the same value, made once
     * before its first reader */
    const ir_value **renamed = su_alloc(G->arena, ((size_t)whole->nops * 3 + 1) * sizeof *renamed);
    int nrenamed = 0;
    for (int i = 0; i < whole->nops; i++) {
        if (part_op[i])
            continue;
        const ir_op *op = IR_OP(m, whole->ops[i]);
        for (int j = 0; j < op->nin; j++) {
            const ir_value *v = op->in[j], *src = v;
            while (src->def && src->def->code == IR_CONSTRAIN && src->def->nin == 1)
                src = src->def->in[0];
            bool seen = src == v || !cg_in_group(G, src);
            for (int q = 0; q < nrenamed && !seen; q++)
                seen = renamed[q] == v;
            if (seen)
                continue;
            renamed[nrenamed++] = v;
            cg_line(G, "const float %s = %s; // %s, %s renamed", cg_reg(G, v), cg_reg(G, src),
                    cg_ir_name(G, v), cg_ir_name(G, src));
        }
        cg_emit_op(G, op);
    }
    for (int i = 0; i < whole->nout; i++) {
        const ir_value *v = whole->out[i];
        int at = -1;
        for (int q = 0; q < whole->nops && at < 0; q++)
            if (IR_OP(m, whole->ops[q])->res[0] == v)
                at = q;
        /* not a part's prologue value (its tile stored it) */
        const ir_op *op = at >= 0 ? IR_OP(m, whole->ops[at]) : NULL;
        if (op && (!part_op[at] || (op->code == IR_SUM && !op->res[0]->type.rank)))
            cg_line(G, "p_%s[0] = %s;", cg_cname(G, v),
                    cg_store_conv(G, v->type.dtype, cg_reg(G, v)));
    }
}

rview cg_red_view(const ir_op *r)
{
    const ir_type *t = &r->in[0]->type;
    rview v = {1, 1, 1};
    int64_t axis = t->rank - 1;
    if (r->code == IR_SUM || r->code == IR_MEAN || r->code == IR_AMAX || r->code == IR_SOFTMAX)
        axis = r->a->axis;
    if (r->code == IR_MSE) {
        v.n = ir_type_numel(t);
        return v;
    }
    for (int64_t i = 0; i < t->rank; i++) {
        if (i < axis)
            v.outer *= t->dim[i];
        else if (i > axis)
            v.inner *= t->dim[i];
        else
            v.n = t->dim[i];
    }
    return v;
}

/* The per-kind pieces of a reduction: identity and consume statements of
 * each pass, the code between passes, and the result's expression. */
typedef struct rparts {
    int passes;
    const char *init1, *consume1, *after1;
    const char *pre1, *post1; /* pass 1's statements around a vector's elements */
    const char *consume2, *after2;
    bool acc2_first;        /* pass 1 sums into acc2 as well as acc */
    const char *result;     /* uses xin (row ops) or acc (reductions) */
} rparts;

/* Who holds a row: a thread (column reductions), a warp or a block. */
enum { BY_THREAD, BY_WARP, BY_BLOCK };

/* x summed (or maxed) over the row's threads. */
static const char *bsum(gen *G, int by, const char *x)
{
    return by == BY_BLOCK ? cg_fmt(G, "sh_block_sum(%s, red)", x)
           : by == BY_WARP ? cg_fmt(G, "sh_warp_sum(%s)", x)
                           : x;
}

/* A first pass of the row's max and sum of exp(x - max) online (acc the
 * max, acc2 the sum: sh_online, a vector's elements at once with
 * sh_online_vec), merged over the row's threads, then the statement
 * after. */
static void online_pass(gen *G, rparts *p, int by, int vec, const char *after)
{
    G->helpers |= H_ONLINE;
    p->passes = 2;
    p->acc2_first = true;
    p->init1 = "__int_as_float(0xff800000) /* -inf */";
    p->consume1 = "sh_online(acc, acc2, xin);";
    if (vec > 1) {
        p->pre1 = cg_fmt(G, "float xv[%d]; // the vector's elements", vec);
        p->consume1 = "xv[q] = xin;";
        p->post1 = "sh_online_vec(acc, acc2, xv);";
    }
    p->after1 = cg_fmt(G, "%s%s",
                       by == BY_BLOCK  ? "sh_block_online(acc, acc2, red); "
                       : by == BY_WARP ? "sh_warp_online(acc, acc2); "
                                       : "",
                       after);
}

/* The passes of reduction G->red over rows held by `by`; reread: each
 * pass reads the row from memory again (not from registers). */
static rparts red_parts(gen *G, const rview *v, int by, const char *col, bool reread, int vec)
{
    const ir_op *r = G->red;
    const char *n = cg_f32_text(G, (float)v->n), *eps = cg_f32_text(G, (float)r->a->eps);
    rparts p = {.passes = 1, .init1 = "0.0f", .consume1 = "acc += xin;", .result = "acc"};
    bool block = by == BY_BLOCK;
    if (by != BY_THREAD)
        G->helpers |= (block ? H_BLOCK : 0) | H_WARP;
    switch (r->code) {
    case IR_SUM:
        break;
    case IR_MEAN:
        p.result = cg_fmt(G, "acc / %s", n);
        break;
    case IR_MSE:
        p.consume1 = "acc += xin * xin;";
        p.result = cg_fmt(G, "acc / %s", n);
        break;
    case IR_AMAX:
        G->helpers |= H_AMAX;
        p.init1 = "__int_as_float(0xff800000) /* -inf */";
        p.consume1 = "acc = sh_amax(acc, xin);";
        break;
    case IR_XENT_GRAD:
        if (r->nin == 3) { /* exp(x - lse) from the forward's lse: one pass (cg_emit_row) */
            G->helpers |= H_XENT_GRAD | H_NAN;
            p.passes = 1;
            p.result = cg_fmt(G, "sh_xent_grad(xin, lse, 1.0f, %s, lab, %lld)", col,
                              (long long)v->n);
            break;
        }
        /* fall through */
    case IR_SOFTMAX:
        if (!reread) { /* from registers: the max, the sum, the results */
            p.passes = 3;
            p.init1 = "__int_as_float(0xff800000) /* -inf */";
            p.consume1 = "acc = fmaxf(acc, xin);";
            p.after1 = cg_fmt(G, "const float mx = %s;",
                              by == BY_BLOCK  ? "sh_block_max(acc, red)"
                              : by == BY_WARP ? "sh_warp_max(acc)"
                                              : "acc");
            p.consume2 = "acc2 += expf(xin - mx);";
            p.after2 = cg_fmt(G, "const float scale = 1.0f / %s;", bsum(G, by, "acc2"));
        } else {
            /* from memory: one pass for the max and the sum of exp(x -
             * max), online (acc the max, acc2 the sum: sh_online), merged
             * over the row's threads; then the results: the row read
             * twice, not three times */
            online_pass(G, &p, by, vec, "const float mx = acc, scale = 1.0f / acc2;");
        }
        p.result = "expf(xin - mx) * scale";
        if (r->code == IR_XENT_GRAD) {
            G->helpers |= H_XENT_GRAD | H_NAN;
            p.result = cg_fmt(G, "sh_xent_grad(xin, mx, scale, %s, lab, %lld)", col, (long long)v->n);
        }
        break;
    case IR_XENT_LSE: /* the max and sum online, one result a row (cg_emit_row) */
        online_pass(G, &p, by, vec, "const float lse = acc + logf(acc2);");
        p.result = "lse";
        break;
    case IR_LAYERNORM:
    case IR_LAYERNORM_RSTD: /* the rstd alone: one result a row (cg_emit_row) */
        p.passes = 3;
        p.after1 = cg_fmt(G, "const float mean = %s / %s;", bsum(G, by, "acc"), n);
        p.consume2 = "acc2 += (xin - mean) * (xin - mean);";
        p.after2 = cg_fmt(G, "const float rstd = 1.0f / sqrtf(%s / %s + %s);",
                       bsum(G, by, "acc2"), n, eps);
        p.result = r->code == IR_LAYERNORM_RSTD
                       ? "rstd"
                       : cg_fmt(G, "(xin - mean) * rstd * %s + %s", cg_reg(G, r->in[1]),
                                cg_reg(G, r->in[2]));
        break;
    case IR_RMSNORM:
    case IR_RMSNORM_RSTD:
        p.passes = 2;
        p.consume1 = "acc += xin * xin;";
        p.after1 = cg_fmt(G, "const float rstd = 1.0f / sqrtf(%s / %s + %s);",
                       bsum(G, by, "acc"), n, eps);
        p.result = r->code == IR_RMSNORM_RSTD ? "rstd"
                                              : cg_fmt(G, "xin * rstd * %s", cg_reg(G, r->in[1]));
        break;
    case IR_LAYERNORM_DX: { /* (dy, x, mean, rstd, g): xin is dy */
        const char *x = cg_reg(G, r->in[1]), *mu = cg_reg(G, r->in[2]);
        const char *rs = cg_reg(G, r->in[3]), *g = cg_reg(G, r->in[4]);
        p.passes = 2;
        p.acc2_first = true;
        p.consume1 = cg_fmt(G, "{ const float gx = xin * %s; acc += gx; acc2 += gx * ((%s - %s) * %s); }",
                            g, x, mu, rs);
        p.after1 = cg_fmt(G, "const float m1 = %s / %s; const float m2 = %s / %s;",
                          bsum(G, by, "acc"), n, bsum(G, by, "acc2"), n);
        p.result = cg_fmt(G, "%s * (xin * %s - m1 - (%s - %s) * %s * m2)", rs, g, x, mu, rs);
        break;
    }
    case IR_RMSNORM_DX: { /* (dy, x, r, g) */
        const char *x = cg_reg(G, r->in[1]), *rs = cg_reg(G, r->in[2]), *g = cg_reg(G, r->in[3]);
        p.passes = 2;
        p.consume1 = cg_fmt(G, "acc += xin * %s * (%s * %s);", g, x, rs);
        p.after1 = cg_fmt(G, "const float m2 = %s / %s;", bsum(G, by, "acc"), n);
        p.result = cg_fmt(G, "%s * (xin * %s - %s * %s * m2)", rs, g, x, rs);
        break;
    }
    default:
        su_unreachable();
    }
    if (r->code == IR_AMAX && by != BY_THREAD)
        G->helpers |= H_BLOCK_AMAX;
    return p;
}

/* The final step of a reduction over the row's threads: its result and
 * epilogue, computed by the row's first thread (tid 0) at output index
 * oidx. */
static void emit_reduced(gen *G, const rparts *p, const char *combine, const char *oidx,
                         const char *tid)
{
    if (combine)
        cg_line(G, "acc = %s;", combine);
    cg_line(G, "if (%s == 0) {", tid);
    G->indent++;
    cg_line(G, "const i64 e = %s; // the result's element", oidx);
    tile t = {.dom = &G->red->res[0]->type, .vec = 1, .rexpr = p->result};
    cg_emit_tile(G, &t);
    G->indent--;
    cg_line(G, "}");
}

/* The loads a thread of a row loop over memory has in flight (vectors,
 * or elements where VEC is 1). One step's loads, then its elements, then
 * the next step's loads left each thread about one 16-byte load in flight,
 * about 32 KB a processor at 2048 threads, short of the ~36 KB that
 * Little's law asks at an H200's 4.8 TB/s, and the exps between the loads
 * lowered it further: the bf16 GPT-2's cross_entropy (8192 rows of 50304)
 * read at 36% of DRAM throughput, its gradient's two passes at 40%. Four
 * 16-byte vectors are 16 registers a thread. */
enum { ROW_AHEAD = 4 };

/* `steps` steps of the tile t from column c0 on, a row's: their loads
 * (cg_emit_ahead_loads), then their elements step after step; guarded,
 * the elements of each step only where it is in the row. A guarded step
 * past the row loads the row's end, unused, rather than nothing: with its
 * loads guarded, the first pass of the bf16 GPT-2's cross_entropy_grad
 * took 63 registers (ptxas of CUDA 13.0, sm_90), this way 32, as many as
 * the plain loop's. */
static void ahead_steps(gen *G, const rview *v, int64_t span, const tile *t, int steps,
                        bool guarded)
{
    cg_emit_ahead_arrays(G, t, steps);
    tile ta = *t;
    ta.ahead = "u";
    /* the elements' steps may read neither c nor e (NVRTC warns of unused variables) */
    bool uses_e = cg_tile_reads_e(G, &ta);
    bool uses_c = uses_e || guarded || (t->rexpr && G->red->code == IR_XENT_GRAD);
    for (int loads = 1; loads >= 0; loads--) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int u = 0; u < %d; u++) {", steps);
        G->indent++;
        if (loads || uses_c)
            cg_line(G, "const i64 c = c0 + u * %lld;", (long long)span);
        bool guard = guarded && !loads;
        if (guard) {
            cg_line(G, "if (c < %lld) {", (long long)v->n);
            G->indent++;
        }
        if (loads && guarded)
            cg_line(G, "const i64 e = row * %lld + (c < %lld ? c : %lld); // past the row: its "
                       "end, not used", (long long)v->n, (long long)v->n,
                    (long long)(v->n - t->vec));
        else if (loads || uses_e)
            cg_line(G, "const i64 e = row * %lld + c;", (long long)v->n);
        if (loads)
            cg_emit_ahead_loads(G, t);
        else
            cg_emit_tile(G, &ta);
        for (int i = guard ? 2 : 1; i > 0; i--) {
            G->indent--;
            cg_line(G, "}");
        }
    }
}

/* The loop of row_loop over memory, `ahead` steps of the tile t at once
 * (ahead_steps), which takes the elements in the plain loop's order, so
 * every result keeps its bits (the online max and sum see the same
 * vectors in the same order); then the steps left, fewer than `ahead`
 * (at most `left` for any thread), at once too, each guarded. A thread
 * has the row's steps rounded down or up (the row divides by VEC).
 * Loading ahead, ptxas spent up to 52 registers a thread on blocks of
 * 1024 (the bf16 GPT-2's cross_entropy_grad, a bf16 softmax over 56000):
 * one block a processor, half the threads of the plain loop's 32
 * registers, and none to run while that block waits at a barrier. Asking
 * for 2 blocks a processor holds those to 32 registers, unspilled. */
static void row_loop_ahead(gen *G, const rview *v, int block, int vec, const tile *t,
                           const char *tid, int ahead)
{
    int64_t n = v->n, span = (int64_t)block * vec, left = 0;
    if (block == 1024)
        G->min_blocks = 2;
    for (int64_t s = n / span; s <= (n + span - 1) / span; s++)
        left = s % ahead > left ? s % ahead : left;
    cg_line(G, "{ // %d steps' loads in flight a thread, then their elements in order", ahead);
    G->indent++;
    cg_line(G, "i64 c0 = (i64)%s * %d;", tid, vec);
    cg_line(G, "for (; c0 + %lld < %lld; c0 += %lld) {", (long long)((ahead - 1) * span),
            (long long)n, (long long)(ahead * span));
    G->indent++;
    ahead_steps(G, v, span, t, ahead, false);
    G->indent--;
    cg_line(G, "}");
    if (left) {
        cg_line(G, "// the steps left, at most %lld: their loads, then their elements",
                (long long)left);
        ahead_steps(G, v, span, t, (int)left, true);
    }
    G->indent--;
    cg_line(G, "}");
}

/* One loop over this thread's elements of the row, each a tile; with
 * `cached`, over the registers xs[] instead after the first pass. Over
 * memory, a thread with more than one step loads up to ROW_AHEAD vectors
 * ahead, as many steps as that allows (row_loop_ahead). */
static void row_loop(gen *G, const rview *v, int block, int vec, bool cached, tile *t,
                     bool fill_cache, const char *tid)
{
    int64_t n = v->n, span = (int64_t)block * vec;
    if (!cached && (t->prologue || t->rexpr)) {
        int64_t steps = (n + span - 1) / span, along = cg_tile_ahead(G, t);
        int64_t ahead = along ? ROW_AHEAD / along : 1;
        ahead = ahead < steps ? ahead : steps;
        if (ahead > 1) {
            row_loop_ahead(G, v, block, vec, t, tid, (int)ahead);
            return;
        }
    }
    if (cached) {
        int items = (int)((n + span - 1) / span);
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int j = 0; j < %d; j++) {", items);
        G->indent++;
        bool uses_c = n % span || t->prologue || t->rexpr;
        if (uses_c)
            cg_line(G, "const i64 c = ((i64)j * %d + %s) * %d;", block, tid, vec);
        if (n % span) {
            cg_line(G, "if (c < %lld) {", (long long)n);
            G->indent++;
        }
        const char *slot = vec > 1 ? cg_fmt(G, "xs[j * %d + q]", vec) : "xs[j]";
        if (fill_cache)
            t->consume = cg_fmt(G, "%s = xin;%s%s", slot, t->consume ? " " : "",
                             t->consume ? t->consume : "");
        else
            t->xin = slot;
    } else {
        cg_line(G, "for (i64 c = (i64)%s * %d; c < %lld; c += %lld) {", tid, vec, (long long)n,
             (long long)span);
        G->indent++;
    }
    if (t->prologue || t->rexpr) /* else the tile only reads registers */
        cg_line(G, "const i64 e = row * %lld + c;", (long long)n);
    cg_emit_tile(G, t);
    if (cached && n % span) {
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* The statistics the group's layernorm, rmsnorm or cross_entropy stores
 * from its sums (cg_stat_member), by the row's first thread once they are
 * known: the mean (layernorm's `mean`), the rstd (both norms' `rstd`) and
 * the log-sum-exp (cross_entropy's max m and sum s). */
static void emit_stats(gen *G, const char *tid)
{
    const pass_fgroup *g = G->g;
    for (int k = 0; k < g->nops; k++) {
        const ir_op *op = IR_OP(G->m, g->ops[k]);
        if (!cg_stat_member(G, op))
            continue;
        const ir_value *s = op->res[0];
        if (!G->f->stored[s->id])
            continue; /* read in the kernel alone (a cross_entropy's gradient) */
        const char *x = op->code == IR_MEAN       ? "mean"
                        : op->code == IR_XENT_LSE ? "m + logf(s)"
                                                  : "rstd";
        cg_line(G, "if (%s == 0) p_%s[row] = %s; // %s", tid, cg_cname(G, s),
                cg_store_conv(G, s->type.dtype, x), ir_ops[op->code].name);
    }
}

/* Whether reduction r makes one result a row (cg_emit_row's emit_reduced
 * after its passes), not one an element. */
static bool row_result(const ir_op *r)
{
    return r->code == IR_LAYERNORM_RSTD || r->code == IR_RMSNORM_RSTD || r->code == IR_XENT_LSE;
}

/* A row of at most WARP_ROW elements is a warp's (8 rows a block, no
 * barrier: shuffles only), a longer one a block's. */
enum { WARP_ROW = 1024, WARP_ROWS = 8 };

/* ---- a norm's column sums in its row kernel (fuse.h's cols) ----
 *
 * A layernorm_dx (rmsnorm_dx) group with column sums: norm_cols.c's
 * partial sums of the gain's and bias's gradients over runs of R rows,
 * each a sum over axis 1 of [P, R, D] with its prologue. The kernel takes
 * P blocks of WARP_ROWS warps, block p the rows p R .. p R + R - 1 (a
 * warp every WARP_ROWS-th of them), and after each row's input gradient
 * each lane adds its columns' elements of each column sum's prologue,
 * computed at the same element (row, c), into registers: the row's dy and
 * x are then in the L1 cache, read from DRAM once for both. Once its
 * rows are done, the block adds its warps' sums in warp order in shared
 * memory and stores its partial row p of each sum: the same sums
 * whichever order the blocks run in. */

/* The group's ops as views: the row op's (rv: the norm, its epilogue and
 * the consts they read) and each column sum's (cv[c]: its sum, the ops of
 * the group it reads through one another, and their consts), each with
 * the parameters its ops read and store (in, out). */
static void norm_col_views(gen *G, pass_fgroup *rv, pass_fgroup *cv)
{
    const pass_fgroup *g = G->g;
    int n = g->nops;
    bool *in_col = su_alloc(G->arena, (size_t)n * sizeof *in_col);
    bool *mark = su_alloc(G->arena, (size_t)n * sizeof *mark);
    for (int c = 0; c <= g->ncols; c++) {
        pass_fgroup *v = c < g->ncols ? &cv[c] : rv;
        *v = *g;
        v->ncols = 0;
        v->ops = su_alloc(G->arena, (size_t)n * sizeof *v->ops);
        v->in = su_alloc(G->arena, ((size_t)g->nin + 1) * sizeof *v->in);
        v->out = su_alloc(G->arena, ((size_t)g->nout + 1) * sizeof *v->out);
        v->nops = v->nin = v->nout = 0;
        memset(mark, 0, (size_t)n * sizeof *mark);
        for (int k = n - 1; k >= 0; k--) {
            const ir_op *op = IR_OP(G->m, g->ops[k]);
            if (c < g->ncols ? g->ops[k] == g->cols[c]
                             : !in_col[k] && op->code != IR_CONST)
                mark[k] = true;
            for (int j = k + 1; j < n && !mark[k]; j++) /* read by a marked op */
                mark[k] = mark[j] && ir_op_reads(IR_OP(G->m, g->ops[j]), op->res[0]);
        }
        for (int k = 0; k < n; k++) {
            if (!mark[k])
                continue;
            const ir_op *op = IR_OP(G->m, g->ops[k]);
            if (c < g->ncols && op->code != IR_CONST)
                in_col[k] = true;
            v->ops[v->nops++] = g->ops[k];
            for (int i = 0; i < g->nin; i++)
                if (ir_op_reads(op, g->in[i])) {
                    bool known = false;
                    for (int q = 0; q < v->nin; q++)
                        known |= v->in[q] == g->in[i];
                    if (!known)
                        v->in[v->nin++] = g->in[i];
                }
            for (int i = 0; i < g->nout; i++)
                if (g->out[i] == op->res[0])
                    v->out[v->nout++] = g->out[i];
        }
        v->reduce = c < g->ncols ? g->cols[c] : g->reduce;
    }
}

/* VEC of the row kernel rv with column sums cv[0 .. nc): cg_vec_of over
 * the values the rows are read and written by, the column sums' reads
 * among them (not their partial rows, stored once a block). */
static int norm_col_vec(gen *G, const pass_fgroup *rv, const pass_fgroup *cv, int nc,
                        const ir_type *dom, int64_t last)
{
    pass_fgroup all = *rv;
    int n = rv->nin;
    for (int c = 0; c < nc; c++)
        n += cv[c].nin;
    all.in = su_alloc(G->arena, ((size_t)n + 1) * sizeof *all.in);
    all.nin = 0;
    for (int i = 0; i < rv->nin; i++)
        all.in[all.nin++] = rv->in[i];
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < cv[c].nin; i++)
            all.in[all.nin++] = cv[c].in[i];
    return cg_vec_of(&all, dom, last);
}

/* Each column sum's prologue at this row's elements of the thread: its
 * accumulators cN[j * VEC + q] (j the thread's step, q the vector's). */
static void norm_col_rows(gen *G, const pass_fgroup *whole, pass_fgroup *cv, int64_t D, int vec)
{
    int64_t span = 32 * (int64_t)vec, items = (D + span - 1) / span;
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int j = 0; j < %lld; j++) { // the column sums' elements of this row",
            (long long)items);
    G->indent++;
    cg_line(G, "const i64 c = ((i64)j * 32 + lane) * %d;", vec);
    if (D % span) {
        cg_line(G, "if (c < %lld) {", (long long)D);
        G->indent++;
    }
    cg_line(G, "const i64 e = row * %lld + c;", (long long)D);
    for (int c = 0; c < whole->ncols; c++) {
        G->g = &cv[c];
        G->red = IR_OP(G->m, whole->cols[c]);
        cg_line(G, "{ // %s's partial sum", cg_cname(G, G->red->res[0]));
        G->indent++;
        cg_line(G, "float *const acc = c%d + j * %d;", c, vec);
        tile t = {.dom = &G->red->in[0]->type, .vec = vec, .prologue = true,
                  .store_prologue = true, .consume = vec > 1 ? "acc[q] += xin;" : "acc[0] += xin;"};
        cg_emit_tile(G, &t);
        G->indent--;
        cg_line(G, "}");
    }
    if (D % span) {
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* After the block's rows: its warps' sums in warp order (shared memory
 * cs[c * D + column]), then its partial row of each column sum. */
static void norm_col_store(gen *G, const pass_fgroup *whole, pass_fgroup *cv, int64_t D, int vec)
{
    int64_t span = 32 * (int64_t)vec, items = (D + span - 1) / span;
    cg_line(G, "extern __shared__ float cs[]; // [%d][%lld]: the block's column sums",
            whole->ncols, (long long)D);
    cg_line(G, "for (int w = 0; w < %d; w++) { // the warps' sums, in warp order", WARP_ROWS);
    G->indent++;
    cg_line(G, "if (threadIdx.x / 32 == w) {");
    G->indent++;
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int j = 0; j < %lld; j++) {", (long long)items);
    G->indent++;
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int q = 0; q < %d; q++) {", vec);
    G->indent++;
    cg_line(G, "const i64 c = ((i64)j * 32 + lane) * %d + q;", vec);
    cg_line(G, "if (c < %lld) {", (long long)D);
    G->indent++;
    for (int c = 0; c < whole->ncols; c++)
        cg_line(G, "cs[%lld + c] = (w == 0 ? 0.0f : cs[%lld + c]) + c%d[j * %d + q];",
                (long long)(c * D), (long long)(c * D), c, vec);
    for (int i = 0; i < 4; i++) {
        G->indent--;
        cg_line(G, "}");
    }
    cg_line(G, "__syncthreads();");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "for (i64 c = threadIdx.x; c < %lld; c += blockDim.x) { // the partial rows",
            (long long)D);
    G->indent++;
    cg_line(G, "const i64 e = (i64)blockIdx.x * %lld + c;", (long long)D);
    for (int c = 0; c < whole->ncols; c++) {
        G->g = &cv[c];
        G->red = IR_OP(G->m, whole->cols[c]);
        cg_line(G, "{");
        G->indent++;
        tile t = {.dom = &G->red->res[0]->type, .vec = 1,
                  .rexpr = cg_fmt(G, "cs[%lld + c]", (long long)(c * D))};
        cg_emit_tile(G, &t);
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

void cg_emit_row(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const ir_type *dom = &G->red->in[0]->type;
    int64_t a = v->n, b = dom->rank >= 1 ? dom->dim[dom->rank - 1] : 1;
    while (b) { /* the row and the last dim both divide by VEC: their gcd */
        int64_t r = a % b;
        a = b;
        b = r;
    }
    const pass_fgroup *whole = G->g;
    const ir_op *norm = G->red;
    pass_fgroup rv, cv[2];
    int64_t parts = 0, run = 0; /* with column sums: P blocks of R rows */
    if (whole->ncols) {
        norm_col_views(G, &rv, cv);
        G->g = &rv;
        parts = IR_OP(G->m, whole->cols[0])->in[0]->type.dim[0];
        run = v->outer / parts;
        k->vec = norm_col_vec(G, &rv, cv, whole->ncols, dom, a);
    } else {
        k->vec = cg_vec_of(G->g, dom, a);
    }
    k->strategy = CG_CUDA_ROW;
    int by = v->n <= WARP_ROW ? BY_WARP : BY_BLOCK;
    const char *tid = by == BY_WARP ? "lane" : "threadIdx.x";
    int threads; /* a row's */
    k->warp_rows = by == BY_WARP;
    if (by == BY_WARP) {
        threads = 32;
        k->block = 32 * WARP_ROWS;
        k->grid = parts ? parts : cg_grid_for((v->outer + WARP_ROWS - 1) / WARP_ROWS, 1);
        k->shared_bytes = (int)(whole->ncols * v->n * (int64_t)sizeof(float));
    } else {
        threads = k->block = cg_clamp_block(cg_pow2_at_least((v->n + k->vec - 1) / k->vec), 1024);
        k->grid = cg_grid_for(v->outer, 1);
        k->shared_bytes = k->block / 32 * (int)sizeof(float);
    }
    int64_t span = (int64_t)threads * k->vec, items = (v->n + span - 1) / span;
    const char *col = k->vec > 1 ? "c + q" : "c";
    unsigned helpers = G->helpers;
    rparts p = red_parts(G, v, by, col, true, k->vec);
    /* a row's result alone needs no second pass to keep it for */
    /* with column sums, 2 blocks a processor (16 warps, as the kernel
     * without them) fit in 128 registers a thread only without the row in
     * registers: its second pass reads dy again, from the L1 cache mostly
     * (ptxas of CUDA 13.0, sm_90, the bf16 GPT-2's: 128 registers, no
     * spill; 180 with the row kept, one block a processor, and with the
     * row kept under 2 blocks' bounds 280 bytes spilled) */
    bool cached = p.passes > 1 && items * k->vec <= MAX_CACHED && G->red->code != IR_XENT_LSE &&
                  !parts;
    if (parts)
        G->min_blocks = 2;
    if (cached) { /* the row in registers: its passes read them */
        G->helpers = helpers;
        p = red_parts(G, v, by, col, false, k->vec);
    }
    bool lse = G->red->code == IR_XENT_GRAD && G->red->nin == 3;
    bool online = !cached && !lse &&
                  (G->red->code == IR_SOFTMAX || G->red->code == IR_XENT_GRAD ||
                   G->red->code == IR_XENT_LSE);
    if (by == BY_BLOCK && online) /* sh_block_online's two floats a warp */
        k->shared_bytes *= 2;
    if (lse) /* nothing merged over the row's threads */
        k->shared_bytes = 0;
    if (by == BY_WARP && parts) {
        cg_line(G, "const int lane = threadIdx.x %% 32; // a warp per row");
        for (int c = 0; c < whole->ncols; c++)
            cg_line(G, "float c%d[%lld] = {}; // the lane's columns of %s's partial row", c,
                    (long long)(items * k->vec),
                    cg_cname(G, IR_OP(G->m, whole->cols[c])->res[0]));
        cg_line(G, "for (i64 row = (i64)blockIdx.x * %lld + threadIdx.x / 32; row < "
                   "(i64)blockIdx.x * %lld + %lld; row += %d) { // the block's run of rows",
                (long long)run, (long long)run, (long long)run, WARP_ROWS);
    } else if (by == BY_WARP) {
        cg_line(G, "const int lane = threadIdx.x %% 32; // a warp per row");
        cg_line(G, "for (i64 row = (i64)blockIdx.x * %d + threadIdx.x / 32; row < %lld; row += "
                   "(i64)gridDim.x * %d) {",
                WARP_ROWS, (long long)v->outer, WARP_ROWS);
    } else {
        if (!lse)
            cg_line(G, "extern __shared__ float red[]; // %s", online ? "two floats per warp"
                                                                           : "one float per warp");
        cg_line(G, "for (i64 row = blockIdx.x; row < %lld; row += gridDim.x) {",
                (long long)v->outer);
    }
    G->indent++;
    if (G->red->code == IR_XENT_GRAD) {
        G->helpers |= H_ERROR;
        cg_line(G, "const int lab = p_%s[row];", cg_cname(G, G->red->in[1]));
        cg_line(G, "if ((lab < 0 || lab >= %lld) && %s == 0)", (long long)v->n, tid);
        cg_line(G, "    sh_bad_id(row, lab); // the runtime's error; the row is NaN meanwhile");
    }
    if (lse) { /* the results at once, from the forward's log-sum-exp */
        cg_line(G, "const float lse = p_%s[row]; // cross_entropy_lse, kept from the forward",
                cg_cname(G, G->red->in[2]));
        tile t = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true,
                  .rexpr = p.result};
        row_loop(G, v, threads, k->vec, false, &t, false, tid);
        G->indent--;
        cg_line(G, "}");
        return;
    }
    if (cached)
        cg_line(G, "float xs[%lld]; // this thread's elements of the row", (long long)(items * k->vec));
    cg_line(G, "float acc = %s;", p.init1);
    if (p.acc2_first)
        cg_line(G, "float acc2 = 0.0f;");
    tile t1 = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true,
               .consume = p.consume1, .pre = p.pre1, .post = p.post1};
    row_loop(G, v, threads, k->vec, cached, &t1, true, tid);
    if (p.passes == 1) {
        const char *comb = G->red->code == IR_AMAX
                               ? (by == BY_WARP ? "sh_warp_amax(acc)" : "sh_block_amax(acc, red)")
                               : bsum(G, by, "acc");
        emit_reduced(G, &p, comb, "row", tid);
    } else {
        cg_line(G, "%s", p.after1);
        if (p.passes == 3) {
            cg_line(G, "float acc2 = 0.0f;");
            tile t2 = {.dom = dom, .vec = k->vec, .prologue = !cached, .consume = p.consume2};
            row_loop(G, v, threads, k->vec, cached, &t2, false, tid);
            cg_line(G, "%s", p.after2);
        }
        emit_stats(G, tid);
        if (row_result(G->red)) {
            emit_reduced(G, &p, NULL, "row", tid); /* one result a row */
        } else {
            tile t3 = {.dom = dom, .vec = k->vec, .prologue = !cached, .rexpr = p.result};
            row_loop(G, v, threads, k->vec, cached, &t3, false, tid);
        }
    }
    if (parts) {
        norm_col_rows(G, whole, cv, v->n, k->vec);
        G->g = &rv;
        G->red = norm;
    }
    G->indent--;
    cg_line(G, "}");
    if (parts)
        norm_col_store(G, whole, cv, v->n, k->vec);
    G->g = whole;
    G->red = norm;
}

/* A loop over the axis for the column t: element e = base + k * inner. */
static void column_loop(gen *G, const rview *v, tile *t)
{
    cg_line(G, "for (i64 k = 0; k < %lld; k++) {", (long long)v->n);
    G->indent++;
    cg_line(G, "const i64 e = base + k * %lld;", (long long)v->inner);
    cg_emit_tile(G, t);
    G->indent--;
    cg_line(G, "}");
}

/* A single-pass reduction over an axis other than the last (a bias's or a
 * norm's gradient summed over the batch rows): a block takes 32 adjacent
 * vectors of VEC results (cg_vec_of's 8, 4 or 1 columns: 16 bytes a lane
 * where the columns allow), a lane each, and its warps split the reduced
 * axis (warp w takes k = w, w + warps, ...), their partial results
 * combined in warp order through shared memory by warp 0; a warp's reads
 * of a row are 32 adjacent vectors (512 bytes of bf16). One element a
 * lane, a warp's 64 bytes of bf16 left a thread one 2-byte load in flight,
 * far short of the bytes in flight that DRAM's bandwidth needs: the bf16
 * GPT-2's bias and norm gradients (87 such sums a step) read at about 0.3
 * of the H200's bandwidth (run 4). COL_MAX_WARPS warps a block, fewer for
 * a short axis (each warp at least about 16 of its elements). Where the
 * groups of 32 vectors are fewer than MAX_COL_BLOCKS blocks (GPT-2's norm
 * gradients: 3 groups of 8192 rows), the axis is cut into `split` runs of
 * rows as well, a block each (each run at least COL_RUN_MIN rows): each
 * block's partial results go to sh_cpart, and the last of a group's
 * blocks to finish (sh_cdone) sums them in block order, so the sum does
 * not depend on the order blocks run in (with VEC > 1 by all its warps,
 * warp w the runs w, w + warps, ..., then the warps' sums in warp order). */
enum { COL_MAX_WARPS = 16, COL_BLOCK_MIN = 64, COL_RUN_MIN = 64 };

/* s with each identifier acc a vector's element acc[q]. */
static const char *acc_q(gen *G, const char *s)
{
    const char *out = "", *from = s;
    for (const char *c = s; *c; c++) {
        bool id_before = c > s && (isalnum((unsigned char)c[-1]) || c[-1] == '_');
        if (!id_before && strncmp(c, "acc", 3) == 0 &&
            !(isalnum((unsigned char)c[3]) || c[3] == '_')) {
            out = cg_fmt(G, "%s%.*sacc[q]", out, (int)(c - from), from);
            from = c + 3;
        }
    }
    return cg_fmt(G, "%s%s", out, from);
}

/* stmt for each q of a lane's vec columns. */
static void emit_each(gen *G, int vec, const char *stmt)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int q = 0; q < %d; q++)", vec);
    cg_line(G, "    %s", stmt);
}

/* The consume of a column kernel's tile: p's, and the sibling sum's
 * (cg_sib) into sacc. */
static const char *column_consume(gen *G, const rparts *p, int vec)
{
    const ir_op *sib = cg_sib(G);
    const char *c = vec > 1 ? acc_q(G, p->consume1) : p->consume1;
    if (!sib)
        return c;
    return cg_fmt(G, "%s sacc%s += %s;", c, vec > 1 ? "[q]" : "", cg_reg(G, sib->in[0]));
}

/* A kernel with a sibling sum (cg_sib) keeps a second accumulator, sacc,
 * beside acc: in shared memory after red's (sred), and its blocks' parts
 * after theirs in sh_cpart, so the blocks of a group are half as many. */
static void emit_column_blocks(gen *G, cg_cuda_kernel *k, const rview *v, const rparts *p)
{
    const ir_type *dom = &G->red->in[0]->type;
    const ir_op *sib = cg_sib(G);
    int nacc = sib ? 2 : 1;
    int vec = cg_vec_of(G->g, dom, dom->dim[dom->rank - 1]);
    int64_t width = 32 * (int64_t)vec; /* columns a group */
    int64_t groups_per = (v->inner + width - 1) / width, groups = v->outer * groups_per;
    int64_t maxb = MAX_COL_BLOCKS / nacc; /* sh_cpart holds every sum's parts */
    int64_t split = groups < maxb ? maxb / groups : 1;
    if (split > v->n / COL_RUN_MIN)
        split = v->n / COL_RUN_MIN;
    split = split < 1 ? 1 : split;
    int64_t run = (v->n + split - 1) / split; /* rows a block */
    int warps = cg_pow2_at_least((run + 15) / 16);
    warps = warps > COL_MAX_WARPS ? COL_MAX_WARPS : warps;
    k->vec = vec;
    k->block = 32 * warps;
    k->grid = split > 1 ? groups * split : cg_grid_for(groups, 1);
    k->shared_bytes = nacc * k->block * vec * (int)sizeof(float);
    bool amax = G->red->code == IR_AMAX;
    const char *acc = vec > 1 ? "acc[q]" : "acc";
    if (vec > 1)
        cg_line(G, "extern __shared__ float red[]; // [warps][%d][32]: each warp's partial "
                   "results", vec);
    else
        cg_line(G, "extern __shared__ float red[]; // [warps][32]: each warp's partial results");
    if (sib)
        cg_line(G, "float *sred = red + %d; // the same of the sibling sum", k->block * vec);
    cg_line(G, "const int lane = threadIdx.x %% 32, w = threadIdx.x / 32;");
    if (split > 1) {
        G->helpers |= H_COLPARTS;
        cg_line(G, "{ // a block a run of %lld rows of a group of %lld columns: %lld runs",
                (long long)run, (long long)width, (long long)split);
        G->indent++;
        cg_line(G, "const i64 gi = blockIdx.x / %lld, r0 = blockIdx.x %% %lld * %lld; // group, "
                   "first row", (long long)split, (long long)split, (long long)run);
        cg_line(G, "const i64 r1 = min(r0 + %lld, (i64)%lld);", (long long)run, (long long)v->n);
    } else {
        cg_line(G, "for (i64 gi = blockIdx.x; gi < %lld; gi += gridDim.x) {", (long long)groups);
        G->indent++;
        cg_line(G, "const i64 r0 = 0, r1 = %lld;", (long long)v->n);
    }
    if (vec > 1)
        cg_line(G, "const i64 o = gi / %lld, c = gi %% %lld * %lld + lane * %d; // outer index, "
                   "first column", (long long)groups_per, (long long)groups_per,
                (long long)width, vec);
    else
        cg_line(G, "const i64 o = gi / %lld, c = gi %% %lld * 32 + lane; // outer index, column",
                (long long)groups_per, (long long)groups_per);
    cg_line(G, "const bool live = c < %lld;", (long long)v->inner);
    cg_line(G, "const i64 base = o * %lld + c; // element (o, 0, c)", (long long)(v->n * v->inner));
    if (vec > 1)
        cg_line(G, "float acc[%d]; // the lane's columns' partial results", vec);
    else
        cg_line(G, "float acc = %s;", p->init1);
    if (sib && vec > 1)
        cg_line(G, "float sacc[%d]; // and the sibling sum's", vec);
    else if (sib)
        cg_line(G, "float sacc = %s; // the sibling sum's", p->init1);
    if (vec > 1) {
        cg_line(G, "const float a0 = %s;", p->init1);
        emit_each(G, vec, "acc[q] = a0;");
        if (sib)
            emit_each(G, vec, "sacc[q] = a0;");
        cg_line(G, "#pragma unroll 4 // loads of the next rows in flight");
    }
    cg_line(G, "for (i64 k = r0 + w; live && k < r1; k += %d) {", warps);
    G->indent++;
    cg_line(G, "const i64 e = base + k * %lld;", (long long)v->inner);
    tile t1 = {.dom = dom, .vec = vec, .prologue = true, .store_prologue = true,
               .consume = column_consume(G, p, vec)};
    cg_emit_tile(G, &t1);
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "__syncthreads(); // red is read by the last group's warp 0");
    if (vec > 1)
        emit_each(G, vec, cg_fmt(G, "red[(w * %d + q) * 32 + lane] = acc[q];", vec));
    else
        cg_line(G, "red[threadIdx.x] = acc;");
    if (sib && vec > 1)
        emit_each(G, vec, cg_fmt(G, "sred[(w * %d + q) * 32 + lane] = sacc[q];", vec));
    else if (sib)
        cg_line(G, "sred[threadIdx.x] = sacc;");
    cg_line(G, "__syncthreads();");
    const char *merge = amax ? cg_fmt(G, "%s = sh_amax(%s, %%s);", acc, acc)
                             : cg_fmt(G, "%s += %%s;", acc);
    const char *red_at = vec > 1 ? cg_fmt(G, "red[(j * %d + q) * 32 + lane]", vec)
                                 : "red[j * 32 + lane]";
    /* the sibling's (a sum): sacc, sred */
    const char *smerge = vec > 1 ? "sacc[q] += %s;" : "sacc += %s;";
    const char *sred_at = vec > 1 ? cg_fmt(G, "sred[(j * %d + q) * 32 + lane]", vec)
                                  : "sred[j * 32 + lane]";
    int64_t soff = k->grid * 32 * vec; /* the sibling's parts in sh_cpart */
    if (split > 1 && vec > 1) {
        /* the parts [block][lane][q], a lane's 16 or 32 bytes at once; the
         * group's last block sums them with all its warps (warp w the runs
         * w, w + warps, ..., in order), then its warps' sums in warp order:
         * warp 0 alone would wait on split * vec loads, one after another */
        cg_line(G, "__shared__ bool last; // whether this block is its group's last");
        cg_line(G, "if (w == 0) {");
        G->indent++;
        cg_line(G, "for (int j = 1; j < %d; j++) { // the warps' partial results, in warp order",
                warps);
        G->indent++;
        emit_each(G, vec, cg_fmt(G, merge, red_at));
        if (sib)
            emit_each(G, vec, cg_fmt(G, smerge, sred_at));
        G->indent--;
        cg_line(G, "}");
        emit_each(G, vec, cg_fmt(G, "sh_cpart[(blockIdx.x * 32 + lane) * %d + q] = acc[q];", vec));
        if (sib)
            emit_each(G, vec, cg_fmt(G, "sh_cpart[%lld + (blockIdx.x * 32 + lane) * %d + q] = "
                                        "sacc[q];", (long long)soff, vec));
        cg_line(G, "__threadfence(); // each lane's part is seen before the count grows");
        cg_line(G, "__syncwarp();");
        cg_line(G, "if (lane == 0)");
        cg_line(G, "    last = atomicAdd(&sh_cdone[gi], 1u) + 1 == %lld;", (long long)split);
        G->indent--;
        cg_line(G, "}");
        cg_line(G, "__syncthreads();");
        cg_line(G, "if (last) { // the group's last block: the runs' parts");
        G->indent++;
        cg_line(G, "__threadfence();");
        emit_each(G, vec, "acc[q] = a0;");
        if (sib)
            emit_each(G, vec, "sacc[q] = a0;");
        cg_line(G, "for (i64 j = w; j < %lld; j += %d) { // warp w's runs, in run order",
                (long long)split, warps);
        G->indent++;
        cg_line(G, "const volatile float *part = sh_cpart + ((gi * %lld + j) * 32 + lane) * %d;",
                (long long)split, vec);
        cg_line(G, "float pv[%d]; // other blocks' stores: volatile, so not from L1", vec);
        emit_each(G, vec, "pv[q] = part[q];");
        emit_each(G, vec, cg_fmt(G, merge, "pv[q]"));
        if (sib) {
            emit_each(G, vec, cg_fmt(G, "pv[q] = part[%lld + q];", (long long)soff));
            emit_each(G, vec, cg_fmt(G, smerge, "pv[q]"));
        }
        G->indent--;
        cg_line(G, "}");
        cg_line(G, "__syncthreads();");
        emit_each(G, vec, cg_fmt(G, "red[(w * %d + q) * 32 + lane] = acc[q];", vec));
        if (sib)
            emit_each(G, vec, cg_fmt(G, "sred[(w * %d + q) * 32 + lane] = sacc[q];", vec));
        cg_line(G, "__syncthreads();");
        cg_line(G, "if (w == 0) {");
        G->indent++;
        cg_line(G, "for (int j = 1; j < %d; j++) { // the warps' sums, in warp order", warps);
        G->indent++;
        emit_each(G, vec, cg_fmt(G, merge, red_at));
        if (sib)
            emit_each(G, vec, cg_fmt(G, smerge, sred_at));
        G->indent--;
        cg_line(G, "}");
        cg_line(G, "if (lane == 0)");
        cg_line(G, "    sh_cdone[gi] = 0;");
        cg_line(G, "if (live) {");
        G->indent++;
    } else if (split > 1) {
        cg_line(G, "if (w == 0) {");
        G->indent++;
        cg_line(G, "for (int j = 1; j < %d; j++)%s // the warps' partial results, in warp order",
                warps, sib ? " {" : "");
        cg_line(G, "    %s", cg_fmt(G, merge, red_at));
        if (sib) {
            cg_line(G, "    %s", cg_fmt(G, smerge, sred_at));
            cg_line(G, "}");
        }
        cg_line(G, "sh_cpart[blockIdx.x * 32 + lane] = acc;");
        if (sib)
            cg_line(G, "sh_cpart[%lld + blockIdx.x * 32 + lane] = sacc;", (long long)soff);
        cg_line(G, "__threadfence(); // each lane's part is seen before the count grows");
        cg_line(G, "__syncwarp();");
        cg_line(G, "unsigned int before = 0;");
        cg_line(G, "if (lane == 0)");
        cg_line(G, "    before = atomicAdd(&sh_cdone[gi], 1u);");
        cg_line(G, "before = __shfl_sync(0xffffffffu, before, 0);");
        cg_line(G, "if (before + 1 == %lld) { // the group's last block", (long long)split);
        G->indent++;
        cg_line(G, "__threadfence();");
        cg_line(G, "acc = ((volatile float *)sh_cpart)[gi * %lld + lane];",
                (long long)(split * 32));
        if (sib)
            cg_line(G, "sacc = ((volatile float *)sh_cpart)[%lld + gi * %lld + lane];",
                    (long long)soff, (long long)(split * 32));
        cg_line(G, "for (int j = 1; j < %lld; j++)%s // the runs' partial results, in run order",
                (long long)split, sib ? " {" : "");
        cg_line(G, "    %s", cg_fmt(G, merge, cg_fmt(G, "((volatile float *)sh_cpart)[(gi * %lld + j) "
                                                     "* 32 + lane]", (long long)split)));
        if (sib) {
            cg_line(G, "    %s", cg_fmt(G, smerge, cg_fmt(G, "((volatile float *)sh_cpart)[%lld + "
                                                          "(gi * %lld + j) * 32 + lane]",
                                                          (long long)soff, (long long)split)));
            cg_line(G, "}");
        }
        cg_line(G, "if (lane == 0)");
        cg_line(G, "    sh_cdone[gi] = 0;");
        cg_line(G, "if (live) {");
        G->indent++;
    } else {
        cg_line(G, "if (w == 0 && live) {");
        G->indent++;
        if (vec > 1) {
            cg_line(G, "for (int j = 1; j < %d; j++) { // the warps' partial results, in warp "
                       "order", warps);
            G->indent++;
            emit_each(G, vec, cg_fmt(G, merge, red_at));
            if (sib)
                emit_each(G, vec, cg_fmt(G, smerge, sred_at));
            G->indent--;
            cg_line(G, "}");
        } else {
            cg_line(G, "for (int j = 1; j < %d; j++)%s // the warps' partial results, in warp "
                       "order", warps, sib ? " {" : "");
            cg_line(G, "    %s", cg_fmt(G, merge, red_at));
            if (sib) {
                cg_line(G, "    %s", cg_fmt(G, smerge, sred_at));
                cg_line(G, "}");
            }
        }
    }
    cg_line(G, "const i64 e = o * %lld + c; // the result's %s", (long long)v->inner,
            vec > 1 ? "first element" : "element");
    tile t2 = {.dom = &G->red->res[0]->type, .vec = vec,
               .rexpr = vec > 1 ? acc_q(G, p->result) : p->result,
               .srexpr = vec > 1 ? "sacc[q]" : "sacc"};
    cg_emit_tile(G, &t2);
    for (int i = split > 1 ? 3 : 1; i > 0; i--) { /* the ifs: live (last, warp 0) */
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* A reduction over an axis other than the last: single-pass ones over at
 * least COL_BLOCK_MIN elements by blocks (emit_column_blocks); a
 * single-pass one over a short axis (a batch axis of a bias's gradient
 * summed first) a thread per VEC adjacent results (16 bytes of each row's
 * columns, where cg_vec_of allows), and softmax a thread per result, each
 * thread's loop over the axis in order. */
void cg_emit_column(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const ir_type *dom = &G->red->in[0]->type;
    k->strategy = CG_CUDA_COLUMN;
    rparts p = red_parts(G, v, BY_THREAD, NULL, true, 1);
    if (p.passes == 1 && v->n >= COL_BLOCK_MIN) {
        emit_column_blocks(G, k, v, &p);
        return;
    }
    int vec = p.passes == 1 ? cg_vec_of(G->g, dom, dom->dim[dom->rank - 1]) : 1;
    int64_t steps = v->outer * v->inner / vec;
    k->vec = vec;
    k->block = cg_clamp_block(steps, BLOCK_EW);
    k->grid = cg_grid_for(steps, k->block);
    const char *r = vec > 1 ? "r" : "t"; /* the thread's (first) result */
    cg_line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    cg_line(G, "for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < %lld; t += stride) {",
         (long long)steps);
    G->indent++;
    if (vec > 1)
        cg_line(G, "const i64 r = t * %d; // the first of the thread's results", vec);
    cg_line(G, "const i64 base = %s / %lld * %lld + %s %% %lld; // element (%s / inner, 0, %s %% "
               "inner)", r, (long long)v->inner, (long long)(v->n * v->inner), r,
            (long long)v->inner, r, r);
    if (vec > 1) {
        cg_line(G, "float acc[%d]; // the thread's results", vec);
        emit_each(G, vec, cg_fmt(G, "acc[q] = %s;", p.init1));
    } else {
        cg_line(G, "float acc = %s;", p.init1);
    }
    if (cg_sib(G) && vec > 1) {
        cg_line(G, "float sacc[%d]; // and the sibling sum's", vec);
        emit_each(G, vec, cg_fmt(G, "sacc[q] = %s;", p.init1));
    } else if (cg_sib(G)) {
        cg_line(G, "float sacc = %s; // the sibling sum's", p.init1);
    }
    if (p.acc2_first)
        cg_line(G, "float acc2 = 0.0f;");
    tile t1 = {.dom = dom, .vec = vec, .prologue = true, .store_prologue = true,
               .consume = column_consume(G, &p, vec)};
    column_loop(G, v, &t1);
    if (p.passes == 1) {
        cg_line(G, "{");
        G->indent++;
        cg_line(G, "const i64 e = %s; // the result's %s", r,
                vec > 1 ? "first element" : "element");
        tile t2 = {.dom = &G->red->res[0]->type, .vec = vec,
                   .rexpr = vec > 1 ? acc_q(G, p.result) : p.result,
                   .srexpr = vec > 1 ? "sacc[q]" : "sacc"};
        cg_emit_tile(G, &t2);
        G->indent--;
        cg_line(G, "}");
    } else { /* softmax: the max and sum online, then the results */
        cg_line(G, "%s", p.after1);
        if (p.passes == 3) {
            cg_line(G, "float acc2 = 0.0f;");
            tile t2 = {.dom = dom, .vec = 1, .prologue = true, .consume = p.consume2};
            column_loop(G, v, &t2);
            cg_line(G, "%s", p.after2);
        }
        tile t3 = {.dom = dom, .vec = 1, .prologue = true, .rexpr = p.result};
        column_loop(G, v, &t3);
    }
    G->indent--;
    cg_line(G, "}");
}

/* cross_entropy: a block per row (grid-strided over at most MAX_PARTS
 * blocks), one pass over the row's logits with the online max and sum of
 * exp (sh_online), merged over the block; thread 0 adds the row's loss
 * max + log(sum) - logit[label] to its block's total, in row order, and the
 * block that finishes last sums the blocks' totals in block order
 * (sh_last_block) and divides by the rows: the loss does not depend on the
 * order blocks run in. With the gradient in the group (fuse.h's xgrad),
 * each row's gradient exp(x - lse) - one_hot(label) and its chain follow
 * in a second pass over the row, lse = max + log(sum) as the forward's
 * lse is stored (so the same bits as cg_emit_row's one pass from it),
 * while the row is likely still in the L2 cache. */
enum { XENT_BLOCK = 512 };

/* The ops of a cross_entropy group with its gradient as two groups over
 * the same parameters: gr, the gradient (its reduction), the ops after it
 * of the logits' shape and the consts those read (its chain); ce, the
 * others (the loss, its lse and epilogue, and their consts: a const both
 * read is in both). */
static void xent_views(gen *G, pass_fgroup *ce, pass_fgroup *gr)
{
    const pass_fgroup *g = G->g;
    const ir_type *dom = &G->red->in[0]->type;
    *ce = *gr = *g;
    ce->has_xgrad = gr->has_xgrad = false;
    ce->ops = su_alloc(G->arena, (size_t)g->nops * sizeof *ce->ops);
    gr->ops = su_alloc(G->arena, (size_t)g->nops * sizeof *gr->ops);
    bool *in_gr = su_alloc(G->arena, (size_t)g->nops * sizeof *in_gr);
    bool *in_ce = su_alloc(G->arena, (size_t)g->nops * sizeof *in_ce);
    for (int k = 0; k < g->nops; k++) {
        const ir_op *op = IR_OP(G->m, g->ops[k]);
        in_gr[k] = g->ops[k] >= g->xgrad && ir_shape_eq(&op->res[0]->type, dom);
        in_ce[k] = !in_gr[k] && op->code != IR_CONST;
    }
    for (int k = 0; k < g->nops; k++) { /* a const goes where its readers are, maybe both */
        const ir_op *op = IR_OP(G->m, g->ops[k]);
        for (int j = 0; op->code == IR_CONST && j < g->nops; j++) {
            const ir_op *r = IR_OP(G->m, g->ops[j]);
            for (int q = 0; q < r->nin; q++) {
                in_gr[k] = in_gr[k] || (in_gr[j] && r->in[q] == op->res[0]);
                in_ce[k] = in_ce[k] || (in_ce[j] && r->in[q] == op->res[0]);
            }
        }
    }
    ce->nops = gr->nops = 0;
    for (int k = 0; k < g->nops; k++) {
        if (in_gr[k])
            gr->ops[gr->nops++] = g->ops[k];
        if (in_ce[k] || !in_gr[k])
            ce->ops[ce->nops++] = g->ops[k];
    }
    gr->reduce = g->xgrad;
}

/* The second pass of cg_emit_xent over a row: its gradient (gr's ops, lse
 * from the row's max m and sum s), G's group ce meanwhile. */
static void xent_grad_pass(gen *G, const cg_cuda_kernel *k, const rview *v, pass_fgroup *ce,
                           pass_fgroup *gr)
{
    const ir_op *loss = G->red;
    G->g = gr;
    G->red = IR_OP(G->m, gr->reduce);
    cg_line(G, "{ // the row's gradient, a second pass (in the L2 cache, mostly)");
    G->indent++;
    cg_line(G, "const float lse = m + logf(s); // cross_entropy_lse's, as it is stored");
    rparts p = red_parts(G, v, BY_BLOCK, k->vec > 1 ? "c + q" : "c", true, k->vec);
    tile t = {.dom = &G->red->in[0]->type, .vec = k->vec, .prologue = true,
              .store_prologue = true, .rexpr = p.result};
    row_loop(G, v, k->block, k->vec, false, &t, false, "threadIdx.x");
    G->indent--;
    cg_line(G, "}");
    G->g = ce;
    G->red = loss;
}

void cg_emit_xent(gen *G, cg_cuda_kernel *k, const rview *v)
{
    const pass_fgroup *whole = G->g;
    pass_fgroup ce, gr;
    if (whole->has_xgrad) {
        xent_views(G, &ce, &gr);
        G->g = &ce;
    }
    const ir_type *dom = &G->red->in[0]->type;
    int64_t rows = v->outer, n = v->n;
    k->vec = cg_vec_of(G->g, dom, n);
    k->strategy = CG_CUDA_ROW;
    k->block = cg_clamp_block(cg_pow2_at_least((n + k->vec - 1) / k->vec), XENT_BLOCK);
    k->grid = rows < MAX_PARTS ? rows : MAX_PARTS;
    k->shared_bytes = 2 * (k->block / 32) * (int)sizeof(float);
    G->helpers |= H_ONLINE | H_PARTS | H_NAN | H_ERROR;
    cg_line(G, "extern __shared__ float red[]; // a max and a sum per warp");
    cg_line(G, "float total = 0.0f; // thread 0: this block's rows' losses, in row order");
    cg_line(G, "for (i64 row = blockIdx.x; row < %lld; row += gridDim.x) {", (long long)rows);
    G->indent++;
    cg_line(G, "const int lab = p_%s[row];", cg_cname(G, G->red->in[1]));
    cg_line(G, "float m = __int_as_float(0xff800000) /* -inf */, s = 0.0f;");
    tile t1 = {.dom = dom, .vec = k->vec, .prologue = true, .store_prologue = true,
               .consume = k->vec > 1 ? "xv[q] = xin;" : "sh_online(m, s, xin);",
               .pre = k->vec > 1 ? cg_fmt(G, "float xv[%d]; // the vector's elements", k->vec)
                                 : NULL,
               .post = k->vec > 1 ? "sh_online_vec(m, s, xv);" : NULL};
    row_loop(G, v, k->block, k->vec, false, &t1, false, "threadIdx.x");
    cg_line(G, "sh_block_online(m, s, red);");
    emit_stats(G, "threadIdx.x");
    cg_line(G, "if (threadIdx.x == 0) {");
    G->indent++;
    cg_line(G, "const bool valid = lab >= 0 && lab < %lld;", (long long)n);
    cg_line(G, "if (!valid)");
    cg_line(G, "    sh_bad_id(row, lab); // the runtime's error; the loss is NaN meanwhile");
    cg_line(G, "float picked = 0.0f; // the label's logit");
    cg_line(G, "if (valid) {");
    G->indent++;
    cg_line(G, "const i64 e = row * %lld + lab;", (long long)n);
    tile t3 = {.dom = dom, .vec = 1, .prologue = true, .consume = "picked = xin;"};
    cg_emit_tile(G, &t3);
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "total += valid ? m + logf(s) - picked : SH_NAN;");
    G->indent--;
    cg_line(G, "}");
    if (whole->has_xgrad)
        xent_grad_pass(G, k, v, &ce, &gr);
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "if (threadIdx.x == 0 && sh_last_block(total)) {");
    G->indent++;
    cg_line(G, "const float acc = sh_parts_sum();");
    cg_line(G, "const i64 e = 0; // the result's element");
    tile t = {.dom = &G->red->res[0]->type, .vec = 1,
              .rexpr = cg_fmt(G, "acc / %s", cg_f32_text(G, (float)rows))};
    cg_emit_tile(G, &t);
    G->indent--;
    cg_line(G, "}");
    G->g = whole;
}
