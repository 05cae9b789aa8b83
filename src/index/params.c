/* The search's settings table (mt_search_param_table): every numeric knob
 * of struct mt_search_params that `search` and `retrieval-eval` take, with
 * its POST /v1/search member where the server offers it, bounds and help;
 * the defaults are mt_search_default_params'. */
#include <stddef.h>

#include "medtrust/index.h"

#define P(member) offsetof(struct mt_search_params, member)

/* The server's lower cap: a search runs on a shared server thread, so it
 * returns at most 1,000 hits (the grouped default reads 4k passages). */
static const struct mt_param search_params[] = {
    {"k", "k", P(k), MT_PARAM_U32, 1, 10000, 1000, "N", "hits to return", NULL},
    {"k1", NULL, P(k1), MT_PARAM_F32, 0, 100, 0, "X",
     "BM25 k1 (default: Anserini's BEIR setting)", NULL},
    {"b", NULL, P(b), MT_PARAM_F32, 0, 1, 0, "X",
     "BM25 b (default: Anserini's BEIR setting)", NULL},
    {"w-lex", "w_lex", P(w_lex), MT_PARAM_F32, 0, 1000, 0, "X",
     "hybrid weight of BM25 (default: VerifAI's)", NULL},
    {"w-sem", "w_sem", P(w_sem), MT_PARAM_F32, 0, 1000, 0, "X",
     "hybrid weight of vectors (default: VerifAI's)", NULL},
    {"retrieve", "retrieve", P(retrieve_k), MT_PARAM_U32, 1, 100000, 0, "N",
     "first-stage hits of each list (BM25, vectors)", NULL},
    {"fusion-depth", NULL, P(fusion_depth), MT_PARAM_U32, 1, 100000, 0, "N",
     "hybrid: fuse only the first N chunks of each list (VerifAI fuses 10 "
     "abstracts)",
     "the whole first stage"},
    {"ef", NULL, P(ef), MT_PARAM_U32, 1, 10000, 0, "N",
     "HNSW search breadth for dense and hybrid: more is slower and finds "
     "more",
     "the index's, from the segment size"},
    {"rerank", NULL, P(rerank_depth), MT_PARAM_U32, 1, 10000, 0, "R",
     "rerank stage: score the top R hits with --reranker, keep the top k "
     "(IryoNLP: 50 -> 20)",
     "none, 50 with --reranker"},
    /* Not a request member: the server's searches share its threads, and
     * auto divides the cores among the searches in flight. */
    {"search-threads", NULL, P(search_threads), MT_PARAM_U32, 1,
     MT_SEARCH_MAX_THREADS, 0, "N",
     "threads one query's index segments are searched on (same hits as "
     "on one)",
     "auto: the CPUs divided by the queries in flight"},
};

static void defaults(void *p)
{
    mt_search_default_params(p);
}

const struct mt_param_table mt_search_param_table = {
    "mt_search_params", search_params,
    sizeof search_params / sizeof search_params[0],
    sizeof(struct mt_search_params), defaults};
