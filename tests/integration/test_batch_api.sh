#!/usr/bin/env bash
# Integration: POST /v1/batch on `medtrust serve --llm` (the role-aware
# agent stub): a slice of MEDEC is checked note by note with progress
# events and scored as `mediqa` then `score --json` score it (same
# submission, same numbers), with BLEURT scores when uploaded and the HTML
# report at /v1/runs/ID/report; a cancelled batch resumes without redoing
# a finished note (the stub sees only the rest); bad uploads are 400
# naming what is wrong, a done batch does not resume (409).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_SINGLE
. "$(dirname "$0")/api_lib.sh"
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"

csv_head "$MEDEC" 6 "$TMP/s6.csv"
# body CSV [EXTRA-JSON-MEMBERS]: a batch request with the CSV's text.
body() {
    local extra='{}'
    [ -n "${2:-}" ] && extra=$2
    py "$1" "$extra" <<'PY'
import json, sys
b = {"data": open(sys.argv[1], encoding="utf-8").read(), "strategy": "single",
     "name": "stub-single"}
b.update(json.loads(sys.argv[2]))
print(json.dumps(b))
PY
}
run_id() { py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])'; }
events() { # events RUN NAME: the run's event stream into NAME.sse
    curl -sN "${A[@]}" "$U/v1/runs/$1/events" >"$TMP/$2.sse"
}

stub_start main --delay 300
serve_start main --llm "$SPEC" --data-dir "$TMP/logs"

# ==== Bad uploads ====
expect "a batch without data is 400" 400 "${A[@]}" "$U/v1/batch" -d '{}'
printf 'id,text\n1,x\n' >"$TMP/bad.csv"
expect "a CSV without MEDEC columns is 400" 400 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/bad.csv")"
grep -q 'Text ID' "$TMP/body" && ok "... saying which columns" ||
    not_ok "bad CSV message" "$(cat "$TMP/body")"
printf 'Text ID,Text,Error Flag\n1,x,0\n' >"$TMP/part.csv"
expect "a CSV with some gold columns but not all is 400" 400 "${A[@]}" \
    "$U/v1/batch" -d "$(body "$TMP/part.csv")"
grep -q 'missing column' "$TMP/body" && ok "... naming the missing ones" ||
    not_ok "partly labeled CSV message" "$(cat "$TMP/body")"
expect "an unknown strategy is 400" 400 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/s6.csv" '{"strategy":"nope"}')"
expect "a setting out of range is 400" 400 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/s6.csv" '{"max_rounds":0}')"
printf 'ms-val-0 not-a-number\n' >"$TMP/bad.bleurt"
expect "a BLEURT file that does not parse is 400" 400 "${A[@]}" \
    "$U/v1/batch" -d "$(body "$TMP/s6.csv" \
    "{\"bleurt\":$(py "$TMP/bad.bleurt" <<<'import json,sys; print(json.dumps(open(sys.argv[1]).read()))')}")"
expect "a BERTScore file that does not parse is 400" 400 "${A[@]}" \
    "$U/v1/batch" -d "$(body "$TMP/s6.csv" \
    "{\"bertscore\":$(py "$TMP/bad.bleurt" <<<'import json,sys; print(json.dumps(open(sys.argv[1]).read()))')}")"
expect "a BERTScore member that is not text is 400" 400 "${A[@]}" \
    "$U/v1/batch" -d "$(body "$TMP/s6.csv" '{"bertscore":3}')"
expect "a batch needs a session" 401 "$U/v1/batch" -d "$(body "$TMP/s6.csv")"

# ==== A batch, as mediqa + score ====
py "$TMP/s6.csv" "$TMP/good.bleurt" "$TMP/good.bert" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
with open(sys.argv[2], "w") as f, open(sys.argv[3], "w") as g:
    for i, r in enumerate(rows):
        f.write("%s %.2f\n" % (r["Text ID"], 0.1 * (i + 1)))
        g.write("%s\t%.2f\n" % (r["Text ID"], 0.9 - 0.1 * i))
PY
BL=$(py "$TMP/good.bleurt" <<<'import json,sys; print(json.dumps(open(sys.argv[1]).read()))')
BS=$(py "$TMP/good.bert" <<<'import json,sys; print(json.dumps(open(sys.argv[1]).read()))')
expect "a batch is queued (202)" 202 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/s6.csv" "{\"bleurt\":$BL,\"bertscore\":$BS}")"
RUN=$(run_id)
events "$RUN" one
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/one.run"
"$MT" mediqa --llm "$SPEC" --data "$TMP/s6.csv" --strategy single \
    --out "$TMP/cli.txt" --no-progress >/dev/null 2>&1
"$MT" score --ref "$TMP/s6.csv" --pred "$TMP/cli.txt" \
    --bleurt-scores "$TMP/good.bleurt" --bertscore-scores "$TMP/good.bert" \
    --json >"$TMP/cli.json" 2>/dev/null
if py "$TMP/one.sse" "$TMP/one.run" "$TMP/cli.json" \
    "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/cli.txt" <<'PY'; then
import json, sys
events = []
for block in open(sys.argv[1]).read().split("\n\n"):
    lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
    if "event" in lines:
        events.append((lines["event"], json.loads(lines["data"])))
prog = [d for e, d in events if e == "progress"]
assert [p["done"] for p in prog] == list(range(7)), prog
assert all(p["total"] == 6 and p["failed"] == 0 for p in prog), prog
assert prog[-1]["eta_s"] == 0 and prog[3]["eta_s"] > 0, prog
assert events[-1][0] == "done", events[-1]
run = json.load(open(sys.argv[2]))
assert run["status"] == "done" and run["kind"] == "batch", run
api = run["result"]
cli = json.load(open(sys.argv[3]))
cli = cli[0] if isinstance(cli, list) else cli
assert open(sys.argv[4]).read() == open(sys.argv[5]).read()
assert api["batch"] == {"strategy": "single", "notes": 6, "failed": 0,
                        "resumed": 0, "labeled": True}, api["batch"]
for k in ("error_flag_accuracy", "error_sentence_accuracy", "composite",
          "breakdown", "metrics_used"):
    assert api[k] == cli[k], (k, api[k], cli[k])
assert "bleurt" in api["metrics_used"], api["metrics_used"]
assert "bertscore" in api["metrics_used"], api["metrics_used"]
assert api["bertscore_model"] == cli["bertscore_model"] == "per-pair scores file"
PY
    ok "a batch (BLEURT and BERTScore files) streams progress and scores as mediqa + score --json do"
else not_ok "batch run" "$(head -c 600 "$TMP/one.run")"; fi
expect "the batch has its HTML report" 200 "${A[@]}" \
    "$U/v1/runs/$RUN/report"
grep -q '<svg' "$TMP/body" && ok "... with charts" ||
    not_ok "report charts" "$(head -c 200 "$TMP/body")"
expect "the batch's submission downloads" 200 "${A[@]}" \
    "$U/v1/runs/$RUN/submission"
cmp -s "$TMP/body" "$TMP/db/batches/run-$RUN/submission.txt" &&
    ok "... as the submission file the run wrote" ||
    not_ok "submission download" "$(head -c 200 "$TMP/body")"
expect "the batch's traces download" 200 "${A[@]}" "$U/v1/runs/$RUN/traces"
[ "$(python3 -c 'import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["trace"]))' "$TMP/body")" = 6 ] &&
    ok "... a JSON line with its trajectory for each of the 6 notes" ||
    not_ok "traces download" "$(head -c 200 "$TMP/body")"
expect "a run that is not a batch has no submission (404)" 404 "${A[@]}" \
    "$U/v1/runs/999999/submission"
expect "a done batch does not resume (409)" 409 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/resume"

# ==== Cancel, then resume: no finished note redone ====
# A slower stub (1 s a call) leaves seconds to cancel in after note 2.
stub_start slow --delay 1000
serve_start slow --llm "$SPEC" --data-dir "$TMP/logs2"
expect "a batch to cancel is queued" 202 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/s6.csv")"
RUN=$(run_id)
events "$RUN" cancel &
spid=$!
for _ in $(seq 200); do
    grep -q '"done":2' "$TMP/cancel.sse" 2>/dev/null && break
    sleep 0.1
done
expect "cancel the batch (202)" 202 "${A[@]}" -X POST "$U/v1/runs/$RUN/cancel"
wait $spid
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/cancel.run"
done_before=$(wc -l <"$TMP/db/batches/run-$RUN/journal.jsonl")
calls_before=$(wc -l <"$TMP/slow.log")
expect "resume the cancelled batch (202)" 202 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/resume"
events "$RUN" resume
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/resume.run"
calls=$(($(wc -l <"$TMP/slow.log") - calls_before))
if py "$TMP/cancel.run" "$TMP/resume.run" "$done_before" "$calls" \
    "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/cli.txt" <<'PY'; then
import json, sys
c, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
before, calls = int(sys.argv[3]), int(sys.argv[4])
assert c["status"] == "failed" and "cancelled after" in c["error"], c
assert 2 <= before < 6, before
assert r["status"] == "done", r
assert r["result"]["batch"]["resumed"] == before, r["result"]["batch"]
assert calls == 6 - before, (calls, before)
assert open(sys.argv[5]).read() == open(sys.argv[6]).read()
PY
    ok "a cancelled batch resumes: $done_before notes kept, only the rest checked"
else not_ok "cancel and resume" "$(head -c 300 "$TMP/cancel.run")" \
    "$(head -c 300 "$TMP/resume.run") before=$done_before calls=$calls"; fi
expect "resuming a run that is not a batch is 404 or 409" 404 "${A[@]}" \
    -X POST "$U/v1/runs/999999/resume"

# ==== "model": a batch on a --llm-choice, kept across a resume ====
# The server's own --llm is a dead port; the batch names model alt (the
# slow stub), is cancelled after two notes and resumed: every note is
# checked on alt (none fails), as mediqa on the stub writes them.
serve_start pick --llm "openai:http://127.0.0.1:9/v1#none" \
    --llm-choice "alt=$SPEC" --data-dir "$TMP/logs3"
expect "a batch on a model the server lacks is 400" 400 "${A[@]}" \
    "$U/v1/batch" -d "$(body "$TMP/s6.csv" '{"model":"nope"}')"
expect "a batch on model alt is queued" 202 "${A[@]}" "$U/v1/batch" \
    -d "$(body "$TMP/s6.csv" '{"model":"alt"}')"
RUN=$(run_id)
events "$RUN" pick &
spid=$!
for _ in $(seq 200); do
    grep -q '"done":2' "$TMP/pick.sse" 2>/dev/null && break
    sleep 0.1
done
expect "cancel the batch on model alt (202)" 202 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/cancel"
wait $spid
expect "resume it (202)" 202 "${A[@]}" -X POST "$U/v1/runs/$RUN/resume"
events "$RUN" pick2
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/pick.run"
if py "$TMP/pick.run" "$TMP/db/batches/run-$RUN/params.json" \
    "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/cli.txt" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "done", r
b = r["result"]["batch"]
assert b["failed"] == 0 and b["resumed"] >= 2 and b["notes"] == 6, b
assert json.load(open(sys.argv[2]))["model"] == "alt"
assert open(sys.argv[3]).read() == open(sys.argv[4]).read()
PY
    ok "a batch runs on the model it names, and resumes on it"
else not_ok "batch model" "$(head -c 400 "$TMP/pick.run")"; fi
