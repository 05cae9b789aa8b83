/* Routes the web UI needs beyond the engine's: the session state, known
 * without a failing request (GET /v1/session answers 200 either way, so
 * a logged-out page loads with a clean console), and the limits of every
 * setting the panels offer (GET /v1/limits), read from the same tables
 * the routes enforce. */
#include <string.h>

#include "medtrust/core.h"
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

/* ==== Bounded fields ==== */

int mtx_srv_field(json_t *o, const struct srv_field *f, double *out,
                  struct srv_resp *rs)
{
    json_t *v = json_object_get(o, f->name);
    double x;

    *out = f->def;
    if (!v || json_is_null(v))
        return 0;
    x = json_number_value(v);
    if (!json_is_number(v) || x < f->lo || x > f->hi ||
        (f->integer && (!json_is_integer(v)))) {
        if (f->integer)
            mtx_srv_error(rs, 400, "\"%s\" must be an integer in %.0f..%.0f",
                          f->name, f->lo, f->hi);
        else
            mtx_srv_error(rs, 400, "\"%s\" must be a number in [%g, %g]",
                          f->name, f->lo, f->hi);
        return -1;
    }
    *out = x;
    return 0;
}

json_t *mtx_srv_fields_json(const struct srv_field *f, size_t n)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; o && i < n; i++)
        json_object_set_new(o, f[i].name,
                            json_pack("{s:f,s:f,s:f,s:b,s:s}", "min", f[i].lo,
                                      "max", f[i].hi, "default", f[i].def,
                                      "integer", f[i].integer, "what",
                                      f[i].what));
    return o;
}

/* ==== Metadata filters ==== */

static int meta_one(json_t *o, const char *name, char *out, struct srv_resp *rs)
{
    json_t *v = json_object_get(o, name);

    out[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= SRV_FILTER_MAX ||
        memchr(json_string_value(v), '\0', json_string_length(v))) {
        mtx_srv_error(rs, 400, "\"%s\" must be a string of at most %d bytes",
                      name, SRV_FILTER_MAX - 1);
        return -1;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

int mtx_srv_meta_read(json_t *o, struct srv_meta *m, struct srv_resp *rs)
{
    if (meta_one(o, "author", m->author, rs) ||
        meta_one(o, "journal", m->journal, rs) ||
        meta_one(o, "publication_type", m->pub_type, rs))
        return -1;
    return 0;
}

size_t mtx_srv_meta_conds(const struct srv_meta *m, struct mt_meta_cond *c)
{
    return mt_search_pubmed_conds(m->author, m->journal, m->pub_type, c);
}

json_t *mtx_srv_modes_json(struct mt_server *s)
{
    if (mt_retriever_check(s->ret, NULL) == MT_OK &&
        mt_retriever_has_vectors(s->ret))
        return json_pack("[sss]", "bm25", "dense", "hybrid");
    return json_pack("[s]", "bm25");
}

/* ==== GET /v1/limits ==== */

static json_t *jobs_json(const struct mt_server *s)
{
    return json_pack("{s:I,s:I,s:I}", "max_running", (json_int_t)s->p.llm_jobs,
                     "max_queued", (json_int_t)s->p.max_queued, "timeout_s",
                     (json_int_t)s->p.job_timeout_s);
}

void mtx_srv_limits(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    (void)rq;
    (void)id;
    mtx_srv_json(
        rs, 200,
        json_pack(
            "{s:I,s:o,s:o,s:{s:o,s:I,s:[sss],s:I},s:{s:o,s:I,s:I,s:I,s:o},"
            "s:{s:o,s:I,s:I,s:[sss]},s:{s:I,s:I}}",
            "body_bytes", (json_int_t)s->p.max_body, "jobs", jobs_json(s),
            "models", mtx_srv_models_json(s), "search", "fields",
            mtx_srv_fields_json(mt_srv_search_fields, mt_srv_search_nfields),
            "query_bytes", (json_int_t)SRV_QUERY_MAX, "modes", "bm25", "dense",
            "hybrid", "filter_bytes", (json_int_t)(SRV_FILTER_MAX - 1), "ask",
            "fields",
            mtx_srv_fields_json(mt_srv_ask_fields, mt_srv_ask_nfields),
            "question_bytes", (json_int_t)SRV_QUESTION_MAX, "source_bytes",
            (json_int_t)(SRV_SOURCE_MAX - 1), "filter_bytes",
            (json_int_t)(SRV_FILTER_MAX - 1), "modes", mtx_srv_modes_json(s),
            "check", "fields", mtx_srv_check_fields_json(), "note_bytes",
            (json_int_t)SRV_NOTE_MAX, "filter_bytes",
            (json_int_t)(SRV_FILTER_MAX - 1), "strategies", "react-reflex",
            "guards", "single", "batch", "notes_max",
            (json_int_t)SRV_BATCH_NOTES_MAX, "upload_bytes",
            (json_int_t)s->p.max_body));
}
