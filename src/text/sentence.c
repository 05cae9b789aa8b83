/* Sentence splitting tuned for clinical notes, and the MEDEC `Sentences`
 * field parser. Both work on bytes and return spans into the input. */
#include "text/sentence.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

#include "medtrust/core.h"
#include "text/utf8.h"

/* ==== Span vector ==== */

struct vec {
    void *v;
    size_t n;
    size_t cap;
    size_t size; /* element size */
};

static enum mt_status vec_push(struct vec *s, const void *elem)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        void *v = mt_realloc(s->v, cap * s->size);

        if (!v)
            return MT_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    memcpy((char *)s->v + s->n * s->size, elem, s->size);
    s->n++;
    return MT_OK;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Trims [*a, *b) of ASCII whitespace and no-break spaces (C2 A0). */
static void trim(const char *t, size_t *a, size_t *b)
{
    for (;;) {
        if (*a < *b && is_space(t[*a]))
            (*a)++;
        else if (*a + 1 < *b && (unsigned char)t[*a] == 0xC2 &&
                 (unsigned char)t[*a + 1] == 0xA0)
            *a += 2;
        else
            break;
    }
    while (*b > *a && is_space(t[*b - 1]))
        (*b)--;
}

/* Code point at t[i] (or -1), for case and letter tests. */
static int32_t cp_at(const char *t, size_t n, size_t i)
{
    int32_t c = -1;

    if (i < n)
        mtx_utf8_decode(t + i, n - i, &c);
    return c;
}

static int is_upper_at(const char *t, size_t n, size_t i)
{
    int32_t c = cp_at(t, n, i);

    return c >= 0 && utf8proc_category(c) == UTF8PROC_CATEGORY_LU;
}

static int is_lower_at(const char *t, size_t n, size_t i)
{
    int32_t c = cp_at(t, n, i);

    return c >= 0 && utf8proc_category(c) == UTF8PROC_CATEGORY_LL;
}

static int is_letter_at(const char *t, size_t n, size_t i)
{
    int32_t c = cp_at(t, n, i);
    utf8proc_category_t cat = c >= 0 ? utf8proc_category(c) : 0;

    return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

/* Length of a closing quote or bracket at t[i], 0 if none. */
static size_t closer_len(const char *t, size_t n, size_t i)
{
    static const char *const closers[] = {
        "\xe2\x80\x9d", "\xe2\x80\x99", "\xc2\xbb", "\xe3\x80\x8d",
        "\xe3\x80\x8f", "\xef\xbc\x89", NULL,
    };
    size_t k;

    if (i >= n)
        return 0;
    if (t[i] == '"' || t[i] == '\'' || t[i] == ')' || t[i] == ']')
        return 1;
    for (k = 0; closers[k]; k++) {
        size_t m = strlen(closers[k]);
        if (i + m <= n && memcmp(t + i, closers[k], m) == 0)
            return m;
    }
    return 0;
}

/* ==== Splitter ==== */

/* Abbreviations that never end a sentence when a word follows. */
static const char *const abbr_title[] = {
    "dr",     "mr",  "mrs", "ms", "prof", "st", "no", "vs",  "e.g", "i.e",
    "approx", "fig", "cf",  "al", "dept", "sr", "jr", "nos", "pt",  NULL,
};

/* Abbreviations that end a sentence only before a capital letter. */
static const char *const abbr_soft[] = {
    "mg",  "mcg", "ml",    "kg",  "g",   "b.i.d", "t.i.d", "q.i.d",
    "q.d", "p.o", "p.r.n", "q.h", "h.s", "q.o.d", "etc",   "min",
    "hr",  "hrs", "a.m",   "p.m", "i.v", "i.m",   "s.c",   NULL,
};

static int in_list(const char *const *list, const char *w, size_t n)
{
    size_t k;

    for (k = 0; list[k]; k++)
        if (strlen(list[k]) == n && strncmp(list[k], w, n) == 0)
            return 1;
    return 0;
}

/* 0 = not an abbreviation, 1 = title-like, 2 = soft. Looks at the word
 * that ends just before the period at t[dot], lower-cased. */
static int abbr_kind(const char *t, size_t start, size_t dot)
{
    char w[16];
    size_t b = dot;
    size_t k;

    while (b > start && !is_space(t[b - 1]) && t[b - 1] != '(')
        b--;
    if (dot - b == 0 || dot - b >= sizeof w)
        return 0;
    for (k = 0; b + k < dot; k++) {
        char c = t[b + k];
        w[k] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    if (in_list(abbr_title, w, k))
        return 1;
    return in_list(abbr_soft, w, k) ? 2 : 0;
}

/* True when text[start..dot) holds only a list number ("12"). */
static int is_list_number(const char *t, size_t start, size_t dot)
{
    size_t a = start;
    size_t b = dot;

    trim(t, &a, &b);
    if (a == b || b - a > 3)
        return 0;
    for (; a < b; a++)
        if (!is_digit(t[a]))
            return 0;
    return 1;
}

/* Decides whether the '.' '!' or '?' run t[i..stop) (closers included,
 * 'after' is where the next word starts) ends a sentence. */
static int ends_sentence(const char *t, size_t n, size_t start, size_t i,
                         size_t stop)
{
    size_t nx = stop;
    size_t dots = 0;

    if (stop < n && !is_space(t[stop]))
        return 0; /* "2.5", "e.g.,", "b.i.d" inside */
    while (nx < n && is_space(t[nx]))
        nx++;
    if (nx >= n)
        return 1;
    while (i + dots < stop && t[i + dots] == '.')
        dots++;
    if (t[i] != '.')
        return 1;
    if (dots >= 2)
        return is_upper_at(t, n, nx); /* ellipsis */
    if (is_list_number(t, start, i) || is_lower_at(t, n, nx))
        return 0;
    switch (abbr_kind(t, start, i)) {
    case 1:
        return 0;
    case 2:
        return is_upper_at(t, n, nx);
    default:
        return 1;
    }
}

/* Length of a full-width stop (。！？) or Arabic '؟' at t[i], else 0. */
static size_t wide_stop_len(const char *t, size_t n, size_t i)
{
    const unsigned char *u = (const unsigned char *)t + i;

    if (i + 3 <= n && u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x82)
        return 3;
    if (i + 3 <= n && u[0] == 0xEF && u[1] == 0xBC &&
        (u[2] == 0x81 || u[2] == 0x9F))
        return 3;
    if (i + 2 <= n && u[0] == 0xD8 && u[1] == 0x9F)
        return 2;
    return 0;
}

/* True when the newline at t[i] ends a sentence: a blank line follows,
 * or the next line starts a list item ("1. ", "2) ", "- ", "* "). */
static int newline_ends(const char *t, size_t n, size_t i)
{
    size_t j = i + 1;
    size_t d = 0;

    while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r'))
        j++;
    if (j >= n || t[j] == '\n')
        return 1;
    if ((t[j] == '-' || t[j] == '*') && j + 1 < n && t[j + 1] == ' ')
        return 1;
    while (j + d < n && is_digit(t[j + d]))
        d++;
    return d > 0 && d <= 3 && j + d + 1 < n &&
           (t[j + d] == '.' || t[j + d] == ')') && t[j + d + 1] == ' ';
}

static enum mt_status push_span(struct vec *v, const char *t, size_t a,
                                size_t b)
{
    struct mt_span s;

    trim(t, &a, &b);
    if (a == b)
        return MT_OK;
    s.start = a;
    s.end = b;
    return vec_push(v, &s);
}

/* Finds where the stop run at t[i] ends: more stops, then closers.
 * Returns 0 when t[i] is no stop. */
static size_t stop_end(const char *t, size_t n, size_t i, int *wide)
{
    size_t j = i;
    size_t m;

    *wide = 0;
    while (j < n) {
        if (t[j] == '.' || t[j] == '!' || t[j] == '?') {
            j++;
        } else if ((m = wide_stop_len(t, n, j)) > 0) {
            *wide = 1;
            j += m;
        } else {
            break;
        }
    }
    if (j == i)
        return 0;
    while ((m = closer_len(t, n, j)) > 0)
        j += m;
    return j;
}

/* Returns the end of the sentence that starts at 'start', and sets *next
 * to where the next one starts. */
static size_t next_boundary(const char *t, size_t n, size_t start, size_t *next)
{
    size_t i = start;

    while (i < n) {
        int wide;
        size_t e = stop_end(t, n, i, &wide);

        if (e > 0 && (wide || ends_sentence(t, n, start, i, e))) {
            *next = e;
            return e;
        }
        if (e > 0) {
            i = e;
            continue;
        }
        if (t[i] == '\n' && i > start && newline_ends(t, n, i)) {
            *next = i + 1;
            return i;
        }
        i++;
    }
    *next = n;
    return n;
}

enum mt_status mtx_sentences_split(const char *text, size_t n,
                                   struct mt_span **out, size_t *count,
                                   struct mt_error *err)
{
    struct vec v = {NULL, 0, 0, sizeof(struct mt_span)};
    size_t start = 0;

    while (start < n) {
        size_t next;
        size_t end = next_boundary(text, n, start, &next);

        if (push_span(&v, text, start, end) != MT_OK) {
            mt_free(v.v);
            return mt_fail(err, MT_ENOMEM, "out of memory splitting");
        }
        start = next;
    }
    *out = v.v;
    *count = v.n;
    return MT_OK;
}

/* ==== MEDEC `Sentences` field ==== */

/* How believable a candidate id is as a sentence boundary. */
enum strength { S_NONE, S_WEAK, S_MEDIUM, S_STRONG };

struct field {
    const char *t;
    size_t n;
    int lines; /* newline form: ids only at line starts */
};

/* Strength of the boundary before t[j], for a sentence from 'from'. */
static enum strength strength_before(const struct field *f, size_t from,
                                     size_t j)
{
    static const char *const strong[] = {
        ".",
        "!",
        "?",
        ";",
        "\xd8\x8c",
        "\xd8\x9b",
        "\xd8\x9f",
        "\xe3\x80\x82",
        "\xef\xbc\x81",
        "\xef\xbc\x9f",
        "\xef\xbc\x9b",
        NULL,
    };
    static const char *const medium[] = {
        ",", ":", "\xef\xbc\x8c", "\xef\xbc\x9a", NULL,
    };
    size_t p = j;
    size_t k;

    while (p > from &&
           (f->t[p - 1] == ' ' || f->t[p - 1] == '\t' || f->t[p - 1] == '\r'))
        p--;
    if (p > from && f->t[p - 1] == '\n')
        return S_STRONG;
    if (f->lines)
        return S_NONE;
    /* Step back over closing quotes/brackets: "...space.” 2 She". */
    while (p > from && closer_len(f->t, f->n, p - 1) == 1)
        p--;
    for (k = 0; strong[k]; k++) {
        size_t m = strlen(strong[k]);
        if (p >= from + m && memcmp(f->t + p - m, strong[k], m) == 0)
            return S_STRONG;
    }
    for (k = 0; medium[k]; k++) {
        size_t m = strlen(medium[k]);
        if (p >= from + m && memcmp(f->t + p - m, medium[k], m) == 0)
            return S_MEDIUM;
    }
    return S_WEAK;
}

/* Does some non-space byte lie in [a, b)? */
static int has_text(const char *t, size_t a, size_t b)
{
    size_t x = a;
    size_t y = b;

    trim(t, &x, &y);
    return x < y;
}

/* An id follows a space, or is glued to a sentence's final period or
 * Arabic comma ("appendectomy.1 Granulation" in EN train, "...)،1" in
 * ARA validation), but never to a decimal ("2.4"). */
static int id_may_start(const struct field *f, size_t j)
{
    const char *t = f->t;

    if (is_space(t[j - 1]))
        return 1;
    if (f->lines || j < 2)
        return 0;
    if (t[j - 1] == '.')
        return !is_digit(t[j - 2]) && !is_space(t[j - 2]);
    if ((unsigned char)t[j - 2] != 0xD8)
        return 0;
    return (unsigned char)t[j - 1] == 0x8C || (unsigned char)t[j - 1] == 0x9B;
}

struct cand {
    size_t at;  /* where the id's digits start */
    size_t end; /* just past the id and the spaces after it */
    enum strength st;
    int upper; /* a capital letter follows */
};

/* Finds the first candidate for id 'k' at or after 'j' in a sentence that
 * started at 'from'. Returns 0 when there is none. */
static int find_cand(const struct field *f, size_t from, size_t j, int k,
                     struct cand *c)
{
    char id[16];
    size_t m = (size_t)snprintf(id, sizeof id, "%d", k);

    for (; j + m <= f->n; j++) {
        size_t e = j + m;

        if (j == 0 || memcmp(f->t + j, id, m) != 0 || !id_may_start(f, j))
            continue;
        if (e < f->n && (is_digit(f->t[e]) || !has_text(f->t, from, j)))
            continue;
        c->st = strength_before(f, from, j);
        if (c->st == S_NONE)
            continue;
        if (e < f->n && !is_space(f->t[e]) &&
            !(c->st == S_STRONG && is_letter_at(f->t, f->n, e)))
            continue;
        while (e < f->n && is_space(f->t[e]))
            e++;
        c->at = j;
        c->end = e;
        c->upper = is_upper_at(f->t, f->n, e);
        return 1;
    }
    return 0;
}

/* Picks the boundary before id k: the first strong candidate; else the
 * first medium one or weak one before a capital; else the first one that
 * id k+1 follows. Returns 0 when sentence k-1 runs to the end. */
static int pick_cand(const struct field *f, size_t from, int k,
                     struct cand *best)
{
    struct cand c;
    struct cand later;
    size_t j;
    int pass;

    for (pass = 0; pass < 3; pass++) {
        for (j = from; find_cand(f, from, j, k, &c); j = c.at + 1) {
            int ok = c.st == S_STRONG;

            if (pass >= 1)
                ok = ok || c.st == S_MEDIUM || c.upper;
            if (pass == 2)
                ok = ok || find_cand(f, c.end, c.end, k + 1, &later);
            if (ok) {
                *best = c;
                return 1;
            }
        }
    }
    return 0;
}

/* Newline form: some line (after the first) starts with "1" and a space. */
static int detect_lines(const char *t, size_t n)
{
    size_t i;

    for (i = 0; i + 2 < n; i++) {
        size_t j = i + 1;

        if (t[i] != '\n')
            continue;
        while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r'))
            j++;
        if (j + 1 < n && t[j] == '1' && is_space(t[j + 1]))
            return 1;
    }
    return 0;
}

static enum mt_status push_sentence(struct vec *v, const char *t, int id,
                                    size_t a, size_t b, struct mt_error *err)
{
    struct mt_medec_sentence s;

    trim(t, &a, &b);
    if (a == b)
        return mt_fail(err, MT_EPARSE, "sentence %d is empty", id);
    s.id = id;
    s.span.start = a;
    s.span.end = b;
    if (vec_push(v, &s) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory parsing sentences");
    return MT_OK;
}

/* Skips leading whitespace and the id 0. Returns 0 when absent. */
static int skip_id0(const char *t, size_t n, size_t *pos)
{
    size_t i = 0;

    while (i < n && is_space(t[i]))
        i++;
    /* "015-year-old" occurs (EN train): the id 0 glued to a number. */
    if (i >= n || t[i] != '0')
        return 0;
    *pos = i + 1;
    return 1;
}

enum mt_status mtx_medec_sentences_parse(const char *field, size_t n,
                                         struct mt_medec_sentence **out,
                                         size_t *count, struct mt_error *err)
{
    struct vec v = {NULL, 0, 0, sizeof(struct mt_medec_sentence)};
    struct field f = {field, n, detect_lines(field, n)};
    struct cand c;
    size_t from;
    enum mt_status st;
    int k = 0;

    if (!skip_id0(field, n, &from))
        return mt_fail(err, MT_EPARSE, "sentences do not start with id 0");
    while (pick_cand(&f, from, k + 1, &c)) {
        st = push_sentence(&v, field, k, from, c.at, err);
        if (st != MT_OK)
            goto fail;
        from = c.end;
        k++;
    }
    st = push_sentence(&v, field, k, from, n, err);
    if (st != MT_OK)
        goto fail;
    *out = v.v;
    *count = v.n;
    return MT_OK;
fail:
    mt_free(v.v);
    return st;
}
