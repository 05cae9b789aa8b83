#!/usr/bin/env bash
# Integration: how the index reaches a node (issue 19). `medtrust publish`
# makes a snapshot of a store and its index (no accounts in it); a node
# serving a copy of the publish folder searches the snapshot CURRENT
# names. A new snapshot arriving file by file in the wrong order (CURRENT
# first, store.db last and at first cut short) is not used until it is
# whole; then the next search sees it, without a restart, while searches
# running throughout all get their answers. Older snapshots are pruned.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
export MEDTRUST_EMBEDDER=none
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
need_verb publish
A=$TMP/a PUB=$TMP/pub NODE=$TMP/node
head -20 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c1.jsonl"
echo '{"id": "zq-1", "title": "Quokkaflux", "text": "Quokkaflux is a made-up remedy for nothing at all, said twice: quokkaflux."}' >"$TMP/c2.jsonl"
"$MT" index --db "$A" --input "$TMP/c1.jsonl" --no-progress >/dev/null 2>&1
echo 'bob-password' | "$MT" user add --db "$A" bob 2>/dev/null
if "$MT" publish --db "$A" --to "$PUB" >"$TMP/pub1" 2>"$TMP/err" &&
    grep -q "published $PUB/snap-000001" "$TMP/pub1" &&
    [ "$(cat "$PUB/CURRENT")" = snap-000001 ] &&
    [ "$(sqlite3 "$PUB/snap-000001/store.db" 'SELECT count(*) FROM users')" = 0 ] &&
    [ "$(sqlite3 "$PUB/snap-000001/store.db" 'SELECT count(*) FROM documents')" = 20 ]; then
    ok "publish writes snap-000001 and CURRENT; its store.db has the 20 documents and no accounts"
else
    not_ok "publish" "$(cat "$TMP/pub1" "$TMP/err")"
fi
if "$MT" search --db "$PUB" --json lace plant perforations 2>"$TMP/err" | grep -q '"doc_id": *"21645374"'; then
    ok "search --db on a publish folder reads the snapshot CURRENT names"
else
    not_ok "search on a publish folder" "$(cat "$TMP/err")"
fi
if "$MT" stats --db "$PUB" --check --json 2>"$TMP/err" | grep -q '"documents": *20[,}]'; then
    ok "stats --db --check on a publish folder reads the snapshot CURRENT names"
else
    not_ok "stats on a publish folder" "$(cat "$TMP/err")"
fi

# A node: a copy of the publish folder, its own accounts beside it.
cp -a "$PUB" "$NODE"
echo 'alice-password' | "$MT" user add --db "$NODE" alice 2>/dev/null
"$MT" serve --db "$NODE" --listen 127.0.0.1:0 --rate-limit 0 >"$TMP/out" 2>"$TMP/serr" &
PIDS+=($!)
U=$(serve_url "$TMP/out")
curl -s -c "$TMP/jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
# hits QUERY: the number of hits /v1/search gives (or "HTTP CODE")
hits() {
    local code
    code=$(curl -s -b "$TMP/jar" -H "X-CSRF-Token: $csrf" -H "Content-Type: application/json" \
        -o "$TMP/sbody" -w '%{http_code}' "$U/v1/search" -d "{\"query\":\"$1\",\"k\":5}")
    [ "$code" = 200 ] || { echo "HTTP $code"; return; }
    python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["hits"]))' "$TMP/sbody"
}
before=$(hits quokkaflux)
lace=$(hits "lace plant")
if [ "$before" = 0 ] && [ "$lace" -ge 1 ] 2>/dev/null; then
    ok "the node serves snapshot 1 (lace plant found, quokkaflux not)"
else
    not_ok "node on snapshot 1" "quokkaflux $before, lace plant $lace" "$(cat "$TMP/serr")"
fi

# Searches all through the switch: each must answer 200. They go on until
# the switch is over ($TMP/switched), then 20 more, however long the
# index and publish below take on a loaded machine (at most 300 s).
python3 - "$U" "$csrf" "$TMP/jar" "$TMP/load" "$TMP/switched" <<'PY' &
import http.cookiejar, json, os, sys, time, urllib.request
u, csrf, jar, out, done = sys.argv[1:6]
cj = http.cookiejar.MozillaCookieJar(jar); cj.load(ignore_discard=True, ignore_expires=True)
op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cj))
codes = []
end, more = time.time() + 300, 20
while time.time() < end and more > 0:
    if os.path.exists(done):
        more -= 1
    rq = urllib.request.Request(u + "/v1/search", data=json.dumps({"query": "lace plant quokkaflux", "k": 5}).encode(),
                                headers={"Content-Type": "application/json", "X-CSRF-Token": csrf})
    try:
        with op.open(rq, timeout=10) as r:
            new = any(h.get("doc_id") == "zq-1" for h in json.load(r)["hits"])
            codes.append(f"{r.status}:{'new' if new else 'old'}")
    except Exception as e:
        codes.append(f"ERR:{e}")
open(out, "w").write("\n".join(codes) + "\n")
PY
LOAD=$!
"$MT" index --db "$A" --input "$TMP/c2.jsonl" --no-progress >/dev/null 2>&1
"$MT" publish --db "$A" --to "$PUB" --json >"$TMP/pub2" 2>"$TMP/err"
S2=$PUB/snap-000002
# the copy arrives in the worst order: CURRENT first...
cp "$PUB/CURRENT" "$NODE/.c" && mv "$NODE/.c" "$NODE/CURRENT"
sleep 1.2
early=$(hits quokkaflux)
# ...then the index and SNAPSHOT, and store.db cut short
mkdir "$NODE/snap-000002"
cp -a "$S2/index" "$S2/SNAPSHOT" "$NODE/snap-000002/"
head -c 4096 "$S2/store.db" >"$NODE/snap-000002/store.db"
sleep 1.2
partial=$(hits quokkaflux)
if [ "$early" = 0 ] && [ "$partial" = 0 ] && grep -q 'incomplete' "$TMP/serr"; then
    ok "an incomplete snapshot is not used: the node keeps searching snapshot 1 and says why"
else
    not_ok "incomplete snapshot" "quokkaflux $early then $partial" "$(tail -5 "$TMP/serr")"
fi
cp "$S2/store.db" "$NODE/snap-000002/store.db"
sleep 1.2
after=$(hits quokkaflux)
lace2=$(hits "lace plant")
if [ "$after" = 1 ] && [ "$lace2" -ge 1 ] 2>/dev/null && grep -q "search now reads $NODE/snap-000002" "$TMP/serr"; then
    ok "once snapshot 2 is whole the next search sees it, no restart"
else
    not_ok "switch to snapshot 2" "quokkaflux $after, lace plant $lace2" "$(tail -5 "$TMP/serr")"
fi
# the old snapshot removed from the node while searches run
rm -rf "$NODE/snap-000001"
: >"$TMP/switched"
wait $LOAD
n=$(wc -l <"$TMP/load")
bad=$(grep -vc '^200:' "$TMP/load")
if [ "$n" -ge 20 ] && [ "$bad" = 0 ] && grep -q '^200:old$' "$TMP/load" &&
    grep -q '^200:new$' "$TMP/load" &&
    awk '/new/ { s = 1 } s && /old/ { b = 1 } END { exit b }' "$TMP/load"; then
    ok "$n searches made throughout the switch (old snapshot, then only the new) all answered 200"
else
    not_ok "searches during the switch" "$n made, $bad not 200" "$(grep -v '^200:' "$TMP/load" | head -3)"
fi
"$MT" publish --db "$A" --to "$PUB" >/dev/null 2>&1
if [ -d "$PUB/snap-000003" ] && [ -d "$PUB/snap-000002" ] && [ ! -e "$PUB/snap-000001" ] &&
    grep -q '"removed": *0' "$TMP/pub2"; then
    ok "publish keeps the newest two snapshots by default"
else
    not_ok "prune" "$(ls "$PUB")" "$(cat "$TMP/pub2")"
fi
# Writers refuse a publish folder and a snapshot: what they wrote there
# would never be searched (CURRENT wins) or would break SNAPSHOT's list.
ls -lR "$PUB" >"$TMP/before"
for verb in "index --db $PUB --input $TMP/c2.jsonl" \
    "index --db $PUB/snap-000003" "import pubmedqa --db $PUB $TMP/c2.jsonl"; do
    # shellcheck disable=SC2086 # the words of the command
    if ! "$MT" $verb --no-progress >/dev/null 2>"$TMP/err" &&
        grep -q "is a publish\(ed snapshot\| folder\)" "$TMP/err" &&
        grep -q "medtrust publish\|publish again" "$TMP/err"; then
        ok "medtrust ${verb%% *} on $(echo "$verb" | awk '{print $3}') is refused, saying what to do"
    else
        not_ok "refuse ${verb%% *}" "$(cat "$TMP/err")"
    fi
done
ls -lR "$PUB" >"$TMP/after"
if cmp -s "$TMP/before" "$TMP/after" && [ ! -e "$PUB/store.db" ]; then
    ok "... and the publish folder is left as it was"
else
    not_ok "publish folder changed" "$(diff "$TMP/before" "$TMP/after" | head -5)"
fi
