#!/usr/bin/env bash
# Integration: `medtrust verify` end to end with the scripted loopback judge
# (tests/fixtures/script_server.c, rules per document and claim) over a
# small store written here: every sentence kept with its byte span; cited
# (PMID, DOI, URL), uncited, unknown-citation and not-a-claim sentences; a
# contradicting document winning over a supporting one; quotes checked
# verbatim (found, stitched, not found) before any model call; a failed
# judge call is a FAILED claim (exit 1), never NO_EVIDENCE; --decompose;
# and a --batch killed with kill -9 and resumed (agent_stub --delay).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb verify
SCRIPT_BIN=$MEDTRUST_BUILD/fixtures/script_server
need "the scripted server" "$SCRIPT_BIN"
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
export MEDTRUST_LLM_TIMEOUT=20

# script_start NAME: starts script_server on $TMP/NAME.script; SPEC.
script_start() {
    local port i
    "$SCRIPT_BIN" "$TMP/$1.script" "$TMP/$1.log" >"$TMP/$1.port" &
    STUB_PIDS+=($!)
    for i in $(seq 50); do
        port=$(head -1 "$TMP/$1.port" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.1
    done
    SPEC="openai:http://127.0.0.1:$port#scripted"
}

cat >"$TMP/docs.jsonl" <<'EOF'
{"id": "1001", "title": "Aspirin after infarction", "text": "Aspirin reduces the risk of recurrent myocardial infarction. Low-dose aspirin is given daily after a heart attack.", "doi": "10.1000/asp.1", "url": "https://example.org/aspirin"}
{"id": "1002", "title": "Aspirin in the elderly", "text": "Aspirin does not reduce the risk of recurrent myocardial infarction in elderly patients. Bleeding rose with aspirin."}
{"id": "1003", "title": "Statins", "text": "Statins lower LDL cholesterol and reduce cardiovascular events."}
{"id": "1004", "title": "Metformin", "text": "Metformin is the first-line drug for type 2 diabetes."}
EOF
"$MT" index --db "$TMP/db" --input "$TMP/docs.jsonl" --no-progress \
    >/dev/null 2>"$TMP/err" || not_ok "index the test corpus" "$(cat "$TMP/err")"

# The judge: one rule per document (its title opens <document>), a failing
# endpoint for metformin claims.
cat >"$TMP/j.script" <<'EOF'
qa_judge if /<claim>\nMetformin/ http 500 {"error":"scripted failure"}
qa_judge if /<claim>\nStatins lower/ {"label":"SUPPORT","confidence":0.95}
qa_judge if /<document>\nAspirin after infarction/ {"label":"SUPPORT","confidence":0.9}
qa_judge if /<document>\nAspirin in the elderly/ {"label":"CONTRADICT","confidence":0.8}
qa_judge {"label":"NO_EVIDENCE","confidence":0.6}
EOF
script_start j
JUDGE=$SPEC

cat >"$TMP/text.txt" <<'EOF'
Background
Does aspirin prevent a second heart attack? Aspirin reduces the risk of recurrent myocardial infarction. Statins lower LDL cholesterol [PMID: 1003]. Vitamin C cures the common cold in adults [PMID: 99999999]. See below.
Low-dose aspirin is given daily after a heart attack (doi:10.1000/asp.1). The trial says "aspirin reduces the risk of recurrent myocardial infarction" (https://example.org/aspirin). It also wrote "aspirin reduces the risk of a heart attack" [1001]. Smith said "aspirin cures every form of cancer quickly" [PMID: 1001].
EOF

"$MT" verify --db "$TMP/db" --llm "$JUDGE" --retries 0 -k 3 --json \
    "$TMP/text.txt" >"$TMP/v.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && py "$TMP/v.json" "$TMP/text.txt" "$TMP/j.log" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], "rb").read()
S = r["sentences"]
# every sentence, in order, its span the bytes of the input
assert len(S) == 10, [s["text"] for s in S]
for s in S:
    a, b = s["span"]
    assert raw[a:b].decode() == s["text"], (s["span"], s["text"])
assert [s["span"][0] for s in S] == sorted(s["span"][0] for s in S)
assert S[0]["text"] == "Background" and S[0]["status"] == "NOT_A_CLAIM"
assert S[1]["text"].endswith("?") and S[1]["status"] == "NOT_A_CLAIM"
assert S[5]["text"] == "See below." and S[5]["status"] == "NOT_A_CLAIM"
assert all(not s["claims"] for s in S if s["status"] == "NOT_A_CLAIM")
# uncited: searched; the contradicting document wins over the supporting
c = S[2]["claims"][0]
assert c["verdict"] == "CONTRADICT", c
labels = {e["doc"]: e["label"] for e in c["evidence"]}
assert labels.get("1001") == "SUPPORT" and labels.get("1002") == "CONTRADICT"
assert c["evidence"][c["decided_by"]]["doc"] == "1002"
assert not any(e["cited"] for e in c["evidence"])
assert c["evidence"][c["decided_by"]]["sentence"].startswith("Aspirin does not")
# cited PMID: judged against that document first, which decides (no search)
c = S[3]["claims"][0]
assert c["text"] == "Statins lower LDL cholesterol.", c["text"]
assert c["verdict"] == "SUPPORT" and c["cites"] == ["1003"]
assert [e["doc"] for e in c["evidence"]] == ["1003"] and c["evidence"][0]["cited"]
# unknown citation: NO_REFERENCE, never judged
c = S[4]["claims"][0]
assert c["verdict"] == "NO_REFERENCE" and c["evidence"][0]["label"] == "NO_REFERENCE"
# DOI and URL of a stored document
assert S[6]["claims"][0]["cites"] == ["10.1000/asp.1"]
assert S[6]["claims"][0]["evidence"][0]["doc"] == "1001"
assert S[6]["claims"][0]["verdict"] == "SUPPORT"
assert S[6]["claims"][0]["evidence"][0]["url"] == "https://example.org/aspirin"
c = S[7]["claims"][0]
assert c["cites"] == ["https://example.org/aspirin"] and c["verdict"] == "SUPPORT"
assert c["quotes"][0]["status"] == "FOUND" and c["quotes"][0]["doc"] == "1001"
# quotes: stitched and invented ones are MISQUOTED before any judge call
c = S[8]["claims"][0]
assert c["verdict"] == "MISQUOTED" and c["quotes"][0]["status"] == "STITCHED", c
c = S[9]["claims"][0]
assert c["verdict"] == "MISQUOTED" and c["quotes"][0]["status"] == "NOT_FOUND", c
assert all(e["label"] == "NO_REFERENCE" for e in c["evidence"]), "none judged"
judged = [json.loads(l) for l in open(sys.argv[3])]
claims = " ".join(m["content"] for j in judged for m in j["request"]["messages"])
assert "cures every form" not in claims and "Vitamin C" not in claims
# the summary counts the claims per verdict, NOT_A_CLAIM the sentences
sm = r["summary"]
assert sm["NOT_A_CLAIM"] == 3 and sm["MISQUOTED"] == 2 and sm["NO_REFERENCE"] == 1
assert sm["CONTRADICT"] == 1 and sm["SUPPORT"] == 3, sm
assert sum(sm.values()) == 10, sm
PY
    ok "verify --json: every sentence with its span; cited, uncited, unknown, quotes, not-a-claim"
else
    not_ok "verify --json (rc $rc)" "$(head -c 900 "$TMP/v.json")" "$(tail -3 "$TMP/err")"
fi

# ---- the human form marks each sentence ----
"$MT" verify --db "$TMP/db" --llm "$JUDGE" --retries 0 -k 3 \
    "$TMP/text.txt" >"$TMP/v.txt" 2>"$TMP/err"
if grep -q '^\[NOT_A_CLAIM\] Background' "$TMP/v.txt" &&
    grep -q '^\[CONTRADICT\] Aspirin reduces the risk' "$TMP/v.txt" &&
    grep -q '\* 1002: CONTRADICT 0.80' "$TMP/v.txt" &&
    grep -q '99999999 (cited): NO_REFERENCE' "$TMP/v.txt" &&
    grep -q 'quote STITCHED' "$TMP/v.txt" && grep -q '^Summary' "$TMP/v.txt"; then
    ok "verify text form marks each sentence and its evidence"
else
    not_ok "verify text form" "$(head -30 "$TMP/v.txt")"
fi

# ---- a failed judge call fails its claim, visibly, exit 1 ----
echo "Metformin is the first-line drug for type 2 diabetes." |
    "$MT" verify --db "$TMP/db" --llm "$JUDGE" --retries 0 -k 2 --json - \
        >"$TMP/f.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "FAILED" "$TMP/err" && py "$TMP/f.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
c = r["sentences"][0]["claims"][0]
assert c["verdict"] == "FAILED" and c["error"], c
assert r["summary"]["FAILED"] == 1 and r["summary"]["NO_EVIDENCE"] == 0
assert any(e["label"] == "FAILED" and e.get("error") for e in c["evidence"])
PY
    ok "verify: a failed judge call is a FAILED claim with its reason, exit 1"
else
    not_ok "verify failed judge (rc $rc)" "$(head -c 600 "$TMP/f.json")" "$(tail -2 "$TMP/err")"
fi

# ---- thresholds: a weak contradiction does not decide ----
"$MT" verify --db "$TMP/db" --llm "$JUDGE" --retries 0 -k 3 --json \
    --contradict-min 0.85 \
    "Aspirin reduces the risk of recurrent myocardial infarction." \
    >"$TMP/t.json" 2>"$TMP/err"
if py "$TMP/t.json" <<'PY'; then
import json, sys
c = json.load(open(sys.argv[1]))["sentences"][0]["claims"][0]
assert c["verdict"] == "SUPPORT", c
assert c["evidence"][c["decided_by"]]["doc"] == "1001"
PY
    ok "verify --contradict-min 0.85: a 0.8 contradiction no longer decides"
else
    not_ok "verify thresholds" "$(head -c 600 "$TMP/t.json")" "$(tail -2 "$TMP/err")"
fi

# ---- --decompose: atomic claims, each tied to its sentence ----
cat >"$TMP/d.script" <<'EOF'
verify_decompose {"claims":["Statins lower LDL cholesterol.","Statins cure diabetes."]}
qa_judge if /<claim>\nStatins cure/ {"label":"NO_EVIDENCE","confidence":0.7}
qa_judge if /<document>\nStatins/ {"label":"SUPPORT","confidence":0.9}
qa_judge {"label":"NO_EVIDENCE","confidence":0.6}
EOF
script_start d
"$MT" verify --db "$TMP/db" --llm "$SPEC" --retries 0 -k 2 --decompose --json \
    "Statins lower LDL cholesterol and cure diabetes." >"$TMP/d.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && py "$TMP/d.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sentences"]
assert len(s) == 1 and len(s[0]["claims"]) == 2, s
assert [c["verdict"] for c in s[0]["claims"]] == ["SUPPORT", "NO_EVIDENCE"]
assert s[0]["status"] == "NO_EVIDENCE"  # the sentence is as weak as its weakest claim
PY
    ok "verify --decompose: two atomic claims of one sentence, judged each"
else
    not_ok "verify --decompose (rc $rc)" "$(head -c 600 "$TMP/d.json")" "$(tail -2 "$TMP/err")"
fi

# ---- bad input says what to do ----
if ! "$MT" verify --db "$TMP/db" --llm "$JUDGE" "   " >/dev/null 2>"$TMP/err" &&
    grep -q "empty" "$TMP/err" &&
    ! "$MT" verify --llm "$JUDGE" "Aspirin helps." >/dev/null 2>"$TMP/err2" &&
    grep -q -- "--db" "$TMP/err2"; then
    ok "verify refuses an empty text and a missing --db, saying why"
else
    not_ok "verify bad input" "$(cat "$TMP/err")" "$(cat "$TMP/err2")"
fi

# ---- batch: kill -9 mid-run, then --resume ----
for i in $(seq 1 10); do
    echo "{\"id\": \"t$i\", \"text\": \"Statins lower LDL cholesterol in trial $i.\"}"
done >"$TMP/b.jsonl"
stub_start slow --delay 300
"$MT" verify --db "$TMP/db" --llm "$SPEC" -k 1 --batch "$TMP/b.jsonl" \
    --out "$TMP/r.jsonl" -J 2 --no-progress >/dev/null 2>&1 &
pid=$!
for i in $(seq 200); do
    [ -f "$TMP/r.jsonl.journal" ] &&
        [ "$(wc -l <"$TMP/r.jsonl.journal")" -ge 3 ] && break
    sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
done1=$(wc -l <"$TMP/r.jsonl.journal")
stub_start fast
"$MT" verify --db "$TMP/db" --llm "$SPEC" -k 1 --batch "$TMP/b.jsonl" \
    --out "$TMP/r.jsonl" -J 3 --resume --no-progress >/dev/null 2>"$TMP/err"
rc=$?
calls2=$(grep -c 'qa_judge' "$TMP/fast.log")
if [ $rc -eq 0 ] && [ ! -e "$TMP/r.jsonl.tmp" ] &&
    py "$TMP/r.jsonl" "$TMP/b.jsonl" "$done1" "$calls2" <<'PY'; then
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
ids = [json.loads(l)["id"] for l in open(sys.argv[2])]
done1, calls2 = int(sys.argv[3]), int(sys.argv[4])
assert [o["id"] for o in out] == ids
assert all(len(o["sentences"]) == 1 and "summary" in o for o in out)
assert 3 <= done1 < 10 and calls2 == 10 - done1, (done1, calls2)
PY
    ok "verify --batch resumes after kill -9: $done1 kept, $calls2 verified again"
else
    not_ok "verify --batch resume" "rc=$rc done1=$done1 calls2=$calls2" "$(tail -3 "$TMP/err")"
fi

# ---- qa-eval --verify: a HealthVer/SciFact-shaped CSV, numbers by hand ----
cat >"$TMP/e.script" <<'EOF'
qa_judge if /<claim>\nStatins cause/ http 500 {"error":"scripted failure"}
qa_judge if /<claim>\nStatins lower/ {"label":"SUPPORT","confidence":0.9}
qa_judge if /<claim>\nMetformin/ {"label":"CONTRADICT","confidence":0.9}
qa_judge if /<claim>\nBleeding/ {"label":"CONTRADICT","confidence":0.9}
qa_judge if /<claim>\nLow-dose/ {"label":"SUPPORT","confidence":0.9}
qa_judge {"label":"NO_EVIDENCE","confidence":0.6}
EOF
script_start e
# gold / predicted (the script): 1 S/S, 2 S/C, 3 C/C, 4 N/N (nothing
# found), 5 N/S, 6 C/FAILED; row 7's label is none of the three (skipped).
# Evidence: ids 1003, 1002, 1003 and two texts; row 5's text is not in the
# document found, row 4 has none.
cat >"$TMP/claims.csv" <<'EOF'
id,evidence,claim,label,topic_ip
1,1003,Statins lower LDL cholesterol levels,Supports,t
2,Metformin is the first-line drug for type 2 diabetes.,Metformin is the first-line drug for diabetes,SUPPORT,t
3,1002,Bleeding rose with aspirin in trials,Refutes,t
4,,Influenza vaccines prevent all infections,NOT_ENOUGH_INFO,t
5,Statins lower LDL cholesterol,Low-dose aspirin is given daily after a heart attack,Neutral,t
6,1003,Statins cause muscle pain in adults,CONTRADICT,t
7,1003,Statins are popular,maybe,t
EOF
"$MT" qa-eval --verify "$TMP/claims.csv" --db "$TMP/db" --llm "$SPEC" \
    --retries 0 -k 1 --json --no-progress >"$TMP/q.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "1 claim failed" "$TMP/err" && py "$TMP/q.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
near = lambda a, b: abs(a - b) < 5e-5
assert r["claims"] == 6 and r["skipped"] == 1 and r["failed"] == 1, r
assert r["confusion"]["counts"] == [[1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 1, 0]], r
assert near(r["accuracy"], 3 / 6)
# F1 = 2TP / (predicted + gold): S 2/4, C 2/4, N 2/3
assert near(r["f1"]["SUPPORT"], 0.5) and near(r["f1"]["CONTRADICT"], 0.5)
assert near(r["f1"]["NO_EVIDENCE"], 2 / 3)
assert near(r["macro_f1"], (0.5 + 0.5 + 2 / 3) / 3)
# recall@1 over the 5 claims with evidence: rows 1, 2, 3, 6 found, 5 not
assert r["recall_claims"] == 5 and near(r["evidence_recall_at_k"], 4 / 5)
for k in ("accuracy", "macro_f1", "evidence_recall_at_k"):
    ci = r[{"accuracy": "accuracy_ci95", "macro_f1": "macro_f1_ci95",
            "evidence_recall_at_k": "recall_ci95"}[k]]
    assert 0 <= ci[0] <= r[k] <= ci[1] <= 1, (k, ci)
PY
    ok "qa-eval --verify: accuracy, macro-F1, confusion and recall@k as computed by hand"
else
    not_ok "qa-eval --verify (rc $rc)" "$(cat "$TMP/q.json")" "$(tail -2 "$TMP/err")"
fi
"$MT" qa-eval --verify "$TMP/claims.csv" --db "$TMP/db" --llm "$SPEC" \
    --retries 0 --given-evidence --json --no-progress >"$TMP/g.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && py "$TMP/g.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
near = lambda a, b: abs(a - b) < 5e-5
# row 4 has no evidence to judge: skipped with row 7
assert r["claims"] == 5 and r["skipped"] == 2 and r["given_evidence"], r
assert r["confusion"]["counts"] == [[1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 0]], r
assert near(r["accuracy"], 2 / 5) and near(r["macro_f1"], 1 / 3)
assert r["evidence_recall_at_k"] is None
PY
    ok "qa-eval --verify --given-evidence: the gold pairs alone, by hand"
else
    not_ok "qa-eval --given-evidence (rc $rc)" "$(cat "$TMP/g.json")" "$(tail -2 "$TMP/err")"
fi

# ---- check --verify-correction: the correction and the original judged ----
cat >"$TMP/c.script" <<'EOF'
react search statins LDL cholesterol
react final 1 Statins lower LDL cholesterol.
eval scores 5
parser answer 1 Statins lower LDL cholesterol.
single answer 1 Statins lower LDL cholesterol.
qa_judge if /<claim>\nStatins lower/ {"label":"SUPPORT","confidence":0.9}
qa_judge if /<claim>\nStatins raise/ {"label":"CONTRADICT","confidence":0.85}
qa_judge {"label":"NO_EVIDENCE","confidence":0.6}
EOF
script_start c
printf 'A 60-year-old man has high cholesterol. Statins raise LDL cholesterol. He is followed up in clinic.\n' >"$TMP/note.txt"
"$MT" check --db "$TMP/db" --llm "$SPEC" --retries 0 --verify-correction \
    --json "$TMP/note.txt" >"$TMP/c.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && py "$TMP/c.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["error_flag"] == 1 and r["error_sentence_id"] == 1, r
ce = r["correction_evidence"]
assert ce["source"] == "run", ce  # the passages react-reflex retrieved
assert ce["verdict_corrected"] == "SUPPORT" and ce["verdict_original"] == "CONTRADICT"
assert ce["strongest"] is True
docs = [e["doc"] for e in ce["evidence"]]
assert "1003" in docs and len(docs) <= 5, docs
e = ce["evidence"][docs.index("1003")]
assert e["corrected"]["label"] == "SUPPORT" and e["original"]["label"] == "CONTRADICT"
steps = [t for t in r["trace"] if t.get("step") == "correction_evidence"]
assert len(steps) == 1 and steps[0]["verdict_corrected"] == "SUPPORT", steps
PY
    ok "check --verify-correction (react-reflex): the run's passages judge both sentences"
else
    not_ok "check --verify-correction react (rc $rc)" "$(head -c 800 "$TMP/c.json")" "$(tail -3 "$TMP/err")"
fi
"$MT" check --db "$TMP/db" --llm "$SPEC" --retries 0 --strategy single \
    --verify-correction "$TMP/note.txt" >"$TMP/c.txt" 2>"$TMP/err"
"$MT" check --db "$TMP/db" --llm "$SPEC" --retries 0 --strategy single \
    --json "$TMP/note.txt" >"$TMP/c2.json" 2>"$TMP/err2"
if grep -q "evidence (bm25): the correction SUPPORT, the original CONTRADICT (the strongest case)" "$TMP/c.txt" &&
    py "$TMP/c2.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["error_flag"] == 1 and "correction_evidence" not in r
assert not [t for t in r["trace"] if t.get("step") == "correction_evidence"]
PY
    ok "check --strategy single --verify-correction searches; off without a verifier"
else
    not_ok "check single --verify-correction" "$(cat "$TMP/c.txt")" "$(tail -3 "$TMP/err")" "$(head -c 300 "$TMP/c2.json")"
fi

# ---- mediqa --verify-correction: the trace carries it, the submission is unchanged ----
printf 'Text ID,Text\nn1,A 60-year-old man has high cholesterol. Statins raise LDL cholesterol. He is followed up in clinic.\n' >"$TMP/notes.csv"
"$MT" mediqa --data "$TMP/notes.csv" --strategy single --db "$TMP/db" \
    --llm "$SPEC" --retries 0 --verify-correction --out "$TMP/run.txt" \
    --trace "$TMP/trace.jsonl" --no-progress >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$TMP/run.txt")" = "n1 1 1 Statins lower LDL cholesterol." ] &&
    py "$TMP/trace.jsonl" <<'PY'; then
import json, sys
t = json.loads(open(sys.argv[1]).readline())
ce = t["correction_evidence"]
assert ce["verdict_corrected"] == "SUPPORT" and ce["verdict_original"] == "CONTRADICT", ce
PY
    ok "mediqa --verify-correction: the trace carries correction_evidence, the submission line is unchanged"
else
    not_ok "mediqa --verify-correction (rc $rc)" "$(cat "$TMP/run.txt")" "$(head -c 400 "$TMP/trace.jsonl")" "$(tail -2 "$TMP/err")"
fi
