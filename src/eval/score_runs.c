/* `medtrust score`'s runs (eval/score_runs.h): files loaded, each run
 * scored, its diagnostics logged. Moved from src/cli/cmd_score.c
 * (issue 33). */
#include <string.h>

#include "eval/bert_encoder.h"
#include "eval/score_runs.h"
#include "medtrust/core.h"

static enum mt_status load_run(struct mtx_score_runs *r, size_t i,
                               const struct mtx_score_run_files *f,
                               struct mt_error *err)
{
    enum mt_status st = mt_eval_sub_load(f->pred, &r->sub[i], err);

    if (st == MT_OK && f->bleurt)
        st = mt_eval_scores_load(f->bleurt, &r->bleurt[i], err);
    if (st == MT_OK && f->bertscore)
        st = mt_eval_scores_load(f->bertscore, &r->bert[i], err);
    return st;
}

static void log_diags(const struct mt_eval_sub *s,
                      const struct mt_eval_result *r)
{
    size_t i;

    for (i = 0; i < mt_eval_sub_ndiag(s); i++)
        mt_log(MT_LOG_WARN, "%s", mt_eval_sub_diag(s, i));
    for (i = 0; i < r->nwarnings; i++)
        mt_log(MT_LOG_WARN, "%s", r->warnings[i]);
}

static enum mt_status score_run(struct mtx_score_runs *r, size_t i,
                                const char *pred,
                                const struct mt_eval_params *params,
                                struct mt_error *err)
{
    struct mt_eval_params p = *params;
    const struct mt_eval_result *res;
    enum mt_status st;

    p.bleurt = r->bleurt[i];
    p.bertscore = r->bert[i];
    st = mt_eval_score(r->ref, r->sub[i], &p, &r->res[i], err);
    if (st != MT_OK)
        return st;
    res = r->res[i];
    log_diags(r->sub[i], res);
    if (res->predicted < res->notes)
        mt_log(MT_LOG_WARN,
               "%s: %zu of the %zu reference notes have no prediction; they "
               "count as wrong (--only-predicted scores only the predicted "
               "notes)",
               pred, res->notes - res->predicted, res->notes);
    return MT_OK;
}

enum mt_status mtx_score_runs(const char *ref,
                              const struct mtx_score_run_files *f, size_t n,
                              int only_predicted,
                              const struct mt_eval_params *p,
                              struct mtx_score_runs *out, struct mt_error *err)
{
    enum mt_status st;
    size_t i;

    memset(out, 0, sizeof *out);
    if (n < 1 || n > MTX_SCORE_RUNS_MAX)
        return mt_fail(err, MT_EINVAL, "score: 1..%d runs, not %zu",
                       MTX_SCORE_RUNS_MAX, n);
    out->n = n;
    st = mt_eval_ref_load(ref, &out->ref, err);
    for (i = 0; st == MT_OK && i < n; i++)
        st = load_run(out, i, &f[i], err);
    if (st == MT_OK && only_predicted)
        st = mtx_eval_keep_predicted(out->ref, out->sub, n, err);
    for (i = 0; st == MT_OK && i < n; i++)
        st = score_run(out, i, f[i].pred, p, err);
    return st;
}

void mtx_score_runs_free(struct mtx_score_runs *r)
{
    size_t i;

    for (i = 0; i < MTX_SCORE_RUNS_MAX; i++) {
        mt_eval_result_free(r->res[i]);
        mt_eval_sub_free(r->sub[i]);
        mt_eval_scores_free(r->bleurt[i]);
        mt_eval_scores_free(r->bert[i]);
    }
    mt_eval_ref_free(r->ref);
    memset(r, 0, sizeof *r);
}
