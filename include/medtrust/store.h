/* medtrust corpus store: a directory holding an SQLite database (WAL mode)
 * with sources, documents, chunks and the corpus's analyzer and chunker
 * settings. One handle is used by one thread at a time. */
#ifndef MEDTRUST_STORE_H
#define MEDTRUST_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mt_store;

/* Corpus settings fixed when the store is created. */
struct mt_store_params {
    const char *analyzer;   /* "english" (default), "arabic", "cjk", ... */
    uint32_t chunk_size;    /* code points, default 1000 */
    uint32_t chunk_overlap; /* code points, default 200 */
    int create;             /* create the directory and store if missing */
    int read_only;          /* open without write access */
};

/* Fills 'p' with the defaults above (create = 1, read_only = 0). */
void mt_store_default_params(struct mt_store_params *p);

/* The settings table of struct mt_store_params (medtrust/params.h): the
 * chunk size and overlap `index` and `import` take for a new store
 * (--chunk-size, --chunk-overlap), with bounds and help. Immutable; safe
 * from any thread. */
extern const struct mt_param_table mt_store_param_table;

/* Opens or creates the store in directory 'dir'; 'params' (may be NULL)
 * is copied. A new store records the analyzer and chunker settings; an
 * existing one keeps its own, and they win over 'params'. Older schema
 * versions are migrated forward, except with read_only: then the store is
 * read as it is, never changed (MT_EUNSUPPORTED when it is older than
 * what a reader can read so, naming a writer that migrates it). A newer
 * schema than this build's is refused. On success *out owns the handle (close
 * with mt_store_close); on failure *out is left unchanged. */
enum mt_status mt_store_open(const char *dir,
                             const struct mt_store_params *params,
                             struct mt_store **out, struct mt_error *err);

/* Writes a consistent copy of the store's database to the new file 'path'
 * (SQLite's online backup, one read transaction; writers may go on) with
 * the embedded state's rows (accounts, sessions, runs, audit...) removed
 * and their pages overwritten, in rollback-journal mode: the corpus to
 * publish to other nodes. MT_EINVAL when 'path' exists; on failure no
 * file is left at 'path'. */
enum mt_status mt_store_backup(struct mt_store *s, const char *path,
                               struct mt_error *err);

/* Closes the store; NULL is allowed. An open transaction is rolled back. */
void mt_store_close(struct mt_store *s);

/* The settings in force for this store (owned by the handle). */
const struct mt_store_params *mt_store_settings(const struct mt_store *s);

/* Schema version of the opened store (after migration; as it is on disk
 * for a read-only handle). */
int mt_store_schema_version(const struct mt_store *s);

/* on: WAL checkpoints of the writes through s run on a thread with a
 * connection of its own, so a long write (an import) does not wait on
 * their page copies and fsyncs; off (the default, and after
 * mt_store_close): SQLite checkpoints after the commit that fills 1000
 * pages, on the writer's thread. Crash safety is the same either way.
 * MT_EINVAL on a read-only store. Not thread-safe with other calls on s. */
enum mt_status mt_store_background_checkpoints(struct mt_store *s, int on,
                                               struct mt_error *err);

/* Transactions group writes; every put outside one is its own
 * transaction. Nesting is not allowed. */
enum mt_status mt_store_begin(struct mt_store *s, struct mt_error *err);
enum mt_status mt_store_commit(struct mt_store *s, struct mt_error *err);
/* A read transaction: a consistent snapshot for several reads, taken
 * once instead of once per statement. End it with mt_store_commit. */
enum mt_status mt_store_begin_read(struct mt_store *s, struct mt_error *err);
void mt_store_rollback(struct mt_store *s);

/* Looks up the source 'name', creating it when absent; *id receives its
 * row id. */
enum mt_status mt_store_source(struct mt_store *s, const char *name,
                               int64_t *id, struct mt_error *err);

/* A document to store. All strings are borrowed for the call. */
struct mt_doc {
    const char *ext_id; /* the corpus's own id, unique within a source */
    const char *title;  /* may be NULL */
    const char *text;   /* UTF-8 */
    size_t text_len;
    const char *metadata; /* JSON object text, may be NULL for {} */
};

/* What mt_store_put did. */
struct mt_put_result {
    size_t chunks; /* chunks written (0 when unchanged) */
    int unchanged; /* 1 when an identical document was already stored */
};

/* Inserts the document, or replaces the one with the same ext_id in the
 * source, and rewrites its chunks with the store's chunker. A document
 * identical to the stored one (title, text and metadata) is left alone,
 * so re-ingesting a corpus costs no re-chunking and no index rebuild.
 * 'res' may be NULL. */
enum mt_status mt_store_put(struct mt_store *s, int64_t source_id,
                            const struct mt_doc *doc, struct mt_put_result *res,
                            struct mt_error *err);

/* As mt_store_put, but the text is already a chunk (MedRAG's snippets):
 * it is stored as the document's one chunk, not re-chunked. */
enum mt_status mt_store_put_chunk(struct mt_store *s, int64_t source_id,
                                  const struct mt_doc *doc,
                                  struct mt_put_result *res,
                                  struct mt_error *err);

/* Deletes the document 'ext_id' of the source and its chunks; *deleted
 * (may be NULL) is 1 when there was one, 0 when there was none (not an
 * error). The search index notices the deletion at its next build. */
enum mt_status mt_store_delete(struct mt_store *s, int64_t source_id,
                               const char *ext_id, int *deleted,
                               struct mt_error *err);

/* Counts for one source, or for the whole store. */
struct mt_store_counts {
    const char *source; /* owned by the store; NULL for the total */
    uint64_t documents;
    uint64_t chunks;
    uint64_t text_bytes;
};

/* Calls fn once per source (ordered by name) and then once with the total
 * (source == NULL). Stops with fn's status when it is not MT_OK. */
typedef enum mt_status (*mt_store_counts_fn)(const struct mt_store_counts *c,
                                             void *user);
enum mt_status mt_store_stats(struct mt_store *s, mt_store_counts_fn fn,
                              void *user, struct mt_error *err);

/* Runs SQLite's integrity check; MT_OK when the database is sound. */
enum mt_status mt_store_check(struct mt_store *s, struct mt_error *err);

/* Options for ingesting a JSONL file of {"id","text","title"?,...}. */
struct mt_ingest_params {
    const char *source;  /* source name; default: the file's base name */
    uint32_t batch_size; /* documents per transaction, default 1000 */
    int skip_bad;        /* skip malformed lines instead of failing */
    /* Called after each committed batch with the number of input records
     * handled so far (written or skipped); may be NULL. */
    void (*progress)(uint64_t records, void *user);
    void *progress_user;
    /* Polled before each batch: nonzero stops the ingest with
     * MT_ECANCELED; the batches committed stay (ingesting the file again
     * leaves them unchanged and goes on). NULL = never (default). */
    int (*cancelled)(void *user);
    void *cancelled_user;
};

void mt_ingest_default_params(struct mt_ingest_params *p);

struct mt_ingest_result {
    uint64_t documents; /* documents written (inserted or replaced) */
    uint64_t unchanged; /* identical to the stored ones, left alone */
    uint64_t chunks;
    uint64_t skipped; /* malformed lines skipped (skip_bad) */
};

/* Ingests 'path' ("-" for stdin) in transactional batches: a crash keeps
 * exactly the batches that committed. Other fields than id, text and title
 * are kept as the document's metadata. */
enum mt_status mt_store_ingest_jsonl(struct mt_store *s, const char *path,
                                     const struct mt_ingest_params *params,
                                     struct mt_ingest_result *res,
                                     struct mt_error *err);

/* ==== Chunks, for the search index ==== */

/* One chunk as the index builder sees it. Strings are valid only during
 * the callback; text points into the document's text and is not
 * NUL-terminated: read text_len bytes. */
struct mt_chunk_row {
    int64_t chunk_id;
    int64_t source_id;
    const char *title; /* the document's title, or NULL */
    const char *text;
    size_t text_len;
};

typedef enum mt_status (*mt_store_chunk_fn)(const struct mt_chunk_row *row,
                                            void *user);

/* Calls fn for every chunk with id > after_id, in id order. Stops with
 * fn's status when it is not MT_OK. */
enum mt_status mt_store_each_chunk(struct mt_store *s, int64_t after_id,
                                   mt_store_chunk_fn fn, void *user,
                                   struct mt_error *err);

/* Largest chunk id (0 when empty) and the number of chunks with id <=
 * upto, which tells an index whether chunks it holds were deleted. */
enum mt_status mt_store_chunk_span(struct mt_store *s, int64_t upto,
                                   int64_t *max_id, uint64_t *count_upto,
                                   struct mt_error *err);

/* A chunk with its document, for showing a search hit. Strings belong to
 * the store and stay valid until the next mt_store_chunk_get call. */
struct mt_chunk_info {
    int64_t chunk_id;
    const char *doc_id; /* the corpus's own id */
    const char *title;  /* may be NULL */
    const char *text;
    const char *source;
    const char *metadata; /* JSON object text */
    uint32_t ordinal;
};

/* Fetches chunk 'chunk_id'; MT_ENOTFOUND when it no longer exists. */
enum mt_status mt_store_chunk_get(struct mt_store *s, int64_t chunk_id,
                                  struct mt_chunk_info *out,
                                  struct mt_error *err);

/* The first chunk of the document a citation names, by 'field': "id"
 * (the corpus's own id, exactly), "doi" (metadata "doi", ASCII letters
 * compared case-insensitively) or "url" (metadata "url", exactly). The
 * first such document in store order wins. MT_ENOTFOUND when none;
 * MT_EINVAL for another field. An id is found through the documents'
 * (source, id) index, one probe per source; the DOI and URL lookups scan
 * the documents' metadata. */
enum mt_status mt_store_find_doc(struct mt_store *s, const char *field,
                                 const char *key, int64_t *chunk_id,
                                 struct mt_error *err);

/* A condition on a document's metadata (VerifAI's PubMed filters). With
 * 'text', the field 'key' holds when it is a string containing 'text', or
 * an array with a string element containing it (authors,
 * publication_types), ASCII letters compared case-insensitively; without,
 * when it is a number or numeric string in [min, max] (a year range). */
struct mt_meta_cond {
    const char *key;  /* letters, digits and '_', 1 to 64 of them */
    const char *text; /* NULL for a range */
    double min, max;
};

typedef enum mt_status (*mt_store_id_fn)(int64_t id, void *user);

/* Calls fn with the id of every chunk whose document meets all n
 * conditions, in increasing id order (one scan of the documents); stops
 * with fn's status when it is not MT_OK. MT_EINVAL names a bad key. */
enum mt_status mt_store_each_matching_chunk(struct mt_store *s,
                                            const struct mt_meta_cond *c,
                                            size_t n, mt_store_id_fn fn,
                                            void *user, struct mt_error *err);

/* Looks up a source by name without creating it; MT_ENOTFOUND if absent.
 */
enum mt_status mt_store_source_find(struct mt_store *s, const char *name,
                                    int64_t *id, struct mt_error *err);

/* The store's directory (owned by the handle). */
const char *mt_store_dir(const struct mt_store *s);

#ifdef __cplusplus
}
#endif
#endif
