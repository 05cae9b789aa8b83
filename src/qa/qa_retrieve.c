/* Retrieval for question answering, through the answerer's retriever:
 * hybrid search (VerifAI: each list over its top score, 0.7 lexical + 0.3
 * semantic, chunk scores summed per document), BM25 when the index has no
 * vectors, the source and year filters, whole documents, and reranking
 * of the documents. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "qa/qa_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"
#include "medtrust/retrieve.h"

#define FETCH_MAX 5000 /* documents fetched when filtering by year */

/* ==== Documents ==== */

int32_t mt_qa_meta_year(const char *metadata)
{
    json_t *o = metadata ? json_loads(metadata, 0, NULL) : NULL;
    json_t *y = json_object_get(o, "year");
    long v = 0;

    if (json_is_integer(y))
        v = (long)json_integer_value(y);
    else if (json_is_string(y))
        v = strtol(json_string_value(y), NULL, 10);
    json_decref(o);
    return v > 0 && v < 100000 ? (int32_t)v : 0;
}

static int year_ok(const struct mt_qa_params *p, struct mt_retriever *ret,
                   int64_t chunk)
{
    char *meta = NULL;
    int32_t y;

    if (!p->year_from && !p->year_to)
        return 1;
    if (mt_retriever_metadata(ret, chunk, &meta, NULL) != MT_OK)
        return 0;
    y = mt_qa_meta_year(meta);
    mt_free(meta);
    return y && (!p->year_from || y >= p->year_from) &&
           (!p->year_to || y <= p->year_to);
}

/* The document's link, as VerifAI links PubMed: its own "url" metadata
 * when it has one, else PubMed's page when the id is a PMID (digits). */
static const char *doc_url(struct qa_run *r, const struct mt_search_hit *h)
{
    char *meta = NULL;
    json_t *o = NULL;
    const char *u = NULL;
    const char *out = NULL;
    char pm[96];
    size_t i;

    if (mt_retriever_metadata(r->q->ret, h->chunk_id, &meta, NULL) == MT_OK &&
        meta)
        o = json_loads(meta, 0, NULL);
    mt_free(meta);
    u = json_string_value(json_object_get(o, "url"));
    if (u && (strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0))
        out = mt_qa_keep(r, u, strlen(u));
    json_decref(o);
    if (out)
        return out;
    for (i = 0; h->doc_id[i] && isdigit((unsigned char)h->doc_id[i]); i++)
        ;
    if (i == 0 || h->doc_id[i] || i > 12)
        return NULL;
    snprintf(pm, sizeof pm, "https://pubmed.ncbi.nlm.nih.gov/%s/", h->doc_id);
    return mt_qa_keep(r, pm, strlen(pm));
}

static enum mt_status add_doc(struct qa_run *r, const struct mt_search_hit *h)
{
    struct mt_qa_doc *d = &r->res->docs[r->res->ndocs];
    char *text = NULL;
    size_t len = 0;
    enum mt_status st = mt_retriever_document(r->q->ret, h, r->q->p.doc_chars,
                                              &text, &len, NULL);

    if (st == MT_OK) {
        d->doc_id = mt_qa_keep(r, h->doc_id, strlen(h->doc_id));
        d->title = h->title ? mt_qa_keep(r, h->title, strlen(h->title)) : NULL;
        d->text =
            mt_qa_keep(r, text, mt_utf8_cut(text, len, r->q->p.doc_chars));
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

/* Hybrid when the index's vectors suit the embedder (the retriever embeds
 * the question), else BM25 with a note. */
static enum mt_status search_mode(struct qa_run *r, struct mt_search_params *sp)
{
    sp->mode = r->q->index_vectors ? MT_SEARCH_HYBRID : MT_SEARCH_BM25;
    if (r->q->index_vectors)
        return MT_OK;
    return mt_qa_note(r, "the index has no vectors for the embedder: "
                         "BM25 search only (build them with 'medtrust "
                         "index --embedder use-lite')");
}

static void search_params(const struct mt_qa_params *p,
                          struct mt_search_params *sp, uint32_t want)
{
    uint32_t fetch = want;

    if (p->year_from || p->year_to) /* over-fetch, then filter */
        fetch = want * 10 + 50 < FETCH_MAX ? want * 10 + 50 : FETCH_MAX;
    mt_search_default_params(sp);
    sp->k = fetch;
    sp->retrieve_k = fetch * 4 > sp->retrieve_k ? fetch * 4 : sp->retrieve_k;
    sp->doc_sum = 1;
    sp->w_lex = p->w_lex;
    sp->w_sem = p->w_sem;
    sp->source = p->source;
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
        t[i] = mt_str_from(res->docs[i].text);
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

    r->res->docs = mt_arena_alloc(r->mem, (want + 1) * sizeof *r->res->docs);
    if (!r->res->docs)
        return MT_ENOMEM;
    for (i = 0; st == MT_OK && i < hits->n && r->res->ndocs < want; i++)
        if (year_ok(&r->p, r->q->ret, hits->hits[i].chunk_id))
            st = add_doc(r, &hits->hits[i]);
    return st;
}

enum mt_status mt_qa_retrieve(struct qa_run *r, const char *question,
                              struct mt_error *err)
{
    const struct mt_qa_params *p = &r->p;
    int rr = mt_retriever_has_reranker(r->q->ret);
    uint32_t want = rr && p->rerank_depth > p->k ? p->rerank_depth : p->k;
    struct mt_search_params sp;
    struct mt_search_result *hits = NULL;
    enum mt_status st;

    search_params(p, &sp, want);
    st = search_mode(r, &sp);
    r->res->search = sp.mode == MT_SEARCH_HYBRID ? "hybrid" : "bm25";
    if (st == MT_OK)
        st = mt_retriever_search(r->q->ret, question, &sp, &hits, err);
    if (st == MT_OK && collect(r, hits, want) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "ask: out of memory");
    mt_search_result_free(hits);
    if (st == MT_OK && rr && r->res->ndocs > 1) {
        st = rerank(r, question, err);
        if (st != MT_OK && st != MT_ENOMEM)
            st = mt_qa_note(r,
                            "the reranker failed (%s): the first-stage "
                            "order is kept",
                            err ? err->msg : "");
    }
    if (st == MT_OK && r->res->ndocs > p->k)
        r->res->ndocs = p->k;
    return st;
}
