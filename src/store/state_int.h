/* Private parts of the state layer (state.h): the handle and the one
 * statement runner both engines share, so accounts.c holds each
 * statement once. Statements use '?' placeholders and SQL that SQLite
 * (3.35 and later) and PostgreSQL both accept (RETURNING, ON CONFLICT). */
#ifndef MTX_STATE_INT_H
#define MTX_STATE_INT_H

#include <sqlite3.h>

#include "medtrust/state.h"
#include "store/pg.h"

struct mt_state {
    struct mt_store *store; /* SQLite engine: the store's database */
    int own_store;          /* close the store with the handle */
    struct mtx_pg *pg;      /* PostgreSQL engine */
};

/* A result row being read (one engine's fields are set). */
struct mtx_row {
    sqlite3_stmt *st;
    const PGresult *res;
    int r;
};

/* Column c of the row as text (NULL for SQL NULL) or as an integer (0 for
 * NULL). */
const char *mtx_row_text(const struct mtx_row *row, int c);
int64_t mtx_row_int(const struct mtx_row *row, int c);

typedef enum mt_status (*mtx_row_fn)(const struct mtx_row *row, void *user);

/* What a statement returns: fn (may be NULL) is called for each row;
 * rows and changes are filled. */
struct mtx_query {
    mtx_row_fn fn;
    void *user;
    int64_t rows;
    int64_t changes;
};

/* Runs 'sql' with arguments given by type letters: 's' text (NULL binds
 * NULL), 'I' int64_t, 'h' a string bound as the SHA-256 of its text (a
 * BLOB, or bytea). At most 8 arguments. q may be NULL. Stops at fn's
 * first failure and returns it. */
enum mt_status mtx_state_exec(struct mt_state *s, struct mtx_query *q,
                              struct mt_error *err, const char *sql,
                              const char *types, ...);

/* Inserts a queued run under idempotency key 'key' (mt_run_create draws
 * one): an insert with a key already in runs changes nothing and gives
 * that row's id in *id, as a re-sent statement must. */
enum mt_status mtx_run_insert(struct mt_state *s, int64_t user_id,
                              const char *username, const char *kind,
                              const char *input_hash, const char *key,
                              int64_t *id, struct mt_error *err);

#endif
