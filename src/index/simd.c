/* Dot-product kernels: portable C (auto-vectorised), AVX2 and AVX-512 via
 * target attributes, and a once-only runtime choice among them. The int8
 * kernels widen to int16 and use madd, so they are exact for all int8. */
#include <pthread.h>

#include "index/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define MT_SIMD_X86 1
#include <immintrin.h>
#else
#define MT_SIMD_X86 0
#endif

/* ==== Portable ==== */

/* Fixed 16-wide inner loops let gcc's cheap vectoriser turn them into SIMD
 * without -ffast-math; the float lane order is fixed, so results are
 * deterministic. */
static int32_t dot_i8_portable(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t acc[16] = {0};
    int32_t s = 0;
    size_t i = 0;
    size_t j;

    for (; i + 16 <= n; i += 16)
        for (j = 0; j < 16; j++)
            acc[j] += (int32_t)a[i + j] * (int32_t)b[i + j];
    for (j = 0; j < 16; j++)
        s += acc[j];
    for (; i < n; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

static void dot_i8_batch_portable(const int8_t *q, const int8_t *rows,
                                  size_t stride, size_t nrows, size_t dims,
                                  int32_t *out)
{
    size_t r;

    for (r = 0; r < nrows; r++)
        out[r] = dot_i8_portable(q, rows + r * stride, dims);
}

static float dot_f32_portable(const float *a, const float *b, size_t n)
{
    float acc[8] = {0};
    float s = 0.0f;
    size_t i = 0;
    size_t j;

    for (; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    for (j = 0; j < 8; j++)
        s += acc[j];
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static float dot_f32_i8_portable(const float *q, const int8_t *c, size_t n)
{
    float acc[8] = {0};
    float s = 0.0f;
    size_t i = 0;
    size_t j;

    for (; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++)
            acc[j] += q[i + j] * (float)c[i + j];
    for (j = 0; j < 8; j++)
        s += acc[j];
    for (; i < n; i++)
        s += q[i] * (float)c[i];
    return s;
}

static const struct mt_simd_kernels k_portable = {
    MT_SIMD_PORTABLE,      "portable",       dot_i8_portable,
    dot_i8_batch_portable, dot_f32_portable, dot_f32_i8_portable,
};

#if MT_SIMD_X86
/* ==== AVX2 ==== */

#define AVX2_T __attribute__((target("avx2,fma")))

AVX2_T static inline __m256i load_i8x16_avx2(const int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}

AVX2_T static inline int32_t hsum_i32_avx2(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
                              _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

AVX2_T static inline int32_t dot_i8_avx2(const int8_t *a, const int8_t *b,
                                         size_t n)
{
    __m256i acc0 = _mm256_setzero_si256();
    __m256i acc1 = _mm256_setzero_si256();
    size_t i = 0;
    int32_t s;

    for (; i + 32 <= n; i += 32) {
        acc0 =
            _mm256_add_epi32(acc0, _mm256_madd_epi16(load_i8x16_avx2(a + i),
                                                     load_i8x16_avx2(b + i)));
        acc1 = _mm256_add_epi32(acc1,
                                _mm256_madd_epi16(load_i8x16_avx2(a + i + 16),
                                                  load_i8x16_avx2(b + i + 16)));
    }
    if (i + 16 <= n) {
        acc0 =
            _mm256_add_epi32(acc0, _mm256_madd_epi16(load_i8x16_avx2(a + i),
                                                     load_i8x16_avx2(b + i)));
        i += 16;
    }
    s = hsum_i32_avx2(_mm256_add_epi32(acc0, acc1));
    for (; i < n; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

AVX2_T static int32_t dot_i8_avx2_fn(const int8_t *a, const int8_t *b, size_t n)
{
    return dot_i8_avx2(a, b, n);
}

AVX2_T static void dot_i8_batch_avx2(const int8_t *q, const int8_t *rows,
                                     size_t stride, size_t nrows, size_t dims,
                                     int32_t *out)
{
    size_t r;

    for (r = 0; r < nrows; r++)
        out[r] = dot_i8_avx2(q, rows + r * stride, dims);
}

AVX2_T static inline float hsum_f32_avx2(__m256 v)
{
    __m128 s =
        _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2_T static float dot_f32_avx2(const float *a, const float *b, size_t n)
{
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    size_t i = 0;
    float s;

    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                               acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
                               _mm256_loadu_ps(b + i + 8), acc1);
    }
    if (i + 8 <= n) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                               acc0);
        i += 8;
    }
    s = hsum_f32_avx2(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

AVX2_T static float dot_f32_i8_avx2(const float *q, const int8_t *c, size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    float s;

    for (; i + 8 <= n; i += 8) {
        __m128i c8 = _mm_loadl_epi64((const __m128i *)(c + i));
        __m256 cf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c8));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), cf, acc);
    }
    s = hsum_f32_avx2(acc);
    for (; i < n; i++)
        s += q[i] * (float)c[i];
    return s;
}

static const struct mt_simd_kernels k_avx2 = {
    MT_SIMD_AVX2,      "avx2",       dot_i8_avx2_fn,
    dot_i8_batch_avx2, dot_f32_avx2, dot_f32_i8_avx2,
};

/* ==== AVX-512 ==== */

#define AVX512_T                                                               \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))

/* VNNI's byte dot product, vpdpbusd, multiplies unsigned bytes by signed
 * ones: a is moved to unsigned by flipping its sign bit (a ^ 0x80 =
 * a + 128), so the sum is a.b + 128 sum(b), and 128 sum(b) is taken off
 * with a second vpdpbusd of 128s by b. The products (at most 255 x 128
 * in magnitude, four to an int32 lane) cannot overflow, so the result is
 * exact, the widening kernel's. Against sign-extending both sides to
 * 16 bits for vpdpwssd, a 256-byte dot is 8 loads, 4 xors and 8
 * vpdpbusd instead of 16 loads, 16 vpmovsxbw (all on one port) and 8
 * vpdpwssd; the HNSW build spends about a quarter of its time here. The
 * tail uses a masked load: zero bytes of b add nothing to either sum. */
AVX512_T static inline int32_t dot_i8_avx512(const int8_t *a, const int8_t *b,
                                             size_t n)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i acc = _mm512_setzero_si512();
    __m512i corr = _mm512_setzero_si512();
    size_t i = 0;

    for (; i + 64 <= n; i += 64) {
        __m512i va = _mm512_loadu_si512((const void *)(a + i));
        __m512i vb = _mm512_loadu_si512((const void *)(b + i));
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(va, flip), vb);
        corr = _mm512_dpbusd_epi32(corr, flip, vb);
    }
    if (i < n) {
        __mmask64 m = (__mmask64)((1ull << (n - i)) - 1); /* n - i < 64 */
        __m512i va = _mm512_maskz_loadu_epi8(m, a + i);
        __m512i vb = _mm512_maskz_loadu_epi8(m, b + i);
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(va, flip), vb);
        corr = _mm512_dpbusd_epi32(corr, flip, vb);
    }
    return _mm512_reduce_add_epi32(_mm512_sub_epi32(acc, corr));
}

AVX512_T static int32_t dot_i8_avx512_fn(const int8_t *a, const int8_t *b,
                                         size_t n)
{
    return dot_i8_avx512(a, b, n);
}

AVX512_T static void dot_i8_batch_avx512(const int8_t *q, const int8_t *rows,
                                         size_t stride, size_t nrows,
                                         size_t dims, int32_t *out)
{
    size_t r;

    for (r = 0; r < nrows; r++)
        out[r] = dot_i8_avx512(q, rows + r * stride, dims);
}

static const struct mt_simd_kernels k_avx512 = {
    MT_SIMD_AVX512,      "avx512",     dot_i8_avx512_fn,
    dot_i8_batch_avx512, dot_f32_avx2, dot_f32_i8_avx2,
};

static int cpu_has(enum mtx_simd_level level)
{
    __builtin_cpu_init();
    if (level == MT_SIMD_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (level == MT_SIMD_AVX512)
        return cpu_has(MT_SIMD_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    return level == MT_SIMD_PORTABLE;
}
#endif

/* ==== Dispatch ==== */

const struct mt_simd_kernels *mtx_simd_level(enum mtx_simd_level level)
{
    if (level == MT_SIMD_PORTABLE)
        return &k_portable;
#if MT_SIMD_X86
    if (level == MT_SIMD_AVX2 && cpu_has(level))
        return &k_avx2;
    if (level == MT_SIMD_AVX512 && cpu_has(level))
        return &k_avx512;
#endif
    return NULL;
}

static const struct mt_simd_kernels *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    int l;

    chosen = &k_portable;
    for (l = MT_SIMD_LEVEL_COUNT - 1; l > MT_SIMD_PORTABLE; l--) {
        const struct mt_simd_kernels *k =
            mtx_simd_level((enum mtx_simd_level)l);
        if (k) {
            chosen = k;
            return;
        }
    }
}

const struct mt_simd_kernels *mtx_simd_get(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}
