/* Embedders for the CLI: the index's callback and per-store defaults. */
#include <string.h>

#include "cli/embedder.h"
#include "core/buf.h"
#include "medtrust/core.h"
#include "model/embed.h"

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
