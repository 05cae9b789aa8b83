/* Embedder backends: every sentence embedder (built-in USE-lite, llama.cpp
 * GGUF, OpenAI-compatible HTTP) sits behind this one vtable; the handle's
 * API is in include/medtrust/model.h. */
#ifndef MT_MODEL_EMBED_H
#define MT_MODEL_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/model.h"

/* Backend operations. 'self' is the backend's state. */
struct mt_embedder_ops {
    const char *name; /* "use-lite", "gguf", "openai" */
    /* Embeds n texts into out (n * dims floats, row-major). */
    enum mt_status (*embed)(void *self, const struct mt_str *texts, size_t n,
                            float *out, struct mt_error *err);
    uint32_t (*dims)(const void *self); /* native output dimension */
    void (*free)(void *self);
};

/* Wraps backend state in a handle; takes ownership of 'self' (freed with
 * ops->free even on failure). Used by backends' open functions. */
enum mt_status mt_embedder_new_take(const struct mt_embedder_ops *ops,
                                    void *self,
                                    const struct mt_embedder_params *params,
                                    struct mt_embedder **out,
                                    struct mt_error *err);

#endif
