/* llama.cpp embedder (gguf:PATH) behind src/model/embed.h. */
#ifndef MT_MODEL_EMBED_LLAMA_H
#define MT_MODEL_EMBED_LLAMA_H

#include "model/embed.h"

/* Opens a BERT-family (or any pooled) GGUF embedding model at 'path' with
 * the pooling the GGUF declares; mt_embedder_open ("gguf:PATH") applies
 * the output shape and the cache. Errors name --embedder. Calls
 * serialise. */
enum mt_status mtx_embedder_open_llama(const char *path,
                                       const struct mt_embedder_params *p,
                                       struct mt_embedder **out,
                                       struct mt_error *err);

#endif
