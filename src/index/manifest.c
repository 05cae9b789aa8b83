/* Index manifest: JSON list of segments, replaced atomically. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/file.h"
#include "index/manifest.h"
#include "medtrust/core.h"

/* ==== Encoding ==== */

static json_t *seg_json(const struct mt_manifest_seg *s)
{
    return json_pack("{s:s,s:I,s:I,s:b}", "name", s->name, "chunks",
                     (json_int_t)s->chunks, "max_chunk_id",
                     (json_int_t)s->max_chunk_id, "vectors", s->has_vectors);
}

static json_t *manifest_json(const struct mt_manifest *m)
{
    json_t *segs = json_array();
    json_t *o;
    size_t i;

    for (i = 0; segs && i < m->nsegs; i++)
        if (json_array_append_new(segs, seg_json(&m->segs[i])) != 0) {
            json_decref(segs);
            return NULL;
        }
    if (!segs)
        return NULL;
    o = json_pack("{s:i,s:I,s:i,s:s,s:I,s:s,s:i,s:o}", "format",
                  MT_MANIFEST_FORMAT, "generation", (json_int_t)m->generation,
                  "next_segment", (int)m->next_seg, "analyzer", m->analyzer,
                  "max_chunk_id", (json_int_t)m->max_chunk_id, "embedder",
                  m->embedder, "dims", (int)m->dims, "segments", segs);
    /* written only when set, so an index without one reads as before */
    if (o && m->query_embedder[0] &&
        json_object_set_new(o, "query_embedder",
                            json_string(m->query_embedder)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

enum mt_status mtx_manifest_save(const char *dir, const struct mt_manifest *m,
                                 struct mt_error *err)
{
    json_t *o = manifest_json(m);
    char *txt = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    char path[4096];
    enum mt_status st;

    json_decref(o);
    if (!txt)
        return mt_fail(err, MT_ENOMEM, "%s/MANIFEST: out of memory", dir);
    if (snprintf(path, sizeof path, "%s/MANIFEST", dir) >= (int)sizeof path)
        st = mt_fail(err, MT_EINVAL, "%s/MANIFEST: path too long", dir);
    else
        st = mtx_file_write_atomic(path, txt, strlen(txt), err);
    mt_free(txt);
    return st;
}

/* ==== Decoding ==== */

static enum mt_status bad(const char *dir, const char *what,
                          struct mt_error *err)
{
    return mt_fail(err, MT_EPARSE,
                   "%s/MANIFEST: %s; rebuild the index with 'medtrust index "
                   "--rebuild'",
                   dir, what);
}

static enum mt_status load_seg(const char *dir, json_t *js,
                               struct mt_manifest *m, struct mt_error *err)
{
    struct mt_manifest_seg s;
    const char *name = NULL;
    json_int_t chunks = 0;
    json_int_t maxid = 0;
    int vec = 0;

    memset(&s, 0, sizeof s);
    if (json_unpack(js, "{s:s,s:I,s:I,s?b}", "name", &name, "chunks", &chunks,
                    "max_chunk_id", &maxid, "vectors", &vec) != 0 ||
        strlen(name) >= sizeof s.name || strchr(name, '/') || chunks < 0)
        return bad(dir, "a segment entry is malformed", err);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.chunks = (uint64_t)chunks;
    s.max_chunk_id = maxid;
    s.has_vectors = vec;
    if (mtx_manifest_add(m, &s) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "%s/MANIFEST: out of memory", dir);
    return MT_OK;
}

static enum mt_status load_json(const char *dir, json_t *o,
                                struct mt_manifest *m, struct mt_error *err)
{
    int format = 0, next = 0, dims = 0;
    json_int_t gen = 0, maxid = 0;
    const char *an = NULL, *emb = "";
    json_t *segs = NULL;
    size_t i;
    enum mt_status st = MT_OK;

    if (json_unpack(o, "{s:i,s:I,s:i,s:s,s:I,s?s,s?i,s:o}", "format", &format,
                    "generation", &gen, "next_segment", &next, "analyzer", &an,
                    "max_chunk_id", &maxid, "embedder", &emb, "dims", &dims,
                    "segments", &segs) != 0 ||
        !json_is_array(segs) || next < 0 || dims < 0)
        return bad(dir, "a required field is missing or has the wrong type",
                   err);
    if (format != MT_MANIFEST_FORMAT)
        return bad(dir, "unsupported manifest format", err);
    m->generation = (uint64_t)gen;
    m->next_seg = (uint32_t)next;
    m->max_chunk_id = maxid;
    m->dims = (uint32_t)dims;
    snprintf(m->analyzer, sizeof m->analyzer, "%s", an);
    if (mtx_manifest_set_embedders(
            m, emb, json_string_value(json_object_get(o, "query_embedder"))) !=
        MT_OK)
        return mt_fail(err, MT_ENOMEM, "%s/MANIFEST: out of memory", dir);
    for (i = 0; st == MT_OK && i < json_array_size(segs); i++)
        st = load_seg(dir, json_array_get(segs, i), m, err);
    return st;
}

enum mt_status mtx_manifest_load(const char *dir, struct mt_manifest *m,
                                 int *found, struct mt_error *err)
{
    char path[4096];
    json_error_t je;
    json_t *o;
    enum mt_status st;

    memset(m, 0, sizeof *m);
    m->next_seg = 1;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    *found = access(path, F_OK) == 0;
    if (mtx_manifest_set_embedders(m, "", "") != MT_OK)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    if (!*found)
        return MT_OK;
    o = json_load_file(path, 0, &je);
    if (!o)
        return mt_fail(err, MT_EPARSE, "%s:%d: %s", path, je.line, je.text);
    st = load_json(dir, o, m, err);
    json_decref(o);
    if (st != MT_OK)
        mtx_manifest_free(m);
    return st;
}

enum mt_status mtx_manifest_set_embedders(struct mt_manifest *m,
                                          const char *emb, const char *qemb)
{
    char *e = mt_strdup(emb ? emb : "");
    char *q = mt_strdup(qemb ? qemb : "");

    if (!e || !q) {
        mt_free(e);
        mt_free(q);
        return MT_ENOMEM;
    }
    mt_free(m->embedder);
    mt_free(m->query_embedder);
    m->embedder = e;
    m->query_embedder = q;
    return MT_OK;
}

enum mt_status mtx_manifest_add(struct mt_manifest *m,
                                const struct mt_manifest_seg *seg)
{
    struct mt_manifest_seg *p = mt_realloc(m->segs, (m->nsegs + 1) * sizeof *p);

    if (!p)
        return MT_ENOMEM;
    p[m->nsegs++] = *seg;
    m->segs = p;
    return MT_OK;
}

void mtx_manifest_free(struct mt_manifest *m)
{
    mt_free(m->segs);
    m->segs = NULL;
    m->nsegs = 0;
    mt_free(m->embedder);
    mt_free(m->query_embedder);
    m->embedder = NULL;
    m->query_embedder = NULL;
}
