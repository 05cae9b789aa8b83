/* Unit tests for src/core: status, alloc injection, buffers, arena. */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/file.h"
#include "core/redact.h"
#include "medtrust/core.h"
#include "medtrust/params.h"

static void test_status_table_has_text(void **state)
{
    (void)state;
    CHECK(strcmp(mt_status_str(MT_OK), "success") == 0);
    CHECK(strcmp(mt_status_str(MT_ENOMEM), "out of memory") == 0);
    CHECK(strcmp(mt_status_str((enum mt_status)999), "unknown status") == 0);
}

static void test_fail_records_message(void **state)
{
    struct mt_error err;
    (void)state;
    CHECK(mt_fail(&err, MT_EPARSE, "line %d", 7) == MT_EPARSE);
    CHECK(err.status == MT_EPARSE);
    CHECK(strcmp(err.msg, "line 7") == 0);
    mt_error_prefix(&err, "%s", "f.csv");
    CHECK(strcmp(err.msg, "f.csv: line 7") == 0);
    CHECK(mt_fail(NULL, MT_EIO, "x") == MT_EIO);
}

static void test_alloc_injection_fails_nth(void **state)
{
    void *a;
    void *b;
    (void)state;
    mt_alloc_fail_after(1);
    a = mt_malloc(8);
    b = mt_malloc(8);
    mt_alloc_fail_reset();
    CHECK(a != NULL);
    CHECK(b == NULL);
    CHECK(mt_alloc_failures() == 1);
    mt_free(a);
}

static void test_buf_refuses_growth_past_max(void **state)
{
    struct mt_buf b = MT_BUF_INIT(8);
    (void)state;
    CHECK(mtx_buf_append(&b, "1234567", 7) == MT_OK);
    CHECK(mtx_buf_append(&b, "8", 1) == MT_ELIMIT);
    CHECK(b.len == 7 && strcmp(b.data, "1234567") == 0);
    mtx_buf_free(&b);
}

static void test_buf_unchanged_on_oom(void **state)
{
    struct mt_buf b = MT_BUF_INIT(1 << 20);
    char big[200];
    (void)state;
    memset(big, 'x', sizeof big);
    CHECK_OK(mtx_buf_append(&b, "ab", 2));
    mt_alloc_fail_after(0);
    CHECK(mtx_buf_append(&b, big, sizeof big) == MT_ENOMEM);
    mt_alloc_fail_reset();
    CHECK(b.len == 2 && strcmp(b.data, "ab") == 0);
    CHECK_OK(mtx_buf_printf(&b, "%0300d", 5));
    CHECK(b.len == 302);
    mtx_buf_free(&b);
}

static void test_str_trim_and_eq(void **state)
{
    struct mt_str s = mtx_str_trim(mtx_str_from("  hi \n"));
    (void)state;
    CHECK(mtx_str_eq_c(s, "hi"));
    CHECK(!mtx_str_eq_c(s, "hip"));
}

/* FNV-1a 64 against the published test vectors (the FNV reference
 * page), and continuing a hash equals hashing the whole. */
static void test_fnv1a_matches_reference(void **state)
{
    (void)state;
    CHECK(mtx_fnv1a(MTX_FNV1A_INIT, "", 0) == 0xcbf29ce484222325ULL);
    CHECK(mtx_fnv1a(MTX_FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
    CHECK(mtx_fnv1a(MTX_FNV1A_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
    CHECK(mtx_fnv1a(mtx_fnv1a(MTX_FNV1A_INIT, "foo", 3), "bar", 3) ==
          0x85944171f73967e8ULL);
}

static void test_arena_aligns_and_resets(void **state)
{
    struct mt_arena a = MT_ARENA_INIT(128);
    char *s;
    int i;
    (void)state;
    for (i = 0; i < 100; i++) {
        void *p = mtx_arena_alloc(&a, (size_t)i + 1);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p % _Alignof(max_align_t)) == 0);
    }
    s = mtx_arena_strndup(&a, "hello world", 5);
    CHECK(strcmp(s, "hello") == 0);
    mtx_arena_reset(&a);
    CHECK(a.used == 0);
    CHECK(mtx_arena_alloc(&a, 4096) != NULL);
    mtx_arena_free(&a);
}

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t got;
    CHECK(f != NULL);
    got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

/* mtx_file_write_atomic replaces a file whole, leaves no PATH.tmp, and on
 * failure leaves the old file as it was; an aborted writer leaves the old
 * file too, and its temporary file is gone. */
static void test_file_atomic_replaces_whole_or_not_at_all(void **state)
{
    char dir[] = "/tmp/mt-atomic-XXXXXX";
    char path[64], tmp[72], bad[96], got[32];
    struct mtx_file_atomic a;
    struct mt_error err;
    struct stat sb;
    mode_t um;
    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/f", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK_OK(mtx_file_write_atomic(path, "first", 5, &err));
    CHECK_OK(mtx_file_write_atomic(path, "second", 6, &err));
    slurp(path, got, sizeof got);
    CHECK(strcmp(got, "second") == 0 && access(tmp, F_OK) != 0);
    um = umask(022);
    umask(um);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == (0644 & ~um));
    CHECK_OK(mtx_file_atomic_begin(&a, path, 0600, &err));
    CHECK_OK(mtx_file_atomic_write(&a, "half", 4, &err));
    CHECK(access(tmp, F_OK) == 0);
    mtx_file_atomic_abort(&a);
    mtx_file_atomic_abort(&a); /* twice is harmless */
    slurp(path, got, sizeof got);
    CHECK(strcmp(got, "second") == 0 && access(tmp, F_OK) != 0);
    snprintf(bad, sizeof bad, "%s/missing/f", dir);
    CHECK(mtx_file_write_atomic(bad, "x", 1, &err) == MT_EIO);
    CHECK(strstr(err.msg, "missing/f.tmp") != NULL);
    CHECK(mkdir(tmp, 0755) == 0); /* PATH.tmp cannot be created */
    CHECK(mtx_file_write_atomic(path, "third", 5, &err) == MT_EIO);
    slurp(path, got, sizeof got);
    CHECK(strcmp(got, "second") == 0);
    CHECK(rmdir(tmp) == 0 && unlink(path) == 0 && rmdir(dir) == 0);
}

/* ==== Redaction: each form a spec or URL can take ==== */

static void redacts(const char *in, const char *want)
{
    char out[512];
    char *d = mtx_redact_dup(in);

    mtx_redact(in, out, sizeof out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "redact(%s) = %s, want %s\n", in, out, want);
    CHECK(strcmp(out, want) == 0);
    CHECK(d && strcmp(d, want) == 0);
    mt_free(d);
}

static void test_redact_user_info(void **state)
{
    (void)state;
    redacts("openai:http://user:pw@127.0.0.1:8080/v1#m",
            "openai:http://***@127.0.0.1:8080/v1#m");
    /* no path: the leak */
    redacts("openai:http://user:pw@host:9#m", "openai:http://***@host:9#m");
    redacts("http://user:pw@host:9", "http://***@host:9");
    redacts("https://tok@h", "https://***@h");
    redacts("http://u:p@ss@h/x", "http://***@h/x"); /* '@' in the password */
    /* nothing secret: unchanged */
    redacts("openai:http://127.0.0.1:8080/v1#m@x",
            "openai:http://127.0.0.1:8080/v1#m@x");
    redacts("gguf:/models/a@b.gguf", "gguf:/models/a@b.gguf");
    redacts("use-lite", "use-lite");
    redacts("", "");
}

static void test_redact_every_url_of_a_pool(void **state)
{
    (void)state;
    redacts("openai:http://a:1@h1:1,http://b:2@h2:2/v1,https://c@h3#m",
            "openai:http://***@h1:1,http://***@h2:2/v1,https://***@h3#m");
    redacts("openai:http://h1,http://u:p@h2#m",
            "openai:http://h1,http://***@h2#m");
    redacts("openai:http://h1/?key=k1,http://u:p@h2/?api_key=k2#m",
            "openai:http://h1/?key=***,http://***@h2/?api_key=***#m");
}

static void test_redact_key_like_query(void **state)
{
    (void)state;
    redacts("http://h/v1?api_key=sk-123", "http://h/v1?api_key=***");
    redacts("http://h/?key=a&model=x&token=b#m",
            "http://h/?key=***&model=x&token=***#m");
    redacts("http://h/?access_token=a;apiKey=b&X-Amz-Signature=c&pwd=d",
            "http://h/?access_token=***;apiKey=***&X-Amz-Signature=***&"
            "pwd=***");
    redacts("http://h/?password=a&client_secret=b&flag&v=1",
            "http://h/?password=***&client_secret=***&flag&v=1");
}

/* In running text (an error, a log line) every URL is found; what
 * mt_fail and mt_log record is redacted already. */
static void test_redact_in_messages(void **state)
{
    struct mt_error err;
    char cut[12];
    (void)state;
    redacts("http://u:p@h:1/v1/chat: HTTP 401 (see http://x/?token=t )",
            "http://***@h:1/v1/chat: HTTP 401 (see http://x/?token=*** )");
    redacts("'openai:http://u:p@h' needs BASE_URL#MODEL",
            "'openai:http://***@h' needs BASE_URL#MODEL");
    mt_fail(&err, MT_EIO, "%s: cannot reach", "http://me:secret@h:1/v1");
    CHECK(strcmp(err.msg, "http://***@h:1/v1: cannot reach") == 0);
    mt_fail(&err, MT_EIO, "x");
    mt_error_prefix(&err, "openai:http://h/?api_key=%s", "sk-1");
    CHECK(strstr(err.msg, "sk-1") == NULL && strstr(err.msg, "api_key=***"));
    /* a cut buffer still ends in a NUL and says how long it would be */
    CHECK(mtx_redact("http://u:p@h/abc", cut, sizeof cut) == 16);
    CHECK(strlen(cut) == sizeof cut - 1 && strstr(cut, "u:p") == NULL);
}

/* ==== I/O fault injection ==== */

/* The Nth write, fsync or rename fails with the errno asked for, and
 * keeps failing (a full disk stays full) until reset; atomic replacement
 * then fails with MT_EWRITE naming the file and leaves the old one. */
static void test_io_injection_fails_nth(void **state)
{
    char dir[] = "/tmp/mt-iofail-XXXXXX";
    char path[64], got[32];
    struct mt_error err;
    long n, ops;
    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/f", dir);
    mt_io_fail_after(-1, 0);
    CHECK_OK(mtx_file_write_atomic(path, "old", 3, &err));
    ops = mt_io_ops(); /* write, fsync, rename, fsync of the folder */
    CHECK(ops == 4);
    for (n = 0; n < ops; n++) {
        mt_io_fail_after(n, n % 2 ? EIO : ENOSPC);
        CHECK(mtx_file_write_atomic(path, "new", 3, &err) == MT_EWRITE);
        CHECK(strstr(err.msg, path) != NULL);
        CHECK(strstr(err.msg, n % 2 ? "Input/output" : "No space") != NULL);
        CHECK(mt_io_failures() == 1);
        slurp(path, got, sizeof got);
        CHECK(strcmp(got, n < 3 ? "old" : "new") == 0); /* renamed: new */
    }
    mt_io_fail_after(0, ENOSPC);
    CHECK(mtx_file_write_all(1, "x", 1) == MT_EWRITE && errno == ENOSPC);
    CHECK(mtx_file_fsync(1) == -1 && mtx_file_rename("a", "b") == -1);
    CHECK(mt_io_failures() == 3);
    mt_io_fail_reset();
    CHECK_OK(mtx_file_write_atomic(path, "ok", 2, &err));
    CHECK(mt_status_exit_code(MT_EWRITE) == 3);
    CHECK(unlink(path) == 0 && rmdir(dir) == 0);
}

/* A stream from mtx_file_fopen writes through the layer: an injected
 * failure shows at fflush or fclose, never as a silent loss. */
static void test_io_stream_checks_writes(void **state)
{
    char dir[] = "/tmp/mt-iostream-XXXXXX";
    char path[64], got[32];
    FILE *f;
    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t", dir);
    mt_io_fail_reset();
    f = mtx_file_fopen(path, "w", 0644);
    CHECK(f && fprintf(f, "a\n") == 2 && mtx_file_flush_sync(f, 1) == 0);
    CHECK(mtx_file_fileno(f) >= 0 && fclose(f) == 0);
    f = mtx_file_fopen(path, "a", 0644);
    mt_io_fail_after(0, ENOSPC);
    CHECK(f && fprintf(f, "b\n") == 2);
    CHECK(mtx_file_flush_sync(f, 1) == -1 && errno == ENOSPC);
    fclose(f);
    mt_io_fail_reset();
    slurp(path, got, sizeof got);
    CHECK(strcmp(got, "a\n") == 0);
    CHECK(unlink(path) == 0 && rmdir(dir) == 0);
}

/* Runs fn in a child whose power goes at file operation n; 1 when the
 * child died of it (SIGKILL), 0 when it finished. */
static int crashed_at(long n, void (*fn)(const char *), const char *path)
{
    int ws = 0;
    pid_t pid = fork();

    if (pid == 0) {
        mt_io_crash_after(n);
        fn(path);
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid);
    return WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL;
}

static void append_two(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);

    mtx_file_write_all(fd, "a\n", 2);
    mtx_file_fdatasync(fd);
    mtx_file_write_all(fd, "b\n", 2);
    mtx_file_fdatasync(fd);
    close(fd);
}

static void replace_new(const char *path)
{
    mtx_file_write_atomic(path, "new", 3, NULL);
}

/* Power loss: an append loses what came after the last fdatasync; an
 * atomic replacement leaves the old file or the new one, never a torn or
 * missing one, at whichever operation the power goes. */
static void test_io_power_loss_drops_unsynced(void **state)
{
    char dir[] = "/tmp/mt-crash-XXXXXX";
    char path[64], got[32];
    static const char *const want[] = {"", "", "a\n", "a\n", "a\nb\n"};
    long n;
    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/j", dir);
    for (n = 0; n < 5; n++) {
        unlink(path);
        CHECK(crashed_at(n, append_two, path) == (n < 4));
        if (access(path, F_OK) == 0)
            slurp(path, got, sizeof got);
        else
            got[0] = '\0';
        CHECK(strcmp(got, want[n]) == 0);
    }
    snprintf(path, sizeof path, "%s/f", dir);
    for (n = 0; n < 5; n++) {
        CHECK_OK(mtx_file_write_atomic(path, "old", 3, NULL));
        CHECK(crashed_at(n, replace_new, path) == (n < 4));
        slurp(path, got, sizeof got);
        CHECK(strcmp(got, n < 4 ? "old" : "new") == 0);
    }
    snprintf(got, sizeof got, "rm -rf %s", dir);
    CHECK(system(got) == 0);
}

/* ==== Settings tables (medtrust/params.h) ==== */

struct demo_params {
    uint32_t n;
    uint64_t seed;
    float w;
    double x;
};

static void demo_defaults(void *p)
{
    struct demo_params *d = p;

    d->n = 4;
    d->seed = 42;
    d->w = 0.7f;
    d->x = 3.8;
}

static const struct mt_param demo[] = {
    {"n", "n", offsetof(struct demo_params, n), MT_PARAM_U32, 1, 32, 12, "N",
     "steps", NULL},
    {"seed", NULL, offsetof(struct demo_params, seed), MT_PARAM_U64, 0,
     0x7fffffff, 0, "N", "seed", NULL},
    {NULL, "w", offsetof(struct demo_params, w), MT_PARAM_F32, 0, 1, 0, "X",
     "weight", NULL},
    {"x", "x", offsetof(struct demo_params, x), MT_PARAM_F64, 1, 5, 0, "X",
     "threshold", NULL},
};
static const struct mt_param_table demo_table = {
    "demo_params", demo, 4, sizeof(struct demo_params), demo_defaults};

static void test_params_table_reads_writes_and_bounds(void **state)
{
    struct demo_params p, q;
    (void)state;
    const struct mt_param *n = mt_param_find(&demo_table, "n", 0);
    const struct mt_param *w = mt_param_find(&demo_table, "w", 1);

    demo_defaults(&p);
    CHECK(n == &demo[0] && w == &demo[2]);
    CHECK(!mt_param_find(&demo_table, "w", 0));    /* no CLI option */
    CHECK(!mt_param_find(&demo_table, "seed", 1)); /* no request field */
    /* a float reads back as the decimal that was set, not 0.69999998 */
    CHECK(mt_param_get(w, &p) == 0.7);
    CHECK(mt_param_default(&demo_table, &demo[3]) == 3.8);
    CHECK(mt_param_default(&demo_table, &demo[1]) == 42);
    /* the server's cap is lower than the CLI's bound */
    CHECK(mt_param_max(n, 0) == 32 && mt_param_max(n, 1) == 12);
    CHECK(mt_param_valid(n, 32, 0) && !mt_param_valid(n, 32, 1));
    CHECK(!mt_param_valid(n, 2.5, 0) && !mt_param_valid(n, 0, 0));
    CHECK(mt_param_valid(w, 0.25, 1) && !mt_param_valid(w, 0.0 / 0.0, 1));
    mt_param_set(n, &p, 9);
    mt_param_set(&demo[1], &p, 7);
    CHECK(p.n == 9 && p.seed == 7);
    /* only members with a request field are copied and compared */
    demo_defaults(&q);
    CHECK(!mt_param_fields_differ(&demo_table, &p, &p));
    CHECK(mt_param_fields_differ(&demo_table, &p, &q));
    mt_param_copy_fields(&demo_table, &q, &p);
    CHECK(q.n == 9 && q.seed == 42);
}

/* The clock: a deadline is normalised and in the future; a sleep lasts at
 * least what it was asked; a nap with the stop flag set does not wait,
 * one without it waits until its deadline or a signal. */
static void test_clock_deadline_sleep_nap(void **state)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    struct timespec now, d = mtx_clock_deadline(1.999999999);
    double t0;
    int stop = 1;

    (void)state;
    clock_gettime(CLOCK_REALTIME, &now);
    assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
    assert_true(d.tv_sec > now.tv_sec);
    t0 = mtx_clock_now();
    mtx_clock_sleep(0.02);
    mtx_clock_sleep(-1);
    assert_true(mtx_clock_now() - t0 >= 0.02);
    assert_int_equal(mtx_clock_nap(&mu, &cv, &stop, 3600), 1);
    stop = 0;
    assert_int_equal(mtx_clock_nap(&mu, &cv, &stop, 0.01), 0);
}

/* mtx_grow: room for what is asked, doubling; on an overflow or a failed
 * allocation the array and its capacity are as they were. */
static void test_grow_doubles_and_keeps_on_failure(void **state)
{
    int *v = NULL;
    size_t cap = 0;

    (void)state;
    assert_int_equal(mtx_grow((void **)&v, &cap, 1, sizeof *v), MT_OK);
    assert_int_equal(cap, 16);
    v[15] = 7;
    assert_int_equal(mtx_grow((void **)&v, &cap, 100, sizeof *v), MT_OK);
    assert_int_equal(cap, 128);
    assert_int_equal(v[15], 7);
    assert_int_equal(mtx_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v),
                     MT_ENOMEM);
    assert_int_equal(mtx_grow((void **)&v, &cap, SIZE_MAX, 1), MT_ENOMEM);
    assert_int_equal(cap, 128);
    mt_alloc_fail_after(0);
    assert_int_equal(mtx_grow((void **)&v, &cap, 129, sizeof *v), MT_ENOMEM);
    mt_alloc_fail_reset();
    assert_int_equal(cap, 128);
    assert_int_equal(v[15], 7);
    mt_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table_has_text),
        cmocka_unit_test(test_params_table_reads_writes_and_bounds),
        cmocka_unit_test(test_fail_records_message),
        cmocka_unit_test(test_alloc_injection_fails_nth),
        cmocka_unit_test(test_buf_refuses_growth_past_max),
        cmocka_unit_test(test_buf_unchanged_on_oom),
        cmocka_unit_test(test_str_trim_and_eq),
        cmocka_unit_test(test_fnv1a_matches_reference),
        cmocka_unit_test(test_arena_aligns_and_resets),
        cmocka_unit_test(test_file_atomic_replaces_whole_or_not_at_all),
        cmocka_unit_test(test_redact_user_info),
        cmocka_unit_test(test_redact_every_url_of_a_pool),
        cmocka_unit_test(test_redact_key_like_query),
        cmocka_unit_test(test_redact_in_messages),
        cmocka_unit_test(test_io_injection_fails_nth),
        cmocka_unit_test(test_io_stream_checks_writes),
        cmocka_unit_test(test_io_power_loss_drops_unsynced),
        cmocka_unit_test(test_clock_deadline_sleep_nap),
        cmocka_unit_test(test_grow_doubles_and_keeps_on_failure),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
