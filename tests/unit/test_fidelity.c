/* Issue #31, the second reading against the papers and their published
 * code: each point proven by what the model is sent on the scripted
 * server (tests/fixtures/script_server.c). */
#include "check.h"

#include "core/jsonl.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"
#include "script.h"
#include "tmpdir.h"

static char db_dir[96];

static const char guide_docs[] =
    "{\"id\":\"G1\",\"title\":\"STEMI\",\"text\":\"Inferior STEMI "
    "needs emergency reperfusion by primary PCI.\"}\n"
    "{\"id\":\"G2\",\"title\":\"Aspirin\",\"text\":\"Aspirin "
    "loading dose is 300 mg chewed.\"}\n";

static int make_db(void **state)
{
    struct mt_ingest_params ip;
    struct mt_store *s = NULL;
    char path[128];
    FILE *f;
    int rc = -1;

    (void)state;
    mtx_jsonl_init_alloc();
    if (tmpdir_make("mt-fidelity") != 0)
        return -1;
    snprintf(db_dir, sizeof db_dir, "%s/db", tmpl);
    snprintf(path, sizeof path, "%s/guidelines.jsonl", tmpl);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(guide_docs, f);
    fclose(f);
    mt_ingest_default_params(&ip);
    ip.source = "guidelines";
    if (mt_store_open(db_dir, NULL, &s, NULL) == MT_OK &&
        mt_store_ingest_jsonl(s, path, &ip, NULL, NULL) == MT_OK &&
        mt_index_build(s, NULL, NULL, NULL) == MT_OK)
        rc = 0;
    mt_store_close(s);
    return rc;
}

static const char note_text[] =
    "A 62-year-old man has crushing chest pain. ECG shows ST elevation in "
    "II, III and aVF. He is given aspirin and sent home.";

static struct mt_agent *open_with(const struct script *s,
                                  struct mt_agent_params *p)
{
    struct mt_agent *a = NULL;
    struct mt_error err;

    p->llm_spec = s->spec;
    p->llm.max_retries = 0;
    p->llm.timeout_s = 10;
    unsetenv("MEDTRUST_LLM");
    CHECK_OK(mt_agent_open(p, &a, &err));
    return a;
}

static struct mt_agent *open_strategy(const struct script *s,
                                      enum mt_strategy strategy)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.strategy = strategy;
    if (strategy == MT_STRATEGY_REACT_REFLEX)
        p.db_dir = db_dir;
    return open_with(s, &p);
}

static void check_note(struct mt_agent *a, struct mt_check_result *r)
{
    struct mt_note n = {"t",  note_text, sizeof note_text - 1, NULL, 0, NULL, 0,
                        NULL, 0};
    struct mt_error err;

    CHECK_OK(mt_agent_check(a, &n, r, &err));
}

/* The roles of a recorded request's messages, space-separated. */
static const char *msg_roles(const json_t *rec, char *out, size_t n)
{
    json_t *msgs = json_object_get(json_object_get(rec, "request"), "messages");
    size_t at = 0;
    size_t i;

    out[0] = '\0';
    for (i = 0; i < json_array_size(msgs) && at + 1 < n; i++)
        at += (size_t)snprintf(out + at, n - at, "%s%s", i ? " " : "",
                               json_string_value(json_object_get(
                                   json_array_get(msgs, i), "role")));
    return out;
}

/* Message i's content of a recorded request. */
static const char *msg_at(const json_t *rec, size_t i)
{
    json_t *msgs = json_object_get(json_object_get(rec, "request"), "messages");

    return json_string_value(
        json_object_get(json_array_get(msgs, i), "content"));
}

/* ==== The repair turn ==== */

/* After a bad reply the repeat is [system, user, assistant(bad reply),
 * user(fix)]: the bad reply is echoed as the assistant's turn. */
static void test_repair_echoes_the_bad_reply_as_assistant(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs;
    char roles[128];

    (void)state;
    script_start(&s, "single not json at all\n"
                     "single answer 2 He is given aspirin and admitted.\n");
    a = open_strategy(&s, MT_STRATEGY_SINGLE);
    check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    reqs = script_requests(&s, "single");
    CHECK(json_array_size(reqs) == 2);
    CHECK(strcmp(msg_roles(json_array_get(reqs, 0), roles, sizeof roles),
                 "system user") == 0);
    CHECK(strcmp(msg_roles(json_array_get(reqs, 1), roles, sizeof roles),
                 "system user assistant user") == 0);
    CHECK(strcmp(msg_at(json_array_get(reqs, 1), 2), "not json at all") == 0);
    CHECK(strstr(msg_at(json_array_get(reqs, 1), 3),
                 "Your reply could not be used") != NULL);
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* A template without a system role (Mistral-Instruct v0.1/v0.2, which
 * VerifAI's model uses) refuses [system, user] with HTTP 400: the call is
 * sent again with the system prompt at the head of the first user turn,
 * the endpoint remembers it, and the repair turn then alternates
 * [user, assistant, user], which the template accepts. */
static void test_templates_without_system_role_get_it_folded(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs;
    char roles[128];
    const char *u;

    (void)state;
    script_start(&s, "* strict-roles\n"
                     "single not json at all\n"
                     "single answer 2 He is given aspirin and admitted.\n");
    a = open_strategy(&s, MT_STRATEGY_SINGLE);
    check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strcmp(r.corrected_sentence, "He is given aspirin and admitted.") ==
          0);
    reqs = script_requests(&s, "single");
    CHECK(json_array_size(reqs) == 3);
    CHECK(strcmp(msg_roles(json_array_get(reqs, 0), roles, sizeof roles),
                 "system user") == 0); /* refused */
    CHECK(strcmp(msg_roles(json_array_get(reqs, 1), roles, sizeof roles),
                 "user") == 0);
    u = msg_at(json_array_get(reqs, 1), 0);
    CHECK(strstr(u, "[agent:single]") != NULL); /* the system prompt */
    CHECK(strstr(u, "\n\n") != NULL);
    CHECK(strstr(u, "2 | He is given aspirin and sent home.") != NULL);
    CHECK(strstr(u, "[agent:single]") < strstr(u, "2 | He is given"));
    CHECK(strcmp(msg_roles(json_array_get(reqs, 2), roles, sizeof roles),
                 "user assistant user") == 0);
    CHECK(strcmp(msg_at(json_array_get(reqs, 2), 1), "not json at all") == 0);
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repair_echoes_the_bad_reply_as_assistant),
        cmocka_unit_test(test_templates_without_system_role_get_it_folded),
    };

    mtx_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, make_db, teardown);
}
