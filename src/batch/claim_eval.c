/* Claim-verification sets scored (claim_eval.h): qa-eval --claims (the
 * verifier on each pair) and --verify (`medtrust verify` on each claim, or
 * the verifier on the gold pair with --given-evidence), as VerifAI's
 * SciFact and HealthVer tables are. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/claim_eval.h"
#include "batch/journal.h"
#include "core/buf.h"
#include "core/csv.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"
#include "qa/verify_int.h"

#define EVIDENCE_MAX ((size_t)1 << 20)

struct crow {
    char *claim;
    char *evidence; /* the gold evidence text, or NULL */
    char *gold_doc; /* the gold document id, or NULL */
    int gold;       /* 0 SUPPORT, 1 CONTRADICT, 2 NO_EVIDENCE */
    int pred;       /* the same; 3: OTHER */
    int failed;     /* a model call failed (PAIR: OTHER) */
    int hit;        /* the gold evidence among the documents found; -1:
                       not searched, or no evidence given */
};

struct cset {
    struct mt_qa *q;
    const struct mtx_claim_eval_params *p;
    struct crow *rows;
    size_t n, cap, skipped;
    struct mtx_work_queue wq;
};

void mtx_claim_eval_default_params(const struct mt_qa *q,
                                   struct mtx_claim_eval_params *p)
{
    memset(p, 0, sizeof *p);
    p->jobs = 4;
    p->mode = MTX_CLAIMS_PAIR;
    mt_verify_default_params(q, &p->vp);
}

/* ==== Reading the set ==== */

static long col_of(struct mt_csv *c, const char *name)
{
    char cap[32];
    long k = mtx_csv_find(c, name);

    snprintf(cap, sizeof cap, "%c%s", toupper((unsigned char)name[0]),
             name + 1);
    return k >= 0 ? k : mtx_csv_find(c, cap);
}

/* An evidence field that names a stored document (one word the store
 * holds as an id) is a document id; anything else is the evidence's
 * text; an empty one is none. */
static enum mt_status read_evidence(struct cset *s, struct crow *r,
                                    struct mt_str f)
{
    struct mt_retrieved_doc d;
    char *e;

    if (s->p->mode == MTX_CLAIMS_PAIR) { /* the text as it is, even empty */
        r->evidence = mt_strndup(f.p ? f.p : "", f.n);
        return r->evidence ? MT_OK : MT_ENOMEM;
    }
    f = mtx_str_trim(f);
    if (f.n == 0)
        return MT_OK;
    e = mt_strndup(f.p, f.n);
    if (!e)
        return MT_ENOMEM;
    if (f.n <= 64 && !memchr(f.p, ' ', f.n) &&
        mt_verify_lookup(s->q, "id", e, 64, &d, NULL) == MT_OK) {
        mt_retrieved_doc_free(&d);
        r->gold_doc = e;
    } else {
        r->evidence = e;
    }
    return MT_OK;
}

static struct crow *new_row(struct cset *s)
{
    struct crow *r;

    if (s->n == s->cap) {
        r = mt_realloc(s->rows, (s->cap ? s->cap * 2 : 64) * sizeof *r);
        if (!r)
            return NULL;
        s->rows = r;
        s->cap = s->cap ? s->cap * 2 : 64;
    }
    r = &s->rows[s->n];
    memset(r, 0, sizeof *r);
    r->hit = -1;
    return r;
}

static enum mt_status add_row(struct cset *s, struct mt_csv *c, const long *col)
{
    struct mt_str lab = mtx_str_trim(mtx_csv_field(c, (size_t)col[2]));
    struct mt_str cl = mtx_csv_field(c, (size_t)col[0]);
    enum mt_qa_label gold;
    char lb[64];
    struct crow *r;

    snprintf(lb, sizeof lb, "%.*s", (int)(lab.n < 63 ? lab.n : 63),
             lab.p ? lab.p : "");
    if (mt_qa_label_parse(lb, &gold) != MT_OK || gold > MT_QA_NO_EVIDENCE) {
        s->skipped++;
        return MT_OK;
    }
    r = new_row(s);
    if (!r || !(r->claim = mt_strndup(cl.p ? cl.p : "", cl.n)))
        return MT_ENOMEM;
    r->gold = (int)gold;
    s->n++;
    if (read_evidence(s, r, mtx_csv_field(c, (size_t)col[1])) != MT_OK)
        return MT_ENOMEM;
    if (s->p->mode == MTX_CLAIMS_GIVEN && !r->evidence && !r->gold_doc) {
        mt_free(r->claim); /* nothing to judge */
        s->n--;
        s->skipped++;
    }
    return MT_OK;
}

static enum mt_status load_set(struct cset *s, struct mt_error *err)
{
    const char *path = s->p->path;
    struct mt_csv *c = NULL;
    long col[3] = {-1, -1, -1};
    int got = 0;
    enum mt_status st = mtx_csv_open(path, NULL, &c, err);

    if (st == MT_OK)
        st = mtx_csv_next(c, &got, err);
    if (st == MT_OK && got) {
        col[0] = col_of(c, "claim");
        col[1] = col_of(c, "evidence");
        col[2] = col_of(c, "label");
    }
    if (st == MT_OK && (col[0] < 0 || col[1] < 0 || col[2] < 0))
        st = mt_fail(err, MT_EPARSE,
                     "%s: needs claim, evidence and label columns (a "
                     "header line naming them, as HealthVer's and "
                     "SciFact's CSV files have)",
                     path);
    while (st == MT_OK && (!s->p->limit || s->n < s->p->limit)) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_row(s, c, col);
    }
    mtx_csv_close(c);
    return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
}

/* ==== Judging ==== */

static int pred_of(enum mt_verdict v)
{
    return v == MT_VERDICT_SUPPORT       ? 0
           : v == MT_VERDICT_CONTRADICT  ? 1
           : v == MT_VERDICT_NO_EVIDENCE ? 2
                                         : 3;
}

/* Whether evidence e is the gold: its id, or its text holding the gold
 * text (or held in it), normalised as quotes are. */
static int is_gold(const struct crow *r, const struct mt_verify_evidence *e)
{
    if (r->gold_doc)
        return e->doc_id && strcmp(e->doc_id, r->gold_doc) == 0;
    return e->text && (mtx_vf_quote(r->evidence, e->text) == MT_QUOTE_FOUND ||
                       mtx_vf_quote(e->text, r->evidence) == MT_QUOTE_FOUND);
}

static int found_gold(const struct crow *r, const struct mt_verify_result *res)
{
    size_t i, k, j;

    for (i = 0; i < res->nsentences; i++)
        for (k = 0; k < res->sentences[i].nclaims; k++)
            for (j = 0; j < res->sentences[i].claims[k].nevidence; j++)
                if (is_gold(r, &res->sentences[i].claims[k].evidence[j]))
                    return 1;
    return 0;
}

static void search_row(struct cset *s, struct crow *r)
{
    struct mt_verify_result *res = NULL;
    enum mt_status st =
        mt_verify_one_claim(s->q, r->claim, &s->p->vp, &res, NULL);

    r->pred = res && res->nsentences ? pred_of(res->sentences[0].status) : 3;
    r->failed = st != MT_OK;
    if (r->gold_doc || r->evidence)
        r->hit = res ? found_gold(r, res) : 0;
    mt_verify_result_free(res);
}

/* The gold pair alone: the claim against the evidence text, or the gold
 * document's title and text. A label outside the three is OTHER. */
static void given_row(struct cset *s, struct crow *r)
{
    struct mt_retrieved_doc d;
    struct mt_buf b = MT_BUF_INIT(EVIDENCE_MAX + 4096);
    enum mt_qa_label l = MT_QA_NO_EVIDENCE;
    float sc = 0;
    enum mt_status st = MT_OK;

    memset(&d, 0, sizeof d);
    if (r->gold_doc)
        st = mt_verify_lookup(s->q, "id", r->gold_doc, EVIDENCE_MAX, &d, NULL);
    if (st == MT_OK)
        st = r->gold_doc ? mtx_buf_printf(&b, "%s%s%s", d.title ? d.title : "",
                                          d.title ? " " : "", d.text)
                         : mtx_buf_append_str(&b, r->evidence);
    if (st == MT_OK)
        st = mt_qa_verify(s->q, r->claim, b.data, &l, &sc, NULL);
    r->failed = st != MT_OK;
    r->pred = st == MT_OK && l <= MT_QA_NO_EVIDENCE ? (int)l : 3;
    mt_retrieved_doc_free(&d);
    mtx_buf_free(&b);
}

/* The verifier on the row's pair as given; a failure or a label outside
 * the three is OTHER and counted failed. */
static void pair_row(struct cset *s, struct crow *r)
{
    enum mt_qa_label l;
    float sc;

    r->pred =
        mt_qa_verify(s->q, r->claim, r->evidence, &l, &sc, NULL) == MT_OK &&
                l <= MT_QA_NO_EVIDENCE
            ? (int)l
            : 3;
    r->failed = r->pred == 3;
}

static void judge_row(size_t i, void *user)
{
    struct cset *s = user;
    struct crow *r = &s->rows[i];

    if (s->p->mode == MTX_CLAIMS_SEARCH)
        search_row(s, r);
    else if (s->p->mode == MTX_CLAIMS_GIVEN)
        given_row(s, r);
    else
        pair_row(s, r);
    if (s->p->on_claim)
        s->p->on_claim(s->p->user);
}

/* ==== Metrics ==== */

/* Macro-F1 over the three labels of rows idx[0..n) (F1 = 2 TP / (predicted
 * + gold), 0 when a label has no true positive; a row predicted OTHER
 * counts against its gold label's recall). */
static double macro_f1(const struct crow *rows, const size_t *idx, size_t n,
                       double *f1)
{
    size_t cm[3][MTX_CLAIM_NPRED];
    size_t i, k;
    double m = 0;

    memset(cm, 0, sizeof cm);
    for (i = 0; i < n; i++)
        cm[rows[idx ? idx[i] : i].gold][rows[idx ? idx[i] : i].pred]++;
    for (k = 0; k < 3; k++) {
        size_t tp = cm[k][k], pp = cm[0][k] + cm[1][k] + cm[2][k];
        size_t gp = cm[k][0] + cm[k][1] + cm[k][2] + cm[k][3];
        double f = tp ? 2.0 * (double)tp / (double)(pp + gp) : 0;

        if (f1)
            f1[k] = f;
        m += f / 3;
    }
    return m;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Percentile bootstrap (95%) of the macro-F1: rows resampled with
 * replacement, as mt_eval_bootstrap_ci resamples a mean. */
static enum mt_status f1_ci(const struct cset *s, double *lo, double *hi)
{
    size_t *idx = mt_malloc((s->n + 1) * sizeof *idx);
    double *m = mt_malloc(MT_EVAL_BOOT_RESAMPLES * sizeof *m);
    uint64_t seed = MT_EVAL_BOOT_SEED;
    size_t b, i, cut = (size_t)(0.025 * MT_EVAL_BOOT_RESAMPLES);

    if (!idx || !m) {
        mt_free(idx);
        mt_free(m);
        return MT_ENOMEM;
    }
    for (b = 0; b < MT_EVAL_BOOT_RESAMPLES; b++) {
        for (i = 0; i < s->n; i++)
            idx[i] = (size_t)(splitmix64(&seed) % s->n);
        m[b] = macro_f1(s->rows, idx, s->n, NULL);
    }
    qsort(m, MT_EVAL_BOOT_RESAMPLES, sizeof *m, cmp_double);
    *lo = m[cut];
    *hi = m[MT_EVAL_BOOT_RESAMPLES - 1 - cut];
    mt_free(idx);
    mt_free(m);
    return MT_OK;
}

/* The share of x[0..n) that is 1 and its 95% interval; -1 when n == 0. */
static enum mt_status mean_ci(const double *x, size_t n, double *v, double *lo,
                              double *hi)
{
    size_t i;
    double sum = 0;

    *v = *lo = *hi = -1;
    if (n == 0)
        return MT_OK;
    for (i = 0; i < n; i++)
        sum += x[i];
    *v = sum / (double)n;
    return mt_eval_bootstrap_ci(x, n, MT_EVAL_BOOT_RESAMPLES, MT_EVAL_BOOT_SEED,
                                lo, hi);
}

static enum mt_status compute(const struct cset *s, struct mtx_claim_eval *m)
{
    double *ok = mt_calloc(s->n + 1, sizeof *ok);
    double *hit = mt_calloc(s->n + 1, sizeof *hit);
    size_t i;
    enum mt_status st = ok && hit ? MT_OK : MT_ENOMEM;

    for (i = 0; st == MT_OK && i < s->n; i++) {
        const struct crow *r = &s->rows[i];

        ok[i] = r->pred == r->gold;
        m->cm[r->gold][r->pred]++;
        m->failed += (size_t)r->failed;
        if (r->hit >= 0)
            hit[m->rec_n++] = r->hit;
    }
    if (st == MT_OK)
        st = mean_ci(ok, s->n, &m->acc, &m->acc_lo, &m->acc_hi);
    if (st == MT_OK)
        st = mean_ci(hit, m->rec_n, &m->rec, &m->rec_lo, &m->rec_hi);
    m->f1 = macro_f1(s->rows, NULL, s->n, m->per);
    m->f1_lo = m->f1_hi = -1;
    if (st == MT_OK && s->n)
        st = f1_ci(s, &m->f1_lo, &m->f1_hi);
    mt_free(ok);
    mt_free(hit);
    return st;
}

/* ==== The run ==== */

static void free_set(struct cset *s)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        mt_free(s->rows[i].claim);
        mt_free(s->rows[i].evidence);
        mt_free(s->rows[i].gold_doc);
    }
    mt_free(s->rows);
}

enum mt_status mtx_claim_eval_run(struct mt_qa *q,
                                  const struct mtx_claim_eval_params *p,
                                  struct mtx_claim_eval *out,
                                  struct mt_error *err)
{
    struct cset s;
    enum mt_status st;

    memset(&s, 0, sizeof s);
    memset(out, 0, sizeof *out);
    s.q = q;
    s.p = p;
    st = load_set(&s, err);
    if (st == MT_OK && p->on_start)
        p->on_start(p->user, s.n);
    if (st == MT_OK) {
        mtx_work_init(&s.wq, s.n);
        st = mtx_work_run(&s.wq, p->jobs ? p->jobs : 1, judge_row, &s, err);
        mtx_work_destroy(&s.wq);
    }
    if (st == MT_OK)
        st = compute(&s, out);
    out->claims = s.n;
    out->skipped = s.skipped;
    free_set(&s);
    return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
}
