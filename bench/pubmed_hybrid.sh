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
#   MEDTRUST_BENCH_HYBRID_RESUME=1  continue a killed or paused vector
#                            build (same RUN); the default once RUN has
#                            hybrid-N.vec.started, so rerunning the same
#                            command resumes (0 starts the index afresh)
#   MEDTRUST_BENCH_MIN_FREE_GB  GiB the vector build leaves free on the
#                            index's filesystem (default 12): it is not
#                            started unless its next segment fits, and a
#                            watchdog stops it (exit 3, resumable) right
#                            after the segment past which the next one
#                            would not fit, or at once if free space falls
#                            under this (losing the segment in progress);
#                            MEDTRUST_BENCH_MIN_FREE_MB the same in MiB;
#                            paused, it measures the latencies of the
#                            index so far into RUN/hybrid-N.at-MAXID.*
#                            (MEDTRUST_BENCH_HYBRID_PARTIAL_EVAL=0: not)
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
MIN_FREE_GB=${MEDTRUST_BENCH_MIN_FREE_GB:-12}
MIN_FREE_MB=${MEDTRUST_BENCH_MIN_FREE_MB:-$((MIN_FREE_GB * 1024))}
mkdir -p "$RUN" "$B/pubmed"
log() { printf 'bench hybrid: %s: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# /usr/bin/time -v into STEM.time; a step run again after a kill keeps
# the earlier part's report as STEM.partK.time (the summary sums them).
tv() {
    local k=1
    # (an empty report: the machine stopped under it; nothing to keep)
    if [ -s "$1.time" ]; then
        while [ -f "$1.part$k.time" ]; do k=$((k + 1)); done
        mv "$1.time" "$1.part$k.time"
    fi
    /usr/bin/time -v -o "$1.time" "${@:2}"
}
[ -f "$P.vec.started" ] &&
    MEDTRUST_BENCH_HYBRID_RESUME=${MEDTRUST_BENCH_HYBRID_RESUME:-1}

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
# with the same RUN), continues after its last saved segment. Each block
# of 65,536 rows (by row number from the store's first chunk) has its own
# seeded generator (bench/pubmed_vectors.py, which pubmed_recall.py
# shares), so a resumed run streams only the chunks above the index's
# max_chunk_id (the .npy header counts those), with the vectors an
# unbroken run would have given them.
gen_vectors() {
    rm -f "$P.vec.npy" "$P.vec.ids"
    mkfifo "$P.vec.npy" "$P.vec.ids"
    tv "$P.gen" "$PY" - "$DB/store.db" "$P" "$K" "$(index_max_id)" \
        "$ROOT/bench" <<'PY' &
import sqlite3, sys
import numpy as np
db, p, k, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, sys.argv[5])
from pubmed_vectors import BLOCK, block, centres
c = sqlite3.connect(db)
r0 = c.execute("select count(*) from chunks where id <= ?", (after,)).fetchone()[0]
n = c.execute("select count(*) from chunks where id > ?", (after,)).fetchone()[0]
cent = centres(k)
try:
    with open(p + ".vec.npy", "wb") as out:
        np.lib.format.write_array_header_1_0(
            out, {"descr": "<f2", "fortran_order": False, "shape": (n, 256)})
        out.flush()
        with open(p + ".vec.ids", "w") as ids:
            cur = c.execute("select id from chunks where id > ? order by id",
                            (after,))
            row = r0
            while True:
                # up to the end of row's block
                rows = cur.fetchmany(BLOCK - row % BLOCK)
                if not rows:
                    break
                m = len(rows)
                v = block(cent, row // BLOCK)[row % BLOCK:row % BLOCK + m]
                row += m
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
# The index's max_chunk_id (0 without an index): a resumed build has the
# chunks up to it.
index_max_id() {
    "$PY" - "$DB/index/MANIFEST" <<'PY'
import json, sys
try:
    print(json.load(open(sys.argv[1]))["max_chunk_id"])
except OSError:
    print(0)
PY
}
free_bytes() { df -PB1 "$DB" | awk 'NR == 2 { print $4 }'; }
if [ "${MEDTRUST_BENCH_HYBRID_RESUME:-0}" = 1 ]; then
    log "resuming the vector build in $DB after chunk $(index_max_id)"
else
    rm -rf "$DB/index" "$P.paused"
fi
# The disk the build will take, from the store's chunks not yet indexed:
# BM25 about 0.27 KB a chunk (the session-6 25M index), vectors 405
# (int8r2) or 469 (int8r) bytes each (session 8's 1M and 5M files), and
# one segment's worth (--segment-mb over the 1,426 bytes a chunk the
# builder counts), against what is free on the index's filesystem. The
# build is refused unless its next segment leaves MIN_FREE_GB free; when
# the whole of it would not, it runs until the watchdog pauses it.
disk_check() {
    local need
    need=$("$PY" - "$DB" "${MEDTRUST_BENCH_VECTORS:-int8r}" \
        "${MEDTRUST_BENCH_SEGMENT_MB:-2048}" "$(index_max_id)" <<'PY'
import shutil, sqlite3, sys
db, fmt, seg_mb, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = sqlite3.connect(db + "/store.db")
n = c.execute("select count(*) from chunks where id > ?", (after,)).fetchone()[0]
per = 270 + {"int8r2": 405, "int8": 341, "float32": 1410}.get(fmt, 469)
seg = min(n, (seg_mb << 20) // (390 + 12 + 1024))
print("%d %d %d %d" % (n * per, seg * per, shutil.disk_usage(db).free, n))
PY
)
    set -- $need
    local min=$((MIN_FREE_MB << 20))
    log "the index of the $4 chunks left needs about $(($1 >> 30)) GiB" \
        "(a segment $(($2 >> 20)) MiB), $(($3 >> 30)) GiB free, $MIN_FREE_MB MiB to keep"
    if [ "$2" -gt $(($3 - min)) ]; then
        log "not started: its next segment would leave under $MIN_FREE_MB MiB" \
            "free; free disk (or MEDTRUST_BENCH_VECTORS=int8r2) and rerun"
        paused
    fi
    [ "$1" -gt $(($3 - min)) ] &&
        log "the whole build does not fit: it will pause (exit 3) when the" \
            "next segment would leave under $MIN_FREE_MB MiB; rerun to resume"
    return 0
}
# Bytes of the index's newest segment (0 before the first).
last_seg_bytes() {
    "$PY" - "$DB/index" <<'PY'
import json, os, sys
d = sys.argv[1]
try:
    name = json.load(open(d + "/MANIFEST"))["segments"][-1]["name"]
except (OSError, IndexError, KeyError):
    print(0)
    sys.exit()
print(sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
          if f.startswith(name + ".")))
PY
}
# The medtrust process under PID (the build runs under a subshell and
# /usr/bin/time).
index_pid() {
    local c
    for c in $(pgrep -P "$1" || true); do
        if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = medtrust ]; then
            echo "$c"
        else
            index_pid "$c"
        fi
    done
}
# Watches the build (PID, under /usr/bin/time PID $1): stops it with
# SIGTERM, writing RUN/hybrid-N.paused, when free space falls under
# MIN_FREE_GB, or as soon as a segment is saved after which the next one
# (as large as the last, 10 % more) would take it there: the build then
# loses nothing, the next run resumes after that segment.
watch_disk() {
    local tpid=$1 min=$((MIN_FREE_MB << 20)) seen="" m pid free why=""
    while kill -0 "$tpid" 2>/dev/null; do
        free=$(free_bytes)
        m=$(stat -c %y "$DB/index/MANIFEST" 2>/dev/null || true)
        if [ "$free" -lt "$min" ]; then
            why="$((free >> 20)) MiB free, under $MIN_FREE_MB MiB"
        elif [ -n "$m" ] && [ "$m" != "$seen" ]; then
            seen=$m
            local s
            s=$(last_seg_bytes)
            if [ $((free - s - s / 10)) -lt "$min" ]; then
                why="$((free >> 20)) MiB free: the next segment (about"
                why="$why $((s >> 20)) MiB) would leave under $MIN_FREE_MB MiB"
            fi
        fi
        if [ -n "$why" ]; then
            pid=$(index_pid "$tpid")
            printf '%s %s\n' "$(date -u +%FT%TZ)" "$why" >"$P.paused"
            log "pausing the build: $why; free disk and rerun to resume"
            [ -n "$pid" ] && kill -TERM $pid
            return 0
        fi
        sleep 10
    done
}
# BM25 / dense / hybrid latency at 1 and 2 query threads into
# PREFIX.MODE.J.json, each once (a rerun skips those written).
latencies() {
    local mode j
    for mode in bm25 dense hybrid; do
        for j in 1 2; do
            [ -f "$1.$mode.$j.json" ] && continue
            log "$mode latency, $j thread(s)"
            "$MT" retrieval-eval --db "$DB" --queries "$QUERIES" \
                --mode "$mode" --jobs "$j" --json 2>/dev/null >"$1.$mode.$j.tmp"
            mv "$1.$mode.$j.tmp" "$1.$mode.$j.json"
        done
    done
}
# Paused for disk: the latencies of the index so far (its segments are
# a whole index of the chunks up to its max_chunk_id), into
# RUN/hybrid-N.at-MAXID.*, then exit 3.
paused() {
    local at
    at=$(index_max_id)
    if [ "$at" -gt 0 ] && [ "${MEDTRUST_BENCH_HYBRID_PARTIAL_EVAL:-1}" = 1 ]; then
        log "latencies of the index so far (chunks up to id $at)"
        latencies "$P.at-$at" || log "a latency run failed"
    fi
    exit 3
}
if [ -f "$P.vec.done" ]; then
    log "the vector build is done; latencies"
else
    disk_check
    touch "$P.vec.started"
    rm -f "$P.paused"
    log "vector build (BM25 + generated vectors through a pipe, $K clusters)"
    gen_vectors
    tv "$P.vec" "$MT" index --db "$DB" --embedder use-lite --dims 256 \
        --vectors-from "$P.vec.npy" --no-progress \
        ${MEDTRUST_BENCH_VECTORS:+--vectors "$MEDTRUST_BENCH_VECTORS"} \
        ${MEDTRUST_BENCH_SEGMENT_MB:+--segment-mb "$MEDTRUST_BENCH_SEGMENT_MB"} \
        ${MEDTRUST_BENCH_HNSW_MIN:+--hnsw-min "$MEDTRUST_BENCH_HNSW_MIN"} \
        >"$P.vec.out.tmp" &
    VEC=$!
    watch_disk "$VEC" &
    WATCH=$!
    rc=0
    wait "$VEC" || rc=$?
    kill "$WATCH" 2>/dev/null || true
    wait "$WATCH" 2>/dev/null || true
    wait "$GEN" || true
    rm -f "$P.vec.npy" "$P.vec.ids"
    # each part's output kept beside its time report
    k=1
    while [ -f "$P.vec.part$k.out" ]; do k=$((k + 1)); done
    mv "$P.vec.out.tmp" "$P.vec.part$k.out"
    cat "$P.vec.part$k.out"
    if [ -f "$P.paused" ]; then
        log "paused ($(cut -d' ' -f2- "$P.paused")); rerun to resume"
        paused
    fi
    [ "$rc" = 0 ] || { log "the vector build failed ($rc); rerun to resume"; exit "$rc"; }
    touch "$P.vec.done"
fi
latencies "$P"
du -sb "$DB/store.db" | cut -f1 >"$P.store_bytes"
du -sb "$DB/index" | cut -f1 >"$P.index_bytes"
"$PY" - "$P" "$(cut -d' ' -f1-3 /proc/loadavg)" "$DB" <<'PY' | tee "$P.md"
import json, re, sqlite3, sys
p, load, db = sys.argv[1], sys.argv[2], sys.argv[3]
def tv(path):
    # every part's report (STEM.partK.time of killed or paused parts, then
    # STEM.time): wall and CPU summed, peak RSS the largest
    import glob
    wall = cpu = rss = 0.0
    for f in sorted(glob.glob(path + ".part*.time")) + [path + ".time"]:
        t = open(f).read()
        if "Elapsed" not in t:
            continue  # a part the machine stopped under: no report
        w = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1)
        wall += sum(float(x) * 60 ** i
                    for i, x in enumerate(reversed(w.split(":"))))
        cpu += float(re.search(r"User time.*: (\S+)", t).group(1)) + \
            float(re.search(r"System time.*: (\S+)", t).group(1))
        rss = max(rss, int(re.search(r"Maximum resident set size.*: (\d+)", t).group(1)) / 1024)
    return wall, cpu, rss
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
        r[part + "_wall_s"], r[part + "_cpu_s"], r[part + "_rss_mb"] = tv(p + "." + part)
    else:
        r[part + "_wall_s"], r[part + "_cpu_s"], r[part + "_rss_mb"] = float("nan"), float("nan"), 0
lat = {}
for mode in ("bm25", "dense", "hybrid"):
    for j in (1, 2):
        l = json.load(open(f"{p}.{mode}.{j}.json"))["latency_ms"]
        lat[f"{mode}/{j}"] = [l.get("p50"), l.get("p95"), l.get("p99")]
r["latency_ms"] = lat
json.dump(r, open(p + ".json", "w"), indent=1)
print("| records | chunks | import s | BM25 build s | BM25 + vector build s (one pass; CPU s) | store MB | index MB | peak RSS MB | load |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| {r['records']:,} | {r['chunks']:,} | {r['import_wall_s']:.1f} | "
      f"{r['bm25_wall_s']:.1f} | {r['vec_wall_s']:.1f} ({r['vec_cpu_s']:.1f}) | {r['store_mb']:.0f} | "
      f"{r['index_mb']:.0f} | "
      f"{max(r[k + '_rss_mb'] for k in ('import', 'bm25', 'vec')):.0f} | {load} |")
print()
print("| mode / query threads | p50 ms | p95 ms | p99 ms |")
print("|---|---|---|---|")
for k, v in lat.items():
    print(f"| {k} | " + " | ".join("-" if x is None else f"{x:.2f}" for x in v) + " |")
PY
