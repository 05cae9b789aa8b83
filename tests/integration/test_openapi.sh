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

# 429, documented on every route but /v1/health: a server allowing one
# request a second (its document is the first one's), called until it refuses one (at most 20 calls)
curl -s "$U/v1/openapi.json" >"$TMP/doc.json"
serve_start rl --rate-limit 1 --rate-burst 1
got=
for _ in $(seq 20); do
    got=$(curl -s -D "$TMP/rl.hdr" -o "$TMP/body" -w '%{http_code}' "${A[@]}" "$U/v1/limits")
    [ "$got" = 429 ] && break
done
if [ "$got" = 429 ] && grep -qi '^Retry-After: [0-9]' "$TMP/rl.hdr" &&
    python3 - "$TMP/doc.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))["paths"]
assert "429" in d["/v1/limits"]["get"]["responses"]
assert "429" not in d["/v1/health"]["get"]["responses"]
PY
    ok "a rate-limited GET /v1/limits is 429 with Retry-After, as documented"
else not_ok "429 documented and reachable" "last $got: $(head -c 200 "$TMP/body")"; fi
