#!/usr/bin/env bash
# Load test of `medtrust serve` (BENCHMARKS.md, "HTTP server"):
#  1. wrk, 200 connections for 30 s on POST /v1/search over the MedQuAD
#     corpus (BM25, k 10, rotating queries), with an API token: zero errors
#     (socket errors or non-2xx) and the p99 latency;
#  2. search latency with 8 connections for 10 s, alone and then while 32
#     slow jobs (synthetic model calls of 120 s each, --llm-jobs 32) are in
#     flight in the job queue: p50 and p99 must not rise past 2x.
# Usage: bench/serve_load.sh [MEDTRUST_BIN] (default build/rel/medtrust; a
# release build: make BUILD=build/rel). Needs wrk (Debian package wrk).
# Env: DURATION (30), CONNS (200), THREADS (network threads, 4).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT=${1:-$ROOT/build/rel/medtrust}
DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
DURATION=${DURATION:-30}
CONNS=${CONNS:-200}
THREADS=${THREADS:-4}
command -v wrk >/dev/null || { echo "serve_load: install wrk" >&2; exit 2; }
"$MT" serve --help >/dev/null 2>&1 ||
    { echo "serve_load: $MT has no serve verb" >&2; exit 2; }
TMP=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

"$MT" index --db "$TMP/db" --input "$DATA/medquad/corpus.jsonl" --embedder none \
    --source medquad --no-progress >/dev/null 2>&1
echo 'bench-password' | "$MT" user add --db "$TMP/db" bench 2>/dev/null
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --threads "$THREADS" \
    --llm-jobs 32 --rate-limit 0 --test-routes >"$TMP/out" 2>"$TMP/err" &
PID=$!
for _ in $(seq 100); do grep -q listening "$TMP/out" && break; sleep 0.1; done
U=http://127.0.0.1:$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$TMP/out")
curl -s -c "$TMP/jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"bench","password":"bench-password"}' >"$TMP/login"
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/login")
export MT_TOKEN=$(curl -s -b "$TMP/jar" -H "X-CSRF-Token: $CSRF" -X POST \
    "$U/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

cat >"$TMP/search.lua" <<'LUA'
local qs = {"symptoms of gout", "how is asthma treated",
  "what causes high blood pressure", "side effects of metformin",
  "is diabetes inherited", "treatment for migraine",
  "what are the stages of breast cancer", "how to prevent osteoporosis"}
local bodies = {}
for i, q in ipairs(qs) do
  bodies[i] = '{"query":"' .. q .. '","k":10}'
end
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("MT_TOKEN")
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, bodies[n % #bodies + 1])
end
LUA

# run_wrk CONNS SECONDS OUT: wrk with latency percentiles.
run_wrk() {
    wrk -t2 -c"$1" -d"$2"s --latency -s "$TMP/search.lua" "$U/v1/search" >"$3"
}
pct() { awk -v p="$1" '$1 == p {print $2}' "$2"; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; printf "%.2f\n", v}'; }
errors() { # socket errors and non-2xx responses
    local e n
    e=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' "$1" |
        awk '{print $1+$2+$3+$4}')
    n=$(sed -n 's/.*Non-2xx or 3xx responses: \([0-9]*\).*/\1/p' "$1")
    echo $(( ${e:-0} + ${n:-0} ))
}

run_wrk 8 3 "$TMP/warm"
run_wrk "$CONNS" "$DURATION" "$TMP/load"
rps=$(awk '/Requests\/sec/ {print $2}' "$TMP/load")
p50=$(pct 50% "$TMP/load" | to_ms)
p99=$(pct 99% "$TMP/load" | to_ms)
err=$(errors "$TMP/load")
echo "load: $CONNS connections, ${DURATION}s: $rps req/s, p50 $p50 ms, p99 $p99 ms, errors $err"

run_wrk 8 10 "$TMP/base"
for i in $(seq 32); do
    curl -s -H "Authorization: Bearer $MT_TOKEN" "$U/v1/jobs/sleep" \
        -d '{"ms":120000,"steps":4}' >/dev/null
done
running=$(curl -s "$U/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"]["running"])')
run_wrk 8 10 "$TMP/slow"
b50=$(pct 50% "$TMP/base" | to_ms); b99=$(pct 99% "$TMP/base" | to_ms)
s50=$(pct 50% "$TMP/slow" | to_ms); s99=$(pct 99% "$TMP/slow" | to_ms)
echo "alone: p50 $b50 ms, p99 $b99 ms; with $running slow jobs running: p50 $s50 ms, p99 $s99 ms"
fail=0
[ "$err" -eq 0 ] || { echo "FAIL: $err errors under load"; fail=1; }
[ "$running" -ge 32 ] || { echo "FAIL: only $running jobs running"; fail=1; }
awk -v a="$b50" -v b="$s50" -v c="$b99" -v d="$s99" \
    'BEGIN { exit !(b <= 2 * a && d <= 2 * c) }' ||
    { echo "FAIL: search slowed down more than 2x with slow jobs"; fail=1; }
[ $fail -eq 0 ] && echo "PASS"
exit $fail
