#!/usr/bin/env bash
# Integration (issue 16, item 11): readers name the file and line and say
# what is wrong: a reference CSV row with fewer fields than its header, a
# submission line holding a NUL byte, `index --input DIR`, a CSV import
# field that is not UTF-8; an empty index
# input is a warning with the count 0, and an error under --strict.
. "$(dirname "$0")/lib.sh"
REF="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
python3 - "$REF" "$TMP/ref.csv" "$TMP/run.txt" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))[:6]
w = csv.writer(open(sys.argv[2], "w", encoding="utf-8", newline=""))
w.writerows(rows[:3])
w.writerow(rows[3][:2])  # a short row (the 4th record)
w.writerows(rows[4:])
ids = [r[rows[0].index("Text ID")] for r in rows[1:]]
with open(sys.argv[3], "wb") as f:
    for i, x in enumerate(ids):
        f.write(("%s 0 -1 NA" % x).encode() + (b"\0junk" if i == 2 else b"") + b"\n")
PY
"$MT" score --ref "$TMP/ref.csv" --pred "$TMP/run.txt" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "ref.csv:[0-9]*: 2 fields where the header has 9" "$TMP/err"; then
    ok "a reference row shorter than its header is refused, naming file and line"
else
    not_ok "short reference row (rc $rc)" "$(cat "$TMP/err")"
fi
python3 - "$REF" "$TMP/ref6.csv" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))[:6]
csv.writer(open(sys.argv[2], "w", encoding="utf-8", newline="")).writerows(rows)
PY
"$MT" score --ref "$TMP/ref6.csv" --pred "$TMP/run.txt" \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "run.txt:3: NUL byte at column" "$TMP/err"; then
    ok "a submission line with a NUL byte is refused, naming file and line"
else
    not_ok "NUL in a submission (rc $rc)" "$(cat "$TMP/err")"
fi
mkdir -p "$TMP/dir"
"$MT" index --db "$TMP/db" --input "$TMP/dir" --no-progress >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "dir: is a directory" "$TMP/err" && [ ! -e "$TMP/db" ]; then
    ok "index --input DIR says it is a directory (and creates no store)"
else
    not_ok "index --input DIR (rc $rc)" "$(cat "$TMP/err")"
fi
: >"$TMP/empty.jsonl"
"$MT" index --db "$TMP/db2" --input "$TMP/empty.jsonl" --no-search-index \
    --no-progress >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "warning: .*empty.jsonl: 0 documents" "$TMP/err"; then
    ok "index of an empty file warns with the count 0"
else
    not_ok "index empty (rc $rc)" "$(cat "$TMP/err")"
fi
"$MT" index --db "$TMP/db2" --input "$TMP/empty.jsonl" --no-search-index \
    --no-progress --strict >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "empty.jsonl: 0 documents" "$TMP/err"; then
    ok "index --strict of an empty file exits 1"
else
    not_ok "index --strict empty (rc $rc)" "$(cat "$TMP/err")"
fi
# A CSV import field that is not UTF-8 (found by fuzz_import_csv: it was
# refused as "out of memory", and a metadata column's without the file)
# is named by file, line and column.
printf 'id,title,text,extra\n1,Aspirin,fine,ok\n2,Bad,text,a\x90b\n' >"$TMP/latin.csv"
"$MT" import csv --jsonl "$TMP/latin.jsonl" --id-col id --text-col text \
    --title-col title "$TMP/latin.csv" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "latin.csv:3: column 'extra' is not UTF-8" "$TMP/err" &&
    ! grep -q "out of memory" "$TMP/err"; then
    ok "a CSV field that is not UTF-8 is named by file, line and column"
else
    not_ok "CSV not UTF-8 (rc $rc)" "$(cat "$TMP/err")"
fi
