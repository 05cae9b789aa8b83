#!/usr/bin/env bash
# Integration: scripts/fetch-data as a user has it, against a loopback HTTP
# mirror laid out as MEDTRUST_DATA_MIRROR expects (OWNER/REPO/COMMIT/PATH
# and OWNER/REPO/archive/COMMIT.tar.gz), serving archives written here in
# the shape of the upstream repositories at the pinned commits:
#   MedQuAD-COMMIT/{LICENSE.txt,readme.txt,N_FOLDER/*.xml}: the 36 real
#     format samples (the NINDS lower-case schema, empty <QAPairs>, empty
#     answers, &apos;/&quot;, non-ASCII) plus <DiseaseFile> roots in
#     6_NINDS_QA and 9_CDC_QA (as five upstream files have), character and
#     entity references, a CRLF file and one broken (truncated) file;
#   MEDEC-COMMIT/MEDEC-MS/*.csv (CRLF line ends) + README.md;
#   MedErrBench-COMMIT/datasets/{train,validation,test}/*.csv + LICENSE;
#   pubmedqa/pubmedqa/COMMIT/{data/ori_pqal.json,data/test_ground_truth.json,
#     LICENSE}: the pinned upstream files, byte for byte.
# It checks that every set is built, the broken file skipped, named and the
# set kept as partial; that a set whose download fails is listed failed
# with why, the exit status is 1 and the others are still built; a rerun
# that does nothing; a MedErrBench CSV that is not MEDEC-format skipped
# (partial); sets not asked for; checksum and digest refusals; no network.
. "$(dirname "$0")/lib.sh"
F="$DATA/formats"
M="$TMP/mirror"
FD="$(dirname "$0")/../../scripts/fetch-data"
MQC=577bd37b96c02d1833b2c9eed2de9f96964e96cb
PQ=$M/pubmedqa/pubmedqa/1cbae8e92f72f20c8d3747cbb3bf5bc53554d997
MQ_TGZ=$M/abachaa/MedQuAD/archive/$MQC.tar.gz
ME_TGZ=$M/abachaa/MEDEC/archive/70268d24e3ce.tar.gz
MB_TGZ=$M/congboma/MedErrBench/archive/754c2e083b79.tar.gz
MEDEC_CSV=MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv
mkdir -p "$PQ/data" "$(dirname "$MQ_TGZ")" "$(dirname "$ME_TGZ")" \
    "$(dirname "$MB_TGZ")" "$TMP/src"
cp "$F/pubmedqa/ori_pqal.json" "$F/pubmedqa/test_ground_truth.json" "$PQ/data/"
cp "$F/LICENSES/pubmedqa-LICENSE-MIT.txt" "$PQ/LICENSE"
pack() { # TOP OUT.tar.gz: $TMP/src/TOP as GitHub packs an archive
    tar -czf "$2" -C "$TMP/src" "$1"
}
crlf() { sed -i 's/\r*$/\r/' "$1"; } # every line end CRLF

# ---- MedQuAD, with every variant ----
T=$TMP/src/MedQuAD-$MQC
cp -r "$F/medquad" "$T"
cp "$F/LICENSES/MedQuAD-LICENSE-CC-BY-4.0.txt" "$T/LICENSE.txt"
# <DiseaseFile>, as upstream 9_CDC_QA/0000397.xml: <UMLS> under the root,
# pids with gaps, entities, an empty answer.
cat >"$T/9_CDC_QA/0000397.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<DiseaseFile fid="0000397" source="CDC" url="http://www.cdc.gov/parasites/taeniasis/">
<Focus>Parasites - Taeniasis</Focus>
<UMLS>
<CUI></CUI>
<SemanticType></SemanticType>
<SemanticGroup></SemanticGroup>
</UMLS>
<QAPairs>
<QAPair pid="1">
<Question qid="0000397-1" qtype="information">What is (are) Parasites - Taeniasis ?</Question>
<Answer>Taeniasis in humans is a parasitic infection caused by the tapeworm species Taenia saginata (beef tapeworm). Persons who don&apos;t eat raw or undercooked beef are not likely to get taeniasis.</Answer>
</QAPair>
<QAPair pid="7">
<Question qid="0000397-7" qtype="prevention">How to prevent Parasites - Taeniasis ?</Question>
<Answer>Cook meat to at least 145&#176; F (63&#xB0; C). According to USDA, &quot;A &apos;rest time&apos; is the amount of time the product remains at the final temperature&quot; &amp; more.</Answer>
</QAPair>
<QAPair pid="8">
<Question qid="0000397-8" qtype="outlook">What is the outlook for Parasites - Taeniasis ?</Question>
<Answer></Answer>
</QAPair>
</QAPairs>
</DiseaseFile>
XML
# <DiseaseFile> in 6_NINDS_QA, with CRLF line ends.
cat >"$T/6_NINDS_QA/0000150.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<DiseaseFile fid="0000150" source="NINDS" url="http://www.ninds.nih.gov/disorders/taenia_ninds/">
<Focus>Neurocysticercosis</Focus>
<QAPairs>
<QAPair pid="1">
<Question qid="0000150-1" qtype="information">What is (are) Neurocysticercosis ?</Question>
<Answer>Neurocysticercosis is a brain infection caused by the larval cysts of the pork tapeworm (Gr&#246;&#223;e unknown); the patient&#8217;s seizures are its most common sign.</Answer>
</QAPair>
</QAPairs>
</DiseaseFile>
XML
crlf "$T/6_NINDS_QA/0000150.xml"
crlf "$T/3_GHR_QA/0000708.xml" # a real file, CRLF
# One broken file: cut off in the middle of an answer.
head -c 600 "$F/medquad/1_CancerGov_QA/0000007_5.xml" >"$T/1_CancerGov_QA/0009999.xml"
pack "MedQuAD-$MQC" "$MQ_TGZ"
# The tree digest of this snapshot, by UPSTREAM.md's definition.
digest=$(cd "$T" && find . -name '*.xml' | sed 's|^\./||' | LC_ALL=C sort |
    while IFS= read -r p; do
        printf '%s\0%s\n' "$p" "$(sha256sum "$p" | cut -c1-64)"
    done | sha256sum | cut -c1-64)

# ---- MEDEC: MEDEC-MS/, CRLF CSVs ----
T=$TMP/src/MEDEC-70268d24e3ce
mkdir -p "$T/MEDEC-MS"
cp "$DATA/medec/$MEDEC_CSV" "$T/MEDEC-MS/"
crlf "$T/MEDEC-MS/$MEDEC_CSV"
echo "# MEDEC Dataset" >"$T/README.md"
pack MEDEC-70268d24e3ce "$ME_TGZ"

# ---- MedErrBench: datasets/SPLIT/*.csv ----
T=$TMP/src/MedErrBench-754c2e083b79
mkdir -p "$T/datasets"
cp -r "$DATA"/mederrbench/{train,validation,test} "$T/datasets/"
chmod -R u+w "$T"
crlf "$T/datasets/validation/reviewed_data_EN_validation.csv"
cp "$DATA/mederrbench/LICENSE" "$T/"
echo "# MedErrBench" >"$T/README.md"
pack MedErrBench-754c2e083b79 "$MB_TGZ"

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
run() { # DIR [SETS...]: fetch-data --into DIR, output in $TMP/out, rc in $rc
    local d=$1
    shift
    MEDTRUST_MEDQUAD_DIGEST=$digest bash "$FD" --into "$d" "$@" >"$TMP/out" 2>&1
    rc=$?
}
status() { # SET: its line of the summary
    sed -n "s/^fetch-data:   $1 *//p" "$TMP/out"
}

# ==== Every set built; the broken file skipped, named, the set partial ====
run "$TMP/d"
D=$TMP/d
if [ $rc -eq 0 ] &&
    status medquad | grep -q '^partial  1 files and 0 records skipped (listed in medquad/skipped.txt)' &&
    [ "$(status pubmedqa)" = ready ] && [ "$(status medec)" = ready ] &&
    [ "$(status mederrbench)" = ready ]; then
    ok "fetch-data: all four sets built; MedQuAD partial (one file skipped); exit 0"
else
    not_ok "fetch-data: all four sets" "rc=$rc" "$(tail -12 "$TMP/out")"
fi
if [ "$(cat "$D/medquad/skipped.txt" 2>/dev/null | wc -l)" -eq 1 ] &&
    grep -q '^1_CancerGov_QA/0009999.xml' "$D/medquad/skipped.txt" &&
    grep -q 'warn.*1_CancerGov_QA/0009999.xml' "$TMP/out" &&
    [ -s "$D/medquad/corpus.jsonl" ] && [ -f "$D/medquad/.fetched" ] &&
    [ ! -e "$D/medquad.part" ]; then
    ok "fetch-data: the broken MedQuAD file is warned about and listed in medquad/skipped.txt; the rest kept"
else
    not_ok "fetch-data: skipped file listed" "$(cat "$D/medquad/skipped.txt" 2>&1)" \
        "$(grep -i warn "$TMP/out" | head -3)"
fi

# The variants, read as MedQuAD: both <DiseaseFile> roots, entities and
# character references decoded, CRLF gone, empty answers not documents.
py() { python3 - "$@"; }
if py "$D/medquad/corpus.jsonl" "$D/medquad/queries-dev.jsonl" <<'PY'; then
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
qs = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
text = {d["id"]: d["text"] for d in docs}
def has(s):
    return [d for d in docs if s in d["text"]]
a = has("Persons who don't eat raw or undercooked beef")
assert len(a) == 1 and a[0]["title"] == "Parasites - Taeniasis", a
assert a[0].get("url") == "http://www.cdc.gov/parasites/taeniasis/", a[0]
b = has('145\u00b0 F (63\u00b0 C). According to USDA, "A \'rest time\' is')
assert len(b) == 1 and '" & more.' in b[0]["text"], b
c = has("larval cysts of the pork tapeworm (Gr\u00f6\u00dfe unknown); the patient\u2019s")
assert len(c) == 1 and c[0]["title"] == "Neurocysticercosis", c
assert not any("\r" in d["text"] for d in docs)
assert has("Myostatin-related muscle hypertrophy is a rare condition")
assert not any(d["text"].strip() == "" for d in docs)
# the questions of the <DiseaseFile> answers point at them
q = [x for x in qs if x["query"] == "What is (are) Parasites - Taeniasis ?"]
assert len(q) == 1 and q[0]["relevant"] == [a[0]["id"]], q
q = [x for x in qs if x["query"] == "What is (are) Neurocysticercosis ?"]
assert len(q) == 1 and q[0]["relevant"] == [c[0]["id"]], q
assert not [x for x in qs if x["query"].startswith("What is the outlook for Parasites")]
PY
    ok "fetch-data: MedQuAD's <DiseaseFile> files (6_NINDS_QA, 9_CDC_QA), entities, CRLF and empty answers read"
else
    not_ok "fetch-data: MedQuAD variants"
fi
if [ "$(wc -l <"$D/pubmedqa/corpus.jsonl")" -eq 1000 ] &&
    [ "$(wc -l <"$D/pubmedqa/queries-dev.jsonl")" -eq 500 ] &&
    grep -q 'checked pubmedqa-ori_pqal.json (SHA-256 as pinned)' "$TMP/out" &&
    cmp -s "$D/medec/$MEDEC_CSV" "$TMP/src/MEDEC-70268d24e3ce/MEDEC-MS/$MEDEC_CSV" &&
    grep -q "MEDEC: MEDEC-MS/$MEDEC_CSV: 574 notes" "$TMP/out" &&
    [ "$(ls "$D"/mederrbench/{train,validation,test}/*.csv | wc -l)" -eq 9 ] &&
    [ ! -e "$D/mederrbench/skipped.txt" ] &&
    [ -f "$D/pubmedqa/LICENSE" ] && [ -f "$D/mederrbench/LICENSE" ] &&
    [ -f "$D/medquad/LICENSE.txt" ]; then
    ok "fetch-data: PubMedQA (1,000 docs, 500 dev queries), MEDEC (574 notes, CRLF) and MedErrBench (9 CSVs) in the MEDTRUST_DATA layout"
else
    not_ok "fetch-data: layout" "$(ls -R "$D" | head -30)"
fi
if "$MT" index --db "$TMP/db" --input "$D/medquad/corpus.jsonl" --no-progress \
    >/dev/null 2>&1 &&
    "$MT" retrieval-eval --db "$TMP/db" --queries "$D/medquad/queries-dev.jsonl" \
        --json 2>/dev/null | grep -q '"queries":[1-9]'; then
    ok "fetch-data: the partial MedQuAD corpus and its queries work with index and retrieval-eval"
else
    not_ok "fetch-data: converted data usable"
fi

# ==== A rerun downloads and converts nothing, and says the same ====
run "$TMP/d"
if [ $rc -eq 0 ] && ! grep -q downloading "$TMP/out" &&
    status medquad | grep -q '^partial  (already in place) 1 files and 0 records skipped' &&
    [ "$(status medec)" = "ready    (already in place)" ]; then
    ok "fetch-data: a second run downloads and converts nothing; MedQuAD still listed partial"
else
    not_ok "fetch-data: rerun" "$(cat "$TMP/out")"
fi

# ==== A download that fails: that set failed, the others built, exit 1 ====
mv "$ME_TGZ" "$TMP/medec.hidden"
run "$TMP/e"
mv "$TMP/medec.hidden" "$ME_TGZ"
if [ $rc -eq 1 ] &&
    status medec | grep -q "^failed   downloading $MEDTRUST_DATA_MIRROR/abachaa/MEDEC/archive/70268d24e3ce.tar.gz failed (the server answered with an HTTP error)" &&
    status medquad | grep -q '^partial' && [ "$(status pubmedqa)" = ready ] &&
    [ "$(status mederrbench)" = ready ] && [ ! -e "$TMP/e/medec" ] &&
    [ ! -e "$TMP/e/medec.part" ] && [ -s "$TMP/e/pubmedqa/corpus.jsonl" ] &&
    [ -s "$TMP/e/medquad/corpus.jsonl" ] &&
    [ "$(ls "$TMP"/e/mederrbench/*/*.csv | wc -l)" -eq 9 ] &&
    grep -q 'some data sets failed' "$TMP/out"; then
    ok "fetch-data: a failed download is listed failed with why, exit 1, the other three still built"
else
    not_ok "fetch-data: one failed download" "rc=$rc" "$(tail -8 "$TMP/out")"
fi
run "$TMP/e"
if [ $rc -eq 0 ] && [ "$(status medec)" = ready ] &&
    [ "$(grep -c downloading "$TMP/out")" -eq 1 ]; then
    ok "fetch-data: run again, it fetches only the failed set"
else
    not_ok "fetch-data: rerun after a failure" "rc=$rc" "$(tail -8 "$TMP/out")"
fi

# ==== A corrupted download: refused and removed; sets asked for alone ====
mkdir -p "$TMP/f/.download"
echo '{}' >"$TMP/f/.download/pubmedqa-ori_pqal.json"
run "$TMP/f" pubmedqa medec
if [ $rc -eq 1 ] &&
    status pubmedqa | grep -q 'failed   .*pubmedqa-ori_pqal.json: SHA-256 [0-9a-f]*, expected 8b3276be.*removed, run again' &&
    [ ! -e "$TMP/f/.download/pubmedqa-ori_pqal.json" ] && [ ! -e "$TMP/f/pubmedqa" ] &&
    [ "$(status medec)" = ready ] &&
    [ "$(status medquad)" = "skipped  (not asked for)" ] &&
    [ "$(status mederrbench)" = "skipped  (not asked for)" ]; then
    ok "fetch-data: a download with the wrong checksum fails its set (removed); sets not asked for are skipped"
else
    not_ok "fetch-data: bad checksum" "rc=$rc" "$(tail -6 "$TMP/out")"
fi

# ==== A MedErrBench CSV that is not MEDEC-format: skipped, set partial ====
cp "$MB_TGZ" "$TMP/mb.good"
T=$TMP/src/MedErrBench-754c2e083b79
printf 'id,note\r\n1,a note without the MEDEC columns\r\n' \
    >"$T/datasets/test/reviewed_data_EN_test.csv"
pack MedErrBench-754c2e083b79 "$MB_TGZ"
run "$TMP/h" mederrbench
mv "$TMP/mb.good" "$MB_TGZ"
if [ $rc -eq 0 ] &&
    [ "$(status mederrbench)" = "partial  1 files skipped (listed in mederrbench/skipped.txt); 8 CSVs kept" ] &&
    grep -q '^datasets/test/reviewed_data_EN_test.csv: .*missing column(s): Text ID' "$TMP/h/mederrbench/skipped.txt" &&
    [ ! -e "$TMP/h/mederrbench/test/reviewed_data_EN_test.csv" ] &&
    [ "$(ls "$TMP"/h/mederrbench/*/*.csv | wc -l)" -eq 8 ]; then
    ok "fetch-data: a MedErrBench CSV that is not MEDEC-format is skipped and listed; the set partial, the 8 others kept"
else
    not_ok "fetch-data: bad MedErrBench CSV" "rc=$rc" "$(tail -6 "$TMP/out")" \
        "$(cat "$TMP/h/mederrbench/skipped.txt" 2>&1)"
fi

# ==== A MedQuAD tree that is not the pinned one is refused ====
bash "$FD" --into "$TMP/g" medquad >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] &&
    status medquad | grep -q 'failed   medquad.tar.gz: tree digest [0-9a-f]* over 39 .xml files, expected 3eac4902' &&
    [ ! -e "$TMP/g/medquad" ]; then
    ok "fetch-data: a MedQuAD tree that is not the pinned one is refused"
else
    not_ok "fetch-data: MedQuAD digest check" "rc=$rc" "$(tail -5 "$TMP/out")"
fi

# ==== No network: each set failed, one message naming every download ====
MEDTRUST_DATA_MIRROR=http://127.0.0.1:1 bash "$FD" --into "$TMP/n" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] &&
    status medquad | grep -q "failed   cannot reach http://127.0.0.1:1/abachaa/MedQuAD/archive/$MQC.tar.gz (no network?)" &&
    status mederrbench | grep -q '^failed   cannot reach' &&
    [ "$(grep -c "put them in $TMP/n/.download/" "$TMP/out")" -eq 1 ] &&
    grep -q 'data/ori_pqal.json' "$TMP/out" && grep -q -- '-> mederrbench.tar.gz' "$TMP/out"; then
    ok "fetch-data: without a network every set is failed and one message names each download and where to put it"
else
    not_ok "fetch-data: no network" "rc=$rc" "$(cat "$TMP/out")"
fi
