/* A check's usage counts as the JSON object of a result ("usage" in
 * mt_check_result_json) and back, for callers that store them apart from
 * a result (the job queue's rows). */
#ifndef MTX_CHECK_USAGE_H
#define MTX_CHECK_USAGE_H

#include <jansson.h>

#include "medtrust/check.h"

/* {"llm_calls", ..., "estimated_token_calls"}; NULL when out of memory. */
json_t *mtx_check_usage_json(const struct mt_check_usage *u);

/* Reads such an object into *u (missing members are 0). */
void mtx_check_usage_read(json_t *o, struct mt_check_usage *u);

#endif
