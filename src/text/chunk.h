/* Recursive character chunker: LangChain's RecursiveCharacterTextSplitter
 * (separators "\n\n", "\n", " ", "", separator kept at the start of the
 * next piece, whitespace stripped), reporting byte offsets, not copies. */
#ifndef MT_TEXT_CHUNK_H
#define MT_TEXT_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

/* Chunking parameters, both counted in Unicode code points (Python len). */
struct mt_chunk_params {
    uint32_t chunk_size;    /* most code points in a chunk; >= 1 */
    uint32_t chunk_overlap; /* most code points shared by two neighbours;
                               <= chunk_size */
};

/* One chunk: the bytes [start, end) of the input text. The chunk's text is
 * exactly that substring; LangChain's chunk string equals it. */
struct mt_chunk {
    size_t start;
    size_t end;
};

/* Fills *p with the defaults used for the MedRAG/IryoNLP corpora:
 * chunk_size 1000, chunk_overlap 200. */
void mtx_chunk_default_params(struct mt_chunk_params *p);

/* Splits the n bytes at 'text' (UTF-8, need not be NUL-terminated; may be
 * NULL when n is 0) into chunks, with the semantics of LangChain's
 * RecursiveCharacterTextSplitter(chunk_size, chunk_overlap) with default
 * separators, keep_separator=True, strip_whitespace=True: every chunk is
 * whitespace-stripped (Python str.isspace) and at most chunk_size code
 * points long; chunks come in text order. Invalid UTF-8 counts one
 * character per bad byte (as Python's surrogateescape decoding does).
 *
 * On success *out is a new array of *count chunks that the caller frees
 * with mt_free (NULL when *count is 0). On failure *out and *count are left
 * as they were and 'err' (may be NULL) says why: MT_EINVAL for NULL
 * out-params, text NULL with n > 0, chunk_size 0 or chunk_overlap >
 * chunk_size; MT_ENOMEM when allocation fails. Time is O(n) plus the
 * length of the chunks emitted (so O(n) unless chunk_overlap is close to
 * chunk_size). Thread-safe: it keeps no state between calls. */
enum mt_status mtx_chunk_text(const char *text, size_t n,
                              const struct mt_chunk_params *p,
                              struct mt_chunk **out, size_t *count,
                              struct mt_error *err);

#endif
