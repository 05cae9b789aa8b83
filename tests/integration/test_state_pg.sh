#!/usr/bin/env bash
# Integration (issue 19): three `medtrust serve --state postgresql://...`
# on one throwaway PostgreSQL (tests/fixtures/pg_cluster.sh) and the agent
# stub (A and B front ends, C the one that runs the jobs). A session made
# on A works on B and a logout on B ends it on A; a
# check submitted on A streams on B with the same events, in the same
# order, as on A; `user ... --state` manages the shared accounts while a
# server without --state keeps its own (the embedded default); and a
# PostgreSQL restart in the middle of a check leaves the run finished
# and streamable; a cancel on one server stops the job on another; a
# report and a failed-login lock made on one are seen by another; a new index committed on the node is searched without a
# restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL MEDTRUST_LLM_REFLECT \
    MEDTRUST_LLM_PARSER MEDTRUST_LLM_GUARD MEDTRUST_LLM_SINGLE MEDTRUST_STATE
. "$(dirname "$0")/api_lib.sh"
. "$(dirname "$0")/pg_lib.sh"
pg_start

# ==== Accounts in the shared state ====
check "user add --state makes alice in PostgreSQL" \
    bash -c "echo alice-password | '$MT' user add --state '$PG_URL' alice --admin"
check "user add --state makes bob" \
    bash -c "echo bob-password | '$MT' user add --state '$PG_URL' bob"
"$MT" user list --state "$PG_URL" >"$TMP/pg-users" 2>&1
"$MT" user list --db "$TMP/db" >"$TMP/db-users" 2>&1
if [ "$(cat "$TMP/pg-users")" = "$(printf 'alice\tadmin\nbob\tuser')" ] &&
    [ "$(cat "$TMP/db-users")" = "$(printf 'alice\tuser')" ]; then
    ok "user list --state lists PostgreSQL's accounts, --db the store's"
else not_ok "user list" "$(cat "$TMP/pg-users" "$TMP/db-users")"; fi
MEDTRUST_STATE=$PG_URL "$MT" user list >"$TMP/env-users" 2>&1
cmp -s "$TMP/env-users" "$TMP/pg-users" &&
    ok "user list reads \$MEDTRUST_STATE" ||
    not_ok "MEDTRUST_STATE" "$(cat "$TMP/env-users")"
"$MT" serve --db "$TMP/db" --state "sqlite:$TMP/db" >/dev/null 2>"$TMP/bad.err"
[ $? -eq 1 ] && grep -q 'postgresql://' "$TMP/bad.err" &&
    ok "serve --state refuses what is not a PostgreSQL URL" ||
    not_ok "serve --state sqlite:" "$(cat "$TMP/bad.err")"

# ==== Two servers, one state ====
# Every server with job threads claims any queued job, whichever server
# took it: C, on the stub, is the only one that runs jobs, and A and B
# are front ends (--llm-jobs 0). When A and B ran jobs too, a loaded
# machine let them claim the checks submitted on C below, which then ran
# on their own model, never held (--hold-while), and ended before the
# restart or the cancel meant for them.
stub_start slow --delay 600 --hold-while "$TMP/hold"
serve_start c --llm "$SPEC" --state "$PG_URL" --rate-limit 0
UC=$U
AC=("${A[@]}")
serve_start a --state "$PG_URL" --rate-limit 0 --llm-jobs 0
UA=$U
AA=("${A[@]}")
serve_start b --state "$PG_URL" --rate-limit 0 --llm-jobs 0
UB=$U
grep -q 'state in PostgreSQL' "$TMP/b.err" &&
    ok "serve says its state is in PostgreSQL" ||
    not_ok "serve log" "$(tail -3 "$TMP/b.err")"
expect "A's session works on B" 200 "${AA[@]}" "$UB/v1/me"
grep -q '"alice"' "$TMP/body" && grep -q '"admin"' "$TMP/body" &&
    ok "... as PostgreSQL's alice (an admin; the store's is not)" ||
    not_ok "me on B" "$(cat "$TMP/body")"

printf 'A 62-year-old man has crushing chest pain.\nECG shows ST elevation in II, III and aVF.\nHe is given aspirin and sent home.\n' >"$TMP/note.txt"
REQ=$(python3 -c 'import json,sys; print(json.dumps({"note": open(sys.argv[1]).read(), "strategy": "react-reflex"}))' "$TMP/note.txt")
expect "a check submitted on A is queued" 202 "${AA[@]}" "$UA/v1/check" -d "$REQ"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
timeout 120 curl -sN "${AA[@]}" "$UB/v1/runs/$RUN/events" >"$TMP/b.sse"
timeout 120 curl -sN "${AA[@]}" "$UA/v1/runs/$RUN/events" >"$TMP/a.sse"
# events: the (type, data) pairs of an SSE capture
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
cat >"$TMP/sse.py" <<'PY'
import sys
from sse_events import events
a, b = events(sys.argv[1]), events(sys.argv[2])
kinds = [k for k, _ in b]
assert kinds[-1] == "done" and b[-1][1]["status"] == "done", kinds[-3:]
assert kinds.count("step") >= 2, kinds
assert a == b, (len(a), len(b))
print(len(b))
PY
if n=$(python3 "$TMP/sse.py" "$TMP/a.sse" "$TMP/b.sse" 2>"$TMP/py.err"); then
    ok "B streams the check run on A: the same $n events as A, ending done"
else not_ok "stream on B" "$(tail -3 "$TMP/py.err")" "$(head -c 300 "$TMP/b.sse")"; fi
expect "B shows the run" 200 "${AA[@]}" "$UB/v1/runs/$RUN"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["status"]=="done" and r["kind"]=="check" and r["result"], r' "$TMP/body" 2>/dev/null &&
    ok "... done, with A's result" || not_ok "run on B" "$(head -c 300 "$TMP/body")"
expect "B lists it among alice's runs" 200 "${AA[@]}" "$UB/v1/runs"
grep -q "\"id\":$RUN" "$TMP/body" && ok "... by id" ||
    not_ok "runs on B" "$(head -c 300 "$TMP/body")"

# ==== A score's report, written on A, served by B ====
cat >"$TMP/ref.csv" <<'CSV'
Text ID,Text,Sentences,Error Flag,Error Sentence ID,Error Sentence,Corrected Sentence,Corrected Text
ms-1,t,"0 A. 1 B.",1,1,B.,The patient was given metformin for diabetes.,t
ms-2,t,"0 A.",0,-1,NA,NA,t
CSV
printf 'ms-1 1 1 The patient was given insulin for diabetes.\nms-2 0 -1 NA\n' >"$TMP/run.txt"
python3 -c 'import json,sys; print(json.dumps({"reference": open(sys.argv[1]).read(), "submission": open(sys.argv[2]).read(), "name": "run.txt"}))' \
    "$TMP/ref.csv" "$TMP/run.txt" >"$TMP/score.json"
expect "a score on A" 200 "${AA[@]}" "$UA/v1/score" -d @"$TMP/score.json"
SRUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
expect "its report on A" 200 "${AA[@]}" "$UA/v1/runs/$SRUN/report"
cp "$TMP/body" "$TMP/report-a.html"
expect "its report on B, which did not write it" 200 "${AA[@]}" \
    "$UB/v1/runs/$SRUN/report"
cmp -s "$TMP/body" "$TMP/report-a.html" && grep -q '<html' "$TMP/body" &&
    ok "... the same HTML, byte for byte" ||
    not_ok "report on B" "$(head -c 200 "$TMP/body")"

# ==== The embedded default is untouched ====
serve_start plain --llm "$SPEC"
expect "bob (PostgreSQL only) cannot log in on a server without --state" 401 \
    "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"bob","password":"bob-password"}'
expect "... and can on B" 200 "$UB/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"bob","password":"bob-password"}'
expect "A's session is unknown to the server without --state" 401 \
    "${AA[@]}" "$U/v1/me"
expect "a logout on B" 200 "${AA[@]}" -X POST "$UB/v1/logout"
expect "... ends the session on A" 401 "${AA[@]}" "$UA/v1/me"

# run_id: the run id of the 202 in $TMP/body.
run_id() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body"
}
# stream_bg URL FILE: streams URL (with C's session) into FILE in the
# background (SSE_PID).
stream_bg() {
    timeout 120 curl -sN "${AC[@]}" "$1" >"$2" &
    SSE_PID=$!
}

# wait_step FILE: waits until the stream in FILE has a step (at most
# 60 s); 1 if none came.
wait_step() {
    for _ in $(seq 1200); do
        grep -q '^event: step' "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# wait_run URL: polls the run (with C's session) for up to 2 minutes until
# it has finished; sets status, and leaves the run in $TMP/body.
wait_run() {
    status=
    for _ in $(seq 480); do
        code "${AC[@]}" "$1" >/dev/null
        status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status",""))' "$TMP/body" 2>/dev/null)
        case $status in done | failed) return ;; esac
        sleep 0.25
    done
}

# ==== PostgreSQL restarted during a run ====
# The stub steps C's check one call at a time to its first step and holds
# the next call (--hold-while) until PostgreSQL is back: the restart falls
# in the middle of the run however loaded the machine is (free-running,
# the check ends about 2 s after its first step).
: >"$TMP/hold"
calls0=$(wc -l <"$TMP/slow.log")
expect "a slow check submitted on C is queued" 202 "${AC[@]}" "$UC/v1/check" -d "$REQ"
RUN2=$(run_id)
# C's own stream shows the first step at once; B streams it from before
# the restart to its end (its mirror polls PostgreSQL)
timeout 120 curl -sN "${AC[@]}" "$UC/v1/runs/$RUN2/events" >"$TMP/c2.sse" &
CSSE_PID=$!
stream_bg "$UB/v1/runs/$RUN2/events" "$TMP/b2.sse"
step_to_first_step "$TMP/c2.sse" "$TMP/slow.log" "$TMP/hold" "$calls0" &&
    wait_step "$TMP/b2.sse"
code "${AC[@]}" "$UB/v1/runs/$RUN2" >/dev/null
grep -q '"status":"running"' "$TMP/body" && grep -q '^event: step' "$TMP/b2.sse" &&
    ok "the check is running, and streaming on B, when PostgreSQL restarts" ||
    not_ok "running before the restart" "$(head -c 200 "$TMP/body")" \
        "$(tail -c 200 "$TMP/b2.sse")"
if pg_restart >"$TMP/restart.out" 2>&1; then
    ok "PostgreSQL restarts while the check runs"
else not_ok "pg restart" "$(cat "$TMP/restart.out")"; fi
code "${AC[@]}" "$UB/v1/runs/$RUN2" >/dev/null
grep -q '"status":"running"' "$TMP/body" &&
    ok "... and the check is still running, held, when it is back" ||
    not_ok "running after the restart" "$(head -c 200 "$TMP/body")"
rm -f "$TMP/hold"
wait_run "$UB/v1/runs/$RUN2"
[ "$status" = done ] && ok "the run finishes done after the restart (read on B)" ||
    not_ok "run after restart" "status '$status'" "$(tail -5 "$TMP/c.err")"
wait "$SSE_PID"
wait "$CSSE_PID"
if n=$(python3 "$TMP/sse.py" "$TMP/c2.sse" "$TMP/b2.sse" 2>"$TMP/py.err"); then
    ok "B streamed the same $n events as C, across the restart"
else not_ok "stream after restart" "$(tail -3 "$TMP/py.err")"; fi
expect "a login on A after the restart" 200 "$UA/v1/login" \
    -H "Content-Type: application/json" \
    -d '{"username":"bob","password":"bob-password"}'

# ==== A cancel on B stops the job on C ====
# The stub steps C's check one call at a time to its first step and holds
# the next (agent_stub --hold-while), and lets it go 1.1 s after the
# cancel: C reads the flag at most once a second, so its next look sees it
# however loaded the machine is (a free-running check could end first).
: >"$TMP/hold"
calls0=$(wc -l <"$TMP/slow.log")
expect "another slow check on C" 202 "${AC[@]}" "$UC/v1/check" -d "$REQ"
RUN3=$(run_id)
timeout 120 curl -sN "${AC[@]}" "$UB/v1/runs/$RUN3/events" >"$TMP/b3.sse" &
SSE_PID=$!
step_to_first_step "$TMP/b3.sse" "$TMP/slow.log" "$TMP/hold" "$calls0"
expect "POST /v1/runs/ID/cancel on B, for C's job" 202 "${AC[@]}" -X POST \
    "$UB/v1/runs/$RUN3/cancel"
sleep 1.1
rm -f "$TMP/hold"
wait_run "$UC/v1/runs/$RUN3"
[ "$status" = failed ] && grep -qi 'cancel' "$TMP/body" &&
    ok "... C stops it: the run ends failed, cancelled" ||
    not_ok "cancel across servers" "status '$status'" "$(head -c 300 "$TMP/body")"
wait "$SSE_PID"
tail -3 "$TMP/b3.sse" | grep -q '"status":"failed"' &&
    ok "... and B's stream of it ends failed" ||
    not_ok "stream of the cancelled run" "$(tail -c 300 "$TMP/b3.sse")"
expect "a second cancel on B says it has finished" 409 "${AC[@]}" -X POST \
    "$UB/v1/runs/$RUN3/cancel"

# ==== A new index while serving ====
# The corpus stays local: `medtrust index` on the node commits a new
# MANIFEST and the running servers search it without a restart.
expect "a search for a word no document has" 200 "${AC[@]}" "$UC/v1/search" \
    -d '{"query":"zorblattic","k":3}'
! grep -q 'state-new-1' "$TMP/body" && ok "... finds nothing" ||
    not_ok "search before" "$(head -c 300 "$TMP/body")"
echo '{"id":"state-new-1","title":"Zorblattic fever","text":"Zorblattic fever is a made-up disease for this test."}' >"$TMP/new.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/new.jsonl" --source pubmedqa \
    --no-progress >/dev/null 2>"$TMP/idx.err" ||
    not_ok "index while serving" "$(tail -3 "$TMP/idx.err")"
expect "after 'medtrust index' commits a new MANIFEST, the same search" 200 \
    "${AC[@]}" "$UC/v1/search" -d '{"query":"zorblattic","k":3}'
grep -q 'state-new-1' "$TMP/body" &&
    ok "... finds the new document on the running server" ||
    not_ok "search after" "$(head -c 300 "$TMP/body")"

# ==== Wrong passwords count across servers ====
echo carl-password | "$MT" user add --state "$PG_URL" carl 2>/dev/null
for i in 1 2 3 4 5; do
    code "$UA/v1/login" -H "Content-Type: application/json" \
        -d '{"username":"carl","password":"wrong-password"}' >"$TMP/code.$i"
done
[ "$(cat "$TMP/code.1")" = 401 ] && ok "a wrong password on A is 401" ||
    not_ok "wrong password" "$(cat "$TMP/code.1")"
expect "after five on A, carl's right password on B is locked out" 429 \
    "$UB/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"carl","password":"carl-password"}'
sleep 4
expect "... and logs in once the lock has passed" 200 "$UB/v1/login" \
    -H "Content-Type: application/json" \
    -d '{"username":"carl","password":"carl-password"}'

# ==== Stop ====
rc=0
for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" || rc=$?; done
SERVE_PIDS=()
[ $rc -eq 0 ] && ok "every server stops cleanly on SIGTERM" ||
    not_ok "servers stop" "rc=$rc" "$(tail -3 "$TMP"/*.err 2>/dev/null)"
