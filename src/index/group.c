/* Search hits grouped by document, as VerifAI lists them: each document
 * once, at the place of its best passage, its other passages after it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "medtrust/index.h"

static const struct mt_search_hit *sort_hits; /* qsort has no user arg */

static int cmp_doc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(sort_hits[i].doc_id, sort_hits[j].doc_id);

    if (c)
        return c;
    return i < j ? -1 : i > j;
}

enum mt_status mt_search_group(const struct mt_search_result *r, size_t *lead,
                               size_t *ngroups)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    size_t *idx = mt_malloc((r->n ? r->n : 1) * sizeof *idx);
    size_t i, first = 0;

    *ngroups = 0;
    if (!idx)
        return MT_ENOMEM;
    for (i = 0; i < r->n; i++)
        idx[i] = i;
    /* ordered by document, then by rank: a run's first is its best hit */
    pthread_mutex_lock(&mu);
    sort_hits = r->hits;
    qsort(idx, r->n, sizeof *idx, cmp_doc);
    pthread_mutex_unlock(&mu);
    for (i = 0; i < r->n; i++) {
        if (i == 0 ||
            strcmp(r->hits[idx[i]].doc_id, r->hits[idx[first]].doc_id) != 0) {
            first = i;
            ++*ngroups;
        }
        lead[idx[i]] = idx[first];
    }
    mt_free(idx);
    return MT_OK;
}
