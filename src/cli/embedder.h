/* The CLI's choice of embedder for a store (the bridge to the index's
 * embed callback is mt_embedder_index_fn in model/embed.h). */
#ifndef MT_CLI_EMBEDDER_H
#define MT_CLI_EMBEDDER_H

#include "medtrust/index.h"

struct mt_embedder;

/* Opens the embedder 'spec' (NULL or "" -> the one the store's index
 * was built with, if any), with the call cache at cache_path (may be
 * NULL). *out is NULL when no embedder applies ("none",
 * or no spec and an index without vectors). */
enum mt_status cli_embedder_for(const char *db, const char *spec,
                                const char *cache_path,
                                struct mt_embedder **out, struct mt_error *err);

#endif
