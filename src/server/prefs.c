/* Each account's own defaults for the Search, Ask, Check and Verify
 * panels: GET /v1/me/settings and PUT /v1/me/settings
 * ({"search": {...}, "ask": {...}, "check": {...}, "verify": {...}}; a
 * panel given replaces the stored one, null removes it). Every member is
 * bounded as the route it feeds says in GET /v1/limits: a number by its
 * field's min, max and integer, a mode, model or strategy by the lists
 * there, a filter by its byte limit; anything else is refused (400). Kept
 * in the state's settings (SQLite or PostgreSQL) under
 * "user_settings:ID", so they survive a restart and follow the user to
 * any server on a shared state. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "server/srv_int.h"

#define PREFS_MAX 16384 /* bytes of one account's stored defaults */

static const char *const panels[] = {"search", "ask", "check", "verify"};
#define NPANELS (sizeof panels / sizeof panels[0])

static void prefs_key(const struct srv_req *rq, char *key, size_t n)
{
    snprintf(key, n, "user_settings:%lld", (long long)rq->user.id);
}

/* The stored defaults (an empty object when none). */
static enum mt_status prefs_load(struct mt_server *s, const struct srv_req *rq,
                                 json_t **out, struct mt_error *err)
{
    struct srv_lease *l = NULL;
    char key[64], *v = mt_malloc(PREFS_MAX);
    int found = 0;
    enum mt_status st = v ? mtx_srv_lease_get(s, &l, err) : MT_ENOMEM;

    prefs_key(rq, key, sizeof key);
    if (st == MT_OK)
        st = mt_setting_get(l->state, key, v, PREFS_MAX, &found, err);
    mtx_srv_lease_put(s, l);
    *out = st == MT_OK && found ? json_loads(v, 0, NULL) : NULL;
    if (st == MT_OK && !json_is_object(*out)) {
        json_decref(*out);
        *out = json_object();
    }
    mt_free(v);
    if (st == MT_OK && !*out)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    return st;
}

/* Whether string v is one of the strings of array a. */
static int in_list(const json_t *a, const char *v)
{
    size_t i;

    for (i = 0; i < json_array_size(a); i++)
        if (strcmp(json_string_value(json_array_get(a, i)), v) == 0)
            return 1;
    return 0;
}

/* A number member: one of the panel's fields, within its bounds (Verify
 * takes Ask's years and weights besides its own fields, as
 * POST /v1/verify does). */
static int number_ok(const json_t *lim, const json_t *p, const char *k,
                     const json_t *v, char *why, size_t n)
{
    const json_t *f =
        json_object_get(json_object_get(p, "fields"), k)
            ? json_object_get(json_object_get(p, "fields"), k)
        : p == json_object_get(lim, "verify")
            ? json_object_get(
                  json_object_get(json_object_get(lim, "ask"), "fields"), k)
            : NULL;
    double x = json_number_value(v);
    double lo = json_number_value(json_object_get(f, "min"));
    double hi = json_number_value(json_object_get(f, "max"));

    if (!f)
        snprintf(why, n, "is not a setting of this panel");
    else if (!isfinite(x) || x < lo || x > hi ||
             (json_is_true(json_object_get(f, "integer")) && x != floor(x)))
        snprintf(why, n, "must be %s from %g to %g (GET /v1/limits)",
                 json_is_true(json_object_get(f, "integer")) ? "a whole number"
                                                             : "a number",
                 lo, hi);
    else
        return 1;
    return 0;
}

/* A text member: a source, mode, model, strategy or metadata filter. */
static int text_ok(const json_t *lim, const json_t *p, const char *k,
                   const char *v, char *why, size_t n)
{
    json_int_t fb = json_integer_value(json_object_get(p, "filter_bytes"));
    const json_t *modes = json_object_get(p, "modes");

    if (!modes)
        modes = json_object_get(json_object_get(lim, "ask"), "modes");
    if (strcmp(k, "source") == 0 || strcmp(k, "author") == 0 ||
        strcmp(k, "journal") == 0 || strcmp(k, "publication_type") == 0) {
        if (strlen(v) <= (size_t)(fb > 0 ? fb : 255))
            return 1;
        snprintf(why, n, "is longer than %lld bytes", (long long)fb);
    } else if (strcmp(k, "search_mode") == 0) {
        if (in_list(modes, v))
            return 1;
        snprintf(why, n, "must be a search mode this index serves");
    } else if (strcmp(k, "model") == 0) {
        if (in_list(json_object_get(lim, "models"), v))
            return 1;
        snprintf(why, n, "must name one of the server's models");
    } else if (strcmp(k, "strategy") == 0 && json_object_get(p, "strategies")) {
        if (in_list(json_object_get(p, "strategies"), v))
            return 1;
        snprintf(why, n, "must be one of the server's strategies");
    } else {
        snprintf(why, n, "is not a setting of this panel");
    }
    return 0;
}

/* Checks panel 'name''s object o; 0, or answers 400 and returns -1. */
static int panel_ok(const json_t *lim, const char *name, json_t *o,
                    struct srv_resp *rs)
{
    const json_t *p = json_object_get(lim, name);
    const char *k;
    json_t *v;
    char why[160] = "";

    if (!p) {
        mtx_srv_error(rs, 400,
                      "this server has no %s settings to keep (GET "
                      "/v1/limits)",
                      name);
        return -1;
    }
    json_object_foreach(o, k, v)
    {
        if (json_is_number(v) ? number_ok(lim, p, k, v, why, sizeof why)
            : json_is_string(v)
                ? text_ok(lim, p, k, json_string_value(v), why, sizeof why)
                : (snprintf(why, sizeof why, "must be a number or text"), 0))
            continue;
        mtx_srv_error(rs, 400, "\"%s\".\"%s\" %s", name, k, why);
        return -1;
    }
    return 0;
}

/* Merges body b into the stored defaults d, checking each panel given;
 * 0, or answers 400 and returns -1. */
static int merge(struct mt_server *s, json_t *b, json_t *d, struct srv_resp *rs)
{
    json_t *lim = mtx_srv_limits_json(s);
    const char *k;
    json_t *v;
    size_t i;
    int rc = lim ? 0 : -1;

    if (!lim)
        mtx_srv_error(rs, 500, "out of memory");
    json_object_foreach(b, k, v)
    {
        for (i = 0; i < NPANELS && strcmp(panels[i], k) != 0; i++)
            ;
        if (rc == 0 &&
            (i == NPANELS || !(json_is_object(v) || json_is_null(v)))) {
            mtx_srv_error(rs, 400,
                          "\"%s\": the settings are an object for each of "
                          "search, ask, check and verify (null: forget them)",
                          k);
            rc = -1;
        }
        if (rc == 0 && json_is_object(v) && panel_ok(lim, k, v, rs) != 0)
            rc = -1;
        if (rc == 0 && json_is_null(v))
            json_object_del(d, k);
        else if (rc == 0)
            json_object_set(d, k, v);
    }
    json_decref(lim);
    return rc;
}

void mtx_srv_prefs_get(struct mt_server *s, struct srv_req *rq,
                       struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    json_t *d = NULL;
    enum mt_status st = prefs_load(s, rq, &d, &err);

    (void)id;
    if (st != MT_OK)
        mtx_srv_fail(rs, st, &err);
    else
        mtx_srv_json(rs, 200, json_pack("{s:o}", "settings", d));
}

/* Stores d for the caller. */
static enum mt_status prefs_store(struct mt_server *s, const struct srv_req *rq,
                                  const json_t *d, struct mt_error *err)
{
    struct srv_lease *l = NULL;
    char key[64];
    char *t = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    enum mt_status st = t ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    prefs_key(rq, key, sizeof key);
    if (st == MT_OK && strlen(t) >= PREFS_MAX)
        st = mt_fail(err, MT_ELIMIT, "the settings are over %d bytes",
                     PREFS_MAX - 1);
    if (st == MT_OK)
        st = mtx_srv_lease_get(s, &l, err);
    if (st == MT_OK)
        st = mt_setting_put(l->state, key, t, err);
    mtx_srv_lease_put(s, l);
    mtx_json_text_free(t);
    return st;
}

void mtx_srv_prefs_put(struct mt_server *s, struct srv_req *rq,
                       struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    json_t *b = NULL, *d = NULL;
    enum mt_status st;

    (void)id;
    if (mtx_srv_body_json(rq, rs, &b) != 0)
        return;
    st = prefs_load(s, rq, &d, &err);
    if (st == MT_OK && merge(s, b, d, rs) == 0) {
        st = prefs_store(s, rq, d, &err);
        if (st == MT_OK)
            mtx_srv_json(rs, 200, json_pack("{s:O}", "settings", d));
    }
    if (st != MT_OK)
        mtx_srv_fail(rs, st, &err);
    json_decref(b);
    json_decref(d);
}
