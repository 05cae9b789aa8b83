/* Internals shared by the strategies: the checker handle, one note's run
 * (sentences, trace, usage, verdict) and the role call with one repeat and
 * a fallback. */
#ifndef MT_CHECK_AGENT_INT_H
#define MT_CHECK_AGENT_INT_H

#include <pthread.h>

#include <jansson.h>

#include "llmcall/prompt.h"
#include "core/buf.h"
#include "medtrust/check.h"
#include "medtrust/index.h"
#include "medtrust/trace.h"

/* Model routing roles (MEDTRUST_LLM_<ROLE>). */
enum agent_role {
    ROLE_REACT,
    ROLE_EVAL,
    ROLE_REFLECT,
    ROLE_PARSER,
    ROLE_GUARD,
    ROLE_SINGLE,
    ROLE_COUNT
};

/* mt_agent_params' per-role arrays are indexed by this enum too */
_Static_assert(ROLE_COUNT == (int)MT_AGENT_ROLE_COUNT &&
                   ROLE_PARSER == (int)MT_AGENT_ROLE_PARSER,
               "enum agent_role follows enum mt_agent_role");

#define AGENT_NSTRS 8 /* strings of mt_agent_params copied */

struct knn_examples;

struct mt_agent {
    struct mt_agent_params p; /* strings point at the copies below */
    char *strs[AGENT_NSTRS];
    char *sources[MT_AGENT_MAX_SOURCES]; /* copies of p.sources */
    struct mt_llm *llm[ROLE_COUNT];
    int llm_owner[ROLE_COUNT]; /* 1 where this role opened the handle */
    struct mt_prompts *prompts;
    char *examples;           /* few-shot text for `single` */
    struct knn_examples *knn; /* examples_path: picked per note */
    struct mt_retriever *ret; /* search(); NULL without a corpus */
    int ret_owned;            /* 1 when opened here (not params.retriever) */
    pthread_mutex_t mu;       /* held while mt_agent_prepare opens parts */
    unsigned ready;           /* bit s: strategy s's parts are open */
};

/* One note being checked. */
struct run {
    struct mt_agent *a;
    struct mt_agent_params p; /* the handle's, with the call's settings
                                 (mt_agent_check_with) over them */
    struct mt_str text;
    struct mt_str *sents;
    size_t nsents;
    int sents_in_text; /* 1 when sents are spans of text */
    char *block;       /* "<sentences>\nID | text\n...</sentences>" */
    json_t *trace;
    struct mt_check_usage u;
    int flag;
    int sid;
    char *corr;                 /* owned; the corrected sentence */
    int fallback;               /* the verdict is a fallback: no answer */
    uint32_t down;              /* roles whose model calls failed outright */
    char down_why[256];         /* the last such failure */
    uint32_t undecided;         /* react-reflex rounds that ended for want
                                   of a usable reply (not by MedEval) */
    char fb_why[320];           /* why the verdict is (or would be) a
                                   fallback: "ROLE: the last reason" */
    const char *note_id;        /* borrowed mt_note.id, for params.on_step */
    const char *const *sources; /* search filter (borrowed) */
    size_t n_sources;
    const struct mt_meta_cond *meta; /* mt_note.meta (borrowed) */
    size_t nmeta;
    char fail_why[320]; /* why the note failed (MT_ELIMIT: no fit) */
};

/* Validates one parsed reply; returns 0 when usable, else writes why. */
typedef int (*reply_check_fn)(struct run *r, json_t *o, void *user, char *why,
                              size_t n);

/* One role call: inputs, then what came back. */
struct call {
    enum agent_role role;
    const char *prompt;      /* prompt file name */
    const char *const *keys; /* template variables */
    const char *const *vals;
    size_t nvars;
    const struct mt_llm_message *hist; /* messages after the user one */
    size_t nhist;
    float temperature;
    uint32_t n; /* samples (MedEval) */
    reply_check_fn check;
    void *check_user;
    /* results */
    int ok;          /* at least one valid reply */
    json_t *objs;    /* array of the valid parsed replies */
    char *raw;       /* text of the first valid reply */
    json_t *records; /* trace records of this call */
    struct mt_check_usage u;
    char down_why[256]; /* set when no reply came because the calls failed */
    char why[256];      /* set when !ok: the last attempt's problem */
    /* Fits the prompt to the role model's context before the call is
     * sent (may be NULL): sets vals or hist, or returns MT_ELIMIT with
     * 'fail' saying why the note cannot be checked. Called again for the
     * one retry after a refusal taught an unknown context. */
    enum mt_status (*fit)(struct run *r, struct call *c);
    void *fit_user;
    char fail[320];
};

/* Clears *c and sets what every role call names: the role, its prompt,
 * its reply check and the template variables (borrowed). */
void mtx_call_init(struct call *c, enum agent_role role, const char *prompt,
                   reply_check_fn check, const char *const *keys,
                   const char *const *vals, size_t nvars);

/* Runs the call: up to two requests (a parse failure repeats with the
 * error appended, a failed request repeats as is), validating each reply.
 * Counts a fallback when nothing valid came back. Touches only 'c', so
 * calls of one run may go in parallel. MT_ENOMEM is the only failure. */
enum mt_status mtx_call_run(struct run *r, struct call *c);

/* Runs a and b at once (b on a new thread, a here) and merges both. */
enum mt_status mtx_call_pair(struct run *r, struct call *a, struct call *b);

/* Runs c and merges it into r (usage, trace). */
enum mt_status mtx_call_do(struct run *r, struct call *c);

/* Frees a call's results. */
void mtx_call_free(struct call *c);

/* The first valid reply object (borrowed), or NULL. */
json_t *mtx_call_obj(const struct call *c);

/* Records why 'role' gave the verdict no usable answer ("ROLE: why" in
 * r->fb_why, the last one kept); with 'verdict', the verdict is now a
 * fallback (r->fallback), which mt_agent_check reports as MT_EMODEL. */
void mtx_run_no_answer(struct run *r, const char *role, const char *why,
                       int verdict);

/* Appends {"step": kind's name, ...fields of 'o' (stolen)} to the trace;
 * the keys are the kind's (MT_TRACE_RECORDS in medtrust/trace.h). */
void mtx_run_event(struct run *r, enum mt_trace_kind kind, json_t *o);

/* Calls params.verify_correction on the run's correction (the run's
 * retrieved passages, src/check/correction.c) and records its object as
 * the trace step "correction_evidence"; *out gets the object's text
 * (caller frees), NULL when the verifier failed (the step then holds its
 * "error"). MT_ENOMEM is the only failure. */
enum mt_status mtx_check_verify_correction(struct run *r, char **out);

/* ==== Fitting prompts to the model's context (fit.c) ==== */

/* The role's model context in tokens; 0 when unknown. */
uint32_t mtx_role_ctx(const struct run *r, enum agent_role role);

/* Tokens of c's prompt rendered as it stands now (system, user and its
 * history; template overhead included) counted with the role's model. */
enum mt_status mtx_call_tokens(struct run *r, const struct call *c,
                               uint32_t *out);

/* What the role's context leaves after --max-tokens and c's prompt as it
 * stands: *room tokens (0: the prompt does not fit), UINT32_MAX when the
 * context is unknown. */
enum mt_status mtx_call_room(struct run *r, const struct call *c,
                             uint32_t *room);

/* A fit for calls nothing of which may be cut (single, the guards, the
 * parser): MT_ELIMIT with c->fail set when the prompt does not fit. */
enum mt_status mtx_fit_whole(struct run *r, struct call *c);

/* Marks passages of 'searches' (a JSON array of objects with a
 * "passages" array) dropped (null), the oldest search first and within it
 * the lowest-ranked passage first, until about 'excess' tokens (counted
 * with l, two more a passage for its "[k] " label) are gone. Returns how
 * many were dropped. */
size_t mtx_drop_passages(json_t *searches, uint32_t excess, struct mt_llm *l);

/* MT_EINVAL when search mode m cannot run on the checker's index: bm25
 * with --dims, dense or hybrid without vectors the query embedder
 * matches. */
enum mt_status mtx_agent_search_mode_check(struct mt_agent *a, int m,
                                           struct mt_error *err);

/* Loads the few-shot examples of `single`: the fixed ones into
 * a->examples, or with examples_path every training note, embedded, into
 * a->knn. */
enum mt_status mtx_agent_examples_load(struct mt_agent *a,
                                       struct mt_error *err);

/* The examples text for the run's note: a->examples, or with a->knn the
 * max_few_shot training notes nearest to it, nearest first (*out owned by
 * the caller when *owned). Adds a few_shot trace record for kNN. */
enum mt_status mtx_agent_examples_for(struct run *r, const char **out,
                                      char **owned);

/* Frees a->knn; NULL is allowed. */
void mtx_agent_examples_free(struct knn_examples *k);

/* What one search gives MedReAct and its trace record (JSON arrays). */
struct search_out {
    json_t *passages; /* "TITLE: text" cut to chunk_chars, for the model */
    json_t *ids;      /* document ids */
    json_t *srcs;     /* sources ("" for none) */
    json_t *hits;     /* {"doc_id","title","source","text","cut","url"},
                         text cut to hit_chars */
};

/* Searches the corpus for 'query' in the search mode (the run's
 * search_mode, auto decided now), retrieve_k deep, reranked to rerank_k
 * when a reranker is set; only the run's sources when given. Appends each
 * hit to o's arrays and sets *mode to the mode's name ("none" without a
 * corpus, when it appends nothing). */
enum mt_status mtx_agent_search(const struct run *r, const char *query,
                                struct search_out *o, const char **mode,
                                struct mt_error *err);

/* The statistic the published code compared with the minimum threshold:
 * min(mean of all finals, last final) (see react.c). 0 when n == 0. */
double mtx_medeval_published_min(const int *finals, size_t n);

#endif
