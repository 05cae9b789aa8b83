/* Unit tests for the OpenAI client's streaming (server-sent events, cut
 * streams retried), its response_format modes and fallback, and token
 * counts from the server's usage or labelled estimates, against the
 * loopback stub server. */
#include "check.h"

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "stub.h"

#define THREE_WORDS                                                            \
    "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","          \
    "\"content\":\"one two three\"}}],\"usage\":{\"prompt_tokens\":9,"         \
    "\"completion_tokens\":3}}"
#define NO_USAGE                                                               \
    "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","          \
    "\"content\":\"abcdefgh\"}}]}"

static const struct mt_llm_message msgs[] = {
    {"system", "You are terse."}, /* 14 bytes */
    {"user", "Say hello."},       /* 10 bytes */
};

/* What the token callback saw. */
struct seen {
    char text[256];   /* completion 0 */
    char second[256]; /* completion 1 */
    int pieces;
    int restarts;
    int stop_after; /* > 0: ask to stop after this many pieces */
};

static int on_token(void *ctx, uint32_t i, const char *piece, size_t len)
{
    struct seen *s = ctx;
    char *t = i == 0 ? s->text : s->second;
    size_t n = strlen(t);

    CHECK(i < 2);
    if (!piece) {
        t[0] = '\0';
        s->restarts++;
        return 0;
    }
    CHECK(len > 0 && n + len < sizeof s->text);
    memcpy(t + n, piece, len);
    t[n + len] = '\0';
    s->pieces++;
    return s->stop_after > 0 && s->pieces >= s->stop_after;
}

static struct mt_llm *open_rf(const struct stub *s, uint32_t retries,
                              enum mt_response_format rf, const char *cache)
{
    struct mt_llm_params p;
    struct mt_llm *l = NULL;
    struct mt_error err;
    char spec[128];

    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = retries;
    p.backoff_base_s = 0.01;
    p.backoff_max_s = 0.05;
    p.response_format = rf;
    p.cache_path = cache;
    snprintf(spec, sizeof spec, "openai:%s#tiny-model", s->url);
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    return l;
}

static void stream_params(struct mt_chat_params *cp, struct seen *seen)
{
    mt_chat_default_params(cp);
    memset(seen, 0, sizeof *seen);
    cp->on_token = on_token;
    cp->on_token_ctx = seen;
}

/* ==== Streaming ==== */

static void test_stream_pieces_make_the_text_and_usage_counts(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    char body[8192];
    (void)state;
    stub_start(&s, "reply 200 0 - " THREE_WORDS "\n");
    l = open_rf(&s, 0, MT_RF_AUTO, NULL);
    stream_params(&cp, &seen);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(strcmp(r.texts[0], "one two three") == 0);
    CHECK(strcmp(seen.text, r.texts[0]) == 0);
    CHECK(seen.pieces == 3 && seen.restarts == 0);
    CHECK(r.prompt_tokens == 9 && r.completion_tokens == 3);
    CHECK(!r.tokens_estimated);
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "\"stream\":true") != NULL);
    CHECK(strstr(body, "\"include_usage\":true") != NULL);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_stream_n_completions_one_request_each(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    char body[8192];
    (void)state;
    stub_start(&s, "reply 200 0 - " THREE_WORDS "\n");
    l = open_rf(&s, 0, MT_RF_AUTO, NULL);
    stream_params(&cp, &seen);
    cp.n = 2;
    cp.seed = 5;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(r.n == 2 && strcmp(r.texts[1], "one two three") == 0);
    CHECK(strcmp(seen.second, "one two three") == 0);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 2);
    CHECK(strstr(body, "\"n\":1") && strstr(body, "\"seed\":6"));
    CHECK(r.prompt_tokens == 18 && r.completion_tokens == 6);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_stream_cut_midway_is_retried_then_clear(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    (void)state;
    stub_start(&s, "stream 0 1 " THREE_WORDS "\n"
                   "reply 200 0 - " THREE_WORDS "\n");
    l = open_rf(&s, 1, MT_RF_AUTO, NULL);
    stream_params(&cp, &seen);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(strcmp(r.texts[0], "one two three") == 0);
    CHECK(strcmp(seen.text, "one two three") == 0);
    CHECK(seen.restarts == 1); /* the cut attempt's "one " was dropped */
    CHECK(stub_requests(&s, NULL, NULL, 0) == 2);
    CHECK(r.prompt_tokens == 9); /* the cut attempt counts nothing */
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);

    stub_start(&s, "stream 0 2 " THREE_WORDS "\n");
    l = open_rf(&s, 2, MT_RF_AUTO, NULL);
    stream_params(&cp, &seen);
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_EIO);
    CHECK(strstr(err.msg, "stream cut off after 2 events") != NULL);
    CHECK(strstr(err.msg, "gave up after 3 tries") != NULL);
    CHECK(seen.restarts == 2 && r.texts == NULL);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_stream_refusals_and_cancel_are_final(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    (void)state;
    stub_start(&s,
               "reply 400 0 - {\"error\":{\"message\":\"bad seed\"}}\n"
               "stream 0 - " THREE_WORDS "\n"
               "stream 0 - {\"choices\":[{\"message\":{\"content\":5}}]}\n");
    l = open_rf(&s, 3, MT_RF_AUTO, NULL);
    stream_params(&cp, &seen);
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "HTTP 400: bad seed") != NULL);
    seen.stop_after = 2;
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_ECANCELED);
    CHECK(seen.pieces == 2 && strcmp(seen.text, "one two ") == 0);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 2); /* neither retried */
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_stream_cache_hit_comes_as_one_piece(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    char cache[400];
    (void)state;
    stub_start(&s, "reply 200 0 - " THREE_WORDS "\n");
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    l = open_rf(&s, 0, MT_RF_AUTO, cache);
    stream_params(&cp, &seen);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    stream_params(&cp, &seen);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(r.cached && seen.pieces == 1);
    CHECK(strcmp(seen.text, "one two three") == 0);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 1);
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

/* ==== Response format ==== */

static int sent_format(const struct stub *s, const char *type)
{
    char body[8192];
    char want[64];

    stub_requests(s, NULL, body, sizeof body);
    if (!type)
        return strstr(body, "\"response_format\"") == NULL;
    snprintf(want, sizeof want, "\"type\":\"%s\"", type);
    return strstr(body, "\"response_format\"") && strstr(body, want);
}

static void test_rf_auto_falls_back_once_and_remembers(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, "reply 400 0 - {\"error\":{\"message\":\"'response_format' "
                   "of type 'json_schema' is not supported\"}}\n"
                   "reply 400 0 - {\"error\":{\"message\":\"Unknown field "
                   "response_format\"}}\n"
                   "reply 200 0 - " THREE_WORDS "\n");
    l = open_rf(&s, 0, MT_RF_AUTO, NULL);
    mt_chat_default_params(&cp);
    cp.json_schema = "{\"type\":\"object\"}";
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(stub_requests(&s, NULL, NULL, 0) == 3);
    CHECK(sent_format(&s, NULL));
    mt_chat_result_free(&r);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err)); /* remembered */
    CHECK(stub_requests(&s, NULL, NULL, 0) == 4);
    CHECK(sent_format(&s, NULL));
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_rf_other_refusals_do_not_fall_back(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, "reply 400 0 - {\"error\":{\"message\":\"bad seed\"}}\n"
                   "reply 200 0 - " THREE_WORDS "\n");
    l = open_rf(&s, 0, MT_RF_AUTO, NULL);
    mt_chat_default_params(&cp);
    cp.json_schema = "{\"type\":\"object\"}";
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_EINVAL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 1);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(sent_format(&s, "json_schema")); /* still the first choice */
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

static void test_rf_forced_modes(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    enum mt_response_format f;
    (void)state;
    CHECK_OK(mt_response_format_parse("json_object", &f));
    CHECK(f == MT_RF_JSON_OBJECT);
    CHECK(mt_response_format_parse("xml", &f) == MT_EINVAL);
    CHECK(strcmp(mt_response_format_name(MT_RF_NONE), "none") == 0);
    stub_start(&s, "reply 200 0 - " THREE_WORDS "\n");
    mt_chat_default_params(&cp);
    cp.json_schema = "{\"type\":\"object\"}";
    l = open_rf(&s, 0, MT_RF_JSON_OBJECT, NULL);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(sent_format(&s, "json_object"));
    mt_chat_result_free(&r);
    mt_llm_close(l);
    l = open_rf(&s, 0, MT_RF_NONE, NULL);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(sent_format(&s, NULL));
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);

    stub_start(&s, "reply 400 0 - {\"error\":{\"message\":\"json_schema is "
                   "not supported\"}}\n");
    l = open_rf(&s, 0, MT_RF_JSON_SCHEMA, NULL);
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_EINVAL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 1); /* forced: no fallback */
    mt_llm_close(l);
    stub_stop(&s);
}

/* ==== Usage ==== */

static void test_usage_absent_is_estimated_and_labelled(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    char cache[400];
    (void)state;
    stub_start(&s, "reply 200 0 - " NO_USAGE "\n");
    snprintf(cache, sizeof cache, "%s/cache.db", s.dir);
    l = open_rf(&s, 0, MT_RF_AUTO, cache);
    CHECK_OK(mt_llm_chat(l, msgs, 2, NULL, &r, &err));
    CHECK(r.tokens_estimated);
    CHECK(r.prompt_tokens == 6);     /* 24 bytes / 4 */
    CHECK(r.completion_tokens == 2); /* "abcdefgh" / 4 */
    mt_chat_result_free(&r);
    CHECK_OK(mt_llm_chat(l, msgs, 2, NULL, &r, &err));
    CHECK(r.cached && r.tokens_estimated); /* the label is cached too */
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_pieces_make_the_text_and_usage_counts),
        cmocka_unit_test(test_stream_n_completions_one_request_each),
        cmocka_unit_test(test_stream_cut_midway_is_retried_then_clear),
        cmocka_unit_test(test_stream_refusals_and_cancel_are_final),
        cmocka_unit_test(test_stream_cache_hit_comes_as_one_piece),
        cmocka_unit_test(test_rf_auto_falls_back_once_and_remembers),
        cmocka_unit_test(test_rf_other_refusals_do_not_fall_back),
        cmocka_unit_test(test_rf_forced_modes),
        cmocka_unit_test(test_usage_absent_is_estimated_and_labelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
