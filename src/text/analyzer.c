/* Search analyzers: a code point scanner that splits text into words
 * (Unicode letters, digits, marks) and CJK runs, then folds, drops stop
 * words and stems each word without allocating per token. */
#include "text/analyzer.h"

#include <libstemmer.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "medtrust/core.h"
#include "text/utf8.h"

/* ==== Stop words ==== */

/* Lucene's EnglishAnalyzer default stop set (ENGLISH_STOP_WORDS_SET). */
static const char *const english_stop[] = {
    "a",    "an",   "and",  "are",  "as",   "at",    "be",   "but",   "by",
    "for",  "if",   "in",   "into", "is",   "it",    "no",   "not",   "of",
    "on",   "or",   "such", "that", "the",  "their", "then", "there", "these",
    "they", "this", "to",   "was",  "will", "with",  NULL,
};

/* The most frequent entries of Lucene's Arabic stop list (function words,
 * pronouns, common particles with their wa-/fa- prefixed forms). */
static const char *const arabic_stop[] = {
    "من",   "ومن",  "منها",  "منه",  "في",   "وفي",  "فيها",  "فيه",  "و",
    "ف",    "ثم",   "او",    "أو",   "ب",    "بها",  "به",    "ا",    "أ",
    "اى",   "اي",   "أي",    "أى",   "لا",   "ولا",  "الا",   "ألا",  "إلا",
    "لكن",  "ما",   "وما",   "كما",  "فما",  "عن",   "مع",    "اذا",  "إذا",
    "ان",   "أن",   "إن",    "انها", "أنها", "إنها", "انه",   "أنه",  "إنه",
    "بان",  "بأن",  "فان",   "فأن",  "وان",  "وأن",  "وإن",   "التى", "التي",
    "الذى", "الذي", "الذين", "الى",  "الي",  "إلى",  "إلي",   "على",  "عليها",
    "عليه", "اما",  "أما",   "إما",  "ايضا", "أيضا", "كل",    "وكل",  "لم",
    "ولم",  "لن",   "ولن",   "هى",   "هي",   "هو",   "وهى",   "وهي",  "وهو",
    "فهى",  "فهي",  "فهو",   "انت",  "أنت",  "لك",   "لها",   "له",   "هذه",
    "هذا",  "تلك",  "ذلك",   "هناك", "كانت", "كان",  "يكون",  "تكون", "وكانت",
    "وكان", "غير",  "بعض",   "قد",   "نحو",  "بين",  "بينما", "منذ",  "ضمن",
    "حيث",  "الان", "الآن",  "خلال", "بعد",  "قبل",  "حتى",   "عند",  "عندما",
    "لدى",  "جميع", NULL,
};

/* ==== Analyzer kinds ==== */

struct kind {
    const char *name;
    const char *stem_lang;   /* Snowball algorithm, or NULL */
    const char *const *stop; /* NULL-terminated, or NULL */
    int cjk;                 /* bigram Han/Hiragana/Katakana runs */
    int possessive;          /* strip a trailing 's */
};

static const struct kind kinds[] = {
    {"english", "english", english_stop, 0, 1},
    {"arabic", "arabic", arabic_stop, 0, 0},
    {"cjk", NULL, NULL, 1, 0},
    {"simple", NULL, NULL, 0, 0},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])
#define CJK_CHAR_MAX 32 /* bytes of one folded CJK character, capped */

/* Stemming dominated index builds (Snowball is ~44% of build time), and
 * corpora repeat their words endlessly, so each analyzer keeps a small
 * direct-mapped cache from folded word to stem. Words longer than
 * STEM_KEY_MAX bytes bypass it. */
#define STEM_SLOTS 4096u
#define STEM_KEY_MAX 31u

struct stem_slot {
    uint8_t kn, vn; /* 0 = empty */
    char key[STEM_KEY_MAX];
    char val[STEM_KEY_MAX + 1]; /* NUL-terminated, as tokens are */
};

struct mt_analyzer {
    const struct kind *kind;
    struct sb_stemmer *stemmer;
    struct stem_slot *cache; /* STEM_SLOTS entries when stemming */
    const char **stop;       /* sorted copy of kind->stop, for bsearch */
    size_t nstop;
    struct mt_fold_scratch fold;
    char tok[4 * MT_ANALYZER_MAX_TOKEN + 2 * CJK_CHAR_MAX + 8];
    char prev[CJK_CHAR_MAX]; /* previous folded CJK character */
    size_t prev_n;
    uint32_t pos;
    mt_token_fn fn;
    void *user;
};

/* Orders byte strings as strcmp does; used by qsort and bsearch. */
static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static enum mt_status stop_init(struct mt_analyzer *a)
{
    size_t n = 0;

    if (!a->kind->stop)
        return MT_OK;
    while (a->kind->stop[n])
        n++;
    a->stop = mt_malloc(n * sizeof *a->stop);
    if (!a->stop)
        return MT_ENOMEM;
    memcpy(a->stop, a->kind->stop, n * sizeof *a->stop);
    qsort(a->stop, n, sizeof *a->stop, cmp_str);
    a->nstop = n;
    return MT_OK;
}

/* 'w' is NUL-terminated. */
static int is_stop(const struct mt_analyzer *a, const char *w)
{
    if (!a->nstop)
        return 0;
    return bsearch(&w, a->stop, a->nstop, sizeof *a->stop, cmp_str) != NULL;
}

static const struct kind *find_kind(const char *name)
{
    size_t i;

    for (i = 0; i < NKINDS; i++)
        if (strcmp(kinds[i].name, name) == 0)
            return &kinds[i];
    return NULL;
}

enum mt_status mtx_analyzer_new(const char *name, struct mt_analyzer **out,
                                struct mt_error *err)
{
    const struct kind *k = name ? find_kind(name) : NULL;
    struct mt_analyzer *a;

    if (!k)
        return mt_fail(err, MT_EINVAL,
                       "unknown analyzer '%s' (valid: english, arabic, "
                       "cjk, simple)",
                       name ? name : "(null)");
    a = mt_calloc(1, sizeof *a);
    if (!a)
        return mt_fail(err, MT_ENOMEM, "out of memory creating analyzer");
    a->kind = k;
    if (stop_init(a) != MT_OK) {
        mtx_analyzer_free(a);
        return mt_fail(err, MT_ENOMEM, "out of memory creating analyzer");
    }
    if (k->stem_lang) {
        a->stemmer = sb_stemmer_new(k->stem_lang, "UTF_8");
        a->cache = mt_calloc(STEM_SLOTS, sizeof *a->cache);
        if (!a->stemmer || !a->cache) {
            mtx_analyzer_free(a);
            return mt_fail(err, MT_ENOMEM, "cannot create %s stemmer",
                           k->stem_lang);
        }
    }
    *out = a;
    return MT_OK;
}

const char *mtx_analyzer_name(const struct mt_analyzer *a)
{
    return a->kind->name;
}

void mtx_analyzer_free(struct mt_analyzer *a)
{
    if (!a)
        return;
    if (a->stemmer)
        sb_stemmer_delete(a->stemmer);
    mt_free(a->cache);
    mt_free(a->stop);
    mtx_fold_scratch_free(&a->fold);
    mt_free(a);
}

/* ==== Classification ==== */

enum cls { C_SEP, C_WORD, C_MARK, C_CJK };

static int is_cjk(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2FFFF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0x3040 && c <= 0x30FF) || (c >= 0x31F0 && c <= 0x31FF) ||
           (c >= 0xFF66 && c <= 0xFF9F) || c == 0x3005 || c == 0x3007;
}

static enum cls classify(const struct mt_analyzer *a, int32_t c)
{
    utf8proc_category_t cat;

    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9'))
            return C_WORD;
        return C_SEP;
    }
    if (a->kind->cjk && is_cjk(c))
        return C_CJK;
    cat = utf8proc_category(c);
    if (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO)
        return C_WORD;
    if (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO)
        return C_WORD;
    if (cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME)
        return C_MARK;
    return C_SEP;
}

/* Decodes at text[i]; ill-formed bytes decode as -1 (a separator). */
static size_t next_cp(const char *text, size_t n, size_t i, int32_t *c)
{
    unsigned char b = (unsigned char)text[i];

    if (b < 0x80) {
        *c = b;
        return 1;
    }
    return mtx_utf8_decode(text + i, n - i, c);
}

static int is_digit_at(const char *text, size_t n, size_t i)
{
    return i < n && text[i] >= '0' && text[i] <= '9';
}

static int is_apos(int32_t c)
{
    return c == '\'' || c == 0x2019;
}

/* ==== Emitting ==== */

static enum mt_status deliver(struct mt_analyzer *a, const char *w, size_t n)
{
    uint32_t pos = a->pos++;

    return a->fn(w, n, pos, a->user);
}

/* Folds a word into a NUL-terminated string (a->tok or fold scratch). */
static enum mt_status fold_word(struct mt_analyzer *a, const char *p, size_t n,
                                int ascii, const char **w, size_t *wn)
{
    size_t i;

    if (!ascii)
        return mtx_text_fold_into(p, n, &a->fold, w, wn);
    for (i = 0; i < n; i++) {
        char ch = p[i];
        a->tok[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    a->tok[n] = '\0';
    *w = a->tok;
    *wn = n;
    return MT_OK;
}

/* Drops an English possessive "'s" / "’s" (and a bare trailing
 * apostrophe); 'w' is writable scratch owned by the analyzer. */
static size_t strip_possessive(char *w, size_t n)
{
    if (n >= 2 && w[n - 1] == 's' && w[n - 2] == '\'')
        n -= 2;
    else if (n >= 4 && w[n - 1] == 's' &&
             memcmp(w + n - 4, "\xe2\x80\x99", 3) == 0)
        n -= 4;
    if (n >= 1 && w[n - 1] == '\'')
        n--;
    w[n] = '\0';
    return n;
}

static uint32_t word_hash(const char *w, size_t n)
{
    uint32_t h = 2166136261u;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    return h;
}

/* Delivers the stem of w, from the cache when it holds it. */
static enum mt_status stem_word(struct mt_analyzer *a, const char *w, size_t wn)
{
    struct stem_slot *e = &a->cache[word_hash(w, wn) % STEM_SLOTS];
    const sb_symbol *s;
    size_t sn;

    if (wn <= STEM_KEY_MAX && e->kn == wn && memcmp(e->key, w, wn) == 0)
        return deliver(a, e->val, e->vn);
    s = sb_stemmer_stem(a->stemmer, (const sb_symbol *)w, (int)wn);
    if (!s)
        return MT_ENOMEM;
    sn = (size_t)sb_stemmer_length(a->stemmer);
    if (wn <= STEM_KEY_MAX && sn <= STEM_KEY_MAX) {
        memcpy(e->key, w, wn);
        memcpy(e->val, s, sn);
        e->val[sn] = '\0';
        e->kn = (uint8_t)wn;
        e->vn = (uint8_t)sn;
    }
    return deliver(a, (const char *)s, sn);
}

static enum mt_status emit_word(struct mt_analyzer *a, const char *p, size_t n,
                                int ascii)
{
    const char *w;
    size_t wn;
    enum mt_status st;

    if (n > MT_ANALYZER_MAX_TOKEN) {
        a->pos++;
        return MT_OK;
    }
    st = fold_word(a, p, n, ascii, &w, &wn);
    if (st != MT_OK)
        return st;
    if (a->kind->possessive)
        wn = strip_possessive((char *)(uintptr_t)w, wn);
    if (wn == 0 || is_stop(a, w)) {
        a->pos++;
        return MT_OK;
    }
    if (!a->stemmer)
        return deliver(a, w, wn);
    return stem_word(a, w, wn);
}

/* Feeds one CJK character: emits the bigram it closes, if any. */
static enum mt_status cjk_char(struct mt_analyzer *a, const char *p, size_t n,
                               size_t *run)
{
    const char *f;
    size_t fn;
    enum mt_status st = mtx_text_fold_into(p, n, &a->fold, &f, &fn);

    if (st != MT_OK)
        return st;
    if (fn > CJK_CHAR_MAX)
        fn = CJK_CHAR_MAX; /* no real folded character comes close */
    if (*run > 0) {
        memcpy(a->tok, a->prev, a->prev_n);
        memcpy(a->tok + a->prev_n, f, fn);
        a->tok[a->prev_n + fn] = '\0';
        st = deliver(a, a->tok, a->prev_n + fn);
    }
    memcpy(a->prev, f, fn);
    a->prev_n = fn;
    (*run)++;
    return st;
}

/* Ends a CJK run: a lone character becomes a unigram. */
static enum mt_status cjk_end(struct mt_analyzer *a, size_t run)
{
    if (run != 1)
        return MT_OK;
    memcpy(a->tok, a->prev, a->prev_n);
    a->tok[a->prev_n] = '\0';
    return deliver(a, a->tok, a->prev_n);
}

/* ==== Scanning ==== */

/* Returns the end of the word starting at i: letters, digits and marks,
 * plus an apostrophe between letters and a '.' or ',' between digits. */
static size_t word_end(const struct mt_analyzer *a, const char *text, size_t n,
                       size_t i, int *ascii)
{
    int32_t c;
    int32_t prev = 0;

    *ascii = 1;
    while (i < n) {
        size_t len = next_cp(text, n, i, &c);
        enum cls k = c < 0 ? C_SEP : classify(a, c);

        if (k == C_SEP && i + len < n) {
            int32_t nx;
            next_cp(text, n, i + len, &nx);
            if ((c == '.' || c == ',') && prev >= '0' && prev <= '9' &&
                is_digit_at(text, n, i + 1))
                k = C_WORD;
            else if (is_apos(c) && prev > 0 && nx > 0 &&
                     classify(a, nx) == C_WORD)
                k = C_WORD;
        }
        if (k != C_WORD && k != C_MARK)
            break;
        if (c >= 0x80)
            *ascii = 0;
        prev = c;
        i += len;
    }
    return i;
}

static enum mt_status scan_cjk(struct mt_analyzer *a, const char *text,
                               size_t n, size_t *i)
{
    size_t run = 0;
    enum mt_status st = MT_OK;

    while (*i < n && st == MT_OK) {
        int32_t c;
        size_t len = next_cp(text, n, *i, &c);

        if (c < 0 || classify(a, c) != C_CJK)
            break;
        st = cjk_char(a, text + *i, len, &run);
        *i += len;
    }
    if (st != MT_OK)
        return st;
    return cjk_end(a, run);
}

static enum mt_status scan(struct mt_analyzer *a, const char *text, size_t n)
{
    size_t i = 0;
    enum mt_status st = MT_OK;

    while (i < n && st == MT_OK) {
        int32_t c;
        size_t len = next_cp(text, n, i, &c);
        enum cls k = c < 0 ? C_SEP : classify(a, c);
        int ascii;
        size_t end;

        if (k == C_CJK) {
            st = scan_cjk(a, text, n, &i);
        } else if (k == C_WORD) {
            end = word_end(a, text, n, i, &ascii);
            st = emit_word(a, text + i, end - i, ascii);
            i = end;
        } else {
            i += len; /* separator, stray mark or ill-formed byte */
        }
    }
    return st;
}

enum mt_status mtx_analyzer_run(struct mt_analyzer *a, const char *text,
                                size_t n, mt_token_fn fn, void *user,
                                struct mt_error *err)
{
    enum mt_status st;

    a->fn = fn;
    a->user = user;
    a->pos = 0;
    a->prev_n = 0;
    st = scan(a, text, n);
    if (st == MT_ENOMEM)
        return mt_fail(err, st, "out of memory analysing text");
    if (st != MT_OK)
        return mt_fail(err, st, "analysis stopped: %s", mt_status_str(st));
    return MT_OK;
}

/* ==== Collecting ==== */

struct collector {
    struct mt_arena *arena;
    struct mt_token *v;
    size_t n;
    size_t cap;
};

static enum mt_status collect_one(const char *tok, size_t n, uint32_t pos,
                                  void *user)
{
    struct collector *c = user;
    char *copy;

    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct mt_token *v = mtx_arena_alloc(c->arena, cap * sizeof *v);

        if (!v)
            return MT_ENOMEM;
        if (c->n)
            memcpy(v, c->v, c->n * sizeof *v);
        c->v = v;
        c->cap = cap;
    }
    copy = mtx_arena_strndup(c->arena, tok, n);
    if (!copy)
        return MT_ENOMEM;
    c->v[c->n].p = copy;
    c->v[c->n].n = n;
    c->v[c->n].position = pos;
    c->n++;
    return MT_OK;
}

enum mt_status mtx_analyzer_collect(struct mt_analyzer *a, const char *text,
                                    size_t n, struct mt_arena *arena,
                                    struct mt_token **out, size_t *count,
                                    struct mt_error *err)
{
    struct collector c = {arena, NULL, 0, 0};
    enum mt_status st = mtx_analyzer_run(a, text, n, collect_one, &c, err);

    if (st != MT_OK)
        return st;
    *out = c.v;
    *count = c.n;
    return MT_OK;
}
