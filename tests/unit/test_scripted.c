/* The agents as their papers define them, proven by what the model is
 * sent: each test plays a scenario on the scripted server
 * (tests/fixtures/script_server.c) and asserts on the recorded requests. */
#include "check.h"

#include "core/jsonl.h"
#include "medtrust/check.h"
#include "medtrust/qa.h"
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

/* ==== VerifAI ==== */

static const char nli_scenario[] =
    "qa_judge if /<claim>\\nAspirin lowers the/ {\"label\":\"SUPPORT\","
    "\"confidence\":0.9}\n"
    "qa_judge if /<document>\\nAspirin lowers the/ {\"label\":\"CONTRADICT\","
    "\"confidence\":0.9}\n"
    "- if /Claim:\\nAspirin lowers the/ {\"label\":\"SUPPORT\"}\n"
    "- if /Reference:\\nAspirin lowers the/ {\"label\":\"CONTRADICT\"}\n";

static const char claim[] = "Aspirin lowers the risk of a second infarction.";
static const char evidence[] =
    "In 4,000 patients, daily aspirin cut reinfarction by a quarter.";

static struct mt_qa *open_verifier(const struct script *s, const char *nli)
{
    struct mt_qa_params p;
    struct mt_qa *q = NULL;

    mt_qa_default_params(&p);
    p.llm_spec = s->spec;
    p.nli_spec = nli;
    p.embedder_spec = "none";
    p.llm.max_retries = 0;
    p.llm.timeout_s = 10;
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_NLI");
    CHECK_OK(mt_qa_open(&p, &q, NULL));
    return q;
}

/* Both judges read the document as the evidence and the claim as the
 * claim: the scripted judge says SUPPORT only when the claim stands where
 * a claim belongs, CONTRADICT when the two are swapped. */
static void test_both_judges_read_claim_and_evidence_the_right_way(void **st)
{
    struct script s;
    char nli[160];
    const char *specs[2] = {"llm", nli};
    enum mt_qa_label l;
    float score;
    int i;

    (void)st;
    script_start(&s, nli_scenario);
    snprintf(nli, sizeof nli, "llm:%s", s.spec);
    for (i = 0; i < 2; i++) {
        struct mt_qa *q = open_verifier(&s, specs[i]);

        CHECK_OK(mt_qa_verify(q, claim, evidence, &l, &score, NULL));
        CHECK(l == MT_QA_SUPPORT);
        /* the scripted judge tells the directions apart */
        CHECK_OK(mt_qa_verify(q, evidence, claim, &l, &score, NULL));
        CHECK(l == MT_QA_CONTRADICT);
        mt_qa_close(q);
    }
    script_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_plays_queues_and_records_requests),
        cmocka_unit_test(
            test_both_judges_read_claim_and_evidence_the_right_way),
    };

    mt_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
