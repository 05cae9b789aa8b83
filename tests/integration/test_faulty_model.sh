#!/usr/bin/env bash
# Integration (issue 29 §3): a reply the model botched is not an answer.
# Against a model that fails 30% of its requests (agent_stub --faults 0.3:
# HTTP 500s, hangs past the time-out, garbage and schema-violating JSON, a
# deterministic function of --seed and the request body), `mediqa` (each
# strategy), `ask --batch` and a server batch (POST /v1/batch) never yield
# a line that is not the model's own decided answer: every line they keep
# is the line the healthy model gives, a note or question without one is
# failed (journaled failed, named, exit 1, the server run `failed` with the
# reason), and a --resume against the healthy model completes every note,
# redoing only the failed ones. Some notes are correct (the model decides
# "no error" for them): those well-formed answers are kept. `check` prints
# the failure and exits 1 for every strategy (with --allow-fallbacks the
# fallback verdict, marked as no model answer, exit 0); a server check or
# ask whose replies were garbage ends failed with the reason (done, marked
# fallback, when the request allowed fallbacks); `sweep` marks a run
# with failed notes failed and `--replay` reruns those notes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb mediqa ask serve
unset MEDTRUST_LLM MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE MEDTRUST_NLI
unset MEDTRUST_LLM_SINGLE MEDTRUST_LLM_GUARD MEDTRUST_LLM_REACT
export MEDTRUST_LLM_TIMEOUT=20
OK_WORD=unremarkable # notes holding it are correct: "no error" is decided
FAULTS=(--faults 0.3 --seed 4 --no-error-when "$OK_WORD")
HEALTHY=(--no-error-when "$OK_WORD")

# 40 notes, every third one correct.
py "$TMP/notes.csv" "$OK_WORD" <<'PY'
import csv, sys
w = csv.writer(open(sys.argv[1], "w", encoding="utf-8", newline=""))
w.writerow(["Text ID", "Text"])
drugs = ["aspirin", "heparin", "insulin", "metformin", "amoxicillin"]
for i in range(40):
    exam = (sys.argv[2] if i % 3 == 0 else "notable for crackles at the bases")
    w.writerow(["fm-%d" % i,
                "Patient %d is a %d-year-old with cough for %d days. Vital signs "
                "are stable. The examination is %s. He was started on %s %d mg "
                "daily." % (i, 30 + i, 2 + i % 9, exam, drugs[i % 5],
                            10 * (i + 1))])
PY

# ---- mediqa: each strategy ----
# judge_run S REF FAULTY JOURNAL TRACE SUMMARY RC STUBLOG REFTRACE: every
# line kept is the healthy model's; the failed notes are exactly those
# without a line, journaled failed with the reason, named in the summary.
judge_run() {
    py "$@" <<'PY'
import json, sys
s, ref, got, jr, tr, summ, rc, log, reftr = sys.argv[1:10]
ref = dict(l.split(" ", 1) for l in open(ref).read().splitlines())
got = dict(l.split(" ", 1) for l in open(got).read().splitlines())
for i, l in got.items():
    assert ref[i] == l, (s, i, l, ref[i])
failed = sorted(set(ref) - set(got), key=lambda x: int(x[3:]))
summ = json.load(open(summ))
assert failed, "no note failed: the faults exercised nothing"
assert summ["failed_ids"] == failed, (summ["failed_ids"], failed)
assert int(rc) == 1, rc
j = [json.loads(l) for l in open(jr)]
assert sorted(x["id"] for x in j if "failed" in x) == sorted(failed)
assert all(x["line"] == "%s %s" % (x["id"], ref[x["id"]])
           for x in j if "failed" not in x)
trace = {t["id"]: t for t in map(json.loads, open(tr))}
why = [trace[i]["error"] for i in failed]
# the correct notes' decided "no error" is kept wherever it came through
kept_ok = [i for i in got if got[i] == "0 -1 NA"]
assert kept_ok, "no decided 'no error' was kept"
# the regression: a note whose fallback would read "no error" although the
# model, when it answered, found an error, because its replies were
# unusable, is failed, not written
botched = [i for i in failed if "no usable reply" in trace[i]["error"]
           and trace[i]["error_flag"] == 0 and not ref[i].startswith("0 ")]
kinds = set(l.split(" ")[0] for l in open(log) if l.strip())
reftr = {t["id"]: t for t in map(json.loads, open(reftr))}
calls = sum(reftr[i]["usage"]["llm_calls"] for i in failed)
print(len(failed), len(botched), ",".join(sorted(kinds)), calls)
PY
}

for s in single guards react-reflex; do
    nr=()
    # no corpus here; one round, so that a round the faults spoil is not
    # rescued by the next (which the test on five rounds would need
    # hundreds of notes to see fail)
    [ "$s" = react-reflex ] && nr=(--no-retrieval --rounds 1)
    stub_start "ref-$s" "${HEALTHY[@]}"
    "$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy "$s" \
        "${nr[@]}" --out "$TMP/ref-$s.txt" --trace "$TMP/ref-$s.jsonl" \
        --jobs 4 --no-progress 2>"$TMP/err"
    rc=$?
    nok=$(grep -c ' 0 -1 NA$' "$TMP/ref-$s.txt")
    if [ $rc -ne 0 ] || [ "$nok" -ne 14 ] ||
        [ "$(wc -l <"$TMP/ref-$s.txt")" -ne 40 ]; then
        not_ok "mediqa $s on the healthy model (rc $rc, $nok correct)" "$(tail -3 "$TMP/err")"
        continue
    fi
    stub_start "fault-$s" "${FAULTS[@]}"
    "$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy "$s" \
        "${nr[@]}" --retries 0 --timeout 3 --jobs 4 --out "$TMP/f-$s.txt" \
        --trace "$TMP/f-$s.jsonl" --json --no-progress >"$TMP/f-$s.json" \
        2>"$TMP/f-$s.err"
    rc=$?
    res=$(judge_run "$s" "$TMP/ref-$s.txt" "$TMP/f-$s.txt" \
        "$TMP/f-$s.txt.journal" "$TMP/f-$s.jsonl" "$TMP/f-$s.json" "$rc" \
        "$TMP/fault-$s.log" "$TMP/ref-$s.jsonl" 2>"$TMP/py.err")
    if [ -n "$res" ] && grep -q "notes\? failed (left out" "$TMP/f-$s.err"; then
        read -r nfail nbotched kinds calls <<<"$res"
        echo "$kinds" >>"$TMP/kinds"
        echo "$nbotched" >>"$TMP/botched"
        ok "mediqa $s, 30% faults ($kinds): every line kept is the model's own, $nfail failed notes journaled, named, exit 1 ($nbotched botched into 'no error')"
    else
        not_ok "mediqa $s with faults (rc $rc)" "$(tail -3 "$TMP/py.err")" "$(tail -2 "$TMP/f-$s.err")"
        continue
    fi
    # --fallback-on-failure writes the failed notes' fallback lines
    cp "$TMP/f-$s.txt.journal" "$TMP/j-$s.keep"
    stub_start "ok-$s" "${HEALTHY[@]}"
    "$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy "$s" \
        "${nr[@]}" --out "$TMP/f-$s.txt" --trace "$TMP/f-$s.jsonl" --resume \
        --jobs 4 --no-progress 2>"$TMP/err"
    rc=$?
    got=$(wc -l <"$TMP/ok-$s.log")
    if [ $rc -eq 0 ] && cmp -s "$TMP/f-$s.txt" "$TMP/ref-$s.txt" &&
        [ "$got" -eq "$calls" ]; then
        ok "mediqa $s --resume on the healthy model: all 40 notes, as the healthy run wrote them; only the $nfail failed ones checked again ($got calls)"
    else
        not_ok "mediqa $s --resume (rc $rc, $got calls, want $calls)" "$(tail -2 "$TMP/err")" "$(diff "$TMP/f-$s.txt" "$TMP/ref-$s.txt" | head -5)"
    fi
done
if py "$TMP/kinds" "$TMP/botched" <<'PY'; then
import sys
kinds = set(",".join(open(sys.argv[1]).read().split()).split(","))
assert {"500", "HANG", "GARBLED", "SCHEMA", "OK"} <= kinds, kinds
PY
    ok "the faults were HTTP 500s, hangs, garbage and schema-violating JSON ($(paste -sd+ "$TMP/botched") notes botched into a would-be 'no error')"
else
    not_ok "fault kinds" "$(cat "$TMP/kinds" "$TMP/botched" 2>/dev/null)"
fi

# ---- the regression itself, whatever the fault hashes pick ----
# Which notes the 30% faults botch depends on a hash of each request body,
# so a prompt edit moves them. Here every reply is unusable: each note whose
# reference has an error would have read "no error" from the fallback (the
# issue's "ms-test-15 0 -1 NA"); every one must be failed, none written.
stub_start garb-mediqa --garble single --no-error-when "$OK_WORD"
"$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy single \
    --retries 0 --jobs 4 --out "$TMP/g.txt" --trace "$TMP/g.jsonl" \
    --no-progress 2>"$TMP/g.err"
rc=$?
if [ $rc -eq 1 ] && [ ! -s "$TMP/g.txt" ] &&
    py "$TMP/g.jsonl" "$TMP/ref-single.txt" <<'PY'; then
import json, sys
tr = [json.loads(l) for l in open(sys.argv[1])]
ref = dict(l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines())
assert len(tr) == 40, len(tr)
assert all("no usable reply" in t["error"] for t in tr), tr[0]
botched = [t["id"] for t in tr
           if t["error_flag"] == 0 and not ref[t["id"]].startswith("0 ")]
assert len(botched) == 26, botched
PY
    ok "mediqa single, every reply unusable: the 26 notes with an error that the fallback would write as 'no error' are failed, no line written, exit 1"
else
    not_ok "mediqa single, every reply unusable (rc $rc)" "$(tail -3 "$TMP/g.err")" "$(head -c 300 "$TMP/g.txt")"
fi

# ---- mediqa --allow-fallbacks: the fallback lines asked for, done ----
"$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy single \
    --retries 0 --jobs 4 --out "$TMP/ga.txt" --json --allow-fallbacks \
    --no-progress >"$TMP/ga.json" 2>"$TMP/ga.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/ga.txt")" -eq 40 ] &&
    grep -q '40 checked, 0 failed, 40 fallback verdicts (allowed): no usable model reply)' "$TMP/ga.err" &&
    ! grep -q 'of them for a fallback' "$TMP/ga.err" &&
    py "$TMP/ga.json" "$TMP/ga.txt" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
assert s["failed"] == 0 and s["fallback_verdicts"] == 40, s
assert all(l.split(" ", 1)[1] == "0 -1 NA"
           for l in open(sys.argv[2]).read().splitlines())
PY
    ok "mediqa --allow-fallbacks, every reply unusable: the 40 fallback lines written as asked, counted (and summed up) as allowed fallback verdicts, none failed, exit 0"
else
    not_ok "mediqa --allow-fallbacks (rc $rc)" "$(tail -3 "$TMP/ga.err")" "$(head -c 300 "$TMP/ga.json")"
fi

# ---- mediqa --fallback-on-failure: written, still failed ----
stub_start fb "${FAULTS[@]}"
"$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy single \
    --retries 0 --timeout 3 --jobs 4 --out "$TMP/fb.txt" --json \
    --fallback-on-failure --no-progress >"$TMP/fb.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/fb.txt")" -eq 40 ] &&
    grep -q "fallback lines written" "$TMP/err" &&
    grep -Eq ' [1-9][0-9]* failed, [1-9][0-9]* of them for a fallback verdict' "$TMP/err" &&
    ! grep -q '(allowed)' "$TMP/err" &&
    py "$TMP/fb.json" "$TMP/fb.txt.journal" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
j = [json.loads(l) for l in open(sys.argv[2])]
assert s["failed"] > 0 and s["failed"] == len([x for x in j if "failed" in x])
assert s["fallback_verdicts"] > 0
PY
    ok "--fallback-on-failure writes the fallback lines but journals them failed, exit 1"
else
    not_ok "--fallback-on-failure (rc $rc)" "$(tail -2 "$TMP/err")"
fi

# ---- check: the failure is printed, never "no error found" ----
printf 'A 62-year-old man has chest pain. ECG shows ST elevation. He is sent home.\n' >"$TMP/note.txt"
for s in single guards react-reflex; do
    nr=()
    [ "$s" = react-reflex ] && nr=(--no-retrieval)
    case $s in
    single) g=single ;;
    guards) g=guard_detect ;;
    *) g=react ;;
    esac
    stub_start "chk-$s" --garble "$g"
    "$MT" check --llm "$SPEC" --strategy "$s" "${nr[@]}" --retries 0 \
        "$TMP/note.txt" >"$TMP/c.out" 2>"$TMP/c.err"
    rc=$?
    "$MT" check --llm "$SPEC" --strategy "$s" "${nr[@]}" --retries 0 --json \
        "$TMP/note.txt" >"$TMP/c.json" 2>/dev/null
    rcj=$?
    if [ $rc -eq 1 ] && [ $rcj -eq 1 ] && grep -q "^check failed" "$TMP/c.out" &&
        ! grep -q "no error found" "$TMP/c.out" &&
        grep -q "no usable reply" "$TMP/c.err" &&
        py "$TMP/c.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert list(r)[0] == "error" and "no usable reply" in r["error"], r
assert r["fallback"] is True and r["fallback_why"] == r["error"], r
PY
        ok "check $s, garbage replies: prints 'check failed' and why (--json: error, fallback), exit 1"
    else
        not_ok "check $s with garbage (rc $rc/$rcj)" "$(cat "$TMP/c.out")" "$(tail -2 "$TMP/c.err")"
    fi
    # --allow-fallbacks: the fallback verdict, marked as no model answer
    # with the reason, never "no error found"; exit 0 (asked for)
    "$MT" check --llm "$SPEC" --strategy "$s" "${nr[@]}" --retries 0 \
        --allow-fallbacks "$TMP/note.txt" >"$TMP/c.out" 2>"$TMP/c.err"
    rc=$?
    "$MT" check --llm "$SPEC" --strategy "$s" "${nr[@]}" --retries 0 --json \
        --allow-fallbacks "$TMP/note.txt" >"$TMP/c.json" 2>/dev/null
    rcj=$?
    if [ $rc -eq 0 ] && [ $rcj -eq 0 ] &&
        grep -q "^fallback: no model answer (allowed by --allow-fallbacks)" "$TMP/c.out" &&
        grep -q "the verdict is a fallback: the model gave no usable reply" "$TMP/c.out" &&
        grep -q "^fallback verdict: " "$TMP/c.out" &&
        ! grep -q "no error found\|check failed" "$TMP/c.out" &&
        py "$TMP/c.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert "error" not in r and r["fallback"] is True, r
assert "no usable reply" in r["fallback_why"], r
PY
        ok "check $s --allow-fallbacks, garbage replies: 'fallback: no model answer', why and the fallback verdict (--json: fallback, no error), exit 0"
    else
        not_ok "check $s --allow-fallbacks (rc $rc/$rcj)" "$(cat "$TMP/c.out")" "$(tail -2 "$TMP/c.err")" "$(head -c 300 "$TMP/c.json")"
    fi
    stub_start "chkok-$s" --no-error
    "$MT" check --llm "$SPEC" --strategy "$s" "${nr[@]}" "$TMP/note.txt" \
        >"$TMP/c.out" 2>"$TMP/c.err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^no error found" "$TMP/c.out"; then
        ok "check $s, a well-formed 'no error' reply: no error found, exit 0"
    else
        not_ok "check $s decided no error (rc $rc)" "$(cat "$TMP/c.out")" "$(tail -2 "$TMP/c.err")"
    fi
done

# ---- ask --batch ----
head -150 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/ac.jsonl"
"$MT" index --db "$TMP/adb" --input "$TMP/ac.jsonl" --no-progress >/dev/null 2>&1
py "$TMP/ac.jsonl" "$DATA/pubmedqa/queries-dev.jsonl" <<'PY' >"$TMP/q.jsonl"
import json, sys
ids = set(json.loads(l)["id"] for l in open(sys.argv[1]))
n = 0
for l in open(sys.argv[2]):  # questions whose document is in the corpus
    q = json.loads(l)
    if any(r in ids for r in q.get("relevant", [])) and n < 16:
        print(json.dumps({"id": q["id"], "query": q["query"]}))
        n += 1
PY
nq=$(wc -l <"$TMP/q.jsonl")
stub_start aref
"$MT" ask --db "$TMP/adb" --llm "$SPEC" --batch "$TMP/q.jsonl" \
    --out "$TMP/aref.jsonl" -J 4 --no-progress 2>"$TMP/err"
rc_ref=$?
stub_start afault --faults 0.3 --seed 4
"$MT" ask --db "$TMP/adb" --llm "$SPEC" --batch "$TMP/q.jsonl" \
    --out "$TMP/af.jsonl" -J 4 --retries 0 --timeout 3 --no-progress \
    2>"$TMP/af.err"
rc=$?
# same_answer REF GOT ALLOW_FAILED: each line of GOT is failed (an "error"
# line, allowed when ALLOW_FAILED) or gives the healthy answer, claims
# and verdicts; prints how many failed.
same_answer() {
    py "$@" <<'PY'
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
assert [r["id"] for r in ref] == [g["id"] for g in got]
nf = 0
for r, g in zip(ref, got):
    assert "error" not in r, r
    if "error" in g:
        assert sys.argv[3] == "1" and "claims" not in g and "answer" not in g, g
        nf += 1
        continue
    assert g["answer"] == r["answer"], (g["id"], g["answer"], r["answer"])
    assert [c["label"] for c in g["claims"]] == [c["label"] for c in r["claims"]]
    assert all(c["label"] != "UNVERIFIED" for c in g["claims"]), g
    for gc, rc in zip(g["claims"], r["claims"]):
        for gv, rv in zip(gc["verdicts"], rc["verdicts"]):
            assert gv["label"] in (rv["label"], "UNVERIFIED"), (gv, rv)
print(nf)
PY
}
nf=$(same_answer "$TMP/aref.jsonl" "$TMP/af.jsonl" 1 2>"$TMP/py.err")
if [ $rc_ref -eq 0 ] && [ $rc -eq 1 ] && [ "${nf:-0}" -gt 0 ] &&
    grep -q "failed (--resume asks them again" "$TMP/af.err" &&
    [ "$(grep -c '"failed"' "$TMP/af.jsonl.journal")" -eq "$nf" ]; then
    ok "ask --batch, 30% faults: $nf of $nq questions failed (journaled, named, exit 1), every other line the healthy model's answer and verdicts"
else
    not_ok "ask --batch with faults (rc $rc_ref/$rc, failed ${nf:-?})" "$(tail -3 "$TMP/py.err")" "$(tail -2 "$TMP/af.err")"
fi
stub_start aok
"$MT" ask --db "$TMP/adb" --llm "$SPEC" --batch "$TMP/q.jsonl" \
    --out "$TMP/af.jsonl" -J 4 --resume --no-progress 2>"$TMP/err"
rc=$?
calls=$(grep -c 'qa_answer' "$TMP/aok.log")
nf2=$(same_answer "$TMP/aref.jsonl" "$TMP/af.jsonl" 0 2>"$TMP/py.err")
if [ $rc -eq 0 ] && [ "$nf2" = 0 ] && [ "$calls" -eq "${nf:-0}" ]; then
    ok "ask --batch --resume on the healthy model: every question answered as the healthy run, only the $calls failed ones asked again"
else
    not_ok "ask --batch --resume (rc $rc, $calls answers asked)" "$(tail -3 "$TMP/py.err")" "$(tail -2 "$TMP/err")"
fi

# ---- a server batch (POST /v1/batch) ----
. "$(dirname "$0")/api_lib.sh"
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
csv_head "$MEDEC" 16 "$TMP/s16.csv"
stub_start sref
"$MT" mediqa --llm "$SPEC" --data "$TMP/s16.csv" --strategy single \
    --out "$TMP/sref.txt" --no-progress 2>/dev/null
py "$TMP/s16.csv" <<'PY' >"$TMP/sbody"
import json, sys
print(json.dumps({"data": open(sys.argv[1], encoding="utf-8").read(),
                  "strategy": "single", "name": "faulty"}))
PY
export MEDTRUST_LLM_TIMEOUT=2 # the hangs end in the server's time-out
stub_start sfault "${FAULTS[@]}"
serve_start sfault --llm "$SPEC" --data-dir "$TMP/slogs"
code "${A[@]}" "$U/v1/batch" -d @"$TMP/sbody" >/dev/null
RUN=$(py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])')
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/s1.sse"
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/s1.run"
if py "$TMP/s1.run" "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/sref.txt" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
sub = open(sys.argv[2]).read().splitlines()
ref = open(sys.argv[3]).read().splitlines()
assert r["status"] == "failed", r
assert "notes failed" in r["error"] and "no verdict" in r["error"], r["error"]
assert 0 < len(sub) < 16, len(sub)
assert all(l in ref for l in sub), [l for l in sub if l not in ref]
import re
n = int(re.match(r"(\d+) of 16 notes failed", r["error"]).group(1))
assert n == 16 - len(sub), (n, len(sub))
PY
    ok "server batch, 30% faults: the run is failed with the reason and the notes; the submission holds only the model's own lines"
else
    not_ok "server batch with faults" "$(head -c 600 "$TMP/s1.run")"
fi
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
SERVE_PIDS=()
export MEDTRUST_LLM_TIMEOUT=20
stub_start sok
serve_start sok --llm "$SPEC" --data-dir "$TMP/slogs2"
code "${A[@]}" -X POST "$U/v1/runs/$RUN/resume" >"$TMP/scode"
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/s2.sse"
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/s2.run"
if [ "$(cat "$TMP/scode")" = 202 ] &&
    py "$TMP/s2.run" "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/sref.txt" \
        "$(wc -l <"$TMP/sok.log")" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "done", r
b = r["result"]["batch"]
assert b["failed"] == 0 and b["notes"] == 16, b
assert open(sys.argv[2]).read() == open(sys.argv[3]).read()
assert int(sys.argv[4]) == 16 - b["resumed"], (sys.argv[4], b)
PY
    ok "the server batch resumed on the healthy model: done, the healthy submission, only the failed notes checked again"
else
    not_ok "server batch resume" "$(cat "$TMP/scode")" "$(head -c 600 "$TMP/s2.run")"
fi

# ---- server checks and asks: a botched run is failed, with the reason ----
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
SERVE_PIDS=()
stub_start garbled --garble single
serve_start garbled --llm "$SPEC" --data-dir "$TMP/slogs3"
# run_of BODY-FILE: the finished run's record, in $TMP/run.json
run_of() {
    local run
    run=$(py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])')
    curl -sN "${A[@]}" "$U/v1/runs/$run/events" >"$TMP/run.sse"
    curl -s "${A[@]}" "$U/v1/runs/$run" >"$TMP/run.json"
}
code "${A[@]}" "$U/v1/check" -d "$(py "$TMP/note.txt" <<<'import json,sys; print(json.dumps({"note": open(sys.argv[1]).read(), "strategy": "single"}))')" >/dev/null
run_of
if py "$TMP/run.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed", r
assert "the verdict is a fallback" in r["error"] and "no usable reply" in r["error"], r
assert not r.get("result"), r
PY
    ok "POST /v1/check with garbage replies: the run is failed, with the reason"
else
    not_ok "server check with garbage" "$(head -c 500 "$TMP/run.json")"
fi
# "allow_fallbacks": 1: the run is done, its result the fallback verdict
# marked as such with the reason; 2 is out of its 0..1 range (400)
code "${A[@]}" "$U/v1/check" -d "$(py "$TMP/note.txt" <<<'import json,sys; print(json.dumps({"note": open(sys.argv[1]).read(), "strategy": "single", "allow_fallbacks": 1}))')" >/dev/null
run_of
bad=$(code "${A[@]}" "$U/v1/check" -d '{"note":"He is sent home.","allow_fallbacks":2}')
cp "$TMP/body" "$TMP/bad.json"
if [ "$bad" = 400 ] && grep -q '"allow_fallbacks\\" must be an integer in 0..1' "$TMP/bad.json" &&
    py "$TMP/run.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "done" and not r.get("error"), r
res = r["result"]
assert res["fallback"] is True and "no usable reply" in res["fallback_why"], res
PY
    ok "POST /v1/check with \"allow_fallbacks\": 1: done, the result marked fallback with the reason; 2 is 400"
else
    not_ok "server check allowing fallbacks" "$bad $(cat "$TMP/bad.json")" "$(head -c 500 "$TMP/run.json")"
fi
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
SERVE_PIDS=()
stub_start judge --garble qa_judge
serve_start judge --llm "$SPEC" --data-dir "$TMP/slogs4"
code "${A[@]}" "$U/v1/ask" -d '{"question":"Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?"}' >/dev/null
run_of
if py "$TMP/run.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed", r
assert "never verified" in r["error"] and "UNVERIFIED" in r["error"], r
assert not r.get("result"), r
PY
    ok "POST /v1/ask whose judge answers garbage: the run is failed, claims never verified"
else
    not_ok "server ask with a garbled judge" "$(head -c 500 "$TMP/run.json")"
fi

# ---- sweep: a run with failed notes is failed; --replay reruns them ----
stub_start sweep "${FAULTS[@]}"
"$MT" sweep --data "$MEDEC" --sample 12 --seed 7 --runs 1 \
    --grid eval_avg=3.8 --strategy react-reflex --no-retrieval --rounds 2 \
    --retries 0 --timeout 3 --llm "$SPEC" --fallback-on-failure \
    --no-progress --out "$TMP/sw" >/dev/null 2>"$TMP/sw.err"
rc=$?
"$MT" sweep --replay "$TMP/sw" --out "$TMP/sw2" --grid eval_avg=3.8,3.0 \
    --no-progress >/dev/null 2>"$TMP/sw2.err"
if [ $rc -eq 1 ] && grep -q "^failed" "$TMP/sw/cell-001/run-1/done" &&
    py "$TMP/sw" "$TMP/sw2" <<'PY'; then
import csv, glob, json, sys
a, b = sys.argv[1:]
tr = [json.loads(l) for l in open(a + "/cell-001/run-1/trace.jsonl")]
failed = sorted(t["id"] for t in tr if "error" in t)
assert failed, "no note failed"
sub = [l.split(" ")[0] for l in open(a + "/cell-001/run-1/submission.txt")]
assert set(failed) <= set(sub)  # --fallback-on-failure wrote their lines
cells = sorted(glob.glob(b + "/cell-*/run-1"))
assert len(cells) == 2, cells
for d in cells:
    rp = json.load(open(d + "/replay.json"))
    rerun = sorted(r["Text ID"] for r in csv.DictReader(open(d + "/rerun.csv")))
    # a fallback line is no answer to replay: the failed notes are rerun
    assert set(failed) <= set(rerun), (failed, rerun)
    assert rp["rerun"] == len(rerun) and rp["replayed"] + rp["rerun"] == 12, rp
PY
    ok "sweep: a run whose notes failed is marked failed (exit 1), and --replay reruns the failed notes instead of replaying their fallback lines"
else
    not_ok "sweep with faults (rc $rc)" "$(tail -2 "$TMP/sw.err")" "$(tail -2 "$TMP/sw2.err")"
fi
