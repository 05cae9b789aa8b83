#!/usr/bin/env bash
# Runs each libFuzzer target that `make fuzz` built (build/fuzz/fuzzers,
# or $MEDTRUST_FUZZ_BUILD) for a few seconds ($MEDTRUST_FUZZ_SECONDS,
# default 5; `make fuzz FUZZ_SECONDS=600` runs this with that) on its seed
# corpus: the committed seeds of tests/fuzz/NAME_seeds (the regression
# inputs of what the fuzzers found, among them), files some harnesses
# write themselves (vectors, segments, schemas), small samples of the
# upstream formats in $MEDTRUST_DATA/formats (copied at run time, never
# committed) and replies, CSV and JSONL written here. One test per
# target: it passes when the run ends without a crash, leak, sanitizer
# report or timeout and executed at least one input.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=${MEDTRUST_FUZZ_BUILD:-$ROOT/build/fuzz}/fuzzers
SECS=${MEDTRUST_FUZZ_SECONDS:-5}
LOGS=${MEDTRUST_BUILD:-$ROOT/build/test}/test-logs
TARGETS=$(cd "$ROOT/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
FMT=$DATA/formats
for t in $TARGETS; do
    need "$t built by make fuzz" "$F/$t"
done
need "the format samples" "$FMT/pubmed" "$FMT/pmc" "$FMT/medquad" \
    "$FMT/pubmedqa/ori_pqal.json"

# put DIR NAME BYTES...: writes printf-formatted BYTES into DIR/NAME.
put() { local d=$1 n=$2; shift 2; printf "$@" >"$d/$n"; }

# by_path DIR FILES...: copies each file, named by its path under formats/
# (MedQuAD's folders share file names).
by_path() {
    local d=$1 s
    shift
    for s in "$@"; do cp "$s" "$d/$(echo "${s#"$FMT"/}" | tr / _)"; done
}

csv_seeds() { # DIR PREFIX: CSV files; PREFIX is the harness's option byte
    put "$1" a.csv "$2"'id,title,text\n1,Aspirin,"Aspirin, taken daily, ""may"" help."\n2,,plain\n'
    put "$1" b.csv "$2"'\xef\xbb\xbfid,text\r\n"a\r\nb",x\r\n3,"multi\nline"\r\n'
    put "$1" c.csv "$2"'id\ttext\n7\tone\ttoo many\n"open quote\n'
}

jsonl_seeds() {
    head -c 3000 "$DATA/pubmedqa/corpus.jsonl" | head -3 >"$1/pqa.part"
    { printf '\0'; cat "$1/pqa.part"; } >"$1/pqa.jsonl"
    { printf '\1'; cat "$1/pqa.part"; printf '{"x":\n[1]\n\n'; } >"$1/bad.jsonl"
    put "$1" long.jsonl '\2{"id":"%0100d"}\r\n\xef\xbb\xbf{}\n' 7
    rm -f "$1/pqa.part"
}

pubmedqa_seed() { # the first three questions of the labelled set
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(dict(list(d.items())[:3])))' "$FMT/pubmedqa/ori_pqal.json" >"$1/pqal3.json"
    head -c 4000 "$FMT/pubmedqa/test_ground_truth.json" >"$1/truth_head.json"
}

reply_seeds() {
    put "$1" plain '{"sentence_id": 3, "correction": "Aspirin.", "confidence": "85%%"}'
    put "$1" fence 'Here:\n```json\n{"verdict":"SUPPORT","ok":"yes"}\n```\n'
    put "$1" prose 'I think {"a": {"b": "}"}} and {"error": true, "sentence_id": "2"}.'
    put "$1" repair 'no json at all\0{"final": {"id": -1}}'
}

eval_seeds() { # option byte (0 reference CSV, 1 submission, 2 scores)
    python3 - "$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv" "$1/ref.csv" <<'PY'
import csv, io, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))[:4]
b = io.StringIO()
csv.writer(b).writerows(rows)
open(sys.argv[2], "wb").write(b"\0" + b.getvalue().encode())
PY
    put "$1" sub.txt '\1ms-val-0 1 3 "Aspirin is given."\r\nms-val-1 0 -1 NA\nbad line\nms-val-0 1 2 x\n'
    put "$1" scores.txt '\2# BLEURT\nms-val-0 0.5\nms-val-1\t0.25\nid,score\n'
}

llm_seeds() { # option byte (1 stream, 2 two completions, 4 HTTP 500) + body
    put "$1" plain '\0{"choices":[{"index":0,"message":{"role":"assistant","content":"{\\"answer\\": 1}"}}],"usage":{"prompt_tokens":9,"completion_tokens":4}}'
    put "$1" two '\2{"choices":[{"message":{"content":"a"}},{"message":{"content":"b\\u00e9"}}]}'
    put "$1" stream '\1data: {"choices":[{"delta":{"content":"{\\"a\\""}}]}\n\ndata: {"choices":[{"delta":{"content":": 1}"}}]}\r\n\r\ndata: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\r\rdata: [DONE]\n\n'
    put "$1" split '\1: comment\nevent: x\ndata: {"choices":\ndata: [{"delta":{"content":"\\u00e9t\\u00e9"}}]}\n\ndata: {"error":{"message":"boom"}}\n\n'
    put "$1" e500 '\4{"error":{"message":"overloaded"}}'
}

# seed_corpus TARGET DIR: fills DIR with the target's seeds.
seed_corpus() {
    local t=$1 d=$2
    if [ -d "$ROOT/tests/fuzz/${t#fuzz_}_seeds" ]; then
        cp "$ROOT/tests/fuzz/${t#fuzz_}_seeds"/* "$d/"
    fi
    case $t in
    fuzz_vec) FUZZ_VEC_SEED=$d "$F/$t" -runs=0 "$d" >/dev/null 2>&1 ;;
    fuzz_segment) FUZZ_SEGMENT_SEED=$d "$F/$t" -runs=0 "$d" >/dev/null 2>&1 ;;
    fuzz_gbnf) FUZZ_GBNF_SEED=$d "$F/$t" -runs=0 "$d" >/dev/null 2>&1 ;;
    fuzz_xml) by_path "$d" "$FMT"/pubmed/*.xml "$FMT"/medquad/*/*.xml \
        "$FMT"/pmc/efetch_pmc.xml ;;
    fuzz_import_pubmed) by_path "$d" "$FMT"/pubmed/* ;;
    fuzz_import_pmc) by_path "$d" "$FMT"/pmc/* ;;
    fuzz_import_medquad) by_path "$d" "$FMT"/medquad/*/*.xml ;;
    fuzz_import_pubmedqa) pubmedqa_seed "$d" ;;
    fuzz_import_medrag)
        put "$d" m.jsonl '{"id":"pubmed23n0001_0","title":"T","content":"C.","contents":"T. C."}\n{"id":"x","contents":"only"}\n' ;;
    fuzz_import_csv) csv_seeds "$d" '' ;;
    fuzz_import_pdf) # cairo's PDFs, drawn by the test build's fixture
        ASAN_OPTIONS=detect_leaks=0 \
            "${MEDTRUST_BUILD:-$ROOT/build/test}/fixtures/make_pdf" "$d" ;;
    fuzz_csv) csv_seeds "$d" '\0' && put "$d" small.csv '\4a,b,c,d,e\n"%070d"\n' 1 ;;
    fuzz_jsonl) jsonl_seeds "$d" ;;
    fuzz_reply) reply_seeds "$d" ;;
    fuzz_eval) eval_seeds "$d" ;;
    fuzz_llm_reply) llm_seeds "$d" ;;
    esac
}

for t in $TARGETS; do
    c=$TMP/$t.corpus
    mkdir -p "$c"
    seed_corpus "$t" "$c"
    n=$(ls "$c" | wc -l)
    # -detect_leaks stays on (ASan); artifacts land in $TMP, not the tree.
    (cd "$TMP" && timeout $((SECS + 120)) "$F/$t" -max_total_time="$SECS" \
        -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
        -artifact_prefix="$TMP/$t-" "$c") >"$TMP/$t.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$TMP/$t.log" | tail -1)
    if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ "${runs:-0}" -gt 0 ]; then
        ok "$t: ${runs} inputs in ${SECS} s from $n seeds, no finding"
    else
        mkdir -p "$LOGS" && cp "$TMP/$t".log "$TMP/$t"-* "$LOGS/" 2>/dev/null
        not_ok "$t" "rc=$rc, $n seeds, ${runs:-no} runs (log and input in $LOGS)" \
            "$(grep -E 'ERROR|SUMMARY' "$TMP/$t.log" | head -4)"
    fi
done
