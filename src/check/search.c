/* search(query) for MedReAct: BM25 over the store's index (retrieve 50),
 * reranked to 20 when a cross-encoder is configured, as IryoNLP does.
 * Index handles are single-threaded, so idle ones wait in a free list and
 * each search borrows one. */
#include <string.h>

#include "check/agent_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"
#include "model/rerank.h"

static enum mt_status borrow(struct mt_agent *a, struct mt_index **out,
                             struct mt_error *err)
{
    struct mt_index *idx = NULL;

    pthread_mutex_lock(&a->idx_mu);
    if (a->n_idx > 0)
        idx = a->idx_free[--a->n_idx];
    pthread_mutex_unlock(&a->idx_mu);
    if (idx) {
        *out = idx;
        return MT_OK;
    }
    return mt_index_open(a->p.db_dir, out, err);
}

static void give_back(struct mt_agent *a, struct mt_index *idx)
{
    pthread_mutex_lock(&a->idx_mu);
    if (a->n_idx == a->cap_idx) {
        size_t cap = a->cap_idx ? a->cap_idx * 2 : 8;
        struct mt_index **p = mt_realloc(a->idx_free, cap * sizeof *p);

        if (p) {
            a->idx_free = p;
            a->cap_idx = cap;
        }
    }
    if (a->n_idx < a->cap_idx)
        a->idx_free[a->n_idx++] = idx;
    else
        mt_index_close(idx);
    pthread_mutex_unlock(&a->idx_mu);
}

static enum mt_status put_hits(struct mt_agent *a,
                               const struct mt_search_result *res,
                               struct mt_buf *obs, json_t *ids)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < res->n; i++) {
        const struct mt_search_hit *h = &res->hits[i];
        size_t n = mt_utf8_cut(h->text, strlen(h->text), a->p.chunk_chars);

        st = mt_buf_printf(obs, "[%zu] %s: %.*s%s\n", i + 1,
                           h->title ? h->title : h->doc_id, (int)n, h->text,
                           n < strlen(h->text) ? "..." : "");
        json_array_append_new(ids, json_string(h->doc_id));
    }
    if (st == MT_OK && res->n == 0)
        st = mt_buf_append_str(obs, "No passage matched the query.\n");
    return st;
}

enum mt_status mt_agent_search(struct mt_agent *a, const char *query,
                               struct mt_buf *obs, json_t *ids,
                               struct mt_error *err)
{
    struct mt_search_params sp;
    struct mt_search_result *res = NULL;
    struct mt_index *idx = NULL;
    enum mt_status st;

    if (!a->p.db_dir)
        return mt_buf_append_str(obs, "No medical corpus is configured: "
                                      "rely on your own knowledge.\n");
    st = borrow(a, &idx, err);
    if (st != MT_OK)
        return st;
    mt_search_default_params(&sp);
    sp.k = a->p.rerank_k;
    sp.retrieve_k = a->p.retrieve_k;
    if (a->reranker) {
        sp.rerank_depth = a->p.retrieve_k;
        sp.rerank = mt_reranker_index_fn;
        sp.rerank_user = a->reranker;
    }
    st = mt_index_search(idx, query, &sp, &res, err);
    if (st == MT_OK)
        st = put_hits(a, res, obs, ids);
    mt_search_result_free(res);
    give_back(a, idx);
    return st;
}
