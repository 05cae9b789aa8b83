#!/usr/bin/env bash
# Integration: POST /v1/check on `medtrust serve --llm` (the role-aware
# agent stub): each strategy queues a run whose result is the CLI's
# `check --json` object, its steps stream as Server-Sent Events (search
# steps with passages), the run and an audit line (a hash, no note text)
# are recorded, bad input is 400, a missing model is 503 with what to set,
# and a cap of one LLM job queues the rest while searches stay fast.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL MEDTRUST_LLM_REFLECT \
    MEDTRUST_LLM_PARSER MEDTRUST_LLM_GUARD MEDTRUST_LLM_SINGLE
. "$(dirname "$0")/api_lib.sh"

printf 'A 62-year-old man has crushing chest pain.\nECG shows ST elevation in II, III and aVF.\nHe is given aspirin and sent home.\n' >"$TMP/note.txt"
body() { # body STRATEGY: the request for the note
    python3 -c 'import json,sys; print(json.dumps({"note": open(sys.argv[1]).read(), "strategy": sys.argv[2]}))' "$TMP/note.txt" "$1"
}

# ==== Without a model ====
serve_start nollm
no_model_check check /v1/check "$(body guards)"

# ==== With the stub ====
stub_start main --delay 400 --hold-while "$TMP/hold"
serve_start main --llm "$SPEC" --data-dir "$TMP/logs"
expect "an empty note is 400" 400 "${A[@]}" "$U/v1/check" -d '{"note":""}'
expect "an unknown strategy is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"x.","strategy":"nope"}'
expect "a check needs a session" 401 "$U/v1/check" -d "$(body single)"
expect "max_rounds out of range is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"x.","max_rounds":99}'
grep -q 'max_rounds.*an integer in 1\.\.10' "$TMP/body" &&
    ok "... naming the field and its bounds" || not_ok "400" "$(cat "$TMP/body")"
expect "accept_mean out of range is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"x.","accept_mean":9}'
grep -q 'accept_mean.*\[1, 5\]' "$TMP/body" &&
    ok "... naming the field and its bounds" || not_ok "400" "$(cat "$TMP/body")"
expect "GET /v1/limits" 200 "${A[@]}" "$U/v1/limits"
if python3 - "$TMP/body" <<'PY'; then
import json, sys
l = json.load(open(sys.argv[1]))
c = l["check"]["fields"]
assert c["max_rounds"] == {"min": 1, "max": 10, "default": 5, "integer": True,
                           "what": "MedReFlex rounds, M", "option": "rounds",
                           "cli_max": 32}, c
assert c["accept_mean"]["default"] == 3.8 and not c["accept_mean"]["integer"]
assert l["ask"]["fields"]["k"]["max"] == 100 and l["ask"]["question_bytes"] == 8192
assert l["check"]["note_bytes"] == 262144 and l["body_bytes"] > 0, l
PY
    ok "/v1/limits lists each setting's bounds and default"
else not_ok "/v1/limits" "$(head -c 400 "$TMP/body")"; fi
# One strategy table (issue 33 §2): /v1/limits' strategies, `check --help`
# and the 400 for an unknown strategy all name the same ones.
"$MT" check --help >"$TMP/check.help"
cp "$TMP/body" "$TMP/limits.json"
expect "an unknown strategy is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"x.","strategy":"nope"}'
if python3 - "$TMP/limits.json" "$TMP/check.help" "$TMP/body" <<'PY'; then
import json, sys
c = json.load(open(sys.argv[1]))["check"]
info = c["strategy_info"]
names = [s["name"] for s in info]
assert names == c["strategies"] == ["react-reflex", "guards", "single"], c
assert info[0]["roles"] == ["react", "eval", "reflect", "parser"], info[0]
assert [s["needs_retriever"] for s in info] == [True, False, False], info
assert [s["needs_examples"] for s in info] == [False, False, True], info
assert all(s["title"] and s["summary"] for s in info), info
help = open(sys.argv[2]).read().split("Strategies (--strategy):")[1]
for s in info:
    assert ("  " + s["name"]) in help and s["summary"] in help, (s, help)
    assert ("roles: " + " ".join(s["roles"])) in help, (s, help)
err = json.load(open(sys.argv[3]))["error"]
assert "react-reflex, guards or single" in err, err
PY
    ok "/v1/limits, check --help and the API's errors list the strategy table"
else not_ok "strategy table" "$(head -c 400 "$TMP/limits.json")"; fi
expect "a check naming an unknown source is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"He is given aspirin.","source":["pubmedqa","nosuch"]}'
expect "a source that is not a name is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"He is given aspirin.","source":[7]}'
expect "check with \"source\" is queued (202)" 202 "${A[@]}" "$U/v1/check" \
    -d '{"note":"He is given aspirin and sent home.","strategy":"react-reflex","source":["pubmedqa"]}'
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/src.sse"
if grep -q '"sources":\["pubmedqa"\]' "$TMP/src.sse"; then
    ok "POST /v1/check \"source\" reaches react-reflex's search()"
else not_ok "check with source" "$(head -c 400 "$TMP/src.sse")"; fi
for s in react-reflex guards single; do
    expect "check --strategy $s is queued (202)" 202 "${A[@]}" "$U/v1/check" \
        -d "$(body $s)"
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/$s.sse"
    "$MT" check --llm "$SPEC" --db "$TMP/db" --strategy "$s" --json \
        "$TMP/note.txt" >"$TMP/$s.cli" 2>/dev/null
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/$s.run"
    if python3 - "$TMP/$s.sse" "$TMP/$s.cli" "$TMP/$s.run" "$s" <<'PY'; then
import json, sys, hashlib
sse, cli, run, strat = sys.argv[1:]
events = []
for block in open(sse).read().split("\n\n"):
    lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
    if "event" in lines:
        events.append((lines["event"], json.loads(lines["data"])))
kinds = [e for e, _ in events]
assert kinds[-1] == "done" and "step" in kinds, kinds
steps = [d for e, d in events if e == "step"]
done = events[-1][1]
api = done["result"]
want = json.load(open(cli))
strip = lambda t: [{k: v for k, v in s.items() if k not in ("ms", "passages")}
                   for s in t]
# every trace record streamed as a step, in order
assert strip(steps) == strip(api["trace"])
assert strip(api.pop("trace")) == strip(want.pop("trace"))
assert api == want, (api, want)
if strat == "react-reflex":
    s = [d for d in steps if d["step"] == "search"][0]
    assert s["passages"] and s["passages"][0]["doc_id"] == s["hits"][0], s
r = json.load(open(run))
assert r["status"] == "done" and r["kind"] == "check"
note = open(sys.argv[1].replace(strat + ".sse", "note.txt"), "rb").read()
assert r["input_sha256"] == hashlib.sha256(note).hexdigest()
PY
        ok "check $s: steps stream live and the result is the CLI's --json"
    else
        not_ok "check $s over HTTP" "$(head -c 400 "$TMP/$s.sse")"
    fi
done
# A stream opened after the job has ended replays every step, then done
# (the server keeps its last finished jobs' events), not "done" alone.
expect "a single check is queued (202)" 202 "${A[@]}" "$U/v1/check" \
    -d "$(body single)"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
for i in $(seq 300); do
    curl -s "${A[@]}" "$U/v1/runs/$RUN" | grep -q '"status":"done"' && break
    sleep 0.1
done
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/late.sse"
if grep -q '^event: step' "$TMP/late.sse" &&
    tail -3 "$TMP/late.sse" | grep -q '^event: done'; then
    ok "an event stream opened after the check ended still gets its steps, then done"
else not_ok "late event stream" "$(head -c 300 "$TMP/late.sse")"; fi
if grep -q '"action":"check"' "$TMP/logs/audit.log" &&
    grep -q 'note_sha256' "$TMP/logs/audit.log" &&
    ! grep -qi 'aspirin' "$TMP/logs/"*.log; then
    ok "the audit log records each check by hash, without note text"
else not_ok "audit log" "$(tail -2 "$TMP/logs/audit.log")"; fi

# ==== The paper settings of a check, as `check --steps --rounds ...` ====
SET='"max_steps":1,"max_rounds":2,"accept_mean":4.5,"accept_min":4'
expect "a react-reflex check with its own settings is 202" 202 "${A[@]}" \
    "$U/v1/check" -d "$(body react-reflex | sed "s/}\$/,$SET}/")"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/set.run"
"$MT" check --llm "$SPEC" --db "$TMP/db" --json --steps 1 --rounds 2 \
    --accept-mean 4.5 --accept-min 4 "$TMP/note.txt" >"$TMP/set.cli" 2>/dev/null
if python3 - "$TMP/set.run" "$TMP/set.cli" "$TMP/react-reflex.cli" <<'PY'; then
import json, sys
api = json.load(open(sys.argv[1]))["result"]
cli, dflt = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
strip = lambda t: [{k: v for k, v in s.items() if k != "ms"} for s in t]
assert strip(api.pop("trace")) == strip(cli.pop("trace"))
assert api == cli, (api, cli)
assert cli["usage"] != dflt["usage"], "the settings changed nothing"
PY
    ok "a check's settings give the CLI's result with the same options"
else not_ok "check settings" "$(head -c 400 "$TMP/set.run")"; fi

# searched.searched(SSE, RUN, CLI, PLAIN): a check's search steps from its
# event stream, after checking that each has hits and shows them as its
# passages, that the run's result is the CLI's (CLI: its --json) and that
# its first search found other hits than the unfiltered default check's
# (PLAIN), so the option under test changed something.
cat >"$TMP/searched.py" <<'PY'
import json
def searched(sse, run, cli, plain):
    steps = []
    for block in open(sse).read().split("\n\n"):
        lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
        if lines.get("event") == "step":
            steps.append(json.loads(lines["data"]))
    search = [d for d in steps if d["step"] == "search"]
    assert search, [d["step"] for d in steps]
    for d in search:
        assert d["hits"], d
        assert [p["doc_id"] for p in d["passages"]] == d["hits"], d
    api = json.load(open(run))["result"]
    want = json.load(open(cli))
    strip = lambda t: [{k: v for k, v in s.items() if k != "ms"} for s in t]
    assert strip(api.pop("trace")) == strip(want.pop("trace"))
    assert api == want, (api, want)
    first = [s for s in json.load(open(plain))["trace"] if s["step"] == "search"]
    assert first[0]["hits"] != search[0]["hits"], "the option changed nothing"
    return search
PY

# ==== Metadata filters: MedReAct's searches see only matching documents ====
# "author" and "publication_type" reach react-reflex's search() inside the
# search (the step records them), every hit is such a document, the
# passages shown are the hits, and the result is `check --author
# --pub-type`'s.
META='"author":"author 3","publication_type":"review"'
expect "a check with author and publication-type filters is 202" 202 \
    "${A[@]}" "$U/v1/check" -d "$(body react-reflex | sed "s/}\$/,$META}/")"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/meta.sse"
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/meta.run"
"$MT" check --llm "$SPEC" --db "$TMP/db" --json --author "author 3" \
    --pub-type review "$TMP/note.txt" >"$TMP/meta.cli" 2>"$TMP/meta.err"
if python3 - "$TMP" "$TMP/meta.sse" "$TMP/meta.run" "$TMP/meta.cli" \
    "$TMP/react-reflex.cli" "$TMP/c.jsonl" <<'PY'; then
import json, sys
sys.path.insert(0, sys.argv[1])
from searched import searched
search = searched(*sys.argv[2:6])
docs = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[6])}
for d in search:
    assert d["meta"] == {"authors": "author 3", "publication_types": "review"}, d
    for h in d["hits"]:
        assert "Author 3" in docs[h]["authors"], (h, docs[h]["authors"])
        assert docs[h]["publication_types"] == ["Review"], h
PY
    ok "check filters: every search hit has the author and type asked for, as check --author --pub-type"
else not_ok "check with metadata filters" "$(head -c 600 "$TMP/meta.sse") $(cat "$TMP/meta.err")"; fi
expect "a non-string author filter is 400" 400 "${A[@]}" "$U/v1/check" \
    -d '{"note":"x.","author":7}'

# ==== Search settings: source, years, depths and hybrid weights ====
# A store of two sources with use-lite vectors. Each setting reaches
# MedReAct's searches (the step records it, every hit obeys it, it changes
# the hits), each step's passages are its hits found again by add_passages
# with the recorded settings, and values out of bounds are 400 naming the
# field.
python3 - "$TMP" <<'PY'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1] + "/c.jsonl")][:60]
with open(sys.argv[1] + "/s1.jsonl", "w") as a, \
        open(sys.argv[1] + "/s2.jsonl", "w") as b:
    for i, d in enumerate(docs):
        (a if i % 2 == 0 else b).write(json.dumps(d) + "\n")
PY
for s in s1:pubmedqa s2:other; do
    "$MT" index --db "$TMP/sdb" --input "$TMP/${s%%:*}.jsonl" \
        --source "${s#*:}" --embedder use-lite --no-progress >/dev/null 2>&1
done
echo 'alice-password' | "$MT" user add --db "$TMP/sdb" alice 2>/dev/null
MAIN_U=$U
MAIN_A=("${A[@]}")
SERVE_DB=$TMP/sdb serve_start srch --llm "$SPEC"
for bad in 'retrieve_k":0:retrieve_k.*1\.\.200' 'retrieve_k":201:retrieve_k.*1\.\.200' \
    'rerank_k":51:rerank_k.*1\.\.50' 'rerank_k":30,"retrieve_k":10:rerank_k.*retrieve_k' \
    'w_lex":2:w_lex.*\[0, 1\]' 'w_sem":-1:w_sem.*\[0, 1\]' \
    'w_lex":0,"w_sem":0:w_lex.*w_sem' 'year_from":100000:year_from' \
    'year_from":2010,"year_to":2000:year_from.*year_to'; do
    v=${bad%:*}
    expect "a check with \"${v%%\"*}\" ${v#*\":} is 400" 400 "${A[@]}" \
        "$U/v1/check" -d "{\"note\":\"x.\",\"$v}"
    grep -q "${bad##*:}" "$TMP/body" && ok "... naming the field" ||
        not_ok "400 names the field" "$(cat "$TMP/body")"
done
expect "GET /v1/limits (search settings)" 200 "${A[@]}" "$U/v1/limits"
if python3 - "$TMP/body" <<'PY'; then
import json, sys
c = json.load(open(sys.argv[1]))["check"]["fields"]
assert c["retrieve_k"]["default"] == 50 and c["retrieve_k"]["max"] == 200, c
assert c["rerank_k"]["default"] == 20 and c["rerank_k"]["max"] == 50, c
assert c["w_lex"]["default"] == 0.7 and c["w_sem"]["default"] == 0.3, c
assert c["year_from"]["max"] == 99999 and c["year_to"]["integer"], c
PY
    ok "/v1/limits lists the check's depths, weights and years"
else not_ok "/v1/limits check search fields" "$(head -c 600 "$TMP/body")"; fi
srun() { # srun NAME EXTRA-JSON: a react-reflex check on sdb, its events in NAME.sse
    expect "a check with $2 is 202" 202 "${A[@]}" "$U/v1/check" \
        -d "$(body react-reflex | sed "s/}\$/,$2}/")"
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/$1.sse"
}
srun sdef '"search_mode":"hybrid"'
srun ssrc '"source":"other"'
srun syear '"year_from":2000,"year_to":2008'
srun sk '"retrieve_k":10,"rerank_k":3'
srun slex '"search_mode":"hybrid","w_lex":1,"w_sem":0'
srun ssem '"search_mode":"hybrid","w_lex":0,"w_sem":1'
cat >"$TMP/ssteps.py" <<'PY'
import json
def ssteps(path):
    out = []
    for block in open(path).read().split("\n\n"):
        lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
        if lines.get("event") == "step":
            d = json.loads(lines["data"])
            if d["step"] == "search":
                assert [p["doc_id"] for p in d["passages"]] == d["hits"], d
                out.append(d)
    assert out, path
    return out
PY
if python3 - "$TMP" <<'PY'; then
import json, sys
sys.path.insert(0, sys.argv[1])
from ssteps import ssteps
t = sys.argv[1]
docs = {}
for f in ("s1", "s2"):
    for l in open(t + "/" + f + ".jsonl"):
        d = json.loads(l)
        docs[d["id"]] = (d, "pubmedqa" if f == "s1" else "other")
dflt = ssteps(t + "/sdef.sse")
assert all(len(d["hits"]) == 20 and d["k"] == 20 and d["retrieve_k"] == 50
           and d["mode"] == "hybrid" for d in dflt), dflt[0]
assert {s for d in dflt for s in d["hit_sources"]} == {"pubmedqa", "other"}
for d in ssteps(t + "/ssrc.sse"):
    assert d["sources"] == ["other"] and set(d["hit_sources"]) == {"other"}, d
    assert all(docs[h][1] == "other" for h in d["hits"]), d
yr = ssteps(t + "/syear.sse")
for d in yr:
    assert d["meta"] == {"year": [2000, 2008]}, d
    assert d["hits"] and all(2000 <= int(docs[h][0]["year"]) <= 2008
                             for h in d["hits"]), d
assert yr[0]["hits"] != dflt[0]["hits"], "the years filtered nothing"
for d in ssteps(t + "/sk.sse"):
    assert len(d["hits"]) == 3 and d["k"] == 3 and d["retrieve_k"] == 10, d
lex, sem = ssteps(t + "/slex.sse"), ssteps(t + "/ssem.sse")
assert lex[0]["query"] == sem[0]["query"] == dflt[0]["query"]
assert (lex[0]["w_lex"], lex[0]["w_sem"]) == (1, 0), lex[0]
assert (sem[0]["w_lex"], sem[0]["w_sem"]) == (0, 1), sem[0]
assert (dflt[0]["w_lex"], dflt[0]["w_sem"]) == (0.7, 0.3), dflt[0]
assert lex[0]["hits"] != sem[0]["hits"], "the weights changed nothing"
PY
    ok "check source, years, depths and hybrid weights reach every search; passages are found again with them"
else not_ok "check search settings" "$(head -c 800 "$TMP/syear.sse")"; fi
U=$MAIN_U
A=("${MAIN_A[@]}")

# ==== serve --reranker and --llm-choice for checks ====
# The tiny GGUF cross-encoder reranks MedReAct's searches on the server as
# `check --reranker` does; each step's passages are its reranked hits (the
# passage view runs the reranked search again, not the first stage); the
# "model" of a check picks a --llm-choice: the same stub gives the CLI's
# result, a dead one fails the run.
MAIN_U=$U
MAIN_A=("${A[@]}")
if "$MEDTRUST_BUILD/fixtures/make_tiny_gguf" rerank "$TMP/rr.gguf" \
    third_party/llama.cpp/models >/dev/null 2>&1; then
    serve_start rr --llm "openai:http://127.0.0.1:9/v1#none" \
        --reranker "gguf:$TMP/rr.gguf" --llm-choice "alt=$SPEC" \
        --llm-choice "dead=openai:http://127.0.0.1:9/v1#none"
    expect "a check on model alt is 202" 202 "${A[@]}" "$U/v1/check" \
        -d "$(body react-reflex | sed 's/}$/,"model":"alt"}/')"
    grep -q '"model":"alt"' "$TMP/body" && ok "... naming the model" ||
        not_ok "202 names the model" "$(cat "$TMP/body")"
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/rr.sse"
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/rr.run"
    "$MT" check --llm "$SPEC" --db "$TMP/db" --json \
        --reranker "gguf:$TMP/rr.gguf" "$TMP/note.txt" >"$TMP/rr.cli" 2>"$TMP/rr.err"
    if python3 - "$TMP" "$TMP/rr.sse" "$TMP/rr.run" "$TMP/rr.cli" \
        "$TMP/react-reflex.cli" <<'PY'; then
import sys
sys.path.insert(0, sys.argv[1])
from searched import searched
assert all(d["reranked"] for d in searched(*sys.argv[2:6]))
PY
        ok "serve --reranker reranks a check's searches as check --reranker; passages are the reranked hits"
    else not_ok "serve --reranker" "$(head -c 600 "$TMP/rr.sse") $(cat "$TMP/rr.err")"; fi
    expect "a check on model dead is 202" 202 "${A[@]}" "$U/v1/check" \
        -d '{"note":"He is given aspirin.","strategy":"single","model":"dead"}'
    RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/dead.run"
    grep -q '"status":"failed"' "$TMP/dead.run" &&
        ok "a check on model dead goes to its endpoint and fails" ||
        not_ok "model dead" "$(head -c 400 "$TMP/dead.run")"
    expect "a check on a model the server lacks is 400" 400 "${A[@]}" \
        "$U/v1/check" -d '{"note":"x.","model":"nope"}'
    expect "GET /v1/models" 200 "${A[@]}" "$U/v1/models"
    grep -q '"reranker":true' "$TMP/body" && grep -q '"runs_jobs":true' "$TMP/body" &&
        ok "/v1/models says a reranker is on and this server runs jobs" ||
        not_ok "/v1/models reranker" "$(cat "$TMP/body")"
else
    not_ok "tiny GGUF reranker made" "make_tiny_gguf rerank failed"
fi
U=$MAIN_U
A=("${MAIN_A[@]}")

# ==== Cancelling a running check ====
# The stub holds every call while $TMP/hold exists (agent_stub
# --hold-while), and lets one through for each byte the test adds: the
# check is stepped one model call at a time until its first step, so the
# cancel lands while it still has calls to make however loaded the
# machine is (at load 19 a free-running check finished before its first
# step was seen). It stops before its next model call: at most the call
# in flight is answered after the cancel, and the run ends "cancelled"
# with fewer steps than a full run.
: >"$TMP/hold"
calls0=$(wc -l <"$TMP/main.log")
expect "check react-reflex for cancelling is 202" 202 "${A[@]}" "$U/v1/check" \
    -d "$(body react-reflex)"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >"$TMP/cancel.sse" &
spid=$!
step_to_first_step "$TMP/cancel.sse" "$TMP/main.log" "$TMP/hold" "$calls0"
calls=$(wc -l <"$TMP/main.log")
expect "POST /v1/runs/ID/cancel is 202" 202 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/cancel"
rm -f "$TMP/hold"
wait $spid
after=$(wc -l <"$TMP/main.log")
[ "$after" -le $((calls + 2)) ] && # the call in flight, the one held
    ok "... no model call starts after the cancel ($calls, then $after)" ||
    not_ok "calls after cancel" "$calls before, $after after"
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/cancel.run"
if python3 - "$TMP/cancel.run" "$TMP/cancel.sse" "$TMP/react-reflex.sse" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and "cancelled" in r["error"], r
n = lambda p: open(p).read().count("event: step")
assert 0 < n(sys.argv[2]) < n(sys.argv[3]), (n(sys.argv[2]), n(sys.argv[3]))
PY
    ok "a cancelled check stops early and its run says cancelled"
else not_ok "cancel a check" "$(head -c 300 "$TMP/cancel.run")"; fi
expect "cancelling a finished run is 409" 409 "${A[@]}" -X POST \
    "$U/v1/runs/$RUN/cancel"
expect "cancelling an unknown run is 404" 404 "${A[@]}" -X POST \
    "$U/v1/runs/999999/cancel"

# ==== One LLM job at a time: the rest wait, searches do not ====
# No timing thresholds: the checks prove an order of events. The stub
# answers each call after 2 s, so three single-call checks keep the queue
# busy for about 6 s; a search that answers while the health endpoint
# still shows queued checks did not wait behind them.
job_cap_check check /v1/check "$(body single)" "aspirin chest pain"
