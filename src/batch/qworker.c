/* The queue worker loop (batch/qworker.h): claiming threads, the held
 * list the heartbeat extends, results fenced by the attempt. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch/heartbeat.h"
#include "batch/qworker.h"
#include "core/buf.h"
#include "core/clock.h"
#include "medtrust/core.h"

#define QW_THREADS_MAX 512

struct mtx_qworker {
    struct mtx_qworker_params p;
    char name[160];
    char prefix[32];
    char *kinds;        /* the kinds as a PostgreSQL array literal */
    pthread_mutex_t mu; /* guards pg, held, the counts and fatal */
    struct mtx_pg *pg;  /* the shared connection */
    int64_t *held;      /* the jobs in hand (one a thread at most) */
    size_t nheld;
    struct mtx_qworker_stats st;
    enum mt_status fatal;
    struct mt_error fatal_err;
    struct mtx_heartbeat beat;
    pthread_t *threads;
    unsigned nthreads;
    int stopped;
};

void mtx_qworker_default_params(struct mtx_qworker_params *p)
{
    memset(p, 0, sizeof *p);
    p->log_prefix = "queue";
    p->threads = 4;
    p->lease_s = 30;
    p->poll_s = 1;
}

/* ==== State (mu) ==== */

static void fail_locked(struct mtx_qworker *w, enum mt_status st,
                        const struct mt_error *err)
{
    if (w->fatal != MT_OK)
        return;
    w->fatal = st;
    if (err)
        w->fatal_err = *err;
    else
        mt_fail(&w->fatal_err, st, "%s", mt_status_str(st));
}

void mtx_qworker_fail(struct mtx_qworker *w, enum mt_status st,
                      const struct mt_error *err)
{
    pthread_mutex_lock(&w->mu);
    fail_locked(w, st, err);
    pthread_mutex_unlock(&w->mu);
}

static int stopping(struct mtx_qworker *w)
{
    int s;

    pthread_mutex_lock(&w->mu);
    s = w->fatal != MT_OK;
    pthread_mutex_unlock(&w->mu);
    return s || (w->p.stopping && w->p.stopping(w->p.user));
}

static void held_add(struct mtx_qworker *w, int64_t id)
{
    if (w->nheld < w->p.threads)
        w->held[w->nheld++] = id;
}

static void held_del(struct mtx_qworker *w, int64_t id)
{
    size_t i;

    for (i = 0; i < w->nheld; i++)
        if (w->held[i] == id) {
            w->held[i] = w->held[--w->nheld];
            return;
        }
}

/* A failed queue call: the worker's end, or (retry_s > 0) left to the
 * caller to log and try again. mu held. */
static void queue_failed_locked(struct mtx_qworker *w, enum mt_status st,
                                const struct mt_error *err)
{
    if (w->p.retry_s <= 0)
        fail_locked(w, st, err);
}

/* The shared connection, opened when it is not (mu held). */
static enum mt_status shared_pg(struct mtx_qworker *w, struct mt_error *err)
{
    if (w->pg)
        return MT_OK;
    return mtx_queue_open(w->p.url, &w->pg, err);
}

/* Sleeps up to s seconds; 1 when the worker should stop. */
static int nap(struct mtx_qworker *w, double s)
{
    if (w->p.nap)
        return w->p.nap(w->p.user, s) || stopping(w);
    while (s > 0 && !stopping(w)) {
        double t = s < 0.1 ? s : 0.1;

        usleep((useconds_t)(t * 1e6));
        s -= t;
    }
    return stopping(w);
}

/* ==== Jobs ==== */

/* Locks the job's connection when it is the shared one. */
static void job_lock(struct mtx_qjob *j)
{
    if (j->pg == j->w->pg)
        pthread_mutex_lock(&j->w->mu);
}

static void job_unlock(struct mtx_qjob *j)
{
    if (j->pg == j->w->pg)
        pthread_mutex_unlock(&j->w->mu);
}

enum mt_status mtx_qjob_finish(struct mtx_qjob *j, const char *result,
                               int failed, struct mt_error *err)
{
    struct mtx_qworker *w = j->w;
    double t0;
    enum mt_status st;

    job_lock(j);
    t0 = mtx_clock_now();
    st = mtx_queue_finish(j->pg, &j->row, result, failed, err);
    job_unlock(j);
    pthread_mutex_lock(&w->mu);
    w->st.queue_s += mtx_clock_now() - t0;
    held_del(w, j->row.id); /* its lease is no longer ours to extend */
    if (st == MT_OK) {
        w->st.done++;
        w->st.failed += failed != 0;
    } else if (st == MT_ECANCELED) {
        w->st.dropped++;
    } else {
        queue_failed_locked(w, st, err);
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

enum mt_status mtx_qjob_release(struct mtx_qjob *j, struct mt_error *err)
{
    enum mt_status st;

    job_lock(j);
    st = mtx_queue_release(j->pg, &j->row, err);
    job_unlock(j);
    pthread_mutex_lock(&j->w->mu);
    held_del(j->w, j->row.id);
    pthread_mutex_unlock(&j->w->mu);
    return st;
}

int mtx_qjob_held(struct mtx_qjob *j, struct mt_error *err)
{
    size_t kept = 0;
    enum mt_status st;

    job_lock(j);
    st = mtx_queue_heartbeat(j->pg, j->w->name, j->w->p.lease_s, &j->row.id, 1,
                             &kept, err);
    job_unlock(j);
    return st == MT_OK && kept == 1;
}

static const struct mtx_qworker_kind *kind_of(const struct mtx_qworker *w,
                                              const char *kind)
{
    size_t i;

    for (i = 0; i < w->p.nkinds; i++)
        if (strcmp(w->p.kinds[i].kind, kind) == 0)
            return &w->p.kinds[i];
    return NULL;
}

/* Hands the claimed job to its kind's callback. */
static void run_job(struct mtx_qworker *w, struct mtx_qjob *j)
{
    const struct mtx_qworker_kind *k = kind_of(w, j->row.kind);
    struct mt_error err = {MT_OK, ""};

    if (k) {
        k->run(w->p.user, j);
    } else { /* the claim filters by kind: a kind cut to 31 bytes */
        mt_fail(&err, MT_EUNSUPPORTED, "%s: no '%s' jobs here", w->prefix,
                j->row.kind);
        mtx_qjob_release(j, NULL);
        mtx_qworker_fail(w, err.status, &err);
    }
    pthread_mutex_lock(&w->mu);
    held_del(w, j->row.id);
    pthread_mutex_unlock(&w->mu);
}

/* ==== Threads ==== */

/* One claim on 'pg' (the shared one under mu); MT_ENOTFOUND when none. */
static enum mt_status claim(struct mtx_qworker *w, struct mtx_qjob *j,
                            struct mt_error *err)
{
    int shared = !w->p.conn_per_thread;
    double t0;
    enum mt_status st = MT_OK;

    if (shared) {
        pthread_mutex_lock(&w->mu);
        st = shared_pg(w, err);
        j->pg = w->pg;
    } else if (!j->pg) {
        st = mtx_queue_open(w->p.url, &j->pg, err);
    }
    t0 = mtx_clock_now();
    if (st == MT_OK)
        st = mtx_queue_claim(j->pg, w->name, w->p.lease_s, w->p.run, w->kinds,
                             &j->row, err);
    if (!shared)
        pthread_mutex_lock(&w->mu);
    w->st.queue_s += mtx_clock_now() - t0;
    if (st == MT_OK)
        held_add(w, j->row.id);
    else if (st != MT_ENOTFOUND)
        queue_failed_locked(w, st, err);
    pthread_mutex_unlock(&w->mu);
    return st;
}

/* Nothing to claim when draining: 1 when this thread should end (no job
 * is queued, and every running one is this worker's own, which its other
 * threads finish: only another worker's could come back, once its lease
 * runs out). */
static int drained(struct mtx_qworker *w, struct mtx_pg *pg)
{
    struct mtx_queue_counts c;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;
    int left;

    if (!w->p.drain)
        return 0;
    pthread_mutex_lock(&w->mu);
    st = mtx_queue_counts(pg ? pg : w->pg, w->p.run, w->kinds, &c, &err);
    if (st != MT_OK)
        queue_failed_locked(w, st, &err);
    left = st == MT_OK && (c.queued > 0 || c.running > (int64_t)w->nheld);
    pthread_mutex_unlock(&w->mu);
    return !left && st == MT_OK;
}

static void *thread_main(void *arg)
{
    struct mtx_qworker *w = arg;
    struct mtx_qjob j;
    struct mtx_pg *own = NULL;
    int failing = 0;

    while (!stopping(w)) {
        struct mt_error err = {MT_OK, ""};
        enum mt_status st;

        memset(&j, 0, sizeof j);
        j.w = w;
        j.pg = own;
        st = claim(w, &j, &err);
        own = w->p.conn_per_thread ? j.pg : NULL;
        if (st == MT_OK) {
            failing = 0;
            run_job(w, &j);
            mtx_queue_job_free(&j.row);
            continue;
        }
        if (st == MT_ENOTFOUND && drained(w, own))
            break;
        if (st != MT_ENOTFOUND && w->p.retry_s > 0 && !failing++)
            mt_log(MT_LOG_ERROR, "%s: the shared queue: %s", w->prefix,
                   err.msg);
        if (nap(w, st == MT_ENOTFOUND ? w->p.poll_s : w->p.retry_s))
            break;
    }
    mtx_pg_close(own);
    return NULL;
}

/* ==== The heartbeat ==== */

/* Extends the leases of the jobs in hand (and, with progress, reads the
 * progress bar's done/total from the runs' own counts in the same
 * statement); then the caller's on_beat. */
static void beat_once(struct mtx_qworker *w)
{
    struct mtx_queue_progress pr = {0, 0};
    struct mt_error err = {MT_OK, ""};
    size_t n, kept;
    double t0;
    enum mt_status st = MT_OK;

    pthread_mutex_lock(&w->mu);
    n = kept = w->nheld;
    if (n > 0 || w->p.progress) {
        t0 = mtx_clock_now();
        st = shared_pg(w, &err);
        if (st == MT_OK)
            st = mtx_queue_beat(w->pg, w->name, w->p.lease_s, w->held, n,
                                w->p.progress ? w->p.run : -1,
                                w->p.progress ? w->kinds : NULL, &kept, &pr,
                                &err);
        w->st.queue_s += mtx_clock_now() - t0;
        if (st != MT_OK)
            queue_failed_locked(w, st, &err);
    }
    pthread_mutex_unlock(&w->mu);
    if (st != MT_OK && w->p.retry_s > 0)
        mt_log(MT_LOG_ERROR, "%s: heartbeat: %s", w->prefix, err.msg);
    else if (kept < n)
        mt_log(MT_LOG_WARN,
               "%s: %zu of %zu running jobs were taken over (their lease "
               "ran out)",
               w->prefix, n - kept, n);
    if (w->p.on_beat && (st == MT_OK || !w->p.progress))
        w->p.on_beat(w->p.user, w->p.progress ? &pr : NULL);
}

static void beat_fn(void *w)
{
    beat_once(w);
}

/* ==== Lifetime ==== */

/* The kinds as "{a,b}" (names are the callers' own identifiers). */
static enum mt_status kinds_literal(struct mtx_qworker *w, struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(4096);
    enum mt_status st = mtx_buf_putc(&b, '{');
    size_t i;

    for (i = 0; st == MT_OK && i < w->p.nkinds; i++)
        st = mtx_buf_printf(&b, "%s%s", i ? "," : "", w->p.kinds[i].kind);
    if (st == MT_OK)
        st = mtx_buf_putc(&b, '}');
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return mt_fail(err, st, "queue worker: too many kinds");
    }
    w->kinds = mtx_buf_take(&b);
    return MT_OK;
}

/* PostgreSQL may be away when a worker starts (machines boot in any
 * order): with wait_for_pg the first connection is tried again with
 * backoff while nothing answers at the URL (mtx_pg_down), until it does
 * or the worker is stopped. A wrong password or database fails at once. */
static enum mt_status first_connect(struct mtx_qworker *w, struct mt_error *err)
{
    double wait = 0.1;
    int said = 0;
    enum mt_status st;

    while ((st = mtx_queue_open(w->p.url, &w->pg, err)) == MT_EIO &&
           w->p.wait_for_pg && mtx_pg_down(w->p.url)) {
        if (!said++)
            mt_log(MT_LOG_WARN,
                   "%s: %s; waiting for PostgreSQL, trying again with "
                   "backoff",
                   w->prefix, err->msg);
        if (nap(w, wait))
            break;
        wait = wait * 2 > 5 ? 5 : wait * 2;
    }
    if (st == MT_OK && said)
        mt_log(MT_LOG_INFO, "%s: PostgreSQL is reachable: starting", w->prefix);
    return st;
}

static enum mt_status check_params(const struct mtx_qworker_params *p,
                                   struct mt_error *err)
{
    if (!p->url || !p->kinds || p->nkinds == 0)
        return mt_fail(err, MT_EINVAL,
                       "queue worker: a URL and job kinds are required");
    if (p->threads > QW_THREADS_MAX || !(p->lease_s >= 1) || !(p->poll_s > 0))
        return mt_fail(err, MT_EINVAL,
                       "queue worker: threads 0..%d, a lease of at least "
                       "1 s and a poll interval above 0",
                       QW_THREADS_MAX);
    return MT_OK;
}

static enum mt_status qw_init(struct mtx_qworker *w,
                              const struct mtx_qworker_params *p,
                              struct mt_error *err)
{
    char host[96] = "host";

    w->p = *p;
    pthread_mutex_init(&w->mu, NULL);
    snprintf(w->prefix, sizeof w->prefix, "%s",
             p->log_prefix ? p->log_prefix : "queue");
    gethostname(host, sizeof host - 1);
    if (p->name)
        snprintf(w->name, sizeof w->name, "%s", p->name);
    else
        snprintf(w->name, sizeof w->name, "%s:%ld", host, (long)getpid());
    w->p.name = w->name;
    w->p.log_prefix = w->prefix;
    w->held = mt_calloc(p->threads ? p->threads : 1, sizeof *w->held);
    w->threads = mt_calloc(p->threads ? p->threads : 1, sizeof *w->threads);
    if (!w->held || !w->threads)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return kinds_literal(w, err);
}

enum mt_status mtx_qworker_start(const struct mtx_qworker_params *p,
                                 struct mtx_qworker **out, struct mt_error *err)
{
    struct mtx_qworker *w;
    enum mt_status st = check_params(p, err);
    unsigned i;

    *out = NULL;
    if (st != MT_OK)
        return st;
    if (!(w = mt_calloc(1, sizeof *w)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = qw_init(w, p, err);
    if (st == MT_OK && p->retry_s <= 0)
        st = first_connect(w, err);
    /* a heartbeat that cannot start: the leases run out while the jobs
     * run, and other workers take them over (their results win) */
    if (st == MT_OK)
        (void)mtx_heartbeat_start(&w->beat, p->lease_s, beat_fn, w, NULL);
    for (i = 0; st == MT_OK && i < p->threads; i++)
        if (pthread_create(&w->threads[w->nthreads], NULL, thread_main, w) == 0)
            w->nthreads++;
    if (st == MT_OK && p->threads && !w->nthreads)
        st = mt_fail(err, MT_EINTERNAL, "cannot start the queue's workers");
    if (st != MT_OK) {
        mtx_qworker_free(w);
        return st;
    }
    *out = w;
    return MT_OK;
}

enum mt_status mtx_qworker_stop(struct mtx_qworker *w, struct mt_error *err)
{
    unsigned i;

    if (!w->stopped) {
        for (i = 0; i < w->nthreads; i++)
            pthread_join(w->threads[i], NULL);
        w->nthreads = 0;
        mtx_heartbeat_stop(&w->beat);
        if (w->p.progress && w->fatal == MT_OK)
            beat_once(w); /* the bar's last state */
        w->stopped = 1;
    }
    if (w->fatal != MT_OK && err)
        *err = w->fatal_err;
    return w->fatal;
}

void mtx_qworker_free(struct mtx_qworker *w)
{
    if (!w)
        return;
    mtx_qworker_stop(w, NULL);
    mtx_pg_close(w->pg);
    mt_free(w->held);
    mt_free(w->threads);
    mt_free(w->kinds);
    pthread_mutex_destroy(&w->mu);
    mt_free(w);
}

enum mt_status mtx_qworker_call(struct mtx_qworker *w,
                                enum mt_status (*fn)(struct mtx_pg *pg,
                                                     void *user,
                                                     struct mt_error *err),
                                void *user, struct mt_error *err)
{
    enum mt_status st;

    pthread_mutex_lock(&w->mu);
    st = shared_pg(w, err);
    if (st == MT_OK)
        st = fn(w->pg, user, err);
    pthread_mutex_unlock(&w->mu);
    return st;
}

const char *mtx_qworker_name(const struct mtx_qworker *w)
{
    return w->name;
}

void mtx_qworker_stats(struct mtx_qworker *w, struct mtx_qworker_stats *s)
{
    pthread_mutex_lock(&w->mu);
    *s = w->st;
    s->reconnects = w->pg ? mtx_pg_reconnects(w->pg) : 0;
    pthread_mutex_unlock(&w->mu);
}
