/* USE-lite kernels: a 4x16 register tile over 16-column weight panels and
 * dot/axpy for attention; built -O3 -ffp-contract=fast (mk/use_lite.mk),
 * cloned for x86-64-v3 (AVX2+FMA) with run-time dispatch on x86-64 gcc. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/use_lite.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(MT_UL_NO_CLONES)
#define KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define KERNEL
#endif

#define TILE_M 4
#define BLOCK_M 64 /* rows of A kept hot while a panel streams past */
#define P MT_UL_PANEL

/* 8 floats; gcc lowers it to whatever the target has (2 x SSE, 1 x AVX).
 * GNU C vector extension: gcc's auto-vectoriser transposes the plain
 * loops of this tile across rows, which is much slower. */
typedef float v8f __attribute__((vector_size(32)));

/* Unaligned load of 8 floats (a macro: vector returns trip -Wpsabi). */
#define LOAD8(v, p) memcpy(&(v), (p), sizeof(v))

/* c[0..4)[0..16) = a[4][k] . panel[k][16] + bias[16] */
static inline __attribute__((always_inline)) void
tile4(const float *a, size_t lda, const float *bp, size_t k, const float *bias,
      float *c, size_t ldc)
{
    v8f acc[TILE_M][2];
    size_t kk, r;

    for (r = 0; r < TILE_M; r++) {
        LOAD8(acc[r][0], bias);
        LOAD8(acc[r][1], bias + 8);
    }
    for (kk = 0; kk < k; kk++) {
        v8f b0, b1;
        LOAD8(b0, bp + kk * P);
        LOAD8(b1, bp + kk * P + 8);
        for (r = 0; r < TILE_M; r++) {
            float av = a[r * lda + kk];
            acc[r][0] += b0 * av;
            acc[r][1] += b1 * av;
        }
    }
    for (r = 0; r < TILE_M; r++)
        memcpy(c + r * ldc, acc[r], sizeof acc[r]);
}

/* The same for one row (the tail of M). */
static inline __attribute__((always_inline)) void
tile1(const float *a, const float *bp, size_t k, const float *bias, float *c)
{
    v8f acc0, acc1, b0, b1;
    size_t kk;

    LOAD8(acc0, bias);
    LOAD8(acc1, bias + 8);
    for (kk = 0; kk < k; kk++) {
        LOAD8(b0, bp + kk * P);
        LOAD8(b1, bp + kk * P + 8);
        acc0 += b0 * a[kk];
        acc1 += b1 * a[kk];
    }
    memcpy(c, &acc0, sizeof acc0);
    memcpy(c + 8, &acc1, sizeof acc1);
}

/* ==== AVX-512 ====
 * One panel of 16 columns is one zmm register, so a tile of 6 rows by 2
 * panels keeps 12 accumulators (of 32 registers) and does 12 FMAs for 2
 * panel loads and 6 broadcasts of A; the AVX2 tile above does 8 FMAs of
 * half the width for the same 6 loads. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(MT_UL_NO_CLONES)
#define HAVE_AVX512 1
#define AVX512 __attribute__((target("avx512f,avx512vl,fma")))
#define TILE512_M 6

typedef float v16f __attribute__((vector_size(64)));

#define LOAD16(v, p) memcpy(&(v), (p), sizeof(v))

/* c[rows][np * 16] = a[rows][k] . panels[np][k][16] + bias; rows <= 6,
 * np 1 or 2 (constants where it is hot, so the loops unroll). */
static inline __attribute__((always_inline)) AVX512 void
tile512(const float *a, size_t lda, const float *bp, size_t k, size_t np,
        size_t rows, const float *bias, float *c, size_t ldc)
{
    v16f acc[TILE512_M][2];
    size_t kk, r, j;

    for (r = 0; r < rows; r++)
        for (j = 0; j < np; j++)
            LOAD16(acc[r][j], bias + j * P);
    for (kk = 0; kk < k; kk++) {
        v16f b[2];
        for (j = 0; j < np; j++)
            LOAD16(b[j], bp + j * k * P + kk * P);
        for (r = 0; r < rows; r++) {
            float av = a[r * lda + kk];
            for (j = 0; j < np; j++)
                acc[r][j] += b[j] * av;
        }
    }
    for (r = 0; r < rows; r++)
        for (j = 0; j < np; j++)
            memcpy(c + r * ldc + j * P, &acc[r][j], sizeof acc[r][j]);
}

/* Rows [i0, i1) against the panels from p on (2 at a time, then 1). */
static AVX512 void rows512(const float *a, size_t i0, size_t i1, size_t k,
                           const float *b_packed, const float *bias, size_t n,
                           float *c)
{
    size_t p, i;

    for (p = 0; p + 2 <= n / P; p += 2) {
        const float *bp = b_packed + p * k * P;
        for (i = i0; i + TILE512_M <= i1; i += TILE512_M)
            tile512(a + i * k, k, bp, k, 2, TILE512_M, bias + p * P,
                    c + i * n + p * P, n);
        if (i < i1)
            tile512(a + i * k, k, bp, k, 2, i1 - i, bias + p * P,
                    c + i * n + p * P, n);
    }
    for (; p < n / P; p++) {
        const float *bp = b_packed + p * k * P;
        for (i = i0; i + TILE512_M <= i1; i += TILE512_M)
            tile512(a + i * k, k, bp, k, 1, TILE512_M, bias + p * P,
                    c + i * n + p * P, n);
        if (i < i1)
            tile512(a + i * k, k, bp, k, 1, i1 - i, bias + p * P,
                    c + i * n + p * P, n);
    }
}

static AVX512 void gemm512(const float *a, size_t m, size_t k,
                           const float *b_packed, const float *bias, size_t n,
                           float *c)
{
    size_t i0;

    for (i0 = 0; i0 < m; i0 += BLOCK_M)
        rows512(a, i0, i0 + BLOCK_M < m ? i0 + BLOCK_M : m, k, b_packed, bias,
                n, c);
}

/* 1 when this CPU runs the AVX-512 path; MEDTRUST_UL_NO_AVX512 set turns
 * it off (to compare the paths). */
static int use_avx512(void)
{
    static int on = -1;

    if (on < 0)
        on = __builtin_cpu_supports("avx512f") &&
             !getenv("MEDTRUST_UL_NO_AVX512");
    return on;
}
#else
#define HAVE_AVX512 0
#endif

KERNEL
static void gemm_v8(const float *a, size_t m, size_t k, const float *b_packed,
                    const float *bias, size_t n, float *c)
{
    size_t i0, p, i;

    for (i0 = 0; i0 < m; i0 += BLOCK_M) {
        size_t i1 = i0 + BLOCK_M < m ? i0 + BLOCK_M : m;
        for (p = 0; p < n / P; p++) {
            const float *bp = b_packed + p * k * P;
            for (i = i0; i + TILE_M <= i1; i += TILE_M)
                tile4(a + i * k, k, bp, k, bias + p * P, c + i * n + p * P, n);
            for (; i < i1; i++)
                tile1(a + i * k, bp, k, bias + p * P, c + i * n + p * P);
        }
    }
}

void mtx_ul_gemm(const float *a, size_t m, size_t k, const float *b_packed,
                 const float *bias, size_t n, float *c)
{
#if HAVE_AVX512
    if (use_avx512()) {
        gemm512(a, m, k, b_packed, bias, n, c);
        return;
    }
#endif
    gemm_v8(a, m, k, b_packed, bias, n, c);
}

/* ==== Attention ====
 * One head at a time, as loops over contiguous memory that vectorise:
 * the keys transposed once ([dh][len]), so that a query's scores are an
 * axpy per dimension over all keys, and the output an axpy per key over
 * the head's dimensions. This replaced a dot and an axpy call per key
 * (2 x 128 calls of 64 floats a query on a chunk). */

/* kt[d][j] = k[j][d] for the head's dh columns of len rows. */
static inline __attribute__((always_inline)) void
transpose_keys(const float *k, size_t ld, size_t len, size_t dh, float *kt)
{
    size_t j, d;

    for (j = 0; j < len; j++)
        for (d = 0; d < dh; d++)
            kt[d * len + j] = k[j * ld + d];
}

/* s[j] = scale * q . k_j over all keys, then softmax; returns 1 / sum. */
static inline __attribute__((always_inline)) float scores(const float *q,
                                                          const float *kt,
                                                          size_t len, size_t dh,
                                                          float scale, float *s)
{
    float mx = -INFINITY, sum = 0.0f;
    size_t j, d;

    for (j = 0; j < len; j++)
        s[j] = 0.0f;
    for (d = 0; d < dh; d++) {
        float qd = q[d] * scale;
        const float *kr = kt + d * len;
        for (j = 0; j < len; j++)
            s[j] += qd * kr[j];
    }
    for (j = 0; j < len; j++)
        mx = s[j] > mx ? s[j] : mx;
    for (j = 0; j < len; j++) {
        s[j] = expf(s[j] - mx);
        sum += s[j];
    }
    return 1.0f / sum;
}

KERNEL
static void attend_c(const float *qkv, size_t ld, size_t len, size_t din,
                     size_t c0, float scale, float *kt, float *att)
{
    size_t dh = din / MT_UL_HEADS, i, j, d;
    float s[MT_UL_MAX_LEN];

    transpose_keys(qkv + din + c0, ld, len, dh, kt);
    for (i = 0; i < len; i++) {
        float inv = scores(qkv + i * ld + c0, kt, len, dh, scale, s);
        float *o = att + i * din + c0;
        for (d = 0; d < dh; d++)
            o[d] = 0.0f;
        for (j = 0; j < len; j++) {
            const float *v = qkv + j * ld + 2 * din + c0;
            float pj = s[j] * inv;
            for (d = 0; d < dh; d++)
                o[d] += pj * v[d];
        }
    }
}

#if HAVE_AVX512
/* attend_c with the accumulators in registers: a query's scores for up
 * to 128 keys are nb (<= 8) zmm over keys padded to 16 with zeros, and
 * its output nd (4 or 8) zmm over the head's dimensions; nb and nd are
 * constants in each copy (attend512's switch), so the loops unroll.
 * combine512: out[0 .. nb * 16) = sum over t < n of (coef[t] * mul) *
 * rows[t * ld ..], for the scores (rows: the transposed keys, coef: the
 * query) and the output (rows: the values, coef: the softmax weights). */
static inline __attribute__((always_inline)) AVX512 void
combine512(const float *rows, size_t ld, const float *coef, float mul, size_t n,
           size_t nb, float *out)
{
    v16f acc[8], z = {0};
    size_t t, b;

    for (b = 0; b < nb; b++)
        acc[b] = z;
    for (t = 0; t < n; t++) {
        float c = coef[t] * mul;
        for (b = 0; b < nb; b++) {
            v16f x;
            LOAD16(x, rows + t * ld + b * P);
            acc[b] += x * c;
        }
    }
    for (b = 0; b < nb; b++)
        memcpy(out + b * P, &acc[b], sizeof acc[b]);
}

/* kt [dh][lp], lp = len rounded up to 16, the padding keys zero. */
static inline __attribute__((always_inline)) AVX512 void
attend512_n(const float *qkv, size_t ld, size_t len, size_t din, size_t c0,
            float scale, float *kt, float *att, size_t nb, size_t nd)
{
    size_t dh = nd * P, lp = nb * P, i, j, d;
    float s[MT_UL_MAX_LEN];

    for (d = 0; d < dh; d++) {
        for (j = 0; j < len; j++)
            kt[d * lp + j] = qkv[j * ld + din + c0 + d];
        for (; j < lp; j++)
            kt[d * lp + j] = 0.0f;
    }
    for (i = 0; i < len; i++) {
        float mx = -INFINITY, sum = 0.0f;
        combine512(kt, lp, qkv + i * ld + c0, scale, dh, nb, s);
        for (j = 0; j < len; j++)
            mx = s[j] > mx ? s[j] : mx;
        for (j = 0; j < len; j++) {
            s[j] = expf(s[j] - mx);
            sum += s[j];
        }
        combine512(qkv + 2 * din + c0, ld, s, 1.0f / sum, len, nd,
                   att + i * din + c0);
    }
}

#define ATTEND(nb, nd)                                                         \
    attend512_n(qkv, ld, len, din, c0, scale, kt, att, nb, nd)
#define ATTEND_ND(nb)                                                          \
    do {                                                                       \
        if (nd == 4)                                                           \
            ATTEND(nb, 4);                                                     \
        else                                                                   \
            ATTEND(nb, 8);                                                     \
    } while (0)

static AVX512 void attend512(const float *qkv, size_t ld, size_t len,
                             size_t din, size_t c0, float scale, float *kt,
                             float *att)
{
    size_t nd = din / MT_UL_HEADS / P;

    switch ((len + P - 1) / P) {
    case 1:
        ATTEND_ND(1);
        break;
    case 2:
        ATTEND_ND(2);
        break;
    case 3:
        ATTEND_ND(3);
        break;
    case 4:
        ATTEND_ND(4);
        break;
    case 5:
        ATTEND_ND(5);
        break;
    case 6:
        ATTEND_ND(6);
        break;
    case 7:
        ATTEND_ND(7);
        break;
    default:
        ATTEND_ND(8);
        break;
    }
}
#endif

void mtx_ul_attend(const float *qkv, size_t ld, size_t len, size_t din,
                   size_t c0, float scale, float *kt, float *att)
{
#if HAVE_AVX512
    size_t dh = din / MT_UL_HEADS;

    if (use_avx512() && len <= MT_UL_MAX_LEN && (dh == 64 || dh == 128)) {
        attend512(qkv, ld, len, din, c0, scale, kt, att);
        return;
    }
#endif
    attend_c(qkv, ld, len, din, c0, scale, kt, att);
}
