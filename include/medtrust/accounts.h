/* medtrust accounts in the state (state.h: the store's SQLite tables by
 * default, or PostgreSQL): users with argon2id passwords, sessions, API
 * tokens (stored hashed), runs of API jobs and their events, the audit
 * trail and server settings. Every function takes a state handle, which
 * one thread uses at a time (open one per thread); both engines behave
 * the same (tests/unit/test_state.c runs every case on each). */
#ifndef MEDTRUST_ACCOUNTS_H
#define MEDTRUST_ACCOUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest user name, in bytes; names are [A-Za-z0-9._-]+. */
#define MT_USER_NAME_MAX 64
/* Password length bounds, in bytes. */
#define MT_PASSWORD_MIN 8
#define MT_PASSWORD_MAX 1024
/* Size of a session id or CSRF token: 64 hex digits and a NUL. */
#define MT_SECRET_SIZE 65
/* Size of an API token: "mt_" + 64 hex digits and a NUL. */
#define MT_TOKEN_SIZE 68

enum mt_role {
    MT_ROLE_USER,
    MT_ROLE_ADMIN,
};

/* Returns "user" or "admin". */
const char *mt_role_str(enum mt_role r);

struct mt_user {
    int64_t id;
    char name[MT_USER_NAME_MAX + 1];
    enum mt_role role;
    int64_t created_at; /* Unix seconds */
};

/* Initialises libsodium once; safe to call from any thread, any number of
 * times. MT_EINTERNAL when the library cannot start. The functions below
 * call it themselves. */
enum mt_status mt_accounts_init(void);

/* 1 when 'name' is a valid user name (1..64 of [A-Za-z0-9._-]). */
int mt_user_name_valid(const char *name);

/* ==== Users ==== */

/* Adds user 'name' with 'password' (hashed with argon2id, interactive
 * limits) and 'role'; *id (may be NULL) receives the row id. MT_EINVAL for
 * a bad name or password or when the name is taken. */
enum mt_status mt_user_add(struct mt_state *s, const char *name,
                           const char *password, enum mt_role role, int64_t *id,
                           struct mt_error *err);

/* Deletes user 'name' with their sessions and tokens; their runs stay.
 * MT_ENOTFOUND when there is no such user. */
enum mt_status mt_user_del(struct mt_state *s, const char *name,
                           struct mt_error *err);

/* Sets a new password and ends the user's sessions. */
enum mt_status mt_user_passwd(struct mt_state *s, const char *name,
                              const char *password, struct mt_error *err);

/* Looks up a user by name; MT_ENOTFOUND when absent. */
enum mt_status mt_user_get(struct mt_state *s, const char *name,
                           struct mt_user *out, struct mt_error *err);

/* Checks a password. MT_ENOTFOUND (one message for both cases) when the
 * user does not exist or the password is wrong; an unknown user costs the
 * same hashing time as a known one. On success *out is the user. */
enum mt_status mt_user_verify(struct mt_state *s, const char *name,
                              const char *password, struct mt_user *out,
                              struct mt_error *err);

typedef enum mt_status (*mt_user_fn)(const struct mt_user *u, void *user);

/* Calls fn for every user in name order; stops at fn's first failure. */
enum mt_status mt_user_list(struct mt_state *s, mt_user_fn fn, void *user,
                            struct mt_error *err);

/* ==== Sessions ==== */

/* Starts a session for 'user_id' lasting 'ttl_s' seconds: writes a new
 * random session id and CSRF token (64 hex digits each) into 'sid' and
 * 'csrf'. Only the SHA-256 of the session id is stored. */
enum mt_status mt_session_create(struct mt_state *s, int64_t user_id,
                                 int64_t ttl_s, char sid[MT_SECRET_SIZE],
                                 char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err);

/* Finds the live session 'sid': fills *u and 'csrf'. MT_ENOTFOUND when it
 * is unknown or expired. */
enum mt_status mt_session_lookup(struct mt_state *s, const char *sid,
                                 struct mt_user *u, char csrf[MT_SECRET_SIZE],
                                 struct mt_error *err);

/* Ends session 'sid' (no error when it is already gone) and removes
 * expired sessions. */
enum mt_status mt_session_delete(struct mt_state *s, const char *sid,
                                 struct mt_error *err);

/* ==== API tokens ==== */

/* Creates an API token for 'user_id' named 'name' (may be NULL) that
 * expires ttl_s seconds from now (0: never): the token text goes to
 * 'token' (shown once; only its SHA-256 is stored) and its row id to
 * *id. */
enum mt_status mt_token_create(struct mt_state *s, int64_t user_id,
                               const char *name, int64_t ttl_s, int64_t *id,
                               char token[MT_TOKEN_SIZE], struct mt_error *err);

/* Revokes every API token of 'user_id' (user passwd --revoke-tokens). */
enum mt_status mt_token_revoke_all(struct mt_state *s, int64_t user_id,
                                   struct mt_error *err);

/* Finds the owner of 'token'; MT_ENOTFOUND when unknown, revoked or
 * expired.
 * *token_id (may be NULL) receives the token's id. */
enum mt_status mt_token_lookup(struct mt_state *s, const char *token,
                               struct mt_user *u, int64_t *token_id,
                               struct mt_error *err);

/* Revokes (deletes) token 'id'. With owner > 0 only that user's token is
 * revoked. MT_ENOTFOUND when no such token (of that owner) exists. */
enum mt_status mt_token_revoke(struct mt_state *s, int64_t id, int64_t owner,
                               struct mt_error *err);

struct mt_token_info {
    int64_t id;
    const char *name;
    int64_t created_at;
    int64_t expires_at; /* 0: never */
};

typedef enum mt_status (*mt_token_fn)(const struct mt_token_info *t,
                                      void *user);

/* Calls fn for each of the user's tokens (newest first); strings are
 * valid during the call. */
enum mt_status mt_token_list(struct mt_state *s, int64_t user_id,
                             mt_token_fn fn, void *user, struct mt_error *err);

/* ==== Runs (API jobs) ==== */

struct mt_run {
    int64_t id;
    int64_t user_id;        /* 0 when the user was deleted */
    const char *user;       /* name at the time of the run */
    const char *kind;       /* "score", "check", ... */
    const char *status;     /* "queued", "running", "done", "failed",
                               "interrupted" (its server stopped while it
                               was queued or running; a batch resumes) */
    const char *input_hash; /* SHA-256 hex of the input, or NULL */
    const char *result;     /* JSON text, or NULL */
    const char *error;      /* message, or NULL */
    int64_t created_at;
    int64_t finished_at; /* 0 while unfinished */
};

typedef enum mt_status (*mt_run_fn)(const struct mt_run *r, void *user);

/* Records a new run with status "queued"; *id receives its id. */
enum mt_status mt_run_create(struct mt_state *s, int64_t user_id,
                             const char *username, const char *kind,
                             const char *input_hash, int64_t *id,
                             struct mt_error *err);

/* Sets a run's status and, when non-NULL, its result JSON and error;
 * "done" and "failed" also set finished_at, and "done" clears the error
 * (a resumed run that completes has none). MT_ENOTFOUND for no such run. */
enum mt_status mt_run_update(struct mt_state *s, int64_t id, const char *status,
                             const char *result, const char *error,
                             struct mt_error *err);

/* Marks every "queued" or "running" run "interrupted" with error 'why'
 * (and finished_at): for a server that starts on a store no other server
 * uses, none of them has a job any more. *n (may be NULL) gets how many. */
enum mt_status mt_run_interrupt_unfinished(struct mt_state *s, const char *why,
                                           int64_t *n, struct mt_error *err);

/* Ends run 'id' as "failed" with error 'why' when it is "interrupted";
 * *done is 1 when it was. */
enum mt_status mt_run_finish_interrupted(struct mt_state *s, int64_t id,
                                         const char *why, int *done,
                                         struct mt_error *err);

/* Calls fn with run 'id' (strings valid during the call); MT_ENOTFOUND
 * when absent. */
enum mt_status mt_run_get(struct mt_state *s, int64_t id, mt_run_fn fn,
                          void *user, struct mt_error *err);

/* Calls fn for up to 'limit' runs, newest first, with id < before (0 = no
 * bound), of user 'user_id' (0 = everyone's). 'result' is NULL in the
 * listing. */
enum mt_status mt_run_list(struct mt_state *s, int64_t user_id, int64_t before,
                           uint32_t limit, mt_run_fn fn, void *user,
                           struct mt_error *err);

/* Asks for run 'id' to stop: sets its cancel flag when it is queued or
 * running, for the server that runs it to see (mt_run_cancel_requested).
 * *live (may be NULL) is 1 when the run was unfinished. */
enum mt_status mt_run_cancel_request(struct mt_state *s, int64_t id, int *live,
                                     struct mt_error *err);

/* *yes is 1 when someone asked for run 'id' to stop. */
enum mt_status mt_run_cancel_requested(struct mt_state *s, int64_t id, int *yes,
                                       struct mt_error *err);

/* Keeps the HTML report of run 'id' (replacing an earlier one), so that
 * any server sharing the state can serve it. */
enum mt_status mt_run_report_put(struct mt_state *s, int64_t id,
                                 const char *html, struct mt_error *err);

/* Reads run 'id''s report into *html (the caller frees it with mt_free)
 * and its length into *n; MT_ENOTFOUND when it has none. */
enum mt_status mt_run_report_get(struct mt_state *s, int64_t id, char **html,
                                 size_t *n, struct mt_error *err);

/* ==== Run events (the live trace of a run) ==== */

/* Records event 'seq' (0, 1, ... in the order the job emitted them) of
 * run 'run_id': its SSE type ("step", "done", ...) and JSON data text.
 * Writing the same (run, seq) again is a no-op, so a re-sent statement
 * after a lost connection leaves one row. */
enum mt_status mt_run_event_add(struct mt_state *s, int64_t run_id, int64_t seq,
                                const char *type, const char *data,
                                struct mt_error *err);

typedef enum mt_status (*mt_run_event_fn)(int64_t seq, const char *type,
                                          const char *data, void *user);

/* Calls fn for up to 'limit' events of run 'run_id' with seq > after
 * (-1 for all), in seq order; strings are valid during the call. */
enum mt_status mt_run_event_list(struct mt_state *s, int64_t run_id,
                                 int64_t after, uint32_t limit,
                                 mt_run_event_fn fn, void *user,
                                 struct mt_error *err);

/* Deletes the event rows of up to 'limit' runs that finished before Unix
 * second 'before' (their trace is no longer streamed; the run keeps its
 * result); *deleted (may be NULL) receives how many rows went. */
enum mt_status mt_run_events_prune(struct mt_state *s, int64_t before,
                                   uint32_t limit, int64_t *deleted,
                                   struct mt_error *err);

/* ==== Failed logins, counted across servers ==== */

/* Counts a failed login for 'key' (an account or an address); *fails
 * receives the count since the last mt_login_reset. */
enum mt_status mt_login_fail(struct mt_state *s, const char *key,
                             int64_t *fails, struct mt_error *err);

/* Locks 'key' until Unix second 'until'. */
enum mt_status mt_login_lock(struct mt_state *s, const char *key, int64_t until,
                             struct mt_error *err);

/* *until is the Unix second 'key' is locked until (0: never locked). */
enum mt_status mt_login_locked_until(struct mt_state *s, const char *key,
                                     int64_t *until, struct mt_error *err);

/* Forgets the failures of 'key' (a successful login). */
enum mt_status mt_login_reset(struct mt_state *s, const char *key,
                              struct mt_error *err);

/* ==== Audit trail and settings ==== */

/* Appends an audit record: who (user_id 0 and username NULL for
 * anonymous), the action and a JSON object of details ('detail' may be
 * NULL for {}). Callers put hashes, never note text or secrets, in it. */
enum mt_status mt_audit_add(struct mt_state *s, int64_t user_id,
                            const char *username, const char *action,
                            const char *detail, struct mt_error *err);

/* Reads setting 'key' into buf (n bytes); *found is 0 when unset. */
enum mt_status mt_setting_get(struct mt_state *s, const char *key, char *buf,
                              size_t n, int *found, struct mt_error *err);

/* Sets 'key' to 'value'. */
enum mt_status mt_setting_put(struct mt_state *s, const char *key,
                              const char *value, struct mt_error *err);

/* Writes the SHA-256 of n bytes at p as 64 lowercase hex digits and a NUL
 * into out. Thread-safe. */
void mt_sha256_hex(const void *p, size_t n, char out[MT_SECRET_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
