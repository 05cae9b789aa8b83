/* Private helpers shared by the eval modules: Python-compatible whitespace,
 * a string-keyed hash map, file reading and per-group summaries. */
#ifndef MT_EVAL_INT_H
#define MT_EVAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/eval.h"

/* Length in bytes of the Python whitespace character (str.isspace) at
 * p[0..n), or 0 when the character there is not whitespace. */
size_t mtx_ev_space_len(const char *p, size_t n);

/* Next whitespace-separated token of p[*pos..n) as Python's str.split()
 * finds it; returns 0 when none is left. */
int mtx_ev_next_token(const char *p, size_t n, size_t *pos, struct mt_str *tok);

/* Open-addressing map from byte strings (borrowed) to long values. */
struct mt_ev_map {
    struct mt_str *keys;
    long *vals;
    size_t cap;
    size_t len;
};

/* Returns the value of 'k', or -1 when absent. */
long mtx_ev_map_get(const struct mt_ev_map *m, struct mt_str k);
/* Sets k to v (k is borrowed: it must outlive the map). */
enum mt_status mtx_ev_map_put(struct mt_ev_map *m, struct mt_str k, long v);
void mtx_ev_map_free(struct mt_ev_map *m);

/* Reads a whole file (at most 1 GiB) into *data (mt_free), NUL-ended. */
enum mt_status mtx_ev_read_file(const char *path, char **data, size_t *n,
                                struct mt_error *err);

double mtx_ev_clip01(double v);

/* One sentence on whether r's BERTScore may be compared with the official
 * MEDIQA-CORR run (static text; r must have BERTScore). */
const char *mtx_ev_bert_note(const struct mt_eval_result *r);

/* NAN as a double (NAN itself is a float constant). */
#define MT_EV_NAN ((double)NAN)

/* One row of a breakdown: notes whose field equals 'label'. */
struct mt_ev_group {
    const char *label; /* borrowed from the reference */
    size_t n;
    double flag_acc, sent_acc;
    double m[MT_EVAL_METRIC_COUNT]; /* composite within the group */
};

enum mt_ev_field {
    MT_EV_ERROR_TYPE,
    MT_EV_DIFFICULTY,
    MT_EV_REASONING,
    MT_EV_LANGUAGE,
    MT_EV_FIELD_COUNT
};

/* JSON key of a breakdown field: "error_type", "difficulty",
 * "reasoning_type", "language". */
const char *mtx_ev_field_key(enum mt_ev_field f);

/* Groups the notes by 'f' (first-seen order). *out is mt_malloc'd (NULL
 * with *n 0 when the field is absent from the reference). */
enum mt_status mtx_ev_groups(const struct mt_eval_result *r,
                             const struct mt_eval_ref *ref, enum mt_ev_field f,
                             struct mt_ev_group **out, size_t *n);

/* Headline metric 'which' (MT_EV_FLAG, MT_EV_SENT or a metric index) of a
 * scored run: an accuracy, or the metric's composite; NAN when the run
 * has no such metric. */
double mtx_ev_headline(const struct mt_eval_result *r, int which);

/* The 95% bootstrap interval of headline metric 'key' ("flag", "sentence"
 * or a metric index) over the notes; NAN bounds when absent. */
enum mt_status mtx_ev_headline_ci(const struct mt_eval_result *r, int which,
                                  double *lo, double *hi);
/* The same for the paired difference a - b (same reference notes). */
enum mt_status mtx_ev_diff_ci(const struct mt_eval_result *a,
                              const struct mt_eval_result *b, int which,
                              double *mean, double *lo, double *hi);

/* Headline selectors for mtx_ev_headline_ci: metric indices, or these. */
#define MT_EV_FLAG (-1)
#define MT_EV_SENT (-2)

/* ==== MedGuards' ROUGE-1 (rouge_score.c) ==== */

/* Stems the ASCII lowercase word w[0..n) in place as NLTK's
 * PorterStemmer (NLTK_EXTENSIONS mode) does; returns the new length
 * (never longer). */
size_t mtx_porter_stem(char *w, size_t n);

/* ROUGE-1 F of hyp against ref as Google's rouge_score 0.1.2 with
 * use_stemmer=True (MedGuards' KPCS): ASCII alphanumeric tokens,
 * lower-cased, Porter-stemmed beyond 3 characters, counted as bags.
 * MT_OK or MT_ENOMEM. */
enum mt_status mtx_rouge_score_r1(const char *hyp, size_t hn, const char *ref,
                                  size_t rn, double *f);

/* ==== MedGuards' Chinese ROUGE (rouge.c, kpcs_zh.c) ==== */

/* mt_rouge as rouge-chinese 1.0.3 computes it: the same package but for
 * its sentence split (cut_sent) in place of the '.' split. hyp and ref
 * are text jieba has cut, tokens joined by single spaces. MT_EINVAL when
 * either side has no sentence (it raises "Hypothesis is empty."). */
enum mt_status mtx_rouge_chinese(const char *hyp, size_t hyp_n, const char *ref,
                                 size_t ref_n, struct mt_rouge_scores *out);

struct mtx_jieba;

/* The files of a jieba data folder (scripts/bootstrap extracts them into
 * third_party/jieba; `make install` puts them in PREFIX/share/medtrust/
 * jieba). */
#define MTX_JIEBA_DICT "dict.txt"
#define MTX_JIEBA_HMM "hmm.txt"

/* Where the data folder is: 'given' when not NULL/empty, else
 * $MEDTRUST_JIEBA_DIR, else the first folder holding dict.txt among
 * ../share/medtrust/jieba beside the binary or libmedtrust.so,
 * PREFIX/share/medtrust/jieba, and the source tree's third_party/jieba
 * (beside, above or two above the binary, then under the working folder).
 * Returns a copy (mt_free), or NULL with err saying what to do. */
char *mtx_ev_jieba_find(const char *given, struct mt_error *err);

/* Reads dir/dict.txt and dir/hmm.txt into a new handle (*out; close with
 * mtx_jieba_close); on failure *out is NULL and err names the file. */
enum mt_status mtx_ev_jieba_open(const char *dir, struct mtx_jieba **out,
                                 struct mt_error *err);

/* ROUGE-1 F of MedGuards' eval_CN.py (NLGMetrics.compute_rouge):
 * Rouge().get_scores(' '.join(jieba.cut(hyp)), ' '.join(jieba.cut(ref)))
 * [0]["rouge-1"]["f"]. MT_EINVAL when either side has no sentence, MT_OK
 * or MT_ENOMEM. */
enum mt_status mtx_kpcs_rouge1_zh(const struct mtx_jieba *j, const char *hyp,
                                  const char *ref, double *f);

#endif
