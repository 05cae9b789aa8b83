/* Search hits as JSON (retrieve layer): the objects `medtrust search
 * --json` prints and POST /v1/search answers, one hit each or grouped by
 * document. One writer for both, so the CLI and the API list the same
 * members in the same order. Names: mtx_ (internal). */
#ifndef MTX_RETRIEVE_HITS_JSON_H
#define MTX_RETRIEVE_HITS_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "medtrust/retrieve.h"

/* {"rank","doc_id","chunk_id","score","title","text","source"}, then
 * "url" (null when url is NULL) when with_url is set. NULL when out of
 * memory. */
json_t *mtx_hit_json(const struct mt_search_hit *h, int with_url,
                     const char *url);

/* The hits grouped by document (mt_search_group), at most k groups (0:
 * every one): each the document's best hit, its "rank" among the
 * documents, with "more", its other passages ({"rank","chunk_id","score",
 * "text"}). urls: NULL for no "url" member, else hit i's link (or NULL).
 * NULL when out of memory. */
json_t *mtx_hits_groups_json(const struct mt_search_result *r, size_t k,
                             char *const *urls);

#endif
