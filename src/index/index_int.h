/* Private parts of the search index shared by build and search. */
#ifndef MT_INDEX_INT_H
#define MT_INDEX_INT_H

#include <stdint.h>

#include "index/bm25.h"
#include "index/manifest.h"
#include "medtrust/core.h"
#include "medtrust/index.h"

/* Magic of the per-segment id file: chunk ids and source ids by local doc
 * number. */
#define MT_IDS_MAGIC "MTIDS\0\0\1"
#define MT_IDS_VERSION 1u

/* Writes "STORE_DIR/index" into buf. */
void mtx_index_dir(const char *store_dir, char *buf, size_t n);

/* Writes "INDEX_DIR/NAME.EXT" into buf. */
void mtx_index_seg_path(const char *index_dir, const char *name,
                        const char *ext, char *buf, size_t n);

/* ==== Reading and analysing chunks (index_pipe.c) ==== */

/* One chunk with its terms, as the builder takes them. Everything is
 * valid only during the callback. */
struct mtx_achunk {
    int64_t chunk_id;
    int64_t source_id;
    const char *title; /* NULL when none */
    const char *text;
    size_t text_len;
    const struct mt_str *terms[MT_BM25_FIELDS]; /* analysed, in order */
    size_t nterms[MT_BM25_FIELDS];
};

typedef enum mt_status (*mtx_achunk_fn)(const struct mtx_achunk *c, void *user);

struct mtx_analyse_params {
    const char *analyzer; /* its name (mtx_analyzer_new) */
    /* 1: read, analyse and call fn on the calling thread; n > 1: n
     * threads analyse while the calling thread reads and calls fn; 0: n
     * is the number of online cores. */
    uint32_t threads;
    int64_t after; /* chunks with after < id <= upto */
    int64_t upto;
};

/* Calls fn for each of the store's chunks with after < id <= upto, in id
 * order, on the calling thread, with the same chunks and terms whatever
 * the thread count. Stops at fn's first failure (returned; err as fn
 * set it) or an analysis failure (returned after fn has had every chunk
 * before it). */
enum mt_status mtx_index_analyse(struct mt_store *s,
                                 const struct mtx_analyse_params *p,
                                 mtx_achunk_fn fn, void *user,
                                 struct mt_error *err);

/* ==== Vectors of a segment (index_vec.c) ==== */

struct mt_arena;
struct mt_vecset;
struct mt_hnsw;
struct mt_vec_hit;
struct mt_vec_filter;

/* ==== Precomputed vectors (vec_import.c) ==== */

/* Vectors made elsewhere, by chunk id: 'path' ending in .npy is a NumPy
 * float32/float16 array of shape (n, dims) whose row i belongs to the
 * chunk id on line i of 'ids' (NULL: path with .ids for .npy); any other
 * path is JSONL {"id": CHUNK_ID, "vector": [dims numbers]}. Refuses,
 * naming the file and line, a malformed header or line, a repeated id and
 * a width other than 'dims'. */
struct mtx_vimport;
enum mt_status mtx_vimport_open(const char *path, const char *ids,
                                uint32_t dims, struct mtx_vimport **out,
                                struct mt_error *err);
/* Copies the vector of chunk_id into out (dims floats); MT_ENOTFOUND,
 * naming the file, when it has none. A path that is not a regular file
 * (a FIFO; "-" for stdin) is a stream, read once in order: ids must then
 * ascend, and chunk ids must be asked for in ascending order (rows below
 * the one asked are passed over). */
enum mt_status mtx_vimport_get(struct mtx_vimport *vi, int64_t chunk_id,
                               float *out, struct mt_error *err);
/* 1 when the vectors come from a stream (no chunk can be asked twice). */
int mtx_vimport_is_stream(const struct mtx_vimport *vi);
void mtx_vimport_close(struct mtx_vimport *vi);

/* Accumulates chunk texts, embeds them in batches through the caller's
 * callback and collects the vectors of one new segment. */
struct mt_vbuild {
    mt_index_embed_fn fn;
    void *user;
    uint32_t dims;
    uint32_t batch;
    struct mt_vecset *vs;
    const char **texts;
    size_t *lens;
    size_t n;
    struct mt_arena *arena;
    float *out;
    struct mtx_vimport *vi; /* borrowed: vectors by chunk id */
};

enum mt_status mtx_vbuild_init(struct mt_vbuild *v,
                               const struct mt_index_build_params *p,
                               struct mt_error *err);
/* Queues "title. text" for embedding; embeds when the batch is full.
 * With v->vi set, takes chunk_id's vector from it instead. */
enum mt_status mtx_vbuild_add(struct mt_vbuild *v, int64_t chunk_id,
                              const char *title, const char *text, size_t len,
                              struct mt_error *err);
/* Embeds what is queued. */
enum mt_status mtx_vbuild_flush(struct mt_vbuild *v, struct mt_error *err);
/* Writes NAME.vec (flat) or, with at least p->hnsw_min vectors,
 * NAME.hnsw built on p->hnsw_threads threads. */
enum mt_status mtx_vbuild_write(struct mt_vbuild *v, const char *idir,
                                const char *name,
                                const struct mt_index_build_params *p,
                                struct mt_error *err);
void mtx_vbuild_free(struct mt_vbuild *v);

/* An opened segment's vectors: a flat set, or an HNSW graph over one. */
struct mt_vseg {
    struct mt_vecset *vs;
    struct mt_hnsw *h;
};

/* Opens NAME.hnsw when present, else NAME.vec. */
enum mt_status mtx_vseg_open(const char *idir, const char *name, uint32_t dims,
                             struct mt_vseg *out, struct mt_error *err);
uint32_t mtx_vseg_count(const struct mt_vseg *v);
/* Checks every checksum of the segment's vector file (mtx_hnsw_check,
 * mtx_vecset_check), the bytes read told to step; and those bytes. */
enum mt_status mtx_vseg_check(const struct mt_vseg *v,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err);
uint64_t mtx_vseg_check_bytes(const struct mt_vseg *v);
/* 'accepted': how many of the segment's vectors the filter accepts
 * (UINT32_MAX when unknown). A graph under a filter that accepts few
 * vectors can miss them, so below a tenth of the segment the search is
 * exact (a flat scan), as Qdrant switches to a full scan below its
 * filter-cardinality threshold. */
enum mt_status mtx_vseg_search(const struct mt_vseg *v, const float *q,
                               uint32_t k, uint32_t ef,
                               const struct mt_vec_filter *filter,
                               uint32_t accepted, struct mt_vec_hit *hits,
                               uint32_t *n);
void mtx_vseg_close(struct mt_vseg *v);

/* ==== Metadata filters (index_filter.c) ==== */

/* One segment's chunk ids by local doc number, in increasing order. */
struct mtx_filter_seg {
    const int64_t *cids;
    uint32_t n;
};

/* The matching local docs of each segment for one set of conditions. */
struct mtx_meta_filter {
    char *sig;       /* the conditions, to recognise a repeat */
    uint8_t **bits;  /* per segment: bit d set when local doc d matches */
    uint32_t *count; /* per segment: bits set */
    uint64_t total;
    size_t nsegs;
};

/* Makes f hold the bitmaps for p's metadata conditions (its 'meta' and
 * filter_key), reusing them when they are f's already; *active is 0 when
 * p has none (f is then left alone). On failure f is emptied. */
enum mt_status mtx_meta_filter_get(struct mtx_meta_filter *f,
                                   struct mt_store *s,
                                   const struct mt_search_params *p,
                                   const struct mtx_filter_seg *segs,
                                   size_t nsegs, int *active,
                                   struct mt_error *err);
void mtx_meta_filter_free(struct mtx_meta_filter *f);

static inline int mtx_meta_filter_has(const uint8_t *bits, uint32_t d)
{
    return (int)(((unsigned)bits[d >> 3] >> (d & 7u)) & 1u);
}

#endif
