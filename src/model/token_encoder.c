/* Per-token contextual embeddings from a llama.cpp encoder (gguf:PATH) for
 * BERTScore: the GGUF's pooling is switched off (LLAMA_POOLING_TYPE_NONE),
 * one text a forward pass, special tokens dropped from the output. */
#include <pthread.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/spec.h"
#include "model/token_encoder.h"

#define TOK_SETTING "--bertscore-model"
#define TOK_MAX_CTX 8192u

void mtx_tok_encoder_default_params(struct mtx_tok_encoder_params *p)
{
    memset(p, 0, sizeof *p);
}

#ifdef MT_HAVE_LLAMA
#include "model/llama_rt.h"

struct mtx_tok_encoder {
    struct llama_model *model;
    struct llama_context *ctx;
    const struct llama_vocab *vocab;
    pthread_mutex_t mu;
    char *name;
    uint32_t n_ctx;
    uint32_t dims;
    uint32_t layers;
};

void mtx_tok_encoder_close(struct mtx_tok_encoder *e)
{
    if (!e)
        return;
    if (e->ctx)
        llama_free(e->ctx);
    if (e->model)
        mtx_llama_release(e->model);
    pthread_mutex_destroy(&e->mu);
    mt_free(e->name);
    mt_free(e);
}

/* One context with pooling off, sized for one whole text per ubatch (an
 * encoder attends over the full sequence, so it cannot be split). */
static enum mt_status make_ctx(struct mtx_tok_encoder *e, const char *path,
                               uint32_t threads, struct mt_error *err)
{
    struct llama_context_params cp = llama_context_default_params();

    e->vocab = llama_model_get_vocab(e->model);
    e->dims = (uint32_t)llama_model_n_embd(e->model);
    e->layers = (uint32_t)llama_model_n_layer(e->model);
    e->n_ctx = (uint32_t)llama_model_n_ctx_train(e->model);
    if (e->n_ctx == 0 || e->n_ctx > TOK_MAX_CTX)
        e->n_ctx = TOK_MAX_CTX;
    cp.n_ctx = cp.n_batch = cp.n_ubatch = e->n_ctx;
    cp.n_seq_max = 1;
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
    cp.n_threads = cp.n_threads_batch = mtx_llama_threads(threads);
    cp.no_perf = true;
    e->ctx = llama_init_from_model(e->model, cp);
    if (!e->ctx)
        return mt_fail(err, MT_ENOMEM, "gguf:%s: cannot create a context",
                       path);
    return MT_OK;
}

/* The PATH of spec "gguf:PATH" (model/spec.c), NULL when it is not one. */
static const char *spec_path(const char *spec)
{
    static const char *const kinds[] = {"gguf"};
    struct mtx_spec ms;
    enum mt_status st = mtx_spec_parse(spec, kinds, 1, TOK_SETTING, &ms, NULL);

    mtx_spec_free(&ms);
    return st == MT_OK ? ms.arg : NULL;
}

enum mt_status mtx_tok_encoder_open(const char *spec,
                                    const struct mtx_tok_encoder_params *p,
                                    struct mtx_tok_encoder **out,
                                    struct mt_error *err)
{
    const char *path = spec_path(spec);
    const char *slash = path ? strrchr(path, '/') : NULL;
    struct mtx_tok_encoder *e;
    enum mt_status st;

    if (!path)
        return mt_fail(err, MT_EINVAL,
                       TOK_SETTING " must be gguf:PATH (a "
                                   "llama.cpp encoder model), not '%s'",
                       spec ? spec : "");
    e = mt_calloc(1, sizeof *e);
    if (!e || !(e->name = mt_strdup(slash ? slash + 1 : path))) {
        mt_free(e);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&e->mu, NULL);
    st = mtx_llama_load(path, MT_LLAMA_TOKENS, TOK_SETTING, &e->model, err);
    if (st == MT_OK)
        st = make_ctx(e, path, p ? p->threads : 0, err);
    if (st != MT_OK) {
        mtx_tok_encoder_close(e);
        return st;
    }
    *out = e;
    return MT_OK;
}

/* ==== Encoding ==== */

static int is_special(const struct mtx_tok_encoder *e, llama_token t)
{
    return llama_vocab_is_control(e->vocab, t) ||
           t == llama_vocab_bos(e->vocab) || t == llama_vocab_eos(e->vocab) ||
           t == llama_vocab_sep(e->vocab);
}

/* Tokenises with [CLS]/[SEP]; a text over n_ctx tokens is cut to n_ctx,
 * keeping its closing special token, as a truncating tokenizer does. */
static enum mt_status tokenize(struct mtx_tok_encoder *e, const char *text,
                               size_t n, llama_token **t, int32_t *nt,
                               struct mt_error *err)
{
    enum mt_status st = mtx_llama_tokenize(e->vocab, text, n, 1, t, nt, err);

    if (st != MT_OK || (uint32_t)*nt <= e->n_ctx)
        return st;
    if (is_special(e, (*t)[*nt - 1]))
        (*t)[e->n_ctx - 1] = (*t)[*nt - 1];
    *nt = (int32_t)e->n_ctx;
    return MT_OK;
}

/* Copies the hidden state of every non-special token into vecs/ids;
 * *kept counts them. Caller holds the lock after a successful decode. */
static enum mt_status gather(struct mtx_tok_encoder *e, const llama_token *t,
                             int32_t nt, float *vecs, int32_t *ids,
                             size_t *kept)
{
    size_t k = 0;
    int32_t i;

    for (i = 0; i < nt; i++) {
        const float *v;
        if (is_special(e, t[i]))
            continue;
        v = llama_get_embeddings_ith(e->ctx, i);
        if (!v)
            return MT_EINTERNAL;
        memcpy(vecs + k * e->dims, v, e->dims * sizeof *v);
        ids[k++] = (int32_t)t[i];
    }
    *kept = k;
    return MT_OK;
}

/* One forward pass over one sequence; every position is an output. */
static enum mt_status forward(struct mtx_tok_encoder *e, const llama_token *t,
                              int32_t nt, float *vecs, int32_t *ids,
                              size_t *kept)
{
    struct llama_batch b = llama_batch_init(nt, 0, 1);
    enum mt_status st = MT_EINTERNAL;
    int32_t i;

    for (i = 0; i < nt; i++) {
        b.token[i] = t[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = nt;
    pthread_mutex_lock(&e->mu);
    if (llama_get_memory(e->ctx))
        llama_memory_clear(llama_get_memory(e->ctx), true);
    if (llama_decode(e->ctx, b) == 0)
        st = gather(e, t, nt, vecs, ids, kept);
    pthread_mutex_unlock(&e->mu);
    llama_batch_free(b);
    return st;
}

enum mt_status mtx_tok_encoder_encode(struct mtx_tok_encoder *e,
                                      const char *text, size_t n, float **vecs,
                                      int32_t **ids, size_t *ntok, size_t *dim,
                                      struct mt_error *err)
{
    llama_token *t = NULL;
    int32_t nt = 0;
    float *v = NULL;
    int32_t *id = NULL;
    size_t kept = 0;
    enum mt_status st = tokenize(e, text, n, &t, &nt, err);

    if (st == MT_OK && nt > 0) {
        v = mt_malloc((size_t)nt * e->dims * sizeof *v);
        id = mt_malloc((size_t)nt * sizeof *id);
        st = v && id ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (st == MT_OK && nt > 0 && forward(e, t, nt, v, id, &kept) != MT_OK)
        st = mt_fail(err, MT_EINTERNAL,
                     "gguf %s: llama.cpp failed to "
                     "encode a text of %d tokens",
                     e->name, nt);
    mt_free(t);
    if (st != MT_OK || kept == 0) {
        mt_free(v);
        mt_free(id);
        v = NULL;
        id = NULL;
    }
    if (st == MT_OK) {
        *vecs = v;
        *ids = id;
        *ntok = kept;
        *dim = e->dims;
    }
    return st;
}

const char *mtx_tok_encoder_model(const struct mtx_tok_encoder *e)
{
    return e->name;
}

uint32_t mtx_tok_encoder_dims(const struct mtx_tok_encoder *e)
{
    return e->dims;
}

uint32_t mtx_tok_encoder_layers(const struct mtx_tok_encoder *e)
{
    return e->layers;
}

#else /* !MT_HAVE_LLAMA */

struct mtx_tok_encoder {
    int unused;
};

enum mt_status mtx_tok_encoder_open(const char *spec,
                                    const struct mtx_tok_encoder_params *p,
                                    struct mtx_tok_encoder **out,
                                    struct mt_error *err)
{
    (void)p;
    (void)out;
    return mt_fail(err, MT_EUNSUPPORTED,
                   "%s: this medtrust was built without llama.cpp (run "
                   "scripts/bootstrap and rebuild)",
                   spec ? spec : TOK_SETTING);
}

enum mt_status mtx_tok_encoder_encode(struct mtx_tok_encoder *e,
                                      const char *text, size_t n, float **vecs,
                                      int32_t **ids, size_t *ntok, size_t *dim,
                                      struct mt_error *err)
{
    (void)e;
    (void)text;
    (void)n;
    (void)vecs;
    (void)ids;
    (void)ntok;
    (void)dim;
    return mt_fail(err, MT_EUNSUPPORTED, "built without llama.cpp");
}

const char *mtx_tok_encoder_model(const struct mtx_tok_encoder *e)
{
    (void)e;
    return "";
}

uint32_t mtx_tok_encoder_dims(const struct mtx_tok_encoder *e)
{
    (void)e;
    return 0;
}

uint32_t mtx_tok_encoder_layers(const struct mtx_tok_encoder *e)
{
    (void)e;
    return 0;
}

void mtx_tok_encoder_close(struct mtx_tok_encoder *e)
{
    (void)e;
}

#endif
