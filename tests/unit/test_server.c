/* API tests for src/server and src/store/accounts.c: the server runs in
 * process on an ephemeral loopback port and libcurl talks to it. Covers
 * 401/403/CSRF, tokens, 400 on bad JSON, 413, 429, path traversal, search
 * hits, score runs, an event stream of a synthetic job, and graceful stop
 * while a job runs. */
#include "check.h"

#include <curl/curl.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/server.h"
#include "tmpdir.h"

static char db[96];

/* ==== Fixture: a store with a few documents, an index and two users ==== */

static void put(struct mt_store *s, int64_t src, const char *id,
                const char *title, const char *text)
{
    struct mt_doc d = {id, title, text, strlen(text), NULL};
    CHECK_OK(mt_store_put(s, src, &d, NULL, NULL));
}

static int setup(void **state)
{
    struct mt_store *s = NULL;
    struct mt_state *acc = NULL;
    int64_t src = 0;

    (void)state;
    mtx_jsonl_init_alloc();
    if (tmpdir_make("mt-server") != 0)
        return -1;
    snprintf(db, sizeof db, "%s/db", tmpl);
    CHECK_OK(mt_store_open(db, NULL, &s, NULL));
    CHECK_OK(mt_store_source(s, "notes", &src, NULL));
    put(s, src, "d1", "Gout", "Gout causes sudden joint pain and swelling.");
    put(s, src, "d2", "Asthma", "Asthma narrows the airways; wheezing.");
    put(s, src, "d3", NULL, "Metformin treats type 2 diabetes.");
    CHECK_OK(mt_index_build(s, NULL, NULL, NULL));
    CHECK_OK(mt_state_from_store(s, &acc, NULL));
    CHECK_OK(
        mt_user_add(acc, "alice", "alice-password", MT_ROLE_ADMIN, NULL, NULL));
    CHECK_OK(mt_user_add(acc, "bob", "bob-password", MT_ROLE_USER, NULL, NULL));
    mt_state_close(acc);
    mt_store_close(s);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

static int server_teardown(void **state)
{
    curl_global_cleanup();
    return teardown(state);
}

/* Set by a test before start(): 0 keeps the default. */
static size_t opt_replay_max;
static uint32_t opt_sse_idle_s;

static struct mt_server *start(double rate, size_t max_body)
{
    struct mt_server_params p;
    struct mt_server *srv = NULL;
    struct mt_error err = {MT_OK, ""};
    char logs[128];

    snprintf(logs, sizeof logs, "%s/logs", tmpl);
    mt_server_default_params(&p);
    p.db_dir = db;
    p.listen = "127.0.0.1:0";
    p.data_dir = logs;
    p.rate_per_s = rate;
    p.rate_burst = 3;
    p.max_body = max_body;
    p.test_routes = 1;
    p.threads = 2;
    p.llm_jobs = 2;
    if (opt_replay_max)
        p.replay_max = opt_replay_max;
    if (opt_sse_idle_s) {
        p.sse_idle_s = opt_sse_idle_s;
        p.max_conns_per_ip = 0; /* 64 streams and a client, one address */
    }
    if (mt_server_start(&p, &srv, &err) != MT_OK)
        fprintf(stderr, "start: %s\n", err.msg);
    CHECK(srv != NULL);
    CHECK(mt_server_port(srv) > 0);
    return srv;
}

/* ==== A small HTTP client ==== */

struct client {
    CURL *c;
    uint16_t port;
    char csrf[MT_SECRET_SIZE];
    char bearer[MT_TOKEN_SIZE + 32];
    long status;
    struct mt_buf body;
};

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
    struct client *cl = user;

    if (mtx_buf_append(&cl->body, p, size * n) != MT_OK)
        return 0;
    return size * n;
}

static void client_init(struct client *cl, uint16_t port)
{
    memset(cl, 0, sizeof *cl);
    cl->c = curl_easy_init();
    cl->port = port;
    cl->body = MT_BUF_INIT((size_t)1 << 26);
    curl_easy_setopt(cl->c, CURLOPT_COOKIEFILE, ""); /* cookie engine */
    curl_easy_setopt(cl->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(cl->c, CURLOPT_WRITEDATA, cl);
    curl_easy_setopt(cl->c, CURLOPT_TIMEOUT, 30L);
}

static void client_free(struct client *cl)
{
    curl_easy_cleanup(cl->c);
    mtx_buf_free(&cl->body);
}

/* Sends a request (body NULL: none) and returns the status; the answer
 * is in cl->body.data. With csrf set, the session's token is sent. */
static long req(struct client *cl, const char *method, const char *path,
                const char *body, int csrf)
{
    struct curl_slist *h = NULL;
    char url[512], hdr[160];

    mtx_buf_reset(&cl->body);
    mtx_buf_reserve(&cl->body, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", cl->port, path);
    curl_easy_setopt(cl->c, CURLOPT_URL, url);
    curl_easy_setopt(cl->c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(cl->c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cl->c, CURLOPT_HTTPGET, body ? 0L : 1L);
    if (body)
        curl_easy_setopt(cl->c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cl->c, CURLOPT_PATH_AS_IS, 1L);
    if (csrf && cl->csrf[0]) {
        snprintf(hdr, sizeof hdr, "X-CSRF-Token: %s", cl->csrf);
        h = curl_slist_append(h, hdr);
    }
    if (cl->bearer[0])
        h = curl_slist_append(h, cl->bearer);
    h = curl_slist_append(h, "Expect:");
    if (body) /* login and register take only JSON */
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(cl->c, CURLOPT_HTTPHEADER, h);
    cl->status = 0;
    if (curl_easy_perform(cl->c) == CURLE_OK)
        curl_easy_getinfo(cl->c, CURLINFO_RESPONSE_CODE, &cl->status);
    curl_slist_free_all(h);
    return cl->status;
}

static json_t *body_json(const struct client *cl)
{
    json_t *o = json_loads(cl->body.data ? cl->body.data : "", 0, NULL);

    CHECK(o != NULL);
    return o;
}

static void login(struct client *cl, const char *user, const char *pw)
{
    char body[128];
    json_t *o;

    snprintf(body, sizeof body, "{\"username\":\"%s\",\"password\":\"%s\"}",
             user, pw);
    assert_int_equal(req(cl, "POST", "/v1/login", body, 0), 200);
    o = body_json(cl);
    snprintf(cl->csrf, sizeof cl->csrf, "%s",
             json_string_value(json_object_get(o, "csrf_token")));
    CHECK(strlen(cl->csrf) == 64);
    json_decref(o);
}

static const char search_body[] = "{\"query\":\"gout joint pain\",\"k\":2}";

/* ==== Tests ==== */

static void test_server_auth_csrf_roles(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a, b;

    (void)state;
    client_init(&a, mt_server_port(srv));
    client_init(&b, mt_server_port(srv));
    assert_int_equal(req(&a, "GET", "/v1/health", NULL, 0), 200);
    assert_int_equal(req(&a, "POST", "/v1/search", search_body, 0), 401);
    assert_int_equal(req(&a, "GET", "/v1/runs", NULL, 0), 401);
    assert_int_equal(req(&a, "POST", "/v1/login",
                         "{\"username\":\"alice\",\"password\":\"nope-nope\"}",
                         0),
                     401);
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/search", search_body, 0), 403);
    CHECK(strstr(a.body.data, "X-CSRF-Token") != NULL);
    assert_int_equal(req(&a, "POST", "/v1/search", search_body, 1), 200);
    assert_int_equal(req(&a, "GET", "/v1/users", NULL, 0), 200);
    login(&b, "bob", "bob-password");
    assert_int_equal(req(&b, "GET", "/v1/users", NULL, 0), 403);
    assert_int_equal(
        req(&b, "PUT", "/v1/settings", "{\"registration\":\"closed\"}", 1),
        403);
    assert_int_equal(req(&b, "POST", "/v1/logout", NULL, 1), 200);
    assert_int_equal(req(&b, "GET", "/v1/me", NULL, 0), 401);
    client_free(&a);
    client_free(&b);
    mt_server_stop(srv, 1);
}

static void test_server_token_works_until_revoked(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a, t;
    char path[64];
    json_t *o;
    json_int_t id;

    (void)state;
    client_init(&a, mt_server_port(srv));
    client_init(&t, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/tokens", "{\"name\":\"ci\"}", 1),
                     201);
    o = body_json(&a);
    id = json_integer_value(json_object_get(o, "id"));
    snprintf(t.bearer, sizeof t.bearer, "Authorization: Bearer %s",
             json_string_value(json_object_get(o, "token")));
    json_decref(o);
    /* a token needs no CSRF header */
    assert_int_equal(req(&t, "POST", "/v1/search", search_body, 0), 200);
    snprintf(path, sizeof path, "/v1/tokens/%lld", (long long)id);
    assert_int_equal(req(&a, "DELETE", path, NULL, 1), 200);
    assert_int_equal(req(&t, "POST", "/v1/search", search_body, 0), 401);
    snprintf(t.bearer, sizeof t.bearer, "Authorization: Bearer mt_00");
    assert_int_equal(req(&t, "GET", "/v1/me", NULL, 0), 401);
    client_free(&a);
    client_free(&t);
    mt_server_stop(srv, 1);
}

static void test_server_search_returns_cli_hits(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a;
    json_t *o, *h;

    (void)state;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/search", search_body, 1), 200);
    o = body_json(&a);
    h = json_array_get(json_object_get(o, "hits"), 0);
    CHECK(json_array_size(json_object_get(o, "hits")) >= 1);
    CHECK(json_integer_value(json_object_get(h, "rank")) == 1);
    assert_string_equal(json_string_value(json_object_get(h, "doc_id")), "d1");
    CHECK(json_object_get(h, "chunk_id") && json_object_get(h, "score") &&
          json_object_get(h, "text") && json_object_get(h, "source"));
    json_decref(o);
    assert_int_equal(req(&a, "POST", "/v1/search", "{\"query\":", 1), 400);
    CHECK(strstr(a.body.data, "malformed JSON") != NULL);
    assert_int_equal(req(&a, "POST", "/v1/search", "[1]", 1), 400);
    assert_int_equal(req(&a, "POST", "/v1/search", "{\"k\":3}", 1), 400);
    assert_int_equal(
        req(&a, "POST", "/v1/search", "{\"query\":\"x\",\"k\":0}", 1), 400);
    assert_int_equal(req(&a, "POST", "/v1/check", "{}", 1), 400);
    assert_int_equal(req(&a, "POST", "/v1/check",
                         "{\"note\":\"x.\",\"strategy\":\"nope\"}", 1),
                     400);
    client_free(&a);
    mt_server_stop(srv, 1);
}

static void test_server_limits_413_429(void **state)
{
    struct mt_server *srv = start(1, 4096);
    struct client a;
    char big[8192];
    int i, got429 = 0;

    (void)state;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/search", big, 1), 413);
    for (i = 0; i < 10 && !got429; i++)
        got429 = req(&a, "GET", "/v1/me", NULL, 0) == 429;
    CHECK(got429);
    client_free(&a);
    mt_server_stop(srv, 1);
}

static void test_server_static_refuses_traversal(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a;

    (void)state;
    client_init(&a, mt_server_port(srv));
    assert_int_equal(req(&a, "GET", "/", NULL, 0), 200);
    CHECK(strstr(a.body.data, "<html") != NULL);
    assert_int_equal(req(&a, "GET", "/login.html", NULL, 0), 200);
    assert_int_equal(req(&a, "GET", "/../etc/passwd", NULL, 0), 400);
    assert_int_equal(req(&a, "GET", "/%2e%2e/%2e%2e/etc/passwd", NULL, 0), 400);
    assert_int_equal(req(&a, "GET", "/etc/passwd", NULL, 0), 404);
    assert_int_equal(req(&a, "GET", "/v1/nothing", NULL, 0), 404);
    client_free(&a);
    mt_server_stop(srv, 1);
}

static const char ref_csv[] =
    "Text ID,Text,Sentences,Error Flag,Error Sentence ID,Error Sentence,"
    "Corrected Sentence,Corrected Text\n"
    "ms-1,t,\"0 A. 1 B.\",1,1,B.,The patient has gout.,t\n"
    "ms-2,t,\"0 A.\",0,-1,NA,NA,t\n";
static const char sub_txt[] =
    "ms-1 1 1 \"The patient has gout.\"\nms-2 0 -1 NA\n";

static void test_server_score_records_run(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a;
    char path[64];
    json_t *o = json_pack("{s:s,s:s,s:s}", "reference", ref_csv, "submission",
                          sub_txt, "name", "run1");
    size_t n = json_dumpb(o, NULL, 0, JSON_COMPACT);
    char *body = mt_malloc(n + 1);
    json_int_t run;

    (void)state;
    CHECK(body && json_dumpb(o, body, n, JSON_COMPACT) == n);
    body[n] = '\0';
    json_decref(o);
    client_init(&a, mt_server_port(srv));
    login(&a, "bob", "bob-password");
    assert_int_equal(req(&a, "POST", "/v1/score", body, 1), 200);
    o = body_json(&a);
    CHECK(json_number_value(json_object_get(o, "error_flag_accuracy")) == 1.0);
    run = json_integer_value(json_object_get(o, "run_id"));
    CHECK(run > 0);
    json_decref(o);
    snprintf(path, sizeof path, "/v1/runs/%lld", (long long)run);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    CHECK(strstr(a.body.data, "\"status\":\"done\"") != NULL);
    CHECK(strstr(a.body.data, "\"kind\":\"score\"") != NULL);
    assert_int_equal(req(&a, "GET", "/v1/runs", NULL, 0), 200);
    CHECK(strstr(a.body.data, "\"kind\":\"score\"") != NULL);
    snprintf(path, sizeof path, "/v1/runs/%lld/report", (long long)run);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    CHECK(strstr(a.body.data, "<svg") != NULL);
    assert_int_equal(req(&a, "GET", "/v1/runs/999999/report", NULL, 0), 404);
    assert_int_equal(req(&a, "POST", "/v1/score", "{\"reference\":\"x\"}", 1),
                     400);
    mt_free(body);
    client_free(&a);
    mt_server_stop(srv, 1);
}

/* With no model configured, a check is refused with how to set one. */
static void test_server_check_without_llm_says_how(void **state)
{
    static const char *const vars[] = {
        "MEDTRUST_LLM",         "MEDTRUST_LLM_REACT",  "MEDTRUST_LLM_EVAL",
        "MEDTRUST_LLM_REFLECT", "MEDTRUST_LLM_PARSER", "MEDTRUST_LLM_GUARD",
        "MEDTRUST_LLM_SINGLE"};
    struct mt_server *srv;
    struct client a;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    srv = start(0, 1 << 20);
    client_init(&a, mt_server_port(srv));
    login(&a, "bob", "bob-password");
    assert_int_equal(req(&a, "POST", "/v1/check",
                         "{\"note\":\"He has gout.\",\"strategy\":"
                         "\"guards\"}",
                         1),
                     503);
    CHECK(strstr(a.body.data, "--llm") != NULL);
    CHECK(strstr(a.body.data, "MEDTRUST_LLM") != NULL);
    assert_int_equal(req(&a, "GET", "/v1/models", NULL, 0), 200);
    CHECK(strstr(a.body.data, "\"guards\":false") != NULL);
    assert_int_equal(req(&a, "GET", "/v1/sources", NULL, 0), 200);
    CHECK(strstr(a.body.data, "\"name\":\"notes\"") != NULL);
    client_free(&a);
    mt_server_stop(srv, 1);
}

static long start_sleep_job(struct client *cl, int ms, int steps)
{
    char body[64];
    json_t *o;
    long id;

    snprintf(body, sizeof body, "{\"ms\":%d,\"steps\":%d}", ms, steps);
    assert_int_equal(req(cl, "POST", "/v1/jobs/sleep", body, 1), 202);
    o = body_json(cl);
    id = (long)json_integer_value(json_object_get(o, "run_id"));
    json_decref(o);
    return id;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;

    while ((hay = strstr(hay, needle)) != NULL) {
        n++;
        hay += strlen(needle);
    }
    return n;
}

static void test_server_sse_streams_job_events(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a;
    char path[64];
    long id;

    (void)state;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    id = start_sleep_job(&a, 300, 3);
    snprintf(path, sizeof path, "/v1/runs/%ld/events", id);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    CHECK(strstr(a.body.data, "event: status\ndata: {\"status\":"
                              "\"running\"}") != NULL);
    assert_int_equal(count(a.body.data, "event: step\n"), 3);
    CHECK(strstr(a.body.data, "data: {\"step\":3,\"of\":3}") != NULL);
    CHECK(strstr(a.body.data, "event: done\n") != NULL);
    CHECK(strstr(a.body.data, "\"status\":\"done\"") != NULL);
    /* once finished, the stream replays the kept job: every step, then
     * done (the server keeps its last finished jobs' events) */
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    assert_int_equal(count(a.body.data, "event: step\n"), 3);
    CHECK(strstr(a.body.data, "event: done\n") != NULL);
    client_free(&a);
    mt_server_stop(srv, 1);
}

/* Waits (at most 60 s) until run 'id' is no longer queued or running. */
static void wait_finished(struct client *cl, long id)
{
    char path[64];
    int i;

    snprintf(path, sizeof path, "/v1/runs/%ld", id);
    for (i = 0; i < 600; i++) {
        assert_int_equal(req(cl, "GET", path, NULL, 0), 200);
        if (!strstr(cl->body.data, "\"queued\"") &&
            !strstr(cl->body.data, "\"running\""))
            return;
        usleep(100 * 1000);
    }
    fail_msg("run %ld did not finish", id);
}

/* A job's replay log keeps its last replay_max bytes and its "done": a
 * stream opened after 200 steps of 4 KiB each is told how many events it
 * missed ("missed"), then gets the newest steps in order, then "done". */
static void test_server_replay_log_is_capped(void **state)
{
    struct mt_server *srv;
    struct client a;
    char path[64];
    const char *m, *last;
    long id;
    int steps;

    (void)state;
    opt_replay_max = (size_t)64 << 10;
    srv = start(0, 1 << 20);
    opt_replay_max = 0;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/jobs/sleep",
                         "{\"ms\":0,\"steps\":200,\"pad\":4096}", 1),
                     202);
    {
        json_t *o = body_json(&a);
        id = (long)json_integer_value(json_object_get(o, "run_id"));
        json_decref(o);
    }
    wait_finished(&a, id);
    snprintf(path, sizeof path, "/v1/runs/%ld/events", id);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    m = strstr(a.body.data, "event: missed\ndata: {\"events\":");
    CHECK(m == a.body.data); /* first */
    steps = count(a.body.data, "event: step\n");
    CHECK(steps > 0 && steps < 20); /* 64 KiB hold at most 15 of them */
    /* the kept ones are the newest, the missed count adds up */
    CHECK(atoi(m + strlen("event: missed\ndata: {\"events\":")) ==
          201 - steps); /* the status event and the older steps */
    last = strstr(a.body.data, "\"step\":200,");
    CHECK(last != NULL && strstr(last, "event: done\n") != NULL);
    CHECK(a.body.len < ((size_t)64 << 10) + 4096);
    client_free(&a);
    mt_server_stop(srv, 1);
}

/* Token events that no stream has taken are merged in the replay log: a
 * stream opened after 2,000 pieces gets their text, in order, in a few
 * events (the steps between them end a merge). */
static void test_server_replay_merges_tokens(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct client a;
    struct mt_buf want = MT_BUF_INIT((size_t)1 << 20);
    struct mt_buf got = MT_BUF_INIT((size_t)1 << 20);
    char path[64], t[32];
    const char *p;
    long id;
    int i, n;
    json_t *o;

    (void)state;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/jobs/sleep",
                         "{\"ms\":0,\"steps\":2,\"tokens\":1000}", 1),
                     202);
    o = body_json(&a);
    id = (long)json_integer_value(json_object_get(o, "run_id"));
    json_decref(o);
    wait_finished(&a, id);
    snprintf(path, sizeof path, "/v1/runs/%ld/events", id);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 200);
    n = count(a.body.data, "event: token\n");
    CHECK(n >= 2 && n < 20); /* 2 x 1,000 pieces of ~6 bytes: 16 KiB each */
    for (i = 0; i < 2000; i++) {
        snprintf(t, sizeof t, "t%d ", i);
        CHECK_OK(mtx_buf_append_str(&want, t));
    }
    for (p = a.body.data; (p = strstr(p, "event: token\ndata: ")) != NULL;) {
        const char *d = p + strlen("event: token\ndata: ");
        json_t *e = json_loadb(d, strcspn(d, "\n"), 0, NULL);
        CHECK_OK(mtx_buf_append_str(
            &got, json_string_value(json_object_get(e, "text"))));
        json_decref(e);
        p = d;
    }
    assert_string_equal(got.data, want.data);
    CHECK(strstr(a.body.data, "event: missed") == NULL);
    mtx_buf_free(&want);
    mtx_buf_free(&got);
    client_free(&a);
    mt_server_stop(srv, 1);
}

/* Raw loopback connection to the server with one request sent. */
static int raw_get(uint16_t port, const char *path, const char *bearer)
{
    struct sockaddr_in sa;
    char rq[512];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    snprintf(rq, sizeof rq, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", path,
             bearer);
    CHECK(write(fd, rq, strlen(rq)) == (ssize_t)strlen(rq));
    return fd;
}

/* Reads from fd until 'want' has come (at most 30 s); 1 when it did. */
static int read_until(int fd, const char *want)
{
    char buf[8192];
    size_t n = 0;
    struct timeval tv = {30, 0};
    ssize_t r;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (n + 1 < sizeof buf &&
           (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) {
        n += (size_t)r;
        buf[n] = '\0';
        if (strstr(buf, want))
            return 1;
    }
    return 0;
}

static long health_streams(struct client *cl)
{
    json_t *o;
    long n;

    assert_int_equal(req(cl, "GET", "/v1/health", NULL, 0), 200);
    o = body_json(cl);
    n = (long)json_integer_value(
        json_object_get(json_object_get(o, "limits"), "event_streams"));
    json_decref(o);
    return n;
}

/* 64 streams on one run are served; the 65th is 429 with an "error"
 * event too_many_streams (not a clean end); idle streams get keep-alive
 * comments, and those whose client went away are closed. */
static void test_server_stream_cap_and_reaping(void **state)
{
    struct mt_server *srv;
    struct client a;
    char path[64], bearer[MT_TOKEN_SIZE + 32];
    int fds[64];
    long id;
    int i;
    json_t *o;

    (void)state;
    opt_sse_idle_s = 1;
    srv = start(0, 1 << 20);
    opt_sse_idle_s = 0;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    assert_int_equal(req(&a, "POST", "/v1/tokens", "{\"name\":\"s\"}", 1), 201);
    o = body_json(&a);
    snprintf(bearer, sizeof bearer, "Authorization: Bearer %s",
             json_string_value(json_object_get(o, "token")));
    json_decref(o);
    id = start_sleep_job(&a, 60000, 2);
    snprintf(path, sizeof path, "/v1/runs/%ld/events", id);
    for (i = 0; i < 64; i++) {
        fds[i] = raw_get(mt_server_port(srv), path, bearer);
        CHECK(read_until(fds[i], "event: status"));
    }
    assert_int_equal(health_streams(&a), 64);
    assert_int_equal(req(&a, "GET", path, NULL, 0), 429);
    CHECK(strstr(a.body.data, "event: error\n") != NULL);
    CHECK(strstr(a.body.data, "\"error\":\"too_many_streams\"") != NULL);
    /* an idle stream gets a keep-alive comment (sse_idle_s 1) */
    CHECK(read_until(fds[0], ": keep-alive\n\n"));
    for (i = 1; i < 64; i++)
        close(fds[i]);
    for (i = 0; i < 300 && health_streams(&a) > 1; i++)
        usleep(100 * 1000);
    assert_int_equal(health_streams(&a), 1);
    close(fds[0]);
    snprintf(path, sizeof path, "/v1/runs/%ld/cancel", id);
    assert_int_equal(req(&a, "POST", path, NULL, 1), 202);
    client_free(&a);
    mt_server_stop(srv, 1);
}

static enum mt_status copy_status(const struct mt_run *r, void *user)
{
    snprintf(user, 16, "%s", r->status);
    return MT_OK;
}

static void test_server_stop_lets_jobs_finish(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct mt_state *s = NULL;
    struct client a;
    char status[16] = "";
    long id, queued;

    (void)state;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    id = start_sleep_job(&a, 400, 2);
    queued = start_sleep_job(&a, 400, 2);
    usleep(100 * 1000);
    mt_server_stop(srv, 10); /* graceful: running and queued jobs finish */
    CHECK_OK(mt_state_open(db, &s, NULL));
    CHECK_OK(mt_run_get(s, id, copy_status, status, NULL));
    assert_string_equal(status, "done");
    CHECK_OK(mt_run_get(s, queued, copy_status, status, NULL));
    assert_string_equal(status, "done");
    mt_state_close(s);
    client_free(&a);
}

static void test_server_stop_cancels_past_grace(void **state)
{
    struct mt_server *srv = start(0, 1 << 20);
    struct mt_state *s = NULL;
    struct client a;
    char status[16] = "";
    long id;
    double t0;

    (void)state;
    client_init(&a, mt_server_port(srv));
    login(&a, "alice", "alice-password");
    id = start_sleep_job(&a, 60000, 2);
    usleep(100 * 1000);
    t0 = (double)time(NULL);
    mt_server_stop(srv, 0.2);
    CHECK((double)time(NULL) - t0 < 10);
    CHECK_OK(mt_state_open(db, &s, NULL));
    CHECK_OK(mt_run_get(s, id, copy_status, status, NULL));
    assert_string_equal(status, "failed");
    mt_state_close(s);
    client_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_auth_csrf_roles),
        cmocka_unit_test(test_server_token_works_until_revoked),
        cmocka_unit_test(test_server_search_returns_cli_hits),
        cmocka_unit_test(test_server_limits_413_429),
        cmocka_unit_test(test_server_static_refuses_traversal),
        cmocka_unit_test(test_server_score_records_run),
        cmocka_unit_test(test_server_check_without_llm_says_how),
        cmocka_unit_test(test_server_sse_streams_job_events),
        cmocka_unit_test(test_server_replay_log_is_capped),
        cmocka_unit_test(test_server_replay_merges_tokens),
        cmocka_unit_test(test_server_stream_cap_and_reaping),
        cmocka_unit_test(test_server_stop_lets_jobs_finish),
        cmocka_unit_test(test_server_stop_cancels_past_grace),
    };

    return cmocka_run_group_tests(tests, setup, server_teardown);
}
