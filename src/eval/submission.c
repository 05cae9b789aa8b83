/* MEDIQA-CORR submission reader, line for line as the official 2024 script
 * parses run files, with clear messages for what it silently tolerated. */
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"

struct mt_eval_sub {
    struct mt_arena arena;
    struct mt_eval_pred *preds;
    size_t npred;
    size_t cap;
    struct mt_ev_map ids; /* id -> index in preds */
    char **diags;
    size_t ndiag;
    size_t invalid;
    const char *name;
};

static enum mt_status add_diag(struct mt_eval_sub *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum mt_status add_diag(struct mt_eval_sub *s, const char *fmt, ...)
{
    struct mt_buf b = MT_BUF_INIT(4096);
    char **d;
    va_list ap;
    enum mt_status st;

    va_start(ap, fmt);
    st = mtx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    d = st == MT_OK ? mt_realloc(s->diags, (s->ndiag + 1) * sizeof *d) : NULL;
    if (!d) {
        mtx_buf_free(&b);
        return MT_ENOMEM;
    }
    s->diags = d;
    s->diags[s->ndiag++] = mtx_buf_take(&b);
    return MT_OK;
}

/* Strips Python whitespace from both ends of the line. */
static struct mt_str py_strip(struct mt_str l)
{
    size_t w;

    while (l.n > 0 && (w = mtx_ev_space_len(l.p, l.n)) > 0) {
        l.p += w;
        l.n -= w;
    }
    while (l.n > 0) {
        size_t i = l.n - 1;
        while (i > 0 && ((unsigned char)l.p[i] & 0xc0) == 0x80)
            i--; /* start of the last UTF-8 character */
        if (mtx_ev_space_len(l.p + i, l.n - i) != l.n - i)
            break;
        l.n = i;
    }
    return l;
}

static int is_id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Matches `[a-z0-9\-]+\s[0-9]+\s\-?[0-9]+\s.+` against the stripped line
 * (re.fullmatch); returns NULL when it matches, else what is wrong. */
static const char *check_line(struct mt_str l)
{
    size_t i = 0;
    size_t w;

    while (i < l.n && is_id_char(l.p[i]))
        i++;
    if (i == 0 || !(w = mtx_ev_space_len(l.p + i, l.n - i)))
        return "text id must be [a-z0-9-]+ followed by one whitespace";
    i += w;
    if (i >= l.n || !is_digit(l.p[i]))
        return "error flag must be digits";
    while (i < l.n && is_digit(l.p[i]))
        i++;
    if (!(w = mtx_ev_space_len(l.p + i, l.n - i)))
        return "error flag must be digits followed by one whitespace";
    i += w;
    if (i < l.n && l.p[i] == '-')
        i++;
    if (i >= l.n || !is_digit(l.p[i]))
        return "sentence id must be an integer";
    while (i < l.n && is_digit(l.p[i]))
        i++;
    if (!(w = mtx_ev_space_len(l.p + i, l.n - i)) || i + w >= l.n)
        return "missing corrected sentence (write NA for none)";
    return NULL;
}

/* Builds ' '.join(tokens[3:]) and strips '"' as the official script does:
 * while it starts (then ends) with '"' and is longer than one char. */
static char *correction(struct mt_eval_sub *s, struct mt_str l)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_str t;
    size_t pos = 0;
    size_t k = 0;
    size_t a = 0;
    size_t e;
    char *out = NULL;

    while (mtx_ev_next_token(l.p, l.n, &pos, &t)) {
        if (k++ < 3)
            continue;
        if ((k > 4 && mtx_buf_putc(&b, ' ') != MT_OK) ||
            mtx_buf_append(&b, t.p, t.n) != MT_OK)
            goto done;
    }
    e = b.len;
    while (e - a > 1 && b.data[a] == '"')
        a++;
    while (e - a > 1 && b.data[e - 1] == '"')
        e--;
    out = mtx_arena_strndup(&s->arena, b.data + a, e - a);
done:
    mtx_buf_free(&b);
    return out;
}

static char *token_dup(struct mt_eval_sub *s, struct mt_str l, size_t *pos)
{
    struct mt_str t = {"", 0};

    mtx_ev_next_token(l.p, l.n, pos, &t);
    return mtx_arena_strndup(&s->arena, t.p, t.n);
}

static enum mt_status push_pred(struct mt_eval_sub *s,
                                const struct mt_eval_pred *p)
{
    long old = mtx_ev_map_get(&s->ids, mtx_str_from(p->id));

    if (old >= 0) {
        size_t first = s->preds[old].line;
        s->preds[old] = *p; /* the official dict keeps the last line */
        return add_diag(s,
                        "%s:%zu: duplicate id '%s' (first on line %zu); "
                        "the later line is used",
                        s->name, p->line, p->id, first);
    }
    if (s->npred == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct mt_eval_pred *n = mt_realloc(s->preds, cap * sizeof *n);
        if (!n)
            return MT_ENOMEM;
        s->preds = n;
        s->cap = cap;
    }
    s->preds[s->npred] = *p;
    return mtx_ev_map_put(&s->ids, mtx_str_from(p->id), (long)s->npred++);
}

/* Parses one stripped, non-blank line. */
static enum mt_status parse_line(struct mt_eval_sub *s, struct mt_str l,
                                 size_t line)
{
    /* The official script also runs re.sub('\s+', line, ' '), arguments
     * swapped, which returns the line itself save for backslash escapes;
     * tokens below are split exactly as its line.split() splits them. */
    const char *why = check_line(l);
    struct mt_eval_pred p;
    size_t pos = 0;

    if (why) {
        s->invalid++;
        return add_diag(s, "%s:%zu: invalid line skipped (%s): %.*s%s", s->name,
                        line, why, (int)(l.n > 60 ? 60 : l.n), l.p,
                        l.n > 60 ? "..." : "");
    }
    p.line = line;
    p.id = token_dup(s, l, &pos);
    p.flag = token_dup(s, l, &pos);
    p.sentence_id = token_dup(s, l, &pos);
    p.correction = correction(s, l);
    if (!p.id || !p.flag || !p.sentence_id || !p.correction)
        return MT_ENOMEM;
    if (strcmp(p.flag, "0") == 0)
        p.correction = "NA"; /* flag 0 forces NA, as officially */
    return push_pred(s, &p);
}

/* Python's universal newlines: "\r\n", "\r" and "\n" end a line. */
static size_t line_end(const char *d, size_t n, size_t i, size_t *next,
                       int *crlf)
{
    size_t e = i;

    while (e < n && d[e] != '\n' && d[e] != '\r')
        e++;
    *next = e + 1;
    if (e + 1 < n && d[e] == '\r' && d[e + 1] == '\n') {
        *next = e + 2;
        *crlf = 1;
    }
    return e;
}

static enum mt_status parse_all(struct mt_eval_sub *s, const char *d, size_t n,
                                struct mt_error *err)
{
    size_t i = 0;
    size_t line = 0;
    size_t next;
    int crlf = 0;
    enum mt_status st = MT_OK;

    if (n >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0) {
        i = 3;
        st = add_diag(s,
                      "%s:1: UTF-8 byte order mark removed (the official "
                      "script would reject line 1)",
                      s->name);
    }
    while (st == MT_OK && i < n) {
        size_t e = line_end(d, n, i, &next, &crlf);
        struct mt_str l = py_strip((struct mt_str){d + i, e - i});
        const char *nul = memchr(d + i, '\0', e - i);
        line++;
        if (nul) /* C strings would cut the line there */
            return mt_fail(err, MT_EPARSE,
                           "%s:%zu: NUL byte at column %zu: a submission "
                           "is text",
                           s->name, line, (size_t)(nul - (d + i)) + 1);
        if (l.n > 0)
            st = parse_line(s, l, line);
        i = next;
    }
    if (st == MT_OK && crlf)
        st = add_diag(s, "%s: CRLF line endings accepted", s->name);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: %s", s->name, mt_status_str(st));
    if (n == 0 || line == 0)
        return mt_fail(err, MT_EPARSE, "%s: empty submission file", s->name);
    if (s->npred == 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: no valid line among %zu (%zu "
                       "invalid); expected 'ID FLAG SENTENCE_ID CORRECTION'",
                       s->name, line, s->invalid);
    return MT_OK;
}

enum mt_status mt_eval_sub_parse(const char *name, const char *data, size_t n,
                                 struct mt_eval_sub **out, struct mt_error *err)
{
    struct mt_eval_sub *s = mt_calloc(1, sizeof *s);
    enum mt_status st;

    if (!s)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    s->arena = MT_ARENA_INIT(1 << 16);
    s->name = mtx_arena_strndup(&s->arena, name, strlen(name));
    if (!s->name) {
        mt_eval_sub_free(s);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = parse_all(s, data, n, err);
    if (st != MT_OK) {
        mt_eval_sub_free(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

enum mt_status mt_eval_sub_load(const char *path, struct mt_eval_sub **out,
                                struct mt_error *err)
{
    char *data = NULL;
    size_t n = 0;
    enum mt_status st = mtx_ev_read_file(path, &data, &n, err);

    if (st != MT_OK)
        return st;
    st = mt_eval_sub_parse(path, data, n, out, err);
    mt_free(data);
    return st;
}

size_t mt_eval_sub_count(const struct mt_eval_sub *s)
{
    return s->npred;
}

const struct mt_eval_pred *mt_eval_sub_pred(const struct mt_eval_sub *s,
                                            size_t i)
{
    return i < s->npred ? &s->preds[i] : NULL;
}

long mt_eval_sub_find(const struct mt_eval_sub *s, const char *id)
{
    return mtx_ev_map_get(&s->ids, mtx_str_from(id));
}

size_t mt_eval_sub_invalid(const struct mt_eval_sub *s)
{
    return s->invalid;
}

size_t mt_eval_sub_ndiag(const struct mt_eval_sub *s)
{
    return s->ndiag;
}

const char *mt_eval_sub_diag(const struct mt_eval_sub *s, size_t i)
{
    return i < s->ndiag ? s->diags[i] : NULL;
}

void mt_eval_sub_free(struct mt_eval_sub *s)
{
    size_t i;

    if (!s)
        return;
    for (i = 0; i < s->ndiag; i++)
        mt_free(s->diags[i]);
    mt_free(s->diags);
    mt_free(s->preds);
    mtx_ev_map_free(&s->ids);
    mtx_arena_free(&s->arena);
    mt_free(s);
}
