/* Embedder interface: every sentence embedder (built-in USE-lite, llama.cpp
 * GGUF, OpenAI-compatible HTTP) sits behind this one vtable. */
#ifndef MT_MODEL_EMBED_H
#define MT_MODEL_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/status.h"

struct mt_embedder;

struct mt_embedder_params {
    uint32_t threads;    /* worker threads, 0 = all online CPUs */
    uint32_t batch_size; /* texts per forward pass, 0 = backend default */
    uint32_t dims;       /* Matryoshka truncation, 0 = native dims */
    int normalize;       /* unit-length output (default 1) */
    double timeout_s;    /* per call, for remote backends (default 120) */
    /* SQLite call cache (model/cache.h) for every backend, keyed by the
     * spec, the output dims and the text; NULL = no cache. Only read
     * during mt_embedder_open. */
    const char *cache_path;
};

void mt_embedder_default_params(struct mt_embedder_params *p);

/* Backend operations. 'self' is the backend's state. */
struct mt_embedder_ops {
    const char *name; /* "use-lite", "gguf", "openai" */
    /* Embeds n texts into out (n * dims floats, row-major). */
    enum mt_status (*embed)(void *self, const struct mt_str *texts, size_t n,
                            float *out, struct mt_error *err);
    uint32_t (*dims)(const void *self); /* native output dimension */
    void (*free)(void *self);
};

/* Opens the embedder named by 'spec': "use-lite", "gguf:PATH" or
 * "openai:BASE_URL#MODEL". 'params' may be NULL for defaults and is copied.
 * On success *out owns the handle (free with mt_embedder_free). */
enum mt_status mt_embedder_open(const char *spec,
                                const struct mt_embedder_params *params,
                                struct mt_embedder **out, struct mt_error *err);

/* Wraps backend state in a handle; takes ownership of 'self' (freed with
 * ops->free even on failure). Used by backends' open functions. */
enum mt_status mt_embedder_new_take(const struct mt_embedder_ops *ops,
                                    void *self,
                                    const struct mt_embedder_params *params,
                                    struct mt_embedder **out,
                                    struct mt_error *err);

/* Output dimension after truncation. */
uint32_t mt_embedder_dims(const struct mt_embedder *e);
const char *mt_embedder_name(const struct mt_embedder *e);

/* Embeds n texts into out (n * mt_embedder_dims floats), truncated and
 * normalised as the params say. Thread-safety: one call at a time per
 * handle unless the backend documents otherwise. */
enum mt_status mt_embedder_embed(struct mt_embedder *e,
                                 const struct mt_str *texts, size_t n,
                                 float *out, struct mt_error *err);

void mt_embedder_free(struct mt_embedder *e);

/* The index's embed callback (mt_index_embed_fn) over an embedder given
 * as 'user', so mt_index_build can store vectors from any backend. */
enum mt_status mt_embedder_index_fn(void *user, const char *const *texts,
                                    const size_t *lens, size_t n, float *out,
                                    struct mt_error *err);

#endif
