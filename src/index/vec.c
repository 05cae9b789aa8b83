/* int8 vector sets: truncation and quantisation, flat search over int8
 * codes or float32, and the set's sections of a vector file (vec_file.c:
 * segment container, written atomically, read back through mmap). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/simd.h"
#include "index/vec.h"
#include "medtrust/core.h"

/* A residual r in [-1/2, 1/2] of a code step is kept, with 4 bits, as
 * round(15 r), a value in -7..7 read back as v / 15; with 2 bits, as the
 * quarter of the step it falls in, u = floor(4 (r + 1/2)) in 0..3, read
 * back as its centre (2u - 3) / 8 (the uniform quantiser with the least
 * error for a uniform r). */
#define REFINE_STEPS 15
#define REFINE2_DIV 8
#define FLAT_BLOCK 256 /* rows per batched kernel call */

struct mt_vecset {
    struct mt_vecset_params p;
    uint32_t dims;
    uint32_t count;
    uint32_t cap;
    const int8_t *codes;   /* count * dims, row-major */
    const float *scales;   /* count */
    const float *floats;   /* count * dims, or NULL */
    const uint8_t *refine; /* count * rbytes nibbles, or NULL */
    uint32_t rbytes;       /* (dims + 1) / 2, or (dims + 3) / 4 with 2 bits */
    int8_t *codes_mem;     /* owned buffers while building */
    float *scales_mem;
    float *floats_mem;
    uint8_t *refine_mem;
    struct mtx_vec_file *file; /* owned by a set from mtx_vecset_open */
    int readonly;
};

/* ==== Quantisation ==== */

static double sum_squares(const float *x, uint32_t dims)
{
    double s = 0.0;
    uint32_t i;

    for (i = 0; i < dims; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

enum mt_status mtx_vec_normalize(float *x, uint32_t dims)
{
    double s = sum_squares(x, dims);
    float inv;
    uint32_t i;

    if (!(s > 0.0) || !isfinite(s))
        return MT_EINVAL;
    inv = (float)(1.0 / sqrt(s));
    for (i = 0; i < dims; i++)
        x[i] *= inv;
    return MT_OK;
}

enum mt_status mtx_vec_truncate_normalize(const float *in, uint32_t dims,
                                          uint32_t new_dims, float *out)
{
    double s;
    float inv;
    uint32_t i;

    if (new_dims == 0 || new_dims > dims)
        return MT_EINVAL;
    s = sum_squares(in, new_dims);
    if (!(s > 0.0) || !isfinite(s))
        return MT_EINVAL;
    inv = (float)(1.0 / sqrt(s));
    for (i = 0; i < new_dims; i++)
        out[i] = in[i] * inv;
    return MT_OK;
}

float mtx_vec_quantize(const float *x, uint32_t dims, int8_t *codes)
{
    float max = 0.0f;
    float inv;
    uint32_t i;

    for (i = 0; i < dims; i++)
        if (fabsf(x[i]) > max)
            max = fabsf(x[i]);
    if (!(max > 0.0f) || !isfinite(max)) {
        memset(codes, 0, dims);
        return 0.0f;
    }
    inv = 127.0f / max;
    for (i = 0; i < dims; i++) {
        long c = lrintf(x[i] * inv);
        c = c > 127 ? 127 : (c < -127 ? -127 : c);
        codes[i] = (int8_t)c;
    }
    return max / 127.0f;
}

/* ==== Top-k ==== */

static void topk_sift_down(struct mt_vec_hit *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t w = i;
        uint32_t l = 2 * i + 1;
        struct mt_vec_hit t;

        if (l < n && mtx_vec_hit_better(h[w], h[l]))
            w = l;
        if (l + 1 < n && mtx_vec_hit_better(h[w], h[l + 1]))
            w = l + 1;
        if (w == i)
            return;
        t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

int mtx_vec_topk_push(struct mt_vec_topk *t, uint32_t id, float score)
{
    struct mt_vec_hit x = {id, score};
    uint32_t i;

    if (t->n < t->k) {
        i = t->n++;
        while (i > 0 && mtx_vec_hit_better(t->h[(i - 1) / 2], x)) {
            t->h[i] = t->h[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        t->h[i] = x;
        return 1;
    }
    if (t->k == 0 || !mtx_vec_hit_better(x, t->h[0]))
        return 0;
    t->h[0] = x;
    topk_sift_down(t->h, t->n, 0);
    return 1;
}

int mtx_vec_hit_cmp(const void *a, const void *b)
{
    const struct mt_vec_hit *x = a;
    const struct mt_vec_hit *y = b;

    if (mtx_vec_hit_better(*x, *y))
        return -1;
    return mtx_vec_hit_better(*y, *x);
}

void mtx_vec_topk_sort(struct mt_vec_topk *t)
{
    if (t->n > 1)
        qsort(t->h, t->n, sizeof *t->h, mtx_vec_hit_cmp);
}

/* ==== Vector sets ==== */

struct mt_vecset_params mtx_vecset_default_params(void)
{
    struct mt_vecset_params p = {0, 1, 1, MT_VEC_MAX_COUNT, 4};
    return p;
}

enum mt_status mtx_vecset_new(uint32_t dims,
                              const struct mt_vecset_params *params,
                              struct mt_vecset **out)
{
    struct mt_vecset *vs;

    *out = NULL;
    if (dims == 0 || dims > MT_VEC_MAX_DIMS ||
        (params && params->refine && params->refine_bits != 2 &&
         params->refine_bits != 4))
        return MT_EINVAL;
    vs = mt_calloc(1, sizeof *vs);
    if (!vs)
        return MT_ENOMEM;
    vs->p = params ? *params : mtx_vecset_default_params();
    if (vs->p.max_count == 0 || vs->p.max_count > MT_VEC_MAX_COUNT)
        vs->p.max_count = MT_VEC_MAX_COUNT;
    vs->dims = dims;
    vs->rbytes = vs->p.refine_bits == 2 ? (dims + 3) / 4 : (dims + 1) / 2;
    *out = vs;
    return MT_OK;
}

void mtx_vecset_free(struct mt_vecset *vs)
{
    if (!vs)
        return;
    mt_free(vs->codes_mem);
    mt_free(vs->scales_mem);
    mt_free(vs->floats_mem);
    mt_free(vs->refine_mem);
    mtx_vec_file_close(vs->file);
    mt_free(vs);
}

/* Grows every array to 'cap' rows; on failure the set stays usable at
 * its old capacity (arrays already grown are simply larger). */
static enum mt_status vecset_grow(struct mt_vecset *vs, uint32_t cap)
{
    void *p;

    p = mt_realloc(vs->scales_mem, (size_t)cap * sizeof(float));
    if (!p)
        return MT_ENOMEM;
    vs->scales = vs->scales_mem = p;
    p = mt_realloc(vs->codes_mem, (size_t)cap * vs->dims);
    if (!p)
        return MT_ENOMEM;
    vs->codes = vs->codes_mem = p;
    if (vs->p.keep_float) {
        p = mt_realloc(vs->floats_mem, (size_t)cap * vs->dims * sizeof(float));
        if (!p)
            return MT_ENOMEM;
        vs->floats = vs->floats_mem = p;
    }
    if (vs->p.refine) {
        p = mt_realloc(vs->refine_mem, (size_t)cap * vs->rbytes);
        if (!p)
            return MT_ENOMEM;
        vs->refine = vs->refine_mem = p;
    }
    vs->cap = cap;
    return MT_OK;
}

static int all_finite(const float *v, uint32_t dims)
{
    uint32_t i;

    for (i = 0; i < dims; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Residual of each component against its code, in units of the code
 * step: r = x / scale - code in [-1/2, 1/2], kept as round(15 r), two
 * components a byte (low nibble first), or with 2 bits as
 * floor(4 (r + 1/2)), four a byte (lowest bits first). */
static void put_residual(const float *x, uint32_t dims, const int8_t *codes,
                         float scale, uint32_t bits, uint8_t *out)
{
    uint32_t per = 8 / bits;
    uint32_t i;

    memset(out, 0, (dims + per - 1) / per);
    if (!(scale > 0.0f))
        return;
    for (i = 0; i < dims; i++) {
        float r = x[i] / scale - (float)codes[i];
        long v;
        if (bits == 2) {
            v = lrintf(floorf((r + 0.5f) * 4.0f));
            v = v > 3 ? 3 : (v < 0 ? 0 : v);
        } else {
            v = lrintf(r * REFINE_STEPS);
            v = v > 7 ? 7 : (v < -7 ? -7 : v);
            v &= 15;
        }
        out[i / per] |= (uint8_t)((unsigned long)v << (bits * (i % per)));
    }
}

enum mt_status mtx_vecset_add(struct mt_vecset *vs, const float *v,
                              uint32_t *id)
{
    size_t row = (size_t)vs->count * vs->dims;
    double norm = 1.0;
    float scale;
    uint32_t i;

    if (vs->readonly)
        return MT_EUNSUPPORTED;
    if (vs->count >= vs->p.max_count)
        return MT_ELIMIT;
    if (!all_finite(v, vs->dims))
        return MT_EINVAL;
    if (vs->p.normalize) {
        norm = sqrt(sum_squares(v, vs->dims));
        if (!(norm > 0.0) || !isfinite(norm))
            return MT_EINVAL;
    }
    if (vs->count == vs->cap) {
        uint32_t cap = vs->cap ? vs->cap * 2 : 64;
        if (cap > vs->p.max_count)
            cap = vs->p.max_count;
        if (vecset_grow(vs, cap) != MT_OK)
            return MT_ENOMEM;
    }
    /* Quantisation is scale-invariant: codes of v/|v| are the codes of v
     * and only the scale divides by the norm. */
    scale = mtx_vec_quantize(v, vs->dims, vs->codes_mem + row);
    vs->scales_mem[vs->count] = (float)((double)scale / norm);
    if (vs->refine_mem)
        put_residual(v, vs->dims, vs->codes_mem + row, scale, vs->p.refine_bits,
                     vs->refine_mem + (size_t)vs->count * vs->rbytes);
    if (vs->floats_mem)
        for (i = 0; i < vs->dims; i++)
            vs->floats_mem[row + i] = (float)((double)v[i] / norm);
    if (id)
        *id = vs->count;
    vs->count++;
    return MT_OK;
}

uint32_t mtx_vecset_count(const struct mt_vecset *vs)
{
    return vs->count;
}

uint32_t mtx_vecset_dims(const struct mt_vecset *vs)
{
    return vs->dims;
}

int mtx_vecset_has_float(const struct mt_vecset *vs)
{
    return vs->floats != NULL;
}

const int8_t *mtx_vecset_code(const struct mt_vecset *vs, uint32_t id)
{
    return vs->codes + (size_t)id * vs->dims;
}

float mtx_vecset_scale(const struct mt_vecset *vs, uint32_t id)
{
    return vs->scales[id];
}

const int8_t *mtx_vecset_codes(const struct mt_vecset *vs)
{
    return vs->codes;
}

const float *mtx_vecset_scales(const struct mt_vecset *vs)
{
    return vs->scales;
}

const float *mtx_vecset_float(const struct mt_vecset *vs, uint32_t id)
{
    return vs->floats ? vs->floats + (size_t)id * vs->dims : NULL;
}

const uint8_t *mtx_vecset_refine(const struct mt_vecset *vs, uint32_t id)
{
    return vs->refine ? vs->refine + (size_t)id * vs->rbytes : NULL;
}

uint32_t mtx_vecset_refine_bytes(const struct mt_vecset *vs)
{
    return vs->p.refine ? vs->rbytes : 0;
}

uint32_t mtx_vecset_refine_bits(const struct mt_vecset *vs)
{
    return vs->p.refine ? vs->p.refine_bits : 0;
}

/* Residuals first .. first + n - 1 as int8 numerators (of REFINE_STEPS
 * or REFINE2_DIV); 'first' is a multiple of 4. A whole byte at a time:
 * unpacking one component a step, with its byte and shift worked out
 * each time, was 42% of a query's instructions at ef 64. */
static void unpack_residual(const struct mt_vecset *vs, const uint8_t *r,
                            uint32_t first, uint32_t n, int8_t *out)
{
    uint32_t per = vs->p.refine_bits == 2 ? 4 : 2;
    const uint8_t *p = r + first / per;
    uint32_t i = 0;

    if (per == 4)
        for (; i + 4 <= n; i += 4, p++) {
            out[i] = (int8_t)(2 * (*p & 3) - 3);
            out[i + 1] = (int8_t)(2 * ((*p >> 2) & 3) - 3);
            out[i + 2] = (int8_t)(2 * ((*p >> 4) & 3) - 3);
            out[i + 3] = (int8_t)(2 * (*p >> 6) - 3);
        }
    else
        for (; i + 2 <= n; i += 2, p++) {
            out[i] = (int8_t)((int8_t)(*p << 4) >> 4);
            out[i + 1] = (int8_t)((int8_t)*p >> 4);
        }
    for (; i < n; i++) { /* the last byte's first components */
        uint32_t sh = vs->p.refine_bits * (i % per);
        if (per == 4)
            out[i] = (int8_t)(2 * ((*p >> sh) & 3) - 3);
        else
            out[i] = (int8_t)((int8_t)(*p << (4 - sh)) >> 4);
    }
}

/* q . (code + residual) * scale: the residuals are unpacked into int8
 * numerators so that both halves use the float x int8 kernel. */
static float rescore_refined(const struct mt_vecset *vs, const float *q,
                             uint32_t id)
{
    const struct mt_simd_kernels *k = mtx_simd_get();
    const uint8_t *r = mtx_vecset_refine(vs, id);
    float div = vs->p.refine_bits == 2 ? REFINE2_DIV : REFINE_STEPS;
    int8_t res[512];
    float dot = k->dot_f32_i8(q, mtx_vecset_code(vs, id), vs->dims);
    uint32_t done;

    for (done = 0; done < vs->dims; done += (uint32_t)sizeof res) {
        uint32_t n = vs->dims - done;
        n = n < sizeof res ? n : (uint32_t)sizeof res;
        unpack_residual(vs, r, done, n, res);
        dot += k->dot_f32_i8(q + done, res, n) / div;
    }
    return dot * vs->scales[id];
}

float mtx_vecset_rescore(const struct mt_vecset *vs, const float *q,
                         uint32_t id)
{
    const struct mt_simd_kernels *k = mtx_simd_get();

    if (vs->floats)
        return k->dot_f32(q, mtx_vecset_float(vs, id), vs->dims);
    if (vs->refine)
        return rescore_refined(vs, q, id);
    return k->dot_f32_i8(q, mtx_vecset_code(vs, id), vs->dims) * vs->scales[id];
}

/* ==== Files (layout in vec.h) ==== */

/* Version 3 adds the 2-bit residual (MT_VEC_FLAG_REFINE2); a set without
 * it is still written as version 2, which older binaries read. */
static const uint32_t vecset_lazy[] = {MT_VEC_LAZY_SECTIONS, 0};
static const struct mtx_vec_kind vecset_kind = {"MTVEC002", 3u, 2u, "MTVECSET",
                                                vecset_lazy};
static const struct mtx_vec_kind vecset_kind_v2 = {"MTVEC002", 2u, 2u,
                                                   "MTVECSET", vecset_lazy};

static uint64_t vecset_flags(const struct mt_vecset *vs)
{
    uint64_t refine =
        vs->p.refine_bits == 2 ? MT_VEC_FLAG_REFINE2 : MT_VEC_FLAG_REFINE;

    return (vs->floats ? MT_VEC_FLAG_FLOAT : 0) |
           (vs->p.normalize ? MT_VEC_FLAG_NORMALIZE : 0) |
           (vs->refine ? refine : 0);
}

enum mt_status mtx_vecset_put_sections(const struct mt_vecset *vs,
                                       struct mt_seg_writer *w,
                                       struct mt_error *err)
{
    size_t n = vs->count;
    uint64_t meta[3] = {vs->dims, vs->count, vecset_flags(vs)};
    enum mt_status st;

    st = mtx_vec_file_put(w, MT_VEC_SEC_META, meta, sizeof meta, err);
    if (st == MT_OK)
        st = mtx_vec_file_put(w, MT_VEC_SEC_SCALES, vs->scales,
                              n * sizeof(float), err);
    if (st == MT_OK && vs->floats)
        st = mtx_vec_file_put(w, MT_VEC_SEC_FLOATS, vs->floats,
                              n * vs->dims * sizeof(float), err);
    if (st == MT_OK)
        st =
            mtx_vec_file_put(w, MT_VEC_SEC_CODES, vs->codes, n * vs->dims, err);
    if (st == MT_OK && vs->refine)
        st = mtx_vec_file_put(w, MT_VEC_SEC_REFINE, vs->refine, n * vs->rbytes,
                              err);
    return st;
}

enum mt_status mtx_vecset_write(const struct mt_vecset *vs, const char *path,
                                struct mt_error *err)
{
    struct mt_seg_writer *w = NULL;
    enum mt_status st = mtx_vec_file_create(
        path,
        vecset_flags(vs) & MT_VEC_FLAG_REFINE2 ? &vecset_kind : &vecset_kind_v2,
        &w, err);

    if (st != MT_OK)
        return st;
    st = mtx_vecset_put_sections(vs, w, err);
    if (st != MT_OK) {
        mtx_seg_writer_abort(w);
        return st;
    }
    return mtx_seg_writer_commit(w, err);
}

/* A read-only set of the shape in 'meta' (dims, count, flags). */
static enum mt_status view_new(const uint64_t meta[3], struct mt_vecset **out)
{
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vecset *vs;

    if (meta[0] == 0 || meta[0] > MT_VEC_MAX_DIMS ||
        meta[1] > MT_VEC_MAX_COUNT ||
        meta[2] > (MT_VEC_FLAG_FLOAT | MT_VEC_FLAG_NORMALIZE |
                   MT_VEC_FLAG_REFINE | MT_VEC_FLAG_REFINE2) ||
        ((meta[2] & MT_VEC_FLAG_REFINE) && (meta[2] & MT_VEC_FLAG_REFINE2)))
        return MT_EPARSE;
    p.keep_float = (meta[2] & MT_VEC_FLAG_FLOAT) != 0;
    p.normalize = (meta[2] & MT_VEC_FLAG_NORMALIZE) != 0;
    p.refine = (meta[2] & (MT_VEC_FLAG_REFINE | MT_VEC_FLAG_REFINE2)) != 0;
    p.refine_bits = (meta[2] & MT_VEC_FLAG_REFINE2) ? 2 : 4;
    if (mtx_vecset_new((uint32_t)meta[0], &p, &vs) != MT_OK)
        return MT_ENOMEM;
    vs->readonly = 1;
    vs->count = vs->cap = (uint32_t)meta[1];
    *out = vs;
    return MT_OK;
}

/* Takes the arrays in the order the old writer put them. */
static enum mt_status view_take(struct mt_vecset *vs, struct mtx_vec_file *f,
                                struct mt_error *err)
{
    size_t n = vs->count;
    const void *p = NULL;
    enum mt_status st;

    st = mtx_vec_file_take(f, MT_VEC_SEC_SCALES, n * sizeof(float), &p, err);
    vs->scales = p;
    if (st == MT_OK && vs->p.keep_float) {
        st = mtx_vec_file_take(f, MT_VEC_SEC_FLOATS,
                               n * vs->dims * sizeof(float), &p, err);
        vs->floats = p;
    }
    if (st == MT_OK) {
        st = mtx_vec_file_take(f, MT_VEC_SEC_CODES, n * vs->dims, &p, err);
        vs->codes = p;
    }
    if (st == MT_OK && vs->p.refine) {
        st = mtx_vec_file_take(f, MT_VEC_SEC_REFINE, n * vs->rbytes, &p, err);
        vs->refine = p;
    }
    return st;
}

enum mt_status mtx_vecset_view(struct mtx_vec_file *f, struct mt_vecset **out,
                               struct mt_error *err)
{
    struct mt_vecset *vs = NULL;
    uint64_t meta[3];
    enum mt_status st;

    *out = NULL;
    st = mtx_vec_file_meta(f, MT_VEC_SEC_META, meta, 3, err);
    if (st != MT_OK)
        return st;
    st = view_new(meta, &vs);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: %s", mtx_vec_file_name(f),
                       st == MT_ENOMEM ? "out of memory" : "bad vector header");
    st = view_take(vs, f, err);
    if (st != MT_OK) {
        mtx_vecset_free(vs);
        return st;
    }
    *out = vs;
    return MT_OK;
}

enum mt_status mtx_vecset_open(const char *path, struct mt_vecset **out,
                               struct mt_error *err)
{
    struct mtx_vec_file *f = NULL;
    enum mt_status st;

    *out = NULL;
    st = mtx_vec_file_open(path, &vecset_kind, &f, err);
    if (st != MT_OK)
        return st;
    st = mtx_vecset_view(f, out, err);
    if (st == MT_OK)
        st = mtx_vec_file_done(f, err);
    if (st != MT_OK) {
        mtx_vecset_free(*out);
        *out = NULL;
        mtx_vec_file_close(f);
        return st;
    }
    (*out)->file = f;
    return MT_OK;
}

enum mt_status mtx_vecset_check(const struct mt_vecset *vs,
                                void (*step)(uint64_t bytes, void *user),
                                void *user, struct mt_error *err)
{
    return vs->file ? mtx_vec_file_check(vs->file, step, user, err) : MT_OK;
}

uint64_t mtx_vecset_check_bytes(const struct mt_vecset *vs)
{
    return vs->file ? mtx_vec_file_check_bytes(vs->file) : 0;
}

/* ==== Search ==== */

enum mt_status mtx_vecset_prepare_query(const struct mt_vecset *vs,
                                        const float *query, float *qf,
                                        int8_t *qcodes, float *qscale)
{
    memcpy(qf, query, (size_t)vs->dims * sizeof(float));
    if (!all_finite(qf, vs->dims))
        return MT_EINVAL;
    if (vs->p.normalize && mtx_vec_normalize(qf, vs->dims) != MT_OK)
        return MT_EINVAL;
    *qscale = mtx_vec_quantize(qf, vs->dims, qcodes);
    return MT_OK;
}

static int filtered_out(const struct mt_vec_filter *f, uint32_t id)
{
    return f && f->accept && !f->accept(id, f->user);
}

static void flat_scan(const struct mt_vecset *vs, const int8_t *qcodes,
                      float qscale, const struct mt_vec_filter *filter,
                      struct mt_vec_topk *t)
{
    const struct mt_simd_kernels *k = mtx_simd_get();
    int32_t dots[FLAT_BLOCK];
    uint32_t base;
    uint32_t r;

    for (base = 0; base < vs->count; base += FLAT_BLOCK) {
        uint32_t nb = vs->count - base;
        nb = nb < FLAT_BLOCK ? nb : FLAT_BLOCK;
        k->dot_i8_batch(qcodes, vs->codes + (size_t)base * vs->dims, vs->dims,
                        nb, vs->dims, dots);
        for (r = 0; r < nb; r++) {
            uint32_t id = base + r;
            if (filtered_out(filter, id))
                continue;
            mtx_vec_topk_push(t, id, (float)dots[r] * qscale * vs->scales[id]);
        }
    }
}

/* Re-scores the int8 candidates in t->h with mtx_vecset_rescore and keeps
 * the best k of them in hits. */
static void rescore_pool(const struct mt_vecset *vs, const float *qf,
                         const struct mt_vec_topk *pool, uint32_t k,
                         struct mt_vec_hit *hits, uint32_t *n)
{
    struct mt_vec_topk t = {hits, 0, k};
    uint32_t i;

    for (i = 0; i < pool->n; i++)
        mtx_vec_topk_push(&t, pool->h[i].id,
                          mtx_vecset_rescore(vs, qf, pool->h[i].id));
    mtx_vec_topk_sort(&t);
    *n = t.n;
}

/* Candidates the int8 scan keeps for re-scoring (residual or floats). */
uint32_t mtx_vec_rescore_pool(uint32_t k)
{
    return k > 16 ? 4 * k : 64;
}

static uint32_t pool_size(const struct mt_vecset *vs, uint32_t k)
{
    uint32_t r = mtx_vec_rescore_pool(k);

    /* Nothing finer than the codes: their own order stands. (A set with
     * float copies re-scores with them, as HNSW does; before, only the
     * residual did, and a float set's flat search kept the int8 order.) */
    if (!vs->refine && !vs->floats)
        return k;
    return r < vs->count ? r : vs->count;
}

enum mt_status mtx_vecset_search_flat(const struct mt_vecset *vs,
                                      const float *query, uint32_t k,
                                      const struct mt_vec_filter *filter,
                                      struct mt_vec_hit *hits, uint32_t *n)
{
    uint32_t r = pool_size(vs, k);
    struct mt_vec_topk t = {hits, 0, k};
    struct mt_vec_hit *pool = NULL;
    enum mt_status st;
    float qscale;
    float *qf;

    *n = 0;
    if (k == 0 || vs->count == 0)
        return MT_OK;
    qf = mt_malloc((size_t)vs->dims * (sizeof(float) + 1));
    if (r > k && qf) {
        pool = mt_malloc((size_t)r * sizeof *pool);
        t.h = pool;
        t.k = r;
    }
    if (!qf || (r > k && !pool)) {
        mt_free(qf);
        return MT_ENOMEM;
    }
    st = mtx_vecset_prepare_query(vs, query, qf, (int8_t *)(qf + vs->dims),
                                  &qscale);
    if (st == MT_OK) {
        flat_scan(vs, (int8_t *)(qf + vs->dims), qscale, filter, &t);
        if (pool)
            rescore_pool(vs, qf, &t, k, hits, n);
        else {
            mtx_vec_topk_sort(&t);
            *n = t.n;
        }
    }
    mt_free(pool);
    mt_free(qf);
    return st;
}

enum mt_status mtx_vecset_search_float(const struct mt_vecset *vs,
                                       const float *query, uint32_t k,
                                       const struct mt_vec_filter *filter,
                                       struct mt_vec_hit *hits, uint32_t *n)
{
    const struct mt_simd_kernels *kern = mtx_simd_get();
    struct mt_vec_topk t = {hits, 0, k};
    float *qf;
    uint32_t id;

    *n = 0;
    if (!vs->floats)
        return MT_EUNSUPPORTED;
    if (k == 0 || vs->count == 0)
        return MT_OK;
    qf = mt_malloc((size_t)vs->dims * sizeof(float));
    if (!qf)
        return MT_ENOMEM;
    memcpy(qf, query, (size_t)vs->dims * sizeof(float));
    if (!all_finite(qf, vs->dims) ||
        (vs->p.normalize && mtx_vec_normalize(qf, vs->dims) != MT_OK)) {
        mt_free(qf);
        return MT_EINVAL;
    }
    for (id = 0; id < vs->count; id++)
        if (!filtered_out(filter, id))
            mtx_vec_topk_push(
                &t, id, kern->dot_f32(qf, mtx_vecset_float(vs, id), vs->dims));
    mtx_vec_topk_sort(&t);
    *n = t.n;
    mt_free(qf);
    return MT_OK;
}
