#!/usr/bin/env bash
# Integration (issue 19): with `serve --state postgresql://...` a server's
# checks and asks are rows of the shared job queue. A check submitted on A
# and running there when A is SIGKILLed is claimed by B once its lease has
# run out; a client streaming it on B sees the whole run (A's steps, then
# B's attempt, then "done"), and the run ends done with a result. A
# `medtrust worker` (mediqa jobs) leaves the servers' rows alone. An ask's
# streamed tokens reach the state coalesced (fewer rows, the same text),
# and a server with --event-retention prunes a finished run's event rows
# while the run keeps its result. SIGTERM hands a running job back. A
# server with --llm-jobs 0 runs none and needs no --llm; `worker
# --serve-jobs` runs them, a browser batch too (on its own copy of the
# store).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve worker
unset MEDTRUST_LLM MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL MEDTRUST_LLM_REFLECT \
    MEDTRUST_LLM_PARSER MEDTRUST_LLM_GUARD MEDTRUST_LLM_SINGLE MEDTRUST_STATE \
    MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
export MEDTRUST_LLM_TIMEOUT=20
. "$(dirname "$0")/api_lib.sh"
. "$(dirname "$0")/pg_lib.sh"
pg_start
echo alice-password | "$MT" user add --state "$PG_URL" alice 2>/dev/null

# sse_events.py: events(FILE), the (type, data) pairs of an SSE capture
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
run_id() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body"
}
wait_for() { # wait_for FILE PATTERN: up to 60 s
    for _ in $(seq 600); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ==== A dies mid-check; B finishes it ====
stub_start slow --delay 2500
serve_start a --llm "$SPEC" --state "$PG_URL" --rate-limit 0 --job-lease 2
UA=$U
AA=("${A[@]}")
PID_A=${SERVE_PIDS[0]}
printf 'A 62-year-old man has crushing chest pain.\nECG shows ST elevation in II, III and aVF.\nHe is given aspirin and sent home.\n' >"$TMP/note.txt"
REQ=$(python3 -c 'import json,sys; print(json.dumps({"note": open(sys.argv[1]).read(), "strategy": "react-reflex"}))' "$TMP/note.txt")
expect "a check submitted on A is queued" 202 "${AA[@]}" "$UA/v1/check" -d "$REQ"
RUN=$(run_id)
timeout 120 curl -sN "${AA[@]}" "$UA/v1/runs/$RUN/events" >"$TMP/a.sse" &
SSE_A=$!
wait_for "$TMP/a.sse" '^event: step' &&
    ok "A (the only server) claims the row and streams its first step" ||
    not_ok "first step on A" "$(head -c 300 "$TMP/a.sse")" "$(tail -3 "$TMP/a.err")"
serve_start b --llm "$SPEC" --state "$PG_URL" --rate-limit 0 --job-lease 2
UB=$U
timeout 120 curl -sN "${AA[@]}" "$UB/v1/runs/$RUN/events" >"$TMP/b.sse" &
SSE_B=$!
wait_for "$TMP/b.sse" '^event: step'
kill -9 "$PID_A"
wait "$PID_A" 2>/dev/null
SERVE_PIDS=("${SERVE_PIDS[@]:1}")
wait "$SSE_A" 2>/dev/null
ok "A is SIGKILLed in the middle of the check"
wait "$SSE_B"
cat >"$TMP/took.py" <<'PY'
import sys
from sse_events import events
ev = events(sys.argv[1])
kinds = [k for k, _ in ev]
runs = [d for k, d in ev if k == "status" and d.get("status") == "running"]
assert len(runs) == 2, runs
assert [r["attempt"] for r in runs] == [1, 2], runs
assert runs[0]["node"] != runs[1]["node"], runs
first, second = kinds.index("status"), len(kinds) - 1 - kinds[::-1].index("status")
assert "step" in kinds[first:second], kinds       # A's steps before it died
assert kinds[second:].count("step") >= 2, kinds   # B's attempt, whole
assert kinds[-1] == "done" and ev[-1][1]["status"] == "done", ev[-1]
assert kinds.count("done") == 1, kinds
print(runs[0]["node"], runs[1]["node"], len(ev))
PY
if out=$(python3 "$TMP/took.py" "$TMP/b.sse" 2>"$TMP/py.err"); then
    ok "B's stream shows the whole run: A's attempt, B's after the lease, done ($out)"
else not_ok "the stream on B" "$(tail -3 "$TMP/py.err")" "$(tail -c 400 "$TMP/b.sse")"; fi
expect "B shows the run" 200 "${AA[@]}" "$UB/v1/runs/$RUN"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["status"]=="done" and r["kind"]=="check" and r["result"]["usage"], r' "$TMP/body" 2>"$TMP/py.err" &&
    ok "... done, with its result" || not_ok "run on B" "$(head -c 300 "$TMP/body")"
timeout 60 curl -sN "${AA[@]}" "$UB/v1/runs/$RUN/events" >"$TMP/b-again.sse"
cmp -s "$TMP/b.sse" "$TMP/b-again.sse" &&
    ok "a stream opened on B after the end replays the same run" ||
    not_ok "replay on B" "$(diff "$TMP/b.sse" "$TMP/b-again.sse" | head -5)"
n=$(psql -Atq "$PG_URL" -c "SELECT count(*) FROM queue_jobs j JOIN queue_runs r ON r.id = j.run_id WHERE r.kind = 'check' AND j.state = 'done' AND j.attempt = 2")
[ "$n" = 1 ] && ok "the check's queue row is done once, by its second claim" ||
    not_ok "queue row" "done rows with attempt 2: '$n'"

# ==== A worker for mediqa leaves the servers' rows alone ====
expect "a check submitted on B" 202 "${AA[@]}" "$UB/v1/check" -d "$REQ"
RUN2=$(run_id)
"$MT" worker --state "$PG_URL" --db "$TMP/db" --llm "$SPEC" --drain \
    --no-progress --poll 0.1 >"$TMP/w.out" 2>"$TMP/w.err"
rc=$?
[ $rc -eq 0 ] && grep -q ' 0 jobs done' "$TMP/w.err" &&
    ok "worker --drain claims no check row and exits" ||
    not_ok "worker and server rows" "rc $rc" "$(tail -3 "$TMP/w.err")"
timeout 120 curl -sN "${AA[@]}" "$UB/v1/runs/$RUN2/events" >"$TMP/b2.sse"
tail -3 "$TMP/b2.sse" | grep -q '"status":"done"' &&
    ok "... and B runs it to the end" || not_ok "check on B" "$(tail -c 300 "$TMP/b2.sse")"

# ==== An ask's tokens: coalesced rows ====
stub_start fast --delay 50
serve_start c --llm "$SPEC" --state "$PG_URL" --rate-limit 0
UC=$U
AC=("${A[@]}")
Q="Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?"
ASK=$(python3 -c 'import json,sys; print(json.dumps({"question": sys.argv[1]}))' "$Q")
expect "an ask on C" 202 "${AC[@]}" "$UC/v1/ask" -d "$ASK"
RUN3=$(run_id)
timeout 120 curl -sN "${AC[@]}" "$UC/v1/runs/$RUN3/events" >"$TMP/c3.sse"
timeout 120 curl -sN "${AC[@]}" "$UB/v1/runs/$RUN3/events" >"$TMP/b3.sse"
cat >"$TMP/tok.py" <<'PY'
import sys
from sse_events import events
runner = None
out = {}
for name in sys.argv[1:3]:
    ev = events(name)
    assert ev[-1][0] == "done" and ev[-1][1]["status"] == "done", ev[-1]
    toks = [d["text"] for k, d in ev if k == "token"]
    out[name] = (len(toks), "".join(toks), [k for k, _ in ev if k != "token"])
(na, ta, ka), (nb, tb, kb) = out.values()
assert ta == tb and ta, (ta[:80], tb[:80])
assert ka == kb, (ka, kb)
# the runner's own replay log merges the pieces no stream took yet (issue
# 39), so either side may have fewer token events; B's are the rows
assert na >= 1 and nb >= 1, (na, nb)
pieces = len(ta.split())  # the stub streams a word a piece
assert pieces > 3 and nb < pieces, (pieces, na, nb)  # coalesced rows
print(na, nb)
PY
if out=$(python3 "$TMP/tok.py" "$TMP/c3.sse" "$TMP/b3.sse" 2>"$TMP/py.err"); then
    read -r hi lo <<<"$out"
    ok "the answer's token events ($hi on the runner) reach the other server as $lo rows, the same text"
else not_ok "token rows" "$(tail -3 "$TMP/py.err")"; fi
rows=$(psql -Atq "$PG_URL" -c "SELECT count(*) FROM run_events WHERE run_id = $RUN3 AND type = 'token'")
[ -n "$rows" ] && [ "$rows" -ge 1 ] && [ "$rows" = "$lo" ] &&
    ok "... $rows token rows in PostgreSQL" || not_ok "token rows in PG" "'$rows' vs '$lo'"

# ==== Pruning event rows ====
serve_start d --llm "$SPEC" --state "$PG_URL" --rate-limit 0 --event-retention 2
for _ in $(seq 100); do
    left=$(psql -Atq "$PG_URL" -c "SELECT count(*) FROM run_events WHERE run_id IN ($RUN, $RUN3)")
    [ "$left" = 0 ] && break
    sleep 0.1
done
[ "$left" = 0 ] && grep -q 'pruned' "$TMP/d.err" &&
    ok "--event-retention 2 prunes the event rows of runs that ended before" ||
    not_ok "prune" "rows left: '$left'" "$(tail -3 "$TMP/d.err")"
expect "... and the run keeps its result" 200 "${AA[@]}" "$UC/v1/runs/$RUN3"
grep -q '"status":"done"' "$TMP/body" && grep -q '"answer"' "$TMP/body" &&
    ok "... (done, with the answer)" || not_ok "run after prune" "$(head -c 300 "$TMP/body")"

# ==== SIGTERM hands a running job back ====
stub_start slow2 --delay 3000
serve_start e --llm "$SPEC" --state "$PG_URL" --rate-limit 0 --job-lease 30 \
    --grace 0
UE=$U
PID_E=${SERVE_PIDS[${#SERVE_PIDS[@]} - 1]}
for p in "${SERVE_PIDS[@]}"; do # only E may claim
    [ "$p" = "$PID_E" ] || kill -TERM "$p" 2>/dev/null
done
for p in "${SERVE_PIDS[@]}"; do [ "$p" = "$PID_E" ] || wait "$p"; done
SERVE_PIDS=("$PID_E")
expect "a slow check on E" 202 "${A[@]}" "$UE/v1/check" -d "$REQ"
RUN4=$(run_id)
timeout 120 curl -sN "${A[@]}" "$UE/v1/runs/$RUN4/events" >"$TMP/e.sse" &
wait_for "$TMP/e.sse" '^event: step'
kill -TERM "$PID_E"
wait "$PID_E"
rc=$?
SERVE_PIDS=()
serve_start f --llm "$SPEC" --state "$PG_URL" --rate-limit 0 --job-lease 30
UF=$U
[ $rc -eq 0 ] && grep -q 'handed back' "$TMP/e.err" &&
    ok "SIGTERM with --grace 0 hands the running check back to the queue" ||
    not_ok "handed back" "rc $rc" "$(tail -3 "$TMP/e.err")"
timeout 120 curl -sN "${A[@]}" "$UF/v1/runs/$RUN4/events" >"$TMP/f.sse"
tail -3 "$TMP/f.sse" | grep -q '"status":"done"' &&
    grep -q '"attempt":2' "$TMP/f.sse" &&
    ok "... F, started after, claims it at once (no lease to wait for) and finishes it" ||
    not_ok "after hand-back" "$(tail -c 300 "$TMP/f.sse")"

# ==== A front end that runs no jobs, and a worker that runs them ====
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p"; done
SERVE_PIDS=()
stub_start quick --delay 100
# no --llm on G: a front end checks a request's fields, the worker that
# claims the row its models (a 503 for a missing model was G's before)
serve_start g --state "$PG_URL" --rate-limit 0 --llm-jobs 0
UG=$U
AG=("${A[@]}")
# the worker's own copy of the store (another machine's): no batch folders
cp -r "$TMP/db" "$TMP/db2"
rm -rf "$TMP/db2/batches"
"$MT" worker --state "$PG_URL" --db "$TMP/db2" --llm "$SPEC" --serve-jobs \
    --jobs 2 --lease 2 --no-progress >"$TMP/ws.out" 2>"$TMP/ws.err" &
WPID=$!
expect "GET /v1/models on G" 200 "${AG[@]}" "$UG/v1/models"
grep -q '"runs_jobs": *false' "$TMP/body" && ok "... says it runs no jobs" ||
    not_ok "G runs_jobs" "$(head -c 300 "$TMP/body")"
expect "a check on a server with --llm-jobs 0" 202 "${AG[@]}" "$UG/v1/check" -d "$REQ"
RUN5=$(run_id)
timeout 120 curl -sN "${AG[@]}" "$UG/v1/runs/$RUN5/events" >"$TMP/g.sse"
tail -3 "$TMP/g.sse" | grep -q '"status":"done"' &&
    grep -q '"node":"worker:' "$TMP/g.sse" &&
    ok "... is run by 'worker --serve-jobs' and streamed by the server to done" ||
    not_ok "worker --serve-jobs" "$(tail -c 300 "$TMP/g.sse")" "$(tail -3 "$TMP/ws.err")"
# a browser batch: the worker has no DIR for it, so it writes the upload
# from the row and checks every note
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
python3 - "$MEDEC" "$TMP/b.json" <<'PY'
import csv, io, json, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))
out = io.StringIO()
csv.writer(out).writerows(rows[:4])
json.dump({"data": out.getvalue(), "strategy": "single", "name": "rows"},
          open(sys.argv[2], "w"))
PY
expect "a browser batch on G" 202 "${AG[@]}" "$UG/v1/batch" -d @"$TMP/b.json"
RUN6=$(run_id)
timeout 120 curl -sN "${AG[@]}" "$UG/v1/runs/$RUN6/events" >"$TMP/g6.sse"
expect "... G shows it" 200 "${AG[@]}" "$UG/v1/runs/$RUN6"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); b=r["result"]["batch"]; assert r["status"]=="done" and b["notes"]==3 and b["failed"]==0 and b["resumed"]==0, r' "$TMP/body" 2>"$TMP/py.err" &&
    [ -s "$TMP/db2/batches/run-$RUN6/submission.txt" ] &&
    grep -q '"node":"worker:' "$TMP/g6.sse" &&
    ok "... done by the worker from the row's upload: 3 notes, scored" ||
    not_ok "batch row" "$(tail -2 "$TMP/py.err")" "$(head -c 300 "$TMP/body")"
expect "... its report, written on the worker, served by G" 200 "${AG[@]}" \
    "$UG/v1/runs/$RUN6/report"
kill -TERM "$WPID"
wait "$WPID" && ok "... and the worker stops on SIGTERM" ||
    not_ok "worker stop" "$(tail -3 "$TMP/ws.err")"
"$MT" worker --state "$PG_URL" --serve-jobs --drain >/dev/null 2>"$TMP/nodb.err"
[ $? -ne 0 ] && grep -q -- '--serve-jobs needs --db' "$TMP/nodb.err" &&
    ok "worker --serve-jobs without --db is refused, naming it" ||
    not_ok "serve-jobs without db" "$(cat "$TMP/nodb.err")"

# ==== Runs no job holds: interrupted at a server's start (issue 39) ====
# An old "running" run with no queue row (its server died before queueing
# it, or its status was never written) is marked interrupted; a run
# created just now without a row yet is left alone.
old=$(psql -Atq "$PG_URL" -c "INSERT INTO runs(user_id, username, kind, status, idem, created_at) SELECT id, name, 'check', 'running', 'orphan-39', extract(epoch from now())::bigint - 3600 FROM users WHERE name = 'alice' RETURNING id" | head -1)
new=$(psql -Atq "$PG_URL" -c "INSERT INTO runs(user_id, username, kind, status, idem) SELECT id, name, 'check', 'queued', 'fresh-39' FROM users WHERE name = 'alice' RETURNING id" | head -1)
serve_start o --state "$PG_URL" --rate-limit 0 --llm-jobs 0
st_old=$(psql -Atq "$PG_URL" -c "SELECT status FROM runs WHERE id = $old")
st_new=$(psql -Atq "$PG_URL" -c "SELECT status FROM runs WHERE id = $new")
[ "$st_old" = interrupted ] && [ "$st_new" = queued ] &&
    grep -q "no server's job holds: marked interrupted" "$TMP/o.err" &&
    ok "a run no job holds is marked interrupted at start, a fresh one is not" ||
    not_ok "orphaned runs" "old '$st_old' new '$st_new'" "$(tail -2 "$TMP/o.err")"
expect "... and cancelling it ends it (200)" 200 "${A[@]}" -X POST \
    "$U/v1/runs/$old/cancel"
psql -Atq "$PG_URL" -c "DELETE FROM runs WHERE id = $new" >/dev/null

# ==== Stop ====
rc=0
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" || rc=$?; done
SERVE_PIDS=()
[ $rc -eq 0 ] && ok "every server stops cleanly on SIGTERM" ||
    not_ok "servers stop" "rc=$rc"
