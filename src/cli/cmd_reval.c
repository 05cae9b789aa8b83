/* medtrust retrieval-eval: recall@k, MRR@10 and nDCG@10 of a search
 * configuration over a JSONL query set with relevance judgements, plus
 * latency percentiles. Metrics are over documents: a document's first
 * chunk in the ranking stands for it. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/search_opts.h"
#include "eval/reval.h"
#include "medtrust/core.h"

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

static void on_result(void *user, const struct mtx_query *q, size_t i,
                      const struct mt_search_result *r, enum mt_status st,
                      const struct mt_error *err)
{
    struct mtx_reval *a = user;

    (void)i;
    if (st != MT_OK) {
        fprintf(stderr, "medtrust: query %s: %s\n", q->id, err->msg);
        a->failed++;
        return;
    }
    mtx_reval_add(a, q->relevant, q->nrel, r);
}

static void report(struct mtx_reval *a, const struct mt_search_params *p,
                   int js)
{
    struct mtx_reval_summary m;

    mtx_reval_summary(a, &m);
    if (js) {
        json_t *o = json_pack(
            "{s:I,s:I,s:s,s:I,s:f,s:f,s:f,s:f,s:{s:f,s:f,s:f}}", "queries",
            (json_int_t)a->n, "failed", (json_int_t)a->failed, "mode",
            mt_search_mode_str(p->mode), "k", (json_int_t)a->k, "recall",
            m.recall, "mrr@10", m.mrr, "ndcg@10", m.ndcg, "map", m.map,
            "latency_ms", "p50", m.p50, "p95", m.p95, "p99", m.p99);
        json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
        return;
    }
    printf("queries %zu (failed %zu), mode %s\n", a->n, a->failed,
           mt_search_mode_str(p->mode));
    printf("recall@%zu %.4f  MRR@10 %.4f  nDCG@10 %.4f  MAP %.4f\n", a->k,
           m.recall, m.mrr, m.ndcg, m.map);
    printf("latency p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", m.p50, m.p95,
           m.p99);
}

static int reval_run(struct cli_args *a)
{
    struct mt_search_params p;
    struct mt_error err = {MT_OK, ""};
    struct mtx_query *q = NULL;
    struct mtx_reval acc;
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
    p.k = mtx_reval_depth(k);
    st = search_open_retriever(a, &p, 0, &ret, &err);
    if (st == MT_OK)
        st = mtx_queries_load(cli_get(a, "queries"), &q, &n, &err);
    if (st == MT_OK && mtx_reval_init(&acc, k, n) != MT_OK)
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = search_batch_cli(ret, q, n, &p, jobs, on_result, &acc, &err);
    if (st == MT_OK)
        report(&acc, &p, cli_get(a, "json") != NULL);
    mtx_reval_free(&acc);
    mtx_queries_free(q, n);
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
