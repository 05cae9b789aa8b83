/* POST /v1/batch: a MEDEC-format CSV checked note by note on the job queue
 * as `medtrust mediqa` does, then scored against the same CSV as `score
 * --report` does (optionally with per-pair BLEURT scores). The batch's
 * folder, DB/batches/run-ID/, is the batch layer's (batch/folder.h: the
 * upload, the settings, the journal a cancelled, failed or timed-out run
 * resumes from with POST /v1/runs/ID/resume, the submission and the
 * score); this file holds the HTTP side: the request's fields, the run's
 * row, the job and its progress events (done, failed, total, rate and
 * ETA). The upload is bounded by the server's body limit and by
 * SRV_BATCH_NOTES_MAX notes; the job by the job timeout (a resume
 * continues). */
#include <stdio.h>
#include <string.h>

#include "batch/folder.h"
#include "core/clock.h"
#include "medtrust/batch.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

struct batch_arg {
    struct mt_server *s;
    int64_t run;
    int model;            /* "model": an --llm-choice index, -1 = --llm */
    struct mtx_bfolder f; /* DB/batches/run-ID (batch/folder.h) */
};

static void set_status(struct mt_server *s, int64_t run, const char *status,
                       const char *error)
{
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK)
        mt_run_update(l->state, run, status, NULL, error, NULL);
    mtx_srv_lease_put(s, l);
}

/* ==== The job ==== */

struct progress {
    struct mtx_job *j;
    const struct batch_arg *a;
    double t0;
};

static void emit_progress(struct mtx_job *j, const struct progress *pr,
                          const struct mtx_bfolder_progress *p, const char *id)
{
    double el = mtx_clock_now() - pr->t0;
    size_t fresh = p->done - p->resumed;
    double rate = el > 0 && fresh ? (double)fresh / el : 0;
    double eta = rate > 0 ? (double)(p->total - p->done) / rate : -1;

    mtx_job_emit(j, "progress",
                 json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:s?}", "total",
                           (json_int_t)p->total, "done", (json_int_t)p->done,
                           "failed", (json_int_t)p->failed, "resumed",
                           (json_int_t)p->resumed, "elapsed_s", el,
                           "notes_per_min", rate * 60, "eta_s", eta, "id", id));
}

/* The folder run's progress: a failed note is logged. */
static void on_progress(void *user, const struct mtx_bfolder_progress *p,
                        const struct mt_batch_note *note)
{
    struct progress *pr = user;

    if (note && note->failed)
        mt_log(MT_LOG_WARN, "server: batch run %lld note %s: %s",
               (long long)pr->a->run, note->id, note->error);
    emit_progress(pr->j, pr, p, note ? note->id : NULL);
}

/* cp.cancelled: the batch's job was asked to stop (polled before each
 * model call, so a cancel does not wait for the note to end). */
static int note_cancelled(void *user, const char *note_id)
{
    (void)note_id;
    return mtx_job_canceled(user);
}

static int batch_cancelled(void *user)
{
    const struct progress *pr = user;

    return mtx_job_canceled(pr->j);
}

/* The model's checker, and the batch's settings on it (a batch streams
 * progress, not steps). */
static enum mt_status checker(void *user, struct mt_agent **out,
                              struct mt_agent_check_params *cp,
                              struct mt_error *err)
{
    const struct progress *pr = user;
    const struct batch_arg *a = pr->a;
    enum mt_status st = mtx_srv_checker(a->s, a->f.strat, a->model, out, err);

    if (st == MT_OK) {
        mtx_srv_check_params(*out, a->f.strat, &a->f.set, MT_AGENT_SEARCH_AUTO,
                             cp);
        cp->cancelled = note_cancelled;
        cp->cancelled_user = pr->j;
    }
    return st;
}

static void checker_put(void *user, struct mt_agent *agent)
{
    const struct progress *pr = user;

    mtx_srv_checker_put(pr->a->s, agent);
}

/* Runs the batch folder (batch/folder.h: the notes the journal does not
 * hold, the submission, the score); a cancel says how to resume. */
static enum mt_status batch_fn(struct mtx_job *j, void *arg, json_t **result,
                               struct mt_error *err)
{
    struct batch_arg *a = arg;
    struct progress pr = {j, a, mtx_clock_now()};
    struct mtx_bfolder_run r;
    char report[4096];
    enum mt_status st;

    memset(&r, 0, sizeof r);
    mtx_srv_report_path(a->s, a->run, report, sizeof report);
    r.max_notes = SRV_BATCH_NOTES_MAX;
    r.report = report;
    r.checker = checker;
    r.checker_put = checker_put;
    r.on_progress = on_progress;
    r.cancelled = batch_cancelled;
    r.user = &pr;
    st = mtx_bfolder_run(&a->f, &r, result, err);
    if (r.scored)
        mtx_srv_report_share(a->s, a->run);
    if (st == MT_ECANCELED)
        st = mt_fail(err, MT_ECANCELED,
                     "cancelled after %zu of %zu notes; POST "
                     "/v1/runs/%lld/resume continues",
                     r.progress.done, r.progress.total, (long long)a->run);
    return st;
}

/* ==== Starting and resuming ==== */

/* The folder's model by its --llm-choice name: -1 when none; a name this
 * server no longer offers cannot resume. */
static enum mt_status folder_model(struct batch_arg *a, struct mt_error *err)
{
    a->model = mtx_srv_model_find(a->s, a->f.has_model ? a->f.model : NULL);
    if (a->model >= 0 || !a->f.has_model)
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "the batch ran on model '%s', which this server does not "
                   "offer (serve --llm-choice %s=SPEC)",
                   a->f.model, a->f.model);
}

/* Reads the folder's params.json and binds its model. */
static enum mt_status params_read(struct batch_arg *a, struct mt_error *err)
{
    enum mt_status st = mtx_bfolder_load(&a->f, err);

    return st == MT_OK ? folder_model(a, err) : st;
}

/* Points the folder at run a->run's and names its model. */
static void folder_init(struct batch_arg *a)
{
    const char *m = mtx_srv_model_name(a->s, a->model);

    mtx_bfolder_dir(a->s->db_dir, a->run, a->f.dir, sizeof a->f.dir);
    a->f.has_model = m != NULL;
    snprintf(a->f.model, sizeof a->f.model, "%s", m ? m : "");
}

/* Queues the batch: 'body' is its upload ({"data", "strategy", ...}) for
 * a server that claims the row without DIR (shared state). */
static enum mt_status queue(struct mt_server *s, struct batch_arg *a,
                            const char *body, struct mt_error *err)
{
    struct mtx_job_spec spec = {"batch", batch_fn, a, mt_free};

    return mtx_srv_job_submit_body(s, a->run, &spec, body, err);
}

/* A score file member: absent, or the text of a per-pair score file. */
static int bad_scores(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);

    return v && !json_is_string(v);
}

/* POST /v1/batch's CSV: its size is the body's limit. */
const struct srv_text mtx_srv_batch_text = {
    "data", 1, 0, 0, 0, "the text of a MEDEC-format CSV"};

/* Reads {"data","strategy","name","bleurt","bertscore","model"} and the
 * check settings. */
static int read_body(struct mt_server *s, const struct srv_req *rq,
                     struct srv_resp *rs, json_t **o, struct batch_arg *a)
{
    const char *strat, *name, *data;
    char names[128];

    if (mtx_srv_body_json(rq, rs, o) != 0)
        return -1;
    strat = json_string_value(json_object_get(*o, "strategy"));
    name = json_string_value(json_object_get(*o, "name"));
    a->s = s;
    a->f.strat = MT_STRATEGY_REACT_REFLEX;
    if (mtx_srv_text(*o, &mtx_srv_batch_text, &data, rs) != 0) {
        /* its 400 names "data" */
    } else if (strat && mt_strategy_parse(strat, &a->f.strat) != MT_OK)
        mtx_srv_error(rs, 400, "\"strategy\" is %s",
                      mt_strategy_list(names, sizeof names));
    else if (bad_scores(*o, "bleurt") || bad_scores(*o, "bertscore"))
        mtx_srv_error(rs, 400,
                      "\"%s\" must be the text of a per-pair score file",
                      bad_scores(*o, "bleurt") ? "bleurt" : "bertscore");
    else if (mtx_srv_check_settings(*o, &a->f.set, rs) == 0 &&
             mtx_srv_model_read(s, *o, &a->model, rs) == 0) {
        snprintf(a->f.name, sizeof a->f.name, "%s",
                 name && *name ? name : mt_strategy_str(a->f.strat));
        a->f.has_bleurt = json_is_string(json_object_get(*o, "bleurt"));
        a->f.has_bertscore = json_is_string(json_object_get(*o, "bertscore"));
        return 0;
    }
    return -1;
}

static int64_t create_run(struct mt_server *s, struct srv_req *rq,
                          const char *csv, struct mt_error *err)
{
    struct srv_lease *l = NULL;
    char h[MT_SECRET_SIZE];
    int64_t id = 0;
    enum mt_status st = mtx_srv_lease_get(s, &l, err);

    mt_sha256_hex(csv, strlen(csv), h);
    if (st == MT_OK)
        st = mt_run_create(l->state, rq->user.id, rq->user.name, "batch", h,
                           &id, err);
    if (st == MT_OK)
        mtx_srv_audit(s, l, rq, "batch",
                      json_pack("{s:I,s:s,s:I}", "run_id", (json_int_t)id,
                                "data_sha256", h, "bytes",
                                (json_int_t)strlen(csv)));
    mtx_srv_lease_put(s, l);
    return st == MT_OK ? id : 0;
}

static void accepted(struct srv_resp *rs, int64_t id)
{
    char ev[64];

    snprintf(ev, sizeof ev, "/v1/runs/%lld/events", (long long)id);
    mtx_srv_json(rs, 202,
                 json_pack("{s:I,s:s,s:s}", "run_id", (json_int_t)id, "status",
                           "queued", "events", ev));
}

void mtx_srv_batch(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct batch_arg *a = mt_calloc(1, sizeof *a);
    json_t *o = NULL;
    const char *csv;
    enum mt_status st = MT_OK;

    if (!a || read_body(s, rq, rs, &o, a) != 0) {
        if (!a)
            mtx_srv_error(rs, 500, "out of memory");
        json_decref(o);
        mt_free(a);
        return;
    }
    csv = json_string_value(json_object_get(o, "data"));
    if (!mtx_srv_check_models(s, a->f.strat, a->model, rs) ||
        (st = mtx_bfolder_check_csv(csv, SRV_BATCH_NOTES_MAX, &err)) != MT_OK ||
        !(id = create_run(s, rq, csv, &err))) {
        if (!rs->body)
            mtx_srv_fail(rs, st == MT_ELIMIT ? MT_EINVAL : err.status, &err);
        json_decref(o);
        mt_free(a);
        return;
    }
    a->run = id;
    folder_init(a);
    st = mtx_bfolder_save(
        &a->f, csv, json_string_value(json_object_get(o, "bleurt")),
        json_string_value(json_object_get(o, "bertscore")), &err);
    if (st != MT_OK) {
        set_status(s, id, "failed", err.msg);
        mt_free(a);
        mtx_srv_fail(
            rs,
            st == MT_EIO || st == MT_ENOMEM || st == MT_EWRITE ? st : MT_EINVAL,
            &err);
    } else if ((st = queue(s, a, rq->body, &err)) != MT_OK) {
        rs->retry_after = 5;
        mtx_srv_error(rs, 503, "%s", err.msg);
    } else {
        accepted(rs, id);
    }
    json_decref(o);
}

/* ==== On the shared queue ==== */

/* Saves the upload of request body 'o' in the run's folder. */
static enum mt_status save_body(struct batch_arg *a, json_t *o,
                                struct mt_error *err)
{
    folder_init(a);
    return mtx_bfolder_save(
        &a->f, json_string_value(json_object_get(o, "data")),
        json_string_value(json_object_get(o, "bleurt")),
        json_string_value(json_object_get(o, "bertscore")), err);
}

/* A queued batch rebuilt where it is claimed (shared state): its DIR here
 * when this server took it or ran it before (the journal resumes), else
 * written from the upload in 'body' (its notes are checked from the
 * start: the journal of another server stays there). */
enum mt_status mtx_srv_batch_job(struct mt_server *s, int64_t run,
                                 const char *body, struct mtx_job_spec *spec,
                                 struct mt_error *err)
{
    struct srv_req rq;
    struct srv_resp rs;
    struct batch_arg *a = mt_calloc(1, sizeof *a);
    struct mt_error miss = {MT_OK, ""}; /* no DIR here yet */
    json_t *o = NULL;
    enum mt_status st;

    if (!a)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    memset(&rq, 0, sizeof rq);
    memset(&rs, 0, sizeof rs);
    a->s = s;
    a->run = run;
    mtx_bfolder_dir(s->db_dir, run, a->f.dir, sizeof a->f.dir);
    rq.body = body;
    rq.body_len = strlen(body);
    st = params_read(a, &miss);
    if (st != MT_OK) {
        st = read_body(s, &rq, &rs, &o, a) == 0
                 ? save_body(a, o, err)
                 : mtx_srv_resp_failure(&rs, err);
        json_decref(o);
    }
    if (st == MT_OK && !mtx_srv_check_models(s, a->f.strat, a->model, &rs))
        st = mtx_srv_resp_failure(&rs, err);
    if (st != MT_OK) {
        mt_free(a);
        return st;
    }
    spec->kind = "batch";
    spec->fn = batch_fn;
    spec->arg = a;
    spec->arg_free = mt_free;
    return MT_OK;
}

/* ==== POST /v1/runs/ID/resume ==== */

struct run_state {
    const struct srv_req *rq;
    int seen, denied, batch;
    char status[16];
};

static enum mt_status on_run(const struct mt_run *r, void *user)
{
    struct run_state *c = user;

    c->seen = 1;
    c->denied =
        c->rq->user.role != MT_ROLE_ADMIN && r->user_id != c->rq->user.id;
    c->batch = r->kind && strcmp(r->kind, "batch") == 0;
    snprintf(c->status, sizeof c->status, "%s", r->status ? r->status : "");
    return MT_OK;
}

/* 0 when run 'id' is the caller's (or they are an admin), a batch and
 * failed or interrupted; else sets 404 or 409 and returns -1. */
static int resumable(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct run_state c = {rq, 0, 0, 0, ""};
    struct srv_lease *l = NULL;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    if (st == MT_OK)
        st = mt_run_get(l->state, id, on_run, &c, &err);
    mtx_srv_lease_put(s, l);
    if (st != MT_OK && st != MT_ENOTFOUND) {
        mtx_srv_fail(rs, st, &err);
        return -1;
    }
    if (!c.seen || c.denied)
        mtx_srv_error(rs, 404, "no run %lld", (long long)id);
    else if (!c.batch)
        mtx_srv_error(rs, 409, "run %lld is not a batch; only batches resume",
                      (long long)id);
    else if (strcmp(c.status, "failed") != 0 &&
             strcmp(c.status, "interrupted") != 0)
        mtx_srv_error(rs, 409,
                      "run %lld is %s; only a failed (cancelled, timed out) "
                      "or interrupted batch resumes",
                      (long long)id, c.status);
    else
        return 0;
    return -1;
}

void mtx_srv_batch_resume(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    struct mt_error err = {MT_OK, ""};
    struct batch_arg *a;
    char *body = NULL;
    int ok;

    /* One resume at a time, so two cannot both see "failed" and queue
     * two jobs on one journal. */
    pthread_mutex_lock(&mu);
    ok = resumable(s, rq, rs, id) == 0;
    if (ok)
        set_status(s, id, "queued", NULL);
    pthread_mutex_unlock(&mu);
    if (!ok)
        return;
    a = mt_calloc(1, sizeof *a);
    if (!a) {
        mtx_srv_error(rs, 500, "out of memory");
        return;
    }
    a->s = s;
    a->run = id;
    mtx_bfolder_dir(s->db_dir, id, a->f.dir, sizeof a->f.dir);
    if (params_read(a, &err) != MT_OK) {
        set_status(s, id, "failed", err.msg);
        mt_free(a);
        mtx_srv_fail(rs, MT_EIO, &err);
        return;
    }
    mtx_srv_audit(s, NULL, rq, "batch_resume",
                  json_pack("{s:I}", "run_id", (json_int_t)id));
    body = s->state_url ? mtx_bfolder_upload(&a->f, &err) : NULL;
    if ((s->state_url && !body) || queue(s, a, body, &err) != MT_OK) {
        if (s->state_url && !body)
            mt_free(a);
        mt_free(body);
        set_status(s, id, "failed", err.msg);
        rs->retry_after = 5;
        mtx_srv_error(rs, 503, "%s", err.msg);
        return;
    }
    mt_free(body);
    accepted(rs, id);
}
