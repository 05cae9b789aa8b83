/* Accounts in the store (schema v2): users (argon2id via libsodium),
 * sessions and API tokens kept as SHA-256 hashes, runs, audit, settings.
 * Every statement is prepared per call: these are not hot paths. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "store/store_int.h"

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

/* Binds arguments by type letter: 's' text (NULL binds NULL), 'I' int64,
 * 'h' a string bound as the 32-byte SHA-256 blob of its text. */
static void bind_args(sqlite3_stmt *st, const char *types, va_list ap)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    int i;

    for (i = 0; types[i]; i++) {
        if (types[i] == 's') {
            const char *v = va_arg(ap, const char *);
            if (v)
                sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, i + 1);
        } else if (types[i] == 'I') {
            sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        } else {
            const char *v = va_arg(ap, const char *);
            crypto_hash_sha256(h, (const unsigned char *)v, strlen(v));
            sqlite3_bind_blob(st, i + 1, h, sizeof h, SQLITE_TRANSIENT);
        }
    }
}

/* Prepares 'sql' and binds the arguments. */
static enum mt_status prep(struct mt_store *s, sqlite3_stmt **st,
                           struct mt_error *err, const char *sql,
                           const char *types, ...)
{
    va_list ap;
    enum mt_status rc = mt_store_prepare(s, sql, st, err);

    if (rc != MT_OK)
        return rc;
    va_start(ap, types);
    bind_args(*st, types, ap);
    va_end(ap);
    return MT_OK;
}

/* Runs a statement without result rows; *changes (may be NULL) receives
 * the number of rows changed. */
static enum mt_status exec_args(struct mt_store *s, int *changes,
                                struct mt_error *err, const char *sql,
                                const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    va_list ap;
    enum mt_status rc = mt_store_prepare(s, sql, &st, err);
    int step;

    if (rc != MT_OK)
        return rc;
    va_start(ap, types);
    bind_args(st, types, ap);
    va_end(ap);
    step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step != SQLITE_DONE)
        return mt_store_dberr(s, step, "writing accounts", err);
    if (changes)
        *changes = sqlite3_changes(s->db);
    return MT_OK;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Reads id, name, role, created_at from columns 0..3. */
static void fill_user(sqlite3_stmt *st, struct mt_user *u)
{
    const char *name = col_text(st, 1);
    const char *role = col_text(st, 2);

    memset(u, 0, sizeof *u);
    u->id = sqlite3_column_int64(st, 0);
    snprintf(u->name, sizeof u->name, "%s", name ? name : "");
    u->role = role && strcmp(role, "admin") == 0 ? MT_ROLE_ADMIN : MT_ROLE_USER;
    u->created_at = sqlite3_column_int64(st, 3);
}

/* Steps a statement expected to give at most one row. */
static enum mt_status step_one(struct mt_store *s, sqlite3_stmt *st,
                               const char *what, struct mt_error *err)
{
    int step = sqlite3_step(st);

    if (step == SQLITE_ROW)
        return MT_OK;
    if (step == SQLITE_DONE)
        return mt_fail(err, MT_ENOTFOUND, "%s: not found", what);
    return mt_store_dberr(s, step, what, err);
}

/* ==== Users ==== */

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

enum mt_status mt_user_add(struct mt_store *s, const char *name,
                           const char *password, enum mt_role role, int64_t *id,
                           struct mt_error *err)
{
    char hash[crypto_pwhash_STRBYTES];
    struct mt_user u;
    enum mt_status st;

    if (!mt_user_name_valid(name))
        return mt_fail(err, MT_EINVAL,
                       "a user name is 1 to %d of A-Z a-z 0-9 . _ -",
                       MT_USER_NAME_MAX);
    if (mt_user_get(s, name, &u, NULL) == MT_OK)
        return mt_fail(err, MT_EINVAL, "user '%s' already exists", name);
    st = hash_password(password, hash, err);
    if (st == MT_OK)
        st = exec_args(s, NULL, err,
                       "INSERT INTO users(name, pwhash, role) VALUES(?,?,?)",
                       "sss", name, hash, mt_role_str(role));
    if (st == MT_OK && id)
        *id = sqlite3_last_insert_rowid(s->db);
    sodium_memzero(hash, sizeof hash);
    return st;
}

enum mt_status mt_user_del(struct mt_store *s, const char *name,
                           struct mt_error *err)
{
    int n = 0;
    enum mt_status st =
        exec_args(s, &n, err, "DELETE FROM users WHERE name=?", "s", name);

    if (st == MT_OK && n == 0)
        return mt_fail(err, MT_ENOTFOUND, "no user '%s'", name);
    return st;
}

enum mt_status mt_user_passwd(struct mt_store *s, const char *name,
                              const char *password, struct mt_error *err)
{
    char hash[crypto_pwhash_STRBYTES];
    struct mt_user u;
    enum mt_status st = mt_user_get(s, name, &u, err);

    if (st == MT_OK)
        st = hash_password(password, hash, err);
    if (st == MT_OK)
        st = exec_args(s, NULL, err, "UPDATE users SET pwhash=? WHERE id=?",
                       "sI", hash, u.id);
    if (st == MT_OK)
        st = exec_args(s, NULL, err, "DELETE FROM sessions WHERE user_id=?",
                       "I", u.id);
    sodium_memzero(hash, sizeof hash);
    return st;
}

enum mt_status mt_user_get(struct mt_store *s, const char *name,
                           struct mt_user *out, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = prep(s, &st, err,
                             "SELECT id, name, role, created_at FROM users"
                             " WHERE name=?",
                             "s", name);

    if (rc == MT_OK)
        rc = step_one(s, st, "user", err);
    if (rc == MT_OK)
        fill_user(st, out);
    sqlite3_finalize(st);
    return rc;
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

static enum mt_status load_hash(struct mt_store *s, const char *name,
                                struct mt_user *u,
                                char hash[crypto_pwhash_STRBYTES],
                                struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc = prep(s, &st, err,
                             "SELECT id, name, role, created_at, pwhash"
                             " FROM users WHERE name=?",
                             "s", name);

    if (rc == MT_OK)
        rc = step_one(s, st, "user", err);
    if (rc == MT_OK) {
        fill_user(st, u);
        snprintf(hash, crypto_pwhash_STRBYTES, "%s", col_text(st, 4));
    }
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_user_verify(struct mt_store *s, const char *name,
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

enum mt_status mt_user_list(struct mt_store *s, mt_user_fn fn, void *user,
                            struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    struct mt_user u;
    enum mt_status rc = prep(s, &st, err,
                             "SELECT id, name, role, created_at FROM users"
                             " ORDER BY name",
                             "");
    int step = SQLITE_DONE;

    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        fill_user(st, &u);
        rc = fn(&u, user);
    }
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mt_store_dberr(s, step, "listing users", err);
    sqlite3_finalize(st);
    return rc;
}

/* ==== Sessions ==== */

enum mt_status mt_session_create(struct mt_store *s, int64_t user_id,
                                 int64_t ttl_s, char sid[MT_SECRET_SIZE],
                                 char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err)
{
    int64_t now = now_s();

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    random_hex(sid);
    random_hex(csrf);
    return exec_args(s, NULL, err,
                     "INSERT INTO sessions(hash, user_id, csrf, created_at,"
                     " expires_at) VALUES(?,?,?,?,?)",
                     "hIsII", sid, user_id, csrf, now, now + ttl_s);
}

enum mt_status mt_session_lookup(struct mt_store *s, const char *sid,
                                 struct mt_user *u, char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    rc = prep(s, &st, err,
              "SELECT u.id, u.name, u.role, u.created_at, s.csrf"
              " FROM sessions s JOIN users u ON u.id = s.user_id"
              " WHERE s.hash=? AND s.expires_at > ?",
              "hI", sid, now_s());
    if (rc == MT_OK)
        rc = step_one(s, st, "session", err);
    if (rc == MT_OK) {
        fill_user(st, u);
        snprintf(csrf, MT_SECRET_SIZE, "%s", col_text(st, 4));
    }
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_session_delete(struct mt_store *s, const char *sid,
                                 struct mt_error *err)
{
    enum mt_status st;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    st = exec_args(s, NULL, err, "DELETE FROM sessions WHERE hash=?", "h", sid);
    if (st == MT_OK)
        st = exec_args(s, NULL, err,
                       "DELETE FROM sessions WHERE expires_at <= ?", "I",
                       now_s());
    return st;
}

/* ==== API tokens ==== */

enum mt_status mt_token_create(struct mt_store *s, int64_t user_id,
                               const char *name, int64_t ttl_s, int64_t *id,
                               char token[MT_TOKEN_SIZE], struct mt_error *err)
{
    char hex[MT_SECRET_SIZE];
    enum mt_status st;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    random_hex(hex);
    snprintf(token, MT_TOKEN_SIZE, "mt_%s", hex);
    sodium_memzero(hex, sizeof hex);
    st = exec_args(s, NULL, err,
                   "INSERT INTO tokens(hash, user_id, name, expires_at)"
                   " VALUES(?,?,?,NULLIF(?,0))",
                   "hIsI", token, user_id, name ? name : "",
                   ttl_s > 0 ? now_s() + ttl_s : (int64_t)0);
    if (st == MT_OK)
        *id = sqlite3_last_insert_rowid(s->db);
    return st;
}

enum mt_status mt_token_revoke_all(struct mt_store *s, int64_t user_id,
                                   struct mt_error *err)
{
    return exec_args(s, NULL, err, "DELETE FROM tokens WHERE user_id=?", "I",
                     user_id);
}

enum mt_status mt_token_lookup(struct mt_store *s, const char *token,
                               struct mt_user *u, int64_t *token_id,
                               struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc;

    if (mt_accounts_init() != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "libsodium failed to start");
    rc = prep(s, &st, err,
              "SELECT u.id, u.name, u.role, u.created_at, t.id"
              " FROM tokens t JOIN users u ON u.id = t.user_id"
              " WHERE t.hash=? AND (t.expires_at IS NULL OR t.expires_at > ?)",
              "hI", token, now_s());
    if (rc == MT_OK)
        rc = step_one(s, st, "token", err);
    if (rc == MT_OK) {
        fill_user(st, u);
        if (token_id)
            *token_id = sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_token_revoke(struct mt_store *s, int64_t id, int64_t owner,
                               struct mt_error *err)
{
    int n = 0;
    enum mt_status st;

    if (owner > 0)
        st =
            exec_args(s, &n, err, "DELETE FROM tokens WHERE id=? AND user_id=?",
                      "II", id, owner);
    else
        st = exec_args(s, &n, err, "DELETE FROM tokens WHERE id=?", "I", id);
    if (st == MT_OK && n == 0)
        return mt_fail(err, MT_ENOTFOUND, "no token %lld", (long long)id);
    return st;
}

enum mt_status mt_token_list(struct mt_store *s, int64_t user_id,
                             mt_token_fn fn, void *user, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    struct mt_token_info t;
    enum mt_status rc = prep(s, &st, err,
                             "SELECT id, name, created_at,"
                             " coalesce(expires_at, 0) FROM tokens"
                             " WHERE user_id=? ORDER BY id DESC",
                             "I", user_id);
    int step = SQLITE_DONE;

    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        t.id = sqlite3_column_int64(st, 0);
        t.name = col_text(st, 1);
        t.created_at = sqlite3_column_int64(st, 2);
        t.expires_at = sqlite3_column_int64(st, 3);
        rc = fn(&t, user);
    }
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mt_store_dberr(s, step, "listing tokens", err);
    sqlite3_finalize(st);
    return rc;
}

/* ==== Runs ==== */

enum mt_status mt_run_create(struct mt_store *s, int64_t user_id,
                             const char *username, const char *kind,
                             const char *input_hash, int64_t *id,
                             struct mt_error *err)
{
    enum mt_status st = exec_args(
        s, NULL, err,
        "INSERT INTO runs(user_id, username, kind, status, input_hash)"
        " VALUES(NULLIF(?,0),?,?,'queued',?)",
        "Isss", user_id, username ? username : "", kind, input_hash);

    if (st == MT_OK)
        *id = sqlite3_last_insert_rowid(s->db);
    return st;
}

enum mt_status mt_run_update(struct mt_store *s, int64_t id, const char *status,
                             const char *result, const char *error,
                             struct mt_error *err)
{
    int n = 0;
    int fin = strcmp(status, "done") == 0 || strcmp(status, "failed") == 0;
    enum mt_status st =
        exec_args(s, &n, err,
                  "UPDATE runs SET status=?, result=COALESCE(?, result),"
                  " error=COALESCE(?, error), finished_at=CASE WHEN ? THEN ?"
                  " ELSE finished_at END WHERE id=?",
                  "sssIII", status, result, error, (int64_t)fin, now_s(), id);

    if (st == MT_OK && n == 0)
        return mt_fail(err, MT_ENOTFOUND, "no run %lld", (long long)id);
    return st;
}

#define RUN_COLS                                                               \
    "SELECT id, COALESCE(user_id, 0), username, kind, status, input_hash,"     \
    " %s, error, created_at, COALESCE(finished_at, 0) FROM runs"

static void fill_run(sqlite3_stmt *st, struct mt_run *r)
{
    r->id = sqlite3_column_int64(st, 0);
    r->user_id = sqlite3_column_int64(st, 1);
    r->user = col_text(st, 2);
    r->kind = col_text(st, 3);
    r->status = col_text(st, 4);
    r->input_hash = col_text(st, 5);
    r->result = col_text(st, 6);
    r->error = col_text(st, 7);
    r->created_at = sqlite3_column_int64(st, 8);
    r->finished_at = sqlite3_column_int64(st, 9);
}

static enum mt_status each_run(struct mt_store *s, sqlite3_stmt *st,
                               mt_run_fn fn, void *user, int want_one,
                               struct mt_error *err)
{
    struct mt_run r;
    enum mt_status rc = MT_OK;
    int step;
    int rows = 0;

    while (rc == MT_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        fill_run(st, &r);
        rows++;
        rc = fn(&r, user);
    }
    if (rc == MT_OK && step != SQLITE_DONE)
        rc = mt_store_dberr(s, step, "reading runs", err);
    if (rc == MT_OK && want_one && rows == 0)
        rc = mt_fail(err, MT_ENOTFOUND, "no such run");
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_run_get(struct mt_store *s, int64_t id, mt_run_fn fn,
                          void *user, struct mt_error *err)
{
    char sql[256];
    sqlite3_stmt *st = NULL;
    enum mt_status rc;

    snprintf(sql, sizeof sql, RUN_COLS " WHERE id=?", "result");
    rc = prep(s, &st, err, sql, "I", id);
    if (rc != MT_OK)
        return rc;
    return each_run(s, st, fn, user, 1, err);
}

enum mt_status mt_run_list(struct mt_store *s, int64_t user_id, int64_t before,
                           uint32_t limit, mt_run_fn fn, void *user,
                           struct mt_error *err)
{
    char sql[320];
    sqlite3_stmt *st = NULL;
    enum mt_status rc;

    snprintf(sql, sizeof sql,
             RUN_COLS " WHERE (?1 = 0 OR user_id = ?1) AND (?2 = 0 OR"
                      " id < ?2) ORDER BY id DESC LIMIT ?3",
             "NULL");
    rc = prep(s, &st, err, sql, "III", user_id, before, (int64_t)limit);
    if (rc != MT_OK)
        return rc;
    return each_run(s, st, fn, user, 0, err);
}

/* ==== Audit and settings ==== */

enum mt_status mt_audit_add(struct mt_store *s, int64_t user_id,
                            const char *username, const char *action,
                            const char *detail, struct mt_error *err)
{
    return exec_args(s, NULL, err,
                     "INSERT INTO audit(user_id, username, action, detail)"
                     " VALUES(NULLIF(?,0),?,?,?)",
                     "Isss", user_id, username, action, detail ? detail : "{}");
}

enum mt_status mt_setting_get(struct mt_store *s, const char *key, char *buf,
                              size_t n, int *found, struct mt_error *err)
{
    sqlite3_stmt *st = NULL;
    enum mt_status rc =
        prep(s, &st, err, "SELECT value FROM settings WHERE key=?", "s", key);

    *found = 0;
    if (rc == MT_OK)
        rc = step_one(s, st, "setting", err);
    if (rc == MT_OK) {
        *found = 1;
        snprintf(buf, n, "%s", col_text(st, 0));
    } else if (rc == MT_ENOTFOUND) {
        rc = MT_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

enum mt_status mt_setting_put(struct mt_store *s, const char *key,
                              const char *value, struct mt_error *err)
{
    return exec_args(s, NULL, err,
                     "INSERT OR REPLACE INTO settings(key, value)"
                     " VALUES(?,?)",
                     "ss", key, value);
}
