/* corpus vote's question (batch layer): IryoNLP's MedWiki step asks an
 * LLM, several times at temperature 1.0, whether an item (a BERTopic
 * topic's top words, or a document) is medical. Each vote is one call
 * through llmcall's loop in its plain-text mode: a reply whose first
 * word is neither yes nor no is asked once more ("Answer with one word:
 * yes or no."), a failed request repeated. Names: mtx_ (internal). */
#ifndef MTX_BATCH_VOTE_H
#define MTX_BATCH_VOTE_H

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

#endif
