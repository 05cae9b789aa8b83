/* Jobs on the shared queue (issue 19, docs/architecture.md "Past one
 * machine"). With --state postgresql://, POST /v1/check, /v1/ask,
 * /v1/batch (and a batch's resume) and the test sleep job are rows of
 * the queue in PostgreSQL (store/queue.h) carrying their kind, run and
 * request body, not entries of one server's memory. Every server's
 * worker threads claim rows with SELECT ... FOR UPDATE SKIP LOCKED as
 * `medtrust worker` does, rebuild the job from the body with the route's
 * own reader, and run it on the batch layer's job runtime (batch/jobs.h:
 * the rows' payload, the run and its event rows, their pruning); one
 * heartbeat thread per server extends the leases of the rows it runs, so
 * when a server dies (SIGKILL, a lost machine) its rows are claimed again
 * once their lease has run out, and the next attempt continues the run's
 * event rows, so a stream anywhere sees the whole run. The same thread
 * prunes old runs' event rows (event_retention_s). This file keeps the
 * server's kinds, their builders and the loop's settings. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "batch/qworker.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "server/srv_int.h"
#include "store/queue.h"

#define POLL_S 0.25 /* between claims while the queue is empty */
#define RETRY_S 1.0 /* after a failed claim (PostgreSQL away) */

struct srv_queue {
    struct mtx_qworker *qw; /* claims, leases, submits (batch/qworker.h) */
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

static void run_failed(struct mt_server *s, int64_t run, const char *msg)
{
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK)
        mt_run_update(l->state, run, "failed", NULL, msg, NULL);
    mtx_srv_lease_put(s, l);
}

enum mt_status mtx_srv_job_submit_body(struct mt_server *s, int64_t run_id,
                                       const struct mtx_job_spec *spec,
                                       const char *body, struct mt_error *err)
{
    enum mt_status st;

    if (!s->state_url)
        return mtx_jobs_submit(s->jobs, run_id, spec, err);
    if (spec->arg_free) /* the claiming server rebuilds it from the body */
        spec->arg_free(spec->arg);
    st = mtx_jobs_row_submit(s->jobs, s->queue->qw, spec->kind, run_id, body,
                             err);
    if (st != MT_OK)
        run_failed(s, run_id, err->msg);
    return st;
}

/* Creates the run and writes its audit record; 0 with rs filled when the
 * route's check refuses it or the state fails. */
static int64_t run_create(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, const struct mtx_job_spec *spec,
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
                           struct srv_resp *rs, const struct mtx_job_spec *spec,
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

/* ==== Rebuilding a claimed job ==== */

enum mt_status mtx_srv_job_rebuild(struct mt_server *s, const char *body,
                                   const struct srv_job_rebuild *r,
                                   struct mtx_job_spec *spec,
                                   struct mt_error *err)
{
    struct srv_req rq;
    struct srv_resp rs;
    void *a;

    memset(&rq, 0, sizeof rq);
    memset(&rs, 0, sizeof rs);
    rq.body = body;
    rq.body_len = strlen(body);
    a = r->read(s, &rq, &rs);
    if (a && !r->ready(s, a, &rs)) {
        r->arg_free(a);
        a = NULL;
    }
    if (!a)
        return mtx_srv_resp_failure(&rs, err);
    if (r->bind(s, a, err) != MT_OK) {
        r->arg_free(a);
        return err->status;
    }
    spec->kind = r->kind;
    spec->fn = r->fn;
    spec->arg = a;
    spec->arg_free = r->arg_free;
    return MT_OK;
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

/* A claimed row (the loop's callback, on its claiming thread): the job
 * rebuilt from the body with its kind's builder and run here. */
static void run_claimed(void *user, struct mtx_qjob *qj)
{
    struct mt_server *s = user;
    struct mt_error err = {MT_OK, ""};
    srv_job_build_fn build = builder(qj->row.kind);
    struct mtx_job_spec spec;
    const char *body;
    int64_t run;
    json_t *p;
    enum mt_status st;

    if (!mtx_jobs_row_read(qj, &run, &body, &p))
        return;
    memset(&spec, 0, sizeof spec);
    st = build ? build(s, run, body, &spec, &err)
               : mt_fail(&err, MT_EUNSUPPORTED, "this server runs no '%s' jobs",
                         qj->row.kind);
    if (st != MT_OK)
        mt_error_prefix(&err, "%s cannot run it", mtx_qworker_name(qj->w));
    mtx_jobs_run_row(s->jobs, run, qj, st == MT_OK ? &spec : NULL, &err);
    json_decref(p);
}

/* The kinds a server claims. Scores run in their request (no model, no
 * job to lose). */
static const struct mtx_qworker_kind srv_kinds[] = {
    {"check", run_claimed}, {"ask", run_claimed},   {"verify", run_claimed},
    {"batch", run_claimed}, {"sleep", run_claimed},
};

/* Waits up to 's' seconds for a submit here or the server's stop. */
static int claim_wait(void *user, double secs)
{
    struct mt_server *s = user;

    return mtx_jobs_nap(s->jobs, secs);
}

static int claim_stopping(void *user)
{
    struct mt_server *s = user;

    return mtx_jobs_stopping(s->jobs);
}

/* ==== Heartbeats and pruning ==== */

/* After each heartbeat (the leases of the rows running here): the old
 * event rows. */
static void on_beat(void *user, const struct mtx_queue_progress *p)
{
    struct mt_server *s = user;

    (void)p;
    mtx_jobs_prune(s->jobs, s->p.event_retention_s);
}

/* Runs that no server's job holds any more are marked interrupted
 * (batch/jobs.h: mtx_jobs_orphans). */
static enum mt_status interrupt_orphans(struct mtx_pg *pg, void *user,
                                        struct mt_error *err)
{
    struct mt_server *s = user;

    (void)err;
    mtx_jobs_orphans(pg, s->p.job_lease_s,
                     "interrupted: no server holds its job any more "
                     "(a batch resumes from its journal: POST "
                     "/v1/runs/ID/resume)",
                     "server");
    return MT_OK;
}

/* The queue worker loop with the server's kinds, its job threads
 * (--llm-jobs, none on a front end), each on its own connection. */
static void loop_params(struct mt_server *s, struct mtx_qworker_params *p,
                        const char *node)
{
    mtx_qworker_default_params(p);
    p->url = s->state_url;
    p->name = node;
    p->log_prefix = "server";
    p->kinds = srv_kinds;
    p->nkinds = sizeof srv_kinds / sizeof srv_kinds[0];
    p->user = s;
    p->threads = mtx_srv_runs_jobs(s) ? (unsigned)s->p.llm_jobs : 0;
    p->lease_s = s->p.job_lease_s;
    p->poll_s = POLL_S;
    p->retry_s = RETRY_S;
    p->conn_per_thread = 1;
    p->on_beat = on_beat;
    p->stopping = claim_stopping;
    p->nap = claim_wait;
}

enum mt_status mtx_srv_queue_start(struct mt_server *s, struct mt_error *err)
{
    struct mtx_qworker_params p;
    struct mt_error why = {MT_OK, ""};
    char host[96] = "host", node[160];
    enum mt_status st;

    if (s->p.job_lease_s < 1)
        return mt_fail(err, MT_EINVAL, "the job lease is at least 1 second");
    s->queue = mt_calloc(1, sizeof *s->queue);
    if (!s->queue)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    gethostname(host, sizeof host - 1);
    snprintf(node, sizeof node, "%s:%s:%ld", s->p.headless ? "worker" : "serve",
             host, (long)getpid());
    loop_params(s, &p, node);
    st = mtx_qworker_start(&p, &s->queue->qw, err);
    if (st != MT_OK)
        return st;
    /* its threads connect when PostgreSQL is back */
    if (mtx_qworker_call(s->queue->qw, interrupt_orphans, s, &why) != MT_OK)
        mt_log(MT_LOG_WARN, "server: the shared queue: %s", why.msg);
    return MT_OK;
}

void mtx_srv_queue_stop(struct mt_server *s)
{
    struct srv_queue *q = s->queue;

    if (!q)
        return;
    mtx_qworker_free(q->qw); /* its threads finish the rows in hand */
    mt_free(q);
    s->queue = NULL;
}
