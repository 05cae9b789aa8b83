/* Claim-verification sets scored (qa-eval --claims and --verify): a CSV in
 * HealthVer's or SciFact's shape (claim, evidence text or document id,
 * label) read, each claim judged on a work queue, and accuracy, macro-F1,
 * the confusion matrix, evidence recall@k and 95% bootstrap intervals
 * computed. The CLI prints what this returns. */
#ifndef MT_BATCH_CLAIM_EVAL_H
#define MT_BATCH_CLAIM_EVAL_H

#include <stddef.h>

#include "medtrust/qa.h"
#include "medtrust/verify.h"

/* Predicted classes: the three gold labels and OTHER (a FAILED verdict,
 * NO_REFERENCE, MISQUOTED, or a label outside the three). */
#define MTX_CLAIM_NPRED 4

/* How each claim is judged. */
enum mtx_claim_mode {
    /* --claims: the verifier on the claim and the evidence column's text
     * (an empty one too); OTHER counts as failed */
    MTX_CLAIMS_PAIR,
    /* --verify: as `medtrust verify` does (a search for the top k, the
     * verdict rule); evidence naming a stored document is its id */
    MTX_CLAIMS_SEARCH,
    /* --verify --given-evidence: the verifier on the gold pair (the
     * evidence text, or the gold document's title and text); a row with
     * no evidence is skipped */
    MTX_CLAIMS_GIVEN,
};

struct mtx_claim_eval_params {
    const char *path; /* the CSV */
    size_t limit;     /* only the first 'limit' usable rows; 0 = all */
    unsigned jobs;    /* claims judged at once (>= 1) */
    enum mtx_claim_mode mode;
    struct mt_verify_params vp; /* MTX_CLAIMS_SEARCH's settings (k, ...) */
    /* Called once the set is read, with the claims to judge, and once
     * each is judged (from a worker thread); NULL = none. */
    void (*on_start)(void *user, size_t n);
    void (*on_claim)(void *user);
    void *user;
};

/* The scores; an undefined value (no rows, no gold evidence) is -1. */
struct mtx_claim_eval {
    size_t claims;  /* rows judged */
    size_t skipped; /* rows with another label (or, given, no evidence) */
    size_t failed;  /* a model call failed (MTX_CLAIMS_PAIR: OTHER) */
    double acc, acc_lo, acc_hi;
    double f1, f1_lo, f1_hi, per[3]; /* macro-F1 and each label's F1 */
    double rec, rec_lo, rec_hi;      /* evidence recall@k (SEARCH) */
    size_t rec_n;                    /* claims with gold evidence */
    size_t cm[3][MTX_CLAIM_NPRED];   /* gold x predicted */
};

/* The pre-filled parameters: 4 jobs, MTX_CLAIMS_PAIR, vp as
 * mt_verify_default_params(q) gives them. */
void mtx_claim_eval_default_params(const struct mt_qa *q,
                                   struct mtx_claim_eval_params *p);

/* Reads p->path, judges every usable row with q and scores the set into
 * *out. A row the model failed on is counted (OTHER), not fatal: out->failed
 * says how many. MT_EPARSE (naming the file) when the CSV lacks a claim,
 * evidence or label column. */
enum mt_status mtx_claim_eval_run(struct mt_qa *q,
                                  const struct mtx_claim_eval_params *p,
                                  struct mtx_claim_eval *out,
                                  struct mt_error *err);

#endif
