/* Precomputed chunk vectors (index --vectors-from): a NumPy .npy file of
 * float32 or float16 rows, shape (n, d), with an ids file of one chunk id
 * a line (line i names row i), or JSONL {"id": CHUNK_ID, "vector": [...]}.
 * Rows are matched to the store's chunks by chunk id.
 *
 * A path that is not a regular file (a FIFO, /dev/stdin) is a stream:
 * read once, front to back, a row at a time as the build asks for it
 * (the ids file too, line by line), so vectors can be piped in without
 * ever being on disk. The build asks in ascending chunk id order, so a
 * stream's ids must ascend; rows with ids below the one asked are passed
 * over (chunks a resumed build already indexed, or not in the store). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/jsonl.h"
#include "index/index_int.h"
#include "index/vec.h"
#include "medtrust/core.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_HEADER_MAX (1u << 20)
#define ID_LINE_MAX 64

/* One vector: its chunk id, its row in the data, and where it was read
 * (line of the ids file or of the JSONL), for the error messages. */
struct vid {
    int64_t id;
    size_t row;
    size_t line;
};

struct mtx_vimport {
    char path[4096]; /* the vectors file */
    char ids_path[4096];
    uint32_t dims;
    size_t n;
    struct vid *ids; /* sorted by id */
    int f16;         /* .npy rows are float16 */
    void *map;       /* the mmapped .npy */
    size_t map_len;
    const unsigned char *data; /* .npy rows */
    float *vals;               /* JSONL rows */
    /* A stream: the next row is read when asked for. */
    int stream;
    FILE *npy_fp;        /* the .npy stream, past its header */
    FILE *ids_fp;        /* its ids, line by line */
    struct mt_jsonl *jr; /* a JSONL stream */
    unsigned char *row;  /* the current row's .npy bytes */
    int have;            /* a row read and not yet taken or passed */
    int64_t cur, last;   /* its chunk id, and the one before it */
    size_t line, rows;   /* its line (ids file or JSONL), rows read */
};

/* ==== .npy header ==== */

/* The value text after 'key': in the header's Python dict literal. */
static const char *npy_field(const char *h, const char *key)
{
    const char *p = strstr(h, key);

    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    return p;
}

static enum mt_status npy_descr(struct mtx_vimport *vi, const char *h,
                                struct mt_error *err)
{
    const char *d = npy_field(h, "'descr'");

    if (d && (*d == '\'' || *d == '"'))
        d++;
    if (d && strncmp(d, "<f4", 3) == 0)
        return MT_OK;
    if (d && strncmp(d, "<f2", 3) == 0) {
        vi->f16 = 1;
        return MT_OK;
    }
    return mt_fail(err, MT_EPARSE,
                   "%s: .npy header %s: dtype is not little-endian float32 "
                   "('<f4') or float16 ('<f2'): save it with "
                   "arr.astype('float32')",
                   vi->path, h);
}

static enum mt_status npy_shape(struct mtx_vimport *vi, const char *h,
                                struct mt_error *err)
{
    const char *f = npy_field(h, "'fortran_order'");
    const char *s = npy_field(h, "'shape'");
    char *end;
    unsigned long long n, d;

    if (!f || strncmp(f, "False", 5) != 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: .npy header %s: not in C order: save "
                       "np.ascontiguousarray(arr)",
                       vi->path, h);
    if (!s || *s != '(')
        return mt_fail(err, MT_EPARSE, "%s: .npy header %s: no shape", vi->path,
                       h);
    n = strtoull(s + 1, &end, 10);
    if (end == s + 1 || *end != ',')
        return mt_fail(err, MT_EPARSE,
                       "%s: .npy header %s: shape is not (n, d)", vi->path, h);
    s = end + 1;
    d = strtoull(s, &end, 10);
    while (*end == ' ')
        end++;
    if (end == s || *end != ')' || d == 0 || d > MT_VEC_MAX_DIMS)
        return mt_fail(err, MT_EPARSE,
                       "%s: .npy header %s: shape is not (n, d) with "
                       "1 <= d <= %u",
                       vi->path, h, MT_VEC_MAX_DIMS);
    vi->n = (size_t)n;
    vi->dims = (uint32_t)d;
    return MT_OK;
}

/* The magic and version of the first 'have' (>= 12 or the file's all)
 * bytes at b; the header dict's length in *hl and its offset in *off. */
static enum mt_status npy_magic(const struct mtx_vimport *vi,
                                const unsigned char *b, size_t have, size_t *hl,
                                size_t *off, struct mt_error *err)
{
    if (have < 10 || memcmp(b, NPY_MAGIC, 6) != 0 || b[6] < 1 || b[6] > 3)
        return mt_fail(err, MT_EPARSE,
                       "%s: not a NumPy .npy file (no \\x93NUMPY magic of "
                       "version 1-3)",
                       vi->path);
    *hl = b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8
                    : (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
                          (size_t)b[11] << 24;
    *off = b[6] == 1 ? 10 : 12;
    if (*hl > NPY_HEADER_MAX)
        return mt_fail(err, MT_EPARSE, "%s: .npy header of %zu bytes", vi->path,
                       *hl);
    return MT_OK;
}

/* Parses the header dict h (hl bytes, modified): dtype and shape. */
static enum mt_status npy_dict(struct mtx_vimport *vi, char *h, size_t hl,
                               struct mt_error *err)
{
    size_t k;
    enum mt_status st;

    h[hl] = '\0';
    /* numpy pads the dict with spaces to 64 bytes and ends it with \n */
    for (k = hl; k > 0 && (h[k - 1] == ' ' || h[k - 1] == '\n'); k--)
        h[k - 1] = '\0';
    st = npy_descr(vi, h, err);
    return st == MT_OK ? npy_shape(vi, h, err) : st;
}

/* Checks the magic and version, parses the header dict, and points
 * vi->data at the rows, whose bytes must be exactly n * d * width. */
static enum mt_status npy_header(struct mtx_vimport *vi, struct mt_error *err)
{
    const unsigned char *b = vi->map;
    size_t hl, off, need;
    char *h;
    enum mt_status st = npy_magic(vi, b, vi->map_len, &hl, &off, err);

    if (st != MT_OK)
        return st;
    if (off + hl > vi->map_len)
        return mt_fail(err, MT_EPARSE,
                       "%s: .npy header of %zu bytes runs past the file's "
                       "%zu",
                       vi->path, hl, vi->map_len);
    h = mt_malloc(hl + 1);
    if (!h)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    memcpy(h, b + off, hl);
    st = npy_dict(vi, h, hl, err);
    mt_free(h);
    if (st != MT_OK)
        return st;
    need = vi->n * vi->dims * (vi->f16 ? 2u : 4u);
    if (vi->map_len - off - hl != need)
        return mt_fail(err, MT_EPARSE,
                       "%s: shape (%zu, %u) needs %zu bytes of data, the "
                       "file holds %zu: truncated or not written by "
                       "numpy.save",
                       vi->path, vi->n, vi->dims, need, vi->map_len - off - hl);
    vi->data = b + off + hl;
    return MT_OK;
}

static enum mt_status npy_map(struct mtx_vimport *vi, struct mt_error *err)
{
    struct stat sb;
    int fd = open(vi->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return mt_fail(err, MT_EIO, "--vectors-from %s: %s", vi->path,
                       strerror(errno));
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
        close(fd);
        return mt_fail(err, MT_EPARSE, "%s: empty or unreadable", vi->path);
    }
    vi->map_len = (size_t)sb.st_size;
    vi->map = mmap(NULL, vi->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (vi->map == MAP_FAILED) {
        vi->map = NULL;
        return mt_fail(err, MT_EIO, "%s: mmap: %s", vi->path, strerror(errno));
    }
    return npy_header(vi, err);
}

/* ==== Ids ==== */

static enum mt_status parse_id(const char *s, int64_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || errno || v <= 0)
        return MT_EPARSE;
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end)
        return MT_EPARSE;
    *out = (int64_t)v;
    return MT_OK;
}

/* Reads one id a line; line i names row i. */
static enum mt_status read_ids(struct mtx_vimport *vi, struct mt_error *err)
{
    char line[ID_LINE_MAX + 2];
    FILE *f = fopen(vi->ids_path, "r");
    size_t i = 0;
    enum mt_status st = MT_OK;

    if (!f)
        return mt_fail(err, MT_EIO,
                       "ids file %s: %s (give it with --vector-ids, one "
                       "chunk id a line)",
                       vi->ids_path, strerror(errno));
    while (st == MT_OK && fgets(line, sizeof line, f)) {
        if (i == vi->n)
            st = mt_fail(err, MT_EPARSE,
                         "%s:%zu: more ids than the %zu rows of %s",
                         vi->ids_path, i + 1, vi->n, vi->path);
        else if (parse_id(line, &vi->ids[i].id) != MT_OK)
            st = mt_fail(err, MT_EPARSE,
                         "%s:%zu: '%.*s' is not a chunk id (a positive "
                         "integer)",
                         vi->ids_path, i + 1, (int)strcspn(line, "\r\n"), line);
        if (st != MT_OK)
            break;
        vi->ids[i].row = i;
        vi->ids[i].line = i + 1;
        i++;
    }
    fclose(f);
    if (st == MT_OK && i != vi->n)
        st = mt_fail(err, MT_EPARSE, "%s: %zu ids for the %zu rows of %s",
                     vi->ids_path, i, vi->n, vi->path);
    return st;
}

static int vid_cmp(const void *a, const void *b)
{
    const struct vid *x = a;
    const struct vid *y = b;

    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->row < y->row ? -1 : (x->row > y->row);
}

/* Sorts the ids and refuses a repeated one, naming both lines. */
static enum mt_status sort_ids(struct mtx_vimport *vi, struct mt_error *err)
{
    const char *where = vi->vals ? vi->path : vi->ids_path;
    size_t i;

    qsort(vi->ids, vi->n, sizeof *vi->ids, vid_cmp);
    for (i = 1; i < vi->n; i++)
        if (vi->ids[i].id == vi->ids[i - 1].id)
            return mt_fail(err, MT_EPARSE,
                           "%s: chunk id %lld twice, on lines %zu and %zu: "
                           "each chunk takes one vector",
                           where, (long long)vi->ids[i].id, vi->ids[i - 1].line,
                           vi->ids[i].line);
    return MT_OK;
}

/* ==== JSONL ==== */

static enum mt_status grow_rows(struct mtx_vimport *vi, size_t *cap)
{
    size_t c = *cap ? *cap * 2 : 1024;
    struct vid *ids = mt_realloc(vi->ids, c * sizeof *ids);
    float *v;

    if (!ids)
        return MT_ENOMEM;
    vi->ids = ids;
    v = mt_realloc(vi->vals, c * vi->dims * sizeof *v);
    if (!v)
        return MT_ENOMEM;
    vi->vals = v;
    *cap = c;
    return MT_OK;
}

static enum mt_status jsonl_row(struct mtx_vimport *vi, json_t *o, size_t line,
                                size_t *cap, struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    json_t *vec = json_object_get(o, "vector");
    size_t i;

    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: \"id\" is not a chunk id (a positive "
                       "integer)",
                       vi->path, line);
    if (!json_is_array(vec) || json_array_size(vec) != vi->dims)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: \"vector\" has %zu dimensions, the "
                       "embedder %u",
                       vi->path, line,
                       json_is_array(vec) ? json_array_size(vec) : 0, vi->dims);
    if (vi->n == *cap && grow_rows(vi, cap) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < vi->dims; i++) {
        json_t *x = json_array_get(vec, i);
        if (!json_is_number(x))
            return mt_fail(err, MT_EPARSE,
                           "%s:%zu: \"vector\"[%zu] is not a number", vi->path,
                           line, i);
        vi->vals[vi->n * vi->dims + i] = (float)json_number_value(x);
    }
    vi->ids[vi->n].id = (int64_t)json_integer_value(id);
    vi->ids[vi->n].row = vi->n;
    vi->ids[vi->n].line = line;
    vi->n++;
    return MT_OK;
}

static enum mt_status read_jsonl(struct mtx_vimport *vi, struct mt_error *err)
{
    struct mt_jsonl *r = NULL;
    json_t *o;
    size_t cap = 0;
    enum mt_status st = mtx_jsonl_open(vi->path, NULL, &r, err);

    while (st == MT_OK && (st = mtx_jsonl_next(r, &o, err)) == MT_OK && o)
        st = jsonl_row(vi, o, mtx_jsonl_line(r), &cap, err);
    mtx_jsonl_close(r);
    if (st == MT_OK && vi->n == 0)
        st = mt_fail(err, MT_EPARSE, "%s: no vectors", vi->path);
    return st == MT_OK ? sort_ids(vi, err) : st;
}

/* ==== Streams ==== */

static int is_stream(const char *path)
{
    struct stat sb;

    return strcmp(path, "-") == 0 ||
           (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode));
}

/* Reads exactly n bytes (a FIFO gives them as they are written); 0 at
 * the end of the stream or on an error. */
static int read_full(FILE *f, void *dst, size_t n)
{
    return fread(dst, 1, n, f) == n;
}

static size_t row_bytes(const struct mtx_vimport *vi)
{
    return (size_t)vi->dims * (vi->f16 ? 2u : 4u);
}

/* Opens the .npy stream, reads its header (magic, dict) and opens the
 * ids. A writer opens the .npy first, then the ids: each open of a FIFO
 * waits for the other end, so this order must be the writer's too. */
static enum mt_status open_npy_stream(struct mtx_vimport *vi,
                                      struct mt_error *err)
{
    unsigned char head[12];
    size_t hl, off;
    char *h;
    enum mt_status st;

    vi->npy_fp = strcmp(vi->path, "-") == 0 ? stdin : fopen(vi->path, "rb");
    if (!vi->npy_fp)
        return mt_fail(err, MT_EIO, "--vectors-from %s: %s", vi->path,
                       strerror(errno));
    if (!read_full(vi->npy_fp, head, 10))
        return mt_fail(err, MT_EPARSE, "%s: ended before its .npy header",
                       vi->path);
    if (head[6] >= 2 && head[6] <= 3 && !read_full(vi->npy_fp, head + 10, 2))
        return mt_fail(err, MT_EPARSE, "%s: ended in its .npy header",
                       vi->path);
    st = npy_magic(vi, head, sizeof head, &hl, &off, err);
    h = st == MT_OK ? mt_malloc(hl + 1) : NULL;
    if (st == MT_OK && !h)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK && !read_full(vi->npy_fp, h, hl))
        st = mt_fail(err, MT_EPARSE, "%s: ended in its .npy header", vi->path);
    if (st == MT_OK)
        st = npy_dict(vi, h, hl, err);
    mt_free(h);
    (void)off;
    return st;
}

static enum mt_status open_ids_stream(struct mtx_vimport *vi,
                                      struct mt_error *err)
{
    vi->ids_fp = fopen(vi->ids_path, "r");
    if (!vi->ids_fp)
        return mt_fail(err, MT_EIO,
                       "ids file %s: %s (give it with --vector-ids, one "
                       "chunk id a line)",
                       vi->ids_path, strerror(errno));
    vi->row = mt_malloc(row_bytes(vi));
    return vi->row ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

/* The next row of a .npy stream and its id line into vi->row, vi->cur. */
static enum mt_status npy_next(struct mtx_vimport *vi, struct mt_error *err)
{
    char line[ID_LINE_MAX + 2];

    if (vi->rows == vi->n)
        return MT_ENOTFOUND; /* every row the header promised was read */
    if (!fgets(line, sizeof line, vi->ids_fp))
        return mt_fail(err, MT_EPARSE, "%s: %zu ids for the %zu rows of %s",
                       vi->ids_path, vi->rows, vi->n, vi->path);
    vi->line = vi->rows + 1;
    if (parse_id(line, &vi->cur) != MT_OK)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: '%.*s' is not a chunk id (a positive "
                       "integer)",
                       vi->ids_path, vi->line, (int)strcspn(line, "\r\n"),
                       line);
    if (!read_full(vi->npy_fp, vi->row, row_bytes(vi)))
        return mt_fail(err, MT_EPARSE,
                       "%s: ended after %zu of the %zu rows its header "
                       "names: truncated",
                       vi->path, vi->rows, vi->n);
    return MT_OK;
}

/* The next line of a JSONL stream into vi->vals (one row), vi->cur. */
static enum mt_status jsonl_next(struct mtx_vimport *vi, struct mt_error *err)
{
    json_t *o = NULL;
    size_t cap = 1;
    enum mt_status st = mtx_jsonl_next(vi->jr, &o, err);

    if (st != MT_OK)
        return st;
    if (!o)
        return MT_ENOTFOUND;
    vi->n = 0; /* jsonl_row appends at n: keep the one row */
    st = jsonl_row(vi, o, mtx_jsonl_line(vi->jr), &cap, err);
    vi->line = mtx_jsonl_line(vi->jr);
    vi->cur = vi->ids[0].id;
    return st;
}

/* Reads the next row of a stream, its id above the last one's;
 * MT_ENOTFOUND at the end. */
static enum mt_status stream_next(struct mtx_vimport *vi, struct mt_error *err)
{
    const char *where = vi->jr ? vi->path : vi->ids_path;
    enum mt_status st = vi->jr ? jsonl_next(vi, err) : npy_next(vi, err);

    if (st != MT_OK)
        return st;
    vi->rows++;
    if (vi->rows > 1 && vi->cur == vi->last)
        return mt_fail(err, MT_EPARSE,
                       "%s: chunk id %lld twice, on lines %zu and %zu: "
                       "each chunk takes one vector",
                       where, (long long)vi->cur, vi->line - 1, vi->line);
    if (vi->rows > 1 && vi->cur < vi->last)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: chunk id %lld after %lld: a stream is read "
                       "once, in order, so its ids must ascend as the "
                       "store's chunk ids do (sort the rows by chunk id)",
                       where, vi->line, (long long)vi->cur,
                       (long long)vi->last);
    vi->last = vi->cur;
    vi->have = 1;
    return MT_OK;
}

static void copy_row(const struct mtx_vimport *vi, size_t row, float *out);

/* The row of chunk_id: rows with smaller ids are passed over. */
static enum mt_status stream_get(struct mtx_vimport *vi, int64_t chunk_id,
                                 float *out, struct mt_error *err)
{
    const char *where = vi->jr ? vi->path : vi->ids_path;
    enum mt_status st = MT_OK;

    while (st == MT_OK && (!vi->have || vi->cur < chunk_id)) {
        vi->have = 0;
        st = stream_next(vi, err);
    }
    if (st == MT_ENOTFOUND)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s: no vector for chunk id %lld: the stream ended "
                       "after %zu rows (every chunk the index takes needs "
                       "one)",
                       where, (long long)chunk_id, vi->rows);
    if (st != MT_OK)
        return st;
    if (vi->cur != chunk_id)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s:%zu: no vector for chunk id %lld: the stream "
                       "went on to chunk id %lld (every chunk the index "
                       "takes needs one)",
                       where, vi->line, (long long)chunk_id,
                       (long long)vi->cur);
    vi->have = 0;
    copy_row(vi, 0, out);
    return MT_OK;
}

/* ==== Opening and lookup ==== */

static enum mt_status open_jsonl_stream(struct mtx_vimport *vi,
                                        struct mt_error *err)
{
    size_t cap = 0;

    if (grow_rows(vi, &cap) != MT_OK) /* room for the one current row */
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return mtx_jsonl_open(vi->path, NULL, &vi->jr, err);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static enum mt_status open_npy(struct mtx_vimport *vi, const char *ids,
                               uint32_t dims, struct mt_error *err)
{
    enum mt_status st =
        vi->stream ? open_npy_stream(vi, err) : npy_map(vi, err);

    if (st != MT_OK)
        return st;
    if (vi->dims != dims)
        return mt_fail(err, MT_EINVAL,
                       "%s: vectors of %u dimensions, the embedder gives "
                       "%u: name the embedder that made them (--embedder, "
                       "--dims)",
                       vi->path, vi->dims, dims);
    if (ids)
        snprintf(vi->ids_path, sizeof vi->ids_path, "%s", ids);
    else
        snprintf(vi->ids_path, sizeof vi->ids_path, "%.*s.ids",
                 (int)(strlen(vi->path) - 4), vi->path);
    if (vi->stream)
        return open_ids_stream(vi, err);
    vi->ids = mt_calloc(vi->n ? vi->n : 1, sizeof *vi->ids);
    if (!vi->ids)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = read_ids(vi, err);
    return st == MT_OK ? sort_ids(vi, err) : st;
}

enum mt_status mtx_vimport_open(const char *path, const char *ids,
                                uint32_t dims, struct mtx_vimport **out,
                                struct mt_error *err)
{
    struct mtx_vimport *vi = mt_calloc(1, sizeof *vi);
    enum mt_status st;

    if (!vi)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    snprintf(vi->path, sizeof vi->path, "%s", path);
    vi->stream = is_stream(path);
    if (ends_with(path, ".npy")) {
        st = open_npy(vi, ids, dims, err);
    } else {
        vi->dims = dims;
        st = vi->stream ? open_jsonl_stream(vi, err) : read_jsonl(vi, err);
    }
    if (st != MT_OK) {
        mtx_vimport_close(vi);
        return st;
    }
    *out = vi;
    return MT_OK;
}

/* IEEE 754 binary16 to binary32, subnormals and infinities included. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    float f;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        f = (float)man * (1.0f / 16777216.0f); /* man * 2^-24 */
        return sign ? -f : f;
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void copy_row(const struct mtx_vimport *vi, size_t row, float *out)
{
    size_t i;

    const unsigned char *data = vi->row ? vi->row : vi->data;

    if (vi->vals) {
        memcpy(out, vi->vals + row * vi->dims, vi->dims * sizeof *out);
        return;
    }
    for (i = 0; i < vi->dims; i++) {
        const unsigned char *p = data + (row * vi->dims + i) * 2u;
        if (vi->f16) {
            out[i] = half_to_float((uint16_t)(p[0] | p[1] << 8));
        } else {
            uint32_t bits;
            p = data + (row * vi->dims + i) * 4u;
            bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24;
            memcpy(&out[i], &bits, sizeof bits);
        }
    }
}

enum mt_status mtx_vimport_get(struct mtx_vimport *vi, int64_t chunk_id,
                               float *out, struct mt_error *err)
{
    size_t lo = 0, hi = vi->n;

    if (vi->stream)
        return stream_get(vi, chunk_id, out, err);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vi->ids[mid].id < chunk_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == vi->n || vi->ids[lo].id != chunk_id)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s: no vector for chunk id %lld: every chunk the "
                       "index takes needs one (%zu vectors given)",
                       vi->vals ? vi->path : vi->ids_path, (long long)chunk_id,
                       vi->n);
    copy_row(vi, vi->ids[lo].row, out);
    return MT_OK;
}

int mtx_vimport_is_stream(const struct mtx_vimport *vi)
{
    return vi && vi->stream;
}

void mtx_vimport_close(struct mtx_vimport *vi)
{
    if (!vi)
        return;
    if (vi->map)
        munmap(vi->map, vi->map_len);
    if (vi->npy_fp && vi->npy_fp != stdin)
        fclose(vi->npy_fp);
    if (vi->ids_fp)
        fclose(vi->ids_fp);
    mtx_jsonl_close(vi->jr);
    mt_free(vi->row);
    mt_free(vi->ids);
    mt_free(vi->vals);
    mt_free(vi);
}
