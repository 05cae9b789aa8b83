#!/usr/bin/env bash
# Runs every unit (cmocka) and integration suite against the build tree in
# $1 and ends with one "N passed, N failed" line totalling all suites.
set -u
BUILD=${1:-build/test}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export MEDTRUST_BIN="$ROOT/$BUILD/medtrust"
export MEDTRUST_BUILD="$ROOT/$BUILD"
export MEDTRUST_DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CMOCKA_MESSAGE_OUTPUT=STDOUT
# New indexes embed with USE-lite by default; under ASan that costs minutes
# on the big corpora, so tests index without vectors unless they ask for
# them with --embedder use-lite.
export MEDTRUST_EMBEDDER=${MEDTRUST_EMBEDDER:-none}
LOGDIR="$ROOT/$BUILD/test-logs"
mkdir -p "$LOGDIR"
passed=0
failed=0
failed_names=()

run_unit() {
    local bin=$1 name log p f rc
    name=$(basename "$bin")
    log="$LOGDIR/$name.log"
    "$bin" >"$log" 2>&1
    rc=$?
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' \
        "$log" | tail -1)
    p=${p:-0}
    f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or sanitizer abort before the summary
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    printf '%-40s %3d passed, %d failed\n' "$name" "$p" "$f"
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        grep -E 'FAILED|ERROR|error|Sanitizer' "$log" | head -20 | sed 's/^/    /'
    fi
}

run_integration() {
    local sh=$1 name log p f rc
    name=$(basename "$sh" .sh)
    log="$LOGDIR/$name.log"
    bash "$sh" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    printf '%-40s %3d passed, %d failed\n' "$name" "$p" "$f"
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        grep -E '^not ok|^#' "$log" | head -20 | sed 's/^/    /'
    fi
}

for bin in "$BUILD"/tests/test_*; do
    [ -x "$bin" ] && run_unit "$bin"
done
for sh in tests/integration/test_*.sh; do
    [ -f "$sh" ] && run_integration "$sh"
done

if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failing suites: ${failed_names[*]} (logs in $LOGDIR)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
