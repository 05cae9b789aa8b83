/* The agents as their papers define them, proven by what the model is
 * sent: each test plays a scenario on the scripted server
 * (tests/fixtures/script_server.c) and asserts on the recorded requests. */
#include "check.h"

#include "core/buf.h"
#include "core/jsonl.h"
#include "llmcall/fit.h"
#include "medtrust/check.h"
#include "medtrust/qa.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"
#include "medtrust/retrieve.h"
#include "model/llm.h"
#include "script.h"
#include "tiny_gguf.h"
#include "tmpdir.h"

/* ==== A small corpus in two sources ==== */

static char db_dir[96];
static char qa_dir[96];
static char vec_dir[96];      /* guide_docs with 32-dim vectors */
static char gguf_dir[64];     /* tiny embed.gguf and rerank.gguf */
static char emb_spec[128];    /* gguf:GGUF_DIR/embed.gguf (64 dims) */
static char rerank_spec[128]; /* gguf:GGUF_DIR/rerank.gguf */

static int ingest(struct mt_store *s, const char *name, const char *docs)
{
    struct mt_ingest_params ip;
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.jsonl", tmpl, name);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(docs, f);
    fclose(f);
    mt_ingest_default_params(&ip);
    ip.source = name;
    return mt_store_ingest_jsonl(s, path, &ip, NULL, NULL) == MT_OK ? 0 : -1;
}

static const char guide_docs[] =
    "{\"id\":\"G1\",\"title\":\"STEMI\",\"text\":\"Inferior STEMI "
    "needs emergency reperfusion by primary PCI.\"}\n"
    "{\"id\":\"G2\",\"title\":\"Aspirin\",\"text\":\"Aspirin "
    "loading dose is 300 mg chewed.\"}\n"
    "{\"id\":\"G3\",\"title\":\"Troponin\",\"text\":\"Troponin "
    "rises three hours after myocardial injury.\"}\n"
    "{\"id\":\"G4\",\"title\":\"Discharge\",\"text\":\"Patients "
    "with infarction are never discharged home from the emergency "
    "department.\"}\n";
static const char wiki_docs[] =
    "{\"id\":\"W1\",\"title\":\"Reperfusion\",\"text\":\"Wiki "
    "article: reperfusion restores blood flow after STEMI.\"}\n";

static const char qa_docs[] =
    "{\"id\":\"11\",\"title\":\"Lipids and ulcers\",\"text\":\"Statins "
    "lower LDL cholesterol levels. Gastric ulcer bleeding rises with "
    "aspirin dose in elderly patients taking warfarin heparin clopidogrel "
    "ticagrelor prasugrel together daily. Endoscopy finds erosions ulcers "
    "and varices more often in smokers drinkers and obese adults.\"}\n"
    "{\"id\":\"22\",\"title\":\"Trials\",\"text\":\"Statins lower "
    "cholesterol levels in trials.\",\"url\":\"https://example.org/t\"}\n";

static int make_qa_db(void)
{
    struct mt_store *s = NULL;
    int rc = -1;

    snprintf(qa_dir, sizeof qa_dir, "%s/qa", tmpl);
    if (mt_store_open(qa_dir, NULL, &s, NULL) == MT_OK &&
        ingest(s, "pubmed", qa_docs) == 0 &&
        mt_index_build(s, NULL, NULL, NULL) == MT_OK)
        rc = 0;
    mt_store_close(s);
    return rc;
}

/* The paper's index: bi-encoder vectors truncated (Matryoshka) below the
 * model's own dimension, here 64 -> 32 with the tiny GGUF embedder. */
static int make_vec_db(void)
{
    static const char *const kinds[] = {"embed", "rerank"};
    struct mt_index_build_params bp;
    struct mt_embedder_params ep;
    struct mt_embedder *e = NULL;
    struct mt_store *s = NULL;
    int rc = -1;

    if (tiny_gguf_make(gguf_dir, sizeof gguf_dir,
                       "/tmp/mt-scripted-gguf-XXXXXX", kinds, 2) != 0 ||
        !gguf_dir[0])
        return 0; /* the vector tests fail on the empty name */
    snprintf(emb_spec, sizeof emb_spec, "gguf:%s/embed.gguf", gguf_dir);
    snprintf(rerank_spec, sizeof rerank_spec, "gguf:%s/rerank.gguf", gguf_dir);
    snprintf(vec_dir, sizeof vec_dir, "%s/vec", tmpl);
    mt_embedder_default_params(&ep);
    ep.dims = 32;
    mt_index_default_build_params(&bp);
    bp.embedder = emb_spec;
    bp.dims = 32;
    bp.embed = mt_embedder_index_fn;
    if (mt_embedder_open(emb_spec, &ep, &e, NULL) == MT_OK &&
        mt_store_open(vec_dir, NULL, &s, NULL) == MT_OK &&
        ingest(s, "guidelines", guide_docs) == 0) {
        bp.embed_user = e;
        rc = mt_index_build(s, &bp, NULL, NULL) == MT_OK ? 0 : -1;
    }
    mt_store_close(s);
    mt_embedder_close(e);
    return rc;
}

static int make_db(void **state)
{
    struct mt_store *s = NULL;
    int rc = -1;

    (void)state;
    mtx_jsonl_init_alloc();
    if (tmpdir_make("mt-scripted") != 0)
        return -1;
    snprintf(db_dir, sizeof db_dir, "%s/db", tmpl);
    if (mt_store_open(db_dir, NULL, &s, NULL) == MT_OK &&
        ingest(s, "guidelines", guide_docs) == 0 &&
        ingest(s, "wiki", wiki_docs) == 0 &&
        mt_index_build(s, NULL, NULL, NULL) == MT_OK)
        rc = 0;
    mt_store_close(s);
    if (rc == 0)
        rc = make_qa_db();
    return rc == 0 ? make_vec_db() : rc;
}

static int remove_db(void **state)
{
    char cmd[96];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", gguf_dir);
    if (gguf_dir[0] && system(cmd) != 0)
        return -1;
    return teardown(state);
}

static struct mt_agent *open_agent(const struct script *s,
                                   enum mt_strategy strategy)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.strategy = strategy;
    return script_open_agent(s, &p);
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
    script_check_note(a, &r);
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

/* ==== MedReAct'N'MedReFlex ==== */

static struct mt_agent *open_react(const struct script *s, uint32_t rounds,
                                   uint32_t budget)
{
    struct mt_agent_params p;

    mt_agent_default_params(&p);
    p.db_dir = db_dir;
    if (rounds)
        p.max_rounds = rounds;
    if (budget)
        p.evidence_tokens = budget;
    return script_open_agent(s, &p);
}

static const char loop_scenario[] =
    "react search STEMI reperfusion\n"
    "react search aspirin loading dose\n"
    "react search troponin rise\n"
    "react search discharged infarction\n"
    "react search reperfusion\n"
    "react final 2 He is given aspirin and taken for primary PCI.\n"
    "react final 2 He is given aspirin and sent for primary PCI.\n"
    "eval scores 4\neval scores 4\neval scores 4\neval scores 4\n"
    "eval scores 2\n"
    "eval scores 5\neval scores 5\neval scores 5\neval scores 5\n"
    "eval scores 5\n"
    "reflect {\"reflection\":\"no answer\",\"plan\":\"plan one\"}\n"
    "reflect {\"reflection\":\"too low\",\"plan\":\"plan two\"}\n"
    "parser answer 2 He is given aspirin and sent for PCI.\n";

/* N = 4: four searches (the fourth too), then MedReFlex, which reads
 * every passage; MedEval samples 5 reviews in one request and reads the
 * passages; a rejection (4,4,4,4,2) goes to MedReFlex with all five
 * reviews; the lessons reach the next round; MedFinalParser sees the
 * note and the accepted answer. */
static void test_react_searches_n_times_then_reflects(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *ev;
    char roles[512];
    char *t;

    (void)state;
    script_start(&s, loop_scenario);
    a = open_react(&s, 0, 0);
    script_check_note(a, &r);
    CHECK(strcmp(script_roles(&s, roles, sizeof roles),
                 "react react react react reflect react react eval reflect "
                 "react eval parser") == 0);
    t = script_nth_text(&s, "react", 3); /* the 4th step may still search */
    CHECK(strstr(t, "one step left") == NULL);
    CHECK(script_count(t, "Observation: passages found") == 3);
    free(t);
    t = script_nth_text(&s, "reflect", 0); /* all four searches' passages */
    CHECK(strstr(t, "Inferior STEMI needs emergency reperfusion") != NULL);
    CHECK(strstr(t, "Aspirin loading dose is 300 mg") != NULL);
    CHECK(strstr(t, "Troponin rises three hours") != NULL);
    CHECK(strstr(t, "never discharged home") != NULL);
    CHECK(strstr(t, "(no answer)") != NULL);
    free(t);
    ev = script_requests(&s, "eval");
    CHECK(json_integer_value(json_object_get(
              json_object_get(json_array_get(ev, 0), "request"), "n")) == 5);
    json_decref(ev);
    t = script_nth_text(&s, "eval", 0);
    CHECK(strstr(t, "Wiki article: reperfusion restores") != NULL);
    CHECK(strstr(t, "taken for primary PCI") != NULL);
    free(t);
    t = script_nth_text(&s, "reflect",
                        1); /* all five reviews, the first lesson */
    CHECK(script_count(t, "Reviewer ") == 5);
    CHECK(strstr(t, "Reviewer 5: validity 2") != NULL);
    CHECK(strstr(t, "plan one") != NULL);
    free(t);
    t = script_nth_text(&s, "react", 6); /* round 3 remembers both lessons */
    CHECK(strstr(t, "plan one") && strstr(t, "plan two"));
    free(t);
    t = script_nth_text(&s, "parser", 0);
    CHECK(strstr(t, "2 | He is given aspirin and sent home.") != NULL);
    CHECK(strstr(t, "sent for primary PCI") != NULL);
    free(t);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strcmp(r.corrected_sentence,
                 "He is given aspirin and sent for PCI.") == 0);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* M = 5 rounds, each rejected: four reflections between them, then "no
 * error" without a parser call. */
static void test_react_concludes_no_error_after_m_rounds(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char roles[512];

    (void)state;
    script_start(&s, "react final 2 He is admitted.\n"
                     "eval scores 2\n"
                     "reflect {\"reflection\":\"r\",\"plan\":\"p\"}\n");
    a = open_react(&s, 0, 0);
    script_check_note(a, &r);
    script_roles(&s, roles, sizeof roles);
    CHECK(script_count(roles, "react") == 5);
    CHECK(script_count(roles, "eval") == 5);
    CHECK(script_count(roles, "reflect") == 4);
    CHECK(script_count(roles, "parser") == 0);
    CHECK(r.error_flag == 0 && r.sentence_id == -1);
    CHECK(strstr(r.trace, "no answer accepted in any round") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* The case the published rule gets wrong: one low score that is not the
 * last (2,5,5,5,5, mean 4.4). The published "minimum" is 4.4 and accepts;
 * the true minimum is 2 and rejects. */
static void test_medeval_rejects_what_the_published_rule_accepted(void **st)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;

    (void)st;
    script_start(&s, "react final 2 He is admitted.\n"
                     "eval scores 2\neval scores 5\n");
    a = open_react(&s, 1, 0);
    script_check_note(a, &r);
    CHECK(r.error_flag == 0);
    CHECK(strstr(r.trace, "\"finals\":[2,5,5,5,5]") != NULL);
    CHECK(strstr(r.trace, "\"accepted\":false") != NULL);
    CHECK(strstr(r.trace, "\"published_min\":4.4") != NULL);
    CHECK(strstr(r.trace, "would have decided otherwise") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* A token budget too small for every passage drops the oldest search's
 * passages first (lowest-ranked first) and says so. The budget counts the
 * whole trajectory (estimated: a token per 3 ASCII bytes). */
static void test_evidence_budget_drops_oldest_passages(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char *t;

    (void)state;
    script_start(&s, "react search troponin\n"
                     "react search aspirin loading\n"
                     "react final 2 He is admitted.\n"
                     "eval scores 5\n"
                     "parser answer 2 He is admitted.\n");
    a = open_react(&s, 1, 160);
    script_check_note(a, &r);
    t = script_nth_text(&s, "eval", 0);
    CHECK(strstr(t, "Troponin rises") == NULL);
    CHECK(strstr(t, "Aspirin loading dose") != NULL);
    CHECK(strstr(t, "(1 passages left out)") != NULL);
    free(t);
    CHECK(strstr(r.trace, "\"step\":\"evidence_budget\"") != NULL);
    CHECK(strstr(r.trace, "\"passages_dropped\":1") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

static void parser_case(const char *parser_line, const char *corr)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    char sc[512];

    snprintf(sc, sizeof sc,
             "react final 2 He is given aspirin and admitted.\n"
             "eval scores 5\n%s\n",
             parser_line);
    script_start(&s, sc);
    a = open_react(&s, 1, 0);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    CHECK(strcmp(r.corrected_sentence, corr) == 0);
    CHECK(strstr(r.trace, "\"step\":\"parser_disagreed\"") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* The parser formats, it does not decide: a reply saying "no error"
 * keeps MedEval's verdict and MedReAct's wording; one naming another
 * sentence keeps the sentence and MedReAct's wording too (another
 * sentence's correction is never written under the accepted id). Both
 * are recorded. */
static void test_parser_formats_but_never_decides(void **state)
{
    (void)state;
    parser_case("parser answer -1", "He is given aspirin and admitted.");
    parser_case("parser answer 1 He is given aspirin, then admitted.",
                "He is given aspirin and admitted.");
}

/* Without a corpus react-reflex refuses; --no-retrieval runs it and the
 * trace says so. */
static void test_react_without_corpus_needs_no_retrieval(void **state)
{
    struct script s;
    struct mt_agent_params p;
    struct mt_agent *a = NULL;
    struct mt_check_result r;
    struct mt_error err;
    char *t;

    (void)state;
    script_start(&s, "react search aspirin\nreact final 2 He is admitted.\n"
                     "eval scores 5\nparser answer 2 He is admitted.\n");
    mt_agent_default_params(&p);
    p.llm_spec = s.spec;
    CHECK(mt_agent_open(&p, &a, &err) == MT_EINVAL && a == NULL);
    CHECK(strstr(err.msg, "--no-retrieval") && strstr(err.msg, "--db"));
    p.no_retrieval = 1;
    a = script_open_agent(&s, &p);
    script_check_note(a, &r);
    CHECK(strstr(r.trace, "--no-retrieval: MedReAct runs without a corpus") !=
          NULL);
    t = script_nth_text(&s, "react", 1);
    CHECK(strstr(t, "No medical corpus is configured") != NULL);
    free(t);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

static void source_case(const char *const *agent_src, size_t na,
                        const char *const *note_src, size_t nn, int want_g,
                        int want_w)
{
    struct script s;
    struct mt_agent_params p;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_note n = {"t",
                        script_note_text,
                        sizeof script_note_text - 1,
                        NULL,
                        0,
                        NULL,
                        0,
                        NULL,
                        0};
    struct mt_error err;
    char *t;

    script_start(&s, "react search reperfusion STEMI\n"
                     "react final 2 He is admitted.\n"
                     "eval scores 5\nparser answer 2 He is admitted.\n");
    mt_agent_default_params(&p);
    p.db_dir = db_dir;
    p.sources = agent_src;
    p.n_sources = na;
    a = script_open_agent(&s, &p);
    n.sources = note_src;
    n.n_sources = nn;
    CHECK_OK(mt_agent_check(a, &n, &r, &err));
    t = script_nth_text(&s, "react", 1);
    CHECK((strstr(t, "Inferior STEMI needs") != NULL) == want_g);
    CHECK((strstr(t, "Wiki article") != NULL) == want_w);
    free(t);
    CHECK(strstr(r.trace, "\"sources\":[") != NULL);
    mt_check_result_free(&r);
    mt_agent_close(a);
    script_stop(&s);
}

/* --source NAME (repeatable) and a note's own sources (POST /v1/check):
 * search() reads only those corpora. */
static void test_source_filter_reaches_search(void **state)
{
    static const char *const wiki[] = {"wiki"};
    static const char *const guide[] = {"guidelines"};
    static const char *const both[] = {"wiki", "guidelines"};

    (void)state;
    source_case(wiki, 1, NULL, 0, 0, 1);
    source_case(wiki, 1, guide, 1, 1, 0); /* the note's filter wins */
    source_case(both, 2, NULL, 0, 1, 1);
}

/* ==== MedReAct's two-stage semantic search ==== */

/* A react-reflex checker on 'db' with the search settings given, or NULL
 * with 'err' set when they are refused. */
static struct mt_agent *try_search_agent(const struct script *s, const char *db,
                                         int mode, uint32_t dims,
                                         const char *rerank,
                                         struct mt_error *err)
{
    struct mt_agent_params p;
    struct mt_agent *a = NULL;

    mt_agent_default_params(&p);
    p.llm_spec = s->spec;
    p.llm.max_retries = 0;
    p.llm.timeout_s = 10;
    p.db_dir = db;
    p.search_mode = mode;
    p.dims = dims;
    p.reranker_spec = rerank;
    if (rerank) {
        p.retrieve_k = 4;
        p.rerank_k = 2;
    }
    unsetenv("MEDTRUST_LLM");
    if (mt_agent_open(&p, &a, err) != MT_OK)
        return NULL;
    return a;
}

static const char one_search[] =
    "react search zzqx xylophone\nreact final 2 He is admitted.\n"
    "eval scores 5\nparser answer 2 He is admitted.\n";

/* The first search event of a check on 'a' (a new reference), and the
 * text MedReAct was sent after it into *obs (free with free()). */
static json_t *first_search(struct mt_agent *a, const struct script *s,
                            char **obs)
{
    struct mt_check_result r;
    json_t *tr, *ev = NULL;
    size_t i;

    script_check_note(a, &r);
    tr = json_loads(r.trace, 0, NULL);
    for (i = 0; !ev && i < json_array_size(tr); i++) {
        json_t *o = json_array_get(tr, i);

        if (strcmp(json_string_value(json_object_get(o, "step")), "search") ==
            0)
            ev = json_incref(o);
    }
    json_decref(tr);
    mt_check_result_free(&r);
    *obs = script_nth_text(s, "react", 1);
    return ev;
}

static const char *ev_mode(const json_t *ev)
{
    return json_string_value(json_object_get(ev, "mode"));
}

/* --search-mode: auto is hybrid on an index with vectors and bm25 on one
 * without, and the trace says which ran; dense finds passages for a query
 * no document shares a word with (BM25 finds none); an explicit dense
 * search on an index without vectors is refused. */
static void test_search_mode_follows_the_index_and_is_traced(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_error err;
    json_t *ev;
    char *obs;

    (void)state;
    CHECK(vec_dir[0] != '\0');
    script_start(&s, one_search);
    a = try_search_agent(&s, db_dir, MT_AGENT_SEARCH_AUTO, 0, NULL, &err);
    CHECK(a != NULL);
    ev = first_search(a, &s, &obs);
    CHECK(strcmp(ev_mode(ev), "bm25") == 0);
    CHECK(strstr(obs, "No passage matched the query.") != NULL);
    json_decref(ev);
    free(obs);
    mt_agent_close(a);
    script_stop(&s);

    script_start(&s, one_search);
    a = try_search_agent(&s, vec_dir, MT_AGENT_SEARCH_AUTO, 0, NULL, &err);
    CHECK(a != NULL);
    ev = first_search(a, &s, &obs);
    CHECK(strcmp(ev_mode(ev), "hybrid") == 0);
    CHECK(json_is_false(json_object_get(ev, "reranked")));
    json_decref(ev);
    free(obs);
    mt_agent_close(a);
    script_stop(&s);

    script_start(&s, one_search);
    a = try_search_agent(&s, vec_dir, MT_SEARCH_DENSE, 0, NULL, &err);
    CHECK(a != NULL);
    ev = first_search(a, &s, &obs);
    CHECK(strcmp(ev_mode(ev), "dense") == 0);
    CHECK(json_array_size(json_object_get(ev, "hits")) == 4);
    CHECK(strstr(obs, "[4] ") != NULL && strstr(obs, "No passage") == NULL);
    json_decref(ev);
    free(obs);
    mt_agent_close(a);
    script_stop(&s);

    script_start(&s, one_search);
    CHECK(try_search_agent(&s, db_dir, MT_SEARCH_HYBRID, 0, NULL, &err) ==
          NULL);
    CHECK(err.status == MT_EINVAL);
    CHECK(strstr(err.msg, "--search-mode hybrid needs vectors") != NULL);
    script_stop(&s);
}

/* --dims: Matryoshka truncation of the query must match the index's
 * vectors (32 of the embedder's 64 here): 0 takes the index's, another
 * number is refused naming both, and so are --dims on an index without
 * vectors and --dims with bm25. */
static void test_dims_truncate_queries_to_the_index(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_error err;

    (void)state;
    CHECK(vec_dir[0] != '\0');
    script_start(&s, one_search);
    a = try_search_agent(&s, vec_dir, MT_SEARCH_DENSE, 0, NULL, &err);
    CHECK(a != NULL); /* 64-dim queries cut to the index's 32 */
    mt_agent_close(a);
    a = try_search_agent(&s, vec_dir, MT_SEARCH_DENSE, 32, NULL, &err);
    CHECK(a != NULL);
    mt_agent_close(a);
    CHECK(try_search_agent(&s, vec_dir, MT_SEARCH_DENSE, 16, NULL, &err) ==
          NULL);
    CHECK(strstr(err.msg, "--dims 16 does not match") != NULL &&
          strstr(err.msg, "32 dimensions") != NULL);
    CHECK(try_search_agent(&s, vec_dir, MT_AGENT_SEARCH_AUTO, 16, NULL, &err) ==
          NULL);
    CHECK(try_search_agent(&s, db_dir, MT_AGENT_SEARCH_AUTO, 32, NULL, &err) ==
          NULL);
    CHECK(strstr(err.msg, "has no vectors") != NULL);
    CHECK(try_search_agent(&s, vec_dir, MT_SEARCH_BM25, 32, NULL, &err) ==
          NULL);
    CHECK(strstr(err.msg, "not bm25") != NULL);
    script_stop(&s);
}

/* The cross-encoder's top rerank_k of the documents' scores, as ids in
 * order (ties: the earlier document), into ids. */
static void cross_encoder_top(const char *query, size_t k, const char **ids)
{
    static const char *const doc_ids[] = {"G1", "G2", "G3", "G4"};
    static const char *const texts[] = {
        "Inferior STEMI needs emergency reperfusion by primary PCI.",
        "Aspirin loading dose is 300 mg chewed.",
        "Troponin rises three hours after myocardial injury.",
        "Patients with infarction are never discharged home from the "
        "emergency department.",
    };
    struct mt_str t[4];
    struct mt_reranker *rr = NULL;
    float sc[4];
    int used[4] = {0};
    size_t i, j;

    for (i = 0; i < 4; i++)
        t[i] = mtx_str_from(texts[i]);
    CHECK_OK(mt_reranker_open(rerank_spec, NULL, &rr, NULL));
    CHECK_OK(mt_reranker_score(rr, query, t, 4, sc, NULL));
    mt_reranker_close(rr);
    for (j = 0; j < k; j++) {
        size_t best = 4;

        for (i = 0; i < 4; i++)
            if (!used[i] && (best == 4 || sc[i] > sc[best]))
                best = i;
        used[best] = 1;
        ids[j] = doc_ids[best];
    }
}

/* Two stages: --retrieve-k 4 from the bi-encoder, the cross-encoder
 * (--reranker) keeps its own top --rerank-k 2, and the trace says the
 * hits were reranked. */
static void test_rerank_stage_keeps_the_cross_encoders_top(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_error err;
    const char *want[2];
    json_t *ev, *hits;
    char *obs;

    (void)state;
    CHECK(vec_dir[0] != '\0');
    cross_encoder_top("zzqx xylophone", 2, want);
    script_start(&s, one_search);
    a = try_search_agent(&s, vec_dir, MT_SEARCH_DENSE, 0, rerank_spec, &err);
    CHECK(a != NULL);
    ev = first_search(a, &s, &obs);
    hits = json_object_get(ev, "hits");
    CHECK(json_is_true(json_object_get(ev, "reranked")));
    CHECK(json_array_size(hits) == 2);
    CHECK(strcmp(json_string_value(json_array_get(hits, 0)), want[0]) == 0);
    CHECK(strcmp(json_string_value(json_array_get(hits, 1)), want[1]) == 0);
    CHECK(strstr(obs, "[2] ") != NULL && strstr(obs, "[3] ") == NULL);
    json_decref(ev);
    free(obs);
    mt_agent_close(a);
    script_stop(&s);
}

/* ==== The MedPrompt baseline: kNN few-shot ==== */

static char ex_path[128];

static const char ex_csv[] =
    "Text ID,Text,Sentences,Error Flag,Error Sentence ID,Corrected "
    "Sentence,Reasoning\n"
    "k-flu,Influenza spreads through droplets. Fever and cough last a "
    "week.,\"0 Influenza spreads through droplets.\n1 Fever and cough last "
    "a week.\",0,-1,NA,\n"
    "k-stemi,A 58-year-old woman has crushing chest pain. ECG shows ST "
    "elevation in II and aVF. She is sent home.,\"0 A 58-year-old woman has "
    "crushing chest pain.\n1 ECG shows ST elevation in II and aVF.\n2 She "
    "is sent home.\",1,2,She is taken for primary PCI.,Sending a STEMI home "
    "is the error.\n"
    "k-bone,A fracture of the femur needs surgery. Rehabilitation takes "
    "months.,\"0 A fracture of the femur needs surgery.\n1 Rehabilitation "
    "takes months.\",0,-1,NA,\n"
    "k-same,\"A 62-year-old man has crushing chest pain. ECG shows ST "
    "elevation in II, III and aVF. He is given aspirin and sent home.\","
    "\"0 The note itself.\",0,-1,NA,\n"
    "k-sun,Ultraviolet light reddens the skin. Sunscreen helps.,\"0 "
    "Ultraviolet light reddens the skin.\n1 Sunscreen helps.\",0,-1,NA,\n";

/* The training notes' order by cosine to the checked note, computed here
 * with the embedder itself (k-same, the note itself, left out). */
static void expected_order(const char **ids)
{
    static const char *const names[] = {"k-flu", "k-stemi", "k-bone", "k-sun"};
    static const char *const texts[] = {
        "Influenza spreads through droplets. Fever and cough last a week.",
        "A 58-year-old woman has crushing chest pain. ECG shows ST elevation "
        "in II and aVF. She is sent home.",
        "A fracture of the femur needs surgery. Rehabilitation takes months.",
        "Ultraviolet light reddens the skin. Sunscreen helps.",
    };
    struct mt_embedder *e = NULL;
    struct mt_str t[5];
    float *v;
    double sim[4];
    int used[4] = {0};
    uint32_t d, k;
    size_t i, j;

    CHECK_OK(mt_embedder_open("use-lite", NULL, &e, NULL));
    d = mt_embedder_dims(e);
    v = calloc(5 * d, sizeof *v);
    t[0] = mtx_str_from(script_note_text);
    for (i = 0; i < 4; i++)
        t[i + 1] = mtx_str_from(texts[i]);
    CHECK_OK(mt_embedder_embed(e, t, 5, v, NULL));
    for (i = 0; i < 4; i++)
        for (sim[i] = 0, k = 0; k < d; k++)
            sim[i] += (double)v[k] * (double)v[(i + 1) * d + k];
    for (j = 0; j < 4; j++) {
        size_t best = 4;

        for (i = 0; i < 4; i++)
            if (!used[i] && (best == 4 || sim[i] > sim[best]))
                best = i;
        used[best] = 1;
        ids[j] = names[best];
    }
    free(v);
    mt_embedder_close(e);
}

/* The first sentence of each training note, by id. */
static const char *ex_mark(const char *id)
{
    if (strcmp(id, "k-flu") == 0)
        return "0 | Influenza spreads";
    if (strcmp(id, "k-stemi") == 0)
        return "0 | A 58-year-old woman";
    if (strcmp(id, "k-bone") == 0)
        return "0 | A fracture of the femur";
    return "0 | Ultraviolet light";
}

static struct mt_agent *open_knn(const struct script *s, const char *path,
                                 const char *embedder, struct mt_error *err)
{
    struct mt_agent_params p;
    struct mt_agent *a = NULL;

    mt_agent_default_params(&p);
    p.strategy = MT_STRATEGY_SINGLE;
    p.llm_spec = s->spec;
    p.llm.max_retries = 0;
    p.examples_path = path;
    p.embedder_spec = embedder;
    p.max_few_shot = 3;
    if (mt_agent_open(&p, &a, err) != MT_OK)
        return NULL;
    return a;
}

/* MedPrompt (Nori et al.): the K training notes nearest to the note by
 * embedding, nearest first, each with its reasoning before its answer
 * when the file has a Reasoning column; the note itself is never its own
 * example; an evaluation split and a missing embedder are refused. */
static void test_single_takes_the_nearest_examples_in_order(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    struct mt_error err;
    const char *want[4];
    const char *sys, *at = NULL;
    json_t *reqs;
    char bad[160];
    FILE *f;
    size_t i;

    (void)state;
    snprintf(ex_path, sizeof ex_path, "%s/train.csv", tmpl);
    f = fopen(ex_path, "w");
    fputs(ex_csv, f);
    fclose(f);
    expected_order(want);
    CHECK(strcmp(want[0], "k-stemi") == 0); /* the chest-pain note */
    script_start(&s, "single answer 2 He is admitted.\n");
    a = open_knn(&s, ex_path, "use-lite", &err);
    CHECK(a != NULL);
    script_check_note(a, &r);
    reqs = script_requests(&s, "single");
    sys = script_msg(json_array_get(reqs, 0), "system");
    for (i = 0; i < 3; i++) {
        char head[32];
        const char *h, *m;

        snprintf(head, sizeof head, "Example %zu\n", i + 1);
        h = strstr(sys, head);
        m = strstr(sys, ex_mark(want[i]));
        CHECK(h && m && h < m && (!at || at < h));
        at = m;
    }
    CHECK(strstr(sys, ex_mark(want[3])) == NULL); /* K = 3 */
    CHECK(strstr(sys, "The note itself") == NULL);
    CHECK(strstr(sys, "Answer: {\"reasoning\":\"Sending a STEMI home is the "
                      "error.\",\"is_error\":true,\"sentence_id\":2") != NULL);
    CHECK(strstr(sys, "Answer: {\"is_error\":false") != NULL);
    CHECK(strstr(r.trace, "\"selection\":\"knn\"") != NULL);
    CHECK(strstr(r.trace, want[0]) < strstr(r.trace, want[1]));
    json_decref(reqs);
    mt_check_result_free(&r);
    mt_agent_close(a);

    CHECK(open_knn(&s, ex_path, NULL, &err) == NULL); /* no --db, no embedder */
    CHECK(strstr(err.msg, "there is no embedder") != NULL);
    snprintf(bad, sizeof bad, "%s/medec-test.csv", tmpl);
    CHECK(open_knn(&s, bad, "use-lite", &err) == NULL);
    CHECK(strstr(err.msg, "evaluation split") != NULL);
    script_stop(&s);
}

/* ==== MedGuards ==== */

/* Offset of "KEY" in a schema's text, or -1. */
static long key_at(const char *schema, const char *key)
{
    char q[64];
    const char *p;

    snprintf(q, sizeof q, "\"%s\"", key);
    p = schema ? strstr(schema, q) : NULL;
    return p ? (long)(p - schema) : -1;
}

/* Reasoning, then the decision, then the confidence: in the schema each
 * guards request carries (response_format here, a GBNF grammar for gguf
 * models, generated from the same schema in the same order), and the
 * arbiters read both agents' reasoning and confidence. */
static void test_guards_reason_first_and_arbiters_see_both(void **state)
{
    struct script s;
    struct mt_agent *a;
    struct mt_check_result r;
    json_t *reqs;
    char *t;
    size_t i;

    (void)state;
    script_start(
        &s, "guard_detect_1 {\"reasoning\":\"R1: STEMI needs PCI\","
            "\"verdict\":\"INCORRECT\",\"confidence\":0.9}\n"
            "guard_detect_2 {\"reasoning\":\"R2: looks routine\","
            "\"verdict\":\"CORRECT\",\"confidence\":0.35}\n"
            "guard_detect_arbiter {\"reasoning\":\"R1 is right\","
            "\"verdict\":\"INCORRECT\",\"confidence\":0.8}\n"
            "guard_locate_1 {\"reasoning\":\"L1: discharge\",\"sentence\":\"He "
            "is given aspirin and sent home.\",\"confidence\":0.7}\n"
            "guard_locate_2 {\"reasoning\":\"L2: the ECG\",\"sentence\":\"ECG "
            "shows ST elevation in II, III and aVF.\",\"confidence\":0.4}\n"
            "guard_locate_arbiter {\"reasoning\":\"L1 is right\",\"sentence\":"
            "\"He is given aspirin and sent home.\",\"confidence\":0.8}\n"
            "guard_correct {\"reasoning\":\"admit for PCI\",\"corrected_"
            "sentence\":\"He is given aspirin and sent for PCI.\","
            "\"confidence\":0.8}\n");
    a = open_agent(&s, MT_STRATEGY_GUARDS);
    script_check_note(a, &r);
    CHECK(r.error_flag == 1 && r.sentence_id == 2);
    reqs = script_requests(&s, NULL);
    CHECK(json_array_size(reqs) == 7);
    for (i = 0; i < json_array_size(reqs); i++) {
        json_t *rf =
            json_object_get(json_object_get(json_array_get(reqs, i), "request"),
                            "response_format");
        char *sc = json_dumps(
            json_object_get(json_object_get(rf, "json_schema"), "schema"),
            JSON_PRESERVE_ORDER);
        long rs = key_at(sc, "reasoning");
        long dec = key_at(sc, "verdict") >= 0 ? key_at(sc, "verdict")
                   : key_at(sc, "sentence") >= 0
                       ? key_at(sc, "sentence")
                       : key_at(sc, "corrected_sentence");

        CHECK(rs >= 0 && dec > rs && key_at(sc, "confidence") > dec);
        free(sc);
    }
    json_decref(reqs);
    t = script_nth_text(&s, "guard_detect_arbiter", 0);
    CHECK(strstr(t, "Reasoning: R1: STEMI needs PCI Verdict: INCORRECT. "
                    "Confidence: 0.90.") != NULL);
    CHECK(strstr(t, "Reasoning: R2: looks routine Verdict: CORRECT. "
                    "Confidence: 0.35.") != NULL);
    free(t);
    t = script_nth_text(&s, "guard_locate_arbiter", 0);
    CHECK(strstr(t, "L1: discharge") && strstr(t, "Confidence: 0.70."));
    CHECK(strstr(t, "L2: the ECG") && strstr(t, "Confidence: 0.40."));
    free(t);
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

/* Nothing of the answer disappears: the introduction and conclusion stay
 * as unreferenced sentences, in order. The uncited sentence between the
 * two claims goes to the left one, whose abstract holds a sentence equal
 * to it (dot product 1), although the right abstract, a single sentence,
 * is closer as a whole document (VerifAI attributes by sentence). */
static void test_answer_keeps_every_sentence_and_gaps_go_by_sentence(void **st)
{
    struct script s;
    struct mt_qa_params p;
    struct mt_qa *q = NULL;
    struct mt_qa_result *r = NULL;
    json_t *o;
    json_t *ss;
    char *js;

    (void)st;
    script_start(&s, "qa_answer Here is what we know. Statins help the heart "
                     "[PUBMED:11]. Statins lower LDL cholesterol levels. "
                     "Statin trials agree [PUBMED:22]. More work is needed.\n"
                     "qa_judge {\"label\":\"SUPPORT\",\"confidence\":0.9}\n");
    mt_qa_default_params(&p);
    p.db_dir = qa_dir;
    p.llm_spec = s.spec;
    p.embedder_spec = "none";
    p.llm.max_retries = 0;
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_NLI");
    CHECK_OK(mt_qa_open(&p, &q, NULL));
    CHECK_OK(
        mt_qa_ask(q, "statins cholesterol aspirin ulcer trials", &r, NULL));
    CHECK(r->nclaims == 2 && r->nsentences == 5);
    CHECK(strstr(r->claims[0].text, "Statins lower LDL cholesterol levels."));
    CHECK(strstr(r->claims[1].text, "LDL") == NULL);
    CHECK(r->sentences[0].claim == -1 && r->sentences[4].claim == -1);
    CHECK(r->sentences[1].claim == 0 && r->sentences[2].claim == 0);
    CHECK(r->sentences[3].claim == 1);
    /* links: a PMID goes to PubMed, a document with a url to it */
    CHECK(r->ndocs == 2);
    CHECK(strcmp(strcmp(r->docs[0].doc_id, "11") == 0 ? r->docs[0].url
                                                      : r->docs[1].url,
                 "https://pubmed.ncbi.nlm.nih.gov/11/") == 0);
    CHECK(strcmp(strcmp(r->docs[0].doc_id, "22") == 0 ? r->docs[0].url
                                                      : r->docs[1].url,
                 "https://example.org/t") == 0);
    js = mt_qa_result_json(r);
    o = json_loads(js, 0, NULL);
    ss = json_object_get(o, "sentences");
    CHECK(json_array_size(ss) == 5);
    CHECK(strcmp(json_string_value(
                     json_object_get(json_array_get(ss, 0), "status")),
                 "UNREFERENCED") == 0);
    CHECK(strcmp(
              json_string_value(json_object_get(json_array_get(ss, 4), "text")),
              "More work is needed.") == 0);
    CHECK(strcmp(json_string_value(
                     json_object_get(json_array_get(ss, 2), "status")),
                 "SUPPORT") == 0);
    json_decref(o);
    mt_free(js);
    mt_qa_result_free(r);
    mt_qa_close(q);
    script_stop(&s);
}

/* --attribution document (VerifAI's published verification.py): the same
 * answer as above, and the uncited sentence now goes to the right claim,
 * whose single-sentence abstract is closer as a whole document. */
static void test_answer_gaps_by_whole_document_as_published(void **st)
{
    struct script s;
    struct mt_qa_params p;
    struct mt_qa *q = NULL;
    struct mt_qa_result *r = NULL;

    (void)st;
    script_start(&s, "qa_answer Here is what we know. Statins help the heart "
                     "[PUBMED:11]. Statins lower LDL cholesterol levels. "
                     "Statin trials agree [PUBMED:22]. More work is needed.\n"
                     "qa_judge {\"label\":\"SUPPORT\",\"confidence\":0.9}\n");
    mt_qa_default_params(&p);
    p.db_dir = qa_dir;
    p.llm_spec = s.spec;
    p.embedder_spec = "none";
    p.llm.max_retries = 0;
    p.attribution = MT_QA_ATTRIB_DOCUMENT;
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_NLI");
    CHECK_OK(mt_qa_open(&p, &q, NULL));
    CHECK_OK(
        mt_qa_ask(q, "statins cholesterol aspirin ulcer trials", &r, NULL));
    CHECK(r->nclaims == 2 && r->nsentences == 5);
    CHECK(r->sentences[1].claim == 0 && r->sentences[2].claim == 1);
    CHECK(r->sentences[3].claim == 1);
    CHECK(strstr(r->claims[1].text, "Statins lower LDL cholesterol levels."));
    mt_qa_result_free(r);
    mt_qa_close(q);
    script_stop(&s);
}

/* Estimated tokens of a logged request's messages, as the client
 * estimates a prompt (model/llm.h). */
static uint32_t request_estimate(const json_t *rec)
{
    json_t *m = json_object_get(json_object_get(rec, "request"), "messages");
    uint32_t t = 0;
    size_t i;

    for (i = 0; i < json_array_size(m); i++) {
        const char *c =
            json_string_value(json_object_get(json_array_get(m, i), "content"));
        t += mtx_llm_estimate_tokens(c, strlen(c));
    }
    return t;
}

static int has_note(const struct mt_qa_result *r, const char *text)
{
    size_t i;

    for (i = 0; i < r->nnotes; i++)
        if (strstr(r->notes[i], text))
            return 1;
    return 0;
}

static struct mt_qa *open_qa(const struct script *s)
{
    struct mt_qa_params p;
    struct mt_qa *q = NULL;

    mt_qa_default_params(&p);
    p.db_dir = qa_dir;
    p.llm_spec = s->spec;
    p.embedder_spec = "none";
    p.llm.max_retries = 0;
    p.max_tokens = 64;
    unsetenv("MEDTRUST_LLM");
    unsetenv("MEDTRUST_NLI");
    CHECK_OK(mt_qa_open(&p, &q, NULL));
    return q;
}

/* An OpenAI-compatible server that cannot say its context (no /props)
 * refuses the first prompt with llama-server's context-length error: the
 * client reads the context from it, fits the documents to it (the last
 * cut at a sentence boundary or left out) and asks once more; the notes
 * and the result's "context" say what was shown. The refusal is not
 * repeated as is. */
static void test_ask_refits_once_after_a_context_refusal(void **st)
{
    static const char q_text[] = "statins cholesterol aspirin ulcer trials";
    char sc[1024];
    struct script s;
    struct mt_qa *q;
    struct mt_qa_result *r = NULL;
    json_t *reqs;
    uint32_t full;
    uint32_t ctx;
    char *js;

    (void)st;
    /* first the whole prompt, to know its size */
    script_start(&s, "qa_answer Statins help [PUBMED:22].\n"
                     "qa_judge {\"label\":\"SUPPORT\",\"confidence\":0.9}\n");
    q = open_qa(&s);
    CHECK_OK(mt_qa_ask(q, q_text, &r, NULL));
    CHECK(r->fit.ctx_tokens == 0 && r->fit.docs_shown == 2);
    reqs = script_requests(&s, "qa_answer");
    full = request_estimate(json_array_get(reqs, 0));
    json_decref(reqs);
    mt_qa_result_free(r);
    mt_qa_close(q);
    script_stop(&s);
    /* a context 20 tokens short of it with the answer's 64 */
    ctx = full + 64 + MTX_FIT_BASE_TOKENS + 2 * MTX_FIT_MSG_TOKENS - 20;
    snprintf(sc, sizeof sc,
             "qa_answer http 400 {\"error\":{\"code\":400,\"message\":"
             "\"request (%u tokens) exceeds the available context size (%u "
             "tokens), try increasing it\",\"type\":"
             "\"exceed_context_size_error\",\"n_prompt_tokens\":%u,"
             "\"n_ctx\":%u}}\n"
             "qa_answer Statins help [PUBMED:22].\n",
             full, ctx, full, ctx);
    script_start(&s, sc);
    q = open_qa(&s);
    /* the judge's context has no room for the cited document after its
     * claim, prompt and answer: that claim is never verified, and ask
     * says so (MT_EMODEL, the result kept) */
    CHECK(mt_qa_ask(q, q_text, &r, NULL) == MT_EMODEL && r);
    CHECK(r->nclaims == 1 && r->claims[0].nverdicts == 1);
    CHECK(strstr(r->claims[0].verdicts[0].error, "judge's context") != NULL);
    reqs = script_requests(&s, "qa_answer");
    CHECK(json_array_size(reqs) == 2); /* refused once, then fitted */
    CHECK(request_estimate(json_array_get(reqs, 1)) + 64 + MTX_FIT_BASE_TOKENS +
              2 * MTX_FIT_MSG_TOKENS <=
          ctx);
    CHECK(r->fit.ctx_tokens == ctx);
    CHECK(r->fit.docs_shown < 2 || r->fit.doc_cut);
    CHECK(r->fit.bytes_shown < r->fit.bytes);
    CHECK(strcmp(r->fit.counted, "estimate") == 0);
    CHECK(has_note(r, "refused the prompt as longer than its"));
    CHECK(has_note(r, "of 2 documents"));
    CHECK(has_note(r, "the rest were left out"));
    CHECK(strstr(r->answer, "Statins help") != NULL);
    js = mt_qa_result_json(r);
    CHECK(strstr(js, "\"context\":{\"ctx_tokens\":") != NULL);
    mt_free(js);
    json_decref(reqs);
    mt_qa_result_free(r);
    mt_qa_close(q);
    script_stop(&s);
}

/* mt_retriever_urls (one store handle for all hits: /v1/search) gives
 * each hit mt_retriever_url's link: a document's "url", PubMed's page for
 * a PMID; NULL for a chunk that is gone. */
static void test_retriever_urls_match_each_hits_own(void **st)
{
    struct mt_retriever_params rp;
    struct mt_search_params sp;
    struct mt_retriever *r = NULL;
    struct mt_search_result *res = NULL;
    struct mt_search_hit h[3];
    char *urls[3], *one = NULL;
    size_t i;

    (void)st;
    mt_retriever_default_params(&rp);
    rp.db_dir = qa_dir;
    rp.embedder_spec = "none";
    CHECK_OK(mt_retriever_open(&rp, &r, NULL));
    mt_search_default_params(&sp);
    sp.mode = MT_SEARCH_BM25;
    CHECK_OK(mt_retriever_search(r, "statins cholesterol", &sp, &res, NULL));
    CHECK(res->n == 2);
    memcpy(h, res->hits, 2 * sizeof *h);
    h[2] = h[0];
    h[2].chunk_id = 1000000; /* no such chunk */
    CHECK_OK(mt_retriever_urls(r, h, 3, urls, NULL));
    for (i = 0; i < 2; i++) {
        CHECK_OK(mt_retriever_url(r, &h[i], &one, NULL));
        CHECK(urls[i] && one && strcmp(urls[i], one) == 0);
        CHECK(strcmp(urls[i], strcmp(h[i].doc_id, "11") == 0
                                  ? "https://pubmed.ncbi.nlm.nih.gov/11/"
                                  : "https://example.org/t") == 0);
        mt_free(one);
        mt_free(urls[i]);
    }
    CHECK(urls[2] == NULL);
    CHECK(mt_retriever_url(r, &h[2], &one, NULL) == MT_ENOTFOUND);
    CHECK(one == NULL);
    CHECK_OK(mt_retriever_urls(r, h, 0, urls, NULL));
    mt_search_result_free(res);
    mt_retriever_close(r);
}

/* The retriever's remaining public calls on a BM25-only store: a hit's
 * document metadata (its "url" kept), a chunk that does not exist, and
 * the refusals that say what is missing: no reranker, no embedder, dense
 * and hybrid search on an index without vectors (naming the mode and the
 * command that builds them). */
static void test_retriever_metadata_and_refusals(void **st)
{
    static const enum mt_search_mode modes[] = {MT_SEARCH_DENSE,
                                                MT_SEARCH_HYBRID};
    struct mt_retriever_params rp;
    struct mt_search_params sp;
    struct mt_retriever *r = NULL;
    struct mt_search_result *res = NULL;
    struct mt_error e = {MT_OK, ""};
    struct mt_str t = {"statins", 7};
    char *json = NULL;
    float f[4];
    size_t i;

    (void)st;
    mt_retriever_default_params(&rp);
    rp.db_dir = qa_dir;
    rp.embedder_spec = "none";
    CHECK_OK(mt_retriever_open(&rp, &r, NULL));
    CHECK_OK(mt_retriever_check(r, NULL));
    mt_search_default_params(&sp);
    sp.mode = MT_SEARCH_BM25;
    CHECK_OK(
        mt_retriever_search(r, "statins cholesterol trials", &sp, &res, NULL));
    CHECK(res->n >= 1 && strcmp(res->hits[0].doc_id, "22") == 0);
    CHECK_OK(mt_retriever_metadata(r, res->hits[0].chunk_id, &json, NULL));
    CHECK(json && strstr(json, "\"url\":\"https://example.org/t\""));
    mt_free(json);
    json = NULL;
    CHECK(mt_retriever_metadata(r, 1000000, &json, NULL) == MT_ENOTFOUND);
    CHECK(json == NULL);
    mt_search_result_free(res);
    CHECK(!mt_retriever_has_reranker(r));
    CHECK(mt_retriever_rerank(r, "q", &t, 1, f, &e) == MT_EINVAL);
    CHECK(strstr(e.msg, "no reranker"));
    CHECK(mt_retriever_dims(r) == 0 && !mt_retriever_has_vectors(r));
    CHECK(mt_retriever_embed(r, &t, 1, f, &e) == MT_EINVAL);
    for (i = 0; i < 2; i++) {
        res = NULL;
        sp.mode = modes[i];
        CHECK(mt_retriever_search(r, "statins", &sp, &res, &e) == MT_EINVAL);
        CHECK(res == NULL);
        CHECK(strstr(e.msg, mt_search_mode_str(modes[i])) &&
              strstr(e.msg, "--embedder use-lite"));
    }
    mt_retriever_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_plays_queues_and_records_requests),
        cmocka_unit_test(test_retriever_metadata_and_refusals),
        cmocka_unit_test(
            test_both_judges_read_claim_and_evidence_the_right_way),
        cmocka_unit_test(test_react_searches_n_times_then_reflects),
        cmocka_unit_test(test_react_concludes_no_error_after_m_rounds),
        cmocka_unit_test(test_medeval_rejects_what_the_published_rule_accepted),
        cmocka_unit_test(test_evidence_budget_drops_oldest_passages),
        cmocka_unit_test(test_parser_formats_but_never_decides),
        cmocka_unit_test(test_react_without_corpus_needs_no_retrieval),
        cmocka_unit_test(test_source_filter_reaches_search),
        cmocka_unit_test(test_search_mode_follows_the_index_and_is_traced),
        cmocka_unit_test(test_dims_truncate_queries_to_the_index),
        cmocka_unit_test(test_rerank_stage_keeps_the_cross_encoders_top),
        cmocka_unit_test(test_single_takes_the_nearest_examples_in_order),
        cmocka_unit_test(test_guards_reason_first_and_arbiters_see_both),
        cmocka_unit_test(
            test_answer_keeps_every_sentence_and_gaps_go_by_sentence),
        cmocka_unit_test(test_answer_gaps_by_whole_document_as_published),
        cmocka_unit_test(test_retriever_urls_match_each_hits_own),
        cmocka_unit_test(test_ask_refits_once_after_a_context_refusal),
    };

    mtx_jsonl_init_alloc();
    return cmocka_run_group_tests(tests, make_db, remove_db);
}
