/* Unit tests for the configured models and their check (model/probe.h,
 * what `medtrust models` lists): the order and the fallbacks of
 * mtx_models_each (given, else the environment, else the default; an
 * empty value is none; embedder "none" is no embedder; the per-role
 * MEDTRUST_LLM_<ROLE> entries but not _TIMEOUT), and mtx_model_probe's
 * failure naming the model. */
#include "check.h"

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/probe.h"

struct seen {
    char lines[16][256];
    size_t n;
};

static void collect(void *user, const char *kind, const char *spec)
{
    struct seen *s = user;

    if (s->n < 16)
        snprintf(s->lines[s->n++], sizeof s->lines[0], "%s=%s", kind,
                 spec ? spec : "(none)");
}

extern char **environ;

/* No model in the environment, whatever the test's caller set. */
static void clear_env(void)
{
    char name[256];
    char **e;

    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_EMBEDDER");
    unsetenv("MEDTRUST_RERANKER");
    unsetenv("MEDTRUST_NLI");
    for (e = environ; *e;) {
        if (strncmp(*e, "MEDTRUST_LLM_", 13) != 0) {
            e++;
            continue;
        }
        snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
        unsetenv(name);
        e = environ; /* unsetenv moved the entries */
    }
}

static void test_each_defaults(void **state)
{
    struct mtx_model_specs g = {NULL, NULL, NULL, NULL, NULL};
    struct seen s = {{{0}}, 0};

    (void)state;
    clear_env();
    mtx_models_each(&g, collect, &s);
    CHECK(s.n == 4);
    CHECK(strcmp(s.lines[0], "llm=(none)") == 0);
    CHECK(strcmp(s.lines[1], "embedder=use-lite") == 0);
    CHECK(strcmp(s.lines[2], "reranker=(none)") == 0);
    CHECK(strcmp(s.lines[3], "nli=(none)") == 0);
}

/* The environment fills what is not given; a role's own LLM follows the
 * default one; the given beat the environment. */
static void test_each_env_and_given(void **state)
{
    struct mtx_model_specs g = {NULL, NULL, "gguf:q.gguf", "", NULL};
    struct seen s = {{{0}}, 0};

    (void)state;
    clear_env();
    setenv("MEDTRUST_LLM", "gguf:a.gguf", 1);
    setenv("MEDTRUST_LLM_EVAL", "gguf:e.gguf", 1);
    setenv("MEDTRUST_LLM_TIMEOUT", "5", 1);
    setenv("MEDTRUST_EMBEDDER", "none", 1);
    setenv("MEDTRUST_RERANKER", "gguf:r.gguf", 1);
    setenv("MEDTRUST_NLI", "llm", 1);
    mtx_models_each(&g, collect, &s);
    CHECK(s.n == 6);
    CHECK(strcmp(s.lines[0], "llm=gguf:a.gguf") == 0);
    CHECK(strcmp(s.lines[1], "llm[EVAL]=gguf:e.gguf") == 0);
    CHECK(strcmp(s.lines[2], "embedder=(none)") == 0);
    CHECK(strcmp(s.lines[3], "query-embedder=gguf:q.gguf") == 0);
    /* given empty: none, not the environment's */
    CHECK(strcmp(s.lines[4], "reranker=(none)") == 0);
    CHECK(strcmp(s.lines[5], "nli=llm") == 0);
    g.llm = "gguf:b.gguf";
    s.n = 0;
    mtx_models_each(&g, collect, &s);
    CHECK(strcmp(s.lines[0], "llm=gguf:b.gguf") == 0);
    clear_env();
}

/* A model that cannot load fails with its path named, and no detail. */
static void test_probe_missing(void **state)
{
    struct mt_llm_params lp;
    struct mt_error err = {MT_OK, ""};
    char detail[256] = "stale";

    (void)state;
    mt_llm_default_params(&lp);
    CHECK(mtx_model_probe("llm", "gguf:/nonexistent/m.gguf", &lp, detail,
                          sizeof detail, &err) != MT_OK);
    CHECK(strstr(err.msg, "/nonexistent/m.gguf") != NULL);
    CHECK(detail[0] == '\0');
    err.msg[0] = '\0';
    CHECK(mtx_model_probe("embedder", "gguf:/nonexistent/e.gguf", &lp, detail,
                          sizeof detail, &err) != MT_OK);
    CHECK(strstr(err.msg, "/nonexistent/e.gguf") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_defaults),
        cmocka_unit_test(test_each_env_and_given),
        cmocka_unit_test(test_probe_missing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
