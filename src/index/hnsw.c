/* HNSW (Malkov & Yashunin) over int8 codes: seeded level assignment,
 * heuristic neighbour selection as in hnswlib, a build on all cores with
 * locked link lists (or a serial, deterministic one), pooled per-query
 * scratch with a visited bitset, and a checksummed mmapped file. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/hnsw.h"
#include "index/simd.h"
#include "medtrust/core.h"

#define HNSW_MAGIC "MTHNSW02"
#define HNSW_VERSION 3u           /* 3: links bit-packed (HMET's link_bits) */
#define HNSW_OLDEST_VERSION 2u    /* 2: links as u32, still read */
#define HNSW_OLD_MAGIC "MTHNSW01" /* the format before the segment one */
#define HNSW_MAX_LEVEL 30u
#define HNSW_MAX_M 128u
#define NONE UINT32_MAX

/* Per-query (or per-build) scratch; all buffers grow by doubling, so a
 * warm scratch never allocates. */
struct heap {
    struct mt_vec_hit *a;
    uint32_t n;
    uint32_t cap;
};

struct scratch {
    struct scratch *next;
    uint64_t *visited; /* bit id set: seen this search. A bitset (128 KB
                          a million vectors) stays in L2, where per-node
                          generation stamps (4 MB) missed on every check:
                          a quarter of query time at 1M. */
    uint32_t *dirty;   /* words of 'visited' set since the last clear */
    uint32_t ndirty;
    struct heap cands; /* best on top */
    struct heap res;   /* worst on top, at most ef */
    struct heap sel;   /* plain array: results, then selected */
    struct heap bl;    /* plain array: back-link pruning */
    float *qf;
    int8_t *qcodes;
};

struct pool {
    pthread_mutex_t lock;
    struct scratch *free;
};

/* Shared state of a parallel build, as hnswlib's addPoint keeps it: one
 * lock per link list (striped: node id & mask picks the mutex) and a
 * global lock for the entry point. A thread holds at most one stripe at
 * a time, and takes a stripe only after the global lock, never the other
 * way, so there is no lock order to get wrong. */
#define BUILD_STRIPES 4096u
#define BUILD_MAX_THREADS 64u

struct build_sync {
    pthread_mutex_t global; /* entry, max_level */
    pthread_mutex_t stripes[BUILD_STRIPES];
    atomic_uint next;  /* next node to insert */
    atomic_int failed; /* an insert ran out of memory: all stop */
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
    uint64_t n_upper; /* upper-level link blocks */
    uint32_t lbits;   /* bits of each entry (count or id) of a link block:
                         32 while building and in version 2 files (u32
                         entries), else the fewest that hold n - 1 and M0
                         (link_bits) */
    const uint8_t *levels;
    const uint32_t *upper_off; /* first upper block of each node */
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

/* ==== Heaps ==== */

static enum mt_status heap_reserve(struct heap *h, uint32_t need)
{
    uint32_t cap = h->cap ? h->cap : 64;
    void *p;

    if (need <= h->cap)
        return MT_OK;
    while (cap < need)
        cap *= 2;
    p = mt_realloc(h->a, (size_t)cap * sizeof *h->a);
    if (!p)
        return MT_ENOMEM;
    h->a = p;
    h->cap = cap;
    return MT_OK;
}

/* With worst_top the root is the worst hit, otherwise the best. */
static int above(struct mt_vec_hit a, struct mt_vec_hit b, int worst_top)
{
    return worst_top ? mtx_vec_hit_better(b, a) : mtx_vec_hit_better(a, b);
}

static enum mt_status heap_push(struct heap *h, struct mt_vec_hit x,
                                int worst_top)
{
    uint32_t i;

    if (h->n == h->cap && heap_reserve(h, h->n + 1) != MT_OK)
        return MT_ENOMEM;
    i = h->n++;
    while (i > 0 && above(x, h->a[(i - 1) / 2], worst_top)) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
    return MT_OK;
}

static void heap_pop(struct heap *h, int worst_top)
{
    struct mt_vec_hit x = h->a[--h->n];
    uint32_t i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && above(h->a[c + 1], h->a[c], worst_top))
            c++;
        if (!above(h->a[c], x, worst_top))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = x;
}

static int hit_cmp(const void *a, const void *b)
{
    const struct mt_vec_hit *x = a;
    const struct mt_vec_hit *y = b;

    if (mtx_vec_hit_better(*x, *y))
        return -1;
    return mtx_vec_hit_better(*y, *x);
}

/* ==== Scratch pool ==== */

static void scratch_free(struct scratch *s)
{
    if (!s)
        return;
    mt_free(s->visited);
    mt_free(s->dirty);
    mt_free(s->cands.a);
    mt_free(s->res.a);
    mt_free(s->sel.a);
    mt_free(s->bl.a);
    mt_free(s->qf);
    mt_free(s);
}

static struct scratch *scratch_new(const struct mt_hnsw *h)
{
    struct scratch *s = mt_calloc(1, sizeof *s);

    if (!s)
        return NULL;
    s->visited = mt_calloc(((size_t)h->n + 63) / 64 + 1, sizeof *s->visited);
    s->dirty = mt_malloc((((size_t)h->n + 63) / 64 + 1) * sizeof *s->dirty);
    s->qf = mt_malloc((size_t)h->dims * (sizeof(float) + 1));
    if (!s->visited || !s->dirty || !s->qf) {
        scratch_free(s);
        return NULL;
    }
    s->qcodes = (int8_t *)(s->qf + h->dims);
    return s;
}

static struct scratch *scratch_get(const struct mt_hnsw *h)
{
    struct scratch *s;

    pthread_mutex_lock(&h->pool->lock);
    s = h->pool->free;
    if (s)
        h->pool->free = s->next;
    pthread_mutex_unlock(&h->pool->lock);
    return s ? s : scratch_new(h);
}

static void scratch_put(const struct mt_hnsw *h, struct scratch *s)
{
    pthread_mutex_lock(&h->pool->lock);
    s->next = h->pool->free;
    h->pool->free = s;
    pthread_mutex_unlock(&h->pool->lock);
}

/* Clears only the words set since the last clear, so a search costs
 * what it visits, not the size of the set. */
static void visited_clear(struct scratch *s)
{
    uint32_t i;

    for (i = 0; i < s->ndirty; i++)
        s->visited[s->dirty[i]] = 0;
    s->ndirty = 0;
}

/* Marks id as visited; returns whether it was already. */
static int visit(struct scratch *s, uint32_t id)
{
    uint64_t bit = (uint64_t)1 << (id & 63);
    uint64_t *w = s->visited + (id >> 6);
    int seen = (*w & bit) != 0;

    if (*w == 0)
        s->dirty[s->ndirty++] = id >> 6;
    *w |= bit;
    return seen;
}

/* ==== Graph access ==== */

static uint32_t max_links(const struct mt_hnsw *h, uint32_t level)
{
    return level ? h->p.M : h->M0;
}

/* ==== Link blocks ====
 *
 * A block is [count, ids...] with room for max_links ids, each entry
 * 'lbits' wide. With 32 bits the entries are plain u32 (the build's
 * arrays, version 2 files); narrower, they are packed little-endian
 * bit fields, entry e at bit e * lbits, and the array carries 8 bytes of
 * slack so that every entry is read with one unaligned 64-bit load. At
 * 20K vectors (15 bits) a level-0 block of M 16 takes 62 bytes instead
 * of 132: the graph was over half of what a default file adds to the
 * codes (BENCHMARKS.md, "int8r file"). */
#define PACK_SLACK 8u

/* Bits that hold every value 0..x (at least 1). */
static uint32_t bits_for(uint64_t x)
{
    uint32_t b = 1;

    while (b < 32 && (x >> b) != 0)
        b++;
    return b;
}

/* The entry width a file of this graph gets: ids up to n - 1 and counts
 * up to M0. */
static uint32_t link_bits(const struct mt_hnsw *h)
{
    uint64_t most = h->n > 0 ? h->n - 1 : 0;

    return bits_for(most > h->M0 ? most : h->M0);
}

/* Bytes of an array of 'entries' entries of 'bits' each. */
static size_t packed_bytes(uint64_t entries, uint32_t bits)
{
    if (bits == 32)
        return (size_t)entries * 4;
    return (size_t)((entries * bits + 7) / 8) + PACK_SLACK;
}

static uint32_t entry_get(const void *a, uint64_t e, uint32_t bits)
{
    uint64_t pos = e * bits;
    uint64_t w;

    if (bits == 32)
        return ((const uint32_t *)a)[e];
    memcpy(&w, (const unsigned char *)a + (pos >> 3), sizeof w);
    return (uint32_t)((w >> (pos & 7)) & ((1ull << bits) - 1));
}

/* Sets entry e (zero before) of a packed array. */
static void entry_put(unsigned char *a, uint64_t e, uint32_t bits, uint32_t v)
{
    uint64_t pos = e * bits;
    uint64_t w;

    memcpy(&w, a + (pos >> 3), sizeof w);
    w |= (uint64_t)v << (pos & 7);
    memcpy(a + (pos >> 3), &w, sizeof w);
}

/* Unpacks the block at bit 'pos' of a ('bits' wide entries, < 32) into
 * l; returns the count. The bit position steps on instead of being
 * multiplied out again for each entry. */
static uint32_t unpack_block(const unsigned char *a, uint64_t pos,
                             uint32_t bits, uint32_t *l)
{
    uint64_t mask = (1ull << bits) - 1;
    uint64_t w;
    uint32_t c;
    uint32_t i;

    memcpy(&w, a + (pos >> 3), sizeof w);
    c = (uint32_t)((w >> (pos & 7)) & mask);
    l[0] = c;
    for (i = 1; i <= c; i++) {
        pos += bits;
        memcpy(&w, a + (pos >> 3), sizeof w);
        l[i] = (uint32_t)((w >> (pos & 7)) & mask);
    }
    return c;
}

/* The array and first entry of node id's block on 'level' (<= its
 * level). */
static const void *block_of(const struct mt_hnsw *h, uint32_t id,
                            uint32_t level, uint64_t *e)
{
    if (level == 0) {
        *e = (uint64_t)id * (h->M0 + 1);
        return h->links0;
    }
    *e = ((uint64_t)h->upper_off[id] + level - 1) * (h->p.M + 1);
    return h->upper;
}

/* Copies [count, ids...] of node id on 'level' into l (room for
 * max_links + 1); returns the count. The count is not checked here:
 * mtx_hnsw_open checks every block (graph_ok) and the build writes
 * none past max_links. */
static uint32_t read_links(const struct mt_hnsw *h, uint32_t id, uint32_t level,
                           uint32_t *l)
{
    uint64_t e;
    const void *a = block_of(h, id, level, &e);

    if (h->lbits == 32) {
        const uint32_t *src = (const uint32_t *)a + e;
        memcpy(l, src, ((size_t)src[0] + 1) * sizeof *l);
        return l[0];
    }
    return unpack_block(a, e * h->lbits, h->lbits, l);
}

/* Where node id's block on 'level' starts, for a prefetch. */
static const void *block_addr(const struct mt_hnsw *h, uint32_t id,
                              uint32_t level)
{
    uint64_t e;
    const unsigned char *a = block_of(h, id, level, &e);

    return a + ((e * h->lbits) >> 3);
}

/* The build's own u32 block of node id on 'level'. */
static uint32_t *links_mut(struct mt_hnsw *h, uint32_t id, uint32_t level)
{
    if (level == 0)
        return h->links0_mem + (size_t)id * (h->M0 + 1);
    return h->upper_mem +
           ((size_t)h->upper_off_mem[id] + level - 1) * (h->p.M + 1);
}

/* Lock node id's link lists (all its levels) while a parallel build may
 * change them; no-ops for a serial build and for searches. */
static void lock_node(const struct mt_hnsw *h, uint32_t id)
{
    if (h->sync)
        pthread_mutex_lock(&h->sync->stripes[id & (BUILD_STRIPES - 1)]);
}

static void unlock_node(const struct mt_hnsw *h, uint32_t id)
{
    if (h->sync)
        pthread_mutex_unlock(&h->sync->stripes[id & (BUILD_STRIPES - 1)]);
}

/* Similarity of the quantised query to node id: int8 dot times scales. */
static float sim_q(const struct mt_hnsw *h, const int8_t *q, float qs,
                   uint32_t id)
{
    return (float)h->k->dot_i8(q, h->codes + (size_t)id * h->dims, h->dims) *
           qs * h->scales[id];
}

static float sim_nodes(const struct mt_hnsw *h, uint32_t a, uint32_t b)
{
    return sim_q(h, mtx_vecset_code(h->vs, a), mtx_vecset_scale(h->vs, a), b);
}

/* ==== Search ==== */

/* Hill-climbs on one upper level from *cur towards the query. */
static void greedy(const struct mt_hnsw *h, const int8_t *q, float qs,
                   struct mt_vec_hit *cur, uint32_t level)
{
    uint32_t l[HNSW_MAX_M + 1]; /* a copy: a parallel build may change it */
    int changed = 1;

    while (changed) {
        uint32_t i;
        changed = 0;
        lock_node(h, cur->id);
        read_links(h, cur->id, level, l);
        unlock_node(h, cur->id);
        for (i = 1; i <= l[0]; i++) {
            struct mt_vec_hit x = {l[i], sim_q(h, q, qs, l[i])};
            if (mtx_vec_hit_better(x, *cur)) {
                *cur = x;
                changed = 1;
            }
        }
    }
}

static int accepted(const struct mt_vec_filter *f, uint32_t id)
{
    return !f || !f->accept || f->accept(id, f->user);
}

/* Offers neighbour x found while expanding: a candidate when it could
 * enter the results, a result when the filter accepts it. */
static enum mt_status offer(struct scratch *s, struct mt_vec_hit x, uint32_t ef,
                            const struct mt_vec_filter *f)
{
    if (s->res.n >= ef && !mtx_vec_hit_better(x, s->res.a[0]))
        return MT_OK;
    if (heap_push(&s->cands, x, 0) != MT_OK)
        return MT_ENOMEM;
    if (!accepted(f, x.id))
        return MT_OK;
    if (heap_push(&s->res, x, 1) != MT_OK)
        return MT_ENOMEM;
    if (s->res.n > ef)
        heap_pop(&s->res, 1);
    return MT_OK;
}

/* Prefetches every cache line of node id's code and its scale: at a
 * million vectors they are cold, and one line per node (what a plain
 * prefetch of the pointer gives) left three of a 256-byte code and the
 * scale to stall the dot product. */
static void prefetch_node(const struct mt_hnsw *h, uint32_t id)
{
    const char *c = (const char *)mtx_vecset_code(h->vs, id);
    uint32_t off;

    for (off = 0; off < h->dims; off += 64)
        __builtin_prefetch(c + off);
    __builtin_prefetch(h->scales + id);
}

/* Marks the unvisited neighbours of c on 'level' as seen, prefetches
 * them, and leaves their ids in s->bl.a[i].id; returns their number. */
static uint32_t fresh_neighbours(const struct mt_hnsw *h, struct scratch *s,
                                 uint32_t c, uint32_t level)
{
    uint32_t l[2 * HNSW_MAX_M + 1];
    uint32_t nf = 0;
    uint32_t i;

    lock_node(h, c);
    read_links(h, c, level, l);
    unlock_node(h, c);
    for (i = 1; i <= l[0]; i++) {
        uint32_t id = l[i];
        if (visit(s, id))
            continue;
        prefetch_node(h, id);
        s->bl.a[nf++].id = id;
    }
    return nf;
}

/* Best-first search of one level from 'ep'; leaves up to ef results in
 * s->res. */
static enum mt_status search_layer(const struct mt_hnsw *h, struct scratch *s,
                                   const int8_t *q, float qs,
                                   struct mt_vec_hit ep, uint32_t level,
                                   uint32_t ef, const struct mt_vec_filter *f)
{
    visited_clear(s);
    s->cands.n = 0;
    s->res.n = 0;
    visit(s, ep.id);
    if (heap_reserve(&s->bl, max_links(h, level) + 1) != MT_OK ||
        offer(s, ep, ef, f) != MT_OK)
        return MT_ENOMEM;
    while (s->cands.n > 0) {
        struct mt_vec_hit c = s->cands.a[0];
        uint32_t i;
        uint32_t nf;
        if (s->res.n >= ef && mtx_vec_hit_better(s->res.a[0], c))
            break;
        heap_pop(&s->cands, 0);
        if (s->cands.n > 0) /* the next node expanded, most likely */
            __builtin_prefetch(block_addr(h, s->cands.a[0].id, level));
        nf = fresh_neighbours(h, s, c.id, level);
        for (i = 0; i < nf; i++) {
            struct mt_vec_hit x = {s->bl.a[i].id, 0.0f};
            x.score = sim_q(h, q, qs, x.id);
            if (offer(s, x, ef, f) != MT_OK)
                return MT_ENOMEM;
        }
    }
    return MT_OK;
}

/* Moves the results heap into s->sel, sorted best first. */
static enum mt_status results_sorted(struct scratch *s)
{
    if (heap_reserve(&s->sel, s->res.n) != MT_OK)
        return MT_ENOMEM;
    memcpy(s->sel.a, s->res.a, (size_t)s->res.n * sizeof *s->res.a);
    s->sel.n = s->res.n;
    qsort(s->sel.a, s->sel.n, sizeof *s->sel.a, hit_cmp);
    return MT_OK;
}

/* Descends from the entry point to level 0 and searches it with ef. */
static enum mt_status search_from_top(const struct mt_hnsw *h,
                                      struct scratch *s, const int8_t *q,
                                      float qs, uint32_t ef,
                                      const struct mt_vec_filter *f)
{
    struct mt_vec_hit cur = {h->entry, sim_q(h, q, qs, h->entry)};
    uint32_t l;

    for (l = h->max_level; l > 0; l--)
        greedy(h, q, qs, &cur, l);
    if (search_layer(h, s, q, qs, cur, 0, ef, f) != MT_OK)
        return MT_ENOMEM;
    return results_sorted(s);
}

#define RESCORE_AHEAD 8 /* candidates prefetched ahead of re-scoring */

/* Prefetches what re-scoring candidate id will read: its residual (or
 * float copy), cold at a million vectors. */
static void prefetch_rescore(const struct mt_hnsw *h, uint32_t id)
{
    const float *f = mtx_vecset_float(h->vs, id);
    const uint8_t *r = mtx_vecset_refine(h->vs, id);
    const char *p = f ? (const char *)f : (const char *)r;
    size_t len = f ? h->dims * sizeof(float) : mtx_vecset_refine_bytes(h->vs);
    size_t off;

    for (off = 0; p && off < len; off += 64)
        __builtin_prefetch(p + off);
}

/* Past AUTO_EF_N vectors the default ef grows as n^0.9: fitted to the
 * smallest ef reaching recall@10 0.95 on the benchmark's clustered sets
 * (about 75 at 200K, 320 at 1M; BENCHMARKS.md). */
#define AUTO_EF_N 350000.0
#define AUTO_EF_MAX 4096u

uint32_t mtx_hnsw_ef_for(uint32_t n, uint32_t ef_search)
{
    double f = (double)n / AUTO_EF_N;
    double ef;

    if (f <= 1.0)
        return ef_search;
    ef = ceil((double)ef_search * pow(f, 0.9));
    return ef > AUTO_EF_MAX ? AUTO_EF_MAX : (uint32_t)ef;
}

uint32_t mtx_hnsw_default_ef(const struct mt_hnsw *h)
{
    return mtx_hnsw_ef_for(h->n, h->p.ef_search);
}

/* Candidates re-scored, best int8 first: mtx_vec_rescore_pool of them, as
 * in the flat search; re-scoring every one of a large ef cost a cold
 * fetch each (a tenth of query time at ef 384 over 1M vectors). */
static uint32_t rescore_count(const struct mt_hnsw *h, uint32_t k, uint32_t n)
{
    uint32_t r = mtx_vec_rescore_pool(k);

    if (!h->p.rescore)
        return k < n ? k : n;
    return r < n ? r : n;
}

/* Offers the best candidates in s->sel (sorted by int8 score) to t,
 * re-scored when the index re-scores. */
static void rank_results(const struct mt_hnsw *h, const struct scratch *s,
                         struct mt_vec_topk *t)
{
    uint32_t m = rescore_count(h, t->k, s->sel.n);
    uint32_t i;

    for (i = 0; h->p.rescore && i < RESCORE_AHEAD && i < m; i++)
        prefetch_rescore(h, s->sel.a[i].id);
    for (i = 0; i < m; i++) {
        struct mt_vec_hit x = s->sel.a[i];
        if (h->p.rescore && i + RESCORE_AHEAD < m)
            prefetch_rescore(h, s->sel.a[i + RESCORE_AHEAD].id);
        if (h->p.rescore)
            x.score = mtx_vecset_rescore(h->vs, s->qf, x.id);
        mtx_vec_topk_push(t, x.id, x.score);
    }
}

enum mt_status mtx_hnsw_search(const struct mt_hnsw *h, const float *query,
                               uint32_t k, uint32_t ef,
                               const struct mt_vec_filter *filter,
                               struct mt_vec_hit *hits, uint32_t *n)
{
    struct mt_vec_topk t = {hits, 0, k};
    struct scratch *s;
    enum mt_status st;
    float qs;

    *n = 0;
    if (k == 0 || h->n == 0)
        return MT_OK;
    ef = ef ? ef : mtx_hnsw_default_ef(h);
    ef = ef < k ? k : ef;
    s = scratch_get(h);
    if (!s)
        return MT_ENOMEM;
    st = mtx_vecset_prepare_query(h->vs, query, s->qf, s->qcodes, &qs);
    if (st == MT_OK)
        st = search_from_top(h, s, s->qcodes, qs, ef, filter);
    if (st == MT_OK)
        rank_results(h, s, &t);
    mtx_vec_topk_sort(&t);
    *n = st == MT_OK ? t.n : 0;
    scratch_put(h, s);
    return st;
}

/* ==== Build ==== */

/* hnswlib's heuristic: keep candidate c (best first) only when it is
 * closer to the base than to every neighbour already kept; compacts 'c'
 * in place and returns how many were kept, at most m. */
static uint32_t select_neighbors(const struct mt_hnsw *h, struct mt_vec_hit *c,
                                 uint32_t nc, uint32_t m)
{
    uint32_t kept = 0;
    uint32_t i;
    uint32_t j;

    for (i = 0; i < nc && kept < m; i++) {
        int good = 1;
        for (j = 0; j < kept && good; j++)
            good = sim_nodes(h, c[i].id, c[j].id) <= c[i].score;
        if (good)
            c[kept++] = c[i];
    }
    return kept;
}

/* Adds link e -> q on 'level', pruning e's list with the heuristic when
 * it is full; the caller holds e's lock. */
static enum mt_status add_backlink_locked(struct mt_hnsw *h, struct scratch *s,
                                          uint32_t e, uint32_t q,
                                          uint32_t level)
{
    uint32_t *l = links_mut(h, e, level);
    uint32_t m = max_links(h, level);
    uint32_t i;

    if (l[0] < m) {
        l[++l[0]] = q;
        return MT_OK;
    }
    if (heap_reserve(&s->bl, m + 1) != MT_OK)
        return MT_ENOMEM;
    for (i = 0; i < m; i++) {
        s->bl.a[i].id = l[i + 1];
        s->bl.a[i].score = sim_nodes(h, e, l[i + 1]);
    }
    s->bl.a[m].id = q;
    s->bl.a[m].score = sim_nodes(h, e, q);
    qsort(s->bl.a, m + 1, sizeof *s->bl.a, hit_cmp);
    l[0] = select_neighbors(h, s->bl.a, m + 1, m);
    for (i = 0; i < l[0]; i++)
        l[i + 1] = s->bl.a[i].id;
    return MT_OK;
}

static enum mt_status add_backlink(struct mt_hnsw *h, struct scratch *s,
                                   uint32_t e, uint32_t q, uint32_t level)
{
    enum mt_status st;

    lock_node(h, e);
    st = add_backlink_locked(h, s, e, q, level);
    unlock_node(h, e);
    return st;
}

/* Links node q on 'level' to its selected neighbours in s->sel and back;
 * returns the best result as the next level's entry point. */
static enum mt_status connect(struct mt_hnsw *h, struct scratch *s, uint32_t q,
                              uint32_t level, struct mt_vec_hit *ep)
{
    uint32_t *l = links_mut(h, q, level);
    uint32_t kept = select_neighbors(h, s->sel.a, s->sel.n, h->p.M);
    uint32_t i;

    *ep = s->sel.a[0];
    lock_node(h, q);
    l[0] = kept;
    for (i = 0; i < kept; i++)
        l[i + 1] = s->sel.a[i].id;
    unlock_node(h, q);
    for (i = 0; i < kept; i++)
        if (add_backlink(h, s, s->sel.a[i].id, q, level) != MT_OK)
            return MT_ENOMEM;
    return MT_OK;
}

/* Searches each level from lq (or the top, when lower) down and links q
 * there, starting from 'ep' on level 'top'. */
static enum mt_status link_levels(struct mt_hnsw *h, struct scratch *s,
                                  uint32_t q, struct mt_vec_hit ep,
                                  uint32_t top)
{
    const int8_t *qc = mtx_vecset_code(h->vs, q);
    float qs = mtx_vecset_scale(h->vs, q);
    uint32_t lq = h->levels[q];
    uint32_t l;

    for (l = top; l > lq; l--)
        greedy(h, qc, qs, &ep, l);
    for (l = lq < top ? lq : top; l != NONE; l--) {
        if (search_layer(h, s, qc, qs, ep, l, h->p.ef_construction, NULL) !=
                MT_OK ||
            results_sorted(s) != MT_OK || connect(h, s, q, l, &ep) != MT_OK)
            return MT_ENOMEM;
    }
    return MT_OK;
}

/* Inserts node q. In a parallel build the entry point is read under the
 * global lock, which a node that will become the new top keeps for its
 * whole insert (as hnswlib does), so no one else starts from a top that
 * is not linked yet; such nodes are rare (1 in M^level). */
static enum mt_status insert(struct mt_hnsw *h, struct scratch *s, uint32_t q)
{
    uint32_t lq = h->levels[q];
    struct mt_vec_hit ep;
    enum mt_status st = MT_OK;
    uint32_t top;
    int raise;

    if (h->sync)
        pthread_mutex_lock(&h->sync->global);
    raise = h->entry == NONE || lq > h->max_level;
    ep.id = h->entry;
    top = h->max_level;
    if (h->sync && !raise)
        pthread_mutex_unlock(&h->sync->global);
    if (ep.id != NONE) {
        ep.score = sim_q(h, mtx_vecset_code(h->vs, q),
                         mtx_vecset_scale(h->vs, q), ep.id);
        st = link_levels(h, s, q, ep, top);
    }
    if (raise) {
        h->entry = q;
        h->max_level = lq;
        if (h->sync)
            pthread_mutex_unlock(&h->sync->global);
    }
    return st;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* level = floor(-ln(U) * mL) with mL = 1/ln(M), U uniform in (0, 1]. */
static enum mt_status assign_levels(struct mt_hnsw *h)
{
    double ml = 1.0 / log((double)h->p.M);
    uint64_t st = h->p.seed;
    uint64_t blocks = 0;
    uint32_t i;

    h->levels = h->levels_mem = mt_malloc(h->n);
    h->upper_off = h->upper_off_mem = mt_malloc((size_t)h->n * 4);
    if (!h->levels_mem || !h->upper_off_mem)
        return MT_ENOMEM;
    for (i = 0; i < h->n; i++) {
        double u = (double)((splitmix64(&st) >> 11) + 1) * 0x1p-53;
        double lv = floor(-log(u) * ml);
        h->levels_mem[i] = (uint8_t)(lv > HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : lv);
        h->upper_off_mem[i] = (uint32_t)blocks;
        blocks += h->levels_mem[i];
    }
    h->n_upper = blocks;
    return MT_OK;
}

static enum mt_status alloc_graph(struct mt_hnsw *h)
{
    if (assign_levels(h) != MT_OK)
        return MT_ENOMEM;
    h->links0 = h->links0_mem =
        mt_calloc((size_t)h->n * (h->M0 + 1), sizeof(uint32_t));
    h->upper = h->upper_mem =
        mt_calloc((size_t)h->n_upper * (h->p.M + 1), sizeof(uint32_t));
    return h->links0_mem && h->upper_mem ? MT_OK : MT_ENOMEM;
}

struct mt_hnsw_params mtx_hnsw_default_params(void)
{
    struct mt_hnsw_params p = {16, 200, 128, 42, 1, 0};
    return p;
}

static int params_ok(const struct mt_hnsw_params *p)
{
    return p->M >= 2 && p->M <= HNSW_MAX_M && p->ef_construction >= 1 &&
           p->ef_search >= 1 && p->threads <= BUILD_MAX_THREADS;
}

/* An index with no graph yet: parameters, kernels and the scratch pool. */
static enum mt_status hnsw_alloc(const struct mt_hnsw_params *p,
                                 struct mt_hnsw **out)
{
    struct mt_hnsw *h = mt_calloc(1, sizeof *h);

    *out = NULL;
    if (!h)
        return MT_ENOMEM;
    h->p = *p;
    h->M0 = 2 * p->M;
    h->lbits = 32;
    h->entry = NONE;
    h->k = mtx_simd_get();
    h->pool = mt_calloc(1, sizeof *h->pool);
    if (!h->pool) {
        mt_free(h);
        return MT_ENOMEM;
    }
    pthread_mutex_init(&h->pool->lock, NULL);
    *out = h;
    return MT_OK;
}

/* ==== Parallel build ==== */

/* Threads a build uses: params.threads, or one per online core for 0;
 * never more than one per 64 vectors, so tiny sets build serially. */
static uint32_t build_threads(const struct mt_hnsw *h)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t t = h->p.threads;
    uint32_t most = h->n / 64 + 1;

    if (t == 0)
        t = cores < 1 ? 1 : (uint32_t)cores;
    if (t > BUILD_MAX_THREADS)
        t = BUILD_MAX_THREADS;
    return t < most ? t : most;
}

static enum mt_status insert_all_serial(struct mt_hnsw *h)
{
    struct scratch *s = scratch_new(h);
    enum mt_status st = s ? MT_OK : MT_ENOMEM;
    uint32_t i;

    for (i = 0; st == MT_OK && i < h->n; i++)
        st = insert(h, s, i);
    scratch_free(s);
    return st;
}

/* Takes the next node until none is left or an insert failed. Nodes go
 * out one at a time in id order, so the graph grows much as the serial
 * build grows it. */
static void *build_worker(void *arg)
{
    struct mt_hnsw *h = arg;
    struct scratch *s = scratch_new(h);

    if (!s)
        atomic_store(&h->sync->failed, 1);
    while (s && !atomic_load(&h->sync->failed)) {
        uint32_t q = atomic_fetch_add(&h->sync->next, 1);
        if (q >= h->n)
            break;
        if (insert(h, s, q) != MT_OK)
            atomic_store(&h->sync->failed, 1);
    }
    scratch_free(s);
    return NULL;
}

static struct build_sync *sync_new(void)
{
    struct build_sync *y = mt_malloc(sizeof *y);
    uint32_t i;

    if (!y)
        return NULL;
    pthread_mutex_init(&y->global, NULL);
    for (i = 0; i < BUILD_STRIPES; i++)
        pthread_mutex_init(&y->stripes[i], NULL);
    atomic_init(&y->next, 0);
    atomic_init(&y->failed, 0);
    return y;
}

static void sync_free(struct build_sync *y)
{
    uint32_t i;

    if (!y)
        return;
    pthread_mutex_destroy(&y->global);
    for (i = 0; i < BUILD_STRIPES; i++)
        pthread_mutex_destroy(&y->stripes[i]);
    mt_free(y);
}

/* Runs build_worker on 'nt' threads, this one included; a thread that
 * cannot be started leaves its share to the others. */
static enum mt_status insert_all_parallel(struct mt_hnsw *h, uint32_t nt)
{
    pthread_t tid[BUILD_MAX_THREADS];
    uint32_t started = 0;
    int failed;

    h->sync = sync_new();
    if (!h->sync)
        return MT_ENOMEM;
    while (started + 1 < nt &&
           pthread_create(&tid[started], NULL, build_worker, h) == 0)
        started++;
    build_worker(h);
    while (started > 0)
        pthread_join(tid[--started], NULL);
    failed = atomic_load(&h->sync->failed);
    sync_free(h->sync);
    h->sync = NULL;
    return failed ? MT_ENOMEM : MT_OK;
}

enum mt_status mtx_hnsw_build(const struct mt_vecset *vs,
                              const struct mt_hnsw_params *params,
                              struct mt_hnsw **out)
{
    struct mt_hnsw_params p = params ? *params : mtx_hnsw_default_params();
    struct mt_hnsw *h;
    enum mt_status st;
    uint32_t nt;

    *out = NULL;
    if (!params_ok(&p))
        return MT_EINVAL;
    st = hnsw_alloc(&p, &h);
    if (st != MT_OK)
        return st;
    h->vs = vs;
    h->n = mtx_vecset_count(vs);
    h->dims = mtx_vecset_dims(vs);
    h->codes = mtx_vecset_codes(vs);
    h->scales = mtx_vecset_scales(vs);
    st = alloc_graph(h);
    nt = build_threads(h);
    if (st == MT_OK)
        st = nt > 1 ? insert_all_parallel(h, nt) : insert_all_serial(h);
    if (st != MT_OK) {
        mtx_hnsw_free(h);
        return st;
    }
    if (h->entry == NONE)
        h->max_level = 0;
    *out = h;
    return MT_OK;
}

void mtx_hnsw_free(struct mt_hnsw *h)
{
    if (!h)
        return;
    if (h->pool) {
        while (h->pool->free) {
            struct scratch *s = h->pool->free;
            h->pool->free = s->next;
            scratch_free(s);
        }
        pthread_mutex_destroy(&h->pool->lock);
        mt_free(h->pool);
    }
    mt_free(h->levels_mem);
    mt_free(h->upper_off_mem);
    mt_free(h->links0_mem);
    mt_free(h->upper_mem);
    mtx_vecset_free(h->own_vs);
    mtx_vec_file_close(h->file);
    mt_free(h);
}

uint32_t mtx_hnsw_count(const struct mt_hnsw *h)
{
    return h->n;
}

const struct mt_vecset *mtx_hnsw_vecset(const struct mt_hnsw *h)
{
    return h->vs;
}

struct mt_hnsw_params mtx_hnsw_params_of(const struct mt_hnsw *h)
{
    return h->p;
}

/* ==== Files ==== */

/* An HNSW file is a vector file (vec.h, "Files") holding the set's
 * sections and these, 64-byte aligned:
 *   HMET  u64 M, max_level, entry, n_upper, ef_construction, ef_search,
 *         seed, rescore, link_bits (in an old file: its header's
 *         aux[1..8]; version 2 and old files have no link_bits: 32)
 *   HLEV  n level bytes
 *   HOFF  n u32: each node's first upper block
 *   HL0_  n level-0 blocks of [count, M0 ids], link_bits an entry
 *         ("Link blocks"; version 2: u32)
 *   HUP_  n_upper blocks of [count, M ids], the same
 * Version 3 packs the links; version 2 files still open (u32 links),
 * and an older binary refuses a version 3 file by its version number.
 * Files written before ("MTHNSW01") open through the old reader. */
#define HNSW_META 9
#define HNSW_META_V2 8
#define PACK_CHUNK 8192u /* entries packed per write; a multiple of 8 */
#define SEC_META MT_SEG_ID('H', 'M', 'E', 'T')
#define SEC_LEVELS MT_SEG_ID('H', 'L', 'E', 'V')
#define SEC_UPPER_OFF MT_SEG_ID('H', 'O', 'F', 'F')
#define SEC_LINKS0 MT_SEG_ID('H', 'L', '0', '_')
#define SEC_UPPER MT_SEG_ID('H', 'U', 'P', '_')

static const struct mtx_vec_kind hnsw_kind = {
    HNSW_MAGIC, HNSW_VERSION, HNSW_OLDEST_VERSION, HNSW_OLD_MAGIC};

static void hnsw_meta(const struct mt_hnsw *h, uint64_t m[HNSW_META])
{
    m[0] = h->p.M;
    m[1] = h->max_level;
    m[2] = h->entry;
    m[3] = h->n_upper;
    m[4] = h->p.ef_construction;
    m[5] = h->p.ef_search;
    m[6] = h->p.seed;
    m[7] = (uint64_t)h->p.rescore;
    m[8] = link_bits(h);
}

/* Writes 'entries' entries of the array 'a' (h->lbits wide) as one
 * section of 'bits'-wide entries, PACK_CHUNK at a time so that the
 * writer's memory stays small. */
static enum mt_status put_links(const struct mt_hnsw *h,
                                struct mt_seg_writer *w, uint32_t id,
                                const void *a, uint64_t entries, uint32_t bits,
                                struct mt_error *err)
{
    size_t cap = PACK_CHUNK / 8 * bits + PACK_SLACK;
    unsigned char *buf = mt_malloc(cap);
    enum mt_status st = mtx_seg_writer_begin(w, id, err);
    uint64_t done;

    if (!buf)
        st = mt_fail(err, MT_ENOMEM, "hnsw: out of memory");
    for (done = 0; st == MT_OK && done < entries; done += PACK_CHUNK) {
        uint64_t n = entries - done < PACK_CHUNK ? entries - done : PACK_CHUNK;
        uint64_t i;
        memset(buf, 0, cap);
        for (i = 0; i < n; i++)
            entry_put(buf, i, bits, entry_get(a, done + i, h->lbits));
        st = mtx_seg_writer_write(w, buf, (size_t)((n * bits + 7) / 8), err);
    }
    if (st == MT_OK) {
        memset(buf, 0, PACK_SLACK);
        st = mtx_seg_writer_write(w, buf, PACK_SLACK, err);
    }
    mt_free(buf);
    return st;
}

static enum mt_status put_graph(const struct mt_hnsw *h,
                                struct mt_seg_writer *w, struct mt_error *err)
{
    size_t n = h->n;
    uint64_t meta[HNSW_META];
    enum mt_status st;

    hnsw_meta(h, meta);
    st = mtx_vec_file_put(w, SEC_META, meta, sizeof meta, err);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, SEC_LEVELS, h->levels, n, err);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, SEC_UPPER_OFF, h->upper_off, n * 4, err);
    if (st == MT_OK)
        st = put_links(h, w, SEC_LINKS0, h->links0, (uint64_t)n * (h->M0 + 1),
                       (uint32_t)meta[8], err);
    if (st == MT_OK)
        st = put_links(h, w, SEC_UPPER, h->upper, h->n_upper * (h->p.M + 1),
                       (uint32_t)meta[8], err);
    return st;
}

enum mt_status mtx_hnsw_write(const struct mt_hnsw *h, const char *path,
                              struct mt_error *err)
{
    struct mt_seg_writer *w = NULL;
    enum mt_status st = mtx_vec_file_create(path, &hnsw_kind, &w, err);

    if (st != MT_OK)
        return st;
    st = mtx_vecset_put_sections(h->vs, w, err);
    if (st == MT_OK)
        st = put_graph(h, w, err);
    if (st != MT_OK) {
        mtx_seg_writer_abort(w);
        return st;
    }
    return mtx_seg_writer_commit(w, err);
}

/* Metadata fields (hnsw_meta) into p; 0 when out of range. */
static int read_meta(struct mt_hnsw_params *p, const uint64_t m[HNSW_META])
{
    *p = mtx_hnsw_default_params();
    if (m[0] < 2 || m[0] > HNSW_MAX_M || m[1] > HNSW_MAX_LEVEL ||
        m[3] > UINT32_MAX || m[4] < 1 || m[4] > UINT32_MAX || m[5] < 1 ||
        m[5] > UINT32_MAX || m[7] > 1 || m[8] < 1 || m[8] > 32)
        return 0;
    p->M = (uint32_t)m[0];
    p->ef_construction = (uint32_t)m[4];
    p->ef_search = (uint32_t)m[5];
    p->seed = m[6];
    p->rescore = (int)m[7];
    return 1;
}

/* Node id's block on 'level' holds at most max_links ids, each < n. */
static int block_ok(const struct mt_hnsw *h, uint32_t id, uint32_t level)
{
    uint64_t e;
    const void *a = block_of(h, id, level, &e);
    uint32_t c = entry_get(a, e, h->lbits);
    uint32_t i;

    if (c > max_links(h, level))
        return 0;
    for (i = 1; i <= c; i++)
        if (entry_get(a, e + i, h->lbits) >= h->n)
            return 0;
    return 1;
}

/* Checks every level, block offset and link, so that a file with a valid
 * checksum but a bad graph cannot make a search read out of bounds. */
static int graph_ok(const struct mt_hnsw *h)
{
    uint32_t i;
    uint32_t l;

    if (h->n == 0)
        return h->entry == NONE && h->n_upper == 0;
    if (h->entry >= h->n || h->levels[h->entry] != h->max_level)
        return 0;
    for (i = 0; i < h->n; i++) {
        if (h->levels[i] > h->max_level ||
            (uint64_t)h->upper_off[i] + h->levels[i] > h->n_upper)
            return 0;
        for (l = 0; l <= h->levels[i]; l++)
            if (!block_ok(h, i, l))
                return 0;
    }
    return 1;
}

/* Takes the graph's arrays, in the order written. */
static enum mt_status take_graph(struct mt_hnsw *h, struct mt_error *err)
{
    struct mtx_vec_file *f = h->file;
    size_t n = h->n;
    const void *p[4] = {NULL, NULL, NULL, NULL};
    enum mt_status st;

    st = mtx_vec_file_take(f, SEC_LEVELS, n, &p[0], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(f, SEC_UPPER_OFF, n * 4, &p[1], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(
            f, SEC_LINKS0, packed_bytes((uint64_t)n * (h->M0 + 1), h->lbits),
            &p[2], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(
            f, SEC_UPPER, packed_bytes(h->n_upper * (h->p.M + 1), h->lbits),
            &p[3], err);
    if (st == MT_OK)
        st = mtx_vec_file_done(f, err);
    if (st != MT_OK)
        return st;
    h->levels = p[0];
    h->upper_off = p[1];
    h->links0 = p[2];
    h->upper = p[3];
    if (!graph_ok(h))
        return mt_fail(err, MT_EPARSE, "%s: bad graph", mtx_vec_file_name(f));
    return MT_OK;
}

static enum mt_status open_mapped(struct mt_hnsw *h, const uint64_t m[],
                                  struct mt_error *err)
{
    enum mt_status st = mtx_vecset_view(h->file, &h->own_vs, err);

    if (st != MT_OK)
        return st;
    h->vs = h->own_vs;
    h->n = mtx_vecset_count(h->vs);
    h->codes = mtx_vecset_codes(h->vs);
    h->scales = mtx_vecset_scales(h->vs);
    h->dims = mtx_vecset_dims(h->vs);
    h->max_level = (uint32_t)m[1];
    h->entry = m[2] > NONE ? 0 : (uint32_t)m[2];
    h->n_upper = m[3];
    h->lbits = (uint32_t)m[8];
    if (m[2] > NONE)
        return mt_fail(err, MT_EPARSE, "%s: bad graph",
                       mtx_vec_file_name(h->file));
    return take_graph(h, err);
}

enum mt_status mtx_hnsw_open(const char *path, struct mt_hnsw **out,
                             struct mt_error *err)
{
    struct mt_hnsw_params p;
    struct mtx_vec_file *f = NULL;
    uint64_t m[HNSW_META];
    struct mt_hnsw *h;
    enum mt_status st;

    *out = NULL;
    st = mtx_vec_file_open(path, &hnsw_kind, &f, err);
    if (st != MT_OK)
        return st;
    m[8] = 32; /* version 2 and old files: u32 links */
    st = mtx_vec_file_meta(
        f, SEC_META, m, mtx_vec_file_version(f) >= 3 ? HNSW_META : HNSW_META_V2,
        err);
    if (st == MT_OK && !read_meta(&p, m))
        st = mt_fail(err, MT_EPARSE, "%s: bad graph header", path);
    if (st != MT_OK) {
        mtx_vec_file_close(f);
        return st;
    }
    st = hnsw_alloc(&p, &h);
    if (st != MT_OK) {
        mtx_vec_file_close(f);
        return mt_fail(err, st, "%s: out of memory", path);
    }
    h->file = f;
    st = open_mapped(h, m, err);
    if (st != MT_OK) {
        mtx_hnsw_free(h);
        return st;
    }
    *out = h;
    return MT_OK;
}
