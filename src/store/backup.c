/* A consistent copy of a store's corpus for other nodes: SQLite's online
 * backup API copies every page under one read transaction (writers go on
 * meanwhile in WAL mode), then the copy drops what is not corpus. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "store/store_int.h"

/* Tables of the embedded state (accounts, sessions, runs...; migrations
 * v2 to v7 in store.c): a published corpus carries none of their rows. */
static const char *const state_tables[] = {
    "run_events", "run_reports", "runs",  "sessions",       "tokens",
    "audit",      "settings",    "users", "login_throttle",
};

static enum mt_status copy_err(const char *path, sqlite3 *db, const char *what,
                               struct mt_error *err)
{
    return mt_fail(err, MT_EIO, "%s: %s: %s", path, what,
                   db ? sqlite3_errmsg(db) : "cannot open");
}

/* Copies every page of s into dst in one step, so the copy is the
 * database as of one read transaction. */
static enum mt_status copy_pages(struct mt_store *s, sqlite3 *dst,
                                 const char *path, struct mt_error *err)
{
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->db, "main");
    int rc;

    if (!b)
        return copy_err(path, dst, "starting the backup", err);
    do {
        rc = sqlite3_backup_step(b, -1);
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            sqlite3_sleep(20);
    } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE)
        return mtx_store_dberr(s, rc, "backing up store.db", err);
    return MT_OK;
}

/* Empties the state tables of the copy, overwriting the freed pages
 * (secure_delete), and leaves it in rollback-journal mode: a reader of
 * the copy then needs no -wal/-shm files beside it. */
static enum mt_status strip_state(sqlite3 *dst, const char *path,
                                  struct mt_error *err)
{
    char sql[128];
    size_t i;

    if (sqlite3_exec(dst,
                     "PRAGMA journal_mode=DELETE; PRAGMA secure_delete=ON;"
                     "PRAGMA foreign_keys=OFF; BEGIN IMMEDIATE",
                     NULL, NULL, NULL) != SQLITE_OK)
        return copy_err(path, dst, "preparing the copy", err);
    for (i = 0; i < sizeof state_tables / sizeof *state_tables; i++) {
        sqlite3_stmt *q = NULL;
        int exists;

        snprintf(sql, sizeof sql,
                 "SELECT 1 FROM sqlite_master WHERE type='table' AND "
                 "name='%s'",
                 state_tables[i]);
        if (sqlite3_prepare_v2(dst, sql, -1, &q, NULL) != SQLITE_OK)
            return copy_err(path, dst, "reading the schema", err);
        exists = sqlite3_step(q) == SQLITE_ROW;
        sqlite3_finalize(q);
        snprintf(sql, sizeof sql, "DELETE FROM %s", state_tables[i]);
        if (exists && sqlite3_exec(dst, sql, NULL, NULL, NULL) != SQLITE_OK)
            return copy_err(path, dst, "emptying the state tables", err);
    }
    if (sqlite3_exec(dst, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return copy_err(path, dst, "committing the copy", err);
    return MT_OK;
}

enum mt_status mt_store_backup(struct mt_store *s, const char *path,
                               struct mt_error *err)
{
    sqlite3 *dst = NULL;
    enum mt_status st;
    int rc;

    if (access(path, F_OK) == 0)
        return mt_fail(err, MT_EINVAL, "%s: already exists", path);
    rc = sqlite3_open_v2(
        path, &dst,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        st = copy_err(path, dst, "creating the copy", err);
    else
        st = copy_pages(s, dst, path, err);
    if (st == MT_OK)
        st = strip_state(dst, path, err);
    if (dst && sqlite3_close(dst) != SQLITE_OK && st == MT_OK)
        st = mt_fail(err, MT_EIO, "%s: closing the copy failed", path);
    if (st != MT_OK)
        unlink(path);
    return st;
}
