/* The "LLM over rows" runner (src/batch/rows.c) that corpus vote and
 * examples --explain run on: every row not done already runs once, on
 * the runner's threads, with the role's model; failed rows are counted;
 * a fatal error stops new rows and is returned. The model is a loopback
 * scripted server (tests/unit/script.h) the rows never call. */
#include "check.h"

#include <pthread.h>

#include "batch/rows.h"
#include "medtrust/core.h"
#include "script.h"

#define ROWS 40

struct rows_seen {
    pthread_mutex_t mu;
    int ran[ROWS];
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

static int done(void *user, size_t i)
{
    (void)user;
    return i % 5 == 0;
}

static struct mtx_rows *rows_open(struct script *sc, unsigned jobs)
{
    struct mtx_rows_params p;
    struct mtx_rows *r = NULL;

    mtx_rows_default_params(&p);
    p.role = "vote";
    p.llm_spec = sc->spec;
    p.jobs = jobs;
    p.quiet = 1;
    CHECK_OK(mtx_rows_open(&p, &r, NULL));
    assert_non_null(mtx_rows_llm(r));
    return r;
}

/* Rows done already are skipped, the others run once each on four
 * threads with the runner's model; rows 3, 10, 17, ... count as failed. */
static void test_rows_run_each_row_once(void **state)
{
    struct script sc;
    struct rows_seen s;
    struct mtx_rows *r;
    size_t failed = 99, i, want = 0;

    (void)state;
    script_start(&sc, "");
    r = rows_open(&sc, 4);
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    s.llm = mtx_rows_llm(r);
    s.fatal_at = ROWS;
    CHECK_OK(mtx_rows_run(r, ROWS, row, done, &s, &failed, NULL));
    for (i = 0; i < ROWS; i++) {
        assert_int_equal(s.ran[i], i % 5 == 0 ? 0 : 1);
        want += i % 5 != 0 && i % 7 == 3;
    }
    assert_int_equal(failed, want);
    assert_int_equal(s.other_llm, 0);
    pthread_mutex_destroy(&s.mu);
    mtx_rows_close(r);
    script_stop(&sc);
}

/* A fatal error (one thread) stops the run: no later row starts, and the
 * error comes back. */
static void test_rows_fatal_stops_the_run(void **state)
{
    struct script sc;
    struct rows_seen s;
    struct mtx_rows *r;
    struct mt_error err = {MT_OK, ""};
    size_t failed = 0, i;

    (void)state;
    script_start(&sc, "");
    r = rows_open(&sc, 1);
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    s.llm = mtx_rows_llm(r);
    s.fatal_at = 6;
    assert_int_equal(mtx_rows_run(r, ROWS, row, NULL, &s, &failed, &err),
                     MT_EIO);
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
        cmocka_unit_test(test_rows_run_each_row_once),
        cmocka_unit_test(test_rows_fatal_stops_the_run),
        cmocka_unit_test(test_rows_refuses_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
