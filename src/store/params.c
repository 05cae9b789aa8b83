/* The store's settings table (mt_store_param_table): the chunker's numeric
 * knobs of struct mt_store_params that `index` and `import` take for a new
 * store, with their CLI options and help; the defaults are
 * mt_store_default_params'. No HTTP request sets them. */
#include <stddef.h>

#include "medtrust/store.h"

#define P(member) offsetof(struct mt_store_params, member)

static const struct mt_param store_params[] = {
    {"chunk-size", NULL, P(chunk_size), MT_PARAM_U32, 1, 1000000, 0, "N",
     "chunk size in characters for a new store", NULL},
    {"chunk-overlap", NULL, P(chunk_overlap), MT_PARAM_U32, 0, 999999, 0, "N",
     "chunk overlap in characters for a new store, below --chunk-size", NULL},
};

static void defaults(void *p)
{
    mt_store_default_params(p);
}

const struct mt_param_table mt_store_param_table = {
    "mt_store_params", store_params,
    sizeof store_params / sizeof store_params[0],
    sizeof(struct mt_store_params), defaults};
