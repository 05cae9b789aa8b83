/* Dense vectors of index segments: batched embedding during a build
 * (through the caller's callback), flat int8 sets for small segments and
 * HNSW graphs for large ones, and their search. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "index/hnsw.h"
#include "index/index_int.h"
#include "index/vec.h"
#include "medtrust/core.h"

#define DEFAULT_BATCH 64

static const char *const store_names[] = {"int8r", "int8", "float32", "int8r2"};
#define NSTORES (sizeof store_names / sizeof store_names[0])

enum mt_status mt_vec_store_parse(const char *s, enum mt_vec_store *out)
{
    size_t i;

    for (i = 0; i < NSTORES; i++)
        if (strcmp(s, store_names[i]) == 0) {
            *out = (enum mt_vec_store)i;
            return MT_OK;
        }
    return MT_EINVAL;
}

const char *mt_vec_store_str(enum mt_vec_store v)
{
    return (unsigned)v < NSTORES ? store_names[v] : "unknown";
}

enum mt_status mtx_vbuild_init(struct mt_vbuild *v,
                               const struct mt_index_build_params *p,
                               struct mt_error *err)
{
    struct mt_vecset_params vp = mtx_vecset_default_params();

    memset(v, 0, sizeof *v);
    if (!p->embed)
        return MT_OK;
    if (p->dims == 0 || p->dims > MT_VEC_MAX_DIMS)
        return mt_fail(err, MT_EINVAL, "embedder dimension %u is invalid",
                       p->dims);
    if ((unsigned)p->vec_store >= NSTORES)
        return mt_fail(err, MT_EINVAL, "vector store kind %u is invalid",
                       (unsigned)p->vec_store);
    /* The float copies re-score exactly, so the residual would be dead
     * weight beside them. */
    vp.refine = p->vec_store == MT_VEC_STORE_RESIDUAL ||
                p->vec_store == MT_VEC_STORE_RESIDUAL2;
    vp.refine_bits = p->vec_store == MT_VEC_STORE_RESIDUAL2 ? 2 : 4;
    vp.keep_float = p->vec_store == MT_VEC_STORE_FLOAT;
    v->fn = p->embed;
    v->user = p->embed_user;
    v->dims = p->dims;
    v->batch = p->embed_batch ? p->embed_batch : DEFAULT_BATCH;
    v->texts = mt_calloc(v->batch, sizeof *v->texts);
    v->lens = mt_calloc(v->batch, sizeof *v->lens);
    v->out = mt_calloc((size_t)v->batch * v->dims, sizeof *v->out);
    v->arena = mt_calloc(1, sizeof *v->arena);
    if (!v->texts || !v->lens || !v->out || !v->arena ||
        mtx_vecset_new(v->dims, &vp, &v->vs) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "index build: out of memory");
    *v->arena = MT_ARENA_INIT(256 * 1024);
    return MT_OK;
}

enum mt_status mtx_vbuild_flush(struct mt_vbuild *v, struct mt_error *err)
{
    size_t i;
    enum mt_status st;

    if (!v->fn || v->n == 0)
        return MT_OK;
    st = v->fn(v->user, v->texts, v->lens, v->n, v->out, err);
    for (i = 0; st == MT_OK && i < v->n; i++)
        st = mtx_vecset_add(v->vs, v->out + i * v->dims, NULL);
    if (st == MT_ENOMEM)
        st = mt_fail(err, st, "index build: out of memory");
    v->n = 0;
    mtx_arena_reset(v->arena);
    return st;
}

/* A precomputed vector, checked as the embedder's would be. */
static enum mt_status add_given(struct mt_vbuild *v, int64_t chunk_id,
                                struct mt_error *err)
{
    enum mt_status st = mtx_vimport_get(v->vi, chunk_id, v->out, err);

    if (st != MT_OK)
        return st;
    st = mtx_vecset_add(v->vs, v->out, NULL);
    if (st == MT_EINVAL)
        return mt_fail(err, st,
                       "--vectors-from: the vector of chunk id %lld is zero "
                       "or not finite",
                       (long long)chunk_id);
    if (st != MT_OK)
        return mt_fail(err, st, "index build: %s", mt_status_str(st));
    return MT_OK;
}

enum mt_status mtx_vbuild_add(struct mt_vbuild *v, int64_t chunk_id,
                              const char *title, const char *text, size_t len,
                              struct mt_error *err)
{
    size_t tl = title ? strlen(title) : 0;
    char *p;

    if (!v->fn)
        return MT_OK;
    if (v->vi)
        return add_given(v, chunk_id, err);
    p = mtx_arena_alloc(v->arena, tl + 2 + len + 1);
    if (!p)
        return mt_fail(err, MT_ENOMEM, "index build: out of memory");
    /* The title leads, as the chunk's context for the embedder. */
    if (tl) {
        memcpy(p, title, tl);
        memcpy(p + tl, ". ", 2);
        tl += 2;
    }
    memcpy(p + tl, text, len);
    p[tl + len] = '\0';
    v->texts[v->n] = p;
    v->lens[v->n++] = tl + len;
    return v->n == v->batch ? mtx_vbuild_flush(v, err) : MT_OK;
}

enum mt_status mtx_vbuild_write(struct mt_vbuild *v, const char *idir,
                                const char *name,
                                const struct mt_index_build_params *p,
                                struct mt_error *err)
{
    struct mt_hnsw_params hp = mtx_hnsw_default_params();
    struct mt_hnsw *h = NULL;
    char path[4096];
    enum mt_status st;

    if (!v->fn)
        return MT_OK;
    hp.threads = p->hnsw_threads;
    if (mtx_vecset_count(v->vs) < p->hnsw_min) {
        mtx_index_seg_path(idir, name, "vec", path, sizeof path);
        return mtx_vecset_write(v->vs, path, err);
    }
    st = mtx_hnsw_build(v->vs, &hp, &h);
    if (st != MT_OK)
        return mt_fail(err, st, "building the HNSW graph of %s: %s", name,
                       mt_status_str(st));
    mtx_index_seg_path(idir, name, "hnsw", path, sizeof path);
    st = mtx_hnsw_write(h, path, err);
    mtx_hnsw_free(h);
    return st;
}

void mtx_vbuild_free(struct mt_vbuild *v)
{
    mtx_vecset_free(v->vs);
    mt_free(v->texts);
    mt_free(v->lens);
    mt_free(v->out);
    if (v->arena)
        mtx_arena_free(v->arena);
    mt_free(v->arena);
    memset(v, 0, sizeof *v);
}

/* ==== Search side ==== */

enum mt_status mtx_vseg_open(const char *idir, const char *name, uint32_t dims,
                             struct mt_vseg *out, struct mt_error *err)
{
    char path[4096];
    enum mt_status st;
    uint32_t got;

    memset(out, 0, sizeof *out);
    mtx_index_seg_path(idir, name, "hnsw", path, sizeof path);
    if (access(path, F_OK) == 0) {
        st = mtx_hnsw_open(path, &out->h, err);
        got = st == MT_OK ? mtx_vecset_dims(mtx_hnsw_vecset(out->h)) : 0;
    } else {
        mtx_index_seg_path(idir, name, "vec", path, sizeof path);
        st = mtx_vecset_open(path, &out->vs, err);
        got = st == MT_OK ? mtx_vecset_dims(out->vs) : 0;
    }
    if (st == MT_OK && got != dims)
        st = mt_fail(err, MT_EPARSE,
                     "%s: vectors of %u dimensions, the "
                     "manifest says %u",
                     path, got, dims);
    return st;
}

uint32_t mtx_vseg_count(const struct mt_vseg *v)
{
    if (v->h)
        return mtx_hnsw_count(v->h);
    return v->vs ? mtx_vecset_count(v->vs) : 0;
}

enum mt_status mtx_vseg_check(const struct mt_vseg *v,
                              void (*step)(uint64_t bytes, void *user),
                              void *user, struct mt_error *err)
{
    if (v->h)
        return mtx_hnsw_check(v->h, step, user, err);
    return v->vs ? mtx_vecset_check(v->vs, step, user, err) : MT_OK;
}

uint64_t mtx_vseg_check_bytes(const struct mt_vseg *v)
{
    if (v->h)
        return mtx_hnsw_check_bytes(v->h);
    return v->vs ? mtx_vecset_check_bytes(v->vs) : 0;
}

enum mt_status mtx_vseg_search(const struct mt_vseg *v, const float *q,
                               uint32_t k, uint32_t ef,
                               const struct mt_vec_filter *filter,
                               uint32_t accepted, struct mt_vec_hit *hits,
                               uint32_t *n)
{
    *n = 0;
    if (v->h && filter && accepted < mtx_hnsw_count(v->h) / 10)
        return mtx_vecset_search_flat(mtx_hnsw_vecset(v->h), q, k, filter, hits,
                                      n);
    if (v->h)
        return mtx_hnsw_search(v->h, q, k, ef, filter, hits, n);
    if (v->vs)
        return mtx_vecset_search_flat(v->vs, q, k, filter, hits, n);
    return MT_OK;
}

void mtx_vseg_close(struct mt_vseg *v)
{
    mtx_hnsw_free(v->h);
    mtx_vecset_free(v->vs);
    memset(v, 0, sizeof *v);
}
