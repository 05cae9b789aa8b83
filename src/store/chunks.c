/* Chunk access for the search index: iteration in id order, the id span
 * that detects deletions, and fetching a hit's chunk with its document. */
#include <stdint.h>
#include <string.h>

#include "medtrust/core.h"
#include "store/store_int.h"

const char *mt_store_dir(const struct mt_store *s)
{
    return s->dir;
}

/* A chunk is a byte range of its document's text (schema v8): the row
 * points into the document's text, so nothing is copied per chunk. */
static const char each_sql[] =
    "SELECT c.id, d.source_id, d.title, d.text, c.start, c.end FROM chunks c"
    " JOIN documents d ON d.id = c.doc_id WHERE c.id > ?1 ORDER BY c.id";

static enum mt_status fill_row(struct mt_store *s, sqlite3_stmt *st,
                               struct mt_chunk_row *r, struct mt_error *err)
{
    const char *text = (const char *)sqlite3_column_text(st, 3);
    size_t len = (size_t)sqlite3_column_bytes(st, 3);
    int64_t start = sqlite3_column_int64(st, 4);
    int64_t end = sqlite3_column_int64(st, 5);

    r->chunk_id = sqlite3_column_int64(st, 0);
    r->source_id = sqlite3_column_int64(st, 1);
    r->title = (const char *)sqlite3_column_text(st, 2);
    if (!text)
        text = "";
    if (start < 0 || end < start || (uint64_t)end > len)
        return mt_fail(err, MT_EDB,
                       "%s: chunk %lld: range [%lld, %lld) is outside its "
                       "document's %zu bytes",
                       s->dir, (long long)r->chunk_id, (long long)start,
                       (long long)end, len);
    r->text = text + start;
    r->text_len = (size_t)(end - start);
    return MT_OK;
}

enum mt_status mt_store_each_chunk(struct mt_store *s, int64_t after_id,
                                   mt_store_chunk_fn fn, void *user,
                                   struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    struct mt_chunk_row row;
    enum mt_status rc = mtx_store_prepare(s, each_sql, &st, err);
    int step = SQLITE_DONE;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_int64(st, 1, after_id);
    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        rc = fill_row(s, st, &row, err);
        if (rc == MT_OK)
            rc = fn(&row, user);
    }
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mtx_store_dberr(s, step, "reading chunks", err);
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_store_chunk_span(struct mt_store *s, int64_t upto,
                                   int64_t *max_id, uint64_t *count_upto,
                                   struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(
        s,
        "SELECT COALESCE(MAX(id), 0), (SELECT COUNT(*) FROM chunks WHERE"
        " id <= ?1) FROM chunks",
        &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_int64(st, 1, upto);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *max_id = sqlite3_column_int64(st, 0);
        *count_upto = (uint64_t)sqlite3_column_int64(st, 1);
    } else {
        rc = mtx_store_dberr(s, step, "counting chunks", err);
    }
    sqlite3_finalize(st);
    return rc;
}

static const char get_sql[] =
    "SELECT d.ext_id, d.title, CAST(substr(CAST(d.text AS BLOB), c.start + 1,"
    " c.end - c.start) AS TEXT), s.name, d.metadata, c.ordinal"
    " FROM chunks c JOIN documents d ON d.id = c.doc_id"
    " JOIN sources s ON s.id = d.source_id WHERE c.id = ?1";

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Copies the row's five strings (NUL included; NULL stays NULL) into
 * s->chunk_copy and points out's fields at them. */
static enum mt_status copy_row(struct mt_store *s, sqlite3_stmt *st,
                               struct mt_chunk_info *out)
{
    const char **dst[5] = {&out->doc_id, &out->title, &out->text, &out->source,
                           &out->metadata};
    size_t off[5];
    enum mt_status rc = MT_OK;
    int i;

    mtx_buf_reset(&s->chunk_copy);
    for (i = 0; rc == MT_OK && i < 5; i++) {
        const char *v = col_text(st, i);
        off[i] = v ? s->chunk_copy.len : SIZE_MAX;
        if (v)
            rc = mtx_buf_append(&s->chunk_copy, v,
                                (size_t)sqlite3_column_bytes(st, i) + 1);
    }
    for (i = 0; rc == MT_OK && i < 5; i++)
        *dst[i] = off[i] == SIZE_MAX ? NULL : s->chunk_copy.data + off[i];
    return rc;
}

enum mt_status mt_store_chunk_get(struct mt_store *s, int64_t chunk_id,
                                  struct mt_chunk_info *out,
                                  struct mt_error *err)
{
    sqlite3_stmt *st;
    enum mt_status rc = MT_OK;
    int step;

    if (!s->st_chunk_get)
        rc = mtx_store_prepare(s, get_sql, &s->st_chunk_get, err);
    if (rc != MT_OK)
        return rc;
    st = s->st_chunk_get;
    sqlite3_bind_int64(st, 1, chunk_id);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        rc = copy_row(s, st, out);
        out->chunk_id = chunk_id;
        out->ordinal = (uint32_t)sqlite3_column_int(st, 5);
    }
    /* Reset now, not at the next call: a statement left on its row keeps
     * its read transaction open, so a long-lived reader (an open index,
     * the server's pool) would search an old snapshot of the store for
     * ever and hold the WAL from being checkpointed back to its start. */
    sqlite3_reset(st);
    if (step == SQLITE_DONE)
        return mt_fail(err, MT_ENOTFOUND, "%s: chunk %lld no longer exists",
                       s->dir, (long long)chunk_id);
    if (step != SQLITE_ROW)
        return mtx_store_dberr(s, step, "reading a chunk", err);
    if (rc != MT_OK)
        return mt_fail(err, rc, "%s: chunk %lld: out of memory", s->dir,
                       (long long)chunk_id);
    return MT_OK;
}

enum mt_status mt_store_source_find(struct mt_store *s, const char *name,
                                    int64_t *id, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = mtx_store_prepare(
        s, "SELECT id FROM sources WHERE name = ?1", &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    else if (step == SQLITE_DONE)
        rc = mt_fail(err, MT_ENOTFOUND, "%s: no source named '%s'", s->dir,
                     name);
    else
        rc = mtx_store_dberr(s, step, "looking up a source", err);
    sqlite3_finalize(st);
    return rc;
}

/* ==== Documents a citation names ==== */

static const char *find_doc_sql(const char *field)
{
#define FIND_HEAD                                                              \
    "SELECT c.id FROM documents d JOIN chunks c ON c.doc_id = d.id WHERE "
#define FIND_TAIL " ORDER BY d.id, c.ordinal LIMIT 1"
    /* through the (source_id, ext_id) index, one probe per source,
     * instead of a scan of the documents */
    if (strcmp(field, "id") == 0)
        return FIND_HEAD "d.source_id IN (SELECT id FROM sources) AND "
                         "d.ext_id = ?1" FIND_TAIL;
    if (strcmp(field, "doi") == 0)
        return FIND_HEAD "json_valid(d.metadata) AND "
                         "lower(json_extract(d.metadata, '$.doi')) = "
                         "lower(?1)" FIND_TAIL;
    if (strcmp(field, "url") == 0)
        return FIND_HEAD "json_valid(d.metadata) AND "
                         "json_extract(d.metadata, '$.url') = ?1" FIND_TAIL;
    return NULL;
#undef FIND_HEAD
#undef FIND_TAIL
}

enum mt_status mt_store_find_doc(struct mt_store *s, const char *field,
                                 const char *key, int64_t *chunk_id,
                                 struct mt_error *err)
{
    const char *sql = field ? find_doc_sql(field) : NULL;
    sqlite3_stmt *st = NULL;
    enum mt_status rc;
    int step;

    if (!sql || !key)
        return mt_fail(err, MT_EINVAL, "find a document: field %s unknown",
                       field ? field : "(none)");
    rc = mtx_store_prepare(s, sql, &st, err);
    if (rc != MT_OK)
        return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *chunk_id = sqlite3_column_int64(st, 0);
    else if (step == SQLITE_DONE)
        rc = mt_fail(err, MT_ENOTFOUND, "%s: no document with %s '%s'", s->dir,
                     field, key);
    else
        rc = mtx_store_dberr(s, step, "looking up a document", err);
    sqlite3_finalize(st);
    return rc;
}
