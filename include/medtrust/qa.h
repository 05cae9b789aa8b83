/* medtrust verified question answering (VerifAI): hybrid retrieval, an
 * answer that cites the retrieved documents, and each cited claim checked
 * against each document it cites. docs/ask.md describes the pipeline and
 * the verdict rule. */
#ifndef MEDTRUST_QA_H
#define MEDTRUST_QA_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "retrieve.h"
#include "params.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A verdict on one (claim, cited document) pair, or a claim's overall
 * verdict. UNVERIFIED: the verifier failed on the pair (the result says
 * why); NO_REFERENCE: the cited id is not among the retrieved documents
 * (a hallucinated citation, never shown to the verifier). */
enum mt_qa_label {
    MT_QA_SUPPORT,
    MT_QA_CONTRADICT,
    MT_QA_NO_EVIDENCE,
    MT_QA_NO_REFERENCE,
    MT_QA_UNVERIFIED,
};

#define MT_QA_NLABELS 5

/* "SUPPORT", "CONTRADICT", "NO_EVIDENCE", "NO_REFERENCE", "UNVERIFIED". */
const char *mt_qa_label_str(enum mt_qa_label l);

/* Reads a verdict label, case-insensitively and leniently: the names
 * above, and the data sets' spellings (supports, entailment, refutes,
 * contradiction, nei, neutral, "not enough info"). MT_EINVAL otherwise. */
enum mt_status mt_qa_label_parse(const char *s, enum mt_qa_label *out);

/* Settings of a question answerer. Strings are copied by mt_qa_open. */
struct mt_qa_params {
    const char *db_dir;        /* corpus store; NULL = verify only */
    const char *llm_spec;      /* answer and judge model unless
                                  MEDTRUST_LLM_QA / MEDTRUST_LLM_JUDGE or
                                  MEDTRUST_LLM is set */
    struct mt_llm_params llm;  /* timeouts, retries, HTTP concurrency */
    const char *nli_spec;      /* "gguf:PATH" (NLI classifier) or "llm"
                                  (prompted judge); NULL = MEDTRUST_NLI,
                                  else "llm" */
    const char *embedder_spec; /* query and claim embedder: NULL = the
                                  index's own, "none" = hashed words */
    const char *reranker_spec; /* cross-encoder: retrieve rerank_depth,
                                  keep k; NULL = none */
    const char *prompts_dir;   /* qa_*.txt here replace built-in prompts */
    float w_lex;               /* hybrid weight of BM25 (0.7) */
    float w_sem;               /* hybrid weight of vectors (0.3) */
    uint32_t k;                /* documents given to the model (10) */
    uint32_t rerank_depth;     /* hits reranked with a reranker (50) */
    const char *source;        /* only documents of this source, or NULL */
    int32_t year_from;         /* only documents whose metadata "year" */
    int32_t year_to;           /* lies in [from, to]; 0 = open end */
    /* VerifAI's PubMed filters: only documents whose metadata "authors",
     * "journal" or "publication_types" (a string, or an array: one of its
     * strings) contains this text, ASCII case-insensitively (as PubMed
     * imports write them). Applied inside the search (mt_meta_cond), not
     * to its top k. NULL = no filter. */
    const char *author;
    const char *journal;
    const char *pub_type;
    int search_mode;          /* -1 (default): hybrid when the index has vectors
                                 for the embedder, else BM25; or an
                                 mt_search_mode (dense and hybrid need vectors) */
    const char *label_format; /* citation label, "{id}" replaced by the
                                 document id ("PUBMED:{id}") */
    uint32_t max_tokens;      /* answer length budget (1024) */
    float temperature;        /* answer temperature (0) */
    uint64_t seed;            /* sampling seed (42) */
    uint32_t doc_chars;       /* bytes of each document shown (4000) */
    size_t max_question_bytes; /* longer questions are refused (8 KiB) */
    int final_verdict;         /* ask the answer to end with a line
                                  "Answer: yes|no|maybe" (PubMedQA) */
    /* Called as each claim's verdicts become final, so a caller can show
     * the verification live: the claim's 0-based index among n claims and
     * the claim as compact JSON text (the object mt_qa_result_json puts
     * in "claims"), valid during the call. Runs on the thread that called
     * mt_qa_ask, before it returns; questions asked at once on one handle
     * call it concurrently, each on its own thread. NULL = none. */
    void (*on_claim)(void *user, size_t index, size_t n,
                     const char *claim_json);
    void *on_claim_user;
    /* Polled before each model call on the asking thread: nonzero stops
     * the question, which then fails with MT_ECANCELED (a call in flight
     * finishes first). NULL = never (default). */
    int (*cancelled)(void *user);
    void *cancelled_user;
    /* Called with each piece of the answer as the model generates it
     * (mt_chat_params.on_token: OpenAI "stream": true, gguf per token),
     * in order, whole UTF-8 characters; (NULL, 0) drops what came so far
     * (the call is retried). Runs on the asking thread; nonzero stops
     * the question with MT_ECANCELED. NULL = not streamed (default). */
    int (*on_answer_token)(void *user, const char *piece, size_t len);
    void *on_answer_token_user;
    /* Search, embed and rerank through this retriever (borrowed; it
     * outlives the answerer) instead of opening one on db_dir,
     * embedder_spec and reranker_spec. NULL = open one (default). */
    struct mt_retriever *retriever;
    /* 1: open the answer model (role "qa") only when a spec or the
     * environment names one, as `medtrust verify` needs it only for
     * --decompose; 0 (default): a corpus needs it. */
    int answer_optional;
    /* Hybrid search: each list cut to its first fusion_depth chunks
     * before fusion (VerifAI: 10, over whole abstracts); 0 (default) =
     * as deep as the search's first stage (50 or more). */
    uint32_t fusion_depth;
    /* 1: the lexical query drops NLTK's 179 English stop words, as
     * VerifAI's query parser does; 0 (default) = the index analyzer's
     * stop set only (Lucene's 33 for English). */
    int nltk_stopwords;
    /* How an uncited sentence between two claims is attributed: by its
     * best dot product with a sentence of each claim's cited abstracts
     * (MT_QA_ATTRIB_SENTENCE, the default: VerifAI's blog), or with each
     * cited document embedded whole (MT_QA_ATTRIB_DOCUMENT: VerifAI's
     * published verification.py). An enum mt_qa_attribution. */
    int attribution;
};

enum mt_qa_attribution {
    MT_QA_ATTRIB_SENTENCE,
    MT_QA_ATTRIB_DOCUMENT,
};

/* Fills 'p' with the defaults above and mt_llm_default_params. */
void mt_qa_default_params(struct mt_qa_params *p);

/* The settings table of struct mt_qa_params (medtrust/params.h): each
 * numeric knob's CLI option (`ask`, `qa-eval`), POST /v1/ask member,
 * bounds (and the server's lower caps) and help; GET /v1/limits lists
 * it. Immutable; safe from any thread. */
extern const struct mt_param_table mt_qa_param_table;

struct mt_qa;

/* Opens an answerer: the models (answer role "qa", judge role "judge"),
 * the NLI classifier, embedder, reranker, prompts, and the index of
 * db_dir. On success *out owns the handle (mt_qa_close); on failure *out
 * is unchanged and 'err' names the setting to fix. */
enum mt_status mt_qa_open(const struct mt_qa_params *params, struct mt_qa **out,
                          struct mt_error *err);

/* Closes the answerer; NULL is allowed. No call may be running. */
void mt_qa_close(struct mt_qa *q);

/* One verdict of a claim on one cited document. */
struct mt_qa_verdict {
    const char *doc_id;
    enum mt_qa_label label;
    float score;          /* the verifier's probability of 'label' */
    const char *evidence; /* closest document sentence (SUPPORT and
                             CONTRADICT), else NULL */
    const char *error;    /* why the pair is UNVERIFIED, else NULL */
};

/* A claim: answer sentences that share citations. */
struct mt_qa_claim {
    const char *text;        /* without the citation brackets */
    const char *const *refs; /* cited document ids, in order, unique */
    size_t nrefs;
    struct mt_qa_verdict *verdicts; /* one per ref */
    size_t nverdicts;
    enum mt_qa_label label; /* the overall verdict (see mt_qa_ask) */
};

/* One sentence of the answer, in answer order: part of claim 'claim'
 * (an index into claims, whose verdict it shares) or unreferenced (-1:
 * an introduction or conclusion without a citation), as VerifAI shows
 * them. */
struct mt_qa_sentence {
    const char *text; /* without the citation brackets */
    long claim;
};

/* A retrieved document, in rank order. */
struct mt_qa_doc {
    const char *doc_id;
    const char *title; /* may be NULL */
    const char *text;  /* as shown to the model (doc_chars) */
    double score;      /* fused (or reranked) retrieval score */
    const char *url;   /* the document's link: its metadata "url", else
                          PubMed's page for a numeric id (a PMID), else
                          NULL */
};

struct mt_qa_usage {
    uint32_t llm_calls;    /* chat requests, answer and judge */
    uint32_t failed_calls; /* requests the backend failed */
    uint64_t prompt_tokens;
    uint64_t completion_tokens;
    uint32_t verifications; /* (claim, document) pairs verified */
    uint32_t verify_failures;
    double seconds;           /* wall time of the whole question */
    uint32_t estimated_calls; /* calls whose token counts are estimates:
                                 the server reported no usage */
};

/* The result of one question. Every string and array belongs to the
 * result: free it with mt_qa_result_free. */
struct mt_qa_result {
    const char *question;
    const char *answer; /* "" when no answer was produced */
    struct mt_qa_claim *claims;
    size_t nclaims;
    struct mt_qa_sentence *sentences; /* every sentence of the answer */
    size_t nsentences;
    struct mt_qa_doc *docs;
    size_t ndocs;
    const char *search;        /* "hybrid", "dense" or "bm25" */
    const char *final_verdict; /* "yes", "no", "maybe" or NULL */
    const char *verifier;      /* how the NLI classifier's outputs map onto
                                  the labels (an onnx: model's id2label,
                                  mt_nli_describe), or NULL */
    const char *const *notes;  /* why the result is partial, if it is */
    size_t nnotes;
    struct mt_qa_usage usage;
    /* What of the documents the answer model was shown, fitted to its
     * context: docs_shown of ndocs in rank order (the last one cut at a
     * sentence boundary when doc_cut), bytes_shown of bytes bytes of
     * their text, in budget_tokens of ctx_tokens (0: the context is
     * unknown and every document was shown); 'counted' says how tokens
     * were counted ("vocab", "server" or "estimate"; NULL when none
     * were) */
    struct {
        uint32_t ctx_tokens;
        uint32_t budget_tokens;
        size_t docs_shown;
        int doc_cut;
        size_t bytes_shown;
        size_t bytes;
        const char *counted;
    } fit;
    void *mem_; /* private */
};

/* Answers 'question': retrieves, answers with citations, splits the
 * answer into claims and verifies each (claim, cited document) pair. A
 * claim's overall verdict: CONTRADICT if any cited document contradicts
 * it, else UNVERIFIED if the verifier failed on any pair (that pair might
 * have contradicted), else SUPPORT if any supports it, else NO_EVIDENCE
 * if any was verified, else NO_REFERENCE. When the answering model's
 * calls failed or it answered nothing (an empty reply, after a repeat),
 * or a claim is UNVERIFIED (its verdict was never given), the call fails
 * with MT_EMODEL and *out still holds the result with its notes (free
 * it): a failed or botched call must never pass for an answer. Fails for bad
 * input (MT_EINVAL: empty question,
 * not UTF-8, no corpus; MT_ELIMIT: over max_question_bytes), search
 * failures and MT_ENOMEM; then *out is NULL. Thread-safe. */
enum mt_status mt_qa_ask(struct mt_qa *q, const char *question,
                         struct mt_qa_result **out, struct mt_error *err);

/* Settings of one question, replacing the handle's (strings and callbacks
 * borrowed for the call), so one answerer serves questions with different
 * filters. The fields mean what they mean in mt_qa_params. */
struct mt_qa_ask_params {
    uint32_t k;         /* documents given to the model, 1..1000 */
    float w_lex, w_sem; /* hybrid weights of BM25 and vectors */
    const char *source; /* only documents of this source, or NULL */
    int32_t year_from;  /* metadata "year" in [from, to]; 0 = open end */
    int32_t year_to;
    const char *author; /* metadata filters, or NULL */
    const char *journal;
    const char *pub_type;
    int search_mode; /* -1 = as the index allows, or an mt_search_mode */
    void (*on_claim)(void *user, size_t index, size_t n,
                     const char *claim_json);
    void *on_claim_user;
    int (*cancelled)(void *user);
    void *cancelled_user;
    int (*on_answer_token)(void *user, const char *piece, size_t len);
    void *on_answer_token_user;
};

/* Fills 'ap' with the handle's settings. */
void mt_qa_ask_default_params(const struct mt_qa *q,
                              struct mt_qa_ask_params *ap);

/* mt_qa_ask with this question's settings; ap == NULL uses the handle's.
 * MT_EINVAL when ap->k is out of range. Thread-safe. */
enum mt_status mt_qa_ask_with(struct mt_qa *q, const char *question,
                              const struct mt_qa_ask_params *ap,
                              struct mt_qa_result **out, struct mt_error *err);

void mt_qa_result_free(struct mt_qa_result *r);

/* The result as compact JSON: {"question","answer","claims":[{"text",
 * "refs","verdicts":[{"doc_id","label","score","evidence_sentence"}],
 * "label"}],"documents":[{"doc_id","title","score"}],"search",
 * "final_verdict","notes","usage":{...}}. Caller frees with mt_free;
 * NULL when out of memory. */
char *mt_qa_result_json(const struct mt_qa_result *r);

/* Verifies one claim against one evidence text with the configured
 * verifier (as for a retrieved document): *label is SUPPORT, CONTRADICT
 * or NO_EVIDENCE and *score its probability. Thread-safe. */
enum mt_status mt_qa_verify(struct mt_qa *q, const char *claim,
                            const char *evidence, enum mt_qa_label *label,
                            float *score, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
