/* api.c: the public C API (include/shardc.h) over the internal modules.
 * Each entry point owns its jmp_buf for allocation failures, so the
 * library never exits and no state is shared between calls. */
#include "shardc.h"

#include "frontend/fe.h"
#include "ir/ir.h"
#include "passes/fuse.h"
#include "passes/passes.h"
#include "codegen/codegen.h"
#include "runtime/cuda/nvrtc.h"
#include "api_internal.h"
#include "api_cuda.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct shardc_options {
    fe_options fe;
    fe_define *defines;   /* malloc'd; names malloc'd */
    int ndefines;
    int64_t bucket_bytes; /* gradient buckets; 0: none */
    int narchs;           /* --arch: the kernels' targets (0: the default,
                           * -1: none, a CPU-only plan) */
    int arch[RT_MAX_ARCHS];
    const pass_hw *hw;    /* --hw: the estimated timeline's hardware */
    pass_hw hw_file;      /* --hw FILE.json: a profile of the user's (hw points here) */
    char hw_name[64], hw_desc[256], hw_by[4096];
    int64_t mem_limit;    /* --mem-limit, bytes; 0: none, -1: the hardware's */
    char *cache_dir;      /* NVRTC's disk cache (malloc'd), NULL: none */
    /* the pass pipeline's (passes/passes.h: pass_options) */
    uint32_t only_passes, print_after;
    int stop_after;
    bool no_reasons;      /* shardc_options_set_explain(opt, 0) */
    bool f32_parts;       /* --f32-matmul bf16x3 */
    bool unshared;        /* api_options_set_unshared */
    bool report_only;     /* shardc_options_set_report_only */
    bool plan_only;       /* shardc_options_set_plan_only */
    shardc_pass_printer printer;
    void *printer_user;
};

#define DEFAULT_BUCKET_MB 25

/* The programs the plan holds: the pipeline's stages, else the partitioned
 * module (or the input, when it was partitioned IR). */
static ir_module *const *stages(const shardc_program *p, int *n)
{
    return pass_result_stages(&p->res, n);
}

const char *shardc_version(void) { return SHARDC_VERSION_STRING; }

void shardc_free(void *p) { free(p); }

/* The defaults: what shardc_options_new gives, and what NULL options
 * mean. */
static void options_init(shardc_options *o)
{
    memset(o, 0, sizeof *o);
    o->bucket_bytes = (int64_t)DEFAULT_BUCKET_MB << 20;
    o->hw = pass_hw_default();
    o->stop_after = -1;
    /* every stage's microbatches through every pass, none held once: the
     * same plan and output, slower (tests/diff's check compares the two) */
    const char *e = getenv("SHARDC_EXPERIMENT_UNHELD");
    o->unshared = e && !strcmp(e, "1");
}

void api_options_set_unshared(shardc_options *opt, bool on)
{
    opt->unshared = on;
}

shardc_options *shardc_options_new(void)
{
    shardc_options *o = malloc(sizeof(shardc_options));
    if (o)
        options_init(o);
    return o;
}

/* The passes a comma-separated list names, as bits; "all" (when allowed)
 * is every pass. */
static shardc_status pass_set(const char *what, const char *list, bool all, uint32_t *bits,
                              char **error)
{
    *bits = 0;
    if (all && !strcmp(list, "all")) {
        *bits = (1u << PASS_COUNT) - 1;
        return SHARDC_OK;
    }
    for (const char *s = list;;) {
        size_t n = strcspn(s, ",");
        int id = pass_find(s, n);
        if (id < 0)
            return api_fail(error, SHARDC_ERR_USAGE, "%s '%s': '%.*s' is no pass (the passes: "
                            "%s%s)", what, list, (int)n, s, pass_names(), all ? "; or all" : "");
        *bits |= 1u << id;
        if (!s[n])
            return SHARDC_OK;
        s += n + 1;
    }
}

shardc_status shardc_options_print_after(shardc_options *opt, const char *passes,
                                         shardc_pass_printer fn, void *user, char **error)
{
    uint32_t bits;
    shardc_status st = pass_set("--print-after", passes, true, &bits, error);
    if (st != SHARDC_OK)
        return st;
    opt->print_after = fn ? bits : 0;
    opt->printer = fn;
    opt->printer_user = user;
    return SHARDC_OK;
}

shardc_status shardc_options_stop_after(shardc_options *opt, const char *pass, char **error)
{
    int id = pass_find(pass, strlen(pass));
    if (id < 0)
        return api_fail(error, SHARDC_ERR_USAGE, "--stop-after '%s': no such pass (the passes: "
                        "%s)", pass, pass_names());
    opt->stop_after = id;
    return SHARDC_OK;
}

shardc_status shardc_options_only_passes(shardc_options *opt, const char *passes, char **error)
{
    return pass_set("--passes", passes, false, &opt->only_passes, error);
}

/* "mem_eff_by_class": an object of kernel classes (pass_kclass_name) and
 * their fractions of the memory bandwidth. */
static shardc_status hw_mem_classes(pass_hw *hw, const cJSON *j, const char *path,
                                    char **error)
{
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(j, "mem_eff_by_class");
    if (!mc)
        return SHARDC_OK;
    if (!cJSON_IsObject(mc))
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"mem_eff_by_class\" must be an "
                        "object of kernel classes and fractions", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, mc)
    {
        const char *name = e->string ? e->string : "";
        int c = pass_kclass_find(name, strlen(name));
        if (c < 0) {
            char list[256];
            size_t n = 0;
            for (int k = 0; k < PASS_KC_COUNT && n < sizeof list; k++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "",
                                      pass_kclass_name(k));
            return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"mem_eff_by_class\": '%s' is "
                            "no kernel class (the classes: %s)", path, name, list);
        }
        double x = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(x > 0) || x > 1)
            return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"mem_eff_by_class\": \"%s\" "
                            "must be a positive number of at most 1", path, name);
        hw->class_mem_eff[c] = x;
    }
    return SHARDC_OK;
}

/* The optional table key of a profile (absent: *n stays 0): a list of 1
 * to PASS_HW_MAX_POINTS [x, fraction] pairs in increasing x, x a positive
 * number (what: its name in messages, "FLOPs" or "bytes"), fractions in
 * (0, 1]. */
static shardc_status hw_points(const cJSON *j, const char *key, const char *what,
                               double (*pt)[2], int *n, const char *path, char **error)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!t)
        return SHARDC_OK;
    int len = cJSON_IsArray(t) ? cJSON_GetArraySize(t) : 0;
    if (len < 1 || len > PASS_HW_MAX_POINTS)
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"%s\" must be a list of 1 to "
                        "%d [%s, fraction] pairs", path, key, PASS_HW_MAX_POINTS, what);
    for (int i = 0; i < len; i++) {
        const cJSON *p = cJSON_GetArrayItem(t, i);
        const cJSON *f = cJSON_IsArray(p) && cJSON_GetArraySize(p) == 2 ? cJSON_GetArrayItem(p, 0)
                                                                         : NULL;
        const cJSON *e = f ? cJSON_GetArrayItem(p, 1) : NULL;
        double x = cJSON_IsNumber(f) ? f->valuedouble : -1;
        double eff = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(x > 0) || !isfinite(x) || !(eff > 0) || eff > 1)
            return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"%s\" point %d must be "
                            "[%s, fraction]: a positive number, then one of at most 1", path, key,
                            i + 1, what);
        if (i > 0 && !(x > pt[i - 1][0]))
            return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"%s\" point %d: its %s "
                            "must be above the point before", path, key, i + 1, what);
        pt[i][0] = x;
        pt[i][1] = eff;
    }
    *n = len;
    return SHARDC_OK;
}

/* The optional per-class efficiencies of a profile: "matmul_eff", a table
 * by FLOPs, "intra_eff" and "inter_eff", tables by bytes sent
 * (hw_points), "attention_eff", a fraction in (0, 1], and
 * "mem_eff_by_class" (hw_mem_classes). */
static shardc_status hw_classes(pass_hw *hw, const cJSON *j, const char *path, char **error)
{
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "attention_eff");
    shardc_status st = hw_mem_classes(hw, j, path, error);
    if (st != SHARDC_OK)
        return st;
    if (at) {
        double x = cJSON_IsNumber(at) ? at->valuedouble : -1;
        if (!(x > 0) || x > 1)
            return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"attention_eff\" must be a "
                            "positive number of at most 1", path);
        hw->attn_eff = x;
    }
    st = hw_points(j, "matmul_eff", "FLOPs", hw->matmul_eff, &hw->nmatmul_eff, path, error);
    if (st == SHARDC_OK)
        st = hw_points(j, "intra_eff", "bytes", hw->intra_eff, &hw->nintra_eff, path, error);
    if (st == SHARDC_OK)
        st = hw_points(j, "inter_eff", "bytes", hw->inter_eff, &hw->ninter_eff, path, error);
    return st;
}

/* A hardware profile from a JSON file (--hw FILE.json): every field of
 * pass_hw by its name, numbers positive (the efficiencies at most 1,
 * node_gpus a count), "desc" optional, and the per-class efficiencies
 * (hw_classes) optional. */
static shardc_status hw_from_file(shardc_options *opt, const char *path, char **error)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: cannot open: %s", path, strerror(errno));
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    bool big = n == sizeof buf - 1 && fgetc(f) != EOF;
    fclose(f);
    if (big)
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: larger than a profile (16 KiB)", path);
    buf[n] = 0;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(buf, n, &end, 0);
    size_t at = end && end >= buf && end <= buf + n ? (size_t)(end - buf) : n;
    if (j)
        at = su_json_space(buf, n, at);
    if (!j || at < n) {
        su_loc loc = su_text_loc(buf, at);
        cJSON_Delete(j);
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s:%d:%d: %s", path, loc.line, loc.col,
                        j ? "text after the JSON object" : "not valid JSON here");
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return api_fail(error, SHARDC_ERR_INPUT, "--hw %s: not a JSON object", path);
    }
    static const struct {
        const char *key;
        size_t off;
        double max; /* 0: no bound */
    } fields[] = {
        {"tc_flops", offsetof(pass_hw, tc_flops), 0},
        {"f32_flops", offsetof(pass_hw, f32_flops), 0},
        {"mem_bw", offsetof(pass_hw, mem_bw), 0},
        {"intra_bw", offsetof(pass_hw, intra_bw), 0},
        {"inter_bw", offsetof(pass_hw, inter_bw), 0},
        {"launch_s", offsetof(pass_hw, launch_s), 0},
        {"intra_lat_s", offsetof(pass_hw, intra_lat_s), 0},
        {"inter_lat_s", offsetof(pass_hw, inter_lat_s), 0},
        {"compute_eff", offsetof(pass_hw, compute_eff), 1},
        {"mem_eff", offsetof(pass_hw, mem_eff), 1},
        {"link_eff", offsetof(pass_hw, link_eff), 1},
        {"mem_bytes", offsetof(pass_hw, mem_bytes), 0},
    };
    pass_hw hw;
    memset(&hw, 0, sizeof hw);
    shardc_status st = SHARDC_OK;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(j, "desc");
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(j, "node_gpus");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(j, "calibrated_by");
    if (!cJSON_IsString(name) || !name->valuestring[0] ||
        strlen(name->valuestring) >= sizeof opt->hw_name)
        st = api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"name\" must be a string of 1 to %zu "
                      "characters", path, sizeof opt->hw_name - 1);
    else if (desc && (!cJSON_IsString(desc) || strlen(desc->valuestring) >= sizeof opt->hw_desc))
        st = api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"desc\" must be a string of at most "
                      "%zu characters", path, sizeof opt->hw_desc - 1);
    else if (by && (!cJSON_IsString(by) || strlen(by->valuestring) >= sizeof opt->hw_by))
        st = api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"calibrated_by\" must be a string of "
                      "at most %zu characters", path, sizeof opt->hw_by - 1);
    else if (!cJSON_IsNumber(gpus) || gpus->valuedouble < 1 || gpus->valuedouble > 1 << 20 ||
             gpus->valuedouble != (double)(int)gpus->valuedouble)
        st = api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"node_gpus\" must be a count of GPUs "
                      "per node", path);
    for (size_t i = 0; st == SHARDC_OK && i < sizeof fields / sizeof *fields; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, fields[i].key);
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (!(x > 0) || !isfinite(x) || (fields[i].max && x > fields[i].max))
            st = api_fail(error, SHARDC_ERR_INPUT, "--hw %s: \"%s\" must be a positive number%s",
                          path, fields[i].key, fields[i].max ? " of at most 1" : "");
        else
            *(double *)((char *)&hw + fields[i].off) = x;
    }
    if (st == SHARDC_OK)
        st = hw_classes(&hw, j, path, error);
    if (st == SHARDC_OK) {
        snprintf(opt->hw_name, sizeof opt->hw_name, "%s", name->valuestring);
        snprintf(opt->hw_desc, sizeof opt->hw_desc, "%s", desc ? desc->valuestring : "");
        snprintf(opt->hw_by, sizeof opt->hw_by, "%s", by ? by->valuestring : "");
        hw.name = opt->hw_name;
        hw.desc = opt->hw_desc;
        hw.calibrated_by = opt->hw_by;
        hw.node_gpus = (int)gpus->valuedouble;
        opt->hw_file = hw;
        opt->hw = &opt->hw_file;
    }
    cJSON_Delete(j);
    return st;
}

shardc_status shardc_options_set_hardware(shardc_options *opt, const char *name, char **error)
{
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, ".json"))
        return hw_from_file(opt, name, error);
    const pass_hw *hw = pass_hw_find(name);
    if (!hw)
        return api_fail(error, SHARDC_ERR_USAGE, "--hw '%s': the hardware profiles are %s, or a "
                        "profile of your own in a .json file", name, pass_hw_names());
    opt->hw = hw;
    return SHARDC_OK;
}

shardc_status shardc_options_set_bucket_mb(shardc_options *opt, double mb, char **error)
{
    if (!(mb >= 0) || mb > 1 << 20) /* also NaN */
        return api_fail(error, SHARDC_ERR_USAGE, "--bucket-mb %g: expected 0 (no buckets) to "
                        "%d MiB", mb, 1 << 20);
    opt->bucket_bytes = (int64_t)(mb * (1 << 20));
    return SHARDC_OK;
}

shardc_status shardc_options_set_zero(shardc_options *opt, int stage, const char *axis,
                                      char **error)
{
    if (stage < 0 || stage > 3)
        return api_fail(error, SHARDC_ERR_USAGE, "--zero %d: the ZeRO stages are 0 (none), 1, 2 "
                        "and 3", stage);
    if (axis && strlen(axis) >= sizeof opt->fe.zero_axis)
        return api_fail(error, SHARDC_ERR_USAGE, "--zero %d:%s: the axis name is too long", stage,
                        axis);
    opt->fe.zero_set = true;
    opt->fe.zero = stage;
    snprintf(opt->fe.zero_axis, sizeof opt->fe.zero_axis, "%s", axis ? axis : "");
    return SHARDC_OK;
}

shardc_status shardc_options_set_schedule(shardc_options *opt, const char *schedule,
                                          char **error)
{
    int v = 1, n = 0;
    if (!strcmp(schedule, "gpipe"))
        opt->fe.schedule = IR_SCHED_GPIPE;
    else if (!strcmp(schedule, "1f1b"))
        opt->fe.schedule = IR_SCHED_1F1B;
    else if (sscanf(schedule, "interleaved(%d)%n", &v, &n) == 1 && !schedule[n] && v >= 1 &&
             v <= 1 << 20)
        opt->fe.schedule = IR_SCHED_INTERLEAVED;
    else
        return api_fail(error, SHARDC_ERR_USAGE, "--schedule '%s': the schedules are gpipe, 1f1b "
                        "and interleaved(V), V >= 1", schedule);
    opt->fe.schedule_set = true;
    opt->fe.chunks = v;
    return SHARDC_OK;
}

shardc_status shardc_options_set_microbatches(shardc_options *opt, long long n, char **error)
{
    if (n < 1 || n > 1 << 30)
        return api_fail(error, SHARDC_ERR_USAGE, "--microbatches %lld: expected 1 to 2^30", n);
    opt->fe.microbatches = (int)n;
    return SHARDC_OK;
}

shardc_status shardc_options_set_dtype(shardc_options *opt, const char *dtype, char **error)
{
    ir_dtype t;
    if (!dtype || !ir_dtype_lookup(dtype, strlen(dtype), &t) || t == IR_I32)
        return api_fail(error, SHARDC_ERR_USAGE, "--dtype '%s': expected bf16, f16 or f32",
                        dtype ? dtype : "");
    opt->fe.dtype_set = t != IR_F32;
    opt->fe.dtype = t;
    return SHARDC_OK;
}

void shardc_options_set_recompute(shardc_options *opt, int on)
{
    opt->fe.recompute = on != 0;
}

void shardc_options_set_explain(shardc_options *opt, int on)
{
    opt->no_reasons = !on;
}

void shardc_options_set_report_only(shardc_options *opt, int on)
{
    opt->report_only = on != 0;
}

void shardc_options_set_plan_only(shardc_options *opt, int on)
{
    opt->plan_only = on != 0;
}

void shardc_options_set_keep_gathered(shardc_options *opt, int on)
{
    opt->fe.keep_gathered = on != 0;
}

void shardc_options_set_unroll(shardc_options *opt, int on)
{
    opt->fe.unroll = on != 0;
}

shardc_status shardc_options_set_f32_matmul(shardc_options *opt, const char *mode, char **error)
{
    if (mode && !strcmp(mode, "f32"))
        opt->f32_parts = false;
    else if (mode && !strcmp(mode, "bf16x3"))
        opt->f32_parts = true;
    else
        return api_fail(error, SHARDC_ERR_USAGE, "--f32-matmul %s: the modes are f32 (the "
                        "default) and bf16x3", mode ? mode : "(null)");
    return SHARDC_OK;
}

long long shardc_options_mem_limit(const shardc_options *opt)
{
    return opt->mem_limit < 0 ? (long long)opt->hw->mem_bytes : (long long)opt->mem_limit;
}

shardc_status shardc_options_set_mem_limit(shardc_options *opt, const char *size, char **error)
{
    if (!strcmp(size, "hw")) {
        opt->mem_limit = -1;
        return SHARDC_OK;
    }
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1},          {"B", 1},           {"KB", 1e3},        {"MB", 1e6},
                 {"GB", 1e9},      {"TB", 1e12},       {"K", 1024.0},      {"KiB", 1024.0},
                 {"M", 1048576.0}, {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
                 {"T", 1099511627776.0}, {"TiB", 1099511627776.0}};
    char *end;
    errno = 0;
    double v = strtod(size, &end);
    for (size_t i = 0; end != size && !errno && i < sizeof units / sizeof *units; i++) {
        double bytes = v * units[i].scale;
        if (!strcmp(end, units[i].unit) && bytes >= 1 && bytes < 9e18) {
            opt->mem_limit = (int64_t)bytes;
            return SHARDC_OK;
        }
    }
    return api_fail(error, SHARDC_ERR_USAGE, "--mem-limit '%s': expected a size such as 80GiB, "
                    "75GB, 512MiB or a number of bytes, or hw (the --hw profile's memory)", size);
}

shardc_status shardc_options_set_archs(shardc_options *opt, const char *list, char **error)
{
    if (list && !strcmp(list, "none")) {
        opt->narchs = -1;
        return SHARDC_OK;
    }
    su_status err;
    int arch[RT_MAX_ARCHS], n;
    if (!rt_parse_archs(list, arch, &n, &err))
        return api_fail(error, SHARDC_ERR_USAGE, "%s", err.msg);
    memcpy(opt->arch, arch, sizeof arch);
    opt->narchs = n;
    return SHARDC_OK;
}

/* The oldest of a program's targets (sm_NN as NN), 0 for none. */
static int oldest_arch(const shardc_program *p)
{
    int old = 0;
    for (int i = 0; i < p->narchs; i++)
        old = old == 0 || p->arch[i] < old ? p->arch[i] : old;
    return old;
}

shardc_status shardc_options_set_cache_dir(shardc_options *opt, const char *dir, char **error)
{
    char *copy = dir && *dir ? strdup(dir) : NULL;
    if (dir && *dir && !copy)
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    free(opt->cache_dir);
    opt->cache_dir = copy;
    return SHARDC_OK;
}

void shardc_options_free(shardc_options *opt)
{
    if (!opt)
        return;
    free(opt->cache_dir);
    for (int i = 0; i < opt->ndefines; i++)
        free((char *)opt->defines[i].name);
    free(opt->defines);
    free(opt);
}

shardc_status shardc_options_set_mesh(shardc_options *opt, const char *sizes, char **error)
{
    fe_options f = opt->fe;
    f.nmesh = 0;
    f.mesh_too_long = false;
    const char *p = sizes;
    for (;;) {
        if (*p < '0' || *p > '9')
            return api_fail(error, SHARDC_ERR_USAGE, "--mesh '%s': expected sizes like 8x4", sizes);
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE)
            return api_fail(error, SHARDC_ERR_USAGE, "--mesh '%s': size too large", sizes);
        if (f.nmesh < IR_MAX_AXES)
            f.mesh[f.nmesh++] = v;
        else
            f.mesh_too_long = true;
        p = end;
        if (*p == 0)
            break;
        if (*p != 'x')
            return api_fail(error, SHARDC_ERR_USAGE, "--mesh '%s': expected sizes like 8x4", sizes);
        p++;
    }
    opt->fe.nmesh = f.nmesh;
    opt->fe.mesh_too_long = f.mesh_too_long;
    memcpy(opt->fe.mesh, f.mesh, sizeof f.mesh);
    return SHARDC_OK;
}

shardc_status shardc_options_define(shardc_options *opt, const char *name, long long value,
                                    char **error)
{
    bool ident = name && (name[0] == '_' || (name[0] | 32) >= 'a') && (name[0] | 32) <= 'z';
    for (const char *p = name; ident && *p; p++)
        ident = *p == '_' || ((*p | 32) >= 'a' && (*p | 32) <= 'z') || (*p >= '0' && *p <= '9');
    if (!ident)
        return api_fail(error, SHARDC_ERR_USAGE, "-D: '%s' is not a constant's name",
                    name ? name : "(null)");
    for (int i = 0; i < opt->ndefines; i++)
        if (!strcmp(opt->defines[i].name, name)) {
            opt->defines[i].value = value;
            return SHARDC_OK;
        }
    fe_define *d = realloc(opt->defines, (size_t)(opt->ndefines + 1) * sizeof *d);
    char *copy = strdup(name);
    if (!d || !copy) {
        free(copy);
        if (d)
            opt->defines = d;
        return api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    opt->defines = d;
    d[opt->ndefines++] = (fe_define){copy, value};
    opt->fe.defines = opt->defines;
    opt->fe.ndefines = opt->ndefines;
    return SHARDC_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Parses IR text: its mesh is fixed, so --mesh must agree with it. */
static ir_module *compile_ir(const shardc_options *opt, const su_src *src, su_diag *diag,
                             jmp_buf *oom)
{
    ir_module *m = ir_parse(src, diag, oom);
    if (!m || !opt->fe.nmesh)
        return m;
    bool same = opt->fe.nmesh == m->mesh.naxes && !opt->fe.mesh_too_long;
    for (int i = 0; same && i < m->mesh.naxes; i++)
        same = opt->fe.mesh[i] == m->mesh.size[i];
    if (!same) {
        su_loc at = m->mesh.loc;
        su_src text = *src; /* the places count from after a byte order mark */
        su_src_prepare(&text, diag);
        ir_module_free(m); /* first: the message may fail to allocate */
        su_error_at(diag, &text, at, "--mesh differs from the mesh of this IR file, which is "
                    "fixed");
        return NULL;
    }
    return m;
}

/* A model that cannot be trained or pipelined: the message at the place in
 * src at fault (LANGUAGE.md §11), as the frontend reports its errors,
 * through the compilation's diag (empty: the frontend succeeded). */
static shardc_status located_error(const su_src *src, su_loc at, su_diag *diag, char **error,
                                   const char *fmt, ...) SU_PRINTF(5, 6);
static shardc_status located_error(const su_src *src, su_loc at, su_diag *diag, char **error,
                                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    su_verror_at(diag, src, at, fmt, ap);
    va_end(ap);
    if (error)
        *error = su_buf_take(&diag->msg);
    return SHARDC_ERR_INPUT;
}

/* A pipeline's plan built as its stages are made, a batch at a time
 * (shardc_options_set_plan_only; pass_options.batch). */
typedef struct plan_stream {
    shardc_program *p;
    cg_plan_stream *cs;     /* NULL until the first batch */
    su_status err;          /* the plan builder's failure */
    bool failed;            /* it failed: err */
    bool over;              /* a stage over --mem-limit: the plan not built on */
    double seconds[API_PLAN_STEPS]; /* the plan's steps (api_plan_times) */
    double handed;          /* the wall time of it all */
} plan_stream;

/* A compilation past the frontend: its program and messages. */
typedef struct passes_run {
    shardc_program *p;
    const shardc_options *opt;
    const su_src *src;
    su_diag *diag;
    char **error;
    su_buf text;            /* the logical IR while it is printed */
    su_buf err;             /* the passes' messages */
    plan_stream ps;
    shardc_status st;
} passes_run;

/* Whether a plan of opt's has kernels: for the --arch targets; by default
 * (no --arch) only when NVRTC is here. */
static bool wants_kernels(const shardc_options *opt)
{
    return opt->narchs > 0 || (opt->narchs == 0 && rt_nvrtc_available());
}

typedef struct mem_part {
    const char *what;
    int64_t bytes;
} mem_part;

/* Whether a stage's peak exceeds p->mem_limit; if so, why, in out (its
 * text replaced): the first such stage, and what fills it, largest first. */
static bool over_limit(const shardc_program *p, su_buf *out)
{
    for (int s = 0; s < p->res.nplanned && p->res.mp; s++) {
        const pass_memplan *mp = &p->res.mp[s];
        if (mp->arena_bytes <= p->mem_limit)
            continue;
        out->len = 0;
        char where[32] = "the plan", b1[32], b2[32], b3[32];
        if (p->res.nplanned > 1)
            snprintf(where, sizeof where, "stage %d", s);
        su_buf_printf(out, "%s needs %s per rank, over --mem-limit %s by %s:", where,
                      su_size_text(mp->arena_bytes, b1), su_size_text(p->mem_limit, b2),
                      su_size_text(mp->arena_bytes - p->mem_limit, b3));
        mem_part part[] = {{"activations (the most live at once)", mp->activations},
                    {"optimizer state", mp->optimizer_state},
                    {"gradients", mp->gradients},
                    {"params", mp->params}};
        for (int i = 0; i < 4; i++) { /* largest first; ties keep this order */
            int k = i;
            for (int j = i + 1; j < 4; j++)
                if (part[j].bytes > part[k].bytes)
                    k = j;
            if (k != i) {
                mem_part t = part[i];
                part[i] = part[k];
                part[k] = t;
            }
            su_buf_printf(out, "%s %s %s", i ? "," : "", part[i].what,
                          su_size_text(part[i].bytes, b1));
        }
        return true;
    }
    return false;
}

/* pass_options.batch of a plan-only compilation: stages s0 to s1 - 1,
 * fused and planned, into the plan; none past a stage over --mem-limit
 * (over_limit says which once the pipeline is through, as without
 * plan_only). */
static bool plan_batch(void *ctx, ir_module *const *st, int n, int s0, int s1,
                       const pass_result *r, su_buf *err)
{
    plan_stream *w = ctx;
    const shardc_program *p = w->p;
    for (int s = s0; s < s1 && !w->over; s++)
        w->over = p->mem_limit > 0 && r->mp[s].arena_bytes > p->mem_limit;
    if (w->over)
        return true;
    double t0 = su_seconds();
    if (!w->cs) {
        cg_plan_options o; /* copied by the stream */
        api_plan_options(p, r, w->seconds + 1, &o);
        if (!(w->cs = cg_plan_stream_new(n, &o, &w->err, err->oom)))
            su_oom(err->oom);
    }
    bool ok = cg_plan_stream_add(w->cs, st, s0, s1);
    w->handed += su_seconds() - t0;
    w->failed = !ok;
    if (!ok)
        su_buf_puts(err, w->err.msg);
    return ok;
}

/* The plan of a plan-only compilation, its stages all in: its report,
 * then its bytes (p->plan). */
static void plan_end(passes_run *r)
{
    plan_stream *w = &r->ps;
    shardc_program *p = r->p;
    double t0 = su_seconds();
    int n;
    ir_module *const *st = stages(p, &n);
    r->text.len = 0;
    pass_report_from(st, n, &p->res.pipe, p->res.cost, p->res.lanes, p->hw, p->mem_limit, true,
                     &r->text);
    double t1 = su_seconds();
    w->seconds[0] = t1 - t0;
    w->failed = !cg_plan_stream_end(w->cs, r->text.s, &p->plan, &p->plan_len);
    w->handed += su_seconds() - t0;
    cg_plan_stream_free(w->cs);
    w->cs = NULL;
    if (!w->failed) {
        memcpy(p->plan_times->s, w->seconds, sizeof w->seconds);
        p->plan_s = w->handed;
    }
}

/* Keeps the logical text, then runs the pass pipeline (passes/passes.c).
 * A model that cannot be trained or pipelined is the user's error, at its
 * place in the source; so is partitioned IR from a file that fails a
 * verifier. Any other failure past the frontend is a bug in shardc. */
static void passes(void *arg)
{
    passes_run *r = arg;
    shardc_program *p = r->p;
    const shardc_options *opt = r->opt;
    su_buf *err = &r->err;
    su_loc at = {0, 0};
    ir_module *m = p->res.m;
    ir_print(m, &r->text);
    p->logical_ir = su_buf_take(&r->text);
    bool from_file = m->partitioned; /* textual IR that is partitioned already */
    if (from_file && m->stage >= 0 && !opt->only_passes) {
        r->st = located_error(r->src, at, r->diag, r->error, "invalid partitioned IR: a "
                              "stage's program is not a whole partitioned module");
        return;
    }
    p->no_reasons = opt->no_reasons;
    if (opt->f32_parts && p->narchs > 0 && oldest_arch(p) < 80) {
        r->st = api_fail(r->error, SHARDC_ERR_USAGE, "--f32-matmul bf16x3 runs f32 matmuls on "
                         "bf16 tensor cores, which sm_%d lacks: %s", oldest_arch(p),
                         opt->narchs > 0 ? "every --arch target must be sm_80 or newer"
                                         : "the default targets are those of this machine's GPUs; "
                                           "give --arch sm_80 or newer");
        return;
    }
    pass_options po = {.bucket_bytes = opt->bucket_bytes, .kernels = wants_kernels(opt),
                       .f32_parts = opt->f32_parts,
                       .min_arch = oldest_arch(p),
                       .no_reasons = opt->no_reasons,
                       .only = opt->only_passes, .print_after = opt->print_after,
                       .stop_after = opt->stop_after, .unshared = opt->unshared,
                       .report_only = opt->report_only, .hw = opt->hw,
                       .print = opt->printer,
                       .print_user = opt->printer_user};
    p->partial = po.only || po.stop_after >= 0;
    p->report_only = opt->report_only;
    p->plan_only = opt->plan_only && !opt->report_only;
    if (p->plan_only) { /* a pipeline's stages built into the plan as they are made */
        r->ps.p = p;
        po.report_only = true;
        po.batch = plan_batch;
        po.batch_ctx = &r->ps;
        po.batch_stages = cg_plan_batch_stages();
    }
    pass_status st = pass_run_pipeline(m, &po, &p->res, err, &at);
    p->res.m = m; /* the program's to free, whatever the pipeline did */
    bool over = st == PASS_OK && p->mem_limit > 0 && !p->partial && over_limit(p, &r->text);
    if (!over && st == PASS_OK && r->ps.cs)
        plan_end(r);
    if (r->ps.failed) /* as a plan written after the compile fails */
        r->st = r->ps.err.kind == SU_NOMEM
                    ? api_fail(r->error, SHARDC_ERR_NOMEM, "out of memory")
                : r->ps.err.kind == SU_USAGE /* kernels asked for, no NVRTC here */
                    ? api_fail(r->error, SHARDC_ERR_USAGE, "%s", r->ps.err.msg)
                    : api_fail(r->error, SHARDC_ERR_INTERNAL,
                               "internal error: writing the plan: %s", r->ps.err.msg);
    else if (over)
        r->st = located_error(r->src, (su_loc){0, 0}, r->diag, r->error, "%s", r->text.s);
    else if (st == PASS_OK)
        r->st = SHARDC_OK;
    else if (st == PASS_ERR_USAGE)
        r->st = api_fail(r->error, SHARDC_ERR_USAGE, "%s", err->s);
    else if (st == PASS_ERR_INPUT)
        r->st = located_error(r->src, at, r->diag, r->error, "%s", err->s);
    else if (from_file)
        r->st = located_error(r->src, at, r->diag, r->error, "invalid partitioned IR: %s",
                              err->s);
    else
        r->st = api_fail(r->error, SHARDC_ERR_INTERNAL, "internal error: %s", err->s);
}

/* Runs the passes on p; their messages are freed here after a failure
 * too (p is the caller's). */
static shardc_status run_passes(shardc_program *p, const shardc_options *opt, const su_src *src,
                                su_diag *diag, jmp_buf *oom, char **error)
{
    passes_run r = {.p = p, .opt = opt, .src = src, .diag = diag, .error = error};
    su_buf_init(&r.text, oom);
    su_buf_init(&r.err, oom);
    bool ok = su_guarded(oom, passes, &r);
    cg_plan_stream_free(r.ps.cs); /* after a failure */
    su_buf_free(&r.text);
    su_buf_free(&r.err);
    if (!ok)
        su_oom(oom);
    return r.st;
}

/* After a compilation: nothing may jump to the compilation's jmp_buf any
 * more, so a later call that allocated into p's modules instead of taking
 * its own jmp_buf would abort, not jump into a frame that is gone. */
static void detach(shardc_program *p)
{
    int n;
    ir_module *const *st = stages(p, &n);
    ir_module *mods[] = {p->res.m, p->res.part};
    for (int i = 0; i < n + 2; i++) {
        ir_module *m = i < n ? st[i] : mods[i - n];
        if (m)
            m->oom = m->arena.oom = NULL;
    }
    p->res.pipe.arena.oom = NULL;
    for (int s = 0; s < p->res.nplanned; s++) {
        if (p->res.fusion)
            p->res.fusion[s].arena.oom = NULL;
        if (p->res.mp)
            p->res.mp[s].arena.oom = p->res.mp[s].scratch.oom = NULL;
    }
}

/* A compilation: its jmp_buf for allocation failures, and what it made,
 * freed by compile whichever way it ended. */
typedef struct compile_run {
    jmp_buf oom;
    const shardc_options *opt;
    const su_src *src;
    su_diag diag;
    shardc_program *p;
    char **error;
    shardc_status st;
} compile_run;

static void compile_work(void *arg)
{
    compile_run *c = arg;
    const shardc_options *opt = c->opt;
    double t0 = su_seconds();
    ir_module *m = ends_with(c->src->name, ".ir") ? compile_ir(opt, c->src, &c->diag, &c->oom)
                                                  : fe_compile(c->src, &opt->fe, &c->diag, &c->oom);
    double frontend_s = su_seconds() - t0;
    if (!m) {
        c->st = c->diag.internal ? SHARDC_ERR_INTERNAL : SHARDC_ERR_INPUT;
        if (c->error)
            *c->error = su_buf_take(&c->diag.msg);
        return;
    }
    shardc_program *p = c->p = calloc(1, sizeof *p);
    if (!p) {
        ir_module_free(m);
        c->st = api_fail(c->error, SHARDC_ERR_NOMEM, "out of memory");
        return;
    }
    p->res.m = m;
    p->frontend_s = frontend_s;
    p->plan_times = malloc(sizeof *p->plan_times);
    if (!p->plan_times || pthread_mutex_init(&p->plan_times->lock, NULL) != 0) {
        free(p->plan_times);
        p->plan_times = NULL;
        c->st = api_fail(c->error, SHARDC_ERR_NOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < API_PLAN_STEPS; i++)
        p->plan_times->s[i] = -1;
    p->narchs = opt->narchs;
    p->cache_dir = opt->cache_dir ? strdup(opt->cache_dir) : NULL;
    p->source = strdup(c->src->name);
    p->hw_copy = *opt->hw; /* the options may go first */
    snprintf(p->hw_name, sizeof p->hw_name, "%s", opt->hw->name);
    snprintf(p->hw_desc, sizeof p->hw_desc, "%s", opt->hw->desc);
    if (opt->hw->calibrated_by)
        snprintf(p->hw_by, sizeof p->hw_by, "%s", opt->hw->calibrated_by);
    p->hw_copy.name = p->hw_name;
    p->hw_copy.desc = p->hw_desc;
    p->hw_copy.calibrated_by = opt->hw->calibrated_by ? p->hw_by : NULL;
    p->hw = &p->hw_copy;
    p->mem_limit = opt->mem_limit < 0 ? (int64_t)opt->hw->mem_bytes : opt->mem_limit;
    memcpy(p->arch, opt->arch, sizeof p->arch);
    if (p->narchs == 0 && rt_nvrtc_available()) /* the default: resolved here, once */
        p->narchs = rt_default_archs(p->arch);
    c->st = (opt->cache_dir && !p->cache_dir) || !p->source
                ? api_fail(c->error, SHARDC_ERR_NOMEM, "out of memory")
                : run_passes(p, opt, c->src, &c->diag, &c->oom, c->error);
}

/* Compiles into *out. */
static shardc_status compile(const shardc_options *opt, const su_src *src,
                             shardc_program **out, char **error)
{
    compile_run c = {.opt = opt, .src = src, .error = error};
    su_diag_init(&c.diag, &c.oom);
    if (!su_catch(&c.oom, compile_work, &c))
        c.st = api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    su_diag_free(&c.diag);
    if (c.st != SHARDC_OK) {
        shardc_program_free(c.p);
        return c.st;
    }
    detach(c.p);
    *out = c.p;
    return SHARDC_OK;
}

shardc_status shardc_compile_string(const shardc_options *opt, const char *filename,
                                    const char *text, size_t len, shardc_program **out,
                                    char **error)
{
    shardc_options defaults;
    if (!opt) {
        options_init(&defaults);
        opt = &defaults;
    }
    *out = NULL;
    if (error)
        *error = NULL;
    su_src src = {filename ? filename : "<string>", text, len};
    return compile(opt, &src, out, error);
}

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO or pipe";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a file";
}

/* Reads the model at path into *text (malloc'd, *len bytes): a regular
 * file of at most SHARDC_MAX_MODEL_MB, checked before anything is read, so
 * /dev/urandom or a FIFO is refused at once rather than read or waited on. */
static shardc_status read_model(const char *path, char **text, size_t *len, char **error)
{
    const size_t max = (size_t)SHARDC_MAX_MODEL_MB << 20;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return api_fail(error, SHARDC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    shardc_status rc = SHARDC_OK;
    if (fstat(fd, &st) != 0)
        rc = api_fail(error, SHARDC_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = api_fail(error, SHARDC_ERR_IO, "%s: cannot read a model from %s, only from a "
                      "regular file", path, file_kind(st.st_mode));
    else if ((uint64_t)st.st_size > max)
        rc = api_fail(error, SHARDC_ERR_IO, "%s: %lld bytes, more than the %d MiB a model "
                      "may have", path, (long long)st.st_size, SHARDC_MAX_MODEL_MB);
    /* one byte more than the size: a file that grew since is caught too */
    size_t cap = rc == SHARDC_OK ? (size_t)st.st_size + 1 : 0, n = 0;
    char *buf = rc == SHARDC_OK ? malloc(cap) : NULL;
    if (rc == SHARDC_OK && !buf)
        rc = api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    while (rc == SHARDC_OK && n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = api_fail(error, SHARDC_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    if (rc == SHARDC_OK && n == cap)
        rc = api_fail(error, SHARDC_ERR_IO, "%s: the file grew while it was read", path);
    close(fd);
    if (rc != SHARDC_OK) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return SHARDC_OK;
}

shardc_status shardc_compile_file(const shardc_options *opt, const char *path,
                                  shardc_program **out, char **error)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    shardc_status st = read_model(path, &text, &len, error);
    if (st != SHARDC_OK)
        return st;
    st = shardc_compile_string(opt, path, text, len, out, error);
    free(text);
    return st;
}

void shardc_program_free(shardc_program *prog)
{
    if (!prog)
        return;
    pass_result_free(&prog->res);
    ir_module_free(prog->res.m);
    free(prog->logical_ir);
    free(prog->plan);
    free(prog->cache_dir);
    free(prog->source);
    if (prog->plan_times)
        pthread_mutex_destroy(&prog->plan_times->lock);
    free(prog->plan_times);
    free(prog);
}

/* --explain-sharding: each value's sharding and reason, then each inserted
 * collective or slice with what needed it and its bytes per rank. */
static void explain(const shardc_program *p, su_buf *b)
{
    su_buf_puts(b, "# shardings of the logical program\n");
    pass_explain_print(p->res.m, &p->res.ex, b);
    su_buf_puts(b, "# collectives and slices of the partitioned program (per rank)\n");
    const ir_module *m = p->res.part;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (ir_ops[op->code].cls != IR_C_COMM && op->code != IR_SLICE)
            continue;
        const ir_value *r = op->res[0];
        const char *why = r->id < p->res.nwhy && p->res.why[r->id] ? p->res.why[r->id]
                          : r->id >= p->res.nwhy ? "a bucket of gradients, synchronised in one "
                                               "collective (--bucket-mb)"
                                             : "";
        su_buf_printf(b, "%s over", ir_ops[op->code].name);
        for (int k = 0; k < op->a->naxes; k++)
            su_buf_printf(b, " %s", m->mesh.name[op->a->axes[k]]);
        su_buf_printf(b, " (line %d, %.0f bytes per rank): %s\n", op->loc.line,
                      pass_op_bytes(m, op), why);
    }
}

/* The estimated timeline writes every rank's events up to this many, then
 * each stage's first rank only (a 4096-rank trace would not open). */
#define TRACE_MAX_EVENTS 2000000

/* An output being rendered: what it holds, freed by render whichever
 * way it ended. */
typedef struct render_run {
    jmp_buf oom;
    const shardc_program *prog;
    int k;
    su_buf b, err;
    char *text;             /* the result (malloc'd) */
    size_t len;
    char **error;
    shardc_status st;
} render_run;

static void render_work(void *arg)
{
    render_run *r = arg;
    const shardc_program *prog = r->prog;
    su_buf *b = &r->b;
    const ir_module *part = prog->res.part ? prog->res.part : prog->res.m;
    int n;
    if (r->k == 8) {
        if (prog->res.last >= 0)
            pass_result_print(&prog->res, prog->res.last, b);
        else /* no pass ran (--stop-after a pass this input does not take) */
            ir_print(prog->res.m, b);
    } else if (r->k == 7) {
        ir_module *const *st = stages(prog, &n);
        double step;
        const pass_memplan *mp = prog->res.nplanned == n ? prog->res.mp : NULL;
        if (!pass_timeline(st, n, api_fusion(prog, n), mp, prog->hw, TRACE_MAX_EVENTS, b, &step,
                           &r->err)) {
            r->st = api_fail(r->error, SHARDC_ERR_INTERNAL, "%s", r->err.s);
            return;
        }
    } else if (r->k == 6) { /* the stage programs, as the verify pass left them */
        pass_result_print(&prog->res, PASS_VERIFY, b);
    } else if (r->k == 5)
        ir_print(prog->res.m, b);
    else if (r->k == 1)
        ir_print(part, b);
    else if (r->k == 2 && prog->res.part && prog->no_reasons) {
        r->st = api_fail(r->error, SHARDC_ERR_USAGE, "the program was compiled without its "
                         "explanation (shardc_options_set_explain(opt, 0)): compile it again "
                         "with it");
        return;
    } else if (r->k == 2 && prog->res.part)
        explain(prog, b);
    else if (r->k == 2)
        su_buf_puts(b, "# the input is partitioned IR: there is nothing to explain\n");
    else {
        ir_module *const *st = stages(prog, &n);
        if (prog->res.ncost == n) /* a report-only compilation's stages, gone */
            pass_report_from(st, n, &prog->res.pipe, prog->res.cost, prog->res.lanes,
                             prog->hw, prog->mem_limit, r->k == 4, b);
        else
            pass_report_on(st, n, &prog->res.pipe, prog->res.mp, api_fusion(prog, n),
                           prog->hw, prog->mem_limit, r->k == 4, b);
    }
    r->len = b->len;
    r->text = su_buf_take(b);
}

void api_drop_estimate(const shardc_program *prog)
{
    pass_result *r = &((shardc_program *)prog)->res; /* the program's own, not const */
    if (!r->estimate)
        return;
    pass_result_drop_estimate(r);
    /* the stages' threads made them in arenas of their own, which the
     * plan's steps, on other threads, would not reuse: given back */
    malloc_trim(0);
}

/* Renders output k of shardc_program_emit (under the program's lock: a
 * plan made on another thread may drop the estimate, api_fusion). */
static shardc_status render(const shardc_program *prog, int k, char **text, size_t *len,
                            char **error)
{
    render_run r = {.prog = prog, .k = k, .error = error};
    su_buf_init(&r.b, &r.oom);
    su_buf_init(&r.err, &r.oom);
    pthread_mutex_lock(&prog->plan_times->lock);
    bool done = su_catch(&r.oom, render_work, &r);
    pthread_mutex_unlock(&prog->plan_times->lock);
    if (!done)
        r.st = api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    su_buf_free(&r.b);
    su_buf_free(&r.err);
    if (r.st != SHARDC_OK) {
        free(r.text);
        return r.st;
    }
    if (len)
        *len = r.len;
    *text = r.text;
    return SHARDC_OK;
}

const char *shardc_pass_name(int i)
{
    return i >= 0 && i < PASS_COUNT ? pass_name((pass_id)i) : NULL;
}

const char *shardc_plan_step_name(int i)
{
    /* the report's, then codegen.h's CG_T_* in their order */
    static const char *const name[API_PLAN_STEPS] = {
        "plan/report", "plan/kernels", "plan/lowering", "plan/validation", "plan/loop-form",
        "plan/bytes"};
    return i >= 0 && i < API_PLAN_STEPS ? name[i] : NULL;
}

double shardc_program_seconds(const shardc_program *prog, const char *what)
{
    if (!prog || !what)
        return -1;
    if (!strcmp(what, "frontend"))
        return prog->frontend_s;
    if (!strcmp(what, "plan"))
        return prog->plan ? prog->plan_s : -1;
    for (int id = 0; id < PASS_COUNT; id++)
        if (!strcmp(what, pass_name((pass_id)id)))
            return prog->res.seconds[id];
    for (int i = 0; i < API_PLAN_STEPS; i++)
        if (!strcmp(what, shardc_plan_step_name(i))) {
            api_plan_times *t = prog->plan_times;
            pthread_mutex_lock(&t->lock);
            double s = t->s[i];
            pthread_mutex_unlock(&t->lock);
            return s;
        }
    return -1;
}

shardc_status shardc_program_emit(const shardc_program *prog, const char *what, char **text,
                                  size_t *len, char **error)
{
    *text = NULL;
    static const char *const kinds[] = {"ir",       "sharded-ir", "explain",  "report",
                                        "report-json", "train-ir", "stage-ir", "trace",
                                        "after-pass"};
    int k = -1;
    for (int i = 0; i < 9; i++)
        if (!strcmp(what, kinds[i]))
            k = i;
    if (prog->partial && k != 8)
        return api_partial(prog, what, error);
    if (prog->report_only && k != 3 && k != 4)
        return api_report_only(what, error);
    if (prog->plan_only && k != 3 && k != 4)
        return api_plan_only(what, error);
    if (!strcmp(what, "fused-ir") || !strcmp(what, "cuda")) {
        int n;
        ir_module *const *st = stages(prog, &n);
        return api_emit_kernels(st, prog->res.fused ? prog->res.fusion : NULL, n, what,
                                prog->arch, prog->narchs, text, len, error);
    }
    if (!strcmp(what, "schedule"))
        return api_program_schedule(prog, text, len, error);
    if (!strcmp(what, "loops"))
        return api_program_loops(prog, text, len, error);
    if (k < 0)
        return api_fail(error, SHARDC_ERR_USAGE, "unknown output '%s' (this version emits: ir, "
                    "train-ir, sharded-ir, stage-ir, fused-ir, cuda, explain, report, report-json, "
                    "schedule, loops, trace, after-pass)", what);
    if (k == 0) {
        *text = strdup(prog->logical_ir);
        if (len && *text)
            *len = strlen(*text);
        return *text ? SHARDC_OK : api_fail(error, SHARDC_ERR_NOMEM, "out of memory");
    }
    return render(prog, k, text, len, error);
}

shardc_status shardc_program_emit_file(const shardc_program *prog, const char *what,
                                       const char *path, char **error)
{
    char *text;
    size_t len;
    shardc_status st = shardc_program_emit(prog, what, &text, &len, error);
    if (st != SHARDC_OK)
        return st;
    su_status err;
    int rc = su_write_file(path, text, len, &err);
    free(text);
    return rc ? api_status(error, &err) : SHARDC_OK;
}
