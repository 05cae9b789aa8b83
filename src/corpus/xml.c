/* Streaming XML for the importers: a scanner made for the XML that PubMed,
 * PMC JATS and MedQuAD use, fed by gz.c (gzip through ISA-L, or a plain
 * file as it is). It keeps the element path and sends character data to one
 * capture buffer; memory is bounded by the largest markup token, the
 * deepest path and the largest captured field, not by the file.
 *
 * What it reads as XML 1.0 does (and as expat, which it replaces, did;
 * tests/unit/test_xml.c checks the two give the same events): UTF-8 only,
 * checked (no overlongs, surrogates, U+FFFE/U+FFFF or control characters);
 * line ends folded to LF; the five predefined entities and numeric
 * character references; CDATA sections as text; attribute values with
 * their white space folded to spaces; comments, processing instructions
 * and the DOCTYPE skipped. An undeclared entity is an error unless the
 * DOCTYPE names an external subset (which, like expat by default, it does
 * not read): then it is dropped. Where it departs from a full parser it
 * refuses rather than guesses: other encodings, and ENTITY or ATTLIST
 * declarations in an internal subset, are errors naming what is missing.
 * Name characters past ASCII are taken as any UTF-8 (expat checks them
 * against Unicode's tables); that only lets through some names a
 * validating parser would refuse. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define XML_BLOCK (256 * 1024)           /* first window and read size */
#define XML_TOKEN_MAX ((size_t)16 << 20) /* one tag, comment, CDATA, DTD */
#define XML_PATH_MAX 2048
#define XML_DEPTH_MAX 256
#define XML_ATTR_MAX 256

/* What a scanning step did: consumed its token, needs more data in the
 * window (nothing consumed), or failed (detail in x->err). */
enum step { STEP_OK, STEP_MORE, STEP_FAIL };

struct attr_span {
    char *name;
    char *name_end;
    char *val;
    char *val_end;
    int plain; /* no reference or white space to fold: used as it is */
};

struct mt_xml {
    const struct mt_xml_fns *fns;
    void *user;
    const char *file;
    struct mtx_gz *gz;      /* the input, or else: */
    const char *mem;        /* an in-memory document */
    size_t mem_len, mem_at; /* its length and bytes read */
    struct mt_buf *cap;
    char path[XML_PATH_MAX];
    size_t len;               /* strlen(path) */
    size_t at[XML_DEPTH_MAX]; /* path length before each element */
    size_t depth;
    struct mt_error err; /* a handler's failure, or the scanner's */
    /* The window: buf[lo..vhi) is checked text not yet scanned, ended by
     * a NUL written over buf[vhi] (kept in 'saved'); buf[vhi..hi) is read
     * but not yet checked (a UTF-8 sequence cut by the read, or the bad
     * byte when 'bad'). One byte past hi is always allocated. */
    char *buf;
    size_t size;
    size_t lo, vhi, hi;
    char saved;
    int bad;                 /* buf[vhi] is not allowed in XML */
    int eof;                 /* the input has no more bytes */
    int final;               /* eof, and everything read is checked */
    unsigned long line_base; /* lines before buf[0], from 1 */
    size_t tok;              /* where the token being handled starts */
    int started;             /* anything consumed (the XML declaration) */
    int doctype;             /* a DOCTYPE was read */
    int undeclared_ok;       /* an external subset: unknown entities drop */
    int standalone;          /* standalone="yes" */
    int root_done;           /* the root element has ended */
    const char *attrs[2 * XML_ATTR_MAX + 1];
    struct attr_span spans[XML_ATTR_MAX];
};

/* ==== Character classes ==== */

enum {
    C_NAME_START = 1, /* letters, '_', ':', and every byte past ASCII */
    C_NAME = 2,       /* the above, digits, '-', '.' */
    C_SPACE = 4,      /* XML's S: space, TAB, LF, CR */
    C_TEXT_STOP = 8,  /* ends a run of plain text: NUL < & CR ] */
    C_VAL_STOP = 16,  /* ends a run of an attribute value: NUL < & TAB LF
                         CR ' " */
};

static unsigned char cls[256];

static void cls_init_once(void)
{
    int c;

    for (c = 0; c < 256; c++) {
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        int start = alpha || c == '_' || c == ':' || c >= 0x80;
        int name = start || (c >= '0' && c <= '9') || c == '-' || c == '.';

        cls[c] =
            (unsigned char)((start ? C_NAME_START : 0) | (name ? C_NAME : 0));
    }
    cls[' '] |= C_SPACE;
    cls['\t'] |= C_SPACE | C_VAL_STOP;
    cls['\n'] |= C_SPACE | C_VAL_STOP;
    cls['\r'] |= C_SPACE | C_TEXT_STOP | C_VAL_STOP;
    cls[0] |= C_TEXT_STOP | C_VAL_STOP;
    cls['<'] |= C_TEXT_STOP | C_VAL_STOP;
    cls['&'] |= C_TEXT_STOP | C_VAL_STOP;
    cls[']'] |= C_TEXT_STOP;
    cls['\''] |= C_VAL_STOP;
    cls['"'] |= C_VAL_STOP;
}

#define IS(c, k) (cls[(unsigned char)(c)] & (k))

static char *skip_space(char *p)
{
    while (IS(*p, C_SPACE))
        p++;
    return p;
}

static char *skip_name(char *p)
{
    while (IS(*p, C_NAME))
        p++;
    return p;
}

/* ==== Checking the bytes ==== */

/* Length of a well-formed UTF-8 sequence of an allowed character at p
 * (n bytes there), 0 when it is not one, -1 when n cuts it short: the
 * text layer's decoder, less U+FFFE and U+FFFF (XML 1.0's Char). */
static int utf8_len(const unsigned char *p, size_t n)
{
    int32_t cp = 0;
    int k = mtx_utf8_step((const char *)p, n, &cp);

    return k > 0 && (cp == 0xFFFE || cp == 0xFFFF) ? 0 : k;
}

/* Eight bytes of printable ASCII: no high bit, no byte under 0x20. */
static int word_plain(const unsigned char *p)
{
    uint64_t w;

    memcpy(&w, p, 8);
    return ((w | (w - 0x2020202020202020ull)) & 0x8080808080808080ull) == 0;
}

/* Length of the prefix of p[0..n) made of allowed characters; *bad is 1
 * when it ends at a byte that is not allowed, 0 when at n or at a UTF-8
 * sequence that n cuts short. */
static size_t valid_prefix(const unsigned char *p, size_t n, int *bad)
{
    size_t i = 0;
    int k;

    *bad = 0;
    while (i < n) {
        if (i + 8 <= n && word_plain(p + i)) {
            i += 8;
            continue;
        }
        if (p[i] >= 0x20 && p[i] < 0x80) {
            i++;
            continue;
        }
        if (p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
            i++;
            continue;
        }
        k = p[i] < 0x80 ? 0 : utf8_len(p + i, n - i);
        if (k <= 0) {
            *bad = k == 0;
            return i;
        }
        i += (size_t)k;
    }
    return i;
}

/* ==== Positions and errors ==== */

static unsigned long line_at(const struct mt_xml *x, size_t off)
{
    unsigned long line = x->line_base;
    const char *p = x->buf, *end = x->buf + off;

    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        line++;
        p++;
    }
    return line;
}

static enum mt_status bad_at(struct mt_xml *x, const char *at, const char *why)
{
    size_t off = (size_t)(at - x->buf);

    return mt_fail(&x->err, MT_EPARSE, "%s:%lu: malformed XML: %s", x->file,
                   line_at(x, off), why);
}

static enum step bad_xml(struct mt_xml *x, const char *at, const char *why)
{
    bad_at(x, at, why);
    return STEP_FAIL;
}

/* ==== The window ==== */

/* Reads more input into buf[hi..size-1); *n is 0 at the end. A truncated
 * gzip stream is an error here, where a plain read would just stop early. */
static enum mt_status read_more(struct mt_xml *x, size_t *n)
{
    size_t room = x->size - x->hi - 1;
    enum mt_status st;

    if (!x->gz) {
        *n = x->mem_len - x->mem_at < room ? x->mem_len - x->mem_at : room;
        memcpy(x->buf + x->hi, x->mem + x->mem_at, *n);
        x->mem_at += *n;
        return MT_OK;
    }
    st = mtx_gz_read(x->gz, x->buf + x->hi, room, n, &x->err);
    if (st != MT_OK)
        mt_error_prefix(&x->err, "%s:%lu", x->file, line_at(x, x->lo));
    return st;
}

/* Moves the unscanned bytes to the front, and doubles the window when they
 * fill it (a token longer than the window), up to XML_TOKEN_MAX. */
static enum mt_status make_room(struct mt_xml *x)
{
    char *nb;

    if (x->lo > 0) {
        x->line_base = line_at(x, x->lo);
        memmove(x->buf, x->buf + x->lo, x->hi - x->lo);
        x->hi -= x->lo;
        x->vhi -= x->lo;
        x->lo = 0;
    }
    if (x->hi + 1 < x->size)
        return MT_OK;
    if (x->size >= XML_TOKEN_MAX)
        return mt_fail(&x->err, MT_ELIMIT,
                       "%s:%lu: a tag, comment, CDATA section or DOCTYPE is "
                       "over %zu MiB",
                       x->file, line_at(x, 0), XML_TOKEN_MAX >> 20);
    nb = mt_realloc(x->buf, x->size * 2);
    if (!nb)
        return mt_fail(&x->err, MT_ENOMEM, "%s: out of memory", x->file);
    x->buf = nb;
    x->size *= 2;
    return MT_OK;
}

/* Reads on, checks what was read, and ends the checked text with a NUL. */
static enum mt_status refill(struct mt_xml *x)
{
    enum mt_status st;
    size_t n = 0, ok;

    x->buf[x->vhi] = x->saved;
    st = make_room(x);
    if (st == MT_OK)
        st = read_more(x, &n);
    if (st != MT_OK)
        return st;
    x->hi += n;
    x->eof = n == 0;
    ok = valid_prefix((const unsigned char *)x->buf + x->vhi, x->hi - x->vhi,
                      &x->bad);
    x->vhi += ok;
    if (x->eof && x->vhi < x->hi)
        x->bad = 1; /* a UTF-8 sequence the end of the file cuts */
    x->final = x->eof && !x->bad;
    x->saved = x->buf[x->vhi];
    x->buf[x->vhi] = '\0';
    return MT_OK;
}

/* ==== Handlers and the element path ==== */

static enum step handler_failed(struct mt_xml *x, enum mt_status st)
{
    if (x->err.status == MT_OK)
        mt_fail(&x->err, st, "%s", mt_status_str(st));
    mt_error_prefix(&x->err, "%s:%lu", x->file, line_at(x, x->tok));
    return STEP_FAIL;
}

static enum step push(struct mt_xml *x, const char *name, size_t n)
{
    if (x->depth >= XML_DEPTH_MAX || x->len + n + 2 > XML_PATH_MAX) {
        mt_fail(&x->err, MT_ELIMIT, "elements nested too deep");
        return handler_failed(x, MT_ELIMIT);
    }
    x->at[x->depth++] = x->len;
    if (x->len)
        x->path[x->len++] = '/';
    memcpy(x->path + x->len, name, n);
    x->len += n;
    x->path[x->len] = '\0';
    return STEP_OK;
}

/* Calls the end handler of the current element, then closes it. */
static enum step close_element(struct mt_xml *x, const char *name)
{
    enum mt_status st = MT_OK;

    if (x->fns->end)
        st = x->fns->end(x, name, x->user);
    x->len = x->at[--x->depth];
    x->path[x->len] = '\0';
    if (x->depth == 0)
        x->root_done = 1;
    return st == MT_OK ? STEP_OK : handler_failed(x, st);
}

/* ==== References ==== */

static int xml_char(uint32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "&#NNN;" or "&#xHHH;" at p: the character's UTF-8 in out[*n]. */
static enum step char_ref(struct mt_xml *x, char *p, char **q, char *out,
                          size_t *n)
{
    int hex = p[2] == 'x';
    char *d = p + 2 + hex;
    uint32_t c = 0;
    int v;

    for (;; d++) {
        v = hex ? hex_digit(*d) : (*d >= '0' && *d <= '9' ? *d - '0' : -1);
        if (v < 0)
            break;
        c = c * (hex ? 16u : 10u) + (uint32_t)v;
        if (c > 0x10FFFF)
            return bad_xml(x, p, "reference to invalid character number");
    }
    if (*d == '\0')
        return STEP_MORE;
    if (*d != ';' || d == p + 2 + hex)
        return bad_xml(x, p, "malformed character reference");
    if (!xml_char(c))
        return bad_xml(x, p, "reference to invalid character number");
    *n = mtx_utf8_encode((int32_t)c, out); /* xml_char: a scalar value */
    *q = d + 1;
    return STEP_OK;
}

/* The reference at p ('&'): its UTF-8 in out[*n] (0 bytes for an
 * undeclared entity that an external subset may declare), *q past ';'. */
static enum step reference(struct mt_xml *x, char *p, char **q, char *out,
                           size_t *n)
{
    static const char *const names[] = {"lt", "gt", "amp", "apos", "quot"};
    static const char chars[] = "<>&'\"";
    char *e;
    size_t i, len;

    if (p[1] == '\0' || (p[1] == '#' && p[2] == '\0') ||
        (p[1] == '#' && p[2] == 'x' && p[3] == '\0'))
        return STEP_MORE;
    if (p[1] == '#')
        return char_ref(x, p, q, out, n);
    if (!IS(p[1], C_NAME_START))
        return bad_xml(x, p, "not well-formed (a bare '&')");
    e = skip_name(p + 1);
    if (*e == '\0')
        return STEP_MORE;
    if (*e != ';')
        return bad_xml(x, p, "not well-formed (a reference without ';')");
    len = (size_t)(e - p - 1);
    *q = e + 1;
    *n = 0;
    for (i = 0; i < 5; i++)
        if (strlen(names[i]) == len && memcmp(p + 1, names[i], len) == 0) {
            out[0] = chars[i];
            *n = 1;
            return STEP_OK;
        }
    if (x->undeclared_ok && !x->standalone)
        return STEP_OK; /* as expat: declared, maybe, where it does not read */
    return bad_xml(x, p, "undefined entity");
}

/* ==== Text ==== */

static enum step emit(struct mt_xml *x, const char *p, size_t n)
{
    enum mt_status st;

    if (!x->cap || n == 0)
        return STEP_OK;
    st = mtx_buf_append(x->cap, p, n);
    if (st == MT_OK)
        return STEP_OK;
    mt_fail(&x->err, st, "a field is over %zu bytes", x->cap->max - 1);
    return handler_failed(x, st);
}

/* Text outside the root element: white space only. */
static enum step outer_text(struct mt_xml *x, char *p)
{
    char *e = skip_space(p);

    x->lo = (size_t)(e - x->buf);
    x->started |= e > p;
    if (*e == '<' || *e == '\0')
        return *e ? STEP_OK : STEP_MORE;
    return bad_xml(x, e,
                   x->root_done ? "junk after document element"
                                : "text before the root element");
}

/* One special character of text at p (& CR ]): handled, *p moved on. */
static enum step text_special(struct mt_xml *x, char **pp)
{
    char *p = *pp, *q = p + 1;
    char out[4];
    size_t n = 1;
    enum step r;

    if (*p == '&') {
        r = reference(x, p, &q, out, &n);
        if (r != STEP_OK)
            return r;
    } else if (*p == '\r') {
        if (p[1] == '\0' && !x->final)
            return STEP_MORE; /* an LF may follow */
        out[0] = '\n';
        q = p + 1 + (p[1] == '\n');
    } else { /* ']' */
        if ((p[1] == '\0' || (p[1] == ']' && p[2] == '\0')) && !x->final)
            return STEP_MORE;
        if (p[1] == ']' && p[2] == '>')
            return bad_xml(x, p, "']]>' in text");
        out[0] = ']';
    }
    *pp = q;
    return emit(x, out, n);
}

/* Past the plain text at p, to the first NUL < & CR or ] ('end', the
 * window's NUL, ends every run). With SSE2 (every x86-64) sixteen bytes at
 * a time, never reading past 'end': text is most of the bytes. */
static char *skip_text(char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i lt = _mm_set1_epi8('<'), amp = _mm_set1_epi8('&');
    const __m128i cr = _mm_set1_epi8('\r'), rb = _mm_set1_epi8(']');
    __m128i v, hit;
    int bits;

    while (p + 16 <= end) {
        v = _mm_loadu_si128((const __m128i *)(const void *)p);
        hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, amp)),
            _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, rb)));
        bits = _mm_movemask_epi8(hit);
        if (bits)
            return p + __builtin_ctz((unsigned)bits);
        p += 16;
    }
#else
    (void)end;
#endif
    while (!IS(*p, C_TEXT_STOP))
        p++;
    return p;
}

/* Character data up to the next '<' or the end of the window. */
static enum step text(struct mt_xml *x, char *p)
{
    char *s;
    enum step r;

    if (x->depth == 0)
        return outer_text(x, p);
    for (;;) {
        s = p;
        p = skip_text(p, x->buf + x->vhi);
        r = emit(x, s, (size_t)(p - s));
        x->lo = (size_t)(p - x->buf);
        if (r != STEP_OK || *p == '<')
            return r;
        if (*p == '\0')
            return STEP_MORE;
        r = text_special(x, &p);
        if (r != STEP_OK)
            return r;
        x->lo = (size_t)(p - x->buf);
    }
}

/* ==== Tags ==== */

/* Reads one attribute's value (quote at p) into s; *q past the quote. */
static enum step attr_value(struct mt_xml *x, char *p, struct attr_span *s,
                            char **q)
{
    char quote = *p, *v = p + 1;

    s->val = v;
    s->plain = 1;
    for (;;) {
        while (!IS(*v, C_VAL_STOP))
            v++;
        if (*v == quote)
            break;
        if (*v == '\0')
            return STEP_MORE;
        if (*v == '<')
            return bad_xml(x, v, "'<' in an attribute value");
        if (*v == '&' || IS(*v, C_SPACE))
            s->plain = 0;
        v++;
    }
    s->val_end = v;
    *q = v + 1;
    return STEP_OK;
}

/* Finds the attributes of the start tag whose name ends at p, up to its
 * '>'; nothing is changed, so a STEP_MORE can start over. */
static enum step scan_attrs(struct mt_xml *x, char *p, size_t *n, int *empty,
                            char **end)
{
    struct attr_span *s;
    char *q;
    enum step r;

    for (*n = 0;; (*n)++) {
        q = skip_space(p);
        if (*q == '>' || (*q == '/' && q[1] == '>')) {
            *empty = *q == '/';
            *end = q + 1 + *empty;
            return STEP_OK;
        }
        if (*q == '\0' || (*q == '/' && q[1] == '\0'))
            return STEP_MORE;
        if (q == p || !IS(*q, C_NAME_START))
            return bad_xml(x, q, "not well-formed (invalid token)");
        if (*n == XML_ATTR_MAX)
            return bad_xml(x, q, "more than 256 attributes in a tag");
        s = &x->spans[*n];
        s->name = q;
        s->name_end = skip_name(q);
        q = skip_space(s->name_end);
        if (*q == '\0')
            return STEP_MORE;
        if (*q != '=')
            return bad_xml(x, q, "not well-formed (no '=' after a name)");
        q = skip_space(q + 1);
        if (*q == '\0')
            return STEP_MORE;
        if (*q != '"' && *q != '\'')
            return bad_xml(x, q, "not well-formed (an unquoted value)");
        r = attr_value(x, q, s, &p);
        if (r != STEP_OK)
            return r;
    }
}

/* Decodes a value in place (references, white space folded to spaces as
 * XML's attribute-value normalization does for CDATA attributes) and ends
 * it with a NUL; the result is never longer than the source. */
static enum step decode_value(struct mt_xml *x, struct attr_span *s)
{
    char *r = s->val, *w = s->val, *q;
    char out[4];
    size_t n;

    while (r < s->val_end) {
        if (*r == '&') {
            if (reference(x, r, &q, out, &n) != STEP_OK)
                return STEP_FAIL; /* the token is whole: no STEP_MORE */
            memcpy(w, out, n);
            w += n;
            r = q;
        } else if (IS(*r, C_SPACE)) {
            r += 1 + (r[0] == '\r' && r[1] == '\n'); /* before w writes */
            *w++ = ' ';
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return STEP_OK;
}

/* Ends names and values with NULs, decodes them and fills x->attrs. */
static enum step make_attrs(struct mt_xml *x, size_t n)
{
    size_t i, j;
    struct attr_span *s;

    for (i = 0; i < n; i++) {
        s = &x->spans[i];
        *s->name_end = '\0';
        if (s->plain)
            *s->val_end = '\0';
        else if (decode_value(x, s) != STEP_OK)
            return STEP_FAIL;
        for (j = 0; j < i; j++)
            if (strcmp(x->attrs[2 * j], s->name) == 0)
                return bad_xml(x, s->name, "duplicate attribute");
        x->attrs[2 * i] = s->name;
        x->attrs[2 * i + 1] = s->val;
    }
    x->attrs[2 * n] = NULL;
    return STEP_OK;
}

static enum step start_tag(struct mt_xml *x, char *p)
{
    char *name = p + 1, *name_end, *end;
    size_t n;
    int empty = 0;
    enum step r;
    enum mt_status st = MT_OK;

    if (!IS(*name, C_NAME_START))
        return bad_xml(x, name, "not well-formed (invalid token)");
    name_end = skip_name(name);
    r = scan_attrs(x, name_end, &n, &empty, &end);
    if (r != STEP_OK)
        return r;
    if (x->root_done)
        return bad_xml(x, p, "junk after document element");
    x->tok = (size_t)(p - x->buf);
    if (make_attrs(x, n) != STEP_OK)
        return STEP_FAIL;
    *name_end = '\0';
    x->lo = (size_t)(end - x->buf);
    x->started = 1;
    if (push(x, name, (size_t)(name_end - name)) != STEP_OK)
        return STEP_FAIL;
    if (x->fns->start)
        st = x->fns->start(x, name, x->attrs, x->user);
    if (st != MT_OK)
        return handler_failed(x, st);
    return empty ? close_element(x, name) : STEP_OK;
}

static enum step end_tag(struct mt_xml *x, char *p)
{
    char *name = p + 2, *e = skip_name(name), *q = skip_space(e);
    size_t n = (size_t)(e - name);
    const char *open;

    if (*q == '\0')
        return STEP_MORE;
    if (*q != '>' || n == 0)
        return bad_xml(x, p, "not well-formed (invalid token)");
    if (x->depth == 0)
        return bad_xml(x, p, "an end tag with no element open");
    open = x->path + x->at[x->depth - 1] + (x->depth > 1);
    if ((size_t)(x->path + x->len - open) != n || memcmp(open, name, n) != 0)
        return bad_xml(x, p, "mismatched tag");
    *e = '\0';
    x->tok = (size_t)(p - x->buf);
    x->lo = (size_t)(q + 1 - x->buf);
    return close_element(x, name);
}

/* ==== Comments, processing instructions, CDATA, DOCTYPE ==== */

/* Does p start with lit? -1: cannot tell yet (the window ends first). */
static int starts(const char *p, const char *lit)
{
    for (; *lit; p++, lit++)
        if (*p != *lit)
            return *p == '\0' ? -1 : 0;
    return 1;
}

static enum step comment(struct mt_xml *x, char *p, char **end)
{
    char *d = p + 4;

    while ((d = strstr(d, "--")) != NULL && d[2] != '>') {
        if (d[2] == '\0')
            return STEP_MORE;
        return bad_xml(x, d, "'--' inside a comment");
    }
    if (!d)
        return STEP_MORE;
    *end = d + 3;
    return STEP_OK;
}

/* Is v[0..n) a legal value of the XML declaration's pseudo-attribute i
 * (version, encoding, standalone)? */
static int decl_value_ok(int i, const char *v, size_t n)
{
    size_t k;

    if (i == 2)
        return (n == 3 && memcmp(v, "yes", 3) == 0) ||
               (n == 2 && memcmp(v, "no", 2) == 0);
    if (n == 0 || (i == 1 && !((v[0] | 0x20) >= 'a' && (v[0] | 0x20) <= 'z')))
        return 0;
    for (k = 0; k < n; k++)
        if (!(IS(v[k], C_NAME) && (unsigned char)v[k] < 0x80) ||
            (i == 1 && v[k] == ':'))
            return 0;
    return 1;
}

/* The XML declaration from p ("<?xml") to e ("?>"): version, then maybe
 * encoding (UTF-8 or its subset US-ASCII only) and standalone, in that
 * order; standalone="yes" makes undeclared entities errors. */
static enum step xml_decl(struct mt_xml *x, char *p, char *e)
{
    static const char *const names[] = {"version", "encoding", "standalone"};
    char *q = p + 5, *s, *v, *close;
    int i, k = 0;

    for (;; k = i + 1, q = close + 1) {
        s = skip_space(q);
        if (s == e && k > 0)
            return STEP_OK;
        for (i = k; i < 3 && starts(s, names[i]) <= 0; i++)
            ;
        if (s == q || i == 3 || (k == 0 && i != 0))
            return bad_xml(x, s, "malformed XML declaration");
        s = skip_space(s + strlen(names[i]));
        if (*s != '=')
            return bad_xml(x, s, "malformed XML declaration");
        s = skip_space(s + 1);
        close = s + 1 < e ? memchr(s + 1, *s, (size_t)(e - s - 1)) : NULL;
        if ((*s != '"' && *s != '\'') || !close ||
            !decl_value_ok(i, s + 1, (size_t)(close - s - 1)))
            return bad_xml(x, s, "malformed XML declaration");
        v = s + 1;
        if (i == 1 && !(close - v == 5 && strncasecmp(v, "utf-8", 5) == 0) &&
            !(close - v == 8 && strncasecmp(v, "us-ascii", 8) == 0))
            return bad_xml(x, s,
                           "an encoding other than UTF-8 is not supported");
        if (i == 2)
            x->standalone = *v == 'y';
    }
}

static enum step pi(struct mt_xml *x, char *p, char **end)
{
    char *t = p + 2, *te = skip_name(t), *e;

    if (*te == '\0' || (te[0] == '?' && te[1] == '\0'))
        return STEP_MORE;
    if (te == t || !IS(*t, C_NAME_START) ||
        (!IS(*te, C_SPACE) && !(te[0] == '?' && te[1] == '>')))
        return bad_xml(x, p, "not well-formed (a processing instruction)");
    e = strstr(te, "?>");
    if (!e)
        return STEP_MORE;
    *end = e + 2;
    if (te - t != 3 || strncasecmp(t, "xml", 3) != 0)
        return STEP_OK;
    if (memcmp(t, "xml", 3) != 0)
        return bad_xml(x, p, "reserved processing instruction target");
    if (x->started || p != x->buf + x->lo)
        return bad_xml(x, p, "XML or text declaration not at start of entity");
    return xml_decl(x, p, e);
}

static enum step cdata(struct mt_xml *x, char *p, char **end)
{
    char *s = p + 9, *e = strstr(s, "]]>"), *c;
    enum step r = STEP_OK;

    if (!e)
        return STEP_MORE;
    if (x->depth == 0)
        return bad_xml(x, p, "a CDATA section outside the root element");
    *end = e + 3;
    while (r == STEP_OK && (c = memchr(s, '\r', (size_t)(e - s))) != NULL) {
        r = emit(x, s, (size_t)(c - s));
        if (r == STEP_OK)
            r = emit(x, "\n", 1);
        s = c + 1 + (c[1] == '\n');
    }
    return r == STEP_OK ? emit(x, s, (size_t)(e - s)) : r;
}

/* Skips a quoted literal at p; NULL when the window ends inside it. */
static char *skip_literal(char *p)
{
    char *e = strchr(p + 1, *p);

    return e ? e + 1 : NULL;
}

/* One markup declaration of the internal subset ('<!' at p), skipped;
 * entities and attribute defaults would change the text, so they are
 * refused rather than ignored. */
static enum step decl(struct mt_xml *x, char *p, char **end)
{
    char *q = p + 2;

    if (starts(p, "<!--") != 0)
        return starts(p, "<!--") < 0 ? STEP_MORE : comment(x, p, end);
    if (starts(q, "ENTITY") < 0 || starts(q, "ATTLIST") < 0)
        return STEP_MORE;
    if (starts(q, "ENTITY") || starts(q, "ATTLIST"))
        return bad_xml(x, p,
                       "ENTITY and ATTLIST declarations in the DOCTYPE "
                       "are not supported");
    while (*q && *q != '>') {
        if (*q == '"' || *q == '\'') {
            if (!(q = skip_literal(q)))
                return STEP_MORE;
        } else {
            q++;
        }
    }
    if (!*q)
        return STEP_MORE;
    *end = q + 1;
    return STEP_OK;
}

/* The internal subset from '[' at p to its ']'. */
static enum step subset(struct mt_xml *x, char *p, char **end)
{
    char *q = p + 1, *e;
    enum step r;

    for (;;) {
        q = skip_space(q);
        if (*q == ']') {
            *end = q + 1;
            return STEP_OK;
        }
        if (*q == '%') { /* a parameter entity: what it declares is unread */
            x->undeclared_ok = 1;
            e = skip_name(q + 1);
            if (*e != ';')
                return *e ? bad_xml(x, q, "malformed DOCTYPE") : STEP_MORE;
            q = e + 1;
            continue;
        }
        if (*q == '\0' || (*q == '<' && q[1] == '\0'))
            return STEP_MORE;
        if (*q != '<' || (q[1] != '!' && q[1] != '?'))
            return bad_xml(x, q, "malformed DOCTYPE");
        r = q[1] == '?' ? pi(x, q, &e) : decl(x, q, &e);
        if (r != STEP_OK)
            return r;
        q = e;
    }
}

/* A quoted literal after white space at s (PUBLIC's, when 'pubid', holds
 * only XML's PubidChars); *out past its closing quote. */
static enum step literal(struct mt_xml *x, char *s, int pubid, char **out)
{
    static const char pub_chars[] = " \r\n-'()+,./:=?;!*#@$_%";
    char *q = skip_space(s), *e, *c;

    if (*q == '\0')
        return STEP_MORE;
    if (q == s || (*q != '"' && *q != '\''))
        return bad_xml(x, q, "malformed DOCTYPE");
    e = strchr(q + 1, *q);
    if (!e)
        return STEP_MORE;
    for (c = q + 1; pubid && c < e; c++)
        if (!(IS(*c, C_NAME_START) && (unsigned char)*c < 0x80 && *c != ':' &&
              *c != '_') &&
            !(*c >= '0' && *c <= '9') && !strchr(pub_chars, *c))
            return bad_xml(x, c, "malformed DOCTYPE (public id)");
    *out = e + 1;
    return STEP_OK;
}

/* An optional ExternalID after the DOCTYPE's name (which ends at q). */
static enum step external_id(struct mt_xml *x, char *q, char **out)
{
    char *s = skip_space(q);
    int pub = starts(s, "PUBLIC"), sys = starts(s, "SYSTEM");
    enum step r = STEP_OK;

    *out = q;
    if (*s == '\0' || pub < 0 || sys < 0)
        return STEP_MORE;
    if (!pub && !sys)
        return STEP_OK;
    if (s == q)
        return bad_xml(x, s, "malformed DOCTYPE");
    s += 6;
    if (pub)
        r = literal(x, s, 1, &s);
    if (r == STEP_OK)
        r = literal(x, s, 0, &s);
    if (r == STEP_OK) {
        x->undeclared_ok = 1; /* the external subset is not read */
        *out = s;
    }
    return r;
}

static enum step doctype(struct mt_xml *x, char *p, char **end)
{
    char *q = p + 9;
    enum step r;

    if (x->doctype || x->depth || x->root_done)
        return bad_xml(x, p, "a DOCTYPE out of place");
    if (!IS(*q, C_SPACE))
        return *q ? bad_xml(x, q, "malformed DOCTYPE") : STEP_MORE;
    q = skip_space(q);
    if (!IS(*q, C_NAME_START))
        return *q ? bad_xml(x, q, "malformed DOCTYPE") : STEP_MORE;
    r = external_id(x, skip_name(q), &q);
    if (r != STEP_OK)
        return r;
    q = skip_space(q);
    if (*q == '[') {
        r = subset(x, q, &q);
        if (r != STEP_OK)
            return r;
        q = skip_space(q);
    }
    if (*q != '>')
        return *q ? bad_xml(x, q, "malformed DOCTYPE") : STEP_MORE;
    x->doctype = 1;
    *end = q + 1;
    return STEP_OK;
}

/* '<!' at p: a comment, a CDATA section or the DOCTYPE. */
static enum step bang(struct mt_xml *x, char *p, char **end)
{
    int c = starts(p, "<!--"), d = starts(p, "<![CDATA["),
        t = starts(p, "<!DOCTYPE");

    if (c > 0)
        return comment(x, p, end);
    if (d > 0)
        return cdata(x, p, end);
    if (t > 0)
        return doctype(x, p, end);
    if (c < 0 || d < 0 || t < 0)
        return STEP_MORE;
    return bad_xml(x, p, "not well-formed (invalid token)");
}

/* A token starting with '<' at p. */
static enum step markup(struct mt_xml *x, char *p)
{
    char *end = NULL;
    enum step r;

    if (p[1] == '\0')
        return STEP_MORE;
    if (p[1] == '/')
        return end_tag(x, p);
    if (p[1] != '?' && p[1] != '!')
        return start_tag(x, p);
    x->tok = (size_t)(p - x->buf);
    r = p[1] == '?' ? pi(x, p, &end) : bang(x, p, &end);
    if (r == STEP_OK) {
        x->lo = (size_t)(end - x->buf);
        x->started = 1;
    }
    return r;
}

/* ==== The run ==== */

/* The window ended inside a token (or at a bad byte, or the file). */
static enum mt_status at_end(struct mt_xml *x, int *done)
{
    const char *p = x->buf + x->lo;

    *done = 0;
    if (x->bad)
        return bad_at(x, x->buf + x->vhi,
                      "not well-formed (not UTF-8, or a control character)");
    if (!x->final)
        return refill(x);
    *done = 1;
    if (x->lo < x->vhi)
        return bad_at(x, p, "unclosed token");
    if (x->depth)
        return mt_fail(&x->err, MT_EPARSE,
                       "%s:%lu: malformed XML: no element found (the file "
                       "ends inside <%s>)",
                       x->file, line_at(x, x->lo),
                       x->path + x->at[x->depth - 1] + (x->depth > 1));
    if (!x->root_done)
        return bad_at(x, p, "no element found");
    return MT_OK;
}

static enum mt_status run(struct mt_xml *x)
{
    enum step r;
    enum mt_status st;
    int done = 0;
    char *p;

    while (!done) {
        p = x->buf + x->lo;
        if (*p == '<')
            r = markup(x, p);
        else if (*p != '\0')
            r = text(x, p);
        else
            r = STEP_MORE;
        if (r == STEP_FAIL)
            return x->err.status;
        if (r == STEP_OK)
            continue;
        st = at_end(x, &done);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

static enum mt_status parse(struct mt_xml *x, struct mt_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    enum mt_status st;

    pthread_once(&once, cls_init_once);
    x->line_base = 1;
    x->size = XML_BLOCK;
    x->buf = mt_malloc(x->size);
    if (!x->buf)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", x->file);
    x->buf[0] = '\0';
    st = refill(x);
    if (st == MT_OK && x->vhi >= 3 && memcmp(x->buf, "\xEF\xBB\xBF", 3) == 0)
        x->lo = 3; /* a UTF-8 byte order mark */
    if (st == MT_OK)
        st = run(x);
    if (st != MT_OK && err)
        *err = x->err;
    mt_free(x->buf);
    return st;
}

enum mt_status mtx_xml_parse(const char *path, const struct mt_xml_fns *fns,
                             void *user, struct mt_error *err)
{
    struct mt_xml *x = mt_calloc(1, sizeof *x);
    enum mt_status st;

    if (!x)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    x->fns = fns;
    x->user = user;
    x->file = path;
    st = mtx_gz_open(path, &x->gz, err);
    if (st != MT_OK) {
        mt_free(x);
        return st;
    }
    st = parse(x, err);
    mtx_gz_close(x->gz);
    mt_free(x);
    return st;
}

enum mt_status mtx_xml_parse_mem(const char *name, const char *data, size_t n,
                                 const struct mt_xml_fns *fns, void *user,
                                 struct mt_error *err)
{
    struct mt_xml *x = mt_calloc(1, sizeof *x);
    enum mt_status st;

    if (!x)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", name);
    x->fns = fns;
    x->user = user;
    x->file = name;
    x->mem = data;
    x->mem_len = n;
    st = parse(x, err);
    mt_free(x);
    return st;
}

void mtx_xml_capture(struct mt_xml *x, struct mt_buf *b)
{
    x->cap = b;
}

struct mt_buf *mtx_xml_captured(const struct mt_xml *x)
{
    return x->cap;
}

size_t mtx_xml_depth(const struct mt_xml *x)
{
    return x->depth;
}

int mtx_xml_at(const struct mt_xml *x, const char *suffix)
{
    size_t n = strlen(suffix);

    if (n > x->len || strcmp(x->path + x->len - n, suffix) != 0)
        return 0;
    return n == x->len || x->path[x->len - n - 1] == '/';
}

struct mt_error *mtx_xml_error(struct mt_xml *x)
{
    return &x->err;
}

enum mt_status mtx_xml_skip(struct mt_xml *x, struct mt_sink *k)
{
    struct mt_error e = x->err;
    enum mt_status st;

    mt_error_prefix(&e, "%s:%lu", x->file, line_at(x, x->tok));
    st = mtx_sink_skip(k, &e);
    if (st == MT_OK)
        x->err = e; /* cleared */
    else if (e.status != x->err.status)
        x->err = e; /* out of memory on the way */
    return st;
}

uint64_t mtx_xml_offset(const struct mt_xml *x)
{
    return x->gz ? mtx_gz_offset(x->gz) : x->mem_at;
}

const char *mtx_xml_attr(const char **attrs, const char *name)
{
    size_t i;

    for (i = 0; attrs && attrs[i]; i += 2)
        if (strcmp(attrs[i], name) == 0)
            return attrs[i + 1];
    return NULL;
}
