/* Chinese word segmentation equal to jieba 0.42.1's jieba.cut(text) (accurate
 * mode, HMM on), from jieba's own dictionary and HMM tables, which
 * scripts/bootstrap extracts into third_party/jieba (dict.txt, hmm.txt). */
#ifndef MT_TEXT_SEGMENT_ZH_H
#define MT_TEXT_SEGMENT_ZH_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded dictionary and HMM: read-only once built, so one handle may be
 * shared by threads. */
struct mtx_jieba;

/* Builds a handle from the text of jieba's dict.txt (dict[0..dict_n), which
 * the handle takes: freed with it, or here on failure) and of hmm.txt
 * (hmm, NUL-terminated, borrowed and cut up in place). dict_name and
 * hmm_name name them in errors. On failure *out is NULL and err says
 * which line of which file is wrong. No I/O: the eval layer reads the
 * files (mtx_ev_jieba_open). */
enum mt_status mtx_jieba_load(char *dict, size_t dict_n, char *hmm,
                              const char *dict_name, const char *hmm_name,
                              struct mtx_jieba **out, struct mt_error *err);
/* Frees j; NULL is a no-op. */
void mtx_jieba_close(struct mtx_jieba *j);

/* Cuts s[0..n) as jieba.cut(s) does: *toks (mt_free) gets *ntoks slices
 * of s, in order and covering s byte for byte (whitespace comes back as
 * tokens too, "\r\n" as one). An ill-formed UTF-8 byte is one token of its
 * own (Python would not have decoded the text). MT_OK or MT_ENOMEM. */
enum mt_status mtx_jieba_cut(const struct mtx_jieba *j, const char *s, size_t n,
                             struct mt_str **toks, size_t *ntoks);

/* Python's str.isspace() for one code point (as the re module's \s and
 * str.split() use it). */
int mtx_py_isspace(int32_t cp);

#ifdef __cplusplus
}
#endif

#endif
