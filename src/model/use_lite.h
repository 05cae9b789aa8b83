/* Universal Sentence Encoder Lite in C: the private interface between the
 * weight file (use_lite_file.c; tools/use_lite_conv.c writes it), tokenizer
 * (use_lite_tok.c), forward pass (use_lite_fwd.c) and embedder glue. */
#ifndef MT_MODEL_USE_LITE_H
#define MT_MODEL_USE_LITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/status.h"
#include "model/embed.h"

/* ==== Architecture (fixed; the converter checks model.json agrees) ==== */
#define MT_UL_DIM 512     /* hidden and output width */
#define MT_UL_EMB 256     /* token embedding and layer-0 input width */
#define MT_UL_FF 1536     /* FFN inner width */
#define MT_UL_HEADS 4     /* attention heads in both layers */
#define MT_UL_MAX_LEN 128 /* ClipToMaxLength: positions >= 128 dropped */
#define MT_UL_VOCAB 8002  /* embedding rows */
#define MT_UL_PANEL 16    /* column panel width of packed matrices */
#define MT_UL_RESERVED 6  /* vocab entries the tokenizer never emits */

/* Weight file: header, tensor table, piece table, strings, tensor data.
 * Little-endian; every tensor 64-byte aligned; CRC-32 over all bytes
 * after the header. Bump the version on any layout change. */
#define MT_UL_MAGIC "MTUSELT1"
#define MT_UL_VERSION 1u
#define MT_UL_FLAG_INT8 1u
#define MT_UL_NAME_MAX 32

enum mt_ul_dtype {
    MT_UL_F32 = 1,    /* plain float32, row-major */
    MT_UL_PACKED = 2, /* float32 [K,N] stored as N/16 panels of [K][16] */
    MT_UL_I8ROW = 3,  /* int8 [R,C] + R float scales (embedding) */
    MT_UL_I8PACK = 4, /* int8 packed like MT_UL_PACKED + N float scales */
};

struct mt_ul_header {
    char magic[8];
    uint32_t version;
    uint32_t flags;
    uint64_t file_size;
    uint32_t checksum; /* CRC-32 (IEEE) of bytes [sizeof header, size) */
    uint32_t n_tensors;
    uint32_t n_pieces;
    uint32_t reserved0;
    uint64_t pieces_off;  /* n_pieces struct mt_ul_piece */
    uint64_t strings_off; /* UTF-8 piece text */
    uint64_t strings_len;
};

struct mt_ul_tensor {
    char name[MT_UL_NAME_MAX];
    uint32_t dtype;
    uint32_t ndim;
    uint32_t dims[4];
    uint64_t offset; /* from the start of the file */
    uint64_t nbytes;
};

struct mt_ul_piece {
    double score; /* JSON null is stored as 0, as JS arithmetic reads it */
    uint32_t str_off;
    uint32_t str_len;
};

/* An int8 copy of a packed [k, n] matrix for the VNNI GEMM: n/16 panels
 * of [k/4][16][4] bytes (the 4 k values one vpdpbusd lane sums), a scale
 * per column (max |w| / 127) and each column's sum of its int8 values. */
struct mt_ul_qmat {
    int8_t *w;
    float *scale;
    int32_t *colsum;
    uint32_t k, n;
};

/* Matrices of a layer with an int8 copy, in this order. */
enum {
    MT_UL_Q_QKV,
    MT_UL_Q_OUT,
    MT_UL_Q_RES,
    MT_UL_Q_FF1,
    MT_UL_Q_FF2,
    MT_UL_N_Q
};

/* One transformer layer's weights; w_* are packed [in, out] matrices. */
struct mt_ul_layer {
    uint32_t din; /* 256 for layer 0, 512 for layer 1 */
    const float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *w_out, *b_out;
    const float *w_res, *b_res; /* layer 0 only: residual 256 -> 512 */
    const float *ln2_g, *ln2_b, *w_ff1, *b_ff1, *w_ff2, *b_ff2;
    /* int8 copies (MT_UL_Q_*) when the model computes in int8, else all
     * NULL; q[MT_UL_Q_RES] is NULL in layer 1 */
    const struct mt_ul_qmat *q[MT_UL_N_Q];
};

struct mt_ul_weights {
    const float *embed;      /* [8002, 256] row-major */
    const float *timing_inv; /* [128] inverse timescales */
    struct mt_ul_layer layer[2];
    const float *w_pool, *b_pool; /* tanh layer, packed [512, 512] */
};

/* Trie over pieces, keyed by code point; built when the model opens. */
struct mt_ul_trie {
    uint64_t *keys; /* (parent + 1) << 21 | code point; 0 = empty slot */
    uint32_t *child;
    size_t cap;     /* power of two */
    int32_t *piece; /* per node: piece index, or -1 */
    size_t n_nodes;
    uint32_t max_depth;
};

struct mt_ul_model {
    void *map; /* the mmapped file */
    size_t map_len;
    float *deq; /* dequantised tensors of an int8 file, else NULL */
    int int8;
    struct mt_ul_weights w;
    const struct mt_ul_piece *pieces;
    const char *strings;
    uint32_t n_pieces;
    uint16_t *js_len; /* per piece: its length in UTF-16 units */
    struct mt_ul_trie trie;
    struct mt_ul_qmat q[2][MT_UL_N_Q]; /* int8 compute: see mtx_ul_quantize */
};

/* ==== Weight file (use_lite_file.c) ==== */

/* Maps and validates 'path' (magic, version, size, checksum, tensor
 * shapes) and builds the tokenizer. On success *out owns the model (free
 * with mtx_ul_model_close). */
enum mt_status mtx_ul_model_open(const char *path, struct mt_ul_model **out,
                                 struct mt_error *err);
void mtx_ul_model_close(struct mt_ul_model *m);

/* CRC-32 (IEEE 802.3, as zlib) of n bytes, continuing from 'crc' (0 to
 * start). */
uint32_t mtx_ul_crc32(uint32_t crc, const void *p, size_t n);

/* Finds the weight file: $MEDTRUST_USE_LITE, then use-lite.mtw beside
 * the running binary, in its parent, in ../share/medtrust, in the
 * install prefix, and build/ under the working directory. Returns a path
 * the caller frees with mt_free, or NULL (MT_ENOTFOUND in err). */
char *mtx_ul_find_weights(struct mt_error *err);

/* ==== Tokenizer (use_lite_tok.c) ==== */

/* Builds m->trie and m->js_len from the piece table. */
enum mt_status mtx_ul_trie_build(struct mt_ul_model *m);
void mtx_ul_trie_free(struct mt_ul_trie *t);

/* Tokenizes text exactly as the package's JavaScript does: invalid UTF-8
 * becomes U+FFFD (as Node decodes it), NFKC, U+2581 word marks, Viterbi
 * over piece scores, runs of unknowns merged into one id 0. Returns all
 * ids (not clipped to 128) in *ids (free with mt_free); *n_ids may be 0.
 * Inputs over MT_UL_MAX_TEXT bytes are cut at a character boundary. */
#define MT_UL_MAX_TEXT ((size_t)1 << 20)
enum mt_status mtx_ul_tokenize(const struct mt_ul_model *m, struct mt_str text,
                               int32_t **ids, size_t *n_ids);

/* ==== Forward pass (use_lite_fwd.c) ==== */

/* Scratch memory a forward pass keeps for the next one (its pages are
 * then touched once, not faulted in at every call). Zero it to start;
 * free with mtx_ul_scratch_free. */
struct mt_ul_scratch {
    void *buf;
    size_t rows; /* capacity in packed tokens */
};
void mtx_ul_scratch_free(struct mt_ul_scratch *s);

/* Embeds n token sequences (each already clipped to MT_UL_MAX_LEN) into
 * out (n * 512 floats, unit length). Single-threaded; scratch comes from
 * s, grown as needed, or (s NULL) is allocated for this call. */
enum mt_status mtx_ul_forward(const struct mt_ul_weights *w,
                              const int32_t *const *ids, const size_t *lens,
                              size_t n, float *out, struct mt_ul_scratch *s);

/* C[M,N] = A[M,K] * B + bias, B packed [K,N] (N a multiple of 16). */
void mtx_ul_gemm(const float *a, size_t m, size_t k, const float *b_packed,
                 const float *bias, size_t n, float *c);

/* out[r] = (x[r] - mean) / sqrt(var + eps) * g + b for each of 'rows'
 * rows of d floats (d a multiple of 32); out may not alias x. */
void mtx_ul_layer_norm(const float *x, size_t rows, size_t d, const float *g,
                       const float *b, float eps, float *out);

/* Query rows whose scores mtx_ul_attend holds at a time (in L1). */
#define MT_UL_ATT_ROWS 24
/* Floats of scratch mtx_ul_attend needs: the head's keys and values as
 * 16-column panels and one block of scores, at the widest head. */
#define MT_UL_ATT_SCRATCH                                                      \
    (2 * MT_UL_MAX_LEN * (MT_UL_DIM / MT_UL_HEADS) +                           \
     MT_UL_ATT_ROWS * MT_UL_MAX_LEN)

/* One attention head of one text: rows [0, len) of qkv (row stride ld;
 * Q, K, V at columns 0, din, 2 * din), the head's columns [c0, c0 + din /
 * MT_UL_HEADS); softmax(scale * Q K^T) V into att (row stride din).
 * len <= MT_UL_MAX_LEN, din / MT_UL_HEADS a multiple of 16; scratch:
 * MT_UL_ATT_SCRATCH floats. AVX-512 where the CPU has it, else
 * mtx_ul_attend_v8 (8-float vectors: AVX2 where the CPU has it). */
void mtx_ul_attend(const float *qkv, size_t ld, size_t len, size_t din,
                   size_t c0, float scale, float *scratch, float *att);
void mtx_ul_attend_v8(const float *qkv, size_t ld, size_t len, size_t din,
                      size_t c0, float scale, float *scratch, float *att);

/* ==== int8 GEMM (use_lite_i8.c) ==== */

/* Quantises packed float [k, n] (k % 4 == 0, n % 16 == 0) into q: int8
 * per column, symmetric. MT_ENOMEM leaves q empty. */
enum mt_status mtx_ul_qmat_init(struct mt_ul_qmat *q, const float *packed,
                                uint32_t k, uint32_t n);
void mtx_ul_qmat_free(struct mt_ul_qmat *q); /* NULL and empty allowed */

/* Rows of activations quantised for mtx_ul_gemm_q: x ~ scale * (u - zero)
 * per row, u [m, k] bytes. The caller owns the buffers. */
struct mt_ul_qact {
    uint8_t *u;
    float *scale;
    int32_t *zero;
};
void mtx_ul_quant_rows(const float *a, size_t m, size_t k,
                       struct mt_ul_qact *qa);
/* The same, one float at a time (what the AVX-512 path must equal). */
void mtx_ul_quant_rows_ref(const float *a, size_t m, size_t k,
                           struct mt_ul_qact *qa);

/* C[m, w->n] = dequantised (qa . w) + bias, int32 sums: AVX-512 VNNI
 * where the CPU has it, else mtx_ul_gemm_q_ref (the same results, bit
 * for bit). */
void mtx_ul_gemm_q(const struct mt_ul_qact *qa, size_t m,
                   const struct mt_ul_qmat *w, const float *bias, float *c);
void mtx_ul_gemm_q_ref(const struct mt_ul_qact *qa, size_t m,
                       const struct mt_ul_qmat *w, const float *bias, float *c);
int mtx_ul_have_vnni(void); /* 1 when mtx_ul_gemm_q runs on VNNI */

/* Builds m->q from the float weights and points each layer's q[] at
 * them, so that mtx_ul_forward computes its dense layers in int8. */
enum mt_status mtx_ul_quantize(struct mt_ul_model *m);

/* ==== Embedder (use_lite.c) ==== */

/* Opens the built-in embedder from 'path' (NULL: mtx_ul_find_weights) and
 * wraps it in an mt_embedder (params->threads workers, batch_size texts
 * per forward pass, default 32). Calls on one handle must not overlap. */
enum mt_status mtx_use_lite_open(const char *path,
                                 const struct mt_embedder_params *params,
                                 struct mt_embedder **out,
                                 struct mt_error *err);

#endif
