#!/usr/bin/env bash
# medtrust score on the real MEDEC validation set and a MedErrBench EN test
# split: submissions generated here from the references (into a temp dir,
# never committed), checked against exact expectations and against the
# real `rouge` package (pltrdy 1.0.1, what the official MEDIQA-CORR 2024
# scorer imports): third_party/rouge-pltrdy (scripts/bootstrap), else
# ../shared/reference/rouge; neither is a failure.
set -u
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY="$ROOT/third_party/venv/bin/python"
ROUGE_DIR="$ROOT/third_party/rouge-pltrdy"
[ -f "$ROUGE_DIR/rouge/rouge.py" ] || ROUGE_DIR="$DATA/../reference"
need "the rouge package, pltrdy 1.0.1 (third_party/rouge-pltrdy)" "$PY" \
    "$ROUGE_DIR/rouge/rouge.py"
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
EN="$DATA/mederrbench/test/reviewed_data_EN_test.csv"

need_verb score

# gen.py MODE CSV OUT: writes a submission built from the reference.
cat >"$TMP/gen.py" <<'EOF'
import csv, sys
mode, ref, out = sys.argv[1:4]
rows = list(csv.DictReader(open(ref, encoding="utf-8-sig")))
with open(out, "w", encoding="utf-8") as f:
    for r in rows:
        if mode == "perfect":
            c = " ".join(r["Corrected Sentence"].split()) or "NA"
            f.write('%s %s %s "%s"\n' % (r["Text ID"], r["Error Flag"],
                                         r["Error Sentence ID"], c))
        else:
            f.write("%s 0 -1 NA\n" % r["Text ID"])
EOF

# expect.py CSV ROUGE_DIR: composite ROUGE-1 and KPCS of the perfect
# submission, by the real package (ahead of rouge-chinese's `rouge`).
cat >"$TMP/expect.py" <<'EOF'
import csv, sys
sys.path.insert(0, sys.argv[2])
import rouge
assert not hasattr(rouge.Rouge, "cut_sent"), rouge.__file__
R = rouge.Rouge()
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8-sig")))
r1 = kp = 0.0
for r in rows:
    g = r["Corrected Sentence"]
    if g in ("", "NA"):
        r1 += 1; kp += 1; continue
    h = " ".join(g.split())
    while h.startswith('"') and len(h) > 1: h = h[1:]
    while h.endswith('"') and len(h) > 1: h = h[:-1]
    s = R.get_scores(h, g)[0]["rouge-1"]["f"]
    r1 += s
    kw = r.get("Important Words")
    if kw is not None:
        kp += (1 if kw in h else 0) * (0.5 + 0.5 * s)
print("%.15f %.15f" % (r1 / len(rows), kp / len(rows)))
EOF

# jq-free JSON checks: field.py FILE EXPR
cat >"$TMP/field.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"d": d}))
EOF
field() { python3 "$TMP/field.py" "$TMP/out.json" "$1"; }

python3 "$TMP/gen.py" perfect "$MEDEC" "$TMP/perfect.txt"
python3 "$TMP/gen.py" noerror "$MEDEC" "$TMP/noerror.txt"
read -r R1 _ < <("$PY" "$TMP/expect.py" "$MEDEC" "$ROUGE_DIR")

# (a) perfect submission
if "$MT" score --ref "$MEDEC" --pred "$TMP/perfect.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field 'd["error_flag_accuracy"] == 1.0 and d["error_sentence_accuracy"] == 1.0')" = True ] &&
    [ "$(field "abs(d['composite']['rouge1'] - $R1) < 1e-9")" = True ] &&
    [ "$(field 'd["composite"]["rouge1"] > 0.997')" = True ]; then
    ok "MEDEC perfect submission: accuracies 1, ROUGE-1 $R1 as the package"
else
    not_ok "MEDEC perfect submission" "$(head -c 600 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi
# Gold corrections ending in whitespace (" \n") keep an empty segment that
# no submission line can reproduce, so even a perfect run is 0.99795.

# (b) all "no error": flag accuracy 255/574
if "$MT" score --ref "$MEDEC" --pred "$TMP/noerror.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field 'd["error_flag_accuracy"] == 255/574')" = True ] &&
    [ "$(field 'd["predicted"] == 574 and d["composite"]["rouge1"] == 255/574')" = True ] &&
    [ "$(field '"bertscore" not in d["composite"] and "bleurt" not in d["composite"]')" = True ]; then
    ok "MEDEC all-no-error submission: flag accuracy 255/574"
else
    not_ok "MEDEC all-no-error" "$(head -c 600 "$TMP/out.json")"
fi

# (c) MedErrBench EN test with KPCS and breakdowns
python3 "$TMP/gen.py" perfect "$EN" "$TMP/en.txt"
read -r _ KP < <("$PY" "$TMP/expect.py" "$EN" "$ROUGE_DIR")
if "$MT" score --ref "$EN" --pred "$TMP/en.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "abs(d['composite']['kpcs'] - $KP) < 1e-9")" = True ] &&
    [ "$(field '"Hard" in d["breakdown"]["difficulty"] and "Multi-hop" in d["breakdown"]["reasoning_type"]')" = True ] &&
    [ "$(field 'list(d["breakdown"]["language"]) == ["EN"]')" = True ]; then
    ok "MedErrBench EN perfect submission: KPCS $KP as expected"
else
    not_ok "MedErrBench EN KPCS" "$(head -c 600 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi
if "$MT" score --ref "$EN" --pred "$TMP/en.txt" --kpcs-match normalized \
    --json >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "d['composite']['kpcs'] > $KP")" = True ]; then
    ok "normalized keyword matching raises KPCS"
else
    not_ok "kpcs normalized" "$(head -c 300 "$TMP/out.json")"
fi

# (d) several runs: side-by-side table with paired differences
if "$MT" score --ref "$MEDEC" --pred "$TMP/perfect.txt" \
    --pred "$TMP/noerror.txt" >"$TMP/out" 2>"$TMP/err" &&
    grep -q 'run 2 - run 1 (paired)' "$TMP/out" &&
    grep -q '^error flag accuracy .*-0.5557' "$TMP/out"; then
    ok "two runs: side-by-side table with paired differences"
else
    not_ok "two runs" "$(cat "$TMP/out" "$TMP/err" | head -20)"
fi

# (e) report
if "$MT" score --ref "$MEDEC" --pred "$TMP/perfect.txt" \
    --pred "$TMP/noerror.txt" --report "$TMP/r.html" >/dev/null \
    2>"$TMP/err" && grep -q '<svg id="chart-diffs"' "$TMP/r.html" &&
    ! grep -q 'src="http' "$TMP/r.html"; then
    ok "HTML report written with charts"
else
    not_ok "report" "$(tail -3 "$TMP/err")"
fi

# (f) bad input: clear messages, exit 1
printf 'Text ID,Text,Error Sentence ID\nms-1,x,1\n' >"$TMP/bad.csv"
"$MT" score --ref "$TMP/bad.csv" --pred "$TMP/perfect.txt" >/dev/null \
    2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'missing column(s): Error Flag, Corrected Sentence' \
    "$TMP/err"; then
    ok "reference missing columns named, exit 1"
else
    not_ok "missing columns" "rc=$rc" "$(cat "$TMP/err")"
fi
: >"$TMP/empty.txt"
"$MT" score --ref "$MEDEC" --pred "$TMP/empty.txt" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'empty submission' "$TMP/err"; then
    ok "empty submission rejected, exit 1"
else
    not_ok "empty submission" "rc=$rc" "$(cat "$TMP/err")"
fi
{
    printf '\xef\xbb\xbfms-val-0 1 7 "Fixed."\r\n'
    printf 'ms-val-0 1 8 "Again."\r\n'
    printf 'nope-1 1 2 x\r\n'
    printf 'BAD LINE\r\n'
} >"$TMP/messy.txt"
if "$MT" score --ref "$MEDEC" --pred "$TMP/messy.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    grep -q 'messy.txt:1: UTF-8 byte order mark' "$TMP/err" &&
    grep -q 'CRLF line endings' "$TMP/err" &&
    grep -q "messy.txt:2: duplicate id 'ms-val-0' (first on line 1)" \
        "$TMP/err" &&
    grep -q "line 3: id 'nope-1' is not in the reference" "$TMP/err" &&
    grep -q 'messy.txt:4: invalid line skipped' "$TMP/err" &&
    [ "$(field 'd["invalid_lines"] == 1 and d["predicted"] == 1')" = True ]; then
    ok "BOM, CRLF, duplicate, unknown id and invalid line reported"
else
    not_ok "messy submission" "$(cat "$TMP/err")"
fi

# (g) BERTScore from a tiny random-weight BERT GGUF made here: every output
# names the model; misuse is refused clearly. The numbers themselves are
# checked against greedy matching in tests/unit/test_token_encoder.c.
GEN="${MEDTRUST_BUILD:-$ROOT/build}/fixtures/make_tiny_gguf"
VOCAB=${MEDTRUST_LLAMA_VOCAB:-$ROOT/third_party/llama.cpp/models}
if "$GEN" embed "$TMP/tiny.gguf" "$VOCAB" >/dev/null 2>&1; then
    printf '%s\n' 'Text ID,Text,Error Flag,Error Type,Error Sentence ID,'\
'Corrected Sentence' \
        't-0,x,1,Diagnosis,2,The patient has gout.' 't-1,x,0,NA,-1,NA' \
        >"$TMP/small.csv"
    printf '%s\n' 't-0 1 2 "The patient has gout."' 't-1 0 -1 NA' \
        >"$TMP/small.txt"
    if "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" \
        --bertscore-model "gguf:$TMP/tiny.gguf" --report "$TMP/b.html" \
        >"$TMP/out" 2>"$TMP/err" &&
        grep -q '^BERTScore (model tiny.gguf) ' "$TMP/out" &&
        grep -q 'not the official MEDIQA-CORR BERTScore' "$TMP/out" &&
        grep -q '<th>BERTScore (model tiny.gguf)</th>' "$TMP/b.html" &&
        grep -q 'id="bertscore-note"' "$TMP/b.html"; then
        ok "BERTScore (model tiny.gguf) named in the table and the report"
    else
        not_ok "BERTScore labels" "$(cat "$TMP/out" "$TMP/err" | head -20)"
    fi
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" \
        --bertscore-model "gguf:$TMP/none.gguf" >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'none.gguf: cannot open the model file' \
        "$TMP/err" && grep -q 'fix the path in --bertscore-model' "$TMP/err"; then
        ok "missing BERTScore model named, exit 1"
    else
        not_ok "missing BERTScore model" "rc=$rc" "$(cat "$TMP/err")"
    fi
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" \
        --bertscore-idf >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'need --bertscore-model' "$TMP/err"; then
        ok "--bertscore-idf without a model refused"
    else
        not_ok "--bertscore-idf alone" "rc=$rc" "$(cat "$TMP/err")"
    fi
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" \
        --bertscore-model "gguf:$TMP/tiny.gguf" --bertscore-baseline 1.5 \
        >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'below 1' "$TMP/err"; then
        ok "BERTScore baseline of 1 or more refused"
    else
        not_ok "bad baseline" "rc=$rc" "$(cat "$TMP/err")"
    fi
else
    not_ok "make_tiny_gguf made a classifier" "llama.cpp missing? (run make bootstrap)"
fi

# A partial submission (the first 10 of the 574 MEDEC notes, all correct):
# scored as the official script does (the 564 missing count as wrong) with
# a warning saying how many have no prediction; --only-predicted scores the
# 10 alone; with two runs, only the notes both predict.
head -10 "$TMP/perfect.txt" >"$TMP/part10.txt"
head -4 "$TMP/perfect.txt" >"$TMP/part4.txt"
"$MT" score --ref "$MEDEC" --pred "$TMP/part10.txt" --json >"$TMP/out.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(field 'd["notes"], d["predicted"]')" = "(574, 10)" ] &&
    [ "$(field 'round(d["error_flag_accuracy"] * 574)')" = 10 ] &&
    grep -q "part10.txt: 564 of the 574 reference notes have no prediction; they count as wrong (--only-predicted" "$TMP/err"; then
    ok "score: a partial submission is scored over all notes, with a warning naming the 564 unpredicted"
else
    not_ok "score: partial submission warning" "rc=$rc" "$(cat "$TMP/err")"
fi
"$MT" score --ref "$MEDEC" --pred "$TMP/part10.txt" --only-predicted --json \
    >"$TMP/out.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(field 'd["notes"], d["predicted"], d["error_flag_accuracy"]')" = "(10, 10, 1.0)" ] &&
    grep -q 'only-predicted: scoring the 10 of 574 reference notes' "$TMP/err" &&
    ! grep -q 'no prediction' "$TMP/err"; then
    ok "score --only-predicted: the 10 predicted notes alone (accuracy 1.0)"
else
    not_ok "score --only-predicted" "rc=$rc" "$(cat "$TMP/err")" "$(cat "$TMP/out.json")"
fi
"$MT" score --ref "$MEDEC" --pred "$TMP/part10.txt" --pred "$TMP/part4.txt" \
    --only-predicted >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '^reference: 4 notes' "$TMP/out" &&
    grep -q 'scoring the 4 of 574 reference notes every --pred predicts' "$TMP/err"; then
    ok "score --only-predicted with two runs: the notes both predict"
else
    not_ok "score --only-predicted, two runs" "rc=$rc" "$(cat "$TMP/err")" "$(head -3 "$TMP/out")"
fi
echo "nosuch-1 0 -1 NA" >"$TMP/none.txt"
"$MT" score --ref "$MEDEC" --pred "$TMP/none.txt" --only-predicted >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'no reference note is predicted' "$TMP/err"; then
    ok "score --only-predicted with no matching id fails, saying so"
else
    not_ok "score --only-predicted, none" "rc=$rc" "$(cat "$TMP/err")"
fi

# test_eval_rouge's golden file is the real package's output, as committed.
if "$PY" "$ROOT/tests/eval/rouge_golden.py" "$ROUGE_DIR" \
    "$ROOT/tests/eval/rouge_pairs.tsv" >"$TMP/golden.tsv" 2>"$TMP/err" &&
    cmp -s "$TMP/golden.tsv" "$ROOT/tests/eval/rouge_golden.tsv"; then
    ok "tests/eval/rouge_golden.tsv is what the rouge package gives ($(wc -l <"$TMP/golden.tsv") pairs)"
else
    not_ok "rouge_golden.tsv differs from the rouge package" "$(tail -3 "$TMP/err")" \
        "$(diff "$TMP/golden.tsv" "$ROOT/tests/eval/rouge_golden.tsv" | head -5)"
fi
