/* Embedder handle: dispatches a spec to its backend and applies what every
 * backend shares, Matryoshka truncation and re-normalisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/cache.h"
#include "model/embed.h"
#include "model/embed_llama.h"
#include "model/embed_openai.h"
#include "model/use_lite.h"

struct mt_embedder {
    const struct mt_embedder_ops *ops;
    void *self;
    struct mt_embedder_params params;
    uint32_t native;        /* backend's dimension */
    uint32_t dims;          /* after truncation */
    struct mt_cache *cache; /* NULL unless params.cache_path */
    char spec[256];         /* the cache's model key */
};

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

/* ==== Dispatch ==== */

typedef enum mt_status (*open_fn)(const char *arg,
                                  const struct mt_embedder_params *p,
                                  struct mt_embedder **out,
                                  struct mt_error *err);

static enum mt_status open_use_lite(const char *arg,
                                    const struct mt_embedder_params *p,
                                    struct mt_embedder **out,
                                    struct mt_error *err)
{
    return mt_use_lite_open(arg && *arg ? arg : NULL, p, out, err);
}

/* Spec prefixes; a NULL open is a backend not built in yet. */
static const struct backend {
    const char *prefix; /* matched exactly, or followed by ':' + argument */
    open_fn open;
} backends[] = {
    {"use-lite", open_use_lite},
    {"gguf", mt_embedder_open_llama},
    {"openai", mt_embedder_open_openai_spec},
};

/* Opens the call cache of a freshly opened embedder when asked to. */
static enum mt_status attach_cache(enum mt_status st, const char *spec,
                                   const struct mt_embedder_params *p,
                                   struct mt_embedder **out,
                                   struct mt_error *err)
{
    if (st != MT_OK || !p || !p->cache_path)
        return st;
    snprintf((*out)->spec, sizeof(*out)->spec, "%s", spec);
    st = mt_cache_open(p->cache_path, &(*out)->cache, err);
    if (st != MT_OK) {
        mt_embedder_close(*out);
        *out = NULL;
    }
    return st;
}

enum mt_status mt_embedder_open(const char *spec,
                                const struct mt_embedder_params *params,
                                struct mt_embedder **out, struct mt_error *err)
{
    size_t i;

    if (!spec || !*spec)
        spec = "use-lite";
    for (i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        size_t n = strlen(backends[i].prefix);
        if (strncmp(spec, backends[i].prefix, n) != 0 ||
            (spec[n] != '\0' && spec[n] != ':'))
            continue;
        if (!backends[i].open)
            return mt_fail(err, MT_EUNSUPPORTED,
                           "embedder '%s': the %s backend is not built into "
                           "this medtrust yet (use use-lite)",
                           spec, backends[i].prefix);
        return attach_cache(
            backends[i].open(spec[n] ? spec + n + 1 : NULL, params, out, err),
            spec, params, out, err);
    }
    return mt_fail(err, MT_EINVAL,
                   "embedder '%s': expected use-lite[:FILE], gguf:PATH or "
                   "openai:BASE_URL#MODEL",
                   spec);
}

enum mt_status mt_embedder_new_take(const struct mt_embedder_ops *ops,
                                    void *self,
                                    const struct mt_embedder_params *params,
                                    struct mt_embedder **out,
                                    struct mt_error *err)
{
    struct mt_embedder *e = mt_calloc(1, sizeof *e);

    if (!e) {
        ops->free(self);
        return mt_fail(err, MT_ENOMEM, "embedder handle");
    }
    e->ops = ops;
    e->self = self;
    if (params)
        e->params = *params;
    else
        mt_embedder_default_params(&e->params);
    e->native = ops->dims(self);
    e->dims = e->params.dims ? e->params.dims : e->native;
    if (e->dims > e->native) {
        mt_fail(err, MT_EINVAL, "embedder %s: dims %u exceeds its %u",
                ops->name, e->dims, e->native);
        mt_embedder_close(e);
        return MT_EINVAL;
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
    return e->ops->name;
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
    st = e->ops->embed(e->self, texts, n, full, err);
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

/* The request key: output shape and pooling, then the text. */
static char *cache_key(const struct mt_embedder *e, struct mt_str t)
{
    char head[48];
    int hn = snprintf(head, sizeof head, "%u|%d|%s", e->dims,
                      e->params.normalize, pool_key(e->params.window_pool));
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

    if (key && mt_cache_get(e->cache, e->ops->name, e->spec, key, &v, &n,
                            NULL) == MT_OK) {
        hit = n == (size_t)e->dims * sizeof(float);
        if (hit)
            memcpy(dst, v, n);
    }
    mt_free(v);
    mt_free(key);
    return hit;
}

static void cache_put_vec(struct mt_embedder *e, struct mt_str t,
                          const float *v)
{
    char *key = cache_key(e, t);

    if (key)
        mt_cache_put(e->cache, e->ops->name, e->spec, key, v,
                     (size_t)e->dims * sizeof(float), NULL);
    mt_free(key);
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
    for (i = 0; st == MT_OK && i < nm; i++) {
        memcpy(out + miss[i] * e->dims, tmp + i * e->dims,
               e->dims * sizeof *tmp);
        cache_put_vec(e, mt[i], tmp + i * e->dims);
    }
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
    if (e->cache)
        return embed_cached(e, texts, n, out, err);
    return embed_direct(e, texts, n, out, err);
}

void mt_embedder_close(struct mt_embedder *e)
{
    if (!e)
        return;
    if (e->ops)
        e->ops->free(e->self);
    mt_cache_close(e->cache);
    mt_free(e);
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
