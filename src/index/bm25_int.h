/* BM25 internals shared by the builder, reader and search: the on-disk
 * layout, the open index and the postings codec. Not a public header. */
#ifndef MT_INDEX_BM25_INT_H
#define MT_INDEX_BM25_INT_H

#include <math.h>
#include <stdint.h>

#include "index/bm25.h"
#include "index/segment.h"

/* Segment magic and format version (segment.h carries the container).
 * Sections, all little-endian, 16-byte aligned:
 *   META  struct bm25_meta
 *   NORM  uint8_t norm[ndocs]            weighted doc lengths, one byte
 *                                        each (format 2, bm25_norm_*)
 *   DLEN  float dl[ndocs]                the same as floats (format 1,
 *                                        instead of NORM)
 *   TSTR  term bytes, concatenated in sorted order
 *   TERM  struct bm25_term[nterms]       sorted by bytes (memcmp, then len)
 *   BLKS  struct bm25_blk[nblocks]       each term's blocks, in term order
 *   POST  postings: per term, ceil(df/128) blocks of up to 128 postings.
 * A posting is varint(gap) varint(code) [varint(tf_title)], where gap =
 * doc - prev - 1 (prev = -1 before a term's first doc, else the previous
 * doc; a block continues from the last doc of the block before), code =
 * tf_text << 1 | (tf_title > 0). Varints are LEB128 (7 bits a byte). */
#define BM25_MAGIC "MTBM25\0\0"
#define BM25_VERSION 2u       /* byte norms */
#define BM25_VERSION_FLOAT 1u /* float lengths; still read */
#define BM25_SEC_NORM MT_SEG_ID('N', 'O', 'R', 'M')
#define BM25_SEC_META MT_SEG_ID('M', 'E', 'T', 'A')
#define BM25_SEC_DLEN MT_SEG_ID('D', 'L', 'E', 'N')
#define BM25_SEC_TSTR MT_SEG_ID('T', 'S', 'T', 'R')
#define BM25_SEC_TERM MT_SEG_ID('T', 'E', 'R', 'M')
#define BM25_SEC_BLKS MT_SEG_ID('B', 'L', 'K', 'S')
#define BM25_SEC_POST MT_SEG_ID('P', 'O', 'S', 'T')
#define BM25_END UINT32_MAX /* cursor past its last doc */

struct bm25_meta {
    uint32_t ndocs;
    uint32_t nterms;
    uint64_t npostings;
    uint64_t nblocks;
    double avgdl;
    float weight[MT_BM25_FIELDS];
    uint32_t block; /* MT_BM25_BLOCK */
    uint32_t reserved;
};

struct bm25_term {
    uint32_t str_off; /* into TSTR */
    uint32_t str_len;
    uint32_t df;       /* postings = documents holding the term */
    uint32_t blk;      /* first block in BLKS */
    uint64_t post_off; /* into POST; the term ends where the next begins */
    float max_wtf;     /* over the term's postings */
    float min_dl;
};

struct bm25_blk {
    uint32_t last; /* last doc in the block */
    uint32_t off;  /* byte offset from the term's post_off */
    float max_wtf; /* a score bound: s grows with wtf, falls with dl */
    float min_dl;
};

struct mt_bm25 {
    struct mt_seg *seg;
    struct bm25_meta meta;
    const float *dl;     /* format 1, else NULL */
    const uint8_t *norm; /* format 2, else NULL */
    const char *tstr;
    size_t tstr_n;
    const struct bm25_term *terms;
    const struct bm25_blk *blks;
    const uint8_t *post;
    size_t post_n;
};

/* Weighted term frequency / length: the one definition used at build and
 * query time, so stored bounds hold exactly. */
static inline float bm25_weigh(const float w[MT_BM25_FIELDS], double title,
                               double text)
{
    return (float)((double)w[0] * title + (double)w[1] * text);
}

/* One-byte document lengths, as Lucene's SmallFloat.intToByte4 and
 * byte4ToInt (org.apache.lucene.util.SmallFloat, used by its BM25 norms):
 * 0..23 are exact; past that, 24 + a float with a 3-bit mantissa (the
 * leading 1 implicit) and a 5-bit exponent, rounding down, so a length
 * loses at most 1/8. Lucene counts tokens; here the weighted length
 * (title weight x title tokens + text tokens) is rounded to an integer
 * first. */
static inline uint8_t bm25_norm_encode(float dl)
{
    uint32_t i = dl >= 4.29e9f ? UINT32_MAX : (uint32_t)(dl + 0.5f);
    uint32_t bits;
    uint32_t shift;

    if (i < 24)
        return (uint8_t)i;
    i -= 24;
    bits = 32u - (uint32_t)__builtin_clz(i | 1u);
    if (bits < 4)
        return (uint8_t)(24 + i);
    shift = bits - 4;
    i = ((i >> shift) & 7u) | ((shift + 1) << 3);
    return (uint8_t)(i > 231u ? 255u : 24 + i);
}

static inline float bm25_norm_decode(uint8_t b)
{
    uint32_t v = (uint32_t)b - 24;
    int shift = (int)(v >> 3) - 1;

    if (b < 24)
        return (float)b;
    return (float)(24.0 + (shift < 0 ? (double)(v & 7u)
                                     : ldexp((double)((v & 7u) | 8u), shift)));
}

/* Appends one posting to a growable byte array; MT_ENOMEM on failure
 * (the array is unchanged). */
enum mt_status mtx_bm25_put_posting(uint8_t **buf, size_t *len, size_t *cap,
                                    uint32_t gap, uint32_t tf_title,
                                    uint32_t tf_text);

/* Decodes up to n postings from *pp (not past end) that follow doc 'prev'
 * (-1 at a term's start); every doc must be <= last. Stops early at
 * damage. Writes docs[] and weighted tfs wtf[], advances *pp and returns
 * the count decoded. */
uint32_t mtx_bm25_decode(const uint8_t **pp, const uint8_t *end, int64_t prev,
                         uint32_t last, uint32_t n,
                         const float w[MT_BM25_FIELDS], uint32_t *docs,
                         float *wtf);

/* Index of the term equal to t in the sorted dictionary, or -1. */
int64_t mtx_bm25_find_term(const struct mt_bm25 *idx, struct mt_str t);

/* Byte range [*start, *end) of the postings of term ti. */
void mtx_bm25_term_range(const struct mt_bm25 *idx, uint32_t ti,
                         const uint8_t **start, const uint8_t **end);

#endif
