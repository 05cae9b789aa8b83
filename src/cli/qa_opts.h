/* Options shared by `ask` and `qa-eval` (verified question answering),
 * read into struct mt_qa_params, and the parallel, resumable batch of
 * questions both verbs run. */
#ifndef MT_CLI_QA_OPTS_H
#define MT_CLI_QA_OPTS_H

#include "batch/qa_batch.h"
#include "cli/cli.h"
#include "cli/search_opts.h" /* CLI_META_FILTER_OPTS */
#include "medtrust/qa.h"

#define QA_T (&mt_qa_param_table)

/* The numeric rows are generated from mt_qa_param_table, but K_ROW, the
 * -k row: ask's and qa-eval's from mt_qa_param_table too (QA_OPTS),
 * verify's from mt_verify_param_table. */
#define QA_OPTS QA_OPTS_K(CLI_PARAM_KEY("top-k", 'k', QA_T))
#define QA_OPTS_K(K_ROW)                                                       \
    {"db", 'd', "DIR", "corpus store to search (required to answer)", 0},      \
        {"llm", 'l', "SPEC",                                                   \
         "answer model: openai:URL#MODEL or gguf:PATH "                        \
         "(default MEDTRUST_LLM; MEDTRUST_LLM_QA wins)",                       \
         0},                                                                   \
        CLI_LORA_OPT,                                                          \
        {"nli", 0, "SPEC",                                                     \
         "verifier: gguf:PATH or onnx:DIR [?preset=mnli|verifai] (NLI "        \
         "classifier; "                                                        \
         "also ?labels=A,B,C&pair=claim-first|evidence-first), llm "           \
         "(prompted judge, MEDTRUST_LLM_JUDGE) or minicheck:SPEC (a "          \
         "MiniCheck model, e.g. Bespoke-MiniCheck-7B: Yes/No per sentence); "  \
         "default MEDTRUST_NLI, else llm",                                     \
         0},                                                                   \
        {"embedder", 'e', "SPEC",                                              \
         "query and claim embedder: use-lite, "                                \
         "gguf:PATH, openai:URL#MODEL or none (default: the index's)",         \
         0},                                                                   \
        {"reranker", 0, "SPEC",                                                \
         "cross-encoder: retrieve --rerank "                                   \
         "documents, keep -k",                                                 \
         0},                                                                   \
        CLI_PARAM("rerank", QA_T), K_ROW, CLI_PARAM("w-lex", QA_T),            \
        CLI_PARAM("w-sem", QA_T),                                              \
        {"attribution", 0, "RULE",                                             \
         "an uncited sentence between two claims joins the one whose "         \
         "cited abstracts hold the closest sentence (sentence, default: "      \
         "VerifAI's blog) or whose cited document is closest whole "           \
         "(document: VerifAI's published code)",                               \
         0},                                                                   \
        CLI_VERIFAI_LEX_OPTS(QA_T),                                            \
        {"source", 's', "NAME", "only documents of this source", 0},           \
        CLI_PARAM("year-from", QA_T), CLI_PARAM("year-to", QA_T),              \
        CLI_META_FILTER_OPTS,                                                  \
        {"search-mode", 0, "MODE",                                             \
         "bm25, dense or hybrid (default hybrid when the index has "           \
         "vectors for the embedder, else bm25)",                               \
         0},                                                                   \
        {"label", 0, "FMT",                                                    \
         "citation label, {id} = document id "                                 \
         "(default PUBMED:{id})",                                              \
         0},                                                                   \
        CLI_PARAM("max-tokens", QA_T), CLI_PARAM("temperature", QA_T),         \
        CLI_PARAM("doc-chars", QA_T), CLI_PARAM("max-question", QA_T),         \
        {"prompts", 0, "DIR",                                                  \
         "qa_*.txt files here replace built-in "                               \
         "prompts",                                                            \
         0},                                                                   \
        CLI_MODEL_CALL_OPTS

/* Reads the options into p (defaults first); prints an error and returns
 * -1 when one is invalid. */
int qa_opts_read(const struct cli_args *a, struct mt_qa_params *p);

/* What ask and verify take besides the model options: VERB names the
 * command in usage errors, INPUT its positional argument ("QUESTION",
 * "TEXT") and GIVE what to say when it is missing. */
struct qa_run_input {
    const char *verb;
    const char *input;
    const char *give;
};

/* Reads qa_opts_read's options, --jobs and --limit, and checks --db and
 * the input (a positional argument, or --batch with --out and none).
 * 0, or 1 after saying why (a usage error names the verb's --help). */
int qa_run_args(const struct cli_args *a, const struct qa_run_input *in,
                struct mt_qa_params *p, unsigned long *jobs,
                unsigned long *limit);

/* Names the failed questions of v on stderr ('label': the verb). */
void qa_batch_failed_ids(const char *label, const struct mtx_qa_item *v,
                         size_t n);

/* The batch run of `ask --batch` and `qa-eval`: loads up to 'limit'
 * questions from the file of option 'input', answers them (journal
 * OUT.journal when --out is given; --resume, --no-progress; 'label' on
 * the progress bar) and writes --out when given. *v and *n are the
 * caller's to free (mtx_qa_items_free), whatever the result. The batch
 * itself is the library's (batch/qa_batch.h). */
enum mt_status qa_batch_file(const struct cli_args *a, const char *input,
                             const char *label, struct mt_qa *q, unsigned jobs,
                             size_t limit, struct mtx_qa_item **v, size_t *n,
                             struct mtx_items_stats *bs, struct mt_error *err);

/* qa-eval --verify FILE.csv (src/cli/qa_eval_verify.c): verifies each
 * claim of a HealthVer/SciFact-shaped CSV as `medtrust verify` does (or,
 * with --given-evidence, the gold pair alone) and prints evidence
 * recall@k, accuracy, macro-F1, the confusion matrix and bootstrap
 * intervals. MT_EMODEL after the report when a claim failed. */
enum mt_status qa_eval_verify(const struct cli_args *a, struct mt_qa *q,
                              unsigned jobs, size_t limit,
                              struct mt_error *err);

/* qa-eval --claims FILE.csv (the same file): the verifier alone on each
 * (claim, evidence) pair; prints accuracy and macro-F1. */
enum mt_status qa_eval_claims(const struct cli_args *a, struct mt_qa *q,
                              unsigned jobs, size_t limit,
                              struct mt_error *err);

#endif
