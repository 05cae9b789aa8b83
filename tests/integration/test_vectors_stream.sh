#!/usr/bin/env bash
# Integration: `index --vectors-from` reading a stream (named pipes, read
# once, front to back: the .npy and its ids file both FIFOs, or JSONL on
# a FIFO), so vectors can be piped in without being on disk; and a build
# of several segments with HNSW graphs killed (SIGKILL) mid-way resumes
# from its last saved segment, reading a fresh stream and passing over
# the rows it already has, and ends with the index an unkilled build of
# the same vectors from a regular file gives (same dense ranking, same
# segment files). The stream's errors name the file and line.
. "$(dirname "$0")/lib.sh"
export MEDTRUST_EMBEDDER=none
PY=/usr/bin/python3 # Debian's, with python3-numpy (scripts/bootstrap)
need "Debian's python3" "$PY"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
    not_ok "python3-numpy importable" "run make bootstrap"
    exit 1
fi
WRITER=
trap 'kill $WRITER $BUILD 2>/dev/null; rm -rf "$TMP"' EXIT

head -300 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/S" --input "$TMP/c.jsonl" --chunk-size 300 \
    --chunk-overlap 0 --no-search-index --no-progress >/dev/null 2>&1
# Clustered 256-d vectors, one a chunk, as a float16 .npy + ids file.
"$PY" - "$TMP/S/store.db" "$TMP" <<'PY'
import sqlite3, sys
import numpy as np
ids = [r[0] for r in sqlite3.connect(sys.argv[1]).execute(
    "select id from chunks order by id")]
rng = np.random.default_rng(7)
c = rng.standard_normal((20, 256))
v = c[rng.integers(0, 20, len(ids))] + 0.5 * rng.standard_normal((len(ids), 256))
v /= np.linalg.norm(v, axis=1, keepdims=True)
np.save(sys.argv[2] + "/v.npy", v.astype(np.float16))
open(sys.argv[2] + "/v.ids", "w").write("".join("%d\n" % i for i in ids))
PY
N=$(wc -l <"$TMP/v.ids")

# feed NPY IDS [ROWS [HOLD]]: writes v.npy's rows (and ids) to the FIFOs
# NPY and IDS in blocks of 64, the .npy opened first; with ROWS, stops
# after that many rows and waits for the file HOLD before the rest.
cat >"$TMP/feed.py" <<'PY'
import os, sys, time
import numpy as np
d = os.path.dirname(sys.argv[0])
v = np.load(d + "/v.npy")
ids = open(d + "/v.ids").read().split()
stop = int(sys.argv[3]) if len(sys.argv) > 3 else len(ids)
raw = open(d + "/v.npy", "rb").read()
head = len(raw) - v.nbytes
try:
    with open(sys.argv[1], "wb") as f:
        f.write(raw[:head])
        f.flush()
        with open(sys.argv[2], "w") as g:
            for a in range(0, len(ids), 64):
                if a >= stop:
                    while not os.path.exists(sys.argv[4]):
                        time.sleep(0.05)
                    stop = len(ids)
                g.write("".join(i + "\n" for i in ids[a:a + 64]))
                g.flush()
                f.write(v[a:a + 64].tobytes())
                f.flush()
except BrokenPipeError:
    pass
PY
feed() {
    rm -f "$TMP/p.npy" "$TMP/p.ids"
    mkfifo "$TMP/p.npy" "$TMP/p.ids"
    "$PY" "$TMP/feed.py" "$TMP/p.npy" "$TMP/p.ids" "$@" &
    WRITER=$!
}
# A store copy (the index lives in the store's folder).
copy() { rm -rf "$1" && mkdir -p "$1" && cp "$TMP/S/store.db" "$1/"; }
IX=(index --no-progress --embedder use-lite --dims 256 --segment-mb 1
    --hnsw-min 100 --hnsw-threads 1)
Q=("programmed cell death" "infant bath" "laparotomy mortality"
    "vitamin D deficiency")
ranked() {
    local q
    for q in "${Q[@]}"; do
        "$MT" search --db "$1" --mode dense --json -k 10 "$q" 2>&1 |
            "$PY" -c 'import json,sys
for l in sys.stdin:
    h = json.loads(l); print(h["chunk_id"], "%.5f" % h["score"])'
    done
}
segs() { ls "$1/index" 2>/dev/null | grep -c '\.hnsw$'; }

# The reference: the same vectors from the regular file.
copy "$TMP/F"
"$MT" "${IX[@]}" --db "$TMP/F" --vectors-from "$TMP/v.npy" >/dev/null \
    2>"$TMP/errF"
ranked "$TMP/F" >"$TMP/F.rank"
NSEG=$(segs "$TMP/F")
if [ "$(wc -l <"$TMP/F.rank")" = 40 ] && [ "$NSEG" -ge 3 ]; then
    ok "the file build: $N chunks, $NSEG segments with HNSW graphs"
else
    not_ok "file build" "$NSEG graphs" "$(tail -3 "$TMP/errF")"
fi

# The same vectors through two FIFOs: the same index.
copy "$TMP/P"
feed
"$MT" "${IX[@]}" --db "$TMP/P" --vectors-from "$TMP/p.npy" >/dev/null \
    2>"$TMP/errP"
wait "$WRITER"
ranked "$TMP/P" >"$TMP/P.rank"
if [ -s "$TMP/P.rank" ] && cmp -s "$TMP/F.rank" "$TMP/P.rank" &&
    cmp -s "$TMP/F/index/seg-000001.hnsw" "$TMP/P/index/seg-000001.hnsw"; then
    ok "a .npy and its ids through FIFOs: the file build's ranking and graphs"
else
    not_ok "FIFO build" "$(tail -3 "$TMP/errP")" \
        "$(diff "$TMP/F.rank" "$TMP/P.rank" | head -6)"
fi

# Killed mid-build: the writer stops after 1,000 rows, so the build
# saves what segments it can and then waits on the pipe; it is killed
# there, and run again with a new stream of all the rows.
copy "$TMP/K"
feed 1000 "$TMP/never"
"$MT" "${IX[@]}" --db "$TMP/K" --vectors-from "$TMP/p.npy" >/dev/null \
    2>"$TMP/errK" &
BUILD=$!
for i in $(seq 600); do
    [ "$(segs "$TMP/K")" -ge 1 ] && [ -e "$TMP/K/index/MANIFEST" ] && break
    kill -0 "$BUILD" 2>/dev/null || break
    sleep 0.05
done
sleep 0.3
kill -9 "$BUILD" 2>/dev/null
wait "$BUILD" 2>/dev/null
BUILD=
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null
KEPT=$(segs "$TMP/K")
feed
"$MT" "${IX[@]}" --db "$TMP/K" --vectors-from "$TMP/p.npy" \
    >"$TMP/outK" 2>"$TMP/errK"
wait "$WRITER"
ADDED=$(sed -n 's/^search index: \([0-9]*\) chunks added.*/\1/p' "$TMP/outK")
ranked "$TMP/K" >"$TMP/K.rank"
same=1
for f in "$TMP"/F/index/seg-*.hnsw; do
    cmp -s "$f" "$TMP/K/index/$(basename "$f")" || same=0
done
if [ "$KEPT" -ge 1 ] && [ -n "$ADDED" ] && [ "$ADDED" -lt "$N" ] &&
    [ "$ADDED" -gt 0 ] && cmp -s "$TMP/F.rank" "$TMP/K.rank" && [ $same = 1 ]; then
    ok "killed after $KEPT saved segments, resumed: $ADDED of $N chunks added, the same graphs and ranking"
else
    not_ok "resume" "kept $KEPT added '$ADDED' of $N same=$same" \
        "$(tail -3 "$TMP/errK")" "$(diff "$TMP/F.rank" "$TMP/K.rank" | head -4)"
fi

# JSONL on a FIFO.
"$PY" - "$TMP" <<'PY'
import json, sys
import numpy as np
d = sys.argv[1]
v = np.load(d + "/v.npy").astype(np.float32)
ids = open(d + "/v.ids").read().split()
with open(d + "/v.jsonl", "w") as f:
    for i, r in zip(ids, v.tolist()):
        f.write(json.dumps({"id": int(i), "vector": r}) + "\n")
lines = open(d + "/v.jsonl").readlines()
open(d + "/desc.jsonl", "w").writelines(lines[:5] + [lines[3]] + lines[5:])
open(d + "/gap.jsonl", "w").writelines(lines[:7] + lines[8:])
PY
copy "$TMP/J"
rm -f "$TMP/p.jsonl" && mkfifo "$TMP/p.jsonl"
cat "$TMP/v.jsonl" >"$TMP/p.jsonl" &
WRITER=$!
"$MT" "${IX[@]}" --db "$TMP/J" --vectors-from "$TMP/p.jsonl" >/dev/null \
    2>"$TMP/errJ"
wait "$WRITER"
ranked "$TMP/J" >"$TMP/J.rank"
if [ -s "$TMP/J.rank" ] && cmp -s "$TMP/F.rank" "$TMP/J.rank"; then
    ok "JSONL through a FIFO: the same ranking"
else
    not_ok "JSONL FIFO" "$(tail -3 "$TMP/errJ")"
fi

# stream_refused NAME PATTERN FILE: FILE piped in, the build fails naming
# the file and line.
stream_refused() {
    local rc=0
    copy "$TMP/E"
    rm -f "$TMP/e.jsonl" && mkfifo "$TMP/e.jsonl"
    cat "$3" >"$TMP/e.jsonl" 2>/dev/null &
    WRITER=$!
    "$MT" "${IX[@]}" --db "$TMP/E" --vectors-from "$TMP/e.jsonl" \
        >/dev/null 2>"$TMP/err" || rc=$?
    kill "$WRITER" 2>/dev/null
    wait "$WRITER" 2>/dev/null
    if [ "$rc" = 1 ] && grep -qE -- "$2" "$TMP/err"; then
        ok "$1"
    else
        not_ok "$1" "exit $rc" "$(cat "$TMP/err")"
    fi
}
ID4=$(sed -n 4p "$TMP/v.ids")
ID5=$(sed -n 5p "$TMP/v.ids")
ID8=$(sed -n 8p "$TMP/v.ids")
ID9=$(sed -n 9p "$TMP/v.ids")
stream_refused "a stream's ids must ascend: the line is named" \
    "e.jsonl:6: chunk id $ID4 after $ID5: .*must ascend" "$TMP/desc.jsonl"
stream_refused "a chunk the stream passes over is named" \
    "e.jsonl:8: no vector for chunk id $ID8: the stream went on to chunk id $ID9" \
    "$TMP/gap.jsonl"
head -20 "$TMP/v.jsonl" >"$TMP/short.jsonl"
stream_refused "a stream that ends early is named" \
    "e.jsonl: no vector for chunk id [0-9]+: the stream ended after 20 rows" \
    "$TMP/short.jsonl"

# A truncated .npy stream, and an ids stream shorter than the rows.
copy "$TMP/E"
rm -f "$TMP/p.npy" "$TMP/p.ids" && mkfifo "$TMP/p.npy" "$TMP/p.ids"
SZ=$(stat -c %s "$TMP/v.npy")
(head -c $((SZ - 1000)) "$TMP/v.npy" >"$TMP/p.npy") &
W1=$!
(cat "$TMP/v.ids" >"$TMP/p.ids" 2>/dev/null) &
W2=$!
rc=0
"$MT" "${IX[@]}" --db "$TMP/E" --vectors-from "$TMP/p.npy" >/dev/null \
    2>"$TMP/err" || rc=$?
kill $W1 $W2 2>/dev/null
wait $W1 $W2 2>/dev/null
# 1,000 bytes short of rows of 512 (256 float16s): N - 2 whole rows.
if [ "$rc" = 1 ] &&
    grep -qE "p.npy: ended after $((N - 2)) of the $N rows its header names: truncated" \
        "$TMP/err"; then
    ok "a truncated .npy stream is named"
else
    not_ok "truncated .npy stream" "exit $rc" "$(cat "$TMP/err")"
fi
copy "$TMP/E"
rm -f "$TMP/p.npy" "$TMP/p.ids" && mkfifo "$TMP/p.npy" "$TMP/p.ids"
(cat "$TMP/v.npy" >"$TMP/p.npy" 2>/dev/null) &
W1=$!
(head -50 "$TMP/v.ids" >"$TMP/p.ids") &
W2=$!
rc=0
"$MT" "${IX[@]}" --db "$TMP/E" --vectors-from "$TMP/p.npy" >/dev/null \
    2>"$TMP/err" || rc=$?
kill $W1 $W2 2>/dev/null
wait $W1 $W2 2>/dev/null
if [ "$rc" = 1 ] && grep -qE "p.ids: 50 ids for the $N rows of .*p.npy" "$TMP/err"; then
    ok "an ids stream shorter than the rows is named"
else
    not_ok "short ids stream" "exit $rc" "$(cat "$TMP/err")"
fi
