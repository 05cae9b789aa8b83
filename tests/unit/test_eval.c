/* Unit tests for src/eval: submission and reference readers, accuracies,
 * NA rules, KPCS, BLEURT scores, BERTScore math, bootstrap determinism,
 * retrieval metrics, JSON and the report. Texts are written for the tests;
 * the MedErrBench keyword fraction is measured on the real data. */
#include "check.h"

#include <math.h>
#include <unistd.h>

#include "eval/eval_int.h" /* mtx_rouge_score_r1: KPCS's own ROUGE-1 */
#include "medtrust/core.h"
#include "medtrust/eval.h"

#define EPS 1e-12

static const char ref_csv[] =
    "Text ID,Text,Error Flag,Error Type,Error Sentence ID,Corrected "
    "Sentence,Important Words,Difficulty,Reasoning Type\n"
    "en-t-0,x,1,Diagnosis,2,The patient has gout.,gout,Hard,Multi-hop\n"
    "en-t-1,x,0,NA,-1,NA,NA,Easy,Single-hop\n"
    "en-t-2,x,1,Management,1,\"Start aspirin, then review.\",aspirin,Hard,"
    "Multi-hop\n"
    "en-t-3,x,0,NA,-1,,NA,Medium,Single-hop\n";

static struct mt_eval_ref *load_ref(void)
{
    struct mt_eval_ref *r = NULL;

    CHECK_OK(
        mt_eval_ref_load_mem("ref.csv", ref_csv, sizeof ref_csv - 1, &r, NULL));
    return r;
}

static struct mt_eval_sub *parse(const char *text, enum mt_status want,
                                 struct mt_error *err)
{
    struct mt_eval_sub *s = NULL;

    CHECK(mt_eval_sub_parse("run.txt", text, strlen(text), &s, err) == want);
    return s;
}

static int has_diag(const struct mt_eval_sub *s, const char *needle)
{
    size_t i;

    for (i = 0; i < mt_eval_sub_ndiag(s); i++)
        if (strstr(mt_eval_sub_diag(s, i), needle))
            return 1;
    return 0;
}

/* ==== Submission reader ==== */

static void test_sub_parses_official_format(void **state)
{
    struct mt_eval_sub *s = parse("en-t-0 1 2 \"The  patient\thas gout.\"\n"
                                  "en-t-1 0 -1 anything here\n",
                                  MT_OK, NULL);
    const struct mt_eval_pred *p = mt_eval_sub_pred(s, 0);
    (void)state;
    CHECK(mt_eval_sub_count(s) == 2);
    CHECK(strcmp(p->id, "en-t-0") == 0 && strcmp(p->flag, "1") == 0);
    CHECK(strcmp(p->sentence_id, "2") == 0);
    /* tokens joined by single spaces, outer quotes stripped */
    CHECK(strcmp(p->correction, "The patient has gout.") == 0);
    /* flag 0 forces NA */
    CHECK(strcmp(mt_eval_sub_pred(s, 1)->correction, "NA") == 0);
    mt_eval_sub_free(s);
}

static void test_sub_quote_stripping_keeps_one_char(void **state)
{
    struct mt_eval_sub *s = parse("a 1 0 \"\"\"\nb 1 0 \"x\"\"\n", MT_OK, NULL);
    (void)state;
    CHECK(strcmp(mt_eval_sub_pred(s, 0)->correction, "\"") == 0);
    CHECK(strcmp(mt_eval_sub_pred(s, 1)->correction, "x") == 0);
    mt_eval_sub_free(s);
}

static void test_sub_invalid_lines_reported_and_skipped(void **state)
{
    struct mt_eval_sub *s = parse("EN-T-0 1 2 upper case id\n"
                                  "en-t-1 1 x bad sentence id\n"
                                  "en-t-2  1 2 two spaces\n"
                                  "en-t-3 1 2\n"
                                  "\n"
                                  "en-t-4 1 -1 fine\n",
                                  MT_OK, NULL);
    (void)state;
    CHECK(mt_eval_sub_count(s) == 1);
    CHECK(mt_eval_sub_invalid(s) == 4);
    CHECK(has_diag(s, "run.txt:1: invalid line"));
    CHECK(has_diag(s, "run.txt:2: invalid line"));
    CHECK(has_diag(s, "run.txt:3: invalid line"));
    CHECK(has_diag(s, "run.txt:4: invalid line skipped (missing corrected"));
    mt_eval_sub_free(s);
}

static void test_sub_duplicate_keeps_last_with_message(void **state)
{
    struct mt_eval_sub *s = parse("a 1 0 first\na 1 3 second\n", MT_OK, NULL);
    (void)state;
    CHECK(mt_eval_sub_count(s) == 1);
    CHECK(strcmp(mt_eval_sub_pred(s, 0)->correction, "second") == 0);
    CHECK(has_diag(s, "run.txt:2: duplicate id 'a' (first on line 1)"));
    mt_eval_sub_free(s);
}

static void test_sub_bom_crlf_noted(void **state)
{
    struct mt_eval_sub *s = parse("\xef\xbb\xbf"
                                  "a 1 0 x\r\nb 0 -1 NA\r\n",
                                  MT_OK, NULL);
    (void)state;
    CHECK(mt_eval_sub_count(s) == 2);
    CHECK(strcmp(mt_eval_sub_pred(s, 0)->correction, "x") == 0);
    CHECK(has_diag(s, "byte order mark"));
    CHECK(has_diag(s, "CRLF"));
    mt_eval_sub_free(s);
}

static void test_sub_empty_or_all_invalid_fails(void **state)
{
    struct mt_error err;
    (void)state;
    CHECK(parse("", MT_EPARSE, &err) == NULL);
    CHECK(strstr(err.msg, "empty submission") != NULL);
    CHECK(parse("nothing valid\n", MT_EPARSE, &err) == NULL);
    CHECK(strstr(err.msg, "no valid line") != NULL);
}

/* ==== Reference reader ==== */

static void test_ref_reads_columns_and_na(void **state)
{
    struct mt_eval_ref *r = load_ref();
    const struct mt_eval_note *n;
    (void)state;
    CHECK(mt_eval_ref_count(r) == 4);
    CHECK(mt_eval_ref_has_keywords(r));
    n = mt_eval_ref_note(r, 2);
    CHECK(strcmp(n->correction, "Start aspirin, then review.") == 0);
    CHECK(strcmp(n->language, "EN") == 0);
    CHECK(strcmp(n->difficulty, "Hard") == 0);
    /* an empty correction is NaN to pandas, hence NA */
    CHECK(strcmp(mt_eval_ref_note(r, 3)->correction, "NA") == 0);
    CHECK(mt_eval_ref_find(r, "en-t-1") == 1);
    mt_eval_ref_free(r);
}

static void test_ref_missing_columns_named(void **state)
{
    static const char bad[] = "Text ID,Text,Error Sentence ID\na,x,1\n";
    struct mt_eval_ref *r = NULL;
    struct mt_error err;
    (void)state;
    CHECK(mt_eval_ref_load_mem("bad.csv", bad, sizeof bad - 1, &r, &err) ==
          MT_EPARSE);
    CHECK(r == NULL);
    CHECK(strstr(err.msg, "bad.csv: missing column(s): Error Flag, "
                          "Corrected Sentence") != NULL);
}

/* mt_eval_ref_keep (score --only-predicted): the kept notes in order,
 * found by id at their new index, the others gone. */
static int keep_odd(const struct mt_eval_note *n, void *user)
{
    (void)user;
    return n->id[5] == '1' || n->id[5] == '3';
}

static int keep_none(const struct mt_eval_note *n, void *user)
{
    (void)n;
    (void)user;
    return 0;
}

static void test_ref_keep_subset(void **state)
{
    struct mt_eval_ref *r = load_ref();

    (void)state;
    CHECK_OK(mt_eval_ref_keep(r, keep_odd, NULL, NULL));
    CHECK(mt_eval_ref_count(r) == 2);
    CHECK(strcmp(mt_eval_ref_note(r, 0)->id, "en-t-1") == 0);
    CHECK(strcmp(mt_eval_ref_note(r, 1)->id, "en-t-3") == 0);
    CHECK(strcmp(mt_eval_ref_note(r, 1)->correction, "NA") == 0);
    CHECK(mt_eval_ref_find(r, "en-t-3") == 1);
    CHECK(mt_eval_ref_find(r, "en-t-1") == 0);
    CHECK(mt_eval_ref_find(r, "en-t-0") == -1);
    CHECK(mt_eval_ref_find(r, "en-t-2") == -1);
    CHECK_OK(mt_eval_ref_keep(r, keep_none, NULL, NULL));
    CHECK(mt_eval_ref_count(r) == 0 && mt_eval_ref_find(r, "en-t-1") == -1);
    mt_eval_ref_free(r);
}

static void test_ref_real_files_have_columns(void **state)
{
    static const char *const files[] = {
        "medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv",
        "mederrbench/test/reviewed_data_EN_test.csv",
        "mederrbench/test/reviewed_data_CN_test.csv",
        "mederrbench/validation/reviewed_data_ARA_validation.csv",
    };
    static const size_t counts[] = {574, 208, 200, 51};
    char path[1024];
    size_t i;
    (void)state;
    for (i = 0; i < 4; i++) {
        struct mt_eval_ref *r = NULL;
        CHECK_OK(mt_eval_ref_load(test_data_path(path, sizeof path, files[i]),
                                  &r, NULL));
        CHECK(mt_eval_ref_count(r) == counts[i]);
        CHECK(mt_eval_ref_has_keywords(r) == (i > 0));
        mt_eval_ref_free(r);
    }
}

/* ==== Scoring ==== */

static struct mt_eval_result *score(const char *sub_text,
                                    const struct mt_eval_params *p)
{
    struct mt_eval_ref *r = load_ref();
    struct mt_eval_sub *s = parse(sub_text, MT_OK, NULL);
    struct mt_eval_result *res = NULL;

    CHECK_OK(mt_eval_score(r, s, p, &res, NULL));
    mt_eval_sub_free(s);
    mt_eval_ref_free(r);
    return res;
}

static void test_score_accuracy_over_all_notes(void **state)
{
    /* Notes: 0 right flag+sentence, 1 right (-1 == -1), 2 missing, 3 wrong
     * flag. Flag accuracy 2/4, sentence accuracy 2/4; unknown id ignored. */
    struct mt_eval_result *r = score("en-t-0 1 2 The patient has gout.\n"
                                     "en-t-1 0 -1 NA\n"
                                     "en-t-3 1 4 Something else.\n"
                                     "zz-9 1 1 unknown\n",
                                     NULL);
    (void)state;
    CHECK(r->notes == 4 && r->predicted == 3 && r->unknown_ids == 1);
    CHECK(fabs(r->flag_acc - 0.5) < EPS && fabs(r->sent_acc - 0.5) < EPS);
    CHECK(r->per_note[2].kind == MT_EVAL_PAIR_MISSING);
    CHECK(r->per_note[1].kind == MT_EVAL_PAIR_BOTH_NA);
    CHECK(r->per_note[3].kind == MT_EVAL_PAIR_ONE_NA);
    CHECK(r->nwarnings == 1 && strstr(r->warnings[0], "zz-9"));
    mt_eval_result_free(r);
}

static void test_score_composite_and_pairs_mean(void **state)
{
    /* Note 0 identical: R1 = 2/(2+1e-8); note 1 both NA: 1; notes 2 and 3
     * missing: 0. Composite = (R1 + 1) / 4; pairs mean = R1. */
    double r1 = 2.0 / (2.0 + 1e-8);
    struct mt_eval_result *r = score("en-t-0 1 2 The patient has gout.\n"
                                     "en-t-1 0 -1 NA\n",
                                     NULL);
    (void)state;
    CHECK(r->pairs == 1);
    CHECK(fabs(r->composite[MT_EVAL_ROUGE1] - (r1 + 1.0) / 4.0) < EPS);
    CHECK(fabs(r->pairs_mean[MT_EVAL_ROUGE1] - r1) < EPS);
    CHECK(fabs(r->composite[MT_EVAL_AGGREGATE] - (r1 + 1.0) / 4.0) < EPS);
    /* not computed: absent, never 0 */
    CHECK(isnan(r->composite[MT_EVAL_BERTSCORE]));
    CHECK(isnan(r->composite[MT_EVAL_BLEURT]));
    CHECK(!(r->metrics & (1u << MT_EVAL_BLEURT)));
    mt_eval_result_free(r);
}

static void test_score_kpcs_exact_and_normalized(void **state)
{
    /* Note 0: keyword "gout" present, identical text: kpcs = 0.5 + 0.5 *
     * 1 (MedGuards' ROUGE-1, rouge_score's, is exactly 1 here, where the
     * MEDIQA-CORR one is 2/(2+1e-8)). Note 2: keyword "aspirin" absent
     * ("Aspirin"): 0 exact; with normalized matching 0.5 + 0.5 *
     * R1(pred, gold) of rouge_score. Note 1 both NA: 1, once. */
    struct mt_eval_params p;
    double r1 = 1.0;
    const char *sub = "en-t-0 1 2 The patient has gout.\n"
                      "en-t-1 0 -1 NA\n"
                      "en-t-2 1 1 Start Aspirin, then review.\n";
    struct mt_eval_result *r = score(sub, NULL);
    double pair2 = -1; /* against the gold "Start aspirin, then review." */
    (void)state;
    CHECK_OK(mtx_rouge_score_r1("Start Aspirin, then review.", 27,
                                "Start aspirin, then review.", 27, &pair2));
    /* lower-cased tokens: 1, where the case-keeping MEDIQA-CORR one is not */
    CHECK(pair2 == 1.0 && r->per_note[2].m[MT_EVAL_ROUGE1] < 0.9);
    CHECK(r->per_note[0].kw == 1 && r->per_note[2].kw == 0);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_KPCS] - (0.5 + 0.5 * r1)) < EPS);
    CHECK(r->per_note[2].m[MT_EVAL_KPCS] == 0.0);
    CHECK(r->per_note[1].m[MT_EVAL_KPCS] == 1.0);
    CHECK(fabs(r->composite[MT_EVAL_KPCS] - (0.5 + 0.5 * r1 + 1.0) / 4.0) <
          EPS);
    mt_eval_result_free(r);
    mt_eval_default_params(&p);
    p.kpcs_match = MT_EVAL_KW_NORMALIZED;
    p.kpcs_alpha = 0.25;
    r = score(sub, &p);
    CHECK(r->per_note[2].kw == 1);
    CHECK(fabs(r->per_note[2].m[MT_EVAL_KPCS] - (0.25 + 0.75 * pair2)) < EPS);
    mt_eval_result_free(r);
}

/* MedGuards' own keyword files spell the column "important words"; an
 * error note with an empty keyword cell has no KPCS gate and is left out
 * of KPCS's mean (counted in kpcs_no_keywords), never passed. */
static void test_score_kpcs_header_case_and_empty_keywords(void **state)
{
    static const char ref[] =
        "text id,Text,error flag,Error Type,Error Sentence ID,Corrected "
        "Sentence,important words\n"
        "en-k-0,x,1,Diagnosis,2,The patient has gout.,gout\n"
        "en-k-1,x,1,Diagnosis,1,The patient has gout.,  \n"
        "en-k-2,x,0,NA,-1,NA,NA\n";
    double r1 = 2.0 / (2.0 + 1e-8);
    double kr1 = 1.0; /* rouge_score's ROUGE-1 of identical text */
    struct mt_eval_ref *rf = NULL;
    struct mt_eval_sub *sb;
    struct mt_eval_result *r = NULL;

    (void)state;
    CHECK_OK(mt_eval_ref_load_mem("k.csv", ref, sizeof ref - 1, &rf, NULL));
    CHECK(mt_eval_ref_has_keywords(rf));
    sb = parse("en-k-0 1 2 The patient has gout.\n"
               "en-k-1 1 1 The patient has gout.\n"
               "en-k-2 0 -1 NA\n",
               MT_OK, NULL);
    CHECK_OK(mt_eval_score(rf, sb, NULL, &r, NULL));
    CHECK(r->metrics & (1u << MT_EVAL_KPCS));
    CHECK(r->per_note[0].kw == 1 && r->per_note[1].kw == -2);
    CHECK(r->kpcs_no_keywords == 1);
    CHECK(fabs(r->composite[MT_EVAL_KPCS] - (0.5 + 0.5 * kr1 + 1.0) / 2.0) <
          EPS);
    /* the other metrics still score all three notes */
    CHECK(fabs(r->composite[MT_EVAL_ROUGE1] - (2 * r1 + 1.0) / 3.0) < EPS);
    CHECK(r->nwarnings == 1 && strstr(r->warnings[0], "no KPCS gate"));
    mt_eval_result_free(r);
    mt_eval_sub_free(sb);
    mt_eval_ref_free(rf);
}

static void test_score_bleurt_from_file(void **state)
{
    char path[] = "/tmp/mt_bleurt_XXXXXX";
    int fd = mkstemp(path);
    struct mt_eval_scores *bl = NULL;
    struct mt_eval_params p;
    struct mt_eval_result *r;
    double r1 = 2.0 / (2.0 + 1e-8);
    FILE *f = fdopen(fd, "w");
    (void)state;
    fputs("id score\nen-t-0 1.4\nen-t-2\t-0.3\n", f);
    fclose(f);
    CHECK_OK(mt_eval_scores_load(path, &bl, NULL));
    unlink(path);
    mt_eval_default_params(&p);
    p.bleurt = bl;
    r = score("en-t-0 1 2 The patient has gout.\n", &p);
    /* BLEURT 1.4 clipped to 1; aggregate = mean(R1, 1) */
    CHECK(r->per_note[0].m[MT_EVAL_BLEURT] == 1.0);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_AGGREGATE] - (r1 + 1.0) / 2) < EPS);
    CHECK(r->metrics & (1u << MT_EVAL_BLEURT));
    mt_eval_result_free(r);
    mt_eval_scores_free(bl);
}

/* BERTScore from the official run's per-pair file, with BLEURT: the
 * aggregate is the mean of ROUGE-1, BERTScore and BLEURT; a scored note
 * without a BERTScore line fails naming it. */
static void test_score_bertscore_from_file(void **state)
{
    char path[] = "/tmp/mt_bert_XXXXXX";
    int fd = mkstemp(path);
    struct mt_eval_scores *bs = NULL;
    struct mt_eval_params p;
    struct mt_eval_result *r;
    struct mt_error err;
    double r1 = 2.0 / (2.0 + 1e-8);
    FILE *f = fdopen(fd, "w");
    (void)state;
    fputs("en-t-0 0.6\n", f);
    fclose(f);
    CHECK_OK(mt_eval_scores_load(path, &bs, NULL));
    unlink(path);
    mt_eval_default_params(&p);
    p.bertscore = bs;
    r = score("en-t-0 1 2 The patient has gout.\n", &p);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_BERTSCORE] - 0.6) < EPS);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_AGGREGATE] - (r1 + 0.6) / 2) < EPS);
    CHECK(r->metrics & (1u << MT_EVAL_BERTSCORE));
    CHECK(r->bert_file && strcmp(r->bert_model, "per-pair scores file") == 0);
    mt_eval_result_free(r);
    r = NULL;
    {
        struct mt_eval_ref *ref = load_ref();
        struct mt_eval_sub *sb =
            parse("en-t-2 1 2 Start warfarin, then review.\n", MT_OK, NULL);
        CHECK(mt_eval_score(ref, sb, &p, &r, &err) == MT_EPARSE);
        CHECK(strstr(err.msg, "BERTScore scores: no score for 'en-t-2'"));
        mt_eval_sub_free(sb);
        mt_eval_ref_free(ref);
    }
    mt_eval_scores_free(bs);
}

static void test_score_unscorable_prediction_warns(void **state)
{
    struct mt_eval_result *r = score("en-t-0 1 2 ...\n", NULL);
    (void)state;
    CHECK(r->per_note[0].kind == MT_EVAL_PAIR_SCORED);
    CHECK(r->per_note[0].m[MT_EVAL_ROUGE1] == 0.0);
    CHECK(r->nwarnings == 1 && strstr(r->warnings[0], "no text for ROUGE"));
    mt_eval_result_free(r);
}

static void test_score_json_has_keys_and_no_absent_metric(void **state)
{
    struct mt_eval_ref *ref = load_ref();
    struct mt_eval_sub *s =
        parse("en-t-0 1 2 The patient has gout.\n", MT_OK, NULL);
    struct mt_eval_result *r = NULL;
    char *js = NULL;
    (void)state;
    CHECK_OK(mt_eval_score(ref, s, NULL, &r, NULL));
    CHECK_OK(mt_eval_result_json(r, ref, "run.txt", &js, NULL));
    CHECK(strstr(js, "\"notes\":4") && strstr(js, "\"predicted\":1"));
    CHECK(strstr(js, "\"invalid_lines\":0"));
    CHECK(strstr(js, "\"error_flag_accuracy\":0.25"));
    CHECK(strstr(js, "\"metrics_used\":[\"rouge1\",\"rouge2\",\"rougeL\","
                     "\"aggregate\",\"kpcs\"]"));
    CHECK(strstr(js, "\"breakdown\":{\"error_type\":{\"Diagnosis\""));
    CHECK(strstr(js, "\"difficulty\":{\"Hard\""));
    CHECK(strstr(js, "\"reasoning_type\":{\"Multi-hop\""));
    CHECK(strstr(js, "\"language\":{\"EN\""));
    CHECK(!strstr(js, "bertscore") && !strstr(js, "bleurt"));
    mt_free(js);
    mt_eval_result_free(r);
    mt_eval_sub_free(s);
    mt_eval_ref_free(ref);
}

/* ==== Keyword verbatim fraction on MedErrBench EN (real data) ==== */

static void test_mederrbench_en_keyword_verbatim_fraction(void **state)
{
    /* Gold corrections against their own Important Words: exact substring
     * in 48 of 104 error notes of the EN test split (46%), 97 of 104 when
     * case and whitespace are normalised. */
    char path[1024];
    struct mt_eval_ref *r = NULL;
    size_t i, n = 0, exact = 0;
    (void)state;
    CHECK_OK(mt_eval_ref_load(
        test_data_path(path, sizeof path,
                       "mederrbench/test/reviewed_data_EN_test.csv"),
        &r, NULL));
    for (i = 0; i < mt_eval_ref_count(r); i++) {
        const struct mt_eval_note *no = mt_eval_ref_note(r, i);
        if (strcmp(no->flag, "1") != 0)
            continue;
        n++;
        exact += strstr(no->correction, no->keywords) != NULL;
    }
    print_message("MedErrBench EN test: keyword verbatim in %zu of %zu gold "
                  "corrections\n",
                  exact, n);
    CHECK(n == 104 && exact == 48);
    mt_eval_ref_free(r);
}

/* ==== BERTScore ==== */

static void test_bertscore_greedy_hand_worked(void **state)
{
    /* cand tokens e1, e2; ref tokens e1, (e1+e2)/sqrt2. cos(e1,e1)=1,
     * cos(e2,(e1+e2)/sqrt2)=1/sqrt2. P = (1 + 1/sqrt2)/2; R: ref e1 -> 1,
     * ref (e1+e2) -> best 1/sqrt2: R = P. */
    static const float cand[] = {1, 0, 0, 1};
    static const float ref[] = {1, 0, 1, 1};
    static const double base[] = {0.5, 0.5, 0.5};
    struct mt_bertscore s;
    double p = (1.0 + 1.0 / sqrt(2.0)) / 2.0;
    (void)state;
    CHECK_OK(mt_bertscore_greedy(cand, 2, ref, 2, 2, NULL, NULL, NULL, &s));
    CHECK(fabs(s.p - p) < 1e-9 && fabs(s.r - p) < 1e-9);
    CHECK(fabs(s.f - p) < 1e-9);
    /* rescaled: (x - 0.5) / 0.5 */
    CHECK_OK(mt_bertscore_greedy(cand, 2, ref, 2, 2, NULL, NULL, base, &s));
    CHECK(fabs(s.f - (p - 0.5) / 0.5) < 1e-9);
    CHECK(mt_bertscore_greedy(cand, 0, ref, 2, 2, NULL, NULL, NULL, &s) ==
          MT_EINVAL);
}

static void test_bertscore_idf_weights(void **state)
{
    /* idf over 2 references {1,2} and {1,3}: idf(1) = ln(3/3) = 0,
     * idf(2) = ln(3/2), unseen ln(3). Weighted P with cand weights (0, w):
     * only the second token counts. */
    static const int32_t a[] = {1, 2, 2};
    static const int32_t b[] = {1, 3};
    const int32_t *ids[] = {a, b};
    size_t nids[] = {3, 2};
    struct mt_idf *t = NULL;
    static const float cand[] = {1, 0, 0, 1};
    static const float ref[] = {1, 0};
    double w[2];
    struct mt_bertscore s;
    (void)state;
    CHECK_OK(mt_idf_build(ids, nids, 2, &t));
    CHECK(fabs(mt_idf_get(t, 1)) < 1e-12);
    CHECK(fabs(mt_idf_get(t, 2) - log(1.5)) < 1e-12);
    CHECK(fabs(mt_idf_get(t, 9) - log(3.0)) < 1e-12);
    w[0] = mt_idf_get(t, 1);
    w[1] = mt_idf_get(t, 2);
    CHECK_OK(mt_bertscore_greedy(cand, 2, ref, 1, 2, w, NULL, NULL, &s));
    CHECK(fabs(s.p - 0.0) < 1e-12); /* token 2 matches nothing: cos 0 */
    CHECK(fabs(s.r - 1.0) < 1e-12);
    mt_idf_free(t);
}

/* A fake encoder for the score tests: one token a word, id = first byte,
 * a one-hot row at id % 8 (distinct letters are orthogonal). */
static enum mt_status fake_encode(void *user, const char *text, size_t n,
                                  float **vecs, int32_t **ids, size_t *ntok,
                                  size_t *dim, struct mt_error *err)
{
    size_t i, k = 0;
    (void)user;
    (void)err;
    *vecs = mt_calloc(n * 8 + 8, sizeof **vecs);
    *ids = mt_calloc(n + 1, sizeof **ids);
    if (!*vecs || !*ids)
        return MT_ENOMEM;
    for (i = 0; i < n; i++) {
        if (text[i] == ' ' || (i > 0 && text[i - 1] != ' '))
            continue;
        (*ids)[k] = (unsigned char)text[i];
        (*vecs)[k * 8 + (size_t)(*ids)[k] % 8] = 1.0f;
        k++;
    }
    *ntok = k;
    *dim = 8;
    return MT_OK;
}

static const char bert_csv[] =
    "Text ID,Text,Error Flag,Error Type,Error Sentence ID,Corrected "
    "Sentence,Important Words\n"
    "b-0,x,1,Diagnosis,1,a b,a\n"
    "b-1,x,1,Diagnosis,1,a c,a\n"
    "b-2,x,0,NA,-1,NA,NA\n";

static struct mt_eval_result *score_fake(int idf, const double *base)
{
    static const char run[] = "b-0 1 1 a d\nb-1 1 1 a c\nb-2 0 -1 NA\n";
    struct mt_token_encoder te = {"fake", fake_encode, NULL, 0, 0};
    struct mt_eval_params p;
    struct mt_eval_ref *r = NULL;
    struct mt_eval_sub *s = parse(run, MT_OK, NULL);
    struct mt_eval_result *res = NULL;

    CHECK_OK(
        mt_eval_ref_load_mem("b.csv", bert_csv, sizeof bert_csv - 1, &r, NULL));
    mt_eval_default_params(&p);
    p.bert = &te;
    p.bert_idf = idf;
    p.bert_base = base;
    CHECK_OK(mt_eval_score(r, s, &p, &res, NULL));
    mt_eval_ref_free(r);
    mt_eval_sub_free(s);
    return res;
}

static void test_score_bertscore_enters_aggregate_and_kpcs(void **state)
{
    /* b-0 "a d" vs "a b": P = (1 + 0)/2, R = (1 + 0)/2, F = 0.5; b-1
     * identical: 1; b-2 NA/NA: 1. Composite (0.5 + 1 + 1) / 3. */
    struct mt_eval_result *r = score_fake(0, NULL);
    const double *m0 = r->per_note[0].m;
    (void)state;
    CHECK(fabs(m0[MT_EVAL_BERTSCORE] - 0.5) < EPS);
    CHECK(fabs(r->composite[MT_EVAL_BERTSCORE] - 2.5 / 3.0) < EPS);
    CHECK(fabs(m0[MT_EVAL_AGGREGATE] -
               (m0[MT_EVAL_ROUGE1] + m0[MT_EVAL_BERTSCORE]) / 2.0) < EPS);
    /* KPCS's ROUGE-1 is rouge_score's: "a d" vs "a b" gives 0.5 exactly */
    CHECK(fabs(m0[MT_EVAL_KPCS] - (0.5 + 0.5 * (0.5 + 0.5) / 2.0)) < EPS);
    CHECK(strcmp(r->bert_model, "fake") == 0 && !r->bert_idf);
    CHECK(!r->bert_rescaled);
    mt_eval_result_free(r);
}

static void test_score_bertscore_idf_over_references(void **state)
{
    /* idf over the 2 gold corrections {a,b}, {a,c}: idf(a) = ln(3/3) = 0,
     * idf(b) = idf(c) = ln(3/2), idf(d) = ln 3 (unseen). b-0: P = (0*1 +
     * ln3*0)/ln3 = 0, R = (0*1 + ln1.5*0)/ln1.5 = 0, F = 0; b-1: P = R = 1.
     * Composite (0 + 1 + 1) / 3. */
    struct mt_eval_result *r = score_fake(1, NULL);
    (void)state;
    CHECK(r->bert_idf);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_BERTSCORE]) < EPS);
    CHECK(fabs(r->per_note[1].m[MT_EVAL_BERTSCORE] - 1.0) < EPS);
    CHECK(fabs(r->composite[MT_EVAL_BERTSCORE] - 2.0 / 3.0) < EPS);
    mt_eval_result_free(r);
}

static void test_score_bertscore_rescaled(void **state)
{
    /* F baseline 0.2: b-0 (0.5 - 0.2) / 0.8 = 0.375; b-1 stays 1. */
    static const double base[3] = {0.1, 0.1, 0.2};
    struct mt_eval_result *r = score_fake(0, base);
    (void)state;
    CHECK(r->bert_rescaled && r->bert_base[2] == 0.2);
    CHECK(fabs(r->per_note[0].m[MT_EVAL_BERTSCORE] - 0.375) < EPS);
    CHECK(fabs(r->per_note[1].m[MT_EVAL_BERTSCORE] - 1.0) < EPS);
    mt_eval_result_free(r);
}

static void test_bertscore_baseline_specs(void **state)
{
    char path[] = "/tmp/mt-base-XXXXXX";
    struct mt_error err = {MT_OK, ""};
    double b[3] = {9, 9, 9};
    int fd;
    FILE *f;
    (void)state;
    CHECK_OK(mt_bertscore_baseline_load("0.83", -1, b, NULL));
    CHECK(b[0] == 0.83 && b[1] == 0.83 && b[2] == 0.83);
    CHECK_OK(mt_bertscore_baseline_load("0.1, 0.2 0.3", -1, b, NULL));
    CHECK(b[0] == 0.1 && b[1] == 0.2 && b[2] == 0.3);
    CHECK(mt_bertscore_baseline_load("1.0", -1, b, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "below 1") && b[0] == 0.1);
    CHECK(mt_bertscore_baseline_load("0.1,0.2", -1, b, &err) == MT_EIO);
    fd = mkstemp(path);
    CHECK(fd >= 0);
    f = fdopen(fd, "w");
    fputs("LAYER,P,R,F\n0,0.5,0.5,0.5\n1,0.6,0.7,0.8\n2,0.1,0.2,0.3\n\n", f);
    fclose(f);
    CHECK_OK(mt_bertscore_baseline_load(path, 1, b, NULL));
    CHECK(b[0] == 0.6 && b[1] == 0.7 && b[2] == 0.8);
    CHECK_OK(mt_bertscore_baseline_load(path, -1, b, NULL));
    CHECK(b[2] == 0.3);
    CHECK(mt_bertscore_baseline_load(path, 7, b, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "layer 7") != NULL);
    f = fopen(path, "w");
    fputs("0.4 0.5 0.6\n", f);
    fclose(f);
    CHECK_OK(mt_bertscore_baseline_load(path, 3, b, NULL));
    CHECK(b[0] == 0.4 && b[2] == 0.6);
    unlink(path);
    CHECK(mt_bertscore_official_model("microsoft/deberta-xlarge-mnli"));
    CHECK(!mt_bertscore_official_model("embed.gguf"));
}

/* ==== Bootstrap ==== */

static void test_bootstrap_is_deterministic(void **state)
{
    double x[50];
    double lo1, hi1, lo2, hi2;
    size_t i;
    (void)state;
    for (i = 0; i < 50; i++)
        x[i] = (double)(i % 2);
    CHECK_OK(mt_eval_bootstrap_ci(x, 50, 1000, 7, &lo1, &hi1));
    CHECK_OK(mt_eval_bootstrap_ci(x, 50, 1000, 7, &lo2, &hi2));
    CHECK(lo1 == lo2 && hi1 == hi2);
    CHECK(lo1 < 0.5 && hi1 > 0.5 && lo1 > 0.2 && hi1 < 0.8);
    for (i = 0; i < 50; i++)
        x[i] = 0.25;
    CHECK_OK(mt_eval_bootstrap_ci(x, 50, 1000, 7, &lo1, &hi1));
    CHECK(lo1 == 0.25 && hi1 == 0.25);
    CHECK(mt_eval_bootstrap_ci(x, 0, 1000, 7, &lo1, &hi1) == MT_EINVAL);
}

/* ==== Retrieval metrics ==== */

static void test_retrieval_metrics_hand_worked(void **state)
{
    /* ranking: R N R N N, 3 relevant in all (one never retrieved).
     * recall@1 = 1/3, recall@5 = 2/3; MRR = 1; MRR@k for N R: 1/2.
     * DCG@5 = 1/log2(2) + 1/log2(4) = 1.5; IDCG@5 = 1 + 1/log2(3) +
     * 1/log2(4) = 1 + 0.6309298 + 0.5; AP = (1/1 + 2/3) / 3. */
    static const uint8_t rel[] = {1, 0, 1, 0, 0};
    static const uint8_t late[] = {0, 1};
    double idcg = 1.0 + 1.0 / log2(3.0) + 0.5;
    (void)state;
    CHECK(fabs(mt_recall_at_k(rel, 5, 3, 1) - 1.0 / 3) < EPS);
    CHECK(fabs(mt_recall_at_k(rel, 5, 3, 10) - 2.0 / 3) < EPS);
    CHECK(mt_mrr_at_k(rel, 5, 10) == 1.0);
    CHECK(fabs(mt_mrr_at_k(late, 2, 10) - 0.5) < EPS);
    CHECK(mt_mrr_at_k(late, 2, 1) == 0.0);
    CHECK(fabs(mt_ndcg_at_k(rel, 5, 3, 5) - 1.5 / idcg) < EPS);
    /* nDCG@1 with a relevant first result is 1 */
    CHECK(fabs(mt_ndcg_at_k(rel, 5, 3, 1) - 1.0) < EPS);
    CHECK(fabs(mt_average_precision(rel, 5, 3) - (1.0 + 2.0 / 3) / 3) < EPS);
    CHECK(mt_recall_at_k(rel, 5, 0, 5) == 0.0);
    CHECK(mt_ndcg_at_k(late, 2, 0, 5) == 0.0);
}

/* ==== Report ==== */

static void test_report_is_written_atomically(void **state)
{
    struct mt_eval_ref *ref = load_ref();
    struct mt_eval_sub *s =
        parse("en-t-0 1 2 The patient had <gout>.\n", MT_OK, NULL);
    struct mt_eval_result *r = NULL;
    struct mt_eval_run run;
    char path[] = "/tmp/mt_report_XXXXXX";
    char buf[1 << 16];
    size_t n;
    int fd = mkstemp(path);
    FILE *f;
    (void)state;
    close(fd);
    CHECK_OK(mt_eval_score(ref, s, NULL, &r, NULL));
    run.name = "run <1>";
    run.result = r;
    run.sub = s;
    CHECK_OK(mt_eval_report_write(path, ref, &run, 1, NULL));
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    CHECK(strstr(buf, "<svg id=\"chart-types\""));
    CHECK(strstr(buf, "<svg id=\"chart-confusion-1\""));
    CHECK(strstr(buf, "&lt;gout&gt;") && !strstr(buf, "<gout>"));
    CHECK(strstr(buf, "run &lt;1&gt;"));
    CHECK(!strstr(buf, "http://") && !strstr(buf, "https://"));
    mt_eval_result_free(r);
    mt_eval_sub_free(s);
    mt_eval_ref_free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sub_parses_official_format),
        cmocka_unit_test(test_sub_quote_stripping_keeps_one_char),
        cmocka_unit_test(test_sub_invalid_lines_reported_and_skipped),
        cmocka_unit_test(test_sub_duplicate_keeps_last_with_message),
        cmocka_unit_test(test_sub_bom_crlf_noted),
        cmocka_unit_test(test_sub_empty_or_all_invalid_fails),
        cmocka_unit_test(test_ref_reads_columns_and_na),
        cmocka_unit_test(test_ref_missing_columns_named),
        cmocka_unit_test(test_ref_real_files_have_columns),
        cmocka_unit_test(test_ref_keep_subset),
        cmocka_unit_test(test_score_accuracy_over_all_notes),
        cmocka_unit_test(test_score_composite_and_pairs_mean),
        cmocka_unit_test(test_score_kpcs_exact_and_normalized),
        cmocka_unit_test(test_score_kpcs_header_case_and_empty_keywords),
        cmocka_unit_test(test_score_bleurt_from_file),
        cmocka_unit_test(test_score_bertscore_from_file),
        cmocka_unit_test(test_score_unscorable_prediction_warns),
        cmocka_unit_test(test_score_json_has_keys_and_no_absent_metric),
        cmocka_unit_test(test_mederrbench_en_keyword_verbatim_fraction),
        cmocka_unit_test(test_bertscore_greedy_hand_worked),
        cmocka_unit_test(test_bertscore_idf_weights),
        cmocka_unit_test(test_score_bertscore_enters_aggregate_and_kpcs),
        cmocka_unit_test(test_score_bertscore_idf_over_references),
        cmocka_unit_test(test_score_bertscore_rescaled),
        cmocka_unit_test(test_bertscore_baseline_specs),
        cmocka_unit_test(test_bootstrap_is_deterministic),
        cmocka_unit_test(test_retrieval_metrics_hand_worked),
        cmocka_unit_test(test_report_is_written_atomically),
    };
    return cmocka_run_group_tests_name("eval", tests, NULL, NULL);
}
