/* Options shared by `check` and `mediqa`: the strategy, models, prompts
 * and the paper's knobs, read into struct mt_agent_params. */
#ifndef MT_CLI_AGENT_OPTS_H
#define MT_CLI_AGENT_OPTS_H

#include "cli/cli.h"
#include "medtrust/check.h"

#define AGENT_OPTS                                                             \
    {"strategy", 'S', "S", "react-reflex (default), guards or single", 0},     \
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
        {"evidence-tokens", 0, "N",                                            \
         "most tokens of the trajectory and passages shown to MedEval and "    \
         "MedReFlex, less when the model's context leaves less; the oldest "   \
         "search's lowest-ranked passages are dropped first (12000)",          \
         0},                                                                   \
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
        {"shots", 0, "K", "examples per note for single, 1..64 (3)", 0},       \
        {"search-mode", 0, "MODE",                                             \
         "MedReAct's search: dense, hybrid or bm25 (default hybrid when the "  \
         "index has vectors, else bm25; the trace says which ran)",            \
         0},                                                                   \
        {"embedder", 'e', "SPEC",                                              \
         "query embedder for dense/hybrid search and --examples (default: "    \
         "the index's own)",                                                   \
         0},                                                                   \
        {"dims", 0, "N",                                                       \
         "truncate query vectors to N dimensions (Matryoshka; the paper: "     \
         "256), which must be the index's (default: the index's)",             \
         0},                                                                   \
        {"reranker", 0, "SPEC",                                                \
         "cross-encoder reranking the --retrieve-k hits to --rerank-k: "       \
         "gguf:PATH or openai:URL#MODEL",                                      \
         0},                                                                   \
        {"steps", 0, "N", "MedReAct steps per round, 1..32 (default 4)", 0},   \
        {"rounds", 0, "M", "MedReFlex rounds, 1..32 (default 5)", 0},          \
        {"evaluators", 0, "N", "MedEval samples, 1..64 (default 5)", 0},       \
        {"accept-mean", 0, "X", "accept when mean final >= X (3.8)", 0},       \
        {"accept-min", 0, "X", "... and minimum final >= X (3)", 0},           \
        {"eval-quorum", 0, "N",                                                \
         "usable MedEval reviews a round needs to be accepted (3; at most "    \
         "--evaluators)",                                                      \
         0},                                                                   \
        {"on-exhausted", 0, "RULE",                                            \
         "after --rounds rejected rounds: no-error (default, the paper) or "   \
         "last-answer (the last answer MedEval reviewed, as the published "    \
         "code)",                                                              \
         0},                                                                   \
        {"retrieve-k", 0, "N", "search hits before reranking (50)", 0},        \
        {"rerank-k", 0, "N", "search hits shown to the agent (20)", 0},        \
        {"temperature", 0, "X", "agents' temperature (0)", 0},                 \
        {"seed", 0, "N", "sampling seed of the model calls (42)", 0},          \
        {"eval-temperature", 0, "X", "MedEval temperature (1.0)", 0},          \
        {"max-tokens", 0, "N", "completion budget per call (1024)", 0},        \
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
