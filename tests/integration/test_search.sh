#!/usr/bin/env bash
# Integration: `medtrust index` builds the search index; `search` answers
# from the real binary in text and JSON, in batches, with a source filter;
# `retrieval-eval` on MedQuAD dev queries reaches the ranking quality that
# SQLite FTS5 and Xapian reach on them (0.560 and 0.572 nDCG@10, see
# BENCHMARKS.md). Ranking is deterministic, so the floor is exact, not a
# timing.
. "$(dirname "$0")/lib.sh"
"$MT" index --db "$TMP/db" --input "$DATA/medquad/corpus.jsonl" \
    --source medquad --no-progress >"$TMP/out" 2>&1
"$MT" index --db "$TMP/db" --input "$DATA/pubmedqa/corpus.jsonl" \
    --source pubmedqa --no-progress >>"$TMP/out" 2>&1
if grep -q 'search index: 1000 chunks added\|search index: [0-9]* chunks added, 2 segments' "$TMP/out"; then
    ok "a second corpus goes into a new index segment"
else
    not_ok "a second corpus goes into a new index segment" "$(cat "$TMP/out")"
fi

out=$("$MT" search --db "$TMP/db" --json -k 5 "symptoms of gout")
n=$(echo "$out" | grep -c '"rank"')
first=$(echo "$out" | head -1)
if [ "$n" -eq 5 ] && echo "$first" | grep -q '"rank":1,"doc_id":"mq-' &&
    echo "$first" | grep -qi 'gout'; then
    ok "search --json prints 5 ranked hits about the query"
else
    not_ok "search --json prints 5 ranked hits" "$out"
fi
if echo "$first" | python3 -c 'import json,sys; h=json.loads(sys.stdin.readline()); assert set(h)>={"rank","doc_id","chunk_id","score","title","text","more"}'; then
    ok "each JSON hit has rank, doc_id, chunk_id, score, title, text, more"
else
    not_ok "JSON hit keys" "$first"
fi
# By document by default (as VerifAI and POST /v1/search): each document
# once at its best passage, ranked among the documents, its other
# passages in "more"; --group chunks is every passage, and the grouped
# list is the chunk list's documents in their order. The text output
# says how many more passages a document has.
"$MT" search --db "$TMP/db" --json -k 12 glaucoma >"$TMP/docs"
"$MT" search --db "$TMP/db" --json -k 48 --group chunks glaucoma \
    >"$TMP/chunks"
"$MT" search --db "$TMP/db" -k 12 glaucoma >"$TMP/text"
"$MT" search --db "$TMP/db" -k 12 --group passages gout >/dev/null 2>"$TMP/gerr"
grc=$?
if python3 - "$TMP/docs" "$TMP/chunks" "$TMP/text" <<'PY'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
chunks = [json.loads(l) for l in open(sys.argv[2])]
text = open(sys.argv[3]).read()
ids = [d["doc_id"] for d in docs]
assert len(ids) == len(set(ids)) == 12, ids
assert [d["rank"] for d in docs] == list(range(1, 13))
assert all("more" not in c for c in chunks)
seen = []
for c in chunks:
    if c["doc_id"] not in seen:
        seen.append(c["doc_id"])
assert ids == seen[:12], (ids, seen)
more = {d["doc_id"]: len(d["more"]) for d in docs}
assert any(more.values()), "no document has more passages"
for d in docs:  # the head is the document's best passage among the 48
    mine = [c for c in chunks if c["doc_id"] == d["doc_id"]]
    assert d["chunk_id"] == mine[0]["chunk_id"], (d, mine[0])
    assert len(d["more"]) == len(mine) - 1, (d["doc_id"], d["more"], mine)
n = sum(1 for v in more.values() if v)
assert text.count("more passages of this document") == n, text
assert "12 documents from 48 hits" in text, text
PY
then
    ok "search groups by document by default (best passage, 'N more passages'); --group chunks lists every passage"
else
    not_ok "search --group default" "$(head -c 400 "$TMP/docs")" "$(tail -2 "$TMP/text")"
fi
if [ $grc -eq 1 ] && grep -q -- "--group is documents or chunks, not 'passages'" "$TMP/gerr"; then
    ok "an unknown --group is refused by name"
else
    not_ok "--group passages" "rc=$grc" "$(cat "$TMP/gerr")"
fi

out=$("$MT" search --db "$TMP/db" --source pubmedqa --json -k 3 "apoptosis")
if [ -n "$out" ] && ! echo "$out" | grep -q '"source":"medquad"'; then
    ok "--source keeps hits to one source"
else
    not_ok "--source keeps hits to one source" "$out"
fi

head -50 "$DATA/medquad/queries-dev.jsonl" >"$TMP/q.jsonl"
"$MT" search --db "$TMP/db" --queries "$TMP/q.jsonl" --jobs 2 -k 3 \
    >"$TMP/batch" 2>"$TMP/berr"
first_id=$(head -1 "$TMP/q.jsonl" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["id"])')
if [ "$(wc -l <"$TMP/batch")" -eq 50 ] &&
    head -1 "$TMP/batch" | grep -q "\"query_id\":\"$first_id\",\"hits\":\[{" &&
    python3 - "$TMP/q.jsonl" "$TMP/batch" <<'PY'; then
import json, sys
want = [json.loads(l)["id"] for l in open(sys.argv[1])]
got = [json.loads(l)["query_id"] for l in open(sys.argv[2])]
assert got == want, (got[:5], want[:5])
PY
    ok "--queries with --jobs 2 prints one line per query, in input order"
else
    not_ok "--queries batch output" "$(head -2 "$TMP/batch")"
fi
# The library's search batch reports each query searched to the CLI's
# progress bar (stderr is no terminal here: plain lines, the last at 100%).
if grep -q '^queries: 50/50 100.0%' "$TMP/berr"; then
    ok "--queries: the progress bar counts every query searched (50/50)"
else
    not_ok "--queries progress" "$(tail -2 "$TMP/berr")"
fi

out=$("$MT" search --db "$TMP/db" "the of and" 2>&1)
if echo "$out" | grep -q '^0 documents from 0 hits'; then
    ok "a stop-word-only query gives no hits, not an error"
else
    not_ok "stop-word-only query" "$out"
fi
"$MT" search --db "$TMP/db" --mode hybrid gout >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q -- '--embedder' "$TMP/err"; then
    ok "hybrid search without vectors says how to build them"
else
    not_ok "hybrid without vectors" "rc=$rc" "$(cat "$TMP/err")"
fi

"$MT" retrieval-eval --db "$TMP/db" --source medquad --json \
    --queries "$DATA/medquad/queries-dev.jsonl" >"$TMP/eval" 2>/dev/null
if python3 - "$TMP/eval" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["queries"] == 8203, m
assert m["ndcg@10"] >= 0.572, m   # Xapian BM25 on the same queries
assert m["mrr@10"] >= 0.477, m
assert m["latency_ms"]["p99"] >= m["latency_ms"]["p95"] >= m["latency_ms"]["p50"] > 0
PY
then
    ok "MedQuAD dev: BM25 nDCG@10 and MRR@10 at least Xapian's ($(cat "$TMP/eval"))"
else
    not_ok "MedQuAD dev retrieval quality" "$(cat "$TMP/eval")"
fi

# Dense and hybrid search with the built-in USE-lite embedder, on a small
# corpus written here.
cat >"$TMP/small.jsonl" <<'JS'
{"id":"h1","title":"Heart attack","text":"A myocardial infarction happens when blood flow to part of the heart muscle stops, causing chest pain."}
{"id":"h2","title":"Broken bone","text":"A fracture of the femur needs surgery and months of rehabilitation before walking again."}
{"id":"h3","title":"Flu","text":"Influenza spreads through droplets; fever, cough and body aches last about a week."}
{"id":"h4","title":"Sunburn","text":"Too much ultraviolet light reddens and blisters the skin; use sunscreen."}
JS
"$MT" index --db "$TMP/dense" --input "$TMP/small.jsonl" --embedder use-lite \
    --no-progress >"$TMP/out" 2>&1
out=$("$MT" search --db "$TMP/dense" --mode dense --json -k 1 \
    "my leg bone snapped" 2>&1)
if echo "$out" | grep -q '"doc_id":"h2"'; then
    ok "dense search finds the paraphrased document (USE-lite vectors)"
else
    not_ok "dense search with use-lite" "$out" "$(cat "$TMP/out")"
fi
out=$("$MT" search --db "$TMP/dense" --mode hybrid --json -k 4 \
    "influenza fever" 2>&1)
if [ "$(echo "$out" | grep -c '"rank"')" -ge 1 ] &&
    echo "$out" | head -1 | grep -q '"doc_id":"h3"'; then
    ok "hybrid search fuses BM25 and vectors"
else
    not_ok "hybrid search" "$out"
fi
"$MT" index --db "$TMP/graph" --input "$TMP/small.jsonl" --embedder use-lite \
    --hnsw-min 1 --no-progress >"$TMP/out" 2>&1
g1=$("$MT" search --db "$TMP/graph" --mode dense --json -k 1 --ef 1 \
    "my leg bone snapped" 2>&1)
g2=$("$MT" search --db "$TMP/graph" --mode dense --json -k 4 --ef 64 \
    "my leg bone snapped" 2>&1)
bad=$("$MT" search --db "$TMP/graph" --mode dense --ef 0 x 2>&1)
if ls "$TMP/graph/index/"*.hnsw >/dev/null 2>&1 &&
    echo "$g2" | head -1 | grep -q '"doc_id":"h2"' &&
    [ "$(echo "$g1" | grep -c '"rank"')" = 1 ] &&
    [ "$(echo "$g2" | grep -c '"rank"')" = 4 ] &&
    echo "$bad" | grep -q -- '--ef must be'; then
    ok "--hnsw-min builds an HNSW segment; --ef sets its search breadth"
else
    not_ok "HNSW segment and --ef" "$(cat "$TMP/out")" "$g1" "$g2" "$bad"
fi
# --hnsw-threads: 1 is the serial build, the same graph on every run (so
# the same file); 2 builds in parallel (300 chunks: past the 64 a thread
# the graph needs before it takes a second one) and still finds a chunk
# by its own text; out-of-range counts are refused by name.
python3 -c '
import random
random.seed(3)
w = "fever cough rash pain bone skin heart lung liver blood sugar sleep".split()
for i in range(300):
    t = " ".join(random.choice(w) for _ in range(12))
    print("{\"id\":\"t%d\",\"text\":\"note %d: %s\"}" % (i, i, t))
' >"$TMP/many.jsonl"
for d in ser1 ser2 par; do
    th=1
    [ "$d" = par ] && th=2
    "$MT" index --db "$TMP/$d" --input "$TMP/many.jsonl" --embedder use-lite \
        --hnsw-min 1 --hnsw-threads "$th" --no-progress >>"$TMP/out" 2>&1
done
want=$(sed -n 101p "$TMP/many.jsonl" | python3 -c \
    'import json,sys; print(json.loads(sys.stdin.read())["text"])')
hit=$("$MT" search --db "$TMP/par" --mode dense --json -k 1 --ef 64 \
    "$want" 2>&1)
bad=$("$MT" index --db "$TMP/par" --input "$TMP/many.jsonl" \
    --hnsw-threads 65 2>&1)
if cmp -s "$TMP"/ser1/index/*.hnsw "$TMP"/ser2/index/*.hnsw &&
    ls "$TMP"/par/index/*.hnsw >/dev/null 2>&1 &&
    echo "$hit" | head -1 | grep -q '"doc_id":"t100"' &&
    echo "$bad" | grep -q -- '--hnsw-threads'; then
    ok "--hnsw-threads 1 builds the same graph twice; 2 builds a working one"
else
    not_ok "--hnsw-threads" "$(cat "$TMP/out")" "$hit" "$bad" \
        "$(ls -l "$TMP"/ser1/index "$TMP"/ser2/index)"
fi
# --vectors: int8 keeps the codes alone, int8r2 adds a 2-bit residual,
# int8r (the default) a 4-bit one, float32 float copies; the files grow
# in that order (by dims/4, dims/4 more and dims*4 bytes a vector), each
# finds a chunk by its own text, and an unknown kind is refused by name.
head -n 120 "$TMP/many.jsonl" >"$TMP/few.jsonl"
for kind in int8 int8r2 int8r float32; do
    "$MT" index --db "$TMP/v-$kind" --input "$TMP/few.jsonl" \
        --embedder use-lite --hnsw-min 1 --vectors "$kind" --no-progress \
        >>"$TMP/out" 2>&1
done
size() { stat -c %s "$TMP/v-$1"/index/*.hnsw; }
vok=1
for kind in int8 int8r2 int8r float32; do
    "$MT" search --db "$TMP/v-$kind" --mode dense --json -k 1 "$want" \
        2>&1 | head -1 | grep -q '"doc_id":"t100"' || vok=0
done
bad=$("$MT" index --db "$TMP/v-int8" --input "$TMP/few.jsonl" \
    --vectors f16 2>&1)
if [ "$vok" = 1 ] && [ $(($(size int8) + 120 * 128)) -le "$(size int8r2)" ] &&
    [ $(($(size int8r2) + 120 * 128)) -le "$(size int8r)" ] &&
    [ $(($(size int8) + 120 * 2048)) -le "$(size float32)" ] &&
    echo "$bad" | grep -q -- "--vectors 'f16'"; then
    ok "--vectors int8, int8r2, int8r and float32 each search; sizes grow"
else
    not_ok "--vectors" "$(cat "$TMP/out")" "$(ls -l "$TMP"/v-*/index)" "$bad"
fi
printf '{"id":"h5","title":"Burns","text":"Scalding water burns the skin."}\n' \
    >"$TMP/more.jsonl"
"$MT" index --db "$TMP/dense" --input "$TMP/more.jsonl" --no-progress \
    >"$TMP/out" 2>&1
out=$("$MT" search --db "$TMP/dense" --mode dense --json -k 1 \
    "hot liquid injured skin" 2>&1)
if grep -q '2 segments' "$TMP/out" && echo "$out" | grep -q '"doc_id":"h[45]"'; then
    ok "an update reuses the index's embedder for the new segment"
else
    not_ok "incremental dense update" "$(cat "$TMP/out")" "$out"
fi

# A read-only search never migrates a store: a store from before v4 (as
# medtrust wrote it before run events, each chunk's text in its row as
# before v8) is searched as it is, stats reads it too, and the next
# writer (index) migrates it forward.
head -50 "$DATA/medquad/corpus.jsonl" >"$TMP/old.jsonl"
"$MT" index --db "$TMP/old" --input "$TMP/old.jsonl" --no-progress >/dev/null 2>&1
"$MT" search --db "$TMP/old" --json -k 3 "symptoms" >"$TMP/old-new.hits" 2>&1
ver() { # ver DIR: the store's user_version and whether run_events exists
    python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s/store.db?mode=ro" % sys.argv[1], uri=True); print(c.execute("PRAGMA user_version").fetchone()[0], c.execute("SELECT count(*) FROM sqlite_master WHERE name=\"run_events\"").fetchone()[0])' "$1"
}
now=$(ver "$TMP/old")
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]+"/store.db"); c.executescript("DROP TABLE run_events; DROP TABLE run_reports; DROP TABLE login_throttle; ALTER TABLE runs DROP COLUMN cancel_requested; DROP INDEX runs_idem; ALTER TABLE runs DROP COLUMN idem; DROP VIEW chunk_texts; ALTER TABLE chunks ADD COLUMN text TEXT NOT NULL DEFAULT \"\"; UPDATE chunks SET text = (SELECT CAST(substr(CAST(d.text AS BLOB), chunks.start + 1, chunks.end - chunks.start) AS TEXT) FROM documents d WHERE d.id = chunks.doc_id); PRAGMA user_version=3;"); c.close()' "$TMP/old"
"$MT" search --db "$TMP/old" --json -k 3 "symptoms" >"$TMP/old-v3.hits" 2>&1
after_search=$(ver "$TMP/old")
"$MT" stats --db "$TMP/old" >"$TMP/old.stats" 2>&1
after_stats=$(ver "$TMP/old")
"$MT" index --db "$TMP/old" --no-progress >/dev/null 2>&1
after_index=$(ver "$TMP/old")
if [ -s "$TMP/old-v3.hits" ] && cmp -s "$TMP/old-new.hits" "$TMP/old-v3.hits" &&
    [ "$after_search" = "3 0" ] && [ "$after_stats" = "3 0" ] &&
    grep -q "store schema v3," "$TMP/old.stats" &&
    [ "$after_index" = "$now" ] && [ "${now#* }" = 1 ]; then
    ok "search and stats read a v3 store as it is (same hits); index migrates it to v${now% *}"
else
    not_ok "read-only search on an older store" "now $now search $after_search stats $after_stats index $after_index" "$(head -3 "$TMP/old-v3.hits")"
fi
