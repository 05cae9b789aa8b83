/* medtrust HTTP server: the /v1 JSON API and the embedded web UI over GNU
 * libmicrohttpd, with accounts, sessions, API tokens, limits, a job queue
 * for model-bound work (streamed as Server-Sent Events) and log files. */
#ifndef MEDTRUST_SERVER_H
#define MEDTRUST_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mt_server;

/* Server settings; strings are copied by mt_server_start. */
struct mt_server_params {
    const char *db_dir;        /* corpus store directory (required) */
    const char *listen;        /* "HOST:PORT", default "127.0.0.1:8080"; port
                                  0 picks a free one (see mt_server_port) */
    const char *data_dir;      /* access.log and audit.log go here; NULL = no
                                  log files */
    uint32_t threads;          /* network threads, default 4 */
    uint32_t llm_jobs;         /* model-bound jobs running at once, default 4;
                                  0 (only with state_url): none here, other
                                  servers and workers run them */
    uint32_t max_queued;       /* jobs waiting beyond which 503, default 256 */
    size_t max_body;           /* request body bytes, default 8 MiB (413) */
    double rate_per_s;         /* requests per second per account, 0 = no
                                  limit; default 20 (429 past the burst) */
    uint32_t rate_burst;       /* default 40 */
    uint32_t timeout_s;        /* idle connection timeout, default 30 */
    uint32_t header_timeout_s; /* request line and headers must be in
                                  this long after a connection (or its
                                  previous response), default 10; 0 =
                                  none */
    uint32_t max_conns_per_ip; /* connections from one client address,
                                  default 64; 0 = no cap */
    uint32_t login_failures;   /* wrong passwords in a row that lock an
                                  account (its address: 4x), default 5;
                                  0 = no throttle */
    double login_lock_s;       /* the first lock, doubled with each further
                                  failure, default 2 */
    double login_lock_max_s;   /* the longest lock, default 900 */
    uint32_t job_timeout_s;    /* a job is cancelled after this, default 600 */
    uint32_t session_ttl_s;    /* default 43200 (12 h) */
    int secure_cookies;        /* mark cookies Secure (when behind TLS) */
    int test_routes;           /* test equipment: POST /v1/jobs/sleep */
    const char *registration;  /* "open" or "closed" stored at start;
                                  NULL keeps the stored setting (none
                                  stored: closed) */
    const char *llm_spec;      /* model of every checker role unless
                                  MEDTRUST_LLM_<ROLE> is set: openai:URL#M
                                  or gguf:PATH; NULL = MEDTRUST_LLM; with
                                  none, POST /v1/check says how to set one */
    const char *llm_choices;   /* models a question may choose ("model"
                                  in POST /v1/ask): "NAME=SPEC" lines, at
                                  most 8; NULL = none, --llm only */
    const char *reranker_spec; /* cross-encoder of the server's searches:
                                  react-reflex's rerank stage in checks
                                  and batches, and Ask's documents
                                  (gguf:PATH or openai:URL#MODEL); NULL =
                                  none (the first stage's order) */
    const char *nli_spec;      /* verifier of POST /v1/ask: gguf:PATH (an
                                  NLI classifier) or "llm" (the prompted
                                  judge); NULL = MEDTRUST_NLI, else "llm" */
    const char *state_url;     /* accounts, sessions, tokens, settings,
                                  runs, run events and audit: NULL keeps
                                  them in the store (db_dir); a
                                  postgresql:// URL shares them with every
                                  server naming it (state.h) */
    double job_lease_s;        /* with a shared state, where checks and
                                  asks are rows of the shared queue: how
                                  long a claimed job stays this server's
                                  without a heartbeat; a dead server's job
                                  is claimed again after it; default 30 */
    int headless;              /* no HTTP: runs the shared queue's checks
                                  and asks only (needs state_url;
                                  `medtrust worker --serve-jobs`) */
    size_t replay_max;         /* bytes of a job's events kept for streams
                                  opened late, default 1 MiB: past it the
                                  oldest go (the final "done" is always
                                  kept) and a stream that wanted them
                                  gets a "missed" event saying how many */
    uint32_t sse_idle_s;       /* an event stream with nothing to send
                                  this long gets a keep-alive comment, so
                                  a client that went away is noticed and
                                  its stream closed; default 15 */
    double event_retention_s;  /* with a shared state: a finished run's
                                  event rows are deleted this long after
                                  it ended; default 604800 (7 days);
                                  0 = kept */
    uint32_t grace_s;          /* on SIGTERM `medtrust serve` gives
                                  mt_server_stop this many seconds for
                                  jobs; default 30 (the library reads it
                                  only through its caller) */
};

/* The settings table of struct mt_server_params' numeric members and
 * flags (`medtrust serve`'s options, their bounds and help; no request
 * member sets them); the defaults are mt_server_default_params'. */
extern const struct mt_param_table mt_server_param_table;

/* Fills 'p' with the defaults above (db_dir NULL). */
void mt_server_default_params(struct mt_server_params *p);

/* Opens the store (migrating it to the accounts schema), starts the job
 * workers and the network threads, and listens. Every member
 * mt_server_param_table names must be within its bounds (serve's, also
 * for a library caller or worker --serve-jobs): MT_EINVAL naming the
 * first that is not, before anything starts. On success *out owns the
 * server (stop it with mt_server_stop); on failure *out is unchanged and
 * 'err' says why. */
enum mt_status mt_server_start(const struct mt_server_params *p,
                               struct mt_server **out, struct mt_error *err);

/* The TCP port the server listens on. */
uint16_t mt_server_port(const struct mt_server *s);

/* Stops gracefully: stops accepting connections, lets in-flight requests
 * finish and running or queued jobs complete for up to 'grace_s' seconds
 * (then cancels them, recording them as failed), ends event streams and
 * frees everything. NULL is allowed. Call from one thread, once. */
void mt_server_stop(struct mt_server *s, double grace_s);

#ifdef __cplusplus
}
#endif
#endif
