/* Unit tests for src/core/csv: RFC 4180 details, error positions, limits,
 * out-of-memory handling, and every MEDEC / MedErrBench CSV file. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#include "core/csv.h"
#include "medtrust/core.h"

/* ==== Helpers ==== */

/* Writes n bytes to a new temporary file; its path goes to 'path'. */
static void write_temp(char *path, size_t pn, const char *data, size_t n)
{
    int fd;
    FILE *f;

    snprintf(path, pn, "/tmp/mt_test_csv_XXXXXX");
    fd = mkstemp(path);
    CHECK(fd >= 0);
    f = fdopen(fd, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static struct mt_csv *open_mem(const char *s)
{
    struct mt_csv *c = NULL;

    CHECK_OK(mtx_csv_open_mem("t.csv", s, strlen(s), NULL, &c, NULL));
    return c;
}

/* Reads the next record and checks its fields against 'want' (n fields). */
static void expect_record(struct mt_csv *c, const char *const *want, size_t n)
{
    struct mt_error err;
    int got = 0;
    size_t i;

    CHECK_OK(mtx_csv_next(c, &got, &err));
    CHECK(got == 1);
    assert_int_equal(mtx_csv_nfields(c), n);
    for (i = 0; i < n; i++) {
        struct mt_str f = mtx_csv_field(c, i);
        assert_int_equal(f.n, strlen(want[i]));
        assert_memory_equal(f.p, want[i], f.n);
        CHECK(f.p[f.n] == '\0'); /* fields are NUL-terminated */
    }
}

static void expect_end(struct mt_csv *c)
{
    int got = 1;

    CHECK_OK(mtx_csv_next(c, &got, NULL));
    CHECK(got == 0);
}

/* Reads until an error; checks the status and the message. */
static void expect_error(const char *s, const struct mt_csv_params *params,
                         enum mt_status want, const char *msg)
{
    struct mt_csv *c = NULL;
    struct mt_error err;
    enum mt_status st;
    int got = 1;

    CHECK_OK(mtx_csv_open_mem("t.csv", s, strlen(s), params, &c, NULL));
    do
        st = mtx_csv_next(c, &got, &err);
    while (st == MT_OK && got);
    assert_int_equal(st, want);
    assert_string_equal(err.msg, msg);
    /* Errors are sticky. */
    CHECK(mtx_csv_next(c, &got, NULL) == want && got == 0);
    mtx_csv_close(c);
}

/* ==== RFC 4180 details ==== */

static void test_csv_quotes_newlines_and_empty_fields_parse(void **state)
{
    static const char *const r1[] = {"id", "text", "n"};
    static const char *const r2[] = {"1", "say \"hi\"\nthen, go", ""};
    static const char *const r3[] = {"", "", ""};
    static const char *const r4[] = {"2", "", "x"};
    struct mt_csv *c = open_mem("id,text,n\n"
                                "1,\"say \"\"hi\"\"\nthen, go\",\n"
                                ",,\n"
                                "2,\"\",x");
    (void)state;
    expect_record(c, r1, 3);
    CHECK(mtx_csv_line(c) == 1);
    expect_record(c, r2, 3);
    CHECK(mtx_csv_line(c) == 2);
    expect_record(c, r3, 3);
    CHECK(mtx_csv_line(c) == 4);
    expect_record(c, r4, 3); /* last line without a newline */
    expect_end(c);
    expect_end(c);
    mtx_csv_close(c);
}

static void test_csv_crlf_and_bom_are_stripped(void **state)
{
    static const char *const r1[] = {"Text ID", "b"};
    static const char *const r2[] = {"x\r\ny", "z"};
    static const char *const r3[] = {"lone\rcr", "w"};
    struct mt_csv *c = open_mem("\xEF\xBB\xBFText ID,b\r\n"
                                "\"x\r\ny\",z\r\n"
                                "\r\n"
                                "lone\rcr,w\r\n");
    (void)state;
    expect_record(c, r1, 2);
    assert_int_equal(mtx_csv_find(c, "Text ID"), 0);
    assert_int_equal(mtx_csv_find(c, "b"), 1);
    assert_int_equal(mtx_csv_find(c, "c"), -1);
    expect_record(c, r2, 2);
    expect_record(c, r3, 2); /* the blank CRLF line is skipped */
    assert_int_equal(mtx_csv_line(c), 5);
    expect_end(c);
    CHECK(mtx_csv_field(c, 7).n == 0);
    mtx_csv_close(c);
}

static void test_csv_custom_delimiter_splits(void **state)
{
    static const char *const r1[] = {"a,b", "c"};
    struct mt_csv_params p;
    struct mt_csv *c = NULL;
    const char *s = "a,b;c\n";
    (void)state;
    mtx_csv_default_params(&p);
    p.delim = ';';
    CHECK_OK(mtx_csv_open_mem("t.csv", s, strlen(s), &p, &c, NULL));
    expect_record(c, r1, 2);
    expect_end(c);
    mtx_csv_close(c);
}

static void test_csv_empty_input_has_no_records(void **state)
{
    struct mt_csv *c = NULL;
    (void)state;
    CHECK_OK(mtx_csv_open_mem("e.csv", NULL, 0, NULL, &c, NULL));
    expect_end(c);
    mtx_csv_close(c);
    c = open_mem("\xEF\xBB\xBF\n\n");
    expect_end(c);
    mtx_csv_close(c);
}

/* ==== Malformed input ==== */

static void test_csv_unterminated_quote_is_parse_error(void **state)
{
    (void)state;
    expect_error("a,b\n1,\"abc\nmore", NULL, MT_EPARSE,
                 "t.csv:2:3: unterminated quoted field");
}

static void test_csv_stray_quote_is_parse_error(void **state)
{
    (void)state;
    expect_error("a,b\r\nxy\"z,1\r\n", NULL, MT_EPARSE,
                 "t.csv:2:3: quote in unquoted field");
}

static void test_csv_text_after_quote_is_parse_error(void **state)
{
    (void)state;
    expect_error("a,b\n\"x\nx\"y,1\n", NULL, MT_EPARSE,
                 "t.csv:3:3: text after closing quote");
}

static void test_csv_over_limits_is_limit_error(void **state)
{
    struct mt_csv_params p;
    (void)state;
    mtx_csv_default_params(&p);
    p.max_record = 10;
    expect_error("0123456789\n01234,678901\n", &p, MT_ELIMIT,
                 "t.csv:2:12: record exceeds max_record");
    mtx_csv_default_params(&p);
    p.max_fields = 3;
    expect_error("a,b,c\na,b,c,d\n", &p, MT_ELIMIT,
                 "t.csv:2:7: record exceeds max_fields");
}

static void test_csv_bad_params_are_rejected(void **state)
{
    struct mt_csv_params p;
    struct mt_csv *c = NULL;
    struct mt_error err;
    (void)state;
    mtx_csv_default_params(&p);
    p.delim = '"';
    CHECK(mtx_csv_open_mem("t", "", 0, &p, &c, &err) == MT_EINVAL);
    CHECK(c == NULL);
    CHECK(mtx_csv_open("/nonexistent/x.csv", NULL, &c, &err) == MT_EIO);
    CHECK(strstr(err.msg, "/nonexistent/x.csv") != NULL);
    CHECK(c == NULL);
}

/* ==== Files ==== */

static void test_csv_file_errors_name_the_file(void **state)
{
    const char *s = "h1,h2\n\"ok\",1\nbad\"q,2\n";
    char path[64];
    char want[128];
    struct mt_csv *c = NULL;
    struct mt_error err;
    int got = 0;
    (void)state;
    write_temp(path, sizeof path, s, strlen(s));
    CHECK_OK(mtx_csv_open(path, NULL, &c, &err));
    CHECK_OK(mtx_csv_next(c, &got, &err));
    CHECK_OK(mtx_csv_next(c, &got, &err));
    CHECK(mtx_csv_next(c, &got, &err) == MT_EPARSE);
    snprintf(want, sizeof want, "%s:3:4: quote in unquoted field", path);
    assert_string_equal(err.msg, want);
    mtx_csv_close(c);
    unlink(path);
}

/* A record far larger than one read block, with a CRLF and a doubled quote
 * straddling block boundaries. */
static void test_csv_records_span_read_blocks(void **state)
{
    size_t big = 300 * 1024;
    size_t n = big + 64;
    char *s = malloc(n);
    char path[64];
    struct mt_csv *c = NULL;
    struct mt_str f;
    size_t i;
    size_t len = 0;
    int got = 0;
    (void)state;
    CHECK(s != NULL);
    memcpy(s, "a,\"", 3);
    len = 3;
    for (i = 0; i < big; i++)
        s[len++] = (char)('a' + i % 26);
    s[65536 - 1] = '\r'; /* CR as the last byte of block 1 ... */
    s[65536] = '\n';     /* ... LF as the first of block 2 (both data) */
    s[131072 - 1] = '"'; /* doubled quote across blocks 2 and 3 */
    s[131072] = '"';
    memcpy(s + len, "\"\r\nz,y", 6);
    len += 6;
    write_temp(path, sizeof path, s, len);
    CHECK_OK(mtx_csv_open(path, NULL, &c, NULL));
    CHECK_OK(mtx_csv_next(c, &got, NULL));
    CHECK(got && mtx_csv_nfields(c) == 2);
    f = mtx_csv_field(c, 1);
    assert_int_equal(f.n, big - 1);
    CHECK(f.p[65536 - 4] == '\r' && f.p[65536 - 3] == '\n');
    CHECK(f.p[131072 - 4] == '"' && f.p[131072 - 3] != '"');
    CHECK_OK(mtx_csv_next(c, &got, NULL));
    CHECK(got && mtx_csv_line(c) == 3);
    CHECK(mtx_str_eq_c(mtx_csv_field(c, 1), "y"));
    expect_end(c);
    mtx_csv_close(c);
    unlink(path);
    free(s);
}

/* ==== Out of memory ==== */

/* Opens and reads everything; returns the first failure. */
static enum mt_status read_all(const char *path, const char *mem,
                               size_t *records)
{
    struct mt_csv *c = NULL;
    enum mt_status st;
    int got = 1;

    *records = 0;
    if (path)
        st = mtx_csv_open(path, NULL, &c, NULL);
    else
        st = mtx_csv_open_mem("m.csv", mem, strlen(mem), NULL, &c, NULL);
    while (st == MT_OK && got) {
        st = mtx_csv_next(c, &got, NULL);
        *records += (size_t)(st == MT_OK && got);
    }
    mtx_csv_close(c);
    return st;
}

static void oom_loop(const char *path, const char *mem, size_t want)
{
    size_t records;
    enum mt_status st;
    long n;

    for (n = 0;; n++) {
        mt_alloc_fail_after(n);
        st = read_all(path, mem, &records);
        mt_alloc_fail_reset();
        if (st == MT_OK)
            break;
        assert_int_equal(st, MT_ENOMEM);
        CHECK(mt_alloc_failures() > 0);
        CHECK(n < 1000);
    }
    CHECK(n > 0);
    assert_int_equal(records, want);
}

static void test_csv_oom_fails_cleanly_then_succeeds(void **state)
{
    char fields[2048];
    char doc[4096];
    char path[64];
    size_t i;
    (void)state;
    /* Enough fields and bytes to force several buffer regrowths. */
    for (i = 0; i < 99; i++) {
        fields[i * 2] = 'x';
        fields[i * 2 + 1] = ',';
    }
    fields[198] = '\0';
    snprintf(doc, sizeof doc, "h\n\"%0600d\"\n%s\n", 7, fields);
    oom_loop(NULL, doc, 3);
    write_temp(path, sizeof path, doc, strlen(doc));
    oom_loop(path, NULL, 3);
    unlink(path);
}

/* ==== Real data ==== */

struct data_file {
    const char *rel;
    size_t rows;
    size_t with_error; /* rows with Error Flag 1; SIZE_MAX = not checked */
};

static const struct data_file data_files[] = {
    {"medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv", 574,
     319},
    {"mederrbench/train/reviewed_data_EN_train.csv", 682, SIZE_MAX},
    {"mederrbench/validation/reviewed_data_EN_validation.csv", 106, SIZE_MAX},
    {"mederrbench/test/reviewed_data_EN_test.csv", 208, SIZE_MAX},
    {"mederrbench/train/reviewed_data_CN_train.csv", 700, SIZE_MAX},
    {"mederrbench/validation/reviewed_data_CN_validation.csv", 100, SIZE_MAX},
    {"mederrbench/test/reviewed_data_CN_test.csv", 200, SIZE_MAX},
    {"mederrbench/train/reviewed_data_ARA_train.csv", 334, SIZE_MAX},
    {"mederrbench/validation/reviewed_data_ARA_validation.csv", 51, SIZE_MAX},
    {"mederrbench/test/reviewed_data_ARA_test.csv", 97, SIZE_MAX},
};
#define N_DATA_FILES (sizeof data_files / sizeof data_files[0])

/* Checks the header of a MEDEC-style file; returns the flag column. */
static size_t check_header(struct mt_csv *c)
{
    static const char *const need[] = {
        "Text ID",           "Text",
        "Sentences",         "Error Flag",
        "Error Sentence ID", "Corrected Sentence"};
    size_t i;

    for (i = 0; i < sizeof need / sizeof need[0]; i++)
        CHECK(mtx_csv_find(c, need[i]) >= 0);
    return (size_t)mtx_csv_find(c, "Error Flag");
}

static void check_data_file(const struct data_file *d)
{
    char path[1024];
    struct mt_csv *c = NULL;
    struct mt_error err;
    size_t nf;
    size_t flag;
    size_t rows = 0;
    size_t flagged = 0;
    int got = 0;

    test_data_path(path, sizeof path, d->rel);
    CHECK_OK(mtx_csv_open(path, NULL, &c, &err));
    CHECK_OK(mtx_csv_next(c, &got, &err));
    CHECK(got);
    nf = mtx_csv_nfields(c);
    flag = check_header(c);
    for (;;) {
        enum mt_status st = mtx_csv_next(c, &got, &err);
        if (st != MT_OK)
            fail_msg("%s", err.msg);
        if (!got)
            break;
        rows++;
        assert_int_equal(mtx_csv_nfields(c), nf);
        CHECK(mtx_csv_field(c, 0).n > 0); /* Text ID */
        CHECK(mtx_str_eq_c(mtx_csv_field(c, flag), "0") ||
              mtx_str_eq_c(mtx_csv_field(c, flag), "1"));
        flagged += (size_t)mtx_str_eq_c(mtx_csv_field(c, flag), "1");
    }
    assert_int_equal(rows, d->rows);
    if (d->with_error != SIZE_MAX) {
        assert_int_equal(flagged, d->with_error);
        assert_int_equal(rows - flagged, d->rows - d->with_error);
    }
    mtx_csv_close(c);
}

static int known_file(const char *rel)
{
    size_t i;

    for (i = 0; i < N_DATA_FILES; i++) {
        if (strcmp(data_files[i].rel, rel) == 0)
            return 1;
    }
    return 0;
}

/* Counts .csv files under data/rel, failing on any not in data_files. */
static size_t walk_csv(const char *rel)
{
    char path[1024];
    char sub[512];
    struct dirent *e;
    struct stat sb;
    size_t found = 0;
    DIR *d = opendir(test_data_path(path, sizeof path, rel));

    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        CHECK(stat(test_data_path(path, sizeof path, sub), &sb) == 0);
        if (S_ISDIR(sb.st_mode)) {
            found += walk_csv(sub);
        } else if (n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0) {
            if (!known_file(sub))
                fail_msg("unexpected data file %s", sub);
            found++;
        }
    }
    closedir(d);
    return found;
}

static void test_csv_every_dataset_file_has_expected_rows(void **state)
{
    size_t i;
    (void)state;
    assert_int_equal(walk_csv("medec") + walk_csv("mederrbench"), N_DATA_FILES);
    for (i = 0; i < N_DATA_FILES; i++)
        check_data_file(&data_files[i]);
}

/* The field writer quotes what needs it, and the reader reads it back. */
static void test_csv_put_field_round_trips(void **state)
{
    static const char *const f[] = {"plain", "", "a,b", "say \"hi\"",
                                    "two\r\nlines"};
    struct mt_buf b = MT_BUF_INIT(4096);
    struct mt_csv *c = NULL;
    struct mt_error err = {MT_OK, ""};
    int got = 0;
    size_t i;

    (void)state;
    for (i = 0; i < 5; i++) {
        if (i)
            assert_int_equal(mtx_buf_putc(&b, ','), MT_OK);
        assert_int_equal(mtx_csv_put_field(&b, f[i], strlen(f[i])), MT_OK);
    }
    assert_int_equal(mtx_buf_putc(&b, '\0'), MT_OK);
    assert_string_equal(b.data,
                        "plain,,\"a,b\",\"say \"\"hi\"\"\",\"two\r\nlines\"");
    assert_int_equal(mtx_csv_open_mem("t", b.data, b.len - 1, NULL, &c, &err),
                     MT_OK);
    assert_int_equal(mtx_csv_next(c, &got, &err), MT_OK);
    assert_true(got);
    assert_int_equal(mtx_csv_nfields(c), 5);
    for (i = 0; i < 5; i++) {
        struct mt_str s = mtx_csv_field(c, i);

        assert_int_equal(s.n, strlen(f[i]));
        assert_memory_equal(s.n ? s.p : "", f[i], s.n);
    }
    mtx_csv_close(c);
    mtx_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quotes_newlines_and_empty_fields_parse),
        cmocka_unit_test(test_csv_crlf_and_bom_are_stripped),
        cmocka_unit_test(test_csv_put_field_round_trips),
        cmocka_unit_test(test_csv_custom_delimiter_splits),
        cmocka_unit_test(test_csv_empty_input_has_no_records),
        cmocka_unit_test(test_csv_unterminated_quote_is_parse_error),
        cmocka_unit_test(test_csv_stray_quote_is_parse_error),
        cmocka_unit_test(test_csv_text_after_quote_is_parse_error),
        cmocka_unit_test(test_csv_over_limits_is_limit_error),
        cmocka_unit_test(test_csv_bad_params_are_rejected),
        cmocka_unit_test(test_csv_file_errors_name_the_file),
        cmocka_unit_test(test_csv_records_span_read_blocks),
        cmocka_unit_test(test_csv_oom_fails_cleanly_then_succeeds),
        cmocka_unit_test(test_csv_every_dataset_file_has_expected_rows),
    };
    return cmocka_run_group_tests_name("csv", tests, NULL, NULL);
}
