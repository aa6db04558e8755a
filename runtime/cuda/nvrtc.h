/* nvrtc.h: compiling kernel sources with NVRTC (DESIGN.md §4), with a disk
 * cache. NVRTC needs no GPU and no driver; libcuda is never linked.
 *
 * A kernel compiles to a cubin for every architecture of the list
 * (default sm_80 and sm_90) and to PTX for the newest, with
 * --include-path to the CUDA headers (cuda_fp16.h, cuda_bf16.h),
 * --fmad=false (no FMA contraction: each op rounds as the CPU backend's)
 * and --std=c++17.
 *
 * The cache: one file per (source, options, target, NVRTC version), named
 * by a hash of them and holding them in full, so a collision or a corrupt
 * entry (bad magic, length or CRC) reads as a miss and is rewritten.
 * Writes go through a temporary file renamed into place, so a reader
 * never sees half an entry. The library never reads the environment:
 * the caller gives the folder (rt_nvrtc_cache_dir makes the usual one
 * from the environment's values).
 *
 * Built without the CUDA toolkit, everything here links and answers:
 * rt_nvrtc_available() is false and compiling fails saying so. */
#ifndef SHARDC_RT_NVRTC_H
#define SHARDC_RT_NVRTC_H

#include "support/support.h"

#define RT_MAX_ARCHS 8

typedef struct rt_nvrtc_options {
    int narchs;                 /* 0: the default, sm_80 and sm_90 */
    int arch[RT_MAX_ARCHS];     /* compute capabilities as numbers: 80, 90 */
    const char *include_path;   /* the CUDA headers' folder; NULL: the
                                 * toolkit's, found at build time */
    const char *cache_dir;      /* NULL: no cache */
} rt_nvrtc_options;

typedef struct rt_nvrtc_output {
    int narchs;
    int arch[RT_MAX_ARCHS];
    uint8_t *cubin[RT_MAX_ARCHS];   /* malloc'd */
    size_t cubin_len[RT_MAX_ARCHS];
    char *ptx;                      /* NUL-terminated, malloc'd */
    size_t ptx_len;                 /* without the NUL */
    int ptx_arch;                   /* the newest of arch[] */
    int cache_hits;                 /* of the narchs + 1 results, from the cache */
    char *log;                      /* NVRTC's warnings, NULL when none (a
                                     * result from the cache has none) */
} rt_nvrtc_output;

/* Whether this build has NVRTC and its library loads (the first call
 * loads it: a process that compiles no kernel never does). */
bool rt_nvrtc_available(void);
/* Why rt_nvrtc_available() is false (a build without NVRTC, or the
 * library's name and dlopen's reason); "" when it is true. */
const char *rt_nvrtc_why(void);
/* NVRTC's version; false without NVRTC. */
bool rt_nvrtc_version(int *major, int *minor);
/* Whether NVRTC can compile for sm_<arch>. Without NVRTC, any arch from
 * 10 to 999 is accepted (nothing will be compiled). */
bool rt_nvrtc_supports(int arch);

/* The compute capability of the local GPU (device 0), as a number (90);
 * false with why in err when there is no usable driver or no device. */
bool rt_local_arch(int *arch, su_status *err);

/* The targets of a plan whose --arch is the default, into arch (room for
 * RT_MAX_ARCHS); returns how many: the distinct compute capabilities of
 * the machine's GPUs that NVRTC can compile for, as NVML reports them
 * (CUDA is not started: a process may fork after), in ascending order;
 * else (no NVRTC, no NVML, no GPU, or none NVRTC takes) sm_80 and sm_90.
 * Found once per process and kept. Thread-safe. */
int rt_default_archs(int *arch);
/* The choice itself, from the capabilities found, cc[ncc] (90 for sm_90). */
int rt_default_archs_pick(const int *cc, int ncc, int *arch);

/* Parses an architecture list, "sm_80,sm_90" (duplicates dropped, order
 * kept), checking each with rt_nvrtc_supports, or "native": the local
 * GPU's (rt_local_arch). False with a message in err ("--arch 'sm_8x':
 * expected sm_NN, ...", "--arch native: no CUDA device"). */
bool rt_parse_archs(const char *list, int *arch, int *narchs, su_status *err);
/* "sm_80, sm_90; PTX for sm_90". */
void rt_archs_describe(const int *arch, int narchs, su_buf *out);

/* Compiles source, whose kernel is called name, as the options say, into
 * *out (free with rt_nvrtc_output_free, also after a failure). False with
 * a message in err that names the kernel and the target and quotes
 * NVRTC's log when NVRTC rejects the source; a cache that cannot be
 * written is not an error (the result is just not kept). */
bool rt_nvrtc_compile(const char *name, const char *source, const rt_nvrtc_options *o,
                      rt_nvrtc_output *out, su_buf *err);
void rt_nvrtc_output_free(rt_nvrtc_output *out);

/* The runtime's own kernel source (name its entry, what its words for
 * messages) for a device of compute capability cc (90 for sm_90),
 * without a cache: a cubin where NVRTC knows cc, else PTX for the newest
 * architecture below it that NVRTC knows, malloc'd into *image. 0, or
 * -1 with the message in err. */
int rt_nvrtc_image(const char *name, const char *source, const char *what, int cc, void **image,
                   su_status *err);

/* The cache folder from the environment's values, which the caller reads
 * (each may be NULL or empty): $SHARDC_CACHE_DIR, else
 * $XDG_CACHE_HOME/shardc, else $HOME/.cache/shardc; NULL when none is set.
 * malloc'd. */
char *rt_nvrtc_cache_dir(const char *shardc_cache_dir, const char *xdg_cache_home,
                         const char *home);
/* The CUDA headers' folder found at build time, or NULL. */
const char *rt_nvrtc_default_include_path(void);

#endif
