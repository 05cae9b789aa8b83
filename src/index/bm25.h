/* BM25 inverted index: a builder that writes one immutable segment file,
 * and an mmapped reader with exact top-k search (block-max MaxScore). */
#ifndef MT_INDEX_BM25_H
#define MT_INDEX_BM25_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scoring (BM25F-style, one k1 and b for all fields):
 *
 *   wtf(t,d) = sum_f w_f * tf_f(t,d)    weighted term frequency, as float
 *   dl(d)    = sum_f w_f * len_f(d)     weighted length in tokens, as float
 *   avgdl    = mean of dl over all N documents (empty ones included)
 *   idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))   (Lucene; never < 0)
 *   s(t,d)   = qtf * idf * wtf * (k1 + 1) / (wtf + k1 * (1 - b + b*dl/avgdl))
 *   score(d) = sum of s(t,d) over the distinct known query terms in d
 *
 * N, avgdl and df are the segment's own unless the search is given the
 * collection's (struct mt_bm25_coll); the bounds are then computed with
 * those too, so pruning stays exact.
 *
 * df counts documents holding t in any field. A term repeated in the query
 * counts once per occurrence through qtf; unknown terms add nothing. All
 * arithmetic is in double; the terms of a document's sum are added in one
 * fixed order (ascending term upper bound, then first position in the
 * query) by both the pruned and the exhaustive search, so their scores are
 * bit-identical. Hits rank by score descending, then doc ascending. */

enum { MT_BM25_FIELD_TITLE = 0, MT_BM25_FIELD_TEXT = 1, MT_BM25_FIELDS = 2 };

/* Default field weights: a title token counts twice a body token, a common
 * BM25F choice for short, descriptive titles. Tune per corpus. */
#define MT_BM25_DEFAULT_TITLE_WEIGHT 2.0f
#define MT_BM25_DEFAULT_TEXT_WEIGHT 1.0f
/* Anserini's BEIR "flat" defaults. */
#define MT_BM25_DEFAULT_K1 0.9f
#define MT_BM25_DEFAULT_B 0.4f
/* Postings per compressed block; each block records its last doc and the
 * bounds its score is computed from. */
#define MT_BM25_BLOCK 128u
/* Most distinct known terms one query may use (MT_ELIMIT past it). */
#define MT_BM25_MAX_QTERMS 4096u

/* Build parameters, stored in the segment. */
struct mt_bm25_params {
    float field_weight[MT_BM25_FIELDS]; /* each in [0.001, 1000] */
    /* 1 (default): each document's weighted length is kept as a float
     * (format 1); 0: in one byte (Lucene's SmallFloat, format 2; see
     * BENCHMARKS.md for the quality and latency of each). */
    int float_norms;
};

/* Returns title 2.0, text 1.0. */
struct mt_bm25_params mtx_bm25_default_params(void);

/* ==== Builder ==== */
struct mt_bm25_builder;

/* Creates an empty builder; 'params' (NULL for defaults) is copied.
 * MT_EINVAL for weights out of range. Free with mtx_bm25_builder_free(). */
enum mt_status mtx_bm25_builder_new(const struct mt_bm25_params *params,
                                    struct mt_bm25_builder **out,
                                    struct mt_error *err);

/* Adds the analysed tokens of one field of document 'doc'. Documents come
 * in non-decreasing order (fields of one doc in any order, repeatable);
 * numbers skipped are empty documents, and N is the last doc + 1. Terms
 * are copied; empty terms and terms over 255 bytes are ignored. After a
 * failure the builder may only be freed. Not thread-safe. */
enum mt_status mtx_bm25_builder_add(struct mt_bm25_builder *b, uint32_t doc,
                                    uint32_t field, const struct mt_str *terms,
                                    size_t nterms, struct mt_error *err);

/* Makes N at least 'ndocs' (trailing empty documents). */
enum mt_status mtx_bm25_builder_set_ndocs(struct mt_bm25_builder *b,
                                          uint32_t ndocs, struct mt_error *err);

/* Writes the index as one segment file, atomically (path.tmp, fsync,
 * rename, fsync of the directory). The builder stays usable for more
 * documents and further writes. */
enum mt_status mtx_bm25_builder_write(struct mt_bm25_builder *b,
                                      const char *path, struct mt_error *err);

/* Bytes the builder holds now (its arrays at their allocated sizes: term
 * table, hash slots, term text, per-document lengths, postings), what an
 * index build weighs against its segment memory limit. */
uint64_t mtx_bm25_builder_bytes(const struct mt_bm25_builder *b);

/* Frees the builder. NULL is allowed. */
void mtx_bm25_builder_free(struct mt_bm25_builder *b);

/* ==== Reader ==== */
struct mt_bm25;

/* Maps the segment at 'path' and validates it: the checksums of every
 * section but the postings (mtx_bm25_check() reads those) and the
 * structure (term order, block tables, bounds). A truncated or damaged
 * file is MT_EPARSE with a message naming the file and section. On success *out
 * owns the index (mtx_bm25_close()); on failure it is left unchanged. An open
 * index is read-only: any number of threads may search it at once. */
enum mt_status mtx_bm25_open(const char *path, struct mt_bm25 **out,
                             struct mt_error *err);

/* As mtx_bm25_open() over n bytes the caller keeps valid until close. */
enum mt_status mtx_bm25_open_mem(const void *data, size_t n, const char *name,
                                 struct mt_bm25 **out, struct mt_error *err);

/* Unmaps and frees. NULL is allowed. */
void mtx_bm25_close(struct mt_bm25 *idx);

/* Checks the CRC of every section, the postings' too, reading the whole
 * file; step (NULL: none) is told the bytes checked as it goes, up to
 * mtx_bm25_check_bytes() in all. MT_EPARSE naming the damaged section.
 * Thread-safe. */
enum mt_status mtx_bm25_check(const struct mt_bm25 *idx,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err);
uint64_t mtx_bm25_check_bytes(const struct mt_bm25 *idx);

struct mtx_bm25_stats {
    uint32_t docs;     /* N */
    uint32_t terms;    /* distinct terms */
    uint64_t postings; /* (term, doc) pairs */
    uint64_t bytes;    /* segment file size */
    double avgdl;      /* mean weighted document length */
    float field_weight[MT_BM25_FIELDS];
};

/* Fills *st. Thread-safe. */
void mtx_bm25_stats(const struct mt_bm25 *idx, struct mtx_bm25_stats *st);

/* Documents of this segment holding term t (0 when it has none), for
 * summing df over segments. Thread-safe. */
uint32_t mtx_bm25_term_df(const struct mt_bm25 *idx, struct mt_str t);

/* ==== Search ==== */

/* Per-thread scratch memory for searches, reused across calls so a query
 * allocates nothing once it has warmed up. One context serves one search
 * at a time; give each thread its own. */
struct mt_bm25_ctx;

/* Creates / frees a context. Free accepts NULL. */
enum mt_status mtx_bm25_ctx_new(struct mt_bm25_ctx **out);
void mtx_bm25_ctx_free(struct mt_bm25_ctx *ctx);

struct mt_bm25_hit {
    uint32_t doc;
    float score;
};

/* Collection-wide statistics for searching one segment of several. BM25's
 * N, avgdl and df describe the whole collection; taken from one segment
 * they make a document's score depend on which segment holds it, and the
 * merged top k differs from the one-segment ranking. The caller sums them
 * over every segment as Lucene's IndexSearcher does (collectionStatistics:
 * docCount and sumTotalTermFreq over all leaves; termStatistics: docFreq
 * summed per term), so every segment scores on one scale. */
struct mt_bm25_coll {
    uint64_t ndocs;     /* N: documents in all segments */
    double avgdl;       /* sum of every document's dl over N */
    const uint64_t *df; /* df[j]: documents holding qterms[j] in any
                         * segment (one entry per query term, as given) */
};

struct mt_bm25_search_params {
    float k1; /* >= 0, default 0.9 */
    float b;  /* in [0, 1], default 0.4 */
    /* Optional collection statistics (NULL: this segment's own). A df or
     * N below this segment's own is raised to it, so idf stays >= 0. */
    const struct mt_bm25_coll *coll;
    /* Optional filter: a doc is a candidate only when accept returns
     * nonzero. Called from the searching thread, at most once per doc. */
    int (*accept)(uint32_t doc, void *user);
    void *accept_user;
    /* Optional scratch; NULL allocates a temporary one per call. */
    struct mt_bm25_ctx *ctx;
    /* Optional score floor (0: none): a score some k documents elsewhere
     * are known to reach, e.g. the k-th best of the segments searched
     * before this one. Documents scoring below it are skipped from the
     * start, as if the top-k heap already held it; every document scoring
     * at least 'floor' that belongs to this segment's top k is still
     * returned in place, so the top k of this segment's hits merged with
     * those k others is unchanged. Hits below the floor may be returned
     * or not. */
    double floor;
};

/* Returns k1 0.9, b 0.4, the segment's own statistics, no filter, no
 * context, no floor. */
struct mt_bm25_search_params mtx_bm25_default_search_params(void);

/* Finds the k best documents for the query terms (already analysed like
 * the indexed text). hits[] must hold k entries; *nhits gets the number
 * written (less than k when fewer documents match), best first, ties by
 * ascending doc. No terms, only unknown terms or k = 0 give 0 hits and
 * MT_OK. sp may be NULL for defaults. MT_EINVAL for bad k1/b, MT_ELIMIT
 * for more than MT_BM25_MAX_QTERMS distinct known terms, MT_ENOMEM.
 * Thread-safe on one index given distinct contexts. */
enum mt_status mtx_bm25_search(const struct mt_bm25 *idx,
                               const struct mt_str *qterms, size_t nq,
                               const struct mt_bm25_search_params *sp,
                               struct mt_bm25_hit *hits, size_t k,
                               size_t *nhits, struct mt_error *err);

/* As mtx_bm25_search() but scores every posting of every query term, with
 * no pruning: the reference for tests and benchmarks. Same results. */
enum mt_status mtx_bm25_search_exhaustive(
    const struct mt_bm25 *idx, const struct mt_str *qterms, size_t nq,
    const struct mt_bm25_search_params *sp, struct mt_bm25_hit *hits, size_t k,
    size_t *nhits, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
