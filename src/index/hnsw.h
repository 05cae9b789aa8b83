/* HNSW graph over the int8 codes of a vector set, with optional float
 * re-scoring of the candidates, deterministic builds from a seed, and a
 * checksummed mmapped file holding both the vectors and the graph. */
#ifndef MT_INDEX_HNSW_H
#define MT_INDEX_HNSW_H

#include <stdint.h>

#include "index/vec.h"
#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults and the recall@10 they reach against exact float search on
 * clustered synthetic unit vectors (Gaussian clusters around unit
 * centres), int8 codes re-scored with the 4-bit residual (the vector
 * set's default refine; BENCHMARKS.md has the sweeps):
 *   20K x 64, 50 clusters (test_hnsw.c):  ef 128 above 0.99
 *   200K x 256, 100 clusters:             ef 96 0.970, ef 128 0.983
 *   1M x 256, 100 clusters:               ef 256 0.932, ef 384 0.964
 * Searching with ef 0 uses mtx_hnsw_default_ef: ef_search (128) up to
 * 350K vectors, then growing as n^0.9 (about 330 at 1M), which keeps
 * that recall as sets grow. Without the residual the int8 codes alone
 * cap recall near 0.976. */
struct mt_hnsw_params {
    uint32_t M;               /* links per node on upper levels, 2..128;
                                 level 0 keeps 2*M. Default 16. */
    uint32_t ef_construction; /* candidate list while building; default
                                 200 */
    uint32_t ef_search;       /* candidate list while searching when the
                                 call passes ef 0, for sets up to 350K
                                 vectors (see mtx_hnsw_default_ef);
                                 default 128 */
    uint64_t seed;            /* level assignment PRNG; default 42 */
    int rescore;      /* 1 (default): re-score the ef candidates with the float
                         query (mtx_vecset_rescore): against the float vectors
                         when the set keeps them, else the codes plus their
                         4-bit residual (refine), else the dequantised codes;
                         0: int8 scores only */
    uint32_t threads; /* build threads: 0 (default) one per online core,
                         at most 64; 1 the serial build, whose graph
                         depends only on the seed and the vectors. A
                         parallel graph differs from run to run (nodes
                         race for their neighbours) with the same recall
                         (test_hnsw.c, BENCHMARKS.md). Not stored. */
};

struct mt_hnsw;

/* Returns the defaults documented in struct mt_hnsw_params. */
struct mt_hnsw_params mtx_hnsw_default_params(void);

/* Builds the graph over every vector in 'vs' on params.threads threads;
 * 'params' (NULL for defaults) is copied. The index borrows 'vs', which
 * must outlive it and not change. With threads 1 the same seed and
 * vectors give the same graph. On success *out owns the index
 * (mtx_hnsw_free); MT_EINVAL for bad params, MT_ENOMEM. */
enum mt_status mtx_hnsw_build(const struct mt_vecset *vs,
                              const struct mt_hnsw_params *params,
                              struct mt_hnsw **out);

/* Frees an index from mtx_hnsw_build or mtx_hnsw_open; NULL is allowed. */
void mtx_hnsw_free(struct mt_hnsw *h);

/* Writes the vectors and the graph to 'path' atomically (path.tmp, fsync,
 * rename, fsync of the directory); MT_EIO naming the file in 'err'. */
enum mt_status mtx_hnsw_write(const struct mt_hnsw *h, const char *path,
                              struct mt_error *err);

/* Maps an index written by mtx_hnsw_write and verifies its checksums
 * and its graph's tables (entry point, levels, block offsets), leaving
 * the vectors and the links (checksums, counts, ids) to mtx_hnsw_check;
 * a search reads each block defensively. On success *out owns it. MT_EIO
 * when it cannot be read, MT_EPARSE naming the file when truncated,
 * corrupted or foreign. */
enum mt_status mtx_hnsw_open(const char *path, struct mt_hnsw **out,
                             struct mt_error *err);

/* An index from mtx_hnsw_open: checks every checksum of its file, the
 * vectors' and links' too, reading all of it (mtx_vec_file_check), then
 * every block of the graph ("bad graph"); one built in memory: MT_OK. */
enum mt_status mtx_hnsw_check(const struct mt_hnsw *h,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err);
uint64_t mtx_hnsw_check_bytes(const struct mt_hnsw *h);

/* Approximate top-k of 'query' (dims floats): up to k hits, best first,
 * ties by ascending id, into 'hits' (room for k), their number in *n.
 * 'ef' 0 means mtx_hnsw_default_ef; ef below k is raised to k. Only
 * vectors 'filter' accepts are returned (NULL: all). Thread-safe: any
 * number of threads may search one index at once; per-query scratch comes
 * from a pool, so a warm index does not allocate per query. MT_EINVAL for
 * a bad query, MT_ENOMEM. */
enum mt_status mtx_hnsw_search(const struct mt_hnsw *h, const float *query,
                               uint32_t k, uint32_t ef,
                               const struct mt_vec_filter *filter,
                               struct mt_vec_hit *hits, uint32_t *n);

/* The ef a search with ef 0 uses: ef_search for up to 350K vectors, then
 * ef_search * (n / 350K)^0.9, at most 4096. */
uint32_t mtx_hnsw_default_ef(const struct mt_hnsw *h);
/* The same rule for n vectors and a given ef_search. */
uint32_t mtx_hnsw_ef_for(uint32_t n, uint32_t ef_search);

/* Number of vectors, and the vector set searched (owned by the index when
 * it was opened from a file). */
uint32_t mtx_hnsw_count(const struct mt_hnsw *h);
const struct mt_vecset *mtx_hnsw_vecset(const struct mt_hnsw *h);
/* The parameters in force (those of the build, or those stored). */
struct mt_hnsw_params mtx_hnsw_params_of(const struct mt_hnsw *h);

#ifdef __cplusplus
}
#endif
#endif
