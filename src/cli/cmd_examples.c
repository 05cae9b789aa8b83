/* medtrust examples --explain: IryoNLP's reasoning.py as a tool. For each
 * training note of a MEDEC-format CSV the model is asked once, given the
 * note and its gold answer, for the reasoning that leads to that answer;
 * the file comes back with a Reasoning column, which the single
 * strategy's few-shot examples (--examples, --few-shot) then show. Calls
 * go through the call cache (--cache), so a rerun costs no model calls.
 * The run is the batch layer's (batch/explain.h); this file reads the
 * options and prints the summary. */
#include <stdio.h>

#include "batch/explain.h"
#include "cli/cli.h"
#include "medtrust/core.h"
#include "medtrust/model.h"

static const struct cli_opt examples_opts[] = {
    {"explain", 'e', NULL,
     "ask the model, once a note, for the reasoning that leads from the "
     "note to its gold answer, into a Reasoning column",
     0},
    {"data", 'd', "FILE",
     "the training notes, a MEDEC-format CSV (Sentences, Error Flag, Error "
     "Sentence ID, Corrected Sentence; Text ID and Error Sentence when "
     "present)",
     0},
    {"out", 'o', "FILE",
     "the examples file: the input's columns and Reasoning (written "
     "atomically; give it to --examples or --few-shot)",
     0},
    {"llm", 'l', "SPEC",
     "openai:URL#MODEL or gguf:PATH (default $MEDTRUST_LLM)", 0},
    CLI_LORA_OPT,
    {"jobs", 'J', "N", "notes in parallel, 1..64 (default 4)", 0},
    {"temperature", 0, "X",
     "sampling temperature, 0..2 (default 1.0, as IryoNLP's published "
     "correct_reasoning config; 0 for a reproducible file)",
     0},
    {"max-tokens", 0, "N",
     "the reasoning's token budget, 1..1000000 (default 512, as IryoNLP's "
     "published config)",
     0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    CLI_MODEL_CALL_OPTS,
    {NULL, 0, NULL, NULL, 0},
};

/* ==== The run ==== */

static int explain_opts(struct cli_args *a, struct mtx_explain_run_params *p,
                        struct mt_llm_params *lp)
{
    unsigned long j = 4;
    unsigned long mt;

    mtx_explain_run_default_params(p);
    mt = p->ep.max_tokens;
    if (cli_get_uint(a, "jobs", 1, 64, &j) < 0 ||
        cli_get_float(a, "temperature", 0, 2, &p->ep.temperature) < 0 ||
        cli_get_uint(a, "max-tokens", 1, 1000000, &mt) < 0)
        return -1;
    p->ep.max_tokens = (unsigned)mt;
    if (!cli_get(a, "explain") || !cli_get(a, "data") || !cli_get(a, "out")) {
        fprintf(stderr, "medtrust examples: --explain, --data and --out are "
                        "required\nTry 'medtrust examples --help'.\n");
        return -1;
    }
    p->data = cli_get(a, "data");
    p->out = cli_get(a, "out");
    return cli_rows_params_read(a, "explain", (unsigned)j, &p->rows, lp);
}

static int examples_run(struct cli_args *a)
{
    struct mtx_explain_run_params p;
    struct mtx_explain_stats s;
    struct mt_llm_params lp;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    if (a->npos || explain_opts(a, &p, &lp) < 0)
        return 1;
    st = mtx_explain_run(&p, &s, &err);
    if (st == MT_OK)
        fprintf(stderr, "examples: %zu notes, %zu explained, %zu failed\n",
                s.notes, s.notes - s.failed, s.failed);
    if (st == MT_OK && s.failed)
        st = mt_fail(&err, MT_EIO,
                     "%zu notes have no reasoning (their model calls failed: "
                     "see above); run again with the same --cache to ask "
                     "only for those",
                     s.failed);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_examples = {
    "examples",
    "write few-shot examples for the single strategy (model-written reasoning)",
    "--explain --data TRAIN.csv --out EXAMPLES.csv [--llm SPEC] "
    "[--cache FILE] [--jobs N] [--temperature X] [--max-tokens N]",
    "--explain asks the model once for each training note of a MEDEC-format\n"
    "CSV, given the note and its gold answer (the wrong sentence and its\n"
    "correction, or no error), for the reasoning that leads to that answer,\n"
    "as IryoNLP's reasoning.py does: the model is sent its published input\n"
    "(CLINICAL NOTE: the note's Sentences, then OUTPUT: the gold answer as\n"
    "JSON) at its published temperature 1.0 and 512 tokens; the instruction\n"
    "(built-in prompt explain.txt) is medtrust's, IryoNLP's not being\n"
    "published. OUT gets the input's columns and a Reasoning column (an\n"
    "existing one is replaced); mediqa/check --strategy single --examples\n"
    "OUT (or --few-shot OUT) shows it in each worked example. A note whose\n"
    "call fails is named and its Reasoning left empty, never invented: the\n"
    "file is still written and the exit status is 1. With --cache FILE a\n"
    "rerun asks only for the notes not yet answered.",
    examples_opts,
    examples_run,
};
