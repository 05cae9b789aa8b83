/* The PostgreSQL connection layer (src/store/pg.c) against a real server
 * started for the suite (tests/unit/pg_fixture.h): statements with
 * parameters, SQL errors, versioned migrations (idempotent, refused when
 * the database is newer), a statement and a transaction that survive a
 * server restart, and a wrong URL that fails at once without its
 * password. */
#include "check.h"

#include "medtrust/core.h"
#include "pg_fixture.h"
#include "store/pg.h"

static struct pgfx fx;

static int setup(void **state)
{
    (void)state;
    return pgfx_suite_start(&fx);
}

static int teardown(void **state)
{
    (void)state;
    pgfx_stop(&fx);
    return 0;
}

static struct mtx_pg *open_pg(void)
{
    struct mtx_pg_params p;
    struct mtx_pg *pg = NULL;
    struct mt_error err;

    mtx_pg_default_params(&p);
    p.url = fx.url;
    p.reconnect_s = 30;
    if (mtx_pg_open(&p, &pg, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return pg;
}

static void test_pg_exec_binds_parameters(void **state)
{
    struct mtx_pg *pg = open_pg();
    const char *p[2] = {"40", NULL};
    PGresult *r = NULL;
    int64_t n = 0;

    (void)state;
    CHECK_OK(mtx_pg_exec(pg, "SELECT $1::int + 2, $2::text IS NULL", 2, p, &r,
                         NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 42);
    assert_string_equal(mtx_pg_text(r, 0, 1), "t");
    PQclear(r);
    CHECK_OK(mtx_pg_cmd(pg, "CREATE TABLE t1(v int); INSERT INTO t1 VALUES(1)",
                        0, NULL, NULL, NULL));
    CHECK_OK(mtx_pg_cmd(pg, "UPDATE t1 SET v = v + 1", 0, NULL, &n, NULL));
    assert_int_equal(n, 1);
    mtx_pg_close(pg);
}

static void test_pg_sql_error_names_the_problem(void **state)
{
    struct mtx_pg *pg = open_pg();
    struct mt_error err;

    (void)state;
    assert_int_equal(
        mtx_pg_exec(pg, "SELECT * FROM no_such_table", 0, NULL, NULL, &err),
        MT_EDB);
    CHECK(strstr(err.msg, "no_such_table") != NULL);
    /* the server is named, its user info redacted (issue 39 row 4b) */
    CHECK(strstr(err.msg, "postgresql://***@127.0.0.1:") != NULL);
    CHECK(strstr(err.msg, "medtrust@") == NULL);
    mtx_pg_close(pg);
}

static const struct mtx_pg_migration steps[] = {
    {1, "CREATE TABLE m1(id bigserial PRIMARY KEY, v text)"},
    {2, "ALTER TABLE m1 ADD COLUMN w int NOT NULL DEFAULT 7;"
        "INSERT INTO m1(v) VALUES('x')"},
};

static void test_pg_migrate_once_per_version(void **state)
{
    struct mtx_pg *pg = open_pg();
    struct mt_error err;
    PGresult *r = NULL;
    int v = 0;

    (void)state;
    CHECK_OK(mtx_pg_migrate(pg, "test", steps, 1, &v, NULL));
    assert_int_equal(v, 1);
    CHECK_OK(mtx_pg_migrate(pg, "test", steps, 2, &v, NULL));
    assert_int_equal(v, 2);
    CHECK_OK(mtx_pg_migrate(pg, "test", steps, 2, &v, NULL)); /* no-op */
    CHECK_OK(
        mtx_pg_exec(pg, "SELECT count(*), min(w) FROM m1", 0, NULL, &r, NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 1);
    assert_int_equal(mtx_pg_int(r, 0, 1), 7);
    PQclear(r);
    /* another component keeps its own versions */
    CHECK_OK(mtx_pg_migrate(pg, "other", steps, 0, &v, NULL));
    assert_int_equal(v, 0);
    /* an older binary refuses a newer database */
    assert_int_equal(mtx_pg_migrate(pg, "test", steps, 1, &v, &err),
                     MT_EUNSUPPORTED);
    CHECK(strstr(err.msg, "newer") != NULL);
    mtx_pg_close(pg);
}

static void test_pg_statement_survives_restart(void **state)
{
    struct mtx_pg *pg = open_pg();
    PGresult *r = NULL;

    (void)state;
    CHECK_OK(mtx_pg_exec(pg, "SELECT 1", 0, NULL, NULL, NULL));
    assert_int_equal(pgfx_restart(&fx), 0);
    CHECK_OK(mtx_pg_exec(pg, "SELECT 2", 0, NULL, &r, NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 2);
    PQclear(r);
    CHECK(mtx_pg_reconnects(pg) == 1);
    mtx_pg_close(pg);
}

struct txn_ctx {
    int runs;
};

/* Inserts a row; on its first run the server restarts mid-transaction,
 * so the insert is lost with the connection and the whole body runs
 * again. */
static enum mt_status txn_body(struct mtx_pg *pg, void *user,
                               struct mt_error *err)
{
    struct txn_ctx *c = user;
    enum mt_status st =
        mtx_pg_exec(pg, "INSERT INTO t2 VALUES(1)", 0, NULL, NULL, err);

    if (st != MT_OK)
        return st;
    if (c->runs++ == 0 && pgfx_restart(&fx) != 0)
        return mt_fail(err, MT_EIO, "restart failed");
    return mtx_pg_exec(pg, "INSERT INTO t2 VALUES(2)", 0, NULL, NULL, err);
}

static void test_pg_txn_reruns_after_restart(void **state)
{
    struct mtx_pg *pg = open_pg();
    struct txn_ctx c = {0};
    PGresult *r = NULL;

    (void)state;
    CHECK_OK(mtx_pg_exec(pg, "CREATE TABLE t2(v int)", 0, NULL, NULL, NULL));
    CHECK_OK(mtx_pg_txn(pg, txn_body, &c, NULL));
    assert_int_equal(c.runs, 2);
    CHECK_OK(
        mtx_pg_exec(pg, "SELECT count(*), sum(v) FROM t2", 0, NULL, &r, NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 2); /* once, not twice */
    assert_int_equal(mtx_pg_int(r, 0, 1), 3);
    PQclear(r);
    mtx_pg_close(pg);
}

static enum mt_status txn_fails(struct mtx_pg *pg, void *user,
                                struct mt_error *err)
{
    (void)user;
    CHECK_OK(mtx_pg_exec(pg, "INSERT INTO t3 VALUES(1)", 0, NULL, NULL, err));
    return mt_fail(err, MT_EINVAL, "no");
}

static void test_pg_txn_failure_rolls_back(void **state)
{
    struct mtx_pg *pg = open_pg();
    PGresult *r = NULL;

    (void)state;
    CHECK_OK(mtx_pg_exec(pg, "CREATE TABLE t3(v int)", 0, NULL, NULL, NULL));
    assert_int_equal(mtx_pg_txn(pg, txn_fails, NULL, NULL), MT_EINVAL);
    CHECK_OK(mtx_pg_exec(pg, "SELECT count(*) FROM t3", 0, NULL, &r, NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 0);
    PQclear(r);
    mtx_pg_close(pg);
}

static void test_pg_bad_url_fails_without_password(void **state)
{
    struct mtx_pg_params p;
    struct mtx_pg *pg = NULL;
    struct mt_error err;

    (void)state;
    mtx_pg_default_params(&p);
    p.url = "postgresql://medtrust:s3cret@127.0.0.1:1/medtrust";
    assert_int_equal(mtx_pg_open(&p, &pg, &err), MT_EIO);
    CHECK(pg == NULL);
    CHECK(strstr(err.msg, "s3cret") == NULL);
    CHECK(strstr(err.msg, "127.0.0.1") != NULL);
    p.url = "mysql://x";
    assert_int_equal(mtx_pg_open(&p, &pg, &err), MT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_exec_binds_parameters),
        cmocka_unit_test(test_pg_sql_error_names_the_problem),
        cmocka_unit_test(test_pg_migrate_once_per_version),
        cmocka_unit_test(test_pg_statement_survives_restart),
        cmocka_unit_test(test_pg_txn_reruns_after_restart),
        cmocka_unit_test(test_pg_txn_failure_rolls_back),
        cmocka_unit_test(test_pg_bad_url_fails_without_password),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
