/* Per-pair external scores (BLEURT), breakdown groups and percentile
 * bootstrap intervals for headline numbers and paired differences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"

/* ==== External per-pair scores ==== */

struct mt_eval_scores {
    struct mt_arena arena;
    struct mt_ev_map ids; /* id -> index into v */
    double *v;
    size_t n;
};

/* Splits "<id> <score>" (space, tab or comma separated; the score is the
 * last field). Returns 0 on success. */
static int parse_score_line(struct mt_str l, struct mt_str *id, double *v)
{
    size_t e = l.n;
    size_t s;
    char num[64];
    char *end;

    while (e > 0 && (l.p[e - 1] == ' ' || l.p[e - 1] == '\t'))
        e--;
    s = e;
    while (s > 0 && l.p[s - 1] != ' ' && l.p[s - 1] != '\t' &&
           l.p[s - 1] != ',')
        s--;
    if (s == 0 || e - s == 0 || e - s >= sizeof num)
        return -1;
    memcpy(num, l.p + s, e - s);
    num[e - s] = '\0';
    *v = strtod(num, &end);
    if (*end != '\0' || !isfinite(*v))
        return -1;
    id->p = l.p;
    id->n = 0;
    while (id->n < s - 1 && l.p[id->n] != ' ' && l.p[id->n] != '\t' &&
           l.p[id->n] != ',')
        id->n++;
    return id->n ? 0 : -1;
}

static enum mt_status scores_add(struct mt_eval_scores *s, struct mt_str id,
                                 double v)
{
    char *key = mtx_arena_strndup(&s->arena, id.p, id.n);
    double *nv = mt_realloc(s->v, (s->n + 1) * sizeof *nv);

    if (nv)
        s->v = nv;
    if (!key || !nv)
        return MT_ENOMEM;
    s->v[s->n] = v;
    return mtx_ev_map_put(&s->ids, mtx_str_from(key), (long)s->n++);
}

static enum mt_status scores_parse(struct mt_eval_scores *s, const char *d,
                                   size_t n, const char *path,
                                   struct mt_error *err)
{
    size_t i = 0;
    size_t line = 0;

    while (i < n) {
        const char *nl = memchr(d + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - d) : n;
        struct mt_str l = mtx_str_trim((struct mt_str){d + i, e - i});
        struct mt_str id;
        double v;
        line++;
        i = e + 1;
        if (l.n == 0 || l.p[0] == '#')
            continue;
        if (parse_score_line(l, &id, &v) != 0) {
            if (s->n == 0 && line == 1)
                continue; /* a header line */
            return mt_fail(err, MT_EPARSE,
                           "%s:%zu: expected '<text id> "
                           "<score>'",
                           path, line);
        }
        if (scores_add(s, id, v) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    return s->n ? MT_OK : mt_fail(err, MT_EPARSE, "%s: no scores found", path);
}

enum mt_status mt_eval_scores_load(const char *path,
                                   struct mt_eval_scores **out,
                                   struct mt_error *err)
{
    struct mt_eval_scores *s;
    char *d = NULL;
    size_t n = 0;
    enum mt_status st = mtx_ev_read_file(path, &d, &n, err);

    if (st != MT_OK)
        return st;
    s = mt_calloc(1, sizeof *s);
    if (!s) {
        mt_free(d);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    s->arena = MT_ARENA_INIT(1 << 14);
    st = scores_parse(s, d, n, path, err);
    mt_free(d);
    if (st != MT_OK) {
        mt_eval_scores_free(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

int mt_eval_scores_get(const struct mt_eval_scores *s, const char *id,
                       double *v)
{
    long i = mtx_ev_map_get(&s->ids, mtx_str_from(id));

    if (i < 0)
        return -1;
    *v = s->v[i];
    return 0;
}

void mt_eval_scores_free(struct mt_eval_scores *s)
{
    if (!s)
        return;
    mtx_ev_map_free(&s->ids);
    mtx_arena_free(&s->arena);
    mt_free(s->v);
    mt_free(s);
}

/* ==== Breakdown groups ==== */

static const char *const field_keys[MT_EV_FIELD_COUNT] = {
    "error_type",
    "difficulty",
    "reasoning_type",
    "language",
};

const char *mtx_ev_field_key(enum mt_ev_field f)
{
    return field_keys[f];
}

static const char *note_field(const struct mt_eval_note *n, enum mt_ev_field f)
{
    switch (f) {
    case MT_EV_ERROR_TYPE:
        return n->error_type;
    case MT_EV_DIFFICULTY:
        return n->difficulty;
    case MT_EV_REASONING:
        return n->reasoning;
    default:
        return n->language;
    }
}

static void add_to_group(struct mt_ev_group *g,
                         const struct mt_eval_note_score *ns)
{
    int k;

    g->n++;
    g->flag_acc += ns->flag_ok;
    g->sent_acc += ns->sent_ok;
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        g->m[k] += ns->m[k];
}

enum mt_status mtx_ev_groups(const struct mt_eval_result *r,
                             const struct mt_eval_ref *ref, enum mt_ev_field f,
                             struct mt_ev_group **out, size_t *n)
{
    struct mt_ev_group *g = mt_calloc(r->notes + 1, sizeof *g);
    size_t ng = 0, i, j;
    int k;

    *out = NULL;
    *n = 0;
    if (!g)
        return MT_ENOMEM;
    for (i = 0; i < r->notes; i++) {
        const char *l = note_field(mt_eval_ref_note(ref, i), f);
        if (!l || !l[0])
            continue;
        for (j = 0; j < ng && strcmp(g[j].label, l) != 0; j++)
            ;
        g[j].label = l;
        ng += j == ng;
        add_to_group(&g[j], &r->per_note[i]);
    }
    for (j = 0; j < ng; j++) {
        g[j].flag_acc /= (double)g[j].n;
        g[j].sent_acc /= (double)g[j].n;
        for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
            g[j].m[k] /= (double)g[j].n;
    }
    if (ng == 0) {
        mt_free(g);
        g = NULL;
    }
    *out = g;
    *n = ng;
    return MT_OK;
}

/* ==== Bootstrap ==== */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return (x > y) - (x < y);
}

enum mt_status mt_eval_bootstrap_ci(const double *x, size_t n, size_t resamples,
                                    uint64_t seed, double *lo, double *hi)
{
    double *means;
    uint64_t s = seed;
    size_t b;
    size_t i;
    size_t cut;

    if (n == 0 || resamples == 0)
        return MT_EINVAL;
    means = mt_malloc(resamples * sizeof *means);
    if (!means)
        return MT_ENOMEM;
    for (b = 0; b < resamples; b++) {
        double sum = 0.0;
        for (i = 0; i < n; i++)
            sum += x[splitmix64(&s) % n]; /* bias < n / 2^64 */
        means[b] = sum / (double)n;
    }
    qsort(means, resamples, sizeof *means, cmp_double);
    cut = (size_t)(0.025 * (double)resamples);
    *lo = means[cut];
    *hi = means[resamples - 1 - cut];
    mt_free(means);
    return MT_OK;
}

/* Per-note values of headline 'which' into v; 0 when the metric is absent. */
static int headline_values(const struct mt_eval_result *r, int which, double *v)
{
    size_t i;

    if (which >= 0 && !(r->metrics & (1u << which)))
        return 0;
    for (i = 0; i < r->notes; i++) {
        const struct mt_eval_note_score *ns = &r->per_note[i];
        v[i] = which == MT_EV_FLAG   ? ns->flag_ok
               : which == MT_EV_SENT ? ns->sent_ok
                                     : ns->m[which];
    }
    return 1;
}

double mtx_ev_headline(const struct mt_eval_result *r, int which)
{
    if (which == MT_EV_FLAG)
        return r->flag_acc;
    if (which == MT_EV_SENT)
        return r->sent_acc;
    return (r->metrics & (1u << which)) ? r->composite[which] : MT_EV_NAN;
}

enum mt_status mtx_ev_headline_ci(const struct mt_eval_result *r, int which,
                                  double *lo, double *hi)
{
    double *v = mt_malloc((r->notes + 1) * sizeof *v);
    enum mt_status st = MT_OK;

    *lo = *hi = NAN;
    if (!v)
        return MT_ENOMEM;
    if (headline_values(r, which, v) && r->notes > 0)
        st = mt_eval_bootstrap_ci(v, r->notes, MT_EVAL_BOOT_RESAMPLES,
                                  MT_EVAL_BOOT_SEED, lo, hi);
    mt_free(v);
    return st;
}

enum mt_status mtx_ev_diff_ci(const struct mt_eval_result *a,
                              const struct mt_eval_result *b, int which,
                              double *mean, double *lo, double *hi)
{
    double *va = mt_malloc((a->notes + 1) * sizeof *va);
    double *vb = mt_malloc((a->notes + 1) * sizeof *vb);
    enum mt_status st = MT_OK;
    size_t i;

    *mean = *lo = *hi = NAN;
    if (!va || !vb || a->notes != b->notes) {
        st = !va || !vb ? MT_ENOMEM : MT_EINVAL;
    } else if (a->notes > 0 && headline_values(a, which, va) &&
               headline_values(b, which, vb)) {
        double sum = 0.0;
        for (i = 0; i < a->notes; i++) {
            va[i] -= vb[i];
            sum += va[i];
        }
        *mean = sum / (double)a->notes;
        st = mt_eval_bootstrap_ci(va, a->notes, MT_EVAL_BOOT_RESAMPLES,
                                  MT_EVAL_BOOT_SEED, lo, hi);
    }
    mt_free(va);
    mt_free(vb);
    return st;
}
