# Set-up shared by the benches that check MEDEC notes against the
# role-aware loopback stub (tests/fixtures/agent_stub): bench/mediqa_stub.sh
# and bench/workers.sh. Source it after setting BUILD; it sets ROOT (and
# cd's there), MT, STUB, DATA, CSV (the 574 MEDEC validation notes) and
# TMP (removed on exit, after every started stub is killed and
# bench_cleanup, when the script defines it, has run).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MT=${MEDTRUST_BIN:-$BUILD/medtrust}
STUB=$BUILD/fixtures/agent_stub
DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
CSV=$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv
TMP=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
      declare -F bench_cleanup >/dev/null && bench_cleanup
      rm -rf "$TMP"' EXIT
unset MEDTRUST_LLM MEDTRUST_STATE

# stub NAME DELAY_MS: starts a stub answering every call after DELAY_MS and
# waits for its port (5 s at most); sets SPEC to its openai: spec.
stub() {
    local i port=
    "$STUB" --delay "$2" >"$TMP/$1.port" &
    PIDS+=($!)
    for i in $(seq 50); do
        port=$(head -1 "$TMP/$1.port" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "${0##*/}: the stub did not start" >&2; exit 1; }
    SPEC="openai:http://127.0.0.1:$port#stub"
}
