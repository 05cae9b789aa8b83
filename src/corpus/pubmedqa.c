/* PubMedQA JSON (ori_pqal.json and the unlabelled/artificial sets, all one
 * object PMID -> record): read one record at a time by a scanner that only
 * finds each value's extent, so memory stays bounded by the largest
 * record, not the file (the artificial set is about 1 GB). Each record is
 * one document: its contexts, a line each as "LABEL: context". */
#include <string.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define RECORD_MAX ((size_t)1 << 26)
#define BLOCK (64 * 1024)

struct scan {
    struct mtx_gz *gz; /* gzip or plain, as the XML importers read (gz.c) */
    const char *path;
    char buf[BLOCK];
    size_t len;
    size_t pos;
    size_t line;
    struct mt_error rerr; /* a failed read: the file ends here */
};

static int next_ch(struct scan *s)
{
    int c;

    if (s->pos == s->len) {
        s->pos = 0;
        s->len = 0;
        if (s->rerr.status != MT_OK ||
            mtx_gz_read(s->gz, s->buf, BLOCK, &s->len, &s->rerr) != MT_OK ||
            s->len == 0)
            return -1;
    }
    c = (unsigned char)s->buf[s->pos++];
    s->line += c == '\n';
    return c;
}

static int skip_ws(struct scan *s)
{
    int c;

    do
        c = next_ch(s);
    while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    return c;
}

static enum mt_status bad(struct scan *s, const char *why, struct mt_error *err)
{
    if (s->rerr.status != MT_OK) /* gz.c's reason: truncated, corrupt */
        return mt_fail(err, s->rerr.status, "%s:%zu: %s", s->path, s->line + 1,
                       s->rerr.msg);
    return mt_fail(err, MT_EPARSE, "%s:%zu: %s", s->path, s->line + 1, why);
}

/* Copies one JSON string (the opening quote already read) into b. */
static enum mt_status scan_string(struct scan *s, struct mt_buf *b,
                                  struct mt_error *err)
{
    int c;
    int esc = 0;

    if (mtx_buf_putc(b, '"') != MT_OK)
        return bad(s, "record over the size limit", err);
    while ((c = next_ch(s)) >= 0) {
        if (mtx_buf_putc(b, (char)c) != MT_OK)
            return bad(s, "record over the size limit", err);
        if (esc)
            esc = 0;
        else if (c == '\\')
            esc = 1;
        else if (c == '"')
            return MT_OK;
    }
    return bad(s, "the file ends inside a string (truncated?)", err);
}

/* Copies one object value ('{' already read) into b, braces balanced. */
static enum mt_status scan_object(struct scan *s, struct mt_buf *b,
                                  struct mt_error *err)
{
    int depth = 1;
    int c;
    enum mt_status st = mtx_buf_putc(b, '{');

    while (st == MT_OK && depth > 0 && (c = next_ch(s)) >= 0) {
        if (c == '"') {
            st = scan_string(s, b, err);
            continue;
        }
        depth += (c == '{' || c == '[') - (c == '}' || c == ']');
        if (mtx_buf_putc(b, (char)c) != MT_OK)
            return bad(s, "record over the size limit", err);
    }
    if (st == MT_OK && depth > 0)
        return bad(s, "the file ends inside a record (truncated?)", err);
    return st;
}

/* ==== Records ==== */

static enum mt_status add_contexts(json_t *rec, struct mt_buf *text)
{
    json_t *ctx = json_object_get(rec, "CONTEXTS");
    json_t *labels = json_object_get(rec, "LABELS");
    size_t i;
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < json_array_size(ctx); i++) {
        json_t *c = json_array_get(ctx, i);
        json_t *l = json_array_get(labels, i);

        if (!json_is_string(c))
            continue;
        if (text->len)
            st = mtx_buf_putc(text, '\n');
        if (st == MT_OK && json_is_string(l) && json_string_length(l))
            st = mtx_buf_printf(text, "%s: ", json_string_value(l));
        if (st == MT_OK)
            st = mtx_buf_append(text, json_string_value(c),
                                json_string_length(c));
    }
    return st;
}

static json_t *record_meta(json_t *rec)
{
    json_t *year = json_object_get(rec, "YEAR");
    json_t *mesh = json_object_get(rec, "MESHES");
    json_t *label = json_object_get(rec, "final_decision");
    json_t *m = json_object();

    if (m && json_is_string(year))
        json_object_set(m, "year", year);
    if (m && json_is_array(mesh))
        json_object_set(m, "mesh", mesh);
    if (m && json_is_string(label))
        json_object_set(m, "label", label);
    return m;
}

static enum mt_status record_query(struct mt_import_ctx *c, const char *pmid,
                                   json_t *rec, struct mt_error *err)
{
    json_t *q = json_object_get(rec, "QUESTION");
    json_t *extra;
    char id[80];
    enum mt_status st;

    if (!json_is_string(q))
        return MT_OK;
    extra = json_object();
    if (!extra)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (json_is_string(json_object_get(rec, "final_decision")))
        json_object_set(extra, "answer",
                        json_object_get(rec, "final_decision"));
    if (json_is_string(json_object_get(rec, "LONG_ANSWER")))
        json_object_set(extra, "long_answer",
                        json_object_get(rec, "LONG_ANSWER"));
    snprintf(id, sizeof id, "pqa-%s", pmid);
    st = mtx_sink_query(c->sink, id, json_string_value(q), pmid, extra, err);
    json_decref(extra);
    return st;
}

static enum mt_status one_record(struct mt_import_ctx *c, const char *pmid,
                                 json_t *rec, struct mt_error *err)
{
    struct mt_buf text = MT_BUF_INIT(RECORD_MAX);
    json_t *meta = record_meta(rec);
    struct mt_sink_doc d;
    enum mt_status st = meta ? add_contexts(rec, &text) : MT_ENOMEM;

    if (st != MT_OK)
        st = mt_fail(err, st, "out of memory");
    mtx_sink_record(c->sink, st == MT_OK && text.len == 0);
    if (st == MT_OK && text.len) {
        d.id = pmid;
        d.title = NULL;
        d.text = text.data;
        d.text_len = text.len;
        d.meta = meta;
        d.fields = NULL;
        st = mtx_sink_put(c->sink, &d, err);
    }
    if (st == MT_OK && text.len)
        st = record_query(c, pmid, rec, err);
    mtx_buf_free(&text);
    json_decref(meta);
    return st;
}

/* Decodes the raw key and value of one member and imports it. */
static enum mt_status member(struct mt_import_ctx *c, struct scan *s,
                             struct mt_buf *key, struct mt_buf *val,
                             struct mt_error *err)
{
    json_error_t je;
    json_t *k = json_loadb(key->data, key->len, JSON_DECODE_ANY, &je);
    json_t *v = json_loadb(val->data, val->len, 0, &je);
    enum mt_status st;

    if (!k || !v || !json_is_string(k) || !json_string_length(k))
        st = bad(s, "a key or record is not valid JSON", err);
    else if (!json_is_array(json_object_get(v, "CONTEXTS")))
        st = mt_fail(err, MT_EPARSE,
                     "%s:%zu: record %s has no CONTEXTS list (is this a "
                     "PubMedQA file?)",
                     s->path, s->line + 1, json_string_value(k));
    else
        st = one_record(c, json_string_value(k), v, err);
    if (st != MT_OK && err && k && json_is_string(k) &&
        !strstr(err->msg, "record"))
        mt_error_prefix(err, "record %s", json_string_value(k));
    json_decref(k);
    json_decref(v);
    return st;
}

/* One "key": {value} member, or the closing brace (*done). */
static enum mt_status next_member(struct mt_import_ctx *c, struct scan *s,
                                  int first, int *done, struct mt_buf *key,
                                  struct mt_buf *val, struct mt_error *err)
{
    int ch = skip_ws(s);
    enum mt_status st;

    if (ch == '}') {
        *done = 1;
        return MT_OK;
    }
    if (!first && ch != ',')
        return bad(s, "expected ',' or '}' between records", err);
    if (!first)
        ch = skip_ws(s);
    if (ch != '"')
        return bad(s, "expected a quoted PMID key", err);
    mtx_buf_reset(key);
    mtx_buf_reset(val);
    st = scan_string(s, key, err);
    if (st == MT_OK && skip_ws(s) != ':')
        return bad(s, "expected ':' after the key", err);
    if (st == MT_OK && skip_ws(s) != '{')
        return bad(
            s, "a record is not a JSON object (is this a PubMedQA file?)", err);
    if (st == MT_OK)
        st = scan_object(s, val, err);
    if (st == MT_OK)
        st = member(c, s, key, val, err);
    return st;
}

static enum mt_status scan_all(struct mt_import_ctx *c, struct scan *s,
                               struct mt_error *err)
{
    struct mt_buf key = MT_BUF_INIT(4096);
    struct mt_buf val = MT_BUF_INIT(RECORD_MAX);
    int done = 0;
    int first = 1;
    enum mt_status st = MT_OK;

    if (skip_ws(s) != '{')
        st = bad(s, "not a JSON object of PubMedQA records", err);
    while (st == MT_OK && !done) {
        st = next_member(c, s, first, &done, &key, &val, err);
        first = 0;
        mtx_sink_read(c->sink, mtx_gz_offset(s->gz));
    }
    if (st == MT_OK && skip_ws(s) != -1)
        st = bad(s, "text after the closing brace", err);
    if (st == MT_OK && s->rerr.status != MT_OK)
        st = bad(s, "", err);
    mtx_buf_free(&key);
    mtx_buf_free(&val);
    return st;
}

enum mt_status mtx_import_pubmedqa(struct mt_import_ctx *c, const char *path,
                                   struct mt_error *err)
{
    struct scan *s = mt_calloc(1, sizeof *s);
    enum mt_status st;

    if (!s)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    s->path = path;
    st = mtx_gz_open(path, &s->gz, err); /* errors name the path */
    if (st != MT_OK) {
        mt_free(s);
        return st;
    }
    st = scan_all(c, s, err);
    mtx_gz_close(s->gz);
    mt_free(s);
    return st;
}
