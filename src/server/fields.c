/* The request-field parser every route uses: bounded numeric members
 * (struct srv_field, and the settings tables of medtrust/params.h with the
 * server's caps), metadata filters and search modes; GET /v1/limits lists
 * the same tables. */
#include <string.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

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

/* ==== Text members ==== */

static size_t text_len(const char *v, size_t n, int trim)
{
    if (!trim)
        return n;
    return mtx_str_trim(mtx_str_from(v)).n;
}

int mtx_srv_text(json_t *o, const struct srv_text *t, const char **out,
                 struct srv_resp *rs)
{
    json_t *v = json_object_get(o, t->name);
    size_t n = json_string_length(v);

    *out = json_string_value(v);
    if (!v && !t->required)
        return 0;
    if (*out && !memchr(*out, '\0', n) &&
        text_len(*out, n, t->trim) >= t->min && (!t->max || n <= t->max))
        return 0;
    if (!t->max)
        mtx_srv_error(rs, 400, "\"%s\" must be %s", t->name, t->what);
    else if (t->min)
        mtx_srv_error(rs, 400, "\"%s\" must be %s, %zu to %zu bytes", t->name,
                      t->what, t->min, t->max);
    else
        mtx_srv_error(rs, 400, "\"%s\" must be %s of at most %zu bytes",
                      t->name, t->what, t->max);
    return -1;
}

/* ==== Metadata filters ==== */

const struct srv_text mtx_srv_filter_texts[3] = {
    {"author", 0, 0, SRV_FILTER_MAX - 1, 0, "a string"},
    {"journal", 0, 0, SRV_FILTER_MAX - 1, 0, "a string"},
    {"publication_type", 0, 0, SRV_FILTER_MAX - 1, 0, "a string"},
};

static int meta_one(json_t *o, const struct srv_text *t, char *out,
                    struct srv_resp *rs)
{
    json_t *v = json_object_get(o, t->name);
    const char *s;

    out[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (mtx_srv_text(o, t, &s, rs) != 0)
        return -1;
    memcpy(out, s, json_string_length(v) + 1);
    return 0;
}

int mtx_srv_meta_read(json_t *o, struct srv_meta *m, struct srv_resp *rs)
{
    if (meta_one(o, &mtx_srv_filter_texts[0], m->author, rs) ||
        meta_one(o, &mtx_srv_filter_texts[1], m->journal, rs) ||
        meta_one(o, &mtx_srv_filter_texts[2], m->pub_type, rs))
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

int mtx_srv_mode_read(struct mt_server *s, json_t *o, int *mode,
                      struct srv_resp *rs)
{
    json_t *v = json_object_get(o, "search_mode");
    json_t *ok = NULL;
    enum mt_search_mode m;
    size_t i;

    *mode = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) ||
        mt_search_mode_parse(json_string_value(v), &m) != MT_OK) {
        mtx_srv_error(rs, 400, "\"search_mode\" is bm25, dense or hybrid");
        return -1;
    }
    ok = mtx_srv_modes_json(s);
    for (i = 0; i < json_array_size(ok); i++)
        if (strcmp(json_string_value(json_array_get(ok, i)),
                   json_string_value(v)) == 0)
            *mode = (int)m;
    json_decref(ok);
    if (*mode >= 0)
        return 0;
    mtx_srv_error(rs, 400,
                  "\"search_mode\" %s needs the index's vectors, and it has "
                  "none for its embedder: search bm25, or build them with "
                  "'medtrust index --embedder use-lite'",
                  json_string_value(v));
    return -1;
}

/* ==== Settings tables (medtrust/params.h) ==== */

/* Reads one table member: 400 naming it and its (server) bounds. */
static int param_read(json_t *o, const struct mt_param *d, void *params,
                      struct srv_resp *rs)
{
    json_t *v = json_object_get(o, d->field);
    int integer = mt_param_is_integer(d);
    double x = json_number_value(v);
    double hi = mt_param_max(d, 1);

    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || (integer && !json_is_integer(v)) ||
        !mt_param_valid(d, x, 1)) {
        if (integer)
            mtx_srv_error(rs, 400, "\"%s\" must be an integer in %.0f..%.0f",
                          d->field, d->lo, hi);
        else
            mtx_srv_error(rs, 400, "\"%s\" must be a number in [%g, %g]",
                          d->field, d->lo, hi);
        return -1;
    }
    mt_param_set(d, params, x);
    return 0;
}

int mtx_srv_params_read(json_t *o, const struct mt_param_table *t, void *params,
                        struct srv_resp *rs)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (t->params[i].field && param_read(o, &t->params[i], params, rs) != 0)
            return -1;
    return 0;
}

int mtx_srv_param_read(json_t *o, const struct mt_param_table *t,
                       const char *field, void *params, struct srv_resp *rs)
{
    const struct mt_param *d = mt_param_find(t, field, 1);

    return d ? param_read(o, d, params, rs) : 0;
}

/* One member as GET /v1/limits shows it; "option" names the CLI's, and
 * "cli_max" its highest value where the server caps lower. */
static json_t *param_json(const struct mt_param_table *t,
                          const struct mt_param *d)
{
    json_t *o = json_pack("{s:f,s:f,s:f,s:b,s:s}", "min", d->lo, "max",
                          mt_param_max(d, 1), "default", mt_param_default(t, d),
                          "integer", mt_param_is_integer(d), "what", d->help);

    if (o && d->option)
        json_object_set_new(o, "option", json_string(d->option));
    if (o && d->option && mt_param_max(d, 1) < d->hi)
        json_object_set_new(o, "cli_max", json_real(d->hi));
    return o;
}

json_t *mtx_srv_params_json(const struct mt_param_table *t)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; o && i < t->n; i++)
        if (t->params[i].field)
            json_object_set_new(o, t->params[i].field,
                                param_json(t, &t->params[i]));
    return o;
}
