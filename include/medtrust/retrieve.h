/* medtrust retriever: one thread-safe search service over a store's index,
 * shared by the checker, question answering, the server and the CLI. It
 * keeps a pool of index and store handles (an mt_index serves one thread
 * at a time), embeds dense and hybrid queries with the index's embedder
 * (or a named one), runs the rerank stage through its cross-encoder, and
 * reads documents and metadata back for callers that show them. Search
 * settings (k, mode, weights, filters) are per call. */
#ifndef MEDTRUST_RETRIEVE_H
#define MEDTRUST_RETRIEVE_H

#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "model.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Settings fixed when a retriever opens. Strings are copied. */
struct mt_retriever_params {
    const char *db_dir;         /* corpus store; NULL = no corpus (the
                                   retriever then only embeds and
                                   reranks) */
    const char *embedder_spec;  /* query embedder: NULL or "" = the one
                                   the index records, "none" = none */
    const char *embedder_cache; /* call cache file for it; NULL = none */
    const char *reranker_spec;  /* cross-encoder; NULL = none */
    uint32_t dims;              /* Matryoshka truncation of the query
                                   vectors: 0 (default) = the dimension of
                                   the index's vectors when the embedder's
                                   own is larger (the index was built
                                   truncated), else the embedder's; N =
                                   N, which must be the dimension of the
                                   index's vectors (mt_retriever_open
                                   fails naming both when not, and when
                                   the index has none) */
    int lazy;                   /* 1: open the index and the embedder on
                                   first use, not in mt_retriever_open (a
                                   server starts before its index exists),
                                   reopen index handles after a rebuild
                                   (the MANIFEST changed) and retry a
                                   missing embedder then; 0 (default):
                                   fail at open */
};

void mt_retriever_default_params(struct mt_retriever_params *p);

struct mt_retriever;

/* Opens a retriever: the reranker, and unless params.lazy the first index
 * handle and the embedder. On success *out owns the handle (close with
 * mt_retriever_close); on failure *out is unchanged and 'err' names the
 * setting to fix. */
enum mt_status mt_retriever_open(const struct mt_retriever_params *p,
                                 struct mt_retriever **out,
                                 struct mt_error *err);

/* Closes the retriever; NULL is allowed. No call may be in flight. */
void mt_retriever_close(struct mt_retriever *r);

/* MT_OK when the store has a searchable index (opening one handle when
 * none is idle); else the reason, prefixed with how to build one. */
enum mt_status mt_retriever_check(struct mt_retriever *r, struct mt_error *err);

/* Searches as mt_index_search does, on a pooled handle. Dense and hybrid
 * queries without p->query_vec are embedded here (MT_EINVAL when there is
 * no embedder); a rerank stage (p->rerank_depth > 0) without p->rerank
 * uses the retriever's reranker, or none. p->search_threads 0 (auto) is
 * the online cores divided by the retriever's searches in flight, this
 * one included (at least 1). Thread-safe. */
enum mt_status mt_retriever_search(struct mt_retriever *r, const char *query,
                                   const struct mt_search_params *p,
                                   struct mt_search_result **out,
                                   struct mt_error *err);

/* The embedder's output dimension, 0 when there is none (opens it when
 * lazy). */
uint32_t mt_retriever_dims(struct mt_retriever *r);

/* 1 when the index holds vectors of the embedder's dimension, so dense and
 * hybrid search can run. */
int mt_retriever_has_vectors(struct mt_retriever *r);

/* Embeds n texts into out (n * mt_retriever_dims floats) with the
 * retriever's embedder; MT_EINVAL without one. Thread-safe (calls on the
 * embedder are serialised). */
enum mt_status mt_retriever_embed(struct mt_retriever *r,
                                  const struct mt_str *texts, size_t n,
                                  float *out, struct mt_error *err);

/* 1 when a reranker is open. */
int mt_retriever_has_reranker(const struct mt_retriever *r);

/* Scores n texts against 'query' with the reranker (higher is more
 * relevant); MT_EINVAL without one. Thread-safe. */
enum mt_status mt_retriever_rerank(struct mt_retriever *r, const char *query,
                                   const struct mt_str *texts, size_t n,
                                   float *scores, struct mt_error *err);

/* The metadata JSON text of chunk 'chunk_id''s document, copied into
 * *json (caller frees with mt_free; NULL when the document has none).
 * MT_ENOTFOUND when there is no such chunk. Thread-safe. */
enum mt_status mt_retriever_metadata(struct mt_retriever *r, int64_t chunk_id,
                                     char **json, struct mt_error *err);

/* The link of hit 'h''s document, as VerifAI links PubMed: its "url"
 * metadata when that is an http(s) address, else PubMed's page when the
 * document id is a PMID (1 to 12 digits). *url (caller frees with
 * mt_free) is NULL when there is neither. Thread-safe. */
enum mt_status mt_retriever_url(struct mt_retriever *r,
                                const struct mt_search_hit *h, char **url,
                                struct mt_error *err);

/* The links of n hits (as mt_retriever_url's) into urls[0..n), each NULL
 * or the caller's (free with mt_free); one store handle borrowed for all.
 * A hit whose chunk is gone gets NULL. On failure every urls[i] is NULL.
 * Thread-safe. */
enum mt_status mt_retriever_urls(struct mt_retriever *r,
                                 const struct mt_search_hit *hits, size_t n,
                                 char **urls, struct mt_error *err);

/* The whole document of hit 'h', rebuilt from its chunks in order (the
 * chunker's overlap dropped) up to at least 'max' bytes, or the hit's text
 * when its chunks cannot be read. *text (caller frees with mt_free) is
 * NUL-terminated, *len bytes. Thread-safe. */
enum mt_status mt_retriever_document(struct mt_retriever *r,
                                     const struct mt_search_hit *h, size_t max,
                                     char **text, size_t *len,
                                     struct mt_error *err);

/* A document read back whole, by what names it (mt_retriever_lookup).
 * Every string belongs to it: free with mt_retrieved_doc_free. */
struct mt_retrieved_doc {
    char *doc_id; /* the corpus's own id */
    char *title;  /* may be NULL */
    char *text;   /* the document's text, up to the 'max' asked for */
    size_t len;
    char *url; /* its link, as mt_retriever_url's; may be NULL */
};

/* The document a citation names: 'field' "id", "doi" or "url" and its
 * 'key' (mt_store_find_doc), rebuilt from its chunks up to at least 'max'
 * bytes, into *out (zeroed first). MT_ENOTFOUND when the store holds no
 * such document. Thread-safe. */
enum mt_status mt_retriever_lookup(struct mt_retriever *r, const char *field,
                                   const char *key, size_t max,
                                   struct mt_retrieved_doc *out,
                                   struct mt_error *err);

/* Frees what 'd' holds (not d itself) and zeroes it; NULL is allowed. */
void mt_retrieved_doc_free(struct mt_retrieved_doc *d);

/* ==== Building the index with an embedder ==== */

/* Settings of mt_index_update: the build's own, and which embedder makes
 * its vectors. Strings are borrowed for the call. */
struct mt_index_update_params {
    /* embed, embed_user, embedder and dims are set by mt_index_update
     * from the fields below; the rest (threads, progress, cancelled...)
     * is passed on. */
    struct mt_index_build_params build;
    const char *embedder_spec; /* NULL or "" = the one the index records;
                                  for a new index $MEDTRUST_EMBEDDER, else
                                  "use-lite"; "none" = BM25 only */
    uint32_t dims;             /* Matryoshka truncation of the vectors:
                                  0 = the index's own with its embedder,
                                  else the embedder's dimension */
    const char *embed_cache;   /* SQLite cache of chunk embeddings, so a
                                  rebuild re-embeds nothing it has seen;
                                  NULL = none */
    /* The query embedder of an asymmetric retriever (MedCPT: a query
     * encoder beside the article encoder), recorded in the index and
     * used by every search of it (mt_retriever); it must give the
     * documents' dimension. NULL = the one the index records while its
     * embedder stays the same (none after a change); "" = none (queries
     * take the documents' embedder). */
    const char *query_embedder_spec;
    /* Embedding through a server: embed_jobs requests of build.embed_batch
     * texts each in flight at once (an openai: spec's endpoints share
     * them; a local embedder takes it as its thread count), so each call
     * of the build embeds embed_jobs x embed_batch chunks. 0 = one
     * request a call (default). */
    uint32_t embed_jobs;
};

/* Fills 'p': mt_index_default_build_params, the index's embedder, no
 * truncation, no cache. */
void mt_index_update_default_params(struct mt_index_update_params *p);

/* The embedder spec an update of the store in 'dir' with 'spec' (as
 * mt_index_update_params.embedder_spec) uses, into buf ("none" for BM25
 * only), and in *dims (may be NULL) the truncation it keeps (0 = the
 * embedder's own). MT_EINVAL when 'dims' truncates and there is no
 * embedder. */
enum mt_status mt_index_pick_embedder(const char *dir, const char *spec,
                                      uint32_t dims, char *buf, size_t n,
                                      uint32_t *dims_out, struct mt_error *err);

/* Brings the index of store 's' up to date as `medtrust index` does:
 * opens the embedder mt_index_pick_embedder names (an existing index
 * keeps its own, even none), then mt_index_build. A different embedder or
 * truncation than the index's rebuilds its vectors. 'res' may be NULL.
 * Not thread-safe against another build of the same store. */
enum mt_status mt_index_update(struct mt_store *s,
                               const struct mt_index_update_params *p,
                               struct mt_index_build_result *res,
                               struct mt_error *err);

/* ==== An index run: `medtrust index` as one call ==== */

/* Settings of mt_index_run: JSONL inputs ingested into the store one after
 * another, then its search index brought up to date. Strings are borrowed
 * for the call. The callbacks (each may be NULL) run on the calling
 * thread, but for update.build.progress, which the build's threads call. */
struct mt_index_run_params {
    /* The store's settings when mt_index_run creates it (only when it is
     * given inputs); 'create' is set by the run. */
    struct mt_store_params store;
    /* How each input is ingested (source, batch_size, skip_bad); its
     * progress callback is the run's: on_records. */
    struct mt_ingest_params ingest;
    int strict;       /* an input that held no document (nothing written,
                         unchanged or skipped) is MT_EPARSE; 0 (default):
                         a warning through on_warning */
    int search_index; /* 1 (default): then bring the search index up to
                         date (mt_index_update); 0: ingest only */
    /* The build. embed_jobs without embed_cache caches the embeddings in
     * DIR/embed-cache.db (so a killed build resumes); build.progress gets
     * the build's progress as mt_index_update gives it; build.cancelled
     * NULL: the run's 'cancelled'. */
    struct mt_index_update_params update;
    /* 1 (default): DIR/MT_INDEX_BUILD_STATUS is kept while the build runs
     * (rewritten atomically at most once a second, removed at its end),
     * so a server on the same store shows the build's progress. */
    int build_status;
    /* An input's ingest starts: 'lines' is its count of non-blank lines
     * for a progress total (0 when unknown: stdin, a pipe). */
    void (*on_input)(void *user, const char *path, uint64_t lines);
    /* After each committed batch: the input's records handled so far. */
    void (*on_records)(void *user, uint64_t records);
    /* An input was ingested whole: what it did. */
    void (*on_input_done)(void *user, const char *path,
                          const struct mt_ingest_result *r);
    /* A warning to show ("PATH: 0 documents: the input is empty"). */
    void (*on_warning)(void *user, const char *message);
    /* The search index build starts, with the embedder it uses ("none":
     * BM25 only). */
    void (*on_build)(void *user, const char *embedder);
    /* Polled before each input, by its ingest before each batch and by
     * the build (as their 'cancelled' where they have none): nonzero
     * stops the run with MT_ECANCELED; committed batches and finished
     * segments stay, and a rerun resumes. */
    int (*cancelled)(void *user);
    void *user;
};

/* What an index run did. */
struct mt_index_run_result {
    uint64_t inputs;                /* inputs ingested whole */
    struct mt_ingest_result ingest; /* summed over them */
    int built;                      /* the search index was brought up to
                                       date: 'build' says how */
    struct mt_index_build_result build;
};

/* Fills 'p': mt_store_default_params, mt_ingest_default_params,
 * mt_index_update_default_params, not strict, search index and build
 * status on, no callbacks. */
void mt_index_run_default_params(struct mt_index_run_params *p);

/* The settings table of struct mt_index_run_params (medtrust/params.h):
 * the batch size, flags and build knobs `index` takes (--batch, --strict,
 * --threads, --dims, --embed-jobs...), with bounds and help; no request
 * member. Immutable; safe from any thread. */
extern const struct mt_param_table mt_index_run_param_table;

/* Ingests the n JSONL files 'inputs' ("-" for stdin) into the store in
 * 'dir' (created when missing and n > 0; without inputs only an existing
 * store's search index is updated), then brings its search index up to
 * date, as 'p' says (NULL: the defaults). A directory among the inputs is
 * refused before the store is touched, and so is a published store
 * (mt_publish_refuse_writes). Every input ingested stays committed when a
 * later step fails; the build resumes as mt_index_build says. 'res' (may
 * be NULL) is zeroed first. Not thread-safe against another build of the
 * same store. */
enum mt_status mt_index_run(const char *dir, const char *const *inputs,
                            size_t n, const struct mt_index_run_params *p,
                            struct mt_index_run_result *res,
                            struct mt_error *err);

/* As mt_index_run on the open store 's' (p->store unused; the caller
 * refuses a published store): `medtrust import --db` and a program that
 * holds the store use it, with n = 0 for the search index update only. */
enum mt_status mt_index_run_store(struct mt_store *s, const char *const *inputs,
                                  size_t n, const struct mt_index_run_params *p,
                                  struct mt_index_run_result *res,
                                  struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
