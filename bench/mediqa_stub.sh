#!/usr/bin/env bash
# Orchestration overhead of `medtrust mediqa`: all 574 MEDEC validation
# notes through the role-aware loopback stub (tests/fixtures/agent_stub),
# which answers every call after a fixed delay (200 ms), with --jobs 32,
# for each strategy. Reports wall time against the ideal (sum over notes
# of the LLM calls on each note's critical path x delay / jobs), medtrust's
# own CPU per note (retrieval over a MedQuAD BM25 index included), and
# LLM calls and tokens per note.
# Usage: bench/mediqa_stub.sh [BUILD] (default build; needs BUILD/medtrust
# with the mediqa verb, or MEDTRUST_BIN, and BUILD/fixtures/agent_stub).
set -eu
BUILD=${1:-build}
DELAY_MS=${DELAY_MS:-200}
JOBS=${JOBS:-32}
. "$(dirname "$0")/stub_lib.sh"

stub main "$DELAY_MS"
echo "indexing MedQuAD for react-reflex search() ..." >&2
"$MT" index --db "$TMP/db" --input "$DATA/medquad/corpus.jsonl" --embedder none \
    --no-progress >/dev/null 2>&1

printf '| strategy | notes | wall s | ideal s | wall/ideal | CPU ms/note | LLM calls/note | critical calls/note | prompt tok/note | completion tok/note |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for s in single guards react-reflex; do
    db=()
    [ "$s" = react-reflex ] && db=(--db "$TMP/db")
    "$MT" mediqa --llm "$SPEC" --data "$CSV" --strategy "$s" "${db[@]}" \
        --out "$TMP/$s.txt" --jobs "$JOBS" --no-progress --json \
        >"$TMP/$s.json" 2>"$TMP/$s.err"
    python3 - "$TMP/$s.json" "$s" "$DELAY_MS" "$JOBS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = r["checked"]
ideal = r["critical_calls"] * float(sys.argv[3]) / 1000 / int(sys.argv[4])
print("| %s | %d | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f | %.0f | %.0f |" % (
    sys.argv[2], n, r["wall_s"], ideal, r["wall_s"] / ideal,
    r["cpu_s"] * 1000 / n, r["llm_calls"] / n, r["critical_calls"] / n,
    r["prompt_tokens"] / n, r["completion_tokens"] / n))
PY
done
