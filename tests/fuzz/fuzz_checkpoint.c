/* fuzz_checkpoint.c: libFuzzer target on resuming from a checkpoint
 * (runtime/exec/checkpoint.c through shardc_session_resume): the input is
 * a step folder's index.json, beside the rank files of a real checkpoint.
 *
 * Once per process, a small training model (2x2 mesh, params split over
 * tp, a bf16 param with its f32 master, AdamW's moments) is compiled, run
 * for a step and saved into a temporary checkpoint folder. Each input is
 * then written as that step folder's index.json and resumed from:
 *   - a refusal must return SHARDC_ERR_INPUT or SHARDC_ERR_IO with a
 *     message, and leave the session usable;
 *   - an accepted index must run a step, which reads every shard the index
 *     names (every rank's box), without a crash; a step that fails must
 *     say why.
 *
 * Fuzz mode: an input starting with the byte 'F' is the rest of it with
 * each "files" entry that names one of the folder's rank files given that
 * file's true "bytes" and "crc32" before it is written. Without it, a
 * mutated index almost never gets past the CRC-32 check of the files it
 * names, so the shard geometry behind it would go unexplored; the 'F'
 * seed in corpus/checkpoint/ lets the fuzzer reach it. Inputs without the
 * 'F' still test the sizes and checksums themselves.
 *
 * With FUZZ_VERBOSE set, each input's outcome is printed (replay_checkpoint
 * FILE shows what a finding or a seed does).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "include/shardc.h"
#include "support/support.h"
#include "tests/unit/ckpt_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char MODEL[] =
    "mesh dp, tp\n"
    "input x : f32[4, 8] shard(dp, _)\n"
    "input y : f32[4, 8] shard(dp, _)\n"
    "param w1 : f32[8, 16] shard(_, tp) = normal(0.3)\n"
    "param b1 : f32[16] shard(tp) = zeros\n"
    "param w2 : bf16[16, 8] shard(tp, _) = normal(0.3)\n"
    "h = tanh(x @ w1 + b1)\n"
    "o = cast(cast(h, bf16) @ w2, f32)\n"
    "loss = mse(o, y)\n"
    "output loss\n"
    "train loss with adamw(lr = 0.01)\n";

static struct {
    char root[64];        /* the temporary folder */
    char ckpt[128];       /* root/ckpt: the checkpoint folder */
    char step[192];       /* its step folder */
    char index[256];      /* step/index.json */
    shardc_plan *plan;
    shardc_session *s;
} G;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, msg ? msg : "");
    abort();
}

static void cleanup(void)
{
    shardc_session_free(G.s);
    shardc_plan_free(G.plan);
    if (G.root[0])
        ckpt_remove_tree(G.root);
}

static shardc_session *new_session(void)
{
    shardc_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "cpu";
    cfg.comm = "local";
    cfg.seed = 1;
    shardc_session *s = NULL;
    char *err = NULL;
    if (shardc_session_new(G.plan, &cfg, &s, &err) != SHARDC_OK)
        die("a session", err);
    return s;
}

/* The plan, a session, and a checkpoint of its first step in G.step. */
static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    /* mkdtemp replaces the template's last six characters */
    snprintf(G.root, sizeof G.root, "%s/fuzzckpt.XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(G.root))
        die("mkdtemp", G.root);
    atexit(cleanup);
    char *err = NULL;
    shardc_options *opt = shardc_options_new();
    shardc_program *prog = NULL;
    if (!opt || shardc_options_set_mesh(opt, "2x2", &err) != SHARDC_OK ||
        shardc_options_set_archs(opt, "none", &err) != SHARDC_OK ||
        shardc_compile_string(opt, "fuzz.sh", MODEL, sizeof MODEL - 1, &prog, &err) != SHARDC_OK ||
        shardc_program_plan(prog, &G.plan, &err) != SHARDC_OK)
        die("compiling the model", err);
    shardc_program_free(prog);
    shardc_options_free(opt);
    G.s = new_session();
    snprintf(G.ckpt, sizeof G.ckpt, "%s/ckpt", G.root);
    if (shardc_session_run(G.s, &err) != SHARDC_OK ||
        shardc_session_save_checkpoint(G.s, G.ckpt, &err) != SHARDC_OK)
        die("saving a checkpoint", err);
    snprintf(G.step, sizeof G.step, "%s/step-00000001", G.ckpt);
    snprintf(G.index, sizeof G.index, "%s/index.json", G.step);
    struct stat st;
    if (stat(G.index, &st) != 0)
        die("no index after the save", G.index);
}

/* The size and CRC-32 of a file of the step folder; false when it is not
 * one (a plain name of a regular file there). */
static bool file_sum(const char *name, int64_t *bytes, uint32_t *crc)
{
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", G.step, name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    uint8_t buf[4096];
    *bytes = 0;
    *crc = 0;
    for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) {
        *crc = su_crc32(*crc, buf, got);
        *bytes += (int64_t)got;
    }
    fclose(f);
    return true;
}

/* Fuzz mode's repair (the file comment); the text as it came when it is
 * not a JSON object with a "files" array. Freed by the caller. */
static char *fix_up(const char *text, size_t n)
{
    char *out = NULL;
    cJSON *root = cJSON_ParseWithLength(text, n);
    cJSON *files = root ? cJSON_GetObjectItemCaseSensitive(root, "files") : NULL;
    if (cJSON_IsArray(files)) {
        cJSON *f;
        cJSON_ArrayForEach(f, files) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
            int64_t bytes;
            uint32_t crc;
            if (!cJSON_IsObject(f) || !cJSON_IsString(name) ||
                !file_sum(name->valuestring, &bytes, &crc))
                continue;
            char hex[16];
            snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
            cJSON_DeleteItemFromObjectCaseSensitive(f, "bytes");
            cJSON_DeleteItemFromObjectCaseSensitive(f, "crc32");
            cJSON_AddNumberToObject(f, "bytes", (double)bytes);
            cJSON_AddStringToObject(f, "crc32", hex);
        }
        out = cJSON_PrintUnformatted(root);
    }
    cJSON_Delete(root);
    if (!out && (out = malloc(n + 1))) {
        memcpy(out, text, n);
        out[n] = 0;
    }
    return out;
}

static void write_index(const char *text, size_t n)
{
    FILE *f = fopen(G.index, "wb");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0)
        die("cannot write", G.index);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!G.s)
        setup();
    char *fixed = NULL;
    if (size && data[0] == 'F') {
        if (!(fixed = fix_up((const char *)data + 1, size - 1)))
            return 0;
        write_index(fixed, strlen(fixed));
    } else {
        write_index((const char *)data, size);
    }
    free(fixed);
    char *err = NULL;
    shardc_status st = shardc_session_resume(G.s, G.step, &err);
    bool verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "resume: %d %s\n", (int)st, err ? err : "");
    if (st != SHARDC_OK) {
        if (st != SHARDC_ERR_INPUT && st != SHARDC_ERR_IO)
            die("a refusal that is no input or I/O error", err);
        if (!err || !err[0])
            die("a refusal without a message", err);
        shardc_free(err);
        return 0;
    }
    /* accepted: the step reads every rank's shards */
    st = shardc_session_run(G.s, &err);
    if (verbose)
        fprintf(stderr, "step: %d %s\n", (int)st, err ? err : "");
    if (st != SHARDC_OK) {
        if (!err || !err[0] || st == SHARDC_ERR_INTERNAL)
            die("a step after an accepted resume failed", err);
        shardc_free(err);
        shardc_session_free(G.s); /* a failed run leaves the session failed */
        G.s = new_session();
    }
    return 0;
}
