#!/usr/bin/env bash
# Integration: `medtrust examples --explain` (IryoNLP's reasoning.py)
# against the loopback stub server (tests/fixtures/stub_server, scripted
# replies): the model is sent reasoning.py's published input (CLINICAL
# NOTE:, the Sentences, OUTPUT: and the gold answer as json.dumps writes
# it) at the published temperature 1.0 and 512 tokens (--temperature and
# --max-tokens change them), the
# examples file gets the model's Reasoning column, a rerun with the call
# cache asks nothing, a failed call is named and its Reasoning left empty
# (exit 1), and `check --strategy single --examples` shows the reasoning in
# its few-shot prompt.
. "$(dirname "$0")/lib.sh"
need_verb examples
STUB=${MEDTRUST_BUILD:?}/fixtures/stub_server
export MEDTRUST_LLM_TIMEOUT=10
unset MEDTRUST_LLM
py() { python3 - "$@"; }
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

reply() { # TEXT -> one scripted chat completion (TEXT JSON-escaped)
    printf 'reply 200 0 - {"choices":[{"index":0,"message":{"role":"assistant","content":"%s"}}],"usage":{"prompt_tokens":9,"completion_tokens":5}}\n' "$1"
}
start() { # NAME SCRIPT-FILE: sets SPEC
    "$STUB" "$2" "$TMP/$1.log" >"$TMP/$1.port" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -s "$TMP/$1.port" ] && break; sleep 0.1; done
    SPEC="openai:http://127.0.0.1:$(head -1 "$TMP/$1.port")#stub"
}

cat >"$TMP/train.csv" <<'CSV'
Text ID,Text,Sentences,Error Flag,Error Sentence ID,Error Sentence,Corrected Sentence
t-mi,"A man has crushing chest pain and ST elevation. He is sent home.","0 A man has crushing chest pain and ST elevation.
1 He is sent home.",1,1,He is sent home.,"He is taken for PCI, ""urgently"" – at 37 °C."
t-flu,Influenza spreads through droplets.,0 Influenza spreads through droplets.,0,-1,NA,NA
CSV

{ reply "ST elevation with chest pain is a STEMI, so sending him home is wrong."
  reply "Droplet spread is how influenza travels; nothing is wrong."; } >"$TMP/s1"
start s1 "$TMP/s1"
"$MT" examples --explain --data "$TMP/train.csv" --out "$TMP/ex.csv" \
    --llm "$SPEC" --jobs 1 --no-progress --cache "$TMP/cache.db" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '2 notes, 2 explained, 0 failed' "$TMP/err" &&
    py "$TMP/ex.csv" "$TMP/s1.log" <<'PY'; then
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [r["Text ID"] for r in rows] == ["t-mi", "t-flu"], rows
assert rows[0]["Reasoning"].startswith("ST elevation with chest pain"), rows[0]
assert rows[1]["Reasoning"].startswith("Droplet spread"), rows[1]
assert rows[0]["Corrected Sentence"] == 'He is taken for PCI, "urgently" – at 37 °C.'
assert rows[0]["Sentences"].endswith("1 He is sent home.")
reqs = [json.loads(l.split(" ", 4)[4]) for l in open(sys.argv[2])]
assert len(reqs) == 2, len(reqs)
# reasoning.py's clinical_note: str(ClinicalNote) of IryoNLP's
# correction/definitions.py (Mistake's fields but reasoning, "NA" if none).
want = ["CLINICAL NOTE:\n%s\nOUTPUT:%s" % (r["Sentences"], json.dumps({
    "is_error": int(r["Error Flag"]), "sentence_id": int(r["Error Sentence ID"]),
    "error_sentence": r["Error Sentence"] if r["Error Flag"] == "1" else "NA",
    "corrected_sentence": r["Corrected Sentence"] if r["Error Flag"] == "1" else "NA"},
    indent=4, ensure_ascii=False)) for r in rows]
for q, w in zip(reqs, want):
    assert [m["role"] for m in q["messages"]] == ["system", "user"], q
    assert q["messages"][1]["content"] == w, (q["messages"][1]["content"], w)
    assert q["temperature"] == 1.0 and q["max_tokens"] == 512, q
PY
    ok "examples --explain: reasoning.py's published input sent at temperature 1.0 and 512 tokens, the reply in the Reasoning column"
else
    not_ok "examples --explain" "rc=$rc" "$(cat "$TMP/err" "$TMP/ex.csv")"
fi

# A rerun with the cache asks nothing (the stub now only fails).
echo 'reply 500 0 - {"error":"no"}' >"$TMP/s2"
start s2 "$TMP/s2"
"$MT" examples --explain --data "$TMP/train.csv" --out "$TMP/ex2.csv" \
    --llm "$SPEC" --jobs 1 --no-progress --cache "$TMP/cache.db" 2>"$TMP/err"
rc=$?
# Its own output as input: the Reasoning column is replaced, not doubled.
"$MT" examples --explain --data "$TMP/ex.csv" --out "$TMP/ex4.csv" \
    --llm "$SPEC" --jobs 2 --no-progress --cache "$TMP/cache.db" 2>>"$TMP/err"
rc4=$?
if [ $rc -eq 0 ] && [ $rc4 -eq 0 ] && cmp -s "$TMP/ex.csv" "$TMP/ex2.csv" &&
    cmp -s "$TMP/ex.csv" "$TMP/ex4.csv" && [ ! -s "$TMP/s2.log" ]; then
    ok "examples --explain: a rerun with the call cache makes no model calls; an existing Reasoning column is replaced"
else
    not_ok "examples --explain: cached rerun" "rc=$rc rc4=$rc4" "$(cat "$TMP/err")" "$(wc -l <"$TMP/s2.log")"
fi

# A failed call: named, its Reasoning empty, never invented; exit 1.
{ reply "Droplets it is."; echo 'reply 400 0 - {"error":"no"}'; } >"$TMP/s3"
start s3 "$TMP/s3"
"$MT" examples --explain --data "$TMP/train.csv" --out "$TMP/ex3.csv" \
    --llm "$SPEC" --jobs 1 --no-progress --retries 0 --temperature 0 \
    --max-tokens 300 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'note t-flu (line 4):.*Reasoning is left empty' "$TMP/err" &&
    grep -q '2 notes, 1 explained, 1 failed' "$TMP/err" &&
    grep -q '1 notes have no reasoning' "$TMP/err" &&
    py "$TMP/ex3.csv" "$TMP/s3.log" <<'PY'; then
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows[0]["Reasoning"] == "Droplets it is." and rows[1]["Reasoning"] == "", rows
q = json.loads(open(sys.argv[2]).readline().split(" ", 4)[4])
assert q["temperature"] == 0 and q["max_tokens"] == 300, q
PY
    ok "examples --explain: --temperature and --max-tokens are sent; a failed call is named and its Reasoning left empty (exit 1)"
else
    not_ok "examples --explain: failed call" "rc=$rc" "$(cat "$TMP/err")"
fi

# single's few-shot prompt shows the reasoning of the examples file.
cp "$TMP/train.csv" "$TMP/medec-validation.csv"
"$MT" examples --explain --data "$TMP/medec-validation.csv" --out "$TMP/x.csv" \
    --llm "$SPEC" --no-progress 2>"$TMP/verr"
rcv=$?
reply '{\"reasoning\": \"fine\", \"is_error\": false, \"sentence_id\": -1, \"error_sentence\": \"\", \"corrected_sentence\": \"\"}' >"$TMP/s4"
start s4 "$TMP/s4"
printf 'A woman has chest pain and ST elevation.\nShe is sent home.\n' >"$TMP/note.txt"
"$MT" check --llm "$SPEC" --strategy single --examples "$TMP/ex.csv" \
    --embedder use-lite --shots 2 --json "$TMP/note.txt" >"$TMP/k.json" 2>"$TMP/k.err"
rck=$?
if [ $rck -eq 0 ] && [ $rcv -ne 0 ] && grep -q 'evaluation split' "$TMP/verr" &&
    py "$TMP/s4.log" <<'PY'; then
import json, sys
req = json.loads(open(sys.argv[1]).readline().split(" ", 4)[4])
s = req["messages"][0]["content"]
assert '"reasoning":"ST elevation with chest pain is a STEMI' in s, s
assert '"reasoning":"Droplet spread' in s, s
PY
    ok "check --strategy single --examples: the few-shot prompt shows the Reasoning examples --explain wrote; an evaluation split is refused"
else
    not_ok "single with explained examples" "rc=$rck" "$(tail -3 "$TMP/k.err")" "$(cat "$TMP/verr")"
fi
