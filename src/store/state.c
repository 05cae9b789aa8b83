/* The state handle and its two engines: SQLite (the tables of the store's
 * own database, as before there was a choice) and PostgreSQL (src/store/
 * pg.c), with the state schema's versioned migrations for PostgreSQL. The
 * SQLite schema migrates with the store (store.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "medtrust/core.h"
#include "store/state_int.h"
#include "store/store_int.h"

#define MAX_ARGS 8

/* ==== PostgreSQL schema ====
 * The same tables as the store's v2..v7 (store.c), in PostgreSQL types:
 * ids are bigserial, times Unix seconds (bigint), hashes bytea. Append new
 * versions; never edit old ones. */
#define EPOCH_NOW "(extract(epoch from now())::bigint)"

static const struct mtx_pg_migration state_steps[] = {
    {1, "CREATE TABLE users(id bigserial PRIMARY KEY, name text NOT NULL"
        " UNIQUE, pwhash text NOT NULL, role text NOT NULL DEFAULT 'user'"
        " CHECK(role IN ('admin','user')),"
        " created_at bigint NOT NULL DEFAULT " EPOCH_NOW ");"
        "CREATE TABLE sessions(id bigserial PRIMARY KEY,"
        " hash bytea NOT NULL UNIQUE,"
        " user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
        " csrf text NOT NULL, created_at bigint NOT NULL,"
        " expires_at bigint NOT NULL);"
        "CREATE TABLE tokens(id bigserial PRIMARY KEY, hash bytea NOT NULL"
        " UNIQUE,"
        " user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
        " name text NOT NULL DEFAULT '',"
        " created_at bigint NOT NULL DEFAULT " EPOCH_NOW ","
        " expires_at bigint);"
        "CREATE TABLE runs(id bigserial PRIMARY KEY,"
        " user_id bigint REFERENCES users(id) ON DELETE SET NULL,"
        " username text NOT NULL, kind text NOT NULL, status text NOT NULL,"
        " input_hash text, result text, error text,"
        " created_at bigint NOT NULL DEFAULT " EPOCH_NOW ","
        " finished_at bigint);"
        "CREATE INDEX runs_by_user ON runs(user_id, id);"
        "CREATE TABLE audit(id bigserial PRIMARY KEY,"
        " at bigint NOT NULL DEFAULT " EPOCH_NOW ","
        " user_id bigint, username text, action text NOT NULL,"
        " detail text NOT NULL DEFAULT '{}');"
        "CREATE TABLE settings(key text PRIMARY KEY, value text NOT NULL);"
        "CREATE TABLE run_events(run_id bigint NOT NULL"
        " REFERENCES runs(id) ON DELETE CASCADE, seq bigint NOT NULL,"
        " type text NOT NULL, data text NOT NULL,"
        " at bigint NOT NULL DEFAULT " EPOCH_NOW ","
        " PRIMARY KEY(run_id, seq));"},
    /* a cancel asked for on a server that does not run the job */
    {2, "ALTER TABLE runs ADD COLUMN cancel_requested integer NOT NULL"
        " DEFAULT 0"},
    /* a run's HTML report, for servers that did not write it */
    {3, "CREATE TABLE run_reports(run_id bigint PRIMARY KEY"
        " REFERENCES runs(id) ON DELETE CASCADE, html text NOT NULL)"},
    /* failed logins counted across servers */
    {4, "CREATE TABLE login_throttle(key text PRIMARY KEY,"
        " fails bigint NOT NULL DEFAULT 0,"
        " locked_until bigint NOT NULL DEFAULT 0)"},
    /* the idempotency key of a run's insert (accounts.c mt_run_create;
     * the embedded store's v9 too, so both run one statement) */
    {5, "ALTER TABLE runs ADD COLUMN idem text UNIQUE"},
};

/* ==== Handle ==== */

int mt_state_is_shared(const char *url)
{
    return mtx_pg_is_url(url);
}

const char *mt_state_url(const char *given)
{
    const char *u = given ? given : getenv(MT_STATE_ENV);

    return u && *u ? u : NULL;
}

static enum mt_status open_pg(const char *url, struct mt_state *s,
                              struct mt_error *err)
{
    struct mtx_pg_params p;
    enum mt_status st;

    mtx_pg_default_params(&p);
    p.url = url;
    st = mtx_pg_open(&p, &s->pg, err);
    if (st == MT_OK)
        st = mtx_pg_migrate(s->pg, "state", state_steps,
                            sizeof state_steps / sizeof state_steps[0], NULL,
                            err);
    return st;
}

enum mt_status mt_state_open(const char *url, struct mt_state **out,
                             struct mt_error *err)
{
    struct mt_state *s;
    enum mt_status st;

    if (!url || !*url)
        return mt_fail(err, MT_EINVAL, "no state given (--state or --db)");
    s = mt_calloc(1, sizeof *s);
    if (!s)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (mtx_pg_is_url(url)) {
        st = open_pg(url, s, err);
    } else {
        if (strncmp(url, "sqlite:", 7) == 0)
            url += 7;
        st = mt_store_open(url, NULL, &s->store, err);
        s->own_store = 1;
    }
    if (st != MT_OK) {
        mt_state_close(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

enum mt_status mt_state_from_store(struct mt_store *store,
                                   struct mt_state **out, struct mt_error *err)
{
    struct mt_state *s = mt_calloc(1, sizeof *s);

    if (!s)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    s->store = store;
    *out = s;
    return MT_OK;
}

void mt_state_close(struct mt_state *s)
{
    if (!s)
        return;
    if (s->own_store)
        mt_store_close(s->store);
    mtx_pg_close(s->pg);
    mt_free(s);
}

const char *mt_state_engine(const struct mt_state *s)
{
    return s->pg ? "postgresql" : "sqlite";
}

const char *mt_state_where(const struct mt_state *s)
{
    return s->pg ? mtx_pg_where(s->pg) : s->store->dir;
}

uint64_t mt_state_reconnects(const struct mt_state *s)
{
    return s->pg ? mtx_pg_reconnects(s->pg) : 0;
}

/* ==== Rows ==== */

const char *mtx_row_text(const struct mtx_row *row, int c)
{
    if (row->st)
        return (const char *)sqlite3_column_text(row->st, c);
    return PQgetisnull(row->res, row->r, c) ? NULL
                                            : PQgetvalue(row->res, row->r, c);
}

int64_t mtx_row_int(const struct mtx_row *row, int c)
{
    if (row->st)
        return sqlite3_column_int64(row->st, c);
    return mtx_pg_int(row->res, row->r, c);
}

/* ==== SQLite engine ==== */

static void sqlite_bind(sqlite3_stmt *st, const char *types, va_list ap)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    int i;

    for (i = 0; types[i]; i++) {
        if (types[i] == 's') {
            const char *v = va_arg(ap, const char *);
            if (v)
                sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, i + 1);
        } else if (types[i] == 'I') {
            sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        } else {
            const char *v = va_arg(ap, const char *);
            crypto_hash_sha256(h, (const unsigned char *)v, strlen(v));
            sqlite3_bind_blob(st, i + 1, h, sizeof h, SQLITE_TRANSIENT);
        }
    }
}

static enum mt_status sqlite_exec(struct mt_state *s, struct mtx_query *q,
                                  struct mt_error *err, const char *sql,
                                  const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    struct mtx_row row = {NULL, NULL, 0};
    enum mt_status rc = mtx_store_prepare(s->store, sql, &st, err);
    int step = SQLITE_DONE;

    if (rc != MT_OK)
        return rc;
    sqlite_bind(st, types, ap);
    row.st = st;
    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        q->rows++;
        if (q->fn)
            rc = q->fn(&row, q->user);
    }
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mtx_store_dberr(s->store, step, "state", err);
    if (rc == MT_OK)
        q->changes = sqlite3_changes(s->store->db);
    sqlite3_finalize(st);
    return rc;
}

/* ==== PostgreSQL engine ==== */

/* Copies 'sql' into out with each '?' replaced by $1, $2, ... (our
 * statements have no '?' inside literals). */
static enum mt_status pg_sql(const char *sql, char **out, struct mt_error *err)
{
    size_t n = strlen(sql);
    char *o = mt_malloc(n * 3 + 1);
    size_t i, k = 0;
    int arg = 0;

    if (!o)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        if (sql[i] == '?')
            k += (size_t)sprintf(o + k, "$%d", ++arg);
        else
            o[k++] = sql[i];
    }
    o[k] = '\0';
    *out = o;
    return MT_OK;
}

/* Argument texts: integers in decimal, hashes as bytea hex ("\x..."). */
struct pg_args {
    const char *v[MAX_ARGS];
    char buf[MAX_ARGS][2 * crypto_hash_sha256_BYTES + 3];
};

static void pg_bind(struct pg_args *a, const char *types, va_list ap)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    int i;

    for (i = 0; i < MAX_ARGS && types[i]; i++) {
        if (types[i] == 's') {
            a->v[i] = va_arg(ap, const char *);
        } else if (types[i] == 'I') {
            a->v[i] = mtx_pg_i64(a->buf[i], va_arg(ap, int64_t));
        } else {
            const char *t = va_arg(ap, const char *);
            crypto_hash_sha256(h, (const unsigned char *)t, strlen(t));
            a->buf[i][0] = '\\';
            a->buf[i][1] = 'x';
            sodium_bin2hex(a->buf[i] + 2, sizeof a->buf[i] - 2, h, sizeof h);
            a->v[i] = a->buf[i];
        }
    }
}

static enum mt_status pg_exec(struct mt_state *s, struct mtx_query *q,
                              struct mt_error *err, const char *sql,
                              const char *types, va_list ap)
{
    struct pg_args a;
    struct mtx_row row = {NULL, NULL, 0};
    PGresult *res = NULL;
    char *text = NULL;
    int n = (int)strlen(types);
    enum mt_status rc = pg_sql(sql, &text, err);

    pg_bind(&a, types, ap);
    if (rc == MT_OK)
        rc = mtx_pg_exec(s->pg, text, n, a.v, &res, err);
    mt_free(text);
    if (rc != MT_OK)
        return rc;
    row.res = res;
    for (row.r = 0; rc == MT_OK && row.r < PQntuples(res); row.r++) {
        q->rows++;
        if (q->fn)
            rc = q->fn(&row, q->user);
    }
    q->changes = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return rc;
}

enum mt_status mtx_state_exec(struct mt_state *s, struct mtx_query *q,
                              struct mt_error *err, const char *sql,
                              const char *types, ...)
{
    struct mtx_query none = {NULL, NULL, 0, 0};
    va_list ap;
    enum mt_status rc;

    if (strlen(types) > MAX_ARGS)
        return mt_fail(err, MT_EINTERNAL, "too many statement arguments");
    if (!q)
        q = &none;
    q->rows = 0;
    q->changes = 0;
    va_start(ap, types);
    if (s->pg)
        rc = pg_exec(s, q, err, sql, types, ap);
    else
        rc = sqlite_exec(s, q, err, sql, types, ap);
    va_end(ap);
    return rc;
}
