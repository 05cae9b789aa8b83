/* Retrieval for question answering: hybrid search (VerifAI: each list
 * over its top score, 0.7 lexical + 0.3 semantic, chunk scores summed per
 * document), BM25 when the index has no vectors, the source and year
 * filters, whole documents rebuilt from their chunks, and reranking. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "qa/qa_int.h"
#include "medtrust/core.h"
#include "text/utf8.h"
#include "medtrust/store.h"
#include "model/embed.h"
#include "model/rerank.h"

#define JOIN_MAX 2000  /* longest chunk overlap looked for, bytes */
#define FETCH_MAX 5000 /* documents fetched when filtering by year */

/* ==== Workers ==== */

static enum mt_status worker_open(const struct mt_qa *q, struct qa_worker *w,
                                  struct mt_error *err)
{
    struct mt_store_params sp;
    enum mt_status st = mt_index_open(q->p.db_dir, &w->idx, err);

    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1;
    if (st == MT_OK)
        st = mt_store_open(q->p.db_dir, &sp, &w->store, err);
    if (st != MT_OK) {
        mt_index_close(w->idx);
        w->idx = NULL;
    }
    return st;
}

static void worker_close(struct qa_worker *w)
{
    mt_index_close(w->idx);
    mt_store_close(w->store);
}

static enum mt_status borrow(struct mt_qa *q, struct qa_worker *w,
                             struct mt_error *err)
{
    int got = 0;

    pthread_mutex_lock(&q->pool_mu);
    if (q->npool > 0) {
        *w = q->pool[--q->npool];
        got = 1;
    }
    pthread_mutex_unlock(&q->pool_mu);
    return got ? MT_OK : worker_open(q, w, err);
}

static void give_back(struct mt_qa *q, struct qa_worker *w)
{
    pthread_mutex_lock(&q->pool_mu);
    if (q->npool == q->cap_pool) {
        size_t cap = q->cap_pool ? q->cap_pool * 2 : 8;
        struct qa_worker *p = mt_realloc(q->pool, cap * sizeof *p);

        if (p) {
            q->pool = p;
            q->cap_pool = cap;
        }
    }
    if (q->npool < q->cap_pool)
        q->pool[q->npool++] = *w;
    else
        worker_close(w);
    pthread_mutex_unlock(&q->pool_mu);
}

enum mt_status mt_qa_pool_open(struct mt_qa *q, struct mt_error *err)
{
    struct qa_worker w = {NULL, NULL};
    uint32_t dims = 0;
    enum mt_status st = worker_open(q, &w, err);

    if (st != MT_OK)
        return st;
    mt_index_embedder(w.idx, &dims);
    q->index_vectors = q->emb && dims > 0 && dims == mt_embedder_dims(q->emb);
    give_back(q, &w);
    return q->npool ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

void mt_qa_pool_close(struct mt_qa *q)
{
    size_t i;

    for (i = 0; i < q->npool; i++)
        worker_close(&q->pool[i]);
    mt_free(q->pool);
    q->pool = NULL;
    q->npool = q->cap_pool = 0;
}

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

enum mt_status mt_qa_join_overlap(struct mt_buf *a, const char *b, size_t n)
{
    size_t max = a->len < n ? a->len : n;
    size_t k;

    if (max > JOIN_MAX)
        max = JOIN_MAX;
    for (k = max; k > 0; k--)
        if (memcmp(a->data + a->len - k, b, k) == 0)
            break;
    if (k == 0 && a->len > 0 && n > 0) {
        enum mt_status st = mt_buf_putc(a, ' ');

        if (st != MT_OK)
            return st;
    }
    return mt_buf_append(a, b + k, n - k);
}

/* Whether chunk 'id' exists and is chunk 'ord' of document doc/src. */
static int same_doc(struct mt_store *s, int64_t id, const char *doc,
                    const char *src, uint32_t ord, struct mt_chunk_info *ci)
{
    return id > 0 && mt_store_chunk_get(s, id, ci, NULL) == MT_OK &&
           ci->ordinal == ord && strcmp(ci->doc_id, doc) == 0 &&
           strcmp(ci->source, src) == 0;
}

/* The document of hit h, rebuilt from its chunks up to 'max' bytes. */
static enum mt_status whole_doc(struct mt_store *s,
                                const struct mt_search_hit *h, size_t max,
                                struct mt_buf *out)
{
    struct mt_chunk_info ci;
    int64_t id = h->chunk_id;
    uint32_t ord;
    enum mt_status st;

    if (mt_store_chunk_get(s, id, &ci, NULL) != MT_OK)
        return mt_buf_append_str(out, h->text);
    for (ord = ci.ordinal;
         ord > 0 && same_doc(s, id - 1, h->doc_id, h->source, ord - 1, &ci);
         ord--)
        id--;
    st = mt_buf_reserve(out, 1);
    for (; st == MT_OK && out->len < max &&
           same_doc(s, id, h->doc_id, h->source, ord, &ci);
         ord++, id++)
        st = mt_qa_join_overlap(out, ci.text, strlen(ci.text));
    if (st == MT_OK && out->len == 0)
        st = mt_buf_append_str(out, h->text);
    return st;
}

static int year_ok(const struct mt_qa_params *p, struct mt_store *s,
                   int64_t chunk)
{
    struct mt_chunk_info ci;
    int32_t y;

    if (!p->year_from && !p->year_to)
        return 1;
    if (mt_store_chunk_get(s, chunk, &ci, NULL) != MT_OK)
        return 0;
    y = mt_qa_meta_year(ci.metadata);
    return y && (!p->year_from || y >= p->year_from) &&
           (!p->year_to || y <= p->year_to);
}

/* The document's link, as VerifAI links PubMed: its own "url" metadata
 * when it has one, else PubMed's page when the id is a PMID (digits). */
static const char *doc_url(struct qa_run *r, struct mt_store *s,
                           const struct mt_search_hit *h)
{
    struct mt_chunk_info ci;
    json_t *o = NULL;
    const char *u = NULL;
    const char *out = NULL;
    char pm[96];
    size_t i;

    if (mt_store_chunk_get(s, h->chunk_id, &ci, NULL) == MT_OK && ci.metadata)
        o = json_loads(ci.metadata, 0, NULL);
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

static enum mt_status add_doc(struct qa_run *r, struct qa_worker *w,
                              const struct mt_search_hit *h)
{
    struct mt_qa_doc *d = &r->res->docs[r->res->ndocs];
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 28);
    enum mt_status st = whole_doc(w->store, h, r->q->p.doc_chars, &b);

    if (st == MT_OK) {
        d->doc_id = mt_qa_keep(r, h->doc_id, strlen(h->doc_id));
        d->title = h->title ? mt_qa_keep(r, h->title, strlen(h->title)) : NULL;
        d->text = mt_qa_keep(r, b.data,
                             mt_utf8_cut(b.data, b.len, r->q->p.doc_chars));
        d->score = h->score;
        d->url = doc_url(r, w->store, h);
        st =
            d->doc_id && d->text && (d->title || !h->title) ? MT_OK : MT_ENOMEM;
    }
    r->res->ndocs += st == MT_OK;
    mt_buf_free(&b);
    return st;
}

/* ==== Search ==== */

static enum mt_status query_vec(struct qa_run *r, const char *question,
                                struct mt_search_params *sp, float **vec,
                                struct mt_error *err)
{
    struct mt_str t = mt_str_from(question);
    uint32_t dims = 0;
    enum mt_status st;

    if (!r->q->index_vectors) {
        sp->mode = MT_SEARCH_BM25;
        return mt_qa_note(r, "the index has no vectors for the embedder: "
                             "BM25 search only (build them with 'medtrust "
                             "index --embedder use-lite')");
    }
    st = mt_qa_embed(r->q, &t, 1, vec, &dims, err);
    if (st != MT_OK)
        return st;
    sp->mode = MT_SEARCH_HYBRID;
    sp->query_vec = *vec;
    sp->query_dims = dims;
    return MT_OK;
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
        st =
            mt_reranker_score(r->q->reranker, question, t, res->ndocs, sc, err);
    for (i = 0; st == MT_OK && i < res->ndocs; i++)
        res->docs[i].score = sc[i];
    if (st == MT_OK)
        qsort(res->docs, res->ndocs, sizeof *res->docs, doc_cmp);
    mt_free(t);
    mt_free(sc);
    return st == MT_ENOMEM ? mt_fail(err, st, "ask: out of memory") : st;
}

static enum mt_status collect(struct qa_run *r, struct qa_worker *w,
                              const struct mt_search_result *hits,
                              uint32_t want)
{
    size_t i;
    enum mt_status st = MT_OK;

    r->res->docs = mt_arena_alloc(r->mem, (want + 1) * sizeof *r->res->docs);
    if (!r->res->docs)
        return MT_ENOMEM;
    for (i = 0; st == MT_OK && i < hits->n && r->res->ndocs < want; i++)
        if (year_ok(&r->q->p, w->store, hits->hits[i].chunk_id))
            st = add_doc(r, w, &hits->hits[i]);
    return st;
}

enum mt_status mt_qa_retrieve(struct qa_run *r, const char *question,
                              struct mt_error *err)
{
    const struct mt_qa_params *p = &r->q->p;
    uint32_t want =
        r->q->reranker && p->rerank_depth > p->k ? p->rerank_depth : p->k;
    struct mt_search_params sp;
    struct mt_search_result *hits = NULL;
    struct qa_worker w = {NULL, NULL};
    float *vec = NULL;
    enum mt_status st;

    search_params(p, &sp, want);
    st = query_vec(r, question, &sp, &vec, err);
    r->res->search = sp.mode == MT_SEARCH_HYBRID ? "hybrid" : "bm25";
    if (st == MT_OK)
        st = borrow(r->q, &w, err);
    if (st != MT_OK) {
        mt_free(vec);
        return st;
    }
    st = mt_index_search(w.idx, question, &sp, &hits, err);
    if (st == MT_OK && collect(r, &w, hits, want) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "ask: out of memory");
    mt_search_result_free(hits);
    give_back(r->q, &w);
    mt_free(vec);
    if (st == MT_OK && r->q->reranker && r->res->ndocs > 1) {
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
