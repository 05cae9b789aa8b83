/* BM25 builder: interns terms in a hash table, appends each document's
 * postings to per-term compressed byte arrays, and writes one segment.
 * No allocation per posting: arrays grow by doubling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/bm25_int.h"
#include "medtrust/core.h"

#define MAX_TERM_LEN 255u
#define TF_MAX (UINT32_MAX >> 1) /* tf_text is shifted left once */

struct bterm {
    uint32_t str_off;
    uint32_t str_len;
    uint32_t hash;
    uint32_t stamp; /* doc + 1 of the document that last used it */
    uint32_t tf[MT_BM25_FIELDS];
    uint32_t df;
    uint32_t last; /* last doc posted */
    uint8_t *post;
    size_t plen;
    size_t pcap;
};

struct dlen {
    uint32_t n[MT_BM25_FIELDS];
};

struct mt_bm25_builder {
    struct mt_bm25_params p;
    struct bterm *terms;
    uint32_t nterms;
    uint32_t tcap;
    uint32_t *slots; /* term index + 1; 0 = empty */
    uint32_t nslots; /* power of two */
    char *chars;
    size_t clen;
    uint32_t ccap;
    uint32_t *cur; /* terms of the current document */
    uint32_t ncur;
    uint32_t curcap;
    struct dlen *lens;
    uint32_t ndocs;
    uint32_t lcap;
    int64_t cur_doc;   /* document being added, -1 none */
    int64_t floor_doc; /* documents <= this are written and closed */
    uint64_t npostings;
    uint64_t post_bytes; /* sum of the terms' pcap */
};

/* ==== Growth helpers ==== */

/* Makes *p hold at least need elements of size el; doubles. */
static enum mt_status grow(void **p, uint32_t *cap, uint64_t need, size_t el)
{
    uint64_t c = *cap ? *cap : 16;
    void *q;

    if (need <= *cap)
        return MT_OK;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX)
        c = UINT32_MAX;
    if (need > c)
        return MT_ELIMIT;
    q = mt_realloc(*p, (size_t)c * el);
    if (!q)
        return MT_ENOMEM;
    *p = q;
    *cap = (uint32_t)c;
    return MT_OK;
}

static uint32_t hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* ==== Lifecycle ==== */

uint64_t mtx_bm25_builder_bytes(const struct mt_bm25_builder *b)
{
    return (uint64_t)b->tcap * sizeof *b->terms +
           (uint64_t)b->nslots * sizeof *b->slots + b->ccap +
           (uint64_t)b->curcap * sizeof *b->cur +
           (uint64_t)b->lcap * sizeof *b->lens + b->post_bytes;
}

void mtx_bm25_builder_free(struct mt_bm25_builder *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->nterms; i++)
        mt_free(b->terms[i].post);
    mt_free(b->terms);
    mt_free(b->slots);
    mt_free(b->chars);
    mt_free(b->cur);
    mt_free(b->lens);
    mt_free(b);
}

static int weight_ok(float w)
{
    return w >= 0.001f && w <= 1000.0f;
}

enum mt_status mtx_bm25_builder_new(const struct mt_bm25_params *params,
                                    struct mt_bm25_builder **out,
                                    struct mt_error *err)
{
    struct mt_bm25_builder *b;
    struct mt_bm25_params p = params ? *params : mtx_bm25_default_params();

    if (!weight_ok(p.field_weight[0]) || !weight_ok(p.field_weight[1]))
        return mt_fail(err, MT_EINVAL,
                       "bm25: field weights must be in [0.001, 1000]");
    b = mt_calloc(1, sizeof *b);
    if (!b)
        return mt_fail(err, MT_ENOMEM, "bm25: out of memory");
    b->p = p;
    b->cur_doc = -1;
    b->floor_doc = -1;
    b->nslots = 1024;
    b->slots = mt_calloc(b->nslots, sizeof *b->slots);
    if (!b->slots) {
        mtx_bm25_builder_free(b);
        return mt_fail(err, MT_ENOMEM, "bm25: out of memory");
    }
    *out = b;
    return MT_OK;
}

/* ==== Term interning ==== */

static enum mt_status rehash(struct mt_bm25_builder *b)
{
    uint32_t n = b->nslots * 2;
    uint32_t *s = mt_calloc(n, sizeof *s);

    if (!s)
        return MT_ENOMEM;
    for (uint32_t i = 0; i < b->nterms; i++) {
        uint32_t j = b->terms[i].hash & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = i + 1;
    }
    mt_free(b->slots);
    b->slots = s;
    b->nslots = n;
    return MT_OK;
}

static enum mt_status new_term(struct mt_bm25_builder *b, struct mt_str t,
                               uint32_t h, uint32_t slot, uint32_t *id)
{
    struct bterm *e;
    enum mt_status st;

    if (b->nterms >= UINT32_MAX - 1 || b->clen + t.n > UINT32_MAX)
        return MT_ELIMIT;
    st = grow((void **)&b->terms, &b->tcap, (uint64_t)b->nterms + 1,
              sizeof *b->terms);
    if (st == MT_OK)
        st = grow((void **)&b->chars, &b->ccap, b->clen + t.n, 1);
    if (st != MT_OK)
        return st;
    memcpy(b->chars + b->clen, t.p, t.n);
    e = &b->terms[b->nterms];
    memset(e, 0, sizeof *e);
    e->str_off = (uint32_t)b->clen;
    e->str_len = (uint32_t)t.n;
    e->hash = h;
    b->clen += t.n;
    b->slots[slot] = ++b->nterms;
    *id = b->nterms - 1;
    return MT_OK;
}

static enum mt_status intern(struct mt_bm25_builder *b, struct mt_str t,
                             uint32_t *id)
{
    uint32_t h = hash_str(t.p, t.n);
    uint32_t j = h & (b->nslots - 1);

    for (; b->slots[j]; j = (j + 1) & (b->nslots - 1)) {
        const struct bterm *e = &b->terms[b->slots[j] - 1];
        if (e->hash == h && e->str_len == t.n &&
            memcmp(b->chars + e->str_off, t.p, t.n) == 0) {
            *id = b->slots[j] - 1;
            return MT_OK;
        }
    }
    if ((uint64_t)(b->nterms + 1) * 2 > b->nslots) {
        enum mt_status st = rehash(b);
        if (st != MT_OK)
            return st;
        return intern(b, t, id); /* slot moved; recurses once */
    }
    return new_term(b, t, h, j, id);
}

/* ==== Adding documents ==== */

/* Appends the current document's postings to its terms' arrays. */
static enum mt_status flush_doc(struct mt_bm25_builder *b)
{
    uint32_t doc = (uint32_t)b->cur_doc;

    for (uint32_t i = 0; i < b->ncur; i++) {
        struct bterm *t = &b->terms[b->cur[i]];
        uint32_t gap = t->df ? doc - t->last - 1 : doc;
        size_t cap = t->pcap;
        enum mt_status st = mtx_bm25_put_posting(&t->post, &t->plen, &t->pcap,
                                                 gap, t->tf[0], t->tf[1]);
        if (st != MT_OK)
            return st;
        b->post_bytes += t->pcap - cap;
        t->df++;
        t->last = doc;
        b->npostings++;
    }
    b->ncur = 0;
    return MT_OK;
}

static enum mt_status start_doc(struct mt_bm25_builder *b, uint32_t doc)
{
    enum mt_status st = MT_OK;

    if (b->cur_doc >= 0)
        st = flush_doc(b);
    if (st == MT_OK)
        st = grow((void **)&b->lens, &b->lcap, (uint64_t)doc + 1,
                  sizeof *b->lens);
    if (st != MT_OK)
        return st;
    memset(b->lens + b->ndocs, 0,
           ((size_t)doc + 1 - b->ndocs) * sizeof *b->lens);
    b->ndocs = doc + 1;
    b->cur_doc = doc;
    return MT_OK;
}

static enum mt_status add_term(struct mt_bm25_builder *b, uint32_t doc,
                               uint32_t field, struct mt_str t)
{
    struct bterm *e;
    uint32_t id;
    enum mt_status st = intern(b, t, &id);

    if (st != MT_OK)
        return st;
    e = &b->terms[id];
    if (e->stamp != doc + 1) {
        st = grow((void **)&b->cur, &b->curcap, (uint64_t)b->ncur + 1,
                  sizeof *b->cur);
        if (st != MT_OK)
            return st;
        e->stamp = doc + 1;
        e->tf[0] = 0;
        e->tf[1] = 0;
        b->cur[b->ncur++] = id;
    }
    if (e->tf[field] < TF_MAX)
        e->tf[field]++;
    if (b->lens[doc].n[field] < UINT32_MAX)
        b->lens[doc].n[field]++;
    return MT_OK;
}

enum mt_status mtx_bm25_builder_add(struct mt_bm25_builder *b, uint32_t doc,
                                    uint32_t field, const struct mt_str *terms,
                                    size_t nterms, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (field >= MT_BM25_FIELDS || doc >= BM25_END - 1)
        return mt_fail(err, MT_EINVAL, "bm25: bad field %u or doc %u", field,
                       doc);
    if ((int64_t)doc < b->cur_doc || (int64_t)doc <= b->floor_doc)
        return mt_fail(err, MT_EINVAL,
                       "bm25: doc %u added after a later or written doc", doc);
    if ((int64_t)doc != b->cur_doc)
        st = start_doc(b, doc);
    for (size_t i = 0; st == MT_OK && i < nterms; i++)
        if (terms[i].n > 0 && terms[i].n <= MAX_TERM_LEN)
            st = add_term(b, doc, field, terms[i]);
    if (st != MT_OK)
        return mt_fail(err, st, "bm25: adding doc %u: %s", doc,
                       mt_status_str(st));
    return MT_OK;
}

enum mt_status mtx_bm25_builder_set_ndocs(struct mt_bm25_builder *b,
                                          uint32_t ndocs, struct mt_error *err)
{
    enum mt_status st;

    if (ndocs <= b->ndocs)
        return MT_OK;
    if (ndocs >= BM25_END)
        return mt_fail(err, MT_EINVAL, "bm25: too many documents");
    st = grow((void **)&b->lens, &b->lcap, ndocs, sizeof *b->lens);
    if (st != MT_OK)
        return mt_fail(err, st, "bm25: %s", mt_status_str(st));
    memset(b->lens + b->ndocs, 0, ((size_t)ndocs - b->ndocs) * sizeof *b->lens);
    b->ndocs = ndocs;
    return MT_OK;
}

/* ==== Writing ==== */

struct sorted_term {
    const char *p;
    uint32_t n;
    uint32_t id;
};

static int cmp_sorted(const void *a, const void *b)
{
    const struct sorted_term *x = a;
    const struct sorted_term *y = b;
    uint32_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);

    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* Everything the segment needs, computed in memory before writing. */
struct plan {
    float *dl;     /* the lengths search will see (decoded norms) */
    uint8_t *norm; /* format 2 */
    struct sorted_term *order;
    struct bm25_term *ents;
    struct bm25_blk *blks;
    struct bm25_meta meta;
};

static void plan_free(struct plan *pl)
{
    mt_free(pl->dl);
    mt_free(pl->norm);
    mt_free(pl->order);
    mt_free(pl->ents);
    mt_free(pl->blks);
}

/* Fills the lengths (and with byte norms, the norms and the lengths they
 * decode to, which the bounds are taken from); returns the average of
 * the exact lengths, as Lucene's BM25 takes avgdl from the exact token
 * count, not from the norms. */
static double fill_dl(const struct mt_bm25_builder *b, float *dl, uint8_t *norm)
{
    double sum = 0.0;

    for (uint32_t d = 0; d < b->ndocs; d++) {
        dl[d] = bm25_weigh(b->p.field_weight, b->lens[d].n[0], b->lens[d].n[1]);
        sum += (double)dl[d];
        if (norm) {
            norm[d] = bm25_norm_encode(dl[d]);
            dl[d] = bm25_norm_decode(norm[d]);
        }
    }
    return b->ndocs ? sum / b->ndocs : 0.0;
}

/* Splits one term's postings into blocks and records their bounds. */
static void plan_blocks(const struct mt_bm25_builder *b, const float *dl,
                        const struct bterm *t, struct bm25_term *e,
                        struct bm25_blk *blk)
{
    uint32_t docs[MT_BM25_BLOCK];
    float wtf[MT_BM25_BLOCK];
    const uint8_t *p = t->post;
    const uint8_t *end = t->post + t->plen;
    int64_t prev = -1;

    e->max_wtf = 0.0f;
    e->min_dl = INFINITY;
    for (uint32_t left = t->df, j = 0; left; j++) {
        uint32_t n = left < MT_BM25_BLOCK ? left : MT_BM25_BLOCK;
        blk[j].off = (uint32_t)(p - t->post);
        n = mtx_bm25_decode(&p, end, prev, b->ndocs - 1, n, b->p.field_weight,
                            docs, wtf);
        if (n == 0)
            break; /* cannot happen: the builder wrote these bytes */
        blk[j].max_wtf = 0.0f;
        blk[j].min_dl = INFINITY;
        for (uint32_t i = 0; i < n; i++) {
            blk[j].max_wtf = fmaxf(blk[j].max_wtf, wtf[i]);
            blk[j].min_dl = fminf(blk[j].min_dl, dl[docs[i]]);
        }
        blk[j].last = docs[n - 1];
        e->max_wtf = fmaxf(e->max_wtf, blk[j].max_wtf);
        e->min_dl = fminf(e->min_dl, blk[j].min_dl);
        prev = blk[j].last;
        left -= n;
    }
}

static enum mt_status plan_alloc(const struct mt_bm25_builder *b,
                                 struct plan *pl)
{
    uint64_t nblk = 0;

    for (uint32_t i = 0; i < b->nterms; i++)
        nblk += (b->terms[i].df + MT_BM25_BLOCK - 1) / MT_BM25_BLOCK;
    pl->dl = mt_malloc((size_t)b->ndocs * sizeof *pl->dl + 1);
    if (!b->p.float_norms)
        pl->norm = mt_malloc((size_t)b->ndocs + 1);
    pl->order = mt_malloc((size_t)b->nterms * sizeof *pl->order);
    pl->ents = mt_calloc(b->nterms, sizeof *pl->ents);
    pl->blks = mt_calloc((size_t)nblk, sizeof *pl->blks);
    if (!pl->dl || (!b->p.float_norms && !pl->norm) || !pl->order ||
        !pl->ents || !pl->blks)
        return MT_ENOMEM;
    pl->meta.nblocks = nblk;
    return MT_OK;
}

static enum mt_status make_plan(const struct mt_bm25_builder *b,
                                struct plan *pl)
{
    uint64_t post_off = 0;
    uint32_t str_off = 0;
    uint32_t blk = 0;
    enum mt_status st = plan_alloc(b, pl);

    if (st != MT_OK)
        return st;
    pl->meta.avgdl = fill_dl(b, pl->dl, pl->norm);
    for (uint32_t i = 0; i < b->nterms; i++) {
        pl->order[i].p = b->chars + b->terms[i].str_off;
        pl->order[i].n = b->terms[i].str_len;
        pl->order[i].id = i;
    }
    qsort(pl->order, b->nterms, sizeof *pl->order, cmp_sorted);
    for (uint32_t i = 0; i < b->nterms; i++) {
        const struct bterm *t = &b->terms[pl->order[i].id];
        struct bm25_term *e = &pl->ents[i];
        if (t->plen > UINT32_MAX)
            return MT_ELIMIT;
        e->str_off = str_off;
        e->str_len = t->str_len;
        e->df = t->df;
        e->blk = blk;
        e->post_off = post_off;
        plan_blocks(b, pl->dl, t, e, pl->blks + blk);
        str_off += t->str_len;
        post_off += t->plen;
        blk += (t->df + MT_BM25_BLOCK - 1) / MT_BM25_BLOCK;
    }
    pl->meta.ndocs = b->ndocs;
    pl->meta.nterms = b->nterms;
    pl->meta.npostings = b->npostings;
    pl->meta.weight[0] = b->p.field_weight[0];
    pl->meta.weight[1] = b->p.field_weight[1];
    pl->meta.block = MT_BM25_BLOCK;
    return MT_OK;
}

static enum mt_status write_sec(struct mt_seg_writer *w, uint32_t id,
                                const void *p, size_t n, struct mt_error *err)
{
    enum mt_status st = mtx_seg_writer_begin(w, id, err);

    return st == MT_OK ? mtx_seg_writer_write(w, p, n, err) : st;
}

static enum mt_status write_plan(const struct mt_bm25_builder *b,
                                 const struct plan *pl, struct mt_seg_writer *w,
                                 struct mt_error *err)
{
    const struct bm25_meta *m = &pl->meta;
    enum mt_status st = write_sec(w, BM25_SEC_META, m, sizeof *m, err);

    if (st == MT_OK && pl->norm)
        st = write_sec(w, BM25_SEC_NORM, pl->norm, m->ndocs, err);
    else if (st == MT_OK)
        st = write_sec(w, BM25_SEC_DLEN, pl->dl, m->ndocs * sizeof(float), err);
    if (st == MT_OK)
        st = mtx_seg_writer_begin(w, BM25_SEC_TSTR, err);
    for (uint32_t i = 0; st == MT_OK && i < m->nterms; i++)
        st = mtx_seg_writer_write(w, pl->order[i].p, pl->order[i].n, err);
    if (st == MT_OK)
        st = write_sec(w, BM25_SEC_TERM, pl->ents, m->nterms * sizeof *pl->ents,
                       err);
    if (st == MT_OK)
        st = write_sec(w, BM25_SEC_BLKS, pl->blks,
                       (size_t)m->nblocks * sizeof *pl->blks, err);
    if (st == MT_OK)
        st = mtx_seg_writer_begin(w, BM25_SEC_POST, err);
    for (uint32_t i = 0; st == MT_OK && i < m->nterms; i++) {
        const struct bterm *t = &b->terms[pl->order[i].id];
        st = mtx_seg_writer_write(w, t->post, t->plen, err);
    }
    return st;
}

enum mt_status mtx_bm25_builder_write(struct mt_bm25_builder *b,
                                      const char *path, struct mt_error *err)
{
    struct plan pl;
    struct mt_seg_writer *w = NULL;
    enum mt_status st = MT_OK;

    memset(&pl, 0, sizeof pl);
    if (b->cur_doc >= 0) {
        st = flush_doc(b);
        if (st != MT_OK)
            return mt_fail(err, st, "%s: %s", path, mt_status_str(st));
        b->floor_doc = b->cur_doc;
        b->cur_doc = -1;
    }
    st = make_plan(b, &pl);
    if (st != MT_OK) {
        plan_free(&pl);
        return mt_fail(err, st, "%s: %s", path, mt_status_str(st));
    }
    st = mtx_seg_writer_open(
        path, BM25_MAGIC, pl.norm ? BM25_VERSION : BM25_VERSION_FLOAT, &w, err);
    if (st == MT_OK)
        st = write_plan(b, &pl, w, err);
    if (st == MT_OK) {
        st = mtx_seg_writer_commit(w, err);
        w = NULL;
    }
    mtx_seg_writer_abort(w);
    plan_free(&pl);
    return st;
}
