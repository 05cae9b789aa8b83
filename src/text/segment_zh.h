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

/* The files of a jieba data folder. */
#define MTX_JIEBA_DICT "dict.txt"
#define MTX_JIEBA_HMM "hmm.txt"

/* A loaded dictionary and HMM: read-only once open, so one handle may be
 * shared by threads. */
struct mtx_jieba;

/* Loads dir/dict.txt and dir/hmm.txt. On success *out owns a new handle
 * (mtx_jieba_close); on failure *out is NULL and err names the file and
 * line it could not read. */
enum mt_status mtx_jieba_open(const char *dir, struct mtx_jieba **out,
                              struct mt_error *err);
/* Frees j; NULL is a no-op. */
void mtx_jieba_close(struct mtx_jieba *j);

/* Cuts s[0..n) as jieba.cut(s) does: *toks (mt_free) gets *ntoks slices
 * of s, in order and covering s byte for byte (whitespace comes back as
 * tokens too, "\r\n" as one). An ill-formed UTF-8 byte is one token of its
 * own (Python would not have decoded the text). MT_OK or MT_ENOMEM. */
enum mt_status mtx_jieba_cut(const struct mtx_jieba *j, const char *s, size_t n,
                             struct mt_str **toks, size_t *ntoks);

/* Where the data folder is: 'given' when not NULL/empty, else
 * $MEDTRUST_JIEBA_DIR, else the first folder holding dict.txt among
 * ../share/medtrust/jieba beside the binary or libmedtrust.so,
 * PREFIX/share/medtrust/jieba, and the source tree's third_party/jieba
 * (beside, above or two above the binary, then under the working folder).
 * Returns a copy (mt_free), or NULL with err saying what to do. */
char *mtx_jieba_find_dir(const char *given, struct mt_error *err);

/* Python's str.isspace() for one code point (as the re module's \s and
 * str.split() use it). */
int mtx_py_isspace(int32_t cp);

#ifdef __cplusplus
}
#endif

#endif
