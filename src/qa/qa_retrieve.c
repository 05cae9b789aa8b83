/* Retrieval for question answering, through the answerer's retriever:
 * hybrid search (VerifAI: each list over its top score, 0.7 lexical + 0.3
 * semantic, chunk scores summed per document), BM25 when the index has no
 * vectors, the source, year, author, journal and publication-type
 * filters (inside the search), whole documents, and reranking of the
 * documents. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "qa/qa_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"
#include "medtrust/retrieve.h"

/* ==== Documents ==== */

/* The document's link (mt_retriever_url: its "url", else PubMed's page
 * for a PMID), kept in the run; NULL when it has none. */
static const char *doc_url(struct qa_run *r, const struct mt_search_hit *h)
{
    char *u = NULL;
    const char *out = NULL;

    if (mt_retriever_url(r->q->ret, h, &u, NULL) == MT_OK && u)
        out = mtx_qa_keep(r, u, strlen(u));
    mt_free(u);
    return out;
}

static enum mt_status add_doc(struct qa_run *r, const struct mt_search_hit *h)
{
    struct mt_qa_doc *d = &r->res->docs[r->res->ndocs];
    char *text = NULL;
    size_t len = 0;
    enum mt_status st = mt_retriever_document(r->q->ret, h, r->q->p.doc_chars,
                                              &text, &len, NULL);

    if (st == MT_OK) {
        d->doc_id = mtx_qa_keep(r, h->doc_id, strlen(h->doc_id));
        d->title = h->title ? mtx_qa_keep(r, h->title, strlen(h->title)) : NULL;
        d->text =
            mtx_qa_keep(r, text, mtx_utf8_cut(text, len, r->q->p.doc_chars));
        d->score = h->score;
        d->url = doc_url(r, h);
        st =
            d->doc_id && d->text && (d->title || !h->title) ? MT_OK : MT_ENOMEM;
    }
    r->res->ndocs += st == MT_OK;
    mt_free(text);
    return st;
}

/* ==== Search ==== */

/* The mode asked for, or hybrid when the index's vectors suit the
 * embedder (the retriever embeds the question), else BM25 with a note. */
static enum mt_status search_mode(struct qa_run *r, struct mt_search_params *sp,
                                  struct mt_error *err)
{
    int m = r->p.search_mode;

    if (m >= 0 && m != MT_SEARCH_BM25 && !r->q->index_vectors)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "ask: %s search needs the index's vectors for the "
                       "embedder; build them with 'medtrust index "
                       "--embedder use-lite', or search bm25",
                       mt_search_mode_str((enum mt_search_mode)m));
    if (m >= 0) {
        sp->mode = (enum mt_search_mode)m;
        return MT_OK;
    }
    sp->mode = r->q->index_vectors ? MT_SEARCH_HYBRID : MT_SEARCH_BM25;
    if (r->q->index_vectors)
        return MT_OK;
    return mtx_qa_note(r, "the index has no vectors for the embedder: "
                          "BM25 search only (build them with 'medtrust "
                          "index --embedder use-lite')");
}

/* The metadata filters as conditions of the search itself, so the first
 * stage looks only at matching documents (no top k cut short by a
 * post-filter). Returns how many of c it set (at most 4). */
static size_t meta_conds(const struct mt_qa_params *p, struct mt_meta_cond *c)
{
    size_t n = mt_search_pubmed_conds(p->author, p->journal, p->pub_type, c);

    if (p->year_from || p->year_to) {
        c[n].key = "year";
        c[n].text = NULL;
        c[n].min = p->year_from ? p->year_from : -HUGE_VAL;
        c[n++].max = p->year_to ? p->year_to : HUGE_VAL;
    }
    return n;
}

static void search_params(const struct mt_qa_params *p,
                          struct mt_search_params *sp, uint32_t want,
                          const struct mt_meta_cond *c, size_t nc)
{
    mt_search_default_params(sp);
    sp->k = want;
    sp->retrieve_k = want * 4 > sp->retrieve_k ? want * 4 : sp->retrieve_k;
    sp->doc_sum = 1;
    sp->w_lex = p->w_lex;
    sp->w_sem = p->w_sem;
    sp->source = p->source;
    sp->fusion_depth = p->fusion_depth;
    sp->nltk_stopwords = p->nltk_stopwords;
    sp->meta = c;
    sp->nmeta = nc;
}

static int doc_cmp(const void *a, const void *b)
{
    const struct mt_qa_doc *x = a;
    const struct mt_qa_doc *y = b;

    return (x->score < y->score) - (x->score > y->score);
}

static enum mt_status rerank(struct qa_run *r, const char *question,
                             struct mt_error *err)
{
    struct mt_qa_result *res = r->res;
    struct mt_str *t = mt_calloc(res->ndocs + 1, sizeof *t);
    float *sc = mt_calloc(res->ndocs + 1, sizeof *sc);
    size_t i;
    enum mt_status st = t && sc ? MT_OK : MT_ENOMEM;

    for (i = 0; st == MT_OK && i < res->ndocs; i++)
        t[i] = mtx_str_from(res->docs[i].text);
    if (st == MT_OK)
        st = mt_retriever_rerank(r->q->ret, question, t, res->ndocs, sc, err);
    for (i = 0; st == MT_OK && i < res->ndocs; i++)
        res->docs[i].score = sc[i];
    if (st == MT_OK)
        qsort(res->docs, res->ndocs, sizeof *res->docs, doc_cmp);
    mt_free(t);
    mt_free(sc);
    return st == MT_ENOMEM ? mt_fail(err, st, "ask: out of memory") : st;
}

static enum mt_status
collect(struct qa_run *r, const struct mt_search_result *hits, uint32_t want)
{
    size_t i;
    enum mt_status st = MT_OK;

    r->res->docs = mtx_arena_alloc(r->mem, (want + 1) * sizeof *r->res->docs);
    if (!r->res->docs)
        return MT_ENOMEM;
    for (i = 0; st == MT_OK && i < hits->n && r->res->ndocs < want; i++)
        st = add_doc(r, &hits->hits[i]);
    return st;
}

enum mt_status mtx_qa_retrieve(struct qa_run *r, const char *question,
                               struct mt_error *err)
{
    const struct mt_qa_params *p = &r->p;
    int rr = mt_retriever_has_reranker(r->q->ret);
    uint32_t want = rr && p->rerank_depth > p->k ? p->rerank_depth : p->k;
    struct mt_search_params sp;
    struct mt_search_result *hits = NULL;
    struct mt_meta_cond c[4];
    enum mt_status st;

    memset(c, 0, sizeof c);
    search_params(p, &sp, want, c, meta_conds(p, c));
    st = search_mode(r, &sp, err);
    r->res->search = mt_search_mode_str(sp.mode);
    if (st == MT_OK)
        st = mt_retriever_search(r->q->ret, question, &sp, &hits, err);
    if (st == MT_OK && collect(r, hits, want) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "ask: out of memory");
    mt_search_result_free(hits);
    if (st == MT_OK && rr && r->res->ndocs > 1) {
        st = rerank(r, question, err);
        if (st != MT_OK && st != MT_ENOMEM)
            st = mtx_qa_note(r,
                             "the reranker failed (%s): the first-stage "
                             "order is kept",
                             err ? err->msg : "");
    }
    if (st == MT_OK && r->res->ndocs > p->k)
        r->res->ndocs = p->k;
    return st;
}
