/* The index manifest: which segment files make up the current index. It
 * is JSON, replaced atomically (temp file, fsync, rename, fsync dir), so a
 * reader sees either the old or the new index, never a mix. */
#ifndef MT_INDEX_MANIFEST_H
#define MT_INDEX_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

#define MT_MANIFEST_FORMAT 1
#define MT_SEGMENT_NAME_MAX 32

struct mt_manifest_seg {
    char name[MT_SEGMENT_NAME_MAX]; /* e.g. "seg-000003" */
    uint64_t chunks;
    int64_t max_chunk_id;
    int has_vectors;
};

struct mt_manifest {
    uint64_t generation;
    uint32_t next_seg; /* number for the next new segment */
    char analyzer[32];
    int64_t max_chunk_id; /* every chunk id <= this is indexed */
    /* Owned, any length (an onnx: path or openai:URL#MODEL spec must
     * round-trip whole, or every later build sees a change and rebuilds
     * the vectors); never NULL after mtx_manifest_load() succeeds. */
    char *embedder;       /* "" when the index has no vectors */
    char *query_embedder; /* "" when queries take 'embedder' */
    uint32_t dims;
    struct mt_manifest_seg *segs;
    size_t nsegs;
};

/* Reads DIR/MANIFEST. A missing manifest yields an empty one (MT_OK) and
 * *found = 0. Malformed -> MT_EPARSE naming the file and field. */
enum mt_status mtx_manifest_load(const char *dir, struct mt_manifest *m,
                                 int *found, struct mt_error *err);

/* Writes DIR/MANIFEST atomically. */
enum mt_status mtx_manifest_save(const char *dir, const struct mt_manifest *m,
                                 struct mt_error *err);

/* Replaces the recorded embedder specs with copies of emb and qemb (NULL
 * reads as ""); MT_ENOMEM leaves m unchanged. */
enum mt_status mtx_manifest_set_embedders(struct mt_manifest *m,
                                          const char *emb, const char *qemb);

/* Appends a segment; MT_ENOMEM leaves m unchanged. */
enum mt_status mtx_manifest_add(struct mt_manifest *m,
                                const struct mt_manifest_seg *seg);

void mtx_manifest_free(struct mt_manifest *m);

#endif
