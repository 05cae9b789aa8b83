#!/usr/bin/env bash
# scripts/demo (what `make demo` runs after the build) with only part of
# its data: PubMedQA in $MEDTRUST_DATA, MedQuAD absent and its download
# failing (an unreachable mirror). It tries scripts/fetch-data, goes on
# with PubMedQA, says MedQuAD is missing, indexes and evaluates what is
# there and serves the web UI; SIGTERM stops it.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/data
mkdir -p "$D/pubmedqa"
cp "$DATA/pubmedqa/corpus.jsonl" "$DATA/pubmedqa/queries-dev.jsonl" "$D/pubmedqa/"
MEDTRUST_DATA=$D MEDTRUST_DATA_MIRROR=http://127.0.0.1:1 MEDTRUST_BIN=$MT \
    MEDTRUST_DEMO_DB=$TMP/db setsid bash "$ROOT/scripts/demo" \
    >"$TMP/demo.out" 2>&1 &
demo=$!
trap 'kill -TERM -- -$demo 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1200); do
    grep -q 'medtrust is serving' "$TMP/demo.out" && break
    kill -0 $demo 2>/dev/null || break
    sleep 0.5
done
url=$(sed -n 's/^  URL: *//p' "$TMP/demo.out")
if [ -n "$url" ] && curl -fsS "$url" >/dev/null 2>&1; then
    ok "demo: serves the web UI with PubMedQA alone"
else
    not_ok "demo: serving with part of its data" "$(tail -15 "$TMP/demo.out")"
fi
kill -TERM $demo 2>/dev/null
wait $demo
rc=$?
O=$TMP/demo.out
if grep -q "corpora missing under $D: fetching them" "$O" &&
    grep -q "fetch-data:   medquad      failed   cannot reach http://127.0.0.1:1/" "$O" &&
    grep -q "fetch-data:   pubmedqa     skipped  (not asked for)" "$O" &&
    grep -q "missing under $D: medquad: the demo runs without it" "$O" &&
    grep -q "indexing pubmedqa into $TMP/db" "$O" &&
    grep -q "retrieval quality on the 500 pubmedqa dev questions" "$O"; then
    ok "demo: tries fetch-data, says MedQuAD is missing, indexes and evaluates PubMedQA"
else
    not_ok "demo: what it says" "$(head -30 "$O")"
fi
if [ $rc -eq 0 ] && grep -q 'stopping the server' "$O"; then
    ok "demo: SIGTERM stops it cleanly"
else
    not_ok "demo: stop" "rc=$rc" "$(tail -5 "$O")"
fi

# Neither corpus and no network: it says what to do and exits 1.
mkdir -p "$TMP/none"
MEDTRUST_DATA=$TMP/none MEDTRUST_DATA_MIRROR=http://127.0.0.1:1 MEDTRUST_BIN=$MT \
    MEDTRUST_DEMO_DB=$TMP/db2 bash "$ROOT/scripts/demo" >"$O" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "no corpora under $TMP/none" "$O" &&
    grep -q "Run scripts/fetch-data --into $TMP/none" "$O"; then
    ok "demo: with no corpus at all it exits 1 saying what to do"
else
    not_ok "demo: no corpus" "rc=$rc" "$(tail -5 "$O")"
fi
