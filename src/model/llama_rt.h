/* Shared llama.cpp runtime for the gguf backends: one-time backend
 * loading, log routing into mt_log, checked model loading, tokenising. */
#ifndef MT_MODEL_LLAMA_RT_H
#define MT_MODEL_LLAMA_RT_H

#ifdef MT_HAVE_LLAMA

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <llama.h>

#include "medtrust/status.h"

/* What a model file must be for the caller. */
enum mt_llama_role {
    MT_LLAMA_CHAT,     /* decoder with a vocabulary, not pooled */
    MT_LLAMA_EMBED,    /* pooled (mean, CLS, last) embedding model */
    MT_LLAMA_RANK,     /* rank pooling, one output (cross-encoder) */
    MT_LLAMA_CLASSIFY, /* rank pooling, n labelled outputs */
    MT_LLAMA_TOKENS,   /* any model declaring a pooling type, read per token */
};

/* Checks 'path' (missing, not GGUF, wrong architecture for 'role') and
 * loads the model, or shares the one already loaded from the same path.
 * 'setting' (e.g. "--embedder") is named in errors. On success *out is the
 * model; give it back with mtx_llama_release. Thread-safe. */
enum mt_status mtx_llama_load(const char *path, enum mt_llama_role role,
                              const char *setting, struct llama_model **out,
                              struct mt_error *err);

/* Drops one reference to a model from mtx_llama_load; the last frees it.
 * Its contexts must be freed first. Thread-safe. */
void mtx_llama_release(struct llama_model *m);

/* Tokenises n bytes of text into a new array (mt_free) of *n_out tokens;
 * 'special' adds BOS/CLS/SEP as the vocabulary wants. */
enum mt_status mtx_llama_tokenize(const struct llama_vocab *v, const char *text,
                                  size_t n, int special, llama_token **out,
                                  int32_t *n_out, struct mt_error *err);

/* One loaded model with one context, as every gguf backend holds it: the
 * context serves one call at a time under 'mu'. */
struct mtx_llama_session {
    struct llama_model *model;
    struct llama_context *ctx;
    const struct llama_vocab *vocab;
    pthread_mutex_t mu;
    char *name; /* the file's base name, for results and errors */
};

/* Loads the model at 'path' for 'role' (mtx_llama_load) into a zeroed
 * session; no context yet. On failure the session needs
 * mtx_llama_session_close all the same. */
enum mt_status mtx_llama_session_open(struct mtx_llama_session *s,
                                      const char *path, enum mt_llama_role role,
                                      const char *setting,
                                      struct mt_error *err);

/* Creates the session's context from 'cp'; MT_ENOMEM naming the file
 * when llama.cpp cannot. */
enum mt_status mtx_llama_session_context(struct mtx_llama_session *s,
                                         const char *path,
                                         struct llama_context_params cp,
                                         struct mt_error *err);

/* Frees the context, releases the model and the name. */
void mtx_llama_session_close(struct mtx_llama_session *s);

/* Threads to use: 'threads' or the online CPU count. */
int32_t mtx_llama_threads(uint32_t threads);

#endif
#endif
