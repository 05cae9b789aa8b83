/* JSONL ingestion: {"id","text","title"?,...} objects become documents in
 * transactional batches, so a crash keeps exactly the committed batches. */
#include <string.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "store/store_int.h"

void mt_ingest_default_params(struct mt_ingest_params *p)
{
    memset(p, 0, sizeof *p);
    p->batch_size = 1000;
}

struct ingest {
    struct mt_store *s;
    struct mt_jsonl *r;
    const struct mt_ingest_params *p;
    const char *path;
    int64_t source_id;
    struct mt_ingest_result res;
};

/* The default source name: the file's base name without extension. */
static void default_source(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    char *dot;

    base = base ? base + 1 : path;
    if (strcmp(path, "-") == 0)
        base = "stdin";
    snprintf(out, n, "%s", base);
    dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

/* Fills *id from the "id" field: a string, or an integer as text. */
static int doc_id(json_t *v, char *buf, size_t n, const char **id)
{
    if (json_is_string(v)) {
        *id = json_string_value(v);
        return **id != '\0';
    }
    if (json_is_integer(v)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *id = buf;
        return 1;
    }
    return 0;
}

/* Metadata: every field but id, text and title, as compact JSON. */
static char *metadata_json(json_t *obj)
{
    json_t *meta = json_deep_copy(obj);
    char *txt;

    if (!meta)
        return NULL;
    json_object_del(meta, "id");
    json_object_del(meta, "text");
    json_object_del(meta, "title");
    txt = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(meta);
    return txt;
}

static enum mt_status bad_doc(struct ingest *in, const char *why,
                              struct mt_error *err)
{
    if (in->p->skip_bad) {
        in->res.skipped++;
        return MT_OK;
    }
    return mt_fail(err, MT_EPARSE, "%s:%zu: %s", in->path,
                   mtx_jsonl_line(in->r), why);
}

static enum mt_status ingest_obj(struct ingest *in, json_t *obj,
                                 struct mt_error *err)
{
    char idbuf[32];
    struct mt_doc d;
    json_t *text = json_object_get(obj, "text");
    json_t *title = json_object_get(obj, "title");
    struct mt_put_result pr;
    enum mt_status st;

    memset(&d, 0, sizeof d);
    if (!doc_id(json_object_get(obj, "id"), idbuf, sizeof idbuf, &d.ext_id))
        return bad_doc(in, "field 'id' missing or not a string or integer",
                       err);
    if (!json_is_string(text))
        return bad_doc(in, "field 'text' missing or not a string", err);
    if (title && !json_is_string(title) && !json_is_null(title))
        return bad_doc(in, "field 'title' is not a string", err);
    d.text = json_string_value(text);
    d.text_len = json_string_length(text);
    d.title = json_is_string(title) ? json_string_value(title) : NULL;
    d.metadata = metadata_json(obj);
    if (!d.metadata)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", in->path);
    st = mt_store_put(in->s, in->source_id, &d, &pr, err);
    mt_free((char *)(uintptr_t)d.metadata);
    if (st != MT_OK)
        return mt_error_prefix(err, "%s:%zu", in->path, mtx_jsonl_line(in->r));
    if (pr.unchanged)
        in->res.unchanged++;
    else
        in->res.documents++;
    in->res.chunks += pr.chunks;
    return MT_OK;
}

static void report(struct ingest *in)
{
    if (in->p->progress)
        in->p->progress(in->res.documents + in->res.unchanged +
                            in->res.skipped + mtx_jsonl_skipped(in->r),
                        in->p->progress_user);
}

/* Reads up to batch_size objects into one transaction; *eof at the end. */
static enum mt_status ingest_batch(struct ingest *in, int *eof,
                                   struct mt_error *err)
{
    uint32_t n = 0;
    json_t *obj = NULL;
    enum mt_status st = mt_store_begin(in->s, err);

    while (st == MT_OK && n < in->p->batch_size) {
        st = mtx_jsonl_next(in->r, &obj, err);
        if (st != MT_OK || !obj)
            break;
        st = ingest_obj(in, obj, err);
        n++;
    }
    *eof = st == MT_OK && !obj;
    if (st != MT_OK) {
        mt_store_rollback(in->s);
        return st;
    }
    st = mt_store_commit(in->s, err);
    if (st == MT_OK)
        report(in);
    return st;
}

static enum mt_status ingest_run(struct ingest *in, struct mt_error *err)
{
    char name[256];
    struct mt_jsonl_params jp = mtx_jsonl_default_params();
    int eof = 0;
    enum mt_status st;

    default_source(in->path, name, sizeof name);
    st = mt_store_source(in->s, in->p->source ? in->p->source : name,
                         &in->source_id, err);
    if (st != MT_OK)
        return st;
    jp.skip_bad = in->p->skip_bad;
    st = mtx_jsonl_open(in->path, &jp, &in->r, err);
    if (st != MT_OK)
        return st;
    while (st == MT_OK && !eof) {
        if (in->p->cancelled && in->p->cancelled(in->p->cancelled_user))
            st = mt_fail(err, MT_ECANCELED,
                         "%s: cancelled after line %zu: the batches before "
                         "it are committed; ingest it again to go on",
                         in->path, mtx_jsonl_line(in->r));
        else
            st = ingest_batch(in, &eof, err);
    }
    in->res.skipped += mtx_jsonl_skipped(in->r);
    return st;
}

enum mt_status mt_store_ingest_jsonl(struct mt_store *s, const char *path,
                                     const struct mt_ingest_params *params,
                                     struct mt_ingest_result *res,
                                     struct mt_error *err)
{
    struct mt_ingest_params defaults;
    struct ingest in;
    enum mt_status st;

    if (!params) {
        mt_ingest_default_params(&defaults);
        params = &defaults;
    }
    memset(&in, 0, sizeof in);
    in.s = s;
    in.p = params;
    in.path = path;
    if (params->batch_size == 0)
        return mt_fail(err, MT_EINVAL, "batch size must be at least 1");
    st = ingest_run(&in, err);
    mtx_jsonl_close(in.r);
    if (res)
        *res = in.res;
    return st;
}
