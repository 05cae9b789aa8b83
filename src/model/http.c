/* libcurl JSON client for OpenAI-compatible servers: one easy handle per
 * attempt, a counting semaphore for the concurrency limit, and retries
 * with "equal jitter" backoff: delay = d/2 + U(0, d/2), d = base * 2^k
 * capped at max; a Retry-After header replaces the computed delay. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/http.h"
#include "model/http_pool.h"

#define HTTP_MAX_REPLY MT_HTTP_MAX_REPLY
#define HTTP_MAX_RETRY_AFTER_S 600.0

struct mt_http {
    struct mtx_http_pool *pool;
    char *key;
    struct mt_http_params p;
    char setting[96];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t active;
    uint64_t rng;
    char server[64]; /* the first reply's Server header, "" until one */
};

/* A streamed (server-sent events) reply being read: complete lines are
 * cut from 'line', "data:" lines gather in 'data' until a blank line
 * ends the event (as the SSE spec has it). */
struct sse {
    const struct mt_http_sse *cb;
    struct mt_buf line;
    struct mt_buf data;
    int streamed;  /* a 200 reply's body is being read as events */
    char first;    /* its first byte */
    size_t events; /* delivered in this attempt */
    int done;      /* "data: [DONE]" seen */
    int failed;    /* the server sent an error event */
    struct mt_error err;
};

/* What one attempt produced. */
struct attempt {
    long code;
    CURLcode cc;
    char curl_msg[CURL_ERROR_SIZE];
    double retry_after; /* seconds, < 0 when absent */
    struct mt_buf body;
    enum mt_status wst; /* why the body callback stopped, if it did */
    CURL *curl;         /* during the transfer */
    struct sse *sse;    /* NULL for a plain JSON reply */
    char server[64];    /* the reply's Server header, "" when none */
};

enum verdict { V_OK, V_RETRY, V_FAIL };

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ==== Setup ==== */

static char *env_key(const char *var)
{
    const char *k = getenv(var ? var : "MEDTRUST_API_KEY");

    if (!var && (!k || !*k))
        k = getenv("OPENAI_API_KEY");
    return k && *k ? mt_strdup(k) : NULL;
}

enum mt_status mtx_http_new(const char *base_url,
                            const struct mt_http_params *p,
                            struct mt_http **out, struct mt_error *err)
{
    struct mt_http *h;

    struct mtx_http_pool *pool = NULL;
    enum mt_status st;

    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return mt_fail(err, MT_EINTERNAL, "libcurl initialisation failed");
    st = mtx_http_pool_new(base_url, p->setting ? p->setting : "the spec",
                           &pool, err);
    if (st != MT_OK)
        return st;
    mtx_jsonl_init_alloc();
    h = mt_calloc(1, sizeof *h);
    if (!h) {
        mtx_http_pool_free(pool);
        return mt_fail(err, MT_ENOMEM, "http client: out of memory");
    }
    h->pool = pool;
    h->p = *p;
    if (h->p.max_concurrency == 0)
        h->p.max_concurrency = 1;
    snprintf(h->setting, sizeof h->setting, "%s",
             p->setting ? p->setting : "the model spec");
    h->p.setting = h->setting;
    h->key = env_key(p->key_env);
    h->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
             (uint64_t)(uintptr_t)h;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    *out = h;
    return MT_OK;
}

void mtx_http_server(struct mt_http *h, char *buf, size_t n)
{
    pthread_mutex_lock(&h->mu);
    snprintf(buf, n, "%s", h->server);
    pthread_mutex_unlock(&h->mu);
}

void mtx_http_free(struct mt_http *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    mtx_http_pool_free(h->pool);
    if (h->key)
        memset(h->key, 0, strlen(h->key));
    mt_free(h->key);
    mt_free(h);
}

void mtx_http_url(const struct mt_http *h, const char *endpoint, char *buf,
                  size_t n)
{
    size_t more = mtx_http_pool_size(h->pool) - 1;

    if (more)
        snprintf(buf, n, "%s/%s (and %zu more endpoint%s)",
                 mtx_http_pool_base(h->pool, 0), endpoint, more,
                 more > 1 ? "s" : "");
    else
        snprintf(buf, n, "%s/%s", mtx_http_pool_base(h->pool, 0), endpoint);
}

/* ==== Concurrency limit and backoff ==== */

static void sem_acquire(struct mt_http *h)
{
    pthread_mutex_lock(&h->mu);
    while (h->active >= h->p.max_concurrency)
        pthread_cond_wait(&h->cv, &h->mu);
    h->active++;
    pthread_mutex_unlock(&h->mu);
}

static void sem_release(struct mt_http *h)
{
    pthread_mutex_lock(&h->mu);
    h->active--;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Uniform in [0, 1) from a xorshift64 generator under the lock. */
static double jitter_unit(struct mt_http *h)
{
    uint64_t x;

    pthread_mutex_lock(&h->mu);
    x = h->rng ? h->rng : 0x9e3779b97f4a7c15ULL;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    h->rng = x;
    pthread_mutex_unlock(&h->mu);
    return (double)(x >> 11) / 9007199254740992.0;
}

static double retry_delay(struct mt_http *h, uint32_t attempt, double ra)
{
    double d = h->p.backoff_base_s;
    uint32_t i;

    if (ra >= 0)
        return ra > HTTP_MAX_RETRY_AFTER_S ? HTTP_MAX_RETRY_AFTER_S : ra;
    for (i = 0; i < attempt && d < h->p.backoff_max_s; i++)
        d *= 2;
    if (d > h->p.backoff_max_s)
        d = h->p.backoff_max_s;
    return d / 2 + jitter_unit(h) * d / 2;
}

/* ==== Server-sent events ==== */

#define SSE_MAX_EVENT ((size_t)16 << 20)

/* One event's data: "[DONE]" ends the stream, {"error":...} is the
 * server failing mid-way (llama.cpp, vLLM and OpenAI all send it so),
 * anything else goes to the caller. */
static enum mt_status sse_dispatch(struct sse *s)
{
    json_error_t je;
    json_t *j;
    json_t *e;
    const char *m;
    enum mt_status st;

    if (s->data.len == 0)
        return MT_OK;
    if (strcmp(s->data.data, "[DONE]") == 0) {
        s->done = 1;
        return MT_OK;
    }
    j = json_loadb(s->data.data, s->data.len, 0, &je);
    mtx_buf_reset(&s->data);
    if (!json_is_object(j)) {
        json_decref(j);
        return mt_fail(&s->err, MT_EPARSE,
                       "event %zu is not a JSON object (%s)", s->events + 1,
                       je.text[0] ? je.text : "not an object");
    }
    e = json_object_get(j, "error");
    if (e) {
        m = json_string_value(json_object_get(e, "message"));
        s->failed = 1;
        mt_fail(&s->err, MT_EIO, "the server failed mid-stream: %.200s",
                m ? m : (json_string_value(e) ? json_string_value(e) : "?"));
        json_decref(j);
        return MT_EIO;
    }
    st = s->cb->on_event(s->cb->ctx, j, &s->err);
    json_decref(j);
    s->events++;
    return st;
}

/* One complete line (without its end); "data:" gathers, a blank line
 * dispatches, "event:", "id:", "retry:" and ":" comments are ignored. */
static enum mt_status sse_line(struct sse *s, const char *p, size_t n)
{
    enum mt_status st = MT_OK;

    if (n == 0)
        return sse_dispatch(s);
    if (n < 5 || strncmp(p, "data:", 5) != 0)
        return MT_OK;
    p += 5;
    n -= 5;
    if (n > 0 && *p == ' ') {
        p++;
        n--;
    }
    if (s->data.len > 0)
        st = mtx_buf_putc(&s->data, '\n');
    if (st == MT_OK)
        st = mtx_buf_append(&s->data, p, n);
    if (st != MT_OK)
        return mt_fail(&s->err, st, "event %zu is larger than %zu bytes",
                       s->events + 1, s->data.max - 1);
    return MT_OK;
}

/* Feeds n bytes of the stream; lines may end in LF, CRLF or CR. */
static enum mt_status sse_feed(struct sse *s, const char *p, size_t n)
{
    enum mt_status st = mtx_buf_append(&s->line, p, n);
    size_t from = 0;
    size_t i;

    if (st != MT_OK)
        return mt_fail(&s->err, st, "event %zu is larger than %zu bytes",
                       s->events + 1, s->line.max - 1);
    for (i = 0; st == MT_OK && !s->done && i < s->line.len; i++) {
        char c = s->line.data[i];
        if (c != '\n' && c != '\r')
            continue;
        if (c == '\r' && i + 1 == s->line.len)
            break; /* a CRLF may be split across reads */
        st = sse_line(s, s->line.data + from, i - from);
        if (c == '\r' && s->line.data[i + 1] == '\n')
            i++;
        from = i + 1;
    }
    memmove(s->line.data, s->line.data + from, s->line.len - from);
    s->line.len -= from;
    s->line.data[s->line.len] = '\0';
    return st;
}

static void sse_reset(struct sse *s)
{
    mtx_buf_reset(&s->line);
    mtx_buf_reset(&s->data);
    s->streamed = 0;
    s->first = 0;
    s->events = 0;
    s->done = 0;
    s->failed = 0;
    mt_error_clear(&s->err);
}

/* The stream ended: an event without its closing blank line still
 * counts. */
static void sse_finish(struct attempt *a)
{
    struct sse *s = a->sse;
    enum mt_status st = MT_OK;

    if (!s->done && s->first != '{' && s->line.len > 0)
        st = sse_line(s, s->line.data, s->line.len);
    if (st == MT_OK && !s->done)
        st = sse_dispatch(s);
    if (st != MT_OK) {
        a->cc = CURLE_WRITE_ERROR;
        a->wst = st;
    }
}

/* ==== One attempt ==== */

static size_t on_body(char *p, size_t size, size_t nmemb, void *user)
{
    struct attempt *a = user;
    size_t n = size * nmemb;
    long code = 0;

    if (a->sse && a->body.len == 0)
        curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &code);
    if (a->sse && code == 200) {
        if (!a->sse->streamed && n > 0)
            a->sse->first = p[0];
        a->sse->streamed = 1;
        a->wst = sse_feed(a->sse, p, n);
        return a->wst == MT_OK ? n : 0;
    }
    a->wst = mtx_buf_append(&a->body, p, n);
    if (a->wst != MT_OK)
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    return n;
}

/* Keeps "Server: NAME" (the server profile's hint) in a->server. */
static void server_header(struct attempt *a, const char *p, size_t n)
{
    size_t k = 7;

    while (k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    while (n > k && isspace((unsigned char)p[n - 1]))
        n--;
    if (n - k >= sizeof a->server)
        n = k + sizeof a->server - 1;
    memcpy(a->server, p + k, n - k);
    a->server[n - k] = '\0';
}

/* Parses "Retry-After: <seconds | HTTP-date>" and keeps "Server:". */
static size_t on_header(char *p, size_t size, size_t nmemb, void *user)
{
    struct attempt *a = user;
    size_t n = size * nmemb;
    char line[256];
    char *v;

    if (n >= 7 && strncasecmp(p, "server:", 7) == 0)
        server_header(a, p, n);
    if (n < 12 || n >= sizeof line || strncasecmp(p, "retry-after:", 12))
        return n;
    memcpy(line, p + 12, n - 12);
    line[n - 12] = '\0';
    for (v = line; isspace((unsigned char)*v); v++)
        ;
    if (isdigit((unsigned char)*v)) {
        a->retry_after = strtod(v, NULL);
    } else {
        time_t t = curl_getdate(v, NULL);
        if (t > 0)
            a->retry_after = t > time(NULL) ? (double)(t - time(NULL)) : 0;
    }
    return n;
}

static struct curl_slist *make_headers(const struct mt_http *h)
{
    struct curl_slist *l = NULL;
    struct curl_slist *t;
    char auth[1024];

    l = curl_slist_append(l, "Content-Type: application/json");
    if (!l)
        return NULL;
    t = curl_slist_append(l, "Expect:");
    if (t && h->key) {
        snprintf(auth, sizeof auth,
                 h->p.api_key_header ? "api-key: %s"
                                     : "Authorization: Bearer %s",
                 h->key);
        t = curl_slist_append(t, auth);
        memset(auth, 0, sizeof auth);
    }
    if (!t) {
        curl_slist_free_all(l);
        return NULL;
    }
    return t;
}

static void set_opts(CURL *c, const struct mt_http *h, const char *url,
                     const char *body, struct attempt *a)
{
    long ms = (long)(h->p.timeout_s * 1000.0);

    if (ms <= 0)
        ms = 1;
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    else
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms < 30000 ? ms : 30000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, a->curl_msg);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "medtrust/" MT_VERSION_STRING);
}

static enum mt_status attempt_once(struct mt_http *h, const char *url,
                                   const char *body, struct attempt *a)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hdr = make_headers(h);

    mtx_buf_reset(&a->body);
    a->wst = MT_OK;
    a->code = 0;
    a->retry_after = -1;
    a->curl_msg[0] = '\0';
    a->server[0] = '\0';
    if (!c || !hdr) {
        curl_slist_free_all(hdr);
        curl_easy_cleanup(c);
        return MT_ENOMEM;
    }
    set_opts(c, h, url, body, a);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    a->curl = c;
    if (a->sse)
        sse_reset(a->sse);
    sem_acquire(h);
    a->cc = curl_easy_perform(c);
    sem_release(h);
    if (a->cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->code);
    if (a->cc == CURLE_OK && a->sse && a->sse->streamed)
        sse_finish(a);
    if (a->server[0]) {
        pthread_mutex_lock(&h->mu);
        if (!h->server[0])
            memcpy(h->server, a->server, sizeof h->server);
        pthread_mutex_unlock(&h->mu);
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    a->curl = NULL;
    return MT_OK;
}

/* ==== Classifying a reply ==== */

/* Copies the server's own error message (OpenAI, vLLM or llama.cpp shape)
 * or the start of the body into buf. */
static void server_message(const struct attempt *a, char *buf, size_t n)
{
    json_t *j =
        a->body.data ? json_loadb(a->body.data, a->body.len, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *m = json_string_value(json_object_get(e, "message"));

    if (!m)
        m = json_string_value(e);
    if (!m)
        m = json_string_value(json_object_get(j, "message"));
    if (!m)
        m = json_string_value(json_object_get(j, "detail"));
    if (!m)
        m = a->body.data ? a->body.data : "";
    snprintf(buf, n, "%.200s", m);
    json_decref(j);
}

static int mentions_context(const char *msg)
{
    char low[256];
    size_t i;

    for (i = 0; msg[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)msg[i]);
    low[i] = '\0';
    /* not a bare "context": OpenAI's schema errors say "In context=(...)" */
    return strstr(low, "context length") != NULL ||
           strstr(low, "context size") != NULL ||
           strstr(low, "context window") != NULL ||
           strstr(low, "context_length") != NULL ||
           strstr(low, "too many tokens") != NULL ||
           strstr(low, "maximum input length") != NULL;
}

static enum mt_status fail_status(const struct mt_http *h, const char *url,
                                  const struct attempt *a, struct mt_error *err)
{
    char m[256];

    server_message(a, m, sizeof m);
    if (a->code == 401 || a->code == 403)
        return mt_fail(err, MT_EINVAL,
                       "%s: HTTP %ld unauthorized: set %s to a valid key "
                       "(server said: %s)",
                       url, a->code,
                       h->p.key_env ? h->p.key_env
                                    : "MEDTRUST_API_KEY (or OPENAI_API_KEY)",
                       m);
    if (a->code == 404)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s: HTTP 404 not found: check BASE_URL and MODEL in "
                       "%s (server said: %s)",
                       url, h->setting, m);
    if ((a->code == 400 || a->code == 413 || a->code == 422) &&
        mentions_context(m))
        return mt_fail(err, MT_ELIMIT,
                       "%s: the request exceeds the model's context length: "
                       "shorten the input or lower max_tokens, or pick a "
                       "model with a longer context in %s (server said: %s)",
                       url, h->setting, m);
    return mt_fail(err, MT_EINVAL, "%s: HTTP %ld: %s", url, a->code, m);
}

/* A 200 stream that stopped early or that the caller or server ended:
 * a cut-off or a mid-stream server error is retried like a 5xx; what the
 * caller refused (malformed event, cancel) is not. */
static enum verdict classify_sse(const char *url, const struct attempt *a,
                                 struct mt_error *err)
{
    const struct sse *s = a->sse;

    if (a->cc == CURLE_WRITE_ERROR && a->wst != MT_ENOMEM) {
        mt_fail(err, a->wst, "%s: stream: %s", url, s->err.msg);
        return s->failed ? V_RETRY : V_FAIL;
    }
    if (a->cc != CURLE_OK && a->cc != CURLE_OPERATION_TIMEDOUT) {
        mt_fail(err, MT_EIO, "%s: stream cut off after %zu events (%s)", url,
                s->events,
                a->curl_msg[0] ? a->curl_msg : curl_easy_strerror(a->cc));
        return V_RETRY;
    }
    if (a->cc != CURLE_OK || s->done)
        return V_OK; /* timeouts: classify() says so */
    if (s->events == 0 && s->first == '{') {
        mt_fail(err, MT_EPARSE,
                "%s: the reply is plain JSON, not server-sent events: the "
                "server ignores \"stream\": true",
                url);
        return V_FAIL;
    }
    mt_fail(err, MT_EIO,
            "%s: stream cut off after %zu events, before \"data: [DONE]\"", url,
            s->events);
    return V_RETRY;
}

static enum verdict classify(const struct mt_http *h, const char *url,
                             const struct attempt *a, struct mt_error *err)
{
    if (a->sse && a->sse->streamed) {
        enum verdict v = classify_sse(url, a, err);
        if (v != V_OK || a->cc == CURLE_OK)
            return v;
    }
    if (a->cc == CURLE_OPERATION_TIMEDOUT) {
        mt_fail(err, MT_EIO,
                "%s: no reply within %.1f s: raise --timeout or "
                "MEDTRUST_LLM_TIMEOUT, or check the server",
                url, h->p.timeout_s);
        return V_RETRY;
    }
    if (a->cc == CURLE_WRITE_ERROR && a->wst == MT_ENOMEM) {
        mt_fail(err, MT_ENOMEM, "%s: out of memory reading the reply", url);
        return V_FAIL;
    }
    if (a->cc == CURLE_WRITE_ERROR) {
        mt_fail(err, MT_ELIMIT,
                "%s: the reply passed %zu bytes, more than the request "
                "asked for (its budget follows from max_tokens): the "
                "server does not honour max_tokens",
                url, a->body.max - 1);
        return V_FAIL;
    }
    if (a->cc != CURLE_OK) {
        mt_fail(err, MT_EIO,
                "%s: cannot reach the server (%s): check "
                "BASE_URL in %s",
                url, a->curl_msg[0] ? a->curl_msg : curl_easy_strerror(a->cc),
                h->setting);
        return V_RETRY;
    }
    if (a->code == 200)
        return V_OK;
    if (a->code == 429 || a->code >= 500) {
        char m[256];
        server_message(a, m, sizeof m);
        mt_fail(err, MT_EIO, "%s: HTTP %ld: %s", url, a->code, m);
        return V_RETRY;
    }
    fail_status(h, url, a, err);
    return V_FAIL;
}

/* ==== Request ==== */

static enum mt_status parse_reply(const char *url, const struct attempt *a,
                                  json_t **reply, struct mt_error *err)
{
    json_error_t je;
    json_t *j =
        json_loadb(a->body.data ? a->body.data : "", a->body.len, 0, &je);

    if (!j)
        return mt_fail(err, MT_EPARSE,
                       "%s: reply is not JSON (line %d column %d: %s)", url,
                       je.line, je.column, je.text);
    if (!json_is_object(j)) {
        json_decref(j);
        return mt_fail(err, MT_EPARSE, "%s: reply is not a JSON object", url);
    }
    *reply = j;
    return MT_OK;
}

static enum mt_status gave_up(struct mt_error *e, uint32_t attempts)
{
    size_t n = strlen(e->msg);

    if (attempts > 1)
        snprintf(e->msg + n, sizeof e->msg - n, " (gave up after %u tries)",
                 attempts);
    return e->status;
}

/* Runs attempts until one succeeds, fails for good or the retries run
 * out, each on the endpoint the pool picks; a retry waits out its
 * backoff unless another endpoint is ready for it, and a failed probe
 * earns the call one retry more (probing is the pool's business). Before a
 * retry of a stream that delivered events the caller is told to drop them.
 * *served gets the base URL of the endpoint of the last attempt. */
static enum mt_status run_attempts(struct mt_http *h, const char *endpoint,
                                   const char *text, struct attempt *a,
                                   const char **served, struct mt_error *e)
{
    enum mt_status st = MT_OK;
    enum verdict v = V_FAIL;
    size_t at = 0;
    char url[2048];
    uint32_t k;
    uint32_t extra = 0; /* a failed probe's retry is not the caller's */
    int probe;

    for (k = 0; k <= h->p.max_retries + extra; k++) {
        if (k > 0) {
            double d = retry_delay(h, k - 1, a->retry_after);
            if (mtx_http_pool_size(h->pool) > 1 &&
                mtx_http_pool_other_ready(h->pool, at, mtx_clock_now()))
                d = 0;
            mt_log(MT_LOG_WARN, "%s; retry %u/%u in %.2f s", e->msg, k,
                   h->p.max_retries + extra, d);
            if (a->sse && a->sse->events > 0 && a->sse->cb->on_restart)
                a->sse->cb->on_restart(a->sse->cb->ctx);
            mtx_clock_sleep(d);
        }
        at = mtx_http_pool_pick(h->pool, mtx_clock_now(), &probe);
        snprintf(url, sizeof url, "%s/%s", mtx_http_pool_base(h->pool, at),
                 endpoint);
        st = attempt_once(h, url, text, a);
        v = st == MT_OK ? classify(h, url, a, e) : V_FAIL;
        mtx_http_pool_done(h->pool, at, probe, v == V_RETRY, mtx_clock_now(),
                           e->msg);
        if (st != MT_OK)
            return mt_fail(e, st, "http: out of memory");
        if (v != V_RETRY)
            break;
        if (probe && !extra)
            extra = 1;
    }
    *served = mtx_http_pool_base(h->pool, at);
    if (v == V_OK)
        return MT_OK;
    return v == V_RETRY ? gave_up(e, k) : e->status;
}

/* One request with retries: a plain JSON reply into *reply, or (s set)
 * a stream of events to s's callbacks. */
static enum mt_status post(struct mt_http *h, const char *endpoint,
                           const json_t *body, size_t max_reply, struct sse *s,
                           json_t **reply, const char **served,
                           struct mt_error *err)
{
    struct attempt a = {0,     CURLE_OK, "", -1, MT_BUF_INIT(max_reply + 1),
                        MT_OK, NULL,     s,  ""};
    struct mt_error local = {MT_OK, ""};
    struct mt_error *e = err ? err : &local;
    const char *at = NULL;
    char *text = json_dumps(body, JSON_COMPACT);
    enum mt_status st;

    if (!text)
        return mt_fail(err, MT_ENOMEM, "http: out of memory");
    st = run_attempts(h, endpoint, text, &a, &at, e);
    mt_free(text);
    text = NULL;
    if (st == MT_OK && !s) {
        char url[2048];
        snprintf(url, sizeof url, "%s/%s", at, endpoint);
        st = parse_reply(url, &a, reply, e);
    }
    if (served)
        *served = at;
    mtx_buf_free(&a.body);
    mt_free(text);
    return st;
}

/* The caller's budget, or the hard cap when it gave none or more. */
static size_t budget(size_t max_reply)
{
    return max_reply == 0 || max_reply > HTTP_MAX_REPLY ? HTTP_MAX_REPLY
                                                        : max_reply;
}

enum mt_status mtx_http_post_json(struct mt_http *h, const char *endpoint,
                                  const json_t *body, size_t max_reply,
                                  json_t **reply, const char **served,
                                  struct mt_error *err)
{
    return post(h, endpoint, body, budget(max_reply), NULL, reply, served, err);
}

enum mt_status mtx_http_post_sse(struct mt_http *h, const char *endpoint,
                                 const json_t *body, size_t max_reply,
                                 const struct mt_http_sse *cb,
                                 const char **served, struct mt_error *err)
{
    size_t ev =
        budget(max_reply) < SSE_MAX_EVENT ? budget(max_reply) : SSE_MAX_EVENT;
    struct sse s = {cb, MT_BUF_INIT(ev + 1), MT_BUF_INIT(ev + 1), 0, 0, 0, 0,
                    0,  {MT_OK, ""}};
    enum mt_status st =
        post(h, endpoint, body, budget(max_reply), &s, NULL, served, err);

    mtx_buf_free(&s.line);
    mtx_buf_free(&s.data);
    return st;
}

enum mt_status mtx_http_get_json(struct mt_http *h, const char *endpoint,
                                 size_t max_reply, json_t **reply,
                                 struct mt_error *err)
{
    struct attempt a = {
        0,     CURLE_OK, "",   -1, MT_BUF_INIT(budget(max_reply)),
        MT_OK, NULL,     NULL, ""};
    struct mt_error local = {MT_OK, ""};
    struct mt_error *e = err ? err : &local;
    char url[2048];
    enum mt_status st;

    snprintf(url, sizeof url, "%s/%s", mtx_http_pool_base(h->pool, 0),
             endpoint);
    st = attempt_once(h, url, NULL, &a);
    if (st != MT_OK)
        st = mt_fail(e, st, "http: out of memory");
    else if (classify(h, url, &a, e) != V_OK)
        st = e->status != MT_OK ? e->status : MT_EIO;
    else
        st = parse_reply(url, &a, reply, e);
    mtx_buf_free(&a.body);
    return st;
}

enum mt_status mtx_http_bad_field(const char *url, struct mt_error *err,
                                  const char *arr, size_t i, const char *rest)
{
    char f[96];

    if (i == MT_HTTP_NO_INDEX)
        snprintf(f, sizeof f, "%s", arr);
    else
        snprintf(f, sizeof f, "%s[%zu]%s", arr, i, rest);
    return mt_fail(err, MT_EPARSE,
                   "%s: malformed reply: missing or invalid field '%s'", url,
                   f);
}
