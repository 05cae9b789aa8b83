#!/usr/bin/env bash
# Integration (issue 34, "The HTTP API, described"): GET /v1/openapi.json is
# walked by openapi_walk.py (Python stdlib only), which calls every route
# it documents: each exists with its method, answers 401 without
# credentials and 403 without X-CSRF-Token exactly where the document says,
# answers only documented statuses; every bounded request member of check,
# batch, ask, verify and search just past its documented bounds is 400
# naming it; a body over x-max-body-bytes is 413; an undocumented path is
# 404. A server without models: the bounds are checked before the models.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_SINGLE
. "$(dirname "$0")/api_lib.sh"
serve_start oa --rate-limit 0
python3 "$(dirname "$0")/openapi_walk.py" "$U" alice alice-password
