/* A record's metadata as JSON text, written directly instead of through
 * jansson objects and json_dumps (a quarter of a PubMed import's
 * instructions went there): each field keeps its value's JSON text, and
 * the object is joined once per record. The bytes are json_dumps()'s with
 * JSON_COMPACT | JSON_PRESERVE_ORDER for the same calls on a json_t
 * (fields in the order first set, a string set again replaced where it
 * stood); tests/unit/test_corpus.c compares the two. */
#include <string.h>

#include "corpus/corpus_int.h"
#include "text/json_str.h"

void mtx_meta_reset(struct mtx_meta *m)
{
    m->n = 0;
}

void mtx_meta_free(struct mtx_meta *m)
{
    size_t i;

    if (!m)
        return;
    for (i = 0; i < MTX_META_FIELDS; i++)
        mtx_buf_free(&m->f[i].val);
    memset(m, 0, sizeof *m);
}

static struct mtx_meta_field *find(const struct mtx_meta *m, const char *key)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        if (strcmp(m->f[i].key, key) == 0)
            return (struct mtx_meta_field *)(uintptr_t)&m->f[i];
    return NULL;
}

int mtx_meta_has(const struct mtx_meta *m, const char *key)
{
    return find(m, key) != NULL;
}

/* The field 'key' (added, empty, when it is new), or NULL when all
 * MTX_META_FIELDS are taken. */
static struct mtx_meta_field *field(struct mtx_meta *m, const char *key,
                                    int array)
{
    struct mtx_meta_field *f = find(m, key);

    if (f)
        return f;
    if (m->n == MTX_META_FIELDS)
        return NULL;
    f = &m->f[m->n++];
    if (f->val.max == 0)
        f->val = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    mtx_buf_reset(&f->val);
    f->key = key;
    f->array = array;
    return f;
}

enum mt_status mtx_meta_str(struct mtx_meta *m, const char *key,
                            const char *val)
{
    struct mtx_meta_field *f;
    size_t keep;
    enum mt_status st;

    if (!val || !*val)
        return MT_OK;
    f = field(m, key, 0);
    if (!f)
        return MT_ELIMIT;
    keep = f->val.len; /* a field set again keeps its place */
    mtx_buf_reset(&f->val);
    st = mtx_json_str(&f->val, val, strlen(val));
    if (st != MT_OK && keep == 0 && f == &m->f[m->n - 1])
        m->n--; /* a new field that failed is not there */
    f->array = 0;
    return st;
}

/* Appends the string parts[0..n) joined to the array field key. */
static enum mt_status push_parts(struct mtx_meta *m, const char *key,
                                 const struct mt_str *parts, size_t n)
{
    struct mtx_meta_field *f = field(m, key, 1);
    size_t len, i;
    enum mt_status st;

    if (!f)
        return MT_ELIMIT;
    if (!f->array)
        return MT_EINVAL; /* json_array_append on a string fails too */
    len = f->val.len;
    st = len ? mtx_buf_putc(&f->val, ',') : MT_OK;
    if (st == MT_OK)
        st = mtx_buf_putc(&f->val, '"');
    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_json_str_body(&f->val, parts[i].p, parts[i].n);
    if (st == MT_OK)
        st = mtx_buf_putc(&f->val, '"');
    if (st != MT_OK && f->val.data) {
        f->val.len = len;
        f->val.data[len] = '\0';
    }
    if (st != MT_OK && len == 0 && f == &m->f[m->n - 1])
        m->n--;
    return st;
}

enum mt_status mtx_meta_push(struct mtx_meta *m, const char *key,
                             const char *val)
{
    struct mt_str one = {val, strlen(val)};

    return push_parts(m, key, &one, 1);
}

enum mt_status mtx_meta_members(const struct mtx_meta *m, struct mt_buf *out)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < m->n; i++) {
        const struct mtx_meta_field *f = &m->f[i];

        if (i)
            st = mtx_buf_putc(out, ',');
        if (st == MT_OK)
            st = mtx_json_str(out, f->key, strlen(f->key));
        if (st == MT_OK)
            st = mtx_buf_putc(out, ':');
        if (st == MT_OK && f->array)
            st = mtx_buf_putc(out, '[');
        if (st == MT_OK)
            st =
                mtx_buf_append(out, f->val.data ? f->val.data : "", f->val.len);
        if (st == MT_OK && f->array)
            st = mtx_buf_putc(out, ']');
    }
    return st;
}

/* At most NAME_MAX_BYTES bytes of an author's name: what snprintf into a
 * 512-byte buffer kept, as the json_t version did. */
#define NAME_MAX_BYTES 511

enum mt_status mtx_meta_author(struct mtx_meta *m, struct mt_buf *given,
                               struct mt_buf *family, struct mt_buf *group)
{
    struct mt_str parts[3];
    size_t n = 0, room = NAME_MAX_BYTES, i;

    mtx_squash_space(group);
    mtx_squash_space(given);
    mtx_squash_space(family);
    if (group->len) {
        parts[n++] = (struct mt_str){group->data, group->len};
    } else if (family->len && given->len) {
        parts[n++] = (struct mt_str){given->data, given->len};
        parts[n++] = MT_STR_C(" ");
        parts[n++] = (struct mt_str){family->data, family->len};
    } else if (family->len) {
        parts[n++] = (struct mt_str){family->data, family->len};
    } else {
        return MT_OK;
    }
    for (i = 0; i < n; i++) { /* cut at NAME_MAX_BYTES, as snprintf did */
        parts[i].n = parts[i].n < room ? parts[i].n : room;
        room -= parts[i].n;
    }
    return push_parts(m, "authors", parts, n);
}
