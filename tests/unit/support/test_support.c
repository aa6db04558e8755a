/* test_support.c: arenas, buffers, vectors, number formatting, the
 * diagnostic format (file:line:col, source line, caret), the nearest of
 * several names, and the output file writer (su_wfile) on regular files,
 * symlinks, FIFOs and folders in a fresh folder under /tmp, removed at the
 * end, and the runtime's error status (su_status). */
#include "check.h"
#include "support/support.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* su_job: fn's result and message; an allocation failure inside it stays
 * in the job (false, oom, no message). */
static bool job_says(void *arg, su_buf *err)
{
    su_buf_printf(err, "job %d", *(int *)arg);
    return *(int *)arg > 0;
}

static bool job_quiet(void *arg, su_buf *err)
{
    (void)err;
    return arg != NULL;
}

static bool job_oom(void *arg, su_buf *err)
{
    (void)arg;
    su_buf_puts(err, "half a message");
    su_oom(err->oom);
    return true;
}

static void test_job(void)
{
    char *msg;
    bool oom;
    int k = 3;
    CHECK(su_job(job_says, &k, &msg, &oom) && !oom && msg && !strcmp(msg, "job 3"));
    free(msg);
    k = -1;
    CHECK(!su_job(job_says, &k, &msg, &oom) && !oom && msg && !strcmp(msg, "job -1"));
    free(msg);
    CHECK(su_job(job_quiet, &k, &msg, &oom) && !oom && msg == NULL);
    CHECK(!su_job(job_quiet, NULL, &msg, &oom) && !oom && msg == NULL);
    CHECK(!su_job(job_oom, NULL, &msg, &oom) && oom && msg == NULL);
}

static void test_arena(void)
{
    su_arena a;
    su_arena_init(&a, NULL);
    char *small = su_alloc(&a, 3);
    CHECK(((uintptr_t)small & 15) == 0);
    char *big = su_alloc(&a, 1 << 20); /* larger than a chunk */
    big[(1 << 20) - 1] = 1;
    char *after = su_alloc(&a, 8); /* still served from the first chunk */
    CHECK(after == small + 16);
    CHECK_STR(su_strndup(&a, "abcdef", 3), "abc");
    CHECK_STR(su_sprintf(&a, "%s.%d", "layers", 3), "layers.3");
    /* su_alloc_raw: aligned, in the head chunk like su_alloc (or a block
     * of its own when large), its bytes the caller's to write; su_alloc
     * after it still zeroes */
    char *raw = su_alloc_raw(&a, 5);
    CHECK(((uintptr_t)raw & 15) == 0);
    memset(raw, 0xab, 5);
    char *zeroed = su_alloc(&a, 32);
    CHECK(zeroed == raw + 16);
    bool zero = true;
    for (int i = 0; i < 32; i++)
        zero = zero && zeroed[i] == 0;
    CHECK(zero);
    int64_t *wide = su_alloc_raw(&a, (1 << 20) * sizeof *wide);
    CHECK(((uintptr_t)wide & 15) == 0);
    for (int i = 0; i < 1 << 20; i++)
        wide[i] = -i;
    CHECK(wide[(1 << 20) - 1] == -((1 << 20) - 1));
    CHECK(su_alloc(&a, 8) == zeroed + 32); /* the head chunk still */
    /* su_arena_take: another arena's memory lives on in a, which keeps
     * allocating from its own head (ASan: nothing leaks, nothing freed
     * twice) */
    su_arena b, empty;
    su_arena_init(&b, NULL);
    su_arena_init(&empty, NULL);
    char *kept = su_strdup(&b, "taken");
    su_alloc(&b, 1 << 18); /* b: two chunks */
    char *last = su_alloc(&a, 8);
    su_arena_take(&a, &b);
    CHECK(b.head == NULL);
    su_arena_take(&a, &empty); /* nothing */
    char *next = su_alloc(&a, 8);
    CHECK(next == last + 16); /* still a's head chunk */
    CHECK_STR(kept, "taken");
    su_arena_take(&empty, &a); /* into an empty one */
    CHECK(a.head == NULL && empty.head != NULL);
    CHECK_STR(kept, "taken");
    su_arena_free(&b);
    su_arena_free(&a);
    su_arena_free(&empty);
}

/* A pointer map: every key put is found with its value, past several
 * doublings; a key never put (the address next to one) is not. */
static void test_ptrmap(void)
{
    su_arena a;
    su_arena_init(&a, NULL); /* allocation failures abort */
    su_ptrmap m = {.a = &a};
    CHECK(su_ptrmap_get(&m, &m) == NULL);
    enum { N = 3000 };
    static int keys[N];
    for (int i = 0; i < N; i++)
        su_ptrmap_put(&m, &keys[i], (void *)(intptr_t)(i + 1));
    CHECK(m.n == N && m.cap >= 2 * N);
    int found = 0;
    for (int i = 0; i < N; i++)
        found += su_ptrmap_get(&m, &keys[i]) == (void *)(intptr_t)(i + 1);
    CHECK(found == N);
    CHECK(su_ptrmap_get(&m, (const char *)&keys[0] + 1) == NULL);
    su_arena_free(&a);
}

static void test_buf_and_vec(void)
{
    su_buf b;
    su_buf_init(&b, NULL);
    for (int i = 0; i < 1000; i++)
        su_buf_printf(&b, "%d,", i % 10);
    CHECK_INT(b.len, 2000);
    CHECK(b.s[b.len] == 0);
    char *s = su_buf_take(&b);
    CHECK(s[0] == '0' && s[1999] == ',');
    free(s);
    CHECK(b.s == NULL && b.len == 0);
    su_vec v = {0};
    for (intptr_t i = 0; i < 100; i++)
        su_vec_push(&v, NULL, (void *)i);
    CHECK_INT(v.n, 100);
    CHECK_INT((intptr_t)v.v[99], 99);
    su_vec_free(&v);
}

static void test_fmt_double(void)
{
    char out[32];
    const double cases[] = {0.02, 1e-5, 3e-4, 1.0, -2.5, 0.1 + 0.2, 1e300, 123456789.0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        su_fmt_double(out, cases[i]);
        CHECK(strtod(out, NULL) == cases[i]);
    }
    su_fmt_double(out, 0.02);
    CHECK_STR(out, "0.02");
    su_fmt_double(out, 1.0);
    CHECK_STR(out, "1.0");
    su_fmt_double(out, 1e-5);
    CHECK_STR(out, "1e-05");
}

static void test_diag(void)
{
    const char text[] = "mesh dp\n\tx = foo + 1\n";
    su_src src = {"m.sh", text, sizeof text - 1};
    su_diag d;
    su_diag_init(&d, NULL);
    su_error_at(&d, &src, (su_loc){2, 6}, "unknown name '%s'", "foo");
    su_error_at(&d, &src, (su_loc){1, 1}, "a second error is not kept");
    CHECK_STR(d.msg.s, "m.sh:2:6: error: unknown name 'foo'\n"
                       "\tx = foo + 1\n"
                       "\t    ^\n");
    CHECK_INT(d.nerrors, 2);
    su_diag_free(&d);
    su_diag_init(&d, NULL);
    su_error_at(&d, &src, (su_loc){0, 0}, "-D Q: the model has no constant 'Q'");
    CHECK_STR(d.msg.s, "m.sh: error: -D Q: the model has no constant 'Q'\n");
    su_diag_free(&d);
}

/* ---- output files ---- */

static char dir[64];
static su_status err;

static const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* The whole file at path (up to 255 bytes), "" when it cannot be read. */
static const char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return buf;
}

/* Files in dir whose names hold part (temporary files left behind). */
static int count_files(const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    if (d)
        closedir(d);
    return n;
}

static mode_t lmode(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode : 0;
}

/* A regular file: made, replaced whole (its permissions kept), untouched
 * by an abort; a missing folder and a folder in the way are errors that
 * leave nothing behind. */
static void test_write_regular(void)
{
    const char *path = at("a.json");
    CHECK_INT(su_write_file(path, "an older and longer text", 24, &err), 0);
    CHECK_STR(slurp(path), "an older and longer text");
    CHECK(chmod(path, 0600) == 0);
    CHECK_INT(su_write_file(path, "{\"a\": 1}\n", 9, &err), 0);
    CHECK_STR(slurp(path), "{\"a\": 1}\n");
    CHECK_INT(lmode(path) & 0777, 0600);
    su_wfile w;
    CHECK_INT(su_wfile_open(&w, path, &err), 0);
    su_wfile_write(&w, "half", 4);
    su_wfile_abort(&w);
    CHECK_STR(slurp(path), "{\"a\": 1}\n");
    CHECK_INT(count_files(".tmp."), 0);

    path = at("nodir/b.json");
    CHECK_INT(su_write_file(path, "x", 1, &err), -1);
    CHECK(strstr(err.msg, "nodir/b.json: cannot create the temporary file") != NULL);
    CHECK(strstr(err.msg, "No such file or directory") != NULL);
    path = at("adir");
    CHECK(mkdir(path, 0755) == 0);
    CHECK_INT(su_write_file(path, "x", 1, &err), -1);
    CHECK(strstr(err.msg, "adir: cannot write: Is a directory") != NULL);
    CHECK(S_ISDIR(lmode(path)));
    CHECK_INT(count_files(".tmp."), 0);
    rmdir(path);
    unlink(at("a.json"));
}

/* Symlinks stay links: the target is written (made when missing), a
 * relative target taken from the link's folder, not the working one; a
 * loop is an error. */
static void test_write_symlinks(void)
{
    CHECK_INT(su_write_file(at("target"), "old", 3, &err), 0);
    CHECK(symlink(at("target"), at("link")) == 0);
    CHECK(symlink("link", at("link2")) == 0); /* a chain, relative */
    CHECK_INT(su_write_file(at("link2"), "new", 3, &err), 0);
    CHECK(S_ISLNK(lmode(at("link"))) && S_ISLNK(lmode(at("link2"))));
    CHECK_STR(slurp(at("target")), "new");

    CHECK(symlink("missing", at("dangling")) == 0);
    CHECK_INT(su_write_file(at("dangling"), "made", 4, &err), 0);
    CHECK(S_ISLNK(lmode(at("dangling"))));
    CHECK(S_ISREG(lmode(at("missing"))));
    CHECK_STR(slurp(at("missing")), "made");

    CHECK(symlink("loop2", at("loop1")) == 0 && symlink("loop1", at("loop2")) == 0);
    CHECK_INT(su_write_file(at("loop1"), "x", 1, &err), -1);
    CHECK(strstr(err.msg, "loop1: cannot write: Too many levels of symbolic links") != NULL);
    CHECK(S_ISLNK(lmode(at("loop1"))));
    CHECK_INT(count_files(".tmp."), 0);
    const char *names[] = {"target", "link", "link2", "dangling", "missing", "loop1", "loop2"};
    for (int i = 0; i < 7; i++)
        unlink(at(names[i]));
}

/* A FIFO is written into, not replaced; a reader that has gone is an
 * error (EPIPE), not a SIGPIPE that ends the process. A character device
 * (made here when we may: root) stays one. */
static void test_write_special(void)
{
    const char *fifo = at("fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK_INT(su_write_file(fifo, "streamed", 8, &err), 0);
    char got[16] = {0};
    CHECK_INT(read(rd, got, sizeof got - 1), 8);
    CHECK_STR(got, "streamed");
    CHECK(S_ISFIFO(lmode(fifo)));

    su_wfile w;
    CHECK_INT(su_wfile_open(&w, fifo, &err), 0);
    close(rd);
    CHECK_INT(su_wfile_write(&w, "lost", 4), -1);
    CHECK_INT(su_wfile_commit(&w, &err), -1);
    CHECK(strstr(err.msg, "fifo: cannot write: Broken pipe") != NULL);
    CHECK(err.kind == SU_IO);
    CHECK(S_ISFIFO(lmode(fifo)));
    unlink(fifo);

    const char *null = at("null");
    if (mknod(null, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        CHECK_INT(su_write_file(null, "gone", 4, &err), 0);
        CHECK(S_ISCHR(lmode(null)));
        unlink(null);
    }
    CHECK_INT(count_files(".tmp."), 0);
}

/* su_path_writable says beforehand what su_write_file would do: each
 * path it passes is written, each it fails is not, with the reason named;
 * a folder to make passes unless a file is in its way. */
static void test_path_writable(void)
{
    CHECK_INT(su_write_file(at("file"), "old", 3, &err), 0);
    CHECK(mkdir(at("sub"), 0755) == 0);
    CHECK(symlink(at("none/x.st"), at("one")) == 0 && symlink("one", at("two")) == 0);
    CHECK(symlink("sub/made.st", at("rel")) == 0 && symlink("rel", at("rel2")) == 0);
    CHECK(symlink("loop2", at("loop1")) == 0 && symlink("loop1", at("loop2")) == 0);
    struct {
        const char *name;
        bool ok;
        const char *why; /* a part of it */
    } cases[] = {
        {"file", true, ""},
        {"new.st", true, ""},
        {"sub/new.st", true, ""},
        {"rel2", true, ""},          /* a chain of relative links, into sub */
        {"none/x.st", false, "none does not exist"},
        {"file/x.st", false, "file is not a folder"},
        {"sub", false, "sub is a folder"},
        {"new/", false, "new/ ends in /, which names a folder"},
        {"two", false, "none does not exist"}, /* a chain into a missing folder */
        {"loop1", false, "Too many levels of symbolic links"},
    };
    char why[8300];
    CHECK(!su_path_writable("", false, why, sizeof why) && strstr(why, "empty name"));
    CHECK(!su_path_writable("", true, why, sizeof why) && strstr(why, "empty name"));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *path = at(cases[i].name);
        bool ok = su_path_writable(path, false, why, sizeof why);
        CHECK_INT(ok, cases[i].ok);
        if (!ok && !strstr(why, cases[i].why))
            fprintf(stderr, "  %s: why \"%s\", want \"%s\"\n", cases[i].name, why,
                    cases[i].why);
        CHECK(ok || strstr(why, cases[i].why));
        CHECK_INT(su_write_file(path, "x", 1, &err) == 0, cases[i].ok);
    }
    CHECK_STR(slurp(at("sub/made.st")), "x");
    CHECK(!su_path_writable(at("file"), true, why, sizeof why) && strstr(why, "file is not a folder"));
    CHECK(!su_path_writable(at("file/a/b"), true, why, sizeof why) &&
          strstr(why, "file is not a folder"));
    CHECK(su_path_writable(at("sub/a/b"), true, why, sizeof why));
    CHECK(su_path_writable(at("sub"), true, why, sizeof why));
    CHECK(lmode(at("sub/a")) == 0); /* nothing made */
    CHECK_INT(count_files(".tmp."), 0);
    const char *names[] = {"file", "new.st", "sub/new.st", "sub/made.st", "one", "two",
                           "rel", "rel2", "loop1", "loop2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unlink(at(names[i]));
    CHECK(rmdir(at("sub")) == 0);
}

static void test_write_files(void)
{
    snprintf(dir, sizeof dir, "/tmp/shardc_test_support_XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    test_write_regular();
    test_write_symlinks();
    test_write_special();
    test_path_writable();
    CHECK(rmdir(dir) == 0);
}

/* su_src_prepare: a byte order mark skipped, a NUL byte reported at its
 * place, shown as a space so the message is not cut there. */
static void test_src_prepare(void)
{
    const char bom[] = "\xef\xbb\xbfmesh dp\n";
    su_src src = {"m.sh", bom, sizeof bom - 1};
    su_diag d;
    su_diag_init(&d, NULL);
    CHECK(su_src_prepare(&src, &d));
    CHECK_INT(src.len, 8);
    CHECK(!strncmp(src.text, "mesh dp\n", 8));
    CHECK_INT(d.nerrors, 0);
    const char nul[] = "mesh dp\nx = y\0 + 1\n";
    src = (su_src){"m.sh", nul, sizeof nul - 1};
    CHECK(!su_src_prepare(&src, &d));
    CHECK_STR(d.msg.s, "m.sh:2:6: error: unexpected NUL byte (0x00): a model is UTF-8 text\n"
                       "x = y  + 1\n"
                       "     ^\n");
    su_diag_free(&d);
}

static void test_checked_math(void)
{
    int64_t r;
    CHECK(su_mul64(1ll << 31, 1ll << 31, &r) && r == 1ll << 62);
    CHECK(!su_mul64(1ll << 32, 1ll << 32, &r));
    CHECK(!su_add64(INT64_MAX, 1, &r));
}

static void test_nearest(void)
{
    CHECK_INT(su_edit_distance("kitten", "sitting", 9), 3);
    CHECK_INT(su_edit_distance("kitten", "sitting", 2), 3); /* limit + 1 */
    CHECK_INT(su_edit_distance("w1", "w1", 0), 0);
    CHECK_INT(su_edit_distance("ab", "ba", 5), 1); /* a swap is one edit */
    CHECK_INT(su_edit_distance("", "abc", 5), 3);
    CHECK_INT(su_edit_distance("abcdefgh", "a", 3), 4); /* lengths alone say too far */
    const char *names[] = {"b1", NULL, "w2", "w_1", "layers.0.attn.wq"};
    CHECK_STR(su_nearest("w1", names, 5), "b1"); /* b1, w2, w_1 all one edit: the first */
    CHECK_STR(su_nearest("W_1", names, 5), "w_1");
    CHECK_STR(su_nearest("layers.0.atn.wq", names, 5), "layers.0.attn.wq");
    CHECK_STR(su_nearest("layers.0.attn.qw", names, 5), "layers.0.attn.wq");
    CHECK(su_nearest("x", names, 5) == NULL);
    CHECK(su_nearest("embed", names, 5) == NULL);
    const char *one[] = {"y"};
    CHECK(su_nearest("x", one, 1) == NULL); /* every byte differs */
    CHECK(su_nearest("", one, 1) == NULL);
    CHECK_STR(su_nearest("Y", one, 1), "y"); /* only the case differs */
    const char *cased[] = {"w2", "W1"};
    CHECK_STR(su_nearest("w1", cased, 2), "W1");
}

/* su_status: the kind set where a failure is seen and kept by a prefix,
 * a message cut at the buffer, a NULL status ignored. */
static void test_status(void)
{
    su_status st;
    su_status_clear(&st);
    CHECK(st.kind == SU_OK && st.msg[0] == 0);
    CHECK_INT(su_fail(&st, SU_PEER, "recv from rank %d timed out", 3), -1);
    CHECK_INT(su_prefix(&st, "rank %d: instruction %d (recv): ", 1, 7), -1);
    CHECK(st.kind == SU_PEER);
    CHECK_STR(st.msg, "rank 1: instruction 7 (recv): recv from rank 3 timed out");
    CHECK_STR(su_kind_name(st.kind), "peer");
    su_status copy;
    CHECK_INT(su_status_copy(&copy, &st), -1);
    CHECK(copy.kind == SU_PEER);
    CHECK_STR(copy.msg, st.msg);
    CHECK_INT(su_fail(NULL, SU_IO, "nothing written"), -1);
    CHECK_INT(su_prefix(NULL, "x"), -1);
    /* a message and a prefix longer than the buffer: cut, NUL-terminated */
    char big[SU_MSG_LEN + 100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    su_fail(&st, SU_INPUT, "%s", big);
    CHECK_INT(strlen(st.msg), SU_MSG_LEN - 1);
    su_prefix(&st, "head: ");
    CHECK_INT(strlen(st.msg), SU_MSG_LEN - 1);
    CHECK(!strncmp(st.msg, "head: aaa", 9));
    CHECK(st.kind == SU_INPUT);
    su_prefix(&st, "%s", big);
    CHECK_INT(strlen(st.msg), SU_MSG_LEN - 1);
    CHECK(st.msg[0] == 'a');
    /* a prefix to a status that never failed is a bug, said as one */
    su_status_clear(&st);
    su_prefix(&st, "x: ");
    CHECK(st.kind == SU_INTERNAL);
    CHECK_STR(su_kind_name(SU_GPU), "GPU");
}

/* su_parallel_for: every item once, whatever the thread count; with one
 * thread, in order on the caller's thread. */
typedef struct par_ctx {
    int n;
    int *count;     /* per item: times run */
    int *order;     /* per item: its place in the run (one thread) */
    int next;
    pthread_t caller;
    bool elsewhere; /* an item ran on another thread */
} par_ctx;

static void par_item(void *ctx, int i)
{
    par_ctx *c = ctx;
    __atomic_add_fetch(&c->count[i], 1, __ATOMIC_RELAXED);
    c->order[i] = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
    volatile double x = 0; /* long enough for the threads to share the items */
    for (int k = 0; k < 100000; k++)
        x += k;
    if (!pthread_equal(pthread_self(), c->caller))
        __atomic_store_n(&c->elsewhere, true, __ATOMIC_RELAXED);
}

static void test_parallel_for(void)
{
    CHECK(su_processors() >= 1 && su_processors() <= SU_MAX_THREADS);
    const int threads[] = {1, 2, 4, 1000};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        enum { N = 300 };
        int count[N] = {0}, order[N] = {0};
        par_ctx c = {.n = N, .count = count, .order = order, .caller = pthread_self()};
        su_parallel_for(N, threads[t], par_item, &c);
        bool once = true, in_order = true;
        for (int i = 0; i < N; i++) {
            once &= count[i] == 1;
            in_order &= order[i] == i;
        }
        CHECK(once);
        if (threads[t] == 1)
            CHECK(in_order && !c.elsewhere);
        else
            CHECK(c.elsewhere); /* another thread took a share */
    }
    par_ctx none = {.caller = pthread_self()};
    su_parallel_for(0, 4, par_item, &none); /* no item: fn never runs */
    CHECK_INT(none.next, 0);
}

/* su_size_text's units, su_json_space's end of a JSON value. */
static void test_sizes_and_json(void)
{
    char b[32];
    CHECK_STR(su_size_text(812, b), "0.8 KiB");
    CHECK_STR(su_size_text(1000000, b), "976.6 KiB");
    CHECK_STR(su_size_text(56783104, b), "54.2 MiB");
    CHECK_STR(su_size_text(10231468032LL, b), "9.53 GiB");
    CHECK_STR(su_size_text((int64_t)1 << 47, b), "128.00 TiB");
    const char t[] = "{} \t\r\n x";
    CHECK_INT(su_json_space(t, sizeof t - 1, 2), 7);
    CHECK_INT(su_json_space(t, 6, 2), 6);
    const char nul[] = {'{', '}', ' ', 0, ' '};
    CHECK_INT(su_json_space(nul, sizeof nul, 2), 3); /* a NUL byte is text */
}

int main(void)
{
    test_sizes_and_json();
    test_parallel_for();
    test_status();
    test_arena();
    test_job();
    test_ptrmap();
    test_buf_and_vec();
    test_fmt_double();
    test_diag();
    test_src_prepare();
    test_checked_math();
    test_nearest();
    test_write_files();
    return CHECK_DONE();
}
