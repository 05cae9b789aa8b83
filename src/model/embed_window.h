/* Long texts for embedders with a token limit: overlapping windows of
 * tokens and the pooling of their vectors into one, shared by every
 * backend that knows its tokens. */
#ifndef MT_MODEL_EMBED_WINDOW_H
#define MT_MODEL_EMBED_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/model.h"

/* Windows that cover 'len' tokens with at most 'max' a window and
 * 'overlap' (< max) shared between neighbours; 1 for len <= max, and 1
 * whatever the length under MT_EMBED_POOL_FIRST (the first 'max' tokens,
 * what a truncating model sees). */
size_t mtx_embed_windows(size_t len, size_t max, size_t overlap,
                         enum mt_embed_pool mode);

/* Window i of mtx_embed_windows(len, ...): its first token in *off and its
 * length in *n. Windows start every max - overlap tokens; the last one
 * ends at the text's end (so it is full-length and overlaps its
 * predecessor more when the stride does not divide). */
void mtx_embed_window_at(size_t len, size_t max, size_t overlap, size_t i,
                         size_t *off, size_t *n);

/* Pools nwin window vectors (rows of 'dims' in vecs) into out: their mean
 * or their element-wise max, then scaled to unit length (left as it is
 * when all zero). out may be vecs. */
void mtx_embed_pool_vectors(const float *vecs, size_t nwin, uint32_t dims,
                            enum mt_embed_pool mode, float *out);

#endif
