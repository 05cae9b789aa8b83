/* Apache Parquet files, read without a library: the footer's metadata and
 * page headers in the Thrift compact protocol (pq_thrift.c), and the flat
 * columns of one row group at a time decoded (parquet.c). What is read:
 * data pages v1 and v2, PLAIN and dictionary (PLAIN_DICTIONARY,
 * RLE_DICTIONARY) values, RLE booleans, RLE/bit-packed definition levels,
 * the codecs UNCOMPRESSED, SNAPPY, GZIP and ZSTD. */
#ifndef MT_CORPUS_PARQUET_H
#define MT_CORPUS_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/status.h"

/* Physical types (parquet.thrift's Type). */
enum {
    MTX_PQ_BOOLEAN = 0,
    MTX_PQ_INT32 = 1,
    MTX_PQ_INT64 = 2,
    MTX_PQ_INT96 = 3,
    MTX_PQ_FLOAT = 4,
    MTX_PQ_DOUBLE = 5,
    MTX_PQ_BYTE_ARRAY = 6,
    MTX_PQ_FIXED = 7
};

/* ==== Metadata (pq_thrift.c) ==== */

struct mtx_pq_schema {
    char *name;
    int type; /* physical type; -1 for a group */
    int rep;  /* 0 required, 1 optional, 2 repeated */
    int32_t nchild;
    int32_t type_len;
};

struct mtx_pq_chunk {
    int type;
    int codec;
    int64_t nvalues;
    int64_t csize; /* total_compressed_size */
    int64_t data_off;
    int64_t dict_off; /* 0: none */
};

struct mtx_pq_group {
    int64_t rows;
    struct mtx_pq_chunk *c;
    size_t nc;
};

struct mtx_pq_meta {
    struct mtx_pq_schema *s;
    size_t ns;
    struct mtx_pq_group *g;
    size_t ng;
    int64_t rows;
};

/* Parses a FileMetaData of n bytes into *m (zeroed first). MT_EPARSE with
 * what is wrong (no file name), MT_ENOMEM. */
enum mt_status mtx_pq_meta_parse(const uint8_t *p, size_t n,
                                 struct mtx_pq_meta *m, struct mt_error *err);
void mtx_pq_meta_free(struct mtx_pq_meta *m);

/* Page types (PageType). */
enum { MTX_PQ_DATA = 0, MTX_PQ_INDEX = 1, MTX_PQ_DICT = 2, MTX_PQ_DATA2 = 3 };

struct mtx_pq_page {
    int type;
    int32_t usize; /* uncompressed_page_size */
    int32_t csize; /* compressed_page_size */
    int32_t nvalues;
    int enc;
    int32_t def_len; /* v2: definition levels' bytes */
    int32_t rep_len; /* v2: repetition levels' bytes */
    int compressed;  /* v2: is_compressed (default 1) */
};

/* Parses the PageHeader at p (n bytes available); *used is its size. */
enum mt_status mtx_pq_page_parse(const uint8_t *p, size_t n,
                                 struct mtx_pq_page *h, size_t *used,
                                 struct mt_error *err);

/* ==== Files and columns (parquet.c) ==== */

struct mtx_pq;

/* One value of a column: null, a number or a byte string in the column's
 * heap (off, len). */
struct mtx_pq_val {
    union {
        int64_t i;
        double d;
        uint64_t off;
    } u;
    uint32_t len;
    uint8_t null;
};

/* The values of one column in one row group. Zero it before the first
 * read; mtx_pq_read reuses its memory; free it with mtx_pq_col_free. */
struct mtx_pq_col {
    int type;
    size_t n;
    size_t cap;
    struct mtx_pq_val *v;
    struct mt_buf heap; /* string bytes */
    struct mtx_pq_val *dict;
    size_t ndict;
    size_t dcap;
    struct mt_buf page; /* a page's decompressed bytes */
    struct mt_buf raw;  /* the column chunk as stored */
};

/* Opens 'path' and reads its footer. Messages name the path. */
enum mt_status mtx_pq_open(const char *path, struct mtx_pq **out,
                           struct mt_error *err);
void mtx_pq_close(struct mtx_pq *q); /* NULL allowed */

/* The top-level column 'name' (*col: its leaf index, *type: its physical
 * type); a missing column, a nested one (group, list, map) or one of a
 * type not read is an error naming it. */
enum mt_status mtx_pq_find(struct mtx_pq *q, const char *name, size_t *col,
                           int *type, struct mt_error *err);

size_t mtx_pq_groups(const struct mtx_pq *q);
int64_t mtx_pq_group_rows(const struct mtx_pq *q, size_t g);
/* Bytes of the file up to the end of row group g's data (progress). */
uint64_t mtx_pq_group_end(const struct mtx_pq *q, size_t g);

/* Decodes column 'col' of row group g into c: exactly the group's rows.
 * MT_EPARSE names the column and row group; MT_EUNSUPPORTED an encoding
 * or codec not read. */
enum mt_status mtx_pq_read(struct mtx_pq *q, size_t g, size_t col,
                           struct mtx_pq_col *c, struct mt_error *err);
void mtx_pq_col_free(struct mtx_pq_col *c);

/* ==== Delta and split encodings (pq_delta.c) ==== */

/* An unsigned LEB128 varint (the RLE/bit-packed hybrid's headers and the
 * delta encodings' counts) from *p, not past 'end', into *v; *p is moved
 * past it. -1 when it runs past end or beyond 64 bits. */
int mtx_pq_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* DELTA_BINARY_PACKED: exactly k integers (32-bit ones wrap at 32 bits)
 * from p (n bytes) into out; *used is the bytes they took. -1 when
 * malformed or short. */
int mtx_pq_delta_ints(const uint8_t *p, size_t n, int bits32, int64_t *out,
                      size_t k, size_t *used);

/* DELTA_LENGTH_BYTE_ARRAY (prefixed 0) or DELTA_BYTE_ARRAY (prefixed 1):
 * k strings into heap, out[i] naming each. MT_EPARSE, MT_ENOMEM,
 * MT_ELIMIT. */
enum mt_status mtx_pq_delta_strings(const uint8_t *p, size_t n, int prefixed,
                                    struct mtx_pq_val *out, size_t k,
                                    struct mt_buf *heap);

/* BYTE_STREAM_SPLIT: k numbers of 'type' (INT32, INT64, FLOAT, DOUBLE).
 * -1 when short or of another type. */
int mtx_pq_split(const uint8_t *p, size_t n, int type, struct mtx_pq_val *out,
                 size_t k);

#endif
