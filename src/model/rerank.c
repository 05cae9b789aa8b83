/* Reranker front end: spec dispatch and the call cache. The backends are
 * rerank_openai.c (/v1/rerank of llama.cpp's server, vLLM and others) and
 * encoder_llama.c (llama.cpp rank pooling). */
#include <stdlib.h>
#include <string.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/llm.h"
#include "model/onnx_enc.h"
#include "model/rerank.h"
#include "model/spec.h"

void mt_reranker_default_params(struct mt_reranker_params *p)
{
    struct mt_llm_params lp;

    mt_llm_default_params(&lp);
    memset(p, 0, sizeof *p);
    p->timeout_s = lp.timeout_s;
    p->max_retries = lp.max_retries;
    p->max_concurrency = lp.max_concurrency;
}

void mt_reranker_close(struct mt_reranker *r)
{
    mtx_model_close(r ? &r->m : NULL);
}

enum mt_status mt_reranker_open(const char *spec,
                                const struct mt_reranker_params *p,
                                struct mt_reranker **out, struct mt_error *err)
{
    static const char *const kinds[] = {"openai", "gguf", "onnx"};
    struct mt_reranker_params d;
    struct mtx_spec ms;
    enum mt_status st;

    if (!p) {
        mt_reranker_default_params(&d);
        p = &d;
    }
    st = mtx_spec_parse(spec, kinds, 3, "--reranker", &ms, err);
    if (st == MT_ENOTFOUND)
        return mt_fail(err, MT_EINVAL,
                       "unknown reranker spec '%s': use gguf:PATH, "
                       "onnx:DIR or openai:BASE_URL#MODEL in --reranker",
                       spec ? spec : "");
    if (st == MT_OK && ms.kind == 0)
        st = mtx_reranker_open_openai(ms.url, ms.model, p, out, err);
    else if (st == MT_OK && ms.kind == 1)
        st = mtx_reranker_open_llama(ms.arg, p, out, err);
    else if (st == MT_OK)
        st = mtx_reranker_open_onnx(ms.arg, p, out, err);
    mtx_spec_free(&ms);
    if (st == MT_OK && p->cache_path) {
        st = mtx_model_cache_open(&(*out)->m, p->cache_path, NULL, err);
        if (st != MT_OK)
            *out = NULL;
    }
    return st;
}

/* ==== Scoring with the cache ==== */

static char *request_key(const char *query, const struct mt_str *docs, size_t n)
{
    json_t *a = json_array();
    json_t *o = json_pack("{s:s,s:o}", "query", query, "documents", a);
    char *s = NULL;
    size_t i;

    for (i = 0; o && i < n; i++)
        if (json_array_append_new(a, json_stringn(docs[i].p, docs[i].n)))
            break;
    if (o && i == n)
        s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

static int cache_get(struct mt_reranker *r, const char *key, size_t n,
                     float *scores)
{
    char *v = NULL;
    size_t len = 0;
    int hit = 0;

    if (mtx_model_cache_get(&r->m, key, &v, &len) && len == n * sizeof(float)) {
        memcpy(scores, v, len);
        hit = 1;
    }
    mt_free(v);
    return hit;
}

enum mt_status mt_reranker_score(struct mt_reranker *r, const char *query,
                                 const struct mt_str *docs, size_t n,
                                 float *scores, struct mt_error *err)
{
    char *key = NULL;
    enum mt_status st;

    if (n == 0)
        return MT_OK;
    mtx_jsonl_init_alloc();
    if (r->m.cache) {
        key = request_key(query, docs, n);
        if (!key)
            return mt_fail(err, MT_EINVAL,
                           "rerank: out of memory or text "
                           "that is not UTF-8");
        if (cache_get(r, key, n, scores)) {
            mt_free(key);
            return MT_OK;
        }
    }
    st = r->m.ops->score(r->m.self, mtx_str_from(query), docs, n, scores, err);
    if (st == MT_OK && key)
        mtx_model_cache_put(&r->m, key, scores, n * sizeof(float), NULL);
    mt_free(key);
    return st;
}

enum mt_status mt_reranker_index_fn(void *user, const char *query,
                                    const char *const *texts,
                                    const size_t *lens, size_t n, float *scores,
                                    struct mt_error *err)
{
    struct mt_str *docs = mt_calloc(n ? n : 1, sizeof *docs);
    size_t i;
    enum mt_status st;

    if (!docs)
        return mt_fail(err, MT_ENOMEM, "rerank: out of memory");
    for (i = 0; i < n; i++) {
        docs[i].p = texts[i];
        docs[i].n = lens[i];
    }
    st = mt_reranker_score(user, query, docs, n, scores, err);
    mt_free(docs);
    return st;
}
