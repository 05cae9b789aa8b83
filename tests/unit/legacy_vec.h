/* Test helper: the vectors of tests/unit/legacy/v1.vec and v1.hnsw, which
 * mtx_vecset_write and mtx_hnsw_write wrote in the format before the segment
 * container (commit 099b174): 48 vectors of 16 dimensions; v1.vec keeps
 * floats, v1.hnsw is a default set indexed with M 4. */
#ifndef MT_TEST_LEGACY_VEC_H
#define MT_TEST_LEGACY_VEC_H

#include <stdint.h>

#define LEGACY_N 48
#define LEGACY_DIMS 16

/* Writes vector i (0..47) into v[16]. */
static inline void legacy_vec(uint32_t i, float *v)
{
    uint32_t j;
    for (j = 0; j < LEGACY_DIMS; j++)
        v[j] = (float)((i + 1) * (j + 3) % 19) - 9.0f +
               (j == i % 16 ? 4.0f : 0.0f);
}

#endif
