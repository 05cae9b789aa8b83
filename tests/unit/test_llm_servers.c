/* Unit tests for the OpenAI client against the servers users have, each
 * played by the loopback stub with the bodies and errors its
 * documentation gives: reasoning text (vLLM's "reasoning", llama-server's
 * and DeepSeek's "reasoning_content", <think> blocks and the lone
 * "</think>" of templates that open <think> in the prompt), streamed and
 * not, and the usage-only last chunk of a stream. */
#include "check.h"

#include <stdlib.h>

#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "medtrust/model.h"
#include "stub.h"

static const struct mt_llm_message msgs[] = {
    {"system", "You are terse."},
    {"user", "Is the note correct?"},
};

/* A chat.completion whose one choice's message is MSG (a JSON object's
 * members), finishing with FR. */
#define COMPLETION(msg, fr)                                                    \
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,"     \
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":"         \
    "\"assistant\"," msg "},\"logprobs\":null,\"finish_reason\":\"" fr "\"}]," \
    "\"usage\":{\"prompt_tokens\":20,\"total_tokens\":60,"                     \
    "\"completion_tokens\":40}}"

#define DRAFT "draft {\\\"verdict\\\":\\\"CORRECT\\\"} but wait"
#define FINAL "{\\\"verdict\\\":\\\"INCORRECT\\\"}"

static struct mt_llm *open_llm(const struct stub *s)
{
    struct mt_llm_params p;
    struct mt_llm *l = NULL;
    struct mt_error err;
    char spec[128];

    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = 0;
    snprintf(spec, sizeof spec, "openai:%s#m", s->url);
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    return l;
}

/* The verdict the reply parser reads from completion 0. */
static int verdict_is(const struct mt_chat_result *r, const char *want)
{
    char why[256];
    json_t *o = mtx_reply_extract(r->texts[0], why, sizeof why);
    const char *v = json_string_value(json_object_get(o, "verdict"));
    int same = v && strcmp(v, want) == 0;

    json_decref(o);
    return same;
}

/* One plain call answered by 'reply'; r holds the result. */
static enum mt_status call_once(const char *reply, struct mt_chat_result *r,
                                struct mt_error *err)
{
    struct stub s;
    struct mt_llm *l;
    char script[8192];
    enum mt_status st;

    snprintf(script, sizeof script, "reply 200 0 - %s\n", reply);
    stub_start(&s, script);
    l = open_llm(&s);
    st = mt_llm_chat(l, msgs, 2, NULL, r, err);
    mt_llm_close(l);
    stub_stop(&s);
    return st;
}

/* ==== Reasoning, not streamed ==== */

static void test_vllm_reasoning_field_is_kept_apart(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    CHECK_OK(call_once(COMPLETION("\"content\":\"" FINAL "\",\"reasoning\":"
                                  "\"" DRAFT "\",\"tool_calls\":[]",
                                  "stop"),
                       &r, &err));
    CHECK(strcmp(r.texts[0], "{\"verdict\":\"INCORRECT\"}") == 0);
    CHECK(r.reasoning && r.reasoning[0]);
    CHECK(strstr(r.reasoning[0], "CORRECT") != NULL);
    CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
}

static void test_reasoning_content_of_llama_server_and_deepseek(void **st)
{
    struct mt_chat_result r;
    struct mt_error err;
    (void)st;
    CHECK_OK(call_once(COMPLETION("\"content\":\"" FINAL "\","
                                  "\"reasoning_content\":\"" DRAFT "\"",
                                  "stop"),
                       &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(r.reasoning && strstr(r.reasoning[0], "but wait") != NULL);
    mt_chat_result_free(&r);
}

/* Qwen3.5's template opens <think> in the prompt: the reply holds only the
 * closing tag. Today's parser took the first JSON that parsed: the draft. */
static void test_lone_closing_think_of_prompt_opened_templates(void **st)
{
    struct mt_chat_result r;
    struct mt_error err;
    (void)st;
    CHECK_OK(call_once(COMPLETION("\"content\":\"" DRAFT
                                  "\\n</think>\\n\\n" FINAL "\"",
                                  "stop"),
                       &r, &err));
    CHECK(strcmp(r.texts[0], "{\"verdict\":\"INCORRECT\"}") == 0);
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(r.reasoning && strstr(r.reasoning[0], "draft") == r.reasoning[0]);
    CHECK(strstr(r.reasoning[0], "</think>") == NULL);
    mt_chat_result_free(&r);
}

static void test_think_block_then_answer(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    CHECK_OK(call_once(COMPLETION("\"content\":\"<think>\\n" DRAFT
                                  "\\n</think>\\n\\n" FINAL "\"",
                                  "stop"),
                       &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(r.reasoning && strncmp(r.reasoning[0], "\ndraft", 6) == 0);
    mt_chat_result_free(&r);

    /* no think at all: untouched, no reasoning */
    CHECK_OK(
        call_once(COMPLETION("\"content\":\"" FINAL "\"", "stop"), &r, &err));
    CHECK(verdict_is(&r, "INCORRECT") && r.reasoning == NULL);
    mt_chat_result_free(&r);
}

/* A think block cut by max_tokens leaves no answer: the draft inside must
 * never be read as one. */
static void test_unclosed_think_is_no_answer(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    char why[128];
    (void)state;
    CHECK_OK(call_once(COMPLETION("\"content\":\"<think>" DRAFT "\"", "length"),
                       &r, &err));
    CHECK(r.texts[0][0] == '\0');
    CHECK(mtx_reply_extract(r.texts[0], why, sizeof why) == NULL);
    CHECK(r.reasoning && strstr(r.reasoning[0], "CORRECT") != NULL);
    mt_chat_result_free(&r);
}

/* vLLM: a reasoning parser that used all of max_tokens sends content null. */
static void test_reasoning_only_cut_by_max_tokens_fails_clearly(void **st)
{
    struct mt_chat_result r;
    struct mt_error err;
    (void)st;
    CHECK(call_once(COMPLETION("\"content\":null,\"reasoning\":\"" DRAFT "\"",
                               "length"),
                    &r, &err) == MT_ELIMIT);
    CHECK(strstr(err.msg, "spent all of max_tokens 512 on reasoning") != NULL);
    CHECK(strstr(err.msg, "--max-tokens") != NULL);
    CHECK(r.texts == NULL);
    /* content null and no reasoning is still a malformed reply */
    CHECK(call_once(COMPLETION("\"content\":null", "stop"), &r, &err) ==
          MT_EPARSE);
    CHECK(strstr(err.msg, "choices[0].message.content") != NULL);
}

/* ==== Streamed ==== */

struct seen {
    char text[512];
    int pieces;
};

static int on_token(void *ctx, uint32_t i, const char *piece, size_t len)
{
    struct seen *s = ctx;
    size_t n = strlen(s->text);

    (void)i;
    if (!piece)
        return 0;
    CHECK(n + len < sizeof s->text);
    memcpy(s->text + n, piece, len);
    s->text[n + len] = '\0';
    s->pieces++;
    return 0;
}

#define CHUNK(delta)                                                           \
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"        \
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{" delta "},"         \
    "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"
#define LAST_CHUNK                                                             \
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"        \
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},"                  \
    "\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}"
/* OpenAI's stream_options.include_usage: one more chunk, choices empty */
#define USAGE_CHUNK                                                            \
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"        \
    "\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":21,"          \
    "\"completion_tokens\":9,\"total_tokens\":30}}"

static enum mt_status stream_once(const char *events, struct seen *seen,
                                  struct mt_chat_result *r,
                                  struct mt_error *err)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    char script[8192];
    enum mt_status st;

    snprintf(script, sizeof script, "sse [%s]\n", events);
    stub_start(&s, script);
    l = open_llm(&s);
    mt_chat_default_params(&cp);
    memset(seen, 0, sizeof *seen);
    cp.on_token = on_token;
    cp.on_token_ctx = seen;
    st = mt_llm_chat(l, msgs, 2, &cp, r, err);
    mt_llm_close(l);
    stub_stop(&s);
    return st;
}

static void test_stream_reasoning_deltas_kept_apart(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    (void)state;
    /* vLLM: delta.reasoning */
    CHECK_OK(stream_once(
        CHUNK("\"role\":\"assistant\",\"content\":\"\"") "," CHUNK(
            "\"reasoning"
            "\":\"draft "
            "{\\\"verdic"
            "t\\\":\"") "," CHUNK("\"reasoning\":\"\\\"CORRECT\\\"}"
                                  "\"") "," CHUNK("\"content\":"
                                                  "\"" FINAL
                                                  "\"") "," LAST_CHUNK
                                                        "," USAGE_CHUNK,
        &seen, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(strcmp(seen.text, r.texts[0]) == 0 && seen.pieces == 1);
    CHECK(r.reasoning &&
          strcmp(r.reasoning[0], "draft {\"verdict\":\"CORRECT\"}") == 0);
    CHECK(r.prompt_tokens == 21 && r.completion_tokens == 9);
    CHECK(!r.tokens_estimated);
    mt_chat_result_free(&r);
    /* llama-server and DeepSeek: delta.reasoning_content */
    CHECK_OK(stream_once(CHUNK("\"reasoning_content\":\"hmm\"") "," CHUNK(
                             "\"content\":\"" FINAL "\"") "," LAST_CHUNK
                                                          "," USAGE_CHUNK,
                         &seen, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(r.reasoning && strcmp(r.reasoning[0], "hmm") == 0);
    mt_chat_result_free(&r);
}

static void test_stream_think_tags_in_content(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    (void)state;
    CHECK_OK(stream_once(
        CHUNK("\"content\":\"" DRAFT "\"") "," CHUNK(
            "\"content\":\"</think>\\n\\n\"") "," CHUNK("\"content\":\"" FINAL
                                                        "\"") "," LAST_CHUNK
                                                              "," USAGE_CHUNK,
        &seen, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    CHECK(r.reasoning && strstr(r.reasoning[0], "but wait") != NULL);
    mt_chat_result_free(&r);
}

/* With usage reporting on, the last chunk has "choices": [] and is usage
 * only; a stream without it counts estimated tokens. */
static void test_stream_usage_only_last_chunk(void **state)
{
    struct mt_chat_result r;
    struct mt_error err;
    struct seen seen;
    (void)state;
    CHECK_OK(stream_once(CHUNK("\"role\":\"assistant\"") "," CHUNK(
                             "\"content\":\"yes\"") "," LAST_CHUNK
                                                    "," USAGE_CHUNK,
                         &seen, &r, &err));
    CHECK(strcmp(r.texts[0], "yes") == 0 && strcmp(seen.text, "yes") == 0);
    CHECK(r.prompt_tokens == 21 && r.completion_tokens == 9);
    CHECK(!r.tokens_estimated && r.reasoning == NULL);
    mt_chat_result_free(&r);
    CHECK_OK(stream_once(CHUNK("\"content\":\"yes\"") "," LAST_CHUNK, &seen, &r,
                         &err));
    CHECK(strcmp(r.texts[0], "yes") == 0 && r.tokens_estimated);
    mt_chat_result_free(&r);
}

/* ==== Limits and sampling ==== */

/* OpenAI's reasoning models, as its API answers them. */
#define REFUSE_MAX_TOKENS                                                      \
    "reply 400 0 - {\"error\":{\"message\":\"Unsupported parameter: "          \
    "'max_tokens' is not supported with this model. Use "                      \
    "'max_completion_tokens' instead.\",\"type\":\"invalid_request_error\","   \
    "\"param\":\"max_tokens\",\"code\":\"unsupported_parameter\"}}\n"
#define REFUSE_TEMPERATURE                                                     \
    "reply 400 0 - {\"error\":{\"message\":\"Unsupported value: "              \
    "'temperature' does not support 0 with this model. Only the default "      \
    "(1) value is supported.\",\"type\":\"invalid_request_error\","            \
    "\"param\":\"temperature\",\"code\":\"unsupported_value\"}}\n"

static void test_reasoning_model_limits_step_down_once(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    char body[8192];
    (void)state;
    stub_start(
        &s, REFUSE_MAX_TOKENS REFUSE_TEMPERATURE
        "reply 200 0 - " COMPLETION("\"content\":\"" FINAL "\"", "stop") "\n");
    l = open_llm(&s);
    mt_chat_default_params(&cp);
    cp.max_tokens = 32;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 3);
    CHECK(strstr(body, "\"max_completion_tokens\":4128") != NULL);
    CHECK(strstr(body, "\"max_tokens\"") == NULL);
    CHECK(strstr(body, "\"temperature\"") == NULL);
    CHECK(strstr(body, "\"top_p\"") != NULL);
    /* remembered: the next call goes out right the first time */
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 4);
    CHECK(strstr(body, "\"max_completion_tokens\"") != NULL);
    CHECK(strstr(body, "\"temperature\"") == NULL);
    mt_llm_close(l);
    stub_stop(&s);
}

/* The same refusal again (the field already left out) is final, as is a
 * 400 about anything else. */
static void test_limit_refusal_not_looped(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_result r;
    struct mt_error err;
    (void)state;
    stub_start(&s, REFUSE_TEMPERATURE);
    l = open_llm(&s);
    CHECK(mt_llm_chat(l, msgs, 2, NULL, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "'temperature' does not support") != NULL);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 2);
    mt_llm_close(l);
    stub_stop(&s);
}

/* A judge's 32 tokens are too few for a model that reasons first (vLLM
 * with a reasoning parser): the call is sent again once with room for the
 * reasoning, and the endpoint keeps it. */
static void test_reasoning_budget_sized_for_the_endpoint(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    char body[8192];
    (void)state;
    stub_start(
        &s,
        "reply 200 0 - " COMPLETION(
            "\"content\":null,\"reasoning\":\"" DRAFT "\"",
            "length") "\nreply 200 0 - " COMPLETION("\"content\":\"" FINAL
                                                    "\",\"reasoning\":\"" DRAFT
                                                    "\"",
                                                    "stop") "\n");
    l = open_llm(&s);
    mt_chat_default_params(&cp);
    cp.max_tokens = 32;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 2);
    CHECK(strstr(body, "\"max_tokens\":4128") != NULL);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 3);
    CHECK(strstr(body, "\"max_tokens\":4128") != NULL);
    mt_llm_close(l);
    stub_stop(&s);
    /* a reply that reasoned within its budget is learnt from too */
    stub_start(&s, "reply 200 0 - " COMPLETION("\"content\":\"" DRAFT
                                               "</think>" FINAL "\"",
                                               "stop") "\n");
    l = open_llm(&s);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, body, sizeof body) == 1);
    CHECK(strstr(body, "\"max_tokens\":32}") != NULL);
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    stub_requests(&s, NULL, body, sizeof body);
    CHECK(strstr(body, "\"max_tokens\":4128") != NULL);
    mt_llm_close(l);
    stub_stop(&s);
}

/* ==== Structured output ==== */

#define OK_LINE                                                                \
    "reply 200 0 - " COMPLETION("\"content\":\"" FINAL "\"", "stop") "\n"
/* a field the schema does not require, and a bounded string */
#define SCHEMA                                                                 \
    "{\"type\":\"object\",\"properties\":{\"verdict\":{\"type\":"              \
    "\"string\",\"maxLength\":20},\"why\":{\"type\":\"object\","               \
    "\"properties\":{\"text\":{\"type\":\"string\"}}}},"                       \
    "\"required\":[\"verdict\"]}"

/* Makes one call with SCHEMA against 'script'; body gets the last
 * request; returns the number of requests. */
static int schema_call(const char *script, enum mt_status want, char *body,
                       size_t n)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    int count;

    stub_start(&s, script);
    l = open_llm(&s);
    mt_chat_default_params(&cp);
    cp.json_schema = SCHEMA;
    assert_int_equal(mt_llm_chat(l, msgs, 2, &cp, &r, &err), want);
    if (want == MT_OK)
        CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
    count = stub_requests(&s, NULL, body, n);
    mt_llm_close(l);
    stub_stop(&s);
    return count;
}

/* vLLM (which removed guided_json) and OpenAI's strict mode alike get
 * response_format json_schema, strict, every object closed and every
 * property required. */
static void test_schema_sent_strict_and_closed(void **state)
{
    char body[8192];
    (void)state;
    CHECK(schema_call(OK_LINE, MT_OK, body, sizeof body) == 1);
    CHECK(strstr(body, "guided_json") == NULL);
    CHECK(strstr(body, "\"type\":\"json_schema\"") != NULL);
    CHECK(strstr(body, "\"strict\":true") != NULL);
    CHECK(strstr(body, "\"required\":[\"verdict\",\"why\"]") != NULL);
    CHECK(strstr(body, "\"required\":[\"text\"]") != NULL);
    CHECK(strstr(body, "\"required\":[\"text\"],\"additionalProperties\":"
                       "false}},\"required\":[\"verdict\",\"why\"],"
                       "\"additionalProperties\":false}") != NULL);
    CHECK(strstr(body, "\"maxLength\":20") != NULL);
}

/* OpenAI's strict mode refuses string lengths: the schema goes again
 * without them, still as json_schema. */
static void test_openai_strict_refusal_of_max_length(void **state)
{
    char body[8192];
    (void)state;
    CHECK(schema_call(
              "reply 400 0 - {\"error\":{\"message\":\"Invalid schema for "
              "response_format 'response': In context=('properties', "
              "'verdict'), 'maxLength' is not permitted.\",\"type\":"
              "\"invalid_request_error\",\"param\":\"response_format\","
              "\"code\":null}}\n" OK_LINE,
              MT_OK, body, sizeof body) == 2);
    CHECK(strstr(body, "\"type\":\"json_schema\"") != NULL);
    CHECK(strstr(body, "maxLength") == NULL);
}

/* llama-server started with a grammar (--grammar-file) refuses any
 * json_schema with it, json_object too (it becomes a schema): the
 * step-down ends at no response_format, the prompt and validation. */
#define BOTH_REFUSED                                                           \
    "reply 400 0 - {\"error\":{\"code\":400,\"message\":\"Either "             \
    "\\\"json_schema\\\" or \\\"grammar\\\" can be specified, but not "        \
    "both\",\"type\":\"invalid_request_error\"}}\n"
static void test_llama_server_grammar_conflict_ends_at_prompting(void **st)
{
    char body[8192];
    (void)st;
    CHECK(schema_call(BOTH_REFUSED BOTH_REFUSED OK_LINE, MT_OK, body,
                      sizeof body) == 3);
    CHECK(strstr(body, "response_format") == NULL);
    CHECK(strstr(body, "\"grammar\"") == NULL);
}

/* LM Studio answers 400 to json_object, its error a bare string. */
static void test_lm_studio_refuses_json_object(void **state)
{
    char body[8192];
    (void)state;
    CHECK(schema_call(BOTH_REFUSED
                      "reply 400 0 - {\"error\":\"'response_format.type' "
                      "must be 'json_schema' or 'text'\"}\n" OK_LINE,
                      MT_OK, body, sizeof body) == 3);
    CHECK(strstr(body, "response_format") == NULL);
}

/* ==== Silent truncation ==== */

/* Ollama's /v1 reply (its system_fingerprint), having read PT tokens. */
#define OLLAMA(pt)                                                             \
    "reply 200 0 - {\"id\":\"chatcmpl-391\",\"object\":\"chat.completion\","   \
    "\"created\":1733000000,\"model\":\"llama3.2\",\"system_fingerprint\":"    \
    "\"fp_ollama\",\"choices\":[{\"index\":0,\"message\":{\"role\":"           \
    "\"assistant\",\"content\":\"" FINAL "\"},\"finish_reason\":\"stop\"}],"   \
    "\"usage\":{\"prompt_tokens\":" #pt ",\"completion_tokens\":12,"           \
    "\"total_tokens\":" #pt "}}\n"

/* A call with a 40,000-byte note (about 9,000 tokens), streamed or not. */
static enum mt_status long_call(const char *script, int stream,
                                struct mt_error *err)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct seen seen;
    struct mt_llm_message m[2] = {{"system", "You are terse."}, {"user", ""}};
    char *note = malloc(40001);
    enum mt_status st;
    size_t i;

    assert_non_null(note);
    for (i = 0; i < 40000; i++)
        note[i] = "The patient was given 5 mg of warfarin. "[i % 40];
    note[40000] = '\0';
    m[1].content = note;
    stub_start(&s, script);
    l = open_llm(&s);
    mt_chat_default_params(&cp);
    memset(&seen, 0, sizeof seen);
    if (stream) {
        cp.on_token = on_token;
        cp.on_token_ctx = &seen;
    }
    st = mt_llm_chat(l, m, 2, &cp, &r, err);
    if (st == MT_OK)
        CHECK(verdict_is(&r, "INCORRECT"));
    mt_chat_result_free(&r);
    mt_llm_close(l);
    stub_stop(&s);
    free(note);
    return st;
}

static void test_ollama_silent_truncation_fails_the_call(void **state)
{
    struct mt_error err;
    (void)state;
    CHECK(long_call(OLLAMA(2048), 0, &err) == MT_ELIMIT);
    CHECK(strstr(err.msg, "read 2048 prompt tokens of a 40014-byte") != NULL);
    CHECK(strstr(err.msg, "cut the prompt without saying so") != NULL);
    CHECK(strstr(err.msg, "OLLAMA_CONTEXT_LENGTH") != NULL);
    /* the stub streams the same usage in its last chunk */
    CHECK(long_call(OLLAMA(4096), 1, &err) == MT_ELIMIT);
    CHECK(strstr(err.msg, "read 4096 prompt tokens") != NULL);
    /* a server that read it all */
    CHECK_OK(long_call(OLLAMA(9012), 0, &err));
    CHECK_OK(long_call(OLLAMA(9012), 1, &err));
}

/* ==== Azure OpenAI ==== */

/* One call through KIND:STUB_URL TAIL; line gets the
 * stub's log line ("SEQ ACTIVE PATH AUTH BODY"). */
static enum mt_status azure_call(const char *script, const char *kind,
                                 const char *tail, char *line, size_t n,
                                 struct mt_error *err)
{
    struct stub s;
    struct mt_llm *l = NULL;
    struct mt_llm_params p;
    struct mt_chat_result r;
    char spec[256];
    enum mt_status st;

    stub_start(&s, script);
    snprintf(spec, sizeof spec, "%s:%s%s", kind, s.url, tail);
    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = 0;
    CHECK_OK(mt_llm_open(spec, &p, &l, err));
    st = mt_llm_chat(l, msgs, 2, NULL, &r, err);
    mt_chat_result_free(&r);
    stub_requests(&s, NULL, line, n);
    mt_llm_close(l);
    stub_stop(&s);
    return st;
}

static void test_azure_legacy_and_v1_paths(void **state)
{
    char line[8192];
    struct mt_error err;
    (void)state;
    setenv("AZURE_OPENAI_API_KEY", "az-secret", 1);
    unsetenv("AZURE_OPENAI_API_VERSION");
    CHECK_OK(azure_call(OK_LINE, "azure", "#gpt-4o", line, sizeof line, &err));
    CHECK(strstr(line, " /openai/deployments/gpt-4o/chat/completions"
                       "?api-version=2024-10-21 api-key=az-secret {") != NULL);
    CHECK_OK(azure_call(OK_LINE, "azure",
                        "/?api-version=2025-01-01-preview#dep", line,
                        sizeof line, &err));
    CHECK(strstr(line, " /openai/deployments/dep/chat/completions"
                       "?api-version=2025-01-01-preview api-key=") != NULL);
    setenv("AZURE_OPENAI_API_VERSION", "2024-06-01", 1);
    CHECK_OK(azure_call(OK_LINE, "azure", "#dep", line, sizeof line, &err));
    CHECK(strstr(line, "?api-version=2024-06-01 ") != NULL);
    unsetenv("AZURE_OPENAI_API_VERSION");
    /* the v1 API: no api-version, the deployment as the model */
    CHECK_OK(azure_call(OK_LINE, "azure", "/openai/v1#gpt-4o", line,
                        sizeof line, &err));
    CHECK(strstr(line, " /openai/v1/chat/completions api-key=az-secret {") !=
          NULL);
    CHECK(strstr(line, "\"model\":\"gpt-4o\"") != NULL);
    /* openai: keeps its bearer token */
    setenv("MEDTRUST_API_KEY", "mt-secret", 1);
    CHECK_OK(azure_call(OK_LINE, "openai", "#m", line, sizeof line, &err));
    CHECK(strstr(line, " /v1/chat/completions bearer=mt-secret {") != NULL);
    unsetenv("MEDTRUST_API_KEY");
    unsetenv("AZURE_OPENAI_API_KEY");
}

static void test_azure_401_names_its_key(void **state)
{
    char line[8192];
    struct mt_error err;
    (void)state;
    CHECK(azure_call("reply 401 0 - {\"error\":{\"code\":\"401\","
                     "\"message\":\"Access denied due to invalid "
                     "subscription key or wrong API endpoint.\"}}\n",
                     "azure", "#gpt-4o", line, sizeof line, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "set AZURE_OPENAI_API_KEY") != NULL);
    CHECK(strstr(err.msg, "Access denied") != NULL);
    CHECK(strstr(line, " - {") != NULL); /* no key set: none sent */
}

/* ==== Server profiles ==== */

/* The profile after one call against 'script' through KIND:URL TAIL. */
static void profile_after(const char *script, const char *kind,
                          const char *tail, char *prof, size_t n)
{
    struct stub s;
    struct mt_llm *l = NULL;
    struct mt_llm_params p;
    struct mt_chat_result r;
    struct mt_chat_params cp;
    struct mt_error err;
    char spec[256];

    stub_start(&s, script);
    snprintf(spec, sizeof spec, "%s:%s%s", kind, s.url, tail);
    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = 0;
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    if (strcmp(kind, "openai") == 0) /* azure: known from the spec */
        CHECK(strstr(mt_llm_profile(l), "not detected yet") ==
              mt_llm_profile(l));
    mt_chat_default_params(&cp);
    cp.json_schema = SCHEMA;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    snprintf(prof, n, "%s", mt_llm_profile(l));
    mt_llm_close(l);
    stub_stop(&s);
}

/* Each server's reply as its documentation shows it. */
#define LLAMA_REPLY                                                            \
    "reply 200 0 - {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,"     \
    "\"message\":{\"role\":\"assistant\",\"content\":\"" FINAL "\"}}],"        \
    "\"created\":1,\"model\":\"m\",\"system_fingerprint\":\"b5500-abc\","      \
    "\"object\":\"chat.completion\",\"usage\":{\"completion_tokens\":5,"       \
    "\"prompt_tokens\":9,\"total_tokens\":14},\"id\":\"chatcmpl-x\","          \
    "\"timings\":{\"prompt_n\":9,\"predicted_n\":5}}\n"
#define VLLM_REPLY                                                             \
    "reply 200 0 - {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","     \
    "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":"     \
    "{\"role\":\"assistant\",\"reasoning\":null,\"content\":\"" FINAL "\","    \
    "\"tool_calls\":[]},\"logprobs\":null,\"finish_reason\":\"stop\","         \
    "\"stop_reason\":null}],\"usage\":{\"prompt_tokens\":9,"                   \
    "\"total_tokens\":14,\"completion_tokens\":5},\"prompt_logprobs\":null}\n"
#define OPENAI_REPLY                                                           \
    "reply 200 0 - {\"id\":\"chatcmpl-B9\",\"object\":\"chat.completion\","    \
    "\"created\":1,\"model\":\"o3-mini\",\"choices\":[{\"index\":0,"           \
    "\"message\":{\"role\":\"assistant\",\"content\":\"" FINAL "\","           \
    "\"refusal\":null},\"finish_reason\":\"stop\"}],\"usage\":"                \
    "{\"prompt_tokens\":9,\"completion_tokens\":5,\"total_tokens\":14},"       \
    "\"service_tier\":\"default\",\"system_fingerprint\":\"fp_44\"}\n"

static void test_profiles_detected_once_per_endpoint(void **state)
{
    char prof[1024];
    (void)state;
    profile_after(LLAMA_REPLY, "openai", "#m", prof, sizeof prof);
    CHECK(
        strncmp(prof, "llama-server (auth Authorization: Bearer; http://",
                strlen("llama-server (auth Authorization: Bearer; http://")) ==
        0);
    CHECK(strstr(prof, "/v1/chat/completions; max_tokens; temperature "
                       "sent; structured output response_format or grammar "
                       "(GBNF), sending json_schema; reasoning in "
                       "reasoning_content; detected from its first reply's "
                       "fields)") != NULL);
    profile_after(VLLM_REPLY, "openai", "#m", prof, sizeof prof);
    CHECK(strncmp(prof, "vllm (", strlen("vllm (")) == 0 &&
          strstr(prof, "reasoning in reasoning; detected from") != NULL);
    profile_after(OLLAMA(20), "openai", "#m", prof, sizeof prof);
    CHECK(strncmp(prof, "ollama (", strlen("ollama (")) == 0);
    /* the first refusal's wording tells OpenAI, and its reasoning model's
     * documented preset leaves temperature out with no second refusal */
    profile_after(REFUSE_MAX_TOKENS OPENAI_REPLY, "openai", "#o3-mini", prof,
                  sizeof prof);
    CHECK(strncmp(prof, "openai (", strlen("openai (")) == 0);
    CHECK(strstr(prof, "; max_completion_tokens; temperature left out;") !=
          NULL);
    profile_after(OK_LINE, "azure", "#gpt-4o", prof, sizeof prof);
    CHECK(strncmp(prof, "azure (auth api-key header; http://",
                  strlen("azure (auth api-key header; http://")) == 0);
    CHECK(strstr(prof, "/openai/deployments/gpt-4o/chat/completions?"
                       "api-version=") != NULL);
    /* LM Studio is known by its refusal of json_object */
    profile_after("reply 400 0 - {\"error\":\"Invalid response_format: the "
                  "model's json_schema failed to compile\"}\n"
                  "reply 400 0 - {\"error\":\"'response_format.type' "
                  "must be 'json_schema' or 'text'\"}\n" OK_LINE,
                  "openai", "#m", prof, sizeof prof);
    CHECK(strncmp(prof, "lm-studio (", strlen("lm-studio (")) == 0);
    CHECK(strstr(prof, "sending no response_format (prompt and validation)") !=
          NULL);
    profile_after(OK_LINE, "openai", "#m", prof, sizeof prof);
    CHECK(strncmp(prof, "openai-compatible (", strlen("openai-compatible (")) ==
          0);
}

/* llama-server's /props (asked once for the context) tells the kind
 * before any chat. */
static void test_profile_from_props(void **state)
{
    struct stub s;
    struct mt_llm *l;
    (void)state;
    stub_start(&s, "props 200 0 - {\"default_generation_settings\":{\"n_ctx\":"
                   "2048,\"params\":{}},\"total_slots\":4,\"model_path\":"
                   "\"m.gguf\",\"chat_template\":\"\"}\n" OK_LINE);
    l = open_llm(&s);
    CHECK(mt_llm_n_ctx(l) == 2048);
    CHECK(strncmp(mt_llm_profile(l), "llama-server (", 14) == 0);
    mt_llm_close(l);
    stub_stop(&s);
    /* a server without /props stays undetected until it answers */
    stub_start(&s, OK_LINE);
    l = open_llm(&s);
    CHECK(mt_llm_n_ctx(l) == 0);
    CHECK(strncmp(mt_llm_profile(l), "not detected yet", 16) == 0);
    mt_llm_close(l);
    stub_stop(&s);
}

/* The profile and context of a fresh handle on a stub playing 'script',
 * asked before any chat (as `medtrust models` and the prompt fitting ask
 * it). */
static uint32_t probe_profile(const char *script, const char *model, char *prof,
                              size_t n)
{
    struct stub s;
    struct mt_llm *l = NULL;
    struct mt_llm_params p;
    struct mt_error err;
    char spec[256];
    uint32_t ctx;

    stub_start(&s, script);
    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = 0;
    snprintf(spec, sizeof spec, "openai:%s#%s", s.url, model);
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    ctx = mt_llm_n_ctx(l);
    snprintf(prof, n, "%s", mt_llm_profile(l));
    mt_llm_close(l);
    stub_stop(&s);
    return ctx;
}

/* GET /v1/models, asked once when /props is missing: each server's list
 * as its documentation shows it, told apart by "owned_by"; vLLM's
 * max_model_len is its context. */
static void test_profile_from_models_list(void **state)
{
    char prof[1024];
    (void)state;
    CHECK(probe_profile(
              "models 200 0 - {\"object\":\"list\",\"data\":[{\"id\":"
              "\"meta-llama/Llama-3.1-8B-Instruct\",\"object\":\"model\","
              "\"created\":1715000000,\"owned_by\":\"vllm\",\"root\":"
              "\"meta-llama/Llama-3.1-8B-Instruct\",\"parent\":null,"
              "\"max_model_len\":8192,\"permission\":[]},{\"id\":\"pqa\","
              "\"object\":\"model\",\"created\":1715000000,\"owned_by\":"
              "\"vllm\",\"root\":\"/m/pqa\",\"parent\":"
              "\"meta-llama/Llama-3.1-8B-Instruct\",\"max_model_len\":4096}]}"
              "\n" OK_LINE,
              "pqa", prof, sizeof prof) == 4096);
    CHECK(strncmp(prof, "vllm (", 6) == 0);
    CHECK(strstr(prof, "; detected from GET /v1/models)") != NULL);
    CHECK(probe_profile("models 200 0 - {\"object\":\"list\",\"data\":[{"
                        "\"id\":\"llama3.2:latest\",\"object\":\"model\","
                        "\"created\":1721000000,\"owned_by\":\"library\"}]}"
                        "\n" OK_LINE,
                        "llama3.2", prof, sizeof prof) == 0);
    CHECK(strncmp(prof, "ollama (", 8) == 0);
    probe_profile("models 200 0 - {\"data\":[{\"id\":\"qwen2.5-7b-instruct\","
                  "\"object\":\"model\",\"owned_by\":\"organization_owner\"}],"
                  "\"object\":\"list\"}\n" OK_LINE,
                  "qwen2.5-7b-instruct", prof, sizeof prof);
    CHECK(strncmp(prof, "lm-studio (", 11) == 0);
    probe_profile("models 200 0 - {\"object\":\"list\",\"data\":[{\"id\":"
                  "\"deepseek-chat\",\"object\":\"model\",\"owned_by\":"
                  "\"deepseek\"},{\"id\":\"deepseek-reasoner\",\"object\":"
                  "\"model\",\"owned_by\":\"deepseek\"}]}\n" OK_LINE,
                  "deepseek-reasoner", prof, sizeof prof);
    CHECK(strncmp(prof, "deepseek (", 10) == 0);
    probe_profile("models 200 0 - {\"object\":\"list\",\"data\":[{\"id\":"
                  "\"gpt-4o\",\"object\":\"model\",\"created\":1715367049,"
                  "\"owned_by\":\"system\"}]}\n" OK_LINE,
                  "gpt-4o", prof, sizeof prof);
    CHECK(strncmp(prof, "openai (", 8) == 0);
    /* a list that names no known owner tells nothing */
    probe_profile("models 200 0 - {\"object\":\"list\",\"data\":[{\"id\":"
                  "\"m\",\"object\":\"model\",\"owned_by\":\"me\"}]}\n" OK_LINE,
                  "m", prof, sizeof prof);
    CHECK(strncmp(prof, "not detected yet", 16) == 0);
}

/* A server known as LM Studio (its /v1/models) whose json_schema is
 * refused steps down straight to no response_format: it refuses
 * json_object too, so that step would cost a request for nothing. */
static void test_lm_studio_profile_skips_json_object(void **state)
{
    struct stub s;
    struct mt_llm *l;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    char last[8192];
    (void)state;
    stub_start(&s, "models 200 0 - {\"data\":[{\"id\":\"m\",\"object\":"
                   "\"model\",\"owned_by\":\"organization_owner\"}],"
                   "\"object\":\"list\"}\n"
                   "reply 400 0 - {\"error\":\"Invalid response_format: the "
                   "model's json_schema failed to compile\"}\n" OK_LINE);
    l = open_llm(&s);
    CHECK(mt_llm_n_ctx(l) == 0); /* asks /props, then /v1/models */
    CHECK(strncmp(mt_llm_profile(l), "lm-studio (", 11) == 0);
    mt_chat_default_params(&cp);
    cp.json_schema = SCHEMA;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    mt_chat_result_free(&r);
    CHECK(stub_requests(&s, NULL, last, sizeof last) == 2);
    CHECK(strstr(last, "response_format") == NULL);
    CHECK(strstr(mt_llm_profile(l), "sending no response_format") != NULL);
    mt_llm_close(l);
    stub_stop(&s);
}

/* One chat on a stub playing 'script' with 'model' after the profile was
 * asked (GET /props, then /v1/models); every request's line into body,
 * the number of chat requests returned. */
static int chat_after_probe(const char *script, const char *model, uint32_t n,
                            char *body, size_t bn)
{
    struct stub s;
    struct mt_llm *l = NULL;
    struct mt_llm_params p;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err;
    char spec[256];
    FILE *f;
    int k;

    stub_start(&s, script);
    mt_llm_default_params(&p);
    p.timeout_s = 5;
    p.max_retries = 0;
    snprintf(spec, sizeof spec, "openai:%s#%s", s.url, model);
    CHECK_OK(mt_llm_open(spec, &p, &l, &err));
    (void)mt_llm_n_ctx(l);
    mt_chat_default_params(&cp);
    cp.max_tokens = 32;
    cp.n = n;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, &err));
    CHECK(r.n == n);
    mt_chat_result_free(&r);
    k = stub_requests(&s, NULL, NULL, 0);
    f = fopen(s.log, "r");
    body[f ? fread(body, 1, bn - 1, f) : 0] = '\0';
    if (f)
        fclose(f);
    mt_llm_close(l);
    stub_stop(&s);
    return k;
}

/* vLLM's reply to n = 2 */
#define VLLM_REPLY2                                                            \
    "reply 200 0 - {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion\","     \
    "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":"     \
    "{\"role\":\"assistant\",\"content\":\"" FINAL "\"},\"finish_reason\":"    \
    "\"stop\",\"stop_reason\":null},{\"index\":1,\"message\":{\"role\":"       \
    "\"assistant\",\"content\":\"" FINAL "\"},\"finish_reason\":\"stop\","     \
    "\"stop_reason\":null}],\"usage\":{\"prompt_tokens\":9,"                   \
    "\"total_tokens\":19,\"completion_tokens\":10}}\n"
#define OPENAI_MODELS(ID)                                                      \
    "models 200 0 - {\"object\":\"list\",\"data\":[{\"id\":\"" ID "\","        \
    "\"object\":\"model\",\"created\":1715367049,\"owned_by\":\"system\"}]}"   \
    "\n"

/* A kind known before the first chat gets what its documentation says at
 * once, with no refusal to learn it from: OpenAI's reasoning models
 * max_completion_tokens and no temperature or top_p (others keep
 * max_tokens and temperature); Ollama and LM Studio, which take no 'n',
 * one completion a request. */
static void test_profile_presets_before_any_refusal(void **state)
{
    char body[8192];
    (void)state;
    CHECK(chat_after_probe(OPENAI_MODELS("o3-mini") OPENAI_REPLY, "o3-mini", 1,
                           body, sizeof body) == 1);
    CHECK(strstr(body, "\"max_completion_tokens\":4128") != NULL);
    CHECK(strstr(body, "\"max_tokens\"") == NULL);
    CHECK(strstr(body, "\"temperature\"") == NULL);
    CHECK(strstr(body, "\"top_p\"") == NULL);
    CHECK(chat_after_probe(OPENAI_MODELS("gpt-5-mini") OPENAI_REPLY,
                           "gpt-5-mini", 1, body, sizeof body) == 1);
    CHECK(strstr(body, "\"max_completion_tokens\"") != NULL);
    CHECK(chat_after_probe(OPENAI_MODELS("gpt-4o") OPENAI_REPLY, "gpt-4o", 1,
                           body, sizeof body) == 1);
    CHECK(strstr(body, "\"max_tokens\":32") != NULL);
    CHECK(strstr(body, "\"temperature\"") != NULL);
    /* the refusal step-down stays the fallback for what no list tells */
    CHECK(chat_after_probe(REFUSE_MAX_TOKENS OPENAI_REPLY, "o3-mini", 1, body,
                           sizeof body) == 2);
    CHECK(strstr(body, "\"max_completion_tokens\"") != NULL);
    /* Ollama: two completions asked one a request */
    CHECK(chat_after_probe("models 200 0 - {\"object\":\"list\",\"data\":"
                           "[{\"id\":\"llama3.2:latest\",\"object\":"
                           "\"model\",\"owned_by\":\"library\"}]}\n" OK_LINE,
                           "llama3.2", 2, body, sizeof body) == 2);
    CHECK(strstr(body, "\"n\":1") != NULL && strstr(body, "\"n\":2") == NULL);
    /* vLLM takes n: both in one request */
    CHECK(chat_after_probe("models 200 0 - {\"object\":\"list\",\"data\":"
                           "[{\"id\":\"m\",\"object\":\"model\","
                           "\"owned_by\":\"vllm\"}]}\n" VLLM_REPLY2,
                           "m", 2, body, sizeof body) == 1);
    CHECK(strstr(body, "\"n\":2") != NULL);
}

/* llama-server's "Server: llama.cpp" header tells it on a reply whose
 * body shows nothing (here a bare completion, and its 404 to /props). */
static void test_profile_from_server_header(void **state)
{
    char prof[1024];
    (void)state;
    probe_profile("header Server: llama.cpp\n" OK_LINE, "m", prof, sizeof prof);
    CHECK(strncmp(prof, "llama-server (", 14) == 0);
    CHECK(strstr(prof, "; detected from its Server header (Server: "
                       "llama.cpp))") != NULL);
    /* another Server header is shown, and tells nothing by itself */
    probe_profile("header Server: uvicorn\n" OK_LINE, "m", prof, sizeof prof);
    CHECK(strncmp(prof, "not detected yet", 16) == 0);
    CHECK(strstr(prof, "detected from nothing yet (Server: uvicorn))") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_reasoning_field_is_kept_apart),
        cmocka_unit_test(test_reasoning_content_of_llama_server_and_deepseek),
        cmocka_unit_test(test_lone_closing_think_of_prompt_opened_templates),
        cmocka_unit_test(test_think_block_then_answer),
        cmocka_unit_test(test_unclosed_think_is_no_answer),
        cmocka_unit_test(test_reasoning_only_cut_by_max_tokens_fails_clearly),
        cmocka_unit_test(test_stream_reasoning_deltas_kept_apart),
        cmocka_unit_test(test_stream_think_tags_in_content),
        cmocka_unit_test(test_stream_usage_only_last_chunk),
        cmocka_unit_test(test_reasoning_model_limits_step_down_once),
        cmocka_unit_test(test_limit_refusal_not_looped),
        cmocka_unit_test(test_reasoning_budget_sized_for_the_endpoint),
        cmocka_unit_test(test_schema_sent_strict_and_closed),
        cmocka_unit_test(test_openai_strict_refusal_of_max_length),
        cmocka_unit_test(test_llama_server_grammar_conflict_ends_at_prompting),
        cmocka_unit_test(test_lm_studio_refuses_json_object),
        cmocka_unit_test(test_ollama_silent_truncation_fails_the_call),
        cmocka_unit_test(test_azure_legacy_and_v1_paths),
        cmocka_unit_test(test_azure_401_names_its_key),
        cmocka_unit_test(test_profiles_detected_once_per_endpoint),
        cmocka_unit_test(test_profile_from_props),
        cmocka_unit_test(test_profile_from_models_list),
        cmocka_unit_test(test_profile_from_server_header),
        cmocka_unit_test(test_lm_studio_profile_skips_json_object),
        cmocka_unit_test(test_profile_presets_before_any_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
