/* Private parts of the store shared by its modules. */
#ifndef MT_STORE_INT_H
#define MT_STORE_INT_H

#include <sqlite3.h>

#include "core/buf.h"
#include "medtrust/store.h"

struct mt_analyzer;
struct mtx_ckpt;

struct mt_store {
    sqlite3 *db;
    struct mt_store_params params; /* strings point into the fields below */
    char analyzer[32];
    int schema_version;
    int in_txn;
    char *dir;
    /* Names of sources returned by mt_store_stats, owned here. */
    char *stats_names;
    /* Statements cached for mt_store_put, prepared on first use. */
    sqlite3_stmt *st_upsert; /* insert unless (source, ext_id) is there */
    sqlite3_stmt *st_update; /* then: rewrite it when it differs */
    sqlite3_stmt *st_del_chunks;
    sqlite3_stmt *st_ins_chunk;
    sqlite3_stmt *st_chunk_get; /* for mt_store_chunk_get */
    struct mt_buf chunk_copy;   /* its last row's strings, copied */
    int number_fn;              /* mtx_number() registered (meta_filter.c) */
    struct mtx_ckpt *ckpt;      /* background checkpoints (ckpt.c), or NULL */
};

/* Checkpoints the background thread has run so far (0 when none is
 * running); for tests. */
uint64_t mtx_store_checkpoint_runs(struct mt_store *s);

/* Finalizes the cached statements (safe when none were prepared). */
void mtx_store_finalize_cached(struct mt_store *s);

/* Installs the mt_malloc allocator into SQLite once; returns SQLITE_OK. */
int mtx_store_sqlite_init(void);

/* Executes SQL with no result rows. */
enum mt_status mtx_store_exec(struct mt_store *s, const char *sql,
                              struct mt_error *err);

/* Turns the last SQLite error into an mt_status recorded in err. */
enum mt_status mtx_store_dberr(struct mt_store *s, int rc, const char *what,
                               struct mt_error *err);

/* Prepares 'sql'; on failure records the error. */
enum mt_status mtx_store_prepare(struct mt_store *s, const char *sql,
                                 sqlite3_stmt **st, struct mt_error *err);

#endif
