/* What `medtrust score` sets up around mt_eval_score (eval layer, moved
 * here from src/cli/cmd_score.c, issue 33): the BERTScore encoder opened
 * from a model spec with its layer and baselines checked, and the
 * reference cut to the notes every submission predicts (--only-predicted).
 * The CLI keeps its options and printing. Names: mtx_ (internal). */
#ifndef MTX_EVAL_BERT_ENCODER_H
#define MTX_EVAL_BERT_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/eval.h"

struct mtx_bert_encoder;

struct mtx_bert_encoder_params {
    const char *spec;     /* onnx:DIR (an ONNX export, run as bert_score
                             runs it) or gguf:PATH (a llama.cpp encoder) */
    uint32_t layer;       /* the layer bert_score reads, which must be the
                             model's last (an export cut to it); 0: the
                             model's last */
    const char *baseline; /* B, P,R,F or a file (bert_score's LAYER,P,R,F
                             tables: the row of the output layer); NULL:
                             not rescaled */
    int idf;              /* idf weights over the reference corrections */
};

/* Opens the encoder. MT_EINVAL when the model does not end at p->layer;
 * errors name the option (--bertscore-model, --bertscore-layer,
 * --bertscore-baseline) to change. On failure *out is NULL. */
enum mt_status mtx_bert_encoder_open(const struct mtx_bert_encoder_params *p,
                                     struct mtx_bert_encoder **out,
                                     struct mt_error *err);

/* Sets p's bert, bert_idf and bert_base to the encoder's (borrowed until
 * mtx_bert_encoder_close). */
void mtx_bert_encoder_use(struct mtx_bert_encoder *e, struct mt_eval_params *p);

void mtx_bert_encoder_close(struct mtx_bert_encoder *e);

/* Keeps the reference notes that each of the n submissions predicts, so
 * runs compared side by side (paired) are scored over the same notes;
 * MT_EINVAL when none is left, and says (mt_log) how many it kept. */
enum mt_status mtx_eval_keep_predicted(struct mt_eval_ref *ref,
                                       struct mt_eval_sub *const *subs,
                                       size_t n, struct mt_error *err);

#endif
