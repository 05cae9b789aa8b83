/* Token encoder: contextual per-token embeddings (no pooling) from a
 * llama.cpp encoder GGUF, for BERTScore's greedy matching. */
#ifndef MT_MODEL_TOKEN_ENCODER_H
#define MT_MODEL_TOKEN_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

struct mtx_tok_encoder;

struct mtx_tok_encoder_params {
    uint32_t threads; /* worker threads, 0 = all online CPUs */
};

void mtx_tok_encoder_default_params(struct mtx_tok_encoder_params *p);

/* Opens "gguf:PATH": any GGUF that declares a pooling type (a BERT-family
 * embedder, reranker or classifier); its pooling and head are bypassed and
 * the last layer's hidden state of every token is read. Errors name
 * --bertscore-model. 'p' may be NULL and is copied. On success *out owns
 * the handle (free with mtx_tok_encoder_close); built without llama.cpp it
 * is MT_EUNSUPPORTED. */
enum mt_status mtx_tok_encoder_open(const char *spec,
                                    const struct mtx_tok_encoder_params *p,
                                    struct mtx_tok_encoder **out,
                                    struct mt_error *err);

/* Encodes n bytes of text with the special tokens the vocabulary adds
 * ([CLS] ... [SEP]) so every token sees the context the model was trained
 * with, then drops the rows of special (control) tokens, as BERTScore
 * gives them no weight. (bert_score still lets a [CLS]/[SEP] row be the
 * best match of another token; without those rows a best match can only
 * be the same or lower, and only when a special row would have won.) Text
 * longer than the model's context is cut to it, keeping the closing [SEP]. On
 * success *vecs holds *ntok rows of *dim floats and *ids the *ntok token ids
 * (both mt_malloc'd, the caller's to mt_free; NULL when *ntok is 0). The same
 * text always gives the same output. Thread-safe: calls on one handle
 * serialise. The signature fits struct mt_token_encoder's encode callback
 * (include/medtrust/eval.h). */
enum mt_status mtx_tok_encoder_encode(struct mtx_tok_encoder *e,
                                      const char *text, size_t n, float **vecs,
                                      int32_t **ids, size_t *ntok, size_t *dim,
                                      struct mt_error *err);

/* Model label: the GGUF file name. Valid while the handle is open. */
const char *mtx_tok_encoder_model(const struct mtx_tok_encoder *e);

/* Width of each token embedding (the model's n_embd). */
uint32_t mtx_tok_encoder_dims(const struct mtx_tok_encoder *e);

/* Number of transformer layers (the output is the last one's). */
uint32_t mtx_tok_encoder_layers(const struct mtx_tok_encoder *e);

/* Frees the handle; NULL is a no-op. */
void mtx_tok_encoder_close(struct mtx_tok_encoder *e);

#endif
