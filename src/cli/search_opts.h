/* Search options shared by `search` and `retrieval-eval`. */
#ifndef MT_CLI_SEARCH_OPTS_H
#define MT_CLI_SEARCH_OPTS_H

#include "cli/cli.h"
#include "medtrust/index.h"
#include "retrieve/search_batch.h"

/* The metadata filters (VerifAI's PubMed filters), shared by search,
 * retrieval-eval, ask and qa-eval. */
/* clang-format off */
#define CLI_META_FILTER_OPTS                                                   \
    {"author", 0, "TEXT",                                                      \
     "only documents with an author (metadata authors) containing "            \
     "TEXT, case-insensitive", 0},                                             \
    {"journal", 0, "TEXT",                                                     \
     "only documents whose metadata journal contains TEXT", 0},                \
    {"pub-type", 0, "TEXT",                                                    \
     "only documents with a publication type (metadata "                       \
     "publication_types) containing TEXT", 0}
/* clang-format on */

/* VerifAI's fusion depth (settings table T's "fusion-depth") and query
 * stop words, shared by search, retrieval-eval, ask and qa-eval. */
/* clang-format off */
#define CLI_VERIFAI_LEX_OPTS(t)                                                \
    CLI_PARAM("fusion-depth", t),                                              \
    {"nltk-stopwords", 0, NULL,                                                \
     "lexical query drops NLTK's 179 English stop words (VerifAI); "           \
     "default: the index analyzer's own (Lucene's 33)", 0}
/* clang-format on */

/* 1 when --nltk-stopwords is given. */
int cli_nltk_stopwords(const struct cli_args *a);

/* Option table rows for the search parameters; spliced into each verb's
 * table by the SEARCH_OPTS macro. The numeric rows are generated from
 * mt_search_param_table. */
#define SEARCH_T (&mt_search_param_table)
/* clang-format off */
#define SEARCH_OPTS                                                            \
    {"db", 'd', "DIR", "store directory (required)", 0},                       \
    {"mode", 'm', "MODE", "bm25, dense or hybrid (default bm25)", 0},          \
    CLI_PARAM("k1", SEARCH_T), CLI_PARAM("b", SEARCH_T),                       \
    CLI_PARAM("w-lex", SEARCH_T), CLI_PARAM("w-sem", SEARCH_T),                \
    {"fusion", 0, "F", "hybrid fusion: linear or rrf (default linear)", 0},    \
    CLI_PARAM_KEY("retrieve", 'r', SEARCH_T), CLI_PARAM("ef", SEARCH_T),       \
    {"doc-sum", 0, NULL, "sum chunk scores per document (VerifAI)", 0},        \
    CLI_VERIFAI_LEX_OPTS(SEARCH_T),                                            \
    {"source", 's', "NAME", "only hits from this source", 0},                  \
    {"filter", 0, "KEY=MIN..MAX",                                              \
     "keep documents whose metadata number KEY is in range, e.g. "             \
     "year=2010..2015 (either end may be left out)", 0},                       \
    CLI_META_FILTER_OPTS,                                                      \
    {"embedder", 'e', "SPEC",                                                  \
     "query embedder for dense/hybrid (default: the index's query "            \
     "embedder when it records one, else the one it was built with)", 0},      \
    CLI_PARAM("rerank", SEARCH_T),                                             \
    {"reranker", 0, "SPEC",                                                    \
     "cross-encoder for --rerank: gguf:PATH, onnx:DIR or "                     \
     "openai:URL#MODEL (without one the order passes through)", 0},            \
    {"jobs", 'J', "N", "threads for --queries, 0 = all CPUs (default 0)", 0}, \
    CLI_PARAM("search-threads", SEARCH_T)
/* clang-format on */

/* Reads the shared options into p and *jobs (the settings table's rows
 * among a->opts, -k too where the verb takes it from the table); prints
 * an error and returns -1 when one is invalid. */
int search_opts_read(const struct cli_args *a, struct mt_search_params *p,
                     unsigned *jobs);

struct mt_retriever;

/* Opens the retriever for --db with the query embedder (--embedder, else
 * the index's own; none in BM25 mode) and --reranker, which sets p's
 * rerank depth to 50 when --rerank is absent. 'lazy' as in
 * mt_retriever_params. */
enum mt_status search_open_retriever(const struct cli_args *a,
                                     struct mt_search_params *p, int lazy,
                                     struct mt_retriever **out,
                                     struct mt_error *err);

/* Runs the search batch of `search --queries` and `retrieval-eval`
 * (mtx_search_batch_run) with a "queries" progress bar on stderr. */
enum mt_status search_batch_cli(struct mt_retriever *ret, struct mtx_query *q,
                                size_t n, const struct mt_search_params *p,
                                unsigned jobs, mtx_search_batch_fn fn,
                                void *user, struct mt_error *err);

#endif
