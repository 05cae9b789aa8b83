/* The CLI's bridge from the model layer's embedders to the index's embed
 * callback, and the choice of embedder for a store. */
#ifndef MT_CLI_EMBEDDER_H
#define MT_CLI_EMBEDDER_H

#include "medtrust/index.h"

struct mt_embedder;

/* Adapts mt_embedder_embed to mt_index_embed_fn; user is the embedder. */
enum mt_status cli_embed_fn(void *user, const char *const *texts,
                            const size_t *lens, size_t n, float *out,
                            struct mt_error *err);

/* Opens the embedder 'spec' (NULL or "" -> the one the store's index
 * was built with, if any), with the call cache at cache_path (may be
 * NULL). *out is NULL when no embedder applies ("none",
 * or no spec and an index without vectors). */
enum mt_status cli_embedder_for(const char *db, const char *spec,
                                const char *cache_path,
                                struct mt_embedder **out, struct mt_error *err);

/* Embeds one query into a buffer the caller frees with mt_free. */
enum mt_status cli_embed_query(struct mt_embedder *e, const char *q,
                               float **vec, uint32_t *dims,
                               struct mt_error *err);

#endif
