#!/usr/bin/env bash
# Integration: `medtrust ask` and `qa-eval` against the role-aware loopback
# stub (qa_answer, qa_judge roles) over a BM25 store built now from the
# PubMedQA corpus in $MEDTRUST_DATA, and a hybrid store of a few documents
# written here (use-lite vectors). Covers citations of ids never retrieved
# (NO_REFERENCE), the uncited-sentence merge, the year filter, the tiny
# GGUF classifier as verifier, bad input, a killed --batch resumed, and
# qa-eval metrics (plumbing only: the stub is no model).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb ask
stub_start main
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
[ -f "$MEDTRUST_BUILD/use-lite.mtw" ] &&
    export MEDTRUST_USE_LITE=${MEDTRUST_USE_LITE:-$MEDTRUST_BUILD/use-lite.mtw}
MAIN=$SPEC
Q="Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?"

"$MT" index --db "$TMP/db" --input "$DATA/pubmedqa/corpus.jsonl" \
    --no-progress >/dev/null 2>&1

# ---- one question, JSON ----
"$MT" ask --db "$TMP/db" --llm "$MAIN" --json "$Q" >"$TMP/a.json" 2>"$TMP/err"
if py "$TMP/a.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert {"question", "answer", "claims", "documents", "usage", "notes",
        "search"} <= set(r), set(r)
assert r["search"] == "bm25" and any("BM25" in n for n in r["notes"])
docs = [d["doc_id"] for d in r["documents"]]
assert 0 < len(docs) <= 10 and len(set(docs)) == len(docs)
assert docs[0] == "21645374", docs
for c in r["claims"]:
    assert [v["doc_id"] for v in c["verdicts"]] == c["refs"]
    assert {"text", "refs", "verdicts", "label"} <= set(c)
    for v in c["verdicts"]:
        assert {"doc_id", "label", "score", "evidence_sentence"} <= set(v)
        if v["doc_id"] not in docs:
            assert v["label"] == "NO_REFERENCE", v
        else:
            assert v["label"] in ("SUPPORT", "CONTRADICT", "NO_EVIDENCE")
        if v["label"] in ("SUPPORT", "CONTRADICT"):
            assert v["evidence_sentence"], v
fake = [c for c in r["claims"] if "99999999" in c["refs"]]
assert len(fake) == 1 and fake[0]["label"] != "NO_REFERENCE"
assert r["usage"]["verifications"] == sum(
    1 for c in r["claims"] for v in c["verdicts"]
    if v["label"] != "NO_REFERENCE")
PY
    ok "ask --json: keys, retrieved ids only verified, hallucinated id is NO_REFERENCE"
else
    not_ok "ask --json" "$(head -c 600 "$TMP/a.json")" "$(tail -3 "$TMP/err")"
fi

# The stub writes an uncited sentence of document 2's words between the
# claims on documents 1 and 2: it must join the claim citing document 2.
if py "$TMP/a.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
d2 = r["documents"][1]["doc_id"]
c = [c for c in r["claims"] if c["refs"] == [d2]]
assert len(c) == 1 and c[0]["text"].count(". ") == 1, c
assert not r["claims"][0]["text"].startswith("Here is"), "intro kept out"
assert "More research" not in r["claims"][-1]["text"], "conclusion kept out"
PY
    ok "ask: uncited middle sentence merges into the most similar neighbour"
else
    not_ok "ask merge" "$(head -c 600 "$TMP/a.json")"
fi

"$MT" ask --db "$TMP/db" --llm "$MAIN" "$Q" >"$TMP/a.txt" 2>"$TMP/err"
if grep -q '^Claims:' "$TMP/a.txt" && grep -q '\[SUPPORT\]\|\[NO_EVIDENCE\]' "$TMP/a.txt" &&
    grep -q 'NO_REFERENCE (not among the retrieved documents)' "$TMP/a.txt"; then
    ok "ask text form marks each claim with its verdict"
else
    not_ok "ask text form" "$(head -20 "$TMP/a.txt")"
fi

# ---- year filter (PubMedQA "year" metadata) ----
"$MT" ask --db "$TMP/db" --llm "$MAIN" --year-from 2012 --year-to 2013 \
    --json "$Q" >"$TMP/y.json" 2>"$TMP/err"
if py "$TMP/y.json" "$DATA/pubmedqa/corpus.jsonl" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
year = {}
for l in open(sys.argv[2]):
    o = json.loads(l)
    year[o["id"]] = int(o.get("year") or 0)
assert len(r["documents"]) == 10
assert all(2012 <= year[d["doc_id"]] <= 2013 for d in r["documents"])
PY
    ok "ask --year-from/--year-to keeps only documents of those years"
else
    not_ok "ask year filter" "$(head -c 400 "$TMP/y.json")" "$(tail -3 "$TMP/err")"
fi

if ! "$MT" ask --db "$TMP/db" --llm "$MAIN" --search-mode hybrid "$Q" \
    >/dev/null 2>"$TMP/err" && grep -q "needs the index's vectors" "$TMP/err"; then
    ok "ask --search-mode hybrid without vectors fails and says why"
else
    not_ok "ask --search-mode hybrid without vectors" "$(cat "$TMP/err")"
fi

# ---- hybrid over a handful of documents written here ----
cat >"$TMP/docs.jsonl" <<'EOF'
{"id": "D1", "title": "Aspirin after myocardial infarction", "text": "Aspirin reduces the risk of recurrent myocardial infarction. Low-dose aspirin is given daily after a heart attack.", "year": 2010, "authors": ["A Ng", "Z Kim"], "journal": "The Lancet", "publication_types": ["Randomized Controlled Trial"]}
{"id": "D2", "title": "Statins and cholesterol", "text": "Statins lower LDL cholesterol and reduce cardiovascular events. Muscle pain is a common side effect of statins.", "year": 2015, "authors": ["B Ng", "Z Kim"], "journal": "BMJ", "publication_types": ["Review"]}
{"id": "D3", "title": "Metformin in type 2 diabetes", "text": "Metformin is the first-line drug for type 2 diabetes. It lowers hepatic glucose production.", "year": 2018, "authors": ["C Ng", "Z Kim"], "journal": "The Lancet", "publication_types": ["Review"]}
{"id": "D4", "title": "Influenza vaccination", "text": "Annual influenza vaccination reduces hospital admissions among older adults.", "year": 2020, "authors": ["D Roe", "Z Kim"], "journal": "BMJ", "publication_types": ["Randomized Controlled Trial"]}
EOF
if "$MT" index --db "$TMP/hdb" --input "$TMP/docs.jsonl" --embedder use-lite \
    --no-progress >/dev/null 2>"$TMP/err"; then
    "$MT" ask --db "$TMP/hdb" --llm "$MAIN" -k 3 --label "DOC:{id}" --json \
        "Does aspirin prevent another heart attack?" >"$TMP/h.json" 2>"$TMP/err"
    if py "$TMP/h.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["search"] == "hybrid" and not r["notes"], r["notes"]
assert [d["doc_id"] for d in r["documents"]][0] == "D1"
assert len(r["documents"]) == 3
assert "[DOC:D1]" in r["answer"]
c = r["claims"][0]
assert c["refs"] == ["D1"] and c["label"] == "SUPPORT", c
assert "Aspirin reduces" in c["verdicts"][0]["evidence_sentence"]
PY
        ok "ask hybrid (use-lite vectors, 0.7/0.3) with a custom label format"
    else
        not_ok "ask hybrid" "$(head -c 600 "$TMP/h.json")" "$(tail -3 "$TMP/err")"
    fi
    # author, journal and publication type (PubMed's metadata), inside
    # the dense search: only matching documents, as many as there are
    "$MT" ask --db "$TMP/hdb" --llm "$MAIN" -k 3 --search-mode dense \
        --author " ng" --journal lancet --json \
        "Does aspirin prevent another heart attack?" >"$TMP/f.json" 2>"$TMP/err"
    if py "$TMP/f.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["search"] == "dense", r["search"]
assert sorted(d["doc_id"] for d in r["documents"]) == ["D1", "D3"], r
PY
        ok "ask --search-mode dense --author --journal: the matching documents"
    else
        not_ok "ask metadata filters" "$(head -c 600 "$TMP/f.json")" "$(tail -3 "$TMP/err")"
    fi
    "$MT" ask --db "$TMP/hdb" --llm "$MAIN" -k 3 --pub-type "randomized" \
        --search-mode bm25 --json "Does aspirin or the flu vaccine help?" \
        >"$TMP/t.json" 2>"$TMP/err"
    if py "$TMP/t.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["search"] == "bm25", r["search"]
assert sorted(d["doc_id"] for d in r["documents"]) == ["D1", "D4"], r
PY
        ok "ask --pub-type over BM25 on an index that has vectors"
    else
        not_ok "ask --pub-type" "$(head -c 600 "$TMP/t.json")" "$(tail -3 "$TMP/err")"
    fi
else
    not_ok "index with use-lite vectors" "$(tail -3 "$TMP/err")" \
        "use-lite weights missing? (run make bootstrap)"
fi

# ---- the tiny GGUF classifier as verifier ----
if "$MEDTRUST_BUILD/fixtures/make_tiny_gguf" classify "$TMP/cls.gguf" \
    third_party/llama.cpp/models >/dev/null 2>&1; then
    "$MT" ask --db "$TMP/db" --llm "$MAIN" --nli "gguf:$TMP/cls.gguf" \
        --json "$Q" >"$TMP/n.json" 2>"$TMP/err"
    if py "$TMP/n.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
vs = [v for c in r["claims"] for v in c["verdicts"]]
assert r["usage"]["llm_calls"] == 1, r["usage"]   # the answer only
assert any(v["label"] == "NO_REFERENCE" for v in vs)
for v in vs:
    if v["label"] != "NO_REFERENCE":
        assert v["label"] in ("SUPPORT", "CONTRADICT", "NO_EVIDENCE")
        assert 1 / 3 - 1e-6 <= v["score"] <= 1
PY
        ok "ask --nli gguf: classifier labels mapped; hallucinated id not classified"
    else
        not_ok "ask --nli gguf" "$(head -c 600 "$TMP/n.json")" "$(tail -3 "$TMP/err")"
    fi
fi

# ---- bad input and faults ----
"$MT" ask --db "$TMP/db" --llm "$MAIN" "" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q empty "$TMP/err"; then
    ok "ask refuses an empty question (exit 1)"
else
    not_ok "ask empty question" "rc=$rc" "$(cat "$TMP/err")"
fi
big=$(head -c 102400 /dev/zero | tr '\0' 'a')
"$MT" ask --db "$TMP/db" --llm "$MAIN" "$big" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q '102400 bytes' "$TMP/err"; then
    ok "ask refuses 100 KB of question (exit 1, says the limit)"
else
    not_ok "ask 100 KB question" "rc=$rc" "$(cat "$TMP/err")"
fi

# ask_note ARGS... -- NOTE: exit $WANT_RC (0), no claims, a note
# containing NOTE.
ask_note() {
    local name=$1 note=$2
    shift 2
    "$MT" ask --db "$TMP/db" --json "$@" >"$TMP/f.json" 2>"$TMP/err"
    local rc=$?
    if [ $rc -eq "${WANT_RC:-0}" ] && py "$TMP/f.json" "$note" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["claims"] == [], r["claims"]
assert any(sys.argv[2] in n for n in r["notes"]), r["notes"]
PY
        ok "$name"
    else
        not_ok "$name" "rc=$rc" "$(head -c 400 "$TMP/f.json")" "$(tail -2 "$TMP/err")"
    fi
}
ask_note "ask with no hits says so and asks no model" "no document matched" \
    --llm "$MAIN" "zzqxv wwkjq"
stub_start nocite --qa nocite
ask_note "ask: an answer citing nothing is reported, not invented" \
    "cites none" --llm "$SPEC" "$Q"
stub_start empty --qa empty
WANT_RC=1 ask_note "ask: an empty answer is no answer: reported, exit 1" \
    "empty answer" --llm "$SPEC" "$Q"
WANT_RC=1 ask_note "ask: a dead model gives an honest empty result, exit 1" \
    "no answer" --llm "openai:http://127.0.0.1:9#none" --retries 0 "$Q"
stub_start judge --garble qa_judge
"$MT" ask --db "$TMP/db" --llm "$SPEC" --json "$Q" >"$TMP/g.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "never verified" "$TMP/err" &&
    py "$TMP/g.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
vs = [v for c in r["claims"] for v in c["verdicts"]]
assert any(v["label"] == "UNVERIFIED" and v["error"] for v in vs)
assert any("verifier failed" in n for n in r["notes"])
assert all(v["label"] in ("UNVERIFIED", "NO_REFERENCE") for v in vs)
# a claim whose verdict was never given is never SUPPORT or NO_EVIDENCE
assert all(c["label"] in ("UNVERIFIED", "NO_REFERENCE") for c in r["claims"])
assert any(c["label"] == "UNVERIFIED" for c in r["claims"])
PY
    ok "ask: a judge that answers garbage leaves claims UNVERIFIED with the reason, exit 1"
else
    not_ok "ask garbled judge (rc $rc)" "$(head -c 500 "$TMP/g.json")" "$(tail -2 "$TMP/err")"
fi

# ---- batch: kill -9 mid-run, then --resume ----
head -12 "$DATA/pubmedqa/queries-dev.jsonl" >"$TMP/q12.jsonl"
stub_start slow --delay 300
"$MT" ask --db "$TMP/db" --llm "$SPEC" --batch "$TMP/q12.jsonl" \
    --out "$TMP/b.jsonl" -J 2 --no-progress >/dev/null 2>&1 &
pid=$!
for i in $(seq 200); do
    [ -f "$TMP/b.jsonl.journal" ] &&
        [ "$(wc -l <"$TMP/b.jsonl.journal")" -ge 3 ] && break
    sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
done1=$(wc -l <"$TMP/b.jsonl.journal")
calls1=$(grep -c 'qa_answer' "$TMP/slow.log")
stub_start fast
"$MT" ask --db "$TMP/db" --llm "$SPEC" --batch "$TMP/q12.jsonl" \
    --out "$TMP/b.jsonl" -J 4 --resume --no-progress >/dev/null 2>"$TMP/err"
rc=$?
calls2=$(grep -c 'qa_answer' "$TMP/fast.log")
if [ $rc -eq 0 ] && [ ! -e "$TMP/b.jsonl.tmp" ] &&
    py "$TMP/b.jsonl" "$TMP/q12.jsonl" "$done1" "$calls2" <<'PY'; then
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
qs = [json.loads(l)["id"] for l in open(sys.argv[2])]
done1, calls2 = int(sys.argv[3]), int(sys.argv[4])
assert [o["id"] for o in out] == qs
assert all("answer" in o and "claims" in o for o in out)
assert 3 <= done1 < 12 and calls2 == 12 - done1, (done1, calls2)
PY
    ok "ask --batch resumes after kill -9: $done1 kept, $calls2 answered again"
else
    not_ok "ask --batch resume" "rc=$rc done1=$done1 calls1=$calls1 calls2=$calls2" "$(tail -3 "$TMP/err")"
fi

# ---- qa-eval (numbers against the stub are plumbing checks only) ----
if "$MT" qa-eval --help >/dev/null 2>&1; then
    head -6 "$DATA/pubmedqa/queries-dev.jsonl" >"$TMP/q6.jsonl"
    "$MT" qa-eval --db "$TMP/db" --llm "$MAIN" --queries "$TMP/q6.jsonl" \
        --json --no-progress >"$TMP/e.json" 2>"$TMP/err"
    if py "$TMP/e.json" "$TMP/q6.jsonl" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))
gold = [json.loads(l)["answer"] for l in open(sys.argv[2])]
assert m["questions"] == 6 and m["failed"] == 0 and m["verdict_missing"] == 0
# the stub always closes with "Answer: yes"
assert abs(m["answer_accuracy"] - gold.count("yes") / 6) < 1e-3, m
assert 0 < m["citation_precision"] <= 1
assert abs(sum(m["claim_shares"].values()) - 1) < 1e-3
assert 0 < m["hallucinated_share"] < 1
PY
        ok "qa-eval on PubMedQA: accuracy from the closing verdict, citation precision, shares"
    else
        not_ok "qa-eval queries" "$(cat "$TMP/e.json")" "$(tail -3 "$TMP/err")"
    fi
    cat >"$TMP/claims.csv" <<'EOF'
claim,evidence,label
Aspirin reduces recurrent myocardial infarction,Aspirin reduces the risk of recurrent myocardial infarction.,SUPPORT
Aspirin does not reduce infarction,Aspirin reduces the risk of recurrent myocardial infarction.,REFUTES
Statins cure influenza,Annual influenza vaccination reduces hospital admissions.,NEI
Metformin lowers glucose production,Annual influenza vaccination reduces hospital admissions.,SUPPORT
Vaccines,Text,unknown-label
EOF
    "$MT" qa-eval --llm "$MAIN" --claims "$TMP/claims.csv" --json \
        >"$TMP/c.json" 2>"$TMP/err"
    if py "$TMP/c.json" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))
# the stub judge: overlap of 3+ words -> SUPPORT, "not" -> CONTRADICT
assert m["claims"] == 4 and m["skipped"] == 1 and m["failed"] == 0, m
assert abs(m["accuracy"] - 0.75) < 1e-3, m
f1 = m["f1"]
assert abs(f1["SUPPORT"] - 2 / 3) < 1e-3 and f1["CONTRADICT"] == 1, m
assert abs(m["macro_f1"] - (2 / 3 + 1 + 2 / 3) / 3) < 1e-3, m
PY
        ok "qa-eval --claims: verifier accuracy and macro-F1"
    else
        not_ok "qa-eval claims" "$(cat "$TMP/c.json")" "$(tail -3 "$TMP/err")"
    fi
fi
