/* BERTScore math (Zhang et al., ICLR 2020, as the bert_score package
 * computes it): greedy cosine matching of token embeddings, optional idf
 * weights, baseline rescaling. Embeddings come from any encoder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"

static double row_norm(const float *v, size_t dim)
{
    double s = 0.0;
    size_t i;

    for (i = 0; i < dim; i++)
        s += (double)v[i] * (double)v[i];
    return sqrt(s);
}

static double cosine(const float *a, double na, const float *b, double nb,
                     size_t dim)
{
    double s = 0.0;
    size_t i;

    if (na == 0.0 || nb == 0.0)
        return 0.0;
    for (i = 0; i < dim; i++)
        s += (double)a[i] * (double)b[i];
    return s / (na * nb);
}

/* Weighted mean over the rows of x of each row's best cosine against y. */
static double greedy_side(const float *x, const double *nx, size_t n,
                          const float *y, const double *ny, size_t m,
                          size_t dim, const double *w)
{
    double num = 0.0;
    double den = 0.0;
    size_t i;
    size_t j;

    for (i = 0; i < n; i++) {
        double best = -INFINITY;
        double wi = w ? w[i] : 1.0;
        for (j = 0; j < m; j++) {
            double c = cosine(x + i * dim, nx[i], y + j * dim, ny[j], dim);
            if (c > best)
                best = c;
        }
        num += wi * best;
        den += wi;
    }
    return den > 0.0 ? num / den : 0.0;
}

static double rescale(double x, double b)
{
    return (x - b) / (1.0 - b);
}

enum mt_status
mt_bertscore_greedy(const float *cand, size_t nc, const float *ref, size_t nr,
                    size_t dim, const double *idf_cand, const double *idf_ref,
                    const double *baseline, struct mt_bertscore *out)
{
    double *nx;
    double *ny;
    size_t i;

    if (nc == 0 || nr == 0 || dim == 0)
        return MT_EINVAL;
    nx = mt_malloc(nc * sizeof *nx);
    ny = mt_malloc(nr * sizeof *ny);
    if (!nx || !ny) {
        mt_free(nx);
        mt_free(ny);
        return MT_ENOMEM;
    }
    for (i = 0; i < nc; i++)
        nx[i] = row_norm(cand + i * dim, dim);
    for (i = 0; i < nr; i++)
        ny[i] = row_norm(ref + i * dim, dim);
    out->p = greedy_side(cand, nx, nc, ref, ny, nr, dim, idf_cand);
    out->r = greedy_side(ref, ny, nr, cand, nx, nc, dim, idf_ref);
    out->f = out->p + out->r == 0.0 ? 0.0
                                    : 2.0 * out->p * out->r / (out->p + out->r);
    if (baseline) {
        out->p = rescale(out->p, baseline[0]);
        out->r = rescale(out->r, baseline[1]);
        out->f = rescale(out->f, baseline[2]);
    }
    mt_free(nx);
    mt_free(ny);
    return MT_OK;
}

/* ==== idf ==== */

struct mt_idf {
    int32_t *ids; /* sorted distinct token ids */
    uint32_t *df;
    size_t n;
    size_t m; /* reference texts */
};

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

/* Appends the distinct ids of one text to all[*k..]. */
static void add_distinct(int32_t *all, size_t *k, const int32_t *ids, size_t n)
{
    size_t s = *k;
    size_t i;
    size_t u;

    if (n == 0)
        return;
    memcpy(all + s, ids, n * sizeof *ids);
    qsort(all + s, n, sizeof *all, cmp_i32);
    for (i = 1, u = 0; i < n; i++)
        if (all[s + i] != all[s + u])
            all[s + ++u] = all[s + i];
    *k = s + u + 1;
}

enum mt_status mt_idf_build(const int32_t *const *ids, const size_t *nids,
                            size_t m, struct mt_idf **out)
{
    struct mt_idf *t = mt_calloc(1, sizeof *t);
    size_t total = 0;
    size_t k = 0;
    size_t i;

    for (i = 0; i < m; i++)
        total += nids[i];
    if (t) {
        t->ids = mt_malloc((total + 1) * sizeof *t->ids);
        t->df = mt_malloc((total + 1) * sizeof *t->df);
    }
    if (!t || !t->ids || !t->df) {
        mt_idf_free(t);
        return MT_ENOMEM;
    }
    t->m = m;
    for (i = 0; i < m; i++)
        add_distinct(t->ids, &k, ids[i], nids[i]);
    qsort(t->ids, k, sizeof *t->ids, cmp_i32);
    for (i = 0; i < k; i++) {
        if (t->n > 0 && t->ids[t->n - 1] == t->ids[i]) {
            t->df[t->n - 1]++;
            continue;
        }
        t->ids[t->n] = t->ids[i];
        t->df[t->n++] = 1;
    }
    *out = t;
    return MT_OK;
}

double mt_idf_get(const struct mt_idf *t, int32_t id)
{
    const int32_t *p = bsearch(&id, t->ids, t->n, sizeof id, cmp_i32);
    double df = p ? (double)t->df[p - t->ids] : 0.0;

    return log(((double)t->m + 1.0) / (df + 1.0));
}

void mt_idf_free(struct mt_idf *t)
{
    if (!t)
        return;
    mt_free(t->ids);
    mt_free(t->df);
    mt_free(t);
}
