#!/usr/bin/env bash
# The worker heartbeat's progress read (issue 19): before, a count query
# over every job row once a second per worker (mtx_queue_counts); now one
# statement that extends the worker's leases and reads done/total from the
# run rows (mtx_queue_beat). Both statements are run against a throwaway
# PostgreSQL cluster (tests/fixtures/pg_cluster.sh) holding RUNS runs of
# JOBS jobs each, half of them done, and timed by EXPLAIN (ANALYZE,
# BUFFERS): execution time and shared buffers touched, the median of 20.
#   bash bench/queue_beat.sh BUILD [RUNS] [JOBS]
set -euo pipefail
BUILD=${1:?usage: queue_beat.sh BUILD [RUNS] [JOBS]}
RUNS=${2:-20}
JOBS=${3:-10000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT="$ROOT/$BUILD/medtrust"
TMP=$(mktemp -d)
trap 'bash "$ROOT/tests/fixtures/pg_cluster.sh" stop "$TMP/pg" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
URL=$(bash "$ROOT/tests/fixtures/pg_cluster.sh" start "$TMP/pg")
# the queue's tables, as a worker migrates them
"$MT" worker --state "$URL" --drain --no-progress >/dev/null 2>&1
psql -Atq "$URL" >/dev/null <<SQL
INSERT INTO queue_runs (token, kind, options, total)
  SELECT 'bench-' || r, 'mediqa', '{}', $JOBS FROM generate_series(1, $RUNS) r;
INSERT INTO queue_jobs (run_id, seq, payload, state, attempt, finished)
  SELECT r.id, s, '{"id":"n' || s || '","text":"x"}',
         CASE WHEN s % 2 = 0 THEN 'done' ELSE 'queued' END,
         CASE WHEN s % 2 = 0 THEN 1 ELSE 0 END,
         CASE WHEN s % 2 = 0 THEN now() END
  FROM queue_runs r, generate_series(0, $JOBS - 1) s;
UPDATE queue_runs r SET done = (SELECT count(*) FROM queue_jobs j
  WHERE j.run_id = r.id AND j.state = 'done');
ANALYZE;
SQL
old="SELECT count(*), count(*) FILTER (WHERE state = 'queued'),
 count(*) FILTER (WHERE state = 'running'),
 count(*) FILTER (WHERE state = 'done'),
 count(*) FILTER (WHERE state = 'done' AND failed),
 coalesce(sum(greatest(attempt - 1, 0)), 0)
 FROM queue_jobs WHERE (0 = 0 OR run_id = 0)
 AND ('{mediqa}'::text[] IS NULL OR run_id IN (SELECT id FROM queue_runs
  WHERE kind = ANY('{mediqa}'::text[])))"
new="WITH hb AS (UPDATE queue_jobs SET
  lease_until = now() + make_interval(secs => 30)
  WHERE id = ANY('{1,2,3,4,5,6,7,8}'::bigint[]) AND worker = 'w'
  AND state = 'running' RETURNING 1)
 SELECT (SELECT count(*) FROM hb), coalesce(sum(total), 0),
 coalesce(sum(done), 0) FROM queue_runs
 WHERE (0 = 0 OR id = 0) AND ('{mediqa}'::text[] IS NULL
 OR kind = ANY('{mediqa}'::text[]))"
# measure NAME SQL: "median-ms median-buffers" over 20 runs
measure() {
    for _ in $(seq 20); do
        psql -Atq "$URL" -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $2" |
            python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; b=p["Plan"]; print(p["Execution Time"], b.get("Shared Hit Blocks",0)+b.get("Shared Read Blocks",0))'
    done | sort -n | awk '{ t[NR]=$1; b[NR]=$2 } END { printf "%.3f %d\n", t[int((NR+1)/2)], b[int((NR+1)/2)] }'
}
read -r ot ob <<<"$(measure old "$old")"
read -r nt nb <<<"$(measure new "$new")"
echo "job rows: $((RUNS * JOBS)) in $RUNS runs (load $(cut -d' ' -f1 /proc/loadavg))"
echo "count query (before): $ot ms, $ob buffers"
echo "beat statement (now): $nt ms, $nb buffers"
python3 -c "import sys; print('ratio: %.0fx the time' % (float(sys.argv[1]) / float(sys.argv[2])))" "$ot" "$nt"
