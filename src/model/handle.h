/* The one model handle behind every kind of model (LLMs, embedders,
 * rerankers): a backend's state behind one ops table, and the call cache
 * keyed by (backend, model, request). Each kind's handle starts with a
 * struct mtx_model; its front end (llm.c, embed.c, rerank.c) parses the
 * spec, opens the backend, attaches the cache and adds what only that kind
 * needs. Names: mtx_ (cross-file internals, docs/architecture.md). */
#ifndef MT_MODEL_HANDLE_H
#define MT_MODEL_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/model.h"

struct mt_cache;

/* One ops table for every kind of model. A backend sets name, free and
 * its kind's calls; the rest stay NULL. 'self' is the backend's state. */
struct mtx_model_ops {
    const char *name; /* "openai", "gguf", "use-lite": the cache's backend */
    void (*free)(void *self);
    /* LLMs and rerankers: the model's name (the cache's model key) */
    const char *(*model)(const void *self);
    /* LLMs, may be NULL: the server profile the backend detected */
    const char *(*profile)(void *self);
    /* LLMs: fills res (zeroed on entry) with p->n completions; must be
     * thread-safe when the backend allows concurrent calls */
    enum mt_status (*chat)(void *self, const struct mt_llm_message *msgs,
                           size_t n_msgs, const struct mt_chat_params *p,
                           struct mt_chat_result *res, struct mt_error *err);
    /* LLMs, may be NULL: the context in tokens (0 = unknown) */
    uint32_t (*n_ctx)(void *self);
    /* LLMs, may be NULL (an estimate then): the tokens of s[0..n) */
    uint32_t (*count)(void *self, const char *s, size_t n,
                      enum mt_token_count *how);
    /* Embedders: n texts into out (n * dims floats, row-major), and the
     * native output dimension */
    enum mt_status (*embed)(void *self, const struct mt_str *texts, size_t n,
                            float *out, struct mt_error *err);
    uint32_t (*dims)(const void *self);
    /* Embedders, may be NULL: what besides the spec decides the vectors
     * (use-lite: "f32" or "int8", its GEMMs' precision), part of every
     * cache key so that one setting is never served the other's vectors */
    const char *(*variant)(const void *self);
    /* Rerankers: one score per document (higher = more relevant) */
    enum mt_status (*score)(void *self, struct mt_str query,
                            const struct mt_str *docs, size_t n, float *scores,
                            struct mt_error *err);
};

struct mtx_model {
    const struct mtx_model_ops *ops;
    void *self;
    struct mt_cache *cache; /* NULL unless the front end opened one */
    char *cache_model;      /* the cache's model key (owned) */
};

/* The handles of each kind (opaque in include/medtrust/model.h). */
struct mt_llm {
    struct mtx_model m;
};

struct mt_reranker {
    struct mtx_model m;
};

struct mt_embedder {
    struct mtx_model m;
    struct mt_embedder_params params;
    uint32_t native; /* backend's dimension */
    uint32_t dims;   /* after Matryoshka truncation */
};

/* Allocates a zeroed handle of 'size' bytes (a kind's handle, whose first
 * member is its struct mtx_model) holding ops and self. Takes ownership of
 * 'self': freed with ops->free when out of memory. NULL on failure, with
 * err set. Backends call it through MTX_MODEL_TAKE. */
void *mtx_model_new_take(const struct mtx_model_ops *ops, void *self,
                         size_t size, struct mt_error *err);

/* Sets *out to a new handle of its kind for backend state 'self'; MT_OK
 * or MT_ENOMEM. */
#define MTX_MODEL_TAKE(out, ops, self, err)                                    \
    ((*(out) = mtx_model_new_take((ops), (self), sizeof **(out), (err)))       \
         ? MT_OK                                                               \
         : MT_ENOMEM)

/* Opens the call cache at 'path' for handle m, keyed by 'model' (NULL:
 * ops->model). On failure the whole handle is closed (the caller drops
 * its pointer). */
enum mt_status mtx_model_cache_open(struct mtx_model *m, const char *path,
                                    const char *model, struct mt_error *err);

/* 1 on a cache hit for request 'key': *v is a copy (caller frees with
 * mt_free, NUL-terminated past *n); 0 on a miss, an error or no cache. */
int mtx_model_cache_get(const struct mtx_model *m, const char *key, char **v,
                        size_t *n);

/* Stores v under 'key' (replacing); MT_OK without a cache. */
enum mt_status mtx_model_cache_put(const struct mtx_model *m, const char *key,
                                   const void *v, size_t n,
                                   struct mt_error *err);

/* Stores n values at once (mtx_cache_put_many: one SQLite transaction);
 * MT_OK without a cache. */
enum mt_status mtx_model_cache_put_many(const struct mtx_model *m, size_t n,
                                        const char *const *keys,
                                        const void *const *v,
                                        const size_t *lens,
                                        struct mt_error *err);

/* Frees the backend state, the cache and the handle m starts; NULL is
 * allowed. */
void mtx_model_close(struct mtx_model *m);

#endif
