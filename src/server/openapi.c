/* GET /v1/openapi.json: an OpenAPI 3.1 document made from the route table
 * (router.c walks it: path, method, access, body limit, statuses) and the
 * request-field tables, taken from GET /v1/limits' object, which is made
 * from the same tables the routes' parsers read (fields.c). Nothing here
 * names a bound: a changed table changes the document. */
#include <stdio.h>
#include <string.h>

#include "batch/folder.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

static const char *const status_text[][2] = {
    {"400", "a member is missing, malformed or out of its bounds (named)"},
    {"401", "no valid session cookie or Bearer token"},
    {"403", "missing or wrong X-CSRF-Token, or an admin route"},
    {"404", "no such object (or path)"},
    {"409", "the object is in a state that forbids this"},
    {"413", "the body is larger than x-max-body-bytes"},
    {"415", "the body is not JSON"},
    {"429", "rate limited: retry after the Retry-After header's seconds"},
    {"503", "a model or the job queue is unavailable"},
};

json_t *mtx_srv_openapi_doc(void)
{
    return json_pack(
        "{s:s,s:{s:s,s:s,s:s},s:{},s:{s:{s:{s:s,s:s},s:{s:s,s:s,s:s}},"
        "s:{s:{s:s,s:{s:{s:s}},s:[s]}}}}",
        "openapi", "3.1.0", "info", "title", "medtrust", "version", "1",
        "description",
        "The medtrust /v1 API, generated from the server's route table "
        "and request-field tables.",
        "paths", "components", "securitySchemes", "bearer", "type", "http",
        "scheme", "bearer", "session", "type", "apiKey", "in", "cookie", "name",
        "mt_session", "schemas", "Error", "type", "object", "properties",
        "error", "type", "string", "required", "error");
}

/* A bound as the schema writes it: whole for an integer member. */
static json_t *bound(json_t *f, const char *key, int integer)
{
    double x = json_number_value(json_object_get(f, key));

    return integer ? json_integer((json_int_t)x) : json_real(x);
}

/* A member of GET /v1/limits ({min, max, default, integer, what}) as a
 * JSON Schema. */
static json_t *number_schema(json_t *f)
{
    int integer = json_is_true(json_object_get(f, "integer"));

    return json_pack(
        "{s:s,s:o,s:o,s:o,s:O}", "type", integer ? "integer" : "number",
        "minimum", bound(f, "min", integer), "maximum",
        bound(f, "max", integer), "default", bound(f, "default", integer),
        "description", json_object_get(f, "what"));
}

/* Adds the members of 'fields' (all, or those named in 'only'). */
static void add_numbers(json_t *props, json_t *fields, const char *const *only,
                        size_t n)
{
    const char *k;
    json_t *f;
    size_t i;

    json_object_foreach(fields, k, f)
    {
        for (i = 0; only && i < n && strcmp(only[i], k) != 0; i++)
            ;
        if (!only || i < n)
            json_object_set_new(props, k, number_schema(f));
    }
}

static void add_string(json_t *props, const char *name, json_t *max_bytes,
                       const char *what)
{
    json_t *o = json_pack("{s:s,s:s}", "type", "string", "description", what);

    if (o && max_bytes)
        json_object_set_new(o, "maxLength", json_copy(max_bytes));
    json_object_set_new(props, name, o);
}

/* A text member's row (the one its parser reads) as a JSON Schema; the
 * lengths are bytes, as the server counts them. */
static void add_text(json_t *props, const struct srv_text *t)
{
    json_t *o =
        json_pack("{s:s,s:s}", "type", "string", "description", t->what);

    if (o && t->max)
        json_object_set_new(o, "maxLength", json_integer((json_int_t)t->max));
    if (o && t->min)
        json_object_set_new(o, "minLength", json_integer((json_int_t)t->min));
    json_object_set_new(props, t->name, o);
}

/* The texts a section's route reads beside its numeric tables: its own
 * row, the metadata filters' rows (not batch), "source" and "strategy". */
static void add_texts(json_t *props, const struct srv_op *op, json_t *limits)
{
    json_t *src =
        json_object_get(json_object_get(limits, "ask"), "source_bytes");
    int batch = strcmp(op->body, "batch") == 0;
    size_t i;

    if (op->text)
        add_text(props, op->text);
    for (i = 0; !batch && i < 3; i++)
        add_text(props, &mtx_srv_filter_texts[i]);
    if (batch || strcmp(op->body, "check") == 0)
        add_string(props, "strategy", NULL, "a check strategy");
    if (!batch && strcmp(op->body, "search") != 0)
        add_string(props, "source", src, "the source searched (bytes)");
}

/* The request body of section 'key' of GET /v1/limits: its "fields"
 * (batch: the check settings it takes; verify: also ask's weights and
 * years, which its parser reads from the same table) and its texts. */
static json_t *body_schema(const struct srv_op *op, json_t *limits)
{
    static const char *const wy[] = {"w_lex", "w_sem", "year_from", "year_to"};
    json_t *props = json_object();
    const char *key = op->body;

    if (strcmp(key, "batch") == 0)
        add_numbers(
            props, json_object_get(json_object_get(limits, "check"), "fields"),
            (const char *const *)mtx_bfolder_settings, MTX_BFOLDER_NSET);
    else
        add_numbers(props,
                    json_object_get(json_object_get(limits, key), "fields"),
                    NULL, 0);
    if (strcmp(key, "verify") == 0)
        add_numbers(props,
                    json_object_get(json_object_get(limits, "ask"), "fields"),
                    wy, 4);
    add_texts(props, op, limits);
    return json_pack("{s:{s:{s:{s:s,s:o,s:[s?]}}}}", "content",
                     "application/json", "schema", "type", "object",
                     "properties", props, "required",
                     op->text && op->text->required ? op->text->name : NULL);
}

static void add_status(json_t *resp, const char *code)
{
    size_t i;

    for (i = 0; i < sizeof status_text / sizeof status_text[0]; i++)
        if (strcmp(status_text[i][0], code) == 0)
            json_object_set_new(
                resp, code,
                json_pack("{s:s,s:{s:{s:{s:s}}}}", "description",
                          status_text[i][1], "content", "application/json",
                          "schema", "$ref", "#/components/schemas/Error"));
}

/* The statuses op can answer: the router's (from its access, body and
 * path) and the handler's own (op->errs). */
static json_t *responses(const struct srv_op *op)
{
    json_t *r = json_pack("{s:{s:s}}", "2XX", "description", "success");
    int body =
        strcmp(op->method, "POST") == 0 || strcmp(op->method, "PUT") == 0;
    char buf[64], *tok, *save = NULL;

    if (body) {
        add_status(r, "400");
        add_status(r, "413");
    }
    if (strcmp(op->access, "open") != 0) {
        add_status(r, "401");
        if (strcmp(op->access, "admin") == 0 || strcmp(op->method, "GET") != 0)
            add_status(r, "403");
    }
    if (strstr(op->pattern, "{id}"))
        add_status(r, "404");
    if (op->rate_limited)
        add_status(r, "429");
    snprintf(buf, sizeof buf, "%s", op->errs ? op->errs : "");
    for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        add_status(r, tok);
    return r;
}

void mtx_srv_openapi_add(json_t *doc, const struct srv_op *op, json_t *limits)
{
    json_t *paths = json_object_get(doc, "paths");
    json_t *item = json_object_get(paths, op->pattern);
    int open = strcmp(op->access, "open") == 0;
    char m[8];
    json_t *o;
    size_t i;

    for (i = 0; i < sizeof m - 1 && op->method[i]; i++)
        m[i] = (char)(op->method[i] - 'A' + 'a');
    m[i] = '\0';
    if (!item) {
        item = json_object();
        json_object_set_new(paths, op->pattern, item);
    }
    o = json_pack("{s:o,s:s,s:b,s:I,s:o}", "security",
                  open ? json_array()
                       : json_pack("[{s:[]},{s:[]}]", "bearer", "session"),
                  "x-access", op->access, "x-csrf",
                  !open && strcmp(op->method, "GET") != 0, "x-max-body-bytes",
                  (json_int_t)op->max_body, "responses", responses(op));
    if (o && strstr(op->pattern, "{id}"))
        json_object_set_new(o, "parameters",
                            json_pack("[{s:s,s:s,s:b,s:{s:s,s:i}}]", "name",
                                      "id", "in", "path", "required", 1,
                                      "schema", "type", "integer", "minimum",
                                      1));
    if (o && op->body)
        json_object_set_new(o, "requestBody", body_schema(op, limits));
    json_object_set_new(item, m, o);
}
