#!/usr/bin/env bash
# Integration: POST /v1/ask on `medtrust serve --llm` (the role-aware agent
# stub's qa_answer and qa_judge roles): a queued run whose result is the
# CLI's `ask --json` object for the same question and store (timing aside),
# each claim streamed as a step once verified, a cited id that was never
# retrieved coming through as NO_REFERENCE, filters (k, source, years)
# passed on, the run and an audit line holding the question's hash (never
# its text), 400 for bad input, 503 with what to set when no model is
# configured, --nli choosing the verifier, and the LLM job cap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb serve ask
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
export MEDTRUST_LLM_TIMEOUT=20
. "$(dirname "$0")/api_lib.sh"
Q="Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?"

# body QUESTION [JSON-EXTRA]: the request body.
body() {
    python3 -c 'import json,sys; o=json.loads(sys.argv[2] or "{}"); o["question"]=sys.argv[1]; print(json.dumps(o))' "$1" "${2:-}"
}
# ask_run NAME QUESTION [JSON-EXTRA]: asks, follows the events to the end
# and reads the run: $TMP/NAME.sse and $TMP/NAME.run.
ask_run() {
    local name=$1 run
    code "${A[@]}" "$U/v1/ask" -d "$(body "$2" "${3:-}")" >"$TMP/$name.code"
    cp "$TMP/body" "$TMP/$name.202"
    run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("run_id", 0))' "$TMP/body")
    curl -sN "${A[@]}" "$U/v1/runs/$run/events" >"$TMP/$name.sse"
    curl -s "${A[@]}" "$U/v1/runs/$run" >"$TMP/$name.run"
}
# same NAME CLI-JSON: the API run NAME equals the CLI's object, its steps
# are the result's claims in order; writes the events' kinds to NAME.kinds.
same() {
    py "$TMP/$1.sse" "$2" "$TMP/$1.run" "$TMP/$1.code" >"$TMP/$1.kinds" <<'PY'
import json, sys
sse, cli, run, code = sys.argv[1:]
assert open(code).read().strip() == "202", open(code).read()
events = []
for block in open(sse).read().split("\n\n"):
    lines = dict(l.split(": ", 1) for l in block.splitlines() if ": " in l)
    if "event" in lines:
        events.append((lines["event"], json.loads(lines["data"])))
kinds = [e for e, _ in events]
assert kinds[-1] == "done" and events[-1][1]["status"] == "done", events[-1]
api = events[-1][1]["result"]
want = json.load(open(cli))
# The stub counts a request's bytes as its prompt tokens, and the server's
# answer call streams ("stream" members the CLI's call has not).
for r in (api, want):
    r["usage"].pop("seconds")
    r["usage"].pop("prompt_tokens")
if api != want:
    import difflib
    a = json.dumps(api, indent=1, sort_keys=True).splitlines()
    b = json.dumps(want, indent=1, sort_keys=True).splitlines()
    print("\n".join(difflib.unified_diff(a, b, lineterm="")), file=sys.stderr)
assert api == want
steps = [d for e, d in events if e == "step"]
# the answer streams as "token" events before any claim is verified
toks = [d["text"] for e, d in events if e == "token"]
assert "".join(toks) == (api["answer"] or ""), (toks[:5], api["answer"])
assert not steps or not api["answer"] or \
    kinds.index("token") < kinds.index("step"), kinds
assert [s["step"] for s in steps] == ["claim"] * len(api["claims"])
assert [s["claim"] for s in steps] == api["claims"], steps
assert all(s["index"] == i and s["of"] == len(steps)
           for i, s in enumerate(steps))
r = json.load(open(run))
assert r["kind"] == "ask" and r["status"] == "done", r
r["result"]["usage"].pop("seconds")
r["result"]["usage"].pop("prompt_tokens")
assert r["result"] == api
print(" ".join(k for k in kinds if k != "token"))
PY
}

# ==== Without a model ====
serve_start nollm
no_model_check ask /v1/ask "$(body "$Q")"
expect "models say ask needs a model" 200 "${A[@]}" "$U/v1/models"
grep -q '"ask":false' "$TMP/body" && ok "/v1/models: ask is not ready" ||
    not_ok "/v1/models ask readiness" "$(cat "$TMP/body")"

# ==== With the stub ====
stub_start main --delay 300 --hold-while "$TMP/hold"
# Two more models a question may choose: the same stub, and a dead port.
serve_start main --llm "$SPEC" --data-dir "$TMP/logs" \
    --llm-choice "alt=$SPEC" --llm-choice "dead=openai:http://127.0.0.1:9/v1#none"
expect "an empty question is 400" 400 "${A[@]}" "$U/v1/ask" -d '{"question":""}'
expect "a blank question is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d '{"question":"  \n\t "}'
expect "a body without a question is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d '{"k":3}'
expect "a question over 8 KiB is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$(head -c 9000 /dev/zero | tr '\0' 'a')")"
expect "k out of range is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"k":0}')"
expect "year_from after year_to is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"year_from":2015,"year_to":2010}')"
expect "malformed JSON is 400" 400 "${A[@]}" "$U/v1/ask" -d '{"question":'
expect "w_lex out of range is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"w_lex":2}')"
grep -q 'w_lex.*\[0, 1\]' "$TMP/body" &&
    ok "... naming the field and its bounds" || not_ok "400" "$(cat "$TMP/body")"
expect "an ask needs a session" 401 "$U/v1/ask" -d "$(body "$Q")"

ask_run one "$Q"
"$MT" ask --db "$TMP/db" --llm "$SPEC" --json "$Q" >"$TMP/one.cli" 2>"$TMP/err"
if same one "$TMP/one.cli"; then
    ok "ask: claims stream as steps and the result is the CLI's --json ($(cat "$TMP/one.kinds" | tr ' ' '\n' | sort | uniq -c | tr -s ' \n' ' '))"
else
    not_ok "ask over HTTP equals ask --json" "$(head -c 600 "$TMP/one.sse")" "$(tail -2 "$TMP/err")"
fi
if py "$TMP/one.run" "$Q" <<'PY'; then
import json, sys, hashlib
r = json.load(open(sys.argv[1]))
assert r["input_sha256"] == hashlib.sha256(sys.argv[2].encode()).hexdigest()
res = r["result"]
docs = {d["doc_id"] for d in res["documents"]}
vs = [v for c in res["claims"] for v in c["verdicts"]]
fake = [v for v in vs if v["doc_id"] == "99999999"]
assert "99999999" not in docs and fake, vs
assert all(v["label"] == "NO_REFERENCE" and v["evidence_sentence"] is None
           for v in fake), fake
assert all(v["label"] != "NO_REFERENCE" for v in vs if v["doc_id"] in docs)
assert any(c["label"] == "SUPPORT" for c in res["claims"]), res["claims"]
PY
    ok "a stub answer citing an id never retrieved gives NO_REFERENCE"
else
    not_ok "NO_REFERENCE over HTTP" "$(head -c 600 "$TMP/one.run")"
fi
if grep -q '"action":"ask"' "$TMP/logs/audit.log" &&
    grep -q "\"question_sha256\":\"$(printf '%s' "$Q" | sha256sum | cut -d' ' -f1)\"" \
        "$TMP/logs/audit.log" &&
    ! grep -qi 'mitochondria' "$TMP/logs/"*.log; then
    ok "the audit log records the question's hash, not its text"
else not_ok "audit log" "$(tail -2 "$TMP/logs/audit.log")"; fi

# Filters are the CLI's: -k, --source, --year-from/--year-to.
ask_run filt "$Q" '{"k":3,"source":"pubmedqa","year_from":2005,"year_to":2013,"w_lex":0.4,"w_sem":0.6}'
"$MT" ask --db "$TMP/db" --llm "$SPEC" -k 3 --source pubmedqa \
    --year-from 2005 --year-to 2013 --w-lex 0.4 --w-sem 0.6 --json "$Q" \
    >"$TMP/filt.cli" 2>"$TMP/err"
if same filt "$TMP/filt.cli" >/dev/null &&
    py "$TMP/filt.cli" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert 0 < len(r["documents"]) <= 3, r["documents"]
PY
    ok "k, weights, source and year filters give the CLI's result"
else
    not_ok "ask filters" "$(head -c 400 "$TMP/filt.sse")" "$(head -c 300 "$TMP/filt.cli")"
fi
# Author, journal and publication type (inside the search) and the mode:
# the CLI's result for the same filters, every document matching them.
ask_run meta "$Q" '{"k":4,"author":"author 2","journal":"journal 1","publication_type":"review","search_mode":"bm25"}'
"$MT" ask --db "$TMP/db" --llm "$SPEC" -k 4 --author "author 2" \
    --journal "journal 1" --pub-type review --search-mode bm25 --json "$Q" \
    >"$TMP/meta.cli" 2>"$TMP/err"
if same meta "$TMP/meta.cli" >/dev/null &&
    py "$TMP/meta.cli" "$TMP/c.jsonl" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
docs = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[2])}
assert 0 < len(r["documents"]) <= 4 and r["search"] == "bm25", r
for d in r["documents"]:
    m = docs[d["doc_id"]]
    assert "Author 2" in m["authors"] and m["journal"] == "Journal 1 of Medicine"
    assert m["publication_types"] == ["Review"], m
PY
    ok "author, journal, publication type and search mode give the CLI's result"
else
    not_ok "ask metadata filters" "$(head -c 400 "$TMP/meta.sse")" "$(head -c 300 "$TMP/meta.cli")" "$(tail -2 "$TMP/err")"
fi
expect "a search mode the index cannot serve is 400" 400 "${A[@]}" \
    "$U/v1/ask" -d "$(body "$Q" '{"search_mode":"hybrid"}')"
grep -q "needs the index's vectors" "$TMP/body" &&
    ok "... saying it needs vectors" || not_ok "mode 400" "$(cat "$TMP/body")"
expect "an unknown search mode is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"search_mode":"fuzzy"}')"
expect "a journal filter over 255 bytes is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" "{\"journal\":\"$(head -c 256 /dev/zero | tr '\0' j)\"}")"
grep -q 'journal.. must be a string of at most 255 bytes' "$TMP/body" &&
    ok "... naming the member and its limit" || not_ok "filter 400" "$(cat "$TMP/body")"
expect "a non-string author is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"author":7}')"
expect "search with an author filter" 200 "${A[@]}" "$U/v1/search" \
    -d '{"query":"cell death","k":5,"author":"AUTHOR 3","group":"chunks"}'
if py "$TMP/body" "$TMP/c.jsonl" <<'PY'; then
import json, sys
hits = json.load(open(sys.argv[1]))["hits"]
docs = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[2])}
assert len(hits) == 5, hits
assert all("Author 3" in docs[h["doc_id"]]["authors"] for h in hits)
def url(d):
    u = d.get("url") or ""
    if u.startswith(("http://", "https://")):
        return u
    i = d["id"]
    return "https://pubmed.ncbi.nlm.nih.gov/%s/" % i if i.isdigit() else None
assert all(h["url"] == url(docs[h["doc_id"]]) for h in hits), hits
PY
    ok "/v1/search: every hit has the author asked for, and its url"
else not_ok "/v1/search author" "$(head -c 400 "$TMP/body")"; fi
expect "limits" 200 "${A[@]}" "$U/v1/limits"
if py "$TMP/body" <<'PY'; then
import json, sys
l = json.load(open(sys.argv[1]))
assert l["models"] == ["alt", "dead"], l["models"]
assert l["ask"]["modes"] == ["bm25"] and l["ask"]["filter_bytes"] == 255, l
assert l["search"]["filter_bytes"] == 255
PY
    ok "/v1/limits: the models to choose, the modes the index serves, the filter limit"
else not_ok "/v1/limits filters" "$(head -c 400 "$TMP/body")"; fi

# "model" picks one of them: the same stub gives the CLI's result, the
# dead one fails the run with a model error; an unknown name is 400.
ask_run alt "$Q" '{"model":"alt"}'
same alt "$TMP/one.cli" >/dev/null &&
    ok "model alt (the same stub) gives the CLI's result" ||
    not_ok "model alt" "$(head -c 400 "$TMP/alt.run")"
ask_run dead "$Q" '{"model":"dead"}'
if py "$TMP/dead.run" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and r["error"], r
PY
    ok "model dead goes to its own endpoint: the run fails, saying why"
else not_ok "model dead" "$(head -c 400 "$TMP/dead.run")"; fi
expect "a model the server does not have is 400" 400 "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"model":"nope"}')"
grep -q "GET /v1/limits lists them" "$TMP/body" && ok "... saying where models are listed" ||
    not_ok "model 400" "$(cat "$TMP/body")"

if [ "$(code "${A[@]}" "$U/v1/ask" \
    -d "$(body "$Q" '{"source":"no-such-source"}')")" = 400 ] &&
    grep -q "no source named 'no-such-source'" "$TMP/body" &&
    grep -q "/v1/sources" "$TMP/body"; then
    ok "an unknown source is 400 up front, naming it and where sources are listed"
else not_ok "unknown source" "$(head -c 400 "$TMP/body")"; fi

# A cancel while the ask's answer call is in flight: the stub holds every
# call while $TMP/hold exists, so the cancel lands before the answer comes
# back however loaded the machine is (a run cancelled before it starts is
# cancelled too). The ask stops before its next model call: no claim is
# judged, and the run says cancelled.
: >"$TMP/hold"
judged=$(grep -c "qa_judge" "$TMP/main.log")
code "${A[@]}" "$U/v1/ask" -d "$(body "$Q")" >/dev/null
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
ccode=$(code "${A[@]}" -X POST "$U/v1/runs/$RUN/cancel")
rm -f "$TMP/hold"
curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/acancel.run"
if [ "$ccode" = 202 ] && [ "$(grep -c "qa_judge" "$TMP/main.log")" = "$judged" ] &&
    py "$TMP/acancel.run" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and "cancelled" in r["error"], r
assert r["result"] is None
PY
    ok "a cancelled ask stops before its next model call and its run says cancelled"
else not_ok "cancel an ask" "code $ccode" "$(head -c 300 "$TMP/acancel.run")"; fi

# ==== --nli: the tiny GGUF classifier verifies, the model only answers ====
if "$MEDTRUST_BUILD/fixtures/make_tiny_gguf" classify "$TMP/cls.gguf" \
    third_party/llama.cpp/models >/dev/null 2>&1; then
    serve_start nli --llm "$SPEC" --nli "gguf:$TMP/cls.gguf"
    ask_run nli "$Q"
    "$MT" ask --db "$TMP/db" --llm "$SPEC" --nli "gguf:$TMP/cls.gguf" \
        --json "$Q" >"$TMP/nli.cli" 2>"$TMP/err"
    if same nli "$TMP/nli.cli" >/dev/null && py "$TMP/nli.cli" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["usage"]["llm_calls"] == 1, r["usage"]
PY
        ok "serve --nli gguf: the classifier verifies, as ask --nli does"
    else
        not_ok "serve --nli" "$(head -c 400 "$TMP/nli.sse")" "$(tail -2 "$TMP/err")"
    fi
fi

# ==== One LLM job at a time: asks queue, searches do not ====
# No timing thresholds: the stub answers each call after 2 s, and a search
# that answers while asks are still queued or running did not wait for
# them.
job_cap_check ask /v1/ask "$(body "$Q")" "lace plant"
