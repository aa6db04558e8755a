/* nvrtc.c: NVRTC compilation and its disk cache (nvrtc.h). Without
 * SHARDC_HAVE_NVRTC (no CUDA toolkit at build time) the same functions
 * exist and say that NVRTC is not available. */
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/cuda_driver.h"
#include "support/support.h"

#include "runtime/plan/plan.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef SHARDC_HAVE_NVRTC
#include <nvrtc.h>
#endif

static const int default_archs[] = {80, 90};

/* Without NVRTC (not built in, or its library not loadable) any arch
 * from 10 to 999 is taken: nothing will be compiled for it. */
static bool any_arch(int arch)
{
    return arch >= 10 && arch <= 999;
}

/* ---- architectures ---- */

bool rt_local_arch(int *arch, su_status *err)
{
    rt_cu_status why;
    const rt_cu_api *cu = rt_cu_load(&why, err);
    int count = 0, major = 0, minor = 0;
    rt_cu_device dev;
    if (!cu)
        return false;
    if (!RT_CU_CHECK(cu, DeviceGetCount(&count), err))
        return false;
    if (count < 1)
        return su_fail(err, SU_GPU, "no CUDA device"), false;
    if (!RT_CU_CHECK(cu, DeviceGet(&dev, 0), err) ||
        !RT_CU_CHECK(cu, DeviceGetAttribute(&major, RT_CU_ATTR_CC_MAJOR, dev), err) ||
        !RT_CU_CHECK(cu, DeviceGetAttribute(&minor, RT_CU_ATTR_CC_MINOR, dev), err))
        return false;
    *arch = major * 10 + minor;
    return true;
}

/* The default targets, found once per process: the compute capabilities
 * of the machine's GPUs as NVML (libnvidia-ml.so.1, the driver's, loaded
 * at run time) reports them, without starting CUDA in the process: a host
 * application that compiles and then forks workers that use the GPU must
 * not find CUDA started in them, and NVML's start is lighter than
 * cuInit's. */
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;
static int defaults[RT_MAX_ARCHS], ndefaults;

int rt_default_archs_pick(const int *cc, int ncc, int *arch)
{
    int n = 0;
    for (int i = 0; i < ncc; i++) {
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= arch[k] == cc[i];
        if (dup || n == RT_MAX_ARCHS || !rt_nvrtc_supports(cc[i]))
            continue;
        int at = n++; /* ascending, as --arch lists them */
        while (at > 0 && arch[at - 1] > cc[i]) {
            arch[at] = arch[at - 1];
            at--;
        }
        arch[at] = cc[i];
    }
    if (n > 0)
        return n;
    memcpy(arch, default_archs, sizeof default_archs);
    return (int)(sizeof default_archs / sizeof *default_archs);
}

/* NVML's calls, as nvml.h declares them (nvmlReturn_t: 0 is success). */
typedef int (*nvml_void_fn)(void);
typedef int (*nvml_count_fn)(unsigned int *count);
typedef int (*nvml_handle_fn)(unsigned int index, void **device);
typedef int (*nvml_cc_fn)(void *device, int *major, int *minor);

/* The compute capability of each GPU NVML sees into cc (room for
 * RT_MAX_ARCHS); how many, 0 without NVML or a GPU. */
static int nvml_capabilities(int *cc)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return 0;
    nvml_void_fn init = (nvml_void_fn)(uintptr_t)dlsym(lib, "nvmlInit_v2");
    nvml_void_fn shutdown = (nvml_void_fn)(uintptr_t)dlsym(lib, "nvmlShutdown");
    nvml_count_fn count = (nvml_count_fn)(uintptr_t)dlsym(lib, "nvmlDeviceGetCount_v2");
    nvml_handle_fn handle = (nvml_handle_fn)(uintptr_t)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvml_cc_fn capability = (nvml_cc_fn)(uintptr_t)dlsym(lib, "nvmlDeviceGetCudaComputeCapability");
    int n = 0;
    if (init && shutdown && count && handle && capability && init() == 0) {
        unsigned int ndev = 0;
        if (count(&ndev) != 0)
            ndev = 0;
        for (unsigned int i = 0; i < ndev && n < RT_MAX_ARCHS; i++) {
            void *dev = NULL;
            int major = 0, minor = 0;
            if (handle(i, &dev) == 0 && capability(dev, &major, &minor) == 0 && major > 0)
                cc[n++] = major * 10 + minor;
        }
        shutdown();
    }
    dlclose(lib);
    return n;
}

static void find_defaults(void)
{
    int cc[RT_MAX_ARCHS];
    int ncc = rt_nvrtc_available() ? nvml_capabilities(cc) : 0;
    ndefaults = rt_default_archs_pick(cc, ncc, defaults);
}

int rt_default_archs(int *arch)
{
    pthread_once(&defaults_once, find_defaults);
    memcpy(arch, defaults, (size_t)ndefaults * sizeof *arch);
    return ndefaults;
}

bool rt_parse_archs(const char *list, int *arch, int *narchs, su_status *err)
{
    if (list && !strcmp(list, "native")) { /* the local GPU's, as nvcc's -arch=native */
        int v;
        su_status why;
        if (!rt_local_arch(&v, &why)) {
            su_fail(err, SU_GPU, "--arch native: %s", why.msg);
            return false;
        }
        if (!rt_nvrtc_supports(v)) {
            su_fail(err, SU_GPU, "--arch native: the local GPU is sm_%d, which NVRTC cannot "
                    "compile for", v);
            return false;
        }
        arch[0] = v;
        *narchs = 1;
        return true;
    }
    int n = 0;
    const char *p = list ? list : "";
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int v = 0;
        bool ok = len > 3 && len < 7 && !strncmp(p, "sm_", 3);
        for (size_t i = 3; ok && i < len; i++) {
            ok = p[i] >= '0' && p[i] <= '9';
            v = v * 10 + (p[i] - '0');
        }
        if (!ok) {
            su_fail(err, SU_GPU, "--arch '%.*s': expected sm_NN, as in --arch sm_80,sm_90",
                    (int)len, p);
            return false;
        }
        int major = 0, minor = 0;
        if (!rt_nvrtc_supports(v) && rt_nvrtc_version(&major, &minor)) {
            su_fail(err, SU_GPU, "--arch sm_%d: NVRTC %d.%d cannot compile for it", v, major,
                    minor);
            return false;
        }
        if (!rt_nvrtc_supports(v)) {
            su_fail(err, SU_GPU, "--arch sm_%d: not a GPU architecture", v);
            return false;
        }
        bool dup = false;
        for (int i = 0; i < n; i++)
            dup |= arch[i] == v;
        if (!dup && n == RT_MAX_ARCHS) {
            su_fail(err, SU_GPU, "--arch: more than %d architectures", RT_MAX_ARCHS);
            return false;
        }
        if (!dup)
            arch[n++] = v;
        if (!end)
            break;
        p = end + 1;
    }
    *narchs = n;
    return true;
}

static void default_or(const rt_nvrtc_options *o, const int **arch, int *n)
{
    if (o && o->narchs > 0) {
        *arch = o->arch;
        *n = o->narchs;
    } else {
        *arch = default_archs;
        *n = 2;
    }
}

static int newest(const int *arch, int n)
{
    int best = arch[0];
    for (int i = 1; i < n; i++)
        best = arch[i] > best ? arch[i] : best;
    return best;
}

void rt_archs_describe(const int *arch, int narchs, su_buf *out)
{
    if (narchs <= 0) {
        arch = default_archs;
        narchs = 2;
    }
    for (int i = 0; i < narchs; i++)
        su_buf_printf(out, "%ssm_%d", i ? ", " : "", arch[i]);
    su_buf_printf(out, "; PTX for sm_%d", newest(arch, narchs));
}

char *rt_nvrtc_cache_dir(const char *shardc_cache_dir, const char *xdg_cache_home,
                         const char *home)
{
    const char *base = "", *tail = "";
    if (shardc_cache_dir && *shardc_cache_dir)
        base = shardc_cache_dir;
    else if (xdg_cache_home && *xdg_cache_home)
        base = xdg_cache_home, tail = "/shardc";
    else if (home && *home)
        base = home, tail = "/.cache/shardc";
    else
        return NULL;
    size_t n = strlen(base) + strlen(tail) + 1;
    char *dir = malloc(n);
    if (dir)
        snprintf(dir, n, "%s%s", base, tail);
    return dir;
}

const char *rt_nvrtc_default_include_path(void)
{
#ifdef SHARDC_CUDA_INCLUDE_DIR
    return SHARDC_CUDA_INCLUDE_DIR;
#else
    return NULL;
#endif
}

void rt_nvrtc_output_free(rt_nvrtc_output *out)
{
    for (int i = 0; i < RT_MAX_ARCHS; i++)
        free(out->cubin[i]);
    free(out->ptx);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* ---- the cache ----
 *
 * An entry: "SHCKNV01", u64 key length, u64 payload length, u32 CRC32 of
 * key and payload, the key (the NVRTC version, the target, the options
 * and the source, each on its own line), the payload (cubin or PTX). */

enum { ENTRY_HEAD = 8 + 8 + 8 + 4 };
static const char entry_magic[8] = {'S', 'H', 'C', 'K', 'N', 'V', '0', '1'};
#define MAX_ENTRY ((size_t)1 << 30)

/* The cache file's name: FNV-1a from this basis (a digit short of the
 * standard one: it names the files of existing caches, so it stays). */
#define NAME_BASIS 1469598103934665603ull

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t entry_crc(const char *key, size_t klen, const uint8_t *data, size_t len)
{
    return su_crc32(su_crc32(0, key, klen), data, len);
}

/* "<dir>/<hash>-<target>.<cubin|ptx>" (malloc'd, NULL when out of memory). */
static char *entry_path(const char *dir, const su_buf *key, const char *target, bool ptx)
{
    size_t n = strlen(dir) + strlen(target) + 32;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%016llx-%s.%s", dir, (unsigned long long)su_fnv_bytes(NAME_BASIS, key->s, key->len),
                 target, ptx ? "ptx" : "cubin");
    return path;
}

/* The payload of a sound entry at path for key, malloc'd; NULL for a
 * missing, foreign, truncated or corrupt entry. */
static uint8_t *cache_read(const char *path, const su_buf *key, size_t *len)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    uint8_t head[ENTRY_HEAD], *data = NULL;
    char *k = NULL;
    bool ok = fread(head, 1, sizeof head, f) == sizeof head &&
              !memcmp(head, entry_magic, sizeof entry_magic);
    uint64_t klen = ok ? get_u64(head + 8) : 0, plen = ok ? get_u64(head + 16) : 0;
    ok = ok && klen == key->len && plen > 0 && plen < MAX_ENTRY;
    if (ok) {
        k = malloc(klen + 1);
        data = malloc(plen + 1);
        ok = k && data && fread(k, 1, klen, f) == klen && fread(data, 1, plen, f) == plen &&
             fgetc(f) == EOF && !memcmp(k, key->s, klen);
        uint32_t crc = (uint32_t)head[24] | (uint32_t)head[25] << 8 | (uint32_t)head[26] << 16 |
                       (uint32_t)head[27] << 24;
        ok = ok && entry_crc(k, klen, data, plen) == crc;
    }
    fclose(f);
    free(k);
    if (!ok) {
        free(data);
        return NULL;
    }
    data[plen] = 0; /* PTX is text */
    *len = plen;
    return data;
}

/* Makes dir and its parents; false when that fails. */
static bool make_dirs(const char *dir)
{
    char *p = strdup(dir);
    bool ok = p != NULL;
    for (char *s = p ? p + 1 : NULL; ok && s && *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        ok = mkdir(p, 0777) == 0 || errno == EEXIST;
        *s = '/';
    }
    ok = ok && (mkdir(p, 0777) == 0 || errno == EEXIST);
    free(p);
    return ok;
}

/* Writes an entry through a temporary file renamed into place; a failure
 * only means the result is not cached. */
static void cache_write(const char *dir, const char *path, const su_buf *key, const uint8_t *data,
                        size_t len)
{
    size_t total = ENTRY_HEAD + key->len + len;
    uint8_t *e = path ? malloc(total) : NULL;
    if (!e || !make_dirs(dir)) {
        free(e);
        return;
    }
    memcpy(e, entry_magic, sizeof entry_magic);
    put_u64(e + 8, key->len);
    put_u64(e + 16, len);
    uint32_t crc = entry_crc(key->s, key->len, data, len);
    for (int i = 0; i < 4; i++)
        e[24 + i] = (uint8_t)(crc >> (8 * i));
    memcpy(e + ENTRY_HEAD, key->s, key->len);
    memcpy(e + ENTRY_HEAD + key->len, data, len);
    su_write_file(path, (const char *)e, total, NULL); /* a cache: best effort */
    free(e);
}

#ifdef SHARDC_HAVE_NVRTC

/* NVRTC's library, loaded the first time a kernel is compiled or NVRTC is
 * asked about (rt_nvrtc_available, _version, _supports), not linked: a
 * process that compiles no kernel (shardrun on CPUs, shardc --arch none,
 * a report) neither maps its 100 MB (28 MB resident) nor needs it on the
 * machine. By its soname (LD_LIBRARY_PATH, the system's folders), else
 * where the build found it. Each entry point's type is nvrtc.h's. */
typedef struct nv_api {
    __typeof__(&nvrtcGetErrorString) GetErrorString;
    __typeof__(&nvrtcVersion) Version;
    __typeof__(&nvrtcGetNumSupportedArchs) GetNumSupportedArchs;
    __typeof__(&nvrtcGetSupportedArchs) GetSupportedArchs;
    __typeof__(&nvrtcCreateProgram) CreateProgram;
    __typeof__(&nvrtcCompileProgram) CompileProgram;
    __typeof__(&nvrtcDestroyProgram) DestroyProgram;
    __typeof__(&nvrtcGetProgramLogSize) GetProgramLogSize;
    __typeof__(&nvrtcGetProgramLog) GetProgramLog;
    __typeof__(&nvrtcGetPTXSize) GetPTXSize;
    __typeof__(&nvrtcGetPTX) GetPTX;
    __typeof__(&nvrtcGetCUBINSize) GetCUBINSize;
    __typeof__(&nvrtcGetCUBIN) GetCUBIN;
} nv_api;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static nv_api nv_table;
static const nv_api *nv;  /* NULL: not loaded (nv_why says why) */
static char nv_why[512];

static void nv_load(void)
{
    static const char *const names[] = {SHARDC_NVRTC_SONAME, SHARDC_NVRTC_PATH};
    void *lib = NULL;
    size_t at = 0; /* names[at]: the one it loads by */
    for (; at < sizeof names / sizeof *names; at++) {
        if ((lib = dlopen(names[at], RTLD_NOW | RTLD_LOCAL)))
            break;
        const char *e = dlerror();
        if (at == 0) /* the soname's failure says most */
            snprintf(nv_why, sizeof nv_why, "%s", e ? e : SHARDC_NVRTC_SONAME);
    }
    if (!lib)
        return;
#define E(member, fn)                                                                           \
    if (!(nv_table.member = (__typeof__(nv_table.member))(uintptr_t)dlsym(lib, #fn))) {         \
        snprintf(nv_why, sizeof nv_why, "%s has no %s", names[at], #fn);                       \
        dlclose(lib);                                                                          \
        return;                                                                                \
    }
    E(GetErrorString, nvrtcGetErrorString);
    E(Version, nvrtcVersion);
    E(GetNumSupportedArchs, nvrtcGetNumSupportedArchs);
    E(GetSupportedArchs, nvrtcGetSupportedArchs);
    E(CreateProgram, nvrtcCreateProgram);
    E(CompileProgram, nvrtcCompileProgram);
    E(DestroyProgram, nvrtcDestroyProgram);
    E(GetProgramLogSize, nvrtcGetProgramLogSize);
    E(GetProgramLog, nvrtcGetProgramLog);
    E(GetPTXSize, nvrtcGetPTXSize);
    E(GetPTX, nvrtcGetPTX);
    E(GetCUBINSize, nvrtcGetCUBINSize);
    E(GetCUBIN, nvrtcGetCUBIN);
#undef E
    nv = &nv_table; /* the library stays loaded for the process */
}

/* NVRTC's entry points, loaded once; NULL when the library cannot be. */
static const nv_api *nv_api_get(void)
{
    pthread_once(&nv_once, nv_load);
    return nv;
}

/* Records NVRTC's own error string with the call and the place. */
#define NVRTC_CHECK(call, err) nvrtc_check((call), #call, __FILE__, __LINE__, (err))

static bool nvrtc_check(nvrtcResult r, const char *call, const char *file, int line, su_buf *err)
{
    if (r == NVRTC_SUCCESS)
        return true;
    su_buf_printf(err, "%s:%d: %s: %s", file, line, call, nv->GetErrorString(r));
    return false;
}

bool rt_nvrtc_available(void) { return nv_api_get() != NULL; }

const char *rt_nvrtc_why(void)
{
    return nv_api_get() ? "" : nv_why;
}

bool rt_nvrtc_version(int *major, int *minor)
{
    if (!nv_api_get()) {
        *major = *minor = 0;
        return false;
    }
    return nv->Version(major, minor) == NVRTC_SUCCESS;
}

bool rt_nvrtc_supports(int arch)
{
    if (!nv_api_get()) /* as a build without NVRTC: nothing will compile */
        return any_arch(arch);
    int n = 0;
    if (nv->GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 1024)
        return false;
    int list[1024]; /* not malloc'd: a failed allocation would read as "unsupported" */
    bool found = false;
    if (nv->GetSupportedArchs(list) == NVRTC_SUCCESS)
        for (int i = 0; i < n; i++)
            found |= list[i] == arch;
    return found;
}

/* The options every compile passes, target first. */
typedef struct copts {
    int n;
    char target[48];
    char include[4096];
    const char *v[5];
} copts;

static void make_opts(copts *c, const char *target, const char *include)
{
    snprintf(c->target, sizeof c->target, "--gpu-architecture=%s", target);
    c->n = 0;
    c->v[c->n++] = c->target;
    if (include && *include) {
        snprintf(c->include, sizeof c->include, "--include-path=%s", include);
        c->v[c->n++] = c->include;
    }
    c->v[c->n++] = "--fmad=false";
    c->v[c->n++] = "--std=c++17";
    /* NVRTC 12.4 on: leave out the CUDA runtime's types, textures and
     * device-side launches, which no kernel of a plan uses. The cubins and
     * PTX are the same bytes (every example's plan compared), and a
     * program's fixed cost less (bench/results/nvrtc-compile.md). */
    int major = 0, minor = 0;
    if (rt_nvrtc_version(&major, &minor) && (major > 12 || (major == 12 && minor >= 4)))
        c->v[c->n++] = "--minimal";
}

/* A compile in progress: what it holds, freed by rt_nvrtc_compile after
 * an allocation failure too (an su_buf append jumps). */
typedef struct nv_run {
    const char *name, *source;
    const rt_nvrtc_options *o;
    rt_nvrtc_output *out;   /* the caller's */
    su_buf *err;
    su_buf log;             /* NVRTC's warnings */
    su_buf key, pkey;       /* the cubin's and the PTX's cache keys */
    char *path, *ppath;     /* the cubin's and the PTX's entries (malloc'd) */
    nvrtcProgram prog;      /* NULL: none */
    uint8_t *data;          /* a result not yet handed over (malloc'd) */
    bool ok;
} nv_run;

/* The NVRTC log of r->prog, trimmed, into b: read straight into b's room,
 * so nothing else is held while b grows. */
static void put_log(nv_run *r, su_buf *b)
{
    size_t n = 0;
    if (nv->GetProgramLogSize(r->prog, &n) != NVRTC_SUCCESS || n <= 1) {
        su_buf_puts(b, "(NVRTC gave no log)");
        return;
    }
    size_t at = b->len;
    for (size_t i = 0; i < n; i++) /* room for the log and its NUL */
        su_buf_putc(b, ' ');
    if (nv->GetProgramLog(r->prog, b->s + at) != NVRTC_SUCCESS)
        n = 1;
    while (n > 1 && (b->s[at + n - 2] == '\n' || b->s[at + n - 2] == ' '))
        n--;
    b->len = at + n - 1;
    b->s[b->len] = 0;
}

/* One result of r->prog, the cubin or the PTX, into *data (malloc'd, NUL
 * after its *len bytes); false with err. */
static bool take_output(nv_run *r, bool ptx, uint8_t **data, size_t *len)
{
    su_buf *err = r->err;
    size_t n = 0;
    bool ok = ptx ? NVRTC_CHECK(nv->GetPTXSize(r->prog, &n), err)
                  : NVRTC_CHECK(nv->GetCUBINSize(r->prog, &n), err);
    r->data = ok ? malloc(n + 1) : NULL;
    if (ok && !r->data)
        su_oom(err->oom); /* rt_nvrtc_compile's guard: an allocation failure */
    ok = ok && (ptx ? NVRTC_CHECK(nv->GetPTX(r->prog, (char *)r->data), err)
                    : NVRTC_CHECK(nv->GetCUBIN(r->prog, (char *)r->data), err));
    if (ok && ptx) /* NVRTC counts the NUL in the PTX's size */
        n = strnlen((const char *)r->data, n);
    if (ok)
        r->data[n] = 0;
    *len = n;
    *data = ok ? r->data : NULL;
    if (!ok)
        free(r->data);
    r->data = NULL;
    return ok;
}

/* One NVRTC compile of the source for target sm_NN: its cubin into *cubin
 * and, when ptx is not NULL, the PTX it went through (for sm_NN, which
 * newer devices compile) into *ptx, from the same compile; NVRTC's
 * warnings, if any, are appended to r->log. */
static bool compile_one(nv_run *r, const char *target, const copts *c, uint8_t **cubin,
                        size_t *cubin_len, uint8_t **ptx, size_t *ptx_len)
{
    su_buf *err = r->err;
    char file[300];
    snprintf(file, sizeof file, "%s.cu", r->name);
    if (!NVRTC_CHECK(nv->CreateProgram(&r->prog, r->source, file, 0, NULL, NULL), err)) {
        r->prog = NULL;
        return false;
    }
    nvrtcResult res = nv->CompileProgram(r->prog, c->n, c->v);
    bool ok = res == NVRTC_SUCCESS;
    size_t loglen = 0;
    if (!ok) {
        su_buf_printf(err, "kernel %s: NVRTC cannot compile it for %s (%s):\n", r->name, target,
                      nv->GetErrorString(res));
        put_log(r, err);
    } else if (nv->GetProgramLogSize(r->prog, &loglen) == NVRTC_SUCCESS && loglen > 1) {
        su_buf_printf(&r->log, "%s:\n", target);
        put_log(r, &r->log);
        su_buf_putc(&r->log, '\n');
    }
    ok = ok && take_output(r, false, cubin, cubin_len);
    if (ok && ptx && !take_output(r, true, ptx, ptx_len)) {
        free(*cubin);
        *cubin = NULL;
        ok = false;
    }
    nv->DestroyProgram(&r->prog);
    r->prog = NULL;
    return ok;
}

/* The cache key of one result: the cubin of a compile for target, or
 * (ptx) the PTX that compile went through. */
static void make_key(su_buf *key, const char *source, const char *target, const copts *c,
                     bool ptx)
{
    int major = 0, minor = 0;
    rt_nvrtc_version(&major, &minor);
    su_buf_printf(key, "shardc nvrtc cache 2\nnvrtc %d.%d\ntarget %s\noutput %s\n", major, minor,
                  target, ptx ? "ptx" : "cubin");
    for (int i = 0; i < c->n; i++)
        su_buf_printf(key, "option %s\n", c->v[i]);
    su_buf_puts(key, "source\n");
    su_buf_puts(key, source);
}

/* One cached result (ptx: the PTX, else the cubin) of the compile for
 * target: malloc'd, or NULL when the cache has no sound entry for it;
 * *key is its key and *path (malloc'd) where it goes once compiled. */
static uint8_t *cached(nv_run *r, const char *target, const copts *c, bool ptx, su_buf *key,
                       size_t *len, char **path)
{
    make_key(key, r->source, target, c, ptx);
    *path = entry_path(r->o->cache_dir, key, target, ptx);
    return *path ? cache_read(*path, key, len) : NULL;
}

/* One target, sm_NN, and with ptx its PTX too, through the cache when
 * there is one: one NVRTC compile when either result is not cached. */
static bool compile_cached(nv_run *r, const char *target, uint8_t **cubin, size_t *cubin_len,
                           uint8_t **ptx, size_t *ptx_len, int *hits)
{
    copts c;
    const rt_nvrtc_options *o = r->o;
    const char *inc = o && o->include_path ? o->include_path : rt_nvrtc_default_include_path();
    make_opts(&c, target, inc);
    const char *dir = o ? o->cache_dir : NULL;
    if (!dir || !*dir)
        return compile_one(r, target, &c, cubin, cubin_len, ptx, ptx_len);
    *cubin = cached(r, target, &c, false, &r->key, cubin_len, &r->path);
    uint8_t *p = ptx ? cached(r, target, &c, true, &r->pkey, ptx_len, &r->ppath) : NULL;
    bool hit = *cubin && (!ptx || p);
    bool ok = hit;
    if (hit) {
        *hits += ptx ? 2 : 1;
        if (ptx)
            *ptx = p;
    } else {
        free(*cubin);
        free(p);
        *cubin = NULL;
        ok = compile_one(r, target, &c, cubin, cubin_len, ptx, ptx_len);
        if (ok)
            cache_write(dir, r->path, &r->key, *cubin, *cubin_len);
        if (ok && ptx)
            cache_write(dir, r->ppath, &r->pkey, *ptx, *ptx_len);
    }
    free(r->ppath);
    free(r->path);
    r->path = r->ppath = NULL;
    su_buf_free(&r->key);
    su_buf_free(&r->pkey);
    return ok;
}

/* A cubin per architecture; the newest one's compile also gives the PTX
 * (for that architecture, which the driver compiles for newer devices). */
static void nvrtc_compile(void *arg)
{
    nv_run *r = arg;
    rt_nvrtc_output *out = r->out;
    const int *arch;
    int n;
    default_or(r->o, &arch, &n);
    out->ptx_arch = newest(arch, n);
    bool ok = true;
    char target[32];
    for (int i = 0; ok && i < n; i++) {
        snprintf(target, sizeof target, "sm_%d", arch[i]);
        bool with_ptx = arch[i] == out->ptx_arch && !out->ptx;
        uint8_t *ptx = NULL;
        ok = compile_cached(r, target, &out->cubin[i], &out->cubin_len[i],
                            with_ptx ? &ptx : NULL, &out->ptx_len, &out->cache_hits);
        if (with_ptx)
            out->ptx = (char *)ptx;
        out->arch[i] = arch[i];
        out->narchs = i + 1;
    }
    out->log = r->log.len ? su_buf_take(&r->log) : NULL;
    r->ok = ok;
}

bool rt_nvrtc_compile(const char *name, const char *source, const rt_nvrtc_options *o,
                      rt_nvrtc_output *out, su_buf *err)
{
    memset(out, 0, sizeof *out);
    if (!nv_api_get()) {
        su_buf_printf(err, "kernel %s: NVRTC cannot be loaded (%s), so kernels cannot be "
                           "compiled (their sources still print with --emit cuda, and "
                           "--arch none makes a plan without them)",
                      name, rt_nvrtc_why());
        return false;
    }
    nv_run r = {.name = name, .source = source, .o = o, .out = out, .err = err};
    su_buf_init(&r.log, err->oom);
    su_buf_init(&r.key, err->oom);
    su_buf_init(&r.pkey, err->oom);
    bool done = su_guarded(err->oom, nvrtc_compile, &r);
    su_buf_free(&r.log);
    su_buf_free(&r.key);
    su_buf_free(&r.pkey);
    free(r.path);
    free(r.ppath);
    free(r.data);
    if (r.prog)
        nv->DestroyProgram(&r.prog);
    if (!done)
        su_oom(err->oom); /* out is the caller's to free */
    return r.ok;
}

#else /* no NVRTC in this build */

bool rt_nvrtc_available(void) { return false; }

const char *rt_nvrtc_why(void)
{
    return "shardc was built without the CUDA toolkit";
}

bool rt_nvrtc_version(int *major, int *minor)
{
    *major = *minor = 0;
    return false;
}

bool rt_nvrtc_supports(int arch)
{
    return any_arch(arch);
}

bool rt_nvrtc_compile(const char *name, const char *source, const rt_nvrtc_options *o,
                      rt_nvrtc_output *out, su_buf *err)
{
    (void)source;
    (void)o;
    (void)cache_read;
    (void)cache_write;
    (void)entry_path;
    (void)default_or;
    memset(out, 0, sizeof *out);
    su_buf_printf(err, "kernel %s: NVRTC is not available: shardc was built without the CUDA "
                       "toolkit, so kernels cannot be compiled (their sources still print with "
                       "--emit cuda)",
                  name);
    return false;
}

#endif

/* NVRTC's result and messages, on the heap: a longjmp on out of memory
 * leaves them as they were. */
typedef struct image_build {
    su_buf msg;
    rt_nvrtc_output out;
} image_build;

/* The architecture to compile for: the device's, else the newest NVRTC
 * knows below it (loaded as PTX). 0 when none. */
static int target_arch(int cc)
{
    for (int a = cc; a >= 50; a--)
        if (rt_nvrtc_supports(a))
            return a;
    return 0;
}

int rt_nvrtc_image(const char *name, const char *source, const char *what, int cc, void **image,
                   su_status *err)
{
    image_build *b = calloc(1, sizeof *b);
    if (!b)
        return su_fail(err, SU_NOMEM, "out of memory compiling %s", what);
    jmp_buf oom;
    if (setjmp(oom)) {
        su_buf_free(&b->msg);
        rt_nvrtc_output_free(&b->out);
        free(b);
        return su_fail(err, SU_NOMEM, "out of memory compiling %s", what);
    }
    su_buf_init(&b->msg, &oom);
    rt_nvrtc_options o = {.narchs = 1, .arch = {target_arch(cc)}};
    int rc = 0;
    if (!rt_nvrtc_available())
        rc = su_fail(err, SU_GPU, "NVRTC is needed to compile %s and cannot be loaded: %s", what,
                     rt_nvrtc_why());
    else if (o.arch[0] == 0)
        rc = su_fail(err, SU_GPU, "NVRTC cannot compile %s for this GPU (sm_%d) or an older one",
                     what, cc);
    else if (!rt_nvrtc_compile(name, source, &o, &b->out, &b->msg))
        rc = su_fail(err, SU_GPU, "%s", b->msg.len ? b->msg.s : "NVRTC failed");
    if (rc == 0 && o.arch[0] == cc) {
        *image = b->out.cubin[0];
        b->out.cubin[0] = NULL;
    } else if (rc == 0) {
        *image = b->out.ptx;
        b->out.ptx = NULL;
    }
    su_buf_free(&b->msg);
    rt_nvrtc_output_free(&b->out);
    free(b);
    return rc;
}
