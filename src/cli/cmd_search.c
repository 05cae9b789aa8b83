/* medtrust search: one query from the command line, or a JSONL batch with
 * --queries, printed as text or JSON lines. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/search_opts.h"
#include "medtrust/core.h"
#include "medtrust/retrieve.h"
#include "retrieve/hits_json.h"

static const struct cli_opt search_opts[] = {
    SEARCH_OPTS,
    CLI_PARAM_KEY("k", 'k', SEARCH_T),
    {"queries", 'q', "FILE",
     "JSONL of {\"id\",\"query\"}: one output line "
     "per query",
     0},
    {"json", 'j', NULL, "one JSON object per hit", 0},
    {"group", 'g', "documents|chunks",
     "documents (default): each document once, at its best passage's "
     "place, its other passages in \"more\" (k documents from the best 4k "
     "passages), as VerifAI and POST /v1/search list them; chunks: every "
     "passage, the ranked list retrieval-eval scores",
     0},
    {NULL, 0, NULL, NULL, 0},
};

/* Passages searched per document asked for with --group documents (as
 * the server's /v1/search). */
#define GROUP_DEPTH 4

/* 1 with --group documents (the default, as POST /v1/search), 0 with
 * chunks, -1 after saying what it takes. */
static int group_docs(const struct cli_args *a)
{
    const char *g = cli_get(a, "group");

    if (!g || strcmp(g, "documents") == 0)
        return 1;
    if (strcmp(g, "chunks") == 0)
        return 0;
    fprintf(stderr,
            "medtrust search: --group is documents or chunks, not "
            "'%s'\n",
            g);
    return -1;
}

static size_t want_k; /* documents asked for (0: --group chunks) */

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

static void on_result(void *user, const struct mtx_query *q, size_t i,
                      const struct mt_search_result *res, enum mt_status st,
                      const struct mt_error *err)
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
    if (want_k) {
        json_decref(hits);
        hits = mtx_hits_groups_json(res, want_k, NULL);
    }
    for (j = 0; hits && !want_k && j < res->n; j++)
        json_array_append_new(hits, mtx_hit_json(&res->hits[j], 0, NULL));
    print_json(json_pack("{s:s,s:o}", "query_id", q->id, "hits", hits));
}

static int run_batch(struct mt_retriever *ret, const char *path,
                     const struct mt_search_params *p, unsigned jobs)
{
    struct mt_error err = {MT_OK, ""};
    struct mtx_query *q = NULL;
    size_t n = 0;
    enum mt_status st = mtx_queries_load(path, &q, &n, &err);

    if (st == MT_OK)
        st = search_batch_cli(ret, q, n, p, jobs, on_result, NULL, &err);
    mtx_queries_free(q, n);
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

/* The groups as JSON lines, or as text: each document's best passage
 * with how many more it has among the hits. */
static enum mt_status print_groups(const struct mt_search_result *r, int json)
{
    json_t *g = mtx_hits_groups_json(r, want_k, NULL);
    size_t i;

    if (!g)
        return MT_ENOMEM;
    for (i = 0; i < json_array_size(g); i++) {
        json_t *h = json_array_get(g, i);
        const char *t = json_string_value(json_object_get(h, "text"));
        const char *title = json_string_value(json_object_get(h, "title"));
        if (json) {
            print_json(json_incref(h));
            continue;
        }
        printf("%2zu. %.4f  %s  [%s]  %s\n", i + 1,
               json_number_value(json_object_get(h, "score")),
               json_string_value(json_object_get(h, "doc_id")),
               json_string_value(json_object_get(h, "source")),
               title ? title : "");
        printf("    %.240s%s\n", t, strlen(t) > 240 ? "..." : "");
        if (json_array_size(json_object_get(h, "more")))
            printf("    (%zu more passages of this document)\n",
                   json_array_size(json_object_get(h, "more")));
    }
    if (!json)
        printf("%zu documents from %zu hits in %.2f ms\n", json_array_size(g),
               r->n, r->elapsed_ms);
    json_decref(g);
    return MT_OK;
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
    if (st == MT_OK && want_k)
        st = print_groups(r, cli_get(a, "json") != NULL);
    else if (st == MT_OK && cli_get(a, "json"))
        for (i = 0; i < r->n; i++)
            print_json(mtx_hit_json(&r->hits[i], 0, NULL));
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

    int docs = group_docs(a);

    if (docs < 0 || search_opts_read(a, &p, &jobs) < 0)
        return 1;
    k = p.k;
    want_k = docs ? k : 0;
    if (docs) { /* k documents from the best passages, as /v1/search,
                 * within the most passages a search returns */
        uint32_t most =
            (uint32_t)mt_param_find(&mt_search_param_table, "k", 1)->hi;
        p.k = k > most / GROUP_DEPTH ? most : (uint32_t)(k * GROUP_DEPTH);
    }
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
    "fuses them 0.7/0.3, as VerifAI does. Hits are grouped by document\n"
    "(--group documents, the default, as VerifAI lists them and POST\n"
    "/v1/search answers): each document once at its best passage, ranked\n"
    "among the documents, \"N more passages\" of it among the hits. With\n"
    "--json each hit is {\"rank\",\"doc_id\",\"chunk_id\",\"score\",\n"
    "\"title\",\"text\",\"source\",\"more\":[{\"rank\",\"chunk_id\",\n"
    "\"score\",\"text\"}]} (--group chunks: every passage, without\n"
    "\"more\"); with --queries each line is {\"query_id\",\"hits\":[...]},\n"
    "grouped the same way.",
    search_opts,
    search_run,
};
