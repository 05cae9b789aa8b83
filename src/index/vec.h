/* int8 vector set: Matryoshka truncation, per-vector int8 scalar
 * quantisation, exact flat search (int8 and float32), and the simple
 * checksummed, atomically written, mmapped file format HNSW shares. */
#ifndef MT_INDEX_VEC_H
#define MT_INDEX_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest dimension count a vector set accepts. */
#define MT_VEC_MAX_DIMS 65536u
/* Largest vector count (ids are uint32_t; UINT32_MAX means "none"). */
#define MT_VEC_MAX_COUNT 0x7fffffffu

/* One search result: the vector's id (its insertion order) and score. */
struct mt_vec_hit {
    uint32_t id;
    float score;
};

/* Optional filter: a vector is a candidate only when accept() returns
 * non-zero. Called from the searching thread, possibly concurrently. */
struct mt_vec_filter {
    int (*accept)(uint32_t id, void *user);
    void *user;
};

/* ==== Quantisation ==== */

/* Matryoshka truncation: writes the first 'new_dims' of the 'dims'-long
 * vector 'in' to 'out' (may equal 'in'), re-normalised to unit length.
 * Returns MT_EINVAL when new_dims is 0 or > dims, or when the kept part
 * has zero or non-finite norm (then 'out' is left as it was). */
enum mt_status mt_vec_truncate_normalize(const float *in, uint32_t dims,
                                         uint32_t new_dims, float *out);

/* Scales x to unit length in place; returns MT_EINVAL for a zero or
 * non-finite vector (left as it was). */
enum mt_status mt_vec_normalize(float *x, uint32_t dims);

/* Symmetric per-vector quantisation: scale = max|x| / 127 and
 * codes[i] = round(x[i] / scale), in [-127, 127]. Returns the scale (0 for
 * a zero vector, whose codes are all 0). x[i] ~= codes[i] * scale with an
 * error of at most scale / 2 per component. */
float mt_vec_quantize(const float *x, uint32_t dims, int8_t *codes);

/* ==== Vector sets ==== */

/* Per-vector scales (not per-dimension): vectors arrive one at a time into
 * append-only sets, and a per-dimension scale would need a training pass
 * over the corpus and would go stale as vectors are added. For unit
 * embeddings the per-vector scale keeps the relative error near 1/254 of
 * the largest component. */
struct mt_vecset_params {
    int keep_float;     /* also keep float32 copies (exact search, re-scoring);
                           default 0: int8 only, 4x less memory */
    int normalize;      /* scale added vectors and queries to unit length, so
                           scores approximate cosine; default 1 */
    int refine;         /* also keep a 4-bit residual of every int8 code
                           (dims/2 bytes a vector, half the codes' size)
                           and re-score search candidates with it. The
                           int8 codes alone cap recall@10 against exact
                           float near 0.976 on clustered 256-d data; with
                           the residual (12 bits a component) it is
                           0.998. Default 1 */
    uint32_t max_count; /* refuse adds past this (MT_ELIMIT); default
                           MT_VEC_MAX_COUNT */
};

struct mt_vecset;

/* Returns the defaults documented in struct mt_vecset_params. */
struct mt_vecset_params mt_vecset_default_params(void);

/* Creates an empty in-memory set of 'dims'-dimensional vectors; 'params'
 * (NULL for defaults) is copied. On success *out owns the set (free with
 * mt_vecset_free). MT_EINVAL for dims of 0 or > MT_VEC_MAX_DIMS. */
enum mt_status mt_vecset_new(uint32_t dims,
                             const struct mt_vecset_params *params,
                             struct mt_vecset **out);

/* Frees a set from mt_vecset_new or mt_vecset_open (unmapping its file).
 * NULL is allowed. */
void mt_vecset_free(struct mt_vecset *vs);

/* Appends a copy of the 'dims' floats at v (normalised first when the set
 * normalises) and stores its id, the insertion index, in *id (may be
 * NULL). MT_EINVAL for a zero/non-finite vector when normalising,
 * MT_EUNSUPPORTED on an opened (read-only) set, MT_ELIMIT past max_count,
 * MT_ENOMEM; on failure the set is unchanged. Not thread-safe. */
enum mt_status mt_vecset_add(struct mt_vecset *vs, const float *v,
                             uint32_t *id);

/* Counts and flags; thread-safe. */
uint32_t mt_vecset_count(const struct mt_vecset *vs);
uint32_t mt_vecset_dims(const struct mt_vecset *vs);
int mt_vecset_has_float(const struct mt_vecset *vs);

/* Writes the set to 'path' atomically (path.tmp, fsync, rename, fsync of
 * the directory). MT_EIO with the file name in 'err' (may be NULL). */
enum mt_status mt_vecset_write(const struct mt_vecset *vs, const char *path,
                               struct mt_error *err);

/* Maps the set written at 'path' read-only and verifies its checksum. On
 * success *out owns it (mt_vecset_free). A missing file is MT_EIO; a
 * truncated, corrupted or foreign file is MT_EPARSE naming the file. */
enum mt_status mt_vecset_open(const char *path, struct mt_vecset **out,
                              struct mt_error *err);

/* Exact search over the int8 codes: the query is quantised like the
 * vectors and score = dot_int32 * qscale * vscale; with refine, the best
 * max(4k, 64) of that scan are re-scored with mt_vecset_rescore and
 * ranked by it. Writes up to k hits,
 * best first, ties by ascending id, to 'hits' (room for k) and their
 * number to *n. 'filter' may be NULL. MT_EINVAL for a bad query when
 * normalising. Thread-safe for concurrent searches. */
enum mt_status mt_vecset_search_flat(const struct mt_vecset *vs,
                                     const float *query, uint32_t k,
                                     const struct mt_vec_filter *filter,
                                     struct mt_vec_hit *hits, uint32_t *n);

/* Exact float32 search (the ground truth for the int8 searches); needs a
 * set with keep_float, else MT_EUNSUPPORTED. Otherwise as above. */
enum mt_status mt_vecset_search_float(const struct mt_vecset *vs,
                                      const float *query, uint32_t k,
                                      const struct mt_vec_filter *filter,
                                      struct mt_vec_hit *hits, uint32_t *n);

/* ==== Internal: shared with hnsw.c ==== */

const int8_t *mt_vecset_code(const struct mt_vecset *vs, uint32_t id);
float mt_vecset_scale(const struct mt_vecset *vs, uint32_t id);
/* All codes (count * dims, row-major) and all scales (count), for inner
 * loops; valid until the set changes. */
const int8_t *mt_vecset_codes(const struct mt_vecset *vs);
const float *mt_vecset_scales(const struct mt_vecset *vs);
/* The 4-bit residual of vector id ((dims + 1) / 2 bytes), or NULL when
 * the set keeps none. */
const uint8_t *mt_vecset_refine(const struct mt_vecset *vs, uint32_t id);
/* Score of float query q (already prepared: normalised when the set
 * normalises) against vector id, as precisely as the set allows: its
 * float copy, else its code plus residual, else its dequantised code. */
float mt_vecset_rescore(const struct mt_vecset *vs, const float *q,
                        uint32_t id);
/* How many of the best int8 candidates a top-k search re-scores with
 * mt_vecset_rescore: max(4k, 64). The int8 order is close enough that
 * the true top k lie among them. */
uint32_t mt_vec_rescore_pool(uint32_t k);
/* NULL when the set keeps no floats. */
const float *mt_vecset_float(const struct mt_vecset *vs, uint32_t id);
int mt_vecset_normalizes(const struct mt_vecset *vs);
/* Copies (normalising when the set does) the query into qf and quantises
 * it into qcodes; returns the query scale through *qscale. */
enum mt_status mt_vecset_prepare_query(const struct mt_vecset *vs,
                                       const float *query, float *qf,
                                       int8_t *qcodes, float *qscale);

/* Top-k collector: a heap of at most k hits, worst on top, ordered by
 * score then ascending id, so results are deterministic. */
struct mt_vec_topk {
    struct mt_vec_hit *h; /* caller's array, room for k */
    uint32_t n;
    uint32_t k;
};
/* Offers one hit; returns 1 when kept. */
int mt_vec_topk_push(struct mt_vec_topk *t, uint32_t id, float score);
/* Sorts the kept hits best first; the heap is consumed. */
void mt_vec_topk_sort(struct mt_vec_topk *t);
/* Non-zero when a ranks before b (higher score, then lower id). */
static inline int mt_vec_hit_better(struct mt_vec_hit a, struct mt_vec_hit b)
{
    return a.score > b.score || (a.score == b.score && a.id < b.id);
}

/* 64-bit checksum over whole 32-byte blocks (4 lanes, xxh64-style rounds:
 * any change within one 8-byte word always changes the result). */
struct mt_vec_hash {
    uint64_t v[4];
    uint64_t len;
};
void mt_vec_hash_init(struct mt_vec_hash *h, uint64_t seed);
/* n must be a multiple of 32. */
void mt_vec_hash_update(struct mt_vec_hash *h, const void *p, size_t n);
uint64_t mt_vec_hash_final(const struct mt_vec_hash *h);

/* File header (little-endian, 128 bytes). The payload is a sequence of
 * sections, each padded with zeros to a multiple of 64 bytes. checksum =
 * hash(header with checksum 0, seed = hash(payload, seed 0)). */
#define MT_VEC_HDR_SIZE 128
struct mt_vec_hdr {
    char magic[8];
    uint32_t version;
    uint32_t dims;
    uint64_t count;
    uint64_t payload_len;
    uint64_t checksum;
    uint64_t aux[11]; /* format-specific fields */
};

/* Pads n to the section alignment (64). */
static inline size_t mt_vec_pad64(size_t n)
{
    return (n + 63u) & ~(size_t)63u;
}

/* Writes path.tmp section by section, then commits atomically. */
struct mt_vec_writer {
    int fd;
    char *tmp;
    const char *path;
    struct mt_vec_hash hash;
    uint64_t len;
};
enum mt_status mt_vec_writer_begin(struct mt_vec_writer *w, const char *path,
                                   struct mt_error *err);
/* Writes n bytes at p plus zero padding to a multiple of 64. */
enum mt_status mt_vec_writer_put(struct mt_vec_writer *w, const void *p,
                                 size_t n, struct mt_error *err);
/* Fills hdr->payload_len and checksum, writes the header, fsyncs, renames
 * over the path and fsyncs the directory. Always releases the writer. */
enum mt_status mt_vec_writer_commit(struct mt_vec_writer *w,
                                    struct mt_vec_hdr *hdr,
                                    struct mt_error *err);
/* Releases the writer and removes path.tmp. */
void mt_vec_writer_abort(struct mt_vec_writer *w);

/* A mapped, verified file; sections are taken in the order written. */
struct mt_vec_map {
    void *base;
    size_t size;
    const struct mt_vec_hdr *hdr;
    size_t off; /* next section, from the payload start */
};
/* Maps 'path' and checks magic, version, size and checksum (MT_EPARSE
 * naming the file); MT_EIO when it cannot be opened. */
enum mt_status mt_vec_map_open(struct mt_vec_map *m, const char *path,
                               const char magic[8], uint32_t version,
                               struct mt_error *err);
/* Returns the next section of n bytes, or NULL when the payload is too
 * short. */
const void *mt_vec_map_take(struct mt_vec_map *m, size_t n);
void mt_vec_map_close(struct mt_vec_map *m);

/* Writes the set's sections (scales, floats, codes) for an embedding
 * file; stores flags in *flags. */
enum mt_status mt_vecset_put_sections(const struct mt_vecset *vs,
                                      struct mt_vec_writer *w, uint64_t *flags,
                                      struct mt_error *err);
/* Builds a read-only set viewing the sections at the map's cursor; the
 * map must outlive it (the set does not unmap it). MT_EPARSE when the
 * sections are missing or inconsistent. */
enum mt_status mt_vecset_view(struct mt_vec_map *m, uint32_t dims,
                              uint64_t count, uint64_t flags,
                              struct mt_vecset **out, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
