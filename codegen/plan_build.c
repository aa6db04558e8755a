/* plan_build.c: the plan writer's front half: a partitioned module becomes
 * an rt_plan (runtime/plan/plan.h), then bytes.
 *
 * One program per pipeline stage (passes/pipesplit.c made them; a module
 * without a pipeline is one stage), each with its own memory plan; `send`
 * names its operand and no result, `send` and `recv` carry their peer stage
 * in `dim`. Buffers and their offsets in the rank's
 * arena are the memory plan's (passes/memplan.c): `constrain` and `reshape`
 * share their operand's buffer and make no instruction, and a param's or
 * state's new value is often its own buffer (nothing to copy after a step).
 *
 * The I/O table holds the inputs, params, optimizer states and outputs with
 * their global types and shardings. Outputs have a namespace of their own:
 * `output x` may hand back a value under an input's or a param's name (an
 * output of a param is its new value, pass_autodiff). A training step's
 * updates name, per param and state, the buffer whose value replaces it
 * after each step, and the loss is an output (added as one when the
 * program does not output it). An input absent at run time may be made
 * from the seed by its init, which pass_input_init gave i32 inputs that
 * index tables or logits (uniform integers over the rows or the classes,
 * the same on every mesh); an input without one by normal(1), or zeros
 * for i32.
 *
 * Kernels: with cg_plan_options.kernels, each stage's fused groups
 * (passes/fuse.c, the grouping `--emit fused-ir` prints) become the plan's
 * kernels, launched at the group's anchor with its geometry, their
 * parameters the buffers of the values the group reads and stores,
 * standing for the instructions of the group's ops; so do the ops with
 * kernels of their own (cg_cuda_op_kernel: transpose, embedding,
 * attention, ...), each standing for its instruction. Their code is the
 * CUDA C of codegen/cuda.c compiled by NVRTC (a cubin per architecture,
 * PTX for the newest) into modules: kernels that are the same code but
 * for names (cg_cuda_kernel.key: a transformer's layers, a pipeline's
 * stages) share the module of the first, compiled once. The memory plan
 * is then made knowing the groups (pass_plan_memory_fused). */
#include "codegen.h"

#include "codegen/cuda.h"
#include "passes/fuse.h"
#include "passes/passes.h"

#include "runtime/plan/plan.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builder {
    const ir_module *m;  /* the stage being lowered */
    double kernel_s;     /* stage_end's seconds in the stages' kernels so far */
    const pass_fusion *f; /* its groups, while its kernels are made */
    int stage;
    su_arena *arena;
    su_arena *sa;        /* what only the stage's plain form needs: its
                          * instructions, stamps, kernels and maps (b->arena,
                          * or a batch's of build_rolled, freed once rolled) */
    const pass_memplan *mp;
    int32_t *buf_of;     /* per value id: its buffer, -1 none */
    int32_t *io_of;      /* per value id: its source's I/O entry, -1 none */
    rt_instr *ins;       /* the stage's instructions so far (malloc'd, grown;
                          * then the program's, plain[stage]) */
    int nins, capins;
    rt_instr **plain;    /* per stage: its plain program's instructions
                          * (malloc'd), until the plan is written */
    cg_packed *packed;   /* build_rolled's: per stage, its instructions packed
                          * until it has rolled (cg_plan_bytes frees those left);
                          * NULL otherwise */
    cg_packed *pk;       /* the stage being lowered's, when packed (else NULL) */
    rt_instr cur;        /* with pk: the instruction being lowered */
    int32_t last_shape;  /* with pk: the shape lower_op's instruction took */
    su_vec ios;          /* rt_io * */
    int32_t *instr_of;   /* per op index of the stage: its instruction, -1 none */
    int32_t *end_of;     /* per op index: the instruction count once it is lowered */
    int32_t **task, **mb; /* per stage, per instruction: its op's stamp (ir_op.task, .mb) */
    const cg_plan_options *o;
    su_vec kernels;      /* rt_kernel *, every stage's */
    su_vec made_k;       /* rt_kernel *: the stage's, but for their modules
                          * (stage_kernel_list; stage_kernels adds them) */
    su_vec modules;      /* rt_module * */
    su_vec made;         /* struct made *: each key compiled, its module and entry */
    const struct made **made_slot; /* the same, by key: open addressing (b->arena) */
    size_t made_cap;     /* a power of two over twice made.n; 0: none yet */
    su_status *err;
    jmp_buf *oom;        /* the caller's */
    /* what a stage's lowering holds, freed by cg_plan_bytes after an
     * allocation failure too */
    cg_cuda *gen;        /* per stage: its kernels, made for the stages at once
                          * (a pipeline's batch of them) before the first is
                          * lowered (gen_kernels) */
    int ngen;
    rt_nvrtc_output nv;  /* a module being compiled */
    su_buf msg;          /* a pass's message */
    struct nv_job *job;  /* the stage's new modules, compiled at once (malloc'd) */
    int njobs;
    struct key_memo *memo; /* the stage's kernels' keys by pointer (malloc'd; key_slot) */
    size_t memo_cap;
    struct lower_job *lower; /* plan_stages's jobs (malloc'd) */
    int nlower;
    int16_t rt_code[IR_NOPS]; /* per IR op: the plan's instruction of its name, -1 none
                               * (a reshape's: copy) */
    cg_cuda_kernel init; /* the init module's program (cg_init_source) */
    int32_t init_module; /* its module; -1 none */
    struct ptypes *pt;   /* the stage's kernels' parameter types (kernel_types) */
} builder;

static bool fail(builder *b, const char *fmt, ...) SU_PRINTF(2, 3);
static bool fail(builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_failv(b->err, SU_INTERNAL, fmt, ap);
    va_end(ap);
    return false;
}

/* A kernel's NVRTC compile failed with msg: a usage error where NVRTC is
 * not here (not built in, or its library not loadable), a bug otherwise
 * (the generated source does not compile). */
static bool fail_nvrtc(builder *b, const char *msg)
{
    if (rt_nvrtc_available())
        return fail(b, "%s", msg ? msg : "NVRTC failed");
    su_fail(b->err, SU_USAGE, "%s", msg ? msg : "NVRTC is not available");
    return false;
}

static rt_type rtype(const ir_type *t)
{
    rt_type r;
    memset(&r, 0, sizeof r);
    r.dtype = (uint8_t)t->dtype; /* the same numbering, checked below */
    r.rank = (uint8_t)t->rank;
    for (int i = 0; i < t->rank; i++)
        r.dim[i] = t->dim[i];
    return r;
}

_Static_assert((int)RT_F32 == (int)IR_F32 && (int)RT_F16 == (int)IR_F16 &&
                   (int)RT_BF16 == (int)IR_BF16 && (int)RT_I32 == (int)IR_I32 &&
                   (int)RT_BOOL == (int)IR_BOOL &&
                   (int)RT_NDTYPES == (int)IR_NDTYPES,
               "the plan's dtypes must number as the IR's");

/* The global type of a value with a local type and a sharding. */
static ir_type global_type(const ir_module *m, const ir_value *v)
{
    ir_type t = v->type;
    for (int d = 0; d < t.rank; d++)
        t.dim[d] *= ir_sharding_split(&v->sh, &m->mesh, d);
    return t;
}

static rt_sharding rsharding(const ir_sharding *s, int rank)
{
    rt_sharding r;
    memset(&r, 0, sizeof r);
    if (s->kind == IR_SH_NONE)
        return r;
    for (int d = 0; d < rank; d++) {
        r.naxes[d] = s->naxes[d];
        memcpy(r.axes[d], s->axes[d], s->naxes[d]);
    }
    r.partial = s->partial;
    return r;
}

static rt_io *new_io(builder *b, rt_io_kind kind, const char *name, const ir_value *v)
{
    rt_io *io = su_alloc(b->arena, sizeof *io);
    memset(io, 0, sizeof *io);
    io->kind = (uint8_t)kind;
    io->name = su_strdup(b->arena, name);
    ir_type g = global_type(b->m, v);
    io->type = rtype(&g);
    io->sh = rsharding(&v->sh, v->type.rank);
    io->stage = b->stage;
    io->buffer = -1;
    io->update = -1;
    su_vec_push(&b->ios, b->oom, io);
    return io;
}

static bool source(builder *b, const ir_op *op, rt_instr *in)
{
    const ir_value *v = op->res[0];
    if (op->code == IR_CONST) {
        in->value = op->a->value;
        return true;
    }
    rt_io_kind kind = op->code == IR_INPUT ? RT_IO_INPUT
                      : op->code == IR_STATE ? RT_IO_STATE : RT_IO_PARAM;
    rt_io *io = new_io(b, kind, op->a->name, v);
    in->io = (int32_t)b->ios.n - 1;
    b->io_of[v->id] = in->io;
    if (kind != RT_IO_INPUT)
        io->buffer = in->out;
    static const uint8_t kinds[] = {RT_INIT_NONE, RT_INIT_ZEROS, RT_INIT_ONES,
                                    RT_INIT_NORMAL, RT_INIT_UNIFORM, RT_INIT_PARAM};
    io->init = kinds[op->a->init.kind];
    io->init_a = op->a->init.a;
    io->init_b = op->a->init.b;
    if (op->a->init.kind == IR_INIT_PARAM) /* a master copy: the param's name */
        io->init_param = su_strdup(b->arena, op->a->init_param);
    if (kind == RT_IO_INPUT && op->a->init.kind == IR_INIT_NONE) {
        /* ids that index nothing: zeros; bools: uniform(0, 2), true or
         * false; floats: normal(1) */
        bool mask = v->type.dtype == IR_BOOL;
        io->init = v->type.dtype == IR_I32 ? RT_INIT_ZEROS : mask ? RT_INIT_UNIFORM : RT_INIT_NORMAL;
        io->init_a = v->type.dtype == IR_I32 || mask ? 0 : 1.0;
        io->init_b = mask ? 2 : io->init_b;
    }
    return true;
}

static bool lower_op(builder *b, const ir_op *op)
{
    if (op->nres != (op->code != IR_SEND))
        return fail(b, "%s makes %d results; the plan holds ops of one", ir_ops[op->code].name,
                    op->nres);
    const ir_value *res = op->nres ? op->res[0] : op->in[0];
    if (op->nres)
        b->buf_of[res->id] = b->mp->buf[res->id];
    if ((op->code == IR_CONSTRAIN || op->code == IR_RESHAPE) &&
        b->buf_of[res->id] == b->buf_of[op->in[0]->id])
        return true; /* the same bytes */
    const char *name = op->code == IR_RESHAPE ? "copy" : ir_ops[op->code].name;
    int code = b->rt_code[op->code];
    if (code < 0)
        return fail(b, "the plan has no instruction for %s", ir_ops[op->code].name);
    if (op->nin < rt_ops[code].min_in || op->nin > rt_ops[code].max_in)
        return fail(b, "%s has %d operands, the plan's %s takes %d to %d",
                    ir_ops[op->code].name, op->nin, name, rt_ops[code].min_in,
                    rt_ops[code].max_in);
    if (!b->pk && b->nins == b->capins) {
        int cap = b->capins ? 2 * b->capins : 1024;
        rt_instr *grown = realloc(b->ins, (size_t)cap * sizeof *grown);
        if (!grown)
            su_oom(b->oom); /* the old block is still b->ins, freed by the caller */
        b->ins = grown;
        b->capins = cap;
    }
    rt_instr *in = b->pk ? &b->cur : &b->ins[b->nins];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)code;
    in->nin = (uint8_t)op->nin;
    for (int i = 0; i < op->nin; i++) {
        in->in[i] = b->buf_of[op->in[i]->id];
        in->in_t[i] = rtype(&op->in[i]->type);
        if (in->in[i] < 0)
            return fail(b, "operand %d of %s has no buffer", i, ir_ops[op->code].name);
    }
    in->out = op->nres ? b->buf_of[res->id] : -1;
    in->out_t = rtype(&res->type);
    const ir_attrs *a = op->a;
    in->io = -1;
    in->axis = a->axis;
    in->keepdims = ir_ops[op->code].attrs & IR_A_HEADS ? a->heads_inner : a->keepdims;
    in->causal = a->causal;
    in->eps = a->eps;
    if (op->code == IR_TRANSPOSE || op->code == IR_DROPOUT) {
        in->nlist = (uint8_t)a->nlist;
        memcpy(in->list, a->list, sizeof in->list);
    }
    in->dim = ir_ops[op->code].cls == IR_C_P2P        ? a->peer
              : op->code == IR_ALL_REDUCE             ? a->reduce /* RT_REDUCE_SUM or _MAX */
              : op->code == IR_MATMUL ? a->trans | (a->parts ? RT_MM_PARTS : 0) /* RT_TRANS_* */
              : op->code == IR_CHECK_IDS || op->code == IR_CHECK_LABELS ? a->bound
                                                      : a->dim;
    in->dim2 = op->code == IR_SPLIT3 ? a->reversed : a->dim2;
    in->naxes = (uint8_t)a->naxes;
    memcpy(in->axes, a->axes, sizeof in->axes);
    in->lr = a->lr;
    in->momentum = a->momentum;
    in->beta1 = a->beta1;
    in->beta2 = a->beta2;
    in->wd = a->wd;
    in->offset = a->offset;
    if (op->code == IR_DROPOUT) { /* the probability, the tag, the dims with a pos */
        in->value = a->value;
        in->axis = a->tag;
        in->dim2 = 0;
        for (int d = 0; d < res->type.rank; d++)
            if (res->sh.naxes[d])
                in->dim2 |= 1 << d;
    }
    in->line = op->loc.line;
    in->col = op->loc.line ? op->loc.col : 0;
    if (ir_ops[op->code].cls == IR_C_SOURCE && !source(b, op, in))
        return false;
    if (b->pk)
        b->last_shape = cg_pack(b->pk, in, b->oom);
    b->nins++;
    return true;
}

/* A pipeline stage's tasks as they are lowered: per task, the ops of the
 * instance being read (its microbatch mb) and of the one before, in
 * order, so that op j of an instance has op j of the one before as its
 * twin (lower_twin). */
typedef struct inst_track {
    int32_t mb;             /* INT32_MIN: none yet */
    int32_t *cur, ncur, capcur;
    int32_t *prev, nprev, capprev;
} inst_track;

/* The twin of op i (its task's instance before, the op in its place), or
 * -1; op i joins its instance. */
static int32_t twin_of(builder *b, inst_track *tr, int32_t ntasks, const ir_op *op, int32_t i)
{
    if (op->task < 1 || op->task > ntasks)
        return -1;
    inst_track *T = &tr[op->task];
    if (T->mb != op->mb) { /* a new instance: the one read becomes the one before */
        int32_t *a = T->prev, ca = T->capprev;
        T->prev = T->cur;
        T->capprev = T->capcur;
        T->nprev = T->ncur;
        T->cur = a;
        T->capcur = ca;
        T->ncur = 0;
        T->mb = op->mb;
    }
    int32_t j = T->ncur;
    if (j == T->capcur) {
        int32_t cap = T->capcur ? 2 * T->capcur : 256;
        int32_t *g = su_alloc(b->sa, (size_t)cap * sizeof *g);
        if (j)
            memcpy(g, T->cur, (size_t)j * sizeof *g);
        T->cur = g;
        T->capcur = cap;
    }
    T->cur[T->ncur++] = i;
    return j < T->nprev ? T->prev[j] : -1;
}

/* Op op lowered as its twin tw was, into shape `shape`: when they are the
 * same instruction but for their buffers, the instruction is tw's shape
 * with op's buffers (the same as lower_op would pack, without making the
 * instruction, hashing it and comparing it with its shape's: a deep
 * pipeline's stage lowers a task's instance for every microbatch, each
 * its instance before but for its values). The instruction's fields come
 * from its op's code, attributes (interned: equal ones are one), place
 * and operand and result types, and from nothing else but its buffers,
 * its offset (an attribute) and, for a source, its I/O entry, and for
 * dropout, its result's sharding: those two, and the renames (their
 * instruction is none or a copy by their buffers), are lowered by
 * lower_op. False when op is not so (lower_op lowers it); *failed set
 * when an operand has no buffer (b's error says which). */
static bool lower_twin(builder *b, const ir_op *op, const ir_op *tw, int32_t shape, bool *failed)
{
    *failed = false;
    if (op->code != tw->code || op->a != tw->a || op->nin != tw->nin || op->nres != tw->nres ||
        op->loc.line != tw->loc.line || op->loc.col != tw->loc.col ||
        ir_ops[op->code].cls == IR_C_SOURCE || op->code == IR_DROPOUT ||
        op->code == IR_CONSTRAIN || op->code == IR_RESHAPE || op->nin > RT_MAX_IN ||
        op->nres != (op->code != IR_SEND))
        return false;
    for (int i = 0; i < op->nin; i++)
        if (!ir_type_eq(&op->in[i]->type, &tw->in[i]->type))
            return false;
    if (op->nres && !ir_type_eq(&op->res[0]->type, &tw->res[0]->type))
        return false;
    int32_t in[RT_MAX_IN];
    if (op->nres)
        b->buf_of[op->res[0]->id] = b->mp->buf[op->res[0]->id];
    for (int i = 0; i < op->nin; i++) {
        in[i] = b->buf_of[op->in[i]->id];
        if (in[i] < 0) {
            *failed = true;
            return fail(b, "operand %d of %s has no buffer", i, ir_ops[op->code].name);
        }
    }
    cg_pack_shape(b->pk, shape, in, op->nin, op->nres ? b->buf_of[op->res[0]->id] : -1,
                  op->a->offset, b->oom);
    b->nins++;
    return true;
}

/* The output entry of the training loss; one is added, named after the
 * loss's value ("loss"), when the program does not output it. */
static bool loss_output(builder *b, int32_t *loss)
{
    const ir_module *m = b->m;
    const ir_value *v = m->train.loss;
    for (int i = 0; i < b->ios.n; i++) {
        const rt_io *io = b->ios.v[i];
        if (io->kind == RT_IO_OUTPUT && io->stage == b->stage && io->buffer == b->buf_of[v->id]) {
            *loss = i;
            return true;
        }
    }
    if (v->sh.partial)
        return fail(b, "the loss is a partial sum");
    const char *name = v->name ? v->name : "loss";
    for (int i = 0; i < b->ios.n; i++) {
        const rt_io *io = b->ios.v[i];
        if (io->kind == RT_IO_OUTPUT && !strcmp(io->name, name))
            name = "train.loss"; /* a name the language cannot write */
    }
    rt_io *io = new_io(b, RT_IO_OUTPUT, name, v);
    io->buffer = b->buf_of[v->id];
    *loss = (int32_t)b->ios.n - 1;
    return true;
}

/* Lowers one stage's program into prog; its I/O entries join b->ios (the
 * loss's entry aside: loss_output, once the earlier stages' have joined). */
static bool build_stage(builder *b, rt_program *prog)
{
    const ir_module *m = b->m;
    if (!m->partitioned)
        return fail(b, "the plan is made from a partitioned module");
    if (!b->pk && b->capins < m->ops.n + 1) { /* an op makes one instruction at most */
        free(b->ins); /* nothing in it yet */
        b->ins = NULL;
        b->capins = 0;
        b->ins = su_xmalloc(b->oom, ((size_t)m->ops.n + 1) * sizeof *b->ins);
        b->capins = m->ops.n + 1;
    }
    /* packed: a task's instance lowered as its instance before where
     * that is the same (lower_twin); shape[i]: op i's instruction's shape */
    int32_t ntasks = 0;
    for (int i = 0; b->pk && i < m->ops.n; i++)
        ntasks = IR_OP(m, i)->task > ntasks ? IR_OP(m, i)->task : ntasks;
    inst_track *tr = NULL;
    int32_t *shape = NULL;
    if (b->pk) {
        tr = su_alloc(b->sa, ((size_t)ntasks + 1) * sizeof *tr);
        for (int32_t t = 0; t <= ntasks; t++)
            tr[t].mb = INT32_MIN;
        shape = su_alloc(b->sa, ((size_t)m->ops.n + 1) * sizeof *shape);
    }
    for (int i = 0; i < m->ops.n; i++) {
        int n = b->nins;
        const ir_op *op = IR_OP(m, i);
        int32_t tw = b->pk ? twin_of(b, tr, ntasks, op, i) : -1;
        bool failed = false;
        if (tw >= 0 && shape[tw] >= 0 && lower_twin(b, op, IR_OP(m, tw), shape[tw], &failed)) {
            shape[i] = shape[tw];
        } else {
            if (failed || !lower_op(b, op))
                return false;
            if (b->pk)
                shape[i] = b->nins > n ? b->last_shape : -1;
        }
        b->instr_of[i] = b->nins > n ? n : -1;
        b->end_of[i] = b->nins;
    }
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        if (o->v->sh.partial)
            return fail(b, "output '%s' is a partial sum", o->name);
        rt_io *io = new_io(b, RT_IO_OUTPUT, o->name, o->v);
        io->buffer = b->buf_of[o->v->id];
    }
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        int32_t k = b->io_of[u->src->id];
        if (k < 0 || b->buf_of[u->v->id] < 0)
            return fail(b, "update %d has no source entry or no buffer", i);
        ((rt_io *)b->ios.v[k])->update = b->buf_of[u->v->id];
    }
    prog->nbuf = b->mp->nbuf;
    prog->arena_bytes = b->mp->arena_bytes;
    /* copies: a stage's memory plan may go before the plan is written
     * (cg_plan_stream), its plain program's with it (b->sa) */
    size_t nb = ((size_t)b->mp->nbuf + 1) * sizeof *prog->buf_bytes;
    prog->buf_bytes = su_alloc(b->sa, nb);
    prog->buf_offset = su_alloc(b->sa, nb);
    memcpy(prog->buf_bytes, b->mp->bytes, (size_t)b->mp->nbuf * sizeof *prog->buf_bytes);
    memcpy(prog->buf_offset, b->mp->offset, (size_t)b->mp->nbuf * sizeof *prog->buf_offset);
    prog->ninstr = (int32_t)b->nins;
    /* the instructions themselves, not a copy: plain[stage] owns them
     * (room for an instruction per op: about as many), or pk (packed) */
    prog->instr = b->pk ? NULL : b->ins;
    if (!b->pk)
        b->plain[b->stage] = b->ins;
    b->ins = NULL;
    b->nins = b->capins = 0;
    int32_t *task = su_alloc(b->sa, ((size_t)prog->ninstr + 1) * sizeof *task);
    int32_t *mb = su_alloc(b->sa, ((size_t)prog->ninstr + 1) * sizeof *mb);
    for (int i = 0, k = 0; i < m->ops.n; i++) /* op i's instructions, after op i - 1's */
        for (; k < b->end_of[i]; k++) {
            task[k] = IR_OP(m, i)->task;
            mb[k] = IR_OP(m, i)->mb;
        }
    b->task[b->stage] = task;
    b->mb[b->stage] = mb;
    return true;
}

/* ---- kernels ---- */

static uint8_t *arena_copy(builder *b, const void *data, size_t len)
{
    uint8_t *p = su_alloc(b->arena, len + 1);
    memcpy(p, data, len);
    p[len] = 0;
    return p;
}

static char *arch_name(builder *b, const char *prefix, int arch)
{
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, arch);
    return su_strdup(b->arena, name);
}

/* ---- NVRTC for the stage's kernels at once ----
 *
 * Before a stage's kernels are added, each source whose key no module has
 * yet (once per key) goes into a program: up to CHUNK of them in the
 * kernels' order, each in a namespace of its own (their helpers have the
 * same names) with the includes first, compiled as one module whose
 * entries are their functions. NVRTC's fixed cost per program (starting,
 * the headers) is then paid once per CHUNK kernels; GPT-2's 44 programs
 * took 3.1 s of NVRTC per architecture one by one and 1.8 s as two. A
 * source naming sh_error, the module's error word that the runtime finds
 * by that name, is a program of its own (in a namespace its name would
 * change). So is each of attention's kernels and its backward's (heavy:
 * NVRTC takes 0.14 to 0.5 s on each, 10 to 50 times a fused group's),
 * and those programs are compiled first, so the threads share them out
 * and the last to finish is a short one: GPT-2 bf16's cold compile for
 * sm_80 and sm_90 on 2 processors took 3.2 s so, 3.7 s with the five in
 * one program. The programs are compiled by a pool of threads, as many as
 * the processors (at most NV_THREADS), each taking the next; module_of then
 * takes the results in the kernels' order, so the plan is the same
 * whatever the number of threads. A job runs under its own allocation
 * guard: a job that ran out of memory fails the plan as an allocation
 * failure, when module_of comes to it. A thread that cannot start leaves
 * its jobs to the others and the caller. */
enum { NV_THREADS = 16, CHUNK = 8 };

/* A key compiled: the module holding its code and its entry there. */
typedef struct made {
    const char *key;
    int32_t module, entry;
    uint64_t hash;          /* cg_cuda_key_hash(key) */
} made;

typedef struct nv_job {
    const char *name, *source;
    int nk;
    const cg_cuda_kernel **k;  /* its kernels, one per key: the module's entries */
    const rt_nvrtc_options *o;
    rt_nvrtc_output out;
    char *err;          /* malloc'd; NULL: none, or no memory for it */
    bool ok;
    bool oom;           /* it ran out of memory */
} nv_job;


static bool nv_compile(void *arg, su_buf *err)
{
    nv_job *j = arg;
    return rt_nvrtc_compile(j->name, j->source, j->o, &j->out, err);
}

static void nv_run_job(nv_job *j)
{
    j->ok = su_job(nv_compile, j, &j->err, &j->oom);
}

/* su_parallel_for's item i: the i-th job of the order. */
static void nv_item(void *ctx, int i)
{
    nv_run_job(((nv_job **)ctx)[i]);
}

static void free_jobs(builder *b)
{
    for (int i = 0; i < b->njobs; i++) {
        rt_nvrtc_output_free(&b->job[i].out);
        free(b->job[i].err);
    }
    free(b->job);
    b->job = NULL;
    b->njobs = 0;
    free(b->memo);
    b->memo = NULL;
    b->memo_cap = 0;
}

/* The kernels of one stage's generation that have one key share its text
 * (cg_cuda_generate_known's take_code): a pipeline stage has a kernel for
 * each group of every microbatch, and a few dozen keys among them. Per
 * key pointer of the stage, whether compile_stage has met it and the
 * module module_of found for it, so that the others of the key compare
 * no text (strcmp of whole kernel sources was 3% of a 128-microbatch
 * plan). Made by compile_stage, freed with its jobs (free_jobs), so a
 * pointer is never taken for another stage's. */
typedef struct key_memo {
    const char *key;        /* NULL: an empty slot */
    const struct made *made; /* module_of's, once made */
} key_memo;

/* Key's slot: its entry, or the empty one to take. */
static key_memo *key_slot(builder *b, const char *key)
{
    size_t mask = b->memo_cap - 1, i = (size_t)(((uintptr_t)key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (b->memo[i].key && b->memo[i].key != key)
        i = (i + 1) & mask;
    return &b->memo[i];
}

/* The job compiling key, and in *entry its place among the job's kernels. */
static nv_job *job_of(builder *b, const char *key, int32_t *entry)
{
    for (int i = 0; i < b->njobs; i++)
        for (int e = 0; e < b->job[i].nk; e++)
            if (!strcmp(b->job[i].k[e]->key, key)) {
                *entry = e;
                return &b->job[i];
            }
    return NULL;
}

/* The module and entry made for key, or NULL. */
/* The module and entry made for key (of hash h), or NULL. */
static const made *made_with(const builder *b, const char *key, uint64_t h)
{
    if (!b->made_cap)
        return NULL;
    for (size_t i = (size_t)h & (b->made_cap - 1); b->made_slot[i];
         i = (i + 1) & (b->made_cap - 1))
        if (b->made_slot[i]->hash == h && !strcmp(b->made_slot[i]->key, key))
            return b->made_slot[i];
    return NULL;
}

/* made d, by its key, into the table (grown to keep it under half full). */
static void index_made(builder *b, const made *d)
{
    if (2 * (size_t)(b->made.n + 1) > b->made_cap) {
        size_t cap = b->made_cap ? 2 * b->made_cap : 256;
        b->made_slot = su_alloc(b->arena, cap * sizeof *b->made_slot);
        b->made_cap = cap;
        for (int i = 0; i < b->made.n; i++) {
            const made *e = b->made.v[i];
            size_t j = (size_t)e->hash & (cap - 1);
            while (b->made_slot[j])
                j = (j + 1) & (cap - 1);
            b->made_slot[j] = e;
        }
    }
    size_t j = (size_t)d->hash & (b->made_cap - 1);
    while (b->made_slot[j])
        j = (j + 1) & (b->made_cap - 1);
    b->made_slot[j] = d;
}

/* Whether a source must be a program alone: it names the error word. */
static bool alone(const cg_cuda_kernel *k)
{
    return strstr(k->source, "sh_error") != NULL;
}

/* Whether k is one of the kernels NVRTC takes longest on, attention's and
 * its backward's (0.14 to 0.5 s each, where a fused group's is 0.01 to
 * 0.05 s): each is a program of its own, compiled first, so the pool's
 * threads share them out and the stage's last compile is a short one. */
static bool heavy(const builder *b, const cg_cuda_kernel *k)
{
    if (k->group >= 0) /* an attention pair, or attention with its lse (passes/fuse.h) */
        return b->f && k->group < b->f->ngroups &&
               pass_fuse_attn_two(b->f->groups[k->group].kind);
    if (k->op < 0 || k->op >= b->m->ops.n)
        return false;
    ir_opcode code = IR_OP(b->m, k->op)->code;
    return code == IR_ATTENTION || code == IR_ATTN_PROBS ||
           (ir_attn_layout_operands(code) && code != IR_ATTN_DELTA);
}

/* The declaration of src's dynamic shared array ("extern __shared__ float
 * red[]"), up to its ';', into d (size n): "" when it has none. */
static void shared_decl(const char *src, char *d, size_t n)
{
    const char *at = strstr(src, "extern __shared__ ");
    const char *end = at ? strchr(at, ';') : NULL;
    size_t len = end ? (size_t)(end - at) : 0;
    if (len >= n)
        len = n - 1;
    memcpy(d, at ? at : "", len);
    d[len] = 0;
}

/* Whether k can join job j's program: inside extern "C" kernels, dynamic
 * shared arrays have C linkage whatever their namespace, so two of one
 * name must have one type ("tile" of 4-byte and of 2-byte words cannot
 * meet). */
static bool shared_fits(const nv_job *j, const cg_cuda_kernel *k)
{
    char a[128], b[128];
    shared_decl(k->source, a, sizeof a);
    const char *name = strrchr(a, ' ');
    for (int i = 0; *a && i < j->nk; i++) {
        shared_decl(j->k[i]->source, b, sizeof b);
        const char *other = strrchr(b, ' ');
        size_t la = name ? strcspn(name, "[") : 0, lb = other ? strcspn(other, "[") : 0;
        if (other && la == lb && !strncmp(name, other, la) && strcmp(a, b))
            return false;
    }
    return true;
}

/* Job j's program: its kernels' sources, each in a namespace, after the
 * includes they name (each once); one kernel's is its source as is. */
static void job_source(builder *b, nv_job *j)
{
    j->name = j->k[0]->name;
    if (j->nk == 1) {
        j->source = j->k[0]->source;
        return;
    }
    j->name = su_sprintf(b->arena, "%s_and_%d_more", j->k[0]->name, j->nk - 1);
    su_buf src, body;
    su_buf_init_in(&src, b->arena);
    su_buf_init_in(&body, b->arena);
    su_buf_printf(&src, "// %d kernels, each in a namespace of its own\n", j->nk);
    for (int i = 0; i < j->nk; i++) {
        su_buf_printf(&body, "namespace %s {\n", j->k[i]->name);
        for (const char *l = j->k[i]->source; *l;) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
            char line[256];
            bool inc = !strncmp(l, "#include ", 9) && n < sizeof line;
            if (inc) {
                memcpy(line, l, n);
                line[n] = 0;
                if (!src.s || !strstr(src.s, line))
                    su_buf_put(&src, l, n);
            } else {
                su_buf_put(&body, l, n);
            }
            l += n;
        }
        su_buf_printf(&body, "} // namespace %s\n", j->k[i]->name);
    }
    su_buf_put(&src, body.s, body.len);
    j->source = src.s;
}

/* Compiles the new sources of c's kernels, all at once (see above). */
static bool compile_stage(builder *b, const cg_cuda *c)
{
    free_jobs(b);
    b->job = calloc((size_t)c->nkernels + 2, sizeof *b->job);
    for (b->memo_cap = 64; b->memo_cap < 2 * ((size_t)c->nkernels + 2);)
        b->memo_cap *= 2;
    b->memo = calloc(b->memo_cap, sizeof *b->memo);
    if (!b->job || !b->memo)
        su_oom(b->oom); /* the caller's guard: an allocation failure, not a bug */
    nv_job *open = NULL; /* the program taking more kernels */
    for (int i = 0; i < c->nkernels; i++) {
        const cg_cuda_kernel *k = &c->k[i];
        int32_t e;
        key_memo *seen = key_slot(b, k->key);
        if (seen->key) /* made before, or in a job already */
            continue;
        seen->key = k->key;
        if (made_with(b, k->key, k->key_hash) || job_of(b, k->key, &e))
            continue;
        if (!open || open->nk == CHUNK || alone(k) || alone(open->k[0]) || heavy(b, k) ||
            heavy(b, open->k[0]) || !shared_fits(open, k)) {
            open = &b->job[b->njobs++];
            *open = (nv_job){.o = &b->o->nvrtc};
            open->k = su_alloc(b->arena, CHUNK * sizeof *open->k);
        }
        open->k[open->nk++] = k;
    }
    if (b->stage == 0) { /* the init module, a program of its own */
        nv_job *j = &b->job[b->njobs++];
        *j = (nv_job){.o = &b->o->nvrtc, .nk = 1};
        j->k = su_alloc(b->arena, sizeof *j->k);
        j->k[0] = &b->init;
    }
    if (b->o->placeholder_code) /* the modules as they would be, without code */
        return true;
    for (int i = 0; i < b->njobs; i++)
        job_source(b, &b->job[i]);
    int nt = su_processors();
    nt = nt > NV_THREADS ? NV_THREADS : nt;
    /* the heavy programs first (module_of takes the results in the
     * kernels' order, so the plan is the same in any order) */
    nv_job **order = su_alloc(b->arena, (size_t)b->njobs * sizeof *order);
    int no = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->njobs; i++)
            if (heavy(b, b->job[i].k[0]) == (pass == 0))
                order[no++] = &b->job[i];
    su_parallel_for(b->njobs, nt, nv_item, order);
    return true;
}

/* Records each of the module's entries as made for its key. */
static void note_made(builder *b, int32_t module, const cg_cuda_kernel *const *k, int nk)
{
    for (int e = 0; e < nk; e++) {
        made *d = su_alloc(b->arena, sizeof *d);
        *d = (made){su_strdup(b->arena, k[e]->key), module, e, k[e]->key_hash};
        index_made(b, d);
        su_vec_push(&b->made, b->oom, d);
    }
}

/* A module for kernels k[nk] without code (cg_plan_options.placeholder_code):
 * one byte for each image, the architectures the options name. */
static int32_t placeholder_module(builder *b, const cg_cuda_kernel *const *k, int nk)
{
    static const int defaults[2] = {80, 90};
    const rt_nvrtc_options *o = &b->o->nvrtc;
    const int *arch = o->narchs > 0 ? o->arch : defaults;
    int n = o->narchs > 0 ? o->narchs : 2, newest = 0;
    rt_module *m = su_alloc(b->arena, sizeof *m);
    m->nentry = nk;
    m->entry = su_alloc(b->arena, (size_t)nk * sizeof *m->entry);
    for (int e = 0; e < nk; e++)
        m->entry[e] = su_strdup(b->arena, k[e]->name);
    m->ncubin = n;
    m->cubin = su_alloc(b->arena, (size_t)n * sizeof *m->cubin);
    for (int i = 0; i < n; i++) {
        m->cubin[i] = (rt_image){arch_name(b, "sm_", arch[i]), arena_copy(b, "-", 1), 1};
        newest = arch[i] > newest ? arch[i] : newest;
    }
    m->ptx = (rt_image){arch_name(b, "compute_", newest), arena_copy(b, "-", 1), 1};
    su_vec_push(&b->modules, b->oom, m);
    note_made(b, (int32_t)b->modules.n - 1, k, nk);
    return (int32_t)b->modules.n - 1;
}

/* The module running kernel k, and its entry there: one made before for
 * the same key, else the module of the program k's source was compiled
 * in with the stage's others (or by itself, through NVRTC's cache). -1
 * when NVRTC fails. */
static int32_t module_of(builder *b, const cg_cuda_kernel *k, int32_t *entry)
{
    key_memo *memo = b->memo ? key_slot(b, k->key) : NULL;
    const made *d = memo && memo->made ? memo->made : made_with(b, k->key, k->key_hash);
    if (d) {
        if (memo) {
            memo->key = k->key;
            memo->made = d;
        }
        *entry = d->entry;
        return d->module;
    }
    *entry = 0;
    rt_nvrtc_output *out = &b->nv;
    su_buf *err = &b->msg;
    bool ok;
    const cg_cuda_kernel *const *ks = &k;
    int nk = 1;
    nv_job *j = job_of(b, k->key, entry);
    if (b->o->placeholder_code)
        return j ? placeholder_module(b, j->k, j->nk) : placeholder_module(b, &k, 1);
    if (j) { /* compiled with the stage's others */
        if (j->oom)
            su_oom(b->oom); /* as if it had run out here */
        *out = j->out;
        memset(&j->out, 0, sizeof j->out);
        ok = j->ok;
        ks = j->k;
        nk = j->nk;
        if (!ok)
            fail_nvrtc(b, j->err);
    } else {
        ok = rt_nvrtc_compile(k->name, k->source, &b->o->nvrtc, out, err);
        if (!ok)
            fail_nvrtc(b, err->s);
    }
    su_buf_free(err);
    if (ok) {
        rt_module *m = su_alloc(b->arena, sizeof *m);
        m->nentry = nk;
        m->entry = su_alloc(b->arena, (size_t)nk * sizeof *m->entry);
        for (int e = 0; e < nk; e++)
            m->entry[e] = su_strdup(b->arena, ks[e]->name);
        m->ncubin = out->narchs;
        m->cubin = su_alloc(b->arena, (size_t)out->narchs * sizeof *m->cubin);
        for (int i = 0; i < out->narchs; i++)
            m->cubin[i] = (rt_image){arch_name(b, "sm_", out->arch[i]),
                                     arena_copy(b, out->cubin[i], out->cubin_len[i]),
                                     out->cubin_len[i]};
        m->ptx = (rt_image){arch_name(b, "compute_", out->ptx_arch),
                            arena_copy(b, out->ptx, out->ptx_len), out->ptx_len};
        su_vec_push(&b->modules, b->oom, m);
        note_made(b, (int32_t)b->modules.n - 1, ks, nk);
    }
    rt_nvrtc_output_free(out);
    return ok ? (int32_t)b->modules.n - 1 : -1;
}

_Static_assert((int)RT_KS_ELEMENTWISE == (int)CG_CUDA_ELEMENTWISE &&
                   (int)RT_KS_ROW == (int)CG_CUDA_ROW && (int)RT_KS_COLUMN == (int)CG_CUDA_COLUMN &&
                   (int)RT_KS_SINGLE_BLOCK == (int)CG_CUDA_SINGLE_BLOCK,
               "the plan's kernel strategies must number as codegen's");

/* The parameter types of a stage's kernels, each list made once (in
 * b->sa) and shared by the kernels that have it: a deep pipeline's stage
 * has tens of thousands of kernels (a task's for every microbatch) and a
 * few hundred lists, 72 bytes a type. Nothing changes a kernel's types
 * once made (the roll copies them). */
typedef struct ptypes {
    rt_type **list;     /* by hash, open addressing; NULL: free */
    int32_t *len;
    uint64_t *hash;
    int32_t cap, n;     /* cap a power of two, over twice n */
} ptypes;

static void ptypes_grow(builder *b, ptypes *T)
{
    int32_t cap = T->cap ? 2 * T->cap : 256;
    rt_type **list = su_alloc(b->sa, (size_t)cap * sizeof *list);
    int32_t *len = su_alloc(b->sa, (size_t)cap * sizeof *len);
    uint64_t *hash = su_alloc(b->sa, (size_t)cap * sizeof *hash);
    for (int32_t i = 0; i < T->cap; i++) {
        if (!T->list[i])
            continue;
        uint32_t j = (uint32_t)T->hash[i] & (uint32_t)(cap - 1);
        while (list[j])
            j = (j + 1) & (uint32_t)(cap - 1);
        list[j] = T->list[i];
        len[j] = T->len[i];
        hash[j] = T->hash[i];
    }
    T->list = list; /* the old table stays in the arena: a few KB */
    T->len = len;
    T->hash = hash;
    T->cap = cap;
}

static uint64_t mix64(uint64_t h, uint64_t x)
{
    h = (h ^ x) * 0x9E3779B97F4A7C15ull;
    return h ^ h >> 29;
}

/* Whether plan type r is IR type t. */
static bool type_is(const rt_type *r, const ir_type *t)
{
    if (r->dtype != (uint8_t)t->dtype || r->rank != (uint8_t)t->rank)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (r->dim[d] != t->dim[d])
            return false;
    return true;
}

/* The types of v[0 .. n), as a list of the stage's (b->pt). */
static rt_type *kernel_types(builder *b, const ir_value *const *v, int n)
{
    ptypes *T = b->pt;
    uint64_t h = (uint64_t)n;
    for (int j = 0; j < n; j++) {
        const ir_type *t = &v[j]->type;
        h = mix64(h, (uint64_t)t->dtype << 8 | (uint64_t)t->rank);
        for (int d = 0; d < t->rank; d++)
            h = mix64(h, (uint64_t)t->dim[d]);
    }
    if (2 * (T->n + 1) > T->cap)
        ptypes_grow(b, T);
    uint32_t mask = (uint32_t)T->cap - 1, i = (uint32_t)h & mask;
    for (; T->list[i]; i = (i + 1) & mask) {
        if (T->hash[i] != h || T->len[i] != n)
            continue;
        int j = 0;
        while (j < n && type_is(&T->list[i][j], &v[j]->type))
            j++;
        if (j == n)
            return T->list[i];
    }
    rt_type *t = su_alloc(b->sa, (size_t)(n ? n : 1) * sizeof *t);
    for (int j = 0; j < n; j++)
        t[j] = rtype(&v[j]->type);
    T->list[i] = t;
    T->len[i] = n;
    T->hash[i] = h;
    T->n++;
    return t;
}

/* The plan's kernel for generated kernel ck, reading its first nin
 * parameters, standing for ops[nops] (module op indices), but for its
 * module (stage_kernels'), into b->made_k. */
static bool make_kernel(builder *b, const cg_cuda_kernel *ck, int nin, const int *ops, int nops)
{
    rt_kernel *k = su_alloc(b->sa, sizeof *k); /* zeroed */
    k->stage = b->stage;
    k->name = su_strdup(b->sa, ck->name);
    k->strategy = (uint8_t)ck->strategy;
    k->grid = ck->grid;
    k->block = ck->block;
    k->shared_bytes = ck->shared_bytes;
    k->nin = nin;
    k->nout = ck->nparams - nin;
    /* its parameters and instructions written whole below, or it is not made */
    k->param = su_alloc_raw(b->sa, (size_t)ck->nparams * sizeof *k->param);
    k->param_t = kernel_types(b, ck->params, ck->nparams);
    for (int j = 0; j < ck->nparams; j++) {
        k->param[j] = b->buf_of[ck->params[j]->id];
        if (k->param[j] < 0)
            return fail(b, "kernel %s: parameter %d has no buffer", ck->name, j);
    }
    k->ninstr = nops;
    k->instr = su_alloc_raw(b->sa, (size_t)nops * sizeof *k->instr);
    for (int j = 0; j < nops; j++) {
        k->instr[j] = b->instr_of[ops[j]];
        if (k->instr[j] < 0)
            return fail(b, "kernel %s: op %d makes no instruction", ck->name, ops[j]);
    }
    su_vec_push(&b->made_k, b->oom, k);
    return true;
}

_Static_assert((int)RT_EPI_BIAS == (int)PASS_EPI_BIAS &&
                   (int)RT_EPI_RESIDUAL == (int)PASS_EPI_RESIDUAL &&
                   (int)RT_EPI_RELU == (int)PASS_EPI_RELU && (int)RT_EPI_GELU == (int)PASS_EPI_GELU &&
                   (int)RT_EPI_AUX == (int)PASS_EPI_AUX &&
                   (int)RT_EPI_AUX_ALIGN == PASS_EPI_AUX_ALIGN &&
                   (int)RT_EPI_DGELU == (int)PASS_EPI_DGELU,
               "the plan's epilogue bits must number as the fusion pass's");

/* The plan's matmul kernel for matmul group g (runtime/plan/plan.h): no code,
 * cuBLASLt with g's epilogue; parameters A, B, the bias and the residual
 * where g has them (with PASS_EPI_DGELU: the value its gelu_grad reads
 * as x), then the chain's result, then with PASS_EPI_AUX the value its
 * gelu reads (stored too). */
static bool add_matmul_kernel(builder *b, const pass_fgroup *g)
{
    const ir_op *mm = IR_OP(b->m, g->reduce);
    const ir_value *p[6] = {mm->in[0], mm->in[1]};
    int n = 2, nout = g->epilogue & PASS_EPI_AUX ? 2 : 1;
    if (g->bias)
        p[n++] = g->bias;
    if (g->residual)
        p[n++] = g->residual;
    const ir_op *last = IR_OP(b->m, g->ops[g->nops - 1]);
    if (g->epilogue & PASS_EPI_DGELU)
        p[n++] = last->in[0]; /* gelu_grad's x */
    if (g->nout != nout)
        return fail(b, "matmul group %s stores %d values, not %d", g->name, g->nout, nout);
    p[n] = last->res[0];
    if (nout == 2)
        p[n + 1] = last->in[0]; /* the gelu's operand */
    for (int j = n; j < n + nout; j++)
        if (p[j] != g->out[0] && p[j] != g->out[nout - 1])
            return fail(b, "matmul group %s does not store what its epilogue writes", g->name);
    rt_kernel *k = su_alloc(b->sa, sizeof *k);
    memset(k, 0, sizeof *k);
    k->stage = b->stage;
    k->name = su_strdup(b->sa, g->name);
    k->module = -1;
    k->strategy = RT_KS_MATMUL;
    k->epilogue = (uint8_t)g->epilogue;
    k->nin = n;
    k->nout = nout;
    k->param = su_alloc(b->sa, (size_t)(n + nout) * sizeof *k->param);
    k->param_t = kernel_types(b, p, n + nout);
    for (int j = 0; j < n + nout; j++)
        k->param[j] = b->buf_of[p[j]->id];
    k->instr = su_alloc(b->sa, (size_t)g->nops * sizeof *k->instr);
    for (int j = 0; j < g->nops; j++) {
        const ir_op *op = IR_OP(b->m, g->ops[j]);
        int32_t ins = b->instr_of[g->ops[j]];
        if (ins < 0 && op->code == IR_CONSTRAIN && op->nres == 1 &&
            b->buf_of[op->res[0]->id] == b->buf_of[op->in[0]->id])
            continue; /* a rename in the chain (fuse.c's matmul_group): the same bytes */
        if (ins < 0)
            return fail(b, "kernel %s: op %d makes no instruction", g->name, g->ops[j]);
        k->instr[k->ninstr++] = ins;
    }
    su_vec_push(&b->made_k, b->oom, k);
    return true;
}

/* The kernels of the stage b lowered last: one per group of f with CUDA
 * C, then one per op with a kernel of its own (cg_cuda_op_kernel), then
 * one per matmul group (cuBLASLt's). */
/* ---- every stage's kernels made at once ----
 *
 * cg_cuda_generate_known reads only its stage's module and groups and
 * writes only its result, so the stages' kernels are made at once, on a
 * thread per processor (at most 16), each job under an allocation guard of
 * its own. A job knows the keys the modules of earlier batches of stages
 * hold (build_rolled's: those batches' stages have ended, and nothing adds
 * to the table while the jobs run), and gives their kernels no source. It
 * cannot know those of the stages of its own batch (they are made after),
 * so the first kernel of such a key in a stage has its source made, which
 * compile_stage and module_of then pass over for the module made before:
 * the plan is the same. (A pipeline's middle stages, whose kernels the
 * first batch made, then make no source, nor the names of their values
 * that a source prints.) */
typedef struct gen_job {
    const builder *b;
    const ir_module *m;
    const pass_fusion *f;
    cg_cuda *out;
    char *msg;          /* malloc'd; NULL: none, or no memory for it */
    bool ok, oom;
} gen_job;

static bool knows_made(void *ctx, const char *key, uint64_t hash)
{
    return made_with(ctx, key, hash) != NULL;
}

static bool gen_run(void *arg, su_buf *err)
{
    gen_job *j = arg;
    return cg_cuda_generate_known(j->m, j->f, j->out, err, knows_made, (void *)j->b);
}

static void gen_item(void *ctx, int i)
{
    gen_job *j = &((gen_job *)ctx)[i];
    j->ok = su_job(gen_run, j, &j->msg, &j->oom);
}

/* The kernels of stages s0 to s1 - 1 of n into b->gen (build_rolled
 * makes a batch's at a time, so that every stage's are never held at
 * once); false for the first stage the generator fails on (a bug in the
 * passes), with its message. */
static bool gen_kernels(builder *b, ir_module *const *stages, int n, int s0, int s1)
{
    if (!b->gen) {
        b->gen = calloc((size_t)(n > 0 ? n : 1), sizeof *b->gen);
        if (!b->gen)
            su_oom(b->oom);
        b->ngen = n;
    }
    gen_job *job = calloc((size_t)(s1 > s0 ? s1 - s0 : 1), sizeof *job);
    if (!job)
        su_oom(b->oom);
    for (int s = s0; s < s1; s++)
        job[s - s0] = (gen_job){.b = b, .m = stages[s], .f = &b->o->fusion[s], .out = &b->gen[s]};
    int nt = su_processors();
    su_parallel_for(s1 - s0, nt > NV_THREADS ? NV_THREADS : nt, gen_item, job);
    int bad = -1;
    bool oom = false;
    for (int s = s0; s < s1; s++) {
        oom = oom || job[s - s0].oom;
        if (bad < 0 && !job[s - s0].ok)
            bad = s;
    }
    if (bad >= 0 && !oom)
        fail(b, "kernels of stage %d: %s", bad,
             job[bad - s0].msg ? job[bad - s0].msg : "?");
    for (int s = s0; s < s1; s++)
        free(job[s - s0].msg);
    free(job);
    if (oom)
        su_oom(b->oom); /* cg_plan_bytes frees b->gen */
    return bad < 0;
}

/* The plan's kernels of the stage b lowered last (its groups f), but for
 * their modules, into b->made_k: one per kernel of its cg_cuda (a group
 * of f with CUDA C, or an op with a kernel of its own), in its order,
 * then one per matmul group. Reads only the stage's own (a pipeline's
 * stages make theirs at once, plan_stages). */
static bool stage_kernel_list(builder *b, const pass_fusion *f)
{
    const cg_cuda *c = &b->gen[b->stage];
    b->made_k.n = 0;
    b->pt = su_alloc(b->sa, sizeof *b->pt);
    bool ok = true;
    for (int i = 0; ok && i < c->nkernels; i++) {
        const cg_cuda_kernel *k = &c->k[i];
        const pass_fgroup *g = k->group >= 0 ? &f->groups[k->group] : NULL;
        /* a pair's inputs are attn_dk's operands, one each even where
         * they are one value (attention(x, x, x)), then its two results;
         * attention with its lse's, attention's */
        int nin = !g ? k->nparams - 1 : pass_fuse_attn_two(g->kind) ? k->nparams - 2 : g->nin;
        ok = g ? make_kernel(b, k, nin, g->ops, g->nops) : make_kernel(b, k, nin, &k->op, 1);
    }
    for (int i = 0; ok && i < f->ngroups; i++)
        if (f->groups[i].kind == PASS_FUSE_MATMUL)
            ok = add_matmul_kernel(b, &f->groups[i]);
    return ok;
}

/* The stage's kernels (made by stage_kernel_list, made_k) into the plan's
 * with their modules: its new sources compiled, then each kernel's module
 * found or made in the kernels' order, so that modules number alike
 * however the lists were made. */
static bool stage_kernels(builder *b, const pass_fusion *f, const su_vec *made_k)
{
    cg_cuda *c = &b->gen[b->stage];
    b->f = f;
    bool ok = compile_stage(b, c);
    for (int i = 0; ok && i < made_k->n; i++) {
        rt_kernel *k = made_k->v[i];
        if (i < c->nkernels) { /* CUDA C; then the matmul groups' */
            k->module = module_of(b, &c->k[i], &k->entry);
            ok = k->module >= 0;
        }
        if (ok)
            su_vec_push(&b->kernels, b->oom, k);
    }
    int32_t entry;
    if (ok && b->stage == 0)
        ok = (b->init_module = module_of(b, &b->init, &entry)) >= 0;
    free_jobs(b);
    cg_cuda_free(c); /* the stage's kernels, no longer read */
    return ok;
}

/* b set to lower stage s (module m): its maps, in b->sa. */
static void stage_begin(builder *b, const ir_module *m, int s)
{
    b->m = m;
    b->stage = s;
    b->nins = 0;
    b->buf_of = su_alloc(b->sa, (size_t)(m->next_id + 1) * sizeof *b->buf_of);
    b->io_of = su_alloc(b->sa, (size_t)(m->next_id + 1) * sizeof *b->io_of);
    b->instr_of = su_alloc(b->sa, (size_t)(m->ops.n + 1) * sizeof *b->instr_of);
    b->end_of = su_alloc(b->sa, (size_t)(m->ops.n + 1) * sizeof *b->end_of);
    for (int i = 0; i <= m->next_id; i++)
        b->buf_of[i] = b->io_of[i] = -1;
    b->mp = &b->o->mp[s];
}

/* Stage s, lowered (b set by stage_begin and build_stage) with its
 * kernels' list (stage_kernel_list, made_k): the loss's entry, then its
 * kernels. */
static bool stage_end(builder *b, const su_vec *made_k, int32_t *loss)
{
    if (b->m->train.loss && !loss_output(b, loss))
        return false;
    if (!b->o->kernels)
        return true;
    double t0 = su_seconds();
    bool ok = stage_kernels(b, &b->o->fusion[b->stage], made_k);
    b->kernel_s += su_seconds() - t0;
    return ok;
}

/* Stage s of the plan: its instructions, then its kernels. */
static bool plan_stage(builder *b, const ir_module *m, int s, rt_program *prog, int32_t *loss)
{
    stage_begin(b, m, s);
    return build_stage(b, prog) &&
           (!b->o->kernels || stage_kernel_list(b, &b->o->fusion[s])) &&
           stage_end(b, &b->made_k, loss);
}

/* A stage lowered on a thread of its own (plan_stages): a copy of the
 * builder whose I/O entries, maps and kernels live in arenas of the
 * job's, its entries numbered from 0 until they join the plan's. */
typedef struct lower_job {
    builder b;
    const ir_module *m;
    rt_program *prog;
    int s;
    su_arena keep;      /* the I/O entries: the plan's arena's once joined */
    su_arena maps;      /* the maps and stamps: the batch's once joined */
    su_status st;       /* build_stage's failure */
    char *msg;          /* su_job's (malloc'd) */
    bool ok, oom;
} lower_job;

static bool lower_run(void *arg, su_buf *err)
{
    lower_job *j = arg;
    builder *b = &j->b;
    b->oom = err->oom;
    su_arena_init(&j->keep, err->oom);
    su_arena_init(&j->maps, err->oom);
    b->arena = &j->keep;
    b->sa = &j->maps;
    b->err = &j->st;
    memset(&b->ios, 0, sizeof b->ios);
    memset(&b->made_k, 0, sizeof b->made_k);
    b->nins = 0;
    stage_begin(b, j->m, j->s);
    return build_stage(b, j->prog) &&
           (!b->o->kernels || stage_kernel_list(b, &b->o->fusion[j->s]));
}

static void lower_item(void *ctx, int i)
{
    lower_job *j = &((lower_job *)ctx)[i];
    j->ok = su_job(lower_run, j, &j->msg, &j->oom);
}

/* plan_stages's jobs, freed: their arenas taken into the plan's (keep) or
 * freed with them (after a failure, when nothing reads them). */
static void free_lower(builder *b, bool keep)
{
    for (int i = 0; i < b->nlower; i++) {
        lower_job *j = &b->lower[i];
        su_vec_free(&j->b.ios);
        su_vec_free(&j->b.made_k);
        free(j->b.ins); /* a failed stage's instructions so far */
        free(j->msg);
        if (keep) {
            su_arena_take(b->arena, &j->keep);
            su_arena_take(b->sa, &j->maps);
        } else {
            su_arena_free(&j->keep);
            su_arena_free(&j->maps);
        }
    }
    free(b->lower);
    b->lower = NULL;
    b->nlower = 0;
}

/* Stages s0 to s1 - 1 of the plan, as plan_stage makes them one by one,
 * their instructions and kernels (but for the kernels' modules) made at
 * once, a thread per stage (as many as the processors); then, in stage
 * order, each stage's I/O entries join the plan's (its sources' numbers
 * moved on), its loss's entry is made and its kernels join the plan's
 * with their modules. The plan is the same whatever the number of
 * threads; the first stage that fails is the one reported. */
static bool plan_stages(builder *b, ir_module *const *stages, int s0, int s1, rt_plan *p)
{
    int n = s1 - s0;
    lower_job *job = calloc((size_t)(n > 0 ? n : 1), sizeof *job);
    if (!job)
        su_oom(b->oom);
    b->lower = job; /* freed by cg_plan_bytes after a failure */
    b->nlower = n;
    for (int s = s0; s < s1; s++) {
        lower_job *j = &job[s - s0];
        j->b = *b;
        j->b.ins = NULL;
        j->b.capins = 0;
        j->b.pk = b->packed ? &b->packed[s] : NULL; /* the job's own stage's */
        j->m = stages[s];
        j->prog = &p->stage[s];
        j->s = s;
    }
    su_parallel_for(n, su_processors(), lower_item, job);
    bool ok = true, oom = false;
    for (int i = 0; i < n; i++) { /* the first failure, in stage order */
        lower_job *j = &job[i];
        oom = oom || j->oom;
        if (ok && !j->ok && !j->oom) {
            if (j->st.kind != SU_OK)
                *b->err = j->st;
            else
                fail(b, "stage %d: %s", j->s, j->msg ? j->msg : "?");
        }
        ok = ok && j->ok;
    }
    for (int i = 0; ok && i < n; i++) {
        lower_job *j = &job[i];
        builder *lb = &j->b;
        int32_t base = (int32_t)b->ios.n;
        for (int e = 0; e < lb->ios.n; e++)
            su_vec_push(&b->ios, b->oom, lb->ios.v[e]);
        rt_program *prog = j->prog;
        for (int32_t k = 0; prog->instr && k < prog->ninstr; k++)
            if (prog->instr[k].io >= 0)
                prog->instr[k].io += base;
        for (int32_t k = 0; lb->pk && k < lb->pk->nshape; k++)
            if (lb->pk->shape[k].io >= 0) /* a source's own shape (each has its io) */
                lb->pk->shape[k].io += base;
        b->m = lb->m;
        b->stage = lb->stage;
        b->mp = lb->mp;
        b->buf_of = lb->buf_of;
        b->io_of = NULL; /* numbered in the job's entries */
        b->instr_of = lb->instr_of;
        b->end_of = lb->end_of;
        ok = stage_end(b, &lb->made_k, &p->loss);
    }
    free_lower(b, true);
    if (oom)
        su_oom(b->oom);
    return ok;
}

/* Adds the time since *t0 to step k's (o->seconds), but for kern seconds
 * of it, the kernels' (stage_end's NVRTC), and starts the next step's
 * clock. */
static void lap(const cg_plan_options *o, int k, double *t0, double kern)
{
    double t = su_seconds();
    if (o->seconds) {
        o->seconds[k] += t - *t0 - kern;
        o->seconds[CG_T_KERNELS] += kern;
    }
    *t0 = t;
}

/* A plan being built: what it holds, freed by run_free after an
 * allocation failure too (cg_plan_bytes's, or a cg_plan_stream). */
struct cg_plan_stream {
    builder b;
    cg_plan_options o;  /* the caller's, copied (b.o) */
    su_arena arena;
    su_arena batch;     /* build_rolled's plain stages */
    su_vec kept;        /* build_rolled's rt_kernel *: those of stages that did not roll */
    rt_plan p;
    int nstages;
    bool begun;         /* plan_head and rolled_begin done */
    int next;           /* a stream's next stage */
    struct cg_rolled *done; /* build_rolled's: per stage, its loop form */
    struct check_job *job;  /* per stage: its validation */
};
typedef struct cg_plan_stream plan_run;

/* p's I/O, module and kernel tables from b's (each an array in a) */
static void tables(builder *b, rt_plan *p, su_arena *a)
{
    p->nio = (int32_t)b->ios.n;
    p->io = su_alloc(a, ((size_t)b->ios.n + 1) * sizeof *p->io);
    for (int i = 0; i < b->ios.n; i++)
        p->io[i] = *(rt_io *)b->ios.v[i];
    p->nmodules = (int32_t)b->modules.n;
    p->module = su_alloc(a, ((size_t)b->modules.n + 1) * sizeof *p->module);
    for (int i = 0; i < b->modules.n; i++)
        p->module[i] = *(rt_module *)b->modules.v[i];
    p->init_module = b->init_module;
    p->nkernels = (int32_t)b->kernels.n;
    p->kernel = su_alloc(a, ((size_t)b->kernels.n + 1) * sizeof *p->kernel);
    for (int i = 0; i < b->kernels.n; i++)
        p->kernel[i] = *(rt_kernel *)b->kernels.v[i];
}

/* A batch's stages validated at once, a thread each. */
typedef struct check_job {
    const rt_plan *p;
    int s;
    su_status err;
    bool ok;
} check_job;

static void check_item(void *ctx, int i)
{
    check_job *j = &((check_job *)ctx)[i];
    j->ok = rt_plan_validate_stage(j->p, j->s, &j->err);
}

/* rt_plan_check_refs of stage s of p, its instructions packed in P. */
static bool packed_refs(const rt_plan *p, int s, const cg_packed *P, su_status *err)
{
    const rt_program *g = &p->stage[s];
    for (int32_t k = 0; k < P->n; k++) {
        const cg_pinstr *e = &P->ins[k];
        int nin = P->shape[e->shape].nin;
        bool ok = nin <= RT_MAX_IN && e->out >= -1 && e->out < g->nbuf;
        for (int i = 0; ok && i < nin; i++)
            ok = e->in[i] >= 0 && e->in[i] < g->nbuf;
        if (!ok) {
            su_fail(err, SU_INPUT, "stage %d, instruction %d: an operand or the result is out of "
                    "range (the program has %d buffers)", s, k, g->nbuf);
            return false;
        }
    }
    return rt_plan_check_kernel_refs(p, s, err);
}

/* A pipeline's stages, built plain, rolled into the loop form and
 * validated as they will be written (a rolled stage's instructions on a
 * sample of its items: rt_plan_validate_stage), a batch at a time, as
 * many stages as processors (at most 16, cg_plan_batch_stages), or as
 * the caller of a cg_plan_stream gives them: the batch's plain programs,
 * their instructions packed (cg_packed), and kernels are freed once it
 * has rolled, so the plan never holds more than a batch of plain stages
 * (at 128 microbatches, pipeline.sh L=96 on 64x8x8's are 150,000
 * instructions each: 6 MB packed, 113 MB as rt_instr). Before the roll,
 * only what it indexes by is checked (packed_refs). A stage that does not
 * roll is unpacked. The kernels: those of the stages that did not roll,
 * as they were, then each rolled stage's, in stage order (rolled_end).
 * The plan is the same bytes however the stages are batched. */
static void rolled_begin(plan_run *r)
{
    builder *b = &r->b;
    int n = r->nstages;
    r->done = su_alloc(&r->arena, (size_t)(n > 0 ? n : 1) * sizeof *r->done);
    memset(r->done, 0, (size_t)(n > 0 ? n : 1) * sizeof *r->done);
    r->job = su_alloc(&r->arena, (size_t)(n > 0 ? n : 1) * sizeof *r->job);
    b->packed = calloc((size_t)(n > 0 ? n : 1), sizeof *b->packed); /* run_free frees */
    if (!b->packed)
        su_oom(b->oom);
}

/* Stages s0 to s1 - 1 of the pipeline (stages[s], laid out by o->mp[s],
 * with o->fusion[s]'s kernels) into r->p: built plain, rolled and
 * validated (build_rolled's batch). */
static bool rolled_batch(plan_run *r, ir_module *const *stages, int s0, int s1)
{
    builder *b = &r->b;
    rt_plan *p = &r->p;
    int n = r->nstages;
    cg_rolled *done = r->done;
    check_job *job = r->job;
    su_arena *sa = &r->batch;
    b->sa = sa;
    int32_t k0 = (int32_t)b->kernels.n;
    double t0 = su_seconds();
    bool ok = !b->o->kernels || gen_kernels(b, stages, n, s0, s1);
    lap(b->o, CG_T_KERNELS, &t0, 0);
    double kern = b->kernel_s;
    ok = ok && plan_stages(b, stages, s0, s1, p);
    lap(b->o, CG_T_LOWER, &t0, b->kernel_s - kern);
    rt_plan v = *p; /* the batch's view: the tables so far, its kernels */
    if (ok) {
        tables(b, &v, sa);
        v.kernel += k0;
        v.nkernels -= k0;
        for (int s = s0; ok && s < s1; s++)
            ok = packed_refs(&v, s, &b->packed[s], b->err);
    }
    if (ok) {
        cg_plan_roll_stages(&v, s0, s1, b->packed, b->task, b->mb, &r->arena, b->oom,
                            done + s0);
        lap(b->o, CG_T_ROLL, &t0, 0);
        /* each stage as it will be written: rolled (its loop form, and
         * its instructions on a sample of its items), or plain */
        for (int s = s0; s < s1; s++) {
            job[s] = (check_job){.p = &v, .s = s};
            if (!done[s].rolled) { /* plain: its instructions unpacked */
                const cg_packed *P = &b->packed[s];
                rt_instr *in = malloc(((size_t)P->n + 1) * sizeof *in);
                if (!in)
                    su_oom(b->oom);
                for (int32_t k = 0; k < P->n; k++)
                    cg_unpack(P, k, &in[k]);
                p->stage[s].instr = b->plain[s] = in; /* v's too */
                cg_packed_free(&b->packed[s]);
                continue;
            }
            rt_plan *w = su_alloc(sa, sizeof *w);
            *w = v;
            w->stage = su_alloc(sa, (size_t)n * sizeof *w->stage);
            memcpy(w->stage, v.stage, (size_t)n * sizeof *w->stage);
            w->stage[s] = done[s].prog;
            w->kernel = done[s].kernel;
            w->nkernels = done[s].nkernels;
            job[s].p = w;
        }
        int nt = su_processors();
        su_parallel_for(s1 - s0, nt > 16 ? 16 : nt, check_item, job + s0);
        for (int s = s0; ok && s < s1; s++)
            if (!job[s].ok) {
                *b->err = job[s].err;
                ok = false;
            }
        lap(b->o, CG_T_VALIDATE, &t0, 0);
    }
    if (ok) {
        for (int i = 0; i < v.nio; i++) /* the rolled stages' buffers, numbered again */
            if (v.io[i].stage >= s0 && v.io[i].stage < s1) {
                rt_io *io = b->ios.v[i];
                io->buffer = v.io[i].buffer;
                io->update = v.io[i].update;
            }
        bool all = true;
        for (int s = s0; s < s1; s++) {
            all = all && done[s].rolled;
            if (!done[s].rolled)
                continue;
            p->stage[s] = done[s].prog;
            cg_packed_free(&b->packed[s]); /* read no more */
        }
        for (int32_t k = k0; k < b->kernels.n; k++) {
            rt_kernel *kr = b->kernels.v[k];
            if (!done[kr->stage].rolled)
                su_vec_push(&r->kept, b->oom, kr);
        }
        b->kernels.n = k0;
        if (!all) /* a stage as it was: its plain memory stays */
            su_arena_take(&r->arena, sa);
    }
    b->sa = &r->arena;
    su_arena_free(sa);
    return ok;
}

/* The rolled plan's tables once its every stage has been through
 * rolled_batch, and the rest of it validated. */
static bool rolled_end(plan_run *r)
{
    builder *b = &r->b;
    rt_plan *p = &r->p;
    int n = r->nstages;
    double t0 = su_seconds();
    tables(b, p, &r->arena);
    int32_t nk = (int32_t)r->kept.n;
    for (int s = 0; s < n; s++)
        nk += r->done[s].rolled ? r->done[s].nkernels : 0;
    p->nkernels = nk;
    p->kernel = su_alloc(&r->arena, ((size_t)nk + 1) * sizeof *p->kernel);
    int32_t k = 0;
    for (int i = 0; i < r->kept.n; i++)
        p->kernel[k++] = *(rt_kernel *)r->kept.v[i];
    for (int s = 0; s < n; s++)
        for (int32_t i = 0; r->done[s].rolled && i < r->done[s].nkernels; i++)
            p->kernel[k++] = r->done[s].kernel[i];
    bool ok = rt_plan_validate_rest(p, b->err);
    lap(b->o, CG_T_VALIDATE, &t0, 0);
    return ok;
}

/* The report (NULL: none) the plan holds: before the plan is validated
 * whole. */
static void set_report(plan_run *r, const char *report)
{
    r->p.report = (char *)(report ? report : "");
    r->p.report_len = strlen(r->p.report);
}

/* The plan's head, from its first stage's program m0 (its mesh and
 * pipeline): what every stage's building reads. */
static void plan_head(plan_run *r, const ir_module *m0)
{
    builder *b = &r->b;
    rt_plan *p = &r->p;
    int nstages = r->nstages;
    memset(p, 0, sizeof *p);
    p->loss = -1;
    p->init_module = -1;
    b->init_module = -1;
    b->init = (cg_cuda_kernel){.name = RT_INIT_ENTRY, .key = RT_INIT_ENTRY, .group = -1,
                               .op = -1, .key_hash = cg_cuda_key_hash(RT_INIT_ENTRY),
                               .source = su_sprintf(&r->arena, "#define SH_INIT_KERNEL 1\n%s",
                                                    cg_init_source)};
    p->naxes = m0->mesh.naxes;
    for (int a = 0; a < m0->mesh.naxes; a++) {
        p->axis_name[a] = su_strdup(&r->arena, m0->mesh.name[a]); /* m0 may go first */
        p->axis_size[a] = m0->mesh.size[a];
    }
    p->stage_axis = m0->stage >= 0 ? m0->pipe.axis : -1;
    p->nstages = nstages;
    p->stage = su_alloc(&r->arena, (size_t)nstages * sizeof *p->stage);
    memset(p->stage, 0, (size_t)nstages * sizeof *p->stage);
    b->task = su_alloc(&r->arena, (size_t)nstages * sizeof *b->task);
    b->mb = su_alloc(&r->arena, (size_t)nstages * sizeof *b->mb);
    set_report(r, NULL); /* until it is known (cg_plan_stream_end) */
    p->source = (char *)(b->o->source ? b->o->source : "");
}

/* The plan's bytes. */
static bool plan_write(plan_run *r, uint8_t **out, size_t *len)
{
    double t0 = su_seconds();
    bool ok = rt_plan_write_rolled(&r->p, out, len, r->b.err);
    lap(r->b.o, CG_T_BYTES, &t0, 0);
    return ok;
}

/* cg_plan_bytes's work (its allocation failures freed by its caller). */
typedef struct bytes_run {
    plan_run *r;
    ir_module *const *stages;
    const char *report;
    uint8_t **out;
    size_t *len;
    bool ok;
} bytes_run;

static void build_plan(void *arg)
{
    bytes_run *w = arg;
    plan_run *r = w->r;
    builder *b = &r->b;
    rt_plan *p = &r->p;
    int nstages = r->nstages;
    plan_head(r, w->stages[0]);
    set_report(r, w->report);
    bool ok = true;
    if (!b->o->unroll && w->stages[0]->stage >= 0) {
        /* each stage rolled into loop form and validated as it will be
         * written, a batch at a time, then the rest of the plan */
        rolled_begin(r);
        int batch = cg_plan_batch_stages();
        for (int s0 = 0; ok && s0 < nstages; s0 += batch)
            ok = rolled_batch(r, w->stages, s0, s0 + batch < nstages ? s0 + batch : nstages);
        ok = ok && rolled_end(r);
    } else {
        double t0 = su_seconds();
        ok = !b->o->kernels || gen_kernels(b, w->stages, nstages, 0, nstages);
        lap(b->o, CG_T_KERNELS, &t0, 0);
        for (int s = 0; ok && s < nstages; s++)
            ok = plan_stage(b, w->stages[s], s, &p->stage[s], &p->loss);
        if (ok)
            tables(b, p, &r->arena);
        lap(b->o, CG_T_LOWER, &t0, b->kernel_s);
        ok = ok && rt_plan_validate(p, b->err);
        lap(b->o, CG_T_VALIDATE, &t0, 0);
    }
    w->ok = ok && plan_write(r, w->out, w->len);
}

int cg_plan_batch_stages(void)
{
    int n = su_processors();
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

/* r set up to build a plan of nstages stages with options o (copied) and
 * failures into err; nothing allocated that can fail but the stages'
 * instruction table (false: none, r as it was after run_free). */
static bool run_init(plan_run *r, int nstages, const cg_plan_options *o, su_status *err,
                     jmp_buf *oom)
{
    memset(r, 0, sizeof *r);
    r->nstages = nstages;
    r->o = *o;
    su_arena_init(&r->arena, oom);
    su_arena_init(&r->batch, oom);
    builder *b = &r->b;
    b->arena = b->sa = &r->arena;
    b->plain = calloc((size_t)(nstages > 0 ? nstages : 1), sizeof *b->plain);
    if (!b->plain)
        return false;
    b->err = err;
    b->o = &r->o;
    b->oom = oom;
    for (int c = 0; c < IR_NOPS; c++)
        b->rt_code[c] = (int16_t)rt_op_lookup(c == IR_RESHAPE ? "copy" : ir_ops[c].name);
    su_buf_init(&b->msg, oom);
    return true;
}

/* What r holds, freed (r itself not), whatever it had come to. */
static void run_free(plan_run *r)
{
    builder *b = &r->b;
    free_lower(b, false);
    free_jobs(b);
    for (int s = 0; s < b->ngen; s++)
        cg_cuda_free(&b->gen[s]);
    free(b->gen);
    rt_nvrtc_output_free(&b->nv);
    su_buf_free(&b->msg);
    free(b->ins);
    for (int s = 0; b->plain && s < r->nstages; s++)
        free(b->plain[s]);
    free(b->plain);
    for (int s = 0; b->packed && s < r->nstages; s++)
        cg_packed_free(&b->packed[s]);
    free(b->packed);
    su_vec_free(&b->ios);
    su_vec_free(&b->kernels);
    su_vec_free(&b->made_k);
    su_vec_free(&b->modules);
    su_vec_free(&b->made);
    su_vec_free(&r->kept);
    su_arena_free(&r->batch);
    su_arena_free(&r->arena);
}

bool cg_plan_bytes(ir_module *const *stages, int nstages, const char *report,
                   const cg_plan_options *o, uint8_t **out, size_t *len, su_status *err,
                   jmp_buf *oom)
{
    *out = NULL;
    *len = 0;
    plan_run *r = malloc(sizeof *r);
    if (!r || !run_init(r, nstages, o, err, oom)) {
        if (r)
            run_free(r);
        free(r);
        su_oom(oom);
    }
    bytes_run w = {.r = r, .stages = stages, .report = report, .out = out, .len = len};
    bool done = su_guarded(oom, build_plan, &w);
    run_free(r);
    free(r);
    if (!done)
        su_oom(oom);
    return w.ok;
}

cg_plan_stream *cg_plan_stream_new(int nstages, const cg_plan_options *o, su_status *err,
                                   jmp_buf *oom)
{
    plan_run *r = malloc(sizeof *r);
    if (r && !run_init(r, nstages, o, err, oom)) {
        run_free(r);
        free(r);
        r = NULL;
    }
    return r;
}

bool cg_plan_stream_add(cg_plan_stream *r, ir_module *const *stages, int s0, int s1)
{
    if (s0 != r->next || s1 <= s0 || s1 > r->nstages)
        return fail(&r->b, "the plan's stages %d to %d given where stage %d was next", s0,
                    s1 - 1, r->next);
    r->next = s1;
    if (!r->begun) {
        plan_head(r, stages[s0]);
        rolled_begin(r);
        r->begun = true;
    }
    return rolled_batch(r, stages, s0, s1);
}

bool cg_plan_stream_end(cg_plan_stream *r, const char *report, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (r->next != r->nstages)
        return fail(&r->b, "the plan ended after %d of its %d stages", r->next, r->nstages);
    set_report(r, report);
    return rolled_end(r) && plan_write(r, out, len);
}

void cg_plan_stream_free(cg_plan_stream *r)
{
    if (!r)
        return;
    run_free(r);
    free(r);
}
