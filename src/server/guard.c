/* Connection guards against hostile clients: request framing that could
 * smuggle a second request (RFC 9112 section 6.3), too many query
 * arguments, and an absolute deadline for the request line and headers
 * that trickling bytes cannot extend (MHD's own timeout is an idle one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "core/clock.h"
#include "medtrust/core.h"
#include "server/guard.h"

/* ==== Framing ==== */

struct framing {
    unsigned ncl, nte;
    const char *cl; /* the first Content-Length */
    int cl_differs; /* a later one has another value */
    const char *te;
};

static enum MHD_Result frame_hdr(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
    struct framing *f = cls;

    (void)kind;
    if (strcasecmp(key, "Content-Length") == 0) {
        if (f->ncl++ == 0)
            f->cl = value;
        else if (strcmp(f->cl, value ? value : "") != 0)
            f->cl_differs = 1;
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->nte++;
        f->te = value;
    }
    return MHD_YES;
}

/* "chunked" alone, any case, spaces around it allowed. */
static int is_chunked(const char *v)
{
    size_t n;

    v += strspn(v, " \t");
    n = strcspn(v, " \t");
    return n == 7 && strncasecmp(v, "chunked", 7) == 0 &&
           v[n + strspn(v + n, " \t")] == '\0';
}

unsigned mtx_srv_framing(struct MHD_Connection *c, struct srv_framing *out,
                         char *why, size_t n)
{
    struct framing f;

    memset(&f, 0, sizeof f);
    memset(out, 0, sizeof *out);
    MHD_get_connection_values(c, MHD_HEADER_KIND, frame_hdr, &f);
    if (f.ncl && f.nte) {
        snprintf(why, n, "Content-Length and Transfer-Encoding together");
        return 400;
    }
    if (f.cl_differs) {
        snprintf(why, n, "Content-Length headers that disagree");
        return 400;
    }
    if (f.nte > 1 || (f.nte && !f.te)) {
        snprintf(why, n, "more than one Transfer-Encoding header");
        return 400;
    }
    if (f.nte && !is_chunked(f.te)) {
        snprintf(why, n,
                 "Transfer-Encoding '%.60s' is not supported (only "
                 "chunked)",
                 f.te);
        return 501;
    }
    if (f.ncl && (!f.cl[0] || strspn(f.cl, "0123456789") != strlen(f.cl) ||
                  strlen(f.cl) > 18)) {
        snprintf(why, n, "Content-Length '%.30s' is not a byte count", f.cl);
        return 400;
    }
    out->chunked = f.nte > 0;
    out->length = f.ncl ? strtoull(f.cl, NULL, 10) : 0;
    out->has_body = out->chunked || out->length > 0;
    return 0;
}

size_t mtx_srv_cut_args(char *uri, size_t max)
{
    char *q = strchr(uri, '?');
    size_t n = 1;
    char *p;

    if (!q || !q[1])
        return 0;
    for (p = q + 1; *p; p++)
        n += *p == '&';
    if (n > max)
        q[1] = '\0'; /* MHD parses the arguments after this call: none */
    return n;
}

/* ==== Header deadline ==== */

struct srv_conn {
    struct srv_conn *prev, *next;
    MHD_socket fd;
    double t0;      /* when the current request line could start */
    int in_headers; /* waiting for a request line and headers */
    int got_line;   /* ... and its request line has come */
};

static struct srv_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

/* Connections kept free below the cap, so that a new one always finds a
 * place: a client with a request to make is served, however many sit
 * idle. */
#define CONN_HEADROOM 8

/* Near the connection cap, the oldest connection that waits for a
 * request (idle, or trickling its headers) is shut down to make room for
 * the new one 'x' (conn_mu held). */
static void make_room(struct mt_server *s, const struct srv_conn *x)
{
    struct srv_conn *c, *oldest = NULL;

    if (s->conn_cap == 0 || s->nconns + CONN_HEADROOM < s->conn_cap)
        return;
    for (c = s->conns; c; c = c->next)
        if (c != x && c->in_headers && c->fd != MHD_INVALID_SOCKET &&
            (!oldest || c->t0 <= oldest->t0))
            oldest = c;
    if (!oldest)
        return;
    oldest->in_headers = 0;
    if (shutdown(oldest->fd, SHUT_RDWR) == 0 && s->evicted++ % 100 == 0)
        mt_log(MT_LOG_WARN,
               "http: %zu connections, near the cap of %u: closed the one "
               "idle longest (%zu so far)",
               s->nconns, s->conn_cap, s->evicted);
}

static void conn_started(struct mt_server *s, struct MHD_Connection *c,
                         void **ctx)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct srv_conn *x = mt_calloc(1, sizeof *x);

    *ctx = x;
    if (!x)
        return;
    x->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
    x->t0 = mtx_clock_now();
    x->in_headers = 1;
    pthread_mutex_lock(&s->conn_mu);
    x->next = s->conns;
    if (s->conns)
        s->conns->prev = x;
    s->conns = x;
    s->nconns++;
    make_room(s, x);
    pthread_mutex_unlock(&s->conn_mu);
}

/* MHD reports the close before it closes the socket, so the reaper never
 * touches a descriptor that a new connection may have reused. */
static void conn_closed(struct mt_server *s, void **ctx)
{
    struct srv_conn *x = *ctx;

    if (!x)
        return;
    pthread_mutex_lock(&s->conn_mu);
    if (x->prev)
        x->prev->next = x->next;
    else
        s->conns = x->next;
    if (x->next)
        x->next->prev = x->prev;
    s->nconns--;
    pthread_mutex_unlock(&s->conn_mu);
    mt_free(x);
    *ctx = NULL;
}

void mtx_srv_conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        conn_started(cls, c, ctx);
    else
        conn_closed(cls, ctx);
}

void mtx_srv_conn_phase(struct mt_server *s, struct MHD_Connection *c,
                        int in_headers)
{
    struct srv_conn *x = conn_of(c);

    if (!x)
        return;
    pthread_mutex_lock(&s->conn_mu);
    x->in_headers = in_headers;
    x->got_line = 0;
    x->t0 = mtx_clock_now();
    pthread_mutex_unlock(&s->conn_mu);
}

void mtx_srv_conn_line(struct mt_server *s, struct MHD_Connection *c)
{
    struct srv_conn *x = conn_of(c);

    if (!x)
        return;
    pthread_mutex_lock(&s->conn_mu);
    x->got_line = 1;
    pthread_mutex_unlock(&s->conn_mu);
}

/* Shuts down every connection past the deadline; MHD then closes it.
 * One that sent a request line and then stalled in its headers is what
 * the deadline is for (a slow-headers client): a warning. One without a
 * whole request line is most often a browser's preconnect socket
 * (Chromium opens a spare one on every page view and may never use it)
 * or an idle keep-alive, so only a debug line says so (a client that
 * trickles its request line is cut all the same, just as quietly). */
static void reap(struct mt_server *s, double now)
{
    struct srv_conn *x;
    unsigned n[2] = {0, 0}; /* [0] no request line, [1] stalled headers */
    int i;

    if (s->p.header_timeout_s == 0)
        return;
    for (x = s->conns; x; x = x->next) {
        if (!x->in_headers || now - x->t0 < s->p.header_timeout_s)
            continue;
        x->in_headers = 0;
        if (x->fd != MHD_INVALID_SOCKET && shutdown(x->fd, SHUT_RDWR) == 0)
            n[x->got_line != 0]++;
    }
    for (i = 0; i < 2; i++)
        if (n[i])
            mt_log(i ? MT_LOG_WARN : MT_LOG_DEBUG,
                   "http: closed %u connection%s %s after %u s", n[i],
                   n[i] == 1 ? "" : "s",
                   i ? "whose headers did not arrive"
                     : "without a request line (preconnect or idle)",
                   s->p.header_timeout_s);
}

static void *reaper(void *arg)
{
    struct mt_server *s = arg;
    struct timespec ts;

    pthread_mutex_lock(&s->conn_mu);
    while (!s->reaper_stop) {
        reap(s, mtx_clock_now());
        pthread_mutex_unlock(&s->conn_mu);
        mtx_srv_sse_tick(s, mtx_clock_now());
        pthread_mutex_lock(&s->conn_mu);
        ts = mtx_clock_deadline(0.25); /* deadlines are whole seconds */
        pthread_cond_timedwait(&s->conn_cv, &s->conn_mu, &ts);
    }
    pthread_mutex_unlock(&s->conn_mu);
    return NULL;
}

enum mt_status mtx_srv_guard_start(struct mt_server *s, struct mt_error *err)
{
    if (s->p.header_timeout_s == 0 && s->p.sse_idle_s == 0)
        return MT_OK;
    if (pthread_create(&s->reaper, NULL, reaper, s) != 0)
        return mt_fail(err, MT_EINTERNAL, "cannot start a thread");
    s->reaper_on = 1;
    return MT_OK;
}

void mtx_srv_guard_stop(struct mt_server *s)
{
    if (!s->reaper_on)
        return;
    pthread_mutex_lock(&s->conn_mu);
    s->reaper_stop = 1;
    pthread_cond_broadcast(&s->conn_cv);
    pthread_mutex_unlock(&s->conn_mu);
    pthread_join(s->reaper, NULL);
    s->reaper_on = 0;
}
