/* Routes the web UI needs beyond the engine's: the session state, known
 * without a failing request (GET /v1/session answers 200 either way, so
 * a logged-out page loads with a clean console), and the limits of every
 * setting the panels offer (GET /v1/limits), read from the same tables
 * the routes enforce. */
#include <string.h>

#include "medtrust/core.h"
#include "medtrust/qa.h"
#include "medtrust/verify.h"
#include "server/srv_int.h"

/* GET /v1/session: {"authenticated":false}, or GET /v1/me's object with
 * "authenticated":true. An expired or unknown session reads as logged
 * out; a malformed Authorization header too (the UI never sends one). */
void mtx_srv_session(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id)
{
    json_t *o;

    if (mtx_srv_authenticate(s, rq, rs) != 0) {
        mtx_srv_json(rs, 200, json_pack("{s:b}", "authenticated", 0));
        return;
    }
    mtx_srv_me(s, rq, rs, id);
    if (rs->status != 200)
        return;
    o = json_loadb(rs->body, rs->len, 0, NULL);
    if (o)
        json_object_set_new(o, "authenticated", json_true());
    mtx_srv_json(rs, 200, o);
}

/* ==== GET /v1/limits ==== */

static json_t *jobs_json(const struct mt_server *s)
{
    return json_pack("{s:I,s:I,s:I}", "max_running", (json_int_t)s->p.llm_jobs,
                     "max_queued", (json_int_t)s->p.max_queued, "timeout_s",
                     (json_int_t)s->p.job_timeout_s);
}

/* The strategy table: its names (GET /v1/limits' check.strategies) or,
 * with 'info', its entries (check.strategy_info: name, title, summary,
 * roles, needs_retriever, needs_examples), from which the UI offers its
 * choices. */
static json_t *strategies_json(int info)
{
    json_t *a = json_array();
    int i;

    for (i = 0; a && i < MT_STRATEGY_COUNT; i++) {
        const struct mt_strategy_info *in =
            mt_strategy_get((enum mt_strategy)i);
        json_t *roles = json_array();
        const char *const *r;

        for (r = in->roles; roles && *r; r++)
            json_array_append_new(roles, json_string(*r));
        if (!info) {
            json_decref(roles);
            json_array_append_new(a, json_string(in->name));
            continue;
        }
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:s,s:o,s:b,s:b}", "name", in->name, "title",
                         in->title, "summary", in->summary, "roles",
                         roles ? roles : json_array(), "needs_retriever",
                         in->needs_retriever, "needs_examples",
                         in->needs_examples));
    }
    return a;
}

void mtx_srv_limits(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    (void)rq;
    (void)id;
    mtx_srv_json(rs, 200, mtx_srv_limits_json(s));
}

json_t *mtx_srv_limits_json(struct mt_server *s)
{
    json_t *o = json_pack(
        "{s:I,s:o,s:o,s:{s:o,s:I,s:[sss],s:I,s:s},s:{s:o,s:I,s:I,s:I,s:o},"
        "s:{s:o,s:I,s:I,s:o,s:o},s:{s:I,s:I}}",
        "body_bytes", (json_int_t)s->p.max_body, "jobs", jobs_json(s), "models",
        mtx_srv_models_json(s), "search", "fields",
        mtx_srv_params_json(&mt_search_param_table), "query_bytes",
        (json_int_t)SRV_QUERY_MAX, "modes", "bm25", "dense", "hybrid",
        "filter_bytes", (json_int_t)(SRV_FILTER_MAX - 1), "default_mode",
        mt_search_mode_str(mtx_srv_best_mode(s)), "ask", "fields",
        mtx_srv_params_json(&mt_qa_param_table), "question_bytes",
        (json_int_t)SRV_QUESTION_MAX, "source_bytes",
        (json_int_t)(SRV_SOURCE_MAX - 1), "filter_bytes",
        (json_int_t)(SRV_FILTER_MAX - 1), "modes", mtx_srv_modes_json(s),
        "check", "fields", mtx_srv_check_fields_json(), "note_bytes",
        (json_int_t)SRV_NOTE_MAX, "filter_bytes",
        (json_int_t)(SRV_FILTER_MAX - 1), "strategies", strategies_json(0),
        "strategy_info", strategies_json(1), "batch", "notes_max",
        (json_int_t)SRV_BATCH_NOTES_MAX, "upload_bytes",
        (json_int_t)s->p.max_body);

    if (o) /* POST /v1/verify's, beside ask's (its search settings) */
        json_object_set_new(
            o, "verify",
            json_pack("{s:o,s:I}", "fields",
                      mtx_srv_params_json(&mt_verify_param_table), "text_bytes",
                      (json_int_t)SRV_TEXT_MAX));
    return o;
}
