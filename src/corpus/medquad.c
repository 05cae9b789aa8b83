/* MedQuAD repository XML: one document per answered QA pair (the answer,
 * trimmed; title = the focus), id "mq-" + the first 12 hex digits of the
 * SHA-1 of that text with its runs of white space folded to one space, so
 * the same answer in two files is one document. That is the rule of the
 * prepared ../shared/data/medquad/corpus.jsonl: all 15,809 of its ids are
 * the SHA-1 of their text folded so. Reads both schemas:
 * Document/QAPairs/QAPair and NINDS's lower-case doc/qaPairs/pair. Five
 * files of the upstream tree (four in 6_NINDS_QA, one in 9_CDC_QA) have
 * the root <DiseaseFile fid source url> around the same Focus and QAPairs:
 * read exactly as <Document>. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define FIELD_MAX ((size_t)1 << 26)

struct medquad {
    struct mt_import_ctx *c;
    struct mt_buf focus;
    struct mt_buf question;
    struct mt_buf answer;
    struct mt_buf folded; /* the answer, white space folded, for its id */
    char source[64];
    char url[1024];
    char qid[64];
    char qtype[64];
    struct mtx_meta meta; /* the pair's document's */
    size_t cap_depth;
};

static int is(const char *name, const char *a, const char *b)
{
    return strcasecmp(name, a) == 0 || strcasecmp(name, b) == 0;
}

/* The root elements of a MedQuAD file. */
static int is_root(const char *name)
{
    return is(name, "Document", "doc") || strcasecmp(name, "DiseaseFile") == 0;
}

static void keep_attr(char *dst, size_t n, const char **attrs, const char *name)
{
    const char *v = mtx_xml_attr(attrs, name);

    snprintf(dst, n, "%s", v ? v : "");
}

static void grab(struct medquad *m, struct mt_xml *x, struct mt_buf *b)
{
    mtx_buf_reset(b);
    mtx_buf_reserve(b, 1);
    mtx_xml_capture(x, b);
    m->cap_depth = mtx_xml_depth(x);
}

static enum mt_status on_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct medquad *m = user;

    if (mtx_xml_depth(x) == 1 && !is_root(name))
        return mt_fail(mtx_xml_error(x), MT_EPARSE,
                       "not a MedQuAD file: the root element is <%s>, not "
                       "<Document> or <DiseaseFile>",
                       name);
    if (mtx_xml_depth(x) == 1) {
        /* Document@source (DiseaseFile@source), or doc@corpus in the
         * NINDS variant. */
        keep_attr(m->source, sizeof m->source, attrs,
                  mtx_xml_attr(attrs, "source") ? "source" : "corpus");
        keep_attr(m->url, sizeof m->url, attrs, "url");
        mtx_buf_reset(&m->focus);
    } else if (mtx_xml_depth(x) == 2 && is(name, "Focus", "doctitle-focus")) {
        grab(m, x, &m->focus);
    } else if (is(name, "QAPair", "pair")) {
        mtx_buf_reset(&m->question);
        mtx_buf_reset(&m->answer);
    } else if (is(name, "Question", "question") && !mtx_xml_captured(x)) {
        keep_attr(m->qid, sizeof m->qid, attrs, "qid");
        keep_attr(m->qtype, sizeof m->qtype, attrs, "qtype");
        grab(m, x, &m->question);
    } else if (is(name, "Answer", "answer") && !mtx_xml_captured(x)) {
        grab(m, x, &m->answer);
    }
    return MT_OK;
}

static enum mt_status pair_meta(struct medquad *m)
{
    struct mtx_meta *meta = &m->meta;
    enum mt_status st;

    mtx_meta_reset(meta);
    st = mtx_meta_str(meta, "source", m->source);
    if (st == MT_OK)
        st = mtx_meta_str(meta, "url", m->url);
    if (st == MT_OK)
        st = mtx_meta_str(meta, "focus", mtx_buf_str(&m->focus));
    if (st == MT_OK)
        st = mtx_meta_str(meta, "qtype", m->qtype);
    return st;
}

/* The question to --queries, with the id of the document answering it. */
static enum mt_status pair_query(struct medquad *m, const char *doc_id,
                                 struct mt_error *err)
{
    char id[160];
    json_t *extra = json_pack("{s:s}", "qtype", m->qtype);
    enum mt_status st;

    mtx_squash_space(&m->question);
    snprintf(id, sizeof id, "mqq-%s-%s", m->source, m->qid);
    st = extra ? mtx_sink_query(m->c->sink, id, mtx_buf_str(&m->question),
                                doc_id, extra, err)
               : mt_fail(err, MT_ENOMEM, "out of memory");
    json_decref(extra);
    return st;
}

/* SHA-1 of the answer with its white space folded (the prepared corpus's
 * rule: answers that differ only in spacing are one document). */
static enum mt_status answer_id(struct medquad *m, struct mt_str a,
                                char hex[41])
{
    enum mt_status st;

    mtx_buf_reset(&m->folded);
    st = mtx_buf_append(&m->folded, a.p, a.n);
    if (st != MT_OK)
        return st;
    mtx_squash_space(&m->folded);
    mtx_sha1_hex(m->folded.data, m->folded.len, hex);
    return MT_OK;
}

/* A pair ended: its trimmed answer becomes a document (folders 10-12
 * have every answer removed: those are counted as skipped). */
static enum mt_status end_pair(struct medquad *m, struct mt_error *err)
{
    struct mt_str a =
        mtx_str_trim((struct mt_str){mtx_buf_str(&m->answer), m->answer.len});
    char hex[41];
    char id[20];
    struct mt_sink_doc d;
    enum mt_status st;

    mtx_sink_record(m->c->sink, a.n == 0);
    if (a.n == 0)
        return MT_OK;
    if (answer_id(m, a, hex) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    snprintf(id, sizeof id, "mq-%.12s", hex);
    st = pair_meta(m);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory or not UTF-8");
    d.id = id;
    d.title = m->focus.len ? mtx_buf_str(&m->focus) : NULL;
    d.text = a.p;
    d.text_len = a.n;
    d.meta = NULL;
    d.fields = &m->meta;
    st = mtx_sink_put(m->c->sink, &d, err);
    if (st == MT_OK)
        st = pair_query(m, id, err);
    return st == MT_OK ? st : mt_error_prefix(err, "question %s", m->qid);
}

static enum mt_status on_end(struct mt_xml *x, const char *name, void *user)
{
    struct medquad *m = user;

    if (mtx_xml_captured(x) && mtx_xml_depth(x) == m->cap_depth) {
        mtx_xml_capture(x, NULL);
        if (mtx_xml_captured(x) == NULL && is(name, "Focus", "doctitle-focus"))
            mtx_squash_space(&m->focus);
    }
    if (is(name, "QAPair", "pair"))
        return end_pair(m, mtx_xml_error(x));
    return MT_OK;
}

enum mt_status mtx_import_medquad(struct mt_import_ctx *c, const char *path,
                                  struct mt_error *err)
{
    static const struct mt_xml_fns fns = {on_start, on_end};
    struct medquad m;
    enum mt_status st;

    memset(&m, 0, sizeof m);
    m.c = c;
    m.focus = m.question = m.answer = m.folded = MT_BUF_INIT(FIELD_MAX);
    st = mtx_xml_parse(path, &fns, &m, err);
    mtx_buf_free(&m.focus);
    mtx_buf_free(&m.question);
    mtx_buf_free(&m.answer);
    mtx_buf_free(&m.folded);
    mtx_meta_free(&m.meta);
    return st;
}
