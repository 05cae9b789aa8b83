#!/usr/bin/env bash
# PubMed at scale: generated baseline files (bench/gen_pubmed.c, fixed
# seed) -> `medtrust import pubmed` -> store -> `medtrust index --embedder
# none` (BM25) -> `retrieval-eval` for BM25 latency. Writes
# RUN/pubmed-N.json and prints one Markdown row.
#   MEDTRUST_BENCH_PUBMED        records to generate (default 30000: one
#                                baseline file; the real baseline is ~25M+)
#   MEDTRUST_BENCH_PUBMED_BATCH  files (30,000 records each) generated,
#                                imported and deleted at a time, so the
#                                whole input never sits on disk (default 0:
#                                generate all once, keep them); each batch
#                                leaves RUN/batch-FFFF.{json,time,gen} and
#                                a rerun resumes after the last whole batch
#   MEDTRUST_BENCH_PUBMED_CHECKPOINT  with batches: every this many
#                                batches, index (appending segments) and
#                                measure BM25 on the records so far, into
#                                RUN/index-LASTFILE.* (default 0: only at
#                                the end)
#   MEDTRUST_BENCH_PUBMED_DB     the store (default BUILD/bench/pubmed/db-N;
#                                kept when batches resume)
#   MEDTRUST_BENCH_MIN_FREE_GB   stop (exit 3, resumable) before a batch or
#                                the index when the store's filesystem would
#                                keep less than this many GiB free after the
#                                step (default 12: the step's own growth is
#                                counted, about 2 GiB a batch of 20 files
#                                and 0.3 KB a chunk for the index)
#   MEDTRUST_BENCH_PUBMED_INDEX=0  with batches: import only, no index
#                                or BM25 latency (the row says "-"; the
#                                25M hybrid run's fallback when the
#                                BM25-only index would not fit the disk)
#   MEDTRUST_BENCH_MT            the medtrust binary (default BUILD/medtrust),
#                                read at each step
#   MEDTRUST_BENCH_SEGMENT_MB    index --segment-mb (default: the index's)
#   MEDTRUST_BENCH_PUBMED_AHEAD  with batches: generate up to this many
#                                batches ahead, in the background, into
#                                SRC.ahead/FFFF (default 1: the next one,
#                                beside the import), so the import is timed
#                                against its input rather than the generator
#   MEDTRUST_BENCH_PUBMED_GEN_NICE  nice increment for the generator
#                                (default 0; e.g. 10 so that the import
#                                never waits for a CPU the generator holds)
#   MEDTRUST_BENCH_PUBMED_GEN_ONLY=1  only fill SRC.ahead (up to AHEAD
#                                batches) and exit: the input of a later
#                                timed run, generated beforehand
# Usage: bench/pubmed.sh RUNDIR   (BUILD, MEDTRUST_DATA as in bench/run)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
B=$BUILD/bench
MT=${MEDTRUST_BENCH_MT:-$BUILD/medtrust}
DATA=${MEDTRUST_DATA:-$ROOT/../shared/data}
N=${MEDTRUST_BENCH_PUBMED:-30000}
BATCH=${MEDTRUST_BENCH_PUBMED_BATCH:-0}
MIN_FREE_GB=${MEDTRUST_BENCH_MIN_FREE_GB:-12}
CHECKPOINT=${MEDTRUST_BENCH_PUBMED_CHECKPOINT:-0}
AHEAD=${MEDTRUST_BENCH_PUBMED_AHEAD:-1}
GEN_ONLY=${MEDTRUST_BENCH_PUBMED_GEN_ONLY:-}
GEN_NICE=${MEDTRUST_BENCH_PUBMED_GEN_NICE:-0}
RUN=${1:-$B/results/pubmed-$(date +%Y%m%d-%H%M%S)}
SRC=$B/pubmed/src-$N
DB=${MEDTRUST_BENCH_PUBMED_DB:-$B/pubmed/db-$N}
P=$RUN/pubmed-$N
mkdir -p "$RUN" "$B/pubmed"
log() { printf 'bench pubmed: %s: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# GiB free on the filesystem that holds the store (not necessarily /).
free_gb() {
    local d=$DB
    while [ ! -e "$d" ]; do d=$(dirname "$d"); done
    df -Pk "$d" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'
}
# need_disk STEP [GiB]: exit 3 (the run resumes when rerun) unless the
# step's GiB of growth leave MIN_FREE_GB free.
need_disk() {
    local f
    f=$(free_gb)
    if [ "$f" -lt $((MIN_FREE_GB + ${2:-0})) ]; then
        log "stopping before $1: $f GB free, the step takes about ${2:-0}" \
            "GB and $MIN_FREE_GB must stay free; free disk and rerun to resume"
        exit 3
    fi
}

# One /usr/bin/time -v step: STEM.time, stdout to STEM.out. A step run
# again after a kill (a resumed index, a batch imported again) keeps the
# earlier part's report as STEM.partK.time (K = 1, 2, ...: /usr/bin/time
# writes one when its command is killed by a signal), so sum_times counts
# every part's wall and CPU time.
timed() {
    local stem=$1 k=1
    shift
    # (an empty report: the machine stopped under it; nothing to keep)
    if [ -s "$stem.time" ]; then
        while [ -f "$stem.part$k.time" ]; do k=$((k + 1)); done
        mv "$stem.time" "$stem.part$k.time"
    fi
    /usr/bin/time -v -o "$stem.time" "$@" >"$stem.out"
}

# Generates files F..L into DIR, timing it into STEM.gen (by rename).
gen_batch() {
    local f=$1 l=$2 dir=$3 stem=$4 t0
    rm -rf "$dir"
    t0=$(date +%s.%N)
    nice -n "$GEN_NICE" "$B/gen_pubmed" "$DATA/pubmedqa/corpus.jsonl" "$N" \
        "$dir" 20250101 "$f" "$l" 2>"$stem.gen.tmp"
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print "wall_s", b - a }' \
        >>"$stem.gen.tmp"
    du -sbL "$dir"/*.xml.gz |
        awk '{ s += $1 } END { print "input_bytes", s }' >>"$stem.gen.tmp"
    mv "$stem.gen.tmp" "$stem.gen"
}

# Brings the index up to date (appending segments) and measures BM25 on
# the queries of the records imported so far: RUN/index-TAG.*.
index_step() {
    local stem=$RUN/index-$1
    [ -f "$stem.eval.json" ] && return 0
    need_disk "index $1" "$(index_gb)"
    log "index (BM25, embedder none) after $2 records"
    timed "$stem" "$MT" index --db "$DB" --embedder none --no-progress \
        ${MEDTRUST_BENCH_SEGMENT_MB:+--segment-mb "$MEDTRUST_BENCH_SEGMENT_MB"}
    mv "$stem.out" "$stem.txt"
    cat "$RUN"/queries/*.jsonl >"$stem.queries.jsonl"
    du -sb "$DB/store.db" | cut -f1 >"$stem.store_bytes"
    du -sb "$DB/index" | cut -f1 >"$stem.index_bytes"
    "$MT" retrieval-eval --db "$DB" --queries "$stem.queries.jsonl" --jobs 1 \
        --json 2>/dev/null >"$stem.eval.tmp"
    mv "$stem.eval.tmp" "$stem.eval.json"
    log "index after $2 records: $(cat "$stem.txt");" \
        "$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["latency_ms"]; print("BM25 p50 %.1f / p95 %.1f ms" % (l["p50"], l["p95"]))' "$stem.eval.json")"
}

# GiB the index of the store's chunks not yet indexed takes (0.3 KB a
# chunk: 0.26 at 25M): a resumed build needs room only for the chunks
# past its MANIFEST's max_chunk_id (chunk ids are assigned in order).
# Counting every chunk once paused a 25M build 35.0M chunks into 41.8M
# (3 of 4 segments saved) for want of the 12 GB the whole index takes.
index_gb() {
    python3 - "$DB/store.db" "$DB/index/MANIFEST" <<'PY'
import json, os, sqlite3, sys
done = 0
if os.path.exists(sys.argv[2]):
    done = json.load(open(sys.argv[2]))["max_chunk_id"]
n = sqlite3.connect(sys.argv[1]).execute(
    "select count(*) from chunks where id > ?", (done,)).fetchone()[0]
print(n * 300 // (1 << 30) + 1)
PY
}

# The generator side of the batches: fills SRC.ahead/FFFF (each renamed
# into place when whole, its RUN/batch-FFFF.gen beside it) for every batch
# not yet imported, keeping at most AHEAD there.
gen_ahead() {
    local files=$1 f l d
    mkdir -p "$SRC.ahead"
    for ((f = 1; f <= files; f += BATCH)); do
        l=$((f + BATCH - 1 > files ? files : f + BATCH - 1))
        d=$SRC.ahead/$(printf %04d "$f")
        [ -f "$RUN/batch-$(printf %04d "$f").json" ] && continue
        [ -d "$d" ] && continue
        while [ "$(find "$SRC.ahead" -mindepth 1 -maxdepth 1 -type d \
            ! -name '*.tmp' | wc -l)" -ge "$AHEAD" ]; do
            [ -n "${GEN_ONLY:-}" ] && return 0
            sleep 1
        done
        need_disk "generating batch $f-$l" 1
        gen_batch "$f" "$l" "$d.tmp" "$RUN/batch-$(printf %04d "$f")"
        mv "$d.tmp" "$d"
    done
}

# Batches: generate files F..L, import them, delete them; generation runs
# ahead of the import in the background (gen_ahead). A batch counts once
# RUN/batch-F.json exists (written last, by rename). Every CHECKPOINT
# batches the index is brought up to date and BM25 measured, so a run cut
# short still has its latency at the scale it reached.
import_batches() {
    local files=$(((N + 29999) / 30000)) f l done_recs=0 start
    local skipped_recs=0 gen_pid bi stem d
    start=$(date +%s)
    # A new run starts a new store; a rerun keeps it and resumes.
    ls "$RUN"/batch-*.json >/dev/null 2>&1 || rm -rf "$DB"
    mkdir -p "$RUN/queries"
    rm -rf "$SRC.ahead"/*.tmp
    gen_ahead "$files" &
    gen_pid=$!
    trap 'kill "$gen_pid" 2>/dev/null || true' EXIT
    for ((f = 1; f <= files; f += BATCH)); do
        l=$((f + BATCH - 1 > files ? files : f + BATCH - 1))
        bi=$(((f - 1) / BATCH + 1))
        stem=$RUN/batch-$(printf %04d "$f")
        d=$SRC.ahead/$(printf %04d "$f")
        if [ -f "$stem.json" ]; then
            done_recs=$((done_recs + (l - f + 1) * 30000))
            skipped_recs=$done_recs
            continue
        fi
        need_disk "batch $f-$l" 2
        while [ ! -d "$d" ]; do
            kill -0 "$gen_pid" 2>/dev/null || [ -d "$d" ] ||
                { log "the generator stopped before batch $f-$l"; exit 1; }
            sleep 0.2
        done
        rm -rf "$SRC"
        mv "$d" "$SRC"
        cp "$SRC/queries.jsonl" "$RUN/queries/$(printf %04d "$f").jsonl"
        timed "$stem" "$MT" import pubmed --db "$DB" --json --no-progress --no-index \
            "$SRC"/*.xml.gz
        rm -rf "$SRC"
        mv "$stem.out" "$stem.json"
        done_recs=$((done_recs + (l - f + 1) * 30000))
        [ "$done_recs" -gt "$N" ] && done_recs=$N
        local el=$(($(date +%s) - start + 1)) rate
        rate=$(((done_recs - skipped_recs) / el + 1))
        log "batch files $f-$l of $files: $done_recs/$N records," \
            "$rate records/s wall (generation included), ETA" \
            "$(((N - done_recs) / rate / 60)) min, $(free_gb) GB free"
        if [ "$CHECKPOINT" -gt 0 ] && [ $((bi % CHECKPOINT)) -eq 0 ] &&
            [ "$l" -lt "$files" ]; then
            index_step "$(printf %04d "$l")" "$done_recs"
        fi
    done
    wait "$gen_pid" || true
    trap - EXIT
    cat "$RUN"/queries/*.jsonl >"$RUN/queries.jsonl"
    python3 - "$RUN" "$P" <<'PY'
# The batches' counts and input sizes summed, as one import's.
import glob, json, re, sys
run, p = sys.argv[1], sys.argv[2]
tot, inb = {}, 0
for j in sorted(glob.glob(run + "/batch-*.json")):
    for k, v in json.load(open(j)).items():
        if isinstance(v, int):
            tot[k] = tot.get(k, 0) + v
    inb += int(re.search(r"input_bytes (\d+)", open(j[:-5] + ".gen").read()).group(1))
json.dump(tot, open(p + ".import.json", "w"))
open(p + ".input_bytes", "w").write(f"{inb}\n")
PY
    # Import steps only; generation is in batch-*.gen.
    sum_times "$P.import.time" "$RUN"/batch-*.time
}

# Writes OUT as one /usr/bin/time -v report of the steps FILE...: CPU and
# wall summed, peak RSS the largest.
sum_times() {
    python3 - "$@" <<'PY'
import re, sys
wall, user, sys_t, rss = 0.0, 0.0, 0.0, 0
for f in sys.argv[2:]:
    t = open(f).read()
    if "Elapsed" not in t:
        continue  # a step the machine stopped under: no report
    w = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1)
    wall += sum(float(x) * 60 ** i for i, x in enumerate(reversed(w.split(":"))))
    user += float(re.search(r"User time.*: (\S+)", t).group(1))
    sys_t += float(re.search(r"System time.*: (\S+)", t).group(1))
    rss = max(rss, int(re.search(r"Maximum resident set size.*: (\d+)", t).group(1)))
h, rem = divmod(wall, 3600)
m, s = divmod(rem, 60)
open(sys.argv[1], "w").write(
    f"\tUser time (seconds): {user:.2f}\n\tSystem time (seconds): {sys_t:.2f}\n"
    f"\tElapsed (wall clock) time (h:mm:ss or m:ss): {int(h)}:{int(m):02d}:{s:05.2f}\n"
    f"\tMaximum resident set size (kbytes): {rss}\n")
PY
}

if [ "$BATCH" -gt 0 ] && [ -n "$GEN_ONLY" ]; then
    log "generating up to $AHEAD batches of $BATCH files into $SRC.ahead"
    gen_ahead $(((N + 29999) / 30000))
    exit 0
fi
if [ "$BATCH" -gt 0 ]; then
    log "import pubmed in batches of $BATCH files into $DB"
    import_batches
    if [ "${MEDTRUST_BENCH_PUBMED_INDEX:-1}" != 0 ]; then
        index_step final "$N"
        sum_times "$P.index.time" "$RUN"/index-*.time
        cp "$RUN/index-final.eval.json" "$P.eval.json"
    else
        log "no index (MEDTRUST_BENCH_PUBMED_INDEX=0)"
        rm -f "$P.index.time" "$P.eval.json"
    fi
else
    if [ ! -f "$SRC/.stamp" ]; then
        log "generating $N records into $SRC"
        rm -rf "$SRC"
        "$B/gen_pubmed" "$DATA/pubmedqa/corpus.jsonl" "$N" "$SRC"
        touch "$SRC/.stamp"
    fi
    rm -rf "$DB"
    log "import pubmed ($(ls "$SRC"/*.xml.gz | wc -l) files)"
    /usr/bin/time -v -o "$P.import.time" \
        "$MT" import pubmed --db "$DB" --json --no-progress --no-index "$SRC"/*.xml.gz \
        >"$P.import.json"
    du -sbL "$SRC" | cut -f1 >"$P.input_bytes"
    log "index (BM25, embedder none)"
    /usr/bin/time -v -o "$P.index.time" \
        "$MT" index --db "$DB" --embedder none --no-progress \
        ${MEDTRUST_BENCH_SEGMENT_MB:+--segment-mb "$MEDTRUST_BENCH_SEGMENT_MB"} \
        >"$P.index.txt"
    log "BM25 latency"
    "$MT" retrieval-eval --db "$DB" --queries "$SRC/queries.jsonl" --jobs 1 \
        --json 2>/dev/null >"$P.eval.json"
fi
du -sb "$DB/store.db" | cut -f1 >"$P.store_bytes"
{ du -sb "$DB/index" 2>/dev/null || echo 0; } | cut -f1 >"$P.index_bytes"
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
nan = float("nan")
try:
    ev = json.load(open(p + ".eval.json"))
    xw, xc, xr = tv(p + ".index.time")
except OSError:  # MEDTRUST_BENCH_PUBMED_INDEX=0: no index
    ev = {"latency_ms": {"p50": nan, "p95": nan}, "recall": nan, "queries": 0}
    xw, xc, xr = nan, nan, 0
iw, ic, ir = tv(p + ".import.time")
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
