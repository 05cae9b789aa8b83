/* retrieval-eval's score: recall@k, MRR@10, nDCG@10 and MAP over documents
 * (a document's first chunk in the ranking stands for it) summed over the
 * queries, and latency percentiles. The CLI feeds it each query's result
 * and prints the summary. */
#ifndef MT_EVAL_REVAL_H
#define MT_EVAL_REVAL_H

#include <stddef.h>

#include "medtrust/index.h"

struct mtx_reval {
    size_t k;         /* the recall cut-off */
    size_t n, failed; /* queries scored, queries whose search failed */
    double recall, mrr, ndcg, map; /* sums over the n queries */
    double *lat;                   /* each query's search time (ms) */
};

/* The means and the latency percentiles of a finished score. */
struct mtx_reval_summary {
    double recall, mrr, ndcg, map;
    double p50, p95, p99;
};

/* Starts a score at cut-off k for at most nqueries queries; MT_ENOMEM. */
enum mt_status mtx_reval_init(struct mtx_reval *a, size_t k, size_t nqueries);
/* The ranking depth to search for a query: chunks, not documents, are
 * ranked, so at least max(k, 10) distinct documents are usually there. */
uint32_t mtx_reval_depth(size_t k);
/* Scores one query's result against its relevant document ids (calls are
 * serialised by the caller). */
void mtx_reval_add(struct mtx_reval *a, char *const *relevant, size_t nrel,
                   const struct mt_search_result *r);
/* The means and percentiles (sorts a->lat). */
void mtx_reval_summary(struct mtx_reval *a, struct mtx_reval_summary *s);
void mtx_reval_free(struct mtx_reval *a);

#endif
