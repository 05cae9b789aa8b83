/* USE-lite int8 GEMM: weights quantised per output column when the model
 * opens, activations per row at each call (asymmetric, with a zero
 * point), products summed exactly in int32 by AVX-512 VNNI (vpdpbusd) or
 * by a portable loop that gives the same sums and the same floats. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/use_lite.h"

#define P MT_UL_PANEL
#define GROUP 4    /* k values one vpdpbusd lane sums */
#define BLOCK_M 64 /* rows of A kept hot while the panels stream past */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(MT_UL_NO_CLONES)
#include <immintrin.h>

#define HAVE_VNNI 1
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni,fma")))
#else
#define HAVE_VNNI 0
#endif

/* Byte offset of w[kk][col] in the [n/16][k/4][16][4] layout. */
static size_t q_at(size_t k, size_t kk, size_t col)
{
    return (col / P) * k * P + (kk / GROUP) * (P * GROUP) + (col % P) * GROUP +
           kk % GROUP;
}

/* ==== Weights ==== */

/* Column col of a packed float [k, n] matrix at row kk. */
static float packed_at(const float *b, size_t k, size_t kk, size_t col)
{
    return b[(col / P) * k * P + kk * P + col % P];
}

static void quant_column(struct mt_ul_qmat *q, const float *b, size_t col)
{
    float mx = 0.0f, inv;
    int32_t sum = 0;
    size_t kk;

    for (kk = 0; kk < q->k; kk++)
        mx = fmaxf(mx, fabsf(packed_at(b, q->k, kk, col)));
    q->scale[col] = mx > 0.0f ? mx / 127.0f : 1.0f;
    inv = 1.0f / q->scale[col];
    for (kk = 0; kk < q->k; kk++) {
        long v = lrintf(packed_at(b, q->k, kk, col) * inv);
        v = v > 127 ? 127 : v < -127 ? -127 : v;
        q->w[q_at(q->k, kk, col)] = (int8_t)v;
        sum += (int32_t)v;
    }
    q->colsum[col] = sum;
}

enum mt_status mtx_ul_qmat_init(struct mt_ul_qmat *q, const float *packed,
                                uint32_t k, uint32_t n)
{
    size_t col;

    memset(q, 0, sizeof *q);
    if (k % GROUP || n % P)
        return MT_EINVAL;
    q->k = k;
    q->n = n;
    q->w = mt_malloc((size_t)k * n);
    q->scale = mt_malloc(n * sizeof *q->scale);
    q->colsum = mt_malloc(n * sizeof *q->colsum);
    if (!q->w || !q->scale || !q->colsum) {
        mtx_ul_qmat_free(q);
        return MT_ENOMEM;
    }
    for (col = 0; col < n; col++)
        quant_column(q, packed, col);
    return MT_OK;
}

void mtx_ul_qmat_free(struct mt_ul_qmat *q)
{
    if (!q)
        return;
    mt_free(q->w);
    mt_free(q->scale);
    mt_free(q->colsum);
    memset(q, 0, sizeof *q);
}

/* ==== Activations ==== */

/* Scale and zero point of a row spanning [lo, hi], lo <= 0 <= hi: x ~
 * scale * (u - zero), u in 0..255; 0 maps to zero exactly, so padding
 * and ReLU zeros stay zeros. *zh is zero + 0.5 (rounding half up). */
static void row_params(float lo, float hi, float *scale, float *inv, float *zh)
{
    float s = (hi - lo) / 255.0f, z;

    if (!(s > 0.0f))
        s = 1.0f; /* an all-zero row */
    *scale = s;
    *inv = 1.0f / s;
    z = floorf(-lo * *inv + 0.5f);
    *zh = (z > 255.0f ? 255.0f : z) + 0.5f;
}

static void quant_row(const float *x, size_t k, uint8_t *u, float *scale,
                      int32_t *zero)
{
    float lo = 0.0f, hi = 0.0f, inv, zh;
    size_t j;

    for (j = 0; j < k; j++) {
        lo = x[j] < lo ? x[j] : lo;
        hi = x[j] > hi ? x[j] : hi;
    }
    row_params(lo, hi, scale, &inv, &zh);
    for (j = 0; j < k; j++) {
        float v = x[j] * inv + zh;
        v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
        u[j] = (uint8_t)v;
    }
    *zero = (int32_t)zh;
}

#if HAVE_VNNI
/* quant_row 16 floats at a time (k % 16 == 0): the same bytes. */
static VNNI void quant_row512(const float *x, size_t k, uint8_t *u,
                              float *scale, int32_t *zero)
{
    __m512 lo = _mm512_setzero_ps(), hi = lo, inv, zh;
    float fl, fh, finv, fzh;
    size_t j;

    for (j = 0; j < k; j += 16) {
        __m512 v = _mm512_loadu_ps(x + j);
        lo = _mm512_min_ps(lo, v);
        hi = _mm512_max_ps(hi, v);
    }
    fl = _mm512_reduce_min_ps(lo);
    fh = _mm512_reduce_max_ps(hi);
    row_params(fl, fh, scale, &finv, &fzh);
    inv = _mm512_set1_ps(finv);
    zh = _mm512_set1_ps(fzh);
    for (j = 0; j < k; j += 16) {
        __m512 v =
            _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + j), inv), zh);
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()),
                          _mm512_set1_ps(255.0f));
        _mm_storeu_si128((__m128i *)(void *)(u + j),
                         _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
    }
    *zero = (int32_t)fzh;
}
#endif

void mtx_ul_quant_rows_ref(const float *a, size_t m, size_t k,
                           struct mt_ul_qact *qa)
{
    size_t r;

    for (r = 0; r < m; r++)
        quant_row(a + r * k, k, qa->u + r * k, &qa->scale[r], &qa->zero[r]);
}

void mtx_ul_quant_rows(const float *a, size_t m, size_t k,
                       struct mt_ul_qact *qa)
{
#if HAVE_VNNI
    size_t r;

    if (mtx_ul_have_vnni() && k % 16 == 0) {
        for (r = 0; r < m; r++)
            quant_row512(a + r * k, k, qa->u + r * k, &qa->scale[r],
                         &qa->zero[r]);
        return;
    }
#endif
    mtx_ul_quant_rows_ref(a, m, k, qa);
}

/* ==== Portable path ==== */

/* c = scale_a * scale_w * (sum - zero * colsum) + bias, written with an
 * explicit fma so that both paths round alike. */
static float dequant_out(int32_t sum, const struct mt_ul_qact *qa, size_t r,
                         const struct mt_ul_qmat *w, const float *bias,
                         size_t col)
{
    float t = (float)(sum - qa->zero[r] * w->colsum[col]);

    return fmaf(t, qa->scale[r] * w->scale[col], bias[col]);
}

void mtx_ul_gemm_q_ref(const struct mt_ul_qact *qa, size_t m,
                       const struct mt_ul_qmat *w, const float *bias, float *c)
{
    size_t r, col, kk;

    for (r = 0; r < m; r++) {
        const uint8_t *u = qa->u + r * w->k;
        for (col = 0; col < w->n; col++) {
            int32_t sum = 0;
            for (kk = 0; kk < w->k; kk++)
                sum += (int32_t)u[kk] * w->w[q_at(w->k, kk, col)];
            c[r * w->n + col] = dequant_out(sum, qa, r, w, bias, col);
        }
    }
}

/* ==== AVX-512 VNNI ====
 * A tile of 6 rows by 4 panels keeps 24 int32 accumulators (of 32 zmm);
 * each group of 4 k costs 4 panel loads, 6 broadcasts of 4 bytes of A
 * and 24 vpdpbusd (64 multiply-adds each): 4x the FP32 path's 16 lanes. */
#if HAVE_VNNI
#define QR 6
#define QNP 4

struct qtile {
    const struct mt_ul_qact *qa;
    const struct mt_ul_qmat *w;
    const float *bias;
    float *c;
};

static inline __attribute__((always_inline)) VNNI void
tile_store(const struct qtile *t, __m512i acc[QR][QNP], size_t i, size_t p,
           size_t np, size_t rows)
{
    size_t r, j;

    for (j = 0; j < np; j++) {
        size_t col = (p + j) * P;
        __m512i cs = _mm512_loadu_si512(t->w->colsum + col);
        __m512 sw = _mm512_loadu_ps(t->w->scale + col);
        __m512 b = _mm512_loadu_ps(t->bias + col);
        for (r = 0; r < rows; r++) {
            __m512i z =
                _mm512_mullo_epi32(_mm512_set1_epi32(t->qa->zero[i + r]), cs);
            __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], z));
            __m512 s = _mm512_mul_ps(_mm512_set1_ps(t->qa->scale[i + r]), sw);
            _mm512_storeu_ps(t->c + (i + r) * t->w->n + col,
                             _mm512_fmadd_ps(f, s, b));
        }
    }
}

/* Rows [i, i + rows) by panels [p, p + np); rows <= 6, np <= 4
 * (constants where it is hot, so the loops unroll). */
static inline __attribute__((always_inline)) VNNI void
qtile(const struct qtile *t, size_t i, size_t p, size_t np, size_t rows)
{
    size_t k = t->w->k, g, r, j;
    const uint8_t *a = t->qa->u + i * k;
    const int8_t *bp = t->w->w + p * k * P;
    __m512i acc[QR][QNP];

    for (r = 0; r < rows; r++)
        for (j = 0; j < np; j++)
            acc[r][j] = _mm512_setzero_si512();
    for (g = 0; g < k; g += GROUP) {
        __m512i b[QNP];
        for (j = 0; j < np; j++)
            b[j] = _mm512_loadu_si512(bp + j * k * P + g * P);
        for (r = 0; r < rows; r++) {
            int32_t a4;
            __m512i av;
            memcpy(&a4, a + r * k + g, sizeof a4);
            av = _mm512_set1_epi32(a4);
            for (j = 0; j < np; j++)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, b[j]);
        }
    }
    tile_store(t, acc, i, p, np, rows);
}

/* The hot 6 x 4 tile written out, so that the 24 accumulators stay in
 * registers (gcc spills the array form of qtile). */
#define DP4(r)                                                                 \
    do {                                                                       \
        int32_t a4;                                                            \
        __m512i av;                                                            \
        memcpy(&a4, a + (r)*k + g, sizeof a4);                                 \
        av = _mm512_set1_epi32(a4);                                            \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                        \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);                        \
        c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, b2);                        \
        c##r##3 = _mm512_dpbusd_epi32(c##r##3, av, b3);                        \
    } while (0)
#define ZERO4(r)                                                               \
    __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0,               \
            c##r##2 = c##r##0, c##r##3 = c##r##0
#define SAVE4(r)                                                               \
    do {                                                                       \
        acc[r][0] = c##r##0;                                                   \
        acc[r][1] = c##r##1;                                                   \
        acc[r][2] = c##r##2;                                                   \
        acc[r][3] = c##r##3;                                                   \
    } while (0)

static VNNI void qtile64(const struct qtile *t, size_t i, size_t p)
{
    size_t k = t->w->k, g;
    const uint8_t *a = t->qa->u + i * k;
    const int8_t *bp = t->w->w + p * k * P;
    __m512i acc[QR][QNP];
    ZERO4(0);
    ZERO4(1);
    ZERO4(2);
    ZERO4(3);
    ZERO4(4);
    ZERO4(5);

    for (g = 0; g < k; g += GROUP) {
        __m512i b0 = _mm512_loadu_si512(bp + g * P);
        __m512i b1 = _mm512_loadu_si512(bp + k * P + g * P);
        __m512i b2 = _mm512_loadu_si512(bp + 2 * k * P + g * P);
        __m512i b3 = _mm512_loadu_si512(bp + 3 * k * P + g * P);
        DP4(0);
        DP4(1);
        DP4(2);
        DP4(3);
        DP4(4);
        DP4(5);
    }
    SAVE4(0);
    SAVE4(1);
    SAVE4(2);
    SAVE4(3);
    SAVE4(4);
    SAVE4(5);
    tile_store(t, acc, i, p, QNP, QR);
}

static VNNI void qrows(const struct qtile *t, size_t i0, size_t i1)
{
    size_t np = t->w->n / P, p, i;

    for (p = 0; p + QNP <= np; p += QNP) {
        for (i = i0; i + QR <= i1; i += QR)
            qtile64(t, i, p);
        if (i < i1)
            qtile(t, i, p, QNP, i1 - i);
    }
    for (; p < np; p++) {
        for (i = i0; i + QR <= i1; i += QR)
            qtile(t, i, p, 1, QR);
        if (i < i1)
            qtile(t, i, p, 1, i1 - i);
    }
}

static void gemm_q_vnni(const struct mt_ul_qact *qa, size_t m,
                        const struct mt_ul_qmat *w, const float *bias, float *c)
{
    struct qtile t = {qa, w, bias, c};
    size_t i0;

    for (i0 = 0; i0 < m; i0 += BLOCK_M)
        qrows(&t, i0, i0 + BLOCK_M < m ? i0 + BLOCK_M : m);
}

int mtx_ul_have_vnni(void)
{
    static int on = -1;

    if (on < 0)
        on = __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
    return on;
}
#else
int mtx_ul_have_vnni(void)
{
    return 0;
}
#endif

void mtx_ul_gemm_q(const struct mt_ul_qact *qa, size_t m,
                   const struct mt_ul_qmat *w, const float *bias, float *c)
{
#if HAVE_VNNI
    if (mtx_ul_have_vnni()) {
        gemm_q_vnni(qa, m, w, bias, c);
        return;
    }
#endif
    mtx_ul_gemm_q_ref(qa, m, w, bias, c);
}

/* ==== Model ==== */

/* Matrix i (MT_UL_Q_*) of layer L and its shape [k, n]. */
static const float *layer_matrix(const struct mt_ul_layer *L, int i,
                                 uint32_t *k, uint32_t *n)
{
    *k = L->din;
    *n = MT_UL_DIM;
    switch (i) {
    case MT_UL_Q_QKV:
        *n = 3 * L->din;
        return L->w_qkv;
    case MT_UL_Q_OUT:
        return L->w_out;
    case MT_UL_Q_RES:
        return L->w_res;
    case MT_UL_Q_FF1:
        *k = MT_UL_DIM;
        *n = MT_UL_FF;
        return L->w_ff1;
    default:
        *k = MT_UL_FF;
        return L->w_ff2;
    }
}

/* Layer 0's QKV and residual projections stay float32: they read the
 * raw embedding plus timing signal, and quantising them costs the most
 * accuracy (min cosine to float32 on the 200 test sentences: all int8
 * 0.99869; without these two, 0.99943) for 7% of the GEMM FLOPs. The
 * pooling projection runs once per text and stays float32 too. */
enum mt_status mtx_ul_quantize(struct mt_ul_model *m)
{
    size_t l;
    int i;

    for (l = 0; l < 2; l++) {
        struct mt_ul_layer *L = &m->w.layer[l];
        for (i = 0; i < MT_UL_N_Q; i++) {
            uint32_t k, n;
            const float *b = layer_matrix(L, i, &k, &n);
            enum mt_status st;
            if (!b || (l == 0 && (i == MT_UL_Q_QKV || i == MT_UL_Q_RES)))
                continue;
            st = mtx_ul_qmat_init(&m->q[l][i], b, k, n);
            if (st != MT_OK)
                return st;
            L->q[i] = &m->q[l][i];
        }
    }
    return MT_OK;
}
