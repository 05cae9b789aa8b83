/* The engine routes: health, models, sources, search (the CLI's hit
 * objects), score (the CLI's --json object, recorded as a run with its
 * HTML report). Check is in check.c, ask in ask.c, runs and the
 * synthetic sleep job in runs.c. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "batch/folder.h"
#include "core/redact.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"
#include "medtrust/publish.h"
#include "model/llm.h"
#include "retrieve/hits_json.h"
#include "server/srv_int.h"

/* ==== Health and models ==== */

void mtx_srv_health(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    size_t queued, running;
    int down = mtx_srv_state_down(s);
    json_t *o;

    (void)rq;
    (void)id;
    mtx_jobs_counts(s->jobs, &queued, &running);
    /* readiness for a load balancer: 503 while the shared state is away */
    o = json_pack("{s:s,s:b,s:s,s:s,s:{s:I,s:I,s:I}}", "status",
                  down ? "unavailable" : "ok", "ready", !down, "state",
                  down ? "unreachable" : "ok", "version", mt_version(), "jobs",
                  "queued", (json_int_t)queued, "running", (json_int_t)running,
                  "max_running", (json_int_t)s->p.llm_jobs);
    if (o)
        json_object_set_new(
            o, "limits",
            json_pack("{s:I,s:I,s:I,s:I}", "open_files", (json_int_t)s->nofile,
                      "max_connections", (json_int_t)s->conn_cap,
                      "event_streams", (json_int_t)mtx_srv_sse_open(s),
                      "streams_per_run", (json_int_t)SRV_STREAMS_PER_JOB));
    mtx_srv_json(rs, down ? 503 : 200, o);
}

/* A spec for display: an admin's has its secrets cut out
 * (core/redact.h); anyone else gets the model's name only, never the
 * endpoint or the path it is served from (openai:URL#MODEL -> MODEL,
 * gguf:/models/x.gguf -> gguf:x.gguf, openai:URL -> openai). */
static json_t *spec_json(const char *spec, int admin)
{
    char *r = spec && admin ? mtx_redact_dup(spec) : NULL;
    json_t *j = r ? json_string(r) : json_null();
    const char *hash = spec ? strrchr(spec, '#') : NULL;
    const char *colon = spec ? strchr(spec, ':') : NULL;
    const char *slash = spec ? strrchr(spec, '/') : NULL;

    mt_free(r);
    if (admin || !spec)
        return j;
    json_decref(j);
    if (hash && hash[1])
        return json_string(hash + 1);
    if (!colon || strncmp(spec, "openai:", 7) == 0)
        return json_stringn(spec,
                            colon ? (size_t)(colon - spec) : strlen(spec));
    return json_sprintf("%.*s:%s", (int)(colon - spec), spec,
                        slash && slash > colon ? slash + 1 : colon + 1);
}

/* Every MEDTRUST_LLM_<ROLE> variable (not the _TIMEOUT and _RETRIES
 * settings). */
static json_t *role_specs(int admin)
{
    extern char **environ;
    json_t *o = json_object();
    char role[64];
    const char *spec;
    char **e;

    for (e = environ; o && e && *e; e++) {
        if (!(spec = mtx_llm_env_role(*e, role, sizeof role)))
            continue;
        for (size_t i = 0; role[i]; i++)
            role[i] = (char)tolower((unsigned char)role[i]);
        json_object_set_new(o, role, spec_json(spec, admin));
    }
    return o;
}

/* Which checker strategies have a model for each of their roles (the
 * strategy table's roles). */
static json_t *check_ready(const struct mt_server *s)
{
    json_t *o = json_object();
    int i;

    for (i = 0; o && i < MT_STRATEGY_COUNT; i++) {
        const struct mt_strategy_info *in =
            mt_strategy_get((enum mt_strategy)i);
        const char *const *r = in->roles;

        while (*r && mtx_srv_llm_spec(s, *r))
            r++;
        json_object_set_new(o, in->name, json_boolean(*r == NULL));
    }
    return o;
}

/* The index build running on this store (medtrust index keeps
 * DIR/MT_INDEX_BUILD_STATUS while it works), or JSON null: none, or the
 * file of a build that died (its process gone, or silent for 5 minutes). */
static json_t *index_build(const struct mt_server *s, int admin)
{
    char path[4200];
    json_t *o;
    json_int_t pid;
    json_int_t updated;

    snprintf(path, sizeof path, "%s/%s", s->db_dir, MT_INDEX_BUILD_STATUS);
    o = json_load_file(path, 0, NULL);
    pid = json_integer_value(json_object_get(o, "pid"));
    updated = json_integer_value(json_object_get(o, "updated"));
    if (!json_is_object(o) || pid <= 0 ||
        (kill((pid_t)pid, 0) != 0 && errno != EPERM) ||
        (json_int_t)time(NULL) - updated > 300) {
        json_decref(o);
        return json_null();
    }
    json_object_del(o, "pid");
    json_object_set_new(
        o, "embedder",
        spec_json(json_string_value(json_object_get(o, "embedder")), admin));
    return o;
}

void mtx_srv_models(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    const char *llm = getenv("MEDTRUST_LLM");
    const char *nli = s->nli_spec ? s->nli_spec : getenv("MEDTRUST_NLI");
    char emb[4096] = "";
    char dir[4096];
    uint32_t dims = 0;
    int admin = rq->user.role == MT_ROLE_ADMIN;
    json_t *e;

    (void)id;
    /* "runs_jobs" is false on a front end (--llm-jobs 0): "check" and "ask"
     * then say what this server has, not what the nodes running its jobs
     * have. A publish folder's index is the snapshot its CURRENT names. */
    if (mt_publish_resolve(s->db_dir, dir, sizeof dir, NULL) != MT_OK)
        snprintf(dir, sizeof dir, "%s", s->db_dir);
    if (mt_index_peek_embedder(dir, emb, sizeof emb, &dims, NULL) != MT_OK ||
        !emb[0])
        e = json_null();
    else
        e = json_pack("{s:o,s:I}", "spec", spec_json(emb, admin), "dims",
                      (json_int_t)dims);
    mtx_srv_json(
        rs, 200,
        json_pack(
            "{s:{s:o,s:o},s:o,s:o,s:o,s:b,s:o,s:b,s:b}", "llm", "default",
            spec_json(s->llm_spec && *s->llm_spec ? s->llm_spec : llm, admin),
            "roles", role_specs(admin), "embedder", e, "index_build",
            index_build(s, admin), "check", check_ready(s), "ask",
            mtx_srv_ask_ready(s), "nli",
            spec_json(nli && *nli ? nli : "llm", admin), "reranker",
            mt_retriever_has_reranker(s->ret), "runs_jobs",
            mtx_srv_runs_jobs(s)));
}

/* ==== Sources ==== */

static enum mt_status source_row(const struct mt_store_counts *c, void *user)
{
    json_t *o =
        json_pack("{s:s?,s:I,s:I,s:I}", "name", c->source, "documents",
                  (json_int_t)c->documents, "chunks", (json_int_t)c->chunks,
                  "text_bytes", (json_int_t)c->text_bytes);

    if (!o)
        return MT_ENOMEM;
    if (!c->source) /* the total comes last */
        return json_object_set_new(user, "total", o) ? MT_ENOMEM : MT_OK;
    return json_array_append_new(json_object_get(user, "sources"), o)
               ? MT_ENOMEM
               : MT_OK;
}

/* GET /v1/sources: the corpora in the store, with their counts. */
void mtx_srv_sources(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    json_t *o = json_pack("{s:[]}", "sources");
    enum mt_status st = o ? mtx_srv_lease_get(s, &l, &err) : MT_ENOMEM;

    (void)rq;
    (void)id;
    if (st == MT_OK)
        st = mt_store_stats(l->store, source_row, o, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK) {
        mtx_srv_json(rs, 200, o);
        return;
    }
    json_decref(o);
    mtx_srv_fail(rs, st, &err);
}

/* ==== Search ==== */

static int num_in(json_t *o, const char *key, double lo, double hi, double *out,
                  struct srv_resp *rs)
{
    json_t *v = json_object_get(o, key);

    if (!v)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < lo ||
        json_number_value(v) > hi) {
        mtx_srv_error(rs, 400, "\"%s\" must be a number in [%g, %g]", key, lo,
                      hi);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* The text of POST /v1/search; its bounded members are
 * mt_search_param_table's that have a request field (k, w_lex, w_sem,
 * retrieve), defaults mt_search_default_params'. */
const struct srv_text mtx_srv_search_text = {"query",       1, 0,
                                             SRV_QUERY_MAX, 0, "a string"};

/* Passages searched per document asked for when hits are grouped by
 * document: k documents come from the best GROUP_DEPTH * k passages (fewer
 * documents when those hold fewer). */
#define GROUP_DEPTH 4

/* The index's best search mode, /v1/search's default (GET /v1/limits
 * says it): hybrid when it has vectors, else bm25. */
enum mt_search_mode mtx_srv_best_mode(struct mt_server *s)
{
    return mt_retriever_check(s->ret, NULL) == MT_OK &&
                   mt_retriever_has_vectors(s->ret)
               ? MT_SEARCH_HYBRID
               : MT_SEARCH_BM25;
}

/* "group": documents (the default: each document once, as VerifAI lists
 * them) or chunks; *docs is 1 for documents. -1 after answering 400. */
static int read_group(json_t *o, int *docs, struct srv_resp *rs)
{
    const char *g = json_string_value(json_object_get(o, "group"));
    json_t *v = json_object_get(o, "group");

    *docs = 1;
    if (!v || json_is_null(v) || (g && strcmp(g, "documents") == 0))
        return 0;
    if (g && strcmp(g, "chunks") == 0) {
        *docs = 0;
        return 0;
    }
    mtx_srv_error(rs, 400, "\"group\" is documents (the default) or chunks");
    return -1;
}

/* Reads {"query","k","mode","w_lex","w_sem","source","retrieve",
 * "author","journal","publication_type"}; the filters go into m, which
 * p->meta then points into (c). */
static int search_params(json_t *o, struct mt_search_params *p, const char **q,
                         struct srv_meta *m, struct mt_meta_cond *c,
                         struct srv_resp *rs)
{
    const char *mode = json_string_value(json_object_get(o, "mode"));
    if (mtx_srv_text(o, &mtx_srv_search_text, q, rs) != 0)
        return -1;
    if (mode && mt_search_mode_parse(mode, &p->mode) != MT_OK) {
        mtx_srv_error(rs, 400, "\"mode\" is bm25, dense or hybrid");
        return -1;
    }
    if (mtx_srv_params_read(o, &mt_search_param_table, p, rs) != 0)
        return -1;
    p->source = json_string_value(json_object_get(o, "source"));
    if (mtx_srv_meta_read(o, m, rs) != 0)
        return -1;
    p->nmeta = mtx_srv_meta_conds(m, c);
    p->meta = p->nmeta ? c : NULL;
    return 0;
}

/* The hits with their links, looked up on one store handle for the whole
 * request (a failed lookup: every url null); grouped by document unless
 * 'k' is 0 (chunks). */
static json_t *hits_json(struct mt_server *s, const struct mt_search_result *r,
                         size_t k)
{
    char **urls = mt_calloc(r->n ? r->n : 1, sizeof *urls);
    size_t i;
    json_t *a = urls ? json_array() : NULL;

    if (a)
        (void)mt_retriever_urls(s->ret, r->hits, r->n, urls, NULL);
    if (a && k) {
        json_decref(a);
        a = mtx_hits_groups_json(r, k, urls);
    }
    for (i = 0; a && !k && i < r->n; i++)
        if (json_array_append_new(a, mtx_hit_json(&r->hits[i], 1, urls[i])) !=
            0) {
            json_decref(a);
            a = NULL;
        }
    for (i = 0; urls && i < r->n; i++)
        mt_free(urls[i]);
    mt_free(urls);
    return a ? json_pack("{s:s,s:s,s:o}", "group", k ? "documents" : "chunks",
                         "mode", "", "hits", a)
             : NULL;
}

static void search_audit(struct mt_server *s, struct srv_req *rq, const char *q,
                         const struct mt_search_params *p, size_t nhits)
{
    char h[MT_SECRET_SIZE];

    mt_sha256_hex(q, strlen(q), h);
    mtx_srv_audit(s, NULL, rq, "search",
                  json_pack("{s:s,s:s,s:i,s:I}", "query_sha256", h, "mode",
                            mt_search_mode_str(p->mode), "k", (int)p->k, "hits",
                            (json_int_t)nhits));
}

void mtx_srv_search(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    struct mt_search_params p;
    struct mt_error err = {MT_OK, ""};
    struct mt_search_result *r = NULL;
    struct srv_meta m;
    struct mt_meta_cond c[3];
    const char *q = NULL;
    json_t *o = NULL;
    enum mt_status st;
    uint32_t k;
    int docs = 1;

    (void)id;
    mt_search_default_params(&p);
    p.mode = mtx_srv_best_mode(s); /* "mode" absent: the index's best */
    if (mtx_srv_body_json(rq, rs, &o) != 0 ||
        search_params(o, &p, &q, &m, c, rs) != 0 ||
        read_group(o, &docs, rs) != 0) {
        json_decref(o);
        return;
    }
    k = p.k;
    if (docs) /* k documents from the best passages */
        p.k = p.k * GROUP_DEPTH > 4000 ? 4000 : p.k * GROUP_DEPTH;
    st = mt_retriever_search(s->ret, q, &p, &r, &err);
    if (st == MT_OK) {
        json_t *j = hits_json(s, r, docs ? k : 0);
        search_audit(s, rq, q, &p, r->n);
        json_object_set_new(j, "mode", json_string(mt_search_mode_str(p.mode)));
        mtx_srv_json(rs, 200, j);
    } else {
        mtx_srv_fail(rs, st, &err);
    }
    mt_search_result_free(r);
    json_decref(o);
}

/* ==== Score ==== */

struct score_in {
    const char *ref, *sub, *name;
    struct mt_eval_params params;
};

static int score_params(json_t *o, struct score_in *in, struct srv_resp *rs)
{
    const char *m = json_string_value(json_object_get(o, "kpcs_match"));
    json_t *kp = json_object_get(o, "kpcs");

    in->ref = json_string_value(json_object_get(o, "reference"));
    in->sub = json_string_value(json_object_get(o, "submission"));
    in->name = json_string_value(json_object_get(o, "name"));
    if (!in->name)
        in->name = "submission";
    mt_eval_default_params(&in->params);
    if (!in->ref || !in->sub) {
        mtx_srv_error(rs, 400,
                      "the body needs \"reference\" (MEDEC-format "
                      "CSV text) and \"submission\" (run text)");
        return -1;
    }
    if (m && strcmp(m, "normalized") == 0)
        in->params.kpcs_match = MT_EVAL_KW_NORMALIZED;
    else if (m && strcmp(m, "exact") != 0) {
        mtx_srv_error(rs, 400, "\"kpcs_match\" is exact or normalized");
        return -1;
    }
    if (kp && json_is_false(kp))
        in->params.kpcs = 0;
    return num_in(o, "kpcs_alpha", 0, 1, &in->params.kpcs_alpha, rs);
}

static char *input_hash(const struct score_in *in)
{
    char a[MT_SECRET_SIZE], b[MT_SECRET_SIZE], both[2 * MT_SECRET_SIZE];
    char *h = mt_malloc(MT_SECRET_SIZE);

    mt_sha256_hex(in->ref, strlen(in->ref), a);
    mt_sha256_hex(in->sub, strlen(in->sub), b);
    snprintf(both, sizeof both, "%s%s", a, b);
    if (h)
        mt_sha256_hex(both, strlen(both), h);
    return h;
}

static void score_reply(struct mt_server *s, struct srv_lease *l,
                        struct srv_req *rq, struct srv_resp *rs, int64_t run,
                        const char *json, size_t notes)
{
    json_t *o = json_loads(json, JSON_DECODE_ANY, NULL);

    mtx_srv_audit(s, l, rq, "score",
                  json_pack("{s:I,s:I}", "run_id", (json_int_t)run, "notes",
                            (json_int_t)notes));
    if (o)
        json_object_set_new(o, "run_id", json_integer(run));
    mtx_srv_json(rs, 200, o);
}

void mtx_srv_score(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    struct score_in in;
    json_t *o = NULL;
    char *json = NULL, *hash = NULL;
    char report[4096];
    size_t notes = 0;
    enum mt_status st;

    if (mtx_srv_body_json(rq, rs, &o) != 0 || score_params(o, &in, rs)) {
        json_decref(o);
        return;
    }
    hash = input_hash(&in);
    st = hash ? mtx_srv_lease_get(s, &l, &err) : MT_ENOMEM;
    if (st == MT_OK)
        st = mt_run_create(l->state, rq->user.id, rq->user.name, "score", hash,
                           &id, &err);
    if (st == MT_OK) {
        mtx_srv_report_path(s, id, report, sizeof report);
        st = mtx_batch_score_text(in.ref, in.sub, in.name, &in.params, &json,
                                  &notes, report, &err);
        if (st == MT_OK)
            mtx_srv_report_share(s, id);
        /* Best effort: a failed update leaves the run "queued". */
        mt_run_update(l->state, id, st == MT_OK ? "done" : "failed", json,
                      st == MT_OK ? NULL : err.msg, NULL);
    }
    if (st == MT_OK)
        score_reply(s, l, rq, rs, id, json, notes);
    else
        mtx_srv_fail(rs, st, &err);
    mtx_srv_lease_put(s, l);
    mt_free(json);
    mt_free(hash);
    json_decref(o);
}
