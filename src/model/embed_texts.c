/* Embedding many texts with one embedder (model/embed_texts.h). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/embed_texts.h"

/* Embeds texts[0..n), n <= MTX_EMBED_BATCH, into the sink. When the
 * batch fails, each text is tried alone so that only the failing ones
 * are reported. */
static enum mt_status flush(struct mt_embedder *e, const char *const *texts,
                            size_t n, const struct mtx_embed_sink *sink,
                            struct mt_error *err)
{
    struct mt_str s[MTX_EMBED_BATCH];
    uint32_t d = mt_embedder_dims(e);
    float *v = mt_malloc((n ? n : 1) * d * sizeof *v);
    enum mt_status st;
    size_t i;

    if (!v)
        return mt_fail(err, MT_ENOMEM, "embed: out of memory");
    for (i = 0; i < n; i++)
        s[i] = mtx_str_from(texts[i]);
    st = mt_embedder_embed(e, s, n, v, err);
    for (i = 0; i < n; i++) {
        if (st == MT_OK)
            sink->on_vec(sink->user, texts[i], v + i * d, d);
        else if (mt_embedder_embed(e, s + i, 1, v, err) == MT_OK)
            sink->on_vec(sink->user, texts[i], v, d);
        else
            sink->on_fail(sink->user, texts[i], err);
    }
    mt_free(v);
    return MT_OK;
}

enum mt_status mtx_embed_texts(struct mt_embedder *e, const char *const *texts,
                               size_t n, const struct mtx_embed_sink *sink,
                               struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i += MTX_EMBED_BATCH) {
        size_t k = n - i < MTX_EMBED_BATCH ? n - i : MTX_EMBED_BATCH;
        st = flush(e, texts + i, k, sink, err);
    }
    return st;
}

static void free_texts(char **t, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        mt_free(t[i]);
}

enum mt_status mtx_embed_jsonl(struct mt_embedder *e, const char *path,
                               const struct mtx_embed_sink *sink,
                               struct mt_error *err)
{
    struct mt_jsonl *r = NULL;
    char *texts[MTX_EMBED_BATCH];
    size_t n = 0;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(path, NULL, &r, err);

    while (st == MT_OK && (st = mtx_jsonl_next(r, &o, err)) == MT_OK && o) {
        const char *t = json_string_value(json_object_get(o, "text"));
        if (!t) {
            st = mt_fail(err, MT_EPARSE, "%s:%zu: no \"text\" string", path,
                         mtx_jsonl_line(r));
            break;
        }
        texts[n] = mt_strdup(t);
        if (!texts[n])
            st = mt_fail(err, MT_ENOMEM, "embed: out of memory");
        else if (++n == MTX_EMBED_BATCH) {
            st = flush(e, (const char *const *)texts, n, sink, err);
            free_texts(texts, n);
            n = 0;
        }
    }
    if (st == MT_OK && n)
        st = flush(e, (const char *const *)texts, n, sink, err);
    free_texts(texts, n);
    mtx_jsonl_close(r);
    return st;
}

const char *mtx_embed_spec(const char *given)
{
    const char *env = getenv("MEDTRUST_EMBEDDER");

    if (given)
        return given;
    /* MEDTRUST_EMBEDDER=none only means "index without vectors";
     * embedding itself then uses the built-in default. */
    return env && strcmp(env, "none") != 0 ? env : NULL;
}
