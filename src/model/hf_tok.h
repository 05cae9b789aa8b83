/* Hugging Face tokenizer.json in C: the normalizers, pre-tokenizers,
 * models (WordPiece, Unigram, byte-level BPE), added and special tokens,
 * post-processors (pairs, type ids) and truncation that the tokenizers
 * library runs for BERT, DeBERTa-v3 and RoBERTa exports. Names: mtx_
 * (cross-file internals, docs/architecture.md). */
#ifndef MT_MODEL_HF_TOK_H
#define MT_MODEL_HF_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

struct mtx_hf_tok;

/* One encoded input: ids with their type ids (0 for the first text, 1 for
 * the second of a pair) and whether each is a special token the
 * post-processor added. Free with mtx_hf_enc_free. */
struct mtx_hf_enc {
    int32_t *ids;
    int32_t *type_ids;
    uint8_t *special;
    size_t n;
};

/* Reads tokenizer.json at 'path'. A part the reader does not implement
 * (a normalizer, pre-tokenizer, model or post-processor type, a regex
 * pattern) is refused with MT_EUNSUPPORTED naming the file and the JSON
 * field. On success *out owns the tokenizer (mtx_hf_tok_free). */
enum mt_status mtx_hf_tok_load(const char *path, struct mtx_hf_tok **out,
                               struct mt_error *err);

/* Encodes text a (and b, the second text of a pair, when b is not NULL)
 * with the post-processor's special tokens. Invalid UTF-8 becomes U+FFFD.
 * max_len > 0 truncates as the tokenizers library does (longest_first
 * for a pair: the shorter text whole when the longer can take the rest,
 * else half each, the longer the odd token; before the special tokens are
 * added, so [SEP] is kept).
 * Thread-safe: the tokenizer is read-only once loaded. */
enum mt_status mtx_hf_tok_encode(const struct mtx_hf_tok *t, const char *a,
                                 size_t na, const char *b, size_t nb,
                                 size_t max_len, struct mtx_hf_enc *out,
                                 struct mt_error *err);

/* The id padding uses: the tokenizer's padding.pad_id, else the id of
 * "[PAD]", "<pad>" or "<|endoftext|>" when the vocabulary has one, else 0. */
int32_t mtx_hf_tok_pad_id(const struct mtx_hf_tok *t);

/* "WordPiece", "Unigram" or "BPE". */
const char *mtx_hf_tok_kind(const struct mtx_hf_tok *t);

/* The truncation max_length tokenizer.json names, 0 when none. */
size_t mtx_hf_tok_max_len(const struct mtx_hf_tok *t);

void mtx_hf_enc_free(struct mtx_hf_enc *e);
void mtx_hf_tok_free(struct mtx_hf_tok *t);

#endif
