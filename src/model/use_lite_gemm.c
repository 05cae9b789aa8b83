/* USE-lite kernels: a 4x16 register tile over 16-column weight panels and
 * dot/axpy for attention; built -O3 -ffp-contract=fast (mk/use_lite.mk),
 * cloned for x86-64-v3 (AVX2+FMA) with run-time dispatch on x86-64 gcc. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
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

/* 16 floats: one zmm, or two ymm (AVX2), for the AVX-512 tiles and the
 * softmax of both paths. */
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

/* Unaligned loads (macros: vector returns trip -Wpsabi). */
#define LOAD8(v, p) memcpy(&(v), (p), sizeof(v))
#define LOAD16(v, p) memcpy(&(v), (p), sizeof(v))

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

/* A GEMM's operands: a [m][k] with row stride lda, c with row stride
 * ldc (the dense layers pass k and n; attention its heads' strides). */
struct gemm {
    const float *a;
    size_t lda, k;
    const float *b_packed, *bias;
    size_t n;
    float *c;
    size_t ldc;
};

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
static AVX512 void rows512(const struct gemm *g, size_t i0, size_t i1)
{
    size_t k = g->k, lda = g->lda, ldc = g->ldc, p, i;

    for (p = 0; p + 2 <= g->n / P; p += 2) {
        const float *bp = g->b_packed + p * k * P;
        for (i = i0; i + TILE512_M <= i1; i += TILE512_M)
            tile512(g->a + i * lda, lda, bp, k, 2, TILE512_M, g->bias + p * P,
                    g->c + i * ldc + p * P, ldc);
        if (i < i1)
            tile512(g->a + i * lda, lda, bp, k, 2, i1 - i, g->bias + p * P,
                    g->c + i * ldc + p * P, ldc);
    }
    for (; p < g->n / P; p++) {
        const float *bp = g->b_packed + p * k * P;
        for (i = i0; i + TILE512_M <= i1; i += TILE512_M)
            tile512(g->a + i * lda, lda, bp, k, 1, TILE512_M, g->bias + p * P,
                    g->c + i * ldc + p * P, ldc);
        if (i < i1)
            tile512(g->a + i * lda, lda, bp, k, 1, i1 - i, g->bias + p * P,
                    g->c + i * ldc + p * P, ldc);
    }
}

static AVX512 void gemm512(const struct gemm *g, size_t m)
{
    size_t i0;

    for (i0 = 0; i0 < m; i0 += BLOCK_M)
        rows512(g, i0, i0 + BLOCK_M < m ? i0 + BLOCK_M : m);
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
static void gemm_v8(const struct gemm *g, size_t m)
{
    size_t k = g->k, lda = g->lda, ldc = g->ldc, i0, p, i;

    for (i0 = 0; i0 < m; i0 += BLOCK_M) {
        size_t i1 = i0 + BLOCK_M < m ? i0 + BLOCK_M : m;
        for (p = 0; p < g->n / P; p++) {
            const float *bp = g->b_packed + p * k * P;
            for (i = i0; i + TILE_M <= i1; i += TILE_M)
                tile4(g->a + i * lda, lda, bp, k, g->bias + p * P,
                      g->c + i * ldc + p * P, ldc);
            for (; i < i1; i++)
                tile1(g->a + i * lda, bp, k, g->bias + p * P,
                      g->c + i * ldc + p * P);
        }
    }
}

void mtx_ul_gemm(const float *a, size_t m, size_t k, const float *b_packed,
                 const float *bias, size_t n, float *c)
{
    struct gemm g = {a, k, k, b_packed, bias, n, c, n};

#if HAVE_AVX512
    if (use_avx512()) {
        gemm512(&g, m);
        return;
    }
#endif
    gemm_v8(&g, m);
}

/* ==== Attention ====
 * One head of one text as two small GEMMs on the tiles above, with the
 * softmax between them, a block of MT_UL_ATT_ROWS queries at a time:
 * S = Q K^T (the keys packed as 16-key panels, K^T's columns), then
 * P = softmax(scale * S) in place, then O = P V (the values packed as
 * 16-column panels). The register tiles keep 12 (AVX-512) or 8 (AVX2)
 * independent accumulators, so short texts no longer wait on one FMA
 * chain a query. This is not FlashAttention's online softmax: a text
 * has at most 128 keys, so a block's whole score rows (24 x 128 floats,
 * 12 KB) stay in L1 between the products; the scores cannot stay in
 * registers because P is the broadcast operand of the second product. */

/* Two-input shuffle of 16-float vectors by constant indices (0-15 from a,
 * 16-31 from b), spelled as each compiler spells it. */
#if defined(__clang__)
#define SHUF16(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUF16(a, b, ...) __builtin_shuffle(a, b, (v16i){__VA_ARGS__})
#endif

#define EXP_MIN -87.0f /* e^x for x below it: 2^-126 would underflow */

static const float att_zeros[MT_UL_MAX_LEN]; /* the products' bias */

/* Lanes where keep is -1 from a, the others from b (a macro, as LOAD16:
 * vector returns trip -Wpsabi). */
#define PICK16(keep, a, b)                                                     \
    ((v16f)(((v16i)(a) & (keep)) | ((v16i)(b) & ~(keep))))

/* e^x for x in [EXP_MIN, 0]: x = n ln2 + r with |r| <= ln2 / 2 (n
 * rounded by the 1.5 * 2^23 trick, ln2 in two parts), e^r by the
 * polynomial of Cephes' expf (relative error about 1e-7), then 2^n
 * written into the exponent bits. */
static inline __attribute__((always_inline)) void exp16(v16f *px)
{
    const float magic = 12582912.0f; /* bits 0x4b400000 */
    v16f x = *px, t = x * 1.44269504f + magic, n = t - magic, r, y;
    v16i e;

    r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    y = r * 1.9875691500e-4f + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * (r * r) + r + 1.0f;
    e = ((v16i)t - 0x4b400000 + 127) << 23;
    *px = y * (v16f)e;
}

/* The largest lane and the sum of the lanes, folded in halves (4 steps,
 * not a chain of 15). */
static inline __attribute__((always_inline)) float hmax16(const v16f *px)
{
    v16f x = *px, y;

    y = SHUF16(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    x = PICK16(y > x, y, x);
    y = SHUF16(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    x = PICK16(y > x, y, x);
    y = SHUF16(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    x = PICK16(y > x, y, x);
    return x[0] > x[1] ? x[0] : x[1];
}

static inline __attribute__((always_inline)) float hsum16(const v16f *px)
{
    v16f x = *px;

    x += SHUF16(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    x += SHUF16(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    x += SHUF16(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    return x[0] + x[1];
}

/* Row s of lp scores (keys [0, len) real, the rest padding) becomes
 * softmax(scale * s) over the real keys, 0 over the padding. */
static inline __attribute__((always_inline)) void
softmax_row(float *s, size_t len, size_t lp, float scale)
{
    const v16i lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    v16f x, mx = {0}, sum = {0}, lo = {0};
    float m, total, inv;
    size_t b;

    mx += -INFINITY; /* scalar operands are broadcast */
    lo += EXP_MIN;
    for (b = 0; b < lp; b += P) {
        v16i keep = lane + (int32_t)b < (int32_t)len;
        LOAD16(x, s + b);
        x = PICK16(keep, x, mx);
        mx = PICK16(x > mx, x, mx);
    }
    m = hmax16(&mx);
    for (b = 0; b < lp; b += P) {
        v16i keep = lane + (int32_t)b < (int32_t)len;
        LOAD16(x, s + b);
        x = (x - m) * scale;
        x = PICK16(x > lo, x, lo);
        exp16(&x);
        x = (v16f)((v16i)x & keep);
        sum += x;
        memcpy(s + b, &x, sizeof x);
    }
    total = hsum16(&sum);
    inv = 1.0f / total;
    for (b = 0; b < lp; b++)
        s[b] *= inv;
}

/* Swaps the off-diagonal w x w blocks of every 2w x 2w block of the 16
 * rows r: rows i and i + w (i's bit w clear) trade their lanes c with
 * bit w set / clear. Run with w = 8, 4, 2, 1, it transposes r. */
#define SWAP_BLOCKS(r, w)                                                      \
    do {                                                                       \
        int i_;                                                                \
        for (i_ = 0; i_ < 16; i_++) {                                          \
            if (i_ & (w))                                                      \
                continue;                                                      \
            v16f x_ = r[i_], y_ = r[i_ + (w)];                                 \
            SWAP_PAIR(r[i_], r[i_ + (w)], x_, y_, w);                          \
        }                                                                      \
    } while (0)

#define SWAP_PAIR(lo, hi, x, y, w)                                             \
    do {                                                                       \
        if ((w) == 8) {                                                        \
            lo = SHUF16(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21,  \
                        22, 23);                                               \
            hi = SHUF16(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27,    \
                        28, 29, 30, 31);                                       \
        } else if ((w) == 4) {                                                 \
            lo = SHUF16(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24,    \
                        25, 26, 27);                                           \
            hi = SHUF16(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28,  \
                        29, 30, 31);                                           \
        } else if ((w) == 2) {                                                 \
            lo = SHUF16(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12,    \
                        13, 28, 29);                                           \
            hi = SHUF16(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14,  \
                        15, 30, 31);                                           \
        } else {                                                               \
            lo = SHUF16(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12,   \
                        28, 14, 30);                                           \
            hi = SHUF16(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13,   \
                        29, 15, 31);                                           \
        }                                                                      \
    } while (0)

/* out[c * 16 + i] = in[i * ld + c] for i < rows (later rows zero), c <
 * 16: a 16 x 16 block transposed in registers (64 shuffles). */
static inline __attribute__((always_inline)) void
transpose16(const float *in, size_t ld, size_t rows, float *out)
{
    v16f r[16], z = {0};
    size_t i;

    for (i = 0; i < 16; i++) {
        if (i < rows)
            LOAD16(r[i], in + i * ld);
        else
            r[i] = z;
    }
    SWAP_BLOCKS(r, 8);
    SWAP_BLOCKS(r, 4);
    SWAP_BLOCKS(r, 2);
    SWAP_BLOCKS(r, 1);
    for (i = 0; i < 16; i++)
        memcpy(out + i * P, &r[i], sizeof r[i]);
}

/* kp[j / 16][d][j % 16] = k[j * ld + d] for the head's dh columns (K^T
 * as panels of 16 keys), the keys [len, lp) of the last panel zero. */
static inline __attribute__((always_inline)) void
pack_keys(const float *k, size_t ld, size_t len, size_t lp, size_t dh,
          float *kp)
{
    size_t j, d;

    for (j = 0; j < lp; j += P)
        for (d = 0; d < dh; d += P)
            transpose16(k + j * ld + d, ld, len - j < P ? len - j : P,
                        kp + j * dh + d * P);
}

/* vp[d / 16][j][d % 16] = v[j * ld + d]: the values as panels of 16
 * columns, the layout the GEMM tiles read B in (row by row, so that
 * each row of qkv is read once, in order). */
static inline __attribute__((always_inline)) void
pack_values(const float *v, size_t ld, size_t len, size_t dh, float *vp)
{
    size_t j, p;

    for (j = 0; j < len; j++)
        for (p = 0; p < dh / P; p++)
            memcpy(vp + (p * len + j) * P, v + j * ld + p * P, P * sizeof *vp);
}

/* The operands of one head: packed keys and values in the scratch, the
 * GEMM descriptions of a block's two products (rows set per block). */
struct att {
    size_t len, lp, dh;
    float scale, *s;
    struct gemm qk, pv;
};

static inline __attribute__((always_inline)) void
att_setup(struct att *t, const float *qkv, size_t ld, size_t len, size_t din,
          size_t c0, float scale, float *scratch, float *out)
{
    float *kp = scratch, *vp;

    t->len = len;
    t->lp = (len + P - 1) / P * P;
    t->dh = din / MT_UL_HEADS;
    t->scale = scale;
    vp = kp + t->lp * t->dh;
    t->s = vp + len * t->dh;
    pack_keys(qkv + din + c0, ld, len, t->lp, t->dh, kp);
    pack_values(qkv + 2 * din + c0, ld, len, t->dh, vp);
    t->qk =
        (struct gemm){qkv + c0, ld, t->dh, kp, att_zeros, t->lp, t->s, t->lp};
    t->pv =
        (struct gemm){t->s, t->lp, len, vp, att_zeros, t->dh, out + c0, din};
}

/* Points the block's products at query rows [i0, ...). */
static inline __attribute__((always_inline)) size_t
att_block(struct att *t, const float *qkv, size_t ld, size_t din, size_t c0,
          float *out, size_t i0)
{
    size_t m = t->len - i0 < MT_UL_ATT_ROWS ? t->len - i0 : MT_UL_ATT_ROWS;

    t->qk.a = qkv + i0 * ld + c0;
    t->pv.c = out + i0 * din + c0;
    return m;
}

/* One head on the given GEMM (a constant in each caller, so the call is
 * direct and the softmax is compiled for the caller's target). */
static inline __attribute__((always_inline)) void
attend_on(void (*gemm)(const struct gemm *, size_t), const float *qkv,
          size_t ld, size_t len, size_t din, size_t c0, float scale,
          float *scratch, float *out)
{
    struct att t;
    size_t i0, m, r;

    att_setup(&t, qkv, ld, len, din, c0, scale, scratch, out);
    for (i0 = 0; i0 < len; i0 += m) {
        m = att_block(&t, qkv, ld, din, c0, out, i0);
        gemm(&t.qk, m);
        for (r = 0; r < m; r++)
            softmax_row(t.s + r * t.lp, len, t.lp, scale);
        gemm(&t.pv, m);
    }
}

#if HAVE_AVX512
static AVX512 void attend512(const float *qkv, size_t ld, size_t len,
                             size_t din, size_t c0, float scale, float *scratch,
                             float *out)
{
    attend_on(gemm512, qkv, ld, len, din, c0, scale, scratch, out);
}
#endif

KERNEL
void mtx_ul_attend_v8(const float *qkv, size_t ld, size_t len, size_t din,
                      size_t c0, float scale, float *scratch, float *out)
{
    attend_on(gemm_v8, qkv, ld, len, din, c0, scale, scratch, out);
}

void mtx_ul_attend(const float *qkv, size_t ld, size_t len, size_t din,
                   size_t c0, float scale, float *scratch, float *out)
{
#if HAVE_AVX512
    if (use_avx512()) {
        attend512(qkv, ld, len, din, c0, scale, scratch, out);
        return;
    }
#endif
    mtx_ul_attend_v8(qkv, ld, len, din, c0, scale, scratch, out);
}

/* ==== Layer norm ====
 * (x - mean) * rsqrt(var + eps) * g + b a row, as use_lite_fwd.c's loops
 * did one float at a time (two sums of 256 or 512 floats in a chain of
 * adds each: about a tenth of a chunk's time), with 2 x 16 partial sums
 * folded at the end; the order of the sums is all that changes. */

static inline __attribute__((always_inline)) void
norm_row(const float *x, size_t d, const float *g, const float *b, float eps,
         float *o)
{
    v16f s0 = {0}, s1 = {0}, v, w, gv, bv;
    float mean, var, inv;
    size_t j;

    for (j = 0; j < d; j += 2 * P) {
        LOAD16(v, x + j);
        LOAD16(w, x + j + P);
        s0 += v;
        s1 += w;
    }
    s0 += s1;
    mean = hsum16(&s0) / (float)d;
    s0 = s1 = (v16f){0};
    for (j = 0; j < d; j += 2 * P) {
        LOAD16(v, x + j);
        LOAD16(w, x + j + P);
        v -= mean;
        w -= mean;
        s0 += v * v;
        s1 += w * w;
    }
    s0 += s1;
    var = hsum16(&s0) / (float)d;
    inv = 1.0f / sqrtf(var + eps);
    for (j = 0; j < d; j += P) {
        LOAD16(v, x + j);
        LOAD16(gv, g + j);
        LOAD16(bv, b + j);
        v = gv * inv * (v - mean) + bv;
        memcpy(o + j, &v, sizeof v);
    }
}

#if HAVE_AVX512
static AVX512 void layer_norm512(const float *x, size_t rows, size_t d,
                                 const float *g, const float *b, float eps,
                                 float *out)
{
    size_t r;

    for (r = 0; r < rows; r++)
        norm_row(x + r * d, d, g, b, eps, out + r * d);
}
#endif

KERNEL
static void layer_norm_v8(const float *x, size_t rows, size_t d, const float *g,
                          const float *b, float eps, float *out)
{
    size_t r;

    for (r = 0; r < rows; r++)
        norm_row(x + r * d, d, g, b, eps, out + r * d);
}

void mtx_ul_layer_norm(const float *x, size_t rows, size_t d, const float *g,
                       const float *b, float eps, float *out)
{
#if HAVE_AVX512
    if (use_avx512()) {
        layer_norm512(x, rows, d, g, b, eps, out);
        return;
    }
#endif
    layer_norm_v8(x, rows, d, g, b, eps, out);
}
