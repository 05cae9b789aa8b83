/* Bounded growable byte buffers and string slices. A buffer never grows
 * past its 'max'; its data is always NUL-terminated once allocated. */
#ifndef MT_CORE_BUF_H
#define MT_CORE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "medtrust/core.h" /* struct mt_str */
#include "medtrust/status.h"

#define MT_STR_C(lit) ((struct mt_str){(lit), sizeof(lit) - 1})

struct mt_buf {
    char *data; /* NULL until the first append */
    size_t len;
    size_t cap;
    size_t max; /* hard limit on cap, NUL included */
};

/* An empty buffer that may hold up to max-1 bytes plus the NUL. */
#define MT_BUF_INIT(max_) ((struct mt_buf){NULL, 0, 0, (max_)})
/* Default limit for buffers that hold one record or one document. */
#define MT_BUF_DEFAULT_MAX ((size_t)1 << 30)

struct mt_str mtx_str_from(const char *s);
int mtx_str_eq(struct mt_str a, struct mt_str b);
int mtx_str_eq_c(struct mt_str a, const char *s);
struct mt_str mtx_str_trim(struct mt_str s);

/* FNV-1a (64-bit) of the n bytes at p, continuing from h: start from
 * MTX_FNV1A_INIT, FNV's offset basis (14695981039346656037; the model-call
 * cache's keys are made with it). Not for keys an adversary chooses. */
#define MTX_FNV1A_INIT 0xcbf29ce484222325ULL
uint64_t mtx_fnv1a(uint64_t h, const void *p, size_t n);

/* Appends n bytes. On any failure the buffer is left unchanged. Returns
 * MT_ELIMIT past max, MT_ENOMEM when allocation fails. */
enum mt_status mtx_buf_append(struct mt_buf *b, const void *p, size_t n);
enum mt_status mtx_buf_append_str(struct mt_buf *b, const char *s);
enum mt_status mtx_buf_putc(struct mt_buf *b, char c);
enum mt_status mtx_buf_printf(struct mt_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
enum mt_status mtx_buf_vprintf(struct mt_buf *b, const char *fmt, va_list ap);
/* Makes sure data is allocated (an empty string) so callers may read it. */
enum mt_status mtx_buf_reserve(struct mt_buf *b, size_t cap);
/* Empties the buffer but keeps its memory. */
void mtx_buf_reset(struct mt_buf *b);
/* Hands the data to the caller (free with mt_free) and empties b. May
 * return NULL when nothing was ever appended. */
char *mtx_buf_take(struct mt_buf *b);
void mtx_buf_free(struct mt_buf *b);
/* A new string formatted as printf does, at most MT_BUF_DEFAULT_MAX bytes
 * (free with mt_free); NULL when it cannot be allocated or is too long. */
char *mtx_str_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Makes room for 'need' elements of 'el' bytes in the array *p of *cap
 * (capacity doubled from 16, so appends are amortised O(1)); *p and *cap
 * are unchanged on failure. Returns MT_OK, or MT_ENOMEM when out of
 * memory or the size overflows. The one growable-array helper. */
enum mt_status mtx_grow(void **p, size_t *cap, size_t need, size_t el);

#endif
