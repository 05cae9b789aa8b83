#!/usr/bin/env bash
# Integration (issue 39, rows 1 and 2): a model server that ignores
# max_tokens (tests/fixtures/hostile_server.c: fast 64 KiB stream deltas,
# a 200 MB body, an endless stream) costs a bounded amount of memory and
# is a failed call, never an answer. For each mode: `check` (single,
# guards) and `ask` exit 1 naming max_tokens, with peak RSS under
# CLI_CEIL_KB; one POST /v1/ask on `medtrust serve` ends failed, naming
# max_tokens, with the server's peak RSS (VmHWM) under SERVE_CEIL_KB.
# Memory ceilings only, no timing thresholds. Before the budgets (main at
# f309eb5, this ASan build) a 200 MB body took `check single` to 913 MB
# and `guards` to 1,375 MB and both exited 0; the figures now are in
# docs/server.md ("Limits").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
need_verb serve ask check
unset MEDTRUST_LLM MEDTRUST_LLM_SINGLE MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE \
    MEDTRUST_NLI
export MEDTRUST_LLM_TIMEOUT=60
CLI_CEIL_KB=$((256 * 1024))
SERVE_CEIL_KB=$((320 * 1024))
HOSTILE="$(dirname "$MT")/fixtures/hostile_server"
need "the hostile model server" "$HOSTILE"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
head -50 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null
printf 'A 60-year-old man has chest pain.\nHe is given aspirin and sent home.\n' \
    >"$TMP/note.txt"

# peak CMD...: runs CMD (stdout to $TMP/out, stderr to $TMP/err); prints
# "PEAK_KB RC".
peak() {
    python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as o, open(sys.argv[2], "wb") as e:
    rc = subprocess.call(sys.argv[3:], stdout=o, stderr=e)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)' \
        "$TMP/out" "$TMP/err" "$@"
}

for mode in flood huge endless; do
    "$HOSTILE" "$mode" "$TMP/$mode.log" >"$TMP/$mode.port" &
    PIDS+=($!)
    for _ in $(seq 50); do
        [ -s "$TMP/$mode.port" ] && break
        sleep 0.1
    done
    SPEC="openai:http://127.0.0.1:$(head -1 "$TMP/$mode.port")#hostile"
    for cmd in "check --strategy single --json $TMP/note.txt" \
        "check --strategy guards --json $TMP/note.txt" \
        "ask --json What-is-aspirin-used-for"; do
        read -r kb rc <<<"$(peak "$MT" ${cmd%% *} --llm "$SPEC" --db "$TMP/db" ${cmd#* })"
        name="${cmd%% --json*}"
        if [ "$rc" = 1 ] && [ "$kb" -lt "$CLI_CEIL_KB" ] &&
            grep -q "max_tokens" "$TMP/err" && [ "$(wc -c <"$TMP/out")" -lt 65536 ]; then
            ok "$mode: $name fails naming max_tokens, exit 1, peak RSS $((kb / 1024)) MB"
        else
            not_ok "$mode: $name" "rc $rc, peak ${kb} kB (ceiling $CLI_CEIL_KB)" \
                "$(tail -2 "$TMP/err")" "stdout $(wc -c <"$TMP/out") bytes"
        fi
    done
    rm -f "$TMP/s.out"
    "$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --rate-limit 0 \
        --llm "$SPEC" >"$TMP/s.out" 2>"$TMP/s.err" &
    SP=$!
    PIDS+=($SP)
    U=$(serve_url "$TMP/s.out")
    timeout 320 python3 "$(dirname "$0")/rss_probe.py" "$U" "$SP" alice \
        alice-password >"$TMP/probe.json" 2>"$TMP/probe.err"
    if python3 - "$TMP/probe.json" "$SERVE_CEIL_KB" <<'PY'; then
import json, sys
p = json.load(open(sys.argv[1]))
assert p["status"] == "failed" and "max_tokens" in p["error"], p
assert p["events"][-1] == "done", p
assert 0 < p["hwm_kb"] < int(sys.argv[2]), p
print("# server peak RSS %d MB" % (p["hwm_kb"] // 1024))
PY
        ok "$mode: POST /v1/ask fails naming max_tokens, server peak RSS under $((SERVE_CEIL_KB / 1024)) MB"
    else
        not_ok "$mode: POST /v1/ask" "$(cat "$TMP/probe.json" "$TMP/probe.err" | head -c 400)"
    fi
    kill "$SP"
    wait "$SP" 2>/dev/null
done
