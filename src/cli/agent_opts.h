/* Options shared by `check` and `mediqa`: the strategy, models, prompts
 * and the paper's knobs, read into struct mt_agent_params. */
#ifndef MT_CLI_AGENT_OPTS_H
#define MT_CLI_AGENT_OPTS_H

#include "cli/cli.h"
#include "medtrust/check.h"

#define AGENT_T (&mt_agent_param_table)

/* The numeric rows are generated from mt_agent_param_table. */
#define AGENT_OPTS                                                             \
    {"strategy", 'S', "S", "default react-reflex (Strategies below)", 0},      \
        {"db", 'd', "DIR",                                                     \
         "corpus store searched by react-reflex (required by react-reflex "    \
         "unless --no-retrieval)",                                             \
         0},                                                                   \
        {"no-retrieval", 0, NULL,                                              \
         "run react-reflex without a corpus: search finds nothing (named in "  \
         "the trace and the run record)",                                      \
         0},                                                                   \
        {"source", 0, "NAME",                                                  \
         "search only this corpus source (repeatable: their union)", 1},       \
        CLI_PARAM("evidence-tokens", AGENT_T),                                 \
        {"llm", 'l', "SPEC",                                                   \
         "model for every role: openai:URL#MODEL or "                          \
         "gguf:PATH (default MEDTRUST_LLM; MEDTRUST_LLM_<ROLE> wins)",         \
         0},                                                                   \
        CLI_LORA_OPT,                                                          \
        {"prompts", 0, "DIR",                                                  \
         "NAME.txt files here replace built-in "                               \
         "prompts",                                                            \
         0},                                                                   \
        {"few-shot", 0, "FILE",                                                \
         "MEDEC-format CSV (a training split) whose first rows are single's "  \
         "fixed examples",                                                     \
         0},                                                                   \
        {"examples", 0, "FILE",                                                \
         "MEDEC-format CSV (a training split): single takes the --shots "      \
         "notes nearest to each note as examples, with their Reasoning "       \
         "column when there is one (MedPrompt kNN; embedded with "             \
         "--embedder, else the --db index's embedder)",                        \
         0},                                                                   \
        CLI_PARAM("shots", AGENT_T),                                           \
        {"search-mode", 0, "MODE",                                             \
         "MedReAct's search: dense, hybrid or bm25 (default hybrid when the "  \
         "index has vectors, else bm25; the trace says which ran)",            \
         0},                                                                   \
        {"embedder", 'e', "SPEC",                                              \
         "query embedder for dense/hybrid search and --examples (default: "    \
         "the index's own)",                                                   \
         0},                                                                   \
        CLI_PARAM("dims", AGENT_T),                                            \
        {"reranker", 0, "SPEC",                                                \
         "cross-encoder reranking the --retrieve-k hits to --rerank-k: "       \
         "gguf:PATH, onnx:DIR or openai:URL#MODEL",                            \
         0},                                                                   \
        CLI_PARAM("steps", AGENT_T), CLI_PARAM("rounds", AGENT_T),             \
        CLI_PARAM("evaluators", AGENT_T), CLI_PARAM("accept-mean", AGENT_T),   \
        CLI_PARAM("accept-min", AGENT_T), CLI_PARAM("eval-quorum", AGENT_T),   \
        CLI_PARAM("allow-fallbacks", AGENT_T),                                 \
        {"on-exhausted", 0, "RULE",                                            \
         "after --rounds rejected rounds: no-error (default, the paper) or "   \
         "last-answer (the last answer MedEval reviewed, as the published "    \
         "code)",                                                              \
         0},                                                                   \
        CLI_PARAM("retrieve-k", AGENT_T), CLI_PARAM("rerank-k", AGENT_T),      \
        CLI_PARAM("passages-last", AGENT_T),                                   \
        CLI_PARAM("temperature", AGENT_T), CLI_PARAM("seed", AGENT_T),         \
        CLI_PARAM("eval-temperature", AGENT_T),                                \
        CLI_PARAM("max-tokens", AGENT_T),                                      \
        {"role-temperature", 0, "ROLE=X",                                      \
         "one role's temperature (react, eval, reflect, parser, guard, "       \
         "single; IryoNLP's configs: react=0.1 eval=1.0 "                      \
         "reflect=0.1 parser=0)",                                              \
         1},                                                                   \
        {"role-max-tokens", 0, "ROLE=N",                                       \
         "one role's completion budget (IryoNLP's configs: "                   \
         "react=1024 eval=1200 reflect=512 parser=512)",                       \
         1},                                                                   \
        {"no-grammar", 0, NULL,                                                \
         "let gguf models answer freely (default: a grammar from each "        \
         "role's reply schema keeps their JSON well-formed)",                  \
         0},                                                                   \
        CLI_MODEL_CALL_OPTS

/* Reads the options into p (defaults first); prints an error and returns
 * -1 when one is invalid. */
int agent_opts_read(const struct cli_args *a, struct mt_agent_params *p);

#endif
