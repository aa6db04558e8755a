/* session.c: the executor. Each rank walks its stage's instruction list in
 * order: sources fill buffers (from bound host tensors, safetensors files
 * or the seed), compute instructions go to the CPU backend, collectives to
 * the communicator, with the re-layout a dimension other than 0 needs
 * (communicators move flat blocks, member by member, as NCCL does), and
 * send and recv to the communicator's point to point, with the peer of the
 * other stage.
 *
 * Pipeline stages: a rank holds only the I/O entries of its stage (one
 * name may have an entry on several stages: one tensor, so it is listed,
 * gathered and saved once, from its first entry, rt_plan_io_first).
 * Outputs are gathered from the ranks of their stage; under MPI every rank
 * gets every output, so the loss reaches rank 0 wherever it was computed.
 *
 * Params and states live in their buffers across runs: they are loaded at
 * the first run (and after a param is bound again), and in a training step
 * each one's update buffer is copied into its buffer after the run, so the
 * next run starts from the new values.
 *
 * This file holds the session and its entry points (session.h); a rank's
 * run is session_rank.c's, gathering the ranks' blocks session_gather.c's,
 * checkpoints session_ckpt.c's (session_impl.h). */
#include "runtime/exec/session_impl.h"

#include "runtime/io/match.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the session ---- */

static void add_key(rt_session *s, const uint8_t *axes, int n)
{
    for (int k = 0; k < s->nkeys; k++)
        if (s->keys[k].n == n && memcmp(s->keys[k].axes, axes, (size_t)n) == 0)
            return;
    axes_key *key = &s->keys[s->nkeys++];
    memset(key, 0, sizeof *key);
    key->n = (uint8_t)n;
    memcpy(key->axes, axes, (size_t)n);
}

int rt_session_graph_check(const rt_session_opts *o, su_status *err)
{
    if (o->backend != RT_BACKEND_CUDA)
        return su_fail(err, SU_USAGE, "CUDA graphs need the cuda backend");
    return 0;
}

/* The stages this process runs plain (stage `only`, or every one at -1):
 * where the plan holds any of them in loop form, s->view is a copy of it
 * with those expanded (rt_plan_expand_stages; the caller's plan is left as
 * it is, and may serve other sessions at once) and s->p points at it. A
 * process of an MPI job so holds its own stage's instructions alone. */
static bool expand_here(rt_session *s, int only, su_status *err)
{
    const rt_plan *p = s->p;
    bool any = false;
    for (int st = 0; st < p->nstages; st++)
        any |= p->stage[st].nbody && (only < 0 || st == only);
    if (!any)
        return true;
    bool *which = NULL;
    if (only >= 0) {
        which = calloc((size_t)p->nstages, sizeof *which);
        if (!which) {
            su_fail(err, SU_NOMEM, "out of memory");
            return false;
        }
        which[only] = true;
    }
    s->view = *p;
    s->view.mem_ = NULL;
    bool ok = rt_plan_expand_stages(&s->view, which, err);
    free(which);
    if (ok)
        s->p = &s->view;
    return ok;
}

rt_session *rt_session_new(const rt_plan *p, const rt_session_opts *o, su_status *err)
{
    if (o->comm == RT_COMM_NCCL && o->backend != RT_BACKEND_CUDA) {
        su_fail(err, SU_USAGE, "the nccl communicator needs the cuda backend");
        return NULL;
    }
    if (o->graph && rt_session_graph_check(o, err) != 0)
        return NULL;
    if (o->backend == RT_BACKEND_CUDA && rt_cuda_check(p, err) != 0)
        return NULL;
    rt_session *s = calloc(1, sizeof *s);
    if (!s) {
        su_fail(err, SU_NOMEM, "out of memory");
        return NULL;
    }
    s->p = p;
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    s->nranks = rt_plan_ranks(p);
    s->params_dirty = false;
    /* the groups: every distinct axes list of every stage's collectives, in
     * order of appearance in the plan as it is given (a loop form's bodies:
     * so every process, whichever stages it expands, makes them in one
     * order), then the group of all axes (outputs) */
    int maxkeys = 1;
    for (int st = 0; st < p->nstages; st++)
        maxkeys += p->stage[st].ninstr;
    s->keys = calloc((size_t)maxkeys, sizeof *s->keys);
    s->out = calloc((size_t)p->nio + 1, sizeof *s->out);
    s->first = calloc((size_t)p->nio + 1, sizeof *s->first);
    if (!s->keys || !s->out || !s->first || !rt_plan_io_first(p, s->first)) {
        su_fail(err, SU_NOMEM, "out of memory");
        goto bad;
    }
    for (int st = 0; st < p->nstages; st++)
        for (int i = 0; i < p->stage[st].ninstr; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            if (rt_ops[in->op].cls == RT_K_COMM && in->op != RT_OP_SEND && in->op != RT_OP_RECV)
                add_key(s, in->axes, in->naxes);
        }
    uint8_t all[RT_MAX_AXES];
    for (int a = 0; a < p->naxes; a++)
        all[a] = (uint8_t)a;
    /* the all-axes group goes last, even if a collective made it already */
    axes_key allkey;
    memset(&allkey, 0, sizeof allkey);
    allkey.n = (uint8_t)p->naxes;
    memcpy(allkey.axes, all, (size_t)p->naxes);
    s->keys[s->nkeys++] = allkey;
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_OUTPUT) {
            int64_t bytes = rt_type_bytes(&p->io[i].type);
            s->out[i] = calloc(1, (size_t)bytes + 1);
            if (!s->out[i]) {
                char size[32];
                su_fail(err, SU_NOMEM, "output '%s' gathered to its full shape is %s: more "
                        "memory than this machine gives", p->io[i].name,
                        su_size_text(bytes, size));
                goto bad;
            }
        }
    if (o->params_path && rt_st_open(o->params_path, &s->params, err) != 0)
        goto bad;
    if (o->inputs_path && rt_st_open(o->inputs_path, &s->inputs, err) != 0)
        goto bad;
    if (rt_match_files(p, s->first, s->params, s->inputs, err) != 0)
        goto bad;
    rt_mesh_desc mesh;
    memset(&mesh, 0, sizeof mesh);
    mesh.naxes = p->naxes;
    for (int a = 0; a < p->naxes; a++) {
        mesh.size[a] = p->axis_size[a];
        mesh.name[a] = p->axis_name[a];
    }
    if (o->comm == RT_COMM_LOCAL) {
        s->world = rt_local_world_new(&mesh, o->timeout_ms, err);
        if (!s->world || !expand_here(s, -1, err))
            goto bad;
        p = s->p;
        if (o->backend == RT_BACKEND_CUDA && !(s->dlocal = rt_cuda_local_new(p))) {
            su_fail(err, SU_NOMEM, "out of memory");
            goto bad;
        }
        s->nhere = s->nranks;
    } else {
#ifdef SHARDC_HAVE_MPI
        s->nhere = 1;
#else
        su_fail(err, SU_USAGE, "this build of shardc has no MPI: use the local communicator");
        goto bad;
#endif
    }
    s->ranks = calloc((size_t)s->nhere, sizeof *s->ranks);
    if (!s->ranks) {
        su_fail(err, SU_NOMEM, "out of memory");
        goto bad;
    }
    for (int64_t r = 0; r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        rs->s = s;
        if (o->comm == RT_COMM_LOCAL) {
            rs->comm = rt_local_comm(s->world, r);
        } else {
#ifdef SHARDC_HAVE_MPI
            rs->comm = rt_mpi_comm_new(&mesh, o->timeout_ms, err);
#endif
        }
        if (!rs->comm) {
            if (o->comm == RT_COMM_LOCAL)
                su_fail(err, SU_INTERNAL, "cannot make the communicator of rank %lld",
                        (long long)r);
            goto bad;
        }
        rs->rank = rt_comm_rank(rs->comm);
        rt_plan_coords(p, rs->rank, rs->coord);
        int stage = p->stage_axis >= 0 ? (int)rs->coord[p->stage_axis] : 0;
        if (o->comm != RT_COMM_LOCAL) { /* one rank here: its stage alone */
            if (!expand_here(s, stage, err))
                goto bad;
            p = s->p;
        }
        rs->prog = &p->stage[stage];
    }
    if (o->comm == RT_COMM_NCCL && !(s->nccl = rt_nccl_new(p, &mesh, o->timeout_ms, err)))
        goto bad;
    return s;
bad:
    rt_session_free(s);
    return NULL;
}

void rt_session_free(rt_session *s)
{
    if (!s)
        return;
    for (int64_t r = 0; s->ranks && r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        rt_trace_free(&rs->tr);
        rt_cuda_rank_free(rs->cuda);
        rt_sess_arena_free(rs);
        free(rs->buf);
        free(rs->groups);
        if (rs->comm)
            rt_comm_free(rs->comm);
    }
    rt_nccl_free(s->nccl); /* the ranks' device state, which used it, is gone */
    rt_cuda_local_free(s->dlocal);
    free(s->ranks);
    rt_plan_view_free(&s->view);
    if (s->world)
        rt_local_world_free(s->world);
    rt_st_close(s->params);
    rt_st_close(s->inputs);
    rt_ckpt_free(s->ckpt);
    free(s->resumed);
    for (int i = 0; s->out && i < s->p->nio; i++)
        free(s->out[i]);
    free(s->out);
    free(s->first);
    for (int i = 0; i < s->nbind; i++)
        free(s->bind[i].name);
    free(s->bind);
    free(s->keys);
    free(s->generated);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The place of I/O entry io's declaration ("model.sh:3:8: "), from the
 * instruction that makes it, or "". */
static const char *io_where(const rt_plan *p, const rt_io *io, char *buf, size_t size)
{
    buf[0] = 0;
    for (int st = 0; st < p->nstages && !buf[0]; st++)
        for (int i = 0; i < p->stage[st].ninstr && !buf[0]; i++) {
            const rt_instr *in = &p->stage[st].instr[i];
            if (rt_ops[in->op].cls == RT_K_SOURCE && in->io >= 0 && &p->io[in->io] == io)
                rt_instr_where(p, in, buf, size);
        }
    return buf;
}

/* The input, param or state called name, or NULL. */
static const rt_io *bindable(const rt_plan *p, const char *name)
{
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind != RT_IO_OUTPUT && strcmp(p->io[i].name, name) == 0)
            return &p->io[i];
    return NULL;
}

/* Records v as name's binding (io's), replacing an earlier one. */
static int add_binding(rt_session *s, const rt_io *io, const char *name, const rt_view *v,
                       su_status *err)
{
    s->params_dirty |= rt_sess_is_kept(io);
    for (int i = 0; i < s->nbind; i++)
        if (strcmp(s->bind[i].name, name) == 0) {
            s->bind[i].v = *v;
            return 0;
        }
    binding *nb = realloc(s->bind, ((size_t)s->nbind + 1) * sizeof *nb);
    if (!nb)
        return su_fail(err, SU_NOMEM, "out of memory");
    s->bind = nb;
    char *copy = strdup(name);
    if (!copy)
        return su_fail(err, SU_NOMEM, "out of memory");
    s->bind[s->nbind++] = (binding){copy, *v};
    return 0;
}

int rt_session_bind(rt_session *s, const char *name, const void *data, size_t bytes,
                    su_status *err)
{
    const rt_io *io = bindable(s->p, name);
    if (!io)
        return su_fail(err, SU_USAGE, "the plan has no input, param or state called '%s'", name);
    char tb[128], where[256];
    if ((int64_t)bytes != rt_type_bytes(&io->type))
        return su_fail(err, SU_USAGE, "%s'%s' is %s (%lld bytes), but %zu bytes were bound",
                       io_where(s->p, io, where, sizeof where), name,
                       rt_type_str(&io->type, tb, sizeof tb),
                       (long long)rt_type_bytes(&io->type), bytes);
    rt_view v = {.type = io->type, .mem = RT_MEM_HOST, .data = data};
    rt_row_major_strides(io->type.rank, io->type.dim, rt_dtype_size(io->type.dtype), v.stride);
    return add_binding(s, io, name, &v, err);
}

/* Whether v's type is io's: 0, or -1 with "m.sh:3:8: 'x' is f32[8, 16],
 * but a bf16[8, 16] tensor was bound". */
static int same_type(const rt_plan *p, const rt_io *io, const rt_type *t, const char *what,
                     su_status *err)
{
    bool same = t->dtype == io->type.dtype && t->rank == io->type.rank;
    for (int d = 0; same && d < t->rank; d++)
        same = t->dim[d] == io->type.dim[d];
    if (same)
        return 0;
    char want[128], got[128], where[256];
    return su_fail(err, SU_USAGE, "%s'%s' is %s, but %s %s tensor was %s",
                   io_where(p, io, where, sizeof where), io->name,
                   rt_type_str(&io->type, want, sizeof want),
                   strchr("aeiou", rt_type_str(t, got, sizeof got)[0]) ? "an" : "a", got, what);
}

int rt_session_bind_view(rt_session *s, const char *name, const rt_view *v, su_status *err)
{
    const rt_io *io = bindable(s->p, name);
    if (!io)
        return su_fail(err, SU_USAGE, "the plan has no input, param or state called '%s'", name);
    if (same_type(s->p, io, &v->type, "bound", err) != 0)
        return -1;
    if (v->mem == RT_MEM_CUDA && s->o.backend != RT_BACKEND_CUDA)
        return su_fail(err, SU_USAGE,
                       "'%s' is bound in CUDA memory (device %d), but the session runs on the "
                       "cpu backend, which reads host memory: bind a host tensor, or open the "
                       "session with the cuda backend",
                       name, v->device);
    if (v->mem == RT_MEM_CUDA && rt_cuda_view_check(v, name, err) != 0)
        return -1;
    return add_binding(s, io, name, v, err);
}

int rt_session_output_into(const rt_session *s, const char *name, const rt_view *dst,
                           su_status *err)
{
    int i = 0;
    while (i < s->p->nio && (s->p->io[i].kind != RT_IO_OUTPUT || strcmp(s->p->io[i].name, name)))
        i++;
    if (i == s->p->nio)
        return su_fail(err, SU_USAGE, "the plan has no output called '%s'", name);
    if (!s->steps)
        return su_fail(err, SU_USAGE, "no step has run: there is no output '%s' yet", name);
    const rt_io *io = &s->p->io[i];
    const rt_type t = io->type;
    const void *src = s->out[i];
    if (same_type(s->p, io, &dst->type, "given to write it into", err) != 0)
        return -1;
    int esize = rt_dtype_size(t.dtype);
    if (!rt_strides_disjoint(t.rank, t.dim, esize, dst->stride))
        return su_fail(err, SU_USAGE,
                       "the tensor given for output '%s' has overlapping elements (a stride "
                       "repeats or is too short): it cannot be written",
                       name);
    if (dst->mem == RT_MEM_CUDA)
        return rt_cuda_view_check(dst, name, err) != 0 ? -1
                                                      : rt_cuda_host_to_view(src, dst, err);
    int64_t sstride[RT_MAX_RANK];
    rt_row_major_strides(t.rank, t.dim, esize, sstride);
    void *p[2] = {(void *)dst->data, (void *)src};
    return rt_copy_runs(t.rank, t.dim, esize, dst->stride, sstride, rt_sess_host_copy, p);
}

/* Names of the sources the run makes from the seed. */
static int note_generated(rt_session *s, su_status *err)
{
    size_t cap = 1, len = 0;
    for (int i = 0; i < s->p->nio; i++)
        cap += strlen(s->p->io[i].name) + 2;
    char *g = malloc(cap);
    if (!g)
        return su_fail(err, SU_NOMEM, "out of memory");
    g[0] = 0;
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        /* a master copy is made from the seed when its param is */
        const char *from = io->init == RT_INIT_PARAM ? io->init_param : io->name;
        if (io->kind == RT_IO_OUTPUT || s->first[i] != i || rt_sess_find_binding(s, io->name) ||
            rt_sess_find_binding(s, from))
            continue;
        if (s->ckpt && io->kind != RT_IO_INPUT)
            continue;
        rt_st_file *f = io->kind == RT_IO_INPUT ? s->inputs : s->params;
        if (f && (io->kind == RT_IO_INPUT || rt_st_find(f, io->name) || rt_st_find(f, from)))
            continue;
        len += (size_t)snprintf(g + len, cap - len, "%s%s", len ? ", " : "", io->name);
    }
    free(s->generated);
    s->generated = g;
    return 0;
}

int rt_session_check_params(const rt_session *s, su_status *err)
{
    if (!s->params || s->ckpt) /* the checkpoint holds every param */
        return 0;
    bool *bound = calloc((size_t)s->p->nio + 1, sizeof *bound);
    if (!bound)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; i < s->p->nio; i++)
        bound[i] = rt_sess_find_binding(s, s->p->io[i].name) != NULL;
    int rc = rt_match_missing(s->p, s->first, s->params, bound, s->o.init_missing, err);
    free(bound);
    return rc;
}

/* Every rank a thread of this process, then the outputs. */
static int run_local(rt_session *s, su_status *err)
{
    pthread_t *th = calloc((size_t)s->nhere, sizeof *th);
    if (!th)
        return su_fail(err, SU_NOMEM, "out of memory");
    int64_t started = 0;
    for (; started < s->nhere; started++)
        if (pthread_create(&th[started], NULL, rt_sess_rank_thread, &s->ranks[started]) != 0)
            break;
    if (started < s->nhere && started > 0) {
        su_fail(&s->ranks[started].err, SU_INTERNAL, "cannot start a thread for it");
        s->ranks[started].rank = started;
        rt_sess_rank_failed(&s->ranks[started]);
    }
    for (int64_t r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    free(th);
    if (started == 0)
        return su_fail(err, SU_INTERNAL, "cannot start the rank threads");
    if (s->has_err)
        return su_status_copy(err, &s->first_err);
    return rt_sess_gather_outputs_local(s);
}

/* Outputs are gathered before the updates are applied, so an output that
 * shares a param's buffer shows the value the run used. */
int rt_session_run(rt_session *s, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "an earlier run failed: the session can only be freed");
    s->has_err = false;
    if (rt_session_check_params(s, err) != 0 || note_generated(s, err) != 0)
        return -1;
    if (s->o.comm == RT_COMM_LOCAL) {
        if (s->o.trace && !s->origin_set) { /* the rank threads share one clock */
            s->trace_origin = rt_trace_now();
            s->origin_set = true;
        }
        if (run_local(s, err) != 0) {
            s->failed = true;
            return -1;
        }
    } else {
        rank_state *rs = &s->ranks[0];
        if (rt_sess_rank_run(rs) != 0 || rt_sess_gather_outputs_mpi(s, rs) != 0) {
            s->failed = true;
            su_status_copy(err, &rs->err);
            return su_prefix(err, "rank %lld: ", (long long)rs->rank);
        }
    }
    rt_sess_apply_updates(s);
    s->params_dirty = false;
    s->steps++;
    return 0;
}

/* Every rank's events to every process (the all-axes group's members are
 * in rank order): the counts, then the events padded to the longest. */
static int gather_trace_mpi(rt_session *s, rt_trace *all, rt_trace_ev **mem, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    rt_group *g = rs->groups[s->nkeys - 1];
    int64_t *count = calloc((size_t)s->nranks, sizeof *count), n = rs->tr.n, most = 0;
    if (!count)
        return su_fail(err, SU_NOMEM, "out of memory");
    if (rt_all_gather(g, &n, count, sizeof n) != 0) {
        rt_sess_comm_free(rs, count);
        return su_fail(err, SU_PEER, "gathering the trace: %s", rt_comm_error(rs->comm));
    }
    for (int64_t r = 0; r < s->nranks; r++)
        most = count[r] > most ? count[r] : most;
    size_t each = (size_t)most * sizeof(rt_trace_ev);
    rt_trace_ev *send = calloc(most + 1, sizeof *send);
    *mem = calloc((size_t)s->nranks * (size_t)most + 1, sizeof **mem);
    int rc = 0;
    if (!send || !*mem)
        rc = su_fail(err, SU_NOMEM, "out of memory for the trace");
    if (!rc && n)
        memcpy(send, rs->tr.ev, (size_t)n * sizeof *send);
    if (!rc && most && rt_all_gather(g, send, *mem, (int64_t)each) != 0)
        rc = su_fail(err, SU_PEER, "gathering the trace: %s", rt_comm_error(rs->comm));
    for (int64_t r = 0; !rc && r < s->nranks; r++)
        all[r] = (rt_trace){.ev = *mem + (size_t)r * (size_t)most, .n = count[r]};
    if (rc && rt_comm_stuck(rs->comm))
        *mem = NULL; /* kept: rt_sess_comm_free */
    rt_sess_comm_free(rs, send);
    rt_sess_comm_free(rs, count);
    return rc;
}

int rt_session_write_trace(rt_session *s, const char *path, const char *backend, su_status *err)
{
    if (!s->o.trace)
        return su_fail(err, SU_USAGE, "the session was not opened with tracing on");
    if (s->steps == 0 || s->failed)
        return su_fail(err, SU_USAGE, "no successful run to trace");
    rt_trace *all = calloc((size_t)s->nranks, sizeof *all);
    if (!all)
        return su_fail(err, SU_NOMEM, "out of memory");
    rt_trace_ev *mem = NULL;
    int rc = 0;
    const char *comm = s->o.comm == RT_COMM_LOCAL ? "local"
                       : s->o.comm == RT_COMM_MPI ? "mpi" : "nccl";
    if (s->o.comm == RT_COMM_LOCAL) {
        for (int64_t r = 0; r < s->nhere; r++)
            all[s->ranks[r].rank] = s->ranks[r].tr;
    } else {
        rc = gather_trace_mpi(s, all, &mem, err);
    }
    if (!rc && rt_session_rank(s) == 0)
        rc = rt_trace_write(path, s->p, all, s->nranks, backend, comm, err);
    free(mem);
    free(all);
    return rc;
}

int64_t rt_session_rank(const rt_session *s)
{
    return s->o.comm != RT_COMM_LOCAL && s->nhere > 0 ? s->ranks[0].rank : 0;
}

const void *rt_session_output(const rt_session *s, const char *name, rt_type *type)
{
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        if (io->kind == RT_IO_OUTPUT && strcmp(io->name, name) == 0) {
            if (type)
                *type = io->type;
            return s->out[i];
        }
    }
    return NULL;
}

const char *rt_session_generated(const rt_session *s)
{
    return s->generated ? s->generated : "";
}

int64_t rt_session_steps(const rt_session *s)
{
    return s->steps;
}

int rt_session_loss(const rt_session *s, double *loss, su_status *err)
{
    const rt_plan *p = s->p;
    *loss = NAN;
    if (p->loss < 0)
        return su_fail(err, SU_USAGE, "the plan has no loss (it was not compiled for training)");
    if (s->steps == 0 || s->failed)
        return su_fail(err, SU_USAGE, "no loss yet: %s", s->failed ? "the last run failed"
                                                              : "no step has run");
    const void *v = s->out[p->loss];
    switch (p->io[p->loss].type.dtype) {
    case RT_F16:
        *loss = su_f16_to_f32(*(const uint16_t *)v);
        break;
    case RT_BF16:
        *loss = su_bf16_to_f32(*(const uint16_t *)v);
        break;
    default:
        *loss = *(const float *)v;
        break;
    }
    return 0;
}

int rt_session_save_params(rt_session *s, const char *path, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "%s: not written: the last run failed", path);
    if (s->steps == 0)
        return su_fail(err, SU_USAGE, "%s: not written: no step has run, so no params are loaded",
                    path);
    kept k;
    int rc = rt_sess_gather_kept(s, &k, err);
    if (rc == 0 && rt_session_rank(s) == 0)
        rc = rt_st_write(path, k.n, k.names, k.types, (const void *const *)k.data, err);
    rt_sess_free_kept(&k);
    return rc;
}
