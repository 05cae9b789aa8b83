/* The PostgreSQL connection layer over libpq: connection from a URL,
 * reconnection with backoff after a lost connection (a restart or a
 * failover), transactions re-run whole after one, versioned migrations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "medtrust/core.h"
#include "store/pg.h"

struct mtx_pg {
    PGconn *conn;
    char *url;
    char where[256]; /* the URL without a password */
    double reconnect_s;
    int in_txn; /* inside mtx_pg_txn: a lost connection is not retried */
    int lost;   /* the connection was lost inside the transaction */
    uint64_t reconnects;
};

void mtx_pg_default_params(struct mtx_pg_params *p)
{
    memset(p, 0, sizeof *p);
    p->reconnect_s = 60;
}

int mtx_pg_is_url(const char *s)
{
    return s && (strncmp(s, "postgresql://", 13) == 0 ||
                 strncmp(s, "postgres://", 11) == 0);
}

/* Library code never prints: PostgreSQL's notices ("relation already
 * exists, skipping") are dropped. */
static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* "postgresql://user@host:port/db" from the URL's parts, never its
 * password. */
static void describe(struct mtx_pg *pg)
{
    const char *user = "", *host = "", *port = "", *db = "";
    PQconninfoOption *o = PQconninfoParse(pg->url, NULL);
    PQconninfoOption *i;

    for (i = o; i && i->keyword; i++) {
        const char *v = i->val ? i->val : "";
        if (strcmp(i->keyword, "user") == 0)
            user = v;
        else if (strcmp(i->keyword, "host") == 0)
            host = v;
        else if (strcmp(i->keyword, "port") == 0)
            port = v;
        else if (strcmp(i->keyword, "dbname") == 0)
            db = v;
    }
    snprintf(pg->where, sizeof pg->where, "postgresql://%s%s%s%s%s/%s", user,
             *user ? "@" : "", host, *port ? ":" : "", port, db);
    PQconninfoFree(o);
}

/* One connection attempt; MT_EIO with libpq's message when it fails. */
static enum mt_status connect_once(struct mtx_pg *pg, struct mt_error *err)
{
    static const char *const keys[] = {"dbname", "fallback_application_name",
                                       "connect_timeout", NULL};
    const char *vals[] = {pg->url, "medtrust", "10", NULL};
    char msg[256];

    PQfinish(pg->conn);
    pg->conn = PQconnectdbParams(keys, vals, 1);
    if (!pg->conn)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", pg->where);
    if (PQstatus(pg->conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(pg->conn, quiet, NULL);
        return MT_OK;
    }
    snprintf(msg, sizeof msg, "%s", PQerrorMessage(pg->conn));
    msg[strcspn(msg, "\n")] = '\0';
    return mt_fail(err, MT_EIO, "%s: %s", pg->where, msg);
}

/* Reconnects with backoff (50 ms doubling to 1 s) until reconnect_s have
 * passed. */
static enum mt_status reconnect(struct mtx_pg *pg, struct mt_error *err)
{
    double until = mtx_clock_now() + pg->reconnect_s;
    double wait = 0.05;
    enum mt_status st;

    for (;;) {
        st = connect_once(pg, err);
        if (st == MT_OK) {
            pg->reconnects++;
            return MT_OK;
        }
        if (st != MT_EIO || mtx_clock_now() + wait > until)
            return mt_error_prefix(err, "reconnecting for %.0f s",
                                   pg->reconnect_s);
        mtx_clock_sleep(wait);
        wait = wait * 2 > 1 ? 1 : wait * 2;
    }
}

enum mt_status mtx_pg_open(const struct mtx_pg_params *p, struct mtx_pg **out,
                           struct mt_error *err)
{
    struct mtx_pg *pg;
    enum mt_status st;

    if (!p || !mtx_pg_is_url(p->url))
        return mt_fail(err, MT_EINVAL,
                       "a PostgreSQL state URL starts with postgresql://");
    pg = mt_calloc(1, sizeof *pg);
    if (!pg || !(pg->url = mt_strdup(p->url))) {
        mt_free(pg);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    pg->reconnect_s = p->reconnect_s > 0 ? p->reconnect_s : 60;
    describe(pg);
    st = connect_once(pg, err);
    if (st != MT_OK) {
        mtx_pg_close(pg);
        return st;
    }
    *out = pg;
    return MT_OK;
}

int mtx_pg_down(const char *url)
{
    static const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *vals[] = {url, "10", NULL};
    PGPing p;

    if (!mtx_pg_is_url(url))
        return 0;
    p = PQpingParams(keys, vals, 1);
    return p == PQPING_NO_RESPONSE || p == PQPING_REJECT;
}

void mtx_pg_close(struct mtx_pg *pg)
{
    if (!pg)
        return;
    PQfinish(pg->conn);
    mt_free(pg->url);
    mt_free(pg);
}

uint64_t mtx_pg_reconnects(const struct mtx_pg *pg)
{
    return pg->reconnects;
}

const char *mtx_pg_where(const struct mtx_pg *pg)
{
    return pg->where;
}

/* ==== Statements ==== */

/* 1 when the statement failed because the connection is gone: the
 * connection is bad, or the server said so (class 08, or 57P01..57P03:
 * shut down by the administrator, crash shutdown, cannot connect now). */
static int conn_lost(const struct mtx_pg *pg, const PGresult *res)
{
    const char *code;

    if (PQstatus(pg->conn) != CONNECTION_OK || !res)
        return 1;
    code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (!code)
        return 0;
    return strncmp(code, "08", 2) == 0 || strcmp(code, "57P01") == 0 ||
           strcmp(code, "57P02") == 0 || strcmp(code, "57P03") == 0;
}

static int res_ok(const PGresult *res)
{
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

    return t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK;
}

static PGresult *send_sql(struct mtx_pg *pg, const char *sql, int n,
                          const char *const *params)
{
    /* several statements in one string need the simple protocol */
    if (n == 0)
        return PQexec(pg->conn, sql);
    return PQexecParams(pg->conn, sql, n, NULL, params, NULL, NULL, 0);
}

static enum mt_status lost_for_good(const struct mtx_pg *pg,
                                    struct mt_error *err)
{
    return mt_fail(err, MT_EIO, "%s: the connection kept being lost for %.0f s",
                   pg->where, pg->reconnect_s);
}

static enum mt_status sql_error(struct mtx_pg *pg, PGresult *res,
                                struct mt_error *err)
{
    char msg[384];

    snprintf(msg, sizeof msg, "%s",
             res ? PQresultErrorMessage(res) : PQerrorMessage(pg->conn));
    msg[strcspn(msg, "\n")] = '\0';
    PQclear(res);
    return mt_fail(err, MT_EDB, "%s: %s", pg->where, msg);
}

enum mt_status mtx_pg_exec(struct mtx_pg *pg, const char *sql, int n,
                           const char *const *params, PGresult **res,
                           struct mt_error *err)
{
    double until = mtx_clock_now() + pg->reconnect_s;
    PGresult *r;
    enum mt_status st;

    for (;;) {
        r = send_sql(pg, sql, n, params);
        if (res_ok(r))
            break;
        if (!conn_lost(pg, r))
            return sql_error(pg, r, err);
        PQclear(r);
        if (pg->in_txn) {
            pg->lost = 1;
            return mt_fail(err, MT_EIO, "%s: connection lost", pg->where);
        }
        /* a server that keeps dropping us gets reconnect_s in all */
        if (mtx_clock_now() > until)
            return lost_for_good(pg, err);
        st = reconnect(pg, err);
        if (st != MT_OK)
            return st;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return MT_OK;
}

enum mt_status mtx_pg_cmd(struct mtx_pg *pg, const char *sql, int n,
                          const char *const *params, int64_t *changes,
                          struct mt_error *err)
{
    PGresult *r = NULL;
    enum mt_status st = mtx_pg_exec(pg, sql, n, params, &r, err);

    if (st == MT_OK && changes)
        *changes = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return st;
}

/* ==== Transactions ==== */

/* One try: BEGIN, fn, COMMIT; a failure rolls back. */
static enum mt_status txn_once(struct mtx_pg *pg, mtx_pg_txn_fn fn, void *user,
                               struct mt_error *err)
{
    enum mt_status st = mtx_pg_exec(pg, "BEGIN", 0, NULL, NULL, err);

    if (st == MT_OK)
        st = fn(pg, user, err);
    if (st == MT_OK)
        st = mtx_pg_exec(pg, "COMMIT", 0, NULL, NULL, err);
    if (st != MT_OK && !pg->lost)
        PQclear(PQexec(pg->conn, "ROLLBACK"));
    return st;
}

enum mt_status mtx_pg_txn(struct mtx_pg *pg, mtx_pg_txn_fn fn, void *user,
                          struct mt_error *err)
{
    double until = mtx_clock_now() + pg->reconnect_s;
    enum mt_status st;

    if (pg->in_txn)
        return mt_fail(err, MT_EINTERNAL, "%s: nested transaction", pg->where);
    for (;;) {
        pg->in_txn = 1;
        pg->lost = 0;
        st = txn_once(pg, fn, user, err);
        pg->in_txn = 0;
        if (!pg->lost && PQstatus(pg->conn) == CONNECTION_OK)
            return st;
        /* lost before COMMIT was acknowledged: run it all again */
        if (mtx_clock_now() > until)
            return lost_for_good(pg, err);
        st = reconnect(pg, err);
        if (st != MT_OK)
            return st;
    }
}

/* ==== Migrations ==== */

struct migrate_ctx {
    const char *component;
    const struct mtx_pg_migration *steps;
    size_t n;
    int version;
};

static enum mt_status migrate_steps(struct mtx_pg *pg, struct migrate_ctx *c,
                                    struct mt_error *err)
{
    char vbuf[24];
    const char *p[2] = {c->component, vbuf};
    enum mt_status st = MT_OK;
    size_t i;

    for (i = (size_t)c->version; st == MT_OK && i < c->n; i++) {
        if (c->steps[i].version != (int)i + 1)
            return mt_fail(err, MT_EINTERNAL, "%s migration %zu is numbered %d",
                           c->component, i + 1, c->steps[i].version);
        mtx_pg_i64(vbuf, (int64_t)i + 1);
        st = mtx_pg_exec(pg, c->steps[i].sql, 0, NULL, NULL, err);
        if (st == MT_OK)
            st = mtx_pg_exec(pg,
                             "INSERT INTO schema_migrations(component, version)"
                             " VALUES($1, $2)",
                             2, p, NULL, err);
        if (st == MT_OK)
            c->version = (int)i + 1;
    }
    return st;
}

static enum mt_status migrate_fn(struct mtx_pg *pg, void *user,
                                 struct mt_error *err)
{
    struct migrate_ctx *c = user;
    PGresult *r = NULL;
    enum mt_status st;

    /* one lock for every component: migrations are rare and short */
    st = mtx_pg_exec(pg, "SELECT pg_advisory_xact_lock(7240519)", 0, NULL, NULL,
                     err);
    if (st == MT_OK)
        st = mtx_pg_exec(pg,
                         "CREATE TABLE IF NOT EXISTS schema_migrations("
                         "component text NOT NULL, version integer NOT NULL,"
                         " applied_at timestamptz NOT NULL DEFAULT now(),"
                         " PRIMARY KEY(component, version))",
                         0, NULL, NULL, err);
    if (st == MT_OK)
        st = mtx_pg_exec(pg,
                         "SELECT coalesce(max(version), 0)"
                         " FROM schema_migrations WHERE component = $1",
                         1, &c->component, &r, err);
    if (st != MT_OK)
        return st;
    c->version = (int)mtx_pg_int(r, 0, 0);
    PQclear(r);
    if (c->version > (int)c->n)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: %s schema version %d is newer than this medtrust "
                       "(%zu); upgrade medtrust",
                       pg->where, c->component, c->version, c->n);
    return migrate_steps(pg, c, err);
}

enum mt_status mtx_pg_migrate(struct mtx_pg *pg, const char *component,
                              const struct mtx_pg_migration *steps, size_t n,
                              int *version, struct mt_error *err)
{
    struct migrate_ctx c = {component, steps, n, 0};
    enum mt_status st = mtx_pg_txn(pg, migrate_fn, &c, err);

    if (st == MT_OK && version)
        *version = c.version;
    return st;
}

/* ==== Results ==== */

const char *mtx_pg_text(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? "" : PQgetvalue(res, r, c);
}

int mtx_pg_null(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c);
}

int64_t mtx_pg_int(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? 0
                                  : strtoll(PQgetvalue(res, r, c), NULL, 10);
}

const char *mtx_pg_i64(char buf[24], int64_t v)
{
    snprintf(buf, 24, "%lld", (long long)v);
    return buf;
}

enum mt_status mtx_pg_open_migrated(const char *url, const char *component,
                                    const struct mtx_pg_migration *steps,
                                    size_t n, struct mtx_pg **out,
                                    struct mt_error *err)
{
    struct mtx_pg_params p;
    struct mtx_pg *pg = NULL;
    enum mt_status st;

    mtx_pg_default_params(&p);
    p.url = url;
    st = mtx_pg_open(&p, &pg, err);
    if (st == MT_OK)
        st = mtx_pg_migrate(pg, component, steps, n, NULL, err);
    if (st != MT_OK) {
        mtx_pg_close(pg);
        return st;
    }
    *out = pg;
    return MT_OK;
}
