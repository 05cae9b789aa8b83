/* Unit tests for mt_index_run (`medtrust index` as one library call): the
 * inputs ingested in order with their callbacks, an empty input warned of
 * or refused, inputs and published stores refused before the store is
 * touched, cancellation, and the build's status file. */
#include "check.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/retrieve.h"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-index-run");
}

/* What the callbacks saw, one event a line. */
struct seen {
    char log[4096];
    char db[256];
    int status_seen;  /* the status file existed at a progress call */
    int status_named; /* ... and named the embedder */
    int cancel;       /* what cancelled returns */
    int cancel_at;    /* ... or 1 once this many records are in */
    uint64_t records; /* the last on_records count */
};

static void logf_(void *user, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void logf_(void *user, const char *fmt, ...)
{
    struct seen *s = user;
    size_t len = strlen(s->log);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(s->log + len, sizeof s->log - len, fmt, ap);
    va_end(ap);
}

static const char *base(const char *path)
{
    return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

static void on_input(void *user, const char *path, uint64_t lines)
{
    logf_(user, "input %s %llu\n", base(path), (unsigned long long)lines);
}

static void on_records(void *user, uint64_t records)
{
    ((struct seen *)user)->records = records;
    logf_(user, "records %llu\n", (unsigned long long)records);
}

static void on_input_done(void *user, const char *path,
                          const struct mt_ingest_result *r)
{
    logf_(user, "done %s %llu\n", base(path), (unsigned long long)r->documents);
}

static void on_warning(void *user, const char *message)
{
    logf_(user, "warning %s\n", base(message));
}

static void on_build(void *user, const char *embedder)
{
    logf_(user, "build %s\n", embedder);
}

static void on_progress(uint64_t done, uint64_t total, void *user)
{
    struct seen *s = user;
    char path[512];
    char buf[1024] = "";
    FILE *f;

    (void)done;
    (void)total;
    snprintf(path, sizeof path, "%s/%s", s->db, MT_INDEX_BUILD_STATUS);
    f = fopen(path, "r");
    if (!f)
        return;
    s->status_seen = 1;
    if (fread(buf, 1, sizeof buf - 1, f) > 0 &&
        strstr(buf, "\"embedder\":\"none\"") && strstr(buf, "\"total\":3"))
        s->status_named = 1;
    fclose(f);
}

static int cancelled(void *user)
{
    const struct seen *s = user;

    return s->cancel || (s->cancel_at && s->records >= (uint64_t)s->cancel_at);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Params with every callback into 's', BM25 only. */
static void params(struct mt_index_run_params *p, struct seen *s,
                   const char *db)
{
    memset(s, 0, sizeof *s);
    snprintf(s->db, sizeof s->db, "%s", db);
    mt_index_run_default_params(p);
    p->update.embedder_spec = "none";
    p->on_input = on_input;
    p->on_records = on_records;
    p->on_input_done = on_input_done;
    p->on_warning = on_warning;
    p->on_build = on_build;
    p->update.build.progress = on_progress;
    p->update.build.progress_user = s;
    p->cancelled = cancelled;
    p->user = s;
}

static void inputs(char (*in)[256])
{
    snprintf(in[0], 256, "%s/two.jsonl", tmpl);
    snprintf(in[1], 256, "%s/empty.jsonl", tmpl);
    snprintf(in[2], 256, "%s/one.jsonl", tmpl);
    write_file(in[0], "{\"id\":\"a\",\"text\":\"Insulin lowers glucose.\"}\n\n"
                      "{\"id\":\"b\",\"title\":\"Gout\",\"text\":\"Uric "
                      "acid.\"}\n");
    write_file(in[1], "\n\n");
    write_file(in[2], "{\"id\":\"c\",\"text\":\"Steroids reduce swelling.\"}");
}

static void test_index_run_ingests_in_order_then_builds(void **state)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct seen s;
    char in[3][256], db[256], st[512];
    const char *const ptrs[3] = {in[0], in[1], in[2]};

    (void)state;
    inputs(in);
    snprintf(db, sizeof db, "%s/db", tmpl);
    params(&p, &s, db);
    CHECK_OK(mt_index_run(db, ptrs, 3, &p, &r, NULL));
    assert_string_equal(s.log,
                        "input two.jsonl 2\nrecords 2\ndone two.jsonl 2\n"
                        "input empty.jsonl 0\nrecords 0\ndone empty.jsonl 0\n"
                        "warning empty.jsonl: 0 documents: the input is "
                        "empty\n"
                        "input one.jsonl 1\nrecords 1\ndone one.jsonl 1\n"
                        "build none\n");
    CHECK(r.inputs == 3 && r.ingest.documents == 3 && r.ingest.chunks == 3);
    CHECK(r.built && r.build.chunks_added == 3 && r.build.segments == 1);
    CHECK(s.status_seen && s.status_named);
    snprintf(st, sizeof st, "%s/%s", db, MT_INDEX_BUILD_STATUS);
    CHECK(access(st, F_OK) != 0); /* removed at the end */
    /* again: every document unchanged, no chunk to add */
    params(&p, &s, db);
    CHECK_OK(mt_index_run(db, ptrs, 3, &p, &r, NULL));
    CHECK(r.ingest.unchanged == 3 && r.ingest.documents == 0);
    CHECK(r.built && r.build.chunks_added == 0);
}

static void test_index_run_strict_refuses_an_empty_input(void **state)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct mt_error err = {MT_OK, ""};
    struct seen s;
    char in[3][256], db[256], want[512];
    const char *const ptrs[3] = {in[0], in[1], in[2]};

    (void)state;
    inputs(in);
    snprintf(db, sizeof db, "%s/strict", tmpl);
    params(&p, &s, db);
    p.strict = 1;
    CHECK(mt_index_run(db, ptrs, 3, &p, &r, &err) == MT_EPARSE);
    snprintf(want, sizeof want,
             "%s: 0 documents: the input is empty (--strict)", in[1]);
    assert_string_equal(err.msg, want);
    /* the input before it stays ingested; nothing after it, no build */
    CHECK(r.inputs == 2 && r.ingest.documents == 2 && !r.built);
    CHECK(strstr(s.log, "one.jsonl") == NULL && !strstr(s.log, "build"));
}

static void test_index_run_refuses_before_touching_the_store(void **state)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct mt_error err = {MT_OK, ""};
    struct seen s;
    char db[256];
    const char *const dir[1] = {tmpl};

    (void)state;
    snprintf(db, sizeof db, "%s/never", tmpl);
    params(&p, &s, db);
    CHECK(mt_index_run(db, dir, 1, &p, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "is a directory") != NULL);
    CHECK(access(db, F_OK) != 0);
    /* without inputs only an existing store is updated */
    CHECK(mt_index_run(db, NULL, 0, &p, &r, &err) != MT_OK);
    CHECK(access(db, F_OK) != 0);
    CHECK(s.log[0] == '\0');
}

static void test_index_run_stops_when_cancelled(void **state)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct mt_error err = {MT_OK, ""};
    struct seen s;
    char in[3][256], db[256];
    const char *const ptrs[3] = {in[0], in[1], in[2]};

    (void)state;
    inputs(in);
    snprintf(db, sizeof db, "%s/cancel", tmpl);
    params(&p, &s, db);
    s.cancel = 1;
    CHECK(mt_index_run(db, ptrs, 3, &p, &r, &err) == MT_ECANCELED);
    CHECK(r.inputs == 0 && !r.built && s.log[0] == '\0');
    /* ingest only: no search index */
    params(&p, &s, db);
    p.search_index = 0;
    CHECK_OK(mt_index_run(db, ptrs, 3, &p, &r, NULL));
    CHECK(r.inputs == 3 && !r.built && !strstr(s.log, "build"));
}

/* A cancel between two batches of one input: the first batch stays
 * committed, and running again ingests the rest. */
static void test_index_run_cancels_between_batches(void **state)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct mt_error err = {MT_OK, ""};
    struct seen s;
    char in[3][256], db[256], want[512];
    const char *const ptrs[1] = {in[0]};

    (void)state;
    inputs(in);
    snprintf(db, sizeof db, "%s/between", tmpl);
    params(&p, &s, db);
    p.ingest.batch_size = 1;
    s.cancel_at = 1;
    CHECK(mt_index_run(db, ptrs, 1, &p, &r, &err) == MT_ECANCELED);
    snprintf(want, sizeof want,
             "%s: cancelled after line 1: the batches before it are "
             "committed; ingest it again to go on",
             in[0]);
    assert_string_equal(err.msg, want);
    assert_string_equal(s.log, "input two.jsonl 2\nrecords 1\n");
    CHECK(r.inputs == 0 && !r.built);
    params(&p, &s, db);
    p.ingest.batch_size = 1;
    CHECK_OK(mt_index_run(db, ptrs, 1, &p, &r, NULL));
    CHECK(r.ingest.unchanged == 1 && r.ingest.documents == 1 && r.built);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_run_ingests_in_order_then_builds),
        cmocka_unit_test(test_index_run_strict_refuses_an_empty_input),
        cmocka_unit_test(test_index_run_refuses_before_touching_the_store),
        cmocka_unit_test(test_index_run_stops_when_cancelled),
        cmocka_unit_test(test_index_run_cancels_between_batches),
    };
    return cmocka_run_group_tests_name("index_run", tests, setup, teardown);
}
