/* Unit tests for src/core/jsonl: good and bad lines, skip mode, limits,
 * out-of-memory handling, and the MedQuAD and PubMedQA corpora. */
#include <unistd.h>

#include "check.h"

#include "core/jsonl.h"
#include "medtrust/core.h"

/* ==== Helpers ==== */

/* Writes s to a new temporary file; its path goes to 'path'. */
static void write_temp(char *path, size_t pn, const char *s)
{
    size_t n = strlen(s);
    int fd;
    FILE *f;

    snprintf(path, pn, "/tmp/mt_test_jsonl_XXXXXX");
    fd = mkstemp(path);
    CHECK(fd >= 0);
    f = fdopen(fd, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(s, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static struct mt_jsonl *open_temp(char *path, size_t pn, const char *s,
                                  int skip_bad, size_t max_line)
{
    struct mt_jsonl_params p = mtx_jsonl_default_params();
    struct mt_jsonl *r = NULL;
    struct mt_error err;

    p.skip_bad = skip_bad;
    if (max_line)
        p.max_line = max_line;
    write_temp(path, pn, s);
    CHECK_OK(mtx_jsonl_open(path, &p, &r, &err));
    return r;
}

/* Reads the next object and checks its "id" and its line number. */
static void expect_id(struct mt_jsonl *r, json_int_t id, size_t line)
{
    struct mt_error err;
    json_t *o = NULL;

    CHECK_OK(mtx_jsonl_next(r, &o, &err));
    CHECK(o != NULL && json_is_object(o));
    assert_int_equal(json_integer_value(json_object_get(o, "id")), id);
    assert_int_equal(mtx_jsonl_line(r), line);
}

static void expect_eof(struct mt_jsonl *r)
{
    json_t *o = (json_t *)1;

    CHECK_OK(mtx_jsonl_next(r, &o, NULL));
    CHECK(o == NULL);
}

/* ==== Good input ==== */

static void test_jsonl_good_file_reads_objects_in_order(void **state)
{
    char path[64];
    struct mt_jsonl *r = open_temp(path, sizeof path,
                                   "\xEF\xBB\xBF{\"id\": 1}\r\n"
                                   "\n"
                                   "   \t\r\n"
                                   "{\"id\": 2, \"text\": \"a\\nb\"}\n"
                                   "{\"id\": 3}",
                                   0, 0);
    (void)state;
    CHECK(mtx_jsonl_line(r) == 0);
    expect_id(r, 1, 1);
    expect_id(r, 2, 4);
    expect_id(r, 3, 5); /* last line without a newline */
    expect_eof(r);
    expect_eof(r);
    CHECK(mtx_jsonl_skipped(r) == 0);
    mtx_jsonl_close(r);
    unlink(path);
}

static void test_jsonl_missing_file_is_io_error(void **state)
{
    struct mt_jsonl *r = NULL;
    struct mt_error err;
    (void)state;
    CHECK(mtx_jsonl_open("/nonexistent/c.jsonl", NULL, &r, &err) == MT_EIO);
    CHECK(r == NULL);
    CHECK(strstr(err.msg, "/nonexistent/c.jsonl") != NULL);
}

/* ==== Bad input ==== */

/* Reads objects until an error; checks its status and message prefix. */
static void expect_bad(const char *s, size_t max_line, enum mt_status want,
                       size_t good, size_t line, const char *why)
{
    char path[64];
    char prefix[128];
    struct mt_jsonl *r = open_temp(path, sizeof path, s, 0, max_line);
    struct mt_error err;
    enum mt_status st;
    json_t *o = NULL;
    size_t n = 0;

    while ((st = mtx_jsonl_next(r, &o, &err)) == MT_OK && o)
        n++;
    assert_int_equal(st, want);
    assert_int_equal(n, good);
    snprintf(prefix, sizeof prefix, "%s:%zu: %s", path, line, why);
    if (strncmp(err.msg, prefix, strlen(prefix)) != 0)
        fail_msg("got '%s', want prefix '%s'", err.msg, prefix);
    CHECK(mtx_jsonl_next(r, &o, NULL) == want && o == NULL); /* sticky */
    mtx_jsonl_close(r);
    unlink(path);
}

static void test_jsonl_bad_line_reports_line_number(void **state)
{
    (void)state;
    expect_bad("{\"id\": 1}\n\n{\"id\": 2,}\n{\"id\": 3}\n", 0, MT_EPARSE, 1, 3,
               "invalid JSON at column");
}

static void test_jsonl_non_object_line_is_parse_error(void **state)
{
    (void)state;
    expect_bad("{\"id\": 1}\n[1, 2]\n", 0, MT_EPARSE, 1, 2,
               "not a JSON object");
    expect_bad("\"str\"\n", 0, MT_EPARSE, 0, 1, "not a JSON object");
}

static void test_jsonl_long_line_is_limit_error(void **state)
{
    (void)state;
    /* max_line 12: the first line has 12 bytes, the second 13. */
    expect_bad("{\"id\":    1}\r\n{\"id\":     2}\n", 12, MT_ELIMIT, 1, 2,
               "line longer than 12 bytes");
}

static void test_jsonl_skip_bad_counts_skipped_lines(void **state)
{
    char path[64];
    struct mt_jsonl *r = open_temp(path, sizeof path,
                                   "{\"id\": 1}\n"
                                   "not json\n"
                                   "[1]\n"
                                   "{\"id\": 4}\n"
                                   "{\"id\": 5, \"pad\": \"xxxxxxxxxx\"}\n"
                                   "{\"id\": 6}\n"
                                   "{\"id\"\n",
                                   1, 20);
    (void)state;
    expect_id(r, 1, 1);
    assert_int_equal(mtx_jsonl_skipped(r), 0);
    expect_id(r, 4, 4);
    assert_int_equal(mtx_jsonl_skipped(r), 2);
    expect_id(r, 6, 6);
    assert_int_equal(mtx_jsonl_skipped(r), 3); /* line 5 is too long */
    expect_eof(r);
    assert_int_equal(mtx_jsonl_skipped(r), 4);
    mtx_jsonl_close(r);
    unlink(path);
}

/* on_bad hears each skipped line as "FILE:LINE: why"; a status it returns
 * ends the reading with that error. */
struct bad_seen {
    char msg[4][MT_ERROR_MSG_MAX];
    size_t n;
    size_t stop_at; /* fail on this call (1-based), 0 never */
};

static enum mt_status on_bad(struct mt_error *e, void *user)
{
    struct bad_seen *b = user;

    if (b->n < 4)
        snprintf(b->msg[b->n], sizeof b->msg[0], "%s", e->msg);
    b->n++;
    if (b->stop_at && b->n == b->stop_at)
        return mt_fail(e, MT_ENOMEM, "stopped by on_bad");
    return MT_OK;
}

static void test_jsonl_on_bad_names_file_and_line(void **state)
{
    const char *text = "{\"id\": 1}\nnot json\n[1]\n{\"id\": 4}\n";
    struct mt_jsonl_params p = mtx_jsonl_default_params();
    struct bad_seen b;
    struct mt_jsonl *r = NULL;
    struct mt_error err;
    json_t *o = NULL;
    char path[64];
    char want[128];
    (void)state;
    memset(&b, 0, sizeof b);
    write_temp(path, sizeof path, text);
    p.skip_bad = 1;
    p.on_bad = on_bad;
    p.bad_user = &b;
    CHECK_OK(mtx_jsonl_open(path, &p, &r, &err));
    expect_id(r, 1, 1);
    expect_id(r, 4, 4);
    expect_eof(r);
    assert_int_equal(b.n, 2);
    snprintf(want, sizeof want, "%s:2: invalid JSON", path);
    CHECK(strncmp(b.msg[0], want, strlen(want)) == 0);
    snprintf(want, sizeof want, "%s:3: not a JSON object", path);
    CHECK(strcmp(b.msg[1], want) == 0);
    mtx_jsonl_close(r);
    /* the second bad line's callback fails: the reader stops there */
    memset(&b, 0, sizeof b);
    b.stop_at = 2;
    CHECK_OK(mtx_jsonl_open(path, &p, &r, &err));
    expect_id(r, 1, 1);
    CHECK(mtx_jsonl_next(r, &o, &err) == MT_ENOMEM);
    CHECK(strcmp(err.msg, "stopped by on_bad") == 0);
    CHECK(mtx_jsonl_next(r, &o, &err) == MT_ENOMEM); /* sticky */
    mtx_jsonl_close(r);
    unlink(path);
}

/* A line much longer than one read block is read whole. */
static void test_jsonl_long_line_spans_read_blocks(void **state)
{
    size_t big = 200 * 1024;
    char *s = malloc(big + 64);
    char path[64];
    struct mt_jsonl *r;
    json_t *o = NULL;
    size_t n;
    (void)state;
    CHECK(s != NULL);
    n = (size_t)sprintf(s, "{\"id\": 1, \"t\": \"");
    memset(s + n, 'q', big);
    n += big;
    strcpy(s + n, "\"}\r\n{\"id\": 2}\n");
    r = open_temp(path, sizeof path, s, 0, 0);
    CHECK_OK(mtx_jsonl_next(r, &o, NULL));
    assert_int_equal(strlen(json_string_value(json_object_get(o, "t"))), big);
    expect_id(r, 2, 2);
    expect_eof(r);
    mtx_jsonl_close(r);
    unlink(path);
    free(s);
}

/* ==== Out of memory ====
 * mtx_jsonl_open routes jansson through mt_malloc, so injected failures hit
 * JSON parsing too and must surface as MT_ENOMEM. */

static enum mt_status read_all(const char *path, size_t *count)
{
    struct mt_jsonl *r = NULL;
    enum mt_status st;
    json_t *o = (json_t *)1;

    *count = 0;
    st = mtx_jsonl_open(path, NULL, &r, NULL);
    while (st == MT_OK && o) {
        st = mtx_jsonl_next(r, &o, NULL);
        *count += (size_t)(st == MT_OK && o);
    }
    mtx_jsonl_close(r);
    return st;
}

static void test_jsonl_oom_fails_cleanly_then_succeeds(void **state)
{
    char path[64];
    size_t count = 0;
    enum mt_status st;
    long n;
    (void)state;
    write_temp(path, sizeof path,
               "{\"id\": 1, \"a\": [1, 2, {\"b\": \"text\"}]}\n"
               "\n{\"id\": 2, \"title\": \"x\", \"text\": \"y\"}\n");
    for (n = 0;; n++) {
        mt_alloc_fail_after(n);
        st = read_all(path, &count);
        mt_alloc_fail_reset();
        if (st == MT_OK)
            break;
        assert_int_equal(st, MT_ENOMEM);
        CHECK(n < 1000);
    }
    CHECK(n > 5); /* jansson's allocations were counted too */
    assert_int_equal(count, 2);
    unlink(path);
}

/* ==== Real corpora ==== */

static void count_corpus(const char *rel, size_t want)
{
    char path[1024];
    struct mt_jsonl *r = NULL;
    struct mt_error err;
    json_t *o = NULL;
    size_t n = 0;

    test_data_path(path, sizeof path, rel);
    CHECK_OK(mtx_jsonl_open(path, NULL, &r, &err));
    for (;;) {
        if (mtx_jsonl_next(r, &o, &err) != MT_OK)
            fail_msg("%s", err.msg);
        if (!o)
            break;
        n++;
        CHECK(json_is_string(json_object_get(o, "id")));
        CHECK(json_is_string(json_object_get(o, "text")));
    }
    assert_int_equal(n, want);
    assert_int_equal(mtx_jsonl_line(r), want);
    assert_int_equal(mtx_jsonl_skipped(r), 0);
    mtx_jsonl_close(r);
}

static void test_jsonl_medquad_corpus_has_15809_objects(void **state)
{
    (void)state;
    count_corpus("medquad/corpus.jsonl", 15809);
}

static void test_jsonl_pubmedqa_corpus_has_1000_objects(void **state)
{
    (void)state;
    count_corpus("pubmedqa/corpus.jsonl", 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonl_good_file_reads_objects_in_order),
        cmocka_unit_test(test_jsonl_missing_file_is_io_error),
        cmocka_unit_test(test_jsonl_bad_line_reports_line_number),
        cmocka_unit_test(test_jsonl_non_object_line_is_parse_error),
        cmocka_unit_test(test_jsonl_long_line_is_limit_error),
        cmocka_unit_test(test_jsonl_skip_bad_counts_skipped_lines),
        cmocka_unit_test(test_jsonl_on_bad_names_file_and_line),
        cmocka_unit_test(test_jsonl_long_line_spans_read_blocks),
        cmocka_unit_test(test_jsonl_oom_fails_cleanly_then_succeeds),
        cmocka_unit_test(test_jsonl_medquad_corpus_has_15809_objects),
        cmocka_unit_test(test_jsonl_pubmedqa_corpus_has_1000_objects),
    };
    return cmocka_run_group_tests_name("jsonl", tests, NULL, NULL);
}
