/* Sources, documents and chunks: upsert with re-chunking, and counts. */
#include <string.h>

#include "medtrust/core.h"
#include "store/store_int.h"
#include "text/chunk.h"

enum mt_status mt_store_source(struct mt_store *s, const char *name,
                               int64_t *id, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(
        s,
        "INSERT INTO sources(name) VALUES(?1) ON CONFLICT(name) DO UPDATE "
        "SET name=excluded.name RETURNING id",
        &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    else
        rc = mtx_store_dberr(s, step, "adding source", err);
    sqlite3_finalize(st);
    return rc;
}

void mtx_store_finalize_cached(struct mt_store *s)
{
    sqlite3_finalize(s->st_upsert);
    sqlite3_finalize(s->st_update);
    sqlite3_finalize(s->st_del_chunks);
    sqlite3_finalize(s->st_ins_chunk);
    sqlite3_finalize(s->st_chunk_get);
    s->st_chunk_get = NULL;
    s->st_upsert = NULL;
    s->st_update = NULL;
    s->st_del_chunks = NULL;
    s->st_ins_chunk = NULL;
}

/* A document is written by a plain insert that does nothing when its
 * (source, ext_id) is there, and only then by an update that changes the
 * row when it differs. One "INSERT ... ON CONFLICT DO UPDATE ... RETURNING
 * id" did both, but a RETURNING clause is run as a trigger, so SQLite
 * gave every such statement a statement journal: each page it touched was
 * first copied there (16 KiB pages), about a sixth of a PubMed import's
 * writer. The rows written are the same. */
static enum mt_status prepare_cached(struct mt_store *s, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (!s->st_upsert)
        st = mtx_store_prepare(
            s,
            "INSERT INTO documents(source_id, ext_id, title, text, metadata)"
            " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(source_id, ext_id) DO "
            "NOTHING",
            &s->st_upsert, err);
    if (st == MT_OK && !s->st_update)
        st = mtx_store_prepare(
            s,
            "UPDATE documents SET title=?3, text=?4, metadata=?5,"
            " updated_at=strftime('%s','now') WHERE source_id=?1 AND"
            " ext_id=?2 AND (title IS NOT ?3 OR text IS NOT ?4 OR"
            " metadata IS NOT ?5) RETURNING id",
            &s->st_update, err);
    if (st == MT_OK && !s->st_del_chunks)
        st = mtx_store_prepare(s, "DELETE FROM chunks WHERE doc_id=?1",
                               &s->st_del_chunks, err);
    if (st == MT_OK && !s->st_ins_chunk)
        st = mtx_store_prepare(s,
                               "INSERT INTO chunks(doc_id, ordinal, start, end)"
                               " VALUES(?1, ?2, ?3, ?4)",
                               &s->st_ins_chunk, err);
    return st;
}

/* Runs a cached statement to completion and resets it. */
static enum mt_status step_done(struct mt_store *s, sqlite3_stmt *st,
                                const char *what, struct mt_error *err)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return mtx_store_dberr(s, rc, what, err);
    return MT_OK;
}

static void bind_doc(sqlite3_stmt *st, int64_t source_id,
                     const struct mt_doc *d)
{
    sqlite3_bind_int64(st, 1, source_id);
    sqlite3_bind_text(st, 2, d->ext_id, -1, SQLITE_STATIC);
    if (d->title)
        sqlite3_bind_text(st, 3, d->title, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->text, (int)d->text_len, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, d->metadata ? d->metadata : "{}", -1,
                      SQLITE_STATIC);
}

/* Runs st (bound by bind_doc), keeping the id of the row it returns (0:
 * none), and resets it. */
static int step_doc(sqlite3_stmt *st, int64_t *doc_id)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_ROW)
        *doc_id = sqlite3_column_int64(st, 0);
    if (rc == SQLITE_ROW)
        rc = sqlite3_step(st); /* runs the update to its end */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* Writes the document row; *doc_id is 0 when an identical row was
 * already there. */
static enum mt_status upsert_doc(struct mt_store *s, int64_t source_id,
                                 const struct mt_doc *d, int64_t *doc_id,
                                 struct mt_error *err)
{
    int rc;

    *doc_id = 0;
    bind_doc(s->st_upsert, source_id, d);
    rc = step_doc(s->st_upsert, doc_id);
    if (rc == SQLITE_DONE && sqlite3_changes(s->db) == 1) {
        *doc_id = sqlite3_last_insert_rowid(s->db); /* a new row */
        return MT_OK;
    }
    if (rc == SQLITE_DONE) {
        bind_doc(s->st_update, source_id, d);
        rc = step_doc(s->st_update, doc_id);
    }
    if (rc != SQLITE_DONE)
        return mtx_store_dberr(s, rc, "writing document", err);
    return MT_OK;
}

/* A chunk row is its document's byte range; the text stays in the
 * document row alone (schema v8). */
static enum mt_status insert_chunks(struct mt_store *s, int64_t doc_id,
                                    const struct mt_chunk *ch, size_t n,
                                    struct mt_error *err)
{
    sqlite3_stmt *st = s->st_ins_chunk;
    enum mt_status rc = MT_OK;
    size_t i;

    sqlite3_bind_int64(s->st_del_chunks, 1, doc_id);
    rc = step_done(s, s->st_del_chunks, "replacing chunks", err);
    for (i = 0; i < n && rc == MT_OK; i++) {
        sqlite3_bind_int64(st, 1, doc_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)ch[i].start);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)ch[i].end);
        rc = step_done(s, st, "writing chunk", err);
    }
    return rc;
}

static enum mt_status check_doc(struct mt_store *s, const struct mt_doc *d,
                                struct mt_error *err)
{
    if (!d->ext_id || !d->ext_id[0])
        return mt_fail(err, MT_EINVAL, "%s: document without an id", s->dir);
    if (!d->text)
        return mt_fail(err, MT_EINVAL, "%s: document %s has no text", s->dir,
                       d->ext_id);
    if (d->text_len > (size_t)1 << 30)
        return mt_fail(err, MT_ELIMIT, "%s: document %s is over 1 GiB", s->dir,
                       d->ext_id);
    return MT_OK;
}

static enum mt_status put_doc(struct mt_store *s, int64_t source_id,
                              const struct mt_doc *doc, int whole,
                              struct mt_put_result *res, struct mt_error *err)
{
    struct mt_chunk_params cp;
    struct mt_chunk *ch = NULL;
    size_t n = 0;
    int64_t doc_id = 0;
    enum mt_status st = check_doc(s, doc, err);

    if (st == MT_OK)
        st = prepare_cached(s, err);
    if (st == MT_OK)
        st = upsert_doc(s, source_id, doc, &doc_id, err);
    if (st != MT_OK || doc_id == 0) {
        res->unchanged = st == MT_OK;
        return st;
    }
    if (whole) {
        struct mt_chunk one = {0, doc->text_len};

        res->chunks = doc->text_len > 0;
        return insert_chunks(s, doc_id, &one, res->chunks, err);
    }
    cp.chunk_size = s->params.chunk_size;
    cp.chunk_overlap = s->params.chunk_overlap;
    st = mtx_chunk_text(doc->text, doc->text_len, &cp, &ch, &n, err);
    if (st == MT_OK)
        st = insert_chunks(s, doc_id, ch, n, err);
    mt_free(ch);
    res->chunks = n;
    return st;
}

static enum mt_status put(struct mt_store *s, int64_t source_id,
                          const struct mt_doc *doc, int whole,
                          struct mt_put_result *res, struct mt_error *err)
{
    struct mt_put_result local;
    enum mt_status st;

    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (s->in_txn)
        return put_doc(s, source_id, doc, whole, res, err);
    /* A document and its chunks change together or not at all. */
    st = mt_store_begin(s, err);
    if (st == MT_OK)
        st = put_doc(s, source_id, doc, whole, res, err);
    if (st == MT_OK)
        return mt_store_commit(s, err);
    mt_store_rollback(s);
    return st;
}

enum mt_status mt_store_delete(struct mt_store *s, int64_t source_id,
                               const char *ext_id, int *deleted,
                               struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(
        s, "DELETE FROM documents WHERE source_id=?1 AND ext_id=?2", &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    /* Chunks go with their document (ON DELETE CASCADE). */
    sqlite3_bind_int64(st, 1, source_id);
    sqlite3_bind_text(st, 2, ext_id, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step != SQLITE_DONE)
        rc = mtx_store_dberr(s, step, "deleting document", err);
    else if (deleted)
        *deleted = sqlite3_changes(s->db) > 0;
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_store_put(struct mt_store *s, int64_t source_id,
                            const struct mt_doc *doc, struct mt_put_result *res,
                            struct mt_error *err)
{
    return put(s, source_id, doc, 0, res, err);
}

enum mt_status mt_store_put_chunk(struct mt_store *s, int64_t source_id,
                                  const struct mt_doc *doc,
                                  struct mt_put_result *res,
                                  struct mt_error *err)
{
    return put(s, source_id, doc, 1, res, err);
}

/* ==== Counts ==== */

static const char stats_sql[] =
    "SELECT s.name, COUNT(d.id), COALESCE(SUM(length(CAST(d.text AS BLOB))),"
    " 0), (SELECT COUNT(*) FROM chunks c JOIN documents d2 ON c.doc_id ="
    " d2.id WHERE d2.source_id = s.id) FROM sources s LEFT JOIN documents d"
    " ON d.source_id = s.id GROUP BY s.id ORDER BY s.name";

static enum mt_status keep_name(struct mt_store *s, const char *name,
                                struct mt_error *err)
{
    char *copy = mt_strdup(name);

    if (!copy)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", s->dir);
    mt_free(s->stats_names);
    s->stats_names = copy;
    return MT_OK;
}

static enum mt_status stats_row(struct mt_store *s, sqlite3_stmt *st,
                                struct mt_store_counts *tot,
                                mt_store_counts_fn fn, void *user,
                                struct mt_error *err)
{
    struct mt_store_counts c;
    enum mt_status rc =
        keep_name(s, (const char *)sqlite3_column_text(st, 0), err);

    if (rc != MT_OK)
        return rc;
    c.source = s->stats_names;
    c.documents = (uint64_t)sqlite3_column_int64(st, 1);
    c.text_bytes = (uint64_t)sqlite3_column_int64(st, 2);
    c.chunks = (uint64_t)sqlite3_column_int64(st, 3);
    tot->documents += c.documents;
    tot->chunks += c.chunks;
    tot->text_bytes += c.text_bytes;
    return fn(&c, user);
}

enum mt_status mt_store_stats(struct mt_store *s, mt_store_counts_fn fn,
                              void *user, struct mt_error *err)
{
    struct mt_store_counts tot = {NULL, 0, 0, 0};
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(s, stats_sql, &st, err);
    int step = SQLITE_DONE;

    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = stats_row(s, st, &tot, fn, user, err);
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mtx_store_dberr(s, step, "counting documents", err);
    sqlite3_finalize(st);
    if (rc == MT_OK)
        rc = fn(&tot, user);
    return rc;
}
