/* The one model handle: allocation, ownership of the backend state, and
 * the call cache, for every kind of model. */
#include <string.h>

#include "medtrust/core.h"
#include "model/cache.h"
#include "model/handle.h"

void *mtx_model_new_take(const struct mtx_model_ops *ops, void *self,
                         size_t size, struct mt_error *err)
{
    struct mtx_model *m = mt_calloc(1, size);

    if (!m) {
        ops->free(self);
        mt_fail(err, MT_ENOMEM, "out of memory");
        return NULL;
    }
    m->ops = ops;
    m->self = self;
    return m;
}

enum mt_status mtx_model_cache_open(struct mtx_model *m, const char *path,
                                    const char *model, struct mt_error *err)
{
    enum mt_status st;

    m->cache_model = mt_strdup(model ? model : m->ops->model(m->self));
    st = m->cache_model ? mtx_cache_open(path, &m->cache, err)
                        : mt_fail(err, MT_ENOMEM, "out of memory");
    if (st != MT_OK)
        mtx_model_close(m);
    return st;
}

int mtx_model_cache_get(const struct mtx_model *m, const char *key, char **v,
                        size_t *n)
{
    return m->cache && mtx_cache_get(m->cache, m->ops->name, m->cache_model,
                                     key, v, n, NULL) == MT_OK;
}

enum mt_status mtx_model_cache_put(const struct mtx_model *m, const char *key,
                                   const void *v, size_t n,
                                   struct mt_error *err)
{
    if (!m->cache)
        return MT_OK;
    return mtx_cache_put(m->cache, m->ops->name, m->cache_model, key, v, n,
                         err);
}

enum mt_status mtx_model_cache_put_many(const struct mtx_model *m, size_t n,
                                        const char *const *keys,
                                        const void *const *v,
                                        const size_t *lens,
                                        struct mt_error *err)
{
    if (!m->cache)
        return MT_OK;
    return mtx_cache_put_many(m->cache, m->ops->name, m->cache_model, n, keys,
                              v, lens, err);
}

void mtx_model_close(struct mtx_model *m)
{
    if (!m)
        return;
    if (m->ops && m->self)
        m->ops->free(m->self);
    mtx_cache_close(m->cache);
    mt_free(m->cache_model);
    mt_free(m);
}
