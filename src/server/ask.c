/* POST /v1/ask: a question answered with verified references (VerifAI) on
 * the job queue, recorded as a run whose result is the CLI's `ask --json`
 * object, the answer streamed as "token" events while it is generated,
 * then each claim as a "step" event once its verdicts are final. One
 * answerer, opened on first use, serves every question with that
 * question's settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "medtrust/qa.h"
#include "medtrust/core.h"
#include "medtrust/model.h"
#include "server/srv_int.h"

struct ask_arg {
    struct mt_server *s;
    struct mt_qa *qa; /* the server's, borrowed */
    struct srv_qa_key key;
    char *question;
};

/* ==== Models ==== */

/* The verifier is the LLM judge unless an NLI classifier is named. */
int mtx_srv_judge_is_llm(const struct mt_server *s)
{
    const char *nli = s->nli_spec ? s->nli_spec : getenv("MEDTRUST_NLI");

    return !nli || !*nli || strcmp(nli, "llm") == 0;
}

/* The role without a model ("QA" or "JUDGE"), or NULL when none lacks. */
static const char *missing_role(const struct mt_server *s)
{
    if (!mtx_srv_llm_spec(s, "qa"))
        return "QA";
    if (mtx_srv_judge_is_llm(s) && !mtx_srv_llm_spec(s, "judge"))
        return "JUDGE";
    return NULL;
}

int mtx_srv_ask_ready(const struct mt_server *s)
{
    return missing_role(s) == NULL;
}

/* ==== Steps: each verified claim becomes a "step" event ==== */

/* params.cancelled: whether the job on this worker thread was asked to
 * stop (a user's cancel, its timeout, or shutdown). */
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

/* params.on_claim: runs on the job's worker thread. */
static void on_claim(void *user, size_t index, size_t n, const char *claim)
{
    struct mt_server *s = user;
    struct mtx_job *j = mtx_jobs_self(s->jobs);
    json_t *o;

    if (!j)
        return;
    o = json_loads(claim, 0, NULL);
    if (o)
        mtx_job_emit(j, "step",
                     json_pack("{s:s,s:I,s:I,s:o}", "step", "claim", "index",
                               (json_int_t)index, "of", (json_int_t)n, "claim",
                               o));
    mtx_job_release(j);
}

/* params.on_answer_token: each piece of the answer as a "token" event
 * ({"text"}; {"reset":true} when a retried call drops what came), so the
 * page shows the answer while it is generated; a cancelled job stops the
 * generation. */
static int on_token(void *user, const char *piece, size_t len)
{
    struct mt_server *s = user;
    struct mtx_job *j = mtx_jobs_self(s->jobs);
    int stop;

    if (!j)
        return 0;
    mtx_job_emit(j, "token",
                 piece ? json_pack("{s:s%}", "text", piece, len)
                       : json_pack("{s:b}", "reset", 1));
    stop = mtx_job_canceled(j);
    mtx_job_release(j);
    return stop;
}

/* ==== The answerer ==== */

/* The server's one answerer, opened on first use; each question brings its
 * own settings (mt_qa_ask_params), so one serves every filter. */
enum mt_status mtx_srv_qa_get(struct mt_server *s, int model,
                              struct mt_qa **out, struct mt_error *err)
{
    struct mt_qa **qa = model >= 0 ? &s->qa_choice[model] : &s->qa;
    struct mt_qa_params p;
    enum mt_status st = MT_OK;

    pthread_mutex_lock(&s->qa_mu);
    if (!*qa) {
        mt_qa_default_params(&p);
        p.db_dir = s->db_dir;
        p.retriever = s->ret;
        p.llm_spec = mtx_srv_model_spec(s, model);
        p.nli_spec = s->nli_spec;
        p.answer_optional = 1; /* POST /v1/verify needs no answer model;
                                  /v1/ask refuses first without one */
        st = mt_qa_open(&p, qa, err);
    }
    *out = *qa;
    pthread_mutex_unlock(&s->qa_mu);
    return st;
}

void mtx_srv_qa_close(struct mt_server *s)
{
    size_t i;

    mt_qa_close(s->qa);
    s->qa = NULL;
    for (i = 0; i < s->nchoices; i++) {
        mt_qa_close(s->qa_choice[i]);
        s->qa_choice[i] = NULL;
    }
}

/* ==== The job ==== */

static void arg_free(void *p)
{
    struct ask_arg *a = p;

    if (!a)
        return;
    mt_free(a->question);
    mt_free(a);
}

static enum mt_status ask_fn(struct mtx_job *j, void *arg, json_t **result,
                             struct mt_error *err)
{
    struct ask_arg *a = arg;
    struct mt_qa_ask_params ap;
    struct mt_qa_result *r = NULL;
    enum mt_status st;
    char *txt;

    mt_qa_ask_default_params(a->qa, &ap);
    ap.k = a->key.k;
    ap.w_lex = a->key.w_lex;
    ap.w_sem = a->key.w_sem;
    ap.source = a->key.source[0] ? a->key.source : NULL;
    ap.year_from = a->key.year_from;
    ap.year_to = a->key.year_to;
    ap.author = a->key.meta.author[0] ? a->key.meta.author : NULL;
    ap.journal = a->key.meta.journal[0] ? a->key.meta.journal : NULL;
    ap.pub_type = a->key.meta.pub_type[0] ? a->key.meta.pub_type : NULL;
    ap.search_mode = a->key.mode;
    ap.on_claim = on_claim;
    ap.on_claim_user = a->s;
    ap.cancelled = cancelled;
    ap.cancelled_user = a->s;
    ap.on_answer_token = on_token;
    ap.on_answer_token_user = a->s;
    st = mt_qa_ask_with(a->qa, a->question, &ap, &r, err);
    txt = st == MT_OK ? mt_qa_result_json(r) : NULL;

    (void)j; /* a cancel reaches the answerer through params.cancelled */
    if (txt)
        *result = json_loads(txt, 0, NULL);
    if (st == MT_OK && !*result)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(txt);
    mt_qa_result_free(r);
    return st;
}

/* ==== The route ==== */

/* The bounded members of POST /v1/ask are mt_qa_param_table's that have
 * a request field ("k", "w_lex", "w_sem", "year_from", "year_to": bounds,
 * the server's caps and the answerer's defaults, VerifAI's 10 documents
 * and 0.7/0.3 fusion); a year of 0 (absent) means an open end. */

const struct srv_text mtx_srv_ask_text = {
    "question", 1, 1, SRV_QUESTION_MAX, 1, "the question's text"};

int mtx_srv_weights_years(json_t *o, double *w, struct srv_resp *rs)
{
    static const char *const names[4] = {"w_lex", "w_sem", "year_from",
                                         "year_to"};
    const struct mt_param_table *t = &mt_qa_param_table;
    struct mt_qa_params q;
    size_t i;

    mt_qa_default_params(&q);
    for (i = 0; i < 4; i++) {
        if (mtx_srv_param_read(o, t, names[i], &q, rs))
            return -1;
        w[i] = mt_param_get(mt_param_find(t, names[i], 1), &q);
    }
    if (w[0] + w[1] <= 0) {
        mtx_srv_error(rs, 400, "\"w_lex\" and \"w_sem\" cannot both be 0");
        return -1;
    }
    if (w[2] && w[3] && w[2] > w[3]) {
        mtx_srv_error(rs, 400, "\"year_from\" is after \"year_to\"");
        return -1;
    }
    return 0;
}

/* Reads "k", "w_lex", "w_sem", "source", "year_from" and "year_to". */
static int read_key(json_t *o, struct srv_qa_key *k, struct srv_resp *rs)
{
    json_t *src = json_object_get(o, "source");
    struct mt_qa_params q;
    double w[4];

    mt_qa_default_params(&q);
    if (mtx_srv_param_read(o, &mt_qa_param_table, "k", &q, rs) ||
        mtx_srv_weights_years(o, w, rs))
        return -1;
    if (src && !json_is_null(src) &&
        (!json_is_string(src) || json_string_length(src) >= SRV_SOURCE_MAX)) {
        mtx_srv_error(rs, 400,
                      "\"source\" must be a source name of at most "
                      "%d bytes",
                      SRV_SOURCE_MAX - 1);
        return -1;
    }
    memset(k, 0, sizeof *k);
    k->k = q.k;
    k->w_lex = (float)w[0];
    k->w_sem = (float)w[1];
    k->year_from = (int32_t)w[2];
    k->year_to = (int32_t)w[3];
    snprintf(k->source, sizeof k->source, "%s",
             json_string_value(src) ? json_string_value(src) : "");
    return 0;
}

/* Reads {"question","k","w_lex","w_sem","source","year_from","year_to",
 * "author","journal","publication_type","search_mode"}. */
static struct ask_arg *read_body(struct mt_server *s, const struct srv_req *rq,
                                 struct srv_resp *rs)
{
    json_t *o = NULL;
    const char *q;
    struct srv_qa_key key;
    struct ask_arg *a = NULL;

    if (mtx_srv_body_json(rq, rs, &o) != 0)
        return NULL;
    if (mtx_srv_text(o, &mtx_srv_ask_text, &q, rs) == 0 &&
        read_key(o, &key, rs) == 0 &&
        mtx_srv_meta_read(o, &key.meta, rs) == 0 &&
        mtx_srv_mode_read(s, o, &key.mode, rs) == 0 &&
        mtx_srv_model_read(s, o, &key.model, rs) == 0 &&
        (a = mt_calloc(1, sizeof *a)) != NULL) {
        a->s = s;
        a->key = key;
        a->question = mt_strdup(q);
        if (!a->question) {
            arg_free(a);
            a = NULL;
        }
    }
    if (!a && rs->status != 400)
        mtx_srv_error(rs, 500, "out of memory");
    json_decref(o);
    return a;
}

/* 503 with what to set when a role has no model; never a fake answer. A
 * front end that runs no jobs leaves that to the node that claims it. */
static int llm_configured(struct mt_server *s, struct srv_resp *rs)
{
    const char *role = missing_role(s);

    if (!role || !mtx_srv_runs_jobs(s))
        return 1;
    mtx_srv_error(rs, 503,
                  "no language model is configured, so questions cannot be "
                  "answered. Start the server with --llm "
                  "openai:BASE_URL#MODEL (an OpenAI-compatible endpoint; key "
                  "in MEDTRUST_API_KEY) or --llm gguf:PATH (a local GGUF "
                  "model), or set MEDTRUST_LLM (MEDTRUST_LLM_%s for this "
                  "role alone). Search works without a model.",
                  role);
    return 0;
}

/* A "source" filter must name a corpus of the store: 400 up front, not a
 * queued run that fails. Returns 0 after answering 400. */
static int source_known(struct srv_lease *l, const struct ask_arg *a,
                        struct srv_resp *rs)
{
    struct mt_error err = {MT_OK, ""};
    int64_t sid;

    if (!a->key.source[0] || mt_store_source_find(l->store, a->key.source, &sid,
                                                  &err) != MT_ENOTFOUND)
        return 1;
    mtx_srv_error(rs, 400,
                  "no source named '%s' in this store; GET /v1/sources lists "
                  "them",
                  a->key.source);
    return 0;
}

/* The run's audit record: its id, the question's hash, size and k. */
static json_t *audit_of(int64_t id, const char *h, void *arg)
{
    const struct ask_arg *a = arg;

    return json_pack("{s:I,s:s,s:I,s:i}", "run_id", (json_int_t)id,
                     "question_sha256", h, "bytes",
                     (json_int_t)strlen(a->question), "k", (int)a->key.k);
}

static int admit(struct srv_lease *l, void *arg, struct srv_resp *rs)
{
    return source_known(l, arg, rs);
}

/* Records the run, audits it by the question's hash and queues the job;
 * returns the run id or 0 (the argument is taken either way). */
static int64_t submit(struct mt_server *s, struct srv_req *rq,
                      struct srv_resp *rs, struct ask_arg *a)
{
    struct mtx_job_spec spec = {"ask", ask_fn, a, arg_free};
    struct srv_run_req r = {a->question, strlen(a->question), audit_of, admit};

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
    (void)arg;
    return llm_configured(s, rs);
}

static enum mt_status rebuild_bind(struct mt_server *s, void *arg,
                                   struct mt_error *err)
{
    struct ask_arg *a = arg;

    return mtx_srv_qa_get(s, a->key.model, &a->qa, err);
}

/* A queued question rebuilt where it is claimed (shared state): the body
 * as the route read it, this server's answerer for its model. */
enum mt_status mtx_srv_ask_job(struct mt_server *s, int64_t run,
                               const char *body, struct mtx_job_spec *spec,
                               struct mt_error *err)
{
    static const struct srv_job_rebuild r = {
        "ask", ask_fn, arg_free, rebuild_read, rebuild_ready, rebuild_bind};

    (void)run;
    return mtx_srv_job_rebuild(s, body, &r, spec, err);
}

void mtx_srv_ask(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                 int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct ask_arg *a = read_body(s, rq, rs);
    char ev[64];

    if (!a)
        return;
    if (!llm_configured(s, rs)) {
        arg_free(a);
        return;
    }
    if (mtx_srv_runs_jobs(s) &&
        mtx_srv_qa_get(s, a->key.model, &a->qa, &err) != MT_OK) {
        arg_free(a);
        mtx_srv_error(rs, 503, "the question answerer could not start: %s",
                      err.msg);
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
