/* The job queue (src/store/queue.c) and the call cache's PostgreSQL engine
 * (src/model/cache_pg.c) against a real server (tests/unit/pg_fixture.h):
 * jobs claimed once each in order, SKIP LOCKED between two connections, a
 * lease that runs out hands the job to the next claim and fences off the
 * old one's result, heartbeats keep a job, a finish sent again is
 * harmless, release, counts, results in job order; the cache stores and
 * replaces binary values and a different request misses. The queue
 * worker loop (src/batch/qworker.c): every job of its kind run once by its
 * threads, on one shared connection or one each, the other kinds left,
 * the loop draining; a callback that cannot run a job gives it back and
 * ends the worker with its error; a beat's progress reaches on_beat. */
#include <unistd.h>

#include "check.h"

#include <pthread.h>
#include <string.h>

#include "batch/qworker.h"
#include "medtrust/core.h"
#include "model/cache.h"
#include "pg_fixture.h"
#include "store/queue.h"

static struct pgfx fx;

static int setup(void **state)
{
    (void)state;
    if (pgfx_start(&fx) != 0) {
        fprintf(stderr, "could not start a PostgreSQL cluster (run make "
                        "bootstrap)\n");
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pgfx_stop(&fx);
    return 0;
}

static struct mtx_pg *open_queue(void)
{
    struct mtx_pg *pg = NULL;
    struct mt_error err;

    if (mtx_queue_open(fx.url, &pg, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return pg;
}

static int64_t submit(struct mtx_pg *pg, size_t n)
{
    static const char *const pl[] = {"{\"n\":0}", "{\"n\":1}", "{\"n\":2}",
                                     "{\"n\":3}"};
    int64_t run = 0;

    assert_true(n <= 4);
    CHECK_OK(mtx_queue_submit(pg, "test", "{\"k\":1}", pl, n, &run, NULL));
    assert_true(run > 0);
    return run;
}

static void test_queue_claims_each_job_once_in_order(void **state)
{
    struct mtx_pg *a = open_queue(), *b = open_queue();
    int64_t run = submit(a, 3);
    struct mtx_queue_job j1, j2, j3, j4;
    struct mtx_queue_counts c;
    char *kind = NULL, *opts = NULL;

    (void)state;
    CHECK_OK(mtx_queue_claim(a, "wa", 30, run, NULL, &j1, NULL));
    CHECK_OK(mtx_queue_claim(b, "wb", 30, run, NULL, &j2, NULL));
    CHECK_OK(mtx_queue_claim(a, "wa", 30, run, NULL, &j3, NULL));
    assert_int_equal(j1.seq, 0);
    assert_int_equal(j2.seq, 1);
    assert_int_equal(j3.seq, 2);
    assert_string_equal(j2.payload, "{\"n\":1}");
    assert_int_equal(j1.attempt, 1);
    assert_int_equal(mtx_queue_claim(b, "wb", 30, run, NULL, &j4, NULL),
                     MT_ENOTFOUND);
    CHECK_OK(mtx_queue_counts(a, run, NULL, &c, NULL));
    assert_int_equal(c.total, 3);
    assert_int_equal(c.running, 3);
    assert_int_equal(c.queued, 0);
    CHECK_OK(mtx_queue_run(a, run, &kind, &opts, NULL));
    assert_string_equal(kind, "test");
    assert_string_equal(opts, "{\"k\":1}");
    mt_free(kind);
    mt_free(opts);
    mtx_queue_job_free(&j1);
    mtx_queue_job_free(&j2);
    mtx_queue_job_free(&j3);
    mtx_pg_close(a);
    mtx_pg_close(b);
}

static void test_queue_expired_lease_moves_the_job(void **state)
{
    struct mtx_pg *pg = open_queue();
    int64_t run = submit(pg, 1);
    struct mtx_queue_job old, cur, none;
    struct mtx_queue_counts c;
    struct mt_error err;
    size_t kept = 9;

    (void)state;
    CHECK_OK(mtx_queue_claim(pg, "dead", 1, run, NULL, &old, NULL));
    assert_int_equal(mtx_queue_claim(pg, "live", 30, run, NULL, &none, NULL),
                     MT_ENOTFOUND);
    usleep(1300 * 1000); /* the lease runs out: "dead" sent no heartbeat */
    CHECK_OK(mtx_queue_claim(pg, "live", 30, run, NULL, &cur, NULL));
    assert_int_equal(cur.id, old.id);
    assert_int_equal(cur.attempt, 2);
    CHECK_OK(mtx_queue_heartbeat(pg, "dead", 30, &old.id, 1, &kept, NULL));
    assert_int_equal(kept, 0); /* no longer its job */
    assert_int_equal(mtx_queue_finish(pg, &old, "{\"by\":\"dead\"}", 0, &err),
                     MT_ECANCELED);
    CHECK_OK(mtx_queue_finish(pg, &cur, "{\"by\":\"live\"}", 0, NULL));
    /* sent again (a reply lost after the commit): found, not redone */
    CHECK_OK(mtx_queue_finish(pg, &cur, "{\"by\":\"live\"}", 0, NULL));
    CHECK_OK(mtx_queue_counts(pg, run, NULL, &c, NULL));
    assert_int_equal(c.done, 1);
    assert_int_equal(c.reclaimed, 1);
    mtx_queue_job_free(&old);
    mtx_queue_job_free(&cur);
    mtx_pg_close(pg);
}

static void test_queue_heartbeat_keeps_the_job(void **state)
{
    struct mtx_pg *pg = open_queue();
    int64_t run = submit(pg, 1);
    struct mtx_queue_job j, other;
    size_t kept = 0;
    int i;

    (void)state;
    CHECK_OK(mtx_queue_claim(pg, "w", 1, run, NULL, &j, NULL));
    for (i = 0; i < 4; i++) { /* 1.6 s in all, past the first lease */
        usleep(400 * 1000);
        CHECK_OK(mtx_queue_heartbeat(pg, "w", 1, &j.id, 1, &kept, NULL));
        assert_int_equal(kept, 1);
    }
    assert_int_equal(mtx_queue_claim(pg, "x", 30, run, NULL, &other, NULL),
                     MT_ENOTFOUND);
    CHECK_OK(mtx_queue_finish(pg, &j, "{}", 1, NULL));
    mtx_queue_job_free(&j);
    mtx_pg_close(pg);
}

struct seen {
    int64_t seq[8];
    int failed[8];
    size_t n;
};

static enum mt_status on_result(int64_t seq, const char *result, int failed,
                                void *user)
{
    struct seen *s = user;

    (void)result;
    s->seq[s->n] = seq;
    s->failed[s->n++] = failed;
    return MT_OK;
}

static void test_queue_release_and_results_in_order(void **state)
{
    struct mtx_pg *pg = open_queue();
    int64_t run = submit(pg, 3);
    struct mtx_queue_job j[3], again;
    struct seen s = {{0}, {0}, 0};
    int i;

    (void)state;
    for (i = 0; i < 3; i++)
        CHECK_OK(mtx_queue_claim(pg, "w", 30, run, NULL, &j[i], NULL));
    CHECK_OK(mtx_queue_release(pg, &j[1], NULL));
    CHECK_OK(mtx_queue_claim(pg, "w2", 30, run, NULL, &again, NULL));
    assert_int_equal(again.seq, 1);
    CHECK_OK(mtx_queue_finish(pg, &j[2], "{}", 0, NULL));
    CHECK_OK(mtx_queue_finish(pg, &again, "{}", 1, NULL));
    CHECK_OK(mtx_queue_finish(pg, &j[0], "{}", 0, NULL));
    assert_int_equal(mtx_queue_finish(pg, &j[1], "{}", 0, NULL), MT_ECANCELED);
    CHECK_OK(mtx_queue_results(pg, run, on_result, &s, NULL));
    assert_int_equal(s.n, 3);
    assert_int_equal(s.seq[0], 0);
    assert_int_equal(s.seq[1], 1);
    assert_int_equal(s.seq[2], 2);
    assert_int_equal(s.failed[1], 1);
    assert_int_equal(s.failed[0], 0);
    for (i = 0; i < 3; i++)
        mtx_queue_job_free(&j[i]);
    mtx_queue_job_free(&again);
    mtx_pg_close(pg);
}

static void test_queue_unknown_run_is_named(void **state)
{
    struct mtx_pg *pg = open_queue();
    char *kind = NULL, *opts = NULL;
    struct mt_error err;

    (void)state;
    assert_int_equal(mtx_queue_run(pg, 987654, &kind, &opts, &err),
                     MT_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no run 987654"));
    mtx_pg_close(pg);
}

/* A claim for some kinds skips the runs of other kinds (a mediqa worker
 * leaves a server's checks alone); a heartbeat reads the runs' progress
 * from the run rows, which count each finish once, repeats included. */
static void test_queue_kinds_and_beat_progress(void **state)
{
    static const char *const pl[] = {"{}", "{}"};
    struct mtx_pg *pg = open_queue();
    struct mtx_queue_job j, k, none;
    struct mtx_queue_progress pr;
    struct mtx_queue_counts c;
    int64_t mq = 0, ck = 0;
    size_t kept = 9;

    (void)state;
    CHECK_OK(mtx_queue_submit(pg, "kind-a", "{}", pl, 2, &mq, NULL));
    CHECK_OK(mtx_queue_submit(pg, "kind-b", "{}", pl, 1, &ck, NULL));
    CHECK_OK(mtx_queue_claim(pg, "w", 30, 0, "{kind-b}", &j, NULL));
    assert_int_equal(j.run, ck);
    assert_int_equal(
        mtx_queue_claim(pg, "w", 30, 0, "{kind-b,kind-c}", &none, NULL),
        MT_ENOTFOUND);
    CHECK_OK(mtx_queue_claim(pg, "w", 30, 0, "{kind-a}", &k, NULL));
    assert_int_equal(k.run, mq);
    CHECK_OK(mtx_queue_counts(pg, 0, "{kind-a}", &c, NULL));
    assert_int_equal(c.total, 2);
    assert_int_equal(c.running, 1);
    CHECK_OK(mtx_queue_finish(pg, &k, "{}", 0, NULL));
    CHECK_OK(mtx_queue_finish(pg, &k, "{}", 0, NULL)); /* a repeat */
    CHECK_OK(
        mtx_queue_beat(pg, "w", 30, &j.id, 1, 0, "{kind-a}", &kept, &pr, NULL));
    assert_int_equal(kept, 1);
    assert_int_equal(pr.total, 2);
    assert_int_equal(pr.done, 1);
    CHECK_OK(mtx_queue_beat(pg, "w", 30, NULL, 0, ck, NULL, &kept, &pr, NULL));
    assert_int_equal(kept, 0);
    assert_int_equal(pr.total, 1);
    assert_int_equal(pr.done, 0);
    CHECK_OK(mtx_queue_finish(pg, &j, "{}", 0, NULL));
    mtx_queue_job_free(&j);
    mtx_queue_job_free(&k);
    mtx_pg_close(pg);
}

static void test_cache_pg_stores_binary_and_replaces(void **state)
{
    static const char bin[] = {'a', 0, '\\', (char)0xff, 'x'};
    struct mt_cache *c = NULL, *d = NULL;
    char *v = NULL;
    size_t n = 0;

    (void)state;
    CHECK_OK(mtx_cache_open(fx.url, &c, NULL));
    CHECK_OK(mtx_cache_open(fx.url, &d, NULL)); /* a second node */
    assert_int_equal(mtx_cache_get(c, "openai", "m", "req", &v, &n, NULL),
                     MT_ENOTFOUND);
    CHECK_OK(mtx_cache_put(c, "openai", "m", "req", bin, sizeof bin, NULL));
    CHECK_OK(mtx_cache_get(d, "openai", "m", "req", &v, &n, NULL));
    assert_int_equal(n, sizeof bin);
    assert_memory_equal(v, bin, sizeof bin);
    assert_int_equal(v[n], '\0');
    mt_free(v);
    CHECK_OK(mtx_cache_put(d, "openai", "m", "req", "new", 3, NULL));
    CHECK_OK(mtx_cache_get(c, "openai", "m", "req", &v, &n, NULL));
    assert_string_equal(v, "new");
    mt_free(v);
    assert_int_equal(mtx_cache_get(c, "openai", "m", "req2", &v, &n, NULL),
                     MT_ENOTFOUND);
    assert_int_equal(mtx_cache_get(c, "openai", "m2", "req", &v, &n, NULL),
                     MT_ENOTFOUND);
    assert_int_equal(mtx_cache_count(c), 1);
    mtx_cache_close(c);
    mtx_cache_close(d);
}

/* ==== The queue worker loop ==== */

struct qw_seen {
    pthread_mutex_t mu;
    int runs[4];   /* how often job n ran */
    int bad_kind;  /* a job of another kind reached the callback */
    int beats;     /* on_beat calls with progress */
    int64_t total; /* the last progress seen */
};

static void qw_job(void *user, struct mtx_qjob *j)
{
    struct qw_seen *s = user;
    const char *n = strstr(j->row.payload, "\"n\":");
    int i = n ? n[4] - '0' : -1;

    pthread_mutex_lock(&s->mu);
    if (i >= 0 && i < 4)
        s->runs[i]++;
    s->bad_kind |= strcmp(j->row.kind, "qw-test") != 0;
    pthread_mutex_unlock(&s->mu);
    CHECK_OK(mtx_qjob_finish(j, "{\"ok\":1}", i == 3, NULL));
}

static void qw_beat(void *user, const struct mtx_queue_progress *p)
{
    struct qw_seen *s = user;

    pthread_mutex_lock(&s->mu);
    s->beats += p != NULL;
    if (p)
        s->total = p->total;
    pthread_mutex_unlock(&s->mu);
}

static const struct mtx_qworker_kind qw_kinds[] = {{"qw-test", qw_job}};

static void qw_params(struct mtx_qworker_params *p, struct qw_seen *s)
{
    mtx_qworker_default_params(p);
    p->url = fx.url;
    p->name = "qw";
    p->kinds = qw_kinds;
    p->nkinds = 1;
    p->user = s;
    p->threads = 3;
    p->poll_s = 0.05;
    p->drain = 1;
    p->progress = 1;
    p->on_beat = qw_beat;
}

/* Runs a draining loop over a fresh run of four qw-test jobs beside a run
 * of another kind; each job once, the other run untouched. */
static void qw_drain(int per_thread)
{
    static const char *const pl[] = {"{\"n\":0}", "{\"n\":1}", "{\"n\":2}",
                                     "{\"n\":3}"};
    struct mtx_pg *pg = open_queue();
    struct mtx_qworker_params p;
    struct mtx_qworker *w = NULL;
    struct mtx_qworker_stats st;
    struct mtx_queue_counts c;
    struct qw_seen s;
    int64_t run = 0, other = 0;
    int i;

    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    CHECK_OK(mtx_queue_submit(pg, "qw-other", "{}", pl, 2, &other, NULL));
    CHECK_OK(mtx_queue_submit(pg, "qw-test", "{}", pl, 4, &run, NULL));
    qw_params(&p, &s);
    p.conn_per_thread = per_thread;
    CHECK_OK(mtx_qworker_start(&p, &w, NULL));
    CHECK_OK(mtx_qworker_stop(w, NULL));
    mtx_qworker_stats(w, &st);
    assert_int_equal(st.done, 4);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.dropped, 0);
    assert_string_equal(mtx_qworker_name(w), "qw");
    mtx_qworker_free(w);
    for (i = 0; i < 4; i++)
        assert_int_equal(s.runs[i], 1);
    assert_int_equal(s.bad_kind, 0);
    assert_true(s.beats >= 1); /* at least the last one, at the end */
    CHECK_OK(mtx_queue_counts(pg, run, NULL, &c, NULL));
    assert_int_equal(c.done, 4);
    assert_int_equal(c.failed, 1);
    CHECK_OK(mtx_queue_counts(pg, other, NULL, &c, NULL));
    assert_int_equal(c.queued, 2);
    pthread_mutex_destroy(&s.mu);
    mtx_pg_close(pg);
}

static void test_qworker_runs_each_job_once_shared(void **state)
{
    (void)state;
    qw_drain(0);
}

static void test_qworker_runs_each_job_once_per_thread(void **state)
{
    (void)state;
    qw_drain(1);
}

static void qw_refuse(void *user, struct mtx_qjob *j)
{
    struct mt_error err = {MT_OK, ""};

    (void)user;
    CHECK_OK(mtx_qjob_release(j, NULL));
    mt_fail(&err, MT_EUNSUPPORTED, "cannot run job %lld here",
            (long long)j->row.seq);
    mtx_qworker_fail(j->w, err.status, &err);
}

/* A job the callback cannot run goes back to the queue, and the worker
 * ends with the callback's error. */
static void test_qworker_gives_back_and_fails(void **state)
{
    static const struct mtx_qworker_kind kinds[] = {{"qw-refused", qw_refuse}};
    static const char *const pl[] = {"{}"};
    struct mtx_pg *pg = open_queue();
    struct mtx_qworker_params p;
    struct mtx_qworker *w = NULL;
    struct mtx_queue_counts c;
    struct mt_error err = {MT_OK, ""};
    struct qw_seen s;
    int64_t run = 0;

    (void)state;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    CHECK_OK(mtx_queue_submit(pg, "qw-refused", "{}", pl, 1, &run, NULL));
    qw_params(&p, &s);
    p.kinds = kinds;
    p.threads = 1;
    p.drain = 0; /* ended by the failure alone */
    CHECK_OK(mtx_qworker_start(&p, &w, NULL));
    assert_int_equal(mtx_qworker_stop(w, &err), MT_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "cannot run job 0 here"));
    mtx_qworker_free(w);
    CHECK_OK(mtx_queue_counts(pg, run, NULL, &c, NULL));
    assert_int_equal(c.queued, 1);
    assert_int_equal(c.done, 0);
    pthread_mutex_destroy(&s.mu);
    mtx_pg_close(pg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_claims_each_job_once_in_order),
        cmocka_unit_test(test_queue_expired_lease_moves_the_job),
        cmocka_unit_test(test_queue_heartbeat_keeps_the_job),
        cmocka_unit_test(test_queue_release_and_results_in_order),
        cmocka_unit_test(test_queue_unknown_run_is_named),
        cmocka_unit_test(test_queue_kinds_and_beat_progress),
        cmocka_unit_test(test_cache_pg_stores_binary_and_replaces),
        cmocka_unit_test(test_qworker_runs_each_job_once_shared),
        cmocka_unit_test(test_qworker_runs_each_job_once_per_thread),
        cmocka_unit_test(test_qworker_gives_back_and_fails),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
