/* The call cache's batched write (src/model/cache.c, mtx_cache_put_many),
 * which the embedder uses for a call's vectors: a batch stores every row
 * and reads back byte for byte, replaces rows already there, and is one
 * transaction: a batch whose third row the database refuses (a trigger)
 * leaves none of its rows, and the cache still takes the next batch. */
#include <sqlite3.h>

#include "check.h"
#include "tmpdir.h"

#include "medtrust/core.h"
#include "model/cache.h"

#define N 500

static char db[128];

static int setup(void **state)
{
    (void)state;
    if (tmpdir_make("mt-call-cache") != 0)
        return -1;
    snprintf(db, sizeof db, "%s/cache.db", tmpl);
    return 0;
}

/* Request i and its value: i as text, then i's float bytes. */
static void row(size_t i, char *req, size_t rn, float *val)
{
    size_t k;

    snprintf(req, rn, "256|1|mean|text number %zu", i);
    for (k = 0; k < 4; k++)
        val[k] = (float)i + 0.25f * (float)k;
}

static void put_batch(struct mt_cache *c, size_t from, size_t n,
                      enum mt_status want)
{
    static char reqs[N][48];
    static float vals[N][4];
    const char *rp[N];
    const void *vp[N];
    size_t lens[N], i;
    struct mt_error err = {MT_OK, ""};

    for (i = 0; i < n; i++) {
        row(from + i, reqs[i], sizeof reqs[i], vals[i]);
        rp[i] = reqs[i];
        vp[i] = vals[i];
        lens[i] = sizeof vals[i];
    }
    assert_int_equal(
        mtx_cache_put_many(c, "openai", "emb", n, rp, vp, lens, &err), want);
    if (want != MT_OK)
        CHECK(strstr(err.msg, db) != NULL); /* the error names the cache */
}

static void check_row(struct mt_cache *c, size_t i, int present)
{
    char req[48];
    float want[4];
    char *v = NULL;
    size_t n = 0;
    enum mt_status st;

    row(i, req, sizeof req, want);
    st = mtx_cache_get(c, "openai", "emb", req, &v, &n, NULL);
    assert_int_equal(st, present ? MT_OK : MT_ENOTFOUND);
    if (present) {
        assert_int_equal(n, sizeof want);
        CHECK(memcmp(v, want, n) == 0);
    }
    mt_free(v);
}

static void stores_and_replaces(void **state)
{
    struct mt_cache *c = NULL;
    size_t i;

    (void)state;
    CHECK_OK(mtx_cache_open(db, &c, NULL));
    put_batch(c, 0, N, MT_OK);
    assert_int_equal(mtx_cache_count(c), N);
    for (i = 0; i < N; i++)
        check_row(c, i, 1);
    /* Half again, half new: the repeated rows are replaced, not added. */
    put_batch(c, N / 2, N, MT_OK);
    assert_int_equal(mtx_cache_count(c), N + N / 2);
    check_row(c, N + N / 2 - 1, 1);
    put_batch(c, 0, 0, MT_OK); /* an empty batch is no write */
    mtx_cache_close(c);
}

static void all_or_none(void **state)
{
    struct mt_cache *c = NULL;
    sqlite3 *s = NULL;
    char req[48];
    float v[4];
    size_t before;

    (void)state;
    CHECK_OK(mtx_cache_open(db, &c, NULL));
    row(N * 2 + 2, req, sizeof req, v); /* the third row of the next batch */
    assert_int_equal(sqlite3_open(db, &s), SQLITE_OK);
    {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "CREATE TRIGGER refuse BEFORE INSERT ON model_calls WHEN"
                 " NEW.request = '%s' BEGIN SELECT RAISE(ABORT, 'refused');"
                 " END;",
                 req);
        assert_int_equal(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    before = mtx_cache_count(c);
    put_batch(c, N * 2, 10, MT_EDB);
    assert_int_equal(mtx_cache_count(c), before);
    check_row(c, N * 2, 0); /* the rows before the refused one: rolled back */
    check_row(c, N * 2 + 1, 0);
    assert_int_equal(sqlite3_exec(s, "DROP TRIGGER refuse", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(s);
    put_batch(c, N * 2, 10, MT_OK); /* the handle is usable after a failure */
    assert_int_equal(mtx_cache_count(c), before + 10);
    check_row(c, N * 2 + 2, 1);
    mtx_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stores_and_replaces),
        cmocka_unit_test(all_or_none),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
