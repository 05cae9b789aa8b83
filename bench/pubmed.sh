#!/usr/bin/env bash
# PubMed at scale: generated baseline files (bench/gen_pubmed.c, fixed
# seed) -> `medtrust import pubmed` -> store -> `medtrust index --embedder
# none` (BM25) -> `retrieval-eval` for BM25 latency. Writes
# RUN/pubmed-N.json and prints one Markdown row.
#   MEDTRUST_BENCH_PUBMED  records to generate (default 30000: one
#                          baseline file; the real baseline is ~25M+)
# Usage: bench/pubmed.sh RUNDIR   (BUILD, MEDTRUST_DATA as in bench/run)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
B=$BUILD/bench
MT=$BUILD/medtrust
DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
N=${MEDTRUST_BENCH_PUBMED:-30000}
RUN=${1:-$B/results/pubmed-$(date +%Y%m%d-%H%M%S)}
SRC=$B/pubmed/src-$N
DB=$B/pubmed/db-$N
mkdir -p "$RUN" "$B/pubmed"
log() { printf 'bench pubmed: %s\n' "$*" >&2; }

if [ ! -f "$SRC/.stamp" ]; then
    log "generating $N records into $SRC"
    rm -rf "$SRC"
    "$B/gen_pubmed" "$DATA/pubmedqa/corpus.jsonl" "$N" "$SRC"
    touch "$SRC/.stamp"
fi
rm -rf "$DB"
log "import pubmed ($(ls "$SRC"/*.xml.gz | wc -l) files)"
/usr/bin/time -v -o "$RUN/pubmed-$N.import.time" \
    "$MT" import pubmed --db "$DB" --json --no-progress "$SRC"/*.xml.gz \
    >"$RUN/pubmed-$N.import.json"
log "index (BM25, embedder none)"
/usr/bin/time -v -o "$RUN/pubmed-$N.index.time" \
    "$MT" index --db "$DB" --embedder none --no-progress \
    >"$RUN/pubmed-$N.index.txt"
log "BM25 latency"
"$MT" retrieval-eval --db "$DB" --queries "$SRC/queries.jsonl" --jobs 1 \
    --json 2>/dev/null >"$RUN/pubmed-$N.eval.json"
du -sb "$DB/store.db" | cut -f1 >"$RUN/pubmed-$N.store_bytes"
du -sb "$DB/index" | cut -f1 >"$RUN/pubmed-$N.index_bytes"
du -sbL "$SRC" | cut -f1 >"$RUN/pubmed-$N.input_bytes"
python3 - "$RUN" "$N" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY' | tee "$RUN/pubmed-$N.md"
import json, re, sys
run, n, load = sys.argv[1], sys.argv[2], sys.argv[3]
def tv(path):
    t = open(path).read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1)
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    cpu = float(re.search(r"User time.*: (\S+)", t).group(1)) + \
        float(re.search(r"System time.*: (\S+)", t).group(1))
    rss = int(re.search(r"Maximum resident set size.*: (\d+)", t).group(1))
    return secs, cpu, rss
p = f"{run}/pubmed-{n}"
imp = json.load(open(p + ".import.json"))
ev = json.load(open(p + ".eval.json"))
iw, ic, ir = tv(p + ".import.time")
xw, xc, xr = tv(p + ".index.time")
chunks = imp["chunks"]
r = {
    "records": imp["records"], "documents": imp["documents"],
    "chunks": chunks, "import_wall_s": iw, "import_cpu_s": ic,
    "import_records_per_s_wall": imp["records"] / iw,
    "import_records_per_s_cpu": imp["records"] / ic,
    "index_wall_s": xw, "index_cpu_s": xc,
    "index_chunks_per_s_wall": chunks / xw,
    "index_chunks_per_s_cpu": chunks / xc,
    "peak_rss_mb": max(ir, xr) / 1024,
    "input_gz_mb": int(open(p + ".input_bytes").read()) / 1e6,
    "store_mb": int(open(p + ".store_bytes").read()) / 1e6,
    "index_mb": int(open(p + ".index_bytes").read()) / 1e6,
    "bm25_p50_ms": ev["latency_ms"]["p50"], "bm25_p95_ms": ev["latency_ms"]["p95"],
    "recall@10": ev["recall"], "queries": ev["queries"], "load": load,
}
json.dump(r, open(p + ".json", "w"), indent=1)
print("| records | docs | chunks | import rec/s wall (cpu) | index chunks/s wall (cpu) | peak RSS MB | input .gz MB | store MB | index MB | BM25 p50 / p95 ms | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print(f"| {r['records']:,} | {r['documents']:,} | {chunks:,} | "
      f"{r['import_records_per_s_wall']:,.0f} ({r['import_records_per_s_cpu']:,.0f}) | "
      f"{r['index_chunks_per_s_wall']:,.0f} ({r['index_chunks_per_s_cpu']:,.0f}) | "
      f"{r['peak_rss_mb']:.0f} | {r['input_gz_mb']:.0f} | {r['store_mb']:.0f} | "
      f"{r['index_mb']:.0f} | {r['bm25_p50_ms']:.2f} / {r['bm25_p95_ms']:.2f} | {load} |")
PY
