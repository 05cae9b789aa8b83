/* NLI classifier backends for claim verification (the handle's API is in
 * include/medtrust/model.h): a GGUF sequence classifier (llama.cpp rank
 * pooling with labelled outputs) or a prompted judge on a chat model. */
#ifndef MT_MODEL_NLI_H
#define MT_MODEL_NLI_H

#include <stdint.h>

#include "medtrust/model.h"

/* The gguf classifier backend (src/model/encoder_llama.c). */
struct mtx_llama_cls;
/* Opens the classifier at path. 'at' gives, for SUPPORT, CONTRADICT and
 * NO_EVIDENCE in that order, the index of the model's output that means
 * it (positional labels, as VerifAI's model has); NULL finds them by
 * the model's label names (entailment, contradiction, neutral). */
enum mt_status mtx_llama_cls_open(const char *path, uint32_t threads,
                                  const int *at, struct mtx_llama_cls **out,
                                  struct mt_error *err);
/* Softmax probabilities indexed by enum mt_nli_label. */
enum mt_status mtx_llama_cls_probs(struct mtx_llama_cls *c, const char *premise,
                                   const char *hypothesis, float probs[3],
                                   struct mt_error *err);
void mtx_llama_cls_free(struct mtx_llama_cls *c);

/* The MiniCheck verifier (src/model/nli_minicheck.c) on chat model l:
 * probs SUPPORT 1 when every sentence of the claim is supported by some
 * chunk of the document, else NO_EVIDENCE 1 (MiniCheck answers Yes/No;
 * it never says CONTRADICT). MT_EPARSE when the model answers neither. */
enum mt_status mtx_minicheck_probs(struct mt_llm *l, const char *claim,
                                   const char *doc, float probs[3],
                                   struct mt_error *err);

/* 1 when mtx_nli_classify_batch runs n's pairs as batches (onnx:). */
int mtx_nli_batches(const struct mt_nli *n);

/* mt_nli_classify for m pairs (claim[i], evidence[i]): probs[i] and
 * label[i] as it gives them. An onnx: classifier runs them as padded
 * batches of up to 16 pairs (one forward pass each, equal to one pair a
 * call within float rounding); the other backends take one pair a call.
 * Stops at the first failure. Thread-safe. */
enum mt_status
mtx_nli_classify_batch(struct mt_nli *n, const char *const *claim,
                       const char *const *evidence, size_t m, float (*probs)[3],
                       enum mt_nli_label *label, struct mt_error *err);

#endif
