/* Overlapping token windows of long texts and the pooling of their
 * vectors (mean by default, max as an option): a text longer than the
 * model's limit is no longer cut to its first window. */
#include <math.h>
#include <string.h>

#include "model/embed_window.h"

size_t mtx_embed_windows(size_t len, size_t max, size_t overlap,
                         enum mt_embed_pool mode)
{
    size_t stride = max > overlap ? max - overlap : 1;

    if (len <= max || mode == MT_EMBED_POOL_FIRST)
        return 1;
    return 1 + (len - max + stride - 1) / stride;
}

void mtx_embed_window_at(size_t len, size_t max, size_t overlap, size_t i,
                         size_t *off, size_t *n)
{
    size_t stride = max > overlap ? max - overlap : 1;
    size_t start = i * stride;

    if (len <= max) {
        *off = 0;
        *n = len;
        return;
    }
    if (start + max > len) /* the last window ends at the end */
        start = len - max;
    *off = start;
    *n = max;
}

void mtx_embed_pool_vectors(const float *vecs, size_t nwin, uint32_t dims,
                            enum mt_embed_pool mode, float *out)
{
    double ss = 0.0;
    size_t w;
    uint32_t j;

    for (j = 0; j < dims; j++) {
        float acc = vecs[j];
        for (w = 1; w < nwin; w++) {
            float v = vecs[w * dims + j];
            if (mode == MT_EMBED_POOL_MAX)
                acc = v > acc ? v : acc;
            else
                acc += v;
        }
        out[j] = mode == MT_EMBED_POOL_MAX ? acc : acc / (float)nwin;
        ss += (double)out[j] * (double)out[j];
    }
    if (ss > 0.0)
        for (j = 0; j < dims; j++)
            out[j] = (float)((double)out[j] / sqrt(ss));
}
