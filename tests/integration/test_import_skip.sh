#!/usr/bin/env bash
# Integration (#29 §1, §2, #39 row 6): no single file aborts a corpus. In
# each multi-file format a file or record that cannot be read (malformed,
# a truncated .gz, refused as hostile, a line that is not JSON) is skipped
# with a warning naming FILE:LINE and why, counted in the summary and in
# --json, and the rest is written; exit 1 when anything was skipped, 0 when
# nothing was; --strict makes the first such error fatal. Folder walks do
# not follow symbolic links out of the folder (--follow-symlinks does).
# `import --db` leaves a searchable store (--no-index for bulk steps).
. "$(dirname "$0")/lib.sh"
F="$DATA/formats"
PM="$F/pubmed"

jget() { # FILE KEY -> the value of KEY in the --json line of FILE
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(list,dict)) or v is None else v)' "$1" "$2" 2>/dev/null
}

# ==== medquad: a malformed file and a hostile one in the tree ====
cp -r "$F/medquad" "$TMP/mq"
head -c 700 "$F/medquad/9_CDC_QA/0000003.xml" >"$TMP/mq/9_CDC_QA/0000999.xml"
cat >"$TMP/mq/9_CDC_QA/0000998.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE Document [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<Document id="0000998" source="CDC" url="http://example.org/">
<Focus>&xxe;</Focus>
<QAPairs><QAPair pid="1"><Question qid="0000998-1" qtype="information">What?</Question>
<Answer>&xxe;</Answer></QAPair></QAPairs>
</Document>
EOF
cat >"$TMP/mq/6_NINDS_QA/0000996.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<DiseaseFile fid="0000996" source="NINDS" url="http://example.org/ninds/x.htm">
<Focus>Example Disorder</Focus>
<QAPairs>
<QAPair pid="1"><Question qid="0000996-1" qtype="information">What is (are) Example Disorder ?</Question>
<Answer>Example disorder is a made-up condition used to test the importer's reading of the DiseaseFile root.</Answer></QAPair>
</QAPairs>
</DiseaseFile>
EOF
"$MT" import medquad --jsonl "$TMP/mq.jsonl" --queries "$TMP/mqq.jsonl" \
    --no-progress --json --threads 3 "$TMP/mq" >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" files)" = 37 ] &&
    [ "$(jget "$TMP/res" bad_files)" = 2 ] && [ "$(jget "$TMP/res" bad_records)" = 0 ] &&
    [ "$(jget "$TMP/res" documents)" = 97 ] && [ "$(wc -l <"$TMP/mq.jsonl")" -eq 97 ] &&
    [ "$(wc -l <"$TMP/mqq.jsonl")" -eq 97 ] &&
    grep -q '"focus":"Example Disorder"' "$TMP/mq.jsonl" &&
    grep -Eq '^medtrust: warning: .*/9_CDC_QA/0000998.xml:2: .*ENTITY and ATTLIST declarations in the DOCTYPE are not supported.* \(skipped\)$' "$TMP/err" &&
    grep -Eq '^medtrust: warning: .*/9_CDC_QA/0000999.xml:[0-9]+: .* \(skipped\)$' "$TMP/err" &&
    [ "$(grep -c 'warning' "$TMP/err")" -eq 2 ] && ! grep -q root: "$TMP/mq.jsonl" &&
    [ "$(jget "$TMP/res" skips | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 2 ]; then
    ok "medquad: a malformed and an XXE file are skipped, named by FILE:LINE and counted; the other 37 are written; exit 1"
else
    not_ok "medquad: skipped files" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi

"$MT" import medquad --jsonl "$TMP/mqs.jsonl" --queries "$TMP/mqsq.jsonl" --strict \
    --no-progress "$TMP/mq" >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ ! -e "$TMP/mqs.jsonl" ] && [ ! -e "$TMP/mqsq.jsonl" ] &&
    grep -Eq '^medtrust: error: .*/9_CDC_QA/0000998.xml:2: .*ENTITY' "$TMP/err" &&
    ! grep -q warning "$TMP/err" && [ -z "$(ls "$TMP" | grep part)" ]; then
    ok "medquad --strict: the first unreadable file is an error; no output"
else
    not_ok "medquad --strict" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi

"$MT" import medquad --jsonl "$TMP/mq0.jsonl" --no-progress --json "$F/medquad" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$TMP/err" ] && [ "$(jget "$TMP/res" bad_files)" = 0 ] &&
    [ "$(jget "$TMP/res" bad_records)" = 0 ] && [ "$(jget "$TMP/res" links_skipped)" = 0 ] &&
    [ "$(jget "$TMP/res" skips)" = "[]" ]; then
    ok "nothing skipped: exit 0, no warning, zero counts"
else
    not_ok "nothing skipped: exit 0" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi

# ==== pubmed: a truncated .gz among good files, a record without PMID ====
cat >"$TMP/nopmid.xml" <<'EOF'
<?xml version="1.0" encoding="utf-8"?>
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">
<Article><ArticleTitle>No PMID here.</ArticleTitle>
<Abstract><AbstractText>Lost record text.</AbstractText></Abstract></Article>
</MedlineCitation></PubmedArticle>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">
<PMID Version="1">424242</PMID><Article><ArticleTitle>Kept.</ArticleTitle>
<Abstract><AbstractText>Kept record text about zebrafish fins.</AbstractText></Abstract></Article>
</MedlineCitation></PubmedArticle>
</PubmedArticleSet>
EOF
"$MT" import pubmed --db "$TMP/pm" --no-progress --json --threads 2 "$PM/pubmed1.xml" \
    "$PM/truncated.xml.gz" "$TMP/nopmid.xml" "$PM/pubmed4.xml" >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" files)" = 3 ] &&
    [ "$(jget "$TMP/res" bad_files)" = 1 ] && [ "$(jget "$TMP/res" bad_records)" = 1 ] &&
    grep -q 'truncated.xml.gz:[0-9]*: gzip data ends early (truncated file) (in PubmedArticle 1, PMID 11748933) (skipped)' "$TMP/err" &&
    grep -q 'nopmid.xml:6: PubmedArticle 1 has no PMID (skipped)' "$TMP/err" &&
    [ "$(sqlite3 "$TMP/pm/store.db" "SELECT COUNT(*) FROM documents WHERE ext_id='424242'")" = 1 ] &&
    [ "$(sqlite3 "$TMP/pm/store.db" "SELECT COUNT(*) FROM documents WHERE text LIKE 'Lost record%'")" = 0 ]; then
    ok "pubmed: a truncated .gz is skipped for its file and a record without PMID for itself; the rest is committed"
else
    not_ok "pubmed: truncated .gz and record skips" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi
# the rerun skips the three files taken whole and reads the skipped one again
"$MT" import pubmed --db "$TMP/pm" --no-progress --json --threads 2 "$PM/pubmed1.xml" \
    "$PM/truncated.xml.gz" "$TMP/nopmid.xml" "$PM/pubmed4.xml" >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" resumed)" = 3 ] && [ "$(jget "$TMP/res" bad_files)" = 1 ] &&
    grep -q 'truncated.xml.gz' "$TMP/err"; then
    ok "pubmed: a rerun resumes after the whole files and tries the skipped one again"
else
    not_ok "pubmed: rerun after a skip" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi

# a truncated .gz with whole records before the cut keeps them: 40
# records, the gzip stream cut at 60 %
python3 - "$TMP/cut.xml.gz" "$TMP/whole.xml" <<'EOF'
import gzip, sys
recs = "".join(
    '<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">'
    '<PMID Version="1">%d</PMID><Article><ArticleTitle>Title %d.</ArticleTitle>'
    '<Abstract><AbstractText>Abstract number %d about %s.</AbstractText>'
    '</Abstract></Article></MedlineCitation></PubmedArticle>\n'
    % (900000 + i, i, i, "x" * (i * 37 % 500)) for i in range(40))
xml = ('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n' + recs +
       '</PubmedArticleSet>\n').encode()
open(sys.argv[2], 'wb').write(xml)
z = gzip.compress(xml)
open(sys.argv[1], 'wb').write(z[:len(z) * 6 // 10])
EOF
"$MT" import pubmed --jsonl "$TMP/cut.jsonl" --no-progress --json "$TMP/cut.xml.gz" \
    "$PM/pubmed1.xml" >"$TMP/res" 2>"$TMP/err"
rc=$?
"$MT" import pubmed --jsonl "$TMP/whole.jsonl" --no-progress "$TMP/whole.xml" >/dev/null 2>&1
n=$(grep -c '"id":"9000' "$TMP/cut.jsonl")
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" bad_files)" = 1 ] && [ "$(jget "$TMP/res" files)" = 1 ] &&
    grep -q 'cut.xml.gz:[0-9]*: gzip data ends early' "$TMP/err" &&
    [ "$n" -gt 5 ] && [ "$n" -lt 40 ] &&
    [ "$(grep '"id":"9000' "$TMP/cut.jsonl")" = "$(head -n "$n" "$TMP/whole.jsonl")" ]; then
    ok "truncated .gz: the $n whole records before the cut are written, the file counted as skipped"
else
    not_ok "truncated .gz keeps what was read" "rc=$rc n=$n" "$(cat "$TMP/res" "$TMP/err")"
fi

# hostile files in a folder (a gzip bomb whose one tag inflates to 40 MB,
# elements nested 300 deep) are refused as before, each now a skipped file;
# --strict keeps the first refusal the import's error
mkdir -p "$TMP/hostile"
cp "$PM/pubmed1.xml" "$TMP/hostile/a.xml"
python3 - "$TMP/hostile" <<'EOF'
import gzip, sys
d = sys.argv[1]
with gzip.open(d + "/b-bomb.xml.gz", "wb", 9) as f:
    f.write(b'<?xml version="1.0"?>\n<PubmedArticleSet>\n<')
    for _ in range(40):
        f.write(b"a" * (1 << 20))
open(d + "/c-deep.xml", "w").write(
    '<?xml version="1.0"?>\n<PubmedArticleSet>\n' + "<x>" * 300 + "</x>" * 300 +
    "</PubmedArticleSet>\n")
EOF
cp "$PM/pubmed4.xml" "$TMP/hostile/d.xml"
"$MT" import pubmed --jsonl "$TMP/h.jsonl" --no-progress --json "$TMP/hostile" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
"$MT" import pubmed --jsonl "$TMP/hs.jsonl" --no-progress --strict "$TMP/hostile" \
    >/dev/null 2>"$TMP/err2"
rc2=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" files)" = 2 ] && [ "$(jget "$TMP/res" bad_files)" = 2 ] &&
    [ -s "$TMP/h.jsonl" ] &&
    grep -Eq '^medtrust: warning: .*/b-bomb.xml.gz:[0-9]+: .*over 16 MiB.*\(skipped\)$' "$TMP/err" &&
    grep -Eq '^medtrust: warning: .*/c-deep.xml:[0-9]+: .*\(skipped\)$' "$TMP/err" &&
    [ $rc2 -eq 1 ] && [ ! -e "$TMP/hs.jsonl" ] &&
    grep -q '^medtrust: error: .*/b-bomb.xml.gz' "$TMP/err2"; then
    ok "hostile files (gzip bomb, deep nesting) are refused by file and line: skipped, or under --strict the error"
else
    not_ok "hostile files skipped" "rc=$rc rc2=$rc2" "$(cat "$TMP/res" "$TMP/err" "$TMP/err2")"
fi

# the only input cannot be read: nothing written, an error, exit 1
"$MT" import pubmed --jsonl "$TMP/none.jsonl" --no-progress "$F/pmc/efetch_pmc.xml" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ ! -e "$TMP/none.jsonl" ] &&
    grep -q 'efetch_pmc.xml:[0-9]*: not a PubMed file' "$TMP/err" &&
    grep -q '^medtrust: error: .*nothing could be read' "$TMP/err"; then
    ok "nothing readable: an error, no output file"
else
    not_ok "nothing readable" "rc=$rc" "$(cat "$TMP/err")"
fi

# ==== pmc ====
mkdir -p "$TMP/pmc"
cp "$F/pmc"/*.nxml "$TMP/pmc/"
head -c 3000 "$F/pmc/pone.0000217.nxml" >"$TMP/pmc/broken.nxml"
"$MT" import pmc --jsonl "$TMP/pmc.jsonl" --no-progress --json "$TMP/pmc" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" files)" = 5 ] && [ "$(jget "$TMP/res" bad_files)" = 1 ] &&
    [ "$(wc -l <"$TMP/pmc.jsonl")" -eq 5 ] &&
    grep -Eq 'broken.nxml:[0-9]+: .*\(skipped\)$' "$TMP/err"; then
    ok "pmc: a cut article is skipped and named; the other 5 are written"
else
    not_ok "pmc: skipped file" "rc=$rc" "$(cat "$TMP/res" "$TMP/err")"
fi

# ==== medrag: bad lines are records, skipped one by one ====
mkdir -p "$TMP/textbooks/chunk"
cat >"$TMP/textbooks/chunk/A.jsonl" <<'EOF'
{"id": "A_0", "title": "A", "content": "The heart has four chambers."}
{"id": "A_1", "title": "A", "content": "cut off
{"title": "A", "content": "a line without an id"}
{"id": "A_3", "title": "A", "content": "Ventricles pump blood."}
EOF
cat >"$TMP/textbooks/chunk/B.jsonl" <<'EOF'
{"id": "B_0", "title": "B", "content": "Kidneys filter blood."}
EOF
ln -s nowhere.jsonl "$TMP/textbooks/chunk/C.jsonl" # a file that cannot be opened
"$MT" import medrag --jsonl "$TMP/mr.jsonl" --no-progress --json "$TMP/textbooks" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
"$MT" import medrag --jsonl "$TMP/mrs.jsonl" --no-progress --strict \
    "$TMP/textbooks/chunk/A.jsonl" "$TMP/textbooks/chunk/B.jsonl" \
    >/dev/null 2>"$TMP/err2"
rc2=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" files)" = 2 ] && [ "$(jget "$TMP/res" bad_records)" = 2 ] &&
    [ "$(jget "$TMP/res" bad_files)" = 1 ] && [ "$(wc -l <"$TMP/mr.jsonl")" -eq 3 ] &&
    grep -q 'C.jsonl: a symbolic link that leads nowhere' "$TMP/err" &&
    grep -q 'A.jsonl:2: invalid JSON' "$TMP/err" &&
    grep -q "A.jsonl:3: field 'id' missing" "$TMP/err" &&
    [ $rc2 -eq 1 ] && [ ! -e "$TMP/mrs.jsonl" ] &&
    grep -q '^medtrust: error: .*A.jsonl:2: invalid JSON' "$TMP/err2"; then
    ok "medrag: a line that is not JSON and one without an id are skipped and named, a file that cannot be opened too; --strict stops at the first"
else
    not_ok "medrag: record skips" "rc=$rc rc2=$rc2" "$(cat "$TMP/res" "$TMP/err" "$TMP/err2")"
fi

# ==== pubmedqa and csv: a bad file in a folder ====
mkdir -p "$TMP/pq"
cp "$F/pubmedqa/ori_pqal.json" "$TMP/pq/"
head -c 5000 "$F/pubmedqa/ori_pqal.json" >"$TMP/pq/cut.json"
"$MT" import pubmedqa --jsonl "$TMP/pq.jsonl" --no-progress --json "$TMP/pq" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
mkdir -p "$TMP/csv"
printf 'id,text\nn1,First note text.\nn2,Second note text.\n,no id here\n' >"$TMP/csv/a.csv"
printf 'key,body\nx,y\n' >"$TMP/csv/b.csv"
"$MT" import csv --jsonl "$TMP/csv.jsonl" --id-col id --text-col text --no-progress \
    --json "$TMP/csv" >"$TMP/res2" 2>"$TMP/err2"
rc2=$?
# (cut.json's whole records before the cut are written too)
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" bad_files)" = 1 ] && [ "$(jget "$TMP/res" files)" = 1 ] &&
    [ "$(wc -l <"$TMP/pq.jsonl")" -eq "$(jget "$TMP/res" documents)" ] &&
    [ "$(wc -l <"$TMP/pq.jsonl")" -gt 1000 ] &&
    grep -q 'cut.json:[0-9]*: the file ends inside a' "$TMP/err" &&
    [ $rc2 -eq 1 ] && [ "$(jget "$TMP/res2" bad_files)" = 1 ] && [ "$(jget "$TMP/res2" bad_records)" = 1 ] &&
    [ "$(wc -l <"$TMP/csv.jsonl")" -eq 2 ] &&
    grep -q "b.csv:1: no column named 'id' in the header (skipped)" "$TMP/err2" &&
    grep -q "a.csv:4: empty id in column 'id' (skipped)" "$TMP/err2"; then
    ok "pubmedqa and csv: a cut file, a file without the column and a row without an id are skipped and named"
else
    not_ok "pubmedqa and csv skips" "rc=$rc rc2=$rc2" "$(cat "$TMP/res" "$TMP/err" "$TMP/res2" "$TMP/err2")"
fi

# ==== symbolic links (#39 row 6) ====
mkdir -p "$TMP/outside/etcdir" "$TMP/mql/9_CDC_QA" "$TMP/pmcl"
cp "$F/medquad/9_CDC_QA/0000003.xml" "$TMP/mql/9_CDC_QA/"
sed -e 's/<Document id="0000419"/<Document id="0000777"/' \
    -e 's/Persons with typhoid fever usually/Outside secret persons usually/' \
    "$F/medquad/9_CDC_QA/0000419.xml" >"$TMP/outside/secret.xml"
ln -s "$TMP/outside/secret.xml" "$TMP/mql/9_CDC_QA/0000777.xml"
ln -s 0000003.xml "$TMP/mql/9_CDC_QA/0000004.xml" # within the folder
ln -s .. "$TMP/mql/9_CDC_QA/loop"                  # within, and a loop
"$MT" import medquad --jsonl "$TMP/l.jsonl" --no-progress --json "$TMP/mql" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
"$MT" import medquad --jsonl "$TMP/lf.jsonl" --no-progress --json --follow-symlinks \
    "$TMP/mql" >"$TMP/res2" 2>"$TMP/err2"
rc2=$?
if [ $rc -eq 1 ] && [ "$(jget "$TMP/res" links_skipped)" = 1 ] &&
    ! grep -q 'Outside secret' "$TMP/l.jsonl" && [ -s "$TMP/l.jsonl" ] &&
    grep -q "0000777.xml: a symbolic link to $TMP/outside/secret.xml, outside $TMP/mql: not followed (--follow-symlinks follows it) (skipped)" "$TMP/err" &&
    grep -q 'loop: a loop of symbolic links' "$TMP/err" &&
    [ "$(jget "$TMP/res" files)" = 2 ] &&
    grep -q 'Outside secret' "$TMP/lf.jsonl" && [ "$(jget "$TMP/res2" links_skipped)" = 0 ]; then
    ok "medquad folder: a link to an outside file is skipped and named; within the folder followed; --follow-symlinks follows it"
else
    not_ok "medquad folder symlinks" "rc=$rc rc2=$rc2" "$(cat "$TMP/res" "$TMP/err" "$TMP/res2" "$TMP/err2")"
fi

cp "$F/pmc/pone.0000217.nxml" "$TMP/pmcl/"
cp "$F/pmc/ehp-116-1694.nxml" "$TMP/outside/etcdir/"
ln -s "$TMP/outside/etcdir" "$TMP/pmcl/etc"
"$MT" import pmc --jsonl "$TMP/pl.jsonl" --no-progress --json "$TMP/pmcl" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
"$MT" import pmc --jsonl "$TMP/plf.jsonl" --no-progress --json --follow-symlinks \
    "$TMP/pmcl" >"$TMP/res2" 2>"$TMP/err2"
rc2=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/pl.jsonl")" -eq 1 ] &&
    [ "$(jget "$TMP/res" links_skipped)" = 1 ] &&
    grep -q "pmcl/etc: a symbolic link to $TMP/outside/etcdir, outside $TMP/pmcl: not followed" "$TMP/err" &&
    [ $rc2 -eq 0 ] && [ "$(wc -l <"$TMP/plf.jsonl")" -eq 2 ]; then
    ok "pmc folder: a link to an outside directory is not walked; --follow-symlinks walks it"
else
    not_ok "pmc folder symlinks" "rc=$rc rc2=$rc2" "$(cat "$TMP/res" "$TMP/err" "$TMP/res2" "$TMP/err2")"
fi

# ==== import --db leaves a searchable store (#29 §2) ====
"$MT" import pubmed --db "$TMP/s" --no-progress "$PM/pubmed-29768149.xml" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
"$MT" search --db "$TMP/s" --json "budesonide formoterol asthma" >"$TMP/hits" 2>"$TMP/err2"
if [ $rc -eq 0 ] && grep -q '^search index: [1-9][0-9]* chunks added' "$TMP/out" &&
    grep -q '29768149' "$TMP/hits"; then
    ok "import --db brings the search index up to date: search finds the document"
else
    not_ok "import --db then search" "rc=$rc" "$(cat "$TMP/out" "$TMP/err" "$TMP/hits" "$TMP/err2")"
fi

"$MT" import pubmed --db "$TMP/b" --no-progress --no-index "$PM/pubmed-29768149.xml" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
"$MT" search --db "$TMP/b" --json "budesonide" >"$TMP/hits" 2>"$TMP/err2"
rc2=$?
"$MT" import pubmed --db "$TMP/b" --no-progress --json "$TMP/nopmid.xml" \
    >"$TMP/res" 2>"$TMP/err3"
"$MT" search --db "$TMP/b" --json "budesonide" >"$TMP/hits2" 2>/dev/null
"$MT" search --db "$TMP/b" --json "zebrafish fins" >"$TMP/hits3" 2>/dev/null
if [ $rc -eq 0 ] && grep -q 'search index not updated (--no-index)' "$TMP/out" &&
    [ $rc2 -ne 0 ] && grep -q '29768149' "$TMP/hits2" && grep -q '424242' "$TMP/hits3" &&
    [ "$(jget "$TMP/res" index | python3 -c 'import json,sys; print(json.load(sys.stdin)["chunks_added"] > 1)')" = True ]; then
    ok "import --no-index leaves the index for a later step, which indexes both loads"
else
    not_ok "import --no-index" "rc=$rc rc2=$rc2" "$(cat "$TMP/out" "$TMP/err" "$TMP/err2" "$TMP/res" "$TMP/err3")"
fi

# the index update fails (a bad embedder): the import stays committed and
# the error says how to finish
"$MT" import pubmed --db "$TMP/e" --no-progress --embedder bogus:x "$PM/pubmed1.xml" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "the import is committed, but the search index was not updated (fix this, then run 'medtrust index --db $TMP/e'): embedder 'bogus:x'" "$TMP/err" &&
    [ "$(sqlite3 "$TMP/e/store.db" 'SELECT COUNT(*) FROM documents')" = 1 ]; then
    ok "import --db: a failed index update keeps the import and says what to run"
else
    not_ok "import --db index failure" "rc=$rc" "$(cat "$TMP/err")"
fi
