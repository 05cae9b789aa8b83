/* POST /v1/batch: a MEDEC-format CSV checked note by note on the job queue
 * as `medtrust mediqa` does, then scored against the same CSV as `score
 * --report` does (optionally with per-pair BLEURT scores). Each finished
 * note is journaled (flushed and fdatasync'd) so a cancelled, failed or
 * timed-out run resumes with POST /v1/runs/ID/resume without redoing one;
 * a note whose check fails is not journaled, so a resume retries it (a
 * finished run scores it as missing, and says how many). Progress events
 * carry done, failed, total, rate and ETA. The upload is bounded by the
 * server's body limit and by SRV_BATCH_NOTES_MAX notes; the job by the
 * job timeout (a resume continues). Files live in DB/batches/run-ID/. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/csv.h"
#include "core/file.h"
#include "medtrust/batch.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"
#include "server/srv_int.h"

struct batch_arg {
    struct mt_server *s;
    int64_t run;
    enum mt_strategy strat;
    struct mt_agent_params set; /* mtx_srv_batch_settings (the rest are
                                   the defaults) */
    int model;                  /* "model": an --llm-choice index, -1 = --llm */
    char name[128];
    char dir[4096];    /* DB/batches/run-ID */
    int has_bleurt;    /* DIR/bleurt.txt: per-pair BLEURT scores */
    int has_bertscore; /* DIR/bertscore.txt: per-pair BERTScore F1 */
};

/* ==== Files ==== */

static void batch_dir(const struct mt_server *s, int64_t run, char *buf,
                      size_t n)
{
    snprintf(buf, n, "%s/batches/run-%lld", s->db_dir, (long long)run);
}

/* Makes DB/batches and DIR. */
static enum mt_status make_dir(const struct batch_arg *a, struct mt_error *err)
{
    char up[4096];

    snprintf(up, sizeof up, "%s/batches", a->s->db_dir);
    if ((mkdir(up, 0750) == 0 || errno == EEXIST) &&
        (mkdir(a->dir, 0750) == 0 || errno == EEXIST))
        return MT_OK;
    return mt_fail(err, MT_EIO, "%s: %s", a->dir, strerror(errno));
}

static void set_status(struct mt_server *s, int64_t run, const char *status,
                       const char *error)
{
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK)
        mt_run_update(l->state, run, status, NULL, error, NULL);
    mtx_srv_lease_put(s, l);
}

static char *file_path(const struct batch_arg *a, const char *name)
{
    struct mt_buf b = MT_BUF_INIT(8192);

    if (mtx_buf_printf(&b, "%s/%s", a->dir, name) != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* Writes 'n' bytes to DIR/NAME atomically (a temporary file, fsync,
 * rename). */
static enum mt_status write_file(const struct batch_arg *a, const char *name,
                                 const char *data, size_t n,
                                 struct mt_error *err)
{
    char *path = file_path(a, name);
    enum mt_status st;

    if (!path)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_file_write_atomic(path, data, n, err); /* core/file.h */
    mt_free(path);
    return st;
}

/* Reads DIR/NAME whole into *out (NUL-terminated); a missing file is
 * MT_EIO, as any file a batch's folder must hold. */
static enum mt_status read_file(const struct batch_arg *a, const char *name,
                                char **out, size_t *n, struct mt_error *err)
{
    char *path = file_path(a, name);
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    enum mt_status st = path ? mtx_file_read_all(path, &b, err)
                             : mt_fail(err, MT_ENOMEM, "out of memory");

    mt_free(path);
    if (st == MT_OK)
        st = mtx_buf_reserve(&b, 1); /* an empty file reads "" */
    *n = b.len;
    *out = st == MT_OK ? mtx_buf_take(&b) : NULL;
    mtx_buf_free(&b);
    if (st == MT_ENOTFOUND && err)
        err->status = MT_EIO;
    return st == MT_ENOTFOUND ? MT_EIO : st;
}

/* ==== Notes ==== */

/* Whether the CSV has any of MEDEC's gold columns: then it is scored
 * (and must have them all), else it is an unlabeled set of notes. */
static int csv_labeled(const char *csv, size_t len)
{
    static const char *const gold[] = {"Error Flag", "Error Sentence ID",
                                       "Corrected Sentence"};
    struct mt_csv *c = NULL;
    int got = 0, any = 0;
    size_t i;

    if (mtx_csv_open_mem("data", csv, len, NULL, &c, NULL) == MT_OK &&
        mtx_csv_next(c, &got, NULL) == MT_OK && got)
        for (i = 0; i < sizeof gold / sizeof gold[0]; i++)
            any |= mtx_csv_find(c, gold[i]) >= 0;
    mtx_csv_close(c);
    return any;
}

/* ==== The job ==== */

struct progress {
    struct srv_job *j;
    const struct batch_arg *a;
    size_t total, done, failed, resumed;
    double t0;
};

static void emit_progress(struct srv_job *j, const struct progress *p,
                          const char *id)
{
    double el = mtx_srv_now() - p->t0;
    size_t fresh = p->done - p->resumed;
    double rate = el > 0 && fresh ? (double)fresh / el : 0;
    double eta = rate > 0 ? (double)(p->total - p->done) / rate : -1;

    mtx_srv_job_emit(
        j, "progress",
        json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:s?}", "total",
                  (json_int_t)p->total, "done", (json_int_t)p->done, "failed",
                  (json_int_t)p->failed, "resumed", (json_int_t)p->resumed,
                  "elapsed_s", el, "notes_per_min", rate * 60, "eta_s", eta,
                  "id", id));
}

/* The runner's progress (medtrust/batch.h): "done" counts the notes
 * finished (resumed or checked), "failed" those whose check failed; a
 * failed note is logged. */
static void on_progress(void *user, const struct mt_batch_progress *bp,
                        const struct mt_batch_note *note)
{
    struct progress *p = user;

    p->resumed = bp->resumed;
    p->failed = bp->failed;
    p->done = bp->resumed + bp->checked - bp->failed;
    if (note && note->failed)
        mt_log(MT_LOG_WARN, "server: batch run %lld note %s: %s",
               (long long)p->a->run, note->id, note->error);
    emit_progress(p->j, p, note ? note->id : NULL);
}

/* Scores the submission against the CSV and writes the report. */
static enum mt_status score(const struct batch_arg *a, const char *csv,
                            const char *sub, json_t **result,
                            struct mt_error *err)
{
    struct mt_eval_params p;
    struct mt_eval_scores *bleurt = NULL, *bert = NULL;
    char *bpath = a->has_bleurt ? file_path(a, "bleurt.txt") : NULL;
    char *fpath = a->has_bertscore ? file_path(a, "bertscore.txt") : NULL;
    char report[4096], *json = NULL;
    size_t notes = 0;
    enum mt_status st = MT_OK;

    mt_eval_default_params(&p);
    if (bpath)
        st = mt_eval_scores_load(bpath, &bleurt, err);
    if (st == MT_OK && fpath)
        st = mt_eval_scores_load(fpath, &bert, err);
    p.bleurt = bleurt;
    p.bertscore = bert;
    mtx_srv_report_path(a->s, a->run, report, sizeof report);
    if (st == MT_OK)
        st = mtx_srv_score_text(csv, sub, a->name, &p, &json, &notes, report,
                                err);
    if (st == MT_OK)
        mtx_srv_report_share(a->s, a->run);
    if (st == MT_OK)
        *result = json_loads(json, 0, NULL);
    if (st == MT_OK && !*result)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(json);
    mt_free(bpath);
    mt_free(fpath);
    mt_eval_scores_free(bleurt);
    mt_eval_scores_free(bert);
    return st;
}

/* cp.cancelled: the batch's job was asked to stop (polled before each
 * model call, so a cancel does not wait for the note to end). */
static int note_cancelled(void *user, const char *note_id)
{
    (void)note_id;
    return mtx_srv_job_canceled(user);
}

static int batch_cancelled(void *user)
{
    const struct progress *p = user;

    return mtx_srv_job_canceled(p->j);
}

/* Checks every note the journal (DIR/journal.jsonl: each finished note
 * fdatasync'd, failed ones left out) does not hold, one at a time, on the
 * library's note runner, each note's trace line in DIR/traces.jsonl;
 * MT_ECANCELED when asked to stop (the journal keeps what is done). */
static enum mt_status check_all(struct srv_job *j, const struct batch_arg *a,
                                struct mt_batch *b, struct progress *p,
                                struct mt_error *err)
{
    struct mt_agent *agent = NULL;
    struct mt_agent_check_params cp;
    struct mt_batch_params bp;
    char *jp = file_path(a, "journal.jsonl");
    char *tp = file_path(a, "traces.jsonl");
    enum mt_status st =
        jp && tp ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    if (st == MT_OK)
        st = mtx_srv_checker(a->s, a->strat, a->model, &agent, err);
    if (st == MT_OK) { /* a batch streams progress, not steps */
        mtx_srv_check_params(agent, a->strat, &a->set, MT_AGENT_SEARCH_AUTO,
                             &cp);
        cp.cancelled = note_cancelled;
        cp.cancelled_user = j;
        mt_batch_default_params(&bp);
        bp.jobs = 1;
        bp.resume = 1;
        bp.journal_failed = 0;
        bp.journal_path = jp;
        bp.trace_path = tp;
        bp.check = &cp;
        bp.on_progress = on_progress;
        bp.cancelled = batch_cancelled;
        bp.user = p;
        p->j = j;
        p->a = a;
        st = mt_batch_run(b, agent, &bp, err);
    }
    mtx_srv_checker_put(a->s, agent);
    if (st == MT_ECANCELED)
        st = mt_fail(err, MT_ECANCELED,
                     "cancelled after %zu of %zu notes; POST "
                     "/v1/runs/%lld/resume continues",
                     p->done, p->total, (long long)a->run);
    mt_free(jp);
    mt_free(tp);
    return st;
}

/* As mediqa: a note whose model calls failed is not an answer, and a run
 * with such notes is failed, not done. The journal keeps the finished
 * notes (and the report of those is on disk when any was scored); a
 * resume checks only the failed ones again. */
static enum mt_status fail_notes(const struct progress *p,
                                 const struct mt_batch *b, json_t **result,
                                 struct mt_error *err)
{
    struct mt_batch_note x;
    char ids[320] = "";
    size_t i, k = 0, at = 0;

    for (i = 0; i < p->total && at + 1 < sizeof ids; i++)
        if (mt_batch_note_get(b, i, &x) == MT_OK && (x.failed || !x.line) &&
            k++ < 8)
            at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%.60s",
                                   k > 1 ? ", " : "", x.id);
    json_decref(*result);
    *result = NULL;
    return mt_fail(err, MT_EMODEL,
                   "%zu of %zu notes failed (%s%s: their model calls failed "
                   "or the model's replies were unusable, so no verdict): "
                   "resume the run to check them again",
                   p->failed, p->total, ids, k > 8 ? ", ..." : "");
}

/* The batch's result: the score when the CSV is labeled, and "batch". */
static enum mt_status batch_result(const struct batch_arg *a,
                                   const struct progress *p, const char *csv,
                                   size_t len, const char *sub, json_t **result,
                                   struct mt_error *err)
{
    int labeled = csv_labeled(csv, len);
    enum mt_status st = MT_OK;

    if (labeled)
        st = score(a, csv, sub, result, err);
    else if (!(*result = json_pack("{s:s,s:b}", "run", a->name, "labeled", 0)))
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        json_object_set_new(
            *result, "batch",
            json_pack("{s:s,s:I,s:I,s:I,s:b}", "strategy",
                      mt_strategy_str(a->strat), "notes", (json_int_t)p->total,
                      "failed", (json_int_t)p->failed, "resumed",
                      (json_int_t)p->resumed, "labeled", labeled));
    return st;
}

static enum mt_status batch_fn(struct srv_job *j, void *arg, json_t **result,
                               struct mt_error *err)
{
    struct batch_arg *a = arg;
    struct progress p;
    struct mt_batch *b = NULL;
    char *csv = NULL, *sub = NULL;
    size_t len = 0;
    enum mt_status st = read_file(a, "data.csv", &csv, &len, err);

    memset(&p, 0, sizeof p);
    p.t0 = mtx_srv_now();
    if (st == MT_OK)
        st = mt_batch_open_csv_text("data", csv, len, SRV_BATCH_NOTES_MAX, &b,
                                    err);
    p.total = b ? mt_batch_count(b) : 0;
    if (st == MT_OK)
        st = check_all(j, a, b, &p, err);
    /* Scored when any note has an answer (failed notes are left out). */
    if (st == MT_OK && p.failed == p.total && p.total)
        st = fail_notes(&p, b, result, err);
    if (st == MT_OK)
        st = mt_batch_submission(b, 0, &sub, err);
    if (st == MT_OK)
        st = write_file(a, "submission.txt", sub, strlen(sub), err);
    if (st == MT_OK)
        st = batch_result(a, &p, csv, len, sub, result, err);
    if (st == MT_OK && p.failed)
        st = fail_notes(&p, b, result, err);
    mt_batch_free(b);
    mt_free(csv);
    mt_free(sub);
    return st;
}

/* ==== Starting and resuming ==== */

/* The settings a resume needs, in DIR/params.json; the model by its
 * --llm-choice name (null: the server's --llm). */
/* The value of the batch's setting i (mtx_srv_batch_settings). */
static double setting(const struct batch_arg *a, size_t i)
{
    return mt_param_get(
        mt_param_find(&mt_agent_param_table, mtx_srv_batch_settings[i], 1),
        &a->set);
}

static char *params_text(const struct batch_arg *a)
{
    json_t *o =
        json_pack("{s:s,s:s,s:b,s:b,s:[ffff],s:s?}", "strategy",
                  mt_strategy_str(a->strat), "name", a->name, "bleurt",
                  a->has_bleurt, "bertscore", a->has_bertscore, "settings",
                  setting(a, 0), setting(a, 1), setting(a, 2), setting(a, 3),
                  "model", mtx_srv_model_name(a->s, a->model));
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    char *out = t ? mt_strdup(t) : NULL;

    free(t);
    json_decref(o);
    return out;
}

/* The model params.json names: -1 when none; a name this server no longer
 * offers cannot resume. */
static enum mt_status params_model(struct batch_arg *a, json_t *v,
                                   struct mt_error *err)
{
    a->model = mtx_srv_model_find(a->s, json_string_value(v));
    if (a->model >= 0 || !json_is_string(v))
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "the batch ran on model '%s', which this server does not "
                   "offer (serve --llm-choice %s=SPEC)",
                   json_string_value(v), json_string_value(v));
}

static enum mt_status params_read(struct batch_arg *a, struct mt_error *err)
{
    char *txt = NULL;
    size_t n = 0, i;
    json_t *o, *set;
    const char *strat, *name;
    enum mt_status st = read_file(a, "params.json", &txt, &n, err);

    if (st != MT_OK)
        return st;
    o = json_loads(txt, 0, NULL);
    mt_free(txt);
    strat = json_string_value(json_object_get(o, "strategy"));
    name = json_string_value(json_object_get(o, "name"));
    set = json_object_get(o, "settings");
    if (!strat || !name || json_array_size(set) != SRV_BATCH_NSET ||
        mt_strategy_parse(strat, &a->strat) != MT_OK)
        st = mt_fail(err, MT_EPARSE, "%s/params.json: not a batch's settings",
                     a->dir);
    mt_agent_default_params(&a->set);
    for (i = 0; st == MT_OK && i < SRV_BATCH_NSET; i++)
        mt_param_set(
            mt_param_find(&mt_agent_param_table, mtx_srv_batch_settings[i], 1),
            &a->set, json_number_value(json_array_get(set, i)));
    if (st == MT_OK)
        st = params_model(a, json_object_get(o, "model"), err);
    if (st == MT_OK) {
        snprintf(a->name, sizeof a->name, "%s", name);
        a->has_bleurt = json_is_true(json_object_get(o, "bleurt"));
        a->has_bertscore = json_is_true(json_object_get(o, "bertscore"));
    }
    json_decref(o);
    return st;
}

/* Queues the batch: 'body' is its upload ({"data", "strategy", ...}) for
 * a server that claims the row without DIR (shared state). */
static enum mt_status queue(struct mt_server *s, struct batch_arg *a,
                            const char *body, struct mt_error *err)
{
    struct srv_job_spec spec = {"batch", batch_fn, a, mt_free};

    return mtx_srv_job_submit_body(s, a->run, &spec, body, err);
}

/* Checks the CSV before a run is made: its notes and, when it has gold
 * columns, the labels the score needs (an error names the line and
 * field). An unlabeled CSV (Text ID and Text only, as `mediqa` takes) is
 * checked without a score. */
static enum mt_status check_csv(const char *csv, struct mt_error *err)
{
    struct mt_eval_ref *ref = NULL;
    struct mt_batch *b = NULL;
    enum mt_status st = mt_batch_open_csv_text("data", csv, strlen(csv),
                                               SRV_BATCH_NOTES_MAX, &b, err);

    if (st == MT_OK && csv_labeled(csv, strlen(csv)))
        st = mt_eval_ref_load_mem("data", csv, strlen(csv), &ref, err);
    mt_eval_ref_free(ref);
    mt_batch_free(b);
    return st;
}

/* Saves a per-pair scores file as NAME and reads it back, so one that
 * does not parse fails here ("NAME: line N: ..."). */
static enum mt_status save_scores(struct batch_arg *a, const char *name,
                                  const char *text, struct mt_error *err)
{
    struct mt_eval_scores *sc = NULL;
    char *p = NULL;
    enum mt_status st = write_file(a, name, text, strlen(text), err);

    p = st == MT_OK ? file_path(a, name) : NULL;
    if (st == MT_OK)
        st = p ? mt_eval_scores_load(p, &sc, err)
               : mt_fail(err, MT_ENOMEM, "out of memory");
    mt_eval_scores_free(sc);
    mt_free(p);
    return st;
}

/* Saves the upload: the CSV, the optional BLEURT and BERTScore files, and
 * the settings a resume reads. */
static enum mt_status save_upload(struct batch_arg *a, const char *csv,
                                  const char *bleurt, const char *bert,
                                  struct mt_error *err)
{
    char *pt = params_text(a);
    enum mt_status st = make_dir(a, err);

    if (st == MT_OK)
        st = write_file(a, "data.csv", csv, strlen(csv), err);
    if (st == MT_OK && bleurt)
        st = save_scores(a, "bleurt.txt", bleurt, err);
    if (st == MT_OK && bert)
        st = save_scores(a, "bertscore.txt", bert, err);
    if (st == MT_OK)
        st = pt ? write_file(a, "params.json", pt, strlen(pt), err)
                : mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(pt);
    return st;
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
    a->strat = MT_STRATEGY_REACT_REFLEX;
    if (mtx_srv_text(*o, &mtx_srv_batch_text, &data, rs) != 0) {
        /* its 400 names "data" */
    } else if (strat && mt_strategy_parse(strat, &a->strat) != MT_OK)
        mtx_srv_error(rs, 400, "\"strategy\" is %s",
                      mt_strategy_list(names, sizeof names));
    else if (bad_scores(*o, "bleurt") || bad_scores(*o, "bertscore"))
        mtx_srv_error(rs, 400,
                      "\"%s\" must be the text of a per-pair score file",
                      bad_scores(*o, "bleurt") ? "bleurt" : "bertscore");
    else if (mtx_srv_check_settings(*o, &a->set, rs) == 0 &&
             mtx_srv_model_read(s, *o, &a->model, rs) == 0) {
        snprintf(a->name, sizeof a->name, "%s",
                 name && *name ? name : mt_strategy_str(a->strat));
        a->has_bleurt = json_is_string(json_object_get(*o, "bleurt"));
        a->has_bertscore = json_is_string(json_object_get(*o, "bertscore"));
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
    if (!mtx_srv_check_models(s, a->strat, a->model, rs) ||
        (st = check_csv(csv, &err)) != MT_OK ||
        !(id = create_run(s, rq, csv, &err))) {
        if (!rs->body)
            mtx_srv_fail(rs, st == MT_ELIMIT ? MT_EINVAL : err.status, &err);
        json_decref(o);
        mt_free(a);
        return;
    }
    a->run = id;
    batch_dir(s, id, a->dir, sizeof a->dir);
    st = save_upload(a, csv, json_string_value(json_object_get(o, "bleurt")),
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

/* DIR's upload as POST /v1/batch's body, for a resume queued on the
 * shared queue (any server may claim it, with or without DIR). */
static char *upload_text(const struct batch_arg *a, struct mt_error *err)
{
    static const char *const files[] = {"data.csv", "bleurt.txt",
                                        "bertscore.txt"};
    static const char *const keys[] = {"data", "bleurt", "bertscore"};
    const int has[] = {1, a->has_bleurt, a->has_bertscore};
    json_t *o = json_pack("{s:s,s:s}", "strategy", mt_strategy_str(a->strat),
                          "name", a->name);
    char *txt = NULL, *out = NULL;
    size_t i, n;

    for (i = 0; o && i < SRV_BATCH_NSET; i++)
        json_object_set_new(o, mtx_srv_batch_settings[i],
                            json_real(setting(a, i)));
    for (i = 0; o && i < 3; i++) {
        if (!has[i])
            continue;
        if (read_file(a, files[i], &txt, &n, err) != MT_OK)
            break;
        json_object_set_new(o, keys[i], json_stringn(txt, n));
        mt_free(txt);
    }
    if (o && i == 3 && (txt = json_dumps(o, JSON_COMPACT)) != NULL) {
        out = mt_strdup(txt);
        mtx_srv_json_text_free(txt);
    }
    json_decref(o);
    if (!out && err && err->status == MT_OK)
        mt_fail(err, MT_ENOMEM, "out of memory");
    return out;
}

/* A queued batch rebuilt where it is claimed (shared state): its DIR here
 * when this server took it or ran it before (the journal resumes), else
 * written from the upload in 'body' (its notes are checked from the
 * start: the journal of another server stays there). */
enum mt_status mtx_srv_batch_job(struct mt_server *s, int64_t run,
                                 const char *body, struct srv_job_spec *spec,
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
    batch_dir(s, run, a->dir, sizeof a->dir);
    rq.body = body;
    rq.body_len = strlen(body);
    st = params_read(a, &miss);
    if (st != MT_OK) {
        st = read_body(s, &rq, &rs, &o, a) == 0
                 ? save_upload(
                       a, json_string_value(json_object_get(o, "data")),
                       json_string_value(json_object_get(o, "bleurt")),
                       json_string_value(json_object_get(o, "bertscore")), err)
                 : mtx_srv_resp_failure(&rs, err);
        json_decref(o);
    }
    if (st == MT_OK && !mtx_srv_check_models(s, a->strat, a->model, &rs))
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
    batch_dir(s, id, a->dir, sizeof a->dir);
    if (params_read(a, &err) != MT_OK) {
        set_status(s, id, "failed", err.msg);
        mt_free(a);
        mtx_srv_fail(rs, MT_EIO, &err);
        return;
    }
    mtx_srv_audit(s, NULL, rq, "batch_resume",
                  json_pack("{s:I}", "run_id", (json_int_t)id));
    body = s->state_url ? upload_text(a, &err) : NULL;
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
