/* Internals of `medtrust verify` (src/qa/verify*.c): the text's sentences
 * and which of them are claims, the citations and quotes a sentence makes,
 * the verbatim quote check, and the per-text run. */
#ifndef MT_QA_VERIFY_INT_H
#define MT_QA_VERIFY_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/arena.h"
#include "medtrust/verify.h"
#include "qa/qa_int.h"
#include "text/sentence.h"

/* Quotes of fewer words are terms or scare quotes, not quotations. */
#define VF_QUOTE_MIN_WORDS 4
/* A line of at most this many words without a stop, before a line that
 * starts with a capital, is a heading. */
#define VF_HEADING_WORDS 8

/* A citation: what it names and how ("id": a corpus id or PMID, "doi",
 * "url"), the key as the store is asked for it. */
struct vf_cite {
    const char *field; /* static */
    const char *key;
};

/* One sentence read: the claim text without its citations, its
 * citations (unique, in order) and its quotations (without their marks). */
struct vf_sent {
    const char *text;
    struct vf_cite *cites;
    size_t ncites;
    const char **quotes;
    size_t nquotes;
};

/* Splits text[0..n) into sentences (mtx_sentences_split), and a heading
 * line (starts with '#', ends with ':', or VF_HEADING_WORDS words or fewer
 * with no stop before a line starting with a capital) off the sentence it
 * heads. *out (caller frees with mt_free) holds *count spans. */
enum mt_status mtx_vf_split(const char *text, size_t n, struct mt_span **out,
                            size_t *count, struct mt_error *err);

/* 1 when the sentence s[0..n) of text[0..tn) (s points into it) states
 * something: not a question (ends with '?'), not a heading (starts with
 * '#', ends with ':', or has no stop and stands on a line of its own
 * before more text), and at least min_words words. */
int mtx_vf_is_claim(const char *text, size_t tn, const char *s, size_t n,
                    uint32_t min_words);

/* Reads the sentence p[0..n): citations in [...] or (...) groups (every
 * item a citation: "PMID: N", a label pre + id + suf, a DOI, a URL, or,
 * in square brackets, bare digits) and standing in the text (PMID, label,
 * "doi:", a bare DOI, an http(s) URL); a doi.org URL cites its DOI, a
 * PubMed URL its PMID. Everything lives in 'a'. */
enum mt_status mtx_vf_parse(struct mt_arena *a, const char *p, size_t n,
                            const char *pre, const char *suf,
                            struct vf_sent *out);

/* Where 'quote' stands in 'doc': whitespace, quotation marks and dashes
 * normalised, ASCII letters compared case-insensitively, at word
 * boundaries; parts separated by an ellipsis must appear in order.
 * STITCHED: not so, but two or more runs of at least two of its words
 * each appear. NOT_FOUND otherwise, and when out of memory. */
enum mt_quote_status mtx_vf_quote(const char *quote, const char *doc);

/* The verdict over a claim's evidence ev[0..n) (docs/verify.md):
 * CONTRADICT when a document contradicts it with a score of at least
 * contradict_min, else FAILED when a judgement failed, else SUPPORT when
 * one supports it with at least support_min, else NO_EVIDENCE. *by gets
 * the deciding document (the highest score of the verdict's label), or
 * -1. */
enum mt_verdict mtx_vf_decide(const struct mt_verify_evidence *ev, size_t n,
                              float support_min, float contradict_min,
                              long *by);

/* Sentence s as its JSON object (mt_verify_result_json's); NULL when
 * out of memory. */
json_t *mtx_vf_sentence_json(const struct mt_verify_sentence *s);

/* Claim c as its JSON object (mt_verify_result_json's); NULL when out of
 * memory. */
json_t *mtx_vf_claim_json(const struct mt_verify_claim *c);

#endif
