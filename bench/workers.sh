#!/usr/bin/env bash
# Throughput of the mediqa job queue (issue 19): MEDEC validation notes
# (all 574 unless NOTES) queued in a throwaway PostgreSQL cluster
# (tests/fixtures/pg_cluster.sh) and checked by 1, 2 and 4 `medtrust
# worker --drain` processes (--jobs JOBS each, strategy single: one model
# call per note) against the role-aware loopback stub answering every call
# after a fixed DELAY_MS. The ideal is workers x JOBS / delay notes/s, as
# long as the model takes that many calls at once (the stub does). Queue
# overhead per job: the wall time one worker (--jobs 1, a stub with no
# delay) spends in its claim, finish and heartbeat statements, divided by
# its jobs, as the worker reports it; and the enqueue time per note. The
# test fixture's cluster runs with fsync off; this script turns fsync and
# full_page_writes back on (ALTER SYSTEM, reload), so every commit waits
# for its WAL flush as on a production server.
# Usage: bench/workers.sh [BUILD] [OUTDIR] (default build; the table is
# printed and, with OUTDIR, written to OUTDIR/workers.md).
set -eu
BUILD=${1:-build}
OUT=${2:-}
DELAY_MS=${DELAY_MS:-100}
JOBS=${JOBS:-8}
NOTES=${NOTES:-574}
bench_cleanup() { bash tests/fixtures/pg_cluster.sh stop "$TMP/pg" >/dev/null 2>&1; }
. "$(dirname "$0")/stub_lib.sh"

URL=$(bash tests/fixtures/pg_cluster.sh start "$TMP/pg")
psql "$URL" -XAtq -c "ALTER SYSTEM SET fsync = on" \
    -c "ALTER SYSTEM SET full_page_writes = on" -c "SELECT pg_reload_conf()" \
    >/dev/null
now() { date +%s.%N; }
# drain W J: queues the notes, runs W workers with J jobs each until the
# queue is empty; prints the seconds from the first worker's start.
drain() {
    local w=$1 j=$2 i t0 t1 run p wp=()
    t0=$(now)
    run=$("$MT" mediqa --state "$URL" --enqueue --data "$CSV" \
        --limit "$NOTES" --strategy single --llm "$SPEC" 2>/dev/null)
    t1=$(now)
    python3 -c "print('%.3f' % ($t1 - $t0))" >"$TMP/enqueue.s"
    : >"$TMP/workers.err"
    t0=$(now)
    for i in $(seq "$w"); do
        "$MT" worker --state "$URL" --run "$run" --drain --jobs "$j" \
            --no-progress 2>>"$TMP/workers.err" &
        wp+=($!)
    done
    for p in "${wp[@]}"; do
        wait "$p"
    done
    t1=$(now)
    "$MT" mediqa --state "$URL" --collect "$run" --out "$TMP/run$run.txt" \
        --no-wait --no-progress 2>/dev/null
    [ "$(wc -l <"$TMP/run$run.txt")" -eq "$NOTES" ] || {
        tail -5 "$TMP/workers.err" >&2
        echo "workers.sh: run $run is short" >&2
        exit 1
    }
    python3 -c "print('%.3f' % ($t1 - $t0))"
}

stub slow "$DELAY_MS"
table="| workers | jobs each | notes | wall s | notes/s | ideal notes/s | of ideal |
|---|---|---|---|---|---|---|"
for w in 1 2 4; do
    s=$(drain "$w" "$JOBS")
    table="$table
$(python3 -c "
w, j, n, s, d = $w, $JOBS, $NOTES, $s, $DELAY_MS
ideal = w * j * 1000.0 / d
print('| %d | %d | %d | %.2f | %.1f | %.1f | %.2f |' % (w, j, n, s, n / s, ideal, n / s / ideal))")"
done

stub fast 0
q=$(drain 1 1)
per=$(sed -n 's/.* \([0-9.]*\) ms a job in queue calls.*/\1/p' "$TMP/workers.err")
enq=$(python3 -c "print('%.3f' % ($(cat "$TMP/enqueue.s") * 1000 / $NOTES))")
report="$table

Queue overhead per job: ${per} ms in the claim, finish and heartbeat
statements (one worker, --jobs 1, stub without delay: $NOTES notes in
${q} s); enqueue ${enq} ms per note. PostgreSQL 15 on loopback, fsync on.
Stub delay ${DELAY_MS} ms; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "$report"
[ -n "$OUT" ] && echo "$report" >"$OUT/workers.md"
exit 0
