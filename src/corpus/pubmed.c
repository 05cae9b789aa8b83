/* PubMed baseline and update files (PubmedArticleSet, the NLM DTD): one
 * document per PubmedArticle with an abstract, id = PMID, labelled
 * sections kept as "LABEL: text"; DeleteCitation entries delete. */
#include <stdio.h>
#include <string.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define FIELD_MAX ((size_t)1 << 26) /* 64 MiB: no real field comes close */

struct pubmed {
    struct mt_import_ctx *c;
    struct mt_buf pmid;
    struct mt_buf title;
    struct mt_buf text;  /* the abstract built so far */
    struct mt_buf part;  /* the AbstractText being read */
    struct mt_buf field; /* any other leaf being read */
    struct mt_buf last;  /* Author parts */
    struct mt_buf fore;
    struct mt_buf coll;
    char label[128];
    json_t *meta;
    int in_record;
    int have_year;
    size_t cap_depth; /* depth of the element being captured */
    uint64_t n;       /* records seen, for messages */
};

static void reset_buf(struct mt_buf *b)
{
    mt_buf_reset(b);
    mt_buf_reserve(b, 1);
}

static void grab(struct pubmed *m, struct mt_xml *x, struct mt_buf *b)
{
    reset_buf(b);
    mt_xml_capture(x, b);
    m->cap_depth = mt_xml_depth(x);
}

static enum mt_status begin_record(struct pubmed *m, struct mt_xml *x)
{
    m->in_record = 1;
    m->have_year = 0;
    m->n++;
    mt_buf_reset(&m->pmid);
    mt_buf_reset(&m->title);
    mt_buf_reset(&m->text);
    json_decref(m->meta);
    m->meta = json_object();
    if (!m->meta)
        return mt_fail(mt_xml_error(x), MT_ENOMEM, "out of memory");
    return MT_OK;
}

/* Which leaf elements are read into which buffer, by path suffix. */
static struct mt_buf *leaf_for(struct pubmed *m, struct mt_xml *x)
{
    static const char *const fields[] = {
        "MedlineCitation/Article/Journal/Title", "JournalIssue/PubDate/Year",
        "JournalIssue/PubDate/MedlineDate",      "MeshHeading/DescriptorName",
        "PublicationTypeList/PublicationType",   "DeleteCitation/PMID",
    };
    size_t i;

    if (mt_xml_at(x, "PubmedArticle/MedlineCitation/PMID"))
        return &m->pmid;
    if (mt_xml_at(x, "MedlineCitation/Article/ArticleTitle"))
        return &m->title;
    if (mt_xml_at(x, "MedlineCitation/Article/Abstract/AbstractText"))
        return &m->part;
    if (mt_xml_at(x, "AuthorList/Author/LastName"))
        return &m->last;
    if (mt_xml_at(x, "AuthorList/Author/ForeName"))
        return &m->fore;
    if (mt_xml_at(x, "AuthorList/Author/CollectiveName"))
        return &m->coll;
    for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (mt_xml_at(x, fields[i]))
            return &m->field;
    return NULL;
}

static int is_doi(struct mt_xml *x, const char **attrs)
{
    const char *type = mt_xml_attr(attrs, "IdType");

    return mt_xml_at(x, "PubmedData/ArticleIdList/ArticleId") && type &&
           strcmp(type, "doi") == 0;
}

static enum mt_status on_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct pubmed *m = user;
    struct mt_buf *b;

    if (mt_xml_depth(x) == 1 && strcmp(name, "PubmedArticleSet") != 0)
        return mt_fail(mt_xml_error(x), MT_EPARSE,
                       "not a PubMed file: the root element is <%s>, not "
                       "<PubmedArticleSet>",
                       name);
    if (strcmp(name, "PubmedArticle") == 0)
        return begin_record(m, x);
    if (strcmp(name, "PubmedBookArticle") == 0)
        mt_sink_record(m->c->sink, 1); /* book chapters: not read */
    if (mt_xml_captured(x))
        return MT_OK; /* inline markup (<i>, <sub>, MathML) inside a field */
    if (!m->in_record && !mt_xml_at(x, "DeleteCitation/PMID"))
        return MT_OK;
    if (strcmp(name, "Author") == 0) {
        mt_buf_reset(&m->last);
        mt_buf_reset(&m->fore);
        mt_buf_reset(&m->coll);
    }
    b = is_doi(x, attrs) ? &m->field : leaf_for(m, x);
    if (b == &m->part) {
        const char *label = mt_xml_attr(attrs, "Label");

        snprintf(m->label, sizeof m->label, "%s", label ? label : "");
    }
    if (b)
        grab(m, x, b);
    return MT_OK;
}

/* Appends one AbstractText to the abstract: "LABEL: text", a line each. */
static enum mt_status add_part(struct pubmed *m)
{
    enum mt_status st = MT_OK;

    mt_squash_space(&m->part);
    if (m->part.len == 0)
        return MT_OK;
    if (m->text.len)
        st = mt_buf_putc(&m->text, '\n');
    if (st == MT_OK && m->label[0])
        st = mt_buf_printf(&m->text, "%s: ", m->label);
    if (st == MT_OK)
        st = mt_buf_append(&m->text, m->part.data, m->part.len);
    return st;
}

static enum mt_status add_author(struct pubmed *m)
{
    char name[512];

    mt_squash_space(&m->coll);
    mt_squash_space(&m->fore);
    mt_squash_space(&m->last);
    if (m->coll.len)
        snprintf(name, sizeof name, "%s", m->coll.data);
    else if (m->last.len && m->fore.len)
        snprintf(name, sizeof name, "%s %s", m->fore.data, m->last.data);
    else if (m->last.len)
        snprintf(name, sizeof name, "%s", m->last.data);
    else
        return MT_OK;
    return mt_meta_push(m->meta, "authors", name);
}

/* A leaf of m->field ended: file it where its element belongs. */
static enum mt_status add_field(struct pubmed *m, struct mt_xml *x,
                                const char *name, struct mt_error *err)
{
    const char *v;

    mt_squash_space(&m->field);
    v = mt_buf_str(&m->field);
    if (strcmp(name, "Title") == 0)
        return mt_meta_str(m->meta, "journal", v);
    if (strcmp(name, "Year") == 0 || strcmp(name, "MedlineDate") == 0) {
        char year[5] = "";

        /* MedlineDate is free text ("1998 Dec-1999 Jan"): its first
         * four characters are the year. */
        if (m->have_year || strlen(v) < 4)
            return MT_OK;
        memcpy(year, v, 4);
        m->have_year = 1;
        return mt_meta_str(m->meta, "year", year);
    }
    if (strcmp(name, "DescriptorName") == 0)
        return mt_meta_push(m->meta, "mesh", v);
    if (strcmp(name, "PublicationType") == 0)
        return mt_meta_push(m->meta, "publication_types", v);
    if (strcmp(name, "ArticleId") == 0)
        return mt_meta_str(m->meta, "doi", v);
    if (mt_xml_at(x, "DeleteCitation/PMID"))
        return *v ? mt_sink_delete(m->c->sink, v, err) : MT_OK;
    return MT_OK;
}

static enum mt_status end_record(struct pubmed *m, struct mt_xml *x,
                                 struct mt_error *err)
{
    struct mt_sink_doc d;

    m->in_record = 0;
    mt_squash_space(&m->pmid);
    if (m->pmid.len == 0)
        return mt_fail(err, MT_EPARSE, "PubmedArticle %llu has no PMID",
                       (unsigned long long)m->n);
    mt_sink_read(m->c->sink, mt_xml_offset(x));
    mt_sink_record(m->c->sink, m->text.len == 0);
    if (m->text.len == 0)
        return MT_OK; /* no abstract: nothing to search */
    mt_squash_space(&m->title);
    d.id = m->pmid.data;
    d.title = m->title.len ? m->title.data : NULL;
    d.text = m->text.data;
    d.text_len = m->text.len;
    d.meta = m->meta;
    return mt_sink_put(m->c->sink, &d, err);
}

static enum mt_status on_end(struct mt_xml *x, const char *name, void *user)
{
    struct pubmed *m = user;
    struct mt_error *err = mt_xml_error(x);
    struct mt_buf *cap = mt_xml_captured(x);
    enum mt_status st = MT_OK;

    if (strcmp(name, "PubmedArticle") == 0)
        return end_record(m, x, err);
    if (strcmp(name, "Author") == 0 && m->in_record)
        st = add_author(m);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    if (!cap || mt_xml_depth(x) != m->cap_depth)
        return MT_OK; /* not the end of a field being read */
    mt_xml_capture(x, NULL);
    if (cap == &m->part)
        st = add_part(m);
    else if (cap == &m->field)
        st = add_field(m, x, name, err);
    if (st != MT_OK && err->status == MT_OK)
        mt_fail(err, st, "field %s: out of memory or over the limit", name);
    return st;
}

static void pubmed_free(struct pubmed *m)
{
    mt_buf_free(&m->pmid);
    mt_buf_free(&m->title);
    mt_buf_free(&m->text);
    mt_buf_free(&m->part);
    mt_buf_free(&m->field);
    mt_buf_free(&m->last);
    mt_buf_free(&m->fore);
    mt_buf_free(&m->coll);
    json_decref(m->meta);
}

enum mt_status mt_import_pubmed(struct mt_import_ctx *c, const char *path,
                                struct mt_error *err)
{
    static const struct mt_xml_fns fns = {on_start, on_end};
    struct pubmed m;
    enum mt_status st;
    char what[96];

    memset(&m, 0, sizeof m);
    m.c = c;
    m.pmid = m.title = m.text = m.part = MT_BUF_INIT(FIELD_MAX);
    m.field = m.last = m.fore = m.coll = MT_BUF_INIT(FIELD_MAX);
    st = mt_xml_parse(path, &fns, &m, err);
    if (st != MT_OK && m.in_record) {
        mt_squash_space(&m.pmid);
        snprintf(what, sizeof what, "in PubmedArticle %llu, PMID %s",
                 (unsigned long long)m.n,
                 m.pmid.len ? m.pmid.data : "not yet read");
        mt_error_suffix(err, what);
    }
    pubmed_free(&m);
    return st;
}
