/* The HNSW file format: the graph of an index written after its vector
 * set's sections (level 0 as Elias-Fano blocks, a table of the nodes
 * with upper levels, packed upper links), and read back through mmap
 * with every block checked; versions 2 and 3 still read. */
#include <stdlib.h>
#include <string.h>

#include "index/hnsw_int.h"
#include "index/segment.h"
#include "index/vec.h"
#include "medtrust/core.h"

#define HNSW_MAGIC "MTHNSW02"
/* 4: level 0 as Elias-Fano blocks, a table of the nodes with upper levels */
#define HNSW_VERSION 4u
#define HNSW_PACKED_VERSION 3u    /* 3: links bit-packed (HMET's link_bits) */
#define HNSW_OLDEST_VERSION 2u    /* 2: links as u32, still read */
#define HNSW_OLD_MAGIC "MTHNSW01" /* the format before the segment one */

/* ==== Files ==== */

/* An HNSW file is a vector file (vec.h, "Files") holding the set's
 * sections and these, 64-byte aligned:
 *   HMET  u64 M, max_level, entry, n_upper, ef_construction, ef_search,
 *         seed, rescore, link_bits, n_up (in an old file: its header's
 *         aux[1..8]; version 2 and old files have no link_bits: 32;
 *         versions before 4 no n_up)
 *   HUID  n_up u32: the nodes with upper levels (about n / M), ascending
 *   HUFS  n_up + 1 u32: each one's first upper block, then n_upper; a
 *         node's level is the difference to the next
 *   HL0_  n level-0 Elias-Fano blocks (hnsw.c, "Level 0 as Elias-Fano
 *         blocks"), 8 bytes of slack
 *   HUP_  n_upper blocks of [count, M ids], link_bits an entry (hnsw.c, "Link
 *         blocks"), in the order of HUID, a node's levels from 1 up
 * Versions 2 and 3 had HLEV (n level bytes) and HOFF (n u32 first upper
 * blocks) where version 4 has HUID and HUFS, 5 bytes a vector where the
 * table takes about 8 / M, and [count, M0 ids] level-0 blocks (version 3
 * packed to link_bits, version 2 u32); both still open, and an older
 * binary refuses a newer file by its version number. Files written
 * before ("MTHNSW01") open through the old reader. */
#define HNSW_META 10
#define HNSW_META_V3 9
#define HNSW_META_V2 8
#define BITW_BYTES 8192u /* bytes a bit writer buffers before writing */
#define SEC_META MT_SEG_ID('H', 'M', 'E', 'T')
#define SEC_LEVELS MT_SEG_ID('H', 'L', 'E', 'V')
#define SEC_UPPER_OFF MT_SEG_ID('H', 'O', 'F', 'F')
#define SEC_UP_IDS MT_SEG_ID('H', 'U', 'I', 'D')
#define SEC_UP_FIRST MT_SEG_ID('H', 'U', 'F', 'S')
#define SEC_LINKS0 MT_SEG_ID('H', 'L', '0', '_')
#define SEC_UPPER MT_SEG_ID('H', 'U', 'P', '_')

/* The links are read where a search goes (read_links checks each block
 * it reads), their CRCs and every block by mtx_hnsw_check. */
static const uint32_t hnsw_lazy[] = {MT_VEC_LAZY_SECTIONS, SEC_LINKS0,
                                     SEC_UPPER, 0};
static const struct mtx_vec_kind hnsw_kind = {
    HNSW_MAGIC, HNSW_VERSION, HNSW_OLDEST_VERSION, HNSW_OLD_MAGIC, hnsw_lazy};

/* ==== Writing ==== */

/* A section written as a stream of bit fields, little-endian (field f
 * at the bits after the fields before it), through a small buffer. */
struct bitw {
    struct mt_seg_writer *w;
    struct mt_error *err;
    unsigned char buf[BITW_BYTES + HNSW_PACK_SLACK];
    uint64_t pos; /* bits in buf */
    enum mt_status st;
};

/* Writes the buffer's whole bytes and keeps its last partial byte. */
static void bitw_flush(struct bitw *b)
{
    size_t whole = (size_t)(b->pos >> 3);

    if (b->st == MT_OK && whole > 0)
        b->st = mtx_seg_writer_write(b->w, b->buf, whole, b->err);
    b->buf[0] = b->buf[whole];
    memset(b->buf + 1, 0, sizeof b->buf - 1);
    b->pos &= 7;
}

/* Appends the low 'width' (<= 32) bits of v. */
static void bitw_put(struct bitw *b, uint32_t width, uint64_t v)
{
    uint64_t w;

    if (b->pos + width > (uint64_t)BITW_BYTES * 8)
        bitw_flush(b);
    memcpy(&w, b->buf + (b->pos >> 3), sizeof w);
    w |= (v & ((1ull << width) - 1)) << (b->pos & 7);
    memcpy(b->buf + (b->pos >> 3), &w, sizeof w);
    b->pos += width;
}

static void bitw_zeros(struct bitw *b, uint64_t n)
{
    for (; n > 32; n -= 32)
        bitw_put(b, 32, 0);
    bitw_put(b, (uint32_t)n, 0);
}

static enum mt_status bitw_begin(struct bitw *b, struct mt_seg_writer *w,
                                 uint32_t id, struct mt_error *err)
{
    memset(b->buf, 0, sizeof b->buf);
    b->w = w;
    b->err = err;
    b->pos = 0;
    b->st = mtx_seg_writer_begin(w, id, err);
    return b->st;
}

/* Writes what is left, the last byte padded with zeros, and the slack. */
static enum mt_status bitw_end(struct bitw *b)
{
    bitw_put(b, (uint32_t)((8 - (b->pos & 7)) & 7), 0);
    bitw_flush(b);
    if (b->st == MT_OK)
        b->st = mtx_seg_writer_write(b->w, b->buf + 1, HNSW_PACK_SLACK, b->err);
    return b->st;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a;
    uint32_t y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Appends node id's level-0 list as an Elias-Fano block of layout g. */
static void put_ef_block(const struct mt_hnsw *h, struct ef_geom g,
                         struct bitw *b, uint32_t id)
{
    uint32_t l[2 * HNSW_MAX_M + 1];
    uint32_t c = mtx_hnsw_read_links(h, id, 0, l);
    uint64_t at = 0; /* high-part bits written */
    uint32_t i;

    qsort(l + 1, c, sizeof *l, u32_cmp);
    for (i = 0; i < c; i++) {
        uint64_t bit = (uint64_t)(l[i + 1] >> g.lo) + i;
        bitw_zeros(b, bit - at);
        bitw_put(b, 1, 1);
        at = bit + 1;
    }
    bitw_zeros(b, g.high - at);
    for (i = 0; i < c; i++)
        bitw_put(b, g.lo, l[i + 1]);
    bitw_zeros(b, (uint64_t)(h->M0 - c) * g.lo);
}

/* Appends node id's block on 'level' as [count, M ids], 'bits' an entry,
 * the slots past the count zero. */
static void put_block(const struct mt_hnsw *h, struct bitw *b, uint32_t id,
                      uint32_t level, uint32_t bits)
{
    uint32_t l[HNSW_MAX_M + 1];
    uint32_t c = mtx_hnsw_read_links(h, id, level, l);
    uint32_t i;

    for (i = 0; i <= c; i++)
        bitw_put(b, bits, l[i]);
    bitw_zeros(b, (uint64_t)(h->p.M - c) * bits);
}

/* The table of nodes with upper levels, in id order: ids[n_up] and
 * first[n_up + 1] (the upper blocks as written, renumbered in that
 * order); caller frees both. */
static enum mt_status up_table(const struct mt_hnsw *h, uint32_t **ids,
                               uint32_t **first, uint32_t *n_up)
{
    uint32_t k = 0;
    uint32_t i;

    *ids = mt_malloc(((size_t)h->n + 1) * sizeof **ids);
    *first = mt_malloc(((size_t)h->n + 2) * sizeof **first);
    if (!*ids || !*first)
        return MT_ENOMEM;
    (*first)[0] = 0;
    for (i = 0; i < h->n; i++) {
        uint32_t lv = mtx_hnsw_level_of(h, i);
        if (lv == 0)
            continue;
        (*ids)[k] = i;
        (*first)[k + 1] = (*first)[k] + lv;
        k++;
    }
    *n_up = k;
    return MT_OK;
}

static void hnsw_meta(const struct mt_hnsw *h, uint32_t n_up,
                      uint64_t m[HNSW_META])
{
    m[0] = h->p.M;
    m[1] = h->max_level;
    m[2] = h->entry;
    m[3] = h->n_upper;
    m[4] = h->p.ef_construction;
    m[5] = h->p.ef_search;
    m[6] = h->p.seed;
    m[7] = (uint64_t)h->p.rescore;
    m[8] = mtx_hnsw_link_bits(h);
    m[9] = n_up;
}

/* HL0_ and HUP_ (in the order of 'ids'). */
static enum mt_status put_links(const struct mt_hnsw *h,
                                struct mt_seg_writer *w, const uint32_t *ids,
                                uint32_t n_up, struct mt_error *err)
{
    struct ef_geom g = mtx_hnsw_ef_layout(h->n, h->M0);
    struct bitw *b = mt_malloc(sizeof *b);
    uint32_t bits = mtx_hnsw_link_bits(h);
    enum mt_status st;
    uint32_t i;
    uint32_t l;

    if (!b)
        return mt_fail(err, MT_ENOMEM, "hnsw: out of memory");
    if (bitw_begin(b, w, SEC_LINKS0, err) == MT_OK) {
        for (i = 0; i < h->n; i++)
            put_ef_block(h, g, b, i);
        bitw_end(b);
    }
    if (b->st == MT_OK && bitw_begin(b, w, SEC_UPPER, err) == MT_OK) {
        for (i = 0; i < n_up; i++)
            for (l = 1; l <= mtx_hnsw_level_of(h, ids[i]); l++)
                put_block(h, b, ids[i], l, bits);
        bitw_end(b);
    }
    st = b->st;
    mt_free(b);
    return st;
}

static enum mt_status put_graph(const struct mt_hnsw *h,
                                struct mt_seg_writer *w, struct mt_error *err)
{
    uint64_t meta[HNSW_META];
    uint32_t *ids = NULL;
    uint32_t *first = NULL;
    uint32_t n_up = 0;
    enum mt_status st = up_table(h, &ids, &first, &n_up);

    if (st != MT_OK)
        st = mt_fail(err, st, "hnsw: out of memory");
    hnsw_meta(h, n_up, meta);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, SEC_META, meta, sizeof meta, err);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, SEC_UP_IDS, ids, (size_t)n_up * 4, err);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, SEC_UP_FIRST, first, ((size_t)n_up + 1) * 4,
                              err);
    if (st == MT_OK)
        st = put_links(h, w, ids, n_up, err);
    mt_free(ids);
    mt_free(first);
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

/* ==== Reading ==== */

/* Metadata fields (hnsw_meta) into p; 0 when out of range. */
static int read_meta(struct mt_hnsw_params *p, const uint64_t m[HNSW_META])
{
    *p = mtx_hnsw_default_params();
    if (m[0] < 2 || m[0] > HNSW_MAX_M || m[1] > HNSW_MAX_LEVEL ||
        m[3] > UINT32_MAX || m[4] < 1 || m[4] > UINT32_MAX || m[5] < 1 ||
        m[5] > UINT32_MAX || m[7] > 1 || m[8] < 1 || m[8] > 32 ||
        m[9] > UINT32_MAX)
        return 0;
    p->M = (uint32_t)m[0];
    p->ef_construction = (uint32_t)m[4];
    p->ef_search = (uint32_t)m[5];
    p->seed = m[6];
    p->rescore = (int)m[7];
    return 1;
}

/* A version 4 file's table: ids ascending below n, levels 1..max_level,
 * first blocks from 0 to n_upper. */
static int table_ok(const struct mt_hnsw *h)
{
    uint32_t j;

    if (h->levels)
        return 1;
    if (h->up_first[0] != 0 || h->up_first[h->n_up] != h->n_upper)
        return 0;
    for (j = 0; j < h->n_up; j++) {
        uint32_t lv = h->up_first[j + 1] - h->up_first[j];
        if (h->up_ids[j] >= h->n || (j > 0 && h->up_ids[j] <= h->up_ids[j - 1]))
            return 0;
        if (h->up_first[j + 1] <= h->up_first[j] || lv > h->max_level)
            return 0;
    }
    return 1;
}

/* A version 2 or 3 file's levels and upper offsets. */
static int dense_ok(const struct mt_hnsw *h)
{
    uint32_t i;

    for (i = 0; h->levels && i < h->n; i++)
        if (h->levels[i] > h->max_level ||
            (uint64_t)h->upper_off[i] + h->levels[i] > h->n_upper)
            return 0;
    return 1;
}

/* Checks the entry point, the levels and every block offset, so that a
 * search, which reads each block defensively (hnsw.c, read_links),
 * cannot read out of bounds: at open, O(nodes with upper levels) for a
 * version 4 file. */
static int tables_ok(const struct mt_hnsw *h)
{
    if (h->n == 0)
        return h->entry == HNSW_NONE && h->n_upper == 0 && h->n_up == 0;
    return h->entry < h->n && table_ok(h) && dense_ok(h) &&
           mtx_hnsw_level_of(h, h->entry) == h->max_level;
}

/* Checks every block as written (counts, ids, levels), which the open
 * leaves: mtx_hnsw_check. */
static int blocks_ok(const struct mt_hnsw *h)
{
    uint32_t i;
    uint32_t l;

    for (i = 0; i < h->n; i++) {
        uint32_t lv = mtx_hnsw_level_of(h, i);
        for (l = 0; l <= lv; l++)
            if (!mtx_hnsw_block_ok(h, i, l))
                return 0;
    }
    return 1;
}

/* Takes the sections of a version 4 file before the links. */
static enum mt_status take_table(struct mt_hnsw *h, struct mt_error *err)
{
    const void *p[2] = {NULL, NULL};
    enum mt_status st;

    st =
        mtx_vec_file_take(h->file, SEC_UP_IDS, (size_t)h->n_up * 4, &p[0], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(h->file, SEC_UP_FIRST, ((size_t)h->n_up + 1) * 4,
                               &p[1], err);
    h->up_ids = p[0];
    h->up_first = p[1];
    return st;
}

/* Takes HLEV and HOFF of a version 2 or 3 file. */
static enum mt_status take_dense(struct mt_hnsw *h, struct mt_error *err)
{
    const void *p[2] = {NULL, NULL};
    enum mt_status st;

    st = mtx_vec_file_take(h->file, SEC_LEVELS, h->n, &p[0], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(h->file, SEC_UPPER_OFF, (size_t)h->n * 4, &p[1],
                               err);
    h->levels = p[0];
    h->upper_off = p[1];
    return st;
}

/* Takes the graph's arrays, in the order written. */
static enum mt_status take_graph(struct mt_hnsw *h, int v4,
                                 struct mt_error *err)
{
    struct mtx_vec_file *f = h->file;
    uint64_t l0 = (uint64_t)h->n * (h->M0 + 1);
    const void *p[2] = {NULL, NULL};
    enum mt_status st = v4 ? take_table(h, err) : take_dense(h, err);

    if (v4)
        h->ef = mtx_hnsw_ef_layout(h->n, h->M0);
    if (st == MT_OK)
        st = mtx_vec_file_take(f, SEC_LINKS0,
                               v4 ? mtx_hnsw_packed_bytes(h->n * h->ef.bits, 1)
                                  : mtx_hnsw_packed_bytes(l0, h->lbits),
                               &p[0], err);
    if (st == MT_OK)
        st = mtx_vec_file_take(
            f, SEC_UPPER,
            mtx_hnsw_packed_bytes(h->n_upper * (h->p.M + 1), h->lbits), &p[1],
            err);
    if (st == MT_OK)
        st = mtx_vec_file_done(f, err);
    if (st != MT_OK)
        return st;
    h->links0 = p[0];
    h->upper = p[1];
    if (!tables_ok(h))
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
    h->entry = m[2] > HNSW_NONE ? 0 : (uint32_t)m[2];
    h->n_upper = m[3];
    h->lbits = (uint32_t)m[8];
    h->n_up = (uint32_t)m[9];
    if (m[2] > HNSW_NONE || h->n_up > h->n)
        return mt_fail(err, MT_EPARSE, "%s: bad graph",
                       mtx_vec_file_name(h->file));
    return take_graph(h, mtx_vec_file_version(h->file) >= HNSW_VERSION, err);
}

/* HMET's fields in a file of this version. */
static size_t meta_fields(uint32_t version)
{
    if (version >= HNSW_VERSION)
        return HNSW_META;
    return version >= HNSW_PACKED_VERSION ? HNSW_META_V3 : HNSW_META_V2;
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
    m[9] = 0;  /* before version 4: no table */
    st = mtx_vec_file_meta(f, SEC_META, m, meta_fields(mtx_vec_file_version(f)),
                           err);
    if (st == MT_OK && !read_meta(&p, m))
        st = mt_fail(err, MT_EPARSE, "%s: bad graph header", path);
    if (st != MT_OK) {
        mtx_vec_file_close(f);
        return st;
    }
    st = mtx_hnsw_alloc(&p, &h);
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
    /* The open read the tables in order (checksums, tables_ok); a
     * search reads a few hundred scattered nodes. */
    mtx_vec_file_advise_random(f);
    *out = h;
    return MT_OK;
}

enum mt_status mtx_hnsw_check(const struct mt_hnsw *h,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err)
{
    enum mt_status st;

    if (!h->file)
        return MT_OK;
    st = mtx_vec_file_check(h->file, step, user, err);
    if (st == MT_OK && !blocks_ok(h))
        st = mt_fail(err, MT_EPARSE, "%s: bad graph",
                     mtx_vec_file_name(h->file));
    return st;
}

uint64_t mtx_hnsw_check_bytes(const struct mt_hnsw *h)
{
    return h->file ? mtx_vec_file_check_bytes(h->file) : 0;
}
