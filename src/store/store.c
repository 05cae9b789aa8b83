/* Store handle: opening, schema migration, settings and transactions.
 * The store is DIR/store.db, an SQLite database in WAL mode. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "store/store_int.h"
#include "text/analyzer.h"

/* ==== Schema ====
 * Each entry moves the schema from version i to i+1 and runs in one
 * transaction with the PRAGMA user_version bump, so a crash mid-migration
 * leaves the old version intact. Append new versions; never edit old. */
static const char *const migrations[] = {
    /* v1: corpus */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE sources(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " created_at INTEGER NOT NULL DEFAULT (strftime('%s','now')));"
    "CREATE TABLE documents(id INTEGER PRIMARY KEY,"
    " source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,"
    " ext_id TEXT NOT NULL, title TEXT, text TEXT NOT NULL,"
    " metadata TEXT NOT NULL DEFAULT '{}',"
    " updated_at INTEGER NOT NULL DEFAULT (strftime('%s','now')),"
    " UNIQUE(source_id, ext_id));"
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY,"
    " doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,"
    " ordinal INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " text TEXT NOT NULL, UNIQUE(doc_id, ordinal));",
    /* v2: accounts, sessions, API tokens, runs, audit trail, settings
     * (src/store/accounts.c). Secrets are stored as SHA-256 hashes,
     * passwords as argon2id strings. */
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " pwhash TEXT NOT NULL, role TEXT NOT NULL DEFAULT 'user'"
    " CHECK(role IN ('admin','user')),"
    " created_at INTEGER NOT NULL DEFAULT (strftime('%s','now')));"
    "CREATE TABLE sessions(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    " csrf TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " expires_at INTEGER NOT NULL);"
    "CREATE TABLE tokens(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL DEFAULT '',"
    " created_at INTEGER NOT NULL DEFAULT (strftime('%s','now')));"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY,"
    " user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,"
    " username TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,"
    " input_hash TEXT, result TEXT, error TEXT,"
    " created_at INTEGER NOT NULL DEFAULT (strftime('%s','now')),"
    " finished_at INTEGER);"
    "CREATE INDEX runs_by_user ON runs(user_id, id);"
    "CREATE TABLE audit(id INTEGER PRIMARY KEY,"
    " at INTEGER NOT NULL DEFAULT (strftime('%s','now')),"
    " user_id INTEGER, username TEXT, action TEXT NOT NULL,"
    " detail TEXT NOT NULL DEFAULT '{}');"
    "CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    /* v3: API tokens may expire (NULL: never) */
    "ALTER TABLE tokens ADD COLUMN expires_at INTEGER;",
    /* v4: run events, the live trace of a run (src/store/accounts.c; the
     * same table as PostgreSQL's in src/store/state.c) */
    "CREATE TABLE run_events(run_id INTEGER NOT NULL"
    " REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,"
    " type TEXT NOT NULL, data TEXT NOT NULL,"
    " at INTEGER NOT NULL DEFAULT (strftime('%s','now')),"
    " PRIMARY KEY(run_id, seq));",
    /* v5: a cancel asked for on another server (state.c's v2 too) */
    "ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL"
    " DEFAULT 0;",
    /* v6: a run's HTML report, for servers that did not write it (state.c's
     * v3 too) */
    "CREATE TABLE run_reports(run_id INTEGER PRIMARY KEY"
    " REFERENCES runs(id) ON DELETE CASCADE, html TEXT NOT NULL);",
    /* v7: failed logins counted across servers (state.c's v4 too) */
    "CREATE TABLE login_throttle(key TEXT PRIMARY KEY,"
    " fails INTEGER NOT NULL DEFAULT 0,"
    " locked_until INTEGER NOT NULL DEFAULT 0);",
    /* v8: a chunk is the byte range [start, end) of its document's text;
     * its own copy of the text goes (a PubMed abstract was stored twice).
     * chunk_texts gives the old shape to SQL readers (bench peers, the
     * sqlite3 shell). DROP COLUMN rewrites the table; the freed pages stay
     * in the file until a VACUUM. */
    "ALTER TABLE chunks DROP COLUMN text;"
    "CREATE VIEW chunk_texts AS SELECT c.id AS id, c.doc_id AS doc_id,"
    " c.ordinal AS ordinal, CAST(substr(CAST(d.text AS BLOB), c.start + 1,"
    " c.end - c.start) AS TEXT) AS text FROM chunks c"
    " JOIN documents d ON d.id = c.doc_id;",
    /* v9: the idempotency key of a run's insert (accounts.c mt_run_create,
     * state.c's v5 too), so both engines run one statement. SQLite adds
     * no UNIQUE column: the key is unique by an index. Adding a column
     * rewrites nothing, so a 25M-record store migrates at once. */
    "ALTER TABLE runs ADD COLUMN idem TEXT;"
    "CREATE UNIQUE INDEX runs_idem ON runs(idem);",
};

#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* The oldest schema a read-only open reads as it is, without migrating:
 * what readers read (meta, sources, documents, chunks) is v1's, and
 * v2..v7 and v9 only add account and run tables and columns, which only
 * writers use; v8
 * drops chunks.text, which readers no longer read (a chunk is cut from
 * its document by start/end, columns v1 has). A migration that changes
 * what readers read raises it. So `search` never
 * changes a store on disk (an older medtrust keeps opening it); a writer
 * (import, index, serve's state) migrates it forward. */
#define READ_MIN_VERSION 1

void mt_store_default_params(struct mt_store_params *p)
{
    memset(p, 0, sizeof *p);
    p->analyzer = "english";
    p->chunk_size = 1000;
    p->chunk_overlap = 200;
    p->create = 1;
}

enum mt_status mtx_store_dberr(struct mt_store *s, int rc, const char *what,
                               struct mt_error *err)
{
    int base = rc & 0xff;
    enum mt_status st = MT_EDB;

    if (base == SQLITE_NOMEM)
        st = MT_ENOMEM;
    else if (base == SQLITE_IOERR || base == SQLITE_CANTOPEN ||
             base == SQLITE_FULL || base == SQLITE_READONLY)
        st = MT_EIO;
    return mt_fail(err, st, "%s: %s: %s", s->dir, what,
                   s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

enum mt_status mtx_store_exec(struct mt_store *s, const char *sql,
                              struct mt_error *err)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

    if (rc != SQLITE_OK)
        return mtx_store_dberr(s, rc, "executing SQL", err);
    return MT_OK;
}

enum mt_status mtx_store_prepare(struct mt_store *s, const char *sql,
                                 sqlite3_stmt **st, struct mt_error *err)
{
    int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);

    if (rc != SQLITE_OK)
        return mtx_store_dberr(s, rc, "preparing SQL", err);
    return MT_OK;
}

static enum mt_status user_version(struct mt_store *s, int *v,
                                   struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(s, "PRAGMA user_version", &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (step != SQLITE_ROW)
        return mtx_store_dberr(s, step, "reading schema version", err);
    return MT_OK;
}

static enum mt_status migrate_one(struct mt_store *s, int from,
                                  struct mt_error *err)
{
    char bump[64];
    enum mt_status st = mtx_store_exec(s, "BEGIN IMMEDIATE", err);

    if (st != MT_OK)
        return st;
    snprintf(bump, sizeof bump, "PRAGMA user_version=%d", from + 1);
    st = mtx_store_exec(s, migrations[from], err);
    if (st == MT_OK)
        st = mtx_store_exec(s, bump, err);
    if (st == MT_OK)
        st = mtx_store_exec(s, "COMMIT", err);
    if (st != MT_OK)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

static enum mt_status migrate(struct mt_store *s, struct mt_error *err)
{
    int v = 0;
    enum mt_status st = user_version(s, &v, err);

    if (st != MT_OK)
        return st;
    if (v > SCHEMA_VERSION)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: store schema version %d is newer than this "
                       "medtrust supports (%d); upgrade medtrust",
                       s->dir, v, SCHEMA_VERSION);
    if (v < READ_MIN_VERSION && s->params.read_only)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: store schema version %d is older than this "
                       "medtrust reads without migrating it (%d); a writer "
                       "migrates it, e.g. 'medtrust index --db %s'",
                       s->dir, v, READ_MIN_VERSION, s->dir);
    if (s->params.read_only) {
        s->schema_version = v;
        return MT_OK;
    }
    for (; v < SCHEMA_VERSION; v++) {
        st = migrate_one(s, v, err);
        if (st != MT_OK)
            return st;
    }
    s->schema_version = v;
    return MT_OK;
}

int mt_store_schema_version(const struct mt_store *s)
{
    return s->schema_version;
}

const struct mt_store_params *mt_store_settings(const struct mt_store *s)
{
    return &s->params;
}

/* ==== Settings ==== */

static enum mt_status meta_get(struct mt_store *s, const char *key, char *val,
                               size_t n, int *found, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc =
        mtx_store_prepare(s, "SELECT value FROM meta WHERE key=?1", &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    *found = step == SQLITE_ROW;
    if (*found)
        snprintf(val, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return mtx_store_dberr(s, step, "reading settings", err);
    return MT_OK;
}

static enum mt_status meta_put(struct mt_store *s, const char *key,
                               const char *val, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(
        s, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, val, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step != SQLITE_DONE)
        return mtx_store_dberr(s, step, "writing settings", err);
    return MT_OK;
}

/* A new store's settings must name a real analyzer and valid chunking. */
static enum mt_status check_settings(struct mt_store *s, struct mt_error *err)
{
    struct mt_analyzer *a = NULL;
    enum mt_status st = mtx_analyzer_new(s->analyzer, &a, err);

    mtx_analyzer_free(a);
    if (st != MT_OK)
        return st;
    if (s->params.chunk_size == 0 ||
        s->params.chunk_overlap > s->params.chunk_size)
        return mt_fail(err, MT_EINVAL,
                       "%s: chunk overlap %u must not exceed chunk size %u "
                       "(and the size must be at least 1)",
                       s->dir, s->params.chunk_overlap, s->params.chunk_size);
    return MT_OK;
}

static enum mt_status save_settings(struct mt_store *s, struct mt_error *err)
{
    char num[32];
    enum mt_status st = check_settings(s, err);

    if (st == MT_OK)
        st = meta_put(s, "analyzer", s->analyzer, err);

    snprintf(num, sizeof num, "%u", s->params.chunk_size);
    if (st == MT_OK)
        st = meta_put(s, "chunk_size", num, err);
    snprintf(num, sizeof num, "%u", s->params.chunk_overlap);
    if (st == MT_OK)
        st = meta_put(s, "chunk_overlap", num, err);
    return st;
}

static enum mt_status load_u32(struct mt_store *s, const char *key,
                               uint32_t *out, struct mt_error *err)
{
    char val[64];
    int found = 0;
    unsigned long v;
    char *end;
    enum mt_status st = meta_get(s, key, val, sizeof val, &found, err);

    if (st != MT_OK || !found)
        return st;
    errno = 0;
    v = strtoul(val, &end, 10);
    if (errno || *end || v > UINT32_MAX)
        return mt_fail(err, MT_EPARSE, "%s: setting %s has bad value '%s'",
                       s->dir, key, val);
    *out = (uint32_t)v;
    return MT_OK;
}

/* Existing settings win; a new store records those from params. */
static enum mt_status settings(struct mt_store *s, struct mt_error *err)
{
    int found = 0;
    enum mt_status st =
        meta_get(s, "analyzer", s->analyzer, sizeof s->analyzer, &found, err);

    if (st != MT_OK)
        return st;
    if (!found)
        return s->params.read_only ? MT_OK : save_settings(s, err);
    st = load_u32(s, "chunk_size", &s->params.chunk_size, err);
    if (st == MT_OK)
        st = load_u32(s, "chunk_overlap", &s->params.chunk_overlap, err);
    return st;
}

/* ==== Open and close ==== */

static enum mt_status ensure_dir(const char *dir, int create,
                                 struct mt_error *err)
{
    struct stat sb;

    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return mt_fail(err, MT_EINVAL, "%s: not a directory", dir);
        return MT_OK;
    }
    if (!create)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s: no store here; create one with 'medtrust index "
                       "--db %s --input FILE.jsonl'",
                       dir, dir);
    /* 0700: the store holds password hashes and note sentences */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return mt_fail(err, MT_EIO, "%s: cannot create directory: %s", dir,
                       strerror(errno));
    return MT_OK;
}

/* Creates store.db 0600 before SQLite opens it (and tightens an older
 * 0644 one): SQLite gives its -wal and -shm files the database's mode.
 * An existing file is never opened here: closing any descriptor of a file
 * drops every POSIX lock this process holds on it, SQLite's too, so a
 * server opening one more handle would let another process's connection
 * take the database for its last one, checkpoint and delete the -wal the
 * server still writes (its later commits then never reach store.db). */
static void private_file(const char *path)
{
    struct stat st;
    int fd;

    if (stat(path, &st) == 0) {
        if (st.st_mode & 077)
            (void)chmod(path, 0600);
        return;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd); /* sqlite3_open_v2 reports any failure */
}

static enum mt_status open_db(struct mt_store *s, struct mt_error *err)
{
    char *path = mt_malloc(strlen(s->dir) + sizeof "/store.db");
    int flags = s->params.read_only
                    ? SQLITE_OPEN_READONLY
                    : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc;

    if (!path)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", s->dir);
    sprintf(path, "%s/store.db", s->dir);
    if (!s->params.read_only)
        private_file(path);
    rc = sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    mt_free(path);
    if (rc != SQLITE_OK)
        return mtx_store_dberr(s, rc, "opening store.db", err);
    sqlite3_busy_timeout(s->db, 10000);
    sqlite3_extended_result_codes(s->db, 1);
    /* WAL with synchronous=NORMAL: a killed process never corrupts the
     * database or loses a committed transaction; only power loss may drop
     * the last transactions. A new store gets 16 KiB pages (an existing
     * one keeps its own): a PubMed document row of about 2 KB leaves much
     * of a 4 KiB page empty, and a generated 60,000-record store was 20 %
     * smaller with them (BENCHMARKS.md). */
    if (s->params.read_only)
        return mtx_store_exec(s, "PRAGMA foreign_keys=ON", err);
    return mtx_store_exec(s,
                          "PRAGMA page_size=16384; PRAGMA journal_mode=WAL;"
                          " PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                          err);
}

static enum mt_status store_init(struct mt_store *s, const char *dir,
                                 const struct mt_store_params *params,
                                 struct mt_error *err)
{
    enum mt_status st;

    s->params = *params;
    s->chunk_copy = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    snprintf(s->analyzer, sizeof s->analyzer, "%s",
             params->analyzer ? params->analyzer : "english");
    s->params.analyzer = s->analyzer;
    s->dir = mt_strdup(dir);
    if (!s->dir)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", dir);
    if (mtx_store_sqlite_init() != SQLITE_OK)
        return mt_fail(err, MT_EDB, "%s: cannot initialise SQLite", dir);
    st = ensure_dir(dir, params->create && !params->read_only, err);
    if (st == MT_OK)
        st = open_db(s, err);
    if (st == MT_OK)
        st = migrate(s, err);
    if (st == MT_OK)
        st = settings(s, err);
    return st;
}

enum mt_status mt_store_open(const char *dir,
                             const struct mt_store_params *params,
                             struct mt_store **out, struct mt_error *err)
{
    struct mt_store_params defaults;
    struct mt_store *s;
    enum mt_status st;

    if (!dir || !out)
        return mt_fail(err, MT_EINVAL, "mt_store_open: no directory given");
    if (!params) {
        mt_store_default_params(&defaults);
        params = &defaults;
    }
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_store_param_table, params, 0, err);
    if (st != MT_OK)
        return st;
    s = mt_calloc(1, sizeof *s);
    if (!s)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", dir);
    st = store_init(s, dir, params, err);
    if (st != MT_OK) {
        mt_store_close(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

void mt_store_close(struct mt_store *s)
{
    if (!s)
        return;
    if (s->in_txn)
        mt_store_rollback(s);
    if (s->db)
        mt_store_background_checkpoints(s, 0, NULL);
    mtx_store_finalize_cached(s);
    if (s->db)
        sqlite3_close_v2(s->db);
    mtx_buf_free(&s->chunk_copy);
    mt_free(s->stats_names);
    mt_free(s->dir);
    mt_free(s);
}

/* ==== Transactions ==== */

enum mt_status mt_store_begin(struct mt_store *s, struct mt_error *err)
{
    enum mt_status st;

    if (s->in_txn)
        return mt_fail(err, MT_EINVAL, "%s: transaction already open", s->dir);
    st = mtx_store_exec(s, "BEGIN IMMEDIATE", err);
    if (st == MT_OK)
        s->in_txn = 1;
    return st;
}

enum mt_status mt_store_begin_read(struct mt_store *s, struct mt_error *err)
{
    enum mt_status st;

    if (s->in_txn)
        return mt_fail(err, MT_EINVAL, "%s: transaction already open", s->dir);
    st = mtx_store_exec(s, "BEGIN DEFERRED", err);
    if (st == MT_OK)
        s->in_txn = 1;
    return st;
}

enum mt_status mt_store_commit(struct mt_store *s, struct mt_error *err)
{
    enum mt_status st;

    if (!s->in_txn)
        return mt_fail(err, MT_EINVAL, "%s: no open transaction", s->dir);
    st = mtx_store_exec(s, "COMMIT", err);
    if (st != MT_OK) {
        mt_store_rollback(s);
        return st;
    }
    s->in_txn = 0;
    return MT_OK;
}

void mt_store_rollback(struct mt_store *s)
{
    if (!s->in_txn)
        return;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_txn = 0;
}

enum mt_status mt_store_check(struct mt_store *s, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc =
        mtx_store_prepare(s, "PRAGMA integrity_check", &st, err);
    const char *res;
    int step;

    if (rc != MT_OK)
        return rc;
    step = sqlite3_step(st);
    res = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!res || strcmp(res, "ok") != 0)
        rc = mt_fail(err, MT_EDB, "%s: integrity check failed: %s", s->dir,
                     res ? res : sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return rc;
}
