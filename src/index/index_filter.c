/* Metadata filters of a search (VerifAI filters PubMed by author, journal,
 * publication type and year): the store names the matching chunks, and
 * each segment gets a bitmap of its matching local ids that the BM25 and
 * vector searches consult, so the first stage searches only matching
 * documents instead of post-filtering a top k that could come back short.
 * The last filter's bitmaps are kept for the handle's next search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "index/index_int.h"
#include "medtrust/core.h"

size_t mt_search_pubmed_conds(const char *author, const char *journal,
                              const char *pub_type, struct mt_meta_cond *c)
{
    const char *keys[3] = {"authors", "journal", "publication_types"};
    const char *vals[3] = {author, journal, pub_type};
    size_t i, n = 0;

    for (i = 0; i < 3; i++)
        if (vals[i] && *vals[i]) {
            memset(&c[n], 0, sizeof c[n]);
            c[n].key = keys[i];
            c[n++].text = vals[i];
        }
    return n;
}

void mtx_meta_filter_free(struct mtx_meta_filter *f)
{
    size_t i;

    for (i = 0; f->bits && i < f->nsegs; i++)
        mt_free(f->bits[i]);
    mt_free(f->bits);
    mt_free(f->count);
    mt_free(f->sig);
    memset(f, 0, sizeof *f);
}

/* The conditions of p: its 'meta' plus the older filter_key range. */
static enum mt_status conds(const struct mt_search_params *p,
                            struct mt_meta_cond *c, size_t *n,
                            struct mt_error *err)
{
    *n = 0;
    if (p->nmeta > MT_SEARCH_MAX_META || (p->nmeta && !p->meta))
        return mt_fail(err, MT_EINVAL, "at most %d metadata conditions",
                       MT_SEARCH_MAX_META);
    if (p->nmeta)
        memcpy(c, p->meta, p->nmeta * sizeof *c);
    *n = p->nmeta;
    if (p->filter_key) {
        c[*n].key = p->filter_key;
        c[*n].text = NULL;
        c[*n].min = p->filter_min;
        c[(*n)++].max = p->filter_max;
    }
    return MT_OK;
}

/* The conditions as one string, to recognise a repeated filter. */
static char *signature(const struct mt_meta_cond *c, size_t n)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);
    size_t i;
    enum mt_status st = mtx_buf_printf(&b, "%zu", n);

    for (i = 0; st == MT_OK && i < n; i++)
        st = c[i].text
                 ? mtx_buf_printf(&b, "\x1e%s\x1ft%s", c[i].key, c[i].text)
                 : mtx_buf_printf(&b, "\x1e%s\x1fr%.17g,%.17g", c[i].key,
                                  c[i].min, c[i].max);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* Position of chunk id 'cid' in the segment's sorted ids, or -1. */
static long find_cid(const int64_t *cids, uint32_t n, int64_t cid)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cids[mid] < cid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && cids[lo] == cid ? (long)lo : -1;
}

struct mark_ctx {
    struct mtx_meta_filter *f;
    const struct mtx_filter_seg *segs;
};

static enum mt_status mark(int64_t cid, void *user)
{
    struct mark_ctx *m = user;
    size_t i;

    for (i = 0; i < m->f->nsegs; i++) {
        long at = find_cid(m->segs[i].cids, m->segs[i].n, cid);
        if (at < 0)
            continue;
        m->f->bits[i][at >> 3] |= (uint8_t)(1u << (at & 7));
        m->f->count[i]++;
        m->f->total++;
        break; /* a chunk lives in one segment */
    }
    return MT_OK;
}

static enum mt_status alloc_bits(struct mtx_meta_filter *f,
                                 const struct mtx_filter_seg *segs, size_t n)
{
    size_t i;

    f->nsegs = n;
    f->bits = mt_calloc(n + 1, sizeof *f->bits);
    f->count = mt_calloc(n + 1, sizeof *f->count);
    if (!f->bits || !f->count)
        return MT_ENOMEM;
    for (i = 0; i < n; i++) {
        f->bits[i] = mt_calloc((size_t)segs[i].n / 8 + 1, 1);
        if (!f->bits[i])
            return MT_ENOMEM;
    }
    return MT_OK;
}

enum mt_status mtx_meta_filter_get(struct mtx_meta_filter *f,
                                   struct mt_store *s,
                                   const struct mt_search_params *p,
                                   const struct mtx_filter_seg *segs,
                                   size_t nsegs, int *active,
                                   struct mt_error *err)
{
    struct mt_meta_cond c[MT_SEARCH_MAX_META + 1];
    struct mark_ctx m = {f, segs};
    size_t n = 0;
    char *sig;
    enum mt_status st = conds(p, c, &n, err);

    *active = st == MT_OK && n > 0;
    if (!*active)
        return st;
    sig = signature(c, n);
    if (!sig)
        return mt_fail(err, MT_ENOMEM, "filter: out of memory");
    if (f->sig && f->nsegs == nsegs && strcmp(f->sig, sig) == 0) {
        mt_free(sig);
        return MT_OK;
    }
    mtx_meta_filter_free(f);
    f->sig = sig;
    st = alloc_bits(f, segs, nsegs);
    if (st != MT_OK)
        st = mt_fail(err, st, "filter: out of memory");
    if (st == MT_OK)
        st = mt_store_each_matching_chunk(s, c, n, mark, &m, err);
    if (st != MT_OK)
        mtx_meta_filter_free(f); /* never keep a half-marked filter */
    return st;
}
