/* UTF-8 decoding and validation (strict, RFC 3629) and NFKC + case folding
 * through utf8proc's buffer API, so folding allocates only via mt_*. */
#include "text/utf8.h"

#include <string.h>
#include <utf8proc.h>

#include "medtrust/core.h"

/* As utf8proc_map() does, the same options drive every stage: COMPAT
 * only takes effect in decomposition when COMPOSE is also set. */
#define FOLD_OPTIONS                                                           \
    (UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_STABLE)

/* Length of the sequence a lead byte starts, 0 when it is no lead byte.
 * C0, C1 (overlong 2-byte) and F5..FF never start a sequence. */
static size_t lead_len(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0;
}

/* The range the second byte of a sequence must be in after lead byte c
 * (Table 3-7): narrower after E0 and F0 (overlong forms), ED
 * (surrogates) and F4 (past U+10FFFF); later bytes are 80..BF. */
static void second_range(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    *hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
}

int mtx_utf8_step(const char *p, size_t n, int32_t *cp)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned char lo, hi;
    size_t len;
    size_t i;
    int32_t v;

    if (n == 0)
        return MTX_UTF8_SHORT;
    len = lead_len(s[0]);
    if (len <= 1) {
        if (len == 1)
            *cp = s[0];
        return (int)len;
    }
    second_range(s[0], &lo, &hi);
    v = s[0] & (0x7F >> len);
    for (i = 1; i < len; i++) {
        if (i >= n)
            return MTX_UTF8_SHORT;
        if (s[i] < lo || s[i] > hi)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *cp = v;
    return (int)len;
}

size_t mtx_utf8_decode(const char *p, size_t n, int32_t *cp)
{
    int k;

    if (n == 0)
        return 0;
    k = mtx_utf8_step(p, n, cp);
    if (k > 0)
        return (size_t)k;
    *cp = -1;
    return 1;
}

enum mt_status mtx_utf8_validate(const char *p, size_t n, size_t *bad_offset)
{
    size_t i = 0;

    while (i < n) {
        int32_t cp;
        size_t len;

        if ((unsigned char)p[i] < 0x80) {
            i++;
            continue;
        }
        len = mtx_utf8_decode(p + i, n - i, &cp);
        if (cp < 0) {
            if (bad_offset)
                *bad_offset = i;
            return MT_EPARSE;
        }
        i += len;
    }
    return MT_OK;
}

size_t mtx_utf8_count(const char *p, size_t n)
{
    size_t i = 0;
    size_t count = 0;

    while (i < n) {
        int32_t cp;

        i += mtx_utf8_decode(p + i, n - i, &cp);
        count++;
    }
    return count;
}

size_t mtx_utf8_encode(int32_t cp, char out[4])
{
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)out);
}

/* Makes room for 'need' code points. */
static enum mt_status scratch_reserve(struct mt_fold_scratch *s, size_t need)
{
    int32_t *cp;
    size_t cap = s->cap ? s->cap : 64;

    if (need <= s->cap)
        return MT_OK;
    while (cap < need)
        cap *= 2;
    cp = mt_realloc(s->cp, cap * sizeof *cp);
    if (!cp)
        return MT_ENOMEM;
    s->cp = cp;
    s->cap = cap;
    return MT_OK;
}

enum mt_status mtx_text_fold_into(const char *p, size_t n,
                                  struct mt_fold_scratch *s, const char **out,
                                  size_t *out_n)
{
    const utf8proc_uint8_t *in = (const utf8proc_uint8_t *)p;
    utf8proc_ssize_t got;
    enum mt_status st;

    /* A decomposition is rarely longer than 4x the input bytes; retry
     * with the exact size utf8proc asks for when it is. Reserve one
     * extra code point so reencode always has room for the NUL. */
    st = scratch_reserve(s, n + 1 < 16 ? 16 : n + 1);
    if (st != MT_OK)
        return st;
    for (;;) {
        got = utf8proc_decompose(in, (utf8proc_ssize_t)n, s->cp,
                                 (utf8proc_ssize_t)s->cap - 1, FOLD_OPTIONS);
        if (got < 0)
            return got == UTF8PROC_ERROR_NOMEM ? MT_ENOMEM : MT_EPARSE;
        if ((size_t)got < s->cap)
            break;
        st = scratch_reserve(s, (size_t)got + 1);
        if (st != MT_OK)
            return st;
    }
    got = utf8proc_normalize_utf32(s->cp, got, FOLD_OPTIONS);
    if (got < 0)
        return MT_EPARSE;
    got = utf8proc_reencode(s->cp, got, FOLD_OPTIONS);
    if (got < 0)
        return MT_EPARSE;
    *out = (const char *)s->cp;
    *out_n = (size_t)got;
    return MT_OK;
}

void mtx_fold_scratch_free(struct mt_fold_scratch *s)
{
    if (!s)
        return;
    mt_free(s->cp);
    s->cp = NULL;
    s->cap = 0;
}

enum mt_status mtx_text_fold(const char *p, size_t n, char **out, size_t *out_n,
                             struct mt_error *err)
{
    struct mt_fold_scratch s = {NULL, 0};
    const char *folded;
    size_t len;
    size_t bad = 0;
    char *copy;
    enum mt_status st;

    if (mtx_utf8_validate(p, n, &bad) != MT_OK)
        return mt_fail(err, MT_EPARSE, "invalid UTF-8 at byte %zu", bad);
    st = mtx_text_fold_into(p, n, &s, &folded, &len);
    if (st != MT_OK) {
        mtx_fold_scratch_free(&s);
        return mt_fail(err, st, "case folding failed: %s", mt_status_str(st));
    }
    copy = mt_strndup(folded, len);
    mtx_fold_scratch_free(&s);
    if (!copy)
        return mt_fail(err, MT_ENOMEM, "out of memory folding text");
    *out = copy;
    if (out_n)
        *out_n = len;
    return MT_OK;
}

size_t mtx_utf8_cut(const char *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)p[max] & 0xc0) == 0x80)
        max--;
    return max;
}
