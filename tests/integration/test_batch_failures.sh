#!/usr/bin/env bash
# Integration (issue 16, items 9 and 10): a batch run never turns a failed
# model call into an answer. With the model unreachable, `mediqa` journals
# every note as failed, leaves it out of the submission (unless
# --fallback-on-failure), names it and exits 1; --resume checks it again.
# The same for `ask --batch` and for a server check job. A second mediqa
# on the same --out is refused while the first runs (the journal is
# locked), and an --out that cannot be opened exits 1 with a message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb mediqa
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE MEDTRUST_NLI
DEAD="openai:http://127.0.0.1:9#none" # nothing listens on the discard port
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
csv_head "$MEDEC" 5 "$TMP/s5.csv"
IDS="ms-val-0 ms-val-1 ms-val-2 ms-val-3 ms-val-4"

# ---- mediqa with a dead model: every note failed, none written ----
for s in single guards react-reflex; do
    extra=()
    [ "$s" = react-reflex ] && extra=(--no-retrieval)
    "$MT" mediqa --llm "$DEAD" --retries 0 --data "$TMP/s5.csv" \
        --strategy "$s" "${extra[@]}" --out "$TMP/d.txt" --no-progress --json \
        >"$TMP/d.json" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && [ -f "$TMP/d.txt" ] && [ ! -s "$TMP/d.txt" ] &&
        grep -q "5 notes failed.*$IDS" "$TMP/err" &&
        py "$TMP/d.json" "$TMP/d.txt.journal" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
assert s["failed"] == 5 and s["failed_ids"] == ["ms-val-%d" % i for i in range(5)], s
j = [json.loads(l) for l in open(sys.argv[2])]
assert len(j) == 5 and all("model call" in r["failed"] for r in j), j
PY
        ok "mediqa $s, dead model: 5 notes failed, named, none written, exit 1"
    else
        not_ok "mediqa $s dead model (rc $rc)" "$(tail -3 "$TMP/err")" "$(head -2 "$TMP/d.txt")"
    fi
done
"$MT" mediqa --llm "$DEAD" --retries 0 --data "$TMP/s5.csv" --strategy single \
    --out "$TMP/fb.txt" --no-progress --fallback-on-failure 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c ' 0 -1 NA$' "$TMP/fb.txt")" -eq 5 ] &&
    grep -q "fallback lines written" "$TMP/err"; then
    ok "--fallback-on-failure writes the failed notes' fallback lines, still exit 1"
else
    not_ok "--fallback-on-failure (rc $rc)" "$(tail -2 "$TMP/err")"
fi

# ---- --resume checks the failed notes again ----
stub_start good
"$MT" mediqa --llm "$SPEC" --data "$TMP/s5.csv" --strategy single \
    --out "$TMP/d.txt" --resume --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/d.txt")" -eq 5 ] &&
    [ "$(wc -l <"$TMP/good.log")" -eq 5 ]; then
    ok "--resume checks every failed note again (5 calls) and exits 0"
else
    not_ok "--resume after failures (rc $rc)" "$(tail -2 "$TMP/err")" "$(wc -l <"$TMP/good.log")"
fi

# ---- 30% faults: a note is failed exactly when its trace says so ----
stub_start fault --fault-rate 0.3 --seed 11
"$MT" mediqa --llm "$SPEC" --data "$TMP/s5.csv" --strategy guards --retries 0 \
    --out "$TMP/f.txt" --trace "$TMP/f.jsonl" --no-progress --json \
    >"$TMP/f.json" 2>/dev/null
rc=$?
if py "$TMP/f.json" "$TMP/f.jsonl" "$TMP/f.txt" "$rc" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
tr = [json.loads(l) for l in open(sys.argv[2])]
run = [l.split(" ")[0] for l in open(sys.argv[3])]
bad = sorted(t["id"] for t in tr if "error" in t)
assert s["failed_calls"] > 0 and sorted(s["failed_ids"]) == bad, (s, bad)
assert int(sys.argv[4]) == (1 if bad else 0)
assert sorted(run + bad) == sorted(t["id"] for t in tr)
for t in tr:
    if "error" in t:  # a failed note had a failed model call
        assert t["usage"]["failed_calls"] > 0, t
PY
    ok "30% faults: failed notes are those whose model calls failed, left out"
else
    not_ok "30% faults (rc $rc)" "$(head -c 300 "$TMP/f.json")"
fi

# ---- refusals: a locked journal, an --out that cannot be opened ----
stub_start slow --delay 400
"$MT" mediqa --llm "$SPEC" --data "$TMP/s5.csv" --strategy single \
    --out "$TMP/l.txt" --jobs 1 --no-progress >/dev/null 2>"$TMP/l1.err" &
pid=$!
for _ in $(seq 100); do [ -s "$TMP/l.txt.journal" ] && break; sleep 0.05; done
"$MT" mediqa --llm "$SPEC" --data "$TMP/s5.csv" --strategy single \
    --out "$TMP/l.txt" --resume --no-progress >/dev/null 2>"$TMP/l2.err"
rc2=$?
wait $pid
rc1=$?
if [ $rc2 -eq 1 ] && grep -q "another run is writing" "$TMP/l2.err" &&
    [ $rc1 -eq 0 ] && [ "$(wc -l <"$TMP/l.txt.journal")" -eq 5 ] &&
    [ "$(wc -l <"$TMP/l.txt")" -eq 5 ]; then
    ok "a second mediqa on the same --out is refused; the first finishes whole"
else
    not_ok "journal lock (rc1 $rc1 rc2 $rc2)" "$(cat "$TMP/l2.err")"
fi
"$MT" mediqa --llm "$DEAD" --data "$TMP/s5.csv" --strategy single \
    --out /nonexistent/x.txt \
    --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "/nonexistent/x.txt" "$TMP/err"; then
    ok "mediqa --out in a missing folder exits 1 with a message, no signal"
else
    not_ok "--out /nonexistent (rc $rc)" "$(cat "$TMP/err")"
fi

# ---- ask --batch ----
head -80 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/ac.jsonl"
"$MT" index --db "$TMP/adb" --input "$TMP/ac.jsonl" --no-progress >/dev/null 2>&1
head -3 "$DATA/pubmedqa/queries-dev.jsonl" >"$TMP/q3.jsonl"
"$MT" ask --db "$TMP/adb" --llm "$DEAD" --retries 0 --batch "$TMP/q3.jsonl" \
    --out "$TMP/a.jsonl" --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "ask: failed" "$TMP/err" &&
    py "$TMP/a.jsonl" "$TMP/a.jsonl.journal" <<'PY'; then
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
assert len(out) == 3 and all("model" in o["error"] for o in out), out
assert "answer" not in out[0], out[0]
j = [json.loads(l) for l in open(sys.argv[2])]
assert len(j) == 3 and all(r.get("failed") for r in j), j
PY
    ok "ask --batch, dead model: each question failed with the reason, exit 1"
else
    not_ok "ask --batch dead model (rc $rc)" "$(tail -2 "$TMP/err")" "$(head -c 300 "$TMP/a.jsonl")"
fi
"$MT" ask --db "$TMP/adb" --llm "$SPEC" --batch "$TMP/q3.jsonl" \
    --out "$TMP/a.jsonl" --resume --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && py "$TMP/a.jsonl" <<'PY'; then
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
assert len(out) == 3 and all(o["answer"] and "error" not in o for o in out)
PY
    ok "ask --batch --resume asks the failed questions again"
else
    not_ok "ask --batch --resume (rc $rc)" "$(tail -2 "$TMP/err")"
fi

# ---- a server check job whose model calls fail is failed ----
if "$MT" serve --help >/dev/null 2>&1; then
    . "$(dirname "$0")/api_lib.sh"
    # (no retries: each call to the dead port would otherwise back off
    # 0.5+1+2+4 s before it fails, a minute for the batch's five notes)
    MEDTRUST_LLM_RETRIES=0 serve_start dead --llm "$DEAD"
    code "${A[@]}" "$U/v1/check" \
        -d '{"note":"A man has chest pain. He is sent home.","strategy":"single"}' >/dev/null
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/run.json"
    if py "$TMP/run.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and "model call" in r["error"], r
PY
        ok "a server check whose model calls failed is 'failed', with the reason"
    else
        not_ok "server job with a dead model" "$(head -c 300 "$TMP/run.json")"
    fi
    # A browser batch (POST /v1/batch) whose notes' calls fail is failed too.
    py "$TMP/s5.csv" >"$TMP/batch.json" <<'PY'
import json, sys
print(json.dumps({"data": open(sys.argv[1], encoding="utf-8").read(),
                  "strategy": "single", "name": "dead"}))
PY
    code "${A[@]}" "$U/v1/batch" -d @"$TMP/batch.json" >/dev/null
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/brun.json"
    if py "$TMP/brun.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and "5 of 5 notes failed" in r["error"], r
PY
        ok "a browser batch whose model calls failed is 'failed', naming how many notes"
    else
        not_ok "batch with a dead model" "$(head -c 300 "$TMP/brun.json")"
    fi
fi
