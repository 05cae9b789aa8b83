/* NLI classifier for claim verification, mapped to SUPPORT, CONTRADICT and
 * NO_EVIDENCE: a GGUF sequence classifier (llama.cpp rank pooling with
 * labelled outputs) or a prompted judge on a chat model ("llm"). */
#ifndef MT_MODEL_NLI_H
#define MT_MODEL_NLI_H

#include <stdint.h>

#include "model/rerank.h"

enum mt_nli_label {
    MT_NLI_SUPPORT,     /* "entailment" */
    MT_NLI_CONTRADICT,  /* "contradiction" */
    MT_NLI_NO_EVIDENCE, /* "neutral" */
};

struct mt_nli;

/* Opens the classifier named by 'spec':
 *   gguf:PATH  a classifier whose labels (classifier.output_labels) name
 *              entailment, contradiction and neutral;
 *   llm        a prompted judge on MEDTRUST_LLM_NLI, else MEDTRUST_LLM;
 *   llm:SPEC   the same on the chat model SPEC (openai:... or gguf:...).
 * 'p' may be NULL (threads and timeout are used). On success *out owns the
 * handle (mt_nli_free); errors name --nli. */
enum mt_status mt_nli_open(const char *spec, const struct mt_reranker_params *p,
                           struct mt_nli **out, struct mt_error *err);

/* Classifies whether 'evidence' supports 'claim'. The gguf classifier
 * reads the pair as "claim [SEP] evidence" (VerifAI's input order); the
 * llm judge is shown the evidence as the reference and the claim as the
 * claim. probs (may be NULL) receives probabilities indexed by enum
 * mt_nli_label (one-hot for the llm judge); *label the most likely.
 * Thread-safe (calls serialise). */
enum mt_status mt_nli_classify(struct mt_nli *n, const char *claim,
                               const char *evidence, float probs[3],
                               enum mt_nli_label *label, struct mt_error *err);

/* "SUPPORT", "CONTRADICT" or "NO_EVIDENCE". */
const char *mt_nli_label_str(enum mt_nli_label l);

void mt_nli_free(struct mt_nli *n);

/* The gguf classifier backend (src/model/encoder_llama.c). */
struct mt_llama_cls;
enum mt_status mt_llama_cls_open(const char *path, uint32_t threads,
                                 struct mt_llama_cls **out,
                                 struct mt_error *err);
/* Softmax probabilities indexed by enum mt_nli_label. */
enum mt_status mt_llama_cls_probs(struct mt_llama_cls *c, const char *premise,
                                  const char *hypothesis, float probs[3],
                                  struct mt_error *err);
void mt_llama_cls_free(struct mt_llama_cls *c);

#endif
