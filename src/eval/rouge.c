/* ROUGE-1, ROUGE-2 and summary-level ROUGE-L exactly as the Python `rouge`
 * package (pltrdy/rouge 1.0.1, the one the MEDIQA-CORR scorer imports)
 * computes them. Independent C code; the behaviour replicated is:
 *   segments = [" ".join(s.split()) for s in text.split(".") if len(s) > 0]
 *   words    = every segment's .split(" "), flattened (a blank segment
 *              gives one empty word "")
 *   ROUGE-N  = sets of n-grams over the flattened words (n-grams cross
 *              segment ends); P = |H & R| / |H|, R = |H & R| / |R| (0 when
 *              the set is empty); F = 2 * ((P * R) / (P + R + 1e-8))
 *   ROUGE-L  = |union over reference segments r and hypothesis segments c
 *              of set(words of one LCS of r and c)| over the numbers of
 *              distinct words (m reference, n hypothesis), same F.
 * rouge-chinese 1.0.3 (MedGuards' Chinese ROUGE, over text jieba has cut
 * and joined with spaces) is the same package with one change: segments
 * are its cut_sent's sentences (breaks after 。！？? and after runs of
 * six dots or two ellipses unless a closing quote follows, and after a
 * stop and its quote unless more punctuation follows; "\n" splits) in
 * place of the '.' split, so full stops stay in the words. */
#include <stdlib.h>
#include <string.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"
#include "text/utf8.h"

/* Words of one text, as ids, with the start of each segment. */
struct words {
    uint32_t *id;
    size_t n;
    size_t *seg; /* nseg + 1 offsets into id */
    size_t nseg;
};

struct rctx {
    struct mt_ev_map dict; /* word -> id; keys borrow the texts */
    struct words h, r;
    uint32_t nwords;
};

static enum mt_status word_id(struct rctx *c, struct mt_str w, uint32_t *id)
{
    long v = mtx_ev_map_get(&c->dict, w);

    if (v < 0) {
        v = (long)c->nwords++;
        if (mtx_ev_map_put(&c->dict, w, v) != MT_OK)
            return MT_ENOMEM;
    }
    *id = (uint32_t)v;
    return MT_OK;
}

/* Adds the words of one non-empty '.'-segment. */
static enum mt_status add_segment(struct rctx *c, struct words *w,
                                  const char *p, size_t n)
{
    struct mt_str t;
    size_t pos = 0;
    int any = 0;

    w->seg[w->nseg++] = w->n;
    while (mtx_ev_next_token(p, n, &pos, &t)) {
        if (word_id(c, t, &w->id[w->n]) != MT_OK)
            return MT_ENOMEM;
        w->n++;
        any = 1;
    }
    if (!any) /* "".split(" ") == [""] */
        return word_id(c, (struct mt_str){"", 0}, &w->id[w->n++]);
    return MT_OK;
}

/* pltrdy's text.split("."): the segments between full stops. */
static enum mt_status split_dot(struct rctx *c, struct words *w, const char *p,
                                size_t n)
{
    size_t s = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.')
            continue;
        if (i > s && add_segment(c, w, p + s, i - s) != MT_OK)
            return MT_ENOMEM;
        s = i + 1;
    }
    return MT_OK;
}

/* ==== rouge_chinese's cut_sent ==== */

static int zh_stop(int32_t c) /* [。！？\?] */
{
    return c == 0x3002 || c == 0xff01 || c == 0xff1f || c == '?';
}

static int zh_quote(int32_t c) /* [”’] */
{
    return c == 0x201d || c == 0x2019;
}

/* re.sub('(X{k})([^”’])', r"\1\n\2"): a break before the character after
 * each run of k X's, scanning as re.sub does (a match consumes k + 1). */
static void zh_runs(const int32_t *cp, size_t n, int32_t x, size_t k,
                    uint8_t *brk)
{
    size_t i = 0;

    while (i + k < n) {
        size_t j = 0;

        while (j < k && cp[i + j] == x)
            j++;
        if (j == k && !zh_quote(cp[i + k])) {
            brk[i + k] = 1;
            i += k + 1;
        } else {
            i++;
        }
    }
}

/* cut_sent's four substitutions as break marks (brk[i]: a "\n" goes in
 * before character i). No inserted "\n" can take part in a later match
 * (each follows a stop, a dot or an ellipsis, never a quote), so every
 * pass scans the original characters. */
static void zh_breaks(const int32_t *cp, size_t n, uint8_t *brk)
{
    size_t i;

    for (i = 0; i + 1 < n;) { /* ([。！？\?])([^”’]) */
        if (zh_stop(cp[i]) && !zh_quote(cp[i + 1])) {
            brk[i + 1] = 1;
            i += 2;
        } else {
            i++;
        }
    }
    zh_runs(cp, n, '.', 6, brk);    /* (\.{6})([^”’]) */
    zh_runs(cp, n, 0x2026, 2, brk); /* (\…{2})([^”’]) */
    for (i = 0; i + 2 < n;) { /* ([。！？\?][”’])([^，。！？\?]) */
        if (zh_stop(cp[i]) && zh_quote(cp[i + 1]) && !zh_stop(cp[i + 2]) &&
            cp[i + 2] != 0xff0c) {
            brk[i + 2] = 1;
            i += 3;
        } else {
            i++;
        }
    }
}

/* Decodes p into cp/off (off[n] = the end); returns the characters. */
static size_t zh_decode(const char *p, size_t len, int32_t *cp, size_t *off)
{
    size_t i = 0, n = 0;

    while (i < len) {
        off[n] = i;
        i += mtx_utf8_decode(p + i, len - i, &cp[n]);
        n++;
    }
    off[n] = len;
    return n;
}

/* rouge_chinese: cut_sent(text), rstrip()ped, split("\n"), the pieces of
 * non-zero length kept. */
static enum mt_status zh_pieces(struct rctx *c, struct words *w, const char *p,
                                const int32_t *cp, const size_t *off,
                                const uint8_t *brk, size_t n)
{
    size_t e = n, s = 0;

    while (e > 0 && mtx_py_isspace(cp[e - 1]))
        e--;
    for (size_t i = 0; i <= e; i++) {
        int cut = i == e || brk[i] || cp[i] == '\n';

        if (!cut)
            continue;
        if (off[i] > off[s] &&
            add_segment(c, w, p + off[s], off[i] - off[s]) != MT_OK)
            return MT_ENOMEM;
        s = i < e && cp[i] == '\n' ? i + 1 : i;
    }
    return MT_OK;
}

static enum mt_status split_zh(struct rctx *c, struct words *w, const char *p,
                               size_t len)
{
    int32_t *cp = mt_malloc((len + 1) * sizeof *cp);
    size_t *off = mt_malloc((len + 1) * sizeof *off);
    uint8_t *brk = mt_calloc(len + 1, 1);
    enum mt_status st = MT_ENOMEM;

    if (cp && off && brk) {
        size_t n = zh_decode(p, len, cp, off);

        zh_breaks(cp, n, brk);
        st = zh_pieces(c, w, p, cp, off, brk, n);
    }
    mt_free(cp);
    mt_free(off);
    mt_free(brk);
    return st;
}

typedef enum mt_status (*split_fn)(struct rctx *c, struct words *w,
                                   const char *p, size_t n);

static enum mt_status split_text(struct rctx *c, struct words *w, const char *p,
                                 size_t n, split_fn split)
{
    size_t cap = n + 1; /* words and segments are each at most n + 1 */

    w->id = mt_malloc(cap * sizeof *w->id);
    w->seg = mt_malloc((cap + 1) * sizeof *w->seg);
    if (!w->id || !w->seg)
        return MT_ENOMEM;
    if (split(c, w, p, n) != MT_OK)
        return MT_ENOMEM;
    w->seg[w->nseg] = w->n;
    return w->nseg ? MT_OK : MT_EINVAL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Sorted distinct n-grams (n = 1 or 2) of w into g; returns the count. */
static size_t ngram_set(const struct words *w, int n, uint64_t *g)
{
    size_t k = 0;
    size_t i;
    size_t u = 0;

    for (i = 0; i + (size_t)n <= w->n; i++)
        g[k++] = n == 1 ? w->id[i] : ((uint64_t)w->id[i] << 32) | w->id[i + 1];
    if (k == 0)
        return 0;
    qsort(g, k, sizeof *g, cmp_u64);
    for (i = 1; i < k; i++)
        if (g[i] != g[u])
            g[++u] = g[i];
    return u + 1;
}

static size_t overlap(const uint64_t *a, size_t na, const uint64_t *b,
                      size_t nb)
{
    size_t i = 0;
    size_t j = 0;
    size_t o = 0;

    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            o++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return o;
}

static struct mt_rouge_prf prf(size_t hyp, size_t ref, size_t ov)
{
    struct mt_rouge_prf s;

    s.p = hyp == 0 ? 0.0 : (double)ov / (double)hyp;
    s.r = ref == 0 ? 0.0 : (double)ov / (double)ref;
    s.f = 2.0 * ((s.p * s.r) / (s.p + s.r + 1e-8));
    return s;
}

static enum mt_status rouge_n(const struct rctx *c, int n,
                              struct mt_rouge_prf *out)
{
    uint64_t *gh = mt_malloc((c->h.n + 1) * sizeof *gh);
    uint64_t *gr = mt_malloc((c->r.n + 1) * sizeof *gr);
    size_t nh;
    size_t nr;

    if (!gh || !gr) {
        mt_free(gh);
        mt_free(gr);
        return MT_ENOMEM;
    }
    nh = ngram_set(&c->h, n, gh);
    nr = ngram_set(&c->r, n, gr);
    *out = prf(nh, nr, overlap(gh, nh, gr, nr));
    mt_free(gh);
    mt_free(gr);
    return MT_OK;
}

/* ==== ROUGE-L ==== */

/* Marks in 'in' the words of the LCS of x (reference) and y (hypothesis)
 * that the package's _recon_lcs walks back: on a match take it and move
 * diagonally; else go up when T[i-1][j] > T[i][j-1], otherwise left. */
static void lcs_mark(const uint32_t *x, size_t a, const uint32_t *y, size_t b,
                     uint32_t *t, uint8_t *in)
{
    size_t w = b + 1;
    size_t i;
    size_t j;

    for (j = 0; j <= b; j++)
        t[j] = 0;
    for (i = 1; i <= a; i++) {
        t[i * w] = 0;
        for (j = 1; j <= b; j++) {
            uint32_t up = t[(i - 1) * w + j];
            uint32_t left = t[i * w + j - 1];
            t[i * w + j] = x[i - 1] == y[j - 1] ? t[(i - 1) * w + j - 1] + 1
                                                : (up > left ? up : left);
        }
    }
    for (i = a, j = b; i > 0 && j > 0;) {
        if (x[i - 1] == y[j - 1]) {
            in[x[i - 1]] = 1;
            i--;
            j--;
        } else if (t[(i - 1) * w + j] > t[i * w + j - 1]) {
            i--;
        } else {
            j--;
        }
    }
}

static size_t distinct(const struct words *w, uint8_t *seen, size_t nw)
{
    size_t k = 0;
    size_t i;

    memset(seen, 0, nw);
    for (i = 0; i < w->n; i++) {
        k += !seen[w->id[i]];
        seen[w->id[i]] = 1;
    }
    return k;
}

static size_t max_seg(const struct words *w)
{
    size_t m = 0;
    size_t s;

    for (s = 0; s < w->nseg; s++)
        if (w->seg[s + 1] - w->seg[s] > m)
            m = w->seg[s + 1] - w->seg[s];
    return m;
}

static enum mt_status rouge_l(const struct rctx *c, struct mt_rouge_prf *out)
{
    size_t nw = c->nwords;
    size_t a = max_seg(&c->r);
    size_t b = max_seg(&c->h);
    uint8_t *in = mt_calloc(nw + 1, 1);
    uint8_t *seen = mt_malloc(nw + 1);
    uint32_t *t = mt_malloc((a + 1) * (b + 1) * sizeof *t);
    size_t m, n, ll = 0, i, s, k;

    if (!in || !seen || !t) {
        mt_free(in);
        mt_free(seen);
        mt_free(t);
        return MT_ENOMEM;
    }
    for (s = 0; s < c->r.nseg; s++)
        for (k = 0; k < c->h.nseg; k++)
            lcs_mark(c->r.id + c->r.seg[s], c->r.seg[s + 1] - c->r.seg[s],
                     c->h.id + c->h.seg[k], c->h.seg[k + 1] - c->h.seg[k], t,
                     in);
    for (i = 0; i < nw; i++)
        ll += in[i];
    m = distinct(&c->r, seen, nw);
    n = distinct(&c->h, seen, nw);
    out->r = (double)ll / (double)m;
    out->p = (double)ll / (double)n;
    out->f = 2.0 * ((out->p * out->r) / (out->p + out->r + 1e-8));
    mt_free(in);
    mt_free(seen);
    mt_free(t);
    return MT_OK;
}

static void rctx_free(struct rctx *c)
{
    mt_free(c->h.id);
    mt_free(c->h.seg);
    mt_free(c->r.id);
    mt_free(c->r.seg);
    mtx_ev_map_free(&c->dict);
}

static enum mt_status rouge_with(const char *hyp, size_t hyp_n, const char *ref,
                                 size_t ref_n, split_fn split,
                                 struct mt_rouge_scores *out)
{
    struct rctx c;
    enum mt_status st;

    memset(&c, 0, sizeof c);
    st = split_text(&c, &c.h, hyp, hyp_n, split);
    if (st == MT_OK)
        st = split_text(&c, &c.r, ref, ref_n, split);
    if (st == MT_OK)
        st = rouge_n(&c, 1, &out->r1);
    if (st == MT_OK)
        st = rouge_n(&c, 2, &out->r2);
    if (st == MT_OK)
        st = rouge_l(&c, &out->rl);
    rctx_free(&c);
    return st;
}

enum mt_status mt_rouge(const char *hyp, size_t hyp_n, const char *ref,
                        size_t ref_n, struct mt_rouge_scores *out)
{
    return rouge_with(hyp, hyp_n, ref, ref_n, split_dot, out);
}

enum mt_status mtx_rouge_chinese(const char *hyp, size_t hyp_n, const char *ref,
                                 size_t ref_n, struct mt_rouge_scores *out)
{
    return rouge_with(hyp, hyp_n, ref, ref_n, split_zh, out);
}
