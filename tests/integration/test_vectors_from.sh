#!/usr/bin/env bash
# Integration: `index --vectors-from`: chunk vectors made elsewhere, as
# NumPy .npy files written by Debian's python3-numpy (float32 and float16,
# with an ids file) and as JSONL, matched by the store's chunk id. The
# vectors are those `medtrust embed` gives for each chunk's text, so dense
# search over them must rank as the index that embedded the chunks itself.
# Every error case names the file and, where there is one, the line.
. "$(dirname "$0")/lib.sh"
export MEDTRUST_EMBEDDER=none
PY=/usr/bin/python3 # Debian's, with python3-numpy (scripts/bootstrap)
need "Debian's python3" "$PY"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
    not_ok "python3-numpy importable" "run make bootstrap"
    exit 1
fi

head -12 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
IX=(index --no-progress --chunk-size 100000)
"$MT" "${IX[@]}" --db "$TMP/A" --input "$TMP/c.jsonl" --embedder use-lite \
    >/dev/null 2>&1
"$MT" "${IX[@]}" --db "$TMP/C" --input "$TMP/c.jsonl" --no-search-index \
    >/dev/null 2>&1
# The chunks' ids and the texts the index embeds (no titles here).
"$PY" - "$TMP/A/store.db" "$TMP/t.jsonl" "$TMP/ids" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select c.id, d.text from chunks c join documents d "
                 "on d.id = c.doc_id order by c.id").fetchall()
with open(sys.argv[2], "w") as t, open(sys.argv[3], "w") as i:
    for cid, text in rows:
        t.write(json.dumps({"text": text}) + "\n")
        i.write("%d\n" % cid)
PY
"$MT" embed --embedder use-lite --json -i "$TMP/t.jsonl" >"$TMP/e.jsonl" \
    2>/dev/null
"$PY" - "$TMP" <<'PY'
import json, sys
import numpy as np
d = sys.argv[1]
ids = [int(x) for x in open(d + "/ids")]
vecs = np.array([json.loads(l)["vector"] for l in open(d + "/e.jsonl")],
                dtype=np.float32)
np.save(d + "/v32.npy", vecs)
open(d + "/v32.ids", "w").write("".join("%d\n" % i for i in ids))
np.save(d + "/v16.npy", vecs.astype(np.float16))
with open(d + "/v.jsonl", "w") as f:
    for i, v in zip(ids, vecs.tolist()):
        f.write(json.dumps({"id": i, "vector": v}) + "\n")
# error fixtures
np.save(d + "/narrow.npy", vecs[:, :8].copy())
np.save(d + "/f64.npy", vecs.astype(np.float64))
np.save(d + "/fort.npy", np.asfortranarray(vecs))
open(d + "/missing.ids", "w").write("".join("%d\n" % i for i in ids[:-1]))
np.save(d + "/missing.npy", vecs[:-1])
dup = ids[:]
dup[5] = dup[2]
open(d + "/dup.ids", "w").write("".join("%d\n" % i for i in dup))
bad = ids[:]
open(d + "/bad.ids", "w").write("".join(
    ("abc\n" if k == 1 else "%d\n" % i) for k, i in enumerate(bad)))
with open(d + "/short.jsonl", "w") as f:
    for k, (i, v) in enumerate(zip(ids, vecs.tolist())):
        f.write(json.dumps({"id": i, "vector": v[:5] if k == 2 else v}) + "\n")
with open(d + "/zero.jsonl", "w") as f:
    for k, (i, v) in enumerate(zip(ids, vecs.tolist())):
        f.write(json.dumps({"id": i, "vector": [0.0] * len(v) if k == 4
                            else v}) + "\n")
raw = open(d + "/v32.npy", "rb").read()
open(d + "/trunc.npy", "wb").write(raw[:-10])
open(d + "/nomagic.npy", "wb").write(b"PK" + raw[2:])
PY

Q=("lace plant programmed cell death" "infants bath maladies"
    "emergency laparotomy mortality")
# ranked NAME DB: the dense top 5 of each query, chunk id and score (to 4
# places: the vectors passed through embed's text output).
ranked() {
    local q
    for q in "${Q[@]}"; do
        "$MT" search --db "$2" --mode dense --group chunks --json -k 5 "$q" 2>&1 |
            "$PY" -c 'import json,sys
for l in sys.stdin:
    h = json.loads(l); print(h["chunk_id"], "%.4f" % h["score"])'
    done >"$TMP/$1.rank"
}
ranked A "$TMP/A"

# built NAME DB ARGS...: builds DB's index from the vectors and compares
# its dense ranking with the embedding index's.
built() {
    local name=$1 db=$2
    shift 2
    rm -rf "$db/index"
    if ! "$MT" index --no-progress --db "$db" --embedder use-lite "$@" \
        >"$TMP/out" 2>"$TMP/err"; then
        not_ok "$name" "$(cat "$TMP/err")"
        return
    fi
    ranked "$name" "$db"
    if [ -s "$TMP/A.rank" ] && cmp -s "$TMP/A.rank" "$TMP/$name.rank"; then
        ok "$name"
    else
        not_ok "$name" "$(diff "$TMP/A.rank" "$TMP/$name.rank" | head -8)"
    fi
}
built "float32 .npy + ids: dense ranking as the embedding index" "$TMP/C" \
    --vectors-from "$TMP/v32.npy"
built "JSONL {id,vector}: the same ranking" "$TMP/C" \
    --vectors-from "$TMP/v.jsonl"
built "--vector-ids names the ids file" "$TMP/C" \
    --vectors-from "$TMP/v32.npy" --vector-ids "$TMP/ids"

# float16 rounds each value to 11 bits: the ranking stays, scores move.
rm -rf "$TMP/C/index"
"$MT" index --no-progress --db "$TMP/C" --embedder use-lite \
    --vectors-from "$TMP/v16.npy" --vector-ids "$TMP/ids" >/dev/null 2>&1
ranked h "$TMP/C"
if [ -s "$TMP/h.rank" ] &&
    [ "$(cut -d' ' -f1 "$TMP/h.rank")" = "$(cut -d' ' -f1 "$TMP/A.rank")" ] &&
    "$PY" - "$TMP/A.rank" "$TMP/h.rank" <<'PY'; then
import sys
a = [float(l.split()[1]) for l in open(sys.argv[1])]
b = [float(l.split()[1]) for l in open(sys.argv[2])]
sys.exit(0 if max(abs(x - y) for x, y in zip(a, b)) < 0.01 else 1)
PY
    ok "float16 .npy: the same ranking, scores within 0.01"
else
    not_ok "float16 .npy" "$(paste "$TMP/A.rank" "$TMP/h.rank" | head -8)"
fi

# refused NAME PATTERN ARGS...: the build fails (exit 1) naming the file,
# and leaves no vectors index behind.
refused() {
    local name=$1 pat=$2 rc=0
    shift 2
    rm -rf "$TMP/C/index"
    "$MT" index --no-progress --db "$TMP/C" --embedder "${EMB:-use-lite}" \
        "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    if [ "$rc" = 1 ] && grep -qE -- "$pat" "$TMP/err"; then
        ok "$name"
    else
        not_ok "$name" "exit $rc" "$(cat "$TMP/err")"
    fi
}
N=$(wc -l <"$TMP/ids")
LAST=$(tail -1 "$TMP/ids")
refused "a chunk without a vector is named" \
    "missing.ids: no vector for chunk id $LAST" \
    --vectors-from "$TMP/missing.npy"
refused "a repeated id names both lines" \
    "dup.ids: chunk id [0-9]+ twice, on lines 3 and 6" \
    --vectors-from "$TMP/v32.npy" --vector-ids "$TMP/dup.ids"
refused "an id that is not an integer names its line" \
    "bad.ids:2: 'abc' is not a chunk id" \
    --vectors-from "$TMP/v32.npy" --vector-ids "$TMP/bad.ids"
refused "fewer ids than rows" "missing.ids: $((N - 1)) ids for the $N rows" \
    --vectors-from "$TMP/v32.npy" --vector-ids "$TMP/missing.ids"
refused "a wrong width (.npy) names the file and both widths" \
    "narrow.npy: vectors of 8 dimensions, the embedder gives 512" \
    --vectors-from "$TMP/narrow.npy" --vector-ids "$TMP/ids"
refused "a wrong width (JSONL) names the line" \
    "short.jsonl:3: \"vector\" has 5 dimensions, the embedder 512" \
    --vectors-from "$TMP/short.jsonl"
refused "a zero vector names its chunk id" \
    "the vector of chunk id $(sed -n 5p "$TMP/ids") is zero or not finite" \
    --vectors-from "$TMP/zero.jsonl"
refused "float64 is refused with what to do" \
    "f64.npy: .npy header .*'<f8'.*astype\('float32'\)" \
    --vectors-from "$TMP/f64.npy" --vector-ids "$TMP/ids"
refused "Fortran order is refused" "fort.npy: .*not in C order" \
    --vectors-from "$TMP/fort.npy" --vector-ids "$TMP/ids"
refused "a truncated .npy is named" "trunc.npy: shape \($N, 512\) needs" \
    --vectors-from "$TMP/trunc.npy" --vector-ids "$TMP/ids"
refused "no .npy magic" "nomagic.npy: not a NumPy .npy file" \
    --vectors-from "$TMP/nomagic.npy" --vector-ids "$TMP/ids"
refused "a missing ids file says how to give one" \
    "v16.ids: No such file.*--vector-ids" --vectors-from "$TMP/v16.npy"
EMB=none refused "--vectors-from with no embedder says to name one" \
    "no embedder: name the model" --vectors-from "$TMP/v32.npy"
if [ ! -e "$TMP/C/index/MANIFEST" ]; then
    ok "a refused build leaves no index"
else
    not_ok "a refused build leaves no index" "$(ls "$TMP/C/index")"
fi
