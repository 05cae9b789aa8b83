/* MedRAG corpus chunks (textbooks, StatPearls, PubMed, Wikipedia): one
 * JSON object a line, {"id","title","content","contents"}; each line is
 * kept as one chunk, as MedRAG retrieves them. */
#include <string.h>

#include "core/jsonl.h"
#include "corpus/corpus_int.h"
#include "medtrust/core.h"

/* "contents" is MedRAG's title + content, the text its BM25 indexes; the
 * stored text is "content" alone, since the title is kept beside it. */
static enum mt_status medrag_line(struct mt_import_ctx *c, json_t *o,
                                  const char *path, size_t line,
                                  struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    json_t *title = json_object_get(o, "title");
    json_t *text = json_object_get(o, "content");
    struct mt_sink_doc d;

    if (!json_is_string(text))
        text = json_object_get(o, "contents");
    if (!json_is_string(id) || !json_string_length(id))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: field 'id' missing or not a string "
                       "(is this a MedRAG chunk file?)",
                       path, line);
    if (!json_is_string(text))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: record %s: neither 'content' nor 'contents' "
                       "is a string",
                       path, line, json_string_value(id));
    mtx_sink_record(c->sink, json_string_length(text) == 0);
    if (json_string_length(text) == 0)
        return MT_OK;
    d.id = json_string_value(id);
    d.title = json_is_string(title) ? json_string_value(title) : NULL;
    d.text = json_string_value(text);
    d.text_len = json_string_length(text);
    d.meta = NULL;
    d.fields = NULL;
    if (mtx_sink_put(c->sink, &d, err) != MT_OK)
        return mt_error_prefix(err, "%s:%zu", path, line);
    return MT_OK;
}

/* A line that is not JSON, or too long: skipped unless --strict. */
static enum mt_status bad_line(struct mt_error *e, void *user)
{
    return mtx_sink_skip(user, e);
}

enum mt_status mtx_import_medrag(struct mt_import_ctx *c, const char *path,
                                 struct mt_error *err)
{
    struct mt_jsonl_params jp = mtx_jsonl_default_params();
    struct mt_jsonl *r = NULL;
    json_t *o = NULL;
    enum mt_status st;

    jp.skip_bad = !c->p->strict;
    jp.on_bad = bad_line;
    jp.bad_user = c->sink;
    st = mtx_jsonl_open(path, &jp, &r, err);
    while (st == MT_OK && (st = mtx_jsonl_next(r, &o, err)) == MT_OK && o) {
        st = medrag_line(c, o, path, mtx_jsonl_line(r), err);
        if (st != MT_OK) /* a record without an id or text */
            st = mtx_sink_skip(c->sink, err);
    }
    mtx_jsonl_close(r);
    return st;
}
