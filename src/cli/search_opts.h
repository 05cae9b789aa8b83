/* Search options shared by `search` and `retrieval-eval`. */
#ifndef MT_CLI_SEARCH_OPTS_H
#define MT_CLI_SEARCH_OPTS_H

#include "cli/cli.h"
#include "medtrust/index.h"

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

/* VerifAI's fusion depth and query stop words, shared by search,
 * retrieval-eval, ask and qa-eval. */
/* clang-format off */
#define CLI_VERIFAI_LEX_OPTS                                                   \
    {"fusion-depth", 0, "N",                                                   \
     "hybrid: fuse only the first N chunks of each list, 1..100000 "           \
     "(default: the whole first stage; VerifAI fuses 10 abstracts)", 0},       \
    {"nltk-stopwords", 0, NULL,                                                \
     "lexical query drops NLTK's 179 English stop words (VerifAI); "           \
     "default: the index analyzer's own (Lucene's 33)", 0}
/* clang-format on */

/* Reads --fusion-depth and --nltk-stopwords; -1 (printed) when invalid. */
int cli_verifai_lex_read(const struct cli_args *a, uint32_t *fusion_depth,
                         int *nltk_stopwords);

/* Option table rows for the search parameters; spliced into each verb's
 * table by the SEARCH_OPTS macro. */
#define SEARCH_OPTS                                                            \
    {"db", 'd', "DIR", "store directory (required)", 0},                       \
        {"mode", 'm', "MODE", "bm25, dense or hybrid (default bm25)", 0},      \
        {"k1", 0, "X", "BM25 k1, 0..100 (default 0.9, Anserini BEIR)", 0},     \
        {"b", 0, "X", "BM25 b, 0..1 (default 0.4, Anserini BEIR)", 0},         \
        {"w-lex", 0, "X", "hybrid weight of BM25 (default 0.7, VerifAI)", 0},  \
        {"w-sem", 0, "X", "hybrid weight of dense (default 0.3, VerifAI)", 0}, \
        {"fusion", 0, "F", "hybrid fusion: linear or rrf (default linear)",    \
         0},                                                                   \
        {"retrieve", 'r', "N",                                                 \
         "first-stage depth per list, 1..100000 "                              \
         "(default 50)",                                                       \
         0},                                                                   \
        {"ef", 0, "N",                                                         \
         "HNSW search breadth for dense/hybrid, 1..10000 (default: the "       \
         "index's, from the segment size; more is slower and finds more)",     \
         0},                                                                   \
        {"doc-sum", 0, NULL, "sum chunk scores per document (VerifAI)", 0},    \
        CLI_VERIFAI_LEX_OPTS,                                                  \
        {"source", 's', "NAME", "only hits from this source", 0},              \
        {"filter", 0, "KEY=MIN..MAX",                                          \
         "keep documents whose metadata number KEY is in range, e.g. "         \
         "year=2010..2015 (either end may be left out)",                       \
         0},                                                                   \
        CLI_META_FILTER_OPTS,                                                  \
        {"embedder", 'e', "SPEC",                                              \
         "query embedder for dense/hybrid (default: the index's query "        \
         "embedder when it records one, else the one it was built with)",      \
         0},                                                                   \
        {"rerank", 0, "R",                                                     \
         "rerank stage: score the top R hits with the "                        \
         "reranker, keep the top k (IryoNLP: 50 -> 20)",                       \
         0},                                                                   \
        {"reranker", 0, "SPEC",                                                \
         "cross-encoder for --rerank: gguf:PATH, onnx:DIR or "                 \
         "openai:URL#MODEL (without one the order passes through)",            \
         0},                                                                   \
    {                                                                          \
        "jobs", 'J', "N",                                                      \
            "threads for --queries, 0 = all CPUs (default "                    \
            "0)",                                                              \
            0                                                                  \
    }

/* Reads the shared options into p and *jobs; prints an error and returns
 * -1 when one is invalid. */
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

#endif
