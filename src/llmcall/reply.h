/* Reading model replies: the JSON object inside prose or code fences, and
 * typed, bounds-checked field getters that tolerate common model habits
 * (numbers as strings, "yes"/"no", percentages for confidences). */
#ifndef MT_LLMCALL_REPLY_H
#define MT_LLMCALL_REPLY_H

#include <stddef.h>

#include <jansson.h>

#include "medtrust/core.h" /* struct mt_str */

/* Returns the JSON object in 'text': the whole text, else the body of a
 * ``` code fence, else the first balanced {...} that parses. NULL when
 * none; then 'why' (n bytes) says what went wrong. Caller json_decrefs. */
json_t *mtx_reply_extract(const char *text, char *why, size_t n);

/* Integer 'key' of o in [lo, hi] (an integral number or a numeric
 * string). Returns 0 and sets *v, or -1 when absent or invalid. */
int mtx_reply_int(const json_t *o, const char *key, long lo, long hi, long *v);
/* Boolean 'key': true/false, 1/0, or "true"/"yes"/"false"/"no". */
int mtx_reply_bool(const json_t *o, const char *key, int *v);
/* Confidence 'key' in [0,1]; values in (1,100] are read as percents. */
int mtx_reply_conf(const json_t *o, const char *key, double *v);
/* String 'key' (borrowed from o), or NULL when absent or not a string. */
const char *mtx_reply_str(const json_t *o, const char *key);

/* The JSON Schema of the reply the prompt named 'prompt' asks for (its
 * file name without .txt; guard_detect_1 and the arbiter share one), or
 * NULL when there is none. Static text. */
const char *mtx_reply_schema(const char *prompt);

/* The same schema for a note of 'nsents' sentences: "sentence_id" becomes
 * an enum of -1 and the note's ids, so a grammar cannot produce an id
 * that is out of range; and given the sentences ('sents', may be NULL),
 * guard_locate's quoted "sentence" becomes an enum of "NONE" and the
 * note's sentences, so a constrained decoder can only quote one verbatim
 * (MedGuards' localisation names a sentence of the note; a misquote
 * would fail the reply check and cost a retry). Which field a note bounds
 * is each schema's own entry in schemas.c's table. A new string
 * (mt_free), or NULL when the prompt has no schema; when memory runs out
 * while the bound schema is built, the unbound one (NULL only when even
 * its copy cannot be made). */
char *mtx_reply_schema_for(const char *prompt, const struct mt_str *sents,
                           size_t nsents);

#endif
