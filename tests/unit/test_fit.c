/* Unit tests for fitting prompts to a model's context (#29 §4): the
 * budget arithmetic (src/llmcall/fit.c), the cut of a text at a sentence
 * boundary, the token estimate, and the reading of the context-length
 * refusals of llama-server, vLLM and OpenAI (src/model/llm.c), each
 * written from the server's own error body. */
#include "check.h"

#include "llmcall/fit.h"
#include "medtrust/core.h"
#include "model/llm.h"

/* ==== Budget arithmetic ==== */

static void test_budget_is_context_less_answer_prompt_and_template(void **s)
{
    (void)s;
    /* 2048 - 256 (answer) - 700 (prompt) - 16 - 2 * 8 (template) */
    CHECK(mtx_fit_budget(2048, 256, 700, 2) == 1060);
    CHECK(mtx_fit_budget(2048, 256, 700, 4) == 1044);
    /* nothing left, or less than nothing: 0, never a wrap-around */
    CHECK(mtx_fit_budget(2048, 1024, 1100, 2) == 0);
    CHECK(mtx_fit_budget(1000, 100, UINT32_MAX, 2) == 0);
    /* an answer past half the context keeps half: the prompt the rest */
    CHECK(mtx_fit_answer(2048, 3072) == 1024);
    CHECK(mtx_fit_answer(2048, 1024) == 1024);
    CHECK(mtx_fit_answer(2048, 256) == 256);
    CHECK(mtx_fit_budget(2048, 3072, 0, 2) == 2048 - 1024 - 32);
    CHECK(mtx_fit_budget(1000, UINT32_MAX, UINT32_MAX, 2) == 0);
    /* an unknown context cuts nothing */
    CHECK(mtx_fit_budget(0, 256, 700, 2) == UINT32_MAX);
}

/* A counter of one token a byte, so the tests know every count. */
static uint32_t bytes(void *u, const char *s, size_t n)
{
    (void)u;
    (void)s;
    return (uint32_t)n;
}

static void test_cut_keeps_whole_sentences_that_fit(void **s)
{
    const char *t = "Aspirin inhibits platelets. It is given at 300 mg. "
                    "Bleeding is the main risk.";
    size_t n = strlen(t);

    (void)s;
    /* all fits */
    CHECK(mtx_fit_cut(t, n, (uint32_t)n, MTX_FIT_SENTENCES, bytes, NULL) == n);
    CHECK(mtx_fit_cut(t, n, 1000, MTX_FIT_SENTENCES, bytes, NULL) == n);
    /* "Aspirin inhibits platelets." is 27 bytes; the second sentence ends
     * at 50 ("...300 mg."): the cut falls at the last end that fits,
     * never inside a sentence, and "300 mg." does not end one early */
    CHECK(mtx_fit_cut(t, n, 27, MTX_FIT_SENTENCES, bytes, NULL) == 27);
    CHECK(mtx_fit_cut(t, n, 49, MTX_FIT_SENTENCES, bytes, NULL) == 27);
    CHECK(mtx_fit_cut(t, n, 50, MTX_FIT_SENTENCES, bytes, NULL) == 50);
    CHECK(mtx_fit_cut(t, n, (uint32_t)n - 1, MTX_FIT_SENTENCES, bytes, NULL) ==
          50);
    /* not even the first sentence: nothing */
    CHECK(mtx_fit_cut(t, n, 26, MTX_FIT_SENTENCES, bytes, NULL) == 0);
    CHECK(mtx_fit_cut(t, n, 0, MTX_FIT_SENTENCES, bytes, NULL) == 0);
}

/* A bad reply echoed in a repair turn is cut at any character, never
 * inside one, to at most the budget (one token a byte here: the length
 * scaled by budget / tokens, less a tenth). */
static void test_cut_chars_at_a_character_boundary(void **s)
{
    const char *t = "{\"thought\": \"caf\xc3\xa9 \xe5\xbf\x83 cut";
    size_t n = strlen(t);
    size_t k;
    uint32_t b;

    (void)s;
    CHECK(mtx_fit_cut(t, n, (uint32_t)n, MTX_FIT_CHARS, bytes, NULL) == n);
    for (b = 1; b < n; b++) {
        k = mtx_fit_cut(t, n, b, MTX_FIT_CHARS, bytes, NULL);
        CHECK(k <= b);
        CHECK(k == 0 || (t[k] & 0xC0) != 0x80); /* not inside a character */
    }
    /* no sentence end needed: a reply with none still keeps a prefix */
    CHECK(mtx_fit_cut(t, n, 20, MTX_FIT_CHARS, bytes, NULL) > 0);
    CHECK(mtx_fit_cut(t, n, 20, MTX_FIT_SENTENCES, bytes, NULL) == 0);
    CHECK(mtx_fit_cut(t, n, 0, MTX_FIT_CHARS, bytes, NULL) == 0);
}

static uint32_t estimate(void *u, const char *s, size_t n)
{
    (void)u;
    return mtx_llm_estimate_tokens(s, n);
}

static void test_cut_by_estimate(void **s)
{
    const char *t = "Dr. Smith saw him on day 2. The ECG was normal. "
                    "Troponin rose.";

    (void)s;
    CHECK(mtx_fit_cut(t, strlen(t), 9, MTX_FIT_SENTENCES, estimate, NULL) ==
          27);
    CHECK(mtx_fit_cut(t, strlen(t), 8, MTX_FIT_SENTENCES, estimate, NULL) == 0);
    CHECK(mtx_fit_cut(t, strlen(t), 16, MTX_FIT_SENTENCES, estimate, NULL) ==
          47);
}

static void test_estimate_errs_high(void **s)
{
    (void)s;
    CHECK(mtx_llm_estimate_tokens("", 0) == 0);
    CHECK(mtx_llm_estimate_tokens("abc", 3) == 1);
    CHECK(mtx_llm_estimate_tokens("abcd", 4) == 2); /* rounded up */
    /* one token per non-ASCII character (3 bytes of UTF-8 each here) */
    CHECK(mtx_llm_estimate_tokens("\xe5\xbf\x83\xe8\x82\x8c", 6) == 2);
    /* English prose: at least one token per 4 bytes, as BPE runs */
    {
        const char *e = "The patient was given aspirin and sent home.";
        CHECK(mtx_llm_estimate_tokens(e, strlen(e)) >= strlen(e) / 4);
    }
}

/* ==== Context-length refusals ==== */

/* llama-server (tools/server: send_error with
 * ERROR_TYPE_EXCEED_CONTEXT_SIZE, HTTP 400), as medtrust's HTTP client
 * wraps the body's message. */
static void test_parse_llama_server_refusal(void **s)
{
    uint32_t c = 0;
    uint32_t p = 0;
    const char *m =
        "http://127.0.0.1:8080/v1/chat/completions: the request exceeds the "
        "model's context length: shorten the input or lower max_tokens, or "
        "pick a model with a longer context in --llm/MEDTRUST_LLM (server "
        "said: request (3991 tokens) exceeds the available context size "
        "(2048 tokens), try increasing it)";

    (void)s;
    CHECK(mtx_llm_parse_ctx_error(m, &c, &p) == 1);
    CHECK(c == 2048 && p == 3991);
    /* the older wording without context shift */
    CHECK(mtx_llm_parse_ctx_error("input (5000 tokens) is larger than the "
                                  "max context size (4096 tokens). skipping",
                                  &c, &p) == 1);
    CHECK(c == 4096 && p == 5000);
}

/* vLLM's OpenAI server (serving_engine: _validate_input) in its old and
 * new wordings, and its max_tokens refusal. */
static void test_parse_vllm_refusals(void **s)
{
    uint32_t c = 0;
    uint32_t p = 0;

    (void)s;
    CHECK(mtx_llm_parse_ctx_error(
              "This model's maximum context length is 4096 tokens. However, "
              "you requested 5000 tokens (3000 in the messages, 2000 in the "
              "completion). Please reduce the length of the messages or "
              "completion.",
              &c, &p) == 1);
    CHECK(c == 4096 && p == 3000);
    CHECK(mtx_llm_parse_ctx_error(
              "This model's maximum context length is 1536 tokens. However, "
              "your request has 4176 input tokens. Please reduce the length "
              "of the input messages.",
              &c, &p) == 1);
    CHECK(c == 1536 && p == 4176);
    CHECK(mtx_llm_parse_ctx_error(
              "'max_tokens' or 'max_completion_tokens' is too large: 8000. "
              "This model's maximum context length is 4096 tokens and your "
              "request has 2778 input tokens (8000 > 4096 - 2778). None",
              &c, &p) == 1);
    CHECK(c == 4096 && p == 2778);
}

/* OpenAI's context_length_exceeded. */
static void test_parse_openai_refusal(void **s)
{
    uint32_t c = 0;
    uint32_t p = 0;

    (void)s;
    CHECK(mtx_llm_parse_ctx_error(
              "This model's maximum context length is 8192 tokens. However, "
              "your messages resulted in 9000 tokens. Please reduce the "
              "length of the messages.",
              &c, &p) == 1);
    CHECK(c == 8192 && p == 9000);
    /* a refusal that names no context teaches nothing */
    CHECK(mtx_llm_parse_ctx_error("too many tokens", &c, &p) == 0);
    CHECK(c == 0);
    CHECK(mtx_llm_parse_ctx_error("", &c, &p) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_budget_is_context_less_answer_prompt_and_template),
        cmocka_unit_test(test_cut_keeps_whole_sentences_that_fit),
        cmocka_unit_test(test_cut_chars_at_a_character_boundary),
        cmocka_unit_test(test_cut_by_estimate),
        cmocka_unit_test(test_estimate_errs_high),
        cmocka_unit_test(test_parse_llama_server_refusal),
        cmocka_unit_test(test_parse_vllm_refusals),
        cmocka_unit_test(test_parse_openai_refusal),
    };
    return cmocka_run_group_tests_name("fit", tests, NULL, NULL);
}
