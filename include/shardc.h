/* shardc.h: the public C API of libshardc, the only header a host
 * application needs (DESIGN.md §6).
 *
 * Every call returns a status; calls that can fail with a message hand it
 * back through `char **error` (free it with shardc_free). The library keeps
 * no global mutable state: separate options and programs may be used from
 * separate threads at once. It never prints and never exits.
 */
#ifndef SHARDC_H
#define SHARDC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHARDC_API __attribute__((visibility("default")))
#else
#define SHARDC_API
#endif

typedef enum shardc_status {
    SHARDC_OK = 0,
    SHARDC_ERR_INPUT = 1,    /* the model, IR or data the user gave is wrong */
    SHARDC_ERR_USAGE = 2,    /* the call's arguments are wrong */
    SHARDC_ERR_INTERNAL = 3, /* a bug in shardc */
    SHARDC_ERR_NOMEM = 4,    /* out of memory */
    SHARDC_ERR_IO = 5,       /* a file could not be read or written */
    SHARDC_ERR_NO_GPU = 6,   /* the cuda backend, on a machine without a usable
                              * CUDA driver or without a GPU */
    SHARDC_ERR_GPU = 7,      /* the GPU failed during a run: a driver, kernel,
                              * cuBLASLt or NCCL error */
    SHARDC_ERR_PEER = 8,     /* another rank failed, stopped, or did not answer
                              * within the timeout */
} shardc_status;

/* The library's version, "MAJOR.MINOR.PATCH". */
SHARDC_API const char *shardc_version(void);

/* Frees a string or buffer the library handed out. */
SHARDC_API void shardc_free(void *p);

/* ---- compile options ---- */

typedef struct shardc_options shardc_options;

/* New options: mesh sizes from the model's defaults, no -D overrides.
 * NULL only when out of memory. */
SHARDC_API shardc_options *shardc_options_new(void);
SHARDC_API void shardc_options_free(shardc_options *opt);

/* Sets the mesh axis sizes, major to minor, as `--mesh 8x4` does: "8x4".
 * SHARDC_ERR_USAGE with a message for text that is not sizes joined by 'x'
 * (a zero size is accepted here and reported against the model's mesh). */
SHARDC_API shardc_status shardc_options_set_mesh(shardc_options *opt, const char *sizes,
                                                 char **error);

/* Overrides the model's `let NAME = ...` with value, as `-D NAME=VALUE`.
 * A later call for the same name replaces the earlier one. */
SHARDC_API shardc_status shardc_options_define(shardc_options *opt, const char *name,
                                               long long value, char **error);

/* Gradient buckets of a training step, as `--bucket-mb N`: the collectives
 * that synchronise gradients are grouped, in program order, into buckets of
 * at most mb MiB (default 25), one collective each; 0 keeps one collective
 * per gradient. SHARDC_ERR_USAGE for a negative or huge size. */
SHARDC_API shardc_status shardc_options_set_bucket_mb(shardc_options *opt, double mb,
                                                      char **error);

/* Strategy over the model file's, so that one file serves every strategy:
 * ZeRO stage (0 to 3) over the mesh axis named axis (NULL or "": the
 * model's zero axis, else dp), as `--zero K[:AXIS]`; the pipeline's
 * schedule, "gpipe", "1f1b" or "interleaved(V)", as `--schedule`; its
 * microbatches, as `--microbatches N`. SHARDC_ERR_USAGE for a value out of
 * range; a model they do not fit (no train, no pipelined repeat, a batch
 * the microbatches do not divide) fails to compile, with a message naming
 * the flag. */
SHARDC_API shardc_status shardc_options_set_zero(shardc_options *opt, int stage, const char *axis,
                                                 char **error);
SHARDC_API shardc_status shardc_options_set_schedule(shardc_options *opt, const char *schedule,
                                                     char **error);
SHARDC_API shardc_status shardc_options_set_microbatches(shardc_options *opt, long long n,
                                                         char **error);

/* Low precision over the model's f32, as `--dtype bf16`: every f32 the
 * model writes (input, param and block types, cast targets), and
 * one_hot's f32 results, mean dtype ("bf16" or "f16"; "f32" leaves the
 * model as written). Trained bf16 and
 * f16 params get f32 master copies, as declared ones do.
 * SHARDC_ERR_USAGE for another name. */
SHARDC_API shardc_status shardc_options_set_dtype(shardc_options *opt, const char *dtype,
                                                  char **error);

/* Every block a `recompute block` (LANGUAGE.md §12), as `--recompute`:
 * the backward runs each block call's forward again instead of keeping
 * its intermediate values (nonzero on; 0 the model's own blocks). */
SHARDC_API void shardc_options_set_recompute(shardc_options *opt, int on);

/* Whether the compilation keeps the reason for every value's sharding and
 * every collective, which shardc_program_emit's "explain" prints
 * (nonzero, the default) or not (0): most of the sharding passes' time
 * goes into those texts, so a caller that never asks for them (a search
 * over strategies) compiles about twice as fast without them. "explain"
 * is then SHARDC_ERR_USAGE. The shardings, plan and report are the same
 * either way. */
SHARDC_API void shardc_options_set_explain(shardc_options *opt, int on);

/* Whether the compilation is for its report alone (nonzero) or not (0,
 * the default). A pipeline's stages are then each fused or grouped,
 * memory-planned and costed for the report, and their programs dropped as
 * they go, so that a deep pipeline's compile holds a few stages whole at
 * once rather than all of them (a search over strategies: `--auto`).
 * "report" and "report-json" are the only outputs it has, the same bytes
 * as without it; anything else (another output, a plan) is
 * SHARDC_ERR_USAGE. */
SHARDC_API void shardc_options_set_report_only(shardc_options *opt, int on);

/* Whether the compilation is for its plan and report alone (nonzero) or
 * not (0, the default): `shardc -o FILE` without other outputs. A
 * pipeline's plan is then built as its stages are made, a batch of
 * stages at a time (as many as the processors, at most 16), each batch
 * fused or grouped, memory-planned and costed, built into the plan, then
 * dropped, so that a deep pipeline's compile holds a few stages whole at
 * once rather than all of them, and takes less time and memory. The plan
 * (shardc_program_save_plan, shardc_program_plan), "report" and
 * "report-json" are the only outputs it has, the same bytes as without
 * it; anything else is SHARDC_ERR_USAGE. A failure writing the plan is
 * then the compile's (SHARDC_ERR_INTERNAL, as the plan's would be).
 * shardc_options_set_report_only overrides it. */
SHARDC_API void shardc_options_set_plan_only(shardc_options *opt, int on);

/* As `--keep-gathered`: the backward reads each activation the forward
 * gathered (the sequence-split input of a column-parallel layer, for its
 * weight's gradient) rather than gathering it again; fewer bytes sent,
 * more activation memory (nonzero on; 0, the default, gathers again).
 * A model without `train` then fails to compile. */
SHARDC_API void shardc_options_set_keep_gathered(shardc_options *opt, int on);

/* As `--unroll`: a pipeline stage's program holds each microbatch's
 * forward and backward one after the other, as the plan format before 14
 * did, instead of each task once in a loop (the plan is larger and the
 * memory plan places microbatches as any other values; nonzero on, 0 the
 * default). For comparing the two; what runs is the same computation. */
SHARDC_API void shardc_options_set_unroll(shardc_options *opt, int on);

/* As `--f32-matmul MODE`: how matmuls of f32 operands compute. "f32" (the
 * default): in f32, on a GPU on its CUDA cores (cuBLASLt, no TF32).
 * "bf16x3": each operand split into three bf16 parts, h + m + l (exactly,
 * for |x| >= 2^-100), and the product the six products of parts whose
 * ranks sum to at most 2, three tensor-core matmuls of bf16 with f32
 * results (runtime/cuda/cuda_blas.h); its error against the exact
 * product is of the order of f32's own, and the parts take 1.5 times each
 * operand's bytes while they live (in the plan's memory figures). The CPU
 * backend computes the same sums. Every --arch target must then be sm_80
 * or newer. SHARDC_ERR_USAGE for another mode. */
SHARDC_API shardc_status shardc_options_set_f32_matmul(shardc_options *opt, const char *mode,
                                                       char **error);

/* A limit on each rank's memory, as `--mem-limit SIZE`: "80GiB", "75GB",
 * "512MiB", a number of bytes, or "hw" for the hardware profile's memory
 * (--hw). A plan whose peak (the memory plan's arena: params, gradients,
 * optimizer state, activations and temporaries; not the libraries'
 * workspaces) exceeds it on any stage fails to compile, naming the stage
 * and what fills it; the report gives each stage's headroom.
 * SHARDC_ERR_USAGE for text that is not a size. */
SHARDC_API shardc_status shardc_options_set_mem_limit(shardc_options *opt, const char *size,
                                                      char **error);
/* The limit set, in bytes ("hw": the hardware profile's memory as now
 * set), or 0 for none. */
SHARDC_API long long shardc_options_mem_limit(const shardc_options *opt);

/* The GPU architectures the CUDA kernels are compiled for, as `--arch`
 * does: "sm_80,sm_90", a cubin for each and PTX for the newest, all
 * stored in the plan; "native": the local GPU's (device 0's). By default,
 * the distinct compute capabilities of the machine's GPUs that NVRTC can
 * compile for, as NVML reports them (found when a program is compiled,
 * once per process; CUDA is not started, so the host may fork after),
 * else "sm_80,sm_90"; "none" for a CPU-only plan (no kernels,
 * no NVRTC). By default a plan holds kernels only when this library was
 * built with NVRTC. SHARDC_ERR_USAGE for text that is not sm_NN joined by
 * ',' or for an architecture the NVRTC this library uses cannot compile
 * for. */
SHARDC_API shardc_status shardc_options_set_archs(shardc_options *opt, const char *list,
                                                  char **error);

/* The folder of NVRTC's disk cache (made when missing): a kernel compiled
 * once for a target is read from there afterwards. NULL or "": no cache
 * (the default; the library reads no environment variable, shardc takes
 * $SHARDC_CACHE_DIR, else $XDG_CACHE_HOME/shardc, else ~/.cache/shardc). */
SHARDC_API shardc_status shardc_options_set_cache_dir(shardc_options *opt, const char *dir,
                                                      char **error);

/* The hardware profile the estimated timeline (`--trace`, the "trace"
 * output) runs on, as `--hw` does: "a100", "h100" (the default) or
 * "h200", or a file ending in .json holding a profile of one's own in the
 * form of the files in docs/hw (the built-in profiles written out): name, desc,
 * the peaks, bandwidths, latencies and efficiencies, node_gpus and
 * mem_bytes. SHARDC_ERR_USAGE for another name; SHARDC_ERR_INPUT for a
 * file that cannot be read or lacks a field or has one out of range. */
SHARDC_API shardc_status shardc_options_set_hardware(shardc_options *opt, const char *name,
                                                     char **error);

/* ---- the pass pipeline (docs/passes.md) ----
 *
 * The compiler is a straight list of passes: autodiff, simplify,
 * input-init, propagate, partition, pipeline-split, bucket, matmul-parts,
 * verify, fuse, memplan.
 * These options look inside it, for people working on shardc or on a
 * model's sharding; a plan needs the whole list. */

/* Called after each pass with what it made: IR text (each stage's program
 * under a "// ---- stage S of N ----" line once there are stages); the
 * fused groups after fuse; the memory plans after memplan. text is valid
 * during the call only. */
typedef void (*shardc_pass_printer)(const char *pass, const char *text, size_t len, void *user);

/* fn is called after each pass of the comma-separated list passes, or
 * after every pass for "all", as `--print-after` does (fn NULL: never).
 * SHARDC_ERR_USAGE, naming the passes, for a name that is no pass. */
SHARDC_API shardc_status shardc_options_print_after(shardc_options *opt, const char *passes,
                                                    shardc_pass_printer fn, void *user,
                                                    char **error);

/* The compilation stops after pass, as `--stop-after` does: the program
 * then emits only "after-pass" (what that pass made), and no plan. */
SHARDC_API shardc_status shardc_options_stop_after(shardc_options *opt, const char *pass,
                                                   char **error);

/* Only the passes of the comma-separated list run, in the list's order, as
 * `--passes` does, on a model or on textual IR (from `--stop-after`, say):
 * one pass tried alone. The program emits only "after-pass". A pass asked
 * of a module it does not take (partition before propagate, a logical
 * pass on partitioned IR) fails the compilation with SHARDC_ERR_USAGE. */
SHARDC_API shardc_status shardc_options_only_passes(shardc_options *opt, const char *passes,
                                                    char **error);

/* ---- compilation ---- */

typedef struct shardc_program shardc_program;

/* Compiles a model in the shard language, or textual IR when filename ends
 * in ".ir". filename is used in messages. On failure *out is NULL and
 * *error (when error is not NULL) holds the diagnostic:
 * "file:line:col: error: message", the source line and a caret. opt may
 * be NULL: the defaults of shardc_options_new. */
SHARDC_API shardc_status shardc_compile_string(const shardc_options *opt, const char *filename,
                                               const char *text, size_t len,
                                               shardc_program **out, char **error);

/* The largest model file shardc_compile_file reads. */
#define SHARDC_MAX_MODEL_MB 64

/* As shardc_compile_string, reading the file at path: SHARDC_ERR_IO, with
 * the path and the reason, when it cannot be read, is not a regular file
 * (a device, a FIFO, a directory: refused before anything is read) or is
 * larger than SHARDC_MAX_MODEL_MB MiB. */
SHARDC_API shardc_status shardc_compile_file(const shardc_options *opt, const char *path,
                                             shardc_program **out, char **error);

SHARDC_API void shardc_program_free(shardc_program *prog);

/* Renders the program as text: what = "ir" gives the logical IR as the
 * frontend made it, "train-ir" the logical IR after autodiff (a training
 * step's backward and optimizer) with every value's sharding,
 * "sharded-ir" the partitioned IR, "explain" the sharding decisions,
 * "report" / "report-json" the per-rank report, "schedule" the plan's
 * instruction lists, "loops" the same as the plan holds them (a pipeline
 * stage in loop form: its bodies once, its slot maps, its items), "fused-ir" the partitioned IR with its fused groups
 * as comments, "cuda" the CUDA C kernel of each group with its launch
 * geometry, "after-pass" what the last pass that ran made (as the pass
 * printer gets it; the memory plans after a whole compilation). *text is
 * NUL-terminated, *len (when len is not NULL) its length; free with
 * shardc_free. SHARDC_ERR_USAGE for an unknown `what`. */
SHARDC_API shardc_status shardc_program_emit(const shardc_program *prog, const char *what,
                                             char **text, size_t *len, char **error);

/* Writes output `what` of shardc_program_emit to path, as
 * shardc_program_save_plan writes a plan. */
SHARDC_API shardc_status shardc_program_emit_file(const shardc_program *prog, const char *what,
                                                  const char *path, char **error);

/* The passes of the pipeline in the order they run, by the names
 * shardc_options_print_after takes: the i-th (from 0), NULL past the last. */
SHARDC_API const char *shardc_pass_name(int i);

/* The steps of making a plan from a program, by the names
 * shardc_program_seconds takes: "plan/report" (the JSON report the plan
 * holds), "plan/kernels" (the kernels' CUDA C, then NVRTC or its cache),
 * "plan/lowering" (each stage's instructions), "plan/validation",
 * "plan/loop-form" (a pipeline stage's microbatches rolled into loop
 * form), "plan/bytes" (the file's sections and checksums): the i-th (from
 * 0), NULL past the last. */
SHARDC_API const char *shardc_plan_step_name(int i);

/* The wall time in seconds that a step of prog's compilation took (shardc
 * --time-passes): "frontend" (the model read, checked and lowered to IR,
 * or textual IR parsed and verified), or a pass by its name
 * (shardc_pass_name). -1 for a pass that did not run (fuse without
 * kernels, matmul-parts without --f32-matmul bf16x3, a pass --passes or
 * --stop-after left out) and for any other name. The plan itself is made
 * later, by shardc_program_plan or shardc_program_save_plan (or in memory
 * for the "schedule" and "loops" emits): its steps (shardc_plan_step_name)
 * are those of the last plan made from prog, -1 before one was; the
 * caller times the rest (writing the file). A pipeline compiled for its
 * plan alone (shardc_options_set_plan_only) has its plan made during the
 * compile: "plan" is the wall time that took (its steps, and the time
 * between them), which the compile's time includes and the passes' do
 * not; -1 where there is no such plan. */
SHARDC_API double shardc_program_seconds(const shardc_program *prog, const char *what);

/* ---- plans ---- */

/* A compiled, validated plan (DESIGN.md §4): all the runtime needs. It is
 * held as its file holds it (a pipeline's stages in loop form); each
 * session expands the stages its process runs into a copy of its own, so
 * one plan serves several sessions at once. */
typedef struct shardc_plan shardc_plan;

/* The plan of a compiled program. */
SHARDC_API shardc_status shardc_program_plan(const shardc_program *prog, shardc_plan **out,
                                             char **error);
/* Writes the plan file of a compiled program to path. A regular file (or
 * none) is replaced whole through a temporary file in its folder, renamed
 * into place, so a failure leaves it as it was; a symlink stays and its
 * target is written; a device or FIFO (/dev/null, /dev/stdout, a named
 * pipe) is written straight into, never replaced; a folder is an error.
 * SHARDC_ERR_IO with the file and the reason. Every file the library
 * writes (outputs, params, checkpoints, traces) is written this way. */
SHARDC_API shardc_status shardc_program_save_plan(const shardc_program *prog, const char *path,
                                                  char **error);
/* Whether the library could write path later (as shardc_program_save_plan
 * and the session's save and write calls do), checked before long work so
 * that its results are not lost at the end: for a file (folder 0), the
 * folder it goes into (a symlink's target's, through every link) exists and
 * is writable, and path is not a folder nor a missing name ending in '/';
 * for a folder (folder 1, as shardc_session_save_checkpoint's), no file
 * stands where it or a folder on its way should be, and the nearest folder
 * that exists is writable. A device or FIFO passes. Nothing is made or
 * changed. SHARDC_OK, or SHARDC_ERR_IO with "PATH cannot be written: why"
 * (SHARDC_ERR_USAGE for a NULL path). The check is of this moment: a
 * later write can still fail (a full disk). */
SHARDC_API shardc_status shardc_check_writable(const char *path, int folder, char **error);
/* Reads and validates a plan file. SHARDC_ERR_INPUT for a truncated, corrupt,
 * foreign or newer file, with a message that says which; SHARDC_ERR_IO
 * when it cannot be opened or read. */
SHARDC_API shardc_status shardc_plan_load(const char *path, shardc_plan **out, char **error);
SHARDC_API void shardc_plan_free(shardc_plan *plan);

/* The report the compiler stored in the plan (JSON, as `--report json`). */
SHARDC_API const char *shardc_plan_report(const shardc_plan *plan);
/* The mesh: number of axes, and each axis's name and size; the rank count. */
SHARDC_API int shardc_plan_num_axes(const shardc_plan *plan);
SHARDC_API const char *shardc_plan_axis(const shardc_plan *plan, int i, long long *size);
SHARDC_API long long shardc_plan_ranks(const shardc_plan *plan);

#define SHARDC_MAX_RANK 8

/* A named tensor of the plan: an input, a param, an output or a state
 * (optimizer state, kept and saved like a param), full shape. */
typedef struct shardc_tensor_info {
    const char *name;
    const char *kind;            /* "input", "param", "output", "state" */
    const char *dtype;           /* "f32", "f16", "bf16", "i32" */
    int rank;
    long long dim[SHARDC_MAX_RANK];
    size_t bytes;                /* of the full tensor, row-major */
} shardc_tensor_info;

SHARDC_API int shardc_plan_num_tensors(const shardc_plan *plan);
/* Tensor i (0 <= i < shardc_plan_num_tensors); the strings live as long as
 * the plan. SHARDC_ERR_USAGE when i is out of range. */
SHARDC_API shardc_status shardc_plan_tensor(const shardc_plan *plan, int i,
                                            shardc_tensor_info *info);

/* ---- sessions: running a plan ---- */

typedef struct shardc_session shardc_session;

typedef struct shardc_session_config {
    const char *backend;         /* "cpu" (NULL: "cpu") or "cuda" (the plan's
                                  * kernels on the GPU: runtime/exec/cuda.h) */
    const char *comm;            /* "local": every rank a thread of this process
                                  * (NULL: "local"); "mpi": this process is one
                                  * rank of an MPI job (MPI initialised by the
                                  * caller, or by shardc_mpi_init; world
                                  * size = the plan's ranks);
                                  * "nccl": as "mpi", one process per GPU,
                                  * the plan's collectives by NCCL on the
                                  * GPU (backend "cuda" only; MPI initialised
                                  * with MPI_THREAD_SERIALIZED or more) */
    const char *params_file;     /* safetensors, or NULL (every param made
                                  * by its init from the seed); see
                                  * shardc_session_new */
    const char *inputs_file;     /* safetensors, or NULL */
    unsigned long long seed;     /* for params (and inputs) made by their init */
    int timeout_ms;              /* per collective, send or recv wait (local,
                                  * mpi: the step then fails naming the peers
                                  * that do not answer), per op in flight
                                  * (nccl: the watchdog then aborts the
                                  * communicators); 0: 10 minutes. Nothing
                                  * ends the process: under mpi and nccl the
                                  * caller ends the job (MPI_Abort) after a
                                  * failed step, as its peers may wait for it */
    int trace;                   /* nonzero: time every instruction of every
                                  * run, for shardc_session_write_trace */
    int graph;                   /* nonzero (backend "cuda"): from the second
                                  * run on, the device work between host
                                  * steps runs as CUDA graphs, captured at
                                  * the second run (with "nccl", its
                                  * collectives, sends and receives too) */
    int checkpoint_keep;         /* checkpoints shardc_session_save_checkpoint
                                  * keeps in its folder, the newest; 0: 2 */
    int init_missing;            /* nonzero: a param missing from
                                  * params_file is made by its init from the
                                  * seed (listed by shardc_session_generated)
                                  * instead of an error; as `shardrun
                                  * --init-missing` */
} shardc_session_config;

/* Opens a session on a plan, which must outlive it. Without a params file
 * every param and state is made by its init from the seed, the same full
 * tensor on any mesh; inputs likewise when no inputs file is given (floats
 * normal(1), ids uniform over [0, N) for the N table rows or logit classes
 * they index, zeros when they index none).
 *
 * A params file must fit the plan, nothing lost and nothing made up:
 * SHARDC_ERR_INPUT here when it holds a tensor that is no param or state of
 * the plan (a typo in a weight name, another model's file; the message
 * lists them, each with the plan's nearest name where one is close, and
 * the params the file lacks), or when the inputs file holds a param or a
 * state (it would be ignored there; one file given as both is fine). A
 * param missing from the params file, and neither bound nor resumed, is an
 * error at the run (shardc_session_check_params) that lists them, unless
 * cfg->init_missing, which makes them by their init from the seed (a file
 * holding none of the plan's params stays an error). Optimizer states may
 * be missing: they start from their init (a master copy from its param). */
SHARDC_API shardc_status shardc_session_new(const shardc_plan *plan,
                                            const shardc_session_config *cfg,
                                            shardc_session **out, char **error);

/* Whether backend ("cpu", "cuda") can run on this machine, before any plan
 * is read: for "cuda", libcuda.so.1 is loaded (never linked), cuInit must
 * succeed and a device must be there. SHARDC_ERR_NO_GPU with "no usable
 * CUDA driver: ..." or "no CUDA device: ..." otherwise (shardc_session_new
 * returns the same); SHARDC_ERR_USAGE for an unknown backend. A plan with
 * an instruction the cuda backend cannot run (no kernel for it, an op it
 * lacks) makes shardc_session_new fail with SHARDC_ERR_INPUT, naming the
 * instruction, before anything runs. */
SHARDC_API shardc_status shardc_backend_check(const char *backend, char **error);
/* Whether communicator comm ("local", "mpi", "nccl"; NULL: "local") can
 * run here: for "nccl", libnccl.so.2 is loaded (never linked, NCCL 2.18 or
 * newer) with the CUDA driver. SHARDC_ERR_NO_GPU with "no usable NCCL:
 * ..." otherwise (shardc_session_new returns the same); SHARDC_ERR_USAGE
 * for an unknown communicator. */
SHARDC_API shardc_status shardc_comm_check(const char *comm, char **error);

/* For a host application that does not start MPI itself (Python under
 * mpirun): initialises MPI with MPI_THREAD_SERIALIZED, enough for "mpi"
 * and "nccl", unless it is initialised already; *rank and *size (each may
 * be NULL) get this process's rank in MPI_COMM_WORLD and the world's
 * size. Call it from one thread, before the sessions. SHARDC_ERR_USAGE in
 * a build without MPI, or after MPI was finalised; SHARDC_ERR_PEER when
 * MPI_Init_thread fails. */
SHARDC_API shardc_status shardc_mpi_init(int *rank, int *size, char **error);
/* Finalises MPI if shardc_mpi_init initialised it and it is not finalised
 * yet; otherwise nothing. Every session must be freed first. */
SHARDC_API void shardc_mpi_finalize(void);
SHARDC_API void shardc_session_free(shardc_session *s);

/* Binds the full tensor called name (an input, a param or a state) to
 * `bytes` bytes of host memory, row-major in its dtype; borrowed until the
 * session is freed or the name is bound again. Inputs are read at the
 * start of every run (on the cuda backend into page-locked memory, which
 * the step copies from, so the caller may write the memory again once
 * shardc_session_run returns); params and states at the next run only
 * (then kept, and trained). A
 * bound tensor wins over the files and the seed; so does a bound bf16 or
 * f16 param for its f32 master (the state opt.NAME.master), made from the
 * bound values. */
SHARDC_API shardc_status shardc_session_bind(shardc_session *s, const char *name,
                                             const void *data, size_t bytes, char **error);

/* A tensor in the caller's memory, described as DLPack describes one (a
 * DLTensor converts field by field: device.device_type, device.device_id,
 * data + byte_offset, its dtype's name, ndim, shape, strides). */
enum {
    SHARDC_DEVICE_CPU = 1,       /* host memory (DLPack's kDLCPU) */
    SHARDC_DEVICE_CUDA = 2,      /* device memory of CUDA device device_id
                                  * (kDLCUDA) */
    SHARDC_DEVICE_CUDA_HOST = 3  /* pinned host memory (kDLCUDAHost): read
                                  * and written as host memory */
};

typedef struct shardc_tensor_view {
    int device;                  /* SHARDC_DEVICE_* */
    int device_id;               /* CUDA: the device's ordinal; else 0 */
    void *data;                  /* the element at index (0, 0, ...) */
    const char *dtype;           /* "f32", "f16", "bf16", "i32", "bool" */
    int rank;                    /* 0 .. SHARDC_MAX_RANK */
    const long long *dim;        /* rank sizes (NULL when rank is 0) */
    const long long *strides;    /* rank strides in elements, any sign (0
                                  * repeats an element), or NULL: row-major */
} shardc_tensor_view;

/* Binds the full tensor called name to the caller's view v, read in place
 * with its strides (a transposed or sliced tensor needs no copy): host
 * memory on either backend, or CUDA memory on the cuda backend, where
 * each rank copies its block on the device and the tensor never goes
 * through the host. v's dtype and shape must be the tensor's. Borrowed
 * and read as shardc_session_bind's memory. CUDA memory is read on the
 * session's streams during shardc_session_run: work the caller queued
 * that writes it must be complete first (synchronise its stream).
 * SHARDC_ERR_USAGE, the session unchanged, for no such tensor, another
 * dtype or shape (located in the model), CUDA memory on the cpu backend,
 * or a pointer the CUDA driver does not know as device memory on
 * device_id that holds every element the view reaches. */
SHARDC_API shardc_status shardc_session_bind_view(shardc_session *s, const char *name,
                                                  const shardc_tensor_view *v, char **error);

/* Whether the next run finds every param: each in the params file, bound,
 * or resumed from a checkpoint (or made by its init: without a params file,
 * or with cfg->init_missing). SHARDC_ERR_INPUT with "FILE: the params file
 * lacks N params of the plan: 'a', 'b'" (the first 8, then how many more)
 * otherwise. shardc_session_run checks it first, before anything runs, and
 * its failure leaves the session usable: bind the missing params and run.
 * Under `mpi` every rank reaches the same answer. */
SHARDC_API shardc_status shardc_session_check_params(const shardc_session *s, char **error);

/* Runs one step on every rank this process holds: the forward pass, and
 * for a plan compiled for training also the backward pass and the
 * optimizer update, whose new params and states the next step starts
 * from. On failure the message names the rank and the instruction, and the
 * status says what failed: SHARDC_ERR_INPUT for the data (an id outside
 * its table, a params or inputs file), SHARDC_ERR_IO for a file that
 * cannot be read, SHARDC_ERR_GPU for the GPU, SHARDC_ERR_PEER when another
 * rank failed or stopped (its own failure is reported where it happened:
 * with `local`, the first rank's); after a failure the session can only
 * be freed. Under "mpi", an op that timed out
 * stays MPI's (MPI cannot cancel it): freeing the session then keeps the
 * memory that op may still write, and the caller should end the job. */
SHARDC_API shardc_status shardc_session_run(shardc_session *s, char **error);

/* Writes the measured timeline of every run so far (the session opened
 * with cfg.trace) to path as Chrome trace JSON, in the format of shardc's
 * estimated one (`--trace`): pid = rank, tid 0 compute, tid 1
 * communication, one event per instruction with its run ("step") and
 * index ("instr"); times in microseconds from the first run. Under `mpi`
 * every rank must call it; rank 0 writes the file. SHARDC_ERR_USAGE
 * without tracing or before a run, SHARDC_ERR_IO when the file cannot be
 * written. */
SHARDC_API shardc_status shardc_session_write_trace(shardc_session *s, const char *path,
                                                    char **error);

/* After a run: the full output called name, valid until the next run or the
 * session's end. SHARDC_ERR_USAGE when there is no such output. */
SHARDC_API shardc_status shardc_session_output(const shardc_session *s, const char *name,
                                               const void **data, shardc_tensor_info *info,
                                               char **error);

/* After a run: writes the full output called name into the caller's view
 * dst (its dtype and shape the output's, strides that never put two
 * elements on the same bytes): host memory, or CUDA memory, copied there
 * by the driver before the call returns. SHARDC_ERR_USAGE for no such
 * output, no run yet, another dtype or shape, overlapping strides, CUDA
 * memory that is not device memory holding the whole view. */
SHARDC_API shardc_status shardc_session_output_into(const shardc_session *s, const char *name,
                                                    const shardc_tensor_view *dst,
                                                    char **error);

/* Writes every output of the last run, full shape, as one safetensors file
 * (through a temporary file renamed into place). */
SHARDC_API shardc_status shardc_session_save_outputs(const shardc_session *s, const char *path,
                                                     char **error);

/* The inputs, params and states the last run made from the seed, joined
 * by ", ". */
SHARDC_API const char *shardc_session_generated(const shardc_session *s);

/* The loss of the last step, as a double, for a plan compiled for training.
 * SHARDC_ERR_USAGE when the plan has no loss or no step has succeeded. */
SHARDC_API shardc_status shardc_session_loss(const shardc_session *s, double *loss,
                                             char **error);

/* Writes every param and state, full shape, with the values the next step
 * would start from, as one safetensors file (through a temporary file
 * renamed into place); a file `params_file` reads back. Under the `mpi`
 * communicator every rank must call it (the gathering is collective) and
 * rank 0 writes. SHARDC_ERR_USAGE before the first step, SHARDC_ERR_IO
 * when the file cannot be written. */
SHARDC_API shardc_status shardc_session_save_params(shardc_session *s, const char *path,
                                                    char **error);

/* ---- training: checkpoints and per-step batches ---- */

/* An inputs file (config.inputs_file) may hold an input with one more,
 * leading dim, [N, dims of the input]: N batches, one per step; step k
 * (counting from 1, and on from a resumed checkpoint's step) reads batch
 * k. An input of the input's own shape is read at every step. */

/* The step count: the steps run, plus the step of the checkpoint resumed
 * (shardc_session_resume). */
SHARDC_API long long shardc_session_step(const shardc_session *s);

/* Checks, before running `steps` more steps, that the inputs file has a
 * batch for each, for every input it holds with a step dimension.
 * SHARDC_ERR_INPUT with a message naming the file and the tensor. */
SHARDC_API shardc_status shardc_session_check_steps(const shardc_session *s, long long steps,
                                                    char **error);

/* Writes a sharded checkpoint of every param and state, with the values
 * the next step would start from, into the checkpoint folder dir (made
 * when missing; README.md, "Checkpoints"): a new step folder,
 * dir/step-NNNNNNNN/, holding each rank's own shards as
 * rank-NNNNN.safetensors (a replicated one written once, not by every
 * replica) and index.json (the format, the step count, the mesh, each
 * file's rank, size and CRC-32, and per tensor its kind, dtype, global
 * shape and shards), written under a temporary name and fsync'd; then the
 * pointer dir/latest, replaced atomically, names it; then the checkpoints
 * beyond the newest config.checkpoint_keep are deleted. An interrupted
 * save (a crash, a kill) leaves the previous checkpoint as it was and
 * pointed at; nothing in dir but what saves wrote is ever deleted. Under the `mpi`
 * communicator every rank must call it: each writes its own file, rank 0
 * the index and the pointer once every rank's file is complete.
 * SHARDC_ERR_USAGE before the first step (or after binding a param or
 * resuming, until the next step), SHARDC_ERR_IO when a file cannot be
 * written. */
SHARDC_API shardc_status shardc_session_save_checkpoint(shardc_session *s, const char *dir,
                                                        char **error);

/* Resumes from the checkpoint that dir names, saved on this mesh or any
 * other: a checkpoint folder (the step folder its pointer `latest` names),
 * one of its step folders, or a folder saved by shardc before step
 * folders (an index.json at its top). When the pointer is missing or names
 * a folder that is not complete, the newest complete step folder is taken,
 * and shardc_session_resumed_from says so. The next step reads every
 * param and state from it (each rank reading only the parts of the shard
 * files that overlap its own shard), instead of the params file or the
 * seed (bound tensors still win), and the step count goes on from the
 * checkpoint's. Checked here, before any step: the index (format,
 * version), every param and state of the plan present with the same kind,
 * dtype and shape, no tensor the plan lacks (a checkpoint of another model
 * or optimizer), every shard file this process reads present, with the
 * size and CRC-32 the index gives (read whole: a truncated, damaged or
 * swapped file is refused), and shards covering the tensors.
 * SHARDC_ERR_INPUT with a message naming the file and what is wrong (and
 * the tensor, where there is one); the session is then as before. Under
 * `mpi` every rank must call it (all read the step folder rank 0 finds). */
SHARDC_API shardc_status shardc_session_resume(shardc_session *s, const char *dir,
                                               char **error);

/* The step folder the last shardc_session_resume read (NULL before one),
 * and in *note (when note is not NULL) "" or why it is not the one the
 * folder's pointer names ("ckpt/latest names step-00000007, which is
 * missing or incomplete (no index.json): resumed from the newest complete
 * checkpoint, step-00000006"). Owned by the session. */
SHARDC_API const char *shardc_session_resumed_from(const shardc_session *s, const char **note);

#ifdef __cplusplus
}
#endif

#endif
