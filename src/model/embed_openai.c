/* OpenAI-compatible embedder: POST /v1/embeddings, every text of a call
 * in one request, or (params.batch_size B) in requests of B texts of
 * which params.threads N are in flight at once, spread over the spec's
 * endpoints by the HTTP pool; replies are checked field by field. Caching
 * is the embedder front end's (params.cache_path, model/embed.c). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/embed_openai.h"
#include "model/http.h"
#include "model/llm.h"

#define EMBED_MAX_DIMS 65536
#define JOBS_MAX 256

#define NO_INDEX MT_HTTP_NO_INDEX

struct oembed {
    struct mt_http *http;
    char *model;
    uint32_t dims;  /* 0 until the probe */
    uint32_t jobs;  /* requests in flight, >= 1 */
    uint32_t batch; /* texts per request, 0 = a call's all */
    char url[512];
};

static void oembed_free(void *self)
{
    struct oembed *o = self;

    if (!o)
        return;
    mtx_http_free(o->http);
    mt_free(o->model);
    mt_free(o);
}

static uint32_t oembed_dims(const void *self)
{
    return ((const struct oembed *)self)->dims;
}

static enum mt_status bad_field(const struct oembed *o, struct mt_error *err,
                                const char *arr, size_t i, const char *rest)
{
    return mtx_http_bad_field(o->url, err, arr, i, rest);
}

/* Copies one "embedding" array; learns the dimension on the first. */
static enum mt_status take_vector(struct oembed *o, json_t *v, float *dst,
                                  size_t i, struct mt_error *err)
{
    size_t k;
    size_t n = json_array_size(v);

    if (!json_is_array(v) || n == 0 || n > EMBED_MAX_DIMS ||
        (o->dims && n != o->dims))
        return bad_field(o, err, "data", i, ".embedding");
    if (!o->dims)
        o->dims = (uint32_t)n;
    if (!dst)
        return MT_OK;
    for (k = 0; k < n; k++) {
        json_t *x = json_array_get(v, k);
        if (!json_is_number(x))
            return bad_field(o, err, "data", i, ".embedding");
        dst[k] = (float)json_number_value(x);
    }
    return MT_OK;
}

static enum mt_status parse_data(struct oembed *o, json_t *reply, size_t n,
                                 float *out, struct mt_error *err)
{
    json_t *data = json_object_get(reply, "data");
    size_t i;

    if (!json_is_array(data) || json_array_size(data) != n)
        return bad_field(o, err, "data", NO_INDEX, "");
    for (i = 0; i < n; i++) {
        json_t *d = json_array_get(data, i);
        json_t *ix = json_object_get(d, "index");
        size_t at = ix ? (size_t)json_integer_value(ix) : i;
        enum mt_status st;
        if ((ix && !json_is_integer(ix)) || at >= n)
            return bad_field(o, err, "data", i, ".index");
        st = take_vector(o, json_object_get(d, "embedding"),
                         out ? out + at * o->dims : NULL, i, err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

/* The reply's byte budget: a float is at most ~26 bytes of JSON
 * ("-1.2345678901234567e-05, "); before the probe the dimension is not
 * known, so up to 16,384 a vector. */
static size_t reply_budget(const struct oembed *o, size_t n)
{
    size_t dims = o->dims ? o->dims : 16384;

    return n * (dims * 32 + 256) + ((size_t)1 << 20);
}

/* One request for texts[idx[0..n)] into rows out[idx[j]]. */
static enum mt_status request(struct oembed *o, const struct mt_str *texts,
                              const size_t *idx, size_t n, float *tmp,
                              struct mt_error *err)
{
    json_t *in = json_array();
    json_t *b = json_pack("{s:s,s:o,s:s}", "model", o->model, "input", in,
                          "encoding_format", "float");
    json_t *reply = NULL;
    enum mt_status st = b ? MT_OK : MT_ENOMEM;
    size_t j;

    for (j = 0; st == MT_OK && j < n; j++)
        if (json_array_append_new(
                in, json_stringn(texts[idx[j]].p, texts[idx[j]].n)) != 0)
            st = MT_ENOMEM;
    if (st == MT_OK)
        st = mtx_http_post_json(o->http, "embeddings", b, reply_budget(o, n),
                                &reply, NULL, err);
    else
        mt_fail(err, st, "embed: out of memory (or text not UTF-8)");
    if (st == MT_OK)
        st = parse_data(o, reply, n, tmp, err);
    json_decref(reply);
    json_decref(b);
    return st;
}

/* ==== Embedding ==== */

/* A call split into requests of o->batch texts, taken in turn by up to
 * o->jobs threads; the first failure stops the taking and is returned. */
struct split {
    struct oembed *o;
    const struct mt_str *texts;
    const size_t *idx;
    size_t n;
    float *out;
    size_t next; /* first text of the next request; guarded by mu */
    pthread_mutex_t mu;
    enum mt_status st;
    struct mt_error err;
};

static void *split_main(void *arg)
{
    struct split *s = arg;
    struct mt_error e = {MT_OK, ""};

    for (;;) {
        size_t at, m;
        enum mt_status st;
        pthread_mutex_lock(&s->mu);
        at = s->next;
        m = s->st == MT_OK && at < s->n ? s->n - at : 0;
        m = m > s->o->batch ? s->o->batch : m;
        s->next += m;
        pthread_mutex_unlock(&s->mu);
        if (m == 0)
            return NULL;
        st = request(s->o, s->texts, s->idx + at, m, s->out + at * s->o->dims,
                     &e);
        pthread_mutex_lock(&s->mu);
        if (st != MT_OK && s->st == MT_OK) {
            s->st = st;
            s->err = e;
        }
        pthread_mutex_unlock(&s->mu);
    }
}

static enum mt_status embed_split(struct split *s, struct mt_error *err)
{
    pthread_t th[JOBS_MAX];
    size_t reqs = (s->n + s->o->batch - 1) / s->o->batch;
    size_t nt = reqs < s->o->jobs ? reqs : s->o->jobs, i, started = 0;

    pthread_mutex_init(&s->mu, NULL);
    for (i = 1; i < nt; i++)
        if (pthread_create(&th[i], NULL, split_main, s) == 0)
            started = i;
        else
            break;
    split_main(s); /* the calling thread takes requests too */
    for (i = 1; i <= started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&s->mu);
    if (s->st != MT_OK && err)
        *err = s->err;
    return s->st;
}

static enum mt_status oembed_embed(void *self, const struct mt_str *texts,
                                   size_t n, float *out, struct mt_error *err)
{
    struct oembed *o = self;
    size_t *idx = mt_malloc((n ? n : 1) * sizeof *idx);
    struct split s;
    enum mt_status st;
    size_t i;

    if (!idx)
        return mt_fail(err, MT_ENOMEM, "embed: out of memory");
    for (i = 0; i < n; i++)
        idx[i] = i;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.texts = texts;
    s.idx = idx;
    s.n = n;
    s.out = out;
    if (n == 0)
        st = MT_OK;
    else if (o->batch == 0 || n <= o->batch)
        st = request(o, texts, idx, n, out, err);
    else
        st = embed_split(&s, err);
    mt_free(idx);
    return st;
}

static const struct mtx_model_ops oembed_ops = {
    .name = "openai",
    .free = oembed_free,
    .embed = oembed_embed,
    .dims = oembed_dims,
};

static enum mt_status probe(struct oembed *o, struct mt_error *err)
{
    struct mt_str t = MT_STR_C("dimension probe");
    size_t zero = 0;

    return request(o, &t, &zero, 1, NULL, err);
}

enum mt_status mtx_embedder_open_openai(const char *url, const char *model,
                                        const struct mt_embedder_params *p,
                                        struct mt_embedder **out,
                                        struct mt_error *err)
{
    struct mt_embedder_params d;
    struct mt_llm_params lp;
    struct mt_http_params hp;
    struct oembed *o = mt_calloc(1, sizeof *o);
    enum mt_status st = MT_ENOMEM;

    if (!p) {
        mt_embedder_default_params(&d);
        p = &d;
    }
    mt_llm_default_params(&lp);
    hp = (struct mt_http_params){p->timeout_s > 0 ? p->timeout_s : lp.timeout_s,
                                 lp.max_retries,
                                 lp.backoff_base_s,
                                 lp.backoff_max_s,
                                 lp.max_concurrency,
                                 "--embedder",
                                 NULL,
                                 0};
    if (!o || !(o->model = mt_strdup(model)))
        goto fail;
    o->jobs = p->threads ? p->threads : 1;
    if (o->jobs > JOBS_MAX)
        o->jobs = JOBS_MAX;
    o->batch = p->batch_size;
    if (hp.max_concurrency < o->jobs)
        hp.max_concurrency = o->jobs;
    st = mtx_http_new(url, &hp, &o->http, err);
    if (st != MT_OK)
        goto fail;
    mtx_http_url(o->http, "embeddings", o->url, sizeof o->url);
    st = probe(o, err);
    if (st != MT_OK)
        goto fail;
    return MTX_MODEL_TAKE(out, &oembed_ops, o, err);
fail:
    oembed_free(o);
    if (st == MT_ENOMEM)
        mt_fail(err, st, "out of memory");
    return st;
}
