#!/usr/bin/env bash
# Integration: POST /v1/verify on `medtrust serve --llm` (the role-aware
# agent stub's qa_judge: SUPPORT on 3+ shared words, CONTRADICT on "not"):
# a queued run whose events give the sentences first, then each claim and
# each sentence as it is judged, and whose result is the CLI's `verify
# --json` object for the same text and store (timing aside); 400 for bad
# input, 401 without a session, 503 with what to set when no verifier is
# configured, and GET /v1/limits' "verify" bounds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve verify
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
export MEDTRUST_LLM_TIMEOUT=20
. "$(dirname "$0")/api_lib.sh"
T='Does the lace plant make holes in its leaves? The lace plant produces perforations in its leaves through programmed cell death. Mitochondria do not change during programmed cell death in the lace plant. Zebras enjoy purple umbrellas on quiet Sundays.'
body() {
    python3 -c 'import json,sys; o=json.loads(sys.argv[2] or "{}"); o["text"]=sys.argv[1]; print(json.dumps(o))' "$1" "${2:-}"
}

# ==== Without a verifier ====
serve_start nollm
expect "verify without a verifier is 503" 503 "${A[@]}" "$U/v1/verify" -d "$(body "$T")"
grep -q -- '--nli' "$TMP/body" && grep -q -- '--llm' "$TMP/body" &&
    ok "the 503 says how to configure a verifier" ||
    not_ok "the 503 says how to configure a verifier" "$(cat "$TMP/body")"

# ==== With the stub ====
stub_start main
serve_start main --llm "$SPEC"
expect "an empty text is 400" 400 "${A[@]}" "$U/v1/verify" -d '{"text":" \n"}'
expect "a body without a text is 400" 400 "${A[@]}" "$U/v1/verify" -d '{"k":3}'
expect "k out of range is 400" 400 "${A[@]}" "$U/v1/verify" -d "$(body "$T" '{"k":0}')"
expect "support_min out of range is 400" 400 "${A[@]}" "$U/v1/verify" \
    -d "$(body "$T" '{"support_min":2}')"
expect "a text over 60 KiB is 400" 400 "${A[@]}" "$U/v1/verify" \
    -d "$(body "$(head -c 61500 /dev/zero | tr '\0' 'a')")"
expect "a verify needs a session" 401 "$U/v1/verify" -d "$(body "$T")"
expect "GET /v1/limits" 200 "${A[@]}" "$U/v1/limits"
if py "$TMP/body" <<'PY'; then
import json, sys
v = json.load(open(sys.argv[1]))["verify"]
assert v["text_bytes"] == 61440, v
assert v["fields"]["k"]["default"] == 5 and v["fields"]["k"]["max"] == 100, v
assert v["fields"]["contradict_min"]["max"] == 1, v
PY
    ok "/v1/limits lists verify's bounds"
else not_ok "/v1/limits verify" "$(head -c 400 "$TMP/body")"; fi

code "${A[@]}" "$U/v1/verify" -d "$(body "$T" '{"k":3}')" >"$TMP/v.code"
run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("run_id", 0))' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$run/events" >"$TMP/v.sse"
curl -s "${A[@]}" "$U/v1/runs/$run" >"$TMP/v.run"
"$MT" verify --db "$TMP/db" --llm "$SPEC" -k 3 --json "$T" >"$TMP/v.cli" 2>"$TMP/err"
if [ "$(cat "$TMP/v.code")" = 202 ] &&
    py "$TMP/v.sse" "$TMP/v.cli" "$TMP/v.run" <<'PY'; then
import json, sys
sse, cli, run = sys.argv[1:]
events = []
for block in open(sse).read().split("\n\n"):
    lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
    if "event" in lines:
        events.append((lines["event"], json.loads(lines["data"])))
assert events[-1][0] == "done" and events[-1][1]["status"] == "done", events[-1]
api, want = events[-1][1]["result"], json.load(open(cli))
for r in (api, want):
    r["usage"].pop("seconds")
assert api == want, (api, want)
steps = [d for e, d in events if e == "step"]
kinds = [s["step"] for s in steps]
# the sentences first, then each claim before its sentence, in order
assert kinds[0] == "sentences" and len(steps[0]["sentences"]) == 4, steps[0]
assert [s["text"] for s in steps[0]["sentences"]] == [s["text"] for s in api["sentences"]]
assert kinds[1:] == ["sentence", "claim", "sentence", "claim", "sentence",
                     "claim", "sentence"], kinds
sents = [s for s in steps if s["step"] == "sentence"]
assert [s["sentence"] for s in sents] == api["sentences"]
st = [s["status"] for s in api["sentences"]]
assert st == ["NOT_A_CLAIM", "SUPPORT", "CONTRADICT", "NO_EVIDENCE"], st
r = json.load(open(run))
assert r["kind"] == "verify" and r["status"] == "done", r
PY
    ok "verify over HTTP: sentences, then claim by claim; the result is the CLI's --json"
else
    not_ok "verify over HTTP" "$(cat "$TMP/v.code")" "$(head -c 900 "$TMP/v.sse")" "$(tail -2 "$TMP/err")"
fi

# ==== POST /v1/check verifies its correction when --nli names a verifier ====
cat >"$TMP/c.script" <<'EOF'
single answer 1 Statins lower LDL cholesterol.
- if /Claim:\nStatins lower/ {"label":"SUPPORT"}
- if /Claim:\nStatins raise/ {"label":"CONTRADICT"}
- {"label":"NO_EVIDENCE"}
EOF
"$MEDTRUST_BUILD/fixtures/script_server" "$TMP/c.script" "$TMP/c.log" >"$TMP/c.port" &
STUB_PIDS+=($!)
for _ in $(seq 50); do [ -s "$TMP/c.port" ] && break; sleep 0.1; done
CS="openai:http://127.0.0.1:$(head -1 "$TMP/c.port")#scripted"
serve_start nli --llm "$CS" --nli "llm:$CS"
NOTE='A 60-year-old man has high cholesterol. Statins raise LDL cholesterol. He is followed up in clinic.'
code "${A[@]}" "$U/v1/check" -d "$(python3 -c 'import json,sys; print(json.dumps({"note": sys.argv[1], "strategy": "single"}))' "$NOTE")" >"$TMP/c.code"
run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("run_id", 0))' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$run/events" >/dev/null
curl -s "${A[@]}" "$U/v1/runs/$run" >"$TMP/c.run"
if [ "$(cat "$TMP/c.code")" = 202 ] && py "$TMP/c.run" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "done", r
res = r["result"]
ce = res["correction_evidence"]
assert ce["verdict_corrected"] == "SUPPORT" and ce["verdict_original"] == "CONTRADICT", ce
assert ce["strongest"] and ce["source"] in ("bm25", "hybrid", "dense"), ce
assert any(t.get("step") == "correction_evidence" for t in res["trace"])
PY
    ok "POST /v1/check with --nli: the result and trace carry correction_evidence"
else
    not_ok "/v1/check correction_evidence" "$(cat "$TMP/c.code")" "$(head -c 800 "$TMP/c.run")"
fi
