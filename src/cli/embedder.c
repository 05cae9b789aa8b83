/* Embedders for the CLI: the index's callback and per-store defaults. */
#include <string.h>

#include "cli/embedder.h"
#include "core/buf.h"
#include "medtrust/core.h"
#include "model/embed.h"

enum mt_status cli_embed_fn(void *user, const char *const *texts,
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

enum mt_status cli_embedder_for(const char *db, const char *spec,
                                const char *cache_path,
                                struct mt_embedder **out, struct mt_error *err)
{
    struct mt_embedder_params p;
    char recorded[128] = "";
    uint32_t dims = 0;
    enum mt_status st;

    *out = NULL;
    if (spec && strcmp(spec, "none") == 0)
        return MT_OK;
    if (!spec || !*spec) {
        st = mt_index_peek_embedder(db, recorded, sizeof recorded, &dims, err);
        if (st != MT_OK || !recorded[0])
            return st;
        spec = recorded;
    }
    mt_embedder_default_params(&p);
    p.cache_path = cache_path;
    return mt_embedder_open(spec, &p, out, err);
}

enum mt_status cli_embed_query(struct mt_embedder *e, const char *q,
                               float **vec, uint32_t *dims,
                               struct mt_error *err)
{
    struct mt_str s = mt_str_from(q);
    enum mt_status st;

    *dims = mt_embedder_dims(e);
    *vec = mt_calloc(*dims, sizeof **vec);
    if (!*vec)
        return mt_fail(err, MT_ENOMEM, "embedding: out of memory");
    st = mt_embedder_embed(e, &s, 1, *vec, err);
    if (st != MT_OK) {
        mt_free(*vec);
        *vec = NULL;
    }
    return st;
}
