/* The PostgreSQL connection layer (libpq) shared by the state layer and the
 * job queue: connect from a URL, reconnect after a lost connection and send
 * the statement again, transactions that are re-run whole after a lost
 * connection, and versioned migrations per component. Internal to the
 * library (docs/architecture.md, "Past one machine"). */
#ifndef MTX_PG_H
#define MTX_PG_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "medtrust/status.h"

/* One connection; one thread at a time uses it. */
struct mtx_pg;

struct mtx_pg_params {
    const char *url;    /* postgresql://... or postgres://... (required) */
    double reconnect_s; /* how long to keep reconnecting; default 60 */
};

/* Fills 'p' with the defaults (url NULL, reconnect_s 60). */
void mtx_pg_default_params(struct mtx_pg_params *p);

/* 1 when 's' names a PostgreSQL database (postgresql:// or postgres://). */
int mtx_pg_is_url(const char *s);

/* Connects, one attempt (a wrong URL fails at once; only a connection
 * that was up is waited for); 'p' is copied. On success *out owns the handle
 * (mtx_pg_close). The error message never carries the password of the URL. */
enum mt_status mtx_pg_open(const struct mtx_pg_params *p, struct mtx_pg **out,
                           struct mt_error *err);

/* Closes the connection; NULL is allowed. */
void mtx_pg_close(struct mtx_pg *pg);

/* 1 when the server at 'url' does not take connections now (PQping: no
 * response, or it refuses them while starting or shutting down), so a
 * failed first connection is worth trying again; 0 when it answers (a
 * wrong password or database is then no reason to wait) or the URL is
 * malformed. */
int mtx_pg_down(const char *url);

/* Runs 'sql' with n text parameters ($1..$n; a NULL entry is SQL NULL).
 * On success *res (may be NULL: the result is dropped) takes the result,
 * cleared by the caller with PQclear. Outside mtx_pg_txn a lost
 * connection is re-established and the statement sent again, so a
 * statement must be harmless to repeat after an unacknowledged commit
 * (docs/architecture.md). MT_EDB with PostgreSQL's message on an SQL
 * error; MT_EIO when the server stayed away for reconnect_s. */
enum mt_status mtx_pg_exec(struct mtx_pg *pg, const char *sql, int n,
                           const char *const *params, PGresult **res,
                           struct mt_error *err);

/* Like mtx_pg_exec for a statement without result rows; *changes (may be
 * NULL) receives the number of rows it changed. */
enum mt_status mtx_pg_cmd(struct mtx_pg *pg, const char *sql, int n,
                          const char *const *params, int64_t *changes,
                          struct mt_error *err);

typedef enum mt_status (*mtx_pg_txn_fn)(struct mtx_pg *pg, void *user,
                                        struct mt_error *err);

/* Runs fn inside BEGIN ... COMMIT; fn's statements go through
 * mtx_pg_exec. A failure of fn rolls back and is returned. A lost
 * connection (in fn or at COMMIT) reconnects and runs fn again from the
 * start, so fn must keep no state that a rolled-back run changed. */
enum mt_status mtx_pg_txn(struct mtx_pg *pg, mtx_pg_txn_fn fn, void *user,
                          struct mt_error *err);

/* One schema step of a component: 'sql' (several statements allowed)
 * moves it to 'version'. Versions start at 1 and go up by one; append new
 * ones, never edit old ones. */
struct mtx_pg_migration {
    int version;
    const char *sql;
};

/* Applies the steps of 'component' ("state", "queue", ...) newer than the
 * version recorded in schema_migrations, in one transaction under an
 * advisory lock, so that nodes starting at once migrate once. *version
 * (may be NULL) receives the version after migration. MT_EUNSUPPORTED
 * when the database is newer than this binary knows. */
enum mt_status mtx_pg_migrate(struct mtx_pg *pg, const char *component,
                              const struct mtx_pg_migration *steps, size_t n,
                              int *version, struct mt_error *err);

/* mtx_pg_open with the default params for 'url', then mtx_pg_migrate of
 * 'component': the opening of every component that owns tables. */
enum mt_status mtx_pg_open_migrated(const char *url, const char *component,
                                    const struct mtx_pg_migration *steps,
                                    size_t n, struct mtx_pg **out,
                                    struct mt_error *err);

/* How many times this handle has reconnected (logs and tests). */
uint64_t mtx_pg_reconnects(const struct mtx_pg *pg);

/* The URL without its password, for messages (owned by the handle). */
const char *mtx_pg_where(const struct mtx_pg *pg);

/* Helpers for reading a result: text of row r, column c ("" for NULL),
 * 1 when that value is NULL, and the value as int64 (0 for NULL). */
const char *mtx_pg_text(const PGresult *res, int r, int c);
int mtx_pg_null(const PGresult *res, int r, int c);
int64_t mtx_pg_int(const PGresult *res, int r, int c);

/* Writes v as decimal text into buf (24 bytes) and returns buf, for
 * passing integers as parameters. */
const char *mtx_pg_i64(char buf[24], int64_t v);

#endif
