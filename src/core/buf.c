/* Bounded buffers and slices. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "medtrust/core.h"

struct mt_str mtx_str_from(const char *s)
{
    struct mt_str r = {s, s ? strlen(s) : 0};
    return r;
}

int mtx_str_eq(struct mt_str a, struct mt_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

int mtx_str_eq_c(struct mt_str a, const char *s)
{
    return mtx_str_eq(a, mtx_str_from(s));
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

struct mt_str mtx_str_trim(struct mt_str s)
{
    while (s.n && is_space(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n && is_space(s.p[s.n - 1]))
        s.n--;
    return s;
}

uint64_t mtx_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static enum mt_status buf_grow(struct mt_buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 64;
    char *p;

    while (cap < need)
        cap = cap > b->max / 2 ? b->max : cap * 2;
    if (cap > b->max)
        cap = b->max;
    p = mt_realloc(b->data, cap);
    if (!p)
        return MT_ENOMEM;
    b->data = p;
    b->cap = cap;
    return MT_OK;
}

enum mt_status mtx_buf_reserve(struct mt_buf *b, size_t cap)
{
    enum mt_status st;

    if (cap < 1)
        cap = 1;
    if (cap > b->max)
        return MT_ELIMIT;
    if (cap > b->cap || !b->data) {
        st = buf_grow(b, cap);
        if (st != MT_OK)
            return st;
        b->data[b->len] = '\0';
    }
    return MT_OK;
}

enum mt_status mtx_buf_append(struct mt_buf *b, const void *p, size_t n)
{
    if (b->max == 0 || n > b->max - b->len - 1) /* overflow-safe */
        return MT_ELIMIT;
    if (b->len + n + 1 > b->cap || !b->data) {
        enum mt_status st = buf_grow(b, b->len + n + 1);
        if (st != MT_OK)
            return st;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return MT_OK;
}

enum mt_status mtx_buf_append_str(struct mt_buf *b, const char *s)
{
    return mtx_buf_append(b, s, strlen(s));
}

enum mt_status mtx_buf_putc(struct mt_buf *b, char c)
{
    return mtx_buf_append(b, &c, 1);
}

enum mt_status mtx_buf_vprintf(struct mt_buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list ap2;
    int n;
    enum mt_status st;
    char *big;

    va_copy(ap2, ap);
    n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return MT_EINVAL;
    if ((size_t)n < sizeof small)
        return mtx_buf_append(b, small, (size_t)n);
    big = mt_malloc((size_t)n + 1);
    if (!big)
        return MT_ENOMEM;
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    st = mtx_buf_append(b, big, (size_t)n);
    mt_free(big);
    return st;
}

enum mt_status mtx_buf_printf(struct mt_buf *b, const char *fmt, ...)
{
    va_list ap;
    enum mt_status st;

    va_start(ap, fmt);
    st = mtx_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return st;
}

void mtx_buf_reset(struct mt_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *mtx_buf_take(struct mt_buf *b)
{
    char *d = b->data;

    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return d;
}

void mtx_buf_free(struct mt_buf *b)
{
    mt_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

char *mtx_str_printf(const char *fmt, ...)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    va_list ap;
    enum mt_status st;

    va_start(ap, fmt);
    st = mtx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

enum mt_status mtx_grow(void **p, size_t *cap, size_t need, size_t el)
{
    size_t c = *cap ? *cap : 16;
    void *q;

    if (need <= *cap)
        return MT_OK;
    while (c < need && c <= SIZE_MAX / 2)
        c *= 2;
    if (c < need || c > SIZE_MAX / el)
        return MT_ENOMEM;
    q = mt_realloc(*p, c * el);
    if (!q)
        return MT_ENOMEM;
    *p = q;
    *cap = c;
    return MT_OK;
}
