/* Parquet tables (Hugging Face datasets, pandas/pyarrow): --id-col,
 * --text-col, optional --title-col and --meta-col name flat columns; one
 * document a row, read one row group at a time (parquet.c), so memory is
 * bounded by a row group's columns, not by the file. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "corpus/corpus_int.h"
#include "corpus/parquet.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define META_MAX 64
#define COLS_MAX (4 + META_MAX)

struct pqi {
    struct mt_import_ctx *c;
    const char *path;
    struct mtx_pq *q;
    size_t ncols; /* id, text, title?, meta... */
    size_t leaf[COLS_MAX];
    const char *name[COLS_MAX];
    struct mtx_pq_col col[COLS_MAX];
    size_t title; /* index in col, 0: none */
    size_t src;   /* the --source-col's index in col, 0: none */
    size_t meta0; /* first meta column's index */
    uint64_t row; /* rows of the file before this group */
    struct mt_buf id;
    struct mt_buf titlebuf;
    struct mt_buf srcbuf;
    char cur_src[256]; /* the source last handed to the sink */
};

/* Adds column 'name' (option --opt) to those read; 'strings' asks for a
 * BYTE_ARRAY column, 'ids' also takes integers. */
static enum mt_status want(struct pqi *x, const char *opt, const char *name,
                           int strings, int ids, struct mt_error *err)
{
    size_t i = x->ncols;
    int type = 0;
    enum mt_status st;

    if (!name)
        return mt_fail(err, MT_EINVAL, "parquet import needs --%s", opt);
    st = mtx_pq_find(x->q, name, &x->leaf[i], &type, err);
    if (st != MT_OK)
        return st;
    if (strings && type != MTX_PQ_BYTE_ARRAY &&
        !(ids && (type == MTX_PQ_INT32 || type == MTX_PQ_INT64)))
        return mt_fail(
            err, MT_EPARSE, "%s: --%s column '%s' holds %s, not strings",
            x->path, opt, name,
            ids ? "neither strings nor integers" : "numbers or booleans");
    x->name[i] = name;
    x->ncols++;
    return MT_OK;
}

static enum mt_status columns(struct pqi *x, struct mt_error *err)
{
    const struct mt_import_params *p = x->c->p;
    enum mt_status st;
    size_t i;

    if (p->n_meta_cols > META_MAX)
        return mt_fail(err, MT_EINVAL, "at most %d --meta-col", META_MAX);
    st = want(x, "id-col", p->id_col, 1, 1, err);
    if (st == MT_OK)
        st = want(x, "text-col", p->text_col, 1, 0, err);
    if (st == MT_OK && p->title_col) {
        x->title = x->ncols;
        st = want(x, "title-col", p->title_col, 1, 0, err);
    }
    if (st == MT_OK && p->source_col) {
        x->src = x->ncols;
        st = want(x, "source-col", p->source_col, 1, 0, err);
    }
    x->meta0 = x->ncols;
    for (i = 0; st == MT_OK && i < p->n_meta_cols; i++)
        st = want(x, "meta-col", p->meta_cols[i], 0, 0, err);
    return st;
}

/* ==== Rows ==== */

static enum mt_status bad_row(struct pqi *x, size_t g, size_t r,
                              const char *col, const char *why,
                              struct mt_error *err)
{
    return mt_fail(err, MT_EPARSE,
                   "%s: row %" PRIu64 " (row group %zu): "
                   "column '%s' %s",
                   x->path, x->row + r + 1, g, col, why);
}

static struct mt_str str_of(const struct mtx_pq_col *c, size_t r)
{
    return (struct mt_str){c->heap.data + c->v[r].u.off, c->v[r].len};
}

/* A string value copied with its NUL into b; NULL when not UTF-8. */
static const char *cstr(struct mt_buf *b, struct mt_str s)
{
    size_t bad;

    if (mtx_utf8_validate(s.p, s.n, &bad) != MT_OK)
        return NULL;
    mtx_buf_reset(b);
    if (mtx_buf_append(b, s.p, s.n) != MT_OK || mtx_buf_reserve(b, 1) != MT_OK)
        return NULL;
    return b->data;
}

static json_t *meta_value(const struct mtx_pq_col *c, size_t r)
{
    const struct mtx_pq_val *v = &c->v[r];
    struct mt_str s;
    size_t bad;

    switch (c->type) {
    case MTX_PQ_BOOLEAN:
        return json_boolean(v->u.i);
    case MTX_PQ_INT32:
    case MTX_PQ_INT64:
        return json_integer((json_int_t)v->u.i);
    case MTX_PQ_FLOAT:
    case MTX_PQ_DOUBLE:
        return isfinite(v->u.d) ? json_real(v->u.d) : json_null();
    default:
        s = str_of(c, r);
        if (mtx_utf8_validate(s.p, s.n, &bad) != MT_OK)
            return NULL;
        return json_stringn(s.p, s.n);
    }
}

static enum mt_status row_meta(struct pqi *x, size_t g, size_t r, json_t *m,
                               struct mt_error *err)
{
    size_t i;

    for (i = x->meta0; i < x->ncols; i++) {
        json_t *v;

        if (x->col[i].v[r].null)
            continue;
        v = meta_value(&x->col[i], r);
        if (!v)
            return x->col[i].type == MTX_PQ_BYTE_ARRAY
                       ? bad_row(x, g, r, x->name[i], "is not UTF-8", err)
                       : mt_fail(err, MT_ENOMEM, "out of memory");
        if (json_object_set_new(m, x->name[i], v) != 0)
            return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    return MT_OK;
}

/* The row's --source-col value: into the store, a switch of source when
 * it changes; into JSONL, a "source" field of the line. */
static enum mt_status row_source(struct pqi *x, size_t g, size_t r,
                                 json_t **meta, struct mt_error *err)
{
    const struct mtx_pq_col *c = &x->col[x->src];
    const char *s = c->v[r].null ? "" : cstr(&x->srcbuf, str_of(c, r));

    if (!s)
        return bad_row(x, g, r, x->name[x->src], "is not UTF-8", err);
    if (strlen(s) >= sizeof x->cur_src)
        return bad_row(x, g, r, x->name[x->src],
                       "(the source) is longer than 255 bytes", err);
    if (x->c->p->jsonl_out) {
        if (!*s)
            return MT_OK;
        if ((!*meta && !(*meta = json_object())) ||
            json_object_set_new(*meta, "source", json_string(s)) != 0)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        return MT_OK;
    }
    if (strcmp(s, x->cur_src) == 0)
        return MT_OK;
    snprintf(x->cur_src, sizeof x->cur_src, "%s", s);
    return mtx_sink_source(x->c->sink, s, err);
}

/* Is the row's source one --exclude-source names? */
static int excluded(struct pqi *x, size_t r)
{
    const struct mt_import_params *p = x->c->p;
    const struct mtx_pq_col *c = &x->col[x->src];
    struct mt_str s;
    size_t i;

    if (!x->src || c->v[r].null)
        return 0;
    s = str_of(c, r);
    for (i = 0; i < p->n_exclude_sources; i++)
        if (mtx_str_eq_c(s, p->exclude_sources[i]))
            return 1;
    return 0;
}

/* The row's id: the string, or an integer in decimal. */
static const char *row_id(struct pqi *x, size_t r)
{
    const struct mtx_pq_col *c = &x->col[0];
    char num[24];

    if (c->type == MTX_PQ_BYTE_ARRAY)
        return cstr(&x->id, str_of(c, r));
    snprintf(num, sizeof num, "%" PRId64, c->v[r].u.i);
    return cstr(&x->id, mtx_str_from(num));
}

static enum mt_status row_put(struct pqi *x, size_t g, size_t r,
                              struct mt_error *err)
{
    struct mt_sink_doc d = {NULL, NULL, NULL, 0, NULL, NULL};
    struct mt_str text = str_of(&x->col[1], r);
    size_t bad;
    enum mt_status st;

    if (excluded(x, r) || x->col[1].v[r].null || text.n == 0) {
        mtx_sink_record(x->c->sink, 1); /* counted as skipped */
        return MT_OK;
    }
    if (x->col[0].v[r].null)
        return bad_row(x, g, r, x->name[0], "(the id) is null", err);
    d.id = row_id(x, r);
    if (!d.id || !d.id[0])
        return bad_row(x, g, r, x->name[0],
                       d.id ? "(the id) is empty" : "is not UTF-8", err);
    if (mtx_utf8_validate(text.p, text.n, &bad) != MT_OK)
        return bad_row(x, g, r, x->name[1], "is not UTF-8", err);
    if (x->title && !x->col[x->title].v[r].null) {
        d.title = cstr(&x->titlebuf, str_of(&x->col[x->title], r));
        if (!d.title)
            return bad_row(x, g, r, x->name[x->title], "is not UTF-8", err);
    }
    d.text = text.p;
    d.text_len = text.n;
    d.meta = x->meta0 < x->ncols ? json_object() : NULL;
    if (x->meta0 < x->ncols && !d.meta)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = d.meta ? row_meta(x, g, r, d.meta, err) : MT_OK;
    if (st == MT_OK && x->src)
        st = row_source(x, g, r, &d.meta, err);
    mtx_sink_record(x->c->sink, 0);
    if (st == MT_OK && mtx_sink_put(x->c->sink, &d, err) != MT_OK)
        st = mt_error_prefix(err, "%s: row %" PRIu64, x->path, x->row + r + 1);
    json_decref(d.meta);
    return st;
}

/* ==== Row groups ==== */

static enum mt_status group(struct pqi *x, size_t g, struct mt_error *err)
{
    size_t i, r, rows = (size_t)mtx_pq_group_rows(x->q, g);
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < x->ncols; i++)
        st = mtx_pq_read(x->q, g, x->leaf[i], &x->col[i], err);
    for (r = 0; st == MT_OK && r < rows; r++) {
        st = row_put(x, g, r, err);
        if (st != MT_OK && mtx_input_error(st)) /* a bad row: skipped */
            st = mtx_sink_skip(x->c->sink, err);
    }
    x->row += rows;
    mtx_sink_read(x->c->sink, mtx_pq_group_end(x->q, g));
    return st;
}

enum mt_status mtx_import_parquet(struct mt_import_ctx *c, const char *path,
                                  struct mt_error *err)
{
    struct pqi *x = mt_calloc(1, sizeof *x);
    enum mt_status st;
    size_t g, i;

    if (!x)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    x->c = c;
    x->path = path;
    x->id = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    x->titlebuf = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    x->srcbuf = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    st = mtx_pq_open(path, &x->q, err);
    if (st == MT_OK)
        st = columns(x, err);
    for (g = 0; st == MT_OK && g < mtx_pq_groups(x->q); g++)
        st = group(x, g, err);
    for (i = 0; i < COLS_MAX; i++)
        mtx_pq_col_free(&x->col[i]);
    mtx_buf_free(&x->id);
    mtx_buf_free(&x->titlebuf);
    mtx_buf_free(&x->srcbuf);
    mtx_pq_close(x->q);
    mt_free(x);
    return st;
}
