#!/usr/bin/env bash
# Integration: `medtrust mediqa` on a slice of MEDEC through the role-aware
# stub: one official line per note in CSV order with --jobs; a kill -9 in
# the middle and --resume lose and redo no finished note; 30% injected
# failures and garbled replies still give every note a line, with failure
# and fallback counts that match what the stub injected; a CSV missing
# columns is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb mediqa
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"

slice() { csv_head "$MEDEC" "$1" "$2"; } # slice N OUT: MEDEC's first N notes
# valid_run CSV RUN: every note has one valid line, in CSV order.
valid_run() {
    py "$1" "$2" <<'PY'
import csv, re, sys
csv.field_size_limit(10**9)
ids = [r["Text ID"] for r in csv.DictReader(open(sys.argv[1], encoding="utf-8"))]
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
assert len(lines) == len(ids), (len(lines), len(ids))
for i, l in zip(ids, lines):
    assert re.match(r"^[a-z0-9-]+ [01] -?[0-9]+ .+$", l), l
    assert l.split(" ")[0] == i, (l, i)
    f, s = l.split(" ")[1:3]
    assert (f == "0") == (s == "-1") and (f == "1" or l.endswith(" NA"))
PY
}

slice 40 "$TMP/s40.csv"
stub_start fast
"$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy guards \
    --out "$TMP/run.txt" --jobs 8 --trace "$TMP/trace.jsonl" --no-progress \
    >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && valid_run "$TMP/s40.csv" "$TMP/run.txt" &&
    [ "$(wc -l <"$TMP/trace.jsonl")" -eq 40 ] &&
    grep -q '^ms-val-0 1 ' "$TMP/run.txt"; then
    ok "mediqa --jobs 8 writes one official line per note, in CSV order"
else
    not_ok "mediqa --jobs 8" "$(tail -3 "$TMP/err")" "$(head -3 "$TMP/run.txt")"
fi

# kill -9 mid-run, then --resume: finished notes are neither lost nor
# redone (the second stub sees only the unfinished notes' calls).
stub_start slow --delay 150
"$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy single \
    --out "$TMP/k.txt" --jobs 4 --no-progress >/dev/null 2>&1 &
pid=$!
for i in $(seq 100); do
    [ "$(wc -l 2>/dev/null <"$TMP/k.txt.journal" || echo 0)" -ge 10 ] && break
    sleep 0.1
done
kill -9 $pid
wait $pid 2>/dev/null
cp "$TMP/k.txt.journal" "$TMP/journal.before"
done_before=$(grep -c '"line"' "$TMP/journal.before")
stub_start resume
"$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy single \
    --out "$TMP/k.txt" --jobs 4 --resume --no-progress >/dev/null \
    2>"$TMP/err"
rc=$?
calls=$(wc -l <"$TMP/resume.log")
if [ $rc -eq 0 ] && [ ! -e "$TMP/k.txt.tmp" ] &&
    valid_run "$TMP/s40.csv" "$TMP/k.txt" &&
    [ "$done_before" -ge 10 ] && [ "$done_before" -lt 40 ] &&
    [ "$calls" -eq $((40 - done_before)) ] &&
    py "$TMP/journal.before" "$TMP/k.txt" <<'PY'; then
import json, sys
run = set(open(sys.argv[2], encoding="utf-8").read().splitlines())
for l in open(sys.argv[1], encoding="utf-8"):
    if l.endswith("\n"):
        assert json.loads(l)["line"] in run
PY
    ok "kill -9 then --resume: $done_before finished notes kept, only $calls redone"
else
    not_ok "kill -9 and --resume (rc $rc, before $done_before, calls $calls)" "$(tail -3 "$TMP/err")"
fi

# A rerun on the same --out without --resume would empty the journal and
# lose the 40 finished notes: refused, naming how many it holds, the
# journal untouched; --force starts over.
cp "$TMP/k.txt.journal" "$TMP/journal.full"
"$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy single \
    --out "$TMP/k.txt" --jobs 4 --no-progress >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && cmp -s "$TMP/k.txt.journal" "$TMP/journal.full" &&
    grep -q "k.txt.journal holds 40 finished notes of an earlier run (and 0 failed): --resume keeps them and checks the rest; --force starts over" "$TMP/err"; then
    ok "mediqa without --resume refuses to overwrite a journal of 40 notes, saying so"
else
    not_ok "mediqa journal overwrite refusal (rc $rc)" "$(tail -3 "$TMP/err")"
fi
stub_start force
"$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy single \
    --out "$TMP/k.txt" --jobs 4 --no-progress --force >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/force.log")" -eq 40 ] &&
    [ "$(grep -c '"line"' "$TMP/k.txt.journal")" -eq 40 ] &&
    valid_run "$TMP/s40.csv" "$TMP/k.txt"; then
    ok "mediqa --force starts over: all 40 notes checked again"
else
    not_ok "mediqa --force (rc $rc)" "$(tail -3 "$TMP/err")"
fi

# Fault injection: 30% of calls fail (HTTP 500) or come back garbled.
# Notes whose verdict fell back because calls failed are failed (exit 1);
# --fallback-on-failure still writes their lines.
for s in guards react-reflex single; do
    stub_start "fault-$s" --fault-rate 0.3 --seed 11
    nr=$([ "$s" = react-reflex ] && echo --no-retrieval) # no corpus here
    "$MT" mediqa --llm "$SPEC" --data "$TMP/s40.csv" --strategy "$s" $nr \
        --retries 0 --out "$TMP/f.txt" --jobs 8 --trace "$TMP/f.jsonl" --force \
        --no-progress --json --fallback-on-failure >"$TMP/f.json" 2>"$TMP/err"
    rc=$?
    if [ $rc -le 1 ] && valid_run "$TMP/s40.csv" "$TMP/f.txt" &&
        py "$TMP/f.json" "$TMP/fault-$s.log" "$TMP/f.jsonl" "$rc" <<'PY'; then
import json, sys
summ = json.load(open(sys.argv[1]))
assert int(sys.argv[4]) == (1 if summ["failed_ids"] else 0), summ
# the run record names a run without retrieval
assert summ["retrieval"] == ("none (--no-retrieval)"
                             if summ["strategy"] == "react-reflex"
                             else "not used"), summ
log = open(sys.argv[2]).read().split("\n")
n500 = sum(1 for l in log if l.startswith("500 "))
ngarb = sum(1 for l in log if l.startswith("GARBLED "))
assert n500 > 0 and ngarb > 0
assert summ["llm_calls"] == sum(1 for l in log if l), summ
assert summ["failed_calls"] == n500, (summ, n500)
assert summ["parse_failures"] == ngarb, (summ, ngarb)
# a role falls back exactly when its repeat failed too
fb = 0
for l in open(sys.argv[3]):
    for t in json.loads(l).get("trace", []):
        if t.get("step") == "call" and t["attempt"] == 2 and not t["ok"]:
            fb += 1
assert summ["fallbacks"] == fb, (summ["fallbacks"], fb)
PY
        ok "30% faults, $s: every note has a line (--fallback-on-failure); failures and fallbacks match the injected ones"
    else
        not_ok "fault injection $s (rc $rc)" "$(cat "$TMP/f.json")" "$(tail -3 "$TMP/err")"
    fi
done

# MedErrBench CN with its own Sentences field.
csv="$DATA/mederrbench/validation/reviewed_data_CN_validation.csv"
"$MT" mediqa --llm "$SPEC" --data "$csv" --strategy single --limit 20 \
    --out "$TMP/cn.txt" --jobs 4 --no-progress 2>"$TMP/err"
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/cn.txt")" -eq 20 ] &&
    grep -q '^cn-val-0 1 ' "$TMP/cn.txt"; then
    ok "mediqa reads MedErrBench CN with its Sentences field"
else
    not_ok "mediqa on CN" "$(tail -3 "$TMP/err")"
fi

# A CSV missing columns.
printf 'id,body\n1,hello\n' >"$TMP/bad.csv"
"$MT" mediqa --llm "$SPEC" --data "$TMP/bad.csv" --out "$TMP/bad.txt" \
    --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "Text ID" "$TMP/err" && [ ! -e "$TMP/bad.txt" ]; then
    ok "a CSV missing columns is refused, naming them"
else
    not_ok "CSV missing columns (rc $rc)" "$(cat "$TMP/err")"
fi
