/* Internals of verified question answering (src/qa/qa*.c): the
 * answerer handle, retrieval, claim parsing and merging, verification and
 * the pure helpers the unit tests reach. */
#ifndef MT_QA_QA_INT_H
#define MT_QA_QA_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "llmcall/prompt.h"
#include "core/arena.h"
#include "core/buf.h"
#include "medtrust/qa.h"
#include "medtrust/index.h"

struct mt_nli;
struct mt_retriever;

/* Dimension of the hashed bag-of-words vectors used when no embedder is
 * configured. */
#define QA_HASH_DIMS 256

struct mt_qa {
    struct mt_qa_params p; /* strings point at the copies below */
    char *strs[12];
    struct mt_llm *answer_llm;
    struct mt_llm *judge_llm; /* may equal answer_llm */
    int judge_owned;
    struct mt_nli *nli;       /* NULL: the LLM judge */
    struct mt_retriever *ret; /* search, embedder (none: hashed words),
                                 reranker */
    int ret_owned;            /* 1 when opened here (not params.retriever) */
    struct mt_prompts *prompts;
    char *label_pre; /* label_format split at "{id}" */
    char *label_suf;
    int index_vectors; /* 1 when the index holds vectors of emb's dims */
};

/* One question in flight: the result being built and its arena. */
struct qa_run {
    struct mt_qa *q;
    struct mt_arena *mem; /* the result's memory */
    struct mt_qa_result *res;
    struct mt_buf notes; /* "\0"-separated notes, moved into res */
    size_t nnotes;
    int answer_failed;     /* the model gave no answer (noted) */
    struct mt_qa_params p; /* the handle's, with this question's settings
                              (mt_qa_ask_params) */
    size_t unverified;     /* claims whose verdict was never given: the
                              verifier failed on a pair, none contradicts */
};

/* Adds a note (why the result is partial) to the run. */
enum mt_status mtx_qa_note(struct qa_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Copies n bytes of s into the run's arena; NULL when out of memory. */
char *mtx_qa_keep(struct qa_run *r, const char *s, size_t n);

/* ==== Retrieval (qa_retrieve.c) ==== */

/* Fills r->res->docs with up to k documents for the question, and
 * r->res->search with the mode used. */
enum mt_status mtx_qa_retrieve(struct qa_run *r, const char *question,
                               struct mt_error *err);

/* ==== Claims (qa_claims.c) ==== */

/* One answer sentence with its citations. */
struct mt_qa_sent {
    const char *text;  /* the sentence without citation brackets */
    const char **refs; /* cited ids, unique, in order */
    size_t nrefs;
    long *docs; /* per ref: index into the documents, or -1 */
};

/* Splits 'answer' into sentences and reads the citations: a bracket
 * group "[...]" whose comma- or semicolon-separated items are labels
 * (pre + id + suf) or bare ids among known[0..nknown). Citations that
 * open a sentence belong to the sentence before it. Everything lives in
 * 'a'. docs[] is filled from known (-1 when not known). */
enum mt_status mtx_qa_parse_answer(struct mt_arena *a, const char *answer,
                                   const char *pre, const char *suf,
                                   const char *const *known, size_t nknown,
                                   struct mt_qa_sent **out, size_t *n);

/* Groups sentences into claims, as VerifAI does: each cited sentence
 * heads a claim; an uncited sentence between two cited ones joins the
 * left or the right neighbour, whichever cites the document holding the
 * sentence most similar to it (VerifAI: the highest dot product of the
 * sentence's vector with a sentence of the neighbour's known abstracts;
 * doc_vecs holds the vectors of every document sentence, document d's in
 * rows doc_off[d] .. doc_off[d + 1] - 1; ties and all-unknown go left),
 * except that once one sentence of a gap goes right the rest of the gap
 * follows (claims stay contiguous). Uncited sentences before the first or
 * after the last cited one (introduction, conclusion) join nothing: they
 * stay in the answer as unreferenced sentences. owner[i] gets the index
 * of the cited sentence heading i's claim, or -1. */
void mtx_qa_group(const struct mt_qa_sent *s, size_t n, const float *sent_vecs,
                  const float *doc_vecs, const size_t *doc_off, uint32_t dims,
                  long *owner);

/* Dot product of two dims-vectors. */
double mtx_qa_dot(const float *a, const float *b, uint32_t dims);

/* L2-normalised hashed bag of words (QA_HASH_DIMS floats) of s[0..n):
 * lower-cased ASCII letters and digits and non-ASCII bytes form words;
 * words under 3 bytes and common English words are skipped; each bucket
 * holds 1 + ln(count). */
void mtx_qa_hash_embed(const char *s, size_t n, float *out);

/* The closing yes/no/maybe of an answer: the word after the last
 * "answer:", else the last yes/no/maybe word of the last line; NULL
 * when there is none. Returns a static string. */
const char *mtx_qa_final_word(const char *answer);

/* Builds r->res->claims from the answer (parse, embed, group). */
enum mt_status mtx_qa_claims(struct qa_run *r, struct mt_error *err);

/* Embeds n texts into *out (n * *dims floats, caller frees with
 * mt_free): the embedder, or hashed words without one. Thread-safe. */
enum mt_status mtx_qa_embed(struct mt_qa *q, const struct mt_str *t, size_t n,
                            float **out, uint32_t *dims, struct mt_error *err);

/* ==== Verification (qa_verify.c) ==== */

/* Overall verdict of a claim from its per-document verdicts (the rule in
 * qa.h). */
enum mt_qa_label mtx_qa_overall(const struct mt_qa_verdict *v, size_t n);

/* Maps a classifier label (enum mt_nli_label) to a verdict. */
enum mt_qa_label mtx_qa_from_nli(int nli_label);

/* Claim c as compact JSON text (its object in mt_qa_result_json);
 * caller frees with mt_free; NULL when out of memory. */
char *mtx_qa_claim_json(const struct mt_qa_claim *c);

/* Judges one (claim, document text) pair with the verifier: the NLI
 * classifier, else the LLM judge (counted in r->res->usage). On failure
 * 'why' says what went wrong. */
enum mt_status mtx_qa_judge(struct qa_run *r, const char *claim,
                            const char *doc, enum mt_qa_label *label,
                            float *score, char *why, size_t wn);

/* The sentence of doc closest to the claim by embedding dot product, kept
 * in the run's arena into *out. */
enum mt_status mtx_qa_evidence(struct qa_run *r, const char *claim,
                               const char *doc, const char **out,
                               struct mt_error *err);

/* "title text" of document d, as the verifier reads it (caller frees
 * with mt_free); NULL when out of memory. */
char *mtx_qa_premise(const struct mt_qa_doc *d);

/* Verifies every claim of r->res against its cited documents, calling
 * params.on_claim as each claim's verdicts become final. */
enum mt_status mtx_qa_verify_claims(struct qa_run *r, struct mt_error *err);

/* ==== Model calls (qa.c) ==== */

/* Renders prompt 'name' and sends it, repeating once on a failed request
 * or (with 'json') a reply without a JSON object. On success *reply is
 * the text (caller frees); on failure 'why' says what went wrong. */
enum mt_status mtx_qa_chat(struct qa_run *r, struct mt_llm *l, const char *name,
                           const char *const *keys, const char *const *vals,
                           size_t nvars, float temperature, uint32_t max_tokens,
                           int json, char **reply, char *why, size_t wn);

#endif
