/* POST /v1/verify: any medical text verified sentence by sentence
 * (`medtrust verify`, docs/verify.md) on the job queue, recorded as a run
 * whose result is the CLI's `verify --json` object. Its events: a "step"
 * {"step":"sentences"} with every sentence and span once the text is
 * split, a "step" {"step":"claim"} as each claim's verdict is final and a
 * "step" {"step":"sentence"} as each sentence's status is, so the Verify
 * page colours the text claim by claim. It runs on the server's answerer
 * (ask.c), so it shares its retriever and verifier. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "medtrust/verify.h"
#include "server/srv_int.h"

struct verify_arg {
    struct mt_server *s;
    struct mt_qa *qa; /* the server's, borrowed */
    struct srv_qa_key key;
    double support_min, contradict_min;
    int decompose;
    char *text;
};

int mtx_srv_verify_ready(const struct mt_server *s)
{
    return !mtx_srv_judge_is_llm(s) || mtx_srv_llm_spec(s, "judge") != NULL;
}

/* ==== Events ==== */

static int cancelled(void *user)
{
    struct mt_server *s = user;
    struct mtx_job *j = mtx_jobs_self(s->jobs);
    int c;

    if (!j)
        return 0;
    c = mtx_job_canceled(j);
    mtx_job_release(j);
    return c;
}

/* A "step" event {"step":STEP, MEMBERS..., KEY: the JSON text 'js'}. */
static void step(void *user, json_t *o, const char *key, const char *js)
{
    struct mt_server *s = user;
    struct mtx_job *j = mtx_jobs_self(s->jobs);
    json_t *v = json_loads(js, 0, NULL);

    if (j && o && v && json_object_set_new(o, key, v) == 0)
        mtx_job_emit(j, "step", o);
    else {
        json_decref(o);
        json_decref(v);
    }
    if (j)
        mtx_job_release(j);
}

static void on_split(void *user, size_t n, const char *js)
{
    step(user, json_pack("{s:s,s:I}", "step", "sentences", "of", (json_int_t)n),
         "sentences", js);
}

static void on_claim(void *user, size_t si, size_t ci, size_t n, const char *js)
{
    step(user,
         json_pack("{s:s,s:I,s:I,s:I}", "step", "claim", "sentence",
                   (json_int_t)si, "index", (json_int_t)ci, "of",
                   (json_int_t)n),
         "claim", js);
}

static void on_sentence(void *user, size_t i, size_t n, const char *js)
{
    step(user,
         json_pack("{s:s,s:I,s:I}", "step", "sentence", "index", (json_int_t)i,
                   "of", (json_int_t)n),
         "sentence", js);
}

/* ==== The job ==== */

static void arg_free(void *p)
{
    struct verify_arg *a = p;

    if (!a)
        return;
    mt_free(a->text);
    mt_free(a);
}

static void job_params(const struct verify_arg *a, struct mt_verify_params *vp)
{
    mt_verify_default_params(a->qa, vp);
    vp->k = a->key.k;
    vp->w_lex = a->key.w_lex;
    vp->w_sem = a->key.w_sem;
    vp->source = a->key.source[0] ? a->key.source : NULL;
    vp->year_from = a->key.year_from;
    vp->year_to = a->key.year_to;
    vp->author = a->key.meta.author[0] ? a->key.meta.author : NULL;
    vp->journal = a->key.meta.journal[0] ? a->key.meta.journal : NULL;
    vp->pub_type = a->key.meta.pub_type[0] ? a->key.meta.pub_type : NULL;
    vp->search_mode = a->key.mode;
    vp->support_min = (float)a->support_min;
    vp->contradict_min = (float)a->contradict_min;
    vp->decompose = a->decompose;
    vp->max_text_bytes = SRV_TEXT_MAX;
    vp->on_claim = on_claim;
    vp->on_split = on_split;
    vp->on_sentence = on_sentence;
    vp->on_claim_user = a->s;
    vp->cancelled = cancelled;
    vp->cancelled_user = a->s;
}

static enum mt_status verify_fn(struct mtx_job *j, void *arg, json_t **result,
                                struct mt_error *err)
{
    struct verify_arg *a = arg;
    struct mt_verify_params vp;
    struct mt_verify_result *r = NULL;
    enum mt_status st;
    char *txt;

    (void)j; /* a cancel reaches the verifier through params.cancelled */
    job_params(a, &vp);
    st = mt_verify_text(a->qa, a->text, &vp, &r, err);
    txt = st == MT_OK ? mt_verify_result_json(r) : NULL;
    if (txt)
        *result = json_loads(txt, 0, NULL);
    if (st == MT_OK && !*result)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(txt);
    mt_verify_result_free(r);
    return st;
}

/* ==== The route ==== */

/* The text of POST /v1/verify (docs/verify.md); its bounded members are
 * mt_verify_param_table's that have a request field ("k", the documents
 * searched per claim, and the thresholds). */
const struct srv_text mtx_srv_verify_text = {
    "text", 1, 1, SRV_TEXT_MAX, 1, "the text to verify"};

/* "k", the weights and years (as /v1/ask's), "source", the thresholds. */
static int read_settings(json_t *o, struct verify_arg *a, struct srv_resp *rs)
{
    json_t *src = json_object_get(o, "source");
    struct mt_verify_params vp;
    double w[4];

    mt_verify_default_params(NULL, &vp);
    if (mtx_srv_params_read(o, &mt_verify_param_table, &vp, rs) ||
        mtx_srv_weights_years(o, w, rs))
        return -1;
    if (src && !json_is_null(src) &&
        (!json_is_string(src) || json_string_length(src) >= SRV_SOURCE_MAX)) {
        mtx_srv_error(rs, 400,
                      "\"source\" must be a source name of at most %d bytes",
                      SRV_SOURCE_MAX - 1);
        return -1;
    }
    a->key.k = vp.k;
    a->support_min = vp.support_min;
    a->contradict_min = vp.contradict_min;
    a->key.w_lex = (float)w[0];
    a->key.w_sem = (float)w[1];
    a->key.year_from = (int32_t)w[2];
    a->key.year_to = (int32_t)w[3];
    snprintf(a->key.source, sizeof a->key.source, "%s",
             json_string_value(src) ? json_string_value(src) : "");
    a->decompose = json_is_true(json_object_get(o, "decompose"));
    return 0;
}

/* Reads {"text","k","w_lex","w_sem","source","year_from","year_to",
 * "author","journal","publication_type","search_mode","model",
 * "support_min","contradict_min","decompose"}. */
static struct verify_arg *
read_body(struct mt_server *s, const struct srv_req *rq, struct srv_resp *rs)
{
    struct verify_arg *a = mt_calloc(1, sizeof *a);
    json_t *o = NULL;
    const char *t;
    int ok = 0;

    if (!a) {
        mtx_srv_error(rs, 500, "out of memory");
        return NULL;
    }
    if (mtx_srv_body_json(rq, rs, &o) != 0) {
        mt_free(a);
        return NULL;
    }
    if (mtx_srv_text(o, &mtx_srv_verify_text, &t, rs) == 0 &&
        read_settings(o, a, rs) == 0 &&
        mtx_srv_meta_read(o, &a->key.meta, rs) == 0 &&
        mtx_srv_mode_read(s, o, &a->key.mode, rs) == 0 &&
        mtx_srv_model_read(s, o, &a->key.model, rs) == 0)
        ok = (a->text = mt_strdup(t)) != NULL;
    if (!ok && rs->status != 400)
        mtx_srv_error(rs, 500, "out of memory");
    json_decref(o);
    a->s = s;
    if (!ok) {
        arg_free(a);
        return NULL;
    }
    return a;
}

/* 503 with what to set when the verifier has no model. */
static int verifier_configured(struct mt_server *s, const struct verify_arg *a,
                               struct srv_resp *rs)
{
    if ((mtx_srv_verify_ready(s) &&
         (!a->decompose || mtx_srv_llm_spec(s, "qa") != NULL)) ||
        !mtx_srv_runs_jobs(s))
        return 1;
    mtx_srv_error(rs, 503,
                  "no verifier is configured, so texts cannot be verified. "
                  "Start the server with --nli gguf:PATH (an NLI classifier) "
                  "or --llm openai:BASE_URL#MODEL / gguf:PATH (the LLM judge; "
                  "MEDTRUST_LLM_JUDGE for this role alone)%s.",
                  a->decompose ? "; \"decompose\" needs --llm" : "");
    return 0;
}

/* The run's audit record: its id, the text's hash, size and k. */
static json_t *audit_of(int64_t id, const char *h, void *arg)
{
    const struct verify_arg *a = arg;

    return json_pack("{s:I,s:s,s:I,s:i}", "run_id", (json_int_t)id,
                     "text_sha256", h, "bytes", (json_int_t)strlen(a->text),
                     "k", (int)a->key.k);
}

/* Records the run, audits it by the text's hash and queues the job;
 * returns the run id or 0 (the argument is taken either way). */
static int64_t submit(struct mt_server *s, struct srv_req *rq,
                      struct srv_resp *rs, struct verify_arg *a)
{
    struct mtx_job_spec spec = {"verify", verify_fn, a, arg_free};
    struct srv_run_req r = {a->text, strlen(a->text), audit_of, NULL};

    return mtx_srv_run_submit(s, rq, rs, &spec, &r);
}

/* The rebuilder's callbacks (mtx_srv_job_rebuild). */
static void *rebuild_read(struct mt_server *s, const struct srv_req *rq,
                          struct srv_resp *rs)
{
    return read_body(s, rq, rs);
}

static int rebuild_ready(struct mt_server *s, void *arg, struct srv_resp *rs)
{
    return verifier_configured(s, arg, rs);
}

static enum mt_status rebuild_bind(struct mt_server *s, void *arg,
                                   struct mt_error *err)
{
    struct verify_arg *a = arg;

    return mtx_srv_qa_get(s, a->key.model, &a->qa, err);
}

/* A queued verification rebuilt where it is claimed (shared state). */
enum mt_status mtx_srv_verify_job(struct mt_server *s, int64_t run,
                                  const char *body, struct mtx_job_spec *spec,
                                  struct mt_error *err)
{
    static const struct srv_job_rebuild r = {"verify",      verify_fn,
                                             arg_free,      rebuild_read,
                                             rebuild_ready, rebuild_bind};

    (void)run;
    return mtx_srv_job_rebuild(s, body, &r, spec, err);
}

void mtx_srv_verify(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct verify_arg *a = read_body(s, rq, rs);
    char ev[64];

    if (!a)
        return;
    if (!verifier_configured(s, a, rs)) {
        arg_free(a);
        return;
    }
    if (mtx_srv_runs_jobs(s) &&
        mtx_srv_qa_get(s, a->key.model, &a->qa, &err) != MT_OK) {
        arg_free(a);
        mtx_srv_error(rs, 503, "the verifier could not start: %s", err.msg);
        return;
    }
    id = submit(s, rq, rs, a);
    if (!id)
        return;
    snprintf(ev, sizeof ev, "/v1/runs/%lld/events", (long long)id);
    mtx_srv_json(rs, 202,
                 json_pack("{s:I,s:s,s:s}", "run_id", (json_int_t)id, "status",
                           "queued", "events", ev));
}
