/* qa-eval --claims and --verify: the claim-verification set scored by the
 * batch layer (batch/claim_eval.c), printed here as text or JSON. */
#include <stdio.h>
#include <string.h>

#include "batch/claim_eval.h"
#include "cli/qa_opts.h"
#include "core/progress.h"
#include "medtrust/core.h"

static const char *const pred_names[MTX_CLAIM_NPRED] = {"SUPPORT", "CONTRADICT",
                                                        "NO_EVIDENCE", "OTHER"};

/* ==== --verify ==== */

/* A number, or null when it is undefined (negative here). */
static void num(double x)
{
    if (x < 0)
        printf("null");
    else
        printf("%.4f", x);
}

static void print_json(const struct mtx_claim_eval *m, int given, unsigned k)
{
    size_t g, p;

    printf("{\"mode\":\"verify\",\"claims\":%zu,\"skipped\":%zu,"
           "\"failed\":%zu,\"given_evidence\":%s,\"k\":%u,"
           "\"evidence_recall_at_k\":",
           m->claims, m->skipped, m->failed, given ? "true" : "false", k);
    num(m->rec);
    printf(",\"recall_ci95\":[");
    num(m->rec_lo);
    printf(",");
    num(m->rec_hi);
    printf("],\"recall_claims\":%zu,\"accuracy\":%.4f,\"accuracy_ci95\":"
           "[%.4f,%.4f],\"macro_f1\":%.4f,\"macro_f1_ci95\":[%.4f,%.4f],"
           "\"f1\":{\"SUPPORT\":%.4f,\"CONTRADICT\":%.4f,"
           "\"NO_EVIDENCE\":%.4f},\"confusion\":{\"gold\":[\"SUPPORT\","
           "\"CONTRADICT\",\"NO_EVIDENCE\"],\"predicted\":[\"SUPPORT\","
           "\"CONTRADICT\",\"NO_EVIDENCE\",\"OTHER\"],\"counts\":[",
           m->rec_n, m->acc, m->acc_lo, m->acc_hi, m->f1, m->f1_lo, m->f1_hi,
           m->per[0], m->per[1], m->per[2]);
    for (g = 0; g < 3; g++)
        for (p = 0; p < MTX_CLAIM_NPRED; p++)
            printf("%s%zu%s", p == 0 ? (g ? ",[" : "[") : ",", m->cm[g][p],
                   p == MTX_CLAIM_NPRED - 1 ? "]" : "");
    printf("]}}\n");
}

static void print_text(const struct mtx_claim_eval *m, int given, unsigned k)
{
    size_t g, p;

    printf("claims %zu (skipped %zu with another label; %zu failed)%s\n",
           m->claims, m->skipped, m->failed,
           given ? ", the gold evidence given" : "");
    if (!given && m->rec_n)
        printf("evidence recall@%u %.4f (95%% CI %.4f..%.4f, %zu claims "
               "with evidence)\n",
               k, m->rec, m->rec_lo, m->rec_hi, m->rec_n);
    printf("accuracy %.4f (95%% CI %.4f..%.4f)\nmacro-F1 %.4f (95%% CI "
           "%.4f..%.4f; F1 SUPPORT %.4f, CONTRADICT %.4f, NO_EVIDENCE "
           "%.4f)\nconfusion (rows gold, columns predicted):\n%14s",
           m->acc, m->acc_lo, m->acc_hi, m->f1, m->f1_lo, m->f1_hi, m->per[0],
           m->per[1], m->per[2], "");
    for (p = 0; p < MTX_CLAIM_NPRED; p++)
        printf(" %12s", pred_names[p]);
    for (g = 0; g < 3; g++) {
        printf("\n%14s", pred_names[g]);
        for (p = 0; p < MTX_CLAIM_NPRED; p++)
            printf(" %12zu", m->cm[g][p]);
    }
    printf("\n");
}

static void on_start(void *user, size_t n)
{
    mtx_progress_set_total(user, n);
}

static void on_claim(void *user)
{
    mtx_progress_add(user, 1);
}

/* The set judged under a progress bar. */
static enum mt_status run_bar(const struct cli_args *a, struct mt_qa *q,
                              struct mtx_claim_eval_params *cp,
                              struct mtx_claim_eval *m, struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    enum mt_status st;

    pp.label = "qa-eval";
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mtx_progress_new(&pp, &bar);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    cp->on_start = on_start;
    cp->on_claim = on_claim;
    cp->user = bar;
    st = mtx_claim_eval_run(q, cp, m, err);
    mtx_progress_finish(bar);
    mtx_progress_free(bar);
    return st;
}

enum mt_status qa_eval_verify(const struct cli_args *a, struct mt_qa *q,
                              unsigned jobs, size_t limit, struct mt_error *err)
{
    struct mtx_claim_eval_params cp;
    struct mtx_claim_eval m;
    unsigned long k = 5;
    int given = cli_get(a, "given-evidence") != NULL;
    enum mt_status st;

    mtx_claim_eval_default_params(q, &cp);
    if (cli_get_uint(a, "top-k", 1, 1000, &k) < 0)
        return mt_fail(err, MT_EINVAL, "-k must be in 1..1000");
    cp.vp.k = (uint32_t)k;
    cp.path = cli_get(a, "verify");
    cp.limit = limit;
    cp.jobs = jobs;
    cp.mode = given ? MTX_CLAIMS_GIVEN : MTX_CLAIMS_SEARCH;
    st = run_bar(a, q, &cp, &m, err);
    if (st == MT_OK && cli_get(a, "json"))
        print_json(&m, given, cp.vp.k);
    else if (st == MT_OK)
        print_text(&m, given, cp.vp.k);
    if (st == MT_OK && m.failed)
        st = mt_fail(err, MT_EMODEL,
                     "%zu claim%s failed (a model call failed): counted "
                     "wrong, as OTHER",
                     m.failed, m.failed == 1 ? "" : "s");
    return st;
}

/* ==== --claims ==== */

enum mt_status qa_eval_claims(const struct cli_args *a, struct mt_qa *q,
                              unsigned jobs, size_t limit, struct mt_error *err)
{
    struct mtx_claim_eval_params cp;
    struct mtx_claim_eval m;
    enum mt_status st;

    mtx_claim_eval_default_params(q, &cp);
    cp.path = cli_get(a, "claims");
    cp.limit = limit;
    cp.jobs = jobs;
    st = mtx_claim_eval_run(q, &cp, &m, err);
    if (st != MT_OK)
        return st;
    printf(cli_get(a, "json")
               ? "{\"mode\":\"claims\",\"claims\":%zu,\"skipped\":%zu,"
                 "\"failed\":%zu,\"accuracy\":%.4f,\"macro_f1\":%.4f,"
                 "\"f1\":{\"SUPPORT\":%.4f,\"CONTRADICT\":%.4f,"
                 "\"NO_EVIDENCE\":%.4f}}\n"
               : "claims %zu (skipped %zu with another label, verifier "
                 "failed on %zu)\naccuracy %.4f, macro-F1 %.4f (F1 SUPPORT "
                 "%.4f, CONTRADICT %.4f, NO_EVIDENCE %.4f)\n",
           m.claims, m.skipped, m.failed, m.acc < 0 ? 0 : m.acc, m.f1, m.per[0],
           m.per[1], m.per[2]);
    return MT_OK;
}
