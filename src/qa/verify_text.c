/* `medtrust verify`'s reading of a text: sentences and headings, which
 * sentences are claims, the citations (PMIDs, labels, DOIs, URLs) and
 * quotations a sentence makes, and the verbatim check of a quotation
 * against a document. Pure functions, no I/O. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "qa/verify_int.h"

#define VF_MAX_CITES 32
#define VF_MAX_QUOTES 16
#define VF_GROUP_MAX 1024

static int id_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '-';
}

static size_t count_words(const char *s, size_t n)
{
    size_t i, k = 0;
    int in = 0;

    for (i = 0; i < n; i++) {
        int w = isalnum((unsigned char)s[i]) || (unsigned char)s[i] >= 0x80;

        k += w && !in;
        in = w;
    }
    return k;
}

/* ==== Sentences and headings ==== */

static int ends_with_stop(const char *s, size_t n)
{
    while (n > 0 && strchr("\"')]}", s[n - 1]))
        n--;
    /* a closing curly quote (U+201D, U+2019) after the stop */
    while (n >= 3 && (unsigned char)s[n - 3] == 0xE2 &&
           (unsigned char)s[n - 2] == 0x80 &&
           ((unsigned char)s[n - 1] == 0x9D || (unsigned char)s[n - 1] == 0x99))
        n -= 3;
    return n > 0 && strchr(".!?", s[n - 1]) != NULL;
}

/* Whether the line s[0..n), followed by a line starting with 'next',
 * heads what follows. */
static int heading_line(const char *s, size_t n, char next)
{
    struct mt_str t = mtx_str_trim((struct mt_str){s, n});

    if (t.n == 0)
        return 0;
    if (t.p[0] == '#' || t.p[t.n - 1] == ':')
        return 1;
    return !ends_with_stop(t.p, t.n) && !memchr(t.p, ',', t.n) &&
           count_words(t.p, t.n) <= VF_HEADING_WORDS &&
           isupper((unsigned char)t.p[0]) &&
           (isupper((unsigned char)next) || isdigit((unsigned char)next));
}

/* Appends sentence [a, b) of text, trimmed, when not empty. */
static enum mt_status push_span(const char *text, size_t a, size_t b,
                                struct mt_span **v, size_t *n, size_t *cap)
{
    struct mt_span *x;

    while (a < b && isspace((unsigned char)text[a]))
        a++;
    while (b > a && isspace((unsigned char)text[b - 1]))
        b--;
    if (a == b)
        return MT_OK;
    if (*n == *cap) {
        x = mt_realloc(*v, (*cap ? *cap * 2 : 16) * sizeof *x);
        if (!x)
            return MT_ENOMEM;
        *v = x;
        *cap = *cap ? *cap * 2 : 16;
    }
    (*v)[(*n)++] = (struct mt_span){a, b};
    return MT_OK;
}

/* Splits span sp at the newlines that end a heading line. */
static enum mt_status split_headings(const char *text, struct mt_span sp,
                                     struct mt_span **v, size_t *n, size_t *cap)
{
    size_t a = sp.start, i;
    enum mt_status st = MT_OK;

    for (i = sp.start; st == MT_OK && i < sp.end; i++) {
        size_t j = i + 1;

        if (text[i] != '\n')
            continue;
        while (j < sp.end && isspace((unsigned char)text[j]))
            j++;
        if (j < sp.end && heading_line(text + a, i - a, text[j])) {
            st = push_span(text, a, i, v, n, cap);
            a = i + 1;
        }
    }
    return st == MT_OK ? push_span(text, a, sp.end, v, n, cap) : st;
}

enum mt_status mtx_vf_split(const char *text, size_t n, struct mt_span **out,
                            size_t *count, struct mt_error *err)
{
    struct mt_span *sp = NULL, *v = NULL;
    size_t ns = 0, nv = 0, cap = 0, i;
    enum mt_status st = mtx_sentences_split(text, n, &sp, &ns, err);

    for (i = 0; st == MT_OK && i < ns; i++)
        st = split_headings(text, sp[i], &v, &nv, &cap);
    mt_free(sp);
    if (st != MT_OK) {
        mt_free(v);
        return st == MT_ENOMEM ? mt_fail(err, st, "verify: out of memory") : st;
    }
    *out = v;
    *count = nv;
    return MT_OK;
}

int mtx_vf_is_claim(const char *text, size_t tn, const char *s, size_t n,
                    uint32_t min_words)
{
    struct mt_str t = mtx_str_trim((struct mt_str){s, n});
    size_t after = (size_t)(t.p - text) + t.n, j = after;

    if (t.n == 0 || t.p[t.n - 1] == '?' || t.p[0] == '#' || t.p[t.n - 1] == ':')
        return 0;
    if (count_words(t.p, t.n) < min_words)
        return 0;
    if (ends_with_stop(t.p, t.n))
        return 1;
    /* no stop: a heading when a line of its own with more text after */
    while (j < tn && (text[j] == ' ' || text[j] == '\t'))
        j++;
    if (j >= tn || text[j] != '\n')
        return 1;
    while (j < tn && isspace((unsigned char)text[j]))
        j++;
    return j >= tn || count_words(t.p, t.n) > 12;
}

/* ==== Citations ==== */

struct cites {
    struct mt_arena *a;
    const char *pre, *suf;
    struct vf_sent *s;
};

static int all_digits(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!isdigit((unsigned char)p[i]))
            return 0;
    return n > 0;
}

static enum mt_status add_cite(struct cites *c, const char *field,
                               const char *p, size_t n)
{
    struct vf_sent *s = c->s;
    size_t i;
    char *k;

    for (i = 0; i < s->ncites; i++)
        if (strcmp(s->cites[i].field, field) == 0 &&
            strlen(s->cites[i].key) == n && memcmp(s->cites[i].key, p, n) == 0)
            return MT_OK;
    if (s->ncites == VF_MAX_CITES)
        return MT_OK;
    k = mtx_arena_strndup(c->a, p, n);
    if (!k)
        return MT_ENOMEM;
    s->cites[s->ncites++] = (struct vf_cite){field, k};
    return MT_OK;
}

/* The length of "PMID", "PMID:", "PMID: " ... before digits, and the
 * digits' length in *dn; 0 when p is no PMID. */
static size_t pmid_at(const char *p, size_t n, size_t *dn)
{
    size_t i = 4, d;

    if (n <= 4 || strncasecmp(p, "PMID", 4) != 0)
        return 0;
    while (i < n && (p[i] == ':' || p[i] == ' '))
        i++;
    for (d = i; d < n && isdigit((unsigned char)p[d]); d++)
        ;
    *dn = d - i;
    return *dn > 0 && *dn <= 12 ? i : 0;
}

/* The length of a DOI "10.NNNN/..." at p (up to white space or a
 * closing bracket or quote, trailing punctuation dropped), or 0. */
static size_t doi_len(const char *p, size_t n)
{
    size_t i = 3, k;

    if (n < 6 || memcmp(p, "10.", 3) != 0)
        return 0;
    while (i < n && isdigit((unsigned char)p[i]))
        i++;
    if (i < 7 || i >= n || p[i] != '/')
        return 0;
    for (k = i + 1;
         k < n && !isspace((unsigned char)p[k]) && !strchr("\"<>[]()", p[k]);
         k++)
        ;
    while (k > i + 1 && strchr(".,;:", p[k - 1]))
        k--;
    return k > i + 1 ? k : 0;
}

/* The length of an http(s) URL at p, trailing punctuation dropped. */
static size_t url_len(const char *p, size_t n)
{
    size_t k = 0;

    if (!(n > 8 && strncmp(p, "https://", 8) == 0) &&
        !(n > 7 && strncmp(p, "http://", 7) == 0))
        return 0;
    while (k < n && !isspace((unsigned char)p[k]) && !strchr("\"<>[]", p[k]))
        k++;
    while (k > 8 && strchr(".,;:)", p[k - 1]))
        k--;
    return k;
}

/* A URL cites its DOI (doi.org), its PMID (PubMed's page) or itself. */
static enum mt_status cite_url(struct cites *c, const char *p, size_t n)
{
    static const char *const doi_hosts[] = {
        "https://doi.org/", "http://doi.org/", "https://dx.doi.org/",
        "http://dx.doi.org/"};
    static const char pubmed[] = "https://pubmed.ncbi.nlm.nih.gov/";
    size_t i, h, k;

    for (i = 0; i < sizeof doi_hosts / sizeof doi_hosts[0]; i++) {
        h = strlen(doi_hosts[i]);
        if (n > h && strncasecmp(p, doi_hosts[i], h) == 0 &&
            doi_len(p + h, n - h) == n - h)
            return add_cite(c, "doi", p + h, n - h);
    }
    h = sizeof pubmed - 1;
    if (n > h && strncmp(p, pubmed, h) == 0) {
        k = n - (p[n - 1] == '/');
        if (all_digits(p + h, k - h))
            return add_cite(c, "id", p + h, k - h);
    }
    return add_cite(c, "url", p, n);
}

/* A label pre + id + suf at p: its whole length and the id; 0 if none. */
static size_t label_at(const struct cites *c, const char *p, size_t n,
                       struct mt_str *id)
{
    size_t np = strlen(c->pre), ns = strlen(c->suf), k = np;

    if (np == 0 || n <= np || memcmp(p, c->pre, np) != 0)
        return 0;
    while (k < n && id_char(p[k]) && (ns == 0 || p[k] != c->suf[0]))
        k++;
    if (k == np || k + ns > n || memcmp(p + k, c->suf, ns) != 0)
        return 0;
    *id = (struct mt_str){p + np, k - np};
    return k + ns;
}

/* A citation starting at p[0]: its length (0: none); with 'add', it is
 * added. 'bare': bare digits cite too (inside square brackets). */
static size_t cite_at(struct cites *c, const char *p, size_t n, int bare,
                      int add, enum mt_status *st)
{
    struct mt_str id;
    size_t k, d = 0;

    if ((k = pmid_at(p, n, &d)) > 0) {
        *st = add ? add_cite(c, "id", p + k, d) : MT_OK;
        return k + d;
    }
    if ((k = label_at(c, p, n, &id)) > 0) {
        *st = add ? add_cite(c, "id", id.p, id.n) : MT_OK;
        return k;
    }
    if (n > 4 && strncasecmp(p, "doi:", 4) == 0) {
        for (k = 4; k < n && p[k] == ' '; k++)
            ;
        d = doi_len(p + k, n - k);
        *st = add && d ? add_cite(c, "doi", p + k, d) : MT_OK;
        return d ? k + d : 0;
    }
    if ((d = doi_len(p, n)) > 0) {
        *st = add ? add_cite(c, "doi", p, d) : MT_OK;
        return d;
    }
    if ((d = url_len(p, n)) > 0) {
        *st = add ? cite_url(c, p, d) : MT_OK;
        return d;
    }
    for (d = 0; bare && d < n && isdigit((unsigned char)p[d]); d++)
        ;
    *st = add && bare && d > 0 && d <= 12 ? add_cite(c, "id", p, d) : MT_OK;
    return bare && d > 0 && d <= 12 ? d : 0;
}

/* Whether every ','- or ';'-separated item of the group p[0..n) is one
 * citation (then, with 'add', they are added). */
static int group_items(struct cites *c, const char *p, size_t n, int bare,
                       int add, enum mt_status *st)
{
    size_t i = 0;

    while (i <= n && *st == MT_OK) {
        size_t j = i;
        struct mt_str it;

        while (j < n && p[j] != ',' && p[j] != ';')
            j++;
        it = mtx_str_trim((struct mt_str){p + i, j - i});
        if (it.n == 0 || cite_at(c, it.p, it.n, bare, add, st) != it.n)
            return 0;
        i = j + 1;
    }
    return *st == MT_OK;
}

/* A citation group opening at p[0]: its length with the brackets, its
 * citations added; 0 when it is other text. */
static size_t group_at(struct cites *c, const char *p, size_t n,
                       enum mt_status *st)
{
    const char *e = NULL;
    size_t len;

    if (p[0] == '[')
        e = memchr(p, ']', n < VF_GROUP_MAX ? n : VF_GROUP_MAX);
    else if (p[0] == '(')
        e = memchr(p, ')', n < VF_GROUP_MAX ? n : VF_GROUP_MAX);
    if (!e || e == p + 1)
        return 0;
    len = (size_t)(e - p) - 1;
    if (!group_items(c, p + 1, len, p[0] == '[', 0, st))
        return 0;
    group_items(c, p + 1, len, p[0] == '[', 1, st);
    return len + 2;
}

/* The claim text: runs of spaces made one, no space before , . ; : ! ?
 * and none at either end. */
static void tidy(struct mt_buf *t)
{
    size_t i, o = 0;

    for (i = 0; i < t->len; i++) {
        char ch = t->data[i];

        if (isspace((unsigned char)ch) &&
            (o == 0 || t->data[o - 1] == ' ' || i + 1 == t->len ||
             strchr(",.;:!?", t->data[i + 1])))
            continue;
        t->data[o++] = isspace((unsigned char)ch) ? ' ' : ch;
    }
    while (o > 0 && t->data[o - 1] == ' ')
        o--;
    t->len = o;
    t->data[o] = '\0';
}

static enum mt_status strip_cites(struct cites *c, const char *p, size_t n,
                                  struct mt_buf *t)
{
    enum mt_status st = mtx_buf_reserve(t, n + 1);
    size_t i = 0, k;

    while (st == MT_OK && i < n) {
        k = group_at(c, p + i, n - i, &st);
        if (k == 0 && (i == 0 || (!id_char(p[i - 1]) && p[i - 1] != '/' &&
                                  p[i - 1] != '.')))
            k = cite_at(c, p + i, n - i, 0, 1, &st);
        if (k > 0) {
            i += k;
            continue;
        }
        st = mtx_buf_putc(t, p[i++]);
    }
    if (st == MT_OK)
        tidy(t);
    return st;
}

/* ==== Quotations ==== */

/* The closing mark of a quotation opened at p[0] (", or U+201C closed by
 * U+201D), the quote's start in *q; NULL when p opens none. */
static const char *quote_end(const char *p, const char *end, const char **q)
{
    if (p[0] == '"') {
        *q = p + 1;
        return memchr(p + 1, '"', (size_t)(end - p - 1));
    }
    if (end - p >= 3 && memcmp(p, "\xE2\x80\x9C", 3) == 0) {
        const char *e = p + 3;

        *q = e;
        for (; e + 3 <= end; e++)
            if (memcmp(e, "\xE2\x80\x9D", 3) == 0)
                return e;
    }
    return NULL;
}

static enum mt_status find_quotes(struct mt_arena *a, const char *p, size_t n,
                                  struct vf_sent *s)
{
    const char *end = p + n, *q = NULL, *e;

    while (p < end && s->nquotes < VF_MAX_QUOTES) {
        e = quote_end(p, end, &q);
        if (!e) {
            p++;
            continue;
        }
        if (count_words(q, (size_t)(e - q)) >= VF_QUOTE_MIN_WORDS) {
            s->quotes[s->nquotes] = mtx_arena_strndup(a, q, (size_t)(e - q));
            if (!s->quotes[s->nquotes++])
                return MT_ENOMEM;
        }
        p = e + (*e == '"' ? 1 : 3);
    }
    return MT_OK;
}

enum mt_status mtx_vf_parse(struct mt_arena *a, const char *p, size_t n,
                            const char *pre, const char *suf,
                            struct vf_sent *out)
{
    struct mt_buf t = MT_BUF_INIT(n + 2);
    struct cites c = {a, pre ? pre : "", suf ? suf : "", out};
    enum mt_status st;

    memset(out, 0, sizeof *out);
    out->cites = mtx_arena_alloc(a, VF_MAX_CITES * sizeof *out->cites);
    out->quotes = mtx_arena_alloc(a, VF_MAX_QUOTES * sizeof *out->quotes);
    if (!out->cites || !out->quotes)
        return MT_ENOMEM;
    st = strip_cites(&c, p, n, &t);
    if (st == MT_OK)
        st = find_quotes(a, p, n, out);
    if (st == MT_OK) {
        out->text = mtx_arena_strndup(a, t.data ? t.data : "", t.len);
        st = out->text ? MT_OK : MT_ENOMEM;
    }
    mtx_buf_free(&t);
    return st;
}

/* ==== The verbatim check ==== */

/* Normalised text: curly quotes straight, dashes '-', the ellipsis
 * character "...", white space (and U+00A0) runs one space, ASCII
 * lower-cased, no space at either end. */
static enum mt_status norm(const char *s, struct mt_buf *o)
{
    enum mt_status st = mtx_buf_reserve(o, strlen(s) + 1);
    const unsigned char *p = (const unsigned char *)s;

    while (st == MT_OK && *p) {
        int sp = isspace(*p) || (p[0] == 0xC2 && p[1] == 0xA0);

        if (sp) {
            p += (*p == 0xC2) ? 2 : 1;
            if (o->len > 0 && o->data[o->len - 1] != ' ')
                st = mtx_buf_putc(o, ' ');
        } else if (p[0] == 0xE2 && p[1] == 0x80 && p[2] >= 0x90 &&
                   p[2] <= 0xA6) {
            /* U+2010..2015 dashes, U+2018..201F quotes, U+2026 */
            const char *r = p[2] <= 0x95   ? "-"
                            : p[2] <= 0x9B ? "'"
                            : p[2] <= 0x9F ? "\""
                            : p[2] == 0xA6 ? "..."
                                           : NULL;

            st = r ? mtx_buf_append_str(o, r) : mtx_buf_append(o, p, 3);
            p += 3;
        } else {
            st = mtx_buf_putc(o, (char)tolower(*p++));
        }
    }
    while (st == MT_OK && o->len > 0 && o->data[o->len - 1] == ' ')
        o->data[--o->len] = '\0';
    return st;
}

/* The first n-byte needle in h[0..hn), or NULL (memmem is not POSIX). */
static const char *find_bytes(const char *h, size_t hn, const char *needle,
                              size_t n)
{
    const char *end = h + hn;

    for (; n > 0 && h + n <= end; h++) {
        h = memchr(h, needle[0], (size_t)(end - h));
        if (!h || h + n > end)
            return NULL;
        if (memcmp(h, needle, n) == 0)
            return h;
    }
    return NULL;
}

/* The first place at or after 'from' where needle[0..nn) stands in hay
 * at word boundaries; -1 when nowhere. */
static long find_at_words(const char *hay, size_t hn, const char *needle,
                          size_t nn, size_t from)
{
    const char *p = hay + from, *end = hay + hn;

    if (nn == 0)
        return -1;
    while (p + nn <= end &&
           (p = find_bytes(p, (size_t)(end - p), needle, nn))) {
        int l_ok = p == hay || !isalnum((unsigned char)p[-1]) ||
                   !isalnum((unsigned char)needle[0]);
        int r_ok = p + nn == end || !isalnum((unsigned char)p[nn]) ||
                   !isalnum((unsigned char)needle[nn - 1]);

        if (l_ok && r_ok)
            return (long)(p - hay);
        p++;
    }
    return -1;
}

/* Whether every ellipsis-separated part of q stands in d, in order. */
static int parts_in_order(const struct mt_buf *q, const struct mt_buf *d)
{
    size_t i = 0, from = 0;

    while (i < q->len) {
        const char *e = strstr(q->data + i, "...");
        struct mt_str part = mtx_str_trim((struct mt_str){
            q->data + i, e ? (size_t)(e - q->data) - i : q->len - i});
        long at;

        while (part.n > 0 && strchr("[]", part.p[part.n - 1]))
            part.n--;
        while (part.n > 0 && strchr("[]", part.p[0]))
            part = (struct mt_str){part.p + 1, part.n - 1};
        part = mtx_str_trim(part);
        if (part.n > 0) {
            at = find_at_words(d->data, d->len, part.p, part.n, from);
            if (at < 0)
                return 0;
            from = (size_t)at + part.n;
        }
        i = e ? (size_t)(e - q->data) + 3 : q->len;
    }
    return 1;
}

/* The end of the longest run of q's words from word start 'a' (at least
 * two words) that stands in d; 0 when none. ws[] are word starts, nw of
 * them, ws[nw] = q->len + 1. */
static size_t longest_run(const struct mt_buf *q, const struct mt_buf *d,
                          const size_t *ws, size_t nw, size_t a)
{
    size_t b;

    for (b = nw; b >= a + 2; b--)
        if (find_at_words(d->data, d->len, q->data + ws[a], ws[b] - 1 - ws[a],
                          0) >= 0)
            return b;
    return 0;
}

/* Whether q (without ellipses) is covered by two or more runs of at
 * least two words each that stand in d. */
static int stitched(struct mt_buf *q, const struct mt_buf *d)
{
    size_t ws[257], nw = 0, i, a = 0, pieces = 0;
    char *e;

    while ((e = strstr(q->data, "...")) != NULL) { /* "a ... b": "a b" */
        size_t at = (size_t)(e - q->data), k = 3;

        while (at + k < q->len && q->data[at + k] == ' ')
            k++;
        for (; at > 0 && q->data[at - 1] == ' '; at--)
            k++;
        memmove(q->data + at + 1, q->data + at + k, q->len - at - k + 1);
        q->data[at] = ' ';
        q->len -= k - 1;
    }
    for (i = 0; i < q->len && nw < 256; i++)
        if (q->data[i] != ' ' && (i == 0 || q->data[i - 1] == ' '))
            ws[nw++] = i;
    if (nw < 4)
        return 0;
    ws[nw] = q->len + 1;
    while (a < nw) {
        size_t b = longest_run(q, d, ws, nw, a);

        if (b == 0)
            return 0;
        pieces++;
        a = b;
    }
    return pieces >= 2;
}

enum mt_quote_status mtx_vf_quote(const char *quote, const char *doc)
{
    struct mt_buf q = MT_BUF_INIT((size_t)1 << 20);
    struct mt_buf d = MT_BUF_INIT((size_t)1 << 28);
    enum mt_quote_status r = MT_QUOTE_NOT_FOUND;

    if (norm(quote, &q) == MT_OK && norm(doc, &d) == MT_OK && q.len > 0) {
        if (parts_in_order(&q, &d))
            r = MT_QUOTE_FOUND;
        else if (stitched(&q, &d))
            r = MT_QUOTE_STITCHED;
    }
    mtx_buf_free(&q);
    mtx_buf_free(&d);
    return r;
}
