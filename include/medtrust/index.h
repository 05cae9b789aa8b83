/* medtrust search index over a corpus store: BM25 (and, when an embedder
 * built vectors, int8 dense search), hybrid fusion as VerifAI does it, and
 * a rerank stage. The index lives in STORE_DIR/index as immutable,
 * checksummed segment files named by a manifest that is swapped
 * atomically, so a crash during a build never loses the last good index. */
#ifndef MEDTRUST_INDEX_H
#define MEDTRUST_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "status.h"
#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mt_search_mode {
    MT_SEARCH_BM25,
    MT_SEARCH_DENSE,
    MT_SEARCH_HYBRID,
};

enum mt_fusion {
    MT_FUSION_LINEAR, /* VerifAI: each list / its top score, weighted sum */
    MT_FUSION_RRF,    /* reciprocal-rank fusion, 1 / (rrf_k + rank) */
};

/* How an index segment keeps its vectors (all searches traverse the
 * int8 codes; the rest decides how candidates are re-scored). Recall@10
 * ceilings against exact float on clustered 256-d sets (BENCHMARKS.md):
 *   RESIDUAL  int8 codes + a 4-bit residual, 1.5 bytes a dimension;
 *             about 0.999 (the default)
 *   INT8      the codes alone, 1 byte a dimension; about 0.98
 *   RESIDUAL2 int8 codes + a 2-bit residual, 1.25 bytes a dimension;
 *             about 0.996 (0.9962 vs 0.9989 for RESIDUAL on 20K x 256)
 *   FLOAT     the codes + float32 copies, 5 bytes a dimension; exact
 *             re-scoring, so only the graph search misses (0.9998 on
 *             20K x 256, USearch f32 0.9999) */
enum mt_vec_store {
    MT_VEC_STORE_RESIDUAL,
    MT_VEC_STORE_INT8,
    MT_VEC_STORE_FLOAT,
    MT_VEC_STORE_RESIDUAL2,
};

/* Parses "int8r", "int8", "float32" or "int8r2"; MT_EINVAL otherwise. */
enum mt_status mt_vec_store_parse(const char *s, enum mt_vec_store *out);
const char *mt_vec_store_str(enum mt_vec_store v);

/* Parses "bm25", "dense" or "hybrid"; MT_EINVAL otherwise. */
enum mt_status mt_search_mode_parse(const char *s, enum mt_search_mode *out);
const char *mt_search_mode_str(enum mt_search_mode m);

/* Embeds n texts (text i is lens[i] bytes at texts[i], not NUL-terminated)
 * into out, n * dims floats row-major. The index layer sits below the
 * model layer, so the caller (the CLI, an application) supplies its
 * embedder through this callback. */
typedef enum mt_status (*mt_index_embed_fn)(void *user,
                                            const char *const *texts,
                                            const size_t *lens, size_t n,
                                            float *out, struct mt_error *err);

/* Scores n passages against 'query' into scores (higher is more
 * relevant): the cross-encoder of the rerank stage, supplied by the
 * caller like the embedder. */
typedef enum mt_status (*mt_index_rerank_fn)(void *user, const char *query,
                                             const char *const *texts,
                                             const size_t *lens, size_t n,
                                             float *scores,
                                             struct mt_error *err);

/* Build settings. Merges keep about max_segments segments (mt_index_build
 * says when it keeps more). */
/* While mt_index_run (medtrust/retrieve.h: `medtrust index`, `import
 * --db`) builds, it keeps DIR/MT_INDEX_BUILD_STATUS up to date (JSON:
 * pid, embedder, done, total, rate, eta_s, started, updated; written
 * atomically about once a second, removed at the end), so a server on the
 * same store can show the build's progress. */
#define MT_INDEX_BUILD_STATUS "index-build.json"

struct mt_index_build_params {
    float title_weight;    /* BM25F weight of the title field, default 2 */
    float text_weight;     /* default 1 */
    uint32_t max_segments; /* merge the smallest past this, default 8 */
    int rebuild;           /* ignore existing segments, build one anew */
    /* Dense vectors: set embed to build them. 'embedder' names it (stored
     * in the manifest; a different name forces a rebuild); dims is the
     * embedder's output dimension. */
    const char *embedder;
    /* The embedder queries take when it is not the documents' own (an
     * asymmetric retriever such as MedCPT's query and article encoders):
     * recorded in the manifest beside 'embedder' (a change rebuilds); NULL
     * or "" = the same. Its vectors must have dims dimensions. */
    const char *query_embedder;
    uint32_t dims;
    mt_index_embed_fn embed;
    void *embed_user;
    uint32_t embed_batch; /* texts per embed call, default 64 */
    uint32_t hnsw_min;    /* segments with at least this many chunks
                             get an HNSW graph; smaller ones are
                             scanned flat (int8). Default 100000. */
    /* Threads building an HNSW graph: 0 (default) one per online core;
     * 1 the serial build, whose graph depends only on the vectors. */
    uint32_t hnsw_threads;
    /* Threads analysing chunks: 0 (default) one per online core, each
     * beside the calling thread, which reads the store and inverts the
     * chunks in id order; 1 all on the calling thread. The segments are
     * the same bytes either way. */
    uint32_t threads;
    /* How the segments this build writes keep their vectors; default
     * MT_VEC_STORE_RESIDUAL. Each segment's file says which it holds, so
     * segments of different kinds search side by side. */
    enum mt_vec_store vec_store;
    /* 1 (default): BM25 segments keep each chunk's length as a float
     * (format 1); 0: in one byte (format 2, Lucene's SmallFloat). */
    int bm25_float_norms;
    /* A segment is written, and the next begun, when the build's memory
     * for it (BM25 builder, chunk ids, float vectors) reaches this many
     * bytes, so a build's memory stays bounded whatever the store's size;
     * 0: one segment however large. Default 2 GiB. */
    uint64_t segment_bytes;
    /* Called as chunks are analysed; may be NULL. */
    void (*progress)(uint64_t done, uint64_t total, void *user);
    void *progress_user;
    /* Polled on the calling thread every 64 chunks (a Ctrl-C handler's
     * flag, a Python caller's KeyboardInterrupt): nonzero stops the build
     * with MT_ECANCELED. Segments already finished stay named in the
     * MANIFEST, so an append or a new index resumes after them; a rebuild
     * or a merge leaves the index as it was. NULL = never (default). */
    int (*cancelled)(void *user);
    void *cancelled_user;
    /* Vectors made elsewhere instead of embedding the chunks (embed must
     * still be set: its name and dims are recorded, and queries take it).
     * A path ending in .npy: a NumPy float32 or float16 array of shape
     * (n, dims), whose row i is the vector of the chunk id on line i of
     * vector_ids (NULL: the .npy path with .ids in place of .npy). Any
     * other path: JSONL {"id": CHUNK_ID, "vector": [dims numbers]}. Rows
     * match chunks by the store's chunk id; every chunk the build indexes
     * needs one (MT_ENOTFOUND names the first missing), a repeated id or
     * another width is refused with the file and line. NULL = embed. */
    const char *vectors_from;
    const char *vector_ids;
};

void mt_index_default_build_params(struct mt_index_build_params *p);

struct mt_index_build_result {
    uint64_t chunks_added;    /* chunks put in new segments */
    uint32_t segments;        /* segments in the index afterwards */
    int merged;               /* 1 when the build rewrote the whole index */
    uint32_t segments_merged; /* segments a tiered merge rewrote as one */
};

/* Brings the index of store 's' up to date: new chunks go into a new
 * segment (several past segment_bytes); when chunks were deleted or
 * replaced, the whole index is rebuilt (into one, or several past
 * segment_bytes). When one more segment would pass max_segments, the
 * smallest neighbouring segments (max_segments / 2 of them, or as many as
 * make room) are first built again from the store as one, in one manifest
 * swap; segments whose merge would pass segment_bytes are never merged,
 * so an index of many full segments keeps more than max_segments.
 * Appending to an index, or building a new one, saves each finished
 * segment, so a killed build resumes after the last; a killed merge
 * leaves the index as it was. Not thread-safe against another build of
 * the same store. */
enum mt_status mt_index_build(struct mt_store *s,
                              const struct mt_index_build_params *params,
                              struct mt_index_build_result *res,
                              struct mt_error *err);

struct mt_index;

/* Opens the index of the store in 'dir' for searching (read-only). On
 * success *out owns the handle (close with mt_index_close). One handle is
 * used by one thread at a time: open one per worker thread (segments are
 * mmapped, so extra handles share memory). */
enum mt_status mt_index_open(const char *dir, struct mt_index **out,
                             struct mt_error *err);
void mt_index_close(struct mt_index *idx);

/* One query. Strings are borrowed for the call. */
struct mt_search_params {
    enum mt_search_mode mode; /* default MT_SEARCH_BM25 */
    uint32_t k;               /* hits to return, default 10 */
    float k1;                 /* BM25 k1, default 0.9 (Anserini BEIR) */
    float b;                  /* BM25 b, default 0.4 */
    float w_lex;              /* hybrid weight of BM25, default 0.7 */
    float w_sem;              /* hybrid weight of dense, default 0.3 */
    enum mt_fusion fusion;    /* default MT_FUSION_LINEAR */
    uint32_t rrf_k;           /* default 60 */
    uint32_t retrieve_k;      /* first-stage depth per list, default 50 */
    int doc_sum;              /* sum chunk scores per document (VerifAI) */
    const char *source;       /* only hits from this source, or NULL */
    /* Dense and hybrid: the query embedded by the index's embedder
     * (mt_index_embedder tells which), query_dims floats. */
    const float *query_vec;
    uint32_t query_dims;
    uint32_t ef; /* HNSW search breadth; 0 = the segment's default: 128 up
                    to 350K vectors, growing as n^0.9 past that */
    /* Rerank stage (IryoNLP, MedCPT): take the top rerank_depth hits
     * (e.g. 50), score them with 'rerank' and keep the top k (e.g. 20).
     * Without a rerank function the first-stage order passes through.
     * 0 = no rerank stage. */
    uint32_t rerank_depth;
    mt_index_rerank_fn rerank;
    void *rerank_user;
    /* Metadata filter (e.g. VerifAI's year range): only documents whose
     * metadata field 'filter_key' is a number (or numeric string) in
     * [filter_min, filter_max]; documents without it are left out.
     * Applied as one more condition of 'meta'. NULL = no filter. */
    const char *filter_key;
    double filter_min;
    double filter_max;
    /* Metadata conditions every hit's document meets (author, journal,
     * publication type, year: mt_meta_cond), at most MT_SEARCH_MAX_META.
     * They restrict the first stage itself (the BM25 and vector searches
     * see only matching chunks; a selective filter searches the vectors
     * exactly), so k hits come back whenever k matching ones exist. The
     * matching chunks are found with one scan of the store's documents
     * and kept for the handle's next search with the same conditions.
     * Borrowed for the call; NULL = none. */
    const struct mt_meta_cond *meta;
    size_t nmeta;
    /* Hybrid: each list (BM25, dense) is cut to its first fusion_depth
     * chunks before fusion; VerifAI fuses the top 10 of each over whole
     * abstracts. 0 (default) = the lists as deep as retrieve_k. */
    uint32_t fusion_depth;
    /* 1: the lexical query also drops NLTK's 179 English stop words
     * before the index's analyzer reads it, as VerifAI's query parser
     * does (the dense query is the text as given); 0 (default) = the
     * analyzer's own stop set only (Lucene's 33 for English). */
    int nltk_stopwords;
    /* More sources: hits from any of these or 'source' (one search over
     * their union: one BM25 and one dense list, one fusion, one rerank),
     * at most MT_SEARCH_MAX_SOURCES. Borrowed for the call; 0 = none. */
    const char *const *sources;
    size_t nsources;
    /* Threads one search may use for its segments (Lucene's
     * IndexSearcher with an executor over segment slices): the BM25 and
     * dense lists of the index's segments are searched on up to this
     * many threads (the calling one and workers the mt_index starts on
     * first need and keeps), with the same hits, scores and order as on
     * one. 0 (default) = auto: mt_index_search alone takes 1 (it cannot
     * know how many searches its caller runs at once); mt_retriever_search
     * takes the online cores divided by the searches it has in flight
     * (at least 1), so N concurrent queries never ask for N x cores
     * threads. At most MT_SEARCH_MAX_THREADS. */
    uint32_t search_threads;
};

#define MT_SEARCH_MAX_THREADS 64

#define MT_SEARCH_MAX_SOURCES 16
#define MT_SEARCH_MAX_META 8

/* VerifAI's PubMed filters as conditions, on the metadata a PubMed import
 * writes: 'author' on "authors", 'journal' on "journal", 'pub_type' on
 * "publication_types" (NULL or "" leaves one out). Fills c (room for 3)
 * and returns how many it set; the strings stay the caller's. */
size_t mt_search_pubmed_conds(const char *author, const char *journal,
                              const char *pub_type, struct mt_meta_cond *c);

void mt_search_default_params(struct mt_search_params *p);

/* The settings table of struct mt_search_params (medtrust/params.h): each
 * numeric knob's CLI option (`search`, `retrieval-eval`), POST /v1/search
 * member, bounds (and the server's lower cap) and help; GET /v1/limits
 * lists it. Immutable; safe from any thread. */
extern const struct mt_param_table mt_search_param_table;

struct mt_search_hit {
    uint32_t rank; /* 1-based */
    int64_t chunk_id;
    double score;
    const char *doc_id; /* the corpus's own id */
    const char *title;  /* may be NULL */
    const char *text;   /* the chunk's text */
    const char *source;
};

struct mt_search_result {
    struct mt_search_hit *hits;
    size_t n;
    double elapsed_ms;
    uint32_t query_terms; /* analysed terms that were searched */
};

/* Searches. On success *out is a result owned by the caller (free with
 * mt_search_result_free). An empty query or one of only stop words gives
 * zero hits; invalid UTF-8 is searched with its bad bytes skipped. With
 * params->search_threads > 1 the handle starts that many - 1 worker
 * threads on first need and keeps them until mt_index_close (the handle
 * itself stays one caller at a time). */
enum mt_status mt_index_search(struct mt_index *idx, const char *query,
                               const struct mt_search_params *params,
                               struct mt_search_result **out,
                               struct mt_error *err);
void mt_search_result_free(struct mt_search_result *r);

/* Groups r's hits by document, as VerifAI lists them: lead[i] becomes the
 * index of the best-ranked hit of hit i's document (hits come best
 * first), so hit i heads its document's group when lead[i] == i, and the
 * groups in the order of their heads are the documents best first.
 * 'lead' has room for r->n entries; *ngroups gets the number of
 * documents. O(n log n). MT_ENOMEM leaves 'lead' unset. Thread-safe. */
enum mt_status mt_search_group(const struct mt_search_result *r, size_t *lead,
                               size_t *ngroups);

struct mt_index_stats {
    uint32_t segments;         /* segments in use */
    uint32_t damaged_segments; /* left out: checksum or size wrong */
    uint64_t chunks;
    uint64_t terms; /* summed over segments */
    uint64_t postings;
    uint64_t bytes; /* on disk */
    const char *analyzer;
};

void mt_index_stats(const struct mt_index *idx, struct mt_index_stats *st);

/* Reads every byte of the index's segment files and checks every
 * checksum and every graph link. mt_index_open checks each segment's
 * header, section table, ids, term and block tables, lengths, scales and
 * graph tables, and leaves the bulk (the postings, the vectors and the
 * graph links: all but about 1 GB of a 28.2 GB index at 41.8M chunks) to
 * this, as Lucene leaves whole-file checksums to CheckIndex; searches
 * read that bulk defensively, so damage there gives wrong scores, never
 * a crash. Every
 * segment is checked; a damaged one is logged (MT_LOG_WARN) and the call
 * ends MT_EPARSE naming the first, as it does when mt_index_open left
 * segments out. 'progress' (NULL: none) is told the bytes checked and
 * their total as it goes. Reads the handle only: searches may go on. */
enum mt_status mt_index_check(const struct mt_index *idx,
                              void (*progress)(uint64_t done, uint64_t total,
                                               void *user),
                              void *user, struct mt_error *err);

/* The embedder the index's vectors came from ("" when it has none) and
 * their dimension. The string belongs to the handle. */
const char *mt_index_embedder(const struct mt_index *idx, uint32_t *dims);

/* Reads the embedder recorded in the index of the store in 'dir' without
 * opening the index: writes it into buf ("" when none or no index) and
 * the dimension into *dims. A spec longer than n - 1 bytes is refused
 * (MT_ELIMIT), never cut: specs are paths or URLs, so 4096 bytes fit. */
enum mt_status mt_index_peek_embedder(const char *dir, char *buf, size_t n,
                                      uint32_t *dims, struct mt_error *err);

/* The query embedder the index of the store in 'dir' records (see
 * mt_index_build_params.query_embedder) into buf: "" when queries take
 * the documents' embedder or there is no index. Too long for buf: as
 * mt_index_peek_embedder(). */
enum mt_status mt_index_peek_query_embedder(const char *dir, char *buf,
                                            size_t n, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
