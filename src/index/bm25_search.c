/* BM25 search: query preparation, cursors over compressed blocks, exact
 * top-k by block-max MaxScore, and the exhaustive reference that both
 * share the scoring function and summation order with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "index/bm25_int.h"
#include "medtrust/core.h"

/* Relative slack on every pruning test. Bounds are summed in another order
 * than scores, and s() is monotone in wtf and dl only up to rounding; both
 * errors stay below 1e-12 relative for MT_BM25_MAX_QTERMS terms, so a
 * bound inflated by 1e-9 never prunes a document that belongs in the
 * top k. Slack only costs a little pruning, never exactness. */
#define SLACK 1e-9

/* s(t,d) = w * wtf*(k1+1) / (wtf + k1*(1-b) + k1*b*dl/avgdl), w = qtf*idf.
 * The single definition of a term's score, for search, the exhaustive
 * reference and all bounds. */
struct sconst {
    double k1p1;
    double c0; /* k1 * (1 - b) */
    double c1; /* k1 * b / avgdl (0 when avgdl is 0) */
};

/* k1 * (1 - b + b * dl / avgdl): the length part of s(). */
static inline double tlen(float dl, const struct sconst *k)
{
    return k->c0 + k->c1 * (double)dl;
}

static inline double tscore_len(double w, float wtf, double len,
                                const struct sconst *k)
{
    double f = (double)wtf;

    return w * (f * k->k1p1) / (f + len);
}

static inline double tscore(double w, float wtf, float dl,
                            const struct sconst *k)
{
    return tscore_len(w, wtf, tlen(dl, k), k);
}

struct qterm {
    uint32_t tid;
    uint32_t qtf;
    uint32_t first; /* first position in the query */
    double w;       /* qtf * idf */
    double ub;      /* bound on s over the whole list */
};

/* A position in one term's postings. Blocks are decoded whole into docs[]
 * and wtf[]; 'bi' may run ahead of the decoded block 'dec' after a
 * shallow move, and then 'doc' is stale until the next seek. */
struct cursor {
    const struct bm25_blk *blk;
    const uint8_t *post;
    const uint8_t *post_end;
    const float *weights;
    uint32_t nblk;
    uint32_t df;
    uint32_t bi;
    uint32_t dec;
    uint32_t i;
    uint32_t n;
    uint32_t doc;
    uint32_t bub_bi; /* block whose bound is in bub */
    double w;
    double bub;
    uint32_t docs[MT_BM25_BLOCK];
    float wtf[MT_BM25_BLOCK];
};

struct hent {
    double s;
    uint32_t doc;
};

struct mt_bm25_ctx {
    struct qterm *qt;
    size_t qcap;
    struct cursor *cur;
    size_t ccap;
    struct cursor **cp;
    size_t cpcap;
    double *dbl; /* 4 arrays of m: cum, bcum, ev, nv */
    size_t dcap;
    struct hent *heap;
    size_t hcap;
    double *acc; /* exhaustive accumulators, one per doc */
    size_t acap;
    double *wacc; /* a window's: sums (WIN), marks (WIN / 64), and */
    size_t wacap;
    uint64_t *wbits;
    size_t wbcap;
    uint32_t *wpos; /* where each list's window begins (m) */
    size_t wpcap;
};

/* One search in progress. */
struct run {
    struct cursor **c; /* canonical order: ascending ub, then first */
    uint32_t m;
    uint32_t ne;       /* c[0..ne) are non-essential */
    double *cum;       /* cum[i] = ub of c[0..i] */
    double *bcum;      /* same over the blocks at the candidate */
    double *ev;        /* essential scores of the candidate */
    double *nv;        /* non-essential scores, in descending index */
    struct hent *heap; /* worst hit on top */
    size_t hn;
    size_t k;
    double floor;        /* mt_bm25_search_params.floor */
    double *wacc;        /* a window's gathered sums, WIN */
    uint64_t *wbits;     /* its docs with a sum, WIN / 64 */
    uint32_t *wpos;      /* where each list's window begins, m */
    const float *dl;     /* format 1 lengths, or NULL */
    const uint8_t *norm; /* format 2 norms, or NULL */
    double ntab[256];    /* tlen() of each norm's length, per query */
    struct sconst sc;
    int (*accept)(uint32_t doc, void *user);
    void *user;
};

/* The length part of s() for document d: one table load with byte norms
 * (the table holds exactly what tlen() gives for the decoded length the
 * bounds were built from, so bounds still hold), else from its float. */
static inline double doc_len(const struct run *r, uint32_t d)
{
    return r->norm ? r->ntab[r->norm[d]] : tlen(r->dl[d], &r->sc);
}

/* ==== Context ==== */

enum mt_status mtx_bm25_ctx_new(struct mt_bm25_ctx **out)
{
    struct mt_bm25_ctx *c = mt_calloc(1, sizeof *c);

    if (!c)
        return MT_ENOMEM;
    *out = c;
    return MT_OK;
}

void mtx_bm25_ctx_free(struct mt_bm25_ctx *ctx)
{
    if (!ctx)
        return;
    mt_free(ctx->qt);
    mt_free(ctx->cur);
    mt_free(ctx->cp);
    mt_free(ctx->dbl);
    mt_free(ctx->heap);
    mt_free(ctx->acc);
    mt_free(ctx->wacc);
    mt_free(ctx->wbits);
    mt_free(ctx->wpos);
    mt_free(ctx);
}

struct mt_bm25_search_params mtx_bm25_default_search_params(void)
{
    struct mt_bm25_search_params p = {
        MT_BM25_DEFAULT_K1, MT_BM25_DEFAULT_B, NULL, NULL, NULL, NULL, 0.0};
    return p;
}

/* ==== Cursors ==== */

static void c_decode(struct cursor *c)
{
    uint32_t bi = c->bi;
    const uint8_t *p = c->post + c->blk[bi].off;
    const uint8_t *e =
        bi + 1 < c->nblk ? c->post + c->blk[bi + 1].off : c->post_end;
    int64_t prev = bi ? (int64_t)c->blk[bi - 1].last : -1;
    uint32_t n = bi + 1 < c->nblk ? MT_BM25_BLOCK
                                  : c->df - (c->nblk - 1) * MT_BM25_BLOCK;

    c->n = mtx_bm25_decode(&p, e, prev, c->blk[bi].last, n, c->weights, c->docs,
                           c->wtf);
    c->dec = bi;
    c->i = 0;
}

/* Moves to the first doc >= target, from block bi on. */
static void c_settle(struct cursor *c, uint32_t target)
{
    for (; c->bi < c->nblk; c->bi++) {
        if (c->blk[c->bi].last < target)
            continue;
        if (c->dec != c->bi)
            c_decode(c);
        while (c->i < c->n && c->docs[c->i] < target)
            c->i++;
        if (c->i < c->n) {
            c->doc = c->docs[c->i];
            return;
        }
    }
    c->doc = BM25_END;
}

static inline void c_next(struct cursor *c)
{
    if (++c->i < c->n)
        c->doc = c->docs[c->i];
    else
        c_settle(c, c->doc + 1);
}

static inline void c_seek(struct cursor *c, uint32_t target)
{
    if (c->dec == c->bi && c->doc >= target)
        return;
    c_settle(c, target);
}

/* Moves bi to the block that may hold target without decoding; returns
 * that block's score bound (0 when the list is over) and lowers *last to
 * the block's last doc. */
static double c_shallow(struct cursor *c, uint32_t target,
                        const struct sconst *k, uint32_t *last)
{
    const struct bm25_blk *b;

    while (c->bi < c->nblk && c->blk[c->bi].last < target)
        c->bi++;
    if (c->bi == c->nblk)
        return 0.0;
    b = &c->blk[c->bi];
    if (c->bub_bi != c->bi) {
        c->bub = tscore(c->w, b->max_wtf, b->min_dl, k);
        c->bub_bi = c->bi;
    }
    if (b->last < *last)
        *last = b->last;
    return c->bub;
}

static void c_init(struct cursor *c, const struct mt_bm25 *idx,
                   const struct qterm *q)
{
    const struct bm25_term *t = &idx->terms[q->tid];

    mtx_bm25_term_range(idx, q->tid, &c->post, &c->post_end);
    c->blk = idx->blks + t->blk;
    c->nblk = (t->df + MT_BM25_BLOCK - 1) / MT_BM25_BLOCK;
    c->df = t->df;
    c->weights = idx->meta.weight;
    c->w = q->w;
    c->bi = 0;
    c->dec = BM25_END;
    c->bub_bi = BM25_END;
    c->i = 0;
    c->n = 0;
    c_settle(c, 0);
}

/* ==== Top-k heap: worst on top; worse = lower score, then higher doc ==== */

static inline int worse(const struct hent *a, const struct hent *b)
{
    return a->s < b->s || (a->s == b->s && a->doc > b->doc);
}

static void heap_offer(struct run *r, uint32_t doc, double s)
{
    struct hent e = {s, doc};
    struct hent *h = r->heap;
    size_t i = r->hn;

    if (r->hn < r->k) {
        for (r->hn++; i && worse(&e, &h[(i - 1) / 2]); i = (i - 1) / 2)
            h[i] = h[(i - 1) / 2];
        h[i] = e;
        return;
    }
    if (!worse(&h[0], &e))
        return;
    for (i = 0;;) {
        size_t c = 2 * i + 1;
        if (c >= r->hn)
            break;
        if (c + 1 < r->hn && worse(&h[c + 1], &h[c]))
            c++;
        if (!worse(&h[c], &e))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

/* True when a document whose score is at most 'bound' cannot enter the
 * top k: ties lose too, since later documents rank after earlier ones.
 * Below the floor it cannot either; a tie with the floor may still win
 * (its k documents are elsewhere), so that test is strict. */
static inline int cannot_beat(const struct run *r, double bound)
{
    double b = bound * (1.0 + SLACK);

    return (r->hn == r->k && b <= r->heap[0].s) || b < r->floor;
}

/* Whether pruning is on: a full heap, or a floor. */
static inline int pruning(const struct run *r)
{
    return r->hn == r->k || r->floor > 0.0;
}

static int cmp_better(const void *a, const void *b)
{
    const struct hent *x = a;
    const struct hent *y = b;

    return worse(y, x) ? -1 : worse(x, y);
}

static size_t emit(struct run *r, struct mt_bm25_hit *hits)
{
    qsort(r->heap, r->hn, sizeof *r->heap, cmp_better);
    for (size_t i = 0; i < r->hn; i++) {
        hits[i].doc = r->heap[i].doc;
        hits[i].score = (float)r->heap[i].s;
    }
    return r->hn;
}

/* ==== Block-max MaxScore ==== */

/* Docs one window spans at most (its accumulators and marks are in the
 * context). */
#define WIN 4096u

static void advance_at(struct run *r, uint32_t d)
{
    for (uint32_t i = r->ne; i < r->m; i++)
        if (r->c[i]->doc == d)
            c_next(r->c[i]);
}

static void ms_offer(struct run *r, uint32_t d, double s)
{
    heap_offer(r, d, s);
    while (r->ne < r->m && cannot_beat(r, r->cum[r->ne]))
        r->ne++;
}

/* Probes the non-essential lists for d from the largest bound down,
 * while 'part' and their bounds may still beat the threshold; their
 * scores go to nv[] (*ne_n of them). Returns 0 when d cannot make the
 * top k. */
static int ms_probe(struct run *r, uint32_t d, double part, uint32_t *ne_n)
{
    for (uint32_t i = r->ne; i-- > 0;) {
        struct cursor *c = r->c[i];
        if (cannot_beat(r, part + r->cum[i]))
            return 0;
        c_seek(c, d);
        if (c->doc != d)
            continue;
        r->nv[*ne_n] = tscore_len(c->w, c->wtf[c->i], doc_len(r, d), &r->sc);
        part += r->nv[(*ne_n)++];
    }
    return 1;
}

/* The score in canonical (ascending list) order: the probed lists' terms
 * (nv[], filled from the highest list down), then the others' (ev[]). */
static double ms_sum(const struct run *r, uint32_t ne_n, uint32_t e_n)
{
    double s = 0.0;

    while (ne_n)
        s += r->nv[--ne_n];
    for (uint32_t j = 0; j < e_n; j++)
        s += r->ev[j];
    return s;
}

/* Scores candidate d while the heap fills (nothing is pruned yet): the
 * essential lists at d, then the others probed. */
static void ms_candidate(struct run *r, uint32_t d)
{
    double part = 0.0;
    uint32_t ne_n = 0;
    uint32_t e_n = 0;

    if (r->accept && !r->accept(d, r->user)) {
        advance_at(r, d);
        return;
    }
    for (uint32_t i = r->ne; i < r->m; i++) {
        struct cursor *c = r->c[i];
        if (c->doc != d)
            continue;
        r->ev[e_n] = tscore_len(c->w, c->wtf[c->i], doc_len(r, d), &r->sc);
        part += r->ev[e_n++];
        c_next(c);
    }
    if (ms_probe(r, d, part, &ne_n))
        ms_offer(r, d, ms_sum(r, ne_n, e_n));
}

/* Moves every list to the block that may hold lo without decoding, sums
 * their block bounds into bcum[] and returns the sum; *hi gets the
 * window's end: the smallest block end, at most WIN docs on, so every
 * list stays in one block (one bound) through [lo, hi]. */
static double win_bounds(struct run *r, uint32_t lo, uint32_t *hi)
{
    uint32_t last = BM25_END - 1;
    double sum = 0.0;

    for (uint32_t i = 0; i < r->m; i++) {
        sum += c_shallow(r->c[i], lo, &r->sc, &last);
        r->bcum[i] = sum;
    }
    *hi = last - lo >= WIN ? lo + WIN - 1 : last;
    return sum;
}

/* Sums the window's postings of lists [ne_w, m) into wacc[], term at a
 * time, marking their docs in wbits[] (the sums only filter: a doc left
 * is scored again in canonical order); wpos[i] keeps where list i's
 * window begins in its decoded block, and its cursor's position is left
 * past the window ('doc' stale until ms_window moves it). */
static void win_gather(struct run *r, uint32_t lo, uint32_t hi, uint32_t ne_w)
{
    memset(r->wbits, 0, ((hi - lo) / 64 + 1) * sizeof *r->wbits);
    for (uint32_t i = ne_w; i < r->m; i++) {
        struct cursor *c = r->c[i];
        uint32_t j;
        c_seek(c, lo);
        r->wpos[i] = c->doc == BM25_END ? c->n : c->i;
        for (j = r->wpos[i]; j < c->n && c->docs[j] <= hi; j++) {
            uint32_t off = c->docs[j] - lo;
            uint64_t bit = 1ull << (off & 63u);
            double t =
                tscore_len(c->w, c->wtf[j], doc_len(r, c->docs[j]), &r->sc);
            if (r->wbits[off >> 6] & bit) {
                r->wacc[off] += t;
            } else {
                r->wbits[off >> 6] |= bit;
                r->wacc[off] = t;
            }
        }
        /* past the window: its move to hi + 1 starts here, not rescans */
        if (c->doc != BM25_END)
            c->i = j;
    }
}

/* Adds list i's postings in [lo, hi] into wacc[] for the docs still
 * marked (their sums may still beat the threshold); decodes its block
 * only when some are. */
static void win_merge(struct run *r, uint32_t i, uint32_t lo, uint32_t hi)
{
    struct cursor *c = r->c[i];

    uint32_t j;

    c_seek(c, lo);
    r->wpos[i] = c->doc == BM25_END ? c->n : c->i;
    for (j = r->wpos[i]; j < c->n && c->docs[j] <= hi; j++) {
        uint32_t off = c->docs[j] - lo;
        if (r->wbits[off >> 6] & (1ull << (off & 63u)))
            r->wacc[off] +=
                tscore_len(c->w, c->wtf[j], doc_len(r, c->docs[j]), &r->sc);
    }
    /* on to its last posting in the window: the next window's seek
     * starts there instead of rescanning this one */
    if (c->doc != BM25_END && j > c->i) {
        c->i = j - 1;
        c->doc = c->docs[j - 1];
    }
}

/* Unmarks the docs whose sum and 'rem' (a bound on the lists not added
 * yet) cannot beat the threshold; returns how many stay marked. */
static uint32_t win_filter(struct run *r, uint32_t lo, uint32_t hi, double rem)
{
    uint32_t n = 0;

    for (uint32_t w = 0; w <= (hi - lo) / 64; w++) {
        for (uint64_t bits = r->wbits[w]; bits; bits &= bits - 1) {
            uint32_t off = w * 64 + (uint32_t)__builtin_ctzll(bits);
            if (cannot_beat(r, r->wacc[off] + rem))
                r->wbits[w] &= ~(1ull << (off & 63u));
            else
                n++;
        }
    }
    return n;
}

/* Scores window doc d exactly: every list's term in canonical (ascending)
 * order, found from wpos[] on, the sum ms_candidate would give. */
static void win_exact(struct run *r, uint32_t d)
{
    double s = 0.0;

    if (r->accept && !r->accept(d, r->user))
        return;
    for (uint32_t i = 0; i < r->m; i++) {
        const struct cursor *c = r->c[i];
        uint32_t j = r->wpos[i];
        while (j < c->n && c->docs[j] < d)
            j++;
        r->wpos[i] = j;
        if (j < c->n && c->docs[j] == d)
            s += tscore_len(c->w, c->wtf[j], doc_len(r, d), &r->sc);
    }
    ms_offer(r, d, s);
}

/* The probed lists [0, ne_w) are added list by list, from the largest
 * bound down, into the marked docs' sums, each time after dropping the
 * docs whose sum and the bounds of the lists still to add cannot beat
 * the threshold (MaxScore's probing, a list at a time: a list is decoded
 * only while some doc may still need it). The docs left are scored
 * exactly in ascending order (ties rank by doc, so the order matters). */
static void win_score(struct run *r, uint32_t lo, uint32_t hi, uint32_t ne_w)
{
    for (uint32_t i = ne_w; i-- > 0;) {
        double rem = r->bcum[i] < r->cum[i] ? r->bcum[i] : r->cum[i];
        if (!win_filter(r, lo, hi, rem))
            return;
        win_merge(r, i, lo, hi);
    }
    for (uint32_t w = 0; w <= (hi - lo) / 64; w++) {
        for (uint64_t bits = r->wbits[w]; bits; bits &= bits - 1) {
            uint32_t off = w * 64 + (uint32_t)__builtin_ctzll(bits);
            if (!cannot_beat(r, r->wacc[off]))
                win_exact(r, lo + off);
        }
    }
}

/* One window [lo, hi] (lo: the smallest essential doc) once the heap is
 * full or a floor is set. Skipped whole when the lists' block bounds
 * cannot beat the threshold (block-max). Otherwise the lists whose block
 * bounds sum below the threshold (at least the non-essential ones) are
 * probed per doc, the others gathered term at a time into accumulators,
 * which costs a posting far less than a candidate step does, and only
 * docs whose sum may still beat the threshold are scored, exactly as
 * ms_candidate scores them. The essential lists then move past hi. */
static void ms_window(struct run *r, uint32_t lo)
{
    uint32_t hi;
    uint32_t ne0 = r->ne; /* scoring may raise r->ne: seek from here */
    uint32_t ne_w = ne0;
    double sum = win_bounds(r, lo, &hi);

    if (!cannot_beat(r, sum)) {
        while (ne_w < r->m && cannot_beat(r, r->bcum[ne_w]))
            ne_w++;
        win_gather(r, lo, hi, ne_w);
        win_score(r, lo, hi, ne_w);
    }
    for (uint32_t i = ne0; i < r->m; i++)
        c_seek(r->c[i], hi + 1);
}

static void ms_run(struct run *r)
{
    while (r->ne < r->m && cannot_beat(r, r->cum[r->ne]))
        r->ne++;
    while (r->ne < r->m) {
        uint32_t d = BM25_END;
        for (uint32_t i = r->ne; i < r->m; i++)
            if (r->c[i]->doc < d)
                d = r->c[i]->doc;
        if (d == BM25_END)
            break;
        if (pruning(r))
            ms_window(r, d);
        else
            ms_candidate(r, d);
    }
}

/* ==== Exhaustive reference: term at a time, canonical order ==== */

static void ex_run(struct run *r, double *acc, uint32_t ndocs)
{
    memset(acc, 0, (size_t)ndocs * sizeof *acc);
    for (uint32_t i = 0; i < r->m; i++) {
        struct cursor *c = r->c[i];
        for (; c->doc != BM25_END; c_next(c))
            acc[c->doc] +=
                tscore_len(c->w, c->wtf[c->i], doc_len(r, c->doc), &r->sc);
    }
    for (uint32_t d = 0; d < ndocs; d++) {
        if (!(acc[d] > 0.0))
            continue;
        if (r->accept && !r->accept(d, r->user))
            continue;
        heap_offer(r, d, acc[d]);
    }
}

/* ==== Query preparation ==== */

static int cmp_tid(const void *a, const void *b)
{
    const struct qterm *x = a;
    const struct qterm *y = b;

    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_canon(const void *a, const void *b)
{
    const struct qterm *x = a;
    const struct qterm *y = b;

    if (x->ub != y->ub)
        return x->ub < y->ub ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* N for idf: the collection's when given, never below the segment's. */
static double idf_n(const struct mt_bm25 *idx, const struct mt_bm25_coll *coll)
{
    uint64_t n = idx->meta.ndocs;

    if (coll && coll->ndocs > n)
        n = coll->ndocs;
    return (double)n;
}

/* df for idf of the term first at query position j, segment term t. */
static double idf_df(const struct bm25_term *t, const struct mt_bm25_coll *coll,
                     uint32_t j)
{
    uint64_t df = t->df;

    if (coll && coll->df && coll->df[j] > df)
        df = coll->df[j];
    return (double)df;
}

/* Looks up and merges query terms into ctx->qt in canonical order;
 * returns the count through *m. */
static enum mt_status prepare_terms(const struct mt_bm25 *idx,
                                    const struct mt_str *q, size_t nq,
                                    const struct mt_bm25_coll *coll,
                                    const struct sconst *sc,
                                    struct mt_bm25_ctx *ctx, uint32_t *m)
{
    struct qterm *qt;
    size_t n = 0;
    size_t u = 0;
    double N = idf_n(idx, coll);

    if (mtx_grow((void **)&ctx->qt, &ctx->qcap, nq, sizeof *qt) != MT_OK)
        return MT_ENOMEM;
    qt = ctx->qt;
    for (size_t j = 0; j < nq; j++) {
        int64_t t = mtx_bm25_find_term(idx, q[j]);
        if (t >= 0)
            qt[n++] = (struct qterm){(uint32_t)t, 1, (uint32_t)j, 0, 0};
    }
    qsort(qt, n, sizeof *qt, cmp_tid);
    for (size_t j = 0; j < n; j++) {
        if (u && qt[u - 1].tid == qt[j].tid)
            qt[u - 1].qtf++;
        else
            qt[u++] = qt[j];
    }
    if (u > MT_BM25_MAX_QTERMS)
        return MT_ELIMIT;
    for (size_t j = 0; j < u; j++) {
        const struct bm25_term *t = &idx->terms[qt[j].tid];
        double df = idf_df(t, coll, qt[j].first);
        qt[j].w = (double)qt[j].qtf * log1p((N - df + 0.5) / (df + 0.5));
        qt[j].ub = tscore(qt[j].w, t->max_wtf, t->min_dl, sc);
    }
    qsort(qt, u, sizeof *qt, cmp_canon);
    *m = (uint32_t)u;
    return MT_OK;
}

static enum mt_status run_alloc(struct mt_bm25_ctx *ctx, uint32_t m, size_t k,
                                size_t nacc)
{
    enum mt_status st;

    st = mtx_grow((void **)&ctx->cur, &ctx->ccap, m, sizeof *ctx->cur);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->cp, &ctx->cpcap, m, sizeof *ctx->cp);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->dbl, &ctx->dcap, 4 * (size_t)m,
                      sizeof *ctx->dbl);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->heap, &ctx->hcap, k, sizeof *ctx->heap);
    if (st == MT_OK && nacc)
        st = mtx_grow((void **)&ctx->acc, &ctx->acap, nacc, sizeof *ctx->acc);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->wacc, &ctx->wacap, WIN, sizeof *ctx->wacc);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->wbits, &ctx->wbcap, WIN / 64,
                      sizeof *ctx->wbits);
    if (st == MT_OK)
        st = mtx_grow((void **)&ctx->wpos, &ctx->wpcap, m, sizeof *ctx->wpos);
    return st;
}

static enum mt_status run_setup(const struct mt_bm25 *idx,
                                const struct mt_str *q, size_t nq,
                                const struct mt_bm25_search_params *p,
                                struct mt_bm25_ctx *ctx, struct run *r,
                                int exhaustive)
{
    double k1 = (double)p->k1;
    double b = (double)p->b;
    double avgdl = p->coll ? p->coll->avgdl : idx->meta.avgdl;
    enum mt_status st;

    r->sc.k1p1 = k1 + 1.0;
    r->sc.c0 = k1 * (1.0 - b);
    r->sc.c1 = avgdl > 0.0 ? k1 * b / avgdl : 0.0;
    for (uint32_t i = 0; r->norm && i < 256; i++)
        r->ntab[i] = tlen(bm25_norm_decode((uint8_t)i), &r->sc);
    st = prepare_terms(idx, q, nq, p->coll, &r->sc, ctx, &r->m);
    if (st == MT_OK)
        st = run_alloc(ctx, r->m, r->k, exhaustive ? idx->meta.ndocs : 0);
    if (st != MT_OK || r->m == 0)
        return st;
    r->c = ctx->cp;
    r->cum = ctx->dbl;
    r->bcum = ctx->dbl + r->m;
    r->ev = ctx->dbl + 2 * (size_t)r->m;
    r->nv = ctx->dbl + 3 * (size_t)r->m;
    r->heap = ctx->heap;
    r->wacc = ctx->wacc;
    r->wbits = ctx->wbits;
    r->wpos = ctx->wpos;
    for (uint32_t i = 0; i < r->m; i++) {
        r->c[i] = &ctx->cur[i];
        c_init(r->c[i], idx, &ctx->qt[i]);
        r->cum[i] = (i ? r->cum[i - 1] : 0.0) + ctx->qt[i].ub;
    }
    return MT_OK;
}

static enum mt_status search(const struct mt_bm25 *idx, const struct mt_str *q,
                             size_t nq, const struct mt_bm25_search_params *sp,
                             struct mt_bm25_hit *hits, size_t k, size_t *nhits,
                             struct mt_error *err, int ex)
{
    struct mt_bm25_search_params p =
        sp ? *sp : mtx_bm25_default_search_params();
    struct mt_bm25_ctx *tmp = NULL;
    struct run r;
    enum mt_status st;

    *nhits = 0;
    if (!(p.k1 >= 0.0f && p.k1 <= 100.0f) || !(p.b >= 0.0f && p.b <= 1.0f))
        return mt_fail(err, MT_EINVAL,
                       "bm25: k1 must be in [0, 100] and "
                       "b in [0, 1]");
    if (!(p.floor >= 0.0) || isinf(p.floor))
        return mt_fail(err, MT_EINVAL, "bm25: floor must be finite and >= 0");
    if (k == 0 || nq == 0 || idx->meta.ndocs == 0)
        return MT_OK;
    if (!p.ctx && mtx_bm25_ctx_new(&tmp) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "bm25: out of memory");
    memset(&r, 0, sizeof r);
    r.k = k < idx->meta.ndocs ? k : idx->meta.ndocs;
    r.dl = idx->dl;
    r.norm = idx->norm;
    r.accept = p.accept;
    r.user = p.accept_user;
    r.floor = ex ? 0.0 : p.floor;
    st = run_setup(idx, q, nq, &p, p.ctx ? p.ctx : tmp, &r, ex);
    if (st == MT_OK && r.m > 0) {
        if (ex)
            ex_run(&r, (p.ctx ? p.ctx : tmp)->acc, idx->meta.ndocs);
        else
            ms_run(&r);
        *nhits = emit(&r, hits);
    }
    mtx_bm25_ctx_free(tmp);
    if (st != MT_OK)
        return mt_fail(err, st, "bm25: search: %s",
                       st == MT_ELIMIT ? "too many distinct query terms"
                                       : mt_status_str(st));
    return MT_OK;
}

enum mt_status mtx_bm25_search(const struct mt_bm25 *idx,
                               const struct mt_str *qterms, size_t nq,
                               const struct mt_bm25_search_params *sp,
                               struct mt_bm25_hit *hits, size_t k,
                               size_t *nhits, struct mt_error *err)
{
    return search(idx, qterms, nq, sp, hits, k, nhits, err, 0);
}

enum mt_status mtx_bm25_search_exhaustive(
    const struct mt_bm25 *idx, const struct mt_str *qterms, size_t nq,
    const struct mt_bm25_search_params *sp, struct mt_bm25_hit *hits, size_t k,
    size_t *nhits, struct mt_error *err)
{
    return search(idx, qterms, nq, sp, hits, k, nhits, err, 1);
}
