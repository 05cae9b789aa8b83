/* BM25 segment reader: the postings codec, opening and validating a
 * segment, and dictionary lookup. Search lives in bm25_search.c. */
#include <string.h>

#include "index/bm25_int.h"
#include "medtrust/core.h"

/* ==== Codec ==== */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

enum mt_status mtx_bm25_put_posting(uint8_t **buf, size_t *len, size_t *cap,
                                    uint32_t gap, uint32_t tf_title,
                                    uint32_t tf_text)
{
    uint64_t code = (uint64_t)tf_text << 1 | (tf_title > 0);

    if (*cap - *len < 20) { /* 5 + 10 + 5 bytes at most */
        size_t nc = *cap ? *cap * 2 : 32;
        uint8_t *p = mt_realloc(*buf, nc);
        if (!p)
            return MT_ENOMEM;
        *buf = p;
        *cap = nc;
    }
    *len += put_varint(*buf + *len, gap);
    *len += put_varint(*buf + *len, code);
    if (tf_title)
        *len += put_varint(*buf + *len, tf_title);
    return MT_OK;
}

/* Reads one LEB128 varint; 0 at the end of input or an overlong one. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end,
                             uint64_t *v)
{
    const uint8_t *p = *pp;
    uint64_t x = 0;

    if (p < end && *p < 0x80) {
        *v = *p;
        *pp = p + 1;
        return 1;
    }
    for (unsigned sh = 0; p < end && sh < 64; sh += 7) {
        uint8_t c = *p++;
        x |= (uint64_t)(c & 0x7F) << sh;
        if (c < 0x80) {
            *v = x;
            *pp = p;
            return 1;
        }
    }
    return 0;
}

/* 1 when no byte of [p, p + n) has its high bit set: every varint there
 * is one byte long. */
static int all_short(const uint8_t *p, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= p[i];
    return !(acc & 0x8080808080808080ull);
}

/* One posting of one-byte varints at p; returns its length, 2 or 3. */
static inline size_t short_posting(const uint8_t *p, double w_text,
                                   const float w[MT_BM25_FIELDS], int64_t *prev,
                                   uint32_t *doc, float *wtf)
{
    uint32_t code = p[1];

    *prev += (int64_t)p[0] + 1;
    *doc = (uint32_t)*prev;
    if (!(code & 1)) {
        /* no title tf: w_title x 0 + w_text x tf is w_text x tf exactly
         * (bm25_weigh's value, one conversion and product fewer) */
        *wtf = (float)(w_text * (double)(code >> 1));
        return 2;
    }
    *wtf = bm25_weigh(w, (double)p[2], (double)(code >> 1));
    return 3;
}

/* mtx_bm25_decode over bytes that are all one-byte varints (the dense
 * lists of common terms): the same postings with fewer tests. The first
 * (end - p) / 3 postings cannot run past end, so they go unchecked; no
 * doc is checked against last on the way (n gaps under 128 cannot
 * overflow), only the last one: UINT32_MAX when it passes last, and the
 * caller decodes the block again the careful way. */
static uint32_t decode_short(const uint8_t **pp, const uint8_t *end,
                             int64_t prev, uint32_t last, uint32_t n,
                             const float w[MT_BM25_FIELDS], uint32_t *docs,
                             float *wtf)
{
    const uint8_t *p = *pp;
    double w_text = (double)w[1];
    size_t safe = (size_t)(end - p) / 3;
    uint32_t i = 0;

    for (; i < n && i < safe; i++)
        p += short_posting(p, w_text, w, &prev, &docs[i], &wtf[i]);
    for (; i < n && end - p >= 2; i++) {
        if ((p[1] & 1) && end - p < 3)
            break;
        p += short_posting(p, w_text, w, &prev, &docs[i], &wtf[i]);
    }
    if (i && prev > (int64_t)last)
        return UINT32_MAX;
    *pp = p;
    return i;
}

uint32_t mtx_bm25_decode(const uint8_t **pp, const uint8_t *end, int64_t prev,
                         uint32_t last, uint32_t n,
                         const float w[MT_BM25_FIELDS], uint32_t *docs,
                         float *wtf)
{
    const uint8_t *p = *pp;
    /* docs after prev up to last: a gap must stay below it */
    uint64_t room = (int64_t)last > prev ? (uint64_t)((int64_t)last - prev) : 0;
    double w_text = (double)w[1];
    /* n postings of one-byte varints take at most 3n bytes */
    size_t span =
        (size_t)(end - p) < 3 * (size_t)n ? (size_t)(end - p) : 3 * (size_t)n;
    uint32_t i;

    if (all_short(p, span)) {
        i = decode_short(pp, p + span, prev, last, n, w, docs, wtf);
        if (i != UINT32_MAX)
            return i;
    }
    for (i = 0; i < n; i++) {
        uint64_t gap;
        uint64_t code;
        uint64_t tt = 0;
        if (!get_varint(&p, end, &gap) || !get_varint(&p, end, &code))
            break;
        if (gap >= room) /* doc > last */
            break;
        room -= gap + 1;
        prev += (int64_t)gap + 1;
        docs[i] = (uint32_t)prev;
        /* no title tf: w_title x 0 + w_text x tf is w_text x tf exactly
         * (bm25_weigh's value, one conversion and product fewer) */
        if (!(code & 1)) {
            wtf[i] = (float)(w_text * (double)(code >> 1));
            continue;
        }
        if (!get_varint(&p, end, &tt))
            break;
        wtf[i] = bm25_weigh(w, (double)tt, (double)(code >> 1));
    }
    *pp = p;
    return i;
}

/* ==== Open and validate ==== */

/* The open checks the CRC of every section it reads (the tables the
 * checks below walk, the lengths) and leaves the postings, nearly all of
 * the file's bytes, to mtx_bm25_check(): a 25M-abstract index's postings
 * are 10.8 GB, and reading them before each first search costs minutes
 * and pushes out of the page cache what searches need. The postings'
 * decoders are memory-safe on any bytes within their term's range (the
 * fuzzer feeds them damaged files with no CRC checked at all), so damage
 * there gives wrong scores, never a wrong read; `medtrust stats --check`
 * finds it, as Lucene's CheckIndex does for its per-file checksums. Fuzz
 * builds skip the CRCs at open too, so that mutated inputs reach the
 * structural checks (the conventional libFuzzer macro; never in
 * production). */
#define OPEN_FLAGS MT_SEG_LAZY_CRC
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CHECK_TABLES 0
#else
#define CHECK_TABLES 1
#endif

struct mt_bm25_params mtx_bm25_default_params(void)
{
    struct mt_bm25_params p = {
        {MT_BM25_DEFAULT_TITLE_WEIGHT, MT_BM25_DEFAULT_TEXT_WEIGHT}, 1};
    return p;
}

void mtx_bm25_close(struct mt_bm25 *idx)
{
    if (!idx)
        return;
    mtx_seg_close(idx->seg);
    mt_free(idx);
}

static enum mt_status bad(const struct mt_bm25 *idx, struct mt_error *err,
                          const char *sec, const char *what)
{
    return mt_fail(err, MT_EPARSE, "%s: section '%s': %s",
                   mtx_seg_name(idx->seg), sec, what);
}

/* Fetches section id and checks its size is count * elem bytes (or, with
 * elem 0, anything). Sections are 16-byte aligned by the segment. */
static enum mt_status section(const struct mt_bm25 *idx, uint32_t id,
                              uint64_t count, size_t elem, const void **p,
                              size_t *n, struct mt_error *err)
{
    char ids[5];
    enum mt_status st = mtx_seg_section(idx->seg, id, p, n, err);

    if (st != MT_OK)
        return st == MT_ENOTFOUND ? MT_EPARSE : st;
    if (((uintptr_t)*p & 7) != 0)
        return bad(idx, err, mtx_seg_id_str(id, ids), "misaligned");
    if (elem && (*n % elem != 0 || *n / elem != count))
        return bad(idx, err, mtx_seg_id_str(id, ids), "wrong size");
    return MT_OK;
}

static enum mt_status load_meta(struct mt_bm25 *idx, struct mt_error *err)
{
    const void *p;
    size_t n;
    const struct bm25_meta *m;
    enum mt_status st =
        section(idx, BM25_SEC_META, 1, sizeof(struct bm25_meta), &p, &n, err);

    if (st != MT_OK)
        return st;
    m = p;
    idx->meta = *m;
    m = &idx->meta;
    if (m->block != MT_BM25_BLOCK || m->ndocs == BM25_END)
        return bad(idx, err, "META", "unsupported block size or doc count");
    if (!(m->avgdl >= 0.0) || !(m->weight[0] > 0.0f) || !(m->weight[1] > 0.0f))
        return bad(idx, err, "META", "bad average length or weights");
    if (m->nblocks > m->npostings ||
        m->npostings > (uint64_t)m->nterms * m->ndocs)
        return bad(idx, err, "META", "inconsistent counts");
    return MT_OK;
}

static enum mt_status load_sections(struct mt_bm25 *idx, struct mt_error *err)
{
    const struct bm25_meta *m = &idx->meta;
    const void *p;
    size_t n;
    enum mt_status st;

    if (mtx_seg_version(idx->seg) == BM25_VERSION_FLOAT) {
        st = section(idx, BM25_SEC_DLEN, m->ndocs, sizeof(float), &p, &n, err);
        idx->dl = p;
    } else {
        st = section(idx, BM25_SEC_NORM, m->ndocs, 1, &p, &n, err);
        idx->norm = p;
    }
    if (st != MT_OK)
        return st;
    st = section(idx, BM25_SEC_TSTR, 0, 0, &p, &n, err);
    if (st != MT_OK)
        return st;
    idx->tstr = p;
    idx->tstr_n = n;
    st = section(idx, BM25_SEC_TERM, m->nterms, sizeof(struct bm25_term), &p,
                 &n, err);
    if (st != MT_OK)
        return st;
    idx->terms = p;
    st = section(idx, BM25_SEC_BLKS, m->nblocks, sizeof(struct bm25_blk), &p,
                 &n, err);
    if (st != MT_OK)
        return st;
    idx->blks = p;
    st = section(idx, BM25_SEC_POST, 0, 0, &p, &n, err);
    idx->post = p;
    idx->post_n = n;
    return st;
}

static int term_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;

    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

/* Checks the blocks of term ti: docs rise and stay below N, offsets rise
 * and stay inside the term's postings. */
static int blocks_ok(const struct mt_bm25 *idx, uint32_t ti, uint32_t nb)
{
    const struct bm25_term *t = &idx->terms[ti];
    const struct bm25_blk *b = idx->blks + t->blk;
    const uint8_t *s;
    const uint8_t *e;
    int64_t prev = -1;
    uint32_t off = 0;

    mtx_bm25_term_range(idx, ti, &s, &e);
    for (uint32_t j = 0; j < nb; j++) {
        if ((int64_t)b[j].last <= prev || b[j].last >= idx->meta.ndocs)
            return 0;
        if (b[j].off < off || b[j].off > (size_t)(e - s))
            return 0;
        if (j == 0 && b[j].off != 0)
            return 0;
        prev = b[j].last;
        off = b[j].off;
    }
    return 1;
}

static enum mt_status check_term(const struct mt_bm25 *idx, uint32_t i,
                                 uint64_t *nblk, uint64_t *npost,
                                 struct mt_error *err)
{
    const struct bm25_term *t = &idx->terms[i];
    const struct bm25_term *prev = i ? t - 1 : NULL;
    uint32_t nb;

    if (t->str_len == 0 || t->str_off > idx->tstr_n ||
        t->str_len > idx->tstr_n - t->str_off)
        return bad(idx, err, "TERM", "term text out of bounds");
    if (prev && term_cmp(idx->tstr + prev->str_off, prev->str_len,
                         idx->tstr + t->str_off, t->str_len) >= 0)
        return bad(idx, err, "TERM", "terms out of order");
    if (t->df == 0 || t->df > idx->meta.ndocs || t->blk != *nblk)
        return bad(idx, err, "TERM", "bad document frequency or block");
    if (t->post_off > idx->post_n || (prev && t->post_off < prev->post_off))
        return bad(idx, err, "TERM", "postings offset out of bounds");
    nb = (t->df + MT_BM25_BLOCK - 1) / MT_BM25_BLOCK;
    if (nb > idx->meta.nblocks - *nblk)
        return bad(idx, err, "BLKS", "too few blocks");
    *nblk += nb;
    *npost += t->df;
    return MT_OK;
}

/* The sections whose CRC the open leaves to mtx_bm25_check(). */
static const uint32_t lazy_sections[] = {BM25_SEC_POST, 0};

static enum mt_status validate(struct mt_bm25 *idx, struct mt_error *err)
{
    uint64_t nblk = 0;
    uint64_t npost = 0;
    enum mt_status st =
        CHECK_TABLES
            ? mtx_seg_verify_all(idx->seg, lazy_sections, NULL, NULL, err)
            : MT_OK;

    if (st == MT_OK)
        st = load_meta(idx, err);

    if (st == MT_OK)
        st = load_sections(idx, err);
    for (uint32_t i = 0; st == MT_OK && i < idx->meta.nterms; i++)
        st = check_term(idx, i, &nblk, &npost, err);
    if (st != MT_OK)
        return st;
    if (nblk != idx->meta.nblocks || npost != idx->meta.npostings)
        return bad(idx, err, "META", "counts disagree with the terms");
    /* Second pass: term ranges are known to be in order now. */
    for (uint32_t i = 0; i < idx->meta.nterms; i++) {
        uint32_t nb = (idx->terms[i].df + MT_BM25_BLOCK - 1) / MT_BM25_BLOCK;
        if (!blocks_ok(idx, i, nb))
            return bad(idx, err, "BLKS", "block table out of order");
    }
    return MT_OK;
}

static enum mt_status finish_open(struct mt_bm25 *idx, struct mt_bm25 **out,
                                  struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (mtx_seg_version(idx->seg) != BM25_VERSION &&
        mtx_seg_version(idx->seg) != BM25_VERSION_FLOAT)
        st = mt_fail(err, MT_EPARSE, "%s: unsupported BM25 version %u",
                     mtx_seg_name(idx->seg), mtx_seg_version(idx->seg));
    if (st == MT_OK)
        st = validate(idx, err);
    if (st != MT_OK) {
        mtx_bm25_close(idx);
        return st;
    }
    *out = idx;
    return MT_OK;
}

enum mt_status mtx_bm25_open(const char *path, struct mt_bm25 **out,
                             struct mt_error *err)
{
    struct mt_bm25 *idx = mt_calloc(1, sizeof *idx);
    enum mt_status st;

    if (!idx)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    st = mtx_seg_open(path, BM25_MAGIC, OPEN_FLAGS, &idx->seg, err);
    if (st != MT_OK) {
        mtx_bm25_close(idx);
        return st;
    }
    return finish_open(idx, out, err);
}

enum mt_status mtx_bm25_open_mem(const void *data, size_t n, const char *name,
                                 struct mt_bm25 **out, struct mt_error *err)
{
    struct mt_bm25 *idx;
    enum mt_status st;

    if (((uintptr_t)data & (MT_SEG_ALIGN - 1)) != 0)
        return mt_fail(err, MT_EINVAL, "%s: buffer not 16-byte aligned", name);
    idx = mt_calloc(1, sizeof *idx);
    if (!idx)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", name);
    st =
        mtx_seg_open_mem(data, n, name, BM25_MAGIC, OPEN_FLAGS, &idx->seg, err);
    if (st != MT_OK) {
        mtx_bm25_close(idx);
        return st;
    }
    return finish_open(idx, out, err);
}

/* ==== Lookup and stats ==== */

int64_t mtx_bm25_find_term(const struct mt_bm25 *idx, struct mt_str t)
{
    size_t lo = 0;
    size_t hi = idx->meta.nterms;

    if (t.n == 0 || !t.p)
        return -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct bm25_term *e = &idx->terms[mid];
        int c = term_cmp(idx->tstr + e->str_off, e->str_len, t.p, t.n);
        if (c == 0)
            return (int64_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

uint32_t mtx_bm25_term_df(const struct mt_bm25 *idx, struct mt_str t)
{
    int64_t ti = mtx_bm25_find_term(idx, t);

    return ti < 0 ? 0 : idx->terms[ti].df;
}

void mtx_bm25_term_range(const struct mt_bm25 *idx, uint32_t ti,
                         const uint8_t **start, const uint8_t **end)
{
    uint64_t e =
        ti + 1 < idx->meta.nterms ? idx->terms[ti + 1].post_off : idx->post_n;

    *start = idx->post + idx->terms[ti].post_off;
    *end = idx->post + e;
}

enum mt_status mtx_bm25_check(const struct mt_bm25 *idx,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err)
{
    return mtx_seg_verify_all(idx->seg, NULL, step, user, err);
}

uint64_t mtx_bm25_check_bytes(const struct mt_bm25 *idx)
{
    return mtx_seg_payload(idx->seg);
}

void mtx_bm25_stats(const struct mt_bm25 *idx, struct mtx_bm25_stats *st)
{
    memset(st, 0, sizeof *st);
    st->docs = idx->meta.ndocs;
    st->terms = idx->meta.nterms;
    st->postings = idx->meta.npostings;
    st->bytes = mtx_seg_size(idx->seg);
    st->avgdl = idx->meta.avgdl;
    st->field_weight[0] = idx->meta.weight[0];
    st->field_weight[1] = idx->meta.weight[1];
}
