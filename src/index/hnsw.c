/* HNSW (Malkov & Yashunin) over int8 codes: seeded level assignment,
 * heuristic neighbour selection as in hnswlib, a build on all cores with
 * locked link lists (or a serial, deterministic one), pooled per-query
 * scratch with a visited bitset; its file format is hnsw_file.c. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "index/hnsw.h"
#include "index/hnsw_int.h"
#include "index/simd.h"
#include "medtrust/core.h"

#define NONE HNSW_NONE
#define PACK_SLACK HNSW_PACK_SLACK

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

/* Unpacks the block at bit 'pos' of a ('bits' wide entries, < 32) into
 * l; returns the count. The bit position steps on instead of being
 * multiplied out again for each entry. */
static uint32_t unpack_block(const unsigned char *a, uint64_t pos,
                             uint32_t bits, uint32_t most, uint32_t *l)
{
    uint64_t mask = (1ull << bits) - 1;
    uint64_t w;
    uint32_t c;
    uint32_t i;

    memcpy(&w, a + (pos >> 3), sizeof w);
    c = (uint32_t)((w >> (pos & 7)) & mask);
    c = c < most ? c : most; /* a damaged count: see read_links */
    l[0] = c;
    for (i = 1; i <= c; i++) {
        pos += bits;
        memcpy(&w, a + (pos >> 3), sizeof w);
        l[i] = (uint32_t)((w >> (pos & 7)) & mask);
    }
    return c;
}

/* ==== Level 0 as Elias-Fano blocks (version 4) ====
 *
 * Node id's level-0 list is the block at bit id * ef.bits, every block
 * the same size, so it is still found by its id. The ids, sorted
 * ascending, are split into ef.lo low bits and the rest ("high"): the
 * high part of the i-th id sets bit high + i of the block's first
 * ef.high bits (M0 + ((n - 1) >> ef.lo) + 1 of them: room for M0 ids at
 * the top of the id range), and its low bits follow those, ef.lo bits
 * each, M0 slots (unused ones zero). A block holds no count: it is the number
 * of bits set in the high part. Elias (1974), Fano (1971); as in Vigna's
 * "Quasi-succinct indices" (WSDM 2013), except that ef.lo is chosen for
 * the largest list (M0 ids) and fixed per file so that every block has
 * one size. At 1M vectors and M0 32 a block is 542 bits (67.75 bytes)
 * against 33 x 20 packed bits (82.5 bytes); at 20K 360 bits (45 bytes)
 * against 62. Sorting a list does not change a search's results: the
 * neighbours of an expanded node are all offered before the next one is
 * taken, and what a search keeps is the best ef of a total order
 * (mtx_vec_hit_better breaks ties by id), whatever the order of offers
 * (test_hnsw.c compares the hits with the build's unsorted arrays). */
#define EF_CHUNK 56u /* high-part bits read at once: one load, any shift */

/* Bits of a block with 'lo' low bits for ids below n. */
static uint64_t ef_block_bits(uint32_t n, uint32_t M0, uint32_t lo)
{
    uint64_t high = (uint64_t)M0 + (n > 0 ? (uint64_t)(n - 1) >> lo : 0) + 1;

    return high + (uint64_t)M0 * lo;
}

/* The layout for n ids and lists of up to M0: the low-bit width that
 * makes the block smallest (the smallest such width on a tie), which is
 * floor(log2(n / M0)) or next to it. */
static struct ef_geom ef_layout(uint32_t n, uint32_t M0)
{
    struct ef_geom g = {0, 0, ef_block_bits(n, M0, 0)};
    uint32_t lo;

    for (lo = 1; lo < 32; lo++) {
        uint64_t b = ef_block_bits(n, M0, lo);
        if (b < g.bits) {
            g.bits = b;
            g.lo = lo;
        }
    }
    g.high = (uint32_t)(g.bits - (uint64_t)M0 * g.lo);
    return g;
}

/* 'width' (<= 57) bits of a at bit pos; the array has 8 bytes of slack. */
static uint64_t bits_get(const unsigned char *a, uint64_t pos, uint32_t width)
{
    uint64_t w;

    memcpy(&w, a + (pos >> 3), sizeof w);
    return (w >> (pos & 7)) & ((1ull << width) - 1);
}

/* High-part bits [base, base + EF_CHUNK) of the block at bit pos, those
 * past the high part cleared. */
static uint64_t ef_chunk(const struct mt_hnsw *h, uint64_t pos, uint32_t base)
{
    uint32_t left = h->ef.high - base;

    return bits_get(h->links0, pos + base, left < EF_CHUNK ? left : EF_CHUNK);
}

/* Decodes node id's level-0 block into l as [count, ids ascending];
 * returns the count. Each set bit of the high part is the next id: its
 * position less the ids before it is the id's high part. */
static uint32_t unpack_ef(const struct mt_hnsw *h, uint32_t id, uint32_t *l,
                          uint32_t *top)
{
    const unsigned char *a = h->links0;
    uint64_t pos = (uint64_t)id * h->ef.bits;
    uint64_t low = pos + h->ef.high;
    uint32_t lo = h->ef.lo;
    uint32_t c = 0;
    uint32_t hi = 0;
    uint32_t base;

    for (base = 0; base < h->ef.high; base += EF_CHUNK) {
        uint64_t w = ef_chunk(h, pos, base);
        while (w && c < h->M0) { /* more bits set: damage, read_links */
            hi = base + (uint32_t)__builtin_ctzll(w) - c;
            w &= w - 1;
            l[++c] = (hi << lo) | (uint32_t)bits_get(a, low, lo);
            low += lo;
        }
    }
    l[0] = c;
    *top = hi; /* the high parts rise: the last is the largest */
    return c;
}

/* Node id's level-0 block holds at most M0 ids, each below n: the high
 * part's set bits are counted before unpack_ef writes that many. (An id
 * whose high part would not fit 32 bits wraps; what is checked is that
 * every id a search reads is below n.) */
static int ef_block_ok(const struct mt_hnsw *h, uint32_t id)
{
    uint32_t l[2 * HNSW_MAX_M + 1];
    uint64_t pos = (uint64_t)id * h->ef.bits;
    uint32_t c = 0;
    uint32_t top;
    uint32_t base;
    uint32_t i;

    for (base = 0; base < h->ef.high; base += EF_CHUNK)
        c += (uint32_t)__builtin_popcountll(ef_chunk(h, pos, base));
    if (c > h->M0)
        return 0;
    unpack_ef(h, id, l, &top);
    for (i = 1; i <= c; i++)
        if (l[i] >= h->n)
            return 0;
    return 1;
}

/* ==== Nodes with upper levels ==== */

/* Index of node id in a version 4 file's table; n_up when absent. */
static uint32_t up_find(const struct mt_hnsw *h, uint32_t id)
{
    uint32_t lo = 0;
    uint32_t hi = h->n_up;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->up_ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->n_up && h->up_ids[lo] == id ? lo : h->n_up;
}

static uint32_t level_of(const struct mt_hnsw *h, uint32_t id)
{
    uint32_t j;

    if (h->levels)
        return h->levels[id];
    j = up_find(h, id);
    return j < h->n_up ? h->up_first[j + 1] - h->up_first[j] : 0;
}

/* First upper block of node id (level >= 1). The table's binary search
 * costs about 16 steps at 1M vectors, and a query takes it only on the
 * upper levels' few greedy hops. */
static uint32_t upper_first(const struct mt_hnsw *h, uint32_t id)
{
    if (h->upper_off)
        return h->upper_off[id];
    return h->up_first[up_find(h, id)];
}

/* The array and first entry of node id's block on 'level' (<= its
 * level), for [count, ids] blocks. */
static const void *block_of(const struct mt_hnsw *h, uint32_t id,
                            uint32_t level, uint64_t *e)
{
    if (level == 0) {
        *e = (uint64_t)id * (h->M0 + 1);
        return h->links0;
    }
    *e = ((uint64_t)upper_first(h, id) + level - 1) * (h->p.M + 1);
    return h->upper;
}

/* The links of l[1..l[0]] that a search may follow: each below n and,
 * on an upper level, of a node on that level (whose block there is read
 * next); l[0] becomes their count. */
static uint32_t sound_links(const struct mt_hnsw *h, uint32_t level,
                            uint32_t *l)
{
    uint32_t c = 0;
    uint32_t i;

    for (i = 1; i <= l[0]; i++)
        if (l[i] < h->n && (level == 0 || level_of(h, l[i]) >= level))
            l[++c] = l[i];
    l[0] = c;
    return c;
}

/* Copies [count, ids...] of node id on 'level' into l (room for
 * max_links + 1); returns the count. A file's blocks are not checked at
 * open (a 41.8M-vector index has 3 GB of them; mtx_hnsw_check reads
 * every one), so a block is read defensively: at most max_links ids,
 * and only the sound ones kept (sound_links). Over a damaged block a
 * search finds worse neighbours, never reads out of bounds. A few
 * compares a link, against the distance each costs. */
static uint32_t read_links(const struct mt_hnsw *h, uint32_t id, uint32_t level,
                           uint32_t *l)
{
    uint32_t most = max_links(h, level);
    uint64_t e;
    const void *a;

    if (level == 0 && h->ef.bits) {
        uint32_t top;
        uint32_t c = unpack_ef(h, id, l, &top);
        /* every id is below (top + 1) << lo: when that is at most n, all
         * are sound without a look at each (a node's list, but near the
         * top of the id range) */
        if (((uint64_t)top + 1) << h->ef.lo <= h->n)
            return c;
        return sound_links(h, level, l);
    }
    a = block_of(h, id, level, &e);
    if (h->lbits == 32) {
        const uint32_t *src = (const uint32_t *)a + e;
        l[0] = src[0] < most ? src[0] : most;
        memcpy(l + 1, src + 1, (size_t)l[0] * sizeof *l);
    } else {
        unpack_block(a, e * h->lbits, h->lbits, most, l);
    }
    return sound_links(h, level, l);
}

/* Where node id's block on 'level' starts, for a prefetch. */
static const void *block_addr(const struct mt_hnsw *h, uint32_t id,
                              uint32_t level)
{
    uint64_t e;
    const unsigned char *a;

    if (level == 0 && h->ef.bits)
        return (const unsigned char *)h->links0 +
               (((uint64_t)id * h->ef.bits) >> 3);
    a = block_of(h, id, level, &e);
    return a + ((e * h->lbits) >> 3);
}

/* Node id's block on 'level' holds at most max_links ids, each < n and,
 * on an upper level, of a node on that level (a search reads that
 * node's block there next). */
int mtx_hnsw_block_ok(const struct mt_hnsw *h, uint32_t id, uint32_t level)
{
    uint64_t e;
    const void *a;
    uint32_t c;
    uint32_t i;

    if (level == 0 && h->ef.bits)
        return ef_block_ok(h, id);
    a = block_of(h, id, level, &e);
    c = entry_get(a, e, h->lbits);
    if (c > max_links(h, level))
        return 0;
    for (i = 1; i <= c; i++) {
        uint32_t x = entry_get(a, e + i, h->lbits);
        if (x >= h->n || (level > 0 && level_of(h, x) < level))
            return 0;
    }
    return 1;
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
    return sim_q(h, h->codes + (size_t)a * h->dims, h->scales[a], b);
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
    const char *c = (const char *)(h->codes + (size_t)id * h->dims);
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

/* Moves the results heap into s->sel, sorted best first, emptying it:
 * the heap's worst is popped into the last free slot until none is
 * left. The order is mtx_vec_hit_better's total order, the one qsort
 * with mtx_vec_hit_cmp gave; popping the heap it already is costs
 * about half the instructions of a generic sort with a compare call a
 * step (the build sorts ef_construction results for every node and
 * level: about 5 % of its instructions went to qsort). */
static enum mt_status results_sorted(struct scratch *s)
{
    uint32_t i = s->res.n;

    if (heap_reserve(&s->sel, s->res.n) != MT_OK)
        return MT_ENOMEM;
    s->sel.n = s->res.n;
    while (i > 0) {
        s->sel.a[--i] = s->res.a[0];
        heap_pop(&s->res, 1);
    }
    return MT_OK;
}

/* Sorts a[0..n) best first (mtx_vec_hit_better) by insertion: a pruned
 * link list is short (2M + 1) and mostly in order already. */
static void sort_hits_small(struct mt_vec_hit *a, uint32_t n)
{
    uint32_t i;

    for (i = 1; i < n; i++) {
        struct mt_vec_hit x = a[i];
        uint32_t j = i;
        while (j > 0 && mtx_vec_hit_better(x, a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
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
    sort_hits_small(s->bl.a, m + 1);
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

enum mt_status mtx_hnsw_alloc(const struct mt_hnsw_params *p,
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
    uint32_t t = h->p.threads ? h->p.threads : (uint32_t)mtx_online_cpus();
    uint32_t most = h->n / 64 + 1;

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
    st = mtx_hnsw_alloc(&p, &h);
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

/* ==== For hnsw_file.c ==== */

uint32_t mtx_hnsw_read_links(const struct mt_hnsw *h, uint32_t id,
                             uint32_t level, uint32_t *l)
{
    return read_links(h, id, level, l);
}

uint32_t mtx_hnsw_level_of(const struct mt_hnsw *h, uint32_t id)
{
    return level_of(h, id);
}

uint32_t mtx_hnsw_link_bits(const struct mt_hnsw *h)
{
    return link_bits(h);
}

size_t mtx_hnsw_packed_bytes(uint64_t entries, uint32_t bits)
{
    return packed_bytes(entries, bits);
}

struct ef_geom mtx_hnsw_ef_layout(uint32_t n, uint32_t M0)
{
    return ef_layout(n, M0);
}
