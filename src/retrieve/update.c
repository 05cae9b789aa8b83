/* mt_index_update: an index build with the embedder chosen as `medtrust
 * index` chooses it (moved here from src/cli/cmd_index.c so a program
 * using the library, the Python package, builds the same index). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/retrieve.h"

void mt_index_update_default_params(struct mt_index_update_params *p)
{
    memset(p, 0, sizeof *p);
    mt_index_default_build_params(&p->build);
}

/* The embedder when none is named: an existing index keeps its own (even
 * none); a new one gets $MEDTRUST_EMBEDDER, else the built-in USE-lite,
 * so dense and hybrid search work with no configuration. */
static const char *default_embedder(const char *dir)
{
    char manifest[4200];
    const char *env = getenv("MEDTRUST_EMBEDDER");

    snprintf(manifest, sizeof manifest, "%s/index/MANIFEST", dir);
    if (access(manifest, F_OK) == 0)
        return NULL;
    return env && *env ? env : "use-lite";
}

enum mt_status mt_index_pick_embedder(const char *dir, const char *spec,
                                      uint32_t dims, char *buf, size_t n,
                                      uint32_t *dims_out, struct mt_error *err)
{
    char recorded[4096] = "";
    uint32_t rdims = 0;
    const char *use;
    enum mt_status st =
        mt_index_peek_embedder(dir, recorded, sizeof recorded, &rdims, err);

    if (st != MT_OK)
        return st;
    if (!spec || !*spec)
        spec = default_embedder(dir);
    if (!spec || !*spec)
        spec = recorded[0] ? recorded : NULL;
    use = spec ? spec : "none";
    /* the index's own embedder keeps the index's truncation */
    if (!dims && rdims && strcmp(use, recorded) == 0)
        dims = rdims;
    if (dims && strcmp(use, "none") == 0)
        return mt_fail(err, MT_EINVAL,
                       "--dims truncates chunk vectors, and there is no "
                       "embedder");
    if (strlen(use) >= n)
        return mt_fail(err, MT_ELIMIT, "embedder spec too long: %s", use);
    snprintf(buf, n, "%s", use);
    if (dims_out)
        *dims_out = dims;
    return MT_OK;
}

/* The query embedder to record: the one named, else the index's while its
 * embedder stays. One named is opened once to check that its vectors have
 * the documents' width. */
static enum mt_status
pick_query(struct mt_store *s, const struct mt_index_update_params *p,
           const char *name, const struct mt_embedder_params *ep, uint32_t dims,
           const char **out, char *buf, size_t n, struct mt_error *err)
{
    char rec[4096] = "";
    uint32_t rd = 0;
    struct mt_embedder *q = NULL;
    enum mt_status st = MT_OK;

    buf[0] = '\0';
    if (p->query_embedder_spec) {
        snprintf(buf, n, "%s", p->query_embedder_spec);
    } else if (mt_index_peek_embedder(mt_store_dir(s), rec, sizeof rec, &rd,
                                      NULL) == MT_OK &&
               strcmp(rec, name) == 0) {
        st = mt_index_peek_query_embedder(mt_store_dir(s), buf, n, err);
    }
    *out = buf;
    if (st != MT_OK || !buf[0] || !p->query_embedder_spec)
        return st;
    st = mt_embedder_open(buf, ep, &q, err);
    if (st == MT_OK && mt_embedder_dims(q) != dims)
        st = mt_fail(err, MT_EINVAL,
                     "--query-embedder %s gives %u dimensions, the "
                     "documents' embedder %s %u: an asymmetric pair must "
                     "match",
                     buf, mt_embedder_dims(q), name, dims);
    mt_embedder_close(q);
    return st;
}

enum mt_status mt_index_update(struct mt_store *s,
                               const struct mt_index_update_params *p,
                               struct mt_index_build_result *res,
                               struct mt_error *err)
{
    struct mt_index_build_params bp = p->build;
    struct mt_embedder_params ep;
    struct mt_embedder *e = NULL;
    char name[4096], qname[4096];
    uint32_t dims = 0;
    enum mt_status st =
        mt_index_pick_embedder(mt_store_dir(s), p->embedder_spec, p->dims, name,
                               sizeof name, &dims, err);

    if (st != MT_OK)
        return st;
    bp.embed = NULL;
    bp.embed_user = NULL;
    bp.embedder = NULL;
    bp.dims = 0;
    if (bp.vectors_from && *bp.vectors_from && strcmp(name, "none") == 0)
        return mt_fail(err, MT_EINVAL,
                       "--vectors-from %s: the index has no embedder: name "
                       "the model that made the vectors with --embedder "
                       "(queries are embedded with it)",
                       bp.vectors_from);
    if (strcmp(name, "none") != 0) {
        mt_embedder_default_params(&ep);
        ep.cache_path = p->embed_cache;
        ep.dims = dims; /* Matryoshka: 0 = the embedder's own */
        if (p->embed_jobs) {
            ep.threads = p->embed_jobs;
            ep.batch_size = p->build.embed_batch ? p->build.embed_batch : 64;
            bp.embed_batch = p->embed_jobs * ep.batch_size;
        }
        st = mt_embedder_open(name, &ep, &e, err);
        if (st != MT_OK)
            return st;
        bp.embed = mt_embedder_index_fn;
        bp.embed_user = e;
        bp.dims = mt_embedder_dims(e);
        bp.embedder = name;
    }
    if (st == MT_OK && e)
        st = pick_query(s, p, name, &ep, bp.dims, &bp.query_embedder, qname,
                        sizeof qname, err);
    if (st == MT_OK)
        st = mt_index_build(s, &bp, res, err);
    mt_embedder_close(e);
    return st;
}
