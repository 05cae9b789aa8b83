#!/usr/bin/env bash
# Integration: the same MedQuAD store indexed as one segment and as many
# (`index --rebuild --segment-mb 1`) answers `search` (one query and a
# --queries batch, with and without --source) and `retrieval-eval` alike:
# BM25 takes N, avgdl and df over all segments, so the hits, their order
# and their scores do not depend on how the index is split.
. "$(dirname "$0")/lib.sh"
"$MT" index --db "$TMP/one" --input "$DATA/medquad/corpus.jsonl" \
    --source medquad --no-progress >"$TMP/out" 2>&1
"$MT" index --db "$TMP/one" --input "$DATA/pubmedqa/corpus.jsonl" \
    --source pubmedqa --no-progress >>"$TMP/out" 2>&1
"$MT" index --db "$TMP/one" --rebuild --no-progress >>"$TMP/out" 2>&1
cp -r "$TMP/one" "$TMP/many"
"$MT" index --db "$TMP/many" --rebuild --segment-mb 1 --no-progress \
    >>"$TMP/out" 2>&1
segs() { ls "$1"/index/seg-*.bm25 | wc -l; }
n1=$(segs "$TMP/one")
n2=$(segs "$TMP/many")
if [ "$n1" = 1 ] && [ "$n2" -ge 8 ]; then
    ok "one store indexed as 1 segment and as $n2"
else
    not_ok "one store indexed as 1 segment and as many" "$n1 / $n2" \
        "$(cat "$TMP/out")"
fi

# Same hits in the same order, scores equal to 1e-6 (relative).
same() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
b = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
def hits(x):
    return x["hits"] if "hits" in x else [x]
assert len(a) == len(b) and a, (len(a), len(b))
n = 0
for x, y in zip(a, b):
    hx, hy = hits(x), hits(y)
    assert len(hx) == len(hy), (x, y)
    for p, q in zip(hx, hy):
        assert p["chunk_id"] == q["chunk_id"], (p["chunk_id"], q["chunk_id"])
        assert abs(p["score"] - q["score"]) <= 1e-6 * max(1, abs(p["score"])), \
            (p["score"], q["score"])
        n += 1
assert n > 0
PY
}

for q in "symptoms of gout" "apoptosis in cancer cells" \
    "treatment of high blood pressure in children"; do
    "$MT" search --db "$TMP/one" --group chunks --json -k 20 "$q" >"$TMP/a" 2>&1
    "$MT" search --db "$TMP/many" --group chunks --json -k 20 "$q" >"$TMP/b" 2>&1
    if same "$TMP/a" "$TMP/b" 2>"$TMP/err"; then
        ok "search '$q': the same 20 hits and scores"
    else
        not_ok "search '$q' on 1 and $n2 segments" "$(cat "$TMP/err")"
    fi
done

head -200 "$DATA/medquad/queries-dev.jsonl" >"$TMP/q.jsonl"
for src in "" pubmedqa; do
    "$MT" search --db "$TMP/one" --group chunks --queries "$TMP/q.jsonl" --jobs 2 -k 10 \
        ${src:+--source $src} >"$TMP/a" 2>/dev/null
    "$MT" search --db "$TMP/many" --group chunks --queries "$TMP/q.jsonl" --jobs 2 -k 10 \
        ${src:+--source $src} >"$TMP/b" 2>/dev/null
    if same "$TMP/a" "$TMP/b" 2>"$TMP/err"; then
        ok "--queries batch${src:+ --source $src}: the same hits for 200 queries"
    else
        not_ok "--queries batch${src:+ --source $src} on 1 and $n2 segments" \
            "$(tail -3 "$TMP/err")"
    fi
done

# One query's segments on 1, 2 and 4 threads (--search-threads): the
# same output byte for byte (hits, scores, order), for a batch and for
# one query, with -k 50, a source, a metadata filter and VerifAI's stop
# words; a dropped segment or a wrong merge changes the bytes.
cat "$TMP/q.jsonl" >"$TMP/qt.jsonl"
head -100 "$DATA/pubmedqa/queries-dev.jsonl" >>"$TMP/qt.jsonl"
threads_same() {
    local t
    for t in 1 2 4; do
        "$MT" search --db "$TMP/many" --search-threads $t "$@" \
            >"$TMP/t$t" 2>"$TMP/t$t.err" || return 1
    done
    [ -s "$TMP/t1" ] && cmp "$TMP/t1" "$TMP/t2" && cmp "$TMP/t1" "$TMP/t4"
}
for args in "-k 50" "-k 50 --source pubmedqa" "-k 50 --filter year=2005..2012" \
    "-k 10 --nltk-stopwords --group documents"; do
    # shellcheck disable=SC2086
    if threads_same --group chunks --queries "$TMP/qt.jsonl" --jobs 1 $args &&
        threads_same --group chunks --json $args "apoptosis in cancer cells"; then
        ok "--search-threads 1, 2, 4: the same bytes ($args)"
    else
        not_ok "--search-threads 1, 2, 4 ($args)" "$(cat "$TMP"/t*.err | tail -5)"
    fi
done
"$MT" search --db "$TMP/many" --search-threads 65 "gout" >"$TMP/out65" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q -- '--search-threads' "$TMP/out65"; then
    ok "--search-threads 65 refused"
else
    not_ok "--search-threads 65 refused" "rc $rc: $(cat "$TMP/out65")"
fi

metrics() {
    "$MT" retrieval-eval --db "$1" --source medquad --json \
        --queries "$TMP/q.jsonl" 2>/dev/null | python3 -c \
        'import json,sys; m=json.load(sys.stdin); print(m["queries"], m["ndcg@10"], m["mrr@10"])'
}
m1=$(metrics "$TMP/one")
m2=$(metrics "$TMP/many")
if [ -n "$m1" ] && [ "$m1" = "$m2" ]; then
    ok "retrieval-eval: the same queries, nDCG@10 and MRR@10 ($m1)"
else
    not_ok "retrieval-eval on 1 and $n2 segments" "$m1" "$m2"
fi

# Nine appends with the default max_segments (8): the ninth merges the
# four cheapest neighbouring segments first instead of rebuilding all, and
# the index still answers as one segment does.
split -n l/9 -d "$DATA/pubmedqa/corpus.jsonl" "$TMP/part-"
for f in "$TMP"/part-0*; do
    "$MT" index --db "$TMP/nine" --input "$f" --source pubmedqa \
        --no-progress >"$TMP/out9" 2>&1
done
cp -r "$TMP/nine" "$TMP/nine1"
"$MT" index --db "$TMP/nine1" --rebuild --no-progress >/dev/null 2>&1
if grep -q 'merged the 4 smallest segments' "$TMP/out9" &&
    ! grep -q 'rebuilt' "$TMP/out9" && grep -q ', 6 segments' "$TMP/out9" &&
    [ "$(segs "$TMP/nine")" = 6 ] && [ "$(segs "$TMP/nine1")" = 1 ]; then
    ok "the ninth append merges 4 small segments (6 left), no full rebuild"
else
    not_ok "the ninth append merges small segments" "$(cat "$TMP/out9")"
fi
head -100 "$DATA/pubmedqa/queries-dev.jsonl" >"$TMP/q9.jsonl"
"$MT" search --db "$TMP/nine" --group chunks --queries "$TMP/q9.jsonl" -k 10 >"$TMP/a" 2>/dev/null
"$MT" search --db "$TMP/nine1" --group chunks --queries "$TMP/q9.jsonl" -k 10 >"$TMP/b" 2>/dev/null
if same "$TMP/a" "$TMP/b" 2>"$TMP/err"; then
    ok "after the merge: the same hits and scores as one segment, 100 queries"
else
    not_ok "after the merge vs one segment" "$(tail -3 "$TMP/err")"
fi

# The same nine appends with --max-segments 3: from the fourth on, each
# merges the 2 cheapest neighbours first, so 3 segments stay, and the
# index still answers as one segment does; 0 is refused.
for f in "$TMP"/part-0*; do
    "$MT" index --db "$TMP/three" --input "$f" --source pubmedqa \
        --max-segments 3 --no-progress >"$TMP/out3" 2>&1
done
"$MT" search --db "$TMP/three" --group chunks --queries "$TMP/q9.jsonl" -k 10 >"$TMP/c" 2>/dev/null
"$MT" index --db "$TMP/three" --max-segments 0 --no-progress >"$TMP/out0" 2>&1
rc=$?
if grep -q 'merged the 2 smallest segments' "$TMP/out3" &&
    grep -q ', 3 segments' "$TMP/out3" && [ "$(segs "$TMP/three")" = 3 ] &&
    same "$TMP/c" "$TMP/b" 2>"$TMP/err" && [ $rc -ne 0 ] &&
    grep -q -- '--max-segments must be an integer in 1..65536' "$TMP/out0"; then
    ok "--max-segments 3: nine appends keep 3 segments, the hits of one; 0 refused"
else
    not_ok "--max-segments 3" "$(cat "$TMP/out3" "$TMP/out0")" "$(tail -3 "$TMP/err")"
fi
