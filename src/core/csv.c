/* RFC 4180 CSV reader: reads its input in fixed blocks, assembles one record
 * at a time in a bounded buffer and reports malformed input as
 * "FILE:LINE:COL: why". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/csv.h"
#include "medtrust/core.h"

#define CSV_BLOCK ((size_t)64 * 1024)
#define CSV_EOF (-1)

struct mt_csv {
    char *name;      /* for error messages */
    FILE *fp;        /* NULL when reading memory */
    int own_fp;      /* 0 for stdin */
    char *fbuf;      /* file block, CSV_BLOCK bytes */
    const char *blk; /* current block: fbuf or the caller's memory */
    size_t blk_len;
    size_t blk_pos;
    int at_eof; /* no more blocks */
    int io_err; /* a read failed; sticky */
    struct mt_csv_params params;
    struct mt_buf rec; /* field bytes, each field followed by a NUL */
    size_t rec_bytes;  /* field bytes without the NULs */
    size_t *off;       /* field i starts at rec.data + off[i] */
    size_t *len;
    size_t nfields;
    size_t fcap;
    size_t line; /* position of the next byte to read */
    size_t col;
    size_t ch_line; /* position of the byte read last */
    size_t ch_col;
    size_t rec_line;       /* where the current record starts */
    enum mt_status failed; /* sticky: once a call failed, all do */
    struct mt_error ferr;
};

/* ==== Input ==== */

/* Loads the next block; returns 0 at end of input, -1 on a read error. */
static int refill(struct mt_csv *c)
{
    size_t n;

    if (c->io_err)
        return -1;
    if (c->at_eof || !c->fp) {
        c->at_eof = 1;
        return 0;
    }
    n = fread(c->fbuf, 1, CSV_BLOCK, c->fp);
    if (n == 0) {
        c->at_eof = 1;
        c->io_err = ferror(c->fp) != 0;
        return c->io_err ? -1 : 0;
    }
    c->blk = c->fbuf;
    c->blk_len = n;
    c->blk_pos = 0;
    return 1;
}

/* Returns the next byte without consuming it, CSV_EOF at end, or -2 on a
 * read error. */
static int peek(struct mt_csv *c)
{
    if (c->blk_pos == c->blk_len) {
        int r = refill(c);
        if (r <= 0)
            return r == 0 ? CSV_EOF : -2;
    }
    return (unsigned char)c->blk[c->blk_pos];
}

/* Consumes the byte that peek() returned and tracks its line and column. */
static void advance(struct mt_csv *c, int ch)
{
    c->blk_pos++;
    c->ch_line = c->line;
    c->ch_col = c->col;
    if (ch == '\n') {
        c->line++;
        c->col = 1;
    } else {
        c->col++;
    }
}

static int next_byte(struct mt_csv *c)
{
    int ch = peek(c);

    if (ch >= 0)
        advance(c, ch);
    return ch;
}

/* Skips a UTF-8 byte order mark at the very start of the input. */
static int skip_bom(struct mt_csv *c)
{
    static const char bom[3] = {'\xEF', '\xBB', '\xBF'};

    if (peek(c) == -2)
        return -1;
    if (c->blk_len - c->blk_pos >= 3 &&
        memcmp(c->blk + c->blk_pos, bom, 3) == 0)
        c->blk_pos += 3; /* not counted as columns */
    return 0;
}

/* ==== Errors ==== */

static enum mt_status fail_at(struct mt_csv *c, struct mt_error *err,
                              enum mt_status st, size_t line, size_t col,
                              const char *why)
{
    mt_fail(&c->ferr, st, "%s:%zu:%zu: %s", c->name, line, col, why);
    c->failed = st;
    if (err)
        *err = c->ferr;
    return st;
}

static enum mt_status fail_here(struct mt_csv *c, struct mt_error *err,
                                enum mt_status st, const char *why)
{
    return fail_at(c, err, st, c->ch_line, c->ch_col, why);
}

/* ==== Record assembly ==== */

static enum mt_status put_byte(struct mt_csv *c, struct mt_error *err, int ch)
{
    enum mt_status st;

    if (c->rec_bytes >= c->params.max_record)
        return fail_here(c, err, MT_ELIMIT, "record exceeds max_record");
    c->rec_bytes++;
    if (c->rec.data && c->rec.len + 2 <= c->rec.cap) {
        c->rec.data[c->rec.len++] = (char)ch; /* fast path */
        return MT_OK;
    }
    st = mtx_buf_putc(&c->rec, (char)ch);
    if (st != MT_OK)
        return fail_here(c, err, st, mt_status_str(st));
    return MT_OK;
}

static enum mt_status begin_field(struct mt_csv *c, struct mt_error *err)
{
    if (c->nfields == c->params.max_fields)
        return fail_here(c, err, MT_ELIMIT, "record exceeds max_fields");
    if (c->nfields == c->fcap) {
        size_t cap = c->fcap ? c->fcap * 2 : 16;
        size_t *o;
        size_t *l;

        if (cap > c->params.max_fields)
            cap = c->params.max_fields;
        o = mt_realloc(c->off, cap * sizeof *o);
        if (!o)
            return fail_here(c, err, MT_ENOMEM, "out of memory");
        c->off = o;
        l = mt_realloc(c->len, cap * sizeof *l);
        if (!l)
            return fail_here(c, err, MT_ENOMEM, "out of memory");
        c->len = l;
        c->fcap = cap;
    }
    c->off[c->nfields] = c->rec.len;
    c->len[c->nfields] = 0;
    c->nfields++;
    return MT_OK;
}

/* Closes the current field with a NUL so a field may be used as a C
 * string; the NUL does not count against max_record. */
static enum mt_status end_field(struct mt_csv *c, struct mt_error *err)
{
    size_t i = c->nfields - 1;
    enum mt_status st;

    c->len[i] = c->rec.len - c->off[i];
    st = mtx_buf_putc(&c->rec, '\0');
    if (st != MT_OK)
        return fail_here(c, err, st, mt_status_str(st));
    return MT_OK;
}

/* Consumes a line end: LF, or CR followed by LF. A lone CR is data. */
static int is_line_end(struct mt_csv *c, int ch)
{
    if (ch == '\n')
        return 1;
    if (ch == '\r' && peek(c) == '\n') {
        advance(c, '\n');
        return 1;
    }
    return 0;
}

/* ==== Field parsers ====
 * Each returns MT_OK and sets *more to 1 when a delimiter ended the field,
 * 0 when a line end or the end of input ended the record. */

static enum mt_status read_error(struct mt_csv *c, struct mt_error *err)
{
    return fail_here(c, err, MT_EIO, "read error");
}

static enum mt_status after_quote(struct mt_csv *c, struct mt_error *err,
                                  int *more)
{
    int ch = next_byte(c);

    if (ch == -2)
        return read_error(c, err);
    *more = ch == (unsigned char)c->params.delim;
    if (*more || ch == CSV_EOF || is_line_end(c, ch))
        return MT_OK;
    return fail_here(c, err, MT_EPARSE, "text after closing quote");
}

static enum mt_status quoted_field(struct mt_csv *c, struct mt_error *err,
                                   int *more)
{
    size_t qline = c->ch_line;
    size_t qcol = c->ch_col;
    enum mt_status st;
    int ch;

    for (;;) {
        ch = next_byte(c);
        if (ch == -2)
            return read_error(c, err);
        if (ch == CSV_EOF)
            return fail_at(c, err, MT_EPARSE, qline, qcol,
                           "unterminated quoted field");
        if (ch == '"') {
            if (peek(c) != '"')
                return after_quote(c, err, more);
            advance(c, '"');
        }
        st = put_byte(c, err, ch);
        if (st != MT_OK)
            return st;
    }
}

static enum mt_status plain_field(struct mt_csv *c, struct mt_error *err,
                                  int ch, int *more)
{
    enum mt_status st;

    for (;;) {
        if (ch == -2)
            return read_error(c, err);
        *more = ch == (unsigned char)c->params.delim;
        if (*more || ch == CSV_EOF || is_line_end(c, ch))
            return MT_OK;
        if (ch == '"')
            return fail_here(c, err, MT_EPARSE, "quote in unquoted field");
        st = put_byte(c, err, ch);
        if (st != MT_OK)
            return st;
        ch = next_byte(c);
    }
}

/* Reads the fields of one record whose first byte is 'ch'. */
static enum mt_status read_record(struct mt_csv *c, struct mt_error *err,
                                  int ch)
{
    enum mt_status st;
    int more = 1;

    while (more) {
        st = begin_field(c, err);
        if (st != MT_OK)
            return st;
        if (ch == '"')
            st = quoted_field(c, err, &more);
        else
            st = plain_field(c, err, ch, &more);
        if (st != MT_OK)
            return st;
        st = end_field(c, err);
        if (st != MT_OK)
            return st;
        if (more)
            ch = next_byte(c);
    }
    return MT_OK;
}

/* ==== Public API ==== */

void mtx_csv_default_params(struct mt_csv_params *p)
{
    p->delim = ',';
    p->max_record = (size_t)64 << 20;
    p->max_fields = 4096;
}

static enum mt_status csv_new(const char *name,
                              const struct mt_csv_params *params,
                              struct mt_csv **out, struct mt_error *err)
{
    struct mt_csv *c = mt_calloc(1, sizeof *c);
    size_t nuls;

    if (!c)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", name);
    if (params)
        c->params = *params;
    else
        mtx_csv_default_params(&c->params);
    if (c->params.max_fields == 0 || c->params.max_record == 0 ||
        c->params.delim == '"' || c->params.delim == '\n' ||
        c->params.delim == '\r') {
        mt_free(c);
        return mt_fail(err, MT_EINVAL, "%s: bad CSV parameters", name);
    }
    c->name = mt_strdup(name);
    if (!c->name) {
        mt_free(c);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", name);
    }
    /* Room for max_record bytes plus one NUL per field and the final NUL,
     * saturating on overflow; put_byte enforces max_record itself. */
    nuls = c->params.max_fields + 1;
    c->rec = MT_BUF_INIT(c->params.max_record > SIZE_MAX - nuls
                             ? SIZE_MAX
                             : c->params.max_record + nuls);
    c->line = 1;
    c->col = 1;
    *out = c;
    return MT_OK;
}

enum mt_status mtx_csv_open_mem(const char *name, const char *data, size_t n,
                                const struct mt_csv_params *params,
                                struct mt_csv **out, struct mt_error *err)
{
    struct mt_csv *c = NULL;
    enum mt_status st;

    if (!name || (!data && n))
        return mt_fail(err, MT_EINVAL, "mtx_csv_open_mem: bad argument");
    st = csv_new(name, params, &c, err);
    if (st != MT_OK)
        return st;
    c->blk = data;
    c->blk_len = n;
    c->at_eof = 1;
    skip_bom(c);
    *out = c;
    return MT_OK;
}

enum mt_status mtx_csv_open(const char *path,
                            const struct mt_csv_params *params,
                            struct mt_csv **out, struct mt_error *err)
{
    struct mt_csv *c = NULL;
    enum mt_status st;
    int is_stdin;

    if (!path)
        return mt_fail(err, MT_EINVAL, "mtx_csv_open: NULL path");
    st = csv_new(path, params, &c, err);
    if (st != MT_OK)
        return st;
    is_stdin = strcmp(path, "-") == 0;
    c->fbuf = mt_malloc(CSV_BLOCK);
    if (!c->fbuf) {
        st = mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    c->fp = is_stdin ? stdin : fopen(path, "rb");
    c->own_fp = !is_stdin;
    if (!c->fp) {
        st = mt_fail(err, MT_EIO, "%s: cannot open", path);
        goto fail;
    }
    if (skip_bom(c) != 0) {
        st = mt_fail(err, MT_EIO, "%s: read error", path);
        goto fail;
    }
    *out = c;
    return MT_OK;
fail:
    mtx_csv_close(c);
    return st;
}

/* Blank lines between records are skipped (they carry no fields), so a
 * trailing empty line does not yield an empty record. */
enum mt_status mtx_csv_next(struct mt_csv *c, int *got, struct mt_error *err)
{
    enum mt_status st;
    int ch;

    *got = 0;
    if (c->failed) {
        if (err)
            *err = c->ferr;
        return c->failed;
    }
    mtx_buf_reset(&c->rec);
    c->rec_bytes = 0;
    c->nfields = 0;
    do {
        ch = next_byte(c);
        if (ch == -2)
            return read_error(c, err);
        if (ch == CSV_EOF)
            return MT_OK;
    } while (is_line_end(c, ch));
    c->rec_line = c->ch_line;
    st = read_record(c, err, ch);
    if (st != MT_OK) {
        c->nfields = 0;
        return st;
    }
    *got = 1;
    return MT_OK;
}

size_t mtx_csv_nfields(const struct mt_csv *c)
{
    return c->nfields;
}

struct mt_str mtx_csv_field(const struct mt_csv *c, size_t i)
{
    struct mt_str s = {"", 0};

    if (i >= c->nfields)
        return s;
    s.p = c->rec.data + c->off[i];
    s.n = c->len[i];
    return s;
}

size_t mtx_csv_line(const struct mt_csv *c)
{
    return c->rec_line;
}

long mtx_csv_find(const struct mt_csv *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->nfields; i++) {
        if (mtx_str_eq_c(mtx_csv_field(c, i), name))
            return (long)i;
    }
    return -1;
}

void mtx_csv_close(struct mt_csv *c)
{
    if (!c)
        return;
    if (c->fp && c->own_fp)
        fclose(c->fp);
    mt_free(c->fbuf);
    mtx_buf_free(&c->rec);
    mt_free(c->off);
    mt_free(c->len);
    mt_free(c->name);
    mt_free(c);
}

enum mt_status mtx_csv_put_field(struct mt_buf *b, const char *p, size_t n)
{
    int q = n && (memchr(p, ',', n) || memchr(p, '"', n) ||
                  memchr(p, '\n', n) || memchr(p, '\r', n));
    enum mt_status st = q ? mtx_buf_putc(b, '"') : MT_OK;
    size_t j;

    for (j = 0; st == MT_OK && j < n; j++)
        st = p[j] == '"' ? mtx_buf_append(b, "\"\"", 2) : mtx_buf_putc(b, p[j]);
    if (st == MT_OK && q)
        st = mtx_buf_putc(b, '"');
    return st;
}
