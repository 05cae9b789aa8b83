/* Retrieval metrics over one ranked list with binary relevance: recall@k,
 * MRR@k, nDCG@k and average precision (MAP is its mean over queries). */
#include <math.h>

#include "medtrust/eval.h"

static size_t top(size_t n, size_t k)
{
    return k < n ? k : n;
}

double mt_recall_at_k(const uint8_t *rel, size_t n, size_t n_relevant, size_t k)
{
    size_t hits = 0;
    size_t i;

    if (n_relevant == 0)
        return 0.0;
    for (i = 0; i < top(n, k); i++)
        hits += rel[i] != 0;
    return (double)hits / (double)n_relevant;
}

double mt_mrr_at_k(const uint8_t *rel, size_t n, size_t k)
{
    size_t i;

    for (i = 0; i < top(n, k); i++)
        if (rel[i])
            return 1.0 / (double)(i + 1);
    return 0.0;
}

double mt_ndcg_at_k(const uint8_t *rel, size_t n, size_t n_relevant, size_t k)
{
    double dcg = 0.0;
    double ideal = 0.0;
    size_t i;

    if (n_relevant == 0)
        return 0.0;
    for (i = 0; i < top(n, k); i++)
        if (rel[i])
            dcg += 1.0 / log2((double)i + 2.0); /* rank i+1: log2(rank+1) */
    for (i = 0; i < top(n_relevant, k); i++)
        ideal += 1.0 / log2((double)i + 2.0);
    return ideal > 0.0 ? dcg / ideal : 0.0;
}

double mt_average_precision(const uint8_t *rel, size_t n, size_t n_relevant)
{
    double sum = 0.0;
    size_t hits = 0;
    size_t i;

    if (n_relevant == 0)
        return 0.0;
    for (i = 0; i < n; i++) {
        if (!rel[i])
            continue;
        hits++;
        sum += (double)hits / (double)(i + 1);
    }
    return sum / (double)n_relevant;
}
