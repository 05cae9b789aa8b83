#!/usr/bin/env bash
# Runs every unit (cmocka) and integration suite against the build tree in
# $1 and ends with one "N passed, N failed, N skipped" line totalling all
# suites; each skipped test is listed with its reason. Each suite's line
# ends with its wall time, and a run of several suites lists the slowest
# before the total line. An optional second
# argument, a shell pattern (extglob), runs only the suites whose name
# matches it:
#   bash tests/run.sh build/test 'test_vec*'
#   bash tests/run.sh build/test '@(test_hnsw|test_search)'
set -u
shopt -s extglob
BUILD=${1:-build/test}
FILTER=${2:-*}
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
# python3 through a version manager's shim (pyenv: a bash script that runs
# `pyenv exec`) costs 0.1-0.3 s a call before Python starts, and the
# suites call it some thousand times: the same interpreter's own folder
# goes first on PATH instead (as `pyenv exec` itself does).
PYDIR=$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' \
    2>/dev/null)
if [ -n "$PYDIR" ] && [ -x "$PYDIR/python3" ] &&
    [ "$(command -v python3)" != "$PYDIR/python3" ]; then
    export PATH="$PYDIR:$PATH"
fi
LOGDIR="$ROOT/$BUILD/test-logs"
mkdir -p "$LOGDIR"
passed=0
failed=0
skipped=0
suites=0
failed_names=()

# now_ms: the wall clock in milliseconds (the suites' times).
now_ms() { date +%s%3N; }
# secs MS: MS milliseconds as seconds with one decimal.
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
times=() # "MS NAME" per suite, for the slowest-suites summary
T0=$(now_ms)

# report NAME P F S LOG MS: adds a suite's counts to the totals and prints
# its line with its wall time; the skip reasons come from "$LOG.skips"
# (one per line).
report() {
    local name=$1 p=$2 f=$3 s=$4 log=$5 ms=$6
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    suites=$((suites + 1))
    times+=("$ms $name")
    printf '%-40s %3d passed, %d failed, %d skipped %7s s\n' "$name" "$p" \
        "$f" "$s" "$(secs "$ms")"
    [ -s "$log.skips" ] && sed 's/^/    skipped: /' "$log.skips"
    rm -f "$log.skips"
}

# cmocka: a test that calls SKIP_BECAUSE (tests/unit/check.h) prints
# "# SKIP why" between its "[ RUN ]" and "[ SKIPPED ]" lines.
cmocka_skips() {
    awk '
        /^\[ RUN      \] / { cur = $4; why = "" }
        /^# SKIP / { why = substr($0, 8) }
        /^\[  SKIPPED \] / && $4 == cur && $5 == "" {
            print cur ": " (why == "" ? "no reason given" : why)
        }' "$1"
}

run_unit() {
    local bin=$1 name log p f s rc t
    name=$(basename "$bin")
    log="$LOGDIR/$name.log"
    t=$(now_ms)
    "$bin" >"$log" 2>&1
    rc=$?
    t=$(($(now_ms) - t))
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' \
        "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' \
        "$log" | tail -1)
    p=${p:-0}
    f=${f:-0}
    s=${s:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or sanitizer abort before the summary
    fi
    cmocka_skips "$log" >"$log.skips"
    report "$name" "$p" "$f" "$s" "$log" "$t"
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        grep -E 'FAILED|ERROR|error|Sanitizer' "$log" | head -20 | sed 's/^/    /'
    fi
}

# Integration scripts print TAP lines: "ok - name", "not ok - name", and
# "ok - name # SKIP why" (tests/integration/lib.sh skip) for a skip.
run_integration() {
    local sh=$1 name log p f s rc t
    name=$(basename "$sh" .sh)
    log="$LOGDIR/$name.log"
    t=$(now_ms)
    bash "$sh" >"$log" 2>&1
    rc=$?
    t=$(($(now_ms) - t))
    s=$(grep -c '^ok .* # SKIP' "$log")
    p=$(($(grep -c '^ok ' "$log") - s))
    f=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    sed -n 's/^ok - \(.*\) # SKIP \(.*\)$/\1: \2/p' "$log" >"$log.skips"
    report "$name" "$p" "$f" "$s" "$log" "$t"
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        grep -E '^not ok|^#' "$log" | head -20 | sed 's/^/    /'
    fi
}

for bin in "$BUILD"/tests/test_*; do
    # shellcheck disable=SC2053 # FILTER is a pattern
    [[ $(basename "$bin") == $FILTER ]] || continue
    [ -x "$bin" ] && run_unit "$bin"
done
for sh in tests/integration/test_*.sh; do
    [[ $(basename "$sh" .sh) == $FILTER ]] || continue
    [ -f "$sh" ] && run_integration "$sh"
done

if [ "$suites" -eq 0 ]; then
    echo "no suite matches '$FILTER'"
    failed=1
fi
# the slowest suites and the whole run's wall time
if [ "$suites" -gt 1 ]; then
    echo "slowest suites (of $suites, $(secs $(($(now_ms) - T0))) s in all):"
    printf '%s\n' "${times[@]}" | sort -rn | head -10 |
        while read -r ms n; do printf '  %7s s  %s\n' "$(secs "$ms")" "$n"; done
fi
if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failing suites: ${failed_names[*]} (logs in $LOGDIR)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
