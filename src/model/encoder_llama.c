/* llama.cpp encoder paths (gguf:PATH): pooled embeddings, cross-encoder
 * reranking (rank pooling, one output) and NLI classification (rank
 * pooling, labelled outputs). Texts are packed several sequences to a
 * batch; one context per handle, serialised by a mutex. */
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/embed_llama.h"
#include "model/nli.h"
#include "model/rerank.h"

#ifdef MT_HAVE_LLAMA
#include "model/llama_rt.h"

#define ENC_MAX_SEQ 16
#define ENC_MAX_CTX 8192u

struct lenc {
    struct mtx_llama_session ls;
    uint32_t n_ctx;
    uint32_t dims;    /* n_embd, or n_cls_out under rank pooling */
    int label_map[3]; /* NLI: output index of SUPPORT, CONTRADICT, NO_EV */
};

/* A tokenised input: tokens owned by the caller. */
struct seq {
    llama_token *t;
    int32_t n;
};

static void lenc_free(void *self)
{
    struct lenc *e = self;

    if (!e)
        return;
    mtx_llama_session_close(&e->ls);
    mt_free(e);
}

static const char *lenc_model(const void *self)
{
    return ((const struct lenc *)self)->ls.name;
}

static uint32_t lenc_dims(const void *self)
{
    return ((const struct lenc *)self)->dims;
}

static enum mt_status lenc_open(const char *path, enum mt_llama_role role,
                                const char *setting, uint32_t threads,
                                struct lenc **out, struct mt_error *err)
{
    struct llama_context_params cp = llama_context_default_params();
    struct lenc *e = mt_calloc(1, sizeof *e);
    enum mt_status st;

    if (!e)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_llama_session_open(&e->ls, path, role, setting, err);
    if (st != MT_OK)
        goto fail;
    e->n_ctx = (uint32_t)llama_model_n_ctx_train(e->ls.model);
    if (e->n_ctx == 0 || e->n_ctx > ENC_MAX_CTX)
        e->n_ctx = ENC_MAX_CTX;
    e->dims = role == MT_LLAMA_EMBED ? (uint32_t)llama_model_n_embd(e->ls.model)
                                     : llama_model_n_cls_out(e->ls.model);
    cp.n_ctx = cp.n_batch = cp.n_ubatch = e->n_ctx;
    cp.n_seq_max = ENC_MAX_SEQ;
    cp.embeddings = true;
    cp.n_threads = cp.n_threads_batch = mtx_llama_threads(threads);
    cp.no_perf = true;
    st = mtx_llama_session_context(&e->ls, path, cp, err);
    if (st != MT_OK)
        goto fail;
    *out = e;
    return MT_OK;
fail:
    lenc_free(e);
    return st;
}

/* ==== Batched forward passes ==== */

static enum mt_status run_batch(struct lenc *e, const struct seq *s, size_t n,
                                float *out)
{
    struct llama_batch b;
    int32_t total = 0;
    size_t i;
    int32_t k;
    int rc;

    for (i = 0; i < n; i++)
        total += s[i].n;
    b = llama_batch_init(total, 0, 1);
    b.n_tokens = 0;
    for (i = 0; i < n; i++) {
        for (k = 0; k < s[i].n; k++) {
            int32_t j = b.n_tokens++;
            b.token[j] = s[i].t[k];
            b.pos[j] = k;
            b.n_seq_id[j] = 1;
            b.seq_id[j][0] = (llama_seq_id)i;
            b.logits[j] = 1;
        }
    }
    if (llama_get_memory(e->ls.ctx))
        llama_memory_clear(llama_get_memory(e->ls.ctx), true);
    rc = llama_decode(e->ls.ctx, b);
    for (i = 0; rc == 0 && i < n; i++) {
        const float *v = llama_get_embeddings_seq(e->ls.ctx, (llama_seq_id)i);
        if (!v) {
            rc = -1;
            break;
        }
        memcpy(out + i * e->dims, v, e->dims * sizeof *v);
    }
    llama_batch_free(b);
    return rc == 0 ? MT_OK : MT_EINTERNAL;
}

/* Runs every sequence, packing up to ENC_MAX_SEQ and n_ctx tokens a batch;
 * each sequence was already cut to n_ctx tokens. Caller holds the lock. */
static enum mt_status encode(struct lenc *e, const struct seq *s, size_t n,
                             float *out, struct mt_error *err)
{
    size_t i = 0;

    while (i < n) {
        size_t j = i;
        uint32_t tok = 0;
        while (j < n && j - i < ENC_MAX_SEQ &&
               tok + (uint32_t)s[j].n <= e->n_ctx)
            tok += (uint32_t)s[j++].n;
        if (run_batch(e, s + i, j - i, out + i * e->dims) != MT_OK)
            return mt_fail(err, MT_EINTERNAL,
                           "gguf %s: llama.cpp failed "
                           "to encode a batch",
                           e->ls.name);
        i = j;
    }
    return MT_OK;
}

static void free_seqs(struct seq *s, size_t n)
{
    size_t i;

    for (i = 0; s && i < n; i++)
        mt_free(s[i].t);
    mt_free(s);
}

/* Tokenises one text (with CLS/SEP), cut to n_ctx tokens. */
static enum mt_status tok_one(struct lenc *e, struct mt_str t, struct seq *s,
                              struct mt_error *err)
{
    enum mt_status st =
        mtx_llama_tokenize(e->ls.vocab, t.p, t.n, 1, &s->t, &s->n, err);

    if (st == MT_OK && (uint32_t)s->n > e->n_ctx)
        s->n = (int32_t)e->n_ctx; /* as sentence encoders truncate */
    return st;
}

/* ==== Embedder ==== */

static enum mt_status lenc_embed(void *self, const struct mt_str *texts,
                                 size_t n, float *out, struct mt_error *err)
{
    struct lenc *e = self;
    struct seq *s = mt_calloc(n ? n : 1, sizeof *s);
    enum mt_status st = s ? MT_OK : MT_ENOMEM;
    size_t i;

    if (!s)
        return mt_fail(err, st, "embed: out of memory");
    for (i = 0; st == MT_OK && i < n; i++)
        st = tok_one(e, texts[i], &s[i], err);
    if (st == MT_OK) {
        pthread_mutex_lock(&e->ls.mu);
        st = encode(e, s, n, out, err);
        pthread_mutex_unlock(&e->ls.mu);
    }
    free_seqs(s, n);
    return st;
}

static const struct mtx_model_ops lenc_embed_ops = {
    .name = "gguf",
    .free = lenc_free,
    .embed = lenc_embed,
    .dims = lenc_dims,
};

enum mt_status mtx_embedder_open_llama(const char *path,
                                       const struct mt_embedder_params *p,
                                       struct mt_embedder **out,
                                       struct mt_error *err)
{
    struct lenc *e = NULL;
    enum mt_status st;

    if (!path || !*path)
        return mt_fail(err, MT_EINVAL, "--embedder gguf: needs a path");
    st = lenc_open(path, MT_LLAMA_EMBED, "--embedder", p ? p->threads : 0, &e,
                   err);
    if (st != MT_OK)
        return st;
    return MTX_MODEL_TAKE(out, &lenc_embed_ops, e, err);
}

/* ==== Pairs: reranker and NLI ==== */

/* [CLS] a [SEP] b [SEP], with b cut so the pair fits n_ctx. */
static enum mt_status tok_pair(struct lenc *e, struct mt_str a, struct mt_str b,
                               struct seq *s, struct mt_error *err)
{
    struct seq q = {NULL, 0};
    struct seq d = {NULL, 0};
    llama_token sep = llama_vocab_sep(e->ls.vocab);
    enum mt_status st = tok_one(e, a, &q, err);

    if (st == MT_OK)
        st = mtx_llama_tokenize(e->ls.vocab, b.p, b.n, 0, &d.t, &d.n, err);
    if (sep < 0)
        sep = llama_vocab_eos(e->ls.vocab);
    if (st == MT_OK && (uint32_t)q.n + 1 >= e->n_ctx)
        st = mt_fail(err, MT_ELIMIT,
                     "gguf %s: the query alone fills the "
                     "%u-token context",
                     e->ls.name, e->n_ctx);
    if (st == MT_OK && (uint32_t)(q.n + d.n + 1) > e->n_ctx)
        d.n = (int32_t)e->n_ctx - q.n - 1;
    if (st == MT_OK)
        s->t = mt_malloc((size_t)(q.n + d.n + 1) * sizeof *s->t);
    if (st == MT_OK && !s->t)
        st = mt_fail(err, MT_ENOMEM, "rerank: out of memory");
    if (st == MT_OK) {
        memcpy(s->t, q.t, (size_t)q.n * sizeof *q.t);
        memcpy(s->t + q.n, d.t, (size_t)d.n * sizeof *d.t);
        s->t[q.n + d.n] = sep;
        s->n = q.n + d.n + 1;
    }
    mt_free(q.t);
    mt_free(d.t);
    return st;
}

static enum mt_status score_pairs(struct lenc *e, struct mt_str query,
                                  const struct mt_str *docs, size_t n,
                                  float *out, struct mt_error *err)
{
    struct seq *s = mt_calloc(n ? n : 1, sizeof *s);
    enum mt_status st = s ? MT_OK : MT_ENOMEM;
    size_t i;

    if (!s)
        return mt_fail(err, st, "rerank: out of memory");
    for (i = 0; st == MT_OK && i < n; i++)
        st = tok_pair(e, query, docs[i], &s[i], err);
    if (st == MT_OK) {
        pthread_mutex_lock(&e->ls.mu);
        st = encode(e, s, n, out, err);
        pthread_mutex_unlock(&e->ls.mu);
    }
    free_seqs(s, n);
    return st;
}

static enum mt_status lenc_score(void *self, struct mt_str query,
                                 const struct mt_str *docs, size_t n,
                                 float *scores, struct mt_error *err)
{
    return score_pairs(self, query, docs, n, scores, err);
}

static const struct mtx_model_ops lenc_rank_ops = {
    .name = "gguf",
    .free = lenc_free,
    .model = lenc_model,
    .score = lenc_score,
};

enum mt_status mtx_reranker_open_llama(const char *path,
                                       const struct mt_reranker_params *p,
                                       struct mt_reranker **out,
                                       struct mt_error *err)
{
    struct lenc *e = NULL;
    enum mt_status st =
        lenc_open(path, MT_LLAMA_RANK, "--reranker", p->threads, &e, err);

    if (st != MT_OK)
        return st;
    return MTX_MODEL_TAKE(out, &lenc_rank_ops, e, err);
}

/* ==== Classifier (NLI) ==== */

struct mtx_llama_cls {
    struct lenc *e;
};

static int find_label(const struct lenc *e, const char *want)
{
    uint32_t i;

    for (i = 0; i < e->dims; i++) {
        const char *l = llama_model_cls_label(e->ls.model, i);
        if (l && strstr(l, want))
            return (int)i;
    }
    return -1;
}

/* Label stems match any case of the first letter ("Entailment"). */
static enum mt_status map_labels(struct lenc *e, const char *path,
                                 struct mt_error *err)
{
    static const char *const want[3] = {"ntail", "ontradict", "eutral"};
    int i;

    for (i = 0; i < 3; i++) {
        e->label_map[i] = find_label(e, want[i]);
        if (e->label_map[i] < 0)
            return mt_fail(err, MT_EINVAL,
                           "gguf:%s: no '%s' label among the classifier's "
                           "outputs: give an NLI model in --nli, or name "
                           "its outputs (gguf:PATH?preset=verifai, or "
                           "?labels=NO_EVIDENCE,SUPPORT,CONTRADICT)",
                           path, want[i]);
    }
    return MT_OK;
}

/* Positional labels: output at[i] means label i. */
static enum mt_status set_labels(struct lenc *e, const char *path,
                                 const int *at, struct mt_error *err)
{
    int i;

    for (i = 0; i < 3; i++) {
        if (at[i] < 0 || (uint32_t)at[i] >= e->dims)
            return mt_fail(err, MT_EINVAL,
                           "gguf:%s: the classifier has %u outputs, so "
                           "labels= names at most %u: fix --nli",
                           path, (unsigned)e->dims, (unsigned)e->dims);
        e->label_map[i] = at[i];
    }
    return MT_OK;
}

enum mt_status mtx_llama_cls_open(const char *path, uint32_t threads,
                                  const int *at, struct mtx_llama_cls **out,
                                  struct mt_error *err)
{
    struct mtx_llama_cls *c = mt_calloc(1, sizeof *c);
    enum mt_status st;

    if (!c)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = lenc_open(path, MT_LLAMA_CLASSIFY, "--nli", threads, &c->e, err);
    if (st == MT_OK)
        st = at ? set_labels(c->e, path, at, err) : map_labels(c->e, path, err);
    if (st != MT_OK) {
        mtx_llama_cls_free(c);
        return st;
    }
    *out = c;
    return MT_OK;
}

enum mt_status mtx_llama_cls_probs(struct mtx_llama_cls *c, const char *premise,
                                   const char *hypothesis, float probs[3],
                                   struct mt_error *err)
{
    struct mt_str h = mtx_str_from(hypothesis);
    float logits[64];
    double sum = 0;
    int i;
    enum mt_status st;

    if (c->e->dims > 64)
        return mt_fail(err, MT_EUNSUPPORTED, "nli: too many labels");
    st = score_pairs(c->e, mtx_str_from(premise), &h, 1, logits, err);
    if (st != MT_OK)
        return st;
    for (i = 0; i < 3; i++) {
        probs[i] = expf(logits[c->e->label_map[i]]);
        sum += (double)probs[i];
    }
    for (i = 0; i < 3; i++)
        probs[i] = (float)((double)probs[i] / sum);
    return MT_OK;
}

void mtx_llama_cls_free(struct mtx_llama_cls *c)
{
    if (!c)
        return;
    lenc_free(c->e);
    mt_free(c);
}

#else /* !MT_HAVE_LLAMA */

static enum mt_status no_llama(const char *what, struct mt_error *err)
{
    return mt_fail(err, MT_EUNSUPPORTED,
                   "gguf:%s: this medtrust was built "
                   "without llama.cpp (run scripts/bootstrap and rebuild)",
                   what ? what : "");
}

enum mt_status mtx_embedder_open_llama(const char *path,
                                       const struct mt_embedder_params *p,
                                       struct mt_embedder **out,
                                       struct mt_error *err)
{
    (void)p;
    (void)out;
    return no_llama(path, err);
}

enum mt_status mtx_reranker_open_llama(const char *path,
                                       const struct mt_reranker_params *p,
                                       struct mt_reranker **out,
                                       struct mt_error *err)
{
    (void)p;
    (void)out;
    return no_llama(path, err);
}

enum mt_status mtx_llama_cls_open(const char *path, uint32_t threads,
                                  const int *at, struct mtx_llama_cls **out,
                                  struct mt_error *err)
{
    (void)threads;
    (void)at;
    (void)out;
    return no_llama(path, err);
}

enum mt_status mtx_llama_cls_probs(struct mtx_llama_cls *c, const char *premise,
                                   const char *hypothesis, float probs[3],
                                   struct mt_error *err)
{
    (void)c;
    (void)premise;
    (void)hypothesis;
    (void)probs;
    return no_llama(NULL, err);
}

void mtx_llama_cls_free(struct mtx_llama_cls *c)
{
    (void)c;
}

#endif
