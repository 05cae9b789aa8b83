/* The verifier of a proposed correction set as a checker's hook (issue
 * 32): mt_verify_correction adapted to mt_check_verify_fn, for `check
 * --verify-correction` and the server's checkers alike. */
#ifndef MTX_BATCH_CORRECTION_H
#define MTX_BATCH_CORRECTION_H

#include "medtrust/check.h"
#include "medtrust/qa.h"

/* Sets p's verify_correction hook to verify with q (not owned: the caller
 * closes it after the checker): both sentences judged against the run's
 * passages, at most MT_CHECK_VERIFY_PASSAGES, each by its text when the
 * passage carries one, else by its document read by id. */
void mtx_correction_attach(struct mt_agent_params *p, struct mt_qa *q);

#endif
