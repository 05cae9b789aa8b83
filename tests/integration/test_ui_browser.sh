#!/usr/bin/env bash
# The web UI in headless Chromium (tests/browser/test_ui.js) against the
# real binary: `medtrust serve` on a loopback port over a small store with
# BM25 and USE-lite vectors, the role-aware agent stub as its model.
# Screenshots go to $MEDTRUST_BUILD/test-logs.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=${MEDTRUST_BUILD:-$ROOT/build/test}/test-logs
PW="$ROOT/third_party/browser/node_modules/playwright-core"
SERVE_PID=

need_verb serve
need "browser test prerequisites" /usr/bin/chromium "$PW" \
    "${PW%/*}/axe-core/axe.min.js" "$(command -v node)"
mkdir -p "$LOGS"
trap 'for p in "${STUB_PIDS[@]}" $SERVE_PID; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
unset MEDTRUST_LLM

# A small store: a few MedQuAD and PubMedQA documents, BM25 and vectors.
head -8 "$DATA/medquad/corpus.jsonl" >"$TMP/mq.jsonl"
# PubMedQA has no authors or journals: the documents get some, as a
# PubMed import writes them, for the metadata filters (META: id -> them).
head -40 "$DATA/pubmedqa/corpus.jsonl" | python3 -c '
import json, sys
meta = {}
for i, l in enumerate(sys.stdin):
    d = json.loads(l)
    d["authors"] = ["Even Author" if i % 2 == 0 else "Odd Person", "Kim Lee"]
    d["journal"] = "Journal %d of Medicine" % (i % 3)
    d["publication_types"] = ["Review" if i % 4 else "Clinical Trial"]
    meta[d["id"]] = {k: d[k] for k in ("authors", "journal", "publication_types")}
    print(json.dumps(d))
json.dump(meta, open(sys.argv[1], "w"))' "$TMP/meta.json" >"$TMP/pq.jsonl"
for s in mq:medquad pq:pubmedqa; do
    if ! "$MT" index --db "$TMP/db" --input "$TMP/${s%%:*}.jsonl" \
        --source "${s#*:}" --embedder use-lite --no-progress \
        >/dev/null 2>"$TMP/index.err"; then
        not_ok "test store built" "$(tail -3 "$TMP/index.err")"
        exit 1
    fi
done
# Three MEDEC notes for the batch page.
python3 - "$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv" \
    "$TMP/medec3.csv" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))
csv.writer(open(sys.argv[2], "w", encoding="utf-8", newline="")).writerows(rows[:4])
# the same notes unlabeled: Text ID and Text only (as mediqa takes them)
h = rows[0]
cols = [h.index("Text ID"), h.index("Text")]
csv.writer(open(sys.argv[2][:-4] + "-unlabeled.csv", "w", encoding="utf-8",
                newline="")).writerows([[r[c] for c in cols] for r in rows[:4]])
# per-pair BLEURT and BERTScore files beside it, as the official runs
# write them, for the batch page's uploads
d = sys.argv[2].rsplit("/", 1)[0]
for name, v in (("bleurt.txt", 0.25), ("bertscore.txt", 0.75)):
    with open(d + "/" + name, "w") as f:
        f.writelines("%s %s\n" % (r[0], v) for r in rows[1:4])
PY
ADMIN_PW=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
echo "$ADMIN_PW" | "$MT" user add --db "$TMP/db" admin --admin 2>/dev/null

# Two broken models besides: every MedReAct reply, or every guard
# agent's, is garbage (a check on them must show as failed).
stub_start bad-react --garble react
BAD_REACT=$SPEC
stub_start bad-guard --garble guard
BAD_GUARD=$SPEC
stub_start ui --delay 120 --token-delay 40 --eval-finals 5,5,5,5,4
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --llm "$SPEC" \
    --llm-choice "stub-b=$SPEC" --llm-choice "broken-react=$BAD_REACT" \
    --llm-choice "broken-guards=$BAD_GUARD" --open-registration \
    --data-dir "$TMP/logs" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 100); do
    grep -q listening "$TMP/serve.out" 2>/dev/null && break
    sleep 0.1
done
PORT=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/\1/p' "$TMP/serve.out")
if [ -z "$PORT" ]; then
    not_ok "server started" "$(tail -3 "$TMP/serve.err")"
    exit 1
fi
ok "server started on port $PORT"

timeout 300 node "$ROOT/tests/browser/test_ui.js" "http://127.0.0.1:$PORT" \
    "$LOGS" "$TMP/profile" "$ADMIN_PW" "$TMP/medec3.csv" "$TMP/meta.json"
rc=$?
[ $rc -eq 0 ] || echo "# browser test exit status $rc"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
rc=$?
SERVE_PID=
if [ $rc -eq 0 ] && ! grep -q "aspirin" "$TMP/logs/"*.log; then
    ok "the server stops cleanly; logs hold no note text"
else
    not_ok "server stop" "rc=$rc" "$(tail -3 "$TMP/serve.err")"
fi

# The same store served again: the users' own defaults are still there.
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 --llm "$SPEC" \
    --data-dir "$TMP/logs" >"$TMP/serve2.out" 2>"$TMP/serve2.err" &
SERVE_PID=$!
for _ in $(seq 100); do
    grep -q listening "$TMP/serve2.out" 2>/dev/null && break
    sleep 0.1
done
PORT=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/\1/p' "$TMP/serve2.out")
if [ -n "$PORT" ]; then
    timeout 120 node "$ROOT/tests/browser/test_ui.js" "http://127.0.0.1:$PORT" \
        "$LOGS" "$TMP/profile2" "$ADMIN_PW" "$TMP/medec3.csv" "$TMP/meta.json" \
        after-restart || echo "# browser test (after the restart) failed"
else
    not_ok "server restarted" "$(tail -3 "$TMP/serve2.err")"
fi
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
SERVE_PID=
if grep -q 'without a request line' "$TMP/serve.err"; then
    not_ok "Chromium's preconnect sockets are not warned about" \
        "$(grep 'request line' "$TMP/serve.err" | head -2)"
else
    ok "Chromium's preconnect sockets are not warned about"
fi
