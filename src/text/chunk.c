/* Recursive character chunker with LangChain RecursiveCharacterTextSplitter
 * semantics, computed on byte offsets in one streaming pass per separator
 * level (at most four levels), so the work is linear in the text size. */
#include <string.h>

#include "medtrust/core.h"
#include "text/chunk.h"
#include "text/utf8.h"

/* ==== Model ====
 * LangChain splits the text on the first separator present, keeping each
 * separator at the start of the piece that follows it and dropping empty
 * pieces. Pieces shorter than chunk_size are "good" and merged; a longer
 * piece first flushes the merged good pieces, then is split again with the
 * next separators (or, at the "" level, emitted as is). Good pieces are
 * always contiguous in the text, and merging joins them with "" (because
 * the separators are kept), so every chunk is one substring of the input:
 * we keep byte ranges and never build strings.
 *
 * Merging (LangChain _merge_splits with separator length 0) is a sliding
 * window over pieces: before adding a piece of length L, if total + L >
 * chunk_size, emit the window (stripped, dropped when empty), then drop
 * pieces from the front while total > chunk_overlap or (total + L >
 * chunk_size and total > 0). At the end the window is emitted. Since a
 * level flushes its window before recursing and after its last piece, one
 * window serves every level. */

#define NSEP 4
#define CHAR_LEVEL (NSEP - 1) /* the "" separator: one piece per char */

static const struct {
    const char *p;
    size_t n;
} seps[NSEP] = {{"\n\n", 2}, {"\n", 1}, {" ", 1}, {"", 0}};

struct piece {
    size_t s;   /* first byte */
    size_t e;   /* one past the last byte */
    size_t len; /* code points */
};

struct chunker {
    const unsigned char *t;
    size_t size;
    size_t overlap;
    struct piece *win; /* window: win[head..n) */
    size_t head;
    size_t n;
    size_t cap;
    size_t total; /* code points in the window */
    struct mt_chunk *out;
    size_t nout;
    size_t cap_out;
};

/* ==== UTF-8 ==== */

/* Returns the byte length of the well-formed UTF-8 sequence at t[i], or 1
 * when it is ill-formed (mtx_utf8_decode): one bad byte is one character,
 * as Python's errors="surrogateescape" decoding counts it. Needs i < e. */
static size_t char_len(const unsigned char *t, size_t i, size_t e)
{
    int32_t cp;

    if (t[i] < 0x80)
        return 1;
    return mtx_utf8_decode((const char *)t + i, e - i, &cp);
}

static size_t count_chars(const unsigned char *t, size_t s, size_t e)
{
    size_t len = 0;

    while (s < e) {
        s += t[s] < 0x80 ? 1 : char_len(t, s, e); /* ASCII without a call */
        len++;
    }
    return len;
}

/* Returns the byte length of the Python str.isspace() character encoded at
 * p (at most 'avail' bytes), or 0. The set: U+0009-000D, U+001C-0020,
 * U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F,
 * U+3000. Their lead bytes are never continuation bytes, so a match at a
 * character boundary or ending at one is always a whole character. */
static size_t space_len(const unsigned char *p, size_t avail)
{
    if (avail >= 1 &&
        ((p[0] >= 0x09 && p[0] <= 0x0D) || (p[0] >= 0x1C && p[0] <= 0x20)))
        return 1;
    if (avail >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0))
        return 2;
    if (avail < 3)
        return 0;
    if (p[0] == 0xE1 && p[1] == 0x9A && p[2] == 0x80)
        return 3;
    if (p[0] == 0xE3 && p[1] == 0x80 && p[2] == 0x80)
        return 3;
    if (p[0] == 0xE2 && p[1] == 0x81 && p[2] == 0x9F)
        return 3;
    if (p[0] != 0xE2 || p[1] != 0x80)
        return 0;
    if (p[2] <= 0x8A || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF)
        return 3;
    return 0;
}

/* Returns the length of the whitespace character that ends at t[e], or 0.
 * Tries 1, 2 and 3 bytes back; the lead byte check in space_len makes a
 * match a real character. */
static size_t space_len_before(const unsigned char *t, size_t s, size_t e)
{
    size_t k;

    for (k = 1; k <= 3 && k <= e - s; k++) {
        if (space_len(t + e - k, k) == k)
            return k;
    }
    return 0;
}

/* ==== Output ==== */

static enum mt_status push_chunk(struct chunker *c, size_t s, size_t e)
{
    if (c->nout == c->cap_out) {
        size_t cap = c->cap_out ? 2 * c->cap_out : 16;
        struct mt_chunk *v = mt_realloc(c->out, cap * sizeof *v);

        if (!v)
            return MT_ENOMEM;
        c->out = v;
        c->cap_out = cap;
    }
    c->out[c->nout].start = s;
    c->out[c->nout].end = e;
    c->nout++;
    return MT_OK;
}

/* Emits [s, e) stripped of whitespace at both ends; drops it when nothing
 * is left (LangChain _join_docs). */
static enum mt_status emit_stripped(struct chunker *c, size_t s, size_t e)
{
    size_t k;

    while (s < e && (k = space_len(c->t + s, e - s)) > 0)
        s += k;
    while (e > s && (k = space_len_before(c->t, s, e)) > 0)
        e -= k;
    if (s == e)
        return MT_OK;
    return push_chunk(c, s, e);
}

/* ==== Merging window ==== */

static enum mt_status emit_window(struct chunker *c)
{
    if (c->head == c->n)
        return MT_OK;
    return emit_stripped(c, c->win[c->head].s, c->win[c->n - 1].e);
}

/* Ends the current run of good pieces: emits the window and empties it. */
static enum mt_status flush_window(struct chunker *c)
{
    enum mt_status st = emit_window(c);

    c->head = 0;
    c->n = 0;
    c->total = 0;
    return st;
}

static enum mt_status window_append(struct chunker *c, struct piece p)
{
    if (c->n == c->cap && c->head >= c->cap / 2 && c->head > 0) {
        /* Slide down only once half the array is popped, so each slide
         * is paid for by as many pops; otherwise grow. */
        memmove(c->win, c->win + c->head, (c->n - c->head) * sizeof *c->win);
        c->n -= c->head;
        c->head = 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct piece *v = mt_realloc(c->win, cap * sizeof *v);

        if (!v)
            return MT_ENOMEM;
        c->win = v;
        c->cap = cap;
    }
    c->win[c->n++] = p;
    c->total += p.len;
    return MT_OK;
}

/* Adds one good piece (len < chunk_size), as one step of _merge_splits. */
static enum mt_status merge_piece(struct chunker *c, struct piece p)
{
    enum mt_status st;

    if (c->total + p.len > c->size && c->head < c->n) {
        st = emit_window(c);
        if (st != MT_OK)
            return st;
        while (c->total > c->overlap ||
               (c->total + p.len > c->size && c->total > 0)) {
            c->total -= c->win[c->head].len;
            c->head++;
        }
    }
    return window_append(c, p);
}

/* ==== Recursive splitting ==== */

static enum mt_status split_level(struct chunker *c, size_t s, size_t e,
                                  unsigned lvl);

/* Returns the position of the first separator 'sep' in [s, e), or e. */
static size_t find_sep(const unsigned char *t, size_t s, size_t e, unsigned sep)
{
    const char *p = seps[sep].p;
    size_t n = seps[sep].n;
    const unsigned char *hit;

    while (e - s >= n) {
        hit = memchr(t + s, p[0], e - s - n + 1);
        if (!hit)
            return e;
        s = (size_t)(hit - t);
        if (memcmp(hit, p, n) == 0)
            return s;
        s++;
    }
    return e;
}

/* Handles one piece found with separator level 'lvl'. */
static enum mt_status take_piece(struct chunker *c, struct piece p,
                                 unsigned lvl)
{
    enum mt_status st;

    if (p.len < c->size)
        return merge_piece(c, p);
    st = flush_window(c);
    if (st != MT_OK)
        return st;
    if (lvl == CHAR_LEVEL) /* no separators left: kept unstripped */
        return push_chunk(c, p.s, p.e);
    return split_level(c, p.s, p.e, lvl + 1);
}

/* The "" separator: every character is a piece. */
static enum mt_status split_chars(struct chunker *c, size_t s, size_t e)
{
    enum mt_status st;
    struct piece p;

    while (s < e) {
        p.s = s;
        p.e = s + char_len(c->t, s, e);
        p.len = 1;
        st = take_piece(c, p, CHAR_LEVEL);
        if (st != MT_OK)
            return st;
        s = p.e;
    }
    return flush_window(c);
}

/* Splits [s, e) before each (non-overlapping, leftmost) occurrence of
 * separator 'sep'; the text before the first one is a piece when not
 * empty. */
static enum mt_status split_on(struct chunker *c, size_t s, size_t e,
                               unsigned sep)
{
    enum mt_status st;
    struct piece p;
    size_t m = find_sep(c->t, s, e, sep);

    p.s = s;
    for (;;) {
        if (m > p.s) {
            p.e = m;
            p.len = count_chars(c->t, p.s, p.e);
            st = take_piece(c, p, sep);
            if (st != MT_OK)
                return st;
        }
        if (m == e)
            break;
        p.s = m;
        m = find_sep(c->t, m + seps[sep].n, e, sep);
    }
    return flush_window(c);
}

/* LangChain _split_text on [s, e) with separators seps[lvl..]: uses the
 * first one present ("" always is). */
static enum mt_status split_level(struct chunker *c, size_t s, size_t e,
                                  unsigned lvl)
{
    while (lvl < CHAR_LEVEL && find_sep(c->t, s, e, lvl) == e)
        lvl++;
    if (lvl == CHAR_LEVEL)
        return split_chars(c, s, e);
    return split_on(c, s, e, lvl);
}

/* ==== API ==== */

void mtx_chunk_default_params(struct mt_chunk_params *p)
{
    p->chunk_size = 1000;
    p->chunk_overlap = 200;
}

enum mt_status mtx_chunk_text(const char *text, size_t n,
                              const struct mt_chunk_params *p,
                              struct mt_chunk **out, size_t *count,
                              struct mt_error *err)
{
    struct chunker c;
    enum mt_status st;

    if (!p || !out || !count || (!text && n > 0))
        return mt_fail(err, MT_EINVAL, "chunk: NULL argument");
    if (p->chunk_size == 0 || p->chunk_overlap > p->chunk_size)
        return mt_fail(err, MT_EINVAL,
                       "chunk: need 0 < chunk_size (%u) and "
                       "chunk_overlap (%u) <= chunk_size",
                       (unsigned)p->chunk_size, (unsigned)p->chunk_overlap);
    memset(&c, 0, sizeof c);
    c.t = (const unsigned char *)text;
    c.size = p->chunk_size;
    c.overlap = p->chunk_overlap;
    st = n > 0 ? split_level(&c, 0, n, 0) : MT_OK;
    mt_free(c.win);
    if (st != MT_OK) {
        mt_free(c.out);
        return mt_fail(err, st, "chunk: out of memory");
    }
    *out = c.out;
    *count = c.nout;
    return MT_OK;
}
