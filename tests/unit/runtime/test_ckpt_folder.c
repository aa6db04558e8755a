/* test_ckpt_folder.c: the checkpoint folder (runtime/exec/ckpt_folder.c): step
 * folders committed under the pointer, the newest K kept, older ones and
 * what interrupted saves left deleted, the user's files never; a save of
 * a step that is already the newest; and which step folder a resume
 * takes, with its note, when the pointer is there, missing, damaged or
 * names an incomplete folder. The saves here are of a plan with one rank
 * and no tensors: the folder logic does not look inside the files. */
#include "check.h"
#include "ckpt_util.h"

#include "runtime/exec/checkpoint.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[128];
static rt_plan plan; /* one axis of size 1: one rank, no tensors */

static const char *at(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", root, name);
    return p;
}

static bool exists(const char *name)
{
    struct stat st;
    return lstat(at(name), &st) == 0;
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *pointer(void)
{
    static char name[256];
    FILE *f = fopen(at("latest"), "rb");
    size_t n = f ? fread(name, 1, sizeof name - 1, f) : 0;
    if (f)
        fclose(f);
    name[n] = 0;
    return name;
}

/* A save of `step` whose one rank file holds a tensor of value v. */
static int save(int64_t step, float v, int keep, su_status *err)
{
    if (rt_ckpt_begin(root, step, err) != 0)
        return -1;
    char *staging = rt_ckpt_staging(root, step);
    const char *name = "v";
    rt_type t = {.dtype = RT_F32, .rank = 0};
    const void *data = &v;
    rt_st_sum sum;
    int rc = rt_ckpt_write_rank(staging, 0, 1, &name, &t, &data, &sum, err);
    free(staging);
    return rc == 0 ? rt_ckpt_commit(root, &plan, step, &sum, keep, err) : -1;
}

/* The value saved in step folder name (NAN when it cannot be read). */
static float saved_value(const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s/rank-00000.safetensors", root, name);
    FILE *f = fopen(path, "rb");
    float v = NAN;
    if (f && fseek(f, -4, SEEK_END) == 0 && fread(&v, 4, 1, f) != 1)
        v = NAN;
    if (f)
        fclose(f);
    return v;
}

/* rt_ckpt_locate(root): the step folder's last part, and the note. */
static const char *locate(char *note, size_t notelen, su_status *err)
{
    static char last[256];
    char *folder = NULL;
    if (rt_ckpt_locate(root, &folder, note, notelen, err) != 0)
        return NULL;
    snprintf(last, sizeof last, "%s", strrchr(folder, '/') ? strrchr(folder, '/') + 1 : folder);
    free(folder);
    return last;
}

/* Four saves, keep 2: the pointer names the last, the one before stays,
 * older ones go; the user's files in the folder stay. */
static void test_keep(void)
{
    su_status err;
    mkdir(root, 0777);
    put("notes.txt", "mine");
    put("step-00000007", "a file of the user's with a step folder's name");
    for (int step = 1; step <= 4; step++)
        CHECK(save(step, (float)step, 0, &err) == 0);
    CHECK_STR(pointer(), "step-00000004\n");
    CHECK(!exists("step-00000001") && !exists("step-00000002"));
    CHECK(exists("step-00000003") && exists("step-00000004"));
    CHECK(exists("notes.txt") && exists("step-00000007"));
    CHECK(!exists("step-00000004.partial"));
    CHECK(saved_value("step-00000004") == 4.0f);
    CHECK(save(5, 5.0f, 1, &err) == 0); /* keep 1 */
    CHECK(!exists("step-00000003") && !exists("step-00000004") && exists("step-00000005"));
    CHECK(exists("notes.txt") && exists("step-00000007"));
}

/* A step folder holding a file no save writes is never deleted; what an
 * interrupted save left (a staging folder, the pointer's temporary file,
 * a step folder without its index) is. */
static void test_leftovers(void)
{
    su_status err;
    mkdir(at("step-00000002"), 0777);
    put("step-00000002/index.json", "{}");
    put("step-00000002/mine.txt", "mine");
    mkdir(at("step-00000003.partial"), 0777);
    put("step-00000003.partial/rank-00000.safetensors.tmp.123.0", "");
    put("latest.tmp.123.0", "step-00000003.partial\n");
    mkdir(at("step-00000001"), 0777);
    put("step-00000001/rank-00000.safetensors", "");
    CHECK(save(6, 6.0f, 1, &err) == 0);
    CHECK_STR(pointer(), "step-00000006\n");
    CHECK(exists("step-00000002/mine.txt") && exists("step-00000002/index.json"));
    CHECK(!exists("step-00000003.partial") && !exists("latest.tmp.123.0"));
    CHECK(!exists("step-00000001") && !exists("step-00000005"));
    /* a save that would replace that folder fails, naming the file, and
     * leaves the pointer where it was */
    CHECK(save(2, 2.0f, 1, &err) != 0);
    CHECK(strstr(err.msg, "step-00000002: holds mine.txt, which no save writes: left alone") != NULL);
    CHECK_STR(pointer(), "step-00000006\n");
    CHECK(saved_value("step-00000006") == 6.0f);
    CHECK(ckpt_remove_tree(at("step-00000002")) == 0);
}

/* Going back: a save of an earlier step than the newest leaves the later
 * ones alone; a save of the step the pointer names replaces it, the
 * pointer naming one complete checkpoint of it all along. */
static void test_rewind(void)
{
    su_status err;
    CHECK(save(3, 3.0f, 2, &err) == 0);
    CHECK_STR(pointer(), "step-00000003\n");
    CHECK(exists("step-00000006"));
    CHECK(save(3, 30.0f, 2, &err) == 0);
    CHECK_STR(pointer(), "step-00000003\n");
    CHECK(saved_value("step-00000003") == 30.0f);
    CHECK(!exists("step-00000003.partial") && exists("step-00000006"));
    /* a save killed between the pointer naming the staging folder and the
     * rename: the pointer's folder is complete */
    CHECK(rename(at("step-00000003"), at("step-00000003.partial")) == 0);
    put("latest", "step-00000003.partial\n");
    char note[1024];
    CHECK_STR(locate(note, sizeof note, &err), "step-00000003.partial");
    CHECK_STR(note, "");
    /* ... and a save of that step cannot start without destroying it */
    CHECK(rt_ckpt_begin(root, 3, &err) != 0);
    CHECK(strstr(err.msg, "latest names step-00000003.partial, which this save would write over") !=
          NULL);
    /* killed after the rename: the pointer still names the staging folder */
    CHECK(rename(at("step-00000003.partial"), at("step-00000003")) == 0);
    CHECK_STR(locate(note, sizeof note, &err), "step-00000003");
    CHECK_STR(note, "");
    CHECK(save(3, 31.0f, 2, &err) == 0);
    CHECK(saved_value("step-00000003") == 31.0f);
}

/* Which folder a resume takes. */
static void test_locate(void)
{
    su_status err;
    char note[1024];
    CHECK_STR(locate(note, sizeof note, &err), "step-00000003");
    CHECK_STR(note, "");
    char want[2048];
    put("latest", "step-00000009\n");
    CHECK_STR(locate(note, sizeof note, &err), "step-00000006");
    snprintf(want, sizeof want,
             "%s/latest names step-00000009, which is missing or incomplete (no index.json): resumed from the newest complete checkpoint, step-00000006",
             root);
    CHECK_STR(note, want);
    put("latest", "../elsewhere\n");
    CHECK_STR(locate(note, sizeof note, &err), "step-00000006");
    snprintf(want, sizeof want,
             "%s/latest does not name a step folder: resumed from the newest complete checkpoint, step-00000006",
             root);
    CHECK_STR(note, want);
    CHECK(unlink(at("latest")) == 0);
    CHECK_STR(locate(note, sizeof note, &err), "step-00000006");
    snprintf(want, sizeof want,
             "%s has no pointer 'latest': resumed from the newest complete checkpoint, step-00000006",
             root);
    CHECK_STR(note, want);
    /* no pointer, an index of its own: a step folder or a version 1 one */
    put("index.json", "{}");
    CHECK_STR(locate(note, sizeof note, &err), strrchr(root, '/') + 1);
    CHECK_STR(note, "");
    CHECK(unlink(at("index.json")) == 0);
    CHECK(ckpt_remove_tree(at("step-00000003")) == 0);
    CHECK(ckpt_remove_tree(at("step-00000006")) == 0);
    put("latest", "step-00000006\n");
    CHECK(locate(note, sizeof note, &err) == NULL);
    snprintf(want, sizeof want,
             "%s/latest names step-00000006, which is missing or incomplete (no index.json), and %s holds no complete step folder",
             root, root);
    CHECK_STR(err.msg, want);
    CHECK(unlink(at("latest")) == 0);
    CHECK(locate(note, sizeof note, &err) == NULL);
    snprintf(want, sizeof want,
             "%s: not a checkpoint: no pointer 'latest', no index.json and no complete step folder (a save into it that did not complete?)",
             root);
    CHECK_STR(err.msg, want);
    CHECK(rt_ckpt_locate(at("notes.txt"), &(char *){NULL}, note, sizeof note, &err) != 0);
    CHECK(strstr(err.msg, "notes.txt: not a folder: a checkpoint is one") != NULL);
    CHECK(rt_ckpt_locate(at("none"), &(char *){NULL}, note, sizeof note, &err) != 0);
    CHECK(strstr(err.msg, "none: no such checkpoint folder") != NULL);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/test_ckpt_folder_%ld", (long)getpid());
    plan.naxes = 1;
    plan.axis_size[0] = 1;
    plan.axis_name[0] = "dp";
    plan.stage_axis = -1;
    test_keep();
    test_leftovers();
    test_rewind();
    test_locate();
    CHECK(ckpt_remove_tree(root) == 0);
    return CHECK_DONE();
}
