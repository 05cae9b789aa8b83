#!/usr/bin/env bash
# Integration: `medtrust import` on the real format samples in
# $MEDTRUST_DATA/formats (counts, fields, every oddity the samples hold) and
# on broken input (truncated gzip, malformed XML, the wrong format): a clear
# error naming the file and record, and nothing half-written.
. "$(dirname "$0")/lib.sh"
F="$DATA/formats"
PM="$F/pubmed"

# jq is not a dependency: read JSONL fields with a small python3 helper
# when it is there, else with grep on the compact JSON medtrust writes.
field() { # FILE ID -> the line of document ID
    grep "^{\"id\":\"$2\"" "$1"
}

# ==== pubmed ====
"$MT" import pubmed --jsonl "$TMP/pm.jsonl" --no-progress --json \
    "$PM"/*.xml >"$TMP/res" 2>"$TMP/err"
if grep -q '"files":7,"resumed":0,"records":9,"documents":8' "$TMP/res" &&
    grep -q '"skipped":1' "$TMP/res" && [ "$(wc -l <"$TMP/pm.jsonl")" -eq 8 ]; then
    ok "pubmed: 7 sample files, 9 records, 8 written, 1 without abstract"
else
    not_ok "pubmed: sample counts" "$(cat "$TMP/res" "$TMP/err")"
fi

l=$(field "$TMP/pm.jsonl" 29768149)
if echo "$l" | grep -q '"text":"BACKGROUND: In patients with mild asthma' &&
    echo "$l" | grep -q '\\nMETHODS: ' && echo "$l" | grep -q '\\nCONCLUSIONS: ' &&
    echo "$l" | grep -q 'fast-acting β 2-agonist' &&
    echo "$l" | grep -q '"year":"2018"' &&
    echo "$l" | grep -q '"journal":"The New England journal of medicine"' &&
    echo "$l" | grep -q '"doi":"10.1056/NEJMoa1715274"' &&
    [ "$(echo "$l" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["authors"]), len(d["mesh"]), d["authors"][0])')" = "10 23 Paul M O'Byrne" ]; then
    ok "pubmed: labelled sections as LABEL: text, character references, authors, MeSH, DOI"
else
    not_ok "pubmed: the fields of PMID 29768149" "$l"
fi

if ! grep -q '"id":"12091962"' "$TMP/pm.jsonl" &&
    field "$TMP/pm.jsonl" 9997 | grep -q '"year":"1976"'; then
    ok "pubmed: a record without an abstract is skipped; unlabelled abstract kept"
else
    not_ok "pubmed: no-abstract record skipped" "$(grep -c . "$TMP/pm.jsonl")"
fi

if field "$TMP/pm.jsonl" 11748933 | grep -q 'fresh sample (P < 0.001)' &&
    field "$TMP/pm.jsonl" 29963580 | grep -q $'(1)\xc2\xa0inhaled' &&
    field "$TMP/pm.jsonl" 29963580 | grep -q $'Xe 129 \xe2\x80\x89 MRI' &&
    field "$TMP/pm.jsonl" 29963580 | grep -q '"Canadian Respiratory Research Network"' &&
    field "$TMP/pm.jsonl" 11700088 | grep -vq '"mesh"'; then
    ok "pubmed: entities decoded, NBSP and thin space kept, a CollectiveName author, no MeSH"
else
    not_ok "pubmed: entities, non-ASCII, collective author"
fi

# pubmed4 and title_with_html_tags hold PMID 27797938; the later wins.
t=$(field "$TMP/pm.jsonl" 27797938 | tail -1 | sed 's/.*"title":"\([^"]*\)".*/\1/')
"$MT" import pubmed --db "$TMP/db" --no-progress "$PM"/*.xml >/dev/null 2>&1
if [ "$t" = "Leucocyte telomere length, genetic variants at theTERTgene region and risk of pancreatic cancer." ] &&
    field "$TMP/pm.jsonl" 27797938 | head -1 | grep -q '"title":"Leucocyte telomere length, genetic variants at the TERT gene region' &&
    "$MT" stats --db "$TMP/db" | grep -Eq '^pubmed +7 documents'; then
    ok "pubmed: <i> in titles read as text; a later record of a PMID replaces the earlier"
else
    not_ok "pubmed: inline markup and replacement" "$t" "$("$MT" stats --db "$TMP/db")"
fi

"$MT" import pubmed --jsonl "$TMP/gz.jsonl" --no-progress \
    "$PM/baseline-sample.xml.gz" >/dev/null 2>&1
"$MT" import pubmed --jsonl "$TMP/plain.jsonl" --no-progress \
    "$PM/pubmed2.xml" >/dev/null 2>&1
if [ -s "$TMP/gz.jsonl" ] && cmp -s "$TMP/gz.jsonl" "$TMP/plain.jsonl"; then
    ok "pubmed: a .xml.gz reads the same as the plain file"
else
    not_ok "pubmed: .xml.gz reads the same as the plain file"
fi

out=$("$MT" import pubmed --db "$TMP/db" --no-progress --json "$PM"/*.xml 2>&1)
if echo "$out" | grep -q '"files":0,"resumed":7,"records":0'; then
    ok "pubmed: a rerun skips the files already imported whole"
else
    not_ok "pubmed: rerun resumes" "$out"
fi

# An update file: a DeleteCitation and a new version of a PMID (no sample
# holds either, so this one is written from the DTD's elements).
cat >"$TMP/pubmed25n9999.xml" <<'EOF'
<?xml version="1.0" encoding="utf-8"?>
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">
<PMID Version="1">9997</PMID><Article><Journal><Title>Biochimica et biophysica acta</Title>
<JournalIssue><PubDate><MedlineDate>1976 Sep-Oct</MedlineDate></PubDate></JournalIssue></Journal>
<ArticleTitle>Corrected title.</ArticleTitle>
<Abstract><AbstractText>Revised abstract text.</AbstractText></Abstract>
</Article></MedlineCitation></PubmedArticle>
<DeleteCitation><PMID Version="1">11748933</PMID><PMID Version="1">123</PMID></DeleteCitation>
</PubmedArticleSet>
EOF
out=$("$MT" import pubmed --db "$TMP/db" --no-progress --json "$TMP/pubmed25n9999.xml" 2>&1)
"$MT" search --db "$TMP/db" --json "revised abstract" >"$TMP/s" 2>/dev/null
if echo "$out" | grep -q '"documents":1,.*"deleted":1,"delete_missing":1' &&
    "$MT" stats --db "$TMP/db" | grep -Eq '^pubmed +6 documents' &&
    sqlite3 "$TMP/db/store.db" "SELECT title, metadata FROM documents WHERE ext_id='9997'" |
    grep -q '^Corrected title.|.*"year":"1976"'; then
    ok "pubmed: DeleteCitation deletes, a new version replaces, MedlineDate gives the year"
else
    not_ok "pubmed: update file" "$out" "$("$MT" stats --db "$TMP/db")"
fi

# ==== broken input ====
"$MT" import pubmed --db "$TMP/bad" --no-progress "$PM/truncated.xml.gz" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'truncated.xml.gz:[0-9]*: gzip data ends early' "$TMP/err" &&
    grep -q 'PMID 11748933' "$TMP/err" && grep -q 'error: nothing could be read' "$TMP/err" &&
    [ "$(sqlite3 "$TMP/bad/store.db" 'SELECT COUNT(*) FROM documents')" = 0 ]; then
    ok "truncated gzip: error names the file, line and PMID; nothing stored"
else
    not_ok "truncated gzip" "rc=$rc" "$(cat "$TMP/err")"
fi

head -c 6000 "$PM/pubmed2.xml" >"$TMP/cut.xml"
printf '</Foo>\n' >>"$TMP/cut.xml"
"$MT" import pubmed --jsonl "$TMP/cut.jsonl" --no-progress "$TMP/cut.xml" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -Eq 'cut.xml:[0-9]+: malformed XML: mismatched tag' "$TMP/err" &&
    grep -q 'PMID 11748933' "$TMP/err" && [ ! -e "$TMP/cut.jsonl" ] &&
    [ -z "$(ls "$TMP" | grep part)" ]; then
    ok "malformed XML: error names the line and PMID; no output file left"
else
    not_ok "malformed XML" "rc=$rc" "$(cat "$TMP/err")" "$(ls "$TMP")"
fi

# Files are parsed on threads of their own but written in input order: any
# thread count gives the same lines, and the update file applied after the
# samples (its new 9997 and its DeleteCitation) lands where it stood.
for t in 1 3 8; do
    "$MT" import pubmed --jsonl "$TMP/t$t.jsonl" --threads $t --no-progress \
        "$PM"/*.xml "$PM/baseline-sample.xml.gz" "$TMP/pubmed25n9999.xml" \
        "$PM"/*.xml >/dev/null 2>"$TMP/err$t"
done
"$MT" import pubmed --db "$TMP/t3db" --threads 3 --no-progress --json \
    "$PM"/*.xml "$TMP/pubmed25n9999.xml" >"$TMP/t3res" 2>&1
if [ -s "$TMP/t1.jsonl" ] && cmp -s "$TMP/t1.jsonl" "$TMP/t3.jsonl" &&
    cmp -s "$TMP/t1.jsonl" "$TMP/t8.jsonl" &&
    [ "$(grep -c . "$TMP/t1.jsonl")" -eq 19 ] &&
    grep -q '"deleted":1' "$TMP/t3res" &&
    [ "$(sqlite3 "$TMP/t3db/store.db" "SELECT title FROM documents WHERE ext_id='9997'")" = "Corrected title." ] &&
    [ "$(sqlite3 "$TMP/t3db/store.db" "SELECT COUNT(*) FROM documents WHERE ext_id='11748933'")" = 0 ]; then
    ok "threads: 1, 3 and 8 parsers give the same output, written in input order"
else
    not_ok "threads: same output in input order" "$(cat "$TMP/err1" "$TMP/err3" "$TMP/t3res")" \
        "$(wc -l "$TMP"/t?.jsonl)"
fi

# A bad file among good ones under --strict: the files before it go in
# whole (and are skipped by the rerun), the message is the bad file's own,
# the files after it are left for the rerun. (Without --strict it is
# skipped and the rest written: test_import_skip.sh.)
"$MT" import pubmed --db "$TMP/mix" --threads 4 --no-progress --strict "$PM/pubmed1.xml" \
    "$PM/pubmed2.xml" "$PM/truncated.xml.gz" "$PM/pubmed4.xml" >/dev/null 2>"$TMP/err"
rc=$?
out=$("$MT" import pubmed --db "$TMP/mix" --threads 4 --no-progress --json \
    "$PM/pubmed1.xml" "$PM/pubmed2.xml" "$PM/pubmed4.xml" 2>&1)
if [ $rc -eq 1 ] && grep -q 'truncated.xml.gz:[0-9]*: gzip data ends early' "$TMP/err" &&
    grep -q 'PMID 11748933' "$TMP/err" && [ "$(grep -c . "$TMP/err")" -eq 1 ] &&
    echo "$out" | grep -q '"files":1,"resumed":2,'; then
    ok "threads, --strict: a bad file stops the run there with its own message; a rerun resumes after the good ones"
else
    not_ok "threads: bad file among good ones" "rc=$rc" "$(cat "$TMP/err")" "$out"
fi

"$MT" import pubmed --jsonl "$TMP/w.jsonl" --no-progress "$F/pmc/efetch_pmc.xml" \
    >/dev/null 2>"$TMP/err"
rc=$?
"$MT" import pubmedqa --jsonl "$TMP/w2.jsonl" --no-progress \
    "$F/pubmedqa/test_ground_truth.json" >/dev/null 2>>"$TMP/err"
rc2=$?
"$MT" import medquad --jsonl "$TMP/w3.jsonl" --no-progress "$PM/pubmed1.xml" \
    >/dev/null 2>>"$TMP/err"
rc3=$?
if [ $rc -eq 1 ] && [ $rc2 -eq 1 ] && [ $rc3 -eq 1 ] &&
    grep -q 'efetch_pmc.xml:[0-9]*: not a PubMed file: the root element is <pmc-articleset>' "$TMP/err" &&
    grep -q 'test_ground_truth.json:2: a record is not a JSON object (is this a PubMedQA file?)' "$TMP/err" &&
    grep -q 'pubmed1.xml:[0-9]*: not a MedQuAD file' "$TMP/err" &&
    [ ! -e "$TMP/w.jsonl" ] && [ ! -e "$TMP/w2.jsonl" ] && [ ! -e "$TMP/w3.jsonl" ]; then
    ok "wrong format: a clear error naming the file, no output"
else
    not_ok "wrong format" "$rc $rc2 $rc3" "$(cat "$TMP/err")"
fi

# ==== pmc ====
"$MT" import pmc --jsonl "$TMP/pmc.jsonl" --no-progress --json "$F/pmc" \
    >"$TMP/res" 2>"$TMP/err"
l=$(field "$TMP/pmc.jsonl" PMC3585041)
if grep -q '"files":6,"resumed":0,"records":6,"documents":6' "$TMP/res" &&
    echo "$l" | grep -q '"text":"Abstract\\nRift Valley fever' &&
    echo "$l" | grep -q '\\nAbstract (summary)\\n' &&
    echo "$l" | grep -q '"pmid":"23469300","pmcid":"PMC3585041"' &&
    echo "$l" | grep -q '"license":"This is an open-access article' &&
    field "$TMP/pmc.jsonl" PMC2599765 | grep -q '"title":"Dietary Exposure to 2,2′,4,4′-Tetrabromodiphenyl' &&
    field "$TMP/pmc.jsonl" PMC2599765 | grep -q '"license":"http://creativecommons.org/publicdomain/mark/1.0/"' &&
    field "$TMP/pmc.jsonl" PMC1790863 | grep -vq '"license"' &&
    field "$TMP/pmc.jsonl" PMC8435807 | grep -q '"text":"This article was originally published with an error'; then
    ok "pmc: 6 articles; two abstracts, licences (or none), a correction notice"
else
    not_ok "pmc: samples" "$(cat "$TMP/res" "$TMP/err")" "$(echo "$l" | head -c 400)"
fi
if field "$TMP/pmc.jsonl" PMC3166277 |
    python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["text"]; assert d["sections"][:3]==["Background","Results","Discussion"], d["sections"]; assert "\nBackground\n" in t; assert "mixed-citation" not in t and len(t) > 20000; print("fine")' |
    grep -q fine; then
    ok "pmc: body sections in order, titles on their own lines, references left out"
else
    not_ok "pmc: body sections"
fi

# Authors: contribs of type author (or untyped) in article-meta, named as
# PubMed's are; a collab as it is (less its affiliation marks); editors and
# the reference list's names are not authors.
cat >"$TMP/authors.nxml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<article><front><article-meta>
<article-id pub-id-type="pmc">999</article-id>
<contrib-group>
<contrib contrib-type="author"><name><surname>Fafetine</surname><given-names>Jos&#x000e9;</given-names></name></contrib>
<contrib><collab>The  RVF Study
 Group<xref ref-type="aff" rid="a1"><sup>1</sup></xref></collab></contrib>
<contrib contrib-type="author"><name><surname>Alone</surname></name></contrib>
<contrib contrib-type="editor"><name><surname>Editor</surname><given-names>Ed</given-names></name></contrib>
</contrib-group></article-meta></front>
<body><p>Body text.</p></body>
<back><ref-list><ref><element-citation><person-group><name><surname>Cited</surname><given-names>C</given-names></name></person-group></element-citation></ref></ref-list></back>
</article>
EOF
"$MT" import pmc --jsonl "$TMP/au.jsonl" --no-progress "$TMP/authors.nxml" >/dev/null 2>"$TMP/err"
if [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["authors"])' "$TMP/au.jsonl")" = \
    "['José Fafetine', 'The RVF Study Group', 'Alone']" ] &&
    [ "$(field "$TMP/pmc.jsonl" PMC3585041 | python3 -c 'import json,sys; a=json.load(sys.stdin)["authors"]; print(len(a), a[0], a[-1])')" = \
    "6 José Fafetine J. A. W. Coetzer" ] &&
    [ "$(grep -c '"authors"' "$TMP/pmc.jsonl")" -eq 5 ]; then
    ok "pmc: authors (given-names surname, collab, surname alone; no editors, no cited names)"
else
    not_ok "pmc: authors" "$(cat "$TMP/au.jsonl" "$TMP/err")" "$(grep -c "\"authors\"" "$TMP/pmc.jsonl")" "$(field "$TMP/pmc.jsonl" PMC3585041 | head -c 300)"
fi

# ==== medquad ====
"$MT" import medquad --db "$TMP/mq" --queries "$TMP/mqq.jsonl" --no-progress \
    --json "$F/medquad" >"$TMP/res" 2>"$TMP/err"
if grep -q '"files":36,"resumed":0,"records":151,"documents":96' "$TMP/res" &&
    grep -q '"skipped":55' "$TMP/res" && grep -q '"queries":96' "$TMP/res" &&
    [ "$(wc -l <"$TMP/mqq.jsonl")" -eq 96 ]; then
    ok "medquad: 36 files, 151 pairs, 96 answered, 55 without an answer skipped"
else
    not_ok "medquad: counts" "$(cat "$TMP/res" "$TMP/err")"
fi
q=$(grep '"query":"what is holmes-adie syndrome ?"' "$TMP/mqq.jsonl")
doc=$(echo "$q" | sed 's/.*"relevant":\["\([^"]*\)"\].*/\1/')
row=$(sqlite3 "$TMP/mq/store.db" "SELECT title, metadata FROM documents WHERE ext_id='$doc'")
if echo "$q" | grep -q '"qtype":"information"' &&
    echo "$row" | grep -q '^Holmes-Adie|{"source":"NINDS","url":"http://www.ninds.nih.gov/disorders/holmes_adie/holmes_adie.htm"' &&
    grep -q '"relevant":\["mq-07c8f02aa029"\]' "$TMP/mqq.jsonl"; then
    ok "medquad: the NINDS lower-case schema; queries name their answer's id"
else
    not_ok "medquad: NINDS schema and queries" "$q" "$row"
fi
# Ids follow the prepared corpus: the SHA-1 of the answer with its white
# space folded. This answer has runs of spaces, so the SHA-1 of the raw
# text (mq-5a6fa021fb65) would differ from the prepared mqq-00314's answer.
q=$(grep '"query":"What are the symptoms of Atypical Chronic Myelogenous Leukemia ?"' "$TMP/mqq.jsonl")
if echo "$q" | grep -q '"relevant":\["mq-fcf6933b73a9"\]' &&
    sqlite3 "$TMP/mq/store.db" "SELECT text FROM documents WHERE ext_id='mq-fcf6933b73a9'" |
    grep -q '  '; then
    ok "medquad: ids are the SHA-1 of the folded answer, as in the prepared corpus"
else
    not_ok "medquad: ids as the prepared corpus" "$q"
fi
if sqlite3 "$TMP/mq/store.db" "SELECT text FROM documents" | grep -q '103° to 104' &&
    sqlite3 "$TMP/mq/store.db" "SELECT text FROM documents" | grep -q "doesn't mean that you will not get"; then
    ok "medquad: non-ASCII and &apos; entities kept"
else
    not_ok "medquad: non-ASCII and entities"
fi

# Five files of the upstream tree have the root <DiseaseFile fid source url>
# around the same Focus and QAPairs (no sample holds one): the same file
# with that root gives the same documents, ids, metadata and queries.
for f in 9_CDC_QA/0000419.xml 1_CancerGov_QA/$(ls "$F/medquad/1_CancerGov_QA" | head -1); do
    b=$(basename "$f" .xml)
    cp "$F/medquad/$f" "$TMP/doc-$b.xml"
    sed -e 's/<Document id=/<DiseaseFile fid=/' -e 's#</Document>#</DiseaseFile>#' \
        "$F/medquad/$f" >"$TMP/df-$b.xml"
done
"$MT" import medquad --jsonl "$TMP/mqdoc.jsonl" --queries "$TMP/mqdocq.jsonl" \
    --no-progress "$TMP"/doc-*.xml >/dev/null 2>"$TMP/err"
"$MT" import medquad --jsonl "$TMP/mqdf.jsonl" --queries "$TMP/mqdfq.jsonl" \
    --no-progress --json "$TMP"/df-*.xml >"$TMP/res" 2>>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$TMP"/df-*.xml | grep -c '<DiseaseFile fid=')" -eq 2 ] &&
    [ -s "$TMP/mqdf.jsonl" ] && cmp -s "$TMP/mqdoc.jsonl" "$TMP/mqdf.jsonl" &&
    cmp -s "$TMP/mqdocq.jsonl" "$TMP/mqdfq.jsonl" &&
    grep -q '"url":"http://www.cdc.gov/nczved/divisions/dfbmd/diseases/typhoid_fever/","focus":"Typhoid Fever"' "$TMP/mqdf.jsonl" &&
    grep -q '"skipped":0' "$TMP/res"; then
    ok "medquad: a <DiseaseFile> root reads as <Document> (same ids, text, url, focus, queries)"
else
    not_ok "medquad: <DiseaseFile> root" "rc=$rc" "$(cat "$TMP/err" "$TMP/res")"
fi

# ==== pubmedqa ====
"$MT" import pubmedqa --jsonl "$TMP/pq.jsonl" --queries "$TMP/pqq.jsonl" \
    --no-progress --json "$F/pubmedqa/ori_pqal.json" >"$TMP/res" 2>"$TMP/err"
l=$(field "$TMP/pq.jsonl" 21645374)
if grep -q '"records":1000,"documents":1000' "$TMP/res" &&
    grep -q '"queries":1000' "$TMP/res" &&
    echo "$l" | grep -q '"text":"BACKGROUND: Programmed cell death' &&
    echo "$l" | grep -q '\\nRESULTS: The following paper' &&
    echo "$l" | grep -q '"year":"2011","mesh":\["Alismataceae",' &&
    echo "$l" | grep -q '"label":"yes"' &&
    [ "$(grep -vc '"year"' "$TMP/pq.jsonl")" -eq 58 ] &&
    grep -q '^{"id":"pqa-21645374","query":"Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?","relevant":\["21645374"\],"answer":"yes","long_answer":"Results depicted' "$TMP/pqq.jsonl"; then
    ok "pubmedqa: 1000 records, labelled contexts, year (58 null), MeSH, label, queries"
else
    not_ok "pubmedqa: ori_pqal.json" "$(cat "$TMP/res" "$TMP/err")" "$(echo "$l" | head -c 300)"
fi
if python3 -c '
import json, sys
a = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[1])}
o = json.load(open(sys.argv[2]))
bad = [k for k, v in o.items() if a[k]["text"].split("\n")[0].split(": ", 1)[1] != v["CONTEXTS"][0]]
sys.exit(1 if bad or len(a) != len(o) else 0)' "$TMP/pq.jsonl" "$F/pubmedqa/ori_pqal.json" 2>/dev/null; then
    ok "pubmedqa: every record's first context matches the JSON (\\u escapes decoded)"
else
    not_ok "pubmedqa: contexts match the JSON"
fi
head -c 100000 "$F/pubmedqa/ori_pqal.json" >"$TMP/cut.json"
"$MT" import pubmedqa --db "$TMP/pqcut" --no-progress "$TMP/cut.json" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'cut.json:[0-9]*: the file ends inside a' "$TMP/err"; then
    ok "pubmedqa: a cut file is an error naming the line"
else
    not_ok "pubmedqa: cut file" "rc=$rc" "$(cat "$TMP/err")"
fi
# gzip through gz.c, as the XML importers read it: the same records as the
# plain file; cut short or corrupt, an error naming the file and line
gzip -c "$F/pubmedqa/ori_pqal.json" >"$TMP/pq.json.gz"
"$MT" import pubmedqa --jsonl "$TMP/pqgz.jsonl" --no-progress \
    "$TMP/pq.json.gz" >/dev/null 2>"$TMP/err"
rc=$?
head -c 100000 "$TMP/pq.json.gz" >"$TMP/cut.json.gz"
"$MT" import pubmedqa --db "$TMP/pqcutgz" --no-progress "$TMP/cut.json.gz" \
    >/dev/null 2>"$TMP/err2"
rc2=$?
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10; open(sys.argv[2], "wb").write(b)' \
    "$TMP/pq.json.gz" "$TMP/bad.json.gz"
"$MT" import pubmedqa --db "$TMP/pqbadgz" --no-progress "$TMP/bad.json.gz" \
    >/dev/null 2>"$TMP/err3"
rc3=$?
if [ $rc -eq 0 ] && cmp -s "$TMP/pq.jsonl" "$TMP/pqgz.jsonl" && [ $rc2 -eq 1 ] &&
    grep -q 'cut.json.gz:[0-9]*: gzip data ends early (truncated file)' "$TMP/err2" &&
    [ $rc3 -eq 1 ] && grep -q 'bad.json.gz:[0-9]*: gzip data is corrupt' "$TMP/err3"; then
    ok "pubmedqa: gzip input gives the plain file's records; cut or corrupt gzip names file and line"
else
    not_ok "pubmedqa: gzip input" "rc=$rc rc2=$rc2 rc3=$rc3" "$(cat "$TMP/err" "$TMP/err2" "$TMP/err3")"
fi

# ==== medrag ====
mkdir -p "$TMP/textbooks/chunk"
cat >"$TMP/textbooks/chunk/Anatomy_Gray.jsonl" <<'EOF'
{"id": "Anatomy_Gray_0", "title": "Anatomy_Gray", "content": "What is anatomy? Anatomy includes those structures that can be seen grossly.", "contents": "Anatomy_Gray. What is anatomy? Anatomy includes those structures that can be seen grossly."}
{"id": "Anatomy_Gray_1", "title": "Anatomy_Gray", "content": "The heart has four chambers. Ventricles pump blood.", "contents": "Anatomy_Gray. The heart has four chambers. Ventricles pump blood."}
EOF
"$MT" import medrag --db "$TMP/mr" --no-progress --json --chunk-size 20 \
    --chunk-overlap 5 "$TMP/textbooks" >"$TMP/res" 2>"$TMP/err"
if grep -q '"records":2,"documents":2,"unchanged":0,"chunks":2' "$TMP/res" &&
    "$MT" stats --db "$TMP/mr" | grep -Eq '^textbooks +2 documents +2 chunks'; then
    ok "medrag: one chunk per line, not re-chunked; source from the corpus folder"
else
    not_ok "medrag" "$(cat "$TMP/res" "$TMP/err")" "$("$MT" stats --db "$TMP/mr")"
fi
echo '{"title": "x", "content": "no id"}' >"$TMP/noid.jsonl"
"$MT" import medrag --db "$TMP/mr" --no-progress "$TMP/noid.jsonl" >/dev/null 2>"$TMP/err"
if grep -q "noid.jsonl:1: field 'id' missing" "$TMP/err"; then
    ok "medrag: a line without an id is skipped with a warning naming the line"
else
    not_ok "medrag: no id" "$(cat "$TMP/err")"
fi

# ==== csv ====
MEDEC=$(ls "$DATA"/medec/*.csv | head -1)
"$MT" import csv --jsonl "$TMP/csv.jsonl" --id-col "Text ID" --text-col Text \
    --no-progress --json "$MEDEC" >"$TMP/res" 2>"$TMP/err"
l=$(field "$TMP/csv.jsonl" ms-val-0)
if grep -q '"records":574,"documents":574' "$TMP/res" &&
    echo "$l" | grep -q '"text":"A 24-year-old woman' &&
    echo "$l" | grep -q '"Error Flag":"' && echo "$l" | grep -vq '"Text ID"'; then
    ok "csv: 574 MEDEC notes; other columns become metadata"
else
    not_ok "csv: MEDEC" "$(cat "$TMP/res" "$TMP/err")"
fi
"$MT" import csv --jsonl "$TMP/csv2.jsonl" --id-col "Text ID" --text-col Nope \
    --no-progress "$MEDEC" >/dev/null 2>"$TMP/err"
if grep -q "no column named 'Nope' in the header" "$TMP/err" && [ ! -e "$TMP/csv2.jsonl" ]; then
    ok "csv: a missing column is named"
else
    not_ok "csv: missing column" "$(cat "$TMP/err")"
fi

if "$MT" import --help | grep -q -- '--id-col NAME' &&
    "$MT" import --help | grep -q -- '--strict' &&
    "$MT" import --help | grep -q -- '--no-index' &&
    "$MT" import --help | grep -q -- '--follow-symlinks' &&
    "$MT" import --help | grep -q 'DeleteCitation'; then
    ok "import --help lists the formats and options"
else
    not_ok "import --help"
fi
