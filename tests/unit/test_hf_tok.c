/* tokenizer.json reader (src/model/hf_tok*.c): what it refuses and how it
 * says so, and that it survives every allocation failing. Its ids are
 * compared with transformers.js in tests/integration/test_onnx.sh. */
#include <unistd.h>

#include "check.h"
#include "medtrust/core.h"
#include "model/hf_tok.h"

static char dir[] = "/tmp/mt-hftok-XXXXXX";

static const char *write_tok(const char *name, const char *json)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(json, f);
    fclose(f);
    return path;
}

#define WP_MODEL                                                               \
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","               \
    "\"continuing_subword_prefix\":\"##\",\"vocab\":{\"[PAD]\":0,"             \
    "\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,\"hyper\":4,\"##tension\":5,"         \
    "\"a\":6,\"##b\":7}}"

#define WP_POST                                                                \
    "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",3],"   \
    "\"cls\":[\"[CLS]\",2]}"

static const char good[] =
    "{\"added_tokens\":[{\"id\":2,\"content\":\"[CLS]\",\"special\":true},"
    "{\"id\":3,\"content\":\"[SEP]\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}," WP_POST "," WP_MODEL
    "}";

/* Loads 'json' and expects status st with every 'want' in the message. */
static void refused(const char *json, enum mt_status st, const char *want)
{
    struct mt_error err = {MT_OK, ""};
    struct mtx_hf_tok *t = NULL;
    const char *path = write_tok("bad.json", json);

    assert_int_equal(mtx_hf_tok_load(path, &t, &err), st);
    CHECK(t == NULL);
    if (!strstr(err.msg, want) || !strstr(err.msg, path))
        fail_msg("message '%s' lacks '%s' or the path", err.msg, want);
}

static void test_hf_tok_refuses_what_it_does_not_implement(void **state)
{
    (void)state;
    refused("{\"normalizer\":{\"type\":\"Foo\"}," WP_MODEL "}", MT_EUNSUPPORTED,
            "normalizer type 'Foo'");
    refused("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":"
            "\"\\\\s+\"}}," WP_MODEL "}",
            MT_EUNSUPPORTED, "pre_tokenizer type 'Split'");
    refused("{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
            "\"[a-z]+\"},\"content\":\"\"}," WP_MODEL "}",
            MT_EUNSUPPORTED, "regex pattern");
    refused("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}",
            MT_EUNSUPPORTED, "model type 'WordLevel'");
    refused("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}}}",
            MT_EPARSE, "unk_token");
    refused("{\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":"
            "[{\"SpecialToken\":{\"id\":\"<x>\",\"type_id\":0}}],\"pair\":[]}"
            "," WP_MODEL "}",
            MT_ENOTFOUND, "post_processor");
    refused("{\"model\": [1,", MT_EPARSE, ":1:");
}

static void test_hf_tok_encodes_pair_with_template(void **state)
{
    struct mt_error err = {MT_OK, ""};
    struct mtx_hf_tok *t = NULL;
    struct mtx_hf_enc e;
    const int32_t want[] = {2, 4, 5, 3, 6, 7, 1, 3};
    const int32_t types[] = {0, 0, 0, 0, 1, 1, 1, 1};
    (void)state;

    CHECK_OK(mtx_hf_tok_load(write_tok("good.json", good), &t, &err));
    CHECK_OK(mtx_hf_tok_encode(t, "HYPERtension", 12, "ab q", 4, 0, &e, &err));
    assert_int_equal(e.n, 8);
    CHECK(memcmp(e.ids, want, sizeof want) == 0);
    CHECK(memcmp(e.type_ids, types, sizeof types) == 0);
    CHECK(e.special[0] && e.special[3] && e.special[7] && !e.special[1]);
    mtx_hf_enc_free(&e);
    /* cut to 6, as tokenizers' longest_first: 3 for the texts, half each,
     * the longer (the second) the odd one */
    CHECK_OK(mtx_hf_tok_encode(t, "HYPERtension", 12, "ab q", 4, 6, &e, &err));
    assert_int_equal(e.n, 6);
    CHECK(e.ids[1] == 4 && e.ids[2] == 3 && e.ids[3] == 6 && e.ids[4] == 7 &&
          e.ids[5] == 3);
    mtx_hf_enc_free(&e);
    mtx_hf_tok_free(t);
}

static enum mt_status oom_once(const char *path)
{
    struct mtx_hf_tok *t = NULL;
    struct mtx_hf_enc e;
    enum mt_status st = mtx_hf_tok_load(path, &t, NULL);

    if (st == MT_OK)
        st = mtx_hf_tok_encode(t, "hypertension ab", 15, "a", 1, 0, &e, NULL);
    if (st == MT_OK)
        mtx_hf_enc_free(&e);
    mtx_hf_tok_free(t);
    return st;
}

static void test_hf_tok_survives_every_allocation_failing(void **state)
{
    const char *path = write_tok("oom.json", good);
    enum mt_status st = MT_ENOMEM;
    long i;
    (void)state;

    for (i = 0; i < 20000 && st != MT_OK; i++) {
        mt_alloc_fail_after(i);
        st = oom_once(path);
        mt_alloc_fail_reset();
        /* jansson's own failures read as malformed input */
        CHECK(st == MT_OK || st == MT_ENOMEM || st == MT_EPARSE);
    }
    CHECK(st == MT_OK);
    CHECK(i > 20);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_tok_refuses_what_it_does_not_implement),
        cmocka_unit_test(test_hf_tok_encodes_pair_with_template),
        cmocka_unit_test(test_hf_tok_survives_every_allocation_failing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
