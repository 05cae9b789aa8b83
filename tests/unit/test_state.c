/* The state layer (include/medtrust/state.h, accounts.h): every case runs
 * twice, on the embedded SQLite state of a store folder and on a
 * PostgreSQL database of a throwaway cluster (tests/unit/pg_fixture.h),
 * and must behave the same on both. PostgreSQL alone: a server restart
 * under an open handle, and migrations applied once. */
#include "check.h"

#include <time.h>
#include <unistd.h>

#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "medtrust/state.h"
#include "pg_fixture.h"
#include "store/pg.h"
#include "store/state_int.h"
#include "tmpdir.h"

static struct pgfx fx;
static int dbs; /* PostgreSQL databases made so far: one per case */

struct engine {
    const char *name; /* "sqlite" or "postgresql" */
    char url[160];    /* this case's state (sqlite: in tmpl, tmpdir.h) */
};

static struct engine sqlite_engine = {"sqlite", ""};
static struct engine pg_engine = {"postgresql", ""};

static int group_setup(void **state)
{
    (void)state;
    return pgfx_suite_start(&fx);
}

static int group_teardown(void **state)
{
    (void)state;
    pgfx_stop(&fx);
    return 0;
}

/* A new, empty state for each case: a fresh store folder, or a fresh
 * database of the suite's cluster. */
static int case_setup(void **state)
{
    struct engine *e = *state;
    struct mtx_pg_params p;
    struct mtx_pg *pg = NULL;
    char sql[64];

    if (strcmp(e->name, "sqlite") == 0) {
        if (tmpdir_make("mt-state") != 0)
            return -1;
        snprintf(e->url, sizeof e->url, "sqlite:%s/db", tmpl);
        return 0;
    }
    mtx_pg_default_params(&p);
    p.url = fx.url;
    if (mtx_pg_open(&p, &pg, NULL) != MT_OK)
        return -1;
    snprintf(sql, sizeof sql, "CREATE DATABASE t%d", ++dbs);
    if (mtx_pg_exec(pg, sql, 0, NULL, NULL, NULL) != MT_OK) {
        mtx_pg_close(pg);
        return -1;
    }
    mtx_pg_close(pg);
    /* fx.url ends in /medtrust */
    snprintf(e->url, sizeof e->url, "%.*st%d",
             (int)(strrchr(fx.url, '/') + 1 - fx.url), fx.url, dbs);
    return 0;
}

static int case_teardown(void **state)
{
    (void)state;
    return tmpdir_remove(); /* a PostgreSQL case made none: 0 */
}

static struct mt_state *open_state(void **state)
{
    struct engine *e = *state;
    struct mt_state *s = NULL;
    struct mt_error err;

    if (mt_state_open(e->url, &s, &err) != MT_OK)
        fail_msg("%s: %s", e->url, err.msg);
    assert_string_equal(mt_state_engine(s), e->name);
    return s;
}

/* ==== Users ==== */

static enum mt_status collect_user(const struct mt_user *u, void *user)
{
    char *names = user;

    strcat(names, u->name);
    strcat(names, u->role == MT_ROLE_ADMIN ? "* " : " ");
    return MT_OK;
}

static void test_users(void **state)
{
    struct mt_state *s = open_state(state);
    struct mt_user u;
    char names[128] = "";
    int64_t id = 0;

    assert_int_equal(
        mt_user_add(s, "bad name", "long-enough", MT_ROLE_USER, NULL, NULL),
        MT_EINVAL);
    assert_int_equal(mt_user_add(s, "carol", "short", MT_ROLE_USER, NULL, NULL),
                     MT_EINVAL);
    CHECK_OK(
        mt_user_add(s, "carol", "carol-password", MT_ROLE_USER, &id, NULL));
    CHECK(id > 0);
    assert_int_equal(
        mt_user_add(s, "carol", "carol-password", MT_ROLE_USER, NULL, NULL),
        MT_EINVAL);
    CHECK_OK(
        mt_user_add(s, "alice", "alice-password", MT_ROLE_ADMIN, NULL, NULL));
    assert_int_equal(mt_user_verify(s, "carol", "wrong-password", &u, NULL),
                     MT_ENOTFOUND);
    assert_int_equal(mt_user_verify(s, "nobody", "wrong-password", &u, NULL),
                     MT_ENOTFOUND);
    CHECK_OK(mt_user_verify(s, "carol", "carol-password", &u, NULL));
    CHECK(u.id == id && u.role == MT_ROLE_USER && u.created_at > 0);
    CHECK_OK(mt_user_list(s, collect_user, names, NULL));
    assert_string_equal(names, "alice* carol ");
    CHECK_OK(mt_user_passwd(s, "carol", "new-password", NULL));
    assert_int_equal(mt_user_verify(s, "carol", "carol-password", &u, NULL),
                     MT_ENOTFOUND);
    CHECK_OK(mt_user_verify(s, "carol", "new-password", &u, NULL));
    CHECK_OK(mt_user_del(s, "carol", NULL));
    assert_int_equal(mt_user_get(s, "carol", &u, NULL), MT_ENOTFOUND);
    assert_int_equal(mt_user_del(s, "carol", NULL), MT_ENOTFOUND);
    mt_state_close(s);
}

/* ==== Sessions and tokens ==== */

static void test_sessions(void **state)
{
    struct mt_state *s = open_state(state);
    char sid[MT_SECRET_SIZE], csrf[MT_SECRET_SIZE], c2[MT_SECRET_SIZE];
    char old[MT_SECRET_SIZE];
    struct mt_user u;
    int64_t id = 0;

    CHECK_OK(mt_user_add(s, "dan", "dan-password", MT_ROLE_USER, &id, NULL));
    CHECK_OK(mt_session_create(s, id, 3600, sid, csrf, NULL));
    CHECK_OK(mt_session_lookup(s, sid, &u, c2, NULL));
    assert_string_equal(csrf, c2);
    assert_string_equal(u.name, "dan");
    snprintf(old, sizeof old, "%s", sid);
    CHECK_OK(mt_session_create(s, id, -1, sid, csrf, NULL)); /* expired */
    assert_int_equal(mt_session_lookup(s, sid, &u, c2, NULL), MT_ENOTFOUND);
    CHECK_OK(mt_session_delete(s, old, NULL));
    assert_int_equal(mt_session_lookup(s, old, &u, c2, NULL), MT_ENOTFOUND);
    CHECK_OK(mt_session_delete(s, old, NULL)); /* already gone: fine */
    /* a new password ends every session */
    CHECK_OK(mt_session_create(s, id, 3600, sid, csrf, NULL));
    CHECK_OK(mt_user_passwd(s, "dan", "dan-password-2", NULL));
    assert_int_equal(mt_session_lookup(s, sid, &u, c2, NULL), MT_ENOTFOUND);
    mt_state_close(s);
}

static enum mt_status count_token(const struct mt_token_info *t, void *user)
{
    int *n = user;

    CHECK(t->id > 0 && t->name && t->created_at > 0);
    (*n)++;
    return MT_OK;
}

static void test_tokens(void **state)
{
    struct mt_state *s = open_state(state);
    char tok[MT_TOKEN_SIZE], tok2[MT_TOKEN_SIZE], tok3[MT_TOKEN_SIZE];
    struct mt_user u;
    int64_t id = 0, tid = 0, tid2 = 0, got = 0;
    int n = 0;

    CHECK_OK(mt_user_add(s, "erin", "erin-password", MT_ROLE_USER, &id, NULL));
    CHECK_OK(mt_token_create(s, id, "ci", 0, &tid, tok, NULL));
    CHECK(strncmp(tok, "mt_", 3) == 0 && strlen(tok) == 67);
    CHECK_OK(mt_token_create(s, id, NULL, 3600, &tid2, tok2, NULL));
    CHECK(tid2 > tid);
    CHECK_OK(mt_token_create(s, id, "old", -1, &got, tok3, NULL));
    CHECK_OK(mt_token_lookup(s, tok, &u, &got, NULL));
    CHECK(got == tid && u.id == id);
    CHECK_OK(mt_token_lookup(s, tok2, &u, NULL, NULL));
    /* ttl -1 is "never" (0 and below), as the API sends it */
    CHECK_OK(mt_token_lookup(s, tok3, &u, NULL, NULL));
    CHECK_OK(mt_token_list(s, id, count_token, &n, NULL));
    assert_int_equal(n, 3);
    assert_int_equal(mt_token_revoke(s, tid, id + 1000, NULL), MT_ENOTFOUND);
    CHECK_OK(mt_token_revoke(s, tid, id, NULL));
    assert_int_equal(mt_token_lookup(s, tok, &u, NULL, NULL), MT_ENOTFOUND);
    CHECK_OK(mt_token_revoke_all(s, id, NULL));
    assert_int_equal(mt_token_lookup(s, tok2, &u, NULL, NULL), MT_ENOTFOUND);
    CHECK_OK(mt_token_create(s, id, "t", 0, &tid, tok, NULL));
    CHECK_OK(mt_user_del(s, "erin", NULL)); /* takes the tokens along */
    assert_int_equal(mt_token_lookup(s, tok, &u, NULL, NULL), MT_ENOTFOUND);
    mt_state_close(s);
}

/* ==== Runs and their events ==== */

struct run_seen {
    char line[512];
};

static enum mt_status describe_run(const struct mt_run *r, void *user)
{
    struct run_seen *v = user;
    size_t n = strlen(v->line);

    snprintf(v->line + n, sizeof v->line - n, "%lld:%s:%s:%s:%s:%s:%d;",
             (long long)r->id, r->user, r->kind, r->status,
             r->result ? r->result : "-", r->error ? r->error : "-",
             r->finished_at > 0);
    return MT_OK;
}

static void test_runs(void **state)
{
    struct mt_state *s = open_state(state);
    struct run_seen v;
    int64_t uid = 0, a = 0, b = 0, c = 0;

    CHECK_OK(mt_user_add(s, "fay", "fay-password", MT_ROLE_USER, &uid, NULL));
    CHECK_OK(mt_run_create(s, uid, "fay", "check", "abc", &a, NULL));
    CHECK_OK(mt_run_create(s, 0, NULL, "score", NULL, &b, NULL));
    CHECK_OK(mt_run_create(s, uid, "fay", "ask", NULL, &c, NULL));
    CHECK(a > 0 && b > a && c > b);
    CHECK_OK(mt_run_update(s, a, "running", NULL, NULL, NULL));
    CHECK_OK(mt_run_update(s, a, "done", "{\"n\":1}", NULL, NULL));
    CHECK_OK(mt_run_update(s, b, "failed", NULL, "boom", NULL));
    assert_int_equal(mt_run_update(s, c + 100, "done", NULL, NULL, NULL),
                     MT_ENOTFOUND);
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_get(s, a, describe_run, &v, NULL));
    snprintf(v.line + 256, 256, "%lld:fay:check:done:{\"n\":1}:-:1;",
             (long long)a);
    assert_string_equal(v.line, v.line + 256);
    assert_int_equal(mt_run_get(s, c + 100, describe_run, &v, NULL),
                     MT_ENOTFOUND);
    /* newest first, one user's, paged; the listing leaves result out */
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_list(s, uid, 0, 10, describe_run, &v, NULL));
    snprintf(v.line + 256, 256,
             "%lld:fay:ask:queued:-:-:0;%lld:fay:check:"
             "done:-:-:1;",
             (long long)c, (long long)a);
    assert_string_equal(v.line, v.line + 256);
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_list(s, 0, c, 1, describe_run, &v, NULL));
    snprintf(v.line + 256, 256, "%lld::score:failed:-:boom:1;", (long long)b);
    assert_string_equal(v.line, v.line + 256);
    /* a deleted user's runs stay, with user id 0 */
    CHECK_OK(mt_user_del(s, "fay", NULL));
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_list(s, 0, 0, 10, describe_run, &v, NULL));
    CHECK(strstr(v.line, ":fay:ask:") != NULL);
    mt_state_close(s);
}

/* The insert mt_run_create sends, sent twice with its key (as pg.c does
 * after a lost reply): the second lands on the first row, on both
 * engines; another key is another run. */
static void test_run_insert_is_idempotent(void **state)
{
    struct mt_state *s = open_state(state);
    struct run_seen v;
    int64_t a = 0, again = 0, b = 0, c = 0;

    CHECK_OK(mtx_run_insert(s, 0, "x", "check", "h1", "key-1", &a, NULL));
    CHECK_OK(mtx_run_insert(s, 0, "x", "check", "h1", "key-1", &again, NULL));
    CHECK_OK(mtx_run_insert(s, 0, "x", "check", "h1", "key-2", &b, NULL));
    CHECK(a > 0 && again == a && b > a);
    CHECK_OK(mt_run_create(s, 0, "x", "ask", NULL, &c, NULL));
    CHECK(c > b);
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_list(s, 0, 0, 10, describe_run, &v, NULL));
    snprintf(v.line + 256, 256,
             "%lld:x:ask:queued:-:-:0;%lld:x:check:queued:-:-:0;"
             "%lld:x:check:queued:-:-:0;",
             (long long)c, (long long)b, (long long)a);
    assert_string_equal(v.line, v.line + 256);
    mt_state_close(s);
}

static void test_run_cancel_flag(void **state)
{
    struct mt_state *s = open_state(state);
    int64_t run = 0;
    int live = 0, yes = 1;

    CHECK_OK(mt_run_create(s, 0, "x", "check", NULL, &run, NULL));
    CHECK_OK(mt_run_cancel_requested(s, run, &yes, NULL));
    CHECK(!yes);
    CHECK_OK(mt_run_cancel_request(s, run, &live, NULL));
    CHECK(live);
    CHECK_OK(mt_run_cancel_requested(s, run, &yes, NULL));
    CHECK(yes);
    CHECK_OK(mt_run_update(s, run, "failed", NULL, "cancelled", NULL));
    CHECK_OK(mt_run_cancel_request(s, run, &live, NULL));
    CHECK(!live); /* finished: nothing to stop */
    mt_state_close(s);
}

static void test_run_report(void **state)
{
    struct mt_state *s = open_state(state);
    int64_t run = 0;
    char *html = NULL;
    size_t n = 0;

    CHECK_OK(mt_run_create(s, 0, "x", "score", NULL, &run, NULL));
    assert_int_equal(mt_run_report_get(s, run, &html, &n, NULL), MT_ENOTFOUND);
    CHECK(html == NULL);
    CHECK_OK(mt_run_report_put(s, run, "<p>one</p>", NULL));
    CHECK_OK(mt_run_report_put(s, run, "<p>two \xc3\xa9</p>", NULL));
    CHECK_OK(mt_run_report_get(s, run, &html, &n, NULL));
    assert_string_equal(html, "<p>two \xc3\xa9</p>");
    assert_int_equal(n, strlen(html));
    mt_free(html);
    mt_state_close(s);
}

static enum mt_status collect_event(int64_t seq, const char *type,
                                    const char *data, void *user)
{
    char *out = user;
    size_t n = strlen(out);

    snprintf(out + n, 256 - n, "%lld %s %s|", (long long)seq, type, data);
    return MT_OK;
}

static void test_run_events(void **state)
{
    struct mt_state *s = open_state(state);
    char out[256] = "";
    int64_t run = 0, other = 0;

    CHECK_OK(mt_run_create(s, 0, "x", "check", NULL, &run, NULL));
    CHECK_OK(mt_run_create(s, 0, "x", "check", NULL, &other, NULL));
    CHECK_OK(mt_run_event_add(s, run, 0, "status", "{\"status\":\"running\"}",
                              NULL));
    CHECK_OK(mt_run_event_add(s, run, 1, "step", "{\"step\":1}", NULL));
    /* the same event again (a re-sent statement) leaves one row */
    CHECK_OK(mt_run_event_add(s, run, 1, "step", "{\"step\":1}", NULL));
    CHECK_OK(mt_run_event_add(s, other, 0, "step", "{}", NULL));
    CHECK_OK(
        mt_run_event_add(s, run, 2, "done", "{\"status\":\"done\"}", NULL));
    CHECK_OK(mt_run_event_list(s, run, -1, 100, collect_event, out, NULL));
    assert_string_equal(out, "0 status {\"status\":\"running\"}|1 step "
                             "{\"step\":1}|2 done {\"status\":\"done\"}|");
    out[0] = '\0';
    CHECK_OK(mt_run_event_list(s, run, 0, 1, collect_event, out, NULL));
    assert_string_equal(out, "1 step {\"step\":1}|");
    mt_state_close(s);
}

/* Pruning takes the rows of runs that ended before the cut, never of a
 * run still going, and leaves the run itself. */
static void test_run_events_prune(void **state)
{
    struct mt_state *s = open_state(state);
    struct run_seen v;
    char out[256] = "";
    int64_t ended = 0, going = 0, gone = -1;
    int64_t now = (int64_t)time(NULL);

    CHECK_OK(mt_run_create(s, 0, "x", "ask", NULL, &ended, NULL));
    CHECK_OK(mt_run_create(s, 0, "x", "ask", NULL, &going, NULL));
    CHECK_OK(mt_run_event_add(s, ended, 0, "token", "{\"text\":\"a\"}", NULL));
    CHECK_OK(mt_run_event_add(s, ended, 1, "done", "{}", NULL));
    CHECK_OK(mt_run_event_add(s, going, 0, "token", "{\"text\":\"b\"}", NULL));
    CHECK_OK(mt_run_update(s, ended, "done", "{\"n\":2}", NULL, NULL));
    CHECK_OK(mt_run_events_prune(s, now - 3600, 100, &gone, NULL));
    assert_int_equal(gone, 0); /* it ended just now: kept */
    CHECK_OK(mt_run_events_prune(s, now + 10, 100, &gone, NULL));
    CHECK(gone >= 2);
    CHECK_OK(mt_run_event_list(s, ended, -1, 100, collect_event, out, NULL));
    assert_string_equal(out, "");
    CHECK_OK(mt_run_event_list(s, going, -1, 100, collect_event, out, NULL));
    assert_string_equal(out, "0 token {\"text\":\"b\"}|");
    memset(&v, 0, sizeof v);
    CHECK_OK(mt_run_get(s, ended, describe_run, &v, NULL));
    CHECK(strstr(v.line, ":done:{\"n\":2}:") != NULL);
    mt_state_close(s);
}

static void test_login_throttle(void **state)
{
    struct mt_state *s = open_state(state);
    int64_t fails = 0, until = 7;

    CHECK_OK(mt_login_locked_until(s, "a:kim", &until, NULL));
    assert_int_equal(until, 0);
    CHECK_OK(mt_login_fail(s, "a:kim", &fails, NULL));
    assert_int_equal(fails, 1);
    CHECK_OK(mt_login_fail(s, "a:kim", &fails, NULL));
    CHECK_OK(mt_login_fail(s, "ip:127.0.0.1", &fails, NULL));
    assert_int_equal(fails, 1);
    CHECK_OK(mt_login_fail(s, "a:kim", &fails, NULL));
    assert_int_equal(fails, 3);
    CHECK_OK(mt_login_lock(s, "a:kim", 2000000000, NULL));
    CHECK_OK(mt_login_locked_until(s, "a:kim", &until, NULL));
    assert_int_equal(until, 2000000000);
    CHECK_OK(mt_login_reset(s, "a:kim", NULL));
    CHECK_OK(mt_login_locked_until(s, "a:kim", &until, NULL));
    assert_int_equal(until, 0);
    CHECK_OK(mt_login_fail(s, "a:kim", &fails, NULL));
    assert_int_equal(fails, 1);
    mt_state_close(s);
}

/* ==== Settings and audit ==== */

static void test_settings_audit(void **state)
{
    struct mt_state *s = open_state(state);
    char v[32];
    int found = 1;

    CHECK_OK(mt_setting_get(s, "registration", v, sizeof v, &found, NULL));
    CHECK(!found);
    CHECK_OK(mt_setting_put(s, "registration", "closed", NULL));
    CHECK_OK(mt_setting_put(s, "registration", "open", NULL));
    CHECK_OK(mt_setting_get(s, "registration", v, sizeof v, &found, NULL));
    CHECK(found);
    assert_string_equal(v, "open");
    CHECK_OK(mt_audit_add(s, 0, NULL, "login_failed", NULL, NULL));
    CHECK_OK(mt_audit_add(s, 7, "gil", "check", "{\"h\":\"x\"}", NULL));
    mt_state_close(s);
}

/* ==== Two handles, as two servers ==== */

static void test_two_handles_share(void **state)
{
    struct mt_state *a = open_state(state);
    struct mt_state *b = open_state(state);
    char sid[MT_SECRET_SIZE], csrf[MT_SECRET_SIZE], c2[MT_SECRET_SIZE];
    struct mt_user u;
    int64_t id = 0;

    CHECK_OK(mt_user_add(a, "hal", "hal-password", MT_ROLE_USER, &id, NULL));
    CHECK_OK(mt_session_create(a, id, 3600, sid, csrf, NULL));
    CHECK_OK(mt_session_lookup(b, sid, &u, c2, NULL));
    assert_string_equal(u.name, "hal");
    assert_string_equal(csrf, c2);
    CHECK_OK(mt_session_delete(b, sid, NULL));
    assert_int_equal(mt_session_lookup(a, sid, &u, c2, NULL), MT_ENOTFOUND);
    mt_state_close(b);
    mt_state_close(a);
}

/* ==== PostgreSQL only ==== */

static void test_pg_restart_under_handle(void **state)
{
    struct mt_state *s = open_state(state);
    char sid[MT_SECRET_SIZE], csrf[MT_SECRET_SIZE], c2[MT_SECRET_SIZE];
    struct mt_user u;
    int64_t id = 0;

    CHECK_OK(mt_user_add(s, "ivy", "ivy-password", MT_ROLE_USER, &id, NULL));
    CHECK_OK(mt_session_create(s, id, 3600, sid, csrf, NULL));
    assert_int_equal(pgfx_restart(&fx), 0);
    CHECK_OK(mt_session_lookup(s, sid, &u, c2, NULL));
    CHECK(mt_state_reconnects(s) == 1);
    assert_string_equal(u.name, "ivy");
    mt_state_close(s);
}

static void test_pg_migrates_once(void **state)
{
    struct engine *e = *state;
    struct mt_state *a = open_state(state);
    struct mt_state *b = open_state(state);
    struct mtx_pg_params p;
    struct mtx_pg *pg = NULL;
    PGresult *r = NULL;

    mtx_pg_default_params(&p);
    p.url = e->url;
    CHECK_OK(mtx_pg_open(&p, &pg, NULL));
    CHECK_OK(mtx_pg_exec(pg,
                         "SELECT count(*), max(version) FROM schema_migrations"
                         " WHERE component = 'state'",
                         0, NULL, &r, NULL));
    assert_int_equal(mtx_pg_int(r, 0, 0), 5); /* one row per step */
    assert_int_equal(mtx_pg_int(r, 0, 1), 5);
    PQclear(r);
    CHECK(strstr(mt_state_where(a), "postgresql://medtrust@127.0.0.1:"));
    mtx_pg_close(pg);
    mt_state_close(b);
    mt_state_close(a);
}

static void test_bad_state_url(void **state)
{
    struct mt_state *s = NULL;
    struct mt_error err;

    (void)state;
    assert_int_equal(
        mt_state_open("postgresql://u:hunter22@127.0.0.1:1/x", &s, &err),
        MT_EIO);
    CHECK(s == NULL && strstr(err.msg, "hunter22") == NULL);
    assert_int_equal(mt_state_open("", &s, &err), MT_EINVAL);
    CHECK(mt_state_is_shared("postgres://h/db"));
    CHECK(!mt_state_is_shared("/var/db"));
}

/* The state a command names: its --state, else $MEDTRUST_STATE, an empty
 * value naming none. */
static void test_state_url(void **state)
{
    const char *saved = getenv(MT_STATE_ENV);
    char *keep = saved ? strdup(saved) : NULL;

    (void)state;
    setenv(MT_STATE_ENV, "postgresql://env/db", 1);
    CHECK(strcmp(mt_state_url(NULL), "postgresql://env/db") == 0);
    CHECK(strcmp(mt_state_url("postgresql://opt/db"), "postgresql://opt/db") ==
          0);
    CHECK(mt_state_url("") == NULL); /* given empty: none, not the env's */
    setenv(MT_STATE_ENV, "", 1);
    CHECK(mt_state_url(NULL) == NULL);
    unsetenv(MT_STATE_ENV);
    CHECK(mt_state_url(NULL) == NULL);
    if (keep)
        setenv(MT_STATE_ENV, keep, 1);
    free(keep);
}

#define BOTH(t)                                                                \
    cmocka_unit_test_prestate_setup_teardown(t, case_setup, case_teardown,     \
                                             &sqlite_engine),                  \
        cmocka_unit_test_prestate_setup_teardown(t, case_setup, case_teardown, \
                                                 &pg_engine)
#define PG_ONLY(t)                                                             \
    cmocka_unit_test_prestate_setup_teardown(t, case_setup, case_teardown,     \
                                             &pg_engine)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_users),
        BOTH(test_sessions),
        BOTH(test_tokens),
        BOTH(test_runs),
        BOTH(test_run_events),
        BOTH(test_run_events_prune),
        BOTH(test_run_insert_is_idempotent),
        BOTH(test_run_cancel_flag),
        BOTH(test_run_report),
        BOTH(test_settings_audit),
        BOTH(test_login_throttle),
        BOTH(test_two_handles_share),
        PG_ONLY(test_pg_restart_under_handle),
        PG_ONLY(test_pg_migrates_once),
        cmocka_unit_test(test_bad_state_url),
        cmocka_unit_test(test_state_url),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
