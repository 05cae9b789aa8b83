/* JSON string literals without jansson: one pass, runs of bytes that need
 * no escape copied whole. The escapes are jansson 2.14's dump_string()
 * (src/dump.c) with flags 0, so text written here equals json_dumps()'s;
 * tests/unit/test_text.c compares the two. */
#include "text/json_str.h"

#include <stdint.h>

#include "text/utf8.h"

/* Does byte c need an escape (or a UTF-8 check, at 0x80 and above)? */
static int special(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
}

/* Appends the escape of control character or quote c. */
static enum mt_status put_escape(struct mt_buf *b, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    char seq[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

    switch (c) {
    case '"':
        return mtx_buf_append(b, "\\\"", 2);
    case '\\':
        return mtx_buf_append(b, "\\\\", 2);
    case '\b':
        return mtx_buf_append(b, "\\b", 2);
    case '\f':
        return mtx_buf_append(b, "\\f", 2);
    case '\n':
        return mtx_buf_append(b, "\\n", 2);
    case '\r':
        return mtx_buf_append(b, "\\r", 2);
    case '\t':
        return mtx_buf_append(b, "\\t", 2);
    default:
        return mtx_buf_append(b, seq, sizeof seq);
    }
}

static enum mt_status put_body(struct mt_buf *b, const char *s, size_t n)
{
    size_t i = 0;
    size_t run = 0; /* start of the bytes not yet appended */
    enum mt_status st = MT_OK;

    while (st == MT_OK && i < n) {
        unsigned char c = (unsigned char)s[i];
        int32_t cp;
        size_t len;

        if (!special(c)) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            len = mtx_utf8_decode(s + i, n - i, &cp);
            if (cp < 0)
                return MT_EPARSE;
            i += len;
            continue;
        }
        st = mtx_buf_append(b, s + run, i - run);
        if (st == MT_OK)
            st = put_escape(b, c);
        run = ++i;
    }
    if (st == MT_OK)
        st = mtx_buf_append(b, s + run, n - run);
    return st;
}

static enum mt_status put(struct mt_buf *b, const char *s, size_t n, int quoted)
{
    size_t len = b->len;
    enum mt_status st = quoted ? mtx_buf_putc(b, '"') : MT_OK;

    if (st == MT_OK)
        st = put_body(b, s, n);
    if (st == MT_OK && quoted)
        st = mtx_buf_putc(b, '"');
    if (st != MT_OK && b->data) {
        b->len = len;
        b->data[len] = '\0';
    }
    return st;
}

enum mt_status mtx_json_str(struct mt_buf *b, const char *s, size_t n)
{
    return put(b, s, n, 1);
}

enum mt_status mtx_json_str_body(struct mt_buf *b, const char *s, size_t n)
{
    return put(b, s, n, 0);
}
