/* The built-in "use-lite" embedder: Universal Sentence Encoder Lite run in
 * C behind the one model ops table (model/handle.h). A call is split into
 * batches of texts that the thread pool embeds in parallel, each batch one
 * packed forward pass.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "medtrust/core.h"
#include "model/embed_window.h"
#include "model/use_lite.h"

#define DEFAULT_BATCH 32
#define MAX_BATCH 1024    /* bounds scratch: ~11 MB per 100 tokens */
#define WINDOW_OVERLAP 32 /* tokens shared by neighbouring windows */

/* Forward-pass scratch kept between calls, one per concurrent batch. */
struct slot {
    struct mt_ul_scratch s;
    int busy;
};

struct use_lite {
    struct mt_ul_model *model;
    struct mt_pool *pool; /* NULL when running on the caller's thread */
    pthread_mutex_t lock; /* guards slots[].busy */
    struct slot *slots;   /* pool threads + the caller */
    size_t n_slots;
    uint32_t batch;
    enum mt_embed_pool window_pool; /* texts over MT_UL_MAX_LEN tokens */
    char variant[16]; /* "int8 " or "f32 " GEMMs + the file's CRC-32 */
    int noted;        /* truncation was logged at info level once already */
};

/* One embed call, shared by the batches running in parallel. */
struct call {
    struct use_lite *u;
    const struct mt_str *texts;
    size_t n;
    size_t batch; /* texts per batch in this call */
    float *out;
    enum mt_status *st; /* per batch */
    size_t *clipped;    /* per batch: texts over MT_UL_MAX_LEN tokens */
};

static void free_ids(int32_t **ids, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        mt_free(ids[i]);
}

/* A batch's windows: token pointers and lengths for the forward pass, and
 * the window count of each text. */
struct windows {
    const int32_t **ids;
    size_t *lens;
    size_t *per_text;
    size_t n;
    float *vecs; /* n * MT_UL_DIM */
};

/* Cuts each text's tokens into windows of MT_UL_MAX_LEN (overlapping by
 * WINDOW_OVERLAP) as c->u->pool says; MT_EMBED_POOL_FIRST keeps the first
 * window only, as ClipToMaxLength does in the TF.js graph. */
static enum mt_status make_windows(const struct call *c, int32_t **ids,
                                   const size_t *lens, size_t nt,
                                   struct windows *w)
{
    size_t i, k, total = 0;

    for (i = 0; i < nt; i++)
        total += mtx_embed_windows(lens[i], MT_UL_MAX_LEN, WINDOW_OVERLAP,
                                   c->u->window_pool);
    w->ids = mt_calloc(total, sizeof *w->ids);
    w->lens = mt_calloc(total, sizeof *w->lens);
    w->per_text = mt_calloc(nt, sizeof *w->per_text);
    w->vecs = mt_malloc(total * MT_UL_DIM * sizeof *w->vecs);
    if (!w->ids || !w->lens || !w->per_text || !w->vecs)
        return MT_ENOMEM;
    for (i = 0; i < nt; i++) {
        w->per_text[i] = mtx_embed_windows(lens[i], MT_UL_MAX_LEN,
                                           WINDOW_OVERLAP, c->u->window_pool);
        for (k = 0; k < w->per_text[i]; k++, w->n++) {
            size_t off;
            mtx_embed_window_at(lens[i], MT_UL_MAX_LEN, WINDOW_OVERLAP, k, &off,
                                &w->lens[w->n]);
            w->ids[w->n] = ids[i] + off;
        }
    }
    return MT_OK;
}

static void windows_free(struct windows *w)
{
    mt_free(w->ids);
    mt_free(w->lens);
    mt_free(w->per_text);
    mt_free(w->vecs);
}

/* A free scratch slot, or NULL (the pass then allocates its own). */
static struct mt_ul_scratch *slot_claim(struct use_lite *u)
{
    struct mt_ul_scratch *s = NULL;
    size_t i;

    pthread_mutex_lock(&u->lock);
    for (i = 0; i < u->n_slots && !s; i++)
        if (!u->slots[i].busy) {
            u->slots[i].busy = 1;
            s = &u->slots[i].s;
        }
    pthread_mutex_unlock(&u->lock);
    return s;
}

static void slot_release(struct use_lite *u, struct mt_ul_scratch *s)
{
    size_t i;

    pthread_mutex_lock(&u->lock);
    for (i = 0; i < u->n_slots; i++)
        if (&u->slots[i].s == s)
            u->slots[i].busy = 0;
    pthread_mutex_unlock(&u->lock);
}

/* Embeds every window of the batch in one packed pass and pools each
 * text's windows into out. */
static enum mt_status embed_windows(const struct call *c, int32_t **ids,
                                    const size_t *lens, size_t nt, float *out)
{
    struct windows w = {NULL, NULL, NULL, 0, NULL};
    enum mt_status st = make_windows(c, ids, lens, nt, &w);
    size_t i, first = 0;

    if (st == MT_OK) {
        struct mt_ul_scratch *s = slot_claim(c->u);
        st = mtx_ul_forward(&c->u->model->w, w.ids, w.lens, w.n, w.vecs, s);
        if (s)
            slot_release(c->u, s);
    }
    for (i = 0; st == MT_OK && i < nt; i++) {
        mtx_embed_pool_vectors(w.vecs + first * MT_UL_DIM, w.per_text[i],
                               MT_UL_DIM, c->u->window_pool,
                               out + i * MT_UL_DIM);
        first += w.per_text[i];
    }
    windows_free(&w);
    return st;
}

/* Tokenizes and embeds texts [lo, hi), at most MAX_BATCH of them; counts
 * in *clipped those longer than one window. */
static enum mt_status run_batch(const struct call *c, size_t lo, size_t hi,
                                size_t *clipped)
{
    int32_t **ids = mt_calloc(hi - lo, sizeof *ids);
    size_t *lens = mt_calloc(hi - lo, sizeof *lens);
    enum mt_status st = ids && lens ? MT_OK : MT_ENOMEM;
    size_t i;

    for (i = lo; i < hi && st == MT_OK; i++) {
        st = mtx_ul_tokenize(c->u->model, c->texts[i], &ids[i - lo],
                             &lens[i - lo]);
        if (st == MT_OK && lens[i - lo] > MT_UL_MAX_LEN)
            (*clipped)++;
    }
    if (st == MT_OK)
        st = embed_windows(c, ids, lens, hi - lo, c->out + lo * MT_UL_DIM);
    if (ids)
        free_ids(ids, hi - lo);
    mt_free(ids);
    mt_free(lens);
    return st;
}

static void batch_task(size_t b, void *arg)
{
    const struct call *c = arg;
    size_t lo = b * c->batch;
    size_t hi = lo + c->batch < c->n ? lo + c->batch : c->n;

    c->st[b] = run_batch(c, lo, hi, &c->clipped[b]);
}

/* Texts per batch for a call of n: the configured batch, or fewer so
 * that every thread gets one; a call of 32 texts (the embed command's,
 * a batch by default) used to run on one thread of two. */
static size_t call_batch(const struct use_lite *u, size_t n)
{
    size_t threads = u->pool ? mtx_pool_size(u->pool) : 1;
    size_t share = (n + threads - 1) / threads;

    return share < u->batch ? (share ? share : 1) : u->batch;
}

static enum mt_status ul_embed(void *self, const struct mt_str *texts, size_t n,
                               float *out, struct mt_error *err)
{
    struct use_lite *u = self;
    struct call c = {u, texts, n, call_batch(u, n), out, NULL, NULL};
    size_t nb = (n + c.batch - 1) / c.batch, b, clipped = 0;
    enum mt_status st = MT_OK;

    if (n == 0)
        return MT_OK;
    c.st = mt_calloc(nb, sizeof *c.st);
    c.clipped = mt_calloc(nb, sizeof *c.clipped);
    if (!c.st || !c.clipped)
        st = mt_fail(err, MT_ENOMEM, "use-lite: embedding %zu texts", n);
    else if (u->pool && nb > 1)
        mtx_pool_parallel_for(u->pool, nb, batch_task, &c);
    else
        for (b = 0; b < nb; b++)
            batch_task(b, &c);
    for (b = 0; st == MT_OK && b < nb; b++) {
        clipped += c.clipped[b];
        if (c.st[b] != MT_OK)
            st = mt_fail(err, c.st[b], "use-lite: embedding failed: %s",
                         mt_status_str(c.st[b]));
    }
    if (st == MT_OK && clipped) /* info once, then debug: indexing */
        mt_log(u->noted ? MT_LOG_DEBUG : MT_LOG_INFO, /* cuts most chunks */
               "use-lite: %zu of %zu texts over the model's maximum of %d "
               "tokens (%s)",
               clipped, n, MT_UL_MAX_LEN,
               u->window_pool == MT_EMBED_POOL_FIRST
                   ? "truncated"
                   : "embedded as overlapping windows, pooled");
    u->noted |= clipped > 0;
    mt_free(c.st);
    mt_free(c.clipped);
    return st;
}

static uint32_t ul_dims(const void *self)
{
    (void)self;
    return MT_UL_DIM;
}

/* What decides the vectors besides the spec: the GEMMs' precision (int8
 * and float32 vectors differ, cosine >= 0.999) and the weights, which a
 * bare "use-lite" spec finds by MEDTRUST_USE_LITE or the install. The
 * embedder's cache keys its entries by it. */
static const char *ul_variant(const void *self)
{
    const struct use_lite *u = self;

    return u->variant;
}

static void ul_free(void *self)
{
    struct use_lite *u = self;

    size_t i;

    if (!u)
        return;
    mtx_pool_free(u->pool);
    for (i = 0; i < u->n_slots; i++)
        mtx_ul_scratch_free(&u->slots[i].s);
    mt_free(u->slots);
    pthread_mutex_destroy(&u->lock);
    mtx_ul_model_close(u->model);
    mt_free(u);
}

static const struct mtx_model_ops use_lite_ops = {
    .name = "use-lite",
    .free = ul_free,
    .embed = ul_embed,
    .dims = ul_dims,
    .variant = ul_variant,
};

/* int8 GEMMs where the CPU has AVX-512 VNNI (min cosine to float32 >=
 * 0.999 on the test sentences, BENCHMARKS.md), float32 elsewhere;
 * MEDTRUST_UL_GEMM=f32 or int8 forces one (int8 without VNNI runs the
 * portable loop: the same vectors, slowly). */
static enum mt_status gemm_mode(int *int8, struct mt_error *err)
{
    const char *g = getenv("MEDTRUST_UL_GEMM");

    *int8 = mtx_ul_have_vnni();
    if (!g || !*g)
        return MT_OK;
    if (strcmp(g, "f32") != 0 && strcmp(g, "int8") != 0)
        return mt_fail(err, MT_EINVAL,
                       "MEDTRUST_UL_GEMM=%s: expected f32 or int8", g);
    *int8 = strcmp(g, "int8") == 0;
    return MT_OK;
}

static enum mt_status ul_load(struct use_lite *u, const char *path,
                              const struct mt_embedder_params *p,
                              struct mt_error *err)
{
    char *found = NULL;
    enum mt_status st;
    size_t n;
    int int8;

    st = gemm_mode(&int8, err);
    if (st != MT_OK)
        return st;
    if (!path) {
        found = mtx_ul_find_weights(err);
        if (!found)
            return err ? err->status : MT_ENOTFOUND;
        path = found;
    }
    st = mtx_ul_model_open(path, &u->model, err);
    if (st == MT_OK)
        mt_log(MT_LOG_DEBUG, "use-lite: loaded %s%s, %s GEMMs", path,
               u->model->int8 ? " (int8 file)" : "",
               int8 ? (mtx_ul_have_vnni() ? "int8 VNNI" : "int8 portable")
                    : "float32");
    mt_free(found);
    if (st == MT_OK && int8 && mtx_ul_quantize(u->model) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "use-lite: int8 weights");
    if (st != MT_OK)
        return st;
    u->batch = p->batch_size ? p->batch_size : DEFAULT_BATCH;
    u->window_pool = p->window_pool;
    snprintf(u->variant, sizeof u->variant, "%s %08x", int8 ? "int8" : "f32",
             ((const struct mt_ul_header *)u->model->map)->checksum);
    if (u->batch > MAX_BATCH)
        u->batch = MAX_BATCH;
    if (p->threads != 1 && mtx_pool_new(p->threads, &u->pool) != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "use-lite: starting %u threads",
                       p->threads);
    n = (u->pool ? mtx_pool_size(u->pool) : 0) + 1;
    u->slots = mt_calloc(n, sizeof *u->slots);
    if (!u->slots)
        return mt_fail(err, MT_ENOMEM, "use-lite: scratch");
    u->n_slots = n;
    return MT_OK;
}

enum mt_status mtx_use_lite_open(const char *path,
                                 const struct mt_embedder_params *params,
                                 struct mt_embedder **out, struct mt_error *err)
{
    struct mt_embedder_params p;
    struct use_lite *u = mt_calloc(1, sizeof *u);
    enum mt_status st;

    if (params)
        p = *params;
    else
        mt_embedder_default_params(&p);
    if (!u)
        return mt_fail(err, MT_ENOMEM, "use-lite embedder");
    pthread_mutex_init(&u->lock, NULL);
    st = ul_load(u, path, &p, err);
    if (st != MT_OK) {
        ul_free(u);
        return st;
    }
    return MTX_MODEL_TAKE(out, &use_lite_ops, u, err);
}
