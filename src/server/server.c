/* The server over GNU libmicrohttpd: epoll with a thread pool, bodies
 * gathered into bounded buffers (413 past max_body), responses with
 * security headers, event streams that suspend their connection while
 * their job has nothing new, store leases, and graceful shutdown. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "medtrust/core.h"
#include "server/guard.h"
#include "server/srv_int.h"
#include "store/pg.h"

void mt_server_default_params(struct mt_server_params *p)
{
    memset(p, 0, sizeof *p);
    p->listen = "127.0.0.1:8080";
    p->threads = 4;
    p->llm_jobs = 4;
    p->max_queued = 256;
    p->max_body = (size_t)8 << 20;
    p->rate_per_s = 20;
    p->rate_burst = 40;
    p->timeout_s = 30;
    p->header_timeout_s = 10;
    p->max_conns_per_ip = 64;
    p->login_failures = 5;
    p->login_lock_s = 2;
    p->login_lock_max_s = 900;
    p->job_timeout_s = 600;
    p->session_ttl_s = 12 * 3600;
    p->job_lease_s = 30;
    p->event_retention_s = 7 * 86400;
    p->replay_max = (size_t)1 << 20;
    p->sse_idle_s = 15;
    p->grace_s = 30;
}

/* ==== Store leases ==== */

static void lease_close(struct srv_lease *l)
{
    mt_state_close(l->state); /* before the store it may borrow */
    mt_store_close(l->store);
    mt_free(l);
}

static enum mt_status lease_new(struct mt_server *s, struct srv_lease **out,
                                struct mt_error *err)
{
    struct srv_lease *l = mt_calloc(1, sizeof *l);
    enum mt_status st;

    if (!l)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mt_store_open(s->db_dir, NULL, &l->store, err);
    if (st == MT_OK)
        st = s->state_url ? mt_state_open(s->state_url, &l->state, err)
                          : mt_state_from_store(l->store, &l->state, err);
    if (st != MT_OK) {
        lease_close(l);
        return st;
    }
    *out = l;
    return MT_OK;
}

enum mt_status mtx_srv_lease_get(struct mt_server *s, struct srv_lease **out,
                                 struct mt_error *err)
{
    struct srv_lease *l;
    int down;

    pthread_mutex_lock(&s->lease_mu);
    l = s->free_leases;
    if (l)
        s->free_leases = l->next;
    down = s->state_down;
    pthread_mutex_unlock(&s->lease_mu);
    if (l) {
        *out = l;
        return MT_OK;
    }
    /* at once, not a connection attempt per request: the waiter tries */
    if (down)
        return mt_fail(err, MT_EIO,
                       "the shared state is not reachable yet (the server "
                       "keeps trying): %s",
                       s->state_err.msg);
    return lease_new(s, out, err);
}

void mtx_srv_lease_put(struct mt_server *s, struct srv_lease *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&s->lease_mu);
    l->next = s->free_leases;
    s->free_leases = l;
    pthread_mutex_unlock(&s->lease_mu);
}

/* ==== Set-up and tear-down without the network ==== */

static enum mt_status copy_params(struct mt_server *s,
                                  const struct mt_server_params *p,
                                  struct mt_error *err)
{
    s->p = *p;
    if (!p->db_dir)
        return mt_fail(err, MT_EINVAL, "the server needs a store (--db)");
    if (s->p.threads == 0 || s->p.max_body == 0 ||
        (s->p.llm_jobs == 0 && !p->state_url))
        return mt_fail(err, MT_EINVAL,
                       "threads, LLM jobs and the body "
                       "limit must be at least 1 (LLM jobs may be 0 with a "
                       "shared state, whose workers run them)");
    if (p->headless && (!p->state_url || p->llm_jobs == 0))
        return mt_fail(err, MT_EINVAL,
                       "a server without HTTP runs the shared queue's "
                       "jobs: it needs a shared state and 1 LLM job or more");
    if (s->p.replay_max == 0)
        s->p.replay_max = (size_t)1 << 20;
    s->db_dir = mt_strdup(p->db_dir);
    s->listen = mt_strdup(p->listen ? p->listen : "127.0.0.1:8080");
    s->data_dir = p->data_dir ? mt_strdup(p->data_dir) : NULL;
    s->llm_spec = p->llm_spec ? mt_strdup(p->llm_spec) : NULL;
    s->nli_spec = p->nli_spec ? mt_strdup(p->nli_spec) : NULL;
    s->state_url = p->state_url ? mt_strdup(p->state_url) : NULL;
    s->buckets = mt_calloc(SRV_RL_SLOTS, sizeof *s->buckets);
    s->throttle = mt_calloc(SRV_RL_SLOTS, sizeof *s->throttle);
    if (!s->db_dir || !s->listen || (p->data_dir && !s->data_dir) ||
        (p->llm_spec && !s->llm_spec) || (p->nli_spec && !s->nli_spec) ||
        (p->state_url && !s->state_url) || !s->buckets || !s->throttle)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    s->p.db_dir = s->db_dir;
    s->p.listen = s->listen;
    s->p.data_dir = s->data_dir;
    s->p.llm_spec = s->llm_spec;
    s->p.nli_spec = s->nli_spec;
    s->p.state_url = s->state_url;
    s->p.registration = NULL;
    s->p.llm_choices = NULL; /* kept split in s->choice_* */
    return mtx_srv_models_init(s, p->llm_choices, err);
}

/* Opens the first lease (creating and migrating the store) and applies
 * the registration setting. */
static enum mt_status first_lease(struct mt_server *s, const char *reg,
                                  struct mt_error *err)
{
    struct srv_lease *l = NULL;
    enum mt_status st = lease_new(s, &l, err);

    if (st == MT_OK && !s->state_url && mt_store_schema_version(l->store) < 2)
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "%s: store has no accounts "
                     "tables",
                     s->db_dir);
    if (st == MT_OK && reg && strcmp(reg, "open") != 0 &&
        strcmp(reg, "closed") != 0)
        st = mt_fail(err, MT_EINVAL,
                     "registration is open or closed, not "
                     "'%s'",
                     reg);
    if (st == MT_OK && reg)
        st = mt_setting_put(l->state, "registration", reg, err);
    mtx_srv_lease_put(s, l);
    return st;
}

/* ==== PostgreSQL away at start ====
 * A --state server that finds PostgreSQL down (mtx_pg_down: nothing
 * answers, or it refuses connections while starting) still starts: it
 * listens, /v1/health says 503 not ready, requests that need the state
 * get 503 at once, and a thread tries the first lease again with backoff
 * (0.1 s doubling to 5 s). Once it opens, the registration setting is
 * applied and the server is ready; the job threads open their own
 * connections as they do after any loss. */

int mtx_srv_state_down(struct mt_server *s)
{
    int down;

    pthread_mutex_lock(&s->lease_mu);
    down = s->state_down;
    pthread_mutex_unlock(&s->lease_mu);
    return down;
}

/* Waits up to 'sec' for the server to stop; 1 when it is stopping. */
static int state_nap(struct mt_server *s, double sec)
{
    return mtx_clock_nap(&s->lease_mu, &s->state_cv, &s->state_wait_stop, sec);
}

static void *state_wait_main(void *arg)
{
    struct mt_server *s = arg;
    double wait = 0.1;

    while (!state_nap(s, wait)) {
        struct mt_error e = {MT_OK, ""};
        enum mt_status st = first_lease(s, s->state_reg, &e);

        pthread_mutex_lock(&s->lease_mu);
        if (st == MT_OK)
            s->state_down = 0;
        else
            s->state_err = e;
        pthread_mutex_unlock(&s->lease_mu);
        if (st == MT_OK) {
            mt_log(MT_LOG_INFO, "server: the shared state is reachable: "
                                "ready");
            break;
        }
        wait = wait * 2 > 5 ? 5 : wait * 2;
    }
    return NULL;
}

/* first_lease, or when PostgreSQL is away the waiter above. */
static enum mt_status state_start(struct mt_server *s, const char *reg,
                                  struct mt_error *err)
{
    enum mt_status st = first_lease(s, reg, err);

    if (st != MT_EIO || !s->state_url || !mtx_pg_down(s->state_url))
        return st;
    s->state_reg = reg ? mt_strdup(reg) : NULL;
    if (reg && !s->state_reg)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    s->state_err = *err;
    s->state_down = 1;
    if (pthread_create(&s->state_waiter, NULL, state_wait_main, s) != 0)
        return mt_fail(err, MT_EINTERNAL, "cannot start a thread");
    s->state_waiting = 1;
    mt_log(MT_LOG_WARN,
           "server: %s; serving not ready, and trying again with backoff",
           err->msg);
    mt_error_clear(err);
    return MT_OK;
}

static void state_wait_stop(struct mt_server *s)
{
    if (!s->state_waiting)
        return;
    pthread_mutex_lock(&s->lease_mu);
    s->state_wait_stop = 1;
    pthread_cond_broadcast(&s->state_cv);
    pthread_mutex_unlock(&s->lease_mu);
    pthread_join(s->state_waiter, NULL);
    s->state_waiting = 0;
}

/* The server's one retriever, lazy: the index may be built after the
 * server starts, and the embedder loads on the first dense query. The
 * reranker (--reranker) opens now, so a bad one stops the start; the
 * retriever keeps its own copy of the spec. */
static enum mt_status open_retriever(struct mt_server *s, struct mt_error *err)
{
    struct mt_retriever_params rp;

    mt_retriever_default_params(&rp);
    rp.db_dir = s->db_dir;
    rp.reranker_spec = s->p.reranker_spec;
    rp.lazy = 1;
    s->p.reranker_spec = NULL; /* the caller's; mt_retriever_has_reranker */
    return mt_retriever_open(&rp, &s->ret, err);
}

enum mt_status mtx_srv_init(struct mt_server *s,
                            const struct mt_server_params *p,
                            struct mt_error *err)
{
    enum mt_status st;

    s->store_lock = -1;
    pthread_mutex_init(&s->lease_mu, NULL);
    pthread_mutex_init(&s->rl_mu, NULL);
    pthread_mutex_init(&s->req_mu, NULL);
    pthread_cond_init(&s->req_cv, NULL);
    pthread_mutex_init(&s->agent_mu, NULL);
    pthread_mutex_init(&s->qa_mu, NULL);
    pthread_mutex_init(&s->conn_mu, NULL);
    pthread_mutex_init(&s->sse_mu, NULL);
    pthread_cond_init(&s->conn_cv, NULL);
    pthread_cond_init(&s->state_cv, NULL);
    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = copy_params(s, p, err);
    if (st == MT_OK)
        st = mtx_srv_logs_open(s, err);
    if (st == MT_OK)
        st = state_start(s, p->registration, err);
    if (st == MT_OK)
        st = mtx_srv_runs_recover(s, err);
    if (st == MT_OK)
        st = open_retriever(s, err);
    if (st == MT_OK)
        st = mtx_srv_jobs_start(s, err);
    return st;
}

void mtx_srv_fini(struct mt_server *s)
{
    struct srv_lease *l;

    state_wait_stop(s);
    mtx_srv_jobs_stop(s, 0);
    mtx_jobs_free(s->jobs);
    s->jobs = NULL;
    mtx_srv_agents_close(s); /* no job runs any more */
    mtx_srv_qa_close(s);
    while ((l = s->free_leases) != NULL) {
        s->free_leases = l->next;
        lease_close(l);
    }
    mt_retriever_close(s->ret);
    mtx_srv_runs_unlock(s);
    mtx_srv_logs_close(s);
    mt_free(s->buckets);
    mt_free(s->throttle);
    mt_free(s->db_dir);
    mt_free(s->listen);
    mt_free(s->data_dir);
    mt_free(s->llm_spec);
    mtx_srv_models_free(s);
    mt_free(s->nli_spec);
    mt_free(s->state_url);
    mt_free(s->state_reg);
    pthread_cond_destroy(&s->state_cv);
    pthread_mutex_destroy(&s->agent_mu);
    pthread_mutex_destroy(&s->qa_mu);
    pthread_mutex_destroy(&s->conn_mu);
    pthread_mutex_destroy(&s->sse_mu);
    pthread_cond_destroy(&s->conn_cv);
    pthread_mutex_destroy(&s->lease_mu);
    pthread_mutex_destroy(&s->rl_mu);
    pthread_mutex_destroy(&s->req_mu);
    pthread_cond_destroy(&s->req_cv);
}

/* ==== Event streams ==== */

struct srv_sse {
    struct mt_server *s;
    struct mtx_job *j;
    struct MHD_Connection *c;
    struct mtx_job_cursor cur;
    struct srv_sse *prev, *next; /* s->sse_list, under s->sse_mu */
    double last;                 /* when it last sent bytes */
    int ping;                    /* send a keep-alive comment next */
};

static void sse_suspend(void *w)
{
    MHD_suspend_connection(((struct srv_sse *)w)->c);
}

static void sse_wake(void *w)
{
    MHD_resume_connection(((struct srv_sse *)w)->c);
}

#define SSE_STR2(x) #x
#define SSE_STR(x) SSE_STR2(x)

/* A comment line: EventSource ignores it; writing it finds a client that
 * went away. */
static const char keep_alive[] = ": keep-alive\n\n";

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct srv_sse *x = cls;
    int end = 0, ping;
    size_t n;

    (void)pos;
    pthread_mutex_lock(&x->s->sse_mu);
    ping = x->ping && !x->cur.cur && max >= sizeof keep_alive - 1;
    x->ping = 0;
    pthread_mutex_unlock(&x->s->sse_mu);
    if (ping) {
        memcpy(buf, keep_alive, sizeof keep_alive - 1);
        n = sizeof keep_alive - 1;
    } else {
        n = mtx_job_read(x->j, &x->cur, buf, max, &end, x, sse_suspend,
                         sse_wake);
    }
    if (end)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n > 0) {
        pthread_mutex_lock(&x->s->sse_mu);
        x->last = mtx_clock_now();
        pthread_mutex_unlock(&x->s->sse_mu);
    }
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    struct srv_sse *x = cls;
    struct mt_server *s = x->s;

    pthread_mutex_lock(&s->sse_mu);
    if (x->prev)
        x->prev->next = x->next;
    else
        s->sse_list = x->next;
    if (x->next)
        x->next->prev = x->prev;
    s->sse_open--;
    pthread_mutex_unlock(&s->sse_mu);
    mtx_job_unwait(x->j, x);
    mtx_job_detach(x->j);
    mtx_job_release(x->j);
    mtx_job_cursor_free(&x->cur);
    mt_free(x);
}

void mtx_srv_sse_tick(struct mt_server *s, double now)
{
    struct srv_sse *x;

    if (s->p.sse_idle_s == 0)
        return;
    pthread_mutex_lock(&s->sse_mu);
    for (x = s->sse_list; x; x = x->next)
        if (!x->ping && now - x->last >= s->p.sse_idle_s) {
            x->ping = 1;
            x->last = now; /* the next one after another idle bound */
            mtx_job_poke(x->j, x);
        }
    pthread_mutex_unlock(&s->sse_mu);
}

size_t mtx_srv_sse_open(struct mt_server *s)
{
    size_t n;

    pthread_mutex_lock(&s->sse_mu);
    n = s->sse_open;
    pthread_mutex_unlock(&s->sse_mu);
    return n;
}

/* The answer to one stream too many on a job: 429 with an "error" event
 * a client can read (and Retry-After), not a stream that ends cleanly. */
static struct MHD_Response *too_many_streams(struct srv_resp *rs)
{
    static const char ev[] =
        "event: error\ndata: {\"error\":\"too_many_streams\",\"message\":"
        "\"this run already has the most event streams one run may have "
        "open (" SSE_STR(SRV_STREAMS_PER_JOB) "): close one, or read the "
                                              "run with GET /v1/runs/ID\"}\n\n";

    rs->status = 429;
    rs->retry_after = 5;
    return MHD_create_response_from_buffer(sizeof ev - 1, (void *)(uintptr_t)ev,
                                           MHD_RESPMEM_PERSISTENT);
}

/* A live job streams; a finished one answers with the body the handler
 * prepared (its final state as one "done" event). */
static struct MHD_Response *
sse_response(struct mt_server *s, struct MHD_Connection *c, struct srv_resp *rs)
{
    struct mtx_job *j = mtx_jobs_find(s->jobs, rs->sse_run);
    struct srv_sse *x;
    struct MHD_Response *r;

    if (j && !mtx_job_attach(j)) {
        mtx_job_release(j);
        return too_many_streams(rs);
    }
    x = j ? mt_calloc(1, sizeof *x) : NULL;
    if (!x) {
        if (j)
            mtx_job_detach(j);
        mtx_job_release(j);
        return NULL;
    }
    x->s = s;
    x->j = j;
    x->c = c;
    x->last = mtx_clock_now();
    pthread_mutex_lock(&s->sse_mu);
    x->next = s->sse_list;
    if (s->sse_list)
        s->sse_list->prev = x;
    s->sse_list = x;
    s->sse_open++;
    pthread_mutex_unlock(&s->sse_mu);
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, x,
                                          sse_free);
    if (!r)
        sse_free(x);
    return r;
}

/* ==== Requests ==== */

struct conn {
    struct mt_buf body;
    double t0;
    int started;  /* the access handler has seen this request */
    int too_big;  /* the body passed the route's limit: discarded */
    size_t nargs; /* query arguments (cut past SRV_MAX_ARGS) */
};

static const char *hdr_get(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

static const char *arg_get(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static void remote_addr(struct MHD_Connection *c, char *buf, size_t n)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    snprintf(buf, n, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
                  buf, (socklen_t)n);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6,
                  &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                  buf, (socklen_t)n);
}

static void add_headers(struct mt_server *s, struct MHD_Response *r,
                        const struct srv_resp *rs)
{
    char num[16];

    MHD_add_response_header(r, "Content-Type",
                            rs->type ? rs->type : "application/json");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options",
                            rs->frame_self ? "SAMEORIGIN" : "DENY");
    if (rs->csp)
        MHD_add_response_header(r, "Content-Security-Policy", rs->csp);
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control",
                            rs->static_body ? "no-cache" : "no-store");
    if (rs->sse_run)
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
    if (rs->cookie[0])
        MHD_add_response_header(r, "Set-Cookie", rs->cookie);
    if (rs->disposition[0])
        MHD_add_response_header(r, "Content-Disposition", rs->disposition);
    if (rs->retry_after) {
        snprintf(num, sizeof num, "%u", rs->retry_after);
        MHD_add_response_header(r, "Retry-After", num);
    }
    pthread_mutex_lock(&s->req_mu);
    if (s->stopping || rs->close)
        MHD_add_response_header(r, "Connection", "close");
    pthread_mutex_unlock(&s->req_mu);
}

static enum MHD_Result send_resp(struct mt_server *s, struct MHD_Connection *c,
                                 struct srv_resp *rs)
{
    static char empty[1];
    struct MHD_Response *r = rs->sse_run ? sse_response(s, c, rs) : NULL;
    enum MHD_Result ret;

    if (!r && rs->static_body)
        r = MHD_create_response_from_buffer(rs->len,
                                            (void *)(uintptr_t)rs->static_body,
                                            MHD_RESPMEM_PERSISTENT);
    else if (!r)
        r = MHD_create_response_from_buffer(
            rs->len, rs->body ? rs->body : empty, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    add_headers(s, r, rs);
    ret = MHD_queue_response(c, rs->status, r);
    MHD_destroy_response(r);
    return ret;
}

static void fill_req(struct srv_req *rq, struct MHD_Connection *c,
                     const struct conn *cc, const char *url, const char *method,
                     char *remote, size_t nremote)
{
    memset(rq, 0, sizeof *rq);
    remote_addr(c, remote, nremote);
    rq->method = method;
    rq->path = url;
    rq->header = hdr_get;
    rq->arg = arg_get;
    rq->ctx = c;
    rq->body = cc->body.data ? cc->body.data : "";
    rq->body_len = cc->body.len;
    rq->remote = remote;
    rq->t0 = cc->t0;
}

/* Sends the answer, logs it and frees it. */
static enum MHD_Result respond(struct mt_server *s, struct MHD_Connection *c,
                               struct srv_req *rq, struct srv_resp *rs)
{
    enum MHD_Result ret = send_resp(s, c, rs);

    mtx_srv_log_access(s, rq, rs);
    mtx_srv_resp_free(rs);
    return ret;
}

/* Routes the request, sends the answer and logs it. */
static enum MHD_Result dispatch(struct mt_server *s, struct MHD_Connection *c,
                                struct conn *cc, const char *url,
                                const char *method)
{
    struct srv_req rq;
    struct srv_resp rs;
    char remote[64];
    int stopping;

    memset(&rs, 0, sizeof rs);
    fill_req(&rq, c, cc, url, method, remote, sizeof remote);
    pthread_mutex_lock(&s->req_mu);
    stopping = s->stopping;
    pthread_mutex_unlock(&s->req_mu);
    if (cc->too_big)
        mtx_srv_error(&rs, 413, "request body too large (limit %zu bytes)",
                      cc->body.max - 1);
    else if (stopping)
        mtx_srv_error(&rs, 503, "the server is shutting down");
    else
        mtx_srv_handle(s, &rq, &rs);
    return respond(s, c, &rq, &rs);
}

/* The request's headers are all in and its body is not read yet: refuse
 * framing that could smuggle a request, too many arguments, a request
 * its route would refuse on the headers alone (no session, wrong CSRF
 * token: nothing unauthenticated is buffered), and a Content-Length past
 * the route's limit. A refusal closes the connection, unread body and
 * all. Returns 1 when it answered. */
static int screen(struct mt_server *s, struct MHD_Connection *c,
                  struct conn *cc, struct srv_req *rq, struct srv_resp *rs)
{
    struct srv_framing f;
    char why[160];
    unsigned code = mtx_srv_framing(c, &f, why, sizeof why);
    size_t max = 0;

    rs->close = 1;
    if (cc->nargs > SRV_MAX_ARGS)
        mtx_srv_error(rs, 431, "%zu query arguments (at most %d)", cc->nargs,
                      SRV_MAX_ARGS);
    else if (code)
        mtx_srv_error(rs, code, "refused: %s", why);
    else if (mtx_srv_screen(s, rq, rs, &max) != 0)
        rs->close = f.has_body;
    else if (f.length > max)
        mtx_srv_error(rs, 413, "request body too large (limit %zu bytes)", max);
    else {
        rs->close = 0;
        cc->body.max = max + 1; /* chunked bodies stop buffering there */
        return 0;
    }
    return 1;
}

static enum MHD_Result first_call(struct mt_server *s, struct MHD_Connection *c,
                                  struct conn *cc, const char *url,
                                  const char *method)
{
    struct srv_req rq;
    struct srv_resp rs;
    char remote[64];

    cc->started = 1;
    mtx_srv_conn_phase(s, c, 0);
    memset(&rs, 0, sizeof rs);
    fill_req(&rq, c, cc, url, method, remote, sizeof remote);
    if (screen(s, c, cc, &rq, &rs))
        return respond(s, c, &rq, &rs);
    mtx_srv_resp_free(&rs);
    return MHD_YES;
}

/* MHD's URI log callback: the request's context, made before MHD parses
 * the query (so too many arguments can be cut, see mtx_srv_cut_args). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct mt_server *s = cls;
    struct conn *cc = mt_calloc(1, sizeof *cc);

    mtx_srv_conn_line(s, c);
    if (!cc)
        return NULL;
    /* MHD hands over its own request-line buffer, which it clobbers
     * itself right after this call (libmicrohttpd 0.9.75 connection.c,
     * parse_initial_message_line); cutting it there is safe */
    cc->nargs = mtx_srv_cut_args((char *)(uintptr_t)uri, SRV_MAX_ARGS);
    cc->body = MT_BUF_INIT(s->p.max_body + 1);
    cc->t0 = mtx_clock_now();
    pthread_mutex_lock(&s->req_mu);
    s->inflight++;
    pthread_mutex_unlock(&s->req_mu);
    return cc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct mt_server *s = cls;
    struct conn *cc = *con_cls;

    (void)version;
    if (!cc)
        return MHD_NO; /* out of memory in on_uri */
    if (!cc->started)
        return first_call(s, c, cc, url, method);
    if (*upload_size) {
        if (!cc->too_big &&
            mtx_buf_append(&cc->body, upload, *upload_size) != MT_OK)
            cc->too_big = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    return dispatch(s, c, cc, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct mt_server *s = cls;
    struct conn *cc = *con_cls;

    (void)toe;
    mtx_srv_conn_phase(s, c, 1); /* the next request line's deadline */
    if (!cc)
        return;
    mtx_buf_free(&cc->body);
    mt_free(cc);
    *con_cls = NULL;
    pthread_mutex_lock(&s->req_mu);
    s->inflight--;
    pthread_cond_broadcast(&s->req_cv);
    pthread_mutex_unlock(&s->req_mu);
}

__attribute__((format(printf, 2, 0))) static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];

    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    mt_log(MT_LOG_WARN, "http: %s", msg);
}

/* ==== Start and stop ==== */

static enum mt_status parse_listen(const char *listen,
                                   struct sockaddr_storage *ss,
                                   struct mt_error *err)
{
    struct addrinfo hints, *res = NULL;
    const char *colon = strrchr(listen, ':');
    char host[256];
    int rc;

    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host)
        return mt_fail(err, MT_EINVAL, "--listen wants HOST:PORT, not '%s'",
                       listen);
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        return mt_fail(err, MT_EINVAL, "--listen %s: %s", listen,
                       gai_strerror(rc));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return MT_OK;
}

/* Accept policy: once the server is stopping, new connections are
 * refused at accept. This stands in for MHD_quiesce_daemon(), which in
 * libmicrohttpd 0.9.75 with MHD_USE_EPOLL and a thread pool races the
 * worker threads for removing the listen socket from their epoll sets
 * and aborts the process ("Failed to remove listen FD from epoll set")
 * when it loses: an open upstream defect, seen once in test_server. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen)
{
    struct mt_server *s = cls;
    int stopping;

    (void)addr;
    (void)addrlen;
    pthread_mutex_lock(&s->req_mu);
    stopping = s->stopping;
    pthread_mutex_unlock(&s->req_mu);
    return stopping ? MHD_NO : MHD_YES;
}

static enum mt_status start_mhd(struct mt_server *s, struct mt_error *err)
{
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *di;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    enum mt_status st = parse_listen(s->listen, &ss, err);

    if (st != MT_OK)
        return st;
    mtx_srv_size_conns(s);
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->mhd = MHD_start_daemon(
        flags, 0, on_accept, s, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, s, MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)s->p.threads, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)s->p.timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)s->conn_cap, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_CONNECTION,
        mtx_srv_conn_notify, s, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)s->p.max_conns_per_ip, MHD_OPTION_END);
    if (!s->mhd)
        return mt_fail(err, MT_EIO,
                       "cannot listen on %s (in use, or not "
                       "an address of this machine?)",
                       s->listen);
    di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : 0;
    return MT_OK;
}

enum mt_status mt_server_start(const struct mt_server_params *p,
                               struct mt_server **out, struct mt_error *err)
{
    struct mt_server *s;
    enum mt_status st;

    /* The bounds serve's options take (params.c), for every caller. */
    st = mt_param_check(&mt_server_param_table, p, 0, err);
    if (st != MT_OK)
        return st;
    if (!(s = mt_calloc(1, sizeof *s)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_srv_init(s, p, err);
    if (st == MT_OK && !p->headless)
        st = mtx_srv_guard_start(s, err);
    if (st == MT_OK && !p->headless)
        st = start_mhd(s, err);
    if (st != MT_OK) {
        mtx_srv_guard_stop(s);
        mtx_srv_fini(s);
        mt_free(s);
        return st;
    }
    mt_log(MT_LOG_INFO, "serving %s on http://%s (port %u)%s", s->db_dir,
           s->listen, s->port, s->state_url ? ", state in PostgreSQL" : "");
    *out = s;
    return MT_OK;
}

uint16_t mt_server_port(const struct mt_server *s)
{
    return s->port;
}

/* Waits until no request is in flight or 'until' passes. */
static void wait_requests(struct mt_server *s, double until)
{
    struct timespec ts;

    pthread_mutex_lock(&s->req_mu);
    while (s->inflight > 0 && mtx_clock_now() < until) {
        ts = mtx_clock_deadline(0.02);
        pthread_cond_timedwait(&s->req_cv, &s->req_mu, &ts);
    }
    pthread_mutex_unlock(&s->req_mu);
}

void mt_server_stop(struct mt_server *s, double grace_s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->req_mu);
    s->stopping = 1; /* no new connections (on_accept) */
    pthread_mutex_unlock(&s->req_mu);
    mtx_srv_jobs_stop(s, grace_s); /* every job ends, streams are woken */
    mtx_jobs_wake_all(s->jobs);
    wait_requests(s, mtx_clock_now() + (grace_s > 1 ? grace_s : 1));
    if (s->mhd)
        MHD_stop_daemon(s->mhd);
    mtx_srv_guard_stop(s);
    mtx_srv_fini(s);
    mt_log(MT_LOG_INFO, "server stopped");
    mt_free(s);
}
