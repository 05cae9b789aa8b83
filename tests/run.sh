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
# Suites run side by side, MEDTRUST_TEST_JOBS at a time (default: one
# per core, at least 2: most integration suites wait on servers and
# subprocesses). Each suite has its own temporary folder, loopback ports
# the kernel picks and its own PostgreSQL cluster, so none shares state
# with another. The output is the same whatever the number: the suites'
# lines come in their fixed order (units, then integration scripts, by
# name), each once its suite and those before it have ended.
JOBS=${MEDTRUST_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
if [ -z "${MEDTRUST_TEST_JOBS:-}" ]; then
    [ "$JOBS" -ge 2 ] 2>/dev/null || JOBS=2
    [ "$JOBS" -le 8 ] || JOBS=8
fi
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
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

# finish NAME LOG P F S MS EXCERPT: what a suite reports, written for the
# parent (collect) to print in order: LOG.out its lines (counts and wall
# time, skip reasons from LOG.skips, and when a test failed the log's
# lines that match the extended regex EXCERPT), then LOG.res "P F S MS".
finish() {
    local name=$1 log=$2 p=$3 f=$4 s=$5 ms=$6 excerpt=$7
    {
        printf '%-40s %3d passed, %d failed, %d skipped %7s s\n' "$name" \
            "$p" "$f" "$s" "$(secs "$ms")"
        [ -s "$log.skips" ] && sed 's/^/    skipped: /' "$log.skips"
        [ "$f" -ne 0 ] && grep -E "$excerpt" "$log" | head -20 | sed 's/^/    /'
    } >"$log.out"
    rm -f "$log.skips"
    echo "$p $f $s $ms" >"$log.res.part" && mv "$log.res.part" "$log.res"
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
    finish "$name" "$log" "$p" "$f" "$s" "$t" 'FAILED|ERROR|error|Sanitizer'
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
    finish "$name" "$log" "$p" "$f" "$s" "$t" '^not ok|^#'
}

# The suites, in the order their lines are printed: NAMES (suite names),
# RUNNERS (run_unit or run_integration) and FILES.
NAMES=()
RUNNERS=()
FILES=()
for bin in "$BUILD"/tests/test_*; do
    # shellcheck disable=SC2053 # FILTER is a pattern
    [[ $(basename "$bin") == $FILTER ]] || continue
    [ -x "$bin" ] || continue
    NAMES+=("$(basename "$bin")")
    RUNNERS+=(run_unit)
    FILES+=("$bin")
done
for sh in tests/integration/test_*.sh; do
    [[ $(basename "$sh" .sh) == $FILTER ]] || continue
    [ -f "$sh" ] || continue
    NAMES+=("$(basename "$sh" .sh)")
    RUNNERS+=(run_integration)
    FILES+=("$sh")
done
for n in "${NAMES[@]}"; do
    rm -f "$LOGDIR/$n.log.res" "$LOGDIR/$n.log.out"
done

# The order they start in: the longest first (their times in the last
# run's $LOGDIR/times, else those of SLOW below), so that no long suite
# starts last and runs alone. A guess only: it changes no result.
SLOW="test_io_faults test_fuzz test_llama_server test_batch_failures
test_server_limits test_faulty_model test_check_api test_ask_api
test_jobs_pg test_ui_browser test_kill9 test_index_cli test_http_hostile
test_python"
start_order() {
    local i n ms
    for i in "${!NAMES[@]}"; do
        n=${NAMES[$i]}
        ms=$(awk -v n="$n" '$2 == n { print $1 }' "$LOGDIR/times" 2>/dev/null)
        if [ -z "$ms" ]; then
            ms=0
            [[ " ${SLOW//$'\n'/ } " == *" $n "* ]] && ms=1000000
        fi
        echo "$ms $i"
    done | sort -k1,1rn -k2,2n -s | awk '{ print $2 }'
}

# collect: prints, in order, every suite that has ended and whose
# predecessors have, and adds its counts to the totals.
NEXT=0
collect() {
    local n log p f s ms
    while [ "$NEXT" -lt ${#NAMES[@]} ]; do
        n=${NAMES[$NEXT]}
        log="$LOGDIR/$n.log"
        [ -e "$log.res" ] || return 0
        read -r p f s ms <"$log.res"
        cat "$log.out"
        rm -f "$log.res" "$log.out"
        passed=$((passed + p))
        failed=$((failed + f))
        skipped=$((skipped + s))
        suites=$((suites + 1))
        times+=("$ms $n")
        [ "$f" -ne 0 ] && failed_names+=("$n")
        NEXT=$((NEXT + 1))
    done
}

# Each suite is a job of its own process group (set -m), its input
# /dev/null; Ctrl-C or a TERM stops every running suite with whatever it
# started, as it would stop one suite run alone.
set -m
trap 'for j in $(jobs -p); do kill -TERM -- -"$j" 2>/dev/null; done; exit 130' \
    INT TERM
for i in $(start_order); do
    while [ "$(jobs -pr | wc -l)" -ge "$JOBS" ]; do
        wait -n
        collect
    done
    "${RUNNERS[$i]}" "${FILES[$i]}" </dev/null &
done
while [ -n "$(jobs -pr)" ]; do
    wait -n
    collect
done
wait
collect
# this run's times, kept with those of suites it did not run
if [ "$suites" -gt 0 ]; then
    {
        printf '%s\n' "${times[@]}"
        [ ! -f "$LOGDIR/times" ] ||
            awk 'NR == FNR { seen[$2] = 1; next } !($2 in seen)' \
                <(printf '%s\n' "${times[@]}") "$LOGDIR/times"
    } >"$LOGDIR/times.part" && mv "$LOGDIR/times.part" "$LOGDIR/times"
fi

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
