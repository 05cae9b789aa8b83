/* Unit tests for src/store: open/migrate, upsert without duplicates,
 * settings persistence, batches, background checkpoints, and the OOM paths
 * (SQLite's allocations go through mt_malloc too, so injection reaches the
 * database layer). */
#include "check.h"

#include <sqlite3.h>
#include <unistd.h>

#include <sys/stat.h>
#include <time.h>

#include "medtrust/core.h"
#include "medtrust/store.h"
#include "store/store_int.h"

/* SQL that turns a v8 store's chunks back into v7's: the text column
 * again, filled from each chunk's range of its document. */
#define UNDO_V8                                                                \
    "DROP VIEW chunk_texts;"                                                   \
    "ALTER TABLE chunks ADD COLUMN text TEXT NOT NULL DEFAULT '';"             \
    "UPDATE chunks SET text = (SELECT CAST(substr(CAST(d.text AS BLOB),"       \
    " chunks.start + 1, chunks.end - chunks.start) AS TEXT) FROM documents d"  \
    " WHERE d.id = chunks.doc_id);"

/* v9 undone: the runs' idempotency key */
#define UNDO_V9 "DROP INDEX runs_idem; ALTER TABLE runs DROP COLUMN idem;"

/* v4..v9 undone */
#define UNDO_TO_V3                                                             \
    "DROP TABLE run_events; DROP TABLE run_reports;"                           \
    "DROP TABLE login_throttle;"                                               \
    "ALTER TABLE runs DROP COLUMN cancel_requested;" UNDO_V9 UNDO_V8           \
    "PRAGMA user_version=3"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-store");
}

static void dir_path(char *buf, size_t n, const char *leaf)
{
    snprintf(buf, n, "%s/%s", tmpl, leaf);
}

static enum mt_status count_total(const struct mt_store_counts *c, void *user)
{
    struct mt_store_counts *out = user;
    if (!c->source)
        *out = *c;
    return MT_OK;
}

static struct mt_store_counts totals(struct mt_store *s)
{
    struct mt_store_counts c = {NULL, 0, 0, 0};
    CHECK_OK(mt_store_stats(s, count_total, &c, NULL));
    return c;
}

static void put_text(struct mt_store *s, int64_t src, const char *id,
                     const char *text)
{
    struct mt_doc d = {id, "T", text, strlen(text), "{\"k\":1}"};
    CHECK_OK(mt_store_put(s, src, &d, NULL, NULL));
}

static void test_store_upsert_replaces_without_duplicates(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    int64_t src = 0;
    struct mt_store_counts c;
    char big[2500];
    (void)state;
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dir_path(dir, sizeof dir, "upsert");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK(mt_store_schema_version(s) >= 1);
    CHECK_OK(mt_store_source(s, "src", &src, NULL));
    put_text(s, src, "d1", big);
    put_text(s, src, "d2", "short text");
    c = totals(s);
    CHECK(c.documents == 2);
    CHECK(c.chunks == 4); /* 2499 chars: 3 chunks of <= 1000, then 1 */
    put_text(s, src, "d1", "now short");
    c = totals(s);
    CHECK(c.documents == 2 && c.chunks == 2);
    CHECK_OK(mt_store_check(s, NULL));
    mt_store_close(s);
}

static void test_store_leaves_identical_document_alone(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_doc d = {"d1", "T", "same text", 9, "{\"k\":1}"};
    struct mt_put_result r;
    int64_t src = 0;
    (void)state;
    dir_path(dir, sizeof dir, "same");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "src", &src, NULL));
    CHECK_OK(mt_store_put(s, src, &d, &r, NULL));
    CHECK(!r.unchanged && r.chunks == 1);
    CHECK_OK(mt_store_put(s, src, &d, &r, NULL));
    CHECK(r.unchanged && r.chunks == 0);
    d.metadata = "{\"k\":2}"; /* metadata alone counts as a change */
    CHECK_OK(mt_store_put(s, src, &d, &r, NULL));
    CHECK(!r.unchanged && r.chunks == 1);
    d.title = NULL;
    CHECK_OK(mt_store_put(s, src, &d, &r, NULL));
    CHECK(!r.unchanged);
    CHECK(totals(s).documents == 1 && totals(s).chunks == 1);
    mt_store_close(s);
}

static void test_store_keeps_settings_of_existing_store(void **state)
{
    char dir[128];
    struct mt_store_params p;
    struct mt_store *s = NULL;
    (void)state;
    dir_path(dir, sizeof dir, "settings");
    mt_store_default_params(&p);
    p.analyzer = "cjk";
    p.chunk_size = 300;
    p.chunk_overlap = 50;
    CHECK_OK(mt_store_open(dir, &p, &s, NULL));
    mt_store_close(s);
    mt_store_default_params(&p);
    CHECK_OK(mt_store_open(dir, &p, &s, NULL));
    CHECK(strcmp(mt_store_settings(s)->analyzer, "cjk") == 0);
    CHECK(mt_store_settings(s)->chunk_size == 300);
    CHECK(mt_store_settings(s)->chunk_overlap == 50);
    mt_store_close(s);
}

static void test_store_missing_dir_is_clear_error(void **state)
{
    char dir[128];
    struct mt_store_params p;
    struct mt_store *s = NULL;
    struct mt_error err;
    (void)state;
    dir_path(dir, sizeof dir, "nothing-here");
    mt_store_default_params(&p);
    p.create = 0;
    CHECK(mt_store_open(dir, &p, &s, &err) == MT_ENOTFOUND);
    CHECK(s == NULL);
    CHECK(strstr(err.msg, "medtrust index") != NULL);
}

static void test_store_rejects_newer_schema(void **state)
{
    char dir[128];
    char db[160];
    struct mt_store *s = NULL;
    struct mt_error err;
    sqlite3 *raw = NULL;
    (void)state;
    dir_path(dir, sizeof dir, "newer");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    mt_store_close(s);
    s = NULL;
    snprintf(db, sizeof db, "%s/store.db", dir);
    CHECK(sqlite3_open(db, &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, "PRAGMA user_version=999", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(raw);
    CHECK(mt_store_open(dir, NULL, &s, &err) == MT_EUNSUPPORTED);
    CHECK(strstr(err.msg, "999") != NULL);
}

/* The raw user_version of DIR/store.db, and whether table 'name' is in it. */
static int raw_version(const char *dir, const char *name, int *has)
{
    char db[160];
    sqlite3 *raw = NULL;
    sqlite3_stmt *q = NULL;
    int v = -1;

    snprintf(db, sizeof db, "%s/store.db", dir);
    CHECK(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &q, NULL) ==
          SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    CHECK(sqlite3_prepare_v2(raw,
                             "SELECT count(*) FROM sqlite_master WHERE name=?1",
                             -1, &q, NULL) == SQLITE_OK);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    *has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    sqlite3_close(raw);
    return v;
}

/* A read-only open reads an older store as it is and leaves it so; a
 * writer migrates it forward; one older than the corpus schema is refused
 * naming a writer. */
static void test_store_read_only_does_not_migrate(void **state)
{
    char dir[128];
    char db[160];
    struct mt_store_params p;
    struct mt_store *s = NULL;
    struct mt_error err;
    sqlite3 *raw = NULL;
    int64_t src = 0;
    int has = 0;
    int now;
    (void)state;
    dir_path(dir, sizeof dir, "older");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    now = mt_store_schema_version(s);
    CHECK_OK(mt_store_source(s, "x", &src, NULL));
    put_text(s, src, "a", "alpha beta");
    mt_store_close(s);
    s = NULL;
    CHECK(now > 3);
    /* back to a v3 store: what v4..v9 changed undone (v8: the chunk text
     * column back, filled from the ranges) */
    snprintf(db, sizeof db, "%s/store.db", dir);
    CHECK(sqlite3_open(db, &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, UNDO_TO_V3, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(raw);

    mt_store_default_params(&p);
    p.create = 0;
    p.read_only = 1;
    CHECK_OK(mt_store_open(dir, &p, &s, NULL));
    CHECK(mt_store_schema_version(s) == 3);
    CHECK(totals(s).documents == 1);
    mt_store_close(s);
    s = NULL;
    CHECK(raw_version(dir, "run_events", &has) == 3 && !has);

    p.read_only = 0;
    CHECK_OK(mt_store_open(dir, &p, &s, NULL));
    CHECK(mt_store_schema_version(s) == now);
    mt_store_close(s);
    s = NULL;
    CHECK(raw_version(dir, "run_events", &has) == now && has);

    CHECK(sqlite3_open(db, &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, "PRAGMA user_version=0", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(raw);
    p.read_only = 1;
    CHECK(mt_store_open(dir, &p, &s, &err) == MT_EUNSUPPORTED);
    CHECK(s == NULL);
    CHECK(strstr(err.msg, "version 0") && strstr(err.msg, "medtrust index"));
}

/* What the index builder saw: each chunk's text, in id order. */
struct seen {
    char text[8][1200];
    int64_t ids[8];
    int n;
};

static enum mt_status keep_chunk(const struct mt_chunk_row *r, void *user)
{
    struct seen *v = user;
    CHECK(v->n < 8 && r->text_len < sizeof v->text[0]);
    memcpy(v->text[v->n], r->text, r->text_len);
    v->text[v->n][r->text_len] = '\0';
    v->ids[v->n++] = r->chunk_id;
    return MT_OK;
}

/* A document of 2,400 bytes with two-byte characters across the chunk
 * edges (the ranges are bytes, not characters). */
static void long_text(char *buf, size_t n)
{
    size_t i = 0;
    unsigned w = 0;

    while (i + 16 < n) {
        i += (size_t)snprintf(buf + i, n - i, "%s%u ",
                              w % 3 ? "word" : "f\xc3\xa9ver", w);
        w++;
    }
    buf[i - 1] = '\0'; /* no trailing space */
}

static int column_count(const char *dir, const char *sql)
{
    char db[160];
    sqlite3 *raw = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;

    snprintf(db, sizeof db, "%s/store.db", dir);
    CHECK(sqlite3_open(db, &raw) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(raw, sql, -1, &st, NULL) == SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return n;
}

/* Every chunk read back (by the builder's walk, by id, and through the
 * chunk_texts view) is its byte range of the document, in order, with
 * the first starting and the last ending the document. */
static void check_chunks_are_ranges(const char *dir, const char *text)
{
    struct mt_store *s = NULL;
    struct seen v;
    struct mt_chunk_info info;
    char sql[128];
    const char *at = text;
    int i;

    v.n = 0;
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_each_chunk(s, 0, keep_chunk, &v, NULL));
    CHECK(v.n == 3);
    CHECK(strncmp(text, v.text[0], strlen(v.text[0])) == 0);
    CHECK(strcmp(text + strlen(text) - strlen(v.text[2]), v.text[2]) == 0);
    for (i = 0; i < v.n; i++) {
        const char *hit = strstr(at, v.text[i]);
        CHECK(hit != NULL && strlen(v.text[i]) > 500);
        at = hit + 1;
        CHECK_OK(mt_store_chunk_get(s, v.ids[i], &info, NULL));
        CHECK(strcmp(info.text, v.text[i]) == 0);
        CHECK(info.ordinal == (uint32_t)i);
        snprintf(sql, sizeof sql,
                 "SELECT length(CAST(text AS BLOB)) FROM chunk_texts"
                 " WHERE id = %lld",
                 (long long)v.ids[i]);
        CHECK(column_count(dir, sql) == (int)strlen(v.text[i]));
    }
    mt_store_close(s);
}

/* A new store DIR/LEAF holding one document of long_text. */
static void store_long_doc(char *dir, size_t n, const char *leaf, char *text,
                           size_t text_n)
{
    struct mt_store *s = NULL;
    int64_t src = 0;

    long_text(text, text_n);
    dir_path(dir, n, leaf);
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "src", &src, NULL));
    put_text(s, src, "d1", text);
    mt_store_close(s);
}

static void test_store_chunks_are_ranges_of_the_document(void **state)
{
    char dir[128], text[2400];
    (void)state;
    store_long_doc(dir, sizeof dir, "ranges", text, sizeof text);
    /* The chunk rows hold no text of their own. */
    CHECK(column_count(dir, "SELECT COUNT(*) FROM pragma_table_info('chunks')"
                            " WHERE name = 'text'") == 0);
    check_chunks_are_ranges(dir, text);
}

/* A read-only open of the v7-shaped store reads its three chunks by
 * their ranges and leaves the store at v7. */
static void check_read_only_v7(const char *dir, const char *text)
{
    struct mt_store_params p;
    struct mt_store *s = NULL;
    struct seen v;
    int i;

    mt_store_default_params(&p);
    p.read_only = 1;
    v.n = 0;
    CHECK_OK(mt_store_open(dir, &p, &s, NULL));
    CHECK_OK(mt_store_each_chunk(s, 0, keep_chunk, &v, NULL));
    mt_store_close(s);
    CHECK(v.n == 3);
    for (i = 0; i < v.n; i++)
        CHECK(strlen(v.text[i]) > 500 && strstr(text, v.text[i]) != NULL);
    CHECK(column_count(dir, "PRAGMA user_version") == 7);
}

/* A store written before v8 (each chunk's text in its row) is migrated
 * on open for writing and reads back the same chunks. */
static void test_store_migrates_chunk_text_to_ranges(void **state)
{
    char dir[128], db[160], text[2400];
    sqlite3 *raw = NULL;
    (void)state;
    store_long_doc(dir, sizeof dir, "v7", text, sizeof text);
    snprintf(db, sizeof db, "%s/store.db", dir);
    CHECK(sqlite3_open(db, &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, UNDO_V9 UNDO_V8 "PRAGMA user_version=7;", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(raw);
    /* Read-only, the older store is read as it is, not migrated. */
    check_read_only_v7(dir, text);
    CHECK(column_count(dir, "SELECT COUNT(*) FROM chunks WHERE length(text)"
                            " > 500") == 3);
    check_chunks_are_ranges(dir, text);
    CHECK(column_count(dir, "PRAGMA user_version") >= 9);
    CHECK(column_count(dir, "SELECT COUNT(*) FROM pragma_table_info('chunks')"
                            " WHERE name = 'text'") == 0);
    /* v9: runs carry an idempotency key, unique */
    CHECK(column_count(dir, "SELECT COUNT(*) FROM pragma_index_info("
                            "'runs_idem') WHERE name = 'idem'") == 1);
}

/* A reader's mt_store_chunk_get leaves no read transaction open: the
 * next one sees what a writer committed since (a statement left on its
 * row kept the first snapshot, so the deleted chunk was still found),
 * and the fields it returned are whole. */
static void test_store_chunk_get_sees_later_writes(void **state)
{
    char dir[128];
    struct mt_store_params p;
    struct mt_store *w = NULL, *r = NULL;
    struct mt_chunk_info ci;
    int64_t src = 0;
    int del = 0;
    (void)state;
    dir_path(dir, sizeof dir, "snapshot");
    CHECK_OK(mt_store_open(dir, NULL, &w, NULL));
    CHECK_OK(mt_store_source(w, "src", &src, NULL));
    put_text(w, src, "a", "Aspirin thins the blood.");
    mt_store_default_params(&p);
    p.read_only = 1;
    CHECK_OK(mt_store_open(dir, &p, &r, NULL));
    CHECK_OK(mt_store_chunk_get(r, 1, &ci, NULL));
    CHECK(strcmp(ci.doc_id, "a") == 0 && strcmp(ci.title, "T") == 0);
    CHECK(strcmp(ci.text, "Aspirin thins the blood.") == 0);
    CHECK(strcmp(ci.source, "src") == 0 &&
          strcmp(ci.metadata, "{\"k\":1}") == 0);
    CHECK(ci.chunk_id == 1 && ci.ordinal == 0);
    CHECK_OK(mt_store_delete(w, src, "a", &del, NULL));
    CHECK(del == 1);
    CHECK(mt_store_chunk_get(r, 1, &ci, NULL) == MT_ENOTFOUND);
    mt_store_close(r);
    mt_store_close(w);
}

static void test_store_rollback_drops_batch(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    int64_t src = 0;
    (void)state;
    dir_path(dir, sizeof dir, "rollback");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "x", &src, NULL));
    CHECK_OK(mt_store_begin(s, NULL));
    CHECK(mt_store_begin(s, NULL) == MT_EINVAL);
    put_text(s, src, "a", "alpha");
    put_text(s, src, "b", "beta");
    mt_store_rollback(s);
    CHECK(totals(s).documents == 0);
    CHECK_OK(mt_store_begin(s, NULL));
    put_text(s, src, "a", "alpha");
    CHECK_OK(mt_store_commit(s, NULL));
    CHECK(totals(s).documents == 1);
    mt_store_close(s);
}

/* One open-write-close cycle; returns its status. */
static enum mt_status oom_cycle(const char *dir)
{
    struct mt_store *s = NULL;
    struct mt_doc d = {"id1", "title", "some text to chunk", 18, NULL};
    int64_t src = 0;
    enum mt_status st = mt_store_open(dir, NULL, &s, NULL);

    if (st == MT_OK)
        st = mt_store_source(s, "oom", &src, NULL);
    if (st == MT_OK)
        st = mt_store_put(s, src, &d, NULL, NULL);
    mt_store_close(s);
    return st;
}

static void test_store_survives_every_allocation_failure(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    long n;
    enum mt_status st = MT_ENOMEM;
    (void)state;
    dir_path(dir, sizeof dir, "oom");
    for (n = 0; n < 5000 && st != MT_OK; n++) {
        mt_alloc_fail_after(n);
        st = oom_cycle(dir);
        mt_alloc_fail_reset();
        /* Any failure must be reported, never a crash or a leak. */
        CHECK(st == MT_OK || st == MT_ENOMEM || st == MT_EDB || st == MT_EIO);
    }
    CHECK(st == MT_OK);
    CHECK(n > 10); /* injection really reached the store */
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_check(s, NULL));
    CHECK(totals(s).documents == 1);
    mt_store_close(s);
}

static void test_ingest_reports_bad_line_and_skips(void **state)
{
    char dir[128];
    char file[160];
    struct mt_store *s = NULL;
    struct mt_ingest_params ip;
    struct mt_ingest_result r;
    struct mt_error err;
    FILE *f;
    (void)state;
    dir_path(dir, sizeof dir, "ingest");
    dir_path(file, sizeof file, "in.jsonl");
    f = fopen(file, "w");
    fputs("{\"id\":\"a\",\"text\":\"alpha\",\"year\":2001}\n"
          "{\"id\":7,\"text\":\"seven\",\"title\":\"T\"}\n"
          "{\"id\":\"c\"}\n"
          "{\"id\":\"d\",\"text\":\"delta\"}\n",
          f);
    fclose(f);
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    mt_ingest_default_params(&ip);
    ip.batch_size = 2;
    CHECK(mt_store_ingest_jsonl(s, file, &ip, &r, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "in.jsonl:3") != NULL);
    CHECK(strstr(err.msg, "text") != NULL);
    CHECK(totals(s).documents == 2); /* the first batch committed */
    ip.skip_bad = 1;
    CHECK_OK(mt_store_ingest_jsonl(s, file, &ip, &r, &err));
    CHECK(r.documents == 1 && r.unchanged == 2 && r.skipped == 1);
    CHECK(totals(s).documents == 3);
    mt_store_close(s);
}

static long long file_size(const char *dir, const char *name)
{
    char path[256];
    struct stat sb;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* 24 MiB committed in 40 batches with checkpoints on their own thread:
 * the thread copies pages into store.db while the writer goes on (the
 * writer's own connection checkpoints nothing until the WAL is 250 MiB),
 * and every row is there after a reopen. */
static void test_store_background_checkpoints(void **state)
{
    char dir[128];
    static char text[6000];
    char id[32];
    struct mt_store *s = NULL;
    struct mt_store_counts t = {NULL, 0, 0, 0};
    struct mt_doc d = {id, NULL, text, sizeof text - 1, NULL};
    struct mt_store_params ro;
    int64_t src = 0;
    long long before;
    int i, k, waited;
    (void)state;
    snprintf(dir, sizeof dir, "%s/ckpt", tmpl);
    memset(text, 'w', sizeof text - 1);
    for (i = 7; i < (int)sizeof text - 1; i += 8)
        text[i] = ' ';
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "x", &src, NULL));
    CHECK_OK(mt_store_background_checkpoints(s, 1, NULL));
    CHECK_OK(mt_store_background_checkpoints(s, 1, NULL)); /* still one */
    before = file_size(dir, "store.db");
    for (k = 0; k < 40; k++) {
        CHECK_OK(mt_store_begin(s, NULL));
        for (i = 0; i < 100; i++) {
            snprintf(id, sizeof id, "d%d-%d", k, i);
            text[0] = (char)('a' + i % 26); /* no two alike */
            text[1] = (char)('a' + k % 26);
            CHECK_OK(mt_store_put(s, src, &d, NULL, NULL));
        }
        CHECK_OK(mt_store_commit(s, NULL));
    }
    for (waited = 0; waited < 200 && mtx_store_checkpoint_runs(s) == 0;
         waited++)
        usleep(50000);
    CHECK(mtx_store_checkpoint_runs(s) > 0);
    CHECK(file_size(dir, "store.db") > before + (10LL << 20));
    CHECK_OK(mt_store_background_checkpoints(s, 0, NULL));
    CHECK(mtx_store_checkpoint_runs(s) == 0); /* stopped */
    mt_store_close(s);
    CHECK(file_size(dir, "store.db-wal") <= 0); /* the last close's */
    mt_store_default_params(&ro);
    ro.read_only = 1;
    CHECK_OK(mt_store_open(dir, &ro, &s, NULL));
    CHECK(mt_store_background_checkpoints(s, 1, NULL) == MT_EINVAL);
    CHECK_OK(mt_store_check(s, NULL));
    CHECK_OK(mt_store_stats(s, count_total, &t, NULL));
    CHECK(t.documents == 4000);
    mt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_upsert_replaces_without_duplicates),
        cmocka_unit_test(test_store_leaves_identical_document_alone),
        cmocka_unit_test(test_store_keeps_settings_of_existing_store),
        cmocka_unit_test(test_store_missing_dir_is_clear_error),
        cmocka_unit_test(test_store_rejects_newer_schema),
        cmocka_unit_test(test_store_read_only_does_not_migrate),
        cmocka_unit_test(test_store_chunks_are_ranges_of_the_document),
        cmocka_unit_test(test_store_migrates_chunk_text_to_ranges),
        cmocka_unit_test(test_store_rollback_drops_batch),
        cmocka_unit_test(test_store_chunk_get_sees_later_writes),
        cmocka_unit_test(test_store_background_checkpoints),
        cmocka_unit_test(test_store_survives_every_allocation_failure),
        cmocka_unit_test(test_ingest_reports_bad_line_and_skips),
    };
    return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
