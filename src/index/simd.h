/* Dot-product kernels for the vector index: int8 (exact int32 result) and
 * float32, in portable C and in AVX2 / AVX-512 forms picked once at run time
 * from what the CPU supports. */
#ifndef MT_INDEX_SIMD_H
#define MT_INDEX_SIMD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mtx_simd_level {
    MT_SIMD_PORTABLE, /* plain C that gcc auto-vectorises */
    MT_SIMD_AVX2,     /* AVX2 + FMA */
    MT_SIMD_AVX512,   /* AVX-512 F/BW/VL + VNNI (vpdpwssd) */
    MT_SIMD_LEVEL_COUNT
};

/* Returns sum a[i]*b[i] over n int8 values, exactly, for any int8 input
 * (including -128); the int32 cannot overflow for n <= 2^17. */
typedef int32_t (*mt_dot_i8_fn)(const int8_t *a, const int8_t *b, size_t n);
/* out[r] = dot(q, rows + r*stride, dims) for r < nrows. */
typedef void (*mt_dot_i8_batch_fn)(const int8_t *q, const int8_t *rows,
                                   size_t stride, size_t nrows, size_t dims,
                                   int32_t *out);
/* Returns sum a[i]*b[i] in float; summation order depends on the kernel, so
 * results may differ between levels in the last bits. */
typedef float (*mt_dot_f32_fn)(const float *a, const float *b, size_t n);
/* Returns sum q[i]*c[i] for a float query and int8 codes (used to re-score
 * with dequantised vectors: multiply by the vector's scale). */
typedef float (*mt_dot_f32_i8_fn)(const float *q, const int8_t *c, size_t n);

struct mt_simd_kernels {
    enum mtx_simd_level level;
    const char *name;
    mt_dot_i8_fn dot_i8;
    mt_dot_i8_batch_fn dot_i8_batch;
    mt_dot_f32_fn dot_f32;
    mt_dot_f32_i8_fn dot_f32_i8;
};

/* Returns the best kernels this CPU supports, chosen once on first call
 * (thread-safe); never NULL. */
const struct mt_simd_kernels *mtx_simd_get(void);

/* Returns the kernels of 'level', or NULL when this CPU (or this build)
 * cannot run them. For tests and benchmarks. */
const struct mt_simd_kernels *mtx_simd_level(enum mtx_simd_level level);

#ifdef __cplusplus
}
#endif
#endif
