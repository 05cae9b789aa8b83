/* Embedder backends: every sentence embedder (built-in USE-lite, llama.cpp
 * GGUF, OpenAI-compatible HTTP) is a struct mtx_model (model/handle.h)
 * whose ops embed and report their native dims; the front end
 * (mt_embedder_open, model/embed.c) applies truncation, normalisation and
 * the call cache. The handle's API is in include/medtrust/model.h. */
#ifndef MT_MODEL_EMBED_H
#define MT_MODEL_EMBED_H

#include "core/buf.h"
#include "medtrust/model.h"
#include "model/handle.h"

#endif
