/* What the parts of the tokenizer.json reader share (hf_tok.c: loading,
 * added tokens, post-processing, truncation; hf_tok_norm.c: normalizers
 * and pre-tokenizers; hf_tok_model.c: WordPiece, Unigram, BPE). Text is
 * handled as code points. */
#ifndef MT_MODEL_HF_TOK_INT_H
#define MT_MODEL_HF_TOK_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model/hf_tok.h"

/* A growable run of code points. */
struct mtx_cpv {
    uint32_t *c;
    size_t n, cap;
};

/* Pre-tokenized pieces of one text. */
struct mtx_pieces {
    struct mtx_cpv *v;
    size_t n, cap;
};

/* A growable list of token ids. */
struct mtx_idv {
    int32_t *v;
    size_t n, cap;
};

enum mt_status mtx_cpv_push(struct mtx_cpv *v, uint32_t c);
void mtx_cpv_free(struct mtx_cpv *v);
enum mt_status mtx_pieces_push(struct mtx_pieces *p, const uint32_t *c,
                               size_t n);
void mtx_pieces_free(struct mtx_pieces *p);
enum mt_status mtx_idv_push(struct mtx_idv *v, int32_t id);
/* UTF-8 of c[0..n) into a new string (mt_free); NULL when out of memory. */
char *mtx_cp_utf8(const uint32_t *c, size_t n, size_t *len);
/* Decodes UTF-8 (an invalid byte becomes U+FFFD) and appends to v. */
enum mt_status mtx_cp_decode(const char *s, size_t n, struct mtx_cpv *v);

/* Unicode classes the tokenizers library uses. */
int mtx_cp_is_space(uint32_t c); /* char::is_whitespace */
int mtx_cp_is_punct(uint32_t c); /* ASCII punctuation or category P* */

/* String -> id map (open addressing; keys owned). */
struct mtx_vocab {
    char **keys;
    size_t *lens;
    int32_t *ids;
    size_t cap, n;
};

enum mt_status mtx_vocab_put(struct mtx_vocab *v, const char *k, size_t n,
                             int32_t id);
/* The id of k, or -1. */
int32_t mtx_vocab_get(const struct mtx_vocab *v, const char *k, size_t n);
void mtx_vocab_free(struct mtx_vocab *v);

/* ==== Normalizers and pre-tokenizers (hf_tok_norm.c) ==== */

struct mtx_hf_norm;
struct mtx_hf_pre;

/* Builds from the JSON object j (NULL or JSON null: none). 'path' names the
 * file in errors. */
enum mt_status mtx_hf_norm_new(const json_t *j, const char *path,
                               struct mtx_hf_norm **out, struct mt_error *err);
enum mt_status mtx_hf_norm_apply(const struct mtx_hf_norm *n,
                                 struct mtx_cpv *text);
void mtx_hf_norm_free(struct mtx_hf_norm *n);

enum mt_status mtx_hf_pre_new(const json_t *j, const char *path,
                              struct mtx_hf_pre **out, struct mt_error *err);
/* Splits text into pieces (appended to out); 'first' is 1 for the first
 * section of a text (Metaspace's prepend_scheme "first"). With no
 * pre-tokenizer the text is one piece. */
enum mt_status mtx_hf_pre_apply(const struct mtx_hf_pre *p,
                                const struct mtx_cpv *text, int first,
                                struct mtx_pieces *out);
void mtx_hf_pre_free(struct mtx_hf_pre *p);

/* ==== Models (hf_tok_model.c) ==== */

struct mtx_hf_model;

enum mt_status mtx_hf_model_new(const json_t *j, const char *path,
                                struct mtx_hf_model **out,
                                struct mt_error *err);
/* Appends the ids of one pre-tokenized piece. */
enum mt_status mtx_hf_model_encode(const struct mtx_hf_model *m,
                                   const struct mtx_cpv *piece,
                                   struct mtx_idv *out);
/* The model's id of a token string (vocabulary or -1). */
int32_t mtx_hf_model_id(const struct mtx_hf_model *m, const char *k, size_t n);
const char *mtx_hf_model_kind(const struct mtx_hf_model *m);
void mtx_hf_model_free(struct mtx_hf_model *m);

#endif
