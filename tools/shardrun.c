/* shardrun: runs a plan (DESIGN.md §5). Argument parsing and printing only;
 * the work is libshardc's (include/shardc.h).
 *
 * Under mpirun or srun (an MPI launcher's environment is present) each
 * process is one rank and the communicator is `mpi`; otherwise one process
 * runs every rank as a thread (`local`).
 *
 * Exit codes: 0 success, 1 an error in the plan, the data or a rank's run
 * (or more memory than the machine gives), 2 bad usage, 3 an internal
 * error, and tools/cli.h's others. */
#include "shardc.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef SHARDC_HAVE_MPI
#include <mpi.h>
#endif

static const char usage[] =
    "usage: shardrun PLAN [options]\n"
    "\n"
    "Runs a plan made by `shardc MODEL -o PLAN`. Under mpirun or srun every\n"
    "process is one rank; otherwise this process runs every rank as a thread.\n"
    "\n"
    "options:\n"
    "  --backend cpu|cuda   the compute backend (default cpu); cuda runs the plan's\n"
    "                       kernels on the GPU (rank r on GPU r mod the GPU\n"
    "                       count) and needs a CUDA driver and a GPU\n"
    "  --comm local|mpi|nccl  the communicator (default: mpi under an MPI\n"
    "                       launcher, local otherwise); nccl (with --backend\n"
    "                       cuda): one process per GPU under mpirun or srun (a\n"
    "                       process alone is a world of one), the collectives\n"
    "                       by NCCL on the GPU (libnccl.so.2, loaded at run time)\n"
    "  --ranks N            check that the plan has N ranks (local)\n"
    "  --params FILE        weights, safetensors (without it, every param is made\n"
    "                       by its init from the seed). It must fit the plan: a\n"
    "                       tensor that is no param or state of the plan, or a\n"
    "                       param it lacks, is an error naming them (optimizer\n"
    "                       states it lacks start from their init)\n"
    "  --init-missing       with --params: make the params it lacks by their\n"
    "                       init from the seed (listed in the 'made from seed'\n"
    "                       line) instead of an error\n"
    "  --inputs FILE        inputs, safetensors (without it, inputs are made\n"
    "                       from the seed); an input given as [N, its dims]\n"
    "                       holds N batches, one per step: step k reads batch k\n"
    "  --outputs FILE       write the outputs, gathered to full shape, as\n"
    "                       safetensors\n"
    "  --save-params FILE   after the last step, write the params and the\n"
    "                       optimizer states, full shape, as safetensors (a\n"
    "                       file --params reads back to go on training; it\n"
    "                       may be the --params file itself)\n"
    "  --save DIR           after the last step, write a sharded checkpoint into\n"
    "                       the folder DIR: a new folder DIR/step-NNNNNNNN with\n"
    "                       one safetensors file per rank (its shards of the\n"
    "                       params and optimizer states) and an index; the\n"
    "                       pointer DIR/latest names it once it is complete, so\n"
    "                       an interrupted save leaves the previous checkpoint\n"
    "  --save-every K       with --save: also after every K-th step\n"
    "  --keep K             with --save: keep the newest K checkpoints in DIR\n"
    "                       (default 2), deleting older ones once a new one is\n"
    "                       complete\n"
    "  --resume DIR         before the first step, load every param and state\n"
    "                       from the checkpoint DIR/latest names (or from DIR, a\n"
    "                       step folder), saved on any mesh, each file checked\n"
    "                       first against the size and CRC-32 in its index; the\n"
    "                       step count goes on from the checkpoint's (not with\n"
    "                       --params, which it replaces)\n"
    "  --seed S             seed for params and inputs made by init (default 0)\n"
    "  --steps N            run N steps (default 1); a plan compiled for training\n"
    "                       updates its params at each and prints its loss.\n"
    "                       Steps count from the resumed checkpoint's: resumed\n"
    "                       at step 3, --steps 2 runs and prints steps 4/5, 5/5\n"
    "  --timeout-ms MS      fail a collective, send or recv that waits longer,\n"
    "                       naming the rank, the instruction and the peers\n"
    "                       that do not answer (every --comm; default 600000);\n"
    "                       under mpirun the job then ends (MPI_Abort)\n"
    "  --timeout SECONDS    the same in seconds (1 to 86400); with --comm nccl a\n"
    "                       watchdog aborts the communicators when an op takes\n"
    "                       longer, naming the rank, the instruction, the op,\n"
    "                       its axes and its number\n"
    "  --trace FILE         after the last step, write the measured timeline of\n"
    "                       every step as Chrome trace JSON (the format of\n"
    "                       shardc --trace): pid = rank, tid 0 compute, tid 1\n"
    "                       communication; with --backend cuda, the times of\n"
    "                       the GPU (an event pair around each instruction,\n"
    "                       kernels by name)\n"
    "  --graph              with --backend cuda: the first step runs as usual,\n"
    "                       the second is captured as CUDA graphs and launches\n"
    "                       them, every later step launches them; work on the\n"
    "                       host (collectives through the host, an i32 op no\n"
    "                       kernel runs) runs between the graphs; with\n"
    "                       --comm nccl the collectives are in the graphs\n"
    "  --report             print the compiler's report stored in the plan\n"
    "  --quiet              print only errors\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 success, 1 error in the plan, data or run (or more memory\n"
    "than the machine gives), 2 bad usage,\n"
    "3 internal error, 4 no GPU (--backend cuda without a usable CUDA driver\n"
    "or GPU, or --comm nccl without a usable NCCL)\n";

typedef struct args {
    const char *plan, *backend, *comm, *params, *inputs, *outputs, *save_params;
    const char *save, *resume;   /* checkpoint folders */
    const char *trace;           /* --trace FILE */
    long long ranks, steps, timeout_ms, save_every, keep;
    unsigned long long seed;
    bool report, quiet, graph, init_missing;
} args;

static int usage_error(const char *fmt, const char *arg)
{
    if (cli_quiet)
        return EXIT_USAGE;
    fprintf(stderr, "shardrun: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'shardrun --help' for usage)\n");
    return EXIT_USAGE;
}

static bool number(const char *s, long long lo, long long *out)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo)
        return false;
    *out = v;
    return true;
}

/* True when an MPI launcher started this process. */
static bool under_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "SLURM_STEP_NUM_TASKS", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* The rank an MPI launcher (mpirun, srun, hydra) gave this process, or
 * -1 when there is none. */
static long long launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    long long r;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && number(v, 0, &r))
            return r;
    }
    return -1;
}

static int parse_args(int argc, char **argv, args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *v;
        long long n;
        if ((v = value_of(argc, argv, &i, "--backend"))) {
            if (strcmp(v, "cpu") != 0 && strcmp(v, "cuda") != 0)
                return usage_error("--backend '%s': expected cpu or cuda", v);
            a->backend = v;
        } else if ((v = value_of(argc, argv, &i, "--comm"))) {
            if (strcmp(v, "local") != 0 && strcmp(v, "mpi") != 0 && strcmp(v, "nccl") != 0)
                return usage_error("--comm '%s': expected local, mpi or nccl", v);
            a->comm = v;
        } else if ((v = value_of(argc, argv, &i, "--ranks"))) {
            if (!number(v, 1, &a->ranks))
                return usage_error("--ranks '%s': expected a number >= 1", v);
        } else if ((v = value_of(argc, argv, &i, "--steps"))) {
            if (!number(v, 1, &a->steps))
                return usage_error("--steps '%s': expected a number >= 1", v);
        } else if ((v = value_of(argc, argv, &i, "--timeout-ms"))) {
            if (!number(v, 1, &a->timeout_ms) || a->timeout_ms > 86400000)
                return usage_error("--timeout-ms '%s': expected 1 to 86400000", v);
        } else if ((v = value_of(argc, argv, &i, "--timeout"))) {
            if (!number(v, 1, &n) || n > 86400)
                return usage_error("--timeout '%s': expected 1 to 86400 seconds", v);
            a->timeout_ms = n * 1000;
        } else if ((v = value_of(argc, argv, &i, "--seed"))) {
            if (!number(v, 0, &n))
                return usage_error("--seed '%s': expected a number >= 0", v);
            a->seed = (unsigned long long)n;
        } else if ((v = value_of(argc, argv, &i, "--params"))) {
            if (!*v)
                return usage_error("%s needs a file name", "--params");
            a->params = v;
        } else if ((v = value_of(argc, argv, &i, "--inputs"))) {
            if (!*v)
                return usage_error("%s needs a file name", "--inputs");
            a->inputs = v;
        } else if ((v = value_of(argc, argv, &i, "--outputs"))) {
            if (!*v)
                return usage_error("%s needs a file name", "--outputs");
            a->outputs = v;
        } else if ((v = value_of(argc, argv, &i, "--save-params"))) {
            if (!*v)
                return usage_error("%s needs a file name", "--save-params");
            a->save_params = v;
        } else if ((v = value_of(argc, argv, &i, "--trace"))) {
            if (!*v)
                return usage_error("%s needs a file name", "--trace");
            a->trace = v;
        } else if ((v = value_of(argc, argv, &i, "--save-every"))) {
            if (!number(v, 1, &a->save_every))
                return usage_error("--save-every '%s': expected a number >= 1", v);
        } else if ((v = value_of(argc, argv, &i, "--keep"))) {
            if (!number(v, 1, &a->keep) || a->keep > 1000000)
                return usage_error("--keep '%s': expected 1 to 1000000", v);
        } else if ((v = value_of(argc, argv, &i, "--save"))) {
            if (!*v)
                return usage_error("%s needs a folder name", "--save");
            a->save = v;
        } else if ((v = value_of(argc, argv, &i, "--resume"))) {
            if (!*v)
                return usage_error("%s needs a folder name", "--resume");
            a->resume = v;
        } else if (!strcmp(argv[i], "--report")) {
            a->report = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            a->quiet = true;
        } else if (!strcmp(argv[i], "--graph")) {
            a->graph = true;
        } else if (!strcmp(argv[i], "--init-missing")) {
            a->init_missing = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("unknown option '%s'", argv[i]);
        } else if (a->plan) {
            return usage_error("more than one plan ('%s')", argv[i]);
        } else {
            a->plan = argv[i];
        }
    }
    if (!a->plan)
        return usage_error("%s", "no plan file");
    /* the checkpoint holds every param and state: a params file would be
     * read for nothing, which is more likely a mistake than meant */
    if (a->resume && a->params)
        return usage_error("%s", "--resume and --params both give the params: use one");
    if (a->init_missing && !a->params)
        return usage_error("%s", a->resume ? "--init-missing needs --params (a checkpoint to "
                                             "resume from holds every param)"
                                           : "--init-missing needs --params (without it, "
                                             "every param is made from the seed)");
    /* --save-params may name the --params file: it is read whole before
     * the run and replaced whole after it, which continues a training */
    const cli_file out[] = {{"--outputs", a->outputs}, {"--save-params", a->save_params},
                            {"--trace", a->trace}};
    const cli_file in[] = {{"the plan", a->plan}, {"--inputs", a->inputs},
                           {"--params", a->save_params && a->params &&
                                        cli_same_file(a->save_params, a->params) ? NULL
                                                                                 : a->params}};
    int rc = cli_check_outputs("shardrun", out, 3, in, 3);
    if (rc)
        return rc;
    if (a->save_every && !a->save)
        return usage_error("%s", "--save-every needs --save DIR");
    if (a->keep && !a->save)
        return usage_error("%s", "--keep needs --save DIR");
    if (!a->comm)
        a->comm = under_launcher() ? "mpi" : "local";
    if (!strcmp(a->comm, "nccl") && (!a->backend || strcmp(a->backend, "cuda") != 0))
        return usage_error("%s", "--comm nccl needs --backend cuda (NCCL runs the collectives "
                                 "on the GPU)");
    if (a->graph && (!a->backend || strcmp(a->backend, "cuda") != 0))
        return usage_error("%s", "--graph needs --backend cuda");
    return 0;
}


static float half_to_float(uint16_t h, bool bf16)
{
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                        : ldexpf((float)(m | 1024), e - 25);
    return h & 0x8000 ? -v : v;
}

static double element(const void *data, const char *dtype, size_t i)
{
    if (!strcmp(dtype, "f32"))
        return ((const float *)data)[i];
    if (!strcmp(dtype, "i32"))
        return ((const int32_t *)data)[i];
    return half_to_float(((const uint16_t *)data)[i], !strcmp(dtype, "bf16"));
}

/* "out f32[64, 1024]: mean 0.0012 std 0.031 min -0.11 max 0.12" */
static void summarize(const shardc_tensor_info *t, const void *data)
{
    size_t n = t->bytes / (size_t)(!strcmp(t->dtype, "f32") || !strcmp(t->dtype, "i32") ? 4 : 2);
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = element(data, t->dtype, i);
        sum += v;
        sq += v * v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    printf("  %s %s[", t->name, t->dtype);
    for (int d = 0; d < t->rank; d++)
        printf("%s%lld", d ? ", " : "", t->dim[d]);
    if (n == 1) {
        printf("]: %.6g\n", sum);
        return;
    }
    double mean = sum / (double)n, var = sq / (double)n - mean * mean;
    printf("]: mean %.6g std %.6g min %.6g max %.6g\n", mean, sqrt(var > 0 ? var : 0), lo, hi);
}

/* "made from seed 0: x, w1" or, for many, the first few and a count. */
static void print_generated(const char *names, unsigned long long seed)
{
    int n = 1;
    const char *cut = NULL;
    for (const char *p = names; *p; p++)
        if (*p == ',' && ++n == 6)
            cut = p;
    if (!cut)
        printf("made from seed %llu: %s\n", seed, names);
    else
        printf("made from seed %llu: %.*s and %d more (%d in all)\n", seed, (int)(cut - names),
               names, n - 5, n);
}

/* Samples per step: dimension 0 of the first input (0 when there is none,
 * or it is a scalar). */
static long long samples_per_step(const shardc_plan *plan)
{
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        shardc_plan_tensor(plan, i, &t);
        if (!strcmp(t.kind, "input"))
            return t.rank ? t.dim[0] : 0;
    }
    return 0;
}

/* A training step: "step 3/5  loss 2.302585  14.1 ms  1560 samples/s";
 * otherwise "step 1/1: 13.2 ms" and the scalar outputs. A step under 10
 * ms has two decimals ("0.71 ms"): one would round a small model's GPU
 * step by up to 7%. */
static void print_step(const shardc_plan *plan, const shardc_session *s, long long step,
                       long long steps, double ms)
{
    double loss;
    if (shardc_session_loss(s, &loss, NULL) == SHARDC_OK) {
        printf("step %lld/%lld  loss %.6f  %.*f ms", step, steps, loss, ms < 10 ? 2 : 1, ms);
        long long n = samples_per_step(plan);
        if (n > 0 && ms > 0)
            printf("  %.0f samples/s", (double)n * 1e3 / ms);
        printf("\n");
        return;
    }
    printf("step %lld/%lld: %.*f ms", step, steps, ms < 10 ? 2 : 1, ms);
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        const void *data;
        shardc_plan_tensor(plan, i, &t);
        if (strcmp(t.kind, "output") != 0 || t.rank != 0)
            continue;
        shardc_session_output(s, t.name, &data, &t, NULL);
        printf("  %s %.6g", t.name, element(data, t.dtype, 0));
    }
    printf("\n");
}

/* The outcome of a part of run(): its exit code, and whether every rank
 * reached the same one (the library's collective checks agree under MPI),
 * so the job can end without MPI_Abort and only rank 0 needs to speak. */
typedef struct outcome {
    int rc;
    bool everyone;
} outcome;

static outcome failed(shardc_status st, char *err, bool say, bool everyone)
{
    if (say)
        fprintf(stderr, "shardrun: error: %s\n", err ? err : "out of memory");
    shardc_free(err);
    return (outcome){exit_code(st), everyone};
}

/* A checkpoint into a->save after step `step`. */
static outcome save_checkpoint(const args *a, shardc_session *s, long long step, int rank,
                               bool talk)
{
    char *err = NULL;
    shardc_status st = shardc_session_save_checkpoint(s, a->save, &err);
    if (st != SHARDC_OK)
        return failed(st, err, rank == 0, true);
    if (talk)
        printf("checkpoint saved to %s (step %lld)\n", a->save, step);
    return (outcome){0, true};
}

/* Writes what the options ask for after the last step: the outputs (rank
 * 0), the params and states (every rank gathers, rank 0 writes), the
 * checkpoint (every rank its file, rank 0 the index). */
static outcome save_files(const args *a, shardc_session *s, int rank, bool talk)
{
    char *err = NULL;
    shardc_status st = SHARDC_OK;
    if (a->outputs && rank == 0)
        st = shardc_session_save_outputs(s, a->outputs, &err);
    if (st == SHARDC_OK && a->save_params) {
        st = shardc_session_save_params(s, a->save_params, &err);
        if (st == SHARDC_OK && talk)
            printf("params saved to %s\n", a->save_params);
    }
    if (st == SHARDC_OK && a->trace) {
        st = shardc_session_write_trace(s, a->trace, &err);
        if (st == SHARDC_OK && talk)
            printf("trace written to %s\n", a->trace);
    }
    if (st != SHARDC_OK)
        return failed(st, err, true, false);
    if (a->save)
        return save_checkpoint(a, s, shardc_session_step(s), rank, talk);
    return (outcome){0, true};
}

/* Before the first step: the checkpoint to resume from, and a batch in
 * the inputs file for each step. *start: the step count to go on from. */
static outcome prepare(const args *a, shardc_session *s, long long steps, int rank, bool mpi,
                       bool talk, long long *start)
{
    char *err = NULL;
    shardc_status st;
    if (a->resume && (st = shardc_session_resume(s, a->resume, &err)) != SHARDC_OK)
        return failed(st, err, rank == 0 || !mpi, true);
    *start = shardc_session_step(s);
    const char *note = "", *from = a->resume ? shardc_session_resumed_from(s, &note) : NULL;
    if (from && *note && rank == 0)
        fprintf(stderr, "shardrun: note: %s\n", note);
    if (from && talk)
        printf("resumed from %s at step %lld\n", from, *start);
    if ((st = shardc_session_check_steps(s, steps, &err)) != SHARDC_OK)
        return failed(st, err, rank == 0 || !mpi, true);
    /* every rank finds the same params missing: rank 0 speaks */
    if ((st = shardc_session_check_params(s, &err)) != SHARDC_OK) {
        bool say = rank == 0 || !mpi;
        outcome o = failed(st, err, say, true);
        if (say && !a->init_missing)
            fprintf(stderr, "shardrun: --init-missing makes the params missing from --params by "
                            "their init from the seed\n");
        return o;
    }
    return (outcome){0, true};
}

/* The steps, each with its progress line, and the checkpoints of
 * --save-every between them. */
static outcome train(const args *a, const shardc_plan *plan, shardc_session *s, long long start,
                     long long total, int rank, bool talk)
{
    for (long long step = start + 1; step <= total; step++) {
        char *err = NULL;
        double t0 = cli_now_ms();
        shardc_status st = shardc_session_run(s, &err);
        double ms = cli_now_ms() - t0;
        if (st != SHARDC_OK) {
            outcome o = failed(st, err, true, false);
            fflush(stderr);
            return o;
        }
        if (step == start + 1 && talk && *shardc_session_generated(s))
            print_generated(shardc_session_generated(s), a->seed);
        if (talk) {
            print_step(plan, s, step, total, ms);
            fflush(stdout);
        }
        if (a->save_every && step % a->save_every == 0 && step < total) {
            outcome o = save_checkpoint(a, s, step, rank, talk);
            if (o.rc)
                return o;
        }
    }
    return (outcome){0, true};
}

static void print_outputs(const shardc_plan *plan, const shardc_session *s)
{
    printf("outputs:\n");
    for (int i = 0; i < shardc_plan_num_tensors(plan); i++) {
        shardc_tensor_info t;
        const void *data;
        shardc_plan_tensor(plan, i, &t);
        if (strcmp(t.kind, "output") != 0)
            continue;
        shardc_session_output(s, t.name, &data, &t, NULL);
        summarize(&t, data);
    }
}

static int run(const args *a, int rank, bool mpi)
{
    shardc_plan *plan = NULL;
    char *err = NULL;
    shardc_status st = shardc_plan_load(a->plan, &plan, &err);
    if (st != SHARDC_OK) {
        if (rank == 0)
            fprintf(stderr, "shardrun: error: %s\n", err ? err : "out of memory");
        shardc_free(err);
        return exit_code(st);
    }
    long long ranks = shardc_plan_ranks(plan);
    if (!mpi && a->ranks && a->ranks != ranks) {
        fprintf(stderr, "shardrun: error: --ranks %lld, but the plan's mesh has %lld rank%s\n",
                a->ranks, ranks, ranks == 1 ? "" : "s");
        shardc_plan_free(plan);
        return EXIT_USAGE;
    }
    if (a->report && rank == 0)
        printf("%s\n", shardc_plan_report(plan));
    shardc_session_config cfg = {
        .backend = a->backend, .comm = a->comm, .params_file = a->params,
        .init_missing = a->init_missing,
        .inputs_file = a->inputs, .seed = a->seed, .timeout_ms = (int)a->timeout_ms,
        .trace = a->trace != NULL, .graph = a->graph, .checkpoint_keep = (int)a->keep,
    };
    shardc_session *s = NULL;
    st = shardc_session_new(plan, &cfg, &s, &err);
    if (st != SHARDC_OK) {
        if (rank == 0 || !mpi)
            fprintf(stderr, "shardrun: error: %s\n", err ? err : "out of memory");
        shardc_free(err);
        shardc_plan_free(plan);
        return exit_code(st);
    }
    bool talk = rank == 0 && !a->quiet;
    if (talk) {
        printf("shardrun: %s: mesh", a->plan);
        for (int i = 0; i < shardc_plan_num_axes(plan); i++) {
            long long size;
            const char *name = shardc_plan_axis(plan, i, &size);
            printf("%s %s=%lld", i ? "," : "", name, size);
        }
        printf(" (%lld rank%s, %s, %s)\n", ranks, ranks == 1 ? "" : "s", cfg.comm,
               a->backend ? a->backend : "cpu");
    }
    long long steps = a->steps ? a->steps : 1, start = 0;
    outcome o = prepare(a, s, steps, rank, mpi, talk, &start);
    if (!o.rc)
        o = train(a, plan, s, start, start + steps, rank, talk);
    if (!o.rc && talk)
        print_outputs(plan, s);
    if (!o.rc)
        o = save_files(a, s, rank, talk);
    if (o.rc && mpi && !o.everyone) {
        /* the other ranks may be waiting in a collective: stop them all */
        fflush(stderr);
#ifdef SHARDC_HAVE_MPI
        MPI_Abort(MPI_COMM_WORLD, o.rc);
#endif
    }
    shardc_session_free(s);
    shardc_plan_free(plan);
    return o.rc;
}

/* Where the results go, before any step (cli_check_writable): rank 0
 * writes the outputs, the params and the trace, on its own node (another
 * node may lack their folder); every rank writes its checkpoint file, so
 * each checks the folder on its node and says why it cannot. */
static int check_destinations(const args *a, int rank)
{
    char who[64] = "shardrun";
    if (rank > 0)
        snprintf(who, sizeof who, "shardrun: rank %d", rank);
    int rc = 0;
    if (rank == 0 && ((rc = cli_check_writable(who, "--outputs", a->outputs, false)) ||
                      (rc = cli_check_writable(who, "--save-params", a->save_params, false)) ||
                      (rc = cli_check_writable(who, "--trace", a->trace, false))))
        return rc;
    return cli_check_writable(who, "--save", a->save, true);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("shardrun %s\n", shardc_version());
            return 0;
        }
    }
    args a;
    memset(&a, 0, sizeof a);
    /* Every rank of a launched job reads the same arguments: rank 0 alone
     * prints a usage error, and the others wait a moment before they exit,
     * so that the launcher, which ends the job when the first process fails,
     * does not end rank 0 before its message is out. */
    cli_quiet = launcher_rank() > 0;
    int rc = parse_args(argc, argv, &a);
    if (rc && cli_quiet)
        sleep(2);
    if (rc)
        return rc;
    char *err = NULL; /* the backend before anything else: no driver or no GPU is exit 4 */
    shardc_status st = shardc_backend_check(a.backend, &err);
    if (st != SHARDC_OK) {
        fprintf(stderr, "shardrun: error: --backend %s: %s\n", a.backend,
                err ? err : "out of memory");
        shardc_free(err);
        return exit_code(st);
    }
    if ((st = shardc_comm_check(a.comm, &err)) != SHARDC_OK) {
        fprintf(stderr, "shardrun: error: --comm %s: %s\n", a.comm, err ? err : "out of memory");
        shardc_free(err);
        return exit_code(st);
    }
    bool mpi = !strcmp(a.comm, "nccl") || !strcmp(a.comm, "mpi");
    if (!mpi)
        return (rc = check_destinations(&a, 0)) ? rc : run(&a, 0, false);
    int rank = 0; /* MPI_THREAD_SERIALIZED: nccl's rank runs on a thread of its own */
    if ((st = shardc_mpi_init(&rank, NULL, &err)) != SHARDC_OK) {
        fprintf(stderr, "shardrun: error: --comm %s: %s\n", a.comm, err ? err : "out of memory");
        shardc_free(err);
        return exit_code(st);
    }
    rc = check_destinations(&a, rank);
#ifdef SHARDC_HAVE_MPI
    /* every rank learns whether one failed, and all end alike: a rank that
     * ended alone would leave the others waiting (under srun, for good) */
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    rc = worst;
#endif
    if (!rc)
        rc = run(&a, rank, true);
    shardc_mpi_finalize();
    return rc;
}
