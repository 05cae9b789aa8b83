/* Unit tests for src/check and src/llmcall: JSON extraction from model
 * prose, fuzzy sentence matching (English, Chinese, Arabic), the MedEval
 * acceptance rule (true minimum), prompts, and submission lines. */
#include "check.h"

#include <unistd.h>

#include "check/agent_int.h"
#include "check/match.h"
#include "llmcall/prompt.h"
#include "llmcall/reply.h"
#include "medtrust/check.h"
#include "core/buf.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/gbnf.h"

static void test_extract_plain_fenced_and_prose(void **state)
{
    char why[256];
    json_t *o;
    long v;

    (void)state;
    o = mtx_reply_extract("{\"a\":1}", why, sizeof why);
    CHECK(o && mtx_reply_int(o, "a", 0, 9, &v) == 0 && v == 1);
    json_decref(o);
    o = mtx_reply_extract("Sure!\n```json\n{\"a\": 2}\n```\nbye", why,
                          sizeof why);
    CHECK(o && mtx_reply_int(o, "a", 0, 9, &v) == 0 && v == 2);
    json_decref(o);
    o = mtx_reply_extract("I think {not json} but {\"a\": \"3\", \"s\": "
                          "\"x}\"} is it",
                          why, sizeof why);
    CHECK(o && mtx_reply_int(o, "a", 0, 9, &v) == 0 && v == 3);
    CHECK(strcmp(mtx_reply_str(o, "s"), "x}") == 0);
    json_decref(o);
}

static void test_extract_rejects_garbage_with_reason(void **state)
{
    char why[256] = "";

    (void)state;
    CHECK(mtx_reply_extract("", why, sizeof why) == NULL);
    CHECK(strstr(why, "empty") != NULL);
    CHECK(mtx_reply_extract("no braces at all", why, sizeof why) == NULL);
    CHECK(mtx_reply_extract("[1,2,3]", why, sizeof why) == NULL);
    CHECK(mtx_reply_extract("{\"a\": ", why, sizeof why) == NULL);
    CHECK(why[0] != '\0');
}

static void test_reply_getters_are_lenient_but_bounded(void **state)
{
    json_t *o = json_loads("{\"b\":\"yes\",\"c\":85,\"d\":0.4,\"i\":2.0,"
                           "\"j\":2.5,\"k\":7}",
                           0, NULL);
    int b = 0;
    double c = 0;
    long v = 0;

    (void)state;
    CHECK(mtx_reply_bool(o, "b", &b) == 0 && b == 1);
    CHECK(mtx_reply_conf(o, "c", &c) == 0 && c > 0.849 && c < 0.851);
    CHECK(mtx_reply_conf(o, "d", &c) == 0 && c > 0.39 && c < 0.41);
    CHECK(mtx_reply_int(o, "i", 1, 5, &v) == 0 && v == 2);
    CHECK(mtx_reply_int(o, "j", 1, 5, &v) != 0);
    CHECK(mtx_reply_int(o, "k", 1, 5, &v) != 0);
    CHECK(mtx_reply_int(o, "missing", 1, 5, &v) != 0);
    json_decref(o);
}

/* A static slice initializer (a compound literal is not constant). */
#define SL(lit)                                                                \
    {                                                                          \
        (lit), sizeof(lit) - 1                                                 \
    }

static const struct mt_str en[] = {
    SL("A 45-year-old man presents with fever and cough."),
    SL("Chest X-ray shows a right lower lobe infiltrate."),
    SL("He is started on oral amoxicillin."),
};

static void test_match_english_verbatim_partial_and_miss(void **state)
{
    double s = 0;

    (void)state;
    CHECK(mtx_match_sentence(MT_STR_C("He is started on oral amoxicillin."), en,
                             3, MT_MATCH_MIN, &s) == 2);
    CHECK(s > 0.999);
    /* case, punctuation and a missing word do not matter much */
    CHECK(mtx_match_sentence(MT_STR_C("chest x-ray shows right lower lobe "
                                      "infiltrate"),
                             en, 3, MT_MATCH_MIN, &s) == 1);
    CHECK(mtx_match_sentence(MT_STR_C("The patient likes jazz music"), en, 3,
                             MT_MATCH_MIN, &s) == -1);
    CHECK(mtx_match_sentence(MT_STR_C(""), en, 3, MT_MATCH_MIN, &s) == -1);
}

static void test_match_chinese_uses_character_bigrams(void **state)
{
    static const struct mt_str cn[] = {
        SL("患者男性，45岁，发热咳嗽三天。"),
        SL("胸片显示右下肺浸润。"),
        SL("给予口服阿莫西林治疗。"),
    };
    double s = 0;

    (void)state;
    /* no spaces in Chinese: tokens would see one word per clause */
    CHECK(mtx_match_sentence(MT_STR_C("胸片显示右下肺浸润"), cn, 3,
                             MT_MATCH_MIN, &s) == 1);
    CHECK(s > 0.9);
    CHECK(mtx_match_sentence(MT_STR_C("口服阿莫西林"), cn, 3, MT_MATCH_MIN,
                             &s) == 2);
    CHECK(mtx_match_sentence(MT_STR_C("今天天气很好"), cn, 3, MT_MATCH_MIN,
                             &s) == -1);
}

static void test_match_arabic_ignores_diacritics(void **state)
{
    static const struct mt_str ar[] = {
        SL("يعاني المريض من حمى وسعال منذ ثلاثة أيام."),
        SL("تم إعطاؤه أموكسيسيلين عن طريق الفم."),
    };
    double s = 0;

    (void)state;
    /* the same words with a fatha and a tatweel added */
    CHECK(mtx_match_sentence(MT_STR_C("تم إعطاؤهَ أموكسيسيـلين عن طريق الفم"),
                             ar, 2, MT_MATCH_MIN, &s) == 1);
    CHECK(s > 0.99);
    CHECK(mtx_match_sentence(MT_STR_C("المريض يعاني من حمى"), ar, 2,
                             MT_MATCH_MIN, &s) == 0);
}

static void test_medeval_uses_true_minimum(void **state)
{
    static const int buggy[] = {2, 5, 5, 5, 5};
    static const int last_low[] = {5, 5, 5, 5, 2};
    static const int ok[] = {4, 4, 4, 4, 3};
    static const int low_mean[] = {4, 4, 4, 3, 3};
    double mean;
    int min;

    (void)state;
    /* mean 4.4 passes, but the first reviewer gave 2. The published code's
     * "minimum" is min(mean of all, last score) = 4.4, so it accepted;
     * the true minimum is 2 and rejects */
    CHECK(mt_medeval_accept(buggy, 5, 3.8, 3, &mean, &min) == 0);
    CHECK(min == 2 && mean > 4.39 && mean < 4.41);
    CHECK(mtx_medeval_published_min(buggy, 5) > 4.39);
    CHECK(mtx_medeval_published_min(buggy, 5) < 4.41);
    /* a low LAST score is one the published rule already rejects */
    CHECK(mtx_medeval_published_min(last_low, 5) == 2);
    CHECK(mt_medeval_accept(last_low, 5, 3.8, 3, &mean, &min) == 0);
    CHECK(mtx_medeval_published_min(ok, 1) == 4);
    CHECK(mt_medeval_accept(ok, 5, 3.8, 3, &mean, &min) == 1);
    CHECK(mt_medeval_accept(low_mean, 5, 3.8, 3, &mean, &min) == 0);
    CHECK(mt_medeval_accept(ok, 0, 3.8, 3, &mean, &min) == 0);
}

static void test_prompts_render_and_override(void **state)
{
    static const char *const keys[] = {"A", "B"};
    static const char *const vals[] = {"x", "yy"};
    struct mt_buf b = MT_BUF_INIT(1024);
    struct mt_prompts *p = NULL;
    struct mt_str sys;
    struct mt_str user;
    char dir[] = "/tmp/mt-prompts-XXXXXX";
    char path[128];
    FILE *f;

    (void)state;
    CHECK_OK(
        mtx_prompt_render(MT_STR_C("{{A}}-{{C}}-{{B}}{{"), keys, vals, 2, &b));
    CHECK(strcmp(b.data, "x-{{C}}-yy{{") == 0);
    mtx_buf_free(&b);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/single.txt", dir);
    f = fopen(path, "w");
    fputs("[agent:single] custom\n=== user ===\n{{SENTENCES}}\n", f);
    fclose(f);
    CHECK_OK(mtx_prompts_load(dir, &p, NULL));
    CHECK(mtx_prompts_get(p, "single", &sys, &user) == 0);
    CHECK(sys.n == 21 && memcmp(sys.p, "[agent:single] custom", 21) == 0);
    CHECK(mtx_prompts_get(p, "guard_correct", &sys, &user) == 0); /* built-in */
    CHECK(mtx_prompts_get(p, "nope", &sys, &user) < 0);
    mtx_prompts_free(p);
    f = fopen(path, "w");
    fputs("no separator here\n", f);
    fclose(f);
    CHECK(mtx_prompts_load(dir, &p, NULL) == MT_EPARSE);
    unlink(path);
    rmdir(dir);
    CHECK(mtx_prompts_load("/nonexistent/dir", &p, NULL) == MT_EIO);
}

static void test_submission_lines(void **state)
{
    struct mt_check_result r;
    char corr[] = "Give\nceftriaxone.";
    char *s;

    (void)state;
    memset(&r, 0, sizeof r);
    s = mt_check_submission_line("ms-val-1", NULL);
    CHECK(strcmp(s, "ms-val-1 0 -1 NA") == 0);
    mt_free(s);
    r.error_flag = 1;
    r.sentence_id = 4;
    r.corrected_sentence = corr;
    s = mt_check_submission_line("ms-val-2", &r);
    CHECK(strcmp(s, "ms-val-2 1 4 Give ceftriaxone.") == 0);
    mt_free(s);
}

/* Every built-in prompt that asks for a JSON reply has a schema, and every
 * schema is valid JSON the grammar converter accepts. */
static void test_reply_schemas_make_grammars(void **state)
{
    size_t i;
    size_t with = 0;
    (void)state;
    for (i = 0; i < mtx_prompts_builtin_count(); i++) {
        const char *name = mtx_prompts_builtin_name(i);
        const char *schema = mtx_reply_schema(name);
        char *g = NULL;
        struct mt_error err = {MT_OK, ""};
        if (!schema)
            continue;
        with++;
        if (mtx_gbnf_from_schema(schema, &g, &err) != MT_OK)
            fail_msg("%s: %s", name, err.msg);
        CHECK(strstr(g, "root") != NULL);
        mt_free(g);
    }
    /* react eval reflect parser single, 3 detect, 3 locate, correct,
     * qa_judge, verify_decompose */
    CHECK(with == 14);
    {
        /* guards: the grammar writes the reasoning, then the decision,
         * then the confidence (MedGuards' chain-of-thought order) */
        static const char *const g3[3][2] = {
            {"guard_detect_1", "verdict"},
            {"guard_locate_2", "sentence"},
            {"guard_correct", "corrected_sentence"}};
        int k;

        for (k = 0; k < 3; k++) {
            char *gg = NULL;
            char rq[64];
            char dq[64];
            const char *rs, *ds, *cs;

            CHECK_OK(
                mtx_gbnf_from_schema(mtx_reply_schema(g3[k][0]), &gg, NULL));
            snprintf(rq, sizeof rq, "\"\\\"reasoning\\\"\"");
            snprintf(dq, sizeof dq, "\"\\\"%s\\\"\"", g3[k][1]);
            rs = strstr(gg, rq);
            ds = strstr(gg, dq);
            cs = strstr(gg, "\"\\\"confidence\\\"\"");
            if (!(rs && ds && cs && rs < ds && ds < cs))
                fail_msg("%s grammar order: %s", g3[k][0], gg);
            mt_free(gg);
        }
    }
    CHECK(mtx_reply_schema("examples") == NULL);
    CHECK(mtx_reply_schema("qa_answer") == NULL);
    {
        /* a note's ids bound "sentence_id"; the grammar still converts */
        char *s3 = mtx_reply_schema_for("single", NULL, 3);
        char *plain = mtx_reply_schema_for("eval", NULL, 3);
        char *g = NULL;
        CHECK(s3 && strstr(s3, "\"sentence_id\":{\"enum\":[-1,0,1,2]}"));
        CHECK(plain && strcmp(plain, mtx_reply_schema("eval")) == 0);
        CHECK_OK(mtx_gbnf_from_schema(s3, &g, NULL));
        mt_free(g);
        mt_free(s3);
        mt_free(plain);
        CHECK(mtx_reply_schema_for("examples", NULL, 3) == NULL);
    }
    {
        /* guard_locate quotes one of the note's sentences or NONE */
        const struct mt_str ss[] = {MT_STR_C(" He said \"no\". "),
                                    MT_STR_C("Fi\xc3\xa8vre 39 \xc2\xb0"
                                             "C.")};
        char *s = mtx_reply_schema_for("guard_locate_2", ss, 2);
        char *g = NULL;

        CHECK(s && strstr(s, "\"sentence\":{\"enum\":[\"NONE\","
                             "\"He said \\\"no\\\".\",\"Fi\xc3\xa8vre 39 "
                             "\xc2\xb0"
                             "C.\"]}"));
        CHECK_OK(mtx_gbnf_from_schema(s, &g, NULL));
        CHECK(g && strstr(g, "Fi\xc3\xa8vre"));
        mt_free(g);
        mt_free(s);
        s = mtx_reply_schema_for("guard_locate_1", NULL, 2);
        CHECK(s && strcmp(s, mtx_reply_schema("guard_locate_1")) == 0);
        mt_free(s);
    }
}

/* One out-of-memory rule for both note-bound fields: an allocation that
 * fails while the bound schema is built gives the unbound schema, never
 * NULL (the ids' case gave NULL, the quote's the unbound one). */
static void test_reply_schema_for_oom_gives_unbound(void **state)
{
    static const char *const prompts[] = {"single", "guard_locate_2"};
    const struct mt_str ss[] = {MT_STR_C("He said no."),
                                MT_STR_C("Fever 39 C.")};
    size_t k;
    (void)state;
    for (k = 0; k < 2; k++) {
        const char *plain = mtx_reply_schema(prompts[k]);
        char *full = mtx_reply_schema_for(prompts[k], ss, 2);
        int unbound = 0;
        long n;

        CHECK(full && strcmp(full, plain) != 0);
        for (n = 0; n < 400; n++) {
            char *s;

            mt_alloc_fail_after(n);
            s = mtx_reply_schema_for(prompts[k], ss, 2);
            mt_alloc_fail_reset();
            if (s && strcmp(s, full) == 0) {
                mt_free(s);
                break;
            }
            /* the first allocation is the unbound schema's copy */
            if (!s && n > 0)
                fail_msg("%s: NULL after %ld allocations", prompts[k], n);
            if (s && strcmp(s, plain) != 0)
                fail_msg("%s: neither schema: %s", prompts[k], s);
            unbound += s != NULL;
            mt_free(s);
        }
        CHECK(n < 400 && unbound > 0);
        mt_free(full);
    }
}

static void test_strategy_names_round_trip(void **state)
{
    enum mt_strategy s;

    (void)state;
    CHECK_OK(mt_strategy_parse("guards", &s));
    CHECK(s == MT_STRATEGY_GUARDS);
    CHECK(strcmp(mt_strategy_str(MT_STRATEGY_REACT_REFLEX), "react-reflex") ==
          0);
    CHECK(mt_strategy_parse("react", &s) == MT_EINVAL);
}

/* The strategy table: every entry parses back to itself, names its roles
 * and needs; the names list is the sentence the errors print. */
static void test_strategy_table_is_whole(void **state)
{
    char buf[128];
    char tiny[8];
    int i;

    (void)state;
    for (i = 0; i < MT_STRATEGY_COUNT; i++) {
        const struct mt_strategy_info *in =
            mt_strategy_get((enum mt_strategy)i);
        enum mt_strategy s;

        CHECK(in && in->id == (enum mt_strategy)i);
        CHECK_OK(mt_strategy_parse(in->name, &s));
        CHECK(s == in->id && strcmp(mt_strategy_str(s), in->name) == 0);
        CHECK(in->title && in->summary && in->roles && in->roles[0]);
    }
    CHECK(mt_strategy_get(MT_STRATEGY_COUNT) == NULL);
    CHECK(strcmp(mt_strategy_str(MT_STRATEGY_COUNT), "unknown") == 0);
    CHECK(mt_strategy_get(MT_STRATEGY_REACT_REFLEX)->needs_retriever);
    CHECK(!mt_strategy_get(MT_STRATEGY_GUARDS)->needs_retriever);
    CHECK(mt_strategy_get(MT_STRATEGY_SINGLE)->needs_examples);
    CHECK(strcmp(mt_strategy_get(MT_STRATEGY_REACT_REFLEX)->roles[3],
                 "parser") == 0);
    CHECK(strcmp(mt_strategy_list(buf, sizeof buf),
                 "react-reflex, guards or single") == 0);
    CHECK(strcmp(mt_strategy_list(tiny, sizeof tiny), "react-r") == 0);
}

/* ==== Against the role-aware stub (tests/fixtures/agent_stub) ==== */

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t trace_conforms(const char *t, int *seen);

struct astub {
    pid_t pid;
    char spec[96];
};

/* Starts agent_stub with up to 4 extra arguments; fails when not built. */
static void astub_start(struct astub *s, const char *a1, const char *a2,
                        const char *a3)
{
    const char *b = getenv("MEDTRUST_BUILD");
    char bin[512];
    int fd[2];
    int port = 0;
    FILE *f;

    snprintf(bin, sizeof bin, "%s/fixtures/agent_stub", b ? b : "build");
    if (access(bin, X_OK) != 0)
        MISSING(bin);
    CHECK(pipe(fd) == 0);
    s->pid = fork();
    CHECK(s->pid >= 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd[1], 1);
        close(fd[0]);
        execl(bin, bin, a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    f = fdopen(fd[0], "r");
    CHECK(f && fscanf(f, "%d", &port) == 1);
    fclose(f);
    snprintf(s->spec, sizeof s->spec, "openai:http://127.0.0.1:%d#stub", port);
}

static void astub_stop(struct astub *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
}

static const char note_text[] =
    "A 62-year-old man has crushing chest pain. ECG shows ST elevation in "
    "II, III and aVF. He is given aspirin and sent home.";

static struct mt_agent *open_agent(const struct astub *s, enum mt_strategy st)
{
    struct mt_agent_params p;
    struct mt_agent *a = NULL;
    struct mt_error err;

    mt_agent_default_params(&p);
    p.strategy = st;
    p.no_retrieval = 1; /* no corpus in these tests */
    p.llm_spec = s->spec;
    p.llm.max_retries = 0;
    p.llm.timeout_s = 10;
    unsetenv("MEDTRUST_LLM");
    CHECK_OK(mt_agent_open(&p, &a, &err));
    return a;
}

static void check_note(struct mt_agent *a, struct mt_check_result *r)
{
    struct mt_note n = {"t",  note_text, sizeof note_text - 1, NULL, 0, NULL, 0,
                        NULL, 0};
    struct mt_error err;

    CHECK_OK(mt_agent_check(a, &n, r, &err));
}

static void test_guards_confidence_decides_when_arbiter_fails(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_check_result r;

    (void)state;
    astub_start(&s, "--disagree", "--garble", "guard_detect_arbiter");
    a = open_agent(&s, MT_STRATEGY_GUARDS);
    check_note(a, &r);
    /* detect: INCORRECT (0.9) beats CORRECT (0.6) once the arbiter's two
     * replies are garbage; localisation: agents 1 (last sentence, 0.8)
     * and 2 (first, 0.4) differ and the arbiter picks the last one */
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strstr(r.trace, "the more confident agent wins") != NULL);
    {
        int seen[MT_TRACE_KIND_COUNT] = {0};

        trace_conforms(r.trace, seen);
        CHECK(seen[MT_TRACE_FALLBACK] || seen[MT_TRACE_GUARDS_DETECT]);
    }
    CHECK(r.usage.parse_failures == 2 && r.usage.fallbacks == 1);
    /* 2 detect + 2 arbiter + 2 locate + 1 arbiter + 1 correct */
    CHECK(r.usage.llm_calls == 8);
    CHECK(r.usage.critical_calls == 6);
    mt_check_result_free(&r);
    mt_agent_close(a);
    astub_stop(&s);
}

/* Checks the note expecting MT_EMODEL: a verdict no reply decided. */
static void check_note_fails(struct mt_agent *a, struct mt_check_result *r)
{
    struct mt_note n = {"t",  note_text, sizeof note_text - 1, NULL, 0, NULL, 0,
                        NULL, 0};
    struct mt_error err;

    CHECK(mt_agent_check(a, &n, r, &err) == MT_EMODEL);
    CHECK(r->fallback == 1 && r->fallback_why && r->trace);
    CHECK(strcmp(err.msg, r->fallback_why) == 0);
    CHECK(strstr(err.msg, "the verdict is a fallback") != NULL);
}

static void test_single_falls_back_after_one_repeat(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_check_result r;
    char *js;

    (void)state;
    astub_start(&s, "--bad-id", NULL, NULL);
    a = open_agent(&s, MT_STRATEGY_SINGLE);
    /* the replies were well-formed JSON with an impossible sentence id:
     * unusable, so the "no error" is a fallback and the check fails */
    check_note_fails(a, &r);
    CHECK(strstr(r.fallback_why, "no usable reply (single: ") != NULL);
    CHECK(strstr(r.fallback_why, "sentence_id") != NULL);
    js = mt_check_result_json(&r, 0);
    CHECK(js && strstr(js, "\"fallback\":true,\"fallback_why\":") != NULL);
    mt_free(js);
    CHECK(r.error_flag == 0 && r.sentence_id == -1 && r.fallback == 1);
    CHECK(r.usage.llm_calls == 2 && r.usage.parse_failures == 2);
    CHECK(r.usage.fallbacks == 1);
    CHECK(strstr(r.trace, "sentence_id") != NULL);
    CHECK(strcmp(r.corrected_sentence, "NA") == 0);
    mt_check_result_free(&r);
    mt_agent_close(a);
    astub_stop(&s);
}

/* allow_fallbacks on one call (mt_agent_check_with) accepts the fallback
 * verdict: MT_OK, still marked fallback with why; 0 fails as before. */
static void test_allow_fallbacks_returns_the_fallback(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_agent_check_params cp;
    struct mt_note n = {"t",  note_text, sizeof note_text - 1, NULL, 0, NULL, 0,
                        NULL, 0};
    struct mt_error err;

    (void)state;
    astub_start(&s, "--bad-id", NULL, NULL);
    a = open_agent(&s, MT_STRATEGY_SINGLE);
    mt_agent_check_default_params(a, &cp);
    CHECK(cp.allow_fallbacks == 0);
    cp.allow_fallbacks = 1;
    CHECK(mt_agent_check_with(a, &n, &cp, &r, &err) == MT_OK);
    CHECK(r.fallback == 1 && r.fallback_why && r.error_flag == 0);
    CHECK(strstr(r.fallback_why, "no usable reply (single: ") != NULL);
    mt_check_result_free(&r);
    cp.allow_fallbacks = 0;
    CHECK(mt_agent_check_with(a, &n, &cp, &r, &err) == MT_EMODEL);
    CHECK(r.fallback == 1);
    mt_check_result_free(&r);
    mt_agent_close(a);
    astub_stop(&s);
}

static void test_react_rejects_on_true_minimum_for_all_rounds(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_check_result r;

    (void)state;
    astub_start(&s, "--eval-finals", "2,5,5,5,5", NULL);
    a = open_agent(&s, MT_STRATEGY_REACT_REFLEX);
    check_note(a, &r);
    /* every round: search, final_mistake, MedEval (rejected although the
     * published rule would accept); a reflection between rounds; after
     * 5 rounds: no error */
    CHECK(r.error_flag == 0);
    CHECK(r.usage.llm_calls == 5 * 3 + 4);
    CHECK(strstr(r.trace, "\"accepted\":true") == NULL);
    CHECK(strstr(r.trace, "would have decided otherwise") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    astub_stop(&s);
}

/* Issue 29: a verdict that exists only because the model's replies were
 * unusable (after the repeat) fails the check, in every strategy and at
 * every role whose fallback decides the verdict. */
static void test_botched_replies_fail_every_strategy(void **state)
{
    static const struct {
        const char *garble;
        enum mt_strategy st;
        const char *why;
    } cases[] = {
        {"single", MT_STRATEGY_SINGLE, "(single: "},
        {"guard_detect", MT_STRATEGY_GUARDS, "(guard_detect (both agents): "},
        {"guard_locate", MT_STRATEGY_GUARDS, "(guard_locate (both agents): "},
        {"guard_correct", MT_STRATEGY_GUARDS, "(guard_correct: "},
        {"react", MT_STRATEGY_REACT_REFLEX, "(react: "},
        {"eval", MT_STRATEGY_REACT_REFLEX, "(eval: "},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct astub s;
        struct mt_agent *a;
        struct mt_check_result r;

        astub_start(&s, "--garble", cases[i].garble, NULL);
        a = open_agent(&s, cases[i].st);
        check_note_fails(a, &r);
        CHECK(strstr(r.fallback_why, "no usable reply") != NULL);
        CHECK(strstr(r.fallback_why, cases[i].why) != NULL);
        CHECK(r.usage.failed_calls == 0 && r.usage.parse_failures >= 2);
        mt_check_result_free(&r);
        mt_agent_close(a);
        astub_stop(&s);
    }
}

/* A well-formed reply that decides "no error" is the model's answer. */
static void test_decided_no_error_is_an_answer(void **state)
{
    static const enum mt_strategy st[] = {
        MT_STRATEGY_SINGLE, MT_STRATEGY_GUARDS, MT_STRATEGY_REACT_REFLEX};
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++) {
        struct astub s;
        struct mt_agent *a;
        struct mt_check_result r;
        char *js;

        astub_start(&s, "--no-error", NULL, NULL);
        a = open_agent(&s, st[i]);
        check_note(a, &r);
        CHECK(r.error_flag == 0 && r.sentence_id == -1);
        CHECK(r.fallback == 0 && r.fallback_why == NULL);
        CHECK(r.usage.fallbacks == 0);
        js = mt_check_result_json(&r, 0);
        CHECK(js && strstr(js, "\"fallback\":false") != NULL &&
              strstr(js, "fallback_why") == NULL);
        mt_free(js);
        mt_check_result_free(&r);
        mt_agent_close(a);
        astub_stop(&s);
    }
}

static void test_bad_input_is_refused(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_note n = {"t", "   \n ", 5, NULL, 0, NULL, 0, NULL, 0};
    struct mt_error err;
    char *big;

    (void)state;
    astub_start(&s, NULL, NULL, NULL);
    a = open_agent(&s, MT_STRATEGY_SINGLE);
    CHECK(mt_agent_check(a, &n, &r, &err) == MT_EINVAL);
    n.text = "ab\xff\xfe";
    n.text_len = 4;
    CHECK(mt_agent_check(a, &n, &r, &err) == MT_EINVAL);
    big = mt_malloc(1 << 20);
    memset(big, 'a', 1 << 20);
    n.text = big;
    n.text_len = 1 << 20;
    CHECK(mt_agent_check(a, &n, &r, &err) == MT_ELIMIT);
    CHECK(r.trace == NULL);
    mt_free(big);
    mt_agent_close(a);
    astub_stop(&s);
}

/* Every numeric setting of the checker has a sound descriptor: its
 * default (mt_agent_default_params) within its bounds (or said in words),
 * a metavariable unless it is a 0..1 flag,
 * a server cap only below the CLI's bound, and no member named twice. */
static void test_agent_param_table_is_sound(void **state)
{
    const struct mt_param_table *t = &mt_agent_param_table;
    (void)state;
    size_t i, j;

    CHECK(t->n >= 10 && t->size == sizeof(struct mt_agent_params));
    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];
        double def = mt_param_default(t, d);

        CHECK(d->option || d->field);
        /* no metavariable: a flag, a 0..1 integer */
        CHECK(d->help && d->lo <= d->hi);
        CHECK(d->arg || (mt_param_is_integer(d) && d->lo == 0 && d->hi == 1));
        CHECK(d->def_text || mt_param_valid(d, def, 0));
        CHECK(d->server_hi == 0 || (d->server_hi < d->hi && d->field));
        CHECK(!d->field || mt_param_valid(d, def, 1));
        for (j = 0; j < i; j++)
            CHECK(t->params[j].offset != d->offset);
    }
    CHECK(mt_param_find(t, "steps", 0) == mt_param_find(t, "max_steps", 1));
}

/* ==== Per-call settings and callbacks (mt_agent_check_with) ==== */

struct step_seen {
    size_t n;        /* records seen */
    size_t searches; /* "search" records, each with "passages" */
    int polls;       /* cancelled() calls */
    int stop_at;     /* cancelled() says stop at this poll; 0 = never */
};

static void count_step(void *user, const char *note_id, const char *step)
{
    struct step_seen *c = user;

    CHECK(note_id && strcmp(note_id, "t") == 0);
    c->n++;
    if (strstr(step, "\"step\":\"search\"")) {
        CHECK(strstr(step, "\"passages\":[") != NULL);
        c->searches++;
    }
}

static int stop_when(void *user, const char *note_id)
{
    struct step_seen *c = user;

    (void)note_id;
    return ++c->polls == c->stop_at;
}

static enum mt_status check_with(struct mt_agent *a,
                                 const struct mt_agent_check_params *cp,
                                 struct mt_check_result *r)
{
    struct mt_note n = {"t",  note_text, sizeof note_text - 1, NULL, 0, NULL, 0,
                        NULL, 0};
    struct mt_error err;

    return mt_agent_check_with(a, &n, cp, r, &err);
}

/* One checker, opened for single, runs guards and react-reflex notes
 * with their own settings and callbacks; the handle's stay as they were. */
static void test_check_with_per_call_settings(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_agent_check_params cp;
    struct mt_check_result r;
    struct step_seen seen = {0, 0, 0, 0};

    (void)state;
    astub_start(&s, "--eval-finals", "2,5,5,5,5", NULL);
    a = open_agent(&s, MT_STRATEGY_SINGLE);
    mt_agent_check_default_params(a, &cp);
    CHECK(cp.strategy == MT_STRATEGY_SINGLE && cp.max_rounds == 5);
    CHECK(cp.on_step == NULL && cp.hit_chars == 360);
    cp.strategy = MT_STRATEGY_REACT_REFLEX; /* its roles open now */
    cp.max_rounds = 1;                      /* one rejected round */
    cp.on_step = count_step;
    cp.on_step_user = &seen;
    CHECK_OK(check_with(a, &cp, &r));
    CHECK(r.strategy == MT_STRATEGY_REACT_REFLEX && r.error_flag == 0);
    CHECK(r.usage.llm_calls == 3); /* search, final_mistake, MedEval */
    CHECK(seen.n > 0 && seen.searches == 1);
    CHECK(strstr(r.trace, "\"passages\":[]") != NULL); /* no corpus */
    mt_check_result_free(&r);
    cp.strategy = MT_STRATEGY_GUARDS;
    CHECK_OK(check_with(a, &cp, &r));
    CHECK(r.strategy == MT_STRATEGY_GUARDS && r.usage.llm_calls >= 5);
    mt_check_result_free(&r);
    seen.n = 0; /* the handle's own settings: single, no callback */
    check_note(a, &r);
    CHECK(r.strategy == MT_STRATEGY_SINGLE && r.usage.llm_calls == 1);
    CHECK(seen.n == 0);
    mt_check_result_free(&r);
    mt_agent_close(a);
    astub_stop(&s);
}

/* A call's cancel callback gets its own user pointer and stops that
 * check; out-of-range settings are refused before any model call. */
static void test_check_with_cancel_and_bad_settings(void **state)
{
    struct astub s;
    struct mt_agent *a;
    struct mt_agent_check_params cp;
    struct mt_check_result r;
    struct step_seen seen = {0, 0, 0, 2};

    (void)state;
    astub_start(&s, "--eval-finals", "2,5,5,5,5", NULL);
    a = open_agent(&s, MT_STRATEGY_REACT_REFLEX);
    mt_agent_check_default_params(a, &cp);
    cp.cancelled = stop_when;
    cp.cancelled_user = &seen;
    CHECK(check_with(a, &cp, &r) == MT_ECANCELED);
    CHECK(seen.polls == 2 && r.trace == NULL);
    cp.cancelled = NULL;
    cp.rerank_k = 0;
    CHECK(check_with(a, &cp, &r) == MT_EINVAL);
    cp.rerank_k = 20;
    cp.n_evals = 65;
    CHECK(check_with(a, &cp, &r) == MT_EINVAL);
    cp.n_evals = 5;
    cp.strategy = (enum mt_strategy)7;
    CHECK(check_with(a, &cp, &r) == MT_EINVAL);
    mt_agent_close(a);
    astub_stop(&s);
}

/* ==== The trace format (medtrust/trace.h) ==== */

/* Every record of trace text 't' (a JSON array) is one the declaration
 * allows at the current version; returns how many kinds were seen, and
 * marks them in 'seen'. */
static size_t trace_conforms(const char *t, int *seen)
{
    json_t *a = json_loads(t, 0, NULL);
    size_t i, kinds = 0;

    CHECK(json_is_array(a));
    for (i = 0; i < json_array_size(a); i++) {
        char *rec = json_dumps(json_array_get(a, i), JSON_COMPACT);
        const char *step =
            json_string_value(json_object_get(json_array_get(a, i), "step"));
        struct mt_error err = {MT_OK, ""};
        enum mt_trace_kind k;

        if (mt_trace_record_check(rec, strlen(rec), MT_TRACE_VERSION, &err) !=
            MT_OK)
            fail_msg("%s: %s", err.msg, rec);
        CHECK_OK(mt_trace_kind_parse(step, &k));
        kinds += !seen[k];
        seen[k] = 1;
        mt_free(rec);
    }
    json_decref(a);
    return kinds;
}

/* The number of keys of a space-separated list ("*" not counted). */
static size_t nkeys(const char *list, json_t *o)
{
    char key[64];
    size_t n = 0;

    while (*list) {
        size_t len = strcspn(list, " ");

        CHECK(len < sizeof key);
        memcpy(key, list, len);
        key[len] = '\0';
        if (len && strcmp(key, "*") != 0) {
            if (!json_object_get(o, key))
                fail_msg("golden record lacks declared key \"%s\"", key);
            n++;
        }
        list += len;
        list += *list == ' ';
    }
    return n;
}

/* One golden record a kind (tests/golden/trace/KIND.json): it passes the
 * check and holds exactly the keys its kind declares, so a key added to
 * or dropped from the declaration shows here; an undeclared key, a
 * missing required one (current version only) and a newer version are
 * refused. */
static void test_trace_goldens_match_the_declaration(void **state)
{
    int k;

    (void)state;
    for (k = 0; k < MT_TRACE_KIND_COUNT; k++) {
        const struct mt_trace_kind_info *in =
            mt_trace_kind_get((enum mt_trace_kind)k);
        struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);
        struct mt_error err = {MT_OK, ""};
        char path[256], *bad;
        json_t *o;

        snprintf(path, sizeof path, "tests/golden/trace/%s.json", in->name);
        CHECK_OK(mtx_file_read_all(path, &b, &err));
        if (mt_trace_record_check(b.data, b.len, MT_TRACE_VERSION, &err))
            fail_msg("%s: %s", path, err.msg);
        o = json_loads(b.data, 0, NULL);
        CHECK(json_object_size(o) ==
              1 + nkeys(in->required, o) + nkeys(in->optional, o));
        json_object_set_new(o, "bogus_key", json_true());
        bad = json_dumps(o, JSON_COMPACT);
        CHECK(mt_trace_record_check(bad, strlen(bad), 1, &err) == MT_EPARSE ||
              strstr(in->optional, "*"));
        mt_free(bad);
        json_object_del(o, "bogus_key");
        json_object_del(o, "step");
        json_object_set_new(o, "step", json_string(in->name));
        json_object_del(o, json_object_iter_key(json_object_iter(o)));
        bad = json_dumps(o, JSON_COMPACT);
        CHECK(mt_trace_record_check(bad, strlen(bad), MT_TRACE_VERSION, &err) ==
              MT_EPARSE);
        CHECK(strstr(err.msg, "is missing") != NULL);
        CHECK_OK(mt_trace_record_check(bad, strlen(bad), 1, &err));
        CHECK(mt_trace_record_check(bad, strlen(bad), MT_TRACE_VERSION + 1,
                                    &err) == MT_EINVAL);
        mt_free(bad);
        json_decref(o);
        mtx_buf_free(&b);
    }
    CHECK(mt_trace_kind_get(MT_TRACE_KIND_COUNT) == NULL);
}

/* The first record of each kind in trace 't' not yet in 'done', its
 * timing and endpoint (which vary run to run) removed, is byte for byte
 * tests/golden/trace/written/KIND.json (MEDTRUST_UPDATE_GOLDEN=1 writes
 * it instead). */
static void trace_matches_goldens(const char *t, int *done)
{
    json_t *a = json_loads(t, 0, NULL);
    size_t i;

    for (i = 0; i < json_array_size(a); i++) {
        json_t *o = json_array_get(a, i);
        const char *step = json_string_value(json_object_get(o, "step"));
        struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);
        struct mt_error err = {MT_OK, ""};
        enum mt_trace_kind k;
        char path[256], *txt;

        CHECK_OK(mt_trace_kind_parse(step, &k));
        if (done[k])
            continue;
        done[k] = 1;
        json_object_del(o, "ms");
        json_object_del(o, "endpoint");
        txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        snprintf(path, sizeof path, "tests/golden/trace/written/%s.json", step);
        if (getenv("MEDTRUST_UPDATE_GOLDEN")) {
            FILE *f = fopen(path, "w");

            CHECK(f && fprintf(f, "%s\n", txt) > 0 && fclose(f) == 0);
        } else {
            CHECK_OK(mtx_file_read_all(path, &b, &err));
            if (b.len == 0 || strncmp(b.data, txt, b.len - 1) != 0 ||
                strlen(txt) != b.len - 1)
                fail_msg("%s differs from the record written:\n%s", path, txt);
        }
        mt_free(txt);
        mtx_buf_free(&b);
    }
    json_decref(a);
}

/* What the checker writes follows the declaration: every record of a
 * react-reflex, guards and single run against the stub; and the first
 * record of each kind written is its golden (tests/golden/trace/written). */
static void test_trace_records_follow_the_declaration(void **state)
{
    static const enum mt_strategy st[] = {
        MT_STRATEGY_REACT_REFLEX, MT_STRATEGY_GUARDS, MT_STRATEGY_SINGLE};
    int seen[MT_TRACE_KIND_COUNT] = {0};
    int done[MT_TRACE_KIND_COUNT] = {0};
    struct astub s;
    size_t i;

    (void)state;
    astub_start(&s, "--eval-finals", "2,5,5,5,5", NULL);
    for (i = 0; i < 3; i++) {
        struct mt_agent *a = open_agent(&s, st[i]);
        struct mt_check_result r;
        char *js;

        check_note(a, &r);
        trace_conforms(r.trace, seen);
        trace_matches_goldens(r.trace, done);
        js = mt_check_result_json(&r, 1);
        CHECK(js && strstr(js, "\"trace_version\":2,\"trace\":[") != NULL);
        mt_free(js);
        mt_check_result_free(&r);
        mt_agent_close(a);
    }
    astub_stop(&s);
    CHECK(seen[MT_TRACE_CALL] && seen[MT_TRACE_SEARCH]);
    CHECK(seen[MT_TRACE_MEDEVAL] && seen[MT_TRACE_ROUNDS]);
    CHECK(seen[MT_TRACE_RETRIEVAL] && seen[MT_TRACE_VERDICT]);
    CHECK(seen[MT_TRACE_GUARDS_DETECT] && seen[MT_TRACE_GUARDS_LOCATE]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extract_plain_fenced_and_prose),
        cmocka_unit_test(test_extract_rejects_garbage_with_reason),
        cmocka_unit_test(test_reply_getters_are_lenient_but_bounded),
        cmocka_unit_test(test_match_english_verbatim_partial_and_miss),
        cmocka_unit_test(test_match_chinese_uses_character_bigrams),
        cmocka_unit_test(test_match_arabic_ignores_diacritics),
        cmocka_unit_test(test_medeval_uses_true_minimum),
        cmocka_unit_test(test_prompts_render_and_override),
        cmocka_unit_test(test_submission_lines),
        cmocka_unit_test(test_reply_schemas_make_grammars),
        cmocka_unit_test(test_reply_schema_for_oom_gives_unbound),
        cmocka_unit_test(test_strategy_names_round_trip),
        cmocka_unit_test(test_strategy_table_is_whole),
        cmocka_unit_test(test_guards_confidence_decides_when_arbiter_fails),
        cmocka_unit_test(test_single_falls_back_after_one_repeat),
        cmocka_unit_test(test_allow_fallbacks_returns_the_fallback),
        cmocka_unit_test(test_react_rejects_on_true_minimum_for_all_rounds),
        cmocka_unit_test(test_botched_replies_fail_every_strategy),
        cmocka_unit_test(test_decided_no_error_is_an_answer),
        cmocka_unit_test(test_bad_input_is_refused),
        cmocka_unit_test(test_agent_param_table_is_sound),
        cmocka_unit_test(test_check_with_per_call_settings),
        cmocka_unit_test(test_check_with_cancel_and_bad_settings),
        cmocka_unit_test(test_trace_goldens_match_the_declaration),
        cmocka_unit_test(test_trace_records_follow_the_declaration),
    };

    mtx_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
