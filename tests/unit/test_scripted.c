/* The agents as their papers define them, proven by what the model is
 * sent: each test plays a scenario on the scripted server
 * (tests/fixtures/script_server.c) and asserts on the recorded requests. */
#include "check.h"

#include "core/jsonl.h"
#include "medtrust/agent.h"
#include "medtrust/core.h"
#include "script.h"

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

static struct mt_agent *open_agent(const struct script *s,
                                   enum mt_strategy strategy)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.strategy = strategy;
    return open_with(s, &p);
}

static void check_note(struct mt_agent *a, struct mt_check_result *r)
{
    struct mt_note n = {"t", note_text, sizeof note_text - 1, NULL, 0};
    struct mt_error err;

    CHECK_OK(mt_agent_check(a, &n, r, &err));
}

/* ==== The equipment itself ==== */

static void test_server_plays_queues_and_records_requests(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs;
    char roles[256];
    char *txt;

    (void)state;
    script_start(&s, "single not json at all\n"
                     "single answer 2 He is given aspirin and admitted.\n");
    a = open_agent(&s, MT_STRATEGY_SINGLE);
    check_note(a, &r);
    /* the first entry is unusable, so the call repeats and gets the
     * second, which then repeats for ever */
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strcmp(r.corrected_sentence, "He is given aspirin and admitted.") ==
          0);
    CHECK(strcmp(script_roles(&s, roles, sizeof roles), "single single") == 0);
    reqs = script_requests(&s, "single");
    CHECK(json_array_size(reqs) == 2);
    CHECK(strstr(script_msg(json_array_get(reqs, 0), "user"),
                 "2 | He is given aspirin and sent home.") != NULL);
    txt = script_text(json_array_get(reqs, 1));
    CHECK(strstr(txt, "Your reply could not be used") != NULL);
    free(txt);
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_plays_queues_and_records_requests),
    };

    mt_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
