#!/usr/bin/env bash
# Cost of the shared state on an authenticated request (BENCHMARKS.md,
# "State in PostgreSQL"): GET /v1/me with an API token (one token lookup
# in the state per request) on `medtrust serve` with the embedded state
# and with --state on a throwaway PostgreSQL cluster on loopback
# (tests/fixtures/pg_cluster.sh), one keep-alive client, ROUNDS rounds of
# N requests alternating between the two servers; prints the median
# milliseconds a request of each and their ratio.
# Usage: bench/state_auth.sh [MEDTRUST_BIN] (default build/medtrust).
# Env: N (2000), ROUNDS (3).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT=${1:-$ROOT/build/medtrust}
N=${N:-2000}
ROUNDS=${ROUNDS:-3}
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    bash "$ROOT/tests/fixtures/pg_cluster.sh" stop "$TMP/pg" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
URL=$(bash "$ROOT/tests/fixtures/pg_cluster.sh" start "$TMP/pg")
echo '{"id":"d1","text":"Gout causes joint pain."}' >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --embedder none \
    --no-progress >/dev/null 2>&1
echo 'bench-password' | "$MT" user add --db "$TMP/db" bench 2>/dev/null
echo 'bench-password' | "$MT" user add --state "$URL" bench 2>/dev/null

# start NAME ARGS...: a server; prints its base URL and an API token
start() {
    local name=$1 u csrf
    shift
    "$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --rate-limit 0 "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q listening "$TMP/$name.out" && break; sleep 0.1; done
    u=http://127.0.0.1:$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$TMP/$name.out")
    curl -s -c "$TMP/$name.jar" "$u/v1/login" -H "Content-Type: application/json" \
        -d '{"username":"bench","password":"bench-password"}' >"$TMP/$name.login"
    csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/$name.login")
    echo "$u $(curl -s -b "$TMP/$name.jar" -H "X-CSRF-Token: $csrf" -X POST \
        "$u/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')"
}
read -r U1 T1 <<<"$(start embedded)"
read -r U2 T2 <<<"$(start pg --state "$URL")"
python3 - "$N" "$ROUNDS" "$U1" "$T1" "$U2" "$T2" <<'PY'
import http.client, statistics, sys, time, urllib.parse
n, rounds = int(sys.argv[1]), int(sys.argv[2])
servers = [("embedded (SQLite)", sys.argv[3], sys.argv[4]),
           ("--state PostgreSQL", sys.argv[5], sys.argv[6])]
def run(url, tok):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port)
    h = {"Authorization": "Bearer " + tok}
    t0 = time.perf_counter()
    for _ in range(n):
        c.request("GET", "/v1/me", headers=h)
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
    return (time.perf_counter() - t0) * 1000 / n
ms = {name: [] for name, _, _ in servers}
for _ in range(rounds):
    for name, url, tok in servers:
        ms[name].append(run(url, tok))
med = {k: statistics.median(v) for k, v in ms.items()}
for k, v in med.items():
    print(f"{k:22s} {v:.3f} ms a request ({1000 / v:,.0f} req/s), rounds {['%.3f' % x for x in ms[k]]}")
a, b = med[servers[0][0]], med[servers[1][0]]
print(f"ratio PostgreSQL / embedded: {b / a:.2f}x")
PY
