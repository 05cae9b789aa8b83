/* Accounts over HTTP: authentication (Bearer tokens and session cookies),
 * login, logout, registration, API tokens, and the admin's users and
 * settings routes. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "medtrust/core.h"
#include "server/srv_int.h"

#define COOKIE "mt_session"

/* ==== Authentication ==== */

/* Copies the mt_session cookie's value (64 hex digits) into sid. */
static int cookie_sid(const char *h, char sid[MT_SECRET_SIZE])
{
    const char *p = h;
    size_t n;

    while (p && *p) {
        p += strspn(p, " ;");
        if (strncmp(p, COOKIE "=", sizeof COOKIE) == 0) {
            p += sizeof COOKIE;
            n = strcspn(p, "; ");
            if (n != MT_SECRET_SIZE - 1 || strspn(p, "0123456789abcdef") < n)
                return 0;
            memcpy(sid, p, n);
            sid[n] = '\0';
            return 1;
        }
        p = strchr(p, ';');
    }
    return 0;
}

static int auth_token(struct mt_server *s, struct srv_req *rq, const char *tok,
                      struct srv_resp *rs)
{
    struct srv_lease *l = NULL;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    if (st == MT_OK && strlen(tok) < MT_TOKEN_SIZE)
        st = mt_token_lookup(l->state, tok, &rq->user, &rq->token_id, &err);
    else if (st == MT_OK)
        st = MT_ENOTFOUND;
    mtx_srv_lease_put(s, l);
    if (st == MT_ENOTFOUND) {
        mtx_srv_error(rs, 401, "invalid, revoked or expired API token");
        return -1;
    }
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return -1;
    }
    rq->authed = 1;
    rq->via_token = 1;
    return 0;
}

static int auth_session(struct mt_server *s, struct srv_req *rq,
                        struct srv_resp *rs)
{
    struct srv_lease *l = NULL;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    if (st == MT_OK)
        st = mt_session_lookup(l->state, rq->sid, &rq->user, rq->csrf, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_ENOTFOUND) {
        mtx_srv_error(rs, 401, "session expired or ended: log in again");
        return -1;
    }
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return -1;
    }
    rq->authed = 1;
    return 0;
}

int mtx_srv_authenticate(struct mt_server *s, struct srv_req *rq,
                         struct srv_resp *rs)
{
    const char *a = rq->header(rq->ctx, "Authorization");
    const char *c = rq->header(rq->ctx, "Cookie");

    if (a && strncmp(a, "Bearer ", 7) == 0)
        return auth_token(s, rq, a + 7 + strspn(a + 7, " "), rs);
    if (a) {
        mtx_srv_error(rs, 401, "Authorization must be 'Bearer TOKEN'");
        return -1;
    }
    if (c && cookie_sid(c, rq->sid))
        return auth_session(s, rq, rs);
    mtx_srv_error(rs, 401,
                  "authentication required: log in (POST "
                  "/v1/login) or send Authorization: Bearer TOKEN");
    return -1;
}

/* ==== Helpers ==== */

/* Reads the string members 'a' and 'b' of the body; 400 when missing. */
static int two_strings(const struct srv_req *rq, struct srv_resp *rs,
                       json_t **o, const char *a, const char **va,
                       const char *b, const char **vb)
{
    if (mtx_srv_body_json(rq, rs, o) != 0)
        return -1;
    *va = json_string_value(json_object_get(*o, a));
    *vb = json_string_value(json_object_get(*o, b));
    if (*va && *vb)
        return 0;
    mtx_srv_error(rs, 400, "the body needs string members \"%s\" and \"%s\"", a,
                  b);
    json_decref(*o);
    *o = NULL;
    return -1;
}

static json_t *user_json(const struct mt_user *u)
{
    return json_pack("{s:I,s:s,s:s,s:I}", "id", (json_int_t)u->id, "username",
                     u->name, "role", mt_role_str(u->role), "created_at",
                     (json_int_t)u->created_at);
}

static void set_cookie(const struct mt_server *s, struct srv_resp *rs,
                       const char *sid, long max_age)
{
    snprintf(rs->cookie, sizeof rs->cookie,
             COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%ld%s",
             sid, max_age, s->p.secure_cookies ? "; Secure" : "");
}

/* ==== Login, logout, registration ==== */

/* Origin "scheme://HOST" names the Host this request was sent to. */
static int same_origin(const char *origin, const char *host)
{
    const char *p = strstr(origin, "://");

    return p && host && strcasecmp(p + 3, host) == 0;
}

/* Login and registration take only JSON, and only from this origin (or
 * with no Origin, as curl and the CLI send): a foreign page can neither
 * post a form nor a text/plain fetch that logs its visitor into the
 * attacker's account (login CSRF). Returns 0, or -1 with 415 or 403. */
static int form_ok(const struct srv_req *rq, struct srv_resp *rs)
{
    const char *ct = rq->header(rq->ctx, "Content-Type");
    const char *origin = rq->header(rq->ctx, "Origin");

    if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
        (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        mtx_srv_error(rs, 415, "Content-Type must be application/json");
        return -1;
    }
    if (origin && !same_origin(origin, rq->header(rq->ctx, "Host"))) {
        mtx_srv_error(rs, 403,
                      "a cross-origin request (Origin %.100s) cannot "
                      "log in or register",
                      origin);
        return -1;
    }
    return 0;
}

/* 429 while the account or the address is locked after wrong passwords. */
static int login_locked(struct mt_server *s, const struct srv_req *rq,
                        const char *name, struct srv_resp *rs)
{
    unsigned wait = mtx_srv_login_wait(s, name, rq->remote);

    if (!wait)
        return 0;
    rs->retry_after = wait;
    mtx_srv_error(rs, 429,
                  "too many wrong passwords: logins for this account or "
                  "address are locked; retry in %u s",
                  wait);
    return 1;
}

static void login_failed(struct mt_server *s, struct srv_lease *l,
                         struct srv_req *rq, const char *name,
                         struct srv_resp *rs)
{
    unsigned lock = mtx_srv_login_failed(s, name, rq->remote);

    mtx_srv_audit(s, l, rq, "login_failed",
                  json_pack("{s:s}", "username", name));
    if (lock)
        mtx_srv_audit(
            s, l, rq, "login_locked",
            json_pack("{s:s,s:i}", "username", name, "seconds", (int)lock));
    mtx_srv_error(rs, 401, "wrong user name or password");
}

static void login_ok(struct mt_server *s, struct srv_lease *l,
                     struct srv_req *rq, struct srv_resp *rs)
{
    struct mt_error err = {MT_OK, ""};
    char sid[MT_SECRET_SIZE], csrf[MT_SECRET_SIZE];
    enum mt_status st = mt_session_create(
        l->state, rq->user.id, (int64_t)s->p.session_ttl_s, sid, csrf, &err);

    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return;
    }
    rq->authed = 1;
    mtx_srv_audit(s, l, rq, "login", NULL);
    set_cookie(s, rs, sid, (long)s->p.session_ttl_s);
    mtx_srv_json(rs, 200,
                 json_pack("{s:s,s:s,s:s}", "csrf_token", csrf, "username",
                           rq->user.name, "role", mt_role_str(rq->user.role)));
}

void mtx_srv_login(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    const char *name, *pw;
    json_t *o = NULL;
    enum mt_status st;

    (void)id;
    if (form_ok(rq, rs) != 0 ||
        two_strings(rq, rs, &o, "username", &name, "password", &pw) != 0)
        return;
    if (login_locked(s, rq, name, rs)) { /* no password is even tried */
        json_decref(o);
        return;
    }
    st = mtx_srv_lease_get(s, &l, &err);
    if (st == MT_OK)
        st = mt_user_verify(l->state, name, pw, &rq->user, &err);
    if (st == MT_OK) {
        mtx_srv_login_ok(s, name, rq->remote);
        login_ok(s, l, rq, rs);
    } else if (st == MT_ENOTFOUND) {
        login_failed(s, l, rq, name, rs);
    } else {
        mtx_srv_fail(rs, st, &err);
    }
    mtx_srv_lease_put(s, l);
    json_decref(o);
}

void mtx_srv_logout(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    enum mt_status st = MT_OK;

    (void)id;
    st = mtx_srv_lease_get(s, &l, &err);
    /* with a Bearer token, logging out revokes that token */
    if (st == MT_OK && rq->via_token)
        st = mt_token_revoke(l->state, rq->token_id, rq->user.id, &err);
    else if (st == MT_OK)
        st = mt_session_delete(l->state, rq->sid, &err);
    if (st == MT_OK)
        mtx_srv_audit(s, l, rq, rq->via_token ? "token_revoke" : "logout",
                      rq->via_token ? json_pack("{s:I}", "token_id",
                                                (json_int_t)rq->token_id)
                                    : NULL);
    mtx_srv_lease_put(s, l);
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return;
    }
    set_cookie(s, rs, "", 0);
    mtx_srv_json(rs, 200, json_pack("{s:b}", "ok", 1));
}

static int registration_open(struct srv_lease *l, struct mt_error *err,
                             enum mt_status *st)
{
    char v[16] = "closed"; /* closed unless an admin or serve opened it */
    int found = 0;

    *st = mt_setting_get(l->state, "registration", v, sizeof v, &found, err);
    return *st == MT_OK && found && strcmp(v, "open") == 0;
}

void mtx_srv_register(struct mt_server *s, struct srv_req *rq,
                      struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    const char *name, *pw;
    json_t *o = NULL;
    enum mt_status st;

    if (form_ok(rq, rs) != 0 ||
        two_strings(rq, rs, &o, "username", &name, "password", &pw) != 0)
        return;
    st = mtx_srv_lease_get(s, &l, &err);
    if (st == MT_OK && !registration_open(l, &err, &st) && st == MT_OK) {
        mtx_srv_error(rs, 403, "registration is closed: ask an admin");
    } else if (st == MT_OK) {
        st = mt_user_add(l->state, name, pw, MT_ROLE_USER, &id, &err);
        if (st == MT_OK &&
            mt_user_get(l->state, name, &rq->user, &err) == MT_OK) {
            rq->authed = 1;
            mtx_srv_audit(s, l, rq, "register", NULL);
            mtx_srv_json(rs, 201, user_json(&rq->user));
        }
    }
    if (st != MT_OK)
        mtx_srv_fail(rs, st, &err);
    mtx_srv_lease_put(s, l);
    json_decref(o);
}

void mtx_srv_me(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                int64_t id)
{
    json_t *o = user_json(&rq->user);

    (void)s;
    (void)id;
    if (o && !rq->via_token)
        json_object_set_new(o, "csrf_token", json_string(rq->csrf));
    mtx_srv_json(rs, 200, o);
}

/* ==== API tokens ==== */

static enum mt_status token_row(const struct mt_token_info *t, void *user)
{
    json_t *o =
        json_pack("{s:I,s:s,s:I,s:o}", "id", (json_int_t)t->id, "name",
                  t->name ? t->name : "", "created_at",
                  (json_int_t)t->created_at, "expires_at",
                  t->expires_at ? json_integer(t->expires_at) : json_null());

    if (!o || json_array_append_new(user, o) != 0)
        return MT_ENOMEM;
    return MT_OK;
}

void mtx_srv_tokens_list(struct mt_server *s, struct srv_req *rq,
                         struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    json_t *a = json_array();
    enum mt_status st = a ? mtx_srv_lease_get(s, &l, &err) : MT_ENOMEM;

    (void)id;
    if (st == MT_OK)
        st = mt_token_list(l->state, rq->user.id, token_row, a, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK)
        mtx_srv_json(rs, 200, json_pack("{s:o}", "tokens", a));
    else
        mtx_srv_fail(rs, st, &err);
    if (st != MT_OK)
        json_decref(a);
}

/* "expires_in_s": optional, 1 s to 10 years; absent or null: never. */
static int token_ttl(json_t *o, json_int_t *ttl, struct srv_resp *rs)
{
    json_t *v = o ? json_object_get(o, "expires_in_s") : NULL;

    if (!v || json_is_null(v))
        return 0;
    *ttl = json_is_integer(v) ? json_integer_value(v) : 0;
    if (*ttl >= 1 && *ttl <= (json_int_t)315360000)
        return 0;
    mtx_srv_error(rs, 400,
                  "\"expires_in_s\" must be an integer of seconds, "
                  "1 to 315360000 (or null: never)");
    return -1;
}

void mtx_srv_token_create(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    char tok[MT_TOKEN_SIZE];
    json_t *o = NULL;
    const char *name = "";
    json_int_t ttl = 0;
    enum mt_status st;

    if (rq->body_len && mtx_srv_body_json(rq, rs, &o) != 0)
        return;
    if (o && json_string_value(json_object_get(o, "name")))
        name = json_string_value(json_object_get(o, "name"));
    if (token_ttl(o, &ttl, rs) != 0) {
        json_decref(o);
        return;
    }
    st = mtx_srv_lease_get(s, &l, &err);
    if (st == MT_OK)
        st = mt_token_create(l->state, rq->user.id, name, (int64_t)ttl, &id,
                             tok, &err);
    if (st == MT_OK) {
        mtx_srv_audit(s, l, rq, "token_create",
                      json_pack("{s:I}", "token_id", (json_int_t)id));
        mtx_srv_json(rs, 201,
                     json_pack("{s:I,s:s,s:s}", "id", (json_int_t)id, "token",
                               tok, "name", name));
    } else {
        mtx_srv_fail(rs, st, &err);
    }
    mtx_srv_lease_put(s, l);
    json_decref(o);
}

void mtx_srv_token_revoke(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    int64_t owner = rq->user.role == MT_ROLE_ADMIN ? 0 : rq->user.id;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    if (st == MT_OK)
        st = mt_token_revoke(l->state, id, owner, &err);
    if (st == MT_OK) {
        mtx_srv_audit(s, l, rq, "token_revoke",
                      json_pack("{s:I}", "token_id", (json_int_t)id));
        mtx_srv_json(rs, 200, json_pack("{s:I}", "revoked", (json_int_t)id));
    } else {
        mtx_srv_fail(rs, st, &err);
    }
    mtx_srv_lease_put(s, l);
}

/* ==== Admin: users and settings ==== */

static enum mt_status user_row(const struct mt_user *u, void *user)
{
    json_t *o = user_json(u);

    if (!o || json_array_append_new(user, o) != 0)
        return MT_ENOMEM;
    return MT_OK;
}

void mtx_srv_users(struct mt_server *s, struct srv_req *rq, struct srv_resp *rs,
                   int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    json_t *a = json_array();
    enum mt_status st = a ? mtx_srv_lease_get(s, &l, &err) : MT_ENOMEM;

    (void)rq;
    (void)id;
    if (st == MT_OK)
        st = mt_user_list(l->state, user_row, a, &err);
    mtx_srv_lease_put(s, l);
    if (st == MT_OK) {
        mtx_srv_json(rs, 200, json_pack("{s:o}", "users", a));
        return;
    }
    json_decref(a);
    mtx_srv_fail(rs, st, &err);
}

static void settings_reply(struct mt_server *s, struct srv_resp *rs)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);
    int open = st == MT_OK && registration_open(l, &err, &st);

    mtx_srv_lease_put(s, l);
    if (st != MT_OK) {
        mtx_srv_fail(rs, st, &err);
        return;
    }
    mtx_srv_json(rs, 200,
                 json_pack("{s:s}", "registration", open ? "open" : "closed"));
}

void mtx_srv_settings_get(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    (void)rq;
    (void)id;
    settings_reply(s, rs);
}

void mtx_srv_settings_put(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct srv_lease *l = NULL;
    json_t *o = NULL;
    const char *reg;
    enum mt_status st;

    (void)id;
    if (mtx_srv_body_json(rq, rs, &o) != 0)
        return;
    reg = json_string_value(json_object_get(o, "registration"));
    if (!reg || (strcmp(reg, "open") != 0 && strcmp(reg, "closed") != 0)) {
        mtx_srv_error(rs, 400,
                      "\"registration\" must be \"open\" or "
                      "\"closed\"");
        json_decref(o);
        return;
    }
    st = mtx_srv_lease_get(s, &l, &err);
    if (st == MT_OK)
        st = mt_setting_put(l->state, "registration", reg, &err);
    if (st == MT_OK)
        mtx_srv_audit(s, l, rq, "settings",
                      json_pack("{s:s}", "registration", reg));
    mtx_srv_lease_put(s, l);
    json_decref(o);
    if (st != MT_OK)
        mtx_srv_fail(rs, st, &err);
    else
        settings_reply(s, rs);
}
