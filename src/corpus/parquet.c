/* Parquet files: the footer, the flat top-level columns, and one column
 * chunk of one row group decoded at a time (pages v1 and v2, PLAIN and
 * dictionary values, RLE booleans, RLE/bit-packed definition levels;
 * UNCOMPRESSED, SNAPPY, GZIP and ZSTD pages), as parquet-format's
 * Encodings.md and the Thrift definitions say. Memory is bounded by the
 * column chunks of one row group, never by the file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "corpus/parquet.h"
#include "medtrust/core.h"

#define FOOTER_MAX ((uint32_t)64 << 20) /* FileMetaData bytes */
#define CHUNK_MAX ((int64_t)1 << 30)    /* one column chunk, stored */
#define PAGE_MAX ((int32_t)1 << 30)     /* one page, decompressed */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define GROUP_ROWS_MAX ((int64_t)1 << 20)
#else
#define GROUP_ROWS_MAX ((int64_t)64 << 20) /* pyarrow's old default cap */
#endif

/* Encodings (parquet.thrift's Encoding). */
enum {
    ENC_PLAIN = 0,
    ENC_PLAIN_DICT = 2,
    ENC_RLE = 3,
    ENC_DELTA_INTS = 5,
    ENC_DELTA_LENGTHS = 6,
    ENC_DELTA_STRINGS = 7,
    ENC_RLE_DICT = 8,
    ENC_SPLIT = 9
};
/* Codecs (CompressionCodec). */
enum { CODEC_NONE = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };

struct top {
    size_t schema; /* index in the schema list */
    size_t leaf;   /* its first leaf (column chunk) */
    int nested;
};

struct mtx_pq {
    char *path;
    int fd;
    uint64_t size;
    struct mtx_pq_meta m;
    struct top *tops;
    size_t ntops;
    size_t nleaves;
};

static const char *type_name(int t)
{
    static const char *const names[] = {
        "BOOLEAN", "INT32",  "INT64",      "INT96",
        "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};

    return t >= 0 && t <= 7 ? names[t] : "unknown";
}

static const char *codec_name(int c)
{
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP",
                                        "LZO",          "BROTLI", "LZ4",
                                        "ZSTD",         "LZ4_RAW"};

    return c >= 0 && c <= 7 ? names[c] : "unknown";
}

/* ==== Opening: footer and schema ==== */

static enum mt_status read_at(struct mtx_pq *q, uint64_t off, void *p, size_t n,
                              struct mt_error *err)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = pread(q->fd, (char *)p + got, n - got, (off_t)(off + got));

        if (r <= 0)
            return mt_fail(err, r < 0 ? MT_EIO : MT_EPARSE,
                           "%s: %s at byte %llu", q->path,
                           r < 0 ? "read error" : "file ends early",
                           (unsigned long long)(off + got));
        got += (size_t)r;
    }
    return MT_OK;
}

/* Walks the schema tree (depth first, as the column chunks are ordered):
 * each top-level field, its first leaf, and whether it is nested. */
static enum mt_status index_schema(struct mtx_pq *q, struct mt_error *err)
{
    const struct mtx_pq_schema *s = q->m.s;
    size_t i = 1, leaf = 0, t;

    if (q->m.ns < 2 || s[0].nchild <= 0 || (size_t)s[0].nchild >= q->m.ns)
        return mt_fail(err, MT_EPARSE, "%s: the schema has no columns",
                       q->path);
    q->ntops = (size_t)s[0].nchild;
    q->tops = mt_calloc(q->ntops, sizeof *q->tops);
    if (!q->tops)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (t = 0; t < q->ntops; t++) {
        uint64_t pending = 1;

        if (i >= q->m.ns)
            break;
        q->tops[t].schema = i;
        q->tops[t].leaf = leaf;
        q->tops[t].nested = s[i].nchild > 0 || s[i].rep == 2;
        while (pending && i < q->m.ns) {
            pending--;
            if (s[i].nchild > 0)
                pending += (uint64_t)s[i].nchild;
            else
                leaf++;
            i++;
        }
        if (pending)
            break;
    }
    if (t < q->ntops || i != q->m.ns)
        return mt_fail(err, MT_EPARSE,
                       "%s: the schema's fields do not add up to its "
                       "children counts",
                       q->path);
    q->nleaves = leaf;
    return MT_OK;
}

static enum mt_status check_groups(struct mtx_pq *q, struct mt_error *err)
{
    size_t g;

    for (g = 0; g < q->m.ng; g++) {
        if (q->m.g[g].nc != q->nleaves)
            return mt_fail(err, MT_EPARSE,
                           "%s: row group %zu has %zu column chunks, the "
                           "schema %zu columns",
                           q->path, g, q->m.g[g].nc, q->nleaves);
        if (q->m.g[g].rows < 0)
            return mt_fail(err, MT_EPARSE,
                           "%s: row group %zu: negative "
                           "row count",
                           q->path, g);
    }
    return MT_OK;
}

static enum mt_status read_footer(struct mtx_pq *q, struct mt_error *err)
{
    unsigned char tail[8], head[4];
    uint32_t len;
    uint8_t *meta;
    enum mt_status st;

    if (q->size < 12)
        return mt_fail(err, MT_EPARSE,
                       "%s: not a Parquet file (%llu bytes, too short)",
                       q->path, (unsigned long long)q->size);
    st = read_at(q, 0, head, 4, err);
    if (st == MT_OK)
        st = read_at(q, q->size - 8, tail, 8, err);
    if (st != MT_OK)
        return st;
    if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: not a Parquet file (no PAR1 magic at its %s; "
                       "an encrypted or truncated file?)",
                       q->path, memcmp(head, "PAR1", 4) ? "start" : "end");
    len = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
          (uint32_t)tail[3] << 24;
    if (len > q->size - 12 || len > FOOTER_MAX)
        return mt_fail(err, MT_EPARSE,
                       "%s: footer length %u does not fit the file", q->path,
                       len);
    meta = mt_malloc(len ? len : 1);
    if (!meta)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = read_at(q, q->size - 8 - len, meta, len, err);
    if (st == MT_OK && mtx_pq_meta_parse(meta, len, &q->m, err) != MT_OK)
        st = mt_error_prefix(err, "%s: footer", q->path);
    mt_free(meta);
    return st;
}

enum mt_status mtx_pq_open(const char *path, struct mtx_pq **out,
                           struct mt_error *err)
{
    struct mtx_pq *q = mt_calloc(1, sizeof *q);
    struct stat sb;
    enum mt_status st = MT_OK;

    *out = NULL;
    if (!q || !(q->path = mt_strdup(path))) {
        mt_free(q);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    q->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (q->fd < 0 || fstat(q->fd, &sb) != 0)
        st = mt_fail(err, MT_EIO, "%s: cannot open: %s", path, strerror(errno));
    q->size = st == MT_OK ? (uint64_t)sb.st_size : 0;
    if (st == MT_OK)
        st = read_footer(q, err);
    if (st == MT_OK)
        st = index_schema(q, err);
    if (st == MT_OK)
        st = check_groups(q, err);
    if (st != MT_OK) {
        mtx_pq_close(q);
        return st;
    }
    *out = q;
    return MT_OK;
}

void mtx_pq_close(struct mtx_pq *q)
{
    if (!q)
        return;
    if (q->fd >= 0)
        close(q->fd);
    mtx_pq_meta_free(&q->m);
    mt_free(q->tops);
    mt_free(q->path);
    mt_free(q);
}

static const struct top *top_of_leaf(const struct mtx_pq *q, size_t leaf)
{
    size_t t;

    for (t = 0; t < q->ntops; t++)
        if (q->tops[t].leaf == leaf && !q->tops[t].nested)
            return &q->tops[t];
    return NULL;
}

/* A missing column, named with the file's columns (the first 400 bytes of
 * their names), so the right --*-col is one read away. */
static enum mt_status no_column(const struct mtx_pq *q, const char *name,
                                struct mt_error *err)
{
    char list[400] = "";
    size_t t, o = 0;

    for (t = 0; t < q->ntops && o + 1 < sizeof list; t++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", t ? ", " : "",
                         q->m.s[q->tops[t].schema].name);

        o += w > 0 ? (size_t)w : 0;
    }
    return mt_fail(err, MT_EPARSE,
                   "%s: no column named '%s' (its columns: %s%s)", q->path,
                   name, list, o + 1 >= sizeof list ? "..." : "");
}

enum mt_status mtx_pq_find(struct mtx_pq *q, const char *name, size_t *col,
                           int *type, struct mt_error *err)
{
    size_t t;

    for (t = 0; t < q->ntops; t++) {
        const struct mtx_pq_schema *s = &q->m.s[q->tops[t].schema];

        if (strcmp(s->name, name) != 0)
            continue;
        if (q->tops[t].nested)
            return mt_fail(err, MT_EUNSUPPORTED,
                           "%s: column '%s' is a nested type (a list, map or "
                           "struct), which import parquet does not read: "
                           "name a flat column",
                           q->path, name);
        if (s->type == MTX_PQ_INT96 || s->type == MTX_PQ_FIXED || s->type < 0 ||
            s->type > MTX_PQ_FIXED)
            return mt_fail(err, MT_EUNSUPPORTED,
                           "%s: column '%s' is of type %s, which import "
                           "parquet does not read (strings, integers, "
                           "floats and booleans only)",
                           q->path, name, type_name(s->type));
        *col = q->tops[t].leaf;
        *type = s->type;
        return MT_OK;
    }
    return no_column(q, name, err);
}

size_t mtx_pq_groups(const struct mtx_pq *q)
{
    return q->m.ng;
}

int64_t mtx_pq_group_rows(const struct mtx_pq *q, size_t g)
{
    return q->m.g[g].rows;
}

uint64_t mtx_pq_group_end(const struct mtx_pq *q, size_t g)
{
    uint64_t end = 0;
    size_t i;

    for (i = 0; i < q->m.g[g].nc; i++) {
        const struct mtx_pq_chunk *c = &q->m.g[g].c[i];
        uint64_t e = (uint64_t)c->data_off + (uint64_t)c->csize;

        if (c->data_off >= 0 && c->csize >= 0 && e > end && e <= q->size)
            end = e;
    }
    return end;
}

/* ==== Decompression ==== */

static enum mt_status gunzip(const uint8_t *src, size_t n, char *dst, size_t un)
{
    z_stream z;
    int rc;

    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) /* zlib or gzip header */
        return MT_ENOMEM;
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)dst;
    z.avail_out = (uInt)un;
    rc = inflate(&z, Z_FINISH);
    inflateEnd(&z);
    return rc == Z_STREAM_END && z.total_out == un ? MT_OK : MT_EPARSE;
}

/* Decompresses n bytes at src into c->page, which must come out at
 * exactly 'un' bytes. */
static enum mt_status inflate_page(struct mtx_pq_col *c, int codec,
                                   const uint8_t *src, size_t n, size_t un)
{
    size_t got = un;
    enum mt_status st;

    mtx_buf_reset(&c->page);
    st = mtx_buf_reserve(&c->page, un + 1);
    if (st != MT_OK)
        return st;
    if (codec == CODEC_SNAPPY) {
        size_t want = 0;

        if (snappy_uncompressed_length((const char *)src, n, &want) !=
                SNAPPY_OK ||
            want != un ||
            snappy_uncompress((const char *)src, n, c->page.data, &got) !=
                SNAPPY_OK)
            return MT_EPARSE;
    } else if (codec == CODEC_GZIP) {
        st = gunzip(src, n, c->page.data, un);
    } else {
        got = ZSTD_decompress(c->page.data, un, src, n);
        if (ZSTD_isError(got) || got != un)
            return MT_EPARSE;
    }
    c->page.len = un;
    return st;
}

/* ==== RLE/bit-packed hybrid ==== */

static uint32_t bits_at(const uint8_t *p, uint64_t bit, int bw)
{
    uint64_t x = 0;
    size_t at = (size_t)(bit >> 3);
    int sh = (int)(bit & 7);
    int need = (sh + bw + 7) / 8;
    int i;

    for (i = 0; i < need; i++)
        x |= (uint64_t)p[at + (size_t)i] << (8 * i);
    return (uint32_t)((x >> sh) & ((1ULL << bw) - 1));
}

/* Decodes 'cnt' values of bit width bw (0..32) into out. */
static int rle_decode(const uint8_t *p, size_t n, int bw, uint32_t *out,
                      size_t cnt)
{
    const uint8_t *end = p + n;
    size_t got = 0;
    size_t vb = (size_t)(bw + 7) / 8;

    while (got < cnt) {
        uint64_t h = 0, k;

        if (mtx_pq_uvarint(&p, end, &h) != 0)
            return -1;
        if (h & 1) { /* bit-packed: h>>1 groups of 8 values, bw bytes each */
            uint64_t groups = h >> 1;

            if (bw && groups > (uint64_t)(end - p) / (uint64_t)bw)
                return -1;
            for (k = 0; k < groups * 8 && got < cnt; k++)
                out[got++] = bw ? bits_at(p, k * (uint64_t)bw, bw) : 0;
            p += groups * (uint64_t)bw;
        } else { /* a run of one value, stored in vb bytes */
            uint32_t v = 0;
            size_t i;

            if ((size_t)(end - p) < vb || (h >> 1) == 0)
                return -1;
            for (i = 0; i < vb; i++)
                v |= (uint32_t)p[i] << (8 * i);
            p += vb;
            for (k = h >> 1; k && got < cnt; k--)
                out[got++] = v;
        }
    }
    return 0;
}

/* ==== Values ==== */

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t x = 0;
    int i;

    for (i = 0; i < n; i++)
        x |= (uint64_t)p[i] << (8 * i);
    return x;
}

/* One PLAIN value of a fixed-width type at p. */
static void plain_fixed(int type, const uint8_t *p, struct mtx_pq_val *v)
{
    float f;
    double d;
    uint32_t u32;
    uint64_t u64;

    if (type == MTX_PQ_INT32) {
        v->u.i = (int32_t)(uint32_t)le(p, 4);
    } else if (type == MTX_PQ_INT64) {
        v->u.i = (int64_t)le(p, 8);
    } else if (type == MTX_PQ_FLOAT) {
        u32 = (uint32_t)le(p, 4);
        memcpy(&f, &u32, 4);
        v->u.d = (double)f;
    } else {
        u64 = le(p, 8);
        memcpy(&d, &u64, 8);
        v->u.d = d;
    }
}

static int type_width(int type)
{
    return type == MTX_PQ_INT32 || type == MTX_PQ_FLOAT ? 4 : 8;
}

/* Decodes k PLAIN values from p (n bytes) into out[0..k); strings are
 * copied into heap. */
static enum mt_status plain(int type, const uint8_t *p, size_t n,
                            struct mtx_pq_val *out, size_t k,
                            struct mt_buf *heap)
{
    const uint8_t *end = p + n;
    size_t i;
    enum mt_status st;

    if (type == MTX_PQ_BOOLEAN) {
        if ((k + 7) / 8 > n)
            return MT_EPARSE;
        for (i = 0; i < k; i++)
            out[i] = (struct mtx_pq_val){{(p[i / 8] >> (i % 8)) & 1}, 0, 0};
        return MT_OK;
    }
    for (i = 0; i < k; i++) {
        memset(&out[i], 0, sizeof out[i]);
        if (type != MTX_PQ_BYTE_ARRAY) {
            if ((size_t)(end - p) < (size_t)type_width(type))
                return MT_EPARSE;
            plain_fixed(type, p, &out[i]);
            p += type_width(type);
            continue;
        }
        if (end - p < 4 || le(p, 4) > (uint64_t)(end - p - 4))
            return MT_EPARSE;
        out[i].len = (uint32_t)le(p, 4);
        out[i].u.off = heap->len;
        st = mtx_buf_append(heap, p + 4, out[i].len);
        if (st != MT_OK)
            return st;
        p += 4 + out[i].len;
    }
    return MT_OK;
}

/* ==== Pages ==== */

/* One column chunk being decoded. */
struct reader {
    struct mtx_pq *q;
    size_t g;
    const char *name;
    const struct mtx_pq_chunk *ck;
    int optional;
    int64_t rows;
    struct mtx_pq_col *c;
    uint32_t *lv; /* definition levels of a page */
    uint32_t *ix; /* dictionary indices of a page */
    size_t lvcap;
    struct mt_error *err;
};

static enum mt_status rfail(struct reader *r, enum mt_status st,
                            const char *why)
{
    if (st == MT_ENOMEM || st == MT_ELIMIT)
        return mt_fail(r->err, st, "%s: row group %zu, column '%s': %s",
                       r->q->path, r->g, r->name,
                       st == MT_ENOMEM ? "out of memory"
                                       : "values past the size limit (1 GiB "
                                         "a page or a row group's column)");
    return mt_fail(r->err, st, "%s: row group %zu, column '%s': %s", r->q->path,
                   r->g, r->name, why);
}

static enum mt_status scratch(struct reader *r, size_t n)
{
    uint32_t *a, *b;

    if (n <= r->lvcap)
        return MT_OK;
    a = mt_realloc(r->lv, n * sizeof *a);
    if (a)
        r->lv = a;
    b = a ? mt_realloc(r->ix, n * sizeof *b) : NULL;
    if (!b)
        return MT_ENOMEM;
    r->ix = b;
    r->lvcap = n;
    return MT_OK;
}

/* The page's bytes as the codec left them: *out points into the stored
 * chunk (uncompressed) or at the column's page buffer. */
static enum mt_status page_body(struct reader *r, const uint8_t *p, size_t n,
                                int32_t usize, const uint8_t **out,
                                size_t *outn)
{
    enum mt_status st;

    if (r->ck->codec == CODEC_NONE) {
        *out = p;
        *outn = n;
        return MT_OK;
    }
    if (usize < 0 || usize > PAGE_MAX)
        return rfail(r, MT_ELIMIT, "");
    st = inflate_page(r->c, r->ck->codec, p, n, (size_t)usize);
    if (st != MT_OK)
        return rfail(r, st,
                     st == MT_EPARSE ? "a page does not decompress "
                                       "(corrupt data)"
                                     : "");
    *out = (const uint8_t *)r->c->page.data;
    *outn = (size_t)usize;
    return MT_OK;
}

static enum mt_status dict_page(struct reader *r, const struct mtx_pq_page *h,
                                const uint8_t *p, size_t n)
{
    struct mtx_pq_col *c = r->c;
    size_t k = (size_t)h->nvalues;
    enum mt_status st;

    if (h->enc != ENC_PLAIN && h->enc != ENC_PLAIN_DICT)
        return rfail(r, MT_EUNSUPPORTED,
                     "a dictionary page that is not PLAIN-encoded");
    if (k > n * 8 + 8)
        return rfail(r, MT_EPARSE,
                     "a dictionary page holds fewer bytes "
                     "than its values need");
    /* a page of no values still gets an array */
    st = mtx_grow((void **)&c->dict, &c->dcap, k ? k : 1, sizeof *c->dict);
    if (st == MT_OK)
        st = plain(c->type, p, n, c->dict, k, &c->heap);
    if (st != MT_OK)
        return rfail(r, st, "a dictionary page ends early");
    c->ndict = k;
    return MT_OK;
}

/* DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY strings (pq_delta.c). */
static enum mt_status delta_values(struct reader *r, int enc, const uint8_t *p,
                                   size_t n, size_t k, struct mtx_pq_val *out)
{
    int type = r->c->type;
    int64_t *v;
    size_t used = 0, i;
    enum mt_status st;

    if (enc != ENC_DELTA_INTS) {
        if (type != MTX_PQ_BYTE_ARRAY)
            return rfail(r, MT_EPARSE, "a DELTA_*_BYTE_ARRAY page of numbers");
        st = mtx_pq_delta_strings(p, n, enc == ENC_DELTA_STRINGS, out, k,
                                  &r->c->heap);
        return st == MT_OK ? MT_OK : rfail(r, st, "DELTA strings malformed");
    }
    if (type != MTX_PQ_INT32 && type != MTX_PQ_INT64)
        return rfail(r, MT_EPARSE,
                     "a DELTA_BINARY_PACKED page of non-integers");
    v = mt_malloc((k ? k : 1) * sizeof *v);
    if (!v)
        return rfail(r, MT_ENOMEM, "");
    if (mtx_pq_delta_ints(p, n, type == MTX_PQ_INT32, v, k, &used) != 0) {
        mt_free(v);
        return rfail(r, MT_EPARSE, "DELTA_BINARY_PACKED values malformed");
    }
    for (i = 0; i < k; i++)
        out[i] = (struct mtx_pq_val){{v[i]}, 0, 0};
    mt_free(v);
    return MT_OK;
}

/* Decodes k values of encoding enc from p (n bytes) into out. */
static enum mt_status page_values(struct reader *r, int enc, const uint8_t *p,
                                  size_t n, size_t k, struct mtx_pq_val *out)
{
    struct mtx_pq_col *c = r->c;
    size_t i;

    if (enc == ENC_PLAIN) {
        enum mt_status st = plain(c->type, p, n, out, k, &c->heap);

        return st == MT_OK ? MT_OK : rfail(r, st, "PLAIN values end early");
    }
    if (enc == ENC_RLE && c->type == MTX_PQ_BOOLEAN) {
        if (n < 4 || le(p, 4) > n - 4 ||
            rle_decode(p + 4, (size_t)le(p, 4), 1, r->ix, k) != 0)
            return rfail(r, MT_EPARSE, "RLE booleans end early");
        for (i = 0; i < k; i++)
            out[i] = (struct mtx_pq_val){{r->ix[i]}, 0, 0};
        return MT_OK;
    }
    if (enc >= ENC_DELTA_INTS && enc <= ENC_DELTA_STRINGS)
        return delta_values(r, enc, p, n, k, out);
    if (enc == ENC_SPLIT)
        return mtx_pq_split(p, n, c->type, out, k) == 0
                   ? MT_OK
                   : rfail(r, MT_EPARSE,
                           "BYTE_STREAM_SPLIT values end "
                           "early, or of a type it does not "
                           "hold");
    if (enc != ENC_PLAIN_DICT && enc != ENC_RLE_DICT)
        return mt_fail(r->err, MT_EUNSUPPORTED,
                       "%s: row group %zu, column '%s': encoding %d is not "
                       "read (PLAIN, dictionary, RLE booleans, DELTA_* and "
                       "BYTE_STREAM_SPLIT are); rewrite the file with "
                       "pyarrow's defaults",
                       r->q->path, r->g, r->name, enc);
    if (k &&
        (n < 1 || p[0] > 32 || rle_decode(p + 1, n - 1, p[0], r->ix, k) != 0))
        return rfail(r, MT_EPARSE, "dictionary indices end early");
    for (i = 0; i < k; i++) {
        if (r->ix[i] >= c->ndict)
            return rfail(r, MT_EPARSE,
                         "a dictionary index past the "
                         "dictionary");
        out[i] = c->dict[r->ix[i]];
    }
    return MT_OK;
}

/* Adds a page of nv values (lv: their definition levels, NULL when the
 * column is required) to the column. */
static enum mt_status page_add(struct reader *r, int enc, size_t nv,
                               const uint32_t *lv, const uint8_t *p, size_t n)
{
    struct mtx_pq_col *c = r->c;
    size_t k = nv, i, j;
    enum mt_status st;

    if ((int64_t)nv > r->rows - (int64_t)c->n)
        return rfail(r, MT_EPARSE, "more values than the row group has rows");
    if (mtx_grow((void **)&c->v, &c->cap, c->n + nv ? c->n + nv : 1,
                 sizeof *c->v) != MT_OK)
        return rfail(r, MT_ENOMEM, "");
    for (i = 0; lv && i < nv; i++)
        if (lv[i] > 1)
            return rfail(r, MT_EPARSE, "a definition level past 1");
    if (lv)
        for (k = 0, i = 0; i < nv; i++)
            k += lv[i];
    st = page_values(r, enc, p, n, k, c->v + c->n);
    if (st != MT_OK)
        return st;
    /* spread the k values over the nv slots, back to front (j <= i) */
    for (i = nv, j = k; lv && i-- > 0;) {
        if (lv[i])
            c->v[c->n + i] = c->v[c->n + --j];
        else
            c->v[c->n + i] = (struct mtx_pq_val){{0}, 0, 1};
    }
    c->n += nv;
    return MT_OK;
}

static enum mt_status data_v1(struct reader *r, const struct mtx_pq_page *h,
                              const uint8_t *p, size_t n)
{
    size_t nv = (size_t)h->nvalues;
    const uint8_t *body;
    size_t bn;
    enum mt_status st = page_body(r, p, n, h->usize, &body, &bn);

    if (st != MT_OK)
        return st;
    if (scratch(r, nv) != MT_OK)
        return rfail(r, MT_ENOMEM, "");
    if (r->optional) {
        size_t len = bn >= 4 ? (size_t)le(body, 4) : 0;

        if (bn < 4 || len > bn - 4 ||
            rle_decode(body + 4, len, 1, r->lv, nv) != 0)
            return rfail(r, MT_EPARSE, "definition levels end early");
        body += 4 + len;
        bn -= 4 + len;
    }
    return page_add(r, h->enc, nv, r->optional ? r->lv : NULL, body, bn);
}

static enum mt_status data_v2(struct reader *r, const struct mtx_pq_page *h,
                              const uint8_t *p, size_t n)
{
    size_t nv = (size_t)h->nvalues;
    size_t lvn = (size_t)h->rep_len + (size_t)h->def_len;
    const uint8_t *body = p + lvn;
    size_t bn = n - lvn;
    enum mt_status st;

    if (lvn > n || (int64_t)lvn > h->usize)
        return rfail(r, MT_EPARSE, "levels longer than the page");
    if (scratch(r, nv) != MT_OK)
        return rfail(r, MT_ENOMEM, "");
    if (r->optional &&
        rle_decode(p + h->rep_len, (size_t)h->def_len, 1, r->lv, nv) != 0)
        return rfail(r, MT_EPARSE, "definition levels end early");
    if (h->compressed) {
        st = page_body(r, body, bn, h->usize - (int32_t)lvn, &body, &bn);
        if (st != MT_OK)
            return st;
    }
    return page_add(r, h->enc, nv, r->optional ? r->lv : NULL, body, bn);
}

static enum mt_status page(struct reader *r, const struct mtx_pq_page *h,
                           const uint8_t *p, size_t n)
{
    const uint8_t *body;
    size_t bn;
    enum mt_status st;

    if (h->type == MTX_PQ_DICT) {
        st = page_body(r, p, n, h->usize, &body, &bn);
        return st == MT_OK ? dict_page(r, h, body, bn) : st;
    }
    if (h->type == MTX_PQ_DATA)
        return data_v1(r, h, p, n);
    if (h->type == MTX_PQ_DATA2)
        return data_v2(r, h, p, n);
    return MT_OK; /* an index page, or one of a later format: not needed */
}

/* ==== Column chunks ==== */

static enum mt_status chunk_check(struct reader *r, const struct top *t,
                                  uint64_t *start)
{
    const struct mtx_pq_chunk *ck = r->ck;
    int64_t s = ck->dict_off > 0 && ck->dict_off < ck->data_off ? ck->dict_off
                                                                : ck->data_off;

    if (ck->type != r->q->m.s[t->schema].type)
        return rfail(r, MT_EPARSE,
                     "the column chunk's type is not the "
                     "schema's");
    if (ck->codec != CODEC_NONE && ck->codec != CODEC_SNAPPY &&
        ck->codec != CODEC_GZIP && ck->codec != CODEC_ZSTD)
        return mt_fail(r->err, MT_EUNSUPPORTED,
                       "%s: column '%s' is compressed with %s, which import "
                       "parquet does not read (UNCOMPRESSED, SNAPPY, GZIP, "
                       "ZSTD): rewrite the file with one of those",
                       r->q->path, r->name, codec_name(ck->codec));
    if (r->rows > GROUP_ROWS_MAX)
        return rfail(r, MT_ELIMIT, "");
    if (s < 4 || ck->csize <= 0 || ck->csize > CHUNK_MAX ||
        (uint64_t)s + (uint64_t)ck->csize > r->q->size - 8)
        return rfail(r, MT_EPARSE, "the column chunk lies outside the file");
    *start = (uint64_t)s;
    return MT_OK;
}

static enum mt_status chunk_pages(struct reader *r)
{
    const uint8_t *raw = (const uint8_t *)r->c->raw.data;
    size_t size = r->c->raw.len, pos = 0, used = 0;
    struct mtx_pq_page h;
    enum mt_status st;

    while ((int64_t)r->c->n < r->rows) {
        if (pos >= size)
            return rfail(r, MT_EPARSE,
                         "the pages end before the row "
                         "group's rows");
        st = mtx_pq_page_parse(raw + pos, size - pos, &h, &used, r->err);
        if (st != MT_OK)
            return mt_error_prefix(r->err, "%s: row group %zu, column '%s'",
                                   r->q->path, r->g, r->name);
        pos += used;
        if ((size_t)h.csize > size - pos)
            return rfail(r, MT_EPARSE, "a page runs past its column chunk");
        st = page(r, &h, raw + pos, (size_t)h.csize);
        if (st != MT_OK)
            return st;
        pos += (size_t)h.csize;
    }
    return MT_OK;
}

static enum mt_status chunk_load(struct reader *r, uint64_t start)
{
    struct mtx_pq_col *c = r->c;
    size_t n = (size_t)r->ck->csize;

    mtx_buf_reset(&c->raw);
    if (mtx_buf_reserve(&c->raw, n + 1) != MT_OK)
        return rfail(r, MT_ENOMEM, "");
    c->raw.len = n;
    return read_at(r->q, start, c->raw.data, n, r->err);
}

enum mt_status mtx_pq_read(struct mtx_pq *q, size_t g, size_t col,
                           struct mtx_pq_col *c, struct mt_error *err)
{
    const struct top *t = top_of_leaf(q, col);
    struct reader r;
    uint64_t start = 0;
    enum mt_status st;

    if (!t || g >= q->m.ng)
        return mt_fail(err, MT_EINVAL, "no such column or row group");
    memset(&r, 0, sizeof r);
    r.q = q;
    r.g = g;
    r.name = q->m.s[t->schema].name;
    r.ck = &q->m.g[g].c[col];
    r.optional = q->m.s[t->schema].rep == 1;
    r.rows = q->m.g[g].rows;
    r.c = c;
    r.err = err;
    c->type = q->m.s[t->schema].type;
    c->n = 0;
    c->ndict = 0;
    mtx_buf_reset(&c->heap);
    c->heap.max = c->raw.max = c->page.max = (size_t)PAGE_MAX + 1;
    st = chunk_check(&r, t, &start);
    if (st == MT_OK && r.rows > 0)
        st = chunk_load(&r, start);
    if (st == MT_OK)
        st = chunk_pages(&r);
    mt_free(r.lv);
    mt_free(r.ix);
    return st;
}

void mtx_pq_col_free(struct mtx_pq_col *c)
{
    if (!c)
        return;
    mt_free(c->v);
    mt_free(c->dict);
    mtx_buf_free(&c->heap);
    mtx_buf_free(&c->page);
    mtx_buf_free(&c->raw);
    memset(c, 0, sizeof *c);
}
