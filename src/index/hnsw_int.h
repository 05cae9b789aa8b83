/* Private to src/index/hnsw*.c: the index's fields and the link-block
 * access that the graph (hnsw.c) and its file format (hnsw_file.c)
 * share. */
#ifndef MT_INDEX_HNSW_INT_H
#define MT_INDEX_HNSW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "index/hnsw.h"

#define HNSW_MAX_LEVEL 30u
#define HNSW_MAX_M 128u
#define HNSW_NONE UINT32_MAX
#define HNSW_PACK_SLACK 8u /* bytes after a packed array ("Link blocks") */

struct pool;
struct build_sync;
struct mtx_vec_file;

/* The layout of a version 4 file's level-0 blocks (hnsw.c, "Level 0 as
 * Elias-Fano blocks"). */
struct ef_geom {
    uint32_t lo;   /* low bits of an id */
    uint32_t high; /* bits of a block's high part */
    uint64_t bits; /* bits of a block */
};

struct mt_hnsw {
    struct mt_hnsw_params p;
    const struct mt_vecset *vs;
    struct mt_vecset *own_vs;
    const struct mt_simd_kernels *k;
    const int8_t *codes; /* the set's codes and scales, cached for the */
    const float *scales; /* inner loop (the set is immutable while indexed) */
    uint32_t n;
    uint32_t dims;
    uint32_t M0; /* level-0 degree, 2*M */
    uint32_t max_level;
    uint32_t entry;
    uint64_t n_upper;       /* upper-level link blocks */
    uint32_t lbits;         /* bits of each entry (count or id) of a link block:
                               32 while building and in version 2 files (u32
                               entries), else the fewest that hold n - 1 and M0
                               (link_bits) */
    struct ef_geom ef;      /* level 0 as Elias-Fano blocks (version 4 files);
                               ef.bits 0: [count, ids] blocks */
    uint32_t n_up;          /* version 4: nodes with upper levels, */
    const uint32_t *up_ids; /* their ids, ascending, */
    const uint32_t *up_first;  /* n_up + 1: their first upper blocks, then
                                  n_upper (levels: the differences) */
    const uint8_t *levels;     /* NULL in a version 4 file: up_ids */
    const uint32_t *upper_off; /* first upper block of each node; the same */
    const void *links0;        /* n blocks of [count, M0 ids] */
    const void *upper;         /* n_upper blocks of [count, M ids] */
    uint8_t *levels_mem;
    uint32_t *upper_off_mem;
    uint32_t *links0_mem;
    uint32_t *upper_mem;
    struct mtx_vec_file *file; /* owned when opened from a file */
    struct pool *pool;
    struct build_sync *sync; /* during a parallel build only, else NULL */
};

/* An index with no graph yet: parameters, kernels and the scratch pool
 * (mtx_hnsw_free frees it); MT_ENOMEM. */
enum mt_status mtx_hnsw_alloc(const struct mt_hnsw_params *p,
                              struct mt_hnsw **out);

/* Copies [count, ids...] of node id on 'level' (<= its level) into l
 * (room for 2 * HNSW_MAX_M + 1 on level 0, else HNSW_MAX_M + 1); returns
 * the count. Level 0 of a version 4 file comes sorted by id. */
uint32_t mtx_hnsw_read_links(const struct mt_hnsw *h, uint32_t id,
                             uint32_t level, uint32_t *l);

/* Node id's level. */
uint32_t mtx_hnsw_level_of(const struct mt_hnsw *h, uint32_t id);

/* The entry width of a file's packed blocks: the fewest bits that hold
 * n - 1 and M0. */
uint32_t mtx_hnsw_link_bits(const struct mt_hnsw *h);

/* Bytes of a packed array of 'entries' entries of 'bits' each, slack
 * included (u32 entries when bits is 32: no slack). */
size_t mtx_hnsw_packed_bytes(uint64_t entries, uint32_t bits);

/* The Elias-Fano layout of level 0 for n vectors and lists of up to M0. */
struct ef_geom mtx_hnsw_ef_layout(uint32_t n, uint32_t M0);

/* Whether node id's block on 'level' holds at most max_links ids, each
 * below n and, on an upper level, of a node on that level, as written
 * (mtx_hnsw_check; a search reads only such links of any block). */
int mtx_hnsw_block_ok(const struct mt_hnsw *h, uint32_t id, uint32_t level);

#endif
