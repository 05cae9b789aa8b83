/* Embedder front end: parses a spec, opens its backend, and applies what
 * every backend shares: Matryoshka truncation, re-normalisation and the
 * call cache (keyed by the spec, the backend's variant, the output shape
 * and the text). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/embed.h"
#include "model/embed_llama.h"
#include "model/embed_openai.h"
#include "model/onnx_enc.h"
#include "model/spec.h"
#include "model/use_lite.h"

/* MEDTRUST_EMBED_POOL: first (the default), mean or max. First stays
 * the default because mean windows lowered MedQuAD dense nDCG@10 from
 * 0.632 to 0.479 (BENCHMARKS.md): its answers lead with what the
 * question asks. */
static enum mt_embed_pool pool_from_env(void)
{
    const char *v = getenv("MEDTRUST_EMBED_POOL");

    if (v && strcmp(v, "max") == 0)
        return MT_EMBED_POOL_MAX;
    if (v && strcmp(v, "mean") == 0)
        return MT_EMBED_POOL_MEAN;
    return MT_EMBED_POOL_FIRST;
}

void mt_embedder_default_params(struct mt_embedder_params *p)
{
    memset(p, 0, sizeof *p);
    p->normalize = 1;
    p->timeout_s = 120.0;
    p->window_pool = pool_from_env();
}

/* ==== Open ==== */

/* The shape every backend's output gets here: Matryoshka truncation to
 * params.dims (0 = native), then normalisation. */
static enum mt_status set_shape(struct mt_embedder *e,
                                const struct mt_embedder_params *params,
                                struct mt_error *err)
{
    if (params)
        e->params = *params;
    else
        mt_embedder_default_params(&e->params);
    e->native = e->m.ops->dims(e->m.self);
    e->dims = e->params.dims ? e->params.dims : e->native;
    if (e->dims > e->native)
        return mt_fail(err, MT_EINVAL, "embedder %s: dims %u exceeds its %u",
                       e->m.ops->name, e->dims, e->native);
    return MT_OK;
}

static enum mt_status open_backend(const struct mtx_spec *ms,
                                   const struct mt_embedder_params *params,
                                   struct mt_embedder **out,
                                   struct mt_error *err)
{
    struct mt_embedder_params d;

    if (!params) {
        mt_embedder_default_params(&d);
        params = &d;
    }
    if (ms->kind == 0)
        return mtx_use_lite_open(ms->arg && *ms->arg ? ms->arg : NULL, params,
                                 out, err);
    if (ms->kind == 1)
        return mtx_embedder_open_llama(ms->arg, params, out, err);
    if (ms->kind == 3)
        return mtx_embedder_open_onnx(ms->arg, params, out, err);
    return mtx_embedder_open_openai(ms->url, ms->model, params, out, err);
}

enum mt_status mt_embedder_open(const char *spec,
                                const struct mt_embedder_params *params,
                                struct mt_embedder **out, struct mt_error *err)
{
    static const char *const kinds[] = {"use-lite", "gguf", "openai", "onnx"};
    struct mt_embedder *e = NULL;
    struct mtx_spec ms;
    enum mt_status st;

    if (!spec || !*spec)
        spec = "use-lite";
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = params ? mt_param_check(&mt_embedder_param_table, params, 0, err)
                : MT_OK;
    if (st != MT_OK)
        return st;
    st = mtx_spec_parse(spec, kinds, 4, "--embedder", &ms, err);
    if (st == MT_ENOTFOUND)
        return mt_fail(err, MT_EINVAL,
                       "embedder '%s': expected use-lite[:FILE], gguf:PATH, "
                       "onnx:DIR[?pooling=cls|mean|max] or "
                       "openai:BASE_URL#MODEL",
                       spec);
    if (st == MT_OK)
        st = open_backend(&ms, params, &e, err);
    mtx_spec_free(&ms);
    if (st == MT_OK)
        st = set_shape(e, params, err);
    if (st == MT_OK && params && params->cache_path) {
        st = mtx_model_cache_open(&e->m, params->cache_path, spec, err);
        if (st != MT_OK)
            e = NULL; /* closed */
    }
    if (st != MT_OK) {
        mt_embedder_close(e);
        return st;
    }
    *out = e;
    return MT_OK;
}

uint32_t mt_embedder_dims(const struct mt_embedder *e)
{
    return e->dims;
}

const char *mt_embedder_name(const struct mt_embedder *e)
{
    return e->m.ops->name;
}

/* ==== Embedding ==== */

/* Scales v to unit length; a zero vector stays zero. */
static void normalize(float *v, size_t n)
{
    double ss = 0.0;
    size_t i;

    for (i = 0; i < n; i++)
        ss += (double)v[i] * (double)v[i];
    if (ss <= 0.0)
        return;
    ss = 1.0 / sqrt(ss);
    for (i = 0; i < n; i++)
        v[i] = (float)((double)v[i] * ss);
}

/* Keeps the first e->dims of each native row (Matryoshka truncation). */
static void truncate_rows(const struct mt_embedder *e, const float *full,
                          size_t n, float *out)
{
    size_t i;

    for (i = 0; i < n; i++)
        memcpy(out + i * e->dims, full + i * e->native, e->dims * sizeof *out);
}

static enum mt_status embed_direct(struct mt_embedder *e,
                                   const struct mt_str *texts, size_t n,
                                   float *out, struct mt_error *err)
{
    float *full = out;
    enum mt_status st;
    size_t i;

    if (n == 0)
        return MT_OK;
    if (e->dims < e->native) {
        full = mt_malloc(n * e->native * sizeof *full);
        if (!full)
            return mt_fail(err, MT_ENOMEM, "embedding %zu texts", n);
    }
    st = e->m.ops->embed(e->m.self, texts, n, full, err);
    if (st == MT_OK && full != out)
        truncate_rows(e, full, n, out);
    if (full != out)
        mt_free(full);
    if (st == MT_OK && e->params.normalize)
        for (i = 0; i < n; i++)
            normalize(out + i * e->dims, e->dims);
    return st;
}

/* ==== Call cache ==== */

/* Long texts pool differently under each mode (short ones are the same,
 * but a key cannot tell them apart before embedding). */
static const char *pool_key(enum mt_embed_pool m)
{
    if (m == MT_EMBED_POOL_MAX)
        return "max|";
    return m == MT_EMBED_POOL_FIRST ? "first|" : "mean|";
}

/* The request key: output shape, the backend's variant (use-lite's GEMM
 * precision) when it has one, pooling, then the text. */
static char *cache_key(const struct mt_embedder *e, struct mt_str t)
{
    const char *var = e->m.ops->variant ? e->m.ops->variant(e->m.self) : "";
    char head[64];
    int hn = snprintf(head, sizeof head, "%u|%d|%.24s%s%s", e->dims,
                      e->params.normalize, var, *var ? "|" : "",
                      pool_key(e->params.window_pool));
    char *k = mt_malloc((size_t)hn + t.n + 1);

    if (!k)
        return NULL;
    memcpy(k, head, (size_t)hn);
    memcpy(k + hn, t.p, t.n);
    k[(size_t)hn + t.n] = '\0';
    return k;
}

static int cache_get_vec(struct mt_embedder *e, struct mt_str t, float *dst)
{
    char *key = cache_key(e, t);
    char *v = NULL;
    size_t n = 0;
    int hit = 0;

    if (key && mtx_model_cache_get(&e->m, key, &v, &n)) {
        hit = n == (size_t)e->dims * sizeof(float);
        if (hit)
            memcpy(dst, v, n);
    }
    mt_free(v);
    mt_free(key);
    return hit;
}

/* Stores the nm vectors just embedded in one cache transaction, so a
 * build killed mid-call keeps every earlier call whole and none of this
 * one; a cache that cannot be written only costs the re-embedding. */
static void cache_put_vecs(struct mt_embedder *e, const struct mt_str *t,
                           size_t nm, const float *v)
{
    char **keys = mt_calloc(nm, sizeof *keys);
    const void **vals = mt_malloc(nm * sizeof *vals);
    size_t *lens = mt_malloc(nm * sizeof *lens);
    size_t i;
    int ok = keys && vals && lens;

    for (i = 0; ok && i < nm; i++) {
        keys[i] = cache_key(e, t[i]);
        vals[i] = v + i * e->dims;
        lens[i] = (size_t)e->dims * sizeof(float);
        ok = keys[i] != NULL;
    }
    if (ok)
        mtx_model_cache_put_many(&e->m, nm, (const char *const *)keys, vals,
                                 lens, NULL);
    for (i = 0; keys && i < nm; i++)
        mt_free(keys[i]);
    mt_free(keys);
    mt_free(vals);
    mt_free(lens);
}

/* Embeds only the texts the cache lacks, then stores them. */
static enum mt_status embed_cached(struct mt_embedder *e,
                                   const struct mt_str *texts, size_t n,
                                   float *out, struct mt_error *err)
{
    size_t *miss = mt_malloc(n * sizeof *miss);
    struct mt_str *mt = mt_malloc(n * sizeof *mt);
    float *tmp = mt_malloc(n * e->dims * sizeof *tmp);
    size_t i, nm = 0;
    enum mt_status st = MT_OK;

    if (!miss || !mt || !tmp)
        st = mt_fail(err, MT_ENOMEM, "embedding %zu texts", n);
    for (i = 0; st == MT_OK && i < n; i++)
        if (!cache_get_vec(e, texts[i], out + i * e->dims)) {
            mt[nm] = texts[i];
            miss[nm++] = i;
        }
    if (st == MT_OK && nm)
        st = embed_direct(e, mt, nm, tmp, err);
    for (i = 0; st == MT_OK && i < nm; i++)
        memcpy(out + miss[i] * e->dims, tmp + i * e->dims,
               e->dims * sizeof *tmp);
    if (st == MT_OK && nm)
        cache_put_vecs(e, mt, nm, tmp);
    mt_free(miss);
    mt_free(mt);
    mt_free(tmp);
    return st;
}

enum mt_status mt_embedder_embed(struct mt_embedder *e,
                                 const struct mt_str *texts, size_t n,
                                 float *out, struct mt_error *err)
{
    if (n == 0)
        return MT_OK;
    if (e->m.cache)
        return embed_cached(e, texts, n, out, err);
    return embed_direct(e, texts, n, out, err);
}

void mt_embedder_close(struct mt_embedder *e)
{
    mtx_model_close(e ? &e->m : NULL);
}

enum mt_status mt_embedder_index_fn(void *user, const char *const *texts,
                                    const size_t *lens, size_t n, float *out,
                                    struct mt_error *err)
{
    struct mt_str *v = mt_calloc(n ? n : 1, sizeof *v);
    size_t i;
    enum mt_status st;

    if (!v)
        return mt_fail(err, MT_ENOMEM, "embedding: out of memory");
    for (i = 0; i < n; i++) {
        v[i].p = texts[i];
        v[i].n = lens[i];
    }
    st = mt_embedder_embed(user, v, n, out, err);
    mt_free(v);
    return st;
}
