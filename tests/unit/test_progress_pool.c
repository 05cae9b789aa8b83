/* Unit tests for src/core/progress (rendered into a temporary stream) and
 * src/core/pool (task sums, parallel for coverage, out of memory). */
#include <stdatomic.h>

#include "check.h"

#include "core/pool.h"
#include "core/progress.h"
#include "medtrust/core.h"

/* ==== Progress ==== */

/* Reads everything written to f so far into buf. */
static void slurp(FILE *f, char *buf, size_t n)
{
    size_t got;

    CHECK(fflush(f) == 0);
    rewind(f);
    got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
}

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static struct mt_progress *progress_to(FILE *f, uint64_t total, int tty)
{
    struct mt_progress_params p = mtx_progress_default_params();
    struct mt_progress *pr = NULL;

    p.label = "index";
    p.total = total;
    p.stream = f;
    p.force_tty = tty;
    p.min_interval_s = 0;
    p.plain_interval_s = 1000; /* only 10 % steps print */
    CHECK_OK(mtx_progress_new(&p, &pr));
    return pr;
}

/* Nine 10 % steps, then the final line once (the 100 % step is left to
 * mtx_progress_finish so it is not printed twice). */
static void test_progress_plain_prints_ten_steps_and_final(void **state)
{
    static char out[8192];
    FILE *f = tmpfile();
    struct mt_progress *pr;
    uint64_t i;
    (void)state;
    CHECK(f != NULL);
    pr = progress_to(f, 200, 0);
    for (i = 1; i <= 200; i++)
        mtx_progress_update(pr, i);
    mtx_progress_finish(pr);
    mtx_progress_update(pr, 500); /* ignored after finish */
    mtx_progress_free(pr);
    slurp(f, out, sizeof out);
    fclose(f);
    assert_int_equal(count_lines(out), 10);
    CHECK(strchr(out, '\r') == NULL);
    CHECK(strstr(out, "\033[") == NULL);
    CHECK(strncmp(out, "index: 20/200  10.0% ", 21) == 0);
    CHECK(strstr(out, "index: 100/200  50.0% ") != NULL);
    CHECK(strstr(out, "index: 200/200 100.0% ") != NULL);
    CHECK(strstr(out, " done in 0:00\n") != NULL);
    CHECK(strstr(out, "/s ETA ") != NULL);
    CHECK(strstr(out, "500/200") == NULL); /* the rate may hold "500" */
}

static void test_progress_tty_redraws_one_line(void **state)
{
    static char out[16384];
    FILE *f = tmpfile();
    struct mt_progress *pr;
    int i;
    (void)state;
    CHECK(f != NULL);
    pr = progress_to(f, 40, 1);
    for (i = 0; i < 10; i++)
        mtx_progress_add(pr, 1);
    assert_int_equal(mtx_progress_done(pr), 10);
    mtx_progress_finish(pr);
    mtx_progress_free(pr);
    slurp(f, out, sizeof out);
    fclose(f);
    assert_int_equal(count_lines(out), 1); /* only the final newline */
    CHECK(out[0] == '\r');
    CHECK(
        strstr(out, "\rindex [#######-----------------------] 10/40  25.0%") !=
        NULL);
    CHECK(strstr(out, "\rindex [------------------------------] 1/40   2.5%") !=
          NULL);
    CHECK(strstr(out, "\033[K") != NULL);
    CHECK(strstr(out, " done in ") != NULL);
}

static void test_progress_unknown_total_shows_count_and_rate(void **state)
{
    static char out[4096];
    FILE *f = tmpfile();
    struct mt_progress *pr;
    (void)state;
    CHECK(f != NULL);
    pr = progress_to(f, 0, 1);
    mtx_progress_update(pr, 1234);
    mtx_progress_finish(pr);
    mtx_progress_free(pr);
    slurp(f, out, sizeof out);
    fclose(f);
    CHECK(strstr(out, "\rindex 1234 ") != NULL);
    CHECK(strstr(out, "/s") != NULL);
    CHECK(strchr(out, '%') == NULL && strstr(out, " [") == NULL);
    CHECK(strstr(out, "ETA") == NULL);
}

static void test_progress_quiet_prints_nothing(void **state)
{
    struct mt_progress_params p = mtx_progress_default_params();
    struct mt_progress *pr = NULL;
    FILE *f = tmpfile();
    (void)state;
    CHECK(f != NULL);
    p.stream = f;
    p.quiet = 1;
    p.total = 5;
    CHECK_OK(mtx_progress_new(&p, &pr));
    mtx_progress_update(pr, 5);
    mtx_progress_finish(pr);
    mtx_progress_free(pr);
    CHECK(ftell(f) == 0);
    fclose(f);
}

static void test_progress_new_oom_fails_cleanly(void **state)
{
    struct mt_progress *pr = NULL;
    long n;
    (void)state;
    for (n = 0;; n++) {
        enum mt_status st;
        mt_alloc_fail_after(n);
        st = mtx_progress_new(NULL, &pr);
        mt_alloc_fail_reset();
        if (st == MT_OK)
            break;
        assert_int_equal(st, MT_ENOMEM);
        CHECK(pr == NULL);
    }
    CHECK(n == 2);
    mtx_progress_free(pr);
    mtx_progress_free(NULL);
}

/* ==== Pool ==== */

struct sum_task {
    atomic_ullong *sum;
    unsigned long long value;
};

static void add_value(void *arg)
{
    struct sum_task *t = arg;

    atomic_fetch_add(t->sum, t->value);
}

static void test_pool_sums_ten_thousand_tasks(void **state)
{
    enum { N = 10000 };
    static struct sum_task tasks[N];
    atomic_ullong sum;
    struct mt_pool *p = NULL;
    size_t i;
    (void)state;
    atomic_init(&sum, 0);
    CHECK_OK(mtx_pool_new(4, &p));
    assert_int_equal(mtx_pool_size(p), 4);
    for (i = 0; i < N; i++) {
        tasks[i].sum = &sum;
        tasks[i].value = i + 1;
        CHECK_OK(mtx_pool_submit(p, add_value, &tasks[i]));
    }
    mtx_pool_wait(p);
    assert_int_equal(atomic_load(&sum), (unsigned long long)N * (N + 1) / 2);
    /* The pool is reusable after a wait. */
    CHECK_OK(mtx_pool_submit(p, add_value, &tasks[0]));
    mtx_pool_wait(p);
    assert_int_equal(atomic_load(&sum),
                     (unsigned long long)N * (N + 1) / 2 + 1);
    mtx_pool_free(p);
}

static void bump(size_t i, void *arg)
{
    atomic_int *hits = arg;

    atomic_fetch_add(&hits[i], 1);
}

static void check_parallel_for(struct mt_pool *p, size_t n)
{
    atomic_int *hits = calloc(n ? n : 1, sizeof *hits);
    size_t i;

    CHECK(hits != NULL);
    for (i = 0; i < n; i++)
        atomic_init(&hits[i], 0);
    mtx_pool_parallel_for(p, n, bump, hits);
    for (i = 0; i < n; i++) {
        if (atomic_load(&hits[i]) != 1)
            fail_msg("index %zu of %zu ran %d times", i, n,
                     atomic_load(&hits[i]));
    }
    free(hits);
}

static void test_pool_parallel_for_covers_each_index_once(void **state)
{
    struct mt_pool *p = NULL;
    (void)state;
    CHECK_OK(mtx_pool_new(0, &p)); /* online CPUs */
    CHECK(mtx_pool_size(p) >= 1);
    check_parallel_for(p, 0);
    check_parallel_for(p, 1);
    check_parallel_for(p, 3);
    check_parallel_for(p, 100003);
    mtx_pool_free(p);
    CHECK_OK(mtx_pool_new(8, &p));
    check_parallel_for(p, 5);
    check_parallel_for(p, 50000);
    /* With no memory for helper tasks the caller does all the work. */
    mt_alloc_fail_after(0);
    check_parallel_for(p, 1000);
    mt_alloc_fail_reset();
    mtx_pool_free(p);
}

static void test_pool_oom_fails_cleanly(void **state)
{
    struct mt_pool *p = NULL;
    atomic_ullong sum;
    struct sum_task t;
    long n;
    (void)state;
    for (n = 0;; n++) {
        enum mt_status st;
        mt_alloc_fail_after(n);
        st = mtx_pool_new(3, &p);
        mt_alloc_fail_reset();
        if (st == MT_OK)
            break;
        assert_int_equal(st, MT_ENOMEM);
        CHECK(p == NULL);
    }
    CHECK(n == 2);
    atomic_init(&sum, 0);
    t.sum = &sum;
    t.value = 7;
    mt_alloc_fail_after(0);
    CHECK(mtx_pool_submit(p, add_value, &t) == MT_ENOMEM);
    mt_alloc_fail_reset();
    mtx_pool_wait(p);
    CHECK(atomic_load(&sum) == 0);
    mtx_pool_free(p);
    mtx_pool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_plain_prints_ten_steps_and_final),
        cmocka_unit_test(test_progress_tty_redraws_one_line),
        cmocka_unit_test(test_progress_unknown_total_shows_count_and_rate),
        cmocka_unit_test(test_progress_quiet_prints_nothing),
        cmocka_unit_test(test_progress_new_oom_fails_cleanly),
        cmocka_unit_test(test_pool_sums_ten_thousand_tasks),
        cmocka_unit_test(test_pool_parallel_for_covers_each_index_once),
        cmocka_unit_test(test_pool_oom_fails_cleanly),
    };
    return cmocka_run_group_tests_name("progress_pool", tests, NULL, NULL);
}
