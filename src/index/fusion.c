/* Hybrid fusion: VerifAI's max-normalised weighted sum, and RRF. */
#include <stdlib.h>
#include <string.h>

#include "index/fusion.h"

static int by_score(const void *a, const void *b)
{
    const struct mt_scored *x = a;
    const struct mt_scored *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_key(const void *a, const void *b)
{
    const struct mt_scored *x = a;
    const struct mt_scored *y = b;

    return (x->key > y->key) - (x->key < y->key);
}

void mtx_scored_sort(struct mt_scored *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, by_score);
}

static double top_score(const struct mt_scored *v, size_t n)
{
    double m = 0.0;
    size_t i;

    for (i = 0; i < n; i++)
        if (v[i].score > m)
            m = v[i].score;
    return m;
}

/* Appends w * score / norm for each entry into out, then merges entries
 * with equal keys by summing. Returns the new length. */
static size_t merge_sum(struct mt_scored *out, size_t n)
{
    size_t i, w = 0;

    qsort(out, n, sizeof *out, by_key);
    for (i = 0; i < n; i++) {
        if (w > 0 && out[w - 1].key == out[i].key)
            out[w - 1].score += out[i].score;
        else
            out[w++] = out[i];
    }
    return w;
}

static size_t append_scaled(struct mt_scored *out, size_t at,
                            const struct mt_scored *v, size_t n, double w)
{
    double top = top_score(v, n);
    size_t i;

    if (top <= 0.0)
        return at;
    for (i = 0; i < n; i++) {
        out[at].key = v[i].key;
        out[at++].score = w * (v[i].score / top);
    }
    return at;
}

size_t mtx_fuse_linear(const struct mt_scored *lex, size_t nlex,
                       const struct mt_scored *sem, size_t nsem, double w_lex,
                       double w_sem, struct mt_scored *out)
{
    size_t n = append_scaled(out, 0, lex, nlex, w_lex);

    n = append_scaled(out, n, sem, nsem, w_sem);
    n = merge_sum(out, n);
    mtx_scored_sort(out, n);
    return n;
}

/* Appends w / (k + rank) in the list's own score order. */
static size_t append_rrf(struct mt_scored *out, size_t at,
                         const struct mt_scored *v, size_t n, double w,
                         uint32_t k)
{
    size_t i;
    size_t start = at;

    memcpy(out + at, v, n * sizeof *v);
    mtx_scored_sort(out + start, n);
    for (i = 0; i < n; i++)
        out[start + i].score = w / ((double)k + (double)(i + 1));
    return at + n;
}

size_t mtx_fuse_rrf(const struct mt_scored *lex, size_t nlex,
                    const struct mt_scored *sem, size_t nsem, double w_lex,
                    double w_sem, uint32_t k, struct mt_scored *out)
{
    size_t n = append_rrf(out, 0, lex, nlex, w_lex, k);

    n = append_rrf(out, n, sem, nsem, w_sem, k);
    n = merge_sum(out, n);
    mtx_scored_sort(out, n);
    return n;
}
