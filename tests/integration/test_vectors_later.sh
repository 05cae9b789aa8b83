#!/usr/bin/env bash
# Integration: the demo's fast start. A server started on a BM25-only index
# answers BM25 at once and refuses hybrid; when `medtrust index --rebuild
# --embedder use-lite` lands vectors while it runs, the same server (no
# restart) reports the embedder and answers hybrid. Also: the index
# progress line shows done/total, rate and ETA. POST /v1/check's search
# follows: bm25 on the BM25-only index, hybrid once the vectors land, and
# "search_mode" runs the mode asked for (dense refused without vectors).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
export MEDTRUST_EMBEDDER=none
unset MEDTRUST_LLM MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL MEDTRUST_LLM_REFLECT \
    MEDTRUST_LLM_PARSER
PIDS=()
trap 'for p in "${PIDS[@]}" "${STUB_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
stub_start main
# 30 abstracts: embedding them takes a few seconds, so the build can be
# watched while it runs.
head -30 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --llm "$SPEC" >"$TMP/out" \
    2>"$TMP/err" &
PIDS+=($!)
U=$(serve_url "$TMP/out")
curl -s -c "$TMP/jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
A=(-s -b "$TMP/jar" -H "X-CSRF-Token: $csrf" -H "Content-Type: application/json"
    -o "$TMP/body" -w '%{http_code}')
Q='{"query":"programmed cell death in lace plant leaves","mode":"hybrid","k":3}'
NOTE='A 62-year-old man has crushing chest pain. He is given aspirin and sent home.'
# check_modes [MODE]: POSTs a react-reflex check (with "search_mode": MODE
# when given), follows its events and prints the modes its searches ran.
check_modes() {
    local extra= run
    [ -n "${1:-}" ] && extra=",\"search_mode\":\"$1\""
    curl "${A[@]}" "$U/v1/check" \
        -d "{\"note\":\"$NOTE\",\"strategy\":\"react-reflex\"$extra}" >/dev/null
    run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body" 2>/dev/null)
    [ -n "$run" ] || { echo "none: $(head -c 200 "$TMP/body")"; return; }
    curl -sN -b "$TMP/jar" "$U/v1/runs/$run/events" | python3 -c '
import json, sys
modes = set()
for line in sys.stdin:
    if line.startswith("data: "):
        d = json.loads(line[6:])
        if d.get("step") == "search":
            modes.add(d["mode"])
print(" ".join(sorted(modes)))'
}

b=$(curl "${A[@]}" "$U/v1/search" -d '{"query":"lace plant","k":3}')
h=$(curl "${A[@]}" "$U/v1/search" -d "$Q")
if [ "$b" = 200 ] && [ "$h" = 400 ] && grep -q 'no vectors' "$TMP/body"; then
    ok "a BM25-only index: BM25 answers, hybrid is refused"
else
    not_ok "BM25-only index" "bm25 $b hybrid $h" "$(cat "$TMP/body")"
fi

d=$(curl "${A[@]}" "$U/v1/check" -d "{\"note\":\"$NOTE\",\"search_mode\":\"dense\"}")
dmsg=$(cat "$TMP/body")
bad=$(curl "${A[@]}" "$U/v1/check" -d "{\"note\":\"$NOTE\",\"search_mode\":\"nope\"}")
auto=$(check_modes)
if [ "$auto" = bm25 ] && [ "$d" = 400 ] && echo "$dmsg" | grep -q 'needs vectors' &&
    [ "$bad" = 400 ]; then
    ok "POST /v1/check searches bm25 on a BM25-only index; search_mode dense is 400 there, an unknown mode 400"
else
    not_ok "check search on a BM25-only index" "auto '$auto' dense $d bad $bad" "$dmsg"
fi

# A status file left by a build that died says nothing.
printf '{"pid":999999999,"embedder":"use-lite","done":1,"total":9,"rate":1,"eta_s":8,"started":1,"updated":%s}' \
    "$(date +%s)" >"$TMP/db/index-build.json"
m=$(curl -s -b "$TMP/jar" "$U/v1/models")
if echo "$m" | grep -q '"index_build": *null'; then
    ok "models: a dead build's status file is ignored"
else
    not_ok "models: dead build" "$m"
fi
rm -f "$TMP/db/index-build.json"

# Vectors land while the server runs; meanwhile /v1/models reports the
# build's progress (what the UI shows while search is still BM25).
"$MT" index --db "$TMP/db" --rebuild --embedder use-lite 2>"$TMP/prog" >/dev/null &
build=$!
seen=
for _ in $(seq 600); do
    m=$(curl -s -b "$TMP/jar" "$U/v1/models")
    if echo "$m" | grep -q '"index_build": *{'; then seen=$m; break; fi
    kill -0 $build 2>/dev/null || break
    sleep 0.1
done
wait $build
after=$(curl -s -b "$TMP/jar" "$U/v1/models")
if echo "$seen" | grep -q '"embedder": *null' &&
    echo "$seen" | grep -Eq '"index_build": *\{"embedder": *"use-lite", *"done": *[0-9]+, *"total": *[1-9]' &&
    echo "$seen" | grep -q '"eta_s"' && echo "$after" | grep -q '"index_build": *null' &&
    [ ! -e "$TMP/db/index-build.json" ]; then
    ok "models: a running build's progress (done/total, rate, ETA), gone when it ends"
else
    not_ok "models: build progress" "seen: $seen" "after: $after"
fi
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
auto=$(check_modes)
dense=$(check_modes dense)
bm25=$(check_modes bm25)
if [ "$auto" = hybrid ] && [ "$dense" = dense ] && [ "$bm25" = bm25 ]; then
    ok "once the vectors land POST /v1/check searches hybrid by default, and search_mode runs the mode asked for"
else
    not_ok "check search modes after vectors" "auto '$auto' dense '$dense' bm25 '$bm25'"
fi
