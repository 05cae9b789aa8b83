/* Unit tests for embedding many texts (model/embed_texts.h) against the
 * loopback stub server: a batch the server refuses is retried text by
 * text, so only the text that still fails fails and the others get their
 * vectors in order; a JSONL line without "text" is named by file and
 * line; MEDTRUST_EMBEDDER=none is no embedder to embed with. */
#include "check.h"

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed_texts.h"
#include "stub.h"

#define EMB(i, a, b) "{\"index\":" #i ",\"embedding\":[" #a "," #b "]}"
#define REFUSE "reply 400 0 - {\"error\":{\"message\":\"bad input\"}}\n"

struct got {
    char log[512];
    float v[3][2];
    size_t nv;
};

static void on_vec(void *user, const char *text, const float *v, uint32_t d)
{
    struct got *g = user;

    CHECK(d == 2 && g->nv < 3);
    memcpy(g->v[g->nv++], v, 2 * sizeof *v);
    snprintf(g->log + strlen(g->log), sizeof g->log - strlen(g->log), "v:%s ",
             text);
}

static void on_fail(void *user, const char *text, const struct mt_error *err)
{
    struct got *g = user;

    CHECK(err->msg[0] != '\0');
    snprintf(g->log + strlen(g->log), sizeof g->log - strlen(g->log), "x:%s ",
             text);
}

static struct mt_embedder *open_stub(const struct stub *s)
{
    struct mt_embedder *e = NULL;
    struct mt_error err;
    char spec[300];

    snprintf(spec, sizeof spec, "openai:%s#emb", s->url);
    CHECK_OK(mt_embedder_open(spec, NULL, &e, &err));
    return e;
}

static void test_failed_batch_retried_text_by_text(void **state)
{
    /* the dims probe, the batch (refused), then each text alone */
    static const char script[] = "reply 200 0 - {\"data\":[" EMB(
        0, 1, 0) "]}\n" REFUSE
                 "reply 200 0 - {\"data\":[" EMB(
                     0, 3, 4) "]}\n" REFUSE
                              "reply 200 0 - {\"data\":[" EMB(0, 0, 2) "]}\n";
    const char *texts[] = {"fever", "bad", "cough"};
    struct got g = {"", {{0}}, 0};
    const struct mtx_embed_sink sink = {on_vec, on_fail, &g};
    struct mt_error err = {MT_OK, ""};
    struct mt_embedder *e;
    struct stub s;

    (void)state;
    setenv("MEDTRUST_LLM_RETRIES", "0", 1);
    stub_start(&s, script);
    e = open_stub(&s);
    CHECK_OK(mtx_embed_texts(e, texts, 3, &sink, &err));
    CHECK(strcmp(g.log, "v:fever x:bad v:cough ") == 0);
    CHECK(g.v[0][0] > 0.59f && g.v[0][0] < 0.61f && g.v[0][1] > 0.79f);
    CHECK(g.v[1][0] > -0.01f && g.v[1][0] < 0.01f && g.v[1][1] > 0.99f);
    CHECK(stub_requests(&s, NULL, NULL, 0) == 5);
    mt_embedder_close(e);
    stub_stop(&s);
    unsetenv("MEDTRUST_LLM_RETRIES");
}

static void test_jsonl_line_without_text(void **state)
{
    static const char script[] =
        "reply 200 0 - {\"data\":[" EMB(0, 1, 0) "]}\n";
    struct got g = {"", {{0}}, 0};
    const struct mtx_embed_sink sink = {on_vec, on_fail, &g};
    struct mt_error err = {MT_OK, ""};
    struct mt_embedder *e;
    struct stub s;
    char path[300];
    FILE *f;

    (void)state;
    stub_start(&s, script);
    snprintf(path, sizeof path, "%s/in.jsonl", s.dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"text\":\"fever\"}\n{\"id\":2}\n", f);
    fclose(f);
    e = open_stub(&s);
    CHECK(mtx_embed_jsonl(e, path, &sink, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "in.jsonl:2: no \"text\"") != NULL);
    CHECK(g.log[0] == '\0'); /* nothing embedded past a bad file */
    mt_embedder_close(e);
    stub_stop(&s);
}

static void test_spec(void **state)
{
    (void)state;
    setenv("MEDTRUST_EMBEDDER", "none", 1);
    CHECK(mtx_embed_spec(NULL) == NULL);
    CHECK(strcmp(mtx_embed_spec("use-lite"), "use-lite") == 0);
    setenv("MEDTRUST_EMBEDDER", "gguf:e.gguf", 1);
    CHECK(strcmp(mtx_embed_spec(NULL), "gguf:e.gguf") == 0);
    unsetenv("MEDTRUST_EMBEDDER");
    CHECK(mtx_embed_spec(NULL) == NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_batch_retried_text_by_text),
        cmocka_unit_test(test_jsonl_line_without_text),
        cmocka_unit_test(test_spec),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
