#!/usr/bin/env bash
# Integration: one model spec with three endpoints
# (openai:URL1,URL2,URL3#MODEL) through three role-aware stubs on
# loopback, one of which answers HTTP 500 to its first calls, then
# recovers. The mediqa batch finishes with no failed note or call; the
# log shows that endpoint taken out, its probe failing (retried elsewhere
# at once, a retry that is not the caller's), and back in; the
# trace names the endpoint of every call, all three among them, the
# recovered one answering again after its return; with all three healthy
# the calls spread over them (least outstanding requests, ties in turn).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb mediqa
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"

csv_head "$MEDEC" 80 "$TMP/s.csv"
urls=()
for n in a b c; do
    extra=()
    [ $n = c ] && extra=(--fail-first 2)
    stub_start "$n" --delay 100 "${extra[@]}"
    u=${SPEC#openai:}
    urls+=("${u%#stub}")
done
POOL="openai:${urls[0]},${urls[1]},${urls[2]}#stub"

# ---- one endpoint failing, then recovering ----
"$MT" mediqa --llm "$POOL" --data "$TMP/s.csv" --strategy single --jobs 2 \
    --retries 1 --out "$TMP/run.txt" --trace "$TMP/t.jsonl" --json \
    --no-progress >"$TMP/m.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && py "$TMP" "${urls[@]}" <<'PY'; then
import json, sys
d, urls = sys.argv[1], sys.argv[2:]
base = [u + "/v1" for u in urls]
m = json.loads(open(f"{d}/m.json").read().strip().splitlines()[-1])
assert m["checked"] == 80 and m["failed"] == 0 and m["failed_calls"] == 0, m
assert len(open(f"{d}/run.txt").read().splitlines()) == 80
err = open(f"{d}/err").read()
bad = base[2]
out = f"model endpoint {bad} failed ("
assert err.count(out) == 1 and "taken out for 1 s" in err, err[-2000:]
probe = f"model endpoint {bad} failed its probe ("
assert probe in err, err[-2000:]
# the failed probe's request goes elsewhere on a retry of its own
# (its two failures: the take-out's retry 1/1, the probe's 1/2)
assert err.count("HTTP 500: injected fault; retry 1/1 in 0.00 s") == 1, err
assert err.count("HTTP 500: injected fault; retry 1/2 in 0.00 s") == 1, err
assert err.count(f"model endpoint {bad} answered its probe: back in") == 1, err
assert "HTTP 500" in err.split(out)[1].split("\n")[0], err
# the trace: every call names the endpoint that answered it
calls = []
for l in open(f"{d}/t.jsonl"):
    for t in json.loads(l).get("trace", []):
        if t.get("step") == "call":
            calls.append(t)
assert len(calls) == 80, len(calls)
by = {b: sum(1 for c in calls if c.get("endpoint") == b) for b in base}
assert sum(by.values()) == 80, by
assert by[base[0]] > 0 and by[base[1]] > 0 and by[base[2]] > 0, by
# the stub's own log: its two 500s, then answers after its return
log = open(f"{d}/c.log").read().split()
assert log[0:4:2] == ["500", "500"] and log.count("500") == 2, log[:10]
assert log.count("OK") == by[base[2]], (log.count("OK"), by)
print(f"# calls per endpoint: {list(by.values())}")
PY
    ok "an endpoint answering 500s is taken out, probed and back in; the batch finishes; the trace names each call's endpoint"
else
    not_ok "endpoint pool with a failing endpoint" "rc=$rc" "$(tail -5 "$TMP/err")"
fi

# ---- all healthy: the calls spread over the three ----
"$MT" mediqa --llm "$POOL" --data "$TMP/s.csv" --strategy single --jobs 3 \
    --limit 30 --out "$TMP/run2.txt" --trace "$TMP/t2.jsonl" --json \
    --no-progress >"$TMP/m2.json" 2>"$TMP/err2"
rc=$?
if [ $rc -eq 0 ] && ! grep -q "model endpoint" "$TMP/err2" &&
    py "$TMP/t2.jsonl" "${urls[@]}" <<'PY'; then
import json, sys
base = [u + "/v1" for u in sys.argv[2:]]
calls = [t for l in open(sys.argv[1]) for t in json.loads(l)["trace"]
         if t.get("step") == "call"]
by = [sum(1 for c in calls if c["endpoint"] == b) for b in base]
assert sum(by) == 30 and min(by) >= 6, by  # an even share is 10
print(f"# calls per endpoint: {by}")
PY
    ok "three healthy endpoints share the calls (least outstanding requests)"
else
    not_ok "endpoint pool spread" "rc=$rc" "$(tail -3 "$TMP/err2")"
fi

# ---- a bad URL in the list is named ----
"$MT" check --llm "openai:${urls[0]},ftp://x#stub" --strategy single \
    --no-retrieval "$TMP/s.csv" >/dev/null 2>"$TMP/err3"
if [ $? -ne 0 ] && grep -q "'ftp://x' is not an http(s) URL" "$TMP/err3"; then
    ok "a list with a URL that is not http(s) is refused, naming it"
else
    not_ok "bad URL in an endpoint list" "$(tail -3 "$TMP/err3")"
fi
