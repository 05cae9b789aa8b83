#!/usr/bin/env bash
# Segment-parallel search (issue 37): one query's segments on 1 and 2
# threads (`--search-threads`), and 2 query threads (`--jobs 2`, auto: the
# cores divided by the searches in flight), BM25 / dense / hybrid, on a
# store whose index has several segments (with vectors for dense and
# hybrid). First checks that the threads change nothing: `search
# --queries --group chunks` at -k 10 and -k 50 (and with --filter) at
# --search-threads 1 and 2, compared byte for byte (cmp), each mode.
# Then the latency (retrieval-eval's per-query search time, wall clock,
# p50/p95/p99), the three settings of a mode run one after another so
# they see the same load, in ROUNDS rounds (each percentile the median
# of the rounds'). Writes RUN/search-threads.{json,md}.
#
#   bash bench/search_threads.sh DB QUERIES.jsonl RUN [extra search options]
#   MEDTRUST_BENCH_MT   the medtrust binary (default build/rel/medtrust)
#   MEDTRUST_BENCH_ROUNDS  rounds of the latency runs (default 3)
#   MEDTRUST_BENCH_FILTER  --filter of the byte-for-byte check (default
#                       year=2000..2010; empty: none)
# e.g. the PubMedQA questions as VerifAI asks them:
#   bash bench/search_threads.sh DB pubmedqa/queries-dev.jsonl RUN2 --nltk-stopwords
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT=${MEDTRUST_BENCH_MT:-$ROOT/build/rel/medtrust}
DB=$1
Q=$2
RUN=$3
shift 3
EXTRA=("$@")
FILTER=${MEDTRUST_BENCH_FILTER-year=2000..2010}
ROUNDS=${MEDTRUST_BENCH_ROUNDS:-3}
mkdir -p "$RUN"
log() { printf 'bench search-threads: %s: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
modes=(bm25 dense hybrid)
[ -f "$DB/index/MANIFEST" ] || { log "no index in $DB"; exit 2; }
grep -q '"embedder": *"[^"]' "$DB/index/MANIFEST" || modes=(bm25)

# Identical output at 1 and 2 search threads.
same=0
differ=0
for mode in "${modes[@]}"; do
    for args in "-k 10" "-k 50" "-k 10${FILTER:+ --filter $FILTER}"; do
        for t in 1 2; do
            # shellcheck disable=SC2086
            "$MT" search --db "$DB" --queries "$Q" --group chunks --jobs 1 \
                --mode "$mode" --search-threads $t $args "${EXTRA[@]}" \
                >"$RUN/out.$t" 2>/dev/null
        done
        if [ -s "$RUN/out.1" ] && cmp -s "$RUN/out.1" "$RUN/out.2"; then
            same=$((same + 1))
            log "$mode $args: 1 and 2 threads the same bytes ($(wc -c <"$RUN/out.1"))"
        else
            differ=$((differ + 1))
            log "$mode $args: 1 and 2 threads DIFFER"
            cp "$RUN/out.1" "$RUN/differ.$mode.1"
            cp "$RUN/out.2" "$RUN/differ.$mode.2"
        fi
    done
done
rm -f "$RUN/out.1" "$RUN/out.2"

# Latency: (query threads, search threads) = (1, 1), (1, 2), (2, auto).
for round in $(seq "$ROUNDS"); do
for mode in "${modes[@]}"; do
    for cfg in 1:1 1:2 2:0; do
        j=${cfg%:*}
        t=${cfg#*:}
        targs=()
        [ "$t" != 0 ] && targs=(--search-threads "$t")
        log "round $round: $mode latency, $j query thread(s), search threads ${targs[*]:-auto}"
        "$MT" retrieval-eval --db "$DB" --queries "$Q" --mode "$mode" \
            --jobs "$j" "${targs[@]}" "${EXTRA[@]}" --json 2>/dev/null \
            >"$RUN/$mode.$j.$t.r$round.json"
    done
done
done
/usr/bin/python3 - "$RUN" "$(cut -d' ' -f1-3 /proc/loadavg)" "$same" \
    "$differ" "$ROUNDS" "${modes[@]}" <<'PY' | tee "$RUN/search-threads.md"
import json, statistics, sys
run, load, same, differ, rounds, modes = sys.argv[1], sys.argv[2], \
    sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6:]
rows, out = [], {"load": load, "identical": int(same), "differ": int(differ)}
for m in modes:
    for j, t, name in ((1, 1, "1 / 1"), (1, 2, "1 / 2"), (2, 0, "2 / auto (1)")):
        rs = [json.load(open(f"{run}/{m}.{j}.{t}.r{k}.json"))
              for k in range(1, rounds + 1)]
        r = rs[0]
        l = {p: statistics.median(x["latency_ms"][p] for x in rs)
             for p in ("p50", "p95", "p99")}
        out[f"{m}/{j}/{t}"] = {"median": l,
                               "rounds": [x["latency_ms"] for x in rs]}
        rows.append((m, name, r.get("queries"), l.get("p50"), l.get("p95"),
                     l.get("p99")))
json.dump(out, open(run + "/search-threads.json", "w"), indent=1)
print(f"load {load}; 1 vs 2 search threads: {same} outputs identical, "
      f"{differ} differ; latency: the median of {rounds} rounds")
print()
print("| mode | query threads / search threads | queries | p50 ms | p95 ms | p99 ms |")
print("|---|---|---|---|---|---|")
for m, name, q, a, b, c in rows:
    f = lambda x: "-" if x is None else f"{x:.2f}"
    print(f"| {m} | {name} | {q} | {f(a)} | {f(b)} | {f(c)} |")
PY
