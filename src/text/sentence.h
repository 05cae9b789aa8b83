/* Sentence splitting for clinical notes, and the parser for the MEDEC
 * `Sentences` field ("<id> <sentence>" in newline or inline form). */
#ifndef MT_TEXT_SENTENCE_H
#define MT_TEXT_SENTENCE_H

#include <stddef.h>

#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A byte range [start, end) into the text it was computed from. */
struct mt_span {
    size_t start;
    size_t end;
};

/* Splits text[0..n) into sentences: byte spans trimmed of whitespace, in
 * order, never empty. Ends a sentence at . ! ? (and their CJK/Arabic
 * forms), a blank line, or a line that starts a numbered or bulleted
 * item; keeps abbreviations ("Dr.", "e.g.", "b.i.d.", "mg. twice"),
 * decimals ("38.5"), list numbers ("1. "), and takes closing quotes and
 * brackets after the stop into the sentence. On MT_OK *out is an array of
 * *count spans (NULL when 0) that the caller frees with mt_free; on
 * MT_ENOMEM both are left unchanged. Thread-safe. */
enum mt_status mtx_sentences_split(const char *text, size_t n,
                                   struct mt_span **out, size_t *count,
                                   struct mt_error *err);

/* One sentence of a MEDEC `Sentences` field; span indexes the field. */
struct mt_medec_sentence {
    int id;
    struct mt_span span;
};

/* Parses a MEDEC `Sentences` field. Two forms exist: one "<id> text" a
 * line, and all on one line with inline ids ("0 A. 1 B."). Ids start at 0
 * and rise by 1, which is how a number inside a sentence ("gave 2 tabs")
 * is told from the next id: a candidate id must be the next expected one
 * and stand at a plausible boundary (after a newline in the line form;
 * after . ! ? ; or the Arabic comma, else after , or : or before a
 * capital, else where id+1 follows later). On MT_OK *out holds *count
 * sentences (caller frees with mt_free); the field must start with id 0,
 * else MT_EPARSE naming the problem; an empty sentence is also
 * MT_EPARSE. On failure *out and *count are unchanged. Thread-safe. */
enum mt_status mtx_medec_sentences_parse(const char *field, size_t n,
                                         struct mt_medec_sentence **out,
                                         size_t *count, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
