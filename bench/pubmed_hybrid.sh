#!/usr/bin/env bash
# PubMed hybrid, end to end (issue 37): generated baseline files
# (bench/gen_pubmed.c, as bench/pubmed.sh) -> `import pubmed` -> a BM25
# build (`index --embedder none`, for its time), then a new index of BM25
# + generated clustered vectors of 256 dimensions for every chunk (Debian
# python3-numpy, fixed seed, float16 .npy + ids streamed through named
# pipes, never on disk) with `index --embedder use-lite --dims 256
# --vectors-from FIFO` (queries are embedded by USE-lite truncated to
# 256: the latency is real, the relevance of dense hits over generated
# vectors is not), then BM25, dense and hybrid latency (retrieval-eval,
# p50/p95/p99) at 1 and 2 query threads, with sizes, peak RSS and the
# machine's load. Writes RUN/hybrid-N.{json,md}.
#
#   BUILD=build MEDTRUST_BENCH_PUBMED=30000 bash bench/pubmed_hybrid.sh RUN
#   MEDTRUST_BENCH_CLUSTERS  centres of the generated vectors (default 1000)
#   MEDTRUST_BENCH_HNSW_MIN  index --hnsw-min (default the index's: 100000)
#   MEDTRUST_BENCH_SEGMENT_MB index --segment-mb (default the index's: 2048)
#   MEDTRUST_BENCH_HYBRID_BM25=0    skip the BM25-only build
#   MEDTRUST_BENCH_HYBRID_RESUME=1  continue a killed vector build (same RUN)
#   MEDTRUST_BENCH_HYBRID_DB=DIR  a store bench/pubmed.sh imported already
#                            (in batches: at 25M the input does not fit
#                            the disk beside the store); no generation or
#                            import, its old index is replaced
#   MEDTRUST_BENCH_HYBRID_QUERIES=FILE  the queries (default SRC's; with
#                            HYBRID_DB, pubmed.sh's RUN/queries.jsonl)
#   MEDTRUST_BENCH_VECTORS   index --vectors (default the index's, int8r;
#                            the 25M run needs int8r2 to fit the disk)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
B=$BUILD/bench
MT=${MEDTRUST_BENCH_MT:-$BUILD/medtrust}
DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
N=${MEDTRUST_BENCH_PUBMED:-30000}
K=${MEDTRUST_BENCH_CLUSTERS:-1000}
RUN=${1:-$B/results/hybrid-$(date +%Y%m%d-%H%M%S)}
SRC=$B/pubmed/src-$N
DB=${MEDTRUST_BENCH_HYBRID_DB:-$B/pubmed/hybrid-$N}
QUERIES=${MEDTRUST_BENCH_HYBRID_QUERIES:-$SRC/queries.jsonl}
P=$RUN/hybrid-$N
PY=/usr/bin/python3 # Debian's, with python3-numpy
mkdir -p "$RUN" "$B/pubmed"
log() { printf 'bench hybrid: %s: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
tv() { /usr/bin/time -v -o "$1.time" "${@:2}"; }

[ -x "$B/gen_pubmed" ] || { log "make $B/gen_pubmed first"; exit 2; }
if [ -n "${MEDTRUST_BENCH_HYBRID_DB:-}" ]; then
    [ -f "$DB/store.db" ] || { log "no store at $DB"; exit 2; }
    MEDTRUST_BENCH_HYBRID_RESUME=${MEDTRUST_BENCH_HYBRID_RESUME:-0}
    MEDTRUST_BENCH_HYBRID_BM25=0
    SKIP_IMPORT=1
elif [ ! -f "$SRC/.stamp" ]; then
    log "generating $N records into $SRC"
    rm -rf "$SRC"
    "$B/gen_pubmed" "$DATA/pubmedqa/corpus.jsonl" "$N" "$SRC"
    touch "$SRC/.stamp"
fi
if [ "${MEDTRUST_BENCH_HYBRID_RESUME:-0}" != 1 ] && [ -z "${SKIP_IMPORT:-}" ]; then
    rm -rf "$DB"
    log "import pubmed"
    tv "$P.import" "$MT" import pubmed --db "$DB" --json --no-progress \
        --no-index "$SRC"/*.xml.gz >"$P.import.json"
    # The BM25 build alone, for its time (MEDTRUST_BENCH_HYBRID_BM25=0
    # skips it: at 25M it is the session-7 run's 28 minutes again).
    if [ "${MEDTRUST_BENCH_HYBRID_BM25:-1}" = 1 ]; then
        log "BM25 build"
        tv "$P.bm25" "$MT" index --db "$DB" --embedder none --no-progress \
            ${MEDTRUST_BENCH_SEGMENT_MB:+--segment-mb "$MEDTRUST_BENCH_SEGMENT_MB"} \
            >/dev/null
    fi
fi
# The vectors never touch the disk: a generator writes them into two
# named pipes (the .npy first, then its ids, as index --vectors-from reads
# them), in chunk id order, and the build reads them once, front to back.
# The vector build is a new index (BM25 + vectors in one pass, not
# --rebuild), so a killed build, run again (MEDTRUST_BENCH_HYBRID_RESUME=1
# with the same RUN), continues after its last saved segment: the
# generator, seeded, streams the same vectors again and the build passes
# over the rows it already has.
gen_vectors() {
    rm -f "$P.vec.npy" "$P.vec.ids"
    mkfifo "$P.vec.npy" "$P.vec.ids"
    /usr/bin/time -v -o "$P.gen.time" "$PY" - "$DB/store.db" "$P" "$K" <<'PY' &
import sqlite3, sys
import numpy as np
db, p, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = sqlite3.connect(db)
n = c.execute("select count(*) from chunks").fetchone()[0]
rng = np.random.default_rng(20250101)
centres = rng.standard_normal((k, 256), dtype=np.float32)
try:
    with open(p + ".vec.npy", "wb") as out:
        np.lib.format.write_array_header_1_0(
            out, {"descr": "<f2", "fortran_order": False, "shape": (n, 256)})
        out.flush()
        with open(p + ".vec.ids", "w") as ids:
            cur = c.execute("select id from chunks order by id")
            while True:
                rows = cur.fetchmany(1 << 16)
                if not rows:
                    break
                m = len(rows)
                v = centres[rng.integers(0, k, m)] + \
                    0.5 * rng.standard_normal((m, 256), dtype=np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                v = v.astype(np.float16)
                # blocks of 1,024: an ids block (< 64 KiB) always fits
                # its pipe, so the writer never waits on one pipe while
                # the reader waits on the other
                for a in range(0, m, 1024):
                    ids.write("".join("%d\n" % r[0] for r in rows[a:a + 1024]))
                    ids.flush()
                    out.write(v[a:a + 1024].tobytes())
                    out.flush()
except BrokenPipeError:
    sys.exit(1)
PY
    GEN=$!
}
if [ "${MEDTRUST_BENCH_HYBRID_RESUME:-0}" = 1 ]; then
    log "resuming the vector build in $DB"
else
    rm -rf "$DB/index"
fi
# The disk the build will take, from the store's chunk count: BM25 about
# 0.27 KB a chunk (the session-6 25M index), vectors 395 (int8r2) or 459
# (int8r) bytes each (session 7's 1M files), against what is free on the
# index's filesystem plus what the old index gives back; the build is
# refused before it starts, not when the disk fills hours in.
disk_check() {
    local need
    need=$("$PY" - "$DB" "${MEDTRUST_BENCH_VECTORS:-int8r}" <<'PY'
import os, shutil, sqlite3, sys
db, fmt = sys.argv[1], sys.argv[2]
n = sqlite3.connect(db + "/store.db").execute("select count(*) from chunks").fetchone()[0]
per = {"int8r2": 395, "int8": 331, "float32": 1400}.get(fmt, 459)
need = n * (270 + per)
old = 0
for root, _, files in os.walk(db + "/index"):
    old += sum(os.path.getsize(os.path.join(root, f)) for f in files)
free = shutil.disk_usage(db).free
margin = 2 << 30
print("%d %d %d %d" % (need, free + old, n, margin))
PY
)
    set -- $need
    if [ "$1" -gt $(($2 - $4)) ]; then
        log "the index of $3 chunks needs about $(($1 >> 30)) GiB, $(($2 >> 30)) GiB" \
            "would be free (2 GiB kept): free disk, or MEDTRUST_BENCH_VECTORS=int8r2"
        exit 3
    fi
}
[ "${MEDTRUST_BENCH_HYBRID_RESUME:-0}" = 1 ] || disk_check
log "vector build (BM25 + generated vectors through a pipe, $K clusters)"
gen_vectors
tv "$P.vec" "$MT" index --db "$DB" --embedder use-lite --dims 256 \
    --vectors-from "$P.vec.npy" --no-progress \
    ${MEDTRUST_BENCH_VECTORS:+--vectors "$MEDTRUST_BENCH_VECTORS"} \
    ${MEDTRUST_BENCH_SEGMENT_MB:+--segment-mb "$MEDTRUST_BENCH_SEGMENT_MB"} \
    ${MEDTRUST_BENCH_HNSW_MIN:+--hnsw-min "$MEDTRUST_BENCH_HNSW_MIN"} >"$P.vec.out"
wait "$GEN" || true
rm -f "$P.vec.npy" "$P.vec.ids"
for mode in bm25 dense hybrid; do
    for j in 1 2; do
        log "$mode latency, $j thread(s)"
        "$MT" retrieval-eval --db "$DB" --queries "$QUERIES" \
            --mode "$mode" --jobs "$j" --json 2>/dev/null >"$P.$mode.$j.json"
    done
done
du -sb "$DB/store.db" | cut -f1 >"$P.store_bytes"
du -sb "$DB/index" | cut -f1 >"$P.index_bytes"
"$PY" - "$P" "$(cut -d' ' -f1-3 /proc/loadavg)" "$DB" <<'PY' | tee "$P.md"
import json, re, sqlite3, sys
p, load, db = sys.argv[1], sys.argv[2], sys.argv[3]
def tv(path):
    t = open(path + ".time").read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1)
    secs = sum(float(x) * 60 ** i
               for i, x in enumerate(reversed(wall.split(":"))))
    rss = int(re.search(r"Maximum resident set size.*: (\d+)", t).group(1))
    return secs, rss / 1024
try:
    imp = json.load(open(p + ".import.json"))
except OSError:  # a store imported by bench/pubmed.sh
    c = sqlite3.connect(db + "/store.db")
    imp = {"records": c.execute("select count(*) from documents").fetchone()[0],
           "chunks": c.execute("select count(*) from chunks").fetchone()[0]}
r = {"records": imp["records"], "chunks": imp["chunks"], "load": load,
     "store_mb": int(open(p + ".store_bytes").read()) / 1e6,
     "index_mb": int(open(p + ".index_bytes").read()) / 1e6}
import os
for part in ("import", "bm25", "gen", "vec"):
    if os.path.exists(p + "." + part + ".time"):
        r[part + "_wall_s"], r[part + "_rss_mb"] = tv(p + "." + part)
    else:
        r[part + "_wall_s"], r[part + "_rss_mb"] = float("nan"), 0
lat = {}
for mode in ("bm25", "dense", "hybrid"):
    for j in (1, 2):
        l = json.load(open(f"{p}.{mode}.{j}.json"))["latency_ms"]
        lat[f"{mode}/{j}"] = [l.get("p50"), l.get("p95"), l.get("p99")]
r["latency_ms"] = lat
json.dump(r, open(p + ".json", "w"), indent=1)
print("| records | chunks | import s | BM25 build s | BM25 + vector build s (one pass) | store MB | index MB | peak RSS MB | load |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| {r['records']:,} | {r['chunks']:,} | {r['import_wall_s']:.1f} | "
      f"{r['bm25_wall_s']:.1f} | {r['vec_wall_s']:.1f} | {r['store_mb']:.0f} | "
      f"{r['index_mb']:.0f} | "
      f"{max(r[k + '_rss_mb'] for k in ('import', 'bm25', 'vec')):.0f} | {load} |")
print()
print("| mode / query threads | p50 ms | p95 ms | p99 ms |")
print("|---|---|---|---|")
for k, v in lat.items():
    print(f"| {k} | " + " | ".join("-" if x is None else f"{x:.2f}" for x in v) + " |")
PY
