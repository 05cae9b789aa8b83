/* Unit tests for src/index/publish.c and the store backup: a published
 * snapshot searches like its source and carries no accounts, CURRENT is
 * followed only to a snapshot whose files are all there, older snapshots
 * are pruned, one publisher at a time. */
#include "check.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/publish.h"
#include "medtrust/store.h"
#include "tmpdir.h"

static char db[128], pub[128];

static int setup(void **state)
{
    (void)state;
    if (tmpdir_make("mt-publish") != 0)
        return -1;
    snprintf(db, sizeof db, "%s/db", tmpl);
    snprintf(pub, sizeof pub, "%s/pub", tmpl);
    return 0;
}

/* Adds a document to the store in db and indexes it. */
static void add_doc(const char *id, const char *text)
{
    struct mt_store *s = NULL;
    struct mt_doc d = {id, "T", text, strlen(text), NULL};
    int64_t sid = 0;

    CHECK_OK(mt_store_open(db, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "src", &sid, NULL));
    CHECK_OK(mt_store_put(s, sid, &d, NULL, NULL));
    CHECK_OK(mt_index_build(s, NULL, NULL, NULL));
    mt_store_close(s);
}

static size_t hits(const char *dir, const char *q)
{
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    size_t n;

    mt_search_default_params(&p);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    CHECK_OK(mt_index_search(idx, q, &p, &r, NULL));
    n = r->n;
    mt_search_result_free(r);
    mt_index_close(idx);
    return n;
}

static int64_t count_rows(const char *file, const char *table)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *q = NULL;
    char sql[128];
    int64_t n = -1;

    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    CHECK(sqlite3_open_v2(file, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return n;
}

static void put_user(void)
{
    char file[160];
    sqlite3 *h = NULL;

    snprintf(file, sizeof file, "%s/store.db", db);
    CHECK(sqlite3_open(file, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h,
                       "INSERT INTO users(name, pwhash) VALUES('alice',"
                       " 'secret-hash')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
}

static void test_publish_snapshot_searches_without_accounts(void **state)
{
    struct mt_publish_result r;
    char cur[4096], file[4200];
    (void)state;
    add_doc("d1", "Insulin lowers blood glucose levels.");
    put_user();
    CHECK_OK(mt_publish(db, pub, NULL, &r, NULL));
    CHECK(strcmp(r.name, "snap-000001") == 0);
    CHECK(r.files >= 4 && r.bytes > 0 && r.linked >= 2);
    CHECK_OK(mt_publish_resolve(pub, cur, sizeof cur, NULL));
    snprintf(file, sizeof file, "%s/snap-000001", pub);
    CHECK(strcmp(cur, file) == 0);
    CHECK(hits(cur, "insulin glucose") == 1);
    snprintf(file, sizeof file, "%s/store.db", cur);
    CHECK(count_rows(file, "users") == 0);
    CHECK(count_rows(file, "documents") == 1);
    snprintf(file, sizeof file, "%s/store.db", db);
    CHECK(count_rows(file, "users") == 1); /* the source keeps its own */
    /* a folder without CURRENT is its own corpus */
    CHECK_OK(mt_publish_resolve(db, cur, sizeof cur, NULL));
    CHECK(strcmp(cur, db) == 0);
}

/* A handle open on the newest snapshot while a publish removes it (keep
 * 1): a search in flight goes on on its open files (mmaps, SQLite). */
static void in_flight_on_removed(const struct mt_publish_params *p)
{
    struct mt_index *idx = NULL;
    struct mt_search_params sp;
    struct mt_search_result *res = NULL;
    char snap[160];

    snprintf(snap, sizeof snap, "%s/snap-000003", pub);
    CHECK_OK(mt_index_open(snap, &idx, NULL));
    CHECK_OK(mt_publish(db, pub, p, NULL, NULL)); /* removes snap 3 */
    CHECK(access(snap, F_OK) != 0);
    mt_search_default_params(&sp);
    CHECK_OK(mt_index_search(idx, "airway steroids", &sp, &res, NULL));
    CHECK(res->n == 1 && strstr(res->hits[0].text, "airway"));
    mt_search_result_free(res);
    mt_index_close(idx);
}

static void test_publish_prunes_and_follows_the_newest(void **state)
{
    struct mt_publish_params p;
    struct mt_publish_result r;
    char cur[4096];
    (void)state;
    mt_publish_default_params(&p);
    CHECK(p.keep == 2);
    add_doc("d1", "Insulin lowers blood glucose levels.");
    CHECK_OK(mt_publish(db, pub, &p, &r, NULL));
    add_doc("d2", "Uric acid crystals cause gout.");
    CHECK_OK(mt_publish(db, pub, &p, &r, NULL));
    CHECK(r.removed == 0);
    p.keep = 1;
    add_doc("d3", "Inhaled steroids reduce airway swelling.");
    CHECK_OK(mt_publish(db, pub, &p, &r, NULL));
    CHECK(strcmp(r.name, "snap-000003") == 0 && r.removed == 2);
    in_flight_on_removed(&p);
    CHECK_OK(mt_publish_resolve(pub, cur, sizeof cur, NULL));
    CHECK(strstr(cur, "snap-000004") != NULL);
    CHECK(hits(cur, "gout") == 1 && hits(cur, "airway") == 1);
    p.keep = 0;
    CHECK(mt_publish(db, pub, &p, &r, NULL) == MT_EINVAL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void test_publish_resolve_refuses_incomplete_snapshot(void **state)
{
    struct mt_error err;
    char cur[4096] = "unchanged", path[200], snap[160];
    (void)state;
    add_doc("d1", "Insulin lowers blood glucose levels.");
    CHECK_OK(mt_publish(db, pub, NULL, NULL, NULL));
    snprintf(snap, sizeof snap, "%s/snap-000001", pub);
    /* a copy still arriving: store.db short of its listed size */
    snprintf(path, sizeof path, "%s/store.db", snap);
    CHECK(truncate(path, 100) == 0);
    CHECK(mt_publish_resolve(pub, cur, sizeof cur, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "store.db") && strstr(err.msg, "size"));
    CHECK(strcmp(cur, "unchanged") == 0);
    snprintf(path, sizeof path, "%s/SNAPSHOT", snap);
    unlink(path);
    CHECK(mt_publish_resolve(pub, cur, sizeof cur, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "no SNAPSHOT yet") != NULL);
    write_file(path, "{\"format\": 1, \"files\": [{\"path\": \"../x\", "
                     "\"size\": 1}]}");
    CHECK(mt_publish_resolve(pub, cur, sizeof cur, &err) == MT_EPARSE);
    snprintf(path, sizeof path, "%s/CURRENT", pub);
    write_file(path, "../etc\n");
    CHECK(mt_publish_resolve(pub, cur, sizeof cur, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "CURRENT") != NULL);
}

static void test_publish_one_publisher_at_a_time(void **state)
{
    struct mt_error err;
    char path[160];
    int fd;
    (void)state;
    add_doc("d1", "Insulin lowers blood glucose levels.");
    CHECK(mkdir(pub, 0755) == 0);
    snprintf(path, sizeof path, "%s/.lock", pub);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
    CHECK(mt_publish(db, pub, NULL, NULL, &err) == MT_EIO);
    CHECK(strstr(err.msg, "another publish") != NULL);
    snprintf(path, sizeof path, "%s/CURRENT", pub);
    CHECK(access(path, F_OK) != 0);
    close(fd);
    CHECK_OK(mt_publish(db, pub, NULL, NULL, NULL));
    /* a store without an index has nothing to publish */
    snprintf(path, sizeof path, "%s/bare", tmpl);
    {
        struct mt_store *s = NULL;
        CHECK_OK(mt_store_open(path, NULL, &s, NULL));
        mt_store_close(s);
    }
    CHECK(mt_publish(path, pub, NULL, NULL, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "no search index") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_publish_snapshot_searches_without_accounts, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_publish_prunes_and_follows_the_newest, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_publish_resolve_refuses_incomplete_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_one_publisher_at_a_time,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
