/* Accounts in the state (SQLite or PostgreSQL, through the one statement
 * runner of state_int.h): users (argon2id via libsodium), sessions and API
 * tokens kept as SHA-256 hashes, runs and their events, audit, settings.
 * Every statement is prepared per call: these are not hot paths. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "store/state_int.h"
#include "text/utf8.h"

/* ==== Helpers ==== */

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_ok;

static void sodium_start(void)
{
    sodium_ok = sodium_init() >= 0;
}

enum mt_status mt_accounts_init(void)
{
    pthread_once(&sodium_once, sodium_start);
    return sodium_ok ? MT_OK : MT_EINTERNAL;
}

const char *mt_role_str(enum mt_role r)
{
    return r == MT_ROLE_ADMIN ? "admin" : "user";
}

int mt_user_name_valid(const char *name)
{
    size_t i;
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > MT_USER_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

void mt_sha256_hex(const void *p, size_t n, char out[MT_SECRET_SIZE])
{
    unsigned char h[crypto_hash_sha256_BYTES];

    mt_accounts_init();
    crypto_hash_sha256(h, p, n);
    sodium_bin2hex(out, MT_SECRET_SIZE, h, sizeof h);
}

static void random_hex(char out[MT_SECRET_SIZE])
{
    unsigned char r[32];

    randombytes_buf(r, sizeof r);
    sodium_bin2hex(out, MT_SECRET_SIZE, r, sizeof r);
    sodium_memzero(r, sizeof r);
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* Reads id, name, role, created_at from columns 0..3. */
static void fill_user(const struct mtx_row *row, struct mt_user *u)
{
    const char *name = mtx_row_text(row, 1);
    const char *role = mtx_row_text(row, 2);

    memset(u, 0, sizeof *u);
    u->id = mtx_row_int(row, 0);
    snprintf(u->name, sizeof u->name, "%s", name ? name : "");
    u->role = role && strcmp(role, "admin") == 0 ? MT_ROLE_ADMIN : MT_ROLE_USER;
    u->created_at = mtx_row_int(row, 3);
}

/* Row readers for statements that give at most one row. */
struct user_out {
    struct mt_user *u;
    char *extra; /* column 4 as text, when non-NULL */
    size_t extra_n;
    int64_t *extra_int; /* column 4 as an integer, when non-NULL */
};

static enum mt_status read_user(const struct mtx_row *row, void *user)
{
    struct user_out *o = user;
    const char *x;

    fill_user(row, o->u);
    if (o->extra) {
        x = mtx_row_text(row, 4);
        snprintf(o->extra, o->extra_n, "%s", x ? x : "");
    }
    if (o->extra_int)
        *o->extra_int = mtx_row_int(row, 4);
    return MT_OK;
}

static enum mt_status read_id(const struct mtx_row *row, void *user)
{
    *(int64_t *)user = mtx_row_int(row, 0);
    return MT_OK;
}

/* MT_ENOTFOUND ("what: not found") when a lookup found no row. */
static enum mt_status found_one(enum mt_status st, const struct mtx_query *q,
                                const char *what, struct mt_error *err)
{
    if (st == MT_OK && q->rows == 0)
        return mt_fail(err, MT_ENOTFOUND, "%s: not found", what);
    return st;
}

/* ==== Users ==== */

/* User names are one account whatever their case or compatibility form
 * ("Alice", "alice", fullwidth letters): each is compared by its NFKC
 * case fold (utf8proc, text/utf8.h), and a stored name, always ASCII
 * (mt_user_name_valid), folds to SQL's lower(name). Where an older store
 * holds two names that fold alike, the exact one wins, then the oldest. */
#define USER_BY_NAME                                                           \
    " FROM users WHERE lower(name)=? ORDER BY name=? DESC, id LIMIT 1"

static enum mt_status name_key(const char *name, char **key,
                               struct mt_error *err)
{
    enum mt_status st = mtx_text_fold(name, strlen(name), key, NULL, NULL);

    if (st == MT_EPARSE) /* not UTF-8: no stored name folds to it */
        return mt_fail(err, MT_ENOTFOUND, "user: not found");
    return st == MT_OK ? MT_OK : mt_fail(err, st, "out of memory");
}

static enum mt_status check_password(const char *pw, struct mt_error *err)
{
    size_t n = pw ? strlen(pw) : 0;

    if (n < MT_PASSWORD_MIN || n > MT_PASSWORD_MAX)
        return mt_fail(err, MT_EINVAL, "a password must be %d to %d bytes long",
                       MT_PASSWORD_MIN, MT_PASSWORD_MAX);
    return MT_OK;
}

static enum mt_status hash_password(const char *pw,
                                    char out[crypto_pwhash_STRBYTES],
                                    struct mt_error *err)
{
    enum mt_status st = check_password(pw, err);

    if (st != MT_OK)
        return st;
    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    if (crypto_pwhash_str(out, pw, strlen(pw),
                          crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        return mt_fail(err, MT_ENOMEM, "password hashing: out of memory");
    return MT_OK;
}

enum mt_status mt_user_add(struct mt_state *s, const char *name,
                           const char *password, enum mt_role role, int64_t *id,
                           struct mt_error *err)
{
    char hash[crypto_pwhash_STRBYTES];
    int64_t row = 0;
    struct mtx_query q = {read_id, &row, 0, 0};
    struct mt_user u;
    enum mt_status st;

    if (!mt_user_name_valid(name))
        return mt_fail(err, MT_EINVAL,
                       "a user name is 1 to %d of A-Z a-z 0-9 . _ -",
                       MT_USER_NAME_MAX);
    if (mt_user_get(s, name, &u, NULL) == MT_OK)
        return mt_fail(err, MT_EINVAL,
                       "user '%s' already exists%s%s%s: user names are "
                       "compared without regard to case",
                       name, strcmp(u.name, name) ? " (as '" : "",
                       strcmp(u.name, name) ? u.name : "",
                       strcmp(u.name, name) ? "')" : "");
    st = hash_password(password, hash, err);
    if (st == MT_OK)
        st = mtx_state_exec(s, &q, err,
                            "INSERT INTO users(name, pwhash, role)"
                            " VALUES(?,?,?) RETURNING id",
                            "sss", name, hash, mt_role_str(role));
    if (st == MT_OK && id)
        *id = row;
    sodium_memzero(hash, sizeof hash);
    return st;
}

enum mt_status mt_user_del(struct mt_state *s, const char *name,
                           struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    struct mt_user u;
    enum mt_status st = mt_user_get(s, name, &u, NULL);

    if (st == MT_ENOTFOUND)
        return mt_fail(err, MT_ENOTFOUND, "no user '%s'", name);
    if (st == MT_OK)
        st = mtx_state_exec(s, &q, err, "DELETE FROM users WHERE id=?", "I",
                            u.id);
    if (st == MT_OK && q.changes == 0)
        return mt_fail(err, MT_ENOTFOUND, "no user '%s'", name);
    return st;
}

enum mt_status mt_user_passwd(struct mt_state *s, const char *name,
                              const char *password, struct mt_error *err)
{
    char hash[crypto_pwhash_STRBYTES];
    struct mt_user u;
    enum mt_status st = mt_user_get(s, name, &u, err);

    if (st == MT_OK)
        st = hash_password(password, hash, err);
    if (st == MT_OK)
        st =
            mtx_state_exec(s, NULL, err, "UPDATE users SET pwhash=? WHERE id=?",
                           "sI", hash, u.id);
    if (st == MT_OK)
        st = mtx_state_exec(s, NULL, err,
                            "DELETE FROM sessions WHERE user_id=?", "I", u.id);
    sodium_memzero(hash, sizeof hash);
    return st;
}

enum mt_status mt_user_get(struct mt_state *s, const char *name,
                           struct mt_user *out, struct mt_error *err)
{
    struct mt_user u;
    struct user_out o = {&u, NULL, 0, NULL};
    struct mtx_query q = {read_user, &o, 0, 0};
    char *key = NULL;
    enum mt_status st = name_key(name, &key, err);

    if (st == MT_OK)
        st = mtx_state_exec(s, &q, err,
                            "SELECT id, name, role, created_at" USER_BY_NAME,
                            "ss", key, name);
    mt_free(key);
    if (st == MT_OK)
        st = found_one(st, &q, "user", err);
    if (st == MT_OK)
        *out = u;
    return st;
}

/* A hash of a random password, verified against for unknown users so
 * that a failed login takes the same time either way. */
static char dummy_hash[crypto_pwhash_STRBYTES];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void make_dummy(void)
{
    char pw[MT_SECRET_SIZE];

    random_hex(pw);
    if (crypto_pwhash_str(dummy_hash, pw, strlen(pw),
                          crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        dummy_hash[0] = '\0';
}

static enum mt_status load_hash(struct mt_state *s, const char *name,
                                struct mt_user *u,
                                char hash[crypto_pwhash_STRBYTES],
                                struct mt_error *err)
{
    struct user_out o = {u, hash, crypto_pwhash_STRBYTES, NULL};
    struct mtx_query q = {read_user, &o, 0, 0};
    char *key = NULL;
    enum mt_status st = name_key(name, &key, err);

    if (st == MT_OK)
        st = mtx_state_exec(s, &q, err,
                            "SELECT id, name, role, created_at,"
                            " pwhash" USER_BY_NAME,
                            "ss", key, name);
    mt_free(key);
    return st == MT_OK ? found_one(st, &q, "user", err) : st;
}

enum mt_status mt_user_verify(struct mt_state *s, const char *name,
                              const char *password, struct mt_user *out,
                              struct mt_error *err)
{
    char hash[crypto_pwhash_STRBYTES];
    struct mt_user u;
    size_t n = password ? strlen(password) : 0;
    enum mt_status st;

    memset(&u, 0, sizeof u);
    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = load_hash(s, name ? name : "", &u, hash, err);
    if (st != MT_OK && st != MT_ENOTFOUND)
        return st;
    if (st == MT_ENOTFOUND) {
        pthread_once(&dummy_once, make_dummy);
        snprintf(hash, sizeof hash, "%s", dummy_hash);
    }
    if (n > MT_PASSWORD_MAX ||
        crypto_pwhash_str_verify(hash, password ? password : "", n) != 0 ||
        st != MT_OK)
        return mt_fail(err, MT_ENOTFOUND, "wrong user name or password");
    *out = u;
    return MT_OK;
}

struct user_each {
    mt_user_fn fn;
    void *user;
};

static enum mt_status each_user(const struct mtx_row *row, void *user)
{
    struct user_each *e = user;
    struct mt_user u;

    fill_user(row, &u);
    return e->fn(&u, e->user);
}

enum mt_status mt_user_list(struct mt_state *s, mt_user_fn fn, void *user,
                            struct mt_error *err)
{
    struct user_each e = {fn, user};
    struct mtx_query q = {each_user, &e, 0, 0};

    return mtx_state_exec(s, &q, err,
                          "SELECT id, name, role, created_at FROM users"
                          " ORDER BY name",
                          "");
}

/* ==== Sessions ==== */

enum mt_status mt_session_create(struct mt_state *s, int64_t user_id,
                                 int64_t ttl_s, char sid[MT_SECRET_SIZE],
                                 char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err)
{
    int64_t now = now_s();

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    random_hex(sid);
    random_hex(csrf);
    return mtx_state_exec(s, NULL, err,
                          "INSERT INTO sessions(hash, user_id, csrf,"
                          " created_at, expires_at) VALUES(?,?,?,?,?)",
                          "hIsII", sid, user_id, csrf, now, now + ttl_s);
}

enum mt_status mt_session_lookup(struct mt_state *s, const char *sid,
                                 struct mt_user *u, char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err)
{
    struct user_out o = {u, csrf, MT_SECRET_SIZE, NULL};
    struct mtx_query q = {read_user, &o, 0, 0};
    enum mt_status st;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = mtx_state_exec(s, &q, err,
                        "SELECT u.id, u.name, u.role, u.created_at, s.csrf"
                        " FROM sessions s JOIN users u ON u.id = s.user_id"
                        " WHERE s.hash=? AND s.expires_at > ?",
                        "hI", sid, now_s());
    return found_one(st, &q, "session", err);
}

enum mt_status mt_session_delete(struct mt_state *s, const char *sid,
                                 struct mt_error *err)
{
    enum mt_status st;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = mtx_state_exec(s, NULL, err, "DELETE FROM sessions WHERE hash=?", "h",
                        sid);
    if (st == MT_OK)
        st = mtx_state_exec(s, NULL, err,
                            "DELETE FROM sessions WHERE expires_at <= ?", "I",
                            now_s());
    return st;
}

/* ==== API tokens ==== */

enum mt_status mt_token_create(struct mt_state *s, int64_t user_id,
                               const char *name, int64_t ttl_s, int64_t *id,
                               char token[MT_TOKEN_SIZE], struct mt_error *err)
{
    char hex[MT_SECRET_SIZE];
    struct mtx_query q = {read_id, id, 0, 0};

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    random_hex(hex);
    snprintf(token, MT_TOKEN_SIZE, "mt_%s", hex);
    sodium_memzero(hex, sizeof hex);
    return mtx_state_exec(s, &q, err,
                          "INSERT INTO tokens(hash, user_id, name, expires_at)"
                          " VALUES(?,?,?,NULLIF(?,0)) RETURNING id",
                          "hIsI", token, user_id, name ? name : "",
                          ttl_s > 0 ? now_s() + ttl_s : (int64_t)0);
}

enum mt_status mt_token_revoke_all(struct mt_state *s, int64_t user_id,
                                   struct mt_error *err)
{
    return mtx_state_exec(s, NULL, err, "DELETE FROM tokens WHERE user_id=?",
                          "I", user_id);
}

enum mt_status mt_token_lookup(struct mt_state *s, const char *token,
                               struct mt_user *u, int64_t *token_id,
                               struct mt_error *err)
{
    int64_t tid = 0;
    struct user_out o = {u, NULL, 0, &tid};
    struct mtx_query q = {read_user, &o, 0, 0};
    enum mt_status st;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = mtx_state_exec(
        s, &q, err,
        "SELECT u.id, u.name, u.role, u.created_at, t.id"
        " FROM tokens t JOIN users u ON u.id = t.user_id"
        " WHERE t.hash=? AND (t.expires_at IS NULL OR t.expires_at > ?)",
        "hI", token, now_s());
    st = found_one(st, &q, "token", err);
    if (st == MT_OK && token_id)
        *token_id = tid;
    return st;
}

enum mt_status mt_token_revoke(struct mt_state *s, int64_t id, int64_t owner,
                               struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    enum mt_status st;

    if (owner > 0)
        st = mtx_state_exec(s, &q, err,
                            "DELETE FROM tokens WHERE id=? AND user_id=?", "II",
                            id, owner);
    else
        st = mtx_state_exec(s, &q, err, "DELETE FROM tokens WHERE id=?", "I",
                            id);
    if (st == MT_OK && q.changes == 0)
        return mt_fail(err, MT_ENOTFOUND, "no token %lld", (long long)id);
    return st;
}

struct token_each {
    mt_token_fn fn;
    void *user;
};

static enum mt_status each_token(const struct mtx_row *row, void *user)
{
    struct token_each *e = user;
    struct mt_token_info t;

    t.id = mtx_row_int(row, 0);
    t.name = mtx_row_text(row, 1);
    t.created_at = mtx_row_int(row, 2);
    t.expires_at = mtx_row_int(row, 3);
    return e->fn(&t, e->user);
}

enum mt_status mt_token_list(struct mt_state *s, int64_t user_id,
                             mt_token_fn fn, void *user, struct mt_error *err)
{
    struct token_each e = {fn, user};
    struct mtx_query q = {each_token, &e, 0, 0};

    return mtx_state_exec(s, &q, err,
                          "SELECT id, name, created_at,"
                          " coalesce(expires_at, 0) FROM tokens"
                          " WHERE user_id=? ORDER BY id DESC",
                          "I", user_id);
}

/* ==== Runs ==== */

enum mt_status mtx_run_insert(struct mt_state *s, int64_t user_id,
                              const char *username, const char *kind,
                              const char *input_hash, const char *key,
                              int64_t *id, struct mt_error *err)
{
    struct mtx_query q = {read_id, id, 0, 0};

    return mtx_state_exec(
        s, &q, err,
        "INSERT INTO runs(user_id, username, kind, status, input_hash, idem)"
        " VALUES(NULLIF(?,0),?,?,'queued',?,?) ON CONFLICT(idem) DO UPDATE"
        " SET idem = excluded.idem RETURNING id",
        "Issss", user_id, username ? username : "", kind, input_hash, key);
}

enum mt_status mt_run_create(struct mt_state *s, int64_t user_id,
                             const char *username, const char *kind,
                             const char *input_hash, int64_t *id,
                             struct mt_error *err)
{
    char key[MT_SECRET_SIZE];

    /* After a lost connection pg.c sends the statement again, and a
     * commit whose reply was lost would then queue the run twice; a key
     * drawn here makes the second insert land on the first row and
     * return its id. SQLite runs in-process and never re-sends, but
     * keeps the same key (store schema v9), so one statement serves
     * both engines. */
    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    random_hex(key);
    return mtx_run_insert(s, user_id, username, kind, input_hash, key, id, err);
}

enum mt_status mt_run_update(struct mt_state *s, int64_t id, const char *status,
                             const char *result, const char *error,
                             struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    int done = strcmp(status, "done") == 0;
    int fin = done || strcmp(status, "failed") == 0;
    /* the flags are compared, not used as booleans: SQLite and PostgreSQL
     * then agree on their type. A run that ends done has no error: a
     * resumed batch's "cancelled after ..." is cleared. */
    enum mt_status st = mtx_state_exec(
        s, &q, err,
        "UPDATE runs SET status=?, result=COALESCE(?, result),"
        " error=CASE WHEN ? = 1 THEN NULL ELSE COALESCE(?, error) END,"
        " finished_at=CASE WHEN ? = 1 THEN ? ELSE finished_at END WHERE id=?",
        "ssIsIII", status, result, (int64_t)done, error, (int64_t)fin, now_s(),
        id);

    if (st == MT_OK && q.changes == 0)
        return mt_fail(err, MT_ENOTFOUND, "no run %lld", (long long)id);
    return st;
}

enum mt_status mt_run_interrupt_unfinished(struct mt_state *s, const char *why,
                                           int64_t *n, struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    enum mt_status st = mtx_state_exec(
        s, &q, err,
        "UPDATE runs SET status='interrupted', error=?, finished_at=?"
        " WHERE status IN ('queued','running')",
        "sI", why, now_s());

    if (n)
        *n = st == MT_OK ? (int64_t)q.changes : 0;
    return st;
}

enum mt_status mt_run_finish_interrupted(struct mt_state *s, int64_t id,
                                         const char *why, int *done,
                                         struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    enum mt_status st =
        mtx_state_exec(s, &q, err,
                       "UPDATE runs SET status='failed', error=?, finished_at=?"
                       " WHERE id=? AND status='interrupted'",
                       "sII", why, now_s(), id);

    *done = st == MT_OK && q.changes > 0;
    return st;
}

#define RUN_COLS                                                               \
    "SELECT id, COALESCE(user_id, 0), username, kind, status, input_hash,"     \
    " %s, error, created_at, COALESCE(finished_at, 0) FROM runs"

struct run_each {
    mt_run_fn fn;
    void *user;
};

static enum mt_status each_run(const struct mtx_row *row, void *user)
{
    struct run_each *e = user;
    struct mt_run r;

    r.id = mtx_row_int(row, 0);
    r.user_id = mtx_row_int(row, 1);
    r.user = mtx_row_text(row, 2);
    r.kind = mtx_row_text(row, 3);
    r.status = mtx_row_text(row, 4);
    r.input_hash = mtx_row_text(row, 5);
    r.result = mtx_row_text(row, 6);
    r.error = mtx_row_text(row, 7);
    r.created_at = mtx_row_int(row, 8);
    r.finished_at = mtx_row_int(row, 9);
    return e->fn(&r, e->user);
}

enum mt_status mt_run_get(struct mt_state *s, int64_t id, mt_run_fn fn,
                          void *user, struct mt_error *err)
{
    char sql[256];
    struct run_each e = {fn, user};
    struct mtx_query q = {each_run, &e, 0, 0};
    enum mt_status st;

    snprintf(sql, sizeof sql, RUN_COLS " WHERE id=?", "result");
    st = mtx_state_exec(s, &q, err, sql, "I", id);
    if (st == MT_OK && q.rows == 0)
        return mt_fail(err, MT_ENOTFOUND, "no such run");
    return st;
}

enum mt_status mt_run_list(struct mt_state *s, int64_t user_id, int64_t before,
                           uint32_t limit, mt_run_fn fn, void *user,
                           struct mt_error *err)
{
    char sql[320];
    struct run_each e = {fn, user};
    struct mtx_query q = {each_run, &e, 0, 0};

    snprintf(sql, sizeof sql,
             RUN_COLS " WHERE (? = 0 OR user_id = ?) AND (? = 0 OR"
                      " id < ?) ORDER BY id DESC LIMIT ?",
             "NULL");
    return mtx_state_exec(s, &q, err, sql, "IIIII", user_id, user_id, before,
                          before, (int64_t)limit);
}

enum mt_status mt_run_cancel_request(struct mt_state *s, int64_t id, int *live,
                                     struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    enum mt_status st =
        mtx_state_exec(s, &q, err,
                       "UPDATE runs SET cancel_requested=1 WHERE id=?"
                       " AND status IN ('queued','running')",
                       "I", id);

    if (live)
        *live = st == MT_OK && q.changes > 0;
    return st;
}

enum mt_status mt_run_cancel_requested(struct mt_state *s, int64_t id, int *yes,
                                       struct mt_error *err)
{
    int64_t flag = 0;
    struct mtx_query q = {read_id, &flag, 0, 0};
    enum mt_status st = mtx_state_exec(
        s, &q, err, "SELECT cancel_requested FROM runs WHERE id=?", "I", id);

    *yes = st == MT_OK && flag != 0;
    return st;
}

enum mt_status mt_run_report_put(struct mt_state *s, int64_t id,
                                 const char *html, struct mt_error *err)
{
    return mtx_state_exec(
        s, NULL, err,
        "INSERT INTO run_reports(run_id, html) VALUES(?,?)"
        " ON CONFLICT(run_id) DO UPDATE SET html=excluded.html",
        "Is", id, html);
}

struct report_out {
    char *html;
    size_t n;
};

static enum mt_status read_report(const struct mtx_row *row, void *user)
{
    struct report_out *o = user;
    const char *v = mtx_row_text(row, 0);

    o->n = v ? strlen(v) : 0;
    o->html = mt_malloc(o->n + 1);
    if (!o->html)
        return MT_ENOMEM;
    memcpy(o->html, v ? v : "", o->n + 1);
    return MT_OK;
}

enum mt_status mt_run_report_get(struct mt_state *s, int64_t id, char **html,
                                 size_t *n, struct mt_error *err)
{
    struct report_out o = {NULL, 0};
    struct mtx_query q = {read_report, &o, 0, 0};
    enum mt_status st = mtx_state_exec(
        s, &q, err, "SELECT html FROM run_reports WHERE run_id=?", "I", id);

    if (st == MT_ENOMEM)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    st = found_one(st, &q, "report", err);
    if (st != MT_OK) {
        mt_free(o.html);
        return st;
    }
    *html = o.html;
    *n = o.n;
    return MT_OK;
}

/* ==== Run events ==== */

enum mt_status mt_run_event_add(struct mt_state *s, int64_t run_id, int64_t seq,
                                const char *type, const char *data,
                                struct mt_error *err)
{
    return mtx_state_exec(s, NULL, err,
                          "INSERT INTO run_events(run_id, seq, type, data)"
                          " VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
                          "IIss", run_id, seq, type, data);
}

struct event_each {
    mt_run_event_fn fn;
    void *user;
};

static enum mt_status each_event(const struct mtx_row *row, void *user)
{
    struct event_each *e = user;

    return e->fn(mtx_row_int(row, 0), mtx_row_text(row, 1),
                 mtx_row_text(row, 2), e->user);
}

enum mt_status mt_run_event_list(struct mt_state *s, int64_t run_id,
                                 int64_t after, uint32_t limit,
                                 mt_run_event_fn fn, void *user,
                                 struct mt_error *err)
{
    struct event_each e = {fn, user};
    struct mtx_query q = {each_event, &e, 0, 0};

    return mtx_state_exec(s, &q, err,
                          "SELECT seq, type, data FROM run_events"
                          " WHERE run_id=? AND seq > ? ORDER BY seq LIMIT ?",
                          "III", run_id, after, (int64_t)limit);
}

enum mt_status mt_run_events_prune(struct mt_state *s, int64_t before,
                                   uint32_t limit, int64_t *deleted,
                                   struct mt_error *err)
{
    struct mtx_query q = {NULL, NULL, 0, 0};
    /* runs in id order that still have rows: a bounded step each call */
    enum mt_status st = mtx_state_exec(
        s, &q, err,
        "DELETE FROM run_events WHERE run_id IN (SELECT r.id FROM runs r"
        " WHERE r.finished_at IS NOT NULL AND r.finished_at < ?"
        " AND EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = r.id)"
        " ORDER BY r.id LIMIT ?)",
        "II", before, (int64_t)limit);

    if (st == MT_OK && deleted)
        *deleted = q.changes;
    return st;
}

/* ==== Failed logins ==== */

enum mt_status mt_login_fail(struct mt_state *s, const char *key,
                             int64_t *fails, struct mt_error *err)
{
    struct mtx_query q = {read_id, fails, 0, 0};

    return mtx_state_exec(s, &q, err,
                          "INSERT INTO login_throttle(key, fails) VALUES(?, 1)"
                          " ON CONFLICT(key) DO UPDATE"
                          " SET fails = login_throttle.fails + 1"
                          " RETURNING fails",
                          "s", key);
}

enum mt_status mt_login_lock(struct mt_state *s, const char *key, int64_t until,
                             struct mt_error *err)
{
    return mtx_state_exec(
        s, NULL, err, "UPDATE login_throttle SET locked_until=? WHERE key=?",
        "Is", until, key);
}

enum mt_status mt_login_locked_until(struct mt_state *s, const char *key,
                                     int64_t *until, struct mt_error *err)
{
    struct mtx_query q = {read_id, until, 0, 0};

    *until = 0;
    return mtx_state_exec(s, &q, err,
                          "SELECT locked_until FROM login_throttle WHERE key=?",
                          "s", key);
}

enum mt_status mt_login_reset(struct mt_state *s, const char *key,
                              struct mt_error *err)
{
    return mtx_state_exec(s, NULL, err,
                          "DELETE FROM login_throttle WHERE key=?", "s", key);
}

/* ==== Audit and settings ==== */

enum mt_status mt_audit_add(struct mt_state *s, int64_t user_id,
                            const char *username, const char *action,
                            const char *detail, struct mt_error *err)
{
    return mtx_state_exec(s, NULL, err,
                          "INSERT INTO audit(user_id, username, action, detail)"
                          " VALUES(NULLIF(?,0),?,?,?)",
                          "Isss", user_id, username, action,
                          detail ? detail : "{}");
}

struct setting_out {
    char *buf;
    size_t n;
};

static enum mt_status read_setting(const struct mtx_row *row, void *user)
{
    struct setting_out *o = user;
    const char *v = mtx_row_text(row, 0);

    snprintf(o->buf, o->n, "%s", v ? v : "");
    return MT_OK;
}

enum mt_status mt_setting_get(struct mt_state *s, const char *key, char *buf,
                              size_t n, int *found, struct mt_error *err)
{
    struct setting_out o = {buf, n};
    struct mtx_query q = {read_setting, &o, 0, 0};
    enum mt_status st = mtx_state_exec(
        s, &q, err, "SELECT value FROM settings WHERE key=?", "s", key);

    *found = st == MT_OK && q.rows > 0;
    return st;
}

enum mt_status mt_setting_put(struct mt_state *s, const char *key,
                              const char *value, struct mt_error *err)
{
    return mtx_state_exec(
        s, NULL, err,
        "INSERT INTO settings(key, value) VALUES(?,?)"
        " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        "ss", key, value);
}
