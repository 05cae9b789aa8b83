/* Private parts of the importers: the sink every format writes through
 * (store batches or JSONL), the streaming XML reader, and small helpers. */
#ifndef MT_CORPUS_INT_H
#define MT_CORPUS_INT_H

#include <stdint.h>

#include <jansson.h>

#include "core/buf.h"
#include "medtrust/corpus.h"

/* ==== Sink ==== */

struct mt_sink;

/* One record as an importer hands it over. Borrowed for the call. */
struct mt_sink_doc {
    const char *id;
    const char *title; /* may be NULL */
    const char *text;
    size_t text_len;
    json_t *meta; /* object of metadata fields, may be NULL */
};

/* Opens the sink the params describe (store or JSONL). */
enum mt_status mt_sink_open(const struct mt_import_params *p,
                            struct mt_sink **out, struct mt_error *err);

/* Starts input file 'path' of 'bytes' bytes, writing into source 'source'.
 * *skip is 1 when a store already took this very file in whole. */
enum mt_status mt_sink_file_begin(struct mt_sink *k, const char *path,
                                  const char *source, int *skip,
                                  struct mt_error *err);

/* Writes one document; commits the batch when it is full. */
enum mt_status mt_sink_put(struct mt_sink *k, const struct mt_sink_doc *d,
                           struct mt_error *err);

/* Deletes document 'id' of the current source (store only; JSONL output
 * counts it in delete_missing, as a stream cannot take a line back). */
enum mt_status mt_sink_delete(struct mt_sink *k, const char *id,
                              struct mt_error *err);

/* Counts a record read (and skipped, when 'skipped'). */
void mt_sink_record(struct mt_sink *k, int skipped);

/* Sets the input bytes of the whole import, for progress. */
void mt_sink_set_total(struct mt_sink *k, uint64_t bytes);

/* Tells the sink how many input bytes of the current file were read, for
 * progress. */
void mt_sink_read(struct mt_sink *k, uint64_t bytes_in_file);

/* Ends the current file: commits and records it as imported whole. */
enum mt_status mt_sink_file_end(struct mt_sink *k, struct mt_error *err);

/* Writes one query line {"id","query","relevant":[doc],...extra} to the
 * queries output; 'extra' (may be NULL) is an object merged in. */
enum mt_status mt_sink_query(struct mt_sink *k, const char *id,
                             const char *query, const char *doc_id,
                             json_t *extra, struct mt_error *err);

/* Finishes: with ok, commits and renames the outputs into place; without,
 * rolls back the open batch and removes the temporary outputs. Copies the
 * counts to *res (may be NULL) and frees the sink (NULL allowed). */
enum mt_status mt_sink_close(struct mt_sink *k, int ok,
                             struct mt_import_result *res,
                             struct mt_error *err);

/* ==== Streaming XML ==== */

struct mt_xml;

/* Handlers; each may be NULL. A handler that fails returns its status
 * with the detail in mt_xml_error(x); parsing stops there. */
struct mt_xml_fns {
    enum mt_status (*start)(struct mt_xml *x, const char *name,
                            const char **attrs, void *user);
    enum mt_status (*end)(struct mt_xml *x, const char *name, void *user);
};

/* Parses 'path' (plain or gzip, told apart by zlib) with expat. Character
 * data goes to the buffer set with mt_xml_capture. Errors are "PATH:LINE:
 * why" (a handler's message gets the same prefix); a truncated gzip or
 * document is an error, not a short read. */
enum mt_status mt_xml_parse(const char *path, const struct mt_xml_fns *fns,
                            void *user, struct mt_error *err);

/* Sends character data to 'b' until the next call (NULL: drop it). */
void mt_xml_capture(struct mt_xml *x, struct mt_buf *b);
struct mt_buf *mt_xml_captured(const struct mt_xml *x);

/* The element path from the root, "a/b/c" (the current element last),
 * and its depth (1 at the root). */
const char *mt_xml_path(const struct mt_xml *x);
size_t mt_xml_depth(const struct mt_xml *x);
/* Is the current path 'suffix' or does it end in "/suffix"? */
int mt_xml_at(const struct mt_xml *x, const char *suffix);
/* Compressed bytes read so far from the file (for progress). */
uint64_t mt_xml_offset(const struct mt_xml *x);
/* The error a handler fills before returning a failure. */
struct mt_error *mt_xml_error(struct mt_xml *x);

/* Value of attribute 'name' in expat's attrs, or NULL. */
const char *mt_xml_attr(const char **attrs, const char *name);

/* ==== Helpers ==== */

/* Collapses runs of ASCII white space in b to one space and trims both
 * ends, in place. */
void mt_squash_space(struct mt_buf *b);

/* Text of a buffer ("" when nothing was appended). */
const char *mt_buf_str(const struct mt_buf *b);

/* Sets key to a string value in obj (the string is copied); a NULL or
 * empty value sets nothing. Returns MT_ENOMEM on failure. */
enum mt_status mt_meta_str(json_t *obj, const char *key, const char *val);

/* Appends a string to the array at obj[key], creating it. */
enum mt_status mt_meta_push(json_t *obj, const char *key, const char *val);

/* Appends " (what)" to the message in err (may be NULL). */
void mt_error_suffix(struct mt_error *err, const char *what);

/* SHA-1 of n bytes, as 40 lower-case hex digits and a NUL. */
void mt_sha1_hex(const void *p, size_t n, char out[41]);

/* Formats: each reads one file (or a folder's file) into the sink. */
struct mt_import_ctx {
    struct mt_sink *sink;
    const struct mt_import_params *p;
};
enum mt_status mt_import_pubmed(struct mt_import_ctx *c, const char *path,
                                struct mt_error *err);
enum mt_status mt_import_pmc(struct mt_import_ctx *c, const char *path,
                             struct mt_error *err);
enum mt_status mt_import_medquad(struct mt_import_ctx *c, const char *path,
                                 struct mt_error *err);
enum mt_status mt_import_pubmedqa(struct mt_import_ctx *c, const char *path,
                                  struct mt_error *err);
enum mt_status mt_import_medrag(struct mt_import_ctx *c, const char *path,
                                struct mt_error *err);
enum mt_status mt_import_csv(struct mt_import_ctx *c, const char *path,
                             struct mt_error *err);

#endif
