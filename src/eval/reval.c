/* retrieval-eval's score (reval.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/reval.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"

#define JUDGED_MAX 1024 /* distinct documents judged per ranking */

enum mt_status mtx_reval_init(struct mtx_reval *a, size_t k, size_t nqueries)
{
    memset(a, 0, sizeof *a);
    a->k = k;
    a->lat = mt_calloc(nqueries + 1, sizeof *a->lat);
    return a->lat ? MT_OK : MT_ENOMEM;
}

uint32_t mtx_reval_depth(size_t k)
{
    return (uint32_t)(3 * (k > 10 ? k : 10));
}

/* Marks the distinct documents of the ranking relevant or not. */
static size_t judge(char *const *relevant, size_t nrel,
                    const struct mt_search_result *r, uint8_t *rel, size_t max)
{
    const char *seen[JUDGED_MAX];
    size_t i, j, n = 0;

    for (i = 0; i < r->n && n < max; i++) {
        for (j = 0; j < n && strcmp(seen[j], r->hits[i].doc_id) != 0; j++)
            ;
        if (j < n)
            continue;
        seen[n] = r->hits[i].doc_id;
        rel[n] = 0;
        for (j = 0; j < nrel; j++)
            if (strcmp(relevant[j], r->hits[i].doc_id) == 0)
                rel[n] = 1;
        n++;
    }
    return n;
}

void mtx_reval_add(struct mtx_reval *a, char *const *relevant, size_t nrel,
                   const struct mt_search_result *r)
{
    uint8_t rel[JUDGED_MAX];
    size_t n = judge(relevant, nrel, r, rel, a->k > 10 ? a->k : 10);

    a->recall += mt_recall_at_k(rel, n, nrel, a->k);
    a->mrr += mt_mrr_at_k(rel, n, 10);
    a->ndcg += mt_ndcg_at_k(rel, n, nrel, 10);
    a->map += mt_average_precision(rel, n, nrel);
    a->lat[a->n++] = r->elapsed_ms;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

static double pct(const double *v, size_t n, double p)
{
    size_t i = (size_t)ceil(p * (double)n);

    return n ? v[i > 0 ? i - 1 : 0] : 0.0;
}

void mtx_reval_summary(struct mtx_reval *a, struct mtx_reval_summary *s)
{
    double n = a->n ? (double)a->n : 1.0;

    qsort(a->lat, a->n, sizeof *a->lat, cmp_double);
    s->p50 = pct(a->lat, a->n, 0.50);
    s->p95 = pct(a->lat, a->n, 0.95);
    s->p99 = pct(a->lat, a->n, 0.99);
    s->recall = a->recall / n;
    s->mrr = a->mrr / n;
    s->ndcg = a->ndcg / n;
    s->map = a->map / n;
}

void mtx_reval_free(struct mtx_reval *a)
{
    mt_free(a->lat);
    a->lat = NULL;
}
