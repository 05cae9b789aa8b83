/* Born-digital PDFs (guidelines of NICE, WHO, CDC...) through Poppler's
 * GLib API: one document a page, in Poppler's reading order (its text
 * flows: columns one after the other), hyphenated words at line ends
 * joined, headers and footers repeated on most pages dropped; the page
 * number in the metadata so a passage cites its page; the title from the
 * document info, else the first large line. A PDF without text (scanned)
 * is refused: no OCR. */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <poppler.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define EDGE_LINES 2     /* lines at a page's top and bottom looked at */
#define TITLE_MAX 300    /* bytes of a title taken from the first page */
#define PAGES_MAX 100000 /* pages of one file */
#define TITLE_RATIO 1.2  /* a large line: 1.2 x the body's font size */

/* Poppler's global state (GlobalParams, the font caches) is set up on the
 * first document and is not documented as safe for concurrent first use:
 * the files of an import are opened and read one at a time. */
static pthread_mutex_t poppler_lock = PTHREAD_MUTEX_INITIALIZER;

struct line {
    char *p; /* within the page's text, NUL-terminated in place */
    size_t n;
    int drop;              /* a repeated header or footer */
    double x0, y0, x1, y1; /* the box of its glyphs */
};

struct page {
    char *text;       /* g_malloc'd by Poppler */
    struct line *all; /* in Poppler's order */
    struct line **l;  /* in reading order */
    size_t nl;
};

/* Trims ASCII white space off both ends of s (n bytes); the new length. */
static size_t trim(char **s, size_t n)
{
    while (n && isspace((unsigned char)(*s)[n - 1]))
        n--;
    while (n && isspace((unsigned char)**s)) {
        (*s)++;
        n--;
    }
    return n;
}

struct pdf {
    const char *path;
    PopplerDocument *doc;
    struct page *pg;
    size_t np;
    char base[256];
    struct mt_buf out;
};

/* ==== Lines in reading order ==== */

/* Poppler's page text gives lines in its selection order (top to bottom
 * across columns); the lines are put in reading order by a recursive
 * XY-cut over their boxes (Nagy and Seth 1984): split at the widest
 * horizontal or vertical gap no line crosses, top part before bottom,
 * left before right, until no gap is left. */
#define XYCUT_LINES_MAX 5000 /* more lines: top to bottom, left to right */

static int by_y(const void *a, const void *b)
{
    const struct line *x = *(const struct line *const *)a;
    const struct line *y = *(const struct line *const *)b;

    if (x->y0 != y->y0)
        return x->y0 < y->y0 ? -1 : 1;
    return x->x0 < y->x0 ? -1 : x->x0 > y->x0;
}

static int by_x(const void *a, const void *b)
{
    const struct line *x = *(const struct line *const *)a;
    const struct line *y = *(const struct line *const *)b;

    if (x->x0 != y->x0)
        return x->x0 < y->x0 ? -1 : 1;
    return x->y0 < y->y0 ? -1 : x->y0 > y->y0;
}

/* The widest gap along one axis of v (sorted along it): *at is the count
 * before the gap, returned its width (0: none). */
static double widest_gap(struct line **v, size_t n, int vertical, size_t *at)
{
    double end = vertical ? v[0]->x1 : v[0]->y1, best = 0;
    size_t i;

    for (i = 1; i < n; i++) {
        double lo = vertical ? v[i]->x0 : v[i]->y0;
        double hi = vertical ? v[i]->x1 : v[i]->y1;

        if (lo - end > best) {
            best = lo - end;
            *at = i;
        }
        if (hi > end)
            end = hi;
    }
    return best;
}

static void xycut(struct line **v, size_t n, int depth)
{
    size_t ah = 0, av = 0;
    double gh, gv;

    if (n < 2)
        return;
    qsort(v, n, sizeof *v, by_x);
    gv = depth < 64 ? widest_gap(v, n, 1, &av) : 0;
    qsort(v, n, sizeof *v, by_y);
    gh = depth < 64 ? widest_gap(v, n, 0, &ah) : 0;
    if (gh <= 0 && gv <= 0)
        return; /* left by_y: top to bottom, left to right */
    if (gv > gh)
        qsort(v, n, sizeof *v, by_x);
    else
        av = ah;
    xycut(v, av, depth + 1);
    xycut(v + av, n - av, depth + 1);
}

/* Splits the page's text into trimmed lines with the box of their glyphs
 * (rects: one a character of the text, as Poppler gives them). */
static enum mt_status split_lines(struct page *p, const PopplerRectangle *r,
                                  size_t nr)
{
    size_t cap = 16, ci = 0;
    char *s = p->text;

    p->all = mt_calloc(cap, sizeof *p->all);
    if (!p->all)
        return MT_ENOMEM;
    while (s && *s) {
        char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        struct line ln = {s, n, 0, 1e300, 1e300, -1e300, -1e300};
        const char *q;

        for (q = s; q < s + n; q += g_utf8_skip[*(const guchar *)q], ci++) {
            if (ci < nr && !isspace((unsigned char)*q)) {
                ln.x0 = r[ci].x1 < ln.x0 ? r[ci].x1 : ln.x0;
                ln.y0 = r[ci].y1 < ln.y0 ? r[ci].y1 : ln.y0;
                ln.x1 = r[ci].x2 > ln.x1 ? r[ci].x2 : ln.x1;
                ln.y1 = r[ci].y2 > ln.y1 ? r[ci].y2 : ln.y1;
            }
        }
        ci++; /* the newline */
        if (e)
            *e = '\0';
        ln.n = trim(&ln.p, n);
        if (ln.n && p->nl == cap) {
            struct line *nl = mt_realloc(p->all, 2 * cap * sizeof *nl);

            if (!nl)
                return MT_ENOMEM;
            p->all = nl;
            cap *= 2;
        }
        if (ln.n) {
            if (ln.x0 > ln.x1) /* no box: after the last line seen */
                ln.x0 = ln.x1 = ln.y0 = ln.y1 = 1e300;
            p->all[p->nl++] = ln;
        }
        s = e ? e + 1 : NULL;
    }
    return MT_OK;
}

/* The lines in reading order, as pointers into p->all. */
static enum mt_status order_lines(struct page *p)
{
    size_t i;

    p->l = mt_calloc(p->nl ? p->nl : 1, sizeof *p->l);
    if (!p->l)
        return MT_ENOMEM;
    for (i = 0; i < p->nl; i++)
        p->l[i] = &p->all[i];
    if (p->nl <= XYCUT_LINES_MAX)
        xycut(p->l, p->nl, 0);
    else
        qsort(p->l, p->nl, sizeof *p->l, by_y);
    return MT_OK;
}

/* ==== The edges of pages ==== */

/* A line's shape for comparing edges: digits (page numbers, dates) folded
 * to one '#', white space to one space, letters lower-cased. */
static void edge_key(const struct line *l, char *k, size_t kn)
{
    size_t i, o = 0;

    for (i = 0; i < l->n && o + 1 < kn; i++) {
        unsigned char c = (unsigned char)l->p[i];

        if (isdigit(c)) {
            if (o == 0 || k[o - 1] != '#')
                k[o++] = '#';
        } else if (isspace(c)) {
            if (o == 0 || k[o - 1] != ' ')
                k[o++] = ' ';
        } else {
            k[o++] = (char)tolower(c);
        }
    }
    k[o] = '\0';
}

/* Is line j of page p at its top or bottom edge? */
static int at_edge(const struct page *p, size_t j)
{
    return j < EDGE_LINES || j + EDGE_LINES >= p->nl;
}

/* Pages (other than p) with an edge line of the same shape as l. */
static size_t edge_count(const struct pdf *d, const char *key)
{
    size_t i, j, c = 0;
    char k[512];

    for (i = 0; i < d->np; i++) {
        for (j = 0; j < d->pg[i].nl; j++) {
            if (!at_edge(&d->pg[i], j))
                continue;
            edge_key(d->pg[i].l[j], k, sizeof k);
            if (strcmp(k, key) == 0) {
                c++;
                break;
            }
        }
    }
    return c;
}

/* Marks the edge lines whose shape is on more than half of the pages (and
 * on at least 3): running headers, footers, "Page 3 of 10". */
static void mark_edges(struct pdf *d)
{
    size_t i, j;
    char k[512];

    if (d->np < 3)
        return;
    for (i = 0; i < d->np; i++) {
        for (j = 0; j < d->pg[i].nl; j++) {
            if (!at_edge(&d->pg[i], j))
                continue;
            edge_key(d->pg[i].l[j], k, sizeof k);
            if (2 * edge_count(d, k) > d->np)
                d->pg[i].l[j]->drop = 1;
        }
    }
}

/* ==== A page's text ==== */

/* Does 'l' end in a hyphen that splits a word ("differ-" + "ence")? */
/* The bytes of the hyphen that ends l when it splits a word ("differ-" +
 * "ence"): '-', U+2010 HYPHEN or U+00AD SOFT HYPHEN after a letter, the
 * next line starting lower-case; else 0. */
static size_t hyphen_split(const struct line *l, const struct line *next)
{
    static const char *const hy[] = {"-", "\xe2\x80\x90", "\xc2\xad"};
    size_t i, k;

    if (!islower((unsigned char)next->p[0]))
        return 0;
    for (i = 0; i < sizeof hy / sizeof hy[0]; i++) {
        k = strlen(hy[i]);
        if (l->n > k && memcmp(l->p + l->n - k, hy[i], k) == 0 &&
            isalpha((unsigned char)l->p[l->n - k - 1]))
            return k;
    }
    return 0;
}

/* The page's kept lines joined with a space, a word hyphenated at a line
 * end joined without its hyphen. */
static enum mt_status page_text(struct pdf *d, const struct page *p)
{
    const struct line *prev = NULL;
    size_t j;
    enum mt_status st = MT_OK;

    mtx_buf_reset(&d->out);
    for (j = 0; st == MT_OK && j < p->nl; j++) {
        const struct line *l = p->l[j];
        size_t hy;

        if (l->drop)
            continue;
        hy = prev ? hyphen_split(prev, l) : 0;
        if (hy) {
            d->out.len -= hy;
            d->out.data[d->out.len] = '\0';
        } else if (prev) {
            st = mtx_buf_putc(&d->out, ' ');
        }
        if (st == MT_OK)
            st = mtx_buf_append(&d->out, l->p, l->n);
        prev = l;
    }
    return st;
}

/* ==== The title ==== */

/* The font size that covers most characters, and the first run of the
 * largest one. */
static void font_sizes(GList *attrs, double *body, double *big, int *at)
{
    double sizes[64] = {0}, cover[64] = {0};
    size_t ns = 0, i, best = 0;
    GList *a;

    *big = 0;
    for (a = attrs; a; a = a->next) {
        const PopplerTextAttributes *t = a->data;

        for (i = 0; i < ns && sizes[i] != t->font_size; i++)
            ;
        if (i == ns && ns < 64)
            sizes[ns++] = t->font_size;
        if (i < ns)
            cover[i] += t->end_index - t->start_index + 1;
        if (t->font_size > *big) {
            *big = t->font_size;
            *at = t->start_index;
        }
    }
    for (i = 1; i < ns; i++)
        if (cover[i] > cover[best])
            best = i;
    *body = ns ? sizes[best] : 0;
}

/* The first line set larger than the body of page 1, into 'out'. */
static void large_line(struct pdf *d, char *out, size_t n)
{
    PopplerPage *pg = poppler_document_get_page(d->doc, 0);
    GList *attrs = pg ? poppler_page_get_text_attributes(pg) : NULL;
    char *text = pg ? poppler_page_get_text(pg) : NULL;
    double body = 0, big = 0;
    int at = 0;

    out[0] = '\0';
    font_sizes(attrs, &body, &big, &at);
    if (text && big > body * TITLE_RATIO && at >= 0 &&
        at < g_utf8_strlen(text, -1)) {
        const char *s = g_utf8_offset_to_pointer(text, at);
        const char *b = s, *e = strchr(s, '\n');

        while (b > text && b[-1] != '\n')
            b--;
        snprintf(out, n, "%.*s", (int)((e ? e : s + strlen(s)) - b), b);
    }
    poppler_page_free_text_attributes(attrs);
    g_free(text);
    if (pg)
        g_object_unref(pg);
}

static void doc_title(struct pdf *d, char *out, size_t n)
{
    gchar *t = poppler_document_get_title(d->doc);
    struct mt_buf b = MT_BUF_INIT(n);
    size_t bad;

    out[0] = '\0';
    if (t && *t && mtx_utf8_validate(t, strlen(t), &bad) == MT_OK)
        snprintf(out, n, "%s", t);
    g_free(t);
    if (!out[0])
        large_line(d, out, n);
    if (mtx_buf_append_str(&b, out) == MT_OK) {
        mtx_squash_space(&b);
        snprintf(out, n, "%s", mtx_buf_str(&b));
    }
    mtx_buf_free(&b);
}

/* ==== The file ==== */

static enum mt_status open_doc(struct pdf *d, struct mt_error *err)
{
    GError *ge = NULL;
    char *abs = realpath(d->path, NULL);
    gchar *uri = abs ? g_filename_to_uri(abs, NULL, &ge) : NULL;
    enum mt_status st = MT_OK;

    if (uri)
        d->doc = poppler_document_new_from_file(uri, NULL, &ge);
    if (!d->doc)
        st = mt_fail(err, abs ? MT_EPARSE : MT_EIO,
                     "%s: not a readable PDF: %s", d->path,
                     ge    ? ge->message
                     : abs ? "Poppler cannot open it"
                           : "no such file");
    if (ge)
        g_error_free(ge);
    g_free(uri);
    free(abs); /* realpath's, from malloc */
    return st;
}

static enum mt_status load_page(struct pdf *d, size_t i)
{
    PopplerPage *pg = poppler_document_get_page(d->doc, (int)i);
    PopplerRectangle *r = NULL;
    guint nr = 0;
    size_t bad;
    enum mt_status st;

    d->pg[i].text = pg ? poppler_page_get_text(pg) : NULL;
    if (pg && d->pg[i].text && !poppler_page_get_text_layout(pg, &r, &nr))
        nr = 0;
    if (pg)
        g_object_unref(pg);
    if (d->pg[i].text &&
        mtx_utf8_validate(d->pg[i].text, strlen(d->pg[i].text), &bad) != MT_OK)
        d->pg[i].text[bad] = '\0'; /* Poppler gives UTF-8; be sure */
    st = split_lines(&d->pg[i], r, nr);
    g_free(r);
    return st == MT_OK ? order_lines(&d->pg[i]) : st;
}

static enum mt_status load_pages(struct pdf *d, struct mt_error *err)
{
    int n = poppler_document_get_n_pages(d->doc);
    size_t i;

    if (n <= 0 || n > PAGES_MAX)
        return mt_fail(err, MT_EPARSE, "%s: %d pages (1 to %d read)", d->path,
                       n, PAGES_MAX);
    d->pg = mt_calloc((size_t)n, sizeof *d->pg);
    if (!d->pg)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    d->np = (size_t)n;
    for (i = 0; i < d->np; i++) {
        if (load_page(d, i) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    return MT_OK;
}

static enum mt_status no_text(const struct pdf *d, struct mt_error *err)
{
    size_t i;

    for (i = 0; i < d->np; i++)
        if (d->pg[i].nl)
            return MT_OK;
    return mt_fail(err, MT_EPARSE,
                   "%s: no text on any of its %zu pages (a scanned PDF? "
                   "import pdf does no OCR: run OCR first, e.g. ocrmypdf)",
                   d->path, d->np);
}

static enum mt_status put_page(struct pdf *d, size_t i, const char *title,
                               struct mt_import_ctx *c, struct mt_error *err)
{
    char id[300];
    struct mtx_meta m;
    char num[24];
    struct mt_sink_doc doc;
    enum mt_status st = page_text(d, &d->pg[i]);

    if (st != MT_OK)
        return mt_fail(err, st, "%s: page %zu: %s", d->path, i + 1,
                       mt_status_str(st));
    mtx_sink_record(c->sink, d->out.len == 0);
    if (d->out.len == 0) /* a blank page, or only a header */
        return MT_OK;
    memset(&m, 0, sizeof m);
    snprintf(id, sizeof id, "%s#p%zu", d->base, i + 1);
    snprintf(num, sizeof num, "%zu", i + 1);
    st = mtx_meta_str(&m, "page", num);
    snprintf(num, sizeof num, "%zu", d->np);
    if (st == MT_OK)
        st = mtx_meta_str(&m, "pages", num);
    if (st == MT_OK)
        st = mtx_meta_str(&m, "file", d->base);
    doc = (struct mt_sink_doc){
        id, title[0] ? title : NULL, d->out.data, d->out.len, NULL, &m};
    if (st == MT_OK)
        st = mtx_sink_put(c->sink, &doc, err);
    else
        st = mt_fail(err, st, "out of memory");
    mtx_meta_free(&m);
    return st;
}

static void base_name(struct pdf *d)
{
    const char *b = strrchr(d->path, '/');
    char *dot;

    snprintf(d->base, sizeof d->base, "%s", b ? b + 1 : d->path);
    dot = strrchr(d->base, '.');
    if (dot && dot != d->base)
        *dot = '\0';
}

static enum mt_status pdf_run(struct pdf *d, struct mt_import_ctx *c,
                              struct mt_error *err)
{
    char title[TITLE_MAX + 1];
    size_t i;
    enum mt_status st = open_doc(d, err);

    if (st == MT_OK)
        st = load_pages(d, err);
    if (st == MT_OK)
        st = no_text(d, err);
    if (st != MT_OK)
        return st;
    mark_edges(d);
    doc_title(d, title, sizeof title);
    for (i = 0; st == MT_OK && i < d->np; i++)
        st = put_page(d, i, title, c, err);
    return st;
}

enum mt_status mtx_import_pdf(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err)
{
    struct pdf d;
    size_t i;
    enum mt_status st;

    memset(&d, 0, sizeof d);
    d.path = path;
    d.out = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    base_name(&d);
    pthread_mutex_lock(&poppler_lock);
    st = pdf_run(&d, c, err);
    for (i = 0; d.pg && i < d.np; i++) {
        g_free(d.pg[i].text);
        mt_free(d.pg[i].all);
        mt_free(d.pg[i].l);
    }
    mt_free(d.pg);
    if (d.doc)
        g_object_unref(d.doc);
    pthread_mutex_unlock(&poppler_lock);
    mtx_buf_free(&d.out);
    return st;
}
