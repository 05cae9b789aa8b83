/* Private parts of the importers: the sink every format writes through
 * (store batches or JSONL), the streaming XML reader, and small helpers. */
#ifndef MT_CORPUS_INT_H
#define MT_CORPUS_INT_H

#include <stdint.h>

#include <jansson.h>

#include "core/buf.h"
#include "medtrust/corpus.h"

/* ==== Sink: what an importer writes to ====
 * Each input file is parsed on a thread of its own (pipe.c); its sink
 * serializes what the importer hands over (JSON already encoded) into
 * blocks that the one writer thread applies, file by file in input order,
 * to the output (mt_out, sink.c). */

struct mt_sink;
struct mtx_meta;

/* One record as an importer hands it over. Borrowed for the call. */
struct mt_sink_doc {
    const char *id;
    const char *title; /* may be NULL */
    const char *text;
    size_t text_len;
    json_t *meta; /* object of metadata fields, may be NULL */
    /* or the metadata written directly (mtx_meta; NULL: none); at most
     * one of the two is set */
    const struct mtx_meta *fields;
};

/* Writes one document (a store replaces an earlier one of the same id). */
enum mt_status mtx_sink_put(struct mt_sink *k, const struct mt_sink_doc *d,
                            struct mt_error *err);

/* The documents put after this go into source 'source' (a store only;
 * "" goes back to the file's own source). */
enum mt_status mtx_sink_source(struct mt_sink *k, const char *source,
                               struct mt_error *err);

/* Deletes document 'id' of the current source (store only; JSONL output
 * counts it in delete_missing, as a stream cannot take a line back). */
enum mt_status mtx_sink_delete(struct mt_sink *k, const char *id,
                               struct mt_error *err);

/* Counts a record read (and skipped, when 'skipped'). */
void mtx_sink_record(struct mt_sink *k, int skipped);

/* A record the importer cannot read, with err (which names FILE:LINE and
 * why) filled: under --strict returns err's status, and the import ends
 * there; else the writer names it through on_skip and counts it as a bad
 * record, err is cleared and the importer goes on (MT_OK). */
enum mt_status mtx_sink_skip(struct mt_sink *k, struct mt_error *err);

/* Is 'st' a fault of the input (a file or record that can be skipped), not
 * of memory or of the output? */
int mtx_input_error(enum mt_status st);

/* Tells the sink how many input bytes of the current file were read, for
 * progress. */
void mtx_sink_read(struct mt_sink *k, uint64_t bytes_in_file);

/* Writes one query line {"id","query","relevant":[doc],...extra} to the
 * queries output; 'extra' (may be NULL) is an object merged in. */
enum mt_status mtx_sink_query(struct mt_sink *k, const char *id,
                              const char *query, const char *doc_id,
                              json_t *extra, struct mt_error *err);

/* ==== Output: the writer's side (sink.c) ==== */

struct mtx_out;

/* Opens the output the params describe (store or JSONL). */
enum mt_status mtx_out_open(const struct mt_import_params *p,
                            struct mtx_out **out, struct mt_error *err);

/* Sets the input bytes of the whole import, for progress. */
void mtx_out_set_total(struct mtx_out *k, uint64_t bytes);

/* *done is 1 when a store already took file 'path' (read into 'source')
 * in whole; changes nothing else that counts. */
enum mt_status mtx_out_file_imported(struct mtx_out *k, const char *path,
                                     const char *source, int *done,
                                     struct mt_error *err);

/* Starts input file 'path', writing into source 'source'. *skip is 1 when
 * a store already took this very file in whole (counted as resumed). */
enum mt_status mtx_out_file_begin(struct mtx_out *k, const char *path,
                                  const char *source, int *skip,
                                  struct mt_error *err);

/* Writes a document into the store (commits the batch when it is full),
 * or a JSONL line (without its newline). */
enum mt_status mtx_out_put_doc(struct mtx_out *k, const struct mt_doc *doc,
                               struct mt_error *err);
enum mt_status mtx_out_put_line(struct mtx_out *k, const char *line, size_t n,
                                struct mt_error *err);

enum mt_status mtx_out_delete(struct mtx_out *k, const char *id,
                              struct mt_error *err);

/* Switches the source of the documents that follow ("": the file's). */
enum mt_status mtx_out_source(struct mtx_out *k, const char *source,
                              struct mt_error *err);

/* Adds records read and skipped to the counts. */
void mtx_out_count(struct mtx_out *k, uint64_t records, uint64_t skipped);

/* Input bytes of the current file read so far, for progress. */
void mtx_out_read(struct mtx_out *k, uint64_t bytes_in_file);

/* Writes one encoded query line (without its newline), if queries go out. */
enum mt_status mtx_out_query_line(struct mtx_out *k, const char *line, size_t n,
                                  struct mt_error *err);

/* Names a file ('file') or record that was skipped through on_skip and
 * counts it; 'st' is why (the first file's is kept, mtx_out_first). */
void mtx_out_skip(struct mtx_out *k, enum mt_status st, const char *what,
                  int file);

/* The first file skipped (status MT_OK when none was). */
const struct mt_error *mtx_out_first(const struct mtx_out *k);

/* Ends the current file after an error part way: commits what was
 * written, without the mark (a rerun reads the file again). */
enum mt_status mtx_out_file_partial(struct mtx_out *k, struct mt_error *err);

/* The counts so far. */
const struct mt_import_result *mtx_out_result(const struct mtx_out *k);

/* Ends the current file: commits and records it as imported whole. */
enum mt_status mtx_out_file_end(struct mtx_out *k, struct mt_error *err);

/* Finishes: with ok, commits and renames the outputs into place; without,
 * rolls back the open batch and removes the temporary outputs. Copies the
 * counts to *res (may be NULL) and frees the output (NULL allowed). */
enum mt_status mtx_out_close(struct mtx_out *k, int ok,
                             struct mt_import_result *res,
                             struct mt_error *err);

/* ==== Input files, gzip or plain (gz.c) ==== */

struct mtx_gz;

/* Opens 'path': gzip when it starts with the gzip magic (all its members
 * in turn), else read as it is. Errors name the path. */
enum mt_status mtx_gz_open(const char *path, struct mtx_gz **out,
                           struct mt_error *err);

/* Reads up to n bytes of what the file holds (inflated); *got is 0 only at
 * the end. A gzip stream cut short or corrupt is MT_EPARSE, a failed read
 * MT_EIO; messages name neither file nor line (the caller adds them). */
enum mt_status mtx_gz_read(struct mtx_gz *g, char *buf, size_t n, size_t *got,
                           struct mt_error *err);

/* Bytes of the file (compressed) taken so far, for progress. */
uint64_t mtx_gz_offset(const struct mtx_gz *g);

void mtx_gz_close(struct mtx_gz *g); /* NULL allowed */

/* ==== Streaming XML ==== */

struct mt_xml;

/* Handlers; each may be NULL. A handler that fails returns its status
 * with the detail in mtx_xml_error(x); parsing stops there. */
struct mt_xml_fns {
    enum mt_status (*start)(struct mt_xml *x, const char *name,
                            const char **attrs, void *user);
    enum mt_status (*end)(struct mt_xml *x, const char *name, void *user);
};

/* Parses 'path' (plain or gzip, told apart by gz.c) with the scanner of
 * xml.c (what it reads and refuses is said there). Character data goes to
 * the buffer set with mtx_xml_capture. Errors are "PATH:LINE: why" (a
 * handler's message gets the same prefix); a truncated gzip or document
 * is an error, not a short read. */
enum mt_status mtx_xml_parse(const char *path, const struct mt_xml_fns *fns,
                             void *user, struct mt_error *err);

/* The same over the n bytes at 'data' (borrowed), named 'name' in
 * messages. */
enum mt_status mtx_xml_parse_mem(const char *name, const char *data, size_t n,
                                 const struct mt_xml_fns *fns, void *user,
                                 struct mt_error *err);

/* Sends character data to 'b' until the next call (NULL: drop it). */
void mtx_xml_capture(struct mt_xml *x, struct mt_buf *b);
struct mt_buf *mtx_xml_captured(const struct mt_xml *x);

/* The element depth (1 at the root). */
size_t mtx_xml_depth(const struct mt_xml *x);
/* Is the current path 'suffix' or does it end in "/suffix"? */
int mtx_xml_at(const struct mt_xml *x, const char *suffix);
/* A record a handler cannot read, with mtx_xml_error(x) filled: skipped
 * (mtx_sink_skip, the message prefixed with "FILE:LINE: ") and MT_OK, or
 * under --strict the error's status for the handler to return. */
enum mt_status mtx_xml_skip(struct mt_xml *x, struct mt_sink *k);
/* Compressed bytes read so far from the file (for progress). */
uint64_t mtx_xml_offset(const struct mt_xml *x);
/* The error a handler fills before returning a failure. */
struct mt_error *mtx_xml_error(struct mt_xml *x);

/* Value of attribute 'name' in a start handler's attrs (name, value,
 * ..., NULL), or NULL. */
const char *mtx_xml_attr(const char **attrs, const char *name);

/* ==== Helpers ==== */

/* Collapses runs of ASCII white space in b to one space and trims both
 * ends, in place. */
void mtx_squash_space(struct mt_buf *b);

/* Text of a buffer ("" when nothing was appended). */
const char *mtx_buf_str(const struct mt_buf *b);

/* ==== Metadata written directly (meta.c) ====
 * One record's metadata object as JSON text: the bytes json_dumps() gives
 * (JSON_COMPACT | JSON_PRESERVE_ORDER) for a json_t built by the same
 * calls, without building one. A zeroed struct is empty; reset it for
 * each record (its memory is kept), free it once. */
#define MTX_META_FIELDS 16

struct mtx_meta_field {
    const char *key;   /* borrowed: a string literal; not id/title/text */
    int array;         /* an array of strings (else one string) */
    struct mt_buf val; /* the string's JSON, or the items' joined by ',' */
};

struct mtx_meta {
    struct mtx_meta_field f[MTX_META_FIELDS];
    size_t n; /* fields in use, in the order first set */
};

void mtx_meta_reset(struct mtx_meta *m);
void mtx_meta_free(struct mtx_meta *m); /* NULL allowed */

/* Sets field key (kept, not copied) to a string (copied); a NULL or empty
 * value sets nothing; a field set again keeps its place. MT_EPARSE when
 * val is not UTF-8, MT_ELIMIT past MTX_META_FIELDS fields, MT_ENOMEM. */
enum mt_status mtx_meta_str(struct mtx_meta *m, const char *key,
                            const char *val);

/* Appends a string to the array field key, creating it (MT_EINVAL when
 * key holds a string). Errors as mtx_meta_str. */
enum mt_status mtx_meta_push(struct mtx_meta *m, const char *key,
                             const char *val);

/* Is field key set? */
int mtx_meta_has(const struct mtx_meta *m, const char *key);

/* Appends the members, "key":value joined by ',' without the braces (""
 * for none), to out. */
enum mt_status mtx_meta_members(const struct mtx_meta *m, struct mt_buf *out);

/* Appends one author's name to the array field "authors": the group's
 * name when there is one, else "GIVEN FAMILY", else FAMILY (each folded
 * with mtx_squash_space, in place; at most 511 bytes); nothing when all
 * three are empty. PubMed's CollectiveName/ForeName/LastName and JATS's
 * collab/given-names/surname. */
enum mt_status mtx_meta_author(struct mtx_meta *m, struct mt_buf *given,
                               struct mt_buf *family, struct mt_buf *group);

/* ==== Errors and ids ==== */

/* Appends " (what)" to the message in err (may be NULL). */
void mtx_error_suffix(struct mt_error *err, const char *what);

/* SHA-1 of n bytes, as 40 lower-case hex digits and a NUL. */
void mtx_sha1_hex(const void *p, size_t n, char out[41]);

/* Formats: each reads one file (or a folder's file) into the sink. */
struct mt_import_ctx {
    struct mt_sink *sink;
    const struct mt_import_params *p;
};
typedef enum mt_status (*mtx_import_fn)(struct mt_import_ctx *c,
                                        const char *path, struct mt_error *err);

/* One input file of a run. */
struct mtx_in_file {
    char *path;
    char source[256];
};

/* Parses files[0..n) on p->threads threads (0: the online CPUs) into 'out',
 * each file's documents written in order and the files in input order.
 * A file that fails with an input error (mtx_input_error) is skipped after
 * what was read before the error, unless p->strict or n is 1; any other
 * failure ends the run with its message in err. */
enum mt_status mtx_pipe_run(mtx_import_fn fn, const struct mtx_in_file *files,
                            size_t n, const struct mt_import_params *p,
                            struct mtx_out *out, struct mt_error *err);

enum mt_status mtx_import_pubmed(struct mt_import_ctx *c, const char *path,
                                 struct mt_error *err);
enum mt_status mtx_import_pmc(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err);
enum mt_status mtx_import_medquad(struct mt_import_ctx *c, const char *path,
                                  struct mt_error *err);
enum mt_status mtx_import_pubmedqa(struct mt_import_ctx *c, const char *path,
                                   struct mt_error *err);
enum mt_status mtx_import_medrag(struct mt_import_ctx *c, const char *path,
                                 struct mt_error *err);
enum mt_status mtx_import_csv(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err);
enum mt_status mtx_import_parquet(struct mt_import_ctx *c, const char *path,
                                  struct mt_error *err);
enum mt_status mtx_import_pdf(struct mt_import_ctx *c, const char *path,
                              struct mt_error *err);

#endif
