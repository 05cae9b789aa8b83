/* Fuzzy sentence matching: unit sets (tokens or CJK bigrams) hashed with
 * FNV-1a, sorted, and intersected. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/match.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define FNV_OFF 1469598103934665603ULL
#define FNV_MUL 1099511628211ULL

struct units {
    uint64_t *h;
    size_t n;
    size_t cap;
};

static int is_cjk(int32_t c)
{
    return (c >= 0x3400 && c <= 0x9fff) || (c >= 0xf900 && c <= 0xfaff) ||
           (c >= 0x3040 && c <= 0x30ff) || (c >= 0xac00 && c <= 0xd7af);
}

/* Folds c; returns -1 for separators (space, punctuation) and 0 for marks
 * that are dropped (Arabic diacritics, tatweel). */
static int32_t fold(int32_t c)
{
    if (c < 0x80) {
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))
            return c;
        return c >= 'A' && c <= 'Z' ? c + 32 : -1;
    }
    if ((c >= 0x064b && c <= 0x065f) || c == 0x0670 || c == 0x0640)
        return 0;
    if ((c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f) ||
        (c >= 0xff00 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
        c == 0x060c || c == 0x061b || c == 0x061f || c == 0x06d4 ||
        c == 0x00a0 || c == 0x00b7)
        return -1;
    return c;
}

static int push(struct units *u, uint64_t h)
{
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 32;
        uint64_t *p = mt_realloc(u->h, cap * sizeof *p);

        if (!p)
            return -1;
        u->h = p;
        u->cap = cap;
    }
    u->h[u->n++] = h;
    return 0;
}

static uint64_t mix(uint64_t h, int32_t c)
{
    return (h ^ (uint64_t)(uint32_t)c) * FNV_MUL;
}

/* Word tokens: runs of non-separator code points. */
static int tokens(struct mt_str s, struct units *u)
{
    size_t i = 0;
    uint64_t h = FNV_OFF;
    int in_word = 0;

    while (i < s.n) {
        int32_t c;
        size_t k = mtx_utf8_decode(s.p + i, s.n - i, &c);

        i += k ? k : 1;
        c = fold(c);
        if (c > 0) {
            h = mix(h, c);
            in_word = 1;
        } else if (c < 0 && in_word) {
            if (push(u, h) < 0)
                return -1;
            h = FNV_OFF;
            in_word = 0;
        }
    }
    return in_word ? push(u, h) : 0;
}

/* Bigrams of consecutive kept code points (a lone one is a unigram). */
static int bigrams(struct mt_str s, struct units *u)
{
    size_t i = 0;
    int32_t prev = 0;
    size_t kept = 0;

    while (i < s.n) {
        int32_t c;
        size_t k = mtx_utf8_decode(s.p + i, s.n - i, &c);

        i += k ? k : 1;
        c = fold(c);
        if (c <= 0)
            continue;
        if (kept++ && push(u, mix(mix(FNV_OFF, prev), c)) < 0)
            return -1;
        prev = c;
    }
    return kept == 1 ? push(u, mix(FNV_OFF, prev)) : 0;
}

/* 1 when at least a fifth of the kept code points of s are CJK. */
static int mostly_cjk(struct mt_str s)
{
    size_t i = 0;
    size_t all = 0;
    size_t cjk = 0;

    while (i < s.n) {
        int32_t c;
        size_t k = mtx_utf8_decode(s.p + i, s.n - i, &c);

        i += k ? k : 1;
        if (fold(c) > 0) {
            all++;
            cjk += (size_t)is_cjk(c);
        }
    }
    return all > 0 && cjk * 5 >= all;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Sorts and removes duplicates. */
static void make_set(struct units *u)
{
    size_t i;
    size_t k = 0;

    if (u->n == 0)
        return;
    qsort(u->h, u->n, sizeof *u->h, cmp_u64);
    for (i = 1; i < u->n; i++)
        if (u->h[i] != u->h[k])
            u->h[++k] = u->h[i];
    u->n = k + 1;
}

static int units_of(struct mt_str s, int cjk, struct units *u)
{
    memset(u, 0, sizeof *u);
    if ((cjk ? bigrams(s, u) : tokens(s, u)) < 0)
        return -1;
    make_set(u);
    return 0;
}

static size_t common(const struct units *a, const struct units *b)
{
    size_t i = 0;
    size_t j = 0;
    size_t n = 0;

    while (i < a->n && j < b->n) {
        if (a->h[i] == b->h[j]) {
            n++;
            i++;
            j++;
        } else if (a->h[i] < b->h[j]) {
            i++;
        } else {
            j++;
        }
    }
    return n;
}

static double score_sets(const struct units *q, const struct units *s)
{
    double c;

    if (q->n == 0 || s->n == 0)
        return 0;
    c = (double)common(q, s);
    return 0.75 * c / (double)q->n + 0.25 * c / (double)s->n;
}

int mtx_match_sentence(struct mt_str q, const struct mt_str *sents, size_t n,
                       double min_score, double *score)
{
    struct units uq;
    int cjk = mostly_cjk(q);
    double best = 0;
    int id = -1;
    size_t i;

    if (units_of(q, cjk, &uq) < 0) {
        mt_free(uq.h);
        return -1;
    }
    for (i = 0; i < n; i++) {
        struct units us;
        double v = 0;

        if (units_of(sents[i], cjk, &us) == 0)
            v = score_sets(&uq, &us);
        mt_free(us.h);
        if (v > best) {
            best = v;
            id = (int)i;
        }
    }
    mt_free(uq.h);
    if (score)
        *score = best;
    return best >= min_score && best > 0 ? id : -1;
}
