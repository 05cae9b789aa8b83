/* `check --verify-correction` (issue 32): the verifier of a proposed
 * correction, an answerer (medtrust/verify.h's mt_verify_correction)
 * opened beside the checker and set as its verify_correction hook. */
#ifndef MT_CLI_CORRECTION_H
#define MT_CLI_CORRECTION_H

#include "cli/cli.h"
#include "medtrust/check.h"
#include "medtrust/qa.h"

#define CORRECTION_OPTS                                                        \
    {"nli", 0, "SPEC",                                                         \
     "verifier of the correction: gguf:PATH or onnx:DIR "                      \
     "[?preset=mnli|verifai] or llm "                                          \
     "(the judge, MEDTRUST_LLM_JUDGE, else --llm); default MEDTRUST_NLI",      \
     0},                                                                       \
        {"verify-correction", 0, NULL,                                         \
         "verify the correction and the original sentence against the "        \
         "run's passages (guards, single: a search); on by default when "      \
         "--nli or MEDTRUST_NLI names a verifier",                             \
         0},                                                                   \
    {                                                                          \
        "no-verify-correction", 0, NULL, "do not verify the correction", 0     \
    }

/* Opens the verifier when --verify-correction is on (given, or by default
 * when --nli or MEDTRUST_NLI names one, unless --no-verify-correction)
 * over p's corpus, models and embedder, and sets p's hook to it. *q is
 * NULL when it is off; close it with mt_qa_close after the checker. */
enum mt_status correction_open(const struct cli_args *a,
                               struct mt_agent_params *p, struct mt_qa **q,
                               struct mt_error *err);

#endif
