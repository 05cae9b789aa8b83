/* The retriever: a pool of (index, store) handles, the query embedder
 * under one lock, the reranker, and whole documents rebuilt from chunks.
 * The one place that turns "a store directory" into "search it from any
 * thread" for the checker, question answering, the server and the CLI. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/pool.h"
#include "medtrust/core.h"
#include "medtrust/publish.h"
#include "medtrust/retrieve.h"
#include "medtrust/store.h"
#include "retrieve/retrieve_int.h"

#define JOIN_MAX 2000 /* longest chunk overlap looked for, bytes */

#define DIR_MAX 4096

/* One thread's handles; the store is opened on first need. */
struct worker {
    struct mt_index *idx;
    struct mt_store *store;
    char dir[DIR_MAX]; /* the corpus folder both were opened on */
    uint64_t gen;      /* the retriever's gen when idx was opened */
    struct worker *next;
};

struct mt_retriever {
    char *db_dir;
    char *emb_spec; /* NULL = the index's own */
    char *emb_cache;
    int no_embedder; /* "none" */
    int follow;      /* lazy: reopen a rebuilt index, retry the embedder */
    pthread_mutex_t pool_mu;
    struct worker *idle;
    /* The folder searched: db_dir, or the published snapshot its CURRENT
     * names (pool_mu; cur_stamp is the watch_stamp it was found at,
     * cur_try when a snapshot that did not check out was last looked at,
     * gen counts the changes of folder or index). 'published' says which
     * file watch_stamp looks at; read without the lock. */
    char cur_dir[DIR_MAX];
    int64_t cur_stamp;
    time_t cur_try;
    uint64_t gen;
    atomic_int published;
    pthread_mutex_t emb_mu;  /* embedders take one call at a time */
    int emb_tried;           /* open_embedder ran (its result is kept) */
    uint64_t emb_gen;        /* gen of that try (follow) */
    struct mt_error emb_err; /* why it failed, when it did */
    struct mt_embedder *emb;
    uint32_t index_dims; /* of the index's vectors, 0 = none */
    uint32_t dims;       /* params.dims: query truncation asked for */
    struct mt_reranker *reranker;
    atomic_uint searching; /* mt_retriever_search calls in flight */
    size_t cores;          /* online CPUs, read once at open */
};

void mt_retriever_default_params(struct mt_retriever_params *p)
{
    memset(p, 0, sizeof *p);
}

/* ==== Pool ==== */

/* Identifies the file dir/name as it is now (inode, size, mtime; 0 when
 * there is none). A new index/MANIFEST means `medtrust index` committed a
 * new index, for example the vectors the demo builds after it starts
 * serving BM25; a new CURRENT, a new snapshot. */
static int64_t file_stamp(const char *dir, const char *name)
{
    char path[DIR_MAX + 32];
    struct stat sb;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &sb) != 0)
        return 0;
    return (int64_t)sb.st_ino * 1000003 + (int64_t)sb.st_size * 7919 +
           (int64_t)sb.st_mtim.tv_sec * 1000000000 +
           (int64_t)sb.st_mtim.tv_nsec;
}

/* The one file a search stats to see whether the folder or its index
 * changed (follow only; 0 otherwise): a publish folder's CURRENT, since
 * a snapshot never changes once whole (a new one is a new folder named
 * by a new CURRENT); else the store's index/MANIFEST, and CURRENT as
 * well while there is no MANIFEST (a node whose first copy is still
 * arriving). */
static int64_t watch_stamp(struct mt_retriever *r)
{
    int64_t st;

    if (!r->follow)
        return 0;
    if (atomic_load_explicit(&r->published, memory_order_relaxed))
        return file_stamp(r->db_dir, MT_PUBLISH_CURRENT);
    st = file_stamp(r->db_dir, "index/MANIFEST");
    return st ? st : file_stamp(r->db_dir, MT_PUBLISH_CURRENT);
}

/* Brings cur_dir up to date for 'stamp' (pool_mu held). With a publish
 * folder (db_dir/CURRENT, include/medtrust/publish.h) that is the
 * snapshot CURRENT names; a new CURRENT is checked (at most once a second
 * while its snapshot is incomplete) and switched to only when whole, so
 * searches go on on the one before meanwhile. */
static enum mt_status locate(struct mt_retriever *r, int64_t stamp,
                             struct mt_error *err)
{
    char next[DIR_MAX];
    struct mt_error e = {MT_OK, ""};
    enum mt_status st;

    if (r->cur_dir[0] && (stamp == r->cur_stamp || time(NULL) == r->cur_try))
        return MT_OK;
    st = mt_publish_resolve(r->db_dir, next, sizeof next, &e);
    if (st == MT_OK) {
        if (r->cur_dir[0] && strcmp(next, r->cur_dir) != 0)
            mt_log(MT_LOG_INFO, "search now reads %s", next);
        r->gen++;
        memcpy(r->cur_dir, next, sizeof next);
        r->cur_stamp = stamp;
        r->cur_try = 0;
        atomic_store_explicit(&r->published, strcmp(next, r->db_dir) != 0,
                              memory_order_relaxed);
        return MT_OK;
    }
    if (!r->cur_dir[0]) {
        if (err)
            *err = e;
        return st;
    }
    if (r->cur_try == 0)
        mt_log(MT_LOG_WARN, "%s; still searching %s", e.msg, r->cur_dir);
    r->cur_try = time(NULL);
    return MT_OK;
}

/* The corpus folder to search now into dir, and its generation; with
 * 'idle', an idle handle too (NULL when none): a search makes one stat
 * and takes pool_mu once. */
static enum mt_status where(struct mt_retriever *r, char *dir, uint64_t *gen,
                            struct worker **idle, struct mt_error *err)
{
    int64_t stamp = watch_stamp(r);
    enum mt_status st;

    pthread_mutex_lock(&r->pool_mu);
    st = locate(r, stamp, err);
    if (st == MT_OK) {
        memcpy(dir, r->cur_dir, strlen(r->cur_dir) + 1);
        *gen = r->gen;
    }
    if (st == MT_OK && idle) {
        *idle = r->idle;
        if (r->idle)
            r->idle = r->idle->next;
    }
    pthread_mutex_unlock(&r->pool_mu);
    return st;
}

static void worker_close(struct worker *w)
{
    if (!w)
        return;
    mt_index_close(w->idx);
    mt_store_close(w->store);
    mt_free(w);
}

static enum mt_status borrow(struct mt_retriever *r, struct worker **out,
                             struct mt_error *err)
{
    char dir[DIR_MAX];
    uint64_t gen = 0;
    struct worker *w = NULL;
    enum mt_status st;

    if (!r->db_dir)
        return mt_fail(err, MT_EINVAL, "no corpus store is configured");
    st = where(r, dir, &gen, &w, err);
    if (st != MT_OK)
        return st;
    if (w && w->gen == gen) {
        *out = w;
        return MT_OK;
    }
    /* a rebuilt index (new MANIFEST) or a newly published snapshot is
     * picked up by the next search on this handle (follow only:
     * otherwise gen never changes after the first); a search holding a
     * handle on the old one goes on with its open files */
    if (w) {
        mt_index_close(w->idx);
        mt_store_close(w->store);
        w->store = NULL;
    } else {
        w = mt_calloc(1, sizeof *w);
    }
    if (!w)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    w->idx = NULL;
    w->gen = gen;
    memcpy(w->dir, dir, sizeof dir);
    st = mt_index_open(dir, &w->idx, err);
    if (st != MT_OK) {
        mt_store_close(w->store);
        mt_free(w);
        mt_error_prefix(err, "no usable search index (build one with "
                             "'medtrust index')");
        return st;
    }
    *out = w;
    return MT_OK;
}

static void give_back(struct mt_retriever *r, struct worker *w)
{
    pthread_mutex_lock(&r->pool_mu);
    w->next = r->idle;
    r->idle = w;
    pthread_mutex_unlock(&r->pool_mu);
}

static enum mt_status worker_store(struct worker *w, struct mt_error *err)
{
    struct mt_store_params sp;

    if (w->store)
        return MT_OK;
    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1;
    return mt_store_open(w->dir, &sp, &w->store, err);
}

enum mt_status mt_retriever_check(struct mt_retriever *r, struct mt_error *err)
{
    struct worker *w = NULL;
    enum mt_status st = borrow(r, &w, err);

    if (st == MT_OK)
        give_back(r, w);
    return st;
}

/* ==== Embedder ==== */

/* The named embedder, else the one the index records (emb_mu held; runs
 * once, its failure is kept for later calls). */
static enum mt_status open_embedder(struct mt_retriever *r,
                                    struct mt_error *err)
{
    struct mt_embedder_params p;
    char rec[4096] = "", qrec[4096] = "";
    char dir[DIR_MAX];
    const char *spec = r->emb_spec;
    enum mt_status st = MT_OK;
    uint64_t gen = 0;
    int has_dir;

    if (r->emb) /* kept once open: nothing to look at */
        return MT_OK;
    has_dir = r->db_dir && where(r, dir, &gen, NULL, NULL) == MT_OK;
    /* tried again when the index changed and there is no embedder yet:
     * vectors built after a server started switch dense search on */
    if (r->emb_tried && r->emb_gen == gen) {
        if (r->emb_err.status != MT_OK && err)
            *err = r->emb_err;
        return r->emb_err.status;
    }
    r->emb_tried = 1;
    r->emb_gen = gen;
    mt_error_clear(&r->emb_err);
    if (has_dir)
        st = mt_index_peek_embedder(dir, rec, sizeof rec, &r->index_dims,
                                    &r->emb_err);
    if (st == MT_OK && has_dir)
        st = mt_index_peek_query_embedder(dir, qrec, sizeof qrec, &r->emb_err);
    /* an asymmetric retriever's queries take its query encoder */
    if (!spec && qrec[0])
        spec = qrec;
    if (!spec && rec[0])
        spec = rec;
    if (st == MT_OK && spec && !r->no_embedder) {
        mt_embedder_default_params(&p);
        p.cache_path = r->emb_cache;
        /* Matryoshka (the paper: 256 of the bi-encoder's dimensions): a
         * query is truncated to what the index holds */
        p.dims = r->dims ? r->dims : r->index_dims;
        st = mt_embedder_open(spec, &p, &r->emb, &r->emb_err);
        if (st == MT_EINVAL && !r->dims && p.dims) {
            /* an embedder narrower than the index's vectors cannot
             * search them (mt_retriever_has_vectors says 0), but it
             * still embeds */
            mt_error_clear(&r->emb_err);
            p.dims = 0;
            st = mt_embedder_open(spec, &p, &r->emb, &r->emb_err);
        }
    }
    if (st != MT_OK && err)
        *err = r->emb_err;
    return st;
}

uint32_t mt_retriever_dims(struct mt_retriever *r)
{
    uint32_t d;

    pthread_mutex_lock(&r->emb_mu);
    open_embedder(r, NULL);
    d = r->emb ? mt_embedder_dims(r->emb) : 0;
    pthread_mutex_unlock(&r->emb_mu);
    return d;
}

int mt_retriever_has_vectors(struct mt_retriever *r)
{
    uint32_t d = mt_retriever_dims(r);

    return d > 0 && r->index_dims == d;
}

enum mt_status mt_retriever_embed(struct mt_retriever *r,
                                  const struct mt_str *texts, size_t n,
                                  float *out, struct mt_error *err)
{
    enum mt_status st;

    pthread_mutex_lock(&r->emb_mu);
    st = open_embedder(r, err);
    if (st == MT_OK && !r->emb)
        st = mt_fail(err, MT_EINVAL, "no embedder is configured");
    if (st == MT_OK)
        st = mt_embedder_embed(r->emb, texts, n, out, err);
    pthread_mutex_unlock(&r->emb_mu);
    return st;
}

/* ==== Search ==== */

/* Embeds a dense or hybrid query into *vec (caller frees). */
static enum mt_status embed_query(struct mt_retriever *r, const char *query,
                                  const struct mt_search_params *p, float **vec,
                                  uint32_t *dims, struct mt_error *err)
{
    struct mt_str t = mtx_str_from(query);
    uint32_t d = mt_retriever_dims(r);
    enum mt_status st;

    if (d == 0 && r->index_dims == 0)
        return mt_fail(err, MT_EINVAL,
                       "this index has no vectors for %s search: use mode "
                       "bm25, or build them with 'medtrust index --db %s "
                       "--embedder use-lite'",
                       mt_search_mode_str(p->mode), r->db_dir);
    if (d == 0)
        return mt_fail(err, MT_EINVAL,
                       "%s search needs the query embedded by the index's "
                       "embedder (%u dimensions), and none is open",
                       mt_search_mode_str(p->mode), r->index_dims);
    *vec = mt_calloc(d, sizeof **vec);
    if (!*vec)
        return mt_fail(err, MT_ENOMEM, "embedding: out of memory");
    st = mt_retriever_embed(r, &t, 1, *vec, err);
    *dims = d;
    return st;
}

/* search_threads' auto (0): the online cores divided by the searches in
 * flight, this one included (at least 1), as they stand when it starts:
 * `search` alone gets every core, `search --queries --jobs N` and the
 * server's concurrent requests share them instead of asking for N x
 * cores threads. */
static uint32_t auto_threads(size_t cores, unsigned inflight)
{
    size_t t;

    if (inflight < 1)
        return 1;
    t = cores / inflight;
    if (t > MT_SEARCH_MAX_THREADS)
        t = MT_SEARCH_MAX_THREADS;
    return t ? (uint32_t)t : 1;
}

enum mt_status mt_retriever_search(struct mt_retriever *r, const char *query,
                                   const struct mt_search_params *p,
                                   struct mt_search_result **out,
                                   struct mt_error *err)
{
    struct mt_search_params sp = *p;
    struct worker *w = NULL;
    float *vec = NULL;
    enum mt_status st = MT_OK;

    if (sp.mode != MT_SEARCH_BM25 && !sp.query_vec) {
        st = embed_query(r, query, &sp, &vec, &sp.query_dims, err);
        sp.query_vec = vec;
    }
    if (sp.rerank_depth > 0 && !sp.rerank && r->reranker) {
        sp.rerank = mt_reranker_index_fn;
        sp.rerank_user = r->reranker;
    }
    if (st == MT_OK)
        st = borrow(r, &w, err);
    if (st == MT_OK) {
        unsigned n = atomic_fetch_add(&r->searching, 1) + 1;
        if (!sp.search_threads)
            sp.search_threads = auto_threads(r->cores, n);
        st = mt_index_search(w->idx, query, &sp, out, err);
        atomic_fetch_sub(&r->searching, 1);
        give_back(r, w);
    }
    mt_free(vec);
    return st;
}

/* ==== Reranker ==== */

int mt_retriever_has_reranker(const struct mt_retriever *r)
{
    return r->reranker != NULL;
}

enum mt_status mt_retriever_rerank(struct mt_retriever *r, const char *query,
                                   const struct mt_str *texts, size_t n,
                                   float *scores, struct mt_error *err)
{
    if (!r->reranker)
        return mt_fail(err, MT_EINVAL, "no reranker is configured");
    return mt_reranker_score(r->reranker, query, texts, n, scores, err);
}

/* ==== Documents ==== */

enum mt_status mt_retriever_metadata(struct mt_retriever *r, int64_t chunk_id,
                                     char **json, struct mt_error *err)
{
    struct mt_chunk_info ci;
    struct worker *w = NULL;
    enum mt_status st = borrow(r, &w, err);

    *json = NULL;
    if (st == MT_OK)
        st = worker_store(w, err);
    if (st == MT_OK)
        st = mt_store_chunk_get(w->store, chunk_id, &ci, err);
    if (st == MT_OK && ci.metadata) {
        *json = mt_strdup(ci.metadata);
        if (!*json)
            st = mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (w)
        give_back(r, w);
    return st;
}

/* The "url" of a metadata JSON text when it is an http(s) address. */
static char *meta_url(const char *meta)
{
    json_t *o = meta ? json_loads(meta, 0, NULL) : NULL;
    const char *u = json_string_value(json_object_get(o, "url"));
    char *out = NULL;

    if (u && (strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0))
        out = mt_strdup(u);
    json_decref(o);
    return out;
}

/* Hit h's link on a borrowed worker whose store is open; *url is NULL
 * when there is none, and when the chunk is not found (MT_ENOTFOUND). */
static enum mt_status hit_url(struct worker *w, const struct mt_search_hit *h,
                              char **url, struct mt_error *err)
{
    struct mt_chunk_info ci;
    char pm[64];
    size_t i;
    enum mt_status st = mt_store_chunk_get(w->store, h->chunk_id, &ci, err);

    *url = NULL;
    if (st != MT_OK)
        return st;
    *url = meta_url(ci.metadata);
    if (*url)
        return MT_OK;
    for (i = 0; h->doc_id[i] && isdigit((unsigned char)h->doc_id[i]); i++)
        ;
    if (i == 0 || h->doc_id[i] || i > 12)
        return MT_OK;
    snprintf(pm, sizeof pm, "https://pubmed.ncbi.nlm.nih.gov/%s/", h->doc_id);
    *url = mt_strdup(pm);
    return *url ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

enum mt_status mt_retriever_url(struct mt_retriever *r,
                                const struct mt_search_hit *h, char **url,
                                struct mt_error *err)
{
    struct worker *w = NULL;
    enum mt_status st = borrow(r, &w, err);

    *url = NULL;
    if (st == MT_OK)
        st = worker_store(w, err);
    if (st == MT_OK)
        st = hit_url(w, h, url, err);
    if (w)
        give_back(r, w);
    return st;
}

enum mt_status mt_retriever_urls(struct mt_retriever *r,
                                 const struct mt_search_hit *hits, size_t n,
                                 char **urls, struct mt_error *err)
{
    struct mt_error e = {MT_OK, ""};
    struct worker *w = NULL;
    enum mt_status st = MT_OK;
    size_t i;

    memset(urls, 0, n * sizeof *urls);
    if (n > 0)
        st = borrow(r, &w, err);
    if (st == MT_OK && w)
        st = worker_store(w, err);
    for (i = 0; st == MT_OK && i < n; i++) {
        st = hit_url(w, &hits[i], &urls[i], &e);
        if (st == MT_ENOTFOUND) /* a chunk gone since the search */
            st = MT_OK;
        else if (st != MT_OK && err)
            *err = e;
    }
    if (w)
        give_back(r, w);
    for (i = 0; st != MT_OK && i < n; i++) {
        mt_free(urls[i]);
        urls[i] = NULL;
    }
    return st;
}

enum mt_status mtx_retrieve_join_overlap(struct mt_buf *a, const char *b,
                                         size_t n)
{
    size_t max = a->len < n ? a->len : n;
    size_t k;

    if (max > JOIN_MAX)
        max = JOIN_MAX;
    for (k = max; k > 0; k--)
        if (memcmp(a->data + a->len - k, b, k) == 0)
            break;
    if (k == 0 && a->len > 0 && n > 0) {
        enum mt_status st = mtx_buf_putc(a, ' ');

        if (st != MT_OK)
            return st;
    }
    return mtx_buf_append(a, b + k, n - k);
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
        return mtx_buf_append_str(out, h->text);
    for (ord = ci.ordinal;
         ord > 0 && same_doc(s, id - 1, h->doc_id, h->source, ord - 1, &ci);
         ord--)
        id--;
    st = mtx_buf_reserve(out, 1);
    for (; st == MT_OK && out->len < max &&
           same_doc(s, id, h->doc_id, h->source, ord, &ci);
         ord++, id++)
        st = mtx_retrieve_join_overlap(out, ci.text, strlen(ci.text));
    if (st == MT_OK && out->len == 0)
        st = mtx_buf_append_str(out, h->text);
    return st;
}

enum mt_status mt_retriever_document(struct mt_retriever *r,
                                     const struct mt_search_hit *h, size_t max,
                                     char **text, size_t *len,
                                     struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 28);
    struct worker *w = NULL;
    enum mt_status st = borrow(r, &w, err);

    if (st == MT_OK)
        st = worker_store(w, err);
    if (st == MT_OK && whole_doc(w->store, h, max, &b) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (w)
        give_back(r, w);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    *text = b.data;
    *len = b.len;
    return MT_OK;
}

/* ==== Documents by name ==== */

void mt_retrieved_doc_free(struct mt_retrieved_doc *d)
{
    if (!d)
        return;
    mt_free(d->doc_id);
    mt_free(d->title);
    mt_free(d->text);
    mt_free(d->url);
    memset(d, 0, sizeof *d);
}

/* Chunk 'id' as a hit whose strings are copies (the store's are valid
 * only until its next chunk read); *keep holds them. */
static enum mt_status lookup_hit(struct mt_store *s, int64_t id,
                                 struct mt_search_hit *h, char **keep,
                                 struct mt_error *err)
{
    struct mt_chunk_info ci;
    enum mt_status st = mt_store_chunk_get(s, id, &ci, err);

    if (st != MT_OK)
        return st;
    keep[0] = mt_strdup(ci.doc_id);
    keep[1] = ci.title ? mt_strdup(ci.title) : NULL;
    keep[2] = mt_strdup(ci.text);
    keep[3] = mt_strdup(ci.source);
    if (!keep[0] || !keep[2] || !keep[3] || (ci.title && !keep[1]))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    memset(h, 0, sizeof *h);
    h->chunk_id = id;
    h->doc_id = keep[0];
    h->title = keep[1];
    h->text = keep[2];
    h->source = keep[3];
    return MT_OK;
}

static enum mt_status lookup_on(struct worker *w, const char *field,
                                const char *key, size_t max,
                                struct mt_retrieved_doc *out,
                                struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 28);
    struct mt_search_hit h;
    char *keep[4] = {NULL, NULL, NULL, NULL};
    int64_t id = 0;
    enum mt_status st = mt_store_find_doc(w->store, field, key, &id, err);

    if (st == MT_OK)
        st = lookup_hit(w->store, id, &h, keep, err);
    if (st == MT_OK && whole_doc(w->store, &h, max, &b) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = hit_url(w, &h, &out->url, err);
    if (st == MT_OK) {
        out->doc_id = keep[0];
        out->title = keep[1];
        out->text = b.data;
        out->len = b.len;
        keep[0] = keep[1] = NULL;
        b.data = NULL;
    }
    mtx_buf_free(&b);
    mt_free(keep[0]);
    mt_free(keep[1]);
    mt_free(keep[2]);
    mt_free(keep[3]);
    return st;
}

enum mt_status mt_retriever_lookup(struct mt_retriever *r, const char *field,
                                   const char *key, size_t max,
                                   struct mt_retrieved_doc *out,
                                   struct mt_error *err)
{
    struct worker *w = NULL;
    enum mt_status st = borrow(r, &w, err);

    memset(out, 0, sizeof *out);
    if (st == MT_OK)
        st = worker_store(w, err);
    if (st == MT_OK)
        st = lookup_on(w, field, key, max, out, err);
    if (w)
        give_back(r, w);
    if (st != MT_OK)
        mt_retrieved_doc_free(out);
    return st;
}

/* ==== Open and close ==== */

static enum mt_status copy_params(struct mt_retriever *r,
                                  const struct mt_retriever_params *p)
{
    const char *es = p->embedder_spec;

    r->no_embedder = es && strcmp(es, "none") == 0;
    r->follow = p->lazy;
    r->dims = p->dims;
    if (es && (!*es || r->no_embedder))
        es = NULL;
    r->db_dir = p->db_dir ? mt_strdup(p->db_dir) : NULL;
    r->emb_spec = es ? mt_strdup(es) : NULL;
    r->emb_cache = p->embedder_cache ? mt_strdup(p->embedder_cache) : NULL;
    if ((p->db_dir && !r->db_dir) || (es && !r->emb_spec) ||
        (p->embedder_cache && !r->emb_cache))
        return MT_ENOMEM;
    return MT_OK;
}

/* An asked-for truncation must be the dimension of the index's vectors:
 * a query truncated otherwise cannot be compared with them. */
static enum mt_status check_dims(const struct mt_retriever *r,
                                 struct mt_error *err)
{
    if (!r->dims || !r->db_dir || r->index_dims == r->dims)
        return MT_OK;
    if (r->index_dims == 0)
        return mt_fail(err, MT_EINVAL,
                       "--dims %u: the index in %s has no vectors (build "
                       "them with 'medtrust index --embedder SPEC')",
                       r->dims, r->db_dir);
    return mt_fail(err, MT_EINVAL,
                   "--dims %u does not match the index in %s, whose "
                   "vectors have %u dimensions: query vectors are "
                   "truncated to the index's (give --dims %u, or none)",
                   r->dims, r->db_dir, r->index_dims, r->index_dims);
}

enum mt_status mt_retriever_open(const struct mt_retriever_params *p,
                                 struct mt_retriever **out,
                                 struct mt_error *err)
{
    struct mt_retriever *r = mt_calloc(1, sizeof *r);
    enum mt_status st;

    if (!r)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_init(&r->pool_mu, NULL);
    pthread_mutex_init(&r->emb_mu, NULL);
    r->cores = mtx_online_cpus();
    st = copy_params(r, p);
    if (st != MT_OK)
        mt_fail(err, st, "out of memory");
    if (st == MT_OK && p->reranker_spec)
        st = mt_reranker_open(p->reranker_spec, NULL, &r->reranker, err);
    if (st == MT_OK && !p->lazy && r->db_dir)
        st = mt_retriever_check(r, err);
    if (st == MT_OK && !p->lazy) {
        pthread_mutex_lock(&r->emb_mu);
        st = open_embedder(r, err);
        pthread_mutex_unlock(&r->emb_mu);
    }
    if (st == MT_OK && !p->lazy)
        st = check_dims(r, err);
    if (st != MT_OK) {
        mt_retriever_close(r);
        return st;
    }
    *out = r;
    return MT_OK;
}

void mt_retriever_close(struct mt_retriever *r)
{
    struct worker *w;

    if (!r)
        return;
    while ((w = r->idle) != NULL) {
        r->idle = w->next;
        worker_close(w);
    }
    mt_embedder_close(r->emb);
    mt_reranker_close(r->reranker);
    mt_free(r->db_dir);
    mt_free(r->emb_spec);
    mt_free(r->emb_cache);
    pthread_mutex_destroy(&r->pool_mu);
    pthread_mutex_destroy(&r->emb_mu);
    mt_free(r);
}
