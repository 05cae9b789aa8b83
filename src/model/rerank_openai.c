/* OpenAI-style reranker: POST /v1/rerank {"model","query","documents",
 * "top_n"} and read {"results":[{"index","relevance_score"}]} (llama.cpp
 * server, vLLM, Jina and Cohere share this shape). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/http.h"
#include "model/rerank.h"

#define NO_INDEX MT_HTTP_NO_INDEX

struct orerank {
    struct mt_http *http;
    char *model;
    char url[512];
};

static void orerank_free(void *self)
{
    struct orerank *o = self;

    if (!o)
        return;
    mtx_http_free(o->http);
    mt_free(o->model);
    mt_free(o);
}

static const char *orerank_model(const void *self)
{
    return ((const struct orerank *)self)->model;
}

static enum mt_status bad_field(const struct orerank *o, struct mt_error *err,
                                const char *arr, size_t i, const char *rest)
{
    return mtx_http_bad_field(o->url, err, arr, i, rest);
}

static enum mt_status parse_results(const struct orerank *o, json_t *reply,
                                    size_t n, float *scores,
                                    struct mt_error *err)
{
    json_t *res = json_object_get(reply, "results");
    size_t i;

    if (!json_is_array(res) || json_array_size(res) != n)
        return bad_field(o, err, "results", NO_INDEX, "");
    for (i = 0; i < n; i++)
        scores[i] = NAN;
    for (i = 0; i < n; i++) {
        json_t *r = json_array_get(res, i);
        json_t *ix = json_object_get(r, "index");
        json_t *sc = json_object_get(r, "relevance_score");
        if (!sc)
            sc = json_object_get(r, "score");
        if (!json_is_integer(ix) || json_integer_value(ix) < 0 ||
            (size_t)json_integer_value(ix) >= n)
            return bad_field(o, err, "results", i, ".index");
        if (!json_is_number(sc))
            return bad_field(o, err, "results", i, ".relevance_score");
        scores[json_integer_value(ix)] = (float)json_number_value(sc);
    }
    for (i = 0; i < n; i++)
        if (isnan(scores[i]))
            return bad_field(o, err, "results", i,
                             " (no score for this document)");
    return MT_OK;
}

static size_t docs_bytes(const struct mt_str *docs, size_t n)
{
    size_t b = 0;
    size_t i;

    for (i = 0; i < n; i++)
        b += docs[i].n;
    return b;
}

static enum mt_status orerank_score(void *self, struct mt_str query,
                                    const struct mt_str *docs, size_t n,
                                    float *scores, struct mt_error *err)
{
    struct orerank *o = self;
    json_t *a = json_array();
    json_t *b =
        json_pack("{s:s,s:s%,s:o,s:I}", "model", o->model, "query", query.p,
                  query.n, "documents", a, "top_n", (json_int_t)n);
    json_t *reply = NULL;
    enum mt_status st = b ? MT_OK : MT_EINVAL;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++)
        if (json_array_append_new(a, json_stringn(docs[i].p, docs[i].n)))
            st = MT_EINVAL;
    if (st != MT_OK)
        mt_fail(err, st, "rerank: out of memory or text that is not UTF-8");
    else /* a reply may echo the documents (JSON-escaped: x6 at worst) */
        st = mtx_http_post_json(o->http, "rerank", b,
                                6 * docs_bytes(docs, n) + n * 1024 +
                                    ((size_t)1 << 20),
                                &reply, NULL, err);
    if (st == MT_OK)
        st = parse_results(o, reply, n, scores, err);
    json_decref(reply);
    json_decref(b);
    return st;
}

static const struct mtx_model_ops orerank_ops = {
    .name = "openai",
    .free = orerank_free,
    .model = orerank_model,
    .score = orerank_score,
};

enum mt_status mtx_reranker_open_openai(const char *url, const char *model,
                                        const struct mt_reranker_params *p,
                                        struct mt_reranker **out,
                                        struct mt_error *err)
{
    struct mt_http_params hp = {p->timeout_s,       p->max_retries, 0.5,  30,
                                p->max_concurrency, "--reranker",   NULL, 0};
    struct orerank *o = mt_calloc(1, sizeof *o);
    enum mt_status st;

    if (!o || !(o->model = mt_strdup(model))) {
        orerank_free(o);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = mtx_http_new(url, &hp, &o->http, err);
    if (st != MT_OK) {
        orerank_free(o);
        return st;
    }
    mtx_http_url(o->http, "rerank", o->url, sizeof o->url);
    return MTX_MODEL_TAKE(out, &orerank_ops, o, err);
}
