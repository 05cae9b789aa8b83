/* medtrust corpus importers: the formats researchers have their corpora in
 * (PubMed baseline XML, PMC JATS, MedQuAD, PubMedQA, MedRAG chunks, CSV,
 * Parquet),
 * streamed into a store or into corpus JSONL. One importer handle runs in
 * one thread at a time. */
#ifndef MEDTRUST_CORPUS_H
#define MEDTRUST_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "status.h"
#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options for mt_import. Strings are borrowed for the call. */
struct mt_import_params {
    /* Where documents go: a store (writes in transactional batches), or,
     * when 'jsonl_out' is set, that file (written to a temporary name and
     * renamed into place only when the whole import succeeds). */
    struct mt_store *store;
    const char *jsonl_out;
    /* When set, the format's questions (medquad, pubmedqa) are written
     * there as {"id","query","relevant":[doc id],...} lines, atomically. */
    const char *queries_out;
    const char *source;  /* source name; default: per format (see import) */
    uint32_t batch_size; /* documents per transaction, default 1000 */
    int no_chunk;        /* store each text as one chunk (medrag: always) */
    /* Input files parsed at once, each on its own thread, while the
     * calling thread writes; 0: the online CPUs (at most 8). */
    uint32_t threads;
    /* csv: the columns holding the id, the text and (optional) title. */
    const char *id_col;
    const char *text_col;
    const char *title_col;
    /* parquet: further columns copied into each document's metadata under
     * their names (csv takes every other column instead). */
    const char *const *meta_cols;
    size_t n_meta_cols;
    /* parquet: a column naming each row's source (a store's source, as
     * --source names one for a file); a null or empty value: the file's
     * source. With jsonl_out the value goes into the line as "source". */
    const char *source_col;
    /* parquet: rows whose source_col value is one of these are left out
     * (counted as skipped), as IryoNLP left ICRC out of the guidelines. */
    const char *const *exclude_sources;
    size_t n_exclude_sources;
    /* Called after each committed batch and at each file's end with the
     * input bytes read so far and their total; may be NULL. */
    void (*progress)(uint64_t done_bytes, uint64_t total_bytes, void *user);
    void *progress_user;
    /* An input file or record that cannot be read (malformed, truncated
     * gzip, refused as hostile, unreadable) is skipped: 'on_skip' (may be
     * NULL) gets "FILE:LINE: why" on the calling thread, it is counted in
     * the result, and the import goes on. With 'strict' the first such
     * error ends the import instead, as an error. */
    int strict;
    void (*on_skip)(const char *what, void *user);
    void *skip_user;
    /* Folder walks follow a symbolic link that leads out of the folder
     * given (as find -L); without it such a link is skipped and named
     * through on_skip. A link within the folder is always followed. */
    int follow_symlinks;
};

/* Fills 'p' with the defaults: no store, no output, batch 1000. */
void mt_import_default_params(struct mt_import_params *p);

/* The settings table of struct mt_import_params' numeric members and
 * flags (`import`'s --batch, --threads, --no-chunk, --strict and
 * --follow-symlinks; params.h); the defaults are
 * mt_import_default_params'. */
extern const struct mt_param_table mt_import_param_table;

struct mt_import_result {
    uint64_t files;     /* input files read to their end */
    uint64_t resumed;   /* files skipped: imported whole by an earlier run */
    uint64_t records;   /* records read */
    uint64_t documents; /* documents written (inserted or replaced) */
    uint64_t unchanged; /* identical to the stored ones, left alone */
    uint64_t chunks;    /* chunks written */
    uint64_t skipped;   /* records without text (no abstract, no answer) */
    uint64_t deleted;   /* documents deleted (PubMed DeleteCitation) */
    uint64_t delete_missing; /* deletions of documents not stored */
    uint64_t queries;        /* questions written to queries_out */
    /* Input files that could not be read whole: missing or unreadable, or
     * an error part way (what was read before it is written; the file is
     * not marked imported, so a rerun reads it again). */
    uint64_t bad_files;
    uint64_t bad_records;   /* records skipped for an error; files go on */
    uint64_t links_skipped; /* symbolic links out of a folder not followed */
};

/* The format names mt_import accepts, NULL-terminated. */
extern const char *const mt_import_formats[];

/* Imports 'paths' (n of them) in format 'format' ("pubmed", "pmc",
 * "medquad", "pubmedqa", "medrag", "csv",
 * "parquet", "pdf"). A folder argument is walked for
 * the format's files (pmc: *.nxml, medquad: *.xml) in name order. A file a
 * store already took in whole (same path, size and mtime) is skipped, so a
 * rerun after a crash resumes with the first unfinished file. A file or
 * record that cannot be read is skipped and counted (see 'strict'): the
 * import succeeds with the rest, unless it is the only input file, or no
 * input file could be read at all. On failure the batch being written is
 * rolled back (earlier batches stay, as with mt_store_ingest_jsonl), no
 * output file is left behind, and 'err' names the file and the line or
 * record. 'res' (may be NULL) gets the counts. */
enum mt_status mt_import(const char *format, const char *const *paths, size_t n,
                         const struct mt_import_params *params,
                         struct mt_import_result *res, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
