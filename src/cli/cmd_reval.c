/* medtrust retrieval-eval: recall@k, MRR@10 and nDCG@10 of a search
 * configuration over a JSONL query set with relevance judgements, plus
 * latency percentiles. Metrics are over documents: a document's first
 * chunk in the ranking stands for it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/batch.h"
#include "cli/search_opts.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"

static const struct cli_opt reval_opts[] = {
    SEARCH_OPTS,
    {"queries", 'q', "FILE",
     "JSONL of {\"id\",\"query\",\"relevant\":[doc "
     "ids]} (required)",
     0},
    {"k", 'k', "N", "cut-off for recall@k, 1..1000 (default 10)", 0},
    {"json", 'j', NULL, "print the metrics as one JSON object", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct acc {
    size_t k;
    size_t n, failed;
    double recall, mrr, ndcg, map;
    double *lat;
};

/* Marks the distinct documents of the ranking relevant or not. */
static size_t judge(const struct batch_query *q,
                    const struct mt_search_result *r, uint8_t *rel, size_t max)
{
    const char *seen[1024];
    size_t i, j, n = 0;

    for (i = 0; i < r->n && n < max; i++) {
        for (j = 0; j < n && strcmp(seen[j], r->hits[i].doc_id) != 0; j++)
            ;
        if (j < n)
            continue;
        seen[n] = r->hits[i].doc_id;
        rel[n] = 0;
        for (j = 0; j < q->nrel; j++)
            if (strcmp(q->relevant[j], r->hits[i].doc_id) == 0)
                rel[n] = 1;
        n++;
    }
    return n;
}

static void on_result(const struct batch_query *q, size_t i,
                      const struct mt_search_result *r, enum mt_status st,
                      const struct mt_error *err, void *user)
{
    struct acc *a = user;
    uint8_t rel[1024];
    size_t n;

    if (st != MT_OK) {
        fprintf(stderr, "medtrust: query %s: %s\n", q->id, err->msg);
        a->failed++;
        return;
    }
    n = judge(q, r, rel, a->k > 10 ? a->k : 10);
    a->recall += mt_recall_at_k(rel, n, q->nrel, a->k);
    a->mrr += mt_mrr_at_k(rel, n, 10);
    a->ndcg += mt_ndcg_at_k(rel, n, q->nrel, 10);
    a->map += mt_average_precision(rel, n, q->nrel);
    a->lat[a->n++] = r->elapsed_ms;
    (void)i;
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

static void report(struct acc *a, const struct mt_search_params *p, int js)
{
    double n = a->n ? (double)a->n : 1.0;
    double p50, p95, p99;

    qsort(a->lat, a->n, sizeof *a->lat, cmp_double);
    p50 = pct(a->lat, a->n, 0.50);
    p95 = pct(a->lat, a->n, 0.95);
    p99 = pct(a->lat, a->n, 0.99);
    if (js) {
        json_t *o = json_pack(
            "{s:I,s:I,s:s,s:I,s:f,s:f,s:f,s:f,s:{s:f,s:f,s:f}}", "queries",
            (json_int_t)a->n, "failed", (json_int_t)a->failed, "mode",
            mt_search_mode_str(p->mode), "k", (json_int_t)a->k, "recall",
            a->recall / n, "mrr@10", a->mrr / n, "ndcg@10", a->ndcg / n, "map",
            a->map / n, "latency_ms", "p50", p50, "p95", p95, "p99", p99);
        json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
        return;
    }
    printf("queries %zu (failed %zu), mode %s\n", a->n, a->failed,
           mt_search_mode_str(p->mode));
    printf("recall@%zu %.4f  MRR@10 %.4f  nDCG@10 %.4f  MAP %.4f\n", a->k,
           a->recall / n, a->mrr / n, a->ndcg / n, a->map / n);
    printf("latency p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", p50, p95, p99);
}

static int reval_run(struct cli_args *a)
{
    struct mt_search_params p;
    struct mt_error err = {MT_OK, ""};
    struct batch_query *q = NULL;
    struct acc acc;
    struct mt_retriever *ret = NULL;
    unsigned jobs = 0;
    unsigned long k = 10;
    size_t n = 0;
    enum mt_status st;

    if (search_opts_read(a, &p, &jobs) < 0 ||
        cli_get_uint(a, "k", 1, 1000, &k) < 0)
        return 1;
    if (!cli_get(a, "queries")) {
        fprintf(stderr, "medtrust retrieval-eval: --queries is required\n");
        return 1;
    }
    memset(&acc, 0, sizeof acc);
    acc.k = k;
    /* Chunks, not documents, are ranked: fetch deeper so that at least
     * max(k, 10) distinct documents are usually there. */
    p.k = (uint32_t)(3 * (k > 10 ? k : 10));
    st = search_open_retriever(a, &p, 0, &ret, &err);
    if (st == MT_OK)
        st = batch_load(cli_get(a, "queries"), &q, &n, &err);
    acc.lat = st == MT_OK ? mt_calloc(n + 1, sizeof *acc.lat) : NULL;
    if (st == MT_OK && !acc.lat)
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = batch_embed(q, n, ret, &err);
    if (st == MT_OK)
        st = batch_run(ret, q, n, &p, jobs, 1, on_result, &acc, &err);
    if (st == MT_OK)
        report(&acc, &p, cli_get(a, "json") != NULL);
    mt_free(acc.lat);
    batch_free(q, n);
    mt_retriever_close(ret);
    return st == MT_OK ? (acc.failed ? 1 : 0) : cli_fail(&err, st);
}

const struct cli_verb cli_verb_retrieval_eval = {
    "retrieval-eval",
    "measure retrieval quality and latency on a query set",
    "--db DIR --queries FILE.jsonl [OPTIONS]",
    "Prints recall@k, MRR@10, nDCG@10 and MAP over documents (a document's\n"
    "best-ranked chunk stands for it), with latency p50, p95 and p99 per "
    "query.",
    reval_opts,
    reval_run,
};
