/* Parquet's footer (FileMetaData) and page headers in the Thrift compact
 * protocol, read by hand: only the fields import needs are kept, every
 * other field is skipped by its wire type. Every length and count is
 * checked against the bytes left, so hostile input ends in MT_EPARSE. */
#include <string.h>

#include "corpus/parquet.h"
#include "medtrust/core.h"

#define DEPTH_MAX 32

/* Compact protocol wire types. */
enum {
    T_STOP = 0,
    T_TRUE = 1,
    T_FALSE = 2,
    T_BYTE = 3,
    T_I16 = 4,
    T_I32 = 5,
    T_I64 = 6,
    T_DOUBLE = 7,
    T_BINARY = 8,
    T_LIST = 9,
    T_SET = 10,
    T_MAP = 11,
    T_STRUCT = 12
};

struct tc {
    const uint8_t *p;
    const uint8_t *end;
    int depth;
    struct mt_error *err;
};

typedef enum mt_status (*field_fn)(struct tc *t, int id, int type, void *u);

static enum mt_status bad(struct tc *t, const char *why)
{
    return mt_fail(t->err, MT_EPARSE, "corrupt Thrift metadata: %s", why);
}

static enum mt_status varint(struct tc *t, uint64_t *v)
{
    uint64_t x = 0;
    unsigned shift = 0;

    while (t->p < t->end && shift < 64) {
        uint8_t b = *t->p++;

        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return MT_OK;
        }
        shift += 7;
    }
    return bad(t, "varint runs past the end");
}

static enum mt_status i64(struct tc *t, int64_t *v)
{
    uint64_t u = 0;
    enum mt_status st = varint(t, &u);

    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1); /* zigzag */
    return st;
}

static enum mt_status i32(struct tc *t, int type, int32_t *v)
{
    int64_t x = 0;
    enum mt_status st;

    if (type != T_I32 && type != T_I16 && type != T_BYTE)
        return bad(t, "an integer field of another type");
    if (type == T_BYTE) {
        if (t->p >= t->end)
            return bad(t, "byte past the end");
        *v = (int8_t)*t->p++;
        return MT_OK;
    }
    st = i64(t, &x);
    if (st == MT_OK && (x < INT32_MIN || x > INT32_MAX))
        return bad(t, "a 32-bit field out of range");
    *v = (int32_t)x;
    return st;
}

static enum mt_status count(struct tc *t, uint64_t *n)
{
    enum mt_status st = varint(t, n);

    if (st == MT_OK && *n > (uint64_t)(t->end - t->p))
        return bad(t, "a length past the end");
    return st;
}

static enum mt_status skip(struct tc *t, int type);

static enum mt_status list_head(struct tc *t, uint64_t *n, int *et)
{
    uint8_t b;

    if (t->p >= t->end)
        return bad(t, "list past the end");
    b = *t->p++;
    *et = b & 0x0f;
    *n = b >> 4;
    if (*n == 15)
        return count(t, n);
    /* every element takes at least one byte */
    if (*n > (uint64_t)(t->end - t->p))
        return bad(t, "a length past the end");
    return MT_OK;
}

static enum mt_status skip_list(struct tc *t)
{
    uint64_t n = 0, i;
    int et = 0;
    enum mt_status st = list_head(t, &n, &et);

    for (i = 0; st == MT_OK && i < n; i++)
        st = (et == T_TRUE || et == T_FALSE) ? skip(t, T_BYTE) : skip(t, et);
    return st;
}

static enum mt_status skip_map(struct tc *t)
{
    uint64_t n = 0, i;
    int kt, vt;
    enum mt_status st = count(t, &n);

    if (st != MT_OK || n == 0)
        return st;
    if (t->p >= t->end)
        return bad(t, "map past the end");
    kt = *t->p >> 4;
    vt = *t->p++ & 0x0f;
    for (i = 0; st == MT_OK && i < n; i++) {
        st = skip(t, kt);
        if (st == MT_OK)
            st = skip(t, vt);
    }
    return st;
}

static enum mt_status struct_read(struct tc *t, field_fn fn, void *u);

static enum mt_status skip(struct tc *t, int type)
{
    uint64_t n = 0;
    enum mt_status st = MT_OK;

    switch (type) {
    case T_TRUE:
    case T_FALSE:
        return MT_OK;
    case T_BYTE:
        if (t->p >= t->end)
            return bad(t, "byte past the end");
        t->p++;
        return MT_OK;
    case T_I16:
    case T_I32:
    case T_I64:
        return varint(t, &n);
    case T_DOUBLE:
        if (t->end - t->p < 8)
            return bad(t, "double past the end");
        t->p += 8;
        return MT_OK;
    case T_BINARY:
        st = count(t, &n);
        if (st == MT_OK)
            t->p += n;
        return st;
    case T_LIST:
    case T_SET:
        return skip_list(t);
    case T_MAP:
        return skip_map(t);
    case T_STRUCT:
        return struct_read(t, NULL, NULL);
    default:
        return bad(t, "unknown wire type");
    }
}

/* Reads a struct's fields, handing each to fn (which reads it, or returns
 * MT_ENOTFOUND to have it skipped); fn NULL skips them all. */
static enum mt_status struct_read(struct tc *t, field_fn fn, void *u)
{
    int last = 0;
    enum mt_status st = MT_OK;

    if (++t->depth > DEPTH_MAX)
        return bad(t, "nested too deep");
    for (;;) {
        uint8_t b;
        int type, id;

        if (t->p >= t->end)
            return bad(t, "struct past the end");
        b = *t->p++;
        if (b == T_STOP)
            break;
        type = b & 0x0f;
        if (b >> 4) {
            id = last + (b >> 4);
        } else {
            int32_t x = 0;

            st = i32(t, T_I16, &x);
            if (st != MT_OK)
                return st;
            id = x;
        }
        last = id;
        st = fn ? fn(t, id, type, u) : MT_ENOTFOUND;
        if (st == MT_ENOTFOUND)
            st = skip(t, type);
        if (st != MT_OK)
            return st;
    }
    t->depth--;
    return MT_OK;
}

static enum mt_status str_dup(struct tc *t, int type, char **out)
{
    uint64_t n = 0;
    enum mt_status st;

    if (type != T_BINARY)
        return bad(t, "a string field of another type");
    st = count(t, &n);
    if (st != MT_OK)
        return st;
    mt_free(*out);
    *out = mt_strndup((const char *)t->p, (size_t)n);
    if (!*out)
        return mt_fail(t->err, MT_ENOMEM, "out of memory");
    t->p += n;
    return MT_OK;
}

/* A list of structs, each read into the next element of an array of
 * 'size'-byte items allocated here. */
static enum mt_status struct_list(struct tc *t, int type, size_t size,
                                  void **items, size_t *n, field_fn fn)
{
    uint64_t len = 0, i;
    int et = 0;
    enum mt_status st;

    if (type != T_LIST)
        return bad(t, "a list field of another type");
    st = list_head(t, &len, &et);
    if (st != MT_OK)
        return st;
    if (et != T_STRUCT)
        return bad(t, "a list of structs holds another type");
    if (*items)
        return bad(t, "a list given twice");
    *items = mt_calloc(len ? (size_t)len : 1, size);
    if (!*items)
        return mt_fail(t->err, MT_ENOMEM, "out of memory");
    for (i = 0; st == MT_OK && i < len; i++) {
        st = struct_read(t, fn, (char *)*items + i * size);
        *n = (size_t)i + 1;
    }
    return st;
}

/* ==== FileMetaData ==== */

static enum mt_status schema_field(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_schema *s = u; /* a group: nchild > 0 */
    int32_t v = 0;
    enum mt_status st;

    if (id == 4)
        return str_dup(t, type, &s->name);
    if (id != 1 && id != 2 && id != 3 && id != 5)
        return MT_ENOTFOUND;
    st = i32(t, type, &v);
    if (id == 1)
        s->type = v;
    else if (id == 2)
        s->type_len = v;
    else if (id == 3)
        s->rep = v;
    else
        s->nchild = v;
    return st;
}

static enum mt_status chunk_meta_field(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_chunk *c = u;
    int32_t v = 0;
    int64_t *w = NULL;

    if (id == 1 || id == 4) {
        enum mt_status st = i32(t, type, &v);

        *(id == 1 ? &c->type : &c->codec) = v;
        return st;
    }
    if (id == 5)
        w = &c->nvalues;
    else if (id == 7)
        w = &c->csize;
    else if (id == 9)
        w = &c->data_off;
    else if (id == 11)
        w = &c->dict_off;
    if (!w)
        return MT_ENOTFOUND;
    if (type != T_I64 && type != T_I32)
        return bad(t, "an integer field of another type");
    return i64(t, w);
}

static enum mt_status chunk_field(struct tc *t, int id, int type, void *u)
{
    if (id != 3)
        return MT_ENOTFOUND;
    if (type != T_STRUCT)
        return bad(t, "ColumnMetaData of another type");
    ((struct mtx_pq_chunk *)u)->type = -1;
    return struct_read(t, chunk_meta_field, u);
}

static enum mt_status group_field(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_group *g = u;

    if (id == 1)
        return struct_list(t, type, sizeof *g->c, (void **)&g->c, &g->nc,
                           chunk_field);
    if (id == 3) {
        if (type != T_I64 && type != T_I32)
            return bad(t, "num_rows of another type");
        return i64(t, &g->rows);
    }
    return MT_ENOTFOUND;
}

static enum mt_status meta_field(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_meta *m = u;

    if (id == 2)
        return struct_list(t, type, sizeof *m->s, (void **)&m->s, &m->ns,
                           schema_field);
    if (id == 3) {
        if (type != T_I64 && type != T_I32)
            return bad(t, "num_rows of another type");
        return i64(t, &m->rows);
    }
    if (id == 4)
        return struct_list(t, type, sizeof *m->g, (void **)&m->g, &m->ng,
                           group_field);
    return MT_ENOTFOUND;
}

enum mt_status mtx_pq_meta_parse(const uint8_t *p, size_t n,
                                 struct mtx_pq_meta *m, struct mt_error *err)
{
    struct tc t = {p, p + n, 0, err};
    size_t i;

    memset(m, 0, sizeof *m);
    /* a schema element without a type field is a group */
    if (struct_read(&t, meta_field, m) != MT_OK)
        return err ? err->status : MT_EPARSE;
    for (i = 0; i < m->ns; i++)
        if (!m->s[i].name)
            return bad(&t, "a schema element without a name");
    return MT_OK;
}

void mtx_pq_meta_free(struct mtx_pq_meta *m)
{
    size_t i;

    for (i = 0; m->s && i < m->ns; i++)
        mt_free(m->s[i].name);
    for (i = 0; m->g && i < m->ng; i++)
        mt_free(m->g[i].c);
    mt_free(m->s);
    mt_free(m->g);
    memset(m, 0, sizeof *m);
}

/* ==== PageHeader ==== */

static enum mt_status enc_field(struct tc *t, int type, int *enc)
{
    int32_t v = 0;
    enum mt_status st = i32(t, type, &v);

    *enc = v;
    return st;
}

static enum mt_status v1_hdr(struct tc *t, int id, int type, void *u)
{
    if (id == 2)
        return enc_field(t, type, &((struct mtx_pq_page *)u)->enc);
    if (id == 1)
        return i32(t, type, &((struct mtx_pq_page *)u)->nvalues);
    return MT_ENOTFOUND;
}

static enum mt_status v2_hdr(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_page *h = u;

    switch (id) {
    case 1:
        return i32(t, type, &h->nvalues);
    case 4:
        return enc_field(t, type, &h->enc);
    case 5:
        return i32(t, type, &h->def_len);
    case 6:
        return i32(t, type, &h->rep_len);
    case 7:
        if (type != T_TRUE && type != T_FALSE)
            return bad(t, "is_compressed of another type");
        h->compressed = type == T_TRUE;
        return MT_OK;
    default:
        return MT_ENOTFOUND;
    }
}

static enum mt_status page_field(struct tc *t, int id, int type, void *u)
{
    struct mtx_pq_page *h = u;

    if (id >= 1 && id <= 3) {
        int32_t v = 0;
        enum mt_status st = i32(t, type, &v);

        if (id == 1)
            h->type = v;
        else if (id == 2)
            h->usize = v;
        else
            h->csize = v;
        return st;
    }
    if ((id == 5 || id == 7 || id == 8) && type != T_STRUCT)
        return bad(t, "a page header of another type");
    if (id == 5 || id == 7) /* DataPageHeader, DictionaryPageHeader */
        return struct_read(t, v1_hdr, h);
    if (id == 8)
        return struct_read(t, v2_hdr, h);
    return MT_ENOTFOUND;
}

enum mt_status mtx_pq_page_parse(const uint8_t *p, size_t n,
                                 struct mtx_pq_page *h, size_t *used,
                                 struct mt_error *err)
{
    struct tc t = {p, p + n, 0, err};
    enum mt_status st;

    memset(h, 0, sizeof *h);
    h->type = -1;
    h->compressed = 1;
    st = struct_read(&t, page_field, h);
    if (st != MT_OK)
        return st;
    if (h->usize < 0 || h->csize < 0 || h->nvalues < 0 || h->def_len < 0 ||
        h->rep_len < 0)
        return bad(&t, "a negative size in a page header");
    *used = (size_t)(t.p - p);
    return MT_OK;
}
