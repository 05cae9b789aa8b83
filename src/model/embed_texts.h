/* Embedding many texts with one embedder (`medtrust embed`): batched
 * calls, a failed batch retried text by text so that only the texts that
 * fail fail, and texts read from a JSONL file's "text" fields. Names:
 * mtx_ (docs/architecture.md). */
#ifndef MT_MODEL_EMBED_TEXTS_H
#define MT_MODEL_EMBED_TEXTS_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/model.h"

/* Texts per embedder call: enough for every thread of a local model. */
#define MTX_EMBED_BATCH 128

/* Where each text's outcome goes, in the texts' order. */
struct mtx_embed_sink {
    /* the text's vector, dims floats (unit length unless the embedder's
     * params say otherwise) */
    void (*on_vec)(void *user, const char *text, const float *v, uint32_t dims);
    /* the text could not be embedded: err says why */
    void (*on_fail)(void *user, const char *text, const struct mt_error *err);
    void *user;
};

/* Embeds texts[0..n) in calls of up to MTX_EMBED_BATCH texts; when a
 * call fails each of its texts is embedded alone, and only those that
 * still fail go to on_fail. Fails only when out of memory. */
enum mt_status mtx_embed_texts(struct mt_embedder *e, const char *const *texts,
                               size_t n, const struct mtx_embed_sink *sink,
                               struct mt_error *err);

/* The same for the "text" string of each line of the JSONL file at path
 * ("-" for stdin); a line without one fails, naming the file and line. */
enum mt_status mtx_embed_jsonl(struct mt_embedder *e, const char *path,
                               const struct mtx_embed_sink *sink,
                               struct mt_error *err);

/* The embedder spec to embed with: 'given' (an option), else
 * $MEDTRUST_EMBEDDER, except that MEDTRUST_EMBEDDER=none (an index
 * without vectors) then means the built-in default (NULL). */
const char *mtx_embed_spec(const char *given);

#endif
