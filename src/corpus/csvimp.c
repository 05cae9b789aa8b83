/* Any CSV: --id-col, --text-col and an optional --title-col name the
 * columns (by header); every other column becomes a metadata string. */
#include <string.h>

#include "core/csv.h"
#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"

struct cols {
    long id;
    long text;
    long title;
    size_t n;     /* header fields */
    char **names; /* header names, for metadata keys */
};

static long need_col(struct mt_csv *r, const char *what, const char *name,
                     const char *path, struct mt_error *err)
{
    long i;

    if (!name) {
        mt_fail(err, MT_EINVAL, "csv import needs --%s", what);
        return -1;
    }
    i = mtx_csv_find(r, name);
    if (i < 0)
        mt_fail(err, MT_EPARSE, "%s:1: no column named '%s' in the header",
                path, name);
    return i;
}

static enum mt_status read_header(struct mt_import_ctx *c, struct mt_csv *r,
                                  const char *path, struct cols *k,
                                  struct mt_error *err)
{
    int got = 0;
    size_t i;
    enum mt_status st = mtx_csv_next(r, &got, err);

    if (st != MT_OK)
        return st;
    if (!got)
        return mt_fail(err, MT_EPARSE, "%s: empty file (no header)", path);
    k->id = need_col(r, "id-col", c->p->id_col, path, err);
    k->text =
        k->id < 0 ? -1 : need_col(r, "text-col", c->p->text_col, path, err);
    k->title = -1;
    if (k->text >= 0 && c->p->title_col)
        k->title = need_col(r, "title-col", c->p->title_col, path, err);
    if (k->id < 0 || k->text < 0 || (c->p->title_col && k->title < 0))
        return err ? err->status : MT_EINVAL;
    k->n = mtx_csv_nfields(r);
    k->names = mt_calloc(k->n ? k->n : 1, sizeof *k->names);
    if (!k->names)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < k->n; i++) {
        struct mt_str f = mtx_csv_field(r, i);
        size_t bad;

        if (mtx_utf8_validate(f.p, f.n, &bad) != MT_OK)
            return mt_fail(err, MT_EPARSE,
                           "%s:1: header field %zu is not UTF-8 (byte %zu): "
                           "convert the file to UTF-8",
                           path, i + 1, bad + 1);
        k->names[i] = mt_strndup(f.p, f.n);
        if (!k->names[i])
            return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    return MT_OK;
}

static enum mt_status meta_fields(const struct cols *k, struct mt_csv *r,
                                  json_t *meta)
{
    size_t i;

    for (i = 0; i < k->n && i < mtx_csv_nfields(r); i++) {
        struct mt_str f = mtx_csv_field(r, i);

        if ((long)i == k->id || (long)i == k->text || (long)i == k->title ||
            !k->names[i][0])
            continue;
        if (json_object_set_new(meta, k->names[i], json_stringn(f.p, f.n)))
            return MT_ENOMEM;
    }
    return MT_OK;
}

/* A record's fields become JSON strings, which must be UTF-8: a field
 * that is not is the file's fault, named by line and column (jansson
 * would refuse it as if memory had run out). */
static enum mt_status check_utf8(const struct cols *k, struct mt_csv *r,
                                 const char *path, struct mt_error *err)
{
    size_t i;
    size_t bad;

    for (i = 0; i < k->n && i < mtx_csv_nfields(r); i++) {
        struct mt_str f = mtx_csv_field(r, i);

        if (mtx_utf8_validate(f.p, f.n, &bad) != MT_OK)
            return mt_fail(err, MT_EPARSE,
                           "%s:%zu: column '%.100s' is not UTF-8 (byte %zu "
                           "of the field): convert the file to UTF-8",
                           path, mtx_csv_line(r), k->names[i], bad + 1);
    }
    return MT_OK;
}

static enum mt_status csv_row(struct mt_import_ctx *c, struct mt_csv *r,
                              const struct cols *k, const char *path,
                              struct mt_error *err)
{
    struct mt_str id = mtx_csv_field(r, (size_t)k->id);
    struct mt_str text = mtx_csv_field(r, (size_t)k->text);
    struct mt_str title = mtx_csv_field(r, (size_t)k->title);
    char *ids = mt_strndup(id.p, id.n);
    char *titles = k->title >= 0 ? mt_strndup(title.p, title.n) : NULL;
    json_t *meta = json_object();
    struct mt_sink_doc d = {ids, titles, text.p, text.n, meta, NULL};
    enum mt_status st = MT_OK;

    if (!ids || !meta || (k->title >= 0 && !titles) ||
        meta_fields(k, r, meta) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    else if (id.n == 0)
        st = mt_fail(err, MT_EPARSE, "%s:%zu: empty id in column '%s'", path,
                     mtx_csv_line(r), c->p->id_col);
    mtx_sink_record(c->sink, st == MT_OK && text.n == 0);
    if (st == MT_OK && text.n > 0 && mtx_sink_put(c->sink, &d, err) != MT_OK)
        st = mt_error_prefix(err, "%s:%zu", path, mtx_csv_line(r));
    json_decref(meta);
    mt_free(ids);
    mt_free(titles);
    return st;
}

enum mt_status mtx_import_csv(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err)
{
    struct mt_csv *r = NULL;
    struct cols k = {-1, -1, -1, 0, NULL};
    int got = 1;
    size_t i;
    enum mt_status st = mtx_csv_open(path, NULL, &r, err);

    if (st == MT_OK)
        st = read_header(c, r, path, &k, err);
    while (st == MT_OK && (st = mtx_csv_next(r, &got, err)) == MT_OK && got) {
        st = check_utf8(&k, r, path, err);
        if (st == MT_OK)
            st = csv_row(c, r, &k, path, err);
        if (st != MT_OK) /* a row without an id or not UTF-8: skipped */
            st = mtx_sink_skip(c->sink, err);
    }
    for (i = 0; k.names && i < k.n; i++)
        mt_free(k.names[i]);
    mt_free(k.names);
    mtx_csv_close(r);
    return st;
}
