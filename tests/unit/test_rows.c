/* The "LLM over rows" runner (src/batch/rows.c) that corpus vote and
 * examples --explain run on: every row runs once, on the runner's
 * threads, with the role's model; failed rows are counted; each done
 * row's line is journaled and a resumed run gives those back instead of
 * running them again; a fatal error stops new rows and is returned. The
 * model is a loopback scripted server (tests/unit/script.h) the rows
 * never call. */
#include "check.h"

#include <pthread.h>

#include "batch/rows.h"
#include "medtrust/core.h"
#include "script.h"
#include "tmpdir.h"

#define ROWS 40

struct rows_seen {
    pthread_mutex_t mu;
    int ran[ROWS];
    char ids[ROWS][8];
    char lines[ROWS][32];
    int back[ROWS];     /* given back from the journal */
    struct mt_llm *llm; /* what each row was given */
    int other_llm;      /* a row got another model */
    size_t fatal_at;    /* ROWS: none */
};

static enum mt_status row(void *user, struct mt_llm *llm, size_t i,
                          enum mtx_row_outcome *out, struct mt_error *err)
{
    struct rows_seen *s = user;

    pthread_mutex_lock(&s->mu);
    s->ran[i]++;
    s->other_llm |= llm != s->llm;
    pthread_mutex_unlock(&s->mu);
    if (i % 7 == 3)
        *out = MTX_ROW_FAILED;
    if (i == s->fatal_at)
        return mt_fail(err, MT_EIO, "row %zu: the journal is full", i);
    return MT_OK;
}

static const char *row_id(void *user, size_t i)
{
    struct rows_seen *s = user;

    snprintf(s->ids[i], sizeof s->ids[i], "r%zu", i);
    return s->ids[i];
}

static const char *row_line(void *user, size_t i)
{
    struct rows_seen *s = user;

    snprintf(s->lines[i], sizeof s->lines[i], "{\"id\":\"r%zu\",\"n\":%zu}", i,
             i * i);
    return s->lines[i];
}

static int row_back(void *user, size_t i, const char *line)
{
    struct rows_seen *s = user;
    char want[32];

    snprintf(want, sizeof want, "{\"id\":\"r%zu\",\"n\":%zu}", i, i * i);
    s->back[i] += strcmp(line, want) == 0 ? 1 : 100;
    return 1;
}

static struct mtx_rows *rows_open(struct script *sc, unsigned jobs,
                                  const char *journal, int resume)
{
    struct mtx_rows_params p;
    struct mtx_rows *r = NULL;

    mtx_rows_default_params(&p);
    p.role = "vote";
    p.llm_spec = sc->spec;
    p.jobs = jobs;
    p.quiet = 1;
    p.journal = journal;
    p.resume = resume;
    CHECK_OK(mtx_rows_open(&p, &r, NULL));
    assert_non_null(mtx_rows_llm(r));
    return r;
}

static void seen_init(struct rows_seen *s, struct mtx_rows *r, size_t fatal)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->llm = mtx_rows_llm(r);
    s->fatal_at = fatal;
}

/* Each row runs once on four threads with the runner's model; rows 3,
 * 10, 17, ... count as failed and are not journaled. Run again with
 * resume, the journal gives every done row back with its line and only
 * the failed rows run; without resume the journal starts empty. */
static void test_rows_run_journal_resume(void **state)
{
    struct script sc;
    struct rows_seen s;
    struct mtx_rows *r;
    struct mtx_rows_fns fns = {row, row_id, row_line, row_back, &s};
    char journal[128];
    size_t failed = 99, i, want = 0;

    (void)state;
    CHECK(tmpdir_make("mt-rows") == 0);
    snprintf(journal, sizeof journal, "%s/out.journal", tmpl);
    script_start(&sc, "");
    r = rows_open(&sc, 4, journal, 0);
    seen_init(&s, r, ROWS);
    CHECK_OK(mtx_rows_run(r, ROWS, &fns, &failed, NULL));
    for (i = 0; i < ROWS; i++) {
        assert_int_equal(s.ran[i], 1);
        assert_int_equal(s.back[i], 0);
        want += i % 7 == 3;
    }
    assert_int_equal(failed, want);
    assert_int_equal(s.other_llm, 0);
    mtx_rows_close(r);
    pthread_mutex_destroy(&s.mu);

    r = rows_open(&sc, 4, journal, 1);
    seen_init(&s, r, ROWS);
    CHECK_OK(mtx_rows_run(r, ROWS, &fns, &failed, NULL));
    for (i = 0; i < ROWS; i++) {
        assert_int_equal(s.ran[i], i % 7 == 3 ? 1 : 0);
        assert_int_equal(s.back[i], i % 7 == 3 ? 0 : 1);
    }
    assert_int_equal(failed, want);
    mtx_rows_close(r);
    pthread_mutex_destroy(&s.mu);

    r = rows_open(&sc, 2, journal, 0);
    seen_init(&s, r, ROWS);
    CHECK_OK(mtx_rows_run(r, ROWS, &fns, &failed, NULL));
    for (i = 0; i < ROWS; i++)
        assert_int_equal(s.ran[i] * 10 + s.back[i], 10);
    mtx_rows_close(r);
    pthread_mutex_destroy(&s.mu);
    script_stop(&sc);
    CHECK(tmpdir_remove() == 0);
}

/* A fatal error (one thread) stops the run: no later row starts, and the
 * error comes back. */
static void test_rows_fatal_stops_the_run(void **state)
{
    struct script sc;
    struct rows_seen s;
    struct mtx_rows *r;
    struct mt_error err = {MT_OK, ""};
    struct mtx_rows_fns fns = {row, NULL, NULL, NULL, &s};
    size_t failed = 0, i;

    (void)state;
    script_start(&sc, "");
    r = rows_open(&sc, 1, NULL, 0);
    seen_init(&s, r, 6);
    assert_int_equal(mtx_rows_run(r, ROWS, &fns, &failed, &err), MT_EIO);
    assert_non_null(strstr(err.msg, "row 6: the journal is full"));
    for (i = 0; i < ROWS; i++)
        assert_int_equal(s.ran[i], i <= 6 ? 1 : 0);
    assert_int_equal(failed, 1); /* row 3 */
    pthread_mutex_destroy(&s.mu);
    mtx_rows_close(r);
    script_stop(&sc);
}

/* A role and 1..64 jobs, else refused before any model opens. */
static void test_rows_refuses_bad_params(void **state)
{
    struct mtx_rows_params p;
    struct mtx_rows *r = (struct mtx_rows *)&p;

    (void)state;
    mtx_rows_default_params(&p);
    p.role = "vote";
    p.jobs = 0;
    assert_int_equal(mtx_rows_open(&p, &r, NULL), MT_EINVAL);
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_run_journal_resume),
        cmocka_unit_test(test_rows_fatal_stops_the_run),
        cmocka_unit_test(test_rows_refuses_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
