/* Fitting a prompt to the model's context: the budget arithmetic and the
 * cut of a text at a sentence boundary, shared by question answering and
 * the checker. Names: mtx_ (cross-file internals). */
#ifndef MT_LLMCALL_FIT_H
#define MT_LLMCALL_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/model.h"

/* What a chat template adds around the messages, in tokens: a start, and
 * role markers per message (ChatML: "<|im_start|>user\n...<|im_end|>\n"
 * is 5 tokens; Llama 3's headers 5; the margin covers the rest). */
#define MTX_FIT_BASE_TOKENS 16u
#define MTX_FIT_MSG_TOKENS 8u

/* Room kept free in a JSON call's prompt for its repair turn (llmcall.c:
 * the bad reply echoed, up to the answer's max_tokens, and the fix
 * message, under 700 bytes), so that a repair never overflows a context
 * that the first prompt filled. */
#define MTX_FIT_REPAIR_TOKENS(max_tokens)                                      \
    ((max_tokens) + 250u + 2u * MTX_FIT_MSG_TOKENS)

/* Counts the tokens of s[0..n); 'user' is the counter's own. */
typedef uint32_t (*mtx_count_fn)(void *user, const char *s, size_t n);

/* mtx_count_fn over a struct mt_llm given as 'user'
 * (mt_llm_count_tokens). */
uint32_t mtx_fit_count_llm(void *user, const char *s, size_t n);

/* The room kept for the answer: max_tokens, but at most half the context
 * (servers such as llama-server stop an answer where the context ends
 * rather than refuse a max_tokens past it; a prompt keeps half). 0 for
 * n_ctx 0. */
uint32_t mtx_fit_answer(uint32_t n_ctx, uint32_t max_tokens);

/* Tokens left for the part of a prompt that can be cut:
 *   n_ctx - mtx_fit_answer(n_ctx, max_tokens) - fixed - (BASE + MSG * nmsgs),
 * 0 when that is not positive; UINT32_MAX when n_ctx is 0 (the context
 * is unknown: nothing is cut). 'fixed' is the rest of the prompt. */
uint32_t mtx_fit_budget(uint32_t n_ctx, uint32_t max_tokens, uint32_t fixed,
                        size_t nmsgs);

/* Where mtx_fit_cut may cut: at the end of a sentence
 * (mtx_sentences_split; passages, documents), or at any character (a
 * model's bad reply, echoed in a repair turn, has no sentences to keep). */
enum mtx_fit_unit { MTX_FIT_SENTENCES, MTX_FIT_CHARS };

/* Counts a char cut may take before it gives up (returns 0). */
#define MTX_FIT_CHAR_TRIES 8

/* A prefix of text[0..n) that counts at most 'budget' tokens and ends at
 * a 'unit' boundary: its length in bytes, n when the whole text fits, 0
 * when none does (or out of memory). MTX_FIT_SENTENCES gives the longest
 * such prefix, counting about log2(sentences) prefixes; MTX_FIT_CHARS
 * scales the length by budget / tokens (less a tenth) until it fits, at
 * most MTX_FIT_CHAR_TRIES counts, so it may keep less than the longest. */
size_t mtx_fit_cut(const char *text, size_t n, uint32_t budget,
                   enum mtx_fit_unit unit, mtx_count_fn count, void *user);

/* Tokens of the messages' contents plus the template's overhead. */
uint32_t mtx_fit_count_msgs(const struct mt_llm_message *m, size_t n,
                            mtx_count_fn count, void *user);

#endif
