#!/usr/bin/env bash
# Integration: `search --author/--journal/--pub-type` on PubMed records
# imported from the real format samples (the metadata PubMed imports
# write: authors, journal, publication_types), checked against the
# imported records; and a filter whose documents rank below 400 others
# still returns k hits (the filter is inside the first stage, not applied
# to its top k).
. "$(dirname "$0")/lib.sh"
PM="$DATA/formats/pubmed"

"$MT" import pubmed --jsonl "$TMP/pm.jsonl" --no-progress "$PM"/*.xml \
    >/dev/null 2>"$TMP/err" &&
    "$MT" index --db "$TMP/db" --input "$TMP/pm.jsonl" --source pubmed \
        --no-progress >/dev/null 2>>"$TMP/err" ||
    not_ok "import and index the PubMed samples" "$(cat "$TMP/err")"

# check OPTION VALUE FIELD QUERY: every hit's record has VALUE in FIELD
# (case-insensitive) and at least one hit came back; prints the ids.
check() {
    "$MT" search --db "$TMP/db" --json -k 10 "--$1" "$2" "$4" >"$TMP/hits" \
        2>"$TMP/err" || return 1
    python3 - "$TMP/pm.jsonl" "$TMP/hits" "$2" "$3" <<'EOF'
import json, sys
recs = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    recs[d["id"]] = d
want, field = sys.argv[3].lower(), sys.argv[4]
hits = [json.loads(l) for l in open(sys.argv[2])]
assert hits, "no hits"
for h in hits:
    v = recs[h["doc_id"]].get(field)
    vals = v if isinstance(v, list) else [v]
    assert any(want in (x or "").lower() for x in vals), (h["doc_id"], v)
print(" ".join(sorted({h["doc_id"] for h in hits})))
EOF
}

if ids=$(check author "o'byrne" authors "asthma budesonide") &&
    [ "$ids" = 29768149 ]; then
    ok "search --author finds the record by an author's surname"
else
    not_ok "search --author" "$ids" "$(cat "$TMP/err" "$TMP/hits")"
fi
if ids=$(check journal "NEW ENGLAND" journal "asthma") &&
    [ "$ids" = 29768149 ]; then
    ok "search --journal matches part of the journal, case-insensitively"
else
    not_ok "search --journal" "$ids" "$(cat "$TMP/err" "$TMP/hits")"
fi
if ids=$(check pub-type "observational study" publication_types \
    "risk of cancer") && [ "$ids" = 27797938 ]; then
    ok "search --pub-type keeps records of that publication type ($ids)"
else
    not_ok "search --pub-type" "$ids" "$(cat "$TMP/err" "$TMP/hits")"
fi
out=$("$MT" search --db "$TMP/db" --json --journal "new england" \
    --author "nobody at all" asthma 2>&1)
if [ -z "$out" ]; then
    ok "two filters must both hold: none does, no hits"
else
    not_ok "filters combine with AND" "$out"
fi

# 400 documents that outrank the 3 by Jane Doe for the query.
python3 - "$TMP/many.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(403):
        doe = i >= 400
        f.write(json.dumps({
            "id": ("doe%d" if doe else "smith%d") % i,
            "text": ("aspirin trial %d" if doe else
                     "aspirin aspirin aspirin trial %d") % i,
            "authors": ["Jane Doe" if doe else "A Smith"]}) + "\n")
EOF
"$MT" index --db "$TMP/many" --input "$TMP/many.jsonl" --no-progress \
    >/dev/null 2>&1
out=$("$MT" search --db "$TMP/many" --json -k 3 --author "jane doe" aspirin)
if [ "$(echo "$out" | grep -c '"doc_id":"doe')" -eq 3 ]; then
    ok "a filter whose documents rank below 400 others still gives k hits"
else
    not_ok "filtered search came back short" "$out"
fi
