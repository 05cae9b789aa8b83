#!/usr/bin/env bash
# Integration: `medtrust sweep` through the role-aware loopback stub: 3
# cells x 2 runs of react-reflex on 20 sampled notes; every number in the
# summary and the report is what `score` prints for that run's submission;
# killed mid-sweep and rerun it finishes only what was left, with the same
# result; a different sweep in the same folder is refused; the MedEval
# threshold replay keeps what it can and equals fresh runs; the report
# renders in Chromium.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=${MEDTRUST_BUILD}/test-logs
need_verb sweep mediqa score index
need "browser test prerequisites" /usr/bin/chromium \
    "$ROOT/third_party/browser/node_modules/playwright-core" "$(command -v node)"
mkdir -p "$LOGS"
unset MEDTRUST_LLM
export MEDTRUST_LLM_TIMEOUT=20
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"

"$MT" index --db "$TMP/db" --input "$DATA/pubmedqa/corpus.jsonl" \
    --no-progress >/dev/null 2>&1
# MedEval rounds alternate between a rejected 4,4,4,4,2 and an accepted
# 5,5,5,5,4, so notes reflect and the thresholds matter.
stub_start m --eval-finals 4,4,4,4,2,5,5,5,5,4
sweep() { "$MT" sweep --data "$MEDEC" --sample 20 --seed 7 --runs 2 \
    --grid retrieve_k=20,50,100 --rerank-k 20 --strategy react-reflex \
    --db "$TMP/db" --llm "$SPEC" --cache "$TMP/calls.db" --no-progress "$@"; }

if sweep --out "$TMP/a" >"$TMP/out" 2>"$TMP/err" &&
    [ "$(ls "$TMP"/a/cell-*/run-*/done | wc -l)" = 6 ] &&
    [ -s "$TMP/a/report.html" ] && [ -s "$TMP/a/summary.json" ]; then
    ok "sweep runs 3 cells x 2 runs and writes summary.json and report.html"
else
    not_ok "sweep 3 x 2" "$(tail -5 "$TMP/err")"
fi

# Every run's numbers are score's own for its submission; the sample is
# the same 20 notes in every cell, and the runs used the corpus.
py "$MT" "$TMP/a" <<'PY' >"$TMP/cmp" 2>&1 && ok "every cell's scores match score run on its submission; same 20 notes in every cell; trace statistics recorded" || not_ok "scores match score" "$(tail -5 "$TMP/cmp")"
import csv, json, subprocess, sys
mt, out = sys.argv[1], sys.argv[2]
s = json.load(open(out + "/summary.json"))
ids = [r["Text ID"] for r in csv.DictReader(open(out + "/sample.csv", encoding="utf-8"))]
assert len(ids) == 20, len(ids)
assert len(s["cells"]) == 3 and all(len(c["runs"]) == 2 for c in s["cells"])
assert [c["params"]["retrieve_k"] for c in s["cells"]] == ["20", "50", "100"]
seeds = set()
for c in s["cells"]:
    for r, run in enumerate(c["runs"]):
        d = "%s/cell-%03d/run-%d" % (out, c["cell"], r + 1)
        got = json.loads(subprocess.check_output(
            [mt, "score", "--ref", out + "/sample.csv", "--pred", d + "/submission.txt", "--json"]))
        mine = dict(run["score"]); got.pop("run", None); mine.pop("run", None)
        assert mine == got, (d, mine, got)
        sub = [l.split(" ")[0] for l in open(d + "/submission.txt")]
        assert sub == ids, (d, sub[:3])
        st = run["stats"]
        assert st["notes"] == 20 and st["react_turns"] >= 1 and st["calls"] > 0, st
        assert st["reflex_turns"] > 0 and st["step_ms"] > 0, st
        assert sum(st["sources"].values()) > 0, st
        assert st["tokens_by_role"]["react"]["prompt"] > 0, st
        seeds.add(run["seed"])
assert seeds == {7, 8}, seeds
assert s["corpus"], s["corpus"]
PY

# Kill -9 the whole sweep (it and its mediqa child) after its first run,
# rerun: finished runs are kept, the rest done, the result the same.
setsid bash -c "$(declare -f sweep); MT='$MT' MEDEC='$MEDEC' TMP='$TMP' SPEC='$SPEC'; sweep --out '$TMP/b'" >/dev/null 2>&1 &
spid=$!
for i in $(seq 600); do [ -e "$TMP/b/cell-001/run-1/done" ] && break; sleep 0.1; done
kill -9 -- -"$spid" 2>/dev/null
wait "$spid" 2>/dev/null
n_before=$(ls "$TMP"/b/cell-*/run-*/done 2>/dev/null | wc -l)
first=$(stat -c %Y.%s "$TMP/b/cell-001/run-1/done" 2>/dev/null)
if [ "$n_before" -ge 1 ] && [ "$n_before" -lt 6 ] &&
    sweep --out "$TMP/b" >/dev/null 2>"$TMP/err" &&
    [ "$(stat -c %Y.%s "$TMP/b/cell-001/run-1/done")" = "$first" ] &&
    py "$TMP/a" "$TMP/b" <<'PY'
import json, sys
a, b = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
def scores(s):  # "run" names the submission file, which differs
    return [[{k: v for k, v in r["score"].items() if k != "run"}
             for r in c["runs"]] for c in s["cells"]]
assert scores(a) == scores(b)
PY
then
    ok "killed after $n_before of 6 runs and rerun, it finishes the rest with the uninterrupted sweep's scores"
else
    not_ok "kill and rerun" "done before: $n_before" "$(tail -3 "$TMP/err")"
fi

# mediqa --resume cuts a torn last trace line (a kill mid-write) before it
# appends, so every line stays one JSON object.
"$MT" mediqa --data "$TMP/a/sample.csv" --out "$TMP/t.txt" --trace "$TMP/t.jsonl" \
    --strategy single --llm "$SPEC" --limit 3 --no-progress 2>/dev/null
printf '{"id":"ms-val-torn","error_fl' >>"$TMP/t.jsonl"
"$MT" mediqa --data "$TMP/a/sample.csv" --out "$TMP/t.txt" --trace "$TMP/t.jsonl" \
    --strategy single --llm "$SPEC" --limit 5 --resume --no-progress 2>/dev/null
if py "$TMP/t.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 5, len(lines)
assert all(json.loads(l)["id"] != "ms-val-torn" for l in lines)
PY
then ok "mediqa --resume cuts a torn trace line before appending"
else not_ok "torn trace line" "$(tail -c 300 "$TMP/t.jsonl")"; fi

if ! sweep --out "$TMP/a" --grid steps=2,3 >/dev/null 2>"$TMP/err" &&
    grep -q "different sweep" "$TMP/err"; then
    ok "a different sweep in the same folder is refused"
else
    not_ok "different sweep refused" "$(tail -2 "$TMP/err")"
fi
if ! sweep --out "$TMP/c" --grid bogus_key=1,2 >/dev/null 2>"$TMP/err" &&
    grep -q "bogus_key" "$TMP/err"; then
    ok "an unknown grid key is refused by name"
else
    not_ok "unknown grid key" "$(tail -2 "$TMP/err")"
fi

# Threshold replay (Fig. 8): the recorded thresholds replay every note; a
# looser pair reruns the notes whose rounds it decides differently, and
# each cell equals a fresh mediqa run with its thresholds (same seed and
# call cache).
if "$MT" sweep --replay "$TMP/a" --out "$TMP/r" --grid eval_avg=3.0,3.8 \
    --grid eval_min=2,3 --no-progress >/dev/null 2>"$TMP/err"; then
    ok "sweep --replay computes a threshold grid from the recorded rounds"
else
    not_ok "sweep --replay" "$(tail -5 "$TMP/err")"
fi
py "$MT" "$TMP/r" "$TMP/db" "$SPEC" "$TMP/calls.db" "$TMP" <<'PY' >"$TMP/cmp" 2>&1 && ok "replayed cells keep every note at the recorded thresholds, rerun the changed ones, and equal fresh runs" || not_ok "replay equals fresh runs" "$(tail -5 "$TMP/cmp")"
import json, subprocess, sys, filecmp
mt, out, db, spec, cache, tmp = sys.argv[1:]
s = json.load(open(out + "/summary.json"))
assert len(s["cells"]) == 12, len(s["cells"])
reran = 0
for c in s["cells"]:
    p = c["params"]
    for r, run in enumerate(c["runs"]):
        rp = run["replay"]
        assert rp["replayed"] + rp["rerun"] == 20, rp
        if (p["eval_avg"], p["eval_min"]) == ("3.8", "3"):
            assert rp["rerun"] == 0, (p, rp)
            orig = "%s/a/cell-%03d/run-%d/submission.txt" % (tmp, c["replay_of"] + 1, r + 1)
            mine = "%s/cell-%03d/run-%d/submission.txt" % (out, c["cell"], r + 1)
            assert filecmp.cmp(orig, mine, shallow=False), (orig, mine)
        reran += rp["rerun"]
        if c["cell"] in (1, 4) and r == 0:
            d = "%s/cell-%03d/run-%d" % (out, c["cell"], r + 1)
            fresh = tmp + "/fresh-%d.txt" % c["cell"]
            subprocess.check_call(
                [mt, "mediqa", "--data", out + "/sample.csv", "--out", fresh,
                 "--db", db, "--llm", spec, "--cache", cache, "--strategy", "react-reflex",
                 "--rerank-k", "20", "--retrieve-k", p["retrieve_k"],
                 "--accept-mean", p["eval_avg"], "--accept-min", p["eval_min"],
                 "--seed", str(run["seed"]), "--no-progress"], stderr=subprocess.DEVNULL)
            assert open(fresh).read() == open(d + "/submission.txt").read(), c["cell"]
assert reran > 0, "no threshold changed a decision"
PY

# Old traces still read (issue 33 §5): the same sweep with its traces
# rewritten as version 1 wrote them (no "trace_version", no search
# "passages", no call "parsed") replays to the same cells; a trace of a
# newer version is refused naming its file and line.
rm -rf "$TMP/a1" && cp -r "$TMP/a" "$TMP/a1"
py "$TMP/a1" <<'PY' >"$TMP/v1" 2>&1
import glob, json, sys
n = 0
for f in glob.glob(sys.argv[1] + "/**/*.jsonl", recursive=True):
    out = []
    for line in open(f):
        o = json.loads(line)
        if "trace_version" in o:
            assert o.pop("trace_version") == 2, f
            for t in o.get("trace", []):
                t.pop("passages" if t.get("step") == "search" else "parsed", None)
            n += 1
        out.append(json.dumps(o) + "\n")
    open(f, "w").writelines(out)
assert n > 0, "no trace line had a version"
print(n)
PY
if "$MT" sweep --replay "$TMP/a1" --out "$TMP/r1" --grid eval_avg=3.0,3.8 \
    --grid eval_min=2,3 --no-progress >/dev/null 2>"$TMP/err" &&
    py "$TMP/r" "$TMP/r1" <<'PY'; then
import json, sys, filecmp
a = json.load(open(sys.argv[1] + "/summary.json"))["cells"]
b = json.load(open(sys.argv[2] + "/summary.json"))["cells"]
assert [[r["replay"] for r in c["runs"]] for c in a] == \
    [[r["replay"] for r in c["runs"]] for c in b]
for c in a:
    for r in range(len(c["runs"])):
        p = "/cell-%03d/run-%d/submission.txt" % (c["cell"], r + 1)
        assert filecmp.cmp(sys.argv[1] + p, sys.argv[2] + p, shallow=False), p
PY
    ok "sweep --replay reads version-1 traces as before ($(cat "$TMP/v1") lines)"
else
    not_ok "version-1 traces" "$(tail -3 "$TMP/err")"
fi
t=$(grep -l trace_version -r "$TMP/a" --include=*.jsonl | head -1)
rm -rf "$TMP/a2" && cp -r "$TMP/a" "$TMP/a2"
t2=${t/"$TMP/a/"/"$TMP/a2/"}
sed -i '1s/"trace_version":2/"trace_version":99/' "$t2"
if ! "$MT" sweep --replay "$TMP/a2" --out "$TMP/r2" --grid eval_avg=3.0 \
    --no-progress >/dev/null 2>"$TMP/err" &&
    grep -q "$(basename "$t2"):1: trace version newer" "$TMP/err"; then
    ok "a trace of a newer version is refused, naming the file and line"
else
    not_ok "newer trace version" "$(tail -3 "$TMP/err")"
fi

figs=fig-metric-0,fig-latency-0,fig-turns-0,fig-sources
if timeout 120 node "$ROOT/tests/browser/test_sweep.js" "$TMP/a/report.html" \
    "$LOGS/sweep_report.png" "$TMP/profile" "$figs" >"$TMP/b.tap" 2>&1 &&
    timeout 120 node "$ROOT/tests/browser/test_sweep.js" "$TMP/r/report.html" \
        "$LOGS/sweep_replay.png" "$TMP/profile2" fig-heat >>"$TMP/b.tap" 2>&1; then
    :
fi
cat "$TMP/b.tap"
