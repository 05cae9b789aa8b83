#!/usr/bin/env bash
# Integration (issue 39, "How we prove it"): `kill -9` at several points
# of each long command other than `index` (test_crash.sh has that one).
# Whatever moment the kill lands, the assertions hold:
# - `import csv --db` (79,045 documents): the store opens and passes its
#   integrity check holding whole batches (or everything); a resumed run,
#   killed again, then a last rerun, ends with every document once (no
#   duplicated documents, chunks or index entries) and `search` answers.
# - `mediqa --trace` against the loopback agent stub: the submission is
#   absent or whole (the atomic write), every journal and trace line
#   parses, and `--resume` ends with exactly the lines of an unkilled run
#   and one trace line per note.
# - `publish`: the publish folder still serves a whole snapshot (the last
#   one or the new one), and a rerun publishes the new data.
# A kill that found the run already ended says so; its output must then
# be complete.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb import mediqa publish
unset MEDTRUST_LLM MEDTRUST_LLM_SINGLE
export MEDTRUST_EMBEDDER=none MEDTRUST_LLM_TIMEOUT=20

# kill9 PID DELAY: SIGKILLs PID after DELAY s and reaps it. Sets HOW:
# "killed", or "ended" when the run had finished before (exit 0), else
# "failed".
kill9() {
    sleep "$2"
    if kill -KILL "$1" 2>/dev/null; then
        wait "$1" 2>/dev/null
        HOW=killed
    elif wait "$1"; then
        HOW=ended
    else
        HOW=failed
    fi
}

# ---- import csv --db ----
# Five renamed copies of MedQuAD as one CSV (79,045 documents).
python3 - "$DATA/medquad/corpus.jsonl" "$TMP/big.csv" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
w = csv.writer(open(sys.argv[2], "w", encoding="utf-8", newline=""))
w.writerow(["id", "title", "text"])
for i in range(1, 6):
    for r in rows:
        w.writerow(["c%d-%s" % (i, r["id"]), r["title"], r["text"]])
PY
total=$(($(wc -l <"$DATA/medquad/corpus.jsonl") * 5))
BATCH=1000
imp() {
    exec "$MT" import csv --db "$TMP/idb" --id-col id --text-col text \
        --title-col title --batch $BATCH --no-progress "$TMP/big.csv"
}
# counts DB: "documents chunks index-chunks damaged" after stats --check.
counts() {
    "$MT" stats --db "$1" --check --json 2>"$TMP/serr" | python3 -c '
import json, sys
d = c = ic = dmg = 0
for l in sys.stdin:
    o = json.loads(l)
    if "index" in o:
        ic, dmg = o["index"]["chunks"], o["index"]["damaged"]
    elif o.get("source") is None:
        d, c = o["documents"], o["chunks"]
print(d, c, ic, dmg)'
}
# (imp runs in a subshell: exec makes the kill land on medtrust itself)
# Each kill lands on the run the previous kill left (a resumed import):
# early in the records, later in them, in or near the index build.
for delay in 0.5 3 8; do
    (imp) >/dev/null 2>"$TMP/imp.err" &
    kill9 $! "$delay"
    how=$HOW
    read -r docs chunks ichunks dmg <<<"$(counts "$TMP/idb")"
    if [ "$how" = failed ] || grep -qE 'Sanitizer|runtime error' "$TMP/imp.err"; then
        not_ok "import killed after ${delay}s" "$(tail -2 "$TMP/imp.err")"
    elif [ -z "$docs" ] || [ "$docs" -gt "$total" ] || [ "$dmg" != 0 ] ||
        { [ $((docs % BATCH)) -ne 0 ] && [ "$docs" -ne "$total" ]; } ||
        { [ "$how" = ended ] && [ "$ichunks" != "$chunks" ]; }; then
        not_ok "import $how after ${delay}s: store sound" \
            "docs=$docs chunks=$chunks index=$ichunks damaged=$dmg" "$(cat "$TMP/serr")"
    else
        ok "import $how after ${delay}s: the store passes its integrity check, $docs documents (whole batches), index undamaged ($ichunks chunks)"
    fi
done
(imp) >/dev/null 2>"$TMP/imp.err"
rc=$?
read -r docs chunks ichunks dmg <<<"$(counts "$TMP/idb")"
# the same search on every copy: one hit a copy, each document once
ids=$("$MT" search --db "$TMP/idb" --group chunks --json -k 10 leukemia 2>"$TMP/serr" |
    python3 -c 'import json,sys; print(" ".join(json.loads(l)["doc_id"] for l in sys.stdin))')
nids=$(wc -w <<<"$ids")
uniq=$(tr ' ' '\n' <<<"$ids" | sort -u | grep -c .)
chunks1=$(sqlite3 "$TMP/idb/store.db" 'SELECT count(*) FROM chunks')
if [ $rc -eq 0 ] && [ "$docs" = "$total" ] && [ "$ichunks" = "$chunks" ] &&
    [ "$chunks1" = "$chunks" ] && [ "$dmg" = 0 ] && [ "$nids" = 10 ] && [ "$uniq" = 10 ]; then
    ok "import rerun after the kills completes: $total documents, $chunks chunks, each once in the index; search answers (10 distinct hits)"
else
    not_ok "import rerun after the kills (rc $rc)" \
        "docs=$docs/$total chunks=$chunks/$chunks1 index=$ichunks damaged=$dmg hits=$nids distinct=$uniq" \
        "$(tail -2 "$TMP/imp.err")" "$(cat "$TMP/serr")"
fi

# ---- publish ----
head -20 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c1.jsonl"
"$MT" index --db "$TMP/small" --input "$TMP/c1.jsonl" --no-progress >/dev/null 2>&1
"$MT" publish --db "$TMP/small" --to "$TMP/pub0" >/dev/null 2>&1
# serves PUB: "old" (snapshot 1 whole), "new" (the big store whole) or why not
serves() {
    local d
    d=$("$MT" stats --db "$1/$(cat "$1/CURRENT")" --check --json 2>/dev/null |
        sed -n 's/^{"source":null,"documents":\([0-9]*\).*/\1/p')
    if [ "$d" = 20 ] && "$MT" search --db "$1" --json lace plant 2>/dev/null |
        grep -q '"doc_id":"21645374"'; then
        echo old
    elif [ "$d" = "$total" ] && "$MT" search --db "$1" --json leukemia 2>/dev/null |
        grep -q '"doc_id":"c1-'; then
        echo new
    else
        echo "neither (documents: ${d:-none})"
    fi
}
for delay in 0.05 0.2 0.35; do
    rm -rf "$TMP/pub"
    cp -a "$TMP/pub0" "$TMP/pub"
    "$MT" publish --db "$TMP/idb" --to "$TMP/pub" >/dev/null 2>"$TMP/pub.err" &
    kill9 $! "$delay"
    how=$HOW
    s=$(serves "$TMP/pub")
    if [ "$how" = failed ] || { [ "$how" = ended ] && [ "$s" != new ]; } ||
        { [ "$s" != old ] && [ "$s" != new ]; }; then
        not_ok "publish $how after ${delay}s: a whole snapshot serves" "serves: $s" "$(tail -2 "$TMP/pub.err")"
        continue
    fi
    if "$MT" publish --db "$TMP/idb" --to "$TMP/pub" >/dev/null 2>"$TMP/pub.err" &&
        [ "$(serves "$TMP/pub")" = new ]; then
        ok "publish $how after ${delay}s: the folder serves the $s snapshot whole; a rerun publishes the new one"
    else
        not_ok "publish rerun after a kill at ${delay}s" "$(tail -2 "$TMP/pub.err")"
    fi
done

# ---- mediqa --trace ----
csv_head "$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv" 24 "$TMP/notes.csv"
stub_start main --delay 300
# (run in a subshell: exec makes the kill land on medtrust itself)
mq() { exec "$MT" mediqa --llm "$SPEC" --data "$TMP/notes.csv" --strategy single \
    --no-progress --jobs 2 --out "$TMP/$1.txt" --trace "$TMP/$1.jsonl" "${@:2}"; }
(mq ref) >/dev/null 2>&1
nnotes=$(wc -l <"$TMP/ref.txt")
# after_kill HOW: the submission absent or whole, journal/trace lines parse
after_kill() {
    python3 - "$TMP/mq.txt" "$TMP/ref.txt" "$TMP/mq.txt.journal" "$TMP/mq.jsonl" "$1" <<'PY'
import json, os, sys
out, ref, jr, tr, how = sys.argv[1:6]
if os.path.exists(out):
    assert open(out, "rb").read() == open(ref, "rb").read(), "a torn submission"
else:
    assert how == "killed", "the run ended without its submission"
for f in (jr, tr):
    if os.path.exists(f):
        for n, l in enumerate(open(f, encoding="utf-8"), 1):
            assert l.endswith("\n"), "%s:%d: a torn line" % (f, n)
            json.loads(l)
print(os.path.exists(out) and "whole" or "absent",
      sum(1 for _ in open(jr)) if os.path.exists(jr) else 0)
PY
}
for delay in 0.6 1.8 3; do
    rm -f "$TMP/mq."*
    (mq mq) >/dev/null 2>"$TMP/mq.err" &
    kill9 $! "$delay"
    how=$HOW
    res=$(after_kill "$how" 2>"$TMP/py.err")
    if [ "$how" = failed ] || [ -z "$res" ]; then
        not_ok "mediqa $how after ${delay}s" "$(tail -2 "$TMP/py.err")" "$(tail -2 "$TMP/mq.err")"
        continue
    fi
    read -r sub journaled <<<"$res"
    (mq mq --resume) >/dev/null 2>"$TMP/mq.err"
    rc=$?
    if [ $rc -eq 0 ] && cmp -s "$TMP/mq.txt" "$TMP/ref.txt" && python3 - \
        "$TMP/mq.jsonl" "$TMP/ref.jsonl" 2>"$TMP/py.err" <<'PY'; then
import json, sys
got = [json.loads(l)["id"] for l in open(sys.argv[1])]
ref = [json.loads(l)["id"] for l in open(sys.argv[2])]
assert sorted(got) == sorted(ref), (len(got), len(ref), sorted(set(got) ^ set(ref)))
PY
        ok "mediqa $how after ${delay}s: submission $sub, $journaled notes journaled, every line parses; --resume writes the $nnotes lines of an unkilled run and one trace line a note"
    else
        not_ok "mediqa --resume after a kill at ${delay}s (rc $rc)" \
            "$(tail -2 "$TMP/py.err")" "$(tail -2 "$TMP/mq.err")" \
            "$(diff "$TMP/mq.txt" "$TMP/ref.txt" 2>&1 | head -3)"
    fi
done
