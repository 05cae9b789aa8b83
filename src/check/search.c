/* search(query) for MedReAct, through the checker's retriever. The
 * paper's two-stage semantic search (IryoNLP, section 3): a bi-encoder
 * retrieves the top 50 (Matryoshka vectors truncated to 256 dimensions,
 * which --dims and the index's own vectors give here), a cross-encoder
 * reranks them to the top 20. --search-mode dense is that first stage;
 * the default, hybrid when the index has vectors (BM25 fused with the
 * dense list, VerifAI's weights), is ours and departs from the paper;
 * bm25 is what an index without vectors can do. */
#include <string.h>

#include "check/agent_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"
#include "medtrust/retrieve.h"

/* A hit as a search trace record keeps it: its document id, title,
 * source, text cut to hit_chars bytes ("cut" says whether it was) and
 * link (mt_retriever_url; null when it has none), so a reader shows the
 * passages without searching again. */
static json_t *hit_json(const struct run *r, const struct mt_search_hit *h,
                        const char *url)
{
    size_t len = strlen(h->text);
    size_t n = mtx_utf8_cut(h->text, len, r->p.hit_chars);

    return json_pack("{s:s,s:s?,s:s?,s:s#,s:b,s:s?}", "doc_id", h->doc_id,
                     "title", h->title, "source", h->source, "text", h->text,
                     (int)n, "cut", n < len, "url", url);
}

/* Appends "TITLE: text" of each hit (cut to chunk_chars) to 'passages',
 * its document id to 'ids', its source to 'srcs' and its record (with
 * urls[i], which may be NULL) to 'hits'. */
static enum mt_status put_hits(const struct run *r,
                               const struct mt_search_result *res,
                               char *const *urls, struct search_out *o)
{
    struct mt_buf line = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < res->n; i++) {
        const struct mt_search_hit *h = &res->hits[i];
        size_t n = mtx_utf8_cut(h->text, strlen(h->text), r->p.chunk_chars);

        line.len = 0;
        st =
            mtx_buf_printf(&line, "%s: %.*s%s", h->title ? h->title : h->doc_id,
                           (int)n, h->text, n < strlen(h->text) ? "..." : "");
        if (st == MT_OK &&
            (json_array_append_new(o->passages, json_string(line.data)) != 0 ||
             json_array_append_new(o->ids, json_string(h->doc_id)) != 0 ||
             json_array_append_new(
                 o->srcs, json_string(h->source ? h->source : "")) != 0 ||
             json_array_append_new(o->hits,
                                   hit_json(r, h, urls ? urls[i] : NULL)) != 0))
            st = MT_ENOMEM;
    }
    mtx_buf_free(&line);
    return st;
}

/* put_hits with the hits' links, looked up in one store borrow (a hit
 * without one, or a failed lookup, gets null). */
static enum mt_status put_result(const struct run *r,
                                 const struct mt_search_result *res,
                                 struct search_out *o)
{
    char **urls = res->n ? mt_calloc(res->n, sizeof *urls) : NULL;
    enum mt_status st;
    size_t i;

    if (urls &&
        mt_retriever_urls(r->a->ret, res->hits, res->n, urls, NULL) != MT_OK)
        memset(urls, 0, res->n * sizeof *urls);
    st = put_hits(r, res, urls, o);
    for (i = 0; urls && i < res->n; i++)
        mt_free(urls[i]);
    mt_free(urls);
    return st;
}

/* The mode of this search: the one asked for, or (auto) hybrid when the
 * index has vectors the query embedder matches, else bm25. Decided per
 * search, so a server's index that gains vectors switches over. */
static enum mt_search_mode search_mode(const struct run *r)
{
    if (r->p.search_mode != MT_AGENT_SEARCH_AUTO)
        return (enum mt_search_mode)r->p.search_mode;
    return mt_retriever_has_vectors(r->a->ret) ? MT_SEARCH_HYBRID
                                               : MT_SEARCH_BM25;
}

/* One search, filtered to 'source' (NULL: every source) and the run's
 * metadata conditions. */
static enum mt_status search_one(const struct run *r, const char *query,
                                 enum mt_search_mode mode, const char *source,
                                 struct mt_search_result **res,
                                 struct mt_error *err)
{
    struct mt_agent *a = r->a;
    struct mt_search_params sp;

    mt_search_default_params(&sp);
    sp.mode = mode;
    sp.k = r->p.rerank_k;
    sp.retrieve_k = r->p.retrieve_k;
    sp.w_lex = r->p.w_lex;
    sp.w_sem = r->p.w_sem;
    sp.source = source;
    sp.meta = r->meta;
    sp.nmeta = r->nmeta;
    if (mt_retriever_has_reranker(a->ret))
        sp.rerank_depth = r->p.retrieve_k;
    return mt_retriever_search(a->ret, query, &sp, res, err);
}

/* Several sources: one search per source, the hits merged by score and
 * cut to rerank_k. The index filters on one source at a time; BM25,
 * dense (cosine) and cross-encoder scores are comparable across these
 * searches (one index, one IDF table, absolute scores), so the merge
 * equals one search over the union of the sources. Hybrid scores are
 * not quite: each search scales its lists by their own top score, so the
 * merge only approximates the union's fusion. (IryoNLP's fix_source
 * takes one source; the union is ours, for runs over several corpora.) */
static enum mt_status search_sources(const struct run *r, const char *query,
                                     enum mt_search_mode mode,
                                     struct search_out *o, struct mt_error *err)
{
    struct mt_search_result *res[MT_AGENT_MAX_SOURCES] = {NULL};
    size_t at[MT_AGENT_MAX_SOURCES] = {0};
    struct mt_search_result one;
    enum mt_status st = MT_OK;
    size_t i, n = r->n_sources, k;

    for (i = 0; st == MT_OK && i < n; i++)
        st = search_one(r, query, mode, r->sources[i], &res[i], err);
    for (k = 0; st == MT_OK && k < r->p.rerank_k; k++) {
        size_t best = n;

        for (i = 0; i < n; i++)
            if (at[i] < res[i]->n &&
                (best == n ||
                 res[i]->hits[at[i]].score > res[best]->hits[at[best]].score))
                best = i;
        if (best == n)
            break;
        one = *res[best];
        one.hits = &res[best]->hits[at[best]++];
        one.n = 1;
        st = put_result(r, &one, o);
    }
    for (i = 0; i < n; i++)
        mt_search_result_free(res[i]);
    return st;
}

enum mt_status mtx_agent_search(const struct run *r, const char *query,
                                struct search_out *o, const char **mode,
                                struct mt_error *err)
{
    struct mt_agent *a = r->a;
    struct mt_search_result *res = NULL;
    enum mt_search_mode m;
    enum mt_status st;

    *mode = "none";
    if (!a->ret || (!r->p.db_dir && !r->p.retriever))
        return MT_OK;
    m = search_mode(r);
    *mode = mt_search_mode_str(m);
    if (r->n_sources > 1) {
        st = search_sources(r, query, m, o, err);
    } else {
        st = search_one(r, query, m, r->n_sources ? r->sources[0] : NULL, &res,
                        err);
        if (st == MT_OK)
            st = put_result(r, res, o);
        mt_search_result_free(res);
    }
    return st;
}
