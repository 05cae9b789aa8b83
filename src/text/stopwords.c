/* NLTK's English stop words (nltk.corpus.stopwords.words("english"), the
 * 179 words of the NLTK data package's corpora/stopwords/english, as
 * NLTK 3.x ships it), which VerifAI drops from its lexical queries
 * (query_parser.py), and a query filter over them. */
#include <string.h>

#include "medtrust/core.h"
#include "text/stopwords.h"

/* Sorted by strcmp, for bsearch. */
static const char *const nltk_english[] = {
    "a",        "about",      "above",   "after",    "again",      "against",
    "ain",      "all",        "am",      "an",       "and",        "any",
    "are",      "aren",       "aren't",  "as",       "at",         "be",
    "because",  "been",       "before",  "being",    "below",      "between",
    "both",     "but",        "by",      "can",      "couldn",     "couldn't",
    "d",        "did",        "didn",    "didn't",   "do",         "does",
    "doesn",    "doesn't",    "doing",   "don",      "don't",      "down",
    "during",   "each",       "few",     "for",      "from",       "further",
    "had",      "hadn",       "hadn't",  "has",      "hasn",       "hasn't",
    "have",     "haven",      "haven't", "having",   "he",         "her",
    "here",     "hers",       "herself", "him",      "himself",    "his",
    "how",      "i",          "if",      "in",       "into",       "is",
    "isn",      "isn't",      "it",      "it's",     "its",        "itself",
    "just",     "ll",         "m",       "ma",       "me",         "mightn",
    "mightn't", "more",       "most",    "mustn",    "mustn't",    "my",
    "myself",   "needn",      "needn't", "no",       "nor",        "not",
    "now",      "o",          "of",      "off",      "on",         "once",
    "only",     "or",         "other",   "our",      "ours",       "ourselves",
    "out",      "over",       "own",     "re",       "s",          "same",
    "shan",     "shan't",     "she",     "she's",    "should",     "should've",
    "shouldn",  "shouldn't",  "so",      "some",     "such",       "t",
    "than",     "that",       "that'll", "the",      "their",      "theirs",
    "them",     "themselves", "then",    "there",    "these",      "they",
    "this",     "those",      "through", "to",       "too",        "under",
    "until",    "up",         "ve",      "very",     "was",        "wasn",
    "wasn't",   "we",         "were",    "weren",    "weren't",    "what",
    "when",     "where",      "which",   "while",    "who",        "whom",
    "why",      "will",       "with",    "won",      "won't",      "wouldn",
    "wouldn't", "y",          "you",     "you'd",    "you'll",     "you're",
    "you've",   "your",       "yours",   "yourself", "yourselves",
};

#define NLTK_N (sizeof nltk_english / sizeof *nltk_english)

size_t mtx_nltk_english_count(void)
{
    return NLTK_N;
}

const char *mtx_nltk_english_word(size_t i)
{
    return i < NLTK_N ? nltk_english[i] : NULL;
}

int mtx_nltk_english_stop(const char *w, size_t n)
{
    size_t lo = 0, hi = NLTK_N;
    char k[16];

    if (n == 0 || n >= sizeof k)
        return 0;
    memcpy(k, w, n);
    k[n] = '\0';
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(k, nltk_english[mid]);

        if (c == 0)
            return 1;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static int is_punct(char c)
{
    return c != '\'' && ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
                         (c >= '[' && c <= '`') || (c >= '{' && c <= '~'));
}

/* Whether the word w[0..n) is a stop word once ASCII punctuation at its
 * ends is set aside and it is lower-cased. */
static int word_is_stop(const char *w, size_t n)
{
    char k[16];
    size_t i;

    while (n > 0 && is_punct(w[0])) {
        w++;
        n--;
    }
    while (n > 0 && is_punct(w[n - 1]))
        n--;
    if (n == 0 || n >= sizeof k)
        return 0;
    for (i = 0; i < n; i++)
        k[i] = (w[i] >= 'A' && w[i] <= 'Z') ? (char)(w[i] + 32) : w[i];
    return mtx_nltk_english_stop(k, n);
}

char *mtx_drop_nltk_stopwords(const char *q)
{
    size_t len = strlen(q), i = 0, o = 0;
    char *out = mt_malloc(len + 1);

    if (!out)
        return NULL;
    while (i < len) {
        size_t s;

        while (i < len && is_space(q[i]))
            i++;
        s = i;
        while (i < len && !is_space(q[i]))
            i++;
        if (i == s || word_is_stop(q + s, i - s))
            continue;
        if (o)
            out[o++] = ' ';
        memcpy(out + o, q + s, i - s);
        o += i - s;
    }
    out[o] = '\0';
    return out;
}
