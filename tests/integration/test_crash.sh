#!/usr/bin/env bash
# Integration: SIGKILL a real `medtrust index` run in mid-flight, several
# times. Each time the store must open cleanly, pass SQLite's integrity
# check and hold exactly the batches that committed (a multiple of the batch
# size). A final re-run completes the corpus without duplicates.
. "$(dirname "$0")/lib.sh"
BATCH=100
# Five renamed copies of MedQuAD (79,045 documents) keep the run long
# enough that every kill lands while it is still writing.
for i in 1 2 3 4 5; do
    sed "s/^{\"id\": \"/{\"id\": \"c$i-/" "$DATA/medquad/corpus.jsonl"
done >"$TMP/big.jsonl"
total=$(wc -l <"$TMP/big.jsonl")

docs_of() {
    "$MT" stats --db "$1" --check --json 2>"$TMP/err" |
        sed -n 's/.*"source":"big","documents":\([0-9]*\).*/\1/p' | head -1
}

n=0
for delay in 0.3 0.8 1.6; do
    n=$((n + 1))
    "$MT" index --db "$TMP/db$n" --input "$TMP/big.jsonl" --source big \
        --batch $BATCH --no-progress >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    if ! kill -KILL $pid 2>/dev/null; then
        not_ok "kill after ${delay}s landed mid-run" "the run had ended"
        continue
    fi
    wait $pid 2>/dev/null
    docs=$(docs_of "$TMP/db$n")
    docs=${docs:-0}
    if [ -n "$docs" ] && [ $((docs % BATCH)) -eq 0 ] && [ "$docs" -lt "$total" ]; then
        ok "killed after ${delay}s: store sound, $docs documents (whole batches)"
    else
        not_ok "killed after ${delay}s: store sound, whole batches" \
            "docs=$docs" "$(cat "$TMP/err")"
    fi
done

"$MT" index --db "$TMP/db$n" --input "$TMP/big.jsonl" --source big \
    --no-progress >/dev/null 2>"$TMP/err"
docs=$(docs_of "$TMP/db$n")
if [ "$docs" = "$total" ]; then
    ok "a re-run after the kill completes all $total documents, no duplicates"
else
    not_ok "re-run completes the corpus" "docs=$docs" "$(cat "$TMP/err")"
fi
