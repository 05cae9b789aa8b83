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

#endif
