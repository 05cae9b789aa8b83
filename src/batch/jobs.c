/* The job runtime (jobs.h): a queue of jobs run on a fixed set of worker
 * threads, or rows of the shared queue run on the queue worker loop's
 * threads (batch/qworker.h), each job recording its run in the state and
 * keeping its events as Server-Sent Event text in a bounded replay log,
 * which readers (the server's event streams) follow; with a shared state
 * each event is also a row, and another node's run is mirrored from its
 * rows. Moved from src/server/jobs.c (issue 33): the server submits jobs
 * and streams their events. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "batch/jobs.h"
#include "batch/qworker.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "store/queue.h"

struct mtx_jobs {
    struct mtx_jobs_params p;
    pthread_mutex_t job_mu;
    pthread_cond_t job_cv;  /* workers wait for work */
    pthread_cond_t idle_cv; /* shutdown waits for the queue to drain */
    struct mtx_job *queue_head, *queue_tail;
    struct mtx_job *live; /* every job not yet freed */
    /* the last MTX_JOBS_KEPT finished jobs, each holding one reference, so
     * that a reader that comes just after a job ended still replays it */
    struct mtx_job *kept[MTX_JOBS_KEPT];
    size_t kept_next;
    size_t queued, running;
    pthread_t *workers;
    size_t nworkers;
    int jobs_stop;     /* no new jobs; workers exit when the queue is empty */
    int jobs_cancel;   /* running jobs should give up */
    size_t mirrors;    /* mirror threads running */
    double next_prune; /* when mtx_jobs_prune looks next */
};

struct job_waiter {
    void *w;
    void (*wake)(void *w);
};

struct mtx_job {
    struct mtx_jobs *js;
    int64_t run;
    char kind[24];
    mtx_job_fn fn;
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
    struct job_waiter *wait;
    size_t nwait, waitcap;
    struct mtx_job *qnext; /* queue */
    struct mtx_job *lnext; /* live list */
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

/* The state, lent for one use (the caller's state_get); NULL with err
 * set when it cannot be had. */
static struct mt_state *state_get(struct mtx_jobs *js, void **lease,
                                  struct mt_error *err)
{
    *lease = NULL;
    return js->p.state_get(js->p.user, lease, err);
}

static void state_put(struct mtx_jobs *js, void *lease)
{
    js->p.state_put(js->p.user, lease);
}

/* ==== Lifetime (job_mu held) ==== */

static void job_free(struct mtx_job *j)
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

static struct mtx_job *job_new(struct mtx_jobs *js, int64_t run,
                               const char *kind)
{
    struct mtx_job *j = mt_calloc(1, sizeof *j);
    struct mt_buf tok = MT_BUF_INIT((size_t)1 << 20);

    if (!j)
        return NULL;
    j->tok = tok;
    j->merged = MT_BUF_INIT(TOKEN_MERGE_MAX + 1);
    j->js = js;
    j->run = run;
    j->refs = 1;
    snprintf(j->kind, sizeof j->kind, "%s", kind);
    pthread_mutex_init(&j->row_mu, NULL);
    return j;
}

static void unref_locked(struct mtx_jobs *js, struct mtx_job *j)
{
    struct mtx_job **p;

    if (--j->refs > 0)
        return;
    for (p = &js->live; *p; p = &(*p)->lnext)
        if (*p == j) {
            *p = j->lnext;
            break;
        }
    job_free(j);
}

static void wake_locked(struct mtx_job *j)
{
    size_t i;

    for (i = 0; i < j->nwait; i++)
        j->wait[i].wake(j->wait[i].w);
    j->nwait = 0;
}

struct mtx_job *mtx_jobs_find(struct mtx_jobs *js, int64_t run_id)
{
    struct mtx_job *j;

    pthread_mutex_lock(&js->job_mu);
    for (j = js->live; j; j = j->lnext)
        if (j->run == run_id)
            break;
    if (j)
        j->refs++;
    pthread_mutex_unlock(&js->job_mu);
    return j;
}

struct mtx_job *mtx_jobs_self(struct mtx_jobs *js)
{
    pthread_t me = pthread_self();
    struct mtx_job *j;

    pthread_mutex_lock(&js->job_mu);
    for (j = js->live; j; j = j->lnext)
        if (j->on_thread && pthread_equal(j->thread, me))
            break;
    if (j)
        j->refs++;
    pthread_mutex_unlock(&js->job_mu);
    return j;
}

void mtx_job_release(struct mtx_job *j)
{
    struct mtx_jobs *js = j ? j->js : NULL;

    if (!j)
        return;
    pthread_mutex_lock(&js->job_mu);
    unref_locked(js, j);
    pthread_mutex_unlock(&js->job_mu);
}

/* ==== Events ==== */

/* With a shared state every event of a job run here is also a row, so
 * that a stream opened on another server replays it (mirror below). */
static void event_row(struct mtx_job *j, int64_t seq, const char *type,
                      const char *data)
{
    struct mt_error err = {MT_OK, ""};
    void *l;
    struct mt_state *st = state_get(j->js, &l, &err);

    if (st)
        mt_run_event_add(st, j->run, seq, type, data, &err);
    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "%s: run %lld: event %lld: %s",
               j->js->p.log_prefix, (long long)j->run, (long long)seq, err.msg);
    state_put(j->js, l);
}

/* The pending "token" text as one row. */
static void tokens_flush(struct mtx_job *j)
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
    mtx_json_text_free(txt);
    j->tok.len = 0;
}

/* 1 with the piece's text added to the pending tokens when the event is
 * a plain {"text"} token (a reset is a row of its own). */
static int token_add(struct mtx_job *j, const char *type, const char *data)
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
static void row_put(struct mtx_job *j, const char *type, const char *data)
{
    double now = mtx_clock_now();
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
static void drop_oldest(struct mtx_job *j)
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
static int make_room(struct mtx_job *j)
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
static void trim(struct mtx_job *j, size_t add, size_t keep)
{
    while (j->nkept > keep && j->evbytes + add > j->js->p.replay_max)
        drop_oldest(j);
}

/* Keeps the event text 'txt' (taken); past the byte cap the oldest events
 * go first. Returns 0 when there was no memory for it (txt freed). */
static int keep_event(struct mtx_job *j, char *txt)
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
static int merge_token(struct mtx_job *j, const char *piece, size_t n)
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
    mtx_json_text_free(data);
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
static int keep_ev_locked(struct mtx_job *j, char *txt, const char *piece,
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

static void emit_piece(struct mtx_job *j, const char *type, const char *data,
                       const char *piece, size_t n)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);
    int kept;

    if (mtx_buf_printf(&b, "event: %s\ndata: %s\n\n", type, data) != MT_OK) {
        mtx_buf_free(&b);
        return;
    }
    pthread_mutex_lock(&j->js->job_mu);
    kept = keep_ev_locked(j, mtx_buf_take(&b), piece, n);
    wake_locked(j);
    pthread_mutex_unlock(&j->js->job_mu);
    if (kept && j->js->p.shared && !j->mirror && !j->replay)
        row_put(j, type, data);
}

void mtx_job_emit_text(struct mtx_job *j, const char *type, const char *data)
{
    emit_piece(j, type, data, NULL, 0);
}

void mtx_job_emit(struct mtx_job *j, const char *type, json_t *data)
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
    mtx_json_text_free(txt);
}

/* With a shared state the cancel may come from another server (its
 * POST /v1/runs/ID/cancel sets the run's flag): read the flag at most once
 * a second per job. */
static int remote_cancel(struct mtx_job *j)
{
    struct mt_state *st;
    void *l;
    double now = mtx_clock_now();
    int check, yes = 0;

    pthread_mutex_lock(&j->js->job_mu);
    check = !j->mirror && now >= j->cancel_checked + 1.0;
    if (check)
        j->cancel_checked = now;
    pthread_mutex_unlock(&j->js->job_mu);
    if (!check)
        return 0;
    if ((st = state_get(j->js, &l, NULL)) != NULL)
        mt_run_cancel_requested(st, j->run, &yes, NULL);
    state_put(j->js, l);
    if (yes) {
        pthread_mutex_lock(&j->js->job_mu);
        j->cancel = 1;
        pthread_mutex_unlock(&j->js->job_mu);
    }
    return yes;
}

int mtx_job_canceled(struct mtx_job *j)
{
    int c;

    pthread_mutex_lock(&j->js->job_mu);
    c = j->js->jobs_cancel || j->cancel;
    pthread_mutex_unlock(&j->js->job_mu);
    if (!c && j->js->p.shared)
        c = remote_cancel(j);
    return c || mtx_clock_now() > j->deadline;
}

int mtx_jobs_cancel(struct mtx_jobs *js, int64_t run_id)
{
    struct mtx_job *j = mtx_jobs_find(js, run_id);
    int live;

    if (!j)
        return 0;
    pthread_mutex_lock(&js->job_mu);
    live = !j->done && !j->mirror; /* a mirror's run is another server's */
    j->cancel |= live;
    pthread_mutex_unlock(&js->job_mu);
    mtx_job_release(j);
    return live;
}

void mtx_job_sleep(struct mtx_job *j, unsigned ms)
{
    double until = mtx_clock_now() + ms / 1000.0;
    struct timespec ts = {0, 10 * 1000 * 1000};

    while (mtx_clock_now() < until && !mtx_job_canceled(j))
        nanosleep(&ts, NULL);
}

/* The cursor's next event text into c->cur (job_mu held): a "missed"
 * event when the events it wanted were dropped, else the next kept one.
 * Returns 0 when there is none yet (or no memory). */
static int cursor_load(struct mtx_job *j, struct mtx_job_cursor *c)
{
    char tmp[192];

    if (c->ev < j->first) {
        snprintf(tmp, sizeof tmp,
                 "event: missed\ndata: {\"events\":%zu,\"first\":%zu,"
                 "\"reason\":\"the job's replay log keeps its last %zu "
                 "bytes\"}\n\n",
                 j->first - c->ev, j->first, j->js->p.replay_max);
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
static int add_waiter(struct mtx_job *j, void *waiter, void (*wake)(void *))
{
    if (j->nwait == j->waitcap) {
        size_t cap = j->waitcap ? 2 * j->waitcap : 4;
        struct job_waiter *g = mt_realloc(j->wait, cap * sizeof *g);
        if (!g)
            return 0;
        j->wait = g;
        j->waitcap = cap;
    }
    j->wait[j->nwait].w = waiter;
    j->wait[j->nwait++].wake = wake;
    return 1;
}

size_t mtx_job_read(struct mtx_job *j, struct mtx_job_cursor *c, char *buf,
                    size_t max, int *end, void *waiter,
                    void (*suspend)(void *waiter), void (*wake)(void *waiter))
{
    struct mtx_jobs *js = j->js;
    size_t n = 0;

    *end = 0;
    pthread_mutex_lock(&js->job_mu);
    if (c->cur || cursor_load(j, c)) {
        n = c->len - c->off < max ? c->len - c->off : max;
        memcpy(buf, c->cur + c->off, n);
        c->off += n;
        if (c->off == c->len) {
            mt_free(c->cur);
            c->cur = NULL;
        }
    } else if (j->done || js->jobs_cancel) {
        *end = 1;
    } else if (add_waiter(j, waiter, wake)) {
        suspend(waiter);
    } else {
        *end = 1;
    }
    pthread_mutex_unlock(&js->job_mu);
    return n;
}

void mtx_job_cursor_free(struct mtx_job_cursor *c)
{
    mt_free(c->cur);
    c->cur = NULL;
}

int mtx_job_attach(struct mtx_job *j)
{
    struct mtx_jobs *js = j->js;
    int ok;

    pthread_mutex_lock(&js->job_mu);
    ok = j->streams < js->p.streams_max;
    j->streams += (size_t)ok;
    pthread_mutex_unlock(&js->job_mu);
    return ok;
}

void mtx_job_detach(struct mtx_job *j)
{
    struct mtx_jobs *js = j->js;

    pthread_mutex_lock(&js->job_mu);
    j->streams--;
    pthread_mutex_unlock(&js->job_mu);
}

void mtx_job_unwait(struct mtx_job *j, void *waiter)
{
    struct mtx_jobs *js = j->js;
    size_t i;

    pthread_mutex_lock(&js->job_mu);
    for (i = 0; i < j->nwait; i++)
        if (j->wait[i].w == waiter) {
            j->wait[i] = j->wait[--j->nwait];
            break;
        }
    pthread_mutex_unlock(&js->job_mu);
}

int mtx_job_poke(struct mtx_job *j, void *waiter)
{
    struct mtx_jobs *js = j->js;
    size_t i;
    int found = 0;

    pthread_mutex_lock(&js->job_mu);
    for (i = 0; i < j->nwait && !found; i++)
        if (j->wait[i].w == waiter) {
            j->wait[i].wake(waiter);
            j->wait[i] = j->wait[--j->nwait];
            found = 1;
        }
    pthread_mutex_unlock(&js->job_mu);
    return found;
}

void mtx_jobs_wake_all(struct mtx_jobs *js)
{
    struct mtx_job *j;

    if (!js)
        return;
    pthread_mutex_lock(&js->job_mu);
    for (j = js->live; j; j = j->lnext)
        wake_locked(j);
    pthread_mutex_unlock(&js->job_mu);
}

/* ==== Running ==== */

static enum mt_status record(struct mtx_jobs *js, int64_t run,
                             const char *status, const char *result,
                             const char *error, struct mt_error *err)
{
    struct mt_state *st;
    void *l;

    mt_error_clear(err);
    if ((st = state_get(js, &l, err)) != NULL)
        mt_run_update(st, run, status, result, error, err);
    if (err->status != MT_OK)
        mt_log(MT_LOG_ERROR, "%s: run %lld: %s", js->p.log_prefix,
               (long long)run, err->msg);
    state_put(js, l);
    return err->status;
}

/* A run's final status: a failed write (disk full, the database busy or
 * away) is tried again after 0.1, 0.4 and 1.6 s; when the last try fails
 * too it is surfaced: the caller says so in the "done" event, and the
 * run, left "running", is marked interrupted when the server starts next. */
#define RECORD_TRIES 4

static enum mt_status record_final(struct mtx_jobs *js, int64_t run,
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
        st = record(js, run, status, result, error, err);
        if (st == MT_OK || st == MT_ENOTFOUND)
            break;
    }
    return st;
}

/* A row job still holds its row (its lease did not run out while it ran:
 * a server that lost it must not overwrite the run another one redid). */
static int row_held(struct mtx_job *j)
{
    struct mt_error err = {MT_OK, ""};
    int held = mtx_qjob_held(j->row, &err);

    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "%s: run %lld: %s", j->js->p.log_prefix,
               (long long)j->run, err.msg);
    return held;
}

/* For a job claimed from the shared queue: 1 when the attempt ends here
 * without a result, because this server is stopping (the row goes back
 * to the queue for another server) or lost the row. */
static int row_gives_up(struct mtx_job *j, enum mt_status st)
{
    struct mt_error err = {MT_OK, ""};

    if (!j->row)
        return 0;
    if (st != MT_OK && j->js->jobs_cancel && !j->cancel) {
        mtx_qjob_release(j->row, &err);
        mt_log(MT_LOG_INFO,
               "%s: run %lld handed back to the queue (shutting "
               "down)",
               j->js->p.log_prefix, (long long)j->run);
        return 1;
    }
    if (row_held(j))
        return 0;
    mt_log(MT_LOG_WARN,
           "%s: run %lld was taken over after its lease ran out; this "
           "attempt's result is dropped",
           j->js->p.log_prefix, (long long)j->run);
    return 1;
}

static void finish(struct mtx_job *j, enum mt_status st, json_t *result,
                   const struct mt_error *err)
{
    struct mt_error qerr = {MT_OK, ""};
    struct mt_error werr = {MT_OK, ""};
    char *txt = st == MT_OK && result ? json_dumps(result, JSON_COMPACT) : NULL;
    const char *msg = err->msg[0] ? err->msg : mt_status_str(st);
    json_t *done;

    if (row_gives_up(j, st)) {
        mtx_json_text_free(txt);
        return;
    }
    record_final(j->js, j->run, st == MT_OK ? "done" : "failed", txt,
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
    mtx_job_emit(j, "done", done);
    mtx_json_text_free(txt);
    /* after the run's row and its "done": a crash before this line makes
     * another server run the job again, never leaves the run unfinished */
    if (j->row && mtx_qjob_finish(j->row, st == MT_OK ? "{}" : "{\"failed\":1}",
                                  st != MT_OK, &qerr) != MT_OK)
        mt_log(MT_LOG_ERROR, "%s: run %lld: %s", j->js->p.log_prefix,
               (long long)j->run, qerr.msg);
}

/* The "running" status; a row job names the server and the attempt (2 or
 * more: an earlier server died, its events come first). */
static json_t *running_json(const struct mtx_job *j)
{
    if (!j->row)
        return json_pack("{s:s}", "status", "running");
    return json_pack("{s:s,s:s,s:I}", "status", "running", "node",
                     mtx_qworker_name(j->row->w), "attempt",
                     (json_int_t)j->row->row.attempt);
}

static void run_job(struct mtx_jobs *js, struct mtx_job *j)
{
    struct mt_error err = {MT_OK, ""};
    json_t *result = NULL;
    enum mt_status st;

    j->deadline = mtx_clock_now() + js->p.job_timeout_s;
    if (mtx_job_canceled(j)) {
        st = mt_fail(&err, MT_ECANCELED,
                     j->cancel ? "cancelled before it ran"
                               : "the server stopped before the job ran");
    } else {
        record(js, j->run, "running", NULL, NULL, &err);
        mt_error_clear(&err);
        mtx_job_emit(j, "status", running_json(j));
        st = j->fn(j, j->arg, &result, &err);
        if (st == MT_OK && mtx_clock_now() > j->deadline)
            st = mt_fail(&err, MT_ECANCELED, "the job timed out");
    }
    finish(j, st, result, &err);
    json_decref(result);
}

/* A finished job stays findable, with every event it emitted, until
 * MTX_JOBS_KEPT later jobs have finished: a client that opens the run's
 * event stream just after a fast job ended still gets each step, then
 * "done", as it would have live. The ring takes over the queue's
 * reference; the oldest job leaves it. */
static void keep_locked(struct mtx_jobs *js, struct mtx_job *j)
{
    struct mtx_job *old = js->kept[js->kept_next];

    js->kept[js->kept_next] = j;
    js->kept_next = (js->kept_next + 1) % MTX_JOBS_KEPT;
    if (old)
        unref_locked(js, old);
}

/* Runs j on the calling worker thread (js->running counts it already). */
static void run_here(struct mtx_jobs *js, struct mtx_job *j)
{
    pthread_mutex_lock(&js->job_mu);
    j->thread = pthread_self();
    j->on_thread = 1;
    pthread_mutex_unlock(&js->job_mu);
    if (j->fn)
        run_job(js, j);
    if (j->arg_free) /* only the job's function used it */
        j->arg_free(j->arg);
    j->arg_free = NULL;
    j->arg = NULL;
    j->row = NULL; /* the loop's again (a batch's upload with it) */
    pthread_mutex_lock(&js->job_mu);
    j->on_thread = 0;
    js->running--;
    j->done = 1;
    wake_locked(j);
    keep_locked(js, j);
    pthread_cond_broadcast(&js->idle_cv);
    pthread_mutex_unlock(&js->job_mu);
}

static void *worker(void *arg)
{
    struct mtx_jobs *js = arg;
    struct mtx_job *j;

    pthread_mutex_lock(&js->job_mu);
    for (;;) {
        while (!js->queue_head && !js->jobs_stop)
            pthread_cond_wait(&js->job_cv, &js->job_mu);
        if (!js->queue_head)
            break;
        j = js->queue_head;
        js->queue_head = j->qnext;
        if (!js->queue_head)
            js->queue_tail = NULL;
        js->queued--;
        js->running++;
        pthread_mutex_unlock(&js->job_mu);
        run_here(js, j);
        pthread_mutex_lock(&js->job_mu);
    }
    pthread_mutex_unlock(&js->job_mu);
    return NULL;
}

/* ==== Jobs claimed from the shared queue (batch/qworker.h) ==== */

static enum mt_status replay_row(int64_t seq, const char *type,
                                 const char *data, void *user)
{
    struct mtx_job *j = user;

    mtx_job_emit_text(j, type, data);
    j->row_next = seq + 1;
    return MT_OK;
}

/* A later attempt keeps the rows the earlier ones wrote: its own events
 * follow them (seq after theirs), and a stream here replays them first. */
static void replay_rows(struct mtx_job *j)
{
    struct mt_error err = {MT_OK, ""};
    void *l;
    struct mt_state *st = state_get(j->js, &l, &err);
    int64_t before;

    if (!st) {
        state_put(j->js, l);
        return;
    }
    j->replay = 1;
    do {
        before = j->row_next;
        mt_run_event_list(st, j->run, j->row_next - 1, 256, replay_row, j,
                          &err);
    } while (err.status == MT_OK && j->row_next - before == 256);
    j->replay = 0;
    state_put(j->js, l);
}

void mtx_jobs_run_row(struct mtx_jobs *js, int64_t run, struct mtx_qjob *row,
                      const struct mtx_job_spec *spec,
                      const struct mt_error *why)
{
    struct mtx_job *j = job_new(js, run, spec ? spec->kind : "row");

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
    pthread_mutex_lock(&js->job_mu);
    j->lnext = js->live; /* before a mirror of the run: found first */
    js->live = j;
    js->running++;
    pthread_mutex_unlock(&js->job_mu);
    if (row->row.attempt > 1)
        replay_rows(j);
    if (!spec) {
        j->deadline = mtx_clock_now() + js->p.job_timeout_s;
        finish(j, why->status, NULL, why);
    }
    run_here(js, j);
}

/* ==== Jobs as rows of the shared queue ==== */

struct row_submit {
    const char *kind;
    const char *payload;
    int64_t qrun;
};

static enum mt_status submit_row(struct mtx_pg *pg, void *user,
                                 struct mt_error *err)
{
    struct row_submit *u = user;

    return mtx_queue_submit(pg, u->kind, "{}", &u->payload, 1, &u->qrun, err);
}

enum mt_status mtx_jobs_row_submit(struct mtx_jobs *js, struct mtx_qworker *qw,
                                   const char *kind, int64_t run,
                                   const char *body, struct mt_error *err)
{
    struct row_submit u = {kind, NULL, 0};
    json_t *o = json_pack("{s:s,s:I,s:s}", "kind", kind, "run", (json_int_t)run,
                          "body", body ? body : "");
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    enum mt_status st;

    json_decref(o);
    u.payload = txt;
    st = txt ? mtx_qworker_call(qw, submit_row, &u, err)
             : mt_fail(err, MT_ENOMEM, "out of memory");
    mtx_json_text_free(txt);
    if (st == MT_OK)
        mtx_jobs_poke(js); /* a worker here may take it at once */
    return st;
}

int mtx_jobs_row_read(struct mtx_qjob *qj, int64_t *run, const char **body,
                      json_t **payload)
{
    *payload = json_loads(qj->row.payload, 0, NULL);
    *body = json_string_value(json_object_get(*payload, "body"));
    *run = json_integer_value(json_object_get(*payload, "run"));
    if (*run > 0 && *body)
        return 1;
    /* not a row a node wrote: fail it */
    mtx_qjob_finish(qj, "{\"failed\":\"unreadable payload\"}", 1, NULL);
    json_decref(*payload);
    *payload = NULL;
    return 0;
}

void mtx_jobs_prune(struct mtx_jobs *js, double keep_s)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_state *st;
    void *l;
    double now = mtx_clock_now();
    int64_t gone = 0;

    if (keep_s <= 0 || now < js->next_prune)
        return;
    /* a short retention is looked at more often (tests), else each minute */
    js->next_prune = now + (keep_s < 120 ? keep_s / 2 : 60);
    if ((st = state_get(js, &l, &err)) != NULL)
        mt_run_events_prune(st, (int64_t)time(NULL) - (int64_t)keep_s, 1000,
                            &gone, &err);
    state_put(js, l);
    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "%s: pruning run events: %s", js->p.log_prefix,
               err.msg);
    else if (gone > 0)
        mt_log(MT_LOG_INFO,
               "%s: pruned %lld event rows of runs that ended over "
               "%.0f s ago",
               js->p.log_prefix, (long long)gone, keep_s);
}

/* ==== Runs without a job ==== */

int mtx_jobs_cancel_run(struct mtx_jobs *js, int64_t run_id)
{
    struct mt_state *st;
    void *l;
    int done = 0, live = 0;

    if (mtx_jobs_cancel(js, run_id)) /* first: it needs no write */
        return MTX_CANCEL_LIVE;
    if ((st = state_get(js, &l, NULL)) != NULL)
        mt_run_finish_interrupted(st, run_id, "cancelled (it was interrupted)",
                                  &done, NULL);
    state_put(js, l);
    if (done)
        return MTX_CANCEL_ENDED;
    if (!js->p.shared)
        return MTX_CANCEL_NONE;
    if ((st = state_get(js, &l, NULL)) != NULL)
        mt_run_cancel_request(st, run_id, &live, NULL);
    state_put(js, l);
    return live ? MTX_CANCEL_FLAGGED : MTX_CANCEL_NONE;
}

enum mt_status mtx_jobs_recover(struct mt_state *st, const char *dir,
                                const char *why, const char *log_prefix,
                                int *lock_fd, struct mt_error *err)
{
    char path[4096];
    int64_t n = 0;
    enum mt_status rc;

    snprintf(path, sizeof path, "%s/server.lock", dir);
    *lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*lock_fd < 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0) {
        mt_log(MT_LOG_WARN,
               "%s: another server runs on %s: its queued and running "
               "runs are left as they are",
               log_prefix, dir);
        return MT_OK;
    }
    rc = mt_run_interrupt_unfinished(st, why, &n, err);
    if (rc == MT_OK && n > 0)
        mt_log(MT_LOG_WARN,
               "%s: %lld run%s left queued or running by a server that "
               "stopped: marked interrupted",
               log_prefix, (long long)n, n == 1 ? "" : "s");
    return rc;
}

void mtx_jobs_orphans(struct mtx_pg *pg, double lease_s, const char *why,
                      const char *log_prefix)
{
    struct mt_error e = {MT_OK, ""};
    int64_t n = 0;

    if (mtx_queue_orphans(pg, 2 * lease_s + 60, why, &n, &e) != MT_OK)
        mt_log(MT_LOG_WARN, "%s: orphaned runs: %s", log_prefix, e.msg);
    else if (n > 0)
        mt_log(MT_LOG_WARN,
               "%s: %lld run%s that no server's job holds: marked "
               "interrupted",
               log_prefix, (long long)n, n == 1 ? "" : "s");
}

/* ==== Mirrors: another server's run, streamed from the state ====
 * With a shared state a run's events are rows (event_row). A stream for a
 * run that no job here holds gets a mirror job: a thread that polls the
 * rows after the last one it saw every MIRROR_POLL_MS and emits them
 * into the mirror, so the usual stream code serves it. Polling rather
 * than LISTEN/NOTIFY: docs/architecture.md says why. The mirror ends
 * with the run's "done" event, or, when the run ended without one (it
 * failed before its job started), with one made from the run's row. */

#define MIRROR_POLL_MS 250

struct mirror_ctx {
    struct mtx_job *j;
    int64_t last;
    int done;
    int ended; /* polls that found the run finished without a "done" row */
};

static enum mt_status mirror_event(int64_t seq, const char *type,
                                   const char *data, void *user)
{
    struct mirror_ctx *c = user;

    mtx_job_emit_text(c->j, type, data);
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
        mtx_job_emit_text(c->j, "done", txt);
    mtx_json_text_free(txt);
    c->done = 1;
    return MT_OK;
}

/* One poll: the rows after the last one seen, then, when none came,
 * whether the run has ended. */
static void mirror_poll(struct mtx_jobs *js, struct mirror_ctx *c)
{
    struct mt_error err = {MT_OK, ""};
    void *l;
    struct mt_state *st = state_get(js, &l, &err);
    int64_t before = c->last;

    if (st) {
        mt_run_event_list(st, c->j->run, c->last, 256, mirror_event, c, &err);
        if (!c->done && c->last == before && err.status == MT_OK)
            mt_run_get(st, c->j->run, mirror_final, c, &err);
    }
    state_put(js, l);
}

static void *mirror_main(void *arg)
{
    struct mtx_job *j = arg;
    struct mtx_jobs *js = j->js;
    struct mirror_ctx c = {j, -1, 0, 0};
    struct timespec ts = {0, MIRROR_POLL_MS * 1000L * 1000L};
    int stop = 0;

    while (!c.done && !stop) {
        mirror_poll(js, &c);
        if (c.done)
            break;
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&js->job_mu);
        stop =
            js->jobs_cancel || js->jobs_stop || mtx_clock_now() > j->deadline;
        pthread_mutex_unlock(&js->job_mu);
    }
    pthread_mutex_lock(&js->job_mu);
    j->done = 1;
    wake_locked(j);
    keep_locked(js, j);
    js->mirrors--;
    pthread_cond_broadcast(&js->idle_cv);
    pthread_mutex_unlock(&js->job_mu);
    return NULL;
}

void mtx_jobs_mirror(struct mtx_jobs *js, int64_t run_id)
{
    struct mtx_job *j;
    pthread_attr_t at;
    int ok;

    if (!js->p.shared)
        return;
    pthread_mutex_lock(&js->job_mu);
    for (j = js->live; j; j = j->lnext)
        if (j->run == run_id)
            break;
    if (j || js->jobs_stop || !(j = job_new(js, run_id, "mirror"))) {
        pthread_mutex_unlock(&js->job_mu);
        return;
    }
    j->mirror = 1; /* one reference: the mirror thread's, then the ring's */
    j->deadline = mtx_clock_now() + js->p.job_timeout_s;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    ok = pthread_create(&j->thread, &at, mirror_main, j) == 0;
    pthread_attr_destroy(&at);
    if (ok) {
        j->lnext = js->live;
        js->live = j;
        js->mirrors++;
    } else {
        job_free(j);
    }
    pthread_mutex_unlock(&js->job_mu);
}

/* ==== Queue ==== */

static enum mt_status enqueue(struct mtx_jobs *js, struct mtx_job *j,
                              struct mt_error *err)
{
    enum mt_status st = MT_OK;

    pthread_mutex_lock(&js->job_mu);
    if (js->jobs_stop)
        st = mt_fail(err, MT_ECANCELED, "the server is shutting down");
    else if (js->queued >= js->p.max_queued)
        st = mt_fail(err, MT_ELIMIT,
                     "the job queue is full (%zu jobs "
                     "waiting): retry later",
                     js->queued);
    if (st == MT_OK) {
        if (js->queue_tail)
            js->queue_tail->qnext = j;
        else
            js->queue_head = j;
        js->queue_tail = j;
        js->queued++;
        j->lnext = js->live;
        js->live = j;
        pthread_cond_signal(&js->job_cv);
    }
    pthread_mutex_unlock(&js->job_mu);
    return st;
}

enum mt_status mtx_jobs_submit(struct mtx_jobs *js, int64_t run_id,
                               const struct mtx_job_spec *spec,
                               struct mt_error *err)
{
    struct mtx_job *j = job_new(js, run_id, spec->kind);
    struct mt_error e2 = {MT_OK, ""};
    enum mt_status st;

    if (!j) {
        if (spec->arg_free)
            spec->arg_free(spec->arg);
        record(js, run_id, "failed", NULL, "out of memory", &e2);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    j->fn = spec->fn;
    j->arg = spec->arg;
    j->arg_free = spec->arg_free;
    st = enqueue(js, j, err);
    if (st != MT_OK) {
        record(js, run_id, "failed", NULL, err ? err->msg : "not queued", &e2);
        job_free(j);
    }
    return st;
}

/* ==== Lifetime of the runtime ==== */

void mtx_jobs_default_params(struct mtx_jobs_params *p)
{
    memset(p, 0, sizeof *p);
    p->max_queued = 256;
    p->replay_max = (size_t)1 << 20;
    p->job_timeout_s = 600;
    p->streams_max = 64;
    p->log_prefix = "jobs";
}

static void runtime_free(struct mtx_jobs *js)
{
    mt_free(js->workers);
    pthread_mutex_destroy(&js->job_mu);
    pthread_cond_destroy(&js->job_cv);
    pthread_cond_destroy(&js->idle_cv);
    mt_free(js);
}

enum mt_status mtx_jobs_start(const struct mtx_jobs_params *p,
                              struct mtx_jobs **out, struct mt_error *err)
{
    struct mtx_jobs *js = mt_calloc(1, sizeof *js);
    size_t i;

    *out = NULL;
    if (!js || (p->workers &&
                !(js->workers = mt_calloc(p->workers, sizeof *js->workers)))) {
        mt_free(js);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    js->p = *p;
    pthread_mutex_init(&js->job_mu, NULL);
    pthread_cond_init(&js->job_cv, NULL);
    pthread_cond_init(&js->idle_cv, NULL);
    for (i = 0; i < p->workers; i++) {
        if (pthread_create(&js->workers[i], NULL, worker, js) != 0) {
            mtx_jobs_stop(js, 0);
            runtime_free(js);
            return mt_fail(err, MT_EINTERNAL, "cannot start job workers");
        }
        js->nworkers++;
    }
    *out = js;
    return MT_OK;
}

void mtx_jobs_stop(struct mtx_jobs *js, double grace_s)
{
    double until = mtx_clock_now() + grace_s;
    struct timespec ts;
    size_t i;

    pthread_mutex_lock(&js->job_mu);
    js->jobs_stop = 1;
    pthread_cond_broadcast(&js->job_cv);
    while ((js->queued || js->running) && mtx_clock_now() < until) {
        ts = mtx_clock_deadline(0.05);
        pthread_cond_timedwait(&js->idle_cv, &js->job_mu, &ts);
    }
    js->jobs_cancel = 1;
    while (js->mirrors) /* each sees jobs_cancel within one poll */
        pthread_cond_wait(&js->idle_cv, &js->job_mu);
    pthread_mutex_unlock(&js->job_mu);
    for (i = 0; i < js->nworkers; i++)
        pthread_join(js->workers[i], NULL);
    js->nworkers = 0;
}

void mtx_jobs_forget(struct mtx_jobs *js)
{
    size_t i;

    pthread_mutex_lock(&js->job_mu);
    for (i = 0; i < MTX_JOBS_KEPT; i++)
        if (js->kept[i]) {
            unref_locked(js, js->kept[i]);
            js->kept[i] = NULL;
        }
    pthread_mutex_unlock(&js->job_mu);
}

void mtx_jobs_free(struct mtx_jobs *js)
{
    if (!js)
        return;
    mtx_jobs_forget(js);
    runtime_free(js);
}

void mtx_jobs_counts(struct mtx_jobs *js, size_t *queued, size_t *running)
{
    pthread_mutex_lock(&js->job_mu);
    *queued = js->queued;
    *running = js->running;
    pthread_mutex_unlock(&js->job_mu);
}

int mtx_jobs_stopping(struct mtx_jobs *js)
{
    int stop;

    pthread_mutex_lock(&js->job_mu);
    stop = js->jobs_stop;
    pthread_mutex_unlock(&js->job_mu);
    return stop;
}

int mtx_jobs_nap(struct mtx_jobs *js, double secs)
{
    return mtx_clock_nap(&js->job_mu, &js->job_cv, &js->jobs_stop, secs);
}

void mtx_jobs_poke(struct mtx_jobs *js)
{
    pthread_mutex_lock(&js->job_mu);
    pthread_cond_broadcast(&js->job_cv);
    pthread_mutex_unlock(&js->job_mu);
}
