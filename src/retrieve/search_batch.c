/* The search batch: JSONL queries embedded in batches, searched in
 * parallel through the retriever (its pool of index handles), results in
 * input order (moved here from src/cli/batch.c, issue 33). */
#include <pthread.h>
#include <string.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "core/pool.h"
#include "medtrust/core.h"
#include "retrieve/search_batch.h"

#define BLOCK 256
#define EMBED_BATCH 64

static char *id_string(json_t *v)
{
    char buf[32];

    if (json_is_string(v))
        return mt_strdup(json_string_value(v));
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        return mt_strdup(buf);
    }
    return NULL;
}

static enum mt_status load_rel(struct mtx_query *q, json_t *rel)
{
    size_t i;

    if (!json_is_array(rel) || json_array_size(rel) == 0)
        return MT_OK;
    q->relevant = mt_calloc(json_array_size(rel), sizeof *q->relevant);
    if (!q->relevant)
        return MT_ENOMEM;
    for (i = 0; i < json_array_size(rel); i++) {
        q->relevant[i] = id_string(json_array_get(rel, i));
        if (!q->relevant[i])
            return MT_EPARSE;
        q->nrel++;
    }
    return MT_OK;
}

static enum mt_status load_one(const char *path, struct mt_jsonl *r, json_t *o,
                               struct mtx_query *q, struct mt_error *err)
{
    json_t *text = json_object_get(o, "query");
    enum mt_status st;

    memset(q, 0, sizeof *q);
    q->id = id_string(json_object_get(o, "id"));
    if (!q->id || !json_is_string(text))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: need \"id\" and a string \"query\"", path,
                       mtx_jsonl_line(r));
    q->query = mt_strdup(json_string_value(text));
    st = q->query ? load_rel(q, json_object_get(o, "relevant")) : MT_ENOMEM;
    if (st == MT_EPARSE)
        return mt_fail(err, st, "%s:%zu: \"relevant\" must hold ids", path,
                       mtx_jsonl_line(r));
    if (st != MT_OK)
        return mt_fail(err, st, "%s: out of memory", path);
    return MT_OK;
}

enum mt_status mtx_queries_load(const char *path, struct mtx_query **out,
                                size_t *n, struct mt_error *err)
{
    struct mt_jsonl *r = NULL;
    struct mtx_query *v = NULL;
    size_t cnt = 0, cap = 0;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(path, NULL, &r, err);

    while (st == MT_OK && (st = mtx_jsonl_next(r, &o, err)) == MT_OK && o) {
        st = mtx_grow((void **)&v, &cap, cnt + 1, sizeof *v);
        if (st != MT_OK) {
            st = mt_fail(err, st, "%s: out of memory", path);
            break;
        }
        st = load_one(path, r, o, &v[cnt], err);
        cnt++;
    }
    mtx_jsonl_close(r);
    if (st != MT_OK) {
        mtx_queries_free(v, cnt);
        return st;
    }
    *out = v;
    *n = cnt;
    return MT_OK;
}

void mtx_queries_free(struct mtx_query *q, size_t n)
{
    size_t i, j;

    for (i = 0; q && i < n; i++) {
        mt_free(q[i].id);
        mt_free(q[i].query);
        for (j = 0; j < q[i].nrel; j++)
            mt_free(q[i].relevant[j]);
        mt_free(q[i].relevant);
        mt_free(q[i].vec);
    }
    mt_free(q);
}

static enum mt_status embed_some(struct mtx_query *q, size_t n,
                                 struct mt_retriever *ret, uint32_t dims,
                                 struct mt_error *err)
{
    struct mt_str s[EMBED_BATCH];
    float *out = mt_calloc(n * dims, sizeof *out);
    size_t i;
    enum mt_status st;

    if (!out)
        return mt_fail(err, MT_ENOMEM, "embedding: out of memory");
    for (i = 0; i < n; i++)
        s[i] = mtx_str_from(q[i].query);
    st = mt_retriever_embed(ret, s, n, out, err);
    for (i = 0; st == MT_OK && i < n; i++) {
        q[i].vec = mt_malloc(dims * sizeof *q[i].vec);
        if (!q[i].vec) {
            st = mt_fail(err, MT_ENOMEM, "embedding: out of memory");
            break;
        }
        memcpy(q[i].vec, out + i * dims, dims * sizeof *out);
    }
    mt_free(out);
    return st;
}

static enum mt_status embed_all(struct mtx_query *q, size_t n,
                                struct mt_retriever *ret, struct mt_error *err)
{
    uint32_t dims = mt_retriever_dims(ret);
    size_t i;
    enum mt_status st = MT_OK;

    if (dims == 0)
        return MT_OK; /* no embedder: each search says what is missing */
    for (i = 0; st == MT_OK && i < n; i += EMBED_BATCH)
        st = embed_some(q + i, n - i < EMBED_BATCH ? n - i : EMBED_BATCH, ret,
                        dims, err);
    return st;
}

/* ==== Parallel runner ==== */

struct runner {
    struct mt_retriever *ret;
    const struct mtx_query *q;
    const struct mtx_search_batch_params *p;
    struct mt_search_params search;
    size_t base, n, done;
    pthread_mutex_t mu; /* guards done and serializes on_progress */
    struct mt_search_result **res;
    enum mt_status *st;
    struct mt_error *errs;
    uint32_t dims; /* of the query vectors */
};

static void search_one(size_t i, void *arg)
{
    struct runner *r = arg;
    struct mt_search_params p = r->search;
    size_t qi = r->base + i;

    p.query_vec = r->q[qi].vec;
    p.query_dims = r->q[qi].vec ? r->dims : 0;
    r->res[i] = NULL;
    r->st[i] = mt_retriever_search(r->ret, r->q[qi].query, &p, &r->res[i],
                                   &r->errs[i]);
    if (!r->p->on_progress)
        return;
    pthread_mutex_lock(&r->mu);
    r->p->on_progress(r->p->user, ++r->done, r->n);
    pthread_mutex_unlock(&r->mu);
}

static void run_block(struct runner *r, struct mt_pool *pool, size_t n)
{
    size_t i;

    mtx_pool_parallel_for(pool, n, search_one, r);
    for (i = 0; i < n; i++) {
        if (r->p->on_result)
            r->p->on_result(r->p->user, &r->q[r->base + i], r->base + i,
                            r->res[i], r->st[i], &r->errs[i]);
        mt_search_result_free(r->res[i]);
    }
}

static enum mt_status start(struct runner *r, struct mt_pool **pool,
                            struct mt_error *err)
{
    enum mt_status st = mtx_pool_new(r->p->jobs, pool);

    if (st != MT_OK)
        return mt_fail(err, st, "cannot start %u threads", r->p->jobs);
    r->res = mt_calloc(BLOCK, sizeof *r->res);
    r->st = mt_calloc(BLOCK, sizeof *r->st);
    r->errs = mt_calloc(BLOCK, sizeof *r->errs);
    if (!r->res || !r->st || !r->errs)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

void mtx_search_batch_default_params(struct mtx_search_batch_params *p)
{
    memset(p, 0, sizeof *p);
}

enum mt_status mtx_search_batch_run(struct mt_retriever *ret,
                                    struct mtx_query *q, size_t n,
                                    const struct mtx_search_batch_params *p,
                                    struct mt_error *err)
{
    struct runner r;
    struct mt_pool *pool = NULL;
    enum mt_status st = embed_all(q, n, ret, err);

    if (st != MT_OK)
        return st;
    memset(&r, 0, sizeof r);
    r.ret = ret;
    r.q = q;
    r.p = p;
    r.n = n;
    if (p->search)
        r.search = *p->search;
    else
        mt_search_default_params(&r.search);
    r.dims = mt_retriever_dims(ret);
    pthread_mutex_init(&r.mu, NULL);
    st = start(&r, &pool, err);
    for (r.base = 0; st == MT_OK && r.base < n; r.base += BLOCK)
        run_block(&r, pool, n - r.base < BLOCK ? n - r.base : BLOCK);
    pthread_mutex_destroy(&r.mu);
    mt_free(r.res);
    mt_free(r.st);
    mt_free(r.errs);
    mtx_pool_free(pool);
    return st;
}
