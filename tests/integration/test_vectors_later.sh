#!/usr/bin/env bash
# Integration: the demo's fast start. A server started on a BM25-only index
# answers BM25 at once and refuses hybrid; when `medtrust index --rebuild
# --embedder use-lite` lands vectors while it runs, the same server (no
# restart) reports the embedder and answers hybrid. Also: the index
# progress line shows done/total, rate and ETA.
. "$(dirname "$0")/lib.sh"
export MEDTRUST_EMBEDDER=none
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
head -6 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$TMP/out" 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/http:\/\/127.0.0.1:\1/p' "$TMP/out")
curl -s -c "$TMP/jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
A=(-s -b "$TMP/jar" -H "X-CSRF-Token: $csrf" -H "Content-Type: application/json"
    -o "$TMP/body" -w '%{http_code}')
Q='{"query":"programmed cell death in lace plant leaves","mode":"hybrid","k":3}'

b=$(curl "${A[@]}" "$U/v1/search" -d '{"query":"lace plant","k":3}')
h=$(curl "${A[@]}" "$U/v1/search" -d "$Q")
if [ "$b" = 200 ] && [ "$h" = 400 ] && grep -q 'no vectors' "$TMP/body"; then
    ok "a BM25-only index: BM25 answers, hybrid is refused"
else
    not_ok "BM25-only index" "bm25 $b hybrid $h" "$(cat "$TMP/body")"
fi

# Vectors land while the server runs (the 6 documents' chunks).
"$MT" index --db "$TMP/db" --rebuild --embedder use-lite 2>"$TMP/prog" >/dev/null
if grep -Eq 'search index: [0-9]+/[0-9]+ +[0-9.]+% [0-9.]+/s' "$TMP/prog"; then
    ok "index progress shows done/total, percent and rate"
else
    not_ok "index progress line" "$(tr '\r' '\n' <"$TMP/prog" | tail -3)"
fi
h=$(curl "${A[@]}" "$U/v1/search" -d "$Q")
hits=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["hits"]))' "$TMP/body" 2>/dev/null)
m=$(curl -s -b "$TMP/jar" "$U/v1/models")
if [ "$h" = 200 ] && [ "$hits" = 3 ] && echo "$m" | grep -q '"embedder": *{"spec": *"use-lite"'; then
    ok "the running server switches hybrid on once the vectors land"
else
    not_ok "hybrid after vectors" "code $h hits $hits" "$(head -c 300 "$TMP/body")" "$m"
fi
