#!/usr/bin/env bash
# Integration: the outputs of check, mediqa, sweep and the API (POST
# /v1/check, /v1/batch, /v1/ask: replies, events, runs) on a small fixture
# through the deterministic agent stub (golden_outputs.sh) are the
# goldens under tests/golden/outputs/, which the binary of d33313a wrote
# (the last commit before issue 33's restructuring, README.md there), byte
# for byte once clocks and ports are masked and the members added since
# are cut (scripts/outputs_diff --new-fields): a refactor that changes an
# output fails here, naming the file and the lines.
. "$(dirname "$0")/lib.sh"
need_verb check mediqa sweep serve
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GOLD="$ROOT/tests/golden/outputs"
need "the agent stub" "$MEDTRUST_BUILD/fixtures/agent_stub"

bash "$(dirname "$0")/golden_outputs.sh" "$MT" \
    "$MEDTRUST_BUILD/fixtures/agent_stub" "$TMP/out" 2>"$TMP/run.err"
n=$(find "$GOLD/expected" -type f | wc -l)
if [ "$n" -lt 40 ]; then
    not_ok "goldens present" "only $n files under $GOLD/expected"
    exit 1
fi
python3 "$ROOT/scripts/outputs_diff" --new-fields "$GOLD/expected" "$TMP/out" \
    >"$TMP/diff" 2>&1
# group WHAT FILES-RE: one line per group of outputs, with its diffs
group() {
    local c bad
    c=$(cd "$GOLD/expected" && find . -type f -printf '%P\n' | grep -cE "^($2)")
    bad=$(grep -E "^(=== |only in [^:]*: )($2)" "$TMP/diff")
    if [ "$c" -gt 0 ] && [ -z "$bad" ]; then
        ok "$1: $c outputs equal the pre-restructuring binary's"
    else
        mapfile -t lines < <(awk -v re="^(=== |only in [^:]*: )($2)" \
            '/^(=== |only in )/ { p = ($0 ~ re) } p' "$TMP/diff" | head -40)
        not_ok "$1 ($c goldens) differ from tests/golden/outputs/expected" \
            "${lines[@]}" "$(tail -3 "$TMP/run.err")"
    fi
}
group "check" "check-"
group "mediqa" "mediqa-|files/mq-"
group "sweep and its replay" "sweep|files/swr?/"
group "POST /v1/check, /v1/batch, /v1/ask" "api-"
group "the stub's calls, role by role" "files/stub-"
# ... and the new members are there: a check result, a mediqa trace line and
# the API's check carry the trace version, each search record its hits
if python3 - "$TMP/out" <<'PY'; then
import json, sys
d = sys.argv[1]
def check(r, what):
    assert isinstance(r.get("trace_version"), int), (what, list(r))
    s = [t for t in r["trace"] if t.get("step") == "search"]
    assert s, what
    for t in s:
        assert [p["doc_id"] for p in t["passages"]] == t["hits"], (what, t)
        assert all(p["text"] and p["source"] == "golden" for p in t["passages"])
    assert all("parsed" in t for t in r["trace"] if t.get("step") == "call"), what
check(json.load(open(d + "/check-react-reflex.json.out")), "check --json")
check(json.loads(open(d + "/files/mq-rr.jsonl").readline()), "mediqa --trace")
check(json.load(open(d + "/api-check-react-reflex.run"))["result"], "/v1/check")
PY
    ok "check results, traces and /v1/check carry the trace version and each search's hits"
else
    not_ok "new members" "$(head -c 300 "$TMP/out/check-react-reflex.json.out")"
fi
