/* Private parts of the server shared by its modules: the server context,
 * transport-independent requests and responses (so routing can be fuzzed
 * without a socket), store leases, jobs, rate limits and logs. */
#ifndef MT_SERVER_SRV_INT_H
#define MT_SERVER_SRV_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "batch/jobs.h"
#include "core/jsonl.h"
#include "medtrust/accounts.h"
#include "medtrust/check.h"
#include "medtrust/index.h"
#include "medtrust/retrieve.h"
#include "medtrust/server.h"

struct MHD_Daemon;
struct mt_agent;
struct mt_qa;
struct mtx_job;
struct srv_conn;
struct srv_sse;

/* ==== Requests and responses ==== */

struct srv_req {
    const char *method;
    const char *path; /* decoded, without the query string */
    /* Header and query-argument lookup (NULL when absent). */
    const char *(*header)(void *ctx, const char *name);
    const char *(*arg)(void *ctx, const char *name);
    void *ctx;
    const char *body; /* NUL-terminated, may be empty */
    size_t body_len;
    const char *remote; /* client address text */
    double t0;          /* monotonic seconds at arrival */
    /* Set by authentication. */
    int authed;
    int via_token;
    int64_t token_id; /* the Bearer token's id when via_token */
    struct mt_user user;
    char sid[MT_SECRET_SIZE];
    char csrf[MT_SECRET_SIZE];
};

struct srv_resp {
    unsigned status;
    const char *type; /* Content-Type; NULL means JSON */
    char *body;       /* mt_malloc'd, or NULL */
    size_t len;
    const unsigned char *static_body; /* embedded asset, not freed */
    char cookie[320];                 /* Set-Cookie value, or "" */
    unsigned retry_after;             /* seconds, for 429 and 503; 0 = none */
    int64_t sse_run;       /* > 0: stream this run's job events instead */
    const char *csp;       /* Content-Security-Policy (static), or NULL */
    int frame_self;        /* may be framed by this origin (reports) */
    int close;             /* "Connection: close": the body was not read */
    char disposition[128]; /* Content-Disposition (downloads), or "" */
};

/* ==== Store leases: one store (and index) handle per thread at a time ==== */

struct srv_lease {
    struct mt_store *store; /* the corpus: sources, stats */
    struct mt_state *state; /* accounts, runs, events, audit, settings */
    struct srv_lease *next;
};

/* ==== Rate limits ==== */

#define SRV_RL_SLOTS 1024

struct srv_bucket {
    char key[80];
    double tokens;
    double last;
};

/* A failed-login count and lock (limits.c). */
struct srv_throttle {
    char key[80]; /* "a:NAME" or "ip:ADDRESS" */
    uint32_t fails;
    double until; /* locked until then (monotonic seconds) */
    double last;
};

/* Seconds until NAME may try a password again from REMOTE (its account's
 * or its address's lock), 0 = now. */
unsigned mtx_srv_login_wait(struct mt_server *s, const char *name,
                            const char *remote);
/* Counts a wrong password; returns the seconds of a lock it started, or
 * 0. Accounts lock after params.login_failures failures in a row,
 * addresses after four times as many; each failure after that doubles
 * the lock. */
unsigned mtx_srv_login_failed(struct mt_server *s, const char *name,
                              const char *remote);
/* A correct password: both counts start again. */
void mtx_srv_login_ok(struct mt_server *s, const char *name,
                      const char *remote);

/* ==== Log files ==== */

struct srv_log {
    FILE *f;
    pthread_mutex_t mu;
};

/* ==== Question answering (ask.c) ==== */

#define SRV_SOURCE_MAX 128 /* bytes of a source name, with its NUL */
#define SRV_QUERY_MAX 4096 /* bytes of a search query */
#define SRV_QUESTION_MAX ((size_t)8 << 10) /* the answerer's own limit */
#define SRV_NOTE_MAX ((size_t)256 << 10)   /* the checker's own limit */
#define SRV_TEXT_MAX ((size_t)60 << 10)    /* a text POST /v1/verify takes */

#define SRV_FILTER_MAX 256 /* bytes of an author/journal filter, NUL too */

/* The metadata filters of a search or question: "author", "journal" and
 * "publication_type" ("" = none), matched inside the search
 * (mt_meta_cond on "authors", "journal", "publication_types"). */
struct srv_meta {
    char author[SRV_FILTER_MAX];
    char journal[SRV_FILTER_MAX];
    char pub_type[SRV_FILTER_MAX];
};

/* Reads the three members of o into m; returns 0, or -1 after a 400. */
int mtx_srv_meta_read(json_t *o, struct srv_meta *m, struct srv_resp *rs);
/* The filters that are set as conditions in c (room for 3); returns how
 * many. The strings stay m's. */
size_t mtx_srv_meta_conds(const struct srv_meta *m, struct mt_meta_cond *c);
/* The search modes the index serves now: ["bm25"], plus "dense" and
 * "hybrid" when it holds vectors for its embedder. */
json_t *mtx_srv_modes_json(struct mt_server *s);
/* Reads "search_mode" (POST /v1/ask's and /v1/verify's): one of the modes
 * the index serves now (mtx_srv_modes_json) into *mode as an enum
 * mt_search_mode, -1 when absent or null (as the index allows); returns
 * 0, or -1 after a 400 (not a mode, or one needing vectors the index
 * lacks). */
int mtx_srv_mode_read(struct mt_server *s, json_t *o, int *mode,
                      struct srv_resp *rs);

/* The settings of one POST /v1/ask (mt_qa_ask_params). */
struct srv_qa_key {
    uint32_t k;
    float w_lex, w_sem;          /* hybrid weights of BM25 and vectors */
    int32_t year_from, year_to;  /* 0 = open end */
    char source[SRV_SOURCE_MAX]; /* "" = every source */
    struct srv_meta meta;
    int mode;  /* -1 = as the index allows, or an mt_search_mode */
    int model; /* -1 = --llm, or an --llm-choice index */
};

/* ==== Models a request may choose (models.c) ==== */

#define SRV_MODELS_MAX 8

/* Reads params.llm_choices ("NAME=SPEC" lines) into s. */
enum mt_status mtx_srv_models_init(struct mt_server *s, const char *text,
                                   struct mt_error *err);
/* Frees them and their answerers. */
void mtx_srv_models_free(struct mt_server *s);
/* Reads "model" of o into *model (-1 when absent); returns 0, or -1 after
 * a 400 when it names no model of the server. */
int mtx_srv_model_read(struct mt_server *s, json_t *o, int *model,
                       struct srv_resp *rs);
/* The index of the --llm-choice named 'name', or -1 (none, or NULL). */
int mtx_srv_model_find(const struct mt_server *s, const char *name);
/* The name of model 'model', NULL for -1 (the server's --llm). */
const char *mtx_srv_model_name(const struct mt_server *s, int model);
/* The spec of model 'model' (-1: the server's --llm, may be NULL). */
const char *mtx_srv_model_spec(const struct mt_server *s, int model);
/* The names a request may choose, as a JSON array. */
json_t *mtx_srv_models_json(const struct mt_server *s);

/* ==== The server ==== */

struct mt_server {
    struct mt_server_params p;
    char *db_dir, *listen, *data_dir;
    char *state_url; /* NULL: the store's own state */
    struct MHD_Daemon *mhd;
    uint16_t port;
    /* leases */
    pthread_mutex_t lease_mu;
    struct srv_lease *free_leases;
    /* --state PostgreSQL away when the server started (lease_mu): state
     * requests get 503 and /v1/health says not ready while a thread
     * retries with backoff (server.c, "PostgreSQL away at start") */
    int state_down, state_wait_stop, state_waiting;
    char *state_reg;           /* --registration, applied once it is back */
    struct mt_error state_err; /* why the last try failed */
    pthread_cond_t state_cv;
    pthread_t state_waiter;
    /* search, for /v1/search, the checkers and the answerers: index
     * handles and the index's own query embedder, opened on first use */
    struct mt_retriever *ret;
    /* rate limits */
    pthread_mutex_t rl_mu;
    struct srv_bucket *buckets;    /* SRV_RL_SLOTS */
    struct srv_throttle *throttle; /* SRV_RL_SLOTS, also under rl_mu */
    /* logs */
    struct srv_log access, audit;
    /* in-flight requests, for graceful shutdown */
    pthread_mutex_t req_mu;
    pthread_cond_t req_cv;
    long inflight;
    int stopping;
    /* jobs: the runtime (batch/jobs.h) */
    struct mtx_jobs *jobs;
    struct srv_queue *queue; /* with a shared state (shared_jobs.c) */
    /* note checkers, one per model (--llm, or --llm-choice i), in the
     * batch layer's checker cache (batch/checkers.h), made on first use
     * under agent_mu (check.c); every strategy and setting runs on a
     * model's checker through mt_agent_check_with */
    pthread_mutex_t agent_mu;
    struct mtx_checkers *checkers;
    char *llm_spec;
    /* the question answerer, opened on first use (ask.c), and one per
     * chosen model (models.c) */
    pthread_mutex_t qa_mu;
    struct mt_qa *qa;
    char *choices; /* the --llm-choice lines, split in place */
    const char *choice_name[SRV_MODELS_MAX], *choice_spec[SRV_MODELS_MAX];
    size_t nchoices;
    struct mt_qa *qa_choice[SRV_MODELS_MAX];
    char *nli_spec;
    /* connections, for the header deadline (guard.c) */
    pthread_mutex_t conn_mu;
    pthread_cond_t conn_cv;
    struct srv_conn *conns;
    size_t nconns;  /* in conns */
    size_t evicted; /* idle ones closed near the cap (guard.c) */
    pthread_t reaper;
    int reaper_on, reaper_stop;
    /* open event streams (server.c), for keep-alives */
    pthread_mutex_t sse_mu;
    struct srv_sse *sse_list;
    size_t sse_open;
    /* RLIMIT_NOFILE at start (raised to its hard limit) and the
     * connection cap sized from it (limits.c) */
    uint64_t nofile;
    uint32_t conn_cap;
    int store_lock; /* DB/server.lock, flocked (runs.c); -1 = none */
};

/* Sets up everything but the network (store check, leases, limits, logs,
 * job workers); mtx_srv_fini undoes it and accepts a half-built server. */
enum mt_status mtx_srv_init(struct mt_server *s,
                            const struct mt_server_params *p,
                            struct mt_error *err);
void mtx_srv_fini(struct mt_server *s);

/* Checks a request on its headers alone, before its body is read: the
 * route exists and allows the method, and its authentication, CSRF token
 * and role hold. Returns 0 with *max_body the most body bytes the route
 * takes, or -1 with the refusal in 'rs'. */
int mtx_srv_screen(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   size_t *max_body);

/* Routes one request and fills the response (the whole API). */
void mtx_srv_handle(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs);
/* Frees the response body. */
void mtx_srv_resp_free(struct srv_resp *rs);

/* Leases: borrow a store handle (opening one when none is free); return
 * it with mtx_srv_lease_put. Searches go through s->ret instead. */
enum mt_status mtx_srv_lease_get(struct mt_server *s, struct srv_lease **out,
                                 struct mt_error *err);
void mtx_srv_lease_put(struct mt_server *s, struct srv_lease *l);

/* 1 while a --state server waits for PostgreSQL, which was away when it
 * started (server.c): it is not ready. */
int mtx_srv_state_down(struct mt_server *s);

/* Streams that sent nothing for params.sse_idle_s get a keep-alive
 * comment (server.c; the guard's reaper thread calls it). */
void mtx_srv_sse_tick(struct mt_server *s, double now);
/* Event streams open now. */
size_t mtx_srv_sse_open(struct mt_server *s);

/* On start (runs.c): a single-node server takes DB/server.lock and marks
 * the runs a stopped server left queued or running "interrupted";
 * mtx_srv_runs_unlock lets the lock go at the end. */
enum mt_status mtx_srv_runs_recover(struct mt_server *s, struct mt_error *err);
void mtx_srv_runs_unlock(struct mt_server *s);

/* ==== Response helpers (router.c) ==== */

/* Sets a JSON response; takes 'o' (NULL gives a 500). */
void mtx_srv_json(struct srv_resp *rs, unsigned status, json_t *o);
/* Sets {"error": message}. */
void mtx_srv_error(struct srv_resp *rs, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps a library status to an HTTP status and sets the error. */
void mtx_srv_fail(struct srv_resp *rs, enum mt_status st,
                  const struct mt_error *err);
/* Parses the body as a JSON object into *out (caller decrefs); on failure
 * sets a 400 response and returns -1. */
int mtx_srv_body_json(const struct srv_req *rq, struct srv_resp *rs,
                      json_t **out);

/* ==== Bounded request fields (fields.c) ==== */

/* A numeric member of a request body with its bounds and default: the
 * route enforces them (400 naming the member and its bounds) and GET
 * /v1/limits lists them, so the UI's panels show the same bounds. */
struct srv_field {
    const char *name;
    double lo, hi, def;
    int integer;      /* 1: whole numbers only */
    const char *what; /* what it sets, for people */
};

/* A string member of a request body: the route's parser reads it through
 * mtx_srv_text and GET /v1/openapi.json describes it from the same row. */
struct srv_text {
    const char *name;
    int required;     /* 0: may be absent */
    size_t min;       /* bytes (trimmed when 'trim') */
    size_t max;       /* bytes; 0: only the body's limit */
    int trim;         /* min counts the text without surrounding spaces */
    const char *what; /* "the note's text", for the 400 and the document */
};
/* Reads o[t->name] into *out (NULL when absent and not required). Returns
 * 0, or sets a 400 naming the member and its bytes and returns -1. */
int mtx_srv_text(json_t *o, const struct srv_text *t, const char **out,
                 struct srv_resp *rs);
/* The metadata filters' rows (author, journal, publication_type). */
extern const struct srv_text mtx_srv_filter_texts[3];
/* Each route's required text (its row of the route table names it). */
extern const struct srv_text mtx_srv_search_text, mtx_srv_check_text,
    mtx_srv_ask_text, mtx_srv_verify_text, mtx_srv_batch_text;

/* Reads o[f->name] into *out: f->def when absent or null. Returns 0, or
 * sets a 400 response and returns -1. */
int mtx_srv_field(json_t *o, const struct srv_field *f, double *out,
                  struct srv_resp *rs);
/* The fields as GET /v1/limits shows them: {name: {min, max, default,
 * integer, what}}. */
json_t *mtx_srv_fields_json(const struct srv_field *f, size_t n);

/* Reads every member of settings table t that has a request field from o
 * into 'params' (t's struct, holding its defaults), within the server's
 * bounds (mt_param_max). Returns 0, or sets a 400 response naming the
 * member and its bounds and returns -1. */
int mtx_srv_params_read(json_t *o, const struct mt_param_table *t, void *params,
                        struct srv_resp *rs);
/* The same for the one member 'field' of t (none: 0). */
int mtx_srv_param_read(json_t *o, const struct mt_param_table *t,
                       const char *field, void *params, struct srv_resp *rs);
/* t's request members as GET /v1/limits shows them: {field: {min, max,
 * default, integer, what, option (the CLI's --option, when there is one),
 * cli_max (the CLI's highest value, where the server caps lower)}}. */
json_t *mtx_srv_params_json(const struct mt_param_table *t);

/* The bounded fields of search (api.c); ask and check read settings tables. */
/* The members of mt_agent_param_table a batch takes (POST /v1/batch and
 * DIR/params.json's "settings") are the batch layer's
 * mtx_bfolder_settings (batch/folder.h). */
/* ==== GET /v1/openapi.json (openapi.c; router.c walks its table) ==== */

/* One route as the document describes it. */
struct srv_op {
    const char *method, *pattern;
    const char *access; /* "open", "user" or "admin" */
    size_t max_body;
    const char *body;            /* its section of GET /v1/limits, or NULL */
    const struct srv_text *text; /* its required text member, or NULL */
    const char *errs;            /* the handler's own statuses, "400 503" */
    int rate_limited;
};
/* The document without paths ({"openapi": "3.1.0", "info", "components",
 * "paths": {}}). */
json_t *mtx_srv_openapi_doc(void);
/* Adds op to doc's paths; 'limits' is GET /v1/limits' object. */
void mtx_srv_openapi_add(json_t *doc, const struct srv_op *op, json_t *limits);
void mtx_srv_openapi(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id);

/* GET /v1/limits' check.fields: mt_agent_param_table's request members
 * and Ask's years. */
json_t *mtx_srv_check_fields_json(void);

/* ==== Handlers (auth.c, api.c), each (server, request, response, id) ==== */

typedef void (*srv_handler)(struct mt_server *s, struct srv_req *rq,
                            struct srv_resp *rs, int64_t id);

void mtx_srv_login(struct mt_server *, struct srv_req *, struct srv_resp *,
                   int64_t);
void mtx_srv_logout(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
void mtx_srv_register(struct mt_server *, struct srv_req *, struct srv_resp *,
                      int64_t);
void mtx_srv_me(struct mt_server *, struct srv_req *, struct srv_resp *,
                int64_t);
/* ui.c */
void mtx_srv_session(struct mt_server *, struct srv_req *, struct srv_resp *,
                     int64_t);
void mtx_srv_limits(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
/* The index's best search mode (hybrid with vectors, else bm25): the
 * default of POST /v1/search, said in GET /v1/limits. */
enum mt_search_mode mtx_srv_best_mode(struct mt_server *s);
/* GET /v1/limits' object (a new reference; NULL when out of memory). */
json_t *mtx_srv_limits_json(struct mt_server *s);
/* prefs.c: GET and PUT /v1/me/settings, the caller's own defaults */
void mtx_srv_prefs_get(struct mt_server *, struct srv_req *, struct srv_resp *,
                       int64_t);
void mtx_srv_prefs_put(struct mt_server *, struct srv_req *, struct srv_resp *,
                       int64_t);
/* batch.c */
void mtx_srv_batch(struct mt_server *, struct srv_req *, struct srv_resp *,
                   int64_t);
void mtx_srv_batch_resume(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
/* downloads.c */
void mtx_srv_batch_submission(struct mt_server *, struct srv_req *,
                              struct srv_resp *, int64_t);
void mtx_srv_batch_traces(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
void mtx_srv_tokens_list(struct mt_server *, struct srv_req *,
                         struct srv_resp *, int64_t);
void mtx_srv_token_create(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
void mtx_srv_token_revoke(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
void mtx_srv_users(struct mt_server *, struct srv_req *, struct srv_resp *,
                   int64_t);
void mtx_srv_settings_get(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
void mtx_srv_settings_put(struct mt_server *, struct srv_req *,
                          struct srv_resp *, int64_t);
void mtx_srv_health(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
void mtx_srv_search(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
void mtx_srv_score(struct mt_server *, struct srv_req *, struct srv_resp *,
                   int64_t);
void mtx_srv_check(struct mt_server *, struct srv_req *, struct srv_resp *,
                   int64_t);
void mtx_srv_ask(struct mt_server *, struct srv_req *, struct srv_resp *,
                 int64_t);
void mtx_srv_verify(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
void mtx_srv_sources(struct mt_server *, struct srv_req *, struct srv_resp *,
                     int64_t);
void mtx_srv_run_report(struct mt_server *, struct srv_req *, struct srv_resp *,
                        int64_t);
void mtx_srv_runs_list(struct mt_server *, struct srv_req *, struct srv_resp *,
                       int64_t);
void mtx_srv_run_get(struct mt_server *, struct srv_req *, struct srv_resp *,
                     int64_t);
void mtx_srv_run_events(struct mt_server *, struct srv_req *, struct srv_resp *,
                        int64_t);
void mtx_srv_run_cancel(struct mt_server *, struct srv_req *, struct srv_resp *,
                        int64_t);
void mtx_srv_models(struct mt_server *, struct srv_req *, struct srv_resp *,
                    int64_t);
void mtx_srv_sleep_job(struct mt_server *, struct srv_req *, struct srv_resp *,
                       int64_t);

/* Authenticates from "Authorization: Bearer" or the session cookie; fills
 * rq->user. Returns 0, or sets a 401 response and returns -1. */
int mtx_srv_authenticate(struct mt_server *s, struct srv_req *rq,
                         struct srv_resp *rs);

/* ==== Checkers (check.c), shared with batches (batch.c) ==== */

#define SRV_BATCH_NOTES_MAX 1000 /* notes of one POST /v1/batch */

/* Reads mt_qa_param_table's "w_lex", "w_sem", "year_from" and "year_to"
 * into w[0..3] (ask.c; checks read the same): 0 is an open year; both
 * weights 0 or years out of order are 400. Returns 0, or -1 after a 400. */
int mtx_srv_weights_years(json_t *o, double *w, struct srv_resp *rs);
/* Fills *set with the defaults and reads mtx_bfolder_settings into it;
 * -1 after a 400. */
int mtx_srv_check_settings(json_t *o, struct mt_agent_params *set,
                           struct srv_resp *rs);
/* 1 when every role of strategy 'st' has a model (always, for a chosen
 * --llm-choice 'model' >= 0, and on a front end that runs no jobs:
 * mtx_srv_runs_jobs), else sets a 503 that says what to configure and
 * returns 0. */
int mtx_srv_check_models(struct mt_server *s, enum mt_strategy st, int model,
                         struct srv_resp *rs);
/* The checker of model 'model' (-1: --llm, or an --llm-choice index),
 * opened on first use and shared by every check and batch of that model
 * (held until mtx_srv_checker_put);
 * strategy st's parts are opened now (mt_agent_prepare), so a bad role
 * spec, or react-reflex without an index, fails here. */
enum mt_status mtx_srv_checker(struct mt_server *s, enum mt_strategy st,
                               int model, struct mt_agent **out,
                               struct mt_error *err);
/* Gives back a checker mtx_srv_checker gave (NULL is allowed). */
void mtx_srv_checker_put(struct mt_server *s, struct mt_agent *a);
/* One job's settings on checker 'a': strategy st, the request members of
 * mt_agent_param_table in 'set' (NULL: the defaults), search mode 'mode'
 * (mt_agent_params.search_mode); no callbacks. */
void mtx_srv_check_params(const struct mt_agent *a, enum mt_strategy st,
                          const struct mt_agent_params *set, int mode,
                          struct mt_agent_check_params *cp);

/* Closes the note checkers (after the job workers have stopped). */
void mtx_srv_agents_close(struct mt_server *s);
/* Closes the question answerer (after the job workers have stopped). */
void mtx_srv_qa_close(struct mt_server *s);
/* 1 when POST /v1/ask has the models it needs (answer, and the judge
 * unless an NLI classifier verifies). */
int mtx_srv_ask_ready(const struct mt_server *s);

/* The server's answerer for --llm (model -1) or --llm-choice 'model',
 * opened on first use (ask.c); POST /v1/ask and /v1/verify share it. */
enum mt_status mtx_srv_qa_get(struct mt_server *s, int model,
                              struct mt_qa **out, struct mt_error *err);

/* 1 when the verifier is the LLM judge (no NLI classifier named). */
int mtx_srv_judge_is_llm(const struct mt_server *s);

/* 1 when POST /v1/verify has its verifier (verify.c). */
int mtx_srv_verify_ready(const struct mt_server *s);

/* The bounded members of POST /v1/verify (verify.c). */

/* The model spec of role 'role' ("react", "guard", ...): its
 * MEDTRUST_LLM_<ROLE>, else --llm, else MEDTRUST_LLM; NULL when none. */
const char *mtx_srv_llm_spec(const struct mt_server *s, const char *role);

/* The path of run 'id''s HTML score report: DB/reports/run-ID.html. */
void mtx_srv_report_path(const struct mt_server *s, int64_t id, char *buf,
                         size_t n);
/* With a shared state, copies run 'id''s report file into the state so
 * that every server can serve it; errors are logged. */
void mtx_srv_report_share(struct mt_server *s, int64_t id);

/* ==== Rate limits (limits.c) ==== */

/* Raises RLIMIT_NOFILE's soft limit to the hard one and sizes the
 * connection cap (s->conn_cap) from what it allows: the descriptors left
 * after a reserve for the store, logs, model sockets and threads. */
void mtx_srv_size_conns(struct mt_server *s);

/* Takes one token from key's bucket. Returns 0 when allowed, else the
 * seconds to wait (>= 1). */
unsigned mtx_srv_rate_take(struct mt_server *s, const char *key);

/* ==== Logs (logs.c) ==== */

enum mt_status mtx_srv_logs_open(struct mt_server *s, struct mt_error *err);
void mtx_srv_logs_close(struct mt_server *s);
/* One access-log line per response. */
void mtx_srv_log_access(struct mt_server *s, const struct srv_req *rq,
                        const struct srv_resp *rs);
/* One audit line: who did 'action'; 'detail' (may be NULL) is a JSON
 * object of hashes and counts, never note text or secrets; it is taken.
 * With 'l' non-NULL the record also goes to the store's audit table. */
void mtx_srv_audit(struct mt_server *s, struct srv_lease *l,
                   const struct srv_req *rq, const char *action,
                   json_t *detail);

/* ==== Jobs (jobs.c over the batch layer's runtime, batch/jobs.h) ====
 * Routes submit mtx_job_spec jobs to s->jobs (mtx_jobs_submit, or
 * mtx_srv_job_submit_body below) and stream their events (server.c:
 * mtx_jobs_find, mtx_job_read); a job function emits with mtx_job_emit
 * and polls mtx_job_canceled. */

/* Starts s->jobs: the runtime with --llm-jobs workers, or, with a shared
 * state, none and the queue worker loop (mtx_srv_queue_start). */
enum mt_status mtx_srv_jobs_start(struct mt_server *s, struct mt_error *err);
/* 0 on a shared state's front end (--llm-jobs 0): its routes check a
 * request's fields and queue it, and need no model; the server or worker
 * that claims the row checks its own models when it rebuilds the job
 * (a run it cannot do fails there with the route's 503 message). */
int mtx_srv_runs_jobs(const struct mt_server *s);
/* Stops taking jobs, waits up to grace_s for queued and running jobs,
 * cancels the rest and joins the workers and the queue worker loop
 * (s->jobs may be NULL: a half-built server). */
void mtx_srv_jobs_stop(struct mt_server *s, double grace_s);

/* Event streams open on one job at most; one more is refused with a 429
 * whose body is an "error" event, too_many_streams (server.c). */
#define SRV_STREAMS_PER_JOB 64
/* ==== Jobs on the shared queue (shared_jobs.c, jobs.c) ====
 * With a shared state a job is a row of PostgreSQL's queue
 * (store/queue.h) that carries its kind, its run and its request body;
 * the server's worker threads claim rows as any worker does and rebuild
 * the job from the body with its kind's builder. */

/* Rebuilds the job of run 'run' from its request 'body' (as the route
 * read it) into *spec, or fails saying why this server cannot run it. */
typedef enum mt_status (*srv_job_build_fn)(struct mt_server *s, int64_t run,
                                           const char *body,
                                           struct mtx_job_spec *spec,
                                           struct mt_error *err);

/* How the job of a route that queues its body as it came (check, ask,
 * verify) is rebuilt from that body where it is claimed: the route's own
 * reader (a new argument, or NULL with rs filled), its readiness check
 * (0 with rs filled: a model the route needs is not configured) and the
 * binding of this server's model to the argument. */
struct srv_job_rebuild {
    const char *kind;
    mtx_job_fn fn;
    void (*arg_free)(void *arg);
    void *(*read)(struct mt_server *s, const struct srv_req *rq,
                  struct srv_resp *rs);
    int (*ready)(struct mt_server *s, void *arg, struct srv_resp *rs);
    enum mt_status (*bind)(struct mt_server *s, void *arg,
                           struct mt_error *err);
};

/* Rebuilds a job from its request 'body' with r's callbacks into *spec;
 * a refusal of the reader or the check comes back as its message
 * (mtx_srv_resp_failure). */
enum mt_status mtx_srv_job_rebuild(struct mt_server *s, const char *body,
                                   const struct srv_job_rebuild *r,
                                   struct mtx_job_spec *spec,
                                   struct mt_error *err);

/* The builders of POST /v1/check, POST /v1/ask, POST /v1/batch (and
 * resume) and the test sleep job. */
enum mt_status mtx_srv_check_job(struct mt_server *s, int64_t run,
                                 const char *body, struct mtx_job_spec *spec,
                                 struct mt_error *err);
enum mt_status mtx_srv_ask_job(struct mt_server *s, int64_t run,
                               const char *body, struct mtx_job_spec *spec,
                               struct mt_error *err);
enum mt_status mtx_srv_verify_job(struct mt_server *s, int64_t run,
                                  const char *body, struct mtx_job_spec *spec,
                                  struct mt_error *err);
enum mt_status mtx_srv_batch_job(struct mt_server *s, int64_t run,
                                 const char *body, struct mtx_job_spec *spec,
                                 struct mt_error *err);
enum mt_status mtx_srv_sleep_job_build(struct mt_server *s, int64_t run,
                                       const char *body,
                                       struct mtx_job_spec *spec,
                                       struct mt_error *err);

/* Queues the job of run 'run_id' whose request body is 'body': with a
 * shared state a row of the shared queue (the spec's arg is freed: the
 * claiming server rebuilds it from 'body'), else mtx_jobs_submit. */
enum mt_status mtx_srv_job_submit_body(struct mt_server *s, int64_t run_id,
                                       const struct mtx_job_spec *spec,
                                       const char *body, struct mt_error *err);

/* How a route's run is recorded (mtx_srv_run_submit): the text it is
 * keyed by (its SHA-256 is the run's key), the audit record of the run
 * (a new object from the run id and that hash), and an optional check
 * under the state's lease before the run exists (0: refused, rs filled;
 * e.g. a source filter naming no stored source). */
struct srv_run_req {
    const char *text;
    size_t len;
    json_t *(*audit)(int64_t run_id, const char *sha256, void *arg);
    int (*admit)(struct srv_lease *l, void *arg, struct srv_resp *rs);
};

/* Records run spec->kind for the request's user, audits it and queues
 * its job with the request's body; returns the run id, or 0 with rs
 * filled (503 with Retry-After when the queue is full). spec->arg is
 * taken either way. */
int64_t mtx_srv_run_submit(struct mt_server *s, struct srv_req *rq,
                           struct srv_resp *rs, const struct mtx_job_spec *spec,
                           const struct srv_run_req *r);

/* The route's 400/503 in 'rs' as a failure in err (the builders read
 * bodies with the routes' readers); frees rs's body. */
enum mt_status mtx_srv_resp_failure(struct srv_resp *rs, struct mt_error *err);

/* Starts the queue worker loop (batch/qworker.h) with the server's job
 * kinds: its claiming threads (--llm-jobs; none on a front end), the
 * heartbeat (leases, then pruning) and the submits' connection
 * (shared_jobs.c); mtx_srv_queue_stop waits for the threads (after
 * jobs_stop) and ends it. */
enum mt_status mtx_srv_queue_start(struct mt_server *s, struct mt_error *err);
void mtx_srv_queue_stop(struct mt_server *s);

#endif
