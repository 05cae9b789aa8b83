#!/usr/bin/env bash
# Integration: `medtrust check` runs each strategy against the role-aware
# loopback stub, on a small English note and on MedErrBench Chinese and
# Arabic notes (read from $MEDTRUST_DATA at run time), honours --prompts,
# survives a model that times out, and refuses bad input cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb check
stub_start main
export MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM

printf 'A 62-year-old man has crushing chest pain.\nECG shows ST elevation in II, III and aVF.\nHe is given aspirin and sent home.\n' >"$TMP/note.txt"
nr() { [ "$1" = react-reflex ] && echo --no-retrieval; } # no corpus here
for s in react-reflex guards single; do
    "$MT" check --llm "$SPEC" --strategy "$s" $(nr "$s") --json "$TMP/note.txt" \
        >"$TMP/$s.json" 2>"$TMP/err"
    if py "$TMP/$s.json" "$s" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
keys = {"error_flag", "error_sentence_id", "error_sentence",
        "corrected_sentence", "corrected_text", "strategy", "usage", "trace"}
assert keys <= set(r), set(r)
assert r["strategy"] == sys.argv[2]
assert r["error_flag"] == 1 and r["error_sentence_id"] == 2, r
assert r["error_sentence"] == "He is given aspirin and sent home."
assert r["corrected_text"].count("(corrected)") == 1
assert r["usage"]["llm_calls"] >= 1 and r["usage"]["prompt_tokens"] > 0
assert any(t.get("step") == "call" for t in r["trace"])
PY
        ok "check --strategy $s finds the stub's error and prints every key"
    else
        not_ok "check --strategy $s" "$(head -c 600 "$TMP/$s.json")" "$(tail -3 "$TMP/err")"
    fi
done

# react-reflex with retrieval: search() reads a BM25 index built now.
"$MT" index --db "$TMP/db" --input "$DATA/pubmedqa/corpus.jsonl" --source pubmedqa \
    --no-progress >/dev/null 2>&1
"$MT" check --llm "$SPEC" --db "$TMP/db" --json "$TMP/note.txt" \
    >"$TMP/db.json" 2>"$TMP/err"
if py "$TMP/db.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
s = [t for t in r["trace"] if t.get("step") == "search"]
assert s and 0 < len(s[0]["hits"]) <= 20, s
assert r["error_flag"] == 1
# each search record carries its hits: id, title, source, text cut to
# 360 bytes, the link (issue 33 §1)
keys = ["doc_id", "title", "source", "text", "cut", "url"]
for t in s:
    p = t["passages"]
    assert [h["doc_id"] for h in p] == t["hits"], t
    assert [h["source"] for h in p] == t["hit_sources"], t
    assert all(list(h) == keys for h in p), p[0]
    assert all(len(h["text"].encode()) <= 360 for h in p), p[0]
    assert all(h["text"] and h["url"] for h in p), p[0]
assert any(h["cut"] for t in s for h in t["passages"]), s[0]
PY
    ok "react-reflex search() injects up to 20 passages from the index; the trace carries the hits"
else
    not_ok "react-reflex with --db" "$(head -c 400 "$TMP/db.json")" "$(tail -3 "$TMP/err")"
fi

# No silent degradation: react-reflex without a corpus is refused, and
# --no-retrieval says so in the trace.
if ! "$MT" check --llm "$SPEC" --json "$TMP/note.txt" >/dev/null 2>"$TMP/err" &&
    grep -q -- "--no-retrieval" "$TMP/err" &&
    py "$TMP/react-reflex.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert any(t.get("step") == "retrieval" and "--no-retrieval" in t["rule"]
           for t in r["trace"]), r["trace"][:2]
PY
    ok "react-reflex without --db is refused; --no-retrieval is named in the trace"
else
    not_ok "react-reflex without a corpus" "$(tail -2 "$TMP/err")"
fi

# --source (repeatable) reaches search(); a source the store lacks is
# refused up front.
"$MT" check --llm "$SPEC" --db "$TMP/db" --source nosuch --json \
    "$TMP/note.txt" >/dev/null 2>"$TMP/err0"
rc0=$?
"$MT" check --llm "$SPEC" --db "$TMP/db" --source pubmedqa --source pubmedqa \
    --json "$TMP/note.txt" >"$TMP/src1.json" 2>"$TMP/err1"
if [ $rc0 -eq 1 ] && grep -q "source nosuch" "$TMP/err0" &&
    py "$TMP/src1.json" <<'PY'; then
import json, sys
s = [t for t in json.load(open(sys.argv[1]))["trace"] if t.get("step") == "search"]
assert s[0]["sources"] == ["pubmedqa", "pubmedqa"] and s[0]["hits"], s[0]
assert len(set(s[0]["hits"])) <= 20
PY
    ok "check --source filters search() by corpus source; unknown ones are refused"
else
    not_ok "check --source (rc $rc0)" "$(tail -2 "$TMP/err0")" "$(tail -2 "$TMP/err1")"
fi

# Two-stage semantic search through the real binary: an index with
# USE-lite vectors truncated to 64 dimensions (index --dims, kept by an
# update without it) searches hybrid by default (the queries truncated to
# match), --search-mode dense and bm25 run as asked, and the trace says
# which ran; --dims must match the index's vectors; dense on an index
# without vectors is refused.
cat >"$TMP/small.jsonl" <<'JS'
{"id":"h1","title":"Heart attack","text":"A myocardial infarction happens when blood flow to part of the heart muscle stops, causing chest pain."}
{"id":"h2","title":"Broken bone","text":"A fracture of the femur needs surgery and months of rehabilitation before walking again."}
{"id":"h3","title":"Flu","text":"Influenza spreads through droplets; fever, cough and body aches last about a week."}
JS
"$MT" index --db "$TMP/vdb" --input "$TMP/small.jsonl" --embedder use-lite \
    --dims 64 --no-progress >/dev/null 2>&1
"$MT" index --db "$TMP/vdb" --no-progress >/dev/null 2>&1 # keeps the 64
for m in auto dense bm25; do
    mo=; [ $m = auto ] || mo="--search-mode $m"
    "$MT" check --llm "$SPEC" --db "$TMP/vdb" $mo --json "$TMP/note.txt" \
        >"$TMP/m-$m.json" 2>"$TMP/m-$m.err"
done
"$MT" check --llm "$SPEC" --db "$TMP/vdb" --dims 7 --json "$TMP/note.txt" \
    >/dev/null 2>"$TMP/d.err"
rcd=$?
"$MT" check --llm "$SPEC" --db "$TMP/vdb" --dims 64 --search-mode dense \
    --json "$TMP/note.txt" >"$TMP/m-64.json" 2>"$TMP/m-64.err" || rcd=9
"$MT" stats --db "$TMP/vdb" --json >"$TMP/vstats.json" 2>/dev/null
"$MT" check --llm "$SPEC" --db "$TMP/db" --search-mode dense --json \
    "$TMP/note.txt" >/dev/null 2>"$TMP/nd.err"
rcn=$?
if [ $rcd -eq 1 ] && grep -q -- "--dims 7 does not match" "$TMP/d.err" &&
    [ $rcn -eq 1 ] && grep -q -- "--search-mode dense needs vectors" "$TMP/nd.err" &&
    py "$TMP/vstats.json" "$TMP/m-auto.json" "$TMP/m-dense.json" \
        "$TMP/m-bm25.json" "$TMP/m-64.json" <<'PY'; then
import json, sys
assert '"dims": 64' in open(sys.argv[1]).read().replace('"dims":64', '"dims": 64')
for path, want in zip(sys.argv[2:], ("hybrid", "dense", "bm25", "dense")):
    s = [t for t in json.load(open(path))["trace"] if t.get("step") == "search"]
    assert s and all(t["mode"] == want for t in s), (path, s[:1])
    if want == "dense":  # every document is a dense neighbour
        assert len(s[0]["hits"]) == 3, s[0]
PY
    ok "check --search-mode: hybrid by default on an index with 64-dim Matryoshka vectors, dense and bm25 as asked, named in the trace; a --dims mismatch and dense without vectors refused"
else
    not_ok "check --search-mode" "$(tail -2 "$TMP/m-auto.err")" "$(tail -2 "$TMP/d.err")" "$(tail -2 "$TMP/nd.err")"
fi

# MedPrompt's kNN few-shot through the binary: --examples picks the
# nearest training notes (use-lite embeddings), nearest first, one of each
# note: t-mi-ok is the note t-mi was made from (t-mi's Corrected Text), so
# only the nearer of the two is an example; and a training note made from
# the checked note is never its example.
cat >"$TMP/train.csv" <<'CSV'
Text ID,Text,Sentences,Error Flag,Error Sentence ID,Corrected Sentence,Reasoning,Corrected Text
t-bone,A fracture of the femur needs surgery.,0 A fracture of the femur needs surgery.,0,-1,NA,,NA
t-mi,A man with crushing chest pain and ST elevation is sent home.,0 A man with crushing chest pain and ST elevation is sent home.,1,0,A man with crushing chest pain and ST elevation is taken for PCI.,A STEMI is never sent home.,A man with crushing chest pain and  ST elevation is taken for PCI.
t-mi-ok,A man with crushing chest pain and ST elevation is taken for PCI.,0 A man with crushing chest pain and ST elevation is taken for PCI.,0,-1,NA,,NA
t-flu,Influenza spreads through droplets.,0 Influenza spreads through droplets.,0,-1,NA,,NA
CSV
"$MT" check --llm "$SPEC" --strategy single --examples "$TMP/train.csv" \
    --embedder use-lite --shots 2 --json "$TMP/note.txt" >"$TMP/k.json" 2>"$TMP/k.err"
printf 'A man with crushing chest pain and ST elevation\nis taken for PCI.\n' >"$TMP/pci.txt"
"$MT" check --llm "$SPEC" --strategy single --examples "$TMP/train.csv" \
    --embedder use-lite --shots 3 --json "$TMP/pci.txt" >"$TMP/kp.json" 2>>"$TMP/k.err"
cp "$TMP/train.csv" "$TMP/medec-validation.csv"
"$MT" check --llm "$SPEC" --strategy single --examples \
    "$TMP/medec-validation.csv" --embedder use-lite "$TMP/note.txt" \
    >/dev/null 2>"$TMP/kv.err"
rck=$?
if [ $rck -eq 1 ] && grep -q "evaluation split" "$TMP/kv.err" &&
    py "$TMP/k.json" "$TMP/kp.json" <<'PY'; then
import json, sys
def shots(path):
    f = [t for t in json.load(open(path))["trace"] if t.get("step") == "few_shot"]
    assert f and f[0]["selection"] == "knn", f
    return f[0]
f = shots(sys.argv[1])
ex = f["examples"]
assert ex[0] in ("t-mi", "t-mi-ok") and len(ex) == 2, f
assert not {"t-mi", "t-mi-ok"} <= set(ex), f
assert f["similarity"][0] >= f["similarity"][1]
p = shots(sys.argv[2])
assert sorted(p["examples"]) == ["t-bone", "t-flu"], p
PY
    ok "check --strategy single --examples: the nearest training notes, nearest first, one of an error/correct pair, none made from the checked note; an evaluation split is refused"
else
    not_ok "single --examples" "$(head -c 400 "$TMP/k.json")" "$(tail -2 "$TMP/k.err")" "$(tail -2 "$TMP/kv.err")"
fi

# Chinese and Arabic MedErrBench notes (the first validation note of each).
for lang in CN ARA; do
    csv="$DATA/mederrbench/validation/reviewed_data_${lang}_validation.csv"
    py "$csv" "$TMP/$lang.txt" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
row = next(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
open(sys.argv[2], "w", encoding="utf-8").write(row["Text"])
PY
    for s in react-reflex guards single; do
        "$MT" check --llm "$SPEC" --strategy "$s" $(nr "$s") --json \
            "$TMP/$lang.txt" >"$TMP/out.json" 2>"$TMP/err"
        if py "$TMP/out.json" "$TMP/$lang.txt" "$lang" <<'PY'; then
import json, sys, re
r = json.load(open(sys.argv[1], encoding="utf-8"))
text = open(sys.argv[2], encoding="utf-8").read()
script = r"[\u4e00-\u9fff]" if sys.argv[3] == "CN" else r"[\u0600-\u06ff]"
assert r["error_flag"] == 1, r
assert r["error_sentence"] and r["error_sentence"] in text
assert re.search(script, r["corrected_sentence"]), r["corrected_sentence"]
assert r["corrected_text"] != text
PY
            ok "check --strategy $s on a MedErrBench $lang note keeps its language"
        else
            not_ok "check --strategy $s on $lang" "$(head -c 400 "$TMP/out.json")" "$(tail -3 "$TMP/err")"
        fi
    done
done

# --prompts: a replaced single.txt is used (its marker makes the stub
# answer as the parser, without the prose and code fence).
mkdir -p "$TMP/prompts"
printf '[agent:parser] custom prompt\n=== user ===\n{{SENTENCES}}\n' \
    >"$TMP/prompts/single.txt"
"$MT" check --llm "$SPEC" --strategy single --prompts "$TMP/prompts" --json \
    "$TMP/note.txt" >"$TMP/p.json" 2>"$TMP/err"
if grep -q '"error_flag":1' "$TMP/p.json" && ! grep -q 'Let me think' "$TMP/p.json"; then
    ok "--prompts DIR replaces a built-in prompt"
else
    not_ok "--prompts DIR" "$(head -c 400 "$TMP/p.json")"
fi

# A model that times out: one repeat, then the documented fallback, shown
# but failed (exit 1): a failed call is no verdict.
stub_start slow --delay 3000
"$MT" check --llm "$SPEC" --strategy single --timeout 0.5 --retries 0 \
    --json "$TMP/note.txt" >"$TMP/t.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "fallback" "$TMP/err" && py "$TMP/t.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["error_flag"] == 0 and r["corrected_sentence"] == "NA"
assert r["usage"]["failed_calls"] == 2 and r["usage"]["fallbacks"] == 1
assert any(t.get("step") == "fallback" for t in r["trace"])
PY
    ok "a timed-out model gets one repeat, then the fallback verdict"
else
    not_ok "timeout fallback (rc $rc)" "$(head -c 400 "$TMP/t.json")"
fi

# Bad input: a clear error and exit status 1, never a crash.
bad() {
    local name=$1 pat=$2
    shift 2
    "$MT" check --llm "$SPEC" --strategy single "$@" >"$TMP/b.out" 2>"$TMP/b.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qi -- "$pat" "$TMP/b.err"; then
        ok "$name"
    else
        not_ok "$name (rc $rc)" "$(tail -3 "$TMP/b.err")"
    fi
}
: >"$TMP/empty.txt"
bad "an empty note is refused" "empty" "$TMP/empty.txt"
head -c 1048576 /dev/zero | tr '\0' 'a' >"$TMP/big.txt"
bad "a 1 MB note is refused with the limit" "limit" "$TMP/big.txt"
head -c 4096 /dev/urandom >"$TMP/bin.txt"
bad "binary garbage is refused as not UTF-8" "UTF-8" "$TMP/bin.txt"
bad "an unknown strategy is refused" "strategy" --strategy nope "$TMP/note.txt"
bad "a missing file is reported" "no-such" "$TMP/no-such.txt"
bad "an unknown role setting is refused" "ROLE one of" \
    --role-temperature bogus=1 "$TMP/note.txt"
bad "a fractional role token limit is refused" "ROLE=N" \
    --role-max-tokens eval=1.5 "$TMP/note.txt"
bad "an unknown --on-exhausted rule is refused" "last-answer" \
    --on-exhausted maybe "$TMP/note.txt"

# The call cache: a rerun with the same note and models costs no calls.
stub_start cache
printf 'A 30-year-old woman has cystitis. She was given nitrofurantoin.\n' \
    >"$TMP/cache-note.txt"
"$MT" check --llm "$SPEC" --strategy guards --cache "$TMP/calls.db" --json \
    "$TMP/cache-note.txt" >"$TMP/c1.json" 2>/dev/null
n1=$(wc -l <"$TMP/cache.log")
"$MT" check --llm "$SPEC" --strategy guards --cache "$TMP/calls.db" --json \
    "$TMP/cache-note.txt" >"$TMP/c2.json" 2>/dev/null
n2=$(wc -l <"$TMP/cache.log")
if [ "$n1" -gt 0 ] && [ "$n1" -eq "$n2" ] &&
    py "$TMP/c1.json" "$TMP/c2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("error_flag", "error_sentence_id", "corrected_sentence"):
    assert a[k] == b[k], k
PY
then
    ok "--cache: the rerun answers the same with no model calls ($n1 calls once)"
else
    not_ok "--cache rerun" "calls $n1 then $n2"
fi

# A gguf model answers under a grammar made from the role's reply schema
# (sentence ids bounded by the note): even a tiny random-weight model then
# writes JSON of the right shape, which without the grammar (--no-grammar)
# it never does.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if "$MEDTRUST_BUILD/fixtures/make_tiny_gguf" chat "$TMP/chat.gguf" \
    "$ROOT/third_party/llama.cpp/models" >/dev/null 2>&1; then
    "$MT" check --llm "gguf:$TMP/chat.gguf" --strategy single --json \
        "$TMP/note.txt" >"$TMP/g.json" 2>"$TMP/g.err"
    "$MT" check --llm "gguf:$TMP/chat.gguf" --strategy single --json \
        --no-grammar --max-tokens 48 "$TMP/note.txt" >"$TMP/ng.json" \
        2>"$TMP/ng.err" # free text is unusable: the check fails, exit 1
    if py "$TMP/g.json" "$TMP/ng.json" <<'PY'; then
import json, sys
def replies(path):
    r = json.load(open(path))
    return [x for t in r["trace"] if t.get("step") == "call"
            for x in t["replies"]]
keys = ["reasoning", "is_error", "sentence_id", "error_sentence",
        "corrected_sentence"]
g = replies(sys.argv[1])
assert g, "no replies"
for x in g:
    o = json.loads(x)
    assert list(o) == keys, list(o)
    assert isinstance(o["is_error"], bool) and isinstance(o["sentence_id"], int)
    assert -1 <= o["sentence_id"] <= 2, o  # the note's ids bound the grammar
def parses(x):
    try:
        return isinstance(json.loads(x), dict)
    except ValueError:
        return False
assert not any(parses(x) for x in replies(sys.argv[2])), "free text parsed"
PY
        ok "gguf replies follow the reply schema's grammar; --no-grammar turns it off"
    else
        not_ok "gguf grammar" "$(tail -3 "$TMP/g.err")"
    fi
fi

# A model that reasons first: its draft (a valid answer saying "correct")
# sits in a <think> block before the answer, or in the message's
# "reasoning" field (vLLM). The answer after it is the verdict, never the
# draft (the first JSON that parsed once won), the reasoning is kept in
# the trace, apart from the replies, and never sent back (MedReAct's
# history holds the answers alone).
for how in think reasoning; do
    stub_start "r_$how" "--$how"
    for s in single guards react-reflex; do
        "$MT" check --llm "$SPEC" --strategy "$s" $(nr "$s") --json \
            "$TMP/note.txt" >"$TMP/r_$how.$s.json" 2>"$TMP/err"
        if ! grep -q REASONING_SENT_BACK "$TMP/r_$how.log" &&
            grep -q '^OK' "$TMP/r_$how.log" &&
            py "$TMP/r_$how.$s.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert r["error_flag"] == 1 and r["error_sentence_id"] == 2, r
calls = [t for t in r["trace"] if t.get("step") == "call"]
assert calls and all("Draft:" in x for t in calls for x in t["reasoning"]), calls[0]
assert not any("Draft:" in x or "<think>" in x for t in calls for x in t["replies"])
PY
            ok "check --strategy $s, a model reasoning in $how: the answer after it decides, the reasoning is in the trace"
        else
            not_ok "reasoning ($how, $s)" "$(head -c 600 "$TMP/r_$how.$s.json")" "$(tail -3 "$TMP/err")"
        fi
    done
done
