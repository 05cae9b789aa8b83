/* Runs over HTTP: listing and reading the runs table (users see their own,
 * admins everyone's), the event-stream route, score runs' HTML reports,
 * and the synthetic sleep job (test equipment) that exercises the job
 * queue like a slow model call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/file.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

struct run_ctx {
    const struct srv_req *rq;
    json_t *out; /* object (get) or array (list) */
    int full;
    int denied;
};

static int may_see(const struct srv_req *rq, const struct mt_run *r)
{
    return rq->user.role == MT_ROLE_ADMIN || r->user_id == rq->user.id;
}

static json_t *run_json(const struct mt_run *r, int full)
{
    json_t *o = json_pack(
        "{s:I,s:s,s:s,s:s,s:I}", "id", (json_int_t)r->id, "user",
        r->user ? r->user : "", "kind", r->kind ? r->kind : "", "status",
        r->status ? r->status : "", "created_at", (json_int_t)r->created_at);

    if (!o)
        return NULL;
    json_object_set_new(o, "finished_at",
                        r->finished_at ? json_integer(r->finished_at)
                                       : json_null());
    json_object_set_new(o, "error",
                        r->error ? json_string(r->error) : json_null());
    if (!full)
        return o;
    json_object_set_new(o, "input_sha256",
                        r->input_hash ? json_string(r->input_hash)
                                      : json_null());
    json_object_set_new(
        o, "result", r->result ? json_loads(r->result, 0, NULL) : json_null());
    return o;
}

static enum mt_status on_run(const struct mt_run *r, void *user)
{
    struct run_ctx *c = user;
    json_t *o;

    if (!may_see(c->rq, r)) {
        c->denied = 1;
        return MT_OK;
    }
    o = run_json(r, c->full);
    if (!o)
        return MT_ENOMEM;
    if (json_is_array(c->out))
        return json_array_append_new(c->out, o) == 0 ? MT_OK : MT_ENOMEM;
    c->out = o;
    return MT_OK;
}

static uint32_t arg_u32(const struct srv_req *rq, const char *name,
                        uint32_t def, uint32_t max)
{
    const char *v = rq->arg(rq->ctx, name);
    char *end = NULL;
    unsigned long n;

    if (!v || !*v)
        return def;
    n = strtoul(v, &end, 10);
    if (*end || n > max)
        return def;
    return (uint32_t)n;
}

void mtx_srv_runs_list(struct mt_server *s, struct srv_req *rq,
                       struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    struct run_ctx c = {rq, json_array(), 0, 0};
    int all = rq->user.role == MT_ROLE_ADMIN && arg_u32(rq, "all", 0, 1);
    enum mt_status st = c.out ? mtx_srv_lease_get(s, &l, &err) : MT_ENOMEM;

    (void)id;
    if (st == MT_OK)
        st = mt_run_list(l->state, all ? 0 : rq->user.id,
                         (int64_t)arg_u32(rq, "before", 0, 2000000000u),
                         arg_u32(rq, "limit", 50, 500), on_run, &c, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK) {
        mtx_srv_json(rs, 200, json_pack("{s:o}", "runs", c.out));
        return;
    }
    json_decref(c.out);
    mtx_srv_fail(rs, st, &err);
}

/* Reads run 'id' into c->out when the user may see it; 404 otherwise. */
static int load_run(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id, struct run_ctx *c)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    (void)rq; /* c->rq decides what the user may see */
    if (st == MT_OK)
        st = mt_run_get(l->state, id, on_run, c, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK && c->out)
        return 0;
    if (st == MT_OK || st == MT_ENOTFOUND)
        mtx_srv_error(rs, 404, "no run %lld", (long long)id);
    else
        mtx_srv_fail(rs, st, &err);
    return -1;
}

void mtx_srv_run_get(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id)
{
    struct run_ctx c = {rq, NULL, 1, 0};

    if (load_run(s, rq, rs, id, &c) == 0)
        mtx_srv_json(rs, 200, c.out);
}

/* The route checks access and prepares the run's final state as one
 * "done" event; the transport streams the live job instead when there is
 * one (server.c). */
void mtx_srv_run_events(struct mt_server *s, struct srv_req *rq,
                        struct srv_resp *rs, int64_t id)
{
    struct run_ctx c = {rq, NULL, 1, 0};
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    char *txt;

    if (load_run(s, rq, rs, id, &c) != 0)
        return;
    mtx_srv_json(rs, 200, c.out);
    txt = mtx_buf_printf(&b, "event: done\ndata: %s\n\n", rs->body) == MT_OK
              ? mtx_buf_take(&b)
              : NULL;
    mtx_buf_free(&b);
    mtx_srv_resp_free(rs);
    if (!txt) {
        mtx_srv_error(rs, 500, "out of memory");
        return;
    }
    rs->body = txt;
    rs->len = strlen(txt);
    rs->status = 200;
    rs->type = "text/event-stream";
    rs->sse_run = id;
    mtx_jobs_mirror(s->jobs, id); /* a run of another server (shared state) */
}

/* ==== Runs left unfinished by a server that stopped ==== */

/* A single-node server holds DB/server.lock and marks the runs a
 * stopped server left queued or running "interrupted" (batch/jobs.h:
 * mtx_jobs_recover). With a shared state (PostgreSQL) a dead server's
 * claimed rows go back to the queue when their lease runs out
 * (shared_jobs.c) instead. */
enum mt_status mtx_srv_runs_recover(struct mt_server *s, struct mt_error *err)
{
    struct srv_lease *l = NULL;
    enum mt_status st;

    s->store_lock = -1;
    if (s->state_url)
        return MT_OK;
    st = mtx_srv_lease_get(s, &l, err);
    if (st == MT_OK)
        st = mtx_jobs_recover(
            l->state, s->db_dir,
            "interrupted: the server stopped while this run was queued or "
            "running (a batch resumes from its journal: POST "
            "/v1/runs/ID/resume)",
            "server", &s->store_lock, err);
    mtx_srv_lease_put(s, l);
    return st;
}

void mtx_srv_runs_unlock(struct mt_server *s)
{
    if (s->store_lock >= 0)
        close(s->store_lock); /* releases the flock */
    s->store_lock = -1;
}

/* ==== Cancel ==== */

/* POST /v1/runs/ID/cancel: asks a queued or running job to stop (its
 * owner or an admin: load_run shows others' runs as 404). A check stops
 * before its next model call and the run ends failed, "cancelled". */
void mtx_srv_run_cancel(struct mt_server *s, struct srv_req *rq,
                        struct srv_resp *rs, int64_t id)
{
    struct run_ctx c = {rq, NULL, 0, 0};
    int how;

    if (load_run(s, rq, rs, id, &c) != 0)
        return;
    json_decref(c.out);
    how = mtx_jobs_cancel_run(s->jobs, id);
    if (how == MTX_CANCEL_ENDED) {
        mtx_srv_audit(s, NULL, rq, "cancel",
                      json_pack("{s:I}", "run_id", (json_int_t)id));
        mtx_srv_json(rs, 200,
                     json_pack("{s:I,s:s}", "run_id", (json_int_t)id, "status",
                               "failed"));
        return;
    }
    if (how == MTX_CANCEL_NONE) {
        mtx_srv_error(rs, 409, "run %lld has already finished", (long long)id);
        return;
    }
    mtx_srv_audit(s, NULL, rq, "cancel",
                  json_pack("{s:I}", "run_id", (json_int_t)id));
    mtx_srv_json(rs, 202,
                 json_pack("{s:I,s:s}", "run_id", (json_int_t)id, "status",
                           "cancelling"));
}

/* ==== Reports ==== */

#define REPORT_MAX ((size_t)64 << 20)

/* The report's own inline CSS and scripts run in a sandbox (an opaque
 * origin: no cookies, no API), framed only by the UI. */
static const char report_csp[] =
    "default-src 'none'; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'self'; sandbox allow-scripts";

void mtx_srv_report_path(const struct mt_server *s, int64_t id, char *buf,
                         size_t n)
{
    snprintf(buf, n, "%s/reports/run-%lld.html", s->db_dir, (long long)id);
}

void mtx_srv_report_share(struct mt_server *s, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_buf b = MT_BUF_INIT(REPORT_MAX);
    struct srv_lease *l = NULL;
    char path[4096];

    if (!s->p.state_url)
        return;
    mtx_srv_report_path(s, id, path, sizeof path);
    if (mtx_file_read_all(path, &b, NULL) != MT_OK)
        mt_fail(&err, MT_EIO, "cannot read %s", path);
    else if (mtx_srv_lease_get(s, &l, &err) == MT_OK)
        mt_run_report_put(l->state, id, b.data ? b.data : "", &err);
    mtx_srv_lease_put(s, l);
    mtx_buf_free(&b);
    if (err.status != MT_OK)
        mt_log(MT_LOG_ERROR, "server: run %lld: report not shared: %s",
               (long long)id, err.msg);
}

/* The report another server wrote, from the shared state. */
static enum mt_status shared_report(struct mt_server *s, int64_t id,
                                    struct mt_buf *b)
{
    struct srv_lease *l = NULL;
    char *html = NULL;
    size_t n = 0;
    enum mt_status st = MT_ENOTFOUND;

    if (!s->p.state_url)
        return st;
    st = mtx_srv_lease_get(s, &l, NULL);
    if (st == MT_OK)
        st = mt_run_report_get(l->state, id, &html, &n, NULL);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK)
        st = mtx_buf_append(b, html, n);
    mt_free(html);
    return st;
}

/* GET /v1/runs/ID/report: the HTML report of a score run. */
void mtx_srv_run_report(struct mt_server *s, struct srv_req *rq,
                        struct srv_resp *rs, int64_t id)
{
    struct run_ctx c = {rq, NULL, 0, 0};
    struct mt_buf b = MT_BUF_INIT(REPORT_MAX);
    const char *kind;
    char path[4096];
    int kind_ok;
    enum mt_status st;

    if (load_run(s, rq, rs, id, &c) != 0)
        return;
    kind = json_string_value(json_object_get(c.out, "kind"));
    kind_ok =
        kind && (strcmp(kind, "score") == 0 || strcmp(kind, "batch") == 0);
    st = kind_ok ? MT_OK : MT_ENOTFOUND;
    json_decref(c.out);
    mtx_srv_report_path(s, id, path, sizeof path);
    if (st == MT_OK)
        st = mtx_file_read_all(path, &b, NULL);
    if (st == MT_ENOTFOUND && kind_ok)
        st = shared_report(s, id, &b);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        if (st == MT_ENOTFOUND)
            mtx_srv_error(rs, 404, "run %lld has no report", (long long)id);
        else
            mtx_srv_error(rs, 500, "cannot read the report of run %lld",
                          (long long)id);
        return;
    }
    mtx_srv_resp_free(rs);
    rs->len = b.len;
    rs->body = mtx_buf_take(&b);
    rs->status = 200;
    rs->type = "text/html; charset=utf-8";
    rs->csp = report_csp;
    rs->frame_self = 1;
}

/* ==== The synthetic sleep job ==== */

struct sleep_arg {
    unsigned ms;
    unsigned steps;
    unsigned pad;    /* bytes of "pad" in each step event (replay-log tests) */
    unsigned tokens; /* token events {"text":"tN "} before each step */
};

#define SLEEP_PAD_MAX 65536

static json_t *step_json(const struct sleep_arg *a, unsigned i)
{
    json_t *o = json_pack("{s:i,s:i}", "step", (int)i, "of", (int)a->steps);
    char *pad = a->pad ? mt_malloc(a->pad) : NULL;

    if (o && pad) {
        memset(pad, 'x', a->pad);
        json_object_set_new(o, "pad", json_stringn(pad, a->pad));
    }
    mt_free(pad);
    return o;
}

static void emit_tokens(struct mtx_job *j, const struct sleep_arg *a,
                        unsigned step)
{
    char t[32];
    unsigned k;

    for (k = 0; k < a->tokens; k++) {
        snprintf(t, sizeof t, "t%u ", step * a->tokens + k);
        mtx_job_emit(j, "token", json_pack("{s:s}", "text", t));
    }
}

static enum mt_status sleep_fn(struct mtx_job *j, void *arg, json_t **result,
                               struct mt_error *err)
{
    const struct sleep_arg *a = arg;
    unsigned i;

    for (i = 0; i < a->steps; i++) {
        mtx_job_sleep(j, a->ms / a->steps);
        if (mtx_job_canceled(j))
            return mt_fail(err, MT_ECANCELED, "job cancelled at step %u",
                           i + 1);
        emit_tokens(j, a, i);
        mtx_job_emit(j, "step", step_json(a, i + 1));
    }
    *result =
        json_pack("{s:i,s:i}", "slept_ms", (int)a->ms, "steps", (int)a->steps);
    return *result ? MT_OK : MT_ENOMEM;
}

static int sleep_args(const struct srv_req *rq, struct srv_resp *rs,
                      struct sleep_arg *a)
{
    json_t *o = NULL;
    json_t *ms, *steps, *pad, *tok;

    a->ms = 1000;
    a->steps = 3;
    a->pad = 0;
    a->tokens = 0;
    if (rq->body_len == 0)
        return 0;
    if (mtx_srv_body_json(rq, rs, &o) != 0)
        return -1;
    ms = json_object_get(o, "ms");
    steps = json_object_get(o, "steps");
    pad = json_object_get(o, "pad");
    tok = json_object_get(o, "tokens");
    if (json_is_integer(tok) && json_integer_value(tok) >= 0 &&
        json_integer_value(tok) <= 10000)
        a->tokens = (unsigned)json_integer_value(tok);
    if (json_is_integer(pad) && json_integer_value(pad) >= 0 &&
        json_integer_value(pad) <= SLEEP_PAD_MAX)
        a->pad = (unsigned)json_integer_value(pad);
    if (json_is_integer(ms) && json_integer_value(ms) >= 0 &&
        json_integer_value(ms) <= 600000)
        a->ms = (unsigned)json_integer_value(ms);
    if (json_is_integer(steps) && json_integer_value(steps) >= 1 &&
        json_integer_value(steps) <= 1000)
        a->steps = (unsigned)json_integer_value(steps);
    json_decref(o);
    return 0;
}

enum mt_status mtx_srv_sleep_job_build(struct mt_server *s, int64_t run,
                                       const char *body,
                                       struct mtx_job_spec *spec,
                                       struct mt_error *err)
{
    struct srv_req rq;
    struct srv_resp rs;
    struct sleep_arg a, *arg;

    (void)s;
    (void)run;
    memset(&rq, 0, sizeof rq);
    memset(&rs, 0, sizeof rs);
    rq.body = body;
    rq.body_len = strlen(body);
    if (sleep_args(&rq, &rs, &a) != 0)
        return mtx_srv_resp_failure(&rs, err);
    if (!(arg = mt_malloc(sizeof *arg)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    *arg = a;
    spec->kind = "sleep";
    spec->fn = sleep_fn;
    spec->arg = arg;
    spec->arg_free = mt_free;
    return MT_OK;
}

void mtx_srv_sleep_job(struct mt_server *s, struct srv_req *rq,
                       struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    struct sleep_arg a, *arg;
    struct mtx_job_spec spec = {"sleep", sleep_fn, NULL, mt_free};
    enum mt_status st;
    char ev[64];

    if (sleep_args(rq, rs, &a) != 0)
        return;
    st = mtx_srv_lease_get(s, &l, &err);
    if (st == MT_OK)
        st = mt_run_create(l->state, rq->user.id, rq->user.name, "sleep", NULL,
                           &id, &err);
    mtx_srv_lease_put(s, l);
    arg = st == MT_OK ? mt_malloc(sizeof *arg) : NULL;
    if (st == MT_OK && !arg)
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (arg)
        *arg = a;
    spec.arg = arg;
    if (st == MT_OK)
        st = mtx_srv_job_submit_body(s, id, &spec, rq->body, &err);
    if (st == MT_ELIMIT || st == MT_ECANCELED) {
        rs->retry_after = 5;
        mtx_srv_error(rs, 503, "%s", err.msg);
        return;
    }
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return;
    }
    snprintf(ev, sizeof ev, "/v1/runs/%lld/events", (long long)id);
    mtx_srv_json(rs, 202,
                 json_pack("{s:I,s:s,s:s}", "run_id", (json_int_t)id, "status",
                           "queued", "events", ev));
}
