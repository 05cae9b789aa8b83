/* USE-lite forward pass from model.json's graph: 2x token embedding plus
 * timing signal, two pre-norm transformer layers, mean pool, tanh, L2 norm;
 * a batch's tokens are packed for the dense layers, attention per text. */
#include <math.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/use_lite.h"

#define LN_EPS 1e-6f  /* layer_norm/Cast/x */
#define L2_EPS 1e-12f /* l2_normalize/Maximum/y */
#define N_TIMING 128  /* sin and cos channels each */

/* Scratch for one batch of n_tok packed tokens. */
struct fwd {
    const struct mt_ul_weights *w;
    const size_t *lens;
    size_t n, n_tok;
    float *x;   /* [n_tok, 512] layer input (layer 0 uses 256 columns) */
    float *h;   /* [n_tok, 512] layer-norm output */
    float *qkv; /* [n_tok, 1536] */
    float *att; /* [n_tok, 512] attention output before projection */
    float *y;   /* [n_tok, 512] */
    float *ff;  /* [n_tok, 1536] */
    struct mt_ul_qact qa; /* [n_tok, 1536] bytes: int8 GEMM input */
    float *att_tmp;       /* MT_UL_ATT_SCRATCH floats for mtx_ul_attend */
};

/* ==== Elementwise ==== */

static void add_into(float *y, const float *x, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        y[i] += x[i];
}

static void relu(float *x, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* Layer 0 input: the graph adds the embedding twice (Encode/Scatter plus
 * AddTimingSignal's gather of it) and the timing signal at position t. */
static void embed_tokens(struct fwd *f, const int32_t *const *ids)
{
    const float *inv = f->w->timing_inv;
    size_t s, t, j;
    float *x = f->x;

    for (s = 0; s < f->n; s++) {
        for (t = 0; t < f->lens[s]; t++, x += MT_UL_EMB) {
            const float *e = f->w->embed + (size_t)ids[s][t] * MT_UL_EMB;
            for (j = 0; j < N_TIMING; j++) {
                float arg = (float)t * inv[j];
                x[j] = e[j] + e[j] + sinf(arg);
                x[j + N_TIMING] = e[j + N_TIMING] + e[j + N_TIMING] + cosf(arg);
            }
        }
    }
}

/* ==== Attention ==== */

static void attention(struct fwd *f, size_t din)
{
    /* 1/sqrt(depth): 0.125 for 64-wide heads, 0.0883883 for 128-wide */
    float scale = 1.0f / sqrtf((float)(din / MT_UL_HEADS));
    size_t s, h, row = 0;

    for (s = 0; s < f->n; s++) {
        for (h = 0; h < MT_UL_HEADS; h++)
            mtx_ul_attend(f->qkv + row * 3 * din, 3 * din, f->lens[s], din,
                          h * (din / MT_UL_HEADS), scale, f->att_tmp,
                          f->att + row * din);
        row += f->lens[s];
    }
}

/* ==== Layers ==== */

/* c[m, n] = a[m, k] . W + bias: the int8 copy of W when the model has
 * one, else its float32 panels. */
static void dense(struct fwd *f, const float *a, size_t m, size_t k,
                  const float *w, const struct mt_ul_qmat *q, const float *bias,
                  size_t n, float *c)
{
    if (!q) {
        mtx_ul_gemm(a, m, k, w, bias, n, c);
        return;
    }
    mtx_ul_quant_rows(a, m, k, &f->qa);
    mtx_ul_gemm_q(&f->qa, m, q, bias, c);
}

/* x [n_tok, din] -> x [n_tok, 512]. Padding never reaches the packed
 * rows, and the graph's -1e9 mask makes padded keys weigh exactly 0, so
 * attending over each sentence's own tokens is the same computation. */
static void layer(struct fwd *f, const struct mt_ul_layer *L)
{
    size_t n = f->n_tok, din = L->din;

    mtx_ul_layer_norm(f->x, n, din, L->ln1_g, L->ln1_b, LN_EPS, f->h);
    dense(f, f->h, n, din, L->w_qkv, L->q[MT_UL_Q_QKV], L->b_qkv, 3 * din,
          f->qkv);
    attention(f, din);
    dense(f, f->att, n, din, L->w_out, L->q[MT_UL_Q_OUT], L->b_out, MT_UL_DIM,
          f->y);
    if (L->w_res) { /* AdjustResidualInput: dense 256 -> 512 */
        dense(f, f->x, n, din, L->w_res, L->q[MT_UL_Q_RES], L->b_res, MT_UL_DIM,
              f->h);
        add_into(f->y, f->h, n * MT_UL_DIM);
    } else {
        add_into(f->y, f->x, n * MT_UL_DIM);
    }
    mtx_ul_layer_norm(f->y, n, MT_UL_DIM, L->ln2_g, L->ln2_b, LN_EPS, f->h);
    dense(f, f->h, n, MT_UL_DIM, L->w_ff1, L->q[MT_UL_Q_FF1], L->b_ff1,
          MT_UL_FF, f->ff);
    relu(f->ff, n * MT_UL_FF);
    dense(f, f->ff, n, MT_UL_FF, L->w_ff2, L->q[MT_UL_Q_FF2], L->b_ff2,
          MT_UL_DIM, f->x);
    add_into(f->x, f->y, n * MT_UL_DIM);
}

/* Mean over each sentence's tokens (divided by max(len, 1), so an empty
 * text pools to zeros), tanh projection, then x * rsqrt(max(|x|^2, eps)).
 */
static void pool(struct fwd *f, float *out)
{
    size_t s, t, j, row = 0;

    memset(f->h, 0, f->n * MT_UL_DIM * sizeof *f->h);
    for (s = 0; s < f->n; s++) {
        float *m = f->h + s * MT_UL_DIM;
        float div = (float)(f->lens[s] ? f->lens[s] : 1);
        for (t = 0; t < f->lens[s]; t++, row++)
            add_into(m, f->x + row * MT_UL_DIM, MT_UL_DIM);
        for (j = 0; j < MT_UL_DIM; j++)
            m[j] /= div;
    }
    mtx_ul_gemm(f->h, f->n, MT_UL_DIM, f->w->w_pool, f->w->b_pool, MT_UL_DIM,
                out);
    for (s = 0; s < f->n; s++) {
        float *o = out + s * MT_UL_DIM, ss = 0.0f, inv;
        for (j = 0; j < MT_UL_DIM; j++) {
            o[j] = tanhf(o[j]);
            ss += o[j] * o[j];
        }
        inv = 1.0f / sqrtf(ss > L2_EPS ? ss : L2_EPS);
        for (j = 0; j < MT_UL_DIM; j++)
            o[j] *= inv;
    }
}

/* Bytes of scratch per packed token: x, h, att, y (512 floats each),
 * qkv and ff (1536 each), then the int8 input bytes, scale and zero. */
#define ROW_FLOATS (4 * MT_UL_DIM + 2 * MT_UL_FF)
#define ROW_BYTES                                                              \
    (ROW_FLOATS * sizeof(float) + MT_UL_FF + sizeof(float) + sizeof(int32_t))

void mtx_ul_scratch_free(struct mt_ul_scratch *s)
{
    if (!s)
        return;
    mt_free(s->buf);
    s->buf = NULL;
    s->rows = 0;
}

/* Points f's buffers into s->buf, growing it to 'rows' tokens first. */
static enum mt_status fwd_carve(struct fwd *f, struct mt_ul_scratch *s,
                                size_t rows)
{
    float *p;

    if (rows > s->rows) {
        mtx_ul_scratch_free(s);
        s->buf =
            mt_malloc(MT_UL_ATT_SCRATCH * sizeof(float) + rows * ROW_BYTES);
        if (!s->buf)
            return MT_ENOMEM;
        s->rows = rows;
    }
    f->att_tmp = s->buf;
    p = f->att_tmp + MT_UL_ATT_SCRATCH;
    f->x = p;
    f->h = p + rows * MT_UL_DIM;
    f->att = p + 2 * rows * MT_UL_DIM;
    f->y = p + 3 * rows * MT_UL_DIM;
    f->qkv = p + 4 * rows * MT_UL_DIM;
    f->ff = f->qkv + rows * MT_UL_FF;
    f->qa.scale = f->ff + rows * MT_UL_FF;
    f->qa.zero = (int32_t *)(void *)(f->qa.scale + rows);
    f->qa.u = (uint8_t *)(void *)(f->qa.zero + rows);
    return MT_OK;
}

enum mt_status mtx_ul_forward(const struct mt_ul_weights *w,
                              const int32_t *const *ids, const size_t *lens,
                              size_t n, float *out, struct mt_ul_scratch *sc)
{
    struct mt_ul_scratch own = {NULL, 0};
    struct fwd f;
    enum mt_status st;
    size_t s;

    memset(&f, 0, sizeof f);
    f.w = w;
    f.lens = lens;
    f.n = n;
    for (s = 0; s < n; s++)
        f.n_tok += lens[s];
    st = fwd_carve(&f, sc ? sc : &own, f.n_tok > n ? f.n_tok : n);
    if (st == MT_OK) {
        embed_tokens(&f, ids);
        layer(&f, &w->layer[0]);
        layer(&f, &w->layer[1]);
        pool(&f, out);
    }
    mtx_ul_scratch_free(&own);
    return st;
}
