/* The MEDIQA-CORR 2024 scorer: accuracies over all reference notes, per-note
 * correction scores (NA rules, clipped metrics), composites, pair means and
 * MedGuards KPCS. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"
#include "text/utf8.h"

static const char *const metric_keys[MT_EVAL_METRIC_COUNT] = {
    "rouge1", "rouge2", "rougeL", "bertscore", "bleurt", "aggregate", "kpcs",
};

const char *mt_eval_metric_key(enum mt_eval_metric m)
{
    return (unsigned)m < MT_EVAL_METRIC_COUNT ? metric_keys[m] : "unknown";
}

void mt_eval_default_params(struct mt_eval_params *p)
{
    memset(p, 0, sizeof *p);
    p->kpcs = 1;
    p->kpcs_alpha = 0.5;
    p->kpcs_match = MT_EVAL_KW_EXACT;
}

struct sctx {
    const struct mt_eval_ref *ref;
    const struct mt_eval_sub *sub;
    struct mt_eval_params p;
    struct mt_eval_result *r;
    struct mt_error *err;
    struct mt_idf *idf;   /* BERTScore idf weights, or NULL */
    struct mtx_jieba *jb; /* loaded at the first Chinese KPCS pair */
};

static enum mt_status warn(struct mt_eval_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum mt_status warn(struct mt_eval_result *r, const char *fmt, ...)
{
    struct mt_buf b = MT_BUF_INIT(4096);
    char **w;
    va_list ap;
    enum mt_status st;

    va_start(ap, fmt);
    st = mtx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    w = st == MT_OK ? mt_realloc(r->warnings, (r->nwarnings + 1) * sizeof *w)
                    : NULL;
    if (!w) {
        mtx_buf_free(&b);
        return MT_ENOMEM;
    }
    r->warnings = w;
    r->warnings[r->nwarnings++] = mtx_buf_take(&b);
    return MT_OK;
}

/* ==== KPCS keyword test ==== */

/* Case-folded (NFKC) text with whitespace runs collapsed to one space and
 * trimmed, for --kpcs-match normalized. Caller frees. */
static char *kw_normalize(const char *s)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_str t;
    char *f = NULL;
    size_t fn = 0;
    size_t pos = 0;
    int first = 1;

    if (mtx_text_fold(s, strlen(s), &f, &fn, NULL) != MT_OK)
        return NULL;
    while (mtx_ev_next_token(f, fn, &pos, &t)) {
        if ((!first && mtx_buf_putc(&b, ' ') != MT_OK) ||
            mtx_buf_append(&b, t.p, t.n) != MT_OK) {
            mtx_buf_free(&b);
            mt_free(f);
            return NULL;
        }
        first = 0;
    }
    mt_free(f);
    if (mtx_buf_reserve(&b, 1) != MT_OK)
        return NULL;
    return mtx_buf_take(&b);
}

/* 1 when the keywords stand in the prediction, 0 when not, -1 on OOM. */
static int keyword_found(const char *kw, const char *pred,
                         enum mt_eval_kw_match how)
{
    char *a;
    char *b;
    int found;

    if (how == MT_EVAL_KW_EXACT)
        return strstr(pred, kw) != NULL;
    a = kw_normalize(kw);
    b = kw_normalize(pred);
    found = a && b ? strstr(b, a) != NULL : -1;
    mt_free(a);
    mt_free(b);
    return found;
}

/* ==== One scored pair ==== */

/* One encoded text: token rows, ids and (with idf) their weights. */
struct enc {
    float *v;
    int32_t *ids;
    double *w;
    size_t n, dim;
};

static void enc_free(struct enc *x)
{
    mt_free(x->v);
    mt_free(x->ids);
    mt_free(x->w);
    memset(x, 0, sizeof *x);
}

static enum mt_status enc_text(struct sctx *c, const char *s, struct enc *x)
{
    const struct mt_token_encoder *e = c->p.bert;
    enum mt_status st = e->encode(e->user, s, strlen(s), &x->v, &x->ids, &x->n,
                                  &x->dim, c->err);
    size_t i;
    int special = 0;

    for (i = 0; st == MT_OK && x->ids && i < x->n; i++)
        special |= x->ids[i] < 0;
    if (st != MT_OK || (!c->idf && !special) || x->n == 0)
        return st;
    if (!x->ids)
        return mt_fail(c->err, MT_EINVAL,
                       "BERTScore idf: the encoder gives no token ids");
    x->w = mt_malloc(x->n * sizeof *x->w);
    if (!x->w)
        return mt_fail(c->err, MT_ENOMEM, "out of memory");
    /* special tokens weigh 0 (bert_score sets their idf to 0), the others
     * their idf, or 1 without idf */
    for (i = 0; i < x->n; i++)
        x->w[i] = x->ids[i] < 0 ? 0.0
                  : c->idf      ? mt_idf_get(c->idf, x->ids[i])
                                : 1.0;
    return MT_OK;
}

static enum mt_status bert_pair(struct sctx *c, const char *cand,
                                const char *refs, double *f)
{
    struct enc a = {NULL, NULL, NULL, 0, 0};
    struct enc b = {NULL, NULL, NULL, 0, 0};
    struct mt_bertscore bs = {0.0, 0.0, 0.0};
    enum mt_status st = enc_text(c, cand, &a);

    if (st == MT_OK)
        st = enc_text(c, refs, &b);
    if (st == MT_OK && a.dim != b.dim)
        st = mt_fail(c->err, MT_EINTERNAL,
                     "BERTScore encoder gave "
                     "dimensions %zu and %zu",
                     a.dim, b.dim);
    if (st == MT_OK)
        st = mt_bertscore_greedy(a.v, a.n, b.v, b.n, a.dim, a.w, b.w,
                                 c->p.bert_base, &bs);
    if (st == MT_EINVAL) {
        bs.f = 0.0; /* a side without tokens matches nothing */
        st = MT_OK;
    }
    *f = mtx_ev_clip01(bs.f);
    enc_free(&a);
    enc_free(&b);
    return st;
}

/* idf over the reference corrections: every note whose gold correction is
 * not NA, the same table for every run so that paired differences compare
 * like with like (bert_score's score(cands, refs, idf=True) takes it over
 * the refs it is handed, i.e. one run's scored pairs). */
static enum mt_status build_idf(struct sctx *c)
{
    size_t n = mt_eval_ref_count(c->ref);
    int32_t **ids = mt_calloc(n + 1, sizeof *ids);
    size_t *nids = mt_calloc(n + 1, sizeof *nids);
    size_t m = 0;
    size_t i;
    enum mt_status st = ids && nids ? MT_OK : MT_ENOMEM;

    for (i = 0; st == MT_OK && i < n; i++) {
        const struct mt_eval_note *note = mt_eval_ref_note(c->ref, i);
        struct enc x = {NULL, NULL, NULL, 0, 0};
        if (strcmp(note->correction, "NA") == 0)
            continue;
        st = enc_text(c, note->correction, &x); /* c->idf is still NULL */
        if (st == MT_OK && x.n > 0 && !x.ids)
            st = mt_fail(c->err, MT_EINVAL,
                         "BERTScore idf: the encoder gives no token ids");
        ids[m] = x.ids;
        nids[m++] = x.n;
        x.ids = NULL;
        enc_free(&x);
    }
    if (st == MT_OK)
        st = mt_idf_build((const int32_t *const *)ids, nids, m, &c->idf);
    for (i = 0; i < m; i++)
        mt_free(ids[i]);
    mt_free(ids);
    mt_free(nids);
    return st;
}

/* Mean of the computed metrics among ROUGE-1, BERTScore and BLEURT, as the
 * official aggregate (ROUGE-1 is always computed). */
static double aggregate(const double *m)
{
    static const int parts[] = {MT_EVAL_ROUGE1, MT_EVAL_BERTSCORE,
                                MT_EVAL_BLEURT};
    double sum = 0.0;
    int k = 0;
    size_t i;

    for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (isnan(m[parts[i]]))
            continue;
        sum += m[parts[i]];
        k++;
    }
    return k ? sum / k : MT_EV_NAN;
}

/* A metric read from a per-pair scores file (BLEURT, or BERTScore from
 * the official run): every note with both corrections needs one. */
static enum mt_status file_score(struct sctx *c,
                                 const struct mt_eval_scores *sc,
                                 const char *what, const char *id, double *v)
{
    if (mt_eval_scores_get(sc, id, v) != 0)
        return mt_fail(c->err, MT_EPARSE,
                       "%s scores: no score for '%s', a note with both "
                       "corrections given",
                       what, id);
    *v = mtx_ev_clip01(*v);
    return MT_OK;
}

static enum mt_status score_pair(struct sctx *c, size_t i,
                                 const struct mt_eval_pred *pr,
                                 struct mt_eval_note_score *ns)
{
    const struct mt_eval_note *n = mt_eval_ref_note(c->ref, i);
    struct mt_rouge_scores rs;
    double *m = ns->m;
    enum mt_status st = mt_rouge(pr->correction, strlen(pr->correction),
                                 n->correction, strlen(n->correction), &rs);

    if (st == MT_EINVAL) { /* nothing left after the '.' split */
        memset(&rs, 0, sizeof rs);
        st = warn(c->r,
                  "%s: prediction '%s' has no text for ROUGE; scored "
                  "0 (the official script would stop here)",
                  n->id, pr->correction);
    }
    if (st != MT_OK)
        return mt_fail(c->err, st, "ROUGE: %s", mt_status_str(st));
    m[MT_EVAL_ROUGE1] = mtx_ev_clip01(rs.r1.f);
    m[MT_EVAL_ROUGE2] = mtx_ev_clip01(rs.r2.f);
    m[MT_EVAL_ROUGEL] = mtx_ev_clip01(rs.rl.f);
    if (c->p.bert) {
        st = bert_pair(c, pr->correction, n->correction, &m[MT_EVAL_BERTSCORE]);
        if (st != MT_OK)
            return st;
    } else if (c->p.bertscore) {
        st = file_score(c, c->p.bertscore, "BERTScore", n->id,
                        &m[MT_EVAL_BERTSCORE]);
        if (st != MT_OK)
            return st;
    }
    if (c->p.bleurt) {
        st = file_score(c, c->p.bleurt, "BLEURT", n->id, &m[MT_EVAL_BLEURT]);
        if (st != MT_OK)
            return st;
    }
    m[MT_EVAL_AGGREGATE] = aggregate(m);
    return MT_OK;
}

/* An error note whose Important Words cell is empty (or a pandas NA
 * spelling) has no KPCS gate. Rule: such a note is left out of KPCS (its
 * mean is over the other notes), and the result counts them. Why: the
 * keyword gate is what KPCS measures; passing it (strstr with "" always
 * matches) would score any correction as if it held the key terms, and
 * failing it would charge the system for a gap in the reference. The
 * other metrics score the note as usual. */
#define KW_NONE (-2)

static int no_keywords(const struct sctx *c, const struct mt_eval_note *n)
{
    static const char *const na[] = {"",     "NA",   "N/A",  "nan", "NaN",
                                     "None", "null", "NULL", "<NA>"};
    struct mt_str k;
    size_t i;

    if (!(c->r->metrics & (1u << MT_EVAL_KPCS)))
        return 0;
    k = mtx_str_trim(mtx_str_from(n->keywords ? n->keywords : ""));
    for (i = 0; i < sizeof na / sizeof na[0]; i++)
        if (mtx_str_eq_c(k, na[i]))
            return 1;
    return 0;
}

/* ==== KPCS ==== */

/* The language KPCS scores a note in: its id's ("en-", "cn-", "ara-"...),
 * else the script of its gold correction (any Han character: Chinese;
 * else any Arabic letter: Arabic), else English. */
static char kpcs_lang(const struct mt_eval_note *n)
{
    const char *s = n->correction;
    size_t i = 0, len = strlen(s);
    int arabic = 0;

    if (n->language && *n->language)
        return n->language[0];
    while (i < len) {
        int32_t cp;

        i += mtx_utf8_decode(s + i, len - i, &cp);
        if ((cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf))
            return 'C';
        arabic |= (cp >= 0x600 && cp <= 0x6ff) || (cp >= 0x750 && cp <= 0x77f);
    }
    return arabic ? 'A' : 'E';
}

static enum mt_status need_jieba(struct sctx *c)
{
    char *dir;
    enum mt_status st;

    if (c->jb)
        return MT_OK;
    dir = mtx_ev_jieba_find(c->p.jieba_dir, c->err);
    if (!dir)
        return MT_ENOTFOUND;
    st = mtx_ev_jieba_open(dir, &c->jb, c->err);
    if (st == MT_OK)
        mt_log(MT_LOG_DEBUG, "jieba: loaded %s", dir);
    mt_free(dir);
    return st;
}

/* A pair its ROUGE cannot score (no sentence left) scores 0, as the
 * rouge1 column does; MedGuards' code would stop with an exception. */
static enum mt_status rouge_none(struct sctx *c, const struct mt_eval_note *n,
                                 double *f)
{
    *f = 0.0;
    if (warn(c->r, "%s: prediction has no text for KPCS's ROUGE-1; scored 0",
             n->id) != MT_OK)
        return mt_fail(c->err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

/* MedGuards' ROUGE-1 of the pair, in the note's language (see enum
 * mt_eval_kpcs_rouge), clipped to [0, 1]. */
static enum mt_status kpcs_rouge1(struct sctx *c, const struct mt_eval_note *n,
                                  const char *hyp, double *f)
{
    char lang =
        c->p.kpcs_rouge == MT_EVAL_KPCS_ROUGE_PUBLISHED ? 'E' : kpcs_lang(n);
    struct mt_rouge_scores rs;
    enum mt_status st;

    if (lang == 'C') {
        st = need_jieba(c);
        if (st != MT_OK)
            return st;
        st = mtx_kpcs_rouge1_zh(c->jb, hyp, n->correction, f);
        c->r->kpcs_pairs_zh++;
    } else if (lang == 'A') {
        st = mt_rouge(hyp, strlen(hyp), n->correction, strlen(n->correction),
                      &rs);
        *f = st == MT_OK ? rs.r1.f : 0.0;
        c->r->kpcs_pairs_ar++;
    } else {
        st = mtx_rouge_score_r1(hyp, strlen(hyp), n->correction,
                                strlen(n->correction), f);
    }
    if (st == MT_EINVAL)
        return rouge_none(c, n, f);
    if (st != MT_OK)
        return mt_fail(c->err, st, "out of memory");
    *f = mtx_ev_clip01(*f);
    return MT_OK;
}

/* KPCS = kw * (alpha + (1 - alpha) * mean(ROUGE-1, BERTScore, BLEURT)),
 * the mean over the computed ones, with MedGuards' own ROUGE-1
 * (kpcs_rouge1), not the MEDIQA-CORR one the rouge1 column reports. */
static enum mt_status kpcs_pair(struct sctx *c, size_t i,
                                const struct mt_eval_pred *pr,
                                struct mt_eval_note_score *ns)
{
    const struct mt_eval_note *n = mt_eval_ref_note(c->ref, i);
    double a = c->p.kpcs_alpha;
    double m[MT_EVAL_METRIC_COUNT];
    enum mt_status st;
    int kw;

    if (ns->kw == KW_NONE) { /* no gate: left out of KPCS (summarise) */
        ns->m[MT_EVAL_KPCS] = 0;
        return MT_OK;
    }
    kw = keyword_found(n->keywords ? n->keywords : "", pr->correction,
                       c->p.kpcs_match);
    if (kw < 0)
        return mt_fail(c->err, MT_ENOMEM, "out of memory");
    ns->kw = kw;
    memcpy(m, ns->m, sizeof m);
    st = kpcs_rouge1(c, n, pr->correction, &m[MT_EVAL_ROUGE1]);
    if (st != MT_OK)
        return st;
    ns->m[MT_EVAL_KPCS] = kw * (a + (1.0 - a) * aggregate(m));
    return MT_OK;
}

/* Fills every computed metric of a note scored without metrics. */
static void fill_const(struct mt_eval_note_score *ns, unsigned metrics,
                       double v)
{
    int k;

    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        ns->m[k] = metrics & (1u << k) ? v : MT_EV_NAN;
}

static enum mt_status score_note(struct sctx *c, size_t i)
{
    const struct mt_eval_note *n = mt_eval_ref_note(c->ref, i);
    struct mt_eval_note_score *ns = &c->r->per_note[i];
    long pi = mt_eval_sub_find(c->sub, n->id);
    const struct mt_eval_pred *pr =
        pi < 0 ? NULL : mt_eval_sub_pred(c->sub, (size_t)pi);
    int gold_na = strcmp(n->correction, "NA") == 0;
    enum mt_status st;

    ns->pred = pi;
    ns->kw = !gold_na && no_keywords(c, n) ? KW_NONE : -1;
    ns->kind = MT_EVAL_PAIR_MISSING;
    fill_const(ns, c->r->metrics, 0.0);
    if (!pr)
        return MT_OK;
    c->r->predicted++;
    ns->flag_ok = strcmp(pr->flag, n->flag) == 0;
    ns->sent_ok = strcmp(pr->sentence_id, n->sentence_id) == 0;
    if (gold_na && strcmp(pr->correction, "NA") == 0) {
        ns->kind = MT_EVAL_PAIR_BOTH_NA; /* counted once, KPCS included */
        fill_const(ns, c->r->metrics, 1.0);
        return MT_OK;
    }
    if (!gold_na && no_keywords(c, n))
        ns->kw = KW_NONE;
    if (gold_na || strcmp(pr->correction, "NA") == 0) {
        ns->kind = MT_EVAL_PAIR_ONE_NA;
        return MT_OK;
    }
    ns->kind = MT_EVAL_PAIR_SCORED;
    c->r->pairs++;
    st = score_pair(c, i, pr, ns);
    if (st == MT_OK && (c->r->metrics & (1u << MT_EVAL_KPCS)))
        st = kpcs_pair(c, i, pr, ns);
    return st;
}

static void summarise(struct mt_eval_result *r)
{
    size_t fl = 0, se = 0, i;
    int k;

    for (i = 0; i < r->notes; i++) {
        fl += (size_t)r->per_note[i].flag_ok;
        se += (size_t)r->per_note[i].sent_ok;
    }
    r->flag_acc = (double)fl / (double)r->notes;
    r->sent_acc = (double)se / (double)r->notes;
    for (i = 0; i < r->notes; i++)
        r->kpcs_no_keywords += r->per_note[i].kw == KW_NONE;
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++) {
        double all = 0.0, pairs = 0.0;
        size_t nall = 0, npairs = 0;

        for (i = 0; i < r->notes; i++) {
            if (k == MT_EVAL_KPCS && r->per_note[i].kw == KW_NONE)
                continue; /* no KPCS gate: not in KPCS's mean */
            all += r->per_note[i].m[k];
            nall++;
            if (r->per_note[i].kind == MT_EVAL_PAIR_SCORED) {
                pairs += r->per_note[i].m[k];
                npairs++;
            }
        }
        r->composite[k] = nall ? all / (double)nall : MT_EV_NAN; /* NAN stays */
        r->pairs_mean[k] = npairs ? pairs / (double)npairs : MT_EV_NAN;
    }
}

static enum mt_status note_unknown(struct sctx *c)
{
    size_t i;
    size_t shown = 0;
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < mt_eval_sub_count(c->sub); i++) {
        const struct mt_eval_pred *p = mt_eval_sub_pred(c->sub, i);
        if (mt_eval_ref_find(c->ref, p->id) >= 0)
            continue;
        c->r->unknown_ids++;
        if (shown++ < 10)
            st = warn(c->r,
                      "line %zu: id '%s' is not in the reference; "
                      "ignored",
                      p->line, p->id);
    }
    if (st == MT_OK && shown > 10)
        st = warn(c->r, "%zu more predictions with unknown ids ignored",
                  shown - 10);
    return st;
}

static unsigned metric_mask(const struct sctx *c)
{
    unsigned m = (1u << MT_EVAL_ROUGE1) | (1u << MT_EVAL_ROUGE2) |
                 (1u << MT_EVAL_ROUGEL) | (1u << MT_EVAL_AGGREGATE);

    if (c->p.bert || c->p.bertscore)
        m |= 1u << MT_EVAL_BERTSCORE;
    if (c->p.bleurt)
        m |= 1u << MT_EVAL_BLEURT;
    if (c->p.kpcs && mt_eval_ref_has_keywords(c->ref))
        m |= 1u << MT_EVAL_KPCS;
    return m;
}

/* A zeroed result for the notes of c->ref, recording how BERTScore is
 * computed. */
static enum mt_status result_new(struct sctx *c)
{
    const struct mt_token_encoder *e = c->p.bert;
    struct mt_eval_result *r = mt_calloc(1, sizeof *r);

    c->r = r;
    if (!r)
        return MT_ENOMEM;
    r->notes = mt_eval_ref_count(c->ref);
    r->per_note = mt_calloc(r->notes + 1, sizeof *r->per_note);
    if (!r->per_note)
        return MT_ENOMEM;
    r->metrics = metric_mask(c);
    r->kpcs_rouge = c->p.kpcs_rouge;
    r->invalid_lines = mt_eval_sub_invalid(c->sub);
    if (!e && c->p.bertscore) {
        r->bert_file = 1;
        r->bert_model = mt_strdup("per-pair scores file");
        return r->bert_model ? MT_OK : MT_ENOMEM;
    }
    if (!e)
        return MT_OK;
    r->bert_model = mt_strdup(e->model ? e->model : "unnamed");
    r->bert_idf = c->p.bert_idf != 0;
    r->bert_rescaled = c->p.bert_base != NULL;
    r->bert_exact = e->as_bert_score != 0;
    r->bert_layer = e->layer;
    if (c->p.bert_base)
        memcpy(r->bert_base, c->p.bert_base, sizeof r->bert_base);
    return r->bert_model ? MT_OK : MT_ENOMEM;
}

enum mt_status mt_eval_score(const struct mt_eval_ref *ref,
                             const struct mt_eval_sub *sub,
                             const struct mt_eval_params *params,
                             struct mt_eval_result **out, struct mt_error *err)
{
    struct sctx c = {ref, sub, {0}, NULL, err, NULL, NULL};
    enum mt_status st;
    size_t i;

    if (params)
        c.p = *params;
    else
        mt_eval_default_params(&c.p);
    st = result_new(&c);
    if (st == MT_OK)
        st = note_unknown(&c);
    if (st == MT_OK && c.p.bert && c.p.bert_idf)
        st = build_idf(&c);
    for (i = 0; st == MT_OK && i < c.r->notes; i++)
        st = score_note(&c, i);
    mt_idf_free(c.idf);
    mtx_jieba_close(c.jb);
    if (st != MT_OK) {
        mt_eval_result_free(c.r);
        return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
    }
    summarise(c.r);
    if (c.r->kpcs_no_keywords &&
        warn(c.r,
             "%zu error notes have no Important Words: no KPCS gate, left "
             "out of KPCS",
             c.r->kpcs_no_keywords) != MT_OK) {
        mt_eval_result_free(c.r);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    *out = c.r;
    return MT_OK;
}

void mt_eval_result_free(struct mt_eval_result *r)
{
    size_t i;

    if (!r)
        return;
    for (i = 0; i < r->nwarnings; i++)
        mt_free(r->warnings[i]);
    mt_free(r->warnings);
    mt_free(r->per_note);
    mt_free(r->bert_model);
    mt_free(r);
}
