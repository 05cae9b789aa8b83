/* onnx:DIR as an embedder (token vectors pooled as sentence-transformers
 * pools them: CLS, mean over the attention mask, or max) and as a
 * cross-encoder reranker (sentence-transformers' CrossEncoder score: the
 * sigmoid of a single logit, else the softmax probability of label 1). */
#include <math.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/embed.h"
#include "model/onnx_enc.h"
#include "model/rerank.h"

#define ONNX_BATCH 32 /* texts per forward pass by default */

struct oemb {
    struct mtx_onnx *m;
    enum mtx_onnx_pool pool;
    uint32_t dims;
    uint32_t batch;
};

/* Pools row i of a [b, t, h] output over its first 'len' tokens. */
static void pool_row(enum mtx_onnx_pool pool, const float *o, size_t t,
                     size_t h, size_t i, size_t len, float *dst)
{
    const float *r = o + i * t * h;
    size_t j, k;

    if (pool == MTX_POOL_CLS || len == 0) {
        memcpy(dst, r, h * sizeof *dst);
        return;
    }
    for (k = 0; k < h; k++) {
        double acc = pool == MTX_POOL_MAX ? -(double)INFINITY : 0.0;
        for (j = 0; j < len; j++) {
            double v = (double)r[j * h + k];
            acc = pool == MTX_POOL_MAX ? (v > acc ? v : acc) : acc + v;
        }
        dst[k] = (float)(pool == MTX_POOL_MAX ? acc : acc / (double)len);
    }
}

/* Embeds texts[0..n) (one forward pass) into out. */
static enum mt_status embed_batch(struct oemb *e, const struct mt_str *texts,
                                  size_t n, float *out, struct mt_error *err)
{
    struct mtx_hf_enc *enc = mt_calloc(n + 1, sizeof *enc);
    int64_t d[4] = {0};
    size_t nd = 0, i;
    float *o = NULL;
    int sent = e->pool == MTX_POOL_DEFAULT &&
               mtx_onnx_has_output(e->m, "sentence_embedding");
    enum mt_status st = enc ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    if (st == MT_OK)
        st = mtx_onnx_forward(e->m, texts, NULL, n,
                              sent ? "sentence_embedding" : NULL, &o, d, &nd,
                              enc, err);
    if (st == MT_OK && (d[0] != (int64_t)n || d[nd - 1] != (int64_t)e->dims ||
                        nd != (sent ? 2u : 3u)))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "onnx:%s: the output's shape is not [batch, %s%u]",
                     mtx_onnx_dir(e->m), sent ? "" : "tokens, ", e->dims);
    for (i = 0; st == MT_OK && i < n; i++) {
        if (sent)
            memcpy(out + i * e->dims, o + i * e->dims, e->dims * sizeof *o);
        else
            pool_row(e->pool == MTX_POOL_DEFAULT ? mtx_onnx_st_pool(e->m)
                                                 : e->pool,
                     o, (size_t)d[1], e->dims, i, enc[i].n, out + i * e->dims);
    }
    for (i = 0; i < n; i++)
        mtx_hf_enc_free(&enc[i]);
    mt_free(enc);
    mt_free(o);
    return st;
}

static enum mt_status oemb_embed(void *self, const struct mt_str *texts,
                                 size_t n, float *out, struct mt_error *err)
{
    struct oemb *e = self;
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i += e->batch) {
        size_t k = n - i < e->batch ? n - i : e->batch;
        st = embed_batch(e, texts + i, k, out + i * e->dims, err);
    }
    return st;
}

static uint32_t oemb_dims(const void *self)
{
    return ((const struct oemb *)self)->dims;
}

static void oemb_free(void *self)
{
    struct oemb *e = self;

    if (!e)
        return;
    mtx_onnx_close(e->m);
    mt_free(e);
}

static const struct mtx_model_ops oemb_ops = {
    .name = "onnx",
    .free = oemb_free,
    .embed = oemb_embed,
    .dims = oemb_dims,
};

/* "DIR?pooling=cls|mean|max": the folder (new string) and the pooling. */
static enum mt_status pool_spec(const char *arg, char **dir,
                                enum mtx_onnx_pool *pool, struct mt_error *err)
{
    const char *q = arg ? strrchr(arg, '?') : NULL;

    *pool = MTX_POOL_DEFAULT;
    if (q && strcmp(q, "?pooling=cls") == 0)
        *pool = MTX_POOL_CLS;
    else if (q && strcmp(q, "?pooling=mean") == 0)
        *pool = MTX_POOL_MEAN;
    else if (q && strcmp(q, "?pooling=max") == 0)
        *pool = MTX_POOL_MAX;
    else if (q)
        return mt_fail(err, MT_EINVAL,
                       "--embedder onnx:%s: unknown option '%s': use "
                       "?pooling=cls, ?pooling=mean or ?pooling=max",
                       arg, q + 1);
    *dir = q ? mt_strndup(arg, (size_t)(q - arg)) : mt_strdup(arg ? arg : "");
    return *dir ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

/* The width of the vectors: config.json's hidden size, else one probe. */
static enum mt_status probe_dims(struct oemb *e, struct mt_error *err)
{
    struct mt_str one = {"a", 1};
    int64_t d[4] = {0};
    size_t nd = 0;
    float *o = NULL;
    int sent = e->pool == MTX_POOL_DEFAULT &&
               mtx_onnx_has_output(e->m, "sentence_embedding");
    enum mt_status st = mtx_onnx_forward(e->m, &one, NULL, 1,
                                         sent ? "sentence_embedding" : NULL, &o,
                                         d, &nd, NULL, err);

    mt_free(o);
    if (st == MT_OK &&
        (nd != (sent ? 2u : 3u) || d[nd - 1] <= 0 || d[nd - 1] > 65536))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "--embedder onnx:%s: the output is [%zu dimensions], "
                     "not token vectors [batch, tokens, hidden] (an "
                     "embedder needs last_hidden_state or "
                     "sentence_embedding)",
                     mtx_onnx_dir(e->m), nd);
    if (st == MT_OK)
        e->dims = (uint32_t)d[nd - 1];
    return st;
}

enum mt_status mtx_embedder_open_onnx(const char *arg,
                                      const struct mt_embedder_params *p,
                                      struct mt_embedder **out,
                                      struct mt_error *err)
{
    struct oemb *e = mt_calloc(1, sizeof *e);
    char *dir = NULL;
    enum mt_status st = e ? pool_spec(arg, &dir, &e->pool, err)
                          : mt_fail(err, MT_ENOMEM, "out of memory");

    if (st == MT_OK)
        st = mtx_onnx_open(dir, p ? p->threads : 0, "--embedder", &e->m, err);
    mt_free(dir);
    if (st == MT_OK) {
        e->batch = p && p->batch_size ? p->batch_size : ONNX_BATCH;
        st = probe_dims(e, err);
    }
    if (st != MT_OK) {
        oemb_free(e);
        return st;
    }
    return MTX_MODEL_TAKE(out, &oemb_ops, e, err);
}

/* ==== Reranker ==== */

struct orank {
    struct mtx_onnx *m;
};

/* One relevance score from a row of logits. */
static float rank_score(const float *l, size_t nl)
{
    double mx, s = 0;
    size_t k;

    if (nl == 1)
        return (float)(1.0 / (1.0 + exp(-(double)l[0])));
    mx = (double)l[0];
    for (k = 1; k < nl; k++)
        mx = (double)l[k] > mx ? (double)l[k] : mx;
    for (k = 0; k < nl; k++)
        s += exp((double)l[k] - mx);
    return (float)(exp((double)l[1] - mx) / s);
}

static enum mt_status rank_batch(struct orank *r, struct mt_str query,
                                 const struct mt_str *docs, size_t n,
                                 float *scores, struct mt_error *err)
{
    struct mt_str *q = mt_calloc(n + 1, sizeof *q);
    int64_t d[4] = {0};
    size_t nd = 0, i;
    float *o = NULL;
    enum mt_status st = q ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    for (i = 0; q && i < n; i++)
        q[i] = query;
    if (st == MT_OK)
        st = mtx_onnx_forward(r->m, q, docs, n,
                              mtx_onnx_has_output(r->m, "logits") ? "logits"
                                                                  : NULL,
                              &o, d, &nd, NULL, err);
    if (st == MT_OK && (nd != 2 || d[0] != (int64_t)n || d[1] < 1))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "--reranker onnx:%s: the output is not [batch, labels] "
                     "logits (export a sequence-classification model)",
                     mtx_onnx_dir(r->m));
    for (i = 0; st == MT_OK && i < n; i++)
        scores[i] = rank_score(o + i * (size_t)d[1], (size_t)d[1]);
    mt_free(o);
    mt_free(q);
    return st;
}

static enum mt_status orank_score(void *self, struct mt_str query,
                                  const struct mt_str *docs, size_t n,
                                  float *scores, struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i += ONNX_BATCH) {
        size_t k = n - i < ONNX_BATCH ? n - i : ONNX_BATCH;
        st = rank_batch(self, query, docs + i, k, scores + i, err);
    }
    return st;
}

static const char *orank_model(const void *self)
{
    return mtx_onnx_dir(((const struct orank *)self)->m);
}

static void orank_free(void *self)
{
    struct orank *r = self;

    if (!r)
        return;
    mtx_onnx_close(r->m);
    mt_free(r);
}

static const struct mtx_model_ops orank_ops = {
    .name = "onnx",
    .free = orank_free,
    .model = orank_model,
    .score = orank_score,
};

enum mt_status mtx_reranker_open_onnx(const char *dir,
                                      const struct mt_reranker_params *p,
                                      struct mt_reranker **out,
                                      struct mt_error *err)
{
    struct orank *r = mt_calloc(1, sizeof *r);
    enum mt_status st =
        r ? mtx_onnx_open(dir, p ? p->threads : 0, "--reranker", &r->m, err)
          : mt_fail(err, MT_ENOMEM, "out of memory");

    if (st != MT_OK) {
        orank_free(r);
        return st;
    }
    return MTX_MODEL_TAKE(out, &orank_ops, r, err);
}
