/* Jobs on the shared queue (issue 19, docs/architecture.md "Past one
 * machine"). With --state postgresql://, POST /v1/check, /v1/ask,
 * /v1/batch (and a batch's resume) and the test sleep job are rows of
 * the queue in PostgreSQL (store/queue.h) carrying their kind, run and
 * request body, not entries of one server's memory. Every server's
 * worker threads claim rows with SELECT ... FOR UPDATE SKIP LOCKED as
 * `medtrust worker` does, rebuild the job from the body with the route's
 * own reader, and run it with the job code of jobs.c; one heartbeat
 * thread per server extends the leases of the rows it runs, so when a
 * server dies (SIGKILL, a lost machine) its rows are claimed again once
 * their lease has run out, and the next attempt continues the run's
 * event rows, so a stream anywhere sees the whole run. The same thread
 * prunes old runs' event rows (event_retention_s). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch/heartbeat.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "server/srv_int.h"
#include "store/queue.h"

/* The kinds a server claims. Scores run in their request (no model, no
 * job to lose). */
#define SRV_QUEUE_KINDS "{check,ask,verify,batch,sleep}"
#define POLL_S 0.25  /* between claims while the queue is empty */
#define RETRY_S 1.0  /* after a failed claim (PostgreSQL away) */
#define HELD_MAX 512 /* rows heartbeated at once (llm_jobs <= 256) */

struct srv_queue {
    pthread_mutex_t mu; /* guards pg */
    struct mtx_pg *pg;  /* submits and heartbeats; NULL until it connects */
    char node[160];     /* its name in the queue: serve|worker:HOST:PID */
    struct mtx_heartbeat beat; /* leases and pruning (batch/heartbeat.h) */
    double next_prune;
};

static const struct {
    const char *kind;
    srv_job_build_fn build;
} builders[] = {
    {"check", mtx_srv_check_job},       {"ask", mtx_srv_ask_job},
    {"verify", mtx_srv_verify_job},     {"batch", mtx_srv_batch_job},
    {"sleep", mtx_srv_sleep_job_build},
};

/* ==== Submitting ==== */

enum mt_status mtx_srv_resp_failure(struct srv_resp *rs, struct mt_error *err)
{
    json_t *o = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(o, "error"));
    enum mt_status st =
        mt_fail(err, rs->status == 400 ? MT_EINVAL : MT_EUNSUPPORTED, "%s",
                msg ? msg : "the request cannot run here");

    json_decref(o);
    mtx_srv_resp_free(rs);
    return st;
}

/* The queue's connection, opened on first use (PostgreSQL may have been
 * away when the server started); q->mu held. */
static enum mt_status queue_pg(struct mt_server *s, struct mt_error *err)
{
    if (s->queue->pg)
        return MT_OK;
    return mtx_queue_open(s->state_url, &s->queue->pg, err);
}

static void run_failed(struct mt_server *s, int64_t run, const char *msg)
{
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK)
        mt_run_update(l->state, run, "failed", NULL, msg, NULL);
    mtx_srv_lease_put(s, l);
}

enum mt_status mtx_srv_job_submit_body(struct mt_server *s, int64_t run_id,
                                       const struct srv_job_spec *spec,
                                       const char *body, struct mt_error *err)
{
    json_t *o;
    char *txt;
    int64_t qrun = 0;
    enum mt_status st;

    if (!s->state_url)
        return mtx_srv_job_submit(s, run_id, spec, err);
    if (spec->arg_free) /* the claiming server rebuilds it from the body */
        spec->arg_free(spec->arg);
    o = json_pack("{s:s,s:I,s:s}", "kind", spec->kind, "run",
                  (json_int_t)run_id, "body", body ? body : "");
    txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    pthread_mutex_lock(&s->queue->mu);
    st = txt ? queue_pg(s, err) : mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = mtx_queue_submit(s->queue->pg, spec->kind, "{}",
                              (const char *const *)&txt, 1, &qrun, err);
    pthread_mutex_unlock(&s->queue->mu);
    mtx_srv_json_text_free(txt);
    if (st != MT_OK) {
        run_failed(s, run_id, err->msg);
        return st;
    }
    pthread_mutex_lock(&s->job_mu); /* a worker here may take it at once */
    pthread_cond_broadcast(&s->job_cv);
    pthread_mutex_unlock(&s->job_mu);
    return MT_OK;
}

/* Creates the run and writes its audit record; 0 with rs filled when the
 * route's check refuses it or the state fails. */
static int64_t run_create(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, const struct srv_job_spec *spec,
                          const struct srv_run_req *r)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    char h[MT_SECRET_SIZE];
    int64_t id = 0;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    mt_sha256_hex(r->text, r->len, h);
    if (st == MT_OK && r->admit && !r->admit(l, spec->arg, rs)) {
        mtx_srv_lease_put(s, l);
        return 0;
    }
    if (st == MT_OK)
        st = mt_run_create(l->state, rq->user.id, rq->user.name, spec->kind, h,
                           &id, &err);
    if (st == MT_OK)
        mtx_srv_audit(s, l, rq, spec->kind, r->audit(id, h, spec->arg));
    mtx_srv_lease_put(s, l);
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return 0;
    }
    return id;
}

int64_t mtx_srv_run_submit(struct mt_server *s, struct srv_req *rq,
                           struct srv_resp *rs, const struct srv_job_spec *spec,
                           const struct srv_run_req *r)
{
    struct mt_error err = {MT_OK, ""};
    int64_t id = run_create(s, rq, rs, spec, r);

    if (id == 0) {
        spec->arg_free(spec->arg);
        return 0;
    }
    if (mtx_srv_job_submit_body(s, id, spec, rq->body, &err) == MT_OK)
        return id;
    rs->retry_after = 5;
    mtx_srv_error(rs, 503, "%s", err.msg);
    return 0;
}

/* ==== Claiming ==== */

static srv_job_build_fn builder(const char *kind)
{
    size_t i;

    for (i = 0; kind && i < sizeof builders / sizeof builders[0]; i++)
        if (strcmp(builders[i].kind, kind) == 0)
            return builders[i].build;
    return NULL;
}

/* Rebuilds the claimed row's job and runs it here. */
static void run_claimed(struct mt_server *s, struct mtx_pg *pg,
                        struct mtx_queue_job *qj)
{
    struct mt_error err = {MT_OK, ""};
    json_t *p = json_loads(qj->payload, 0, NULL);
    const char *kind = json_string_value(json_object_get(p, "kind"));
    const char *body = json_string_value(json_object_get(p, "body"));
    int64_t run = json_integer_value(json_object_get(p, "run"));
    srv_job_build_fn build = builder(kind);
    struct srv_job_spec spec;
    enum mt_status st;

    if (run <= 0 || !body) { /* not a row a server wrote: fail it */
        mtx_queue_finish(pg, qj, "{\"failed\":\"unreadable payload\"}", 1,
                         NULL);
        json_decref(p);
        return;
    }
    memset(&spec, 0, sizeof spec);
    st = build ? build(s, run, body, &spec, &err)
               : mt_fail(&err, MT_EUNSUPPORTED, "this server runs no '%s' jobs",
                         kind);
    if (st != MT_OK)
        mt_error_prefix(&err, "%s cannot run it", s->queue->node);
    mtx_srv_job_run_row(s, run, qj, pg, s->queue->node,
                        st == MT_OK ? &spec : NULL, &err);
    json_decref(p);
}

/* Waits up to 's' seconds for a submit here or the server's stop. */
static int claim_wait(struct mt_server *s, double secs)
{
    return mtx_srv_nap(&s->job_mu, &s->job_cv, &s->jobs_stop, secs);
}

static int claim_stopping(struct mt_server *s)
{
    int stop;

    pthread_mutex_lock(&s->job_mu);
    stop = s->jobs_stop;
    pthread_mutex_unlock(&s->job_mu);
    return stop;
}

void *mtx_srv_claim_main(void *arg)
{
    struct mt_server *s = arg;
    struct mtx_pg *pg = NULL; /* this thread's own connection */
    int failing = 0;

    while (!claim_stopping(s)) {
        struct mt_error err = {MT_OK, ""};
        struct mtx_queue_job qj;
        enum mt_status st =
            pg ? MT_OK : mtx_queue_open(s->state_url, &pg, &err);

        memset(&qj, 0, sizeof qj);
        if (st == MT_OK)
            st = mtx_queue_claim(pg, s->queue->node, s->p.job_lease_s, 0,
                                 SRV_QUEUE_KINDS, &qj, &err);
        if (st == MT_OK) {
            failing = 0;
            run_claimed(s, pg, &qj);
            mtx_queue_job_free(&qj);
            continue;
        }
        if (st != MT_ENOTFOUND && !failing++)
            mt_log(MT_LOG_ERROR, "server: the shared queue: %s", err.msg);
        if (claim_wait(s, st == MT_ENOTFOUND ? POLL_S : RETRY_S))
            break;
    }
    mtx_pg_close(pg);
    return NULL;
}

/* ==== Heartbeats and pruning ==== */

static void prune(struct mt_server *s)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    double keep = s->p.event_retention_s;
    double now = mtx_srv_now();
    int64_t gone = 0;

    if (keep <= 0 || now < s->queue->next_prune)
        return;
    /* a short retention is looked at more often (tests), else each minute */
    s->queue->next_prune = now + (keep < 120 ? keep / 2 : 60);
    if (mtx_srv_lease_get(s, &l, &err) == MT_OK)
        mt_run_events_prune(l->state, (int64_t)time(NULL) - (int64_t)keep, 1000,
                            &gone, &err);
    mtx_srv_lease_put(s, l);
    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "server: pruning run events: %s", err.msg);
    else if (gone > 0)
        mt_log(MT_LOG_INFO,
               "server: pruned %lld event rows of runs that ended over "
               "%.0f s ago",
               (long long)gone, keep);
}

static void beat_once(struct mt_server *s)
{
    struct mt_error err = {MT_OK, ""};
    int64_t ids[HELD_MAX];
    size_t n = mtx_srv_job_rows(s, ids, HELD_MAX), kept = n;
    enum mt_status st = MT_OK;

    if (n == 0)
        return;
    pthread_mutex_lock(&s->queue->mu);
    st = queue_pg(s, &err);
    if (st == MT_OK)
        st = mtx_queue_heartbeat(s->queue->pg, s->queue->node, s->p.job_lease_s,
                                 ids, n, &kept, &err);
    pthread_mutex_unlock(&s->queue->mu);
    if (st != MT_OK)
        mt_log(MT_LOG_ERROR, "server: heartbeat: %s", err.msg);
    else if (kept < n)
        mt_log(MT_LOG_WARN,
               "server: %zu of %zu running jobs were taken over (their "
               "lease ran out)",
               n - kept, n);
}

/* The heartbeat's call: the leases of the rows running here, then the
 * old event rows. */
static void beat_main(void *arg)
{
    beat_once(arg);
    prune(arg);
}

/* Runs that no server's job holds any more (a dead server's claimed rows
 * go back to the queue when their lease runs out; these have no row, or
 * only a finished one) are marked interrupted. Older than two leases and
 * a minute: a run is queued within milliseconds of its creation. */
static void interrupt_orphans(struct mt_server *s)
{
    struct mt_error e = {MT_OK, ""};
    double older = 2 * s->p.job_lease_s + 60;
    int64_t n = 0;

    if (mtx_queue_orphans(s->queue->pg, older,
                          "interrupted: no server holds its job any more "
                          "(a batch resumes from its journal: POST "
                          "/v1/runs/ID/resume)",
                          &n, &e) != MT_OK)
        mt_log(MT_LOG_WARN, "server: orphaned runs: %s", e.msg);
    else if (n > 0)
        mt_log(MT_LOG_WARN,
               "server: %lld run%s that no server's job holds: marked "
               "interrupted",
               (long long)n, n == 1 ? "" : "s");
}

enum mt_status mtx_srv_queue_start(struct mt_server *s, struct mt_error *err)
{
    struct mt_error why = {MT_OK, ""};
    char host[96] = "host";

    if (s->p.job_lease_s < 1)
        return mt_fail(err, MT_EINVAL, "the job lease is at least 1 second");
    s->queue = mt_calloc(1, sizeof *s->queue);
    if (!s->queue)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_init(&s->queue->mu, NULL);
    gethostname(host, sizeof host - 1);
    snprintf(s->queue->node, sizeof s->queue->node, "%s:%s:%ld",
             s->p.headless ? "worker" : "serve", host, (long)getpid());
    if (queue_pg(s, &why) != MT_OK) /* its threads connect when it is back */
        mt_log(MT_LOG_WARN, "server: the shared queue: %s", why.msg);
    else
        interrupt_orphans(s);
    return mtx_heartbeat_start(&s->queue->beat, s->p.job_lease_s, beat_main, s,
                               err);
}

void mtx_srv_queue_stop(struct mt_server *s)
{
    struct srv_queue *q = s->queue;

    if (!q)
        return;
    mtx_heartbeat_stop(&q->beat);
    mtx_pg_close(q->pg);
    pthread_mutex_destroy(&q->mu);
    mt_free(q);
    s->queue = NULL;
}
