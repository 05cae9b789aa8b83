#!/usr/bin/env bash
# Runs each libFuzzer target that `make fuzz` built (build/fuzz/fuzzers,
# or $MEDTRUST_FUZZ_BUILD) for a few seconds ($MEDTRUST_FUZZ_SECONDS,
# default 5) on its seed corpus: tests/fuzz/http_seeds for the HTTP
# harness, files the vector and segment harnesses write themselves, the
# format samples' XML for the XML scanner's. One
# test per target: it passes when the run ends without a crash, leak,
# sanitizer report or timeout and executed at least one input.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=${MEDTRUST_FUZZ_BUILD:-$ROOT/build/fuzz}/fuzzers
SECS=${MEDTRUST_FUZZ_SECONDS:-5}
LOGS=${MEDTRUST_BUILD:-$ROOT/build/test}/test-logs
TARGETS=$(cd "$ROOT/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
for t in $TARGETS; do
    need "$t built by make fuzz" "$F/$t"
done

# seed_corpus TARGET DIR: fills DIR with the target's seeds.
seed_corpus() {
    case $1 in
    fuzz_http) cp "$ROOT"/tests/fuzz/http_seeds/* "$2/" ;;
    fuzz_http_wire) cp "$ROOT"/tests/fuzz/http_wire_seeds/* "$2/" ;;
    fuzz_vec) FUZZ_VEC_SEED=$2 "$F/$1" -runs=0 "$2" >/dev/null 2>&1 ;;
    fuzz_segment) FUZZ_SEGMENT_SEED=$2 "$F/$1" -runs=0 "$2" >/dev/null 2>&1 ;;
    fuzz_xml) # MedQuAD's folders share file names: name each by its path
        for s in "$DATA"/formats/pubmed/*.xml "$DATA"/formats/medquad/*/*.xml \
            "$DATA"/formats/pmc/efetch_pmc.xml; do
            cp "$s" "$2/$(echo "${s#"$DATA"/formats/}" | tr / _)"
        done ;;
    esac
}

for t in $TARGETS; do
    c=$TMP/$t.corpus
    mkdir -p "$c"
    seed_corpus "$t" "$c"
    n=$(ls "$c" | wc -l)
    # -detect_leaks stays on (ASan); artifacts land in $TMP, not the tree.
    (cd "$TMP" && timeout $((SECS + 60)) "$F/$t" -max_total_time="$SECS" \
        -max_len=65536 -timeout=20 -artifact_prefix="$TMP/$t-" "$c") \
        >"$TMP/$t.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$TMP/$t.log" | tail -1)
    if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ "${runs:-0}" -gt 0 ]; then
        ok "$t: ${runs} inputs in ${SECS} s from $n seeds, no finding"
    else
        mkdir -p "$LOGS" && cp "$TMP/$t".log "$TMP/$t"-* "$LOGS/" 2>/dev/null
        not_ok "$t" "rc=$rc, $n seeds, ${runs:-no} runs (log and input in $LOGS)" \
            "$(grep -E 'ERROR|SUMMARY' "$TMP/$t.log" | head -4)"
    fi
done
