#!/usr/bin/env bash
# Integration (issue 19): a server and a worker start while PostgreSQL is
# down. The server listens at once: /v1/health is 503 "ready": false and
# a login 503, not a crash or a hang; the worker says it waits. When
# PostgreSQL comes up the server turns ready by itself (its --registration
# applied then), a login works, and the worker, started before, finishes
# a batch queued after.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
. "$(dirname "$0")/pg_lib.sh"
need_verb serve worker mediqa
unset MEDTRUST_LLM MEDTRUST_STATE
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
need "MEDEC validation set" "$MEDEC"
PIDS=()
pg_start
trap 'for p in "${PIDS[@]}" "${STUB_PIDS[@]}"; do kill "$p" 2>/dev/null; done
      bash "$PG_FIX" stop "$TMP/pg" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
pg_down
stub_start m
"$MT" serve --state "$PG_URL" --db "$TMP/db" --listen 127.0.0.1:0 \
    --registration open >"$TMP/out" 2>"$TMP/serr" &
PIDS+=($!)
SPID=$!
"$MT" worker --state "$PG_URL" --name w1 --no-progress --llm "$SPEC" \
    2>"$TMP/werr" &
PIDS+=($!)
WPID=$!
U=$(serve_url "$TMP/out")
code() { curl -s -o "$TMP/body" -w '%{http_code}' "$@"; }
LOGIN=(-H "Content-Type: application/json" -d '{"username":"alice","password":"alice-password"}')
h=$(code "$U/v1/health")
hb=$(cat "$TMP/body")
l=$(code "$U/v1/login" "${LOGIN[@]}")
lb=$(cat "$TMP/body")
if [ -n "$U" ] && [ "$h" = 503 ] && echo "$hb" | grep -q '"ready": *false' &&
    [ "$l" = 503 ] && echo "$lb" | grep -q 'not reachable yet' &&
    grep -q 'serving not ready' "$TMP/serr"; then
    ok "PostgreSQL down: serve starts and listens; health 503 not ready, login 503 naming why"
else
    not_ok "serve with PostgreSQL down (health $h, login $l)" "$hb" "$lb" "$(tail -3 "$TMP/serr")"
fi
sleep 1
if kill -0 "$WPID" 2>/dev/null && grep -q 'waiting for PostgreSQL' "$TMP/werr"; then
    ok "PostgreSQL down: the worker starts and waits, saying so"
else
    not_ok "worker with PostgreSQL down" "$(tail -3 "$TMP/werr")"
fi

pg_restart
ready=
for _ in $(seq 150); do
    [ "$(code "$U/v1/health")" = 200 ] && { ready=1; break; }
    sleep 0.1
done
hb=$(cat "$TMP/body")
echo 'alice-password' | "$MT" user add --state "$PG_URL" alice 2>"$TMP/uerr"
l=$(code "$U/v1/login" "${LOGIN[@]}")
reg=$(psql "$PG_URL" -XAtqc "SELECT value FROM settings WHERE key = 'registration'" 2>/dev/null)
if [ -n "$ready" ] && echo "$hb" | grep -q '"ready": *true' && [ "$l" = 200 ] &&
    [ "$reg" = open ] && grep -q 'reachable: ready' "$TMP/serr"; then
    ok "PostgreSQL back: the same server turns ready by itself, applies --registration, logs in"
else
    not_ok "server once PostgreSQL is back (ready '$ready', login $l, registration '$reg')" \
        "$hb" "$(cat "$TMP/body")" "$(tail -3 "$TMP/serr")"
fi

run=$("$MT" mediqa --state "$PG_URL" --enqueue --data "$MEDEC" --limit 5 \
    --strategy single --llm "$SPEC" 2>"$TMP/enq.err")
timeout 60 "$MT" mediqa --state "$PG_URL" --collect "$run" --out "$TMP/sub.txt" \
    --no-progress >/dev/null 2>"$TMP/col.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/sub.txt")" = 5 ] &&
    grep -q 'PostgreSQL is reachable: starting' "$TMP/werr" && kill -0 "$WPID" 2>/dev/null; then
    ok "the worker started while PostgreSQL was down finishes a batch queued once it is back"
else
    not_ok "worker after PostgreSQL is back (collect rc $rc)" "$(tail -3 "$TMP/col.err")" "$(tail -3 "$TMP/werr")"
fi
kill -TERM "$WPID" "$SPID" 2>/dev/null
wait "$WPID" 2>/dev/null
wait "$SPID" 2>/dev/null
