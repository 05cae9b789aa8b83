#!/usr/bin/env bash
# Integration (issue 36): `medtrust import pdf` on PDFs drawn here with
# cairo (tests/fixtures/make_pdf.c): one document a page with its page
# number in the metadata; a two-column page in reading order; a word
# hyphenated at a line end joined, a compound's hyphen inside a line kept;
# the running header (on 3 of 4 pages) and the "Page N of 4" footer
# dropped; the title from the document info, else the first large line; a
# scanned PDF (no text) and a file that is not a PDF skipped and named,
# exit 1; --db keeps the page filterable.
. "$(dirname "$0")/lib.sh"
FIX=${MEDTRUST_BUILD:-$(dirname "$MT")}/fixtures/make_pdf
need "make_pdf (make unit-build)" "$FIX"
need_verb import

mkdir -p "$TMP/pdf"
if ! ASAN_OPTIONS=detect_leaks=0 "$FIX" "$TMP/pdf" 2>"$TMP/err"; then
    not_ok "the test PDFs are drawn" "$(cat "$TMP/err")"
    exit 1
fi

# field FILE ID KEY: the value of KEY in the line of document ID
field() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["id"] == sys.argv[2]:
        print(o.get(sys.argv[3], ""))' "$1" "$2" "$3"
}

"$MT" import pdf --jsonl "$TMP/g.jsonl" --no-progress --json \
    "$TMP/pdf/guideline.pdf" >"$TMP/res" 2>"$TMP/err"
rc=$?
p1=$(field "$TMP/g.jsonl" 'guideline#p1' text)
p2=$(field "$TMP/g.jsonl" 'guideline#p2' text)
p3=$(field "$TMP/g.jsonl" 'guideline#p3' text)
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/g.jsonl")" -eq 4 ] &&
    [ "$(field "$TMP/g.jsonl" 'guideline#p3' page)" = 3 ] &&
    [ "$(field "$TMP/g.jsonl" 'guideline#p3' pages)" = 4 ]; then
    ok "one document a page, its page number and the page count in the metadata"
else
    not_ok "pages" "rc=$rc" "$(cat "$TMP/err" "$TMP/g.jsonl" | head -5)"
fi
p4=$(field "$TMP/g.jsonl" 'guideline#p4' text)
case $p1$p4 in
*"If the difference between arms"*"repeat the measurements. Offer"*"Monitor adults with hypertension every year."*)
    ok "words hyphenated at line ends are joined ('-' and U+2010)" ;;
*) not_ok "hyphenation" "$p1" "$p4" ;;
esac
case $p3 in
*"low-dose thiazide-like diuretic Before"*) ok "hyphens inside a line are kept" ;;
*) not_ok "hyphens inside a line" "$p3" ;;
esac
case $p2 in
"Left column first: "*"Step one ends here. Right column second: "*"End of the right column.")
    ok "two columns are read in reading order (left, then right)" ;;
*) not_ok "two columns" "$p2" ;;
esac
if ! grep -q 'NICE guideline NG136' "$TMP/g.jsonl" && ! grep -q 'Page [0-9] of 4' "$TMP/g.jsonl" &&
    case $p1 in "Hypertension in adults Blood pressure"*) true ;; *) false ;; esac; then
    ok "the running header (3 of 4 pages) and the page-number footer are dropped; the first page's own heading is kept"
else
    not_ok "headers and footers" "$(cut -c1-300 "$TMP/g.jsonl")"
fi
t=$(field "$TMP/g.jsonl" 'guideline#p2' title)
t2=$("$MT" import pdf --jsonl "$TMP/n.jsonl" --no-progress "$TMP/pdf/notitle.pdf" \
    >/dev/null 2>&1 && field "$TMP/n.jsonl" 'notitle#p1' title)
if [ "$t" = "Hypertension in adults: diagnosis and management" ] &&
    [ "$t2" = "Management of Sepsis" ]; then
    ok "title from the document info, else the first large line"
else
    not_ok "titles" "info: '$t'" "large line: '$t2'"
fi

# a scanned PDF and a file that is not a PDF: skipped and named
printf 'not a pdf\n' >"$TMP/pdf/broken.pdf"
"$MT" import pdf --jsonl "$TMP/all.jsonl" --no-progress --json "$TMP/pdf" \
    >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/all.jsonl")" -eq 5 ] &&
    grep -q '"bad_files": *2' "$TMP/res" &&
    grep -q 'scanned.pdf: no text on any of its 2 pages (a scanned PDF? import pdf does no OCR.*(skipped)$' "$TMP/err" &&
    grep -q 'broken.pdf: not a readable PDF: .*(skipped)$' "$TMP/err"; then
    ok "a scanned PDF and a broken one are skipped and named; the rest imported; exit 1"
else
    not_ok "bad PDFs" "rc=$rc" "$(cat "$TMP/res" "$TMP/err" | head -8)"
fi

"$MT" import pdf --db "$TMP/db" --no-progress --source guidelines \
    "$TMP/pdf/guideline.pdf" >/dev/null 2>"$TMP/err"
rc=$?
pg=$(sqlite3 "$TMP/db/store.db" "select json_extract(metadata,'\$.page') from documents where ext_id='guideline#p2'" 2>&1)
hits=$("$MT" search --db "$TMP/db" --json --filter page=2..2 adults 2>&1 |
    python3 -c 'import json,sys; print(" ".join(json.loads(l)["doc_id"] for l in sys.stdin if l.startswith("{")))')
if [ $rc -eq 0 ] && [ "$pg" = 2 ] && [ "$hits" = 'guideline#p2' ]; then
    ok "--db: each page a document with its page in the metadata; search --filter page=2..2 finds only page 2"
else
    not_ok "--db" "rc=$rc page=$pg hits=$hits" "$(head -5 "$TMP/err")"
fi
