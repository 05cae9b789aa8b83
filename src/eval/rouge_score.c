/* ROUGE-1 as MedGuards' KPCS computes it (utils.py,
 * evaluate_correction_keywords: Google's rouge_score 0.1.2,
 * RougeScorer(['rouge1'], use_stemmer=True)). Independent C code; the
 * behaviour replicated is:
 *   tokens   = text.lower() (Python's Unicode lower), every run of
 *              characters outside [a-z0-9] a separator, words longer than
 *              3 characters Porter-stemmed as NLTK's PorterStemmer does
 *              in its default NLTK_EXTENSIONS mode
 *   ROUGE-1  = bags of tokens (counts, not sets): overlap = sum of
 *              min(count in hypothesis, count in reference);
 *              P = overlap / |hyp|, R = overlap / |ref| (0 when empty),
 *              F = 2PR / (P + R), 0 when P + R = 0.
 * So everything that is not ASCII letters or digits vanishes: Arabic and
 * Chinese text has no tokens and scores 0, as it does in MedGuards' code.
 * Golden pairs: tests/golden/rouge_score/, made by the real package. */
#include <stdlib.h>
#include <string.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"

/* ==== NLTK's Porter stemmer (NLTK_EXTENSIONS) ==== */

static int vowel(char c)
{
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

/* Porter's consonant: not a vowel, and 'y' only when it follows a vowel
 * or starts the word (a run of y's alternates). */
static int cons(const char *w, size_t i)
{
    int neg = 0;

    if (vowel(w[i]))
        return 0;
    if (w[i] != 'y')
        return 1;
    while (i > 0 && w[i] == 'y') {
        neg = !neg;
        i--;
    }
    return (!vowel(w[i])) != neg;
}

/* m: the number of vowel-consonant transitions in w[0..n). */
static int measure(const char *w, size_t n)
{
    int m = 0;
    size_t i;

    for (i = 1; i < n; i++)
        m += !cons(w, i - 1) && cons(w, i);
    return m;
}

static int has_vowel(const char *w, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!cons(w, i))
            return 1;
    return 0;
}

static int ends_double(const char *w, size_t n)
{
    return n >= 2 && w[n - 1] == w[n - 2] && cons(w, n - 1);
}

/* consonant-vowel-consonant, the last not w, x or y; NLTK also counts a
 * two-letter vowel-consonant word. */
static int ends_cvc(const char *w, size_t n)
{
    if (n >= 3 && cons(w, n - 3) && !cons(w, n - 2) && cons(w, n - 1) &&
        w[n - 1] != 'w' && w[n - 1] != 'x' && w[n - 1] != 'y')
        return 1;
    return n == 2 && !cons(w, 0) && cons(w, 1);
}

static int ends(const char *w, size_t n, const char *s)
{
    size_t k = strlen(s);

    return k <= n && memcmp(w + n - k, s, k) == 0;
}

enum cond { C_NONE, C_M0, C_M1, C_ION, C_LOGI };

struct rule {
    const char *suf;
    const char *rep;
    enum cond cond;
};

static int cond_ok(const char *w, size_t stem, enum cond c)
{
    switch (c) {
    case C_NONE:
        return 1;
    case C_M0:
        return measure(w, stem) > 0;
    case C_M1:
        return measure(w, stem) > 1;
    case C_ION:
        return measure(w, stem) > 1 && stem > 0 &&
               (w[stem - 1] == 's' || w[stem - 1] == 't');
    case C_LOGI: /* NLTK tests the word without "ogi" */
        return measure(w, stem + 1) > 0;
    }
    return 0;
}

/* The first rule whose suffix ends the word decides: its replacement
 * when its condition holds, else the word unchanged (nltk's
 * _apply_rule_list). Returns 1 when a suffix matched. */
static int apply(char *w, size_t *n, const struct rule *r, size_t nr)
{
    size_t i;

    for (i = 0; i < nr; i++) {
        size_t stem;

        if (!ends(w, *n, r[i].suf))
            continue;
        stem = *n - strlen(r[i].suf);
        if (cond_ok(w, stem, r[i].cond)) {
            memcpy(w + stem, r[i].rep, strlen(r[i].rep));
            *n = stem + strlen(r[i].rep);
        }
        return 1;
    }
    return 0;
}

#define NRULES(a) (sizeof(a) / sizeof(a)[0])

static void step1a(char *w, size_t *n)
{
    static const struct rule r[] = {
        {"sses", "ss", C_NONE},
        {"ies", "i", C_NONE},
        {"ss", "ss", C_NONE},
        {"s", "", C_NONE},
    };

    if (*n == 4 && ends(w, *n, "ies")) {
        *n = 3; /* "ties" -> "tie" */
        return;
    }
    apply(w, n, r, NRULES(r));
}

/* After "ed" or "ing" came off: at -> ate, bl -> ble, iz -> ize, a
 * double consonant loses one letter (not l, s, z), or a short cvc stem
 * gains an "e". */
static void step1b_tail(char *w, size_t *n)
{
    static const struct rule r[] = {
        {"at", "ate", C_NONE},
        {"bl", "ble", C_NONE},
        {"iz", "ize", C_NONE},
    };
    char last = w[*n - 1];

    if (apply(w, n, r, NRULES(r)))
        return;
    if (ends_double(w, *n)) {
        if (last != 'l' && last != 's' && last != 'z')
            (*n)--;
        return;
    }
    if (measure(w, *n) == 1 && ends_cvc(w, *n))
        w[(*n)++] = 'e';
}

static void step1b(char *w, size_t *n)
{
    size_t k = 0;

    if (ends(w, *n, "ied")) { /* NLTK: "died" -> "die", "cried" -> "cri" */
        *n -= *n == 4 ? 1 : 2;
        return;
    }
    if (ends(w, *n, "eed")) {
        if (measure(w, *n - 3) > 0)
            (*n)--;
        return;
    }
    if (ends(w, *n, "ed") && has_vowel(w, *n - 2))
        k = 2;
    else if (ends(w, *n, "ing") && has_vowel(w, *n - 3))
        k = 3;
    if (!k)
        return;
    *n -= k;
    step1b_tail(w, n);
}

static void step1c(char *w, size_t *n)
{
    if (*n > 2 && w[*n - 1] == 'y' && cons(w, *n - 2))
        w[*n - 1] = 'i';
}

static void step2(char *w, size_t *n)
{
    static const struct rule r[] = {
        {"ational", "ate", C_M0}, {"tional", "tion", C_M0},
        {"enci", "ence", C_M0},   {"anci", "ance", C_M0},
        {"izer", "ize", C_M0},    {"bli", "ble", C_M0},
        {"alli", "al", C_M0},     {"entli", "ent", C_M0},
        {"eli", "e", C_M0},       {"ousli", "ous", C_M0},
        {"ization", "ize", C_M0}, {"ation", "ate", C_M0},
        {"ator", "ate", C_M0},    {"alism", "al", C_M0},
        {"iveness", "ive", C_M0}, {"fulness", "ful", C_M0},
        {"ousness", "ous", C_M0}, {"aliti", "al", C_M0},
        {"iviti", "ive", C_M0},   {"biliti", "ble", C_M0},
        {"fulli", "ful", C_M0},   {"logi", "log", C_LOGI},
    };

    /* NLTK: "alli" -> "al" first, and the result goes through step 2
     * again */
    while (ends(w, *n, "alli") && measure(w, *n - 4) > 0)
        *n -= 2;
    apply(w, n, r, NRULES(r));
}

static void step3(char *w, size_t *n)
{
    static const struct rule r[] = {
        {"icate", "ic", C_M0}, {"ative", "", C_M0},  {"alize", "al", C_M0},
        {"iciti", "ic", C_M0}, {"ical", "ic", C_M0}, {"ful", "", C_M0},
        {"ness", "", C_M0},
    };

    apply(w, n, r, NRULES(r));
}

static void step4(char *w, size_t *n)
{
    static const struct rule r[] = {
        {"al", "", C_M1},   {"ance", "", C_M1}, {"ence", "", C_M1},
        {"er", "", C_M1},   {"ic", "", C_M1},   {"able", "", C_M1},
        {"ible", "", C_M1}, {"ant", "", C_M1},  {"ement", "", C_M1},
        {"ment", "", C_M1}, {"ent", "", C_M1},  {"ion", "", C_ION},
        {"ou", "", C_M1},   {"ism", "", C_M1},  {"ate", "", C_M1},
        {"iti", "", C_M1},  {"ous", "", C_M1},  {"ive", "", C_M1},
        {"ize", "", C_M1},
    };

    apply(w, n, r, NRULES(r));
}

static void step5(char *w, size_t *n)
{
    if (ends(w, *n, "e")) {
        int m = measure(w, *n - 1);

        if (m > 1 || (m == 1 && !ends_cvc(w, *n - 1)))
            (*n)--;
    }
    if (ends(w, *n, "ll") && measure(w, *n - 1) > 1)
        (*n)--;
}

/* NLTK_EXTENSIONS' irregular forms, looked up before the steps. */
static int irregular(char *w, size_t *n)
{
    static const char *const forms[][2] = {
        {"skies", "sky"},       {"sky", "sky"},          {"dying", "die"},
        {"lying", "lie"},       {"tying", "tie"},        {"news", "news"},
        {"innings", "inning"},  {"inning", "inning"},    {"outings", "outing"},
        {"outing", "outing"},   {"cannings", "canning"}, {"canning", "canning"},
        {"howe", "howe"},       {"proceed", "proceed"},  {"exceed", "exceed"},
        {"succeed", "succeed"},
    };
    size_t i;

    for (i = 0; i < NRULES(forms); i++)
        if (strlen(forms[i][0]) == *n && memcmp(w, forms[i][0], *n) == 0) {
            *n = strlen(forms[i][1]);
            memcpy(w, forms[i][1], *n);
            return 1;
        }
    return 0;
}

size_t mtx_porter_stem(char *w, size_t n)
{
    if (irregular(w, &n) || n <= 2)
        return n;
    step1a(w, &n);
    if (n == 0)
        return n;
    step1b(w, &n);
    step1c(w, &n);
    step2(w, &n);
    step3(w, &n);
    step4(w, &n);
    step5(w, &n);
    return n;
}

/* ==== Tokens and ROUGE-1 ==== */

/* The ASCII letter or digit code point cp stands for after Python's
 * str.lower(), or 0: A-Z fold, and two non-ASCII letters lower to ASCII
 * (KELVIN SIGN to "k"; I WITH DOT ABOVE to "i" plus a combining dot,
 * which then separates). */
static char ascii_of(int32_t cp)
{
    if (cp >= 'A' && cp <= 'Z')
        return (char)(cp + 32);
    if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9'))
        return (char)cp;
    if (cp == 0x212A)
        return 'k';
    if (cp == 0x130)
        return 'i';
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tokens of t as NUL-separated words in *buf, pointers in *tok
 * (sorted, so equal tokens are adjacent); returns the count, or -1 when
 * out of memory. Caller frees *buf and *tok. */
static long tokens(const char *t, size_t n, char **buf, char ***tok)
{
    char *b = mt_malloc(2 * n + 2);
    char **v = mt_malloc((n + 1) * sizeof *v);
    size_t at = 0, i = 0, start = 0;
    long k = 0;

    if (!b || !v) {
        mt_free(b);
        mt_free(v);
        return -1;
    }
    while (i <= n) {
        int32_t cp = 0;
        char c = 0;

        if (i < n) {
            size_t len = mtx_utf8_decode(t + i, n - i, &cp);

            c = ascii_of(cp);
            i += len ? len : 1;
        } else {
            i++;
        }
        if (c)
            b[at++] = c;
        if (c && cp != 0x130) /* its combining dot ends the word */
            continue;
        if (at > start) { /* a word ends: stem it when longer than 3 */
            size_t len = at - start;

            if (len > 3)
                len = mtx_porter_stem(b + start, len);
            at = start + len;
            b[at++] = '\0';
            v[k++] = b + start;
            start = at;
        }
    }
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *buf = b;
    *tok = v;
    return k;
}

/* Sum over tokens of min(count in a, count in b); both sorted. */
static size_t bag_overlap(char **a, long na, char **b, long nb)
{
    size_t o = 0;
    long i = 0, j = 0;

    while (i < na && j < nb) {
        int c = strcmp(a[i], b[j]);

        if (c == 0) {
            o++;
            i++;
            j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    return o;
}

enum mt_status mtx_rouge_score_r1(const char *hyp, size_t hn, const char *ref,
                                  size_t rn, double *f)
{
    char *hb = NULL, *rb = NULL;
    char **ht = NULL, **rt = NULL;
    long nh = tokens(hyp, hn, &hb, &ht);
    long nr = nh < 0 ? -1 : tokens(ref, rn, &rb, &rt);
    double p, r;
    size_t o;

    if (nh < 0 || nr < 0) {
        mt_free(hb);
        mt_free(ht);
        return MT_ENOMEM;
    }
    o = bag_overlap(ht, nh, rt, nr);
    p = nh ? (double)o / (double)nh : 0.0;
    r = nr ? (double)o / (double)nr : 0.0;
    *f = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
    mt_free(hb);
    mt_free(ht);
    mt_free(rb);
    mt_free(rt);
    return MT_OK;
}
