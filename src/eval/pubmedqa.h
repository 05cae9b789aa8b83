/* qa-eval on PubMedQA: each question's answer (its `ask --json` line)
 * scored against the gold yes/no/maybe and the relevant PMIDs: answer
 * accuracy with its 95% bootstrap interval, citation precision, the share
 * of claims in each verdict and of (claim, document) pairs that are
 * NO_REFERENCE (hallucinated citations). */
#ifndef MT_EVAL_PUBMEDQA_H
#define MT_EVAL_PUBMEDQA_H

#include <stddef.h>

#include "medtrust/qa.h"

struct mtx_pubmedqa_score {
    size_t questions, failed;     /* failed: no answer, or an "error" */
    size_t missing;               /* answers without a closing verdict */
    size_t cited, cited_relevant; /* distinct cited ids, pooled */
    size_t claims, claim_labels[MT_QA_NLABELS];
    size_t pairs, no_reference; /* (claim, document) verdicts */
    double acc, acc_lo, acc_hi; /* after mtx_pubmedqa_finish */
    double *correct;            /* per question, for the bootstrap */
};

/* Starts a score of at most n questions; MT_ENOMEM. */
enum mt_status mtx_pubmedqa_init(struct mtx_pubmedqa_score *t, size_t n);
/* Counts one question: its answer line (NULL when it failed), its gold
 * verdict (NULL: none) and its relevant document ids. */
void mtx_pubmedqa_add(struct mtx_pubmedqa_score *t, const char *line,
                      const char *gold, char *const *relevant, size_t nrel);
/* Sets acc, acc_lo and acc_hi. */
void mtx_pubmedqa_finish(struct mtx_pubmedqa_score *t);
void mtx_pubmedqa_free(struct mtx_pubmedqa_score *t);

#endif
