#!/usr/bin/env bash
# Integration (issue 39 rows 4, 4b, 5, 9): secrets in model specs never
# shown (`models`, /v1/models, the server's log, errors); results written
# to a full stdout fail with exit 3; `mediqa --trace` onto a disk that
# fills up (MEDTRUST_IO_FAIL) fails naming the trace, and --resume ends
# with the trace and submission of an unbroken run; user names are one
# account whatever their case; an existing --data-dir is made 0700.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
. "$(dirname "$0")/api_lib.sh"
need_verb models serve mediqa
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_EMBEDDER MEDTRUST_RERANKER
unset MEDTRUST_IO_FAIL
stub_start main

# ---- secrets never printed ----
S1=hunter2pw S2=sk-pool2secret S3=querykey77 S4=tok-roleabc S5=embkey99
POOL="openai:http://me:$S1@127.0.0.1:1,http://u:$S2@127.0.0.1:2/v1#m"
leaks() { grep -E "$S1|$S2|$S3|$S4|$S5|me:|u:sk" "$@"; }
MEDTRUST_LLM_EVAL="openai:http://127.0.0.1:1/v1?api_key=$S3#m" \
MEDTRUST_LLM_JUDGE="openai:http://x:$S4@127.0.0.1:1#m" \
    "$MT" models --llm "$POOL" --no-check \
    --embedder "openai:http://127.0.0.1:1/?token=$S5#e" >"$TMP/m.txt" 2>&1
MEDTRUST_LLM_EVAL="openai:http://127.0.0.1:1/v1?api_key=$S3#m" \
    "$MT" models --llm "$POOL" --no-check --json >"$TMP/m.json" 2>&1
# checked: the connection errors name the URLs, redacted too
"$MT" models --llm "$POOL" --timeout 2 --json >"$TMP/mc.json" 2>&1
if ! leaks "$TMP/m.txt" "$TMP/m.json" "$TMP/mc.json" >/dev/null &&
    grep -qF 'http://***@127.0.0.1:1,http://***@127.0.0.1:2/v1#m' "$TMP/m.txt" &&
    grep -qF 'api_key=***' "$TMP/m.json" &&
    grep -qF 'token=***' "$TMP/m.txt" && grep -q '"failed"' "$TMP/mc.json"; then
    ok "models shows no user info, pool password or key-like parameter"
else
    not_ok "models hides secrets" "$(leaks "$TMP/m.txt" "$TMP/m.json" "$TMP/mc.json" | head -3)" \
        "$(head -3 "$TMP/m.txt")"
fi

echo 'root-password1' | "$MT" user add --db "$TMP/db" root --admin 2>/dev/null
MEDTRUST_LLM_QA="openai:http://127.0.0.1:1/?key=$S3#m" \
    serve_start sec --llm "$POOL" --nli "llm:openai:http://x:$S4@127.0.0.1:1#m"
expect "GET /v1/models" 200 "${A[@]}" "$U/v1/models"
curl -s "${A[@]}" "$U/v1/check" -H 'Content-Type: application/json' \
    -d '{"text":"Chest pain. Sent home.","strategy":"single","no_retrieval":true}' \
    >/dev/null
# a user (alice) gets the model names only; an admin the specs, redacted
if ! leaks "$TMP/body" >/dev/null && ! grep -q '127.0.0.1' "$TMP/body" &&
    grep -q '"default":"m"' "$TMP/body"; then
    ok "/v1/models shows a user the model names only, no secret, no endpoint"
else
    not_ok "/v1/models for a user" "$(head -c 400 "$TMP/body")"
fi
curl -s -c "$TMP/root.jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"root","password":"root-password1"}' >/dev/null
expect "GET /v1/models as an admin" 200 -b "$TMP/root.jar" "$U/v1/models"
if ! leaks "$TMP/body" >/dev/null && grep -qF 'http://***@127.0.0.1:2' "$TMP/body" &&
    grep -qF 'key=***' "$TMP/body"; then
    ok "/v1/models shows an admin no secret of the --llm pool, a role or the NLI spec"
else
    not_ok "/v1/models hides secrets" "$(head -c 400 "$TMP/body")"
fi

# ---- user names: one account whatever the case ----
expect "login as ALICE (alice's account)" 200 "$U/v1/login" \
    -H "Content-Type: application/json" \
    -d '{"username":"ALICE","password":"alice-password"}'
grep -q '"name":"alice"' "$TMP/body" || grep -q 'alice' "$TMP/body" ||
    not_ok "ALICE logs into alice" "$(head -c 300 "$TMP/body")"
expect "login as fullwidth ＡＬＩＣＥ (NFKC: alice's account)" 200 "$U/v1/login" \
    -H "Content-Type: application/json" \
    -d '{"username":"\uff21\uff2c\uff29\uff23\uff25","password":"alice-password"}'
expect "a wrong password for ALICE is still refused" 401 "$U/v1/login" \
    -H "Content-Type: application/json" \
    -d '{"username":"ALICE","password":"wrong-password"}'
if echo 'other-password1' | "$MT" user add --db "$TMP/db" Alice \
    >"$TMP/out" 2>&1; then
    not_ok "user add Alice is refused beside alice" "$(cat "$TMP/out")"
else
    grep -q "already exists" "$TMP/out" &&
        ok "user add Alice is refused beside alice" ||
        not_ok "user add Alice refused" "$(cat "$TMP/out")"
fi

# ---- an existing --data-dir is tightened to 0700 ----
mkdir -m 0755 "$TMP/dd"
serve_start dd --data-dir "$TMP/dd"
mode=$(stat -c %a "$TMP/dd")
[ "$mode" = 700 ] && grep -q 'made it 0700' "$TMP/dd.err" &&
    ok "an existing --data-dir 0755 is made 0700" ||
    not_ok "--data-dir made 0700" "mode $mode" "$(tail -3 "$TMP/dd.err")"
for p in "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
SERVE_PIDS=()
if ! leaks "$TMP/sec.err" "$TMP/sec.out" >/dev/null; then
    ok "the server's log shows no secret"
else
    not_ok "server log hides secrets" "$(leaks "$TMP/sec.err" | head -3)"
fi

# ---- a result written to a full stdout is a failure (exit 3) ----
printf 'Chest pain.\nSent home.\n' >"$TMP/note.txt"
full() { # full NAME CMD...: CMD > /dev/full exits 3 naming standard output
    local name=$1 rc
    shift
    "$@" >/dev/full 2>"$TMP/full.err"
    rc=$?
    if [ $rc -eq 3 ] && grep -q 'standard output: write failed: No space' \
        "$TMP/full.err"; then
        ok "$name > /dev/full exits 3 and says why"
    else
        not_ok "$name > /dev/full" "rc=$rc" "$(tail -2 "$TMP/full.err")"
    fi
}
full "search --json" "$MT" search --db "$TMP/db" --json mitochondria
full "stats --json" "$MT" stats --db "$TMP/db" --json
full "check --json" "$MT" check --llm "$SPEC" --strategy single --json "$TMP/note.txt"
full "ask --json" "$MT" ask --db "$TMP/db" --llm "$SPEC" --json "Is aspirin useful?"
full "models --json" "$MT" models --no-check --json
full "--version" "$MT" --version

# ---- mediqa --trace onto a disk that fills up ----
csv_head "$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv" 12 "$TMP/s12.csv"
mq() { "$MT" mediqa --llm "$SPEC" --data "$TMP/s12.csv" --strategy single \
    --no-progress --jobs 2 "$@"; }
mq --out "$TMP/ref.txt" --trace "$TMP/ref.jsonl" >/dev/null 2>&1
ids() { python3 -c 'import json,sys; print(" ".join(sorted(json.loads(l)["id"] for l in open(sys.argv[1]))))' "$1"; }
bad=0
for n in 3 8 15 24; do
    rm -f "$TMP/f.txt"* "$TMP/f.jsonl"
    MEDTRUST_IO_FAIL=$n mq --out "$TMP/f.txt" --trace "$TMP/f.jsonl" \
        >/dev/null 2>"$TMP/f.err"
    rc=$?
    if [ $rc -ne 3 ] || ! grep -qE "f\.(jsonl|txt)" "$TMP/f.err"; then
        bad=1
        not_ok "mediqa on a full disk at op $n fails naming the file" \
            "rc=$rc" "$(tail -2 "$TMP/f.err")"
        continue
    fi
    mq --out "$TMP/f.txt" --trace "$TMP/f.jsonl" --resume >/dev/null \
        2>"$TMP/f.err" || { bad=1; not_ok "--resume after op $n" "$(tail -2 "$TMP/f.err")"; continue; }
    if ! cmp -s "$TMP/ref.txt" "$TMP/f.txt" ||
        [ "$(ids "$TMP/f.jsonl")" != "$(ids "$TMP/ref.jsonl")" ]; then
        bad=1
        not_ok "--resume after a full disk at op $n ends as an unbroken run" \
            "$(diff "$TMP/ref.txt" "$TMP/f.txt" | head -3)" \
            "trace ids: $(ids "$TMP/f.jsonl")"
    fi
done
[ $bad -eq 0 ] &&
    ok "mediqa --trace on a full disk: exit 3 naming the file; --resume ends with every note's line and trace line once"
