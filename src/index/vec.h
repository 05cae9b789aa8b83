/* int8 vector set: Matryoshka truncation, per-vector int8 scalar
 * quantisation, exact flat search (int8 and float32), and its file in the
 * segment container (atomically written, mmapped), which HNSW shares. */
#ifndef MT_INDEX_VEC_H
#define MT_INDEX_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "index/segment.h"
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
enum mt_status mtx_vec_truncate_normalize(const float *in, uint32_t dims,
                                          uint32_t new_dims, float *out);

/* Scales x to unit length in place; returns MT_EINVAL for a zero or
 * non-finite vector (left as it was). */
enum mt_status mtx_vec_normalize(float *x, uint32_t dims);

/* Symmetric per-vector quantisation: scale = max|x| / 127 and
 * codes[i] = round(x[i] / scale), in [-127, 127]. Returns the scale (0 for
 * a zero vector, whose codes are all 0). x[i] ~= codes[i] * scale with an
 * error of at most scale / 2 per component. */
float mtx_vec_quantize(const float *x, uint32_t dims, int8_t *codes);

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
    int refine;         /* also keep a residual of every int8 code
                           (refine_bits wide: 4 bits, dims/2 bytes a vector,
                           half the codes' size, by default) and re-score
                           search candidates with it. The
                           int8 codes alone cap recall@10 against exact
                           float near 0.976 on clustered 256-d data; with
                           the residual (12 bits a component) it is
                           0.998. Default 1 */
    uint32_t max_count; /* refuse adds past this (MT_ELIMIT); default
                           MT_VEC_MAX_COUNT */
    uint32_t refine_bits; /* the residual's bits a component with refine:
                             4 (default; 15 levels) or 2 (4 levels, dims/4
                             bytes a vector: 1.25 bytes a dimension with
                             the codes). On the benchmark's clustered 20K
                             x 256 set, exact re-scoring of the int8 top
                             64 reaches recall@10 0.9989 with 4 bits and
                             0.9962 with 2 (BENCHMARKS.md). */
};

struct mt_vecset;

/* Returns the defaults documented in struct mt_vecset_params. */
struct mt_vecset_params mtx_vecset_default_params(void);

/* Creates an empty in-memory set of 'dims'-dimensional vectors; 'params'
 * (NULL for defaults) is copied. On success *out owns the set (free with
 * mtx_vecset_free). MT_EINVAL for dims of 0 or > MT_VEC_MAX_DIMS. */
enum mt_status mtx_vecset_new(uint32_t dims,
                              const struct mt_vecset_params *params,
                              struct mt_vecset **out);

/* Frees a set from mtx_vecset_new or mtx_vecset_open (unmapping its file).
 * NULL is allowed. */
void mtx_vecset_free(struct mt_vecset *vs);

/* Appends a copy of the 'dims' floats at v (normalised first when the set
 * normalises) and stores its id, the insertion index, in *id (may be
 * NULL). MT_EINVAL for a zero/non-finite vector when normalising,
 * MT_EUNSUPPORTED on an opened (read-only) set, MT_ELIMIT past max_count,
 * MT_ENOMEM; on failure the set is unchanged. Not thread-safe. */
enum mt_status mtx_vecset_add(struct mt_vecset *vs, const float *v,
                              uint32_t *id);

/* Counts and flags; thread-safe. */
uint32_t mtx_vecset_count(const struct mt_vecset *vs);
uint32_t mtx_vecset_dims(const struct mt_vecset *vs);
int mtx_vecset_has_float(const struct mt_vecset *vs);

/* Writes the set to 'path' atomically (path.tmp, fsync, rename, fsync of
 * the directory). MT_EIO with the file name in 'err' (may be NULL). */
enum mt_status mtx_vecset_write(const struct mt_vecset *vs, const char *path,
                                struct mt_error *err);

/* Maps the set written at 'path' read-only and verifies its checksums,
 * but for the vectors' own (mtx_vecset_check). On success *out owns it
 * (mtx_vecset_free). A missing file is MT_EIO; a truncated, corrupted or
 * foreign file is MT_EPARSE naming the file. */
enum mt_status mtx_vecset_open(const char *path, struct mt_vecset **out,
                               struct mt_error *err);

/* A set from mtx_vecset_open: checks every checksum of its file, the
 * vectors' too, reading all of it (mtx_vec_file_check); a set made in
 * memory: MT_OK. */
enum mt_status mtx_vecset_check(const struct mt_vecset *vs,
                                void (*step)(uint64_t bytes, void *user),
                                void *user, struct mt_error *err);
uint64_t mtx_vecset_check_bytes(const struct mt_vecset *vs);

/* Exact search over the int8 codes: the query is quantised like the
 * vectors and score = dot_int32 * qscale * vscale; with refine or float
 * copies, the best max(4k, 64) of that scan are re-scored with
 * mtx_vecset_rescore and ranked by it. Writes up to k hits,
 * best first, ties by ascending id, to 'hits' (room for k) and their
 * number to *n. 'filter' may be NULL. MT_EINVAL for a bad query when
 * normalising. Thread-safe for concurrent searches. */
enum mt_status mtx_vecset_search_flat(const struct mt_vecset *vs,
                                      const float *query, uint32_t k,
                                      const struct mt_vec_filter *filter,
                                      struct mt_vec_hit *hits, uint32_t *n);

/* Exact float32 search (the ground truth for the int8 searches); needs a
 * set with keep_float, else MT_EUNSUPPORTED. Otherwise as above. */
enum mt_status mtx_vecset_search_float(const struct mt_vecset *vs,
                                       const float *query, uint32_t k,
                                       const struct mt_vec_filter *filter,
                                       struct mt_vec_hit *hits, uint32_t *n);

/* ==== Internal: shared with hnsw.c ==== */

const int8_t *mtx_vecset_code(const struct mt_vecset *vs, uint32_t id);
float mtx_vecset_scale(const struct mt_vecset *vs, uint32_t id);
/* All codes (count * dims, row-major) and all scales (count), for inner
 * loops; valid until the set changes. */
const int8_t *mtx_vecset_codes(const struct mt_vecset *vs);
const float *mtx_vecset_scales(const struct mt_vecset *vs);
/* The residual of vector id (mtx_vecset_refine_bytes of them), or NULL
 * when the set keeps none. */
const uint8_t *mtx_vecset_refine(const struct mt_vecset *vs, uint32_t id);
/* Bytes of one vector's residual: (dims + 1) / 2 with 4 bits,
 * (dims + 3) / 4 with 2, 0 without; and those bits (4, 2 or 0). */
uint32_t mtx_vecset_refine_bytes(const struct mt_vecset *vs);
uint32_t mtx_vecset_refine_bits(const struct mt_vecset *vs);
/* Score of float query q (already prepared: normalised when the set
 * normalises) against vector id, as precisely as the set allows: its
 * float copy, else its code plus residual, else its dequantised code. */
float mtx_vecset_rescore(const struct mt_vecset *vs, const float *q,
                         uint32_t id);
/* How many of the best int8 candidates a top-k search re-scores with
 * mtx_vecset_rescore: max(4k, 64). The int8 order is close enough that
 * the true top k lie among them. */
uint32_t mtx_vec_rescore_pool(uint32_t k);
/* NULL when the set keeps no floats. */
const float *mtx_vecset_float(const struct mt_vecset *vs, uint32_t id);
/* Copies (normalising when the set does) the query into qf and quantises
 * it into qcodes; returns the query scale through *qscale. */
enum mt_status mtx_vecset_prepare_query(const struct mt_vecset *vs,
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
int mtx_vec_topk_push(struct mt_vec_topk *t, uint32_t id, float score);
/* Sorts the kept hits best first; the heap is consumed. */
void mtx_vec_topk_sort(struct mt_vec_topk *t);
/* qsort comparator of struct mt_vec_hit: the better hit first
 * (mtx_vec_hit_better), for every sort of vector hits. */
int mtx_vec_hit_cmp(const void *a, const void *b);
/* Non-zero when a ranks before b (higher score, then lower id). */
static inline int mtx_vec_hit_better(struct mt_vec_hit a, struct mt_vec_hit b)
{
    return a.score > b.score || (a.score == b.score && a.id < b.id);
}

/* ==== Files (vec_file.c) ====
 *
 * A vector set is a segment file (segment.h) with magic "MTVEC002" and
 * 64-byte aligned sections, as the old format aligned them, so the mmapped
 * codes sit where the SIMD kernels found them before:
 *   VMET  u64 dims, u64 count, u64 flags (MT_VEC_FLAG_*)
 *   VSCL  count float scales
 *   VFLT  count * dims floats            (only with MT_VEC_FLAG_FLOAT)
 *   VCOD  count * dims int8 codes
 *   VRES  count * ((dims + 1) / 2) bytes (only with MT_VEC_FLAG_REFINE),
 *         or count * ((dims + 3) / 4) (MT_VEC_FLAG_REFINE2, version 3; a
 *         set without it is written as version 2)
 * An HNSW file holds the same sections plus the graph's (hnsw.c).
 *
 * Files written before the segment container (magic "MTVECSET" or
 * "MTHNSW01" then u32 version 1: a 128-byte header with a 64-bit hash
 * and the same arrays back to back, each padded to 64 bytes) still open:
 * mtx_vec_file_open looks at the first 8 bytes and maps such a file with
 * the old reader (vec_file.c, "Files written before"), which serves the
 * same sections in the order they were written. Nothing writes that format
 * any more; writing the set or graph again converts it. */
#define MT_VEC_FLAG_FLOAT 1u
#define MT_VEC_FLAG_NORMALIZE 2u
#define MT_VEC_FLAG_REFINE 4u  /* a 4-bit residual */
#define MT_VEC_FLAG_REFINE2 8u /* a 2-bit residual (version 3) */
#define MT_VEC_FILE_ALIGN 64u
#define MT_VEC_SEC_META MT_SEG_ID('V', 'M', 'E', 'T')
#define MT_VEC_SEC_SCALES MT_SEG_ID('V', 'S', 'C', 'L')
#define MT_VEC_SEC_FLOATS MT_SEG_ID('V', 'F', 'L', 'T')
#define MT_VEC_SEC_CODES MT_SEG_ID('V', 'C', 'O', 'D')
#define MT_VEC_SEC_REFINE MT_SEG_ID('V', 'R', 'E', 'S')
/* The vectors themselves: every file kind's mtx_vec_kind.lazy starts so. */
#define MT_VEC_LAZY_SECTIONS                                                   \
    MT_VEC_SEC_CODES, MT_VEC_SEC_REFINE, MT_VEC_SEC_FLOATS

/* Which file: the magic of its segment form and of its old form. */
struct mtx_vec_kind {
    const char *magic;     /* 8 bytes, the segment form */
    uint32_t version;      /* the segment form's format version, written */
    uint32_t oldest;       /* the oldest segment-form version still read */
    const char *old_magic; /* 8 bytes, the form written before */
    /* The sections whose CRC the open leaves to mtx_vec_file_check(),
     * 0-terminated: the vectors' (MT_VEC_LAZY_SECTIONS) and the kind's. */
    const uint32_t *lazy;
};

/* An open, verified vector or graph file of either form. */
struct mtx_vec_file;

/* Maps 'path' and verifies it (segment checksums, or the old header and
 * hash). On success *out owns the file (mtx_vec_file_close). MT_EIO when
 * it cannot be read; MT_EPARSE naming the file when damaged or foreign. */
enum mt_status mtx_vec_file_open(const char *path, const struct mtx_vec_kind *k,
                                 struct mtx_vec_file **out,
                                 struct mt_error *err);
void mtx_vec_file_close(struct mtx_vec_file *f);
/* After the open's checks: the mapping is read at random from here on
 * (mtx_seg_advise_random; old files too). */
void mtx_vec_file_advise_random(const struct mtx_vec_file *f);
const char *mtx_vec_file_name(const struct mtx_vec_file *f);
/* The file's format version: its segment header's, or 1 for a file in
 * the form written before the segment container. */
uint32_t mtx_vec_file_version(const struct mtx_vec_file *f);

/* Checks the CRC of every section, the vectors' too (the open leaves
 * those), reading the whole file; step (NULL: none) is told the bytes
 * checked, mtx_vec_file_check_bytes() in all. An old file was checked
 * whole at open: MT_OK, 0 bytes. MT_EPARSE naming the damaged section. */
enum mt_status mtx_vec_file_check(const struct mtx_vec_file *f,
                                  void (*step)(uint64_t bytes, void *user),
                                  void *user, struct mt_error *err);
uint64_t mtx_vec_file_check_bytes(const struct mtx_vec_file *f);

/* The n u64 fields of metadata section 'id'. An old file has its fields
 * in its header: MT_VEC_SEC_META is (dims, count, aux[0]), and any other
 * id is aux[1..n]. MT_EPARSE when the section is missing or shorter. */
enum mt_status mtx_vec_file_meta(const struct mtx_vec_file *f, uint32_t id,
                                 uint64_t *v, size_t n, struct mt_error *err);

/* The array section 'id' of exactly n bytes, in *p (64-byte aligned).
 * An old file serves its arrays in the order written, so callers take
 * them in that order. MT_EPARSE naming the file and section when missing
 * or of another size. */
enum mt_status mtx_vec_file_take(struct mtx_vec_file *f, uint32_t id, size_t n,
                                 const void **p, struct mt_error *err);

/* After the last take: MT_EPARSE when an old file has trailing bytes. */
enum mt_status mtx_vec_file_done(const struct mtx_vec_file *f,
                                 struct mt_error *err);

/* Starts a segment writer for path (kind's magic, 64-byte sections). */
enum mt_status mtx_vec_file_create(const char *path,
                                   const struct mtx_vec_kind *k,
                                   struct mt_seg_writer **out,
                                   struct mt_error *err);

/* Writes one section: id, then n bytes at p. */
enum mt_status mtx_vec_file_put(struct mt_seg_writer *w, uint32_t id,
                                const void *p, size_t n, struct mt_error *err);

/* Writes the set's sections (VMET, VSCL, VFLT, VCOD, VRES). */
enum mt_status mtx_vecset_put_sections(const struct mt_vecset *vs,
                                       struct mt_seg_writer *w,
                                       struct mt_error *err);
/* Builds a read-only set viewing the set's sections of f; f must outlive
 * it (the set does not close it). MT_EPARSE when the sections are missing
 * or inconsistent. */
enum mt_status mtx_vecset_view(struct mtx_vec_file *f, struct mt_vecset **out,
                               struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
