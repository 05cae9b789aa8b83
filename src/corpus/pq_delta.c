/* Parquet's delta and split encodings (parquet-format's Encodings.md):
 * DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY strings, BYTE_STREAM_SPLIT numbers. arrow-rs writes the
 * delta ones for data page v2 when a column has no dictionary (or its
 * dictionary grew too large). Every count and width is checked against
 * the bytes that hold it. */
#include <string.h>

#include "corpus/parquet.h"
#include "medtrust/core.h"

#define BLOCK_MAX ((uint64_t)1 << 20) /* values in a block */

int mtx_pq_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    unsigned sh = 0;

    while (*p < end && sh < 64) {
        uint8_t b = *(*p)++;

        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
        sh += 7;
    }
    return -1;
}

static int zigzag(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t u = 0;

    if (mtx_pq_uvarint(p, end, &u) != 0)
        return -1;
    *v = (u >> 1) ^ (0 - (u & 1)); /* two's complement, kept unsigned */
    return 0;
}

/* bw (1..32) bits at bit offset 'bit' of p, least significant first. */
static uint64_t bits32(const uint8_t *p, uint64_t bit, unsigned bw)
{
    uint64_t x = 0;
    size_t at = (size_t)(bit >> 3);
    unsigned sh = (unsigned)(bit & 7), need = (sh + bw + 7) / 8, i;

    for (i = 0; i < need; i++)
        x |= (uint64_t)p[at + i] << (8 * i);
    return (x >> sh) & ((1ULL << bw) - 1);
}

static uint64_t bits64(const uint8_t *p, uint64_t bit, unsigned bw)
{
    if (bw == 0)
        return 0;
    if (bw <= 32)
        return bits32(p, bit, bw);
    return bits32(p, bit, 32) | bits32(p, bit + 32, bw - 32) << 32;
}

struct dbp {
    uint64_t block;   /* values a block */
    uint64_t mini;    /* miniblocks a block */
    uint64_t total;   /* values encoded */
    uint64_t v;       /* the last value */
    int bits32;       /* INT32: values wrap at 32 bits */
    const uint8_t *p; /* where the next block starts */
    const uint8_t *end;
};

static int dbp_header(struct dbp *d, size_t k)
{
    if (mtx_pq_uvarint(&d->p, d->end, &d->block) != 0 ||
        mtx_pq_uvarint(&d->p, d->end, &d->mini) != 0 ||
        mtx_pq_uvarint(&d->p, d->end, &d->total) != 0 ||
        zigzag(&d->p, d->end, &d->v) != 0)
        return -1;
    if (d->block == 0 || d->block > BLOCK_MAX || d->block % 128 ||
        d->mini == 0 || d->block % d->mini || (d->block / d->mini) % 32)
        return -1;
    return d->total == k ? 0 : -1; /* exactly the page's values */
}

/* One block's values (the deltas of up to d->block values) into out from
 * out[*got]. */
static int dbp_block(struct dbp *d, int64_t *out, size_t *got)
{
    uint64_t min = 0, per = d->block / d->mini, m, j;
    const uint8_t *w;

    if (zigzag(&d->p, d->end, &min) != 0 || d->mini > (uint64_t)(d->end - d->p))
        return -1;
    w = d->p;
    d->p += d->mini;
    for (m = 0; m < d->mini && *got < d->total; m++) {
        unsigned bw = w[m];
        uint64_t bytes = per * bw / 8;

        if (bw > 64 || bytes > (uint64_t)(d->end - d->p))
            return -1;
        for (j = 0; j < per && *got < d->total; j++) {
            d->v += min + bits64(d->p, j * bw, bw); /* wraps, as specified */
            if (d->bits32)
                d->v = (uint64_t)(int64_t)(int32_t)(uint32_t)d->v;
            out[(*got)++] = (int64_t)d->v;
        }
        d->p += bytes;
    }
    return 0;
}

int mtx_pq_delta_ints(const uint8_t *p, size_t n, int bits32, int64_t *out,
                      size_t k, size_t *used)
{
    struct dbp d = {0, 0, 0, 0, bits32, p, p + n};
    size_t got = 0;

    if (dbp_header(&d, k) != 0)
        return -1;
    if (k) {
        if (bits32)
            d.v = (uint64_t)(int64_t)(int32_t)(uint32_t)d.v;
        out[got++] = (int64_t)d.v;
    }
    while (got < k)
        if (dbp_block(&d, out, &got) != 0)
            return -1;
    *used = (size_t)(d.p - p);
    return 0;
}

/* k lengths (DELTA_BINARY_PACKED) then their bytes, appended to heap as
 * out[i] (pre: a prefix of the previous value, DELTA_BYTE_ARRAY). */
static enum mt_status strings(const uint8_t *p, size_t n, const int64_t *pre,
                              int64_t *len, struct mtx_pq_val *out, size_t k,
                              struct mt_buf *heap)
{
    size_t used = 0, i;
    const uint8_t *end = p + n;

    if (mtx_pq_delta_ints(p, n, 1, len, k, &used) != 0)
        return MT_EPARSE;
    for (p += used, i = 0; i < k; i++) {
        uint64_t keep = pre ? (uint64_t)pre[i] : 0, at = heap->len;
        enum mt_status st;

        if (len[i] < 0 || (uint64_t)len[i] > (uint64_t)(end - p))
            return MT_EPARSE;
        if (pre && (pre[i] < 0 || keep > (i ? out[i - 1].len : 0)))
            return MT_EPARSE; /* a prefix longer than the value before */
        st = mtx_buf_reserve(heap, heap->len + keep + (size_t)len[i] + 1);
        if (st != MT_OK)
            return st;
        if (keep) /* from the previous value, inside heap: reserved first */
            memcpy(heap->data + at, heap->data + out[i - 1].u.off, keep);
        memcpy(heap->data + at + keep, p, (size_t)len[i]);
        heap->len += keep + (size_t)len[i];
        heap->data[heap->len] = '\0';
        if (keep + (uint64_t)len[i] > UINT32_MAX)
            return MT_ELIMIT;
        out[i] = (struct mtx_pq_val){
            {.off = at}, (uint32_t)(keep + (uint64_t)len[i]), 0};
        p += len[i];
    }
    return MT_OK;
}

enum mt_status mtx_pq_delta_strings(const uint8_t *p, size_t n, int prefixed,
                                    struct mtx_pq_val *out, size_t k,
                                    struct mt_buf *heap)
{
    int64_t *a = mt_malloc((k ? k : 1) * sizeof *a);
    int64_t *b = prefixed ? mt_malloc((k ? k : 1) * sizeof *b) : NULL;
    size_t used = 0;
    enum mt_status st = MT_OK;

    if (!a || (prefixed && !b))
        st = MT_ENOMEM;
    else if (prefixed && mtx_pq_delta_ints(p, n, 1, b, k, &used) != 0)
        st = MT_EPARSE;
    if (st == MT_OK)
        st = strings(p + used, n - used, b, a, out, k, heap);
    mt_free(a);
    mt_free(b);
    return st;
}

int mtx_pq_split(const uint8_t *p, size_t n, int type, struct mtx_pq_val *out,
                 size_t k)
{
    size_t w = type == MTX_PQ_INT32 || type == MTX_PQ_FLOAT ? 4 : 8, i, j;

    if (type != MTX_PQ_INT32 && type != MTX_PQ_INT64 && type != MTX_PQ_FLOAT &&
        type != MTX_PQ_DOUBLE)
        return -1;
    if (k > n / w)
        return -1;
    for (i = 0; i < k; i++) {
        uint64_t u64 = 0;
        uint32_t u32;
        float f;

        for (j = 0; j < w; j++) /* byte j of value i: in stream j */
            u64 |= (uint64_t)p[j * k + i] << (8 * j);
        u32 = (uint32_t)u64;
        memset(&out[i], 0, sizeof out[i]);
        if (type == MTX_PQ_INT32)
            out[i].u.i = (int32_t)u32;
        else if (type == MTX_PQ_INT64)
            out[i].u.i = (int64_t)u64;
        else if (type == MTX_PQ_FLOAT) {
            memcpy(&f, &u32, 4);
            out[i].u.d = (double)f;
        } else {
            memcpy(&out[i].u.d, &u64, 8);
        }
    }
    return 0;
}
