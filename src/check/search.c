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
        if (r->p.passages_last) /* IryoNLP's code: with source and score */
            st = mtx_buf_printf(&line, "%s (source: %s, score: %.4f): ",
                                h->title ? h->title : h->doc_id,
                                h->source ? h->source : "", h->score);
        else
            st = mtx_buf_printf(&line, "%s: ", h->title ? h->title : h->doc_id);
        if (st == MT_OK)
            st = mtx_buf_printf(&line, "%.*s%s", (int)n, h->text,
                                n < strlen(h->text) ? "..." : "");
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

/* One search over the union of the run's sources (none: every source),
 * with the run's metadata conditions: one BM25 and one dense list, one
 * fusion, one rerank of retrieve_k (IryoNLP's fix_source takes one
 * source; the union is ours, for runs over several corpora). */
static enum mt_status search_union(const struct run *r, const char *query,
                                   enum mt_search_mode mode,
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
    sp.sources = r->sources;
    sp.nsources = r->n_sources;
    sp.meta = r->meta;
    sp.nmeta = r->nmeta;
    if (mt_retriever_has_reranker(a->ret))
        sp.rerank_depth = r->p.retrieve_k;
    return mt_retriever_search(a->ret, query, &sp, res, err);
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
    st = search_union(r, query, m, &res, err);
    if (st == MT_OK)
        st = put_result(r, res, o);
    mt_search_result_free(res);
    return st;
}
