/* examples --explain's question (batch layer): IryoNLP's reasoning.py
 * asks the model, given a training note and its gold answer, for the
 * reasoning that leads to that answer, which the single strategy's
 * few-shot examples then show. One call through llmcall's loop (built-in
 * prompt explain.txt, whose user part is reasoning.py's published input
 * layout; temperature and token budget those IryoNLP published); an empty
 * reply is no answer and is asked again once, as a failed request is.
 * Names: mtx_. */
#ifndef MTX_BATCH_EXPLAIN_H
#define MTX_BATCH_EXPLAIN_H

#include <stddef.h>

#include "batch/rows.h"
#include "llmcall/prompt.h"
#include "medtrust/model.h"

/* A MEDEC-format training note: its fields as the CSV has them ("" for a
 * column the file lacks). */
struct mtx_explain_note {
    const char *id;        /* Text ID, or what names the note */
    const char *sentences; /* Sentences: "0 ...\n1 ..." */
    const char *flag;      /* Error Flag: "1" when it holds an error */
    const char *sid;       /* Error Sentence ID */
    const char *error;     /* Error Sentence */
    const char *corrected; /* Corrected Sentence */
};

/* The call's settings. */
struct mtx_explain_params {
    float temperature;   /* 1.0, correct_reasoning's config.json */
    unsigned max_tokens; /* 512, the same */
};

void mtx_explain_default_params(struct mtx_explain_params *p);

/* The model's reasoning for note 'n' (trimmed, a new string) into *out.
 * MT_EPARSE naming the field when the Sentences do not parse; the call's
 * failure otherwise. ep NULL: the defaults. Thread-safe on one model and
 * prompt set. */
enum mt_status mtx_explain_note(const struct mt_prompts *p, struct mt_llm *llm,
                                const struct mtx_explain_params *ep,
                                const struct mtx_explain_note *n, char **out,
                                struct mt_error *err);

/* ==== The run (explain_run.c) ==== */

/* `medtrust examples --explain`: every note of the training CSV 'data'
 * (refused when its name looks like an evaluation split) explained on
 * the rows runner, then 'out' written atomically: the input's columns
 * but an old Reasoning, then Reasoning (empty for a note whose call
 * failed, which is named in the log and counted). */
struct mtx_explain_run_params {
    const char *data; /* the training notes, a MEDEC-format CSV */
    const char *out;  /* the examples file */
    struct mtx_explain_params ep;
    struct mtx_rows_params rows; /* the model, --jobs, the bar */
};

struct mtx_explain_stats {
    size_t notes;  /* read */
    size_t failed; /* with no reasoning */
};

/* ep's defaults; rows as mtx_rows_default_params with role "explain". */
void mtx_explain_run_default_params(struct mtx_explain_run_params *p);

/* The file is written when only some notes failed (MT_OK, s->failed);
 * errors name the file, line or column. */
enum mt_status mtx_explain_run(const struct mtx_explain_run_params *p,
                               struct mtx_explain_stats *s,
                               struct mt_error *err);

#endif
