/* Unit tests for the llama.cpp backends on tiny random-weight GGUF models
 * made at test time by tests/fixtures/make_tiny_gguf: templating and
 * tokenising, deterministic sampling, grammar-constrained JSON, embedding
 * shapes and normalisation, rerank scores, classifier labels, and errors. */
#include "check.h"

#include "llmcall/reply.h"
#include "tiny_gguf.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed.h"
#include "text/utf8.h"
#include "model/nli.h"
#include "model/rerank.h"

static char dir[256];
static struct mt_llm *shared_chat; /* loaded once: 151k-token vocab */

static void path_of(char *buf, size_t n, const char *kind)
{
    snprintf(buf, n, "%s/%s.gguf", dir, kind);
}

static int make_models(void **state)
{
    static const char *const kinds[] = {"chat", "embed", "rerank", "classify"};
    (void)state;
    return tiny_gguf_make(dir, sizeof dir, "/tmp/mt-gguf-XXXXXX", kinds, 4);
}

static int remove_models(void **state)
{
    static const char *kinds[] = {"chat", "embed", "rerank", "classify", "bad"};
    char p[300];
    size_t i;
    (void)state;
    mt_llm_close(shared_chat);
    for (i = 0; i < 5; i++) {
        path_of(p, sizeof p, kinds[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

static struct mt_llm *open_chat_ctx(uint32_t n_ctx)
{
    struct mt_llm_params p;
    struct mt_llm *l = NULL;
    struct mt_error err = {MT_OK, ""};
    char spec[300];

    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    mt_llm_default_params(&p);
    p.threads = 2;
    p.n_ctx = n_ctx;
    snprintf(spec, sizeof spec, "gguf:%s/chat.gguf", dir);
    if (mt_llm_open(spec, &p, &l, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return l;
}

static struct mt_llm *open_chat(uint32_t n_ctx)
{
    (void)n_ctx;
    if (!shared_chat)
        shared_chat = open_chat_ctx(512);
    return shared_chat;
}

static const struct mt_llm_message msgs[] = {
    {"system", "You check clinical notes."},
    {"user", "Is 500 mg of aspirin a safe dose?"},
};

static void test_chat_greedy_is_deterministic(void **state)
{
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result a;
    struct mt_chat_result b;
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 8;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &a, NULL));
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &b, NULL));
    CHECK(a.n == 1 && strcmp(a.texts[0], b.texts[0]) == 0);
    CHECK(a.prompt_tokens > 10 && a.completion_tokens <= 8);
    CHECK(strcmp(mt_llm_backend(l), "gguf") == 0);
    CHECK(strcmp(mt_llm_model(l), "chat.gguf") == 0);
    mt_chat_result_free(&a);
    mt_chat_result_free(&b);
}

static void test_chat_n_samples_same_seed_same_text(void **state)
{
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result a;
    struct mt_chat_result b;
    uint32_t i;
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 6;
    cp.n = 3;
    cp.temperature = 1.0f;
    cp.top_p = 0.95f;
    cp.seed = 99;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &a, NULL));
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &b, NULL));
    CHECK(a.n == 3 && b.n == 3);
    for (i = 0; i < 3; i++)
        CHECK(strcmp(a.texts[i], b.texts[i]) == 0);
    CHECK(a.completion_tokens <= 18);
    mt_chat_result_free(&a);
    mt_chat_result_free(&b);
}

static void test_chat_schema_output_parses(void **state)
{
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err = {MT_OK, ""};
    json_t *j;
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 96;
    cp.json_schema = "{\"type\":\"object\",\"properties\":{"
                     "\"error\":{\"type\":\"boolean\"},"
                     "\"label\":{\"enum\":[\"SUPPORT\",\"CONTRADICT\"]},"
                     "\"sentence\":{\"type\":\"integer\"}},"
                     "\"required\":[\"error\",\"label\",\"sentence\"]}";
    if (mt_llm_chat(l, msgs, 2, &cp, &r, &err) != MT_OK)
        fail_msg("%s", err.msg);
    j = json_loads(r.texts[0], 0, NULL);
    if (!j)
        fail_msg("not JSON: %s", r.texts[0]);
    CHECK(json_is_boolean(json_object_get(j, "error")));
    CHECK(json_is_string(json_object_get(j, "label")));
    CHECK(json_is_integer(json_object_get(j, "sentence")));
    json_decref(j);
    mt_chat_result_free(&r);
    cp.json_schema = NULL;
    cp.grammar = "root ::= \"yes\" | \"no\"";
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &r, NULL));
    CHECK(!strcmp(r.texts[0], "yes") || !strcmp(r.texts[0], "no"));
    mt_chat_result_free(&r);
    cp.grammar = "root ::= undefined-rule";
    CHECK(mt_llm_chat(l, msgs, 2, &cp, &r, &err) == MT_EINVAL);
}

/* The agents' reply schemas become grammars llama.cpp accepts: react's
 * action is an alternation of two branches (anyOf), MedEval's reasoning
 * precedes each score. A short reply under each starts as JSON does. */
static void test_agent_schemas_are_grammars_llama_accepts(void **state)
{
    static const char *const prompts[] = {"react", "eval", "parser",
                                          "guard_detect_1"};
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_error err = {MT_OK, ""};
    size_t i;
    (void)state;
    for (i = 0; i < sizeof prompts / sizeof *prompts; i++) {
        mt_chat_default_params(&cp);
        cp.max_tokens = 6;
        cp.json_schema = mtx_reply_schema(prompts[i]);
        CHECK(cp.json_schema != NULL);
        if (mt_llm_chat(l, msgs, 2, &cp, &r, &err) != MT_OK)
            fail_msg("%s: %s", prompts[i], err.msg);
        CHECK(r.texts[0][0] == '{');
        mt_chat_result_free(&r);
    }
}

static void test_chat_prompt_over_context_is_clear(void **state)
{
    struct mt_llm *l = open_chat_ctx(256);
    struct mt_llm_message m[1] = {{"user", NULL}};
    struct mt_chat_result r;
    struct mt_error err;
    char *big = malloc(8001);
    int i;
    (void)state;
    for (i = 0; i < 1000; i++)
        memcpy(big + 8 * i, "patient ", 8);
    big[8000] = '\0';
    m[0].content = big;
    CHECK(mt_llm_chat(l, m, 1, NULL, &r, &err) == MT_ELIMIT);
    CHECK(strstr(err.msg, "context holds 256") != NULL);
    free(big);
    mt_llm_close(l);
}

static void test_chat_stops_at_stop_string(void **state)
{
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result a;
    struct mt_chat_result b;
    char stop[3] = "";
    const char *stops[1] = {stop};
    size_t len;
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 12;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &a, NULL));
    len = strlen(a.texts[0]);
    if (len < 4) {
        mt_chat_result_free(&a);
        SKIP_BECAUSE("the random chat model replied under 4 bytes");
    }
    memcpy(stop, a.texts[0] + len / 2, 2);
    cp.stop = stops;
    cp.n_stop = 1;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &b, NULL));
    CHECK(strlen(b.texts[0]) ==
          (size_t)(strstr(a.texts[0], stop) - a.texts[0]));
    CHECK(strncmp(a.texts[0], b.texts[0], strlen(b.texts[0])) == 0);
    mt_chat_result_free(&a);
    mt_chat_result_free(&b);
}

/* Streamed pieces: whole UTF-8 characters that together make the text,
 * also when a stop string cuts it (held back until it cannot match). */
struct pieces {
    char text[512];
    int n;
    int bad_utf8;
};

static int collect(void *ctx, uint32_t i, const char *piece, size_t len)
{
    struct pieces *p = ctx;
    size_t have = strlen(p->text);

    CHECK(i == 0 && piece && len > 0 && have + len < sizeof p->text);
    p->bad_utf8 |= mtx_utf8_validate(piece, len, NULL) != MT_OK;
    memcpy(p->text + have, piece, len);
    p->text[have + len] = '\0';
    p->n++;
    return 0;
}

static void test_chat_streams_pieces_that_make_the_text(void **state)
{
    struct mt_llm *l = open_chat(512);
    struct mt_chat_params cp;
    struct mt_chat_result a;
    struct mt_chat_result b;
    struct pieces pc = {"", 0, 0};
    const char *stops[1] = {"zz"};
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 12;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &a, NULL));
    cp.on_token = collect;
    cp.on_token_ctx = &pc;
    cp.stop = stops;
    cp.n_stop = 1;
    CHECK_OK(mt_llm_chat(l, msgs, 2, &cp, &b, NULL));
    CHECK(strcmp(pc.text, b.texts[0]) == 0 && !pc.bad_utf8);
    CHECK(strstr(a.texts[0], "zz") || strcmp(a.texts[0], b.texts[0]) == 0);
    CHECK(pc.n >= 1 || b.texts[0][0] == '\0');
    mt_chat_result_free(&a);
    mt_chat_result_free(&b);
}

static void test_handles_share_one_loaded_model(void **state)
{
    struct mt_llm *a = open_chat(512);
    struct mt_llm *b = open_chat_ctx(256);
    struct mt_chat_params cp;
    struct mt_chat_result r1;
    struct mt_chat_result r2;
    (void)state;
    mt_chat_default_params(&cp);
    cp.max_tokens = 4;
    CHECK_OK(mt_llm_chat(b, msgs, 2, &cp, &r2, NULL));
    mt_llm_close(b); /* the shared model stays loaded for 'a' */
    CHECK_OK(mt_llm_chat(a, msgs, 2, &cp, &r1, NULL));
    CHECK(strcmp(r1.texts[0], r2.texts[0]) == 0);
    mt_chat_result_free(&r1);
    mt_chat_result_free(&r2);
}

static void test_bad_model_files_name_the_setting(void **state)
{
    struct mt_llm *l = NULL;
    struct mt_embedder *e = NULL;
    struct mt_reranker *r = NULL;
    struct mt_error err;
    char spec[400];
    char p[300];
    FILE *f;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    snprintf(spec, sizeof spec, "gguf:%s/missing.gguf", dir);
    CHECK(mt_llm_open(spec, NULL, &l, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "--llm") != NULL);
    path_of(p, sizeof p, "bad");
    f = fopen(p, "w");
    fputs("not a model\n", f);
    fclose(f);
    snprintf(spec, sizeof spec, "gguf:%s", p);
    CHECK(mt_llm_open(spec, NULL, &l, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "not a GGUF") != NULL);
    snprintf(spec, sizeof spec, "gguf:%s/embed.gguf", dir);
    CHECK(mt_llm_open(spec, NULL, &l, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "not a chat") != NULL);
    snprintf(spec, sizeof spec, "gguf:%s/chat.gguf", dir);
    CHECK(mt_embedder_open(spec, NULL, &e, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "qwen2") && strstr(err.msg, "--embedder"));
    snprintf(spec, sizeof spec, "gguf:%s/embed.gguf", dir);
    CHECK(mt_reranker_open(spec, NULL, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "--reranker") != NULL);
    CHECK(l == NULL && e == NULL && r == NULL);
}

static void test_embeddings_shape_and_normalisation(void **state)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_str t[3] = {MT_STR_C("chest pain"), MT_STR_C("fever"),
                          MT_STR_C("chest pain")};
    struct mt_error err = {MT_OK, ""};
    float v[3 * 64];
    double norm = 0;
    char path[300];
    uint32_t i;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    snprintf(path, sizeof path, "gguf:%s/embed.gguf", dir);
    mt_embedder_default_params(&p);
    p.threads = 2;
    if (mt_embedder_open(path, &p, &e, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK(mt_embedder_dims(e) == 64);
    CHECK_OK(mt_embedder_embed(e, t, 3, v, &err));
    for (i = 0; i < 64; i++)
        norm += (double)v[i] * (double)v[i];
    CHECK(fabs(norm - 1.0) < 1e-3);
    CHECK(memcmp(v, v + 128, 64 * sizeof *v) == 0);
    CHECK(memcmp(v, v + 64, 64 * sizeof *v) != 0);
    mt_embedder_close(e);
    p.dims = 16; /* Matryoshka truncation */
    CHECK_OK(mt_embedder_open(path, &p, &e, &err));
    CHECK(mt_embedder_dims(e) == 16);
    CHECK_OK(mt_embedder_embed(e, t, 1, v, &err));
    for (norm = 0, i = 0; i < 16; i++)
        norm += (double)v[i] * (double)v[i];
    CHECK(fabs(norm - 1.0) < 1e-3);
    mt_embedder_close(e);
}

static void test_rerank_scores_are_finite_and_stable(void **state)
{
    struct mt_reranker_params p;
    struct mt_reranker *r = NULL;
    struct mt_str d[3] = {MT_STR_C("aspirin inhibits platelets"),
                          MT_STR_C("the weather is mild"),
                          MT_STR_C("aspirin inhibits platelets")};
    struct mt_error err = {MT_OK, ""};
    float s[3];
    float s2[3];
    char spec[300];
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    mt_reranker_default_params(&p);
    p.threads = 2;
    snprintf(spec, sizeof spec, "gguf:%s/rerank.gguf", dir);
    if (mt_reranker_open(spec, &p, &r, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK_OK(mt_reranker_score(r, "aspirin", d, 3, s, &err));
    CHECK_OK(mt_reranker_score(r, "aspirin", d, 3, s2, &err));
    CHECK(isfinite(s[0]) && isfinite(s[1]));
    CHECK(s[0] == s[2] && s[0] != s[1]);
    CHECK(memcmp(s, s2, sizeof s) == 0);
    mt_reranker_close(r);
}

static void test_classifier_maps_nli_labels(void **state)
{
    struct mt_nli *n = NULL;
    struct mt_error err = {MT_OK, ""};
    enum mt_nli_label lab;
    float pr[3];
    char spec[300];
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    snprintf(spec, sizeof spec, "gguf:%s/classify.gguf", dir);
    if (mt_nli_open(spec, NULL, &n, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK_OK(mt_nli_classify(n, "Aspirin was given.", "No drug was given.", pr,
                             &lab, &err));
    CHECK(fabs((double)(pr[0] + pr[1] + pr[2]) - 1.0) < 1e-4);
    CHECK((unsigned)lab < 3 && pr[lab] >= pr[0] && pr[lab] >= pr[2]);
    CHECK(strlen(mt_nli_label_str(lab)) > 0);
    mt_nli_close(n);
    snprintf(spec, sizeof spec, "gguf:%s/rerank.gguf", dir);
    CHECK(mt_nli_open(spec, NULL, &n, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "--nli") != NULL);
}

/* Probabilities of one pair under a verifier spec (dir's classify.gguf
 * with the options after '?'). */
static void nli_probs(const char *opts, const char *claim, const char *ev,
                      float pr[3])
{
    struct mt_nli *n = NULL;
    struct mt_error err = {MT_OK, ""};
    enum mt_nli_label lab;
    char spec[400];

    snprintf(spec, sizeof spec, "gguf:%s/classify.gguf%s", dir, opts);
    if (mt_nli_open(spec, NULL, &n, &err) != MT_OK)
        fail_msg("%s: %s", spec, err.msg);
    CHECK_OK(mt_nli_classify(n, claim, ev, pr, &lab, &err));
    mt_nli_close(n);
}

/* The verifier's label map and pair order are the spec's: by default an
 * MNLI model reads the evidence first (premise, then the claim as
 * hypothesis); pair=claim-first swaps them (the same numbers as the
 * swapped inputs); labels= names the outputs by position, and
 * preset=verifai is VerifAI's [NO_EVIDENCE, SUPPORT, CONTRADICT], claim
 * first. The tiny model's outputs are named entailment, neutral,
 * contradiction. */
static void test_verifier_labels_and_pair_order_are_options(void **state)
{
    const char *a = "Aspirin was given.";
    const char *b = "No drug was given at all.";
    float d[3], c[3], sw[3], pos[3], v[3];
    struct mt_nli *n = NULL;
    struct mt_error err = {MT_OK, ""};
    char spec[400];
    int i;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    nli_probs("", a, b, d);
    nli_probs("?preset=mnli", a, b, pos);
    for (i = 0; i < 3; i++)
        CHECK(d[i] == pos[i]);
    nli_probs("?pair=claim-first", b, a, sw); /* swapped inputs */
    for (i = 0; i < 3; i++)
        CHECK(d[i] == sw[i]);
    nli_probs("?pair=claim-first", a, b, c);
    CHECK(c[0] != d[0] || c[1] != d[1]);
    nli_probs("?labels=SUPPORT,NO_EVIDENCE,CONTRADICT", a, b, pos);
    for (i = 0; i < 3; i++)
        CHECK(d[i] == pos[i]);
    nli_probs("?preset=verifai", a, b, v);
    CHECK(v[MT_NLI_SUPPORT] == c[MT_NLI_NO_EVIDENCE]);   /* output 1 */
    CHECK(v[MT_NLI_CONTRADICT] == c[MT_NLI_CONTRADICT]); /* output 2 */
    CHECK(v[MT_NLI_NO_EVIDENCE] == c[MT_NLI_SUPPORT]);   /* output 0 */
    snprintf(spec, sizeof spec, "gguf:%s/classify.gguf?labels=SUPPORT", dir);
    CHECK(mt_nli_open(spec, NULL, &n, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "labels=A,B,C") != NULL);
    snprintf(spec, sizeof spec, "gguf:%s/classify.gguf?pair=sideways", dir);
    CHECK(mt_nli_open(spec, NULL, &n, &err) == MT_EINVAL && n == NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_greedy_is_deterministic),
        cmocka_unit_test(test_chat_n_samples_same_seed_same_text),
        cmocka_unit_test(test_chat_schema_output_parses),
        cmocka_unit_test(test_agent_schemas_are_grammars_llama_accepts),
        cmocka_unit_test(test_verifier_labels_and_pair_order_are_options),
        cmocka_unit_test(test_chat_prompt_over_context_is_clear),
        cmocka_unit_test(test_chat_stops_at_stop_string),
        cmocka_unit_test(test_chat_streams_pieces_that_make_the_text),
        cmocka_unit_test(test_handles_share_one_loaded_model),
        cmocka_unit_test(test_bad_model_files_name_the_setting),
        cmocka_unit_test(test_embeddings_shape_and_normalisation),
        cmocka_unit_test(test_rerank_scores_are_finite_and_stable),
        cmocka_unit_test(test_classifier_maps_nli_labels),
    };

    return cmocka_run_group_tests(tests, make_models, remove_models);
}
