/* shardc: the compiler's command line. Argument parsing only; the work is
 * libshardc's (include/shardc.h).
 *
 * Exit codes: 0 success, 1 an error in the user's input (or more memory
 * than the machine gives), 2 bad usage, 3 an internal error. */
#include "shardc.h"
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardc FILE [options]\n"
    "\n"
    "Compiles a model in the shard language (or textual IR, FILE ending in .ir)\n"
    "for a device mesh.\n"
    "\n"
    "options:\n"
    "  --mesh AxB...      mesh axis sizes, major to minor (e.g. --mesh 8x4)\n"
    "  -D NAME=VALUE      override the integer constant `let NAME = ...`\n"
    "  --emit ir          print the logical IR\n"
    "  --emit train-ir    print the logical IR with the training step (gradients,\n"
    "                     optimizer updates) and every value's sharding\n"
    "  --emit sharded-ir  print the partitioned (per-rank, SPMD) IR\n"
    "  --emit stage-ir    print each pipeline stage's program (microbatches,\n"
    "                     send and recv); without a pipeline, the sharded IR\n"
    "  --emit schedule    print each stage's pipeline schedule and the plan's\n"
    "                     instruction list of each stage\n"
    "  --emit loops       the same, each stage as the plan holds it: a pipeline\n"
    "                     stage's loop bodies once, its slot maps and its items\n"
    "  --emit fused-ir    print the partitioned IR with its fused groups (one\n"
    "                     CUDA kernel each) as comments\n"
    "  --emit cuda        print the CUDA C kernel of each fused group, with its\n"
    "                     launch geometry\n"
    "  --arch LIST        GPU architectures of the kernels (native: the local\n"
    "                     GPU's, device 0's; the default: the machine's GPUs'\n"
    "                     where NVML finds any, else sm_80,sm_90):\n"
    "                     a cubin for each, and PTX for the newest, stored in the\n"
    "                     plan (compiled by NVRTC, cached in $SHARDC_CACHE_DIR,\n"
    "                     else $XDG_CACHE_HOME/shardc, else ~/.cache/shardc);\n"
    "                     none: a CPU-only plan, without kernels. $SHARDC_ARCH,\n"
    "                     when set, is the default. The stages of a pipeline and\n"
    "                     NVRTC's programs run on a thread per processor, or on\n"
    "                     $SHARDC_THREADS (1 to 64); the plan is the same bytes\n"
    "                     whatever the count (given the same code from NVRTC)\n"
    "  --bucket-mb N      group a training step's gradient collectives into\n"
    "                     buckets of at most N MiB (default 25; 0: none)\n"
    "  --zero K[:AXIS]    ZeRO stage K (0: none, 1, 2, 3) over AXIS, over the\n"
    "                     model's `zero` clause (AXIS: the model's, else dp)\n"
    "  --schedule S       the pipeline's schedule: gpipe, 1f1b or\n"
    "                     interleaved(V), over the model's `pipeline` line\n"
    "  --microbatches N   the pipeline's microbatches, over the model's\n"
    "  --dtype T          bf16 or f16 wherever the model writes f32 (inputs,\n"
    "                     params, blocks, casts) and for one_hot's results;\n"
    "                     trained params keep f32 masters\n"
    "  --recompute        make every block a recompute block: the backward runs\n"
    "                     each call's forward again instead of keeping its values\n"
    "  --keep-gathered    the backward reads the activations the forward gathered\n"
    "                     (a sequence-split input of a column-parallel layer, for\n"
    "                     its weight's gradient) instead of gathering them again:\n"
    "                     fewer bytes, more activation memory\n"
    "  --f32-matmul MODE  how f32 matmuls compute: f32 (the default), or bf16x3:\n"
    "                     each operand as three bf16 parts and the product on\n"
    "                     bf16 tensor cores as six products of parts (three\n"
    "                     matmuls), about f32's precision, the parts 1.5 times\n"
    "                     an operand's bytes while they live; sm_80 or newer\n"
    "  --unroll           write a pipeline stage's forward and backward once per\n"
    "                     microbatch, not once in a loop (a larger plan, memory\n"
    "                     placed as for any values); the same computation\n"
    "  --mem-limit SIZE   fail when a rank's planned memory exceeds SIZE (80GiB,\n"
    "                     75GB, 512MiB, bytes; hw: the --hw profile's memory);\n"
    "                     --report then gives each stage's headroom\n"
    "  --auto N           search the strategies for N ranks (every mesh of N over\n"
    "                     the model's axes; ZeRO 0-3, --recompute,\n"
    "                     --keep-gathered, schedules and microbatches where they\n"
    "                     apply), each compiled and\n"
    "                     estimated on --hw, and print the fastest within\n"
    "                     --mem-limit with the command that builds each; --top K\n"
    "                     of them (default 10), --auto-csv FILE every one,\n"
    "                     --auto-svg FILE a plot of step time against memory;\n"
    "                     the compiles run on every processor\n"
    "                     (SHARDC_AUTO_JOBS=N: on N threads), counted on\n"
    "                     standard error when it is a terminal with the time\n"
    "                     left, as many at once as four fifths of the\n"
    "                     available memory holds\n"
    "                     (SHARDC_AUTO_MEMORY=BYTES: that many bytes)\n"
    "  --explain-sharding print why each value has its sharding and why each\n"
    "                     collective was inserted\n"
    "  --report [json]    print each stage's FLOPs, bytes sent and collectives\n"
    "  --trace FILE       write the estimated timeline of one step as Chrome trace\n"
    "                     JSON (Perfetto, chrome://tracing): pid = rank, tid 0\n"
    "                     compute, tid 1 communication\n"
    "  --hw NAME          the hardware the timeline is estimated on: a100, h100\n"
    "                     (default) or h200, or FILE.json, a profile of your\n"
    "                     own in the form of docs/hw/*.json\n"
    "  --print-after=PASS print what PASS made to standard error (a list: a,b;\n"
    "                     all: every pass); the passes: autodiff, input-init,\n"
    "                     propagate, partition, pipeline-split, bucket,\n"
    "                     matmul-parts (with --f32-matmul bf16x3), verify,\n"
    "                     fuse (with kernels), memplan\n"
    "  --stop-after=PASS  stop after PASS and print what it made (IR that\n"
    "                     shardc reads back), instead of a plan\n"
    "  --passes=A,B       run only passes A, B on FILE (a model or textual IR)\n"
    "                     and print what the last made, instead of a plan\n"
    "  --time-passes      print to standard error the wall time of the frontend,\n"
    "                     of each pass that ran and of the output (the plan,\n"
    "                     with its steps: report, kernels and NVRTC, lowering,\n"
    "                     validation, loop form, bytes; or what --emit,\n"
    "                     --report or --trace wrote), and the total\n"
    "  -o OUT             write the plan to OUT (run it with shardrun); with\n"
    "                     --emit, --explain-sharding, --report, --stop-after or\n"
    "                     --passes, write that text to OUT instead of standard\n"
    "                     output\n"
    "  --help             show this help\n"
    "  --version          show the version\n"
    "\n"
    "exit codes: 0 success, 1 error in the input (or more memory than the\n"
    "machine gives), 2 bad usage, 3 internal error\n";

typedef struct args {
    const char *file, *emit, *out, *trace;
    const char *hw_file; /* --hw FILE.json */
    bool partial;       /* --stop-after or --passes */
    bool time_passes;   /* --time-passes */
    shardc_options *opt;
} args;

/* --print-after's printer: each pass's text under a header, on stderr. */
static void print_pass(const char *pass, const char *text, size_t len, void *user)
{
    (void)user;
    fprintf(stderr, "// ---- after %s ----\n", pass);
    fwrite(text, 1, len, stderr);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardc: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'shardc --help' for usage)\n");
    return EXIT_USAGE;
}

/* An option setter's status: nonzero, the exit code (reported, err freed),
 * when it failed. */
static int option_failed(shardc_status st, char *err)
{
    if (st == SHARDC_OK)
        return 0;
    usage_error("%s", err ? err : "out of memory");
    shardc_free(err);
    return EXIT_USAGE;
}

static int define(shardc_options *opt, const char *def)
{
    const char *eq = strchr(def, '=');
    if (!eq || eq == def)
        return usage_error("-D '%s': expected NAME=VALUE", def);
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (eq[1] == 0 || *end || errno == ERANGE)
        return usage_error("-D '%s': the value must be an integer", def);
    char name[256];
    if ((size_t)(eq - def) >= sizeof name)
        return usage_error("-D '%s': name too long", def);
    memcpy(name, def, (size_t)(eq - def));
    name[eq - def] = 0;
    char *err = NULL;
    if (shardc_options_define(opt, name, v, &err) != SHARDC_OK) {
        fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
        shardc_free(err);
        return EXIT_USAGE;
    }
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *v;
        char *err = NULL;
        shardc_status st;
        if ((v = value_of(argc, argv, &i, "--mesh"))) {
            st = shardc_options_set_mesh(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--emit"))) {
            if (strcmp(v, "ir") != 0 && strcmp(v, "train-ir") != 0 &&
                strcmp(v, "sharded-ir") != 0 && strcmp(v, "stage-ir") != 0 &&
                strcmp(v, "schedule") != 0 && strcmp(v, "loops") != 0 &&
                strcmp(v, "fused-ir") != 0 &&
                strcmp(v, "cuda") != 0)
                return usage_error("--emit '%s': this version emits: ir, train-ir, sharded-ir, "
                                   "stage-ir, schedule, loops, fused-ir, cuda", v);
            a->emit = v;
        } else if ((v = value_of(argc, argv, &i, "--arch"))) {
            st = shardc_options_set_archs(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--hw"))) {
            size_t n = strlen(v);
            a->hw_file = n > 5 && !strcmp(v + n - 5, ".json") ? v : NULL; /* else a name */
            st = shardc_options_set_hardware(a->opt, v, &err);
            if (st == SHARDC_ERR_INPUT) { /* a profile file that cannot be read or is wrong */
                fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
                shardc_free(err);
                return EXIT_INPUT;
            }
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--trace"))) {
            a->trace = v;
        } else if ((v = value_of(argc, argv, &i, "--print-after"))) {
            st = shardc_options_print_after(a->opt, v, print_pass, NULL, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--stop-after"))) {
            st = shardc_options_stop_after(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
            a->partial = true;
        } else if ((v = value_of(argc, argv, &i, "--passes"))) {
            st = shardc_options_only_passes(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
            a->partial = true;
        } else if ((v = value_of(argc, argv, &i, "--bucket-mb"))) {
            char *end;
            errno = 0;
            double mb = strtod(v, &end);
            if (end == v || *end || errno)
                return usage_error("--bucket-mb '%s': expected a size in MiB", v);
            st = shardc_options_set_bucket_mb(a->opt, mb, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--zero"))) {
            char *end;
            errno = 0;
            long k = strtol(v, &end, 10);
            if (end == v || (*end && *end != ':') || errno || k < INT_MIN || k > INT_MAX)
                return usage_error("--zero '%s': expected a stage, 0 to 3, then :AXIS if you "
                                   "will", v);
            st = shardc_options_set_zero(a->opt, (int)k, *end ? end + 1 : NULL, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--mem-limit"))) {
            st = shardc_options_set_mem_limit(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--schedule"))) {
            st = shardc_options_set_schedule(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--microbatches"))) {
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (end == v || *end || errno)
                return usage_error("--microbatches '%s': expected a count", v);
            st = shardc_options_set_microbatches(a->opt, n, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--f32-matmul"))) {
            st = shardc_options_set_f32_matmul(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--dtype"))) {
            st = shardc_options_set_dtype(a->opt, v, &err);
            if (option_failed(st, err))
                return EXIT_USAGE;
        } else if (!strcmp(argv[i], "--recompute")) {
            shardc_options_set_recompute(a->opt, 1);
        } else if (!strcmp(argv[i], "--time-passes")) {
            a->time_passes = true;
        } else if (!strcmp(argv[i], "--keep-gathered")) {
            shardc_options_set_keep_gathered(a->opt, 1);
        } else if (!strcmp(argv[i], "--unroll")) {
            shardc_options_set_unroll(a->opt, 1);
        } else if (!strcmp(argv[i], "--explain-sharding")) {
            a->emit = "explain";
        } else if (!strcmp(argv[i], "--report") || !strcmp(argv[i], "--report=json")) {
            bool json = argv[i][8] == '=' || (i + 1 < argc && !strcmp(argv[i + 1], "json"));
            if (json && argv[i][8] != '=')
                i++;
            a->emit = json ? "report-json" : "report";
        } else if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a file name", "-o");
            a->out = argv[++i];
        } else if (!strncmp(argv[i], "-D", 2)) {
            const char *def = argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : "");
            int rc = define(a->opt, def);
            if (rc)
                return rc;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("unknown option '%s'", argv[i]);
        } else if (a->file) {
            return usage_error("more than one input file ('%s')", argv[i]);
        } else {
            a->file = argv[i];
        }
    }
    if (!a->file)
        return usage_error("%s", "no input file");
    if (a->partial && (a->emit || a->trace))
        return usage_error("%s", "--stop-after and --passes print what the last pass made: "
                           "they take no --emit, --explain-sharding, --report or --trace");
    const cli_file out[] = {{"-o", a->out}, {"--trace", a->trace}};
    const cli_file in[] = {{"the model", a->file}, {"the hardware profile", a->hw_file}};
    int rc = cli_check_outputs("shardc", out, 2, in, 2);
    if (rc)
        return rc;
    /* before the compile (NVRTC may take a while) */
    if ((rc = cli_check_writable("shardc", "-o", a->out, false)) ||
        (rc = cli_check_writable("shardc", "--trace", a->trace, false)))
        return rc;
    if (a->partial)
        a->emit = "after-pass";
    /* the reasons behind every sharding and collective, only for the text
     * that prints them: most of the sharding passes' time */
    shardc_options_set_explain(a->opt, a->emit && !strcmp(a->emit, "explain"));
    /* the report alone: a pipeline's stages dropped as they are costed */
    shardc_options_set_report_only(a->opt, a->emit && !a->trace &&
                                               (!strcmp(a->emit, "report") ||
                                                !strcmp(a->emit, "report-json")));
    /* the plan alone: a pipeline's stages built into it as they are made */
    shardc_options_set_plan_only(a->opt, a->out && !a->emit && !a->trace);
    return 0;
}

/* Writes output `what` of prog to path. */
static int emit_to(const shardc_program *prog, const char *what, const char *path)
{
    char *err = NULL;
    shardc_status st = shardc_program_emit_file(prog, what, path, &err);
    if (st != SHARDC_OK)
        fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
    shardc_free(err);
    return exit_code(st);
}

/* --time-passes: the compile's steps (the library's figures), then what
 * was written, on stderr. */
static void print_times(const shardc_program *prog, const args *a, double compile_s,
                        double output_s)
{
    fprintf(stderr, "shardc: wall time, seconds\n");
    double known = 0, s = shardc_program_seconds(prog, "frontend");
    fprintf(stderr, "  %-16s %9.3f\n", "frontend", s);
    known += s;
    for (int i = 0; shardc_pass_name(i); i++) {
        s = shardc_program_seconds(prog, shardc_pass_name(i));
        if (s < 0)
            continue;
        fprintf(stderr, "  %-16s %9.3f\n", shardc_pass_name(i), s);
        known += s;
    }
    /* a plan made during the compile (shardc_options_set_plan_only): the
     * plan's, below, not the compile's */
    double in = shardc_program_seconds(prog, "plan");
    in = in > 0 ? in : 0;
    compile_s -= in;
    output_s += in;
    /* reading the file, the memory limit's check, the program's setup */
    fprintf(stderr, "  %-16s %9.3f\n", "other", compile_s > known ? compile_s - known : 0.0);
    const char *what = a->emit && !strcmp(a->emit, "after-pass") ? "the pass's text"
                       : a->emit ? "--emit" : a->out ? "the plan" : a->trace ? "the trace" : NULL;
    if (what)
        fprintf(stderr, "  %-16s %9.3f\n", what, output_s);
    /* a plan made for the output (-o, or in memory for --emit schedule or
     * loops): its steps, indented under it, then the rest (the file) */
    double steps = 0;
    bool planned = false;
    for (int i = 0; what && shardc_plan_step_name(i); i++) {
        s = shardc_program_seconds(prog, shardc_plan_step_name(i));
        if (s < 0)
            continue;
        planned = true;
        fprintf(stderr, "    %-14s %9.3f\n", shardc_plan_step_name(i) + strlen("plan/"), s);
        steps += s;
    }
    if (planned)
        fprintf(stderr, "    %-14s %9.3f\n", "other", output_s > steps ? output_s - steps : 0.0);
    fprintf(stderr, "  %-16s %9.3f\n", "total", compile_s + output_s);
}

static int compile(const args *a)
{
    shardc_program *prog = NULL;
    char *err = NULL;
    double t0 = cli_now_ms() / 1e3;
    shardc_status st = shardc_compile_file(a->opt, a->file, &prog, &err);
    double t1 = cli_now_ms() / 1e3;
    if (st != SHARDC_OK) {
        if (st == SHARDC_ERR_IO || st == SHARDC_ERR_NOMEM)
            fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
        else if (err && err[0] && err[strlen(err) - 1] != '\n')
            fprintf(stderr, "shardc: error: %s\n", err); /* found past the frontend */
        else
            fputs(err ? err : "shardc: error: out of memory\n", stderr);
        shardc_free(err);
        return exit_code(st);
    }
    int rc = a->trace ? emit_to(prog, "trace", a->trace) : 0;
    if (!rc && a->emit && a->out) {
        rc = emit_to(prog, a->emit, a->out);
    } else if (!rc && a->emit) {
        char *text;
        size_t len;
        st = shardc_program_emit(prog, a->emit, &text, &len, &err);
        if (st != SHARDC_OK) {
            fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
            rc = exit_code(st);
        } else {
            fwrite(text, 1, len, stdout);
        }
        shardc_free(text);
        shardc_free(err);
    } else if (!rc && a->out) {
        st = shardc_program_save_plan(prog, a->out, &err);
        if (st != SHARDC_OK) {
            fprintf(stderr, "shardc: error: %s\n", err ? err : "out of memory");
            rc = exit_code(st);
        }
        shardc_free(err);
    }
    if (!rc && a->time_passes)
        print_times(prog, a, t1 - t0, cli_now_ms() / 1e3 - t1);
    shardc_program_free(prog);
    return rc;
}

/* NVRTC's disk cache: $SHARDC_CACHE_DIR, else $XDG_CACHE_HOME/shardc, else
 * $HOME/.cache/shardc (none when all are unset). */
static int set_cache_dir(shardc_options *opt)
{
    const char *own = getenv("SHARDC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME"), *base, *tail = "";
    if (own && *own)
        base = own;
    else if (xdg && *xdg)
        base = xdg, tail = "/shardc";
    else if (home && *home)
        base = home, tail = "/.cache/shardc";
    else
        return 0;
    size_t n = strlen(base) + strlen(tail) + 1;
    char *path = malloc(n), *err = NULL;
    if (!path)
        return EXIT_INTERNAL;
    snprintf(path, n, "%s%s", base, tail);
    shardc_status st = shardc_options_set_cache_dir(opt, path, &err);
    free(path);
    shardc_free(err);
    return st == SHARDC_OK ? 0 : EXIT_INTERNAL;
}

/* $SHARDC_ARCH: the default of --arch (the tests set none). */
static int set_default_archs(shardc_options *opt)
{
    const char *v = getenv("SHARDC_ARCH");
    char *err = NULL;
    if (!v || !*v || shardc_options_set_archs(opt, v, &err) == SHARDC_OK)
        return 0;
    fprintf(stderr, "shardc: error: $SHARDC_ARCH: %s\n", err ? err : "out of memory");
    shardc_free(err);
    return EXIT_USAGE;
}

/* $SHARDC_THREADS, when set, must be a count of threads from 1 to 64
 * (the library, which takes it, would ignore another). */
static int check_threads(void)
{
    const char *v = getenv("SHARDC_THREADS");
    char *end = NULL;
    long n = v && *v ? strtol(v, &end, 10) : 1;
    if (!v || !*v || (!*end && n >= 1 && n <= 64))
        return 0;
    fprintf(stderr, "shardc: error: $SHARDC_THREADS: '%s' is not a count of threads from 1 to 64\n",
            v);
    return EXIT_USAGE;
}

#include "auto.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("shardc %s\n", shardc_version());
            return 0;
        }
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--auto") || !strncmp(argv[i], "--auto=", 7))
            return auto_search(argc, argv);
    args a = {.opt = shardc_options_new()};
    if (!a.opt)
        return EXIT_INTERNAL;
    int rc = check_threads();
    if (!rc)
        rc = set_cache_dir(a.opt);
    if (!rc)
        rc = set_default_archs(a.opt);
    if (!rc)
        rc = parse_args(argc, argv, &a);
    if (!rc)
        rc = compile(&a);
    shardc_options_free(a.opt);
    return rc;
}
