#!/usr/bin/env bash
# Integration (issue 39, rows 3 and 8): runs always reach an end state, and
# the server sizes its connections from its descriptors.
# - A batch whose server is killed with -9 mid-way is "interrupted" when a
#   server starts on the store again (it was "running" forever before);
#   it resumes from its journal to the results of an uninterrupted batch
#   (mediqa's), redoing only the notes the journal lacks; an interrupted
#   run that is cancelled ends "failed" (not 409 "already finished").
# - A final status write that fails (the store locked by another process)
#   is retried; when every try fails the "done" event says so and the run
#   is interrupted at the next start.
# - With `ulimit -n 256` (soft and hard), 300 idle connections from many
#   loopback addresses leave /v1/health answering: the open-file limit is
#   raised to the hard one, the connection cap sized from it, and the
#   connection idle longest is closed near the cap. A soft limit below a
#   higher hard one is raised to the hard one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_SINGLE
. "$(dirname "$0")/api_lib.sh"
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
csv_head "$MEDEC" 6 "$TMP/s6.csv"
BODY=$(py "$TMP/s6.csv" <<'PY'
import json, sys
print(json.dumps({"data": open(sys.argv[1], encoding="utf-8").read(),
                  "strategy": "single", "name": "kill9"}))
PY
)
run_field() { # run_field RUN FIELD
    curl -s "${A[@]}" "$U/v1/runs/$1" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$2"
}

# ==== kill -9 mid-batch, restart, resume ====
stub_start slow --delay 700
"$MT" mediqa --llm "$SPEC" --data "$TMP/s6.csv" --strategy single \
    --out "$TMP/cli.txt" --no-progress >/dev/null 2>&1
serve_start k1 --llm "$SPEC" --rate-limit 0
expect "a batch is queued (202)" 202 "${A[@]}" "$U/v1/batch" -d "$BODY"
RUN=$(py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])')
J="$TMP/db/batches/run-$RUN/journal.jsonl"
for _ in $(seq 300); do
    [ -f "$J" ] && [ "$(wc -l <"$J")" -ge 2 ] && break
    sleep 0.1
done
kill -9 "${SERVE_PIDS[-1]}"
wait "${SERVE_PIDS[-1]}" 2>/dev/null
before=$(wc -l <"$J")
st=$(py "$TMP/db/store.db" "$RUN" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(c.execute("SELECT status FROM runs WHERE id=?", (int(sys.argv[2]),)).fetchone()[0])
PY
)
[ "$st" = running ] && ok "after kill -9 the batch's row still says running" ||
    not_ok "row after kill -9" "status '$st'"
calls_before=$(wc -l <"$TMP/slow.log")
serve_start k2 --llm "$SPEC" --rate-limit 0
if [ "$(run_field "$RUN" status)" = interrupted ] &&
    run_field "$RUN" error | grep -q "resumes from its journal"; then
    ok "a restarted server marks it interrupted, saying it resumes"
else not_ok "interrupted at start" "$(curl -s "${A[@]}" "$U/v1/runs/$RUN")"; fi
grep -q "marked interrupted" "$TMP/k2.err" && ok "... and logs it" ||
    not_ok "log of interrupted runs" "$(tail -3 "$TMP/k2.err")"
expect "the interrupted batch resumes (202)" 202 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/resume"
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/resume.sse"
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/resume.run"
calls=$(($(wc -l <"$TMP/slow.log") - calls_before))
if py "$TMP/resume.run" "$before" "$calls" \
    "$TMP/db/batches/run-$RUN/submission.txt" "$TMP/cli.txt" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
before, calls = int(sys.argv[2]), int(sys.argv[3])
assert r["status"] == "done", r
assert 2 <= before < 6, before
assert r["result"]["batch"]["resumed"] == before, r["result"]["batch"]
assert calls == 6 - before, (calls, before)
assert open(sys.argv[4]).read() == open(sys.argv[5]).read()
PY
    ok "it resumes to completion: $before notes kept, the rest checked, mediqa's submission"
else not_ok "resume after kill -9" "$(head -c 400 "$TMP/resume.run")" "calls $calls before $before"; fi

# an interrupted run that is cancelled ends failed
expect "a second batch is queued (202)" 202 "${A[@]}" "$U/v1/batch" -d "$BODY"
RUN2=$(py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])')
for _ in $(seq 100); do
    [ "$(run_field "$RUN2" status)" = running ] && break
    sleep 0.1
done
kill -9 "${SERVE_PIDS[-1]}"
wait "${SERVE_PIDS[-1]}" 2>/dev/null
serve_start k3 --llm "$SPEC" --rate-limit 0
expect "cancelling an interrupted run is 200, not 409" 200 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN2/cancel"
[ "$(run_field "$RUN2" status)" = failed ] &&
    ok "... and it ends failed" || not_ok "cancel interrupted" "$(run_field "$RUN2" status)"
expect "... then it still resumes (202)" 202 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN2/resume"
curl -sN "${A[@]}" "$U/v1/runs/$RUN2/events" >/dev/null
[ "$(run_field "$RUN2" status)" = done ] && ok "... to done" ||
    not_ok "resume after cancel" "$(run_field "$RUN2" status)"
for p in "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
SERVE_PIDS=()

# ==== A final status write that fails: retried, then surfaced ====
# A job is cancelled while another process holds the store's write lock
# (BEGIN EXCLUSIVE): held 12 s, the second try (after SQLite's 10 s busy
# wait) writes its status; held until the job's "done" event, every try
# fails and the event says so, the run stays "running", and the next
# server marks it interrupted.
serve_start w1 --rate-limit 0 --test-routes
hold_lock() { # hold_lock SECONDS|SSE-FILE: locks, touches $TMP/locked
    py "$TMP/db/store.db" "$1" "$TMP/locked" <<'PY'
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[3], "w").close()
if sys.argv[2].isdigit():
    time.sleep(int(sys.argv[2]))
else:
    t0 = time.time()
    while time.time() - t0 < 300:
        if "event: done" in open(sys.argv[2]).read():
            break
        time.sleep(0.2)
c.execute("ROLLBACK")
PY
}
# end_locked NAME HOLD: a long job streamed into NAME.sse is cancelled
# while the store is locked (HOLD as hold_lock's), so its final status
# write meets the lock; sets RUN.
end_locked() {
    expect "a sleep job is queued" 202 "${A[@]}" "$U/v1/jobs/sleep" \
        -d '{"ms":60000,"steps":1}'
    RUN=$(py "$TMP/body" <<<'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])')
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/$1.sse" &
    local curl=$!
    for _ in $(seq 200); do
        [ "$(run_field "$RUN" status)" = running ] && break
        sleep 0.05
    done
    rm -f "$TMP/locked"
    hold_lock "$2" &
    local lock=$!
    for _ in $(seq 600); do
        [ -f "$TMP/locked" ] && break
        sleep 0.05
    done
    code "${A[@]}" -X POST "$U/v1/runs/$RUN/cancel" >/dev/null
    wait "$lock"
    wait "$curl"
}
end_locked retry 12
if [ "$(run_field "$RUN" status)" = failed ] && grep -q 'cancelled' "$TMP/retry.sse" &&
    ! grep -q '"warning"' "$TMP/retry.sse" &&
    grep -q "run $RUN: .*database is locked" "$TMP/w1.err"; then
    ok "a final status write that meets a locked store is tried again and lands"
else not_ok "final status retried" "$(run_field "$RUN" status)" "$(tail -c 300 "$TMP/retry.sse")"; fi
end_locked lost "$TMP/lost.sse"
if grep -q '"warning":"this status could not be saved' "$TMP/lost.sse" &&
    [ "$(run_field "$RUN" status)" = running ]; then
    ok "when every try fails, the done event says the status was not saved"
else not_ok "final status surfaced" "$(run_field "$RUN" status)" "$(tail -c 300 "$TMP/lost.sse")"; fi
kill "${SERVE_PIDS[-1]}"
wait "${SERVE_PIDS[-1]}" 2>/dev/null
serve_start w2 --rate-limit 0
[ "$(run_field "$RUN" status)" = interrupted ] &&
    ok "... and the next server marks that run interrupted" ||
    not_ok "unsaved run at restart" "$(run_field "$RUN" status)"
for p in "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; done
for p in "${SERVE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
SERVE_PIDS=()

# ==== ulimit -n 256: 300 idle connections, /v1/health answers ====
hard=$(ulimit -Hn)
limits() {
    curl -s --max-time 30 "$U/v1/health" |
        python3 -c 'import json,sys; l=json.load(sys.stdin)["limits"]; print(l["open_files"], l["max_connections"])'
}
if [ "$hard" = unlimited ] || [ "$hard" -gt 4096 ]; then
    (ulimit -Sn 256 && serve_start soft --rate-limit 0 && limits >"$TMP/soft.lim" &&
        kill "${SERVE_PIDS[-1]}")
    read -r nofile cap <"$TMP/soft.lim"
    if [ "$nofile" -gt 256 ] && [ "$cap" -gt 256 ]; then
        ok "a soft open-file limit of 256 is raised to the hard one ($nofile, cap $cap)"
    else not_ok "raise RLIMIT_NOFILE" "open_files $nofile cap $cap (hard $hard)"; fi
else
    skip "raise a soft RLIMIT_NOFILE" "the hard limit here is $hard"
fi
# the server alone runs under the limit; the client holds 300 sockets
(ulimit -n 256 && exec "$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 \
    --rate-limit 0 --max-conns-per-ip 0 --header-timeout 600) \
    >"$TMP/lim.out" 2>"$TMP/lim.err" &
LPID=$!
SERVE_PIDS+=($LPID)
U=$(serve_url "$TMP/lim.out")
python3 - "$U" <<'PY' || not_ok "300 idle connections" "the client failed"
import json, socket, sys, time, urllib.parse, http.client
u = urllib.parse.urlparse(sys.argv[1])
held = []
for i in range(300):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i // 50), 0))
    s.settimeout(5)
    try:
        s.connect((u.hostname, u.port))
        held.append(s)
    except OSError:
        s.close()
ok, h = False, {}
for _ in range(3):
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request("GET", "/v1/health")
        r = c.getresponse()
        h = json.loads(r.read())
        ok = r.status == 200 and h["limits"]["open_files"] == 256
        break
    except OSError:
        time.sleep(1)
alive = 0
for s in held:  # still open: a read would block
    try:
        s.setblocking(False)
        s.recv(1)
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(("ok - " if ok else "not ok - ") +
      "ulimit -n 256: /v1/health answers with 300 idle connections open")
print("# %d of 300 idle connections still open, health: %s" %
      (alive, h["limits"] if ok else "no answer"))
PY
kill -0 "$LPID" && ok "the server is still up" ||
    not_ok "server with ulimit -n 256" "$(tail -3 "$TMP/lim.err")"
grep -q "closed the one idle longest" "$TMP/lim.err" &&
    ok "it closed the longest-idle connections near its cap, and said so" ||
    not_ok "idle connections closed near the cap" "$(tail -3 "$TMP/lim.err")"
