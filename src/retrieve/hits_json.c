/* Search hits as JSON (retrieve/hits_json.h). */
#include "medtrust/core.h"
#include "retrieve/hits_json.h"

json_t *mtx_hit_json(const struct mt_search_hit *h, int with_url,
                     const char *url)
{
    if (!with_url)
        return json_pack("{s:i,s:s,s:I,s:f,s:s?,s:s,s:s}", "rank", (int)h->rank,
                         "doc_id", h->doc_id, "chunk_id",
                         (json_int_t)h->chunk_id, "score", h->score, "title",
                         h->title, "text", h->text, "source", h->source);
    return json_pack(
        "{s:i,s:s,s:I,s:f,s:s?,s:s,s:s,s:s?}", "rank", (int)h->rank, "doc_id",
        h->doc_id, "chunk_id", (json_int_t)h->chunk_id, "score", h->score,
        "title", h->title, "text", h->text, "source", h->source, "url", url);
}

/* Group i's lead hit with "rank" n and "more" (the hits led by i). */
static json_t *group_json(const struct mt_search_result *r, const size_t *lead,
                          size_t i, size_t n, char *const *urls)
{
    json_t *more = json_array();
    json_t *h = mtx_hit_json(&r->hits[i], urls != NULL, urls ? urls[i] : NULL);
    size_t j;

    for (j = i + 1; h && more && j < r->n; j++)
        if (lead[j] == i)
            json_array_append_new(
                more,
                json_pack("{s:i,s:I,s:f,s:s}", "rank", (int)r->hits[j].rank,
                          "chunk_id", (json_int_t)r->hits[j].chunk_id, "score",
                          r->hits[j].score, "text", r->hits[j].text));
    json_object_set_new(h, "rank", json_integer((json_int_t)n));
    json_object_set_new(h, "more", more);
    return h;
}

json_t *mtx_hits_groups_json(const struct mt_search_result *r, size_t k,
                             char *const *urls)
{
    size_t *lead = mt_malloc((r->n ? r->n : 1) * sizeof *lead);
    json_t *a = lead ? json_array() : NULL;
    size_t i, n = 0, ng = 0;

    if (a && mt_search_group(r, lead, &ng) != MT_OK) {
        json_decref(a);
        a = NULL;
    }
    for (i = 0; a && i < r->n && (!k || n < k); i++)
        if (lead[i] == i)
            json_array_append_new(a, group_json(r, lead, i, ++n, urls));
    mt_free(lead);
    return a;
}
