/* JSON over HTTP for the OpenAI-compatible backends (libcurl): timeouts,
 * retries with exponential backoff and jitter on 429, 5xx and transport
 * errors (honouring Retry-After), a concurrency limit, clear errors. */
#ifndef MT_MODEL_HTTP_H
#define MT_MODEL_HTTP_H

#include <stdint.h>

#include <jansson.h>

#include "medtrust/status.h"

struct mt_http;

struct mt_http_params {
    double timeout_s;         /* whole request, per attempt */
    uint32_t max_retries;     /* retries after the first attempt */
    double backoff_base_s;    /* delay before the first retry (pre-jitter) */
    double backoff_max_s;     /* cap on one computed delay */
    uint32_t max_concurrency; /* requests in flight, >= 1 */
    const char *setting;      /* named in errors, e.g. "--llm/MEDTRUST_LLM" */
    const char *key_env;      /* the key's variable, NULL: MEDTRUST_API_KEY
                                 or else OPENAI_API_KEY */
    int api_key_header;       /* 1: "api-key: KEY" (Azure), else
                                 "Authorization: Bearer KEY" */
};

/* Creates a client for 'base_url' (copied; "/v1" is appended unless it
 * already ends in it or names an Azure deployment, .../openai/deployments/
 * NAME), or for a comma-separated list of base URLs of one
 * model: an endpoint pool (model/http_pool.h) spreads the requests and
 * takes failing endpoints out. The API key is read from
 * MEDTRUST_API_KEY, then OPENAI_API_KEY. On success *out owns the client
 * (mtx_http_free). */
enum mt_status mtx_http_new(const char *base_url,
                            const struct mt_http_params *p,
                            struct mt_http **out, struct mt_error *err);

/* MT_EPARSE for a reply from 'url' that lacks a field, named as
 * "arr[i]rest", or "arr" alone when i is MT_HTTP_NO_INDEX. */
#define MT_HTTP_NO_INDEX ((size_t)-1)
enum mt_status mtx_http_bad_field(const char *url, struct mt_error *err,
                                  const char *arr, size_t i, const char *rest);

/* POSTs 'body' to BASE/v1/'endpoint' (e.g. "chat/completions") and parses
 * the 200 reply into *reply (caller json_decref's it). 'max_reply' is the
 * reply's byte budget, which follows from the request (its max_tokens,
 * its number of inputs): a reply past it is MT_ELIMIT, not retried; 0 (or
 * more than MT_HTTP_MAX_REPLY) means MT_HTTP_MAX_REPLY. Retries as above
 * (on another endpoint of a pool when one is ready); 401, 404 and
 * context-length refusals fail at once with a message naming the setting
 * to fix. *served (may be NULL) gets the base URL of the endpoint of the
 * last attempt, valid while h lives. Thread-safe. */
#define MT_HTTP_MAX_REPLY ((size_t)256 << 20)
enum mt_status mtx_http_post_json(struct mt_http *h, const char *endpoint,
                                  const json_t *body, size_t max_reply,
                                  json_t **reply, const char **served,
                                  struct mt_error *err);

/* GETs BASE/v1/'endpoint' of the first endpoint, once (no retries: for
 * optional facts such as llama-server's "../props"; curl resolves the
 * dot segments), and parses the 200 reply into *reply. A reply past
 * 'max_reply' bytes (0 or more than MT_HTTP_MAX_REPLY: that cap) fails:
 * a server that floods every path must not cost more than the page is
 * worth (issue 39). Thread-safe. */
enum mt_status mtx_http_get_json(struct mt_http *h, const char *endpoint,
                                 size_t max_reply, json_t **reply,
                                 struct mt_error *err);

/* A streamed reply ("stream": true): on_event gets each server-sent
 * event's data parsed as a JSON object (borrowed for the call) and
 * returns MT_OK to go on; anything else ends the call with that status
 * and the message it put in 'err'. When an attempt that delivered events
 * fails and is retried, on_restart (may be NULL) is called first: drop
 * what came. */
struct mt_http_sse {
    enum mt_status (*on_event)(void *ctx, const json_t *data,
                               struct mt_error *err);
    void (*on_restart)(void *ctx);
    void *ctx;
};

/* POSTs 'body' like mtx_http_post_json and reads the 200 reply as
 * server-sent events until "data: [DONE]"; one event may hold up to
 * 'max_reply' bytes (and never more than 16 MiB), past it the call is
 * MT_ELIMIT. The callbacks bound what the events add up to. A stream cut
 * off before it,
 * or an {"error":...} event, is a failed attempt, retried as a 5xx is;
 * a reply that is plain JSON is MT_EPARSE. Thread-safe. */
enum mt_status mtx_http_post_sse(struct mt_http *h, const char *endpoint,
                                 const json_t *body, size_t max_reply,
                                 const struct mt_http_sse *cb,
                                 const char **served, struct mt_error *err);

/* Full URL for 'endpoint' into buf (for error messages): the first
 * endpoint's, saying how many more a pool has. */
void mtx_http_url(const struct mt_http *h, const char *endpoint, char *buf,
                  size_t n);

/* The Server header of the first reply that had one (any endpoint of a
 * pool), "" until then, copied into buf. Thread-safe. */
void mtx_http_server(struct mt_http *h, char *buf, size_t n);

/* Frees the client; NULL is allowed. No request may be in flight. */
void mtx_http_free(struct mt_http *h);

#endif
