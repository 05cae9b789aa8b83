/* MedGuards' KPCS ROUGE-1 (src/eval/rouge_score.c) against Google's
 * rouge_score 0.1.2 and NLTK's PorterStemmer: golden files the real
 * packages made (tests/golden/rouge_score/make.py), and, with the venv
 * scripts/bootstrap installs, the packages run now on every word of the
 * MEDEC validation split. */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"

#define GOLD "tests/golden/rouge_score/"
#define VENV_PY "third_party/venv/bin/python"

/* Compares "word<TAB>stem" lines from f with mtx_porter_stem; returns
 * the number of lines, failing the test on the first mismatch. */
static size_t check_stems(FILE *f)
{
    char line[1024];
    size_t k = 0;

    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        char w[1024];
        size_t n;

        if (!tab)
            continue;
        line[strcspn(line, "\r\n")] = '\0';
        n = (size_t)(tab - line);
        memcpy(w, line, n);
        n = mtx_porter_stem(w, n);
        w[n] = '\0';
        if (strcmp(w, tab + 1) != 0)
            fail_msg("stem of '%.*s': '%s', NLTK '%s'", (int)(tab - line), line,
                     w, tab + 1);
        k++;
    }
    return k;
}

static void test_stems_are_nltks(void **state)
{
    FILE *f = fopen(GOLD "stems.tsv", "r");

    (void)state;
    if (!f)
        MISSING(GOLD "stems.tsv");
    CHECK(check_stems(f) > 700);
    fclose(f);
}

static void test_rouge1_is_rouge_scores(void **state)
{
    FILE *f = fopen(GOLD "pairs.tsv", "r");
    char line[4096];
    size_t k = 0;

    (void)state;
    if (!f)
        MISSING(GOLD "pairs.tsv");
    while (fgets(line, sizeof line, f)) {
        char *t1 = strchr(line, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        double want, got = -1;

        if (!t2)
            continue;
        want = strtod(t2 + 1, NULL);
        CHECK_OK(mtx_rouge_score_r1(line, (size_t)(t1 - line), t1 + 1,
                                    (size_t)(t2 - t1 - 1), &got));
        if (fabs(got - want) > 1e-15)
            fail_msg("'%.*s' vs '%.*s': %.17g, rouge_score %.17g",
                     (int)(t1 - line), line, (int)(t2 - t1 - 1), t1 + 1, got,
                     want);
        k++;
    }
    fclose(f);
    CHECK(k >= 20);
}

/* The case: 0.333 with the MEDIQA-CORR tokens, 1.0 here and in
 * MedGuards' code (case, the full stop and the plural all fold away). */
static void test_start_iv_antibiotics_is_one(void **state)
{
    static const char h[] = "Start IV antibiotics.";
    static const char r[] = "start IV Antibiotic";
    double f = 0;

    (void)state;
    CHECK_OK(mtx_rouge_score_r1(h, sizeof h - 1, r, sizeof r - 1, &f));
    CHECK(f == 1.0);
    CHECK_OK(mtx_rouge_score_r1("", 0, r, sizeof r - 1, &f));
    CHECK(f == 0.0);
}

/* With the venv: NLTK itself stems every token of the MEDEC validation
 * split, and each stem must be ours. */
static void test_every_medec_word_as_nltk_stems_it(void **state)
{
    char data[1024];
    char cmd[2048];
    FILE *p;

    (void)state;
    if (access(VENV_PY, X_OK) != 0)
        fail_msg("missing %s (rouge_score, nltk): run scripts/bootstrap",
                 VENV_PY);
    test_data_path(data, sizeof data,
                   "medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-"
                   "ErrorType.csv");
    if (access(data, R_OK) != 0)
        MISSING(data);
    snprintf(cmd, sizeof cmd, "%s %smake.py datastems '%s'", VENV_PY, GOLD,
             data);
    p = popen(cmd, "r");
    CHECK(p != NULL);
    CHECK(check_stems(p) > 3000);
    CHECK(pclose(p) == 0);
}

/* make.py's escapes: backslash-t and backslash-n. */
static void unescape(char *s)
{
    char *o = s;

    for (; *s; s++) {
        if (s[0] == '\\' && (s[1] == 't' || s[1] == 'n')) {
            *o++ = s[1] == 't' ? '\t' : '\n';
            s++;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

/* MedGuards' Chinese ROUGE-1 (jieba, then rouge-chinese) against the real
 * packages' values (tests/golden/jieba/make.py pairs), within 1e-9. */
static void test_rouge1_zh_is_eval_cns(void **state)
{
    FILE *f = fopen("tests/golden/jieba/pairs.tsv", "r");
    struct mtx_jieba *j = NULL;
    struct mt_error err = {0};
    char line[8192];
    size_t k = 0;

    (void)state;
    if (!f)
        MISSING("tests/golden/jieba/pairs.tsv");
    if (mtx_ev_jieba_open("third_party/jieba", &j, &err) != MT_OK)
        fail_msg("%s", err.msg);
    while (fgets(line, sizeof line, f)) {
        char *t1 = strchr(line, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        double want, got = -1;

        if (!t2)
            continue;
        *t1 = *t2 = '\0';
        want = strtod(t2 + 1, NULL);
        unescape(line);
        unescape(t1 + 1);
        CHECK_OK(mtx_kpcs_rouge1_zh(j, line, t1 + 1, &got));
        if (fabs(got - want) > 1e-9)
            fail_msg("'%s' vs '%s': %.17g, rouge-chinese %.17g", line, t1 + 1,
                     got, want);
        k++;
    }
    fclose(f);
    mtx_jieba_close(j);
    CHECK(k >= 220);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stems_are_nltks),
        cmocka_unit_test(test_rouge1_is_rouge_scores),
        cmocka_unit_test(test_start_iv_antibiotics_is_one),
        cmocka_unit_test(test_every_medec_word_as_nltk_stems_it),
        cmocka_unit_test(test_rouge1_zh_is_eval_cns),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
