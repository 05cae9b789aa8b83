#!/usr/bin/env bash
# import parquet against import medrag on the same rows (issue 36): N
# MedRAG-shaped chunks (default 1,000,000) written once as a Parquet file
# (hyparquet-writer, SNAPPY, row groups of 100,000) and once as MedRAG
# chunk JSONL by bench/parquet_rows.mjs, then each imported into a new
# store, niced, one chunk a row (medrag always; parquet --no-chunk), the
# index left for later (--no-index), so the import alone is timed.
#   bench/import_parquet.sh [BUILD_DIR] [WORK_DIR] [N]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build}/medtrust
W=${2:-/tmp/mt-bench-parquet}
N=${3:-1000000}
mkdir -p "$W/chunk"
if [ ! -s "$W/rows.parquet" ] || [ ! -s "$W/chunk/rows.jsonl" ]; then
    nice node --max-old-space-size=8000 "$ROOT/bench/parquet_rows.mjs" \
        "$W/rows.parquet" "$W/chunk/rows.jsonl" "$N"
fi
ls -l "$W/rows.parquet" "$W/chunk/rows.jsonl"
run() { # NAME ARGS...: one import into a new store, timed
    local name=$1
    shift
    rm -rf "$W/db-$name"
    /usr/bin/time -f "$name: %e s wall, %U s user, %M KB peak RSS" \
        nice "$BIN" import "$@" --db "$W/db-$name" --no-index --no-progress \
        --json >"$W/$name.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(sys.argv[2] + ": %d documents" % r["documents"])' "$W/$name.json" "$name"
}
run parquet parquet --no-chunk --source medrag --id-col id \
    --text-col content --title-col title "$W/rows.parquet"
run medrag medrag "$W/chunk/rows.jsonl"
