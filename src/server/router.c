/* Routing: the /v1 route table with each route's access level, the
 * checks every request passes (authentication, CSRF, role, rate limit),
 * the embedded static files, and the JSON response helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "medtrust/core.h"
#include "server/srv_int.h"
#include "server/ui_assets.h"

enum access {
    OPEN,  /* no account needed */
    USER,  /* a session or a token */
    ADMIN, /* ... of an admin */
};

struct route {
    const char *method;
    const char *pattern; /* "{id}" matches a positive integer */
    enum access access;
    int test_only; /* only with params.test_routes */
    srv_handler fn;
    int big; /* takes bodies up to params.max_body, else SMALL_BODY */
    /* GET /v1/openapi.json's: the request members (a section of GET
     * /v1/limits, from the tables the route's parser reads; NULL: none)
     * and the statuses the handler itself answers beside the router's */
    const char *body;
    const char *errs;
    const struct srv_text *text; /* its required text member, or NULL */
};

/* Bodies of the routes that take no note or submission: credentials,
 * queries, settings. A larger one is refused from its Content-Length. */
#define SMALL_BODY ((size_t)64 << 10)

static const struct route routes[] = {
    {"GET", "/v1/health", OPEN, 0, mtx_srv_health, 0, NULL, "", NULL},
    {"POST", "/v1/login", OPEN, 0, mtx_srv_login, 0, NULL, "400 401 415 429",
     NULL},
    {"POST", "/v1/register", OPEN, 0, mtx_srv_register, 0, NULL, "400 403 409",
     NULL},
    {"POST", "/v1/logout", USER, 0, mtx_srv_logout, 0, NULL, "", NULL},
    {"GET", "/v1/me", USER, 0, mtx_srv_me, 0, NULL, "", NULL},
    {"GET", "/v1/me/settings", USER, 0, mtx_srv_prefs_get, 0, NULL, "", NULL},
    {"PUT", "/v1/me/settings", USER, 0, mtx_srv_prefs_put, 0, NULL, "400",
     NULL},
    {"GET", "/v1/session", OPEN, 0, mtx_srv_session, 0, NULL, "", NULL},
    {"GET", "/v1/openapi.json", OPEN, 0, mtx_srv_openapi, 0, NULL, "", NULL},
    {"GET", "/v1/limits", USER, 0, mtx_srv_limits, 0, NULL, "", NULL},
    {"GET", "/v1/tokens", USER, 0, mtx_srv_tokens_list, 0, NULL, "", NULL},
    {"POST", "/v1/tokens", USER, 0, mtx_srv_token_create, 0, NULL, "400", NULL},
    {"DELETE", "/v1/tokens/{id}", USER, 0, mtx_srv_token_revoke, 0, NULL, "404",
     NULL},
    {"GET", "/v1/users", ADMIN, 0, mtx_srv_users, 0, NULL, "", NULL},
    {"GET", "/v1/settings", ADMIN, 0, mtx_srv_settings_get, 0, NULL, "", NULL},
    {"PUT", "/v1/settings", ADMIN, 0, mtx_srv_settings_put, 0, NULL, "400",
     NULL},
    {"POST", "/v1/search", USER, 0, mtx_srv_search, 0, "search", "400 503",
     &mtx_srv_search_text},
    {"POST", "/v1/score", USER, 0, mtx_srv_score, 1, NULL, "400", NULL},
    {"POST", "/v1/check", USER, 0, mtx_srv_check, 1, "check", "400 503",
     &mtx_srv_check_text},
    {"POST", "/v1/ask", USER, 0, mtx_srv_ask, 0, "ask", "400 503",
     &mtx_srv_ask_text},
    {"POST", "/v1/verify", USER, 0, mtx_srv_verify, 0, "verify", "400 503",
     &mtx_srv_verify_text},
    {"POST", "/v1/batch", USER, 0, mtx_srv_batch, 1, "batch", "400 503",
     &mtx_srv_batch_text},
    {"POST", "/v1/runs/{id}/resume", USER, 0, mtx_srv_batch_resume, 0, NULL,
     "404 409 503", NULL},
    {"GET", "/v1/runs", USER, 0, mtx_srv_runs_list, 0, NULL, "", NULL},
    {"GET", "/v1/runs/{id}", USER, 0, mtx_srv_run_get, 0, NULL, "404", NULL},
    {"GET", "/v1/runs/{id}/events", USER, 0, mtx_srv_run_events, 0, NULL,
     "404 503", NULL},
    {"POST", "/v1/runs/{id}/cancel", USER, 0, mtx_srv_run_cancel, 0, NULL,
     "404 409", NULL},
    {"GET", "/v1/runs/{id}/report", USER, 0, mtx_srv_run_report, 0, NULL, "404",
     NULL},
    {"GET", "/v1/runs/{id}/submission", USER, 0, mtx_srv_batch_submission, 0,
     NULL, "404", NULL},
    {"GET", "/v1/runs/{id}/traces", USER, 0, mtx_srv_batch_traces, 0, NULL,
     "404", NULL},
    {"GET", "/v1/models", USER, 0, mtx_srv_models, 0, NULL, "", NULL},
    {"GET", "/v1/sources", USER, 0, mtx_srv_sources, 0, NULL, "", NULL},
    {"POST", "/v1/jobs/sleep", USER, 1, mtx_srv_sleep_job, 0, NULL, "400 503",
     NULL},
};

#define NROUTES (sizeof routes / sizeof routes[0])

/* ==== Responses ==== */

void mtx_srv_resp_free(struct srv_resp *rs)
{
    mt_free(rs->body);
    rs->body = NULL;
    rs->len = 0;
}

void mtx_srv_json(struct srv_resp *rs, unsigned status, json_t *o)
{
    static const char oom[] = "{\"error\":\"out of memory\"}";
    size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
    size_t n = o ? json_dumpb(o, NULL, 0, flags) : 0;

    mtx_srv_resp_free(rs);
    rs->type = NULL;
    rs->body = n ? mt_malloc(n + 1) : NULL;
    if (rs->body && json_dumpb(o, rs->body, n, flags) == n) {
        rs->body[n] = '\0';
        rs->len = n;
        rs->status = status;
    } else {
        mt_free(rs->body);
        rs->body = mt_strdup(oom);
        rs->len = rs->body ? sizeof oom - 1 : 0;
        rs->status = 500;
    }
    json_decref(o);
}

void mtx_srv_error(struct srv_resp *rs, unsigned status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mtx_srv_json(rs, status, json_pack("{s:s}", "error", msg));
}

void mtx_srv_fail(struct srv_resp *rs, enum mt_status st,
                  const struct mt_error *err)
{
    unsigned code = 500;
    const char *msg = err && err->msg[0] ? err->msg : mt_status_str(st);

    if (st == MT_EINVAL || st == MT_EPARSE)
        code = 400;
    else if (st == MT_ENOTFOUND)
        code = 404;
    else if (st == MT_ELIMIT)
        code = 413;
    else if (st == MT_EUNSUPPORTED)
        code = 501;
    else if (st == MT_ECANCELED || st == MT_EIO)
        code = 503; /* EIO: a backend (the shared state) is away */
    else if (st == MT_EWRITE)
        code = 507; /* Insufficient Storage: the disk is full or failing */
    if (code >= 500)
        mt_log(MT_LOG_ERROR, "server: %s", msg);
    mtx_srv_error(rs, code, "%s", msg);
}

int mtx_srv_body_json(const struct srv_req *rq, struct srv_resp *rs,
                      json_t **out)
{
    json_error_t e;
    json_t *o;

    if (rq->body_len == 0) {
        mtx_srv_error(rs, 400, "the request needs a JSON object body");
        return -1;
    }
    o = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &e);
    if (!o) {
        mtx_srv_error(rs, 400, "malformed JSON at line %d column %d: %s",
                      e.line, e.column, e.text);
        return -1;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        mtx_srv_error(rs, 400, "the body must be a JSON object");
        return -1;
    }
    *out = o;
    return 0;
}

/* ==== Static files ==== */

/* The UI keeps every script and style sheet in its own file, so the
 * policy allows no inline code; reports are framed from /v1 (same
 * origin), nothing else is. */
static const char ui_csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

/* Serves an embedded UI file. Only exact names of the embedded set are
 * served, so nothing on disk is reachable; '..' is refused outright. */
static void serve_static(struct srv_req *rq, struct srv_resp *rs)
{
    const char *path = rq->path;
    size_t i;

    if (strstr(path, "..") || strchr(path, '\\') || strstr(path, "//")) {
        mtx_srv_error(rs, 400, "invalid path");
        return;
    }
    if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
        mtx_srv_error(rs, 405, "method not allowed");
        return;
    }
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    else if (strcmp(path, "/login") == 0)
        path = "/login.html";
    else if (strcmp(path, "/favicon.ico") == 0)
        path = "/favicon.svg";
    for (i = 0; i < mtx_ui_asset_count; i++) {
        if (strcmp(mtx_ui_assets[i].path, path) != 0)
            continue;
        rs->status = 200;
        rs->csp = ui_csp;
        rs->type = mtx_ui_assets[i].type;
        rs->static_body = mtx_ui_assets[i].data;
        rs->len = mtx_ui_assets[i].len;
        return;
    }
    mtx_srv_error(rs, 404, "not found");
}

/* ==== Matching ==== */

/* Matches 'path' against 'pat'; "{id}" takes 1 to 18 digits into *id. */
static int match(const char *pat, const char *path, int64_t *id)
{
    while (*pat && *path) {
        if (strncmp(pat, "{id}", 4) == 0) {
            char *end = NULL;
            size_t nd = strspn(path, "0123456789");
            if (nd == 0 || nd > 18 || path[0] == '0')
                return 0;
            *id = (int64_t)strtoll(path, &end, 10);
            path = end;
            pat += 4;
            continue;
        }
        if (*pat++ != *path++)
            return 0;
    }
    return *pat == '\0' && *path == '\0';
}

/* Finds the route; *path_ok is set when some route has this path. */
static const struct route *find_route(const struct mt_server *s,
                                      const struct srv_req *rq, int64_t *id,
                                      int *path_ok)
{
    size_t i;

    *path_ok = 0;
    for (i = 0; i < NROUTES; i++) {
        if (routes[i].test_only && !s->p.test_routes)
            continue;
        if (!match(routes[i].pattern, rq->path, id))
            continue;
        *path_ok = 1;
        if (strcmp(routes[i].method, rq->method) == 0)
            return &routes[i];
    }
    return NULL;
}

/* ==== Checks ==== */

static int is_safe_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

/* A state-changing request on a session cookie must carry the session's
 * CSRF token in X-CSRF-Token; tokens (Bearer) need none. */
static int csrf_ok(const struct srv_req *rq)
{
    const char *h = rq->header(rq->ctx, "X-CSRF-Token");

    if (rq->via_token || is_safe_method(rq->method))
        return 1;
    return h && strlen(h) == MT_SECRET_SIZE - 1 &&
           sodium_memcmp(h, rq->csrf, MT_SECRET_SIZE - 1) == 0;
}

static int rate_ok(struct mt_server *s, const struct srv_req *rq,
                   const struct route *r, struct srv_resp *rs)
{
    char key[96];
    unsigned wait;

    if (r->fn == mtx_srv_health)
        return 1;
    if (rq->authed)
        snprintf(key, sizeof key, "u:%lld", (long long)rq->user.id);
    else
        snprintf(key, sizeof key, "ip:%s", rq->remote ? rq->remote : "");
    wait = mtx_srv_rate_take(s, key);
    if (wait == 0)
        return 1;
    rs->retry_after = wait;
    mtx_srv_error(rs, 429, "too many requests: slow down and retry in %u s",
                  wait);
    return 0;
}

static int access_ok(struct mt_server *s, struct srv_req *rq,
                     const struct route *r, struct srv_resp *rs)
{
    if (r->access == OPEN)
        return 1;
    if (mtx_srv_authenticate(s, rq, rs) != 0)
        return 0;
    if (!csrf_ok(rq)) {
        mtx_srv_error(rs, 403,
                      "missing or wrong X-CSRF-Token header (the "
                      "csrf_token from /v1/login or /v1/me)");
        return 0;
    }
    if (r->access == ADMIN && rq->user.role != MT_ROLE_ADMIN) {
        mtx_srv_error(rs, 403, "this needs an admin account");
        return 0;
    }
    return 1;
}

int mtx_srv_screen(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   size_t *max_body)
{
    const struct route *r;
    int64_t id = 0;
    int path_ok = 0;

    *max_body = SMALL_BODY < s->p.max_body ? SMALL_BODY : s->p.max_body;
    if (strncmp(rq->path, "/v1/", 4) != 0 && strcmp(rq->path, "/v1") != 0)
        return 0; /* static files: the full answer says 400, 404 or 405 */
    r = find_route(s, rq, &id, &path_ok);
    if (!r) {
        if (path_ok)
            mtx_srv_error(rs, 405, "method %s not allowed on %s", rq->method,
                          rq->path);
        else
            mtx_srv_error(rs, 404, "no API route %s", rq->path);
        return -1;
    }
    if (!access_ok(s, rq, r, rs))
        return -1;
    if (r->big)
        *max_body = s->p.max_body;
    return 0;
}

void mtx_srv_handle(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs)
{
    const struct route *r;
    int64_t id = 0;
    int path_ok = 0;

    rs->status = 500;
    if (strncmp(rq->path, "/v1/", 4) != 0 && strcmp(rq->path, "/v1") != 0) {
        serve_static(rq, rs);
        return;
    }
    r = find_route(s, rq, &id, &path_ok);
    if (!r) {
        if (path_ok)
            mtx_srv_error(rs, 405, "method %s not allowed on %s", rq->method,
                          rq->path);
        else
            mtx_srv_error(rs, 404, "no API route %s", rq->path);
        return;
    }
    if (!access_ok(s, rq, r, rs) || !rate_ok(s, rq, r, rs))
        return;
    r->fn(s, rq, rs, id);
}

/* ==== GET /v1/openapi.json ==== */

/* The document is the route table walked: each route's path, method,
 * access, CSRF, body limit, request members and statuses (openapi.c). */
void mtx_srv_openapi(struct mt_server *s, struct srv_req *rq,
                     struct srv_resp *rs, int64_t id)
{
    static const char *const level[] = {"open", "user", "admin"};
    json_t *limits = mtx_srv_limits_json(s);
    json_t *doc = mtx_srv_openapi_doc();
    size_t i, small = SMALL_BODY < s->p.max_body ? SMALL_BODY : s->p.max_body;

    (void)rq;
    (void)id;
    for (i = 0; doc && i < NROUTES; i++) {
        const struct route *r = &routes[i];
        struct srv_op op = {r->method,        r->pattern,
                            level[r->access], r->big ? s->p.max_body : small,
                            r->body,          r->text,
                            r->errs,          r->fn != mtx_srv_health};

        if (!r->test_only || s->p.test_routes)
            mtx_srv_openapi_add(doc, &op, limits);
    }
    json_decref(limits);
    mtx_srv_json(rs, 200, doc);
}
