/* onnx:DIR: an exported encoder folder (model.onnx or onnx/model.onnx,
 * config.json, tokenizer.json) run by ONNX Runtime (ort_rt.c) on
 * tokenizer.json's ids (hf_tok.c); the embedder and reranker backends.
 * The NLI classifier over it is in nli.c, BERTScore's token encoder in
 * token_encoder.c. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/onnx_enc.h"
#include "model/ort_rt.h"

struct mtx_onnx {
    struct mtx_ort *ort;
    struct mtx_hf_tok *tok;
    char *dir;
    size_t max_len;
    uint32_t hidden; /* config.json's hidden size, 0 when unknown */
    uint32_t layers; /* config.json's num_hidden_layers, 0 when unknown */
    char *name;      /* config.json's _name_or_path, or NULL */
    char **labels;   /* id2label, by id */
    size_t nlabels;
    enum mtx_onnx_pool st_pool;
};

/* ==== Reading the folder ==== */

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = mt_malloc(a + b + 2);

    if (p)
        snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

static int is_file(const char *p)
{
    struct stat sb;

    return p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Loads DIR/name as JSON into *out; a missing file is *out = NULL (and
 * MT_OK unless 'required'). */
static enum mt_status load_json(const char *dir, const char *name, int required,
                                json_t **out, struct mt_error *err)
{
    char *p = join(dir, name);
    json_error_t je;
    enum mt_status st = MT_OK;

    *out = NULL;
    if (!p)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (!is_file(p)) {
        if (required)
            st = mt_fail(err, MT_ENOTFOUND,
                         "%s: missing (an ONNX export folder holds "
                         "model.onnx, config.json and tokenizer.json)",
                         p);
    } else if (!(*out = json_load_file(p, 0, &je))) {
        st = mt_fail(err, MT_EPARSE, "%s:%d: %s", p, je.line, je.text);
    }
    mt_free(p);
    return st;
}

static size_t json_size(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);

    return json_is_integer(v) && json_integer_value(v) > 0
               ? (size_t)json_integer_value(v)
               : 0;
}

static enum mt_status read_labels(struct mtx_onnx *m, const json_t *cfg)
{
    const json_t *l = json_object_get(cfg, "id2label");
    const char *k;
    json_t *v;

    m->nlabels = json_object_size(l);
    if (!m->nlabels)
        return MT_OK;
    m->labels = mt_calloc(m->nlabels, sizeof *m->labels);
    if (!m->labels)
        return MT_ENOMEM;
    json_object_foreach((json_t *)(uintptr_t)l, k, v)
    {
        char *end;
        unsigned long i = strtoul(k, &end, 10);
        if (*end || i >= m->nlabels || !json_is_string(v))
            return MT_EPARSE;
        mt_free(m->labels[i]);
        m->labels[i] = mt_strdup(json_string_value(v));
        if (!m->labels[i])
            return MT_ENOMEM;
    }
    return MT_OK;
}

static enum mt_status read_config(struct mtx_onnx *m, struct mt_error *err)
{
    json_t *cfg = NULL;
    enum mt_status st = load_json(m->dir, "config.json", 1, &cfg, err);
    const char *type;

    if (st != MT_OK)
        return st;
    type = json_string_value(json_object_get(cfg, "model_type"));
    m->hidden = (uint32_t)json_size(cfg, "hidden_size");
    m->layers = (uint32_t)json_size(cfg, "num_hidden_layers");
    if (json_string_value(json_object_get(cfg, "_name_or_path")) &&
        *json_string_value(json_object_get(cfg, "_name_or_path")))
        m->name =
            mt_strdup(json_string_value(json_object_get(cfg, "_name_or_path")));
    if (!m->layers)
        m->layers = (uint32_t)json_size(cfg, "n_layers"); /* DistilBERT */
    if (!m->hidden)
        m->hidden = (uint32_t)json_size(cfg, "dim"); /* DistilBERT */
    m->max_len = json_size(cfg, "max_position_embeddings");
    /* RoBERTa's positions start after the padding index: 514 -> 512 */
    if (m->max_len > 2 && type &&
        (strcmp(type, "roberta") == 0 || strcmp(type, "xlm-roberta") == 0))
        m->max_len -= 2;
    st = read_labels(m, cfg);
    json_decref(cfg);
    if (st != MT_OK)
        return mt_fail(err, st, "%s/config.json: id2label: %s", m->dir,
                       st == MT_ENOMEM ? "out of memory"
                                       : "keys must be 0..N-1, values names");
    return MT_OK;
}

/* The length the export's own configs give, shortest first:
 * sentence_bert_config.json's max_seq_length, tokenizer_config.json's
 * model_max_length, tokenizer.json's truncation, config.json's
 * positions. */
static enum mt_status read_limits(struct mtx_onnx *m, struct mt_error *err)
{
    json_t *tc = NULL, *sb = NULL;
    enum mt_status st = load_json(m->dir, "tokenizer_config.json", 0, &tc, err);
    size_t v;

    if (st == MT_OK)
        st = load_json(m->dir, "sentence_bert_config.json", 0, &sb, err);
    if (st == MT_OK && mtx_hf_tok_max_len(m->tok))
        m->max_len = mtx_hf_tok_max_len(m->tok);
    v = json_size(tc, "model_max_length");
    if (v && v < 1000000)
        m->max_len = v;
    v = json_size(sb, "max_seq_length");
    if (v && (!m->max_len || v < m->max_len))
        m->max_len = v;
    if (!m->max_len)
        m->max_len = 512;
    json_decref(tc);
    json_decref(sb);
    return st;
}

/* sentence-transformers' Pooling module (modules.json names its folder). */
static enum mt_status read_pooling(struct mtx_onnx *m, struct mt_error *err)
{
    json_t *mods = NULL, *pc = NULL;
    enum mt_status st = load_json(m->dir, "modules.json", 0, &mods, err);
    size_t i;
    char *sub = NULL;

    m->st_pool = MTX_POOL_MEAN;
    for (i = 0; st == MT_OK && i < json_array_size(mods) && !sub; i++) {
        const json_t *e = json_array_get(mods, i);
        const char *ty = json_string_value(json_object_get(e, "type"));
        const char *p = json_string_value(json_object_get(e, "path"));
        if (ty && p && strstr(ty, "Pooling"))
            sub = join(p, "config.json");
    }
    if (sub)
        st = load_json(m->dir, sub, 0, &pc, err);
    if (json_is_true(json_object_get(pc, "pooling_mode_cls_token")))
        m->st_pool = MTX_POOL_CLS;
    else if (json_is_true(json_object_get(pc, "pooling_mode_max_tokens")))
        m->st_pool = MTX_POOL_MAX;
    mt_free(sub);
    json_decref(pc);
    json_decref(mods);
    return st;
}

static enum mt_status open_parts(struct mtx_onnx *m, uint32_t threads,
                                 const char *setting, struct mt_error *err)
{
    char *model = join(m->dir, "model.onnx");
    char *tok = join(m->dir, "tokenizer.json");
    enum mt_status st = model && tok ? MT_OK : MT_ENOMEM;

    if (st == MT_OK && !is_file(model)) {
        mt_free(model);
        model = join(m->dir, "onnx/model.onnx");
    }
    if (st == MT_OK && model && !is_file(model))
        st = mt_fail(err, MT_ENOTFOUND,
                     "%s onnx:%s: no model.onnx or onnx/model.onnx there "
                     "(export one with optimum-cli export onnx)",
                     setting, m->dir);
    else if (st == MT_OK && !is_file(tok))
        st = mt_fail(err, MT_ENOTFOUND, "%s onnx:%s: %s is missing", setting,
                     m->dir, tok);
    else if (st != MT_OK || !model)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = read_config(m, err);
    if (st == MT_OK)
        st = mtx_hf_tok_load(tok, &m->tok, err);
    if (st == MT_OK)
        st = read_limits(m, err);
    if (st == MT_OK)
        st = read_pooling(m, err);
    if (st == MT_OK)
        st = mtx_ort_open(model, threads, &m->ort, err);
    mt_free(model);
    mt_free(tok);
    return st;
}

enum mt_status mtx_onnx_open(const char *dir, uint32_t threads,
                             const char *setting, struct mtx_onnx **out,
                             struct mt_error *err)
{
    struct mtx_onnx *m;
    enum mt_status st;

    mtx_jsonl_init_alloc();
    if (!dir || !*dir)
        return mt_fail(err, MT_EINVAL, "%s onnx: needs a folder (onnx:DIR)",
                       setting);
    m = mt_calloc(1, sizeof *m);
    if (!m || !(m->dir = mt_strdup(dir))) {
        mt_free(m);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = open_parts(m, threads, setting, err);
    if (st != MT_OK) {
        mtx_onnx_close(m);
        return st;
    }
    *out = m;
    return MT_OK;
}

const char *mtx_onnx_label(const struct mtx_onnx *m, size_t i)
{
    return i < m->nlabels ? m->labels[i] : NULL;
}

size_t mtx_onnx_nlabels(const struct mtx_onnx *m)
{
    return m->nlabels;
}

const char *mtx_onnx_name(const struct mtx_onnx *m)
{
    return m->name;
}

uint32_t mtx_onnx_layers(const struct mtx_onnx *m)
{
    return m->layers;
}

int mtx_onnx_has_output(const struct mtx_onnx *m, const char *name)
{
    return mtx_ort_has_output(m->ort, name);
}

const char *mtx_onnx_dir(const struct mtx_onnx *m)
{
    return m->dir;
}

enum mtx_onnx_pool mtx_onnx_st_pool(const struct mtx_onnx *m)
{
    return m->st_pool;
}

void mtx_onnx_close(struct mtx_onnx *m)
{
    size_t i;

    if (!m)
        return;
    mtx_ort_close(m->ort);
    mtx_hf_tok_free(m->tok);
    for (i = 0; i < m->nlabels; i++)
        mt_free(m->labels[i]);
    mt_free(m->labels);
    mt_free(m->name);
    mt_free(m->dir);
    mt_free(m);
}

/* ==== Forward pass ==== */

/* Lays the encodings out as a b x t batch padded with the pad id. */
static enum mt_status pack(const struct mtx_onnx *m, const struct mtx_hf_enc *e,
                           size_t n, size_t t, int64_t *ids, int64_t *mask,
                           int64_t *types)
{
    int32_t pad = mtx_hf_tok_pad_id(m->tok);
    size_t i, j;

    for (i = 0; i < n; i++)
        for (j = 0; j < t; j++) {
            int in = j < e[i].n;
            ids[i * t + j] = in ? e[i].ids[j] : pad;
            mask[i * t + j] = in;
            types[i * t + j] = in ? e[i].type_ids[j] : 0;
        }
    return MT_OK;
}

static enum mt_status run_batch(struct mtx_onnx *m, struct mtx_hf_enc *e,
                                size_t n, const char *output, float **out,
                                int64_t dims[4], size_t *nd,
                                struct mt_error *err)
{
    size_t t = 1, i;
    int64_t *buf;
    enum mt_status st;

    for (i = 0; i < n; i++)
        t = e[i].n > t ? e[i].n : t;
    buf = mt_malloc(3 * n * t * sizeof *buf);
    if (!buf)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    pack(m, e, n, t, buf, buf + n * t, buf + 2 * n * t);
    if (!output && mtx_ort_has_output(m->ort, "last_hidden_state"))
        output = "last_hidden_state";
    st = mtx_ort_run(m->ort, buf, buf + n * t, buf + 2 * n * t, n, t, output,
                     out, dims, nd, err);
    mt_free(buf);
    return st;
}

enum mt_status mtx_onnx_forward(struct mtx_onnx *m, const struct mt_str *a,
                                const struct mt_str *b, size_t n,
                                const char *output, float **out,
                                int64_t dims[4], size_t *nd,
                                struct mtx_hf_enc *encs, struct mt_error *err)
{
    struct mtx_hf_enc *e = encs ? encs : mt_calloc(n + 1, sizeof *e);
    enum mt_status st = e ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    size_t i;

    *out = NULL;
    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_hf_tok_encode(m->tok, a[i].p, a[i].n, b ? b[i].p : NULL,
                               b ? b[i].n : 0, m->max_len, &e[i], err);
    if (st == MT_OK)
        st = run_batch(m, e, n, output, out, dims, nd, err);
    if (st != MT_OK || !encs)
        for (i = 0; e && i < n; i++)
            mtx_hf_enc_free(&e[i]);
    if (!encs)
        mt_free(e);
    return st;
}

/* ==== Token vectors (BERTScore) ==== */

/* Whitespace at either end, as Python's str.strip() takes it. */
static int edge_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x1c || c == 0x1d ||
           c == 0x1e || c == 0x1f;
}

enum mt_status mtx_onnx_token_vectors(struct mtx_onnx *m, const char *text,
                                      size_t n, float **vecs, int32_t **ids,
                                      size_t *ntok, size_t *dim,
                                      struct mt_error *err)
{
    struct mt_str s = {text, n};
    struct mtx_hf_enc e = {0};
    int64_t d[4] = {0};
    size_t nd = 0, i;
    float *o = NULL;
    enum mt_status st;

    while (s.n && edge_space((unsigned char)s.p[0]))
        s.p++, s.n--;
    while (s.n && edge_space((unsigned char)s.p[s.n - 1]))
        s.n--;
    *vecs = NULL;
    *ids = NULL;
    st = mtx_onnx_forward(m, &s, NULL, 1, NULL, &o, d, &nd, &e, err);
    if (st == MT_OK && (nd != 3 || d[0] != 1 || (size_t)d[1] != e.n))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "--bertscore-model onnx:%s: the output is not token "
                     "vectors [1, %zu, hidden]",
                     m->dir, e.n);
    if (st == MT_OK && !(*ids = mt_malloc((e.n ? e.n : 1) * sizeof **ids)))
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; st == MT_OK && i < e.n; i++)
        (*ids)[i] = e.special[i] ? -1 - e.ids[i] : e.ids[i];
    if (st == MT_OK) {
        *vecs = o;
        *ntok = e.n;
        *dim = (size_t)d[2];
        o = NULL;
    } else {
        mt_free(*ids);
        *ids = NULL;
    }
    mt_free(o);
    mtx_hf_enc_free(&e);
    return st;
}
