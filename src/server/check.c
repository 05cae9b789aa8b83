/* POST /v1/check: a clinical note checked on the job queue (the model
 * never runs on a network thread), recorded as a run whose result is the
 * CLI's `check --json` object, its trace streamed step by step as
 * Server-Sent Events. One checker per model is opened on first use; each
 * job's strategy, settings and callbacks are its own call's
 * (mt_agent_check_with). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/checkers.h"
#include "batch/correction.h"
#include "batch/folder.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/qa.h"
#include "text/utf8.h"
#include "medtrust/model.h"
#include "medtrust/verify.h"
#include "server/srv_int.h"

/* The bounded members of POST /v1/check are mt_agent_param_table's that
 * have a request field (medtrust/params.h: bounds, the server's caps and
 * the defaults of mt_agent_default_params); a batch takes only the
 * paper's settings (batch/folder.h: mtx_bfolder_settings). */

/* GET /v1/limits' check.fields: the table's members, then Ask's years
 * (mt_qa_param_table's). */
const struct srv_text mtx_srv_check_text = {"note",       1, 1,
                                            SRV_NOTE_MAX, 0, "the note's text"};

json_t *mtx_srv_check_fields_json(void)
{
    static const char *const years[] = {"year_from", "year_to"};
    json_t *o = mtx_srv_params_json(&mt_agent_param_table);
    json_t *ask = mtx_srv_params_json(&mt_qa_param_table);
    size_t i;

    for (i = 0; o && i < 2; i++) {
        json_t *y = json_deep_copy(json_object_get(ask, years[i]));

        /* `check` has no --year-from: the CLI names belong to `ask` */
        json_object_del(y, "option");
        json_object_del(y, "cli_max");
        json_object_set_new(o, years[i], y);
    }
    json_decref(ask);
    return o;
}

struct check_arg {
    struct mt_server *s;
    struct mt_agent *agent; /* the server's model's, held until arg_free */
    struct mt_agent_check_params cp; /* this job's settings */
    struct mt_agent_params set;      /* mt_agent_param_table's request
                                        members (the rest unused) */
    int32_t year_from, year_to;      /* 0: open */
    char *note;
    size_t len;
    char *sentences; /* MEDEC Sentences field, or NULL */
    size_t slen;
    char *sources[MT_AGENT_MAX_SOURCES]; /* "source" filter, or none */
    size_t n_sources;
    int search_mode; /* "search_mode", MT_AGENT_SEARCH_AUTO when absent */
    int model;       /* "model": an --llm-choice index, -1 = --llm */
    enum mt_strategy strat;       /* named in the run's audit record */
    struct srv_meta meta;         /* "author", "journal", "publication_type" */
    struct mt_meta_cond conds[4]; /* meta's that are set, and the years */
    size_t nconds;
};

const char *mtx_srv_llm_spec(const struct mt_server *s, const char *role)
{
    return mt_llm_role_spec(role, s->llm_spec);
}

/* ==== Steps: the checker's trace records become "step" events ==== */

/* cp.on_step: the record (a search's with its hits and their links, as
 * the checker keeps them) is the job's next "step" event as it is. */
static void on_step(void *user, const char *note_id, const char *step_json)
{
    (void)note_id;
    mtx_job_emit_text(user, "step", step_json);
}

/* cp.cancelled: whether the check's job was asked to stop (a user's
 * cancel, its timeout, or shutdown). The checker may call it from a
 * second thread (guards' pairs); the job outlives the call. */
static int cancelled(void *user, const char *note_id)
{
    (void)note_id;
    return mtx_job_canceled(user);
}

/* ==== Checkers ==== */

/* check's verify_correction hook (issue 32): the correction and the
 * original judged by the server's answerer (mt_verify_correction). */
/* With a verifier configured (serve --nli, or MEDTRUST_NLI), every
 * correction is verified against the run's documents, as `check
 * --verify-correction` does; the result and trace carry its evidence. */
static void verify_corrections(struct mt_server *s, int model,
                               struct mt_agent_params *p)
{
    const char *nli = s->nli_spec ? s->nli_spec : getenv("MEDTRUST_NLI");
    struct mt_error e = {MT_OK, ""};
    struct mt_qa *qa = NULL;

    if (!nli || !*nli || strcmp(nli, "llm") == 0)
        return;
    if (mtx_srv_qa_get(s, model, &qa, &e) != MT_OK) {
        mt_log(MT_LOG_WARN,
               "server: corrections are not verified: the verifier could "
               "not start: %s",
               e.msg);
        return;
    }
    mtx_correction_attach(p, qa);
}

/* Opens the checker of model 'model' for strategy st first: the server's
 * retriever searches for react-reflex, auto search mode (hybrid once the
 * index has vectors). */
static enum mt_status agent_open(struct mt_server *s, enum mt_strategy st,
                                 int model, struct mt_agent **out,
                                 struct mt_error *err)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.strategy = st;
    p.llm_spec = mtx_srv_model_spec(s, model); /* MEDTRUST_LLM_<ROLE> wins */
    p.db_dir = s->db_dir;                      /* react-reflex's search() */
    p.retriever = s->ret;
    p.search_mode = MT_AGENT_SEARCH_AUTO;
    verify_corrections(s, model, &p);
    return mt_agent_open(&p, out, err);
}

/* A strategy that searches needs the server's index: without one it
 * cannot start (as mt_agent_open refuses it without a corpus). */
static enum mt_status need_index(struct mt_server *s, enum mt_strategy st,
                                 struct mt_error *err)
{
    if (!mt_strategy_get(st)->needs_retriever ||
        mt_retriever_check(s->ret, NULL) == MT_OK)
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "%s searches a medical corpus: give --db "
                   "DIR (a store built with 'medtrust index'), or "
                   "--no-retrieval to run MedReAct without one",
                   mt_strategy_str(st));
}

/* The cache's open function: key is the model's index + 1, arg the
 * strategy asked for first. */
static enum mt_status checker_open(void *user, const char *key, void *arg,
                                   struct mt_agent **out, struct mt_error *err)
{
    return agent_open(user, *(const enum mt_strategy *)arg, atoi(key) - 1, out,
                      err);
}

enum mt_status mtx_srv_checker(struct mt_server *s, enum mt_strategy st,
                               int model, struct mt_agent **out,
                               struct mt_error *err)
{
    char key[16];
    enum mt_status rc = need_index(s, st, err);

    *out = NULL;
    if (rc != MT_OK)
        return rc;
    pthread_mutex_lock(&s->agent_mu);
    if (!s->checkers) /* one checker a model: nothing is ever evicted */
        rc = mtx_checkers_new(1 + SRV_MODELS_MAX, checker_open, s, &s->checkers,
                              err);
    pthread_mutex_unlock(&s->agent_mu);
    snprintf(key, sizeof key, "%d", model + 1);
    if (rc == MT_OK)
        rc = mtx_checkers_get(s->checkers, key, &st, out, err);
    if (rc == MT_OK)
        rc = mt_agent_prepare(*out, st, err);
    if (rc != MT_OK) {
        mtx_checkers_put(s->checkers, *out);
        *out = NULL;
    }
    return rc;
}

void mtx_srv_checker_put(struct mt_server *s, struct mt_agent *a)
{
    mtx_checkers_put(s->checkers, a);
}

void mtx_srv_check_params(const struct mt_agent *a, enum mt_strategy st,
                          const struct mt_agent_params *set, int mode,
                          struct mt_agent_check_params *cp)
{
    struct mt_agent_params p;

    mt_agent_check_default_params(a, cp);
    mt_agent_default_params(&p);
    if (set) /* the request's members of mt_agent_param_table */
        mt_param_copy_fields(&mt_agent_param_table, &p, set);
    cp->strategy = st;
    cp->search_mode = mode; /* auto: hybrid once the index has vectors */
    cp->max_steps = p.max_steps;
    cp->max_rounds = p.max_rounds;
    cp->accept_mean = p.accept_mean;
    cp->accept_min = p.accept_min;
    cp->retrieve_k = p.retrieve_k;
    cp->rerank_k = p.rerank_k;
    cp->w_lex = p.w_lex;
    cp->w_sem = p.w_sem;
    cp->passages_last = p.passages_last;
    cp->allow_fallbacks = p.allow_fallbacks;
    cp->on_step = NULL;
    cp->cancelled = NULL;
}

void mtx_srv_agents_close(struct mt_server *s)
{
    mtx_checkers_free(s->checkers);
    s->checkers = NULL;
}

/* ==== The job ==== */

static void arg_free(void *p)
{
    struct check_arg *a = p;

    if (!a)
        return;
    if (a->agent)
        mtx_srv_checker_put(a->s, a->agent);
    mt_free(a->note);
    mt_free(a->sentences);
    while (a->n_sources > 0)
        mt_free(a->sources[--a->n_sources]);
    mt_free(a);
}

static enum mt_status check_fn(struct mtx_job *j, void *arg, json_t **result,
                               struct mt_error *err)
{
    struct check_arg *a = arg;
    struct mt_note n = {NULL,         a->note,  a->len,
                        a->sentences, a->slen,  (const char *const *)a->sources,
                        a->n_sources, a->conds, a->nconds};
    struct mt_check_result r;
    enum mt_status st;
    char *txt;

    a->cp.on_step = on_step; /* steps stream to this job, which polls */
    a->cp.on_step_user = j;  /* cancel before each model call */
    a->cp.cancelled = cancelled;
    a->cp.cancelled_user = j;
    st = mt_agent_check_with(a->agent, &n, &a->cp, &r, err);
    txt = st == MT_OK ? mt_check_result_json(&r, 1) : NULL;
    if (st == MT_OK && txt)
        *result = json_loads(txt, 0, NULL);
    if (st == MT_OK && !*result)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(txt);
    mt_check_result_free(&r);
    return st;
}

/* ==== The route ==== */

/* Reads "source" (a name or an array of names: their union) into a;
 * returns -1 after answering 400. */
static int read_sources(json_t *o, struct check_arg *a, struct srv_resp *rs)
{
    json_t *src = json_object_get(o, "source");
    json_t *one = json_is_array(src) ? NULL : src;
    size_t n = json_is_array(src) ? json_array_size(src) : (src ? 1 : 0);
    size_t i;

    if (json_is_null(src))
        n = 0;
    if (n > MT_AGENT_MAX_SOURCES) {
        mtx_srv_error(rs, 400, "\"source\" names at most %d sources",
                      MT_AGENT_MAX_SOURCES);
        return -1;
    }
    for (i = 0; i < n; i++) {
        json_t *v = one ? one : json_array_get(src, i);

        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) >= SRV_SOURCE_MAX) {
            mtx_srv_error(rs, 400,
                          "\"source\" must be a source name (or an array of "
                          "them) of at most %d bytes",
                          SRV_SOURCE_MAX - 1);
            return -1;
        }
        a->sources[a->n_sources] = mt_strdup(json_string_value(v));
        if (!a->sources[a->n_sources++])
            return -1;
    }
    return 0;
}

int mtx_srv_check_settings(json_t *o, struct mt_agent_params *set,
                           struct srv_resp *rs)
{
    size_t i;

    mt_agent_default_params(set);
    for (i = 0; i < MTX_BFOLDER_NSET; i++)
        if (mtx_srv_param_read(o, &mt_agent_param_table,
                               mtx_bfolder_settings[i], set, rs) != 0)
            return -1;
    return 0;
}

/* Reads "search_mode" (dense, hybrid or bm25; absent or null: hybrid
 * when the index has vectors, else bm25, as `check --search-mode`);
 * returns -1 after answering 400. */
static int read_mode(json_t *o, struct check_arg *a, struct srv_resp *rs)
{
    json_t *m = json_object_get(o, "search_mode");
    enum mt_search_mode mode;

    a->search_mode = MT_AGENT_SEARCH_AUTO;
    if (!m || json_is_null(m))
        return 0;
    if (mt_search_mode_parse(json_string_value(m), &mode) != MT_OK) {
        mtx_srv_error(rs, 400,
                      "\"search_mode\" is dense, hybrid or bm25 (or absent: "
                      "hybrid when the index has vectors, else bm25)");
        return -1;
    }
    a->search_mode = (int)mode;
    return 0;
}

/* Reads the table's search members ("retrieve_k", "rerank_k", "w_lex",
 * "w_sem"), then "year_from" and "year_to" (with Ask's checks of both
 * weights and of the years) into a; returns -1 after answering 400. */
static int read_search(json_t *o, struct check_arg *a, struct srv_resp *rs)
{
    double w[4];

    if (mtx_srv_params_read(o, &mt_agent_param_table, &a->set, rs) ||
        mtx_srv_weights_years(o, w, rs))
        return -1;
    if (a->set.rerank_k > a->set.retrieve_k) {
        mtx_srv_error(rs, 400,
                      "\"rerank_k\" (%g) is more than "
                      "\"retrieve_k\" (%g)",
                      (double)a->set.rerank_k, (double)a->set.retrieve_k);
        return -1;
    }
    a->year_from = (int32_t)w[2];
    a->year_to = (int32_t)w[3];
    return 0;
}

/* The metadata conditions of the search: meta's, then the years as
 * Ask's (qa_retrieve.c), an open end as the field's bound so the trace
 * records a finite range. */
static void search_conds(struct check_arg *a)
{
    struct mt_meta_cond *c;

    a->nconds = mtx_srv_meta_conds(&a->meta, a->conds);
    if (!a->year_from && !a->year_to)
        return;
    c = &a->conds[a->nconds++];
    memset(c, 0, sizeof *c);
    c->key = "year";
    c->min = a->year_from
                 ? a->year_from
                 : mt_param_find(&mt_qa_param_table, "year_from", 1)->lo;
    c->max = a->year_to ? a->year_to
                        : mt_param_find(&mt_qa_param_table, "year_to", 1)->hi;
}

/* Reads {"note","strategy","sentences","source","search_mode","author",
 * "journal","publication_type","model"}, the settings of
 * mtx_bfolder_settings and read_search's into a new job argument. */
static struct check_arg *read_body(struct mt_server *s,
                                   const struct srv_req *rq,
                                   struct srv_resp *rs, enum mt_strategy *st)
{
    json_t *o = NULL;
    const char *note, *strat, *sents;
    struct check_arg *a = NULL;
    struct mt_agent_params set;
    char names[128];

    if (mtx_srv_body_json(rq, rs, &o) != 0)
        return NULL;
    strat = json_string_value(json_object_get(o, "strategy"));
    sents = json_string_value(json_object_get(o, "sentences"));
    *st = MT_STRATEGY_REACT_REFLEX;
    if (mtx_srv_text(o, &mtx_srv_check_text, &note, rs) != 0) {
        /* its 400 names "note" */
    } else if (strat && mt_strategy_parse(strat, st) != MT_OK)
        mtx_srv_error(rs, 400, "\"strategy\" is %s",
                      mt_strategy_list(names, sizeof names));
    else if (mtx_srv_check_settings(o, &set, rs) == 0 &&
             (a = mt_calloc(1, sizeof *a)) != NULL) {
        a->s = s;
        a->set = set;
        a->len = strlen(note);
        a->note = mt_strdup(note);
        a->slen = sents ? strlen(sents) : 0;
        a->sentences = sents ? mt_strdup(sents) : NULL;
        if (!a->note || (sents && !a->sentences) ||
            read_sources(o, a, rs) != 0 || read_mode(o, a, rs) != 0 ||
            read_search(o, a, rs) != 0 ||
            mtx_srv_meta_read(o, &a->meta, rs) != 0 ||
            mtx_srv_model_read(s, o, &a->model, rs) != 0) {
            arg_free(a);
            a = NULL;
        } else {
            search_conds(a);
        }
    }
    if (!a && rs->status != 400)
        mtx_srv_error(rs, 500, "out of memory");
    json_decref(o);
    return a;
}

int mtx_srv_check_models(struct mt_server *s, enum mt_strategy st, int model,
                         struct srv_resp *rs)
{
    const char *const *r;

    if (model >= 0)
        return 1; /* every role has the chosen model's spec */
    if (!mtx_srv_runs_jobs(s))
        return 1; /* the node that claims the row checks its own */
    for (r = mt_strategy_get(st)->roles; *r; r++)
        if (!mtx_srv_llm_spec(s, *r))
            break;
    if (!*r)
        return 1;
    mtx_srv_error(rs, 503,
                  "no language model is configured, so notes cannot be "
                  "checked. Start the server with --llm "
                  "openai:BASE_URL#MODEL (an OpenAI-compatible endpoint; key "
                  "in MEDTRUST_API_KEY) or --llm gguf:PATH (a local GGUF "
                  "model), or set MEDTRUST_LLM (MEDTRUST_LLM_%s for this "
                  "role alone). Search works without a model.",
                  *r);
    return 0;
}

/* Each "source" must name a corpus of the store: 400 up front, not a
 * run that finds nothing. Returns 0 after answering 400. */
static int sources_known(struct srv_lease *l, const struct check_arg *a,
                         struct srv_resp *rs)
{
    struct mt_error err = {MT_OK, ""};
    int64_t sid;
    size_t i;

    for (i = 0; i < a->n_sources; i++) {
        if (mt_store_source_find(l->store, a->sources[i], &sid, &err) !=
            MT_ENOTFOUND)
            continue;
        mtx_srv_error(rs, 400,
                      "no source named '%s' in this store; GET /v1/sources "
                      "lists them",
                      a->sources[i]);
        return 0;
    }
    return 1;
}

/* A dense or hybrid search asked for on an index without vectors the
 * query embedder matches is 400 up front, not a failed run. Returns 0
 * after answering. */
static int mode_usable(struct mt_server *s, enum mt_strategy st,
                       const struct check_arg *a, struct srv_resp *rs)
{
    if (!mt_strategy_get(st)->needs_retriever ||
        a->search_mode == MT_SEARCH_BM25 ||
        a->search_mode == MT_AGENT_SEARCH_AUTO ||
        mt_retriever_has_vectors(s->ret))
        return 1;
    mtx_srv_error(rs, 400,
                  "\"search_mode\": %s search needs vectors in this "
                  "server's index, and it has none the query embedder "
                  "matches (GET /v1/health names the embedder); use bm25",
                  mt_search_mode_str((enum mt_search_mode)a->search_mode));
    return 0;
}

/* The run's audit record: its id, strategy, the note's hash and size. */
static json_t *audit_of(int64_t id, const char *h, void *arg)
{
    const struct check_arg *a = arg;

    return json_pack("{s:I,s:s,s:s,s:I}", "run_id", (json_int_t)id, "strategy",
                     mt_strategy_str(a->strat), "note_sha256", h, "bytes",
                     (json_int_t)a->len);
}

static int admit(struct srv_lease *l, void *arg, struct srv_resp *rs)
{
    return sources_known(l, arg, rs);
}

/* Records the run and queues the job; returns the run id or 0. */
static int64_t submit(struct mt_server *s, struct srv_req *rq,
                      struct srv_resp *rs, struct check_arg *a,
                      enum mt_strategy strat)
{
    struct mtx_job_spec spec = {"check", check_fn, a, arg_free};
    struct srv_run_req r = {a->note, a->len, audit_of, admit};

    a->strat = strat;
    return mtx_srv_run_submit(s, rq, rs, &spec, &r);
}

/* The rebuilder's callbacks (mtx_srv_job_rebuild): the strategy the
 * body names is kept in the argument. */
static void *rebuild_read(struct mt_server *s, const struct srv_req *rq,
                          struct srv_resp *rs)
{
    enum mt_strategy strat;
    struct check_arg *a = read_body(s, rq, rs, &strat);

    if (a)
        a->strat = strat;
    return a;
}

static int rebuild_ready(struct mt_server *s, void *arg, struct srv_resp *rs)
{
    const struct check_arg *a = arg;

    return mtx_srv_check_models(s, a->strat, a->model, rs);
}

static enum mt_status rebuild_bind(struct mt_server *s, void *arg,
                                   struct mt_error *err)
{
    struct check_arg *a = arg;
    enum mt_status st = mtx_srv_checker(s, a->strat, a->model, &a->agent, err);

    if (st == MT_OK)
        mtx_srv_check_params(a->agent, a->strat, &a->set, a->search_mode,
                             &a->cp);
    return st;
}

/* A queued check rebuilt where it is claimed (shared state): the body as
 * the route read it, this server's models and checker. */
enum mt_status mtx_srv_check_job(struct mt_server *s, int64_t run,
                                 const char *body, struct mtx_job_spec *spec,
                                 struct mt_error *err)
{
    static const struct srv_job_rebuild r = {
        "check", check_fn, arg_free, rebuild_read, rebuild_ready, rebuild_bind};

    (void)run;
    return mtx_srv_job_rebuild(s, body, &r, spec, err);
}

void mtx_srv_check(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    enum mt_strategy strat;
    struct check_arg *a = read_body(s, rq, rs, &strat);
    char ev[64];
    int model;

    if (!a)
        return;
    if (!mtx_srv_check_models(s, strat, a->model, rs) ||
        !mode_usable(s, strat, a, rs)) {
        arg_free(a);
        return;
    }
    if (mtx_srv_runs_jobs(s) &&
        mtx_srv_checker(s, strat, a->model, &a->agent, &err) != MT_OK) {
        arg_free(a);
        mtx_srv_error(rs, 503, "the checker could not start: %s", err.msg);
        return;
    }
    if (a->agent)
        mtx_srv_check_params(a->agent, strat, &a->set, a->search_mode, &a->cp);
    model = a->model; /* submit takes a */
    id = submit(s, rq, rs, a, strat);
    if (!id)
        return;
    snprintf(ev, sizeof ev, "/v1/runs/%lld/events", (long long)id);
    mtx_srv_json(rs, 202,
                 json_pack("{s:I,s:s,s:s,s:s,s:s?}", "run_id", (json_int_t)id,
                           "status", "queued", "strategy",
                           mt_strategy_str(strat), "events", ev, "model",
                           mtx_srv_model_name(s, model)));
}
