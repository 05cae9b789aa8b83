#!/usr/bin/env bash
# Chinese KPCS: medtrust score on MedErrBench's CN test split, against
# KPCS recomputed here by the real jieba 0.42.1 and rouge-chinese 1.0.3
# (the venv scripts/bootstrap makes) as MedGuards' eval_CN.py calls them;
# --kpcs-rouge published against rouge_score; a missing dictionary; the
# ARA test split against the real `rouge` package (pltrdy 1.0.1).
set -u
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CN="$DATA/mederrbench/test/reviewed_data_CN_test.csv"
PY="$ROOT/third_party/venv/bin/python"

need_verb score
need "jieba and rouge-chinese (third_party/venv)" "$PY" "$CN"

# gen.py CSV OUT: per error note the gold correction, the error sentence
# with the keyword added, or the error sentence alone, in turn; NA else.
cat >"$TMP/gen.py" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for i, r in enumerate(rows):
        if r["Error Flag"] != "1":
            f.write("%s 0 -1 NA\n" % r["Text ID"])
            continue
        c = [r["Corrected Sentence"], r["Error Sentence"] + r["Important Words"],
             r["Error Sentence"]][i % 3]
        c = " ".join(c.split())
        f.write('%s 1 %s "%s"\n' % (r["Text ID"], r["Error Sentence ID"], c))
PYEOF

# expect.py CSV RUN MODE: KPCS with ROUGE-1 alone (no BERTScore, BLEURT):
# kw * (0.5 + 0.5 * R1) a scored pair, 1 both NA, 0 one NA, averaged over
# the notes; R1 as eval_CN.py (zh) or evaluate_correction_keywords
# (published) computes it. The run is read as eval_CN.py reads it.
cat >"$TMP/expect.py" <<'PYEOF'
import csv, logging, re, sys
import jieba
from rouge_chinese import Rouge
from rouge_score import rouge_scorer
jieba.setLogLevel(logging.WARNING)
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
pred = {}
for line in open(sys.argv[2], encoding="utf-8"):
    items = re.sub(r"\s+", " ", line.strip()).split()
    pred[items[0]] = "NA" if items[1] == "0" else " ".join(items[3:]).strip('"')
zh, rs = Rouge(), rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
if sys.argv[3] == "ara":  # pltrdy's rouge, ahead of rouge-chinese's copy
    sys.path.insert(0, sys.argv[4])
    for m in [m for m in sys.modules if m == "rouge" or m.startswith("rouge.")]:
        del sys.modules[m]
    import rouge
    assert not hasattr(rouge.Rouge, "cut_sent"), rouge.__file__
    ara = rouge.Rouge()
def r1(hyp, ref):
    if sys.argv[3] == "published":
        return rs.score(ref, hyp)["rouge1"].fmeasure
    if sys.argv[3] == "ara":  # evaluate_correction_with_ids_Arabic's order
        return ara.get_scores(ref, hyp)[0]["rouge-1"]["f"]
    h, r = " ".join(jieba.cut(hyp)), " ".join(jieba.cut(ref))
    return zh.get_scores(h, r)[0]["rouge-1"]["f"]
total = 0.0
for r in rows:
    g, p = r["Corrected Sentence"], pred[r["Text ID"]]
    if g == "NA" or p == "NA":
        total += g == p
        continue
    total += (r["Important Words"] in p) * (0.5 + 0.5 * min(1, max(0, r1(p, g))))
print(repr(total / len(rows)))
PYEOF

field() { python3 -c "import json,sys; d=json.load(open('$TMP/out.json')); print($1)"; }

"$PY" "$TMP/gen.py" "$CN" "$TMP/run.txt"
KP=$("$PY" "$TMP/expect.py" "$CN" "$TMP/run.txt" zh)
if "$MT" score --ref "$CN" --pred "$TMP/run.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "abs(d['composite']['kpcs'] - $KP) < 1e-9")" = True ] &&
    [ "$(field "d['kpcs_rouge'] == {'mode': 'language', 'pairs_zh': 100, 'pairs_ar': 0}")" = True ]; then
    ok "MedErrBench CN test: KPCS $KP as jieba + rouge-chinese give it"
else
    not_ok "CN KPCS (want $KP)" "$(head -c 800 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi

KPP=$("$PY" "$TMP/expect.py" "$CN" "$TMP/run.txt" published)
if "$MT" score --ref "$CN" --pred "$TMP/run.txt" --json \
    --kpcs-rouge published >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "abs(d['composite']['kpcs'] - $KPP) < 1e-9")" = True ] &&
    [ "$(field "d['composite']['kpcs'] < $KP")" = True ]; then
    ok "--kpcs-rouge published: KPCS $KPP as rouge_score gives it"
else
    not_ok "published KPCS (want $KPP)" "$(head -c 800 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi

# The dictionary given by option and by environment; missing, the run
# fails and says what to do (never a silent 0).
if "$MT" score --ref "$CN" --pred "$TMP/run.txt" --json \
    --jieba-dict "$ROOT/third_party/jieba" >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "abs(d['composite']['kpcs'] - $KP) < 1e-9")" = True ]; then
    ok "--jieba-dict DIR"
else
    not_ok "--jieba-dict" "$(tail -3 "$TMP/err")"
fi
if MEDTRUST_JIEBA_DIR="$TMP/none" "$MT" score --ref "$CN" \
    --pred "$TMP/run.txt" >"$TMP/out" 2>"$TMP/err"; then
    not_ok "a missing dictionary fails the run" "$(head -5 "$TMP/out")"
elif grep -q "MEDTRUST_JIEBA_DIR" "$TMP/err" &&
    grep -q "scripts/bootstrap" "$TMP/err"; then
    ok "a missing dictionary fails the run, saying what to do"
else
    not_ok "missing dictionary message" "$(cat "$TMP/err")"
fi
if MEDTRUST_JIEBA_DIR="$TMP/none" "$MT" score --ref "$CN" \
    --pred "$TMP/run.txt" --kpcs-rouge published >/dev/null 2>"$TMP/err"; then
    ok "published KPCS needs no dictionary"
else
    not_ok "published KPCS without a dictionary" "$(cat "$TMP/err")"
fi

# Arabic: the `rouge` package, as evaluate_correction_with_ids_Arabic calls
# it: pltrdy 1.0.1 from third_party/rouge-pltrdy (scripts/bootstrap), else
# $DATA/../reference/rouge; neither is a failure.
ARA="$DATA/mederrbench/test/reviewed_data_ARA_test.csv"
ROUGE_DIR="$ROOT/third_party/rouge-pltrdy"
[ -f "$ROUGE_DIR/rouge/rouge.py" ] || ROUGE_DIR="$DATA/../reference"
need "the rouge package, pltrdy 1.0.1 (third_party/rouge-pltrdy)" \
    "$ROUGE_DIR/rouge/rouge.py"
"$PY" "$TMP/gen.py" "$ARA" "$TMP/ara.txt"
ARA_KP=$("$PY" "$TMP/expect.py" "$ARA" "$TMP/ara.txt" ara "$ROUGE_DIR")
if "$MT" score --ref "$ARA" --pred "$TMP/ara.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "abs(d['composite']['kpcs'] - $ARA_KP) < 1e-9")" = True ] &&
    [ "$(field "d['kpcs_rouge']['pairs_ar'] == d['pairs'] > 0")" = True ]; then
    ok "MedErrBench ARA test: KPCS $ARA_KP as the rouge package gives it"
else
    not_ok "ARA KPCS (want $ARA_KP)" "$(head -c 800 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi

# Ids without a language prefix: the gold correction's script decides.
printf '%s\n' 'Text ID,Sentences,Error Flag,Error Sentence ID,Corrected Sentence,Important Words' \
    'n1,0 行肝功能检查。,1,0,行血氨检查。,血氨' \
    'n2,0 x,1,0,تم إعطاء الأنسولين.,الأنسولين' \
    'n3,0 x,1,0,Start IV antibiotics.,antibiotics' >"$TMP/mixed.csv"
printf '%s\n' 'n1 1 0 "行血氨检查。"' 'n2 1 0 "تم إعطاء الأنسولين."' \
    'n3 1 0 "Start IV antibiotics."' >"$TMP/mixed.txt"
if "$MT" score --ref "$TMP/mixed.csv" --pred "$TMP/mixed.txt" --json \
    >"$TMP/out.json" 2>"$TMP/err" &&
    [ "$(field "d['kpcs_rouge'] == {'mode': 'language', 'pairs_zh': 1, 'pairs_ar': 1}")" = True ] &&
    [ "$(field "abs(d['composite']['kpcs'] - 1) < 1e-7")" = True ]; then
    ok "a note without a language prefix is scored in its correction's script"
else
    not_ok "language by script" "$(head -c 600 "$TMP/out.json")" \
        "$(tail -3 "$TMP/err")"
fi
