#!/usr/bin/env bash
# Integration: `medtrust index` and `stats` on the real MedQuAD corpus, re-runs
# without duplicates, --help of every verb, and clear errors on bad input.
. "$(dirname "$0")/lib.sh"
MQ="$DATA/medquad/corpus.jsonl"

out=$("$MT" index --db "$TMP/db" --input "$MQ" --source medquad \
    --no-progress 2>"$TMP/err")
if echo "$out" | grep -Eq 'indexed 15809 documents, [0-9]+ chunks'; then
    ok "index reports 15,809 MedQuAD documents and a chunk count"
else
    not_ok "index reports 15,809 MedQuAD documents" "$out" "$(cat "$TMP/err")"
fi
chunks=$(echo "$out" | sed -n 's/.*documents, \([0-9]*\) chunks.*/\1/p')

stats=$("$MT" stats --db "$TMP/db" --json --check)
if echo "$stats" | grep -q "\"source\":\"medquad\",\"documents\":15809,\"chunks\":$chunks"; then
    ok "stats prints the per-source counts"
else
    not_ok "stats prints the per-source counts" "$stats"
fi

out=$("$MT" index --db "$TMP/db" --input "$MQ" --source medquad \
    --no-progress 2>&1)
stats2=$("$MT" stats --db "$TMP/db" --json)
if [ "$stats" = "$stats2" ]; then
    ok "re-indexing the same ids adds no duplicates"
else
    not_ok "re-indexing the same ids adds no duplicates" "$stats2"
fi
if echo "$out" | grep -q 'indexed 0 documents, 0 chunks.*15809 unchanged' &&
    echo "$out" | grep -q 'search index: 0 chunks added'; then
    ok "re-indexing an unchanged corpus rewrites nothing"
else
    not_ok "re-indexing an unchanged corpus rewrites nothing" "$out"
fi

"$MT" index --db "$TMP/db" --input "$DATA/pubmedqa/corpus.jsonl" \
    --source pubmedqa --json --no-progress >"$TMP/pq" 2>/dev/null
if grep -q '"documents":1000' "$TMP/pq" &&
    "$MT" stats --db "$TMP/db" | grep -Eq '^total +16809 documents'; then
    ok "a second source adds to the total"
else
    not_ok "a second source adds to the total" "$(cat "$TMP/pq")"
fi

for verb in index stats; do
    if "$MT" "$verb" --help | grep -q -- '--db DIR'; then
        ok "$verb --help lists its options"
    else
        not_ok "$verb --help lists its options"
    fi
done
if "$MT" --help | grep -q 'index' && "$MT" --version | grep -q medtrust; then
    ok "top-level --help and --version"
else
    not_ok "top-level --help and --version"
fi

"$MT" index --db "$TMP/db2" --input "$TMP/missing.jsonl" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'missing.jsonl' "$TMP/err"; then
    ok "a missing input file is exit 1 naming the file"
else
    not_ok "a missing input file is exit 1 naming the file" "rc=$rc" \
        "$(cat "$TMP/err")"
fi

printf '{"id":"a","text":"x"}\n{"id":"b","text":\n{"id":"c","text":"y"}\n' \
    >"$TMP/bad.jsonl"
"$MT" index --db "$TMP/db3" --input "$TMP/bad.jsonl" --no-progress \
    2>"$TMP/err" >/dev/null
rc=$?
if [ $rc -eq 1 ] && grep -q 'bad.jsonl:2' "$TMP/err"; then
    ok "a malformed line is exit 1 naming file and line"
else
    not_ok "a malformed line is exit 1 naming file and line" "rc=$rc" \
        "$(cat "$TMP/err")"
fi
out=$("$MT" index --db "$TMP/db4" --input "$TMP/bad.jsonl" --skip-bad \
    --no-progress 2>&1)
if echo "$out" | grep -q 'indexed 2 documents.*skipped 1 malformed'; then
    ok "--skip-bad skips and reports the count"
else
    not_ok "--skip-bad skips and reports the count" "$out"
fi

"$MT" index --db "$TMP/db5" --input "$MQ" --batch 0 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q -- '--batch must be' "$TMP/err"; then
    ok "an out-of-range option is refused with its bounds"
else
    not_ok "an out-of-range option is refused" "rc=$rc" "$(cat "$TMP/err")"
fi

"$MT" stats --db "$TMP/none" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'medtrust index' "$TMP/err"; then
    ok "stats on a missing store says how to create one"
else
    not_ok "stats on a missing store" "rc=$rc" "$(cat "$TMP/err")"
fi

"$MT" index --db "$TMP/db6" --input "$TMP/bad.jsonl" --analyzer klingon \
    2>"$TMP/err" >/dev/null
rc=$?
if [ $rc -eq 1 ] && grep -q "unknown analyzer 'klingon'.*english" "$TMP/err"; then
    ok "an unknown analyzer is refused, listing the valid ones"
else
    not_ok "an unknown analyzer is refused" "rc=$rc" "$(cat "$TMP/err")"
fi

# --threads: the same corpus indexed on 1 and on 2 analysis threads writes
# the same index files, byte for byte: in several segments (--segment-mb
# 1), then with use-lite vectors (also several segments), and an
# out-of-range count is refused by name.
same_index() {
    local a=$1 b=$2 f n=0
    for f in "$a"/index/*; do
        cmp -s "$f" "$b/index/${f##*/}" || return 1
        n=$((n + 1))
    done
    [ "$n" = "$(ls "$b/index" | wc -l)" ] && echo "$n"
}
head -n 2500 "$MQ" >"$TMP/mq.jsonl"
head -n 120 "$MQ" >"$TMP/mqv.jsonl"
for th in 1 2; do
    "$MT" index --db "$TMP/t$th" --input "$TMP/mq.jsonl" --threads "$th" \
        --segment-mb 1 --json --no-progress >>"$TMP/tout" 2>&1
    "$MT" index --db "$TMP/v$th" --input "$TMP/mqv.jsonl" --threads "$th" \
        --embedder use-lite --segment-mb 1 --json --no-progress \
        >>"$TMP/tout" 2>&1
done
nt=$(same_index "$TMP/t1" "$TMP/t2")
nv=$(same_index "$TMP/v1" "$TMP/v2")
bad=$("$MT" index --db "$TMP/t1" --threads 65 2>&1)
if [ "${nt:-0}" -ge 7 ] && [ "${nv:-0}" -ge 7 ] &&
    ls "$TMP"/v2/index/*.vec >/dev/null 2>&1 &&
    echo "$bad" | grep -q -- '--threads must be'; then
    ok "--threads 1 and 2 write the same segments ($nt and $nv files)"
else
    not_ok "--threads 1 and 2 write the same segments" "files: $nt, $nv" \
        "$(cat "$TMP/tout")" "$bad" "$(ls -l "$TMP"/t1/index "$TMP"/t2/index \
        "$TMP"/v1/index "$TMP"/v2/index)"
fi

# `stats --check` reads every byte of the index: the postings' and the
# vectors' checksums, which opening the index leaves (a search still
# answers over such damage; the check names the file and the section).
flip_mid() { # FILE SECTION-ID: flips the middle byte of that section
    python3 - "$1" "$2" <<'PY'
import struct, sys
path, want = sys.argv[1], sys.argv[2].encode()
b = bytearray(open(path, "rb").read())
toff, n = struct.unpack_from("<QI", b, 24)
for i in range(n):
    sid, off, size = struct.unpack_from("<4s4xQQ", b, toff + 32 * i)
    if sid == want:
        b[off + size // 2] ^= 0x10
        open(path, "wb").write(b)
        sys.exit(0)
sys.exit("no section " + sys.argv[2])
PY
}
sound=$("$MT" stats --db "$TMP/v2" --check 2>"$TMP/cerr")
rc_sound=$?
vec=$(ls "$TMP"/v2/index/*.vec | head -1)
bm=$(ls "$TMP"/v2/index/*.bm25 | tail -1)
flip_mid "$vec" VCOD && flip_mid "$bm" POST
"$MT" stats --db "$TMP/v2" --check >"$TMP/cout" 2>"$TMP/cerr"
rc=$?
hits=$("$MT" search --db "$TMP/v2" --json leukemia 2>&1 | grep -c '"doc_id"')
if [ "$rc_sound" = 0 ] && echo "$sound" | grep -q 'every checksum sound' &&
    [ "$rc" != 0 ] && grep -q "${vec##*/}: section 'VCOD' checksum mismatch" "$TMP/cerr" &&
    grep -q "2 of [0-9]* segments damaged" "$TMP/cerr" &&
    grep -q "damaged segment: .*${bm##*/}: section 'POST' checksum mismatch" "$TMP/cerr" &&
    grep -q -- "--rebuild" "$TMP/cerr" && [ "$hits" -gt 0 ]; then
    ok "stats --check finds damage in the postings and vectors that opening leaves"
else
    not_ok "stats --check finds damage in the postings and vectors" \
        "sound rc=$rc_sound: $sound" "damaged rc=$rc: $(cat "$TMP/cout")" \
        "$(cat "$TMP/cerr")" "hits: $hits"
fi
