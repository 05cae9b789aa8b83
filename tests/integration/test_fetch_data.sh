#!/usr/bin/env bash
# Integration: scripts/fetch-data against a loopback HTTP mirror serving the
# format samples in GitHub's layout: downloads, checksum checks (the
# PubMedQA samples are the pinned upstream files, byte for byte), MedQuAD's
# tree digest, conversion into the $MEDTRUST_DATA layout, a rerun that does
# nothing, a corrupted download, and the one message without a network.
. "$(dirname "$0")/lib.sh"
F="$DATA/formats"
M="$TMP/mirror"
PQ=$M/pubmedqa/pubmedqa/1cbae8e92f72f20c8d3747cbb3bf5bc53554d997
mkdir -p "$PQ/data" "$M/abachaa/MedQuAD/archive" "$M/abachaa/MEDEC/archive" \
    "$M/congboma/MedErrBench/archive" "$TMP/pack"
cp "$F/pubmedqa/ori_pqal.json" "$F/pubmedqa/test_ground_truth.json" "$PQ/data/"
cp "$F/LICENSES/pubmedqa-LICENSE-MIT.txt" "$PQ/LICENSE"
pack() { # SRC TOP OUT.tar.gz: SRC's contents under folder TOP
    rm -rf "$TMP/pack/$2"
    cp -r "$1" "$TMP/pack/$2"
    tar -czf "$3" -C "$TMP/pack" "$2"
}
pack "$F/medquad" MedQuAD-577bd37b96c02d1833b2c9eed2de9f96964e96cb \
    "$M/abachaa/MedQuAD/archive/577bd37b96c02d1833b2c9eed2de9f96964e96cb.tar.gz"
mkdir -p "$TMP/medec-src/MEDEC-MS"
cp "$DATA"/medec/*.csv "$TMP/medec-src/MEDEC-MS/"
pack "$TMP/medec-src" MEDEC-70268d24e3ce "$M/abachaa/MEDEC/archive/70268d24e3ce.tar.gz"
pack "$DATA/mederrbench" MedErrBench-754c2e083b79 \
    "$M/congboma/MedErrBench/archive/754c2e083b79.tar.gz"

# A static file server on 127.0.0.1 and an ephemeral port.
python3 -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()' "$M" "$TMP/port" 2>/dev/null &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
export MEDTRUST_DATA_MIRROR="http://127.0.0.1:$(cat "$TMP/port")"
FD="$(dirname "$0")/../../scripts/fetch-data"

# The samples are not the whole MedQuAD tree: the pinned digest refuses it.
bash "$FD" --into "$TMP/d" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'medquad.tar.gz: tree digest [0-9a-f]* over 36 .xml files, expected 3eac4902' "$TMP/out" &&
    [ ! -e "$TMP/d/medquad" ]; then
    ok "fetch-data: a MedQuAD tree that is not the pinned one is refused"
else
    not_ok "fetch-data: MedQuAD digest check" "rc=$rc" "$(tail -5 "$TMP/out")"
fi

# The digest of the sample tree, computed here by UPSTREAM.md's definition.
digest=$(cd "$F/medquad" && find . -name '*.xml' | sed 's|^\./||' | LC_ALL=C sort |
    while IFS= read -r p; do
        printf '%s\0%s\n' "$p" "$(sha256sum "$p" | cut -c1-64)"
    done | sha256sum | cut -c1-64)
MEDTRUST_MEDQUAD_DIGEST=$digest bash "$FD" --into "$TMP/d" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 0 ] &&
    grep -q 'checked pubmedqa-ori_pqal.json (SHA-256 as pinned)' "$TMP/out" &&
    grep -q 'checked pubmedqa-test_ground_truth.json (SHA-256 as pinned)' "$TMP/out"; then
    ok "fetch-data: the PubMedQA files pass their pinned SHA-256"
else
    not_ok "fetch-data: PubMedQA checksums" "rc=$rc" "$(tail -5 "$TMP/out")"
fi
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/d/pubmedqa/corpus.jsonl")" -eq 1000 ] &&
    [ "$(wc -l <"$TMP/d/pubmedqa/queries-dev.jsonl")" -eq 500 ] &&
    [ "$(wc -l <"$TMP/d/medquad/corpus.jsonl")" -eq 96 ] &&
    [ "$(wc -l <"$TMP/d/medquad/queries-dev.jsonl")" -eq 96 ] &&
    cmp -s "$TMP/d/medec/"*.csv "$DATA"/medec/*.csv &&
    [ "$(ls "$TMP"/d/mederrbench/{train,validation,test}/*.csv | wc -l)" -eq 9 ] &&
    [ -f "$TMP/d/pubmedqa/LICENSE" ] && [ -f "$TMP/d/mederrbench/LICENSE" ]; then
    ok "fetch-data: converted into the MEDTRUST_DATA layout (corpus, 500 dev queries, CSVs)"
else
    not_ok "fetch-data: layout" "rc=$rc" "$(ls -R "$TMP/d" | head -30)"
fi
if MEDTRUST_DATA="$TMP/d" "$MT" index --db "$TMP/db" --input "$TMP/d/pubmedqa/corpus.jsonl" \
    --no-progress >/dev/null 2>&1 &&
    "$MT" retrieval-eval --db "$TMP/db" --queries "$TMP/d/pubmedqa/queries-dev.jsonl" \
        --json 2>/dev/null | grep -q '"queries":500'; then
    ok "fetch-data: the converted corpus and queries work with index and retrieval-eval"
else
    not_ok "fetch-data: converted data usable"
fi

MEDTRUST_MEDQUAD_DIGEST=$digest bash "$FD" --into "$TMP/d" >"$TMP/out" 2>&1
if ! grep -q downloading "$TMP/out" && grep -q 'all data sets are in' "$TMP/out"; then
    ok "fetch-data: a second run downloads and converts nothing"
else
    not_ok "fetch-data: rerun" "$(cat "$TMP/out")"
fi

# A corrupted download is caught and removed.
mkdir -p "$TMP/e/.download"
echo '{}' >"$TMP/e/.download/pubmedqa-ori_pqal.json"
MEDTRUST_MEDQUAD_DIGEST=$digest bash "$FD" --into "$TMP/e" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'pubmedqa-ori_pqal.json: SHA-256 [0-9a-f]*, expected 8b3276be' "$TMP/out" &&
    [ ! -e "$TMP/e/.download/pubmedqa-ori_pqal.json" ] && [ ! -e "$TMP/e/pubmedqa" ]; then
    ok "fetch-data: a download with the wrong checksum is refused and removed"
else
    not_ok "fetch-data: bad checksum" "rc=$rc" "$(tail -3 "$TMP/out")"
fi

# No network: one clear message naming what to download and where.
MEDTRUST_DATA_MIRROR=http://127.0.0.1:1 bash "$FD" --into "$TMP/n" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'cannot reach http://127.0.0.1:1/abachaa/MedQuAD/archive/577bd37b96c02d1833b2c9eed2de9f96964e96cb.tar.gz (no network?)' "$TMP/out" &&
    grep -q "put them in $TMP/n/.download/" "$TMP/out" &&
    grep -q 'data/ori_pqal.json' "$TMP/out" && grep -q -- '-> mederrbench.tar.gz' "$TMP/out"; then
    ok "fetch-data: without a network, one message names each download and where to put it"
else
    not_ok "fetch-data: no network" "rc=$rc" "$(cat "$TMP/out")"
fi
