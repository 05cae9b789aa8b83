/* The job queue: model-bound requests run on a fixed set of worker threads
 * (their number is the cap on concurrent LLM jobs), never on the network
 * threads. Each job records its run in the store and keeps its events as
 * Server-Sent Event text, which streams read while the job is live. With a
 * shared state the queue is PostgreSQL's (store/queue.h): a request is a
 * row that any server's worker threads, or `medtrust worker`, claim
 * (shared_jobs.c). */
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "server/srv_int.h"
#include "batch/qworker.h"

struct srv_waiter {
    void *w;
    void (*wake)(void *w);
};

struct srv_job {
    struct mt_server *s;
    int64_t run;
    char kind[24];
    srv_job_fn fn;
    void *arg;
    void (*arg_free)(void *arg);
    /* The replay log: the SSE text of events first..first+nkept-1 in
     * ev[head..head+nkept), at most params.replay_max bytes in all but
     * the newest (a "done" is always kept); older ones are dropped and a
     * stream that wanted them is told so ("missed"). */
    char **ev;
    size_t head, nkept, evcap;
    size_t first;         /* seq of the oldest kept event */
    size_t evbytes;       /* bytes of the kept events */
    size_t streams;       /* event streams open on it (server.c) */
    size_t loaded;        /* events before this seq were taken by some stream */
    struct mt_buf merged; /* the text of the last event, a plain token
                             event that more may join; len 0 = none */
    int done;
    int on_thread; /* a worker runs it now, on 'thread' */
    int mirror;    /* replays another server's run from the state's rows */
    double cancel_checked; /* when the state's cancel flag was last read */
    pthread_t thread;
    int refs; /* the queue or a worker holds one, each stream one */
    double deadline;
    int cancel; /* a user asked to stop it (under job_mu) */
    struct srv_waiter *wait;
    size_t nwait, waitcap;
    struct srv_job *qnext; /* queue */
    struct srv_job *lnext; /* live list */
    /* with a shared state: */
    struct mtx_qjob *row;   /* its claimed row, lent by the queue worker
                               loop while it runs (NULL: a local job) */
    int replay;             /* emitting an earlier attempt's rows */
    pthread_mutex_t row_mu; /* orders its event rows: */
    int64_t row_next;       /* seq of its next event row */
    struct mt_buf tok;      /* "token" text not yet in a row */
    double tok_t0;          /* when the first of it came */
};

/* "token" events (an answer streamed piece by piece) reach the state as
 * one row per TOKEN_ROW_S or TOKEN_ROW_MAX bytes, not one per piece:
 * another server's stream gets them in pieces that large. */
#define TOKEN_ROW_S 0.1
#define TOKEN_ROW_MAX 4096

/* In the replay log, plain token events that no stream has taken yet are
 * merged into one event of up to this many bytes of text: a stream
 * opened late gets the answer in a few events, not thousands. */
#define TOKEN_MERGE_MAX 16384

/* Frees text from json_dumps with jansson's own allocator. */
void mtx_srv_json_text_free(char *txt)
{
    json_malloc_t m;
    json_free_t f;

    if (!txt)
        return;
    json_get_alloc_funcs(&m, &f);
    f(txt);
}

/* ==== Lifetime (job_mu held) ==== */

static void job_free(struct srv_job *j)
{
    size_t i;

    if (j->arg_free)
        j->arg_free(j->arg);
    for (i = 0; i < j->nkept; i++)
        mt_free(j->ev[j->head + i]);
    mt_free(j->ev);
    mt_free(j->wait);
    mtx_buf_free(&j->tok);
    mtx_buf_free(&j->merged);
    pthread_mutex_destroy(&j->row_mu);
    mt_free(j);
}

struct srv_job *mtx_srv_job_new(struct mt_server *s, int64_t run,
                                const char *kind)
{
    struct srv_job *j = mt_calloc(1, sizeof *j);
    struct mt_buf tok = MT_BUF_INIT((size_t)1 << 20);

    if (!j)
        return NULL;
    j->tok = tok;
    j->merged = MT_BUF_INIT(TOKEN_MERGE_MAX + 1);
    j->s = s;
    j->run = run;
    j->refs = 1;
    snprintf(j->kind, sizeof j->kind, "%s", kind);
    pthread_mutex_init(&j->row_mu, NULL);
    return j;
}

static void unref_locked(struct mt_server *s, struct srv_job *j)
{
    struct srv_job **p;

    if (--j->refs > 0)
        return;
    for (p = &s->live; *p; p = &(*p)->lnext)
        if (*p == j) {
            *p = j->lnext;
            break;
        }
    job_free(j);
}

static void wake_locked(struct srv_job *j)
{
    size_t i;

    for (i = 0; i < j->nwait; i++)
        j->wait[i].wake(j->wait[i].w);
    j->nwait = 0;
}

struct srv_job *mtx_srv_job_find(struct mt_server *s, int64_t run_id)
{
    struct srv_job *j;

    pthread_mutex_lock(&s->job_mu);
    for (j = s->live; j; j = j->lnext)
        if (j->run == run_id)
            break;
    if (j)
        j->refs++;
    pthread_mutex_unlock(&s->job_mu);
    return j;
}

struct srv_job *mtx_srv_job_self(struct mt_server *s)
{
    pthread_t me = pthread_self();
    struct srv_job *j;

    pthread_mutex_lock(&s->job_mu);
    for (j = s->live; j; j = j->lnext)
        if (j->on_thread && pthread_equal(j->thread, me))
            break;
    if (j)
        j->refs++;
    pthread_mutex_unlock(&s->job_mu);
    return j;
}

void mtx_srv_job_release(struct mt_server *s, struct srv_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&s->job_mu);
    unref_locked(s, j);
    pthread_mutex_unlock(&s->job_mu);
}

/* ==== Events ==== */

/* With a shared state every event of a job run here is also a row, so
 * that a stream opened on another server replays it (mirror below). */
static void event_row(struct srv_job *j, int64_t seq, const char *type,
                      const char *data)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(j->s, &l, &err) == MT_OK)
        mt_run_event_add(l->state, j->run, seq, type, data, &err);
    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "server: run %lld: event %lld: %s",
               (long long)j->run, (long long)seq, err.msg);
    mtx_srv_lease_put(j->s, l);
}

/* The pending "token" text as one row. */
static void tokens_flush(struct srv_job *j)
{
    json_t *o;
    char *txt;

    if (j->tok.len == 0)
        return;
    o = json_pack("{s:s%}", "text", j->tok.data, j->tok.len);
    txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (txt)
        event_row(j, j->row_next++, "token", txt);
    mtx_srv_json_text_free(txt);
    j->tok.len = 0;
}

/* 1 with the piece's text added to the pending tokens when the event is
 * a plain {"text"} token (a reset is a row of its own). */
static int token_add(struct srv_job *j, const char *type, const char *data)
{
    json_t *o, *t;
    int ok;

    if (strcmp(type, "token") != 0)
        return 0;
    o = json_loads(data, 0, NULL);
    t = json_object_get(o, "text");
    ok = json_is_string(t) && json_object_size(o) == 1 &&
         mtx_buf_append(&j->tok, json_string_value(t), json_string_length(t)) ==
             MT_OK;
    json_decref(o);
    return ok;
}

/* Writes the event as a row, tokens coalesced (TOKEN_ROW_S). Rows of one
 * job are written in seq order, so a mirror polling "after the last seq
 * seen" skips none. */
static void row_put(struct srv_job *j, const char *type, const char *data)
{
    double now = mtx_srv_now();
    size_t before;

    pthread_mutex_lock(&j->row_mu);
    before = j->tok.len;
    if (token_add(j, type, data)) {
        if (before == 0)
            j->tok_t0 = now;
        if (now - j->tok_t0 >= TOKEN_ROW_S || j->tok.len >= TOKEN_ROW_MAX)
            tokens_flush(j);
    } else {
        tokens_flush(j);
        event_row(j, j->row_next++, type, data);
    }
    pthread_mutex_unlock(&j->row_mu);
}

/* Drops the oldest kept event (job_mu held). */
static void drop_oldest(struct srv_job *j)
{
    char *e = j->ev[j->head];

    j->evbytes -= strlen(e);
    mt_free(e);
    j->ev[j->head++] = NULL;
    j->nkept--;
    j->first++;
}

/* Room for one more event at the end of ev: the kept ones move to the
 * front once the dropped ones take half the array (job_mu held). */
static int make_room(struct srv_job *j)
{
    char **grown;
    size_t cap;

    if (j->head > 0 && j->head >= j->evcap / 2) {
        memmove(j->ev, j->ev + j->head, j->nkept * sizeof *j->ev);
        j->head = 0;
    }
    if (j->head + j->nkept < j->evcap)
        return 1;
    cap = j->evcap ? 2 * j->evcap : 8;
    grown = mt_realloc(j->ev, cap * sizeof *grown);
    if (!grown)
        return 0;
    j->ev = grown;
    j->evcap = cap;
    return 1;
}

/* Drops the oldest events past the byte cap, keeping at least 'keep'
 * (job_mu held). */
static void trim(struct srv_job *j, size_t add, size_t keep)
{
    while (j->nkept > keep && j->evbytes + add > j->s->p.replay_max)
        drop_oldest(j);
}

/* Keeps the event text 'txt' (taken); past the byte cap the oldest events
 * go first. Returns 0 when there was no memory for it (txt freed). */
static int keep_event(struct srv_job *j, char *txt)
{
    size_t n = strlen(txt);

    trim(j, n, 0);
    if (!make_room(j)) {
        mt_free(txt);
        return 0;
    }
    j->ev[j->head + j->nkept++] = txt;
    j->evbytes += n;
    return 1;
}

/* Joins token text 'piece' to the last kept event when it is a plain
 * token event no stream has taken yet (job_mu held); 1 when it did. */
static int merge_token(struct srv_job *j, const char *piece, size_t n)
{
    size_t last = j->first + j->nkept - 1;
    json_t *o;
    char *data, *txt = NULL;
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);

    if (j->nkept == 0 || j->merged.len == 0 || last < j->loaded ||
        mtx_buf_append(&j->merged, piece, n) != MT_OK)
        return 0;
    o = json_pack("{s:s%}", "text", j->merged.data, j->merged.len);
    data = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (data && mtx_buf_printf(&b, "event: token\ndata: %s\n\n", data) == MT_OK)
        txt = mtx_buf_take(&b);
    mtx_buf_free(&b);
    mtx_srv_json_text_free(data);
    if (!txt) {
        j->merged.len -= n;
        return 0;
    }
    j->evbytes += strlen(txt) - strlen(j->ev[j->head + j->nkept - 1]);
    mt_free(j->ev[j->head + j->nkept - 1]);
    j->ev[j->head + j->nkept - 1] = txt;
    trim(j, 0, 1);
    return 1;
}

/* Keeps one event; 'piece' (n bytes) is the text of a plain token event,
 * which may join the last one, else NULL. */
static int keep_ev_locked(struct srv_job *j, char *txt, const char *piece,
                          size_t n)
{
    if (piece && merge_token(j, piece, n)) {
        mt_free(txt);
        return 1;
    }
    mtx_buf_reset(&j->merged);
    if (!keep_event(j, txt))
        return 0;
    if (piece && mtx_buf_append(&j->merged, piece, n) != MT_OK)
        mtx_buf_reset(&j->merged);
    return 1;
}

static void emit_piece(struct srv_job *j, const char *type, const char *data,
                       const char *piece, size_t n)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);
    int kept;

    if (mtx_buf_printf(&b, "event: %s\ndata: %s\n\n", type, data) != MT_OK) {
        mtx_buf_free(&b);
        return;
    }
    pthread_mutex_lock(&j->s->job_mu);
    kept = keep_ev_locked(j, mtx_buf_take(&b), piece, n);
    wake_locked(j);
    pthread_mutex_unlock(&j->s->job_mu);
    if (kept && j->s->state_url && !j->mirror && !j->replay)
        row_put(j, type, data);
}

void mtx_srv_job_emit_text(struct srv_job *j, const char *type,
                           const char *data)
{
    emit_piece(j, type, data, NULL, 0);
}

void mtx_srv_job_emit(struct srv_job *j, const char *type, json_t *data)
{
    char *txt =
        data ? json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    json_t *t = json_object_get(data, "text");
    int plain = strcmp(type, "token") == 0 && json_object_size(data) == 1 &&
                json_is_string(t) && json_string_length(t) > 0 &&
                json_string_length(t) <= TOKEN_MERGE_MAX;

    if (txt)
        emit_piece(j, type, txt, plain ? json_string_value(t) : NULL,
                   plain ? json_string_length(t) : 0);
    json_decref(data);
    mtx_srv_json_text_free(txt);
}

/* With a shared state the cancel may come from another server (its
 * POST /v1/runs/ID/cancel sets the run's flag): read the flag at most once
 * a second per job. */
static int remote_cancel(struct srv_job *j)
{
    struct srv_lease *l = NULL;
    double now = mtx_srv_now();
    int check, yes = 0;

    pthread_mutex_lock(&j->s->job_mu);
    check = !j->mirror && now >= j->cancel_checked + 1.0;
    if (check)
        j->cancel_checked = now;
    pthread_mutex_unlock(&j->s->job_mu);
    if (!check)
        return 0;
    if (mtx_srv_lease_get(j->s, &l, NULL) == MT_OK)
        mt_run_cancel_requested(l->state, j->run, &yes, NULL);
    mtx_srv_lease_put(j->s, l);
    if (yes) {
        pthread_mutex_lock(&j->s->job_mu);
        j->cancel = 1;
        pthread_mutex_unlock(&j->s->job_mu);
    }
    return yes;
}

int mtx_srv_job_canceled(struct srv_job *j)
{
    int c;

    pthread_mutex_lock(&j->s->job_mu);
    c = j->s->jobs_cancel || j->cancel;
    pthread_mutex_unlock(&j->s->job_mu);
    if (!c && j->s->state_url)
        c = remote_cancel(j);
    return c || mtx_srv_now() > j->deadline;
}

int mtx_srv_job_cancel(struct mt_server *s, int64_t run_id)
{
    struct srv_job *j = mtx_srv_job_find(s, run_id);
    int live;

    if (!j)
        return 0;
    pthread_mutex_lock(&s->job_mu);
    live = !j->done && !j->mirror; /* a mirror's run is another server's */
    j->cancel |= live;
    pthread_mutex_unlock(&s->job_mu);
    mtx_srv_job_release(s, j);
    return live;
}

void mtx_srv_job_sleep(struct srv_job *j, unsigned ms)
{
    double until = mtx_srv_now() + ms / 1000.0;
    struct timespec ts = {0, 10 * 1000 * 1000};

    while (mtx_srv_now() < until && !mtx_srv_job_canceled(j))
        nanosleep(&ts, NULL);
}

/* The cursor's next event text into c->cur (job_mu held): a "missed"
 * event when the events it wanted were dropped, else the next kept one.
 * Returns 0 when there is none yet (or no memory). */
static int cursor_load(struct srv_job *j, struct srv_cursor *c)
{
    char tmp[192];

    if (c->ev < j->first) {
        snprintf(tmp, sizeof tmp,
                 "event: missed\ndata: {\"events\":%zu,\"first\":%zu,"
                 "\"reason\":\"the job's replay log keeps its last %zu "
                 "bytes\"}\n\n",
                 j->first - c->ev, j->first, j->s->p.replay_max);
        c->cur = mt_strdup(tmp);
        if (c->cur)
            c->ev = j->first;
    } else if (c->ev < j->first + j->nkept) {
        c->cur = mt_strdup(j->ev[j->head + (c->ev - j->first)]);
        c->ev += c->cur != NULL;
        if (c->ev > j->loaded)
            j->loaded = c->ev; /* that event may not grow any more */
    }
    c->off = 0;
    c->len = c->cur ? strlen(c->cur) : 0;
    return c->cur != NULL;
}

/* Registers the waiter (job_mu held); 0 without memory. */
static int add_waiter(struct srv_job *j, void *waiter, void (*wake)(void *))
{
    if (j->nwait == j->waitcap) {
        size_t cap = j->waitcap ? 2 * j->waitcap : 4;
        struct srv_waiter *g = mt_realloc(j->wait, cap * sizeof *g);
        if (!g)
            return 0;
        j->wait = g;
        j->waitcap = cap;
    }
    j->wait[j->nwait].w = waiter;
    j->wait[j->nwait++].wake = wake;
    return 1;
}

size_t mtx_srv_job_read(struct mt_server *s, struct srv_job *j,
                        struct srv_cursor *c, char *buf, size_t max, int *end,
                        void *waiter, void (*suspend)(void *waiter),
                        void (*wake)(void *waiter))
{
    size_t n = 0;

    *end = 0;
    pthread_mutex_lock(&s->job_mu);
    if (c->cur || cursor_load(j, c)) {
        n = c->len - c->off < max ? c->len - c->off : max;
        memcpy(buf, c->cur + c->off, n);
        c->off += n;
        if (c->off == c->len) {
            mt_free(c->cur);
            c->cur = NULL;
        }
    } else if (j->done || s->jobs_cancel) {
        *end = 1;
    } else if (add_waiter(j, waiter, wake)) {
        suspend(waiter);
    } else {
        *end = 1;
    }
    pthread_mutex_unlock(&s->job_mu);
    return n;
}

void mtx_srv_cursor_free(struct srv_cursor *c)
{
    mt_free(c->cur);
    c->cur = NULL;
}

int mtx_srv_job_attach(struct mt_server *s, struct srv_job *j)
{
    int ok;

    pthread_mutex_lock(&s->job_mu);
    ok = j->streams < SRV_STREAMS_PER_JOB;
    j->streams += (size_t)ok;
    pthread_mutex_unlock(&s->job_mu);
    return ok;
}

void mtx_srv_job_detach(struct mt_server *s, struct srv_job *j)
{
    pthread_mutex_lock(&s->job_mu);
    j->streams--;
    pthread_mutex_unlock(&s->job_mu);
}

void mtx_srv_job_unwait(struct mt_server *s, struct srv_job *j, void *waiter)
{
    size_t i;

    pthread_mutex_lock(&s->job_mu);
    for (i = 0; i < j->nwait; i++)
        if (j->wait[i].w == waiter) {
            j->wait[i] = j->wait[--j->nwait];
            break;
        }
    pthread_mutex_unlock(&s->job_mu);
}

int mtx_srv_job_poke(struct mt_server *s, struct srv_job *j, void *waiter)
{
    size_t i;
    int found = 0;

    pthread_mutex_lock(&s->job_mu);
    for (i = 0; i < j->nwait && !found; i++)
        if (j->wait[i].w == waiter) {
            j->wait[i].wake(waiter);
            j->wait[i] = j->wait[--j->nwait];
            found = 1;
        }
    pthread_mutex_unlock(&s->job_mu);
    return found;
}

void mtx_srv_jobs_wake_all(struct mt_server *s)
{
    struct srv_job *j;

    pthread_mutex_lock(&s->job_mu);
    for (j = s->live; j; j = j->lnext)
        wake_locked(j);
    pthread_mutex_unlock(&s->job_mu);
}

/* ==== Running ==== */

static enum mt_status record(struct mt_server *s, int64_t run,
                             const char *status, const char *result,
                             const char *error, struct mt_error *err)
{
    struct srv_lease *l = NULL;

    mt_error_clear(err);
    if (mtx_srv_lease_get(s, &l, err) == MT_OK)
        mt_run_update(l->state, run, status, result, error, err);
    if (err->status != MT_OK)
        mt_log(MT_LOG_ERROR, "server: run %lld: %s", (long long)run, err->msg);
    mtx_srv_lease_put(s, l);
    return err->status;
}

/* A run's final status: a failed write (disk full, the database busy or
 * away) is tried again after 0.1, 0.4 and 1.6 s; when the last try fails
 * too it is surfaced: the caller says so in the "done" event, and the
 * run, left "running", is marked interrupted when the server starts next. */
#define RECORD_TRIES 4

static enum mt_status record_final(struct mt_server *s, int64_t run,
                                   const char *status, const char *result,
                                   const char *error, struct mt_error *err)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    enum mt_status st = MT_OK;
    int i;

    for (i = 0; i < RECORD_TRIES; i++) {
        if (i > 0) {
            nanosleep(&ts, NULL);
            ts.tv_nsec *= 4;
            if (ts.tv_nsec >= 1000 * 1000 * 1000) {
                ts.tv_sec += ts.tv_nsec / (1000 * 1000 * 1000);
                ts.tv_nsec %= 1000 * 1000 * 1000;
            }
        }
        st = record(s, run, status, result, error, err);
        if (st == MT_OK || st == MT_ENOTFOUND)
            break;
    }
    return st;
}

/* A row job still holds its row (its lease did not run out while it ran:
 * a server that lost it must not overwrite the run another one redid). */
static int row_held(struct srv_job *j)
{
    struct mt_error err = {MT_OK, ""};
    int held = mtx_qjob_held(j->row, &err);

    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "server: run %lld: %s", (long long)j->run,
               err.msg);
    return held;
}

/* For a job claimed from the shared queue: 1 when the attempt ends here
 * without a result, because this server is stopping (the row goes back
 * to the queue for another server) or lost the row. */
static int row_gives_up(struct srv_job *j, enum mt_status st)
{
    struct mt_error err = {MT_OK, ""};

    if (!j->row)
        return 0;
    if (st != MT_OK && j->s->jobs_cancel && !j->cancel) {
        mtx_qjob_release(j->row, &err);
        mt_log(MT_LOG_INFO,
               "server: run %lld handed back to the queue (shutting down)",
               (long long)j->run);
        return 1;
    }
    if (row_held(j))
        return 0;
    mt_log(MT_LOG_WARN,
           "server: run %lld was taken over after its lease ran out; this "
           "attempt's result is dropped",
           (long long)j->run);
    return 1;
}

static void finish(struct srv_job *j, enum mt_status st, json_t *result,
                   const struct mt_error *err)
{
    struct mt_error qerr = {MT_OK, ""};
    struct mt_error werr = {MT_OK, ""};
    char *txt = st == MT_OK && result ? json_dumps(result, JSON_COMPACT) : NULL;
    const char *msg = err->msg[0] ? err->msg : mt_status_str(st);
    json_t *done;

    if (row_gives_up(j, st)) {
        mtx_srv_json_text_free(txt);
        return;
    }
    record_final(j->s, j->run, st == MT_OK ? "done" : "failed", txt,
                 st == MT_OK ? NULL : msg, &werr);
    if (st == MT_OK)
        done = json_pack("{s:I,s:s,s:O?}", "id", (json_int_t)j->run, "status",
                         "done", "result", result);
    else
        done = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)j->run, "status",
                         "failed", "error", msg);
    if (done && werr.status != MT_OK)
        json_object_set_new(
            done, "warning",
            json_sprintf("this status could not be saved (%s): the run "
                         "shows as running until the server restarts, "
                         "then as interrupted",
                         werr.msg));
    mtx_srv_job_emit(j, "done", done);
    mtx_srv_json_text_free(txt);
    /* after the run's row and its "done": a crash before this line makes
     * another server run the job again, never leaves the run unfinished */
    if (j->row && mtx_qjob_finish(j->row, st == MT_OK ? "{}" : "{\"failed\":1}",
                                  st != MT_OK, &qerr) != MT_OK)
        mt_log(MT_LOG_ERROR, "server: run %lld: %s", (long long)j->run,
               qerr.msg);
}

/* The "running" status; a row job names the server and the attempt (2 or
 * more: an earlier server died, its events come first). */
static json_t *running_json(const struct srv_job *j)
{
    if (!j->row)
        return json_pack("{s:s}", "status", "running");
    return json_pack("{s:s,s:s,s:I}", "status", "running", "node",
                     mtx_qworker_name(j->row->w), "attempt",
                     (json_int_t)j->row->row.attempt);
}

static void run_job(struct mt_server *s, struct srv_job *j)
{
    struct mt_error err = {MT_OK, ""};
    json_t *result = NULL;
    enum mt_status st;

    j->deadline = mtx_srv_now() + s->p.job_timeout_s;
    if (mtx_srv_job_canceled(j)) {
        st = mt_fail(&err, MT_ECANCELED,
                     j->cancel ? "cancelled before it ran"
                               : "the server stopped before the job ran");
    } else {
        record(s, j->run, "running", NULL, NULL, &err);
        mt_error_clear(&err);
        mtx_srv_job_emit(j, "status", running_json(j));
        st = j->fn(j, j->arg, &result, &err);
        if (st == MT_OK && mtx_srv_now() > j->deadline)
            st = mt_fail(&err, MT_ECANCELED, "the job timed out");
    }
    finish(j, st, result, &err);
    json_decref(result);
}

/* A finished job stays findable, with every event it emitted, until
 * SRV_JOBS_KEPT later jobs have finished: a client that opens the run's
 * event stream just after a fast job ended still gets each step, then
 * "done", as it would have live. The ring takes over the queue's
 * reference; the oldest job leaves it. */
static void keep_locked(struct mt_server *s, struct srv_job *j)
{
    struct srv_job *old = s->kept[s->kept_next];

    s->kept[s->kept_next] = j;
    s->kept_next = (s->kept_next + 1) % SRV_JOBS_KEPT;
    if (old)
        unref_locked(s, old);
}

/* Runs j on the calling worker thread (s->running counts it already). */
static void run_here(struct mt_server *s, struct srv_job *j)
{
    pthread_mutex_lock(&s->job_mu);
    j->thread = pthread_self();
    j->on_thread = 1;
    pthread_mutex_unlock(&s->job_mu);
    if (j->fn)
        run_job(s, j);
    if (j->arg_free) /* only the job's function used it */
        j->arg_free(j->arg);
    j->arg_free = NULL;
    j->arg = NULL;
    j->row = NULL; /* the loop's again (a batch's upload with it) */
    pthread_mutex_lock(&s->job_mu);
    j->on_thread = 0;
    s->running--;
    j->done = 1;
    wake_locked(j);
    keep_locked(s, j);
    pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->job_mu);
}

static void *worker(void *arg)
{
    struct mt_server *s = arg;
    struct srv_job *j;

    pthread_mutex_lock(&s->job_mu);
    for (;;) {
        while (!s->queue_head && !s->jobs_stop)
            pthread_cond_wait(&s->job_cv, &s->job_mu);
        if (!s->queue_head)
            break;
        j = s->queue_head;
        s->queue_head = j->qnext;
        if (!s->queue_head)
            s->queue_tail = NULL;
        s->queued--;
        s->running++;
        pthread_mutex_unlock(&s->job_mu);
        run_here(s, j);
        pthread_mutex_lock(&s->job_mu);
    }
    pthread_mutex_unlock(&s->job_mu);
    return NULL;
}

/* ==== Jobs claimed from the shared queue (shared_jobs.c) ==== */

static enum mt_status replay_row(int64_t seq, const char *type,
                                 const char *data, void *user)
{
    struct srv_job *j = user;

    mtx_srv_job_emit_text(j, type, data);
    j->row_next = seq + 1;
    return MT_OK;
}

/* A later attempt keeps the rows the earlier ones wrote: its own events
 * follow them (seq after theirs), and a stream here replays them first. */
static void replay_rows(struct srv_job *j)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    int64_t before;

    if (mtx_srv_lease_get(j->s, &l, &err) != MT_OK)
        return;
    j->replay = 1;
    do {
        before = j->row_next;
        mt_run_event_list(l->state, j->run, j->row_next - 1, 256, replay_row, j,
                          &err);
    } while (err.status == MT_OK && j->row_next - before == 256);
    j->replay = 0;
    mtx_srv_lease_put(j->s, l);
}

void mtx_srv_job_run_row(struct mt_server *s, int64_t run, struct mtx_qjob *row,
                         const struct srv_job_spec *spec,
                         const struct mt_error *why)
{
    struct srv_job *j = mtx_srv_job_new(s, run, spec ? spec->kind : "row");

    if (!j) {
        if (spec && spec->arg_free)
            spec->arg_free(spec->arg);
        mtx_qjob_release(row, NULL);
        return;
    }
    j->row = row;
    if (spec) {
        j->fn = spec->fn;
        j->arg = spec->arg;
        j->arg_free = spec->arg_free;
    }
    pthread_mutex_lock(&s->job_mu);
    j->lnext = s->live; /* before a mirror of the run: found first */
    s->live = j;
    s->running++;
    pthread_mutex_unlock(&s->job_mu);
    if (row->row.attempt > 1)
        replay_rows(j);
    if (!spec) {
        j->deadline = mtx_srv_now() + s->p.job_timeout_s;
        finish(j, why->status, NULL, why);
    }
    run_here(s, j);
}

/* ==== Mirrors: another server's run, streamed from the state ====
 * With a shared state a run's events are rows (event_row). A stream for a
 * run that no job here holds gets a mirror job: a thread that polls the
 * rows after the last one it saw every SRV_MIRROR_POLL_MS and emits them
 * into the mirror, so the usual stream code serves it. Polling rather
 * than LISTEN/NOTIFY: docs/architecture.md says why. The mirror ends
 * with the run's "done" event, or, when the run ended without one (it
 * failed before its job started), with one made from the run's row. */

#define SRV_MIRROR_POLL_MS 250

struct mirror_ctx {
    struct srv_job *j;
    int64_t last;
    int done;
    int ended; /* polls that found the run finished without a "done" row */
};

static enum mt_status mirror_event(int64_t seq, const char *type,
                                   const char *data, void *user)
{
    struct mirror_ctx *c = user;

    mtx_srv_job_emit_text(c->j, type, data);
    c->last = seq;
    c->done |= strcmp(type, "done") == 0;
    return MT_OK;
}

static enum mt_status mirror_final(const struct mt_run *r, void *user)
{
    struct mirror_ctx *c = user;
    int fin =
        strcmp(r->status, "done") == 0 || strcmp(r->status, "failed") == 0;
    json_t *o;
    char *txt;

    /* the origin records the run's status just before its "done" event:
     * give that row one more poll */
    if (!fin || ++c->ended < 2)
        return MT_OK;
    o = json_pack("{s:I,s:s,s:s?}", "id", (json_int_t)r->id, "status",
                  r->status, "error", r->error);
    if (o && r->result)
        json_object_set_new(o, "result", json_loads(r->result, 0, NULL));
    txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (txt)
        mtx_srv_job_emit_text(c->j, "done", txt);
    mtx_srv_json_text_free(txt);
    c->done = 1;
    return MT_OK;
}

/* One poll: the rows after the last one seen, then, when none came,
 * whether the run has ended. */
static void mirror_poll(struct mt_server *s, struct mirror_ctx *c)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    int64_t before = c->last;

    if (mtx_srv_lease_get(s, &l, &err) != MT_OK)
        return;
    mt_run_event_list(l->state, c->j->run, c->last, 256, mirror_event, c, &err);
    if (!c->done && c->last == before && err.status == MT_OK)
        mt_run_get(l->state, c->j->run, mirror_final, c, &err);
    mtx_srv_lease_put(s, l);
}

static void *mirror_main(void *arg)
{
    struct srv_job *j = arg;
    struct mt_server *s = j->s;
    struct mirror_ctx c = {j, -1, 0, 0};
    struct timespec ts = {0, SRV_MIRROR_POLL_MS * 1000L * 1000L};
    int stop = 0;

    while (!c.done && !stop) {
        mirror_poll(s, &c);
        if (c.done)
            break;
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&s->job_mu);
        stop = s->jobs_cancel || s->jobs_stop || mtx_srv_now() > j->deadline;
        pthread_mutex_unlock(&s->job_mu);
    }
    pthread_mutex_lock(&s->job_mu);
    j->done = 1;
    wake_locked(j);
    keep_locked(s, j);
    s->mirrors--;
    pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->job_mu);
    return NULL;
}

void mtx_srv_job_mirror(struct mt_server *s, int64_t run_id)
{
    struct srv_job *j;
    pthread_attr_t at;
    int ok;

    if (!s->state_url)
        return;
    pthread_mutex_lock(&s->job_mu);
    for (j = s->live; j; j = j->lnext)
        if (j->run == run_id)
            break;
    if (j || s->jobs_stop || !(j = mtx_srv_job_new(s, run_id, "mirror"))) {
        pthread_mutex_unlock(&s->job_mu);
        return;
    }
    j->mirror = 1; /* one reference: the mirror thread's, then the ring's */
    j->deadline = mtx_srv_now() + s->p.job_timeout_s;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    ok = pthread_create(&j->thread, &at, mirror_main, j) == 0;
    pthread_attr_destroy(&at);
    if (ok) {
        j->lnext = s->live;
        s->live = j;
        s->mirrors++;
    } else {
        job_free(j);
    }
    pthread_mutex_unlock(&s->job_mu);
}

/* ==== Queue ==== */

static enum mt_status enqueue(struct mt_server *s, struct srv_job *j,
                              struct mt_error *err)
{
    enum mt_status st = MT_OK;

    pthread_mutex_lock(&s->job_mu);
    if (s->jobs_stop)
        st = mt_fail(err, MT_ECANCELED, "the server is shutting down");
    else if (s->queued >= s->p.max_queued)
        st = mt_fail(err, MT_ELIMIT,
                     "the job queue is full (%zu jobs "
                     "waiting): retry later",
                     s->queued);
    if (st == MT_OK) {
        if (s->queue_tail)
            s->queue_tail->qnext = j;
        else
            s->queue_head = j;
        s->queue_tail = j;
        s->queued++;
        j->lnext = s->live;
        s->live = j;
        pthread_cond_signal(&s->job_cv);
    }
    pthread_mutex_unlock(&s->job_mu);
    return st;
}

enum mt_status mtx_srv_job_submit(struct mt_server *s, int64_t run_id,
                                  const struct srv_job_spec *spec,
                                  struct mt_error *err)
{
    struct srv_job *j = mtx_srv_job_new(s, run_id, spec->kind);
    struct mt_error e2 = {MT_OK, ""};
    enum mt_status st;

    if (!j) {
        if (spec->arg_free)
            spec->arg_free(spec->arg);
        record(s, run_id, "failed", NULL, "out of memory", &e2);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    j->fn = spec->fn;
    j->arg = spec->arg;
    j->arg_free = spec->arg_free;
    st = enqueue(s, j, err);
    if (st != MT_OK) {
        record(s, run_id, "failed", NULL, err ? err->msg : "not queued", &e2);
        job_free(j);
    }
    return st;
}

int mtx_srv_runs_jobs(const struct mt_server *s)
{
    return s->p.llm_jobs > 0;
}

enum mt_status mtx_srv_jobs_start(struct mt_server *s, struct mt_error *err)
{
    size_t i;

    if (s->state_url) /* the queue worker loop's threads claim its rows */
        return mtx_srv_queue_start(s, err);
    if (!mtx_srv_runs_jobs(s))
        return MT_OK;
    s->workers = mt_calloc(s->p.llm_jobs, sizeof *s->workers);
    if (!s->workers)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < s->p.llm_jobs; i++) {
        if (pthread_create(&s->workers[i], NULL, worker, s) != 0)
            return mt_fail(err, MT_EINTERNAL, "cannot start job workers");
        s->nworkers++;
    }
    return MT_OK;
}

void mtx_srv_jobs_stop(struct mt_server *s, double grace_s)
{
    double until = mtx_srv_now() + grace_s;
    struct timespec ts;
    size_t i;

    pthread_mutex_lock(&s->job_mu);
    s->jobs_stop = 1;
    pthread_cond_broadcast(&s->job_cv);
    while ((s->queued || s->running) && mtx_srv_now() < until) {
        ts = mtx_srv_deadline(0.05);
        pthread_cond_timedwait(&s->idle_cv, &s->job_mu, &ts);
    }
    s->jobs_cancel = 1;
    while (s->mirrors) /* each sees jobs_cancel within one poll */
        pthread_cond_wait(&s->idle_cv, &s->job_mu);
    pthread_mutex_unlock(&s->job_mu);
    for (i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    s->nworkers = 0;
    mtx_srv_queue_stop(s); /* its threads finish the rows in hand */
    mt_free(s->workers);
    s->workers = NULL;
    pthread_mutex_lock(&s->job_mu);
    for (i = 0; i < SRV_JOBS_KEPT; i++)
        if (s->kept[i]) {
            unref_locked(s, s->kept[i]);
            s->kept[i] = NULL;
        }
    pthread_mutex_unlock(&s->job_mu);
}
