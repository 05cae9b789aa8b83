/* medtrust evaluation: the MEDIQA-CORR 2024 scorer (submission and MEDEC
 * reference readers, accuracies, ROUGE as the Python `rouge` package,
 * BERTScore math, BLEURT from a file, aggregate), MedGuards KPCS, bootstrap
 * confidence intervals, retrieval metrics and the HTML report. */
#ifndef MEDTRUST_EVAL_H
#define MEDTRUST_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Reference notes (MEDEC-format CSV) ==== */

/* One reference note. Every string is NUL-terminated and owned by the
 * reference set; optional MedErrBench columns are NULL when absent. */
struct mt_eval_note {
    const char *id;             /* "Text ID" */
    const char *flag;           /* "Error Flag" as written, trimmed */
    const char *sentence_id;    /* "Error Sentence ID", e.g. "7" or "-1" */
    const char *correction;     /* "Corrected Sentence"; "NA" when none */
    const char *error_sentence; /* "Error Sentence" ("" when absent) */
    const char *error_type;     /* "Error Type" trimmed ("" when absent) */
    const char *text;           /* "Text" ("" when absent) */
    const char *keywords;       /* "Important Words" or NULL */
    const char *difficulty;     /* "Difficulty" trimmed, or NULL */
    const char *reasoning;      /* "Reasoning Type" trimmed, or NULL */
    const char *language;       /* "EN", "CN", "ARA" from the id, or "" */
};

struct mt_eval_ref;

/* Reads a MEDEC-format CSV (RFC 4180; BOM and CRLF accepted). Required
 * columns: Text ID, Error Flag, Error Sentence ID, Corrected Sentence; a
 * missing one is MT_EPARSE naming every missing column. Duplicate ids are
 * MT_EPARSE with the line. A correction that pandas reads as missing (empty,
 * "NA", "N/A", "nan", "NULL", ...) becomes "NA", as in the official scorer.
 * On success *out owns the set (free with mt_eval_ref_free). */
enum mt_status mt_eval_ref_load(const char *path, struct mt_eval_ref **out,
                                struct mt_error *err);
/* The same from memory; 'name' is used in messages; data is copied. */
enum mt_status mt_eval_ref_load_mem(const char *name, const char *data,
                                    size_t n, struct mt_eval_ref **out,
                                    struct mt_error *err);
size_t mt_eval_ref_count(const struct mt_eval_ref *r);
/* Note i (0-based, file order); NULL when out of range. */
const struct mt_eval_note *mt_eval_ref_note(const struct mt_eval_ref *r,
                                            size_t i);
/* Index of the note with this id, or -1. */
long mt_eval_ref_find(const struct mt_eval_ref *r, const char *id);
/* 1 when the CSV has an "Important Words" column (KPCS possible). */
int mt_eval_ref_has_keywords(const struct mt_eval_ref *r);
/* Keeps only the notes for which keep(note, user) is nonzero, in order
 * (e.g. the notes a partial submission predicts). MT_ENOMEM leaves 'r' as
 * it was. */
enum mt_status mt_eval_ref_keep(struct mt_eval_ref *r,
                                int (*keep)(const struct mt_eval_note *n,
                                            void *user),
                                void *user, struct mt_error *err);
void mt_eval_ref_free(struct mt_eval_ref *r);

/* ==== Submissions (MEDIQA-CORR run files) ==== */

/* One accepted submission line. Strings belong to the submission. */
struct mt_eval_pred {
    const char *id;
    const char *flag;        /* token as written, e.g. "1" */
    const char *sentence_id; /* token as written, e.g. "-1" */
    const char *correction;  /* "NA" when flag is "0" */
    size_t line;             /* 1-based line number */
};

struct mt_eval_sub;

/* Reads a submission as the official script does: each line is stripped of
 * whitespace; blank lines are skipped; a line is valid when it matches
 * `[a-z0-9-]+\s[0-9]+\s-?[0-9]+\s.+`; the correction is the fourth token on,
 * joined by single spaces, with leading and trailing '"' stripped (never
 * below one character); flag "0" forces "NA". Invalid lines are skipped and
 * reported with their line number. A later duplicate id replaces the
 * earlier one (as in the official script) and is reported. A UTF-8 BOM is
 * removed and CRLF accepted, each with a note (the official script would
 * reject line 1 after a BOM). An empty file, or one with no valid line, is
 * MT_EPARSE. On success *out owns the submission (mt_eval_sub_free). */
enum mt_status mt_eval_sub_load(const char *path, struct mt_eval_sub **out,
                                struct mt_error *err);
enum mt_status mt_eval_sub_parse(const char *name, const char *data, size_t n,
                                 struct mt_eval_sub **out,
                                 struct mt_error *err);
/* Accepted predictions (after duplicate replacement), in line order. */
size_t mt_eval_sub_count(const struct mt_eval_sub *s);
const struct mt_eval_pred *mt_eval_sub_pred(const struct mt_eval_sub *s,
                                            size_t i);
/* Index of the prediction for 'id', or -1. */
long mt_eval_sub_find(const struct mt_eval_sub *s, const char *id);
/* Number of invalid (skipped) lines. */
size_t mt_eval_sub_invalid(const struct mt_eval_sub *s);
/* Messages about the file ("FILE:LINE: why"), in order; valid while s. */
size_t mt_eval_sub_ndiag(const struct mt_eval_sub *s);
const char *mt_eval_sub_diag(const struct mt_eval_sub *s, size_t i);
void mt_eval_sub_free(struct mt_eval_sub *s);

/* ==== ROUGE, as the Python `rouge` package (pltrdy/rouge 1.0.1) ==== */

struct mt_rouge_prf {
    double f, p, r;
};

struct mt_rouge_scores {
    struct mt_rouge_prf r1, r2, rl;
};

/* ROUGE-1, ROUGE-2 and summary-level ROUGE-L of hypothesis 'hyp' against
 * reference 'ref' (UTF-8): text split on '.', segments of zero length
 * dropped, whitespace runs collapsed (Python str.split), words split on
 * single spaces, no lower-casing or stemming, n-grams counted as sets,
 * F = 2PR/(P+R+1e-8). Returns MT_EINVAL when either side has no segment
 * (the package raises "Hypothesis is empty."), MT_ENOMEM. Thread-safe. */
enum mt_status mt_rouge(const char *hyp, size_t hyp_n, const char *ref,
                        size_t ref_n, struct mt_rouge_scores *out);

/* ==== BERTScore ==== */

/* Token embeddings of one text; the encoder fills 'vecs' (ntok * dim floats,
 * allocated with mt_malloc, owned by the caller) and 'ids' (ntok token ids
 * for idf, mt_malloc'd, may be left NULL when idf is not used). An id
 * below 0 marks a special token ([CLS], [SEP]) whose row stays a
 * candidate for the best match but weighs 0, as bert_score weighs them. */
struct mt_token_encoder {
    const char *model; /* label, e.g. "microsoft/deberta-xlarge-mnli" */
    enum mt_status (*encode)(void *user, const char *text, size_t n,
                             float **vecs, int32_t **ids, size_t *ntok,
                             size_t *dim, struct mt_error *err);
    void *user;
    /* 1 when encode works as bert_score's sent_encode and model forward
     * do (an onnx: export: text stripped, special tokens in, their rows
     * matchable with weight 0); 'layer' is the layer the vectors come
     * from (0 = unknown). Zero-initialised for other encoders. */
    int as_bert_score;
    uint32_t layer;
};

struct mt_bertscore {
    double p, r, f;
};

/* Greedy-matching BERTScore over token embeddings (Zhang et al. 2020):
 * rows are L2-normalised, each candidate token takes its best cosine over
 * the reference tokens (precision) and each reference token its best over
 * the candidate (recall), weighted by idf when the weight arrays are
 * non-NULL (else uniform); F = 2PR/(P+R), 0 when P+R = 0. With 'baseline'
 * non-NULL (3 values: P, R, F baselines) each score x becomes
 * (x - b) / (1 - b). Returns MT_EINVAL when a side has no tokens or dim is
 * 0. Thread-safe. */
enum mt_status
mt_bertscore_greedy(const float *cand, size_t nc, const float *ref, size_t nr,
                    size_t dim, const double *idf_cand, const double *idf_ref,
                    const double *baseline, struct mt_bertscore *out);

/* idf weights as bert_score computes them: idf(t) = ln((M + 1) / (df(t) +
 * 1)) over M reference texts, df counting each text once. 'ids' holds the
 * token ids of each reference (ids[i], nids[i]). On success *out is a
 * table to query with mt_idf_get and free with mt_idf_free. */
struct mt_idf;
enum mt_status mt_idf_build(const int32_t *const *ids, const size_t *nids,
                            size_t m, struct mt_idf **out);
/* Weight of token 'id': ln(M + 1) for a token never seen. */
double mt_idf_get(const struct mt_idf *t, int32_t id);
void mt_idf_free(struct mt_idf *t);

/* Reads BERTScore baselines (P, R, F) for rescaling from 'spec': one
 * number (used for P, R and F), three numbers "P,R,F" (commas or spaces),
 * or the path of a file holding either, or a bert_score rescale_baseline
 * file ("LAYER,P,R,F" header, one row a layer), whose row for 'layer' is
 * taken (the layer the token embeddings come from; -1: the last row). Every
 * baseline must be a finite number below 1. Returns MT_EPARSE or MT_EIO
 * with the reason in 'err' (may be NULL); 'out' is unchanged on failure. */
enum mt_status mt_bertscore_baseline_load(const char *spec, long layer,
                                          double out[3], struct mt_error *err);

/* 1 when 'model' (a BERTScore model label) names the model of the official
 * MEDIQA-CORR run, microsoft/deberta-xlarge-mnli. */
int mt_bertscore_official_model(const char *model);

/* ==== Scoring ==== */

enum mt_eval_metric {
    MT_EVAL_ROUGE1,
    MT_EVAL_ROUGE2,
    MT_EVAL_ROUGEL,
    MT_EVAL_BERTSCORE,
    MT_EVAL_BLEURT,
    MT_EVAL_AGGREGATE,
    MT_EVAL_KPCS,
    MT_EVAL_METRIC_COUNT
};

/* JSON key of a metric: "rouge1", "rouge2", "rougeL", "bertscore",
 * "bleurt", "aggregate", "kpcs". */
const char *mt_eval_metric_key(enum mt_eval_metric m);

enum mt_eval_kw_match {
    MT_EVAL_KW_EXACT,     /* Important Words as a byte substring */
    MT_EVAL_KW_NORMALIZED /* case-folded, whitespace runs collapsed */
};

/* Which ROUGE-1 KPCS takes (docs/agents.md, "KPCS"). */
enum mt_eval_kpcs_rouge {
    /* Each language's own, from MedGuards' code: English (and a note of
     * no known language) Google's rouge_score with the Porter stemmer
     * (evaluate_correction_keywords); Chinese jieba's words with
     * rouge-chinese (eval_CN.py); Arabic the `rouge` package
     * (evaluate_correction_with_ids_Arabic). The default. */
    MT_EVAL_KPCS_ROUGE_LANGUAGE,
    /* rouge_score for every language, as the published
     * evaluate_correction_keywords computes KPCS: its ASCII-only tokens
     * leave Chinese and Arabic little or nothing to match. */
    MT_EVAL_KPCS_ROUGE_PUBLISHED
};

struct mt_eval_params {
    /* Per-pair scores read with mt_eval_scores_load (NULL: no BLEURT). */
    const struct mt_eval_scores *bleurt;
    /* Per-pair BERTScore F1 read the same way, e.g. from the official
     * bert_score run, used when 'bert' is NULL (NULL: none). */
    const struct mt_eval_scores *bertscore;
    /* BERTScore encoder (NULL: no BERTScore). */
    const struct mt_token_encoder *bert;
    /* idf weighting (mt_idf_build) over the gold corrections of every
     * reference note that has one (not NA), so every run gets the same
     * weights; needs the encoder's token ids. */
    int bert_idf;
    const double *bert_base; /* P, R, F baselines, or NULL */
    int kpcs;                /* compute KPCS (needs Important Words) */
    double kpcs_alpha;       /* kw * (alpha + (1 - alpha) * mean), 0.5 */
    enum mt_eval_kw_match kpcs_match;
    enum mt_eval_kpcs_rouge kpcs_rouge;
    /* Folder of jieba's dict.txt and hmm.txt for Chinese KPCS (NULL:
     * $MEDTRUST_JIEBA_DIR, then the installed copy, then the source
     * tree's third_party/jieba); read only when a Chinese pair is scored,
     * and its absence then fails the run, saying what to do. */
    const char *jieba_dir;
};

/* Defaults: no BLEURT or BERTScore, KPCS when the reference has keywords,
 * alpha 0.5, exact matching, each language's own ROUGE-1. */
void mt_eval_default_params(struct mt_eval_params *p);

/* Per-pair external scores ("<text id> <score>" a line, or TSV/CSV with the
 * id in the first and the score in the last field; '#' comments and a
 * header line are skipped). */
struct mt_eval_scores;
enum mt_status mt_eval_scores_load(const char *path,
                                   struct mt_eval_scores **out,
                                   struct mt_error *err);
/* Score for 'id' into *v; 0 when found, -1 when absent. */
int mt_eval_scores_get(const struct mt_eval_scores *s, const char *id,
                       double *v);
void mt_eval_scores_free(struct mt_eval_scores *s);

enum mt_eval_pair {
    MT_EVAL_PAIR_MISSING, /* no prediction for the note: 0 */
    MT_EVAL_PAIR_BOTH_NA, /* gold and predicted NA: 1 */
    MT_EVAL_PAIR_ONE_NA,  /* exactly one side NA: 0 */
    MT_EVAL_PAIR_SCORED   /* both corrections given: the metrics */
};

/* Scores of one reference note. */
struct mt_eval_note_score {
    long pred;   /* index into the submission, or -1 */
    int flag_ok; /* flag equals the gold flag */
    int sent_ok; /* sentence id equals the gold one */
    enum mt_eval_pair kind;
    int kw; /* 1/0 keyword found; -1 when not applicable; -2 when the
               note holds an error but its Important Words cell is empty
               (no KPCS gate: the note is left out of KPCS) */
    /* Correction score of this note per metric: 1 or 0 for NA cases, the
     * metric clipped to [0,1] for scored pairs; NAN when not computed. */
    double m[MT_EVAL_METRIC_COUNT];
};

/* One scored run. Owned by the caller; free with mt_eval_result_free. */
struct mt_eval_result {
    size_t notes;            /* reference notes */
    size_t predicted;        /* reference notes with a prediction */
    size_t invalid_lines;    /* skipped submission lines */
    size_t pairs;            /* notes scored with the metrics */
    size_t unknown_ids;      /* predictions for ids not in the reference */
    size_t kpcs_no_keywords; /* error notes with an empty keyword cell,
                                left out of KPCS's mean */
    unsigned metrics;        /* bit (1u << m) set for every computed metric */
    double flag_acc, sent_acc;
    double composite[MT_EVAL_METRIC_COUNT];  /* NAN when absent */
    double pairs_mean[MT_EVAL_METRIC_COUNT]; /* NAN when absent or no pair */
    struct mt_eval_note_score *per_note;     /* 'notes' entries, ref order */
    char *bert_model; /* BERTScore model label, or NULL */
    char **warnings;  /* messages for the user */
    size_t nwarnings;
    int bert_idf;        /* BERTScore weighted by idf over the references */
    int bert_rescaled;   /* BERTScore rescaled with bert_base */
    double bert_base[3]; /* P, R, F baselines when bert_rescaled */
    int bert_file;       /* BERTScore read from a per-pair scores file */
    int bert_exact;      /* computed as bert_score computes it */
    uint32_t bert_layer; /* the encoder's layer, 0 = unknown */
    enum mt_eval_kpcs_rouge kpcs_rouge; /* as the params asked */
    size_t kpcs_pairs_zh; /* KPCS pairs scored with jieba + rouge-chinese */
    size_t kpcs_pairs_ar; /* with the `rouge` package (Arabic) */
};

/* Scores 'sub' against 'ref' as the official MEDIQA-CORR 2024 script does
 * (see ARCHITECTURE.md and the README), plus ROUGE-2, ROUGE-L and KPCS.
 * Accuracies and composites are over all reference notes; a missing
 * prediction is wrong and scores 0. The aggregate is the mean of the
 * computed metrics among ROUGE-1, BERTScore and BLEURT. KPCS counts a
 * correct NA once (the published MedGuards code counted such notes twice).
 * A prediction the package cannot score (no segment left, e.g. ".") scores
 * 0 with a warning; the official script would stop with an exception.
 * 'params' may be NULL. On success *out is a new result. Not thread-safe
 * only in that the encoder callback must be. */
enum mt_status mt_eval_score(const struct mt_eval_ref *ref,
                             const struct mt_eval_sub *sub,
                             const struct mt_eval_params *params,
                             struct mt_eval_result **out, struct mt_error *err);
void mt_eval_result_free(struct mt_eval_result *r);

/* ==== Bootstrap confidence intervals ==== */

#define MT_EVAL_BOOT_RESAMPLES 1000
#define MT_EVAL_BOOT_SEED 20240314u

/* Percentile bootstrap of the mean of x[0..n): 'resamples' resamples of n
 * indices drawn with replacement from a splitmix64 stream seeded by 'seed'
 * (the same seed gives the same indices, so intervals of different metrics
 * over the same notes, and of paired differences x - y, are paired). *lo and
 * *hi are the 2.5th and 97.5th percentiles of the resampled means (sorted
 * means at indices floor(0.025 B) and B - 1 - floor(0.025 B)). NAN entries
 * are not allowed. Returns MT_EINVAL when n or resamples is 0, MT_ENOMEM. */
enum mt_status mt_eval_bootstrap_ci(const double *x, size_t n, size_t resamples,
                                    uint64_t seed, double *lo, double *hi);

/* ==== Retrieval metrics ==== */

/* rel[i] is 1 when the result at rank i+1 is relevant (0 otherwise), for n
 * ranked results; n_relevant is the number of relevant documents for the
 * query (judged, retrieved or not). Each returns a value in [0, 1], and 0
 * when n_relevant is 0. Thread-safe. */
/* recall@k = relevant in the top k / n_relevant. */
double mt_recall_at_k(const uint8_t *rel, size_t n, size_t n_relevant,
                      size_t k);
/* MRR@k = 1 / rank of the first relevant result within the top k, else 0. */
double mt_mrr_at_k(const uint8_t *rel, size_t n, size_t k);
/* nDCG@k with binary gains: DCG = sum rel_i / log2(i + 1) over ranks
 * i = 1..k, divided by the ideal DCG of min(n_relevant, k) relevant
 * results at the top. */
double mt_ndcg_at_k(const uint8_t *rel, size_t n, size_t n_relevant, size_t k);
/* Average precision over the whole ranking: the sum of precision@i at each
 * relevant rank i, divided by n_relevant (unretrieved relevant documents
 * count as precision 0). MAP is its mean over queries. */
double mt_average_precision(const uint8_t *rel, size_t n, size_t n_relevant);

/* ==== Output ==== */

/* One scored run as JSON: {"notes","predicted","invalid_lines",
 * "error_flag_accuracy","error_sentence_accuracy","composite":{..},
 * "pairs_mean":{..},"metrics_used":[..],"breakdown":{..}} plus "run", "ci"
 * (95% bootstrap intervals of each headline number), "bertscore_model" and
 * "warnings". Absent metrics are absent keys. On success *out is a
 * NUL-terminated string the caller frees with mt_free. */
enum mt_status mt_eval_result_json(const struct mt_eval_result *r,
                                   const struct mt_eval_ref *ref,
                                   const char *run_name, char **out,
                                   struct mt_error *err);

/* One run for the report: its name, result and submission. */
struct mt_eval_run {
    const char *name;
    const struct mt_eval_result *result;
    const struct mt_eval_sub *sub;
};

/* Writes one self-contained HTML report (inline CSS, SVG and JS, no
 * external asset) for 'nrun' runs over 'ref' to 'path', atomically: a
 * temporary file in the same folder, then rename. Returns MT_EIO with the
 * path, MT_ENOMEM. */
enum mt_status mt_eval_report_write(const char *path,
                                    const struct mt_eval_ref *ref,
                                    const struct mt_eval_run *runs, size_t nrun,
                                    struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
