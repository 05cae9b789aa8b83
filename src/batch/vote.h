/* corpus vote's question (batch layer): IryoNLP's MedWiki step asks an
 * LLM, several times at temperature 1.0, whether an item (a BERTopic
 * topic's top words, or a document) is medical. Each vote is one call
 * through llmcall's loop in its plain-text mode: a reply whose first
 * word is neither yes nor no is asked once more ("Answer with one word:
 * yes or no."), a failed request repeated. Names: mtx_ (internal). */
#ifndef MTX_BATCH_VOTE_H
#define MTX_BATCH_VOTE_H

#include <stddef.h>

#include "batch/rows.h"
#include "medtrust/model.h"

/* The user part of the built-in prompt corpus_vote.txt (its system part
 * is not sent), a new string; NULL with err on failure. */
char *mtx_vote_builtin_prompt(struct mt_error *err);

/* The question in 'path' (text with a {{text}} placeholder), a new
 * string; NULL with err naming the file when it cannot be read or has
 * no placeholder. */
char *mtx_vote_prompt_file(const char *path, struct mt_error *err);

/* Asks 'votes' times whether 'text' is medical, with {{text}} of 'tmpl'
 * replaced by it; vote v is its own call with seed 1000 + v (the call
 * cache keeps each). Returns the item's result, a JSON object's text
 * {"votes":["yes"|"no"|"other",...],"yes":N,"keep":B} (mt_free), keep
 * when at least 'min_yes' are yes (*keep too); NULL with err when a
 * call failed. Thread-safe on one model. */
char *mtx_vote_item(struct mt_llm *llm, const char *tmpl, const char *text,
                    unsigned votes, unsigned min_yes, int *keep,
                    struct mt_error *err);

/* ==== The vote run (vote_run.c) ==== */

/* `medtrust corpus vote`: every item of 'input' voted on (mtx_vote_item)
 * by the rows runner, each finished item journaled in OUT.journal, and
 * OUT written atomically, one {"id",...result} line an item voted, in
 * input order. */
struct mtx_vote_params {
    const char *input;  /* JSONL items {"id", "text"|"words"|"title"} */
    const char *out;    /* the votes file; the journal is OUT.journal */
    const char *prompt; /* the question's file, or NULL: the built-in */
    unsigned votes;     /* questions an item, 1..64 (5) */
    unsigned min_yes;   /* yes votes an item needs to be kept, <= votes (4) */
    int resume;         /* keep the items OUT.journal holds */
    struct mtx_rows_params rows; /* the model, --jobs, the bar; its
                                    journal and resume are set here */
};

struct mtx_vote_stats {
    size_t items;  /* read from the input */
    size_t kept;   /* voted (or resumed) "keep": true */
    size_t failed; /* not voted on (a call failed; named in the log) */
};

/* Defaults above; rows as mtx_rows_default_params with role "vote". */
void mtx_vote_default_params(struct mtx_vote_params *p);

/* Runs the vote. Items that could not be voted on are left out of OUT
 * and counted in s->failed (a rerun with resume asks only for them);
 * the result is MT_OK then. Errors name the file, line or item. */
enum mt_status mtx_vote_run(const struct mtx_vote_params *p,
                            struct mtx_vote_stats *s, struct mt_error *err);

/* `medtrust corpus filter`: the documents of 'input' (JSONL) whose
 * 'label' field (a string or integer; the document's "id" when it has no
 * such field) names an item 'keep' (a votes file) has "keep": true, in
 * order, to 'out' (atomically), or to stdout when 'out' is NULL.
 * counts[1] gets the documents kept, counts[0] those dropped. */
enum mt_status mtx_vote_filter(const char *keep, const char *input,
                               const char *label, const char *out,
                               size_t counts[2], struct mt_error *err);

#endif
