/* medtrust verify: any medical text checked sentence by sentence against
 * the corpus, with the question answerer's verifier (NLI classifier or
 * LLM judge) and retriever. Citations in the text are honoured, quotes
 * checked verbatim first. docs/verify.md describes the rule. */
#ifndef MEDTRUST_VERIFY_H
#define MEDTRUST_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "qa.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A claim's verdict, and a sentence's status (the worst of its claims',
 * in the order CONTRADICT, MISQUOTED, FAILED, NO_REFERENCE, NO_EVIDENCE,
 * SUPPORT; NOT_A_CLAIM for questions, headings and short fragments).
 * FAILED: a model call the verdict needed failed (never NO_EVIDENCE);
 * NO_REFERENCE: every document the claim cites is unknown to the store;
 * MISQUOTED: a quotation attributed to a cited document is not in it
 * verbatim (or is stitched from separate places). */
enum mt_verdict {
    MT_VERDICT_SUPPORT,
    MT_VERDICT_CONTRADICT,
    MT_VERDICT_NO_EVIDENCE,
    MT_VERDICT_NO_REFERENCE,
    MT_VERDICT_MISQUOTED,
    MT_VERDICT_FAILED,
    MT_VERDICT_NOT_A_CLAIM,
};

#define MT_VERDICT_N 7

/* "SUPPORT", "CONTRADICT", ... as the enum names them. */
const char *mt_verdict_str(enum mt_verdict v);

/* A quote's check against the cited documents. */
enum mt_quote_status {
    MT_QUOTE_FOUND,     /* verbatim in a cited document */
    MT_QUOTE_NOT_FOUND, /* in none of them */
    MT_QUOTE_STITCHED,  /* its parts are there, but not together */
};

/* "FOUND", "NOT_FOUND", "STITCHED". */
const char *mt_quote_status_str(enum mt_quote_status s);

/* Settings of one verification. Strings and callbacks are borrowed for
 * the call. mt_verify_default_params fills them from the answerer's. */
struct mt_verify_params {
    uint32_t k;         /* documents searched per claim, 1..1000 (5) */
    float w_lex, w_sem; /* hybrid weights of BM25 and vectors */
    const char *source; /* search filters, as mt_qa_ask_params' */
    int32_t year_from;
    int32_t year_to;
    const char *author;
    const char *journal;
    const char *pub_type;
    int search_mode;       /* -1 = as the index allows */
    float support_min;     /* a SUPPORT pair counts from this score (0.5) */
    float contradict_min;  /* a CONTRADICT pair counts from this (0.5) */
    uint32_t min_words;    /* shorter sentences are NOT_A_CLAIM (4) */
    int decompose;         /* 1: the LLM splits each claim sentence into
                              atomic claims (FActScore); 0 (default) */
    int search_cited;      /* 1 (default): a cited claim its cited
                              documents do not decide is also searched */
    size_t max_text_bytes; /* longer texts are refused (1 MiB) */
    /* Called as each claim's verdict is final: the sentence's index, the
     * claim's index within it, the sentence count, and the claim as
     * compact JSON (its object in mt_verify_result_json), valid during
     * the call. Runs on the verifying thread. NULL = none. */
    void (*on_claim)(void *user, size_t sentence, size_t claim, size_t n,
                     const char *claim_json);
    void *on_claim_user;
    /* Called once the text is split, with the n sentences as a compact
     * JSON array [{"text","span"}], and with each sentence once its
     * status is final (its object in mt_verify_result_json's
     * "sentences"), in order, on the verifying thread; both use
     * on_claim_user. NULL = none. */
    void (*on_split)(void *user, size_t n, const char *sentences_json);
    void (*on_sentence)(void *user, size_t index, size_t n,
                        const char *sentence_json);
    /* Polled before each model call: nonzero stops the verification with
     * MT_ECANCELED. NULL = never. */
    int (*cancelled)(void *user);
    void *cancelled_user;
};

/* Fills 'vp' with the answerer's settings (filters, weights, search
 * mode), k = 5 and the defaults above; q NULL: mt_qa_default_params'
 * settings. */
void mt_verify_default_params(const struct mt_qa *q,
                              struct mt_verify_params *vp);

/* The settings table of struct mt_verify_params (medtrust/params.h): each
 * numeric knob's CLI option (`verify`), POST /v1/verify member, bounds
 * (and the server's lower caps) and help; GET /v1/limits lists it.
 * Immutable; safe from any thread. */
extern const struct mt_param_table mt_verify_param_table;

/* One document's verdict on a claim. */
struct mt_verify_evidence {
    const char *doc_id;
    const char *title;     /* may be NULL */
    const char *url;       /* may be NULL */
    enum mt_verdict label; /* SUPPORT, CONTRADICT, NO_EVIDENCE, FAILED
                              (the error says why) or NO_REFERENCE (a
                              cited id the store does not hold) */
    float score;           /* the verifier's probability of 'label' */
    const char *sentence;  /* the document's sentence closest to the claim
                              (SUPPORT and CONTRADICT), else NULL */
    int cited;             /* 1: the text cites this document */
    const char *text;      /* the document's text the verifier read (up to
                              doc_chars), NULL for NO_REFERENCE; not in
                              the JSON */
    const char *error;     /* why FAILED, else NULL */
};

struct mt_verify_quote {
    const char *text; /* as written, without its quotation marks */
    enum mt_quote_status status;
    const char *doc_id; /* the cited document it was found in (FOUND),
                           else the best match checked (STITCHED, or the
                           first cited document) */
};

struct mt_verify_claim {
    const char *text; /* the claim (without citations) */
    enum mt_verdict verdict;
    long decided_by; /* index into evidence of the deciding document, or
                        -1 */
    const char *const *cites; /* the ids, DOIs or URLs the sentence cites */
    size_t ncites;
    struct mt_verify_quote *quotes;
    size_t nquotes;
    struct mt_verify_evidence *evidence;
    size_t nevidence;
    const char *error; /* why FAILED, else NULL */
};

struct mt_verify_sentence {
    const char *text;
    size_t start, end; /* byte span in the input */
    enum mt_verdict status;
    struct mt_verify_claim *claims; /* none when NOT_A_CLAIM */
    size_t nclaims;
};

/* The result of one text. Everything belongs to it: free it with
 * mt_verify_result_free. */
struct mt_verify_result {
    struct mt_verify_sentence *sentences; /* every sentence, in order */
    size_t nsentences;
    size_t counts[MT_VERDICT_N]; /* claims per verdict; NOT_A_CLAIM counts
                                    sentences */
    const char *search;          /* "hybrid", "dense" or "bm25" */
    const char *const *notes;
    size_t nnotes;
    struct mt_qa_usage usage;
    /* how the answerer's NLI classifier's labels map onto SUPPORT/
     * CONTRADICT/NO_EVIDENCE (mt_nli_describe, as mt_qa_result.verifier),
     * or NULL when the verifier says nothing of it (an LLM verifier) */
    const char *verifier;
    void *mem_; /* private */
};

/* Verifies 'text' (UTF-8): splits it into sentences, finds claims, and
 * gives each its verdict (docs/verify.md). The answerer must have a
 * corpus (db_dir). Fails for bad input (MT_EINVAL: empty, not UTF-8;
 * MT_ELIMIT: over max_text_bytes), a search failure, cancellation and
 * MT_ENOMEM, with *out NULL. When a claim is FAILED the call returns
 * MT_EMODEL and *out still holds the result (free it): a failed model
 * call is never a verdict. Thread-safe. */
enum mt_status mt_verify_text(struct mt_qa *q, const char *text,
                              const struct mt_verify_params *vp,
                              struct mt_verify_result **out,
                              struct mt_error *err);

/* The document that 'field' ("id", "doi" or "url") and 'key' name, read
 * through the answerer's retriever (mt_retriever_lookup, whole up to
 * 'max' bytes): MT_ENOTFOUND when the store holds none. Thread-safe. */
enum mt_status mt_verify_lookup(struct mt_qa *q, const char *field,
                                const char *key, size_t max,
                                struct mt_retrieved_doc *out,
                                struct mt_error *err);

/* Verifies a proposed correction (issue 32): the corrected and the
 * original sentence are each judged against the same documents, the n
 * given passages (ids[i], texts[i]: the ones a check retrieved; texts or
 * texts[i] NULL: the document read by its id, up to doc_chars, skipped
 * when the store no longer holds it) or, when
 * n == 0, the top k of a search for the corrected sentence, with the
 * verdict rule of mt_verify_text. *json (caller frees with mt_free) gets
 * {"verdict_corrected","verdict_original","strongest" (the correction
 * supported and the original contradicted),"source" ("run" or the search
 * mode),"evidence":[{"doc","title","url","corrected":{"label","score",
 * "sentence"},"original":{...}}]}. A failed judgement is FAILED in it,
 * not a failure of the call. Thread-safe. */
enum mt_status mt_verify_correction(struct mt_qa *q, const char *corrected,
                                    const char *original,
                                    const char *const *ids,
                                    const char *const *texts, size_t n,
                                    char **json, struct mt_error *err);

/* Verifies 'claim' as one claim: not split into sentences and never
 * NOT_A_CLAIM (the claims of a claim-verification set). The result holds
 * one sentence, the whole text trimmed, with its claim (or, with
 * decompose, the model's atomic claims). Otherwise as mt_verify_text.
 * Thread-safe. */
enum mt_status mt_verify_one_claim(struct mt_qa *q, const char *claim,
                                   const struct mt_verify_params *vp,
                                   struct mt_verify_result **out,
                                   struct mt_error *err);

void mt_verify_result_free(struct mt_verify_result *r);

/* The result as compact JSON: {"sentences":[{"text","span":[start,end],
 * "status","claims":[{"text","verdict","cites","quotes":[{"text",
 * "status","doc"}],"evidence":[{"doc","title","label","score",
 * "sentence","url","cited","error"?}],"decided_by","error"?}]}],
 * "summary":{VERDICT: count},"search","notes","usage"}. Caller frees
 * with mt_free; NULL when out of memory. */
char *mt_verify_result_json(const struct mt_verify_result *r);

#ifdef __cplusplus
}
#endif
#endif
