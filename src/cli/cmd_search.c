/* medtrust search: one query from the command line, or a JSONL batch with
 * --queries, printed as text or JSON lines. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/batch.h"
#include "cli/search_opts.h"
#include "medtrust/core.h"
#include "medtrust/retrieve.h"

static const struct cli_opt search_opts[] = {
    SEARCH_OPTS,
    {"k", 'k', "N", "hits to return, 1..10000 (default 10)", 0},
    {"queries", 'q', "FILE",
     "JSONL of {\"id\",\"query\"}: one output line "
     "per query",
     0},
    {"json", 'j', NULL, "one JSON object per hit", 0},
    {NULL, 0, NULL, NULL, 0},
};

static json_t *hit_json(const struct mt_search_hit *h)
{
    return json_pack("{s:i,s:s,s:I,s:f,s:s?,s:s,s:s}", "rank", (int)h->rank,
                     "doc_id", h->doc_id, "chunk_id", (json_int_t)h->chunk_id,
                     "score", h->score, "title", h->title, "text", h->text,
                     "source", h->source);
}

static void print_json(json_t *o)
{
    if (!o)
        return;
    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(o);
}

static void print_text(const struct mt_search_result *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        const struct mt_search_hit *h = &r->hits[i];
        printf("%2u. %.4f  %s  [%s]  %s\n", h->rank, h->score, h->doc_id,
               h->source, h->title ? h->title : "");
        printf("    %.240s%s\n", h->text, strlen(h->text) > 240 ? "..." : "");
    }
    printf("%zu hits in %.2f ms\n", r->n, r->elapsed_ms);
}

static void on_result(const struct batch_query *q, size_t i,
                      const struct mt_search_result *res, enum mt_status st,
                      const struct mt_error *err, void *user)
{
    json_t *hits = json_array();
    size_t j;

    (void)i;
    (void)user;
    if (st != MT_OK) {
        print_json(json_pack("{s:s,s:s}", "query_id", q->id, "error",
                             err->msg[0] ? err->msg : mt_status_str(st)));
        json_decref(hits);
        return;
    }
    for (j = 0; hits && j < res->n; j++)
        json_array_append_new(hits, hit_json(&res->hits[j]));
    print_json(json_pack("{s:s,s:o}", "query_id", q->id, "hits", hits));
}

static int run_batch(struct mt_retriever *ret, const char *path,
                     const struct mt_search_params *p, unsigned jobs)
{
    struct mt_error err = {MT_OK, ""};
    struct batch_query *q = NULL;
    size_t n = 0;
    enum mt_status st = batch_load(path, &q, &n, &err);

    if (st == MT_OK)
        st = batch_embed(q, n, ret, &err);
    if (st == MT_OK)
        st = batch_run(ret, q, n, p, jobs, 1, on_result, NULL, &err);
    batch_free(q, n);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

/* Joins the positional words into one query. */
static char *join_query(const struct cli_args *a)
{
    size_t len = 1;
    int i;
    char *q;

    for (i = 0; i < a->npos; i++)
        len += strlen(a->pos[i]) + 1;
    q = mt_malloc(len);
    if (!q)
        return NULL;
    q[0] = '\0';
    for (i = 0; i < a->npos; i++) {
        if (i)
            strcat(q, " ");
        strcat(q, a->pos[i]);
    }
    return q;
}

static int run_one(struct mt_retriever *ret, const struct cli_args *a,
                   const struct mt_search_params *params)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_search_result *r = NULL;
    char *q = join_query(a);
    size_t i;
    enum mt_status st;

    st = q ? mt_retriever_search(ret, q, params, &r, &err) : MT_ENOMEM;
    if (st == MT_OK && cli_get(a, "json"))
        for (i = 0; i < r->n; i++)
            print_json(hit_json(&r->hits[i]));
    else if (st == MT_OK)
        print_text(r);
    mt_search_result_free(r);
    mt_free(q);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

static int search_run(struct cli_args *a)
{
    struct mt_search_params p;
    struct mt_error err = {MT_OK, ""};
    struct mt_retriever *ret = NULL;
    const char *queries = cli_get(a, "queries");
    unsigned jobs = 0;
    unsigned long k = 10;
    enum mt_status st;
    int rc;

    if (search_opts_read(a, &p, &jobs) < 0 ||
        cli_get_uint(a, "k", 1, 10000, &k) < 0)
        return 1;
    p.k = (uint32_t)k;
    if (!queries && a->npos == 0) {
        fprintf(stderr, "medtrust search: give a QUERY or --queries FILE\n"
                        "Try 'medtrust search --help'.\n");
        return 1;
    }
    /* a batch opens the index and embedder at once; one query lazily, so
     * its error is the search's own */
    st = search_open_retriever(a, &p, !queries, &ret, &err);
    if (st != MT_OK)
        return cli_fail(&err, st);
    if (queries)
        rc = run_batch(ret, queries, &p, jobs);
    else
        rc = run_one(ret, a, &p);
    mt_retriever_close(ret);
    return rc;
}

const struct cli_verb cli_verb_search = {
    "search",
    "search a store's index with BM25, dense or hybrid retrieval",
    "--db DIR [OPTIONS] QUERY... | --queries FILE.jsonl",
    "BM25 uses the corpus's analyzer; k1 and b default to Anserini's BEIR\n"
    "settings. Hybrid search normalises each list by its top score and\n"
    "fuses them 0.7/0.3, as VerifAI does. With --json each hit is\n"
    "{\"rank\",\"doc_id\",\"chunk_id\",\"score\",\"title\",\"text\",\"source\"}"
    ";"
    "\nwith --queries each line is {\"query_id\",\"hits\":[...]}.",
    search_opts,
    search_run,
};
