/* Endpoint pool of an OpenAI-compatible client: least outstanding
 * requests, take-out on failure, a real request as the probe back (a
 * circuit breaker's half-open state), out times doubling per failed
 * probe. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "medtrust/core.h"
#include "model/http_pool.h"

struct endpoint {
    char *base;
    uint32_t inflight;
    int out;      /* taken out */
    int probing;  /* its probe is in flight */
    double until; /* out until then */
    double out_s; /* the current out time */
};

struct mtx_http_pool {
    pthread_mutex_t mu;
    struct endpoint e[MTX_POOL_MAX];
    size_t n;
    size_t turn; /* where ties start, so that calls take turns */
};

/* ==== Setup ==== */

static char *make_base(const char *url, size_t n)
{
    char *b;

    while (n > 0 && url[n - 1] == '/')
        n--;
    b = mt_malloc(n + 4);
    if (!b)
        return NULL;
    memcpy(b, url, n);
    b[n] = '\0';
    if ((n < 3 || strcmp(b + n - 3, "/v1") != 0) &&
        !strstr(b, "/openai/deployments/")) /* Azure's legacy path */
        memcpy(b + n, "/v1", 4);
    return b;
}

static enum mt_status add(struct mtx_http_pool *p, const char *u, size_t n,
                          const char *setting, struct mt_error *err)
{
    if (n == 0 ||
        (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
        return mt_fail(err, MT_EINVAL,
                       "'%.*s' is not an http(s) URL: fix BASE_URL in %s",
                       (int)n, u, setting);
    if (p->n == MTX_POOL_MAX)
        return mt_fail(err, MT_ELIMIT, "more than %d endpoints in %s",
                       MTX_POOL_MAX, setting);
    p->e[p->n].base = make_base(u, n);
    if (!p->e[p->n].base)
        return mt_fail(err, MT_ENOMEM, "http client: out of memory");
    p->e[p->n++].out_s = MTX_POOL_OUT_S;
    return MT_OK;
}

enum mt_status mtx_http_pool_new(const char *list, const char *setting,
                                 struct mtx_http_pool **out,
                                 struct mt_error *err)
{
    struct mtx_http_pool *p = mt_calloc(1, sizeof *p);
    enum mt_status st = p ? MT_OK : MT_ENOMEM;
    const char *s = list;

    if (!p)
        return mt_fail(err, st, "http client: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    for (;;) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        st = add(p, s, n, setting, err);
        if (st != MT_OK || !c)
            break;
        s = c + 1;
    }
    if (st != MT_OK) {
        mtx_http_pool_free(p);
        return st;
    }
    *out = p;
    return MT_OK;
}

void mtx_http_pool_free(struct mtx_http_pool *p)
{
    size_t i;

    if (!p)
        return;
    for (i = 0; i < p->n; i++)
        mt_free(p->e[i].base);
    pthread_mutex_destroy(&p->mu);
    mt_free(p);
}

size_t mtx_http_pool_size(const struct mtx_http_pool *p)
{
    return p->n;
}

const char *mtx_http_pool_base(const struct mtx_http_pool *p, size_t i)
{
    return p->e[i].base;
}

/* ==== Choosing ==== */

static int probe_due(const struct endpoint *e, double now)
{
    return e->out && !e->probing && now >= e->until;
}

/* Under the lock: a probe due, else the in endpoint with the fewest in
 * flight (from p->turn on), else the out one due back first. */
static size_t choose(struct mtx_http_pool *p, double now)
{
    size_t best = p->n;
    size_t soon = 0;
    size_t k;

    for (k = 0; k < p->n; k++) {
        size_t i = (p->turn + k) % p->n;
        const struct endpoint *e = &p->e[i];
        if (probe_due(e, now))
            return i;
        if (!e->out && (best == p->n || e->inflight < p->e[best].inflight))
            best = i;
        if (e->out && e->until < p->e[soon].until)
            soon = i;
    }
    return best < p->n ? best : soon;
}

size_t mtx_http_pool_pick(struct mtx_http_pool *p, double now, int *probe)
{
    size_t i;

    *probe = 0;
    if (p->n == 1)
        return 0;
    pthread_mutex_lock(&p->mu);
    i = choose(p, now);
    p->turn = (i + 1) % p->n;
    p->e[i].inflight++;
    if (p->e[i].out && !p->e[i].probing)
        *probe = p->e[i].probing = 1;
    pthread_mutex_unlock(&p->mu);
    return i;
}

void mtx_http_pool_done(struct mtx_http_pool *p, size_t i, int probe,
                        int failed, double now, const char *why)
{
    struct endpoint *e = &p->e[i];
    const char *w = why ? why : "no reason given";

    if (p->n == 1)
        return;
    pthread_mutex_lock(&p->mu);
    e->inflight--;
    if (failed && e->out && probe) {
        e->out_s = e->out_s * 2 < MTX_POOL_OUT_MAX_S ? e->out_s * 2
                                                     : MTX_POOL_OUT_MAX_S;
        e->until = now + e->out_s;
        mt_log(MT_LOG_WARN,
               "model endpoint %s failed its probe (%s): out for %.0f s more",
               e->base, w, e->out_s);
    } else if (failed && !e->out) {
        e->out = 1;
        e->out_s = MTX_POOL_OUT_S;
        e->until = now + e->out_s;
        mt_log(MT_LOG_WARN,
               "model endpoint %s failed (%s): taken out for "
               "%.0f s, then probed",
               e->base, w, e->out_s);
    } else if (!failed && e->out && probe) {
        e->out = 0;
        e->out_s = MTX_POOL_OUT_S;
        mt_log(MT_LOG_WARN, "model endpoint %s answered its probe: back in",
               e->base);
    }
    if (probe)
        e->probing = 0;
    pthread_mutex_unlock(&p->mu);
}

int mtx_http_pool_other_ready(struct mtx_http_pool *p, size_t not, double now)
{
    size_t i;
    int ready = 0;

    pthread_mutex_lock(&p->mu);
    for (i = 0; i < p->n && !ready; i++)
        ready = i != not &&(!p->e[i].out || probe_due(&p->e[i], now));
    pthread_mutex_unlock(&p->mu);
    return ready;
}
