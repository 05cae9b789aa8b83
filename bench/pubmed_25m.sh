#!/usr/bin/env bash
# The 25M hybrid run (issue 37) in resumable parts: bench/pubmed.sh
# imports 25M generated records in batches of 20 files (the input deleted
# batch by batch), builds the BM25-only index (--segment-mb 4096, as
# sessions 6-7) and measures BM25; then bench/pubmed_hybrid.sh builds a
# new index of BM25 + generated int8r2 vectors in one pass (--segment-mb
# 8192) and measures BM25 / dense / hybrid latency. Rerunning the same
# command resumes: the import after its last whole batch, each index
# after its last saved segment, the latencies after the last one written.
# Both stop (exit 3, resumable) rather than leave under
# MEDTRUST_BENCH_MIN_FREE_GB (default 12) free on DIR's filesystem; the
# BM25-only index is skipped when it is what would not fit, and a paused
# phase 2 measures the latencies of the index so far.
#
# Every part (each start of this script) is logged to DIR/driver.log with
# /usr/bin/time -v of each phase (DIR/parts/PHASE.START.time: wall, CPU,
# peak RSS of its processes), and DIR/monitor.log gets, every
# MEDTRUST_BENCH_MONITOR_S seconds (default 300), the load, free disk,
# the store's and indexes' sizes and the running medtrust's CPU seconds
# and RSS, so a part cut off by the machine going away still has its
# figures up to its last line.
#
#   DIR/build: the binaries, kept for the whole run (medtrust, lib/,
#   use-lite.mtw, bench/gen_pubmed; a release build of one commit,
#   DIR/BINARY_COMMIT)
#   setsid nice -n 19 ionice -c3 bash bench/pubmed_25m.sh DIR \
#       >>DIR/driver.log 2>&1 </dev/null &
set -u
DIR=$(cd "${1:?usage: bench/pubmed_25m.sh DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export MEDTRUST_DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
export BUILD=${BUILD:-$DIR/build}
export MEDTRUST_BENCH_PUBMED=${MEDTRUST_BENCH_PUBMED:-25000000}
export MEDTRUST_BENCH_MIN_FREE_GB=${MEDTRUST_BENCH_MIN_FREE_GB:-12}
MON=${MEDTRUST_BENCH_MONITOR_S:-300}
N=$MEDTRUST_BENCH_PUBMED
START=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$DIR/parts"
say() { printf '== %s %s\n' "$(date -u +%FT%TZ)" "$*"; }

# One line of figures: load, free GiB, store and index sizes, and per
# running process of the run (medtrust, gen_pubmed, the vector
# generator) its CPU seconds (user+sys), RSS and peak RSS.
monitor_line() {
    local p procs="" t rss hwm
    for p in $(pgrep -s 0 -x 'medtrust|gen_pubmed|python3' 2>/dev/null || true); do
        t=$(awk '{ printf "%.0f", ($14 + $15) / 100 }' "/proc/$p/stat" 2>/dev/null) || continue
        rss=$(awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$p/status" 2>/dev/null)
        hwm=$(awk '/^VmHWM/ { print int($2 / 1024) }' "/proc/$p/status" 2>/dev/null)
        procs="$procs [pid $p $(cat "/proc/$p/comm") $(tr '\0' ' ' <"/proc/$p/cmdline" | awk '{ print $2 }') cpu ${t}s rss ${rss}MB peak ${hwm}MB]"
    done
    printf '%s load %s free %sG store %s index %s%s\n' "$(date -u +%FT%TZ)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" \
        "$(df -Pk "$DIR" | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }')" \
        "$(du -sh "$DIR/db/store.db" 2>/dev/null | cut -f1)" \
        "$(du -sh "$DIR/db/index" 2>/dev/null | cut -f1)" "$procs"
}
monitor() {
    while kill -0 "$1" 2>/dev/null; do
        monitor_line >>"$DIR/monitor.log"
        sleep "$MON"
    done
}
monitor $$ &
MPID=$!
trap 'kill $MPID 2>/dev/null' EXIT

say "part $START: pid $$, binary $(cat "$DIR/BINARY_COMMIT" 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -f "$DIR/run/pubmed-$N.json" ]; then
    say "phase 1: import in batches, BM25 index, BM25 latency"
    MEDTRUST_BENCH_PUBMED_BATCH=20 MEDTRUST_BENCH_PUBMED_AHEAD=2 \
        MEDTRUST_BENCH_SEGMENT_MB=4096 MEDTRUST_BENCH_PUBMED_DB=$DIR/db \
        /usr/bin/time -v -o "$DIR/parts/phase1.$START.time" \
        bash "$ROOT/bench/pubmed.sh" "$DIR/run"
    rc=$?
    say "phase 1 ended: exit $rc"
    # Exit 3, the disk guard: if it was the BM25-only index that would
    # not fit (the import whole), go on without it (its build time and
    # latency at 25M are session 7's); a batch that would not fit stops
    # here again.
    if [ "$rc" = 3 ]; then
        say "phase 1 again without the BM25-only index"
        MEDTRUST_BENCH_PUBMED_BATCH=20 MEDTRUST_BENCH_PUBMED_AHEAD=2 \
            MEDTRUST_BENCH_PUBMED_INDEX=0 MEDTRUST_BENCH_PUBMED_DB=$DIR/db \
            /usr/bin/time -v -o "$DIR/parts/phase1-noindex.$START.time" \
            bash "$ROOT/bench/pubmed.sh" "$DIR/run"
        rc=$?
        say "phase 1 (no index) ended: exit $rc"
    fi
    [ "$rc" = 0 ] || exit "$rc"
fi
if [ ! -f "$DIR/hybrid/hybrid-$N.json" ]; then
    say "phase 2: BM25 + int8r2 vectors in one pass, latencies"
    MEDTRUST_BENCH_HYBRID_DB=$DIR/db \
        MEDTRUST_BENCH_HYBRID_QUERIES=$DIR/run/queries.jsonl \
        MEDTRUST_BENCH_VECTORS=int8r2 MEDTRUST_BENCH_SEGMENT_MB=8192 \
        /usr/bin/time -v -o "$DIR/parts/phase2.$START.time" \
        bash "$ROOT/bench/pubmed_hybrid.sh" "$DIR/hybrid"
    rc=$?
    say "phase 2 ended: exit $rc"
    [ "$rc" = 0 ] || exit "$rc"
fi
monitor_line >>"$DIR/monitor.log"
say "done: $DIR/run/pubmed-$N.md, $DIR/hybrid/hybrid-$N.md"
