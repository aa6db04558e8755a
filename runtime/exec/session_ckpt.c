/* session_ckpt.c: the session's checkpoints (session_impl.h): saving one,
 * resuming from one, the step count and the check of per-step input
 * batches, and agree(), which gives every MPI rank the same result. */
#include "runtime/exec/session_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== checkpoints and per-step input batches (checkpoint.h) ====
 * Saving: every rank writes the boxes it owns (rt_ckpt_writes) from its
 * param and state buffers to its own file; then one process writes the
 * index. Resuming: the index is read and checked against the plan, each
 * rank's boxes are checked to be covered and the shard files they need
 * opened; the boxes are read at the next run (load_source), as a params
 * file's would be. Under MPI each step that can fail on one rank ends in
 * agree(), so every rank returns the same result. */

int64_t rt_session_step(const rt_session *s)
{
    return s->step_base + s->steps;
}

int rt_session_check_steps(const rt_session *s, int64_t steps, su_status *err)
{
    if (!s->inputs)
        return 0;
    int64_t first = rt_session_step(s) + 1, last = rt_session_step(s) + steps;
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        if (io->kind != RT_IO_INPUT || s->first[i] != i || rt_sess_find_binding(s, io->name))
            continue;
        int64_t nb = rt_input_batches(s->inputs, io);
        if (nb >= 0 && nb < last)
            return su_fail(err, SU_INPUT, "%s: tensor '%s' holds %lld batch%s (one a step), but steps %lld to %lld need %lld",
                        s->inputs->path, io->name, (long long)nb, nb == 1 ? "" : "es",
                        (long long)first, (long long)last, (long long)last);
    }
    return 0;
}

/* Under MPI: whether any rank failed (rc != 0, its message in msg), the
 * first failing rank's message into err. Collective over every rank. */
static int agree(rt_session *s, int rc, const su_status *msg, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    if (rt_sess_rank_setup(rs) != 0)
        return su_status_copy(err, &rs->err);
    /* each rank's record: its kind (0: none) in the first byte, then the
     * message */
    char mine[ERRLEN];
    memset(mine, 0, sizeof mine);
    if (rc != 0) {
        mine[0] = (char)(msg->kind != SU_OK ? msg->kind : SU_INTERNAL);
        snprintf(mine + 1, sizeof mine - 1, "%.*s", ERRLEN - 2, msg->msg[0] ? msg->msg : "failed");
    }
    char *all = malloc((size_t)(ERRLEN * s->nranks));
    if (!all)
        return su_fail(err, SU_NOMEM, "out of memory");
    if (rt_all_gather(rs->groups[s->nkeys - 1], mine, all, ERRLEN) != 0)
        rc = rt_comm_status(rs->comm, err);
    else
        rc = 0;
    for (int64_t r = 0; rc == 0 && r < s->nranks; r++) {
        const char *rec = all + r * ERRLEN;
        if (rec[0])
            rc = su_fail(err, (su_kind)rec[0], "%.*s", ERRLEN - 1, rec + 1);
    }
    rt_sess_comm_free(rs, all);
    return rc;
}

/* Checks and opens what rank rs will read from checkpoint c. */
static int prepare_rank(rt_session *s, rt_ckpt *c, const rank_state *rs, su_status *err)
{
    for (int i = 0; i < s->p->nio; i++) {
        const rt_io *io = &s->p->io[i];
        int64_t start[RT_MAX_RANK], count[RT_MAX_RANK];
        if (!rt_sess_is_kept(io) || !rt_sess_holds(s->p, rs->coord, io))
            continue;
        rt_io_box(s->p, io, rs->coord, start, count);
        if (rt_ckpt_prepare(c, i, start, count, err) != 0)
            return su_prefix(err, "rank %lld: ", (long long)rs->rank);
    }
    return 0;
}

/* The step folder that dir names (rt_ckpt_locate) into *folder, and a
 * note (ERRLEN bytes). Under MPI, rank 0's: every process then reads the
 * same one, even one that sees the pointer at another moment. */
static int locate(rt_session *s, const char *dir, char **folder, char *note, su_status *err)
{
    su_status msg = {SU_OK, ""};
    int rc = rt_ckpt_locate(dir, folder, note, ERRLEN, &msg);
    if (s->o.comm == RT_COMM_LOCAL)
        return rc == 0 ? 0 : su_status_copy(err, &msg);
    if (rc == 0 && strlen(*folder) >= PATH_MAX)
        rc = su_fail(&msg, SU_INPUT, "%s: a path longer than %d bytes", *folder, PATH_MAX - 1);
    if (agree(s, rc, &msg, err) != 0) {
        free(*folder);
        *folder = NULL;
        return -1;
    }
    /* every process's note and folder, then rank 0's in their place */
    char *mine = calloc(1, ERRLEN + PATH_MAX);
    char *all = malloc((size_t)s->nranks * (ERRLEN + PATH_MAX)), *chosen = NULL;
    rank_state *rs = &s->ranks[0];
    rc = !mine || !all ? su_fail(&msg, SU_NOMEM, "out of memory") : 0;
    if (rc == 0) {
        memcpy(mine, note, strlen(note) + 1);
        memcpy(mine + ERRLEN, *folder, strlen(*folder) + 1);
        if (rt_all_gather(rs->groups[s->nkeys - 1], mine, all, ERRLEN + PATH_MAX) != 0)
            rc = rt_comm_status(rs->comm, &msg);
    }
    if (rc == 0 && !(chosen = strdup(all + ERRLEN)))
        rc = su_fail(&msg, SU_NOMEM, "out of memory");
    if (rc == 0)
        memcpy(note, all, ERRLEN);
    rt_sess_comm_free(rs, mine); /* a stuck comm may still write them */
    rt_sess_comm_free(rs, all);
    free(*folder);
    *folder = chosen;
    return agree(s, rc, &msg, err);
}

int rt_session_resume(rt_session *s, const char *dir, su_status *err)
{
    if (s->failed)
        return su_fail(err, SU_USAGE, "%s: not resumed: an earlier run failed", dir);
    su_status msg = {SU_OK, ""};
    char note[ERRLEN] = "";
    char *folder = NULL;
    if (locate(s, dir, &folder, note, err) != 0)
        return -1;
    rt_ckpt *c = NULL;
    int rc = rt_ckpt_open(folder, s->p, &c, &msg);
    for (int64_t r = 0; rc == 0 && r < s->nhere; r++)
        rc = prepare_rank(s, c, &s->ranks[r], &msg);
    if (s->o.comm != RT_COMM_LOCAL)
        rc = agree(s, rc, &msg, err);
    else if (rc != 0)
        su_status_copy(err, &msg);
    if (rc != 0) {
        rt_ckpt_free(c);
        free(folder);
        return -1;
    }
    rt_ckpt_free(s->ckpt);
    s->ckpt = c;
    free(s->resumed);
    s->resumed = folder;
    memcpy(s->resume_note, note, sizeof note);
    s->step_base = rt_ckpt_step(c) - s->steps;
    s->params_dirty = true; /* every param and state is read again */
    return 0;
}

const char *rt_session_resumed(const rt_session *s, const char **note)
{
    if (note)
        *note = s->resumed ? s->resume_note : "";
    return s->resumed;
}

/* Writes rank rs's file: its boxes of every param and state it owns. */
static int write_rank_file(rt_session *s, const rank_state *rs, const char *dir,
                           rt_st_sum *sum, su_status *err)
{
    const rt_plan *p = s->p;
    const char **names = calloc((size_t)p->nio + 1, sizeof *names);
    rt_type *types = calloc((size_t)p->nio + 1, sizeof *types);
    const void **data = calloc((size_t)p->nio + 1, sizeof *data);
    int n = 0, rc = 0;
    if (!names || !types || !data)
        rc = su_fail(err, SU_NOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < p->nio; i++) {
        const rt_io *io = &p->io[i];
        int64_t start[RT_MAX_RANK];
        if (!rt_sess_is_kept(io) || s->first[i] != i || !rt_ckpt_writes(p, io, rs->coord))
            continue;
        names[n] = io->name;
        types[n] = io->type;
        rt_io_box(p, io, rs->coord, start, types[n].dim);
        data[n++] = rs->buf[io->buffer];
    }
    if (rc == 0)
        rc = rt_ckpt_write_rank(dir, rs->rank, n, names, types, data, sum, err);
    free(names);
    free(types);
    free(data);
    return rc;
}

static int save_checkpoint_local(rt_session *s, const char *dir, int64_t step, su_status *err)
{
    rt_st_sum *sums = calloc((size_t)s->nranks, sizeof *sums);
    char *staging = rt_ckpt_staging(dir, step);
    int rc = sums && staging ? rt_ckpt_begin(dir, step, err)
                             : su_fail(err, SU_NOMEM, "out of memory");
    for (int64_t r = 0; rc == 0 && r < s->nhere; r++)
        rc = write_rank_file(s, &s->ranks[r], staging, &sums[s->ranks[r].rank], err);
    if (rc == 0)
        rc = rt_ckpt_commit(dir, s->p, step, sums, s->o.ckpt_keep, err);
    free(staging);
    free(sums);
    return rc;
}

/* Rank 0 makes the staging folder; every rank writes its file there (and
 * fsyncs it); once all have, rank 0 gathers their sizes and CRC-32s,
 * writes the index and commits. Each part ends in agree(), so no rank
 * goes on past a failure and rank 0 commits only a complete folder. */
static int save_checkpoint_mpi(rt_session *s, const char *dir, int64_t step, su_status *err)
{
    rank_state *rs = &s->ranks[0];
    su_status msg = {SU_OK, ""};
    rt_st_sum mine = {0, 0, 0}, *sums = calloc((size_t)s->nranks, sizeof *sums);
    char *staging = rt_ckpt_staging(dir, step);
    int rc = !sums || !staging ? su_fail(&msg, SU_NOMEM, "out of memory")
             : rs->rank == 0    ? rt_ckpt_begin(dir, step, &msg)
                                : 0;
    if (agree(s, rc, &msg, err) == 0) {
        rc = write_rank_file(s, rs, staging, &mine, &msg);
        rc = agree(s, rc, &msg, err);
    } else {
        rc = -1;
    }
    free(staging);
    if (rc != 0) {
        free(sums);
        return -1;
    }
    if (rt_all_gather(rs->groups[s->nkeys - 1], &mine, sums, sizeof mine) != 0)
        rc = rt_comm_status(rs->comm, &msg);
    if (rc == 0 && rs->rank == 0)
        rc = rt_ckpt_commit(dir, s->p, step, sums, s->o.ckpt_keep, &msg);
    rt_sess_comm_free(rs, sums);
    return agree(s, rc, &msg, err);
}

int rt_session_save_checkpoint(rt_session *s, const char *dir, su_status *err)
{
    const char *why = s->failed ? "the last run failed"
                      : s->steps == 0 ? "no step has run, so no params are loaded"
                      : s->params_dirty ? "params were bound or a checkpoint resumed since the last step, and are loaded at the next"
                                        : NULL;
    if (why) {
        su_fail(err, SU_USAGE, "%s: not saved: %s", dir, why);
        return -2;
    }
    if (rt_sess_sync_kept(s, err) != 0)
        return -1;
    if (s->o.comm != RT_COMM_LOCAL)
        return save_checkpoint_mpi(s, dir, rt_session_step(s), err);
    return save_checkpoint_local(s, dir, rt_session_step(s), err);
}
