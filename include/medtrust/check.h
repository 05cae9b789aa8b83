/* medtrust clinical-note checker (MEDIQA-CORR): decides whether a note holds
 * a medical error, which sentence holds it and how to correct it, with the
 * react-reflex (MedReAct'N'MedReFlex), guards (MedGuards) or single-call
 * strategies. Every run keeps a trace of each model call and decision. */
#ifndef MEDTRUST_CHECK_H
#define MEDTRUST_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "params.h"
#include "retrieve.h"
#include "status.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mt_strategy {
    MT_STRATEGY_REACT_REFLEX, /* IryoNLP MedReAct'N'MedReFlex (default) */
    MT_STRATEGY_GUARDS,       /* MedGuards: detect, localise, correct */
    MT_STRATEGY_SINGLE,       /* one chain-of-thought call, few-shot */
    MT_STRATEGY_COUNT         /* how many there are */
};

/* A strategy as the one strategy table (src/check/strategy.c) declares
 * it; the CLI's help, the server's checks, GET /v1/limits and the web
 * UI's choices are made from it. Static data. */
struct mt_strategy_info {
    enum mt_strategy id;
    const char *name;         /* "react-reflex", as parsed and printed */
    const char *title;        /* "MedReAct'N'MedReFlex" */
    const char *summary;      /* one or two sentences for help and the UI */
    const char *const *roles; /* the roles it calls (MEDTRUST_LLM_<ROLE>,
                                 lower case), NULL-terminated */
    int needs_retriever;      /* 1: it searches a corpus (refused without
                                 one unless no_retrieval) */
    int needs_examples;       /* 1: it shows few-shot examples
                                 (few_shot_path, examples_path) */
};

/* Strategy s's entry, or NULL when s is not one. Thread-safe. */
const struct mt_strategy_info *mt_strategy_get(enum mt_strategy s);

/* Parses a strategy's name; MT_EINVAL otherwise. */
enum mt_status mt_strategy_parse(const char *s, enum mt_strategy *out);
/* Returns the strategy's name (static string; "unknown" when s is not
 * one). */
const char *mt_strategy_str(enum mt_strategy s);
/* Writes the names as a sentence lists them ("react-reflex, guards or
 * single") into buf (n bytes, NUL-terminated, cut to fit); returns buf. */
char *mt_strategy_list(char *buf, size_t n);

/* Settings of a checker. Strings are copied by mt_agent_open. */
#define MT_AGENT_MAX_SOURCES 16
#define MT_AGENT_SEARCH_AUTO (-1) /* mt_agent_params.search_mode */

/* The checker's roles, for the per-role settings below. */
enum mt_agent_role {
    MT_AGENT_ROLE_REACT,   /* MedReAct's steps */
    MT_AGENT_ROLE_EVAL,    /* MedEval */
    MT_AGENT_ROLE_REFLECT, /* MedReFlex */
    MT_AGENT_ROLE_PARSER,  /* MedFinalParser */
    MT_AGENT_ROLE_GUARD,   /* every MedGuards agent */
    MT_AGENT_ROLE_SINGLE,  /* single */
    MT_AGENT_ROLE_COUNT
};

/* What react-reflex answers when MedEval rejected all M rounds. */
enum mt_on_exhausted {
    MT_EXHAUSTED_NO_ERROR,    /* "no error" (the paper's Figure 1, E) */
    MT_EXHAUSTED_LAST_ANSWER, /* the last answer MedEval reviewed (the
                                 published reflexion.py) */
};

/* A passage a check retrieved, for verifying its correction. */
struct mt_check_passage {
    const char *id;   /* the document's id */
    const char *text; /* its text, or NULL: the verifier reads the
                         document by its id */
};

/* Verifies a proposed correction against evidence (issue 32): given the
 * corrected sentence, the original (erroneous) one and the passages the
 * run retrieved (react-reflex; none for guards and single, whose hook
 * searches itself), sets *json to an object {"verdict_corrected",
 * "verdict_original","evidence":[...]} as mt_malloc'd text the checker
 * frees. A failure leaves the verdict as it is; the trace says why. */
typedef enum mt_status (*mt_check_verify_fn)(
    void *user, const char *corrected, const char *original,
    const struct mt_check_passage *passages, size_t n, char **json,
    struct mt_error *err);

/* Documents of a react-reflex run given to the hook, best-ranked first
 * (one from each search in turn; the search steps' "hits"). */
#define MT_CHECK_VERIFY_PASSAGES 5

struct mt_agent_params {
    enum mt_strategy strategy;
    const char *llm_spec;       /* every role's model unless
                                   MEDTRUST_LLM_<ROLE> or MEDTRUST_LLM is
                                   set; NULL = environment only */
    struct mt_llm_params llm;   /* timeouts, retries, HTTP concurrency */
    const char *prompts_dir;    /* NAME.txt here replaces a built-in prompt */
    const char *few_shot_path;  /* MEDEC CSV whose first rows are the
                                   fixed examples of `single` */
    const char *examples_path;  /* MEDEC CSV (a training split) from which
                                   `single` picks the max_few_shot nearest
                                   notes to each note (MedPrompt's kNN
                                   few-shot); embedded with embedder_spec,
                                   else the index's embedder (db_dir) */
    const char *db_dir;         /* corpus store for search(); NULL = none,
                                   which react-reflex refuses unless
                                   no_retrieval is set */
    int no_retrieval;           /* 1: react-reflex runs without a corpus
                                   (search() finds nothing), as the trace
                                   says; 0 (default): a corpus is needed */
    const char *const *sources; /* search only these corpus sources (up to
                                   MT_AGENT_MAX_SOURCES); copied */
    size_t n_sources;           /* 0 = every source */
    uint32_t evidence_tokens;   /* most tokens of the trajectory with
                                   its passages shown to MedEval and
                                   MedReFlex, less when the model's
                                   context leaves less; the oldest
                                   search's lowest-ranked passages are
                                   dropped first (12000) */
    const char *reranker_spec;  /* cross-encoder for the rerank stage */
    int search_mode;            /* MedReAct's search: MT_SEARCH_BM25,
                                   _DENSE or _HYBRID (medtrust/index.h),
                                   or MT_AGENT_SEARCH_AUTO (default):
                                   hybrid when the index has vectors the
                                   query embedder can match, else bm25 */
    const char *embedder_spec;  /* query (and examples_path) embedder;
                                   NULL = the one the index records */
    uint32_t dims;              /* Matryoshka truncation of query vectors,
                                   which must match the index's; 0 = the
                                   index's (mt_retriever_params.dims) */
    uint32_t max_steps;         /* MedReAct steps per round, N (4) */
    uint32_t max_rounds;        /* MedReFlex rounds, M (5) */
    uint32_t n_evals;           /* MedEval samples (5) */
    double accept_mean;         /* accept when mean final >= this (3.8) */
    double accept_min;          /* ... and true min final >= this (3) */
    uint32_t eval_quorum;       /* usable MedEval reviews a round needs
                                   to be accepted, at most n_evals (3) */
    int on_exhausted;           /* after M rejected rounds:
                                   MT_EXHAUSTED_NO_ERROR (default, the
                                   paper) or MT_EXHAUSTED_LAST_ANSWER (the
                                   published code) */
    uint32_t retrieve_k;        /* first-stage hits per search (50) */
    uint32_t rerank_k;          /* hits injected after reranking (20) */
    float w_lex, w_sem;         /* hybrid search's weights of BM25 and
                                   vectors (VerifAI's 0.7, 0.3) */
    uint32_t chunk_chars;       /* bytes kept of each injected hit (1200) */
    float temperature;          /* agents other than MedEval (0) */
    float eval_temperature;     /* MedEval sampling temperature (1.0) */
    uint32_t max_tokens;        /* completion budget per call (1024) */
    /* Per-role overrides, indexed by enum mt_agent_role: a temperature
     * >= 0 replaces temperature (eval_temperature for MedEval), a token
     * limit > 0 replaces max_tokens. Defaults -1 and 0 (the shared
     * settings). IryoNLP's published configs: react 0.1 / 1024, eval
     * 1.0 / 1200, reflect 0.1 / 512, parser 0.0 / 512. */
    float role_temperature[MT_AGENT_ROLE_COUNT];
    uint32_t role_max_tokens[MT_AGENT_ROLE_COUNT];
    uint64_t seed;         /* sampling seed (42) */
    size_t max_note_bytes; /* longer notes are refused (256 KiB) */
    uint32_t max_few_shot; /* examples from few_shot_path or
                              examples_path, per note (3) */
    uint32_t hit_chars;    /* bytes kept of each hit's text in a search
                              trace record's "passages" (360) */
    int grammar;           /* 1 (default): gguf models answer under a
                              grammar made from each role's reply
                              schema, so their JSON always parses;
                              OpenAI-compatible servers are not sent
                              one */
    /* Called with each trace record as a check adds it, so a caller can
     * follow the trajectory live: the note's id (mt_note.id, may be NULL)
     * and the record as compact JSON text, both valid during the call.
     * Runs on the checking thread; checks running at once on one handle
     * call it concurrently. NULL = none (default). */
    void (*on_step)(void *user, const char *note_id, const char *step_json);
    void *on_step_user;
    /* Polled with the note's id before each model call: nonzero stops
     * the check, which then fails with MT_ECANCELED (a call in flight
     * finishes first). NULL = never (default). */
    int (*cancelled)(void *user, const char *note_id);
    void *cancelled_user;
    /* Search through this retriever (borrowed; it outlives the checker)
     * instead of opening one on db_dir and reranker_spec. NULL = open one
     * (default). */
    struct mt_retriever *retriever;
    /* Called once per note whose verdict is an error with a correction
     * (not a fallback), on the checking thread, to verify the correction
     * (`check --verify-correction`; medtrust/verify.h's
     * mt_verify_correction behind it). Its object goes to the result's
     * correction_evidence and to the trace (step "correction_evidence").
     * NULL = none (default). */
    mt_check_verify_fn verify_correction;
    void *verify_correction_user;
    /* 1: MedReAct, MedEval and MedReFlex are shown each search's passages
     * most relevant last, each with its source and score (as IryoNLP's
     * published code orders them); 0 (default): most relevant first,
     * "TITLE: text", as the paper's figures show them. */
    uint32_t passages_last;
    /* 1: a verdict that is only the strategy's fallback (no usable reply
     * of the model's decided it) is accepted: mt_agent_check succeeds
     * with result.fallback 1 and its fallback_why, for a caller that
     * shows it as such ("fallback: no model answer", never a plain "no
     * error"); 0 (default): the check fails with MT_EMODEL. */
    uint32_t allow_fallbacks;
};

/* Fills 'p' with the defaults above (the paper's N, M, thresholds, 5
 * evaluators, 50 -> 20 retrieval) and mt_llm_default_params. */
void mt_agent_default_params(struct mt_agent_params *p);

/* The settings table of struct mt_agent_params (medtrust/params.h): each
 * numeric knob's CLI option, POST /v1/check member, bounds (and the
 * server's lower caps) and help. `check`, `mediqa`, `sweep` and `worker`
 * read their options from it, the server its request members, and GET
 * /v1/limits lists it. Immutable; safe from any thread. */
extern const struct mt_param_table mt_agent_param_table;

struct mt_agent;

/* Opens a checker: the models of the strategy's roles (routed per role by
 * mt_llm_open_role), the prompts, the few-shot file and, for react-reflex
 * with db_dir, the search index. On success *out owns the handle (free
 * with mt_agent_close); on failure *out is unchanged and 'err' says what
 * to fix. */
enum mt_status mt_agent_open(const struct mt_agent_params *params,
                             struct mt_agent **out, struct mt_error *err);

/* Closes the checker; NULL is allowed. No check may be running. */
void mt_agent_close(struct mt_agent *a);

/* One note. Strings are borrowed for the call. */
struct mt_note {
    const char *id;   /* used in the trace; may be NULL */
    const char *text; /* the note, UTF-8 */
    size_t text_len;
    const char *sentences; /* MEDEC `Sentences` field, or NULL to split */
    size_t sentences_len;
    const char *const *sources; /* react-reflex searches only these corpus
                                   sources for this note (up to
                                   MT_AGENT_MAX_SOURCES), overriding
                                   params.sources; NULL = those */
    size_t n_sources;
    /* react-reflex searches only documents meeting every one of these
     * metadata conditions (author, journal, publication type as
     * mt_search_pubmed_conds makes them), inside the search as
     * mt_search_params.meta; at most MT_SEARCH_MAX_META. The search
     * trace records them ("meta"). NULL = none. */
    const struct mt_meta_cond *meta;
    size_t nmeta;
};

/* Model use of one check. llm_calls counts every request sent; critical
 * counts the requests on the longest dependent chain (parallel calls
 * count once), which bounds the check's latency. */
struct mt_check_usage {
    uint32_t llm_calls;
    uint32_t critical_calls;
    uint64_t prompt_tokens;
    uint64_t completion_tokens;
    uint32_t failed_calls;    /* requests the backend failed (HTTP, time) */
    uint32_t parse_failures;  /* replies that were not valid for the role */
    uint32_t fallbacks;       /* roles that fell back to their default */
    uint32_t estimated_calls; /* calls whose token counts are estimates:
                                 the server reported no usage */
};

/* The verdict on one note. Owned by the caller: mt_check_result_free. */
struct mt_check_result {
    int error_flag;           /* 1 when the note holds an error */
    int sentence_id;          /* 0-based, -1 when none (guards may set
                                 error_flag 1 with -1: not located) */
    char *error_sentence;     /* "" when none */
    char *corrected_sentence; /* "NA" when none */
    char *corrected_text;     /* the note with the correction applied */
    enum mt_strategy strategy;
    struct mt_check_usage usage;
    char *trace;        /* JSON array text, one object per step */
    int fallback;       /* 1 when the verdict is a fallback: no answer of the
                           model's (then mt_agent_check failed, MT_EMODEL,
                           unless params.allow_fallbacks) */
    char *fallback_why; /* why it is, in words; NULL when it is not */
    char *correction_evidence; /* params.verify_correction's object
                                  {"verdict_corrected","verdict_original",
                                  "evidence"} as JSON text; NULL when the
                                  correction was not verified */
};

/* Checks one note. Each role retries once, then applies its documented
 * fallback (docs/agents.md), and the trace says why. When the verdict
 * itself is such a fallback (it exists only because the model's calls
 * failed, by HTTP error or time-out, or its replies were unusable after
 * the repeat: out->fallback, with out->fallback_why), the call fails with
 * MT_EMODEL and 'out' still holds that fallback verdict, its usage and
 * trace (free it): a botched or failed call must never pass for an
 * answer. With params.allow_fallbacks the call succeeds instead (MT_OK,
 * out->fallback 1 with out->fallback_why): the caller asked for the
 * fallback verdict and must show it as one. A well-formed reply that decides
 * "no error" is an answer (MT_OK, fallback 0). Fails otherwise only for bad
 * input (MT_EINVAL: empty note or one that is not UTF-8 text; MT_ELIMIT: over
 * max_note_bytes; MT_EPARSE: bad Sentences field), MT_ECANCELED
 * (params.cancelled said stop) or MT_ENOMEM; then 'out' is zeroed. Thread-safe:
 * many checks may run at once on one handle. */
enum mt_status mt_agent_check(struct mt_agent *a, const struct mt_note *note,
                              struct mt_check_result *out,
                              struct mt_error *err);

/* Settings of one check, replacing the handle's for that call (callbacks
 * and their user pointers borrowed for the call), so one checker serves
 * notes of every strategy and setting: a server keeps one per model. The
 * fields mean what they mean in mt_agent_params; what is not here (models,
 * prompts, corpus, examples, per-role overrides, grammar) is the
 * handle's. */
struct mt_agent_check_params {
    enum mt_strategy strategy; /* the roles and parts it needs are opened
                                  on first use (mt_agent_prepare) */
    uint32_t max_steps;        /* N, >= 1 */
    uint32_t max_rounds;       /* M, >= 1 */
    uint32_t n_evals;          /* 1..64 */
    double accept_mean;
    double accept_min;
    uint32_t eval_quorum;
    int on_exhausted;
    int search_mode;     /* MT_SEARCH_* or MT_AGENT_SEARCH_AUTO; dense and
                            hybrid need vectors the query embedder matches */
    uint32_t retrieve_k; /* >= rerank_k */
    uint32_t rerank_k;   /* >= 1 */
    float w_lex, w_sem;
    uint32_t chunk_chars;
    uint32_t evidence_tokens;
    uint32_t hit_chars;
    float temperature;
    float eval_temperature;
    uint32_t max_tokens;
    uint64_t seed;
    /* As mt_agent_params' on_step and cancelled, for this call only:
     * note_id is the note's mt_note.id. NULL = none. */
    void (*on_step)(void *user, const char *note_id, const char *step_json);
    void *on_step_user;
    int (*cancelled)(void *user, const char *note_id);
    void *cancelled_user;
    uint32_t passages_last;   /* 0 or 1 */
    uint32_t allow_fallbacks; /* 0 or 1 */
};

/* Fills 'cp' with the handle's settings and callbacks. Thread-safe. */
void mt_agent_check_default_params(const struct mt_agent *a,
                                   struct mt_agent_check_params *cp);

/* Opens what strategy 's' needs that the checker has not opened yet: its
 * roles' models (MEDTRUST_LLM_<ROLE>), the corpus search of react-reflex
 * (refused, MT_EINVAL, on a checker with neither db_dir, a retriever nor
 * no_retrieval), the few-shot examples of `single`. mt_agent_open does
 * it for params.strategy and mt_agent_check_with on a strategy's first
 * note; a caller that wants a bad spec refused up front calls it first.
 * Idempotent; thread-safe (a lock is held while opening). */
enum mt_status mt_agent_prepare(struct mt_agent *a, enum mt_strategy s,
                                struct mt_error *err);

/* mt_agent_check with this note's settings and callbacks; cp == NULL uses
 * the handle's. MT_EINVAL when a setting is out of range (steps, rounds
 * >= 1, evaluators 1..64, retrieve_k >= rerank_k >= 1, a dense or hybrid
 * search_mode on an index without vectors) or the strategy's parts cannot
 * be opened (mt_agent_prepare's failure). Thread-safe. */
enum mt_status mt_agent_check_with(struct mt_agent *a,
                                   const struct mt_note *note,
                                   const struct mt_agent_check_params *cp,
                                   struct mt_check_result *out,
                                   struct mt_error *err);

/* Frees the strings of 'r' and zeroes it; NULL is allowed. */
void mt_check_result_free(struct mt_check_result *r);

/* The result as compact JSON text: {"error_flag","error_sentence_id",
 * "error_sentence","corrected_sentence","corrected_text","strategy",
 * "usage":{...},"fallback":bool,"fallback_why"? (when fallback),
 * "correction_evidence"? (when verified), "trace_version":MT_TRACE_VERSION,
 * "trace":[...]} (the last two only when with_trace; the records as
 * medtrust/trace.h declares them). Caller frees with mt_free; NULL when out
 * of memory. */
char *mt_check_result_json(const struct mt_check_result *r, int with_trace);

/* The MEDIQA-CORR submission line for note 'id' (no newline):
 * "<id> <flag> <sentence id or -1> <corrected sentence or NA>", with line
 * breaks in the correction turned into spaces. r == NULL gives the
 * fallback line "<id> 0 -1 NA"; an error detected but not located
 * (guards) gives "<id> 1 -1 NA". Caller frees with mt_free. */
char *mt_check_submission_line(const char *id, const struct mt_check_result *r);

#ifdef __cplusplus
}
#endif
/* MedEval acceptance: mean of finals >= mean_min and the TRUE minimum
 * over all reviewers >= min_min. Returns 1 to accept; *mean and *min get
 * the statistics (0 when n == 0, which never accepts). Public so that a
 * threshold sweep can replay recorded rounds with the agent's own rule. */
int mt_medeval_accept(const int *finals, size_t n, double mean_min,
                      double min_min, double *mean, int *min);

#endif
