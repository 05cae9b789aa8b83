#!/usr/bin/env bash
# Integration (issue 36): `medtrust import parquet` reads the files two
# independent writers make, hyparquet-writer (JS) and parquet-wasm
# (arrow-rs), generated here by tests/fixtures/make_parquet.mjs: data
# pages v1 and v2, PLAIN and RLE_DICTIONARY values, RLE booleans, optional
# (null) columns, three row groups, a 300 KB string, UNCOMPRESSED, SNAPPY,
# GZIP and ZSTD; every row is compared value for value with what the
# generator wrote. Nested columns are refused by name; a bad file is
# skipped and named, the rest imported, exit 1; --db with --no-chunk keeps
# each row one chunk and its metadata filterable.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GEN=$ROOT/tests/fixtures/make_parquet.mjs
PJS=${MEDTRUST_PARQUET_JS:-$ROOT/third_party/parquet-js/node_modules}
need "node" "$(command -v node)"
need "parquet-wasm and hyparquet-writer (scripts/bootstrap)" \
    "$PJS/parquet-wasm/node/parquet_wasm.js" "$PJS/hyparquet-writer/src/index.js"

P=$TMP/pq
if ! node "$GEN" "$P" 2500 >"$TMP/gen.log" 2>&1; then
    not_ok "the test files are generated" "$(tail -5 "$TMP/gen.log")"
    exit 1
fi
META=(--meta-col year --meta-col n64 --meta-col score --meta-col f32
    --meta-col flag)

# each writer setting: the rows, value for value
for f in hw_snappy hw_plain_none hw_delta aw_v1_dict_snappy \
    aw_v1_plain_none aw_v1_dict_gzip aw_v2_dict_zstd aw_v2_plain_gzip \
    aw_v1_plain_zstd aw_v2_delta_snappy; do
    "$MT" import parquet --jsonl "$TMP/$f.jsonl" --no-progress --json \
        --id-col id --text-col text --title-col title "${META[@]}" \
        "$P/$f.parquet" >"$TMP/res" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 0 ] && node "$GEN" --compare "$TMP/$f.jsonl" \
        "$P/expected.jsonl" >"$TMP/cmp" 2>&1 &&
        grep -q '"records": *2500' "$TMP/res" &&
        grep -q '"skipped": *51' "$TMP/res"; then
        ok "$f: 2449 rows equal to the writer's, value for value (51 without text counted as skipped)"
    else
        not_ok "$f" "rc=$rc" "$(cat "$TMP/cmp" "$TMP/err" | head -8)"
    fi
done

# integer ids (INT64) as decimal text, in four row groups
"$MT" import parquet --jsonl "$TMP/ids.jsonl" --no-progress --id-col id \
    --text-col text --title-col title --meta-col year --meta-col score \
    --meta-col f32 --meta-col flag "$P/int_ids.parquet" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && node "$GEN" --compare "$TMP/ids.jsonl" \
    "$P/int_ids.expected.jsonl" >"$TMP/cmp" 2>&1; then
    ok "INT64 ids are written as decimal strings"
else
    not_ok "INT64 ids" "rc=$rc" "$(cat "$TMP/cmp" "$TMP/err" | head -5)"
fi

# a nested column named as text: refused by its name
"$MT" import parquet --jsonl "$TMP/n.jsonl" --no-progress --id-col id \
    --text-col tags "$P/nested.parquet" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ ! -e "$TMP/n.jsonl" ] &&
    grep -q "nested.parquet: column 'tags' is a nested type" "$TMP/err"; then
    ok "a nested column is refused by name"
else
    not_ok "nested column refused" "rc=$rc" "$(cat "$TMP/err")"
fi
# ... while the file's flat columns beside it are read
"$MT" import parquet --jsonl "$TMP/n.jsonl" --no-progress --id-col id \
    --text-col text "$P/nested.parquet" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$TMP/n.jsonl")" = '{"id":"a","text":"one"}
{"id":"b","text":"two"}' ]; then
    ok "the flat columns beside a nested one are read"
else
    not_ok "flat beside nested" "rc=$rc" "$(cat "$TMP/err" "$TMP/n.jsonl")"
fi

# a folder with a truncated file, a file that is not Parquet, and one
# whose column is missing: each skipped and named, the good one imported
mkdir -p "$TMP/dir"
cp "$P/aw_v1_dict_snappy.parquet" "$TMP/dir/a_good.parquet"
head -c 150000 "$P/aw_v1_dict_snappy.parquet" >"$TMP/dir/b_cut.parquet"
printf 'id,text\n1,x\n' >"$TMP/dir/c_csv.parquet"
cp "$P/nested.parquet" "$TMP/dir/d_notitle.parquet"
# a data page's bytes overwritten: the footer still reads
cp "$P/aw_v1_plain_none.parquet" "$TMP/dir/e_corrupt.parquet"
printf '\377\377\377\377\377\377\377\377' | dd of="$TMP/dir/e_corrupt.parquet" \
    bs=1 seek=4 conv=notrunc 2>/dev/null
"$MT" import parquet --jsonl "$TMP/d.jsonl" --no-progress --json \
    --id-col id --text-col text --title-col title "$TMP/dir" >"$TMP/res" \
    2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/d.jsonl")" -eq 2449 ] &&
    grep -q '"bad_files": *4' "$TMP/res" &&
    grep -q 'b_cut.parquet: not a Parquet file (no PAR1 magic at its end' "$TMP/err" &&
    grep -q 'c_csv.parquet: not a Parquet file' "$TMP/err" &&
    grep -q "d_notitle.parquet: no column named 'title'" "$TMP/err" &&
    grep -Eq "e_corrupt.parquet: row group 0, column 'id': .*\(skipped\)" "$TMP/err" &&
    [ "$(grep -c '(skipped)$' "$TMP/err")" -eq 4 ]; then
    ok "bad files in a folder are skipped and named (cut, not Parquet, no such column, a corrupt page); the good one is imported; exit 1"
else
    not_ok "bad files skipped" "rc=$rc" "$(cat "$TMP/res" "$TMP/err" | head -10)"
fi

# into a store: --no-chunk keeps each row one chunk; metadata filterable
"$MT" import parquet --db "$TMP/db" --no-progress --json --no-chunk \
    --source medwiki --id-col id --text-col text --title-col title \
    "${META[@]}" "$P/aw_v2_dict_zstd.parquet" >"$TMP/res" 2>"$TMP/err"
rc=$?
docs=$(sqlite3 "$TMP/db/store.db" 'select count(*) from documents' 2>&1)
chunks=$(sqlite3 "$TMP/db/store.db" 'select count(*) from chunks' 2>&1)
y=$(sqlite3 "$TMP/db/store.db" "select json_extract(metadata,'\$.year') from documents where ext_id='doc-1'" 2>&1)
if [ $rc -eq 0 ] && [ "$docs" = 2449 ] && [ "$chunks" = 2449 ] &&
    [ "$y" = "$(sed -n 2p "$P/expected.jsonl" | sed 's/.*"year":\([0-9]*\).*/\1/')" ]; then
    ok "--db --no-chunk: 2449 documents, one chunk each, metadata kept"
else
    not_ok "--db --no-chunk" "rc=$rc docs=$docs chunks=$chunks year=$y" "$(cat "$TMP/err" | head -5)"
fi
# ... and a --meta-col number is what search --filter filters on
"$MT" search --db "$TMP/db" --json -k 100 --filter year=1960..1965 aspirin \
    >"$TMP/hits" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && python3 - "$TMP/hits" "$P/expected.jsonl" <<'PY'
import json, sys
year = {o["id"]: o.get("year") for o in map(json.loads, open(sys.argv[2]))}
hits = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert hits, "no hit"
assert all(1960 <= (year[h["doc_id"]] or 0) <= 1965 for h in hits), hits[:2]
PY
then
    ok "search --filter year=1960..1965 keeps only rows whose year column is in range"
else
    not_ok "metadata filter" "rc=$rc" "$(head -3 "$TMP/hits" "$TMP/err")"
fi

# --source-col: each row's source from a column (null: the file's source)
"$MT" import parquet --db "$TMP/dbs" --no-progress --source rest \
    --id-col id --text-col text --source-col title \
    "$P/aw_v1_dict_snappy.parquet" >/dev/null 2>"$TMP/err"
rc=$?
q="select count(*) from documents d join sources s on s.id = d.source_id"
want=$(sqlite3 "$TMP/dbs/store.db" "$q" 2>&1)
nulls=$(sqlite3 "$TMP/dbs/store.db" "$q where s.name = 'rest'" 2>&1)
expn=$(grep -vc '"title"' "$P/expected.jsonl")
"$MT" import parquet --jsonl "$TMP/s.jsonl" --no-progress --id-col id \
    --text-col text --source-col title "$P/hw_snappy.parquet" >/dev/null 2>&1
if [ $rc -eq 0 ] && [ "$want" = 2449 ] && [ "$nulls" = "$expn" ] &&
    python3 - "$TMP/s.jsonl" "$P/expected.jsonl" "$TMP/dbs/store.db" <<'PY'
import json, sqlite3, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [json.loads(l) for l in open(sys.argv[2])]
assert [g.get("source") for g in got] == [w.get("title") for w in want]
db = sqlite3.connect(sys.argv[3])
titles = {w["id"]: w.get("title", "rest") for w in want}
rows = db.execute("select d.ext_id, s.name from documents d join sources s"
                  " on s.id = d.source_id").fetchall()
assert len(rows) == len(titles)
assert all(titles[i] == s for i, s in rows), "a row in the wrong source"
PY
then
    ok "--source-col: each row in the source its column names (the file's for a null); JSONL lines carry it as \"source\""
else
    not_ok "--source-col" "rc=$rc docs=$want rest=$nulls want $expn" "$(head -5 "$TMP/err")"
fi

# --exclude-source: the rows of the sources named are left out
x=$(sed -n 2p "$P/expected.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["title"])')
"$MT" import parquet --jsonl "$TMP/x.jsonl" --no-progress --json --id-col id \
    --text-col text --source-col title --exclude-source "$x" \
    --exclude-source nothing-such "$P/aw_v2_dict_zstd.parquet" >"$TMP/res" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && python3 - "$TMP/x.jsonl" "$P/expected.jsonl" "$x" "$TMP/res" <<'PY'
import json, sys
got = [json.loads(l)["id"] for l in open(sys.argv[1])]
want = [w["id"] for w in map(json.loads, open(sys.argv[2]))
        if w.get("title") != sys.argv[3]]
assert got == want, (len(got), len(want))
res = json.load(open(sys.argv[4]))
assert res["skipped"] == 51 + 2449 - len(want), res["skipped"]
PY
then
    ok "--exclude-source leaves out the rows of that source, counted as skipped"
else
    not_ok "--exclude-source" "rc=$rc" "$(head -5 "$TMP/err")"
fi
