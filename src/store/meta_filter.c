/* Chunks whose document's metadata meets conditions (VerifAI's PubMed
 * filters: author, journal, publication type, year), found in SQL so the
 * search index can restrict its first stage to them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "store/store_int.h"

/* A key goes into a JSON path: letters, digits and '_' only. */
static int key_ok(const char *k)
{
    size_t i;

    if (!k || !*k || strlen(k) > 64)
        return 0;
    for (i = 0; k[i]; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
            return 0;
    return 1;
}

/* mtx_number(x): x as a number when it is one or a string that is one
 * (strtod over the whole string, as the index's year filter has always
 * read it), else NULL. */
static void number_fn(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const char *s;
    char *end = NULL;
    double x;

    (void)argc;
    switch (sqlite3_value_type(argv[0])) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
        sqlite3_result_double(cx, sqlite3_value_double(argv[0]));
        return;
    case SQLITE_TEXT:
        s = (const char *)sqlite3_value_text(argv[0]);
        x = s ? strtod(s, &end) : 0.0;
        if (s && end != s && *end == '\0' && !isnan(x))
            sqlite3_result_double(cx, x);
        else
            sqlite3_result_null(cx);
        return;
    default:
        sqlite3_result_null(cx);
    }
}

/* A text condition holds when the field is a string containing the text,
 * or an array with a string element containing it (authors,
 * publication_types); ASCII letters compare case-insensitively (SQLite's
 * lower()). A range condition holds when the field is a number, or a
 * numeric string, in [min, max]. */
static enum mt_status add_cond(struct mt_buf *q, const struct mt_meta_cond *c,
                               int arg)
{
    if (c->text)
        return mtx_buf_printf(q,
                              " AND EXISTS (SELECT 1 FROM json_each(d.metadata,"
                              " '$.\"%s\"') j WHERE j.type = 'text' AND"
                              " instr(lower(j.value), lower(?%d)) > 0)",
                              c->key, arg);
    return mtx_buf_printf(
        q,
        " AND mtx_number(json_extract(d.metadata, '$.\"%s\"'))"
        " BETWEEN ?%d AND ?%d",
        c->key, arg, arg + 1);
}

static enum mt_status build_sql(const struct mt_meta_cond *c, size_t n,
                                struct mt_buf *q, struct mt_error *err)
{
    size_t i;
    int arg = 1;
    enum mt_status st = mtx_buf_printf(
        q, "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id"
           " WHERE json_valid(d.metadata)");

    for (i = 0; st == MT_OK && i < n; i++) {
        if (!key_ok(c[i].key))
            return mt_fail(err, MT_EINVAL,
                           "metadata filter key '%s' must be 1 to 64 "
                           "letters, digits or '_'",
                           c[i].key ? c[i].key : "");
        st = add_cond(q, &c[i], arg);
        arg += c[i].text ? 1 : 2;
    }
    if (st == MT_OK)
        st = mtx_buf_printf(q, " ORDER BY c.id");
    return st == MT_OK ? MT_OK : mt_fail(err, st, "filter: out of memory");
}

static void bind_conds(sqlite3_stmt *st, const struct mt_meta_cond *c, size_t n)
{
    size_t i;
    int arg = 1;

    for (i = 0; i < n; i++) {
        if (c[i].text) {
            sqlite3_bind_text(st, arg++, c[i].text, -1, SQLITE_STATIC);
            continue;
        }
        sqlite3_bind_double(st, arg++, c[i].min);
        sqlite3_bind_double(st, arg++, c[i].max);
    }
}

/* Once per connection: SQLite refuses a new function while one of the
 * store's cached statements is active. */
static enum mt_status register_number(struct mt_store *s, struct mt_error *err)
{
    int rc;

    if (s->number_fn)
        return MT_OK;
    rc = sqlite3_create_function(s->db, "mtx_number", 1,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                 number_fn, NULL, NULL);
    if (rc != SQLITE_OK)
        return mtx_store_dberr(s, rc, "adding mtx_number", err);
    s->number_fn = 1;
    return MT_OK;
}

enum mt_status mt_store_each_matching_chunk(struct mt_store *s,
                                            const struct mt_meta_cond *c,
                                            size_t n, mt_store_id_fn fn,
                                            void *user, struct mt_error *err)
{
    struct mt_buf q = MT_BUF_INIT((size_t)64 << 10);
    sqlite3_stmt *st = NULL;
    enum mt_status rc = build_sql(c, n, &q, err);
    int step = SQLITE_DONE;

    if (rc == MT_OK)
        rc = register_number(s, err);
    if (rc == MT_OK)
        rc = mtx_store_prepare(s, q.data, &st, err);
    mtx_buf_free(&q);
    if (rc != MT_OK)
        return rc;
    bind_conds(st, c, n);
    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(sqlite3_column_int64(st, 0), user);
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mtx_store_dberr(s, step, "filtering by metadata", err);
    sqlite3_finalize(st);
    return rc;
}
