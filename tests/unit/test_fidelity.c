/* Issue #31, the second reading against the papers and their published
 * code: each point proven by what the model is sent on the scripted
 * server (tests/fixtures/script_server.c). */
#include "check.h"

#include <math.h>

#include "core/arena.h"
#include "core/jsonl.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"
#include "qa/qa_int.h"
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

static struct mt_agent *open_strategy(const struct script *s,
                                      enum mt_strategy strategy)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.strategy = strategy;
    if (strategy == MT_STRATEGY_REACT_REFLEX)
        p.db_dir = db_dir;
    return script_open_agent(s, &p);
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
    script_check_note(a, &r);
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
    script_check_note(a, &r);
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

/* ==== MedReAct'N'MedReFlex ==== */

static struct mt_agent *open_react(const struct script *s, uint32_t rounds,
                                   int on_exhausted)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.db_dir = db_dir;
    p.max_rounds = rounds;
    p.on_exhausted = on_exhausted;
    return script_open_agent(s, &p);
}

/* The reply schema a recorded request was sent (borrowed). */
static json_t *sent_schema(const json_t *rec)
{
    return json_object_get(
        json_object_get(
            json_object_get(json_object_get(rec, "request"), "response_format"),
            "json_schema"),
        "schema");
}

static const char final_scenario[] =
    "react search aspirin loading\n"
    "react final 2 He is given aspirin and admitted.\n"
    "eval scores 2\neval scores 5\n"
    "reflect {\"reflection\":\"r\",\"plan\":\"p\"}\n"
    "parser answer 2 He is given aspirin and admitted.\n";

/* A final_mistake step reaches MedEval and MedReFlex as the answer it is,
 * never as an empty search; the action's schema has one branch per
 * action, the final one without a query. */
static void test_final_step_is_shown_as_the_answer(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs, *act, *br;
    size_t i;
    char *t;

    (void)state;
    script_start(&s, final_scenario);
    a = open_react(&s, 2, MT_EXHAUSTED_NO_ERROR);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    for (i = 0; i < 2; i++) {
        t = script_nth_text(&s, i ? "reflect" : "eval", 0);
        CHECK(strstr(t, "search(\"\")") == NULL);
        CHECK(strstr(t, "Action: search(\"aspirin loading\")") != NULL);
        CHECK(strstr(t, "Action: final_mistake (the answer): sentence 2 is "
                        "wrong") != NULL);
        CHECK(strstr(t, "corrected sentence: He is given aspirin and "
                        "admitted.") != NULL);
        free(t);
    }
    CHECK(strstr(r.trace, "\"query\":\"\"") == NULL);
    reqs = script_requests(&s, "react");
    act = json_object_get(
        json_object_get(sent_schema(json_array_get(reqs, 0)), "properties"),
        "action");
    CHECK(json_array_size(json_object_get(act, "anyOf")) == 2);
    br = json_array_get(json_object_get(act, "anyOf"), 1);
    CHECK(json_object_get(json_object_get(br, "properties"), "query") == NULL);
    CHECK(json_object_get(json_object_get(br, "properties"),
                          "corrected_sentence") != NULL);
    br = json_array_get(json_object_get(act, "anyOf"), 0);
    CHECK(json_object_get(json_object_get(br, "properties"), "query") != NULL);
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* Passages in rank order, "TITLE: text" (the paper's figures), or with
 * passages_last most relevant last with their source and score (IryoNLP's
 * published code), in MedReAct's observation and MedEval's trajectory. */
static void passages_case(uint32_t last)
{
    struct script s;
    struct mt_agent_params p;
    struct mt_agent *a;
    struct mt_check_result r;
    const char *one, *two;
    char *t;
    size_t i;

    script_start(&s, "react search STEMI PCI reperfusion aspirin\n"
                     "react final 2 He is given aspirin and admitted.\n"
                     "eval scores 5\n"
                     "parser answer 2 He is given aspirin and admitted.\n");
    mt_agent_default_params(&p);
    p.db_dir = db_dir;
    p.passages_last = last;
    a = script_open_agent(&s, &p);
    script_check_note(a, &r);
    for (i = 0; i < 2; i++) {
        t = script_nth_text(&s, i ? "eval" : "react", i ? 0 : 1);
        one = strstr(t, last ? "[1] STEMI (source: guidelines, score: "
                             : "[1] STEMI: Inferior STEMI");
        two = strstr(t, last ? "[2] Aspirin (source: guidelines, score: "
                             : "[2] Aspirin: Aspirin loading");
        CHECK(one != NULL && two != NULL);
        CHECK(last ? two < one : one < two);
        free(t);
    }
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

static void test_passages_order_and_format(void **state)
{
    (void)state;
    passages_case(0);
    passages_case(1);
}

/* MedEval is asked each criterion's reasoning before its score (the
 * published Evaluation's order); the reviews MedReFlex reads carry the
 * final reasoning. */
static void test_medeval_reasons_before_it_scores(void **state)
{
    static const char *const k[] = {"validity",  "preciseness",  "confidence",
                                    "relevance", "completeness", "final"};
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs, *props;
    const char *key;
    json_t *v;
    char order[512] = "";
    char want[512] = "";
    size_t i;
    char *t;

    (void)state;
    script_start(&s, final_scenario);
    a = open_react(&s, 2, MT_EXHAUSTED_NO_ERROR);
    script_check_note(a, &r);
    reqs = script_requests(&s, "eval");
    props = json_object_get(sent_schema(json_array_get(reqs, 0)), "properties");
    json_object_foreach(props, key, v)
    {
        strcat(order, key);
        strcat(order, " ");
    }
    for (i = 0; i < 6; i++) {
        strcat(want, k[i]);
        strcat(want, "_reasoning ");
        strcat(want, k[i]);
        strcat(want, " ");
    }
    CHECK(strcmp(order, want) == 0);
    t = script_nth_text(&s, "eval", 0);
    CHECK(strstr(t, "\"validity_reasoning\"") != NULL);
    CHECK(strstr(t, "\"validity_reasoning\"") < strstr(t, "\"validity\":"));
    free(t);
    t = script_nth_text(&s, "reflect", 0);
    CHECK(strstr(t, "Reviewer 1: validity 2") != NULL);
    CHECK(strstr(t, "final 2. scripted") != NULL);
    free(t);
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* One usable review of five is no acceptance, however good it is: a
 * round needs the quorum (3), and the trace records both numbers. The
 * answer was never judged, so the check fails as a fallback (issue 29
 * §3) rather than reporting the model's "no error". */
static void test_medeval_needs_a_quorum_of_usable_reviews(void **state)
{
    struct mt_note n = {"t",
                        script_note_text,
                        sizeof script_note_text - 1,
                        NULL,
                        0,
                        NULL,
                        0,
                        NULL,
                        0};
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_error err;
    char roles[256];

    (void)state;
    script_start(&s, "react final 2 He is given aspirin and admitted.\n"
                     "eval scores 5\neval not json at all\n"
                     "parser answer 2 He is given aspirin and admitted.\n");
    a = open_react(&s, 1, MT_EXHAUSTED_NO_ERROR);
    CHECK(mt_agent_check(a, &n, &r, &err) == MT_EMODEL);
    CHECK(r.fallback && r.error_flag == 0 && r.sentence_id == -1);
    CHECK(strstr(r.trace, "\"finals\":[5]") != NULL);
    CHECK(strstr(r.trace, "\"usable\":1") != NULL);
    CHECK(strstr(r.trace, "\"quorum\":3") != NULL);
    CHECK(strstr(r.trace, "\"accepted\":false") != NULL);
    CHECK(strstr(r.trace, "fewer usable reviews than the quorum") != NULL);
    CHECK(strcmp(script_roles(&s, roles, sizeof roles), "react eval") == 0);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

static const char rejected_scenario[] =
    "react final 2 He is given aspirin and admitted.\n"
    "react final 2 He is given aspirin and taken for PCI.\n"
    "eval scores 2\n"
    "reflect {\"reflection\":\"r\",\"plan\":\"p\"}\n"
    "parser answer 2 He is given aspirin and taken for primary PCI.\n";

/* After M rejected rounds the paper answers "no error"; with
 * --on-exhausted last-answer the last answer MedEval reviewed goes
 * through MedFinalParser, as the published code outputs it. */
static void test_on_exhausted_last_answer(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char roles[256];
    char *t;

    (void)state;
    script_start(&s, rejected_scenario);
    a = open_react(&s, 2, MT_EXHAUSTED_NO_ERROR);
    script_check_note(a, &r);
    CHECK(r.error_flag == 0 && r.sentence_id == -1);
    CHECK(strstr(r.trace, "no answer accepted in any round: no error"));
    CHECK(strcmp(script_roles(&s, roles, sizeof roles),
                 "react eval reflect react eval") == 0);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);

    script_start(&s, rejected_scenario);
    a = open_react(&s, 2, MT_EXHAUSTED_LAST_ANSWER);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strcmp(r.corrected_sentence,
                 "He is given aspirin and taken for primary PCI.") == 0);
    CHECK(strstr(r.trace, "--on-exhausted last-answer") != NULL);
    CHECK(strcmp(script_roles(&s, roles, sizeof roles),
                 "react eval reflect react eval parser") == 0);
    t = script_nth_text(&s, "parser", 0); /* the second round's answer */
    CHECK(strstr(t, "taken for PCI") != NULL);
    free(t);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* ==== MedGuards ==== */

/* Request i of 'role' with its line breaks as spaces (prompts wrap). */
static char *flat_text(const struct script *s, const char *role, size_t i)
{
    char *t = script_nth_text(s, role, i);
    char *p;

    for (p = t; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return t;
}

/* The prompts follow MedGuards' (Doubao_MedGuards.py): detection agent 2
 * looks most closely at the diagnosis; localisation never asserts that
 * there is an error and hints that it is more likely in a conclusion
 * sentence. When one agent of a stage gives no usable answer the arbiter
 * still decides, shown that agent's answer as ERROR, as MedGuards'
 * arbitration does for a failed call. */
static void test_guards_follow_medguards_prompts_and_arbitration(void **st)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char roles[512];
    char *t;
    size_t i;
    static const char *const loc[] = {"guard_locate_1", "guard_locate_2",
                                      "guard_locate_arbiter"};

    (void)st;
    script_start(
        &s, "guard_detect_1 {\"reasoning\":\"R1: STEMI needs PCI\","
            "\"verdict\":\"INCORRECT\",\"confidence\":0.9}\n"
            "guard_detect_2 not json at all\n"
            "guard_detect_arbiter {\"reasoning\":\"agent 1 is right\","
            "\"verdict\":\"INCORRECT\",\"confidence\":0.8}\n"
            "guard_locate_1 not json at all\n"
            "guard_locate_2 {\"reasoning\":\"L2: discharge\",\"sentence\":"
            "\"He is given aspirin and sent home.\",\"confidence\":0.7}\n"
            "guard_locate_arbiter {\"reasoning\":\"L2 is right\",\"sentence\":"
            "\"He is given aspirin and sent home.\",\"confidence\":0.8}\n"
            "guard_correct {\"reasoning\":\"admit for PCI\",\"corrected_"
            "sentence\":\"He is given aspirin and sent for PCI.\","
            "\"confidence\":0.8}\n");
    a = open_strategy(&s, MT_STRATEGY_GUARDS);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    script_roles(&s, roles, sizeof roles);
    CHECK(script_count(roles, "guard_detect_arbiter") == 1);
    CHECK(script_count(roles, "guard_locate_arbiter") == 1);
    CHECK(script_count(r.trace, "one agent failed: the arbiter decided") == 2);
    t = flat_text(&s, "guard_detect_2", 0);
    CHECK(strstr(t, "look at the diagnosis most closely") != NULL);
    free(t);
    t = script_nth_text(&s, "guard_detect_arbiter", 0);
    CHECK(strstr(t, "Reasoning: R1: STEMI needs PCI Verdict: INCORRECT.") !=
          NULL);
    CHECK(strstr(t, "ERROR: this reviewer gave no usable answer.") != NULL);
    free(t);
    for (i = 0; i < 3; i++) {
        t = flat_text(&s, loc[i], 0);
        CHECK(strstr(t, "more likely to be a conclusion sentence") != NULL);
        CHECK(strstr(t, "either correct or holds at most one medical "
                        "error") != NULL);
        CHECK(strstr(t, "holds one medical error in") == NULL);
        free(t);
    }
    t = script_nth_text(&s, "guard_locate_arbiter", 0);
    CHECK(strstr(t, "ERROR: this reviewer gave no usable answer.") != NULL);
    CHECK(strstr(t, "L2: discharge") != NULL);
    free(t);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* Detection says INCORRECT, both localisation agents answer NONE: flag 1
 * with no sentence, as Doubao_MedGuards.py keeps it; the official line is
 * `t 1 -1 NA` and no correction is made. */
static void test_guards_unlocated_error_keeps_flag_1(void **st)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char roles[512];
    char *line;

    (void)st;
    script_start(&s, "guard_detect_1 {\"reasoning\":\"wrong\",\"verdict\":"
                     "\"INCORRECT\",\"confidence\":0.9}\n"
                     "guard_detect_2 {\"reasoning\":\"wrong\",\"verdict\":"
                     "\"INCORRECT\",\"confidence\":0.9}\n"
                     "guard_locate_1 {\"reasoning\":\"unsure\",\"sentence\":"
                     "\"NONE\",\"confidence\":0.6}\n"
                     "guard_locate_2 {\"reasoning\":\"unsure\",\"sentence\":"
                     "\"NONE\",\"confidence\":0.6}\n");
    a = open_strategy(&s, MT_STRATEGY_GUARDS);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == -1 && !r.fallback);
    CHECK(strcmp(r.corrected_sentence, "NA") == 0);
    CHECK(strcmp(r.error_sentence, "") == 0);
    CHECK(strcmp(r.corrected_text, script_note_text) == 0);
    script_roles(&s, roles, sizeof roles);
    CHECK(script_count(roles, "guard_correct") == 0);
    CHECK(script_count(roles, "arbiter") == 0);
    line = mt_check_submission_line("t", &r);
    CHECK(line && strcmp(line, "t 1 -1 NA") == 0);
    mt_free(line);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* ==== VerifAI ==== */

/* Citations as VerifAI finds them ("PUBMED:\d+" anywhere in a sentence),
 * in brackets or parentheses, and PMIDs in the answer's own style ("PMID:
 * 44", a bare known id in parentheses); a parenthesis that cites nothing
 * known stays text. */
static void test_citations_anywhere_and_bare_pmids(void **state)
{
    static const char *known[] = {"11", "22", "33", "44"};
    struct mt_arena a = MT_ARENA_INIT(4096);
    struct mt_qa_sent *s = NULL;
    size_t n = 0;

    (void)state;
    CHECK_OK(mtx_qa_parse_answer(
        &a,
        "Aspirin helps PUBMED:11. Statins too (PUBMED:22, PUBMED:33). "
        "Trials agree (PMID: 44) and PMID 11 too. Costs rose (2019) and "
        "XPUBMED:22 is no label. Bare ids cite (33).",
        "PUBMED:", "", known, 4, &s, &n));
    CHECK(n == 5);
    CHECK(strcmp(s[0].text, "Aspirin helps.") == 0);
    CHECK(s[0].nrefs == 1 && strcmp(s[0].refs[0], "11") == 0);
    CHECK(strcmp(s[1].text, "Statins too.") == 0 && s[1].nrefs == 2);
    CHECK(strcmp(s[1].refs[1], "33") == 0 && s[1].docs[1] == 2);
    CHECK(strcmp(s[2].text, "Trials agree and too.") == 0);
    CHECK(s[2].nrefs == 2 && strcmp(s[2].refs[0], "44") == 0 &&
          strcmp(s[2].refs[1], "11") == 0);
    CHECK(strcmp(s[3].text, "Costs rose (2019) and XPUBMED:22 is no "
                            "label.") == 0);
    CHECK(s[3].nrefs == 0);
    CHECK(strcmp(s[4].text, "Bare ids cite.") == 0 && s[4].nrefs == 1);
    mtx_arena_free(&a);
}

/* Per-role temperatures and token limits reach each role's requests
 * (IryoNLP's published configs: react 0.1 / 1024, eval 1.0 / 1200,
 * reflect 0.1 / 512, parser 0.0 / 512); roles without one keep the
 * shared settings. */
static void test_role_settings_reach_each_role(void **state)
{
    static const struct {
        const char *role;
        double t;
        long max;
    } want[] = {
        {"react", 0.1, 1024},
        {"eval", 1.0, 1200},
        {"reflect", 0.1, 512},
        {"parser", 0.0, 512},
    };
    struct mt_agent_params p;
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    size_t i;

    (void)state;
    script_start(&s, final_scenario);
    mt_agent_default_params(&p);
    p.db_dir = db_dir;
    p.max_rounds = 2;
    p.max_tokens = 700;
    p.role_temperature[MT_AGENT_ROLE_REACT] = 0.1f;
    p.role_temperature[MT_AGENT_ROLE_REFLECT] = 0.1f;
    p.role_max_tokens[MT_AGENT_ROLE_EVAL] = 1200;
    p.role_max_tokens[MT_AGENT_ROLE_REFLECT] = 512;
    p.role_max_tokens[MT_AGENT_ROLE_PARSER] = 512;
    p.role_max_tokens[MT_AGENT_ROLE_REACT] = 1024;
    a = script_open_agent(&s, &p);
    script_check_note(a, &r);
    for (i = 0; i < sizeof want / sizeof *want; i++) {
        json_t *reqs = script_requests(&s, want[i].role);
        json_t *rq = json_object_get(json_array_get(reqs, 0), "request");

        CHECK(json_array_size(reqs) > 0);
        CHECK(fabs(json_number_value(json_object_get(rq, "temperature")) -
                   want[i].t) < 1e-6);
        CHECK(json_integer_value(json_object_get(rq, "max_tokens")) ==
              want[i].max);
        json_decref(reqs);
    }
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* ==== Grammar caps ==== */

/* A sentence field's cap follows the note: twice its longest sentence
 * (a 700-character sentence gets 1400, where a fixed 400 would cut its
 * correction); free-text fields get 1500 characters, the token limit
 * being what bounds the reply. */
static void test_sentence_caps_follow_the_note(void **state)
{
    static char text[1024];
    struct mt_note n = {"t", text, 0, NULL, 0, NULL, 0, NULL, 0};
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_error err;
    json_t *reqs, *props;
    size_t i;

    (void)state;
    strcpy(text, "A 62-year-old man has chest pain. He is given ");
    for (i = strlen(text); i < 46 + 650; i++)
        text[i] = i % 7 ? 'a' : ' ';
    strcpy(text + i, "spirin.");
    n.text_len = strlen(text);
    script_start(&s, "single answer 1 He is given aspirin.\n");
    a = open_strategy(&s, MT_STRATEGY_SINGLE);
    CHECK_OK(mt_agent_check(a, &n, &r, &err));
    reqs = script_requests(&s, "single");
    props = json_object_get(sent_schema(json_array_get(reqs, 0)), "properties");
    CHECK(json_integer_value(json_object_get(
              json_object_get(props, "corrected_sentence"), "maxLength")) ==
          2 * (json_int_t)(n.text_len - 34));
    CHECK(json_integer_value(json_object_get(
              json_object_get(props, "error_sentence"), "maxLength")) ==
          2 * (json_int_t)(n.text_len - 34));
    CHECK(json_integer_value(json_object_get(
              json_object_get(props, "reasoning"), "maxLength")) == 1500);
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
        cmocka_unit_test(test_final_step_is_shown_as_the_answer),
        cmocka_unit_test(test_medeval_reasons_before_it_scores),
        cmocka_unit_test(test_medeval_needs_a_quorum_of_usable_reviews),
        cmocka_unit_test(test_on_exhausted_last_answer),
        cmocka_unit_test(test_guards_follow_medguards_prompts_and_arbitration),
        cmocka_unit_test(test_guards_unlocated_error_keeps_flag_1),
        cmocka_unit_test(test_passages_order_and_format),
        cmocka_unit_test(test_citations_anywhere_and_bare_pmids),
        cmocka_unit_test(test_role_settings_reach_each_role),
        cmocka_unit_test(test_sentence_caps_follow_the_note),
    };

    mtx_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, make_db, teardown);
}
