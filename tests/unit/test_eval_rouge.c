/* ROUGE golden tests: hand-worked cases, then every pair of
 * tests/eval/rouge_golden.tsv (written by tests/eval/rouge_golden.py with
 * the real `rouge` package, pltrdy 1.0.1, that the official MEDIQA-CORR
 * scorer imports), to 1e-9. */
#include "check.h"

#include <math.h>

#include "medtrust/core.h"
#include "medtrust/eval.h"

#define TOL 1e-9

static struct mt_rouge_scores rouge(const char *h, const char *r)
{
    struct mt_rouge_scores s;

    CHECK_OK(mt_rouge(h, strlen(h), r, strlen(r), &s));
    return s;
}

static int near(double a, double b)
{
    return fabs(a - b) <= TOL;
}

/* F = 2 * ((P * R) / (P + R + 1e-8)). */
static double f1(double p, double r)
{
    return 2.0 * ((p * r) / (p + r + 1e-8));
}

static void test_rouge_identical_is_one_minus_eps(void **state)
{
    /* H = R = {a, b, c}: P = R = 1, F = 2 / (2 + 1e-8) = 0.999999995. */
    struct mt_rouge_scores s = rouge("a b c", "a b c");
    (void)state;
    CHECK(near(s.r1.f, 2.0 / (2.0 + 1e-8)));
    CHECK(near(s.r2.f, 2.0 / (2.0 + 1e-8)));
    CHECK(near(s.rl.f, 2.0 / (2.0 + 1e-8)));
}

static void test_rouge_sets_not_counts(void **state)
{
    /* H = "a a a b" -> unigrams {a, b}; R = "a b b b" -> {a, b}: ROUGE-1
     * P = R = 1. Bigrams H {aa, ab}, R {ab, bb}: overlap 1, P = R = 1/2. */
    struct mt_rouge_scores s = rouge("a a a b", "a b b b");
    (void)state;
    CHECK(near(s.r1.p, 1.0) && near(s.r1.r, 1.0));
    CHECK(near(s.r2.p, 0.5) && near(s.r2.r, 0.5));
    CHECK(near(s.r2.f, f1(0.5, 0.5)));
}

static void test_rouge_no_lowercasing(void **state)
{
    /* "the cat sat" vs "The Cat sat": only "sat" shared, P = R = 1/3;
     * no bigram shared. */
    struct mt_rouge_scores s = rouge("the cat sat", "The Cat sat");
    (void)state;
    CHECK(near(s.r1.p, 1.0 / 3) && near(s.r1.r, 1.0 / 3));
    CHECK(s.r2.f == 0.0);
}

static void test_rouge_partial_overlap(void **state)
{
    /* H {a,b,c,d}, R {a,b,c,d,e}: P = 1, R = 4/5, F = 2*0.8/1.8.
     * Bigrams: H 3, R 4, overlap 3: P = 1, R = 3/4. */
    struct mt_rouge_scores s = rouge("a b c d", "a b c d e");
    (void)state;
    CHECK(near(s.r1.f, f1(1.0, 0.8)));
    CHECK(near(s.r2.f, f1(1.0, 0.75)));
}

static void test_rouge_bigrams_cross_segments(void **state)
{
    /* "a b. c d" -> words a b c d (segments flattened): bigram "b c"
     * exists in both, so ROUGE-2 is 1 against "a b c d". */
    struct mt_rouge_scores s = rouge("a b. c d", "a b c d");
    (void)state;
    CHECK(near(s.r2.p, 1.0) && near(s.r2.r, 1.0));
}

static void test_rouge_l_union_lcs(void **state)
{
    /* The ROUGE paper's example: r = w1..w5; c1 = w1 w2 w6 w7 w8, c2 = w1
     * w3 w8 w9 w5. LCS(r,c1) = w1 w2, LCS(r,c2) = w1 w3 w5; union
     * {w1,w2,w3,w5} = 4. m = 5 distinct reference words, n = 8 distinct
     * hypothesis words: R = 4/5, P = 4/8. */
    struct mt_rouge_scores s =
        rouge("w1 w2 w6 w7 w8. w1 w3 w8 w9 w5", "w1 w2 w3 w4 w5");
    (void)state;
    CHECK(near(s.rl.r, 0.8) && near(s.rl.p, 0.5));
    CHECK(near(s.rl.f, f1(0.5, 0.8)));
}

static void test_rouge_blank_segment_is_empty_word(void **state)
{
    /* "a b. " splits into "a b" and " ", which normalise to "a b" and
     * "": words a, b, "" -> 3 distinct unigrams, overlap 2 with "a b":
     * P = 2/3, R = 1. ("a b ." would give "a b " and "", and the empty
     * piece is dropped before normalising.) */
    struct mt_rouge_scores s = rouge("a b. ", "a b");
    (void)state;
    CHECK(near(s.r1.p, 2.0 / 3) && near(s.r1.r, 1.0));
}

static void test_rouge_empty_side_is_einval(void **state)
{
    struct mt_rouge_scores s;
    (void)state;
    CHECK(mt_rouge("...", 3, "a", 1, &s) == MT_EINVAL);
    CHECK(mt_rouge("a", 1, "", 0, &s) == MT_EINVAL);
}

/* Undoes the golden file's \t \n \\ escapes in place. */
static char *unescape(char *s)
{
    char *w = s;
    char *r = s;

    while (*r) {
        if (r[0] == '\\' && r[1]) {
            *w++ = r[1] == 't' ? '\t' : r[1] == 'n' ? '\n' : r[1];
            r += 2;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return s;
}

static int check_golden_line(char *line)
{
    char *h = line;
    char *r = strchr(h, '\t');
    char *nums;
    double v[9];
    struct mt_rouge_scores s;
    enum mt_status st;

    if (!r || !(nums = strchr(r + 1, '\t')))
        return 0;
    *r++ = '\0';
    *nums++ = '\0';
    unescape(h);
    unescape(r);
    st = mt_rouge(h, strlen(h), r, strlen(r), &s);
    if (strncmp(nums, "EMPTY", 5) == 0)
        return st == MT_EINVAL;
    if (st != MT_OK ||
        sscanf(nums, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 9)
        return 0;
    return near(s.r1.f, v[0]) && near(s.r1.p, v[1]) && near(s.r1.r, v[2]) &&
           near(s.r2.f, v[3]) && near(s.r2.p, v[4]) && near(s.r2.r, v[5]) &&
           near(s.rl.f, v[6]) && near(s.rl.p, v[7]) && near(s.rl.r, v[8]);
}

static void test_rouge_matches_python_reference(void **state)
{
    FILE *f = fopen("tests/eval/rouge_golden.tsv", "r");
    char line[8192];
    int n = 0;
    int bad = 0;
    (void)state;
    CHECK(f != NULL);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        n++;
        if (!check_golden_line(line)) {
            bad++;
            fprintf(stderr, "golden line %d differs\n", n);
        }
    }
    fclose(f);
    CHECK(n >= 300);
    CHECK(bad == 0);
}

static void test_rouge_survives_oom(void **state)
{
    struct mt_rouge_scores s;
    long i;
    enum mt_status st = MT_ENOMEM;
    (void)state;
    for (i = 0; st == MT_ENOMEM && i < 100; i++) {
        mt_alloc_fail_after(i);
        st = mt_rouge("a b. c d e", 10, "a c. d", 6, &s);
        mt_alloc_fail_reset();
    }
    CHECK_OK(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rouge_identical_is_one_minus_eps),
        cmocka_unit_test(test_rouge_sets_not_counts),
        cmocka_unit_test(test_rouge_no_lowercasing),
        cmocka_unit_test(test_rouge_partial_overlap),
        cmocka_unit_test(test_rouge_bigrams_cross_segments),
        cmocka_unit_test(test_rouge_l_union_lcs),
        cmocka_unit_test(test_rouge_blank_segment_is_empty_word),
        cmocka_unit_test(test_rouge_empty_side_is_einval),
        cmocka_unit_test(test_rouge_matches_python_reference),
        cmocka_unit_test(test_rouge_survives_oom),
    };
    return cmocka_run_group_tests_name("eval_rouge", tests, NULL, NULL);
}
