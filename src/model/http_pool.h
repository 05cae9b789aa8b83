/* The endpoints of one OpenAI-compatible model spec, "URL1,URL2#MODEL":
 * each request goes to the endpoint with the fewest requests in flight
 * (ties in turn); an endpoint that fails (no answer, 5xx, 429, a cut
 * stream) is taken out for a while, then a real request probes it, and
 * it is back when that is answered. One endpoint is never taken out: its
 * retries are the client's. Names: mtx_ (cross-file internals). */
#ifndef MT_MODEL_HTTP_POOL_H
#define MT_MODEL_HTTP_POOL_H

#include <stddef.h>

#include "medtrust/status.h"

/* First out time, doubled per failed probe up to the cap (seconds). */
#define MTX_POOL_OUT_S 1.0
#define MTX_POOL_OUT_MAX_S 30.0
#define MTX_POOL_MAX 64

struct mtx_http_pool;

/* Parses "URL[,URL...]" (each http(s); "/v1" appended unless there);
 * 'setting' names the option in errors. *out owns the pool. */
enum mt_status mtx_http_pool_new(const char *list, const char *setting,
                                 struct mtx_http_pool **out,
                                 struct mt_error *err);

void mtx_http_pool_free(struct mtx_http_pool *p);

size_t mtx_http_pool_size(const struct mtx_http_pool *p);

/* Endpoint i's base URL ("http://host:port/v1"), valid while p lives. */
const char *mtx_http_pool_base(const struct mtx_http_pool *p, size_t i);

/* Picks the endpoint for one attempt at time 'now' (monotonic seconds)
 * and counts it in flight: an endpoint whose out time is over is probed
 * first (one probe at a time; *probe is set), else the in endpoint with
 * the fewest in flight; with none in, the one due back first (probed
 * early). Thread-safe. */
size_t mtx_http_pool_pick(struct mtx_http_pool *p, double now, int *probe);

/* Ends endpoint i's attempt ('probe' as pick set it): a failure takes an
 * in endpoint out, a failed probe keeps it out twice as long (up to the
 * cap), an answered probe puts it back; a failure or answer of a request
 * sent before the take-out changes nothing. 'why' (may be NULL) is
 * logged. Thread-safe. */
void mtx_http_pool_done(struct mtx_http_pool *p, size_t i, int probe,
                        int failed, double now, const char *why);

/* 1 when some endpoint other than 'not' is in or due for a probe: a retry
 * may go there at once instead of waiting out a backoff. */
int mtx_http_pool_other_ready(struct mtx_http_pool *p, size_t not, double now);

#endif
