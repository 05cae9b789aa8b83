/* Model call cache in SQLite, or in PostgreSQL when the path is a
 * postgresql:// URL (so the workers of a queued run share one). The key is
 * a 64-bit FNV-1a hash of (backend, model, request) for the index; the
 * full strings are stored and compared too, so a hash collision can never
 * serve a wrong result. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "model/cache.h"
#include "model/cache_pg.h"

struct mt_cache {
    sqlite3 *db;
    struct mtx_pg *pg; /* set instead of db for a postgresql:// cache */
    pthread_mutex_t mu;
    char *path;
};

static const char schema_sql[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS model_calls ("
    " hash INTEGER NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL,"
    " request TEXT NOT NULL, response BLOB NOT NULL,"
    " created REAL NOT NULL DEFAULT (julianday('now')));"
    "CREATE INDEX IF NOT EXISTS model_calls_hash ON model_calls(hash);";

static sqlite3_int64 key_hash(const char *backend, const char *model,
                              const char *request)
{
    uint64_t h = MTX_FNV1A_INIT;

    h = mtx_fnv1a(h, backend, strlen(backend) + 1);
    h = mtx_fnv1a(h, model, strlen(model) + 1);
    h = mtx_fnv1a(h, request, strlen(request));
    return (sqlite3_int64)(h >> 1); /* positive, fits an SQLite integer */
}

static enum mt_status db_fail(struct mt_cache *c, struct mt_error *err,
                              const char *what)
{
    return mt_fail(err, MT_EDB, "call cache %s: %s: %s", c->path, what,
                   sqlite3_errmsg(c->db));
}

enum mt_status mtx_cache_open(const char *path, struct mt_cache **out,
                              struct mt_error *err)
{
    struct mt_cache *c = mt_calloc(1, sizeof *c);
    enum mt_status st;

    if (!c)
        return mt_fail(err, MT_ENOMEM, "call cache: out of memory");
    pthread_mutex_init(&c->mu, NULL);
    c->path = mt_strdup(path);
    if (!c->path) {
        st = mt_fail(err, MT_ENOMEM, "call cache: out of memory");
        goto fail;
    }
    if (mtx_pg_is_url(path)) {
        st = mtx_cache_pg_open(path, &c->pg, err);
        if (st != MT_OK)
            goto fail;
        *out = c;
        return MT_OK;
    }
    if (sqlite3_open_v2(path, &c->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        st = mt_fail(err, MT_EDB, "cannot open call cache %s (--cache): %s",
                     path, c->db ? sqlite3_errmsg(c->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(c->db, 5000);
    if (sqlite3_exec(c->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
        st = db_fail(c, err, "cannot create schema (--cache)");
        goto fail;
    }
    *out = c;
    return MT_OK;
fail:
    mtx_cache_close(c);
    return st;
}

static void bind_key(sqlite3_stmt *s, const char *backend, const char *model,
                     const char *request)
{
    sqlite3_bind_int64(s, 1, key_hash(backend, model, request));
    sqlite3_bind_text(s, 2, backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, model, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, request, -1, SQLITE_STATIC);
}

static enum mt_status copy_row(sqlite3_stmt *s, char **val, size_t *n)
{
    const void *p = sqlite3_column_blob(s, 0);
    size_t len = (size_t)sqlite3_column_bytes(s, 0);
    char *v = mt_malloc(len + 1);

    if (!v)
        return MT_ENOMEM;
    if (len)
        memcpy(v, p, len);
    v[len] = '\0';
    *val = v;
    *n = len;
    return MT_OK;
}

enum mt_status mtx_cache_get(struct mt_cache *c, const char *backend,
                             const char *model, const char *request, char **val,
                             size_t *n, struct mt_error *err)
{
    static const char sql[] =
        "SELECT response FROM model_calls WHERE hash = ?1 AND backend = ?2"
        " AND model = ?3 AND request = ?4 LIMIT 1";
    sqlite3_stmt *s = NULL;
    enum mt_status st = MT_ENOTFOUND;
    int rc;

    pthread_mutex_lock(&c->mu);
    if (c->pg) {
        st = mtx_cache_pg_get(c->pg, key_hash(backend, model, request), backend,
                              model, request, val, n, err);
        goto out;
    }
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = db_fail(c, err, "lookup");
        goto out;
    }
    bind_key(s, backend, model, request);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        st = copy_row(s, val, n);
    else if (rc != SQLITE_DONE)
        st = db_fail(c, err, "lookup");
    if (st == MT_ENOMEM)
        mt_fail(err, st, "call cache: out of memory");
out:
    sqlite3_finalize(s);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static enum mt_status exec_locked(struct mt_cache *c, const char *sql,
                                  struct mt_error *err)
{
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(c, err, "write");
    return MT_OK;
}

/* One (delete, insert) of the batch on the prepared statements. */
static int put_row(sqlite3_stmt *d, sqlite3_stmt *s, const char *backend,
                   const char *model, const char *request, const void *val,
                   size_t n)
{
    int ok;

    bind_key(d, backend, model, request);
    bind_key(s, backend, model, request);
    sqlite3_bind_blob64(s, 5, n ? val : "", n, SQLITE_STATIC);
    ok = sqlite3_step(d) == SQLITE_DONE && sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(d);
    sqlite3_reset(s);
    return ok;
}

/* The whole batch in one transaction: every row or none (a killed
 * process leaves the batch out, never half of it). */
static enum mt_status put_many_sqlite(struct mt_cache *c, const char *backend,
                                      const char *model, size_t n,
                                      const char *const *requests,
                                      const void *const *vals,
                                      const size_t *lens, struct mt_error *err)
{
    static const char del[] =
        "DELETE FROM model_calls WHERE hash = ?1 AND backend = ?2"
        " AND model = ?3 AND request = ?4";
    static const char ins[] =
        "INSERT INTO model_calls(hash, backend, model, request, response)"
        " VALUES (?1, ?2, ?3, ?4, ?5)";
    sqlite3_stmt *d = NULL;
    sqlite3_stmt *s = NULL;
    enum mt_status st = exec_locked(c, "BEGIN IMMEDIATE", err);
    size_t i;

    if (st != MT_OK)
        return st;
    if (sqlite3_prepare_v2(c->db, del, -1, &d, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db, ins, -1, &s, NULL) != SQLITE_OK)
        st = db_fail(c, err, "write");
    for (i = 0; st == MT_OK && i < n; i++)
        if (!put_row(d, s, backend, model, requests[i], vals[i], lens[i]))
            st = db_fail(c, err, "write");
    sqlite3_finalize(d);
    sqlite3_finalize(s);
    if (st == MT_OK)
        st = exec_locked(c, "COMMIT", err);
    if (st != MT_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

enum mt_status mtx_cache_put_many(struct mt_cache *c, const char *backend,
                                  const char *model, size_t n,
                                  const char *const *requests,
                                  const void *const *vals, const size_t *lens,
                                  struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    if (n == 0)
        return MT_OK;
    pthread_mutex_lock(&c->mu);
    if (!c->pg)
        st = put_many_sqlite(c, backend, model, n, requests, vals, lens, err);
    /* PostgreSQL: each row is its own absolute write (harmless when sent
     * again after a lost reply), not one transaction. */
    for (i = 0; c->pg && st == MT_OK && i < n; i++)
        st = mtx_cache_pg_put(c->pg, key_hash(backend, model, requests[i]),
                              backend, model, requests[i], vals[i], lens[i],
                              err);
    pthread_mutex_unlock(&c->mu);
    return st;
}

enum mt_status mtx_cache_put(struct mt_cache *c, const char *backend,
                             const char *model, const char *request,
                             const void *val, size_t n, struct mt_error *err)
{
    return mtx_cache_put_many(c, backend, model, 1, &request, &val, &n, err);
}

size_t mtx_cache_count(struct mt_cache *c)
{
    sqlite3_stmt *s = NULL;
    size_t n = 0;

    pthread_mutex_lock(&c->mu);
    if (c->pg)
        n = mtx_cache_pg_count(c->pg);
    else if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM model_calls", -1,
                                &s, NULL) == SQLITE_OK &&
             sqlite3_step(s) == SQLITE_ROW)
        n = (size_t)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    pthread_mutex_unlock(&c->mu);
    return n;
}

void mtx_cache_close(struct mt_cache *c)
{
    if (!c)
        return;
    sqlite3_close(c->db);
    mtx_pg_close(c->pg);
    pthread_mutex_destroy(&c->mu);
    mt_free(c->path);
    mt_free(c);
}
