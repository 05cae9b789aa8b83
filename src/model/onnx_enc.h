/* onnx:DIR models: a transformer encoder exported to ONNX (Hugging Face
 * Optimum, sentence-transformers, fastembed) run by ONNX Runtime with its
 * tokenizer.json read in C. DIR holds model.onnx (or onnx/model.onnx),
 * config.json and tokenizer.json; tokenizer_config.json and the
 * sentence-transformers files (modules.json, 1_Pooling/config.json,
 * sentence_bert_config.json) when present. Names: mtx_ (cross-file
 * internals, docs/architecture.md). */
#ifndef MT_MODEL_ONNX_ENC_H
#define MT_MODEL_ONNX_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/model.h"
#include "model/hf_tok.h"

struct mtx_onnx;

/* How token vectors become one sentence vector. */
enum mtx_onnx_pool {
    MTX_POOL_DEFAULT, /* the export's sentence-transformers config, else mean */
    MTX_POOL_CLS,
    MTX_POOL_MEAN,
    MTX_POOL_MAX,
};

/* Opens the export in dir with 'threads' ONNX Runtime threads (0 = all).
 * 'setting' names the option in errors (--embedder, --nli...). A file
 * that is missing or unreadable is named with the reason. */
enum mt_status mtx_onnx_open(const char *dir, uint32_t threads,
                             const char *setting, struct mtx_onnx **out,
                             struct mt_error *err);

/* Tokenizes texts a[i] (with b[i] as the pair's second text when b is not
 * NULL), cut to the model's length, runs them as one padded batch, and
 * returns the graph's output: 'output' (NULL: last_hidden_state when the
 * graph has it, else its first output) as a new array (mt_free) of
 * dims[0..*nd). encs (may be NULL) receives the n encodings (free each
 * with mtx_hf_enc_free). Thread-safe. */
enum mt_status mtx_onnx_forward(struct mtx_onnx *m, const struct mt_str *a,
                                const struct mt_str *b, size_t n,
                                const char *output, float **out,
                                int64_t dims[4], size_t *nd,
                                struct mtx_hf_enc *encs, struct mt_error *err);

/* config.json's id2label: the name of output i, or NULL. */
const char *mtx_onnx_label(const struct mtx_onnx *m, size_t i);
size_t mtx_onnx_nlabels(const struct mtx_onnx *m);

/* config.json's _name_or_path (the model it was saved from, e.g.
 * "microsoft/deberta-xlarge-mnli"), or NULL. */
const char *mtx_onnx_name(const struct mtx_onnx *m);

/* config.json's num_hidden_layers (0 when it does not say): the layer
 * last_hidden_state comes from. */
uint32_t mtx_onnx_layers(const struct mtx_onnx *m);

/* BERTScore's token vectors of one text, as bert_score encodes it: the
 * text stripped of whitespace at both ends, the special tokens added
 * (their rows kept: bert_score lets them be a best match, with weight 0),
 * cut to the model's length, last_hidden_state read. *ids marks a special
 * token as -1 - id. The signature fits struct mt_token_encoder's encode
 * (include/medtrust/eval.h); *vecs and *ids are the caller's (mt_free).
 * Thread-safe. */
enum mt_status mtx_onnx_token_vectors(struct mtx_onnx *m, const char *text,
                                      size_t n, float **vecs, int32_t **ids,
                                      size_t *ntok, size_t *dim,
                                      struct mt_error *err);

/* 1 when the graph has an output of that name. */
int mtx_onnx_has_output(const struct mtx_onnx *m, const char *name);

/* The folder as opened (the model's name in caches and traces). */
const char *mtx_onnx_dir(const struct mtx_onnx *m);

/* The sentence-transformers pooling of the export (MTX_POOL_MEAN when it
 * names none). */
enum mtx_onnx_pool mtx_onnx_st_pool(const struct mtx_onnx *m);

void mtx_onnx_close(struct mtx_onnx *m);

/* Backends for the front ends (embed.c, rerank.c). arg is "DIR" or
 * "DIR?pooling=cls|mean|max" for the embedder. */
enum mt_status mtx_embedder_open_onnx(const char *arg,
                                      const struct mt_embedder_params *p,
                                      struct mt_embedder **out,
                                      struct mt_error *err);
enum mt_status mtx_reranker_open_onnx(const char *dir,
                                      const struct mt_reranker_params *p,
                                      struct mt_reranker **out,
                                      struct mt_error *err);

#endif
