/* USE-lite converter: TF.js model.json + weight shards + vocab.json -> one
 * versioned, checksummed weight file (layout in src/model/use_lite.h),
 * float32 with matmul weights pre-packed into 16-column panels, or the int8
 * variant. Build-time only: linked into tools/use_lite_convert, not into
 * the library. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/use_lite.h"
#include "use_lite_conv.h"

#define ENC "module_apply_default/Encoder_en/KonaTransformer/Encode/"
#define ENC_MOD "module/Encoder_en/KonaTransformer/Encode/"
#define STACK ENC "TransformerStack/"
#define TL "/TransformerLayer/"
#define LNORM "layer_prepostprocess/layer_norm/layer_norm_"
#define CONCAT "/ConcatPartitions/concat"
#define MAX_SHARD_BYTES ((size_t)256 << 20)

/* What to take from the graph: TF name -> our name, expected shape. */
struct wanted {
    const char *tf;
    const char *name;
    uint32_t dims[2]; /* [K,N] after dropping the 1x1 conv dims */
    int pack;         /* 1: packed matmul weight; 2: embedding */
};

#define LAYER_WANTED(L, D, Q)                                                  \
    {ENC "Layer_" #L TL LNORM "scale" CONCAT, "l" #L ".ln1_g", {D, 0}, 0},     \
        {ENC "Layer_" #L TL LNORM "bias" CONCAT, "l" #L ".ln1_b", {D, 0}, 0},  \
        {ENC_MOD "Layer_" #L TL                                                \
                 "MultiheadAttention/qkv_transform_single/kernel/part_0",      \
         "l" #L ".w_qkv",                                                      \
         {D, Q},                                                               \
         1},                                                                   \
        {ENC "Layer_" #L TL                                                    \
             "MultiheadAttention/qkv_transform_single/bias" CONCAT,            \
         "l" #L ".b_qkv",                                                      \
         {Q, 0},                                                               \
         0},                                                                   \
        {ENC_MOD "Layer_" #L TL                                                \
                 "MultiheadAttention/output_transform_single/kernel/part_0",   \
         "l" #L ".w_out",                                                      \
         {D, 512},                                                             \
         1},                                                                   \
        {ENC "Layer_" #L TL                                                    \
             "MultiheadAttention/output_transform_single/bias" CONCAT,         \
         "l" #L ".b_out",                                                      \
         {512, 0},                                                             \
         0},                                                                   \
        {ENC "Layer_" #L TL "FFN/" LNORM "scale" CONCAT,                       \
         "l" #L ".ln2_g",                                                      \
         {512, 0},                                                             \
         0},                                                                   \
        {ENC "Layer_" #L TL "FFN/" LNORM "bias" CONCAT,                        \
         "l" #L ".ln2_b",                                                      \
         {512, 0},                                                             \
         0},                                                                   \
        {STACK "Layer_" #L TL "FFN/conv1/Tensordot/Reshape_1",                 \
         "l" #L ".w_ff1",                                                      \
         {512, 1536},                                                          \
         1},                                                                   \
        {ENC "Layer_" #L TL "FFN/conv1/bias" CONCAT,                           \
         "l" #L ".b_ff1",                                                      \
         {1536, 0},                                                            \
         0},                                                                   \
        {STACK "Layer_" #L TL "FFN/conv2/Tensordot/Reshape_1",                 \
         "l" #L ".w_ff2",                                                      \
         {1536, 512},                                                          \
         1},                                                                   \
    {                                                                          \
        ENC "Layer_" #L TL "FFN/conv2/bias" CONCAT, "l" #L ".b_ff2", {512, 0}, \
            0                                                                  \
    }

static const struct wanted wanted[] = {
    {"module/Embeddings_en", "embed", {MT_UL_VOCAB, MT_UL_EMB}, 2},
    {STACK "Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
     "timing_inv",
     {1, 128},
     0},
    LAYER_WANTED(0, 256, 768),
    {ENC "Layer_0" TL "dense/kernel" CONCAT, "l0.w_res", {256, 512}, 1},
    {ENC "Layer_0" TL "dense/bias" CONCAT, "l0.b_res", {512, 0}, 0},
    LAYER_WANTED(1, 512, 1536),
    {"module/Encoder_en/hidden_layers/tanh_layer_0/weights",
     "w_pool",
     {512, 512},
     1},
    {"module/Encoder_en/hidden_layers/tanh_layer_0/bias",
     "b_pool",
     {512, 0},
     0},
};
#define N_WANTED (sizeof wanted / sizeof wanted[0])

/* Graph constants the C forward pass hard-codes; conversion refuses a
 * model whose graph disagrees. */
struct constant {
    const char *tf;
    double value;
};

static const struct constant constants[] = {
    {STACK "Layer_0" TL "MultiheadAttention/mul/y", 0.125},
    {STACK "Layer_1" TL "MultiheadAttention/mul/y", 0.08838834764831845},
    {STACK "Layer_1" TL "FFN/layer_prepostprocess/layer_norm/Cast/x", 1e-6},
    {STACK "Layer_1" TL "MultiheadAttention/DotProductAttention/"
           "attention_bias_ignore_padding/mul/y",
     -1e9},
    {STACK "Layer_1" TL "MultiheadAttention/split_heads/"
           "split_last_dimension/Reshape/shape/2",
     MT_UL_HEADS},
    {"module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/"
     "Less/y",
     MT_UL_MAX_LEN},
    {ENC "SparseToDense/default_value", -1},
    {"module_apply_default/Encoder_en/hidden_layers/l2_normalize/"
     "Maximum/y",
     1e-12},
};
#define N_CONSTANTS (sizeof constants / sizeof constants[0])

/* A tensor found in the shards. */
struct found {
    const char *data; /* into the concatenated shards */
    uint32_t dims[4];
    uint32_t ndim;
    int is_int;
};

struct conv {
    const char *dir;
    struct mt_buf shards;
    json_t *model;
    json_t *vocab;
    struct found found[N_WANTED];
    int int8;
    struct mt_error *err;
};

/* ==== Reading the package ==== */

static enum mt_status read_file(const char *path, struct mt_buf *b,
                                struct mt_error *err)
{
    char chunk[1 << 16];
    size_t got;
    enum mt_status st = MT_OK;
    FILE *f = fopen(path, "rb");

    if (!f)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    while (st == MT_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        st = mtx_buf_append(b, chunk, got);
    if (st == MT_OK && ferror(f))
        st = MT_EIO;
    fclose(f);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: read failed", path);
    return MT_OK;
}

static enum mt_status load_json(const char *dir, const char *name, json_t **out,
                                struct mt_error *err)
{
    char path[4096];
    json_error_t jerr;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = json_load_file(path, JSON_DECODE_ANY, &jerr);
    if (!*out)
        return mt_fail(err, MT_EPARSE, "%s:%d: %s", path, jerr.line, jerr.text);
    return MT_OK;
}

static enum mt_status read_shards(struct conv *c, json_t *group)
{
    json_t *paths = json_object_get(group, "paths");
    char path[4096];
    size_t i;
    enum mt_status st;

    if (!json_is_array(paths))
        return mt_fail(c->err, MT_EPARSE, "model.json: group has no paths");
    for (i = 0; i < json_array_size(paths); i++) {
        const char *p = json_string_value(json_array_get(paths, i));
        if (!p || strchr(p, '/'))
            return mt_fail(c->err, MT_EPARSE, "model.json: bad shard path");
        snprintf(path, sizeof path, "%s/%s", c->dir, p);
        st = read_file(path, &c->shards, c->err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

static int find_wanted(const char *tf)
{
    size_t i;

    for (i = 0; i < N_WANTED; i++)
        if (strcmp(wanted[i].tf, tf) == 0)
            return (int)i;
    return -1;
}

static enum mt_status check_constant(struct conv *c, const char *tf,
                                     const char *data, int is_int)
{
    size_t i;
    double v;

    for (i = 0; i < N_CONSTANTS; i++) {
        if (strcmp(constants[i].tf, tf) != 0)
            continue;
        if (is_int) {
            int32_t iv;
            memcpy(&iv, data, 4);
            v = iv;
        } else {
            float fv;
            memcpy(&fv, data, 4);
            v = fv;
        }
        if (fabs(v - constants[i].value) > 1e-6 * fabs(constants[i].value))
            return mt_fail(c->err, MT_EUNSUPPORTED,
                           "model.json: %s is %g, expected %g", tf, v,
                           constants[i].value);
        return MT_OK;
    }
    return MT_OK;
}

/* Records one manifest entry at 'off' in the shards; advances 'off'. */
static enum mt_status take_weight(struct conv *c, json_t *w, size_t *off)
{
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *dt = json_string_value(json_object_get(w, "dtype"));
    json_t *shape = json_object_get(w, "shape");
    struct found f;
    size_t i, count = 1;
    int idx;

    if (!name || !dt || !json_is_array(shape) || json_array_size(shape) > 4)
        return mt_fail(c->err, MT_EPARSE, "model.json: bad weight entry");
    if (strcmp(dt, "float32") != 0 && strcmp(dt, "int32") != 0)
        return mt_fail(c->err, MT_EUNSUPPORTED, "%s: dtype %s", name, dt);
    if (json_object_get(w, "quantization"))
        return mt_fail(c->err, MT_EUNSUPPORTED, "%s: quantized", name);
    memset(&f, 0, sizeof f);
    f.ndim = (uint32_t)json_array_size(shape);
    for (i = 0; i < f.ndim; i++) {
        json_int_t d = json_integer_value(json_array_get(shape, i));
        if (d < 0 || d > (1 << 24))
            return mt_fail(c->err, MT_EPARSE, "%s: bad shape", name);
        f.dims[i] = (uint32_t)d;
        count *= (size_t)d;
    }
    if (count * 4 > c->shards.len - *off)
        return mt_fail(c->err, MT_EPARSE, "%s: past the shards", name);
    f.data = c->shards.data + *off;
    f.is_int = dt[0] == 'i';
    *off += count * 4;
    idx = find_wanted(name);
    if (idx >= 0)
        c->found[idx] = f;
    return check_constant(c, name, f.data, f.is_int);
}

static enum mt_status read_manifest(struct conv *c)
{
    json_t *man = json_object_get(c->model, "weightsManifest");
    size_t g, i;
    enum mt_status st;

    if (!json_is_array(man))
        return mt_fail(c->err, MT_EPARSE, "model.json: no weightsManifest");
    for (g = 0; g < json_array_size(man); g++) {
        json_t *group = json_array_get(man, g);
        json_t *ws = json_object_get(group, "weights");
        size_t off = c->shards.len;
        st = read_shards(c, group);
        if (st != MT_OK)
            return st;
        for (i = 0; i < json_array_size(ws); i++) {
            st = take_weight(c, json_array_get(ws, i), &off);
            if (st != MT_OK)
                return st;
        }
    }
    return MT_OK;
}

/* Checks every wanted tensor was found with the expected shape (1x1 conv
 * kernels [1,1,K,N] are read as [K,N]). */
static enum mt_status check_found(struct conv *c)
{
    size_t i;

    for (i = 0; i < N_WANTED; i++) {
        const struct found *f = &c->found[i];
        const uint32_t *d = f->dims;
        uint32_t k = f->ndim == 4 ? d[2] : d[0];
        uint32_t n = f->ndim == 4 ? d[3] : f->ndim == 2 ? d[1] : 0;
        int conv_ok = f->ndim != 4 || (d[0] == 1 && d[1] == 1);
        if (!f->data)
            return mt_fail(c->err, MT_EPARSE, "model.json: no tensor %s",
                           wanted[i].tf);
        if (f->is_int || !conv_ok || k != wanted[i].dims[0] ||
            n != wanted[i].dims[1])
            return mt_fail(c->err, MT_EPARSE, "%s: unexpected shape",
                           wanted[i].tf);
    }
    return MT_OK;
}

/* ==== Writing ==== */

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static void pack_panels(const float *b, size_t k, size_t n, float *dst)
{
    size_t p, r, j;

    for (p = 0; p < n / MT_UL_PANEL; p++)
        for (r = 0; r < k; r++)
            for (j = 0; j < MT_UL_PANEL; j++)
                *dst++ = b[r * n + p * MT_UL_PANEL + j];
}

/* Symmetric int8: q = round(x / s), s = max|x| / 127 per group of
 * 'count' values 'stride' apart. */
static float quantize(const float *x, size_t count, size_t stride, int8_t *q)
{
    float mx = 0.0f, s;
    size_t i;

    for (i = 0; i < count; i++)
        mx = fmaxf(mx, fabsf(x[i * stride]));
    s = mx > 0.0f ? mx / 127.0f : 1.0f;
    for (i = 0; i < count; i++)
        q[i * stride] = (int8_t)lrintf(x[i * stride] / s);
    return s;
}

/* Size of tensor i's payload in the output. */
static size_t tensor_bytes(const struct conv *c, size_t i)
{
    size_t k = wanted[i].dims[0];
    size_t n = wanted[i].dims[1] ? wanted[i].dims[1] : 1;

    if (!c->int8 || !wanted[i].pack)
        return k * n * 4;
    return align64(k * n) + (wanted[i].pack == 2 ? k : n) * 4;
}

static enum mt_status write_int8(const struct conv *c, size_t i, char *dst)
{
    size_t k = wanted[i].dims[0], n = wanted[i].dims[1], r;
    const float *src = (const float *)(const void *)c->found[i].data;
    float *tmp = NULL, *scales = (float *)(void *)(dst + align64(k * n));
    int8_t *q = (int8_t *)dst;

    if (wanted[i].pack == 2) {
        for (r = 0; r < k; r++)
            scales[r] = quantize(src + r * n, n, 1, q + r * n);
        return MT_OK;
    }
    tmp = mt_malloc(k * n * sizeof *tmp);
    if (!tmp)
        return MT_ENOMEM;
    pack_panels(src, k, n, tmp);
    for (r = 0; r < n; r++) { /* column r sits in panel r/16, lane r%16 */
        size_t base = (r / MT_UL_PANEL) * k * MT_UL_PANEL + r % MT_UL_PANEL;
        scales[r] = quantize(tmp + base, k, MT_UL_PANEL, q + base);
    }
    mt_free(tmp);
    return MT_OK;
}

static enum mt_status write_tensor(const struct conv *c, size_t i,
                                   struct mt_ul_tensor *t, char *dst)
{
    size_t k = wanted[i].dims[0], n = wanted[i].dims[1];
    const float *src = (const float *)(const void *)c->found[i].data;

    snprintf(t->name, sizeof t->name, "%s", wanted[i].name);
    t->ndim = n ? 2 : 1;
    t->dims[0] = (uint32_t)k;
    t->dims[1] = (uint32_t)n;
    if (c->int8 && wanted[i].pack) {
        t->dtype = wanted[i].pack == 2 ? MT_UL_I8ROW : MT_UL_I8PACK;
        return write_int8(c, i, dst);
    }
    t->dtype = wanted[i].pack == 1 ? MT_UL_PACKED : MT_UL_F32;
    if (wanted[i].pack == 1)
        pack_panels(src, k, n, (float *)(void *)dst);
    else
        memcpy(dst, src, t->nbytes);
    return MT_OK;
}

/* Checks vocab.json ([[piece, score|null], ...]) and measures it: the
 * number of pieces and the bytes of their text. */
static enum mt_status vocab_size(const struct conv *c, size_t *n_pieces,
                                 size_t *str_len)
{
    size_t i, n = json_array_size(c->vocab);

    *str_len = 0;
    if (!json_is_array(c->vocab) || n == 0 || n > MT_UL_VOCAB)
        return mt_fail(c->err, MT_EPARSE, "vocab.json: not a vocabulary");
    for (i = 0; i < n; i++) {
        json_t *e = json_array_get(c->vocab, i);
        json_t *sc = json_array_get(e, 1);
        if (!json_is_string(json_array_get(e, 0)) ||
            !(json_is_number(sc) || json_is_null(sc)))
            return mt_fail(c->err, MT_EPARSE, "vocab.json: entry %zu", i);
        *str_len += json_string_length(json_array_get(e, 0));
    }
    *n_pieces = n;
    return MT_OK;
}

static void write_vocab(const struct conv *c, struct mt_ul_piece *pieces,
                        char *strings)
{
    size_t i, off = 0;

    for (i = 0; i < json_array_size(c->vocab); i++) {
        json_t *e = json_array_get(c->vocab, i);
        json_t *s = json_array_get(e, 0);
        size_t len = json_string_length(s);
        pieces[i].score = json_number_value(json_array_get(e, 1));
        pieces[i].str_off = (uint32_t)off;
        pieces[i].str_len = (uint32_t)len;
        memcpy(strings + off, json_string_value(s), len);
        off += len;
    }
}

/* Lays out and fills the whole file in memory. */
static enum mt_status build_image(const struct conv *c, struct mt_buf *img)
{
    struct mt_ul_header h;
    struct mt_ul_tensor *tt;
    size_t n_pieces = 0, str_len = 0, off, i;
    enum mt_status st = vocab_size(c, &n_pieces, &str_len);

    if (st != MT_OK)
        return st;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MT_UL_MAGIC, 8);
    h.version = MT_UL_VERSION;
    h.flags = c->int8 ? MT_UL_FLAG_INT8 : 0;
    h.n_tensors = (uint32_t)N_WANTED;
    h.n_pieces = (uint32_t)n_pieces;
    h.pieces_off = sizeof h + N_WANTED * sizeof *tt;
    h.strings_off = h.pieces_off + n_pieces * sizeof(struct mt_ul_piece);
    h.strings_len = str_len;
    off = align64(h.strings_off + str_len);
    for (i = 0; i < N_WANTED; i++)
        off = align64(off + tensor_bytes(c, i));
    h.file_size = off;
    st = mtx_buf_reserve(img, off + 1);
    if (st != MT_OK)
        return mt_fail(c->err, st, "weight file image");
    memset(img->data, 0, off);
    img->len = off;
    tt = (struct mt_ul_tensor *)(void *)(img->data + sizeof h);
    write_vocab(c, (struct mt_ul_piece *)(void *)(img->data + h.pieces_off),
                img->data + h.strings_off);
    off = align64(h.strings_off + str_len);
    for (i = 0; i < N_WANTED && st == MT_OK; i++) {
        tt[i].offset = off;
        tt[i].nbytes = tensor_bytes(c, i);
        st = write_tensor(c, i, &tt[i], img->data + off);
        off = align64(off + tt[i].nbytes);
    }
    h.checksum = mtx_ul_crc32(0, img->data + sizeof h, h.file_size - sizeof h);
    memcpy(img->data, &h, sizeof h);
    return st;
}

enum mt_status mt_ul_convert(const char *src_dir, const char *out_path,
                             int int8, struct mt_error *err)
{
    struct conv c;
    struct mt_buf img = MT_BUF_INIT(MAX_SHARD_BYTES);
    enum mt_status st;

    mtx_jsonl_init_alloc(); /* jansson allocates through mt_malloc */
    memset(&c, 0, sizeof c);
    c.dir = src_dir;
    c.int8 = int8;
    c.err = err;
    c.shards = MT_BUF_INIT(MAX_SHARD_BYTES);
    st = load_json(src_dir, "model.json", &c.model, err);
    if (st == MT_OK)
        st = load_json(src_dir, "vocab.json", &c.vocab, err);
    if (st == MT_OK)
        st = read_manifest(&c);
    if (st == MT_OK)
        st = check_found(&c);
    if (st == MT_OK)
        st = build_image(&c, &img);
    if (st == MT_OK)
        st = mtx_file_write_atomic(out_path, img.data, img.len, err);
    json_decref(c.model);
    json_decref(c.vocab);
    mtx_buf_free(&c.shards);
    mtx_buf_free(&img);
    return st;
}
