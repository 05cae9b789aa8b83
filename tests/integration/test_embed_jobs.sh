#!/usr/bin/env bash
# Integration: `index --embedder openai:URL#MODEL --embed-jobs N
# --embed-batch B` against llama.cpp's llama-server on a tiny random-weight
# embedding GGUF (make_tiny_gguf): N requests of B chunks in flight, the
# vectors committed to the embedding cache as each call completes. A build
# killed (SIGKILL) while its requests are in flight, run again, re-embeds
# only what the cache lacks and gives the index an unkilled build gives.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LS=${MEDTRUST_LLAMA_SERVER:-$ROOT/third_party/llama-server/bin/llama-server}
need "llama-server (scripts/bootstrap builds it)" "$LS"
need "make_tiny_gguf" "$B/fixtures/make_tiny_gguf"
export MEDTRUST_LLM_TIMEOUT=60 MEDTRUST_EMBEDDER=none
SRV=
BUILD=
trap 'kill -CONT $SRV 2>/dev/null; kill $SRV $BUILD 2>/dev/null; rm -rf "$TMP"' EXIT

"$B/fixtures/make_tiny_gguf" embed "$TMP/embed.gguf" \
    "$ROOT/third_party/llama.cpp/models" tiny >/dev/null 2>&1 ||
    { not_ok "make_tiny_gguf embed"; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LS" -m "$TMP/embed.gguf" --host 127.0.0.1 --port "$port" -t 1 --no-webui \
    --embeddings -np 4 >"$TMP/srv.log" 2>&1 &
SRV=$!
for i in $(seq 240); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 "$SRV" 2>/dev/null || break
    sleep 0.5
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 ||
    { not_ok "llama-server starts" "$(tail -5 "$TMP/srv.log")"; exit 1; }
EMB="openai:http://127.0.0.1:$port#embed"

head -200 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
IX=(index --chunk-size 300 --chunk-overlap 0 --embedder "$EMB"
    --embed-jobs 4 --embed-batch 8)
Q=("mitochondria programmed cell death" "infant bath" "laparotomy mortality")
ranked() {
    local q
    for q in "${Q[@]}"; do
        "$MT" search --db "$1" --mode dense --group chunks --json -k 10 "$q" 2>&1 |
            python3 -c 'import json,sys
for l in sys.stdin:
    h = json.loads(l); print(h["chunk_id"], "%.4f" % h["score"])'
    done
}
rows() {
    python3 -c 'import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute("select count(*) from model_calls").fetchone()[0])
except Exception: print(0)' "$1"
}

# The unkilled build; its progress line has the rate and the ETA. (The
# cache holds one vector per distinct text: 1,186 for the 1,187 chunks.)
"$MT" "${IX[@]}" --db "$TMP/A" --input "$TMP/c.jsonl" >"$TMP/outA" \
    2>"$TMP/errA"
ranked "$TMP/A" >"$TMP/A.rank"
TOTAL=$(rows "$TMP/A/embed-cache.db")
if [ "$(wc -l <"$TMP/A.rank")" = 30 ] && [ "$TOTAL" -gt 1000 ] &&
    grep -qE "search index: [0-9]+/[0-9]+ .*/s ETA" "$TMP/errA" &&
    grep -qE "search index: ([0-9]+)/\1 100.0% [0-9.]+/s" "$TMP/errA"; then
    ok "--embed-jobs 4 --embed-batch 8: $TOTAL texts embedded, indexed; rate and ETA shown"
else
    not_ok "--embed-jobs build" "rows $TOTAL" "$(tail -4 "$TMP/errA")"
fi

# The killed build: once some calls are committed, the server is frozen
# with requests in flight and the build is killed.
"$MT" "${IX[@]}" --db "$TMP/K" --input "$TMP/c.jsonl" --no-progress \
    >/dev/null 2>"$TMP/errK" &
BUILD=$!
n=0
for i in $(seq 2000); do
    n=$(rows "$TMP/K/embed-cache.db")
    [ "$n" -gt 0 ] && break
    kill -0 "$BUILD" 2>/dev/null || break
    sleep 0.02
done
kill -STOP "$SRV"
sleep 0.3
kill -9 "$BUILD" 2>/dev/null
wait "$BUILD" 2>/dev/null
BUILD=
kill -CONT "$SRV"
KEPT=$(rows "$TMP/K/embed-cache.db")
if [ "$KEPT" -gt 0 ] && [ "$KEPT" -lt "$TOTAL" ] &&
    [ ! -e "$TMP/K/index/MANIFEST" ]; then
    ok "a build killed mid-embedding keeps $KEPT of $TOTAL vectors, no index"
else
    not_ok "killed build" "kept $KEPT of $TOTAL" "$(ls "$TMP/K/index" 2>&1)"
fi
# Run again (the documents are in the store): only the rest is embedded.
"$MT" "${IX[@]}" --db "$TMP/K" --no-progress >"$TMP/outK" 2>"$TMP/errK"
ranked "$TMP/K" >"$TMP/K.rank"
if [ -s "$TMP/K.rank" ] && cmp -s "$TMP/A.rank" "$TMP/K.rank" &&
    [ "$(rows "$TMP/K/embed-cache.db")" = "$TOTAL" ]; then
    ok "the resumed build ranks exactly as the unkilled one"
else
    not_ok "resumed build" "$(tail -3 "$TMP/errK")" \
        "$(diff "$TMP/A.rank" "$TMP/K.rank" | head -6)"
fi

# An endpoint that does not answer is named.
rc=0
"$MT" index --db "$TMP/A" --rebuild --embedder "openai:http://127.0.0.1:1#embed" \
    --embed-jobs 2 --no-progress >/dev/null 2>"$TMP/err" || rc=$?
if [ "$rc" != 0 ] && grep -q "127.0.0.1:1" "$TMP/err"; then
    ok "an unreachable embedding server is named"
else
    not_ok "unreachable server" "exit $rc" "$(tail -3 "$TMP/err")"
fi
