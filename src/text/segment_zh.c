/* jieba.cut(text) of jieba 0.42.1 (cut_all=False, HMM=True) in C. The
 * behaviour replicated, over code points:
 *   blocks   runs of re_han_default [\u4E00-\u9FD5a-zA-Z0-9+#&._%-] are cut
 *            by __cut_DAG; every other character is a token of its own,
 *            "\r\n" one token (re_skip_default (\r\n|\s) then per char);
 *   DAG      from each k, every end i with FREQ[sentence[k:i+1]] > 0,
 *            walking while the fragment is a word or a word's prefix; [k]
 *            when none;
 *   route    route[k] = max over the DAG's ends x of
 *            (log(FREQ or 1) - log(total) + route[x+1], x): ties go to
 *            the larger x (Python compares the tuples);
 *   buffer   single-character words gather into a buffer; at a longer
 *            word or the end, a buffer of one is a token, one the
 *            dictionary holds (freq > 0) is cut into characters, any
 *            other goes to finalseg;
 *   finalseg runs of [\u4E00-\u9FD5] by the BMES Viterbi (MIN_FLOAT for
 *            what a table lacks; a tie goes to the later letter of
 *            "BEMS" order, as max() over (prob, state) tuples does); the
 *            rest split by ([a-zA-Z0-9]+(?:\.\d+)?%?), non-empty parts
 *            kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "text/segment_zh_int.h"
#include "text/utf8.h"

struct cutter {
    const struct mtx_jieba *j;
    const char *s;
    int32_t *cp; /* the text's code points (-1: an ill-formed byte) */
    size_t *off; /* byte offset of each, and of the end */
    double *rp;  /* route: best log probability from each position */
    size_t *rx;  /* route: the chosen word's last position */
    uint8_t *bp; /* Viterbi back pointers, 4 per position */
    struct mt_str *tok;
    size_t ntok;
};

size_t mtx_jb_char_len(const char *p, size_t n)
{
    int32_t cp;

    return mtx_utf8_decode(p, n, &cp);
}

int mtx_py_isspace(int32_t c)
{
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f))
        return 1;
    if (c == 0x85 || c == 0xa0 || c == 0x1680 || c == 0x3000)
        return 1;
    if (c >= 0x2000 && c <= 0x200a)
        return 1;
    return c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f;
}

static int is_han(int32_t c)
{
    return c >= 0x4e00 && c <= 0x9fd5;
}

static int is_alnum(int32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

static int is_digit(int32_t c)
{
    return c >= '0' && c <= '9';
}

static int is_han_default(int32_t c)
{
    return is_han(c) || is_alnum(c) ||
           (c > 0 && c < 128 && strchr("+#&._%-", (int)c));
}

static void push(struct cutter *c, size_t a, size_t b)
{
    c->tok[c->ntok].p = c->s + c->off[a];
    c->tok[c->ntok++].n = c->off[b] - c->off[a];
}

static int64_t freq(const struct cutter *c, size_t a, size_t b)
{
    return mtx_jb_freq(c->j, c->s + c->off[a], c->off[b] - c->off[a]);
}

/* ==== finalseg ==== */

static double emit_p(const struct mtx_jieba *j, int s, int32_t cp)
{
    const struct mtx_jb_emit *e = &j->emit[s];
    size_t lo = 0, hi = e->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (e->row[mid].cp == cp)
            return e->row[mid].logp;
        if (e->row[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return MTX_JB_MIN_FLOAT;
}

/* PrevStatus, and each state's letter for max()'s tie-break. */
static const int prev[4][2] = {{MTX_JB_E, MTX_JB_S},  /* B */
                               {MTX_JB_M, MTX_JB_B},  /* M */
                               {MTX_JB_B, MTX_JB_M},  /* E */
                               {MTX_JB_S, MTX_JB_E}}; /* S */
static const char letter[4] = {'B', 'M', 'E', 'S'};

/* One Viterbi step at position t (> a) from v[] into w[]. */
static void viterbi_step(const struct cutter *c, size_t a, size_t t,
                         const double *v, double *w)
{
    const struct mtx_jieba *j = c->j;

    for (int y = 0; y < 4; y++) {
        double em = emit_p(j, y, c->cp[t]);
        int best = prev[y][0];
        double bv = v[best] + j->trans[best][y] + em;
        int y1 = prev[y][1];
        double v1 = v[y1] + j->trans[y1][y] + em;

        if (v1 > bv || (v1 == bv && letter[y1] > letter[best])) {
            best = y1;
            bv = v1;
        }
        w[y] = bv;
        c->bp[(t - a) * 4 + (size_t)y] = (uint8_t)best;
    }
}

/* The BMES states of the Han run [a, b) into c->bp[(t - a) * 4] (the
 * state of t, reusing the back-pointer rows once walked). */
static void viterbi(const struct cutter *c, size_t a, size_t b)
{
    double v[4], w[4];
    int y;

    for (y = 0; y < 4; y++)
        v[y] = c->j->start[y] + emit_p(c->j, y, c->cp[a]);
    for (size_t t = a + 1; t < b; t++) {
        viterbi_step(c, a, t, v, w);
        memcpy(v, w, sizeof v);
    }
    y = v[MTX_JB_S] >= v[MTX_JB_E] ? MTX_JB_S : MTX_JB_E;
    for (size_t t = b - 1;; t--) {
        int back = t > a ? c->bp[(t - a) * 4 + (size_t)y] : 0;

        c->bp[(t - a) * 4] = (uint8_t)y;
        if (t == a)
            break;
        y = back;
    }
}

/* finalseg's __cut of the Han run [a, b). */
static void hmm_cut(struct cutter *c, size_t a, size_t b)
{
    size_t begin = 0, next = 0, i;

    viterbi(c, a, b);
    for (i = 0; i < b - a; i++) {
        int pos = c->bp[i * 4];

        if (pos == MTX_JB_B) {
            begin = i;
        } else if (pos == MTX_JB_E) {
            push(c, a + begin, a + i + 1);
            next = i + 1;
        } else if (pos == MTX_JB_S) {
            push(c, a + i, a + i + 1);
            next = i + 1;
        }
    }
    if (next < b - a)
        push(c, a + next, b);
}

/* End of a ([a-zA-Z0-9]+(?:\.\d+)?%?) match that starts at i. */
static size_t skip_match_end(const struct cutter *c, size_t i, size_t b)
{
    while (i < b && is_alnum(c->cp[i]))
        i++;
    if (i + 1 < b && c->cp[i] == '.' && is_digit(c->cp[i + 1]))
        for (i += 2; i < b && is_digit(c->cp[i]);)
            i++;
    if (i < b && c->cp[i] == '%')
        i++;
    return i;
}

/* finalseg's re_skip.split of the non-Han run [a, b). */
static void skip_split(struct cutter *c, size_t a, size_t b)
{
    size_t gap = a, i = a;

    while (i < b) {
        size_t m;

        if (!is_alnum(c->cp[i])) {
            i++;
            continue;
        }
        m = skip_match_end(c, i, b);
        if (gap < i)
            push(c, gap, i);
        push(c, i, m);
        i = gap = m;
    }
    if (gap < b)
        push(c, gap, b);
}

static void finalseg(struct cutter *c, size_t a, size_t b)
{
    while (a < b) {
        int han = is_han(c->cp[a]);
        size_t e = a;

        while (e < b && is_han(c->cp[e]) == han)
            e++;
        if (han)
            hmm_cut(c, a, e);
        else
            skip_split(c, a, e);
        a = e;
    }
}

/* ==== __cut_DAG ==== */

/* route[k] for k from b - 1 down to a (calc over get_DAG's ends). */
static void calc_route(struct cutter *c, size_t a, size_t b)
{
    double lt = c->j->log_total;

    c->rp[b] = 0.0;
    for (size_t k = b; k-- > a;) {
        double best = -HUGE_VAL;
        size_t bx = k;
        int any = 0;

        for (size_t i = k; i < b; i++) {
            int64_t f = freq(c, k, i + 1);
            double v;

            if (f < 0)
                break;
            if (f == 0)
                continue;
            v = log((double)f) - lt + c->rp[i + 1];
            if (!any || v >= best) { /* ends ascend: a tie takes the later */
                best = v;
                bx = i;
            }
            any = 1;
        }
        c->rp[k] = any ? best : 0.0 - lt + c->rp[k + 1]; /* log(1) */
        c->rx[k] = bx;
    }
}

/* A buffer of single-character words [a, b). */
static void flush(struct cutter *c, size_t a, size_t b)
{
    if (b - a == 1)
        push(c, a, b);
    else if (freq(c, a, b) <= 0) /* not self.FREQ.get(buf) */
        finalseg(c, a, b);
    else
        for (size_t i = a; i < b; i++)
            push(c, i, i + 1);
}

static void cut_dag(struct cutter *c, size_t a, size_t b)
{
    size_t x = a, buf = a;

    calc_route(c, a, b);
    while (x < b) {
        size_t y = c->rx[x] + 1;

        if (y - x > 1) {
            if (buf < x)
                flush(c, buf, x);
            push(c, x, y);
            buf = y;
        }
        x = y;
    }
    if (buf < b)
        flush(c, buf, b);
}

/* ==== cut ==== */

static void cut_other(struct cutter *c, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++) {
        if (c->cp[i] == '\r' && i + 1 < b && c->cp[i + 1] == '\n') {
            push(c, i, i + 2);
            i++;
        } else {
            push(c, i, i + 1);
        }
    }
}

static void cut_all_blocks(struct cutter *c, size_t n)
{
    size_t a = 0;

    while (a < n) {
        int han = is_han_default(c->cp[a]);
        size_t b = a;

        while (b < n && is_han_default(c->cp[b]) == han)
            b++;
        if (han)
            cut_dag(c, a, b);
        else
            cut_other(c, a, b);
        a = b;
    }
}

static size_t decode_all(struct cutter *c, const char *s, size_t n)
{
    size_t i = 0, k = 0;

    while (i < n) {
        c->off[k] = i;
        i += mtx_utf8_decode(s + i, n - i, &c->cp[k]);
        k++;
    }
    c->off[k] = n;
    return k;
}

static void cutter_free(struct cutter *c)
{
    mt_free(c->cp);
    mt_free(c->off);
    mt_free(c->rp);
    mt_free(c->rx);
    mt_free(c->bp);
}

enum mt_status mtx_jieba_cut(const struct mtx_jieba *j, const char *s, size_t n,
                             struct mt_str **toks, size_t *ntoks)
{
    struct cutter c = {.j = j, .s = s};
    size_t m;

    *toks = NULL;
    *ntoks = 0;
    c.cp = mt_malloc((n + 1) * sizeof *c.cp);
    c.off = mt_malloc((n + 1) * sizeof *c.off);
    c.rp = mt_malloc((n + 1) * sizeof *c.rp);
    c.rx = mt_malloc((n + 1) * sizeof *c.rx);
    c.bp = mt_malloc((n + 1) * 4);
    c.tok = mt_malloc((n + 1) * sizeof *c.tok);
    if (!c.cp || !c.off || !c.rp || !c.rx || !c.bp || !c.tok) {
        cutter_free(&c);
        mt_free(c.tok);
        return MT_ENOMEM;
    }
    m = decode_all(&c, s, n);
    cut_all_blocks(&c, m);
    cutter_free(&c);
    *toks = c.tok;
    *ntoks = c.ntok;
    return MT_OK;
}
