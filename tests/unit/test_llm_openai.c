/* Unit tests for the OpenAI-compatible backends against the loopback stub
 * server: chat with n and usage, retries and backoff, errors, timeouts,
 * the concurrency limit, rerank parsing, the call cache and routing. */
#include "check.h"

#include <pthread.h>
#include <time.h>

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed.h"
#include "model/embed_openai.h"
#include "model/http_pool.h"
#include "model/nli.h"
#include <jansson.h>

#include "model/rerank.h"
#include "stub.h"

#define CHOICE(t)                                                              \
    "{\"index\":0,\"message\":{\"role\":\"assistant\","                        \
    "\"content\":\"" t "\"}}"
#define OK_REPLY                                                               \
    "{\"choices\":[" CHOICE(                                                   \
        "hello") "],\"usage\":"                                                \
                 "{\"prompt_tokens\":5,\"completion_tokens\":1}}"

static const struct mt_llm_message msgs[] = {
    {"system", "You are terse."},
    {"user", "Say hello."},
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens openai:URL#m with fast retries for tests. */
static struct mt_llm *open_llm(const struct stub *s, double timeout,
                               uint32_t retries, const char *cache)
{
    struct mt_llm_params p;
    struct mt_llm *l = NULL;
    struct mt_error err;
    char spec[128];

    mt_llm_default_params(&p);
    p.timeout_s = timeout;
    p.max_retries = retries;
    p.backoff_base_s = 0.02;
    p.backoff_max_s = 0.1;
    p.max_concurrency = 2;
    p.cache_path = cache;
    snprintf(spec, sizeof spec, "openai:%s#tiny-model", s->url);
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    return l;
}

static enum mt_status chat1(struct mt_llm *l, struct mt_chat_result *r,
                            struct mt_error *err)
{
    return mt_llm_chat(l, msgs, 2, NULL, r, err);
}

static void test_chat_returns_n_completions_and_usage(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    char body[8192];
    (void)state;
    stub_start(
        &s, "reply 200 0 - {\"choices\":[" CHOICE("a") "," CHOICE(
                "b") "," CHOICE("c") "],\"usage\":{\"prompt_"
                                     "tokens\":11,\"completion_tokens\":7}}\n");
    l = open_llm(&s, 5, 0, NULL);
    mt_chat_default_params(&cp);
    cp.n = 3;
    cp.seed = 7;
    cp.temperature = 0.7f;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(r.n == 3);
    CHECK(strcmp(r.texts[0], "a") == 0 && strcmp(r.texts[2], "c") == 0);
    CHECK(r.prompt_tokens == 11 && r.completion_tokens == 7);
    CHECK(r.seconds > 0 && !r.cached);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 1);
    CHECK(strstr(body, "/v1/chat/completions") != NULL);
    CHECK(strstr(body, "\"n\":3") && strstr(body, "\"seed\":7"));
    CHECK(strstr(body, "\"model\":\"tiny-model\"") != NULL);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_json_schema_sent_as_response_format(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    const char *stop[] = {"\n\n"};
    char body[8192];
    (void)state;
    stub_start(&s, "reply 200 0 - " OK_REPLY "\n");
    l = open_llm(&s, 5, 0, NULL);
    mt_chat_default_params(&cp);
    cp.json_schema = "{\"type\":\"object\"}";
    cp.stop = stop;
    cp.n_stop = 1;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, NULL));
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "\"response_format\"") != NULL);
    CHECK(strstr(body, "\"json_schema\"") != NULL);
    CHECK(strstr(body, "\"stop\":[") != NULL);
    mt_chat_result_free(&r);
    cp.json_schema = "{not json";
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, NULL) == MT_EINVAL);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_retries_429_and_500_honouring_retry_after(void **st)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    double t0;
    (void)st;
    stub_start(&s, "reply 429 0 1 {\"error\":{\"message\":\"slow down\"}}\n"
                   "reply 500 0 - {\"error\":\"boom\"}\n"
                   "reply 503 0 - unavailable\n"
                   "reply 200 0 - " OK_REPLY "\n");
    l = open_llm(&s, 5, 4, NULL);
    t0 = now_s();
    CHECK_OK(chat1(l, &r, &err));
    CHECK(now_s() - t0 >= 1.0); /* Retry-After: 1 was honoured */
    CHECK(now_s() - t0 < 4.0);
    CHECK(strcmp(r.texts[0], "hello") == 0);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 4);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_gives_up_after_max_retries(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, "reply 500 0 - {\"error\":{\"message\":\"down\"}}\n");
    l = open_llm(&s, 5, 2, NULL);
    CHECK(chat1(l, &r, &err) == MT_EIO);
    CHECK(strstr(err.msg, "HTTP 500") && strstr(err.msg, "down"));
    CHECK(strstr(err.msg, "gave up after 3 tries") != NULL);
    CHECK(r.n == 0 && r.texts == NULL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 3);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_malformed_reply_names_field(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, "reply 200 0 - {\"choices\":[{\"message\":"
                   "{\"content\":5}}]}\n"
                   "reply 200 0 - {\"id\":1}\n"
                   "reply 200 0 - this is not json\n");
    l = open_llm(&s, 5, 3, NULL);
    CHECK(chat1(l, &r, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "'choices[0].message.content'") != NULL);
    CHECK(chat1(l, &r, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "'choices'") != NULL);
    CHECK(chat1(l, &r, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "not JSON") != NULL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 3); /* never retried */
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_timeout_names_setting(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    double t0;
    (void)state;
    stub_start(&s, "hang\n");
    l = open_llm(&s, 0.3, 1, NULL);
    t0 = now_s();
    CHECK(chat1(l, &r, &err) == MT_EIO);
    CHECK(now_s() - t0 < 3.0);
    CHECK(strstr(err.msg, "MEDTRUST_LLM_TIMEOUT") != NULL);
    CHECK(strstr(err.msg, "--timeout") != NULL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 2);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_dropped_connection_is_retried(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    (void)state;
    stub_start(&s, "drop\ndrop\nreply 200 0 - " OK_REPLY "\n");
    l = open_llm(&s, 5, 3, NULL);
    CHECK_OK(chat1(l, &r, NULL));
    CHECK(strcmp(r.texts[0], "hello") == 0);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 3);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_client_errors_are_clear_and_final(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, "reply 401 0 - {\"error\":{\"message\":\"bad key\"}}\n"
                   "reply 404 0 - {\"error\":{\"message\":\"no model\"}}\n"
                   "reply 400 0 - {\"error\":{\"message\":\"This model's "
                   "maximum context length is 4096 tokens\"}}\n"
                   "reply 400 0 - {\"error\":{\"message\":\"bad n\"}}\n");
    l = open_llm(&s, 5, 3, NULL);
    CHECK(chat1(l, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "MEDTRUST_API_KEY") && strstr(err.msg, "bad key"));
    CHECK(chat1(l, &r, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "MEDTRUST_LLM") && strstr(err.msg, "MODEL"));
    CHECK(chat1(l, &r, &err) == MT_ELIMIT);
    CHECK(strstr(err.msg, "context length") != NULL);
    CHECK(chat1(l, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "bad n") != NULL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 4);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_chat_unreachable_url_names_setting(void **state)
{
    struct mt_llm_params p;
    struct mt_llm *l = NULL;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    mt_llm_default_params(&p);
    p.max_retries = 0;
    p.timeout_s = 2;
    /* port 1 on loopback: nothing listens there */
    CHECK_OK(mt_llm_open("openai:http://127.0.0.1:1/v1#m", &p, &l, &err));
    CHECK(chat1(l, &r, &err) == MT_EIO);
    CHECK(strstr(err.msg, "cannot reach") && strstr(err.msg, "--llm"));
    CHECK(strstr(err.msg, "127.0.0.1:1/v1/chat/completions") != NULL);
    mt_llm_close(l);
}

static void *chat_thread(void *arg)
{
    struct mt_chat_result r;

    if (chat1(arg, &r, NULL) != MT_OK)
        return arg;
    mt_chat_result_free(&r);
    return NULL;
}

static void test_chat_concurrency_limit_never_exceeded(void **state)
{
    struct stub s;
    struct mt_llm *l;
    pthread_t t[6];
    void *ret;
    int maxact = 0;
    int i;
    (void)state;
    stub_start(&s, "reply 200 150 - " OK_REPLY "\n");
    l = open_llm(&s, 5, 0, NULL); /* max_concurrency 2 */
    for (i = 0; i < 6; i++)
        CHECK(pthread_create(&t[i], NULL, chat_thread, l) == 0);
    for (i = 0; i < 6; i++) {
        pthread_join(t[i], &ret);
        CHECK(ret == NULL);
    }
    CHECK(stub_requests(&s, &maxact, NULL, 0) == 6);
    CHECK(maxact >= 1 && maxact <= 2);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_cache_serves_second_identical_call(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r1;
    struct mt_chat_result r2;
    char cache[300];
    (void)state;
    stub_start(&s, "reply 200 0 - " OK_REPLY "\n");
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    l = open_llm(&s, 5, 0, cache);
    mt_chat_default_params(&cp);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r1, NULL));
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r2, NULL));
    CHECK(!r1.cached && r2.cached);
    CHECK(strcmp(r1.texts[0], r2.texts[0]) == 0);
    CHECK(r2.prompt_tokens == 5 && r2.completion_tokens == 1);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 1);
    mt_chat_result_free(&r1);
    mt_chat_result_free(&r2);
    /* temperature > 0: one entry per seed */
    cp.temperature = 0.8f;
    cp.seed = 1;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r1, NULL));
    cp.seed = 2;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r2, NULL));
    CHECK(stub_requests(&s, NULL, NULL, 0) == 3);
    mt_chat_result_free(&r1);
    mt_chat_result_free(&r2);
    mt_llm_close(l);
    /* a new handle on the same file still hits (reruns cost nothing) */
    l = open_llm(&s, 5, 0, cache);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r1, NULL));
    CHECK(r1.cached && stub_requests(&s, NULL, NULL, 0) == 3);
    mt_chat_result_free(&r1);
    mt_llm_close(l);
    stub_stop(&s);
}

static struct mt_reranker *open_rerank(const struct stub *s, const char *cache)
{
    struct mt_reranker_params p;
    struct mt_reranker *r = NULL;
    char spec[128];

    mt_reranker_default_params(&p);
    p.max_retries = 0;
    p.cache_path = cache;
    snprintf(spec, sizeof spec, "openai:%s#rr", s->url);
    CHECK_OK(mt_reranker_open(spec, &p, &r, NULL));
    return r;
}

static void test_rerank_parses_results_by_index(void **state)
{
    struct stub s;
    struct mt_reranker *r;
    struct mt_str docs[2] = {MT_STR_C("aspirin dose"), MT_STR_C("weather")};
    float sc[2];
    struct mt_error err;
    char body[8192];
    char cache[300];
    (void)state;
    stub_start(&s, "reply 200 0 - {\"results\":[{\"index\":1,\"relevance_"
                   "score\":0.2},{\"index\":0,\"relevance_score\":0.9}]}\n"
                   "reply 200 0 - {\"results\":[{\"index\":7,\"relevance_"
                   "score\":0.2},{\"index\":0,\"relevance_score\":0.9}]}\n");
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    r = open_rerank(&s, cache);
    CHECK_OK(mt_reranker_score(r, "aspirin", docs, 2, sc, &err));
    CHECK(sc[0] > 0.89f && sc[0] < 0.91f && sc[1] > 0.19f && sc[1] < 0.21f);
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "/v1/rerank") && strstr(body, "\"query\":\"aspirin\""));
    CHECK_OK(mt_reranker_score(r, "aspirin", docs, 2, sc, &err)); /* cache */
    CHECK(stub_requests(&s, NULL, NULL, 0) == 1);
    CHECK(mt_reranker_score(r, "other", docs, 2, sc, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "'results[0].index'") != NULL);
    mt_reranker_close(r);
    stub_stop(&s);
}

#define EMB(i, a, b) "{\"index\":" #i ",\"embedding\":[" #a "," #b "]}"

static const char embed_script[] = "reply 200 0 - {\"data\":[" EMB(
    0, 1, 0) "]}\n"
             "reply 200 0 - {\"data\":[" EMB(1, 0, 2) "," EMB(
                 0, 3, 4) "]}\n"
                          "reply 200 0 - {\"data\":[" EMB(0, 1, 0) "," EMB(
                              1, 1, 2) ",{\"index\":2,\"embedding\":[1]}]}\n";

static void test_embeddings_parse_normalise_and_cache(void **state)
{
    struct stub s;
    struct mt_embedder *e = NULL;
    struct mt_embedder_params p;
    struct mt_str t[2] = {MT_STR_C("fever"), MT_STR_C("cough")};
    float v[4];
    struct mt_error err;
    char cache[300];
    char body[8192];
    (void)state;
    stub_start(&s, embed_script);
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    char spec[300];
    mt_embedder_default_params(&p);
    p.cache_path = cache; /* the generic embedder cache */
    snprintf(spec, sizeof spec, "openai:%s#emb", s.url);
    CHECK_OK(mt_embedder_open(spec, &p, &e, &err));
    CHECK(mt_embedder_dims(e) == 2);
    CHECK_OK(mt_embedder_embed(e, t, 2, v, &err));
    /* row 0 is index 0 = (3,4)/5, row 1 is (0,2)/2 */
    CHECK(v[0] > 0.59f && v[0] < 0.61f && v[1] > 0.79f && v[1] < 0.81f);
    CHECK(v[2] > -0.01f && v[2] < 0.01f && v[3] > 0.99f);
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "/v1/embeddings") && strstr(body, "\"cough\""));
    CHECK_OK(mt_embedder_embed(e, t, 2, v, &err)); /* from the cache */
    CHECK(stub_requests(&s, NULL, NULL, 0) == 2);
    t[0] = mtx_str_from("new");
    t[1] = mtx_str_from("other");
    CHECK(mt_embedder_embed(e, t, 2, v, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "'data'") != NULL);
    mt_embedder_close(e);
    stub_stop(&s);
}

static void test_embedder_open_fails_clearly(void **state)
{
    struct stub s;
    struct mt_embedder *e = NULL;
    struct mt_error err;
    char spec[128];
    (void)state;
    stub_start(&s, "reply 404 0 - {\"error\":{\"message\":\"nope\"}}\n");
    snprintf(spec, sizeof spec, "openai:%s#missing", s.url);
    CHECK(mt_embedder_open(spec, NULL, &e, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "--embedder") && e == NULL);
    CHECK(mt_embedder_open("openai:http://x", NULL, &e, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "--embedder") != NULL);
    CHECK(mt_embedder_open("openai", NULL, &e, &err) == MT_EINVAL);
    stub_stop(&s);
}

#define JUDGE(t) "reply 200 0 - {\"choices\":[" CHOICE(t) "]}\n"

static const char judge_script[] = JUDGE("{\\\"label\\\":\\\"CONTRADICT\\\"}")
    JUDGE("I think NO_EVIDENCE.") JUDGE("dunno");

static void test_nli_llm_judge_reads_label(void **state)
{
    struct stub s;
    struct mt_nli *n = NULL;
    struct mt_error err;
    enum mt_nli_label lab;
    float pr[3];
    char spec[128];
    char body[8192];
    (void)state;
    stub_start(&s, judge_script);
    snprintf(spec, sizeof spec, "llm:openai:%s#judge", s.url);
    CHECK_OK(mt_nli_open(spec, NULL, &n, &err));
    CHECK_OK(mt_nli_classify(n, "No aspirin was given.", "Aspirin was given.",
                             pr, &lab, &err));
    CHECK(lab == MT_NLI_CONTRADICT && pr[MT_NLI_CONTRADICT] == 1.0f);
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "NO_EVIDENCE") && strstr(body, "json_schema"));
    CHECK_OK(mt_nli_classify(n, "a", "b", NULL, &lab, &err));
    CHECK(lab == MT_NLI_NO_EVIDENCE);
    CHECK(mt_nli_classify(n, "a", "b", NULL, &lab, &err) == MT_EPARSE);
    CHECK(strcmp(mt_nli_label_str(MT_NLI_SUPPORT), "SUPPORT") == 0);
    mt_nli_close(n);
    CHECK(mt_nli_open("bert", NULL, &n, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "--nli") != NULL);
    stub_stop(&s);
}

/* Request i (from 1) of the stub's log, its JSON body parsed. */
static json_t *logged_request(const struct stub *s, int i)
{
    char line[16384];
    FILE *f = fopen(s->log, "r");
    json_t *j = NULL;
    int k = 0;

    while (f && !j && fgets(line, sizeof line, f)) {
        char *b = line;
        int sp;
        if (++k != i)
            continue;
        for (sp = 0; sp < 4 && b; sp++) /* "SEQ ACTIVE PATH AUTH BODY" */
            if ((b = strchr(b, ' ')) != NULL)
                b++;
        j = b ? json_loads(b, 0, NULL) : NULL;
    }
    if (f)
        fclose(f);
    return j;
}

static const char *msg_of(const json_t *req, size_t i)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(req, "messages"), i), "content"));
}

/* minicheck:SPEC sends the MiniCheck authors' prompt (their
 * minicheck/utils.py, verbatim), greedy and one token, each sentence of
 * the claim on its own: supported only when every sentence is. */
static void test_nli_minicheck_prompt_and_sentences(void **state)
{
    struct stub s;
    struct mt_nli *n = NULL;
    struct mt_error err;
    enum mt_nli_label lab;
    float pr[3];
    char spec[128];
    json_t *q;
    (void)state;
    stub_start(&s, JUDGE("Yes") JUDGE("Yes") JUDGE("No") JUDGE(" no.")
                       JUDGE("Maybe"));
    snprintf(spec, sizeof spec, "minicheck:openai:%s#bespoke-minicheck", s.url);
    CHECK_OK(mt_nli_open(spec, NULL, &n, &err));
    CHECK(strstr(mt_nli_describe(n), "No = NO_EVIDENCE") != NULL);
    CHECK_OK(mt_nli_classify(n, "Aspirin was given.",
                             "The patient got aspirin on day 2.", pr, &lab,
                             &err));
    CHECK(lab == MT_NLI_SUPPORT && pr[MT_NLI_SUPPORT] == 1.0f);
    q = logged_request(&s, 1);
    CHECK(q != NULL);
    CHECK(strcmp(msg_of(q, 0),
                 "Determine whether the provided claim is consistent with "
                 "the corresponding document. Consistency in this context "
                 "implies that all information presented in the claim is "
                 "substantiated by the document. If not, it should be "
                 "considered inconsistent. Please assess the claim's "
                 "consistency with the document by responding with either "
                 "\"Yes\" or \"No\".") == 0);
    CHECK(strcmp(msg_of(q, 1), "Document: The patient got aspirin on day "
                               "2.\nClaim: Aspirin was given.") == 0);
    CHECK(json_integer_value(json_object_get(q, "max_tokens")) == 1);
    CHECK(json_number_value(json_object_get(q, "temperature")) == 0.0);
    CHECK(json_object_get(q, "response_format") == NULL);
    json_decref(q);
    /* two sentences: the first supported, the second not */
    CHECK_OK(mt_nli_classify(n, "Aspirin was given. Heparin was started.",
                             "The patient got aspirin.", pr, &lab, &err));
    CHECK(lab == MT_NLI_NO_EVIDENCE && pr[MT_NLI_NO_EVIDENCE] == 1.0f &&
          pr[MT_NLI_CONTRADICT] == 0.0f);
    q = logged_request(&s, 3);
    CHECK(q && strcmp(msg_of(q, 1), "Document: The patient got aspirin."
                                    "\nClaim: Heparin was started.") == 0);
    json_decref(q);
    /* a first sentence unsupported ends the claim: one call */
    CHECK_OK(mt_nli_classify(n, "A. B.", "C.", NULL, &lab, &err));
    CHECK(lab == MT_NLI_NO_EVIDENCE && stub_requests(&s, NULL, NULL, 0) == 4);
    CHECK(mt_nli_classify(n, "a", "b", NULL, &lab, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "not Yes or No") != NULL);
    mt_nli_close(n);
    stub_stop(&s);
}

/* A document longer than the context (less 300 tokens for the claim, as
 * the authors' LLMCheck keeps) goes in chunks of whole sentences; a claim
 * is supported when any chunk supports it. */
static void test_nli_minicheck_document_chunks(void **state)
{
    struct stub s;
    struct mt_nli *n = NULL;
    struct mt_error err;
    enum mt_nli_label lab;
    char spec[128];
    char doc[4096];
    json_t *q;
    size_t i;
    (void)state;
    stub_start(&s, "props 200 0 - {\"default_generation_settings\":{"
                   "\"n_ctx\":800}}\n" JUDGE("No") JUDGE("Yes"));
    /* two sentences of about 300 estimated tokens each (3 bytes a token) */
    memset(doc, 0, sizeof doc);
    for (i = 0; i < 2; i++) {
        char sent[1000];
        memset(sent, 'a' + (int)i, 899);
        sent[0] = (char)('A' + (int)i);
        sent[899] = '\0';
        strcat(doc, sent);
        strcat(doc, i ? "." : ". ");
    }
    snprintf(spec, sizeof spec, "minicheck:openai:%s#m", s.url);
    CHECK_OK(mt_nli_open(spec, NULL, &n, &err));
    CHECK_OK(mt_nli_classify(n, "Claim here.", doc, NULL, &lab, &err));
    CHECK(lab == MT_NLI_SUPPORT && stub_requests(&s, NULL, NULL, 0) == 2);
    q = logged_request(&s, 2);
    CHECK(q && strncmp(msg_of(q, 1), "Document: Bbbb", 14) == 0 &&
          strstr(msg_of(q, 1), "Aaaa") == NULL);
    json_decref(q);
    mt_nli_close(n);
    stub_stop(&s);
}

static void test_specs_and_role_routing(void **state)
{
    struct mt_llm *l = NULL;
    struct mt_error err;
    (void)state;
    CHECK(mt_llm_open("openai:http://127.0.0.1:9", NULL, &l, &err) ==
          MT_EINVAL);
    CHECK(strstr(err.msg, "BASE_URL#MODEL") != NULL);
    CHECK(mt_llm_open("ftp:x", NULL, &l, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "MEDTRUST_LLM") != NULL);
    CHECK(mt_llm_open("openai:localhost#m", NULL, &l, &err) == MT_EINVAL);
    CHECK(l == NULL);
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_LLM_EVAL");
    CHECK(mt_llm_role_spec("eval", NULL) == NULL);
    CHECK(mt_llm_open_role("eval", NULL, NULL, &l, &err) == MT_EINVAL);
    CHECK(strcmp(mt_llm_role_spec("eval", "gguf:d"), "gguf:d") == 0);
    setenv("MEDTRUST_LLM", "gguf:all", 1);
    /* an option (the fallback) before the environment's default model */
    CHECK(strcmp(mt_llm_role_spec("eval", "gguf:d"), "gguf:d") == 0);
    CHECK(strcmp(mt_llm_role_spec("eval", NULL), "gguf:all") == 0);
    CHECK(strcmp(mt_llm_role_spec("eval", ""), "gguf:all") == 0);
    setenv("MEDTRUST_LLM_EVAL", "gguf:cheap", 1);
    CHECK(strcmp(mt_llm_role_spec("eval", "gguf:d"), "gguf:cheap") == 0);
    CHECK(strcmp(mt_llm_role_spec("agent", NULL), "gguf:all") == 0);
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_LLM_EVAL");
}

/* Every allocation failure in open, chat and close is reported cleanly
 * (ASan checks that nothing leaks on any of these paths). */
static void test_chat_survives_allocation_failures(void **state)
{
    struct stub s;
    struct mt_llm_params p;
    char spec[128];
    char cache[300];
    long n;
    int done = 0;
    (void)state;
    stub_start(&s, "reply 200 0 - " OK_REPLY "\n");
    snprintf(spec, sizeof spec, "openai:%s#m", s.url);
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    mt_llm_default_params(&p);
    p.max_retries = 0;
    p.cache_path = cache;
    for (n = 0; n < 400 && !done; n++) {
        struct mt_llm *l = NULL;
        struct mt_chat_result r;
        enum mt_status st;
        struct mt_error err = {MT_OK, ""};
        mt_alloc_fail_after(n);
        st = mt_llm_open(spec, &p, &l, &err);
        if (st == MT_OK)
            st = mt_llm_chat(l, msgs, 2, NULL, &r, &err);
        mt_alloc_fail_reset();
        if (st == MT_EINVAL)
            fail_msg("n=%ld: %s", n, err.msg);
        if (!(st == MT_OK || st == MT_ENOMEM || st == MT_EDB || st == MT_EIO ||
              st == MT_EPARSE || st == MT_EINTERNAL))
            fail_msg("n=%ld: %s", n, mt_status_str(st));
        CHECK(st == MT_OK || st == MT_ENOMEM || st == MT_EDB || st == MT_EIO ||
              st == MT_EPARSE || st == MT_EINTERNAL);
        if (st == MT_OK) {
            CHECK(r.n == 1);
            mt_chat_result_free(&r);
            done = 1;
        }
        mt_llm_close(l);
    }
    CHECK(done);
    stub_stop(&s);
}

static void test_timeout_default_from_environment(void **state)
{
    struct mt_llm_params p;
    (void)state;
    unsetenv("MEDTRUST_LLM_TIMEOUT");
    mt_llm_default_params(&p);
    CHECK(p.timeout_s == 120.0);
    setenv("MEDTRUST_LLM_TIMEOUT", "7.5", 1);
    mt_llm_default_params(&p);
    CHECK(p.timeout_s == 7.5);
    unsetenv("MEDTRUST_LLM_TIMEOUT");
}

/* ==== Endpoint pool ==== */

static void test_pool_spreads_by_outstanding_requests(void **state)
{
    struct mtx_http_pool *p = NULL;
    size_t a, b, c, d;
    int probe;
    (void)state;

    CHECK_OK(mtx_http_pool_new("http://h1,http://h2/v1/,http://h3", "--llm", &p,
                               NULL));
    CHECK(mtx_http_pool_size(p) == 3);
    CHECK(strcmp(mtx_http_pool_base(p, 0), "http://h1/v1") == 0);
    CHECK(strcmp(mtx_http_pool_base(p, 1), "http://h2/v1") == 0);
    a = mtx_http_pool_pick(p, 0, &probe);
    b = mtx_http_pool_pick(p, 0, &probe);
    c = mtx_http_pool_pick(p, 0, &probe);
    CHECK(a != b && b != c && a != c && !probe); /* one each */
    mtx_http_pool_done(p, b, 0, 0, 0, NULL);
    d = mtx_http_pool_pick(p, 0, &probe); /* b has the fewest in flight */
    CHECK(d == b);
    mtx_http_pool_done(p, a, 0, 0, 0, NULL);
    mtx_http_pool_done(p, c, 0, 0, 0, NULL);
    mtx_http_pool_done(p, d, 0, 0, 0, NULL);
    /* all idle: calls take turns */
    a = mtx_http_pool_pick(p, 0, &probe);
    mtx_http_pool_done(p, a, 0, 0, 0, NULL);
    b = mtx_http_pool_pick(p, 0, &probe);
    mtx_http_pool_done(p, b, 0, 0, 0, NULL);
    CHECK(a != b);
    mtx_http_pool_free(p);
}

static void test_pool_takes_out_probes_and_puts_back(void **state)
{
    struct mtx_http_pool *p = NULL;
    size_t i, k;
    int probe;
    (void)state;

    CHECK_OK(mtx_http_pool_new("http://h1,http://h2", "--llm", &p, NULL));
    i = mtx_http_pool_pick(p, 10, &probe);
    mtx_http_pool_done(p, i, probe, 1, 10, "HTTP 500"); /* taken out */
    CHECK(mtx_http_pool_other_ready(p, i, 10));
    CHECK(!mtx_http_pool_other_ready(p, 1 - i, 10));
    for (k = 0; k < 4; k++) { /* out for MTX_POOL_OUT_S: never picked */
        size_t j = mtx_http_pool_pick(p, 10.5, &probe);
        CHECK(j == 1 - i && !probe);
        mtx_http_pool_done(p, j, 0, 0, 10.5, NULL);
    }
    CHECK(mtx_http_pool_pick(p, 11.1, &probe) == i && probe); /* due: probed */
    CHECK(mtx_http_pool_pick(p, 11.1, &probe) == 1 - i &&
          !probe); /* one probe */
    mtx_http_pool_done(p, 1 - i, 0, 0, 11.1, NULL);
    mtx_http_pool_done(p, i, 1, 1, 11.2, "HTTP 500"); /* failed: out 2 s */
    CHECK(mtx_http_pool_pick(p, 12.5, &probe) == 1 - i);
    mtx_http_pool_done(p, 1 - i, 0, 0, 12.5, NULL);
    CHECK(mtx_http_pool_pick(p, 13.3, &probe) == i && probe);
    mtx_http_pool_done(p, i, 1, 0, 13.3, NULL); /* answered: back in */
    CHECK(mtx_http_pool_other_ready(p, 1 - i, 13.3));
    mtx_http_pool_free(p);
}

static void test_pool_with_none_in_tries_the_first_due_back(void **state)
{
    struct mtx_http_pool *p = NULL;
    int probe;
    (void)state;

    CHECK_OK(mtx_http_pool_new("http://h1,http://h2", "--llm", &p, NULL));
    mtx_http_pool_pick(p, 0, &probe);
    mtx_http_pool_pick(p, 0, &probe);
    mtx_http_pool_done(p, 1, 0, 1, 0.5, "down"); /* h2 out until 1.5 */
    mtx_http_pool_done(p, 0, 0, 1, 0.2, "down"); /* h1 out until 1.2 */
    CHECK(!mtx_http_pool_other_ready(p, 0, 1.0));
    CHECK(mtx_http_pool_pick(p, 1.0, &probe) == 0 && probe);
    mtx_http_pool_done(p, 0, probe, 0, 1.0, NULL);
    mtx_http_pool_free(p);
}

static void test_pool_refuses_bad_lists(void **state)
{
    struct mtx_http_pool *p = NULL;
    struct mt_error e = {MT_OK, ""};
    (void)state;

    CHECK(mtx_http_pool_new("http://h1,,http://h2", "--llm", &p, &e) ==
          MT_EINVAL);
    CHECK(mtx_http_pool_new("http://h1,ftp://h2", "--llm", &p, &e) ==
          MT_EINVAL);
    CHECK(strstr(e.msg, "'ftp://h2' is not an http(s) URL") != NULL);
    CHECK(strstr(e.msg, "--llm") != NULL);
    CHECK(p == NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_returns_n_completions_and_usage),
        cmocka_unit_test(test_chat_json_schema_sent_as_response_format),
        cmocka_unit_test(test_chat_retries_429_and_500_honouring_retry_after),
        cmocka_unit_test(test_chat_gives_up_after_max_retries),
        cmocka_unit_test(test_chat_malformed_reply_names_field),
        cmocka_unit_test(test_chat_timeout_names_setting),
        cmocka_unit_test(test_chat_dropped_connection_is_retried),
        cmocka_unit_test(test_chat_client_errors_are_clear_and_final),
        cmocka_unit_test(test_chat_unreachable_url_names_setting),
        cmocka_unit_test(test_chat_concurrency_limit_never_exceeded),
        cmocka_unit_test(test_cache_serves_second_identical_call),
        cmocka_unit_test(test_rerank_parses_results_by_index),
        cmocka_unit_test(test_embeddings_parse_normalise_and_cache),
        cmocka_unit_test(test_embedder_open_fails_clearly),
        cmocka_unit_test(test_nli_llm_judge_reads_label),
        cmocka_unit_test(test_nli_minicheck_prompt_and_sentences),
        cmocka_unit_test(test_nli_minicheck_document_chunks),
        cmocka_unit_test(test_specs_and_role_routing),
        cmocka_unit_test(test_chat_survives_allocation_failures),
        cmocka_unit_test(test_timeout_default_from_environment),
        cmocka_unit_test(test_pool_spreads_by_outstanding_requests),
        cmocka_unit_test(test_pool_takes_out_probes_and_puts_back),
        cmocka_unit_test(test_pool_with_none_in_tries_the_first_due_back),
        cmocka_unit_test(test_pool_refuses_bad_lists),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
