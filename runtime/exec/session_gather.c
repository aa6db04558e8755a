/* session_gather.c: the ranks' blocks put together (session_impl.h): the
 * outputs after a run (under MPI, to every rank, from the ranks of their
 * stage), the updates of params and states applied, and the full params
 * and states gathered to be saved. */
#include "runtime/exec/session_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- outputs ---- */

/* The shard of an I/O entry one rank holds: each dim divided by the sizes
 * of the axes splitting it. */
static rt_type local_type(const rt_plan *p, const rt_io *io)
{
    rt_type local = io->type;
    for (int d = 0; d < local.rank; d++)
        for (int k = 0; k < io->sh.naxes[d]; k++)
            local.dim[d] /= p->axis_size[io->sh.axes[d][k]];
    return local;
}

int rt_sess_gather_outputs_local(rt_session *s)
{
    const rt_plan *p = s->p;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (io->kind != RT_IO_OUTPUT)
            continue;
        int esize = rt_dtype_size(io->type.dtype);
        rt_type local = local_type(p, io);
        for (int64_t r = 0; r < s->nhere; r++) {
            rank_state *rs = &s->ranks[r];
            if (rs->prog != &p->stage[io->stage])
                continue;
            int64_t start[RT_MAX_RANK];
            rt_sess_block_start(p, rs->coord, &io->sh, &local, start);
            rt_sess_copy_block(&io->type, start, local.dim, esize, s->out[i], rs->buf[io->buffer],
                               true);
        }
    }
    return 0;
}

/* The ranks whose blocks make up entry io: those of its stage. */
bool rt_sess_holds(const rt_plan *p, const int64_t *coord, const rt_io *io)
{
    return p->stage_axis < 0 || coord[p->stage_axis] == io->stage;
}

/* Under MPI, collective: entry io's full tensor into full on every rank,
 * from every rank's block over the group of all axes (member index ==
 * rank; a rank of another stage sends zeros), placed by the ranks of its
 * stage. */
static int gather_mpi(rt_session *s, const rt_io *io, uint8_t *full, su_status *err)
{
    const rt_plan *p = s->p;
    rank_state *rs = &s->ranks[0];
    rt_type local = local_type(p, io);
    int64_t lb = rt_type_bytes(&local);
    uint8_t *mine = calloc(1, (size_t)lb), *all = malloc((size_t)(lb * s->nranks));
    if (!mine || !all) {
        free(mine);
        free(all);
        return su_fail(err, SU_NOMEM, "out of memory gathering '%s'", io->name);
    }
    if (rt_sess_holds(p, rs->coord, io))
        memcpy(mine, rs->buf[io->buffer], (size_t)lb);
    int rc = rt_all_gather(rs->groups[s->nkeys - 1], mine, all, lb);
    if (rc != 0)
        su_fail(err, SU_PEER, "gathering '%s': %s", io->name, rt_comm_error(rs->comm));
    for (int64_t r = 0; rc == 0 && r < s->nranks; r++) {
        int64_t coord[RT_MAX_AXES], start[RT_MAX_RANK];
        rt_plan_coords(p, r, coord);
        if (!rt_sess_holds(p, coord, io))
            continue;
        rt_sess_block_start(p, coord, &io->sh, &local, start);
        rt_sess_copy_block(&io->type, start, local.dim, rt_dtype_size(io->type.dtype), full,
                           all + r * lb, true);
    }
    rt_sess_comm_free(rs, mine);
    rt_sess_comm_free(rs, all);
    return rc == 0 ? 0 : -1;
}

/* Under MPI: every rank gets every output, gathered from the ranks of its
 * stage (gather_mpi). */
int rt_sess_gather_outputs_mpi(rt_session *s, rank_state *rs)
{
    const rt_plan *p = s->p;
    for (int i = 0; i < p->nio; i++)
        if (p->io[i].kind == RT_IO_OUTPUT &&
            gather_mpi(s, &p->io[i], s->out[i], &rs->err) != 0)
            return -1;
    return 0;
}

/* ---- training: updates, saving params ---- */

bool rt_sess_is_kept(const rt_io *io)
{
    return io->kind == RT_IO_PARAM || io->kind == RT_IO_STATE;
}

/* After a run: every param's and state's new value (its update buffer)
 * becomes its value (its buffer), on each rank of its stage. The cuda
 * backend did that on the device, where they stay (rt_sess_sync_kept). */
void rt_sess_apply_updates(rt_session *s)
{
    const rt_plan *p = s->p;
    if (s->o.backend == RT_BACKEND_CUDA)
        return;
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!rt_sess_is_kept(io) || io->update < 0 || io->update == io->buffer)
            continue;
        rt_type local = local_type(p, io);
        for (int64_t r = 0; r < s->nhere; r++) {
            rank_state *rs = &s->ranks[r];
            if (rs->prog == &p->stage[io->stage])
                memcpy(rs->buf[io->buffer], rs->buf[io->update], (size_t)rt_type_bytes(&local));
        }
    }
}

/* Places every local rank's block of io into full. */
static void gather_kept_local(rt_session *s, const rt_io *io, uint8_t *full)
{
    rt_type local = local_type(s->p, io);
    for (int64_t r = 0; r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        int64_t start[RT_MAX_RANK];
        if (!rt_sess_holds(s->p, rs->coord, io))
            continue;
        rt_sess_block_start(s->p, rs->coord, &io->sh, &local, start);
        rt_sess_copy_block(&io->type, start, local.dim, rt_dtype_size(io->type.dtype), full,
                           rs->buf[io->buffer], true);
    }
}

void rt_sess_free_kept(kept *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->data[i]);
    free(k->names);
    free(k->types);
    free(k->data);
}

int rt_sess_sync_kept(rt_session *s, su_status *err)
{
    for (int64_t r = 0; r < s->nhere; r++) {
        rank_state *rs = &s->ranks[r];
        if (!rs->kept_on_device)
            continue;
        if (rt_cuda_kept_to_host(rs->cuda, rs->buf, err) != 0)
            return su_prefix(err, "rank %lld: reading the params from the GPU: ",
                             (long long)rs->rank);
        rs->kept_on_device = false;
    }
    return 0;
}

int rt_sess_gather_kept(rt_session *s, kept *k, su_status *err)
{
    const rt_plan *p = s->p;
    memset(k, 0, sizeof *k);
    if (rt_sess_sync_kept(s, err) != 0)
        return -1;
    k->names = calloc((size_t)p->nio + 1, sizeof *k->names);
    k->types = calloc((size_t)p->nio + 1, sizeof *k->types);
    k->data = calloc((size_t)p->nio + 1, sizeof *k->data);
    if (!k->names || !k->types || !k->data)
        return su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        if (!rt_sess_is_kept(io) || s->first[i] != i)
            continue;
        uint8_t *full = calloc(1, (size_t)rt_type_bytes(&io->type) + 1);
        if (!full)
            return su_fail(err, SU_NOMEM, "out of memory gathering '%s'", io->name);
        k->names[k->n] = io->name;
        k->types[k->n] = io->type;
        k->data[k->n++] = full;
        if (s->o.comm == RT_COMM_LOCAL)
            gather_kept_local(s, io, full);
        else if (gather_mpi(s, io, full, err) != 0)
            return -1;
    }
    return 0;
}
