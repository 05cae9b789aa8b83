/* PMC Open Access JATS full text (.nxml, or an efetch pmc-articleset):
 * one document per article, id "PMC<n>" (the PMID when there is no PMC
 * id), its authors named as PubMed's are ("given-names surname", or the
 * collab); the text is the abstract and body, a line per paragraph, with each
 * section title on a line of its own. Figures, tables and formulas are
 * left out. */
#include <stdio.h>
#include <string.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define FIELD_MAX ((size_t)1 << 26)

struct pmc {
    struct mt_import_ctx *c;
    struct mt_buf text;
    struct mt_buf part;
    struct mt_buf field;
    struct mt_buf title;
    struct mt_buf given;  /* the author being read: given-names */
    struct mt_buf family; /* surname */
    struct mt_buf group;  /* collab or string-name */
    char idtype[32];
    char pmcid[32];
    char pmid[32];
    char license[512];
    struct mtx_meta meta;
    int in_article;
    int in_text; /* abstract or body depth */
    int in_skip; /* fig, table-wrap, formulas */
    int have_year;
    int in_author;     /* an author's contrib of the article-meta */
    size_t xref_depth; /* of an xref inside a collab, left out */
    size_t cap_depth;
    size_t body_depth;
    uint64_t n;
};

static int one_of(const char *name, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(name, *names) == 0)
            return 1;
    return 0;
}

static const char *const skipped[] = {"fig",
                                      "table-wrap",
                                      "disp-formula",
                                      "supplementary-material",
                                      "ref-list",
                                      "fn-group",
                                      NULL};

static void grab(struct pmc *m, struct mt_xml *x, struct mt_buf *b)
{
    mtx_buf_reset(b);
    mtx_buf_reserve(b, 1);
    mtx_xml_capture(x, b);
    m->cap_depth = mtx_xml_depth(x);
}

static void begin_article(struct pmc *m)
{
    m->in_article = 1;
    m->in_text = m->in_skip = m->have_year = m->in_author = 0;
    m->pmcid[0] = m->pmid[0] = m->license[0] = '\0';
    m->n++;
    mtx_buf_reset(&m->text);
    mtx_buf_reset(&m->title);
    mtx_meta_reset(&m->meta);
}

static enum mt_status heading(struct pmc *m, const char *h)
{
    enum mt_status st = MT_OK;

    if (m->text.len)
        st = mtx_buf_putc(&m->text, '\n');
    return st == MT_OK ? mtx_buf_append_str(&m->text, h) : st;
}

static void front_start(struct pmc *m, struct mt_xml *x, const char *name,
                        const char **attrs)
{
    const char *v;

    if (mtx_xml_at(x, "article-meta/article-id")) {
        v = mtx_xml_attr(attrs, "pub-id-type");
        snprintf(m->idtype, sizeof m->idtype, "%s", v ? v : "");
        grab(m, x, &m->field);
    } else if (mtx_xml_at(x, "journal-meta/journal-title") ||
               mtx_xml_at(x, "journal-title-group/journal-title") ||
               mtx_xml_at(x, "article-meta/pub-date/year") ||
               mtx_xml_at(x, "permissions/license/license-p")) {
        grab(m, x, &m->field);
    } else if (mtx_xml_at(x, "article-meta/title-group/article-title")) {
        grab(m, x, &m->title);
    } else if (mtx_xml_at(x, "article-meta/contrib-group/contrib")) {
        v = mtx_xml_attr(attrs, "contrib-type");
        m->in_author = !v || strcmp(v, "author") == 0;
        mtx_buf_reset(&m->given);
        mtx_buf_reset(&m->family);
        mtx_buf_reset(&m->group);
    } else if (m->in_author && mtx_xml_at(x, "contrib/name/given-names")) {
        grab(m, x, &m->given);
    } else if (m->in_author && mtx_xml_at(x, "contrib/name/surname")) {
        grab(m, x, &m->family);
    } else if (m->in_author && (mtx_xml_at(x, "contrib/collab") ||
                                mtx_xml_at(x, "contrib/string-name"))) {
        grab(m, x, &m->group);
    } else if (mtx_xml_at(x, "article-meta/permissions/license")) {
        v = mtx_xml_attr(attrs, "xlink:href");
        if (!v || !*v)
            v = mtx_xml_attr(attrs, "license-type");
        snprintf(m->license, sizeof m->license, "%s", v ? v : "");
    }
    (void)name;
}

static enum mt_status on_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct pmc *m = user;
    int abstract = mtx_xml_at(x, "article-meta/abstract");

    if (mtx_xml_depth(x) == 1 && strcmp(name, "article") != 0 &&
        strcmp(name, "pmc-articleset") != 0)
        return mt_fail(mtx_xml_error(x), MT_EPARSE,
                       "not a PMC JATS file: the root element is <%s>, not "
                       "<article> or <pmc-articleset>",
                       name);
    if (strcmp(name, "article") == 0 && !m->in_article) {
        begin_article(m);
        return MT_OK;
    }
    if (mtx_xml_captured(x) == &m->group && strcmp(name, "xref") == 0) {
        mtx_xml_capture(x, NULL); /* a collab's affiliation mark */
        m->xref_depth = mtx_xml_depth(x);
        return MT_OK;
    }
    if (!m->in_article || mtx_xml_captured(x) || m->xref_depth)
        return MT_OK;
    if (abstract || mtx_xml_at(x, "article/body")) {
        const char *type = mtx_xml_attr(attrs, "abstract-type");

        m->in_text++;
        m->body_depth = mtx_xml_depth(x);
        if (abstract && heading(m, type ? "Abstract (" : "Abstract") != MT_OK)
            return mt_fail(mtx_xml_error(x), MT_ENOMEM, "out of memory");
        if (abstract && type &&
            (mtx_buf_append_str(&m->text, type) || mtx_buf_putc(&m->text, ')')))
            return mt_fail(mtx_xml_error(x), MT_ENOMEM, "out of memory");
    } else if (one_of(name, skipped)) {
        m->in_skip++;
    } else if (m->in_text && !m->in_skip &&
               (strcmp(name, "p") == 0 || strcmp(name, "title") == 0)) {
        grab(m, x, &m->part);
    } else if (!m->in_text) {
        front_start(m, x, name, attrs);
    }
    return MT_OK;
}

static enum mt_status front_end(struct pmc *m, struct mt_xml *x,
                                const char *name)
{
    const char *v;

    mtx_squash_space(&m->field);
    v = mtx_buf_str(&m->field);
    if (strcmp(name, "article-id") == 0) {
        if (strcmp(m->idtype, "pmc") == 0 || strcmp(m->idtype, "pmcid") == 0)
            snprintf(m->pmcid, sizeof m->pmcid, "%s",
                     strncmp(v, "PMC", 3) == 0 ? v + 3 : v);
        else if (strcmp(m->idtype, "pmid") == 0)
            snprintf(m->pmid, sizeof m->pmid, "%s", v);
        else if (strcmp(m->idtype, "doi") == 0)
            return mtx_meta_str(&m->meta, "doi", v);
        return MT_OK;
    }
    if (strcmp(name, "journal-title") == 0)
        return mtx_meta_has(&m->meta, "journal")
                   ? MT_OK
                   : mtx_meta_str(&m->meta, "journal", v);
    if (strcmp(name, "year") == 0 && !m->have_year) {
        m->have_year = 1;
        return mtx_meta_str(&m->meta, "year", v);
    }
    if (strcmp(name, "license-p") == 0 && !m->license[0])
        snprintf(m->license, sizeof m->license, "%s", v);
    (void)x;
    return MT_OK;
}

/* A paragraph or a section title of the abstract or body ended. */
static enum mt_status text_end(struct pmc *m, struct mt_xml *x,
                               const char *name)
{
    enum mt_status st = MT_OK;

    mtx_squash_space(&m->part);
    if (m->part.len == 0)
        return MT_OK;
    if (strcmp(name, "title") == 0 && mtx_xml_at(x, "body/sec/title"))
        st = mtx_meta_push(&m->meta, "sections", m->part.data);
    if (st == MT_OK)
        st = heading(m, m->part.data);
    return st;
}

static enum mt_status end_article(struct pmc *m, struct mt_xml *x)
{
    struct mt_error *err = mtx_xml_error(x);
    char id[40];
    struct mt_sink_doc d;
    enum mt_status st;

    m->in_article = 0;
    if (!m->pmcid[0] && !m->pmid[0])
        return mt_fail(err, MT_EPARSE, "article %llu has no PMC id or PMID",
                       (unsigned long long)m->n);
    snprintf(id, sizeof id, "%s%s", m->pmcid[0] ? "PMC" : "",
             m->pmcid[0] ? m->pmcid : m->pmid);
    st = mtx_meta_str(&m->meta, "pmid", m->pmid);
    if (st == MT_OK && m->pmcid[0])
        st = mtx_meta_str(&m->meta, "pmcid", id);
    if (st == MT_OK)
        st = mtx_meta_str(&m->meta, "license", m->license);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    mtx_sink_read(m->c->sink, mtx_xml_offset(x));
    mtx_sink_record(m->c->sink, m->text.len == 0);
    if (m->text.len == 0)
        return MT_OK;
    mtx_squash_space(&m->title);
    d.id = id;
    d.title = m->title.len ? m->title.data : NULL;
    d.text = m->text.data;
    d.text_len = m->text.len;
    d.meta = NULL;
    d.fields = &m->meta;
    st = mtx_sink_put(m->c->sink, &d, err);
    return st;
}

static enum mt_status on_end(struct mt_xml *x, const char *name, void *user)
{
    struct pmc *m = user;
    struct mt_buf *cap = mtx_xml_captured(x);
    enum mt_status st = MT_OK;

    if (strcmp(name, "article") == 0 && m->in_article && mtx_xml_depth(x) <= 2)
        return end_article(m, x);
    if (m->xref_depth) {
        if (mtx_xml_depth(x) == m->xref_depth) {
            m->xref_depth = 0;
            mtx_xml_capture(x, &m->group);
        }
        return MT_OK;
    }
    if (cap && mtx_xml_depth(x) == m->cap_depth) {
        mtx_xml_capture(x, NULL);
        if (cap == &m->part)
            st = text_end(m, x, name);
        else if (cap == &m->field)
            st = front_end(m, x, name);
    } else if (!cap && m->in_author && strcmp(name, "contrib") == 0) {
        m->in_author = 0;
        st = mtx_meta_author(&m->meta, &m->given, &m->family, &m->group);
    } else if (!cap && one_of(name, skipped) && m->in_skip) {
        m->in_skip--;
    } else if (!cap && m->in_text && mtx_xml_depth(x) == m->body_depth &&
               (strcmp(name, "abstract") == 0 || strcmp(name, "body") == 0)) {
        m->in_text--;
    }
    if (st != MT_OK)
        return mt_fail(mtx_xml_error(x), st, "out of memory");
    return MT_OK;
}

enum mt_status mtx_import_pmc(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err)
{
    static const struct mt_xml_fns fns = {on_start, on_end};
    struct pmc m;
    enum mt_status st;
    char what[64];

    memset(&m, 0, sizeof m);
    m.c = c;
    m.text = m.part = m.field = m.title = MT_BUF_INIT(FIELD_MAX);
    m.given = m.family = m.group = MT_BUF_INIT(FIELD_MAX);
    st = mtx_xml_parse(path, &fns, &m, err);
    if (st != MT_OK && m.in_article) {
        snprintf(what, sizeof what, "in article %llu%s%s",
                 (unsigned long long)m.n, m.pmcid[0] ? ", PMC" : "", m.pmcid);
        mtx_error_suffix(err, what);
    }
    mtx_buf_free(&m.text);
    mtx_buf_free(&m.part);
    mtx_buf_free(&m.field);
    mtx_buf_free(&m.title);
    mtx_buf_free(&m.given);
    mtx_buf_free(&m.family);
    mtx_buf_free(&m.group);
    mtx_meta_free(&m.meta);
    return st;
}
