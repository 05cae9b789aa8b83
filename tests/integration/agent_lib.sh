# Helpers for the check/mediqa integration tests: starts the role-aware
# agent stub (tests/fixtures/agent_stub) on loopback. Source after lib.sh.
# MEDTRUST_AGENTS_BIN: a binary with the verbs, until main.c lists them.
MT=${MEDTRUST_AGENTS_BIN:-$MT}
STUB_BIN=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}/fixtures/agent_stub
STUB_PIDS=()
trap 'for p in "${STUB_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# stub_start NAME ARGS...: starts a stub; sets SPEC to its openai: spec.
stub_start() {
    local name=$1 port i
    shift
    "$STUB_BIN" --log "$TMP/$name.log" "$@" >"$TMP/$name.port" &
    STUB_PIDS+=($!)
    for i in $(seq 50); do
        port=$(head -1 "$TMP/$name.port" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.1
    done
    SPEC="openai:http://127.0.0.1:$port#stub"
}

# py EXPR-SCRIPT: runs python3 with the script from stdin.
py() { python3 - "$@"; }

# step_to_first_step SSE LOG HOLD CALLS0: with the stub started with
# --hold-while HOLD and HOLD made before the run, lets the run's calls
# through one at a time (a byte in HOLD each, once it arrived: LOG has a
# line a call, CALLS0 lines before the run) until SSE shows its first step
# (at most 60 s). The run then waits on a held call, however loaded the
# machine is.
step_to_first_step() {
    local _i
    for _i in $(seq 1200); do
        grep -q '^event: step' "$1" 2>/dev/null && return 0
        [ "$(stat -c %s "$3")" -lt $(($(wc -l <"$2") - $4)) ] && printf x >>"$3"
        sleep 0.05
    done
    return 1
}
