/* What `medtrust score` does around mt_eval_score (eval layer, moved here
 * from src/cli/cmd_score.c, issue 33): the reference and each run's files
 * (its predictions, its per-pair BLEURT and BERTScore files) loaded, the
 * reference cut to the predicted notes when asked, each run scored, and
 * what the reader should know said in the log: the submission's and the
 * result's diagnostics and the reference notes a run did not predict
 * (which count as wrong). The CLI keeps its options and printing.
 * Names: mtx_ (internal). */
#ifndef MTX_EVAL_SCORE_RUNS_H
#define MTX_EVAL_SCORE_RUNS_H

#include <stddef.h>

#include "medtrust/eval.h"

#define MTX_SCORE_RUNS_MAX 16 /* runs side by side */

/* One run's files. */
struct mtx_score_run_files {
    const char *pred;      /* the submission */
    const char *bleurt;    /* its per-pair BLEURT scores, or NULL */
    const char *bertscore; /* its per-pair BERTScore F1, or NULL */
};

/* The runs, scored; each array holds n entries (the rest NULL). */
struct mtx_score_runs {
    struct mt_eval_ref *ref;
    size_t n;
    struct mt_eval_sub *sub[MTX_SCORE_RUNS_MAX];
    struct mt_eval_result *res[MTX_SCORE_RUNS_MAX];
    struct mt_eval_scores *bleurt[MTX_SCORE_RUNS_MAX];
    struct mt_eval_scores *bert[MTX_SCORE_RUNS_MAX];
};

/* Loads the reference 'ref' and the n (1..MTX_SCORE_RUNS_MAX) runs'
 * files, keeps only the notes every run predicts when 'only_predicted'
 * (mtx_eval_keep_predicted), and scores each run with p (its BLEURT and
 * BERTScore files over p's). *out (zeroed here) is the caller's to free
 * with mtx_score_runs_free whatever the result; errors name the file. */
enum mt_status mtx_score_runs(const char *ref,
                              const struct mtx_score_run_files *f, size_t n,
                              int only_predicted,
                              const struct mt_eval_params *p,
                              struct mtx_score_runs *out, struct mt_error *err);

void mtx_score_runs_free(struct mtx_score_runs *r);

#endif
