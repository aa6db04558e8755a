/* test_cuda_graph.c: what the CUDA backend decides about a step without a
 * GPU (runtime/cuda/cuda_step.h), and the trace's device times.
 *
 * - Graph spans, for every example's plan with kernels (its own mesh, and
 *   mlp and transformer on 2x2, pipeline on 2x2x2), against a brute force
 *   over each instruction's role: every device instruction in exactly one
 *   span, no host instruction in one, a span starts and ends with device
 *   work, and two spans have a host instruction between them (so they are
 *   as long as they can be), and each split made by a collective or i32
 *   arithmetic; every input is inside a span (its host part is done before
 *   the run). mlp and transformer on one rank are one graph (the
 *   constants are memsets, the inputs copies or the init kernel); mlp on 2x2 has
 *   no collective inside a graph and at most one graph more than
 *   collectives. --graph with the cpu backend or nccl is refused.
 * - Error words: the encoding round trips, a lower index makes a larger
 *   word (atomicMax keeps the lowest, the CPU backend's), 0 is no error;
 *   the message of an embedding kernel and a cross_entropy kernel is the
 *   CPU backend's own for the same bad id or label (a CPU session run on
 *   the same plan with the same data), after "stage S, instruction I (op,
 *   kernel NAME): "; embedding_grad and cross_entropy_grad by their text.
 *   The checks of ids and labels of a vocabulary-parallel step run on the
 *   host (i32), outside kernels.
 * - Const words: each dtype's bits of the session's fill.
 * - The trace: rt_trace_add_device's conversion from device milliseconds
 *   after the start event to seconds from the origin, and a kernel's
 *   event written under the kernel's name.
 *
 * Needs NVRTC for the kernels (not a GPU): without it, "skipped: no
 * NVRTC", exit 77. */
#include "shardc.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/cuda_step.h"
#include "runtime/exec/session.h"
#include "runtime/exec/trace.h"
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_cuda_graph.XXXXXX";

/* The plan of examples/file (text NULL) or of text, on mesh (NULL: its
 * own), with kernels for the default archs; NULL on failure. */
static rt_plan *compile(const char *file, const char *text, const char *mesh)
{
    char path[4200], out[4300];
    su_status err;
    snprintf(path, sizeof path, "%s/examples/%s", check_repo_dir(), file);
    snprintf(out, sizeof out, "%s/plan", tmpdir);
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    char *e = NULL;
    bool ok = (!mesh || shardc_options_set_mesh(opt, mesh, &e) == SHARDC_OK) &&
              shardc_options_set_archs(opt, "sm_80,sm_90", &e) == SHARDC_OK &&
              shardc_options_set_cache_dir(opt, getenv("SHARDC_CACHE_DIR"), &e) == SHARDC_OK &&
              (text ? shardc_compile_string(opt, file, text, strlen(text), &prog, &e)
                    : shardc_compile_file(opt, path, &prog, &e)) == SHARDC_OK &&
              shardc_program_save_plan(prog, out, &e) == SHARDC_OK;
    rt_plan *p = ok ? rt_plan_load(out, &err) : NULL;
    if (!p)
        fprintf(stderr, "  %s on %s: %s\n", file, mesh ? mesh : "its mesh", e ? e : err.msg);
    CHECK(p != NULL);
    unlink(out);
    shardc_free(e);
    shardc_program_free(prog);
    shardc_options_free(opt);
    return p;
}

/* ---- graph spans ---- */

/* The spans of stage st against the roles, instruction by instruction;
 * returns the number of spans (-1 on a failed check). */
static int check_spans(const rt_plan *p, int st, bool dev, rt_graph_span *span)
{
    const rt_program *g = &p->stage[st];
    int32_t *at = rt_cuda_kernel_map(p, st);
    int32_t n = rt_cuda_graph_spans(p, st, dev, span);
    CHECK(at != NULL && n >= 0);
    if (!at || n < 0) {
        free(at);
        return -1;
    }
    int bad = check_failures;
    int32_t s = 0, prev_end = -1;
    for (int i = 0; i < g->ninstr; i++) {
        rt_step_role role = rt_cuda_step_role(p, st, at, i, dev);
        while (s < n && i >= span[s].end)
            s++;
        bool inside = s < n && i >= span[s].first;
        if (role == RT_STEP_DEVICE)
            CHECK(inside);
        if (role == RT_STEP_HOST)
            CHECK(!inside);
    }
    for (s = 0; s < n; s++) {
        CHECK(span[s].first < span[s].end && (s == 0 || span[s].first >= prev_end));
        CHECK(rt_cuda_step_role(p, st, at, span[s].first, dev) == RT_STEP_DEVICE);
        CHECK(rt_cuda_step_role(p, st, at, span[s].end - 1, dev) == RT_STEP_DEVICE);
        bool host_between = s == 0;
        for (int i = prev_end; s > 0 && i < span[s].first; i++)
            host_between |= rt_cuda_step_role(p, st, at, i, dev) == RT_STEP_HOST;
        CHECK(host_between);
        prev_end = span[s].end;
    }
    free(at);
    return check_failures == bad ? n : -1;
}

/* The op of instruction i of stage st. */
static int op_at(const rt_plan *p, int st, int i)
{
    return p->stage[st].instr[i].op;
}

static void check_example_spans(const char *file, const char *mesh, int32_t want_stage0)
{
    rt_plan *p = compile(file, NULL, mesh);
    if (!p)
        return;
    for (int st = 0; st < p->nstages; st++) {
        rt_graph_span *span = malloc(((size_t)p->stage[st].ninstr / 2 + 1) * sizeof *span);
        int n = span ? check_spans(p, st, false, span) : -1;
        CHECK(n >= 1);
        printf("%s on %s, stage %d: %d instructions, %d graph%s\n", file, mesh ? mesh : "its mesh",
               st, p->stage[st].ninstr, n, n == 1 ? "" : "s");
        if (st == 0 && want_stage0 > 0)
            CHECK_INT(n, want_stage0);
        /* what splits two graphs is a host instruction: on these plans a
         * collective or i32 arithmetic */
        for (int s = 1; s < n; s++) {
            bool split = false;
            for (int i = span[s - 1].end; i < span[s].first; i++) {
                int op = op_at(p, st, i);
                split |= rt_ops[op].cls == RT_K_COMM || rt_cuda_on_host(&p->stage[st].instr[i]);
            }
            CHECK(split);
        }
        for (int i = 0; n > 0 && i < p->stage[st].ninstr; i++) {
            if (op_at(p, st, i) != RT_OP_INPUT)
                continue;
            int inside = 0;
            for (int s = 0; s < n; s++)
                inside += i >= span[s].first && i < span[s].end;
            CHECK_INT(inside, 1);
        }
        free(span);
    }
    rt_plan_free(p);
}

/* Every example (examples/X.sh) on its own mesh. */
static void check_all_examples(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/examples", check_repo_dir());
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".sh") != 0)
            continue;
        /* one graph where nothing is on the host */
        bool one = !strcmp(e->d_name, "mlp.sh") || !strcmp(e->d_name, "transformer.sh");
        check_example_spans(e->d_name, NULL, one ? 1 : 0);
        n++;
    }
    if (d)
        closedir(d);
    CHECK(n >= 3);
}

/* mlp on 2x2: the graphs sit between the collectives, each of which is
 * outside every graph. */
static void check_mlp_2x2(void)
{
    rt_plan *p = compile("mlp.sh", NULL, "2x2");
    if (!p)
        return;
    const rt_program *g = &p->stage[0];
    rt_graph_span *span = malloc(((size_t)g->ninstr / 2 + 1) * sizeof *span);
    int n = span ? check_spans(p, 0, false, span) : -1;
    int ncomm = 0;
    for (int i = 0; i < g->ninstr; i++)
        ncomm += rt_ops[g->instr[i].op].cls == RT_K_COMM;
    CHECK(ncomm > 0);
    CHECK(n >= 2 && n <= ncomm + 1);
    for (int s = 0; s < n; s++)
        for (int i = span[s].first; i < span[s].end; i++)
            CHECK(rt_ops[g->instr[i].op].cls != RT_K_COMM);
    free(span);
    rt_plan_free(p);
}

/* With the collectives, sends and receives on the device (--comm nccl):
 * each inside a graph (check_spans: every device instruction is), so the
 * graphs are fewer than with them on the host, and only i32 arithmetic
 * on the host would split them: every example on 2x2 (each stage of
 * pipeline on 2x2x2) is one graph a step (want), where through the host
 * mlp is 4 and transformer 23. */
static void check_comm_on_device(const char *file, const char *mesh, int want)
{
    rt_plan *p = compile(file, NULL, mesh);
    if (!p)
        return;
    for (int st = 0; st < p->nstages; st++) {
        const rt_program *g = &p->stage[st];
        size_t room = ((size_t)g->ninstr / 2 + 1) * sizeof(rt_graph_span);
        rt_graph_span *span = malloc(room), *host = malloc(room);
        int n = span ? check_spans(p, st, true, span) : -1;
        int on_host = host ? check_spans(p, st, false, host) : -1;
        CHECK(n >= 1 && n < on_host);
        if (want > 0) /* every stage */
            CHECK_INT(n, want);
        int ncomm = 0, inside = 0;
        for (int i = 0; n > 0 && i < g->ninstr; i++)
            if (rt_ops[g->instr[i].op].cls == RT_K_COMM) {
                ncomm++;
                for (int s = 0; s < n; s++)
                    inside += i >= span[s].first && i < span[s].end;
            }
        CHECK(ncomm > 0);
        CHECK_INT(inside, ncomm);
        printf("%s on %s, stage %d, comm on the device: %d graph%s (%d with it on the host), "
               "holding its %d collectives, sends and receives\n", file, mesh, st, n,
               n == 1 ? "" : "s", on_host, ncomm);
        free(span);
        free(host);
    }
    rt_plan_free(p);
}

/* --graph with another backend: refused by the library too. */
static void check_graph_options(void)
{
    su_status err;
    rt_session_opts o = {.backend = RT_BACKEND_CUDA, .comm = RT_COMM_LOCAL, .graph = true};
    CHECK(rt_session_graph_check(&o, &err) == 0);
    o.comm = RT_COMM_MPI;
    CHECK(rt_session_graph_check(&o, &err) == 0);
    o.comm = RT_COMM_NCCL;
    CHECK(rt_session_graph_check(&o, &err) == 0);
    o.comm = RT_COMM_LOCAL;
    o.backend = RT_BACKEND_CPU;
    CHECK(rt_session_graph_check(&o, &err) != 0);
    CHECK_STR(err.msg, "CUDA graphs need the cuda backend");

    char path[4200], *e = NULL;
    snprintf(path, sizeof path, "%s/examples/mlp.sh", check_repo_dir());
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    shardc_plan *plan = NULL;
    shardc_session *s = NULL;
    CHECK(shardc_options_set_archs(opt, "none", &e) == SHARDC_OK);
    CHECK(shardc_compile_file(opt, path, &prog, &e) == SHARDC_OK);
    CHECK(prog && shardc_program_plan(prog, &plan, &e) == SHARDC_OK);
    shardc_session_config cfg = {.backend = "cpu", .graph = 1};
    CHECK_INT(plan ? (int)shardc_session_new(plan, &cfg, &s, &e) : -1, SHARDC_ERR_USAGE);
    CHECK(s == NULL);
    CHECK_STR(e, "CUDA graphs need the cuda backend");
    shardc_free(e);
    shardc_plan_free(plan);
    shardc_program_free(prog);
    shardc_options_free(opt);
}

/* ---- error words ---- */

static void check_words(void)
{
    int64_t index = -1;
    int32_t id = 0;
    CHECK(!rt_cuda_error_decode(0, &index, &id));
    static const struct {
        int64_t index;
        int32_t id;
    } cases[] = {{0, -1}, {5, 9}, {17, 50000}, {0xfffffffe, INT32_MIN}, {1, INT32_MAX}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t w = rt_cuda_error_word(cases[c].index, cases[c].id);
        CHECK(w != 0);
        CHECK(rt_cuda_error_decode(w, &index, &id));
        CHECK_INT(index, cases[c].index);
        CHECK_INT(id, cases[c].id);
    }
    /* atomicMax keeps the lowest index, whatever the ids */
    CHECK(rt_cuda_error_word(3, -7) > rt_cuda_error_word(4, 100));
    CHECK(rt_cuda_error_word(0, INT32_MIN) > rt_cuda_error_word(1, INT32_MAX));
}

/* A training step with an embedding (and its gradient) and a
 * cross_entropy (and its gradient), each a kernel. */
static const char xent_model[] = "mesh dp\n"
                                 "input  ids : i32[4, 3] shard(dp, _)\n"
                                 "input  lab : i32[4, 3] shard(dp, _)\n"
                                 "param  t   : f32[8, 6] = normal(1.0)\n"
                                 "loss = cross_entropy(embedding(t, ids), lab)\n"
                                 "output loss\n"
                                 "train loss with sgd(lr = 0.1)\n";

/* xent_model with a loss whose gradient autodiff makes between the
 * cross_entropy and its gradient (mean(e * e)'s, a value of e's shape), so
 * that the gradient keeps a kernel of its own, which checks the labels
 * too; in xent_model the loss's kernel computes the gradient (fuse.c's
 * xgrad_fits) and checks them once. */
static const char xent_apart_model[] = "mesh dp\n"
                                       "input  ids : i32[4, 3] shard(dp, _)\n"
                                       "input  lab : i32[4, 3] shard(dp, _)\n"
                                       "param  t   : f32[8, 6] = normal(1.0)\n"
                                       "e = embedding(t, ids)\n"
                                       "loss = cross_entropy(e, lab) + mean(e * e)\n"
                                       "output loss\n"
                                       "train loss with sgd(lr = 0.1)\n";

/* The kernel of p (stage 0) whose checked instruction has opcode op. */
static int32_t kernel_checking(const rt_plan *p, int op)
{
    for (int k = 0; k < p->nkernels; k++) {
        int32_t i = rt_cuda_checked_instr(p, &p->kernel[k]);
        if (i >= 0 && p->stage[0].instr[i].op == op)
            return k;
    }
    return -1;
}

/* The CPU backend's message for one run of p with ids and labels. */
static void cpu_error(const rt_plan *p, const int32_t *ids, const int32_t *lab, su_status *err)
{
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .backend = RT_BACKEND_CPU, .seed = 1};
    rt_session *s = rt_session_new(p, &o, err);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(rt_session_bind(s, "ids", ids, 12 * sizeof *ids, err) == 0);
    CHECK(rt_session_bind(s, "lab", lab, 12 * sizeof *lab, err) == 0);
    CHECK(rt_session_run(s, err) != 0);
    rt_session_free(s);
}

/* The kernel's message for (index, id) is "FILE:L:C: stage 0,
 * instruction I (op, kernel NAME): " (the op's place in the model first,
 * as the CPU backend's) then the CPU backend's text after "rank R:
 * FILE:L:C: instruction I (op): ". */
static void check_like_cpu_in(const rt_plan *p, const char *file, int op, int64_t index,
                              int32_t id, const char *cpu)
{
    int32_t k = kernel_checking(p, op);
    CHECK(k >= 0);
    if (k < 0)
        return;
    int32_t i = rt_cuda_checked_instr(p, &p->kernel[k]);
    su_status msg;
    char want[1024], head[384], where[256];
    rt_instr_where(p, &p->stage[0].instr[i], where, sizeof where);
    CHECK(!strncmp(where, file, strlen(file)));
    rt_cuda_error_message(p, k, rt_cuda_error_word(index, id), msg.msg, sizeof msg.msg);
    snprintf(head, sizeof head, "%sinstruction %d (%s): ", where, (int)i, rt_ops[op].name);
    if (!strncmp(cpu, "rank ", 5) && strchr(cpu, ':')) /* whichever rank failed first */
        cpu = strchr(cpu, ':') + 2;
    CHECK(!strncmp(cpu, head, strlen(head)));
    snprintf(want, sizeof want, "%sstage 0, instruction %d (%s, kernel %s): %s", where, (int)i,
             rt_ops[op].name, p->kernel[k].name, cpu + strlen(head));
    CHECK_STR(msg.msg, want);
}

static void check_like_cpu(const rt_plan *p, int op, int64_t index, int32_t id,
                           const char *cpu)
{
    check_like_cpu_in(p, "xent.sh:", op, index, id, cpu);
}

/* A vocabulary-parallel step on 2 ranks (table and logits split over tp):
 * its checks of ids and labels (check_ids, check_labels, i32 alone) are
 * kernels of their own on the device, as is the amax of i32 that finds
 * the rank's first row, so they split no graph (with the collectives on
 * the device the step is one), and an id or a label
 * outside its range fails the run with the CPU backend's words (a CPU
 * session of the same plan, ranks as threads) after "stage 0,
 * instruction I (check_ids, kernel NAME): ". */
static void check_vocab_checks(void)
{
    static const char model[] = "mesh tp\n"
                                "input  ids : i32[2, 2]\n"
                                "input  lab : i32[2, 2]\n"
                                "param  wte : f32[64, 4] shard(tp, _) = normal(0.02)\n"
                                "param  wlm : f32[4, 64] shard(_, tp) = normal(0.02)\n"
                                "loss = cross_entropy(embedding(wte, ids) @ wlm, lab)\n"
                                "output loss\n"
                                "train loss with sgd(lr = 0.1)\n";
    rt_plan *p = compile("vocab.sh", model, "2");
    if (!p)
        return;
    int32_t *at = rt_cuda_kernel_map(p, 0);
    CHECK(at != NULL);
    int seen[2] = {0, 0};
    for (int i = 0; at && i < p->stage[0].ninstr; i++) {
        int op = op_at(p, 0, i);
        if (op != RT_OP_CHECK_IDS && op != RT_OP_CHECK_LABELS)
            continue;
        seen[op == RT_OP_CHECK_LABELS]++;
        CHECK(at[i] >= 0);
        CHECK_INT(rt_cuda_step_role(p, 0, at, i, false), RT_STEP_DEVICE);
        CHECK_INT(rt_cuda_step_role(p, 0, at, i, true), RT_STEP_DEVICE);
    }
    CHECK(seen[0] >= 1 && seen[1] >= 1);
    rt_graph_span *span = malloc(((size_t)p->stage[0].ninstr / 2 + 1) * sizeof *span);
    /* with the collectives on the device, nothing is on the host: the amax
     * of the rank's slice of row numbers (i32) is a kernel too */
    int host = 0, amax = 0;
    for (int i = 0; at && i < p->stage[0].ninstr; i++) {
        host += rt_cuda_step_role(p, 0, at, i, true) == RT_STEP_HOST;
        amax += op_at(p, 0, i) == RT_OP_AMAX && at[i] >= 0 &&
                p->stage[0].instr[i].out_t.dtype == RT_I32;
    }
    CHECK_INT(host, 0);
    CHECK_INT(amax, 2);
    CHECK(span && check_spans(p, 0, true, span) == 1);
    free(span);
    free(at);
    static const int32_t ids[2][4] = {{0, 70, 1, -2}, {0, 1, 2, 3}};
    static const int32_t lab[2][4] = {{0, 1, 2, 3}, {5, 63, 64, 9}};
    for (int c = 0; c < 2; c++) {
        su_status cpu;
        rt_session_opts o = {.comm = RT_COMM_LOCAL, .backend = RT_BACKEND_CPU, .seed = 1};
        rt_session *s = rt_session_new(p, &o, &cpu);
        CHECK(s != NULL);
        if (!s)
            break;
        CHECK(rt_session_bind(s, "ids", ids[c], sizeof ids[c], &cpu) == 0);
        CHECK(rt_session_bind(s, "lab", lab[c], sizeof lab[c], &cpu) == 0);
        CHECK(rt_session_run(s, &cpu) != 0);
        rt_session_free(s);
        CHECK(cpu.kind == SU_INPUT);
        CHECK(strstr(cpu.msg, c == 0 ? "embedding id 70 at index 1 is outside the table's 64 rows"
                                     : "cross_entropy label 64 at index 2 is outside the 64 "
                                       "classes (0..63)") != NULL);
        check_like_cpu_in(p, "vocab.sh:", c == 0 ? RT_OP_CHECK_IDS : RT_OP_CHECK_LABELS,
                          c == 0 ? 1 : 2, c == 0 ? 70 : 64, cpu.msg);
    }
    rt_plan_free(p);
}

/* A division of i32 (index arithmetic, here of an input by another,
 * broadcast) is a kernel of its own, so a step that divides its ids splits
 * no graph and has no host work in it; a zero divisor fails the run with
 * the CPU backend's words at the same result index (the first: the lowest
 * such index of the rank's result, 3 here, the error word's), after
 * "stage 0, instruction I (div, kernel NAME): ". */
static void check_div(void)
{
    static const char model[] = "mesh dp\n"
                                "input a : i32[4, 6] shard(dp, _)\n"
                                "input b : i32[6]\n"
                                "x = a / b\n"
                                "q = cast(x, f32) * 2.0\n"
                                "output q\n";
    rt_plan *p = compile("div.sh", model, "2");
    if (!p)
        return;
    int32_t *at = rt_cuda_kernel_map(p, 0);
    CHECK(at != NULL);
    int divs = 0, host = 0;
    for (int i = 0; at && i < p->stage[0].ninstr; i++) {
        host += rt_cuda_step_role(p, 0, at, i, true) == RT_STEP_HOST ||
                rt_cuda_step_role(p, 0, at, i, false) == RT_STEP_HOST;
        if (op_at(p, 0, i) != RT_OP_DIV)
            continue;
        divs++;
        CHECK(at[i] >= 0);
        CHECK_INT(rt_cuda_step_role(p, 0, at, i, false), RT_STEP_DEVICE);
    }
    CHECK_INT(divs, 1);
    CHECK_INT(host, 0);
    rt_graph_span *span = malloc(((size_t)p->stage[0].ninstr / 2 + 1) * sizeof *span);
    CHECK(span && check_spans(p, 0, true, span) == 1);
    free(span);
    free(at);
    int32_t a[24], b[6] = {3, -2, 5, 0, 1, -1};
    for (int i = 0; i < 24; i++)
        a[i] = i - 7;
    su_status cpu;
    rt_session_opts o = {.comm = RT_COMM_LOCAL, .backend = RT_BACKEND_CPU, .seed = 1};
    rt_session *s = rt_session_new(p, &o, &cpu);
    CHECK(s != NULL);
    if (s) {
        CHECK(rt_session_bind(s, "a", a, sizeof a, &cpu) == 0);
        CHECK(rt_session_bind(s, "b", b, sizeof b, &cpu) == 0);
        CHECK(rt_session_run(s, &cpu) != 0);
        rt_session_free(s);
        CHECK(cpu.kind == SU_INPUT);
        CHECK(strstr(cpu.msg, "div: i32 division by zero at result index 3") != NULL);
        check_like_cpu_in(p, "div.sh:", RT_OP_DIV, 3, 0, cpu.msg);
    }
    rt_plan_free(p);
}

/* "xent.sh:L:C: " of the instruction kernel k checks. */
static const char *checked_where(const rt_plan *p, int32_t k, char *buf, size_t size)
{
    return rt_instr_where(p, &p->stage[0].instr[rt_cuda_checked_instr(p, &p->kernel[k])], buf,
                          size);
}

/* The message of p's kernel whose checked instruction is op (name), for
 * the error word of index and id: the place, "stage 0, instruction I
 * (name, kernel K): " and text. present: whether p has such a kernel. */
static void check_kernel_message(const rt_plan *p, int op, bool present, const char *name,
                                 int64_t index, int32_t id, const char *text)
{
    int32_t k = kernel_checking(p, op);
    CHECK(present == (k >= 0));
    if (k < 0)
        return;
    su_status msg;
    char want[768], where[256];
    rt_cuda_error_message(p, k, rt_cuda_error_word(index, id), msg.msg, sizeof msg.msg);
    snprintf(want, sizeof want, "%sstage 0, instruction %d (%s, kernel %s): %s",
             checked_where(p, k, where, sizeof where),
             (int)rt_cuda_checked_instr(p, &p->kernel[k]), name, p->kernel[k].name, text);
    CHECK(where[0]);
    CHECK_STR(msg.msg, want);
}

static void check_messages_of(const char *model, bool apart)
{
    rt_plan *p = compile("xent.sh", model, NULL);
    if (!p)
        return;
    int32_t ids[12] = {0, 1, 2, 3, 4, 9, 6, 7, 1, 2, 3, 4};
    int32_t lab[12] = {0, 1, 6, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    int32_t good_ids[12] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4};
    su_status cpu;
    cpu_error(p, ids, lab, &cpu);
    CHECK(strstr(cpu.msg, "embedding id 9 at index 5 is outside the table's 8 rows") != NULL);
    CHECK(cpu.kind == SU_INPUT); /* the data's fault */
    check_like_cpu(p, RT_OP_EMBEDDING, 5, 9, cpu.msg);
    cpu_error(p, good_ids, lab, &cpu);
    CHECK(strstr(cpu.msg, "cross_entropy label 6 at index 2 is outside the 6 classes (0..5)") != NULL);
    CHECK(cpu.kind == SU_INPUT);
    check_like_cpu(p, RT_OP_XENT, 2, 6, cpu.msg);

    /* cross_entropy_grad's kernel apart checks the labels a second time;
     * where the loss's kernel computes the gradient, it has checked them */
    check_kernel_message(p, RT_OP_XENT_GRAD, apart, "cross_entropy_grad", 11, -1,
                         "cross_entropy_grad label -1 at index 11 is outside the 6 classes "
                         "(0..5)");
    check_kernel_message(p, RT_OP_EMBEDDING_GRAD, true, "embedding_grad", 0, 8,
                         "embedding_grad id 8 at index 0 is outside the table's 8 rows");
    /* the other kernels check nothing */
    int checking = 0;
    for (int k = 0; k < p->nkernels; k++)
        checking += rt_cuda_checked_instr(p, &p->kernel[k]) >= 0;
    CHECK_INT(checking, apart ? 4 : 3);
    rt_plan_free(p);
}

static void check_messages(void)
{
    check_messages_of(xent_model, false);
    check_messages_of(xent_apart_model, true);
}

/* ---- const words ---- */

static void check_const_words(void)
{
    rt_instr in;
    memset(&in, 0, sizeof in);
    int bytes = 0;
    in.value = 1.0;
    in.out_t.dtype = RT_F32;
    CHECK_INT(rt_cuda_const_word(&in, &bytes), 0x3f800000);
    CHECK_INT(bytes, 4);
    in.out_t.dtype = RT_F16;
    CHECK_INT(rt_cuda_const_word(&in, &bytes), 0x3c00);
    CHECK_INT(bytes, 2);
    in.out_t.dtype = RT_BF16;
    in.value = -2.0;
    CHECK_INT(rt_cuda_const_word(&in, &bytes), 0xc000);
    CHECK_INT(bytes, 2);
    in.out_t.dtype = RT_I32;
    in.value = -3.0;
    CHECK_INT(rt_cuda_const_word(&in, &bytes), 0xfffffffd);
    CHECK_INT(bytes, 4);
    in.out_t.dtype = RT_F32;
    in.value = 3.0517578125e-05; /* 2^-15: exact in f32 */
    CHECK_INT(rt_cuda_const_word(&in, &bytes), 0x38000000);
}

/* ---- the trace ---- */

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-9;
}

static void check_trace(void)
{
    rt_trace t = {0};
    /* the device passed the start event 0.5 s after the origin */
    rt_trace_add_device(&t, 3, 1, 2, 0.5, 1.25f, 2.5f);
    rt_trace_add_device(&t, 4, -1, 2, 0.5, 3.0f, 2.0f); /* ends before it begins */
    CHECK_INT(t.n, 2);
    if (t.n == 2) {
        CHECK(near(t.ev[0].t0, 0.50125) && near(t.ev[0].t1, 0.5025));
        CHECK_INT(t.ev[0].kernel, 1);
        CHECK_INT(t.ev[0].step, 2);
        CHECK(near(t.ev[1].t0, 0.503) && near(t.ev[1].t1, 0.503));
        CHECK_INT(t.ev[1].kernel, -1);
    }
    rt_trace_add(&t, 5, 2, 0.6, 0.7);
    CHECK_INT(t.ev[2].kernel, -1);

    rt_plan *p = compile("xent.sh", xent_model, NULL);
    if (p) {
        int32_t k = kernel_checking(p, RT_OP_EMBEDDING);
        int32_t i = k >= 0 ? p->kernel[k].instr[p->kernel[k].ninstr - 1] : 0;
        rt_trace one = {0};
        rt_trace_add_device(&one, i, k, 0, 0.5, 1.25f, 2.5f);
        char path[4200], want[512];
        su_status err;
        snprintf(path, sizeof path, "%s/trace.json", tmpdir);
        CHECK(rt_trace_write(path, p, &one, 1, "cuda", "local", &err) == 0);
        FILE *f = fopen(path, "r");
        char text[8192] = "";
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        text[n] = 0;
        if (f)
            fclose(f);
        snprintf(want, sizeof want, "{\"name\": \"%s\", \"cat\": \"kernel\", \"ph\": \"X\", "
                 "\"pid\": 0, \"tid\": 0, \"ts\": 501250.000, \"dur\": 1250.000, \"args\": "
                 "{\"instr\": %d, \"step\": 0, \"op\": \"embedding\", \"instrs\": 1}}",
                 k >= 0 ? p->kernel[k].name : "?", (int)i);
        CHECK(strstr(text, want) != NULL);
        if (!strstr(text, want))
            fprintf(stderr, "  want %s\n  in %s\n", want, text);
        CHECK(strstr(text, "\"backend\": \"cuda\"") != NULL);
        unlink(path);
        rt_trace_free(&one);
        rt_plan_free(p);
    }
    rt_trace_free(&t);
}

int main(void)
{
    if (!rt_nvrtc_available()) {
        printf("skipped: no NVRTC\n");
        return 77;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    check_graph_options();
    check_words();
    check_const_words();
    check_messages();
    check_vocab_checks();
    check_div();
    check_trace();
    check_all_examples();
    check_example_spans("mlp.sh", "2x2", 0);
    check_example_spans("transformer.sh", "2x2", 0);
    check_example_spans("pipeline.sh", "2x2x2", 0);
    check_mlp_2x2();
    check_comm_on_device("mlp.sh", "2x2", 1);
    check_comm_on_device("transformer.sh", "2x2", 1);
    check_comm_on_device("pipeline.sh", "2x2x2", 1);
    check_comm_on_device("moe.sh", "2x2", 1);
    check_comm_on_device("llama.sh", "2x2", 1);
    check_comm_on_device("gpt2.sh", "2x2", 1);
    rmdir(tmpdir);
    return CHECK_DONE();
}
