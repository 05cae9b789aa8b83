/* The BERTScore encoder of `medtrust score` and its --only-predicted
 * notes (eval/bert_encoder.h). */
#include <string.h>

#include "eval/bert_encoder.h"
#include "medtrust/core.h"
#include "model/onnx_enc.h"
#include "model/token_encoder.h"

struct mtx_bert_encoder {
    struct mtx_tok_encoder *tok;  /* a llama.cpp encoder, or NULL */
    struct mtx_onnx *onnx;        /* or an ONNX export */
    struct mt_token_encoder bert; /* eval's view of either */
    double base[3];               /* P, R, F baselines */
    int has_base, idf;
};

/* The adapters from src/model's token encoders to eval's callback. */
static enum mt_status tok_encode(void *user, const char *text, size_t n,
                                 float **vecs, int32_t **ids, size_t *ntok,
                                 size_t *dim, struct mt_error *err)
{
    return mtx_tok_encoder_encode(user, text, n, vecs, ids, ntok, dim, err);
}

static enum mt_status onnx_encode(void *user, const char *text, size_t n,
                                  float **vecs, int32_t **ids, size_t *ntok,
                                  size_t *dim, struct mt_error *err)
{
    return mtx_onnx_token_vectors(user, text, n, vecs, ids, ntok, dim, err);
}

/* Opens the model; *layers is the layer its output comes from. */
static enum mt_status open_model(const char *spec, struct mtx_bert_encoder *e,
                                 uint32_t *layers, struct mt_error *err)
{
    const char *name;
    enum mt_status st;

    if (strncmp(spec, "onnx:", 5) != 0) {
        st = mtx_tok_encoder_open(spec, NULL, &e->tok, err);
        if (st != MT_OK)
            return st;
        *layers = mtx_tok_encoder_layers(e->tok);
        e->bert.model = mtx_tok_encoder_model(e->tok);
        e->bert.encode = tok_encode;
        e->bert.user = e->tok;
        return MT_OK;
    }
    st = mtx_onnx_open(spec + 5, 0, "--bertscore-model", &e->onnx, err);
    if (st != MT_OK)
        return st;
    *layers = mtx_onnx_layers(e->onnx);
    name = strrchr(mtx_onnx_dir(e->onnx), '/');
    e->bert.model = mtx_onnx_name(e->onnx)
                        ? mtx_onnx_name(e->onnx)
                        : (name && name[1] ? name + 1 : mtx_onnx_dir(e->onnx));
    e->bert.encode = onnx_encode;
    e->bert.user = e->onnx;
    e->bert.as_bert_score = 1;
    return MT_OK;
}

/* bert_score truncates the model to n layers and reads the last; an
 * encoder here can only give its last layer. */
static enum mt_status check_layer(const char *spec, uint32_t n,
                                  uint32_t *layers, struct mt_error *err)
{
    if (!n)
        return MT_OK;
    if (*layers && *layers != n)
        return mt_fail(err, MT_EINVAL,
                       "--bertscore-layer %lu: %s ends at layer %u; "
                       "bert_score reads layer %lu of a model cut to that "
                       "many layers: export it so (README, \"The papers' "
                       "own models\")",
                       (unsigned long)n, spec, *layers, (unsigned long)n);
    *layers = n;
    return MT_OK;
}

enum mt_status mtx_bert_encoder_open(const struct mtx_bert_encoder_params *p,
                                     struct mtx_bert_encoder **out,
                                     struct mt_error *err)
{
    struct mtx_bert_encoder *e = mt_calloc(1, sizeof *e);
    uint32_t layers = 0;
    enum mt_status st;

    *out = NULL;
    if (!e)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = open_model(p->spec, e, &layers, err);
    if (st == MT_OK)
        st = check_layer(p->spec, p->layer, &layers, err);
    if (st == MT_OK && p->baseline) /* bert_score's row = the output layer */
        st =
            mt_bertscore_baseline_load(p->baseline, (long)layers, e->base, err);
    if (st != MT_OK) {
        mtx_bert_encoder_close(e);
        return st;
    }
    e->bert.layer = layers;
    e->has_base = p->baseline != NULL;
    e->idf = p->idf;
    *out = e;
    return MT_OK;
}

void mtx_bert_encoder_use(struct mtx_bert_encoder *e, struct mt_eval_params *p)
{
    p->bert = &e->bert;
    p->bert_idf = e->idf;
    p->bert_base = e->has_base ? e->base : NULL;
}

void mtx_bert_encoder_close(struct mtx_bert_encoder *e)
{
    if (!e)
        return;
    mtx_tok_encoder_close(e->tok);
    mtx_onnx_close(e->onnx);
    mt_free(e);
}

/* ==== --only-predicted ==== */

struct subs {
    struct mt_eval_sub *const *v;
    size_t n;
};

/* A note stays when every submission predicts it. */
static int predicted_by_all(const struct mt_eval_note *note, void *user)
{
    const struct subs *s = user;
    size_t i;

    for (i = 0; i < s->n; i++)
        if (mt_eval_sub_find(s->v[i], note->id) < 0)
            return 0;
    return 1;
}

enum mt_status mtx_eval_keep_predicted(struct mt_eval_ref *ref,
                                       struct mt_eval_sub *const *subs,
                                       size_t n, struct mt_error *err)
{
    struct subs s = {subs, n};
    size_t all = mt_eval_ref_count(ref);
    enum mt_status st = mt_eval_ref_keep(ref, predicted_by_all, &s, err);

    if (st != MT_OK)
        return st;
    if (mt_eval_ref_count(ref) == 0)
        return mt_fail(err, MT_EINVAL,
                       "--only-predicted: no reference note is predicted%s "
                       "(do the Text IDs match the reference's?)",
                       n > 1 ? " by every --pred" : "");
    mt_log(MT_LOG_INFO,
           "--only-predicted: scoring the %zu of %zu reference notes %s "
           "predicts",
           mt_eval_ref_count(ref), all,
           n > 1 ? "every --pred" : "the submission");
    return MT_OK;
}
