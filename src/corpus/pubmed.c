/* PubMed baseline and update files (PubmedArticleSet, the NLM DTD): one
 * document per PubmedArticle with an abstract, id = PMID, labelled
 * sections kept as "LABEL: text"; DeleteCitation entries delete. */
#include <stdio.h>
#include <string.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define FIELD_MAX ((size_t)1 << 26) /* 64 MiB: no real field comes close */
#define DEPTH_MAX 256               /* as deep as mt_xml goes */

/* The elements the importer looks at; the rest are T_OTHER. Paths are
 * matched on these codes, kept for each open element, instead of on the
 * path text: string compares were a fifth of an import's time. */
enum tag {
    T_OTHER,
    T_SET,         /* PubmedArticleSet */
    T_ARTICLE_REC, /* PubmedArticle */
    T_BOOK,        /* PubmedBookArticle */
    T_CITATION,    /* MedlineCitation */
    T_PMID,
    T_ARTICLE,
    T_ARTICLE_TITLE,
    T_ABSTRACT,
    T_ABSTRACT_TEXT,
    T_AUTHOR_LIST,
    T_AUTHOR,
    T_LAST,
    T_FORE,
    T_COLLECTIVE,
    T_JOURNAL,
    T_TITLE,
    T_ISSUE, /* JournalIssue */
    T_PUB_DATE,
    T_YEAR,
    T_MEDLINE_DATE,
    T_MESH,       /* MeshHeading */
    T_DESCRIPTOR, /* DescriptorName */
    T_PUB_TYPE_LIST,
    T_PUB_TYPE,
    T_DELETE, /* DeleteCitation */
    T_PUBMED_DATA,
    T_ID_LIST, /* ArticleIdList */
    T_ID,      /* ArticleId */
};

static const struct {
    const char *name;
    size_t len;
    enum tag tag;
} tag_names[] = {
#define TAG(name, tag)                                                         \
    {                                                                          \
        name, sizeof(name) - 1, tag                                            \
    }
    TAG("PubmedArticleSet", T_SET),
    TAG("PubmedArticle", T_ARTICLE_REC),
    TAG("PubmedBookArticle", T_BOOK),
    TAG("MedlineCitation", T_CITATION),
    TAG("PMID", T_PMID),
    TAG("Article", T_ARTICLE),
    TAG("ArticleTitle", T_ARTICLE_TITLE),
    TAG("Abstract", T_ABSTRACT),
    TAG("AbstractText", T_ABSTRACT_TEXT),
    TAG("AuthorList", T_AUTHOR_LIST),
    TAG("Author", T_AUTHOR),
    TAG("LastName", T_LAST),
    TAG("ForeName", T_FORE),
    TAG("CollectiveName", T_COLLECTIVE),
    TAG("Journal", T_JOURNAL),
    TAG("Title", T_TITLE),
    TAG("JournalIssue", T_ISSUE),
    TAG("PubDate", T_PUB_DATE),
    TAG("Year", T_YEAR),
    TAG("MedlineDate", T_MEDLINE_DATE),
    TAG("MeshHeading", T_MESH),
    TAG("DescriptorName", T_DESCRIPTOR),
    TAG("PublicationTypeList", T_PUB_TYPE_LIST),
    TAG("PublicationType", T_PUB_TYPE),
    TAG("DeleteCitation", T_DELETE),
    TAG("PubmedData", T_PUBMED_DATA),
    TAG("ArticleIdList", T_ID_LIST),
    TAG("ArticleId", T_ID),
#undef TAG
};

#define NAME_LEN_MAX 32 /* longer than every name in tag_names */
#define PER_LEN 4       /* names of one length in tag_names, at most */

/* tag_names' indexes by name length (0xff: no more), so finding an
 * element's code costs one strlen and a compare or two, not a walk over
 * the table (that walk was 6 % of an import's instructions). */
struct tag_index {
    unsigned char at[NAME_LEN_MAX][PER_LEN];
};

static void tag_index_init(struct tag_index *ix)
{
    size_t i, k;

    memset(ix->at, 0xff, sizeof ix->at);
    for (i = 0; i < sizeof tag_names / sizeof tag_names[0]; i++) {
        unsigned char *slot = ix->at[tag_names[i].len];

        for (k = 0; k + 1 < PER_LEN && slot[k] != 0xff; k++)
            ;
        slot[k] = (unsigned char)i; /* PER_LEN holds every length's names */
    }
}

/* The code of an element name. */
static enum tag tag_of(const struct tag_index *ix, const char *name)
{
    size_t k, n = strlen(name);
    const unsigned char *slot;

    if (n >= NAME_LEN_MAX)
        return T_OTHER;
    slot = ix->at[n];
    for (k = 0; k < PER_LEN && slot[k] != 0xff; k++)
        if (tag_names[slot[k]].name[0] == name[0] &&
            memcmp(tag_names[slot[k]].name, name, n) == 0)
            return tag_names[slot[k]].tag;
    return T_OTHER;
}

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
    struct mtx_meta meta;
    int in_record;
    int have_year;
    size_t cap_depth; /* depth of the element being captured */
    size_t depth;     /* of the current element, 1 at the root */
    unsigned char tags[DEPTH_MAX + 1]; /* enum tag of each open element */
    uint64_t n;                        /* records seen, for messages */
    struct tag_index ix;
};

static void reset_buf(struct mt_buf *b)
{
    mtx_buf_reset(b);
    mtx_buf_reserve(b, 1);
}

static void grab(struct pubmed *m, struct mt_xml *x, struct mt_buf *b)
{
    reset_buf(b);
    mtx_xml_capture(x, b);
    m->cap_depth = mtx_xml_depth(x);
}

static void begin_record(struct pubmed *m)
{
    m->in_record = 1;
    m->have_year = 0;
    m->n++;
    mtx_buf_reset(&m->pmid);
    mtx_buf_reset(&m->title);
    mtx_buf_reset(&m->text);
    mtx_meta_reset(&m->meta);
}

/* Does the path end in the elements a..c (T_OTHER: any, none past the
 * root)? */
static int at3(const struct pubmed *m, enum tag a, enum tag b, enum tag c)
{
    const unsigned char *t = m->tags + m->depth;

    if (t[0] != c || m->depth < 2 || t[-1] != b)
        return 0;
    return a == T_OTHER || (m->depth >= 3 && t[-2] == a);
}

/* Which leaf elements are read into which buffer, by path. */
static struct mt_buf *leaf_for(struct pubmed *m, const char **attrs)
{
    const char *type;

    switch ((enum tag)m->tags[m->depth]) {
    case T_PMID:
        return at3(m, T_ARTICLE_REC, T_CITATION, T_PMID) ? &m->pmid
               : at3(m, T_OTHER, T_DELETE, T_PMID)       ? &m->field
                                                         : NULL;
    case T_ARTICLE_TITLE:
        return at3(m, T_CITATION, T_ARTICLE, T_ARTICLE_TITLE) ? &m->title
                                                              : NULL;
    case T_ABSTRACT_TEXT:
        return at3(m, T_ARTICLE, T_ABSTRACT, T_ABSTRACT_TEXT) &&
                       m->tags[m->depth - 3] == T_CITATION
                   ? &m->part
                   : NULL;
    case T_LAST:
        return at3(m, T_AUTHOR_LIST, T_AUTHOR, T_LAST) ? &m->last : NULL;
    case T_FORE:
        return at3(m, T_AUTHOR_LIST, T_AUTHOR, T_FORE) ? &m->fore : NULL;
    case T_COLLECTIVE:
        return at3(m, T_AUTHOR_LIST, T_AUTHOR, T_COLLECTIVE) ? &m->coll : NULL;
    case T_TITLE:
        return at3(m, T_ARTICLE, T_JOURNAL, T_TITLE) &&
                       m->tags[m->depth - 3] == T_CITATION
                   ? &m->field
                   : NULL;
    case T_YEAR:
    case T_MEDLINE_DATE:
        return at3(m, T_ISSUE, T_PUB_DATE, m->tags[m->depth]) ? &m->field
                                                              : NULL;
    case T_DESCRIPTOR:
        return at3(m, T_OTHER, T_MESH, T_DESCRIPTOR) ? &m->field : NULL;
    case T_PUB_TYPE:
        return at3(m, T_OTHER, T_PUB_TYPE_LIST, T_PUB_TYPE) ? &m->field : NULL;
    case T_ID:
        type = mtx_xml_attr(attrs, "IdType");
        return at3(m, T_PUBMED_DATA, T_ID_LIST, T_ID) && type &&
                       strcmp(type, "doi") == 0
                   ? &m->field
                   : NULL;
    default:
        return NULL;
    }
}

static enum mt_status on_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct pubmed *m = user;
    struct mt_buf *b;
    enum tag t = tag_of(&m->ix, name);

    m->depth = mtx_xml_depth(x);
    m->tags[m->depth] = (unsigned char)t;
    if (m->depth == 1 && t != T_SET)
        return mt_fail(mtx_xml_error(x), MT_EPARSE,
                       "not a PubMed file: the root element is <%s>, not "
                       "<PubmedArticleSet>",
                       name);
    if (t == T_ARTICLE_REC) {
        begin_record(m);
        return MT_OK;
    }
    if (t == T_BOOK)
        mtx_sink_record(m->c->sink, 1); /* book chapters: not read */
    if (mtx_xml_captured(x))
        return MT_OK; /* inline markup (<i>, <sub>, MathML) inside a field */
    if (!m->in_record &&
        !(t == T_PMID && m->depth >= 2 && m->tags[m->depth - 1] == T_DELETE))
        return MT_OK;
    if (t == T_AUTHOR) {
        mtx_buf_reset(&m->last);
        mtx_buf_reset(&m->fore);
        mtx_buf_reset(&m->coll);
    }
    b = leaf_for(m, attrs);
    if (b == &m->part) {
        const char *label = mtx_xml_attr(attrs, "Label");

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

    mtx_squash_space(&m->part);
    if (m->part.len == 0)
        return MT_OK;
    if (m->text.len)
        st = mtx_buf_putc(&m->text, '\n');
    if (st == MT_OK && m->label[0])
        st = mtx_buf_printf(&m->text, "%s: ", m->label);
    if (st == MT_OK)
        st = mtx_buf_append(&m->text, m->part.data, m->part.len);
    return st;
}

/* A leaf of m->field ended: file it where its element belongs. */
static enum mt_status add_field(struct pubmed *m, struct mt_error *err)
{
    enum tag t = (enum tag)m->tags[m->depth];
    const char *v;

    mtx_squash_space(&m->field);
    v = mtx_buf_str(&m->field);
    if (t == T_TITLE)
        return mtx_meta_str(&m->meta, "journal", v);
    if (t == T_YEAR || t == T_MEDLINE_DATE) {
        char year[5] = "";

        /* MedlineDate is free text ("1998 Dec-1999 Jan"): its first
         * four characters are the year. */
        if (m->have_year || strlen(v) < 4)
            return MT_OK;
        memcpy(year, v, 4);
        m->have_year = 1;
        return mtx_meta_str(&m->meta, "year", year);
    }
    if (t == T_DESCRIPTOR)
        return mtx_meta_push(&m->meta, "mesh", v);
    if (t == T_PUB_TYPE)
        return mtx_meta_push(&m->meta, "publication_types", v);
    if (t == T_ID)
        return mtx_meta_str(&m->meta, "doi", v);
    if (t == T_PMID) /* DeleteCitation/PMID (a record's PMID is m->pmid) */
        return *v ? mtx_sink_delete(m->c->sink, v, err) : MT_OK;
    return MT_OK;
}

static enum mt_status end_record(struct pubmed *m, struct mt_xml *x,
                                 struct mt_error *err)
{
    struct mt_sink_doc d;

    m->in_record = 0;
    mtx_squash_space(&m->pmid);
    if (m->pmid.len == 0) {
        mt_fail(err, MT_EPARSE, "PubmedArticle %llu has no PMID",
                (unsigned long long)m->n);
        return mtx_xml_skip(x, m->c->sink);
    }
    mtx_sink_read(m->c->sink, mtx_xml_offset(x));
    mtx_sink_record(m->c->sink, m->text.len == 0);
    if (m->text.len == 0)
        return MT_OK; /* no abstract: nothing to search */
    mtx_squash_space(&m->title);
    d.id = m->pmid.data;
    d.title = m->title.len ? m->title.data : NULL;
    d.text = m->text.data;
    d.text_len = m->text.len;
    d.meta = NULL;
    d.fields = &m->meta;
    return mtx_sink_put(m->c->sink, &d, err);
}

static enum mt_status on_end(struct mt_xml *x, const char *name, void *user)
{
    struct pubmed *m = user;
    struct mt_error *err = mtx_xml_error(x);
    struct mt_buf *cap = mtx_xml_captured(x);
    enum mt_status st = MT_OK;
    enum tag t;

    m->depth = mtx_xml_depth(x);
    t = (enum tag)m->tags[m->depth];
    if (t == T_ARTICLE_REC)
        return end_record(m, x, err);
    if (t == T_AUTHOR && m->in_record)
        st = mtx_meta_author(&m->meta, &m->fore, &m->last, &m->coll);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    if (!cap || mtx_xml_depth(x) != m->cap_depth)
        return MT_OK; /* not the end of a field being read */
    mtx_xml_capture(x, NULL);
    if (cap == &m->part)
        st = add_part(m);
    else if (cap == &m->field)
        st = add_field(m, err);
    if (st != MT_OK && err->status == MT_OK)
        mt_fail(err, st, "field %s: out of memory or over the limit", name);
    return st;
}

static void pubmed_free(struct pubmed *m)
{
    mtx_buf_free(&m->pmid);
    mtx_buf_free(&m->title);
    mtx_buf_free(&m->text);
    mtx_buf_free(&m->part);
    mtx_buf_free(&m->field);
    mtx_buf_free(&m->last);
    mtx_buf_free(&m->fore);
    mtx_buf_free(&m->coll);
    mtx_meta_free(&m->meta);
}

enum mt_status mtx_import_pubmed(struct mt_import_ctx *c, const char *path,
                                 struct mt_error *err)
{
    static const struct mt_xml_fns fns = {on_start, on_end};
    struct pubmed m;
    enum mt_status st;
    char what[96];

    memset(&m, 0, sizeof m);
    m.c = c;
    tag_index_init(&m.ix);
    m.pmid = m.title = m.text = m.part = MT_BUF_INIT(FIELD_MAX);
    m.field = m.last = m.fore = m.coll = MT_BUF_INIT(FIELD_MAX);
    st = mtx_xml_parse(path, &fns, &m, err);
    if (st != MT_OK && m.in_record) {
        mtx_squash_space(&m.pmid);
        snprintf(what, sizeof what, "in PubmedArticle %llu, PMID %s",
                 (unsigned long long)m.n,
                 m.pmid.len ? m.pmid.data : "not yet read");
        mtx_error_suffix(err, what);
    }
    pubmed_free(&m);
    return st;
}
